/*
 * investigate.c - paritydiff investigate: from a gate's run history to what an incident
 * responder writes first (diff/INVESTIGATE.md): the earliest known-bad run of each alert,
 * the last known-good run before it, the identities that changed across that boundary (and
 * those that changed earlier without effect), the narrowest description of what fails in
 * the boundary run, a known-good counterexample beside it, and the mitigation in force
 * kept apart from what would confirm the root cause.
 *
 *   paritydiff investigate --history DB [--run ID] [--slice K=V,...] [--metric M]
 *                          [--repro DIR] [--json FILE] [-q]
 *
 * It reads the history through parity_gate_history_query only, so any back end that
 * answers those queries serves it. Exit 0 (the investigations are written, none when no
 * alert fired), 2 trouble.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "diff/gate.h"
#include "formats/escape.h"
#include "formats/process.h"
#include "reports/report.h"
#include "reports/report_gate.h"
#include "reports/report_internal.h"

#define ERR_LEN 1024
/* Good runs before the boundary whose identity changes count as cleared: enough for two
 * months of nightly runs, and a bounded number of queries however long the history. */
#define CLEARED_LOOKBACK 60

/* Keys that say nothing of what ran: when (changes on every run), and the format's own
 * (FORMAT.md: never compared). */
static const char *const azWhenKeys[] = { "timestamp", "side", "parity_format", NULL };

typedef struct {
    parity_gate_history *pH;
    const char *zReproDir;    /* --repro: where minimized repros go; NULL: none made */
    char zErr[ERR_LEN];
} inv_ctx;

/* One query; NULL on a database error (pCtx->zErr). */
static json_t *query(inv_ctx *pCtx, const char *zSql, const char *z1, const char *z2,
                     const char *z3)
{
    const char *az[3] = { z1, z2, z3 };
    int n = z3 ? 3 : z2 ? 2 : z1 ? 1 : 0;
    return parity_gate_history_query(pCtx->pH, zSql, az, n, pCtx->zErr, sizeof pCtx->zErr);
}

static const char *cell(const json_t *pRow, size_t i)
{
    return json_string_value(json_array_get(pRow, i));
}

static int is_when_key(const char *zKey)
{
    const char *const *pz;
    for (pz = azWhenKeys; *pz; pz++)
        if (strcmp(*pz, zKey) == 0) return 1;
    return 0;
}

/* ---- the boundary -------------------------------------------------------------------- */

typedef struct {
    json_t *pBad;        /* {run, timestamp} of the earliest known-bad run */
    json_t *pGood;       /* ... of the last known-good run, or NULL */
    json_t *pUnknown;    /* runs after the last good one (inside the bad streak, or between
                          * it and the good run) where the slice was not measured */
    json_t *pGoodRuns;   /* run ids in range, oldest first, up to the last good one */
    json_t *pBlips;      /* out-of-range runs before the last good one (recovered) */
} boundary;

/* Walks the rule's states for the slice from the run investigated back: the streak of
 * out-of-range runs that ends there (unknown runs skipped: not good, not bad) starts at
 * the earliest known-bad run; the run in range before it is the last known-good. */
static int find_boundary(inv_ctx *pCtx, const char *zSlice, const char *zRule,
                         const char *zAsOf, boundary *pB)
{
    json_t *pRows = query(pCtx,
        "SELECT r.run_id, r.timestamp, s.state FROM runs r LEFT JOIN rule_states s "
        "ON s.run_id = r.run_id AND s.slice = ? AND s.rule = ? WHERE r.timestamp <= ? "
        "ORDER BY r.timestamp", zSlice, zRule, zAsOf);
    size_t n, i;
    int inStreak = 1;
    memset(pB, 0, sizeof *pB);
    if (pRows == NULL) return -1;
    pB->pUnknown = json_array();
    pB->pGoodRuns = json_array();
    pB->pBlips = json_array();
    n = json_array_size(pRows);
    for (i = n; i-- > 0;) {
        const json_t *pRow = json_array_get(pRows, i);
        const char *zState = cell(pRow, 2);
        json_t *pRun = json_pack("{s:s,s:s}", "run", cell(pRow, 0), "timestamp", cell(pRow, 1));
        if (zState == NULL || strcmp(zState, "unknown") == 0) {
            if (inStreak) json_array_insert(pB->pUnknown, 0, pRun);   /* oldest first */
        } else if (strcmp(zState, "out_of_range") == 0) {
            if (inStreak) {
                json_decref(pB->pBad);
                pB->pBad = json_incref(pRun);
            } else {
                json_array_insert(pB->pBlips, 0, pRun);
            }
        } else {
            if (inStreak) pB->pGood = json_incref(pRun);
            inStreak = 0;
            json_array_insert(pB->pGoodRuns, 0, json_object_get(pRun, "run"));
        }
        json_decref(pRun);
    }
    json_decref(pRows);
    return 0;
}

static void boundary_free(boundary *pB)
{
    json_decref(pB->pBad);
    json_decref(pB->pGood);
    json_decref(pB->pUnknown);
    json_decref(pB->pGoodRuns);
    json_decref(pB->pBlips);
}

