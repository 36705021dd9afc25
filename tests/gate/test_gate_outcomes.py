"""Outcome parity of paritydiff gate (diff/GATE.md, "Outcome parity") on captures written
with h5py: each rule (argmax, topk:K, threshold:T, tokens) counts decisions and agreements,
and where the sides differ the MPFR reference of the tensor's op, recomputed from eager's
inputs, sides with the side that is right, whichever it is; without an op the referee is
unknown and a note says why; a rule that is not one is a warning of the run, not a crash.

argv: PARITYDIFF."""
import json, math, os, subprocess, sys, tempfile, unittest
import h5py
import numpy as np

PARITYDIFF = sys.argv[1]


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def write(path, tensors, side, root=None):
    with h5py.File(path, "w") as f:
        for k, v in (root or {}).items():
            f.attrs[k] = v
        f.attrs["parity_format"] = 1
        f.attrs["side"] = side
        f.attrs["workload"] = "w"
        f.attrs["shape_bucket"] = "b"
        for name, (data, attrs) in tensors.items():
            d = f.create_dataset(name, data=data)
            for k, v in attrs.items():
                d.attrs[k] = v


class Suite(unittest.TestCase):
    """A suite of h5py-made pairs in a temporary folder, and a gate run over it."""
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.suite = os.path.join(self.tmp.name, "suite")

    def tearDown(self):
        self.tmp.cleanup()

    def pair(self, name, eager, compiled, compiled_root=None):
        d = os.path.join(self.suite, name)
        os.makedirs(d)
        write(os.path.join(d, "eager.h5"), eager, "eager")
        write(os.path.join(d, "compiled.h5"), compiled, "compiled", compiled_root)

    def gate(self, *args, codes=(0, 1)):
        out = os.path.join(self.tmp.name, "g.json")
        p = subprocess.run([PARITYDIFF, "gate", "-q", "--json", out, *args, self.suite],
                           capture_output=True, text=True, timeout=120)
        self.assertIn(p.returncode, codes, p.stderr)
        with open(out) as f:
            doc = json.load(f)
        return {p["id"]: p for p in doc["pairs"]}, doc



class Outcomes(Suite):
    def test_the_reference_sides_with_whichever_side_is_right(self):
        rng = np.random.default_rng(5)
        x = rng.standard_normal((6, 10)).astype(np.float32)
        right = softmax(x.astype(np.float64)).astype(np.float32)
        wrong = right.copy()
        wrong[2] = wrong[2][::-1]                    # row 2's argmax moves
        attrs = {"op": "softmax", "inputs": ["/x"], "outcome": "argmax"}
        # eager wrong, compiled right: the reference sides with compiled
        self.pair("eager_wrong", {"/x": (x, {}), "/p": (wrong, attrs)},
                  {"/x": (x, {}), "/p": (right, attrs)})
        # compiled wrong: with eager
        self.pair("compiled_wrong", {"/x": (x, {}), "/p": (right, attrs)},
                  {"/x": (x, {}), "/p": (wrong, attrs)})
        # no op: nobody to ask
        plain = {"outcome": "argmax"}
        self.pair("no_op", {"/p": (right, plain)}, {"/p": (wrong, plain)})
        pairs, doc = self.gate()
        o = pairs["eager_wrong"]["outcomes"][0]
        self.assertEqual((o["decisions"], o["agree"], o["ref_eager"], o["ref_compiled"]), (6, 5, 0, 1))
        o = pairs["compiled_wrong"]["outcomes"][0]
        self.assertEqual((o["decisions"], o["agree"], o["ref_eager"], o["ref_compiled"]), (6, 5, 1, 0))
        o = pairs["no_op"]["outcomes"][0]
        self.assertEqual((o["ref_unknown"], o["ref_eager"] + o["ref_compiled"]), (1, 0))
        self.assertIn("no reference", o["note"])
        s = doc["slices"][0]
        self.assertAlmostEqual(s["outcome_agreement"], 15 / 18)
        self.assertEqual(s["outcomes"]["ref_unknown"], 1)

    def test_topk_threshold_and_tokens(self):
        a = np.array([[0.1, 0.9, 0.5, 0.3], [0.4, 0.2, 0.8, 0.6]], np.float32)
        b = a.copy()
        b[1] = [0.4, 0.2, 0.55, 0.6]                 # top-2 of row 1: {2,3} stays {2,3}
        c = a.copy()
        c[0] = [0.1, 0.9, 0.2, 0.3]                  # top-2 of row 0: {1,2} -> {1,3}
        self.pair("topk_same", {"/s": (a, {"outcome": "topk:2"})}, {"/s": (b, {"outcome": "topk:2"})})
        self.pair("topk_diff", {"/s": (a, {"outcome": "topk:2"})}, {"/s": (c, {"outcome": "topk:2"})})
        self.pair("threshold", {"/s": (a, {"outcome": "threshold:0.5"})},
                  {"/s": (b, {"outcome": "threshold:0.5"})})   # 0.8 -> 0.55 stays above
        t = np.array([[3, 1, 4, 1, 5]], np.int64)
        u = np.array([[3, 1, 4, 2, 5]], np.int64)
        self.pair("tokens", {"/t": (t, {"outcome": "tokens"})}, {"/t": (u, {"outcome": "tokens"})})
        self.pair("bogus", {"/s": (a, {"outcome": "top3"})}, {"/s": (a, {"outcome": "top3"})})
        pairs, doc = self.gate()
        count = lambda p: (p["outcomes"][0]["decisions"], p["outcomes"][0]["agree"])
        self.assertEqual(count(pairs["topk_same"]), (2, 2))
        self.assertEqual(count(pairs["topk_diff"]), (2, 1))
        self.assertEqual(count(pairs["threshold"]), (8, 8))
        self.assertEqual(count(pairs["tokens"]), (5, 4))
        self.assertIn("none of argmax", pairs["bogus"]["outcomes"][0]["error"])
        self.assertTrue(any("bogus: outcome of /s not decided" in w for w in doc["warnings"]))


