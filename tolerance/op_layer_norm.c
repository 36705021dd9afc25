/*
 * op_layer_norm.c - layer_norm(x, normalized_shape, weight?, bias?, eps): over the last
 * D = prod(normalized_shape) elements of each row,
 *     mu = sum x / D,  v = sum (x - mu)^2 / D (biased),  r = 1 / sqrt(v + eps),
 *     y_i = (x_i - mu) r w_i + b_i.
 *
 * Reference: mu and v from exact sums (mpref.h) at PARITY_REF_PREC bits, then the formula
 * at PARITY_REF_PREC bits.
 *
 * Bound (derived here; u = unit roundoff of acc_dtype, gamma_k = k u / (1 - k u) as in
 * Higham 2002, Lemma 3.1; n = D). It must hold for two-pass, Welford and one-pass
 * (sum of squares) kernels alike:
 *   mean:      |mu^ - mu| <= E_mu = gamma_{n+1} * mean|x|            (sum of n, one divide)
 *   variance:  the one-pass formula (sum x^2)/n - mu^2 is the least accurate of the three;
 *              its error is at most gamma_{2n+4} (v + mu^2) (a sum of n squares, a divide,
 *              a square and a subtraction), and Welford and two-pass stay within it
 *              (Chan, Golub & LeVeque, Amer. Statist. 37(3), 1983). The error of mu^ adds
 *              E_mu^2 in two-pass (sum (x_i - mu - delta)^2 = sum (x_i - mu)^2 + n delta^2)
 *              and 2 |mu| E_mu + E_mu^2 in one-pass (mu^2 is formed from mu^).
 *              E_v = gamma_{2n+4} (v + mu^2) + 2 |mu| E_mu + E_mu^2.
 *   rsqrt:     r^ = r (1 + rho). Not linearised: a one-pass kernel can lose all of v
 *              when |mu| >> sigma (E_v >= v + eps), so with v_low = max(v - E_v, 0) + eps
 *              (one more rounding), rho <= sqrt((v + eps) / v_low) - 1, or the first-order
 *              (E_v + u (v + eps)) / (2 (v + eps)) when v^ lies above v, whichever is
 *              larger; then the rsqrt's own c_rs u, c_rs = 4 (within 2 ulps).
 *   subnormals: the mean may round on the subnormal grid (each Welford update, the
 *              division): n half-subnormals of acc_dtype are added to E_mu, absolute.
 *   centering: |(x_i - mu)^ - (x_i - mu)| <= E_mu + u |x_i - mu|.
 *   output:    y_i = d_i r w_i + b_i with two more roundings (multiply by w, add b):
 *   |y^_i - y_i| <= |w_i| r (1 + rho) (E_mu + u |d_i|) + |d_i w_i| r (|rho| + 2u)
 *                   + u (|d_i r w_i| + |b_i|) + 0.5 ulp_out(y_i),
 * all to first order (second-order terms are below u^2 n and covered by the gammas).
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

#define C_RSQRT 4.0

typedef struct {
    uint64_t nNorm, nRow;
    const double *pWeight, *pBias;
    double eps;
    /* Per row: mu as a binary64 pair (aMu + aMuLo, the exact mean to about 2^-106), v and
     * r = 1/sqrt(v + eps) in binary64 from the deviations against that pair (the fast path's,
     * and the bound's), mean |x|; mu in MPFR; r in MPFR, made when an element of the row
     * first asks for it (aRMade). */
    double *aMu, *aMuLo, *aVar, *aR, *aMeanAbs;
    mpfr_t *aMuRef, *aRRef;
    unsigned char *aRMade;
    uint64_t nInit;
    double gammaMean, gammaVar;   /* gamma_{n+1}(u), gamma_{2n+4}(u): the same every row */
    /* Propagation (ln_propagate), for the row it last served (propRow; UINT64_MAX: none):
     * the radii's mean and root mean square, the variance's least and largest value on the
     * box, the least sqrt(v + eps), and q = (1/n) sum_j |yhat_j|max r_j; bad: a radius or
     * value in the row that leaves the box undetermined. */
    uint64_t propRow;
    double propMeanR, propVLo, propVHi, propSMin, propQ;
    int propBad, propMoved;
} ln_params;