/* ---- a rule's timeline (for the gate's HTML report) ------------------------------------ */

#define TIMELINE_MAX_RUNS 60

json_t *parity_investigate_timeline(parity_gate_history *pH, const char *zSlice, const char *zRule,
                                    const char *zMetric, const char *zAsOf, char *zErr, size_t nErr)
{
    inv_ctx ctx;
    const char *az[4] = { zSlice, zRule, zSlice, zAsOf };
    json_t *pRows, *pRow, *pPoints = json_array(), *pOut;
    boundary b;
    size_t i, n, first;

    memset(&ctx, 0, sizeof ctx);
    ctx.pH = pH;
    pRows = parity_gate_history_query(pH,
        "SELECT r.run_id, r.timestamp, s.state, sl.metrics FROM runs r "
        "LEFT JOIN rule_states s ON s.run_id = r.run_id AND s.slice = ? AND s.rule = ? "
        "LEFT JOIN slices sl ON sl.run_id = r.run_id AND sl.slice = ? "
        "WHERE r.timestamp <= ? ORDER BY r.timestamp", az, 4, zErr, nErr);
    if (pRows == NULL || pPoints == NULL) {
        json_decref(pRows);
        json_decref(pPoints);
        return NULL;
    }
    n = json_array_size(pRows);
    first = n > TIMELINE_MAX_RUNS ? n - TIMELINE_MAX_RUNS : 0;
    for (i = first; i < n; i++) {
        json_t *pMetrics, *pM;
        pRow = json_array_get(pRows, i);
        pMetrics = cell(pRow, 3) ? json_loads(cell(pRow, 3), 0, NULL) : NULL;
        pM = json_object_get(pMetrics, zMetric);
        json_array_append_new(pPoints, json_pack("{s:s,s:s,s:s,s:O,s:O}", "run", cell(pRow, 0),
                              "timestamp", cell(pRow, 1), "state", cell(pRow, 2) ? cell(pRow, 2) : "unknown",
                              "value", json_object_get(pM, "value") ? json_object_get(pM, "value") : json_null(),
                              "eager", json_object_get(pM, "eager") ? json_object_get(pM, "eager") : json_null()));
        json_decref(pMetrics);
    }
    json_decref(pRows);
    if (find_boundary(&ctx, zSlice, zRule, zAsOf, &b) != 0) {
        snprintf(zErr, nErr, "%s", ctx.zErr);
        json_decref(pPoints);
        return NULL;
    }
    pOut = json_pack("{s:O,s:O,s:o}", "earliest_known_bad",
                     b.pBad ? json_object_get(b.pBad, "run") : json_null(),
                     "last_known_good", b.pGood ? json_object_get(b.pGood, "run") : json_null(),
                     "points", pPoints);
    boundary_free(&b);
    return pOut;
}

/* ---- identities ------------------------------------------------------------------------ */

/* {side: {key: value}} of the slice's pairs in a run; a key whose pairs disagree holds
 * the array of their distinct values. */
static json_t *run_identity(inv_ctx *pCtx, const char *zRun, const char *zSlice)
{
    json_t *pRows = query(pCtx, "SELECT eager_identity, compiled_identity FROM pairs "
                                "WHERE run_id = ? AND slice = ? ORDER BY pair_id", zRun, zSlice, NULL);
    json_t *pOut = json_pack("{s:{},s:{}}", "eager", "compiled"), *pRow;
    size_t i, s;
    if (pRows == NULL || pOut == NULL) {
        json_decref(pRows);
        json_decref(pOut);
        return NULL;
    }
    json_array_foreach(pRows, i, pRow)
        for (s = 0; s < 2; s++) {
            json_t *pSide = json_object_get(pOut, s == 0 ? "eager" : "compiled"), *pV;
            json_t *pId = cell(pRow, s) ? json_loads(cell(pRow, s), 0, NULL) : NULL;
            const char *zKey;
            json_object_foreach(pId, zKey, pV) {
                json_t *pOld = json_object_get(pSide, zKey);
                if (is_when_key(zKey)) continue;
                if (pOld == NULL) {
                    json_object_set(pSide, zKey, pV);
                } else if (!json_equal(pOld, pV)) {
                    /* pairs of one run disagree: {"mixed": [their distinct values]} */
                    json_t *pMixed = json_object_get(pOld, "mixed");
                    size_t k;
                    json_t *pSeen;
                    int seen = 0;
                    if (!json_is_array(pMixed)) {
                        json_t *pNew = json_pack("{s:[O]}", "mixed", pOld);
                        json_object_set_new(pSide, zKey, pNew);
                        pMixed = json_object_get(pNew, "mixed");
                    }
                    json_array_foreach(pMixed, k, pSeen) seen |= json_equal(pSeen, pV);
                    if (!seen) json_array_append(pMixed, pV);
                }
            }
            json_decref(pId);
        }
    json_decref(pRows);
    return pOut;
}

