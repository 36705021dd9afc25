/*
 * gate_outcome.c - outcome parity: the decision a tensor stands for (GATE.md, "Outcome
 * parity"), read on the eager and the compiled side and compared.
 *
 * A decision is what a serving system does with the tensor: the class argmax picks, the
 * set top-k returns, whether a score passes a threshold, the token emitted. Two sides can
 * agree on every decision while their numbers differ (the usual case), or disagree on a
 * few rows while every element is within its bound (a near-tie): numerical parity and
 * outcome parity are different questions, and the gate reports both.
 *
 * Where the sides decide differently, the reference says who is right: the tensor's op
 * (ops.h), recomputed in MPFR from the eager capture's own inputs, gives the exact values of
 * the row (or element), and the decision read from them is compared with each side's.
 * The exact values, not their rounding to the tensor's dtype: the question is which
 * decision the mathematics makes. Only the rows that disagree are recomputed, so the cost
 * is that of a few elements, whatever the tensor's size. No op, an op the registry lacks,
 * or inputs not captured leave the row's referee unknown, and say so (ref_unknown).
 *
 * Runs in the pair's child, after the diff. Outcome tensors are read whole (they are
 * logits and tokens, not activations); one larger than OUTCOME_MAX_ELEMS is an error of
 * that record, never a memory blow-up.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpfr.h>
#include "diff/gate.h"
#include "diff/operand_internal.h"
#include "formats/capture.h"
#include "formats/dtype.h"
#include "reports/report_internal.h"
#include "tolerance/mpref.h"

#define OUTCOME_MAX_ELEMS (64u << 20)
#define TOPK_MAX 1024

typedef enum { RULE_ARGMAX, RULE_TOPK, RULE_THRESHOLD, RULE_TOKENS } rule_kind;

typedef struct {
    rule_kind kind;
    long k;               /* top-k */
    double threshold;
} outcome_rule;

/* "argmax", "topk:K", "threshold:T", "tokens"; 0, or -1 when the text is none of these. */
static int parse_rule(const char *z, outcome_rule *pRule)
{
    char *zEnd;
    memset(pRule, 0, sizeof *pRule);
    if (strcmp(z, "argmax") == 0) { pRule->kind = RULE_ARGMAX; return 0; }
    if (strcmp(z, "tokens") == 0) { pRule->kind = RULE_TOKENS; return 0; }
    if (strncmp(z, "topk:", 5) == 0) {
        pRule->kind = RULE_TOPK;
        pRule->k = strtol(z + 5, &zEnd, 10);
        return (*zEnd == 0 && z[5] && pRule->k >= 1 && pRule->k <= TOPK_MAX) ? 0 : -1;
    }
    if (strncmp(z, "threshold:", 10) == 0) {
        pRule->kind = RULE_THRESHOLD;
        pRule->threshold = strtod(z + 10, &zEnd);
        return (*zEnd == 0 && z[10] && isfinite(pRule->threshold)) ? 0 : -1;
    }
    return -1;
}

/* x ranks above y: NaN above everything (torch.argmax takes NaN as the maximum), then by
 * value; equal values rank by lower index, which the caller's scan order gives. */
static int ranks_above(double x, double y)
{
    if (isnan(x)) return !isnan(y);
    if (isnan(y)) return 0;
    return x > y;
}

static uint64_t row_argmax(const double *a, uint64_t n)
{
    uint64_t i, best = 0;
    for (i = 1; i < n; i++)
        if (ranks_above(a[i], a[best])) best = i;
    return best;
}

/* The indices of the k largest (ties: lower index first), sorted, into aOut. */
static void row_topk(const double *a, uint64_t n, long k, uint64_t *aOut)
{
    long j, m = 0;
    uint64_t i;
    for (i = 0; i < n; i++) {
        /* insert i into the ranked list aOut[0..m) if it belongs there */
        long pos = m;
        while (pos > 0 && ranks_above(a[i], a[aOut[pos - 1]])) pos--;
        if (pos >= k) continue;
        if (m < k) m++;
        for (j = m - 1; j > pos; j--) aOut[j] = aOut[j - 1];
        aOut[pos] = i;
    }
    /* as a set: sorted by index */
    for (j = 1; j < m; j++) {
        uint64_t v = aOut[j];
        long p = j;
        while (p > 0 && aOut[p - 1] > v) { aOut[p] = aOut[p - 1]; p--; }
        aOut[p] = v;
    }
}