static void ln_free(void *p)
{
    ln_params *pP = p;
    uint64_t i;
    for (i = 0; i < pP->nInit; i++) {
        mpfr_clear(pP->aMuRef[i]);
        if (pP->aRMade[i]) mpfr_clear(pP->aRRef[i]);
    }
    free(pP->aMuRef);
    free(pP->aRRef);
    free(pP->aRMade);
    free(pP->aMu);
    free(pP->aMuLo);
    free(pP->aVar);
    free(pP->aR);
    free(pP->aMeanAbs);
    free(pP);
}

static int ln_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                      char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    parity_norm_geometry *pG = &pCall->geom.norm;
    ln_params *pP = parity_calloc(1, sizeof *pP);
    unsigned char aReduce[PARITY_MAX_RANK];
    char zA[128], zB[128];

    if (!pP) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pCall->pParams = pP;
    pP->eps = 1e-5;
    if (parity_param_float(aAttr, nAttr, "eps", &pP->eps, NULL, zErr, nErr) != 0) return -1;
    if (!(pP->eps >= 0.0)) { snprintf(zErr, nErr, "layer_norm: eps must be >= 0"); return -1; }
    if (!parity_op_take_out(pCall, pX->rank, pX->aDim)) {
        snprintf(zErr, nErr, "layer_norm: input shape %s differs from output shape %s",
                 parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA),
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zB, sizeof zB));
        return -1;
    }
    if (parity_rows_parse_norm(pCall, aAttr, nAttr, pG, aReduce, zErr, nErr) != 0) return -1;
    pG->eps = pP->eps;
    pP->nNorm = pG->D;
    pP->nRow = pG->nRow;
    pP->pWeight = pG->hasWeight ? pCall->aIn[1].aValue : NULL;
    pP->pBias = pG->hasBias ? pCall->aIn[2].aValue : NULL;
    pP->propRow = UINT64_MAX;
    return 0;
}

/* Every row's mean (exactly, then as a binary64 pair) and, in binary64, its variance and
 * r; the MPFR r waits for the elements that need it (ln_row_r). */
static int ln_load(parity_op_call *pCall, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    ln_params *pP = pCall->pParams;
    uint64_t iRow, k;
    mpfr_t t;

    pP->aMu = parity_calloc(pP->nRow + 1, sizeof(double));
    pP->aMuLo = parity_calloc(pP->nRow + 1, sizeof(double));
    pP->aVar = parity_calloc(pP->nRow + 1, sizeof(double));
    pP->aR = parity_calloc(pP->nRow + 1, sizeof(double));
    pP->aMeanAbs = parity_calloc(pP->nRow + 1, sizeof(double));
    pP->aMuRef = parity_calloc(pP->nRow + 1, sizeof(mpfr_t));
    pP->aRRef = parity_calloc(pP->nRow + 1, sizeof(mpfr_t));
    pP->aRMade = parity_calloc(pP->nRow + 1, 1);
    if (!pP->aMu || !pP->aMuLo || !pP->aVar || !pP->aR || !pP->aMeanAbs || !pP->aMuRef ||
        !pP->aRRef || !pP->aRMade) {
        snprintf(zErr, nErr, "out of memory");
        return -1;
    }
    pP->gammaMean = parity_gamma((double)pP->nNorm + 1.0, parity_unit_roundoff(pCall->accDtype));
    pP->gammaVar = parity_gamma(2.0 * (double)pP->nNorm + 4.0, parity_unit_roundoff(pCall->accDtype));
    mpfr_init2(t, PARITY_REF_PREC);
    for (iRow = 0; iRow < pP->nRow; iRow++) {
        const double *x = pX->aValue + iRow * pP->nNorm;
        double absSum = 0.0, hi, lo;
        parity_comp_sum sq = { 0.0, 0.0 };
        mpfr_init2(pP->aMuRef[iRow], PARITY_REF_PREC);
        pP->nInit++;
        if (parity_exact_sum(pP->aMuRef[iRow], x, 1, pP->nNorm, &absSum) != 0) {
            mpfr_clear(t);
            snprintf(zErr, nErr, "out of memory");
            return -1;
        }
        mpfr_div_ui(pP->aMuRef[iRow], pP->aMuRef[iRow], (unsigned long)pP->nNorm, MPFR_RNDN);
        hi = mpfr_get_d(pP->aMuRef[iRow], MPFR_RNDN);
        mpfr_sub_d(t, pP->aMuRef[iRow], hi, MPFR_RNDN);
        lo = isfinite(hi) ? mpfr_get_d(t, MPFR_RNDN) : 0.0;
        pP->aMu[iRow] = hi;
        pP->aMuLo[iRow] = lo;
        pP->aMeanAbs[iRow] = absSum / (double)pP->nNorm;
        /* v = sum d_k^2 / n, d_k = (x_k - hi) - lo: each d_k within about 2^-52 |d_k| +
         * 2^-106 |mu| of x_k - mu, the compensated sum of squares within 2^-51 of its
         * exact value: v within about 2^-50 relative (rows of equal values give 0) */
        for (k = 0; k < pP->nNorm; k++) {
            double d = (x[k] - hi) - lo;
            parity_comp_add(&sq, d * d);
        }
        pP->aVar[iRow] = (sq.s + sq.c) / (double)pP->nNorm;
        pP->aR[iRow] = 1.0 / sqrt(pP->aVar[iRow] + pP->eps);
    }
    mpfr_clear(t);
    return 0;
}

