/*
 * op_reduce.c - reductions over `dim` (an int or a list of ints, negative allowed; absent
 * or an empty list = every dim) with `keepdim` (0/1, default 0): sum, mean, amax, amin.
 * The output shape is the input's with the reduced dims removed (keepdim 0) or set to 1.
 *
 * Reference: the n = prod(reduced dims) values of each output element are gathered and
 * summed exactly (parity_exact_sum: one rounding to PARITY_REF_PREC bits, mpref.h); mean
 * divides that by n at 128 bits. amax/amin are exact. NaN follows torch: a NaN anywhere
 * in the reduced values makes sum, mean, amax and amin NaN; +Inf and -Inf together make
 * sum and mean NaN. Empty reductions (a reduced dim of size 0): sum = 0, mean = NaN (0/0),
 * amax/amin are an error (torch raises "Expected reduction dim to have non-zero size").
 *
 * Bound, sum. Any summation order (sequential, pairwise, blocked, tree reductions across
 * threads: every summation tree) of n terms in precision u satisfies
 *     |fl(sum x_i) - sum x_i| <= gamma_{n-1}(u) * sum_i |x_i|,   gamma_k = k u / (1 - k u)
 * (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed. 2002, eq. (4.3) with
 * Lemma 3.1: each term passes through at most n - 1 additions, each a factor (1 + delta)).
 * Additions whose result underflows are exact (IEEE gradual underflow), so no underflow
 * slack is needed. When the input is wider than acc_dtype, each term is first rounded to
 * it: one more factor, gamma_n, plus n half-subnormals of acc_dtype for terms that
 * underflow there. The result is then rounded to the output dtype:
 *     e_acc = gamma_{n-1}(u_acc) sum|x|,   bound = e_acc + 0.5 ulp_out(|S| + e_acc).
 * Bound, mean = fl(fl(S) / n). With s^ = S + E, |E| <= gamma_{n-1} A (A = sum|x|):
 *     s^/n (1 + d) - S/n = (E/n)(1 + d) + (S/n) d,  |d| <= u,
 *     |.| <= (A/n)(gamma_{n-1}(1 + u) + u) <= gamma_n(u) A/n   (Higham 2002, Lemma 3.3).
 * Kernels that multiply by a rounded 1/n make one more rounding: gamma_{n+1}(u) A/n; that
 * is the bound used, plus half the smallest subnormal of acc_dtype for an underflowing
 * quotient and the output rounding 0.5 ulp_out(|S/n| + e_acc).
 * Bound, amax/amin: exact in any precision (and monotone under rounding of the inputs):
 * 0, or half an ulp of the output when the result is not representable there.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"

typedef enum { RED_SUM, RED_MEAN, RED_AMAX, RED_AMIN } reduce_kind;

typedef struct {
    const char *zName;
    reduce_kind kind;
} reduce_spec;

static const reduce_spec aSpec[] = {
    { "sum", RED_SUM }, { "mean", RED_MEAN }, { "amax", RED_AMAX }, { "amin", RED_AMIN },
};

typedef struct {
    const reduce_spec *pSpec;
    int nKept, nRed;
    uint64_t aKeptDim[PARITY_MAX_RANK], aKeptStride[PARITY_MAX_RANK];
    uint64_t aRedDim[PARITY_MAX_RANK], aRedStride[PARITY_MAX_RANK];
    uint64_t n;                    /* values per output element */
    int narrow;                    /* input wider than acc_dtype */
    double *aBuf;                  /* gathered values, n of them */
} reduce_params;

static void reduce_free(void *p)
{
    reduce_params *pP = p;
    free(pP->aBuf);
    free(pP);
}

