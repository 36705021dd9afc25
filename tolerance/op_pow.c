/*
 * op_pow.c - pow(x, exponent) with a scalar exponent (aten.pow.Tensor_Scalar; x ** e and
 * x.pow(e) dispatch to it in torch 1.13 and 2.15), with torch's CPU kernel's special
 * cases (at::native pow_tensor_scalar_kernel, aten/src/ATen/native/cpu/PowKernel.cpp):
 *   e = 0.5: sqrt(x)        e = -0.5: 1 / sqrt(x) (rsqrt)     e = -1: 1 / x
 *   e = 2:   x * x          e = 3:    x * x * x                e = -2: 1 / (x * x)
 *   else:    std::pow(x, e) (Sleef_powf_u10 / Sleef_pow_u10 in the vectorised loop)
 * The exponent is rounded to x's dtype first, as torch casts the Scalar to scalar_t
 * (measured, torch 1.13 and 2.15: float32 x.pow(1/3) is within 0.58 ulps of
 * x^float(1/3) and 1.69 ulps from x^(1/3); bfloat16 and float16 x.pow(0.1) are within
 * 0.500 ulps of x^bf16(0.1), resp. x^f16(0.1), and up to 0.68 / 0.86 ulps from x^0.1), and
 * the cases are told apart by the rounded exponent. The reference is that function of the
 * captured x and the rounded exponent.
 *
 * Reference. mpfr_pow, correctly rounded to PARITY_REF_PREC bits, whose special values are
 * C99 Annex F.9.4.4's (IEEE 754-2019 9.2.1 pow): pow(x, 0) = 1 for every x (NaN too),
 * pow(-x, non-integer) = NaN, pow(+-0, e < 0) = +-Inf (the sign only for odd integer e),
 * pow(+-0, e > 0) = +-0 likewise, pow(-Inf, e) = -0 / -Inf for odd integer e, else +0 / +Inf.
 * These are torch's values for every exponent but two, where torch's sqrt and rsqrt decide
 * and C's pow differs (checked on torch 1.13 and 2.15): pow(-0, 0.5) = sqrt(-0) = -0 (C: +0),
 * pow(-Inf, 0.5) = NaN (C: +Inf), pow(-0, -0.5) = 1/sqrt(-0) = -Inf (C: +Inf), pow(-Inf,
 * -0.5) = NaN (C: +0). There the reference is torch's; a kernel calling std::pow for them
 * fails at -Inf (and at -0 only under --signed-zeros).
 *
 * Bound. u_acc, ulp and c_f = 4 as in op_unary.c (a primitive libm function is allowed c_f
 * ulps of acc; a relative error r u is at most r ulps). w is the coarser of acc and the
 * output dtype: torch's bfloat16 kernel (Vectorized<BFloat16>) rounds each step of x * x * x,
 * 1 / (x * x) and 1 / sqrt(x) to bfloat16 (measured on 200,000 log-spaced x: 0.98, 1.23
 * and, in 2.15, 0.95 bf16 ulps, beyond one rounding's 0.5), so an intermediate step may
 * round in w. With t the exact intermediate (x^2, or sqrt(x)), its rounding has relative
 * error r1 = c1 ulp_w(t) / |t| (c1 = 1/2 for a product; ulp_w clamps at the subnormal
 * spacing, so an underflowing x^2 is covered):
 *   e = 2, -1      one IEEE operation: A = 0.5 ulp_acc(|ref|).
 *   e = 0.5        A = 1 ulp_acc(|ref|), not 0.5: torch 2.15's float32 sqrt is not
 *                  correctly rounded (measured 0.749 ulps, 200,000 x log-spaced over
 *                  [e^-8, e^8]; torch 1.13's is, 0.500).
 *   e = 3          (t(1 + d1)) x rounded: |x| c1 ulp_w(t) + 0.5 ulp_acc(|ref| + that).
 *   e = -2         1 / (t (1 + d1)) = ref (1 - d1 + ...): |ref| r1 / (1 - r1), then the
 *                  reciprocal's 0.5 ulp_acc; where x * x overflows w the kernel returns 0
 *                  for a tiny nonzero ref: + |ref|.
 *   e = -0.5       sqrt within 1 ulp_w (as e = 0.5), c1 = 1: |ref| r1 / (1 - r1) + 0.5
 *                  ulp_acc, and at least rsqrt's 2 ulps of acc (op_unary.c: CUDA's rsqrtf).
 *   e = 0, 1       exact (1, x): A = 0.
 *   other integer n, |n| >= 4: std::pow within c_f, or a compiler's expansion into
 *                  multiplications (inductor's pow_recursive, x^n by squaring, 1 / x^|n|
 *                  for n < 0): a product of |n| factors in any order has relative error
 *                  gamma_{|n|-1} (Higham 2002, Lemma 3.1 and eq. 3.4), a reciprocal one
 *                  rounding more, k = |n| - 1 + [n < 0] roundings: k / (1 - k u) ulps;
 *                  A = max(c_f, k / (1 - k u)) ulp_acc(|ref|), + |ref| for n < 0 where
 *                  |x|^|n| overflows acc (the kernel's 1 / Inf = 0), and where it is
 *                  subnormal, |ref| r / (1 - r) with r = (|n| - 1) 0.5 ulp_acc(0) / |x|^|n|
 *                  (each product, none smaller than x^|n|, errs by half the subnormal
 *                  spacing at most; the reciprocal keeps the relative error).
 *   other e        std::pow: A = c_f ulp_acc(|ref|). glibc documents pow within 1 ulp and
 *                  SLEEF's u10 functions are 1.0-ulp; torch's kernel measured 0.58 ulps in
 *                  float32 on 1.13 and 2.15 (e = 1.5, 0.1, 2.5, -1.5, 7, 1/3, 200,000 x
 *                  log-spaced over [e^-8, e^8], random signs), so c_f leaves 6.9x.
 * Then the rounding to the output dtype (parity_unary_bound, op_unary_internal.h): bound =
 * A + 0.5 ulp_out(|ref| + A), the second term dropped when every acc value is an output
 * value. NaN and infinite references are judged by value (bound 0).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/op_unary_internal.h"
#include "tolerance/propagate.h"

#define C_FN PARITY_UNARY_C_FN
#define C_SQRT 1.0   /* torch 2.15's float32 sqrt, 0.749 ulps measured (file comment) */

