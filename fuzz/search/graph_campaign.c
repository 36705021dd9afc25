/*
 * graph_campaign.c - a campaign of graph cases against the builtin target: draw a case
 * of a family, run and judge it (graph_oracle.c), minimize each finding, and keep one
 * root cause per minimized (family, ops, dtype, kind) with its repro. Like campaign.c it
 * writes repros, so it includes the findings room's header (search.h's one arrow up).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/alloc.h"
#include "formats/process.h"
#include "fuzz/findings/findings.h"
#include "fuzz/search/search.h"

#define GRAPH_MINIMIZE_BUDGET 300

void parity_graph_campaign_result_free(parity_graph_campaign_result *pRes)
{
    parity_free(pRes->aCause);
    memset(pRes, 0, sizeof *pRes);
}

/* triage.c's symptoms, and two that only a graph shows (measured on XLA:CPU, README
 * "JAX"):
 *   underflow to zero   compiled 0 where the reference is a normal below 2^24 times the
 *                       smallest normal: an intermediate went subnormal and was flushed
 *                       (sigmoid(-87.3) = 1.2e-38 is normal, but 1 / (1 + e^87.3) is
 *                       computed through 9e-39; silu's x * sigmoid(x) then gives 0 for -8e-37)
 *   subnormal input zeroed   compiled's worst element is what eager gives with every
 *                       subnormal input read as zero, far closer than the IEEE result
 *                       (denormals-are-zero: x = -2.3e-39 times w = -3.4e38 gives 0, not
 *                       0.77, and rms_norm(-5.5e-39) times w = -inf gives NaN, not +inf;
 *                       graph_oracle.c reruns eager so to tell), whatever the symptom but
 *                       a flushed result
 * A single op cannot show either apart: its worker's eager side shares the flush mode. */
const char *parity_graph_symptom(const parity_graph_oracle_result *pR, parity_dtype dt)
{
    const char *zSymptom;
    if (pR->cls != PARITY_FINDING_DIVERGES || !pR->judged)
        return parity_finding_class_name(pR->cls);
    zSymptom = parity_triage_symptom(pR->worstRef, pR->worstCompiled, dt);
    /* denormals-are-zero explains any symptom it reproduces (a subnormal x times -inf
     * gives NaN, not +inf), except a flushed result, which either flush mode gives */
    if (pR->subnormalInputZeroed && strcmp(zSymptom, "subnormal flushed") != 0)
        return "subnormal input zeroed";
    if (strcmp(zSymptom, "accuracy") != 0) return zSymptom;
    if (pR->worstCompiled == 0 && pR->worstRef != 0 &&
        fabs(pR->worstRef) < ldexp(parity_dtype_smallest_normal(dt), 24))
        return "underflow to zero";
    return zSymptom;
}

/* The symptoms that are the dtype's flush whatever the ops. An underflow to zero is not
 * among them: a flush mode gives it (XLA:CPU's silu), and so does a kernel that returns 0
 * early (ONNX Runtime's sigmoid is 0 for x <= -18, which its silu(-87.8) shows the same
 * way), so it stays with its ops. */
static int is_flush_symptom(const char *zSymptom)
{
    return strcmp(zSymptom, "subnormal flushed") == 0 ||
           strcmp(zSymptom, "subnormal input zeroed") == 0;
}

parity_graph_cause *parity_graph_cause_add(parity_graph_cause **paCause, size_t *pnCause,
                                           const char *zFamily, const char *zOps,
                                           parity_dtype dtype, const char *zSymptom, int *pNew)
{
    size_t i;
    parity_graph_cause *a;
    if (is_flush_symptom(zSymptom))                  /* the dtype's flush: any ops */
        zFamily = zOps = "*";
    *pNew = 0;
    for (i = 0; i < *pnCause; i++) {
        parity_graph_cause *p = &(*paCause)[i];
        if (strcmp(p->zFamily, zFamily) == 0 && strcmp(p->zOps, zOps) == 0 &&
            p->dtype == dtype && strcmp(p->zSymptom, zSymptom) == 0)
            return p;
    }
    a = parity_realloc(*paCause, (*pnCause + 1) * sizeof *a);
    if (!a) return NULL;
    *paCause = a;
    a = &a[(*pnCause)++];
    memset(a, 0, sizeof *a);
    snprintf(a->zFamily, sizeof a->zFamily, "%s", zFamily);
    snprintf(a->zOps, sizeof a->zOps, "%s", zOps);
    a->dtype = dtype;
    snprintf(a->zSymptom, sizeof a->zSymptom, "%s", zSymptom);
    *pNew = 1;
    return a;
}

