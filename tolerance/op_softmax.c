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
#include "tolerance/propagate.h"
#include "formats/alloc.h"

#define C_EXP 4.0

typedef struct {
    uint64_t nDim, nInner, nRow;
    /* Per row: the max, whether the row is NaN, the weighted shift w and the sum of exp in
     * binary64 (the fast path's, Neumaier-compensated), and the sum of exp in MPFR, made
     * when an element of the row first asks for it (aSumMade). */
    double *aMax;
    double *aW;
    double *aSumD;
    double gammaN;            /* gamma_{(c_exp + 2) n}(u), the same for every row */
    unsigned char *aNanRow;
    unsigned char *aSumMade;
    mpfr_t *aSum;
    mpfr_t *aTerm;            /* the row's terms, scratch of the MPFR sum */
    mpfr_ptr *apTerm;
    /* Propagation (softmax_propagate), per row when first asked: the sums of exp(x_j - r_j
     * - m) rounded down and of exp(x_j + r_j - m) rounded up, the weighted shift's largest
     * value on the box and the row's largest radius (NaN: not made yet). */
    mpfr_t *aSumLo, *aSumHi;
    double *aWBox, *aRMax;
    unsigned char *aRowMoved;     /* per row: 1 some radius is nonzero, 2 the box reaches a
                                   * special value (a nonzero radius on one, or +Inf) */
} softmax_params;

#define PROP_PREC 64

