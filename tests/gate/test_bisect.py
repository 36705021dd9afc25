"""paritydiff bisect over the nightly suites of the investigation example (the build's
investigation-example/nightN): the first bad version is night 6 for both alerts, found in
at most ceil(log2(n - 1)) steps between the two ends; a version the build command skips
(exit 125) leaves the candidates named; a failing build, ends that are not good then bad,
and bad options stop it with one line, exit 2.
argv: PARITYDIFF EXAMPLE_DIR (the build's investigation-example) POLICY."""
import json, math, os, subprocess, sys, tempfile, unittest

PARITYDIFF, EXAMPLE, POLICY = sys.argv[1:4]


def bisect(*args):
    p = subprocess.run([PARITYDIFF, "bisect", "--policy", POLICY, *args], capture_output=True,
                       text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


class Bisect(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def versions(self, with_suites=True, nights=range(1, 11)):
        path = os.path.join(self.tmp.name, "versions%d.txt" % len(os.listdir(self.tmp.name)))
        with open(path, "w") as f:
            f.write("# version [suite], oldest first\n")
            for n in nights:
                f.write("night%d%s\n" % (n, " " + os.path.join(EXAMPLE, "night%d" % n) if with_suites else ""))
        return path

    def test_finds_night_6_in_log_steps_for_both_alerts(self):
        limit = math.ceil(math.log2(10 - 1))
        for slice_, metric in (("workload=rank,shape_bucket=513-2048", "numerical_parity"),
                               ("workload=chat,shape_bucket=2049-8192", "recompiles")):
            code, out, err = bisect("--versions", self.versions(), "--slice", slice_,
                                    "--metric", metric, "--json", "-")
            self.assertEqual(code, 0, err)
            doc = json.loads(out)
            self.assertEqual(doc["first_bad"], "night6")
            self.assertLessEqual(doc["steps_taken"], limit)
            self.assertEqual([s["role"] for s in doc["steps"][:2]], ["first", "last"])
            self.assertEqual(len(doc["steps"]), doc["steps_taken"] + 2)

    def test_a_slice_that_never_fails_is_trouble(self):
        code, _, err = bisect("--versions", self.versions(), "--slice", "workload=chat,shape_bucket=1-512")
        self.assertEqual((code, err.count("\n")), (2, 1), err)
        self.assertIn("the first version must be good and the last bad", err)

    def test_a_command_builds_the_suites_and_125_skips(self):
        cmd = ("case {version} in night6) exit 125;; esac; "
               "cp -r %s/$PARITY_VERSION/. {suite}/" % EXAMPLE)
        code, out, err = bisect("--versions", self.versions(with_suites=False), "--cmd", cmd,
                                "--slice", "workload=rank", "--json", "-")
        self.assertEqual(code, 0, err)
        doc = json.loads(out)
        self.assertIsNone(doc["first_bad"])
        self.assertEqual(doc["candidates"], ["night6", "night7"])
        self.assertIn("skip", [s["state"] for s in doc["steps"]])
        code, out, err = bisect("--versions", self.versions(with_suites=False), "--cmd", cmd,
                                "--slice", "workload=rank")
        self.assertIn("one of (skipped versions hide which): night6 night7", out)

    def test_a_failing_build_stops_it(self):
        code, _, err = bisect("--versions", self.versions(with_suites=False),
                              "--cmd", "echo no compiler for {version} >&2; exit 3")
        self.assertEqual((code, err.count("\n")), (2, 1), err)
        self.assertIn("building version night1 failed (exit 3): no compiler for night1", err)

    def test_bad_options(self):
        for args, expect in ((["--versions", self.versions(), "--history", "h.db"], "invalid option"),
                             (["--versions", self.versions(with_suites=False)], "no --cmd builds one"),
                             (["--versions", self.versions(nights=[1])], "at least two versions"),
                             (["--versions", os.path.join(self.tmp.name, "none")], "cannot open the versions")):
            code, _, err = bisect(*args)
            self.assertEqual((code, err.count("\n")), (2, 1), err)
            self.assertIn(expect, err)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
