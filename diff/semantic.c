/*
 * semantic.c - the bridge between captures and the op registry: which tensors get a
 * model, loading their operands, the verdict, and the local/propagated cause.
 *
 * The rule. Each op tensor is judged twice when the compiled capture holds the op's inputs:
 *  - local: the compiled output against the reference recomputed from the compiled
 *    inputs (those the compiled tensor names itself, when it names the same op). Beyond the bound means the compiled kernel is wrong for what it was given:
 *    fail, cause "local".
 *  - divergence: both outputs against the reference from the eager inputs (the classes
 *    within / compiled_worse / eager_worse / both_beyond of judge.h). When the local check
 *    passes but this fails, the tensor only echoes different inputs. If one of those inputs
 *    failed earlier in execution order and the tensor visibly departs from eager (beyond the
 *    per-dtype tolerance, which also delimits the reported region), it fails with cause
 *    "propagated"; otherwise its inputs differ from eager only by legitimate rounding, or
 *    the echo is too faint to matter, and it passes.
 * Without the inputs in the compiled capture, two cases. If a missing input was computed by
 * another op (an intermediate fused away), the compiled kernel consumed a legitimately
 * different value that the eager-input reference cannot account for: the model would cry
 * wolf, so the per-dtype tolerance stands (with a note). If the missing inputs are graph
 * inputs or parameters (no op), they are the same data by contract, and the divergence
 * judgement decides: a failure has cause "unknown" (or "propagated" after an upstream
 * failure).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diff/semantic_internal.h"
#include "diff/result_internal.h"
#include "diff/operand_internal.h"
#include "diff/region_internal.h"
#include "diff/compare_internal.h"
#include "formats/alloc.h"
#include "tolerance/contract.h"
#include "tolerance/mpref.h"

#define SEMANTIC_MAX_INPUTS 8   /* operands a model judges (sdpa has 4) */

static void push_warning(parity_tensor_result *pR, const char *zText)
{
    parity_result_push(&pR->oom, &pR->azWarning, &pR->nWarning, zText);
}

static void note(parity_tensor_result *pR, const char *zFmt, const char *zArg)
{
    char zBuf[2 * PARITY_ERR_LEN];
    snprintf(zBuf, sizeof zBuf, zFmt, zArg);
    parity_result_set(&pR->oom, &pR->zModelNote, zBuf);
}

/* Loads the operands named by azInput from pCap. Returns 0; 1 when one is missing or
 * unusable (zErr says which); -1 on a read failure (zErr). pLike (NULL: none) is the
 * eager capture when pCap is the compiled one: an input whose shape differs from eager's
 * tensor of that name is not the same tensor (a name that lined up by accident) and counts
 * as not captured. */
static int load_inputs(parity_operand_cache *pCache, parity_capture *pCap,
                       const parity_capture *pLike, char **azInput, size_t nInput,
                       parity_operand *aOp, uint64_t nBudget, char *zErr, size_t nErr)
{
    size_t k;
    uint64_t nTotal = 0;
    for (k = 0; k < nInput; k++) {
        long iIn = parity_capture_find(pCap, azInput[k]);
        const parity_tensor_info *pT = iIn >= 0 ? parity_capture_tensor(pCap, (size_t)iIn) : NULL;
        long iLike = pLike ? parity_capture_find(pLike, azInput[k]) : -1;
        const parity_tensor_info *pL = iLike >= 0 ? parity_capture_tensor(pLike, (size_t)iLike) : NULL;
        if (!pT || pT->zError) {
            snprintf(zErr, nErr, "input %s is %s", azInput[k], pT ? "unusable" : "not captured");
            return 1;
        }
        if (pL && !parity_tensor_same_shape(pL, pT)) {
            snprintf(zErr, nErr, "input %s has another shape in the compiled capture", azInput[k]);
            return 1;
        }
        nTotal += pT->nElem;
    }
    if (nTotal > nBudget) {
        snprintf(zErr, nErr, "operands exceed the reference's memory budget");
        return 1;
    }
    for (k = 0; k < nInput; k++) {
        long iIn = parity_capture_find(pCap, azInput[k]);
        if (parity_operand_cache_load(pCache, pCap, (size_t)iIn, &aOp[k], zErr, nErr) != 0) {
            while (k-- > 0) parity_operand_cache_release(pCache, &aOp[k]);
            return -1;
        }
    }
    return 0;
}

/* The names of the compiled op's operands: its own 'inputs' when it declares the same op
 * over as many (an op the compiled side ran itself consumed what it names there: under
 * autocast the bf16 casts of eager's float32 tensors, which eager never had), else eager's
 * names, looked up in the compiled capture. */
static char **compiled_input_names(const parity_tensor_info *pE, const parity_tensor_info *pC,
                                   const parity_op_def *pDef)
{
    if (pC->zOp && pC->nInput == pE->nInput && parity_op_find(pC->zOp) == pDef)
        return pC->azInput;
    return pE->azInput;
}

/* Is some input of pE missing (or unusable) in the compiled capture while the eager capture
 * computed it with an op? */
static int fused_intermediate(parity_capture *pEagerCap, parity_capture *pCompCap,
                              const parity_tensor_info *pE)
{
    size_t k;
    for (k = 0; k < pE->nInput; k++) {
        long iC = parity_capture_find(pCompCap, pE->azInput[k]);
        long iE = parity_capture_find(pEagerCap, pE->azInput[k]);
        const parity_tensor_info *pC = iC >= 0 ? parity_capture_tensor(pCompCap, (size_t)iC) : NULL;
        const parity_tensor_info *pI = iE >= 0 ? parity_capture_tensor(pEagerCap, (size_t)iE) : NULL;
        int absent = !pC || pC->zError || (pI && !parity_tensor_same_shape(pI, pC));
        if (absent && pI && pI->zOp) return 1;
    }
    return 0;
}

