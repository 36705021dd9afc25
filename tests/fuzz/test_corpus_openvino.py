"""The findings in OpenVINO's CPU plugin (README, "OpenVINO 2026.4.1: 16 ten-minute
campaigns, 19 defects"), stored as minimized repros under
corpus/openvino/repros/<precision>/ (bf16: the plugin's default inference precision on
this machine; f32: --precision f32).

Without OpenVINO: every stored pair is one that paritydiff fails at /out with a local
cause, and its signature says how it was found and how to replay it. With the pinned
compilers' python (scripts/requirements-compilers.txt): every repro replays against the
worker as the same divergence (parityfuzz replay --expect-divergent), so a stored finding
that stops reproducing in this OpenVINO version fails here. Replay needs the version the
repros were found in (2026.4.1) and, for bf16, a CPU whose plugin computes in bfloat16;
elsewhere that half is skipped, and says why.
argv: PARITYDIFF PARITYFUZZ SOURCE_DIR [COMPILERS_PYTHON]
"""
import os
import subprocess
import sys
import unittest

from corpus_check import assert_fails_at_out

PARITYDIFF, PARITYFUZZ, SOURCE = sys.argv[1:4]
PYTHON = sys.argv[4] if len(sys.argv) > 4 else None
CORPUS = os.path.join(SOURCE, "corpus", "openvino", "repros")
WORKER = os.path.join(SOURCE, "fuzz", "workers", "ov_worker.py")
VERSION = "2026.4.1"
PRECISIONS = ("bf16", "f32")


def repros(precision):
    d = os.path.join(CORPUS, precision)
    return sorted(os.path.join(d, n) for n in os.listdir(d)) if os.path.isdir(d) else []


def openvino_here():
    """None when the stored findings can be replayed here, else why not."""
    if not PYTHON:
        return "no compilers' python (scripts/run-tests.sh passes PARITY_COMPILERS_PYTHON)"
    p = subprocess.run([PYTHON, "-c", "import openvino as ov; c = ov.Core(); print(ov.__version__); "
                        "print(' '.join(c.get_property('CPU', 'OPTIMIZATION_CAPABILITIES'))); "
                        "print(c.get_property('CPU', 'INFERENCE_PRECISION_HINT').get_type_name())"],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        return "openvino does not import: %s" % p.stderr.strip()[-200:]
    version, caps, default = p.stdout.split("\n")[:3]
    if not version.startswith(VERSION):
        return "openvino %s, the repros are %s's" % (version, VERSION)
    if default != "bf16":
        return "the CPU plugin's default precision here is %s, the bf16 repros need bf16" % default
    return None


class Corpus(unittest.TestCase):
    def test_there_are_repros(self):
        self.assertGreater(sum(len(repros(p)) for p in PRECISIONS), 0)

    def test_paritydiff_fails_each_pair_at_out_with_a_local_cause(self):
        for precision in PRECISIONS:
            for r in repros(precision):
                with self.subTest(repro=r):
                    assert_fails_at_out(self, PARITYDIFF, r)
                    with open(os.path.join(r, "signature")) as f:
                        sig = f.read()
                    self.assertIn("found by: ", sig)
                    self.assertIn("replay: parityfuzz replay corpus/openvino/repros/%s/" % precision,
                                  sig)
                    self.assertIn("fuzz/workers/ov_worker.py", sig)

    def test_each_repro_still_diverges_in_this_openvino(self):
        why = openvino_here()
        if why:
            self.skipTest(why)
        for precision in PRECISIONS:
            if not repros(precision):
                continue
            target = "cmd:%s %s --precision %s" % (PYTHON, WORKER, precision)
            p = subprocess.run([PARITYFUZZ, "replay", os.path.join(CORPUS, precision), "--target",
                                target, "--expect-divergent"],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith(CORPUS)]
            self.assertEqual(len(lines), len(repros(precision)), p.stdout)
            for ln in lines:
                self.assertIn(": same: ", ln)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
