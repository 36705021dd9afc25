#!/usr/bin/python3
"""test_gate_outputs.py - the gate's JUnit and OpenMetrics writers (reports/report_gate_junit.c,
reports/report_gate_metrics.c) checked by the tools their readers use: xmllint against
tests/gate/junit.xsd, and python3-prometheus-client's OpenMetrics parser. Each report is
also compared with the JSON document it was made from (tests/gate/sample.json, and
documents built here: error pairs, hostile strings, malformed repeats).

    test_gate_outputs.py GATE_RENDER SOURCE_DIR      (SOURCE_DIR: tests/gate)

Run by ctest (tests/CMakeLists.txt, test gate_outputs) with the system python, which has
python3-prometheus-client (scripts/setup-deps.sh).
"""
import copy
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

from prometheus_client.openmetrics.parser import text_string_to_metric_families

GATE_RENDER = None
SOURCE_DIR = None
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
STATUSES = ["pass", "fail", "error", "missing_eager", "missing_compiled"]
SIDE_GAUGES = [  # family, telemetry field, divisor
    ("parity_gate_compile_time_seconds", "compile_time_s", 1),
    ("parity_gate_recompiles", "recompiles", 1),
    ("parity_gate_graph_breaks", "graph_breaks", 1),
    ("parity_gate_fallback_rate", "fallback_rate", 1),
    ("parity_gate_latency_p50_seconds", "p50_ms", 1000),
    ("parity_gate_latency_p99_seconds", "p99_ms", 1000),
    ("parity_gate_throughput_calls_per_second", "throughput", 1),
]


def load_sample():
    with open(os.path.join(SOURCE_DIR, "sample.json"), encoding="utf-8") as f:
        return json.load(f)


def xml_clean(s):
    """What the JUnit writer makes of s: characters XML 1.0 cannot carry become U+FFFD."""
    def ok(c):
        o = ord(c)
        return (c in "\t\n\r" or 0x20 <= o <= 0xD7FF or 0xE000 <= o <= 0xFFFD
                or o >= 0x10000)
    return "".join(c if ok(c) else "\ufffd" for c in s)


def slice_name(doc, labels):
    return ",".join(f"{k}={labels.get(k, '(unset)')}" for k in doc["slice_keys"])