/* Row iRow's r = 1/sqrt(v + eps) at PARITY_REF_PREC bits, v = sum (x - mu)^2 / n with the
 * deviations rounded once at 128 bits, the squares and their sum at 128 bits; made once. */
static mpfr_ptr ln_row_r(const parity_op_call *pCall, ln_params *pP, uint64_t iRow)
{
    const double *x = pCall->aIn[0].aValue + iRow * pP->nNorm;
    uint64_t k;
    mpfr_t t;
    if (pP->aRMade[iRow]) return pP->aRRef[iRow];
    mpfr_init2(t, PARITY_REF_PREC);
    mpfr_init2(pP->aRRef[iRow], PARITY_REF_PREC);
    pP->aRMade[iRow] = 1;
    mpfr_set_zero(pP->aRRef[iRow], 1);
    for (k = 0; k < pP->nNorm; k++) {
        mpfr_set_d(t, x[k], MPFR_RNDN);
        mpfr_sub(t, t, pP->aMuRef[iRow], MPFR_RNDN);
        mpfr_sqr(t, t, MPFR_RNDN);
        mpfr_add(pP->aRRef[iRow], pP->aRRef[iRow], t, MPFR_RNDN);
    }
    mpfr_div_ui(pP->aRRef[iRow], pP->aRRef[iRow], (unsigned long)pP->nNorm, MPFR_RNDN);
    mpfr_add_d(pP->aRRef[iRow], pP->aRRef[iRow], pP->eps, MPFR_RNDN);
    mpfr_rec_sqrt(pP->aRRef[iRow], pP->aRRef[iRow], MPFR_RNDN);
    mpfr_clear(t);
    return pP->aRRef[iRow];
}

/* The bound (file comment) of an element given the magnitudes it grows with: |mu|, the
 * row's variance between vLo and vHi (equal for one point; the numerator of rho takes the
 * largest, its denominator and r the least), mean |x|, |x - mu|, |w|, |b|, |y|. Every term
 * grows with each of them, so for a box of operands (propagation) their largest values
 * give the largest bound on it. */
static double ln_bound_at(const parity_op_call *pCall, const ln_params *pP, double absMu,
                          double vLo, double vHi, double meanAbs, double absD, double absW,
                          double absB, double absY)
{
    double u = parity_unit_roundoff(pCall->accDtype), n = (double)pP->nNorm;
    double r = 1.0 / sqrt(vLo + pP->eps), eMu, eV, rho;

    /* The mean also rounds on the subnormal grid (each Welford update, or the division):
     * up to n half-subnormals of acc_dtype, absolute. */
    eMu = pP->gammaMean * meanAbs + n * 0.5 * parity_ulp_at(pCall->accDtype, 0.0);
    /* Two-pass: the mean's error adds eMu^2 (the cross term vanishes); one-pass
     * (sum x^2 / n - mu^2): squaring the computed mean adds 2 |mu| eMu + eMu^2. */
    eV = pP->gammaVar * (vHi + absMu * absMu) + eMu * eMu + 2.0 * absMu * eMu;
    {
        /* rsqrt of the computed v + eps: not linearised, since a one-pass kernel can lose
         * all of v (E_v >= v + eps when |mu| >> sigma). r^ <= 1/sqrt(vLow) with
         * vLow = max(v - E_v, 0) + eps rounded once more, so the relative error of r^ is
         * at most sqrt((v + eps) / vLow) - 1, plus the rsqrt's own C_RSQRT ulps. */
        double vPlus = vHi + pP->eps;
        double vLow = (vLo - eV > 0.0 ? vLo - eV : 0.0) + pP->eps;
        vLow -= u * vLow;
        rho = vLow > 0.0 ? sqrt(vPlus / vLow) - 1.0 : INFINITY;
        {
            /* v^ above v: smaller r^ */
            double rhoHigh = (eV + u * vPlus) / (2.0 * (vLo + pP->eps));
            if (rhoHigh > rho) rho = rhoHigh;
        }
        rho = rho * (1.0 + C_RSQRT * u) + C_RSQRT * u;
    }
    /* The centering error meets the computed r^ <= r (1 + rho), not r. */
    return absW * r * (1.0 + rho) * (eMu + u * absD) + absD * absW * r * (rho + 2.0 * u) +
           u * (absD * r * absW + absB) + 0.5 * parity_ulp_at(pCall->outDtype, absY) +
           n * 0.5 * parity_ulp_at(pCall->accDtype, 0.0);
}

