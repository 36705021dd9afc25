#!/usr/bin/python3
"""bench_fuzz.py - parityfuzz against a baseline fuzzer, side by side in one run.

For every defect of the builtin compiled target: time to the first finding over N seeds,
for parityfuzz (guided shapes and values) and for the baseline strategy (every dim uniform
in [1, 4096], values N(0, 1): what a naive tensor fuzzer draws), each run capped; then exec/s
per op on the clean target; then the findings of a long clean campaign (must be 0).

    tests/bench/bench_fuzz.py BUILD_DIR [--seeds 5] [--cap 600] [--clean 600] [--per-op 3]
                                        [--parallel 2] [--defects-only]

Prints a Markdown table (the README's). Runs go --parallel at a time (default 2, this
machine's cores); each is one process, so they do not share a core.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor


def run(binary, args, workdir, tag):
    out = os.path.join(workdir, tag + ".json")
    cmd = [binary] + args + ["--json", out]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    with open(out) as f:
        return json.load(f)


def defects(binary):
    text = subprocess.run([binary, "--list-defects"], capture_output=True, text=True,
                          check=True).stdout
    rows = []
    for line in text.splitlines():
        name, rest = line.split("\t", 1)
        ops = rest.split(";")[0].replace("ops: ", "").strip()
        rows.append((name, ops))
    return rows


def secs(v):
    return "%.1f s" % v if v >= 1 else "%.3f s" % v


def fmt_time(values, cap):
    found = [v for v in values if v is not None]
    if not found:
        return "not found", "not found"
    med_list = sorted(v if v is not None else float("inf") for v in values)
    med = med_list[len(med_list) // 2]
    med_s = "not found" if med == float("inf") else secs(med)
    mx = "not found (%d/%d found)" % (len(found), len(values)) if len(found) < len(values) \
        else secs(max(found))
    return med_s, mx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--cap", type=float, default=600.0)
    ap.add_argument("--clean", type=float, default=600.0)
    ap.add_argument("--per-op", type=float, default=3.0)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--defects-only", action="store_true",
                    help="only the time-to-first-finding table")
    ap.add_argument("--defect", action="append", help="only these defects (repeatable)")
    a = ap.parse_args()
    binary = os.path.join(a.build, "parityfuzz")
    work = tempfile.mkdtemp(prefix="bench-fuzz-")
    catalogue = [d for d in defects(binary) if not a.defect or d[0] in a.defect]

    jobs = []
    for name, ops in catalogue:
        for seed in range(1, a.seeds + 1):
            for strategy in ("guided", "baseline"):
                args = ["--defect", name, "--ops", ops, "--seed", str(seed),
                        "--strategy", strategy, "--time", str(a.cap), "--stop-after-first",
                        "--no-minimize"]
                jobs.append((name, seed, strategy, args))
    results = {}
    with ThreadPoolExecutor(max_workers=a.parallel) as pool:
        futs = {pool.submit(run, binary, args, work, "%s-%d-%s" % (n, s, st)): (n, s, st)
                for n, s, st, args in jobs}
        for fut, key in futs.items():
            doc = fut.result()
            results[key] = doc
            print("  %s seed %d %s: first finding %s, %.0f exec/s" % (
                key[0], key[1], key[2], doc["first_finding_s"], doc["execs_per_s"]),
                file=sys.stderr, flush=True)

    print("| defect | parityfuzz median | max | exec/s | baseline median | max | exec/s | speedup |")
    print("|---|---|---|---|---|---|---|---|")
    for name, _ in catalogue:
        row = [name]
        medians = {}
        for strategy in ("guided", "baseline"):
            times = [results[(name, s, strategy)]["first_finding_s"] for s in range(1, a.seeds + 1)]
            rates = [results[(name, s, strategy)]["execs_per_s"] for s in range(1, a.seeds + 1)]
            med, mx = fmt_time(times, a.cap)
            srt = sorted(t if t is not None else float("inf") for t in times)
            medians[strategy] = srt[len(srt) // 2]
            row += [med, mx, "%.0f" % statistics.median(rates)]
        g, b = medians["guided"], medians["baseline"]
        if g == float("inf"):
            row.append("-")
        elif b == float("inf"):
            row.append("> %.0fx" % (a.cap / max(g, 0.001)))
        else:
            row.append("%.1fx" % (b / max(g, 0.001)))
        print("| " + " | ".join(row) + " |")

    if a.defects_only:
        return
    # exec/s per op on the clean compiled target
    ops = sorted(json.loads(json.dumps(run(binary, ["--max-execs", "1"], work, "ops")))
                 ["cases_per_op"].keys())
    print()
    print("| op | exec/s (guided, clean target) |")
    print("|---|---|")
    with ThreadPoolExecutor(max_workers=a.parallel) as pool:
        docs = list(pool.map(lambda op: run(binary, ["--ops", op, "--time", str(a.per_op),
                                                     "--seed", "1"], work, "op-" + op), ops))
    for op, doc in zip(ops, docs):
        print("| %s | %.0f |" % (op, doc["execs_per_s"]))

    doc = run(binary, ["--time", str(a.clean), "--seed", "1", "--jobs", str(a.parallel),
                       "--out", os.path.join(work, "clean")], work, "clean")
    print()
    print("clean compiled target, %.0f s on %d jobs: %d execs, %d findings" % (
        doc["elapsed_s"], a.parallel, doc["execs"], len(doc["findings"])))
    for f in doc["findings"]:
        print("  finding: %s (%s)" % (f["signature"], f["repro"]))


if __name__ == "__main__":
    main()
