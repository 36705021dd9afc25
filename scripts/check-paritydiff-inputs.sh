#!/usr/bin/env bash
# Runs the paritydiff CLI on files that may be corrupt captures (the reader harness's corpus,
# its stored crash inputs, what a libFuzzer run left behind) and checks the CLI's contract
# for each: `paritydiff FILE FILE` ends in exit 0 or 1 with a report on stdout and no error
# line, or exit 2 with exactly one non-warning line on stderr; never a signal, never a hang,
# never HDF5's error stack. libhdf5 may crash on such a file; paritydiff reads in a
# supervised child (formats/process.c), so the CLI must still answer with one line.
#
#   scripts/check-paritydiff-inputs.sh [--valid|--corrupt] PARITYDIFF FILE|DIR...
#
# --valid: the files are valid captures, so exit 2 is a violation too; --corrupt: they are
# known to be damaged (stored crash inputs), so only exit 2 is right. Every regular file in
# a DIR is checked (not recursively). Exit 0 when every run keeps the contract, 1 when one
# does not (each is named on stderr), 2 on bad arguments or when no file was found.
set -uo pipefail

valid=0 corrupt=0
case "${1:-}" in
  --valid) valid=1; shift;;
  --corrupt) corrupt=1; shift;;
esac
if [ $# -lt 2 ]; then
  echo "usage: $0 [--valid|--corrupt] PARITYDIFF FILE|DIR..." >&2
  exit 2
fi
paritydiff=$1; shift
[ -x "$paritydiff" ] || { echo "check-paritydiff-inputs: $paritydiff is not executable" >&2; exit 2; }

files=()
for arg in "$@"; do
  if [ -d "$arg" ]; then
    for f in "$arg"/*; do [ -f "$f" ] && files+=("$f"); done
  elif [ -f "$arg" ]; then
    files+=("$arg")
  else
    echo "check-paritydiff-inputs: no such file or folder: $arg" >&2
    exit 2
  fi
done
[ ${#files[@]} -gt 0 ] || { echo "check-paritydiff-inputs: no file to check" >&2; exit 2; }

# Sanitizer builds: the sanitizer must leave libhdf5's crashes to paritydiff's supervisor as
# the signals they are (else it reports and exits 1, read as "divergence"); the options and
# their reasons are those of tests/support.c (CHILD_ASAN_OPTIONS). Other builds ignore them.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:handle_abort=0:handle_sigbus=0:handle_sigfpe=0:detect_leaks=0:allocator_may_return_null=1:abort_on_error=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}handle_segv=0:handle_abort=0:handle_sigbus=0:handle_sigfpe=0"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n0=0 n1=0 n2=0 bad=0
for f in "${files[@]}"; do
  # paritydiff's own limits first; the outer timeout only catches a CLI that ignores them.
  timeout -s KILL 120 "$paritydiff" --stall-timeout 5 --timeout 30 --max-memory 2048 \
      "$f" "$f" >"$tmp/out" 2>"$tmp/err"
  code=$?
  nerr=$(grep -cv '^paritydiff: warning: ' "$tmp/err")
  why=""
  if [ $code -eq 137 ]; then why="killed by SIGKILL (still running after 120 s, or out of memory)"
  elif [ $code -gt 128 ]; then why="killed by signal $((code - 128))"
  elif [ $code -gt 2 ]; then why="exit status $code"
  elif grep -q 'HDF5-DIAG' "$tmp/err"; then why="HDF5 error stack on stderr"
  elif [ $code -eq 2 ] && [ "$nerr" -ne 1 ]; then why="exit 2 with $nerr error lines"
  elif [ $code -eq 2 ] && [ $valid -eq 1 ]; then why="exit 2 on a valid capture: $(grep -v '^paritydiff: warning: ' "$tmp/err")"
  elif [ $code -ne 2 ] && [ $corrupt -eq 1 ]; then why="exit $code on a damaged file: read as a capture"
  elif [ $code -ne 2 ] && [ "$nerr" -ne 0 ]; then why="exit $code with $nerr error lines"
  elif [ $code -ne 2 ] && ! head -c 9 "$tmp/out" | grep -q '^verdict: '; then why="exit $code without a report"
  fi
  case $code in 0) n0=$((n0 + 1));; 1) n1=$((n1 + 1));; 2) n2=$((n2 + 1));; esac
  if [ -n "$why" ]; then
    bad=$((bad + 1))
    echo "check-paritydiff-inputs: $f: $why" >&2
    sed 's/^/    /' "$tmp/err" | head -5 >&2
  fi
done
echo "check-paritydiff-inputs: ${#files[@]} files: $n0 exit 0, $n1 exit 1, $n2 exit 2; $bad break the contract" >&2
[ $bad -eq 0 ]
