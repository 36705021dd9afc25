/*
 * gate_slices.c - pair records into slices (diff/GATE.md, "Labels and slices",
 * "Telemetry", "Traffic and coverage", the p99 explanation).
 *
 * Percentiles of captures cannot be merged (the p99 of two p99s is no p99), so a slice's
 * latency percentiles come from its captures' latency histograms added together; a
 * capture's own latency_p50_ms/latency_p99_ms stand in only where no capture of the slice
 * has a histogram, and the figure is then flagged estimated.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diff/gate.h"
#include "reports/report_internal.h"

#define REASONS_MAX 5

static double num(const json_t *p)
{
    return json_is_number(p) ? json_number_value(p) : NAN;
}

static json_t *num_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

char *parity_gate_slice_name(const json_t *pLabels, const json_t *pKeys)
{
    size_t i, n = 1;
    json_t *pKey;
    char *z;
    json_array_foreach(pKeys, i, pKey) {
        const char *zV = json_string_value(json_object_get(pLabels, json_string_value(pKey)));
        n += strlen(json_string_value(pKey)) + strlen(zV ? zV : PARITY_GATE_UNSET) + 2;
    }
    z = malloc(n);
    if (z == NULL) return NULL;
    z[0] = 0;
    json_array_foreach(pKeys, i, pKey) {
        const char *zV = json_string_value(json_object_get(pLabels, json_string_value(pKey)));
        if (i) strcat(z, ",");
        strcat(z, json_string_value(pKey));
        strcat(z, "=");
        strcat(z, zV ? zV : PARITY_GATE_UNSET);
    }
    return z;
}

/* ---- labels ------------------------------------------------------------------------ */

int parity_gate_labels_match(const char *zWant, const json_t *pLabels)
{
    char zCopy[1024], *zSave = NULL, *zTok;
    if (zWant == NULL) return 1;
    snprintf(zCopy, sizeof zCopy, "%s", zWant);
    for (zTok = strtok_r(zCopy, ",", &zSave); zTok; zTok = strtok_r(NULL, ",", &zSave)) {
        char *zEq = strchr(zTok, '=');
        const char *zV;
        if (zEq == NULL) return 0;
        *zEq = 0;
        zV = json_string_value(json_object_get(pLabels, zTok));
        if (zV == NULL || strcmp(zV, zEq + 1) != 0) return 0;
    }
    return 1;
}

char *parity_gate_scalar_text(const json_t *pV)
{
    char zBuf[64];
    if (json_is_string(pV)) return strdup(json_string_value(pV));
    if (json_is_integer(pV)) {
        snprintf(zBuf, sizeof zBuf, "%lld", (long long)json_integer_value(pV));
        return strdup(zBuf);
    }
    if (json_is_real(pV)) {
        snprintf(zBuf, sizeof zBuf, "%.17g", json_real_value(pV));
        return strdup(zBuf);
    }
    return NULL;
}

static int label_pair(json_t *pPair, const json_t *pKeys, json_t *pWarnings)
{
    json_t *pLabels = json_object(), *pKey;
    json_t *pIdE = json_object_get(json_object_get(pPair, "identity"), "eager");
    json_t *pIdC = json_object_get(json_object_get(pPair, "identity"), "compiled");
    size_t i;
    int rc = 0;
    json_array_foreach(pKeys, i, pKey) {
        const char *zKey = json_string_value(pKey);
        char *zE = parity_gate_scalar_text(json_object_get(pIdE, zKey));
        char *zC = parity_gate_scalar_text(json_object_get(pIdC, zKey));
        if (zE && zC && strcmp(zE, zC) != 0) {
            char zW[1024];
            snprintf(zW, sizeof zW, "%s: label %s is '%s' in eager and '%s' in compiled; "
                     "eager's is used", json_string_value(json_object_get(pPair, "id")),
                     zKey, zE, zC);
            rc |= parity_report_append(pWarnings, parity_report_string(zW));
        }
        rc |= parity_report_set(pLabels, zKey, parity_report_string(zE ? zE : zC ? zC : PARITY_GATE_UNSET));
        free(zE);
        free(zC);
    }
    rc |= parity_report_set(pPair, "labels", pLabels);
    return rc;
}