/* Does the op accept the operands aIn with pE's output in dtype outDtype (zErr: why
 * not)? Prepare only (parity_op_begin_shape): no xLoad, which would copy or scan the
 * operands once more. */
static int op_accepts(const parity_op_def *pDef, const parity_tensor_info *pE,
                      parity_dtype outDtype, parity_operand *aIn, parity_dtype accDtype,
                      int *pOom, char *zErr, size_t nErr)
{
    parity_op_call call;
    if (parity_op_begin_shape(&call, pDef, aIn, pE->nInput, outDtype, pE->rank, pE->aDim,
                              accDtype, pE->aAttr, pE->nAttr, zErr, nErr) != 0) {
        /* it has ended the call; a refusal for want of memory is no verdict on the
         * operands: the run fails (diff/result_internal.h), it does not warn */
        if (parity_alloc_failed()) *pOom = 1;
        return 0;
    }
    parity_op_end(&call);
    return 1;
}

/* Do the two sides' operands hold the same bits (NaN payloads aside)? */
static int same_operands(const parity_operand *aA, const parity_operand *aB, size_t n)
{
    size_t k;
    uint64_t i;
    for (k = 0; k < n; k++) {
        if (aA[k].nElem != aB[k].nElem) return 0;
        for (i = 0; i < aA[k].nElem; i++) {
            double a = aA[k].aValue[i], b = aB[k].aValue[i];
            if (a == b ? signbit(a) != signbit(b) : !(a != a && b != b)) return 0;
        }
    }
    return 1;
}

static void free_inputs(parity_operand_cache *pCache, parity_operand *aOp, size_t n)
{
    size_t k;
    for (k = 0; k < n; k++) parity_operand_cache_release(pCache, &aOp[k]);
}

/* The judge's plan for pE: the tolerance file's overrides, the progress beat, threads.
 * Large outputs of costly ops are verified selectively (judge.h); the sample is drawn
 * from a hash of the tensor's name, so a rerun checks the same elements. */
static void make_plan(const parity_tensor_info *pE, const parity_tol_override *pOv,
                      const parity_diff_options *pBeatOpt, parity_judge_plan *pPlan)
{
    const char *z;
    parity_judge_plan_default(pPlan);
    for (z = pE->zPath; *z; z++) pPlan->seed = pPlan->seed * 1099511628211ULL ^ (unsigned char)*z;
    if (pOv->hasScale) pPlan->boundScale = pOv->scale;
    if (pOv->hasExtraUlps) pPlan->extraUlps = pOv->extraUlps;
    if (pOv->hasNanPolicy) pPlan->nanLenient = pOv->nanLenient;
    if (pOv->hasBound) pPlan->probabilistic = pOv->probabilistic;
    if (pOv->hasLambda) pPlan->lambda = pOv->lambda;
    pPlan->identicalIsEager = 1;
    pPlan->xBeat = pBeatOpt ? pBeatOpt->xBeat : NULL;
    pPlan->pBeatCtx = pBeatOpt ? pBeatOpt->pProgressCtx : NULL;
    pPlan->nThreads = pBeatOpt && pBeatOpt->nThreads > 0 ? pBeatOpt->nThreads
                                                         : parity_cmp_default_threads();
}

/* Runs the op over aIn and judges aCompiled (and aEager when not NULL) against it; with
 * aEager NULL, an element of aCompiled bit-identical to aApprox cannot fail (judge.h,
 * identicalIsEager). Returns 0, or -1 with the tensor marked error. */
static int run_model(const parity_op_def *pDef, const parity_tensor_info *pE,
                     parity_dtype outDtype, parity_operand *aIn, parity_dtype accDtype,
                     double uOperand,
                     const double *aEager,
                     const double *aCompiled, const double *aApprox,
                     const parity_tol_override *pOv, parity_judgement *pJ,
                     parity_dtype *pAcc, parity_tensor_result *pR,
                     const parity_diff_options *pBeatOpt)
{
    parity_op_call call;
    char zErr[PARITY_ERR_LEN];
    int rc;
    parity_judge_plan plan;
    make_plan(pE, pOv, pBeatOpt, &plan);
    if (parity_op_begin(&call, pDef, aIn, pE->nInput, outDtype, pE->rank, pE->aDim, accDtype,
                        pE->aAttr, pE->nAttr, zErr, sizeof zErr) != 0) {
        /* Bad parameters or operand shapes: a clear error for this tensor. */
        pR->status = PARITY_ST_ERROR;
        parity_result_set(&pR->oom, &pR->zMessage, zErr);
        return -1;
    }
    call.uOperand = uOperand;
    rc = parity_judge_planned(&call, aEager, aCompiled, aApprox, &plan, pJ, zErr, sizeof zErr);
    if (pAcc) *pAcc = call.accDtype;
    parity_op_end(&call);
    if (rc != 0) {
        pR->status = PARITY_ST_ERROR;
        parity_result_set(&pR->oom, &pR->zMessage, zErr);
        return -1;
    }
    return 0;
}

/* Marks in pR->stats the elements where compiled departs from eager beyond the per-dtype
 * tolerance pR->tol (non-finite patterns included); returns how many. The worst score is
 * that tolerance's. */
static uint64_t echo_region(parity_tensor_result *pR, const parity_operand *pE,
                            const parity_operand *pC)
{
    uint64_t i, aIndex[PARITY_MAX_RANK], n = 0;
    int d;
    pR->stats.worstScore = -1.0;
    for (i = 0; i < pE->nElem; i++) {
        double e = pE->aValue[i], c = pC->aValue[i], score;
        if (e != e || c != c) score = (e != e && c != c) ? 0.0 : INFINITY;
        else if (e == c) score = 0.0;
        else if (!isfinite(e) || !isfinite(c)) score = INFINITY;
        else score = parity_tolerance_score(&pR->tol, e, fabs(c - e), 0);
        if (score > pR->stats.worstScore) {
            pR->stats.worstScore = score;
            pR->stats.worstLinear = i;
        }
        if (!(score > 1.0)) continue;
        parity_unravel(pE->rank, pE->aDim, i, aIndex);
        for (d = 0; d < pE->rank; d++) {
            if (n == 0 || aIndex[d] < pR->stats.aSliceLo[d]) pR->stats.aSliceLo[d] = aIndex[d];
            if (n == 0 || aIndex[d] + 1 > pR->stats.aSliceHi[d]) pR->stats.aSliceHi[d] = aIndex[d] + 1;
        }
        n++;
    }
    pR->stats.nMismatch = n;
    return n;
}

