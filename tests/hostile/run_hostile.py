#!/usr/bin/python3
"""run_hostile.py - runs paritydiff over the hostile-capture battery (gen_hostile.py) and
holds every run to the CLI's contract on hostile input (issue 14).

    /usr/bin/python3 tests/hostile/run_hostile.py [--paritydiff PATH] [--work DIR]
                                                 [--only NAME,...] [--jobs N]

PATH defaults to $PARITYDIFF. The battery is generated afresh into DIR (default: a
temporary folder, removed afterwards unless a case failed). Each case runs three ways:
as the eager side (against good_compiled.h5), as the compiled side (against
good_eager.h5) and against itself, each in a fresh child, and every run must:

  - exit with a code in the case's expected set, and never die of a signal;
  - finish within TIME_LIMIT_S seconds of wall time, or the case's max_seconds where it
    sets a tighter one (then it is killed);
  - peak at no more than RSS_LIMIT_MIB of resident memory, or the case's max_rss_mib
    (wait4's maxrss, which covers paritydiff's reading child too: the kernel folds reaped
    children into it);
  - on exit 2, write exactly one line to stderr, starting "paritydiff: " and not a warning
    (the one line of trouble), naming the case's file (the trouble is there, not in the
    good side) and holding the case's "error" substring;
  - start every stderr line with "paritydiff: " (a name from a capture that split a line
    would not), and on exit 0 or 1 print exactly one "verdict: " line on stdout (a forged
    one would be a second);
  - print no sanitizer report ("AddressSanitizer", "LeakSanitizer", "runtime error:", ...);
  - write no raw control character but newline on stdout or stderr: no C0 byte, DEL, or
    C1 control in UTF-8 (U+0080..U+009F: a terminal takes U+009B as CSI);
  - write a --json report that is valid UTF-8 JSON whenever it writes one.
The self run must also show the case's "warn" substring in some warning line.

The limits hold under ASan+UBSan too: PARITY_HOSTILE_SCALE (ctest sets it for the
sanitizer build, tests/CMakeLists.txt) multiplies both, since the sanitizers cost 2-3x time
and their shadow memory adds resident pages.

A case marked "known" in the manifest (a defect being fixed elsewhere) is reported as a
known failure and does not fail the battery; if it passes, the runner says the mark can go.
Exit status: 0 no violation, 1 violations (each listed), 2 the battery could not run.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TIME_LIMIT_S = 20.0        # per run, wall clock; scaled by PARITY_HOSTILE_SCALE
RSS_LIMIT_MIB = 512.0      # per run, peak resident set; scaled likewise
SCALE = float(os.environ.get("PARITY_HOSTILE_SCALE", "1") or "1")

SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                   "ThreadSanitizer", "MemorySanitizer", "runtime error:")
# C0 controls but newline, DEL, and the C1 controls as UTF-8 (0xC2 0x80..0x9F)
CONTROL = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
PREFIX = b"paritydiff: "
WARNING = b"paritydiff: warning: "
HERE = os.path.dirname(os.path.abspath(__file__))


def run_once(argv, json_path, limit_s):
    """Runs argv in its own process group; returns (code or None, signal or None,
    timed_out, seconds, maxrss_mib, stdout, stderr, json bytes or None)."""
    if os.path.exists(json_path):
        os.unlink(json_path)
    out_f = tempfile.TemporaryFile()
    err_f = tempfile.TemporaryFile()
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out_f, stderr=err_f,
                            start_new_session=True)
    timed_out = False
    status = rusage = None
    # wait4 (not Popen.wait) for the child's own rusage: its maxrss covers its reaped
    # children, so this run's peak is measured alone even when runs go in parallel.
    while True:
        pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        if time.monotonic() - t0 > limit_s:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            pid, status, rusage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.005)
    seconds = time.monotonic() - t0
    proc.returncode = 0   # reaped above; keep Popen from waiting again
    try:
        os.killpg(proc.pid, signal.SIGKILL)   # a grandchild left behind must not linger
    except ProcessLookupError:
        pass
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    out_f.seek(0)
    err_f.seek(0)
    report = None
    if os.path.exists(json_path):
        with open(json_path, "rb") as j:
            report = j.read()
    return (code, sig, timed_out, seconds, rusage.ru_maxrss / 1024.0, out_f.read(),
            err_f.read(), report)


def escaped(path):
    """A path as paritydiff's one line spells it (formats/escape.h: C escapes for controls)."""
    return path.encode("unicode_escape")


