#!/usr/bin/python3
"""campaigns.py - long parityfuzz campaigns against one target, resumable across sessions.

Every cell, an (op, dtype) pair with --by op (the oneDNN campaigns), an (op family,
dtype) pair with --by family (the compiler workers': a family's ops in one campaign), or a
graph family with --by graph (`parityfuzz graph`: fused regions, every dtype the target
runs, in one campaign), gets
--minutes of campaign time in slices of --slice seconds (one parityfuzz process each, one
OpenMP thread). A slice that finishes leaves its JSON summary in STATE/<cell>/slice-<n>.json
(written by parityfuzz, renamed into place only when the slice ran to its end, with the
slice's wall and CPU seconds added: parityfuzz's and its worker's), so an interrupted run
loses at most the slice in flight; running the script again picks up where it stopped.
The time a cell's finished slices ran counts, whatever their length, so --slice may change
between runs. Slice n runs with --seed n, so a cell's slices search different cases. Repros
go to OUT/<cell>/ (one folder per unique signature, minimized).

    scripts/campaigns.py build/parityfuzz --target onednn --by op \\
        --state corpus/onednn/campaigns --out /var/tmp/onednn-repros --minutes 10 --parallel 2
    PY=$(bash scripts/setup-venv.sh scripts/requirements-compilers.txt)
    scripts/campaigns.py build/parityfuzz --target "cmd:$PY fuzz/workers/ov_worker.py" \\
        --by family --state corpus/openvino/campaigns --out /var/tmp/ov-repros --minutes 10
    scripts/campaigns.py build/parityfuzz --target ... --by family --state ... --table

--table prints the exec counts per cell as the README's Markdown table (rows in the
registry's order), with the CPU hours spent.

The ops, dtypes and families are the target's own: `parityfuzz --list-ops --target T` says
which ops it runs, in which dtypes, and each op's family (this script holds no list of
ops); --ops and --dtypes narrow them.
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
    """{op: ([dtype, ...], family)} the target runs, in the registry's order."""
    p = subprocess.run([parityfuzz, "--list-ops", "--target", target], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"{parityfuzz} --list-ops --target {target}: exit {p.returncode}: "
                 f"{p.stderr.strip()[-300:]}")
    runs = {}
    for line in p.stdout.splitlines():
        op, dtypes, family = (line.split(" ") + ["", ""])[:3]
        runs[op] = (dtypes.split(",") if dtypes else [], family)
    return runs


