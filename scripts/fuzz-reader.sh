#!/usr/bin/env bash
# A short libFuzzer campaign of the reader harness (fuzz/libfuzzer/fuzz_reader.c) from its
# seed corpus, and the triage of every input it leaves behind. run-tests.sh calls it after
# building build (release), build-asan (ASan+UBSan) and build-fuzz (clang, libFuzzer); it
# also runs alone once those exist:
#
#   bash scripts/fuzz-reader.sh [SECONDS]      # default 60
#
# libhdf5 1.10 crashes, hangs and exhausts memory on some corrupt files, in the harness's
# process too, so a crash is not a failure here: -fork=1 -ignore_crashes=1 restarts the
# fuzzing process and goes on, and each crash, timeout and oom input is left in a folder.
# What fails (exit 1):
#   - a broken property of our code: "parity finding: reader:" in the campaign's log, or
#     when a crash input is replayed by the release build's fuzz_reader_replay;
#   - a crash or leak input whose ASan, LSan or UBSan report, replayed by build-asan's
#     fuzz_reader_replay,
#     has its first frame outside libhdf5 (the rule of tests/test_sweep.c);
#   - the paritydiff CLI (release build) not answering an input with exit 0 or 1 and a
#     report, or exit 2 and one line, or dying of a signal
#     (scripts/check-paritydiff-inputs.sh).
# A leak input (libFuzzer's leak check, from the harness's ASan allocator) is triaged like
# a crash, by the first frame of the allocation. Timeout and oom inputs go to the CLI only:
# replayed in-process they would hang or fill memory in libhdf5 again. The inputs are kept (their folder is printed) when one fails.
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
for f in build-fuzz/fuzz_reader build/fuzz_reader_replay build/paritydiff build-asan/fuzz_reader_replay; do
  [ -x "$f" ] || { echo "fuzz-reader: $f is missing: build it first (scripts/run-tests.sh)" >&2; exit 2; }
done
dir=$(mktemp -d)
mkdir "$dir/corpus" "$dir/artifacts" "$dir/tmp"
# The harness writes each input to a temporary file, which a crash leaves behind.
export TMPDIR="$dir/tmp"
cp corpus/libfuzzer/reader/* "$dir/corpus/"
start=$(date +%s)
status=0

# The campaign's exit status is that of its last job (70 after a timeout): not a verdict.
# An input takes milliseconds and a hang the whole -timeout, so a short one buys execs.
# Its own process group, so that the watchdog can end the jobs too: a job can still hang
# in libFuzzer's crash handler on a heap libhdf5 wrecked (CMakeLists.txt says why the
# harness has ASan's allocator), and its parent would wait for it for good.
setsid build-fuzz/fuzz_reader -fork=1 -ignore_crashes=1 -max_total_time="$seconds" -timeout=5 \
    -rss_limit_mb=2048 -seed=1 -artifact_prefix="$dir/artifacts/" "$dir/corpus" \
    >"$dir/fuzz.log" 2>&1 &
campaign=$!
(for _ in $(seq $((seconds + 60))); do sleep 1; kill -0 $campaign 2>/dev/null || exit 0; done
 kill -KILL -- -$campaign 2>/dev/null) &
watchdog=$!
wait $campaign
wait $watchdog
if ! grep -qE '^#[0-9]+: cov' "$dir/fuzz.log"; then
  tail -20 "$dir/fuzz.log" >&2
  echo "fuzz-reader: the campaign did not run" >&2
  status=1
elif ! grep -q "^INFO: fuzzed for" "$dir/fuzz.log"; then
  # libhdf5's doing, not a verdict on our code; what the jobs left is still triaged
  echo "fuzz-reader: warning: a job hung (in libFuzzer's crash handler?); the watchdog ended the campaign" >&2
fi
last=$(grep -E '^#[0-9]+: cov' "$dir/fuzz.log" | tail -1)
echo "fuzz-reader: ${last:-no status line}" >&2
if grep -q "parity finding: reader:" "$dir/fuzz.log"; then
  grep "parity finding: reader:" "$dir/fuzz.log" | sort -u >&2
  echo "fuzz-reader: the campaign broke a property of the reader" >&2
  status=1
fi

for f in "$dir"/artifacts/crash-* "$dir"/artifacts/leak-*; do
  [ -f "$f" ] || continue
  log="$dir/replay.log"
  timeout -s KILL 30 build/fuzz_reader_replay "$f" >"$log" 2>&1
  if grep -q "parity finding: reader:" "$log"; then
    grep "parity finding: reader:" "$log" >&2
    echo "fuzz-reader: $f breaks a property of the reader" >&2
    status=1
  fi
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1 \
     timeout -s KILL 30 ./fuzz_reader_replay "$f") >"$log" 2>&1
  frame=$(awk '/ERROR: (Address|Leak)Sanitizer|runtime error:/ { on = 1 }
               on && /^    #[0-9]+ / && !/libsanitizer|sanitizer_common|\/asan\/|sysdeps|libc\.so/ { print; exit }' "$log")
  if grep -q "runtime error:" "$log" || { [ -n "$frame" ] && ! grep -q libhdf5 <<<"$frame"; }; then
    grep -m1 -E "runtime error:|ERROR: (Address|Leak)Sanitizer" "$log" >&2
    [ -n "$frame" ] && echo "$frame" >&2
    echo "fuzz-reader: $f makes a sanitizer report in our code" >&2
    status=1
  fi
done

counts=$(cd "$dir/artifacts" && ls | sed 's/-.*//' | sort | uniq -c | tr -s ' \n' ' ')
echo "fuzz-reader: inputs left: ${counts:-none}" >&2
if compgen -G "$dir/artifacts/*" >/dev/null; then
  bash scripts/check-paritydiff-inputs.sh build/paritydiff "$dir/artifacts" || status=1
fi
echo "fuzz-reader: $(( $(date +%s) - start )) s" >&2
if [ $status -eq 0 ]; then rm -rf "$dir"; else echo "fuzz-reader: inputs kept in $dir" >&2; fi
exit $status
