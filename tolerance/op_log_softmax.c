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
 *
 * The load works in binary64 (m, w, s - 1 compensated, L = log1p(s - 1)): the bound reads
 * those figures on both paths, the fast path (lse_fast) the value too. The MPFR L waits for
 * the first element of its row that the fast path leaves open (lse_row_ref).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/propagate.h"
#include "tolerance/rows.h"
#include "formats/alloc.h"

#define C_EXP 4.0

typedef enum { ROW_OK, ROW_NAN, ROW_POSINF, ROW_NEGINF } row_kind;

typedef struct {
    parity_rows rows;
    int isLse;                     /* logsumexp (else log_softmax) */
    unsigned char *aKind;          /* row_kind per row */
    unsigned char *aFastOk;        /* per row: lse_fast's error statement holds */
    double *aMax, *aW, *aL;        /* m, w, L (binary64) per row */
    double gammaN;                 /* gamma_{(c+2) n}(u_acc), the same for every row */
    mpfr_t *aLRef;                 /* L = log(S) per row at PARITY_REF_PREC, once made */
    unsigned char *aLMade;         /* per row: aLRef made (and to be cleared) */
    double *aBuf;                  /* scratch of lse_row_ref: a row's values */
    mpfr_t *aTerm;                 /* and its terms, initialised lazily */
    mpfr_ptr *apTerm;
    /* propagation (lse_propagate): per row, the largest radius of its elements (+Inf when
     * one is not finite or its value is not while it moves), made when first asked */
    double *aRadMax;
    unsigned char *aRadMade;
    double *aRadBuf, *aRadValBuf;  /* a row's radii and values (scratch) */
} lse_params;

static void lse_free(void *p)
{
    lse_params *pP = p;
    uint64_t i;
    for (i = 0; pP->aLMade && i < pP->rows.nRow; i++)
        if (pP->aLMade[i]) mpfr_clear(pP->aLRef[i]);
    for (i = 0; pP->aTerm && i < pP->rows.n; i++) mpfr_clear(pP->aTerm[i]);
    free(pP->aTerm);
    free(pP->apTerm);
    free(pP->aBuf);
    free(pP->aLRef);
    free(pP->aLMade);
    free(pP->aKind);
    free(pP->aFastOk);
    free(pP->aRadMax);
    free(pP->aRadMade);
    free(pP->aRadBuf);
    free(pP->aRadValBuf);
    free(pP->aMax);
    free(pP->aW);
    free(pP->aL);
    free(pP);
}

/* The per-row work in binary64: kind, m, w, L, and whether lse_fast may judge the row. The
 * sum leaves out the maximum's exact term 1 (as lse_row_ref does): s1 = s - 1, summed
 * compensated (rows.h), L = log1p(s1). aBuf (n values) is scratch. */
static void lse_row(lse_params *pP, const double *x, uint64_t iRow, double *aBuf)
{
    uint64_t k, n = pP->rows.n, kMax = n;
    double m = -INFINITY, w = 0.0, s1;
    parity_comp_sum acc = { 0.0, 0.0 };
    int hasNan = 0, hasPosInf = 0, allOthersMasked = 1;

    parity_rows_gather(&pP->rows, x, iRow, aBuf);
    for (k = 0; k < n; k++) {
        double v = aBuf[k];
        if (v != v) hasNan = 1;
        else if (v == INFINITY) hasPosInf = 1;
        else if (v > m) { m = v; kMax = k; }
    }
    if (hasNan) { pP->aKind[iRow] = ROW_NAN; return; }
    if (hasPosInf) { pP->aKind[iRow] = ROW_POSINF; return; }
    if (m == -INFINITY) { pP->aKind[iRow] = ROW_NEGINF; return; }
    pP->aKind[iRow] = ROW_OK;
    pP->aMax[iRow] = m;
    for (k = 0; k < n; k++) {
        double e;
        if (k == kMax || aBuf[k] == -INFINITY) continue;
        allOthersMasked = 0;
        e = exp(aBuf[k] - m);
        parity_comp_add(&acc, e);
        w += e * (m - aBuf[k]);
    }
    s1 = acc.s + acc.c;
    pP->aW[iRow] = w / (1.0 + s1);
    pP->aL[iRow] = log1p(s1);
    /* Terms below 2^-1022 round on binary64's subnormal grid or vanish: n of them (n below
     * 2^40) are under 2^-982 absolute, 2^-82 of an s1 of at least 2^-900. A row with no
     * other unmasked element has s1 = 0 exactly (L = 0), as MPFR's. */
    pP->aFastOk[iRow] = allOthersMasked || s1 >= 0x1p-900;
}

