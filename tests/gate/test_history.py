"""The gate's run history on both back ends (diff/GATE.md, "History and persistence";
diff/history_backend.h): the same tests run against an SQLite file and against a real
PostgreSQL server, and must give the same answers.

    test_history.py PARITYDIFF MAKE_GATE_EXAMPLE POLICY sqlite|postgresql

For postgresql the test starts a throwaway cluster from Debian's postgresql: initdb and
postgres refuse to run as root, so as root they run as the `postgres` user (runuser), in a
temporary folder it owns, listening on a Unix socket only (listen_addresses=''), and the
cluster is stopped whatever happens. A server that cannot start fails the tests; they are
never skipped."""
import glob, json, os, shutil, sqlite3, subprocess, sys, tempfile, threading, unittest

PARITYDIFF, MAKE_EXAMPLE, POLICY, BACKEND = sys.argv[1:5]


class Server:
    """A throwaway PostgreSQL cluster on a Unix socket."""

    def __init__(self):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not bins:
            raise RuntimeError("no PostgreSQL server installed (scripts/setup-deps.sh installs postgresql)")
        self.bin = os.path.dirname(bins[-1])
        self.dir = tempfile.mkdtemp(prefix="parity-pg-")
        self.root = os.geteuid() == 0
        if self.root:
            shutil.chown(self.dir, "postgres", "postgres")
        self.data, self.sock, self.port = os.path.join(self.dir, "data"), self.dir, 5499
        self.n = 0
        try:
            self.as_owner([os.path.join(self.bin, "initdb"), "-D", self.data, "-A", "trust",
                           "-U", "postgres", "--no-sync"])
            self.as_owner([os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-w", "-l",
                           os.path.join(self.dir, "log"), "-o",
                           "-c listen_addresses='' -k %s -p %d -c fsync=off" % (self.sock, self.port),
                           "start"])
        except Exception:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    def as_owner(self, argv):
        if self.root:
            argv = ["runuser", "-u", "postgres", "--"] + argv
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError("%s failed: %s" % (argv[-1], (p.stderr or p.stdout)[-500:]))

    def new_database(self):
        self.n += 1
        name = "gate%d" % self.n
        self.as_owner([os.path.join(self.bin, "psql"), "-h", self.sock, "-p", str(self.port),
                       "-U", "postgres", "-q", "-c", "CREATE DATABASE %s" % name])
        return "postgresql:///%s?host=%s&port=%d&user=postgres" % (name, self.sock, self.port)

    def sql(self, uri, statement):
        db = uri.split("///")[1].split("?")[0]
        self.as_owner([os.path.join(self.bin, "psql"), "-h", self.sock, "-p", str(self.port),
                       "-U", "postgres", "-q", "-d", db, "-c", statement])

    def stop(self):
        try:
            self.as_owner([os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-m", "immediate", "stop"])
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


SERVER = None


def new_history(tmp):
    if BACKEND == "postgresql":
        return SERVER.new_database()
    return os.path.join(tmp, "history%d.db" % len(os.listdir(tmp)))


def gate(history, suite, ts, run_id):
    p = subprocess.run([PARITYDIFF, "gate", "-q", "--policy", POLICY, "--history", history,
                        "--timestamp", ts, "--run-id", run_id, "--json", "-", suite],
                       capture_output=True, text=True, timeout=300)
    return p.returncode, (json.loads(p.stdout) if p.stdout else None), p.stderr


class History(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gate-history-")
        cls.suites = {}
        for n in range(1, 11):
            d = os.path.join(cls.tmp, "night%d" % n)
            subprocess.run([MAKE_EXAMPLE, d, "--night", str(n)], check=True)
            cls.suites[n] = d
        cls.dbdir = os.path.join(cls.tmp, "db")
        os.mkdir(cls.dbdir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def nightly(self, history, nights):
        out = {}
        for n in nights:
            code, doc, err = gate(history, self.suites[n], "2026-11-%02dT02:00:00Z" % n, "nightly-%d" % n)
            self.assertIn(code, (0, 1), err)
            out[n] = doc
        return out

    def test_persistence_over_the_nights(self):
        docs = self.nightly(new_history(self.dbdir), range(1, 8))
        rec = lambda d, lst: [a["runs_out_of_range"] for a in d[lst] if a["metric"] == "recompiles"]
        self.assertEqual(rec(docs[3], "pending"), [1])      # the blip: pending
        self.assertEqual(rec(docs[4], "pending"), [])
        self.assertEqual(rec(docs[6], "pending"), [1])      # after the upgrade: pending ...
        self.assertEqual(rec(docs[7], "alerts"), [2])       # ... then fires
        num = [a for a in docs[6]["alerts"] if a["metric"] == "numerical_parity"]
        self.assertEqual(len(num), 1)

    def test_investigation_reads_the_same_from_this_back_end(self):
        history = new_history(self.dbdir)
        self.nightly(history, range(1, 11))
        p = subprocess.run([PARITYDIFF, "investigate", "--history", history, "--json", "-"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        by = {(i["metric"], i["slice"]): i for i in json.loads(p.stdout)["investigations"]}
        for key in (("numerical_parity", "workload=rank,shape_bucket=513-2048"),
                    ("recompiles", "workload=chat,shape_bucket=2049-8192")):
            inv = by[key]
            self.assertEqual(inv["earliest_known_bad"]["run"], "nightly-6")
            self.assertEqual(inv["last_known_good"]["run"], "nightly-5")
            self.assertEqual(inv["root_cause"]["suspects"],
                             ["compiled.compiler_version", "compiled.config_hash"])
        self.assertEqual([b["run"] for b in by[("recompiles", "workload=chat,shape_bucket=2049-8192")]
                          ["recovered_blips"]], ["nightly-3"])
        self.assertEqual(by[("numerical_parity", "workload=rank,shape_bucket=513-2048")]
                         ["smallest_affected_slice"]["tensors"][0]["elements"], [[3, 4], [0, 16]])

    def test_two_appenders_at_once(self):
        # two gates create the schema of an empty history and append at the same moment
        history = new_history(self.dbdir)
        results = {}

        def one(n):
            results[n] = gate(history, self.suites[n], "2026-11-%02dT02:00:00Z" % n, "nightly-%d" % n)

        threads = [threading.Thread(target=one, args=(n,)) for n in (6, 7)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for n in (6, 7):
            self.assertEqual(results[n][0], 1, results[n][2])
        self.assertEqual(self.runs(history), ["nightly-6", "nightly-7"])
        # a run id given twice is refused, and leaves nothing half written
        code, _, err = gate(history, self.suites[8], "2026-11-08T02:00:00Z", "nightly-7")
        self.assertEqual(code, 2)
        self.assertEqual(err.count("\n"), 1, err)
        self.assertEqual(self.runs(history), ["nightly-6", "nightly-7"])

    def runs(self, history):
        """The nightly runs the history holds, as investigate finds them (--run)."""
        return ["nightly-%d" % n for n in range(1, 11)
                if subprocess.run([PARITYDIFF, "investigate", "--history", history, "--run",
                                   "nightly-%d" % n, "-q"], capture_output=True).returncode == 0]

    def test_another_schema_version_is_refused(self):
        history = new_history(self.dbdir)
        self.nightly(history, [1])
        if BACKEND == "postgresql":
            SERVER.sql(history, "UPDATE schema_version SET version = 99")
        else:
            con = sqlite3.connect(history)
            con.execute("UPDATE schema_version SET version = 99")
            con.commit()
            con.close()
        code, _, err = gate(history, self.suites[2], "2026-11-02T02:00:00Z", "nightly-2")
        self.assertEqual(code, 2)
        self.assertEqual(err.count("\n"), 1, err)
        self.assertIn("schema version 99", err)


if __name__ == "__main__":
    if BACKEND == "postgresql":
        SERVER = Server()   # raises, and the test fails, when the server cannot start
    try:
        ok = unittest.main(argv=sys.argv[:1], verbosity=2, exit=False).result.wasSuccessful()
    finally:
        if SERVER:
            SERVER.stop()
    sys.exit(0 if ok else 1)
