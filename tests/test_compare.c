/*
 * test_compare.c - the element-wise judge (diff/compare.c) and execution order
 * (diff/order.c), tested directly on buffers and small captures.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "diff/compare_internal.h"
#include "diff/compare_f32_internal.h"
#include "diff/order_internal.h"

static parity_cmp_spec spec_f32(int rank, const uint64_t *aDim)
{
    parity_cmp_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.dtype = PARITY_DT_F32;
    spec.rank = rank;
    spec.aDim = aDim;
    parity_tolerance_default(PARITY_DT_F32, &spec.tol);
    return spec;
}

static parity_tensor_stats judge(const parity_cmp_spec *pSpec, const float *e, const float *c,
                                 size_t n)
{
    parity_tensor_stats st;
    parity_cmp_stats_init(&st);
    parity_cmp_block(pSpec, e, c, 0, n, &st);
    return st;
}

Test(compare, identical_passes_with_zero_error)
{
    uint64_t aDim[1] = { 4 };
    parity_cmp_spec spec = spec_f32(1, aDim);
    float e[4] = { 1.0f, -2.0f, 0.0f, 3.5f };
    parity_tensor_stats st = judge(&spec, e, e, 4);
    cr_assert_eq(st.nMismatch, 0);
    cr_assert_eq(st.nBitDiff, 0);
    cr_assert_eq(st.maxAbsErr, 0.0);
    cr_assert_eq(st.aUlpHist[0], 4);
    cr_assert_eq(st.worstLinear, 0);
    cr_assert_float_eq(st.sumSqRef, 1.0 + 4.0 + 12.25, 1e-12);
}

Test(compare, nan_same_place_passes_one_side_fails)
{
    uint64_t aDim[1] = { 3 };
    parity_cmp_spec spec = spec_f32(1, aDim);
    float e[3] = { NAN, 1.0f, NAN };
    float c[3] = { -NAN, NAN, NAN };   /* payload/sign differ at 0: still NaN vs NaN */
    parity_tensor_stats st = judge(&spec, e, c, 3);
    cr_assert_eq(st.nNanMismatch, 1);
    cr_assert_eq(st.nMismatch, 1);
    cr_assert_eq(st.worstLinear, 1);
    cr_assert(isinf(st.worstScore));
    cr_assert_eq(st.aSliceLo[0], 1);
    cr_assert_eq(st.aSliceHi[0], 2);
    cr_assert_eq(st.maxUlp, 0, "non-finite pairs stay out of max_ulp");
}

Test(compare, infinities)
{
    uint64_t aDim[1] = { 3 };
    parity_cmp_spec spec = spec_f32(1, aDim);
    float e[3] = { INFINITY, INFINITY, -INFINITY };
    float c[3] = { INFINITY, -INFINITY, 3.0e38f };
    parity_tensor_stats st = judge(&spec, e, c, 3);
    cr_assert_eq(st.nNanMismatch, 2);
    cr_assert_eq(st.nMismatch, 2);
    cr_assert_eq(st.aSliceLo[0], 1);
    cr_assert_eq(st.aSliceHi[0], 3);
}

Test(compare, signed_zero_policy)
{
    uint64_t aDim[1] = { 2 };
    parity_cmp_spec spec = spec_f32(1, aDim);
    float e[2] = { 0.0f, 1.0f }, c[2] = { -0.0f, 1.0f };
    parity_tensor_stats st = judge(&spec, e, c, 2);
    cr_assert_eq(st.nMismatch, 0);
    cr_assert_eq(st.nSignedZeroMismatch, 1);
    cr_assert_eq(st.maxUlp, 0);
    spec.tol.signedZeros = 1;
    st = judge(&spec, e, c, 2);
    cr_assert_eq(st.nMismatch, 1);
}