/* Row iRow's L = log1p(S - 1) at PARITY_REF_PREC bits, made once: every exp(x_j - m) at
 * PARITY_REF_PREC bits and S - 1 correctly rounded (mpfr_sum). Returns it, or NULL when
 * memory runs out. */
static mpfr_ptr lse_row_ref(const parity_op_call *pCall, lse_params *pP, uint64_t iRow)
{
    uint64_t k, n = pP->rows.n;
    double m = pP->aMax[iRow];
    mpfr_t t;

    if (pP->aLMade[iRow]) return pP->aLRef[iRow];
    if (!pP->aTerm) {
        pP->aBuf = parity_calloc(n + 1, sizeof(double));
        pP->aTerm = parity_calloc(n + 1, sizeof(mpfr_t));
        pP->apTerm = parity_calloc(n + 1, sizeof(mpfr_ptr));
        if (!pP->aBuf || !pP->aTerm || !pP->apTerm) {
            free(pP->aBuf);
            free(pP->aTerm);
            free(pP->apTerm);
            pP->aBuf = NULL;
            pP->aTerm = NULL;
            pP->apTerm = NULL;
            return NULL;
        }
        for (k = 0; k < n; k++) mpfr_init2(pP->aTerm[k], PARITY_REF_PREC);
    }
    parity_rows_gather(&pP->rows, pCall->aIn[0].aValue, iRow, pP->aBuf);
    mpfr_init2(t, PARITY_REF_PREC);
    for (k = 0; k < n; k++) {
        mpfr_set_d(t, pP->aBuf[k], MPFR_RNDN);
        mpfr_sub_d(t, t, m, MPFR_RNDN);      /* exact for x_k = -Inf too: -Inf */
        mpfr_exp(pP->aTerm[k], t, MPFR_RNDN);
        pP->apTerm[k] = pP->aTerm[k];
    }
    mpfr_clear(t);
    /* L = log1p(S - 1) with S - 1 summed without the maximum's exact 1: when the maximum
     * dominates, S = 1 + delta with tiny delta, and rounding S itself would lose delta's
     * low bits (an absolute 2^-128 in L, a large relative error in log_softmax at the
     * maximum and in logsumexp near 0). */
    for (k = 0; k < n; k++)
        if (pP->aBuf[k] == m) {
            mpfr_set_zero(pP->aTerm[k], 1);
            break;
        }
    mpfr_init2(pP->aLRef[iRow], PARITY_REF_PREC);
    pP->aLMade[iRow] = 1;
    mpfr_sum(pP->aLRef[iRow], pP->apTerm, (unsigned long)n, MPFR_RNDN);
    mpfr_log1p(pP->aLRef[iRow], pP->aLRef[iRow], MPFR_RNDN);
    return pP->aLRef[iRow];
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

/* Every row's maximum, kind, log-sum and weighted shift, from the values (binary64). */
static int lse_load(parity_op_call *pCall, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    lse_params *pP = pCall->pParams;
    uint64_t iRow, nRow = pP->rows.nRow;
    double *aBuf;

    pP->aKind = parity_calloc(nRow + 1, 1);
    pP->aFastOk = parity_calloc(nRow + 1, 1);
    pP->aMax = parity_calloc(nRow + 1, sizeof(double));
    pP->aW = parity_calloc(nRow + 1, sizeof(double));
    pP->aL = parity_calloc(nRow + 1, sizeof(double));
    pP->aLRef = parity_calloc(nRow + 1, sizeof(mpfr_t));
    pP->aLMade = parity_calloc(nRow + 1, 1);
    aBuf = parity_calloc(pP->rows.n + 1, sizeof(double));
    if (!pP->aKind || !pP->aFastOk || !pP->aMax || !pP->aW || !pP->aL || !pP->aLRef ||
        !pP->aLMade || !aBuf) {
        free(aBuf);
        snprintf(zErr, nErr, "out of memory");
        return -1;
    }
    pP->gammaN = parity_gamma((C_EXP + 2.0) * (double)pP->rows.n,
                              parity_unit_roundoff(pCall->accDtype));
    for (iRow = 0; iRow < nRow; iRow++) lse_row(pP, pX->aValue, iRow, aBuf);
    free(aBuf);
    return 0;
}

/* E_L: the absolute error of log(s^) for a row with weighted shift w and log-sum L
 * (header comment). */
static double lse_err_log(const lse_params *pP, const parity_op_call *pCall, double w,
                          double L)
{
    double u = parity_unit_roundoff(pCall->accDtype), n = (double)pP->rows.n;
    double eta = (w + C_EXP) * u + pP->gammaN + n * 0.5 * parity_ulp_at(pCall->accDtype, 0.0);
    if (!(eta < 1.0)) return INFINITY;
    return eta / (1.0 - eta) + C_EXP * u * L;
}

/* The bound (header comment) from the figures it grows with: w, L, m - x (log_softmax),
 * |m + L| and |y|. */
static double lse_bound_at(const parity_op_call *pCall, const lse_params *pP, double w,
                           double L, double mMinusX, double absLse, double absY)
{
    double u = parity_unit_roundoff(pCall->accDtype), eL = lse_err_log(pP, pCall, w, L);
    if (pP->isLse) return (1.0 + u) * eL + u * absY + 0.5 * parity_ulp_at(pCall->outDtype, absY);
    return (1.0 + u) * (u * fmax(mMinusX, absLse) + eL) + u * absY +
           0.5 * parity_ulp_at(pCall->outDtype, absY);
}

/* The bound of an element whose value is y: logsumexp's, or log_softmax's for input x.
 * Reads the row's binary64 m, w and L, on both paths. */
static double lse_bound(const parity_op_call *pCall, const lse_params *pP, uint64_t iRow,
                        double x, double y)
{
    double m = pP->aMax[iRow];
    return lse_bound_at(pCall, pP, pP->aW[iRow], pP->aL[iRow], m - x,
                        fabs(m + pP->aL[iRow]), fabs(y));
}

static int lse_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    lse_params *pP = pCall->pParams;
    uint64_t iRow = linear, k = 0;
    double x = 0.0, m;
    mpfr_ptr pL;

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
    if (!pP->isLse && x == -INFINITY) {
        mpfr_set_inf(ref, -1);
        return 0;
    }
    if (!(pL = lse_row_ref(pCall, pP, iRow))) return -1;
    if (pP->isLse) {
        mpfr_add_d(ref, pL, m, MPFR_RNDN);
    } else {
        mpfr_set_d(ref, x, MPFR_RNDN);
        mpfr_sub_d(ref, ref, m, MPFR_RNDN);
        mpfr_sub(ref, ref, pL, MPFR_RNDN);
    }
    *pBound = lse_bound(pCall, pP, iRow, x, mpfr_get_d(ref, MPFR_RNDN));
    return 0;
}

