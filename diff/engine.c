/*
 * engine.c - parity_diff_run: two captures in, a judged parity_diff_result out.
 *
 * Steps: open both captures; order the eager tensors (order.c); mark inputs (tensors named
 * by an eager "inputs" attribute); for each eager tensor in order, match the compiled tensor
 * by path and judge it (compare.c); append compiled-only tensors; then first divergence,
 * verdict and identity. The graph always comes from the eager capture: the compiled side
 * may have fused intermediates away, so its own dangling "inputs" are not warned about.
 */
#include <stdlib.h>
#include <string.h>
#include "diff/diff.h"
#include "diff/compare_internal.h"
#include "diff/order_internal.h"
#include "diff/semantic_internal.h"
#include "diff/result_internal.h"
#include "formats/alloc.h"
#include "tolerance/ops.h"

void parity_diff_options_init(parity_diff_options *pOpt)
{
    memset(pOpt, 0, sizeof *pOpt);
}

static void choose_tolerance(const parity_diff_options *pOpt, parity_dtype dt, int isInput,
                             parity_tolerance *pTol)
{
    parity_tolerance_default(dt, pTol);
    pTol->signedZeros = pOpt->signedZeros;
    if (isInput) {
        pTol->exact = 1;   /* the runs must have consumed the same declared data */
        return;
    }
    if (pTol->exact) return;
    if (pOpt->hasRtol) pTol->rtol = pOpt->rtol;
    if (pOpt->hasAtol) pTol->atol = pOpt->atol;
    if (pOpt->hasMaxUlp) {
        pTol->useUlp = 1;
        pTol->maxUlp = pOpt->maxUlp;
    }
}

static void fill_shape(parity_tensor_result *pR, const parity_tensor_info *pE,
                       const parity_tensor_info *pC)
{
    const parity_tensor_info *pMain = pE ? pE : pC;
    pR->dtype = pMain->dtype;
    pR->rank = pMain->rank;
    memcpy(pR->aDim, pMain->aDim, sizeof pR->aDim);
    pR->dtypeCompiled = pC ? pC->dtype : PARITY_DT_INVALID;
    pR->rankCompiled = pC ? pC->rank : -1;
    if (pC) memcpy(pR->aDimCompiled, pC->aDim, sizeof pR->aDimCompiled);
}