Test(compare, tolerance_boundary_and_ulps)
{
    uint64_t aDim[1] = { 2 };
    parity_cmp_spec spec = spec_f32(1, aDim);
    /* allowed = 1e-5 + 1.3e-6 * 1 = 1.13e-5 */
    float e[2] = { 1.0f, 1.0f };
    float c[2] = { 1.0f + 8e-6f, 1.0f + 2e-5f };
    parity_tensor_stats st = judge(&spec, e, c, 2);
    cr_assert_eq(st.nMismatch, 1);
    cr_assert_eq(st.worstLinear, 1);
    cr_assert_eq(st.maxUlp, (uint64_t)((c[1] - 1.0f) / 0x1p-23f));
    cr_assert_float_eq(st.maxRelErr, (double)c[1] - 1.0, 1e-15);
    /* With --max-ulp large enough, the same element passes. */
    spec.tol.useUlp = 1;
    spec.tol.maxUlp = st.maxUlp;
    st = judge(&spec, e, c, 2);
    cr_assert_eq(st.nMismatch, 0);
    spec.tol.maxUlp -= 1;
    st = judge(&spec, e, c, 2);
    cr_assert_eq(st.nMismatch, 1);
}

Test(compare, relative_error_floor_is_smallest_normal)
{
    uint64_t aDim[1] = { 1 };
    parity_cmp_spec spec = spec_f32(1, aDim);
    float e[1] = { 0x1p-140f }, c[1] = { 0x1p-139f };   /* subnormals */
    parity_tensor_stats st = judge(&spec, e, c, 1);
    cr_assert_float_eq(st.maxRelErr, (0x1p-139 - 0x1p-140) / 0x1p-126, 1e-20);
    cr_assert_eq(st.nMismatch, 0, "tiny absolute difference is within atol");
    cr_assert_eq(st.maxUlp, 1u << 9, "subnormal ulps are 2^-149 apart: 2^-140 is 512 of them");
}

Test(compare, exact_mode_fails_any_bit_difference)
{
    uint64_t aDim[1] = { 3 };
    parity_cmp_spec spec = spec_f32(1, aDim);
    float e[3] = { 1.0f, 0.0f, NAN }, c[3] = { nextafterf(1.0f, 2.0f), -0.0f, NAN };
    spec.tol.exact = 1;
    parity_tensor_stats st = judge(&spec, e, c, 3);
    cr_assert_eq(st.nMismatch, 2, "1 ulp and -0 differ bit for bit; identical NaN does not");
    cr_assert_eq(st.maxUlp, 1);
}

Test(compare, worst_ties_go_to_lowest_index_across_blocks)
{
    uint64_t aDim[2] = { 4, 5 };
    parity_cmp_spec spec = spec_f32(2, aDim);
    float e[20], c[20];
    parity_tensor_stats whole, merged, part;
    int i;
    for (i = 0; i < 20; i++) e[i] = c[i] = (float)i;
    c[7] = 7.5f;
    c[13] = 13.5f;            /* same absolute error, larger |e|: lower score */
    parity_cmp_stats_init(&whole);
    parity_cmp_block(&spec, e, c, 0, 20, &whole);
    /* Same data judged in blocks, merged in order. */
    parity_cmp_stats_init(&merged);
    for (i = 0; i < 20; i += 6) {
        size_t n = 20 - i < 6 ? 20 - i : 6;
        parity_cmp_stats_init(&part);
        parity_cmp_block(&spec, e + i, c + i, (uint64_t)i, n, &part);
        parity_cmp_stats_merge(&merged, &part, 2);
    }
    cr_assert_eq(whole.nMismatch, 2);
    cr_assert_eq(whole.worstLinear, 7, "allowed grows with |e|: index 7 scores higher");
    cr_assert_eq(merged.worstLinear, whole.worstLinear);
    cr_assert_eq(merged.worstScore, whole.worstScore);
    cr_assert_eq(merged.nMismatch, whole.nMismatch);
    cr_assert_eq(merged.maxUlp, whole.maxUlp);
    cr_assert_eq(memcmp(merged.aUlpHist, whole.aUlpHist, sizeof whole.aUlpHist), 0);
    /* Bounding box: (1,2) and (2,3) -> rows [1,3), cols [2,4). */
    cr_assert_eq(merged.aSliceLo[0], 1);
    cr_assert_eq(merged.aSliceHi[0], 3);
    cr_assert_eq(merged.aSliceLo[1], 2);
    cr_assert_eq(merged.aSliceHi[1], 4);
}

