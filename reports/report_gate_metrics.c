/*
 * report_gate_metrics.c - the gate's result as OpenMetrics text exposition
 * (https://openmetrics.io, 1.0), for dashboards and alerting that scrape or import it:
 *
 *   parity_gate_<telemetry>{<slice labels>,side="eager"|"compiled"}  gauges per slice, side
 *   parity_gate_outcome_agreement, parity_gate_traffic_share{<slice labels>}  gauges
 *   parity_gate_pairs_total{<slice labels>,status="..."}  counter, exemplar {pair="<id>"}
 *   parity_gate_alert{<slice labels>,rule,metric,owner,mitigation}  1 fired, 0 pending
 *   parity_gate_verdict{verdict="pass"|"fail"|"error"}  1 for the run's verdict
 *   # EOF
 *
 * It reads the gate's JSON document (diff/GATE.md, "JSON") and nothing else. A figure the
 * document has as null (no capture had it) has no sample, rather than a made-up 0.
 *
 * The text must parse whatever the captures and policies named things, so:
 * - slice keys become label names by replacing every character outside [a-zA-Z0-9_] with
 *   "_", prefixing "key_" to a name that is empty, starts with a digit or starts with the
 *   reserved "__", and suffixing "_2", "_3", ... to one that another key or a label of
 *   this writer (side, status, rule, ...) already uses;
 * - label values are escaped (backslash, double quote, newline) and bytes that are not
 *   UTF-8 become U+FFFD; an empty or non-string value leaves the label out, as OpenMetrics
 *   reads an empty value as an absent label;
 * - a series whose label set an earlier sample of its family already had (two slices or
 *   alerts with equal labels, only in a malformed document) is written once, since a
 *   family must not repeat a label set;
 * - the exemplar's pair id is cut to 124 characters (the label set of an exemplar is at
 *   most 128, and "pair" takes 4), and a "}" in it becomes U+FFFD: python's
 *   prometheus_client (0.16) ends an exemplar's label set at the first "}", quoted or not.
 * Numbers are written in the shortest form that reads back as the same double.
 * A write error is sticky in the stream and caught by parity_report_write_file's ferror.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/alloc.h"
#include "reports/report.h"
#include "reports/report_gate.h"
#include "reports/report_internal.h"

/* Characters of an exemplar's pair value: 128 for the whole label set, less "pair". */
#define METRICS_EXEMPLAR_CHARS (128 - 4)

/* A label this writer adds beside the slice labels. */
typedef struct metrics_label {
    const char *zName;
    const char *zValue;
} metrics_label;

/* Labels of this writer; slice keys are renamed rather than collide with them. */
static const char *const azOwnLabel[] = { "side", "status", "rule", "metric", "owner",
                                          "mitigation" };
#define METRICS_NOWN (sizeof azOwnLabel / sizeof azOwnLabel[0])

/* The gauges per slice and side: one table read by the writer and, through the names in
 * GATE.md, by the tests. A value is the telemetry figure divided by zDivisor. */
typedef struct metrics_side_gauge {
    const char *zName;
    const char *zUnit;     /* NULL: no UNIT line (the name has no unit suffix) */
    const char *zField;    /* key in the telemetry object T of GATE.md */
    double divisor;
    const char *zHelp;
} metrics_side_gauge;

static const metrics_side_gauge aSideGauge[] = {
    { "parity_gate_compile_time_seconds", "seconds", "compile_time_s", 1,
      "Mean time to compile before steady state, per capture of the slice." },
    { "parity_gate_recompiles", NULL, "recompiles", 1,
      "Mean recompilations per capture of the slice." },
    { "parity_gate_graph_breaks", NULL, "graph_breaks", 1,
      "Mean graph breaks per capture of the slice." },
    { "parity_gate_fallback_rate", NULL, "fallback_rate", 1,
      "Share of steady-state calls served by eager fallback." },
    { "parity_gate_latency_p50_seconds", "seconds", "p50_ms", 1000,
      "Median steady-state call latency of the slice." },
    { "parity_gate_latency_p99_seconds", "seconds", "p99_ms", 1000,
      "99th percentile steady-state call latency of the slice." },
    { "parity_gate_throughput_calls_per_second", NULL, "throughput", 1,
      "Steady-state calls per second of the slice." },
};

static const char *const azSide[] = { "eager", "compiled" };
static const char *const azStatus[] = { "pass", "fail", "error", "missing_eager",
                                        "missing_compiled" };
