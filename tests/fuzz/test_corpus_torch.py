"""The findings in torch.compile (README, "torch.compile and XLA: every campaign run"),
stored as minimized repros under corpus/torch/repros/, and the fused-region findings of
parityfuzz graph under corpus/torch/graph-repros/ (no signature file: an origin note).

Without torch: every stored pair is one that paritydiff fails at /out with a local cause,
and its signature says how it was found and how to replay it. With the pinned current
torch's python (scripts/requirements-torch.txt): every repro replays against
fuzz/workers/torch_worker.py --mode compile-dynamic as the same divergence (parityfuzz
replay --expect-divergent), so a stored finding that stops reproducing in this torch
fails here. Replay needs the version the repros were found in (2.15); elsewhere that half
is skipped, and says why.
argv: PARITYDIFF PARITYFUZZ SOURCE_DIR [TORCH_PYTHON]
"""
import os
import subprocess
import sys
import unittest

from corpus_check import assert_fails_at_out

PARITYDIFF, PARITYFUZZ, SOURCE = sys.argv[1:4]
PYTHON = sys.argv[4] if len(sys.argv) > 4 else None
CORPUS = os.path.join(SOURCE, "corpus", "torch", "repros")
GRAPHS = os.path.join(SOURCE, "corpus", "torch", "graph-repros")   # parityfuzz graph's
WORKER = os.path.join(SOURCE, "fuzz", "workers", "torch_worker.py")
VERSION = "2.15."


def repros(corpus=CORPUS):
    return sorted(os.path.join(corpus, n) for n in os.listdir(corpus)) if os.path.isdir(corpus) else []


def torch_here():
    """None when the stored findings can be replayed here, else why not."""
    if not PYTHON:
        return "no current torch's python (scripts/run-tests.sh passes PARITY_VENV_PYTHON)"
    p = subprocess.run([PYTHON, "-c", "import torch; print(torch.__version__)"],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return "torch does not import: %s" % p.stderr.strip()[-200:]
    if not p.stdout.startswith(VERSION):
        return "torch %s, the repros are %sx's" % (p.stdout.strip(), VERSION)
    return None


class Corpus(unittest.TestCase):
    def test_there_are_repros(self):
        self.assertGreater(len(repros()), 0)

    def test_paritydiff_fails_each_pair_at_out_with_a_local_cause(self):
        for r in repros():
            with self.subTest(repro=r):
                assert_fails_at_out(self, PARITYDIFF, r)
                with open(os.path.join(r, "signature")) as f:
                    sig = f.read()
                self.assertIn("found by: ", sig)
                self.assertIn("replay: parityfuzz replay corpus/torch/repros/", sig)
                self.assertIn("fuzz/workers/torch_worker.py --mode compile-dynamic", sig)

    def test_each_repro_still_diverges_in_this_torch(self):
        why = torch_here()
        if why:
            self.skipTest(why)
        p = subprocess.run([PARITYFUZZ, "replay", CORPUS, "--target",
                            "cmd:%s %s --mode compile-dynamic" % (PYTHON, WORKER),
                            "--expect-divergent"], capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.count(": same: "), len(repros()), p.stdout)


class GraphCorpus(unittest.TestCase):
    """Fused-region findings (parityfuzz graph): the eager side is parityfuzz's builtin IEEE
    chain, so a defect torch's eager and compiled sides share shows here."""

    def test_there_are_graph_repros(self):
        self.assertGreater(len(repros(GRAPHS)), 0)

    def test_paritydiff_fails_each_pair_at_out_with_a_local_cause(self):
        for r in repros(GRAPHS):
            with self.subTest(repro=r):
                assert_fails_at_out(self, PARITYDIFF, r)
                self.assertFalse(os.path.exists(os.path.join(r, "signature")), r)
                with open(os.path.join(r, "origin")) as f:
                    note = f.read()
                self.assertIn("replay: parityfuzz graph replay corpus/torch/graph-repros/", note)

    def test_triage_gives_one_cause_per_repro(self):
        p = subprocess.run([PARITYFUZZ, "triage", GRAPHS], capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        n = len(repros(GRAPHS))
        self.assertIn("%d repros, %d root causes (%d of graph cases)" % (n, n, n), p.stdout)

    def test_each_graph_repro_still_diverges_in_this_torch(self):
        """Every graph repro diverges again, but one whose origin names a CPU flag this
        CPU lacks (`needs cpu flag: amx_bf16`: a defect in a kernel oneDNN picks only
        there), which is said and not held to it."""
        why = torch_here()
        if why:
            self.skipTest(why)
        with open("/proc/cpuinfo") as f:
            flags = set(f.read().split())
        expected, elsewhere = [], []
        for r in repros(GRAPHS):
            with open(os.path.join(r, "origin")) as f:
                needs = [line.split(":", 1)[1].split()[0] for line in f
                         if line.startswith("needs cpu flag:")]
            (expected if all(n in flags for n in needs) else elsewhere).append(r)
        for r in elsewhere:
            print("not expected to diverge on this CPU (its origin's cpu flag): %s" % r)
        p = subprocess.run([PARITYFUZZ, "graph", "replay", GRAPHS, "--target",
                            "cmd:%s %s --mode compile-dynamic" % (PYTHON, WORKER),
                            "--expect-divergent"], capture_output=True, text=True, timeout=600)
        self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
        self.assertGreater(len(expected), 0)
        for r in expected:
            self.assertIn("diverges %s: " % r, p.stdout, p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
