/*
 * test_op_attention.c - scaled_dot_product_attention (tolerance/op_sdpa.c) and conv2d
 * (tolerance/op_conv2d.c), called through the op registry directly (parity_op_find,
 * parity_op_begin, parity_judge).
 *
 * sdpa: a straightforward float32 kernel (scores, two-pass softmax, weighted sum) and a
 * flash-style online kernel (blocks of 4 over S, running max, rescaling) pass for several
 * shapes (L = 1, S = 1, causal, boolean and float masks, scale, broadcast batch); a fully
 * masked row must be NaN (zeros fail); 3x the bound injected at one element fails exactly
 * that element; bad shapes and attributes are clear errors.
 * conv2d: a naive direct float32 convolution and an im2col + blocked GEMM variant pass for
 * stride, padding, dilation, groups, 1x1 kernels and bias; injected errors are caught;
 * shape errors are clear.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/capture.h"
#include "tolerance/judge.h"
#include "tolerance/mpref.h"
#include "tolerance/ops.h"
#include "support.h"

#define SDPA "scaled_dot_product_attention"

/* ---- helpers ---------------------------------------------------------------------- */

static double *rand_f32(uint64_t n, uint64_t seed, float lo, float hi)
{
    double *a = malloc((n ? n : 1) * sizeof *a);
    uint64_t i, s = seed;
    cr_assert(a);
    for (i = 0; i < n; i++) {
        float u = (float)((double)(splitmix64(&s) >> 40) * 0x1p-24);
        a[i] = (double)(lo + (hi - lo) * u);
    }
    return a;
}

static parity_operand operand(int rank, const uint64_t *aDim, double *a, parity_dtype dt)
{
    return op_operand("x", dt, rank, aDim, a);
}








/* begin fails, and its message contains zWant. */
static void expect_error(const char *zOp, const parity_operand *aIn, size_t nIn, int outRank,
                         const uint64_t *aOut, const parity_attr *aAttr, size_t nAttr,
                         const char *zWant)
{
    parity_op_call call;
    char zErr[512];
    int rc = op_begin(&call, zOp, aIn, nIn, outRank, aOut, aAttr, nAttr, zErr, sizeof zErr);
    cr_expect_eq(rc, -1, "%s: expected an error containing '%s'", zOp, zWant);
    if (rc == 0) { parity_op_end(&call); return; }
    cr_expect(strstr(zErr, zWant) != NULL, "%s: error '%s' lacks '%s'", zOp, zErr, zWant);
    cr_expect(strncmp(zErr, zOp, strlen(zOp)) == 0, "error '%s' names the op", zErr);
}



static void expect_pass(parity_op_call *pCall, const double *aCompiled, const char *zWhat)
{
    parity_judgement j = op_judge(pCall, aCompiled);
    cr_expect_eq(j.nFail, 0, "%s: %llu failures, worst ratio %g at %llu", zWhat,
                 (unsigned long long)j.nFail, j.worstRatio,
                 (unsigned long long)j.worstLinear);
    cr_expect(j.worstRatio < 1.0, "%s: worst ratio %g", zWhat, j.worstRatio);
    cr_expect_eq(j.nChecked, pCall->nOut, "%s: every element checked", zWhat);
}

/* 3x the bound injected at element iBad fails exactly that one. */
static void expect_inject(parity_op_call *pCall, const double *aCompiled, uint64_t iBad,
                          const char *zWhat)
{
    double *aBad = malloc(pCall->nOut * sizeof *aBad), ref, bound;
    parity_judgement j;
    cr_assert(aBad);
    memcpy(aBad, aCompiled, pCall->nOut * sizeof *aBad);
    op_element(pCall, iBad, &ref, &bound);
    cr_assert(bound > 0.0 && isfinite(bound), "%s: bound %g", zWhat, bound);
    aBad[iBad] = (double)(float)(ref + 3.0 * bound);
    j = op_judge(pCall, aBad);
    cr_expect_eq(j.nFail, 1, "%s: injected error: %llu failures", zWhat,
                 (unsigned long long)j.nFail);
    cr_expect_eq(j.worstLinear, iBad, "%s: worst at %llu, injected at %llu", zWhat,
                 (unsigned long long)j.worstLinear, (unsigned long long)iBad);
    cr_expect(j.worstRatio > 2.0 && j.worstRatio < 4.0, "%s: ratio %g", zWhat, j.worstRatio);
    free(aBad);
}

/* ---- float32 sdpa kernels ---------------------------------------------------------- */

typedef struct {
    int nBatch;                       /* batch dims of the output */
    uint64_t aBatch[4];
    uint64_t aQB[4], aKB[4];          /* q's and k/v's batch dims (1 = broadcast) */
    uint64_t L, S, E, Ev;
    int causal;
    int maskKind;                     /* 0 none, 1 bool, 2 float */
    int maskFull;                     /* mask [batch..., L, S] (else [L, S]) */
    double scale;                     /* 0: default */
} sdpa_case;

typedef struct {
    double *q, *k, *v, *mask;
    uint64_t nQ, nK, nV, nMask, nOut, nBatchOut;
    parity_operand aIn[4];
    size_t nIn;
    uint64_t aOut[6];
    int outRank;
    parity_attr aAttr[2];
    size_t nAttr;
} sdpa_data;