Test(compare, exact_ties_keep_first)
{
    uint64_t aDim[1] = { 6 };
    parity_cmp_spec spec = spec_f32(1, aDim);
    float e[6] = { 1, 1, 1, 1, 1, 1 }, c[6] = { 1, 1, 2, 1, 2, 1 };
    parity_tensor_stats a, b;
    parity_cmp_stats_init(&a);
    parity_cmp_block(&spec, e, c, 0, 3, &a);
    parity_cmp_stats_init(&b);
    parity_cmp_block(&spec, e + 3, c + 3, 3, 3, &b);
    parity_cmp_stats_merge(&a, &b, 1);
    cr_assert_eq(a.worstLinear, 2);
}

Test(compare, bf16_ulps_are_bf16_ulps)
{
    uint64_t aDim[1] = { 1 };
    parity_cmp_spec spec;
    uint16_t e[1] = { 0x3f80 }, c[1] = { 0x3f83 };   /* 1.0 and 1.0 + 3 bf16 ulps */
    parity_tensor_stats st;
    memset(&spec, 0, sizeof spec);
    spec.dtype = PARITY_DT_BF16;
    spec.rank = 1;
    spec.aDim = aDim;
    parity_tolerance_default(PARITY_DT_BF16, &spec.tol);
    parity_cmp_stats_init(&st);
    parity_cmp_block(&spec, e, c, 0, 1, &st);
    cr_assert_eq(st.maxUlp, 3);
    cr_assert_float_eq(st.maxAbsErr, 3 * 0x1p-7, 1e-12);
    cr_assert_eq(st.nMismatch, 1, "3 bf16 ulps at 1.0 (0.0234) exceed 1.6e-2 + 1e-5");
    c[0] = 0x3f81;   /* one ulp, 0.0078: within bf16's default tolerance */
    parity_cmp_stats_init(&st);
    parity_cmp_block(&spec, e, c, 0, 1, &st);
    cr_assert_eq(st.maxUlp, 1);
    cr_assert_eq(st.nMismatch, 0);
}

/* ---- order ------------------------------------------------------------------------- */

static char g_zDir[256];

/* ---- the vectorised float32 pass against an element-by-element reference ---------------- */

/* What parity_cmp_block promises for float32, written element by element: specials first
 * (compare.c's header), then the figures of finite differing pairs, the sums kept in 8
 * lanes (element i in lane i mod 8 over the whole block, folded in lane order at its end),
 * the worst score with the lowest index on ties, the failing count, the ulp histogram. The
 * block's figures must equal these bit for bit, however the compiler ran the lanes. */
typedef struct {
    double maxAbs, maxRel, sumSqDiff, sumSqRef, worst;
    uint64_t maxUlp, nBitDiff, nMismatch, nNan, nZero, worstLinear, aHist[PARITY_ULP_BUCKETS];
} ref_stats;

static int ref_bucket(uint64_t u) { return u == 0 ? 0 : 64 - __builtin_clzll(u); }