/* The root cause a minimized case belongs to (appended when new); NULL for no memory. */
static parity_graph_cause *cause_of(parity_graph_campaign_result *pRes,
                                    const parity_graph_case *pG, const char *zSymptom,
                                    int *pNew)
{
    char zOps[160];
    parity_graph_case_ops(pG, zOps, sizeof zOps);
    return parity_graph_cause_add(&pRes->aCause, &pRes->nCause, pG->pFam->zName, zOps,
                                  pG->spec.dtype, zSymptom, pNew);
}

/* Describes a new cause's minimized case (run once already: its outputs and result) and
 * stores its repro. */
static int keep_cause(const parity_graph_campaign_options *pOpt, parity_target *pT,
                      parity_graph_cause *pC, const parity_graph_case *pG,
                      double *const *aaEager, const double *aC,
                      const parity_graph_oracle_result *pR, char *zErr, size_t nErr)
{
    parity_graph_case_describe(pG, pC->zCase, sizeof pC->zCase);
    snprintf(pC->zDetail, sizeof pC->zDetail, "%s", pR->zDetail);
    if (pOpt->zOut) {
        char zName[200];
        unsigned long long h = pG->spec.seed ^
                               (unsigned long long)pG->spec.variant * 0x9e3779b97f4a7c15ull;
        snprintf(zName, sizeof zName, "%s-%s-%016llx", pG->pFam->zName,
                 parity_dtype_name(pG->spec.dtype), h);
        snprintf(pC->zRepro, sizeof pC->zRepro, "%s/%s", pOpt->zOut, zName);
        return parity_graph_repro_write(pC->zRepro, pG, aaEager, aC, pT->zName, zErr, nErr);
    }
    return 0;
}

/* One finding: minimized (unless switched off), then counted under its root cause. */
static int handle_finding(const parity_graph_campaign_options *pOpt, parity_target *pT,
                          parity_graph_campaign_result *pRes, const parity_graph_case *pG,
                          const parity_graph_oracle_result *pR, char *zErr, size_t nErr)
{
    parity_graph_spec spec = pG->spec;
    parity_graph_case small;
    parity_graph_cause *pC;
    parity_graph_oracle_result rSmall;
    double *aaEager[PARITY_GRAPH_CASE_MAX_NODES] = { 0 }, *aC;
    char zSymptom[24];
    size_t k;
    int isNew = 0, rc = 0;
    pRes->nFindings++;
    if (pOpt->minimize)
        pRes->nMinimizeExecs += parity_graph_minimize(&spec, pT, pR, GRAPH_MINIMIZE_BUDGET);
    if (parity_graph_case_expand(&spec, &small, zErr, nErr) != 0) return -1;
    /* the minimized case, run once: its symptom (the one stored), and for a new cause its
     * description and repro */
    aC = parity_malloc((small.nOut ? small.nOut : 1) * sizeof(double));
    if (!aC) {
        parity_graph_case_free(&small);
        snprintf(zErr, nErr, "out of memory");
        return -1;
    }
    if (parity_graph_oracle_run(pT, &small, aaEager, aC, &rSmall) != 0) {
        snprintf(zErr, nErr, "%s", rSmall.zDetail);
        rc = -1;
        goto done;
    }
    snprintf(zSymptom, sizeof zSymptom, "%s",
             parity_graph_symptom(rSmall.cls == pR->cls ? &rSmall : pR, small.spec.dtype));
    if (!(pC = cause_of(pRes, &small, zSymptom, &isNew))) {
        snprintf(zErr, nErr, "out of memory");
        rc = -1;
        goto done;
    }
    pC->count++;
    if (isNew && (rc = keep_cause(pOpt, pT, pC, &small, aaEager, aC, &rSmall, zErr, nErr)) == 0)
        fprintf(stderr, "parityfuzz graph: root cause %zu: %s %s %s: %s\n", pRes->nCause,
                pC->zOps, parity_dtype_name(pC->dtype), pC->zSymptom, pC->zCase);
done:
    for (k = 0; k < small.nNode; k++) parity_free(aaEager[k]);
    parity_free(aC);
    parity_graph_case_free(&small);
    return rc;
}