class Builds(Suite):
    def test_a_slice_mixing_compiled_builds_is_named(self):
        a = np.ones((2, 3), np.float32)
        self.pair("one", {"/a": (a, {})}, {"/a": (a, {})}, {"config_hash": "aaaa", "compiler_version": "2.5"})
        self.pair("two", {"/a": (a, {})}, {"/a": (a, {})}, {"config_hash": "bbbb", "compiler_version": "2.5"})
        pairs, doc = self.gate()
        s = doc["slices"][0]
        self.assertEqual(s["builds_differ"], {"config_hash": ["aaaa", "bbbb"]})
        self.assertTrue(any("differ in config_hash" in w for w in doc["warnings"]), doc["warnings"])


class JudgingOptions(Suite):
    def test_map_prefix_and_tolerances_reach_every_pair(self):
        rng = np.random.default_rng(7)
        x = rng.standard_normal((4, 6)).astype(np.float32)
        p = softmax(x.astype(np.float64)).astype(np.float32)
        attrs = {"op": "softmax", "inputs": ["/x"], "outcome": "argmax"}
        wrapped = {"op": "softmax", "inputs": ["/_orig_mod/x"], "outcome": "argmax"}
        # torch.compile's whole-model wrapper: the compiled names sit under /_orig_mod
        self.pair("wrapped", {"/x": (x, {}), "/p": (p, attrs)},
                  {"/_orig_mod/x": (x, {}), "/_orig_mod/p": (p, wrapped)})
        pairs, _ = self.gate(codes=(2,))
        self.assertEqual(pairs["wrapped"]["status"], "error")      # nothing in common
        pairs, doc = self.gate("--map-prefix", "/_orig_mod=/")
        self.assertEqual(pairs["wrapped"]["status"], "pass")
        self.assertEqual(pairs["wrapped"]["outcomes"][0]["decisions"], 4)
        # a plain tensor 1e-3 off fails the default tolerance; --atol lets it pass
        a = np.ones((3, 3), np.float32)
        self.pair("plain", {"/a": (a, {})}, {"/a": (a + np.float32(1e-3), {})})
        pairs, _ = self.gate("--map-prefix", "/_orig_mod=/")
        self.assertEqual(pairs["plain"]["status"], "fail")
        pairs, _ = self.gate("--map-prefix", "/_orig_mod=/", "--atol", "0.01")
        self.assertEqual(pairs["plain"]["status"], "pass")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
