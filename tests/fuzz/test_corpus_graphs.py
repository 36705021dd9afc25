"""The graph-campaign findings in XLA (JAX), ONNX Runtime and OpenVINO (README, "10-minute
graph campaigns per worker and family"), stored as minimized graph repros under
corpus/<compiler>/graph-repros/ (an origin note, no signature file). torch.compile's are
test_corpus_torch.py's.

Without the compilers: every stored pair is one that paritydiff fails at /out with a local
cause, its origin says how to replay it, and parityfuzz triage groups each folder into the
root causes the README names (XLA's two zeroed-input repros, a linear and an rms_norm, are
one cause: denormals-are-zero). With the pinned compilers' python
(scripts/requirements-compilers.txt): each folder replays against its worker as the same
divergences (parityfuzz graph replay --expect-divergent), so a finding that stops
reproducing in the pinned version fails here; another version skips that half and says why.
argv: PARITYDIFF PARITYFUZZ SOURCE_DIR [COMPILERS_PYTHON]
"""
import os
import subprocess
import sys
import unittest

from corpus_check import assert_fails_at_out

PARITYDIFF, PARITYFUZZ, SOURCE = sys.argv[1:4]
PYTHON = sys.argv[4] if len(sys.argv) > 4 else None

# compiler folder: (worker and its flags, module, version the repros were found in,
#                   repros, root causes)
COMPILERS = {
    "jax": ("jax_worker.py", "jax", "0.10.2", 5, 4),
    "onnxruntime": ("ort_worker.py", "onnxruntime", "1.31.1", 3, 3),
    "openvino": ("ov_worker.py --precision f32", "openvino", "2026.4.1", 3, 3),
}


def folder(compiler):
    return os.path.join(SOURCE, "corpus", compiler, "graph-repros")


def repros(compiler):
    d = folder(compiler)
    return sorted(os.path.join(d, n) for n in os.listdir(d)) if os.path.isdir(d) else []


def here(module, version):
    """None when the compiler's repros can be replayed here, else why not."""
    if not PYTHON:
        return "no compilers' python (scripts/run-tests.sh passes PARITY_COMPILERS_PYTHON)"
    p = subprocess.run([PYTHON, "-c", "import %s as m; print(m.__version__)" % module],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        return "%s does not import: %s" % (module, p.stderr.strip()[-200:])
    if not p.stdout.startswith(version):
        return "%s %s, the repros are %s's" % (module, p.stdout.strip(), version)
    return None


class GraphCorpora(unittest.TestCase):
    def test_paritydiff_fails_each_pair_at_out_with_a_local_cause(self):
        for compiler, (worker, _, _, count, _) in COMPILERS.items():
            found = repros(compiler)
            self.assertEqual(len(found), count, compiler)
            for r in found:
                with self.subTest(repro=r):
                    assert_fails_at_out(self, PARITYDIFF, r)
                    self.assertFalse(os.path.exists(os.path.join(r, "signature")), r)
                    with open(os.path.join(r, "origin")) as f:
                        note = f.read()
                    self.assertIn("replay: parityfuzz graph replay corpus/%s/graph-repros/"
                                  % compiler, note)
                    self.assertIn("fuzz/workers/%s" % worker, note)

    def test_triage_gives_the_readme_root_causes(self):
        for compiler, (_, _, _, count, causes) in COMPILERS.items():
            with self.subTest(compiler=compiler):
                p = subprocess.run([PARITYFUZZ, "triage", folder(compiler)],
                                   capture_output=True, text=True, timeout=300)
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                self.assertIn("%d repros, %d root causes (%d of graph cases)"
                              % (count, causes, causes), p.stdout)
        p = subprocess.run([PARITYFUZZ, "triage", folder("jax")], capture_output=True,
                           text=True, timeout=300)
        self.assertIn("* (*) float32: subnormal input zeroed; 2 repros", p.stdout)

    def test_each_still_diverges_in_the_pinned_compiler(self):
        for compiler, (worker, module, version, count, _) in COMPILERS.items():
            with self.subTest(compiler=compiler):
                why = here(module, version)
                if why:
                    self.skipTest(why)
                target = "cmd:%s %s" % (PYTHON, os.path.join(SOURCE, "fuzz", "workers", worker))
                p = subprocess.run([PARITYFUZZ, "graph", "replay", folder(compiler), "--target",
                                    target, "--expect-divergent"], capture_output=True,
                                   text=True, timeout=600)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                self.assertIn("0 fixed, %d still diverge" % count, p.stdout)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
