#!/usr/bin/env bash
# Writes the investigation example (diff/INVESTIGATE.md): ten nightly gate runs over the
# suites `make_gate_example --night N` writes, appended to one history.
#   make-investigation-example.sh OUT_DIR PARITYDIFF MAKE_GATE_EXAMPLE POLICY
# OUT_DIR/nightN/ holds night N's suite, OUT_DIR/history.db the history. A gate run exits 1
# when an alert fires, which is what nights 3 and 6 to 10 are for; only 2 is trouble.
set -euo pipefail
out=$1 paritydiff=$2 make_example=$3 policy=$4
rm -rf "$out"
mkdir -p "$out"
for n in 1 2 3 4 5 6 7 8 9 10; do
  "$make_example" "$out/night$n" --night "$n"
  status=0
  "$paritydiff" gate -q --policy "$policy" --history "$out/history.db" \
      --timestamp "$(printf '2026-11-%02dT02:00:00Z' "$n")" --run-id "nightly-$n" \
      "$out/night$n" || status=$?
  if [ "$status" -gt 1 ]; then
    echo "make-investigation-example: the gate of night $n exited $status" >&2
    exit 2
  fi
done
