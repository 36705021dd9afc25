/*
 * op_log_softmax.c - the shifted log-sum-exp family over rows along `dim`:
 *   logsumexp(x, dim, keepdim): lse = m + log(s),       s = sum_j exp(x_j - m), m = max_j x_j
 *   log_softmax(x, dim):        y_i = x_i - m - log(s)
 * (both share the per-row work below; rows.h iterates the rows). logsumexp takes `dim` as
 * an int or a list (absent or empty: every dim) and `keepdim`; log_softmax one int `dim`
 * (default -1).
 *
 * Reference: per row, m exactly, each exp(x_j - m) at PARITY_REF_PREC bits, their sum S
 * correctly rounded (mpfr_sum, S - 1 without the maximum's exact term) and
 * L = log1p(S - 1) at PARITY_REF_PREC bits; then m + L, or
 * x_i - m - L, at PARITY_REF_PREC bits.
 * Special values (torch): a NaN in the row makes everything NaN. log_softmax: a +Inf in the
 * row, or a row that is all -Inf (fully masked), gives NaN everywhere (as softmax); other
 * -Inf elements give -Inf. logsumexp: +Inf in the row (no NaN) gives +Inf; a row that is
 * all -Inf, or empty, gives -Inf (torch replaces an infinite max by 0 and takes log(0)).
 *
 * Bound. After the analysis of the shifted algorithms in Blanchard, Higham & Higham,
 * "Accurately computing the log-sum-exp and softmax functions", IMA J. Numer. Anal. 41(4),
 * 2021, Sec. 4 (their bound for the shifted log-sum-exp is, to first order,
 * |lse^ - lse| <= u |lse| + (kappa-like shift term + n + c) u in absolute terms); we re-derive
 * it for any summation order and for online kernels. u = unit roundoff of acc_dtype, c = 4
 * (exp and log accurate to c u = 2 ulps, as C_EXP in op_softmax.c), p_j = exp(x_j - m)/s,
 * w = sum_j p_j |x_j - m|:
 *   d_j = fl(x_j - m) = (x_j - m)(1 + delta)  -> exp(d_j) relative error |x_j - m| u
 *   e_j = fl(exp(d_j))                         -> c u more
 *   s^  = sum of n positive terms, any order   -> s^ = s (1 + eta), with
 *         eta <= (w + c) u + gamma_{(c+2) n}(u)  (the terms' own errors weighted by p_j;
 *         gamma_{n-1} for the sum, widened to gamma_{(c+2)n} for online kernels that
 *         rescale partial sums up to n times, each an exp and a multiply, as in softmax)
 *         + n * (half the smallest subnormal of acc_dtype) for underflowing terms (s >= 1)
 *   L^  = fl(log s^): log(s(1 + eta)) = L + log(1 + eta), |log(1 + eta)| <= eta/(1 - eta),
 *         and the log's own error c u L (L = log s in [0, log n]):
 *         E_L = eta / (1 - eta) + c u L
 *   logsumexp: fl(m + L^):   |lse^ - lse| <= (1 + u) E_L + u |lse| + 0.5 ulp_out(lse)
 *   log_softmax: fl(d_i - L^) or fl(x_i - fl(m + L^)): the first rounding costs
 *         u |x_i - m| or u |m + L|, the subtraction u |y_i|:
 *         |y^_i - y_i| <= (1 + u) (u max(|x_i - m|, |m + L|) + E_L) + u |y_i|
 *                         + 0.5 ulp_out(y_i).
 * The output rounding is counted separately from the last acc_dtype rounding so that
 * narrower output dtypes (fp16, bf16) are covered.
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

typedef enum { ROW_OK, ROW_NAN, ROW_POSINF, ROW_NEGINF } row_kind;

typedef struct {
    parity_rows rows;
    int isLse;                     /* logsumexp (else log_softmax) */
    unsigned char *aKind;          /* row_kind per row */
    double *aMax, *aW, *aL;        /* m, w, L (binary64) per row */
    mpfr_t *aLRef;                 /* L = log(S) per row at PARITY_REF_PREC */
    uint64_t nInit;
} lse_params;

static void lse_free(void *p)
{
    lse_params *pP = p;
    uint64_t i;
    for (i = 0; i < pP->nInit; i++) mpfr_clear(pP->aLRef[i]);
    free(pP->aLRef);
    free(pP->aKind);
    free(pP->aMax);
    free(pP->aW);
    free(pP->aL);
    free(pP);
}

