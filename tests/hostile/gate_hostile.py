#!/usr/bin/python3
"""gate_hostile.py - paritydiff gate over the hostile-capture battery (gen_hostile.py): a
suite with one pair per case and role (the case as the compiled side against the good
eager capture, and as the eager side against the good compiled one). Every pair must get
the status the battery's manifest allows paritydiff for that role (exit 0: pass, 1: fail,
2: error), the gate must end in one stderr line (exit 2: some pairs cannot be judged), and
every report must be written and read by its reader: JSON, JUnit (xmllint against
tests/gate/junit.xsd), OpenMetrics (prometheus-client), mitigations, HTML.

    /usr/bin/python3 tests/hostile/gate_hostile.py PARITYDIFF"""
import json, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CODE = {"pass": 0, "fail": 1, "error": 2}


def main():
    paritydiff = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="gate-hostile-") as tmp:
        files, suite = os.path.join(tmp, "files"), os.path.join(tmp, "suite")
        subprocess.run([sys.executable, os.path.join(HERE, "gen_hostile.py"), files], check=True,
                       stdout=subprocess.DEVNULL)
        manifest = {}
        for line in open(os.path.join(files, "manifest.jsonl")):
            m = json.loads(line)
            path = os.path.join(files, m.get("file", m["name"] + ".h5"))
            if "args" in m or not os.path.isfile(path):
                continue   # cases that need their own paritydiff arguments stay with run_hostile
            manifest[m["name"]] = m
            for role, good in (("compiled", "good_eager.h5"), ("eager", "good_compiled.h5")):
                d = os.path.join(suite, role, m["name"])
                os.makedirs(d)
                other = "eager.h5" if role == "compiled" else "compiled.h5"
                os.symlink(path, os.path.join(d, role + ".h5"))
                os.symlink(os.path.join(files, good), os.path.join(d, other))
        out = {k: os.path.join(tmp, "g." + k) for k in ("json", "xml", "om", "html", "mit")}
        p = subprocess.run([paritydiff, "gate", "-q", "--timeout", "60", "--json", out["json"],
                            "--junit", out["xml"], "--metrics", out["om"], "--html", out["html"],
                            "--mitigations", out["mit"], suite],
                           capture_output=True, text=True, timeout=1200)
        problems = []
        if p.returncode != 2 or p.stderr.count("\n") != 1:
            problems.append("gate: exit %d, stderr %r (want exit 2, one line)" % (p.returncode, p.stderr[-500:]))
        doc = json.load(open(out["json"]))
        seen = set()
        for pair in doc["pairs"]:
            role, name = pair["id"].split("/", 1)
            seen.add(pair["id"])
            allowed = manifest[name]["expect"][role]
            if CODE.get(pair["status"]) not in allowed and not manifest[name].get("known"):
                problems.append("%s: %s, the battery allows exits %s (%s)" %
                                (pair["id"], pair["status"], allowed, pair["error"]))
        if len(seen) != 2 * len(manifest):
            problems.append("%d pairs judged, %d in the suite" % (len(seen), 2 * len(manifest)))
        x = subprocess.run(["xmllint", "--noout", "--schema",
                            os.path.join(HERE, "..", "gate", "junit.xsd"), out["xml"]],
                           capture_output=True, text=True)
        if x.returncode != 0:
            problems.append("JUnit: " + x.stderr[-300:])
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
        try:
            list(text_string_to_metric_families(open(out["om"], encoding="utf-8").read()))
        except Exception as e:   # the parser's own errors
            problems.append("OpenMetrics: %s" % e)
        json.load(open(out["mit"]))
        if 'id="gate-data"' not in open(out["html"], encoding="utf-8").read():
            problems.append("HTML: no embedded document")
        for line in problems:
            print("gate_hostile: " + line, file=sys.stderr)
        print("gate_hostile: %d pairs, %d problems" % (len(seen), len(problems)))
        return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
