/*
 * op_unary_param.c - the unary elementwise ops with float attributes: softplus(x; beta = 1,
 * threshold = 20) and elu(x; alpha = 1), with torch.nn.functional's semantics. The element
 * machinery (shape check, rounding to the output dtype, the softplus reference) is
 * op_unary.c's (op_unary_internal.h); what the attributes change, the special values and
 * the allowance, and both ops' propagation through fused regions (their reach and largest
 * allowance over a box, at the end), is here.
 *
 * Semantics (torch's CPU and CUDA kernels, at::native softplus_kernel and elu_kernel):
 *   softplus(x) = x                           if beta x > threshold
 *               = log1p(exp(beta x)) / beta   otherwise
 *   elu(x)      = x                           if x > 0
 *               = alpha (exp(x) - 1)          otherwise
 * beta must be finite and nonzero (torch also takes a negative beta), threshold and alpha
 * finite. elu's `scale` and `input_scale` (selu's parameters) are not modelled: either
 * attribute with a value other than 1 is refused.
 * The threshold belongs to softplus's definition here: the reference switches to x exactly
 * where torch does. oneDNN 2.6's eltwise_soft_relu has no beta and no threshold: it computes
 * log(1 + exp(x)) for every x up to log(FLT_MAX). Past the threshold the two differ by
 * log1p(exp(-x)) < exp(-20) = 2.1e-9, while one ulp of x > 20 is 2^-19 = 1.9e-6 in float32
 * and 2^-3 = 0.125 in bfloat16, and the allowance below (the same on both branches) exceeds
 * that formula's own error there by more than c_f ulps of x: the same op judges both. In
 * float64 (one ulp of 20 is 3.6e-15) the threshold is visible, and the reference follows
 * torch.
 *
 * Reference. softplus: z = beta x exactly (106 bits), compared with threshold exactly; then
 * x, or parity_unary_softplus(z) (max(z, 0) + log1p(exp(-|z|)), free of cancellation and of
 * overflow) carried at PARITY_REF_PREC + 64 bits and divided by beta with one rounding.
 * elu: x, or alpha expm1(x) (mpfr_expm1 at +64 bits, no cancellation, then one rounding).
 * Special inputs, as torch computes them: NaN gives NaN (the comparisons are false and
 * exp(NaN) is NaN). softplus(+-Inf) is x where beta x > threshold, else log1p(exp(-Inf))/beta
 * = 0/beta: with beta > 0, softplus(-Inf) = +0 and softplus(+Inf) = +Inf; softplus(+-0) =
 * log(2)/beta like any finite input. elu(+Inf) = +Inf, elu(-Inf) = -alpha, and elu(+-0) =
 * (exp(0) - 1) alpha = +0 alpha, +0 for alpha > 0 (torch 1.13 and 2.x return +0 for -0 too;
 * an expm1 kernel returns -0 there, which only --signed-zeros tells apart).
 *
 * Bound. u, ulp and c_f = 4 as in op_unary.c (a primitive exp, expm1, log, log1p or tanh is
 * allowed c_f ulps of acc; a relative error of r u is at most r ulps); first order in u.
 *   softplus, torch's kernel z = fl(x beta'), log1p(exp(z)) / beta' (beta' is beta rounded
 *     to acc, as torch casts it): exp(z) has relative error 2 c_f u; log1p amplifies the
 *     relative error of its argument e by e / ((1 + e) log1p(e)) <= 1 and adds c_f ulps:
 *     s = softplus(z) is within 3 c_f ulps, counted at s's own size and divided by |beta|
 *     (ulp(s)/|beta|, not ulp(s/beta): with |beta| < 1 a subnormal s becomes a normal result
 *     that keeps s's absolute error).
 *     With beta != 1: dividing by beta' instead of beta (relative u) and rounding the
 *     quotient (u/2) add 2 ulps of the result, and z's own error e_z = |x| |beta - beta'| +
 *     0.5 ulp(|x beta'|) (without the second term where x beta' is exact, as for beta a
 *     power of two) moves s by at most sigmoid(z + e_z) e_z (softplus' = sigmoid, which
 *     increases), divided by |beta|.
 *     Near the threshold the kernel's comparison fl(x beta') > fl(threshold) may go the
 *     other way: where |z - threshold| <= e_z + |threshold - fl(threshold)| the distance
 *     between the branches, |x - s/beta| = log1p(exp(-z))/|beta|, is added.
 *     Policy for z < 0: torch's log1p(exp(z)) keeps the tiny result's relative accuracy,
 *     and so does any stable formula (max(z, 0) + log1p(exp(-|z|)), jax's logaddexp); the
 *     model allows no more. Two formulas of real kernels lose it and are reported, not
 *     absorbed: oneDNN 2.6's soft_relu JIT reduces z = n ln2 + r and returns n ln2 +
 *     log(2^-n + exp(r)), two terms of size |z| that cancel (oneDNN 2.6.3 returns -2^-19 =
 *     -1.9e-6 for softplus(-20) = 2.1e-9: a negative softplus, which breaks the positivity
 *     callers use softplus for, e.g. a standard deviation that then goes through a log),
 *     and log(1 + exp(z)), which rounds 1 + exp(z) to 1 for z < -16.6 and returns 0.
 *     An allowance of (c_f + 2) ulp(|z|)/|beta| would absorb both; it is left out on purpose
 *     (README, "Findings in oneDNN 2.6.3").
 *     An exp(z) that overflows acc (z > 88.7 in float32, possible only with a threshold
 *     above that) returns Inf where the reference is finite: outside the model, a failure.
 *   elu, torch's kernel (exp(x) - 1) alpha' (alpha' = alpha rounded to acc) or alpha'
 *     expm1(x) (oneDNN's reference kernel): for x <= 0, expm1 within c_f ulps, alpha'
 *     relative u, the product u/2: (c_f + 2) ulps of the result. exp(x) - 1 cancels near 0:
 *     exp's c_f ulps are absolute at exp(x)'s size, |alpha| c_f ulp(exp(x)), up to |alpha|
 *     c_f ulp(1) where the result is tiny (torch's own float32 kernel returns elu(-1e-7) =
 *     -1.19e-7, and 0 for -3e-8 < x < 0); the subtraction is exact (Sterbenz) for x >= -ln 2
 *     and costs half an ulp of the result below, inside the 2. So for x <= 0
 *       A = (c_f + 2) ulp(|ref|) + |alpha| c_f ulp(exp(x)),
 *     and for x > 0, A = 0 (torch returns x times scale = 1: exact).
 * Then the rounding to the output dtype (parity_unary_bound): bound = A + 0.5 ulp_out(|ref|
 * + A), the second term dropped when every acc value is an output value.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/op_unary_internal.h"

#define C_FN PARITY_UNARY_C_FN

/* Reads float attribute zName of op zOp into *pValue (dflt when absent); it must be finite,
 * and nonzero when nonZero. 0, or -1 with zErr. */