/* Copies a judgement's failing elements into the stats the reports show. */
static void adopt_failures(parity_tensor_result *pR, const parity_judgement *pJ)
{
    pR->stats.nMismatch = pJ->nFail;
    memcpy(pR->stats.aSliceLo, pJ->aSliceLo, sizeof pR->stats.aSliceLo);
    memcpy(pR->stats.aSliceHi, pJ->aSliceHi, sizeof pR->stats.aSliceHi);
    if (pJ->nChecked > 0) {
        pR->stats.worstScore = pJ->worstRatio;
        pR->stats.worstLinear = pJ->worstLinear;
    }
}

/* The model's settings for pE: the registry op, the tolerance file's overrides (*pOv),
 * the accumulation and compute dtypes, and the operand budget. Returns the op when a model
 * is to judge, else NULL with the note (or the error) said in pR. */
static const parity_op_def *model_settings(const parity_diff_options *pOpt,
                                           const parity_tensor_info *pE,
                                           const parity_tensor_info *pC,
                                           parity_tensor_result *pR, parity_tol_override *pOv,
                                           parity_dtype *pAccDtype, double *pUOperand,
                                           uint64_t *pnBudget)
{
    const parity_op_def *pDef = parity_op_find(pE->zOp);
    parity_contract k;
    char zErr[160];
    if (!pDef) {
        note(pR, "op '%s' has no model yet: per-dtype tolerance", pE->zOp);
        return NULL;
    }
    parity_tolfile_resolve(pOpt->pTolFile, pE->zOp, pE->zPath, pOv);
    if (pOv->hasModel && !pOv->useModel) {
        note(pR, "%s", "model switched off by the tolerance file: per-dtype tolerance");
        return NULL;
    }
    if (pE->nInput > SEMANTIC_MAX_INPUTS) {
        note(pR, "%s: too many inputs", pE->zOp);
        return NULL;
    }
    /* The kernel's contract: the compiled tensor's declaration where it makes one (bf16
     * autocast on the compiled side only), else eager's. */
    if (parity_contract_read(pE, pC, &k, zErr, sizeof zErr) != 0) {
        /* an attribute that makes the tensor unusable; "compiled: " first where it is the
         * compiled side's, as the CLI names the file such a message comes from */
        pR->status = PARITY_ST_ERROR;
        parity_result_set(&pR->oom, &pR->zMessage, zErr);
        return NULL;
    }
    if (k.pAcc) *pAccDtype = k.accDtype;
    if (pOv->hasAccDtype) *pAccDtype = pOv->accDtype;   /* the user's policy over the promise */
    if (k.pCompute) *pUOperand = k.uOperand;
    if (pOv->hasComputeDtype) *pUOperand = pOv->uOperand;
    if (*pUOperand > 0.0 && !(pDef->flags & PARITY_OPF_COMPUTE_DTYPE) &&
        (k.pCompute || parity_tolfile_tensor_sets_compute(pOpt->pTolFile, pE->zPath))) {
        /* declared for this tensor (its attribute, or its own tolerance entry) on an op
         * whose bound has no use for it: an error, never silently dropped. A default for
         * every op applies to the dot products only. */
        pR->status = PARITY_ST_ERROR;
        parity_result_set(&pR->oom, &pR->zMessage, "'compute_dtype' is a contract of the "
                          "dot-product ops (matmul, linear, bmm, conv2d); this op does not "
                          "use it");
        return NULL;
    }
    if (!(pDef->flags & PARITY_OPF_COMPUTE_DTYPE)) *pUOperand = 0.0;
    if (2 * pE->nElem > *pnBudget / 2) {
        note(pR, "%s", "output exceeds the reference's memory budget: per-dtype tolerance");
        return NULL;
    }
    *pnBudget = (*pnBudget - 2 * pE->nElem) / 2;   /* eager and compiled operands */
    return pDef;
}

/* Never a silent pass: say where the model could not judge. */
static void warn_vacuous(parity_tensor_result *pR)
{
    const parity_judgement *pJ = &pR->judgement;
    char zMsg[320];
    if (pJ->nVacuous > pJ->nVacuousOverflow) {
        snprintf(zMsg, sizeof zMsg, "the error bound is vacuous for %llu element(s) (for a "
                 "dot product: n u >= 1 in acc_dtype %s); only non-finite divergences can fail "
                 "there", (unsigned long long)(pJ->nVacuous - pJ->nVacuousOverflow),
                 parity_dtype_name(pR->accDtype));
        push_warning(pR, zMsg);
    }
    if (pJ->nVacuousOverflow > 0) {
        snprintf(zMsg, sizeof zMsg, "the error bound is vacuous for %llu element(s) where a "
                 "legal summation order overflows acc_dtype %s; any value (an infinity, NaN "
                 "or a finite one) is accepted there, on either side",
                 (unsigned long long)pJ->nVacuousOverflow,
                 parity_dtype_name(pR->accDtype));
        push_warning(pR, zMsg);
    }
    if (pJ->nOverflowRounded > 0) {
        snprintf(zMsg, sizeof zMsg, "compiled is infinite at %llu element(s) whose reference "
                 "is finite but within the bound of %s's overflow threshold: a value within "
                 "the bound rounds to the infinity there, so it is accepted",
                 (unsigned long long)pJ->nOverflowRounded, parity_dtype_name(pR->dtype));
        push_warning(pR, zMsg);
    }
}