static int pow_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                       char *zErr, size_t nErr)
{
    parity_elementwise_geometry *pG = &pCall->geom.elementwise;
    parity_dtype dt = pCall->aIn[0].dtype;
    char zWhy[PARITY_ERR_LEN];
    int found = 0;
    double e = NAN;
    if (parity_unary_shape_check(pCall, zErr, nErr) != 0) return -1;
    if (!parity_dtype_is_float(dt)) {
        snprintf(zErr, nErr, "pow: input dtype %s is not a float type", parity_dtype_name(dt));
        return -1;
    }
    if (parity_param_float(aAttr, nAttr, "exponent", &e, &found, zWhy, sizeof zWhy) != 0) {
        snprintf(zErr, nErr, "pow: %s", zWhy);
        return -1;
    }
    if (!found) {
        snprintf(zErr, nErr, "pow: no 'exponent' attribute (a tensor exponent, "
                 "pow.Tensor_Tensor, is not modelled)");
        return -1;
    }
    pG->exponent = parity_round_double_to_dtype(e, dt);   /* torch's cast to scalar_t */
    return 0;
}

/* torch's sqrt and 1/sqrt at the inputs where they differ from C's pow: -0 and -Inf (and
 * NaN and negative x, where both give NaN). 1 with *pY set when x is one of them. */
static int sqrt_special(double x, int recip, double *pY)
{
    if (x != x || x < 0.0) { *pY = NAN; return 1; }   /* -Inf too */
    if (x == 0.0) {
        *pY = recip ? copysign(INFINITY, x) : x;     /* sqrt(-0) = -0, 1/sqrt(-0) = -Inf */
        return 1;
    }
    if (isinf(x)) { *pY = recip ? 0.0 : x; return 1; }
    return 0;
}

/* |x|^|n| >= the largest finite value of dt (x finite, n >= 1), in binary64 logs. */
static int power_overflows(double x, double n, parity_dtype dt)
{
    return n * log2(fabs(x)) >= log2(parity_dtype_max_finite(dt));
}

/* f = p^e (mpfr_pow, rounded to f's precision); 0 when it is a number, else 1. */
static int pow_at(mpfr_ptr f, double p, double e)
{
    mpfr_t pm, em;
    mpfr_inits2(53, pm, em, (mpfr_ptr)0);
    mpfr_set_d(pm, p, MPFR_RNDN);
    mpfr_set_d(em, e, MPFR_RNDN);
    mpfr_pow(f, pm, em, MPFR_RNDN);
    mpfr_clears(pm, em, (mpfr_ptr)0);
    return !mpfr_number_p(f);
}

