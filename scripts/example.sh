#!/usr/bin/env bash
# Installs what is missing, builds parity and runs the main job on the embedded example:
# paritydiff on a pair of captures of a small MLP whose compiled side has a tail-tile bug
# in its second linear layer (examples/make_example.c). The report is printed, and the JSON
# report written to build/example/report.json.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target paritydiff example

status=0
./build/paritydiff --json build/example/report.json build/example/eager.h5 build/example/compiled.h5 || status=$?
echo
case $status in
  1) echo "paritydiff exited 1: divergence found, as the example intends (JSON: build/example/report.json)"; exit 0 ;;
  0) echo "paritydiff exited 0: no divergence, but the example has one; this is a bug" >&2; exit 1 ;;
  *) echo "paritydiff exited $status: trouble" >&2; exit "$status" ;;
esac
