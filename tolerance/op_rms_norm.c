/*
 * op_rms_norm.c - rms_norm(x, normalized_shape, weight?, eps): over the last
 * D = prod(normalized_shape) elements of each row,
 *     ms = sum x^2 / D,  r = 1 / sqrt(ms + eps),  y_i = x_i r w_i.
 * normalized_shape: the attribute, else the weight's shape, else the last dim. eps: the
 * attribute, else (as torch with eps=None) the machine epsilon of the input dtype,
 * torch.finfo(dtype).eps = 2 u (2^-23 for float32).
 *
 * Reference: sum x^2 exactly (parity_exact_dot), then ms, r and y at PARITY_REF_PREC bits.
 * Non-finite values follow IEEE through the formula, as torch's kernel does: a NaN in the
 * row makes it NaN; an infinity makes r = 0, so finite elements give 0 and the infinite
 * ones NaN (Inf * 0); a zero row with eps = 0 gives 0 * Inf = NaN.
 *
 * Bound (derived here; u = unit roundoff of acc_dtype, gamma_k = k u / (1 - k u), Higham
 * 2002, Lemma 3.1; n = D). Any summation order, one-pass or blocked:
 *   sum of squares: n squares (one rounding each) summed in any order, then a divide by n
 *              or a multiply by fl(1/n): ms^ = ms (1 + theta), |theta| <= gamma_{n+2}
 *              (gamma_{n+1} for a true divide; one more for the reciprocal), plus
 *              n half-subnormals of acc_dtype for squares that underflow (absolute, /n).
 *   + eps:     one rounding; relative error of t = ms + eps:
 *              eps_t = (gamma_{n+2} ms + u t + 0.5 subnormal_acc) / t
 *   rsqrt:     r^ = r (1 + rho), |rho| <= eps_t / 2 (1 + eps_t) + c_rs u, c_rs = 4
 *              (an rsqrt approximation within 2 ulps, or sqrt then divide: 2 roundings)
 *   output:    two more products, x r and (x r) w, in either order: 2 roundings, and
 *              products that underflow: 2 half-subnormals of acc_dtype:
 *   |y^_i - y_i| <= |y_i| ((1 + rho)(1 + u)^2 - 1) + subnormal_acc + 0.5 ulp_out(y_i)
 *               <= |y_i| (|rho| + 2u + 2 u |rho| + u^2) + subnormal_acc + 0.5 ulp_out(y_i).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/propagate.h"
#include "tolerance/mpref.h"
#include "tolerance/rows.h"
#include "formats/alloc.h"

#define C_RSQRT 4.0

typedef struct {
    parity_rows rows;
    const double *pWeight;
    double eps;
    double gammaN;                 /* gamma_{n+2}(u_acc), the same for every row */
    double *aMs;                   /* per row: ms (binary64 of the reference) */
    double *aRd;                   /* per row: 1 / sqrt(ms + eps) in binary64 (rms_fast) */
    mpfr_t *aR;                    /* per row: r at PARITY_REF_PREC */
    uint64_t nInit;
    /* Propagation (rms_propagate), for the row it last served (propRow; UINT64_MAX: none):
     * the box's least mean square and most, the least s = sqrt(ms + eps), q, and whether
     * the row holds a non-finite value or radius (propBad) or moves at all (propMoved). */
    uint64_t propRow;
    int propBad, propMoved;
    double propMsLo, propMsHi, propSMin, propQ;
} rms_params;

static void rms_free(void *p)
{
    rms_params *pP = p;
    uint64_t i;
    for (i = 0; i < pP->nInit; i++) mpfr_clear(pP->aR[i]);
    free(pP->aR);
    free(pP->aMs);
    free(pP->aRd);
    free(pP);
}

static int rms_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                       char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    parity_norm_geometry *pG = &pCall->geom.norm;
    rms_params *pP = parity_calloc(1, sizeof *pP);
    unsigned char aReduce[PARITY_MAX_RANK];

    if (!pP) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pCall->pParams = pP;
    pP->eps = 2.0 * parity_unit_roundoff(pX->dtype);
    if (parity_param_float(aAttr, nAttr, "eps", &pP->eps, NULL, zErr, nErr) != 0) return -1;
    if (!(pP->eps >= 0.0) || isinf(pP->eps)) {
        snprintf(zErr, nErr, "rms_norm: eps must be a finite number >= 0, got %g", pP->eps);
        return -1;
    }
    if (parity_rows_check_same("rms_norm", pX, pCall, zErr, nErr) != 0 ||
        parity_rows_parse_norm(pCall, aAttr, nAttr, pG, aReduce, zErr, nErr) != 0)
        return -1;
    pG->eps = pP->eps;
    pP->pWeight = pG->hasWeight ? pCall->aIn[1].aValue : NULL;
    pP->propRow = UINT64_MAX;
    parity_rows_init(&pP->rows, pX, aReduce);   /* trailing dims: row i = x[i n, (i+1) n) */
    return 0;
}

