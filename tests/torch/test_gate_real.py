"""paritydiff gate on a suite made from real runs (examples/real_suite.py: a tiny
TransformerEncoder at several sequence lengths, eager and torch.compile through one compiled
object, steady-state latencies and dynamo telemetry as the capture helper measured them).

What must hold on real data: every pair is judged and passes (a correct torch.compile is no
false alarm), the argmax outcome agrees, the telemetry the helper wrote reaches the slices
(calls, merged latency histograms, the recompile dynamo really made with its reason), and
the traffic the lengths leave uncovered is named and fails the coverage rule. Needs torch >= 2 (the venv's python).
argv: PARITYDIFF (or $PARITYDIFF)."""
import json, os, subprocess, sys, tempfile, unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PARITYDIFF = sys.argv[1] if len(sys.argv) > 1 else os.environ["PARITYDIFF"]


class RealSuite(unittest.TestCase):
    def test_gate_on_real_torch_compile_runs(self):
        import torch
        if int(torch.__version__.split(".")[0]) < 2:
            self.skipTest("torch.compile needs torch >= 2")
        with tempfile.TemporaryDirectory() as tmp:
            suite = os.path.join(tmp, "suite")
            subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "examples", "real_suite.py"),
                            suite, "--lengths", "16,64,256", "--steady-calls", "20"], check=True,
                           stdout=subprocess.DEVNULL)
            out = os.path.join(tmp, "g.json")
            p = subprocess.run([PARITYDIFF, "gate", "--traffic", os.path.join(suite, "traffic.csv"),
                                "--json", out, suite], capture_output=True, text=True, timeout=600)
            with open(out) as f:
                doc = json.load(f)
            # Lengths 16, 64 and 256 leave the traffic file's 513-2048 bucket without
            # evidence: the default policy's coverage rule fails the gate there, and only there.
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertEqual(doc["verdict"], "fail")
            self.assertEqual([(a["metric"], a["labels"]["shape_bucket"]) for a in doc["alerts"]],
                             [("coverage", "513-2048")])
            self.assertEqual(len(doc["pairs"]), 3)
            for pair in doc["pairs"]:
                self.assertEqual(pair["status"], "pass", pair["id"])
                self.assertGreater(pair["tensors"]["compared"], 10)
                self.assertEqual(pair["identity"]["compiled"]["workload"], "encoder")
            self.assertEqual(sorted(s["labels"]["shape_bucket"] for s in doc["slices"]),
                             ["1-128", "129-512", "513-2048"])
            compiled_any = None
            for s in doc["slices"]:
                for side in ("eager", "compiled"):
                    t = s["telemetry"][side]
                    if s["pairs"]:
                        self.assertEqual(sum(t["latency_hist_ms"] or []), t["calls"], (s["labels"], side))
                        self.assertGreater(t["p99_ms"], 0)
                        self.assertGreaterEqual(t["p99_ms"], t["p50_ms"])
                if s["pairs"]:
                    self.assertEqual(s["outcome_agreement"], 1.0)
                    compiled_any = compiled_any or s["telemetry"]["compiled"]["compile_time_s"]
                    if s["telemetry"]["compiled"]["recompiles"]:
                        self.assertTrue(s["telemetry"]["compiled"]["recompile_reasons"])
            # the second length recompiles; a slice shows the mean per capture
            per_pair = {p["id"]: p["telemetry"]["compiled"].get("recompiles", 0) for p in doc["pairs"]}
            self.assertGreaterEqual(sum(per_pair.values()), 1, per_pair)
            for s in doc["slices"]:
                if s["pairs"]:
                    mean = sum(per_pair[i] for i in s["pair_ids"]) / s["pairs"]
                    self.assertAlmostEqual(s["telemetry"]["compiled"]["recompiles"], mean)
            # a length that reuses the dynamic graph compiles nothing, so writes no
            # compile_time_s; the first one compiled
            self.assertGreater(compiled_any, 0)
            self.assertIsNotNone(doc["p99_explanation"]["throughput_ratio"])
            self.assertAlmostEqual(doc["coverage"]["traffic_covered"], 0.85)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