/* ---- telemetry of one side over a slice -------------------------------------------- */

typedef struct {
    size_t nCaptures;
    double sum[4];              /* compile_time_s, recompiles, graph_breaks, eager_frames */
    size_t n[4];
    double calls, fallbackCalls, steadyTime;
    int hasCalls, hasFallback, hasSteady;
    double aHist[PARITY_GATE_LATENCY_BUCKETS];
    size_t nHist;
    double p50Sum, p99Sum;
    size_t nP50, nP99;
    json_t *pReasons;           /* distinct lines */
} side_acc;

static const char *const azMean[4] = { "compile_time_s", "recompiles", "graph_breaks",
                                       "eager_frames" };

static void acc_add(side_acc *pA, const json_t *pTel)
{
    size_t i;
    double x;
    const json_t *pHist = json_object_get(pTel, "latency_hist_ms");
    const char *zReasons = json_string_value(json_object_get(pTel, "recompile_reasons"));
    if (!json_is_object(pTel)) return;
    pA->nCaptures++;
    for (i = 0; i < 4; i++)
        if (isfinite(x = num(json_object_get(pTel, azMean[i])))) {
            pA->sum[i] += x;
            pA->n[i]++;
        }
    if (isfinite(x = num(json_object_get(pTel, "calls")))) { pA->calls += x; pA->hasCalls = 1; }
    if (isfinite(x = num(json_object_get(pTel, "fallback_calls")))) {
        pA->fallbackCalls += x;
        pA->hasFallback = 1;
    }
    if (isfinite(x = num(json_object_get(pTel, "steady_time_s")))) {
        pA->steadyTime += x;
        pA->hasSteady = 1;
    }
    if (json_is_array(pHist) && json_array_size(pHist) == PARITY_GATE_LATENCY_BUCKETS) {
        for (i = 0; i < PARITY_GATE_LATENCY_BUCKETS; i++) {
            x = num(json_array_get(pHist, i));
            if (isfinite(x) && x > 0) pA->aHist[i] += x;
        }
        pA->nHist++;
    }
    if (isfinite(x = num(json_object_get(pTel, "latency_p50_ms")))) { pA->p50Sum += x; pA->nP50++; }
    if (isfinite(x = num(json_object_get(pTel, "latency_p99_ms")))) { pA->p99Sum += x; pA->nP99++; }
    while (zReasons && *zReasons && json_array_size(pA->pReasons) < REASONS_MAX) {
        size_t n = strcspn(zReasons, "\n"), j;
        json_t *pLine = json_stringn(zReasons, n), *pOld;
        int seen = 0;
        json_array_foreach(pA->pReasons, j, pOld) seen |= json_equal(pOld, pLine);
        if (pLine && n > 0 && !seen) json_array_append(pA->pReasons, pLine);
        json_decref(pLine);
        zReasons += n + (zReasons[n] == '\n');
    }
}

/* The lower edge (ms) of latency bucket i (GATE.md, "Latency buckets"). */
static double bucket_lo(int i)
{
    return i == 0 ? 0.0 : 0.001 * exp2((i - 1) / 8.0);
}

/* The latency (ms) at quantile q of histogram counts, interpolated linearly within the
 * bucket as Prometheus's histogram_quantile does; NAN when the histogram is empty. */
