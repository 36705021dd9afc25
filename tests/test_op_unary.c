/*
 * test_op_unary.c - the unary elementwise ops of tolerance/op_unary.c and op_unary_param.c,
 * through the registry (parity_op_find, parity_op_begin) and the element judge
 * (parity_judge).
 *
 * 1. glibc's float functions (expf, logf, tanhf, erff, sqrtf, 1.0f/sqrtf, ...) and torch's
 *    float formulas for the composites (and the exp(x) - 1 form of elu), over a vector of
 *    specials (+-0, +-Inf, NaN,
 *    subnormals, huge and tiny values, exp's overflow and underflow thresholds) and a dense
 *    sweep, all judge `within`: glibc is inside the allowance.
 * 2. An error of 3x the bound at one element fails exactly that element.
 * 3. Special values: the reference decides (log(-1) NaN, log(0) -Inf, rsqrt(-0) -Inf, ...).
 * 4. bfloat16 output: the reference rounded once passes, 2 bf16 ulps off fails.
 * 5. Bad parameters and shapes: parity_op_begin returns -1 with a message.
 * 6. Reference guard: the 128-bit references against independent 2048-bit evaluations of the
 *    textbook formulas (exp, erf, and the composites whose reference uses rewritten forms)
 *    agree to 2^-120 relative.
 * 7. softplus, elu and mish beyond the sweeps: oneDNN's formulas (emulated step by step in
 *    float) pass where they keep relative accuracy and fail where they cancel (the policy
 *    of op_unary_param.c), the attributes change the function, and wrong results fail.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpfr.h>

#include "formats/capture.h"
#include "formats/dtype.h"
#include "tolerance/judge.h"
#include "tolerance/mpref.h"
#include "tolerance/ops.h"
#include "support.h"

/* ---- the kernels under test: glibc float functions, torch's formulas ------------------ */

typedef float (*kernel_fn)(float);

static float k_gelu(float x) { return x * 0.5f * (1.0f + erff(x * (float)M_SQRT1_2)); }
static float k_gelu_tanh(float x)
{
    const float kBeta = (float)(M_SQRT2 * M_2_SQRTPI * 0.5), kKappa = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(kBeta * (x + kKappa * x * x * x)));
}
static float k_silu(float x) { return x / (1.0f + expf(-x)); }
static float k_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
static float k_silu_mul(float x) { return x * k_sigmoid(x); }   /* inductor's decomposition */
static float k_tanh(float x) { return tanhf(x); }
static float k_exp(float x) { return expf(x); }
static float k_log(float x) { return logf(x); }
static float k_sqrt(float x) { return sqrtf(x); }
static float k_rsqrt(float x) { return 1.0f / sqrtf(x); }
static float k_reciprocal(float x) { return 1.0f / x; }
static float k_erf(float x) { return erff(x); }
static float k_cos(float x) { return cosf(x); }
static float k_sin(float x) { return sinf(x); }
/* torch's CPU kernels and Inductor's decompositions: min(max(x + 3, 0), 6) / 6, times x for
 * hardswish (x * relu6(x + 3) first, which overflows past 5.7e37 as torch's does); oneDNN's
 * eltwise form x * (1/6) + 1/2, clamped, which cancels near -3. NaN passes through. */
static float relu6_of_x_plus_3(float x)
{
    float g = x + 3.0f;
    return g < 0.0f ? 0.0f : (g > 6.0f ? 6.0f : g);
}
static float k_hardsigmoid(float x) { return x != x ? x : relu6_of_x_plus_3(x) / 6.0f; }
static float k_hardsigmoid_affine(float x)
{
    float g = x * (1.0f / 6.0f) + 0.5f;
    return x != x ? x : (g < 0.0f ? 0.0f : (g > 1.0f ? 1.0f : g));
}
static float k_hardswish(float x) { return x != x ? x : x * relu6_of_x_plus_3(x) / 6.0f; }
static float k_hardswish_affine(float x) { return x != x ? x : x * k_hardsigmoid_affine(x); }
static float k_neg(float x) { return -x; }
static float k_abs(float x) { return fabsf(x); }
/* torch's softplus, elu and mish kernels (beta 1, threshold 20, alpha 1) */
static float k_softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
static float k_elu(float x) { return x <= 0.0f ? (expf(x) - 1.0f) * 1.0f : x; }
static float k_mish(float x) { return x * tanhf(log1pf(expf(x))); }
/* oneDNN 2.6's soft_relu JIT, step by step (expf and log1pf stand in for its polynomials):
 * x = n ln2 + r, softplus(x) = n ln2 + log(2^-n + exp(r)) with the log taken as
 * E ln2 + log1p(m - 1) of y = m 2^E; no threshold, x past log(FLT_MAX) passes through. */
static float k_softplus_onednn(float x)
{
    const float kLn2 = 0.693147182f, kLog2e = 1.44269502f;
    const float kMax = 88.7228394f, kMin = -87.3365479f;   /* logf(FLT_MAX), logf(FLT_MIN) */
    float xc = fminf(fmaxf(x, kMin), kMax), fx, r, y, m, lg;
    int e;
    if (x != x) return x;
    fx = floorf(xc * kLog2e + 0.5f);
    r = xc - fx * kLn2;
    y = expf(r) + ldexpf(1.0f, -(int)fx);
    m = frexpf(y, &e);
    lg = (float)e * kLn2 + log1pf(m - 1.0f);
    return x > kMax ? x : lg + fx * kLn2;
}
/* torch's softplus with log(1 + .) for log1p */
static float k_softplus_plain(float x) { return x > 20.0f ? x : logf(1.0f + expf(x)); }
static float k_elu_expm1(float x) { return x > 0.0f ? x : 1.0f * expm1f(x); }
/* oneDNN's mish JIT: x ((1 + e)^2 - 1) / ((1 + e)^2 + 1), e = exp(min(x, 22.18)) (x64),
 * and x (1 - 2 / ((1 + e)^2 + 1)) (its other ports) */
static float k_mish_onednn(float x)
{
    float w = expf(fminf(x, 22.1807f)) + 1.0f, q = w * w;
    return x * ((q - 1.0f) / (q + 1.0f));
}
static float k_mish_onednn_rsub(float x)
{
    float w = expf(x) + 1.0f, q = w * w;
    return x * (1.0f - 2.0f / (q + 1.0f));
}

typedef struct {
    const char *zOp;
    const char *zApprox;   /* gelu's attribute, or NULL */
    kernel_fn xKernel;
} op_case;

static const op_case kCases[] = {
    { "gelu", NULL, k_gelu },       { "gelu", "tanh", k_gelu_tanh },
    { "gelu", "none", k_gelu },     { "silu", NULL, k_silu },
    { "silu", NULL, k_silu_mul },   { "sigmoid", NULL, k_sigmoid },
    { "tanh", NULL, k_tanh },       { "exp", NULL, k_exp },
    { "log", NULL, k_log },         { "sqrt", NULL, k_sqrt },
    { "rsqrt", NULL, k_rsqrt },     { "reciprocal", NULL, k_reciprocal },
    { "erf", NULL, k_erf },         { "neg", NULL, k_neg },
    { "abs", NULL, k_abs },         { "softplus", NULL, k_softplus },
    { "elu", NULL, k_elu },         { "mish", NULL, k_mish },
    { "elu", NULL, k_elu_expm1 },   { "cos", NULL, k_cos },
    { "sin", NULL, k_sin },         { "hardsigmoid", NULL, k_hardsigmoid },
    { "hardsigmoid", NULL, k_hardsigmoid_affine }, { "hardswish", NULL, k_hardswish },
    { "hardswish", NULL, k_hardswish_affine },
};
#define N_CASES (sizeof kCases / sizeof kCases[0])

/* ---- helpers --------------------------------------------------------------------- */

static const float kSpecials[] = {
    0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 1.4e-45f, -1.4e-45f,
    1.17549435e-38f, -1.17549435e-38f, 1e-30f, -1e-30f, 1e-7f, -1e-7f, 1e30f, -1e30f,
    3.4e38f, -3.4e38f, 0.5f, -0.5f, 0.75f, -0.75f, 1.0f, -1.0f, 2.0f, -2.0f, 3.7f, -3.7f,
    5.0f, -5.0f, 9.0f, -9.0f, 10.0f, -10.0f, 20.0f, -20.0f, 50.0f, -50.0f, 88.0f, -88.0f,
    88.72f, -88.72f, 89.0f, -89.0f, 100.0f, -100.0f, 104.0f, -104.0f, 110.0f, -110.0f,
    7e12f, -7e12f, 1e13f, -1e13f,
};
#define N_SPECIALS (sizeof kSpecials / sizeof kSpecials[0])
#define N_SWEEP 6000

/* Specials, a uniform sweep over [-60, 60] and log-spaced magnitudes 2^-149 .. 2^127. */
static float *make_inputs(size_t *pn)
{
    size_t n = N_SPECIALS + 2 * N_SWEEP, i, k = 0;
    float *a = malloc(sizeof(float) * n);
    cr_assert(a);
    for (i = 0; i < N_SPECIALS; i++) a[k++] = kSpecials[i];
    for (i = 0; i < N_SWEEP; i++) a[k++] = (float)(-60.0 + 120.0 * (double)i / N_SWEEP);
    for (i = 0; i < N_SWEEP; i++) {
        float m = (float)ldexp(1.0 + 0.37 * (double)(i % 7) / 7.0,
                               -149 + (int)(276.0 * (double)i / N_SWEEP));
        a[k++] = (i & 1) ? -m : m;
    }
    *pn = k;
    return a;
}

