/*
 * report_gate_junit.c - the gate's result as JUnit XML, for CI systems that show test
 * results: one <testsuite> per slice (named "key=value,key=value" in slice_keys order),
 * one <testcase> per pair of the slice, a <failure type="divergence"> for a failing pair
 * (its first divergence and local causes), an <error> for a pair that could not be judged
 * or lacks a side, and a testsuite "alerts" with a failing testcase per fired alert and a
 * skipped one per pending alert. It reads the gate's JSON document (diff/GATE.md, "JSON")
 * and nothing else. tests/gate/junit.xsd describes exactly the subset written here.
 *
 * Every string comes from captures and policies, so it may hold anything: it is escaped
 * for XML 1.0 (xml_put), where characters XML cannot carry at all (C0 controls other than
 * tab, newline and carriage return, U+FFFE, U+FFFF, and bytes that are not UTF-8) become
 * U+FFFD, so the file is well-formed whatever the document holds. Counts in the
 * attributes are taken from what is written, never from the document's own tallies, so
 * they agree with the testcases. A write error is sticky in the stream and caught by
 * parity_report_write_file's ferror.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "reports/report.h"
#include "reports/report_gate.h"
#include "reports/report_internal.h"

/* What a pair contributes to its testsuite. */
typedef enum { JUNIT_PASS, JUNIT_FAIL, JUNIT_ERROR } junit_outcome;

typedef struct junit_counts {
    size_t nTest, nFail, nError, nSkip;
} junit_counts;

typedef struct junit_ctx {
    const json_t *pDoc;
    const json_t *pKeys;      /* slice_keys; NULL or not an array: each labels' own keys */
    json_t *pPairById;        /* pair id -> pair object of the document */
} junit_ctx;

/* ---- XML text ------------------------------------------------------------------- */


/* 1 when XML 1.0 can carry code point cp (production [2] Char). */
static int junit_xml_char(unsigned long cp)
{
    if (cp < 0x20) return cp == 0x09 || cp == 0x0A || cp == 0x0D;
    return cp != 0xFFFE && cp != 0xFFFF;
}

/* Writes z (NULL: nothing) as XML character data. In an attribute (inAttr 1) tab, newline
 * and carriage return are written as references, since a parser would otherwise normalize
 * them to spaces; in text a carriage return is, since a parser would turn it into a
 * newline. Quotes are escaped everywhere so one function serves both places. */
static void xml_put(FILE *pOut, const char *z, int inAttr)
{
    const unsigned char *zIn = (const unsigned char *)z;
    size_t i = 0;

    if (z == NULL) return;
    while (zIn[i]) {
        unsigned long cp = 0;
        size_t n = parity_report_utf8_decode(zIn + i, &cp);
        if (n == 0 || !junit_xml_char(cp)) {
            fputs("\xEF\xBF\xBD", pOut);
            i += n ? n : 1;
            continue;
        }
        switch (cp) {
        case '&': fputs("&amp;", pOut); break;
        case '<': fputs("&lt;", pOut); break;
        case '>': fputs("&gt;", pOut); break;   /* keeps "]]>" out of text */
        case '"': fputs("&quot;", pOut); break;
        case '\'': fputs("&apos;", pOut); break;
        case '\r': fputs("&#13;", pOut); break;
        case '\t': fputs(inAttr ? "&#9;" : "\t", pOut); break;
        case '\n': fputs(inAttr ? "&#10;" : "\n", pOut); break;
        default: fwrite(zIn + i, 1, n, pOut); break;
        }
        i += n;
    }
}

/* ---- values of the document ------------------------------------------------------ */

/* A string member, or NULL when it is absent or not a string. */
static const char *junit_str(const json_t *pObj, const char *zKey)
{
    return json_string_value(json_object_get(pObj, zKey));
}


/* Any JSON scalar as text for people: numbers exactly, strings as they are, null or
 * absent as "-", other values as "?". */