static ref_stats reference_f32(const parity_tolerance *pTol, const float *e, const float *c,
                               size_t n)
{
    ref_stats r;
    double aSqD[8] = { 0 }, aSqR[8] = { 0 };
    double floorRel = 0x1p-126;
    size_t i;
    int l;
    memset(&r, 0, sizeof r);
    r.worst = n ? 0.0 : -1.0;
    for (i = 0; i < n; i++) {
        uint32_t bE, bC;
        double ed = e[i], cd = c[i], score = 0.0;
        memcpy(&bE, &e[i], 4);
        memcpy(&bC, &c[i], 4);
        if (bE == bC) {
            r.aHist[0]++;
            if (isfinite(ed)) aSqR[i % 8] += ed * ed;
            continue;
        }
        r.nBitDiff++;
        if (ed != ed || cd != cd) {
            if (ed != ed && cd != cd) { r.aHist[0]++; score = 0.0; }
            else { r.nNan++; score = INFINITY; }
        } else if (!isfinite(ed) || !isfinite(cd)) {
            r.nNan++;
            score = INFINITY;
        } else if (ed == 0.0 && cd == 0.0) {
            r.nZero++;
            r.aHist[0]++;
            score = pTol->signedZeros ? INFINITY : 0.0;
        } else {
            double d = fabs(cd - ed), denom = fabs(ed) > floorRel ? fabs(ed) : floorRel;
            uint64_t u = parity_ulp_distance(parity_sign_magnitude_key(bE, 32),
                                             parity_sign_magnitude_key(bC, 32));
            if (d > r.maxAbs) r.maxAbs = d;
            if (d / denom > r.maxRel) r.maxRel = d / denom;
            if (u > r.maxUlp) r.maxUlp = u;
            aSqD[i % 8] += d * d;
            aSqR[i % 8] += ed * ed;
            r.aHist[ref_bucket(u)]++;
            score = parity_tolerance_score(pTol, ed, d, u);
        }
        if (score > r.worst) { r.worst = score; r.worstLinear = i; }
        if (score > 1.0) r.nMismatch++;
    }
    for (l = 0; l < 8; l++) { r.sumSqDiff += aSqD[l]; r.sumSqRef += aSqR[l]; }
    return r;
}