static int param_finite(const parity_attr *aAttr, size_t nAttr, const char *zOp,
                        const char *zName, double dflt, int nonZero, double *pValue,
                        char *zErr, size_t nErr)
{
    char zWhy[PARITY_ERR_LEN];
    *pValue = dflt;
    if (parity_param_float(aAttr, nAttr, zName, pValue, NULL, zWhy, sizeof zWhy) != 0) {
        snprintf(zErr, nErr, "%s: %s", zOp, zWhy);
        return -1;
    }
    if (!isfinite(*pValue) || (nonZero && *pValue == 0.0)) {
        snprintf(zErr, nErr, "%s: attribute '%s' must be finite%s, got %g", zOp, zName,
                 nonZero ? " and nonzero" : "", *pValue);
        return -1;
    }
    return 0;
}

static int param_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                         char *zErr, size_t nErr)
{
    static const char *const azScale[] = { "scale", "input_scale" };
    const char *zOp = pCall->pDef->zName;
    parity_elementwise_geometry *pP = &pCall->geom.elementwise;   /* beta, threshold, alpha */
    size_t i;
    if (parity_unary_shape_check(pCall, zErr, nErr) != 0) return -1;
    if (pCall->pDef == &parity_op_softplus)
        return param_finite(aAttr, nAttr, zOp, "beta", 1.0, 1, &pP->beta, zErr, nErr) != 0
            || param_finite(aAttr, nAttr, zOp, "threshold", 20.0, 0, &pP->threshold, zErr,
                            nErr) != 0 ? -1 : 0;
    if (param_finite(aAttr, nAttr, zOp, "alpha", 1.0, 0, &pP->alpha, zErr, nErr) != 0)
        return -1;
    for (i = 0; i < sizeof azScale / sizeof azScale[0]; i++) {
        double v;
        if (param_finite(aAttr, nAttr, zOp, azScale[i], 1.0, 0, &v, zErr, nErr) != 0) return -1;
        if (v != 1.0) {
            snprintf(zErr, nErr, "elu: attribute '%s' is %g; only 1 is modelled (torch.nn."
                     "functional.elu)", azScale[i], v);
            return -1;
        }
    }
    return 0;
}