static uint64_t bidx(const sdpa_case *pC, const uint64_t *aOwn, uint64_t iB)
{
    /* output batch index -> the operand's batch index (broadcast dims give 0) */
    uint64_t r = 0, mul = 1;
    int d;
    for (d = pC->nBatch - 1; d >= 0; d--) {
        uint64_t idx = iB % pC->aBatch[d];
        iB /= pC->aBatch[d];
        if (aOwn[d] != 1) r += idx * mul;
        mul *= aOwn[d];
    }
    return r;
}

static double score_mask(const sdpa_case *pC, const sdpa_data *pD, uint64_t iB, uint64_t l,
                         uint64_t j, int *pMasked)
{
    *pMasked = 0;
    if (pC->causal && j > l) { *pMasked = 1; return 0.0; }
    if (pC->maskKind) {
        double m = pD->mask[(pC->maskFull ? iB * pC->L * pC->S : 0) + l * pC->S + j];
        if (pC->maskKind == 1) { if (m == 0.0) *pMasked = 1; return 0.0; }
        if (m == -INFINITY) *pMasked = 1;
        return m;
    }
    return 0.0;
}

static float f32_score(const sdpa_case *pC, const sdpa_data *pD, uint64_t iB, uint64_t l,
                       uint64_t j, int *pMasked)
{
    const double *q = pD->q + (bidx(pC, pC->aQB, iB) * pC->L + l) * pC->E;
    const double *k = pD->k + (bidx(pC, pC->aKB, iB) * pC->S + j) * pC->E;
    float s = 0.0f, scale = pC->scale != 0.0 ? (float)pC->scale : 1.0f / sqrtf((float)pC->E);
    float mv = (float)score_mask(pC, pD, iB, l, j, pMasked);
    uint64_t e;
    if (*pMasked) return -INFINITY;
    for (e = 0; e < pC->E; e++) s += (float)q[e] * (float)k[e];
    return s * scale + mv;
}

/* variant 0: scores, two-pass softmax, weighted sum; 1: flash-style, blocks of 4 over S
 * with running max and rescaling, division at the end. */
static double *f32_sdpa(const sdpa_case *pC, const sdpa_data *pD, int variant)
{
    double *out = malloc(pD->nOut * sizeof *out);
    float *s = malloc((pC->S + 1) * sizeof *s), *acc = malloc((pC->Ev + 1) * sizeof *acc);
    uint64_t iB, l, j, c;
    cr_assert(out && s && acc);
    for (iB = 0; iB < pD->nBatchOut; iB++)
        for (l = 0; l < pC->L; l++) {
            const double *v = pD->v + bidx(pC, pC->aKB, iB) * pC->S * pC->Ev;
            double *o = out + (iB * pC->L + l) * pC->Ev;
            int masked;
            if (variant == 0) {
                float m = -INFINITY, sum = 0.0f;
                for (j = 0; j < pC->S; j++) {
                    s[j] = f32_score(pC, pD, iB, l, j, &masked);
                    if (s[j] > m) m = s[j];
                }
                for (j = 0; j < pC->S; j++) {
                    s[j] = expf(s[j] - m);
                    sum += s[j];
                }
                for (j = 0; j < pC->S; j++) s[j] /= sum;
                for (c = 0; c < pC->Ev; c++) {
                    float a = 0.0f;
                    for (j = 0; j < pC->S; j++) a += s[j] * (float)v[j * pC->Ev + c];
                    o[c] = (double)a;
                }
            } else {
                float m = -INFINITY, lsum = 0.0f;
                uint64_t j0;
                for (c = 0; c < pC->Ev; c++) acc[c] = 0.0f;
                for (j0 = 0; j0 < pC->S; j0 += 4) {
                    uint64_t j1 = j0 + 4 < pC->S ? j0 + 4 : pC->S;
                    float mNew = m, alpha, bsum = 0.0f;
                    for (j = j0; j < j1; j++) {
                        s[j] = f32_score(pC, pD, iB, l, j, &masked);
                        if (s[j] > mNew) mNew = s[j];
                    }
                    if (mNew == -INFINITY) continue;          /* fully masked block */
                    alpha = expf(m - mNew);
                    for (j = j0; j < j1; j++) {
                        s[j] = expf(s[j] - mNew);
                        bsum += s[j];
                    }
                    lsum = lsum * alpha + bsum;
                    for (c = 0; c < pC->Ev; c++) {
                        float a = 0.0f;
                        for (j = j0; j < j1; j++) a += s[j] * (float)v[j * pC->Ev + c];
                        acc[c] = acc[c] * alpha + a;
                    }
                    m = mNew;
                }
                for (c = 0; c < pC->Ev; c++) o[c] = (double)(acc[c] / lsum);
            }
        }
    free(s);
    free(acc);
    return out;
}