/* Keys of one side that differ between two identities: {side, key, before, after}. */
static void compare_side(const json_t *pA, const json_t *pB, const char *zSide, json_t *pOut)
{
    const char *zKey;
    json_t *pV;
    json_object_foreach((json_t *)pA, zKey, pV)
        if (!json_equal(pV, json_object_get(pB, zKey)))
            json_array_append_new(pOut, json_pack("{s:s,s:s,s:O,s:O}", "side", zSide, "key", zKey,
                                  "before", pV, "after", json_object_get(pB, zKey) ?
                                  json_object_get(pB, zKey) : json_null()));
    json_object_foreach((json_t *)pB, zKey, pV)
        if (json_object_get(pA, zKey) == NULL)
            json_array_append_new(pOut, json_pack("{s:s,s:s,s:n,s:O}", "side", zSide, "key", zKey,
                                  "before", "after", pV));
}

static json_t *identity_diff(const json_t *pA, const json_t *pB)
{
    json_t *pOut = json_array();
    compare_side(json_object_get(pA, "compiled"), json_object_get(pB, "compiled"), "compiled", pOut);
    compare_side(json_object_get(pA, "eager"), json_object_get(pB, "eager"), "eager", pOut);
    return pOut;
}

static int names_key(const json_t *pList, const char *zSide, const char *zKey)
{
    size_t i;
    json_t *p;
    json_array_foreach(pList, i, p)
        if (strcmp(json_string_value(json_object_get(p, "side")), zSide) == 0 &&
            strcmp(json_string_value(json_object_get(p, "key")), zKey) == 0)
            return 1;
    return 0;
}

/* The identity across the boundary: what changed (suspects first: keys that never changed
 * between two good runs), what changed between good runs without effect (cleared), and
 * every key compared. */
static int identity_section(inv_ctx *pCtx, const char *zSlice, const boundary *pB, json_t *pInv)
{
    const char *zBad = json_string_value(json_object_get(pB->pBad, "run"));
    const char *zGood = pB->pGood ? json_string_value(json_object_get(pB->pGood, "run")) : NULL;
    json_t *pIdBad = run_identity(pCtx, zBad, zSlice), *pIdGood = NULL, *pChanges = NULL;
    json_t *pCleared = json_array(), *pSuspects = json_array(), *pAlso = json_array(), *p;
    size_t i;

    if (pIdBad == NULL) return -1;
    /* A run with no pair in the slice (a coverage alert: nothing measured there) has no
     * identity to compare: every key would read as removed, and all be suspects. */
    if (zGood && json_object_size(json_object_get(pIdBad, "eager")) == 0 &&
        json_object_size(json_object_get(pIdBad, "compiled")) == 0) {
        json_object_set_new(pInv, "identity_note", json_string(
            "the earliest known-bad run has no pair in this slice: no identity to compare"));
        zGood = NULL;
    }
    if (zGood) {
        if ((pIdGood = run_identity(pCtx, zGood, zSlice)) == NULL) {
            json_decref(pIdBad);
            return -1;
        }
        pChanges = identity_diff(pIdGood, pIdBad);
        /* cleared: changed between consecutive good runs, and still the boundary was good.
         * The last CLEARED_LOOKBACK good runs, each run's identity read once. */
        {
            size_t nGood = json_array_size(pB->pGoodRuns);
            size_t first = nGood > CLEARED_LOOKBACK ? nGood - CLEARED_LOOKBACK : 0;
            json_t *pPrev = NULL;
            for (i = first; i < nGood; i++) {
                json_t *pCur = i + 1 == nGood ? json_incref(pIdGood)
                    : run_identity(pCtx, json_string_value(json_array_get(pB->pGoodRuns, i)), zSlice);
                json_t *pD = pPrev && pCur ? identity_diff(pPrev, pCur) : NULL;
                size_t j;
                json_array_foreach(pD, j, p) {
                    if (names_key(pCleared, json_string_value(json_object_get(p, "side")),
                                  json_string_value(json_object_get(p, "key"))))
                        continue;
                    json_object_set_new(p, "between", json_pack("[O,O]",
                                        json_array_get(pB->pGoodRuns, i - 1),
                                        json_array_get(pB->pGoodRuns, i)));
                    json_array_append(pCleared, p);
                }
                json_decref(pD);
                json_decref(pPrev);
                pPrev = pCur;
            }
            json_decref(pPrev);
        }
        json_array_foreach(pChanges, i, p) {
            int cleared = names_key(pCleared, json_string_value(json_object_get(p, "side")),
                                    json_string_value(json_object_get(p, "key")));
            json_object_set_new(p, "cleared_before", json_boolean(cleared));
            json_array_append(cleared ? pAlso : pSuspects, p);
        }
        json_array_extend(pSuspects, pAlso);
    }
    json_object_set_new(pInv, "identity_changes", pSuspects);
    json_object_set_new(pInv, "identity_cleared", pCleared);
    json_object_set_new(pInv, "identity", json_pack("{s:o,s:o}", "last_known_good",
                                                     pIdGood ? pIdGood : json_null(),
                                                     "earliest_known_bad", pIdBad));
    json_decref(pChanges);
    json_decref(pAlso);
    return 0;
}

/* ---- what fails, and a counterexample ------------------------------------------------ */