/* Row iRow's largest radius R, made once per row; +Inf where a radius is, or where an
 * element that moves is not finite. */
static double lse_row_rad(parity_op_call *pCall, lse_params *pP, const double *aRad,
                          uint64_t iRow)
{
    uint64_t k, n = pP->rows.n;
    double r = 0.0;
    if (!pP->aRadMax) {
        pP->aRadMax = parity_calloc(pP->rows.nRow + 1, sizeof(double));
        pP->aRadMade = parity_calloc(pP->rows.nRow + 1, 1);
        pP->aRadBuf = parity_calloc(n + 1, sizeof(double));
        pP->aRadValBuf = parity_calloc(n + 1, sizeof(double));
        if (!pP->aRadMax || !pP->aRadMade || !pP->aRadBuf || !pP->aRadValBuf) return NAN;
    }
    if (pP->aRadMade[iRow]) return pP->aRadMax[iRow];
    parity_rows_gather(&pP->rows, aRad, iRow, pP->aRadBuf);
    parity_rows_gather(&pP->rows, pCall->aIn[0].aValue, iRow, pP->aRadValBuf);
    for (k = 0; k < n; k++) {
        double rk = pP->aRadBuf[k];
        if (!(rk < INFINITY) || (rk > 0.0 && !isfinite(pP->aRadValBuf[k]))) {
            r = INFINITY;
            break;
        }
        if (rk > r) r = rk;
    }
    pP->aRadMax[iRow] = r;
    pP->aRadMade[iRow] = 1;
    return r;
}

