/*
 * test_fuzz_case.c - the fuzzer's case layer and builtin target, in process: the case
 * encoding (fuzz/cases/codec.c), case files (fuzz/cases/io.c), every op's layout against the
 * registry (fuzz/cases/layout.c), the value recipes (fuzz/cases/values.c), the builtin kernels and the
 * defect catalogue (each defect fires on its trigger and not beside it), and the guard
 * against a toy compiled target: it differs bit for bit from eager on most matmul,
 * reduction and softmax cases.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/findings/findings.h"
#include "fuzz/search/search.h"
#include "support.h"

static void make_dir(void)
{
    support_dir_create(TEST_BINARY_DIR, "fuzzcase-");
}

TestSuite(fuzz_case, .init = make_dir, .fini = support_dir_remove, .timeout = 600);

/* ---- helpers -------------------------------------------------------------------------- */

static parity_case_spec spec_of(const char *zOp, uint32_t variant, parity_dtype dt,
                                const uint64_t *aDim, int nDim, parity_value_kind kind)
{
    parity_case_spec s;
    int i;
    memset(&s, 0, sizeof s);
    snprintf(s.zOp, sizeof s.zOp, "%s", zOp);
    s.variant = variant;
    s.dtype = dt;
    s.nDim = nDim;
    for (i = 0; i < nDim; i++) s.aDim[i] = aDim[i];
    for (i = 0; i < PARITY_CASE_MAX_IN; i++) s.aRecipe[i].kind = (uint8_t)kind;
    s.seed = 42;
    return s;
}

/* Runs the spec on the builtin target with the given defects; returns the class. */
static parity_finding_class run_spec(const parity_case_spec *pSpec, uint32_t defects,
                                     int *pBitIdentical)
{
    char zErr[PARITY_ERR_LEN];
    parity_target *pT = parity_target_open("builtin", defects, 0, zErr, sizeof zErr);
    parity_case c;
    parity_oracle_result r;
    double *aE, *aC;
    cr_assert_not_null(pT, "%s", zErr);
    cr_assert_eq(parity_case_expand(pSpec, &c, zErr, sizeof zErr), 0, "%s: %s", pSpec->zOp, zErr);
    aE = malloc((c.nOut + 1) * sizeof *aE);
    aC = malloc((c.nOut + 1) * sizeof *aC);
    cr_assert_eq(parity_oracle_run(pT, &c, aE, aC, &r), 0, "%s", r.zDetail);
    if (pBitIdentical) *pBitIdentical = r.bitIdentical;
    free(aE);
    free(aC);
    parity_case_free(&c);
    parity_target_close(pT);
    return r.cls;
}

static int same_bits_or_nan(double a, double b)
{
    if (a != a || b != b) return a != a && b != b;
    return a == b && signbit(a) == signbit(b);
}

/* ---- encoding ------------------------------------------------------------------------- */

Test(fuzz_case, encoding_round_trips_every_layout)
{
    size_t nLayout, i;
    const parity_layout_info *aInfo = parity_layout_all(&nLayout);
    parity_rng rng;
    parity_rng_seed(&rng, 7);
    cr_assert_gt(nLayout, 30);
    for (i = 0; i < nLayout; i++) {
        int k;
        for (k = 0; k < 10; k++) {
            parity_case_spec a, b;
            uint8_t aBuf[PARITY_CASE_CODEC_SIZE];
            cr_assert_eq(parity_spec_generate(&rng, aInfo[i].zOp, PARITY_STRATEGY_GUIDED, &a), 0);
            cr_assert_eq(parity_case_encode(&a, aBuf, sizeof aBuf), PARITY_CASE_CODEC_SIZE);
            cr_assert_eq(parity_case_decode(aBuf, sizeof aBuf, &b), 0, "%s", aInfo[i].zOp);
            cr_assert_str_eq(a.zOp, b.zOp);
            cr_assert_eq(a.variant, b.variant);
            cr_assert_eq(a.dtype, b.dtype);
            cr_assert_eq(a.nDim, b.nDim);
            cr_assert_eq(memcmp(a.aDim, b.aDim, sizeof a.aDim), 0);
            cr_assert_eq(memcmp(a.aRecipe, b.aRecipe, sizeof a.aRecipe), 0);
            cr_assert_eq(a.seed, b.seed);
        }
    }
}