/* The attributes a capture's metadata gives this op ("'a', 'b'" after a comma), for the
 * warnings that name what to check. */
static void case_attrs(const parity_op_def *pDef, char *zAttrs, size_t nAttrs)
{
    size_t k;
    zAttrs[0] = '\0';
    for (k = 0; k < pDef->nCaseAttr; k++) {
        size_t n = strlen(zAttrs);
        snprintf(zAttrs + n, nAttrs - n, ", '%s'", pDef->aCaseAttr[k].zName);
    }
    if (pDef->family == PARITY_FAMILY_MATMUL || pDef->family == PARITY_FAMILY_LINEAR ||
        pDef->family == PARITY_FAMILY_BMM || pDef->family == PARITY_FAMILY_CONV2D ||
        pDef->family == PARITY_FAMILY_ATTENTION || pDef->family == PARITY_FAMILY_NORM) {
        size_t n = strlen(zAttrs);
        snprintf(zAttrs + n, nAttrs - n, ", 'compute_dtype', 'acc_dtype'");
    }
}

/* A failing tensor where eager breaks the bound at three quarters or more of the elements
 * where compiled does. Two explanations, and the data cannot tell them apart: metadata
 * that misdescribes what ran (a bias missing from "inputs", a tanh GELU without
 * "approximate", a reduced-precision contract not declared), or one wrong kernel both
 * sides call: torch.compile hands convolutions to the oneDNN primitive eager uses, and
 * torch 2.15's bfloat16 conv2d with an output width of 1 and a W stride above 1 is wrong
 * on both (README, "torch.compile"). Said as a warning naming both, and the text report
 * does not call it the compiled kernel's own fault. */
static void check_metadata(parity_tensor_result *pR, const parity_op_def *pDef)
{
    const parity_judgement *pJ = &pR->judgement;
    uint64_t nCompiledBeyond = pJ->nFail + pJ->nBothBeyond;
    uint64_t nEagerAlso = pJ->nFailEagerBeyond + pJ->nBothBeyond;
    char zMsg[800], zAttrs[300];
    if (pR->status != PARITY_ST_FAIL || pR->cause != PARITY_CAUSE_LOCAL || nCompiledBeyond == 0 ||
        nEagerAlso * 4 < nCompiledBeyond * 3)
        return;
    pR->metadataSuspect = 1;
    case_attrs(pDef, zAttrs, sizeof zAttrs);
    snprintf(zMsg, sizeof zMsg, "eager breaks the error bound too, at %llu of the %llu element(s) "
             "where compiled does: the capture's metadata probably does not describe what ran "
             "(check 'inputs'%s against the call), or both sides call one wrong kernel (a "
             "library call both make); a third implementation tells which",
             (unsigned long long)nEagerAlso, (unsigned long long)nCompiledBeyond, zAttrs);
    push_warning(pR, zMsg);
}

/* Where the reference proves eager wrong (parity_judgement_eager_wrong: far past the
 * bound, non-finite, or off an exact op) and the verdict, which judges the compiled
 * side, does not fail: said, so a pass never hides a kernel the reference caught
 * (paritydiff says which side is wrong). Eager alone beyond the bound: eager is the wrong
 * side there. Both beyond it, compiled no worse: not a divergence between the two, but a kernel both
 * call is wrong, or the metadata misdescribes the op. A byte copy of a correct capture has
 * neither; a failing tensor where eager is beyond as often is check_metadata's. */
static void check_eager(parity_tensor_result *pR, const parity_op_def *pDef)
{
    const parity_judgement *pJ = &pR->judgement;
    char zMsg[800], zAttrs[300], zEager[64] = "";
    if (pR->metadataSuspect || pJ->nEagerWorse + pJ->nBothBeyond == 0 ||
        !parity_judgement_eager_wrong(pJ))
        return;
    case_attrs(pDef, zAttrs, sizeof zAttrs);
    if (pJ->maxRatioEager > 1.0)
        snprintf(zEager, sizeof zEager, ", eager up to %.3gx the bound", pJ->maxRatioEager);
    if (pJ->nEagerWorse > 0) {
        snprintf(zMsg, sizeof zMsg, "eager breaks the error bound at %llu element(s) where "
                 "compiled is within it%s: eager is the wrong side there, unless the "
                 "capture's metadata does not describe what ran (check 'inputs'%s)",
                 (unsigned long long)pJ->nEagerWorse, zEager, zAttrs);
        push_warning(pR, zMsg);
    }
    if (pJ->nBothBeyond > 0) {
        snprintf(zMsg, sizeof zMsg, "both sides break the error bound at %llu element(s)%s, "
                 "compiled no worse: no divergence between them, but a kernel both call is "
                 "wrong there, or the capture's metadata does not describe what ran (check "
                 "'inputs'%s)", (unsigned long long)pJ->nBothBeyond, zEager, zAttrs);
        push_warning(pR, zMsg);
    }
}

/* Status and cause from the two judgements: pLocal (the compiled kernel against the
 * reference from its own inputs, when they were captured) and pR->judgement (both sides
 * against the reference from the eager inputs). */
