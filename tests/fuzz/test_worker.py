"""A compiler worker of fuzz/workers/ (issue 17) in a short campaign on the ops where its
compiled side does something else than its eager side:
  ort   ONNX Runtime: the exported graphs it fuses (GELU in both forms, layer_norm,
        rms_norm, linear), ORT_ENABLE_ALL against ORT_DISABLE_ALL
  jax   XLA: jax.jit against op by op, on the ops XLA fuses (GELU, the norms, softmax),
        with --values-per-shape 20 so that a jit compiles once for 20 cases
  torch torch.compile(dynamic=True) (Inductor) against eager, with the current torch's
        python, likewise 20 cases per shape
  ov    OpenVINO's CPU plugin at its default inference precision (bfloat16 here, so
        bfloat16 cases) against the builtin eager kernels, on the ops whose bfloat16
        results most often differ (dot products, softmax, the norms, reductions, GELU)
It must judge at least 100 cases whose sides are not bit-identical (a worker whose sides
run one kernel would judge none), its summary line must say what was judged, skipped and
bit-identical, the worker must account for its compile time (in its log at exit, and per
request through the protocol's OK compile_s=, which the summary's time line and JSON show),
its CPU time must reach parityfuzz's parent (campaigns count CPU hours with wait4),
and any finding it stores must be a repro paritydiff fails. With a python that lacks the package the worker says it
is unavailable and parityfuzz stops with exit 2: never a silent skip.
argv: WORKER PARITYFUZZ PARITYDIFF COMPILERS_PYTHON SOURCE_DIR.
"""
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import unittest

WHICH, PARITYFUZZ, PARITYDIFF, PYTHON, SOURCE = sys.argv[1:6]
WORKER = os.path.join(SOURCE, "fuzz", "workers", "%s_worker.py" % WHICH)
CONFIG = {
    "ort": {"ops": "gelu,layer_norm,rms_norm,linear", "args": ["--time", "40"],
            "compile_log": r"ort_worker: compiled: \d+ sessions built in [\d.]+ s"},
    "jax": {"ops": "gelu,layer_norm,rms_norm,softmax,log_softmax",
            "args": ["--time", "90", "--jobs", "2", "--values-per-shape", "20"],
            "compile_log": r"jax_worker: eager runs [\d.]+ s; jit: \d+ compiles in [\d.]+ s",
            "graphs": ["--time", "30"]},
    "torch": {"ops": "gelu,softmax,layer_norm,linear",
              "args": ["--time", "60", "--values-per-shape", "20"], "worker_args": " --mode compile-dynamic",
              "compile_log": r"torch_worker: \d+ cases: eager [\d.]+ s, compiled [\d.]+ s \(compile-dynamic\)",
              "graphs": ["--time", "60"],
              "unavailable": False},   # Debian's torch 1.13 is always there
    "ov": {"ops": "linear,matmul,softmax,layer_norm,rms_norm,sum,mean,gelu",
           "args": ["--time", "40", "--values-per-shape", "10"],
           "compile_log": r"ov_worker: \d+ compiles in [\d.]+ s, runs [\d.]+ s"},
}[WHICH]


