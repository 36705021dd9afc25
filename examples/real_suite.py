#!/usr/bin/env python3
"""real_suite.py - a `paritydiff gate` suite (diff/GATE.md) made from real runs.

    python real_suite.py OUT_DIR [--lengths 16,64,256,700] [--steady-calls 20]

Run it with the python of the current-torch environment (scripts/setup-venv.sh): it needs
torch >= 2 (torch.compile, Inductor on CPU) and h5py. A tiny token model (embedding, a
2-layer nn.TransformerEncoder with d_model 32, a linear head to 64 logits per token) is
captured eagerly and compiled, once per sequence length, with steady-state telemetry
(formats/parity_torch.py, steady_calls) into

    OUT_DIR/<shape_bucket>/seq<N>/eager.h5, compiled.h5   root attributes workload, shape_bucket
    OUT_DIR/traffic.csv                                    workload,shape_bucket,share

The logits /out carry the tensor attribute outcome = "argmax" (the next-token decision), so
the gate measures outcome parity. ONE torch.compile'd model object serves every length, and
dynamo is not reset between captures (reset_dynamo=False): the second length makes dynamo
recompile (a size guard fails; automatic dynamic shapes then compiles a graph over a
symbolic length), which that capture's recompiles and recompile_reasons show, and the
later lengths reuse the dynamic graph. OUT_DIR/policy.yaml is not written here.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "formats"))

import h5py  # noqa: E402
import torch  # noqa: E402
import parity_torch as pt  # noqa: E402

WORKLOAD = "encoder"
BUCKETS = [(1, 128), (129, 512), (513, 2048), (2049, 8192)]
TRAFFIC = {"1-128": 0.55, "129-512": 0.30, "513-2048": 0.15}   # production shares (sum 1)
VOCAB = 64


class TinyEncoder(torch.nn.Module):
    def __init__(self, d_model=32, heads=4, layers=2):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, d_model)
        layer = torch.nn.TransformerEncoderLayer(d_model, heads, 2 * d_model, dropout=0.0,
                                                 batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d_model, VOCAB)

    def forward(self, tokens):
        return self.head(self.enc(self.emb(tokens)))


def bucket_of(n):
    for lo, hi in BUCKETS:
        if lo <= n <= hi:
            return "%d-%d" % (lo, hi)
    raise SystemExit("real_suite: sequence length %d is in no shape bucket (1..8192)" % n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--lengths", default="16,64,256,700",
                    help="comma-separated sequence lengths (default 16,64,256,700)")
    ap.add_argument("--steady-calls", type=int, default=20)
    args = ap.parse_args()
    try:
        lengths = [int(x) for x in args.lengths.split(",") if x.strip()]
    except ValueError:
        raise SystemExit("real_suite: --lengths takes integers, e.g. 16,64,256")
    if not lengths or min(lengths) < 1:
        raise SystemExit("real_suite: --lengths needs at least one length >= 1")
    if int(torch.__version__.split(".")[0]) < 2:
        raise SystemExit("real_suite: needs torch >= 2 (torch.compile); this is %s"
                         % torch.__version__)

    start = time.perf_counter()
    torch.manual_seed(0)
    model = TinyEncoder().eval()
    torch._dynamo.reset()                    # a fresh dynamo for the suite, once
    compiled = pt.torch_compile(model, None)  # one compiled object for every length

    def whole_torch_compile(work, example_args):
        return compiled    # the shared object (work, the helper's private copy, is unused)

    os.makedirs(args.out_dir, exist_ok=True)
    written = []
    for n in lengths:
        bucket = bucket_of(n)
        gen = torch.Generator().manual_seed(n)
        tokens = torch.randint(0, VOCAB, (1, n), generator=gen)
        steady = [(torch.randint(0, VOCAB, (1, n), generator=gen),) for _ in range(4)]
        folder = os.path.join(args.out_dir, bucket, "seq%d" % n)
        os.makedirs(folder, exist_ok=True)
        labels = dict(model="tiny_encoder", workload=WORKLOAD, shape_bucket=bucket,
                      outcomes={"/out": "argmax"}, steady_calls=args.steady_calls,
                      steady_inputs=steady)
        t0 = time.perf_counter()
        pt.capture_eager(model, (tokens,), os.path.join(folder, "eager.h5"), **labels)
        pt.capture_compiled(model, (tokens,), os.path.join(folder, "compiled.h5"),
                            whole_model=whole_torch_compile, compiler="torch.compile whole",
                            reset_dynamo=False, **labels)
        with h5py.File(os.path.join(folder, "compiled.h5"), "r") as f:
            a = f.attrs
            ct = a.get("compile_time_s")   # absent: dynamo compiled nothing in the warm-up
            print("%-28s compile %s recompiles %d fallback %d/%d p50 %.3fms p99 %.3fms "
                  "(%.1fs)" % (os.path.join(bucket, "seq%d" % n),
                               "-" if ct is None else "%.2fs" % ct,
                               a.get("recompiles", 0), a.get("fallback_calls", 0), a["calls"],
                               a["latency_p50_ms"], a["latency_p99_ms"],
                               time.perf_counter() - t0))
            for line in str(a.get("recompile_reasons", "")).splitlines():
                print("%-28s   recompiled: %s" % ("", line))
        with h5py.File(os.path.join(folder, "eager.h5"), "r") as f:
            print("%-28s eager p50 %.3fms p99 %.3fms" % ("", f.attrs["latency_p50_ms"],
                                                         f.attrs["latency_p99_ms"]))
        written += [os.path.join(folder, "eager.h5"), os.path.join(folder, "compiled.h5")]

    traffic = os.path.join(args.out_dir, "traffic.csv")
    with open(traffic + ".tmp", "w") as f:
        f.write("workload,shape_bucket,share\n")
        for bucket, share in TRAFFIC.items():
            f.write("%s,%s,%g\n" % (WORKLOAD, bucket, share))
    os.replace(traffic + ".tmp", traffic)
    written.append(traffic)
    print("wrote %d files in %.1fs:" % (len(written), time.perf_counter() - start))
    for p in written:
        print("  " + p)


if __name__ == "__main__":
    main()