static void decide_cause(parity_tensor_result *pR, const parity_judgement *pLocal,
                         int upstreamFailed, const parity_operand *pOutE,
                         const parity_operand *pOutC)
{
    if (pLocal) {
        pR->hasLocalCheck = 1;
        pR->nLocalFail = pLocal->nFail;
        if (pLocal->nFail > 0) {
            pR->status = PARITY_ST_FAIL;
            pR->cause = PARITY_CAUSE_LOCAL;
            adopt_failures(pR, pLocal);
        } else if (upstreamFailed && pR->judgement.nFail > 0 &&
                   echo_region(pR, pOutE, pOutC) > 0) {
            /* Right for its inputs, but its inputs were wrong: an echo of an earlier
             * failure, reported so the affected region is visible. The region is where the
             * tensor visibly departs from eager (the per-dtype tolerance): against the
             * eager-input reference, elements that only carry legitimate upstream rounding
             * would count too whenever the op's bound is tight (relu's is 0). */
            pR->status = PARITY_ST_FAIL;
            pR->cause = PARITY_CAUSE_PROPAGATED;
        } else {
            /* Within its bound for its own inputs, and those inputs differ from eager only
             * within their own bounds (no upstream failure): rounding differences that
             * travelled, not a divergence. */
            pR->status = PARITY_ST_PASS;
            adopt_failures(pR, pLocal);
        }
        return;
    }
    /* Inputs fused away on the compiled side: only the eager-input reference is left. */
    pR->status = pR->judgement.nFail > 0 ? PARITY_ST_FAIL : PARITY_ST_PASS;
    if (pR->status == PARITY_ST_FAIL)
        pR->cause = upstreamFailed ? PARITY_CAUSE_PROPAGATED : PARITY_CAUSE_UNKNOWN;
    adopt_failures(pR, &pR->judgement);
}

/* Compiled's error against the reference at least this many times eager's, beyond the
 * per-dtype tolerance, within the region's bound: suspicious (judge.h). A correct fused
 * kernel errs about as much as eager's op-by-op chain (measured, largest errors: 0.59x to
 * 1.05x on the whole-compiled captures of REGION_EAGER_SCALE's comment), while a 1% error in a
 * projection errs thousands of times more. */
#define REGION_SUSPECT_OVER_EAGER 16.0

/* A region bound too loose to judge is capped at this many times eager's largest error
 * against the reference (region_cap): eager's op-by-op chain rounds at every node, so its
 * error is the scale of what correct rounding does to these data. Measured, compiled's
 * largest error over eager's: 0.59 to 1.05 for torch.compile of clean captures (a Llama
 * block in bfloat16 and float32, encoder layers of three sizes, two under bf16 autocast),
 * 8.65 for a bfloat16 Llama block whose rotary embedding lost its negation. Not a proven
 * bound: the model note says when it decides. */
#define REGION_EAGER_SCALE 4.0

#define REGION_MODEL "fused region: every op within its own model, errors propagated " \
                     "through eager's graph from the tensors both sides hold (tolerance/graph.h)"

/* Records the region's ops and inputs by name in pR. */
static void keep_region(parity_tensor_result *pR, parity_capture *pEagerCap,
                        const parity_region *pReg)
{
    size_t i;
    for (i = 0; i < pReg->nNode; i++)
        parity_result_push(&pR->oom, &pR->azRegionOp, &pR->nRegionOp,
                           parity_capture_tensor(pEagerCap, pReg->aNodeTensor[i])->zPath);
    for (i = 0; i < pReg->nInput; i++)
        parity_result_push(&pR->oom, &pR->azRegionInput, &pR->nRegionInput,
                           parity_capture_tensor(pEagerCap, pReg->aInputTensor[i])->zPath);
}

/* The elements whose propagated radius says nothing: infinite, or at least the largest
 * magnitude the whole reference holds (any value of the tensor's size passes there). */
static uint64_t region_uninformative(const parity_graph_value *pV)
{
    double scale = 0.0;
    uint64_t i, n = 0;
    for (i = 0; i < pV->value.nElem; i++)
        if (isfinite(pV->value.aValue[i]) && fabs(pV->value.aValue[i]) > scale)
            scale = fabs(pV->value.aValue[i]);
    for (i = 0; i < pV->value.nElem; i++)
        n += !(pV->aRadius[i] < INFINITY) || (pV->aRadius[i] > 0.0 && pV->aRadius[i] >= scale);
    return n;
}

/* The propagated bound capped where it says nothing: at REGION_EAGER_SCALE times eager's
 * largest error against the reference (at least half an ulp of the output), element by
 * element wherever the radius is larger. Returns that cap's scale. */
static double region_cap(parity_graph_value *pV, double maxErrEager)
{
    double scale = REGION_EAGER_SCALE * maxErrEager;
    uint64_t i;
    for (i = 0; i < pV->value.nElem; i++) {
        double r = pV->value.aValue[i], cap;
        if (!isfinite(r)) continue;               /* special values are judged by value */
        cap = fmax(scale, 0.5 * parity_ulp_at(pV->value.dtype, fabs(r)));
        if (!(pV->aRadius[i] <= cap)) pV->aRadius[i] = cap;
    }
    return scale;
}

/* Eager's largest error against the region's reference (finite elements). */
static double region_eager_error(const parity_graph_value *pV, const double *aEager)
{
    double m = 0.0;
    uint64_t i;
    for (i = 0; i < pV->value.nElem; i++) {
        double r = pV->value.aValue[i];
        if (isfinite(r) && isfinite(aEager[i]) && fabs(aEager[i] - r) > m) m = fabs(aEager[i] - r);
    }
    return m;
}

/* pE's inputs were fused away: judges it as the output of the fused region that reaches
 * back to the tensors both captures hold (region_internal.h). Divergence: both sides
 * against the reference propagated from eager's region inputs; local: compiled against the
 * one from the compiled side's (the same when they hold the same bits), so a failure is
 * the fused region's own (cause local) or an echo of an upstream one. Where the region
 * cannot be judged (an op without a model or without propagation, too large, another
 * dtype on the compiled side), the per-dtype tolerance stands with a note saying why.
 * Returns 0, or -1 with zErr-style message in pR on a read error. */