/* Union of half-open boxes [[lo, hi], ...] into pBox (NULL: start from pAdd). */
static json_t *box_union(json_t *pBox, const json_t *pAdd)
{
    size_t d;
    if (!json_is_array(pAdd)) return pBox;
    if (pBox == NULL) return json_deep_copy(pAdd);
    for (d = 0; d < json_array_size(pBox) && d < json_array_size(pAdd); d++) {
        json_t *pD = json_array_get(pBox, d), *pE = json_array_get(pAdd, d);
        json_int_t lo = json_integer_value(json_array_get(pD, 0)), hi = json_integer_value(json_array_get(pD, 1));
        json_int_t lo2 = json_integer_value(json_array_get(pE, 0)), hi2 = json_integer_value(json_array_get(pE, 1));
        json_array_set_new(pD, 0, json_integer(lo < lo2 ? lo : lo2));
        json_array_set_new(pD, 1, json_integer(hi > hi2 ? hi : hi2));
    }
    return pBox;
}

/* The slices of a run with their labels and this rule's state. */
static json_t *run_slices(inv_ctx *pCtx, const char *zRun, const char *zRule)
{
    return query(pCtx, "SELECT s.slice, s.labels, r.state FROM slices s LEFT JOIN rule_states r "
                       "ON r.run_id = s.run_id AND r.slice = s.slice AND r.rule = ? "
                       "WHERE s.run_id = ? ORDER BY s.slice", zRule, zRun, NULL);
}

/* The narrowest description covering every failure of the boundary run: the labels every
 * out-of-range slice shares, and inside their failing pairs the local-cause tensors, ops
 * and the union of their affected element ranges. */
static int smallest_slice(inv_ctx *pCtx, const char *zRule, const char *zBad, json_t *pInv)
{
    json_t *pSlices = run_slices(pCtx, zBad, zRule), *pRow, *pCommon = NULL, *pNames = json_array();
    json_t *pTensors = json_object(), *pPairs = json_array(), *pOut;
    size_t i, j;
    if (pSlices == NULL) return -1;
    json_array_foreach(pSlices, i, pRow) {
        json_t *pLabels, *pFail, *pF;
        const char *zKey;
        json_t *pV;
        void *pIter;
        if (!cell(pRow, 2) || strcmp(cell(pRow, 2), "out_of_range") != 0) continue;
        json_array_append_new(pNames, json_string(cell(pRow, 0)));
        pLabels = json_loads(cell(pRow, 1), 0, NULL);
        if (pCommon == NULL) {
            pCommon = json_deep_copy(pLabels);
        } else {
            for (pIter = json_object_iter(pCommon); pIter;) {
                zKey = json_object_iter_key(pIter);
                pV = json_object_iter_value(pIter);
                pIter = json_object_iter_next(pCommon, pIter);
                if (!json_equal(pV, json_object_get(pLabels, zKey))) json_object_del(pCommon, zKey);
            }
        }
        json_decref(pLabels);
        pFail = query(pCtx, "SELECT p.pair_id, c.tensor, c.op, c.affected_slice, p.first_divergence, "
                            "p.eager_path, p.compiled_path FROM pairs p LEFT JOIN local_causes c "
                            "ON c.run_id = p.run_id AND c.pair_id = p.pair_id WHERE p.run_id = ? "
                            "AND p.slice = ? AND p.status IN ('fail', 'error') ORDER BY p.pair_id",
                      zBad, cell(pRow, 0), NULL);
        if (pFail == NULL) goto fail;
        json_array_foreach(pFail, j, pF) {
            if (cell(pF, 1)) {
                char zKey2[1024];
                json_t *pT;
                snprintf(zKey2, sizeof zKey2, "%s", cell(pF, 1));
                pT = json_object_get(pTensors, zKey2);
                if (pT == NULL) {
                    pT = json_pack("{s:s,s:s?,s:n,s:[]}", "tensor", cell(pF, 1), "op", cell(pF, 2),
                                   "elements", "pairs");
                    json_object_set_new(pTensors, zKey2, pT);
                }
                json_t *pBox = cell(pF, 3) ? json_loads(cell(pF, 3), 0, NULL) : NULL;
                json_t *pU = box_union(json_is_null(json_object_get(pT, "elements")) ? NULL
                                       : json_incref(json_object_get(pT, "elements")), pBox);
                if (pU) json_object_set_new(pT, "elements", pU);
                json_decref(pBox);
                json_array_append_new(json_object_get(pT, "pairs"), json_string(cell(pF, 0)));
            }
            if (json_array_size(pPairs) == 0 || strcmp(json_string_value(json_object_get(
                    json_array_get(pPairs, json_array_size(pPairs) - 1), "pair")), cell(pF, 0)) != 0)
                json_array_append_new(pPairs, json_pack("{s:s,s:s?,s:s?,s:s?}", "pair", cell(pF, 0),
                                      "first_divergence", cell(pF, 4), "eager", cell(pF, 5),
                                      "compiled", cell(pF, 6)));
        }
        json_decref(pFail);
    }
    pOut = json_pack("{s:o,s:o,s:[],s:o}", "labels", pCommon ? pCommon : json_object(),
                     "slices", pNames, "tensors", "failing_pairs", pPairs);
    {
        const char *zKey;
        json_t *pT;
        json_object_foreach(pTensors, zKey, pT) json_array_append(json_object_get(pOut, "tensors"), pT);
    }
    json_object_set_new(pInv, "smallest_affected_slice", pOut);
    json_decref(pTensors);
    json_decref(pSlices);
    return 0;
fail:
    json_decref(pCommon);
    json_decref(pNames);
    json_decref(pTensors);
    json_decref(pPairs);
    json_decref(pSlices);
    return -1;
}

