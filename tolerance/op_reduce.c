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
#include "tolerance/rows.h"
#include "tolerance/propagate.h"
#include "formats/alloc.h"

typedef enum { RED_SUM, RED_MEAN, RED_AMAX, RED_AMIN } reduce_kind;

typedef struct {
    const parity_op_def *pDef;
    reduce_kind kind;
} reduce_spec;

static const reduce_spec aSpec[] = {
    { &parity_op_sum, RED_SUM }, { &parity_op_mean, RED_MEAN },
    { &parity_op_amax, RED_AMAX }, { &parity_op_amin, RED_AMIN },
};

/* The rows reduced are the geometry (geom.rows); this is the rest. */
typedef struct {
    const reduce_spec *pSpec;
    int narrow;                    /* input wider than acc_dtype */
    double *aBuf;                  /* one row's values, made by reduce_load */
    double *aRadBuf;               /* and their radii (reduce_propagate), made there */
} reduce_params;

static void reduce_free(void *p)
{
    reduce_params *pP = p;
    free(pP->aBuf);
    free(pP->aRadBuf);
    free(pP);
}

static int reduce_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                          char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    const char *zOp = pCall->pDef->zName;
    parity_rows_geometry *pG = &pCall->geom.rows;
    reduce_params *pP;
    unsigned char aReduce[PARITY_MAX_RANK];
    size_t i;
    char zA[256];

    pP = parity_calloc(1, sizeof *pP);
    if (!pP) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pCall->pParams = pP;
    for (i = 0; i < sizeof aSpec / sizeof aSpec[0]; i++)
        if (aSpec[i].pDef == pCall->pDef) pP->pSpec = &aSpec[i];
    if (!pP->pSpec) { snprintf(zErr, nErr, "%s: not a reduction", zOp); return -1; }
    /* 'dim' an int or a list; absent or empty: every dim */
    if (parity_rows_parse_dim(zOp, pX, aAttr, nAttr, "dim", 1, 1, 0, aReduce, zErr, nErr) != 0 ||
        parity_rows_parse_keepdim(zOp, aAttr, nAttr, &pG->keepdim, zErr, nErr) != 0)
        return -1;
    parity_rows_init(&pG->rows, pX, aReduce);
    if (parity_rows_check_reduced(zOp, &pG->rows, pG->keepdim, pCall, zErr, nErr) != 0)
        return -1;
    if (pG->rows.n == 0 && (pP->pSpec->kind == RED_AMAX || pP->pSpec->kind == RED_AMIN)) {
        snprintf(zErr, nErr, "%s: reduction over an empty dim of input %s (torch raises)", zOp,
                 parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA));
        return -1;
    }
    pP->narrow = parity_unit_roundoff(pX->dtype) < parity_unit_roundoff(pCall->accDtype);
    return 0;
}

static int reduce_load(parity_op_call *pCall, char *zErr, size_t nErr)
{
    reduce_params *pP = pCall->pParams;
    uint64_t n = pCall->geom.rows.rows.n;
    pP->aBuf = parity_malloc((n ? n : 1) * sizeof(double));
    if (!pP->aBuf) { snprintf(zErr, nErr, "out of memory"); return -1; }
    return 0;
}

/* The sum's or mean's error in acc_dtype given sum |x| (the file comment's e_acc). */
static double acc_error(const parity_op_call *pCall, const reduce_params *pP, double absSum)
{
    parity_dtype acc = pCall->accDtype;
    double u = parity_unit_roundoff(acc), n = (double)pCall->geom.rows.rows.n, eAcc;
    if (pP->pSpec->kind == RED_MEAN)
        eAcc = parity_gamma(n + 1.0 + (pP->narrow ? 1.0 : 0.0), u) * (absSum / n) +
               0.5 * parity_ulp_at(acc, 0.0);
    else
        eAcc = n <= 1.0 && !pP->narrow ? 0.0
             : parity_gamma(n - 1.0 + (pP->narrow ? 1.0 : 0.0), u) * absSum;
    if (pP->narrow) eAcc += n * 0.5 * parity_ulp_at(acc, 0.0);
    return eAcc;
}

