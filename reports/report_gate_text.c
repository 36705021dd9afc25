/*
 * report_gate_text.c - the gate's text report for people, and the mitigations file a
 * serving runtime reads (diff/GATE.md). Both read the gate's JSON document only.
 *
 * The text report answers in the order an on-call reader asks: did it pass; what fired,
 * whose is it and what happens now; why is p99 worse when throughput is better; then the
 * table of slices with parity and telemetry side by side.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "formats/escape.h"
#include "reports/report.h"
#include "reports/report_gate.h"
#include "reports/report_internal.h"

static double num(const json_t *p)
{
    return json_is_number(p) ? json_number_value(p) : NAN;
}

/* A label set as "key=value, key=value", escaped for the terminal. */
static void labels_text(const json_t *pLabels, const json_t *pKeys, char *zBuf, size_t nBuf)
{
    size_t i, used = 0;
    json_t *pKey;
    char zEsc[256];
    zBuf[0] = 0;
    json_array_foreach(pKeys, i, pKey) {
        const char *zV = json_string_value(json_object_get(pLabels, json_string_value(pKey)));
        int n = snprintf(zBuf + used, nBuf - used, "%s%s=%s", i ? " " : "",
                         json_string_value(pKey), parity_escape(zV ? zV : "?", zEsc, sizeof zEsc));
        if (n < 0 || (size_t)n >= nBuf - used) break;
        used += (size_t)n;
    }
}

/* A number, or "-" for none. */
static const char *fig(double x, const char *zFmt, char *zBuf, size_t nBuf)
{
    if (!isfinite(x)) return "-";
    snprintf(zBuf, nBuf, zFmt, x);
    return zBuf;
}

static void print_alerts(FILE *pOut, const json_t *pDoc, const char *zList, const char *zTitle)
{
    const json_t *pKeys = json_object_get(pDoc, "slice_keys"), *pA;
    size_t i;
    char zLabels[512], zEsc[256], zV[32], zE[32];
    if (json_array_size(json_object_get(pDoc, zList)) == 0) return;
    fprintf(pOut, "\n%s:\n", zTitle);
    json_array_foreach(json_object_get(pDoc, zList), i, pA) {
        labels_text(json_object_get(pA, "labels"), pKeys, zLabels, sizeof zLabels);
        fprintf(pOut, "  %-18s %s: %s", json_string_value(json_object_get(pA, "metric")), zLabels,
                fig(num(json_object_get(pA, "value")), "%.4g", zV, sizeof zV));
        if (isfinite(num(json_object_get(pA, "eager"))))
            fprintf(pOut, " (eager %s)", fig(num(json_object_get(pA, "eager")), "%.4g", zE, sizeof zE));
        fprintf(pOut, ", %d run%s out of range, persistence %d\n",
                (int)json_integer_value(json_object_get(pA, "runs_out_of_range")),
                json_integer_value(json_object_get(pA, "runs_out_of_range")) == 1 ? "" : "s",
                (int)json_integer_value(json_object_get(pA, "persistence")));
        fprintf(pOut, "  %-18s owner %s, mitigation %s\n", "",
                parity_escape(json_string_value(json_object_get(pA, "owner")), zEsc, sizeof zEsc),
                json_string_value(json_object_get(pA, "mitigation")));
    }
}