/* Propagation (ops.h, xPropagate). With R the row's largest radius: logsumexp is
 * 1-Lipschitz in the largest coordinate, so it moves by at most R and log_softmax's
 * y_i = x_i - lse by r_i + R (the reach). Over the box the bound's figures grow at most
 * so: m by R, m - x_i by r_i + R, |m + L| = |lse| by R, each term exp(x_j - m) by a factor
 * e^(+-2R), so L by 2R and the weights p_j by e^(2R), and w = sum p_j (m - x_j) to at most
 * e^(2R) (w + 2R); the bound, increasing in each, is taken there. */
static int lse_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                         mpfr_t ref, double *pRadius)
{
    lse_params *pP = pCall->pParams;
    uint64_t iRow = linear, k = 0;
    double R, x = 0.0, rx = 0.0, reach, m, L, w, y, b;

    if (!pP->isLse) {
        parity_rows_locate(&pP->rows, linear, &iRow, &k);
        x = pCall->aIn[0].aValue[linear];
        rx = aRad[0][linear];
    }
    if (lse_element(pCall, linear, ref, pRadius) != 0) return -1;
    R = lse_row_rad(pCall, pP, aRad[0], iRow);
    if (R != R) return -1;                       /* out of memory */
    if (R == 0.0) return 0;
    if (!(R < INFINITY) || !(2.0 * R < 700.0)) return parity_propagate_vacuous(pCall, pRadius);
    /* a NaN or +Inf in the row, or a masked x_i (-Inf, exact: its radius is 0 or R would
     * be +Inf), gives the special value whatever the finite elements are */
    if (pP->aKind[iRow] != ROW_OK || !mpfr_number_p(ref)) return 0;
    m = pP->aMax[iRow];
    L = pP->aL[iRow];
    w = exp(2.0 * R) * (pP->aW[iRow] + 2.0 * R) * (1.0 + 0x1p-50);
    reach = parity_radius_up(pP->isLse ? R : rx + R, 1.0);
    y = fabs(mpfr_get_d(ref, MPFR_RNDN));
    b = lse_bound_at(pCall, pP, w, L + 2.0 * R, (m - x) + rx + R, fabs(m + L) + R, y + reach);
    *pRadius = parity_radius_up(reach + b, 16.0);
    return 0;
}