static parity_attr g_attr;
static char *g_azApprox[1];

/* parity_attr array for gelu's approximate (NULL: none). */
static const parity_attr *approx_attr(const char *zApprox, size_t *pn)
{
    if (!zApprox) { *pn = 0; return NULL; }
    memset(&g_attr, 0, sizeof g_attr);
    g_azApprox[0] = (char *)zApprox;
    g_attr.zName = (char *)"approximate";
    g_attr.kind = PARITY_ATTR_STRING;
    g_attr.n = 1;
    g_attr.azStr = g_azApprox;
    *pn = 1;
    return &g_attr;
}

static parity_operand make_operand(const double *aValue, uint64_t n)
{
    parity_operand op;
    memset(&op, 0, sizeof op);
    op.zName = "x";
    op.dtype = PARITY_DT_F32;
    op.rank = 1;
    op.aDim[0] = n;
    op.nElem = n;
    op.aValue = (double *)aValue;
    return op;
}

static void begin_attrs(parity_op_call *pCall, parity_operand *pIn, const char *zOp,
                        const parity_attr *aAttr, size_t nAttr, parity_dtype outDt)
{
    char zErr[PARITY_ERR_LEN];
    const parity_op_def *pDef = parity_op_find(zOp);
    uint64_t dim = pIn->nElem;
    cr_assert(pDef, "%s is not registered", zOp);
    cr_assert(parity_op_begin(pCall, pDef, pIn, 1, outDt, 1, &dim, PARITY_DT_INVALID, aAttr,
                              nAttr, zErr, sizeof zErr) == 0, "%s: %s", zOp, zErr);
}

/* Judges compiled against op(x) for n elements under the attributes; output dtype outDt. */
static void judge_attrs(const char *zOp, const parity_attr *aAttr, size_t nAttr,
                        parity_dtype outDt, const double *x, const double *c, uint64_t n,
                        parity_judgement *pJ)
{
    parity_operand in = make_operand(x, n);
    parity_op_call call;
    char zErr[PARITY_ERR_LEN];
    begin_attrs(&call, &in, zOp, aAttr, nAttr, outDt);
    cr_assert(parity_judge(&call, NULL, c, pJ, zErr, sizeof zErr) == 0, "%s", zErr);
    parity_op_end(&call);
    cr_assert_eq(pJ->nChecked, n);
}

/* The same with gelu's approximate (NULL: none). */
static void judge(const char *zOp, const char *zApprox, parity_dtype outDt, const double *x,
                  const double *c, uint64_t n, parity_judgement *pJ)
{
    size_t nAttr;
    const parity_attr *aAttr = approx_attr(zApprox, &nAttr);
    judge_attrs(zOp, aAttr, nAttr, outDt, x, c, n, pJ);
}

/* Reference (rounded to binary64) and bound of op at x under the attributes. */
static void ref_bound_attrs(const char *zOp, const parity_attr *aAttr, size_t nAttr,
                            parity_dtype outDt, double x, double *pRef, double *pBound,
                            mpfr_t refOut)
{
    parity_operand in = make_operand(&x, 1);
    parity_op_call call;
    mpfr_t ref;
    begin_attrs(&call, &in, zOp, aAttr, nAttr, outDt);
    mpfr_init2(ref, PARITY_REF_PREC);
    cr_assert(call.pDef->xElement(&call, 0, ref, pBound) == 0);
    *pRef = mpfr_get_d(ref, MPFR_RNDN);
    if (refOut) mpfr_set(refOut, ref, MPFR_RNDN);
    mpfr_clear(ref);
    parity_op_end(&call);
}

/* The same with gelu's approximate (NULL: none). */
static void ref_bound(const char *zOp, const char *zApprox, parity_dtype outDt, double x,
                      double *pRef, double *pBound, mpfr_t refOut)
{
    size_t nAttr;
    const parity_attr *aAttr = approx_attr(zApprox, &nAttr);
    ref_bound_attrs(zOp, aAttr, nAttr, outDt, x, pRef, pBound, refOut);
}

/* nFail of one element: op(x) judged against compiled value c, float32 output. */
static uint64_t fails_one(const char *zOp, double x, double c)
{
    parity_judgement j;
    judge(zOp, NULL, PARITY_DT_F32, &x, &c, 1, &j);
    return j.nFail;
}

/* The same under float attributes (softplus's beta and threshold, elu's alpha). */
static uint64_t fails_attrs(const char *zOp, const parity_attr *aAttr, size_t nAttr, double x,
                            double c)
{
    parity_judgement j;
    judge_attrs(zOp, aAttr, nAttr, PARITY_DT_F32, &x, &c, 1, &j);
    return j.nFail;
}

/* Up to two float attributes (zB NULL: one) in aAttr, their values stored in aVal; returns
 * the count. */
static size_t float_attrs(parity_attr *aAttr, double *aVal, const char *zA, double a,
                          const char *zB, double b)
{
    size_t n = zB ? 2 : 1, i;
    memset(aAttr, 0, n * sizeof *aAttr);
    aVal[0] = a;
    aVal[1] = b;
    for (i = 0; i < n; i++) {
        aAttr[i].zName = (char *)(i == 0 ? zA : zB);
        aAttr[i].kind = PARITY_ATTR_FLOAT;
        aAttr[i].n = 1;
        aAttr[i].aFloat = &aVal[i];
    }
    return n;
}

/* ---- 1. glibc within the allowance -------------------------------------------------- */

Test(op_unary, glibc_float_kernels_within)
{
    size_t n, i, k;
    float *xf = make_inputs(&n);
    double *x = malloc(sizeof(double) * n), *c = malloc(sizeof(double) * n);
    cr_assert(x && c);
    for (i = 0; i < n; i++) x[i] = xf[i];
    for (k = 0; k < N_CASES; k++) {
        parity_judgement j;
        for (i = 0; i < n; i++) c[i] = kCases[k].xKernel(xf[i]);
        judge(kCases[k].zOp, kCases[k].zApprox, PARITY_DT_F32, x, c, n, &j);
        cr_expect_eq(j.nFail, 0, "%s%s%s: %llu of %zu fail, worst ratio %g at x = %a "
                     "(compiled %a)", kCases[k].zOp, kCases[k].zApprox ? " " : "",
                     kCases[k].zApprox ? kCases[k].zApprox : "", (unsigned long long)j.nFail,
                     n, j.worstRatio, x[j.worstLinear], c[j.worstLinear]);
        cr_expect_eq(j.nWithin, n, "%s: not all within", kCases[k].zOp);
    }
    free(xf);
    free(x);
    free(c);
}

/* The allowance is not vacuous: glibc uses a good part of it on the sweep (the worst
 * compiled error, as a fraction of the bound, is above 1% for the rounded functions). */
Test(op_unary, glibc_uses_part_of_the_allowance)
{
    static const char *azOp[] = { "exp", "log", "tanh", "erf", "sqrt", "rsqrt", "reciprocal",
                                  "sigmoid", "silu", "gelu", "softplus", "elu", "mish", "cos",
                                  "sin", "hardsigmoid", "hardswish" };
    size_t n, i, k;
    float *xf = make_inputs(&n);
    double *x = malloc(sizeof(double) * n), *c = malloc(sizeof(double) * n);
    cr_assert(x && c);
    for (i = 0; i < n; i++) x[i] = xf[i];
    for (k = 0; k < sizeof azOp / sizeof azOp[0]; k++) {
        parity_judgement j;
        size_t q;
        for (q = 0; q < N_CASES && strcmp(kCases[q].zOp, azOp[k]) != 0; q++) {}
        for (i = 0; i < n; i++) c[i] = kCases[q].xKernel(xf[i]);
        judge(azOp[k], NULL, PARITY_DT_F32, x, c, n, &j);
        cr_expect(j.worstRatio > 0.01 && j.worstRatio <= 1.0, "%s: worst ratio %g", azOp[k],
                  j.worstRatio);
    }
    free(xf);
    free(x);
    free(c);
}

/* ---- 2. an injected error of 3x the bound fails exactly there ---------------------- */