static const char *junit_value(const json_t *pVal, char *zBuf, size_t nBuf)
{
    if (json_is_string(pVal)) return json_string_value(pVal);
    if (json_is_integer(pVal))
        snprintf(zBuf, nBuf, "%" JSON_INTEGER_FORMAT, json_integer_value(pVal));
    else if (json_is_real(pVal)) parity_report_format_double(json_real_value(pVal), zBuf, nBuf);
    else if (json_is_true(pVal)) snprintf(zBuf, nBuf, "true");
    else if (json_is_false(pVal)) snprintf(zBuf, nBuf, "false");
    else if (pVal == NULL || json_is_null(pVal)) snprintf(zBuf, nBuf, "-");
    else snprintf(zBuf, nBuf, "?");
    return zBuf;
}

static void junit_put_value(FILE *pOut, const json_t *pVal, int inAttr)
{
    char zBuf[64];
    xml_put(pOut, junit_value(pVal, zBuf, sizeof zBuf), inAttr);
}

/* The slice name "key=value,key=value": keys in slice_keys order (a key the labels lack
 * reads "(unset)", as the gate spells an unset label), or the labels' own order when the
 * document has no slice_keys. Written escaped, so no buffer limits its length. */
static void junit_put_slice_name(FILE *pOut, const junit_ctx *p, const json_t *pLabels,
                                 int inAttr)
{
    size_t i;

    if (json_is_array(p->pKeys)) {
        for (i = 0; i < json_array_size(p->pKeys); i++) {
            const char *zKey = json_string_value(json_array_get(p->pKeys, i));
            const json_t *pVal = zKey ? json_object_get(pLabels, zKey) : NULL;
            if (i > 0) fputc(',', pOut);
            xml_put(pOut, zKey ? zKey : "?", inAttr);
            fputc('=', pOut);
            if (pVal == NULL) fputs("(unset)", pOut);
            else junit_put_value(pOut, pVal, inAttr);
        }
    } else {
        const char *zKey;
        json_t *pVal;
        int first = 1;
        json_object_foreach((json_t *)pLabels, zKey, pVal) {
            if (!first) fputc(',', pOut);
            first = 0;
            xml_put(pOut, zKey, inAttr);
            fputc('=', pOut);
            junit_put_value(pOut, pVal, inAttr);
        }
    }
}

/* ---- pairs ---------------------------------------------------------------------- */


/* A pair's testcase outcome: fail for "fail", pass for "pass", error for everything
 * else (error, missing_eager, missing_compiled, an unknown status, no record at all). */
static junit_outcome junit_outcome_of(const json_t *pPair)
{
    const char *zStatus = junit_str(pPair, "status");
    if (zStatus && strcmp(zStatus, "pass") == 0) return JUNIT_PASS;
    if (zStatus && strcmp(zStatus, "fail") == 0) return JUNIT_FAIL;
    return JUNIT_ERROR;
}

static void junit_count_slice(const junit_ctx *p, const json_t *pSlice, junit_counts *pC)
{
    const json_t *pIds = json_object_get(pSlice, "pair_ids");
    size_t i;

    for (i = 0; i < json_array_size(pIds); i++) {
        const char *zId = json_string_value(json_array_get(pIds, i));
        junit_outcome o = junit_outcome_of(zId ? json_object_get(p->pPairById, zId) : NULL);
        pC->nTest++;
        if (o == JUNIT_FAIL) pC->nFail++;
        if (o == JUNIT_ERROR) pC->nError++;
    }
}

static void junit_count_alerts(const json_t *pDoc, junit_counts *pC)
{
    size_t nAlert = json_array_size(json_object_get(pDoc, "alerts"));
    size_t nPending = json_array_size(json_object_get(pDoc, "pending"));

    pC->nTest += nAlert + nPending;
    pC->nFail += nAlert;
    pC->nSkip += nPending;
}

static void junit_put_counts(FILE *pOut, const junit_counts *pC)
{
    fprintf(pOut, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\"",
            pC->nTest, pC->nFail, pC->nError, pC->nSkip);
}