/* Every row's mean square and r = 1 / sqrt(ms + eps), from the values. */
static int rms_load(parity_op_call *pCall, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    rms_params *pP = pCall->pParams;
    uint64_t iRow, nn = pP->rows.n;

    pP->aMs = parity_calloc(pP->rows.nRow + 1, sizeof(double));
    pP->aR = parity_calloc(pP->rows.nRow + 1, sizeof(mpfr_t));
    pP->aRd = parity_calloc(pP->rows.nRow + 1, sizeof(double));
    if (!pP->aMs || !pP->aR || !pP->aRd) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pP->gammaN = parity_gamma((double)nn + 2.0, parity_unit_roundoff(pCall->accDtype));
    for (iRow = 0; iRow < pP->rows.nRow; iRow++) {
        const double *x = pX->aValue + iRow * nn;
        mpfr_init2(pP->aR[iRow], PARITY_REF_PREC);
        pP->nInit++;
        if (parity_exact_dot(pP->aR[iRow], x, 1, x, 1, nn, NULL, NULL) != 0) {
            snprintf(zErr, nErr, "out of memory");
            return -1;
        }
        mpfr_div_ui(pP->aR[iRow], pP->aR[iRow], (unsigned long)nn, MPFR_RNDN);
        pP->aMs[iRow] = mpfr_get_d(pP->aR[iRow], MPFR_RNDN);
        pP->aRd[iRow] = 1.0 / sqrt(pP->aMs[iRow] + pP->eps);
        mpfr_add_d(pP->aR[iRow], pP->aR[iRow], pP->eps, MPFR_RNDN);
        mpfr_rec_sqrt(pP->aR[iRow], pP->aR[iRow], MPFR_RNDN);   /* 1/sqrt(+0) = +Inf */
    }
    return 0;
}

/* The bound of an element of value y and weight w in row iRow (file comment); *pK (when
 * not NULL) is the factor of |y|. NaN-free: INFINITY where the row's figures give none. */
static double rms_bound(const parity_op_call *pCall, const rms_params *pP, uint64_t iRow,
                        double w, double y, double *pK)
{
    double u = parity_unit_roundoff(pCall->accDtype);
    double sub = parity_ulp_at(pCall->accDtype, 0.0), ms = pP->aMs[iRow], t, epsT, rho, k, b;

    t = ms + pP->eps;
    epsT = t > 0.0 ? (pP->gammaN * ms + u * t + 0.5 * sub) / t : INFINITY;
    rho = 0.5 * epsT * (1.0 + epsT) + C_RSQRT * u;
    k = rho + 2.0 * u + 2.0 * u * rho + u * u;
    if (pK) *pK = k;
    /* Underflow: x r (or x / sqrt(t)) may round on the subnormal grid before the multiply
     * by w, which scales that half-subnormal error by |w|. */
    b = fabs(y) * k + 0.5 * sub * (1.0 + fabs(w)) + sub + 0.5 * parity_ulp_at(pCall->outDtype, y);
    return b != b ? INFINITY : b;
}

static int rms_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    const rms_params *pP = pCall->pParams;
    uint64_t nn = pP->rows.n, iRow = linear / nn, k = linear % nn;
    double x = pCall->aIn[0].aValue[linear], w = pP->pWeight ? pP->pWeight[k] : 1.0;

    /* the sum of squares may overflow; its rsqrt is then 0 */
    parity_note_overflow(pCall, (double)nn * pP->aMs[iRow]);
    mpfr_set_d(ref, x, MPFR_RNDN);
    mpfr_mul(ref, ref, pP->aR[iRow], MPFR_RNDN);
    mpfr_mul_d(ref, ref, w, MPFR_RNDN);
    *pBound = 0.0;
    if (!mpfr_number_p(ref)) return 0;          /* the reference decides by value */
    if (!isfinite(pP->aMs[iRow])) {             /* r = 0: y = x * 0 * w exactly */
        *pBound = 0.5 * parity_ulp_at(pCall->outDtype, 0.0);
        return 0;
    }
    *pBound = rms_bound(pCall, pP, iRow, w, mpfr_get_d(ref, MPFR_RNDN), NULL);
    return 0;
}

