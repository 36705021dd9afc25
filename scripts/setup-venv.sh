#!/usr/bin/env bash
# Creates, or reuses, a virtual environment with PyPI packages Debian lacks, pinned in a
# requirements file (the argument; default scripts/requirements-torch.txt, current torch;
# scripts/requirements-compilers.txt holds ONNX Runtime for fuzz/workers/ort_worker.py),
# and prints its python's path on stdout.
#
# The environment lives outside the clone, in $PARITY_VENV_CACHE (default ~/.cache/parity),
# in a folder named after the pin file's hash: a fresh clone on the same machine reuses it,
# and a changed pin makes a new one instead of patching an old one. A half-built environment
# (no .complete mark: pip failed or was stopped) is removed and built again; a lock keeps two
# clones on one machine from building the same one at once.
# Needs Debian's python3 and python3-venv (scripts/setup-deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

pins=${1:-scripts/requirements-torch.txt}
key=$(sha256sum "$pins" | cut -c1-16)
cache=${PARITY_VENV_CACHE:-$HOME/.cache/parity}
venv="$cache/venv-$key"

if [ -x "$venv/bin/python" ] && [ -f "$venv/.complete" ]; then
  echo "$venv/bin/python"
  exit 0
fi

mkdir -p "$cache"
exec 9>"$venv.lock"
flock 9
if [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv"
  start=$(date +%s)
  echo "setup-venv: installing $(grep -v '^#' "$pins" | tr '\n' ' ')into $venv" >&2
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$pins" >&2
  touch "$venv/.complete"
  echo "setup-venv: installed in $(( $(date +%s) - start )) s" >&2
fi
echo "$venv/bin/python"