/* softplus's reference at a finite x: z = beta x exactly (106 bits), compared with the
 * threshold t exactly; x past it, else softplus(z) / beta rounded once into ref. */
static void softplus_ref(mpfr_ptr ref, double x, double beta, double t)
{
    mpfr_t zm;
    mpfr_init2(zm, 2 * 53);
    mpfr_set_d(zm, x, MPFR_RNDN);
    mpfr_mul_d(zm, zm, beta, MPFR_RNDN);          /* exact */
    if (mpfr_cmp_d(zm, t) > 0) {
        mpfr_set_d(ref, x, MPFR_RNDN);
    } else {
        mpfr_t s;
        mpfr_init2(s, PARITY_REF_PREC + PARITY_UNARY_WORK_EXTRA);
        parity_unary_softplus(s, zm, MPFR_RNDN);
        mpfr_div_d(ref, s, beta, MPFR_RNDN);
        mpfr_clear(s);
    }
    mpfr_clear(zm);
}

/* elu's reference at a finite nonzero x <= 0: alpha expm1(x), rounded once into ref. */
static void elu_ref_negative(mpfr_ptr ref, double x, double alpha)
{
    mpfr_t m;
    mpfr_init2(m, PARITY_REF_PREC + PARITY_UNARY_WORK_EXTRA);
    mpfr_set_d(m, x, MPFR_RNDN);
    mpfr_expm1(m, m, MPFR_RNDN);
    mpfr_mul_d(ref, m, alpha, MPFR_RNDN);
    mpfr_clear(m);
}

static int softplus_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref,
                            double *pBound)
{
    const parity_elementwise_geometry *pP = &pCall->geom.elementwise;
    const parity_dtype acc = pCall->accDtype;
    const double beta = pP->beta, t = pP->threshold, absBeta = fabs(beta);
    double x = pCall->aIn[0].aValue[linear], z = beta * x, y, a, eZ = 0.0, eT;

    *pBound = 0.0;
    if (x != x) {
        mpfr_set_nan(ref);
        return 0;
    }
    if (isinf(x)) {           /* x, or log1p(exp(-Inf)) / beta = 0 / beta: exact */
        mpfr_set_d(ref, z > t ? x : 0.0 / beta, MPFR_RNDN);
        return 0;
    }
    softplus_ref(ref, x, beta, t);
    y = fabs(mpfr_get_d(ref, MPFR_RNDA));

    a = 3.0 * C_FN * parity_ulp_at(acc, absBeta * y) / absBeta;
    if (beta != 1.0) {
        double b1 = parity_round_double_to_dtype(beta, acc), p = x * b1;
        int exact = fma(x, b1, -p) == 0.0 && parity_round_double_to_dtype(p, acc) == p;
        eZ = fabs(x) * fabs(beta - b1) + (exact ? 0.0 : 0.5 * parity_ulp_at(acc, p));
        a += 2.0 * parity_ulp_at(acc, y) + eZ / (1.0 + exp(-(z + eZ))) / absBeta;
    }
    eT = fabs(t - parity_round_double_to_dtype(t, acc));
    if (fabs(z - t) <= eZ + eT + 0x1p-50 * (fabs(z) + fabs(t)))   /* the other branch */
        a += parity_unary_softplus_d(-z) / absBeta;
    *pBound = parity_unary_bound(pCall, ref, y, a);
    return 0;
}