int parity_graph_campaign_run(const parity_graph_campaign_options *pOpt,
                              parity_graph_campaign_result *pRes, char *zErr, size_t nErr)
{
    parity_rng rng;
    parity_target *pT;
    double t0 = parity_process_now(), lastSay = t0;
    size_t nFam = parity_graph_family_count();
    memset(pRes, 0, sizeof *pRes);
    if (pOpt->zOut && parity_make_dirs(pOpt->zOut, zErr, nErr) != 0) return -1;
    pRes->seed = pOpt->seed;
    pRes->defects = pOpt->defects;
    parity_rng_seed(&rng, pOpt->seed);
    pT = parity_target_open(pOpt->zTarget ? pOpt->zTarget : "builtin", pOpt->defects,
                            pOpt->caseTimeout > 0 ? pOpt->caseTimeout : 30.0, zErr, nErr);
    if (!pT) return -1;
    snprintf(pRes->zTarget, sizeof pRes->zTarget, "%s", pOpt->zTarget ? pOpt->zTarget : "builtin");
    if (pT->zNotice) snprintf(pRes->zNotice, sizeof pRes->zNotice, "%s", pT->zNotice);
    if (!pT->xRunGraph || (pT->graphFamilies & (pOpt->families ? pOpt->families : ~0u)) == 0) {
        snprintf(zErr, nErr, "target %s runs none of the graph families asked for",
                 pRes->zTarget);
        parity_target_close(pT);
        return -1;
    }
    for (;;) {
        const parity_graph_family *pFam;
        parity_graph_spec spec;
        parity_graph_case g;
        parity_graph_oracle_result r;
        double *aaEager[PARITY_GRAPH_CASE_MAX_NODES] = { 0 }, *aC, now = parity_process_now();
        char zWhy[PARITY_ERR_LEN];
        size_t i;
        int rc;
        if (pOpt->maxExecs && pRes->nExecs >= pOpt->maxExecs) break;
        if (pOpt->seconds > 0 && now - t0 >= pOpt->seconds) break;
        if (pOpt->stopAfterFirst && pRes->nFindings > 0) break;
        if (now - lastSay >= 10.0) {
            fprintf(stderr, "parityfuzz graph: %.0f s, %llu execs, %llu judged, %zu root "
                    "causes\n", now - t0, (unsigned long long)pRes->nExecs,
                    (unsigned long long)pRes->nJudged, pRes->nCause);
            lastSay = now;
        }
        i = (size_t)parity_rng_below(&rng, nFam);
        if ((pOpt->families && !(pOpt->families >> i & 1)) || !(pT->graphFamilies >> i & 1))
            continue;
        pFam = parity_graph_family_at(i);
        parity_graph_spec_draw(&rng, pFam, pOpt->dtypes, &spec);
        if ((pOpt->dtypes && !(pOpt->dtypes >> spec.dtype & 1)) ||
            !parity_target_runs_dtype(pT, spec.dtype))
            continue;
        if (parity_graph_case_expand(&spec, &g, zWhy, sizeof zWhy) != 0) continue;
        aC = parity_malloc((g.nOut ? g.nOut : 1) * sizeof(double));
        if (!aC) {
            parity_graph_case_free(&g);
            parity_target_close(pT);
            snprintf(zErr, nErr, "out of memory");
            return -1;
        }
        pRes->nExecs++;
        rc = parity_graph_oracle_run(pT, &g, aaEager, aC, &r);
        for (i = 0; i < g.nNode; i++) parity_free(aaEager[i]);
        parity_free(aC);
        if (rc != 0) {
            pRes->nErrors++;
            fprintf(stderr, "parityfuzz graph: %s\n", r.zDetail);
        } else if (r.cls == PARITY_FINDING_SKIPPED) {
            pRes->nSkipped++;
        } else if (r.bitIdentical) {
            pRes->nIdentical++;
        } else {
            if (r.judged) pRes->nJudged++;
            if (r.cls != PARITY_FINDING_NONE &&
                handle_finding(pOpt, pT, pRes, &g, &r, zErr, nErr) != 0) {
                parity_graph_case_free(&g);
                parity_target_close(pT);
                return -1;
            }
        }
        parity_graph_case_free(&g);
    }
    pRes->seconds = parity_process_now() - t0;
    parity_target_close(pT);
    return 0;
}