static int judge_region(const parity_diff_options *pOpt, parity_operand_cache *pCache,
                        parity_capture *pEagerCap, size_t iE, parity_capture *pCompCap,
                        const parity_op_def *pDef, parity_dtype accDtype, double uOperand,
                        const parity_tol_override *pOv, uint64_t nBudget, int upstreamFailed,
                        const parity_operand *pOutE, const parity_operand *pOutC,
                        parity_tensor_result *pR)
{
    const parity_tensor_info *pE = parity_capture_tensor(pEagerCap, iE);
    parity_region reg;
    parity_graph_value aE[REGION_MAX_NODES], aC[REGION_MAX_NODES];
    parity_judge_plan plan;
    parity_judgement local;
    char zWhy[PARITY_ERR_LEN], zNote[PARITY_ERR_LEN + 160];
    uint64_t nLoose;
    double capScale = -1.0;
    int rc, same = 0;

    if (pOutE->dtype != pOutC->dtype) {
        note(pR, "%s", "an input computed by another op was fused away on the compiled side, "
                       "which computed in another dtype: per-dtype tolerance");
        return 0;
    }
    if (parity_region_build(pEagerCap, pCompCap, iE, &reg, zWhy, sizeof zWhy) != 0)
        goto fallback;
    reg.aNode[reg.nNode - 1].accDtype = accDtype;   /* the judged tensor's own contract */
    reg.aNode[reg.nNode - 1].uOperand = uOperand;
    if (4 * reg.nElem > nBudget) {
        snprintf(zWhy, sizeof zWhy, "its %llu elements exceed the reference's memory budget",
                 (unsigned long long)reg.nElem);
        goto fallback;
    }
    rc = parity_region_propagate(&reg, pCache, pEagerCap, NULL, aE, NULL,
                                 pOpt ? pOpt->xBeat : NULL, pOpt ? pOpt->pProgressCtx : NULL,
                                 zWhy, sizeof zWhy);
    if (rc < 0) goto read_error;
    if (rc > 0) goto fallback;
    rc = parity_region_propagate(&reg, pCache, pEagerCap, pCompCap, aC, &same,
                                 pOpt ? pOpt->xBeat : NULL, pOpt ? pOpt->pProgressCtx : NULL,
                                 zWhy, sizeof zWhy);
    if (rc != 0) {
        parity_graph_values_free(aE, reg.nNode);
        if (rc < 0) goto read_error;
        goto fallback;
    }
    make_plan(pE, pOv, pOpt, &plan);
    if (!pR->tol.exact) {
        /* the region's bound is sound but can be loose (measured: a 31-op encoder layer
         * compiled whole, bound up to 0.044 where torch.compile errs by 4e-7): a compiled
         * element the per-dtype tolerance fails and that errs REGION_SUSPECT_OVER_EAGER
         * times more than eager is reported, so a 1% error in a projection is not silent */
        plan.suspectOverEager = REGION_SUSPECT_OVER_EAGER;
        plan.suspectAtol = pR->tol.atol;
        plan.suspectRtol = pR->tol.rtol;
    }
    nLoose = region_uninformative(&aE[reg.nNode - 1]);
    if (nLoose > pOutE->nElem / 2) {
        /* a bound that says nothing about most elements judges nothing (measured: two
         * encoder layers compiled whole, 61 ops, vacuous at every element; one layer under
         * bf16 autocast, up to 4.9e8 on float32 outputs below 10), and the per-dtype
         * tolerance cries wolf where eager's own rounding is what it sees (a bfloat16
         * Llama block compiled whole: compiled 0.0079 from the reference, eager 0.0135):
         * capped at REGION_EAGER_SCALE times eager's largest error against the reference,
         * the reference still judges */
        double maxErrE = region_eager_error(&aE[reg.nNode - 1], pOutE->aValue);
        capScale = region_cap(&aE[reg.nNode - 1], maxErrE);
        if (!same) region_cap(&aC[reg.nNode - 1], maxErrE);
    }
    rc = parity_graph_judge(&aE[reg.nNode - 1], pOutE->aValue, pOutC->aValue, pOutE->aValue,
                            &plan, &pR->judgement, zWhy, sizeof zWhy);
    if (rc == 0 && !same)
        rc = parity_graph_judge(&aC[reg.nNode - 1], NULL, pOutC->aValue, pOutE->aValue, &plan,
                                &local, zWhy, sizeof zWhy);
    parity_graph_values_free(aE, reg.nNode);
    if (!same) parity_graph_values_free(aC, reg.nNode);
    if (rc != 0) {
        pR->status = PARITY_ST_ERROR;
        parity_result_set(&pR->oom, &pR->zMessage, zWhy);
        return 0;
    }
    if (same) local = pR->judgement;
    if (capScale >= 0.0) {
        pR->judgement.eagerScaled = local.eagerScaled = 1;
        snprintf(zNote, sizeof zNote, "the bound propagated through the fused region's %zu "
                 "ops is vacuous or wider than the whole tensor's largest value at %llu of "
                 "%llu elements: capped at %gx eager's largest error against the reference "
                 "(%.3g)", reg.nNode, (unsigned long long)nLoose,
                 (unsigned long long)pOutE->nElem, REGION_EAGER_SCALE,
                 capScale / REGION_EAGER_SCALE);
        note(pR, "%s", zNote);
    }
    pR->hasJudgement = 1;
    pR->zModelOp = pDef->zName;
    pR->zModel = REGION_MODEL;
    pR->accDtype = accDtype != PARITY_DT_INVALID ? accDtype
                 : pE->dtype == PARITY_DT_F64 ? PARITY_DT_F64 : PARITY_DT_F32;
    keep_region(pR, pEagerCap, &reg);
    if (pR->judgement.nVacuous > 0) {
        /* a region's vacuous elements are its propagation's (graph.h), not an overflow */
        char zMsg[320];
        snprintf(zMsg, sizeof zMsg, "the fused region's bound is vacuous for %llu element(s) "
                 "(the error carried through its ops reaches a pole, a domain edge or an "
                 "overflow there); any value is accepted there",
                 (unsigned long long)pR->judgement.nVacuous);
        push_warning(pR, zMsg);
    }
    decide_cause(pR, &local, upstreamFailed, pOutE, pOutC);
    check_metadata(pR, pDef);
    check_eager(pR, pDef);
    return 0;
fallback:
    snprintf(zNote, sizeof zNote, "an input computed by another op was fused away on the "
             "compiled side, and the fused region cannot be judged (%s): per-dtype tolerance",
             zWhy);
    note(pR, "%s", zNote);
    return 0;
read_error:
    pR->status = PARITY_ST_ERROR;
    parity_result_set(&pR->oom, &pR->zMessage, zWhy);
    return -1;
}

