"""Real PyTorch models through formats/parity_torch.py and paritydiff (issue 12).

Run by ctest with Debian's torch 1.13 (/usr/bin/python3) and with the pinned current torch
of scripts/setup-venv.sh; PARITYDIFF names the binary. Each check diffs real captures:
a capture against a byte copy of itself, eager against TorchScript (each leaf compiled on
its own), eager against torch.compile where torch >= 2, and an injected bug (a weight
slice scaled by 1e-3) that must be the first divergence, at the right tensor and slice,
with cause local.
"""
import copy
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "formats"))

import torch  # noqa: E402
import parity_torch as pt  # noqa: E402

PARITYDIFF = os.environ.get("PARITYDIFF", "paritydiff")
TORCH2 = int(torch.__version__.split(".")[0]) >= 2


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 128)
        self.act = torch.nn.GELU()
        self.norm = torch.nn.LayerNorm(128)
        self.fc2 = torch.nn.Linear(128, 64)
        self.act2 = torch.nn.GELU(approximate="tanh")
        self.soft = torch.nn.Softmax(dim=-1)

    def forward(self, x):
        return self.soft(self.act2(self.fc2(self.norm(self.act(self.fc1(x))))))


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.relu = torch.nn.ReLU()
        self.pool = torch.nn.MaxPool2d(2)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.flat = torch.nn.Flatten()
        self.drop = torch.nn.Dropout(0.1)
        self.fc = torch.nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        x = self.pool(self.relu(self.bn1(self.conv1(x))))
        x = torch.relu(self.conv2(x))          # a functional call: captured too
        return self.fc(self.drop(self.flat(x)))


class Encoder(torch.nn.Module):
    """Embedding + nn.TransformerEncoderLayer; batch_first=True takes torch's fused fast
    path under no_grad (_transformer_encoder_layer_fwd in 1.13, _native_multi_head_attention
    in 2.x), batch_first=False the op-by-op one."""

    def __init__(self, batch_first):
        super().__init__()
        self.emb = torch.nn.Embedding(100, 32)
        self.enc = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=batch_first)

    def forward(self, tokens):
        return self.enc(self.emb(tokens))


def make(kind):
    torch.manual_seed(0)
    if kind == "mlp":
        return MLP().eval(), (torch.randn(32, 64),)
    if kind.startswith("encoder"):
        bf = kind == "encoder_bf"
        return Encoder(bf).eval(), (torch.randint(0, 100, (2, 7) if bf else (7, 2)),)
    model = CNN().eval()
    with torch.no_grad():   # non-trivial running statistics
        model.bn1.running_mean.uniform_(-0.5, 0.5)
        model.bn1.running_var.uniform_(0.5, 1.5)
    return model, (torch.randn(2, 3, 16, 16),)