static double hist_quantile(const double *aCount, double q)
{
    double total = 0.0, cum = 0.0, rank;
    int i;
    for (i = 0; i < PARITY_GATE_LATENCY_BUCKETS; i++) total += aCount[i];
    if (total <= 0.0) return NAN;
    rank = q * total;
    for (i = 0; i < PARITY_GATE_LATENCY_BUCKETS; i++) {
        if (aCount[i] > 0 && cum + aCount[i] >= rank) {
            if (i == PARITY_GATE_LATENCY_BUCKETS - 1) return bucket_lo(i);
            return bucket_lo(i) + (bucket_lo(i + 1) - bucket_lo(i)) * (rank - cum) / aCount[i];
        }
        cum += aCount[i];
    }
    return bucket_lo(PARITY_GATE_LATENCY_BUCKETS - 1);
}

static void acc_percentiles(const side_acc *pA, double *pP50, double *pP99, int *pEstimated)
{
    *pEstimated = 0;
    if (pA->nHist > 0) {
        *pP50 = hist_quantile(pA->aHist, 0.50);
        *pP99 = hist_quantile(pA->aHist, 0.99);
        return;
    }
    *pP50 = pA->nP50 ? pA->p50Sum / pA->nP50 : NAN;
    *pP99 = pA->nP99 ? pA->p99Sum / pA->nP99 : NAN;
    *pEstimated = pA->nP50 > 0 || pA->nP99 > 0;
}

static json_t *acc_json(const side_acc *pA)
{
    json_t *p = json_object(), *pHist;
    double p50, p99;
    int est, rc = 0;
    size_t i;
    acc_percentiles(pA, &p50, &p99, &est);
    rc |= parity_report_set(p, "captures", json_integer((json_int_t)pA->nCaptures));
    for (i = 0; i < 4; i++)
        rc |= parity_report_set(p, azMean[i], num_or_null(pA->n[i] ? pA->sum[i] / pA->n[i] : NAN));
    rc |= parity_report_set(p, "calls", pA->hasCalls ? json_real(pA->calls) : json_null());
    rc |= parity_report_set(p, "fallback_calls",
                            pA->hasFallback ? json_real(pA->fallbackCalls) : json_null());
    rc |= parity_report_set(p, "fallback_rate", num_or_null(pA->hasFallback && pA->calls > 0
                                                            ? pA->fallbackCalls / pA->calls : NAN));
    rc |= parity_report_set(p, "steady_time_s", pA->hasSteady ? json_real(pA->steadyTime) : json_null());
    rc |= parity_report_set(p, "throughput", num_or_null(pA->hasCalls && pA->steadyTime > 0
                                                         ? pA->calls / pA->steadyTime : NAN));
    rc |= parity_report_set(p, "p50_ms", num_or_null(p50));
    rc |= parity_report_set(p, "p99_ms", num_or_null(p99));
    rc |= parity_report_set(p, "latency_estimated", json_boolean(est));
    if (pA->nHist) {
        pHist = json_array();
        for (i = 0; i < PARITY_GATE_LATENCY_BUCKETS; i++)
            rc |= parity_report_append(pHist, json_integer((json_int_t)pA->aHist[i]));
    } else {
        pHist = json_null();
    }
    rc |= parity_report_set(p, "latency_hist_ms", pHist);
    rc |= parity_report_set(p, "recompile_reasons", json_deep_copy(pA->pReasons));
    return parity_report_finish(p, rc);
}

/* ---- slices ------------------------------------------------------------------------ */

typedef struct {
    char *zName;
    json_t *pLabels;
    json_t *pPairIds;
    uint64_t aStatus[5];        /* pass, fail, error, missing_eager, missing_compiled */
    uint64_t aOutcome[6];       /* decisions, agree, ref_eager, ref_compiled, ref_neither, ref_unknown */
    side_acc eager, compiled;
    double share;               /* NAN: no traffic file, or no row */
    json_t *pBuilds;            /* key -> distinct values of the compiled build's keys */
} slice_acc;

/* The compiled side's build: captures of one slice made by different compiler versions,
 * configurations or artifact caches are not one population, and the gate says so. */
static const char *const azBuildKey[] = { "compiler_version", "config_hash", "cache_hash", NULL };