/* Fast path (ops.h): y = x r w in binary64 with the load's r = 1 / sqrt(ms + eps). Errors,
 * u = 2^-53: ms is the exact mean square correctly rounded (u), the sum with eps u more,
 * which the square root halves, then sqrt and the division: r within 2.5 u relative, as long
 * as ms + eps is normal (t >= 2^-960 here); the two products 2u: |y^ - y| <= 5u |y| = 2^-50.7
 * |y|, with |x r| and |y| kept above 2^-960 (no underflow) or y = 0 exactly. Stated: 2^-32
 * |y|, which tests/test_fast_path.c measures against MPFR with a margin of 2^10. The bound
 * moves with |y| at slope K (spread err K) and the output's ulp, checked constant. Rows whose
 * sum of squares may overflow (overflowPossible) go to MPFR. */
static int rms_fast(const parity_op_call *pCall, uint64_t linear, double *pRef, double *pErr,
                    double *pBound, double *pSpread)
{
    const rms_params *pP = pCall->pParams;
    uint64_t nn = pP->rows.n, iRow = linear / nn, k = linear % nn;
    double x = pCall->aIn[0].aValue[linear], w = pP->pWeight ? pP->pWeight[k] : 1.0;
    double ms = pP->aMs[iRow], r = pP->aRd[iRow], xr, y, ay, err, K;
    parity_dtype out = pCall->outDtype;

    if (pCall->accDtype == PARITY_DT_F64 || out == PARITY_DT_F64 || !isfinite(x) ||
        !isfinite(w) || !((double)nn * ms < parity_dtype_max_finite(pCall->accDtype)) ||
        !(ms + pP->eps >= 0x1p-960))
        return 0;
    xr = x * r;
    y = xr * w;
    ay = fabs(y);
    err = 0x1p-32 * ay;
    if (y != 0.0 && (!(fabs(xr) >= 0x1p-960) || !(ay >= 0x1p-960) || !isfinite(y) ||
                     parity_ulp_at(out, ay - err) != parity_ulp_at(out, ay + err)))
        return 0;
    if (y == 0.0 && x != 0.0 && w != 0.0) return 0;   /* underflowed, not exact */
    *pRef = y;
    *pErr = err;
    *pBound = rms_bound(pCall, pP, iRow, w, y, &K);
    /* the bound's own binary64 evaluation: a few roundings, 2^-50 of it */
    *pSpread = err * K * (1.0 + 0x1p-50) + 0x1p-50 * *pBound;
    return 1;
}

/* ---- propagation (ops.h, xPropagate; graph.h) --------------------------------------
 * With yhat = x / s (s = sqrt(|x|^2 / n + eps)), yhat_i's gradient is
 * (1/s)(delta_ij - yhat_i yhat_j / n), layer_norm's without the centering, so by the mean
 * value theorem, for x' anywhere within the radii r_j of x,
 * |yhat_i' - yhat_i| <= (1/sMin)(r_i + |yhat_i|max q), with sMin the least s on the box
 * and q = (1/n) sum_j |yhat_j|max r_j. On the box the root mean square |x'| / sqrt n lies
 * within rms +- R (R = |r|_2 / sqrt n, the triangle inequality), and |yhat_j| <=
 * min(sqrt n, (|x_j| + r_j) / sMin) (sum yhat^2 <= n). y = yhat w then moves by
 * |dyhat| (|w| + r_w) + |yhat|max r_w, and the rounding bound is taken at the box's worst:
 * rms_bound's eps_t = (gamma ms + u t + sub/2) / t is at most gamma + u + sub / (2 tMin)
 * (ms <= t), with |y| at its largest. */

/* Row iRow's box figures, made once per row (elements come in increasing order). */
static void rms_row_box(const parity_op_call *pCall, rms_params *pP, const double *rad,
                        uint64_t iRow)
{
    const double *x = pCall->aIn[0].aValue + iRow * pP->rows.n;
    const double *r = rad + iRow * pP->rows.n;
    double n = (double)pP->rows.n, sumR2 = 0.0, q = 0.0, R, rms, lo, hi;
    uint64_t k;
    pP->propRow = iRow;
    pP->propBad = !isfinite(pP->aMs[iRow]);
    pP->propMoved = 0;
    for (k = 0; k < pP->rows.n; k++) {
        if (!isfinite(x[k]) || !(r[k] < INFINITY)) pP->propBad = 1;
        if (r[k] != 0.0) pP->propMoved = 1;
        sumR2 += r[k] * r[k];
    }
    R = sqrt(parity_radius_up(sumR2 / n, 2.0 * n + 2.0)) * (1.0 + 0x1p-50);
    /* ms is the exact mean square rounded once (rms_load): rms within 2^-52 of sqrt(ms) */
    rms = sqrt(pP->aMs[iRow]);
    lo = rms * (1.0 - 0x1p-48) - R;
    hi = parity_radius_up(rms * (1.0 + 0x1p-48) + R, 1.0);
    pP->propMsLo = lo > 0.0 ? lo * lo * (1.0 - 0x1p-50) : 0.0;
    pP->propMsHi = parity_radius_up(hi * hi, 1.0);
    pP->propSMin = sqrt(pP->propMsLo + pP->eps) * (1.0 - 0x1p-50);
    for (k = 0; k < pP->rows.n; k++) {
        double yMax = parity_radius_up(fabs(x[k]) + r[k], 1.0) / pP->propSMin;
        if (!(yMax <= sqrt(n))) yMax = sqrt(n) * (1.0 + 0x1p-50);
        q += yMax * r[k];
    }
    pP->propQ = parity_radius_up(q / n, 2.0 * n + 2.0);
}