/* Opens a capture with the diff's --map-prefix renames applied, so outcome tensors are
 * found under the names the diff matched them by. 0, or -1 with zErr. */
static int open_mapped(const parity_diff_options *pOpt, const char *zFile, parity_capture **ppCap,
                       char *zErr, size_t nErr)
{
    size_t k;
    if (parity_capture_open(zFile, ppCap, zErr, nErr) != 0) return -1;
    for (k = 0; k < pOpt->nMap; k++)
        if (parity_capture_map_prefix(*ppCap, pOpt->azMapOld[k], pOpt->azMapNew[k], zErr, nErr) < 0) {
            parity_capture_close(*ppCap);
            *ppCap = NULL;
            return -1;
        }
    return 0;
}

/* Tensor zName of pCap whole, decoded to binary64 by the registry's operand loader (the
 * one whole-tensor reader); its info in *ppInfo. 0, or -1 with zErr. */
static int load_outcome(parity_capture *pCap, const char *zSide, const char *zName,
                        parity_operand *pOp, const parity_tensor_info **ppInfo, char *zErr,
                        size_t nErr)
{
    long i = parity_capture_find(pCap, zName);
    const parity_tensor_info *pInfo = i >= 0 ? parity_capture_tensor(pCap, (size_t)i) : NULL;
    if (pInfo == NULL) {
        snprintf(zErr, nErr, "not in the %s capture", zSide);
        return -1;
    }
    if (pInfo->zError) {
        snprintf(zErr, nErr, "%s: %s", zSide, pInfo->zError);
        return -1;
    }
    if (pInfo->nElem > OUTCOME_MAX_ELEMS) {
        snprintf(zErr, nErr, "%llu elements, more than an outcome tensor may hold (%u)",
                 (unsigned long long)pInfo->nElem, OUTCOME_MAX_ELEMS);
        return -1;
    }
    *ppInfo = pInfo;
    return parity_operand_load(pCap, (size_t)i, pOp, zErr, nErr);
}

#define REF_MAX_INPUTS 8

/* The referee of one outcome tensor: its op over the eager capture's inputs. */
typedef struct {
    parity_capture *pCap;      /* the eager capture, and the outcome tensor in it */
    const parity_tensor_info *pInfo;
    int tried;                 /* set up on the first disagreement only: a pair whose sides
                                * agree everywhere loads no operand for it */
    int ready;                 /* 0: no reference (zWhy says why) */
    parity_op_call call;
    parity_operand aIn[REF_MAX_INPUTS];
    size_t nIn;
    mpfr_t value;
    char zWhy[256];
} referee;

static void referee_close(referee *pRef)
{
    size_t k;
    if (pRef->ready) {
        parity_op_end(&pRef->call);
        mpfr_clear(pRef->value);
    }
    for (k = 0; k < pRef->nIn; k++) parity_operand_free(&pRef->aIn[k]);
    pRef->ready = 0;
    pRef->nIn = 0;
}