/* The leading number of a label value ("513-2048" -> 513), for nearness of buckets. */
static double leading_number(const char *z)
{
    return z ? strtod(z + strcspn(z, "0123456789"), NULL) : 0.0;
}

/* A passing pair of slice zSlice in run zRun, as {labels, run, pair, eager, compiled}. */
static json_t *passing_pair(inv_ctx *pCtx, const char *zRun, const char *zSlice, const char *zLabels)
{
    json_t *pRows = query(pCtx, "SELECT pair_id, eager_path, compiled_path FROM pairs WHERE "
                                "run_id = ? AND slice = ? AND status = 'pass' ORDER BY pair_id",
                          zRun, zSlice, NULL);
    json_t *pOut = NULL, *pRow = json_array_get(pRows, 0);
    if (pRow)
        pOut = json_pack("{s:o,s:s,s:s,s:s,s:s?,s:s?}", "labels",
                         zLabels ? json_loads(zLabels, 0, NULL) : json_null(), "slice", zSlice,
                         "run", zRun, "pair", cell(pRow, 0), "eager", cell(pRow, 1),
                         "compiled", cell(pRow, 2));
    json_decref(pRows);
    return pOut;
}

/* The nearest slice that passes in the boundary run: the most labels in common with the
 * failing one, a label counting more the coarser it is (slice keys go coarse to fine:
 * sharing the workload outweighs sharing the shape bucket), then the nearest value of the
 * labels that differ (buckets by their leading number); else the failing slice itself on
 * the last known-good run. */
static int counterexample(inv_ctx *pCtx, const char *zRule, const char *zSlice, const char *zBad,
                          const boundary *pB, json_t *pInv)
{
    json_t *pSlices = run_slices(pCtx, zBad, zRule), *pRow, *pMine = NULL, *pBest = NULL;
    json_t *pKeyRows = query(pCtx, "SELECT slice_keys FROM runs WHERE run_id = ?", zBad, NULL, NULL);
    json_t *pKeys = json_array_size(pKeyRows) ? json_loads(cell(json_array_get(pKeyRows, 0), 0), 0, NULL)
                                              : NULL;
    size_t i, k;
    double bestShared = -1.0, bestDist = 0.0;
    json_decref(pKeyRows);
    if (pSlices == NULL) {
        json_decref(pKeys);
        return -1;
    }
    json_array_foreach(pSlices, i, pRow)
        if (strcmp(cell(pRow, 0), zSlice) == 0) pMine = json_loads(cell(pRow, 1), 0, NULL);
    json_array_foreach(pSlices, i, pRow) {
        json_t *pLabels, *pKey;
        double shared = 0.0, dist = 0.0;
        if (!cell(pRow, 2) || strcmp(cell(pRow, 2), "in_range") != 0) continue;
        pLabels = json_loads(cell(pRow, 1), 0, NULL);
        json_array_foreach(pKeys, k, pKey) {
            const char *zKey = json_string_value(pKey);
            const char *zMine = json_string_value(json_object_get(pMine, zKey));
            const char *zOther = json_string_value(json_object_get(pLabels, zKey));
            double a = leading_number(zMine), b = leading_number(zOther);
            if (zMine && zOther && strcmp(zMine, zOther) == 0)
                shared += (double)(1u << (json_array_size(pKeys) - 1 - k));
            else
                dist += a > b ? a / (b + 1.0) : b / (a + 1.0);
        }
        json_decref(pLabels);
        if (shared > bestShared || (shared == bestShared && dist < bestDist)) {
            json_t *pCand = passing_pair(pCtx, zBad, cell(pRow, 0), cell(pRow, 1));
            if (pCand == NULL) continue;
            json_decref(pBest);
            pBest = pCand;
            bestShared = shared;
            bestDist = dist;
        }
    }
    json_decref(pKeys);
    if (pBest) {
        json_object_set_new(pBest, "why", json_string("the nearest slice that passes in the "
                                                      "earliest known-bad run"));
    } else if (pB->pGood) {
        pBest = passing_pair(pCtx, json_string_value(json_object_get(pB->pGood, "run")), zSlice, NULL);
        if (pBest) json_object_set_new(pBest, "why", json_string("the same slice on the last "
                                                                 "known-good run"));
    }
    json_object_set_new(pInv, "known_good_counterexample", pBest ? pBest : json_null());
    json_decref(pMine);
    json_decref(pSlices);
    return 0;
}

/* ---- mitigation and root cause ------------------------------------------------------- */

