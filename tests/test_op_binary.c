/*
 * test_op_binary.c - the elementwise binary ops (tolerance/op_binary.c: add, sub, mul, div,
 * maximum, minimum with torch broadcasting) and the reductions (tolerance/op_reduce.c: sum,
 * mean, amax, amin over dim / dim lists with keepdim), called through the op registry
 * directly (parity_op_find, parity_op_begin, parity_judge).
 *
 * For each op: broadcast data whose float32 results, computed straightforwardly, pass; an
 * error of 3x the bound injected at one element fails exactly that element (the judgement's
 * slice); IEEE special values and NaN propagation; shape errors are -1 with a message naming
 * the shapes. Reductions: a K = 100000 float32 sequential sum passes while the same sum
 * accumulated in bfloat16 fails; the sum bound grows with n; keepdim shapes, dim lists,
 * negative dims, empty reductions.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/capture.h"
#include "formats/dtype.h"
#include "tolerance/judge.h"
#include "tolerance/mpref.h"
#include "tolerance/ops.h"
#include "support.h"

/* ---- data and helpers ------------------------------------------------------------ */

static uint64_t rng_next(uint64_t *pS)
{
    uint64_t z = (*pS += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi), a float. */
static double rng_float(uint64_t *pS, float lo, float hi)
{
    float u = (float)((double)(rng_next(pS) >> 40) * 0x1p-24);
    return (double)(lo + (hi - lo) * u);
}

static parity_operand operand(const char *zName, int rank, const uint64_t *aDim, double *a)
{
    return op_operand(zName, PARITY_DT_F32, rank, aDim, a);
}

static uint64_t count_of(int rank, const uint64_t *aDim)
{
    uint64_t n = 1;
    int d;
    for (d = 0; d < rank; d++) n *= aDim[d];
    return n;
}

static double *random_values(uint64_t n, uint64_t seed, float lo, float hi)
{
    double *a = malloc((n ? n : 1) * sizeof *a);
    uint64_t i;
    cr_assert(a);
    for (i = 0; i < n; i++) a[i] = rng_float(&seed, lo, hi);
    return a;
}

/* Injects 3x the bound at element iBad (1 ulp of float32 where the bound is 0) and checks
 * that exactly that element fails, with the slice around it. */
static void expect_injection_fails(parity_op_call *pCall, const double *aGood, uint64_t iBad)
{
    double *a = malloc(pCall->nOut * sizeof *a), ref, bound;
    uint64_t aIdx[PARITY_MAX_RANK];
    parity_judgement j;
    int d;
    cr_assert(a);
    memcpy(a, aGood, pCall->nOut * sizeof *a);
    op_element(pCall, iBad, &ref, &bound);
    cr_assert(isfinite(ref));
    a[iBad] = ref + (bound > 0.0 ? 3.0 * bound : parity_ulp_at(PARITY_DT_F32, fabs(ref)));
    j = op_judge(pCall, a);
    cr_expect_eq(j.nFail, 1, "%s: injected 3x bound (%g) at %llu: %llu failures",
                 pCall->pDef->zName, bound, (unsigned long long)iBad,
                 (unsigned long long)j.nFail);
    cr_expect_eq(j.worstLinear, iBad);
    parity_unravel(pCall->outRank, pCall->aOutDim, iBad, aIdx);
    for (d = 0; d < pCall->outRank; d++) {
        cr_expect_eq(j.aSliceLo[d], aIdx[d], "%s: slice lo dim %d", pCall->pDef->zName, d);
        cr_expect_eq(j.aSliceHi[d], aIdx[d] + 1, "%s: slice hi dim %d", pCall->pDef->zName, d);
    }
    free(a);
}

/* ---- binary ops ------------------------------------------------------------------ */

static float f32_op(const char *zOp, float x, float y, float alpha)
{
    if (!strcmp(zOp, "add")) return alpha == 1.0f ? x + y : x + alpha * y;
    if (!strcmp(zOp, "sub")) return alpha == 1.0f ? x - y : x - alpha * y;
    if (!strcmp(zOp, "mul")) return x * y;
    if (!strcmp(zOp, "div")) return x / y;
    if (!strcmp(zOp, "maximum")) return x != x || y != y ? NAN : (x > y ? x : y);
    return x != x || y != y ? NAN : (x < y ? x : y);
}

/* x [4, 1, 3] op y [5, 1] -> [4, 5, 3], float32 computed straightforwardly. */
static void check_binary_broadcast(const char *zOp, int withAlpha, double alpha)
{
    uint64_t dX[3] = { 4, 1, 3 }, dY[2] = { 5, 1 }, dOut[3] = { 4, 5, 3 };
    double *x = random_values(12, 11, -2.0f, 2.0f), *y = random_values(5, 12, 0.5f, 2.0f);
    double *c = malloc(60 * sizeof *c);
    parity_operand aIn[2];
    parity_op_call call;
    parity_attr at;
    parity_judgement j;
    char zErr[512];
    uint64_t i, k, m;

    for (i = 0; i < 5; i++) if (i % 2) y[i] = -y[i];
    aIn[0] = operand("x", 3, dX, x);
    aIn[1] = operand("y", 2, dY, y);
    at = attr_float(0, "alpha", alpha);
    cr_assert(op_begin(&call, zOp, aIn, 2, 3, dOut, &at, withAlpha ? 1 : 0, zErr, sizeof zErr)
              == 0, "%s: %s", zOp, zErr);
    for (i = 0; i < 4; i++)
        for (m = 0; m < 5; m++)
            for (k = 0; k < 3; k++)
                c[(i * 5 + m) * 3 + k] = f32_op(zOp, (float)x[i * 3 + k], (float)y[m],
                                                (float)alpha);
    j = op_judge(&call, c);
    cr_expect_eq(j.nChecked, 60);
    cr_expect_eq(j.nFail, 0, "%s: float32 results fail %llu elements (worst ratio %g)", zOp,
                 (unsigned long long)j.nFail, j.worstRatio);
    /* Spot-check the broadcast: element [2, 3, 1] is x[2, 0, 1] op y[3, 0]. */
    {
        double ref, bound;
        op_element(&call, (2 * 5 + 3) * 3 + 1, &ref, &bound);
        cr_expect(fabs(ref - (double)f32_op(zOp, (float)x[2 * 3 + 1], (float)y[3],
                                             (float)alpha)) <= bound);
    }
    expect_injection_fails(&call, c, 37);
    parity_op_end(&call);
    free(x);
    free(y);
    free(c);
}

Test(binary, add_broadcast) { check_binary_broadcast("add", 0, 1.0); }
Test(binary, sub_broadcast) { check_binary_broadcast("sub", 0, 1.0); }
Test(binary, mul_broadcast) { check_binary_broadcast("mul", 0, 1.0); }
Test(binary, div_broadcast) { check_binary_broadcast("div", 0, 1.0); }
Test(binary, maximum_broadcast) { check_binary_broadcast("maximum", 0, 1.0); }
Test(binary, minimum_broadcast) { check_binary_broadcast("minimum", 0, 1.0); }
Test(binary, add_alpha) { check_binary_broadcast("add", 1, 0.3); }
Test(binary, sub_alpha) { check_binary_broadcast("sub", 1, -2.5); }

Test(binary, alpha_bound_adds_a_rounding)
{
    uint64_t d1[1] = { 1 };
    double x[1] = { 1.0 }, y[1] = { 0.75 }, ref1, b1, ref2, b2;
    parity_operand aIn[2] = { operand("x", 1, d1, x), operand("y", 1, d1, y) };
    parity_op_call call;
    parity_attr at = attr_float(0, "alpha", 0.1);
    char zErr[512];

    cr_assert(op_begin(&call, "add", aIn, 2, 1, d1, NULL, 0, zErr, sizeof zErr) == 0, "%s", zErr);
    op_element(&call, 0, &ref1, &b1);
    parity_op_end(&call);
    cr_assert(op_begin(&call, "add", aIn, 2, 1, d1, &at, 1, zErr, sizeof zErr) == 0, "%s", zErr);
    op_element(&call, 0, &ref2, &b2);
    parity_op_end(&call);
    cr_expect_eq(ref1, 1.75);
    cr_expect(fabs(ref2 - 1.075) < 1e-15, "x + 0.1 y = %.17g", ref2);
    /* 1.75: one f32 rounding and the output's, 0.5 + 0.5 ulp_f32(1.75) = 2^-23. */
    cr_expect_eq(b1, 0x1p-23, "bound %a", b1);
    cr_expect_gt(b2, b1 * 0.9);
    cr_assert(op_begin(&call, "mul", aIn, 2, 1, d1, &at, 1, zErr, sizeof zErr) == -1);
    cr_expect(strstr(zErr, "alpha"), "%s", zErr);
}

/* One element per case: x op y against the expected special value. */
static void check_special(const char *zOp, double x, double y, double want)
{
    uint64_t d1[1] = { 1 };
    double ax[1] = { x }, ay[1] = { y }, ref, bound, c[1];
    parity_operand aIn[2] = { operand("x", 1, d1, ax), operand("y", 1, d1, ay) };
    parity_op_call call;
    parity_judgement j;
    char zErr[512];

    cr_assert(op_begin(&call, zOp, aIn, 2, 1, d1, NULL, 0, zErr, sizeof zErr) == 0, "%s", zErr);
    op_element(&call, 0, &ref, &bound);
    if (want != want) cr_expect(ref != ref, "%s(%g, %g) = %g, want NaN", zOp, x, y, ref);
    else cr_expect(ref == want && signbit(ref) == signbit(want), "%s(%g, %g) = %g, want %g",
                   zOp, x, y, ref, want);
    c[0] = want;                          /* the right special value passes */
    j = op_judge(&call, c);
    cr_expect_eq(j.nFail, 0, "%s(%g, %g): the right value fails", zOp, x, y);
    c[0] = want != want ? 0.0 : NAN;      /* a wrong one fails as non-finite */
    if (!isfinite(want)) {
        j = op_judge(&call, c);
        cr_expect_eq(j.nFail, 1);
        cr_expect_eq(j.nNonFinite, 1, "%s(%g, %g): %g accepted", zOp, x, y, c[0]);
    }
    parity_op_end(&call);
}

Test(binary, special_values)
{
    check_special("add", INFINITY, -INFINITY, NAN);
    check_special("sub", INFINITY, INFINITY, NAN);
    check_special("add", INFINITY, 1.0, INFINITY);
    check_special("mul", 0.0, INFINITY, NAN);
    check_special("mul", -2.0, INFINITY, -INFINITY);
    check_special("div", 1.0, 0.0, INFINITY);
    check_special("div", -1.0, 0.0, -INFINITY);
    check_special("div", 1.0, -0.0, -INFINITY);
    check_special("div", 0.0, 0.0, NAN);
    check_special("div", 3.0, INFINITY, 0.0);
    check_special("add", NAN, 1.0, NAN);
    check_special("maximum", NAN, 1.0, NAN);
    check_special("maximum", 1.0, NAN, NAN);
    check_special("minimum", 2.0, NAN, NAN);
    check_special("maximum", -INFINITY, 1.0, 1.0);
    check_special("minimum", -INFINITY, 1.0, -INFINITY);
}

Test(binary, float32_overflow_is_inf)
{
    /* 3e38 + 3e38 = 6e38 exactly, +Inf in float32: Inf passes, the largest float fails. */
    uint64_t d1[1] = { 1 };
    double x[1] = { 3e38 }, c[1] = { INFINITY };
    parity_operand aIn[2] = { operand("x", 1, d1, x), operand("y", 1, d1, x) };
    parity_op_call call;
    parity_judgement j;
    char zErr[512];
    cr_assert(op_begin(&call, "add", aIn, 2, 1, d1, NULL, 0, zErr, sizeof zErr) == 0, "%s", zErr);
    j = op_judge(&call, c);
    cr_expect_eq(j.nFail, 0);
    c[0] = (double)FLT_MAX;
    j = op_judge(&call, c);
    cr_expect_eq(j.nFail, 1);
    cr_expect_eq(j.nNonFinite, 1);
    parity_op_end(&call);
}

Test(binary, maximum_nan_ignored_fails)
{
    /* fmax semantics (NaN ignored) is not torch.maximum. */
    uint64_t d2[1] = { 2 };
    double x[2] = { NAN, 1.0 }, y[2] = { 1.0, 2.0 }, c[2] = { 1.0, 2.0 };
    parity_operand aIn[2] = { operand("x", 1, d2, x), operand("y", 1, d2, y) };
    parity_op_call call;
    parity_judgement j;
    char zErr[512];
    cr_assert(op_begin(&call, "maximum", aIn, 2, 1, d2, NULL, 0, zErr, sizeof zErr) == 0);
    j = op_judge(&call, c);
    cr_expect_eq(j.nFail, 1);
    cr_expect_eq(j.aSliceLo[0], 0);
    cr_expect_eq(j.aSliceHi[0], 1);
    parity_op_end(&call);
}

Test(binary, shape_errors_name_the_shapes)
{
    uint64_t dA[2] = { 4, 3 }, dB[2] = { 5, 3 }, dX[3] = { 4, 1, 3 }, dY[2] = { 5, 1 };
    uint64_t dBad[3] = { 4, 5, 4 }, dRank[2] = { 5, 3 };
    double v[60] = { 0 };
    parity_operand aIn[2];
    parity_op_call call;
    char zErr[512];

    aIn[0] = operand("a", 2, dA, v);
    aIn[1] = operand("b", 2, dB, v);
    cr_expect(op_begin(&call, "add", aIn, 2, 2, dA, NULL, 0, zErr, sizeof zErr) == -1);
    cr_expect(strstr(zErr, "[4, 3]") && strstr(zErr, "[5, 3]") && strstr(zErr, "broadcast"),
              "%s", zErr);
    aIn[0] = operand("x", 3, dX, v);
    aIn[1] = operand("y", 2, dY, v);
    cr_expect(op_begin(&call, "mul", aIn, 2, 3, dBad, NULL, 0, zErr, sizeof zErr) == -1);
    cr_expect(strstr(zErr, "[4, 5, 3]") && strstr(zErr, "[4, 5, 4]"), "%s", zErr);
    cr_expect(op_begin(&call, "div", aIn, 2, 2, dRank, NULL, 0, zErr, sizeof zErr) == -1);
    cr_expect(strstr(zErr, "[4, 5, 3]") && strstr(zErr, "[5, 3]"), "%s", zErr);
    cr_expect(op_begin(&call, "sub", aIn, 1, 3, dX, NULL, 0, zErr, sizeof zErr) == -1);
    cr_expect(strstr(zErr, "2 inputs"), "%s", zErr);
}

Test(binary, scalar_operand_broadcasts)
{
    uint64_t d[2] = { 2, 3 };
    double x[6] = { 1, 2, 3, 4, 5, 6 }, s[1] = { 0.5 }, c[6], ref, bound;
    parity_operand aIn[2] = { operand("x", 2, d, x), operand("s", 0, NULL, s) };
    parity_op_call call;
    parity_judgement j;
    char zErr[512];
    int i;
    cr_assert(op_begin(&call, "mul", aIn, 2, 2, d, NULL, 0, zErr, sizeof zErr) == 0, "%s", zErr);
    for (i = 0; i < 6; i++) c[i] = x[i] * 0.5;
    j = op_judge(&call, c);
    cr_expect_eq(j.nFail, 0);
    op_element(&call, 5, &ref, &bound);
    cr_expect_eq(ref, 3.0);
    cr_expect_eq(bound, 0.5 * parity_ulp_at(PARITY_DT_F32, 3.0) * 2.0);
    parity_op_end(&call);
}

/* ---- reductions ------------------------------------------------------------------ */

/* float32 reduction over the dims flagged in aRed of x (rank 3), sequential in index order;
 * output in row-major order of the kept dims. */
static void f32_reduce(const char *zOp, const double *x, const uint64_t *aDim,
                       const int *aRed, double *aOut)
{
    uint64_t i0, i1, i2, nOut = 1, n = 1;
    float *aAcc;
    int d;
    for (d = 0; d < 3; d++) {
        if (aRed[d]) n *= aDim[d];
        else nOut *= aDim[d];
    }
    aAcc = calloc(nOut, sizeof *aAcc);
    cr_assert(aAcc);
    for (i0 = 0; i0 < aDim[0]; i0++)
        for (i1 = 0; i1 < aDim[1]; i1++)
            for (i2 = 0; i2 < aDim[2]; i2++) {
                uint64_t aI[3] = { i0, i1, i2 }, o = 0, first = 1;
                float v = (float)x[(i0 * aDim[1] + i1) * aDim[2] + i2];
                for (d = 0; d < 3; d++) {
                    if (aRed[d]) { if (aI[d]) first = 0; continue; }
                    o = o * aDim[d] + aI[d];
                }
                if (!strcmp(zOp, "sum") || !strcmp(zOp, "mean")) aAcc[o] += v;
                else if (first) aAcc[o] = v;
                else if (!strcmp(zOp, "amax")) aAcc[o] = v > aAcc[o] ? v : aAcc[o];
                else aAcc[o] = v < aAcc[o] ? v : aAcc[o];
            }
    for (i0 = 0; i0 < nOut; i0++)
        aOut[i0] = !strcmp(zOp, "mean") ? (double)(aAcc[i0] / (float)n) : (double)aAcc[i0];
    free(aAcc);
}

/* x [3, 4, 5] reduced over aDimArg (nDimArg of them, may be negative) with keepdim. */
static void check_reduce(const char *zOp, const int64_t *aDimArg, size_t nDimArg, int keepdim)
{
    uint64_t dX[3] = { 3, 4, 5 }, aOut[3];
    double *x = random_values(60, 21, -1.0f, 3.0f), c[60];
    int aRed[3] = { 0 }, outRank = 0, d;
    size_t i;
    parity_operand in = operand("x", 3, dX, x);
    parity_attr aAttr[2];
    parity_op_call call;
    parity_judgement j;
    char zErr[512];

    for (i = 0; i < nDimArg; i++) aRed[aDimArg[i] < 0 ? aDimArg[i] + 3 : aDimArg[i]] = 1;
    if (nDimArg == 0) aRed[0] = aRed[1] = aRed[2] = 1;
    for (d = 0; d < 3; d++) {
        if (!aRed[d]) aOut[outRank++] = dX[d];
        else if (keepdim) aOut[outRank++] = 1;
    }
    aAttr[0] = attr_int(1, "keepdim", keepdim);
    aAttr[1] = attr_ints_ex(2, "dim", aDimArg, nDimArg, 1);
    cr_assert(op_begin(&call, zOp, &in, 1, outRank, aOut, aAttr, nDimArg ? 2 : 1, zErr,
                    sizeof zErr) == 0, "%s: %s", zOp, zErr);
    cr_assert_eq(call.nOut, count_of(outRank, aOut));
    f32_reduce(zOp, x, dX, aRed, c);
    j = op_judge(&call, c);
    cr_expect_eq(j.nFail, 0, "%s: float32 results fail %llu (worst ratio %g)", zOp,
                 (unsigned long long)j.nFail, j.worstRatio);
    expect_injection_fails(&call, c, call.nOut - 1);
    if (call.nOut > 2) expect_injection_fails(&call, c, 1);
    parity_op_end(&call);

    /* The other keepdim's shape is rejected, naming both shapes. */
    if (nDimArg > 0) {
        uint64_t aOther[3];
        int otherRank = 0;
        for (d = 0; d < 3; d++) {
            if (!aRed[d]) aOther[otherRank++] = dX[d];
            else if (!keepdim) aOther[otherRank++] = 1;
        }
        cr_expect(op_begin(&call, zOp, &in, 1, otherRank, aOther, aAttr, 2, zErr, sizeof zErr)
                  == -1, "%s: wrong keepdim shape accepted", zOp);
        cr_expect(strstr(zErr, "[3, 4, 5]") && strstr(zErr, "output has"), "%s", zErr);
    }
    free(x);
}

Test(reduce, sum_dim_keepdim)
{
    int64_t d1[1] = { 1 }, d02[2] = { 0, 2 }, dNeg[2] = { -1, -3 }, dLast[1] = { -1 };
    check_reduce("sum", d1, 1, 0);
    check_reduce("sum", d1, 1, 1);
    check_reduce("sum", d02, 2, 0);
    check_reduce("sum", dNeg, 2, 1);
    check_reduce("sum", dLast, 1, 0);
    check_reduce("sum", NULL, 0, 0);
    check_reduce("sum", NULL, 0, 1);
}

Test(reduce, mean_amax_amin)
{
    static const char *const azOp[3] = { "mean", "amax", "amin" };
    int64_t d1[1] = { 1 }, dNeg[2] = { -1, 0 };
    int i;
    for (i = 0; i < 3; i++) {
        check_reduce(azOp[i], d1, 1, 0);
        check_reduce(azOp[i], dNeg, 2, 1);
        check_reduce(azOp[i], NULL, 0, 0);
    }
}

Test(reduce, dim_list_and_negative_dims_agree)
{
    uint64_t dX[3] = { 3, 4, 5 }, dOut[1] = { 4 };
    double *x = random_values(60, 5, -1.0f, 1.0f), refA, refB, bA, bB, want;
    int64_t aPos[2] = { 0, 2 }, aNeg[2] = { -1, -3 };
    parity_operand in = operand("x", 3, dX, x);
    parity_attr at;
    parity_op_call call;
    char zErr[512];
    uint64_t i, k, m;

    for (k = 0; k < 4; k++) {
        at = attr_ints_ex(0, "dim", aPos, 2, 1);
        cr_assert(op_begin(&call, "sum", &in, 1, 1, dOut, &at, 1, zErr, sizeof zErr) == 0, "%s",
                  zErr);
        op_element(&call, k, &refA, &bA);
        parity_op_end(&call);
        at = attr_ints_ex(0, "dim", aNeg, 2, 1);
        cr_assert(op_begin(&call, "sum", &in, 1, 1, dOut, &at, 1, zErr, sizeof zErr) == 0, "%s",
                  zErr);
        op_element(&call, k, &refB, &bB);
        parity_op_end(&call);
        want = 0.0;   /* 15 floats: exact in binary64 */
        for (i = 0; i < 3; i++)
            for (m = 0; m < 5; m++) want += x[(i * 4 + k) * 5 + m];
        cr_expect_eq(refA, want);
        cr_expect_eq(refB, want);
        cr_expect_eq(bA, bB);
    }
    /* Duplicates and out-of-range dims are errors. */
    {
        int64_t aDup[2] = { 1, -2 }, aFar[1] = { 3 };
        uint64_t dTwo[2] = { 3, 5 };
        at = attr_ints_ex(0, "dim", aDup, 2, 1);
        cr_expect(op_begin(&call, "sum", &in, 1, 2, dTwo, &at, 1, zErr, sizeof zErr) == -1);
        cr_expect(strstr(zErr, "more than once"), "%s", zErr);
        at = attr_ints_ex(0, "dim", aFar, 1, 1);
        cr_expect(op_begin(&call, "mean", &in, 1, 2, dTwo, &at, 1, zErr, sizeof zErr) == -1);
        cr_expect(strstr(zErr, "out of range") && strstr(zErr, "[3, 4, 5]"), "%s", zErr);
    }
    free(x);
}

/* Sum of K values in [0, 1): float32 sequential, and accumulated in bfloat16. */
static void long_sum(uint64_t K, parity_judgement *pJ32, parity_judgement *pJbf)
{
    uint64_t dX[1] = { K };
    double *x = random_values(K, 99, 0.0f, 1.0f), c;
    parity_operand in = operand("x", 1, dX, x);
    parity_op_call call;
    char zErr[512];
    float s = 0.0f;
    double sBf = 0.0;
    uint64_t i;

    for (i = 0; i < K; i++) s += (float)x[i];
    for (i = 0; i < K; i++) {
        uint16_t bits;
        /* add in float32 (exact enough), round the running sum to bfloat16 each time */
        parity_encode(PARITY_DT_BF16, (double)((float)sBf + (float)x[i]), &bits);
        parity_decode(PARITY_DT_BF16, &bits, &sBf, 1);
    }
    cr_assert(op_begin(&call, "sum", &in, 1, 0, NULL, NULL, 0, zErr, sizeof zErr) == 0, "%s",
              zErr);
    c = s;
    *pJ32 = op_judge(&call, &c);
    c = sBf;
    if (pJbf) *pJbf = op_judge(&call, &c);
    cr_log_info("sum K=%llu: f32 error %.4g, bf16-accumulated error %.4g, bound %.4g",
                (unsigned long long)K, pJ32->maxErrCompiled,
                pJbf ? pJbf->maxErrCompiled : 0.0, pJ32->maxBound);
    parity_op_end(&call);
    free(x);
}

Test(reduce, long_sum_f32_passes_bf16_accumulation_fails)
{
    parity_judgement j32, jbf;
    long_sum(100000, &j32, &jbf);
    cr_expect_eq(j32.nChecked, 1);
    cr_expect_eq(j32.nFail, 0, "sequential float32 sum: error %g, bound %g", j32.maxErrCompiled,
                 j32.maxBound);
    cr_expect_eq(jbf.nFail, 1, "bf16-accumulated sum: error %g, bound %g", jbf.maxErrCompiled,
                 jbf.maxBound);
}

Test(reduce, sum_bound_grows_with_n)
{
    parity_judgement a, b, c;
    long_sum(100, &a, NULL);
    long_sum(1000, &b, NULL);
    long_sum(10000, &c, NULL);
    /* gamma_{n-1} ~ n and sum|x| ~ n: about n^2 once the n-dependent part dominates. */
    cr_expect_gt(b.maxBound, 10.0 * a.maxBound, "n=100 %g, n=1000 %g", a.maxBound, b.maxBound);
    cr_expect_gt(c.maxBound, 50.0 * b.maxBound, "n=1000 %g, n=10000 %g", b.maxBound,
                 c.maxBound);
    cr_expect_eq(a.nFail + b.nFail + c.nFail, 0);
}

Test(reduce, nan_propagates_and_inf)
{
    uint64_t dX[2] = { 3, 4 }, dOut[1] = { 3 };
    double x[12] = { 1, 2, 3, 4, 5, NAN, 7, 8, INFINITY, -INFINITY, 1, 2 };
    double ref, bound;
    int64_t dim = 1;
    parity_operand in = operand("x", 2, dX, x);
    parity_attr at = attr_int(0, "dim", dim);
    parity_op_call call;
    parity_judgement j;
    char zErr[512];
    static const char *const azOp[4] = { "sum", "mean", "amax", "amin" };
    int i;

    for (i = 0; i < 4; i++) {
        cr_assert(op_begin(&call, azOp[i], &in, 1, 1, dOut, &at, 1, zErr, sizeof zErr) == 0,
                  "%s", zErr);
        op_element(&call, 1, &ref, &bound);
        cr_expect(ref != ref, "%s of a row with NaN: %g", azOp[i], ref);
        op_element(&call, 2, &ref, &bound);
        if (i < 2) cr_expect(ref != ref, "%s of +Inf and -Inf: %g", azOp[i], ref);
        else cr_expect_eq(ref, i == 2 ? INFINITY : -INFINITY);
        parity_op_end(&call);
    }
    /* amax ignoring the NaN (fmax-style) fails exactly row 1. */
    cr_assert(op_begin(&call, "amax", &in, 1, 1, dOut, &at, 1, zErr, sizeof zErr) == 0);
    {
        double c[3] = { 4, 8, INFINITY };
        j = op_judge(&call, c);
        cr_expect_eq(j.nFail, 1);
        cr_expect_eq(j.aSliceLo[0], 1);
        cr_expect_eq(j.aSliceHi[0], 2);
    }
    parity_op_end(&call);
}

Test(reduce, empty_reductions)
{
    uint64_t dX[2] = { 3, 0 }, dOut[1] = { 3 };
    double x[1] = { 0 }, ref, bound;
    parity_operand in = operand("x", 2, dX, x);
    parity_attr at = attr_int(0, "dim", 1);
    parity_op_call call;
    char zErr[512];

    cr_assert(op_begin(&call, "sum", &in, 1, 1, dOut, &at, 1, zErr, sizeof zErr) == 0, "%s", zErr);
    op_element(&call, 2, &ref, &bound);
    cr_expect(ref == 0.0 && bound == 0.0, "empty sum %g bound %g", ref, bound);
    parity_op_end(&call);
    cr_assert(op_begin(&call, "mean", &in, 1, 1, dOut, &at, 1, zErr, sizeof zErr) == 0, "%s", zErr);
    op_element(&call, 0, &ref, &bound);
    cr_expect(ref != ref, "empty mean %g", ref);
    parity_op_end(&call);
    cr_expect(op_begin(&call, "amax", &in, 1, 1, dOut, &at, 1, zErr, sizeof zErr) == -1);
    cr_expect(strstr(zErr, "empty") && strstr(zErr, "[3, 0]"), "%s", zErr);
    cr_expect(op_begin(&call, "amin", &in, 1, 1, dOut, &at, 1, zErr, sizeof zErr) == -1);
}

Test(reduce, keepdim_must_be_boolean)
{
    uint64_t dX[2] = { 3, 4 }, dOut[1] = { 3 };
    double x[12] = { 0 };
    parity_operand in = operand("x", 2, dX, x);
    parity_attr aAttr[2] = { attr_int(0, "dim", 1), attr_int(1, "keepdim", 2) };
    parity_op_call call;
    char zErr[512];
    cr_expect(op_begin(&call, "sum", &in, 1, 1, dOut, aAttr, 2, zErr, sizeof zErr) == -1);
    cr_expect(strstr(zErr, "keepdim"), "%s", zErr);
}

/* The registry's one broadcasting rule (parity_broadcast_shape): a 1 gives way to any
 * size, 0 included, as torch broadcasts; matmul's batch dims follow the same rule. */
Test(binary, broadcasting_takes_zero_against_one)
{
    uint64_t d0[2] = { 0, 3 }, d1[2] = { 1, 3 }, aOut[2] = { 0, 3 }, aBad[2] = { 1, 3 };
    uint64_t aA[3] = { 0, 2, 3 }, aB[3] = { 1, 3, 4 }, aMm[3] = { 0, 2, 4 };
    double x[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };   /* b [1, 3, 4] reads 12 */
    parity_operand aIn[2] = { operand("x", 2, d0, x), operand("y", 2, d1, x) };
    parity_operand aMat[2] = { operand("a", 3, aA, x), operand("b", 3, aB, x) };
    parity_op_call call;
    char zErr[512];
    cr_assert_eq(op_begin(&call, "add", aIn, 2, 2, aOut, NULL, 0, zErr, sizeof zErr), 0, "%s", zErr);
    cr_expect_eq(call.nOut, 0);
    parity_op_end(&call);
    cr_expect_eq(op_begin(&call, "add", aIn, 2, 2, aBad, NULL, 0, zErr, sizeof zErr), -1,
                 "[0, 3] + [1, 3] is [0, 3], not [1, 3]");
    parity_op_end(&call);
    cr_assert_eq(op_begin(&call, "matmul", aMat, 2, 3, aMm, NULL, 0, zErr, sizeof zErr), 0, "%s",
                 zErr);
    cr_expect_eq(call.geom.dot.nMat, 0);
    parity_op_end(&call);
}

/* ---- addmm, baddbmm -------------------------------------------------------------- */

/* addmm(c, a, b, beta 0.5, alpha 2) on small integers, worked out by hand: a [2, 3] =
 * [[1, 2, 3], [4, 5, 6]], b [3, 2] = [[1, 0], [0, 1], [1, 1]], so a b = [[4, 5], [10, 11]];
 * c [2] = [2, -2] broadcast over rows: 2 a b + 0.5 c = [[9, 9], [21, 21]]. A float32 kernel
 * (sum, times alpha, plus beta c) passes, 3x the bound fails; beta 0 ignores a NaN in c
 * (torch's rule); shapes that do not fit are errors naming them. */
Test(addmm, hand_worked_alpha_beta_broadcast_and_beta_zero)
{
    uint64_t dA[2] = { 2, 3 }, dB[2] = { 3, 2 }, dC[1] = { 2 }, dOut[2] = { 2, 2 };
    uint64_t dBad[2] = { 3, 3 }, dB3[3] = { 2, 2, 3 };
    double a[6] = { 1, 2, 3, 4, 5, 6 }, b[6] = { 1, 0, 0, 1, 1, 1 }, c[2] = { 2, -2 };
    double cNan[2] = { NAN, 1 }, want[4] = { 9, 9, 21, 21 }, ab[4] = { 4, 5, 10, 11 };
    double ref, bound;
    parity_operand aIn[3] = { operand("c", 1, dC, c), operand("a", 2, dA, a), operand("b", 2, dB, b) };
    parity_attr aAttr[2] = { attr_float(0, "beta", 0.5), attr_float(1, "alpha", 2.0) };
    parity_attr aZero[1] = { attr_float(2, "beta", 0.0) };
    parity_op_call call;
    parity_judgement j;
    char zErr[512];
    uint64_t i;
    op_begin_ok(&call, "aten.addmm.default", aIn, 3, 2, dOut, aAttr, 2);
    for (i = 0; i < 4; i++) {
        op_element(&call, i, &ref, &bound);
        cr_expect_eq(ref, want[i], "element %llu: %g", (unsigned long long)i, ref);
        cr_expect(bound > 0.0 && bound < 1e-4, "element %llu: bound %g", (unsigned long long)i, bound);
    }
    j = op_judge(&call, want);
    cr_expect_eq(j.nFail, 0);
    expect_injection_fails(&call, want, 2);
    parity_op_end(&call);
    aIn[0] = operand("c", 1, dC, cNan);
    op_begin_ok(&call, "addmm", aIn, 3, 2, dOut, aZero, 1);
    j = op_judge(&call, ab);
    cr_expect_eq(j.nFail, 0, "beta 0: c (a NaN) ignored, the output is a b");
    parity_op_end(&call);
    aIn[0] = operand("c", 2, dBad, c);
    cr_expect_eq(op_begin(&call, "addmm", aIn, 3, 2, dOut, NULL, 0, zErr, sizeof zErr), -1);
    cr_expect(strstr(zErr, "addend [3, 3] does not broadcast to [2, 2]"), "%s", zErr);
    parity_op_end(&call);
    aIn[0] = operand("c", 1, dC, c);
    aIn[1] = operand("a", 3, dB3, a);
    cr_expect_eq(op_begin(&call, "addmm", aIn, 3, 2, dOut, NULL, 0, zErr, sizeof zErr), -1);
    cr_expect(strstr(zErr, "needs [M, K] and [K, N]"), "%s", zErr);
    parity_op_end(&call);
}

/* baddbmm over a batch of 2: each matrix its own product, the bound growing with K as the
 * matmul model's (gamma_{K+3}). */
Test(addmm, baddbmm_batches_and_bound_grows_with_k)
{
    uint64_t dA[3] = { 2, 2, 3 }, dB[3] = { 2, 3, 2 }, dC[3] = { 2, 2, 2 }, dOut[3] = { 2, 2, 2 };
    double a[12] = { 1, 2, 3, 4, 5, 6, 1, 1, 1, 0, 0, 0 };
    double b[12] = { 1, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 2 };
    double c[8] = { 0, 0, 0, 0, 1, 1, 1, 1 }, want[8] = { 4, 5, 10, 11, 7, 7, 1, 1 };
    parity_operand aIn[3] = { operand("c", 3, dC, c), operand("a", 3, dA, a), operand("b", 3, dB, b) };
    parity_op_call call;
    parity_judgement j;
    double ref, bound3, bound64;
    op_begin_ok(&call, "aten.baddbmm.default", aIn, 3, 3, dOut, NULL, 0);
    j = op_judge(&call, want);
    cr_expect_eq(j.nFail, 0);
    op_element(&call, 0, &ref, &bound3);
    parity_op_end(&call);
    {
        uint64_t dA64[3] = { 1, 1, 64 }, dB64[3] = { 1, 64, 1 }, dC1[1] = { 1 }, dO[3] = { 1, 1, 1 };
        double a64[64], b64[64], c1[1] = { 0 };
        int k;
        for (k = 0; k < 64; k++) { a64[k] = 1.0 + k % 3; b64[k] = 0.5; }
        aIn[0] = operand("c", 1, dC1, c1);
        aIn[1] = operand("a", 3, dA64, a64);
        aIn[2] = operand("b", 3, dB64, b64);
        op_begin_ok(&call, "baddbmm", aIn, 3, 3, dO, NULL, 0);
        op_element(&call, 0, &ref, &bound64);
        parity_op_end(&call);
        cr_expect(bound64 > bound3, "K 64 bound %g <= K 3 bound %g", bound64, bound3);
    }
}

/* ---- where and masked_fill (op_where.c) ---------------------------------------------
 *
 * Exact selections with torch broadcasting: hand-worked values over broadcast operands,
 * NaN in the branch taken propagates and in the branch not taken does not matter, one ulp
 * off fails exactly there, masked_fill's value is rounded to x's dtype and may be a 0-d
 * operand, the mask grows x (out-of-place masked_fill), a float mask and bad shapes are
 * refused. */

Test(where, hand_worked_broadcast_and_nan)
{
    uint64_t dC[2] = { 2, 1 }, dX[1] = { 3 }, dOut[2] = { 2, 3 };
    double cond[2] = { 1, 0 }, x[3] = { 1.5, NAN, -0.0 }, y[1] = { 4 };
    double want[6] = { 1.5, NAN, -0.0, 4, 4, 4 }, ref, b;
    parity_operand aIn[3] = { op_operand("cond", PARITY_DT_BOOL, 2, dC, cond),
                              operand("x", 1, dX, x), operand("y", 0, NULL, y) };
    parity_op_call call;
    parity_judgement j;
    int i;
    op_begin_ok(&call, "where", aIn, 3, 2, dOut, NULL, 0);
    for (i = 0; i < 6; i++) {
        op_element(&call, (uint64_t)i, &ref, &b);
        cr_expect(same_double(ref, want[i]) && b == 0.0, "where[%d] = %g (bound %g)", i, ref, b);
    }
    j = op_judge(&call, want);
    cr_expect_eq(j.nFail, 0);
    expect_injection_fails(&call, want, 3);
    want[1] = 0.0;                       /* the NaN taken, replaced: fails */
    j = op_judge(&call, want);
    cr_expect_eq(j.nFail, 1);
    parity_op_end(&call);
    cr_expect(parity_op_find("aten.where.self") == &parity_op_where);
}

Test(masked_fill, value_rounded_broadcast_and_operand_form)
{
    uint64_t dX[2] = { 2, 3 }, dM[1] = { 3 }, dM3[3] = { 2, 1, 3 }, dOut3[3] = { 2, 2, 3 };
    double x[6] = { 1, 2, 3, 4, NAN, 6 }, m[3] = { 0, 1, 0 }, m3[6] = { 1, 0, 0, 0, 0, 1 };
    double v[1] = { -2.5 }, c[12], ref, b;
    parity_operand aIn[3] = { operand("x", 2, dX, x), op_operand("mask", PARITY_DT_BOOL, 1, dM, m),
                              operand("value", 0, NULL, v) };
    parity_attr aAttr[1] = { attr_float(0, "value", 0.1) };
    parity_op_call call;
    parity_judgement j;
    int i;
    /* the value attribute, rounded to float32 as torch casts it; the NaN under the mask goes */
    op_begin_ok(&call, "masked_fill", aIn, 2, 2, dX, aAttr, 1);
    for (i = 0; i < 6; i++) c[i] = m[i % 3] != 0 ? (double)0.1f : x[i];
    op_element(&call, 4, &ref, &b);
    cr_expect(ref == (double)0.1f && b == 0.0, "masked value %a", ref);
    j = op_judge(&call, c);
    cr_expect_eq(j.nFail, 0);
    expect_injection_fails(&call, c, 1);
    parity_op_end(&call);
    /* masked_fill.Tensor: the value a 0-d operand */
    op_begin_ok(&call, "aten.masked_fill.Tensor", aIn, 3, 2, dX, NULL, 0);
    op_element(&call, 1, &ref, &b);
    cr_expect(ref == -2.5);
    op_element(&call, 0, &ref, &b);
    cr_expect(ref == 1.0);
    parity_op_end(&call);
    /* a mask [2, 1, 3] grows x [2, 3] to [2, 2, 3], as torch's out-of-place masked_fill */
    aIn[1] = op_operand("mask", PARITY_DT_BOOL, 3, dM3, m3);
    op_begin_ok(&call, "masked_fill", aIn, 2, 3, dOut3, aAttr, 1);
    for (i = 0; i < 12; i++) c[i] = m3[(i / 6) * 3 + i % 3] != 0 ? (double)0.1f : x[i % 6];
    j = op_judge(&call, c);
    cr_expect_eq(j.nFail, 0);
    parity_op_end(&call);
}

Test(masked_fill, bad_operands_are_refused)
{
    uint64_t dX[2] = { 2, 3 }, dBad[1] = { 2 };
    double x[6] = { 0 }, m[3] = { 0 }, v[2] = { 0 };
    parity_operand aIn[3] = { operand("x", 2, dX, x), operand("mask", 1, dX + 1, m),
                              operand("value", 1, dBad, v) };
    parity_attr aAttr[1] = { attr_float(0, "value", 1.0) };
    parity_op_call call;
    char zErr[512];
    /* a float32 mask: torch refuses it */
    cr_expect_eq(op_begin(&call, "masked_fill", aIn, 2, 2, dX, aAttr, 1, zErr, sizeof zErr), -1);
    cr_expect(strstr(zErr, "bool") != NULL, "%s", zErr);
    aIn[1].dtype = PARITY_DT_BOOL;
    /* no value at all; both an attribute and an operand; a value operand of rank 1 */
    cr_expect_eq(op_begin(&call, "masked_fill", aIn, 2, 2, dX, NULL, 0, zErr, sizeof zErr), -1);
    cr_expect_eq(op_begin(&call, "masked_fill", aIn, 3, 2, dX, aAttr, 1, zErr, sizeof zErr), -1);
    cr_expect_eq(op_begin(&call, "masked_fill", aIn, 3, 2, dX, NULL, 0, zErr, sizeof zErr), -1);
    cr_expect(strstr(zErr, "0-dimensional") != NULL, "%s", zErr);
    /* a mask that does not broadcast, and a wrong output shape */
    aIn[1] = op_operand("mask", PARITY_DT_BOOL, 1, dBad, m);
    cr_expect_eq(op_begin(&call, "masked_fill", aIn, 2, 2, dX, aAttr, 1, zErr, sizeof zErr), -1);
    aIn[1] = op_operand("mask", PARITY_DT_U8, 1, dX + 1, m);   /* uint8: accepted */
    cr_expect_eq(op_begin(&call, "masked_fill", aIn, 2, 2, dX, aAttr, 1, zErr, sizeof zErr), 0,
                 "%s", zErr);
    parity_op_end(&call);
    cr_expect_eq(op_begin(&call, "masked_fill", aIn, 2, 1, dX, aAttr, 1, zErr, sizeof zErr), -1);
    cr_expect(parity_op_find("aten.masked_fill.Scalar") == &parity_op_masked_fill);
}

/* ---- a Python number as the `other` attribute (torch's add.Scalar, mul.Scalar) ----- */

/* bfloat16 x in [0.5, 4.5] times the Python number 0.1, as torch 1.13 computes it (the
 * scalar cast to bfloat16 first) and as torch 2.x does (the scalar read as float32, the
 * opmath type): both are correct kernels, and pass; the same product off by an ulp of the
 * output fails. */
Test(binary, scalar_attribute_both_torch_roundings_pass)
{
    enum { N = 4096 };
    uint64_t d[1] = { N };
    double *x = random_values(N, 21, 0.5f, 4.5f), *c113 = malloc(N * sizeof *c113);
    double *c2 = malloc(N * sizeof *c2), s113 = parity_round_double_to_dtype(0.1, PARITY_DT_BF16);
    parity_operand aIn[1];
    parity_attr at = attr_float(0, "other", 0.1);
    parity_op_call call;
    parity_judgement j;
    char zErr[512];
    int i, nDiffer = 0;

    cr_assert(c113 && c2);
    for (i = 0; i < N; i++) {
        x[i] = parity_round_double_to_dtype(x[i], PARITY_DT_BF16);
        c113[i] = parity_round_double_to_dtype((double)((float)x[i] * (float)s113),
                                               PARITY_DT_BF16);
        c2[i] = parity_round_double_to_dtype((double)((float)x[i] * 0.1f), PARITY_DT_BF16);
        nDiffer += c113[i] != c2[i];
    }
    cr_assert_gt(nDiffer, N / 20, "the two roundings differ on %d elements only", nDiffer);
    aIn[0] = op_operand("x", PARITY_DT_BF16, 1, d, x);
    cr_assert(parity_op_begin(&call, parity_op_find("aten.mul.Scalar"), aIn, 1, PARITY_DT_BF16,
                              1, d, PARITY_DT_INVALID, &at, 1, zErr, sizeof zErr) == 0,
              "%s", zErr);
    cr_expect_eq(call.nIn, 2);
    cr_expect_eq(call.aIn[1].dtype, PARITY_DT_F64);
    cr_expect_eq(call.aIn[1].aValue[0], 0.1);   /* the number as recorded, not rounded */
    j = op_judge(&call, c113);
    cr_expect_eq(j.nFail, 0, "torch 1.13's rounding: %llu failures (worst ratio %g)",
                 (unsigned long long)j.nFail, j.worstRatio);
    j = op_judge(&call, c2);
    cr_expect_eq(j.nFail, 0, "torch 2.x's rounding: %llu failures (worst ratio %g)",
                 (unsigned long long)j.nFail, j.worstRatio);
    c2[7] += parity_ulp_at(PARITY_DT_BF16, fabs(c2[7]));
    c2[9] = c2[9] * (1.0 + 0x1p-5);   /* 4 ulps of bfloat16 */
    j = op_judge(&call, c2);
    cr_expect_eq(j.nFail, 2, "an ulp off must fail: %llu failures",
                 (unsigned long long)j.nFail);
    parity_op_end(&call);
    free(x);
    free(c113);
    free(c2);
}

/* add_.Scalar (torch 2.x's nn.RMSNorm adds eps so): x + eps with alpha, float32. */
Test(binary, scalar_attribute_add_with_alpha)
{
    uint64_t d[2] = { 2, 3 };
    double x[6] = { 1, 2, 3, 4, 5, 6 }, c[6], ref, bound;
    parity_operand aIn[1] = { operand("x", 2, d, x) };
    parity_attr aAt[2] = { attr_float(0, "other", 1e-6), attr_float(1, "alpha", 2.0) };
    parity_op_call call;
    parity_judgement j;
    char zErr[512];
    int i;
    cr_assert(op_begin(&call, "aten.add_.Scalar", aIn, 1, 2, d, aAt, 2, zErr, sizeof zErr) == 0,
              "%s", zErr);
    for (i = 0; i < 6; i++) c[i] = (float)((float)x[i] + 2.0f * 1e-6f);
    j = op_judge(&call, c);
    cr_expect_eq(j.nFail, 0);
    op_element(&call, 1, &ref, &bound);
    cr_expect(fabs(ref - (2.0 + 2e-6)) < 1e-15, "ref %.17g", ref);
    c[4] = (float)x[4];           /* the addition forgotten: 2e-6 off, ~8 ulps at 5 */
    j = op_judge(&call, c);
    cr_expect_eq(j.nFail, 1);
    cr_expect_eq(j.worstLinear, 4);
    parity_op_end(&call);
}

/* The attribute counts for the missing input only: with both, or with neither, the call
 * is refused with a reason that names the attribute. */
Test(binary, scalar_attribute_errors)
{
    uint64_t d[1] = { 3 };
    double x[3] = { 1, 2, 3 };
    parity_operand aIn[2] = { operand("x", 1, d, x), operand("y", 1, d, x) };
    parity_attr at = attr_float(0, "other", 2.0), bad = attr_str(1, "other", "two");
    parity_op_call call;
    char zErr[512];
    cr_expect(op_begin(&call, "mul", aIn, 2, 1, d, &at, 1, zErr, sizeof zErr) == -1);
    cr_expect(strstr(zErr, "'other' is both an attribute and an input"), "%s", zErr);
    cr_expect(op_begin(&call, "div", aIn, 1, 1, d, NULL, 0, zErr, sizeof zErr) == -1);
    cr_expect(strstr(zErr, "2 inputs") && strstr(zErr, "'other'"), "%s", zErr);
    cr_expect(op_begin(&call, "add", aIn, 1, 1, d, &bad, 1, zErr, sizeof zErr) == -1);
    cr_expect(strstr(zErr, "other"), "%s", zErr);
    cr_expect(op_begin(&call, "maximum", aIn, 1, 1, d, &at, 1, zErr, sizeof zErr) == -1);
    cr_expect(strstr(zErr, "2 inputs") && !strstr(zErr, "'other'"), "%s", zErr);
}