/* The per-row work: kind, m, w, L. aBuf (n values) and aTerm (n MPFR values) are scratch. */
static void lse_row(lse_params *pP, const double *x, uint64_t iRow, double *aBuf,
                    mpfr_t *aTerm, mpfr_ptr *apTerm)
{
    uint64_t k, n = pP->rows.n;
    double m = -INFINITY, w = 0.0, s;
    int hasNan = 0, hasPosInf = 0;
    mpfr_t t;

    parity_rows_gather(&pP->rows, x, iRow, aBuf);
    for (k = 0; k < n; k++) {
        double v = aBuf[k];
        if (v != v) hasNan = 1;
        else if (v == INFINITY) hasPosInf = 1;
        else if (v > m) m = v;
    }
    if (hasNan) { pP->aKind[iRow] = ROW_NAN; return; }
    if (hasPosInf) { pP->aKind[iRow] = ROW_POSINF; return; }
    if (m == -INFINITY) { pP->aKind[iRow] = ROW_NEGINF; return; }
    pP->aKind[iRow] = ROW_OK;
    pP->aMax[iRow] = m;
    mpfr_init2(t, PARITY_REF_PREC);
    for (k = 0; k < n; k++) {
        mpfr_set_d(t, aBuf[k], MPFR_RNDN);
        mpfr_sub_d(t, t, m, MPFR_RNDN);      /* exact for x_k = -Inf too: -Inf */
        mpfr_exp(aTerm[k], t, MPFR_RNDN);
        apTerm[k] = aTerm[k];
    }
    /* L = log1p(S - 1) with S - 1 summed without the maximum's exact 1: when the maximum
     * dominates, S = 1 + delta with tiny delta, and rounding S itself would lose delta's
     * low bits (an absolute 2^-128 in L, a large relative error in log_softmax at the
     * maximum and in logsumexp near 0). */
    for (k = 0; k < n; k++)
        if (aBuf[k] == m) {
            mpfr_set_zero(aTerm[k], 1);
            break;
        }
    mpfr_sum(pP->aLRef[iRow], apTerm, (unsigned long)n, MPFR_RNDN);
    if (k < n) mpfr_set_ui(aTerm[k], 1, MPFR_RNDN);
    s = 1.0 + mpfr_get_d(pP->aLRef[iRow], MPFR_RNDN);
    for (k = 0; k < n; k++) {
        if (aBuf[k] == -INFINITY) continue;
        w += mpfr_get_d(aTerm[k], MPFR_RNDN) / s * (m - aBuf[k]);
    }
    pP->aW[iRow] = w;
    mpfr_log1p(pP->aLRef[iRow], pP->aLRef[iRow], MPFR_RNDN);
    pP->aL[iRow] = mpfr_get_d(pP->aLRef[iRow], MPFR_RNDN);
    mpfr_clear(t);
}

static int lse_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                       char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    const char *zOp = pCall->pDef->zName;
    parity_rows_geometry *pG = &pCall->geom.rows;
    lse_params *pP = parity_calloc(1, sizeof *pP);
    unsigned char aReduce[PARITY_MAX_RANK];

    if (!pP) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pCall->pParams = pP;
    pP->isLse = pCall->pDef == &parity_op_logsumexp;
    if (parity_rows_parse_dim(zOp, pX, aAttr, nAttr, "dim", pP->isLse, pP->isLse, -1, aReduce,
                              zErr, nErr) != 0)
        return -1;
    parity_rows_init(&pG->rows, pX, aReduce);
    if (pP->isLse) {
        if (parity_rows_parse_keepdim(zOp, aAttr, nAttr, &pG->keepdim, zErr, nErr) != 0 ||
            parity_rows_check_reduced(zOp, &pG->rows, pG->keepdim, pCall, zErr, nErr) != 0)
            return -1;
    } else if (parity_rows_check_same(zOp, pX, pCall, zErr, nErr) != 0) {
        return -1;
    }
    pP->rows = pG->rows;
    return 0;
}

/* Every row's maximum, kind, log-sum and weighted shift, from the values. */
static int lse_load(parity_op_call *pCall, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    lse_params *pP = pCall->pParams;
    uint64_t iRow, k, n = pP->rows.n;
    double *aBuf;
    mpfr_t *aTerm;
    mpfr_ptr *apTerm;

    pP->aKind = parity_calloc(pP->rows.nRow + 1, 1);
    pP->aMax = parity_calloc(pP->rows.nRow + 1, sizeof(double));
    pP->aW = parity_calloc(pP->rows.nRow + 1, sizeof(double));
    pP->aL = parity_calloc(pP->rows.nRow + 1, sizeof(double));
    pP->aLRef = parity_calloc(pP->rows.nRow + 1, sizeof(mpfr_t));
    aBuf = parity_calloc(n + 1, sizeof(double));
    aTerm = parity_calloc(n + 1, sizeof(mpfr_t));
    apTerm = parity_calloc(n + 1, sizeof(mpfr_ptr));
    if (!pP->aKind || !pP->aMax || !pP->aW || !pP->aL || !pP->aLRef || !aBuf || !aTerm ||
        !apTerm) {
        free(aBuf);
        free(aTerm);
        free(apTerm);
        snprintf(zErr, nErr, "out of memory");
        return -1;
    }
    for (k = 0; k < n; k++) mpfr_init2(aTerm[k], PARITY_REF_PREC);
    for (iRow = 0; iRow < pP->rows.nRow; iRow++) {
        mpfr_init2(pP->aLRef[iRow], PARITY_REF_PREC);
        pP->nInit++;
        lse_row(pP, pX->aValue, iRow, aBuf, aTerm, apTerm);
    }
    for (k = 0; k < n; k++) mpfr_clear(aTerm[k]);
    free(aTerm);
    free(apTerm);
    free(aBuf);
    return 0;
}