static void sdpa_make(const sdpa_case *pC, sdpa_data *pD, uint64_t seed)
{
    uint64_t aDim[6], nQB = 1, nKB = 1, i;
    int d, r;
    memset(pD, 0, sizeof *pD);
    pD->nBatchOut = 1;
    for (d = 0; d < pC->nBatch; d++) {
        nQB *= pC->aQB[d];
        nKB *= pC->aKB[d];
        pD->nBatchOut *= pC->aBatch[d];
    }
    pD->nQ = nQB * pC->L * pC->E;
    pD->nK = nKB * pC->S * pC->E;
    pD->nV = nKB * pC->S * pC->Ev;
    pD->q = rand_f32(pD->nQ, seed, -1.5f, 1.5f);
    pD->k = rand_f32(pD->nK, seed + 1, -1.5f, 1.5f);
    pD->v = rand_f32(pD->nV, seed + 2, -2.0f, 2.0f);
    for (d = 0; d < pC->nBatch; d++) aDim[d] = pC->aQB[d];
    aDim[pC->nBatch] = pC->L; aDim[pC->nBatch + 1] = pC->E;
    pD->aIn[0] = operand(pC->nBatch + 2, aDim, pD->q, PARITY_DT_F32);
    for (d = 0; d < pC->nBatch; d++) aDim[d] = pC->aKB[d];
    aDim[pC->nBatch] = pC->S; aDim[pC->nBatch + 1] = pC->E;
    pD->aIn[1] = operand(pC->nBatch + 2, aDim, pD->k, PARITY_DT_F32);
    aDim[pC->nBatch + 1] = pC->Ev;
    pD->aIn[2] = operand(pC->nBatch + 2, aDim, pD->v, PARITY_DT_F32);
    pD->nIn = 3;
    if (pC->maskKind) {
        r = 0;
        if (pC->maskFull) for (d = 0; d < pC->nBatch; d++) aDim[r++] = pC->aBatch[d];
        aDim[r++] = pC->L;
        aDim[r++] = pC->S;
        pD->nMask = (pC->maskFull ? pD->nBatchOut : 1) * pC->L * pC->S;
        pD->mask = rand_f32(pD->nMask, seed + 3, -3.0f, 3.0f);
        for (i = 0; i < pD->nMask; i++) {
            uint64_t l = (i / pC->S) % pC->L, j = i % pC->S;
            if (pC->maskKind == 1) pD->mask[i] = (pD->mask[i] > -1.0 || j == l % pC->S) ? 1.0 : 0.0;
            else if (pD->mask[i] < -2.0 && j != l % pC->S) pD->mask[i] = -INFINITY;
        }
        pD->aIn[3] = operand(r, aDim, pD->mask, pC->maskKind == 1 ? PARITY_DT_BOOL : PARITY_DT_F32);
        pD->nIn = 4;
    }
    for (d = 0; d < pC->nBatch; d++) pD->aOut[d] = pC->aBatch[d];
    pD->aOut[pC->nBatch] = pC->L;
    pD->aOut[pC->nBatch + 1] = pC->Ev;
    pD->outRank = pC->nBatch + 2;
    pD->nOut = pD->nBatchOut * pC->L * pC->Ev;
    pD->nAttr = 0;
    if (pC->causal) pD->aAttr[pD->nAttr++] = attr_int(0, "is_causal", 1);
    if (pC->scale != 0.0) pD->aAttr[pD->nAttr++] = attr_float(1, "scale", pC->scale);
}

static void sdpa_free_data(sdpa_data *pD)
{
    free(pD->q);
    free(pD->k);
    free(pD->v);
    free(pD->mask);
}

static void run_sdpa_case(const sdpa_case *pC, const char *zWhat, uint64_t seed)
{
    sdpa_data D;
    parity_op_call call;
    double *a0, *a1;
    char zBuf[128];
    sdpa_make(pC, &D, seed);
    op_begin_ok(&call, SDPA, D.aIn, D.nIn, D.outRank, D.aOut, D.aAttr, D.nAttr);
    a0 = f32_sdpa(pC, &D, 0);
    a1 = f32_sdpa(pC, &D, 1);
    snprintf(zBuf, sizeof zBuf, "%s (two-pass)", zWhat);
    expect_pass(&call, a0, zBuf);
    snprintf(zBuf, sizeof zBuf, "%s (flash)", zWhat);
    expect_pass(&call, a1, zBuf);
    snprintf(zBuf, sizeof zBuf, "%s (inject)", zWhat);
    expect_inject(&call, a1, D.nOut / 2, zBuf);
    {
        /* Not vacuous: the bound stays near float32 resolution. */
        double ref, bound;
        op_element(&call, D.nOut - 1, &ref, &bound);
        cr_expect(bound < 1e-4, "%s: bound %g is tight", zWhat, bound);
    }
    parity_op_end(&call);
    free(a0);
    free(a1);
    sdpa_free_data(&D);
}

/* ---- sdpa tests ------------------------------------------------------------------ */

