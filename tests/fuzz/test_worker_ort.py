"""The ONNX Runtime worker (fuzz/workers/ort_worker.py, issue 17) in a short campaign: the
ops whose exported graphs ONNX Runtime fuses (GELU in both forms, layer_norm, rms_norm,
linear) against the same graphs unoptimized. It must judge at least 100 cases whose sides
are not bit-identical (a worker whose sides run one kernel would judge none), its summary
line must say what was judged, skipped and bit-identical, and any finding it stores must be
a repro paritydiff fails. With a python that lacks onnxruntime the worker says it is
unavailable and parityfuzz stops with exit 2: never a silent skip.
argv: PARITYFUZZ PARITYDIFF COMPILERS_PYTHON SOURCE_DIR.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

PARITYFUZZ, PARITYDIFF, PYTHON, SOURCE = sys.argv[1:5]
WORKER = os.path.join(SOURCE, "fuzz", "workers", "ort_worker.py")


class OrtWorker(unittest.TestCase):
    def test_campaign_judges_fused_kernels(self):
        with tempfile.TemporaryDirectory() as tmp:
            summary = os.path.join(tmp, "s.json")
            p = subprocess.run([PARITYFUZZ, "--target", "cmd:%s %s" % (PYTHON, WORKER),
                                "--ops", "gelu,layer_norm,rms_norm,linear", "--time", "40",
                                "--seed", "1", "--out", os.path.join(tmp, "repros"),
                                "--json", summary], capture_output=True, text=True, timeout=600)
            self.assertIn(p.returncode, (0, 1), p.stderr)
            with open(summary) as f:
                doc = json.load(f)
            self.assertGreaterEqual(doc["judged"], 100, doc)
            self.assertEqual(set(doc["cases_per_op"]), {"gelu", "layer_norm", "rms_norm", "linear"})
            last = p.stdout.strip().splitlines()[-1]
            m = re.match(r"parityfuzz: (\d+) execs in [\d.]+ s \((\d+) judged, (\d+) skipped, "
                         r"(\d+) bit-identical\)", last)
            self.assertTrue(m, last)
            self.assertEqual([int(x) for x in m.groups()],
                             [doc["execs"], doc["judged"], doc["skipped"], doc["bit_identical"]])
            # the worker's own account of compile (session) time against run time
            self.assertRegex(p.stderr, r"ort_worker: compiled: \d+ sessions built in [\d.]+ s")
            for f in doc["findings"]:
                if f["repro"] and f["class"] == "diverges":
                    q = subprocess.run([PARITYDIFF, "-q", os.path.join(f["repro"], "eager.h5"),
                                        os.path.join(f["repro"], "compiled.h5")])
                    self.assertEqual(q.returncode, 1, f)

    def test_unavailable_is_said(self):
        p = subprocess.run([PARITYFUZZ, "--target", "cmd:/usr/bin/python3 %s" % WORKER,
                            "--ops", "gelu", "--time", "5"], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 2)
        self.assertIn("ort_worker: unavailable: ", p.stderr)
        self.assertIn("worker exited before READY", p.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
