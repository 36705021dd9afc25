/*
 * test_fuzz_stored.c - the crop rules of stored ops (fuzz/cases/stored.c) over every op of
 * the registry the fuzzer lays out: for generated cases of each, written as a capture pair
 * and read back as a stored op, random windows of the crop axes must leave the reference
 * unchanged at every cropped element (the property the minimizer relies on); a crop along
 * a reduced dim must be caught by the same check; and the replay target and minimizer find
 * a builtin defect's failing row in a stored pair.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/search/search.h"
#include "support.h"

static void make_dir(void)
{
    support_dir_create(TEST_BINARY_DIR, "fuzzstored-");
}

TestSuite(fuzz_stored, .init = make_dir, .fini = support_dir_remove, .timeout = 600);

/* Writes pCase with outputs aEager, aCompiled as e.h5 and c.h5 in the test folder. */
static void write_pair(const parity_case *pCase, const double *aEager, const double *aCompiled,
                       char *zE, char *zC, size_t n)
{
    char zErr[PARITY_ERR_LEN];
    snprintf(zE, n, "%s/e.h5", support_dir());
    snprintf(zC, n, "%s/c.h5", support_dir());
    cr_assert_eq(parity_case_write(pCase, aEager, "eager", "test", NULL, NULL, zE, zErr,
                                   sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(parity_case_write(pCase, aCompiled, "compiled", "test", NULL, NULL, zC, zErr,
                                   sizeof zErr), 0, "%s", zErr);
}

/* A generated case of zOp small enough for the reference of every element. */
static int small_case(parity_rng *pRng, const char *zOp, parity_case *pCase)
{
    parity_case_spec s;
    char zErr[PARITY_ERR_LEN];
    int tries, d;
    for (tries = 0; tries < 50; tries++) {
        if (parity_spec_generate(pRng, zOp, PARITY_STRATEGY_GUIDED, &s) != 0) continue;
        for (d = 0; d < s.nDim; d++)
            if (s.aDim[d] > 9) s.aDim[d] = 1 + parity_rng_below(pRng, 9);
        if (parity_case_expand(&s, pCase, zErr, sizeof zErr) != 0) continue;
        if (pCase->nOut > 0 && pCase->nOut <= 4096 && parity_case_work(pCase) < 200000) return 0;
        parity_case_free(pCase);
    }
    return -1;
}

Test(fuzz_stored, crops_keep_the_reference_of_every_op)
{
    size_t nOps, i;
    const parity_layout_info *aInfo = parity_layout_all(&nOps);
    parity_rng rng;
    int nWithAxes = 0, nCropped = 0;
    parity_rng_seed(&rng, 7);
    for (i = 0; i < nOps; i++) {
        int round;
        for (round = 0; round < 6; round++) {
            parity_case c;
            parity_stored_op s;
            char zE[512], zC[512], zErr[PARITY_ERR_LEN];
            double *aOut;
            int k, w;
            if (small_case(&rng, aInfo[i].zOp, &c) != 0) break;
            aOut = calloc(c.nOut, sizeof *aOut);   /* outputs play no part in the check */
            write_pair(&c, aOut, aOut, zE, zC, sizeof zE);
            free(aOut);
            cr_assert_eq(parity_stored_open(zE, zC, "/out", &s, zErr, sizeof zErr), 0,
                         "%s: %s", aInfo[i].zOp, zErr);
            cr_assert_eq(s.whole.nOut, c.nOut);
            if (s.nAxis > 0 && round == 0) nWithAxes++;
            for (w = 0; w < 4 && s.nAxis > 0; w++) {
                uint64_t aLo[PARITY_MAX_RANK], aLen[PARITY_MAX_RANK], nDiffer;
                parity_stored_crop crop;
                char zDesc[512];
                for (k = 0; k < s.nAxis; k++) {
                    uint64_t full = s.whole.aOutDim[s.aAxis[k].outAxis];
                    aLen[k] = 1 + parity_rng_below(&rng, full < 3 ? full : 3);
                    aLo[k] = parity_rng_below(&rng, full - aLen[k] + 1);
                }
                cr_assert_eq(parity_stored_crop_make(&s, aLo, aLen, &crop, zErr, sizeof zErr), 0,
                             "%s: %s", parity_case_describe(&c, zDesc, sizeof zDesc), zErr);
                cr_assert_eq(parity_stored_check_crop(&s, &crop, &nDiffer, zErr, sizeof zErr), 0,
                             "%s", zErr);
                cr_assert_eq(nDiffer, 0, "%s: the crop changed %llu of %llu references",
                             parity_case_describe(&c, zDesc, sizeof zDesc),
                             (unsigned long long)nDiffer, (unsigned long long)crop.c.nOut);
                nCropped++;
                parity_stored_crop_free(&crop);
            }
            parity_stored_close(&s);
            parity_case_free(&c);
        }
    }
    /* the rule covers the families that matter: at least the row-wise, norm, reduce,
     * elementwise, product, attention, conv, pool and batch-norm ops */
    cr_assert_geq(nWithAxes, 30, "only %d ops have a crop axis", nWithAxes);
    cr_assert_geq(nCropped, 400);
}

/* A rank-2 softmax along its last dim, rows x cols, generated from seed. */
static void softmax_case(uint64_t rows, uint64_t cols, uint64_t seed, parity_case *pCase)
{
    parity_case_spec spec;
    char zErr[PARITY_ERR_LEN];
    int d;
    memset(&spec, 0, sizeof spec);
    snprintf(spec.zOp, sizeof spec.zOp, "softmax");
    spec.variant = 1;     /* rank 2, along the last dim (layout.c) */
    spec.dtype = PARITY_DT_F32;
    spec.nDim = 4;
    for (d = 0; d < 3; d++) spec.aDim[d] = rows;
    spec.aDim[3] = cols;  /* the reduced role */
    spec.seed = seed;
    cr_assert_eq(parity_case_expand(&spec, pCase, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(pCase->outRank, 2);
    cr_assert_eq(pCase->aOutDim[0], rows);
    cr_assert_eq(pCase->aOutDim[1], cols);
}

/* The check can fail: a crop of softmax's own row changes every reference in it. */
Test(fuzz_stored, a_crop_along_a_reduced_dim_is_caught)
{
    parity_case c;
    parity_stored_op s;
    parity_stored_crop crop;
    char zE[512], zC[512], zErr[PARITY_ERR_LEN];
    uint64_t aLo[2] = { 1, 3 }, aLen[2] = { 2, 5 }, nDiffer;
    double *aOut;
    softmax_case(4, 16, 3, &c);
    aOut = calloc(c.nOut, sizeof *aOut);
    write_pair(&c, aOut, aOut, zE, zC, sizeof zE);
    free(aOut);
    cr_assert_eq(parity_stored_open(zE, zC, "/out", &s, zErr, sizeof zErr), 0, "%s", zErr);
    /* the rule: rows only */
    cr_assert_eq(s.nAxis, 1);
    cr_assert_eq(s.aAxis[0].outAxis, 0);
    cr_assert_eq(s.aAxis[0].aInAxis[0], 0);
    /* a wrong rule: the reduced dim as a crop axis too */
    s.aAxis[1].outAxis = 1;
    s.aAxis[1].aInAxis[0] = 1;
    for (int i = 1; i < PARITY_CASE_MAX_OPERANDS; i++) s.aAxis[1].aInAxis[i] = -1;
    s.nAxis = 2;
    cr_assert_eq(parity_stored_crop_make(&s, aLo, aLen, &crop, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(parity_stored_check_crop(&s, &crop, &nDiffer, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(nDiffer, crop.c.nOut, "%llu of %llu", (unsigned long long)nDiffer,
                 (unsigned long long)crop.c.nOut);
    parity_stored_crop_free(&crop);
    parity_stored_close(&s);
    parity_case_free(&c);
}

/* A stored pair with one wrong row (a kernel that scales row 5 of 9): the minimizer finds
 * that row alone, 1-minimal; a pair without a wrong element has nothing to shrink. */
Test(fuzz_stored, minimizer_finds_the_wrong_row)
{
    parity_case c;
    parity_stored_op s;
    parity_stored_minimized min;
    char zE[512], zC[512], zErr[PARITY_ERR_LEN];
    double *aEager, *aCompiled;
    uint64_t j;
    softmax_case(9, 33, 5, &c);
    aEager = calloc(c.nOut, sizeof *aEager);
    aCompiled = calloc(c.nOut, sizeof *aCompiled);
    cr_assert_eq(parity_builtin_eager(&c, aEager, zErr, sizeof zErr), 0, "%s", zErr);
    memcpy(aCompiled, aEager, c.nOut * sizeof *aEager);
    write_pair(&c, aEager, aCompiled, zE, zC, sizeof zE);
    cr_assert_eq(parity_stored_open(zE, zC, "/out", &s, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(parity_minimize_stored(&s, 400, &min, zErr, sizeof zErr), 1, "%s", zErr);
    cr_assert_eq(min.first.cls, PARITY_FINDING_NONE);
    parity_stored_close(&s);

    for (j = 5 * 33; j < 6 * 33; j++) aCompiled[j] = (float)(aCompiled[j] * 1.01);
    write_pair(&c, aEager, aCompiled, zE, zC, sizeof zE);
    cr_assert_eq(parity_stored_open(zE, zC, "/out", &s, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(parity_minimize_stored(&s, 400, &min, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(min.first.cls, PARITY_FINDING_DIVERGES);
    cr_assert_eq(min.result.cls, PARITY_FINDING_DIVERGES);
    cr_assert_eq(min.crop.aLo[0], 5);
    cr_assert_eq(min.crop.aLen[0], 1);
    cr_assert_eq(min.crop.c.aOutDim[1], 33);   /* the row stays whole */
    cr_assert(min.minimal);
    cr_assert_eq(min.nRefDiffer, 0);
    parity_stored_minimized_free(&min);

    /* a budget of one replay: the whole op judged, nothing cut, not minimal */
    cr_assert_eq(parity_minimize_stored(&s, 1, &min, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(min.crop.aLen[0], 9);
    cr_assert(!min.minimal);
    parity_stored_minimized_free(&min);
    parity_stored_close(&s);
    parity_case_free(&c);
    free(aEager);
    free(aCompiled);
}