static void print_p99(FILE *pOut, const json_t *pDoc)
{
    const json_t *pX = json_object_get(pDoc, "p99_explanation"), *pR;
    const json_t *pKeys = json_object_get(pDoc, "slice_keys");
    char zLabels[512], a[6][32];
    size_t i;
    if (!json_is_object(pX) || json_array_size(json_object_get(pX, "ranked")) == 0) return;
    fprintf(pOut, "\nLatency: compiled throughput x%s, suite p99 x%s%s\n",
            fig(num(json_object_get(pX, "throughput_ratio")), "%.2f", a[0], sizeof a[0]),
            fig(num(json_object_get(pX, "p99_ratio")), "%.2f", a[1], sizeof a[1]),
            json_is_true(json_object_get(pX, "contradiction"))
                ? ": throughput improves while p99 regresses; the slices that explain it:" : "");
    fprintf(pOut, "  %-40s %6s %17s %17s %9s %9s %8s\n", "slice", "share", "p50 eager/comp ms",
            "p99 eager/comp ms", "recompile", "compile s", "fallback");
    json_array_foreach(json_object_get(pX, "ranked"), i, pR) {
        char zP50[72], zP99[72];
        labels_text(json_object_get(pR, "labels"), pKeys, zLabels, sizeof zLabels);
        snprintf(zP50, sizeof zP50, "%s/%s",
                 fig(num(json_object_get(pR, "eager_p50_ms")), "%.3g", a[0], sizeof a[0]),
                 fig(num(json_object_get(pR, "compiled_p50_ms")), "%.3g", a[1], sizeof a[1]));
        snprintf(zP99, sizeof zP99, "%s/%s",
                 fig(num(json_object_get(pR, "eager_p99_ms")), "%.3g", a[2], sizeof a[2]),
                 fig(num(json_object_get(pR, "compiled_p99_ms")), "%.3g", a[3], sizeof a[3]));
        fprintf(pOut, "  %-40s %6s %17s %17s %9s %9s %8s\n", zLabels,
                fig(num(json_object_get(pR, "traffic_share")), "%.3f", a[4], sizeof a[4]),
                zP50, zP99,
                fig(num(json_object_get(pR, "recompiles")), "%.3g", a[5], sizeof a[5]),
                fig(num(json_object_get(pR, "compile_time_s")), "%.3g", a[0], sizeof a[0]),
                fig(100.0 * num(json_object_get(pR, "fallback_rate")), "%.0f%%", a[1], sizeof a[1]));
    }
}

static void print_slices(FILE *pOut, const json_t *pDoc)
{
    const json_t *pKeys = json_object_get(pDoc, "slice_keys"), *pS;
    char zLabels[512], a[4][32];
    size_t i;
    fprintf(pOut, "\nSlices (parity pass/fail/error, outcome agreement, compiled telemetry):\n");
    json_array_foreach(json_object_get(pDoc, "slices"), i, pS) {
        const json_t *pP = json_object_get(pS, "parity");
        const json_t *pC = json_object_get(json_object_get(pS, "telemetry"), "compiled");
        labels_text(json_object_get(pS, "labels"), pKeys, zLabels, sizeof zLabels);
        json_int_t nOneSided = json_integer_value(json_object_get(pP, "missing_eager")) +
                               json_integer_value(json_object_get(pP, "missing_compiled"));
        char zOneSided[48] = "";
        if (nOneSided) snprintf(zOneSided, sizeof zOneSided, " +%lld one-sided", (long long)nOneSided);
        fprintf(pOut, "  %-40s pairs %lld: %lld/%lld/%lld%s  outcome %s  recompiles %s  "
                "fallback %s  compile %s s\n", zLabels,
                (long long)json_integer_value(json_object_get(pS, "pairs")),
                (long long)json_integer_value(json_object_get(pP, "pass")),
                (long long)json_integer_value(json_object_get(pP, "fail")),
                (long long)json_integer_value(json_object_get(pP, "error")), zOneSided,
                fig(100.0 * num(json_object_get(pS, "outcome_agreement")), "%.1f%%", a[0], sizeof a[0]),
                fig(num(json_object_get(pC, "recompiles")), "%.3g", a[1], sizeof a[1]),
                fig(100.0 * num(json_object_get(pC, "fallback_rate")), "%.0f%%", a[2], sizeof a[2]),
                fig(num(json_object_get(pC, "compile_time_s")), "%.3g", a[3], sizeof a[3]));
    }
}