static const char *const azVerdict[] = { "pass", "fail", "error" };

typedef struct metrics_ctx {
    const json_t *pDoc;
    const char **azKey;       /* slice keys, as the document names them */
    char **azLabel;           /* their OpenMetrics label names */
    size_t nKey;
    json_t *pPairById;        /* pair id -> pair object of the document */
} metrics_ctx;

/* ---- text ----------------------------------------------------------------------- */


/* Writes z as the inside of a quoted label value, at most nMax characters (counted as the
 * spec counts them: code points of the unescaped value). isExemplar 1 also replaces "}"
 * (see the file comment). */
static void metrics_put_label_value(FILE *pOut, const char *z, size_t nMax, int isExemplar)
{
    const unsigned char *zIn = (const unsigned char *)z;
    size_t i = 0, nChar = 0;

    for (; zIn[i] && nChar < nMax; nChar++) {
        size_t n = parity_report_utf8_decode(zIn + i, NULL);
        if (n == 0) {
            fputs("\xEF\xBF\xBD", pOut);
            i++;
            continue;
        }
        if (zIn[i] == '\\') fputs("\\\\", pOut);
        else if (zIn[i] == '"') fputs("\\\"", pOut);
        else if (zIn[i] == '\n') fputs("\\n", pOut);
        else if (zIn[i] == '}' && isExemplar) fputs("\xEF\xBF\xBD", pOut);
        else fwrite(zIn + i, 1, n, pOut);
        i += n;
    }
}


/* A JSON number divided by divisor into zBuf; integers stay exact when not divided.
 * Returns 0, or -1 when pVal is not a number (null: no sample). */
static int metrics_format_number(const json_t *pVal, double divisor, char *zBuf, size_t nBuf)
{
    if (json_is_integer(pVal) && divisor == 1) {
        snprintf(zBuf, nBuf, "%" JSON_INTEGER_FORMAT, json_integer_value(pVal));
        return 0;
    }
    if (!json_is_number(pVal)) return -1;
    parity_report_format_double(json_number_value(pVal) / divisor, zBuf, nBuf);
    return 0;
}

/* ---- labels --------------------------------------------------------------------- */

/* The text of a label value: a non-empty string, or NULL, which leaves the label out. */
static const char *metrics_label_text(const json_t *pVal)
{
    const char *z = json_string_value(pVal);
    return (z && z[0]) ? z : NULL;
}

static int metrics_name_taken(const metrics_ctx *p, size_t nDone, const char *zName)
{
    size_t i;
    for (i = 0; i < METRICS_NOWN; i++)
        if (strcmp(azOwnLabel[i], zName) == 0) return 1;
    for (i = 0; i < nDone; i++)
        if (strcmp(p->azLabel[i], zName) == 0) return 1;
    return 0;
}

/* The label name of slice key zKey (the file comment gives the rule), unique among the
 * first nDone keys' names and this writer's labels. Returns NULL when memory ran out. */
static char *metrics_label_name(const metrics_ctx *p, size_t nDone, const char *zKey)
{
    size_t nKey = strlen(zKey), nBase = 0, i;
    size_t nAlloc = nKey + sizeof "key_" + 24;  /* room for the prefix and "_N" */
    char *zName = parity_malloc(nAlloc);
    unsigned long iSuffix;

    if (zName == NULL) return NULL;
    for (i = 0; i < nKey; i++) {
        unsigned char c = (unsigned char)zKey[i];
        if ((c & 0xC0) == 0x80) continue;   /* one "_" per character, not per byte */
        zName[nBase++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '_') ? (char)c : '_';
    }
    zName[nBase] = '\0';
    if (nBase == 0 || (zName[0] >= '0' && zName[0] <= '9') || strncmp(zName, "__", 2) == 0) {
        memmove(zName + 4, zName, nBase + 1);
        memcpy(zName, "key_", 4);
        nBase += 4;
    }
    for (iSuffix = 2; metrics_name_taken(p, nDone, zName); iSuffix++)
        snprintf(zName + nBase, nAlloc - nBase, "_%lu", iSuffix);
    return zName;
}