Test(op_unary, injected_error_fails_that_element)
{
    size_t n, i, k;
    float *xf = make_inputs(&n);
    double *x = malloc(sizeof(double) * n), *c = malloc(sizeof(double) * n);
    cr_assert(x && c);
    for (i = 0; i < n; i++) x[i] = xf[i];
    for (k = 0; k < N_CASES; k++) {
        parity_judgement j;
        size_t at = N_SPECIALS + N_SWEEP / 2 + 37;   /* a moderate positive x in the sweep */
        double ref, bound;
        cr_assert(x[at] > 0.3 && x[at] < 3.0, "x = %g", x[at]);
        for (i = 0; i < n; i++) c[i] = kCases[k].xKernel(xf[i]);
        ref_bound(kCases[k].zOp, kCases[k].zApprox, PARITY_DT_F32, x[at], &ref, &bound, NULL);
        cr_assert(isfinite(ref) && bound >= 0.0);
        /* neg and abs are exact (bound 0): one float ulp is the smallest injectable error. */
        c[at] = bound > 0.0 ? ref + 3.0 * bound : nextafterf((float)ref, INFINITY);
        judge(kCases[k].zOp, kCases[k].zApprox, PARITY_DT_F32, x, c, n, &j);
        cr_expect_eq(j.nFail, 1, "%s: %llu failures", kCases[k].zOp,
                     (unsigned long long)j.nFail);
        cr_expect_eq(j.nCompiledWorse, 1, "%s", kCases[k].zOp);
        cr_expect_eq(j.worstLinear, at, "%s", kCases[k].zOp);
        cr_expect(j.aSliceLo[0] == at && j.aSliceHi[0] == at + 1, "%s", kCases[k].zOp);
        if (bound > 0.0) cr_expect(fabs(j.worstRatio - 3.0) < 1e-6, "%s: ratio %g",
                                   kCases[k].zOp, j.worstRatio);
    }
    free(xf);
    free(x);
    free(c);
}

/* The bounds are tight where they should be: correctly rounded reciprocal gets half an
 * ulp; sqrt one (torch 2.15's own float32 kernel is 0.749 ulps off), so one ulp passes and
 * two fail; the primitives get 4 ulps. */
Test(op_unary, bound_sizes)
{
    double ref, b;
    float ulp = nextafterf(1.5f, 2.0f) - 1.5f;
    ref_bound("sqrt", NULL, PARITY_DT_F32, 2.25, &ref, &b, NULL);
    cr_expect(ref == 1.5 && b == ulp, "sqrt bound %a", b);
    cr_expect_eq(fails_one("sqrt", 2.25, 1.5 + ulp), 0);
    cr_expect_eq(fails_one("sqrt", 2.25, 1.5 + 2 * ulp), 1);
    ref_bound("reciprocal", NULL, PARITY_DT_F32, 3.0, &ref, &b, NULL);
    cr_expect(b == 0.5 * ulp / 4, "reciprocal bound %a", b);   /* 1/3 in [1/4, 1/2) */
    ref_bound("exp", NULL, PARITY_DT_F32, 0.5, &ref, &b, NULL);
    cr_expect(b == 4.0 * ulp, "exp bound %a", b);
    ref_bound("rsqrt", NULL, PARITY_DT_F32, 0.25, &ref, &b, NULL);
    cr_expect(ref == 2.0 && b == 2.0 * 2 * ulp, "rsqrt bound %a", b);
    ref_bound("sigmoid", NULL, PARITY_DT_F32, 0.0, &ref, &b, NULL);
    cr_expect(ref == 0.5 && b == 10.0 * ulp / 2, "sigmoid bound %a", b);
    ref_bound("neg", NULL, PARITY_DT_F32, 0.1f, &ref, &b, NULL);
    cr_expect(ref == -(double)0.1f && b == 0.0, "neg bound %a", b);
    /* float64 output under the default float64 acc: the bound shrinks by 2^29. */
    ref_bound("exp", NULL, PARITY_DT_F64, 0.5, &ref, &b, NULL);
    cr_expect(b == 4.0 * ldexp(1.0, -52), "exp f64 bound %a", b);
}

/* ---- 3. special values ----------------------------------------------------------------- */

Test(op_unary, special_values)
{
    const char *azAll[] = { "gelu", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt",
                            "reciprocal", "erf", "neg", "abs", "softplus", "elu", "mish", "cos",
                            "sin", "hardsigmoid", "hardswish" };
    double ref, b;
    mpfr_t r;
    size_t k;

    /* NaN in, NaN out: a compiled 0 fails for every op. */
    for (k = 0; k < sizeof azAll / sizeof azAll[0]; k++) {
        cr_expect_eq(fails_one(azAll[k], NAN, NAN), 0, "%s(NaN) = NaN", azAll[k]);
        cr_expect_eq(fails_one(azAll[k], NAN, 0.0), 1, "%s(NaN) = 0", azAll[k]);
    }
    cr_expect_eq(fails_one("log", -1.0, NAN), 0);
    cr_expect_eq(fails_one("log", -1.0, 0.0), 1);
    cr_expect_eq(fails_one("log", 0.0, -INFINITY), 0);
    cr_expect_eq(fails_one("log", -0.0, -INFINITY), 0);
    cr_expect_eq(fails_one("log", 0.0, INFINITY), 1);
    cr_expect_eq(fails_one("log", 0.0, NAN), 1);
    cr_expect_eq(fails_one("log", -INFINITY, NAN), 0);
    cr_expect_eq(fails_one("log", INFINITY, INFINITY), 0);
    cr_expect_eq(fails_one("sqrt", -2.0, NAN), 0);
    cr_expect_eq(fails_one("sqrt", -2.0, 0.0), 1);
    cr_expect_eq(fails_one("rsqrt", 0.0, INFINITY), 0);
    cr_expect_eq(fails_one("rsqrt", 0.0, -INFINITY), 1);
    cr_expect_eq(fails_one("rsqrt", -0.0, -INFINITY), 0);
    cr_expect_eq(fails_one("rsqrt", -0.0, INFINITY), 1);
    cr_expect_eq(fails_one("rsqrt", -4.0, NAN), 0);
    cr_expect_eq(fails_one("rsqrt", INFINITY, 0.0), 0);
    cr_expect_eq(fails_one("reciprocal", -0.0, -INFINITY), 0);
    cr_expect_eq(fails_one("reciprocal", -0.0, INFINITY), 1);
    cr_expect_eq(fails_one("reciprocal", 0.0, INFINITY), 0);
    cr_expect_eq(fails_one("reciprocal", -INFINITY, 0.0), 0);
    cr_expect_eq(fails_one("exp", INFINITY, INFINITY), 0);
    cr_expect_eq(fails_one("exp", INFINITY, NAN), 1);
    cr_expect_eq(fails_one("exp", -INFINITY, 0.0), 0);
    cr_expect_eq(fails_one("exp", -INFINITY, NAN), 1);
    cr_expect_eq(fails_one("exp", 100.0, INFINITY), 0);         /* overflows float32 */
    cr_expect_eq(fails_one("exp", 100.0, 3.4028234663852886e38), 1);
    cr_expect_eq(fails_one("tanh", -INFINITY, -1.0), 0);
    cr_expect_eq(fails_one("tanh", INFINITY, NAN), 1);
    cr_expect_eq(fails_one("erf", INFINITY, 1.0), 0);
    cr_expect_eq(fails_one("sigmoid", -INFINITY, 0.0), 0);
    cr_expect_eq(fails_one("sigmoid", INFINITY, 1.0), 0);
    cr_expect_eq(fails_one("silu", -INFINITY, NAN), 0);          /* torch: -Inf * 0 */
    cr_expect_eq(fails_one("silu", INFINITY, INFINITY), 0);
    cr_expect_eq(fails_one("gelu", -INFINITY, NAN), 0);
    cr_expect_eq(fails_one("gelu", -INFINITY, 0.0), 1);
    cr_expect_eq(fails_one("gelu", INFINITY, INFINITY), 0);
    cr_expect_eq(fails_one("neg", INFINITY, -INFINITY), 0);
    cr_expect_eq(fails_one("abs", -INFINITY, INFINITY), 0);
    cr_expect_eq(fails_one("abs", -INFINITY, -INFINITY), 1);
    /* softplus, elu, mish: torch's values (torch 1.13, float32 and float64 alike) */
    cr_expect_eq(fails_one("softplus", -INFINITY, 0.0), 0);
    cr_expect_eq(fails_one("softplus", -INFINITY, NAN), 1);
    cr_expect_eq(fails_one("softplus", INFINITY, INFINITY), 0);
    cr_expect_eq(fails_one("softplus", INFINITY, NAN), 1);
    cr_expect_eq(fails_one("softplus", 0.0, 0.6931471824645996), 0);   /* log 2 */
    cr_expect_eq(fails_one("softplus", -0.0, 0.6931471824645996), 0);
    cr_expect_eq(fails_one("softplus", -0.0, 0.0), 1);
    cr_expect_eq(fails_one("elu", -INFINITY, -1.0), 0);
    cr_expect_eq(fails_one("elu", -INFINITY, NAN), 1);
    cr_expect_eq(fails_one("elu", -INFINITY, 0.0), 1);
    cr_expect_eq(fails_one("elu", INFINITY, INFINITY), 0);
    cr_expect_eq(fails_one("elu", -0.0, 0.0), 0);
    cr_expect_eq(fails_one("mish", -INFINITY, NAN), 0);          /* torch: -Inf * tanh(0) */
    cr_expect_eq(fails_one("mish", -INFINITY, 0.0), 1);
    cr_expect_eq(fails_one("mish", INFINITY, INFINITY), 0);
    cr_expect_eq(fails_one("mish", INFINITY, NAN), 1);
    /* cos, sin, hardsigmoid, hardswish: torch 2.15's values */
    cr_expect_eq(fails_one("cos", INFINITY, NAN), 0);
    cr_expect_eq(fails_one("cos", -INFINITY, 1.0), 1);
    cr_expect_eq(fails_one("cos", -0.0, 1.0), 0);
    cr_expect_eq(fails_one("sin", -INFINITY, NAN), 0);
    cr_expect_eq(fails_one("sin", INFINITY, 0.0), 1);
    cr_expect_eq(fails_one("hardsigmoid", -INFINITY, 0.0), 0);
    cr_expect_eq(fails_one("hardsigmoid", INFINITY, 1.0), 0);
    cr_expect_eq(fails_one("hardsigmoid", INFINITY, NAN), 1);
    cr_expect_eq(fails_one("hardsigmoid", -0.0, 0.5), 0);
    cr_expect_eq(fails_one("hardsigmoid", -3.5, 0.0), 0);      /* clamped: exact */
    cr_expect_eq(fails_one("hardsigmoid", -3.5, 1e-9), 1);
    cr_expect_eq(fails_one("hardswish", -INFINITY, NAN), 0);    /* torch: -Inf * 0 */
    cr_expect_eq(fails_one("hardswish", -INFINITY, 0.0), 1);
    cr_expect_eq(fails_one("hardswish", INFINITY, INFINITY), 0);
    cr_expect_eq(fails_one("hardswish", 4.0, 4.0), 0);
    cr_expect_eq(fails_one("hardswish", 4.0, nextafterf(4.0f, 5.0f)), 0);   /* 1 ulp */
    cr_expect_eq(fails_one("hardswish", 4.0, 4.0 + 3 * (nextafterf(4.0f, 5.0f) - 4.0f)), 1);
    /* torch's x * relu6(x + 3) overflows past 5.7e37: its infinity is no divergence,
     * below that threshold it is */
    cr_expect_eq(fails_one("hardswish", 1e38, INFINITY), 0);
    cr_expect_eq(fails_one("hardswish", 1e37, INFINITY), 1);
    {
        parity_attr aA[2];
        double aV[2];
        size_t n = float_attrs(aA, aV, "alpha", 2.0, NULL, 0);
        cr_expect_eq(fails_attrs("elu", aA, n, -INFINITY, -2.0), 0);
        cr_expect_eq(fails_attrs("elu", aA, n, -INFINITY, -1.0), 1);
        /* beta < 0 mirrors softplus: beta x > threshold at -Inf, 0 / beta = -0 at +Inf */
        n = float_attrs(aA, aV, "beta", -1.0, NULL, 0);
        cr_expect_eq(fails_attrs("softplus", aA, n, -INFINITY, -INFINITY), 0);
        cr_expect_eq(fails_attrs("softplus", aA, n, INFINITY, 0.0), 0);
        cr_expect_eq(fails_attrs("softplus", aA, n, 0.0, -0.6931471824645996), 0);
        cr_expect_eq(fails_attrs("softplus", aA, n, 0.0, 0.6931471824645996), 1);
    }

    /* Signed zeros of the reference (the judge compares finite values by magnitude). */
    mpfr_init2(r, PARITY_REF_PREC);
    ref_bound("sqrt", NULL, PARITY_DT_F32, -0.0, &ref, &b, r);
    cr_expect(mpfr_zero_p(r) && mpfr_signbit(r), "sqrt(-0) = -0");
    ref_bound("neg", NULL, PARITY_DT_F32, 0.0, &ref, &b, r);
    cr_expect(mpfr_zero_p(r) && mpfr_signbit(r) && b == 0.0, "neg(+0) = -0");
    ref_bound("abs", NULL, PARITY_DT_F32, -0.0, &ref, &b, r);
    cr_expect(mpfr_zero_p(r) && !mpfr_signbit(r), "abs(-0) = +0");
    ref_bound("reciprocal", NULL, PARITY_DT_F32, INFINITY, &ref, &b, r);
    cr_expect(mpfr_zero_p(r) && !mpfr_signbit(r));
    ref_bound("gelu", NULL, PARITY_DT_F32, -0.0, &ref, &b, r);
    cr_expect(mpfr_zero_p(r) && mpfr_signbit(r), "gelu(-0) = -0");
    ref_bound("mish", NULL, PARITY_DT_F32, -0.0, &ref, &b, r);
    cr_expect(mpfr_zero_p(r) && mpfr_signbit(r), "mish(-0) = -0");
    /* torch's elu is (exp(x) - 1) alpha at x <= 0: +0 alpha at -0, not expm1's -0 */
    ref_bound("elu", NULL, PARITY_DT_F32, -0.0, &ref, &b, r);
    cr_expect(mpfr_zero_p(r) && !mpfr_signbit(r), "elu(-0) = +0");
    {
        parity_attr aA[2];
        double aV[2];
        size_t n = float_attrs(aA, aV, "alpha", -1.0, NULL, 0);
        ref_bound_attrs("elu", aA, n, PARITY_DT_F32, 0.0, &ref, &b, r);
        cr_expect(mpfr_zero_p(r) && mpfr_signbit(r), "elu(+0; alpha -1) = -0");
        n = float_attrs(aA, aV, "beta", -2.0, NULL, 0);
        ref_bound_attrs("softplus", aA, n, PARITY_DT_F32, INFINITY, &ref, &b, r);
        cr_expect(mpfr_zero_p(r) && mpfr_signbit(r) && b == 0.0, "softplus(+Inf; beta -2) = -0");
    }
    mpfr_clear(r);
}

