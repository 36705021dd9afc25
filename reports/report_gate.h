/*
 * report_gate.h - the writers of a gate run's reports. Each reads the gate's JSON document
 * (diff/GATE.md, "JSON"; built by diff/gate_*.c) and nothing else, so the JSON, the text
 * report, JUnit, OpenMetrics and the HTML page say the same things, and `gate merge`
 * renders shards' results exactly as a run renders its own.
 *
 * The file writers replace their file atomically (parity_report_write_file, report.h) and
 * return 0, or -1 with one line in zErr.
 */
#ifndef PARITY_REPORT_GATE_H
#define PARITY_REPORT_GATE_H
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

/* The text report for people: verdict, alerts with owners and mitigations, the p99
 * explanation, and a table of slices. Returns 0, or -1 when writing failed. */
int parity_report_gate_text(const json_t *pDoc, FILE *pOut);
/* JUnit XML: a testsuite per slice, a testcase per pair (tests/gate/junit.xsd). */
int parity_report_gate_junit(const json_t *pDoc, const char *zPath, char *zErr, size_t nErr);
/* OpenMetrics text exposition, ending "# EOF". */
int parity_report_gate_metrics(const json_t *pDoc, const char *zPath, char *zErr, size_t nErr);
/* One self-contained HTML page, drawn by inline script from the embedded document. */
int parity_report_gate_html(const json_t *pDoc, const char *zPath, char *zErr, size_t nErr);
/* The mitigations artifact a serving runtime reads (GATE.md, "Mitigations file"). */
int parity_report_gate_mitigations(const json_t *pDoc, const char *zPath, char *zErr,
                                   size_t nErr);

/* The text report of paritydiff investigate, from its JSON document (diff/INVESTIGATE.md). */
int parity_report_investigation_text(const json_t *pDoc, FILE *pOut);

#endif
