/*
 * op_softmax.c - softmax(x, dim): y_i = exp(x_i - m) / sum_j exp(x_j - m), m = max_j x_j,
 * over each row along `dim`.
 *
 * Reference: per row, m exactly, each exp(x_j - m) and the sum S at PARITY_REF_PREC bits
 * (mpfr_exp, mpfr_sum), then exp(x_i - m) / S. Non-finite rows follow torch: a NaN or +Inf
 * anywhere in the row, or a row that is all -Inf (fully masked), makes every element NaN;
 * other -Inf elements give exactly 0.
 *
 * Bound. Following the analysis of the shifted algorithm in Blanchard, Higham & Higham,
 * "Accurately computing the log-sum-exp and softmax functions", IMA J. Numer. Anal. 41(4),
 * 2021, Sec. 4, for a kernel computing in precision u (acc_dtype) with an exp accurate to
 * c_exp u (c_exp = 4: 2 ulps, covering vectorised exp approximations):
 *   d_i = fl(x_i - m) = (x_i - m)(1 + delta)   -> exp(d_i) has relative error |x_i - m| u
 *   e_i = fl(exp(d_i))                          -> relative error c_exp u more
 *   S   = sum of n positive terms, any order    -> gamma_{n-1}(u), plus each term's own
 *         error, which weighted by its share is w u + c_exp u with w = sum_j y_j |x_j - m|
 *   y_i = fl(e_i / S)                           -> u
 * Online (streaming) softmax rescales partial sums by exp(m_old - m_new) up to n times;
 * each rescale costs an exp and a multiply, (c_exp + 1) u. Altogether, to first order,
 *   |y^_i - y_i| <= y_i [ (|x_i - m| + w + 2 c_exp + 2) u + gamma_{(c_exp + 2) n}(u) ]
 *                  + 0.5 ulp_out(y_i) + n * (half the smallest subnormal of acc_dtype),
 * the last two terms being the output rounding and the absolute error of underflowing
 * exponentials. Second-order terms are covered by using gamma for the n-dependent part.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/rows.h"
#include "formats/alloc.h"

#define C_EXP 4.0

typedef struct {
    uint64_t nDim, nInner, nRow;
    /* Per row: the max, whether the row is NaN, sum of exp (MPFR), weighted shift w. */
    double *aMax;
    double *aW;
    unsigned char *aNanRow;
    mpfr_t *aSum;
    uint64_t nSumInit;
} softmax_params;

static void softmax_free(void *p)
{
    softmax_params *pP = p;
    uint64_t i;
    for (i = 0; i < pP->nSumInit; i++) mpfr_clear(pP->aSum[i]);
    free(pP->aSum);
    free(pP->aMax);
    free(pP->aW);
    free(pP->aNanRow);
    free(pP);
}

/* x value of element k (0..nDim-1) of row iRow. */
static double row_value(const softmax_params *pP, const double *x, uint64_t iRow, uint64_t k)
{
    uint64_t outer = iRow / pP->nInner, inner = iRow % pP->nInner;
    return x[(outer * pP->nDim + k) * pP->nInner + inner];
}

static int softmax_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                           char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    const parity_rows *pR = &pCall->geom.rows.rows;
    softmax_params *pP = parity_calloc(1, sizeof *pP);
    unsigned char aReduce[PARITY_MAX_RANK];
    int d;

    if (!pP) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pCall->pParams = pP;
    /* one 'dim', default -1 */
    if (parity_rows_check_same(pCall->pDef->zName, pX, pCall, zErr, nErr) != 0 ||
        parity_rows_parse_dim(pCall->pDef->zName, pX, aAttr, nAttr, "dim", 0, 0, -1, aReduce,
                              zErr, nErr) != 0)
        return -1;
    parity_rows_init(&pCall->geom.rows.rows, pX, aReduce);
    /* A row along dim d is nDim elements nInner apart (row_value). */
    pP->nDim = pR->n;
    pP->nInner = 1;
    for (d = pX->rank - 1; d >= 0 && !pR->aRed[d]; d--) pP->nInner *= pX->aDim[d];
    pP->nRow = pP->nDim ? pX->nElem / pP->nDim : 0;
    return 0;
}