/* Judges one matched pair. */
static void judge_pair(const parity_diff_options *pOpt, parity_capture *pEagerCap, size_t iE,
                       parity_capture *pCompCap, long iC, parity_tensor_result *pR)
{
    const parity_tensor_info *pE = parity_capture_tensor(pEagerCap, iE);
    const parity_tensor_info *pC = iC >= 0 ? parity_capture_tensor(pCompCap, (size_t)iC) : NULL;
    parity_tensor_reader *pRdE = NULL, *pRdC = NULL;
    char zErr[PARITY_ERR_LEN], zMsg[PARITY_ERR_LEN + 64];

    fill_shape(pR, pE, pC);
    choose_tolerance(pOpt, pC ? parity_cmp_dtype(pE->dtype, pC->dtype) : pE->dtype, pR->isInput,
                     &pR->tol);
    if (pE->zError || (pC && pC->zError)) {
        snprintf(zMsg, sizeof zMsg, "%s: %s", pE->zError ? "eager" : "compiled",
                 pE->zError ? pE->zError : pC->zError);
        pR->status = PARITY_ST_ERROR;
        pR->zMessage = parity_result_dup(&pR->oom, zMsg);
        return;
    }
    if (!pC) { pR->status = PARITY_ST_MISSING_IN_COMPILED; return; }
    /* Two float dtypes (bf16 autocast against float32 eager) are compared in the narrower,
     * with statistics; an input must match bit for bit, so for it this is a mismatch, as
     * is any pair that is not float on both sides. */
    if (pE->dtype != pC->dtype && (pR->isInput || !parity_dtype_is_float(pE->dtype) ||
                                   !parity_dtype_is_float(pC->dtype))) {
        pR->status = PARITY_ST_DTYPE_MISMATCH;
        return;
    }
    if (pE->dtype != pC->dtype) {
        snprintf(zMsg, sizeof zMsg, "dtypes differ (eager %s, compiled %s): compared in %s, the "
                 "wider side rounded to it", parity_dtype_name(pE->dtype),
                 parity_dtype_name(pC->dtype),
                 parity_dtype_name(parity_cmp_dtype(pE->dtype, pC->dtype)));
        parity_result_push(&pR->oom, &pR->azWarning, &pR->nWarning, zMsg);
    }
    if (!parity_tensor_same_shape(pE, pC)) { pR->status = PARITY_ST_SHAPE_MISMATCH; return; }

    parity_diff_progress(pOpt, parity_capture_filename(pEagerCap));
    if (parity_tensor_reader_open(pEagerCap, iE, &pRdE, zErr, sizeof zErr) != 0) {
        snprintf(zMsg, sizeof zMsg, "eager: %s", zErr);
        goto error;
    }
    parity_diff_progress(pOpt, parity_capture_filename(pCompCap));
    if (parity_tensor_reader_open(pCompCap, (size_t)iC, &pRdC, zErr, sizeof zErr) != 0) {
        snprintf(zMsg, sizeof zMsg, "compiled: %s", zErr);
        goto error;
    }
    parity_diff_progress(pOpt, parity_capture_filename(pEagerCap));
    if (pE->nElem > 0 && parity_tensor_reader_unstored(pRdE) &&
        parity_tensor_reader_unstored(pRdC)) {
        /* Work is bounded by what the files hold, not by the shape they declare. */
        parity_result_push(&pR->oom, &pR->azWarning, &pR->nWarning,
                           "no data stored on either side (never written): every element is "
                           "the fill value, judged once for all");
        if (parity_cmp_unstored(pRdE, pRdC, pE, pC->dtype, &pR->tol, &pR->stats, zErr,
                                sizeof zErr) != 0) {
            snprintf(zMsg, sizeof zMsg, "%s", zErr);
            goto error;
        }
    } else if (parity_cmp_tensor(pRdE, pRdC, pE, pC->dtype, &pR->tol, pOpt->nThreads,
                                 pOpt->nSlabBytes, &pR->stats, zErr, sizeof zErr) != 0) {
        snprintf(zMsg, sizeof zMsg, "%s", zErr);
        goto error;
    }
    pR->hasStats = 1;
    pR->status = pR->stats.nMismatch > 0 ? PARITY_ST_FAIL : PARITY_ST_PASS;
    parity_tensor_reader_close(pRdE);
    parity_tensor_reader_close(pRdC);
    return;
error:
    pR->status = PARITY_ST_ERROR;
    pR->zMessage = parity_result_dup(&pR->oom, zMsg);
    parity_tensor_reader_close(pRdE);
    parity_tensor_reader_close(pRdC);
}

/* aMissingFails[0]: a tensor missing in eager fails; [1]: one missing in compiled fails
 * (--strict says both; a side whose run failed says it for that side). */
static int is_failing_status(parity_status st, const int *aMissingFails)
{
    return st == PARITY_ST_FAIL || st == PARITY_ST_SHAPE_MISMATCH ||
           st == PARITY_ST_DTYPE_MISMATCH ||
           (aMissingFails[1] && st == PARITY_ST_MISSING_IN_COMPILED) ||
           (aMissingFails[0] && st == PARITY_ST_MISSING_IN_EAGER);
}