Test(fuzz_case, decoding_rejects_malformed_input)
{
    uint64_t aDim[4] = { 3, 5, 2, 1 };
    parity_case_spec s = spec_of("matmul", 0, PARITY_DT_F32, aDim, 4, PARITY_VAL_NORMAL), out;
    uint8_t aGood[PARITY_CASE_CODEC_SIZE], aBad[PARITY_CASE_CODEC_SIZE];
    parity_case_encode(&s, aGood, sizeof aGood);
    cr_assert_eq(parity_case_decode(aGood, sizeof aGood, &out), 0);
    cr_assert_eq(parity_case_decode(aGood, sizeof aGood - 1, &out), -1, "short input");
    cr_assert_eq(parity_case_decode(aGood, 0, &out), -1, "empty input");
#define BAD(offset, value, why) do { \
        memcpy(aBad, aGood, sizeof aBad); aBad[offset] = (value); \
        cr_assert_eq(parity_case_decode(aBad, sizeof aBad, &out), -1, why); } while (0)
    BAD(0, 'X', "magic");
    BAD(2, 99, "version");
    BAD(3, PARITY_DT_I32, "integer dtype");
    BAD(3, 200, "dtype out of range");
    BAD(6, 9, "too many dims");
    BAD(7, 1, "reserved byte");
    BAD(11, 0x7F, "dim beyond the bound");
    BAD(8 + 4 * 5, 1, "a dim past nDim");
    BAD(40, PARITY_VAL_COUNT, "unknown recipe");
    BAD(56, 'q', "unknown op");
    memcpy(aBad, aGood, sizeof aBad);
    memset(aBad + 56, 'a', PARITY_CASE_OP_LEN);
    cr_assert_eq(parity_case_decode(aBad, sizeof aBad, &out), -1, "op without NUL");
#undef BAD
}

/* ---- layouts against the registry, and the kernels over every op ------------------------ */

/* The registry is the one list of ops: every op has a fuzz layout (its family's) and a
 * builtin kernel, every layout belongs to a registry op, and every family with a layout is
 * some op's (so neither side holds an entry the other lacks). */
Test(fuzz_case, layouts_and_registry_cover_each_other)
{
    size_t nLayout, i;
    const parity_layout_info *aInfo = parity_layout_all(&nLayout);
    int aFamilyUsed[PARITY_FAMILY_COUNT] = { 0 }, nFamily = 0, f;
    for (i = 0; parity_op_registry[i]; i++) {
        const parity_op_def *pDef = parity_op_registry[i];
        const parity_layout_info *pL = parity_layout_of(pDef);
        cr_assert_not_null(pL, "registry op %s has no fuzz layout (family %s)", pDef->zName,
                           parity_op_family_name(pDef->family));
        cr_assert_eq(pL->pDef, pDef);
        cr_assert_eq(parity_layout_find(pDef->zName), pL);
        cr_assert(parity_builtin_supports(pDef), "no builtin kernel for %s", pDef->zName);
        cr_assert(pL->nVariant >= 1 && pL->nDim >= 1 && pL->nDim <= PARITY_CASE_MAX_DIMS);
        aFamilyUsed[pDef->family] = 1;
    }
    cr_assert_eq(i, PARITY_OP_COUNT);
    cr_assert_eq(nLayout, PARITY_OP_COUNT, "%zu layouts for %d ops", nLayout, PARITY_OP_COUNT);
    for (i = 0; i < nLayout; i++)
        cr_assert_eq(parity_op_find(aInfo[i].zOp), aInfo[i].pDef, "layout %s", aInfo[i].zOp);
    for (f = 0; f < PARITY_FAMILY_COUNT; f++) nFamily += aFamilyUsed[f];
    cr_assert_eq(parity_layout_families(), nFamily,
                 "%d families have a layout, registry ops use %d", parity_layout_families(),
                 nFamily);
    cr_assert_null(parity_layout_find("not_an_op"));
}

/* The attributes an op asks generated cases to set (ops.h, aCaseAttr) reach the case:
 * some variants write the alternative value, some do not. */
Test(fuzz_case, case_attributes_come_from_the_registry)
{
    size_t i;
    for (i = 0; parity_op_registry[i]; i++) {
        const parity_op_def *pDef = parity_op_registry[i];
        const parity_layout_info *pL = parity_layout_of(pDef);
        const parity_op_case_attr *pA;
        uint64_t aDim[PARITY_CASE_MAX_DIMS] = { 2, 3, 4, 5, 3, 2, 2, 2 };
        uint32_t v;
        int nAlt = 0, nOther = 0;
        if (pDef->nCaseAttr == 0) continue;
        pA = &pDef->aCaseAttr[0];
        for (v = 0; v < pL->nVariant; v++) {
            parity_case_spec s = spec_of(pDef->zName, v, PARITY_DT_F32, aDim, pL->nDim,
                                         PARITY_VAL_NORMAL);
            parity_case c;
            char zErr[PARITY_ERR_LEN];
            const parity_attr *pAttr;
            if (parity_case_layout(&s, &c, zErr, sizeof zErr) != 0) continue;
            pAttr = parity_attr_find(c.aParam, c.nParam, pA->zName);
            if (pA->kind == PARITY_ATTR_STRING) {
                if (pAttr && pA->azStr[1] && strcmp(pAttr->azStr[0], pA->azStr[1]) == 0) nAlt++;
                else nOther++;
            } else {
                double want1 = pA->aFloat[1];
                if (pAttr && want1 == want1 && pAttr->aFloat[0] == want1) nAlt++;
                else nOther++;
            }
            parity_case_free(&c);
        }
        cr_assert_gt(nOther, 0, "%s: every variant sets %s's alternative", pDef->zName, pA->zName);
        if (pA->azStr[1] || pA->aFloat[1] == pA->aFloat[1])
            cr_assert_gt(nAlt, 0, "%s: no variant sets %s's alternative", pDef->zName, pA->zName);
    }
}