static void softmax_free(void *p)
{
    softmax_params *pP = p;
    uint64_t i;
    for (i = 0; pP->aSumMade && i < pP->nRow; i++)
        if (pP->aSumMade[i]) mpfr_clear(pP->aSum[i]);
    for (i = 0; pP->aTerm && i < pP->nDim; i++) mpfr_clear(pP->aTerm[i]);
    free(pP->aTerm);
    free(pP->apTerm);
    for (i = 0; pP->aRMax && i < pP->nRow; i++)
        if (pP->aRMax[i] == pP->aRMax[i]) mpfr_clears(pP->aSumLo[i], pP->aSumHi[i], (mpfr_ptr)0);
    free(pP->aSumLo);
    free(pP->aSumHi);
    free(pP->aWBox);
    free(pP->aRMax);
    free(pP->aRowMoved);
    free(pP->aSum);
    free(pP->aSumMade);
    free(pP->aMax);
    free(pP->aW);
    free(pP->aSumD);
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

/* The per-row max, NaN flag, sum of exponentials (binary64) and weighted shift. The MPFR
 * sums wait for the elements that need them (softmax_row_sum). */
static int softmax_load(parity_op_call *pCall, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    softmax_params *pP = pCall->pParams;
    uint64_t iRow, k;

    pP->aMax = parity_calloc(pP->nRow + 1, sizeof(double));
    pP->aW = parity_calloc(pP->nRow + 1, sizeof(double));
    pP->aSumD = parity_calloc(pP->nRow + 1, sizeof(double));
    pP->aNanRow = parity_calloc(pP->nRow + 1, 1);
    pP->aSumMade = parity_calloc(pP->nRow + 1, 1);
    pP->aSum = parity_calloc(pP->nRow + 1, sizeof(mpfr_t));
    if (!pP->aMax || !pP->aW || !pP->aSumD || !pP->aNanRow || !pP->aSumMade || !pP->aSum) {
        snprintf(zErr, nErr, "out of memory");
        return -1;
    }
    pP->gammaN = parity_gamma((C_EXP + 2.0) * (double)pP->nDim,
                              parity_unit_roundoff(pCall->accDtype));
    for (iRow = 0; iRow < pP->nRow; iRow++) {
        double m = -INFINITY, w = 0.0, sum;
        parity_comp_sum acc = { 0.0, 0.0 };
        int bad = 0;
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
        /* sum exp(x_j - m), and sum exp(x_j - m) |x_j - m| for w = sum_j y_j |x_j - m| (a
         * first-order term of the bound: binary64 is plenty), one exp a term */
        for (k = 0; k < pP->nDim; k++) {
            double xk = row_value(pP, pX->aValue, iRow, k), ek = exp(xk - m);
            parity_comp_add(&acc, ek);
            if (xk != -INFINITY) w += ek * (m - xk);
        }
        sum = acc.s + acc.c;
        pP->aSumD[iRow] = sum;
        pP->aW[iRow] = w / sum;
    }
    return 0;
}

/* Row iRow's sum of exp(x_j - m) at PARITY_REF_PREC bits (mpfr_exp, mpfr_sum: correctly
 * rounded), made once. Returns it, or NULL when memory runs out. */
static mpfr_ptr softmax_row_sum(const parity_op_call *pCall, softmax_params *pP, uint64_t iRow)
{
    uint64_t k;
    mpfr_t t;
    if (pP->aSumMade[iRow]) return pP->aSum[iRow];
    if (!pP->aTerm) {
        pP->aTerm = parity_calloc(pP->nDim + 1, sizeof(mpfr_t));
        pP->apTerm = parity_calloc(pP->nDim + 1, sizeof(mpfr_ptr));
        if (!pP->aTerm || !pP->apTerm) {
            free(pP->aTerm);
            free(pP->apTerm);
            pP->aTerm = NULL;
            pP->apTerm = NULL;
            return NULL;
        }
        for (k = 0; k < pP->nDim; k++) {
            mpfr_init2(pP->aTerm[k], PARITY_REF_PREC);
            pP->apTerm[k] = pP->aTerm[k];
        }
    }
    mpfr_init2(t, PARITY_REF_PREC);
    for (k = 0; k < pP->nDim; k++) {
        mpfr_set_d(t, row_value(pP, pCall->aIn[0].aValue, iRow, k), MPFR_RNDN);
        mpfr_sub_d(t, t, pP->aMax[iRow], MPFR_RNDN);
        mpfr_exp(pP->aTerm[k], t, MPFR_RNDN);
    }
    mpfr_clear(t);
    mpfr_init2(pP->aSum[iRow], PARITY_REF_PREC);
    mpfr_sum(pP->aSum[iRow], pP->apTerm, pP->nDim, MPFR_RNDN);
    pP->aSumMade[iRow] = 1;
    return pP->aSum[iRow];
}

/* The row of element `linear`. */
static uint64_t softmax_row_of(const softmax_params *pP, uint64_t linear)
{
    uint64_t inner = linear % pP->nInner, outer = linear / (pP->nInner * pP->nDim);
    return outer * pP->nInner + inner;
}

/* The bound of an element of value y (file comment); the first-order factor K is what
 * multiplies y. */
static double softmax_bound(const parity_op_call *pCall, const softmax_params *pP,
                            uint64_t iRow, double x, double y, double *pK)
{
    double u = parity_unit_roundoff(pCall->accDtype), n = (double)pP->nDim, m = pP->aMax[iRow];
    double k = (m - x + pP->aW[iRow] + 2.0 * C_EXP + 2.0) * u + pP->gammaN;
    if (pK) *pK = k;
    return y * k + 0.5 * parity_ulp_at(pCall->outDtype, y) +
           n * 0.5 * parity_ulp_at(pCall->accDtype, 0.0);
}

static int softmax_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    softmax_params *pP = pCall->pParams;
    double x = pCall->aIn[0].aValue[linear];
    uint64_t iRow = softmax_row_of(pP, linear);
    mpfr_ptr pSum;

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
    if (!(pSum = softmax_row_sum(pCall, pP, iRow))) return -1;
    mpfr_set_d(ref, x, MPFR_RNDN);
    mpfr_sub_d(ref, ref, pP->aMax[iRow], MPFR_RNDN);
    mpfr_exp(ref, ref, MPFR_RNDN);
    mpfr_div(ref, ref, pSum, MPFR_RNDN);
    *pBound = softmax_bound(pCall, pP, iRow, x, mpfr_get_d(ref, MPFR_RNDN), NULL);
    return 0;
}

/* Fast path (ops.h): exp(x - m) / S in binary64, S the compensated sum of the load. x - m
 * rounds once (2^-53 relative), which exp amplifies by |x - m| <= 745 (beyond, the result
 * is below 2^-960 and left to MPFR): 2^-43.5; exp adds 2^-52, S at most 2^-51 (Neumaier,
 * n below 2^40), the division 2^-53: about 2^-43 relative in all. Stated: FAST_REL = 2^-32
 * (tests/test_fast_path.c measures it against MPFR, margin 2^10). The bound is monotone in
 * y with slope K, so over the interval it moves by err K (spread), with the output's ulp
 * checked constant. */
#define FAST_REL 0x1p-32

static int softmax_fast(const parity_op_call *pCall, uint64_t linear, double *pRef,
                        double *pErr, double *pBound, double *pSpread)
{
    const softmax_params *pP = pCall->pParams;
    double x = pCall->aIn[0].aValue[linear], r, err, k;
    uint64_t iRow = softmax_row_of(pP, linear);
    parity_dtype out = pCall->outDtype;

    if (pP->aNanRow[iRow] || !isfinite(x) || pCall->accDtype == PARITY_DT_F64 ||
        out == PARITY_DT_F64)
        return 0;
    r = exp(x - pP->aMax[iRow]) / pP->aSumD[iRow];
    if (!(r >= 0x1p-960) || !isfinite(r)) return 0;
    err = FAST_REL * r;
    if (parity_ulp_at(out, r - err) != parity_ulp_at(out, r + err)) return 0;
    *pBound = softmax_bound(pCall, pP, iRow, x, r, &k);
    /* the bound's own binary64 evaluation: a few roundings, 2^-50 of it */
    *pSpread = err * k * (1.0 + 0x1p-50) + 0x1p-50 * *pBound;
    *pRef = r;
    *pErr = err;
    return 1;
}