class Rendered:
    """gate_render run on one document: rc, stderr, and the files it wrote."""

    def __init__(self, doc, tmp, junit=None, metrics=None):
        path = os.path.join(tmp, "doc.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        self.junit_path = junit or os.path.join(tmp, "out.xml")
        self.metrics_path = metrics or os.path.join(tmp, "out.om")
        proc = subprocess.run([GATE_RENDER, path, "--junit", self.junit_path,
                               "--metrics", self.metrics_path],
                              capture_output=True, timeout=60)
        self.rc, self.stderr = proc.returncode, proc.stderr.decode("utf-8", "replace")

    def xml_bytes(self):
        with open(self.junit_path, "rb") as f:
            return f.read()

    def metrics_text(self):
        # Bytes decoded as they are: universal newlines would turn a carriage return inside
        # a label value into a line break.
        with open(self.metrics_path, "rb") as f:
            return f.read().decode("utf-8")


class GateOutputCase(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def render(self, doc, **kw):
        r = Rendered(doc, self.tmp, **kw)
        self.assertEqual(r.rc, 0, r.stderr)
        return r

    def xmllint(self, path, schema=True):
        args = ["xmllint", "--noout"]
        if schema:
            args += ["--schema", os.path.join(SOURCE_DIR, "junit.xsd")]
        return subprocess.run(args + [path], capture_output=True, text=True, timeout=60)

    def assert_valid_junit(self, path):
        proc = self.xmllint(path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("validates", proc.stderr)

    def families(self, text):
        self.assertTrue(text.endswith("\n# EOF\n"), text[-200:])
        return {f.name: f for f in text_string_to_metric_families(text)}


class JUnitTest(GateOutputCase):
    def test_sample_validates_against_the_schema(self):
        r = self.render(load_sample())
        self.assert_valid_junit(r.junit_path)

    def test_schema_is_not_vacuous(self):
        r = self.render(load_sample())
        text = r.xml_bytes().decode("utf-8")
        broken = {
            "testcase without name": re.sub(r'<testcase name="[^"]*" ', "<testcase ", text, 1),
            "testsuite without tests": text.replace(' tests="2"', "", 1),
            "negative count": text.replace('failures="0"', 'failures="-1"', 1),
            "unknown element": text.replace("</testsuite>", "<bogus/></testsuite>", 1),
            "failure without type": text.replace(' type="divergence"', "", 1),
        }
        for what, xml in broken.items():
            self.assertNotEqual(xml, text, what)
            path = os.path.join(self.tmp, "broken.xml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(xml)
            proc = self.xmllint(path)
            self.assertNotEqual(proc.returncode, 0, what)
            self.assertIn("fails to validate", proc.stderr, what)

    def test_suites_and_cases_match_the_json(self):
        doc = load_sample()
        root = ET.fromstring(self.render(doc).xml_bytes())
        suites = root.findall("testsuite")
        self.assertEqual([s.get("name") for s in suites],
                         [slice_name(doc, s["labels"]) for s in doc["slices"]] + ["alerts"])
        pairs = {p["id"]: p for p in doc["pairs"]}
        for suite, sl in zip(suites, doc["slices"]):
            cases = suite.findall("testcase")
            self.assertEqual([c.get("name") for c in cases], sl["pair_ids"])
            self.assertTrue(all(c.get("classname") == suite.get("name") for c in cases))
            self.assertEqual(int(suite.get("tests")), sl["pairs"])
            self.assertEqual(int(suite.get("failures")), sl["parity"]["fail"])
            self.assertEqual(int(suite.get("errors")), 0)
            for case in cases:
                pair = pairs[case.get("name")]
                failure = case.find("failure")
                if pair["status"] == "pass":
                    self.assertEqual(len(case), 0)
                    continue
                self.assertEqual(failure.get("type"), "divergence")
                self.assertEqual(failure.get("message"),
                                 "first divergence: " + pair["first_divergence"])
                for cause in pair["local_causes"]:
                    self.assertIn(f"{cause['name']} op={cause['op']} affected_slice="
                                  "[0:1, 3:4, 0:64] max_ulp=1048576", failure.text)
        self.assertEqual(int(root.get("tests")), 4 + 2)
        self.assertEqual(int(root.get("failures")), 1 + 2)

    def test_alerts_suite(self):
        doc = load_sample()
        pending = copy.deepcopy(doc["alerts"][1])
        pending["runs_out_of_range"], pending["rule"] = 1, "recompiles#3"
        doc["pending"] = [pending]
        root = ET.fromstring(self.render(doc).xml_bytes())
        alerts = root.find("testsuite[@name='alerts']")
        self.assertEqual((alerts.get("tests"), alerts.get("failures"), alerts.get("skipped")),
                         ("3", "2", "1"))
        cases = alerts.findall("testcase")
        for case, alert in zip(cases, doc["alerts"]):
            message = case.find("failure").get("message")
            self.assertEqual(case.find("failure").get("type"), "alert")
            for part in (alert["metric"], alert["owner"], alert["mitigation"],
                         slice_name(doc, alert["labels"])):
                self.assertIn(part, message)
        self.assertIn("numerical_parity = 0 outside normal (min 1)", cases[0].find("failure").get("message"))
        self.assertIn("recompiles = 14 (eager 0) outside normal (max 2)",
                      cases[1].find("failure").get("message"))
        skipped = cases[2].find("skipped")
        self.assertIsNotNone(skipped)
        self.assertIsNone(cases[2].find("failure"))
        self.assertIn("out of range in 1 of 2 runs", skipped.get("message"))
        self.assertEqual(root.get("skipped"), "1")

    def test_error_pairs(self):
        doc = load_sample()
        doc["pairs"][0]["status"], doc["pairs"][0]["error"] = "error", "bad chunk <3 & 'x'"
        doc["pairs"][1]["status"] = "missing_eager"
        doc["pairs"][2]["status"] = "missing_compiled"
        r = self.render(doc)
        self.assert_valid_junit(r.junit_path)
        root = ET.fromstring(r.xml_bytes())
        errors = {c.get("name"): c.find("error") for c in root.iter("testcase")
                  if c.find("error") is not None}
        self.assertEqual(sorted(errors), ["chat/long", "chat/short/a", "chat/short/b"])
        self.assertEqual(errors["chat/long"].get("type"), "error")
        self.assertEqual(errors["chat/long"].get("message"), "bad chunk <3 & 'x'")
        self.assertEqual(errors["chat/short/a"].get("type"), "missing_eager")
        self.assertEqual(errors["chat/short/b"].get("type"), "missing_compiled")
        self.assertEqual(root.get("errors"), "3")
        self.assertEqual(root.find("testsuite").get("errors"), "2")


def hostile_doc():
    """The sample with slice keys, labels, pair ids, errors and alert fields that hold
    what XML and OpenMetrics must escape or cannot carry."""
    doc = load_sample()
    keys = ["work-load", "side", "1st", "__x", "a_b", "a-b", "ключ"]
    nasty = [
        'a<b>&"q"\'s\n\ttab\rcr',
        "ctl\x01\x08\x0b\x0c\x1b\x1f\x7f\x85 nel",
        "non\ufffe\uffff chars \U0001F600 é",
        "}{ # \\ brace\"} 1",
        "\\n literal, \\\\ double",
        "",
    ]
    doc["slice_keys"] = keys
    long_id = "x}" * 100 + "é" * 80
    ids = [nasty[0] + "/id", nasty[1], nasty[3], long_id]
    for i, pair in enumerate(doc["pairs"]):
        old = pair["id"]
        pair["id"] = ids[i]
        for sl in doc["slices"]:
            sl["pair_ids"] = [ids[i] if p == old else p for p in sl["pair_ids"]]
    for i, sl in enumerate(doc["slices"]):
        sl["labels"] = {k: nasty[(i + j) % len(nasty)] + str(i) for j, k in enumerate(keys)}
    labels_of = {p: sl["labels"] for sl in doc["slices"] for p in sl["pair_ids"]}
    for pair in doc["pairs"]:
        pair["labels"] = labels_of[pair["id"]]
    doc["pairs"][0]["status"], doc["pairs"][0]["error"] = "error", nasty[1] + nasty[2]
    long_slice = next(sl for sl in doc["slices"] if ids[0] in sl["pair_ids"])
    long_slice["parity"]["pass"], long_slice["parity"]["error"] = 0, 1
    doc["pairs"][3]["first_divergence"] = nasty[0]
    doc["pairs"][3]["local_causes"][0]["name"] = nasty[2]
    doc["pairs"][3]["local_causes"][0]["op"] = nasty[3]
    for alert in doc["alerts"]:
        alert["owner"], alert["rule"] = nasty[0], nasty[1]
        alert["labels"] = next(sl["labels"] for sl in doc["slices"]
                               if sl["labels"]["1st"].endswith("2"))
    return doc


class HostileTest(GateOutputCase):
    def test_junit_is_well_formed_and_valid(self):
        doc = hostile_doc()
        r = self.render(doc)
        self.assertEqual(self.xmllint(r.junit_path, schema=False).returncode, 0)
        self.assert_valid_junit(r.junit_path)
        root = ET.fromstring(r.xml_bytes())
        names = [c.get("name") for c in root.iter("testcase")]
        for pair in doc["pairs"]:
            self.assertIn(xml_clean(pair["id"]), names)
        suite_names = [s.get("name") for s in root.findall("testsuite")]
        for sl in doc["slices"]:
            self.assertIn(xml_clean(slice_name(doc, sl["labels"])), suite_names)
        failure = next(root.iter("failure"))
        self.assertEqual(failure.get("message"),
                         "first divergence: " + xml_clean(doc["pairs"][3]["first_divergence"]))
        error = next(root.iter("error"))
        self.assertEqual(error.get("message"), xml_clean(doc["pairs"][0]["error"]))

    def test_metrics_parse_with_escaped_labels(self):
        doc = hostile_doc()
        fams = self.families(self.render(doc).metrics_text())
        expect_names = {"work-load": "work_load", "side": "side_2", "1st": "key_1st",
                        "__x": "key___x", "a_b": "a_b", "a-b": "a_b_2", "ключ": "key_____"}
        p99 = fams["parity_gate_latency_p99_seconds"].samples
        self.assertEqual(len(p99), 6)
        for sample in p99:
            self.assertTrue(all(LABEL_NAME.match(n) for n in sample.labels))
        by_labels = {}
        for sl in doc["slices"]:
            want = {expect_names[k]: v for k, v in sl["labels"].items() if v}
            by_labels[tuple(sorted(want.items()))] = sl
        for sample in p99:
            labels = dict(sample.labels)
            side = labels.pop("side")
            sl = by_labels[tuple(sorted(labels.items()))]
            self.assertEqual(sample.value, sl["telemetry"][side]["p99_ms"] / 1000)
        pairs = {p["id"]: p for p in doc["pairs"]}
        exemplars = [s.exemplar for s in fams["parity_gate_pairs"].samples if s.exemplar]
        self.assertEqual(len(exemplars), 3)
        for ex in exemplars:
            self.assertLessEqual(sum(len(k) + len(v) for k, v in ex.labels.items()), 128)
        long_id = next(p for p in pairs if len(p) > 124)
        self.assertIn(long_id.replace("}", "\ufffd")[:124], [e.labels["pair"] for e in exemplars])
        alerts = fams["parity_gate_alert"].samples
        self.assertEqual(len(alerts), 2)
        self.assertEqual(alerts[0].labels["owner"], doc["alerts"][0]["owner"])
        self.assertEqual(alerts[0].labels["rule"], doc["alerts"][0]["rule"])

    def test_repeated_series_are_written_once(self):
        doc = load_sample()
        doc["slices"].append(copy.deepcopy(doc["slices"][0]))
        doc["pending"] = [copy.deepcopy(doc["alerts"][0])]
        doc["slice_keys"] = ["workload", "shape_bucket", "shape-bucket"]
        fams = self.families(self.render(doc).metrics_text())
        self.assertEqual(len(fams["parity_gate_traffic_share"].samples), 3)
        self.assertEqual(len(fams["parity_gate_pairs"].samples), 15)
        self.assertEqual([s.value for s in fams["parity_gate_alert"].samples], [1, 1])

    def test_empty_document(self):
        doc = {"schema": "parity-gate/1", "verdict": "pass", "slice_keys": [],
               "slices": [], "pairs": [], "alerts": [], "pending": []}
        r = self.render(doc)
        self.assert_valid_junit(r.junit_path)
        root = ET.fromstring(r.xml_bytes())
        self.assertEqual([s.get("name") for s in root.findall("testsuite")], ["alerts"])
        fams = self.families(r.metrics_text())
        self.assertEqual([s.value for s in fams["parity_gate_verdict"].samples], [1, 0, 0])


class MetricsTest(GateOutputCase):
    def test_values_equal_the_json(self):
        doc = load_sample()
        text = self.render(doc).metrics_text()
        fams = self.families(text)
        slices = {(s["labels"]["workload"], s["labels"]["shape_bucket"]): s
                  for s in doc["slices"]}
        for family, field, divisor in SIDE_GAUGES:
            fam = fams[family]
            self.assertEqual(fam.type, "gauge")
            self.assertEqual(fam.unit, "seconds" if family.endswith("_seconds") else "")
            want = [(key, side, t[field] / divisor) for key, sl in slices.items()
                    for side, t in sl["telemetry"].items() if t[field] is not None]
            got = [((s.labels["workload"], s.labels["shape_bucket"]), s.labels["side"], s.value)
                   for s in fam.samples]
            self.assertEqual(sorted(got), sorted(want), family)
        # compile_time_s is null on the eager side: no sample rather than 0
        self.assertEqual(len(fams["parity_gate_compile_time_seconds"].samples), 3)
        for family, field in [("parity_gate_outcome_agreement", "outcome_agreement"),
                              ("parity_gate_traffic_share", "traffic_share")]:
            got = {(s.labels["workload"], s.labels["shape_bucket"]): s.value
                   for s in fams[family].samples}
            want = {k: sl[field] for k, sl in slices.items() if sl[field] is not None}
            self.assertEqual(got, want, family)

    def test_pairs_counter_and_exemplars(self):
        doc = load_sample()
        doc["pairs"][1]["status"] = "missing_eager"
        short = next(s for s in doc["slices"] if s["pairs"] == 2)
        short["parity"]["pass"], short["parity"]["missing_eager"] = 1, 1
        text = self.render(doc).metrics_text()
        self.assertIn("# TYPE parity_gate_pairs counter\n", text)
        fam = self.families(text)["parity_gate_pairs"]
        self.assertEqual(fam.type, "counter")
        status_of = {p["id"]: p["status"] for p in doc["pairs"]}
        seen = 0
        for sl in doc["slices"]:
            for status in STATUSES:
                sample = next(s for s in fam.samples
                              if s.labels["workload"] == sl["labels"]["workload"]
                              and s.labels["shape_bucket"] == sl["labels"]["shape_bucket"]
                              and s.labels["status"] == status)
                self.assertEqual(sample.name, "parity_gate_pairs_total")
                self.assertEqual(sample.value, sl["parity"][status])
                if sample.value == 0:
                    self.assertIsNone(sample.exemplar)
                    continue
                seen += 1
                first = next(p for p in sl["pair_ids"] if status_of[p] == status)
                self.assertEqual(sample.exemplar.labels, {"pair": first})
                self.assertEqual(sample.exemplar.value, 1)
        self.assertEqual(seen, 4)

    def test_alert_and_verdict(self):
        doc = load_sample()
        doc["pending"] = [dict(doc["alerts"][1], rule="recompiles#3")]
        fams = self.families(self.render(doc).metrics_text())
        alerts = fams["parity_gate_alert"].samples
        self.assertEqual([(s.labels["rule"], s.value) for s in alerts],
                         [("numerical_parity#1", 1), ("recompiles#2", 1), ("recompiles#3", 0)])
        self.assertEqual(alerts[0].labels, {"rule": "numerical_parity#1",
                                            "metric": "numerical_parity",
                                            "owner": "numerics-oncall",
                                            "mitigation": "eager_fallback",
                                            "workload": "rank", "shape_bucket": "513-2048"})
        verdicts = {s.labels["verdict"]: s.value for s in fams["parity_gate_verdict"].samples}
        self.assertEqual(verdicts, {"pass": 0, "fail": 1, "error": 0})

    def test_numbers_round_trip(self):
        doc = load_sample()
        values = [0.1, 1 / 3, 2.0 ** -1074, 1.7976931348623157e308, 123456789.123456789]
        for sl, v in zip(doc["slices"], values):
            sl["traffic_share"] = v
        fams = self.families(self.render(doc).metrics_text())
        got = [s.value for s in fams["parity_gate_traffic_share"].samples]
        self.assertEqual(got, values[:len(doc["slices"])])
        self.assertFalse(any(math.isnan(v) for v in got))


class WriteFailureTest(GateOutputCase):
    def test_unwritable_path_exits_2_with_one_line(self):
        doc = load_sample()
        missing_dir = os.path.join(self.tmp, "no", "such", "dir")
        for kw in ({"junit": os.path.join(missing_dir, "out.xml")},
                   {"metrics": os.path.join(missing_dir, "out.om")}):
            r = Rendered(doc, self.tmp, **kw)
            self.assertEqual(r.rc, 2, kw)
            lines = r.stderr.splitlines()
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertTrue(lines[0].startswith("gate_render: "), r.stderr)
            self.assertIn(missing_dir, lines[0])


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: test_gate_outputs.py GATE_RENDER SOURCE_DIR")
    GATE_RENDER, SOURCE_DIR = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1] + sys.argv[3:], verbosity=2)
