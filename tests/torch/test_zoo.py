"""The zoo (tests/torch/zoo.py) through the capture helper and paritydiff (issue 36).

For each architecture, at tiny size with random weights:
- a byte copy of its eager capture passes, every computed tensor compared;
- per-leaf torch.compile (each leaf module compiled on its own) passes;
- an injected defect (a copy whose mid-network weight has 2 rows scaled by 1.01, run as
  the compiled side) fails with its first divergence at that module's output, cause local.
Every check also counts the ops judged by no model and no deliberate rule.

PARITY_ZOO picks the entries: unset or "ci" runs zoo.CI_SUBSET (ctest zoo_torch_current),
"all" every entry, or a comma-separated list of names. PARITY_ZOO_TABLE names a file the
Markdown table of the run is written to (the README's); it is printed on stdout too.

    PARITY_ZOO=all PARITY_ZOO_TABLE=zoo.md PARITYDIFF=build/paritydiff \
        $(bash scripts/setup-venv.sh scripts/requirements-torch.txt) tests/torch/test_zoo.py
"""
import os
import shutil
import sys
import time
import unittest

from capture_case import CaptureCase, TORCH2  # noqa: E402 (puts formats/ on sys.path)
import parity_torch as pt  # noqa: E402
import zoo  # noqa: E402

ROWS = {}


def selected():
    want = os.environ.get("PARITY_ZOO", "ci")
    if want == "ci":
        return list(zoo.CI_SUBSET)
    if want == "all":
        return list(zoo.ZOO)
    names = [n.strip() for n in want.split(",") if n.strip()]
    unknown = [n for n in names if n not in zoo.ZOO]
    if unknown:
        sys.exit("PARITY_ZOO: no zoo entry %s (entries: %s)" % (", ".join(unknown),
                                                                ", ".join(zoo.ZOO)))
    return names


NOTES = {}   # op -> why paritydiff judged it by no model (its model_note), for the failure


def unjudged(doc):
    """{op: tensors} of op tensors no model and no rule judged."""
    ops = {}
    for t in doc["tensors"]:
        if t.get("op") and t.get("judgement") is None and t.get("rule") is None \
                and t["status"] in ("pass", "fail"):
            ops[t["op"]] = ops.get(t["op"], 0) + 1
            NOTES.setdefault(t["op"], "%s: %s" % (t["name"], t.get("model_note")))
    return ops


def computed_ops(doc):
    return {t["op"] for t in doc["tensors"] if t.get("op")}


class Zoo(CaptureCase):
    """One test per zoo entry (added below): its three checks, in order, and its row."""

    def check(self, name):
        model, inputs, defect = zoo.zoo_model(name)
        row = ROWS.setdefault(name, {"ops": set(), "unjudged": {}, "verdicts": [],
                                     "capture_s": 0.0, "diff_s": 0.0})

        def timed_diff(e, c):
            t0 = time.monotonic()
            doc = self.diff(e, c)
            row["diff_s"] += time.monotonic() - t0
            row["ops"] |= computed_ops(doc)
            for op, n in unjudged(doc).items():
                row["unjudged"][op] = row["unjudged"].get(op, 0) + n
            return doc

        def timed_capture(fn, *args, **kw):
            t0 = time.monotonic()
            fn(*args, **kw)
            row["capture_s"] += time.monotonic() - t0

        eager, copied, comp, bad = (self.path(n) for n in ("e.h5", "copy.h5", "c.h5", "d.h5"))
        timed_capture(pt.capture_eager, model, inputs, eager)
        shutil.copyfile(eager, copied)
        doc = timed_diff(eager, copied)
        row["verdicts"].append("copy " + doc["verdict"])
        self.assert_pass(doc)
        outs = [t for t in doc["tensors"] if t["name"].startswith("/out")]
        self.assertTrue(outs and all(t.get("op") for t in outs),
                        "the model's outputs are computed tensors: %s" % [t["name"] for t in outs])

        if not TORCH2:
            return
        timed_capture(pt.capture_compiled, model, inputs, comp, compile_leaf=pt.torch_compile)
        doc = timed_diff(eager, comp)
        row["verdicts"].append("per-leaf " + doc["verdict"])
        self.assert_pass(doc)
        # the insides of a compiled leaf are missing compiled; the model's outputs are not
        for t in outs:
            self.assertEqual(self.tensor(doc, t["name"])["status"], "pass", doc["_text"])

        timed_capture(pt.capture_compiled, model, inputs, bad, compile_leaf=pt.torch_compile,
                      run_module=zoo.with_defect(model, defect))
        doc = timed_diff(eager, bad)
        where = pt._Recorder._join(defect, "out")
        first = doc["first_divergence"] or "none"
        row["verdicts"].append("defect %s at %s" % (doc["verdict"], first == where and
                                                     "its module" or first))
        self.assertEqual(doc["verdict"], "fail", doc["_text"])
        self.assertEqual(first, where, doc["_text"])
        self.assertEqual(self.tensor(doc, where)["cause"], "local", doc["_text"])


for _name in selected():
    setattr(Zoo, "test_" + _name, lambda self, n=_name: self.check(n))


def table():
    lines = ["| model | ops | ops without a model | verdicts | capture s | diff s |",
             "|---|---:|---|---|---:|---:|"]
    for name, r in ROWS.items():
        missing = ", ".join("%s (%d)" % kv for kv in sorted(r["unjudged"].items())) or "none"
        lines.append("| %s | %d | %s | %s | %.1f | %.1f |" % (
            name, len(r["ops"]), missing, "; ".join(r["verdicts"]), r["capture_s"],
            r["diff_s"]))
    return "\n".join(lines) + "\n"


class ZooOpsAllJudged(unittest.TestCase):
    """Run last (unittest orders classes by name): every op of every entry that ran was
    judged by a model or a rule."""

    def test_no_op_without_a_model(self):
        missing = {n: r["unjudged"] for n, r in ROWS.items() if r["unjudged"]}
        self.assertEqual(missing, {}, "ops judged by neither a model nor a rule:\n" +
                         "\n".join("%s %s" % kv for kv in sorted(NOTES.items())))


if __name__ == "__main__":
    prog = unittest.main(exit=False, verbosity=2)
    text = table()
    print(text)
    if os.environ.get("PARITY_ZOO_TABLE"):
        tmp = os.environ["PARITY_ZOO_TABLE"] + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.environ["PARITY_ZOO_TABLE"])
    sys.exit(0 if prog.result.wasSuccessful() else 1)