/* ---- propagation (ops.h, xPropagate; graph.h) --------------------------------------
 * With x_j' anywhere in [x_j - r_j, x_j + r_j], y_i = 1 / (1 + sum_{j != i} exp(x_j - x_i))
 * rises with x_i and falls with every other x_j, so on the box
 *     y_i <= 1 / (1 + sum_{j != i} exp(lo_j - hi_i)),   y_i >= 1 / (1 + sum_{j != i} exp(hi_j - lo_i)),
 * and with the row's sums S_lo = sum_j exp(lo_j - m), S_hi = sum_j exp(hi_j - m), made once,
 * sum_{j != i} exp(lo_j - hi_i) = exp(m - hi_i)(S_lo - exp(lo_i - m)) (likewise for hi):
 * O(n) a row. Everything is evaluated in MPFR with the rounding direction that keeps each
 * side a bound (PROP_PREC bits; a cancelling S_lo - exp(lo_i - m) is clamped at 0, which
 * is still a bound). softmax_bound on the box: y at its largest, m' - x_i' <= m - x_i +
 * r_i + rMax, and w' = sum_j y_j' (m' - x_j') <= sum_j yMax_j (m - x_j + r_j + rMax). */

/* exp(x_k + dir r_k - m) of row iRow, rounded down (dir -1) or up (dir +1) at every step,
 * into y: a lower or an upper bound of exp(x_k' - m) over the box. */
static void row_exp(const softmax_params *pP, const double *x, const double *rad,
                    uint64_t iRow, uint64_t k, int dir, mpfr_t y)
{
    mpfr_rnd_t rnd = dir < 0 ? MPFR_RNDD : MPFR_RNDU;
    MPFR_DECL_INIT(t, PROP_PREC);
    mpfr_set_d(t, row_value(pP, x, iRow, k), rnd);
    if (dir < 0) mpfr_sub_d(t, t, row_value(pP, rad, iRow, k), rnd);
    else mpfr_add_d(t, t, row_value(pP, rad, iRow, k), rnd);
    mpfr_sub_d(t, t, pP->aMax[iRow], rnd);
    mpfr_exp(y, t, rnd);
}

/* The largest y_i of row iRow on the box (up) or the least (!up), rounded that way. */
static double row_y_bound(const softmax_params *pP, const double *x, const double *rad,
                          uint64_t iRow, uint64_t i, int up)
{
    mpfr_rnd_t toward = up ? MPFR_RNDD : MPFR_RNDU, away = up ? MPFR_RNDU : MPFR_RNDD;
    double xi = row_value(pP, x, iRow, i), ri = row_value(pP, rad, iRow, i);
    MPFR_DECL_INIT(e, PROP_PREC);
    MPFR_DECL_INIT(s, PROP_PREC);
    MPFR_DECL_INIT(t, PROP_PREC);
    /* the others' sum: S_lo less exp(lo_i - m) rounded up, for the largest y_i; S_hi less
     * exp(hi_i - m) rounded down, for the least */
    mpfr_set_d(t, xi, away);
    if (up) mpfr_sub_d(t, t, ri, away);
    else mpfr_add_d(t, t, ri, away);
    mpfr_sub_d(t, t, pP->aMax[iRow], away);
    mpfr_exp(e, t, away);
    mpfr_sub(s, up ? pP->aSumLo[iRow] : pP->aSumHi[iRow], e, toward);
    if (mpfr_sgn(s) < 0) mpfr_set_zero(s, 1);
    /* times exp(m - hi_i) (largest) or exp(m - lo_i) (least) */
    mpfr_set_d(t, pP->aMax[iRow], toward);
    mpfr_sub_d(t, t, xi, toward);
    if (up) mpfr_sub_d(t, t, ri, toward);
    else mpfr_add_d(t, t, ri, toward);
    mpfr_exp(t, t, toward);
    mpfr_mul(s, s, t, toward);
    mpfr_add_ui(s, s, 1, toward);
    mpfr_ui_div(s, 1, s, away);
    return mpfr_get_d(s, away);
}

/* Makes row iRow's propagation data (the sums, rMax, wBox). Returns 0, or -1 when memory
 * runs out. */
