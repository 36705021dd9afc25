#!/usr/bin/env python3
"""bench_transformer.py - a transformer-sized capture pair judged end to end.

Usage: VENV_PYTHON tests/bench/bench_transformer.py BUILD_DIR [--layers 4] [--d-model 512]
           [--seq 512] [--batch 8] [--workdir DIR] [--keep]

A 4-layer nn.TransformerEncoder (d_model 512, 8 heads, feed-forward 2048, batch_first, eval),
input [8, 512, 512], captured with formats/parity_torch.py: eager op by op (fast paths off,
every aten op of every leaf recorded), and compiled with torch.compile (Inductor) leaf by
leaf, so the compiled side's values differ from eager's by the kernels' own reordering. Then
`paritydiff --json` on the pair, timed, and the counts read back: tensors, tensors judged by
an op model, elements judged, elements MPFR decided, tensors and elements where compiled
differs from eager. Exit 1 unless the verdict is a pass, some tensors were judged by a model,
some differ from eager (the compiled kernels ran), and nothing was an error.
Needs a torch with torch.compile (the venv's); Python is only the harness here.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "formats"))

import torch  # noqa: E402
import parity_torch as pt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    torch.manual_seed(0)
    d = args.d_model
    layer = torch.nn.TransformerEncoderLayer(d, 8, 4 * d, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, args.layers, enable_nested_tensor=False).eval()
    x = torch.randn(args.batch, args.seq, d)
    work = args.workdir or tempfile.mkdtemp(prefix="bench_transformer.")
    os.makedirs(work, exist_ok=True)
    eager, compiled = os.path.join(work, "eager.h5"), os.path.join(work, "compiled.h5")
    t0 = time.perf_counter()
    pt.capture_eager(model, (x,), eager, model="encoder%d" % args.layers, workload="bench")
    t1 = time.perf_counter()
    pt.capture_compiled(model, (x,), compiled, compile_leaf=lambda leaf, ex: torch.compile(leaf),
                        model="encoder%d" % args.layers, workload="bench")
    t2 = time.perf_counter()
    cmd = [os.path.join(args.build, "paritydiff"), "--json", "-", eager, compiled]
    t3 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - t3
    report = json.loads(proc.stdout)
    tensors = report["tensors"]
    judged = [t for t in tensors if t.get("judgement")]
    elems = sum(t["judgement"]["checked"] for t in judged)
    slow = sum(t["judgement"].get("slow_path", 0) for t in judged)
    errors = [t["name"] for t in tensors if t["status"] == "error"]
    # the compiled kernels ran (not eager's, bit for bit): tensors and elements that differ
    differing = [t for t in tensors if t.get("bit_differences")]
    diff_elems = sum(t["bit_differences"] for t in differing)
    sampled = sum(1 for t in judged if t["judgement"]["reference"] == "sampled")
    size = (os.path.getsize(eager) + os.path.getsize(compiled)) / 2**20
    print("torch %s, %d layers, d_model %d, seq %d, batch %d: captures %.0f MiB (eager %.1f s, "
          "compiled %.1f s to capture)" % (torch.__version__, args.layers, d, args.seq,
                                            args.batch, size, t1 - t0, t2 - t1))
    print("paritydiff: %.1f s, verdict %s (exit %d); %d tensors, %d judged by a model (%d of "
          "them sampled), %d elements checked, %d by MPFR; errors: %s" % (
              seconds, report["verdict"], proc.returncode, len(tensors), len(judged), sampled,
              elems, slow, errors or "none"))
    print("compiled differs from eager in %d tensors, %d elements" % (len(differing), diff_elems))
    by_op = {}
    for t in judged:
        j = t["judgement"]
        o = by_op.setdefault(t["judgement"]["model"], [0, 0, 0])
        o[0] += 1
        o[1] += j["checked"]
        o[2] += j.get("slow_path", 0)
    for op, (n, c, s) in sorted(by_op.items()):
        print("  %-32s %3d tensors, %10d elements checked, %8d by MPFR" % (op, n, c, s))
    if not args.keep and not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if report["verdict"] == "pass" and judged and differing and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
