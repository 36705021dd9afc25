"""paritydiff gate on the example suite, as a user runs it (diff/GATE.md; README "Release
gates"): the alerts, owners and mitigations the example is built to show, persistence over
a history, shards merged into the unsharded result, every report written and read back by
its reader, and bad suites, policies and traffic files refused with one line and exit 2.

argv: PARITYDIFF MAKE_GATE_EXAMPLE SOURCE_DIR (tests/gate)."""
import json, os, shutil, sqlite3, subprocess, sys, tempfile, unittest

PARITYDIFF, MAKE_EXAMPLE, GATE_DIR = sys.argv[1:4]
EXAMPLES = os.path.join(GATE_DIR, "..", "..", "examples", "gate")


def gate(*args, cwd=None):
    p = subprocess.run([PARITYDIFF, "gate", *args], capture_output=True, text=True, cwd=cwd,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


def slice_of(doc, workload, bucket):
    for s in doc["slices"]:
        if s["labels"] == {"workload": workload, "shape_bucket": bucket}:
            return s
    raise AssertionError("no slice %s/%s" % (workload, bucket))


class ExampleSuite(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gate-test-")
        cls.suite = os.path.join(cls.tmp, "suite")
        cls.calm = os.path.join(cls.tmp, "calm")
        subprocess.run([MAKE_EXAMPLE, cls.suite], check=True)
        subprocess.run([MAKE_EXAMPLE, cls.calm, "--calm"], check=True)
        cls.policy = os.path.join(EXAMPLES, "policy.yaml")
        cls.traffic = os.path.join(EXAMPLES, "traffic.csv")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def run_gate(self, suite=None, *extra, name="g"):
        out = os.path.join(self.tmp, name + ".json")
        code, stdout, stderr = gate("--policy", self.policy, "--traffic", self.traffic,
                                    "--json", out, "--timestamp", "2026-12-05T10:00:00Z",
                                    "--run-id", "r1", *extra, suite or self.suite)
        with open(out) as f:
            return code, json.load(f), stdout, stderr

    def test_divergent_bucket_alerts_its_owner_with_eager_fallback_for_that_slice_only(self):
        code, doc, stdout, _ = self.run_gate()
        self.assertEqual(code, 1)
        self.assertEqual(doc["verdict"], "fail")
        num = [a for a in doc["alerts"] if a["metric"] == "numerical_parity"]
        self.assertEqual([a["labels"] for a in num], [{"workload": "rank", "shape_bucket": "513-2048"}])
        self.assertEqual(num[0]["owner"], "numerics-oncall")
        self.assertEqual(num[0]["mitigation"], "eager_fallback")
        fallback = [m["labels"] for m in doc["mitigations"] if m["action"] == "eager_fallback"]
        self.assertTrue(fallback)
        self.assertTrue(all(l == {"workload": "rank", "shape_bucket": "513-2048"} for l in fallback))
        pair = [p for p in doc["pairs"] if p["id"] == "rank/513-2048/seq768"][0]
        self.assertEqual(pair["status"], "fail")
        self.assertEqual(pair["first_divergence"], "/scores")
        self.assertEqual(pair["local_causes"][0]["affected_slice"], [[3, 4], [0, 16]])
        self.assertEqual(pair["local_causes"][0]["op"], "softmax")
        self.assertIn("first divergence /scores", stdout)
        # every other pair with both sides is judged and passes: no false alarm
        for p in doc["pairs"]:
            if p["id"] not in ("rank/513-2048/seq768", "rank/2049-8192/seq3000"):
                self.assertEqual(p["status"], "pass", p["id"])
                self.assertGreater(p["tensors"]["compared"], 0)

    def test_outcome_parity_counts_the_flipped_decision(self):
        _, doc, _, _ = self.run_gate()
        s = slice_of(doc, "rank", "513-2048")
        self.assertEqual(s["outcomes"]["decisions"], 8)
        self.assertEqual(s["outcomes"]["agree"], 7)
        self.assertAlmostEqual(s["outcome_agreement"], 7 / 8)
        self.assertEqual(slice_of(doc, "chat", "1-512")["outcome_agreement"], 1.0)
        self.assertIn("outcome_parity", [a["metric"] for a in doc["alerts"]])

    def test_recompiling_bucket_alerts_and_explains_p99_while_throughput_improves(self):
        _, doc, stdout, _ = self.run_gate()
        rec = [a for a in doc["alerts"] if a["metric"] == "recompiles"]
        self.assertEqual([a["labels"] for a in rec], [{"workload": "chat", "shape_bucket": "2049-8192"}])
        self.assertEqual(rec[0]["value"], 14)
        self.assertEqual(rec[0]["mitigation"], "mark_dynamic")
        x = doc["p99_explanation"]
        self.assertGreater(x["throughput_ratio"], 1.0)
        self.assertGreater(x["p99_ratio"], 1.0)
        self.assertTrue(x["contradiction"])
        top = x["ranked"][0]
        self.assertEqual(top["labels"], {"workload": "chat", "shape_bucket": "2049-8192"})
        self.assertEqual(top["recompiles"], 14)
        self.assertAlmostEqual(top["fallback_rate"], 0.30)
        self.assertGreater(top["compiled_p99_ms"], 5 * top["eager_p99_ms"])
        self.assertAlmostEqual(top["score"], 0.10 * (top["compiled_p99_ms"] - top["eager_p99_ms"]))
        self.assertIn("throughput improves while p99 regresses", stdout)

    def test_slice_percentiles_come_from_merged_histograms(self):
        _, doc, _, _ = self.run_gate()
        s = slice_of(doc, "chat", "1-512")
        hist = s["telemetry"]["compiled"]["latency_hist_ms"]
        self.assertEqual(sum(hist), 400)             # two captures of 200 calls
        self.assertEqual(s["telemetry"]["compiled"]["calls"], 400)
        total, cum, rank = 400, 0, 0.99 * 400        # the bucket holding the p99 rank
        for i, c in enumerate(hist):
            if c and cum + c >= rank:
                lo = 0.001 * 2 ** ((i - 1) / 8)
                hi = 0.001 * 2 ** (i / 8)
                break
            cum += c
        p99 = s["telemetry"]["compiled"]["p99_ms"]
        self.assertTrue(lo <= p99 <= hi, (lo, p99, hi))
        self.assertFalse(s["telemetry"]["compiled"]["latency_estimated"])

    def test_coverage_names_uncovered_traffic_and_compiled_without_eager(self):
        _, doc, stdout, _ = self.run_gate()
        cov = doc["coverage"]
        self.assertAlmostEqual(cov["traffic_covered"], 0.98)
        self.assertEqual(cov["compiled_without_eager"], ["rank/2049-8192/seq3000"])
        self.assertIn({"workload": "rank", "shape_bucket": "2049-8192"},
                      [a["labels"] for a in doc["alerts"] if a["metric"] == "coverage"])
        self.assertIn("compiled without eager: rank/2049-8192/seq3000", stdout)

    def test_persistence_two_needs_two_runs_in_a_row(self):
        hist = os.path.join(self.tmp, "history.db")
        if os.path.exists(hist):
            os.remove(hist)

        def run(suite, ts):
            code, doc, _, _ = self.run_gate(suite, "--history", hist, "--timestamp", ts,
                                            "--run-id", ts, name="p")
            rec = lambda lst: [a for a in lst if a["metric"] == "recompiles"]
            return code, rec(doc["alerts"]), rec(doc["pending"])

        _, fired, pending = run(self.suite, "2026-12-01T00:00:00Z")
        self.assertEqual(fired, [])                       # a first run out of range: pending
        self.assertEqual(pending[0]["runs_out_of_range"], 1)
        _, fired, pending = run(self.calm, "2026-12-02T00:00:00Z")
        self.assertEqual((fired, pending), ([], []))      # in range
        _, fired, pending = run(self.suite, "2026-12-03T00:00:00Z")
        self.assertEqual(fired, [])                       # a blip after a good run: pending
        self.assertEqual(pending[0]["runs_out_of_range"], 1)
        _, fired, _ = run(self.suite, "2026-12-04T00:00:00Z")
        self.assertEqual(len(fired), 1)                   # two in a row: fires
        self.assertEqual(fired[0]["runs_out_of_range"], 2)
        self.assertEqual(fired[0]["persistence"], 2)
        db = sqlite3.connect(hist)
        self.assertEqual(db.execute("SELECT count(*) FROM runs").fetchone()[0], 4)
        self.assertEqual(db.execute("SELECT version FROM schema_version").fetchone()[0], 1)
        row = db.execute("SELECT eager_path, compiled_path, first_divergence FROM pairs WHERE "
                         "run_id = '2026-12-04T00:00:00Z' AND pair_id = 'rank/513-2048/seq768'").fetchone()
        self.assertTrue(row[0].endswith("eager.h5") and row[1].endswith("compiled.h5"))
        self.assertEqual(row[2], "/scores")
        cause = db.execute("SELECT tensor, op, affected_slice FROM local_causes WHERE run_id = "
                           "'2026-12-04T00:00:00Z'").fetchall()
        self.assertEqual([(t, op, json.loads(box)) for t, op, box in cause],
                         [("/scores", "softmax", [[3, 4], [0, 16]])])

    def test_without_history_every_alert_has_persistence_one(self):
        _, doc, _, _ = self.run_gate()
        self.assertTrue(all(a["persistence"] == 1 and a["runs_out_of_range"] == 1
                            for a in doc["alerts"]))
        self.assertEqual(doc["pending"], [])

    def test_shards_merged_equal_the_unsharded_run(self):
        _, whole, _, _ = self.run_gate()
        shards = []
        for i in range(3):
            out = os.path.join(self.tmp, "shard%d.json" % i)
            code, _, err = gate("--policy", self.policy, "--json", out, "--shard", "%d/3" % i,
                                "-q", self.suite)
            self.assertEqual(code, 0, err)
            shards.append(out)
        merged = os.path.join(self.tmp, "merged.json")
        code, _, err = gate("merge", "--policy", self.policy, "--traffic", self.traffic,
                            "--json", merged, "--timestamp", "2026-12-05T10:00:00Z",
                            "--run-id", "r1", "-q", *reversed(shards))
        self.assertEqual(code, 1, err)
        with open(merged) as f:
            doc = json.load(f)
        self.assertEqual(doc, whole)
        # a shard missing or given twice is trouble, not a smaller suite
        code, _, err = gate("merge", shards[0], shards[1])
        self.assertEqual((code, err.count("\n")), (2, 1))
        self.assertIn("missing", err)
        code, _, err = gate("merge", shards[0], shards[0], shards[1], shards[2])
        self.assertEqual((code, err.count("\n")), (2, 1))

    def test_manifest_suite_judges_like_the_folder(self):
        manifest = os.path.join(self.suite, "pairs.txt")
        with open(manifest, "w") as f:
            f.write("# eager compiled id\n")
            for d in ("chat/1-512/seq128", "rank/513-2048/seq768"):
                f.write("%s/eager.h5 %s/compiled.h5 %s\n" % (d, d, d))
        try:
            code, doc, _, _ = self.run_gate(manifest, name="m")
        finally:
            os.remove(manifest)
        self.assertEqual(code, 1)
        self.assertEqual([p["id"] for p in doc["pairs"]], ["chat/1-512/seq128", "rank/513-2048/seq768"])
        self.assertEqual([p["status"] for p in doc["pairs"]], ["pass", "fail"])

    def test_reports_are_written_and_read_by_their_readers(self):
        outs = {k: os.path.join(self.tmp, "out." + k) for k in ("xml", "om", "html", "mit")}
        code, doc, _, _ = self.run_gate(None, "--junit", outs["xml"], "--metrics", outs["om"],
                                        "--html", outs["html"], "--mitigations", outs["mit"])
        self.assertEqual(code, 1)
        p = subprocess.run(["xmllint", "--noout", "--schema", os.path.join(GATE_DIR, "junit.xsd"),
                            outs["xml"]], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        import xml.etree.ElementTree as ET
        root = ET.parse(outs["xml"]).getroot()
        failures = [tc.get("name") for tc in root.iter("testcase") if tc.find("failure") is not None]
        self.assertIn("rank/513-2048/seq768", failures)
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
        with open(outs["om"]) as f:
            fams = {m.name: m for m in text_string_to_metric_families(f.read())}
        rec = [s for s in fams["parity_gate_recompiles"].samples
               if s.labels.get("shape_bucket") == "2049-8192" and s.labels.get("side") == "compiled"]
        self.assertEqual(rec[0].value, 14)
        with open(outs["mit"]) as f:
            mit = json.load(f)
        self.assertEqual(mit["schema"], "parity-mitigations/1")
        self.assertEqual(mit["mitigations"], doc["mitigations"])
        with open(outs["html"]) as f:
            html = f.read()
        self.assertIn('id="gate-data"', html)
        self.assertNotRegex(html, r'(src|href)\s*=\s*"(https?:)?//')

    def test_corrupt_capture_is_that_pair_error_and_exit_2(self):
        suite = os.path.join(self.tmp, "corrupt")
        shutil.copytree(os.path.join(self.suite, "chat"), os.path.join(suite, "chat"))
        with open(os.path.join(suite, "chat/1-512/seq128/compiled.h5"), "r+b") as f:
            f.seek(0)
            f.write(b"\0" * 64)
        out = os.path.join(self.tmp, "corrupt.json")
        code, _, err = gate("--json", out, "-q", suite)
        self.assertEqual(code, 2)
        self.assertEqual(err.count("\n"), 1, err)
        self.assertIn("chat/1-512/seq128", err)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["verdict"], "error")
        st = {p["id"]: p["status"] for p in doc["pairs"]}
        self.assertEqual(st["chat/1-512/seq128"], "error")
        self.assertEqual(st["chat/1-512/seq512"], "pass")


class Documents(unittest.TestCase):
    def test_readme_shows_what_the_example_gate_prints(self):
        suite = os.path.join(os.path.dirname(PARITYDIFF), "gate-example")   # the build's
        code, out, err = gate("--policy", os.path.join(suite, "policy.yaml"), "--traffic",
                              os.path.join(suite, "traffic.csv"), "--timestamp",
                              "2026-12-05T12:00:00Z", "--run-id", "example", suite)
        self.assertEqual(code, 1, err)
        with open(os.path.join(GATE_DIR, "..", "..", "README.md")) as f:
            readme = f.read()
        self.assertIn("```\n" + out.rstrip("\n") + "\n```", readme)

    def test_gate_md_shows_the_schema_the_code_writes(self):
        code, schema, _ = gate("--history-schema")
        self.assertEqual(code, 0)
        with open(os.path.join(GATE_DIR, "..", "..", "diff", "GATE.md")) as f:
            doc = f.read()
        self.assertIn("```sql\n" + schema.rstrip("\n") + "\n```", doc)


class BadInput(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gate-bad-")
        self.suite = os.path.join(self.tmp, "suite")
        subprocess.run([MAKE_EXAMPLE, self.suite], check=True)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def one_line_exit_2(self, *args, expect=None):
        code, out, err = gate(*args)
        self.assertEqual(code, 2, (args, out, err))
        self.assertEqual(err.count("\n"), 1 + ("Try " in err), err)
        if expect:
            self.assertIn(expect, err)
        return err

    def policy(self, text):
        p = os.path.join(self.tmp, "policy.yaml")
        with open(p, "w") as f:
            f.write(text)
        return p

    def test_a_fifo_or_device_is_written_in_place_never_replaced(self):
        # the atomic writer renames a temporary file over its target: over /dev/null as
        # root that replaced the device with a plain file; a FIFO shows the same
        import stat, threading
        fifo = os.path.join(self.tmp, "report.fifo")
        for argv in ([PARITYDIFF, "gate", "-q", "--json", fifo, self.suite],
                     [PARITYDIFF, "gate", "-q", "--junit", fifo, self.suite],
                     [PARITYDIFF, "--json", fifo, os.path.join(self.suite, "chat/1-512/seq128/eager.h5"),
                      os.path.join(self.suite, "chat/1-512/seq128/compiled.h5")]):
            if os.path.exists(fifo):
                os.remove(fifo)
            os.mkfifo(fifo)
            got = []
            reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
            reader.start()
            p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
            reader.join(60)
            self.assertIn(p.returncode, (0, 1), p.stderr)
            self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode), argv)
            self.assertTrue(got and len(got[0]) > 100, argv)

    def test_bad_suites(self):
        self.one_line_exit_2(os.path.join(self.tmp, "nope"), expect="cannot open the suite")
        os.mkdir(os.path.join(self.tmp, "empty"))
        self.one_line_exit_2(os.path.join(self.tmp, "empty"), expect="no capture pairs")
        m = os.path.join(self.tmp, "m.txt")
        with open(m, "w") as f:
            f.write("a.h5 b.h5\nonly-one-field\n")
        self.one_line_exit_2(m, expect="m.txt:2:")
        with open(m, "w") as f:
            f.write("a.h5 b.h5 x\nc.h5 d.h5 x\n")
        self.one_line_exit_2(m, expect="used twice")

    def test_a_coarse_traffic_row_is_split_among_its_slices(self):
        t = os.path.join(self.tmp, "coarse.csv")
        with open(t, "w") as f:
            f.write("workload,share\nchat,0.8\nrank,0.2\n")
        out = os.path.join(self.tmp, "coarse.json")
        gate("--traffic", t, "--json", out, "-q", self.suite)
        with open(out) as f:
            doc = json.load(f)
        shares = {(s["labels"]["workload"], s["labels"]["shape_bucket"]): s["traffic_share"]
                  for s in doc["slices"]}
        self.assertAlmostEqual(shares[("chat", "1-512")], 0.8 / 3)
        self.assertAlmostEqual(shares[("rank", "2049-8192")], 0.1)
        self.assertAlmostEqual(sum(shares.values()), 1.0)
        self.assertAlmostEqual(doc["coverage"]["traffic_covered"], 1.0)

    def test_a_selector_key_becomes_a_label(self):
        # the policy selects by model, which is not a slice key: it joins the labels
        p = self.policy("version: 1\nrules:\n  - metric: numerical_parity\n    owner: a\n"
                        "    slice: {model: example-scorer}\n    normal: {min: 1}\n"
                        "    mitigation: none\n")
        out = os.path.join(self.tmp, "sel.json")
        code, _, err = gate("--policy", p, "--json", out, "-q", self.suite)
        self.assertEqual(code, 1, err)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["slice_keys"], ["workload", "shape_bucket", "model"])
        self.assertEqual([a["labels"] for a in doc["alerts"]],
                         [{"workload": "rank", "shape_bucket": "513-2048", "model": "example-scorer"}])

    def test_bad_policies_name_the_line(self):
        good = "version: 1\nrules:\n  - metric: recompiles\n    owner: a\n    normal: {max: 1}\n    mitigation: none\n"
        self.assertEqual(gate("--policy", self.policy(good), "-q", self.suite)[0], 1)
        cases = [
            (good.replace("recompiles", "recompile"), ":3: unknown metric 'recompile'"),
            (good.replace("    owner: a\n", "    owner: a\n    persistance: 2\n"), ":5: unknown key 'persistance'"),
            (good.replace("mitigation: none", "mitigation: reboot"), ":6: unknown mitigation"),
            (good.replace("metric: recompiles", "metric: numerical_parity").replace("{max: 1}", "{max_ratio: 1}"),
             ":5: metric numerical_parity has no eager value"),
            (good.replace("{max: 1}", "{max: fast}"), ":5: max must be a finite number"),
            (good.replace("    owner: a\n", ""), ":3: a rule needs an owner"),
            (good.replace("version: 1", "version: 2"), ":1: version must be 1"),
            ("version: 1\nrules: [\n", ": not YAML"),
            (good + "extra: 1\n", ":7: unknown key 'extra'"),
            (good.replace("persistence", "x") + "    persistence: 0\n", ":7: persistence must be"),
        ]
        for text, expect in cases:
            with self.subTest(expect=expect):
                self.one_line_exit_2("--policy", self.policy(text), self.suite, expect=expect)

    def test_bad_traffic_and_options(self):
        t = os.path.join(self.tmp, "t.csv")
        for text, expect in [("workload,shape_bucket\nchat,1-512\n", ":1: the header"),
                             ("workload,share\nchat,1.5\n", ":2: share '1.5'"),
                             ("workload,share\nchat\n", ":2: expected 2 fields"),
                             ("workload,share\na,0.7\nb,0.7\n", "more than 1"),
                             ("model,share\nm,0.5\n", ":1: 'model' is not a slice key")]:
            with open(t, "w") as f:
                f.write(text)
            with self.subTest(expect=expect):
                self.one_line_exit_2("--traffic", t, self.suite, expect=expect)
        self.one_line_exit_2("--shard", "2/2", self.suite, expect="invalid --shard")
        self.one_line_exit_2("--shard", "0/2", "--history", os.path.join(self.tmp, "h.db"),
                             self.suite, expect="--history is for unsharded")
        self.one_line_exit_2("--jobs", "0", self.suite, expect="invalid --jobs")
        self.one_line_exit_2("--history", self.suite, self.suite, expect="history")
        self.one_line_exit_2("merge", os.path.join(self.suite, "chat/1-512/seq128/eager.h5"),
                             expect="not a shard result")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