/* "[0:1, 3:4]" of an affected_slice [[lo, hi], ...] (numpy-like, half-open, as the text
 * report writes it); "-" when there is none. */
static void junit_put_affected(FILE *pOut, const json_t *pSlice)
{
    size_t i;

    if (!json_is_array(pSlice)) { fputc('-', pOut); return; }
    fputc('[', pOut);
    for (i = 0; i < json_array_size(pSlice); i++) {
        const json_t *pBox = json_array_get(pSlice, i);
        if (i > 0) fputs(", ", pOut);
        junit_put_value(pOut, json_array_get(pBox, 0), 0);
        fputc(':', pOut);
        junit_put_value(pOut, json_array_get(pBox, 1), 0);
    }
    fputc(']', pOut);
}

/* <failure>: the message names the first divergence (what a CI summary shows), the text
 * lists every local cause, one a line. */
static void junit_put_failure(FILE *pOut, const json_t *pPair)
{
    const json_t *pTensors = json_object_get(pPair, "tensors");
    const json_t *pCauses = json_object_get(pPair, "local_causes");
    const char *zFirst = junit_str(pPair, "first_divergence");
    size_t i;

    fputs("<failure message=\"", pOut);
    if (zFirst) {
        fputs("first divergence: ", pOut);
        xml_put(pOut, zFirst, 1);
    } else {
        fputs("diverged; no first divergence recorded", pOut);
    }
    fputs("\" type=\"divergence\">", pOut);
    junit_put_value(pOut, json_object_get(pTensors, "fail"), 0);
    fputs(" of ", pOut);
    junit_put_value(pOut, json_object_get(pTensors, "compared"), 0);
    fprintf(pOut, " tensors fail\nlocal causes (%zu):\n", json_array_size(pCauses));
    for (i = 0; i < json_array_size(pCauses); i++) {
        const json_t *pCause = json_array_get(pCauses, i);
        fputs("  ", pOut);
        junit_put_value(pOut, json_object_get(pCause, "name"), 0);
        fputs(" op=", pOut);
        junit_put_value(pOut, json_object_get(pCause, "op"), 0);
        fputs(" affected_slice=", pOut);
        junit_put_affected(pOut, json_object_get(pCause, "affected_slice"));
        fputs(" max_ulp=", pOut);
        junit_put_value(pOut, json_object_get(pCause, "max_ulp"), 0);
        fputc('\n', pOut);
    }
    fputs("</failure>", pOut);
}

/* The message of an <error>: the pair's own error when it has one, else what its status
 * means. */
static const char *junit_error_message(const json_t *pPair, const char *zStatus)
{
    const char *zError = junit_str(pPair, "error");

    if (pPair == NULL) return "the pair is listed in its slice but has no record";
    if (zError) return zError;
    if (zStatus == NULL) return "the pair has no status";
    if (strcmp(zStatus, "missing_eager") == 0)
        return "compiled capture without an eager one: no parity evidence";
    if (strcmp(zStatus, "missing_compiled") == 0)
        return "eager capture without a compiled one: nothing to compare";
    if (strcmp(zStatus, "error") == 0) return "the pair could not be judged";
    return "unknown status";
}

/* <error type=STATUS>: the message says why, the text names both captures. */
static void junit_put_error(FILE *pOut, const json_t *pPair)
{
    const char *zStatus = junit_str(pPair, "status");

    fputs("<error message=\"", pOut);
    xml_put(pOut, junit_error_message(pPair, zStatus), 1);
    fputs("\" type=\"", pOut);
    xml_put(pOut, zStatus ? zStatus : "error", 1);
    fputs("\">eager: ", pOut);
    junit_put_value(pOut, json_object_get(pPair, "eager"), 0);
    fputs("\ncompiled: ", pOut);
    junit_put_value(pOut, json_object_get(pPair, "compiled"), 0);
    fputs("\n</error>", pOut);
}