/* Writes "name{slice labels,extra labels}" (no braces when there are no labels). */
static void metrics_put_series(FILE *pOut, const metrics_ctx *p, const char *zName,
                               const json_t *pLabels, const metrics_label *aExtra,
                               size_t nExtra)
{
    size_t i;
    int first = 1;

    fputs(zName, pOut);
    for (i = 0; i < p->nKey + nExtra; i++) {
        const char *zLabel, *zValue;
        if (i < p->nKey) {
            zLabel = p->azLabel[i];
            zValue = metrics_label_text(json_object_get(pLabels, p->azKey[i]));
        } else {
            zLabel = aExtra[i - p->nKey].zName;
            zValue = aExtra[i - p->nKey].zValue;
        }
        if (zValue == NULL || zValue[0] == '\0') continue;
        fprintf(pOut, "%s%s=\"", first ? "{" : ",", zLabel);
        first = 0;
        metrics_put_label_value(pOut, zValue, (size_t)-1, 0);
        fputc('"', pOut);
    }
    if (!first) fputc('}', pOut);
}

/* 1 when two label objects read the same for every slice key, so they name one series. */
static int metrics_same_labels(const metrics_ctx *p, const json_t *pA, const json_t *pB)
{
    size_t i;

    for (i = 0; i < p->nKey; i++) {
        const char *zA = metrics_label_text(json_object_get(pA, p->azKey[i]));
        const char *zB = metrics_label_text(json_object_get(pB, p->azKey[i]));
        if ((zA == NULL) != (zB == NULL) || (zA && strcmp(zA, zB) != 0)) return 0;
    }
    return 1;
}

/* 1 when an earlier slice has the labels of slice iSlice (file comment: written once). */
static int metrics_slice_repeats(const metrics_ctx *p, size_t iSlice)
{
    const json_t *pSlices = json_object_get(p->pDoc, "slices");
    const json_t *pLabels = json_object_get(json_array_get(pSlices, iSlice), "labels");
    size_t i;

    for (i = 0; i < iSlice; i++)
        if (metrics_same_labels(p, json_object_get(json_array_get(pSlices, i), "labels"),
                                pLabels))
            return 1;
    return 0;
}

/* ---- families ------------------------------------------------------------------- */

static void metrics_put_header(FILE *pOut, const char *zName, const char *zType,
                               const char *zUnit, const char *zHelp)
{
    fprintf(pOut, "# TYPE %s %s\n", zName, zType);
    if (zUnit) fprintf(pOut, "# UNIT %s %s\n", zName, zUnit);
    fprintf(pOut, "# HELP %s %s\n", zName, zHelp);
}

static void metrics_put_side_gauge(FILE *pOut, const metrics_ctx *p,
                                   const metrics_side_gauge *pGauge)
{
    const json_t *pSlices = json_object_get(p->pDoc, "slices");
    size_t i, iSide;

    metrics_put_header(pOut, pGauge->zName, "gauge", pGauge->zUnit, pGauge->zHelp);
    for (i = 0; i < json_array_size(pSlices); i++) {
        const json_t *pSlice = json_array_get(pSlices, i);
        const json_t *pTelemetry = json_object_get(pSlice, "telemetry");
        if (metrics_slice_repeats(p, i)) continue;
        for (iSide = 0; iSide < 2; iSide++) {
            const json_t *pT = json_object_get(pTelemetry, azSide[iSide]);
            metrics_label side = { "side", azSide[iSide] };
            char zValue[64];
            if (metrics_format_number(json_object_get(pT, pGauge->zField), pGauge->divisor,
                                      zValue, sizeof zValue) != 0)
                continue;
            metrics_put_series(pOut, p, pGauge->zName, json_object_get(pSlice, "labels"),
                               &side, 1);
            fprintf(pOut, " %s\n", zValue);
        }
    }
}

/* A gauge with one sample per slice, from the slice's member zField. */
static void metrics_put_slice_gauge(FILE *pOut, const metrics_ctx *p, const char *zName,
                                    const char *zField, const char *zHelp)
{
    const json_t *pSlices = json_object_get(p->pDoc, "slices");
    size_t i;

    metrics_put_header(pOut, zName, "gauge", NULL, zHelp);
    for (i = 0; i < json_array_size(pSlices); i++) {
        const json_t *pSlice = json_array_get(pSlices, i);
        char zValue[64];
        if (metrics_slice_repeats(p, i) ||
            metrics_format_number(json_object_get(pSlice, zField), 1, zValue,
                                  sizeof zValue) != 0)
            continue;
        metrics_put_series(pOut, p, zName, json_object_get(pSlice, "labels"), NULL, 0);
        fprintf(pOut, " %s\n", zValue);
    }
}

