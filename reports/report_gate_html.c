/*
 * report_gate_html.c - the gate's HTML page (diff/GATE.md, "JUnit, OpenMetrics, HTML"):
 * one self-contained file that embeds the gate's JSON document and draws it, by inline
 * script into inline SVG, as a slice x metric heatmap, ULP histograms of failing tensors,
 * eager vs compiled p50/p99 per slice, the affected slices, the verdict, the alerts and
 * the p99 explanation.
 *
 * Why the page is built this way:
 * - No network: no external script, style, font or image, and a Content-Security-Policy
 *   that forbids fetching any, so the page opens the same on an air-gapped machine and
 *   cannot leak a report's labels to anyone.
 * - The document is data, never markup: it sits in <script type="application/json"> with
 *   every '<', '>' and '&' written as \u003c, \u003e, \u0026 (they occur in JSON only
 *   inside strings, so this is a valid JSON escape), which keeps "</script" and "<!--" out
 *   of the element whatever the labels say; U+2028/2029 are escaped too, as they end a
 *   line in older JavaScript. The script inserts every string with textContent or
 *   setAttribute, so a label like "<script>" shows as text.
 * - A test reads the figures from the DOM: every drawn cell, bar and row carries data-*
 *   attributes with the full value (the contract is in tests/gate/test_gate_html.py), the
 *   script marks the end of a good rendering with body data-rendered="1", and a first
 *   tiny script counts uncaught errors in body data-errors.
 * - Without script (or when it fails) the page still says the verdict and the number of
 *   alerts: that line is written here, in C, and hidden by the script once it has drawn.
 */
#include <stdio.h>
#include <string.h>
#include "reports/report.h"
#include "reports/report_gate.h"
#include "formats/alloc.h"

/* What the writer needs, behind the void * of parity_report_write_file. */
typedef struct {
    const json_t *pDoc;
} gate_html_ctx;

/* The JSON escaper's state between jansson's chunks: how many bytes of a possible
 * U+2028/2029 (E2 80 A8/A9) it holds back, since a chunk may end inside one. */
typedef struct {
    FILE *pFile;
    int nHeld;
} gate_html_json_sink;

/* The page's style sheet: plain, readable, printable; one colour per heatmap state. */
static const char *const azStyle[] = {
    "body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #222;\n",
    "       max-width: 1500px; }\n",
    "h1 { font-size: 22px; margin: 0 0 8px; }\n",
    "h2 { font-size: 17px; margin: 28px 0 6px; border-bottom: 1px solid #ddd; }\n",
    ".note { color: #555; margin: 4px 0 8px; }\n",
    ".banner { padding: 10px 14px; border-radius: 4px; font-size: 16px; margin: 8px 0; }\n",
    ".verdict-pass { background: #dff0d8; border: 1px solid #3c763d; }\n",
    ".verdict-fail { background: #f8d7da; border: 1px solid #a94442; }\n",
    ".verdict-error, .verdict-unknown { background: #fcf8e3; border: 1px solid #8a6d3b; }\n",
    "#gate-errors { background: #f8d7da; border: 1px solid #a94442; padding: 6px 10px; }\n",
    "table { border-collapse: collapse; margin: 6px 0; }\n",
    "th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top;\n",
    "         overflow-wrap: anywhere; }\n",
    "th { background: #f4f4f4; }\n",
    "tr.kind-alert td:first-child, tr.status-fail td:nth-child(3) {\n",
    "  color: #a50026; font-weight: bold; }\n",
    "tr.status-error td:nth-child(3) { color: #8a6d3b; font-weight: bold; }\n",
    "svg { display: block; margin: 6px 0; font: 12px system-ui, sans-serif; max-width: 100%;\n",
    "      height: auto; }\n",
    ".state-alert { fill: #d73027; }\n",
    ".state-pending { fill: #fdae61; }\n",
    ".state-ok { fill: #a6d96a; }\n",
    ".state-unknown { fill: #bdbdbd; }\n",
    ".state-none { fill: #f7f7f7; stroke: #ccc; }\n",
    ".text-alert { fill: #fff; font-weight: bold; }\n",
    ".grid { stroke: #e6e6e6; }\n",
    ".axis { stroke: #555; }\n",
    ".tick { fill: #555; font-size: 11px; }\n",
    ".axis-title, .col-head { fill: #333; font-weight: bold; }\n",
    ".bar-eager-p50 { fill: #9ecae1; }\n",
    ".bar-eager-p99 { fill: #3182bd; }\n",
    ".bar-compiled-p50 { fill: #fdd0a2; }\n",
    ".bar-compiled-p99 { fill: #e6550d; }\n",
    ".bar-ulp { fill: #756bb1; }\n",
    ".bar-label { fill: #333; font-size: 10px; }\n",
    "figure.ulp { margin: 12px 0; }\n",
    "figcaption { font-weight: bold; }\n",
    ".normal-band { fill: #d9f0d3; }\n",
    ".boundary { stroke: #b2182b; stroke-width: 2; stroke-dasharray: 4 3; }\n",
    ".trend { fill: none; stroke: #777; stroke-width: 1.2; }\n",
    ".pt-in_range { fill: #4dac26; } .pt-out_of_range { fill: #d7191c; } .pt-unknown { fill: #bbb; }\n",
    "figure.timeline { margin: 10px 0 18px; }\n",
};

/* The first script: counts uncaught errors in body data-errors and shows them. */
static const char *const azOnError[] = {
    "window.onerror = function (message) {\n",
    "  var body = document.body, box = document.getElementById('gate-errors');\n",
    "  body.dataset.errors = String((Number(body.dataset.errors) || 0) + 1);\n",
    "  if (box) {\n",
    "    box.hidden = false;\n",
    "    box.appendChild(document.createTextNode('Script error: ' + String(message) + ' '));\n",
    "  }\n",
    "  return false;\n",
    "};\n",
};

/* The drawing script: reads #gate-data and builds every figure; each string goes in as
 * text (textContent, setAttribute), never as markup. */