Test(sdpa, basic_shapes)
{
    sdpa_case c = {.nBatch = 2, .aBatch = {2, 3}, .aQB = {2, 3}, .aKB = {2, 3},
                   .L = 5, .S = 7, .E = 8, .Ev = 6};
    run_sdpa_case(&c, "[2,3,5,8]", 11);
    c.L = 1;
    run_sdpa_case(&c, "L = 1", 12);
    c.L = 5; c.S = 1;
    run_sdpa_case(&c, "S = 1", 13);
    c.S = 37; c.E = 64; c.Ev = 16;
    run_sdpa_case(&c, "S = 37, E = 64", 14);
    {
        sdpa_case c3 = {.nBatch = 0, .L = 4, .S = 9, .E = 5, .Ev = 3};
        run_sdpa_case(&c3, "unbatched", 15);
    }
}

Test(sdpa, causal_masks_scale_broadcast)
{
    sdpa_case c = {.nBatch = 2, .aBatch = {2, 2}, .aQB = {2, 2}, .aKB = {2, 2},
                   .L = 9, .S = 9, .E = 8, .Ev = 5, .causal = 1};
    run_sdpa_case(&c, "causal L = S", 21);
    c.L = 5; c.S = 11;
    run_sdpa_case(&c, "causal L < S", 22);
    c.causal = 0; c.maskKind = 1;
    run_sdpa_case(&c, "bool mask [L, S]", 23);
    c.maskKind = 2; c.maskFull = 1;
    run_sdpa_case(&c, "float mask [B, H, L, S] with -inf", 24);
    c.maskKind = 0; c.maskFull = 0; c.scale = 0.3;
    run_sdpa_case(&c, "scale 0.3", 25);
    c.scale = 2.5;
    run_sdpa_case(&c, "scale 2.5 (peaked)", 26);
    c.scale = 0.0; c.aKB[1] = 1;
    run_sdpa_case(&c, "k, v broadcast over heads", 27);
    c.aKB[1] = 2; c.aQB[0] = 1;
    run_sdpa_case(&c, "q broadcast over batch", 28);
}

Test(sdpa, fully_masked_row_is_nan)
{
    sdpa_case c = {.nBatch = 1, .aBatch = {2}, .aQB = {2}, .aKB = {2},
                   .L = 4, .S = 6, .E = 4, .Ev = 3, .maskKind = 1};
    sdpa_data D;
    parity_op_call call;
    double *a0, *a1, *aZero;
    parity_judgement j;
    uint64_t jj, i;
    sdpa_make(&c, &D, 31);
    for (jj = 0; jj < c.S; jj++) D.mask[2 * c.S + jj] = 0.0;   /* row l = 2 fully masked */
    op_begin_ok(&call, SDPA, D.aIn, D.nIn, D.outRank, D.aOut, D.aAttr, D.nAttr);
    a0 = f32_sdpa(&c, &D, 0);
    a1 = f32_sdpa(&c, &D, 1);
    for (i = 0; i < c.Ev; i++) {
        cr_expect(isnan(a0[2 * c.Ev + i]) && isnan(a1[2 * c.Ev + i]), "kernels give NaN");
        cr_expect(isnan(a0[(c.L + 2) * c.Ev + i]), "both batches");
    }
    expect_pass(&call, a0, "masked row NaN (two-pass)");
    expect_pass(&call, a1, "masked row NaN (flash)");
    aZero = malloc(D.nOut * sizeof *aZero);
    cr_assert(aZero);
    memcpy(aZero, a1, D.nOut * sizeof *aZero);
    for (i = 0; i < c.Ev; i++) aZero[2 * c.Ev + i] = 0.0;
    j = op_judge(&call, aZero);
    cr_expect_eq(j.nFail, c.Ev, "zeros on a fully masked row fail: %llu",
                 (unsigned long long)j.nFail);
    cr_expect_eq(j.nNonFinite, c.Ev);
    cr_expect_eq(j.worstLinear, 2 * c.Ev);
    parity_op_end(&call);
    free(aZero);
    free(a0);
    free(a1);
    sdpa_free_data(&D);
}

Test(sdpa, bound_catches_error_in_one_weight)
{
    /* A kernel that drops the last key of one row (a masking bug) fails that row only. */
    sdpa_case c = {.nBatch = 1, .aBatch = {1}, .aQB = {1}, .aKB = {1},
                   .L = 3, .S = 8, .E = 4, .Ev = 2};
    sdpa_data D;
    parity_op_call call;
    sdpa_case cBug = c;
    double *aGood, *aBug, *aMix;
    parity_judgement j;
    sdpa_make(&c, &D, 41);
    op_begin_ok(&call, SDPA, D.aIn, D.nIn, D.outRank, D.aOut, D.aAttr, D.nAttr);
    aGood = f32_sdpa(&c, &D, 1);
    cBug.S = 7;   /* same leading keys, last one dropped */
    {
        sdpa_data D2 = D;
        aBug = f32_sdpa(&cBug, &D2, 0);
    }
    aMix = malloc(D.nOut * sizeof *aMix);
    cr_assert(aMix);
    memcpy(aMix, aGood, D.nOut * sizeof *aMix);
    aMix[1 * c.Ev + 0] = aBug[1 * c.Ev + 0];
    aMix[1 * c.Ev + 1] = aBug[1 * c.Ev + 1];
    j = op_judge(&call, aMix);
    cr_expect_eq(j.nFail, 2, "the dropped key is caught in row 1: %llu",
                 (unsigned long long)j.nFail);
    cr_expect_eq(j.aSliceLo[1], 1);
    cr_expect_eq(j.aSliceHi[1], 2);   /* exclusive */
    parity_op_end(&call);
    free(aGood);
    free(aBug);
    free(aMix);
    sdpa_free_data(&D);
}