static int reduce_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                          char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    const char *zOp = pCall->pDef->zName;
    reduce_params *pP;
    int64_t aDimArg[PARITY_MAX_RANK], keepdim = 0;
    size_t nDimArg = 0, i;
    int aReduce[PARITY_MAX_RANK] = { 0 }, rc, d, nWant = 0;
    uint64_t aWant[PARITY_MAX_RANK], aStride[PARITY_MAX_RANK], stride = 1;
    char zA[256], zB[256], zC[256];

    pP = calloc(1, sizeof *pP);
    if (!pP) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pCall->pParams = pP;
    for (i = 0; i < sizeof aSpec / sizeof aSpec[0]; i++)
        if (strcmp(aSpec[i].zName, zOp) == 0) pP->pSpec = &aSpec[i];
    if (!pP->pSpec) { snprintf(zErr, nErr, "%s: not a reduction", zOp); return -1; }

    rc = parity_param_ints(aAttr, nAttr, "dim", aDimArg, PARITY_MAX_RANK, &nDimArg, zErr,
                           nErr);
    if (rc < 0) return -1;
    if (parity_param_int(aAttr, nAttr, "keepdim", &keepdim, zErr, nErr) < 0) return -1;
    if (keepdim != 0 && keepdim != 1) {
        snprintf(zErr, nErr, "%s: keepdim must be 0 or 1, got %lld", zOp, (long long)keepdim);
        return -1;
    }
    if (rc == 0 || nDimArg == 0) {
        for (d = 0; d < pX->rank; d++) aReduce[d] = 1;
    } else {
        for (i = 0; i < nDimArg; i++) {
            int iDim = parity_wrap_dim(aDimArg[i], pX->rank);
            if (iDim < 0) {
                snprintf(zErr, nErr, "%s: dim %lld out of range for input %s (rank %d)", zOp,
                         (long long)aDimArg[i], parity_shape_str(pX->rank, pX->aDim, zA,
                         sizeof zA), pX->rank);
                return -1;
            }
            if (pX->rank == 0) continue;   /* dim 0 / -1 of a scalar: nothing to reduce */
            if (aReduce[iDim]) {
                snprintf(zErr, nErr, "%s: dim %d appears more than once in 'dim'", zOp, iDim);
                return -1;
            }
            aReduce[iDim] = 1;
        }
    }

    for (d = pX->rank - 1; d >= 0; d--) {
        aStride[d] = stride;
        stride *= pX->aDim[d];
    }
    pP->n = 1;
    for (d = 0; d < pX->rank; d++) {
        if (aReduce[d]) {
            pP->aRedDim[pP->nRed] = pX->aDim[d];
            pP->aRedStride[pP->nRed++] = aStride[d];
            pP->n *= pX->aDim[d];
            if (keepdim) aWant[nWant++] = 1;
        } else {
            pP->aKeptDim[pP->nKept] = pX->aDim[d];
            pP->aKeptStride[pP->nKept++] = aStride[d];
            aWant[nWant++] = pX->aDim[d];
        }
    }
    if (!parity_same_shape(nWant, aWant, pCall->outRank, pCall->aOutDim)) {
        snprintf(zErr, nErr, "%s: input %s reduced (keepdim %d) gives shape %s, output has %s",
                 zOp, parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA), (int)keepdim,
                 parity_shape_str(nWant, aWant, zB, sizeof zB),
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zC, sizeof zC));
        return -1;
    }
    if (pP->n == 0 && (pP->pSpec->kind == RED_AMAX || pP->pSpec->kind == RED_AMIN)) {
        snprintf(zErr, nErr, "%s: reduction over an empty dim of input %s (torch raises)", zOp,
                 parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA));
        return -1;
    }
    pP->narrow = parity_unit_roundoff(pX->dtype) < parity_unit_roundoff(pCall->accDtype);
    pP->aBuf = malloc((pP->n ? pP->n : 1) * sizeof(double));
    if (!pP->aBuf) { snprintf(zErr, nErr, "out of memory"); return -1; }
    return 0;
}

/* Copies the values reduced into output element `linear` into pP->aBuf. */
static void gather(reduce_params *pP, const double *x, uint64_t linear)
{
    uint64_t base = 0, aIdx[PARITY_MAX_RANK] = { 0 }, k, off;
    int d;

    /* With keepdim the output's extra dims have size 1: the linear index over the kept
     * dims is the same either way. */
    for (d = pP->nKept - 1; d >= 0; d--) {
        base += (linear % pP->aKeptDim[d]) * pP->aKeptStride[d];
        linear /= pP->aKeptDim[d];
    }
    off = base;
    for (k = 0; k < pP->n; k++) {
        pP->aBuf[k] = x[off];
        for (d = pP->nRed - 1; d >= 0; d--) {   /* odometer over the reduced dims */
            off += pP->aRedStride[d];
            if (++aIdx[d] < pP->aRedDim[d]) break;
            off -= aIdx[d] * pP->aRedStride[d];
            aIdx[d] = 0;
        }
    }
}