/* The id of the slice's first pair (in pair_ids order) with status zStatus, or NULL. */
static const char *metrics_first_pair(const metrics_ctx *p, const json_t *pSlice,
                                      const char *zStatus)
{
    const json_t *pIds = json_object_get(pSlice, "pair_ids");
    size_t i;

    for (i = 0; i < json_array_size(pIds); i++) {
        const char *zId = json_string_value(json_array_get(pIds, i));
        const json_t *pPair = zId ? json_object_get(p->pPairById, zId) : NULL;
        const char *zPairStatus = json_string_value(json_object_get(pPair, "status"));
        if (zPairStatus && strcmp(zPairStatus, zStatus) == 0) return zId;
    }
    return NULL;
}

/* parity_gate_pairs_total per slice and status. A count that is not a non-negative
 * number (only in a malformed document) has no sample: a counter cannot hold it. */
static void metrics_put_pairs(FILE *pOut, const metrics_ctx *p)
{
    const json_t *pSlices = json_object_get(p->pDoc, "slices");
    size_t i, iStatus;

    metrics_put_header(pOut, "parity_gate_pairs", "counter", NULL,
                       "Pairs of the slice by status; the exemplar names the first such pair.");
    for (i = 0; i < json_array_size(pSlices); i++) {
        const json_t *pSlice = json_array_get(pSlices, i);
        const json_t *pParity = json_object_get(pSlice, "parity");
        if (metrics_slice_repeats(p, i)) continue;
        for (iStatus = 0; iStatus < sizeof azStatus / sizeof azStatus[0]; iStatus++) {
            const json_t *pCount = json_object_get(pParity, azStatus[iStatus]);
            metrics_label status = { "status", azStatus[iStatus] };
            const char *zExemplar;
            char zValue[64];
            if (!json_is_number(pCount) || !(json_number_value(pCount) >= 0)) continue;
            metrics_format_number(pCount, 1, zValue, sizeof zValue);
            metrics_put_series(pOut, p, "parity_gate_pairs_total",
                               json_object_get(pSlice, "labels"), &status, 1);
            fprintf(pOut, " %s", zValue);
            zExemplar = json_number_value(pCount) > 0
                      ? metrics_first_pair(p, pSlice, azStatus[iStatus]) : NULL;
            if (zExemplar) {
                fputs(" # {pair=\"", pOut);
                metrics_put_label_value(pOut, zExemplar, METRICS_EXEMPLAR_CHARS, 1);
                fputs("\"} 1", pOut);
            }
            fputc('\n', pOut);
        }
    }
}

/* 1 when two alerts name one series: same rule, metric, owner, mitigation and slice. */
static int metrics_same_alert(const metrics_ctx *p, const json_t *pA, const json_t *pB)
{
    static const char *const azField[] = { "rule", "metric", "owner", "mitigation" };
    size_t i;

    for (i = 0; i < sizeof azField / sizeof azField[0]; i++) {
        const char *zA = metrics_label_text(json_object_get(pA, azField[i]));
        const char *zB = metrics_label_text(json_object_get(pB, azField[i]));
        if ((zA == NULL) != (zB == NULL) || (zA && strcmp(zA, zB) != 0)) return 0;
    }
    return metrics_same_labels(p, json_object_get(pA, "labels"),
                               json_object_get(pB, "labels"));
}

/* The iAlert-th alert of alerts followed by pending, or NULL past the end. */
static const json_t *metrics_alert_at(const metrics_ctx *p, size_t iAlert)
{
    const json_t *pAlerts = json_object_get(p->pDoc, "alerts");
    size_t nAlert = json_array_size(pAlerts);

    if (iAlert < nAlert) return json_array_get(pAlerts, iAlert);
    return json_array_get(json_object_get(p->pDoc, "pending"), iAlert - nAlert);
}