static const char *const azStatus[5] = { "pass", "fail", "error", "missing_eager",
                                         "missing_compiled" };
static const char *const azOutcome[6] = { "decisions", "agree", "ref_eager", "ref_compiled",
                                          "ref_neither", "ref_unknown" };

static slice_acc *slice_get(slice_acc **paS, size_t *pnS, const char *zName, const json_t *pLabels)
{
    size_t i;
    slice_acc *a;
    for (i = 0; i < *pnS; i++)
        if (strcmp((*paS)[i].zName, zName) == 0) return &(*paS)[i];
    a = realloc(*paS, (*pnS + 1) * sizeof *a);
    if (a == NULL) return NULL;
    *paS = a;
    memset(&a[*pnS], 0, sizeof *a);
    a[*pnS].zName = strdup(zName);
    a[*pnS].pLabels = json_deep_copy(pLabels);
    a[*pnS].pPairIds = json_array();
    a[*pnS].eager.pReasons = json_array();
    a[*pnS].compiled.pReasons = json_array();
    a[*pnS].share = NAN;
    a[*pnS].pBuilds = json_object();
    return &a[(*pnS)++];
}

static int slice_add_pair(slice_acc *pS, const json_t *pPair)
{
    const char *zSt = json_string_value(json_object_get(pPair, "status"));
    const json_t *pTel = json_object_get(pPair, "telemetry"), *pO;
    size_t i, j;
    for (i = 0; i < 5; i++)
        if (zSt && strcmp(zSt, azStatus[i]) == 0) pS->aStatus[i]++;
    json_array_foreach(json_object_get(pPair, "outcomes"), j, pO)
        for (i = 0; i < 6; i++) {
            double x = num(json_object_get(pO, azOutcome[i]));
            if (isfinite(x)) pS->aOutcome[i] += (uint64_t)x;
        }
    if (json_object_get(pPair, "eager") && !json_is_null(json_object_get(pPair, "eager")))
        acc_add(&pS->eager, json_object_get(pTel, "eager"));
    if (json_object_get(pPair, "compiled") && !json_is_null(json_object_get(pPair, "compiled"))) {
        const char *const *pzKey;
        acc_add(&pS->compiled, json_object_get(pTel, "compiled"));
        for (pzKey = azBuildKey; *pzKey; pzKey++) {
            json_t *pV = json_object_get(json_object_get(pTel, "compiled"), *pzKey), *pSeen, *pOld;
            size_t k;
            int seen = 0;
            if (!pV) pV = json_object_get(json_object_get(json_object_get(pPair, "identity"),
                                                          "compiled"), *pzKey);
            if (!json_is_string(pV)) continue;
            pSeen = json_object_get(pS->pBuilds, *pzKey);
            if (pSeen == NULL) {
                json_object_set_new(pS->pBuilds, *pzKey, json_array());
                pSeen = json_object_get(pS->pBuilds, *pzKey);
            }
            json_array_foreach(pSeen, k, pOld) seen |= json_equal(pOld, pV);
            if (!seen && pSeen) json_array_append(pSeen, pV);
        }
    }
    return json_array_append(pS->pPairIds, json_object_get(pPair, "id"));
}

/* An outcome tensor that could not be decided is a warning of the run: its decisions are
 * missing from the slice's agreement, which must be said, not hidden in the pair. */
static int warn_outcome_errors(const json_t *pPair, json_t *pWarnings)
{
    const json_t *pO;
    size_t i;
    int rc = 0;
    json_array_foreach(json_object_get(pPair, "outcomes"), i, pO) {
        const char *zErr = json_string_value(json_object_get(pO, "error"));
        char zW[1024];
        if (zErr == NULL) continue;
        snprintf(zW, sizeof zW, "%s: outcome of %s not decided: %s",
                 json_string_value(json_object_get(pPair, "id")),
                 json_string_value(json_object_get(pO, "tensor")), zErr);
        rc |= parity_report_append(pWarnings, parity_report_string(zW));
    }
    return rc;
}