static const char *const azDraw[] = {
    "'use strict';\n",
    "(function () {\n",
    "  var SVGNS = 'http://www.w3.org/2000/svg';\n",
    "  var doc = JSON.parse(document.getElementById('gate-data').textContent);\n",
    "  var root = document.getElementById('gate');\n",
    "\n",
    "  /* ---- reading the document defensively: any field may be null or missing ---- */\n",
    "  function has(o, k) {\n",
    "    return o !== null && typeof o === 'object' &&\n",
    "      Object.prototype.hasOwnProperty.call(o, k);\n",
    "  }\n",
    "  function obj(x) {\n",
    "    return x !== null && typeof x === 'object' && !Array.isArray(x) ? x : {};\n",
    "  }\n",
    "  function arr(x) { return Array.isArray(x) ? x : []; }\n",
    "  function num(x) { return typeof x === 'number' && isFinite(x) ? x : null; }\n",
    "  function str(x) {\n",
    "    if (x === null || x === undefined) return '';\n",
    "    return typeof x === 'string' ? x : JSON.stringify(x);\n",
    "  }\n",
    "  function plural(n, word) { return n + ' ' + word + (n === 1 ? '' : 's'); }\n",
    "  /* Shown numbers have 4 significant digits; data-* attributes keep the full number. */\n",
    "  function fmt(v) {\n",
    "    if (v === null || v === undefined) return 'n/a';\n",
    "    if (typeof v !== 'number') return str(v);\n",
    "    if (Number.isInteger(v)) return String(v);\n",
    "    return String(Number(v.toPrecision(4)));\n",
    "  }\n",
    "  function dataNum(v) { return v === null ? '' : String(v); }\n",
    "  function ratio(v) { return v === null ? 'n/a' : fmt(v) + 'x'; }\n",
    "  function opName(op) { return op === null || op === undefined ? 'n/a' : str(op); }\n",
    "\n",
    "  /* ---- DOM helpers: every string goes in as text (textContent, setAttribute) ---- */\n",
    "  function setAttrs(e, attrs) {\n",
    "    Object.keys(attrs || {}).forEach(function (k) {\n",
    "      if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, String(attrs[k]));\n",
    "    });\n",
    "    return e;\n",
    "  }\n",
    "  function withText(e, text) {\n",
    "    if (text !== undefined && text !== null) e.textContent = String(text);\n",
    "    return e;\n",
    "  }\n",
    "  function h(tag, attrs, text) {\n",
    "    return withText(setAttrs(document.createElement(tag), attrs), text);\n",
    "  }\n",
    "  function s(tag, attrs, text) {\n",
    "    return withText(setAttrs(document.createElementNS(SVGNS, tag), attrs), text);\n",
    "  }\n",
    "  function add(parent, child) { parent.appendChild(child); return child; }\n",
    "  function tip(e, text) { add(e, s('title', {}, text)); return e; }\n",
    "  function clip(text, n) { return text.length > n ? text.slice(0, n - 3) + '...' : text; }\n",
    "  function section(id, title, note) {\n",
    "    var sec = add(root, h('section', { id: id }));\n",
    "    add(sec, h('h2', {}, title));\n",
    "    if (note) add(sec, h('p', { 'class': 'note' }, note));\n",
    "    return sec;\n",
    "  }\n",
    "  function table(parent, id, heads) {\n",
    "    var t = add(parent, h('table', { id: id }));\n",
    "    var tr = add(add(t, h('thead')), h('tr'));\n",
    "    heads.forEach(function (x) { add(tr, h('th', {}, x)); });\n",
    "    return add(t, h('tbody'));\n",
    "  }\n",
    "  function row(tbody, attrs, cells) {\n",
    "    var tr = add(tbody, h('tr', attrs));\n",
    "    cells.forEach(function (c) { add(tr, h('td', {}, c)); });\n",
    "    return tr;\n",
    "  }\n",
    "  function svg(parent, id, w, hgt, label) {\n",
    "    return add(parent, s('svg', { id: id, width: w, height: hgt,\n",
    "      viewBox: '0 0 ' + w + ' ' + hgt, role: 'img', 'aria-label': label }));\n",
    "  }\n",
    "\n",
    "  /* ---- slices: the name a reader sees (key=value,... in slice_keys order, then the\n",
    "     other keys sorted) and the key alerts are matched by (the same pairs, as JSON) ---- */\n",
    "  var sliceKeys = arr(doc.slice_keys).filter(function (k) {\n",
    "    return typeof k === 'string';\n",
    "  });\n",
    "  function labelPairs(labels) {\n",
    "    var l = obj(labels);\n",
    "    var keys = sliceKeys.filter(function (k) { return has(l, k); });\n",
    "    Object.keys(l).sort().forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); });\n",
    "    return keys.map(function (k) { return [k, str(l[k])]; });\n",
    "  }\n",
    "  function sliceName(labels) {\n",
    "    return labelPairs(labels).map(function (p) { return p[0] + '=' + p[1]; }).join(',');\n",
    "  }\n",
    "  function matchKey(labels, metric) {\n",
    "    return JSON.stringify([labelPairs(labels), metric]);\n",
    "  }\n",
    "\n",
    "  var slices = arr(doc.slices).map(obj);\n",
    "  var alerts = arr(doc.alerts).map(obj);\n",
    "  var pending = arr(doc.pending).map(obj);\n",
    "  var pairs = arr(doc.pairs).map(obj);\n",
    "  var verdict = str(doc.verdict);\n",
    "  var names = slices.map(function (sl) { return sliceName(sl.labels); });\n",
    "\n",
    "  /* ---- verdict banner and run ---- */\n",
    "  var vclass = ['pass', 'fail', 'error'].indexOf(verdict) >= 0 ? verdict : 'unknown';\n",
    "  var banner = add(root, h('div', { id: 'verdict', 'class': 'banner verdict-' + vclass,\n",
    "    'data-verdict': verdict, 'data-alerts': alerts.length,\n",
    "    'data-pending': pending.length }));\n",
    "  add(banner, h('strong', {},\n",
    "    'Verdict: ' + (verdict ? verdict.toUpperCase() : 'unknown')));\n",
    "  add(banner, document.createTextNode(' - ' + plural(alerts.length, 'alert') + ', ' +\n",
    "    pending.length + ' pending, ' + plural(slices.length, 'slice') + ', ' +\n",
    "    plural(pairs.length, 'pair') + '.'));\n",
    "  var run = obj(doc.run);\n",
    "  var runParts = [['run', run.id], ['at', run.timestamp], ['suite', run.suite],\n",
    "    ['policy', run.policy]].filter(function (p) {\n",
    "    return p[1] !== null && p[1] !== undefined;\n",
    "  }).map(function (p) { return p[0] + ' ' + str(p[1]); });\n",
    "  if (has(run, 'shard') && run.shard !== null) {\n",
    "    runParts.push('shard ' + str(obj(run.shard).index) + '/' + str(obj(run.shard).count));\n",
    "  }\n",
    "  add(root, h('p', { id: 'run', 'class': 'note' },\n",
    "    runParts.length ? runParts.join(', ') + '.' : 'No run details.'));\n",
    "\n",
    "  /* ---- alerts and pending: who owns each, and what to do ---- */\n",
    "  var secA = section('alerts', 'Alerts', alerts.length + pending.length === 0 ?\n",
    "    'No rule is out of range.' :\n",
    "    'Alerts fired in this run; pending rules are out of range but below their ' +\n",
    "    'persistence.');\n",
    "  var tbA = table(secA, 'alerts-table', ['kind', 'rule', 'metric', 'slice', 'value',\n",
    "    'eager', 'normal', 'runs out of range', 'owner', 'mitigation']);\n",
    "  function normalText(n) {\n",
    "    return Object.keys(obj(n)).map(function (k) {\n",
    "      var v = obj(n)[k];\n",
    "      return k + ' ' + (num(v) === null ? str(v) : fmt(v));\n",
    "    }).join(', ');\n",
    "  }\n",
    "  [['alert', alerts], ['pending', pending]].forEach(function (kind) {\n",
    "    kind[1].forEach(function (a) {\n",
    "      row(tbA, { 'class': 'kind-' + kind[0], 'data-kind': kind[0],\n",
    "        'data-rule': str(a.rule), 'data-metric': str(a.metric),\n",
    "        'data-slice': sliceName(a.labels),\n",
    "        'data-owner': str(a.owner), 'data-mitigation': str(a.mitigation),\n",
    "        'data-value': dataNum(num(a.value)) },\n",
    "      [kind[0], str(a.rule), str(a.metric), sliceName(a.labels), fmt(num(a.value)),\n",
    "        fmt(num(a.eager)), normalText(a.normal),\n",
    "        fmt(num(a.runs_out_of_range)) + ' of ' + fmt(num(a.persistence)),\n",
    "        str(a.owner), str(a.mitigation)]);\n",
    "    });\n",
    "  });\n",
    "\n",
    "  /* ---- heatmap: slice x metric ---- */\n",
    "  var COLUMNS = [\n",
    "    { id: 'numerical_parity', metric: 'numerical_parity', title: 'numerical parity' },\n",
    "    { id: 'outcome_parity', metric: 'outcome_parity', title: 'outcome parity' },\n",
    "    { id: 'recompiles', metric: 'recompiles', title: 'recompiles' },\n",
    "    { id: 'fallback_rate', metric: 'fallback_rate', title: 'fallback rate' },\n",
    "    { id: 'p99_ratio', metric: 'p99_latency_ms', title: 'p99 compiled/eager' },\n",
    "    { id: 'compile_time_s', metric: 'compile_time_s', title: 'compile time (s)' },\n",
    "    { id: 'coverage', metric: 'coverage', title: 'coverage' }\n",
    "  ];\n",
    "  /* A metric the document measures but the fixed columns lack gets a column of its own,\n",
    "     so no alert goes unseen. */\n",
    "  var known = COLUMNS.map(function (c) { return c.metric; });\n",
    "  function addColumn(m) {\n",
    "    if (typeof m !== 'string' || !m || known.indexOf(m) >= 0) return;\n",
    "    known.push(m);\n",
    "    COLUMNS.push({ id: m, metric: m, title: m.replace(/_/g, ' ') });\n",
    "  }\n",
    "  slices.forEach(function (sl) { Object.keys(obj(sl.metrics)).forEach(addColumn); });\n",
    "  alerts.concat(pending).forEach(function (a) { addColumn(a.metric); });\n",
    "\n",
    "  var states = {};\n",
    "  pending.forEach(function (a) {\n",
    "    states[matchKey(a.labels, str(a.metric))] = 'pending';\n",
    "  });\n",
    "  alerts.forEach(function (a) { states[matchKey(a.labels, str(a.metric))] = 'alert'; });\n",
    "\n",
    "  /* The cell value: the slice's metrics entry when the document has one (the value the\n",
    "     policy judged), else the figure the metric is defined by (GATE.md, Metrics). */\n",
    "  function cellValue(sl, col) {\n",
    "    var metrics = obj(sl.metrics), m = obj(metrics[col.metric]);\n",
    "    var ruled = has(metrics, col.metric);\n",
    "    var te = obj(obj(sl.telemetry).eager), tc = obj(obj(sl.telemetry).compiled);\n",
    "    if (col.id === 'p99_ratio') {\n",
    "      var c = ruled ? num(m.value) : num(tc.p99_ms);\n",
    "      var e = ruled ? num(m.eager) : num(te.p99_ms);\n",
    "      return c !== null && e !== null && e !== 0 ? c / e : null;\n",
    "    }\n",
    "    if (ruled) return num(m.value);\n",
    "    var p = obj(sl.parity), pass = num(p.pass) || 0;\n",
    "    var judged = pass + (num(p.fail) || 0) + (num(p.error) || 0);\n",
    "    switch (col.id) {\n",
    "      case 'numerical_parity': return judged > 0 ? pass / judged : null;\n",
    "      case 'outcome_parity': return num(sl.outcome_agreement);\n",
    "      case 'coverage': return has(sl, 'parity') ? (judged > 0 ? 1 : 0) : null;\n",
    "      default: return num(tc[col.id]);\n",
    "    }\n",
    "  }\n",
    "  function cellState(sl, col, v) {\n",
    "    var st = states[matchKey(sl.labels, col.metric)];\n",
    "    if (st) return st;\n",
    "    if (!has(obj(sl.metrics), col.metric)) return 'none';\n",
    "    return v === null ? 'unknown' : 'ok';\n",
    "  }\n",
    "  function cellText(col, v) {\n",
    "    if (v === null) return 'n/a';\n",
    "    if (col.id === 'p99_ratio') return ratio(v);\n",
    "    if (col.id === 'compile_time_s') return fmt(v) + ' s';\n",
    "    return fmt(v);\n",
    "  }\n",
    "\n",
    "  var STATES = [['alert', 'alert fired'], ['pending', 'out of range, pending persistence'],\n",
    "    ['ok', 'measured by a rule, no alert'], ['unknown', 'rule cannot compute it'],\n",
    "    ['none', 'no rule measures it (shown for reference)']];\n",
    "  var secH = section('heatmap', 'Slices x metrics', 'Each cell holds the slice value of ' +\n",
    "    'the metric; its colour says whether an alert or a pending alert names that slice ' +\n",
    "    'and metric.');\n",
    "  var longest = Math.max.apply(null, [10].concat(names.map(function (n) {\n",
    "    return n.length;\n",
    "  })));\n",
    "  var labelW = Math.min(360, Math.max(120, 7 * longest + 16));\n",
    "  var labelChars = Math.floor((labelW - 16) / 7);\n",
    "  var cw = 134, ch = 26, top = 44;\n",
    "  var svgH = svg(secH, 'heatmap-svg', labelW + cw * COLUMNS.length + 10,\n",
    "    top + ch * slices.length + 16, 'slice by metric heatmap');\n",
    "  add(svgH, s('text', { x: 4, y: 14, 'class': 'axis-title' },\n",
    "    'slice (rows) / metric (columns)'));\n",
    "  COLUMNS.forEach(function (col, j) {\n",
    "    add(svgH, s('text', { x: labelW + cw * j + cw / 2, y: top - 8, 'text-anchor': 'middle',\n",
    "      'class': 'col-head', 'data-metric': col.id }, clip(col.title, 20)));\n",
    "  });\n",
    "  slices.forEach(function (sl, i) {\n",
    "    var y = top + ch * i, name = names[i];\n",
    "    tip(add(svgH, s('text', { x: labelW - 8, y: y + ch / 2 + 4, 'text-anchor': 'end',\n",
    "      'class': 'row-head', 'data-slice': name }, clip(name, labelChars))), name);\n",
    "    COLUMNS.forEach(function (col, j) {\n",
    "      var v = cellValue(sl, col), st = cellState(sl, col, v), x = labelW + cw * j;\n",
    "      var g = add(svgH, s('g', { 'class': 'cell' }));\n",
    "      tip(add(g, s('rect', { x: x + 1, y: y + 1, width: cw - 2, height: ch - 2,\n",
    "        'class': 'state-' + st, 'data-slice': name, 'data-metric': col.id,\n",
    "        'data-value': dataNum(v), 'data-state': st })),\n",
    "      name + ' / ' + col.title + ': ' + cellText(col, v) + ' (' + st + ')');\n",
    "      add(g, s('text', { x: x + cw / 2, y: y + ch / 2 + 4, 'text-anchor': 'middle',\n",
    "        'class': 'cell-text text-' + st }, cellText(col, v)));\n",
    "    });\n",
    "  });\n",
    "  if (!slices.length) {\n",
    "    add(secH, h('p', { 'class': 'note' }, 'The document has no slices.'));\n",
    "  }\n",
    "  var legendW = 4;\n",
    "  STATES.forEach(function (p) { legendW += 34 + 7 * (p[0].length + p[1].length + 2); });\n",
    "  var legend = svg(secH, 'heatmap-legend', Math.ceil(legendW), 26, 'heatmap legend');\n",
    "  var lx = 4;\n",
    "  STATES.forEach(function (p) {\n",
    "    add(legend, s('rect', { x: lx, y: 5, width: 16, height: 16, 'class': 'state-' + p[0],\n",
    "      'data-legend': p[0] }));\n",
    "    add(legend, s('text', { x: lx + 22, y: 18 }, p[0] + ': ' + p[1]));\n",
    "    lx += 34 + 7 * (p[0].length + p[1].length + 2);\n",
    "  });\n",
    "\n",
    "  /* ---- p99 explanation: which slices made compiled p99 worse ---- */\n",
    "  var ex = obj(doc.p99_explanation), ranked = arr(ex.ranked).map(obj);\n",
    "  var secP = section('p99', 'Why p99 moved', 'Suite throughput compiled/eager ' +\n",
    "    ratio(num(ex.throughput_ratio)) + ', p99 compiled/eager ' + ratio(num(ex.p99_ratio)) +\n",
    "    '.' + (ex.contradiction === true ? ' Compiled is faster on average but slower at ' +\n",
    "    'p99: the slices below, largest score first, explain it.' : ' Slices ranked by ' +\n",
    "    'score = traffic share x (compiled p99 - eager p99).'));\n",
    "  var tbP = table(secP, 'p99-table', ['rank', 'slice', 'traffic share', 'eager p99 ms',\n",
    "    'compiled p99 ms', 'eager p50 ms', 'compiled p50 ms', 'score', 'recompiles',\n",
    "    'compile time s', 'fallback rate']);\n",
    "  if (!ranked.length) add(secP, h('p', { 'class': 'note' }, 'No slice has both p99s.'));\n",
    "  ranked.forEach(function (r, i) {\n",
    "    row(tbP, { 'data-rank': i + 1, 'data-slice': sliceName(r.labels),\n",
    "      'data-score': dataNum(num(r.score)) },\n",
    "    [String(i + 1), sliceName(r.labels)].concat(['traffic_share', 'eager_p99_ms',\n",
    "      'compiled_p99_ms', 'eager_p50_ms', 'compiled_p50_ms', 'score', 'recompiles',\n",
    "      'compile_time_s', 'fallback_rate'].map(function (k) { return fmt(num(r[k])); })));\n",
    "  });\n",
    "\n",
    "  /* ---- latency: eager vs compiled p50/p99 per slice, bars on a log axis (the figures\n",
    "     of one suite span decades) ---- */\n",
    "  var BARS = [['eager', 'p50'], ['compiled', 'p50'], ['eager', 'p99'],\n",
    "    ['compiled', 'p99']];\n",
    "  function latency(sl, bar) {\n",
    "    return num(obj(obj(sl.telemetry)[bar[0]])[bar[1] + '_ms']);\n",
    "  }\n",
    "  var secL = section('latency', 'Latency per slice: eager vs compiled', 'Steady-state ' +\n",
    "    'p50 and p99 in milliseconds (log scale); n/a where no capture had the figure.');\n",
    "  var lv = [];\n",
    "  slices.forEach(function (sl) {\n",
    "    BARS.forEach(function (b) {\n",
    "      var v = latency(sl, b);\n",
    "      if (v !== null && v > 0) lv.push(v);\n",
    "    });\n",
    "  });\n",
    "  var vmin = Math.min.apply(null, lv), vmax = Math.max.apply(null, lv);\n",
    "  var dlo = lv.length ? Math.floor(Math.log10(vmin)) : -1;\n",
    "  var dhi = lv.length ? Math.ceil(Math.log10(vmax)) : 1;\n",
    "  if (lv.length && Math.pow(10, dlo) >= vmin) dlo -= 1;   /* the smallest bar shows */\n",
    "  if (dhi <= dlo) dhi = dlo + 1;\n",
    "  var pw = 560, bh = 11, gap = 14, ltop = 30;\n",
    "  var axisY = ltop + slices.length * (4 * bh + gap);\n",
    "  var svgL = svg(secL, 'latency-svg', labelW + pw + 160, axisY + 44, 'latency bars');\n",
    "  function lx2(v) { return labelW + pw * (Math.log10(v) - dlo) / (dhi - dlo); }\n",
    "  for (var d = dlo; d <= dhi; d++) {\n",
    "    var tx = lx2(Math.pow(10, d));\n",
    "    add(svgL, s('line', { x1: tx, x2: tx, y1: ltop - 4, y2: axisY, 'class': 'grid' }));\n",
    "    add(svgL, s('text', { x: tx, y: axisY + 14, 'text-anchor': 'middle', 'class': 'tick' },\n",
    "      fmt(Math.pow(10, d))));\n",
    "  }\n",
    "  add(svgL, s('line', { x1: labelW, x2: labelW + pw, y1: axisY, y2: axisY,\n",
    "    'class': 'axis' }));\n",
    "  add(svgL, s('text', { x: labelW + pw / 2, y: axisY + 34, 'text-anchor': 'middle',\n",
    "    'class': 'axis-title' }, 'latency (ms, log scale)'));\n",
    "  BARS.forEach(function (b, k) {\n",
    "    add(svgL, s('rect', { x: 4 + 110 * k, y: 6, width: 12, height: 12,\n",
    "      'class': 'bar-' + b[0] + '-' + b[1] }));\n",
    "    add(svgL, s('text', { x: 20 + 110 * k, y: 16 }, b[0] + ' ' + b[1]));\n",
    "  });\n",
    "  slices.forEach(function (sl, i) {\n",
    "    var y0 = ltop + i * (4 * bh + gap), name = names[i];\n",
    "    tip(add(svgL, s('text', { x: labelW - 8, y: y0 + 2 * bh + 4, 'text-anchor': 'end',\n",
    "      'class': 'row-head' }, clip(name, labelChars))), name);\n",
    "    BARS.forEach(function (b, k) {\n",
    "      var v = latency(sl, b), y = y0 + k * bh;\n",
    "      var w = v === null || v <= 0 ? 0 : Math.max(1, lx2(v) - labelW);\n",
    "      var what = b[0] + ' ' + b[1] + ' ' + (v === null ? 'n/a' : fmt(v) + ' ms');\n",
    "      tip(add(svgL, s('rect', { x: labelW, y: y, width: w, height: bh - 1,\n",
    "        'class': 'bar-' + b[0] + '-' + b[1], 'data-slice': name, 'data-side': b[0],\n",
    "        'data-stat': b[1], 'data-value': dataNum(v) })), name + ': ' + what);\n",
    "      add(svgL, s('text', { x: labelW + w + 4, y: y + bh - 2, 'class': 'bar-label' },\n",
    "        what));\n",
    "    });\n",
    "  });\n",
    "\n",
    "  /* ---- failing tensors: ULP histograms, counts on a log scale since exact elements\n",
    "     dwarf the rest ---- */\n",
    "  var causes = [];\n",
    "  pairs.forEach(function (p) {\n",
    "    arr(p.local_causes).forEach(function (c) {\n",
    "      causes.push({ pair: str(p.id), c: obj(c) });\n",
    "    });\n",
    "  });\n",
    "  var secU = section('ulp', 'ULP distance of failing tensors', causes.length ?\n",
    "    'Elements per ULP-distance bucket (bucket 0: exact; bucket k: 2^(k-1) to 2^k - 1 ' +\n",
    "    'ULP), count on a log scale.' : 'No pair has a failing tensor with a local cause.');\n",
    "  causes.forEach(function (cc) {\n",
    "    var c = cc.c, tensor = str(c.name);\n",
    "    var fig = add(secU, h('figure', { 'class': 'ulp', 'data-pair': cc.pair,\n",
    "      'data-tensor': tensor }));\n",
    "    add(fig, h('figcaption', {}, cc.pair + ': ' + tensor + ' (op ' + opName(c.op) +\n",
    "      ', max ULP ' + fmt(num(c.max_ulp)) + ')'));\n",
    "    if (!Array.isArray(c.ulp_hist)) {\n",
    "      add(fig, h('p', { 'class': 'note' }, 'No ULP histogram.'));\n",
    "      return;\n",
    "    }\n",
    "    var counts = c.ulp_hist.map(function (x) { return num(x) === null ? 0 : num(x); });\n",
    "    var cmax = Math.max.apply(null, [1].concat(counts));\n",
    "    var decades = Math.max(1, Math.ceil(Math.log10(cmax + 1)));\n",
    "    var bw = 9, ph = 120, ul = 56, ut = 12;\n",
    "    var uw = ul + bw * Math.max(64, counts.length) + 20;\n",
    "    var svgU = svg(fig, null, uw, ut + ph + 46, 'ULP histogram');\n",
    "    function uy(v) { return ut + ph - ph * Math.log10(v + 1) / decades; }\n",
    "    for (var t = -1; t <= decades; t++) {\n",
    "      var ty = uy(t < 0 ? 0 : Math.pow(10, t));\n",
    "      add(svgU, s('line', { x1: ul, x2: uw - 10, y1: ty, y2: ty, 'class': 'grid' }));\n",
    "      add(svgU, s('text', { x: ul - 4, y: ty + 4, 'text-anchor': 'end', 'class': 'tick' },\n",
    "        t < 0 ? '0' : fmt(Math.pow(10, t))));\n",
    "    }\n",
    "    add(svgU, s('line', { x1: ul, x2: uw - 10, y1: ut + ph, y2: ut + ph,\n",
    "      'class': 'axis' }));\n",
    "    counts.forEach(function (n, k) {\n",
    "      var y = uy(n);\n",
    "      var range = k === 0 ? 'exact' : fmt(Math.pow(2, k - 1)) + ' to ' +\n",
    "        fmt(Math.pow(2, k) - 1) + ' ULP';\n",
    "      tip(add(svgU, s('rect', { x: ul + k * bw + 1, y: y, width: bw - 2,\n",
    "        height: ut + ph - y, 'class': 'bar-ulp', 'data-pair': cc.pair,\n",
    "        'data-tensor': tensor, 'data-bucket': k, 'data-count': String(n) })),\n",
    "      'bucket ' + k + ' (' + range + '): ' + n);\n",
    "      if (k % 8 === 0) {\n",
    "        add(svgU, s('text', { x: ul + k * bw + bw / 2, y: ut + ph + 14,\n",
    "          'text-anchor': 'middle', 'class': 'tick' }, k === 0 ? '0' : '2^' + (k - 1)));\n",
    "      }\n",
    "    });\n",
    "    add(svgU, s('text', { x: ul + bw * 32, y: ut + ph + 36, 'text-anchor': 'middle',\n",
    "      'class': 'axis-title' }, 'ULP distance (bucket lower edge)'));\n",
    "    add(svgU, s('text', { x: 12, y: ut + ph / 2, 'text-anchor': 'middle',\n",
    "      'class': 'axis-title', transform: 'rotate(-90 12 ' + (ut + ph / 2) + ')' },\n",
    "    'elements (log)'));\n",
    "  });\n",
    "\n",
    "  /* ---- affected slices, numpy style: [lo:hi, lo:hi] ---- */\n",
    "  function ranges(a) {\n",
    "    if (!Array.isArray(a)) return 'n/a';\n",
    "    return '[' + a.map(function (r) {\n",
    "      return fmt(num(arr(r)[0])) + ':' + fmt(num(arr(r)[1]));\n",
    "    }).join(', ') + ']';\n",
    "  }\n",
    "  var secS = section('affected', 'Affected slices of failing tensors', 'Half-open index ' +\n",
    "    'ranges per dimension (numpy style) that hold the failing elements.');\n",
    "  var tbS = table(secS, 'affected-table', ['pair', 'tensor', 'op', 'affected slice',\n",
    "    'max ULP']);\n",
    "  causes.forEach(function (cc) {\n",
    "    var c = cc.c, r = ranges(c.affected_slice);\n",
    "    row(tbS, { 'data-pair': cc.pair, 'data-tensor': str(c.name), 'data-op': str(c.op),\n",
    "      'data-affected': r }, [cc.pair, str(c.name), opName(c.op), r, fmt(num(c.max_ulp))]);\n",
    "  });\n",
    "\n",
    "  /* ---- timelines (a gate with --history): per alert, the metric over past runs with\n",
    "     its normal range and the boundary an investigation finds ---- */\n",
    "  var timelines = arr(doc.timelines);\n",
    "  var secT = section('timelines', 'Timelines', timelines.length ?\n",
    "    'Each alert\\'s metric over the runs of the history (ratio metrics as compiled/eager), ' +\n",
    "    'its normal range shaded, the earliest known-bad run marked.' :\n",
    "    'No history was given to this gate run (--history), so there is no timeline.');\n",
    "  timelines.forEach(function (t) {\n",
    "    var pts = arr(t.points), nrm = obj(t.normal), name = sliceName(t.labels);\n",
    "    var byRatio = has(nrm, 'min_ratio') || has(nrm, 'max_ratio');\n",
    "    function yv(p) {\n",
    "      var v = num(p.value), e = num(p.eager);\n",
    "      if (!byRatio) return v;\n",
    "      return v === null || e === null || e <= 0 ? null : v / e;\n",
    "    }\n",
    "    var lo = num(byRatio ? nrm.min_ratio : nrm.min), hi = num(byRatio ? nrm.max_ratio : nrm.max);\n",
    "    var ys = pts.map(yv).filter(function (v) { return v !== null; });\n",
    "    [lo, hi].forEach(function (b) { if (b !== null) ys.push(b); });\n",
    "    var ymin = Math.min.apply(null, ys.length ? ys : [0]), ymax = Math.max.apply(null, ys.length ? ys : [1]);\n",
    "    if (ymin > 0) ymin = 0;\n",
    "    if (ymax <= ymin) ymax = ymin + 1;\n",
    "    ymax += (ymax - ymin) * 0.1;\n",
    "    var tw = 560, th = 150, tl = 60, tt = 24;\n",
    "    var fig = add(secT, h('figure', { 'class': 'timeline', 'data-rule': str(t.rule),\n",
    "      'data-metric': str(t.metric), 'data-slice': name,\n",
    "      'data-boundary': str(t.earliest_known_bad), 'data-last-good': str(t.last_known_good) }));\n",
    "    add(fig, h('figcaption', {}, str(t.metric) + (byRatio ? ' (compiled/eager)' : '') + ' on ' +\n",
    "      name + (t.fired ? ', alert' : ', pending') + '; earliest known-bad: ' +\n",
    "      str(t.earliest_known_bad) + ', last known-good: ' + str(t.last_known_good)));\n",
    "    var sv = add(fig, s('svg', { width: tl + tw + 50, height: tt + th + 40,\n",
    "      viewBox: '0 0 ' + (tl + tw + 50) + ' ' + (tt + th + 40), role: 'img',\n",
    "      'aria-label': 'timeline of ' + str(t.metric) }));\n",
    "    function px(i) { return tl + (pts.length < 2 ? tw / 2 : tw * i / (pts.length - 1)); }\n",
    "    function py(v) { return tt + th - th * (v - ymin) / (ymax - ymin); }\n",
    "    var bandLo = lo === null ? ymin : lo, bandHi = hi === null ? ymax : hi;\n",
    "    add(sv, s('rect', { x: tl, y: py(bandHi), width: tw, height: Math.max(0, py(bandLo) - py(bandHi)),\n",
    "      'class': 'normal-band', 'data-min': dataNum(lo), 'data-max': dataNum(hi) }));\n",
    "    add(sv, s('line', { x1: tl, x2: tl + tw, y1: tt + th, y2: tt + th, 'class': 'axis' }));\n",
    "    add(sv, s('line', { x1: tl, x2: tl, y1: tt, y2: tt + th, 'class': 'axis' }));\n",
    "    [ymin, ymax].forEach(function (v) {\n",
    "      add(sv, s('text', { x: tl - 6, y: py(v) + 4, 'text-anchor': 'end', 'class': 'tick' }, fmt(v)));\n",
    "    });\n",
    "    var bi = -1;\n",
    "    pts.forEach(function (p, i) { if (str(p.run) === str(t.earliest_known_bad)) bi = i; });\n",
    "    if (bi >= 0)\n",
    "      add(sv, s('line', { x1: px(bi) - 0.5 * (pts.length > 1 ? tw / (pts.length - 1) : 0),\n",
    "        x2: px(bi) - 0.5 * (pts.length > 1 ? tw / (pts.length - 1) : 0), y1: tt - 10, y2: tt + th,\n",
    "        'class': 'boundary', 'data-run': str(t.earliest_known_bad) }));\n",
    "    var path = [];\n",
    "    pts.forEach(function (p, i) { var v = yv(p); if (v !== null) path.push(px(i) + ',' + py(v)); });\n",
    "    if (path.length > 1) add(sv, s('polyline', { points: path.join(' '), 'class': 'trend' }));\n",
    "    pts.forEach(function (p, i) {\n",
    "      var v = yv(p), st = str(p.state);\n",
    "      tip(add(sv, s('circle', { cx: px(i), cy: v === null ? tt + th : py(v), r: 4,\n",
    "        'class': 'pt-' + (['in_range', 'out_of_range'].indexOf(st) >= 0 ? st : 'unknown'),\n",
    "        'data-run': str(p.run), 'data-value': dataNum(v), 'data-state': st })),\n",
    "        str(p.run) + ' (' + str(p.timestamp) + '): ' + (v === null ? 'n/a' : fmt(v)) + ', ' + st);\n",
    "      if (pts.length <= 16)\n",
    "        add(sv, s('text', { x: px(i), y: tt + th + 16, 'text-anchor': 'middle', 'class': 'tick' },\n",
    "          clip(str(p.run), 12)));\n",
    "    });\n",
    "  });\n",
    "\n",
    "  /* ---- pairs, coverage, warnings ---- */\n",
    "  var tbR = table(section('pairs', 'Pairs'), 'pairs-table', ['pair', 'slice', 'status',\n",
    "    'first divergence', 'failing tensors', 'error']);\n",
    "  pairs.forEach(function (p) {\n",
    "    var t = obj(p.tensors);\n",
    "    var cls = ['pass', 'fail', 'error'].indexOf(p.status) >= 0 ? p.status : 'other';\n",
    "    row(tbR, { 'data-pair': str(p.id), 'data-status': str(p.status),\n",
    "      'class': 'status-' + cls },\n",
    "      [str(p.id), sliceName(p.labels), str(p.status), str(p.first_divergence),\n",
    "        fmt(num(t.fail)) + ' of ' + fmt(num(t.compared)), str(p.error)]);\n",
    "  });\n",
    "  var cov = obj(doc.coverage), covered = num(cov.traffic_covered);\n",
    "  var cwe = arr(cov.compiled_without_eager).map(str);\n",
    "  var secC = section('coverage', 'Coverage and warnings',\n",
    "    'Traffic with parity evidence: ' +\n",
    "    (covered === null ? 'n/a' : fmt(covered * 100) + '%') + '. Compiled runs without an ' +\n",
    "    'eager capture: ' + (cwe.length ? cwe.join(', ') : 'none') + '.');\n",
    "  var warnings = add(secC, h('ul', { id: 'warnings' }));\n",
    "  arr(doc.warnings).forEach(function (w) { add(warnings, h('li', {}, str(w))); });\n",
    "  if (!arr(doc.warnings).length) add(warnings, h('li', {}, 'No warnings.'));\n",
    "\n",
    "  document.getElementById('static-summary').hidden = true;\n",
    "  document.body.dataset.rendered = '1';\n",
    "})();\n",
};