/* The per-row max, sum of exponentials and weighted shift, from the values. */
static int softmax_load(parity_op_call *pCall, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    softmax_params *pP = pCall->pParams;
    uint64_t iRow, k;
    mpfr_t t, tw;
    mpfr_t *aTerm = NULL;
    mpfr_ptr *apTerm = NULL;

    pP->aMax = parity_calloc(pP->nRow + 1, sizeof(double));
    pP->aW = parity_calloc(pP->nRow + 1, sizeof(double));
    pP->aNanRow = parity_calloc(pP->nRow + 1, 1);
    pP->aSum = parity_calloc(pP->nRow + 1, sizeof(mpfr_t));
    aTerm = parity_calloc(pP->nDim + 1, sizeof(mpfr_t));
    apTerm = parity_calloc(pP->nDim + 1, sizeof(mpfr_ptr));
    if (!pP->aMax || !pP->aW || !pP->aNanRow || !pP->aSum || !aTerm || !apTerm) {
        free(aTerm);
        free(apTerm);
        snprintf(zErr, nErr, "out of memory");
        return -1;
    }
    for (k = 0; k < pP->nDim; k++) {
        mpfr_init2(aTerm[k], PARITY_REF_PREC);
        apTerm[k] = aTerm[k];
    }
    mpfr_inits2(PARITY_REF_PREC, t, tw, (mpfr_ptr)0);
    for (iRow = 0; iRow < pP->nRow; iRow++) {
        double m = -INFINITY;
        int bad = 0;
        mpfr_init2(pP->aSum[iRow], PARITY_REF_PREC);
        pP->nSumInit++;
        for (k = 0; k < pP->nDim; k++) {
            double v = row_value(pP, pX->aValue, iRow, k);
            if (v != v || v == INFINITY) bad = 1;
            if (v > m) m = v;
        }
        if (bad || m == -INFINITY) {
            /* NaN or +Inf in the row, or fully masked: torch gives NaN everywhere. */
            pP->aNanRow[iRow] = 1;
            continue;
        }
        pP->aMax[iRow] = m;
        for (k = 0; k < pP->nDim; k++) {
            mpfr_set_d(t, row_value(pP, pX->aValue, iRow, k), MPFR_RNDN);
            mpfr_sub_d(t, t, m, MPFR_RNDN);
            mpfr_exp(aTerm[k], t, MPFR_RNDN);
        }
        mpfr_sum(pP->aSum[iRow], apTerm, pP->nDim, MPFR_RNDN);
        /* w = sum_j y_j |x_j - m| (only to first order: binary64 is plenty). */
        {
            double w = 0.0, s = mpfr_get_d(pP->aSum[iRow], MPFR_RNDN);
            for (k = 0; k < pP->nDim; k++) {
                double xk = row_value(pP, pX->aValue, iRow, k);
                if (xk == -INFINITY) continue;
                w += mpfr_get_d(aTerm[k], MPFR_RNDN) / s * (m - xk);
            }
            pP->aW[iRow] = w;
        }
    }
    mpfr_clears(t, tw, (mpfr_ptr)0);
    for (k = 0; k < pP->nDim; k++) mpfr_clear(aTerm[k]);
    free(aTerm);
    free(apTerm);
    return 0;
}

static int softmax_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    const softmax_params *pP = pCall->pParams;
    double x = pCall->aIn[0].aValue[linear], u = parity_unit_roundoff(pCall->accDtype), y;
    uint64_t inner = linear % pP->nInner, outer = linear / (pP->nInner * pP->nDim);
    uint64_t iRow = outer * pP->nInner + inner;
    double n = (double)pP->nDim, m = pP->aMax[iRow];

    if (pP->aNanRow[iRow]) {
        mpfr_set_nan(ref);
        *pBound = 0.0;
        return 0;
    }
    if (x == -INFINITY) {
        mpfr_set_zero(ref, 1);
        *pBound = 0.0;
        return 0;
    }
    mpfr_set_d(ref, x, MPFR_RNDN);
    mpfr_sub_d(ref, ref, m, MPFR_RNDN);
    mpfr_exp(ref, ref, MPFR_RNDN);
    mpfr_div(ref, ref, pP->aSum[iRow], MPFR_RNDN);
    y = mpfr_get_d(ref, MPFR_RNDN);
    *pBound = y * ((m - x + pP->aW[iRow] + 2.0 * C_EXP + 2.0) * u +
                   parity_gamma((C_EXP + 2.0) * n, u)) +
              0.5 * parity_ulp_at(pCall->outDtype, y) +
              n * 0.5 * parity_ulp_at(pCall->accDtype, 0.0);
    return 0;
}

const parity_op_def parity_op_softmax = {
    .zName = "softmax",
    .zModel = "shifted softmax: y[(|x-m| + w + 2c+2) u + gamma_{(c+2)n}] + 0.5 ulp (Blanchard-Higham-Higham 2021)",
    .nInMin = 1, .nInMax = 1,
    .family = PARITY_FAMILY_ROWWISE,
    .xPrepare = softmax_prepare,
    .xLoad = softmax_load,
    .xElement = softmax_element,
    .xFreeParams = softmax_free,
};