static int warn_builds(const slice_acc *pS, json_t *pWarnings)
{
    json_t *pValues;
    const char *zKey;
    int rc = 0;
    json_object_foreach(pS->pBuilds, zKey, pValues) {
        char zW[1024];
        if (json_array_size(pValues) < 2) continue;
        snprintf(zW, sizeof zW, "%s: the compiled captures differ in %s (%zu values: "
                             "%s, %s%s); the slice mixes builds", pS->zName, zKey,
                             json_array_size(pValues), json_string_value(json_array_get(pValues, 0)),
                             json_string_value(json_array_get(pValues, 1)),
                             json_array_size(pValues) > 2 ? ", ..." : "");
        rc |= parity_report_append(pWarnings, parity_report_string(zW));
    }
    return rc;
}

static int by_name(const void *pA, const void *pB)
{
    return strcmp(((const slice_acc *)pA)->zName, ((const slice_acc *)pB)->zName);
}

/* A metric's {value, eager}. */
static json_t *metric(double value, double eager)
{
    return json_pack("{s:o,s:o}", "value", num_or_null(value), "eager", num_or_null(eager));
}

static json_t *slice_metrics(const slice_acc *pS, const json_t *pE, const json_t *pC)
{
    json_t *p = json_object();
    uint64_t nJudged = pS->aStatus[0] + pS->aStatus[1] + pS->aStatus[2];
    int rc = 0;
    rc |= parity_report_set(p, "numerical_parity",
                            metric(nJudged ? (double)pS->aStatus[0] / nJudged : NAN, NAN));
    rc |= parity_report_set(p, "outcome_parity", metric(pS->aOutcome[0]
                            ? (double)pS->aOutcome[1] / pS->aOutcome[0] : NAN, NAN));
    rc |= parity_report_set(p, "compile_time_s", metric(num(json_object_get(pC, "compile_time_s")),
                                                        num(json_object_get(pE, "compile_time_s"))));
    rc |= parity_report_set(p, "recompiles", metric(num(json_object_get(pC, "recompiles")),
                                                    num(json_object_get(pE, "recompiles"))));
    rc |= parity_report_set(p, "graph_breaks", metric(num(json_object_get(pC, "graph_breaks")),
                                                      num(json_object_get(pE, "graph_breaks"))));
    rc |= parity_report_set(p, "fallback_rate", metric(num(json_object_get(pC, "fallback_rate")),
                                                       num(json_object_get(pE, "fallback_rate"))));
    rc |= parity_report_set(p, "p50_latency_ms", metric(num(json_object_get(pC, "p50_ms")),
                                                        num(json_object_get(pE, "p50_ms"))));
    rc |= parity_report_set(p, "p99_latency_ms", metric(num(json_object_get(pC, "p99_ms")),
                                                        num(json_object_get(pE, "p99_ms"))));
    rc |= parity_report_set(p, "throughput", metric(num(json_object_get(pC, "throughput")),
                                                    num(json_object_get(pE, "throughput"))));
    rc |= parity_report_set(p, "coverage",
                            metric(pS->aStatus[0] + pS->aStatus[1] > 0 ? 1.0 : 0.0, NAN));
    return parity_report_finish(p, rc);
}

/* {key: [values]} of the build keys that take more than one value in the slice. */
static json_t *builds_differ(const slice_acc *pS)
{
    json_t *p = json_object(), *pValues;
    const char *zKey;
    int rc = 0;
    json_object_foreach(pS->pBuilds, zKey, pValues)
        if (json_array_size(pValues) > 1) rc |= parity_report_set(p, zKey, json_deep_copy(pValues));
    return parity_report_finish(p, rc);
}