/* Grouped-query attention (enable_gqa = 1): q [2, 4, L, E] against k, v [2, 2, S, E] is
 * the attention of q against k, v with each head repeated twice (torch's
 * repeat_interleave on dim -3): every element's reference and bound must be those of the
 * repeated call, with a bool mask over [2, 1, L, S]; without the attribute, or with heads
 * that do not group, the shapes are a clear error. */
Test(sdpa, grouped_query_heads_are_repeated_kv)
{
    const uint64_t B = 2, Hq = 4, Hk = 2, L = 3, S = 5, E = 8;
    uint64_t aQ[4] = { B, Hq, L, E }, aK[4] = { B, Hk, S, E }, aKr[4] = { B, Hq, S, E };
    uint64_t aM[4] = { B, 1, L, S }, aOut[4] = { B, Hq, L, E }, i, b, h, j;
    double *q = rand_f32(B * Hq * L * E, 11, -1.5f, 1.5f);
    double *k = rand_f32(B * Hk * S * E, 12, -1.5f, 1.5f);
    double *v = rand_f32(B * Hk * S * E, 13, -2.0f, 2.0f);
    double *kr = malloc(B * Hq * S * E * sizeof *kr), *vr = malloc(B * Hq * S * E * sizeof *vr);
    double *mask = malloc(B * L * S * sizeof *mask);
    parity_operand aG[4], aR[4], aBad[3];
    parity_attr aAttr[1];
    parity_op_call gqa, rep;
    cr_assert(kr && vr && mask);
    for (b = 0; b < B; b++)
        for (h = 0; h < Hq; h++)
            for (j = 0; j < S * E; j++) {
                kr[(b * Hq + h) * S * E + j] = k[(b * Hk + h / 2) * S * E + j];
                vr[(b * Hq + h) * S * E + j] = v[(b * Hk + h / 2) * S * E + j];
            }
    for (i = 0; i < B * L * S; i++) mask[i] = (i % 7) != 3;   /* a few entries masked */
    aG[0] = operand(4, aQ, q, PARITY_DT_F32);
    aG[1] = operand(4, aK, k, PARITY_DT_F32);
    aG[2] = operand(4, aK, v, PARITY_DT_F32);
    aG[3] = operand(4, aM, mask, PARITY_DT_BOOL);
    aR[0] = aG[0];
    aR[1] = operand(4, aKr, kr, PARITY_DT_F32);
    aR[2] = operand(4, aKr, vr, PARITY_DT_F32);
    aR[3] = aG[3];
    aAttr[0] = attr_int(0, "enable_gqa", 1);
    op_begin_ok(&gqa, SDPA, aG, 4, 4, aOut, aAttr, 1);
    op_begin_ok(&rep, SDPA, aR, 4, 4, aOut, NULL, 0);
    cr_assert_eq(gqa.nOut, rep.nOut);
    for (i = 0; i < gqa.nOut; i++) {
        double refG, boundG, refR, boundR;
        op_element(&gqa, i, &refG, &boundG);
        op_element(&rep, i, &refR, &boundR);
        cr_expect(refG == refR && boundG == boundR, "element %llu: gqa %.17g (bound %g), "
                  "repeated %.17g (bound %g)", (unsigned long long)i, refG, boundG, refR, boundR);
    }
    parity_op_end(&gqa);
    parity_op_end(&rep);
    /* the same operands without the attribute: the heads do not broadcast, and the error
     * says which attribute groups them */
    expect_error(SDPA, aG, 3, 4, aOut, NULL, 0, "enable_gqa");
    /* 4 query heads over 3 k/v heads do not group */
    {
        uint64_t aK3[4] = { B, 3, S, E };
        aBad[0] = aG[0];
        aBad[1] = operand(4, aK3, kr, PARITY_DT_F32);
        aBad[2] = operand(4, aK3, vr, PARITY_DT_F32);
        expect_error(SDPA, aBad, 3, 4, aOut, aAttr, 1, "same number of heads dividing q's");
    }
    free(q); free(k); free(v); free(kr); free(vr); free(mask);
}

