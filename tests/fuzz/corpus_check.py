"""corpus_check.py - what every stored-findings test (test_corpus_*.py) asks of a repro:
paritydiff fails the stored pair, its first divergence /out with a local cause."""
import os
import subprocess


def assert_fails_at_out(test, paritydiff, repro):
    p = subprocess.run([paritydiff, os.path.join(repro, "eager.h5"),
                        os.path.join(repro, "compiled.h5")],
                       capture_output=True, text=True, timeout=120)
    test.assertEqual(p.returncode, 1, p.stdout + p.stderr)
    test.assertIn("first divergence: /out", p.stdout)
    test.assertIn("cause: local", p.stdout)
