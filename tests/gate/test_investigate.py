"""paritydiff investigate on the example history the build writes (ten nightly gate runs,
scripts/make-investigation-example.sh; diff/INVESTIGATE.md): a compiler upgrade at night
6 breaks rank/513-2048 numerically and makes chat/2049-8192 recompile; night 3 has a
one-run recompile blip; data_version moves at night 4 without effect.

What must come out: night 6 as earliest known-bad and night 5 as last known-good for both
alerts (the blip ignored), the compiler's version and config as the changed keys (commit
and data_version shown as changing without effect), the failing tensor and its element
range, a passing neighbouring bucket of the same workload, the mitigation apart from the
root cause, the local cause minimized (--repro) to one row in a folder paritydiff fails;
and bad histories refused with one line, exit 2.
argv: PARITYDIFF HISTORY (the build's investigation-example/history.db)."""
import json, os, shutil, sqlite3, subprocess, sys, tempfile, unittest

PARITYDIFF, HISTORY = sys.argv[1:3]


def investigate(*args):
    p = subprocess.run([PARITYDIFF, "investigate", *args], capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


class ExampleHistory(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        code, out, err = investigate("--history", HISTORY, "--json", "-")
        assert code == 0, err
        cls.doc = json.loads(out)
        cls.by = {(i["metric"], i["slice"]): i for i in cls.doc["investigations"]}

    def inv(self, metric, slice_):
        return self.by[(metric, slice_)]

    def test_both_alerts_start_at_night_6_after_night_5(self):
        self.assertEqual(self.doc["run"]["id"], "nightly-10")
        for key in (("numerical_parity", "workload=rank,shape_bucket=513-2048"),
                    ("recompiles", "workload=chat,shape_bucket=2049-8192")):
            inv = self.inv(*key)
            self.assertEqual(inv["earliest_known_bad"],
                             {"run": "nightly-6", "timestamp": "2026-11-06T02:00:00Z"})
            self.assertEqual(inv["last_known_good"]["run"], "nightly-5")

    def test_the_blip_at_night_3_is_not_the_boundary(self):
        inv = self.inv("recompiles", "workload=chat,shape_bucket=2049-8192")
        self.assertEqual([b["run"] for b in inv["recovered_blips"]], ["nightly-3"])
        self.assertEqual(self.inv("numerical_parity", "workload=rank,shape_bucket=513-2048")
                         ["recovered_blips"], [])

    def test_the_changed_identity_keys_exactly(self):
        for inv in self.doc["investigations"]:
            changes = [(c["side"], c["key"], c["cleared_before"]) for c in inv["identity_changes"]]
            suspects = [(s, k) for s, k, cleared in changes if not cleared]
            self.assertEqual(sorted(suspects), [("compiled", "compiler_version"), ("compiled", "config_hash")])
            self.assertEqual(sorted((s, k) for s, k, cleared in changes if cleared),
                             [("compiled", "commit"), ("eager", "commit")])
            first = inv["identity_changes"][0]
            self.assertFalse(first["cleared_before"])      # suspects listed first
            self.assertEqual(inv["root_cause"]["suspects"],
                             ["compiled.compiler_version", "compiled.config_hash"])
            cleared = {(c["side"], c["key"]) for c in inv["identity_cleared"]}
            self.assertIn(("compiled", "data_version"), cleared)
            self.assertNotIn(("compiled", "compiler_version"), cleared)

    def test_smallest_slice_down_to_tensor_and_elements(self):
        inv = self.inv("numerical_parity", "workload=rank,shape_bucket=513-2048")
        small = inv["smallest_affected_slice"]
        self.assertEqual(small["labels"], {"workload": "rank", "shape_bucket": "513-2048"})
        self.assertEqual(small["tensors"], [{"tensor": "/scores", "op": "softmax",
                                             "elements": [[3, 4], [0, 16]],
                                             "pairs": ["rank/513-2048/seq768"]}])
        root = inv["root_cause"]
        self.assertEqual((root["kind"], root["tensor"], root["op"]), ("local_cause", "/scores", "softmax"))
        self.assertEqual(root["kernel"]["compiler_version"], "2.6.0")
        # the command it names shows the failure
        cmd = root["confirm"].split()
        self.assertEqual(subprocess.run([PARITYDIFF, "-q", *cmd[1:]]).returncode, 1)

    def test_local_cause_minimized_to_a_repro_paritydiff_fails(self):
        # without --repro none is made, and the report says how to make one
        root = self.inv("numerical_parity", "workload=rank,shape_bucket=513-2048")["root_cause"]
        self.assertIsNone(root["repro"])
        with tempfile.TemporaryDirectory() as tmp:
            code, out, err = investigate("--history", HISTORY, "--repro", tmp, "--json", "-")
            self.assertEqual((code, err), (0, ""))
            doc = json.loads(out)
            by = {(i["metric"], i["slice"]): i for i in doc["investigations"]}
            repro = by[("numerical_parity", "workload=rank,shape_bucket=513-2048")]["root_cause"]["repro"]
            path = os.path.join(tmp, "nightly-6_workload=rank,shape_bucket=513-2048_scores")
            # the corrupt row 3 of the boundary pair's [8, 16] softmax, alone and 1-minimal
            self.assertEqual((repro["path"], repro["shape"], repro["source_shape"], repro["offset"]),
                             (path, [1, 16], [8, 16], [3, 0]))
            self.assertTrue(repro["minimal"])
            self.assertEqual(repro["confirm"], "paritydiff %s/eager.h5 %s/compiled.h5" % (path, path))
            p = subprocess.run([PARITYDIFF, "--json", "-", *repro["confirm"].split()[1:]],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 1, p.stderr)
            rd = json.loads(p.stdout)
            self.assertEqual(rd["first_divergence"], "/scores")
            t = [t for t in rd["tensors"] if t["name"] == "/scores"][0]
            self.assertEqual((t["status"], t["cause"], t["shape"]), ("fail", "local", [1, 16]))
            # the same local cause of the outcome alert shares the folder; telemetry alerts
            # have no local cause to minimize
            self.assertEqual(by[("outcome_parity", "workload=rank,shape_bucket=513-2048")]
                             ["root_cause"]["repro"]["path"], path)
            self.assertNotIn("repro", by[("recompiles", "workload=chat,shape_bucket=2049-8192")]["root_cause"])
            self.assertEqual(sorted(os.listdir(tmp)), [os.path.basename(path)])
            code, text, _ = investigate("--history", HISTORY, "--repro", tmp, "--metric",
                                        "numerical_parity")
            self.assertIn("minimized repro: %s, [1,16] of [8,16] at [3,0]" % path, text)
        # a repro folder that cannot be made: the investigation stands, the repro says why
        with tempfile.TemporaryDirectory() as tmp:
            blocker = os.path.join(tmp, "file")
            open(blocker, "w").close()
            code, out, err = investigate("--history", HISTORY, "--repro", blocker, "--json", "-",
                                         "--metric", "numerical_parity")
            self.assertEqual(code, 0, err)
            repro = json.loads(out)["investigations"][0]["root_cause"]["repro"]
            self.assertIsNone(repro["path"])
            self.assertIn("parityfuzz shrink failed: ", repro["why"])

    def test_readme_shows_what_the_example_investigation_prints(self):
        # the README shows paths under build/ (any build folder: build-asan in CI)
        build = os.path.dirname(os.path.dirname(os.path.abspath(HISTORY)))
        with tempfile.TemporaryDirectory() as tmp:
            code, out, err = investigate("--history", HISTORY, "--metric", "numerical_parity",
                                         "--repro", tmp)
            self.assertEqual((code, err), (0, ""))
        out = out.replace(tmp, "/tmp/repros").replace(build + "/", "build/")
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")) as f:
            readme = f.read()
        self.assertIn("```\n" + out.rstrip("\n") + "\n```", readme)

    def test_counterexample_is_a_passing_neighbouring_bucket_of_the_same_workload(self):
        cx = self.inv("numerical_parity", "workload=rank,shape_bucket=513-2048")["known_good_counterexample"]
        self.assertEqual(cx["labels"], {"workload": "rank", "shape_bucket": "1-512"})
        self.assertEqual(cx["run"], "nightly-6")
        self.assertEqual(subprocess.run([PARITYDIFF, "-q", cx["eager"], cx["compiled"]]).returncode, 0)
        cx = self.inv("recompiles", "workload=chat,shape_bucket=2049-8192")["known_good_counterexample"]
        self.assertEqual(cx["labels"], {"workload": "chat", "shape_bucket": "513-2048"})

    def test_mitigation_apart_from_root_cause(self):
        inv = self.inv("numerical_parity", "workload=rank,shape_bucket=513-2048")
        self.assertEqual(inv["mitigation"], {"action": "eager_fallback", "owner": "numerics-oncall",
                                             "rule": "numerical_parity#1"})
        inv = self.inv("recompiles", "workload=chat,shape_bucket=2049-8192")
        self.assertEqual(inv["mitigation"]["action"], "mark_dynamic")
        self.assertEqual(inv["root_cause"]["kind"], "telemetry")

    def test_filters_and_an_earlier_run(self):
        code, out, _ = investigate("--history", HISTORY, "--json", "-", "--metric", "recompiles")
        self.assertEqual([i["metric"] for i in json.loads(out)["investigations"]], ["recompiles"])
        code, out, _ = investigate("--history", HISTORY, "--json", "-", "--slice", "workload=rank")
        self.assertEqual({i["slice"] for i in json.loads(out)["investigations"]},
                         {"workload=rank,shape_bucket=513-2048"})
        # as of night 3 the blip is pending (persistence 2): nothing fired, nothing to do
        code, out, _ = investigate("--history", HISTORY, "--json", "-", "--run", "nightly-3")
        self.assertEqual((code, json.loads(out)["investigations"]), (0, []))

    def test_text_report(self):
        code, out, _ = investigate("--history", HISTORY, "--metric", "numerical_parity")
        self.assertEqual(code, 0)
        self.assertIn("earliest known-bad: nightly-6 at 2026-11-06T02:00:00Z", out)
        self.assertIn("last known-good: nightly-5", out)
        self.assertIn("compiled.compiler_version: 2.5.0 -> 2.6.0", out)
        self.assertIn("tensor /scores (softmax), elements [3:4, 0:16]", out)


def investigate_edited(statement):
    """The numerical_parity investigation of a copy of the example history that one SQL
    statement changed."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "h.db")
        shutil.copy(HISTORY, db)
        con = sqlite3.connect(db)
        con.execute(statement)
        con.commit()
        con.close()
        code, out, err = investigate("--history", db, "--json", "-", "--metric", "numerical_parity")
        assert code == 0, err
        return json.loads(out)["investigations"][0]


class EditedHistories(unittest.TestCase):
    def test_a_run_that_did_not_measure_the_slice_is_skipped_not_good(self):
        # night 5 did not measure the broken slice: the last good run is then night 4
        inv = investigate_edited("DELETE FROM rule_states WHERE run_id = 'nightly-5' AND "
                                 "slice = 'workload=rank,shape_bucket=513-2048'")
        self.assertEqual(inv["earliest_known_bad"]["run"], "nightly-6")
        self.assertEqual(inv["last_known_good"]["run"], "nightly-4")
        self.assertEqual([r["run"] for r in inv["unknown_runs"]], ["nightly-5"])

    def test_a_slice_with_no_pair_in_the_bad_run_lists_no_identity_change(self):
        # found on real runs: a coverage alert's slice has no pair in its first bad run;
        # its absent identity must not read as every key removed, all of them suspects
        inv = investigate_edited("DELETE FROM pairs WHERE run_id = 'nightly-6' AND "
                                 "slice = 'workload=rank,shape_bucket=513-2048'")
        self.assertEqual(inv["identity_changes"], [])
        self.assertEqual(inv["root_cause"]["suspects"], [])
        self.assertIn("no pair in this slice", inv["identity_note"])


class BadInput(unittest.TestCase):
    def one_line_exit_2(self, *args, expect):
        code, out, err = investigate(*args)
        self.assertEqual((code, err.count("\n")), (2, 1), err)
        self.assertIn(expect, err)

    def test_bad_histories_and_options(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.one_line_exit_2("--history", os.path.join(tmp, "none.db"), expect="cannot open the history")
            empty = os.path.join(tmp, "empty.db")
            subprocess.run([PARITYDIFF, "gate", "--history-schema"], check=True, stdout=subprocess.DEVNULL)
            sqlite3.connect(empty).executescript(
                subprocess.run([PARITYDIFF, "gate", "--history-schema"], capture_output=True,
                               text=True).stdout + "INSERT INTO schema_version VALUES (1);")
            self.one_line_exit_2("--history", empty, expect="holds no runs")
            # another program's database: refused, and left as it was (no tables added)
            other = os.path.join(tmp, "other.db")
            con = sqlite3.connect(other)
            con.execute("CREATE TABLE t (x)")
            con.commit()
            con.close()
            self.one_line_exit_2("--history", other, expect="not a gate history")
            tables = sqlite3.connect(other).execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
            self.assertEqual(tables, [("t",)])
            junk = os.path.join(tmp, "junk.db")
            with open(junk, "w") as f:
                f.write("not a database\n" * 100)
            self.one_line_exit_2("--history", junk, expect="junk.db")
        self.one_line_exit_2("--history", HISTORY, "--run", "nightly-99", expect="no run with that id")
        self.one_line_exit_2(expect="missing --history")
        self.one_line_exit_2("--history", HISTORY, "--bogus", expect="invalid option")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