def graph_families(parityfuzz):
    """[family] of `parityfuzz graph --list-families`."""
    p = subprocess.run([parityfuzz, "graph", "--list-families"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"{parityfuzz} graph --list-families: exit {p.returncode}: {p.stderr.strip()}")
    return [line.split(" ")[0] for line in p.stdout.splitlines() if line.strip()]


def cells(args):
    """[(cell name, ops, dtype)] in the registry's order: one op, or a family's ops, the
    target runs in that dtype; with --by graph, [(family, [family], "")]."""
    if args.by == "graph":
        return [(fam, [fam], "") for fam in args.families]
    out, seen = [], {}
    for op in args.ops:
        dtypes, family = args.runs[op]
        for dtype in args.dtypes:
            if dtype not in dtypes:
                continue
            key = (op if args.by == "op" else family, dtype)
            if key not in seen:
                seen[key] = []
                out.append((f"{key[0]}-{dtype}", seen[key], dtype))
            seen[key].append(op)
    return out


def slices_done(state, cell):
    d = os.path.join(state, cell)
    out = []
    if os.path.isdir(d):
        for name in sorted(os.listdir(d)):
            if name.startswith("slice-") and name.endswith(".json"):
                with open(os.path.join(d, name)) as f:
                    out.append(json.load(f))
    return out


def run_slice(args, cell, ops, dtype, n):
    d = os.path.join(args.state, cell)
    os.makedirs(d, exist_ok=True)
    final = os.path.join(d, f"slice-{n}.json")
    tmp = final + ".tmp"
    if args.by == "graph":
        cmd = [args.parityfuzz, "graph", "--target", args.target, "--families", ops[0],
               "--time", str(args.slice), "--seed", str(n), "--out", os.path.join(args.out, cell)]
    else:
        cmd = [args.parityfuzz, "--target", args.target, "--ops", ",".join(ops), "--dtypes",
               dtype, "--time", str(args.slice), "--seed", str(n), "--out",
               os.path.join(args.out, cell)]
    if args.values_per_shape > 1 and args.by != "graph":
        cmd += ["--values-per-shape", str(args.values_per_shape)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    t0 = time.time()
    with open(os.devnull, "w") as null:
        p = subprocess.Popen(cmd + ["--json", tmp], env=env, stdout=null, stderr=subprocess.PIPE,
                             text=True)
        err = p.stderr.read()
        # wait4: the CPU time of parityfuzz and of the worker processes it reaped
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode not in (0, 1) or not os.path.exists(tmp):
        sys.stderr.write(f"{cell} slice {n}: parityfuzz exit {p.returncode}: "
                         f"{err.strip()[-300:]}\n")
        return False
    with open(tmp) as f:
        res = json.load(f)
    res["command"] = " ".join(cmd)
    res["wall_s"] = round(time.time() - t0, 1)
    res["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 1)
    # parityfuzz reaps its worker's whole process group since 2026-12-06 (formats/process.c,
    # "Group reaping"): before, a worker behind `sh -c` went to init and cpu_s held
    # parityfuzz's own time only
    res["cpu_includes_workers"] = True
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1)
    os.replace(tmp, final)
    print(f"{cell:24s} slice {n}: {res['execs']} execs ({res['judged']} judged), "
          f"{len(found(res))} findings, {res['elapsed_s']:.0f} s", flush=True)
    return True


def found(res):
    """A slice's unique findings: single-op signatures, or graph root causes."""
    if isinstance(res.get("findings"), list):
        return {f["signature"] for f in res["findings"]}
    return {(c["family"], c["ops"], c["dtype"], c["symptom"]) for c in res.get("root_causes", [])}


def pending(args):
    """Slices still to run: (cell, ops, dtype, slice number), cells in order. A cell needs
    --minutes of slice time in all; what its finished slices ran counts (whatever their
    length), and new slices take the next seeds."""
    need = []
    for cell, ops, dtype in cells(args):
        done = slices_done(args.state, cell)
        ran = sum(s["elapsed_s"] for s in done)
        seed = max([int(s.get("seed", 0)) for s in done] + [0])
        # a slice ends a little after its --time; 1% slack keeps that from asking for
        # another whole slice
        while ran < args.minutes * 60 * 0.99:
            seed += 1
            need.append((cell, ops, dtype, seed))
            ran += args.slice
    return need


def table(args):
    label = {"op": "op", "family": "family (ops)", "graph": "graph family"}[args.by]
    if args.by == "graph":
        print(f"| {label} | execs | root causes |")
    else:
        print(f"| {label} | " + " | ".join(f"{d} execs" for d in args.dtypes) +
              " | unique signatures (" + " / ".join(SHORT.get(d, d) for d in args.dtypes) + ") |")
    print("|---|" + "---:|" * len(args.dtypes) + "---:|")
    rows, total, counted, upper = {}, 0, 0.0, 0.0
    for cell, ops, dtype in cells(args):
        name = cell[:-len(dtype) - 1] if dtype else cell
        rows.setdefault(name, (ops, {}))[1][dtype] = slices_done(args.state, cell)
    for name, (ops, by_dtype) in rows.items():
        cells_txt, sigs = [], []
        for dtype in args.dtypes:
            done = by_dtype.get(dtype, [])
            execs = sum(s["execs"] for s in done)
            judged = sum(s.get("judged", 0) for s in done)
            secs = sum(s["elapsed_s"] for s in done)
            total += execs
            for s in done:
                in_process = not s.get("target", "").startswith("cmd:")   # no worker
                wall = s.get("wall_s", s["elapsed_s"])
                counted += s.get("cpu_s", 0.0)
                # an older worker slice's count may lack its worker: one core for its wall
                # time bounds it (parityfuzz and its worker take turns)
                complete = "cpu_s" in s and (in_process or s.get("cpu_includes_workers"))
                upper += s["cpu_s"] if complete else wall
            if dtype not in by_dtype:
                cells_txt.append("-")
            elif done and all("judged" in s for s in done):
                cells_txt.append(f"{execs:,} ({judged:,} judged, {secs / 60:.0f} min)")
            elif done:   # slices from before parityfuzz counted judged cases
                cells_txt.append(f"{execs:,} ({secs / 60:.0f} min)")
            else:
                cells_txt.append("not yet run")
            sigs.append(str(len(set().union(*[found(s) for s in done]))) if done else "-")
        shown = name if args.by in ("op", "graph") else f"{name} ({', '.join(ops)})"
        print(f"| {shown} | {' | '.join(cells_txt)} | {' / '.join(sigs)} |")
    if counted == 0.0 and upper > 0.0:
        print(f"\n{total:,} cases in all, at most {upper / 3600:.2f} CPU hours (the wall time "
              "of slices recorded before the CPU count: one core each).")
    elif abs(upper - counted) < 1.0:
        print(f"\n{total:,} cases in all, {counted / 3600:.2f} CPU hours.")
    else:
        print(f"\n{total:,} cases in all, {counted / 3600:.2f} CPU hours counted, at most "
              f"{upper / 3600:.2f}: a slice recorded before parityfuzz reaped its worker's "
              "process group (2026-12-06) counts its worker only where it left within "
              "QUIT's grace, so its wall time, one core, bounds it.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("parityfuzz")
    ap.add_argument("--state", required=True, help="folder of slice summaries (resumable)")
    ap.add_argument("--out", help="folder for repros")
    ap.add_argument("--target", default="onednn")
    ap.add_argument("--by", choices=("op", "family", "graph"), default="op",
                    help="a campaign per (op, dtype), per (op family, dtype), or per graph "
                         "family (parityfuzz graph)")
    ap.add_argument("--minutes", type=float, default=10.0, help="campaign time per cell")
    ap.add_argument("--slice", type=int, default=300, help="seconds per slice")
    ap.add_argument("--parallel", type=int, default=2, help="slices at once")
    ap.add_argument("--values-per-shape", type=int, default=1,
                    help="parityfuzz --values-per-shape (targets that compile per shape)")
    ap.add_argument("--ops", help="comma-separated (default: every op the target runs)")
    ap.add_argument("--dtypes", help="comma-separated (default: every dtype it runs)")
    ap.add_argument("--table", action="store_true")
    args = ap.parse_args()
    if args.by == "graph":      # cells are graph families; each runs every dtype
        args.families = graph_families(args.parityfuzz)
        args.runs, args.ops, args.dtypes = {}, [], [""]
    else:
        args.runs = target_ops(args.parityfuzz, args.target)
        every_dtype = [d for d in SHORT if any(d in ds for ds, _ in args.runs.values())]
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
