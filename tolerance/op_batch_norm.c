/*
 * op_batch_norm.c - batch_norm in inference: per channel c of x [N, C, spatial..],
 *     y = (x - m_c) / sqrt(v_c + eps) * w_c + b_c
 * with the running statistics m (running_mean) and v (running_var), weight w and bias b
 * (1 and 0 without them), eps (default 1e-5, torch's). Training mode (batch statistics,
 * and running statistics updated as a side effect) is refused: `training` = 1 is an error.
 *
 * Reference: the formula at PARITY_REF_PREC bits; NaN and infinities follow IEEE through it
 * (v + eps < 0 gives NaN, v + eps = 0 an infinite scale), as torch's kernel does.
 *
 * Bound (derived here; u = unit roundoff of acc_dtype, first order in u). With
 * a = w / sqrt(v + eps), the exact per-channel scale, the kernels in use compute either
 *   (A) torch's CPU inference kernel and oneDNN: alpha = w / sqrt(v + eps) (one rounding
 *       of v + eps, relative u, halved by the sqrt; sqrt and divide u each, or an rsqrt
 *       within C_RSQRT u and a multiply: alpha within (1/2 + C_RSQRT + 1) u = 5.5u),
 *       beta = b - m alpha (the product u more, the difference u |beta|), y = x alpha +
 *       beta (the product u more, the sum u |y|);
 *   (B) the formula as written, ((x - m) / sqrt(v + eps)) w + b: x - m u |x - m|, then the
 *       same 5.5u on the scale, the sum u |y|.
 * Either is within
 *   A = 8 u (|x a| + |m a|) + 2 u (|b| + |y|) + 2 sub_acc
 * (6.5u and 5.5u on the scaled terms, with room for an fma or one more rounding; sub_acc
 * the smallest subnormal of acc_dtype, for products that underflow), and then the rounding
 * of the acc value to the output dtype: bound = A + 0.5 ulp_out(|y| + A).
 * eps is taken as the kernel gets it: rounded to acc_dtype (torch's eps is a double that its
 * float kernel casts). Against the exact eps, the rounding is u eps absolute on t = v + eps,
 * relative u eps / |t|: unbounded where v cancels -eps, and there it even decides whether
 * t is negative (NaN) or positive (the fuzzer found both at once). With eps as the kernel
 * has it, t = fl(v + eps) keeps the sign of the exact sum (a sum of two floats rounds to 0
 * only when it is 0) and its rounding is the relative u in the 8u.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/propagate.h"
#include "formats/alloc.h"

#define C_RSQRT 4.0
#define C_SCALED 8.0
#define C_SUM 2.0
#define BN_DEFAULT_EPS 1e-5

static int bn_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                      char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    parity_batch_norm_geometry *pG = &pCall->geom.batchNorm;
    int64_t training = 0;
    size_t k;
    int d;

    if (pCall->nIn != 3 && pCall->nIn != 5) {
        snprintf(zErr, nErr, "batch_norm: 3 inputs (x, running_mean, running_var) or 5 (x, "
                 "weight, bias, running_mean, running_var), got %zu", pCall->nIn);
        return -1;
    }
    if (parity_param_int(aAttr, nAttr, "training", &training, NULL, zErr, nErr) != 0) return -1;
    if (training != 0) {
        snprintf(zErr, nErr, "batch_norm: training mode (batch statistics) has no model; "
                 "capture in eval mode");
        return -1;
    }
    pG->eps = BN_DEFAULT_EPS;
    if (parity_param_float(aAttr, nAttr, "eps", &pG->eps, NULL, zErr, nErr) != 0) return -1;
    if (!(pG->eps >= 0.0) || isinf(pG->eps)) {
        snprintf(zErr, nErr, "batch_norm: eps must be a finite number >= 0, got %g", pG->eps);
        return -1;
    }
    if (pX->rank < 2) {
        snprintf(zErr, nErr, "batch_norm: x must have rank >= 2 ([N, C, ...]), got %d", pX->rank);
        return -1;
    }
    pG->N = pX->aDim[0];
    pG->C = pX->aDim[1];
    pG->S = 1;
    for (d = 2; d < pX->rank; d++) pG->S *= pX->aDim[d];
    pG->hasAffine = pCall->nIn == 5;
    for (k = 1; k < pCall->nIn; k++) {
        const parity_operand *pP = &pCall->aIn[k];
        if (pP->rank != 1 || pP->aDim[0] != pG->C) {
            snprintf(zErr, nErr, "batch_norm: input %zu must be [%llu] (one value a channel)",
                     k, (unsigned long long)pG->C);
            return -1;
        }
    }
    if (!parity_op_take_out(pCall, pX->rank, pX->aDim)) {
        snprintf(zErr, nErr, "batch_norm: the output shape must be x's");
        return -1;
    }
    return 0;
}

static int bn_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    const parity_batch_norm_geometry *pG = &pCall->geom.batchNorm;
    uint64_t c = (linear / pG->S) % pG->C;
    size_t iMean = pG->hasAffine ? 3 : 1;
    double x = pCall->aIn[0].aValue[linear];
    double w = pG->hasAffine ? pCall->aIn[1].aValue[c] : 1.0;
    double b = pG->hasAffine ? pCall->aIn[2].aValue[c] : 0.0;
    double m = pCall->aIn[iMean].aValue[c], v = pCall->aIn[iMean + 1].aValue[c];
    double u = parity_unit_roundoff(pCall->accDtype), sub = parity_ulp_at(pCall->accDtype, 0.0);
    double a, y, A, eps = parity_dtype_round(pCall->accDtype, pG->eps);
    mpfr_t s;

    mpfr_init2(s, PARITY_REF_PREC);
    mpfr_set_d(s, v, MPFR_RNDN);
    mpfr_add_d(s, s, eps, MPFR_RNDN);
    mpfr_sqrt(s, s, MPFR_RNDN);                 /* NaN below 0 */
    mpfr_set_d(ref, x, MPFR_RNDN);
    mpfr_sub_d(ref, ref, m, MPFR_RNDN);
    mpfr_div(ref, ref, s, MPFR_RNDN);
    mpfr_mul_d(ref, ref, w, MPFR_RNDN);
    mpfr_add_d(ref, ref, b, MPFR_RNDN);
    mpfr_d_div(s, w, s, MPFR_RNDN);             /* a = w / sqrt(v + eps) */
    a = fabs(mpfr_get_d(s, MPFR_RNDN));
    mpfr_clear(s);
    /* x alpha or m alpha may overflow acc_dtype in torch's form where (x - m) alpha does
     * not (an infinite x against a huge mean): an order the model allows, so the infinity
     * or NaN it gives is accepted there, before the reference decides by value */
    parity_note_overflow(pCall, fabs(x) * a + fabs(m) * a + fabs(b));
    *pBound = 0.0;
    if (!mpfr_number_p(ref)) return 0;          /* the reference decides by value */
    y = fabs(mpfr_get_d(ref, MPFR_RNDN));
    A = C_SCALED * u * (fabs(x) * a + fabs(m) * a) + C_SUM * u * (fabs(b) + y) + 2.0 * sub;
    *pBound = A + 0.5 * parity_ulp_at(pCall->outDtype, y + A);
    if (*pBound != *pBound) *pBound = INFINITY;
    return 0;
}