static void junit_put_pair(FILE *pOut, const junit_ctx *p, const json_t *pSlice,
                           const char *zId)
{
    const json_t *pPair = json_object_get(p->pPairById, zId);
    junit_outcome o = junit_outcome_of(pPair);

    fputs("    <testcase name=\"", pOut);
    xml_put(pOut, zId, 1);
    fputs("\" classname=\"", pOut);
    junit_put_slice_name(pOut, p, json_object_get(pSlice, "labels"), 1);
    if (o == JUNIT_PASS) {
        fputs("\"/>\n", pOut);
        return;
    }
    fputs("\">\n      ", pOut);
    if (o == JUNIT_FAIL) junit_put_failure(pOut, pPair);
    else junit_put_error(pOut, pPair);
    fputs("\n    </testcase>\n", pOut);
}

static void junit_put_slice(FILE *pOut, const junit_ctx *p, const json_t *pSlice)
{
    const json_t *pIds = json_object_get(pSlice, "pair_ids");
    junit_counts c = { 0, 0, 0, 0 };
    size_t i;

    junit_count_slice(p, pSlice, &c);
    fputs("  <testsuite name=\"", pOut);
    junit_put_slice_name(pOut, p, json_object_get(pSlice, "labels"), 1);
    fputc('"', pOut);
    junit_put_counts(pOut, &c);
    if (c.nTest == 0) {
        fputs("/>\n", pOut);   /* a traffic slice with no pairs */
        return;
    }
    fputs(">\n", pOut);
    for (i = 0; i < json_array_size(pIds); i++) {
        const char *zId = json_string_value(json_array_get(pIds, i));
        junit_put_pair(pOut, p, pSlice, zId ? zId : "");
    }
    fputs("  </testsuite>\n", pOut);
}

/* ---- alerts --------------------------------------------------------------------- */

/* "min 1, max_ratio 1.1" of a rule's normal range, bounds in a fixed order. */
static void junit_put_normal(FILE *pOut, const json_t *pNormal)
{
    static const char *const azBound[] = { "min", "max", "min_ratio", "max_ratio" };
    size_t i;
    int first = 1;

    for (i = 0; i < sizeof azBound / sizeof azBound[0]; i++) {
        const json_t *pBound = json_object_get(pNormal, azBound[i]);
        if (pBound == NULL) continue;
        if (!first) fputs(", ", pOut);
        first = 0;
        fprintf(pOut, "%s ", azBound[i]);
        junit_put_value(pOut, pBound, 1);
    }
    if (first) fputs("none", pOut);
}

/* One sentence that says everything an on-call person needs: "METRIC = VALUE (eager E)
 * outside normal (BOUNDS) on SLICE; owner O, mitigation M". */
static void junit_put_alert_summary(FILE *pOut, const junit_ctx *p, const json_t *pAlert)
{
    const json_t *pEager = json_object_get(pAlert, "eager");

    junit_put_value(pOut, json_object_get(pAlert, "metric"), 1);
    fputs(" = ", pOut);
    junit_put_value(pOut, json_object_get(pAlert, "value"), 1);
    if (pEager != NULL && !json_is_null(pEager)) {
        fputs(" (eager ", pOut);
        junit_put_value(pOut, pEager, 1);
        fputc(')', pOut);
    }
    fputs(" outside normal (", pOut);
    junit_put_normal(pOut, json_object_get(pAlert, "normal"));
    fputs(") on ", pOut);
    junit_put_slice_name(pOut, p, json_object_get(pAlert, "labels"), 1);
    fputs("; owner ", pOut);
    junit_put_value(pOut, json_object_get(pAlert, "owner"), 1);
    fputs(", mitigation ", pOut);
    junit_put_value(pOut, json_object_get(pAlert, "mitigation"), 1);
}

/* A testcase per alert (isPending 0: <failure type="alert">) or pending alert
 * (isPending 1: <skipped>, with how many runs were out of range of how many needed). */
