"""Root causes (issue 17): `parityfuzz triage` and the campaign summary's root_causes.

- The oneDNN 2.6.3 repros of corpus/onednn/repros: one root cause per row of the README's
  findings table (the repros a row names), no cause across two rows, every repro in a row.
- A 60 s builtin campaign with gemm_k_tail and fastmath_nan switched on: exactly two root
  causes, in its JSON and text (root causes before the signatures), and the same two from
  `parityfuzz triage` over the repros it stored; the summary counts judged cases.
- The retracted repros no longer diverge: listed apart, no cause, exit 0.
- A campaign's --out (family/repro) is searched three levels down; links are not followed.
- Bad input: one line, exit 2.
argv: PARITYFUZZ SOURCE_DIR.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

PARITYFUZZ, SOURCE = sys.argv[1:3]
CORPUS = os.path.join(SOURCE, "corpus", "onednn")


def run(*args, timeout=600):
    p = subprocess.run([PARITYFUZZ, *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def readme_rows():
    """{row number: [repro names]} of the README's oneDNN findings table (rows that name
    repros in its last column; retracted and merged rows name none)."""
    rows = {}
    with open(os.path.join(SOURCE, "README.md")) as f:
        for line in f:
            m = re.match(r"\| (\d+) \|", line)
            if not m:
                continue
            last = line.rstrip().rstrip("|").rsplit("|", 1)[1]
            names = re.findall(r"`([a-z_0-9.]+-[a-z0-9.-]+)`", last)
            if names:
                rows[int(m.group(1))] = names
    return rows


class OnednnCorpus(unittest.TestCase):
    def test_one_root_cause_per_readme_row(self):
        code, out, err = run("triage", os.path.join(CORPUS, "repros"), "--json", "-")
        self.assertEqual(code, 1, err)
        doc = json.loads(out)
        cause_of = {}
        for c in doc["root_causes"]:
            self.assertTrue(os.path.isdir(c["repro"]), c["repro"])
            self.assertEqual(c["count"], len(c["signatures"]))
        # each folder triaged alone gives its cause (the key a cause is grouped by)
        names = sorted(os.listdir(os.path.join(CORPUS, "repros")))
        for name in names:
            code, out1, err1 = run("triage", os.path.join(CORPUS, "repros", name), "--json", "-")
            self.assertEqual(code, 1, err1)
            c = json.loads(out1)["root_causes"][0]
            cause_of[name] = (c["op"], c["symptom"], c["trigger"],
                              c["dtype"] if c["op"] == "*" else "")
        rows = readme_rows()
        self.assertEqual(sorted(n for r in rows.values() for n in r), names,
                         "every curated repro in exactly one README row")
        causes = {}
        for row, repros in rows.items():
            keys = {cause_of[n] for n in repros}
            self.assertEqual(len(keys), 1, "row %d spans causes %s" % (row, keys))
            causes.setdefault(keys.pop(), []).append(row)
        for key, in_rows in causes.items():
            self.assertEqual(len(in_rows), 1, "cause %s merges rows %s" % (key, in_rows))
        self.assertEqual(len(doc["root_causes"]), len(rows))
        self.assertEqual(doc["repros"], len(names))
        # the text puts the causes first, the largest (row 8's flushed subnormal) on top
        code, text, _ = run("triage", os.path.join(CORPUS, "repros"))
        self.assertTrue(text.startswith("root cause 1: * ("), text[:200])
        self.assertIn("bfloat16: subnormal flushed, trigger subnormal result; 14 signatures", text)
        self.assertTrue(text.rstrip().endswith("%d repros, %d root causes" % (len(names), len(rows))))

    def test_a_campaign_layout_is_searched_below_and_links_are_not_followed(self):
        """scripts/campaigns.py --out holds family/repro: triage finds them there, three
        levels down at most, and follows no symbolic link (a loop must not hang it)."""
        with tempfile.TemporaryDirectory() as tmp:
            deep = os.path.join(tmp, "camp", "relu", "float32")
            shutil.copytree(os.path.join(CORPUS, "repros", "relu-nan-float32"),
                            os.path.join(deep, "r1"))
            os.symlink(os.path.join(tmp, "camp"), os.path.join(deep, "loop"))
            too_deep = os.path.join(tmp, "deep", "a", "b", "c")
            shutil.copytree(os.path.join(CORPUS, "repros", "relu-nan-float32"),
                            os.path.join(too_deep, "r1"))
            linked = os.path.join(tmp, "linked")
            os.mkdir(linked)
            os.symlink(os.path.join(CORPUS, "repros", "relu-nan-float32"),
                       os.path.join(linked, "r1"))
            code, out, err = run("triage", os.path.join(tmp, "camp"), "--json", "-", timeout=60)
            self.assertEqual(code, 1, err)
            doc = json.loads(out)
            self.assertEqual(doc["repros"], 1)
            self.assertEqual(doc["root_causes"][0]["repro"], os.path.join(deep, "r1"))
            for d in (os.path.join(tmp, "deep"), linked):
                code, out, err = run("triage", d, timeout=60)
                self.assertEqual((code, "no repro under" in err), (2, True), out + err)

    def test_retracted_repros_no_longer_diverge(self):
        code, out, err = run("triage", os.path.join(CORPUS, "retracted"), "--json", "-")
        self.assertEqual(code, 0, err)
        doc = json.loads(out)
        self.assertEqual(doc["root_causes"], [])
        self.assertEqual(len(doc["no_longer_diverging"]), len(os.listdir(os.path.join(CORPUS, "retracted"))))


class BuiltinCampaign(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="triage-")
        cls.out = os.path.join(cls.tmp, "repros")
        cls.code, cls.text, cls.err = run(
            "--defect", "gemm_k_tail", "--defect", "fastmath_nan", "--time", "60",
            "--seed", "1", "--out", cls.out, "--json", os.path.join(cls.tmp, "s.json"),
            timeout=300)
        with open(os.path.join(cls.tmp, "s.json")) as f:
            cls.doc = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def check_two(self, causes):
        self.assertEqual(len(causes), 2, json.dumps(causes, indent=1))
        by = {c["op"]: c for c in causes}
        self.assertEqual(set(by), {"dot", "max/min"})
        self.assertEqual((by["max/min"]["symptom"], by["max/min"]["trigger"]),
                         ("nan lost", "nan input"))
        self.assertTrue(set(by["max/min"]["ops"]) <= {"relu", "maximum", "minimum", "amax",
                                                      "amin", "clamp", "hardtanh"})
        # gemm_k_tail: the K the minimizer could not shrink, whatever the values showed
        self.assertIn("large K dim (unaligned)", by["dot"]["trigger"])
        self.assertTrue(set(by["dot"]["ops"]) <= {"matmul", "linear", "bmm", "addmm", "baddbmm"})
        self.assertEqual(sum(c["count"] for c in causes), len(self.doc["findings"]))

    def test_exactly_two_root_causes(self):
        self.assertEqual(self.code, 1, self.err)
        self.check_two(self.doc["root_causes"])
        for c in self.doc["root_causes"]:
            self.assertTrue(c["repro"] and os.path.isdir(c["repro"]), c)
        # text: the causes first, then the signatures, then the counts
        lines = self.text.splitlines()
        self.assertTrue(lines[0].startswith("root cause 1: "), lines[:3])
        first_finding = next(i for i, l in enumerate(lines) if l.startswith("finding 1:"))
        self.assertEqual(sum(l.startswith("root cause ") for l in lines[:first_finding]), 2)
        self.assertRegex(lines[-1], r"^parityfuzz: \d+ execs in [\d.]+ s \((\d+) judged, "
                         r"(\d+) skipped, (\d+) bit-identical\), \d+ findings, 2 root causes$")

    def test_counts_add_up(self):
        d = self.doc
        self.assertGreater(d["judged"], 100)
        self.assertLessEqual(d["judged"] + d["skipped"] + d["bit_identical"], d["execs"])

    def test_triage_of_the_stored_repros_agrees(self):
        code, out, err = run("triage", self.out, "--json", "-")
        self.assertEqual(code, 1, err)
        self.check_two(json.loads(out)["root_causes"])


class BadInput(unittest.TestCase):
    def test_one_line_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            empty = os.path.join(tmp, "empty")
            os.mkdir(empty)
            bad = os.path.join(tmp, "bad", "r1")
            shutil.copytree(os.path.join(CORPUS, "repros", "relu-nan-float32"), bad)
            with open(os.path.join(bad, "compiled.h5"), "r+b") as f:   # damaged
                f.seek(0)
                f.write(b"\0" * 512)
            nosig = os.path.join(tmp, "nosig", "r1")
            shutil.copytree(os.path.join(CORPUS, "repros", "relu-nan-float32"), nosig)
            os.remove(os.path.join(nosig, "signature"))
            for args, want in (([empty], "no repro under"), ([os.path.join(tmp, "absent")], ""),
                               ([os.path.dirname(bad)], "r1"), ([os.path.dirname(nosig)], "signature"),
                               ([], "wants a folder"), (["--bogus", empty], "unknown option")):
                with self.subTest(args=args):
                    code, out, err = run("triage", *args)
                    self.assertEqual(code, 2, out + err)
                    self.assertEqual(len(err.splitlines()), 1, err)
                    self.assertIn(want, err)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