/* Sets the referee up for its tensor; 0 on success, else -1 with pRef->zWhy. */
static int referee_open(referee *pRef)
{
    parity_capture *pCap = pRef->pCap;
    const parity_tensor_info *pInfo = pRef->pInfo;
    const parity_op_def *pDef = pInfo->zOp ? parity_op_find(pInfo->zOp) : NULL;
    const parity_attr *pAcc = parity_attr_find(pInfo->aAttr, pInfo->nAttr, "acc_dtype");
    parity_dtype accDtype = PARITY_DT_INVALID;
    uint64_t nTotal = 0;
    size_t k;
    char zErr[PARITY_ERR_LEN];

    pRef->tried = 1;
    if (pDef == NULL) {
        snprintf(pRef->zWhy, sizeof pRef->zWhy, pInfo->zOp ? "op %s has no model" : "no op",
                 pInfo->zOp);
        return -1;
    }
    if (pInfo->nInput > REF_MAX_INPUTS) {
        snprintf(pRef->zWhy, sizeof pRef->zWhy, "too many inputs");
        return -1;
    }
    if (pAcc && pAcc->kind == PARITY_ATTR_STRING && pAcc->n == 1)
        accDtype = parity_dtype_from_name(pAcc->azStr[0]);
    for (k = 0; k < pInfo->nInput; k++) {
        long i = parity_capture_find(pCap, pInfo->azInput[k]);
        const parity_tensor_info *pIn = i >= 0 ? parity_capture_tensor(pCap, (size_t)i) : NULL;
        if (pIn == NULL || pIn->zError) {
            snprintf(pRef->zWhy, sizeof pRef->zWhy, "input %.200s not captured", pInfo->azInput[k]);
            goto fail;
        }
        nTotal += pIn->nElem;
        if (nTotal > OPERAND_BUDGET_ELEMS) {
            snprintf(pRef->zWhy, sizeof pRef->zWhy, "operands exceed the reference's budget");
            goto fail;
        }
        if (parity_operand_load(pCap, (size_t)i, &pRef->aIn[k], zErr, sizeof zErr) != 0) {
            snprintf(pRef->zWhy, sizeof pRef->zWhy, "%.250s", zErr);
            goto fail;
        }
        pRef->nIn++;
    }
    if (parity_op_begin(&pRef->call, pDef, pRef->aIn, pRef->nIn, pInfo->dtype, pInfo->rank,
                        pInfo->aDim, accDtype, pInfo->aAttr, pInfo->nAttr, zErr, sizeof zErr) != 0) {
        snprintf(pRef->zWhy, sizeof pRef->zWhy, "%.250s", zErr);
        goto fail;
    }
    mpfr_init2(pRef->value, PARITY_REF_PREC);
    pRef->ready = 1;
    return 0;
fail:
    referee_close(pRef);
    return -1;
}

/* The exact values of elements [first, first + n) into a (binary64, rounded to nearest);
 * 0, or -1 when the op fails. Elements must be asked for in increasing order (ops.h). */
static int referee_values(referee *pRef, uint64_t first, uint64_t n, double *a)
{
    uint64_t i;
    double bound;
    if (!pRef->tried) referee_open(pRef);
    if (!pRef->ready) return -1;
    for (i = 0; i < n; i++) {
        parity_op_call_clear_element(&pRef->call);
        if (pRef->call.pDef->xElement(&pRef->call, first + i, pRef->value, &bound) != 0) return -1;
        a[i] = mpfr_get_d(pRef->value, MPFR_RNDN);
    }
    return 0;
}

typedef struct {
    uint64_t decisions, agree, refEager, refCompiled, refNeither, refUnknown;
} outcome_counts;

/* Counts who the referee sides with, given 1 where its decision equals eager's and
 * compiled's (both can hold only when the two sides agree, which is never asked). */
static void count_referee(outcome_counts *pCount, int likeEager, int likeCompiled)
{
    if (likeEager) pCount->refEager++;
    else if (likeCompiled) pCount->refCompiled++;
    else pCount->refNeither++;
}

/* Decides every row (argmax, top-k) or element (threshold, tokens) on both sides, and
 * where they differ asks the referee (NULL or not ready: unknown). */