/* ---- 4. bfloat16 output ------------------------------------------------------------------ */

Test(op_unary, bf16_output)
{
    static const double ax[] = { 0.75, 1.1, 1.5, 2.5, 5.0, 0.3 };
    enum { N = sizeof ax / sizeof ax[0] };
    size_t k, i;
    for (k = 0; k < N_CASES; k++) {
        double ok[N], bad[N];
        parity_judgement j;
        mpfr_t r;
        mpfr_init2(r, PARITY_REF_PREC);
        for (i = 0; i < N; i++) {
            double ref, b;
            ref_bound(kCases[k].zOp, kCases[k].zApprox, PARITY_DT_BF16, ax[i], &ref, &b, r);
            ok[i] = parity_round_to_dtype(r, PARITY_DT_BF16);
            bad[i] = ok[i] + 2.0 * parity_ulp_at(PARITY_DT_BF16, ok[i]);
            cr_assert(b < 1.5 * parity_ulp_at(PARITY_DT_BF16, ref), "%s bound %g",
                      kCases[k].zOp, b);
        }
        mpfr_clear(r);
        judge(kCases[k].zOp, kCases[k].zApprox, PARITY_DT_BF16, ax, ok, N, &j);
        cr_expect_eq(j.nFail, 0, "%s: rounded once to bf16 fails", kCases[k].zOp);
        judge(kCases[k].zOp, kCases[k].zApprox, PARITY_DT_BF16, ax, bad, N, &j);
        cr_expect_eq(j.nFail, N, "%s: 2 bf16 ulps off: %llu of %d fail", kCases[k].zOp,
                     (unsigned long long)j.nFail, N);
    }
}

/* ---- 5. parameters and shapes ----------------------------------------------------------- */