/* Did any input of pT fail earlier in execution order (or differ, for graph inputs)? */
static int upstream_failed(const parity_diff_result *pRes, const parity_tensor_info *pT)
{
    size_t k, j;
    for (k = 0; k < pT->nInput; k++)
        for (j = 0; j < pRes->nTensor; j++)
            if (pRes->aTensor[j].zName && strcmp(pRes->aTensor[j].zName, pT->azInput[k]) == 0 &&
                pRes->aTensor[j].status == PARITY_ST_FAIL)
                return 1;
    return 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* identity.differs: every root key present on either side whose text form differs,
 * except "side", "parity_format" and telemetry. Sorted by name. */
static void compute_identity(parity_diff_result *pRes)
{
    char zA[4096], zB[4096];
    size_t i, pass;
    for (pass = 0; pass < 2; pass++) {
        const parity_attr *aMine = pass == 0 ? pRes->aEagerRoot : pRes->aCompiledRoot;
        size_t nMine = pass == 0 ? pRes->nEagerRoot : pRes->nCompiledRoot;
        const parity_attr *aOther = pass == 0 ? pRes->aCompiledRoot : pRes->aEagerRoot;
        size_t nOther = pass == 0 ? pRes->nCompiledRoot : pRes->nEagerRoot;
        for (i = 0; i < nMine; i++) {
            const char *zKey = aMine[i].zName;
            const parity_attr *pOther = parity_attr_find(aOther, nOther, zKey);
            if (strcmp(zKey, "side") == 0 || strcmp(zKey, "parity_format") == 0 ||
                parity_is_telemetry_key(zKey))
                continue;
            if (pass == 1 && pOther) continue;   /* both present: judged in pass 0 */
            if (pOther && aMine[i].kind == pOther->kind && aMine[i].isArray == pOther->isArray &&
                strcmp(parity_attr_format(&aMine[i], zA, sizeof zA),
                       parity_attr_format(pOther, zB, sizeof zB)) == 0)
                continue;
            parity_result_push(&pRes->oom, &pRes->azIdentityDiffers, &pRes->nIdentityDiffers,
                               zKey);
        }
    }
    /* qsort's base must not be NULL even for 0 elements (UBSan: nonnull argument). */
    if (pRes->nIdentityDiffers > 1)
        qsort(pRes->azIdentityDiffers, pRes->nIdentityDiffers, sizeof(char *), compare_names);
}

/* What a run holds while it builds its result. */
typedef struct {
    const parity_diff_options *pOpt;
    parity_diff_result *pRes;
    parity_capture *pEagerCap, *pCompCap;
    size_t nE, nC;
    size_t *aOrder;            /* eager tensors in execution order (order.c) */
    char **azWarn;             /* ordering warnings per eager tensor */
    char *aIsInput;            /* eager tensor is a graph input or parameter */
    char *aMatched;            /* compiled tensor has an eager counterpart */
    parity_operand_cache *pCache;   /* the semantic judgements' operands (NULL: none) */
} diff_run;

/* Graph inputs and parameters: tensors named by an "inputs" attribute that no op made. */
static void mark_inputs(diff_run *pD)
{
    size_t i, k;
    for (i = 0; i < pD->nE; i++) {
        const parity_tensor_info *pT = parity_capture_tensor(pD->pEagerCap, i);
        for (k = 0; k < pT->nInput; k++) {
            long iIn = parity_capture_find(pD->pEagerCap, pT->azInput[k]);
            /* An op's output named by a later op is an intermediate, judged by tolerance;
             * only data no op produced (graph inputs, parameters) must match bit for bit.
             * One whose attributes are unusable (an 'op' of the wrong type) is an error,
             * not an input: nothing can be said of what made it. */
            const parity_tensor_info *pIn =
                iIn >= 0 ? parity_capture_tensor(pD->pEagerCap, (size_t)iIn) : NULL;
            if (pIn && !pIn->zOp && !pIn->zError) pD->aIsInput[iIn] = 1;
        }
    }
}

static void push_side_warning(parity_tensor_result *pR, const char *zSide, const char *zText)
{
    char zLine[PARITY_ERR_LEN + 32];
    snprintf(zLine, sizeof zLine, "%s: %s", zSide, zText);
    parity_result_push(&pR->oom, &pR->azWarning, &pR->nWarning, zLine);
}

/* Every eager tensor, in execution order, against its compiled counterpart. Returns -1
 * when memory ran out. */
static int judge_eager_tensors(diff_run *pD)
{
    parity_diff_result *pRes = pD->pRes;
    size_t k, nJudged = 0;
    int timeUp = 0;
    for (k = 0; k < pD->nE; k++) {
        size_t iE = pD->aOrder[k];
        const parity_tensor_info *pE = parity_capture_tensor(pD->pEagerCap, iE);
        long iC = parity_capture_find(pD->pCompCap, pE->zPath);
        parity_tensor_result *pR = &pRes->aTensor[pRes->nTensor++];

        if (!timeUp && pD->pOpt->xBeat) timeUp = pD->pOpt->xBeat(pD->pOpt->pProgressCtx) != 0;
        if (timeUp) {
            /* --timeout: the report still says what was judged before */
            pR->zName = parity_result_dup(&pR->oom, pE->zPath);
            pR->zOp = parity_result_dup(&pR->oom, pE->zOp);
            pR->hasOrder = pE->hasOrder;
            pR->iOrder = pE->iOrder;
            fill_shape(pR, pE, NULL);
            pR->status = PARITY_ST_ERROR;
            pR->zMessage = parity_result_dup(&pR->oom, "time limit reached before it was judged");
            if (iC >= 0) pD->aMatched[iC] = 1;
            if (pR->oom) return -1;
            continue;
        }

        if (pD->pOpt->xTensor) pD->pOpt->xTensor(pD->pOpt->pProgressCtx, nJudged, pD->nE, pE->zPath);
        pR->zName = parity_result_dup(&pR->oom, pE->zPath);
        pR->zOp = parity_result_dup(&pR->oom, pE->zOp);
        pR->hasOrder = pE->hasOrder;
        pR->iOrder = pE->iOrder;
        pR->isInput = pD->aIsInput[iE];
        if (pD->azWarn[iE])
            parity_result_push(&pR->oom, &pR->azWarning, &pR->nWarning, pD->azWarn[iE]);
        if (pE->zWarning) push_side_warning(pR, "eager", pE->zWarning);
        if (iC >= 0 && parity_capture_tensor(pD->pCompCap, (size_t)iC)->zWarning)
            push_side_warning(pR, "compiled",
                              parity_capture_tensor(pD->pCompCap, (size_t)iC)->zWarning);
        if (pR->oom) return -1;
        if (iC >= 0) pD->aMatched[iC] = 1;
        judge_pair(pD->pOpt, pD->pEagerCap, iE, pD->pCompCap, iC, pR);
        if (!pR->isInput)
            parity_semantic_judge(pD->pOpt, pD->pCache, pD->pEagerCap, iE, pD->pCompCap, iC,
                                  upstream_failed(pRes, pE), pR);
        /* judged before the time limit (a judgement it cut short is not) */
        if (pD->pOpt->xBeat && pD->pOpt->xBeat(pD->pOpt->pProgressCtx) != 0) timeUp = 1;
        else nJudged++;
        if (pR->status == PARITY_ST_FAIL && pR->cause == PARITY_CAUSE_NONE && !pE->zOp) {
            /* No op above it in the graph: a differing input or plain tensor is its own
             * cause. An input that differs may be an op output written without its "op"
             * (a residual add, a functional relu): then it is no input at all. */
            pR->cause = PARITY_CAUSE_LOCAL;
            if (pR->isInput)
                parity_result_push(&pR->oom, &pR->azWarning, &pR->nWarning,
                                   "no op: treated as an input and compared bit for bit; if it "
                                   "is computed, give it its 'op' (and 'inputs')");
        }
        if (pR->stats.nOddBool > 0) {
            char zLine[160];
            snprintf(zLine, sizeof zLine, "bool stored as bytes other than 0 and 1 in %llu "
                     "elements: read as true, compared by truth value",
                     (unsigned long long)pR->stats.nOddBool);
            parity_result_push(&pR->oom, &pR->azWarning, &pR->nWarning, zLine);
        }
        if (pR->status == PARITY_ST_PASS && pR->stats.nElem == 0 && pE->nElem == 0)
            parity_result_push(&pR->oom, &pR->azWarning, &pR->nWarning,
                               "zero-size tensor: nothing to compare");
        if (pR->isInput && pR->status != PARITY_ST_PASS &&
            pR->status != PARITY_ST_MISSING_IN_COMPILED) {
            pRes->inputsMatch = 0;
            parity_result_push(&pRes->oom, &pRes->azInputDiffers, &pRes->nInputDiffers,
                               pR->zName);
        }
        /* before the next tensor reads these; only this tensor's and the run's flags can
         * have been set since the last check (parity_result_oom would walk them all) */
        if (pR->oom || pRes->oom) return -1;
    }
    if (pD->pOpt->xTensor) pD->pOpt->xTensor(pD->pOpt->pProgressCtx, nJudged, pD->nE, NULL);
    return 0;
}

/* Tensors only the compiled capture has, after the eager ones. */
static void add_compiled_only(diff_run *pD)
{
    parity_diff_result *pRes = pD->pRes;
    size_t i;
    for (i = 0; i < pD->nC; i++) {
        const parity_tensor_info *pC;
        parity_tensor_result *pR;
        if (pD->aMatched[i]) continue;
        pC = parity_capture_tensor(pD->pCompCap, i);
        pR = &pRes->aTensor[pRes->nTensor++];
        pR->zName = parity_result_dup(&pR->oom, pC->zPath);
        pR->zOp = parity_result_dup(&pR->oom, pC->zOp);
        pR->hasOrder = pC->hasOrder;
        pR->iOrder = pC->iOrder;
        fill_shape(pR, NULL, pC);
        pR->rankCompiled = pC->rank;
        parity_tolerance_default(pC->dtype, &pR->tol);
        pR->status = PARITY_ST_MISSING_IN_EAGER;
        if (pC->zError) {
            char zMsg[PARITY_ERR_LEN + 16];
            snprintf(zMsg, sizeof zMsg, "compiled: %s", pC->zError);
            pR->status = PARITY_ST_ERROR;
            pR->zMessage = parity_result_dup(&pR->oom, zMsg);
        }
    }
}

/* One tensor warning, for grouping equal texts: its text, tensor and place in that
 * tensor's list; after sorting, nSame (entries with its text) and whether it is the
 * group's first in tensor order. */
typedef struct {
    const char *zText;
    size_t k, i, nSame;
    int first;
} warning_ref;

static int warning_ref_cmp(const void *pA, const void *pB)
{
    const warning_ref *a = pA, *b = pB;
    int c = strcmp(a->zText, b->zText);
    if (c) return c;
    return a->k < b->k ? -1 : a->k > b->k ? 1 : (a->i > b->i) - (a->i < b->i);
}

static int warning_ref_order(const void *pA, const void *pB)
{
    const warning_ref *a = pA, *b = pB;
    return a->k < b->k ? -1 : a->k > b->k ? 1 : (a->i > b->i) - (a->i < b->i);
}

/* Global warnings: one line per tensor warning ("NAME: warning"), so the text report and
 * stderr can show them without walking every tensor; a text that more than
 * WARNING_SUMMARY_AT tensors carry word for word (dtypes differ under autocast, zero-size
 * tensors) is one summary line instead, where its first carrier stands: "warning (N
 * tensors: /a, /b, /c, ...)". Equal texts are grouped by sorting (n log n: an autocast
 * capture has a warning on every tensor). */
#define WARNING_SUMMARY_AT 3
static void collect_warnings(parity_diff_result *pRes)
{
    size_t k, i, n = 0, g, j;
    warning_ref *a;
    for (k = 0; k < pRes->nTensor; k++) n += pRes->aTensor[k].nWarning;
    if (n == 0) return;
    if (!(a = parity_malloc(n * sizeof *a))) { pRes->oom = 1; return; }
    for (k = 0, j = 0; k < pRes->nTensor; k++)
        for (i = 0; i < pRes->aTensor[k].nWarning; i++, j++) {
            a[j].zText = pRes->aTensor[k].azWarning[i];
            a[j].k = k;
            a[j].i = i;
        }
    qsort(a, n, sizeof *a, warning_ref_cmp);
    for (g = 0; g < n; g = j) {
        for (j = g; j < n && strcmp(a[j].zText, a[g].zText) == 0; j++) {}
        for (i = g; i < j; i++) {
            a[i].nSame = j - g;
            a[i].first = i == g;
        }
    }
    qsort(a, n, sizeof *a, warning_ref_order);
    for (j = 0; j < n; j++) {
        char zLine[1200];
        if (a[j].nSame <= WARNING_SUMMARY_AT) {
            snprintf(zLine, sizeof zLine, "%.400s: %.700s", pRes->aTensor[a[j].k].zName,
                     a[j].zText);
        } else if (a[j].first) {
            size_t len = (size_t)snprintf(zLine, sizeof zLine, "%.700s (%zu tensors:",
                                          a[j].zText, a[j].nSame), shown = 0, q;
            for (q = j; q < n && shown < 3 && len < sizeof zLine; q++)
                if (strcmp(a[q].zText, a[j].zText) == 0)
                    len += (size_t)snprintf(zLine + len, sizeof zLine - len, "%s %.100s",
                                            shown++ ? "," : "", pRes->aTensor[a[q].k].zName);
            if (len < sizeof zLine)
                snprintf(zLine + len, sizeof zLine - len, "%s)",
                         a[j].nSame > shown ? ", ..." : "");
        } else {
            continue;
        }
        parity_result_push(&pRes->oom, &pRes->azWarning, &pRes->nWarning, zLine);
    }
    free(a);
}

/* run_failure (FORMAT.md): that side's run crashed, hung or errored, so the tensors it
 * lacks were lost, not fused away: they fail as --strict would fail them
 * (aMissingFails[side]), and the pair fails whatever the tensors that are there say
 * (*pAnyFail). Returns -1 with zErr for a malformed attribute. */
static int read_run_failures(diff_run *pD, int *aMissingFails, int *pAnyFail, char *zErr,
                             size_t nErr)
{
    parity_diff_result *pRes = pD->pRes;
    int k;
    for (k = 0; k < 2; k++) {
        const parity_attr *pA = parity_attr_find(k ? pRes->aCompiledRoot : pRes->aEagerRoot,
                                                 k ? pRes->nCompiledRoot : pRes->nEagerRoot,
                                                 "run_failure");
        char zLine[1200];
        aMissingFails[k] = pD->pOpt->strict;
        if (!pA) continue;
        if (pA->kind != PARITY_ATTR_STRING || pA->isArray || pA->n != 1) {
            snprintf(zErr, nErr, "%s: root attribute 'run_failure' must be one string",
                     k ? pRes->zCompiledFile : pRes->zEagerFile);
            return -1;
        }
        *pAnyFail = 1;
        aMissingFails[k] = 1;
        snprintf(zLine, sizeof zLine, "%s: its run failed: %.1000s", k ? "compiled" : "eager",
                 pA->azStr[0]);
        parity_result_push(&pRes->oom, &pRes->azWarning, &pRes->nWarning, zLine);
    }
    return 0;
}

/* First divergence and verdict. The first divergence is the earliest failing tensor in
 * execution order that is not an echo of an earlier failure (cause "propagated" means its
 * own kernel was right for the inputs it got); without op models, simply the earliest
 * failing tensor. */
static void decide(parity_diff_result *pRes, const int *aMissingFails, int anyFail)
{
    int anyError = 0;
    size_t k;
    for (k = 0; k < pRes->nTensor; k++) {
        const parity_tensor_result *pR = &pRes->aTensor[k];
        if (pR->status == PARITY_ST_ERROR) anyError = 1;
        if (is_failing_status(pR->status, aMissingFails)) {
            anyFail = 1;
            if (!pRes->zFirstDivergence && pR->cause != PARITY_CAUSE_PROPAGATED)
                pRes->zFirstDivergence = parity_result_dup(&pRes->oom, pR->zName);
        }
    }
    for (k = 0; k < pRes->nTensor && !pRes->zFirstDivergence; k++)
        if (is_failing_status(pRes->aTensor[k].status, aMissingFails))
            pRes->zFirstDivergence = parity_result_dup(&pRes->oom, pRes->aTensor[k].zName);
    if (!pRes->inputsMatch) anyFail = 1;
    pRes->verdict = anyError ? PARITY_VERDICT_ERROR
                  : anyFail ? PARITY_VERDICT_FAIL : PARITY_VERDICT_PASS;
}

/* --map-prefix, on both captures, in the order given. 0, or -1 with zErr. */
static int map_prefixes(diff_run *pD, char *zErr, size_t nErr)
{
    size_t i;
    for (i = 0; i < pD->pOpt->nMap; i++) {
        if (parity_capture_map_prefix(pD->pEagerCap, pD->pOpt->azMapOld[i],
                                      pD->pOpt->azMapNew[i], zErr, nErr) < 0 ||
            parity_capture_map_prefix(pD->pCompCap, pD->pOpt->azMapOld[i],
                                      pD->pOpt->azMapNew[i], zErr, nErr) < 0)
            return -1;
    }
    return 0;
}

/* A root "side" that contradicts the argument order is a warning: with the files swapped
 * every verdict about "compiled" is about eager (a bug in compiled reads as eager_worse). */
static void check_sides(parity_diff_result *pRes)
{
    const parity_attr *pE = parity_attr_find(pRes->aEagerRoot, pRes->nEagerRoot, "side");
    const parity_attr *pC = parity_attr_find(pRes->aCompiledRoot, pRes->nCompiledRoot, "side");
    int eagerSaysCompiled = pE && pE->kind == PARITY_ATTR_STRING && pE->n == 1 &&
                            strcmp(pE->azStr[0], "compiled") == 0;
    int compiledSaysEager = pC && pC->kind == PARITY_ATTR_STRING && pC->n == 1 &&
                            strcmp(pC->azStr[0], "eager") == 0;
    char zLine[PARITY_ERR_LEN * 2];
    /* both files saying the same (a capture against a copy of itself, two compiled runs)
     * is no swap */
    if (!eagerSaysCompiled && !compiledSaysEager) return;
    if (pE && pC && pE->kind == PARITY_ATTR_STRING && pC->kind == PARITY_ATTR_STRING &&
        pE->n == 1 && pC->n == 1 && strcmp(pE->azStr[0], pC->azStr[0]) == 0)
        return;
    snprintf(zLine, sizeof zLine, "%s%s%s: the arguments look swapped (paritydiff EAGER "
             "COMPILED); every judgement below takes the first file as eager",
             eagerSaysCompiled ? "the first file says side = \"compiled\"" : "",
             eagerSaysCompiled && compiledSaysEager ? " and " : "",
             compiledSaysEager ? "the second file says side = \"eager\"" : "");
    parity_result_push(&pRes->oom, &pRes->azWarning, &pRes->nWarning, zLine);
}

/* One warning naming the ops the registry has no model for (by how many tensors): they
 * were judged by the per-dtype tolerance, and a failure there has no cause. */
static void warn_unmodelled(parity_diff_result *pRes)
{
    const char *azOp[16];
    size_t anOp[16], nOp = 0, nMore = 0, k, j, len;
    char zLine[1200];
    for (k = 0; k < pRes->nTensor; k++) {
        const parity_tensor_result *pR = &pRes->aTensor[k];
        if (!pR->zOp || pR->hasJudgement || pR->zRule || parity_op_find(pR->zOp)) continue;
        for (j = 0; j < nOp && strcmp(azOp[j], pR->zOp) != 0; j++) {}
        if (j < nOp) anOp[j]++;
        else if (nOp < 16) { azOp[nOp] = pR->zOp; anOp[nOp++] = 1; }
        else nMore++;
    }
    if (nOp == 0) return;
    len = (size_t)snprintf(zLine, sizeof zLine, "no model for %s%zu op(s), judged by the "
                           "per-dtype tolerance instead:", nMore ? "more than " : "", nOp);
    for (j = 0; j < nOp && len < sizeof zLine; j++)
        len += (size_t)snprintf(zLine + len, sizeof zLine - len, "%s %.120s (%zu tensor%s)",
                                j ? "," : "", azOp[j], anOp[j], anOp[j] == 1 ? "" : "s");
    if (nMore && len < sizeof zLine)
        snprintf(zLine + len, sizeof zLine - len, ", and %zu more tensor(s) of other ops", nMore);
    parity_result_push(&pRes->oom, &pRes->azWarning, &pRes->nWarning, zLine);
}

/* A failing run whose eager capture says nothing about execution (no "order", no
 * "inputs"): the first divergence is only the first failing name, which must be said. */
static void check_order_known(diff_run *pD)
{
    size_t i;
    if (pD->pRes->verdict != PARITY_VERDICT_FAIL || pD->nE < 2) return;
    for (i = 0; i < pD->nE; i++) {
        const parity_tensor_info *pT = parity_capture_tensor(pD->pEagerCap, i);
        if (pT->hasOrder || pT->nInput > 0) return;
    }
    parity_result_push(&pD->pRes->oom, &pD->pRes->azWarning, &pD->pRes->nWarning,
                       "the eager capture has no 'order' or 'inputs' attribute: execution order "
                       "is unknown, tensors are taken by name, and the first divergence is only "
                       "the first failing name");
}

/* A pass that compared no tensor is no pass: the run is an error with the reason. A
 * zero-size pair was compared (shape and dtype agree): it passes with its own warning.
 * Nor is a pass that compared only inputs and parameters, which both sides were given: a
 * model whose output the compiled capture names otherwise (a dict under other keys) would
 * pass having compared nothing it computed. */
static void check_compared(parity_diff_result *pRes, size_t nE, size_t nC)
{
    size_t k, nInputPass = 0, nComputed = 0;
    char zMsg[PARITY_ERR_LEN];
    if (pRes->verdict != PARITY_VERDICT_PASS) return;
    for (k = 0; k < pRes->nTensor; k++) {
        const parity_tensor_result *pR = &pRes->aTensor[k];
        if (pR->status == PARITY_ST_PASS && !pR->isInput) return;
        nInputPass += pR->status == PARITY_ST_PASS;
        nComputed += !pR->isInput && pR->status == PARITY_ST_MISSING_IN_COMPILED;
    }
    if (nInputPass > 0) {
        snprintf(zMsg, sizeof zMsg, "nothing computed compared: the %zu tensor(s) compared are "
                 "inputs and parameters, and none of the %zu computed eager tensor(s) has a "
                 "counterpart in the compiled capture (are the outputs named alike on both "
                 "sides?)", nInputPass, nComputed);
        pRes->zError = parity_result_dup(&pRes->oom, zMsg);
        pRes->verdict = PARITY_VERDICT_ERROR;
        return;
    }
    if (nE == 0 && nC == 0)
        snprintf(zMsg, sizeof zMsg, "nothing compared: neither capture holds a tensor");
    else
        snprintf(zMsg, sizeof zMsg, "nothing compared: none of the %zu eager tensor(s) has a "
                 "counterpart among the %zu compiled one(s)%s", nE, nC,
                 nC > 0 && nE > 0 ? " (names differ; for a wrapper's prefix such as "
                                    "torch.compile's, --map-prefix /_orig_mod=/)" : "");
    pRes->zError = parity_result_dup(&pRes->oom, zMsg);
    pRes->verdict = PARITY_VERDICT_ERROR;
}

/* Opens both captures and copies their root attributes. 0, or -1 with zErr. */
static int open_pair(diff_run *pD, const char *zEager, const char *zCompiled, char *zErr,
                     size_t nErr)
{
    parity_diff_result *pRes = pD->pRes;
    const parity_attr *aRoot;
    size_t nRoot;
    parity_diff_progress(pD->pOpt, zEager);
    if (parity_capture_open(zEager, &pD->pEagerCap, zErr, nErr) != 0) return -1;
    parity_diff_progress(pD->pOpt, zCompiled);
    if (parity_capture_open(zCompiled, &pD->pCompCap, zErr, nErr) != 0) return -1;
    aRoot = parity_capture_root_attrs(pD->pEagerCap, &nRoot);
    parity_result_copy_attrs(&pRes->oom, aRoot, nRoot, &pRes->aEagerRoot);
    pRes->nEagerRoot = pRes->aEagerRoot ? nRoot : 0;
    aRoot = parity_capture_root_attrs(pD->pCompCap, &nRoot);
    parity_result_copy_attrs(&pRes->oom, aRoot, nRoot, &pRes->aCompiledRoot);
    pRes->nCompiledRoot = pRes->aCompiledRoot ? nRoot : 0;
    if (pRes->oom) {
        snprintf(zErr, nErr, "out of memory");
        return -1;
    }
    pD->nE = parity_capture_count(pD->pEagerCap);
    pD->nC = parity_capture_count(pD->pCompCap);
    return map_prefixes(pD, zErr, nErr);
}

int parity_diff_run(const parity_diff_options *pOpt, const char *zEager,
                    const char *zCompiled, parity_diff_result *pRes, char *zErr,
                    size_t nErr)
{
    diff_run d;
    size_t i;
    int rc = -1, anyFail = 0, aMissingFails[2];

    memset(&d, 0, sizeof d);
    d.pOpt = pOpt;
    d.pRes = pRes;
    parity_capture_set_decode_threads(pOpt->nThreads);
    parity_capture_set_max_depth(pOpt->maxDepth);
    memset(pRes, 0, sizeof *pRes);
    pRes->inputsMatch = 1;
    pRes->strict = pOpt->strict;
    pRes->signedZeros = pOpt->signedZeros;
    pRes->zEagerFile = parity_result_dup(&pRes->oom, zEager);
    pRes->zCompiledFile = parity_result_dup(&pRes->oom, zCompiled);
    if (open_pair(&d, zEager, zCompiled, zErr, nErr) != 0) goto cleanup;
    compute_identity(pRes);
    d.aOrder = parity_malloc((d.nE ? d.nE : 1) * sizeof(size_t));
    d.azWarn = parity_calloc(d.nE ? d.nE : 1, sizeof(char *));
    d.aIsInput = parity_calloc(d.nE ? d.nE : 1, 1);
    d.aMatched = parity_calloc(d.nC ? d.nC : 1, 1);
    pRes->aTensor = parity_calloc(d.nE + d.nC + 1, sizeof(parity_tensor_result));
    if (!d.aOrder || !d.azWarn || !d.aIsInput || !d.aMatched || !pRes->aTensor) goto oom;
    if (parity_order_compute(d.pEagerCap, 1, d.aOrder, d.azWarn) != 0) goto oom;
    mark_inputs(&d);
    d.pCache = parity_operand_cache_new();   /* without one, each load reads anew */
    if (judge_eager_tensors(&d) != 0) goto oom;
    add_compiled_only(&d);
    collect_warnings(pRes);
    if (read_run_failures(&d, aMissingFails, &anyFail, zErr, nErr) != 0) goto cleanup;
    decide(pRes, aMissingFails, anyFail);
    check_compared(pRes, d.nE, d.nC);
    check_sides(pRes);
    check_order_known(&d);
    warn_unmodelled(pRes);
    if (parity_result_oom(pRes)) goto oom;
    rc = 0;
    goto cleanup;
oom:
    snprintf(zErr, nErr, "out of memory");
cleanup:
    if (d.azWarn) for (i = 0; i < d.nE; i++) free(d.azWarn[i]);
    free(d.azWarn);
    free(d.aOrder);
    free(d.aIsInput);
    free(d.aMatched);
    parity_operand_cache_free(d.pCache);
    parity_capture_close(d.pEagerCap);
    parity_capture_close(d.pCompCap);
    parity_diff_progress(pOpt, NULL);
    if (rc != 0) parity_diff_result_free(pRes);
    return rc;
}