static int pow_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    const parity_dtype acc = pCall->accDtype, out = pCall->outDtype;
    const parity_dtype w = parity_unit_roundoff(out) > parity_unit_roundoff(acc) ? out : acc;
    const double e = pCall->geom.elementwise.exponent;
    double x = pCall->aIn[0].aValue[linear], y, a, t, r1;

    *pBound = 0.0;
    if ((e == 0.5 || e == -0.5) && sqrt_special(x, e < 0, &y)) {
        mpfr_set_d(ref, y, MPFR_RNDN);
        return 0;
    }
    pow_at(ref, x, e);
    if (mpfr_nan_p(ref) || mpfr_inf_p(ref) || !isfinite(x)) return 0;   /* judged by value */
    y = fabs(mpfr_get_d(ref, MPFR_RNDU));
    if (e == 0.0 || e == 1.0) {
        a = 0.0;
    } else if (e == 2.0 || e == -1.0) {
        a = 0.5 * parity_ulp_at(acc, y);
    } else if (e == 0.5) {
        a = C_SQRT * parity_ulp_at(acc, y);
    } else if (e == 3.0) {
        t = x * x;
        a = fabs(x) * 0.5 * parity_ulp_at(w, t);
        a += 0.5 * parity_ulp_at(acc, y + a);
    } else if (e == -2.0 || e == -0.5) {
        t = e == -2.0 ? x * x : sqrt(x);
        r1 = (e == -2.0 ? 0.5 : C_SQRT) * parity_ulp_at(w, t) / t;
        a = r1 < 0.5 ? y * r1 / (1.0 - r1) : y;
        a += 0.5 * parity_ulp_at(acc, y + a);
        if (e == -0.5 && a < 2.0 * parity_ulp_at(acc, y)) a = 2.0 * parity_ulp_at(acc, y);
        if (e == -2.0 && power_overflows(x, 2.0, w)) a += y;
    } else if (e == floor(e) && fabs(e) < 0x1p53) {
        double k = fabs(e) - 1.0 + (e < 0.0), u = parity_unit_roundoff(acc);
        double c = k * u < 0.5 ? k / (1.0 - k * u) : INFINITY;
        a = (c > C_FN ? c : C_FN) * parity_ulp_at(acc, y);
        if (e < 0.0 && power_overflows(x, -e, acc)) a += y;
        if (e < 0.0 && 1.0 / y < parity_dtype_smallest_normal(acc)) {
            /* x^|n| subnormal: each of the |n| - 1 products (all at least x^|n|) may err by
             * half the subnormal spacing, relative r to x^|n|, which 1 / x^|n| keeps */
            double r = (fabs(e) - 1.0) * 0.5 * parity_ulp_at(acc, 0.0) * y;
            a += r < 0.5 ? y * r / (1.0 - r) : INFINITY;
        }
    } else {
        a = C_FN * parity_ulp_at(acc, y);
    }
    *pBound = parity_unary_bound(pCall, ref, y, a);
    return 0;
}

/* ---- propagation (ops.h, xPropagate; graph.h) --------------------------------------
 * For x' within r of x the exact x'^e lies between the values at the box's ends and, for
 * an even positive e whose box holds 0, 0: x^e is monotone on each side of 0 (odd e, and a
 * non-integer e on x >= 0, on the whole box), so the reach is the largest distance from
 * the reference to those. A box that leaves pow's domain (a non-integer e below 0) or
 * holds a pole (e < 0 at 0) is vacuous. The kernel's own error on the box is the bound of
 * pow_element with |y| at its largest (every allowance grows with |y|), and for the cases
 * whose first step's relative error depends on t = x^2 or sqrt(x) (e = 3, -2, -0.5) that
 * step's ulp_w(t) / t taken at its largest on normal numbers, 2 u_w (a box reaching t's
 * subnormals or w's overflow is vacuous). This is the pow(x, 2) of torch's RMSNorm and
 * variance decompositions. */

/* The kernel's allowance A (file comment's cases) anywhere on a box where |x| <= xMax and
 * |x^e| <= yMax, or INFINITY. */
