"""Steady-state telemetry of formats/parity_torch.py (steady_calls), as `paritydiff gate`
reads it (diff/GATE.md, "Telemetry"; FORMAT.md, "Root attributes").

Run by ctest with Debian's torch 1.13 (/usr/bin/python3: timing keys only, no dynamo) and
with the pinned current torch of scripts/setup-venv.sh (torch.compile: dynamo's keys too);
PARITYDIFF names the binary. Checks: GATE.md's latency buckets at their edges; a capture
made with steady_calls=N holds N calls, a histogram of N counts that agrees with its
percentiles and a positive steady time; steady_calls=0 writes none of the new keys;
under torch >= 2 a compiled model fed a second shape recompiles (and says why), a third
reuses the dynamic graph, and the outcome attribute lands on /out of both captures.
"""
import math
import unittest

from capture_case import CaptureCase, TORCH2  # noqa: E402 (puts formats/ on sys.path)
import h5py  # noqa: E402
import numpy  # noqa: E402
import torch  # noqa: E402
import parity_torch as pt  # noqa: E402

TIMING = {"calls", "steady_time_s", "latency_hist_ms", "latency_p50_ms", "latency_p99_ms"}
DYNAMO = {"fallback_calls", "recompile_reasons", "config_hash", "cache_hash"}


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(),
                               torch.nn.Linear(16, 4)).eval()


def attrs(path):
    with h5py.File(path, "r") as f:
        return {k: f.attrs[k] for k in f.attrs}


def quantile(hist, q):
    """GATE.md's estimate from counts (Prometheus histogram_quantile)."""
    rank, seen = q * hist.sum(), 0
    for i, c in enumerate(hist):
        if c and seen + c >= rank:
            if i == 255:
                return pt.latency_bucket_edge(254)
            lo = 0.0 if i == 0 else pt.latency_bucket_edge(i - 1)
            return lo + (pt.latency_bucket_edge(i) - lo) * (rank - seen) / c
        seen += c
    return None


class LatencyBuckets(unittest.TestCase):
    def test_edges(self):
        b = pt.latency_bucket
        self.assertEqual(b(0.0), 0)
        self.assertEqual(b(0.001), 1)                          # the first edge opens bucket 1
        self.assertEqual(b(math.nextafter(0.001, 0)), 0)       # just below it
        self.assertEqual(b(0.001 * 2 ** (1 / 8)), 2)           # the second edge opens bucket 2
        self.assertEqual(b(math.nextafter(0.001 * 2 ** (1 / 8), 0)), 1)
        self.assertEqual(b(0.001 * 2.0), 9)                    # 8 buckets per power of two
        self.assertEqual(b(1.0), 80)                            # [0.941, 1.024) ms
        self.assertEqual(b(pt.latency_bucket_edge(254)), 255)  # about 3.6e6 ms
        self.assertEqual(b(math.nextafter(pt.latency_bucket_edge(254), 0)), 254)
        self.assertEqual(b(1e300), 255)
        self.assertEqual(b(float("inf")), 255)
        self.assertAlmostEqual(pt.latency_bucket_edge(254), 3.6e6, delta=0.05e6)
        for i in range(1, 255):     # every edge, and just below it, lands where GATE.md says
            e = pt.latency_bucket_edge(i - 1)
            self.assertEqual(b(e), i)
            self.assertEqual(b(math.nextafter(e, 0)), i - 1)

    def test_histogram(self):
        h = pt.latency_histogram([0.0005, 0.001, 0.0011, 5.0, 1e9])
        self.assertEqual(h.dtype, numpy.int64)
        self.assertEqual(h.shape, (256,))
        self.assertEqual(list(h.nonzero()[0]), [0, 1, 2, pt.latency_bucket(5.0), 255])
        self.assertEqual(pt.latency_percentile([3.0, 1.0, 2.0, 4.0], 0.5), 2.0)  # nearest rank
        self.assertEqual(pt.latency_percentile(list(range(1, 101)), 0.99), 99.0)