static int elu_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    const double alpha = pCall->geom.elementwise.alpha;
    const parity_dtype acc = pCall->accDtype;
    double x = pCall->aIn[0].aValue[linear], y, a;

    *pBound = 0.0;
    if (x != x) {
        mpfr_set_nan(ref);
        return 0;
    }
    if (x > 0.0) {            /* x times scale 1: exact */
        mpfr_set_d(ref, x, MPFR_RNDN);
        if (!isinf(x)) *pBound = parity_unary_bound(pCall, ref, x, 0.0);
        return 0;
    }
    if (x == 0.0 || isinf(x)) {   /* (exp(x) - 1) alpha: +0 alpha at +-0, -alpha at -Inf */
        mpfr_set_d(ref, x == 0.0 ? 0.0 * alpha : -alpha, MPFR_RNDN);
    } else {
        elu_ref_negative(ref, x, alpha);
    }
    y = fabs(mpfr_get_d(ref, MPFR_RNDA));
    a = (C_FN + 2.0) * parity_ulp_at(acc, y) + fabs(alpha) * C_FN * parity_ulp_at(acc, exp(x));
    *pBound = parity_unary_bound(pCall, ref, y, a);
    return 0;
}

/* ---- propagation (ops.h, xPropagate; graph.h) ------------------------------------- */

/* Widens [*pLo, *pHi] to hold v (finite), v's binary64 value widened by one ulp each way
 * (the references are within 2^-120 relative, mpref.h). */
static void hull_add(mpfr_srcptr v, double *pLo, double *pHi)
{
    double d = mpfr_get_d(v, MPFR_RNDN);
    *pLo = fmin(*pLo, nextafter(d, -INFINITY));
    *pHi = fmax(*pHi, nextafter(d, INFINITY));
}

/* softplus over [lo, hi]. Each branch increases in x (the identity, and softplus(beta x)
 * / beta, whose slope is sigmoid(beta x) > 0, for either sign of beta), and where the box
 * holds the point x_t = t/beta where the branch changes the function drops there by
 * log1p(exp(-t))/|beta|: the hull of both ends and of both branches' values at x_t (t/beta
 * and softplus(t)/beta) is the reach. The allowance (softplus_element's terms) at its
 * largest: ulps at the reach's largest magnitude, eZ at the box's largest |x| with the
 * sigmoid factor taken as 1, and the other branch's distance where some z of the box is
 * within the comparison's margin of t (softplus(-z) falls with z, so it is largest at
 * z = t - margin). That allowance is at least the drop, so the drop's two values in the
 * reach add nothing a test can see; they keep the reach the function's own. A box where
 * the kernel's exp(beta x) may overflow acc is refused. */
static int softplus_box(const parity_op_call *pCall, double lo, double hi, double *pLo,
                        double *pHi, double *pA)
{
    const parity_elementwise_geometry *pP = &pCall->geom.elementwise;
    const parity_dtype acc = pCall->accDtype;
    const double beta = pP->beta, t = pP->threshold, absBeta = fabs(beta);
    /* z = beta x over the box, widened for binary64's rounding of the products */
    const double zLo = nextafter(fmin(beta * lo, beta * hi), -INFINITY);
    const double zHi = nextafter(fmax(beta * lo, beta * hi), INFINITY);
    double xMax = fmax(fabs(lo), fabs(hi)), yMax, eZ = 0.0, eT, margin, a;
    mpfr_t v;

    if (!isfinite(zLo) || !isfinite(zHi) ||
        fmin(zHi, t) > log(parity_dtype_max_finite(acc)) * (1.0 - 1e-6))
        return -1;
    *pLo = INFINITY;
    *pHi = -INFINITY;
    mpfr_init2(v, PARITY_REF_PREC);
    softplus_ref(v, lo, beta, t);
    hull_add(v, pLo, pHi);
    softplus_ref(v, hi, beta, t);
    hull_add(v, pLo, pHi);
    if (zLo <= t && t <= zHi) {
        mpfr_set_d(v, t, MPFR_RNDN);
        mpfr_div_d(v, v, beta, MPFR_RNDN);                  /* the identity's end, t/beta */
        hull_add(v, pLo, pHi);
        {
            mpfr_t s;
            mpfr_init2(s, PARITY_REF_PREC + PARITY_UNARY_WORK_EXTRA);
            mpfr_set_d(v, t, MPFR_RNDN);
            parity_unary_softplus(s, v, MPFR_RNDN);
            mpfr_div_d(v, s, beta, MPFR_RNDN);              /* the other's, softplus(t)/beta */
            mpfr_clear(s);
        }
        hull_add(v, pLo, pHi);
    }
    mpfr_clear(v);
    yMax = fmax(fabs(*pLo), fabs(*pHi));

    /* the ulps are a step function of binary64 products a few ulps off: nudged up first */
    a = 3.0 * C_FN * parity_ulp_at(acc, absBeta * yMax * (1.0 + 0x1p-40)) / absBeta;
    if (beta != 1.0) {
        double b1 = parity_round_double_to_dtype(beta, acc);
        eZ = xMax * fabs(beta - b1) + 0.5 * parity_ulp_at(acc, fabs(b1) * xMax * (1.0 + 0x1p-40));
        a += 2.0 * parity_ulp_at(acc, yMax) + eZ / absBeta;
    }
    eT = fabs(t - parity_round_double_to_dtype(t, acc));
    margin = eZ + eT + 0x1p-50 * (fmax(fabs(zLo), fabs(zHi)) + fabs(t));
    if (zLo - margin <= t && t <= zHi + margin)
        a += parity_unary_softplus_d(margin - t) / absBeta;
    *pA = a;
    return 0;
}

