"""parityfuzz shrink on real PyTorch captures (issue 16: the minimized repro of a local cause).

Run by ctest with Debian's torch 1.13 and with the current torch of scripts/setup-venv.sh;
PARITYDIFF and PARITYFUZZ name the binaries. Bugs are injected the way test_real_models.py
does (the compiled side runs a buggy copy of the model, captured under the correct model's
parameters), so the differ names a local cause; shrink must cut it to the smallest crop
that still fails, at the bug, in a folder paritydiff fails for the same cause. On correct
compiled captures shrink must find nothing to shrink in any op (no false alarm), and bad
input gets one line and exit 2.
"""
import copy
import json
import os
import random
import subprocess
import sys
import unittest

from capture_case import CaptureCase  # noqa: E402 (puts formats/ on sys.path)
import torch  # noqa: E402
import parity_torch as pt  # noqa: E402
import test_real_models as rm  # noqa: E402

PARITYFUZZ = os.environ.get("PARITYFUZZ", "parityfuzz")


class ShrinkReal(CaptureCase):
    def shrink(self, eager, compiled, tensor, out, *opts):
        """parityfuzz shrink; (exit status, JSON document or None, stdout, stderr)."""
        report = self.path("shrink.json")
        if os.path.exists(report):
            os.remove(report)
        p = subprocess.run([PARITYFUZZ, "shrink", eager, compiled, "--tensor", tensor,
                            "--out", out, "--json", report, *opts],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=600)
        doc = None
        if os.path.exists(report):
            with open(report) as f:
                doc = json.load(f)
        return p.returncode, doc, p.stdout, p.stderr

    def capture_bug(self, kind, buggy):
        model, args = rm.make(kind)
        eager = self.path("%s_eager.h5" % kind)
        pt.capture_eager(model, args, eager, model=kind, workload="test")
        compiled = self.path("%s_bug.h5" % kind)
        pt.capture_compiled(model, args, compiled, compile_leaf=pt.torchscript_freeze,
                            run_module=buggy, compiler="buggy")
        return eager, compiled

    def check_repro(self, kind, buggy, tensor, want_shape, axis, want_range):
        """The differ's local cause at tensor shrinks to want_shape, at an index of axis in
        want_range, in a repro paritydiff fails with that tensor as local cause."""
        eager, compiled = self.capture_bug(kind, buggy)
        doc = self.diff(eager, compiled)
        self.assertEqual(doc["first_divergence"], tensor, doc["_text"])
        self.assertEqual(self.tensor(doc, tensor)["cause"], "local", doc["_text"])
        source_shape = self.tensor(doc, tensor)["shape"]
        out = self.path("repro-%s" % kind)
        code, sd, text, err = self.shrink(eager, compiled, tensor, out)
        self.assertEqual(code, 1, text + err)
        self.assertEqual(err, "")
        self.assertEqual(sd["source_shape"], source_shape)
        self.assertEqual(sd["shape"], want_shape, sd)
        self.assertTrue(sd["minimal"], sd)
        self.assertIn(sd["offset"][axis], want_range, sd)
        self.assertLess(sd["execs"], 60, sd)     # the worst element alone, then 1-minimality
        self.assertEqual(sd["repro"], out)
        # the repro: paritydiff fails it at the same tensor, same cause, nothing else failing
        rd = self.diff(os.path.join(out, "eager.h5"), os.path.join(out, "compiled.h5"))
        self.assertEqual(rd["_code"], 1, rd["_text"])
        self.assertEqual(rd["first_divergence"], tensor, rd["_text"])
        t = self.tensor(rd, tensor)
        self.assertEqual((t["status"], t["cause"], t["shape"]), ("fail", "local", want_shape),
                         rd["_text"])
        self.assertEqual([u["name"] for u in rd["tensors"] if u["status"] == "fail"], [tensor])
        self.assertEqual(rd["warnings"], [], rd["_text"])
        # where it came from, said in the files and in origin
        import h5py
        with h5py.File(os.path.join(out, "compiled.h5"), "r") as f:
            self.assertEqual(list(f.attrs["repro_offset"]), sd["offset"])
            self.assertEqual(list(f.attrs["repro_source_shape"]), source_shape)
            self.assertEqual(f.attrs["repro_tensor"], tensor)
            self.assertEqual(f.attrs["compiler"], "buggy")
        with open(os.path.join(out, "origin")) as f:
            origin = f.read()
        self.assertIn("look: paritydiff %s/eager.h5 %s/compiled.h5" % (out, out), origin)
        # a second run replaces the first, leaving nothing beside it
        code2, sd2, _, err2 = self.shrink(eager, compiled, tensor, out)
        self.assertEqual((code2, sd2["offset"]), (1, sd["offset"]), err2)
        self.assertEqual(sorted(os.listdir(out)), ["compiled.h5", "eager.h5", "origin"])
        self.assertEqual([n for n in os.listdir(self.dir) if n.startswith(("repro-%s." % kind,
                                                                          ".tmp-repro"))], [])
        return sd

    def test_weight_slice_of_a_linear_shrinks_to_one_element(self):
        model, _ = rm.make("mlp")
        buggy = copy.deepcopy(model)
        with torch.no_grad():
            buggy.fc1.weight[10:20] *= 1e-3
        self.check_repro("mlp", buggy, "/fc1/out", [1, 1], 1, range(10, 20))

    def test_weight_slice_of_a_3d_linear_shrinks_to_one_element(self):
        model, _ = rm.make("encoder_bf")
        buggy = copy.deepcopy(model)
        with torch.no_grad():
            buggy.enc.linear1.weight[8:16] *= 1e-3
        self.check_repro("encoder_bf", buggy, "/enc/linear1/out", [1, 1, 1], 2, range(8, 16))

    def test_conv_channels_shrink_to_one_sample_one_channel(self):
        model, _ = rm.make("cnn")
        buggy = copy.deepcopy(model)
        with torch.no_grad():
            buggy.conv2.weight[4:6] *= 1e-3
        # N and the output channels are cut; the image is the window's, kept whole
        self.check_repro("cnn", buggy, "/conv2/out", [1, 1, 8, 8], 1, range(4, 6))

    def test_zeroed_tail_of_a_layer_norm_shrinks_to_one_row(self):
        model, _ = rm.make("mlp")
        buggy = copy.deepcopy(model)
        buggy.norm = rm.ZeroTail(buggy.norm, 8)
        # a row is normalized as a whole: one row of 128, any row (all of them fail)
        self.check_repro("mlp", buggy, "/norm/out", [1, 128], 0, range(0, 32))

    def test_correct_compiled_ops_have_nothing_to_shrink(self):
        """No false alarm: every op output of correct compiled captures replays as no
        divergence (exit 0), or is refused with its reason (exit 2), never a repro."""
        replayed = refused = 0
        for kind in ("mlp", "cnn", "encoder", "encoder_bf"):
            model, args = rm.make(kind)
            eager = self.path("%s_eager.h5" % kind)
            pt.capture_eager(model, args, eager, model=kind, workload="test")
            compiled = self.path("%s_ts.h5" % kind)
            pt.capture_compiled(model, args, compiled, compile_leaf=pt.torchscript_freeze,
                                compiler="torchscript", model=kind, workload="test")
            doc = self.diff(eager, compiled)
            self.assert_pass(doc)
            for t in doc["tensors"]:
                if not t.get("op") or t["status"] != "pass":
                    continue
                with self.subTest(kind=kind, tensor=t["name"]):
                    out = self.path("none")
                    code, sd, text, err = self.shrink(eager, compiled, t["name"], out)
                    self.assertIn(code, (0, 2), text + err)
                    self.assertFalse(os.path.exists(out), t["name"])
                    if code == 0:
                        replayed += 1
                        self.assertIsNone(sd["repro"])
                        self.assertIn("does not diverge on replay", text)
                    else:
                        refused += 1
                        self.assertEqual(len(err.splitlines()), 1, err)
                        # only what the compiled side fused away, which no local cause is
                        self.assertIn("no tensor %s in %s" % (t["name"], compiled), err)
        print("\n%d op outputs replayed as no divergence, %d refused (only in eager)"
              % (replayed, refused), file=sys.stderr)
        self.assertGreater(replayed, 60)

    def test_bad_input_is_one_line_and_exit_2(self):
        eager, compiled = self.capture_bug("mlp", rm.make("mlp")[0])
        keep = self.path("keep")
        os.mkdir(keep)
        with open(os.path.join(keep, "notes.txt"), "w") as f:
            f.write("mine\n")
        cases = [
            (["--tensor", "/nope", "--out", self.path("x")], "no tensor /nope"),
            (["--tensor", "/input/0", "--out", self.path("x")], "not an op's output"),
            (["--tensor", "/fc1/out", "--out", keep], None),
            (["--tensor", "/fc1/out"], "--out"),
            (["--tensor", "/fc1/out", "--out", self.path("x"), "--max-execs", "0"],
             "--max-execs"),
        ]
        for opts, want in cases:
            with self.subTest(opts=opts):
                p = subprocess.run([PARITYFUZZ, "shrink", eager, compiled, *opts],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                if want is None:
                    # a correct op: nothing to shrink, and the user's folder is untouched
                    self.assertEqual(p.returncode, 0, p.stderr)
                else:
                    self.assertEqual(p.returncode, 2, p.stdout)
                    self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                    self.assertIn(want, p.stderr)
        self.assertEqual(os.listdir(keep), ["notes.txt"])
        self.assertFalse(os.path.exists(self.path("x")))
        # files that are not captures, or are damaged: one line, exit 2, never a crash
        junk = self.path("junk.h5")
        with open(junk, "wb") as f:
            f.write(b"not an HDF5 file\n" * 100)
        with open(compiled, "rb") as f:
            data = bytes(f.read())
        damaged = []
        for seed in range(20):   # 50 random bytes changed: some make libhdf5 1.10 crash
            rng, d = random.Random(seed), bytearray(data)
            for _ in range(50):
                d[rng.randrange(len(d))] ^= rng.randrange(1, 256)
            damaged.append(self.path("damaged%d.h5" % seed))
            with open(damaged[-1], "wb") as f:
                f.write(d)
        for other in [self.path("absent.h5"), junk] + damaged:
            with self.subTest(compiled=other):
                p = subprocess.run([PARITYFUZZ, "shrink", eager, other, "--tensor", "/fc1/out",
                                    "--out", self.path("x")],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   timeout=120)
                self.assertGreaterEqual(p.returncode, 0, p.stderr)      # no signal
                if p.returncode == 2:
                    self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                else:   # damage the reader did not notice: a verdict, never a crash
                    self.assertIn(p.returncode, (0, 1), p.stderr)

    def test_failure_in_a_folder_that_is_not_a_repro_is_refused(self):
        model, _ = rm.make("mlp")
        buggy = copy.deepcopy(model)
        with torch.no_grad():
            buggy.fc1.weight[10:20] *= 1e-3
        eager, compiled = self.capture_bug("mlp", buggy)
        keep = self.path("keep")
        os.mkdir(keep)
        with open(os.path.join(keep, "notes.txt"), "w") as f:
            f.write("mine\n")
        code, _, text, err = self.shrink(eager, compiled, "/fc1/out", keep)
        self.assertEqual(code, 2, text)
        self.assertIn("is not a repro folder", err)
        self.assertEqual(os.listdir(keep), ["notes.txt"])
        self.assertEqual([n for n in os.listdir(self.dir) if n.startswith(".tmp-repro")], [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