static json_t *slice_json(const slice_acc *pS, int hasTraffic)
{
    json_t *p = json_object(), *pParity = json_object(), *pOut = json_object();
    json_t *pE = acc_json(&pS->eager), *pC = acc_json(&pS->compiled);
    size_t i;
    int rc = 0;
    rc |= parity_report_set(p, "labels", json_deep_copy(pS->pLabels));
    rc |= parity_report_set(p, "pairs", json_integer((json_int_t)json_array_size(pS->pPairIds)));
    for (i = 0; i < 5; i++)
        rc |= parity_report_set(pParity, azStatus[i], json_integer((json_int_t)pS->aStatus[i]));
    rc |= parity_report_set(p, "parity", pParity);
    rc |= parity_report_set(p, "outcome_agreement", num_or_null(pS->aOutcome[0]
                            ? (double)pS->aOutcome[1] / pS->aOutcome[0] : NAN));
    for (i = 0; i < 6; i++)
        rc |= parity_report_set(pOut, azOutcome[i], json_integer((json_int_t)pS->aOutcome[i]));
    rc |= parity_report_set(p, "outcomes", pOut);
    rc |= parity_report_set(p, "traffic_share",
                            hasTraffic ? json_real(isfinite(pS->share) ? pS->share : 0.0) : json_null());
    rc |= parity_report_set(p, "metrics", pE && pC ? slice_metrics(pS, pE, pC) : NULL);
    rc |= parity_report_set(p, "telemetry", json_pack("{s:o,s:o}", "eager", pE, "compiled", pC));
    rc |= parity_report_set(p, "pair_ids", json_deep_copy(pS->pPairIds));
    rc |= parity_report_set(p, "builds_differ", builds_differ(pS));
    return parity_report_finish(p, rc);
}

/* ---- traffic ------------------------------------------------------------------------- */

static int traffic_matches(const parity_gate_traffic *pT, size_t iRow, const json_t *pLabels)
{
    size_t k;
    for (k = 0; k < pT->nKey; k++) {
        const char *zV = json_string_value(json_object_get(pLabels, pT->azKey[k]));
        if (zV == NULL || strcmp(zV, pT->azValue[iRow * pT->nKey + k]) != 0) return 0;
    }
    return 1;
}

/* ---- the suite-wide p99 explanation ------------------------------------------------- */

typedef struct {
    double score;
    size_t iSlice;
} ranked_slice;

static int by_score(const void *pA, const void *pB)
{
    double a = ((const ranked_slice *)pA)->score, b = ((const ranked_slice *)pB)->score;
    return a < b ? 1 : a > b ? -1 : (int)((const ranked_slice *)pA)->iSlice -
                                    (int)((const ranked_slice *)pB)->iSlice;
}