/* What would confirm the root cause, apart from the mitigation: for a numerical or outcome
 * alert, the local-cause tensor of the boundary run's failing pair, its op, and the
 * compiled kernel's identity (compiler, version, config), with the command that shows it;
 * for a telemetry alert, the identity keys that changed (the suspects). */
static void root_cause(json_t *pInv, const char *zMetric)
{
    json_t *pSmall = json_object_get(pInv, "smallest_affected_slice");
    json_t *pTensor = json_array_get(json_object_get(pSmall, "tensors"), 0);
    json_t *pPair = json_array_get(json_object_get(pSmall, "failing_pairs"), 0);
    json_t *pIdBad = json_object_get(json_object_get(json_object_get(pInv, "identity"),
                                                     "earliest_known_bad"), "compiled");
    json_t *pKernel = json_object(), *pSuspects = json_array(), *pC;
    static const char *const azKernel[] = { "compiler", "compiler_version", "config_hash",
                                            "cache_hash", "device", NULL };
    const char *const *pz;
    size_t i;
    char zCmd[2048];
    for (pz = azKernel; *pz; pz++)
        if (json_object_get(pIdBad, *pz)) json_object_set(pKernel, *pz, json_object_get(pIdBad, *pz));
    json_array_foreach(json_object_get(pInv, "identity_changes"), i, pC)
        if (!json_is_true(json_object_get(pC, "cleared_before")))
            json_array_append_new(pSuspects, json_sprintf("%s.%s",
                json_string_value(json_object_get(pC, "side")), json_string_value(json_object_get(pC, "key"))));
    if (pTensor && pPair && (strcmp(zMetric, "numerical_parity") == 0 ||
                             strcmp(zMetric, "outcome_parity") == 0)) {
        snprintf(zCmd, sizeof zCmd, "paritydiff %s %s",
                 json_string_value(json_object_get(pPair, "eager")),
                 json_string_value(json_object_get(pPair, "compiled")));
        json_object_set_new(pInv, "root_cause", json_pack("{s:s,s:O,s:O,s:O,s:o,s:o,s:s,s:n}",
            "kind", "local_cause", "tensor", json_object_get(pTensor, "tensor"),
            "op", json_object_get(pTensor, "op"), "elements", json_object_get(pTensor, "elements"),
            "kernel", pKernel, "suspects", pSuspects, "confirm", zCmd, "repro"));
    } else {
        json_object_set_new(pInv, "root_cause", json_pack("{s:s,s:o,s:o,s:s}", "kind", "telemetry",
            "kernel", pKernel, "suspects", pSuspects, "confirm",
            "revert the suspect keys for this slice (bisect) and gate again"));
    }
}

/* parityfuzz: the one beside this paritydiff (a build or an install puts both in one
 * folder), else the one on PATH. */