/* Writes z with the five HTML specials as character references (text and attributes). */
static void gate_html_text(FILE *pFile, const char *z)
{
    for (; *z; z++) {
        switch (*z) {
        case '&': fputs("&amp;", pFile); break;
        case '<': fputs("&lt;", pFile); break;
        case '>': fputs("&gt;", pFile); break;
        case '"': fputs("&quot;", pFile); break;
        case '\'': fputs("&#39;", pFile); break;
        default: fputc(*z, pFile); break;
        }
    }
}

/* Flushes the bytes of a suspected U+2028/2029 that turned out to be something else. */
static void gate_html_json_flush(gate_html_json_sink *pSink)
{
    if (pSink->nHeld >= 1) fputc(0xE2, pSink->pFile);
    if (pSink->nHeld >= 2) fputc(0x80, pSink->pFile);
    pSink->nHeld = 0;
}

/* jansson's dump callback: copies a chunk of the document, escaped for a script element
 * (see the top of the file). */
static int gate_html_json_chunk(const char *zBuf, size_t nBuf, void *pData)
{
    gate_html_json_sink *pSink = pData;
    size_t i;

    for (i = 0; i < nBuf; i++) {
        unsigned char c = (unsigned char)zBuf[i];
        if (pSink->nHeld == 1 && c == 0x80) {
            pSink->nHeld = 2;
            continue;
        }
        if (pSink->nHeld == 2 && (c == 0xA8 || c == 0xA9)) {
            fputs(c == 0xA8 ? "\\u2028" : "\\u2029", pSink->pFile);
            pSink->nHeld = 0;
            continue;
        }
        gate_html_json_flush(pSink);
        switch (c) {
        case 0xE2: pSink->nHeld = 1; break;
        case '<': fputs("\\u003c", pSink->pFile); break;
        case '>': fputs("\\u003e", pSink->pFile); break;
        case '&': fputs("\\u0026", pSink->pFile); break;
        default: fputc(c, pSink->pFile); break;
        }
    }
    return ferror(pSink->pFile) ? -1 : 0;
}

