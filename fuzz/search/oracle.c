/*
 * oracle.c - running a case on both sides of a target and judging it with the registry.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "formats/alloc.h"
#include "formats/process.h"
#include "fuzz/search/search.h"

const char *parity_finding_class_name(parity_finding_class cls)
{
    switch (cls) {
    case PARITY_FINDING_NONE: return "none";
    case PARITY_FINDING_DIVERGES: return "diverges";
    case PARITY_FINDING_ERROR: return "error";
    case PARITY_FINDING_CRASH: return "crash";
    case PARITY_FINDING_HANG: return "hang";
    case PARITY_FINDING_SKIPPED: return "skipped";
    }
    return "unknown";
}

/* The fuzzer's plan: the differ's, with a smaller reference budget. Dot products above it
 * are verified where compiled and eager disagree by more than twice the envelope, plus a
 * sample (judge.h), so no element that can fail on that evidence is skipped. */
static void fuzz_plan(parity_judge_plan *pPlan)
{
    parity_judge_plan_default(pPlan);
    pPlan->budgetTerms = 4e6;
    pPlan->nSample = 256;
    pPlan->skipIdentical = 1;
}

int parity_outputs_identical(const double *a, const double *b, uint64_t n)
{
    uint64_t i;
    for (i = 0; i < n; i++) {
        if (a[i] != b[i] && !(a[i] != a[i] && b[i] != b[i])) return 0;
        if (a[i] == 0 && b[i] == 0 && signbit(a[i]) != signbit(b[i])) return 0;
    }
    return 1;
}

static int oracle_judge(parity_target *pT, const parity_case *pCase, double *aEager,
                        double *aCompiled, parity_oracle_result *pR);

int parity_oracle_run(parity_target *pT, const parity_case *pCase, double *aEager,
                      double *aCompiled, parity_oracle_result *pR)
{
    int rc;
    memset(pR, 0, sizeof *pR);
    rc = oracle_judge(pT, pCase, aEager, aCompiled, pR);
    /* a side or the judge that failed for want of our memory (an in-process kernel, the
     * cmd target's buffers) is no error, crash or skip of the target's */
    if (parity_alloc_failed()) {
        snprintf(pR->zDetail, sizeof pR->zDetail, "out of memory");
        return -1;
    }
    return rc;
}

/* Runs one side and counts its wall time in the target's times. */
static parity_run_status run_side(parity_target *pT, parity_side side, const parity_case *pCase,
                                  double *aOut, char *zErr, size_t nErr)
{
    double t0 = parity_process_now();
    parity_run_status rs = pT->xRun(pT, side, pCase, aOut, zErr, nErr);
    pT->times.runSeconds[side] += parity_process_now() - t0;
    pT->times.nRuns[side]++;
    return rs;
}

static int oracle_judge(parity_target *pT, const parity_case *pCase, double *aEager,
                        double *aCompiled, parity_oracle_result *pR)
{
    parity_op_call call;
    parity_judge_plan plan;
    char zErr[PARITY_ERR_LEN];
    const parity_judgement *pJ = &pR->judgement;

    pR->eagerStatus = run_side(pT, PARITY_SIDE_EAGER, pCase, aEager, pR->zDetail,
                                sizeof pR->zDetail);
    if (pR->eagerStatus != PARITY_RUN_OK) {
        pR->cls = PARITY_FINDING_SKIPPED;
        return 0;
    }
    pR->compiledStatus = run_side(pT, PARITY_SIDE_COMPILED, pCase, aCompiled, pR->zDetail,
                                   sizeof pR->zDetail);
    switch (pR->compiledStatus) {
    case PARITY_RUN_OK: break;
    case PARITY_RUN_SKIP: pR->cls = PARITY_FINDING_SKIPPED; return 0;
    case PARITY_RUN_ERROR: pR->cls = PARITY_FINDING_ERROR; return 0;
    case PARITY_RUN_CRASH: pR->cls = PARITY_FINDING_CRASH; return 0;
    case PARITY_RUN_HANG: pR->cls = PARITY_FINDING_HANG; return 0;
    }
    if (parity_outputs_identical(aEager, aCompiled, pCase->nOut)) {
        pR->bitIdentical = 1;
        pR->cls = PARITY_FINDING_NONE;
        return 0;
    }
    if (parity_case_op_begin(pCase, &call, zErr, sizeof zErr) != 0) {
        snprintf(pR->zDetail, sizeof pR->zDetail, "registry refused the case: %s", zErr);
        return -1;
    }
    fuzz_plan(&plan);
    if (parity_judge_planned(&call, aEager, aCompiled, aEager, &plan, &pR->judgement, zErr,
                             sizeof zErr) != 0) {
        parity_op_end(&call);
        snprintf(pR->zDetail, sizeof pR->zDetail, "judge failed: %s", zErr);
        return -1;
    }
    parity_op_end(&call);
    pR->judged = 1;
    if (pJ->nFail > 0) {
        pR->cls = PARITY_FINDING_DIVERGES;
        snprintf(pR->zDetail, sizeof pR->zDetail,
                 "%llu of %llu elements fail (%llu non-finite), worst error %.3g x bound at %llu",
                 (unsigned long long)pJ->nFail, (unsigned long long)pJ->nChecked,
                 (unsigned long long)pJ->nNonFinite, pJ->worstRatio,
                 (unsigned long long)pJ->worstLinear);
    } else {
        pR->cls = PARITY_FINDING_NONE;
    }
    return 0;
}