static void junit_put_alert(FILE *pOut, const junit_ctx *p, const json_t *pAlert,
                            int isPending)
{
    fputs("    <testcase name=\"", pOut);
    junit_put_value(pOut, json_object_get(pAlert, "rule"), 1);
    fputc(' ', pOut);
    junit_put_slice_name(pOut, p, json_object_get(pAlert, "labels"), 1);
    fputs("\" classname=\"alerts\">\n      ", pOut);
    if (isPending) {
        fputs("<skipped message=\"pending: ", pOut);
        junit_put_alert_summary(pOut, p, pAlert);
        fputs("; out of range in ", pOut);
        junit_put_value(pOut, json_object_get(pAlert, "runs_out_of_range"), 1);
        fputs(" of ", pOut);
        junit_put_value(pOut, json_object_get(pAlert, "persistence"), 1);
        fputs(" runs needed\"/>", pOut);
    } else {
        fputs("<failure message=\"", pOut);
        junit_put_alert_summary(pOut, p, pAlert);
        fputs("\" type=\"alert\">runs out of range: ", pOut);
        junit_put_value(pOut, json_object_get(pAlert, "runs_out_of_range"), 0);
        fputs(" (persistence ", pOut);
        junit_put_value(pOut, json_object_get(pAlert, "persistence"), 0);
        fputs(")\n</failure>", pOut);
    }
    fputs("\n    </testcase>\n", pOut);
}

static void junit_put_alerts(FILE *pOut, const junit_ctx *p)
{
    const json_t *pAlerts = json_object_get(p->pDoc, "alerts");
    const json_t *pPending = json_object_get(p->pDoc, "pending");
    junit_counts c = { 0, 0, 0, 0 };
    size_t i;

    junit_count_alerts(p->pDoc, &c);
    fputs("  <testsuite name=\"alerts\"", pOut);
    junit_put_counts(pOut, &c);
    if (c.nTest == 0) {
        fputs("/>\n", pOut);
        return;
    }
    fputs(">\n", pOut);
    for (i = 0; i < json_array_size(pAlerts); i++)
        junit_put_alert(pOut, p, json_array_get(pAlerts, i), 0);
    for (i = 0; i < json_array_size(pPending); i++)
        junit_put_alert(pOut, p, json_array_get(pPending, i), 1);
    fputs("  </testsuite>\n", pOut);
}

/* ---- the document --------------------------------------------------------------- */

/* The whole file, as a parity_report_write_file writer. */
static int junit_write(void *pCtx, FILE *pOut)
{
    junit_ctx *p = pCtx;
    const json_t *pSlices = json_object_get(p->pDoc, "slices");
    junit_counts total = { 0, 0, 0, 0 };
    size_t i;

    for (i = 0; i < json_array_size(pSlices); i++)
        junit_count_slice(p, json_array_get(pSlices, i), &total);
    junit_count_alerts(p->pDoc, &total);
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"paritydiff gate\"",
          pOut);
    junit_put_counts(pOut, &total);
    fputs(">\n", pOut);
    for (i = 0; i < json_array_size(pSlices); i++)
        junit_put_slice(pOut, p, json_array_get(pSlices, i));
    junit_put_alerts(pOut, p);
    fputs("</testsuites>\n", pOut);
    return ferror(pOut) ? -1 : 0;
}

int parity_report_gate_junit(const json_t *pDoc, const char *zPath, char *zErr, size_t nErr)
{
    junit_ctx ctx;
    int rc;

    parity_report_use_allocator();
    ctx.pDoc = pDoc;
    ctx.pKeys = json_object_get(pDoc, "slice_keys");
    ctx.pPairById = parity_report_gate_index_pairs(pDoc);
    if (ctx.pPairById == NULL) {
        snprintf(zErr, nErr, "out of memory writing %s", zPath);
        return -1;
    }
    rc = parity_report_write_file(zPath, junit_write, &ctx, zErr, nErr);
    json_decref(ctx.pPairById);
    return rc;
}