static int decide(const outcome_rule *pRule, const double *aE, const double *aC,
                  const parity_tensor_info *pInfo, referee *pRef, outcome_counts *pCount,
                  char *zErr, size_t nErr)
{
    uint64_t nLast = pInfo->rank ? pInfo->aDim[pInfo->rank - 1] : 1, nRow, r, i;
    int canRefer = pRef && pRule->kind != RULE_TOKENS;
    double *aRef = NULL;

    if (pRule->kind == RULE_THRESHOLD || pRule->kind == RULE_TOKENS) {
        for (i = 0; i < pInfo->nElem; i++) {
            double ref;
            int same = pRule->kind == RULE_THRESHOLD
                ? ((aE[i] > pRule->threshold) == (aC[i] > pRule->threshold))
                : (aE[i] == aC[i] || (isnan(aE[i]) && isnan(aC[i])));
            pCount->decisions++;
            if (same) pCount->agree++;
            else if (!canRefer || referee_values(pRef, i, 1, &ref) != 0) pCount->refUnknown++;
            else count_referee(pCount, (ref > pRule->threshold) == (aE[i] > pRule->threshold),
                               (ref > pRule->threshold) == (aC[i] > pRule->threshold));
        }
        return 0;
    }
    if (nLast == 0) return 0;
    nRow = pInfo->nElem / nLast;
    if (pRule->kind == RULE_TOPK && (uint64_t)pRule->k > nLast) {
        snprintf(zErr, nErr, "topk:%ld over a last dim of %llu", pRule->k,
                 (unsigned long long)nLast);
        return -1;
    }
    if (canRefer && (aRef = malloc(nLast * sizeof *aRef)) == NULL) canRefer = 0;
    for (r = 0; r < nRow; r++) {
        const double *e = aE + r * nLast, *c = aC + r * nLast;
        int same, refOk = canRefer;
        if (pRule->kind == RULE_ARGMAX) {
            uint64_t iE = row_argmax(e, nLast), iC = row_argmax(c, nLast), iR;
            same = iE == iC;
            if (!same && refOk && referee_values(pRef, r * nLast, nLast, aRef) == 0) {
                iR = row_argmax(aRef, nLast);
                count_referee(pCount, iR == iE, iR == iC);
            } else if (!same) {
                pCount->refUnknown++;
            }
        } else {
            uint64_t aTopE[TOPK_MAX], aTopC[TOPK_MAX], aTopR[TOPK_MAX];
            size_t nK = (size_t)pRule->k * sizeof *aTopE;
            row_topk(e, nLast, pRule->k, aTopE);
            row_topk(c, nLast, pRule->k, aTopC);
            same = memcmp(aTopE, aTopC, nK) == 0;
            if (!same && refOk && referee_values(pRef, r * nLast, nLast, aRef) == 0) {
                row_topk(aRef, nLast, pRule->k, aTopR);
                count_referee(pCount, memcmp(aTopR, aTopE, nK) == 0, memcmp(aTopR, aTopC, nK) == 0);
            } else if (!same) {
                pCount->refUnknown++;
            }
        }
        pCount->decisions++;
        if (same) pCount->agree++;
    }
    free(aRef);
    return 0;
}

static json_t *outcome_record(const char *zTensor, const char *zRule, const outcome_counts *pC,
                              const char *zError, const char *zNote)
{
    json_t *p = json_object();
    int rc = 0;
    rc |= parity_report_set(p, "tensor", parity_report_string(zTensor));   /* HDF5 names: any bytes */
    rc |= parity_report_set(p, "rule", parity_report_string(zRule));
    rc |= parity_report_set(p, "decisions", json_integer((json_int_t)pC->decisions));
    rc |= parity_report_set(p, "agree", json_integer((json_int_t)pC->agree));
    rc |= parity_report_set(p, "ref_eager", json_integer((json_int_t)pC->refEager));
    rc |= parity_report_set(p, "ref_compiled", json_integer((json_int_t)pC->refCompiled));
    rc |= parity_report_set(p, "ref_neither", json_integer((json_int_t)pC->refNeither));
    rc |= parity_report_set(p, "ref_unknown", json_integer((json_int_t)pC->refUnknown));
    rc |= parity_report_set(p, "error", parity_report_string(zError));
    rc |= parity_report_set(p, "note", parity_report_string(zNote));
    return parity_report_finish(p, rc);
}

