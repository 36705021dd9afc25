"""Averaging pools of a real CNN through formats/parity_torch.py and paritydiff.

Run by ctest with Debian's torch 1.13 (/usr/bin/python3) and with the pinned current torch
of scripts/setup-venv.sh, as tests/torch/test_real_models.py; PARITYDIFF names the binary.
The CNN has torch.nn.AvgPool2d with ceil_mode, padding, count_include_pad=False and
divisor_override, and nn.AdaptiveAvgPool2d((3, 2)) and ((1, 1)). Checked: a capture
against a copy of itself and against TorchScript, channels_last and (torch >= 2)
torch.compile passes with every pooling tensor judged by its registry model
(tolerance/op_avg_pool2d.c; torch dispatches the (1, 1) pool as mean.dim); a weight slice
scaled before a pool, and a pool that counts the padding it should not, are each the first
divergence, cause local.
"""
import copy
import shutil
import unittest

from capture_case import CaptureCase, TORCH2  # noqa: E402 (puts formats/ on sys.path)
import torch  # noqa: E402
import parity_torch as pt  # noqa: E402

# each pooling layer's output, and the aten op and registry model that judge it
POOLS = {
    "/pool1/out": ("aten.avg_pool2d.default", "avg_pool2d"),
    "/pool2/out": ("aten.avg_pool2d.default", "avg_pool2d"),
    "/pool3/out": ("aten.avg_pool2d.default", "avg_pool2d"),
    "/ada/out": ("aten._adaptive_avg_pool2d.default", "adaptive_avg_pool2d"),
    "/gap/out": ("aten.mean.dim", "mean"),
}


class PoolCNN(torch.nn.Module):
    """19x17 inputs, so the ceil_mode windows hang over the input's edge: pool1's last
    window has one row inside and one of padding, pool2's last column no padding at all
    (its divisor counts 1 column though count_include_pad is on)."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.relu = torch.nn.ReLU()
        self.pool1 = torch.nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True,
                                        count_include_pad=False)
        self.conv2 = torch.nn.Conv2d(8, 8, 3)
        self.pool2 = torch.nn.AvgPool2d(2, ceil_mode=True)
        self.pool3 = torch.nn.AvgPool2d(3, stride=1, padding=1, divisor_override=5)
        self.ada = torch.nn.AdaptiveAvgPool2d((3, 2))
        self.gap = torch.nn.AdaptiveAvgPool2d((1, 1))
        self.flat = torch.nn.Flatten()
        self.fc = torch.nn.Linear(8 + 8 * 3 * 2, 10)

    def forward(self, x):
        x = self.pool1(self.relu(self.conv1(x)))
        x = self.pool3(self.pool2(self.conv2(x)))
        return self.fc(torch.cat([self.flat(self.gap(x)), self.flat(self.ada(x))], 1))


def make():
    torch.manual_seed(0)
    return PoolCNN().eval(), (torch.randn(2, 3, 19, 17),)


class Pooling(CaptureCase):
    def eager(self):
        model, args = make()
        path = self.path("eager.h5")
        pt.capture_eager(model, args, path)
        return model, args, path

    def assert_pools_judged(self, doc):
        """The diff passes, with no warning, and every pool by its model."""
        self.assertEqual(doc["_code"], 0, doc["_text"])
        self.assertEqual(doc["verdict"], "pass", doc["_text"])
        self.assertEqual(doc["warnings"], [], doc["_text"])
        for name, (op, model) in POOLS.items():
            t = self.tensor(doc, name)
            print("torch %s: %s %s -> %s" % (torch.__version__, name, t["op"],
                                             t["judgement"] and t["judgement"]["model"]))
            self.assertEqual(t["status"], "pass", name)
            self.assertEqual(t["op"], op, name)
            self.assertEqual(t["judgement"]["model"], model, name)

    def test_copy_of_itself_passes_with_every_pool_judged(self):
        _, _, eager = self.eager()
        copy_path = self.path("copy.h5")
        shutil.copyfile(eager, copy_path)
        self.assert_pools_judged(self.diff(eager, copy_path))

    def test_compiled_sides_pass(self):
        compilers = [("torchscript", pt.torchscript_freeze), ("channels_last", pt.channels_last)]
        if TORCH2:
            compilers.append(("torch_compile", pt.torch_compile))
        model, args, eager = self.eager()
        for name, fn in compilers:
            with self.subTest(compiler=name):
                compiled = self.path("%s.h5" % name)
                pt.capture_compiled(model, args, compiled, compile_leaf=fn)
                self.assert_pools_judged(self.diff(eager, compiled))

    def check_bug(self, buggy, first):
        """buggy runs on the compiled side: first is the first divergence, cause local,
        and the pools after it fail only as echoes."""
        model, args, eager = self.eager()
        compiled = self.path("bug.h5")
        pt.capture_compiled(model, args, compiled, compile_leaf=pt.torchscript_freeze,
                            run_module=buggy, compiler="buggy")
        doc = self.diff(eager, compiled)
        self.assertEqual(doc["_code"], 1, doc["_text"])
        self.assertEqual(doc["first_divergence"], first, doc["_text"])
        t = self.tensor(doc, first)
        self.assertEqual((t["status"], t["cause"]), ("fail", "local"), doc["_text"])
        for name in POOLS:
            u = self.tensor(doc, name)
            if u["order"] > t["order"] and u["status"] == "fail":
                self.assertEqual(u["cause"], "propagated", name)
        return doc

    def test_scaled_weight_before_the_pools_is_caught(self):
        model, _ = make()
        buggy = copy.deepcopy(model)
        with torch.no_grad():
            buggy.conv2.weight[2:4] *= 1e-3
        self.check_bug(buggy, "/conv2/out")

    def test_pool_counting_the_padding_is_caught(self):
        """count_include_pad=True where eager has False: only the border windows change,
        by a factor 4/9 or 6/9; the pool's model fails it locally."""
        model, _ = make()
        buggy = copy.deepcopy(model)
        buggy.pool1.count_include_pad = True
        self.check_bug(buggy, "/pool1/out")


if __name__ == "__main__":
    unittest.main(verbosity=2)