static int row_propagation(softmax_params *pP, const double *x, const double *rad, uint64_t iRow)
{
    uint64_t k;
    double rMax = 0.0, w = 0.0;
    MPFR_DECL_INIT(e, PROP_PREC);
    if (!pP->aRMax) {
        pP->aSumLo = parity_calloc(pP->nRow + 1, sizeof(mpfr_t));
        pP->aSumHi = parity_calloc(pP->nRow + 1, sizeof(mpfr_t));
        pP->aWBox = parity_calloc(pP->nRow + 1, sizeof(double));
        pP->aRMax = parity_malloc((pP->nRow + 1) * sizeof(double));
        pP->aRowMoved = parity_calloc(pP->nRow + 1, 1);
        if (!pP->aSumLo || !pP->aSumHi || !pP->aWBox || !pP->aRMax || !pP->aRowMoved) {
            free(pP->aRMax);
            pP->aRMax = NULL;
            return -1;
        }
        for (k = 0; k <= pP->nRow; k++) pP->aRMax[k] = NAN;
    }
    if (pP->aRMax[iRow] == pP->aRMax[iRow]) return 0;
    mpfr_inits2(PROP_PREC, pP->aSumLo[iRow], pP->aSumHi[iRow], (mpfr_ptr)0);
    mpfr_set_zero(pP->aSumLo[iRow], 1);
    mpfr_set_zero(pP->aSumHi[iRow], 1);
    for (k = 0; k < pP->nDim; k++) {
        double r = row_value(pP, rad, iRow, k), v = row_value(pP, x, iRow, k);
        if (r != 0.0) pP->aRowMoved[iRow] |= 1;
        if ((r != 0.0 && !isfinite(v)) || !(r < INFINITY)) pP->aRowMoved[iRow] |= 2;
        if (r > rMax) rMax = r;
        row_exp(pP, x, rad, iRow, k, -1, e);
        mpfr_add(pP->aSumLo[iRow], pP->aSumLo[iRow], e, MPFR_RNDD);
        row_exp(pP, x, rad, iRow, k, 1, e);
        mpfr_add(pP->aSumHi[iRow], pP->aSumHi[iRow], e, MPFR_RNDU);
    }
    pP->aRMax[iRow] = rMax;
    for (k = 0; k < pP->nDim; k++) {
        double xk = row_value(pP, x, iRow, k);
        if (xk == -INFINITY) continue;     /* exactly 0, at radius 0 (checked by the caller) */
        w += row_y_bound(pP, x, rad, iRow, k, 1) *
             parity_radius_up(pP->aMax[iRow] - xk + row_value(pP, rad, iRow, k) + rMax, 3.0);
    }
    pP->aWBox[iRow] = parity_radius_up(w, 3.0 * (double)pP->nDim);
    return 0;
}

static int softmax_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                             mpfr_t ref, double *pRadius)
{
    softmax_params *pP = pCall->pParams;
    const double *x = pCall->aIn[0].aValue, *rad = aRad[0];
    uint64_t iRow = softmax_row_of(pP, linear);
    double xi = x[linear], yHi, yLo, u, kk, bound, reach;

    if (softmax_element(pCall, linear, ref, pRadius) != 0) return -1;
    /* the row's radii are scanned once, with its sums (not once per element) */
    if (row_propagation(pP, x, rad, iRow) != 0) return -1;
    if (!(pP->aRowMoved[iRow] & 1)) return 0;
    if ((pP->aRowMoved[iRow] & 2) || pP->aNanRow[iRow] || !mpfr_number_p(ref))
        return parity_propagate_vacuous(pCall, pRadius);
    if (xi == -INFINITY) return 0;         /* exactly 0 whatever the others are */
    {
        uint64_t kIn = linear / pP->nInner % pP->nDim;   /* the element's place in its row */
        yHi = row_y_bound(pP, x, rad, iRow, kIn, 1);
        yLo = row_y_bound(pP, x, rad, iRow, kIn, 0);
    }
    u = parity_unit_roundoff(pCall->accDtype);
    kk = parity_radius_up((pP->aMax[iRow] - xi + rad[linear] + pP->aRMax[iRow] +
                           pP->aWBox[iRow] + 2.0 * C_EXP + 2.0) * u + pP->gammaN, 6.0);
    bound = yHi * kk + 0.5 * parity_ulp_at(pCall->outDtype, yHi) +
            (double)pP->nDim * 0.5 * parity_ulp_at(pCall->accDtype, 0.0);
    reach = fmax(parity_radius_between(ref, yLo), parity_radius_between(ref, yHi));
    *pRadius = parity_radius_up(reach + bound, 6.0);
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
    .xFast = softmax_fast,
    .xPropagate = softmax_propagate,
};
