#!/usr/bin/env bash
# bench_supervisor.sh - what the campaign supervisor costs: one oneDNN campaign run by two
# parityfuzz binaries side by side, interleaved, one at a time (one OpenMP thread each).
#
#   bash tests/bench/bench_supervisor.sh OLD_PARITYFUZZ NEW_PARITYFUZZ [OP:EXECS ...]
#
# OLD is a build from before the supervisor (e.g. commit deaf95c, which ran onednn
# campaigns in its own process), NEW the current one (a supervised child process that
# mirrors its counters and the case in flight into shared memory every case). float32
# pairs without faults, so both run the same cases; prints "op binary round execs seconds".
set -euo pipefail
old=$1 new=$2
shift 2
pairs=("$@")
[ ${#pairs[@]} -gt 0 ] || pairs=(relu:200000 add:200000 matmul:20000 softmax:1000)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
for pair in "${pairs[@]}"; do
  op=${pair%%:*} n=${pair##*:}
  for round in 1 2 3; do
    for which in old new; do
      bin=$old; [ $which = new ] && bin=$new
      rm -rf "$work/out"
      t0=$(date +%s.%N)
      "$bin" --target onednn --ops "$op" --dtypes float32 --max-execs "$n" --seed 7 \
        --no-minimize --out "$work/out" --json "$work/s.json" >/dev/null 2>&1 || true
      t1=$(date +%s.%N)
      execs=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['execs'])" "$work/s.json")
      echo "$op $which $round $execs $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
    done
  done
done