Test(op_unary, bad_parameters_and_shapes)
{
    double x[3] = { 1, 2, 3 };
    parity_operand in = make_operand(x, 3);
    parity_op_call call;
    char zErr[PARITY_ERR_LEN] = "";
    size_t nAttr;
    const parity_attr *aAttr = approx_attr("bogus", &nAttr);
    uint64_t dim3 = 3, dim4 = 4;
    parity_attr intAttr;
    int64_t one = 1;

    cr_assert_eq(parity_op_begin(&call, parity_op_find("gelu"), &in, 1, PARITY_DT_F32, 1,
                                 &dim3, PARITY_DT_INVALID, aAttr, nAttr, zErr, sizeof zErr), -1);
    cr_expect(strstr(zErr, "gelu") && strstr(zErr, "approximate") && strstr(zErr, "bogus"),
              "message: %s", zErr);

    memset(&intAttr, 0, sizeof intAttr);
    intAttr.zName = (char *)"approximate";
    intAttr.kind = PARITY_ATTR_INT;
    intAttr.n = 1;
    intAttr.aInt = &one;
    zErr[0] = 0;
    cr_assert_eq(parity_op_begin(&call, parity_op_find("gelu"), &in, 1, PARITY_DT_F32, 1,
                                 &dim3, PARITY_DT_INVALID, &intAttr, 1, zErr, sizeof zErr), -1);
    cr_expect(strstr(zErr, "approximate") != NULL, "message: %s", zErr);

    zErr[0] = 0;
    cr_assert_eq(parity_op_begin(&call, parity_op_find("exp"), &in, 1, PARITY_DT_F32, 1,
                                 &dim4, PARITY_DT_INVALID, NULL, 0, zErr, sizeof zErr), -1);
    cr_expect(strstr(zErr, "exp: input shape [3] differs from output shape [4]") != NULL,
              "message: %s", zErr);

    zErr[0] = 0;
    cr_assert_eq(parity_op_begin(&call, parity_op_find("neg"), &in, 1, PARITY_DT_I32, 1,
                                 &dim3, PARITY_DT_INVALID, NULL, 0, zErr, sizeof zErr), -1);
    cr_expect(zErr[0] != 0);

    /* approximate="tanh" is a different function: erf-gelu's reference fails it. */
    {
        double xs = -1.5, refE, refT, b;
        ref_bound("gelu", NULL, PARITY_DT_F32, xs, &refE, &b, NULL);
        ref_bound("gelu", "tanh", PARITY_DT_F32, xs, &refT, &b, NULL);
        cr_expect(fabs(refE - refT) > 1e-4);
        cr_expect_eq(fails_one("gelu", xs, k_gelu_tanh((float)xs)), 1);
    }

    /* softplus's beta must be finite and nonzero, its threshold finite; elu's alpha finite;
     * elu's scale and input_scale (selu's) other than 1 are refused */
    {
        static const struct { const char *zOp, *zAttr; double v; const char *zWant; } aBad[] = {
            { "softplus", "beta", 0.0, "softplus: attribute 'beta' must be finite and nonzero" },
            { "softplus", "beta", NAN, "beta" },
            { "softplus", "threshold", INFINITY, "softplus: attribute 'threshold' must be finite" },
            { "elu", "alpha", -INFINITY, "elu: attribute 'alpha' must be finite" },
            { "elu", "scale", 1.0507, "elu: attribute 'scale' is 1.0507" },
            { "elu", "input_scale", 2.0, "input_scale" },
        };
        parity_attr aA[2];
        double aV[2];
        size_t k;
        for (k = 0; k < sizeof aBad / sizeof aBad[0]; k++) {
            size_t n = float_attrs(aA, aV, aBad[k].zAttr, aBad[k].v, NULL, 0);
            zErr[0] = 0;
            cr_expect_eq(parity_op_begin(&call, parity_op_find(aBad[k].zOp), &in, 1,
                                         PARITY_DT_F32, 1, &dim3, PARITY_DT_INVALID, aA, n,
                                         zErr, sizeof zErr), -1, "%s %s", aBad[k].zOp,
                         aBad[k].zAttr);
            cr_expect(strstr(zErr, aBad[k].zWant) != NULL, "message: %s", zErr);
        }
        /* scale 1 is torch's elu; a string alpha is not a number */
        float_attrs(aA, aV, "scale", 1.0, "input_scale", 1.0);
        cr_expect_eq(parity_op_begin(&call, parity_op_find("elu"), &in, 1, PARITY_DT_F32, 1,
                                     &dim3, PARITY_DT_INVALID, aA, 2, zErr, sizeof zErr), 0,
                     "%s", zErr);
        parity_op_end(&call);
        size_t nOne;
        aA[0] = *approx_attr("bogus", &nOne);
        aA[0].zName = (char *)"alpha";
        zErr[0] = 0;
        cr_expect_eq(parity_op_begin(&call, parity_op_find("elu"), &in, 1, PARITY_DT_F32, 1,
                                     &dim3, PARITY_DT_INVALID, aA, 1, zErr, sizeof zErr), -1);
        cr_expect(strstr(zErr, "elu: attribute 'alpha' must be one number") != NULL,
                  "message: %s", zErr);
        cr_expect_eq(parity_op_begin(&call, parity_op_find("mish"), &in, 1, PARITY_DT_F32, 1,
                                     &dim4, PARITY_DT_INVALID, NULL, 0, zErr, sizeof zErr), -1);
        cr_expect(strstr(zErr, "mish: input shape [3] differs from output shape [4]") != NULL,
                  "message: %s", zErr);
        cr_expect_eq(parity_op_begin(&call, parity_op_find("softplus"), &in, 1, PARITY_DT_F32,
                                     1, &dim4, PARITY_DT_INVALID, NULL, 0, zErr, sizeof zErr), -1);
        cr_expect(strstr(zErr, "softplus: input shape [3] differs") != NULL, "message: %s", zErr);
    }
}

/* ---- 6. reference guard ----------------------------------------------------------------- */

/* The textbook formula at 2048 bits (enough for the cancellation in 1 + erf, 1 + tanh,
 * 1 + exp, exp - 1), independently of op_unary.c's rewritten forms. */
static void independent(const char *zOp, const char *zApprox, double xd, mpfr_t y)
{
    mpfr_t x, t, u;
    mpfr_prec_t p = mpfr_get_prec(y);
    mpfr_inits2(p, x, t, u, (mpfr_ptr)0);
    mpfr_set_d(x, xd, MPFR_RNDN);
    if (strcmp(zOp, "exp") == 0) {
        mpfr_exp(y, x, MPFR_RNDN);
    } else if (strcmp(zOp, "softplus") == 0 || strcmp(zOp, "mish") == 0) {
        /* log(1 + exp(x)) (softplus: x past the threshold 20); mish: x tanh of it */
        mpfr_exp(t, x, MPFR_RNDN);
        mpfr_add_ui(t, t, 1, MPFR_RNDN);
        mpfr_log(t, t, MPFR_RNDN);
        if (zOp[0] == 'm') {
            mpfr_tanh(t, t, MPFR_RNDN);
            mpfr_mul(y, t, x, MPFR_RNDN);
        } else {
            mpfr_set(y, xd > 20.0 ? x : t, MPFR_RNDN);
        }
    } else if (strcmp(zOp, "elu") == 0) {        /* x > 0 ? x : exp(x) - 1 */
        mpfr_exp(t, x, MPFR_RNDN);
        mpfr_sub_ui(t, t, 1, MPFR_RNDN);
        mpfr_set(y, xd > 0.0 ? x : t, MPFR_RNDN);
    } else if (strcmp(zOp, "erf") == 0) {
        mpfr_erf(y, x, MPFR_RNDN);
    } else if (strcmp(zOp, "sigmoid") == 0 || strcmp(zOp, "silu") == 0) {
        /* (1 + tanh(x/2)) / 2 */
        mpfr_div_2ui(t, x, 1, MPFR_RNDN);
        mpfr_tanh(t, t, MPFR_RNDN);
        mpfr_add_ui(t, t, 1, MPFR_RNDN);
        mpfr_div_2ui(y, t, 1, MPFR_RNDN);
        if (zOp[1] == 'i' && zOp[2] == 'l') mpfr_mul(y, y, x, MPFR_RNDN);
    } else if (zApprox && strcmp(zApprox, "tanh") == 0) {
        mpfr_pow_ui(t, x, 3, MPFR_RNDN);
        mpfr_set_str(u, "0.044715", 10, MPFR_RNDN);
        mpfr_mul(t, t, u, MPFR_RNDN);
        mpfr_add(t, t, x, MPFR_RNDN);
        mpfr_const_pi(u, MPFR_RNDN);
        mpfr_ui_div(u, 2, u, MPFR_RNDN);
        mpfr_sqrt(u, u, MPFR_RNDN);
        mpfr_mul(t, t, u, MPFR_RNDN);
        mpfr_tanh(t, t, MPFR_RNDN);
        mpfr_add_ui(t, t, 1, MPFR_RNDN);
        mpfr_mul(t, t, x, MPFR_RNDN);
        mpfr_div_2ui(y, t, 1, MPFR_RNDN);
    } else {   /* gelu: x/2 (1 + erf(x / sqrt 2)) */
        mpfr_sqrt_ui(u, 2, MPFR_RNDN);
        mpfr_div(t, x, u, MPFR_RNDN);
        mpfr_erf(t, t, MPFR_RNDN);
        mpfr_add_ui(t, t, 1, MPFR_RNDN);
        mpfr_mul(t, t, x, MPFR_RNDN);
        mpfr_div_2ui(y, t, 1, MPFR_RNDN);
    }
    mpfr_clears(x, t, u, (mpfr_ptr)0);
}

Test(op_unary, reference_agrees_with_2048_bits)
{
    static const struct { const char *zOp, *zApprox; } aOp[] = {
        { "exp", NULL }, { "erf", NULL }, { "sigmoid", NULL }, { "silu", NULL },
        { "gelu", NULL }, { "gelu", "tanh" }, { "softplus", NULL }, { "elu", NULL },
        { "mish", NULL },
    };
    static const double ax[] = { 0.1, 1.0, -3.5, 10.0, 1e-5, -7.25, 0.625, -20.0, 40.5 };
    size_t k, i;
    mpfr_t r, hi, d;
    mpfr_init2(r, PARITY_REF_PREC);
    mpfr_inits2(2048, hi, d, (mpfr_ptr)0);
    for (k = 0; k < sizeof aOp / sizeof aOp[0]; k++)
        for (i = 0; i < sizeof ax / sizeof ax[0]; i++) {
            double ref, b;
            ref_bound(aOp[k].zOp, aOp[k].zApprox, PARITY_DT_F64, ax[i], &ref, &b, r);
            independent(aOp[k].zOp, aOp[k].zApprox, ax[i], hi);
            cr_assert(mpfr_regular_p(hi), "%s(%g)", aOp[k].zOp, ax[i]);
            mpfr_sub(d, r, hi, MPFR_RNDN);
            mpfr_div(d, d, hi, MPFR_RNDN);
            mpfr_abs(d, d, MPFR_RNDN);
            cr_expect(mpfr_cmp_d(d, ldexp(1.0, -120)) <= 0, "%s%s(%g): relative %g",
                      aOp[k].zOp, aOp[k].zApprox ? "/tanh" : "", ax[i], mpfr_get_d(d, MPFR_RNDN));
        }
    mpfr_clear(r);
    mpfr_clears(hi, d, (mpfr_ptr)0);
}

