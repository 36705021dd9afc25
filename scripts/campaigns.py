#!/usr/bin/python3
"""onednn-campaigns.py - the oneDNN campaigns of parityfuzz, resumable across sessions.

Every (op, dtype) pair the onednn target runs gets --minutes of campaign time, in slices
of --slice seconds (one parityfuzz process each, --jobs 1, one OpenMP thread). A slice
that finishes leaves its JSON summary in STATE/<op>-<dtype>/slice-<n>.json (written by
parityfuzz, renamed into place only when the slice ran to its end), so an interrupted run
loses at most the slice in flight; running the script again picks up where it stopped.
The time a pair's finished slices ran counts, whatever their length, so --slice may change
between runs. Slice n runs with --seed n, so a pair's slices search different cases. Repros go to
OUT/<op>-<dtype>/ (one folder per unique signature, minimized).

    scripts/onednn-campaigns.py build/parityfuzz --state corpus/onednn/campaigns \
        --out /var/tmp/onednn-repros --minutes 10 --parallel 2
    scripts/onednn-campaigns.py build/parityfuzz --state corpus/onednn/campaigns --table

--table prints the exec counts per (op, dtype) as the README's Markdown table, rows in the
registry's order.

The ops and dtypes are the target's own: `parityfuzz --list-ops --target T` says which ops
it runs and in which dtypes (this script holds no list of ops); --ops and --dtypes narrow
them.
Tooling only: parityfuzz itself never needs Python.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

SHORT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64"}


def target_ops(parityfuzz, target):
    """{op: [dtype, ...]} the target runs, in the registry's order (parityfuzz --list-ops)."""
    p = subprocess.run([parityfuzz, "--list-ops", "--target", target], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"{parityfuzz} --list-ops --target {target}: exit {p.returncode}: "
                 f"{p.stderr.strip()[-300:]}")
    runs = {}
    for line in p.stdout.splitlines():
        op, _, dtypes = line.partition(" ")
        runs[op] = dtypes.split(",") if dtypes else []
    return runs


def slices_done(state, op, dtype):
    d = os.path.join(state, f"{op}-{dtype}")
    out = []
    if os.path.isdir(d):
        for name in sorted(os.listdir(d)):
            if name.startswith("slice-") and name.endswith(".json"):
                with open(os.path.join(d, name)) as f:
                    out.append(json.load(f))
    return out


def run_slice(args, op, dtype, n):
    d = os.path.join(args.state, f"{op}-{dtype}")
    os.makedirs(d, exist_ok=True)
    final = os.path.join(d, f"slice-{n}.json")
    tmp = final + ".tmp"
    cmd = [args.parityfuzz, "--target", args.target, "--ops", op, "--dtypes", dtype,
           "--time", str(args.slice), "--seed", str(n), "--out",
           os.path.join(args.out, f"{op}-{dtype}"), "--json", tmp]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    t0 = time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode not in (0, 1) or not os.path.exists(tmp):
        sys.stderr.write(f"{op} {dtype} slice {n}: parityfuzz exit {p.returncode}: "
                         f"{p.stderr.strip()[-300:]}\n")
        return False
    with open(tmp) as f:
        res = json.load(f)
    res["command"] = " ".join(cmd[:-2])
    res["wall_s"] = round(time.time() - t0, 1)
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1)
    os.replace(tmp, final)
    print(f"{op:12s} {dtype:9s} slice {n}: {res['execs']} execs, "
          f"{len(res['findings'])} findings, {res['elapsed_s']:.0f} s", flush=True)
    return True


def pending(args):
    """Slices still to run: (op, dtype, slice number), pairs in order. A pair needs
    --minutes of slice time in all; what its finished slices ran counts (whatever their
    length), and new slices take the next seeds."""
    need = []
    for op in args.ops:
        for dtype in args.dtypes:
            if dtype not in args.runs[op]:
                continue
            done = slices_done(args.state, op, dtype)
            ran = sum(s["elapsed_s"] for s in done)
            seed = max([int(s.get("seed", 0)) for s in done] + [0])
            # a slice ends a little after its --time; 1% slack keeps that from asking for
            # another whole slice
            while ran < args.minutes * 60 * 0.99:
                seed += 1
                need.append((op, dtype, seed))
                ran += args.slice
    return need


def table(args):
    print("| op | " + " | ".join(f"{d} execs" for d in args.dtypes) + " | unique signatures (" +
          " / ".join(SHORT.get(d, d) for d in args.dtypes) + ") |")
    print("|---|" + "---:|" * len(args.dtypes) + "---:|")
    total = 0
    for op in args.ops:
        cells, sigs = [], []
        for dtype in args.dtypes:
            done = slices_done(args.state, op, dtype)
            execs = sum(s["execs"] for s in done)
            secs = sum(s["elapsed_s"] for s in done)
            total += execs
            cells.append(f"{execs:,} ({secs / 60:.0f} min)" if done else "not yet run")
            sigs.append(str(len({f["signature"] for s in done for f in s["findings"]}))
                        if done else "-")
        print(f"| {op} | {' | '.join(cells)} | {' / '.join(sigs)} |")
    print(f"\n{total:,} cases in all.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("parityfuzz")
    ap.add_argument("--state", required=True, help="folder of slice summaries (resumable)")
    ap.add_argument("--out", help="folder for repros")
    ap.add_argument("--target", default="onednn")
    ap.add_argument("--minutes", type=float, default=10.0, help="campaign time per pair")
    ap.add_argument("--slice", type=int, default=300, help="seconds per slice")
    ap.add_argument("--parallel", type=int, default=2, help="slices at once")
    ap.add_argument("--ops", help="comma-separated (default: every op the target runs)")
    ap.add_argument("--dtypes", help="comma-separated (default: every dtype it runs)")
    ap.add_argument("--table", action="store_true")
    args = ap.parse_args()
    args.runs = target_ops(args.parityfuzz, args.target)
    every_dtype = [d for d in SHORT if any(d in ds for ds in args.runs.values())]
    args.ops = args.ops.split(",") if args.ops else list(args.runs)
    args.dtypes = args.dtypes.split(",") if args.dtypes else every_dtype
    for op in args.ops:
        if op not in args.runs:
            ap.error(f"target {args.target} does not run '{op}' (see parityfuzz --list-ops)")
    if args.table:
        table(args)
        return 0
    if not args.out:
        ap.error("--out is needed to run campaigns")
    todo = pending(args)
    print(f"{len(todo)} slices of {args.slice} s to run", flush=True)
    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        ok = all(pool.map(lambda t: run_slice(args, *t), todo))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
