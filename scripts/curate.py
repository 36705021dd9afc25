#!/usr/bin/python3
"""curate.py - copies chosen repros of a target's campaigns (scripts/campaigns.py) into the
corpus.

    scripts/curate.py --curate NAME=REPRO ... \
        [--state corpus/onednn/campaigns] [--into corpus/onednn/repros] [--target onednn]

Each repro goes into the corpus under a name that says what it shows, with its signature
file's paths rewritten and a "found by:" line naming the campaign slice (from the state
folder) whose summary lists it, and a "replay:" line that replays it against --target
(written as given: for a worker, the shell words that name its python). A graph case's
repro has no signature file and gets none (that is how parityfuzz tells the two apart):
an "origin" note says the same instead. Which repros to curate: `parityfuzz triage DIR`
groups a campaign's repros by root cause and names the smallest of each (fuzz/FUZZ.md,
"Root causes"); it replaced this script's former listing mode. Tooling only: no tool of
parity needs Python.
"""
import argparse
import json
import os
import shutil
import sys


def found_by(state, repro):
    """The command of the campaign slice whose summary lists repro, or None."""
    real = os.path.realpath(repro)
    for dirpath, _, filenames in os.walk(state):
        for name in sorted(filenames):
            if not (name.startswith("slice-") and name.endswith(".json")):
                continue
            with open(os.path.join(dirpath, name)) as f:
                summary = json.load(f)
            # a single-op slice lists its findings; a graph slice its root causes
            listed = summary.get("findings")   # a count in a graph summary
            for finding in (listed if isinstance(listed, list) else []) + \
                    summary.get("root_causes", []):
                if finding.get("repro") and os.path.realpath(finding["repro"]) == real:
                    return summary.get("command")
    return None


def graph_origin(repro, dest, command, target):
    """The note a curated graph repro keeps, named origin: a graph repro has no signature
    file (parityfuzz triage and graph replay tell it from a single op's by that)."""
    return [f"graph repro of: {command}\n",
            f"look:   paritydiff {dest}/eager.h5 {dest}/compiled.h5\n",
            f"replay: parityfuzz graph replay {dest} --target {target} --expect-divergent\n"]


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
        if not os.path.exists(os.path.join(repro, "signature")):
            with open(os.path.join(tmp, "origin"), "w") as f:
                f.writelines(graph_origin(repro, dest, command, args.target))
            shutil.rmtree(dest, ignore_errors=True)
            os.replace(tmp, dest)
            print(f"{dest}  <- {repro} (a graph case)")
            continue
        lines = []
        with open(os.path.join(repro, "signature")) as f:
            for line in f:
                line = line.replace(repro, dest)
                if line.startswith("replay:"):
                    line = f"replay: parityfuzz replay {dest} --target {args.target} --expect-divergent\n"
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
    ap.add_argument("--curate", nargs="+", metavar="NAME=REPRO", required=True)
    ap.add_argument("--state", default="corpus/onednn/campaigns")
    ap.add_argument("--into", default="corpus/onednn/repros")
    ap.add_argument("--target", default="onednn", help="the target of the replay: line")
    return curate(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
