#!/usr/bin/python3
"""onednn-triage.py - sorts the repros of the oneDNN campaigns by what went wrong.

Signatures split one bug by shape features (a NaN at rank 1 and at rank 3 are two
signatures); the README's findings are root causes. For each repro folder under the given
roots this runs paritydiff --json on it, takes /out's worst element and names its kind:

  drops-nan       eager (the reference) is NaN, compiled is a number
  makes-nonfinite compiled is NaN or infinite where eager is finite
  loses-inf       eager is infinite, compiled finite (e.g. an init value of -FLT_MAX)
  flush-subnormal eager is a nonzero subnormal of float32, compiled is zero
  flush-normal    eager is a nonzero normal number, compiled is zero
  accuracy        both finite and nonzero: an error beyond the bound, in ulps of the output
  crash, hang, error  the compiled side gave no output (the signature's class)

    scripts/onednn-triage.py build/paritydiff /var/tmp/onednn-repros [--json FILE]
    scripts/onednn-triage.py build/paritydiff --curate NAME=REPRO ... \
        --state corpus/onednn/campaigns --into corpus/onednn/repros

Prints one line per (op, dtype, kind) with the count and the smallest repro (fewest
elements) as the representative; only repros that a finished slice's summary lists count. --curate copies chosen repros into the corpus under a
name that says what they show, with their signature file's paths rewritten and a
"found by:" line naming the campaign slice (from the state folder) whose summary lists it.
Tooling only: no tool of parity needs Python.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

TINY = 2.0 ** -126   # smallest normal float32 (and bfloat16)


def load(f, name):
    d = f[name]
    a = np.atleast_1d(d[()])
    if a.dtype == np.uint16:          # bfloat16 stored as its bits
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return np.asarray(a, dtype=np.float64).ravel()


def kind_of(e, c):
    if math.isnan(e) and not math.isnan(c):
        return "drops-nan"
    if math.isfinite(e) and not math.isfinite(c):
        return "makes-nonfinite"
    if math.isinf(e) and math.isfinite(c):
        return "loses-inf"
    if c == 0 and e != 0:
        return "flush-subnormal" if abs(e) < TINY else "flush-normal"
    return "accuracy"


def signature_class(repro):
    """The finding's class, from the signature file's "class:" line."""
    with open(os.path.join(repro, "signature")) as f:
        for line in f:
            if line.startswith("class: "):
                return line[len("class: "):].strip()
    return None


def attr_text(f, name):
    v = f.attrs[name]
    return v.decode() if isinstance(v, bytes) else str(v)


def triage(paritydiff, repro):
    cls = signature_class(repro)
    if cls in ("crash", "hang", "error"):
        # no compiled output to compare: the kind is the class, compiled.h5 says why
        with h5py.File(f"{repro}/eager.h5", "r") as fe, h5py.File(f"{repro}/compiled.h5", "r") as fc:
            inputs = [k for k in fe.keys() if k != "out"]
            shapes = " ".join(f"{k}{list(fe[k].shape)}" for k in inputs)
            return {"repro": repro, "op": attr_text(fe, "op"),
                    "dtype": attr_text(fe, "case_dtype"), "kind": cls,
                    "elements": int(sum(fe[k].size for k in inputs)),
                    "detail": f"{shapes}: {attr_text(fc, 'run_failure')}"}
    p = subprocess.run([paritydiff, "--json", "-", f"{repro}/eager.h5", f"{repro}/compiled.h5"],
                       capture_output=True, text=True)
    if p.returncode != 1:
        return {"repro": repro, "kind": f"paritydiff-exit-{p.returncode}"}
    rep = json.loads(p.stdout)
    out = [t for t in rep["tensors"] if t["name"] == "/out"][0]
    with h5py.File(f"{repro}/eager.h5", "r") as fe, h5py.File(f"{repro}/compiled.h5", "r") as fc:
        oe, oc = load(fe, "out"), load(fc, "out")
        op, dtype = attr_text(fe, "op"), attr_text(fe, "case_dtype")
        shape = list(out["shape"])
        idx = out.get("worst_index") or []
        flat = int(np.ravel_multi_index(idx, shape)) if shape and idx else 0
        inputs = {k: load(fe, k) for k in fe.keys() if k != "out"}
    e, c = float(oe[flat]), float(oc[flat])
    x = None
    if len(inputs) == 1:
        only = next(iter(inputs.values()))
        if only.size == oe.size:
            x = float(only[flat])
    j = out.get("judgement") or {}
    return {"repro": repro, "op": op, "dtype": dtype, "kind": kind_of(e, c), "eager": e,
            "compiled": c, "x": x, "elements": int(sum(v.size for v in inputs.values())),
            "compiled_ulp": j.get("compiled_max_ulp"), "score": out.get("worst_score"),
            "cause": out.get("cause"), "status": out.get("status")}


def found_by(state, repro):
    """The command of the campaign slice whose summary lists repro, or None."""
    real = os.path.realpath(repro)
    for dirpath, _, filenames in os.walk(state):
        for name in sorted(filenames):
            if not (name.startswith("slice-") and name.endswith(".json")):
                continue
            with open(os.path.join(dirpath, name)) as f:
                summary = json.load(f)
            for finding in summary.get("findings", []):
                if finding.get("repro") and os.path.realpath(finding["repro"]) == real:
                    return summary.get("command")
    return None


def curate(args):
    os.makedirs(args.into, exist_ok=True)
    for item in args.curate:
        name, repro = item.split("=", 1)
        repro = repro.rstrip("/")
        dest = os.path.join(args.into, name)
        command = found_by(args.state, repro)
        if command is None:
            sys.stderr.write(f"{repro}: no campaign slice under {args.state} lists it\n")
            return 1
        tmp = dest + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        for f in ("eager.h5", "compiled.h5"):
            shutil.copyfile(os.path.join(repro, f), os.path.join(tmp, f))
        lines = []
        with open(os.path.join(repro, "signature")) as f:
            for line in f:
                line = line.replace(repro, dest)
                if line.startswith("replay:"):
                    line = f"replay: parityfuzz replay {dest} --target onednn --expect-divergent\n"
                lines.append(line)
        lines.append(f"found by: {command}\n")
        with open(os.path.join(tmp, "signature"), "w") as f:
            f.writelines(lines)
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(tmp, dest)
        print(f"{dest}  <- {repro}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paritydiff")
    ap.add_argument("roots", nargs="*")
    ap.add_argument("--json", help="write every repro's triage here")
    ap.add_argument("--curate", nargs="+", metavar="NAME=REPRO")
    ap.add_argument("--state", default="corpus/onednn/campaigns")
    ap.add_argument("--into", default="corpus/onednn/repros")
    args = ap.parse_args()
    if args.curate:
        return curate(args)
    # only repros a finished campaign slice lists: a slice cut short (a killed run) leaves
    # repros nobody can say how to reproduce
    listed = set()
    for dirpath, _, filenames in os.walk(args.state):
        for name in filenames:
            if name.startswith("slice-") and name.endswith(".json"):
                with open(os.path.join(dirpath, name)) as f:
                    for finding in json.load(f).get("findings", []):
                        if finding.get("repro"):
                            listed.add(os.path.realpath(finding["repro"]))
    rows = []
    for root in args.roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            if "eager.h5" in filenames and "compiled.h5" in filenames and \
                    os.path.realpath(dirpath) in listed:
                rows.append(triage(args.paritydiff, dirpath))
    groups = {}
    for r in rows:
        groups.setdefault((r.get("op", "?"), r.get("dtype", "?"), r["kind"]), []).append(r)
    for key in sorted(groups):
        g = sorted(groups[key], key=lambda r: r.get("elements", 0))
        best = g[0]
        detail = best.get("detail", "")
        if "eager" in best:
            detail = (f"eager {best['eager']:.9g} compiled {best['compiled']:.9g}"
                      + (f" x {best['x']:.9g}" if best["x"] is not None else "")
                      + (f" ulp {best['compiled_ulp']:.3g}" if best.get("compiled_ulp") else ""))
        ulps = [r["compiled_ulp"] for r in g if r.get("compiled_ulp") is not None]
        scores = [r["score"] for r in g if r.get("score") is not None]
        worst = (f" | worst of group: {max(ulps):.3g} ulp" if ulps else "") + \
                (f", {max(scores):.3g}x bound" if scores else "")
        print(f"{key[0]:12s} {key[1]:9s} {key[2]:16s} {len(g):4d}  {best['repro']}  {detail}{worst}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