Test(compare, vectorised_float32_pass_equals_the_element_by_element_rule)
{
    static const float kSpecial[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-149f,
                                      -0x1p-149f, 0x1p-126f, 3.4028235e38f, -3.4028235e38f };
    static const size_t kN[] = { 1, 7, 8, 255, 256, 257, 4099, 65536 };
    uint64_t s = 99;
    size_t k, t, i;
    for (k = 0; k < sizeof kN / sizeof kN[0]; k++)
        for (t = 0; t < 3; t++) {
            const size_t n = kN[k];
            uint64_t aDim[1] = { n };
            parity_cmp_spec spec = spec_f32(1, aDim);
            float *e = malloc(n * sizeof *e), *c = malloc(n * sizeof *c);
            parity_tensor_stats st;
            ref_stats r;
            cr_assert(e && c);
            if (t == 1) { spec.tol.useUlp = 1; spec.tol.maxUlp = 3; }
            if (t == 2) { spec.tol.signedZeros = 1; spec.tol.rtol = 0.0; spec.tol.atol = 1e-6; }
            for (i = 0; i < n; i++) {
                s = s * 6364136223846793005ULL + 1442695040888963407ULL;
                e[i] = (float)((double)(s >> 11) * 0x1p-53 * 8.0 - 4.0) * (float)(1 + (s % 5));
                switch ((s >> 40) % 13) {
                case 0: c[i] = e[i]; break;                                  /* same bits */
                case 1: e[i] = kSpecial[(s >> 20) % 10]; c[i] = kSpecial[(s >> 24) % 10]; break;
                case 2: c[i] = e[i] * (1.0f + 1e-3f); break;                 /* fails */
                case 3: e[i] = 0x1p-140f; c[i] = 0x1p-139f; break;           /* subnormals */
                /* far apart: d = |c - e| has too many bits for d^2 to be exact, so a fused
                 * multiply-add in one pass and not the other shows in the sums */
                case 4: c[i] = e[i] * 1e-6f + 1e-3f; break;
                default: {
                    uint32_t b;
                    memcpy(&b, &e[i], 4);
                    b += (uint32_t)((s >> 30) % 9) - 4;                      /* a few ulps */
                    memcpy(&c[i], &b, 4);
                }
                }
            }
            parity_cmp_stats_init(&st);
            parity_cmp_block(&spec, e, c, 0, n, &st);
            r = reference_f32(&spec.tol, e, c, n);
            /* the run-time choice (AVX2 here) and the portable pass, group by group */
            {
                parity_f32_sums sA, sB;
                unsigned char aBA[PARITY_F32_GROUP], aBB[PARITY_F32_GROUP];
                unsigned char aLA[PARITY_F32_GROUP], aLB[PARITY_F32_GROUP];
                size_t g;
                memset(&sA, 0, sizeof sA);
                memset(&sB, 0, sizeof sB);
                for (g = 0; g < n; g += PARITY_F32_GROUP) {
                    size_t m = n - g < PARITY_F32_GROUP ? n - g : PARITY_F32_GROUP;
                    double worst = (double)(g % 3) * 0.5;
                    int anyA = parity_f32_lanes((const unsigned char *)(e + g),
                                                (const unsigned char *)(c + g), m, &spec.tol,
                                                0x1p-126, worst, &sA, aBA, aLA);
                    int anyB = parity_f32_lanes_portable((const unsigned char *)(e + g),
                                                         (const unsigned char *)(c + g), m,
                                                         &spec.tol, 0x1p-126, worst, &sB, aBB,
                                                         aLB);
                    cr_assert_eq(anyA, anyB);
                    cr_assert_eq(memcmp(aBA, aBB, m), 0, "buckets, n %zu group %zu", n, g);
                    cr_assert_eq(memcmp(aLA, aLB, m), 0, "looks, n %zu group %zu", n, g);
                    {
                        uint64_t aHA[PARITY_ULP_BUCKETS] = { 0 }, aHB[PARITY_ULP_BUCKETS] = { 0 };
                        parity_f32_bucket_counts(aBA, m, aHA);
                        parity_f32_bucket_counts_portable(aBA, m, aHB);
                        aHA[0] = aHB[0] = 0;
                        cr_assert_eq(memcmp(aHA, aHB, sizeof aHA), 0, "counts, n %zu group %zu", n, g);
                    }
                }
                cr_assert_eq(memcmp(&sA, &sB, sizeof sA), 0, "lanes, n %zu", n);
            }
            cr_assert_eq(st.nElem, n);
            cr_assert_eq(st.nBitDiff, r.nBitDiff, "n %zu tol %zu", n, t);
            cr_assert_eq(st.nMismatch, r.nMismatch, "n %zu tol %zu", n, t);
            cr_assert_eq(st.nNanMismatch, r.nNan);
            cr_assert_eq(st.nSignedZeroMismatch, r.nZero);
            cr_assert_eq(st.maxUlp, r.maxUlp);
            cr_assert_eq(st.worstLinear, r.worstLinear, "n %zu tol %zu", n, t);
            cr_assert(st.worstScore == r.worst || (isinf(st.worstScore) && isinf(r.worst)));
            /* bit for bit: the same operations in the same order */
            cr_assert_eq(memcmp(&st.maxAbsErr, &r.maxAbs, 8), 0);
            cr_assert_eq(memcmp(&st.maxRelErr, &r.maxRel, 8), 0, "%.17g vs %.17g", st.maxRelErr, r.maxRel);
            cr_assert_eq(memcmp(&st.sumSqDiff, &r.sumSqDiff, 8), 0, "%.17g vs %.17g", st.sumSqDiff, r.sumSqDiff);
            cr_assert_eq(memcmp(&st.sumSqRef, &r.sumSqRef, 8), 0, "%.17g vs %.17g", st.sumSqRef, r.sumSqRef);
            cr_assert_eq(memcmp(st.aUlpHist, r.aHist, sizeof r.aHist), 0);
            free(e);
            free(c);
        }
}