static void gate_html_lines(FILE *pFile, const char *const *azLine, size_t nLine)
{
    size_t i;
    for (i = 0; i < nLine; i++) fputs(azLine[i], pFile);
}

/* The verdict as the CSS class knows it; anything else (a hostile or missing verdict)
 * gets the neutral colour. */
static const char *gate_html_verdict_class(const char *zVerdict)
{
    if (zVerdict != NULL && (strcmp(zVerdict, "pass") == 0 || strcmp(zVerdict, "fail") == 0
                             || strcmp(zVerdict, "error") == 0))
        return zVerdict;
    return "unknown";
}

/* The page, as a parity_report_write_file writer: 0, -1 when writing failed, -2 when
 * jansson ran out of memory dumping the document. */
static int gate_html_write(void *pCtx, FILE *pFile)
{
    const json_t *pDoc = ((const gate_html_ctx *)pCtx)->pDoc;
    const json_t *pRun = json_object_get(pDoc, "run");
    const char *zVerdict = json_string_value(json_object_get(pDoc, "verdict"));
    const char *zRunId = json_string_value(json_object_get(pRun, "id"));
    size_t nAlert = json_array_size(json_object_get(pDoc, "alerts"));
    size_t nPending = json_array_size(json_object_get(pDoc, "pending"));
    gate_html_json_sink sink = {pFile, 0};
    int dumpFailed;

    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n", pFile);
    /* Nothing may be fetched: inline script and style are all the page has. */
    fputs("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "script-src 'unsafe-inline'; style-src 'unsafe-inline'\">\n", pFile);
    fputs("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n", pFile);
    fputs("<title>parity gate: ", pFile);
    gate_html_text(pFile, zVerdict != NULL ? zVerdict : "unknown");
    if (zRunId != NULL) {
        fputs(" - ", pFile);
        gate_html_text(pFile, zRunId);
    }
    fputs("</title>\n<style>\n", pFile);
    gate_html_lines(pFile, azStyle, sizeof azStyle / sizeof azStyle[0]);
    fputs("</style>\n</head>\n<body data-errors=\"0\">\n", pFile);
    /* First, so an error anywhere later is counted (and shown) rather than lost. */
    fputs("<script id=\"gate-onerror\">\n", pFile);
    gate_html_lines(pFile, azOnError, sizeof azOnError / sizeof azOnError[0]);
    fputs("</script>\n<h1>parity gate</h1>\n", pFile);

    /* The no-script summary. */
    fprintf(pFile, "<div id=\"static-summary\" class=\"banner verdict-%s\" data-verdict=\"",
            gate_html_verdict_class(zVerdict));
    gate_html_text(pFile, zVerdict != NULL ? zVerdict : "");
    fprintf(pFile, "\" data-alerts=\"%zu\" data-pending=\"%zu\"><strong>Verdict: ", nAlert,
            nPending);
    gate_html_text(pFile, zVerdict != NULL ? zVerdict : "unknown");
    fprintf(pFile, "</strong> - %zu alert%s, %zu pending", nAlert, nAlert == 1 ? "" : "s",
            nPending);
    if (zRunId != NULL) {
        fputs(" (run ", pFile);
        gate_html_text(pFile, zRunId);
        fputs(")", pFile);
    }
    fputs(". The figures of this page are drawn by its script, which has not run.</div>\n",
          pFile);
    fputs("<div id=\"gate-errors\" hidden></div>\n<main id=\"gate\"></main>\n", pFile);

    fputs("<script type=\"application/json\" id=\"gate-data\">", pFile);
    /* json_dump_callback fails alike when its memory cannot be had and when the file
     * cannot be written: the allocator's sticky flag tells the two apart. */
    parity_alloc_reset_failed();
    dumpFailed = json_dump_callback(pDoc, gate_html_json_chunk, &sink,
                                    JSON_COMPACT | JSON_PRESERVE_ORDER) != 0;
    gate_html_json_flush(&sink);
    if (dumpFailed && parity_alloc_failed()) return -2;
    fputs("</script>\n<script id=\"gate-draw\">\n", pFile);
    gate_html_lines(pFile, azDraw, sizeof azDraw / sizeof azDraw[0]);
    fputs("</script>\n</body>\n</html>\n", pFile);
    return dumpFailed || ferror(pFile) ? -1 : 0;
}

int parity_report_gate_html(const json_t *pDoc, const char *zPath, char *zErr, size_t nErr)
{
    gate_html_ctx ctx = {pDoc};

    if (!json_is_object(pDoc)) {
        snprintf(zErr, nErr, "%s: the gate document is not a JSON object", zPath);
        return -1;
    }
    parity_report_use_allocator();
    return parity_report_write_file(zPath, gate_html_write, &ctx, zErr, nErr);
}