def check_run(entry, way, result, limits, bad):
    """The contract for one run of the case whose file is bad; returns the violations."""
    code, sig, timed_out, seconds, rss, out, err, report = result
    problems = []
    want = entry["expect"][way]
    if timed_out:
        problems.append("killed after %.0f s (limit)" % limits[0])
    elif sig is not None:
        problems.append("died of signal %d" % sig)
    elif code not in want:
        problems.append("exit %s, want one of %s" % (code, want))
    # Whatever the manifest says: a capture diffed against itself has no divergence, so
    # a failure there is a false alarm (exit 2, a refusal, stays possible).
    if way == "self" and code == 1 and not entry.get("self_fails"):
        problems.append("a capture against itself failed (exit 1): a false alarm")
    if rss > limits[1]:
        problems.append("peak RSS %.0f MiB over %.0f MiB" % (rss, limits[1]))
    for mark in SANITIZER_MARKS:
        if mark.encode() in err or mark.encode() in out:
            problems.append("sanitizer report (%s)" % mark)
            break
    lines = err.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if any(not ln.startswith(PREFIX) for ln in lines):
        bad = next(ln for ln in lines if not ln.startswith(PREFIX))
        problems.append("stderr line not from paritydiff: %r" % bad[:120])
    if code == 2 and not timed_out:
        if len(lines) != 1 or lines[0].startswith(WARNING):
            problems.append("exit 2 with %d stderr lines (want one error line): %r"
                            % (len(lines), err[:300]))
        elif entry.get("error") and entry["error"].encode() not in lines[0]:
            problems.append("error line lacks %r: %r" % (entry["error"], lines[0][:300]))
        elif escaped(bad) not in lines[0]:
            # the trouble is in the case's file: the line must name it, not the good one
            problems.append("error line does not name %s: %r" % (bad, lines[0][:300]))
    if code in (0, 1) and "--quiet" not in entry.get("args", []):
        verdicts = sum(1 for ln in out.split(b"\n") if ln.startswith(b"verdict: "))
        if verdicts != 1:
            problems.append("%d 'verdict: ' lines on stdout, want 1" % verdicts)
    for stream, data in (("stdout", out), ("stderr", err)):
        m = CONTROL.search(data)
        if m:
            problems.append("raw control character %r on %s near %r"
                            % (m.group(0), stream, data[max(0, m.start() - 40):m.end() + 20]))
    if report is not None:
        try:
            json.loads(report.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            problems.append("--json report is not valid UTF-8 JSON: %s" % str(e)[:120])
    if way == "self" and entry.get("warn") and code in (0, 1):
        if not any(ln.startswith(WARNING) and entry["warn"].encode() in ln for ln in lines):
            problems.append("no warning containing %r: %r" % (entry["warn"], err[:300]))
    return problems


def run_case(paritydiff, folder, entry, limits):
    bad = os.path.join(folder, entry.get("file", entry["name"] + ".h5"))
    good_e = os.path.join(folder, "good_eager.h5")
    good_c = os.path.join(folder, "good_compiled.h5")
    pairs = {"eager": (bad, good_c), "compiled": (good_e, bad), "self": (bad, bad)}
    results, problems = {}, []
    # the case's own, tighter limits, scaled like the defaults
    limits = (min(limits[0], entry.get("max_seconds", TIME_LIMIT_S) * SCALE),
              min(limits[1], entry.get("max_rss_mib", RSS_LIMIT_MIB) * SCALE))
    for way, (e, c) in pairs.items():
        json_path = os.path.join(folder, "%s.%s.json" % (entry["name"], way))
        argv = [paritydiff] + entry.get("args", []) + ["--json", json_path, e, c]
        results[way] = run_once(argv, json_path, limits[0])
        for p in check_run(entry, way, results[way], limits, bad):
            problems.append("%s as %s: %s\n    reproduce: %s" % (
                entry["name"], way, p, " ".join(shlex.quote(a) for a in argv)))
    return entry, results, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paritydiff", default=os.environ.get("PARITYDIFF"))
    ap.add_argument("--work", help="folder for the battery (default: a temporary one)")
    ap.add_argument("--only", help="comma-separated case names")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()
    if not args.paritydiff or not os.access(args.paritydiff, os.X_OK):
        print("run_hostile: no paritydiff binary (--paritydiff or PARITYDIFF)", file=sys.stderr)
        return 2
    paritydiff = os.path.abspath(args.paritydiff)
    limits = (TIME_LIMIT_S * SCALE, RSS_LIMIT_MIB * SCALE)
    folder = args.work or tempfile.mkdtemp(prefix="hostile-")
    t0 = time.monotonic()
    gen = subprocess.run([sys.executable, os.path.join(HERE, "gen_hostile.py"), folder])
    if gen.returncode != 0:
        print("run_hostile: gen_hostile.py failed (exit %d)" % gen.returncode, file=sys.stderr)
        return 2
    t_gen = time.monotonic() - t0
    with open(os.path.join(folder, "manifest.jsonl")) as m:
        entries = [json.loads(line) for line in m if line.strip()]
    if args.only:
        wanted = set(args.only.split(","))
        entries = [e for e in entries if e["name"] in wanted]
        assert entries, "no case named " + args.only
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        done = list(pool.map(lambda e: run_case(paritydiff, folder, e, limits), entries))

    failures, known, unmarked = [], [], []
    print("%-36s %4s %4s %4s %7s %8s  %s" % ("case", "eagr", "comp", "self", "max s",
                                             "max MiB", "result"))
    for entry, results, problems in done:
        def show(r):
            return "T" if r[2] else ("S%d" % r[1] if r[1] is not None else str(r[0]))
        status = "ok"
        if problems and entry.get("known"):
            status = "KNOWN (%s)" % entry["known"]
            known.extend(problems)
        elif problems:
            status = "FAIL"
            failures.extend(problems)
        elif entry.get("known"):
            status = ("ok, known mark can go (%s)" % entry["known"] if SCALE == 1 else
                      "ok under limits x%g (known: %s)" % (SCALE, entry["known"]))
            unmarked.append(entry["name"])
        print("%-36s %4s %4s %4s %7.2f %8.1f  %s" % (
            entry["name"][:36], show(results["eager"]), show(results["compiled"]),
            show(results["self"]), max(r[3] for r in results.values()),
            max(r[4] for r in results.values()), status))
    print("\n%d cases, 3 runs each, in %.1f s (generation %.1f s); limits per run %.0f s and "
          "%.0f MiB (scale %g)" % (len(done), time.monotonic() - t0, t_gen, limits[0],
                                   limits[1], SCALE))
    if known:
        print("\nknown failures (marked in the manifest, not failing the battery):")
        for p in known:
            print("  " + p)
    if failures:
        print("\nVIOLATIONS (%d):" % len(failures))
        for p in failures:
            print("  " + p)
        print("\nthe battery is kept in %s" % folder)
        return 1
    print("\nno violation")
    if not args.work:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