/* The histogram counted by value equals one increment per element: every length around
 * the vector width, buckets up to the by-value limit and past it (float32's largest is 33). */
Test(compare, bucket_counts_by_value_equal_increments)
{
    static const size_t kN[] = { 0, 1, 31, 32, 33, 63, 64, 65, 1000, 1024 };
    static const unsigned kTop[] = { 1, 3, 6, 7, 9, 33 };
    uint64_t s = 7;
    size_t k, t, i;
    for (k = 0; k < sizeof kN / sizeof kN[0]; k++)
        for (t = 0; t < sizeof kTop / sizeof kTop[0]; t++) {
            unsigned char aB[PARITY_F32_GROUP];
            uint64_t aHA[PARITY_ULP_BUCKETS] = { 0 }, aHB[PARITY_ULP_BUCKETS] = { 0 };
            for (i = 0; i < kN[k]; i++) { s = s * 6364136223846793005ULL + 1442695040888963407ULL; aB[i] = (unsigned char)((s >> 33) % (kTop[t] + 1)); }
            if (kN[k] > 40) aB[kN[k] - 1] = (unsigned char)kTop[t];   /* the largest in the tail */
            parity_f32_bucket_counts(aB, kN[k], aHA);
            parity_f32_bucket_counts_portable(aB, kN[k], aHB);
            aHA[0] = aHB[0] = 0;
            cr_assert_eq(memcmp(aHA, aHB, sizeof aHA), 0, "n %zu, buckets up to %u", kN[k], kTop[t]);
        }
}

static void setup_dir(void)
{
    snprintf(g_zDir, sizeof g_zDir, "/tmp/parity-test-order-XXXXXX");
    cr_assert_not_null(mkdtemp(g_zDir));
}

static void teardown_dir(void)
{
    char zCmd[300];
    snprintf(zCmd, sizeof zCmd, "rm -rf '%s'", g_zDir);
    cr_assert_eq(system(zCmd), 0);
}

static void add(parity_writer *pW, const char *zPath, const char *zOp, const char **azIn,
                size_t nIn, int order)
{
    float v = 1.0f;
    uint64_t aDim[1] = { 1 };
    cr_assert_eq(parity_writer_tensor(pW, zPath, PARITY_DT_F32, 1, aDim, &v), 0);
    if (zOp) cr_assert_eq(parity_writer_attr_string(pW, zPath, "op", zOp), 0);
    if (nIn) cr_assert_eq(parity_writer_attr_strings(pW, zPath, "inputs", azIn, nIn), 0);
    if (order >= 0) cr_assert_eq(parity_writer_attr_int(pW, zPath, "order", order), 0);
}