/* rms_bound over the box: the largest eps_t the box allows, at |y| = yMax, weight wAbs. */
static double rms_bound_box(const parity_op_call *pCall, const rms_params *pP, double wAbs,
                            double yMax)
{
    double u = parity_unit_roundoff(pCall->accDtype);
    double sub = parity_ulp_at(pCall->accDtype, 0.0), tMin = pP->propMsLo + pP->eps;
    double epsT, rho, k, b;
    if (!(tMin > 0.0)) return INFINITY;
    epsT = parity_radius_up(pP->gammaN + u + 0.5 * sub / tMin, 3.0);
    rho = parity_radius_up(0.5 * epsT * (1.0 + epsT) + C_RSQRT * u, 3.0);
    k = parity_radius_up(rho + 2.0 * u + 2.0 * u * rho + u * u, 4.0);
    b = yMax * k + 0.5 * sub * (1.0 + wAbs) + sub + 0.5 * parity_ulp_at(pCall->outDtype, yMax);
    return b != b ? INFINITY : parity_radius_up(b, 4.0);
}

static int rms_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                         mpfr_t ref, double *pRadius)
{
    rms_params *pP = pCall->pParams;
    uint64_t iRow = linear / pP->rows.n, k = linear % pP->rows.n;
    const double *rad = aRad[0];
    double x = pCall->aIn[0].aValue[linear], rx = rad[linear];
    double w = pP->pWeight ? pP->pWeight[k] : 1.0, rw = pP->pWeight ? aRad[1][k] : 0.0;
    double n = (double)pP->rows.n, yHat, dYHat, reach, yMax, bound;
    if (rms_element(pCall, linear, ref, pRadius) != 0) return -1;
    if (pP->propRow != iRow) rms_row_box(pCall, pP, rad, iRow);   /* once a row */
    if (!pP->propMoved && rw == 0.0) return 0;
    if (pP->propBad || !mpfr_number_p(ref) || !isfinite(w) || !(rw < INFINITY) ||
        pCall->overflowPossible || !(pP->propSMin > 0.0) ||
        !(n * pP->propMsHi < parity_dtype_max_finite(pCall->accDtype)))
        return parity_propagate_vacuous(pCall, pRadius);   /* a sum of squares may overflow */
    yHat = parity_radius_up(fabs(x) + rx, 1.0) / pP->propSMin;
    if (!(yHat <= sqrt(n))) yHat = sqrt(n) * (1.0 + 0x1p-50);
    dYHat = parity_radius_up((rx + yHat * pP->propQ) / pP->propSMin, 4.0);
    reach = parity_radius_up(dYHat * (fabs(w) + rw) + yHat * rw, 4.0);
    yMax = parity_radius_up(fabs(mpfr_get_d(ref, MPFR_RNDA)) + reach, 1.0);
    bound = rms_bound_box(pCall, pP, fabs(w) + rw, yMax);
    *pRadius = parity_radius_up(reach + bound, 2.0);
    return 0;
}

/* generated cases set eps = 1e-6 (fuzz/cases/layout.c) */
static const parity_op_case_attr aRmsCase[] = {
    { "eps", PARITY_ATTR_FLOAT, { 1e-6, NAN }, { NULL, NULL } },
};

const parity_op_def parity_op_rms_norm = {
    .zName = "rms_norm",
    .zModel = "derived in op_rms_norm.c: y(|rho| + 2u), rho = eps_t/2 + 4u, eps_t = (gamma_{n+2} ms + u t)/t, t = ms + eps; 0.5 ulp out",
    .nInMin = 1, .nInMax = 2,
    .family = PARITY_FAMILY_NORM,
    .aCaseAttr = aRmsCase, .nCaseAttr = 1,
    .xPrepare = rms_prepare, .xLoad = rms_load, .xElement = rms_element,
    .xFreeParams = rms_free, .xFast = rms_fast, .xPropagate = rms_propagate,
};
