#!/usr/bin/env bash
# Installs the Debian 12 packages parity needs to build, test and benchmark.
# Idempotent: packages already present are skipped, and apt-get is not called at all
# when nothing is missing (so a warm machine spends no time here).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libhdf5-dev hdf5-tools          # capture format (HDF5 1.10) and h5diff for the benchmark
  libdeflate-dev                  # inflating deflate-compressed chunks in threads (formats/chunk_read.c)
  libmpfr-dev libgmp-dev          # high-precision reference
  libcriterion-dev                # unit tests
  libjansson-dev                  # JSON reports
  libyaml-dev                     # the tolerance file and the gate's policy
  libsqlite3-dev                  # the gate's run history (diff/gate_history.c)
  libpq-dev                       # ... on a PostgreSQL server (diff/history_pg.c)
  postgresql                      # a throwaway server for the history tests (tests only)
  clang-14 libclang-rt-14-dev     # libFuzzer harnesses and sanitizer runtime
  python3 python3-h5py python3-numpy   # tests and the example only, never the tools
  python3-torch                   # the example PyTorch worker of parityfuzz (tests only)
  python3-venv                    # scripts/setup-venv.sh: current torch from PyPI beside it
  libdnnl-dev                     # oneDNN 2.6: the onednn target of parityfuzz
  glibc-source                    # libm-test-ulps for tests/bench/validate_libm.sh (25 MB)
  python3-prometheus-client libxml2-utils  # gate reports: OpenMetrics parser, xmllint (tests only)
  chromium                        # headless, for the gate HTML page test (--dump-dom; tests only)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