/* The bound of element k of row iRow whose value is y (file comment). The row's v and r
 * are the binary64 ones of the load, for the MPFR path too: the bound is first order in
 * them, and one set of figures makes the fast path's bound the MPFR path's. */
static double ln_bound(const parity_op_call *pCall, const ln_params *pP, uint64_t iRow,
                       double x, double w, double b, double y)
{
    double mu = pP->aMu[iRow], v = pP->aVar[iRow];
    return ln_bound_at(pCall, pP, fabs(mu), v, v, pP->aMeanAbs[iRow], fabs(x - mu), fabs(w),
                       fabs(b), fabs(y));
}

static int ln_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    ln_params *pP = pCall->pParams;
    uint64_t iRow = linear / pP->nNorm, k = linear % pP->nNorm;
    double x = pCall->aIn[0].aValue[linear];
    double w = pP->pWeight ? pP->pWeight[k] : 1.0, b = pP->pBias ? pP->pBias[k] : 0.0;
    double n = (double)pP->nNorm, mu = pP->aMu[iRow], v = pP->aVar[iRow];
    mpfr_ptr pR;

    /* a sum of squares (one-pass, Welford's delta^2) may overflow: n (v + mu^2); its
     * rsqrt is then 0, and the row's outputs finite (the bias) */
    parity_note_overflow(pCall, n * (v + mu * mu));
    pR = ln_row_r(pCall, pP, iRow);
    /* y = (x - mu) r w + b at 128 bits. */
    mpfr_set_d(ref, x, MPFR_RNDN);
    mpfr_sub(ref, ref, pP->aMuRef[iRow], MPFR_RNDN);
    mpfr_mul(ref, ref, pR, MPFR_RNDN);
    mpfr_mul_d(ref, ref, w, MPFR_RNDN);
    mpfr_add_d(ref, ref, b, MPFR_RNDN);
    if (mpfr_nan_p(ref) || mpfr_inf_p(ref)) {
        /* An infinite weight or bias times (x - mu) r, whose sign a correct kernel's
         * rounding may flip when x is close to the mean (or make 0 * Inf = NaN): any
         * non-finite result is as right as the reference's (ops.h, overflowPossible). */
        if (!isfinite(w) || !isfinite(b)) {
            pCall->overflowPossible = 1;
            /* a NaN no operand brought (x, w, b and the row's statistics are numbers):
             * x - mu = 0 exactly against an infinite weight, where a kernel whose mean is
             * off by a rounding gives an infinity (the clean campaign's seed 2, float16) */
            pCall->nonfiniteAny = mpfr_nan_p(ref) && x == x && w == w && b == b &&
                                  mu == mu && !mpfr_nan_p(pR);
        }
        *pBound = 0.0;   /* non-finite: the reference decides by value */
        return 0;
    }
    *pBound = ln_bound(pCall, pP, iRow, x, w, b, mpfr_get_d(ref, MPFR_RNDN));
    return 0;
}

/* Fast path (ops.h): y = d r w + b in binary64 with d = (x - mu_hi) - mu_lo and the load's
 * r. Errors (u = 2^-53): d within 2u |d| + 2^-106 |mu|; r within about 2^-50 relative (v's
 * 2^-50 halved by the square root, the sum and division with eps, sqrt, 1/); the two
 * products and the sum 3u more. So |y^ - y| <= 2^-48 (|d r w| + |y|) + u |b| + 2^-105 |mu| r
 * |w|. Stated: 2^-32 (|d r w| + |y| + |b|) + 2^-80 |mu| r |w|, which
 * tests/test_fast_path.c measures against MPFR with a margin of 2^10. The bound depends on
 * y only through the output's ulp at |y|, checked constant over the interval; rows that may
 * overflow (overflowPossible) and non-finite operands go to MPFR. */