class RealModels(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="parity_torch_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def diff(self, eager, compiled, *opts):
        report = self.path("r.json")
        if os.path.exists(report):
            os.remove(report)
        p = subprocess.run([PARITYDIFF, *opts, "--json", report, eager, compiled],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=600)
        self.assertIn(p.returncode, (0, 1), p.stderr + p.stdout)
        with open(report) as f:
            doc = json.load(f)
        doc["_text"], doc["_stderr"], doc["_code"] = p.stdout, p.stderr, p.returncode
        return doc

    def tensor(self, doc, name):
        for t in doc["tensors"]:
            if t["name"] == name:
                return t
        self.fail("no tensor %s in the report" % name)

    def assert_pass(self, doc):
        self.assertEqual(doc["_code"], 0, doc["_text"])
        self.assertEqual(doc["verdict"], "pass", doc["_text"])
        self.assertGreater(doc["summary"]["pass"], 0)

    def eager(self, kind):
        model, args = make(kind)
        path = self.path("%s_eager.h5" % kind)
        pt.capture_eager(model, args, path, model=kind, workload="test")
        return model, args, path

    def test_copy_of_itself_passes(self):
        want = {"mlp": {"linear", "gelu", "layer_norm", "softmax"},
                "cnn": {"conv2d", "batch_norm", "relu", "linear", "reshape"},
                "encoder": {"embedding", "linear", "layer_norm", "relu", "add"} |
                           ({"scaled_dot_product_attention"} if TORCH2 else {"softmax", "bmm"}),
                "encoder_bf": {"linear", "layer_norm"} if TORCH2 else set()}
        for kind in ("mlp", "cnn", "encoder", "encoder_bf"):
            with self.subTest(kind=kind):
                _, _, path = self.eager(kind)
                copy_path = self.path("%s_copy.h5" % kind)
                shutil.copyfile(path, copy_path)
                doc = self.diff(path, copy_path)
                self.assert_pass(doc)
                # the only warning allowed names the ops the registry has no model for
                other = [w for w in doc["warnings"] if not w.startswith("no model for")]
                self.assertEqual(other, [], doc["_text"])
                for w in doc["warnings"]:
                    print("%s (torch %s): %s" % (kind, torch.__version__, w))
                # the registry's models judge what they know, by the model
                judged = {t["judgement"]["model"] for t in doc["tensors"] if t["judgement"]}
                self.assertTrue(want[kind] <= judged, "judged by a model: %s" % sorted(judged))

    def test_every_dispatched_aten_op_maps_to_a_registry_op(self):
        """Every aten overload the models dispatch is judged by a named registry op (its
        judgement names the model), except the known gaps, which must be exactly these:
        a new gap fails here, and so does a closed one left on the list."""
        known_gaps = {"aten._transformer_encoder_layer_fwd.default",   # 1.13, batch_first
                      "aten._native_multi_head_attention.default"}     # 2.x, batch_first
        seen, gaps = {}, set()
        for kind in ("mlp", "cnn", "encoder", "encoder_bf"):
            _, _, path = self.eager(kind)
            doc = self.diff(path, path)
            for t in doc["tensors"]:
                if not t["op"]:
                    continue
                model = t["judgement"]["model"] if t["judgement"] else None
                seen.setdefault(t["op"], set()).add(model)
                if model is None:
                    gaps.add(t["op"])
        for op, models in sorted(seen.items()):
            print("torch %s: %s -> %s" % (torch.__version__, op, sorted(map(str, models))))
        present = {g for g in known_gaps if g in seen}
        self.assertEqual(gaps, present, "ops without a model")
        self.assertIn("aten.embedding.default", seen)
        for op, models in seen.items():
            if op not in known_gaps:
                self.assertEqual(len(models), 1, "%s judged by %s" % (op, models))

    def test_inputs_name_tensors_renamed_after_they_were_consumed(self):
        """A parent consumes a child's output, then returns it: the output is renamed /out
        after the consumer named it; the consumer's inputs must follow the rename."""
        class Reuse(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(8, 8)

            def forward(self, x):
                y = self.fc(x)
                self.side = torch.relu(y)
                return y
        torch.manual_seed(0)
        path = self.path("reuse.h5")
        pt.capture_eager(Reuse().eval(), (torch.randn(2, 8),), path)
        doc = self.diff(path, path)
        self.assert_pass(doc)
        self.assertEqual(doc["warnings"], [], doc["_text"])
        self.assertEqual(self.tensor(doc, "/0.relu")["judgement"]["model"], "relu")

    def check_compiled(self, kind, compile_leaf, compiler):
        model, args, eager = self.eager(kind)
        compiled = self.path("%s_%s.h5" % (kind, compiler))
        pt.capture_compiled(model, args, compiled, compile_leaf=compile_leaf, compiler=compiler,
                            model=kind, workload="test")
        doc = self.diff(eager, compiled)
        self.assert_pass(doc)
        # module outputs line up by name: every one is compared, none only in compiled
        self.assertEqual(doc["summary"]["missing_in_eager"], 0, doc["_text"])
        self.assertEqual(self.tensor(doc, "/out")["status"], "pass")
        return doc

    def test_torchscript_freeze_per_module_passes(self):
        for kind in ("mlp", "cnn"):
            with self.subTest(kind=kind):
                self.check_compiled(kind, pt.torchscript_freeze, "torchscript")

    def test_torchscript_trace_per_module_passes(self):
        for kind in ("cnn", "encoder", "encoder_bf"):
            with self.subTest(kind=kind):
                self.check_compiled(kind, pt.torchscript_trace, "torchscript-trace")

    def test_mkldnn_and_channels_last_per_module_pass(self):
        for kind in ("mlp", "cnn"):
            for name, fn in (("mkldnn", pt.mkldnn), ("channels_last", pt.channels_last)):
                with self.subTest(kind=kind, compiler=name):
                    self.check_compiled(kind, fn, name)

    def test_whole_model_keeps_only_the_output_and_passes(self):
        for kind in ("mlp", "cnn"):
            with self.subTest(kind=kind):
                model, args, eager = self.eager(kind)
                compiled = self.path("%s_whole.h5" % kind)
                pt.capture_compiled(model, args, compiled,
                                    whole_model=pt.whole(pt.torchscript_freeze))
                doc = self.diff(eager, compiled)
                self.assert_pass(doc)
                self.assertEqual(self.tensor(doc, "/out")["status"], "pass")
                self.assertEqual(self.tensor(doc, "/fc1/out" if kind == "mlp" else "/conv1/out")
                                 ["status"], "missing_in_compiled")

    @unittest.skipUnless(TORCH2, "torch.compile needs torch >= 2")
    def test_torch_compile_per_module_passes(self):
        doc = self.check_compiled("mlp", pt.torch_compile, "inductor")
        # torch._dynamo's telemetry, side by side in the report (never compared)
        tel = doc["telemetry"]["compiled"]
        self.assertGreater(tel["compile_time_s"], 0.0, tel)
        self.assertEqual(tel["graph_breaks"], 0, tel)
        self.assertIn("recompiles", tel)

    def test_injected_weight_bug_is_first_divergence_local(self):
        model, args, eager = self.eager("cnn")
        buggy = copy.deepcopy(model)
        with torch.no_grad():
            buggy.conv2.weight[4:6] *= 1e-3      # output channels 4 and 5 of conv2
        compiled = self.path("cnn_bug.h5")
        pt.capture_compiled(model, args, compiled, compile_leaf=pt.torchscript_freeze,
                            run_module=buggy, compiler="buggy")
        doc = self.diff(eager, compiled)
        self.assertEqual(doc["_code"], 1, doc["_text"])
        first = doc["first_divergence"]
        self.assertEqual(first, "/conv2/out", doc["_text"])
        t = self.tensor(doc, first)
        self.assertEqual(t["status"], "fail")
        self.assertEqual(t["cause"], "local", doc["_text"])
        self.assertEqual(t["affected_slice"][1], [4, 6], t["affected_slice"])
        self.assertEqual(self.tensor(doc, "/conv1/out")["status"], "pass")
        # the files given the wrong way round: the compiled bug would read as eager_worse,
        # so the sides the files declare must be said
        doc = self.diff(compiled, eager)
        self.assertTrue(any("arguments look swapped" in w for w in doc["warnings"]),
                        doc["warnings"])

    def test_metadata_that_misdescribes_the_call_is_said(self):
        """A tanh GELU captured without its 'approximate': eager and compiled break the erf
        GELU's bound alike, which the report calls a metadata problem, not the kernel."""
        import h5py
        model, args, eager = self.eager("mlp")
        compiled = self.path("mlp_ts.h5")

        def leaf(module, leaf_args):
            """A tanh GELU written out (another rounding than torch's kernel): both sides
            are right for tanh, so where they differ it is by rounding only."""
            if isinstance(module, torch.nn.GELU) and module.approximate == "tanh":
                c = math.sqrt(2.0 / math.pi)
                return lambda x: 0.5 * x * (1.0 + torch.tanh(c * (x + 0.044715 * x * x * x)))
            return pt.torchscript_freeze(module, leaf_args)
        pt.capture_compiled(model, args, compiled, compile_leaf=leaf)
        self.assert_pass(self.diff(eager, compiled))   # with the metadata intact
        for path in (eager, compiled):
            with h5py.File(path, "r+") as f:
                if "approximate" in f["/act2/out"].attrs:
                    del f["/act2/out"].attrs["approximate"]
        doc = self.diff(eager, compiled)
        t = self.tensor(doc, "/act2/out")
        self.assertEqual(t["status"], "fail", doc["_text"])
        self.assertTrue(any("metadata probably does not describe what ran" in w and
                            "'approximate'" in w for w in t["warnings"]), t["warnings"])
        self.assertNotIn("its own kernel", doc["_text"].split("\n")[1])

    def test_mlp_bugs_are_local_and_echoes_propagated(self):
        """Every MLP op has a model, so a bug is local and what follows it propagated."""
        model, args, eager = self.eager("mlp")
        buggy = copy.deepcopy(model)
        with torch.no_grad():
            buggy.fc1.weight[10:20] *= 1e-3      # output features 10..19 of fc1
        compiled = self.path("mlp_bug.h5")
        pt.capture_compiled(model, args, compiled, compile_leaf=pt.torchscript_freeze,
                            run_module=buggy, compiler="buggy")
        doc = self.diff(eager, compiled)
        self.assertEqual(doc["_code"], 1, doc["_text"])
        self.assertEqual(doc["first_divergence"], "/fc1/out", doc["_text"])
        t = self.tensor(doc, "/fc1/out")
        self.assertEqual((t["cause"], t["affected_slice"][1]), ("local", [10, 20]), t)
        for name in ("/act/out", "/norm/out", "/fc2/out", "/act2/out", "/out"):
            self.assertEqual(self.tensor(doc, name)["cause"], "propagated", name)

        # a zeroed tail of one output: the compiled GELU drops the last 8 features
        class ZeroTail(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                y = self.inner(x).clone()
                y[:, -8:] = 0
                return y
        buggy = copy.deepcopy(model)
        buggy.act = ZeroTail(buggy.act)
        compiled = self.path("mlp_tail.h5")
        pt.capture_compiled(model, args, compiled, compile_leaf=pt.torchscript_trace,
                            run_module=buggy, compiler="buggy")
        doc = self.diff(eager, compiled)
        self.assertEqual(doc["_code"], 1, doc["_text"])
        self.assertEqual(doc["first_divergence"], "/act/out", doc["_text"])
        t = self.tensor(doc, "/act/out")
        self.assertEqual((t["cause"], t["affected_slice"][1]), ("local", [120, 128]), t)
        self.assertEqual(self.tensor(doc, "/fc1/out")["status"], "pass")
        for name in ("/norm/out", "/fc2/out", "/out"):
            self.assertEqual(self.tensor(doc, name)["cause"], "propagated", name)

    @unittest.skipUnless(TORCH2, "torch 1.13's CPU autocast raises for Linear -> GELU -> "
                                 "LayerNorm (expected scalar type BFloat16 but found Float)")
    def test_bf16_autocast_on_both_sides_passes(self):
        for kind in ("mlp", "cnn", "encoder"):
            with self.subTest(kind=kind):
                model, args = make(kind)
                auto = Autocast(model)
                eager = self.path("%s_ac_eager.h5" % kind)
                pt.capture_eager(auto, args, eager)
                copy_path = self.path("%s_ac_copy.h5" % kind)
                shutil.copyfile(eager, copy_path)
                doc = self.diff(eager, copy_path)
                self.assert_pass(doc)
                dtypes = {t["dtype"] for t in doc["tensors"]}
                self.assertIn("bfloat16", dtypes, "autocast ran in bf16")
                judged = {t["judgement"]["model"] for t in doc["tensors"] if t["judgement"]}
                self.assertIn("cast", judged)
                if kind == "mlp":
                    compiled = self.path("mlp_ac_compiled.h5")
                    pt.capture_compiled(auto, args, compiled, compile_leaf=pt.torch_compile)
                    self.assert_pass(self.diff(eager, compiled))

    @unittest.skipUnless(TORCH2, "torch 1.13's CPU autocast raises for Linear -> GELU -> LayerNorm")
    def test_bf16_autocast_against_float32_eager_is_judged_by_its_contract(self):
        """float32 eager against bf16 autocast per module: statistics in bf16 and the dot
        products judged by the declared compute_dtype (the compiled side says it)."""
        contract = {torch.nn.Linear: {"compute_dtype": "bfloat16"},
                    torch.nn.Conv2d: {"compute_dtype": "bfloat16"}}
        for kind in ("mlp", "cnn"):
            with self.subTest(kind=kind):
                model, args, eager = self.eager(kind)
                compiled = self.path("%s_ac_vs_f32.h5" % kind)
                pt.capture_compiled(Autocast(model), args, compiled, compile_leaf=pt.torch_compile,
                                    contract=contract)
                doc = self.diff(eager, compiled, "--map-prefix", "/inner=/")
                mixed = [t for t in doc["tensors"] if t["compiled_dtype"] == "bfloat16"]
                self.assertTrue(mixed, doc["_text"])
                for t in mixed:
                    self.assertEqual(t["dtype"], "float32")
                    self.assertIsNotNone(t["max_abs_err"], t["name"])   # statistics
                    self.assertTrue(any("dtypes differ" in w for w in t["warnings"]), t["name"])
                dots = [t for t in mixed if t["judgement"] and
                        t["judgement"]["model"] in ("linear", "conv2d")]
                self.assertTrue(dots)
                for t in dots:
                    self.assertEqual(t["status"], "pass", t["name"])
                    self.assertTrue(t["judgement"]["local_check"], t["name"])
                if kind == "mlp":   # every op of the MLP has a model: the whole diff passes
                    self.assert_pass(doc)
                # without the contract the dot products break the float32 bound
                plain = self.path("%s_ac_plain.h5" % kind)
                pt.capture_compiled(Autocast(model), args, plain, compile_leaf=pt.torch_compile)
                doc = self.diff(eager, plain, "--map-prefix", "/inner=/")
                self.assertEqual(doc["_code"], 1, doc["_text"])


class Autocast(torch.nn.Module):
    """The model under CPU bf16 autocast."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, *args):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.inner(*args)


if __name__ == "__main__":
    unittest.main(verbosity=2)