static double pow_allowance_box(const parity_op_call *pCall, double e, double xMin,
                                double xMax, double yMax)
{
    const parity_dtype acc = pCall->accDtype, out = pCall->outDtype;
    const parity_dtype w = parity_unit_roundoff(out) > parity_unit_roundoff(acc) ? out : acc;
    double uW = parity_unit_roundoff(w), a, r1;
    if (e == 0.0 || e == 1.0) return 0.0;
    if (e == 2.0 || e == -1.0) return 0.5 * parity_ulp_at(acc, yMax);
    if (e == 0.5) return C_SQRT * parity_ulp_at(acc, yMax);
    if (e == 3.0) {
        if (power_overflows(xMax, 2.0, w)) return INFINITY;
        a = xMax * 0.5 * parity_ulp_at(w, xMax * xMax);
        return a + 0.5 * parity_ulp_at(acc, yMax + a);
    }
    if (e == -2.0 || e == -0.5) {
        double tMin = e == -2.0 ? xMin * xMin : sqrt(xMin);
        if (!(tMin >= parity_dtype_smallest_normal(w)) || power_overflows(xMax, 2.0, w))
            return INFINITY;
        r1 = (e == -2.0 ? 0.5 : C_SQRT) * 2.0 * uW;
        a = yMax * r1 / (1.0 - r1);
        a += 0.5 * parity_ulp_at(acc, yMax + a);
        if (e == -0.5 && a < 2.0 * parity_ulp_at(acc, yMax)) a = 2.0 * parity_ulp_at(acc, yMax);
        return a;
    }
    if (e == floor(e) && fabs(e) < 0x1p53) {
        double k = fabs(e) - 1.0 + (e < 0.0), u = parity_unit_roundoff(acc);
        double c = k * u < 0.5 ? k / (1.0 - k * u) : INFINITY;
        if (e < 0.0 && (power_overflows(xMax, -e, acc) ||
                        !(pow(xMin, -e) >= 2.0 * parity_dtype_smallest_normal(acc))))
            return INFINITY;   /* a reciprocal of an overflowed or subnormal power */
        return (c > C_FN ? c : C_FN) * parity_ulp_at(acc, yMax);
    }
    return C_FN * parity_ulp_at(acc, yMax);
}

static int pow_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                         mpfr_t ref, double *pRadius)
{
    const double e = pCall->geom.elementwise.exponent;
    double x = pCall->aIn[0].aValue[linear], r = aRad[0][linear], lo, hi, aP[3], reach = 0.0;
    double yMax = 0.0, xMin, xMax, a, bound;
    int nP = 2, isInt = e == floor(e) && fabs(e) < 0x1p53, i;
    MPFR_DECL_INIT(f, PARITY_REF_PREC);
    if (pow_element(pCall, linear, ref, pRadius) != 0) return -1;
    if (r == 0.0) return 0;
    if (!isfinite(x) || !(r < INFINITY) || !mpfr_number_p(ref))
        return parity_propagate_vacuous(pCall, pRadius);
    parity_propagate_box(x, r, &lo, &hi);
    if ((!isInt && lo < 0.0) || (e < 0.0 && lo <= 0.0 && hi >= 0.0))
        return parity_propagate_vacuous(pCall, pRadius);   /* off the domain, or a pole */
    aP[0] = lo;
    aP[1] = hi;
    if (lo < 0.0 && hi > 0.0) aP[nP++] = 0.0;   /* even e's minimum; harmless otherwise */
    for (i = 0; i < nP; i++) {
        double d, m;
        if (pow_at(f, aP[i], e)) return parity_propagate_vacuous(pCall, pRadius);
        d = parity_radius_between(f, mpfr_get_d(ref, MPFR_RNDN));
        m = fabs(mpfr_get_d(f, MPFR_RNDA));
        if (!(d < INFINITY) || !(m < INFINITY)) return parity_propagate_vacuous(pCall, pRadius);
        if (d > reach) reach = d;
        if (m > yMax) yMax = m;
    }
    {   /* |f - ref| <= |f - rD| + |rD - ref|: the reference's rounding to binary64 */
        double rD = mpfr_get_d(ref, MPFR_RNDN);
        reach = parity_radius_up(reach + parity_radius_between(ref, rD), 1.0);
        if (fabs(rD) > yMax) yMax = fabs(rD);
    }
    xMax = fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi);
    xMin = lo > 0.0 ? lo : hi < 0.0 ? -hi : 0.0;
    a = pow_allowance_box(pCall, e, xMin, xMax, yMax);
    if (!(a < INFINITY)) return parity_propagate_vacuous(pCall, pRadius);
    bound = parity_unary_bound(pCall, ref, yMax, a);
    *pRadius = parity_radius_up(reach + bound, 2.0);
    return 0;
}

/* Generated cases: exponent -2 (1 / (x * x)) or 1.5 (std::pow) (fuzz/cases/layout.c). */
static const parity_op_case_attr aPowCase[] = {
    { "exponent", PARITY_ATTR_FLOAT, { -2.0, 1.5 }, { NULL, NULL } },
};

const parity_op_def parity_op_pow = {
    .zName = "pow",
    .zModel = "torch's cases of the exponent (rounded to x's dtype): 2, -1 0.5 ulp; 0.5 1 ulp; "
    "3, -2, -0.5 two roundings (the first maybe in the output dtype); other integers "
    "max(c_f, |n| - 1 + [n < 0]) ulps; else std::pow within c_f = 4 ulps; 0.5 ulp_out",
    .nInMin = 1, .nInMax = 1, .family = PARITY_FAMILY_UNARY,
    .aCaseAttr = aPowCase, .nCaseAttr = 1,
    .xPrepare = pow_prepare, .xElement = pow_element, .xPropagate = pow_propagate,
};