/* ---- 7. softplus, elu, mish --------------------------------------------------------- */

/* What the models accept and what fails (op_unary_param.c, op_unary.c). */
Test(op_unary, softplus_elu_mish_decisions)
{
    double ref, b, ulpRef;
    /* softplus(-20) = 2.06e-9. log(1 + exp(x)) without log1p returns 0 in float, oneDNN 2.6's
     * soft_relu JIT -2^-19 (its n ln2 + log(2^-n + e^r) cancels): both fail, since the model
     * is relative there as torch's log1p(exp(x)) is (op_unary_param.c, the policy); so do
     * relu's 0 at x = -2 and a missing log1p(e^-x) at x = 5 (the threshold is 20). For
     * x >= 0 oneDNN's formula keeps its accuracy and passes. */
    cr_expect_eq(k_softplus_plain(-20.0f), 0.0f);
    cr_expect_eq(fails_one("softplus", -20.0, 0.0), 1);
    cr_expect_eq(fails_one("softplus", -20.0, -0x1p-19), 1);
    cr_expect_eq(fails_one("softplus", -20.0, k_softplus_onednn(-20.0f)), 1);
    cr_expect_eq(fails_one("softplus", -20.0, log1pf(expf(-20.0f))), 0);
    cr_expect_eq(fails_one("softplus", -2.0, 0.0), 1);
    cr_expect_eq(fails_one("softplus", 5.0, 5.0), 1);
    cr_expect_eq(fails_one("softplus", 5.0, k_softplus_onednn(5.0f)), 0);
    cr_expect_eq(fails_one("softplus", 0.5, k_softplus_onednn(0.5f)), 0);
    ref_bound("softplus", NULL, PARITY_DT_F32, 1.0, &ref, &b, NULL);
    cr_expect(b == 12.0 * 0x1p-23, "softplus(1) bound %a: 3 c_f ulps", b);

    /* elu: torch's exp(x) - 1 is off by 19% at x = -1e-7 (-1.19e-7), and passes; an elu
     * that uses alpha 1 where alpha is 0.5 fails; x > 0 is exact. */
    ulpRef = parity_ulp_at(PARITY_DT_F32, 1e-7);
    ref_bound("elu", NULL, PARITY_DT_F32, -1e-7, &ref, &b, NULL);
    cr_expect(fabs(k_elu(-1e-7f) - ref) > 1000.0 * ulpRef, "exp(x) - 1 cancels");
    cr_expect_eq(fails_one("elu", -1e-7, k_elu(-1e-7f)), 0);
    cr_expect_eq(fails_one("elu", 1.5, nextafter(1.5, 2.0)), 1);
    ref_bound("elu", NULL, PARITY_DT_F32, -1.0, &ref, &b, NULL);
    cr_expect(b == 8.0 * 0x1p-24, "elu(-1) bound %a: 6 ulp(0.63) + 4 ulp(0.37)", b);
    {
        parity_attr aA[2];
        double aV[2];
        size_t n = float_attrs(aA, aV, "alpha", 0.5, NULL, 0);
        cr_expect_eq(fails_attrs("elu", aA, n, -1.0, (expf(-1.0f) - 1.0f) * 0.5f), 0);
        cr_expect_eq(fails_attrs("elu", aA, n, -1.0, k_elu(-1.0f)), 1);
        cr_expect_eq(fails_attrs("elu", aA, n, 2.0, 2.0), 0);
    }

    /* mish: oneDNN's (q - 1)/(q + 1) returns -0 at x = -20 (-4.1e-8): fails, the model is
     * relative as torch's formula is (op_unary.c, the policy); torch's passes; for x > 0
     * both forms of oneDNN's keep their accuracy and pass. */
    cr_expect_eq(k_mish_onednn(-20.0f), 0.0f);
    cr_expect_eq(fails_one("mish", -20.0, 0.0), 1);
    cr_expect_eq(fails_one("mish", -20.0, k_mish(-20.0f)), 0);
    cr_expect_eq(fails_one("mish", -20.0, -1e-4), 1);
    cr_expect_eq(fails_one("mish", 1.5, k_mish_onednn(1.5f)), 0);
    cr_expect_eq(fails_one("mish", 3.0, k_mish_onednn_rsub(3.0f)), 0);
    ref_bound("mish", NULL, PARITY_DT_F32, 1.0, &ref, &b, NULL);
    cr_expect(b == 25.0 * 0x1p-24, "mish(1) bound %a: 1 ulp + 24 ulp(0.76)", b);
}

/* beta and threshold change the function; beta rounded to float is within the model. */
Test(op_unary, softplus_beta_and_threshold)
{
    parity_attr aA[2];
    double aV[2], ref, b;
    size_t n = float_attrs(aA, aV, "beta", 2.0, "threshold", 5.0), i;
    enum { N = 4001 };
    double *x = malloc(N * sizeof(double)), *c = malloc(N * sizeof(double));
    parity_judgement j;
    cr_assert(x && c);

    /* beta x = 6 > 5: x exactly, and the formula without threshold fails; beta x = 4 < 5 */
    ref_bound_attrs("softplus", aA, n, PARITY_DT_F32, 3.0, &ref, &b, NULL);
    cr_expect(ref == 3.0);
    cr_expect_eq(fails_attrs("softplus", aA, n, 3.0, 3.0), 0);
    cr_expect_eq(fails_attrs("softplus", aA, n, 3.0, log1pf(expf(6.0f)) / 2.0f), 1);
    cr_expect_eq(fails_attrs("softplus", aA, n, 2.0, log1pf(expf(4.0f)) / 2.0f), 0);
    cr_expect_eq(fails_attrs("softplus", aA, n, 2.0, 2.0), 1);

    /* torch's float kernels with beta 0.1 (rounded to float, the products rounded) and
     * with beta 3, threshold 1 (products rounded where the branches meet) pass */
    for (i = 0; i < 2; i++) {
        const float bf = i == 0 ? 0.1f : 3.0f, tf = i == 0 ? 20.0f : 1.0f;
        size_t k;
        n = float_attrs(aA, aV, "beta", i == 0 ? 0.1 : 3.0, "threshold", i == 0 ? 20.0 : 1.0);
        for (k = 0; k < N; k++) {
            float xf = i == 0 ? (float)(-1000.0 + 0.5 * (double)k)
                              : nextafterf(1.0f / 3.0f, 0.0f) + (float)((double)k - N / 2) * 1e-7f;
            float z = xf * bf;
            x[k] = xf;
            c[k] = z > tf ? xf : log1pf(expf(z)) / bf;
        }
        judge_attrs("softplus", aA, n, PARITY_DT_F32, x, c, N, &j);
        cr_expect_eq(j.nFail, 0, "beta %g: %llu fail, worst ratio %g at x = %a", (double)bf,
                     (unsigned long long)j.nFail, j.worstRatio, x[j.worstLinear]);
    }

    /* oneDNN's soft_relu has no threshold: past 20 it differs by log1p(e^-x) < 2.1e-9, far
     * below float32's ulp (2^-19 at 21), so it passes in float32; in float64 (ulp 3.6e-15)
     * the threshold is visible and it fails. */
    cr_expect_eq(fails_one("softplus", 21.0, k_softplus_onednn(21.0f)), 0);
    cr_expect_eq(fails_one("softplus", 21.0, log1pf(expf(21.0f))), 0);
    {
        double x21 = 21.0, c21 = log1p(exp(21.0));
        cr_expect(c21 != 21.0);
        judge_attrs("softplus", NULL, 0, PARITY_DT_F64, &x21, &c21, 1, &j);
        cr_expect_eq(j.nFail, 1, "float64: the threshold is visible");
    }
    free(x);
    free(c);
}

/* ---- 8. clamp, hardtanh and pow (op_clamp.c, op_pow.c) ----------------------------------
 *
 * clamp is exact: torch's kernel (isnan first, then min(max(x, lo), hi) with the bounds cast
 * to float) passes over the specials and the sweeps, one float ulp off fails, NaN
 * propagates, lo > hi gives hi, and a bound that is no float32 (0.1) is judged rounded.
 * pow: torch's float kernels for each special exponent and std::pow (powf) for the rest,
 * and inductor's expansion of integer exponents into products, pass; 3x the bound fails;
 * the bound sizes are the file comment's; torch's values at -0 and -Inf for 0.5 and -0.5
 * decide; the exponent is rounded to the input's dtype. */

/* One element of op under up to two float attributes (zB NULL: one; zA NULL: none). */
static void ref_bound_f(const char *zOp, const char *zA, double a, const char *zB, double b,
                        double x, double *pRef, double *pBound)
{
    parity_attr aAttr[2];
    double aVal[2];
    size_t n = zA ? float_attrs(aAttr, aVal, zA, a, zB, b) : 0;
    ref_bound_attrs(zOp, aAttr, n, PARITY_DT_F32, x, pRef, pBound, NULL);
}

