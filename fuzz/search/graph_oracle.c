/*
 * graph_oracle.c - running a graph case on the builtin target and judging it against the
 * propagated reference, and shrinking a finding (search.h, "graph cases").
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "formats/alloc.h"
#include "fuzz/search/search.h"
#include "tolerance/mpref.h"

/* Whether compiled's worst element is what eager gives with every subnormal input read as
 * zero (denormals-are-zero), much closer than to the IEEE result: graph_campaign.c's
 * "subnormal input read as zero". 0 when no input holds a subnormal. */
static int reads_subnormals_as_zero(const parity_graph_case *pG, const double *aEager,
                                    const double *aCompiled, uint64_t worst)
{
    parity_graph_case *pZ;
    double *aaZ[PARITY_GRAPH_CASE_MAX_NODES] = { 0 }, *aaIn[PARITY_GRAPH_CASE_MAX_IN] = { 0 };
    char zErr[PARITY_ERR_LEN];
    int any = 0, is = 0;
    size_t i;
    uint64_t k;
    if (worst >= pG->nOut || !(pZ = parity_malloc(sizeof *pZ))) return 0;
    *pZ = *pG;              /* nodes name inputs by index: the copy reads pZ->aIn */
    for (i = 0; i < pG->nIn; i++) {
        const parity_operand *pIn = &pG->aIn[i];
        double tiny = parity_dtype_smallest_normal(pIn->dtype);
        if (!parity_dtype_is_float(pIn->dtype) || !pIn->aValue) continue;
        for (k = 0; k < pIn->nElem; k++)
            if (pIn->aValue[k] != 0 && fabs(pIn->aValue[k]) < tiny) break;
        if (k == pIn->nElem) continue;
        if (!(aaIn[i] = parity_malloc(pIn->nElem * sizeof(double)))) goto done;
        for (k = 0; k < pIn->nElem; k++)
            aaIn[i][k] = fabs(pIn->aValue[k]) < tiny ? 0.0 * pIn->aValue[k] : pIn->aValue[k];
        pZ->aIn[i].aValue = aaIn[i];
        any = 1;
    }
    if (any && parity_builtin_graph_eager(pZ, aaZ, zErr, sizeof zErr) == 0) {
        double z = aaZ[pG->nNode - 1][worst], c = aCompiled[worst], e = aEager[worst];
        is = (z == c || (isnan(z) && isnan(c))) || fabs(c - z) * 16 < fabs(c - e);
    }
done:
    for (i = 0; i < pG->nNode; i++) parity_free(aaZ[i]);
    for (i = 0; i < pG->nIn; i++) parity_free(aaIn[i]);
    parity_free(pZ);
    return is;
}

int parity_graph_oracle_run(parity_target *pT, const parity_graph_case *pG, double **aaEager,
                            double *aCompiled, parity_graph_oracle_result *pR)
{
    parity_run_status rs;
    parity_graph_value aV[PARITY_GRAPH_CASE_MAX_NODES];
    parity_judge_plan plan;
    const double *aEager;
    char zErr[PARITY_ERR_LEN];
    const parity_judgement *pJ = &pR->judgement;
    int rc;

    memset(pR, 0, sizeof *pR);
    if (parity_builtin_graph_eager(pG, aaEager, pR->zDetail, sizeof pR->zDetail) != 0) {
        pR->cls = PARITY_FINDING_SKIPPED;
        return 0;
    }
    aEager = aaEager[pG->nNode - 1];
    rs = pT->xRunGraph ? pT->xRunGraph(pT, pG, aCompiled, pR->zDetail, sizeof pR->zDetail)
                       : PARITY_RUN_SKIP;
    switch (rs) {
    case PARITY_RUN_OK: break;
    case PARITY_RUN_SKIP: pR->cls = PARITY_FINDING_SKIPPED; return 0;
    case PARITY_RUN_ERROR: pR->cls = PARITY_FINDING_ERROR; return 0;
    case PARITY_RUN_CRASH: pR->cls = PARITY_FINDING_CRASH; return 0;
    case PARITY_RUN_HANG: pR->cls = PARITY_FINDING_HANG; return 0;
    }
    if (parity_outputs_identical(aEager, aCompiled, pG->nOut)) {
        pR->bitIdentical = 1;
        pR->cls = PARITY_FINDING_NONE;
        return 0;
    }
    if (parity_graph_propagate(pG->aNode, pG->nNode, pG->aIn, pG->nIn, aV, zErr,
                               sizeof zErr) != 0) {
        snprintf(pR->zDetail, sizeof pR->zDetail, "propagation failed: %s", zErr);
        return -1;
    }
    parity_judge_plan_default(&plan);
    plan.skipIdentical = 1;
    rc = parity_graph_judge(&aV[pG->nNode - 1], aEager, aCompiled, aEager, &plan,
                            &pR->judgement, zErr, sizeof zErr);
    if (rc == 0 && pJ->nChecked > 0 && pJ->worstLinear < pG->nOut) {
        pR->worstRef = parity_round_double_to_dtype(aV[pG->nNode - 1].value.aValue[pJ->worstLinear],
                                                    pG->aNode[pG->nNode - 1].outDtype);
        pR->worstCompiled = aCompiled[pJ->worstLinear];
    }
    parity_graph_values_free(aV, pG->nNode);
    if (rc != 0) {
        snprintf(pR->zDetail, sizeof pR->zDetail, "judge failed: %s", zErr);
        return -1;
    }
    pR->judged = 1;
    if (pJ->nFail > 0) {
        pR->cls = PARITY_FINDING_DIVERGES;
        pR->nonFinite = pJ->nNonFinite > 0;
        pR->subnormalInputZeroed = reads_subnormals_as_zero(pG, aEager, aCompiled,
                                                            pJ->worstLinear);
        snprintf(pR->zDetail, sizeof pR->zDetail,
                 "%llu of %llu elements fail (%llu non-finite), worst error %.3g x bound at %llu",
                 (unsigned long long)pJ->nFail, (unsigned long long)pJ->nChecked,
                 (unsigned long long)pJ->nNonFinite, pJ->worstRatio,
                 (unsigned long long)pJ->worstLinear);
    }
    return 0;
}