static int ln_fast(const parity_op_call *pCall, uint64_t linear, double *pRef, double *pErr,
                   double *pBound, double *pSpread)
{
    const ln_params *pP = pCall->pParams;
    uint64_t iRow = linear / pP->nNorm, k = linear % pP->nNorm;
    double x = pCall->aIn[0].aValue[linear];
    double w = pP->pWeight ? pP->pWeight[k] : 1.0, b = pP->pBias ? pP->pBias[k] : 0.0;
    double mu = pP->aMu[iRow], v = pP->aVar[iRow], r = pP->aR[iRow], d, y, err;
    parity_dtype out = pCall->outDtype;

    if (pCall->accDtype == PARITY_DT_F64 || out == PARITY_DT_F64 || !isfinite(x) ||
        !isfinite(w) || !isfinite(b) || !isfinite(mu) || !isfinite(r) ||
        !((double)pP->nNorm * (v + mu * mu) < parity_dtype_max_finite(pCall->accDtype)))
        return 0;
    d = (x - mu) - pP->aMuLo[iRow];
    y = d * r * w + b;
    err = 0x1p-32 * (fabs(d * r * w) + fabs(y) + fabs(b)) + 0x1p-80 * fabs(mu) * r * fabs(w);
    if (!isfinite(y) || parity_ulp_at(out, fabs(y) > err ? fabs(y) - err : 0.0) !=
                            parity_ulp_at(out, fabs(y) + err))
        return 0;
    *pRef = y;
    *pErr = err;
    *pBound = ln_bound(pCall, pP, iRow, x, w, b, y);
    *pSpread = 0.0;
    return 1;
}

/* ---- propagation (ops.h, xPropagate; graph.h) --------------------------------------
 * With yhat = P x / s (P the centering, s = sqrt(|P x|^2 / n + eps)), yhat_i's gradient is
 * (1/s)(P_ij - yhat_i yhat_j / n), so by the mean value theorem, for x' anywhere within
 * the radii r_j of x, |yhat_i' - yhat_i| <= (1/sMin)(r_i + mean r + |yhat_i|max q), with
 * sMin the least s on the box and q = (1/n) sum_j |yhat_j|max r_j. On the box the standard
 * deviation sigma' = |P x'| / sqrt n lies within sigma +- R (R = |r|_2 / sqrt n: |P d| <=
 * |d|), |x_j' - mu'| <= |x_j - mu| + r_j + mean r, and |yhat_j| <= min(sqrt n, that / sMin)
 * (sum yhat^2 <= n). y = yhat w + b then moves by |dyhat| (|w| + r_w) + |yhat|max r_w + r_b,
 * and ln_bound_at takes every magnitude at its largest (the variance at both ends). */

/* Row iRow's box figures, made once per row (elements come in increasing order). */
static void ln_row_box(const parity_op_call *pCall, ln_params *pP, const double *rad,
                       uint64_t iRow)
{
    const double *x = pCall->aIn[0].aValue + iRow * pP->nNorm;
    const double *r = rad + iRow * pP->nNorm;
    double n = (double)pP->nNorm, sumR = 0.0, sumR2 = 0.0, q = 0.0, sigma, R, sLo;
    uint64_t k;
    pP->propRow = iRow;
    pP->propBad = 0;
    pP->propMoved = 0;
    for (k = 0; k < pP->nNorm; k++) {
        if (!isfinite(x[k]) || !(r[k] < INFINITY)) pP->propBad = 1;
        if (r[k] != 0.0) pP->propMoved = 1;
        sumR += r[k];
        sumR2 += r[k] * r[k];
    }
    pP->propMeanR = parity_radius_up(sumR / n, 2.0 * n + 2.0);
    R = sqrt(parity_radius_up(sumR2 / n, 3.0 * n + 2.0)) * (1.0 + 0x1p-50);
    /* v is within 2^-50 of exact (ln_load); sigma's ends with room for that */
    sigma = sqrt(pP->aVar[iRow]);
    sLo = sigma * (1.0 - 0x1p-46) - R;
    pP->propVLo = sLo > 0.0 ? sLo * sLo * (1.0 - 0x1p-50) : 0.0;
    pP->propVHi = parity_radius_up((sigma * (1.0 + 0x1p-46) + R) * (sigma * (1.0 + 0x1p-46) + R), 4.0);
    pP->propSMin = sqrt(pP->propVLo + pP->eps) * (1.0 - 0x1p-50);
    for (k = 0; k < pP->nNorm; k++) {
        double yMax = parity_radius_up(fabs(x[k] - pP->aMu[iRow]) + r[k] + pP->propMeanR, 3.0) /
                      pP->propSMin;
        if (!(yMax <= sqrt(n))) yMax = sqrt(n) * (1.0 + 0x1p-50);
        q += yMax * r[k];
    }
    pP->propQ = parity_radius_up(q / n, 3.0 * n + 4.0);
}