/* Integer and bool results (position ids, masks, T5's bucket arithmetic, a UNet's timestep):
 * no rounding happens in integer arithmetic, data movement or comparisons, and torch's
 * integer overflow wraps in two's complement on every backend, so a correct kernel given
 * the same operands gives the same bits. The per-dtype tolerance has already compared them
 * bit for bit (exact for integers and bool); this rule says why a difference happened:
 *  - the compiled side holds the op's operands and they are eager's own bits: the kernel
 *    is wrong for what it was given, cause local;
 *  - an operand differs and one failed earlier: an echo, cause propagated;
 *  - an operand differs only within its own bound (a float operand that rounded
 *    differently, which legitimately flips a comparison or an argmax): a pass with a
 *    warning that counts the flipped elements;
 *  - operands fused away on the compiled side: cause unknown when every one of them is
 *    an integer or bool tensor (exact all the way up); a pass with that warning when one
 *    is a float tensor, whose rounding the rule cannot see.
 * Operands are compared as their binary64 decoding (integers beyond 2^53 may compare equal
 * when they differ in their last bits: the local check then says local less often, never
 * more). */
#define EXACT_RULE "integer or bool result: exact, compared bit for bit (integer ops, data " \
                   "movement and comparisons do not round)"

static void judge_exact(const parity_diff_options *pOpt, parity_operand_cache *pCache,
                        parity_capture *pEagerCap, size_t iE, parity_capture *pCompCap,
                        int upstreamFailed, parity_tensor_result *pR)
{
    const parity_tensor_info *pE = parity_capture_tensor(pEagerCap, iE);
    parity_operand aIn[SEMANTIC_MAX_INPUTS], aInC[SEMANTIC_MAX_INPUTS];
    char zErr[PARITY_ERR_LEN], zW[PARITY_ERR_LEN + 200];
    int rc, rcC, floatOperand = 0;
    size_t k;

    pR->zRule = EXACT_RULE;
    if (pR->status != PARITY_ST_FAIL) return;
    for (k = 0; k < pE->nInput; k++) {
        long iI = parity_capture_find(pEagerCap, pE->azInput[k]);
        if (iI >= 0 && parity_dtype_is_float(parity_capture_tensor(pEagerCap, (size_t)iI)->dtype))
            floatOperand = 1;
    }
    if (pE->nInput > SEMANTIC_MAX_INPUTS) {
        pR->cause = upstreamFailed ? PARITY_CAUSE_PROPAGATED : PARITY_CAUSE_UNKNOWN;
        return;
    }
    parity_diff_progress(pOpt, parity_capture_filename(pEagerCap));
    rc = load_inputs(pCache, pEagerCap, NULL, pE->azInput, pE->nInput, aIn,
                     OPERAND_BUDGET_ELEMS, zErr, sizeof zErr);
    if (rc < 0) goto read_error;
    rcC = rc == 0 ? load_inputs(pCache, pCompCap, pEagerCap, pE->azInput, pE->nInput, aInC,
                                OPERAND_BUDGET_ELEMS, zErr, sizeof zErr) : 1;
    if (rcC < 0) {
        free_inputs(pCache, aIn, pE->nInput);
        goto read_error;
    }
    if (rc == 0 && rcC == 0) {
        pR->hasLocalCheck = 1;
        if (same_operands(aIn, aInC, pE->nInput)) {
            pR->cause = PARITY_CAUSE_LOCAL;
            pR->nLocalFail = pR->stats.nMismatch;
        } else if (upstreamFailed) {
            pR->cause = PARITY_CAUSE_PROPAGATED;
        } else if (floatOperand) {
            snprintf(zW, sizeof zW, "%llu element(s) differ: its float operands differ within "
                     "their bounds, which can flip an integer or bool result (a comparison, an "
                     "argmax); not a divergence", (unsigned long long)pR->stats.nMismatch);
            push_warning(pR, zW);
            pR->status = PARITY_ST_PASS;
        } else {
            pR->cause = PARITY_CAUSE_UNKNOWN;
        }
        free_inputs(pCache, aInC, pE->nInput);
    } else if (upstreamFailed) {
        pR->cause = PARITY_CAUSE_PROPAGATED;
    } else if (floatOperand) {
        snprintf(zW, sizeof zW, "%llu element(s) differ, and the compiled capture lacks its "
                 "operands (%s): float operands that rounded differently can flip an integer "
                 "or bool result, so this is not judged a divergence",
                 (unsigned long long)pR->stats.nMismatch, rc == 0 ? "fused away" : zErr);
        push_warning(pR, zW);
        pR->status = PARITY_ST_PASS;
    } else {
        pR->cause = PARITY_CAUSE_UNKNOWN;
    }
    if (rc == 0) free_inputs(pCache, aIn, pE->nInput);
    return;
read_error:
    pR->status = PARITY_ST_ERROR;
    parity_result_set(&pR->oom, &pR->zMessage, zErr);
}