static void parityfuzz_path(char *zPath, size_t n)
{
    char zSelf[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", zSelf, sizeof zSelf - 1);
    char *zSlash;
    if (len > 0) {
        zSelf[len] = '\0';
        if ((zSlash = strrchr(zSelf, '/')) != NULL) {
            snprintf(zPath, n, "%.*s/parityfuzz", (int)(zSlash - zSelf), zSelf);
            if (access(zPath, X_OK) == 0) return;
        }
    }
    snprintf(zPath, n, "parityfuzz");
}

/* z with every character outside [A-Za-z0-9._=,-] as '_' (a folder name from labels). */
static void slug(const char *z, char *zOut, size_t n)
{
    size_t i;
    for (i = 0; *z && i + 1 < n; z++)
        zOut[i++] = (strchr("._=,-", *z) || (*z >= '0' && *z <= '9') || (*z >= 'a' && *z <= 'z') ||
                     (*z >= 'A' && *z <= 'Z')) ? *z : '_';
    zOut[i] = '\0';
}

/* The minimized repro of a local cause (root_cause.repro): `parityfuzz shrink` on the
 * boundary pair's local-cause tensor, into <--repro>/<run>_<slice>_<tensor>. A shrink
 * that fails or finds nothing to shrink leaves repro.path null and says why; the rest of
 * the investigation stands either way. */
static void attach_repro(inv_ctx *pCtx, json_t *pInv)
{
    json_t *pRoot = json_object_get(pInv, "root_cause"), *pPair, *pDoc, *pRepro;
    const char *zTensor = json_string_value(json_object_get(pRoot, "tensor"));
    const char *zRun = json_string_value(json_object_get(json_object_get(pInv, "earliest_known_bad"), "run"));
    char zTool[PATH_MAX], zDir[PATH_MAX], zRunSlug[128], zSliceSlug[256], zTensorSlug[256];
    char zErr[ERR_LEN], *zOut = NULL;
    const char *azArgv[12];
    int code;
    pPair = json_array_get(json_object_get(json_object_get(pInv, "smallest_affected_slice"),
                                           "failing_pairs"), 0);
    if (!zTensor || !pPair || !zRun) return;
    slug(zRun, zRunSlug, sizeof zRunSlug);
    slug(json_string_value(json_object_get(pInv, "slice")), zSliceSlug, sizeof zSliceSlug);
    slug(zTensor[0] == '/' ? zTensor + 1 : zTensor, zTensorSlug, sizeof zTensorSlug);
    snprintf(zDir, sizeof zDir, "%s/%s_%s_%s", pCtx->zReproDir, zRunSlug, zSliceSlug, zTensorSlug);
    parityfuzz_path(zTool, sizeof zTool);
    azArgv[0] = zTool;
    azArgv[1] = "shrink";
    azArgv[2] = json_string_value(json_object_get(pPair, "eager"));
    azArgv[3] = json_string_value(json_object_get(pPair, "compiled"));
    azArgv[4] = "--tensor";
    azArgv[5] = zTensor;
    azArgv[6] = "--out";
    azArgv[7] = zDir;
    azArgv[8] = "--json";
    azArgv[9] = "-";
    azArgv[10] = NULL;
    zErr[0] = '\0';
    code = azArgv[2] && azArgv[3] ? parity_process_run(azArgv, NULL, &zOut, zErr, sizeof zErr) : -1;
    pDoc = (code == 0 || code == 1) && zOut ? json_loads(zOut, 0, NULL) : NULL;
    free(zOut);
    if (code == 1 && pDoc) {
        char zCmd[2 * PATH_MAX + 64];
        snprintf(zCmd, sizeof zCmd, "paritydiff %s/eager.h5 %s/compiled.h5", zDir, zDir);
        pRepro = json_pack("{s:s,s:O,s:O,s:O,s:O,s:O,s:O,s:s}", "path", zDir,
                           "shape", json_object_get(pDoc, "shape"),
                           "source_shape", json_object_get(pDoc, "source_shape"),
                           "offset", json_object_get(pDoc, "offset"),
                           "execs", json_object_get(pDoc, "execs"),
                           "minimal", json_object_get(pDoc, "minimal"),
                           "detail", json_object_get(pDoc, "detail"), "confirm", zCmd);
    } else {
        char zWhy[ERR_LEN + 64];
        if (code == 0 && pDoc)
            snprintf(zWhy, sizeof zWhy, "the op does not diverge when its stored tensors are "
                     "replayed (%s): nothing to shrink", json_string_value(json_object_get(pDoc, "whole")));
        else
            snprintf(zWhy, sizeof zWhy, "parityfuzz shrink failed: %s",
                     zErr[0] ? zErr : "no report");
        pRepro = json_pack("{s:n,s:s}", "path", "why", zWhy);
    }
    json_decref(pDoc);
    if (pRepro) json_object_set_new(pRoot, "repro", pRepro);
}

/* One investigation: an alert's slice and rule, as of run zAsOf. NULL on a database error. */
static json_t *investigate_one(inv_ctx *pCtx, const json_t *pAlert, const char *zAsOf)
{
    const char *zSlice = cell(pAlert, 0), *zRule = cell(pAlert, 1), *zMetric = cell(pAlert, 2);
    json_t *pInv, *pLabels;
    boundary b;
    if (find_boundary(pCtx, zSlice, zRule, zAsOf, &b) != 0) return NULL;
    pLabels = cell(pAlert, 6) ? json_loads(cell(pAlert, 6), 0, NULL) : NULL;
    pInv = json_pack("{s:s,s:o,s:s,s:s,s:O,s:o,s:O,s:O,s:{s:s?,s:s?,s:s?}}",
                     "slice", zSlice, "labels", pLabels ? pLabels : json_null(), "rule", zRule,
                     "metric", zMetric, "earliest_known_bad", b.pBad,
                     "last_known_good", b.pGood ? json_incref(b.pGood) : json_null(),
                     "unknown_runs", b.pUnknown, "recovered_blips", b.pBlips,
                     "mitigation", "action", cell(pAlert, 4), "owner", cell(pAlert, 3),
                     "rule", zRule);
    if (pInv == NULL ||
        identity_section(pCtx, zSlice, &b, pInv) != 0 ||
        smallest_slice(pCtx, zRule, json_string_value(json_object_get(b.pBad, "run")), pInv) != 0 ||
        counterexample(pCtx, zRule, zSlice, json_string_value(json_object_get(b.pBad, "run")),
                       &b, pInv) != 0) {
        json_decref(pInv);
        boundary_free(&b);
        return NULL;
    }
    root_cause(pInv, zMetric);
    if (pCtx->zReproDir && strcmp(json_string_value(json_object_get(json_object_get(pInv, "root_cause"),
                                                                    "kind")), "local_cause") == 0)
        attach_repro(pCtx, pInv);
    boundary_free(&b);
    return pInv;
}

static int inv_error(const char *zMsg)
{
    parity_escape_line(stderr, "paritydiff investigate", zMsg, NULL);
    return 2;
}

static void inv_usage(void)
{
    printf(
"Usage: paritydiff investigate --history DB [OPTIONS]\n"
"For every alert that fired in a gate run (the latest, or --run), find in the run\n"
"history the earliest known-bad run and the last known-good run before it, the identity\n"
"keys that changed across that boundary, the smallest slice that fails there, a passing\n"
"counterexample, the mitigation in force and what would confirm the root cause.\n"
"\n"
"      --history DB        the gate's history (paritydiff gate --history)\n"
"      --run ID            investigate as of this run (default: the latest)\n"
"      --slice K=V,...     only slices with these labels\n"
"      --metric M          only alerts on this metric\n"
"      --repro DIR         minimize each local cause with parityfuzz shrink into a repro\n"
"                          folder under DIR that paritydiff fails (root_cause.repro)\n"
"      --json FILE         the investigations as JSON (diff/INVESTIGATE.md)\n"
"  -q, --quiet             no text report\n"
"\n"
"Exit status: 0 investigated (or nothing fired), 2 trouble.\n");
}

int parity_investigate_main(int argc, char **argv)
{
    static const struct option aLong[] = {
        { "history", required_argument, NULL, 'H' }, { "run", required_argument, NULL, 'r' },
        { "slice", required_argument, NULL, 's' }, { "metric", required_argument, NULL, 'm' },
        { "json", required_argument, NULL, 'j' }, { "quiet", no_argument, NULL, 'q' },
        { "repro", required_argument, NULL, 'R' },
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 }
    };
    const char *zHistory = NULL, *zRun = NULL, *zSlice = NULL, *zMetric = NULL, *zJson = NULL;
    int c, quiet = 0, code = 0;
    inv_ctx ctx;
    json_t *pRuns = NULL, *pAlerts = NULL, *pDoc = NULL, *pList, *pAlert;
    size_t i;
    char zAsOf[256];

    memset(&ctx, 0, sizeof ctx);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "qh", aLong, NULL)) != -1) {
        switch (c) {
        case 'H': zHistory = optarg; break;
        case 'r': zRun = optarg; break;
        case 's': zSlice = optarg; break;
        case 'm': zMetric = optarg; break;
        case 'j': zJson = optarg; break;
        case 'R': ctx.zReproDir = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': inv_usage(); return 0;
        default: {
            char zMsg[512];
            snprintf(zMsg, sizeof zMsg, "invalid option '%s'", argv[optind - 1]);
            return inv_error(zMsg);
        }
        }
    }
    if (zHistory == NULL) return inv_error("missing --history DB");
    if (optind != argc) return inv_error("too many operands");
    if (parity_gate_history_open(zHistory, 1, &ctx.pH, ctx.zErr, sizeof ctx.zErr) != 0)
        return inv_error(ctx.zErr);
    pRuns = zRun ? query(&ctx, "SELECT run_id, timestamp FROM runs WHERE run_id = ?", zRun, NULL, NULL)
                 : query(&ctx, "SELECT run_id, timestamp FROM runs ORDER BY timestamp DESC", NULL, NULL, NULL);
    if (pRuns == NULL) { code = inv_error(ctx.zErr); goto done; }
    if (json_array_size(pRuns) == 0) {
        snprintf(ctx.zErr, sizeof ctx.zErr, "%s: %s", zHistory, zRun ? "no run with that id"
                                                                    : "the history holds no runs");
        code = inv_error(ctx.zErr);
        goto done;
    }
    snprintf(zAsOf, sizeof zAsOf, "%s", cell(json_array_get(pRuns, 0), 1));
    pAlerts = query(&ctx, "SELECT a.slice, a.rule, a.metric, a.owner, a.mitigation, a.value, "
                          "s.labels FROM alerts a LEFT JOIN slices s ON s.run_id = a.run_id AND "
                          "s.slice = a.slice WHERE a.run_id = ? AND a.fired = 1 "
                          "ORDER BY a.slice, a.rule", cell(json_array_get(pRuns, 0), 0), NULL, NULL);
    if (pAlerts == NULL) { code = inv_error(ctx.zErr); goto done; }
    pDoc = json_pack("{s:s,s:{s:s,s:s},s:[]}", "schema", "parity-investigation/1", "run",
                     "id", cell(json_array_get(pRuns, 0), 0), "timestamp", zAsOf, "investigations");
    pList = json_object_get(pDoc, "investigations");
    json_array_foreach(pAlerts, i, pAlert) {
        json_t *pLabels = cell(pAlert, 6) ? json_loads(cell(pAlert, 6), 0, NULL) : NULL, *pInv;
        int want = (!zMetric || strcmp(zMetric, cell(pAlert, 2)) == 0) && parity_gate_labels_match(zSlice, pLabels);
        json_decref(pLabels);
        if (!want) continue;
        if ((pInv = investigate_one(&ctx, pAlert, zAsOf)) == NULL) {
            code = inv_error(ctx.zErr[0] ? ctx.zErr : "out of memory investigating");
            goto done;
        }
        json_array_append_new(pList, pInv);
    }
    if (zJson && parity_report_json_write(pDoc, zJson, ctx.zErr, sizeof ctx.zErr) != 0) {
        code = inv_error(ctx.zErr);
        goto done;
    }
    if (!quiet && !(zJson && strcmp(zJson, "-") == 0) &&
        (parity_report_investigation_text(pDoc, stdout) != 0 || fflush(stdout) != 0))
        code = inv_error("cannot write the report to stdout");
done:
    json_decref(pRuns);
    json_decref(pAlerts);
    json_decref(pDoc);
    parity_gate_history_close(ctx.pH);
    return code;
}