static void metrics_put_alerts(FILE *pOut, const metrics_ctx *p)
{
    size_t nAlert = json_array_size(json_object_get(p->pDoc, "alerts"));
    const json_t *pAlert;
    size_t i, j;

    metrics_put_header(pOut, "parity_gate_alert", "gauge", NULL,
                       "1 for an alert that fired in this run, 0 for a pending one.");
    for (i = 0; (pAlert = metrics_alert_at(p, i)) != NULL; i++) {
        metrics_label aLabel[4] = {
            { "rule", metrics_label_text(json_object_get(pAlert, "rule")) },
            { "metric", metrics_label_text(json_object_get(pAlert, "metric")) },
            { "owner", metrics_label_text(json_object_get(pAlert, "owner")) },
            { "mitigation", metrics_label_text(json_object_get(pAlert, "mitigation")) },
        };
        for (j = 0; j < i; j++)
            if (metrics_same_alert(p, metrics_alert_at(p, j), pAlert)) break;
        if (j < i) continue;
        metrics_put_series(pOut, p, "parity_gate_alert", json_object_get(pAlert, "labels"),
                           aLabel, 4);
        fprintf(pOut, " %d\n", i < nAlert ? 1 : 0);
    }
}

/* One sample per verdict, 1 for the run's: a dashboard can graph each state, and an
 * unknown verdict (a malformed document) shows as all three 0. */
static void metrics_put_verdict(FILE *pOut, const metrics_ctx *p)
{
    const char *zVerdict = json_string_value(json_object_get(p->pDoc, "verdict"));
    size_t i;

    metrics_put_header(pOut, "parity_gate_verdict", "gauge", NULL,
                       "1 for the verdict of the gate run, 0 for the others.");
    for (i = 0; i < sizeof azVerdict / sizeof azVerdict[0]; i++)
        fprintf(pOut, "parity_gate_verdict{verdict=\"%s\"} %d\n", azVerdict[i],
                zVerdict != NULL && strcmp(zVerdict, azVerdict[i]) == 0);
}

/* The whole exposition, as a parity_report_write_file writer. */
static int metrics_write(void *pCtx, FILE *pOut)
{
    const metrics_ctx *p = pCtx;
    size_t i;

    for (i = 0; i < sizeof aSideGauge / sizeof aSideGauge[0]; i++)
        metrics_put_side_gauge(pOut, p, &aSideGauge[i]);
    metrics_put_slice_gauge(pOut, p, "parity_gate_outcome_agreement", "outcome_agreement",
                            "Share of outcome decisions on which eager and compiled agree.");
    metrics_put_slice_gauge(pOut, p, "parity_gate_traffic_share", "traffic_share",
                            "Share of production traffic of the slice.");
    metrics_put_pairs(pOut, p);
    metrics_put_alerts(pOut, p);
    metrics_put_verdict(pOut, p);
    fputs("# EOF\n", pOut);
    return ferror(pOut) ? -1 : 0;
}

/* ---- setup ---------------------------------------------------------------------- */


/* Fills the slice keys (string entries of slice_keys; others are skipped) and their
 * label names. Returns 0, or -1 when memory ran out. */
static int metrics_init_keys(metrics_ctx *p)
{
    const json_t *pKeys = json_object_get(p->pDoc, "slice_keys");
    size_t n = json_array_size(pKeys), i;

    p->nKey = 0;
    if (n == 0) return 0;
    p->azKey = parity_malloc(n * sizeof *p->azKey);
    p->azLabel = parity_malloc(n * sizeof *p->azLabel);
    if (p->azKey == NULL || p->azLabel == NULL) return -1;
    for (i = 0; i < n; i++) {
        const char *zKey = json_string_value(json_array_get(pKeys, i));
        if (zKey == NULL) continue;
        p->azLabel[p->nKey] = metrics_label_name(p, p->nKey, zKey);
        if (p->azLabel[p->nKey] == NULL) return -1;
        p->azKey[p->nKey++] = zKey;
    }
    return 0;
}

static void metrics_free(metrics_ctx *p)
{
    size_t i;

    if (p->azLabel)
        for (i = 0; i < p->nKey; i++) free(p->azLabel[i]);
    free(p->azLabel);
    free(p->azKey);
    json_decref(p->pPairById);
}

int parity_report_gate_metrics(const json_t *pDoc, const char *zPath, char *zErr, size_t nErr)
{
    metrics_ctx ctx;
    int rc;

    memset(&ctx, 0, sizeof ctx);
    parity_report_use_allocator();
    ctx.pDoc = pDoc;
    ctx.pPairById = parity_report_gate_index_pairs(pDoc);
    if (ctx.pPairById == NULL || metrics_init_keys(&ctx) != 0) {
        metrics_free(&ctx);
        snprintf(zErr, nErr, "out of memory writing %s", zPath);
        return -1;
    }
    rc = parity_report_write_file(zPath, metrics_write, &ctx, zErr, nErr);
    metrics_free(&ctx);
    return rc;
}