static int ln_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                        mpfr_t ref, double *pRadius)
{
    ln_params *pP = pCall->pParams;
    uint64_t iRow = linear / pP->nNorm, k = linear % pP->nNorm;
    const double *rad = aRad[0];
    double x = pCall->aIn[0].aValue[linear], rx = rad[linear];
    double w = pP->pWeight ? pP->pWeight[k] : 1.0, b = pP->pBias ? pP->pBias[k] : 0.0;
    double rw = pP->pWeight ? aRad[1][k] : 0.0, rb = pP->pBias ? aRad[2][k] : 0.0;
    double n = (double)pP->nNorm, absMu, absD, yHat, dYHat, reach, yMax, bound;
    if (ln_element(pCall, linear, ref, pRadius) != 0) return -1;
    if (pP->propRow != iRow) ln_row_box(pCall, pP, rad, iRow);   /* once a row */
    if (!pP->propMoved && rw == 0.0 && rb == 0.0) return 0;
    if (pP->propBad || !mpfr_number_p(ref) || !isfinite(w) || !isfinite(b) ||
        !(rw < INFINITY) || !(rb < INFINITY) || pCall->overflowPossible)
        return parity_propagate_vacuous(pCall, pRadius);
    absMu = parity_radius_up(fabs(pP->aMu[iRow]) + pP->propMeanR, 1.0);
    absD = parity_radius_up(fabs(x - pP->aMu[iRow]) + rx + pP->propMeanR, 3.0);
    if (!(n * (pP->propVHi + absMu * absMu) < parity_dtype_max_finite(pCall->accDtype)))
        return parity_propagate_vacuous(pCall, pRadius);   /* a sum of squares may overflow */
    yHat = absD / pP->propSMin;
    if (!(yHat <= sqrt(n))) yHat = sqrt(n) * (1.0 + 0x1p-50);
    dYHat = parity_radius_up((rx + pP->propMeanR + yHat * pP->propQ) / pP->propSMin, 6.0);
    reach = parity_radius_up(dYHat * (fabs(w) + rw) + yHat * rw + rb, 6.0);
    yMax = parity_radius_up(fabs(mpfr_get_d(ref, MPFR_RNDA)) + reach, 1.0);
    bound = ln_bound_at(pCall, pP, absMu, pP->propVLo, pP->propVHi,
                        parity_radius_up(pP->aMeanAbs[iRow] + pP->propMeanR, 2.0), absD,
                        fabs(w) + rw, fabs(b) + rb, yMax);
    *pRadius = parity_radius_up(reach + parity_radius_up(bound, 40.0), 2.0);
    return 0;
}

/* generated cases set eps = 1e-5 (fuzz/cases/layout.c) */
static const parity_op_case_attr aLnCase[] = {
    { "eps", PARITY_ATTR_FLOAT, { 1e-5, NAN }, { NULL, NULL } },
};

const parity_op_def parity_op_layer_norm = {
    .zName = "layer_norm",
    .zModel = "derived in op_layer_norm.c: mean gamma_{n+1}, variance gamma_{2n+4}(v + mu^2), rsqrt 2 ulps, 3 roundings",
    .nInMin = 1, .nInMax = 3,
    .family = PARITY_FAMILY_NORM,
    .aCaseAttr = aLnCase, .nCaseAttr = 1,
    .xPrepare = ln_prepare, .xLoad = ln_load, .xElement = ln_element, .xFreeParams = ln_free,
    .xFast = ln_fast, .xPropagate = ln_propagate,
};