static json_t *p99_explanation(const slice_acc *aS, size_t nS, const json_t *pSlices, int hasTraffic)
{
    double aE[PARITY_GATE_LATENCY_BUCKETS] = { 0 }, aC[PARITY_GATE_LATENCY_BUCKETS] = { 0 };
    double callsE = 0, timeE = 0, callsC = 0, timeC = 0, tputRatio, p99Ratio;
    ranked_slice *aR = calloc(nS ? nS : 1, sizeof *aR);
    json_t *p = json_object(), *pRanked = json_array();
    size_t i, j, nR = 0;
    int rc = aR == NULL;

    for (i = 0; aR && i < nS; i++) {
        const json_t *pTel = json_object_get(json_array_get(pSlices, i), "telemetry");
        double e99 = num(json_object_get(json_object_get(pTel, "eager"), "p99_ms"));
        double c99 = num(json_object_get(json_object_get(pTel, "compiled"), "p99_ms"));
        for (j = 0; j < PARITY_GATE_LATENCY_BUCKETS; j++) {
            aE[j] += aS[i].eager.aHist[j];
            aC[j] += aS[i].compiled.aHist[j];
        }
        if (aS[i].eager.hasCalls && aS[i].eager.hasSteady) {
            callsE += aS[i].eager.calls;
            timeE += aS[i].eager.steadyTime;
        }
        if (aS[i].compiled.hasCalls && aS[i].compiled.hasSteady) {
            callsC += aS[i].compiled.calls;
            timeC += aS[i].compiled.steadyTime;
        }
        if (isfinite(e99) && isfinite(c99)) {
            aR[nR].iSlice = i;
            aR[nR++].score = c99 - e99;   /* times the share, below */
        }
    }
    for (i = 0; i < nR; i++) {
        double share = hasTraffic ? (isfinite(aS[aR[i].iSlice].share) ? aS[aR[i].iSlice].share : 0.0)
                                  : 1.0 / (double)nR;
        aR[i].score *= share;
    }
    if (aR) qsort(aR, nR, sizeof *aR, by_score);
    tputRatio = timeE > 0 && timeC > 0 && callsE > 0 ? (callsC / timeC) / (callsE / timeE) : NAN;
    p99Ratio = hist_quantile(aC, 0.99) / hist_quantile(aE, 0.99);
    rc |= parity_report_set(p, "throughput_ratio", num_or_null(tputRatio));
    rc |= parity_report_set(p, "p99_ratio", num_or_null(p99Ratio));
    rc |= parity_report_set(p, "contradiction",
                            json_boolean(isfinite(tputRatio) && isfinite(p99Ratio) &&
                                         tputRatio > 1.0 && p99Ratio > 1.0));
    for (i = 0; i < nR; i++) {
        const json_t *pSl = json_array_get(pSlices, aR[i].iSlice);
        const json_t *pE = json_object_get(json_object_get(pSl, "telemetry"), "eager");
        const json_t *pC = json_object_get(json_object_get(pSl, "telemetry"), "compiled");
        double share = hasTraffic ? num(json_object_get(pSl, "traffic_share")) : 1.0 / (double)nR;
        rc |= parity_report_append(pRanked, json_pack("{s:O,s:o,s:O,s:O,s:O,s:O,s:o,s:O,s:O,s:O}",
            "labels", json_object_get(pSl, "labels"),
            "traffic_share", num_or_null(share),
            "eager_p99_ms", json_object_get(pE, "p99_ms"),
            "compiled_p99_ms", json_object_get(pC, "p99_ms"),
            "eager_p50_ms", json_object_get(pE, "p50_ms"),
            "compiled_p50_ms", json_object_get(pC, "p50_ms"),
            "score", num_or_null(aR[i].score),
            "recompiles", json_object_get(pC, "recompiles"),
            "compile_time_s", json_object_get(pC, "compile_time_s"),
            "fallback_rate", json_object_get(pC, "fallback_rate")));
    }
    rc |= parity_report_set(p, "ranked", pRanked);
    free(aR);
    return parity_report_finish(p, rc);
}

/* ---- the whole ------------------------------------------------------------------------ */