/* Propagation (ops.h, xPropagate): in inference batch_norm is affine in x per channel,
 * y = a (x - m) + b with a = w / sqrt(v + eps), so x' within rx moves the exact y by
 * |a| rx, and bn_element's allowance, which grows with |x| and |y|, is taken at
 * |x| + rx and |y| + that reach. The running statistics, weight and bias are parameters:
 * a radius on any of them (a statistic computed in the region) is vacuous. */
static int bn_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                        mpfr_t ref, double *pRadius)
{
    const parity_batch_norm_geometry *pG = &pCall->geom.batchNorm;
    uint64_t c = (linear / pG->S) % pG->C;
    size_t iMean = pG->hasAffine ? 3 : 1, k;
    double x = pCall->aIn[0].aValue[linear], rx = aRad[0][linear];
    double w = pG->hasAffine ? pCall->aIn[1].aValue[c] : 1.0;
    double b = pG->hasAffine ? pCall->aIn[2].aValue[c] : 0.0;
    double m = pCall->aIn[iMean].aValue[c], v = pCall->aIn[iMean + 1].aValue[c];
    double u = parity_unit_roundoff(pCall->accDtype), sub = parity_ulp_at(pCall->accDtype, 0.0);
    double eps = parity_dtype_round(pCall->accDtype, pG->eps), t, a, reach, xMax, yMax, A;
    if (bn_element(pCall, linear, ref, pRadius) != 0) return -1;
    for (k = 1; k < pCall->nIn; k++)
        if (aRad[k][c] != 0.0) return parity_propagate_vacuous(pCall, pRadius);
    if (rx == 0.0) return 0;
    t = v + eps;
    if (!isfinite(x) || !(rx < INFINITY) || !mpfr_number_p(ref) || !isfinite(w) ||
        !isfinite(b) || !isfinite(m) || !(t > 0.0) || pCall->overflowPossible)
        return parity_propagate_vacuous(pCall, pRadius);
    /* a in binary64: v + eps, sqrt and the divide, 3 roundings, 2^-50 of room */
    a = fabs(w) / sqrt(t) * (1.0 + 0x1p-50) / (1.0 - 0x1p-50);
    reach = parity_radius_up(a * rx, 1.0);
    xMax = parity_radius_up(fabs(x) + rx, 1.0);
    yMax = parity_radius_up(fabs(mpfr_get_d(ref, MPFR_RNDA)) + reach, 1.0);
    if (!(xMax * a + fabs(m) * a + fabs(b) < parity_dtype_max_finite(pCall->accDtype)))
        return parity_propagate_vacuous(pCall, pRadius);   /* x alpha may overflow */
    A = C_SCALED * u * (xMax * a + fabs(m) * a) + C_SUM * u * (fabs(b) + yMax) + 2.0 * sub;
    *pRadius = parity_radius_up(reach + A + 0.5 * parity_ulp_at(pCall->outDtype, yMax + A), 8.0);
    return 0;
}

/* generated cases set eps = 1e-5 (torch's default) */
static const parity_op_case_attr aBnCase[] = {
    { "eps", PARITY_ATTR_FLOAT, { 1e-5, 1e-3 }, { NULL, NULL } },
};

const parity_op_def parity_op_batch_norm = {
    .zName = "batch_norm",
    .zModel = "inference, derived in op_batch_norm.c: 8u (|x a| + |m a|) + 2u (|b| + |y|), "
              "a = w / sqrt(v + eps) (x alpha + beta or the formula as written); 0.5 ulp out",
    .nInMin = 3, .nInMax = 5,
    .family = PARITY_FAMILY_BATCH_NORM,
    .aCaseAttr = aBnCase, .nCaseAttr = 1,
    .xPrepare = bn_prepare, .xElement = bn_element, .xPropagate = bn_propagate,
};