/* E_L: the absolute error of log(s^) (header comment). */
static double lse_err_log(const lse_params *pP, const parity_op_call *pCall, uint64_t iRow)
{
    double u = parity_unit_roundoff(pCall->accDtype), n = (double)pP->rows.n;
    double eta = (pP->aW[iRow] + C_EXP) * u + parity_gamma((C_EXP + 2.0) * n, u) +
                 n * 0.5 * parity_ulp_at(pCall->accDtype, 0.0);
    if (!(eta < 1.0)) return INFINITY;
    return eta / (1.0 - eta) + C_EXP * u * pP->aL[iRow];
}

static int lse_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    const lse_params *pP = pCall->pParams;
    double u = parity_unit_roundoff(pCall->accDtype), y;
    uint64_t iRow = linear, k = 0;
    double x = 0.0, m;

    if (!pP->isLse) {
        parity_rows_locate(&pP->rows, linear, &iRow, &k);
        x = pCall->aIn[0].aValue[linear];
    }
    *pBound = 0.0;
    switch (pP->aKind[iRow]) {
    case ROW_NAN:
        mpfr_set_nan(ref);
        return 0;
    case ROW_POSINF:
        if (pP->isLse) mpfr_set_inf(ref, 1);
        else mpfr_set_nan(ref);
        return 0;
    case ROW_NEGINF:
        if (pP->isLse) mpfr_set_inf(ref, -1);
        else mpfr_set_nan(ref);
        return 0;
    default:
        break;
    }
    m = pP->aMax[iRow];
    if (pP->isLse) {
        mpfr_add_d(ref, pP->aLRef[iRow], m, MPFR_RNDN);
        y = mpfr_get_d(ref, MPFR_RNDN);
        *pBound = (1.0 + u) * lse_err_log(pP, pCall, iRow) + u * fabs(y) +
                  0.5 * parity_ulp_at(pCall->outDtype, y);
        return 0;
    }
    if (x == -INFINITY) {
        mpfr_set_inf(ref, -1);
        return 0;
    }
    mpfr_set_d(ref, x, MPFR_RNDN);
    mpfr_sub_d(ref, ref, m, MPFR_RNDN);
    mpfr_sub(ref, ref, pP->aLRef[iRow], MPFR_RNDN);
    y = mpfr_get_d(ref, MPFR_RNDN);
    *pBound = (1.0 + u) * (u * fmax(m - x, fabs(m + pP->aL[iRow])) +
                           lse_err_log(pP, pCall, iRow)) +
              u * fabs(y) + 0.5 * parity_ulp_at(pCall->outDtype, y);
    (void)k;
    return 0;
}

const parity_op_def parity_op_log_softmax = {
    .zName = "log_softmax",
    .family = PARITY_FAMILY_ROWWISE,
    .xLoad = lse_load,
    .zModel = "shifted log_softmax: (1+u)(u max(|x-m|,|m+L|) + E_L) + u|y| + 0.5 ulp, E_L = eta/(1-eta) + c u L, eta = (w+c)u + gamma_{(c+2)n} (Blanchard-Higham-Higham 2021)",
    .nInMin = 1, .nInMax = 1,
    .xPrepare = lse_prepare, .xElement = lse_element, .xFreeParams = lse_free,
};

const parity_op_def parity_op_logsumexp = {
    .zName = "logsumexp",
    .family = PARITY_FAMILY_REDUCE,
    .flags = PARITY_OPF_NAMES_DIM,
    .xLoad = lse_load,
    .zModel = "shifted log-sum-exp: (1+u) E_L + u|lse| + 0.5 ulp, E_L = eta/(1-eta) + c u L, eta = (w+c)u + gamma_{(c+2)n} (Blanchard-Higham-Higham 2021)",
    .nInMin = 1, .nInMax = 1,
    .xPrepare = lse_prepare, .xElement = lse_element, .xFreeParams = lse_free,
};