Test(order, order_attr_then_topological_then_cycles, .init = setup_dir, .fini = teardown_dir)
{
    char zFile[400], zErr[PARITY_ERR_LEN];
    parity_writer *pW;
    parity_capture *pCap;
    const char *in_x[] = { "/x" }, *in_b[] = { "b" };   /* relative path means "/b" */
    const char *in_c1[] = { "/c2" }, *in_c2[] = { "/c1" }, *in_missing[] = { "/nowhere" };
    size_t aOrder[16], i;
    char *azWarn[16] = { 0 };
    /* One topological order: x (which z, ordered 0, consumes) before z; then the tensors
     * without an ordered consumer, ties by name (b before a, which needs it); the cycle
     * last. */
    const char *azExpect[] = { "/x", "/z", "/b", "/a", "/dangle", "/c1", "/c2" };

    snprintf(zFile, sizeof zFile, "%s/g.h5", g_zDir);
    cr_assert_eq(parity_writer_open(zFile, &pW, zErr, sizeof zErr), 0, "%s", zErr);
    add(pW, "/x", NULL, NULL, 0, -1);
    add(pW, "/z", "relu", in_x, 1, 0);        /* has order: right after its input */
    add(pW, "/b", "relu", in_x, 1, -1);       /* topological: b before a (a needs b) */
    add(pW, "/a", "relu", in_b, 1, -1);
    add(pW, "/c1", "relu", in_c1, 1, -1);     /* cycle c1 <-> c2 */
    add(pW, "/c2", "relu", in_c2, 1, -1);
    add(pW, "/dangle", "relu", in_missing, 1, -1);
    cr_assert_eq(parity_writer_close(pW, zErr, sizeof zErr), 0, "%s", zErr);

    cr_assert_eq(parity_capture_open(zFile, &pCap, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(parity_capture_count(pCap), 7);
    cr_assert_eq(parity_order_compute(pCap, 1, aOrder, azWarn), 0);
    for (i = 0; i < 7; i++)
        cr_assert_str_eq(parity_capture_tensor(pCap, aOrder[i])->zPath, azExpect[i], "position %zu", i);
    for (i = 0; i < 7; i++) {
        const char *zPath = parity_capture_tensor(pCap, i)->zPath;
        if (strcmp(zPath, "/c1") == 0 || strcmp(zPath, "/c2") == 0)
            cr_assert(azWarn[i] && strstr(azWarn[i], "cycle"), "%s warned", zPath);
        else if (strcmp(zPath, "/dangle") == 0)
            cr_assert(azWarn[i] && strstr(azWarn[i], "/nowhere"));
        else
            cr_assert_null(azWarn[i], "%s has no warning", zPath);
        free(azWarn[i]);
    }
    parity_capture_close(pCap);
}

/* Orders that contradict the inputs: the inputs decide and the consumer is warned about;
 * tensors without "order" sit just before their earliest ordered consumer. */
Test(order, contradicting_orders_warn_and_inputs_decide, .init = setup_dir, .fini = teardown_dir)
{
    char zFile[400], zErr[PARITY_ERR_LEN];
    parity_writer *pW;
    parity_capture *pCap;
    const char *in_x[] = { "/x" }, *in_p[] = { "/p" }, *in_q[] = { "/q" }, *in_r[] = { "/r" };
    size_t aOrder[8], i;
    char *azWarn[8] = { 0 };
    const char *azExpect[] = { "/x", "/p", "/q", "/r", "/s" };

    snprintf(zFile, sizeof zFile, "%s/k.h5", g_zDir);
    cr_assert_eq(parity_writer_open(zFile, &pW, zErr, sizeof zErr), 0, "%s", zErr);
    add(pW, "/x", NULL, NULL, 0, -1);
    add(pW, "/p", "relu", in_x, 1, 5);        /* ordered 5 ... */
    add(pW, "/q", "relu", in_p, 1, 2);        /* ... but its consumer says 2: contradiction */
    add(pW, "/r", "relu", in_q, 1, -1);       /* no order, consumed by /s */
    add(pW, "/s", "relu", in_r, 1, 9);
    cr_assert_eq(parity_writer_close(pW, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(parity_capture_open(zFile, &pCap, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(parity_order_compute(pCap, 1, aOrder, azWarn), 0);
    for (i = 0; i < 5; i++)
        cr_assert_str_eq(parity_capture_tensor(pCap, aOrder[i])->zPath, azExpect[i], "position %zu", i);
    for (i = 0; i < 5; i++) {
        const char *zPath = parity_capture_tensor(pCap, i)->zPath;
        if (strcmp(zPath, "/q") == 0)
            cr_assert(azWarn[i] && strstr(azWarn[i], "contradict") && strstr(azWarn[i], "/p"),
                      "%s: %s", zPath, azWarn[i] ? azWarn[i] : "(none)");
        else
            cr_assert_null(azWarn[i], "%s: %s", zPath, azWarn[i]);
        free(azWarn[i]);
    }
    parity_capture_close(pCap);
}
