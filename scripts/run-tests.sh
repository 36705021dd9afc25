#!/usr/bin/env bash
# Installs what is missing, builds parity twice (optimised, and with ASan+UBSan) and runs
# every test in both builds. This is the README's test command and all that .ci/run does.
#
# Sanitizer builds: Criterion 2.4.1 counts a test as passing despite a sanitizer report,
# so the tests are built with -fno-sanitize-recover=all (a report aborts the test) and the
# ctest output is also scanned for any "runtime error:" or "Sanitizer" line. ASan exits
# (abort_on_error=0) rather than aborting, so a report from paritydiff's worker process
# reaches the log: the supervisor passes on the stderr of a worker that exits, and drops
# only that of a worker killed by a signal (libhdf5's own crashes on corrupt files).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-deps.sh
# current torch from PyPI beside Debian's 1.13 (cached outside the clone; prints its python)
PARITY_VENV_PYTHON=$(bash scripts/setup-venv.sh)
export PARITY_VENV_PYTHON
# the compilers the fuzz workers drive (ONNX Runtime), in an environment of their own
PARITY_COMPILERS_PYTHON=$(bash scripts/setup-venv.sh scripts/requirements-compilers.txt)
export PARITY_COMPILERS_PYTHON

jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWERROR=ON >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DENABLE_ASAN=ON -DENABLE_UBSAN=ON -DWERROR=ON >/dev/null
cmake --build build-asan -j"$jobs"
log=$(mktemp)
status=0
# Under the sanitizers everything runs 2-3x slower: the corruption sweep and the random
# validation campaign run a smaller deterministic share there (the full counts run above).
# The real compilers' worker campaigns (label compilers: about 6 minutes of test time,
# mostly the compilers' own Python) run in the release build only: the C they drive, the
# cmd: target, the oracle and triage, runs under the sanitizers in test_fuzz_worker's fake
# workers and the corpus tests' replays. The zoo (label zoo, a minute of torch.compile)
# runs there too; its paritydiff work is what test_semantic and the torch tests run here.
(cd build-asan && PARITY_SWEEP_N=300 PARITY_VALIDATION_N=2000 ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest --output-on-failure -j"$jobs" -LE "compilers|zoo") 2>&1 | tee "$log" || status=$?
if grep -qE "runtime error:|ERROR: (Address|Leak|UndefinedBehavior)Sanitizer" "$log"; then
  echo "run-tests: a sanitizer reported an error (see above)" >&2
  status=1
fi
rm -f "$log"

# The libFuzzer harnesses: gcc rejects -fsanitize=fuzzer, so clang builds them in a folder
# of their own. Each runs briefly from the seed corpus on the clean target (a finding there
# would abort: exit status non-zero), and the gemm_k_tail harness must find its defect.
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang-14 -DBUILD_FUZZERS=ON -DBUILD_TESTS=OFF >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_builtin fuzz_cmd fuzz_onednn fuzz_reader
fuzzdir=$(mktemp -d)
cp corpus/libfuzzer/builtin/* "$fuzzdir"/
build-fuzz/fuzz_builtin -runs=2000 -seed=1 "$fuzzdir" >"$fuzzdir/clean.log" 2>&1 || {
  tail -20 "$fuzzdir/clean.log"; echo "run-tests: fuzz_builtin flagged the clean target" >&2; status=1; }
fuzzer="$PWD/build-fuzz/fuzz_builtin"
# libFuzzer writes the crashing input into the working folder: run it inside $fuzzdir
if (cd "$fuzzdir" && PARITY_FUZZ_DEFECTS=gemm_k_tail PARITY_FUZZ_OPS=matmul,linear,bmm \
      "$fuzzer" -max_total_time=120 -seed=1 . >defect.log 2>&1); then
  echo "run-tests: fuzz_builtin did not find gemm_k_tail in 120 s" >&2
  status=1
fi
grep -q "parity finding: " "$fuzzdir/defect.log" || { echo "run-tests: no parity finding in the libFuzzer log" >&2; status=1; }
# The oneDNN harness against the real library: oneDNN 2.6.3 has findings in most ops (README,
# "Findings in oneDNN 2.6.3"; relu and maximum of NaN among them), so it must stop on one
# within a minute, be it while replaying the seed corpus or once mutating.
onednn="$PWD/build-fuzz/fuzz_onednn"
if (cd "$fuzzdir" && PARITY_FUZZ_OPS=relu,maximum "$onednn" -max_total_time=60 -seed=1 . \
      >onednn.log 2>&1); then
  echo "run-tests: fuzz_onednn found nothing in 60 s" >&2
  status=1
fi
grep -q "parity finding: " "$fuzzdir/onednn.log" || {
  tail -20 "$fuzzdir/onednn.log"; echo "run-tests: fuzz_onednn reported no parity finding" >&2; status=1; }
rm -rf "$fuzzdir"

# The reader harness: a minute of fuzzing from its seed corpus, every artifact triaged
# (scripts/fuzz-reader.sh says how).
bash scripts/fuzz-reader.sh || status=1
exit $status
