"""Measures torch's CPU elementwise kernels against paritydiff's MPFR reference and bound.

For each op, dtype and code path (vectorised: one large contiguous tensor; scalar: one
element at a time), x sweeps [-10, 10] densely (log-spaced magnitudes down to 1e-6, both
signs, plus zero). The "compiled" side holds torch's y = op(x); the "eager" side holds the
float64 result rounded to the dtype (within half an ulp of the exact value, far inside any
bound), so paritydiff's judgement says how far torch's own kernel is from the exact value
relative to the registry's bound: err/bound is the largest error over the bound, beyond how
many elements break it. Prints one row per configuration:

    python3 tests/bench/measure_torch_kernels.py build/paritydiff [N [OPS [DTYPES]]]
"""
import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy
import torch

PARITYDIFF = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
ONLY = sys.argv[3].split(",") if len(sys.argv) > 3 else None   # ops to measure
DTYPE_ONLY = sys.argv[4].split(",") if len(sys.argv) > 4 else None

OPS = {
    "gelu": (lambda t: torch.nn.functional.gelu(t), {}),
    "gelu_tanh": (lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
                  {"approximate": "tanh"}),
    "silu": (torch.nn.functional.silu, {}),
    "sigmoid": (torch.sigmoid, {}),
    "tanh": (torch.tanh, {}),
    "exp": (torch.exp, {}),
    "erf": (torch.erf, {}),
    "sqrt": (torch.sqrt, {}),
    "rsqrt": (torch.rsqrt, {}),
    "reciprocal": (torch.reciprocal, {}),
    "log": (torch.log, {}),
    "cos": (torch.cos, {}),
    "sin": (torch.sin, {}),
    "hardsigmoid": (torch.nn.functional.hardsigmoid, {}),
    "hardswish": (torch.nn.functional.hardswish, {}),
}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def sweep(n):
    mags = numpy.logspace(-6, 1, n // 2)
    x = numpy.concatenate([-mags[::-1], [0.0], mags])
    return torch.tensor(x, dtype=torch.float64)


def store(f, name, t):
    if t.dtype == torch.bfloat16:
        d = f.create_dataset(name, data=t.view(torch.int16).numpy().view(numpy.uint16))
        d.attrs["dtype"] = "bfloat16"
        return d
    return f.create_dataset(name, data=t.numpy())


def judge(op, attrs, x, y, y_ref, tmp):
    paths = []
    for side, yy in (("eager", y_ref), ("compiled", y)):
        path = os.path.join(tmp, "%s.h5" % side)
        with h5py.File(path, "w") as f:
            store(f, "/x", x)
            d = store(f, "/y", yy)
            d.attrs["op"] = "gelu" if op.startswith("gelu") else op
            d.attrs["inputs"] = ["/x"]
            for k, v in attrs.items():
                d.attrs[k] = v
        paths.append(path)
    out = os.path.join(tmp, "k.json")
    subprocess.run([PARITYDIFF, "-q", "--json", out] + paths, check=False)
    with open(out) as f:
        t = [t for t in json.load(f)["tensors"] if t["name"] == "/y"][0]
    j = t["judgement"]
    return j["classes"]["compiled_worse"], t["worst_score"]


def main():
    tmp = tempfile.mkdtemp()
    print("torch %s, %d points per row" % (torch.__version__, N))
    print("%-10s %-9s %-10s %12s %12s" % ("op", "dtype", "path", "beyond", "err/bound"))
    for op, (fn, attrs) in OPS.items():
        if ONLY and op not in ONLY:
            continue
        for dname, dt in DTYPES.items():
            if DTYPE_ONLY and dname not in DTYPE_ONLY:
                continue
            x = sweep(N).to(dt)
            y_ref = fn(x.to(torch.float64)).to(dt)
            for path in ("vectorised", "scalar") if x.numel() <= 100000 else ("vectorised",):
                try:
                    if path == "vectorised":
                        y = fn(x)
                    else:
                        y = torch.stack([fn(x[i:i + 1])[0] for i in range(0, x.numel())])
                except RuntimeError as e:
                    print("%-10s %-9s %-10s %25s" % (op, dname, path, "n/a: " + str(e)[:40]))
                    continue
                beyond, worst = judge(op, attrs, x, y, y_ref, tmp)
                print("%-10s %-9s %-10s %12d %12.3f" % (op, dname, path, beyond, worst))
                sys.stdout.flush()


if __name__ == "__main__":
    main()
