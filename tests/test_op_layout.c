/*
 * test_op_layout.c - the layout ops (transpose, permute, reshape: tolerance/op_layout.c) and
 * cast (tolerance/op_cast.c), through the registry (parity_op_find, parity_op_begin) and the
 * element judge (parity_judge).
 *
 * 1. transpose of a [3, 4, 5] over dims (0, 2) and (-1, -2), and permute with a list, moved
 *    correctly (NaN and -0 included): nothing fails; one element replaced, or two swapped,
 *    fails exactly those elements.
 * 2. Bad dims (out of range, repeated, wrong length), a wrong output shape or a narrowed
 *    dtype: parity_op_begin returns -1 with a message naming the problem.
 * 3. reshape with and without `shape`, with -1 inferred; mismatched counts are errors.
 * 4. cast float32 -> bfloat16 / float16 / float8_e4m3fn rounded to nearest even (by
 *    parity_encode) passes; a cast rounding toward zero fails exactly where RTZ and RNE
 *    differ; float -> int32 truncates toward zero, and undefined values are skipped.
 * 5. cast's `to`: missing, unknown, not a string or not the output dtype is an error, and
 *    the storage attribute `dtype` is never taken for it.
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

/* ---- helpers --------------------------------------------------------------------- */

static parity_attr owned_attr_ints(const char *zName, int64_t *aInt, size_t n, int isArray)
{
    parity_attr a;
    memset(&a, 0, sizeof a);
    a.zName = (char *)zName;
    a.kind = PARITY_ATTR_INT;
    a.isArray = isArray;
    a.n = n;
    a.aInt = aInt;
    return a;
}

static parity_attr owned_attr_str(const char *zName, char **azStr)
{
    parity_attr a;
    memset(&a, 0, sizeof a);
    a.zName = (char *)zName;
    a.kind = PARITY_ATTR_STRING;
    a.n = 1;
    a.azStr = azStr;
    return a;
}

static parity_operand operand(parity_dtype dt, int rank, const uint64_t *aDim, double *aValue)
{
    return op_operand("/x", dt, rank, aDim, aValue);
}

/* parity_op_begin for op zOp over one operand; returns its result, message in zErr. */
static int begin1(parity_op_call *pCall, const char *zOp, const parity_operand *pX,
                  parity_dtype outDt, int outRank, const uint64_t *aOutDim,
                  const parity_attr *aAttr, size_t nAttr, char *zErr, size_t nErr)
{
    const parity_op_def *pDef = parity_op_find(zOp);
    cr_assert_not_null(pDef, "op %s is not registered", zOp);
    zErr[0] = 0;
    return parity_op_begin(pCall, pDef, pX, 1, outDt, outRank, aOutDim, PARITY_DT_INVALID,
                           aAttr, nAttr, zErr, nErr);
}

/* Judges aOut (compiled only) and ends the call. */
static parity_judgement judge_end(parity_op_call *pCall, const double *aOut)
{
    parity_judgement j;
    char zErr[PARITY_ERR_LEN];
    cr_assert_eq(parity_judge(pCall, NULL, aOut, &j, zErr, sizeof zErr), 0, "%s", zErr);
    parity_op_end(pCall);
    return j;
}

/* The [3, 4, 5] input: distinct values, with a NaN, a -0 and an infinity among them. */
static const uint64_t kIn3[3] = {3, 4, 5};
static double g_aX[60];

static void fill_x(void)
{
    int i;
    for (i = 0; i < 60; i++) g_aX[i] = (double)(float)(i * 1.25 - 30.0 + 1.0 / (i + 3));
    g_aX[7] = NAN;
    g_aX[11] = -0.0;
    g_aX[42] = -INFINITY;
}

/* The permutation of g_aX (shape kIn3) by aPerm, into aOut (shape aOutDim). */
static void permute_ref(const int *aPerm, double *aOut, uint64_t *aOutDim)
{
    uint64_t aStride[3] = {20, 5, 1}, i, aIdx[3];
    int d;
    for (d = 0; d < 3; d++) aOutDim[d] = kIn3[aPerm[d]];
    for (i = 0; i < 60; i++) {
        uint64_t off = 0;
        parity_unravel(3, aOutDim, i, aIdx);
        for (d = 0; d < 3; d++) off += aIdx[d] * aStride[aPerm[d]];
        aOut[i] = g_aX[off];
    }
}

static int has(const char *z, const char *zPart) { return strstr(z, zPart) != NULL; }

/* ---- 1. transpose and permute moved correctly ------------------------------------------- */

