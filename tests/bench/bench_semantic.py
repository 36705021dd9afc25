#!/usr/bin/python3
"""bench_semantic.py - what semantic judgement costs per element, op by op, in one run.

Usage: bench_semantic.py BUILD_DIR [--sizes 1,4,16] [--ops gelu,exp,softmax,layer_norm,matmul,...]
                         [--workdir DIR] [--keep] [--threads N]

For each op and size (millions of output elements) it writes an eager and a compiled float32
capture of one op (h5py + numpy; the inputs, then the output with its `op` and `inputs`), runs
`paritydiff --json` on the pair and reads back how many elements the op's model judged, how
many took the slow (MPFR) path, and the time. The compiled output differs from eager in every
element by one float32 ulp, alternating up and down: the size of a legitimate reordering, inside
every model's bound, so every element is judged (elements equal bit for bit are cheap and would
flatter the figure) and the verdict must be a pass. Exit 1 when a verdict is not a pass or the
judged count is not the element count.

The eager output is the op computed in float64 and rounded once to float32 (a correctly
rounded kernel). softmax, log_softmax, layer_norm and rms_norm run over rows of 1024, sum and
mean reduce rows of 1024 (their ns / element is per term, the inputs), matmul is [M, 64] x [64, 1024]
(K = 64, so the exact dot products of 16M elements are 1G terms: the judge verifies the large
ones selectively, README "Selective verification").
Python is only the harness here; it never runs inside paritydiff.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

COLS = 1024
K_MATMUL = 64


def make_case(op, n, seed):
    """The inputs (name -> (array, op?, inputs, attrs)) and the float64 output of op."""
    rng = np.random.default_rng(seed)
    rows = max(1, n // COLS)
    if op == "gelu":
        x = rng.uniform(-6, 6, size=(rows, COLS)).astype(np.float32)
        import torch   # erf in float64 (numpy has none)
        y = torch.nn.functional.gelu(torch.from_numpy(x.astype(np.float64))).numpy()
        return {"x": x}, y, {}
    if op == "exp":
        x = rng.uniform(-20, 20, size=(rows, COLS)).astype(np.float32)
        return {"x": x}, np.exp(x.astype(np.float64)), {}
    if op == "softmax":
        x = rng.normal(0, 3, size=(rows, COLS)).astype(np.float32)
        xd = x.astype(np.float64)
        e = np.exp(xd - xd.max(axis=1, keepdims=True))
        return {"x": x}, e / e.sum(axis=1, keepdims=True), {"dim": -1}
    if op == "layer_norm":
        x = rng.normal(0.5, 2, size=(rows, COLS)).astype(np.float32)
        w = rng.uniform(0.5, 1.5, size=COLS).astype(np.float32)
        b = rng.uniform(-0.5, 0.5, size=COLS).astype(np.float32)
        xd = x.astype(np.float64)
        mu = xd.mean(axis=1, keepdims=True)
        var = ((xd - mu) ** 2).mean(axis=1, keepdims=True)
        y = (xd - mu) / np.sqrt(var + 1e-5) * w + b
        return {"x": x, "weight": w, "bias": b}, y, {"normalized_shape": [COLS], "eps": 1e-5}
    if op == "log_softmax":
        x = rng.normal(0, 3, size=(rows, COLS)).astype(np.float32)
        xd = x.astype(np.float64)
        m = xd.max(axis=1, keepdims=True)
        y = xd - m - np.log(np.exp(xd - m).sum(axis=1, keepdims=True))
        return {"x": x}, y, {"dim": -1}
    if op == "rms_norm":
        x = rng.normal(0.5, 2, size=(rows, COLS)).astype(np.float32)
        w = rng.uniform(0.5, 1.5, size=COLS).astype(np.float32)
        xd = x.astype(np.float64)
        y = xd / np.sqrt((xd * xd).mean(axis=1, keepdims=True) + 1e-6) * w
        return {"x": x, "weight": w}, y, {"normalized_shape": [COLS], "eps": 1e-6}
    if op in ("sum", "mean"):
        # rows of COLS reduced: the output has n / COLS elements, each of COLS terms
        x = rng.normal(0.5, 2, size=(rows, COLS)).astype(np.float32)
        xd = x.astype(np.float64)
        y = xd.sum(axis=1) if op == "sum" else xd.mean(axis=1)
        return {"x": x}, y, {"dim": [1]}
    if op == "matmul":
        m = max(1, n // COLS)
        a = rng.uniform(-1, 1, size=(m, K_MATMUL)).astype(np.float32)
        b = rng.uniform(-1, 1, size=(K_MATMUL, COLS)).astype(np.float32)
        return {"a": a, "b": b}, a.astype(np.float64) @ b.astype(np.float64), {}
    raise SystemExit("bench_semantic: unknown op " + op)


def write(path, side, op, inputs, out, attrs):
    with h5py.File(path, "w") as f:
        f.attrs["parity_format"] = 1
        f.attrs["side"] = side
        for k, (name, arr) in enumerate(inputs.items()):
            f.create_dataset(name, data=arr).attrs["order"] = k
        d = f.create_dataset("out", data=out)
        d.attrs["op"] = op
        d.attrs["inputs"] = list(inputs.keys())
        d.attrs["order"] = len(inputs)
        for k, v in attrs.items():
            d.attrs[k] = v


def one_ulp_apart(y32):
    """y32 moved one float32 ulp, up at even indices and down at odd ones."""
    flat = y32.reshape(-1)
    up = np.nextafter(flat, np.float32(np.inf))
    down = np.nextafter(flat, np.float32(-np.inf))
    idx = np.arange(flat.size)
    return np.where(idx % 2 == 0, up, down).reshape(y32.shape).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--sizes", default="1,4,16")
    ap.add_argument("--ops", default="gelu,exp,softmax,layer_norm,matmul")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    paritydiff = os.path.join(args.build, "paritydiff")
    work = args.workdir or tempfile.mkdtemp(prefix="bench_semantic.")
    os.makedirs(work, exist_ok=True)
    failed = 0
    print("| op | elements | seconds | ns / element | slow path | judged | verdict |")
    print("|---|---|---|---|---|---|---|")
    try:
        for op in args.ops.split(","):
            for size in args.sizes.split(","):
                n = int(float(size) * 1024 * 1024)
                inputs, y, attrs = make_case(op, n, seed=1)
                y32 = y.astype(np.float32)
                pe = os.path.join(work, "%s_%s_eager.h5" % (op, size))
                pc = os.path.join(work, "%s_%s_compiled.h5" % (op, size))
                write(pe, "eager", op, inputs, y32, attrs)
                write(pc, "compiled", op, inputs, one_ulp_apart(y32), attrs)
                cmd = [paritydiff, "--json", "-", pe, pc]
                if args.threads:
                    cmd[1:1] = ["--threads", str(args.threads)]
                t0 = time.perf_counter()
                proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                seconds = time.perf_counter() - t0
                try:
                    report = json.loads(proc.stdout)
                except ValueError:
                    print("bench_semantic: %s %s: no JSON (exit %d): %s" % (
                        op, size, proc.returncode, proc.stderr.decode(errors="replace")[:300]))
                    failed = 1
                    continue
                t = [x for x in report["tensors"] if x["name"] == "/out"][0]
                sem = t.get("judgement") or {}
                checked = sem.get("checked", 0)
                slow = sem.get("slow_path", checked)
                elems = y32.size
                ok = report.get("verdict") == "pass"
                full = checked == elems or sem.get("reference") == "sampled"
                if not ok or not full:
                    failed = 1
                # a reduction's cost is per term: ns / element counts its inputs
                terms = inputs["x"].size if op in ("sum", "mean") else elems
                print("| %s | %d | %.3f | %.1f | %d (%.4f%%) | %d | %s |" % (
                    op if terms == elems else "%s (%d terms each)" % (op, COLS),
                    elems, seconds, seconds / terms * 1e9, slow,
                    100.0 * slow / max(checked, 1), checked, report.get("verdict")))
                sys.stdout.flush()
                for p in (pe, pc):
                    if not args.keep:
                        os.unlink(p)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return failed


if __name__ == "__main__":
    sys.exit(main())