static json_t *one_outcome(parity_capture *pCapE, parity_capture *pCapC, const char *zTensor,
                           const char *zRule)
{
    outcome_rule rule;
    outcome_counts count;
    const parity_tensor_info *pInfoE = NULL, *pInfoC = NULL;
    parity_operand opE, opC;
    char zErr[PARITY_ERR_LEN] = "", zWhy[PARITY_ERR_LEN + 64], zNote[300] = "";
    referee ref;
    json_t *pRec;

    memset(&count, 0, sizeof count);
    memset(&opE, 0, sizeof opE);
    memset(&opC, 0, sizeof opC);
    if (parse_rule(zRule, &rule) != 0) {
        snprintf(zErr, sizeof zErr, "outcome '%s' is none of argmax, topk:K, threshold:T, "
                 "tokens", zRule);
        goto done;
    }
    if (load_outcome(pCapE, "eager", zTensor, &opE, &pInfoE, zErr, sizeof zErr) != 0 ||
        load_outcome(pCapC, "compiled", zTensor, &opC, &pInfoC, zErr, sizeof zErr) != 0)
        goto done;
    if (!parity_tensor_same_shape(pInfoE, pInfoC)) {
        snprintf(zErr, sizeof zErr, "the two sides' shapes differ");
        goto done;
    }
    memset(&ref, 0, sizeof ref);
    ref.pCap = pCapE;
    ref.pInfo = pInfoE;
    if (decide(&rule, opE.aValue, opC.aValue, pInfoE, &ref, &count, zErr, sizeof zErr) == 0)
        zErr[0] = 0;
    if (!ref.ready && count.refUnknown > 0 && rule.kind != RULE_TOKENS)
        snprintf(zNote, sizeof zNote, "no reference: %s", ref.zWhy);
    referee_close(&ref);
done:
    snprintf(zWhy, sizeof zWhy, "%s", zErr);
    pRec = outcome_record(zTensor, zRule, &count, zErr[0] ? zWhy : NULL,
                          zNote[0] ? zNote : NULL);
    parity_operand_free(&opE);
    parity_operand_free(&opC);
    return pRec;
}

json_t *parity_gate_outcomes(const parity_diff_options *pOpt, const char *zEager,
                             const char *zCompiled, const parity_diff_result *pRes)
{
    json_t *pOut = json_array();
    parity_capture *pCap = NULL, *pCapC = NULL;
    char zErr[PARITY_ERR_LEN];
    size_t i, n;
    int rc = 0;

    (void)pRes;
    if (pOut == NULL) return NULL;
    if (open_mapped(pOpt, zEager, &pCap, zErr, sizeof zErr) != 0) return pOut;
    n = parity_capture_count(pCap);
    for (i = 0; i < n && rc == 0; i++) {
        const parity_tensor_info *pInfo = parity_capture_tensor(pCap, i);
        const parity_attr *pA = parity_attr_find(pInfo->aAttr, pInfo->nAttr, "outcome");
        if (pA == NULL) continue;
        if (pA->kind != PARITY_ATTR_STRING || pA->isArray) {
            outcome_counts none;
            memset(&none, 0, sizeof none);
            rc |= parity_report_append(pOut, outcome_record(pInfo->zPath, "?", &none,
                                                            "outcome is not a string", NULL));
            continue;
        }
        /* the compiled capture is opened once, at the first outcome tensor */
        if (pCapC == NULL && open_mapped(pOpt, zCompiled, &pCapC, zErr, sizeof zErr) != 0) {
            outcome_counts none;
            memset(&none, 0, sizeof none);
            rc |= parity_report_append(pOut, outcome_record(pInfo->zPath, pA->azStr[0], &none,
                                                            zErr, NULL));
            continue;
        }
        rc |= parity_report_append(pOut, one_outcome(pCap, pCapC, pInfo->zPath, pA->azStr[0]));
    }
    if (pCapC) parity_capture_close(pCapC);
    parity_capture_close(pCap);
    return parity_report_finish(pOut, rc);
}