static void check_transpose(int64_t d0, int64_t d1, const int *aPerm)
{
    int64_t a0 = d0, a1 = d1;
    parity_attr aAttr[2] = {owned_attr_ints("dim0", &a0, 1, 0), owned_attr_ints("dim1", &a1, 1, 0)};
    parity_operand x;
    parity_op_call call;
    parity_judgement j;
    uint64_t aOutDim[3];
    double aOut[60];
    char zErr[PARITY_ERR_LEN];

    fill_x();
    x = operand(PARITY_DT_F32, 3, kIn3, g_aX);
    permute_ref(aPerm, aOut, aOutDim);
    cr_assert_eq(begin1(&call, "transpose", &x, PARITY_DT_F32, 3, aOutDim, aAttr, 2, zErr,
                        sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aOut);
    cr_expect_eq(j.nChecked, 60);
    cr_expect_eq(j.nFail, 0, "transpose(%lld, %lld): %llu failures", (long long)d0,
                 (long long)d1, (unsigned long long)j.nFail);
    cr_expect_eq(j.nWithin, 60);
    cr_expect_eq(j.maxErrCompiled, 0.0);
}

Test(layout, transpose_correct)
{
    static const int aPerm02[3] = {2, 1, 0}, aPerm12[3] = {0, 2, 1};
    check_transpose(0, 2, aPerm02);
    check_transpose(2, 0, aPerm02);
    check_transpose(-1, -2, aPerm12);
    check_transpose(-3, 2, aPerm02);
}

Test(layout, transpose_one_wrong_element_fails_alone)
{
    static const int aPerm[3] = {2, 1, 0};
    int64_t a0 = 0, a1 = 2;
    parity_attr aAttr[2] = {owned_attr_ints("dim0", &a0, 1, 0), owned_attr_ints("dim1", &a1, 1, 0)};
    parity_operand x;
    parity_op_call call;
    parity_judgement j;
    uint64_t aOutDim[3], aIdx[3];
    double aOut[60];
    char zErr[PARITY_ERR_LEN];
    const uint64_t k = 37;   /* output [1, 3, 2] */

    fill_x();
    x = operand(PARITY_DT_F32, 3, kIn3, g_aX);
    permute_ref(aPerm, aOut, aOutDim);
    cr_assert(aOut[k] == aOut[k] && aOut[k + 1] == aOut[k + 1] && aOut[k] != aOut[k + 1]);
    aOut[k] = aOut[k + 1];     /* the neighbour's value: a plausible indexing slip */
    cr_assert_eq(begin1(&call, "transpose", &x, PARITY_DT_F32, 3, aOutDim, aAttr, 2, zErr,
                        sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aOut);
    cr_expect_eq(j.nFail, 1);
    cr_expect_eq(j.nCompiledWorse, 1);
    cr_expect_eq(j.worstLinear, k);
    parity_unravel(3, aOutDim, k, aIdx);
    cr_expect(j.aSliceLo[0] == aIdx[0] && j.aSliceHi[0] == aIdx[0] + 1
              && j.aSliceLo[1] == aIdx[1] && j.aSliceHi[1] == aIdx[1] + 1
              && j.aSliceLo[2] == aIdx[2] && j.aSliceHi[2] == aIdx[2] + 1,
              "slice is not the one element");
}

Test(layout, transpose_two_swapped_fail_both)
{
    static const int aPerm[3] = {0, 2, 1};
    int64_t a0 = -1, a1 = -2;
    parity_attr aAttr[2] = {owned_attr_ints("dim0", &a0, 1, 0), owned_attr_ints("dim1", &a1, 1, 0)};
    parity_operand x;
    parity_op_call call;
    parity_judgement j;
    uint64_t aOutDim[3];
    double aOut[60], t;
    char zErr[PARITY_ERR_LEN];

    fill_x();
    x = operand(PARITY_DT_F32, 3, kIn3, g_aX);
    permute_ref(aPerm, aOut, aOutDim);
    /* Swapping the -Inf with a finite value: both a finite and a non-finite divergence. */
    t = aOut[0]; aOut[0] = aOut[59]; aOut[59] = t;
    cr_assert_eq(begin1(&call, "transpose", &x, PARITY_DT_F32, 3, aOutDim, aAttr, 2, zErr,
                        sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aOut);
    cr_expect_eq(j.nFail, 2);
    cr_expect_eq(j.nWithin, 58);
}

Test(layout, permute_list)
{
    static const int aPerms[][3] = {{2, 0, 1}, {1, 2, 0}, {0, 1, 2}, {2, 1, 0}};
    size_t c;
    fill_x();
    for (c = 0; c < sizeof aPerms / sizeof aPerms[0]; c++) {
        int64_t aDims[3];
        parity_attr attr;
        parity_operand x = operand(PARITY_DT_F32, 3, kIn3, g_aX);
        parity_op_call call;
        parity_judgement j;
        uint64_t aOutDim[3];
        double aOut[60];
        char zErr[PARITY_ERR_LEN];
        int d;
        for (d = 0; d < 3; d++) aDims[d] = aPerms[c][d] - (c % 2 ? 3 : 0);  /* negatives too */
        attr = owned_attr_ints("dims", aDims, 3, 1);
        permute_ref(aPerms[c], aOut, aOutDim);
        cr_assert_eq(begin1(&call, "permute", &x, PARITY_DT_F32, 3, aOutDim, &attr, 1, zErr,
                            sizeof zErr), 0, "%s", zErr);
        j = judge_end(&call, aOut);
        cr_expect_eq(j.nFail, 0, "permute case %zu", c);
        cr_expect_eq(j.nWithin, 60);
    }
}

/* ---- 2. bad dims, shapes, dtypes ------------------------------------------------------------ */

static void expect_error(const char *zOp, parity_dtype inDt, int inRank, const uint64_t *aInDim,
                         parity_dtype outDt, int outRank, const uint64_t *aOutDim,
                         const parity_attr *aAttr, size_t nAttr, const char *zWant)
{
    double aV[64] = {0};
    parity_operand x = operand(inDt, inRank, aInDim, aV);
    parity_op_call call;
    char zErr[PARITY_ERR_LEN];
    cr_assert_leq(x.nElem, 64);
    cr_expect_eq(begin1(&call, zOp, &x, outDt, outRank, aOutDim, aAttr, nAttr, zErr,
                        sizeof zErr), -1, "%s: expected an error containing '%s'", zOp, zWant);
    cr_expect(has(zErr, zWant), "%s: message '%s' lacks '%s'", zOp, zErr, zWant);
}

Test(layout, bad_dims)
{
    static const uint64_t aOut543[3] = {5, 4, 3}, aOut345[3] = {3, 4, 5};
    int64_t a3 = 3, aM4 = -4, a0 = 0, a2 = 2;
    int64_t aRep[3] = {0, 0, 1}, aShort[2] = {1, 0}, aFar[3] = {0, 1, 5}, aLong[4] = {0, 1, 2, 3};
    parity_attr aT1[2] = {owned_attr_ints("dim0", &a3, 1, 0), owned_attr_ints("dim1", &a0, 1, 0)};
    parity_attr aT2[2] = {owned_attr_ints("dim0", &a0, 1, 0), owned_attr_ints("dim1", &aM4, 1, 0)};
    parity_attr aT3[1] = {owned_attr_ints("dim0", &a0, 1, 0)};
    parity_attr aT4[2] = {owned_attr_ints("dim0", &a0, 1, 0), owned_attr_ints("dim1", &a2, 1, 0)};
    parity_attr pRep = owned_attr_ints("dims", aRep, 3, 1), pShort = owned_attr_ints("dims", aShort, 2, 1);
    parity_attr pFar = owned_attr_ints("dims", aFar, 3, 1), pLong = owned_attr_ints("dims", aLong, 4, 1);

    expect_error("transpose", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 3, aOut543, aT1, 2,
                 "dim 3 out of range for rank 3");
    expect_error("transpose", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 3, aOut543, aT2, 2,
                 "dim -4 out of range for rank 3");
    expect_error("transpose", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 3, aOut543, aT3, 1,
                 "'dim1' is missing");
    expect_error("transpose", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 3, aOut543, NULL, 0,
                 "'dim0' is missing");
    /* Right dims, wrong output shape: the untransposed one. */
    expect_error("transpose", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 3, aOut345, aT4, 2,
                 "gives [5, 4, 3], but the output shape is [3, 4, 5]");
    expect_error("permute", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 3, aOut345, &pRep, 1,
                 "dim 0 repeated");
    expect_error("permute", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 3, aOut345, &pShort, 1,
                 "'dims' has 2 entries, the input has rank 3");
    expect_error("permute", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 3, aOut345, &pLong, 1,
                 "'dims' has 4 entries, the input has rank 3");
    expect_error("permute", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 3, aOut345, &pFar, 1,
                 "dim 5 out of range for rank 3");
    expect_error("permute", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 3, aOut345, NULL, 0,
                 "'dims' is missing");
    /* A narrower output dtype is a cast. */
    expect_error("transpose", PARITY_DT_F32, 3, kIn3, PARITY_DT_BF16, 3, aOut543, aT4, 2,
                 "dtype changes: use cast");
    expect_error("transpose", PARITY_DT_BF16, 3, kIn3, PARITY_DT_F16, 3, aOut543, aT4, 2,
                 "dtype changes: use cast");
    expect_error("reshape", PARITY_DT_F64, 3, kIn3, PARITY_DT_F32, 3, kIn3, NULL, 0,
                 "dtype changes: use cast");
}

Test(layout, wider_output_dtype_is_exact)
{
    /* float16 values moved into a float32 output: still a layout op, still exact. */
    static const uint64_t aIn[2] = {2, 3}, aOutDim[2] = {3, 2};
    double aX[6] = {1.0, -0.5, 65504.0, 6.103515625e-05, -5.9604644775390625e-08, 3.0};
    double aOut[6] = {aX[0], aX[3], aX[1], aX[4], aX[2], aX[5]};
    int64_t a0 = 0, a1 = 1;
    parity_attr aAttr[2] = {owned_attr_ints("dim0", &a0, 1, 0), owned_attr_ints("dim1", &a1, 1, 0)};
    parity_operand x = operand(PARITY_DT_F16, 2, aIn, aX);
    parity_op_call call;
    parity_judgement j;
    char zErr[PARITY_ERR_LEN];
    cr_assert_eq(begin1(&call, "transpose", &x, PARITY_DT_F32, 2, aOutDim, aAttr, 2, zErr,
                        sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aOut);
    cr_expect_eq(j.nFail, 0);
}

/* ---- 3. reshape ------------------------------------------------------------------------- */

static void check_reshape(int outRank, const uint64_t *aOutDim, const parity_attr *pAttr)
{
    parity_operand x;
    parity_op_call call;
    parity_judgement j;
    double aOut[60];
    char zErr[PARITY_ERR_LEN];
    fill_x();
    x = operand(PARITY_DT_F32, 3, kIn3, g_aX);
    memcpy(aOut, g_aX, sizeof aOut);
    cr_assert_eq(begin1(&call, "reshape", &x, PARITY_DT_F32, outRank, aOutDim, pAttr,
                        pAttr ? 1 : 0, zErr, sizeof zErr), 0, "%s", zErr);
    aOut[13] = -aOut[13];
    j = judge_end(&call, aOut);
    cr_expect_eq(j.nFail, 1, "reshape: the negated element alone fails");
    cr_expect_eq(j.worstLinear, 13);
}

Test(layout, reshape)
{
    static const uint64_t a12x5[2] = {12, 5}, a4x3x5[3] = {4, 3, 5}, a60[1] = {60};
    static const uint64_t a2x2x15[3] = {2, 2, 15};
    int64_t aS1[2] = {12, 5}, aS2[2] = {-1, 5}, aS3[3] = {4, -1, 5}, aS4[1] = {-1};
    int64_t aS5[3] = {2, 2, 15};
    parity_attr p1 = owned_attr_ints("shape", aS1, 2, 1), p2 = owned_attr_ints("shape", aS2, 2, 1);
    parity_attr p3 = owned_attr_ints("shape", aS3, 3, 1), p4 = owned_attr_ints("shape", aS4, 1, 1);
    parity_attr p5 = owned_attr_ints("shape", aS5, 3, 1);
    check_reshape(2, a12x5, NULL);
    check_reshape(3, a4x3x5, NULL);
    check_reshape(2, a12x5, &p1);
    check_reshape(2, a12x5, &p2);
    check_reshape(3, a4x3x5, &p3);
    check_reshape(1, a60, &p4);
    check_reshape(3, a2x2x15, &p5);
}

Test(layout, reshape_errors)
{
    static const uint64_t a12x4[2] = {12, 4}, a12x5[2] = {12, 5}, a6x10[2] = {6, 10};
    int64_t aS1[2] = {-1, -1}, aS2[2] = {-1, 7}, aS3[2] = {12, 5}, aS4[2] = {-2, 5};
    int64_t aS5[2] = {12, 4};
    parity_attr p1 = owned_attr_ints("shape", aS1, 2, 1), p2 = owned_attr_ints("shape", aS2, 2, 1);
    parity_attr p3 = owned_attr_ints("shape", aS3, 2, 1), p4 = owned_attr_ints("shape", aS4, 2, 1);
    parity_attr p5 = owned_attr_ints("shape", aS5, 2, 1);
    expect_error("reshape", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 2, a12x4, NULL, 0,
                 "(60 elements) cannot become output shape [12, 4] (48 elements)");
    expect_error("reshape", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 2, a12x4, &p5, 1,
                 "cannot become output shape [12, 4]");
    expect_error("reshape", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 2, a12x5, &p1, 1,
                 "only one -1");
    expect_error("reshape", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 2, a12x5, &p2, 1,
                 "cannot infer the -1");
    expect_error("reshape", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 2, a6x10, &p3, 1,
                 "'shape' gives [12, 5], but the output shape is [6, 10]");
    expect_error("reshape", PARITY_DT_F32, 3, kIn3, PARITY_DT_F32, 2, a12x5, &p4, 1,
                 "invalid size -2");
}

/* ---- 4. cast ---------------------------------------------------------------------------- */

/* float32 inputs: ties, near-ties, subnormals of every target, overflow, specials, and a
 * sweep of random bit patterns. */
#define N_CAST 4096
static double g_aC[N_CAST];

static void fill_cast_inputs(int withSpecials)
{
    static const float kFixed[] = {
        1.0f, -1.0f, 1.00390625f /* bf16 tie, even below */, 1.01171875f /* tie, even above */,
        1.00048828125f /* f16 tie */, 1.0625f /* e4m3 tie */, 1.1875f, 240.0f, 464.0f, 448.0f,
        65504.0f, 65520.0f /* f16 overflow tie */, 3.3895314e38f, 3.4028235e38f, 1e-40f,
        -1e-40f, 5.96e-8f, 2.98e-8f, 2.9802322e-08f, 1.953125e-3f, 9.765625e-4f, 1e-3f,
        -1e-3f, 0.0f, -0.0f, 1e-45f, 3.0e-39f, 0.1f, -0.1f, 1234.5678f, -98765.4f,
    };
    uint64_t s = 0x5eed;
    size_t i, nFixed = sizeof kFixed / sizeof kFixed[0];
    for (i = 0; i < N_CAST; i++) {
        float f;
        if (i < nFixed) {
            f = kFixed[i];
        } else {
            uint32_t b = (uint32_t)splitmix64(&s);
            /* Keep to exponents around 1 half the time, where all targets are normal. */
            if (i % 2) b = (b & 0x807fffffu) | ((uint32_t)(120 + b % 16) << 23);
            memcpy(&f, &b, 4);
            if (f != f) f = 1.5f;      /* NaNs separately */
        }
        g_aC[i] = f;
    }
    if (withSpecials) {
        g_aC[N_CAST - 1] = NAN;
        g_aC[N_CAST - 2] = INFINITY;
        g_aC[N_CAST - 3] = -INFINITY;
    }
}

/* The value of x in dt rounded to nearest even, via the storage encoder. */
static double rne(parity_dtype dt, double x)
{
    unsigned char a[8];
    double y;
    parity_encode(dt, x, a);
    parity_decode(dt, a, &y, 1);
    return y;
}

static int begin_cast(parity_op_call *pCall, const parity_operand *pX, parity_dtype outDt,
                      const char *zTo, char *zErr, size_t nErr)
{
    char *azTo[1] = {(char *)zTo};
    parity_attr attr = owned_attr_str("to", azTo);
    return begin1(pCall, "cast", pX, outDt, pX->rank, pX->aDim, &attr, 1, zErr, nErr);
}

Test(cast, float32_to_narrow_rne_passes)
{
    static const parity_dtype aDt[] = {PARITY_DT_BF16, PARITY_DT_F16, PARITY_DT_F8E4M3FN,
                                       PARITY_DT_F8E5M2, PARITY_DT_F32, PARITY_DT_F64};
    static const uint64_t aDim[1] = {N_CAST};
    static double aOut[N_CAST];
    size_t t, i;
    fill_cast_inputs(1);
    for (t = 0; t < sizeof aDt / sizeof aDt[0]; t++) {
        parity_operand x = operand(PARITY_DT_F32, 1, aDim, g_aC);
        parity_op_call call;
        parity_judgement j;
        char zErr[PARITY_ERR_LEN];
        size_t nNaN = 0, nInf = 0;
        for (i = 0; i < N_CAST; i++) {
            aOut[i] = rne(aDt[t], g_aC[i]);
            nNaN += aOut[i] != aOut[i];
            nInf += isinf(aOut[i]) != 0;
        }
        cr_assert_eq(begin_cast(&call, &x, aDt[t], parity_dtype_name(aDt[t]), zErr,
                                sizeof zErr), 0, "%s", zErr);
        j = judge_end(&call, aOut);
        cr_expect_eq(j.nFail, 0, "cast to %s: %llu failures (worst at %llu)",
                     parity_dtype_name(aDt[t]), (unsigned long long)j.nFail,
                     (unsigned long long)j.worstLinear);
        cr_expect_eq(j.maxErrCompiled, 0.0);
        cr_expect_eq(j.maxBound, 0.0);
        if (aDt[t] == PARITY_DT_F8E4M3FN)
            cr_expect_gt(nNaN, 1, "e4m3fn overflow gives NaN");
        if (aDt[t] == PARITY_DT_BF16 || aDt[t] == PARITY_DT_F16)
            cr_expect_gt(nInf, 2, "%s overflow gives inf", parity_dtype_name(aDt[t]));
    }
}

/* Round toward zero into a format of p significand bits with normal exponents down to emin
 * (2^emin the smallest normal): exact for the normal and subnormal range, finite beyond
 * the largest value (RTZ never overflows to inf); NaN/inf are not asked. */
static double rtz(double x, int p, int emin, double maxFinite)
{
    int e;
    double q, ax = fabs(x);
    if (ax == 0.0) return x;
    frexp(ax, &e);
    e -= 1;                        /* ax in [2^e, 2^(e+1)) */
    if (e < emin) e = emin;
    q = ldexp(1.0, e - p + 1);     /* spacing */
    ax = floor(ax / q) * q;
    if (ax > maxFinite) ax = maxFinite;
    return copysign(ax, x);
}

Test(cast, round_toward_zero_fails_where_it_differs)
{
    static const struct { parity_dtype dt; int p, emin; } aFmt[] = {
        {PARITY_DT_BF16, 8, -126}, {PARITY_DT_F16, 11, -14}, {PARITY_DT_F8E4M3FN, 4, -6},
    };
    static const uint64_t aDim[1] = {N_CAST};
    static double aOut[N_CAST];
    size_t t, i;
    fill_cast_inputs(0);
    for (t = 0; t < sizeof aFmt / sizeof aFmt[0]; t++) {
        parity_dtype dt = aFmt[t].dt;
        parity_operand x = operand(PARITY_DT_F32, 1, aDim, g_aC);
        parity_op_call call;
        parity_judgement j;
        char zErr[PARITY_ERR_LEN];
        uint64_t nDiffer = 0, nSame = 0;
        for (i = 0; i < N_CAST; i++) {
            double r = rne(dt, g_aC[i]);
            aOut[i] = rtz(g_aC[i], aFmt[t].p, aFmt[t].emin, parity_dtype_max_finite(dt));
            if (same_double(r, aOut[i]) || r == aOut[i]) nSame++;
            else nDiffer++;
        }
        cr_assert_gt(nDiffer, 100, "%s: too few differing elements", parity_dtype_name(dt));
        cr_assert_gt(nSame, 100);
        cr_assert_eq(begin_cast(&call, &x, dt, parity_dtype_name(dt), zErr, sizeof zErr), 0,
                     "%s", zErr);
        j = judge_end(&call, aOut);
        cr_expect_eq(j.nFail, nDiffer, "%s: %llu failures, RTZ and RNE differ at %llu",
                     parity_dtype_name(dt), (unsigned long long)j.nFail,
                     (unsigned long long)nDiffer);
        cr_expect_eq(j.nWithin, nSame);
    }
}

Test(cast, bfloat16_truncated_bits_fail)
{
    /* The classic bug: bf16 by dropping the low 16 bits of the float32. */
    static const uint64_t aDim[1] = {N_CAST};
    static double aOut[N_CAST];
    parity_operand x;
    parity_op_call call;
    parity_judgement j;
    char zErr[PARITY_ERR_LEN];
    uint64_t nDiffer = 0;
    size_t i;
    fill_cast_inputs(0);
    for (i = 0; i < N_CAST; i++) {
        float f = (float)g_aC[i];
        uint32_t b;
        memcpy(&b, &f, 4);
        b &= 0xffff0000u;
        memcpy(&f, &b, 4);
        aOut[i] = f;
        nDiffer += !(aOut[i] == rne(PARITY_DT_BF16, g_aC[i]));
    }
    x = operand(PARITY_DT_F32, 1, aDim, g_aC);
    cr_assert_eq(begin_cast(&call, &x, PARITY_DT_BF16, "bf16", zErr, sizeof zErr), 0, "%s",
                 zErr);
    j = judge_end(&call, aOut);
    cr_expect_gt(nDiffer, 100);
    cr_expect_eq(j.nFail, nDiffer);
}

/* parity_op_begin takes float outputs only (ops.c); an integer cast is then set up the way
 * parity_op_begin does it, and prepared and judged through the registered op. */
static int begin_cast_any(parity_op_call *pCall, const parity_operand *pX, parity_dtype to,
                          char *zErr, size_t nErr)
{
    char *azTo[1] = {(char *)parity_dtype_name(to)};
    parity_attr attr = owned_attr_str("to", azTo);
    const parity_op_def *pDef = parity_op_find("cast");
    int d;
    if (begin_cast(pCall, pX, to, parity_dtype_name(to), zErr, nErr) == 0) return 0;
    if (!has(zErr, "not a float type")) return -1;
    memset(pCall, 0, sizeof *pCall);
    pCall->pDef = pDef;
    pCall->aIn = pX;
    pCall->nIn = 1;
    pCall->outDtype = to;
    pCall->outRank = pX->rank;
    pCall->nOut = 1;
    for (d = 0; d < pX->rank; d++) {
        pCall->aOutDim[d] = pX->aDim[d];
        pCall->nOut *= pX->aDim[d];
    }
    pCall->accDtype = PARITY_DT_F32;
    return pDef->xPrepare(pCall, &attr, 1, zErr, nErr);
}

Test(cast, float_to_int32_truncates)
{
    static double aX[] = {2.5, -2.5, 3.5, -3.5, 2.7, -2.7, 0.5, -0.5, 0.0, -0.0, 7.0,
                          2147483647.0, -2147483648.0, 2147483647.9, -2147483648.9,
                          1e9 + 0.75, -1e9 - 0.25,
                          /* undefined in torch: any value accepted */
                          NAN, INFINITY, -INFINITY, 2147483648.0, -2147483649.0, 1e20};
    enum { N = sizeof aX / sizeof aX[0], N_DEFINED = 17 };
    static const uint64_t aDim[1] = {N};
    double aTrunc[N], aRint[N];
    parity_operand x = operand(PARITY_DT_F64, 1, aDim, aX);
    parity_op_call call;
    parity_judgement j;
    char zErr[PARITY_ERR_LEN];
    uint64_t nDiffer = 0;
    int i;
    for (i = 0; i < N; i++) {
        aTrunc[i] = i < N_DEFINED ? trunc(aX[i]) : (double)(i * 1000 - 7);   /* garbage */
        aRint[i] = i < N_DEFINED ? rint(aX[i]) : -1.0;
        if (aRint[i] > 2147483647.0) aRint[i] = 2147483647.0;
        if (aRint[i] < -2147483648.0) aRint[i] = -2147483648.0;
        if (i < N_DEFINED) nDiffer += aRint[i] != aTrunc[i];
    }
    cr_assert_eq(begin_cast_any(&call, &x, PARITY_DT_I32, zErr, sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aTrunc);
    cr_expect_eq(j.nChecked, N);
    cr_expect_eq(j.nFail, 0, "truncation toward zero: %llu failures",
                 (unsigned long long)j.nFail);

    cr_assert_eq(begin_cast_any(&call, &x, PARITY_DT_I32, zErr, sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aRint);
    cr_expect_eq(nDiffer, 5);   /* 3.5, -3.5, 2.7, -2.7, 1e9 + 0.75 */
    cr_expect_eq(j.nFail, nDiffer, "rounding instead of truncating: %llu failures",
                 (unsigned long long)j.nFail);
}

Test(cast, int_wraps_and_bool)
{
    /* int32 -> int8 wraps (two's complement); float -> bool is x != 0, NaN true;
     * float -> uint8 of a negative value is undefined (skipped). */
    static double aI[] = {127.0, 128.0, 255.0, 256.0, -129.0, -1.0, 300.0, 0.0};
    static double aWrap[] = {127.0, -128.0, -1.0, 0.0, 127.0, -1.0, 44.0, 0.0};
    static double aF[] = {0.0, -0.0, 0.25, NAN, -3.0, INFINITY};
    static double aBool[] = {0.0, 0.0, 1.0, 1.0, 1.0, 1.0};
    static double aU8In[] = {-1.0, 255.9, 256.0, 3.99};
    static double aU8[] = {17.0, 255.0, 99.0, 3.0};
    static const uint64_t aDimI[1] = {8}, aDimF[1] = {6}, aDimU[1] = {4};
    parity_operand xi = operand(PARITY_DT_I32, 1, aDimI, aI);
    parity_operand xf = operand(PARITY_DT_F32, 1, aDimF, aF);
    parity_operand xu = operand(PARITY_DT_F32, 1, aDimU, aU8In);
    parity_op_call call;
    parity_judgement j;
    char zErr[PARITY_ERR_LEN];

    cr_assert_eq(begin_cast_any(&call, &xi, PARITY_DT_I8, zErr, sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aWrap);
    cr_expect_eq(j.nFail, 0, "int32 -> int8 wraps");
    aWrap[1] = 127.0;   /* saturating instead of wrapping */
    cr_assert_eq(begin_cast_any(&call, &xi, PARITY_DT_I8, zErr, sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aWrap);
    cr_expect_eq(j.nFail, 1);

    cr_assert_eq(begin_cast_any(&call, &xf, PARITY_DT_BOOL, zErr, sizeof zErr), 0, "%s",
                 zErr);
    j = judge_end(&call, aBool);
    cr_expect_eq(j.nFail, 0, "float -> bool");

    cr_assert_eq(begin_cast_any(&call, &xu, PARITY_DT_U8, zErr, sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aU8);
    cr_expect_eq(j.nFail, 0, "float -> uint8: in range truncates, out of range skipped");
}

/* ---- 5. cast's `to` ------------------------------------------------------------------------ */

Test(cast, to_attribute_errors)
{
    static const uint64_t aDim[1] = {4};
    char *azUnknown[1] = {"float13"}, *azBf16[1] = {"bfloat16"}, *azF16[1] = {"float16"};
    int64_t aNum[1] = {5};
    parity_attr pUnknown = owned_attr_str("to", azUnknown);
    parity_attr pMismatch = owned_attr_str("to", azF16);
    parity_attr pNotStr = owned_attr_ints("to", aNum, 1, 0);
    parity_attr pStorage = owned_attr_str("dtype", azBf16);   /* storage meaning, never the target */
    static const uint64_t aDim5[1] = {5};
    parity_attr aBoth[2] = {owned_attr_str("dtype", azF16), owned_attr_str("to", azBf16)};
    double aX[4] = {1.0, 2.0, 3.0, 4.0};
    parity_operand x = operand(PARITY_DT_F32, 1, aDim, aX);
    parity_op_call call;
    parity_judgement j;
    char zErr[PARITY_ERR_LEN];

    expect_error("cast", PARITY_DT_F32, 1, aDim, PARITY_DT_BF16, 1, aDim, NULL, 0,
                 "'to' (the target dtype) is missing");
    expect_error("cast", PARITY_DT_F32, 1, aDim, PARITY_DT_BF16, 1, aDim, &pStorage, 1,
                 "'to' (the target dtype) is missing");
    expect_error("cast", PARITY_DT_F32, 1, aDim, PARITY_DT_BF16, 1, aDim, &pUnknown, 1,
                 "unknown dtype 'float13'");
    expect_error("cast", PARITY_DT_F32, 1, aDim, PARITY_DT_BF16, 1, aDim, &pMismatch, 1,
                 "'to' is float16 but the output dtype is bfloat16");
    expect_error("cast", PARITY_DT_F32, 1, aDim, PARITY_DT_BF16, 1, aDim, &pNotStr, 1,
                 "'to' must be one string");
    expect_error("cast", PARITY_DT_F32, 1, aDim, PARITY_DT_BF16, 1, aDim5, aBoth + 1, 1,
                 "input shape [4] differs from output shape [5]");

    /* `dtype` present alongside `to`: `to` decides. */
    cr_assert_eq(begin1(&call, "cast", &x, PARITY_DT_BF16, 1, aDim, aBoth, 2, zErr,
                        sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aX);
    cr_expect_eq(j.nFail, 0);
}

/* aten spellings name registry ops (the capture helper writes them as they dispatch). */
Test(registry, aten_names_find_registry_ops)
{
    static const struct { const char *zName, *zOp; } aCase[] = {
        { "aten::linear", "linear" },         { "aten.linear.default", "linear" },
        { "aten.relu_.default", "relu" },     { "aten.add.Tensor", "add" },
        { "aten.add_.Tensor", "add" },        { "aten._softmax.default", "softmax" },
        { "aten._log_softmax.default", "log_softmax" },
        { "aten::mm", "matmul" },             { "aten.native_layer_norm.default", "layer_norm" },
        { "aten.gelu.default", "gelu" },      { "aten.sum.dim_IntList", "sum" },
        { "layer_norm", "layer_norm" },        { "aten.t.default", "transpose" },
        { "aten.view.default", "reshape" },    { "aten._unsafe_view.default", "reshape" },
        { "aten.squeeze.dim", "reshape" },     { "aten.clone.default", "reshape" },
        { "aten._to_copy.default", "cast" },
        { "aten._scaled_dot_product_flash_attention_for_cpu.default",
          "scaled_dot_product_attention" },
        { "aten.addmm.default", "addmm" },    { "aten.baddbmm.default", "baddbmm" },
        { "aten.cat.default", "cat" },        { "aten.expand.default", "expand" },
    };
    static const char *const azNone[] = {
        "aten.addcmul.default", "aten::", "aten.", "torch.relu", "relu_", "aten._.default",
        "aten.conv2dx.default", "aten.relux.default", "", "aten::_",
    };
    size_t i;
    for (i = 0; i < sizeof aCase / sizeof aCase[0]; i++) {
        const parity_op_def *pDef = parity_op_find(aCase[i].zName);
        cr_assert_not_null(pDef, "%s", aCase[i].zName);
        cr_assert_str_eq(pDef->zName, aCase[i].zOp, "%s", aCase[i].zName);
    }
    for (i = 0; i < sizeof azNone / sizeof azNone[0]; i++)
        cr_assert_null(parity_op_find(azNone[i]), "%s", azNone[i]);
}

/* aten::t: transpose without dims, for a matrix; a vector stays itself. */
Test(layout, aten_t_transposes_a_matrix)
{
    static const uint64_t aIn[2] = {3, 4}, aOut[2] = {4, 3}, aVec[1] = {5};
    double aX[12], aT[12], aBad[12];
    parity_operand x;
    parity_op_call call;
    parity_judgement j;
    char zErr[PARITY_ERR_LEN];
    int r, c;
    for (r = 0; r < 3; r++)
        for (c = 0; c < 4; c++) {
            aX[r * 4 + c] = r * 10.0 + c + 0.5;
            aT[c * 3 + r] = aX[r * 4 + c];
        }
    memcpy(aBad, aX, sizeof aX);   /* the untransposed data */
    x = operand(PARITY_DT_F32, 2, aIn, aX);
    cr_assert_eq(begin1(&call, "aten.t.default", &x, PARITY_DT_F32, 2, aOut, NULL, 0, zErr,
                        sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aT);
    cr_expect_eq(j.nFail, 0);
    cr_expect_eq(j.nWithin, 12);
    cr_assert_eq(begin1(&call, "aten.t.default", &x, PARITY_DT_F32, 2, aOut, NULL, 0, zErr,
                        sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aBad);
    cr_expect_eq(j.nFail, 10, "all but the two fixed points fail: %llu",
                 (unsigned long long)j.nFail);
    x = operand(PARITY_DT_F32, 1, aVec, aX);
    cr_assert_eq(begin1(&call, "aten.t.default", &x, PARITY_DT_F32, 1, aVec, NULL, 0, zErr,
                        sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aX);
    cr_expect_eq(j.nFail, 0);
}

/* max_pool2d: torch's output sizes (padding, dilation, ceil_mode), the window maximum, a
 * NaN tap winning, one wrong element failing alone, and the parameters torch refuses. */
Test(layout, max_pool2d)
{
    static const uint64_t aIn[4] = { 1, 1, 5, 5 };
    double x[25], aOut[9];
    parity_operand op;
    parity_op_call call;
    parity_judgement j;
    char zErr[PARITY_ERR_LEN];
    int64_t k3[2] = { 3, 3 }, s2[2] = { 2, 2 }, p1[2] = { 1, 1 }, p2[2] = { 2, 2 };
    parity_attr aA[3] = { owned_attr_ints("kernel_size", k3, 2, 1), owned_attr_ints("stride", s2, 2, 1),
                          owned_attr_ints("padding", p1, 2, 1) };
    parity_attr aBad[2] = { owned_attr_ints("kernel_size", k3, 2, 1), owned_attr_ints("padding", p2, 2, 1) };
    uint64_t aOutDim[4] = { 1, 1, 3, 3 }, oy, ox;
    int i;
    for (i = 0; i < 25; i++) x[i] = (double)((i * 7) % 11) - 5.0;
    x[12] = NAN;   /* the centre: every 3x3 window with stride 2 and padding 1 but the corners */
    /* k 3, s 2, p 1 on 5x5: Ho = floor((5 + 2 - 3) / 2) + 1 = 3 */
    for (oy = 0; oy < 3; oy++)
        for (ox = 0; ox < 3; ox++) {
            double m = -INFINITY;
            int nan = 0, a, b;
            for (a = 0; a < 3; a++)
                for (b = 0; b < 3; b++) {
                    int y = (int)oy * 2 - 1 + a, xx = (int)ox * 2 - 1 + b;
                    if (y < 0 || xx < 0 || y >= 5 || xx >= 5) continue;
                    if (x[y * 5 + xx] != x[y * 5 + xx]) nan = 1;
                    else if (x[y * 5 + xx] > m) m = x[y * 5 + xx];
                }
            aOut[oy * 3 + ox] = nan ? NAN : m;
        }
    op = operand(PARITY_DT_F32, 4, aIn, x);
    cr_assert_eq(begin1(&call, "aten.max_pool2d_with_indices.default", &op, PARITY_DT_F32, 4,
                        aOutDim, aA, 3, zErr, sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aOut);
    cr_expect_eq(j.nFail, 0);
    cr_expect_eq(j.nChecked, 9);
    aOut[4] = 0.0;   /* the centre window holds the NaN */
    cr_assert_eq(begin1(&call, "max_pool2d", &op, PARITY_DT_F32, 4, aOutDim, aA, 3, zErr,
                        sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aOut);
    cr_expect_eq(j.nFail, 1);
    cr_expect_eq(j.worstLinear, 4);
    /* without padding: 5x5, k 3, s 2 -> 2x2 */
    aOutDim[2] = aOutDim[3] = 2;
    cr_expect_eq(begin1(&call, "max_pool2d", &op, PARITY_DT_F32, 4, aOutDim, aA, 2, zErr,
                        sizeof zErr), 0, "%s", zErr);
    parity_op_end(&call);
    /* padding beyond half the kernel, and a wrong output shape */
    cr_expect_eq(begin1(&call, "max_pool2d", &op, PARITY_DT_F32, 4, aOutDim, aBad, 2, zErr,
                        sizeof zErr), -1);
    cr_expect(has(zErr, "more than half the kernel"), "%s", zErr);
    parity_op_end(&call);
    aOutDim[2] = aOutDim[3] = 4;
    cr_expect_eq(begin1(&call, "max_pool2d", &op, PARITY_DT_F32, 4, aOutDim, aA, 3, zErr,
                        sizeof zErr), -1);
    parity_op_end(&call);
}

/* parity_op_begin for op zOp over n operands (cat, stack). */
static int begin_n(parity_op_call *pCall, const char *zOp, const parity_operand *aX, size_t n,
                   int outRank, const uint64_t *aOutDim, const parity_attr *aAttr,
                   size_t nAttr, char *zErr, size_t nErr)
{
    const parity_op_def *pDef = parity_op_find(zOp);
    cr_assert_not_null(pDef, "op %s is not registered", zOp);
    zErr[0] = 0;
    return parity_op_begin(pCall, pDef, aX, n, PARITY_DT_F32, outRank, aOutDim,
                           PARITY_DT_INVALID, aAttr, nAttr, zErr, nErr);
}

/* cat along dim 1 of a [2, 2] and a [2, 3] (with a NaN and a -0), torch.cat's skipped
 * legacy empty input, one wrong element failing alone, and the shapes torch refuses. */
Test(layout, cat)
{
    static const uint64_t aA[2] = { 2, 2 }, aB[2] = { 2, 3 }, aE[1] = { 0 }, aBad[2] = { 3, 3 };
    double a[4] = { 1, 2, 3, 4 }, b[6] = { 5, NAN, 7, -0.0, 9, 10 }, e[1] = { 0 };
    /* row 0: a[0..1] then b[0..2]; row 1: a[2..3] then b[3..5] */
    double want[10] = { 1, 2, 5, NAN, 7, 3, 4, -0.0, 9, 10 };
    parity_operand aX[3] = { op_operand("/a", PARITY_DT_F32, 2, aA, a),
                             op_operand("/b", PARITY_DT_F32, 2, aB, b),
                             op_operand("/e", PARITY_DT_F32, 1, aE, e) };
    parity_operand aWrong[2] = { op_operand("/a", PARITY_DT_F32, 2, aA, a),
                                 op_operand("/c", PARITY_DT_F32, 2, aBad, b) };
    int64_t dim1 = 1, dimNeg = -1, dim2 = 2;
    parity_attr aDim = owned_attr_ints("dim", &dim1, 1, 0), aNeg = owned_attr_ints("dim", &dimNeg, 1, 0);
    parity_attr aOut = owned_attr_ints("dim", &dim2, 1, 0);
    uint64_t aOutDim[2] = { 2, 5 };
    parity_op_call call;
    parity_judgement j;
    char zErr[PARITY_ERR_LEN];
    cr_assert_eq(begin_n(&call, "aten.cat.default", aX, 2, 2, aOutDim, &aDim, 1, zErr,
                         sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, want);
    cr_expect_eq(j.nFail, 0);
    cr_expect_eq(j.nChecked, 10);
    want[6] = 7.5;   /* a[1][1] */
    cr_assert_eq(begin_n(&call, "cat", aX, 3, 2, aOutDim, &aNeg, 1, zErr, sizeof zErr), 0,
                 "%s", zErr);   /* with the empty input, skipped; dim -1 */
    j = judge_end(&call, want);
    cr_expect_eq(j.nFail, 1);
    cr_expect_eq(j.worstLinear, 6);
    /* sizes that differ off dim, a dim out of range, a wrong output shape */
    cr_expect_eq(begin_n(&call, "cat", aWrong, 2, 2, aOutDim, &aDim, 1, zErr, sizeof zErr), -1);
    cr_expect(has(zErr, "has size 3 at dim 0"), "%s", zErr);
    parity_op_end(&call);
    cr_expect_eq(begin_n(&call, "cat", aX, 2, 2, aOutDim, &aOut, 1, zErr, sizeof zErr), -1);
    cr_expect(has(zErr, "out of range"), "%s", zErr);
    parity_op_end(&call);
    aOutDim[1] = 4;
    cr_expect_eq(begin_n(&call, "cat", aX, 2, 2, aOutDim, &aDim, 1, zErr, sizeof zErr), -1);
    cr_expect(has(zErr, "give shape [2, 5]"), "%s", zErr);
    parity_op_end(&call);
    /* a float64 input into a float32 output would round: a cast, refused (the layout
     * ops' one rule, parity_dtype_holds); a bfloat16 one is held exactly */
    aOutDim[1] = 5;
    aX[1].dtype = PARITY_DT_F64;
    cr_expect_eq(begin_n(&call, "cat", aX, 2, 2, aOutDim, &aDim, 1, zErr, sizeof zErr), -1);
    cr_expect(has(zErr, "input 1 is float64, which the output's float32 does not hold"), "%s", zErr);
    parity_op_end(&call);
    aX[1].dtype = PARITY_DT_BF16;
    cr_expect_eq(begin_n(&call, "cat", aX, 2, 2, aOutDim, &aDim, 1, zErr, sizeof zErr), 0, "%s", zErr);
    parity_op_end(&call);
}

/* stack of two [2, 2] along a new dim 1 and a new last dim (-1); inputs of two shapes. */
Test(layout, stack)
{
    static const uint64_t aA[2] = { 2, 2 }, aB[2] = { 2, 3 };
    double a[4] = { 1, 2, 3, 4 }, b[6] = { 5, 6, 7, 8, 9, 10 };
    double want1[8] = { 1, 2, 5, 6, 3, 4, 7, 8 }, wantLast[8] = { 1, 5, 2, 6, 3, 7, 4, 8 };
    parity_operand aX[2] = { op_operand("/a", PARITY_DT_F32, 2, aA, a),
                             op_operand("/b", PARITY_DT_F32, 2, aA, b) };
    parity_operand aBadX[2] = { op_operand("/a", PARITY_DT_F32, 2, aA, a),
                                op_operand("/b", PARITY_DT_F32, 2, aB, b) };
    int64_t dim1 = 1, dimNeg = -1;
    parity_attr aDim = owned_attr_ints("dim", &dim1, 1, 0), aNeg = owned_attr_ints("dim", &dimNeg, 1, 0);
    uint64_t aOut1[3] = { 2, 2, 2 };
    parity_op_call call;
    parity_judgement j;
    char zErr[PARITY_ERR_LEN];
    cr_assert_eq(begin_n(&call, "aten.stack.default", aX, 2, 3, aOut1, &aDim, 1, zErr,
                         sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, want1);
    cr_expect_eq(j.nFail, 0);
    cr_assert_eq(begin_n(&call, "stack", aX, 2, 3, aOut1, &aNeg, 1, zErr, sizeof zErr), 0, "%s",
                 zErr);
    j = judge_end(&call, wantLast);
    cr_expect_eq(j.nFail, 0);
    cr_assert_eq(begin_n(&call, "stack", aX, 2, 3, aOut1, &aNeg, 1, zErr, sizeof zErr), 0, "%s",
                 zErr);
    j = judge_end(&call, want1);   /* the other dim's order: wrong where they differ */
    cr_expect_eq(j.nFail, 4);
    cr_expect_eq(begin_n(&call, "stack", aBadX, 2, 3, aOut1, &aDim, 1, zErr, sizeof zErr), -1);
    cr_expect(has(zErr, "has size 3 at dim 1"), "%s", zErr);
    parity_op_end(&call);
}

/* expand of a [3, 1] to [2, 3, 4] (a new leading dim, the 1 repeated, -1 keeping 3), a -0
 * kept, one wrong element failing alone, and sizes torch refuses. */
Test(layout, expand)
{
    static const uint64_t aX[2] = { 3, 1 };
    double x[3] = { 1.5, -0.0, NAN }, want[24];
    int64_t size[3] = { 2, -1, 4 }, bad[3] = { 2, 5, 4 }, newNeg[3] = { -1, 3, 4 };
    parity_attr aSize = owned_attr_ints("size", size, 3, 1), aBad = owned_attr_ints("size", bad, 3, 1);
    parity_attr aNew = owned_attr_ints("size", newNeg, 3, 1);
    uint64_t aOutDim[3] = { 2, 3, 4 };
    parity_operand op = operand(PARITY_DT_F32, 2, aX, x);
    parity_op_call call;
    parity_judgement j;
    char zErr[PARITY_ERR_LEN];
    int i;
    for (i = 0; i < 24; i++) want[i] = x[(i / 4) % 3];
    cr_assert_eq(begin1(&call, "aten.expand.default", &op, PARITY_DT_F32, 3, aOutDim, &aSize, 1,
                        zErr, sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, want);
    cr_expect_eq(j.nFail, 0);
    cr_expect_eq(j.nChecked, 24);
    want[17] = 1.0;   /* (1, 1, 1): x[1] */
    cr_assert_eq(begin1(&call, "expand", &op, PARITY_DT_F32, 3, aOutDim, &aSize, 1, zErr,
                        sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, want);
    cr_expect_eq(j.nFail, 1);
    cr_expect_eq(j.worstLinear, 17);
    cr_expect_eq(begin1(&call, "expand", &op, PARITY_DT_F32, 3, aOutDim, &aBad, 1, zErr,
                        sizeof zErr), -1);
    cr_expect(has(zErr, "[3, 1] does not broadcast to [2, 5, 4]"), "%s", zErr);
    parity_op_end(&call);
    cr_expect_eq(begin1(&call, "expand", &op, PARITY_DT_F32, 3, aOutDim, &aNew, 1, zErr,
                        sizeof zErr), -1);
    cr_expect(has(zErr, "size -1 at dim 0 (a new dim)"), "%s", zErr);
    parity_op_end(&call);
}

/* A plain average pool over the 5x5 x (one plane), window rule written here: square k,
 * stride s, padding p; the divisor dv when nonzero, else the taps inside (exclude) or the
 * taps at rows and columns < 5 + p (torch's window clipped to the padded input). Outputs
 * rounded to float, as a float32 kernel of these small integer sums gives them. */
static void avg_ref5(const double *x, int k, int s, int p, int exclude, int dv, int nO,
                     double *aOut)
{
    int oy, ox, i, j;
    for (oy = 0; oy < nO; oy++)
        for (ox = 0; ox < nO; ox++) {
            double sum = 0.0;
            int nIn = 0, nPad = 0;
            for (i = 0; i < k; i++)
                for (j = 0; j < k; j++) {
                    int y = oy * s - p + i, xx = ox * s - p + j;
                    if (y < 5 + p && xx < 5 + p) nPad++;
                    if (y < 0 || xx < 0 || y >= 5 || xx >= 5) continue;
                    nIn++;
                    sum += x[y * 5 + xx];
                }
            aOut[oy * nO + ox] = (double)(float)(sum / (dv ? dv : exclude ? nIn : nPad));
        }
}

/* avg_pool2d: torch's divisors (the padding counted, not counted, the ceil_mode window
 * past the padded input never counted, divisor_override) checked by hand, float32 results
 * passing, 3x the bound failing alone, NaN and Inf + -Inf taps, and bad parameters. */
Test(layout, avg_pool2d)
{
    static const uint64_t aIn[4] = { 1, 1, 5, 5 };
    double x[25], aOut[9];
    parity_operand op;
    parity_op_call call;
    parity_judgement j;
    char zErr[PARITY_ERR_LEN];
    int64_t k2[2] = { 2, 2 }, k3[2] = { 3, 3 }, s2[2] = { 2, 2 }, p1[2] = { 1, 1 },
            p2[2] = { 2, 2 }, zero = 0, one = 1, seven = 7;
    parity_attr aA[4] = { owned_attr_ints("kernel_size", k3, 2, 1),
                          owned_attr_ints("stride", s2, 2, 1),
                          owned_attr_ints("padding", p1, 2, 1),
                          owned_attr_ints("count_include_pad", &zero, 1, 0) };
    parity_attr aCeil[2] = { owned_attr_ints("kernel_size", k2, 2, 1),
                             owned_attr_ints("ceil_mode", &one, 1, 0) };
    parity_attr aDiv[2] = { owned_attr_ints("kernel_size", k2, 2, 1),
                            owned_attr_ints("divisor_override", &seven, 1, 0) };
    parity_attr aBad[2] = { owned_attr_ints("kernel_size", k3, 2, 1),
                            owned_attr_ints("padding", p2, 2, 1) };
    uint64_t aOutDim[4] = { 1, 1, 3, 3 };
    double ref, bound;
    int i;
    for (i = 0; i < 25; i++) x[i] = (double)i;
    op = operand(PARITY_DT_F32, 4, aIn, x);

    /* k 3, s 2, p 1: Ho = floor((5 + 2 - 3) / 2) + 1 = 3. Corner (0, 0) holds 0 1 5 6:
     * 12 / 9 with the padding, 12 / 4 without; (2, 2) holds 18 19 23 24: 84 / 9, 84 / 4 */
    avg_ref5(x, 3, 2, 1, 0, 0, 3, aOut);
    cr_expect_eq(aOut[0], (double)(float)(12.0 / 9.0));
    cr_expect_eq(aOut[4], 12.0);
    cr_expect_eq(aOut[8], (double)(float)(84.0 / 9.0));
    cr_assert_eq(begin1(&call, "aten.avg_pool2d.default", &op, PARITY_DT_F32, 4, aOutDim, aA, 3,
                        zErr, sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aOut);
    cr_expect_eq(j.nFail, 0);
    cr_expect_eq(j.nChecked, 9);
    avg_ref5(x, 3, 2, 1, 1, 0, 3, aOut);
    cr_expect_eq(aOut[0], 3.0);
    cr_expect_eq(aOut[8], 21.0);
    cr_assert_eq(begin1(&call, "avg_pool2d", &op, PARITY_DT_F32, 4, aOutDim, aA, 4, zErr,
                        sizeof zErr), 0, "%s", zErr);
    op_element(&call, 8, &ref, &bound);
    cr_expect_eq(ref, 21.0);
    cr_expect(bound > 0.0 && bound < 1e-5, "bound %g", bound);
    aOut[8] = (double)(float)(21.0 + 3.0 * bound);
    j = judge_end(&call, aOut);
    cr_expect_eq(j.nFail, 1);
    cr_expect_eq(j.worstLinear, 8);

    /* k 2 with ceil_mode on 5x5: Ho = 3, the last window starting at row 4 has one row in
     * the input and none of padding: (2, 2) is 24 / 1 although count_include_pad is set,
     * (0, 2) is (4 + 9) / 2 */
    avg_ref5(x, 2, 2, 0, 0, 0, 3, aOut);
    cr_expect_eq(aOut[8], 24.0);
    cr_expect_eq(aOut[2], 6.5);
    cr_assert_eq(begin1(&call, "avg_pool2d", &op, PARITY_DT_F32, 4, aOutDim, aCeil, 2, zErr,
                        sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aOut);
    cr_expect_eq(j.nFail, 0);

    /* divisor_override 7 (no ceil_mode: 2x2): (0, 0) is 12 / 7 */
    aOutDim[2] = aOutDim[3] = 2;
    avg_ref5(x, 2, 2, 0, 0, 7, 2, aOut);
    cr_expect_eq(aOut[0], (double)(float)(12.0 / 7.0));
    cr_assert_eq(begin1(&call, "avg_pool2d", &op, PARITY_DT_F32, 4, aOutDim, aDiv, 2, zErr,
                        sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aOut);
    cr_expect_eq(j.nFail, 0);

    /* a NaN tap makes its window NaN; +Inf and -Inf in one window NaN, alone +Inf */
    x[0] = NAN;
    x[3] = INFINITY;
    x[8] = -INFINITY;
    x[12] = INFINITY;
    cr_assert_eq(begin1(&call, "avg_pool2d", &op, PARITY_DT_F32, 4, aOutDim, aDiv, 1, zErr,
                        sizeof zErr), 0, "%s", zErr);
    op_element(&call, 0, &ref, &bound);
    cr_expect(isnan(ref));
    op_element(&call, 1, &ref, &bound);      /* rows 0-1, columns 2-3: 3 and 8 */
    cr_expect(isnan(ref));
    op_element(&call, 3, &ref, &bound);      /* rows 2-3, columns 2-3: 12 */
    cr_expect(isinf(ref) && ref > 0);
    parity_op_end(&call);
    for (i = 0; i < 25; i++) x[i] = (double)i;

    /* padding beyond half the kernel, a wrong output shape, another output dtype */
    cr_expect_eq(begin1(&call, "avg_pool2d", &op, PARITY_DT_F32, 4, aOutDim, aBad, 2, zErr,
                        sizeof zErr), -1);
    cr_expect(has(zErr, "more than half the kernel"), "%s", zErr);
    parity_op_end(&call);
    aOutDim[2] = aOutDim[3] = 4;
    cr_expect_eq(begin1(&call, "avg_pool2d", &op, PARITY_DT_F32, 4, aOutDim, aA, 3, zErr,
                        sizeof zErr), -1);
    parity_op_end(&call);
    aOutDim[2] = aOutDim[3] = 3;
    cr_expect_eq(begin1(&call, "avg_pool2d", &op, PARITY_DT_F16, 4, aOutDim, aA, 3, zErr,
                        sizeof zErr), -1);
    parity_op_end(&call);
}

/* adaptive_avg_pool2d: the windows floor(i H / Ho) .. ceil((i + 1) H / Ho) - 1 by hand
 * (5x5 -> 3x2: rows 0-1, 1-3, 3-4; columns 0-2, 2-4), global pooling, the aten spelling
 * _adaptive_avg_pool2d, an unbatched input, one wrong element failing, bad parameters. */
Test(layout, adaptive_avg_pool2d)
{
    static const uint64_t aIn[4] = { 1, 1, 5, 5 }, aIn3[3] = { 1, 5, 5 };
    static const int aRow[3][2] = { { 0, 2 }, { 1, 4 }, { 3, 5 } }, aCol[2][2] = { { 0, 3 }, { 2, 5 } };
    double x[25], aOut[6];
    parity_operand op, op3;
    parity_op_call call;
    parity_judgement j;
    char zErr[PARITY_ERR_LEN];
    int64_t o32[2] = { 3, 2 }, o1[1] = { 1 }, o0[2] = { 0, 2 };
    parity_attr a32 = owned_attr_ints("output_size", o32, 2, 1);
    parity_attr a1 = owned_attr_ints("output_size", o1, 1, 1);
    parity_attr a0 = owned_attr_ints("output_size", o0, 2, 1);
    uint64_t aOutDim[4] = { 1, 1, 3, 2 }, aOut3[3] = { 1, 3, 2 };
    int i, r, c, y, xx;
    for (i = 0; i < 25; i++) x[i] = (double)i;
    op = operand(PARITY_DT_F32, 4, aIn, x);
    op3 = operand(PARITY_DT_F32, 3, aIn3, x);
    for (r = 0; r < 3; r++)
        for (c = 0; c < 2; c++) {
            double s = 0.0;
            for (y = aRow[r][0]; y < aRow[r][1]; y++)
                for (xx = aCol[c][0]; xx < aCol[c][1]; xx++) s += x[y * 5 + xx];
            aOut[r * 2 + c] = (double)(float)(s / ((aRow[r][1] - aRow[r][0]) *
                                                   (aCol[c][1] - aCol[c][0])));
        }
    cr_expect_eq(aOut[0], 3.5);      /* 0 1 2 5 6 7 */
    cr_expect_eq(aOut[3], 13.0);     /* rows 1-3, columns 2-4: 117 / 9 */
    cr_expect_eq(aOut[4], 18.5);     /* 15 16 17 20 21 22 */
    cr_assert_eq(begin1(&call, "aten._adaptive_avg_pool2d.default", &op, PARITY_DT_F32, 4,
                        aOutDim, &a32, 1, zErr, sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aOut);
    cr_expect_eq(j.nFail, 0);
    cr_expect_eq(j.nChecked, 6);
    cr_assert_eq(begin1(&call, "adaptive_avg_pool2d", &op3, PARITY_DT_F32, 3, aOut3, &a32, 1,
                        zErr, sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aOut);
    cr_expect_eq(j.nFail, 0);
    aOut[5] = aOut[5] + 0.25;
    cr_assert_eq(begin1(&call, "aten.adaptive_avg_pool2d.default", &op, PARITY_DT_F32, 4,
                        aOutDim, &a32, 1, zErr, sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aOut);
    cr_expect_eq(j.nFail, 1);
    cr_expect_eq(j.worstLinear, 5);
    /* output_size 1 (one int): the mean of 0..24 */
    aOutDim[2] = aOutDim[3] = 1;
    aOut[0] = 12.0;
    cr_assert_eq(begin1(&call, "adaptive_avg_pool2d", &op, PARITY_DT_F32, 4, aOutDim, &a1, 1,
                        zErr, sizeof zErr), 0, "%s", zErr);
    j = judge_end(&call, aOut);
    cr_expect_eq(j.nFail, 0);
    /* no output_size, a zero one, a wrong output shape */
    cr_expect_eq(begin1(&call, "adaptive_avg_pool2d", &op, PARITY_DT_F32, 4, aOutDim, NULL, 0,
                        zErr, sizeof zErr), -1);
    cr_expect(has(zErr, "output_size"), "%s", zErr);
    parity_op_end(&call);
    cr_expect_eq(begin1(&call, "adaptive_avg_pool2d", &op, PARITY_DT_F32, 4, aOutDim, &a0, 1,
                        zErr, sizeof zErr), -1);
    parity_op_end(&call);
    aOutDim[2] = 2;
    cr_expect_eq(begin1(&call, "adaptive_avg_pool2d", &op, PARITY_DT_F32, 4, aOutDim, &a1, 1,
                        zErr, sizeof zErr), -1);
    parity_op_end(&call);
}