static int reduce_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    reduce_params *pP = pCall->pParams;
    parity_dtype acc = pCall->accDtype, out = pCall->outDtype;
    double u = parity_unit_roundoff(acc), n = (double)pP->n, absSum = 0.0, r, eAcc;
    uint64_t k;

    gather(pP, pCall->aIn[0].aValue, linear);
    if (pP->pSpec->kind == RED_AMAX || pP->pSpec->kind == RED_AMIN) {
        double m = pP->aBuf[0];
        for (k = 1; k < pP->n && m == m; k++) {
            double v = pP->aBuf[k];
            if (v != v) m = v;
            else if (pP->pSpec->kind == RED_AMAX ? v > m : v < m) m = v;
        }
        mpfr_set_d(ref, m, MPFR_RNDN);
        *pBound = (m != m || parity_round_double_to_dtype(m, out) == m)
                      ? 0.0 : 0.5 * parity_ulp_at(out, fabs(m));
        return 0;
    }
    if (parity_exact_sum(ref, pP->aBuf, 1, pP->n, &absSum) != 0) return -1;
    parity_note_overflow(pCall, absSum);
    if (pP->pSpec->kind == RED_SUM && pP->n == 0) {
        *pBound = 0.0;   /* the empty sum is exactly 0 */
        return 0;
    }
    if (pP->pSpec->kind == RED_MEAN) {
        if (pP->n == 0) {
            mpfr_set_nan(ref);
            *pBound = 0.0;
            return 0;
        }
        mpfr_div_ui(ref, ref, (unsigned long)pP->n, MPFR_RNDN);
        eAcc = parity_gamma(n + 1.0 + (pP->narrow ? 1.0 : 0.0), u) * (absSum / n) +
               0.5 * parity_ulp_at(acc, 0.0);
    } else {
        eAcc = n <= 1.0 && !pP->narrow ? 0.0
             : parity_gamma(n - 1.0 + (pP->narrow ? 1.0 : 0.0), u) * absSum;
    }
    if (pP->narrow) eAcc += n * 0.5 * parity_ulp_at(acc, 0.0);
    r = fabs(mpfr_get_d(ref, MPFR_RNDN));
    if (!isfinite(r)) {
        *pBound = 0.0;   /* judged by value alone */
        return 0;
    }
    *pBound = eAcc + 0.5 * parity_ulp_at(out, r + eAcc);
    if (!pP->narrow && n > 1.0) {
        /* Higham & Mary 2019 for the sum (and the mean's sum): lambda sqrt(n) u scale. */
        int isMean = pP->pSpec->kind == RED_MEAN;
        double nTerm = isMean ? n + 1.0 : n - 1.0;
        double gProb = parity_gamma_prob(nTerm, u, pCall->lambda) * (isMean ? absSum / n : absSum);
        double gDet = eAcc;
        if (gProb < gDet) pCall->probBound = gProb + 0.5 * parity_ulp_at(out, r + eAcc);
    }
    return 0;
}

const parity_op_def parity_op_sum = {
    "sum", "any summation order: gamma_{n-1}(u_acc) sum|x| + 0.5 ulp (Higham 2002, eq. 4.3)",
    1, 1, reduce_prepare, reduce_element, reduce_free, NULL, NULL, 0
};
const parity_op_def parity_op_mean = {
    "mean", "sum then divide: gamma_{n+1}(u_acc) sum|x|/n + 0.5 ulp (Higham 2002, eq. 4.3, Lemma 3.3)",
    1, 1, reduce_prepare, reduce_element, reduce_free, NULL, NULL, 0
};
const parity_op_def parity_op_amax = {
    "amax", "exact, NaN propagates; only the rounding to the output dtype (0.5 ulp)",
    1, 1, reduce_prepare, reduce_element, reduce_free, NULL, NULL, 0
};
const parity_op_def parity_op_amin = {
    "amin", "exact, NaN propagates; only the rounding to the output dtype (0.5 ulp)",
    1, 1, reduce_prepare, reduce_element, reduce_free, NULL, NULL, 0
};