static uint64_t fails_f(const char *zOp, const char *zA, double a, const char *zB, double b,
                        double x, double c)
{
    parity_attr aAttr[2];
    double aVal[2];
    size_t n = zA ? float_attrs(aAttr, aVal, zA, a, zB, b) : 0;
    return fails_attrs(zOp, aAttr, n, x, c);
}

static float k_clamp(float x, float lo, float hi)
{
    if (x != x) return x;
    return fminf(fmaxf(x, lo), hi);
}

Test(op_unary, clamp_is_exact_and_follows_torch)
{
    size_t n, i;
    float *xf = make_inputs(&n);
    double *x = malloc(sizeof(double) * n), *c = malloc(sizeof(double) * n), ref, b;
    parity_attr aAttr[2];
    double aVal[2];
    parity_judgement j;
    cr_assert(x && c);
    for (i = 0; i < n; i++) {
        x[i] = xf[i];
        c[i] = k_clamp(xf[i], -0.5f, 0.5f);
    }
    judge_attrs("clamp", aAttr, float_attrs(aAttr, aVal, "min", -0.5, "max", 0.5), PARITY_DT_F32,
                x, c, n, &j);
    cr_expect_eq(j.nFail, 0, "clamp: %llu fail", (unsigned long long)j.nFail);
    /* exact: one ulp off fails */
    ref_bound_f("clamp", "min", -0.5, "max", 0.5, 0.25, &ref, &b);
    cr_expect(ref == 0.25 && b == 0.0, "clamp(0.25) = %g, bound %g", ref, b);
    cr_expect_eq(fails_f("clamp", "min", -0.5, "max", 0.5, 0.25, nextafterf(0.25f, 1.0f)), 1);
    cr_expect_eq(fails_f("clamp", "min", -0.5, "max", 0.5, 7.0, 0.5), 0);
    cr_expect_eq(fails_f("clamp", "min", -0.5, "max", 0.5, -INFINITY, -0.5), 0);
    /* NaN propagates: torch's clamp keeps it, a fmax/fmin kernel drops it */
    cr_expect_eq(fails_f("clamp", "min", -0.5, "max", 0.5, NAN, NAN), 0);
    cr_expect_eq(fails_f("clamp", "min", -0.5, "max", 0.5, NAN, 0.5), 1);
    /* min > max: torch.clamp(x, 2, 1) is 1 everywhere */
    ref_bound_f("clamp", "min", 2.0, "max", 1.0, -3.0, &ref, &b);
    cr_expect(ref == 1.0 && b == 0.0);
    ref_bound_f("clamp", "min", 2.0, "max", 1.0, 5.0, &ref, &b);
    cr_expect(ref == 1.0);
    /* one bound (clamp_min / clamp_max spell it), rounded to float32 as torch casts it */
    ref_bound_f("clamp", "min", 0.1, NULL, 0, 0.0, &ref, &b);
    cr_expect(ref == (double)0.1f && b == 0.0, "clamp(0, min=0.1) = %a", ref);
    cr_expect_eq(fails_f("clamp", "min", 0.1, NULL, 0, 0.0, (double)0.1f), 0);
    ref_bound_f("clamp", "max", -1e30, NULL, 0, INFINITY, &ref, &b);
    cr_expect(ref == (double)-1e30f);
    cr_expect(parity_op_find("aten.clamp_min.default") == &parity_op_clamp);
    cr_expect(parity_op_find("aten.clamp_max.default") == &parity_op_clamp);
    cr_expect(parity_op_find("aten.clamp.default") == &parity_op_clamp);
    /* hardtanh: clamp with min_val = -1, max_val = 1 unless given (relu6: 0, 6) */
    ref_bound_f("hardtanh", NULL, 0, NULL, 0, 5.0, &ref, &b);
    cr_expect(ref == 1.0 && b == 0.0);
    ref_bound_f("hardtanh", "min_val", 0.0, "max_val", 6.0, 7.5, &ref, &b);
    cr_expect(ref == 6.0);
    cr_expect_eq(fails_f("hardtanh", NULL, 0, NULL, 0, NAN, NAN), 0);
    cr_expect_eq(fails_f("hardtanh", NULL, 0, NULL, 0, -0.75, -0.75), 0);
    free(xf);
    free(x);
    free(c);
}

Test(op_unary, clamp_bad_parameters)
{
    parity_attr aAttr[2];
    double aVal[2], x = 1.0;
    parity_operand in = make_operand(&x, 1);
    parity_op_call call;
    char zErr[PARITY_ERR_LEN];
    uint64_t dim = 1;
    size_t nA = float_attrs(aAttr, aVal, "min", NAN, NULL, 0);
    cr_expect_eq(parity_op_begin(&call, &parity_op_clamp, &in, 1, PARITY_DT_F32, 1, &dim,
                                 PARITY_DT_INVALID, aAttr, nA, zErr, sizeof zErr), -1);
    cr_expect(strstr(zErr, "NaN") != NULL, "%s", zErr);
    aAttr[0] = attr_str(0, "max", "big");
    cr_expect_eq(parity_op_begin(&call, &parity_op_clamp, &in, 1, PARITY_DT_F32, 1, &dim,
                                 PARITY_DT_INVALID, aAttr, 1, zErr, sizeof zErr), -1);
    cr_expect(strstr(zErr, "max") != NULL, "%s", zErr);
}

/* torch's float32 pow kernel (PowKernel.cpp) at exponent e, and inductor's expansion of an
 * integer exponent into products (expand = 1). */
static float k_pow(float x, double e, int expand)
{
    float ef = (float)e;
    if (ef == 0.5f) return sqrtf(x);
    if (ef == -0.5f) return 1.0f / sqrtf(x);
    if (ef == 2.0f) return x * x;
    if (ef == 3.0f) return x * x * x;
    if (ef == -1.0f) return 1.0f / x;
    if (ef == -2.0f) return 1.0f / (x * x);
    if (expand && ef == floorf(ef) && fabsf(ef) <= 16.0f) {   /* by squaring */
        unsigned k = (unsigned)fabsf(ef);
        float r = 1.0f, s = x;
        for (; k; k >>= 1, s *= s)
            if (k & 1) r *= s;
        return ef < 0 ? 1.0f / r : r;
    }
    return powf(x, ef);
}

static const double kPowExp[] = { 2, 3, 0.5, -0.5, -1, -2, 1.5, 0.1, 1.0 / 3, -1.5, 2.5, 7,
                                  4, -3, -4, 0, 1 };
#define N_POW_EXP (sizeof kPowExp / sizeof kPowExp[0])

Test(op_unary, pow_torch_kernels_within_and_3x_fails)
{
    size_t n, i, k;
    float *xf = make_inputs(&n);
    double *x = malloc(sizeof(double) * n), *c = malloc(sizeof(double) * n);
    cr_assert(x && c);
    for (i = 0; i < n; i++) x[i] = xf[i];
    for (k = 0; k < N_POW_EXP; k++) {
        int expand;
        for (expand = 0; expand < 2; expand++) {
            parity_attr aAttr[2];
            double aVal[2];
            parity_judgement j;
            size_t nA = float_attrs(aAttr, aVal, "exponent", kPowExp[k], NULL, 0);
            for (i = 0; i < n; i++) c[i] = k_pow(xf[i], kPowExp[k], expand);
            judge_attrs("pow", aAttr, nA, PARITY_DT_F32, x, c, n, &j);
            cr_expect_eq(j.nFail, 0, "pow %g%s: %llu of %zu fail, worst ratio %g at x = %a "
                         "(compiled %a)", kPowExp[k], expand ? " expanded" : "",
                         (unsigned long long)j.nFail, n, j.worstRatio, x[j.worstLinear],
                         c[j.worstLinear]);
        }
        {   /* 3x the bound at x = 1.7 fails (1 ulp for the exact exponents 0 and 1) */
            double ref, b, xx = 1.7f, cc;
            ref_bound_f("pow", "exponent", kPowExp[k], NULL, 0, xx, &ref, &b);
            cc = b > 0 ? ref + 3.0 * b : nextafterf((float)ref, INFINITY);
            cr_expect_eq(fails_f("pow", "exponent", kPowExp[k], NULL, 0, xx, cc), 1,
                         "pow %g: 3x bound passes", kPowExp[k]);
        }
    }
    free(xf);
    free(x);
    free(c);
}