Test(sdpa, bad_shapes_and_attributes)
{
    double a[512] = {0};
    uint64_t dq[] = {2, 5, 8}, dk[] = {2, 7, 8}, dv[] = {2, 7, 6}, dOut[] = {2, 5, 6};
    uint64_t dkBad[] = {2, 7, 4}, dvBad[] = {2, 6, 6}, dkB[] = {3, 7, 8}, dvB[] = {3, 7, 6};
    uint64_t dM[] = {5, 7}, dMBad[] = {5, 6}, dOutBad[] = {2, 5, 7}, d1[] = {8};
    parity_operand in[4];
    parity_attr at[2];

    in[0] = operand(3, dq, a, PARITY_DT_F32);
    in[1] = operand(3, dkBad, a, PARITY_DT_F32);
    in[2] = operand(3, dv, a, PARITY_DT_F32);
    expect_error(SDPA, in, 3, 3, dOut, NULL, 0, "k [..., S, E]");
    in[1] = operand(3, dk, a, PARITY_DT_F32);
    in[2] = operand(3, dvBad, a, PARITY_DT_F32);
    expect_error(SDPA, in, 3, 3, dOut, NULL, 0, "v [..., S, Ev]");
    in[1] = operand(3, dkB, a, PARITY_DT_F32);
    in[2] = operand(3, dvB, a, PARITY_DT_F32);
    expect_error(SDPA, in, 3, 3, dOut, NULL, 0, "do not broadcast");
    in[1] = operand(3, dk, a, PARITY_DT_F32);
    in[2] = operand(3, dv, a, PARITY_DT_F32);
    expect_error(SDPA, in, 3, 3, dOutBad, NULL, 0, "output has [2, 5, 7]");
    in[0] = operand(1, d1, a, PARITY_DT_F32);
    expect_error(SDPA, in, 3, 3, dOut, NULL, 0, "rank >= 2");
    in[0] = operand(3, dq, a, PARITY_DT_F32);
    in[3] = operand(2, dM, a, PARITY_DT_BOOL);
    at[0] = attr_int(0, "is_causal", 1);
    expect_error(SDPA, in, 4, 3, dOut, at, 1, "cannot both be given");
    at[0] = attr_int(0, "is_causal", 2);
    expect_error(SDPA, in, 3, 3, dOut, at, 1, "is_causal must be 0 or 1");
    in[3] = operand(2, dMBad, a, PARITY_DT_BOOL);
    expect_error(SDPA, in, 4, 3, dOut, NULL, 0, "does not broadcast");
    in[3] = operand(2, dM, a, PARITY_DT_I32);
    expect_error(SDPA, in, 4, 3, dOut, NULL, 0, "must be bool or float");
    at[0] = attr_float(1, "scale", INFINITY);
    expect_error(SDPA, in, 3, 3, dOut, at, 1, "scale must be finite");
    {
        /* and the good call works */
        parity_op_call call;
        in[3] = operand(2, dM, a, PARITY_DT_BOOL);
        op_begin_ok(&call, SDPA, in, 4, 3, dOut, NULL, 0);
        parity_op_end(&call);
    }
}

/* ---- conv2d ---------------------------------------------------------------------- */

typedef struct {
    uint64_t N, C, H, W, O, kH, kW, G;
    int64_t s[2], p[2], d[2];
    int bias;
} conv_case;

static void conv_out(const conv_case *pC, uint64_t *pHo, uint64_t *pWo)
{
    *pHo = (uint64_t)(((int64_t)pC->H + 2 * pC->p[0] - pC->d[0] * ((int64_t)pC->kH - 1) - 1) /
                      pC->s[0] + 1);
    *pWo = (uint64_t)(((int64_t)pC->W + 2 * pC->p[1] - pC->d[1] * ((int64_t)pC->kW - 1) - 1) /
                      pC->s[1] + 1);
}

/* variant 0: direct loops; 1: im2col per (n, group), then a GEMM summing K in blocks of 8
 * (split-K partial sums added at the end), bias first. */
static double *f32_conv(const conv_case *pC, const double *x, const double *w,
                        const double *b, int variant)
{
    uint64_t Ho, Wo, Cg = pC->C / pC->G, Og = pC->O / pC->G, K, n, o, oy, ox, c, i, j;
    double *out;
    conv_out(pC, &Ho, &Wo);
    K = Cg * pC->kH * pC->kW;
    out = malloc(pC->N * pC->O * Ho * Wo * sizeof *out);
    cr_assert(out);
    if (variant == 0) {
        for (n = 0; n < pC->N; n++)
            for (o = 0; o < pC->O; o++)
                for (oy = 0; oy < Ho; oy++)
                    for (ox = 0; ox < Wo; ox++) {
                        float s = 0.0f;
                        uint64_t g = o / Og;
                        for (c = 0; c < Cg; c++)
                            for (i = 0; i < pC->kH; i++)
                                for (j = 0; j < pC->kW; j++) {
                                    int64_t iy = (int64_t)oy * pC->s[0] - pC->p[0] + (int64_t)i * pC->d[0];
                                    int64_t ix = (int64_t)ox * pC->s[1] - pC->p[1] + (int64_t)j * pC->d[1];
                                    if (iy < 0 || ix < 0 || iy >= (int64_t)pC->H || ix >= (int64_t)pC->W)
                                        continue;
                                    s += (float)x[((n * pC->C + g * Cg + c) * pC->H + (uint64_t)iy) * pC->W + (uint64_t)ix] *
                                         (float)w[((o * Cg + c) * pC->kH + i) * pC->kW + j];
                                }
                        if (b) s += (float)b[o];
                        out[((n * pC->O + o) * Ho + oy) * Wo + ox] = (double)s;
                    }
    } else {
        float *col = malloc(K * Ho * Wo * sizeof *col);
        uint64_t g, P = Ho * Wo, pix, k0;
        cr_assert(col);
        for (n = 0; n < pC->N; n++)
            for (g = 0; g < pC->G; g++) {
                for (c = 0; c < Cg; c++)
                    for (i = 0; i < pC->kH; i++)
                        for (j = 0; j < pC->kW; j++)
                            for (pix = 0; pix < P; pix++) {
                                int64_t iy = (int64_t)(pix / Wo) * pC->s[0] - pC->p[0] + (int64_t)i * pC->d[0];
                                int64_t ix = (int64_t)(pix % Wo) * pC->s[1] - pC->p[1] + (int64_t)j * pC->d[1];
                                uint64_t k = (c * pC->kH + i) * pC->kW + j;
                                col[k * P + pix] =
                                    (iy < 0 || ix < 0 || iy >= (int64_t)pC->H || ix >= (int64_t)pC->W)
                                        ? 0.0f
                                        : (float)x[((n * pC->C + g * Cg + c) * pC->H + (uint64_t)iy) * pC->W + (uint64_t)ix];
                            }
                for (o = g * Og; o < (g + 1) * Og; o++)
                    for (pix = 0; pix < P; pix++) {
                        float total = b ? (float)b[o] : 0.0f;
                        for (k0 = 0; k0 < K; k0 += 8) {
                            float part = 0.0f;
                            uint64_t k;
                            for (k = k0; k < K && k < k0 + 8; k++)
                                part += (float)w[o * K + k] * col[k * P + pix];
                            total += part;
                        }
                        out[(n * pC->O + o) * P + pix] = (double)total;
                    }
            }
        free(col);
    }
    return out;
}