/* elu over [lo, hi]: x above 0, alpha expm1(x) at and below it, each monotone (the second
 * falls for alpha < 0) and both 0 at 0: the hull of both ends and, where the box holds 0,
 * of 0. The allowance is elu_element's for x <= 0 at its largest (ulps at the reach's
 * largest magnitude, exp(x) at the box's largest x <= 0), 0 where the box is above 0. */
static int elu_box(const parity_op_call *pCall, double lo, double hi, double *pLo,
                   double *pHi, double *pA)
{
    const double alpha = pCall->geom.elementwise.alpha, aEnd[2] = { lo, hi };
    const parity_dtype acc = pCall->accDtype;
    mpfr_t v;
    int i;

    *pLo = INFINITY;
    *pHi = -INFINITY;
    mpfr_init2(v, PARITY_REF_PREC);
    for (i = 0; i < 2; i++) {
        if (aEnd[i] < 0.0) elu_ref_negative(v, aEnd[i], alpha);
        else mpfr_set_d(v, aEnd[i], MPFR_RNDN);                 /* x, and 0 at 0 */
        hull_add(v, pLo, pHi);
    }
    mpfr_clear(v);
    if (lo <= 0.0 && hi >= 0.0) {
        *pLo = fmin(*pLo, 0.0);
        *pHi = fmax(*pHi, 0.0);
    }
    *pA = lo > 0.0 ? 0.0
        : (C_FN + 2.0) * parity_ulp_at(acc, fmax(fabs(*pLo), fabs(*pHi)))
          + fabs(alpha) * C_FN * parity_ulp_at(acc, exp(fmin(hi, 0.0)) * (1.0 + 0x1p-40));
    return 0;
}

static int softplus_propagate(parity_op_call *pCall, const double *const *aRad,
                              uint64_t linear, mpfr_t ref, double *pRadius)
{
    return parity_unary_propagate(pCall, aRad, linear, ref, pRadius, softplus_box);
}

static int elu_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                         mpfr_t ref, double *pRadius)
{
    return parity_unary_propagate(pCall, aRad, linear, ref, pRadius, elu_box);
}

const parity_op_def parity_op_softplus = {
    .zName = "softplus",
    .zModel = "3 c_f ulp(softplus(beta x))/|beta| (exp, log1p within c_f = 4 ulps: relative, as "
    "torch's log1p(exp) keeps it), + beta's rounding; 0.5 ulp_out",
    .nInMin = 1, .nInMax = 1, .family = PARITY_FAMILY_UNARY,
    .xPrepare = param_prepare, .xElement = softplus_element,
    .xPropagate = softplus_propagate,
};

const parity_op_def parity_op_elu = {
    .zName = "elu",
    .zModel = "x <= 0: (c_f + 2) ulps + |alpha| c_f ulp(exp(x)) (exp within c_f = 4 ulps; exp(x) - 1 "
    "cancels near 0), x > 0: exact; 0.5 ulp_out",
    .nInMin = 1, .nInMax = 1, .family = PARITY_FAMILY_UNARY,
    .xPrepare = param_prepare, .xElement = elu_element,
    .xPropagate = elu_propagate,
};