static int reduce_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    reduce_params *pP = pCall->pParams;
    const parity_rows *pR = &pCall->geom.rows.rows;
    parity_dtype acc = pCall->accDtype, out = pCall->outDtype;
    double u = parity_unit_roundoff(acc), n = (double)pR->n, absSum = 0.0, r, eAcc;
    uint64_t k;

    parity_rows_gather(pR, pCall->aIn[0].aValue, linear, pP->aBuf);
    if (pP->pSpec->kind == RED_AMAX || pP->pSpec->kind == RED_AMIN) {
        double m = pP->aBuf[0];
        for (k = 1; k < pR->n && m == m; k++) {
            double v = pP->aBuf[k];
            if (v != v) m = v;
            else if (pP->pSpec->kind == RED_AMAX ? v > m : v < m) m = v;
        }
        mpfr_set_d(ref, m, MPFR_RNDN);
        *pBound = (m != m || parity_round_double_to_dtype(m, out) == m)
                      ? 0.0 : 0.5 * parity_ulp_at(out, fabs(m));
        return 0;
    }
    if (parity_exact_sum(ref, pP->aBuf, 1, pR->n, &absSum) != 0) return -1;
    parity_note_overflow(pCall, absSum);
    if (pP->pSpec->kind == RED_SUM && pR->n == 0) {
        *pBound = 0.0;   /* the empty sum is exactly 0 */
        return 0;
    }
    if (pP->pSpec->kind == RED_MEAN) {
        if (pR->n == 0) {
            mpfr_set_nan(ref);
            *pBound = 0.0;
            return 0;
        }
        mpfr_div_ui(ref, ref, (unsigned long)pR->n, MPFR_RNDN);
    }
    eAcc = acc_error(pCall, pP, absSum);
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

/* Propagation (ops.h, xPropagate). With each x_k' within r_k of x_k, the sum moves by at
 * most sum r_k (the mean by that over n), amax and amin by max r_k (1-Lipschitz); the
 * bound grows with sum |x| (at most sum (|x_k| + r_k) on the box) and |result|. */
static int reduce_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                            mpfr_t ref, double *pRadius)
{
    reduce_params *pP = pCall->pParams;
    const parity_rows *pR = &pCall->geom.rows.rows;
    double dev = 0.0, absSum = 0.0, n = (double)pR->n, rMax, eAcc;
    uint64_t k;
    int moved = 0, special = 0;

    if (reduce_element(pCall, linear, ref, pRadius) != 0) return -1;   /* fills aBuf */
    if (!pP->aRadBuf && !(pP->aRadBuf = parity_malloc((pR->n ? pR->n : 1) * sizeof(double))))
        return -1;
    parity_rows_gather(pR, aRad[0], linear, pP->aRadBuf);
    for (k = 0; k < pR->n; k++) {
        double x = pP->aBuf[k], r = pP->aRadBuf[k];
        if (r != 0.0) moved = 1;
        if (!isfinite(x) || !(r < INFINITY)) special = 1;
        if (pP->pSpec->kind == RED_AMAX || pP->pSpec->kind == RED_AMIN) {
            if (r > dev) dev = r;
        } else {
            dev += r;
            absSum += fabs(x) + r;
        }
    }
    if (!moved) return 0;
    if (special || !mpfr_number_p(ref)) return parity_propagate_vacuous(pCall, pRadius);
    rMax = fabs(mpfr_get_d(ref, MPFR_RNDA));
    if (pP->pSpec->kind == RED_AMAX || pP->pSpec->kind == RED_AMIN) {
        rMax = parity_radius_up(rMax + dev, 1.0);
        *pRadius = parity_radius_up(dev + 0.5 * parity_ulp_at(pCall->outDtype, rMax), 2.0);
        return 0;
    }
    dev = parity_radius_up(pP->pSpec->kind == RED_MEAN ? dev / n : dev, 2.0 * n + 2.0);
    absSum = parity_radius_up(absSum, 2.0 * n);
    if (!(absSum < parity_dtype_max_finite(pCall->accDtype)))
        return parity_propagate_vacuous(pCall, pRadius);   /* an order may overflow */
    eAcc = acc_error(pCall, pP, absSum);
    rMax = parity_radius_up(rMax + dev + eAcc, 2.0);
    *pRadius = parity_radius_up(dev + eAcc + 0.5 * parity_ulp_at(pCall->outDtype, rMax), 4.0);
    return 0;
}

#define REDUCE_OP(sym, name, model, kernel) \
    const parity_op_def sym = { .zName = name, .zModel = model, .nInMin = 1, .nInMax = 1, \
                                .zKernel = kernel, \
                                .family = PARITY_FAMILY_REDUCE, .xPrepare = reduce_prepare, \
                                .xLoad = reduce_load, .xElement = reduce_element, \
                                .xFreeParams = reduce_free, .xPropagate = reduce_propagate };

REDUCE_OP(parity_op_sum, "sum",
          "any summation order: gamma_{n-1}(u_acc) sum|x| + 0.5 ulp (Higham 2002, eq. 4.3)",
          "sum/mean")
REDUCE_OP(parity_op_mean, "mean",
          "sum then divide: gamma_{n+1}(u_acc) sum|x|/n + 0.5 ulp (Higham 2002, eq. 4.3, Lemma 3.3)",
          "sum/mean")
REDUCE_OP(parity_op_amax, "amax",
          "exact, NaN propagates; only the rounding to the output dtype (0.5 ulp)", "max/min")
REDUCE_OP(parity_op_amin, "amin",
          "exact, NaN propagates; only the rounding to the output dtype (0.5 ulp)", "max/min")