static void run_conv_case(const conv_case *pC, const char *zWhat, uint64_t seed)
{
    uint64_t dx[4] = {pC->N, pC->C, pC->H, pC->W};
    uint64_t dw[4] = {pC->O, pC->C / pC->G, pC->kH, pC->kW}, db[1] = {pC->O}, dOut[4];
    uint64_t nX = pC->N * pC->C * pC->H * pC->W, nW = dw[0] * dw[1] * dw[2] * dw[3];
    double *x = rand_f32(nX, seed, -2.0f, 2.0f), *w = rand_f32(nW, seed + 1, -1.0f, 1.0f);
    double *b = pC->bias ? rand_f32(pC->O, seed + 2, -1.0f, 1.0f) : NULL, *a0, *a1;
    parity_operand in[3];
    parity_attr at[4];
    parity_op_call call;
    char zBuf[128];
    size_t nAttr = 0;
    conv_out(pC, &dOut[2], &dOut[3]);
    dOut[0] = pC->N;
    dOut[1] = pC->O;
    in[0] = operand(4, dx, x, PARITY_DT_F32);
    in[1] = operand(4, dw, w, PARITY_DT_F32);
    if (b) in[2] = operand(1, db, b, PARITY_DT_F32);
    at[nAttr++] = attr_ints(0, "stride", pC->s, 2);
    at[nAttr++] = attr_ints(1, "padding", pC->p, 2);
    at[nAttr++] = attr_ints(2, "dilation", pC->d, 2);
    at[nAttr++] = attr_int(3, "groups", (int64_t)pC->G);
    op_begin_ok(&call, "conv2d", in, b ? 3 : 2, 4, dOut, at, nAttr);
    a0 = f32_conv(pC, x, w, b, 0);
    a1 = f32_conv(pC, x, w, b, 1);
    snprintf(zBuf, sizeof zBuf, "%s (direct)", zWhat);
    expect_pass(&call, a0, zBuf);
    snprintf(zBuf, sizeof zBuf, "%s (im2col)", zWhat);
    expect_pass(&call, a1, zBuf);
    snprintf(zBuf, sizeof zBuf, "%s (inject)", zWhat);
    expect_inject(&call, a1, call.nOut / 3, zBuf);
    {
        /* the envelope bounds every element's bound */
        uint64_t i;
        for (i = 0; i < call.nOut; i++) {
            double ref, bound, env = call.pDef->xEnvelope(&call, i);
            op_element(&call, i, &ref, &bound);
            cr_assert(env >= bound, "%s: envelope %g below bound %g at %llu", zWhat, env,
                      bound, (unsigned long long)i);
        }
    }
    parity_op_end(&call);
    free(a0);
    free(a1);
    free(x);
    free(w);
    free(b);
}