/* Fast path (ops.h). Errors, u = 2^-53: each term exp(fl(x_j - m)) within (745 + 2) u
 * relative (the shift's rounding amplified by |x_j - m| <= 745, exp's own ulp; smaller
 * terms are the subnormal case lse_row excludes), so the compensated s1 = s - 1 within
 * 2^-43 relative (rows.h: 2u over the sum of positive terms, n below 2^40). Then L = log1p(s1)
 * moves by at most 2^-43 s1 / (1 + s1) <= 2^-43 L (log1p(s) >= s / (1 + s)), plus log1p's
 * rounding: L within 2^-42.8 L.
 *   log_softmax: y = fl(fl(x - m) - L); x - m <= 0 and -L <= 0 add without cancellation,
 *     |y| = (m - x) + L, so |y^ - y| <= u (m - x) + 2^-42.8 L + u |y| <= 2^-42.7 |y|.
 *   logsumexp: y = fl(m + L), |y^ - y| <= 2^-42.8 L + u |y| (m + L may cancel).
 * Stated: 2^-32 |y| and 2^-32 (L + |y|), tests/test_fast_path.c measures them against MPFR
 * with a margin of 2^10. The bound depends on y through u |y| (spread u err) and the output's
 * ulp, checked constant over the interval. */
#define FAST_REL 0x1p-32

static int lse_fast(const parity_op_call *pCall, uint64_t linear, double *pRef, double *pErr,
                    double *pBound, double *pSpread)
{
    const lse_params *pP = pCall->pParams;
    uint64_t iRow = linear, k = 0;
    double x = 0.0, y, err, ay, u = parity_unit_roundoff(pCall->accDtype);
    parity_dtype out = pCall->outDtype;

    if (pCall->accDtype == PARITY_DT_F64 || out == PARITY_DT_F64) return 0;
    if (!pP->isLse) {
        parity_rows_locate(&pP->rows, linear, &iRow, &k);
        x = pCall->aIn[0].aValue[linear];
        if (!isfinite(x)) return 0;
    }
    if (pP->aKind[iRow] != ROW_OK || !pP->aFastOk[iRow]) return 0;
    if (pP->isLse) {
        y = pP->aMax[iRow] + pP->aL[iRow];
        err = FAST_REL * (pP->aL[iRow] + fabs(y));
    } else {
        y = (x - pP->aMax[iRow]) - pP->aL[iRow];
        err = FAST_REL * fabs(y);
    }
    ay = fabs(y);
    /* y = 0 with err = 0 is exact (x = m and every other element masked: L = 0) */
    if (!isfinite(y) || (err == 0.0 && ay != 0.0) ||
        (err > 0.0 && (ay <= err || parity_ulp_at(out, ay - err) != parity_ulp_at(out, ay + err))))
        return 0;
    *pRef = y;
    *pErr = err;
    *pBound = lse_bound(pCall, pP, iRow, x, y);
    /* the bound's own binary64 evaluation: a few roundings, 2^-50 of it */
    *pSpread = u * err * (1.0 + 0x1p-50) + 0x1p-50 * *pBound;
    (void)k;
    return 1;
}

const parity_op_def parity_op_log_softmax = {
    .zName = "log_softmax",
    .family = PARITY_FAMILY_ROWWISE,
    .xLoad = lse_load,
    .xPropagate = lse_propagate,
    .zModel = "shifted log_softmax: (1+u)(u max(|x-m|,|m+L|) + E_L) + u|y| + 0.5 ulp, E_L = eta/(1-eta) + c u L, eta = (w+c)u + gamma_{(c+2)n} (Blanchard-Higham-Higham 2021)",
    .nInMin = 1, .nInMax = 1,
    .xPrepare = lse_prepare, .xElement = lse_element, .xFreeParams = lse_free,
    .xFast = lse_fast,
};

const parity_op_def parity_op_logsumexp = {
    .zName = "logsumexp",
    .family = PARITY_FAMILY_REDUCE,
    .flags = PARITY_OPF_NAMES_DIM,
    .xLoad = lse_load,
    .xPropagate = lse_propagate,
    .zModel = "shifted log-sum-exp: (1+u) E_L + u|lse| + 0.5 ulp, E_L = eta/(1-eta) + c u L, eta = (w+c)u + gamma_{(c+2)n} (Blanchard-Higham-Higham 2021)",
    .nInMin = 1, .nInMax = 1,
    .xPrepare = lse_prepare, .xElement = lse_element, .xFreeParams = lse_free,
    .xFast = lse_fast,
};