/* The output shape and the legality of a case are the registry's: a spec its shape rule
 * refuses is refused with the registry's reason, before anything runs. */
Test(fuzz_case, shape_rules_are_the_registrys)
{
    uint64_t aConv[7] = { 1, 2, 3, 3, 2, 5, 5 };     /* a 5x5 kernel on a 3x3 input */
    uint64_t aRed[4] = { 2, 3, 4, 0 };               /* amax over an empty dim */
    uint64_t aMm[4] = { 3, 7, 5, 2 };
    parity_case_spec s;
    parity_case c;
    parity_op_call call;
    char zErr[PARITY_ERR_LEN];

    s = spec_of("conv2d", 0, PARITY_DT_F32, aConv, 7, PARITY_VAL_NORMAL);
    cr_assert_eq(parity_case_layout(&s, &c, zErr, sizeof zErr), -1);
    cr_assert(strstr(zErr, "conv2d: kernel 5x5") && strstr(zErr, "larger than the padded input"),
              "%s", zErr);
    s = spec_of("amax", 1 | (1u << 2), PARITY_DT_F32, aRed, 4, PARITY_VAL_NORMAL);
    cr_assert_eq(parity_case_layout(&s, &c, zErr, sizeof zErr), -1);
    cr_assert(strstr(zErr, "amax: reduction over an empty dim"), "%s", zErr);
    /* matmul variant 1: [B, M, K] x [K, N] -> [B, M, N], shape and cost from the registry */
    s = spec_of("matmul", 1, PARITY_DT_F32, aMm, 4, PARITY_VAL_NORMAL);
    cr_assert_eq(parity_case_layout(&s, &c, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(c.outRank, 3);
    cr_assert(c.aOutDim[0] == 2 && c.aOutDim[1] == 3 && c.aOutDim[2] == 5);
    cr_assert_eq(c.opCost, 8.0, "K + 1 reference terms per element");
    cr_assert_eq(parity_case_work(&c), 2 * 3 * 7 + 7 * 5 + 30 * 8);
    /* the geometry without values: what the kernels and the onednn target read */
    cr_assert_eq(parity_case_op_shape(&c, &call, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert(call.geom.dot.M == 3 && call.geom.dot.K == 7 && call.geom.dot.N == 5);
    cr_assert(call.geom.dot.nBatch == 1 && call.geom.dot.aBatchDim[0] == 2);
    cr_assert(call.geom.dot.aStrideA[0] == 21 && call.geom.dot.aStrideB[0] == 0,
              "a steps a [3, 7] matrix per batch, b broadcasts");
    parity_op_end(&call);
    parity_case_free(&c);
}

Test(fuzz_case, every_layout_is_legal_for_the_registry_and_runs_on_both_sides)
{
    size_t nLayout, i;
    const parity_layout_info *aInfo = parity_layout_all(&nLayout);
    parity_rng rng;
    char zErr[PARITY_ERR_LEN];
    parity_target *pT = parity_target_open("builtin", 0, 0, zErr, sizeof zErr);
    cr_assert_not_null(pT);
    parity_rng_seed(&rng, 11);
    for (i = 0; i < nLayout; i++) {
        int k, nRan = 0;
        cr_assert_not_null(parity_op_find(aInfo[i].zOp), "layout for a non-registry op %s", aInfo[i].zOp);
        cr_assert(parity_builtin_supports(parity_op_find(aInfo[i].zOp)), "builtin lacks %s", aInfo[i].zOp);
        for (k = 0; k < 25; k++) {
            parity_case_spec s;
            parity_case c;
            parity_op_call call;
            parity_oracle_result r;
            double *aE, *aC;
            cr_assert_eq(parity_spec_generate(&rng, aInfo[i].zOp, PARITY_STRATEGY_GUIDED, &s), 0);
            cr_assert_eq(parity_case_expand(&s, &c, zErr, sizeof zErr), 0, "%s: %s", s.zOp, zErr);
            cr_assert_eq(parity_case_op_begin(&c, &call, zErr, sizeof zErr), 0,
                         "registry refuses a %s layout (variant %u): %s", s.zOp, s.variant, zErr);
            parity_op_end(&call);
            aE = malloc((c.nOut + 1) * sizeof *aE);
            aC = malloc((c.nOut + 1) * sizeof *aC);
            cr_assert_eq(parity_oracle_run(pT, &c, aE, aC, &r), 0, "%s", r.zDetail);
            cr_assert_neq(r.cls, PARITY_FINDING_ERROR, "%s: %s", s.zOp, r.zDetail);
            if (r.cls != PARITY_FINDING_SKIPPED) nRan++;
            free(aE);
            free(aC);
            parity_case_free(&c);
        }
        cr_assert_gt(nRan, 12, "%s: only %d of 25 cases ran", aInfo[i].zOp, nRan);
    }
    parity_target_close(pT);
}

Test(fuzz_case, sizes_stay_inside_the_bounds)
{
    size_t nLayout, i;
    const parity_layout_info *aInfo = parity_layout_all(&nLayout);
    parity_rng rng;
    parity_rng_seed(&rng, 5);
    for (i = 0; i < nLayout; i++) {
        int k;
        for (k = 0; k < 20; k++) {
            parity_case_spec s;
            parity_case c;
            char zErr[PARITY_ERR_LEN];
            size_t j;
            /* the baseline's uniform dims rarely fit rank-4 ops (conv2d, attention); the
             * benchmark runs it on the defects' ops, which must work */
            if (parity_spec_generate(&rng, aInfo[i].zOp, PARITY_STRATEGY_BASELINE, &s) != 0) {
                size_t j;
                for (j = 0; j < parity_defect_count; j++)
                    cr_assert_null(strstr(parity_defects[j].zOps, aInfo[i].zOp),
                                   "baseline cannot draw %s", aInfo[i].zOp);
                break;
            }
            cr_assert_eq(parity_case_layout(&s, &c, zErr, sizeof zErr), 0);
            cr_assert_leq(parity_case_work(&c), PARITY_CASE_MAX_WORK);
            cr_assert_leq(c.nOut, PARITY_CASE_MAX_ELEMS);
            for (j = 0; j < c.nIn; j++) {
                cr_assert_leq(c.aIn[j].nElem, PARITY_CASE_MAX_ELEMS);
                for (int d = 0; d < c.aIn[j].rank; d++) cr_assert_geq(c.aIn[j].aDim[d], 1, "baseline dims are >= 1");
            }
            cr_assert_eq(parity_spec_mutate(&rng, &s), 0);
            parity_case_free(&c);
            cr_assert_eq(parity_case_layout(&s, &c, zErr, sizeof zErr), 0, "a mutation left the bounds");
            parity_case_free(&c);
        }
    }
}

/* ---- value recipes -------------------------------------------------------------------- */

Test(fuzz_case, recipes_make_the_values_they_promise)
{
    uint64_t aDim[5] = { 6, 1, 1, 40, 1 };
    parity_case c;
    char zErr[PARITY_ERR_LEN];
    parity_case_spec s;
    uint64_t k, r;
    int any;

    /* softmax rank 2: x is [6, 40]; mask_rows has one fully masked row */
    s = spec_of("softmax", 1, PARITY_DT_F32, aDim, 4, PARITY_VAL_MASK_ROWS);
    cr_assert_eq(parity_case_expand(&s, &c, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(c.aIn[0].nElem, 240);
    any = 0;
    for (r = 0; r < 6; r++) {
        int full = 1;
        for (k = 0; k < 40; k++) full &= c.aIn[0].aValue[r * 40 + k] == -INFINITY;
        any |= full;
    }
    cr_assert(any, "mask_rows: no fully masked row");
    parity_case_free(&c);

    s = spec_of("softmax", 1, PARITY_DT_BF16, aDim, 4, PARITY_VAL_SPECIALS);
    cr_assert_eq(parity_case_expand(&s, &c, zErr, sizeof zErr), 0);
    any = 0;
    for (k = 0; k < c.aIn[0].nElem; k++) {
        double v = c.aIn[0].aValue[k];
        unsigned char buf[2];
        double back;
        any |= isnan(v);
        parity_encode(PARITY_DT_BF16, v, buf);
        parity_decode(PARITY_DT_BF16, buf, &back, 1);
        cr_assert(same_bits_or_nan(v, back), "value %g is not a bfloat16", v);
    }
    cr_assert(any, "specials: no NaN");
    parity_case_free(&c);

    /* near_overflow in float16 straddles log(65504) = 11.09 */
    s = spec_of("exp", 1, PARITY_DT_F16, aDim, 5, PARITY_VAL_NEAR_OVERFLOW);
    cr_assert_eq(parity_case_expand(&s, &c, zErr, sizeof zErr), 0);
    {
        int below = 0, above = 0;
        for (k = 0; k < c.aIn[0].nElem; k++) {
            below |= c.aIn[0].aValue[k] < 11.09 && c.aIn[0].aValue[k] > 10.0;
            above |= c.aIn[0].aValue[k] > 11.09;
        }
        cr_assert(below && above, "near_overflow does not straddle the threshold");
    }
    parity_case_free(&c);

    /* the same spec makes the same values */
    {
        parity_case c2;
        s = spec_of("sum", 1, PARITY_DT_F32, aDim, 4, PARITY_VAL_CANCEL);
        cr_assert_eq(parity_case_expand(&s, &c, zErr, sizeof zErr), 0);
        cr_assert_eq(parity_case_expand(&s, &c2, zErr, sizeof zErr), 0);
        cr_assert_eq(memcmp(c.aIn[0].aValue, c2.aIn[0].aValue, c.aIn[0].nElem * sizeof(double)), 0);
        parity_case_free(&c2);
        parity_case_free(&c);
    }
}

/* ---- case files ----------------------------------------------------------------------- */

Test(fuzz_case, case_files_round_trip_with_special_values)
{
    static const parity_dtype aDt[] = { PARITY_DT_F32, PARITY_DT_F16, PARITY_DT_BF16, PARITY_DT_F64 };
    uint64_t aDim[4] = { 3, 9, 2, 7 };
    size_t i, j;
    for (i = 0; i < sizeof aDt / sizeof aDt[0]; i++) {
        parity_case c, back;
        char zErr[PARITY_ERR_LEN];
        const char *zFile = tmp_path("case.h5");
        /* layer_norm rank 2 with weight and bias: three inputs and three parameters */
        parity_case_spec s = spec_of("layer_norm", 1 | 8 | 16, aDt[i], aDim, 4, PARITY_VAL_SPECIALS);
        cr_assert_eq(parity_case_expand(&s, &c, zErr, sizeof zErr), 0, "%s", zErr);
        c.aIn[0].aValue[0] = -0.0;
        c.aIn[0].aValue[1] = parity_dtype_smallest_normal(aDt[i]) / 4;
        cr_assert_eq(c.nIn, 3);
        cr_assert_eq(parity_case_write(&c, NULL, NULL, NULL, NULL, NULL, zFile, zErr, sizeof zErr), 0, "%s", zErr);
        cr_assert_eq(parity_case_read(zFile, &back, zErr, sizeof zErr), 0, "%s", zErr);
        cr_assert(back.fromStore);
        cr_assert_str_eq(back.spec.zOp, "layer_norm");
        cr_assert_eq(back.spec.variant, s.variant);
        cr_assert_eq(back.spec.dtype, aDt[i]);
        cr_assert_eq(back.spec.seed, s.seed);
        cr_assert_eq(back.nIn, 3);
        cr_assert_eq(back.nParam, c.nParam);
        for (j = 0; j < c.nIn; j++) {
            uint64_t k;
            cr_assert_eq(back.aIn[j].nElem, c.aIn[j].nElem);
            for (k = 0; k < c.aIn[j].nElem; k++)
                cr_assert(same_bits_or_nan(back.aIn[j].aValue[k], c.aIn[j].aValue[k]),
                          "%s input %zu element %llu", parity_dtype_name(aDt[i]), j,
                          (unsigned long long)k);
        }
        parity_case_free(&back);
        parity_case_free(&c);
    }
}

static void write_case_with(const char *zFile, const char *zAttr, int asString, int64_t value)
{
    float x[6] = { 1, 2, 3, 4, 5, 6 };
    int64_t aDim[4] = { 2, 1, 1, 3 }, aScale[1] = { 0 };
    const char *azIn[1] = { "x" }, *azRec[1] = { "normal" };
    parity_writer *pW = wopen(zFile);
    uint64_t aShape[2] = { 2, 3 };
    w_tensor(pW, "/x", PARITY_DT_F32, 2, aShape, x);
#define ATTR_INT(name, v) wcheck(pW, strcmp(zAttr, name) == 0 && asString \
        ? parity_writer_attr_string(pW, "/", name, "oops") \
        : parity_writer_attr_int(pW, "/", name, strcmp(zAttr, name) == 0 ? value : (v)))
    ATTR_INT("parity_case_version", 1);
    ATTR_INT("variant", 1);
    ATTR_INT("seed", 3);
#undef ATTR_INT
    wcheck(pW, parity_writer_attr_string(pW, "/", "op", "softmax"));
    wcheck(pW, parity_writer_attr_string(pW, "/", "case_dtype", "float32"));
    wcheck(pW, parity_writer_attr_ints(pW, "/", "dims", aDim, 4));
    wcheck(pW, parity_writer_attr_strings(pW, "/", "recipes", azRec, 1));
    wcheck(pW, parity_writer_attr_ints(pW, "/", "recipe_scale_log2", aScale, 1));
    wcheck(pW, parity_writer_attr_strings(pW, "/", "inputs", azIn, 1));
    wclose(pW);
}

Test(fuzz_case, case_reader_refuses_bad_files_with_a_reason)
{
    parity_case c;
    char zErr[PARITY_ERR_LEN];
    const char *zFile = tmp_path("bad.h5");

    write_case_with(zFile, "", 0, 0);
    cr_assert_eq(parity_case_read(zFile, &c, zErr, sizeof zErr), 0, "the control case: %s", zErr);
    cr_assert_eq(c.aIn[0].nElem, 6);
    parity_case_free(&c);

    write_case_with(zFile, "parity_case_version", 0, 2);
    cr_assert_eq(parity_case_read(zFile, &c, zErr, sizeof zErr), -1);
    cr_assert(strstr(zErr, "version 2"), "%s", zErr);

    write_case_with(zFile, "variant", 1, 0);
    cr_assert_eq(parity_case_read(zFile, &c, zErr, sizeof zErr), -1);
    cr_assert(strstr(zErr, "'variant'") && strstr(zErr, "wrong type"), "%s", zErr);

    write_case_with(zFile, "variant", 0, 2);   /* rank 3: the stored [2, 3] no longer fits */
    cr_assert_eq(parity_case_read(zFile, &c, zErr, sizeof zErr), -1);
    cr_assert(strstr(zErr, "'x'"), "%s", zErr);

    write_bytes(zFile, "not hdf5 at all", 15);
    cr_assert_eq(parity_case_read(zFile, &c, zErr, sizeof zErr), -1);
    cr_assert(strstr(zErr, zFile), "%s", zErr);
}

/* ---- the compiled target is not a copy of eager ----------------------------------------- */

Test(fuzz_case, clean_compiled_differs_bit_for_bit_on_most_dot_reduction_softmax_cases)
{
    static const char *const azOp[] = { "matmul", "linear", "bmm", "sum", "mean", "softmax",
                                         "log_softmax", "layer_norm" };
    size_t i;
    parity_rng rng;
    parity_rng_seed(&rng, 3);
    for (i = 0; i < sizeof azOp / sizeof azOp[0]; i++) {
        int k, nDiffer = 0, nRan = 0;
        for (k = 0; k < 40; k++) {
            parity_case_spec s;
            int bitIdentical;
            parity_finding_class cls;
            cr_assert_eq(parity_spec_generate(&rng, azOp[i], PARITY_STRATEGY_GUIDED, &s), 0);
            s.dtype = PARITY_DT_F32;
            for (int j = 0; j < PARITY_CASE_MAX_IN; j++) s.aRecipe[j].kind = PARITY_VAL_NORMAL;
            if (parity_spec_fit(&s) != 0) continue;
            cls = run_spec(&s, 0, &bitIdentical);
            cr_assert_eq(cls, PARITY_FINDING_NONE, "clean target flagged a %s case", azOp[i]);
            nRan++;
            nDiffer += !bitIdentical;
        }
        cr_log_info("%s: %d of %d float32 cases differ bit for bit", azOp[i], nDiffer, nRan);
        cr_assert_gt(2 * nDiffer, nRan, "%s: only %d of %d cases differ from eager: a clean "
                     "run would prove nothing", azOp[i], nDiffer, nRan);
    }
}

/* ---- each defect fires on its trigger and not beside it --------------------------------- */

typedef struct {
    const char *zDefect, *zOp;
    uint32_t variant;
    parity_dtype dtype;
    uint64_t aOn[6], aOff[6];        /* dims on the trigger, and just beside it */
    parity_value_kind kindOn, kindOff;
} defect_case;

static const defect_case aDefectCase[] = {
    /* sum over all of a rank-1 x: dim 3 is the length (a tail of 808 dropped values is
     * beyond the sum's bound; a tail of one value rarely is) */
    { "split_reduction_tail", "sum", 0, PARITY_DT_F32, { 1, 1, 1, 9000 }, { 1, 1, 1, 8192 },
      PARITY_VAL_NORMAL, PARITY_VAL_NORMAL },
    /* matmul [M, K] x [K, N]: dims M, K, N, B */
    { "gemm_k_tail", "matmul", 0, PARITY_DT_F32, { 3, 66, 5, 1 }, { 3, 68, 5, 1 },
      PARITY_VAL_NORMAL, PARITY_VAL_NORMAL },
    /* linear with a bias, x [M, K] */
    { "size1_bias", "linear", 2, PARITY_DT_F32, { 1, 9, 4, 1 }, { 2, 9, 4, 1 },
      PARITY_VAL_NORMAL, PARITY_VAL_NORMAL },
    /* softmax over rows of a [4, 12] x */
    { "masked_softmax_zero", "softmax", 1, PARITY_DT_F32, { 4, 1, 1, 12 }, { 4, 1, 1, 12 },
      PARITY_VAL_MASK_ROWS, PARITY_VAL_NORMAL },
    { "bf16_reduce_accum", "sum", 0, PARITY_DT_BF16, { 1, 1, 1, 1027 }, { 1, 1, 1, 1028 },
      PARITY_VAL_NORMAL, PARITY_VAL_NORMAL },
    { "fastmath_nan", "amax", 1, PARITY_DT_F32, { 5, 1, 1, 8 }, { 5, 1, 1, 8 },
      PARITY_VAL_SPECIALS, PARITY_VAL_NORMAL },
    { "padded_stride_leak", "softmax", 1, PARITY_DT_F32, { 3, 1, 1, 33 }, { 3, 1, 1, 32 },
      PARITY_VAL_NORMAL, PARITY_VAL_NORMAL },
    { "welford_merge", "layer_norm", 1, PARITY_DT_F32, { 2, 1, 1, 4099 }, { 2, 1, 1, 4160 },
      PARITY_VAL_NORMAL, PARITY_VAL_NORMAL },
};

Test(fuzz_case, every_defect_fires_on_its_trigger_and_only_there)
{
    size_t i;
    cr_assert_geq(parity_defect_count, 7);
    for (i = 0; i < parity_defect_count; i++) {
        const parity_defect *pD = &parity_defects[i];
        const defect_case *pC = NULL;
        size_t k;
        for (k = 0; k < sizeof aDefectCase / sizeof aDefectCase[0]; k++)
            if (strcmp(aDefectCase[k].zDefect, pD->zName) == 0) pC = &aDefectCase[k];
        cr_assert_not_null(pC, "no trigger test for defect %s", pD->zName);
        cr_assert(strstr(pD->zCitation, "#") != NULL, "%s cites no public bug", pD->zName);
        {
            const parity_layout_info *pInfo = parity_layout_find(pC->zOp);
            parity_case_spec on = spec_of(pC->zOp, pC->variant, pC->dtype, pC->aOn, pInfo->nDim, pC->kindOn);
            parity_case_spec off = spec_of(pC->zOp, pC->variant, pC->dtype, pC->aOff, pInfo->nDim, pC->kindOff);
            cr_assert_eq(run_spec(&on, pD->bit, NULL), PARITY_FINDING_DIVERGES,
                         "%s does not fire on its trigger", pD->zName);
            cr_assert_eq(run_spec(&on, 0, NULL), PARITY_FINDING_NONE,
                         "the trigger case of %s fails without the defect", pD->zName);
            cr_assert_eq(run_spec(&off, pD->bit, NULL), PARITY_FINDING_NONE,
                         "%s fires beside its trigger", pD->zName);
        }
    }
}

/* The minimizer's deadline (a campaign's --time): past it, the finding is stored as far as
 * it got, reproducing and marked not minimal; without one the same finding shrinks. */
Test(fuzz_case, the_minimizer_stops_at_its_deadline_and_says_not_minimal)
{
    const uint64_t aDim[6] = { 40, 66, 30, 1 };    /* gemm_k_tail: K = 66 */
    const parity_layout_info *pInfo = parity_layout_find("matmul");
    parity_case_spec s = spec_of("matmul", 0, PARITY_DT_F32, aDim, pInfo->nDim, PARITY_VAL_NORMAL);
    char zErr[PARITY_ERR_LEN];
    parity_target *pT = parity_target_open("builtin", PARITY_DEFECT_GEMM_K_TAIL, 0, zErr,
                                           sizeof zErr);
    parity_case c;
    parity_oracle_result r;
    parity_minimized late, free_run;
    double *aE, *aC;

    cr_assert_not_null(pT, "%s", zErr);
    cr_assert_eq(parity_case_expand(&s, &c, zErr, sizeof zErr), 0, "%s", zErr);
    aE = malloc(c.nOut * sizeof *aE);
    aC = malloc(c.nOut * sizeof *aC);
    cr_assert_eq(parity_oracle_run(pT, &c, aE, aC, &r), 0, "%s", r.zDetail);
    cr_assert_eq(r.cls, PARITY_FINDING_DIVERGES);

    /* a deadline long past: the first check and the final reproduction only */
    cr_assert_eq(parity_minimize(pT, &s, &r, PARITY_MINIMIZE_BUDGET, 1.0, &late, zErr,
                                 sizeof zErr), 0, "%s", zErr);
    cr_expect_eq(late.minimal, 0);
    cr_expect_leq(late.nExecs, 3, "%llu cases run past the deadline",
                  (unsigned long long)late.nExecs);
    cr_expect_eq(late.result.cls, PARITY_FINDING_DIVERGES);
    cr_expect_eq(late.minimized.nOut, c.nOut, "the case shrank after its deadline");

    cr_assert_eq(parity_minimize(pT, &s, &r, PARITY_MINIMIZE_BUDGET, 0, &free_run, zErr,
                                 sizeof zErr), 0, "%s", zErr);
    cr_expect_eq(free_run.minimal, 1);
    cr_expect_lt(free_run.minimized.nOut, c.nOut);

    parity_minimized_free(&late);
    parity_minimized_free(&free_run);
    free(aE);
    free(aC);
    parity_case_free(&c);
    parity_target_close(pT);
}

/* ---- pass 4: cutting with the values kept ------------------------------------------ */

/* A fake target: the builtin eager relu on both sides, and on the compiled side each
 * element passed through compiled_bug (input, eager output) -> compiled output. */
static double (*compiled_bug)(double x, double y);

static parity_run_status fake_bug_run(parity_target *pT, parity_side side,
                                      const parity_case *pCase, double *aOut, char *zErr,
                                      size_t nErr)
{
    uint64_t k;
    (void)pT;
    if (parity_builtin_eager(pCase, aOut, zErr, nErr) != 0) return PARITY_RUN_ERROR;
    if (side == PARITY_SIDE_COMPILED)
        for (k = 0; k < pCase->nOut; k++) aOut[k] = compiled_bug(pCase->aIn[0].aValue[k], aOut[k]);
    return PARITY_RUN_OK;
}

/* Wrong at one kind of value only (x > 2.5 gives x + 1), wherever it stands: the failure
 * belongs to a value, not to a shape. */
static double value_bug(double x, double y) { return x > 2.5 ? y + 1.0 : y; }
static int value_bug_supports(parity_target *pT, const char *zOp) { (void)pT; return strcmp(zOp, "relu") == 0; }
static void value_bug_close(parity_target *pT) { (void)pT; }

Test(fuzz_case, a_value_triggered_failure_shrinks_to_the_element_alone)
{
    parity_target t = { .zName = "value-bug", .xRun = fake_bug_run,
                        .xSupports = value_bug_supports, .xClose = value_bug_close };
    const parity_layout_info *pInfo = parity_layout_find("relu");
    const uint64_t aDim[6] = { 3, 5, 7, 301, 1, 1 };
    char zErr[PARITY_ERR_LEN];
    parity_case_spec s;
    parity_case c;
    parity_oracle_result r;
    parity_minimized m;
    double *aE, *aC;
    uint64_t seed;
    int d;

    compiled_bug = value_bug;
    /* a seed whose rank-4 case holds a value past 2.5 */
    for (seed = 1; seed < 100; seed++) {
        s = spec_of("relu", 4, PARITY_DT_F32, aDim, pInfo->nDim, PARITY_VAL_NORMAL);
        s.seed = seed;
        cr_assert_eq(parity_case_expand(&s, &c, zErr, sizeof zErr), 0, "%s", zErr);
        aE = malloc(c.nOut * sizeof *aE);
        aC = malloc(c.nOut * sizeof *aC);
        cr_assert_eq(parity_oracle_run(&t, &c, aE, aC, &r), 0, "%s", r.zDetail);
        free(aE);
        free(aC);
        if (r.cls == PARITY_FINDING_DIVERGES && c.outRank == 4) break;
        parity_case_free(&c);
    }
    cr_assert_lt(seed, 100);
    cr_assert_eq(parity_minimize(&t, &s, &r, PARITY_MINIMIZE_BUDGET, 0, &m, zErr, sizeof zErr), 0,
                 "%s", zErr);
    /* pass 2 alone keeps a long row (a smaller dim draws new values); pass 4 cuts it */
    cr_assert_eq(m.minimized.nOut, 1, "minimized to %llu elements",
                 (unsigned long long)m.minimized.nOut);
    cr_assert_gt(m.minimized.aIn[0].aValue[0], 2.5);
    cr_assert_eq(m.result.cls, PARITY_FINDING_DIVERGES);
    cr_assert(m.minimized.fromStore);
    /* the spec says the same shape: every dim it uses is 1 (the signature reads it) */
    for (d = 0; d < m.minimized.spec.nDim; d++)
        if ((m.minimized.usedDims >> d) & 1) cr_assert_eq(m.minimized.spec.aDim[d], 1, "dim %d", d);
    cr_assert_str_eq(m.minimized.aIn[0].zName, m.minimized.azInName[0]);
    parity_minimized_free(&m);
    parity_case_free(&c);
}

/* ---- triage's symptom at an infinite reference ---------------------------------------- */

static double infinite_answer;   /* what the fake compiled relu returns at an infinite input */
static double inf_bug(double x, double y) { return isinf(x) ? infinite_answer : y; }

Test(fuzz_case, triage_names_what_became_of_an_infinite_result)
{
    static const struct { double answer; const char *zSymptom; } aCase[] = {
        { NAN, "nan made" },          /* gelu(+Inf) = NaN in OpenVINO 2026.4.1 */
        { -INFINITY, "sign" },
        { 3.0, "inf lost" },
    };
    parity_target t = { .zName = "inf-bug", .xRun = fake_bug_run,
                        .xSupports = value_bug_supports, .xClose = value_bug_close };
    const parity_layout_info *pInfo = parity_layout_find("relu");
    const uint64_t aDim[6] = { 2, 1, 1, 1, 1, 1 };
    char zErr[PARITY_ERR_LEN];
    size_t i;
    compiled_bug = inf_bug;
    for (i = 0; i < sizeof aCase / sizeof aCase[0]; i++) {
        parity_case_spec s = spec_of("relu", 1, PARITY_DT_F32, aDim, pInfo->nDim, PARITY_VAL_ONES);
        parity_case c;
        parity_oracle_result r;
        parity_root_key cause;
        double aE[2], aC[2];
        cr_assert_eq(parity_case_expand(&s, &c, zErr, sizeof zErr), 0, "%s", zErr);
        cr_assert_eq(c.nOut, 2);
        c.aIn[0].aValue[1] = INFINITY;
        c.fromStore = 1;
        infinite_answer = aCase[i].answer;
        cr_assert_eq(parity_oracle_run(&t, &c, aE, aC, &r), 0, "%s", r.zDetail);
        cr_assert_eq(r.cls, PARITY_FINDING_DIVERGES, "%s", aCase[i].zSymptom);
        parity_triage_cause(&c, &r, aC, &cause);
        cr_assert_str_eq(cause.zSymptom, aCase[i].zSymptom);
        cr_assert_str_eq(cause.zTrigger, "inf input");
        parity_case_free(&c);
    }
}
