"""capture_case - what the PyTorch capture tests share: a temporary directory per test, and
paritydiff run on a pair with its JSON report read back.

Importing it puts formats/ on sys.path, so `import parity_torch` works after it.
PARITYDIFF (environment) names the binary; ctest sets it.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "formats"))

import torch  # noqa: E402

PARITYDIFF = os.environ.get("PARITYDIFF", "paritydiff")
TORCH2 = int(torch.__version__.split(".")[0]) >= 2


class CaptureCase(unittest.TestCase):
    """A test case with its own temporary directory and paritydiff at hand."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="parity_torch_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def diff(self, eager, compiled, *opts):
        """paritydiff [opts] --json REPORT eager compiled: the report, with the text report
        (_text), stderr (_stderr) and exit status (_code); exit 2 fails the test."""
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
