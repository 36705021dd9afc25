#!/usr/bin/env python3
"""test_gate_html.py - the gate's HTML page (reports/report_gate_html.c) as a browser shows it.

    test_gate_html.py GATE_RENDER GATE_TEST_DIR

GATE_RENDER is tests/tools/gate_render (`gate_render DOC.json --html OUT.html`), GATE_TEST_DIR
this folder (sample.json). Each page is opened in headless Chromium (`--dump-dom`, after its
scripts ran) and the DOM it built is checked against the JSON document it embeds: the figures
must say what the document says, not merely exist.

The page's DOM contract, which check_page() holds it to (and other tools may rely on):
  body data-rendered="1"         set as the drawing script's last act
  body data-errors="N"           uncaught script errors (0 when none)
  #static-summary data-verdict data-alerts data-pending
                                 written by C, readable without script; hidden after drawing
  #verdict data-verdict data-alerts data-pending            the drawn banner
  heatmap cells: <rect data-slice data-metric data-value data-state> in #heatmap-svg, one per
    slice and column. data-slice is "key=value,..." (slice_keys order, other keys sorted);
    data-metric is numerical_parity, outcome_parity, recompiles, fallback_rate, p99_ratio,
    compile_time_s, coverage, plus any other metric a slice's metrics or an alert names;
    data-value is the number ("" for null): metrics[METRIC].value when the slice has that
    entry (p99_ratio: metrics.p99_latency_ms value / eager), else the figure it is defined by
    (telemetry.compiled.*, outcome_agreement, parity pass / (pass + fail + error), coverage
    1 when some pair was judged); data-state is alert | pending (an alert or pending entry
    names the slice's labels and that metric; p99_ratio answers to p99_latency_ms), ok (the
    slice's metrics hold it, non-null), unknown (held, null) or none (no metrics entry).
  latency bars: <rect data-slice data-side=eager|compiled data-stat=p50|p99 data-value> in
    #latency-svg, four per slice, data-value "" when telemetry lacks it
  ULP bars: <rect data-pair data-tensor data-bucket data-count>, one per ulp_hist bucket of
    every pairs[].local_causes[] with an ulp_hist
  alert rows: <tr data-kind=alert|pending data-rule data-metric data-slice data-owner
    data-mitigation data-value> in #alerts-table, in document order
  affected rows: <tr data-pair data-tensor data-op data-affected="[lo:hi, ...]"> in
    #affected-table; p99 rows: <tr data-rank data-slice data-score> in #p99-table;
  pair rows: <tr data-pair data-status> in #pairs-table
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from html.parser import HTMLParser

GATE_RENDER = None
GATE_DIR = None
CHROMIUM = None

FIXED_COLUMNS = [("numerical_parity", "numerical_parity"), ("outcome_parity", "outcome_parity"),
                 ("recompiles", "recompiles"), ("fallback_rate", "fallback_rate"),
                 ("p99_ratio", "p99_latency_ms"), ("compile_time_s", "compile_time_s"),
                 ("coverage", "coverage")]
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
URL_ATTRS = {"src", "href", "xlink:href", "action", "formaction", "poster", "srcset",
             "background", "data", "codebase", "cite", "manifest"}


# ---- a small DOM from html.parser ------------------------------------------------------

class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children = []   # Nodes and str

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.walk()


class TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: ("" if v is None else v) for k, v in attrs}, self.cur)
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, {k: ("" if v is None else v) for k, v in attrs},
                                      self.cur))

    def handle_endtag(self, tag):
        node = self.cur
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.cur = node.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse(html):
    builder = TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


def by_id(root, ident):
    for n in root.walk():
        if n.attrs.get("id") == ident:
            return n
    raise AssertionError("no element with id %r" % ident)


# ---- the figures the document implies (the page's rules, restated) ---------------------

def num(x):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return x if math.isfinite(x) else None


def obj(x):
    return x if isinstance(x, dict) else {}


def arr(x):
    return x if isinstance(x, list) else []


def text_of(x):
    if x is None:
        return ""
    return x if isinstance(x, str) else json.dumps(x, separators=(",", ":"))


def label_pairs(doc, labels):
    labels = obj(labels)
    keys = [k for k in arr(doc.get("slice_keys")) if isinstance(k, str) and k in labels]
    keys += [k for k in sorted(labels) if k not in keys]
    return tuple((k, text_of(labels[k])) for k in keys)


def slice_name(doc, labels):
    return ",".join("%s=%s" % p for p in label_pairs(doc, labels))


def columns(doc):
    cols = list(FIXED_COLUMNS)
    known = [m for _, m in cols]
    names = [m for s in arr(doc.get("slices")) for m in obj(obj(s).get("metrics"))]
    names += [obj(a).get("metric") for a in arr(doc.get("alerts")) + arr(doc.get("pending"))]
    for m in names:
        if isinstance(m, str) and m and m not in known:
            known.append(m)
            cols.append((m, m))
    return cols


def cell_value(s, col, metric):
    metrics = obj(s.get("metrics"))
    m, ruled = obj(metrics.get(metric)), metric in metrics
    tel = obj(s.get("telemetry"))
    te, tc = obj(tel.get("eager")), obj(tel.get("compiled"))
    if col == "p99_ratio":
        c = num(m.get("value")) if ruled else num(tc.get("p99_ms"))
        e = num(m.get("eager")) if ruled else num(te.get("p99_ms"))
        return c / e if c is not None and e is not None and e != 0 else None
    if ruled:
        return num(m.get("value"))
    p = obj(s.get("parity"))
    judged = sum(num(p.get(k)) or 0 for k in ("pass", "fail", "error"))
    if col == "numerical_parity":
        return (num(p.get("pass")) or 0) / judged if judged > 0 else None
    if col == "outcome_parity":
        return num(s.get("outcome_agreement"))
    if col == "coverage":
        return (1 if judged > 0 else 0) if "parity" in s else None
    return num(tc.get(col))


def ranges(a):
    if not isinstance(a, list):
        return "n/a"

    def show(v):
        v = num(v)
        if v is None:
            return "n/a"
        return str(int(v)) if float(v).is_integer() else repr(v)
    return "[" + ", ".join("%s:%s" % (show(arr(r)[0] if arr(r) else None),
                                      show(arr(r)[1] if len(arr(r)) > 1 else None))
                           for r in a) + "]"


# ---- the check ------------------------------------------------------------------------

def same_number(attr, expected, what):
    if expected is None:
        if attr != "":
            raise AssertionError("%s: page shows %r, document has null" % (what, attr))
        return
    if attr == "" or attr is None:
        raise AssertionError("%s: page shows nothing, document has %r" % (what, expected))
    got = float(attr)
    if not math.isclose(got, expected, rel_tol=1e-12, abs_tol=0.0):
        raise AssertionError("%s: page shows %r, document has %r" % (what, attr, expected))


def check_no_network(root, where):
    for n in root.walk():
        if n.tag in ("link", "img", "iframe", "object", "embed", "base", "audio", "video"):
            raise AssertionError("%s: a <%s> element" % (where, n.tag))
        for k, v in n.attrs.items():
            if k.startswith("on"):
                raise AssertionError("%s: an event handler attribute %s on <%s>" % (where, k, n.tag))
            if k in URL_ATTRS and re.match(r"\s*(https?:|//|ftp:|ws)", v, re.I):
                raise AssertionError("%s: <%s %s=%r> fetches from the network" % (where, n.tag, k, v))
        if n.tag == "style" and re.search(r"url\(|@import", n.text(), re.I):
            raise AssertionError("%s: the style sheet loads a resource" % where)


def check_page(raw, dom, doc):
    """Raises AssertionError unless the rendered page (dom, after scripts) draws doc."""
    raw_root, root = parse(raw), parse(dom)
    check_no_network(raw_root, "page")
    check_no_network(root, "rendered page")
    body = next(n for n in root.walk() if n.tag == "body")
    if body.attrs.get("data-errors", "0") != "0":
        raise AssertionError("script errors: %s (%s)" % (
            body.attrs["data-errors"], by_id(root, "gate-errors").text().strip()))
    if body.attrs.get("data-rendered") != "1":
        raise AssertionError("the drawing script did not finish (no data-rendered=1)")
    scripts = [n for n in raw_root.walk() if n.tag == "script"]
    if [s.attrs.get("id") for s in scripts] != ["gate-onerror", "gate-data", "gate-draw"]:
        raise AssertionError("scripts of the page: %r" % [s.attrs for s in scripts])
    if len([n for n in root.walk() if n.tag == "script"]) != 3:
        raise AssertionError("the rendered page has a script element it was not written with")

    alerts = [obj(a) for a in arr(doc.get("alerts"))]
    pending = [obj(a) for a in arr(doc.get("pending"))]
    verdict = text_of(doc.get("verdict"))
    for ident in ("static-summary", "verdict"):
        n = by_id(root, ident)
        want = {"data-verdict": verdict, "data-alerts": str(len(alerts)),
                "data-pending": str(len(pending))}
        got = {k: n.attrs.get(k) for k in want}
        if got != want:
            raise AssertionError("#%s says %r, the document %r" % (ident, got, want))

    # Heatmap: exactly one cell per slice and column, holding the document's value.
    slices = [obj(s) for s in arr(doc.get("slices"))]
    states = {}
    for a in pending:
        states[(label_pairs(doc, a.get("labels")), text_of(a.get("metric")))] = "pending"
    for a in alerts:
        states[(label_pairs(doc, a.get("labels")), text_of(a.get("metric")))] = "alert"
    heat = by_id(root, "heatmap-svg")
    cells = {}
    for n in heat.walk():
        if n.tag == "rect" and "data-state" in n.attrs:
            key = (n.attrs.get("data-slice"), n.attrs.get("data-metric"))
            if key in cells:
                raise AssertionError("two heatmap cells for %r" % (key,))
            cells[key] = n.attrs
    want_keys = set()
    for s in slices:
        name = slice_name(doc, s.get("labels"))
        for col, metric in columns(doc):
            want_keys.add((name, col))
            cell = cells.get((name, col))
            if cell is None:
                raise AssertionError("no heatmap cell for %s / %s" % (name, col))
            same_number(cell.get("data-value"), cell_value(s, col, metric),
                        "heatmap %s / %s" % (name, col))
            want = states.get((label_pairs(doc, s.get("labels")), metric))
            st = cell.get("data-state")
            if want is not None and st != want:
                raise AssertionError("heatmap %s / %s is %s, the document has an %s" % (
                    name, col, st, want))
            if want is None and st not in ("ok", "unknown", "none"):
                raise AssertionError("heatmap %s / %s is %s with no alert" % (name, col, st))
    if set(cells) != want_keys:
        raise AssertionError("heatmap cells for no slice: %r" % sorted(set(cells) - want_keys))

    # Latency bars: four per slice, equal to the slice's telemetry.
    lat = by_id(root, "latency-svg")
    bars = {}
    for n in lat.walk():
        if n.tag == "rect" and "data-side" in n.attrs:
            bars[(n.attrs.get("data-slice"), n.attrs["data-side"], n.attrs.get("data-stat"))] = \
                n.attrs.get("data-value")
    want_bars = set()
    for s in slices:
        name, tel = slice_name(doc, s.get("labels")), obj(s.get("telemetry"))
        for side in ("eager", "compiled"):
            for stat in ("p50", "p99"):
                want_bars.add((name, side, stat))
                if (name, side, stat) not in bars:
                    raise AssertionError("no %s %s bar for %s" % (side, stat, name))
                same_number(bars[(name, side, stat)], num(obj(tel.get(side)).get(stat + "_ms")),
                            "latency %s %s %s" % (name, side, stat))
    if set(bars) != want_bars:
        raise AssertionError("latency bars for no slice: %r" % sorted(set(bars) - want_bars))

    # ULP bars: one per bucket of every local cause's histogram.
    ulp = {}
    for n in root.walk():
        if n.tag == "rect" and "data-bucket" in n.attrs:
            key = (n.attrs.get("data-pair"), n.attrs.get("data-tensor"), int(n.attrs["data-bucket"]))
            if key in ulp:
                raise AssertionError("two ULP bars for %r" % (key,))
            ulp[key] = n.attrs.get("data-count")
    want_ulp = {}
    causes = []
    for p in arr(doc.get("pairs")):
        for c in arr(obj(p).get("local_causes")):
            c = obj(c)
            causes.append((text_of(obj(p).get("id")), c))
            if isinstance(c.get("ulp_hist"), list):
                for k, count in enumerate(c["ulp_hist"]):
                    want_ulp[(text_of(obj(p).get("id")), text_of(c.get("name")), k)] = \
                        num(count) if num(count) is not None else 0
    if set(ulp) != set(want_ulp):
        raise AssertionError("ULP bars differ: page only %r, document only %r" % (
            sorted(set(ulp) - set(want_ulp))[:5], sorted(set(want_ulp) - set(ulp))[:5]))
    for key, count in want_ulp.items():
        same_number(ulp[key], count, "ULP bar %r" % (key,))

    # Alert rows, in document order, pending after alerts.
    rows = [n.attrs for n in by_id(root, "alerts-table").walk()
            if n.tag == "tr" and "data-kind" in n.attrs]
    want_rows = [(kind, text_of(a.get("rule")), text_of(a.get("metric")),
                  slice_name(doc, a.get("labels")), text_of(a.get("owner")),
                  text_of(a.get("mitigation")))
                 for kind, lst in (("alert", alerts), ("pending", pending)) for a in lst]
    got_rows = [(r["data-kind"], r.get("data-rule"), r.get("data-metric"), r.get("data-slice"),
                 r.get("data-owner"), r.get("data-mitigation")) for r in rows]
    if got_rows != want_rows:
        raise AssertionError("alert rows %r, document %r" % (got_rows, want_rows))
    for r, a in zip(rows, alerts + pending):
        same_number(r.get("data-value"), num(a.get("value")), "alert %s value" % a.get("rule"))

    # Affected slices: one row per local cause.
    got_aff = [(n.attrs.get("data-pair"), n.attrs.get("data-tensor"), n.attrs.get("data-affected"))
               for n in by_id(root, "affected-table").walk() if n.tag == "tr" and "data-affected" in n.attrs]
    want_aff = [(pid, text_of(c.get("name")), ranges(c.get("affected_slice"))) for pid, c in causes]
    if got_aff != want_aff:
        raise AssertionError("affected rows %r, document %r" % (got_aff, want_aff))

    # The p99 explanation, ranked as the document ranks it.
    got_rank = [n.attrs.get("data-slice") for n in by_id(root, "p99-table").walk()
                if n.tag == "tr" and "data-rank" in n.attrs]
    want_rank = [slice_name(doc, obj(r).get("labels"))
                 for r in arr(obj(doc.get("p99_explanation")).get("ranked"))]
    if got_rank != want_rank:
        raise AssertionError("p99 ranking %r, document %r" % (got_rank, want_rank))
    return root


# ---- running the tools ------------------------------------------------------------------

def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class GateHtmlTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gate_html.")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def render(self, doc, name="page"):
        """Writes doc, renders its page with gate_render; returns the page's text."""
        doc_path = os.path.join(self.tmp, name + ".json")
        html_path = os.path.join(self.tmp, name + ".html")
        with open(doc_path, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False)
        proc = subprocess.run([GATE_RENDER, doc_path, "--html", html_path],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(html_path, encoding="utf-8") as f:
            return f.read()

    def browse(self, html, name="page"):
        """The DOM of the page after its scripts ran, as headless Chromium dumps it."""
        path = os.path.join(self.tmp, name + ".browse.html")
        with open(path, "w", encoding="utf-8") as f:
            f.write(html)
        profile = tempfile.mkdtemp(prefix="profile.", dir=self.tmp)
        proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                               "--no-first-run", "--user-data-dir=" + profile, "--dump-dom",
                               "file://" + os.path.abspath(path)],
                              capture_output=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode("utf-8", "replace")[-2000:])
        return proc.stdout.decode("utf-8")

    def check(self, doc, name="page"):
        raw = self.render(doc, name)
        return raw, check_page(raw, self.browse(raw, name), doc)

    def sample(self):
        with open(os.path.join(GATE_DIR, "sample.json"), encoding="utf-8") as f:
            return json.load(f)

    def test_page_of_a_real_gate_run(self):
        """The page `paritydiff gate --html` writes for the example suite, checked against
        the JSON the same run wrote (PARITYDIFF and MAKE_GATE_EXAMPLE from ctest)."""
        parity, make = os.environ.get("PARITYDIFF"), os.environ.get("MAKE_GATE_EXAMPLE")
        if not parity or not make:
            self.skipTest("PARITYDIFF and MAKE_GATE_EXAMPLE not given")
        suite = os.path.join(self.tmp, "suite")
        subprocess.run([make, suite], check=True)
        examples = os.path.join(GATE_DIR, "..", "..", "examples", "gate")
        doc_path, html_path = os.path.join(self.tmp, "g.json"), os.path.join(self.tmp, "g.html")
        proc = subprocess.run([parity, "gate", "-q", "--policy", os.path.join(examples, "policy.yaml"),
                               "--traffic", os.path.join(examples, "traffic.csv"),
                               "--json", doc_path, "--html", html_path, suite],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        with open(doc_path, encoding="utf-8") as f:
            doc = json.load(f)
        with open(html_path, encoding="utf-8") as f:
            raw = f.read()
        root = check_page(raw, self.browse(raw, "real"), doc)
        self.assertIsNotNone(root)
        broken = raw.replace('<script id="gate-draw">', '<script id="gate-draw">null.x;', 1)
        self.assertNotEqual(broken, raw)
        with self.assertRaises(AssertionError):
            check_page(broken, self.browse(broken, "real-broken"), doc)

    def test_timelines_of_a_gate_with_history(self):
        """Seven nightly runs in a history: the page of the seventh draws each alert's
        timeline with its normal range and the boundary at night 6 (the blip at night 3
        out of range but not the boundary)."""
        parity, make = os.environ.get("PARITYDIFF"), os.environ.get("MAKE_GATE_EXAMPLE")
        if not parity or not make:
            self.skipTest("PARITYDIFF and MAKE_GATE_EXAMPLE not given")
        policy = os.path.join(GATE_DIR, "..", "..", "examples", "gate", "policy.yaml")
        history = os.path.join(self.tmp, "h.db")
        for n in range(1, 8):
            suite = os.path.join(self.tmp, "night%d" % n)
            subprocess.run([make, suite, "--night", str(n)], check=True)
            p = subprocess.run([parity, "gate", "-q", "--policy", policy, "--history", history,
                                "--timestamp", "2026-11-%02dT02:00:00Z" % n, "--run-id",
                                "nightly-%d" % n, "--json", os.path.join(self.tmp, "g.json"),
                                "--html", os.path.join(self.tmp, "g.html"), suite],
                               capture_output=True, text=True, timeout=300)
            self.assertIn(p.returncode, (0, 1), p.stderr)
        with open(os.path.join(self.tmp, "g.html"), encoding="utf-8") as f:
            raw = f.read()
        root = parse(self.browse(raw, "timeline"))
        figs = [n for n in root.walk() if n.tag == "figure" and "timeline" in n.attrs.get("class", "")]
        rec = [f for f in figs if f.attrs.get("data-rule") == "recompiles#3"]
        self.assertEqual(len(rec), 1)
        self.assertEqual(rec[0].attrs["data-boundary"], "nightly-6")
        self.assertEqual(rec[0].attrs["data-last-good"], "nightly-5")
        pts = [n for n in rec[0].walk() if n.tag == "circle"]
        self.assertEqual([p.attrs["data-run"] for p in pts], ["nightly-%d" % n for n in range(1, 8)])
        self.assertEqual([p.attrs["data-state"] for p in pts],
                         ["in_range", "in_range", "out_of_range", "in_range", "in_range",
                          "out_of_range", "out_of_range"])
        self.assertEqual([float(p.attrs["data-value"]) for p in pts], [0, 0, 14, 0, 0, 14, 14])
        band = [n for n in rec[0].walk() if n.tag == "rect" and "normal-band" in n.attrs.get("class", "")]
        self.assertEqual(float(band[0].attrs["data-max"]), 2)
        marks = [n for n in rec[0].walk() if n.tag == "line" and "boundary" in n.attrs.get("class", "")]
        self.assertEqual([m.attrs["data-run"] for m in marks], ["nightly-6"])
        with open(os.path.join(self.tmp, "g.json")) as f:
            doc = json.load(f)
        self.assertEqual(len(figs), len(doc["timelines"]))

    def test_sample(self):
        doc = self.sample()
        raw, root = self.check(doc)
        # The figures a reader looks for first are really there.
        cells = {(n.attrs["data-slice"], n.attrs["data-metric"]): n.attrs
                 for n in root.walk() if "data-state" in n.attrs}
        rec = cells[("workload=chat,shape_bucket=2049-8192", "recompiles")]
        self.assertEqual((rec["data-value"], rec["data-state"]), ("14", "alert"))
        par = cells[("workload=rank,shape_bucket=513-2048", "numerical_parity")]
        self.assertEqual((par["data-value"], par["data-state"]), ("0", "alert"))
        self.assertAlmostEqual(float(cells[("workload=chat,shape_bucket=2049-8192",
                                            "p99_ratio")]["data-value"]), 95.0 / 11.0)
        self.assertEqual(len([n for n in root.walk() if n.attrs.get("data-legend")]), 5)
        self.assertTrue("hidden" in by_id(root, "static-summary").attrs)
        self.assertIn("Verdict: fail</strong> - 2 alerts, 0 pending", raw)

    def test_script_error_fails_the_check(self):
        doc = self.sample()
        raw = self.render(doc)
        marker = '<script id="gate-draw">\n'
        self.assertIn(marker, raw)
        broken = raw.replace(marker, marker + "null.x;\n", 1)
        dom = self.browse(broken, "broken")
        with self.assertRaises(AssertionError):
            check_page(broken, dom, doc)
        root = parse(dom)
        body = next(n for n in root.walk() if n.tag == "body")
        self.assertEqual(body.attrs.get("data-errors"), "1")
        # Without the figures the page still says the verdict and the alerts.
        summary = by_id(root, "static-summary")
        self.assertNotIn("hidden", summary.attrs)
        self.assertIn("2 alerts", summary.text())

    def test_wrong_figure_fails_the_check(self):
        # A page drawn from another document must not pass for this one.
        doc = self.sample()
        raw = self.render(doc)
        figure = '"recompiles":{"value":14'
        self.assertEqual(raw.count(figure), 1)
        other = raw.replace(figure, '"recompiles":{"value":15')
        with self.assertRaises(AssertionError):
            check_page(other, self.browse(other, "other"), doc)

    def test_hostile_strings(self):
        doc = self.sample()
        evil = "<script>alert(1)</script>"
        # U+2028/2029 must be escaped; other E2 sequences (euro, arrow, check) kept intact.
        quoted = ("a \"quoted\" & 'single' </script><img src=x onerror=alert(2)><!-- "
                  "\u2028\u2029 \u20ac\u2192\u2713\u2028x")
        owner = "\"><img src=x onerror=alert(3)>&amp;"

        def relabel(labels):
            if isinstance(labels, dict) and labels.get("workload") == "chat":
                labels["workload"] = evil
            if isinstance(labels, dict) and labels.get("shape_bucket") == "2049-8192":
                labels["shape_bucket"] = quoted

        for s in doc["slices"]:
            relabel(s["labels"])
        for p in doc["pairs"]:
            relabel(p["labels"])
        for a in doc["alerts"] + doc["mitigations"]:
            relabel(a["labels"])
        for r in doc["p99_explanation"]["ranked"] + doc["coverage"]["slices"]:
            relabel(r["labels"])
        doc["alerts"][1]["owner"] = owner
        doc["pairs"][3]["id"] = "rank/<b>mid</b>"
        doc["pairs"][3]["local_causes"][0]["name"] = "/x</script><script>alert(4)</script>"
        doc["run"]["id"] = "</title><script>alert(5)</script>"
        doc["verdict"] = "<i>fail</i>"
        doc["warnings"] = ["&lt;not a tag&gt; <u>"]
        raw, root = self.check(doc, "hostile")

        # No element came from the data, and the data shows as the text it is.
        self.assertFalse([n for n in root.walk() if n.tag in ("img", "b", "i", "u")])
        data = by_id(parse(raw), "gate-data").text()
        self.assertNotIn("<", data)
        self.assertNotIn("\u2028", data)
        self.assertEqual(json.loads(data), doc)
        texts = [n.text() for n in root.walk() if n.tag == "td"]
        hostile_slice = "workload=%s,shape_bucket=%s" % (evil, quoted)
        self.assertIn(hostile_slice, texts)
        self.assertIn(owner, texts)
        self.assertIn("&lt;not a tag&gt; <u>", [n.text() for n in root.walk() if n.tag == "li"])
        self.assertIn(doc["run"]["id"], next(n for n in root.walk() if n.tag == "title").text())
        self.assertIn("Verdict: <i>fail</i>", by_id(parse(raw), "static-summary").text())
        self.assertEqual(by_id(root, "verdict").attrs["data-verdict"], "<i>fail</i>")

    def test_nulls_and_missing_parts(self):
        doc = self.sample()
        doc["slices"][0]["telemetry"] = None
        doc["slices"][1]["telemetry"]["compiled"] = None
        doc["slices"][2]["telemetry"]["eager"]["p99_ms"] = None
        doc["slices"][2]["metrics"] = None
        doc["slices"][1]["outcome_agreement"] = None
        doc["slices"][0]["metrics"]["p99_latency_ms"] = {"value": None, "eager": 2.4}
        doc["slices"][0]["metrics"]["graph_breaks"] = {"value": 3, "eager": 0}
        doc["pending"] = [dict(doc["alerts"][1], metric="graph_breaks",
                               labels=doc["slices"][0]["labels"], rule="graph_breaks#3")]
        cause = doc["pairs"][3]["local_causes"][0]
        doc["pairs"][3]["local_causes"].append(dict(cause, name="/y", op=None, ulp_hist=None,
                                                    affected_slice=None, max_ulp=None))
        doc["p99_explanation"] = None
        doc["coverage"] = None
        doc["run"] = None
        del doc["warnings"]
        _, root = self.check(doc, "nulls")
        cells = {(n.attrs["data-slice"], n.attrs["data-metric"]): n.attrs
                 for n in root.walk() if "data-state" in n.attrs}
        first = "workload=chat,shape_bucket=1-512"
        self.assertEqual(cells[(first, "graph_breaks")]["data-state"], "pending")
        self.assertEqual(cells[(first, "p99_ratio")]["data-state"], "unknown")

    def test_minimal_document(self):
        self.check({"schema": "parity-gate/1", "verdict": "pass"}, "minimal")
        self.check({"schema": "parity-gate/1", "verdict": "pass", "slices": [{}], "pairs": [{}],
                    "alerts": [{}]}, "empty_entries")


def main():
    global GATE_RENDER, GATE_DIR, CHROMIUM
    if len(sys.argv) < 3:
        sys.stderr.write("usage: test_gate_html.py GATE_RENDER GATE_TEST_DIR [unittest args]\n")
        return 2
    GATE_RENDER, GATE_DIR = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    CHROMIUM = find_chromium()
    if CHROMIUM is None:
        # Not skipped: a page nobody opened is untested (scripts/setup-deps.sh installs it).
        sys.stderr.write("test_gate_html: no chromium on PATH; run scripts/setup-deps.sh\n")
        return 1
    prog = unittest.main(argv=[sys.argv[0]] + sys.argv[3:], exit=False)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