int parity_gate_build_slices(json_t *pDoc, const parity_gate_traffic *pTraffic)
{
    json_t *pPairs = json_object_get(pDoc, "pairs"), *pKeys = json_object_get(pDoc, "slice_keys");
    json_t *pWarnings = json_object_get(pDoc, "warnings"), *pPair, *pSlices = json_array();
    json_t *pCoverage = json_object(), *pCovSlices = json_array(), *pOrphans = json_array();
    slice_acc *aS = NULL;
    size_t nS = 0, i, r;
    double covered = 0.0;
    int rc = 0;

    json_array_foreach(pPairs, i, pPair) {
        char *zName;
        slice_acc *pS;
        const char *zSt = json_string_value(json_object_get(pPair, "status"));
        rc |= label_pair(pPair, pKeys, pWarnings);
        zName = parity_gate_slice_name(json_object_get(pPair, "labels"), pKeys);
        pS = zName ? slice_get(&aS, &nS, zName, json_object_get(pPair, "labels")) : NULL;
        free(zName);
        if (pS == NULL) { rc = -1; break; }
        rc |= slice_add_pair(pS, pPair);
        rc |= warn_outcome_errors(pPair, pWarnings);
        if (zSt && strcmp(zSt, "missing_eager") == 0)
            rc |= json_array_append(pOrphans, json_object_get(pPair, "id"));
    }
    /* Traffic rows: each names a slice; one no pair measured is a slice of its own, with
     * no evidence, so a coverage rule sees it. */
    for (r = 0; pTraffic && rc == 0 && r < pTraffic->nRow; r++) {
        size_t nMatch = 0, nSlices = nS;
        int evidence = 0;
        for (i = 0; i < nSlices; i++)
            if (traffic_matches(pTraffic, r, aS[i].pLabels)) {
                nMatch++;
                evidence |= aS[i].aStatus[0] + aS[i].aStatus[1] > 0;
            }
        /* A row keyed coarser than the slices (workload alone) matches several: its share
         * is split evenly among them, and it is covered when any of them has evidence. */
        for (i = 0; i < nSlices; i++)
            if (traffic_matches(pTraffic, r, aS[i].pLabels))
                aS[i].share = (isfinite(aS[i].share) ? aS[i].share : 0.0) +
                              pTraffic->aShare[r] / (double)nMatch;
        if (evidence) covered += pTraffic->aShare[r];
        if (nMatch == 0) {
            json_t *pLabels = json_object(), *pKey;
            size_t k;
            char *zName;
            slice_acc *pS;
            json_array_foreach(pKeys, k, pKey) {
                const char *zKey = json_string_value(pKey);
                size_t t;
                const char *zV = PARITY_GATE_UNSET;
                for (t = 0; t < pTraffic->nKey; t++)
                    if (strcmp(pTraffic->azKey[t], zKey) == 0)
                        zV = pTraffic->azValue[r * pTraffic->nKey + t];
                rc |= parity_report_set(pLabels, zKey, parity_report_string(zV));   /* from the CSV */
            }
            zName = parity_gate_slice_name(pLabels, pKeys);
            pS = zName ? slice_get(&aS, &nS, zName, pLabels) : NULL;
            free(zName);
            json_decref(pLabels);
            if (pS == NULL) { rc = -1; break; }
            pS->share = pTraffic->aShare[r];
        }
    }
    if (aS) qsort(aS, nS, sizeof *aS, by_name);
    for (i = 0; rc == 0 && i < nS; i++) {
        int evidence = aS[i].aStatus[0] + aS[i].aStatus[1] > 0;
        rc |= parity_report_append(pSlices, slice_json(&aS[i], pTraffic != NULL));
        rc |= warn_builds(&aS[i], pWarnings);
        rc |= parity_report_append(pCovSlices, json_pack("{s:O,s:o,s:b}", "labels", aS[i].pLabels,
                                   "traffic_share", pTraffic ? num_or_null(isfinite(aS[i].share)
                                   ? aS[i].share : 0.0) : json_null(), "evidence", evidence));
    }
    rc |= parity_report_set(pCoverage, "traffic_covered", pTraffic ? json_real(covered) : json_null());
    rc |= parity_report_set(pCoverage, "slices", pCovSlices);
    rc |= parity_report_set(pCoverage, "compiled_without_eager", pOrphans);
    if (rc == 0) rc |= parity_report_set(pDoc, "p99_explanation",
                                         p99_explanation(aS, nS, pSlices, pTraffic != NULL));
    rc |= parity_report_set(pDoc, "slices", pSlices);
    rc |= parity_report_set(pDoc, "coverage", pCoverage);
    for (i = 0; i < nS; i++) {
        free(aS[i].zName);
        json_decref(aS[i].pLabels);
        json_decref(aS[i].pPairIds);
        json_decref(aS[i].eager.pReasons);
        json_decref(aS[i].compiled.pReasons);
        json_decref(aS[i].pBuilds);
    }
    free(aS);
    return rc;
}