Test(conv2d, configurations)
{
    conv_case c = {.N = 2, .C = 3, .H = 7, .W = 6, .O = 4, .kH = 3, .kW = 3, .G = 1,
                   .s = {1, 1}, .p = {0, 0}, .d = {1, 1}};
    run_conv_case(&c, "3x3 plain", 51);
    c.s[0] = c.s[1] = 2;
    run_conv_case(&c, "stride 2", 52);
    c.s[0] = c.s[1] = 1; c.p[0] = c.p[1] = 1;
    run_conv_case(&c, "padding 1", 53);
    c.p[0] = c.p[1] = 0; c.d[0] = c.d[1] = 2;
    run_conv_case(&c, "dilation 2", 54);
    c.d[0] = c.d[1] = 1; c.C = 4; c.O = 6; c.G = 2;
    run_conv_case(&c, "groups 2", 55);
    c.G = 4; c.O = 4;
    run_conv_case(&c, "depthwise", 56);
    c.G = 1; c.kH = c.kW = 1; c.bias = 1;
    run_conv_case(&c, "1x1 with bias", 57);
    c.kH = 3; c.kW = 2; c.s[0] = 2; c.s[1] = 1; c.p[0] = 2; c.p[1] = 1; c.d[0] = 1;
    c.d[1] = 2; c.G = 2; c.O = 6; c.C = 4; c.H = 9; c.W = 8;
    run_conv_case(&c, "mixed pairs, groups 2, bias", 58);
    c.C = 32; c.G = 1; c.kH = c.kW = 3; c.s[0] = c.s[1] = 1; c.p[0] = c.p[1] = 1;
    c.d[0] = c.d[1] = 1;
    run_conv_case(&c, "C = 32 (K = 288)", 59);
}

Test(conv2d, unbatched_and_same_padding)
{
    uint64_t dx[3] = {2, 5, 5}, dw[4] = {3, 2, 3, 3}, dOut[3] = {3, 5, 5};
    double *x = rand_f32(50, 61, -1.0f, 1.0f), *w = rand_f32(54, 62, -1.0f, 1.0f), *a;
    conv_case c = {.N = 1, .C = 2, .H = 5, .W = 5, .O = 3, .kH = 3, .kW = 3, .G = 1,
                   .s = {1, 1}, .p = {1, 1}, .d = {1, 1}};
    parity_operand in[2] = {operand(3, dx, x, PARITY_DT_F32), operand(4, dw, w, PARITY_DT_F32)};
    parity_attr at[1] = {attr_str(0, "padding", "same")};
    parity_op_call call;
    op_begin_ok(&call, "conv2d", in, 2, 3, dOut, at, 1);
    a = f32_conv(&c, x, w, NULL, 0);   /* 'same' with 3x3 is padding 1 */
    expect_pass(&call, a, "unbatched, padding 'same'");
    expect_inject(&call, a, 7, "unbatched inject");
    parity_op_end(&call);
    free(a);
    free(x);
    free(w);
}

Test(conv2d, shape_errors)
{
    double a[4096] = {0};
    uint64_t dx[4] = {1, 4, 6, 6}, dw[4] = {6, 2, 3, 3}, dOut[4] = {1, 6, 4, 4};
    uint64_t dwBadC[4] = {6, 3, 3, 3}, dwBig[4] = {6, 2, 7, 7}, db[1] = {5}, dOutBad[4] = {1, 6, 3, 4};
    uint64_t dx2[2] = {4, 6};
    parity_operand in[3] = {operand(4, dx, a, PARITY_DT_F32), operand(4, dw, a, PARITY_DT_F32),
                            operand(1, db, a, PARITY_DT_F32)};
    parity_attr at[2];
    at[0] = attr_int(0, "groups", 2);
    {
        parity_op_call call;
        op_begin_ok(&call, "conv2d", in, 2, 4, dOut, at, 1);
        parity_op_end(&call);
    }
    expect_error("conv2d", in, 2, 4, dOut, NULL, 0, "expects 2 input channels");
    at[0] = attr_int(0, "groups", 3);
    expect_error("conv2d", in, 2, 4, dOut, at, 1, "must divide");
    at[0] = attr_int(0, "groups", 0);
    expect_error("conv2d", in, 2, 4, dOut, at, 1, "groups must be positive");
    at[0] = attr_int(0, "groups", 2);
    at[1] = attr_int(1, "padding", -1);
    expect_error("conv2d", in, 2, 4, dOut, at, 2, "padding must be non-negative");
    at[1] = attr_int(1, "stride", 0);
    expect_error("conv2d", in, 2, 4, dOut, at, 2, "stride must be positive");
    at[1] = attr_int(1, "dilation", -2);
    expect_error("conv2d", in, 2, 4, dOut, at, 2, "dilation must be positive");
    {
        int64_t three[3] = {1, 1, 1};
        at[1] = attr_ints(1, "stride", three, 3);
        expect_error("conv2d", in, 2, 4, dOut, at, 2, "an int or a pair");
    }
    at[1] = attr_str(1, "padding", "full");
    expect_error("conv2d", in, 2, 4, dOut, at, 2, "not 'valid', 'same'");
    expect_error("conv2d", in, 2, 4, dOutBad, at, 1, "output has [1, 6, 3, 4]");
    expect_error("conv2d", in, 3, 4, dOut, at, 1, "bias must be [6]");
    in[1] = operand(4, dwBadC, a, PARITY_DT_F32);
    expect_error("conv2d", in, 2, 4, dOut, at, 1, "expects 6 input channels");
    in[1] = operand(4, dwBig, a, PARITY_DT_F32);
    expect_error("conv2d", in, 2, 4, dOut, at, 1, "larger than the padded input");
    in[0] = operand(2, dx2, a, PARITY_DT_F32);
    expect_error("conv2d", in, 2, 4, dOut, at, 1, "needs input [N, C, H, W]");
}