static void print_failures(FILE *pOut, const json_t *pDoc)
{
    const json_t *pPair, *pC;
    size_t i, j;
    char zEsc[512], zEsc2[256];
    int any = 0;
    json_array_foreach(json_object_get(pDoc, "pairs"), i, pPair) {
        const char *zSt = json_string_value(json_object_get(pPair, "status"));
        if (zSt == NULL || strcmp(zSt, "pass") == 0) continue;
        if (!any++) fprintf(pOut, "\nPairs that did not pass:\n");
        fprintf(pOut, "  %s: %s", parity_escape(json_string_value(json_object_get(pPair, "id")),
                                               zEsc, sizeof zEsc), zSt);
        if (json_is_string(json_object_get(pPair, "first_divergence")))
            fprintf(pOut, ", first divergence %s", parity_escape(json_string_value(
                        json_object_get(pPair, "first_divergence")), zEsc, sizeof zEsc));
        if (json_is_string(json_object_get(pPair, "error")))
            fprintf(pOut, ": %s", parity_escape(json_string_value(json_object_get(pPair, "error")),
                                               zEsc, sizeof zEsc));
        fputc('\n', pOut);
        json_array_foreach(json_object_get(pPair, "local_causes"), j, pC) {
            const json_t *pBox = json_object_get(pC, "affected_slice"), *pD;
            size_t d;
            fprintf(pOut, "    local cause %s (%s), affected [",
                    parity_escape(json_string_value(json_object_get(pC, "name")), zEsc, sizeof zEsc),
                    parity_escape(json_string_value(json_object_get(pC, "op")) ?
                                  json_string_value(json_object_get(pC, "op")) : "no op", zEsc2, sizeof zEsc2));
            json_array_foreach(pBox, d, pD)
                fprintf(pOut, "%s%lld:%lld", d ? ", " : "",
                        (long long)json_integer_value(json_array_get(pD, 0)),
                        (long long)json_integer_value(json_array_get(pD, 1)));
            fprintf(pOut, "]\n");
        }
    }
}

/* Where the two sides decide differently, and whom the reference sides with. */
static void print_outcomes(FILE *pOut, const json_t *pDoc)
{
    const json_t *pPair, *pO;
    size_t i, j;
    char zId[256], zT[256];
    int any = 0;
    json_array_foreach(json_object_get(pDoc, "pairs"), i, pPair)
        json_array_foreach(json_object_get(pPair, "outcomes"), j, pO) {
            json_int_t n = json_integer_value(json_object_get(pO, "decisions"));
            json_int_t nAgree = json_integer_value(json_object_get(pO, "agree"));
            if (n == nAgree) continue;
            if (!any++) fprintf(pOut, "\nOutcome disagreements (the reference sides with):\n");
            fprintf(pOut, "  %s %s (%s): %lld of %lld decisions differ; eager %lld, compiled "
                    "%lld, neither %lld, unknown %lld\n",
                    parity_escape(json_string_value(json_object_get(pPair, "id")), zId, sizeof zId),
                    parity_escape(json_string_value(json_object_get(pO, "tensor")), zT, sizeof zT),
                    json_string_value(json_object_get(pO, "rule")), (long long)(n - nAgree),
                    (long long)n, (long long)json_integer_value(json_object_get(pO, "ref_eager")),
                    (long long)json_integer_value(json_object_get(pO, "ref_compiled")),
                    (long long)json_integer_value(json_object_get(pO, "ref_neither")),
                    (long long)json_integer_value(json_object_get(pO, "ref_unknown")));
        }
}

static void print_warnings(FILE *pOut, const json_t *pDoc)
{
    const json_t *pW;
    size_t i;
    char zEsc[1024];
    if (json_array_size(json_object_get(pDoc, "warnings")) == 0) return;
    fprintf(pOut, "\nWarnings:\n");
    json_array_foreach(json_object_get(pDoc, "warnings"), i, pW)
        fprintf(pOut, "  %s\n", parity_escape(json_string_value(pW), zEsc, sizeof zEsc));
}

