"""clamp, hardtanh, pow, masked_fill and where on real PyTorch captures, through
formats/parity_torch.py and paritydiff (tolerance/op_clamp.c, op_pow.c, op_where.c).

Run by ctest with Debian's torch 1.13 (/usr/bin/python3) and with the pinned current torch
of scripts/setup-venv.sh; PARITYDIFF names the binary. A small model calls torch.clamp (both
bounds, min only), clamp_min and clamp_max, relu6 (hardtanh), x.pow(2), x ** 0.5, x.pow(3.0),
x ** -0.5, x.pow(1.5), masked_fill with a boolean mask (a scalar value, and a -inf fill
broadcast over rows), and torch.where over three tensors and with a Python number; in
float32 and bfloat16. Each check diffs real captures: a capture against a byte copy of
itself and eager against TorchScript (each leaf traced), and against torch.compile where
torch >= 2, must pass with every one of these ops judged by its own model
(judgement.model), the boolean masks read from the capture as bool operands; and a
compiled side that clamps to the wrong bound fails at that tensor, locally.
"""
import shutil
import unittest

from capture_case import CaptureCase, TORCH2  # noqa: E402 (puts formats/ on sys.path)
import torch  # noqa: E402
import parity_torch as pt  # noqa: E402

MODELS = {"clamp", "hardtanh", "pow", "masked_fill", "where"}


class Elementwise(torch.nn.Module):
    def __init__(self, lo=-0.5):
        super().__init__()
        self.lo = lo
        self.relu6 = torch.nn.ReLU6()

    def forward(self, x):
        a = torch.clamp(x, self.lo, 0.5)
        b = x.clamp_min(0.1) + torch.clamp(x, min=-0.1)   # clamp_min; clamp, one bound
        c = x.clamp_max(0.25)
        d = self.relu6(x * 4.0)                     # hardtanh(x, 0, 6)
        p2 = x.pow(2)
        p3 = x.pow(3.0)
        ax = x.abs() + 0.25
        ph = ax ** 0.5
        pr = ax ** -0.5
        pg = ax.pow(1.5)
        m = x > 0.3
        f = x.masked_fill(m, -1.0)
        rows = (x.sum(-1, keepdim=True) > 0)        # [N, 1]: broadcast over the row
        g = x.masked_fill(rows, float("-inf"))
        w = torch.where(m, x, p2)
        w0 = torch.where(m, x, 0.0)
        return a + b + c + d + p3 + ph + pr + pg + f + w + w0 + g.exp()


class ElementwiseTest(CaptureCase):
    def assert_pass_judged(self, doc):
        self.assertEqual(doc["_code"], 0, doc["_text"])
        self.assertEqual(doc["verdict"], "pass", doc["_text"])
        judged = {t["judgement"]["model"] for t in doc["tensors"] if t["judgement"]}
        self.assertTrue(MODELS <= judged, "judged by a model: %s" % sorted(judged))
        for t in doc["tensors"]:
            op = (t["op"] or "").split(".")[1] if (t["op"] or "").startswith("aten.") else t["op"]
            if op in ("clamp", "clamp_min", "clamp_max", "hardtanh", "pow", "masked_fill",
                      "where"):
                self.assertEqual(t["status"], "pass", t["name"])
                self.assertTrue(t["judgement"], "%s (%s) not judged by a model" %
                                (t["name"], t["op"]))
        return judged

    def inputs(self, dtype):
        torch.manual_seed(0)
        return (torch.randn(6, 16).to(dtype),)

    def test_copy_and_compiled_pass_with_every_op_judged(self):
        compilers = [("torchscript_trace", pt.torchscript_trace)]
        if TORCH2:
            compilers.append(("torch_compile", pt.torch_compile))
        for dtype in (torch.float32, torch.bfloat16):
            model, args = Elementwise().eval(), self.inputs(dtype)
            eager = self.path("e.h5")
            pt.capture_eager(model, args, eager)
            copy = self.path("e_copy.h5")
            shutil.copyfile(eager, copy)
            with self.subTest(dtype=str(dtype), against="copy"):
                doc = self.diff(eager, copy)
                self.assert_pass_judged(doc)
                ops = sorted({t["op"] for t in doc["tensors"] if t["op"] and t["judgement"] and
                              t["judgement"]["model"] in MODELS})
                print("torch %s %s: %s" % (torch.__version__, dtype, ops))
            for name, fn in compilers:
                with self.subTest(dtype=str(dtype), against=name):
                    compiled = self.path("c_%s.h5" % name)
                    pt.capture_compiled(model, args, compiled, compile_leaf=fn)
                    self.assert_pass_judged(self.diff(eager, compiled, "--map-prefix",
                                                      "/_orig_mod=/"))

    def test_boolean_mask_is_a_bool_operand(self):
        model, args = Elementwise().eval(), self.inputs(torch.float32)
        eager = self.path("e.h5")
        pt.capture_eager(model, args, eager)
        doc = self.diff(eager, eager)
        fills = [t for t in doc["tensors"] if t["judgement"] and
                 t["judgement"]["model"] == "masked_fill"]
        self.assertEqual(len(fills), 2, doc["_text"])
        wheres = [t for t in doc["tensors"] if t["judgement"] and
                  t["judgement"]["model"] == "where"]
        self.assertEqual(len(wheres), 2, doc["_text"])

    def test_wrong_clamp_bound_fails_locally(self):
        args = self.inputs(torch.float32)
        eager, compiled = self.path("e.h5"), self.path("c.h5")
        pt.capture_eager(Elementwise().eval(), args, eager)
        pt.capture_compiled(Elementwise().eval(), args, compiled,
                            run_module=Elementwise(lo=-0.25).eval())
        doc = self.diff(eager, compiled)
        self.assertEqual(doc["_code"], 1, doc["_text"])
        first = next(t for t in doc["tensors"] if t["name"] == doc["first_divergence"])
        self.assertEqual(first["status"], "fail", doc["_text"])
        self.assertEqual(first["judgement"]["model"], "clamp", doc["_text"])
        self.assertEqual(first["cause"], "local", doc["_text"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