def children_cpu_s():
    """User and system seconds of this process's reaped children (and theirs)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class Worker(unittest.TestCase):
    def test_campaign_judges_what_the_compiler_changed(self):
        with tempfile.TemporaryDirectory() as tmp:
            summary = os.path.join(tmp, "s.json")
            cpu0 = children_cpu_s()
            p = subprocess.run([PARITYFUZZ, "--target",
                                "cmd:%s %s%s" % (PYTHON, WORKER, CONFIG.get("worker_args", "")),
                                "--ops", CONFIG["ops"], *CONFIG["args"],
                                "--seed", "1", "--out", os.path.join(tmp, "repros"),
                                "--json", summary], capture_output=True, text=True, timeout=600)
            self.assertIn(p.returncode, (0, 1), p.stderr)
            with open(summary) as f:
                doc = json.load(f)
            self.assertGreaterEqual(doc["judged"], 100, doc)
            self.assertEqual(set(doc["cases_per_op"]), set(CONFIG["ops"].split(",")))
            last = p.stdout.strip().splitlines()[-1]
            m = re.match(r"parityfuzz: (\d+) execs in [\d.]+ s \((\d+) judged, (\d+) skipped, "
                         r"(\d+) bit-identical\)", last)
            self.assertTrue(m, last)
            self.assertEqual([int(x) for x in m.groups()],
                             [doc["execs"], doc["judged"], doc["skipped"], doc["bit_identical"]])
            # the worker's own account of compile time against run time, and the one it
            # sent request by request
            self.assertRegex(p.stderr, CONFIG["compile_log"])
            t = doc["time"]
            self.assertGreater(t["compiles"], 0, t)
            self.assertGreater(t["compiled_compile_s"], 0.0, t)
            self.assertLessEqual(t["compiled_compile_s"], t["compiled_s"], t)
            # every case reached the eager side; every judged or identical one, the compiled
            self.assertGreaterEqual(t["eager_runs"], doc["execs"], t)
            self.assertGreaterEqual(t["compiled_runs"], doc["judged"] + doc["bit_identical"], t)
            # the worker's CPU time reached parityfuzz's wait4, so a campaign's CPU hours
            # (scripts/campaigns.py) count it: a worker behind `sh -c` that took longer
            # than QUIT's grace to exit was killed and went to init, and only parityfuzz's
            # own time (0.12 - 0.16 of the time in the target) was counted
            cpu = children_cpu_s() - cpu0
            self.assertGreater(cpu, 0.3 * (t["eager_s"] + t["compiled_s"]), (cpu, t))
            self.assertRegex(p.stdout, r"parityfuzz: time in the target: eager [\d.]+ s, "
                             r"compiled [\d.]+ s \(compiling [\d.]+ s in %d runs, \d+%% of the "
                             r"compiled side\)" % t["compiles"])
            for f in doc["findings"]:
                if f["repro"] and f["class"] == "diverges":
                    q = subprocess.run([PARITYDIFF, "-q", os.path.join(f["repro"], "eager.h5"),
                                        os.path.join(f["repro"], "compiled.h5")])
                    self.assertEqual(q.returncode, 1, f)

    def test_graph_cases_reach_the_compiler(self):
        """parityfuzz graph through the worker: fused regions compiled as one graph (the
        torch and JAX workers so far), judged against the propagated reference."""
        if not CONFIG.get("graphs"):
            self.skipTest("%s_worker takes single ops only so far" % WHICH)
        with tempfile.TemporaryDirectory() as tmp:
            summary = os.path.join(tmp, "g.json")
            p = subprocess.run([PARITYFUZZ, "graph", "--target",
                                "cmd:%s %s%s" % (PYTHON, WORKER, CONFIG.get("worker_args", "")),
                                *CONFIG["graphs"], "--seed", "1",
                                "--out", os.path.join(tmp, "repros"), "--json", summary],
                               capture_output=True, text=True, timeout=600)
            self.assertIn(p.returncode, (0, 1), p.stderr)
            with open(summary) as f:
                doc = json.load(f)
            self.assertGreaterEqual(doc["judged"], 10, doc)
            self.assertEqual(doc["errors"], 0, p.stderr)
            self.assertIn("%s_worker" % WHICH, doc["target"])
            for c in doc["root_causes"]:
                q = subprocess.run([PARITYDIFF, "-q", os.path.join(c["repro"], "eager.h5"),
                                    os.path.join(c["repro"], "compiled.h5")])
                self.assertEqual(q.returncode, 1, c)

    def test_eager_builtin_judges_what_torch_shares(self):
        """torch_worker --eager builtin: parityfuzz's IEEE kernels run the eager side, the
        worker only the compiled one (its own log: no eager time), and bfloat16 linear,
        where torch's two sides call one oneDNN kernel and a campaign with torch's eager
        judges almost nothing, is judged case after case."""
        if WHICH != "torch":
            self.skipTest("--eager builtin is the torch worker's option (ov_worker always is)")
        with tempfile.TemporaryDirectory() as tmp:
            summary = os.path.join(tmp, "b.json")
            p = subprocess.run([PARITYFUZZ, "--target",
                                "cmd:%s %s --mode compile-dynamic --eager builtin" % (PYTHON, WORKER),
                                "--ops", "linear", "--dtypes", "bfloat16", "--time", "40",
                                "--values-per-shape", "20", "--seed", "1",
                                "--out", os.path.join(tmp, "repros"), "--json", summary],
                               capture_output=True, text=True, timeout=600)
            self.assertIn(p.returncode, (0, 1), p.stderr)
            with open(summary) as f:
                doc = json.load(f)
            self.assertIn("eager-builtin", p.stderr + doc["target"] + p.stdout)
            self.assertRegex(p.stderr, r"torch_worker: [1-9]\d* cases: eager 0\.00 s, compiled")
            self.assertGreaterEqual(doc["judged"], 20, doc)
            for f in doc["findings"]:
                if f["repro"] and f["class"] == "diverges":
                    q = subprocess.run([PARITYDIFF, "-q", os.path.join(f["repro"], "eager.h5"),
                                        os.path.join(f["repro"], "compiled.h5")])
                    self.assertEqual(q.returncode, 1, f)

    def test_unavailable_is_said(self):
        if not CONFIG.get("unavailable", True):
            self.skipTest("Debian's torch 1.13 is always installed: no python lacks torch here")
        p = subprocess.run([PARITYFUZZ, "--target", "cmd:/usr/bin/python3 %s" % WORKER,
                            "--ops", "gelu", "--time", "5"], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 2)
        self.assertIn("%s_worker: unavailable: " % WHICH, p.stderr)
        self.assertIn("worker exited before READY", p.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