static void print_coverage(FILE *pOut, const json_t *pDoc)
{
    const json_t *pCov = json_object_get(pDoc, "coverage"), *pS, *pId;
    const json_t *pKeys = json_object_get(pDoc, "slice_keys");
    char zLabels[512], zEsc[256];
    size_t i;
    int header = 0;
    if (json_is_number(json_object_get(pCov, "traffic_covered"))) {
        fprintf(pOut, "\nCoverage: %.1f%% of traffic has parity evidence\n",
                100.0 * json_number_value(json_object_get(pCov, "traffic_covered")));
        header = 1;
    }
    json_array_foreach(json_object_get(pCov, "slices"), i, pS)
        if (!json_is_true(json_object_get(pS, "evidence"))) {
            if (!header++) fprintf(pOut, "\nCoverage:\n");
            labels_text(json_object_get(pS, "labels"), pKeys, zLabels, sizeof zLabels);
            fprintf(pOut, "  no evidence: %s\n", zLabels);
        }
    json_array_foreach(json_object_get(pCov, "compiled_without_eager"), i, pId) {
        if (!header++) fprintf(pOut, "\nCoverage:\n");
        fprintf(pOut, "  compiled without eager: %s\n",
                parity_escape(json_string_value(pId), zEsc, sizeof zEsc));
    }
}

json_t *parity_report_gate_index_pairs(const json_t *pDoc)
{
    json_t *pIndex = json_object();
    const json_t *pPairs = json_object_get(pDoc, "pairs");
    size_t i;

    if (pIndex == NULL) return NULL;
    for (i = 0; i < json_array_size(pPairs); i++) {
        json_t *pPair = json_array_get(pPairs, i);
        const char *zId = json_string_value(json_object_get(pPair, "id"));
        if (zId == NULL || json_object_get(pIndex, zId) != NULL) continue;
        if (json_object_set_nocheck(pIndex, zId, pPair) != 0) {
            json_decref(pIndex);
            return NULL;
        }
    }
    return pIndex;
}

int parity_report_gate_text(const json_t *pDoc, FILE *pOut)
{
    const json_t *pRun = json_object_get(pDoc, "run");
    const char *zVerdict = json_string_value(json_object_get(pDoc, "verdict"));
    char zEsc[512];
    fprintf(pOut, "paritydiff gate: %s (%zu pairs, %zu slices, %zu alert%s, %zu pending)\n",
            zVerdict ? zVerdict : "?", json_array_size(json_object_get(pDoc, "pairs")),
            json_array_size(json_object_get(pDoc, "slices")),
            json_array_size(json_object_get(pDoc, "alerts")),
            json_array_size(json_object_get(pDoc, "alerts")) == 1 ? "" : "s",
            json_array_size(json_object_get(pDoc, "pending")));
    fprintf(pOut, "run %s at %s\n",
            parity_escape(json_string_value(json_object_get(pRun, "id")) ?
                          json_string_value(json_object_get(pRun, "id")) : "?", zEsc, sizeof zEsc),
            json_string_value(json_object_get(pRun, "timestamp")) ?
                json_string_value(json_object_get(pRun, "timestamp")) : "?");
    print_alerts(pOut, pDoc, "alerts", "Alerts");
    print_alerts(pOut, pDoc, "pending", "Pending (out of range, below persistence)");
    print_p99(pOut, pDoc);
    print_slices(pOut, pDoc);
    print_failures(pOut, pDoc);
    print_outcomes(pOut, pDoc);
    print_coverage(pOut, pDoc);
    print_warnings(pOut, pDoc);
    return ferror(pOut) ? -1 : 0;
}

int parity_report_gate_mitigations(const json_t *pDoc, const char *zPath, char *zErr, size_t nErr)
{
    json_t *pOut = json_pack("{s:s,s:O,s:O,s:O}", "schema", "parity-mitigations/1",
                             "run", json_object_get(pDoc, "run"),
                             "slice_keys", json_object_get(pDoc, "slice_keys"),
                             "mitigations", json_object_get(pDoc, "mitigations"));
    int rc;
    if (pOut == NULL) {
        snprintf(zErr, nErr, "cannot build the mitigations file (the document lacks run, "
                 "slice_keys or mitigations)");
        return -1;
    }
    rc = parity_report_json_write(pOut, zPath, zErr, nErr);
    json_decref(pOut);
    return rc;
}