Test(op_unary, pow_bound_sizes)
{
    double ref, b;
    const double u1 = ldexp(1.0, -23);                  /* ulp of [1, 2) in float32 */
    ref_bound_f("pow", "exponent", 2, NULL, 0, 1.25, &ref, &b);
    cr_expect(ref == 1.5625 && b == 0.5 * u1, "x^2 bound %a", b);
    ref_bound_f("pow", "exponent", -1, NULL, 0, 0.75, &ref, &b);
    cr_expect(b == 0.5 * u1, "1/x bound %a", b);
    ref_bound_f("pow", "exponent", 0.5, NULL, 0, 2.25, &ref, &b);
    cr_expect(ref == 1.5 && b == u1, "sqrt bound %a (1 ulp: torch 2.15's sqrt)", b);
    ref_bound_f("pow", "exponent", 1.5, NULL, 0, 2.25, &ref, &b);
    cr_expect(ref == 3.375 && b == 4.0 * 2 * u1, "std::pow bound %a", b);
    ref_bound_f("pow", "exponent", 0, NULL, 0, 123.0, &ref, &b);
    cr_expect(ref == 1.0 && b == 0.0);
    ref_bound_f("pow", "exponent", 1, NULL, 0, 0.1f, &ref, &b);
    cr_expect(ref == (double)0.1f && b == 0.0);
    /* x^3: |x| 0.5 ulp(x^2) + 0.5 ulp(x^3): at x = 1.25, 1.25 * 0.5 u1 + 0.5 u1 */
    ref_bound_f("pow", "exponent", 3, NULL, 0, 1.25, &ref, &b);
    cr_expect(b == 1.25 * 0.5 * u1 + 0.5 * u1, "x^3 bound %a", b);
    /* an integer beyond torch's cases allows the expansion's |n| - 1 roundings past c_f */
    ref_bound_f("pow", "exponent", 12, NULL, 0, 1.0625, &ref, &b);
    cr_expect(b > 11.0 * parity_ulp_at(PARITY_DT_F32, ref), "x^12 bound %a", b);
}

Test(op_unary, pow_special_values_are_torch_s)
{
    /* C99 pow where torch calls it, and for 2, 3, -1, -2 */
    cr_expect_eq(fails_f("pow", "exponent", 1.5, NULL, 0, -2.0, NAN), 0);
    cr_expect_eq(fails_f("pow", "exponent", 1.5, NULL, 0, -2.0, 0.0), 1);
    cr_expect_eq(fails_f("pow", "exponent", -1.5, NULL, 0, 0.0, INFINITY), 0);
    cr_expect_eq(fails_f("pow", "exponent", -3, NULL, 0, -0.0, -INFINITY), 0);
    cr_expect_eq(fails_f("pow", "exponent", -3, NULL, 0, -0.0, INFINITY), 1);
    cr_expect_eq(fails_f("pow", "exponent", -2, NULL, 0, -0.0, INFINITY), 0);
    cr_expect_eq(fails_f("pow", "exponent", 1.5, NULL, 0, -INFINITY, INFINITY), 0);
    cr_expect_eq(fails_f("pow", "exponent", 3, NULL, 0, -INFINITY, -INFINITY), 0);
    cr_expect_eq(fails_f("pow", "exponent", 0, NULL, 0, NAN, 1.0), 0);
    cr_expect_eq(fails_f("pow", "exponent", 0, NULL, 0, NAN, NAN), 1);
    cr_expect_eq(fails_f("pow", "exponent", 2, NULL, 0, NAN, NAN), 0);
    cr_expect_eq(fails_f("pow", "exponent", 2, NULL, 0, 1e20, INFINITY), 0);   /* overflow */
    /* 1 / (x * x) with x * x overflowing float32: 0 for a subnormal reference */
    cr_expect_eq(fails_f("pow", "exponent", -2, NULL, 0, 2e19, 0.0), 0);
    /* torch's sqrt and rsqrt at -Inf: NaN, where C's pow gives +Inf and +0 */
    cr_expect_eq(fails_f("pow", "exponent", 0.5, NULL, 0, -INFINITY, NAN), 0);
    cr_expect_eq(fails_f("pow", "exponent", 0.5, NULL, 0, -INFINITY, INFINITY), 1);
    cr_expect_eq(fails_f("pow", "exponent", -0.5, NULL, 0, -INFINITY, NAN), 0);
    cr_expect_eq(fails_f("pow", "exponent", -0.5, NULL, 0, -INFINITY, 0.0), 1);
    cr_expect_eq(fails_f("pow", "exponent", -0.5, NULL, 0, -0.0, -INFINITY), 0);
    cr_expect_eq(fails_f("pow", "exponent", -0.5, NULL, 0, -0.0, INFINITY), 1);
    cr_expect_eq(fails_f("pow", "exponent", -0.5, NULL, 0, 0.0, INFINITY), 0);
    cr_expect_eq(fails_f("pow", "exponent", 0.5, NULL, 0, -4.0, NAN), 0);
    cr_expect_eq(fails_f("pow", "exponent", 0.5, NULL, 0, INFINITY, INFINITY), 0);
    cr_expect(parity_op_find("aten.pow.Tensor_Scalar") == &parity_op_pow);
}

/* The exponent is rounded to the input's dtype: a bfloat16 x^0.1 is x^bf16(0.1) =
 * x^0.10009765625 (torch 1.13 and 2.15), 1006.9 at x = 1e30, not 1000. */
Test(op_unary, pow_exponent_rounded_to_the_input_dtype)
{
    double x = parity_dtype_round(PARITY_DT_BF16, 1e30), ref, b, c;
    uint64_t dim = 1;
    parity_operand in = op_operand("x", PARITY_DT_BF16, 1, &dim, &x);
    parity_attr aAttr[1] = { attr_float(0, "exponent", 0.1) };
    parity_op_call call;
    parity_judgement j;
    {
        char zErr[PARITY_ERR_LEN];
        cr_assert(parity_op_begin(&call, &parity_op_pow, &in, 1, PARITY_DT_BF16, 1, &dim,
                                  PARITY_DT_INVALID, aAttr, 1, zErr, sizeof zErr) == 0, "%s",
                  zErr);
    }
    op_element(&call, 0, &ref, &b);
    cr_expect(fabs(ref - pow(x, 0.10009765625)) < 1e-9 * ref, "ref %.17g", ref);
    c = parity_dtype_round(PARITY_DT_BF16, pow(x, (double)(float)parity_dtype_round(
            PARITY_DT_BF16, 0.1)));
    j = op_judge(&call, &c);
    cr_expect_eq(j.nFail, 0, "torch's bf16 kernel fails");
    c = parity_dtype_round(PARITY_DT_BF16, pow(x, 0.1));      /* 1000: the exponent unrounded */
    j = op_judge(&call, &c);
    cr_expect_eq(j.nFail, 1, "x^0.1 unrounded passes");
    parity_op_end(&call);
}

/* bfloat16: torch rounds each step of x * x * x and 1 / (x * x) to bfloat16 (measured up to
 * 0.98 and 1.23 bf16 ulps); that passes, and 3 bf16 ulps off fails. */
Test(op_unary, pow_bf16_steps_may_round_in_bf16)
{
    enum { N = 2000 };
    static double x[N], c3[N], cm2[N];
    uint64_t dim = N;
    int i, e;
    for (i = 0; i < N; i++) {
        x[i] = parity_dtype_round(PARITY_DT_BF16, ldexp(1.0 + (double)i / N, (i % 40) - 20));
        c3[i] = parity_dtype_round(PARITY_DT_BF16, parity_dtype_round(PARITY_DT_BF16, x[i] * x[i]) * x[i]);
        cm2[i] = parity_dtype_round(PARITY_DT_BF16, 1.0 / parity_dtype_round(PARITY_DT_BF16, x[i] * x[i]));
    }
    for (e = 0; e < 2; e++) {
        parity_operand in = op_operand("x", PARITY_DT_BF16, 1, &dim, x);
        parity_attr aAttr[1] = { attr_float(0, "exponent", e ? -2.0 : 3.0) };
        parity_op_call call;
        parity_judgement j;
        double ref, b, bad;
        char zErr[PARITY_ERR_LEN];
        cr_assert(parity_op_begin(&call, &parity_op_pow, &in, 1, PARITY_DT_BF16, 1, &dim,
                                  PARITY_DT_INVALID, aAttr, 1, zErr, sizeof zErr) == 0, "%s", zErr);
        j = op_judge(&call, e ? cm2 : c3);
        cr_expect_eq(j.nFail, 0, "bf16 pow %d: %llu fail", e ? -2 : 3, (unsigned long long)j.nFail);
        op_element(&call, 7, &ref, &b);
        bad = ref + 3.0 * parity_ulp_at(PARITY_DT_BF16, ref);
        (e ? cm2 : c3)[7] = parity_dtype_round(PARITY_DT_BF16, bad);
        j = op_judge(&call, e ? cm2 : c3);
        cr_expect_eq(j.nFail, 1, "bf16 pow: 3 ulps off passes (bound %g)", b);
        parity_op_end(&call);
    }
}

Test(op_unary, pow_bad_parameters)
{
    double x = 2.0;
    parity_operand in = make_operand(&x, 1);
    parity_op_call call;
    parity_attr aAttr[1];
    char zErr[PARITY_ERR_LEN];
    uint64_t dim = 1;
    cr_expect_eq(parity_op_begin(&call, &parity_op_pow, &in, 1, PARITY_DT_F32, 1, &dim,
                                 PARITY_DT_INVALID, NULL, 0, zErr, sizeof zErr), -1);
    cr_expect(strstr(zErr, "exponent") != NULL, "%s", zErr);
    aAttr[0] = attr_str(0, "exponent", "two");
    cr_expect_eq(parity_op_begin(&call, &parity_op_pow, &in, 1, PARITY_DT_F32, 1, &dim,
                                 PARITY_DT_INVALID, aAttr, 1, zErr, sizeof zErr), -1);
}