void parity_semantic_judge(const parity_diff_options *pOpt, parity_operand_cache *pCache,
                           parity_capture *pEagerCap, size_t iE, parity_capture *pCompCap,
                           long iC, int upstreamFailed, parity_tensor_result *pR)
{
    const parity_tensor_info *pE = parity_capture_tensor(pEagerCap, iE);
    const parity_tensor_info *pC = iC >= 0 ? parity_capture_tensor(pCompCap, (size_t)iC) : NULL;
    const parity_op_def *pDef;
    parity_operand aIn[SEMANTIC_MAX_INPUTS], aInC[SEMANTIC_MAX_INPUTS], outE, outC;
    parity_dtype accDtype = PARITY_DT_INVALID;
    parity_judgement local;
    parity_tol_override ov;
    parity_dtype divDtype = pC ? pC->dtype : pE->dtype;
    double uOperand = 0.0;
    char zErr[PARITY_ERR_LEN];
    int rc, rcC, haveIn = 0, haveInC = 0;
    uint64_t nBudget = OPERAND_BUDGET_ELEMS;

    if (!pE->zOp || !pC || (pR->status != PARITY_ST_PASS && pR->status != PARITY_ST_FAIL)) return;
    pDef = parity_op_find(pE->zOp);
    if (!parity_dtype_is_float(pE->dtype) && (!pDef || !(pDef->flags & PARITY_OPF_INT_OUTPUT))) {
        judge_exact(pOpt, pCache, pEagerCap, iE, pCompCap, upstreamFailed, pR);
        return;
    }
    pDef = model_settings(pOpt, pE, pC, pR, &ov, &accDtype, &uOperand, &nBudget);
    if (!pDef) return;
    memset(&outE, 0, sizeof outE);
    memset(&outC, 0, sizeof outC);
    parity_diff_progress(pOpt, parity_capture_filename(pEagerCap));
    rc = load_inputs(pCache, pEagerCap, NULL, pE->azInput, pE->nInput, aIn, nBudget, zErr,
                     sizeof zErr);
    if (rc < 0) goto read_error;
    if (rc > 0) {
        note(pR, "no reference (%s): per-dtype tolerance", zErr);
        return;
    }
    haveIn = 1;
    if (parity_operand_cache_load(pCache, pEagerCap, iE, &outE, zErr, sizeof zErr) != 0)
        goto read_error;
    parity_diff_progress(pOpt, parity_capture_filename(pCompCap));
    if (parity_operand_cache_load(pCache, pCompCap, (size_t)iC, &outC, zErr, sizeof zErr) != 0)
        goto read_error;
    rcC = load_inputs(pCache, pCompCap, pEagerCap, compiled_input_names(pE, pC, pDef),
                      pE->nInput, aInC, nBudget, zErr, sizeof zErr);
    if (rcC < 0) goto read_error;
    haveInC = rcC == 0;
    if (!haveInC && fused_intermediate(pEagerCap, pCompCap, pE)) {
        /* An input the compiled side fused away was itself computed: the compiled kernel
         * consumed its own, legitimately different, value of it, which the eager-input
         * reference cannot account for; the region's reference, propagated from the tensors
         * both sides hold, can (judge_region). */
        rc = judge_region(pOpt, pCache, pEagerCap, iE, pCompCap, pDef, accDtype, uOperand,
                          &ov, nBudget, upstreamFailed, &outE, &outC, pR);
        if (rc < 0) goto read_error;
        goto done;
    }
    /* Both sides against the reference from the eager inputs: the classes, and the
     * divergence verdict when the compiled side's own inputs are unknown. */
    /* Mixed dtypes (bf16 autocast against float32 eager): both sides are judged in the
     * compiled dtype, except by an op that refuses to narrow (a layout op is no cast): then
     * in eager's. */
    if (pE->dtype != pC->dtype &&
        !op_accepts(pDef, pE, pC->dtype, aIn, accDtype, &pR->oom, zErr, sizeof zErr))
        divDtype = pE->dtype;
    if (run_model(pDef, pE, divDtype, aIn, accDtype, uOperand, outE.aValue, outC.aValue, outE.aValue, &ov,
                  &pR->judgement, &pR->accDtype, pR, pOpt) != 0)
        goto done;
    pR->hasJudgement = 1;
    pR->zModelOp = pDef->zName;
    pR->zModel = pDef->zModel;
    warn_vacuous(pR);
    if (haveInC && !op_accepts(pDef, pE, pC->dtype, aInC, accDtype, &pR->oom, zErr,
                               sizeof zErr) && !pR->oom) {
        /* The compiled capture names inputs that cannot have made this output (shapes that
         * do not broadcast to it): its own record is inconsistent, not eager's, and no
         * reason to give up a tensor eager's inputs judged (above). No local check. */
        char zW[2 * PARITY_ERR_LEN];
        snprintf(zW, sizeof zW, "the compiled capture's inputs of this op do not fit it (%s): "
                 "no local check, judged against eager's inputs", zErr);
        push_warning(pR, zW);
        free_inputs(pCache, aInC, pE->nInput);
        haveInC = 0;
    }
    /* Is the compiled kernel right for what it was given? When it was given eager's very
     * operands, the judgement above already says: the same reference, and eager beside it,
     * so an element where both break the bound is both_beyond, not the compiled kernel's
     * failure (a capture diffed against a copy of itself must pass). */
    if (haveInC && same_operands(aIn, aInC, pE->nInput))
        local = pR->judgement;
    else if (haveInC && run_model(pDef, pE, pC->dtype, aInC, accDtype, uOperand, NULL, outC.aValue,
                                  outE.aValue, &ov, &local, NULL, pR, pOpt) != 0)
        goto done;
    decide_cause(pR, haveInC ? &local : NULL, upstreamFailed, &outE, &outC);
    check_metadata(pR, pDef);
    check_eager(pR, pDef);
done:
    if (haveIn) free_inputs(pCache, aIn, pE->nInput);
    if (haveInC) free_inputs(pCache, aInC, pE->nInput);
    parity_operand_cache_release(pCache, &outE);
    parity_operand_cache_release(pCache, &outC);
    return;
read_error:
    pR->status = PARITY_ST_ERROR;
    parity_result_set(&pR->oom, &pR->zMessage, zErr);
    goto done;
}