class SteadyState(CaptureCase):
    def check_timing(self, a, n):
        self.assertEqual(int(a["calls"]), n)
        hist = numpy.asarray(a["latency_hist_ms"])
        self.assertEqual(hist.dtype, numpy.int64)
        self.assertEqual(hist.shape, (256,))
        self.assertEqual(int(hist.sum()), n)
        self.assertGreater(float(a["steady_time_s"]), 0.0)
        p50, p99 = float(a["latency_p50_ms"]), float(a["latency_p99_ms"])
        self.assertLessEqual(p50, p99)
        self.assertLessEqual(p99 / 1e3, float(a["steady_time_s"]))
        # p50 is a measured sample (nearest rank): its bucket holds it, and GATE.md's
        # estimate from the counts lies in that bucket too
        k = pt.latency_bucket(p50)
        self.assertGreater(int(hist[k]), 0)
        self.assertEqual(int(hist[:k].sum()) < n / 2 <= int(hist[:k + 1].sum()), True)
        est = quantile(hist, 0.5)
        self.assertEqual(pt.latency_bucket(est) in (k, k + 1), True)   # k + 1: its upper edge

    def test_eager_steady_calls(self):
        x = torch.randn(3, 8)
        pt.capture_eager(mlp(), (x,), self.path("e.h5"), steady_calls=7)
        a = attrs(self.path("e.h5"))
        self.check_timing(a, 7)
        self.assertFalse(DYNAMO & set(a), "eager writes timing keys only")
        self.assertNotIn("compile_time_s", a)

    def test_steady_calls_zero_writes_no_new_key(self):
        x = torch.randn(3, 8)
        pt.capture_eager(mlp(), (x,), self.path("e.h5"))
        compile_fn = pt.torch_compile if TORCH2 else pt.torchscript_trace
        pt.capture_compiled(mlp(), (x,), self.path("c.h5"), compile_leaf=compile_fn)
        for side in ("e.h5", "c.h5"):
            self.assertFalse((TIMING | DYNAMO) & set(attrs(self.path(side))), side)

    def test_compiled_steady_calls_and_outcome(self):
        x = torch.randn(3, 8)
        model = mlp()
        compile_fn = pt.torch_compile if TORCH2 else pt.torchscript_trace
        pt.capture_eager(model, (x,), self.path("e.h5"), steady_calls=5,
                         outcomes={"/out": "argmax"})
        pt.capture_compiled(model, (x,), self.path("c.h5"), compile_leaf=compile_fn,
                            steady_calls=5, outcomes={"/out": "argmax"})
        a = attrs(self.path("c.h5"))
        self.check_timing(a, 5)
        if TORCH2:
            self.assertEqual(int(a["fallback_calls"]), 0)
            self.assertEqual(int(a["recompiles"]), 0)   # each leaf compiled once, one shape
            self.assertEqual(str(a["recompile_reasons"]), "")
            self.assertRegex(str(a["config_hash"]), r"^[0-9a-f]{16}$")
            self.assertNotIn("cache_hash", a)
        else:   # torch 1.13: no dynamo, timing keys only
            self.assertFalse(DYNAMO & set(a))
        for side in ("e.h5", "c.h5"):
            with h5py.File(self.path(side), "r") as f:
                self.assertEqual(f["/out"].attrs["outcome"], "argmax")
        self.assert_pass(self.diff(self.path("e.h5"), self.path("c.h5")))
        with self.assertRaises(ValueError):   # a name the capture does not hold
            pt.capture_eager(model, (x,), self.path("bad.h5"), outcomes={"/nope": "argmax"})

    @unittest.skipUnless(TORCH2, "dynamo needs torch >= 2")
    def test_new_shapes_recompile_then_go_dynamic(self):
        """What torch.compile does with a second batch size: a size guard fails and dynamo
        recompiles once, with the length made symbolic (automatic_dynamic_shapes, on by
        default); a third size then reuses that dynamic graph. Without automatic dynamic
        shapes every new size is a recompile."""
        dynamic = bool(getattr(torch._dynamo.config, "automatic_dynamic_shapes", False))
        x = torch.randn(3, 8)
        steady = [(torch.randn(3, 8),), (torch.randn(5, 8),), (torch.randn(9, 8),)]
        pt.capture_compiled(mlp(), (x,), self.path("c.h5"), whole_model=pt.whole(pt.torch_compile),
                            steady_calls=9, steady_inputs=steady)
        a = attrs(self.path("c.h5"))
        self.check_timing(a, 9)
        self.assertEqual(int(a["recompiles"]), 1 if dynamic else 2)
        reasons = str(a["recompile_reasons"]).splitlines()
        self.assertEqual(len(reasons), int(a["recompiles"]))
        self.assertIn("size mismatch", reasons[0])
        self.assertEqual(int(a["fallback_calls"]), 0)
        self.assertRegex(str(a["config_hash"]), r"^[0-9a-f]{16}$")

    @unittest.skipUnless(TORCH2, "dynamo needs torch >= 2")
    def test_one_compiled_object_across_captures(self):
        """reset_dynamo=False with one compiled object (examples/real_suite.py): the second
        capture, at a new length, shows the recompile its warm-up caused."""
        model = mlp()
        torch._dynamo.reset()
        compiled = pt.torch_compile(model, None)

        def shared(work, args):
            return compiled
        for n, want in ((3, 0), (6, 1)):
            x = torch.randn(n, 8)
            path = self.path("c%d.h5" % n)
            pt.capture_compiled(model, (x,), path, whole_model=shared, reset_dynamo=False,
                                steady_calls=3)
            a = attrs(path)
            self.assertEqual(int(a["recompiles"]), want, a.get("recompile_reasons"))
            self.assertEqual(bool(str(a["recompile_reasons"])), want > 0)

    @unittest.skipUnless(TORCH2, "dynamo needs torch >= 2")
    def test_config_change_changes_the_hash(self):
        before = pt._config_hash()
        self.assertEqual(before, pt._config_hash())
        cfg = torch._inductor.config
        was = cfg.max_autotune
        cfg.max_autotune = not was
        try:
            self.assertNotEqual(before, pt._config_hash())
        finally:
            cfg.max_autotune = was
        self.assertEqual(before, pt._config_hash())


if __name__ == "__main__":
    unittest.main()