/* Whether spec s shows the same finding: class, and non-finite or not. */
static int reproduces(const parity_graph_spec *pSpec, parity_target *pT,
                      const parity_graph_oracle_result *pFirst, uint64_t *pnRun)
{
    parity_graph_case g;
    parity_graph_oracle_result r;
    double *aaEager[PARITY_GRAPH_CASE_MAX_NODES] = { 0 }, *aC;
    char zErr[256];
    size_t i;
    int same = 0;
    if (parity_graph_case_expand(pSpec, &g, zErr, sizeof zErr) != 0) return 0;
    aC = parity_malloc((g.nOut ? g.nOut : 1) * sizeof(double));
    if (aC && parity_graph_oracle_run(pT, &g, aaEager, aC, &r) == 0)
        same = r.cls == pFirst->cls && r.nonFinite == pFirst->nonFinite;
    (*pnRun)++;
    for (i = 0; i < g.nNode; i++) parity_free(aaEager[i]);
    parity_free(aC);
    parity_graph_case_free(&g);
    return same;
}

uint64_t parity_graph_minimize(parity_graph_spec *pSpec, parity_target *pT,
                               const parity_graph_oracle_result *pFirst, uint64_t budget)
{
    const parity_graph_family *pFam = parity_graph_family_at(pSpec->family);
    parity_graph_spec t;
    uint64_t nRun = 0;
    int bit, i, changed;
    static const parity_value_kind aSimple[] = { PARITY_VAL_ONES, PARITY_VAL_INTS,
                                                 PARITY_VAL_NORMAL };
    if (!pFam) return 0;
    /* 1. ops: each optional op the family can drop */
    for (bit = 8; bit < 32 && nRun < budget; bit++) {
        if (!(pFam->dropBits >> bit & 1) || (pSpec->variant >> bit & 1)) continue;
        t = *pSpec;
        t.variant |= 1u << bit;
        if (reproduces(&t, pT, pFirst, &nRun)) *pSpec = t;
    }
    /* 2. value recipes, simplest first */
    for (i = 0; i < PARITY_GRAPH_CASE_MAX_IN && nRun < budget; i++) {
        size_t k;
        for (k = 0; k < sizeof aSimple / sizeof aSimple[0] && nRun < budget; k++) {
            if (pSpec->aRecipe[i].kind == aSimple[k]) break;
            t = *pSpec;
            t.aRecipe[i].kind = (uint8_t)aSimple[k];
            t.aRecipe[i].scaleLog2 = 0;
            if (reproduces(&t, pT, pFirst, &nRun)) {
                *pSpec = t;
                break;
            }
        }
    }
    /* 3. dims: d - d/2, d - d/4, ..., d - 1 for each, until a pass changes nothing */
    do {
        changed = 0;
        for (i = 0; i < pFam->nDim && nRun < budget; i++) {
            uint64_t step;
            for (step = pSpec->aDim[i] / 2; step >= 1 && nRun < budget; step /= 2) {
                if (pSpec->aDim[i] <= step) continue;
                int j, tied = 0;
                t = *pSpec;
                t.aDim[i] -= step;
                if (reproduces(&t, pT, pFirst, &nRun)) {
                    *pSpec = t;
                    changed = 1;
                    break;
                }
                /* dims that are equal may matter as a pair (a square output): together */
                t = *pSpec;
                for (j = 0; j < pFam->nDim; j++)
                    if (j != i && t.aDim[j] == pSpec->aDim[i]) {
                        t.aDim[j] -= step;
                        tied = 1;
                    }
                t.aDim[i] -= step;
                if (tied && nRun < budget && reproduces(&t, pT, pFirst, &nRun)) {
                    *pSpec = t;
                    changed = 1;
                    break;
                }
            }
        }
    } while (changed && nRun < budget);
    return nRun;
}
