/*
 * test_validation.c - validation of the op models (tolerance/op_*.c) against kernels that
 * are correct by construction: random shapes and data, pushed through straightforward C
 * float32 reference kernels of every op in several legitimate strategies, judged through
 * the registry (parity_op_begin + parity_judge, aEager = NULL so only the compiled side is
 * judged and nothing can hide as "both beyond").
 *
 * What it asserts:
 *  1. zero false failures over all cases (default 10,000; see VALIDATION_DEFAULT_N): a
 *     correct kernel must never be failed, whatever the summation order;
 *  2. every 10th case, an error of 4 bounds + 3 ulps of the output injected at one random
 *     element (away from the reference) is caught at exactly that element.
 *
 * Cases are drawn round-robin over parity_op_registry (ops this file cannot generate data
 * for are skipped and named), each from its own seed, so one case replays alone:
 *     PARITY_VALIDATION_FIRST=<case> PARITY_VALIDATION_N=1 PARITY_VALIDATION_DUMP=1 \
 *         ./tests/test_validation
 * (PARITY_VALIDATION_SEED changes the base seed; DUMP prints every operand value.)
 *
 * Kernels (the "compiled" side), all in float32 with glibc's float functions, the result
 * rounded once to the output dtype (bfloat16/float16 via parity_encode/parity_decode):
 *  - elementwise: expf, logf, tanhf, erff, sqrtf, ... with one or two textbook
 *    formulations each (sigmoid as 1/(1+e^-x) or e^x/(1+e^x), gelu via erf or erfc,
 *    softplus with log1p, elu with exp(x) - 1 or expm1, mish as torch's, ...) and random
 *    beta, threshold, alpha;
 *    binary ops as one IEEE operation (alpha by product or FMA);
 *  - sums and dot products (sum, mean, cumsum, matmul, linear, bmm, and the sums inside
 *    var, softmax, logsumexp, norms): sequential, pairwise, split-K (chunks summed, then
 *    combined), blocked (8 interleaved lanes), and FMA for dot products; cumsum also
 *    blocked-scan and Hillis-Steele;
 *  - softmax, log_softmax, logsumexp: two-pass (max, then sum of exp) and online
 *    (running max, rescaled sum); var and layer_norm: two-pass, Welford, one-pass.
 *
 * Data: shapes of rank 1 to 4 with dims 1..40 (size-1 dims and odd sizes favoured), K up to
 * 4000 now and then for sums and dot products; values normal, uniform at scales 2^-20 ..
 * 2^20, shifted (c + N(0,1), cancellation), ties and signed zeros, float32 subnormals
 * (scale 2^-110 .. 2^-140), and large magnitudes: up to ~2^120 for elementwise ops (where
 * float32 overflow must round as the reference does), ~2^33 where kernels square or
 * multiply. Outputs are float32 in 3/4 of the cases, else bfloat16 or float16 (inputs
 * then float32 or the output dtype; float16 data is kept within its range).
 *
 * Known issues: KNOWN_ISSUES below lists op/strategy/data combinations excluded from the
 * zero-false-failure assertion because the model (not the kernel) is at fault; each entry
 * says why, with an example. They are still run and counted in the summary line.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
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

/* Case count: 10,000 by default (the issue's acceptance number), in every build. Measured
 * on the 2-core CI machine: about 15 s at -O2 and 28 s under ASan+UBSan, far inside the 4
 * and 8 minute budgets, so __SANITIZE_ADDRESS__ builds keep the full count too
 * (VALIDATION_ASAN_N is the knob should they ever need fewer). PARITY_VALIDATION_N
 * overrides either; the summary line prints how many ran and how long they took. */
#define VALIDATION_DEFAULT_N 10000
#define VALIDATION_ASAN_N 10000
#define VALIDATION_SEED UINT64_C(0x7061726974792d76)   /* "parity-v" */
#define INJECT_EVERY 10
#define MAX_REPORTS 25

/* Op models found too tight by this test: cases matching an entry (op; strategy prefix or
 * NULL for any; distribution of the first operand x or NULL for any) are still run and
 * counted ("known-issue failures"), but not asserted. The models are not changed here: the
 * lead decides. Each entry names the defect; replay examples are in the entries.
 * An entry with zOp NULL ends the list. */
static const struct {
    const char *zOp, *zStrategy, *zDist, *zWhy;
} KNOWN_ISSUES[] = {
    /* Three entries found by this test were fixed in the models (layer_norm's rsqrt is no
     * longer linearised and its mean carries the subnormal rounding; rms_norm's underflow
     * slack is scaled by |w|). Keep new findings here, each with why and an example. */
    { NULL, NULL, NULL, NULL }
};

/* ---- randomness ------------------------------------------------------------------ */

static uint64_t rnd(uint64_t *s) { return splitmix64(s); }

/* Uniform integer in [lo, hi]. */
static int rnd_int(uint64_t *s, int lo, int hi)
{
    return lo + (int)(rnd(s) % (uint64_t)(hi - lo + 1));
}

/* Uniform in [0, 1). */
static double rnd_unit(uint64_t *s) { return (double)(rnd(s) >> 11) * 0x1p-53; }

static double rnd_normal(uint64_t *s)
{
    double u1 = rnd_unit(s), u2 = rnd_unit(s);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* ---- data ------------------------------------------------------------------------ */

enum { D_NORMAL, D_UNIFORM, D_SCALED, D_TIES, D_LARGE, D_SHIFTED, D_TINY, D_COUNT };
static const char *const azDist[D_COUNT] = {
    "normal", "uniform", "scaled", "ties", "large", "shifted", "tiny"
};

/* Fills a with n values of dtype dt from a random distribution. maxExp bounds the binary
 * exponent of the scale (so float16 inputs and products stay finite). kind 1: mostly
 * positive (log, sqrt, rsqrt). Returns the distribution's name. */
static const char *fill(uint64_t *s, double *a, uint64_t n, parity_dtype dt, int maxExp,
                        int kind)
{
    static const double aTie[] = { 0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.0, 0.25, 1.0, 1.0 };
    int dist = rnd_int(s, 0, D_COUNT - 1);
    double scale = 1.0, shift = 0.0, v;
    uint64_t i;

    if (dt == PARITY_DT_F16 && maxExp > 8) maxExp = 8;
    if (dist == D_LARGE && maxExp < 10) dist = D_SCALED;
    if (dist == D_SCALED) scale = ldexp(1.0, rnd_int(s, maxExp < 20 ? -maxExp : -20,
                                                     maxExp < 20 ? maxExp : 20));
    if (dist == D_LARGE) scale = ldexp(1.0, rnd_int(s, 10, maxExp));
    if (dist == D_TINY) {                   /* float32 subnormals and just above */
        if (dt == PARITY_DT_F16) dist = D_SCALED, scale = ldexp(1.0, -rnd_int(s, 10, 14));
        else scale = ldexp(1.0, -rnd_int(s, 110, 140));
    }
    if (dist == D_SHIFTED) shift = ldexp(rnd_int(s, 0, 1) ? 1.0 : -1.0,
                                         rnd_int(s, 2, maxExp < 12 ? maxExp : 12));
    for (i = 0; i < n; i++) {
        switch (dist) {
        case D_NORMAL: v = rnd_normal(s); break;
        case D_UNIFORM: v = 2.0 * rnd_unit(s) - 1.0; break;
        case D_SCALED: v = scale * (2.0 * rnd_unit(s) - 1.0); break;
        case D_TIES: v = rnd_unit(s) < 0.6 ? aTie[rnd(s) % 10] : rnd_normal(s); break;
        case D_LARGE: v = scale * rnd_normal(s); break;
        case D_TINY: v = scale * rnd_normal(s); break;
        default: v = shift + rnd_normal(s); break;
        }
        if (kind == 1 && rnd_unit(s) < 0.95) v = fabs(v);
        a[i] = parity_round_double_to_dtype(v, dt);
    }
    return azDist[dist];
}

/* A dim: 1 often, small or odd sizes often, up to 40. */
static uint64_t rnd_dim(uint64_t *s)
{
    int r = rnd_int(s, 0, 9);
    if (r < 2) return 1;
    if (r < 4) return (uint64_t)rnd_int(s, 2, 7);
    if (r < 6) return (uint64_t)(2 * rnd_int(s, 1, 19) + 1);
    return (uint64_t)rnd_int(s, 1, 40);
}

static uint64_t prod(int rank, const uint64_t *a)
{
    uint64_t n = 1;
    int d;
    for (d = 0; d < rank; d++) n *= a[d];
    return n;
}

/* Shrinks the largest dims until the product is at most cap. */
static void cap_shape(int rank, uint64_t *a, uint64_t cap)
{
    while (prod(rank, a) > cap) {
        int d, iMax = 0;
        for (d = 1; d < rank; d++) if (a[d] > a[iMax]) iMax = d;
        a[iMax] = (a[iMax] + 1) / 2;
    }
}

static int rnd_shape(uint64_t *s, int rMin, int rMax, uint64_t cap, uint64_t *a)
{
    int rank = rnd_int(s, rMin, rMax), d;
    for (d = 0; d < rank; d++) a[d] = rnd_dim(s);
    cap_shape(rank, a, cap);
    return rank;
}

/* ---- summation strategies -------------------------------------------------------- */

enum { S_SEQ, S_PAIR, S_SPLITK, S_BLOCK, S_FMA, S_COUNT };
static const char *const azSum[S_COUNT] = { "sequential", "pairwise", "split-K", "blocked",
                                            "fma" };

static float sum_seq(const float *x, size_t n)
{
    float s = 0.0f;
    size_t i;
    for (i = 0; i < n; i++) s += x[i];
    return s;
}

static float sum_pair(const float *x, size_t n)
{
    if (n <= 4) return sum_seq(x, n);
    return sum_pair(x, n / 2) + sum_pair(x + n / 2, n - n / 2);
}

/* Chunks of `chunk` summed sequentially, the partials then summed sequentially. */
static float sum_split(const float *x, size_t n, size_t chunk)
{
    float s = 0.0f;
    size_t i;
    for (i = 0; i < n; i += chunk) s += sum_seq(x + i, n - i < chunk ? n - i : chunk);
    return s;
}

/* 8 interleaved lanes, combined pairwise. */
static float sum_block(const float *x, size_t n)
{
    float lane[8] = { 0 };
    size_t i;
    for (i = 0; i < n; i++) lane[i % 8] += x[i];
    return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}

static float sum_by(int strat, const float *x, size_t n, size_t chunk)
{
    switch (strat) {
    case S_PAIR: return sum_pair(x, n);
    case S_SPLITK: return sum_split(x, n, chunk);
    case S_BLOCK: return sum_block(x, n);
    default: return sum_seq(x, n);
    }
}

/* Dot product of a and b (contiguous K floats) by strategy; aTmp holds K floats. */
static float dot_by(int strat, const float *a, const float *b, size_t K, size_t chunk,
                    float *aTmp)
{
    size_t k;
    if (strat == S_FMA) {
        float s = 0.0f;
        for (k = 0; k < K; k++) s = fmaf(a[k], b[k], s);
        return s;
    }
    for (k = 0; k < K; k++) aTmp[k] = a[k] * b[k];
    return sum_by(strat, aTmp, K, chunk);
}

/* ---- rows of a tensor along reduced dims ------------------------------------------ */

typedef struct {
    uint64_t nRow, n;
    uint64_t *aOff;    /* nRow * n offsets: row-major over kept dims, then reduced dims */
} rowmap;

static void rowmap_make(rowmap *pM, int rank, const uint64_t *aDim, const unsigned char *aRed)
{
    uint64_t aStride[PARITY_MAX_RANK], stride = 1, r, k;
    uint64_t aKd[PARITY_MAX_RANK], aKs[PARITY_MAX_RANK], aRd[PARITY_MAX_RANK], aRs[PARITY_MAX_RANK];
    int d, nK = 0, nR = 0;
    for (d = rank - 1; d >= 0; d--) { aStride[d] = stride; stride *= aDim[d]; }
    pM->nRow = 1;
    pM->n = 1;
    for (d = 0; d < rank; d++) {
        if (aRed[d]) { aRd[nR] = aDim[d]; aRs[nR++] = aStride[d]; pM->n *= aDim[d]; }
        else { aKd[nK] = aDim[d]; aKs[nK++] = aStride[d]; pM->nRow *= aDim[d]; }
    }
    pM->aOff = malloc((pM->nRow * pM->n + 1) * sizeof *pM->aOff);
    cr_assert(pM->aOff);
    for (r = 0; r < pM->nRow; r++) {
        uint64_t base = 0, rest = r;
        for (d = nK - 1; d >= 0; d--) { base += (rest % aKd[d]) * aKs[d]; rest /= aKd[d]; }
        for (k = 0; k < pM->n; k++) {
            uint64_t off = base;
            rest = k;
            for (d = nR - 1; d >= 0; d--) { off += (rest % aRd[d]) * aRs[d]; rest /= aRd[d]; }
            pM->aOff[r * pM->n + k] = off;
        }
    }
}

/* ---- a case ------------------------------------------------------------------------ */

typedef struct {
    const parity_op_def *pDef;
    char zLabel[32];              /* op, with gelu's variant and linear's bias */
    char zStrategy[48];
    char zDist[64];
    parity_dtype outDt, inDt;
    size_t nIn;
    parity_operand aIn[3];
    double *apIn[3];
    float *apInF[3];
    int outRank;
    uint64_t aOut[PARITY_MAX_RANK];
    uint64_t nOut;
    parity_attr aAttr[4];
    size_t nAttr;
    int64_t aIntStore[4][PARITY_MAX_RANK];
    double aFloatStore[4];
    char *azStr[4];
    char zStrStore[4][32];
    double *aC;                   /* the compiled output, nOut values */
    float *aY;                    /* the kernel's float32 results before output rounding */
} vcase;

static void case_free(vcase *pC)
{
    size_t i;
    for (i = 0; i < 3; i++) { free(pC->apIn[i]); free(pC->apInF[i]); }
    free(pC->aC);
    free(pC->aY);
}

/* Operand i of shape (rank, aDim), dtype dt, filled from fill(); float copy made. */
static void add_operand(vcase *pC, uint64_t *s, int rank, const uint64_t *aDim, parity_dtype dt,
                        int maxExp, int kind)
{
    size_t i = pC->nIn++;
    parity_operand *o = &pC->aIn[i];
    uint64_t n = prod(rank, aDim), k;
    static const char *const azName[3] = { "x", "y", "z" };
    const char *zDist;
    memset(o, 0, sizeof *o);
    o->zName = azName[i];
    o->dtype = dt;
    o->rank = rank;
    memcpy(o->aDim, aDim, (size_t)rank * sizeof *aDim);
    o->nElem = n;
    pC->apIn[i] = malloc((n + 1) * sizeof(double));
    pC->apInF[i] = malloc((n + 1) * sizeof(float));
    cr_assert(pC->apIn[i] && pC->apInF[i]);
    zDist = fill(s, pC->apIn[i], n, dt, maxExp, kind);
    for (k = 0; k < n; k++) pC->apInF[i][k] = (float)pC->apIn[i][k];
    o->aValue = pC->apIn[i];
    if (strlen(pC->zDist) + strlen(zDist) + 2 < sizeof pC->zDist) {
        if (pC->zDist[0]) strcat(pC->zDist, ",");
        strcat(pC->zDist, zDist);
    }
}

static void set_out(vcase *pC, int rank, const uint64_t *aDim)
{
    pC->outRank = rank;
    memcpy(pC->aOut, aDim, (size_t)rank * sizeof *aDim);
    pC->nOut = prod(rank, aDim);
    pC->aY = malloc((pC->nOut + 1) * sizeof(float));
    pC->aC = malloc((pC->nOut + 1) * sizeof(double));
    cr_assert(pC->aY && pC->aC);
}

static void vc_attr_ints(vcase *pC, const char *zName, const int64_t *a, size_t n, int isArray)
{
    size_t i = pC->nAttr++;
    parity_attr *p = &pC->aAttr[i];
    memset(p, 0, sizeof *p);
    if (n) memcpy(pC->aIntStore[i], a, n * sizeof *a);
    p->zName = (char *)zName;
    p->kind = PARITY_ATTR_INT;
    p->isArray = isArray;
    p->n = n;
    p->aInt = pC->aIntStore[i];
}

static void vc_attr_int(vcase *pC, const char *zName, int64_t v) { vc_attr_ints(pC, zName, &v, 1, 0); }

static void vc_attr_float(vcase *pC, const char *zName, double v)
{
    size_t i = pC->nAttr++;
    parity_attr *p = &pC->aAttr[i];
    memset(p, 0, sizeof *p);
    pC->aFloatStore[i] = v;
    p->zName = (char *)zName;
    p->kind = PARITY_ATTR_FLOAT;
    p->n = 1;
    p->aFloat = &pC->aFloatStore[i];
}

static void vc_attr_str(vcase *pC, const char *zName, const char *zValue)
{
    size_t i = pC->nAttr++;
    parity_attr *p = &pC->aAttr[i];
    memset(p, 0, sizeof *p);
    snprintf(pC->zStrStore[i], sizeof pC->zStrStore[i], "%s", zValue);
    pC->azStr[i] = pC->zStrStore[i];
    p->zName = (char *)zName;
    p->kind = PARITY_ATTR_STRING;
    p->n = 1;
    p->azStr = &pC->azStr[i];
}

/* Rounds the float32 results once to the output dtype. */
static void finish_output(vcase *pC)
{
    uint64_t i;
    for (i = 0; i < pC->nOut; i++) {
        if (pC->outDt == PARITY_DT_F32) {
            pC->aC[i] = (double)pC->aY[i];
        } else {
            unsigned char buf[8];
            parity_encode(pC->outDt, (double)pC->aY[i], buf);
            parity_decode(pC->outDt, buf, &pC->aC[i], 1);
        }
    }
}

/* A dim attribute in [-rank, rank) for dim d (negative half the time). */
static int64_t dim_arg(uint64_t *s, int d, int rank)
{
    return rnd_int(s, 0, 1) ? (int64_t)d : (int64_t)d - rank;
}

/* Random reduce mask over rank dims (at least one), written as a "dim" attribute: absent
 * or empty list (every dim) now and then, else an int or a list. */
static void reduce_dims(vcase *pC, uint64_t *s, int rank, unsigned char *aRed, int allowList)
{
    int d, r = rnd_int(s, 0, 9), any = 0;
    int64_t aArg[PARITY_MAX_RANK];
    size_t n = 0;
    memset(aRed, 0, PARITY_MAX_RANK);
    if (allowList && r == 0) {              /* absent: every dim */
        for (d = 0; d < rank; d++) aRed[d] = 1;
        return;
    }
    if (allowList && r == 1) {              /* empty list: every dim */
        for (d = 0; d < rank; d++) aRed[d] = 1;
        vc_attr_ints(pC, "dim", aArg, 0, 1);
        return;
    }
    if (!allowList || r < 6) {              /* one int */
        d = rnd_int(s, 0, rank - 1);
        aRed[d] = 1;
        vc_attr_int(pC, "dim", dim_arg(s, d, rank));
        return;
    }
    for (d = 0; d < rank; d++) if (rnd_int(s, 0, 1)) { aRed[d] = 1; any = 1; }
    if (!any) aRed[rnd_int(s, 0, rank - 1)] = 1;
    for (d = rank - 1; d >= 0; d--)         /* listed in reverse: order must not matter */
        if (aRed[d]) aArg[n++] = dim_arg(s, d, rank);
    vc_attr_ints(pC, "dim", aArg, n, 1);
}

/* Output shape of a reduction. */
static int reduced_shape(int rank, const uint64_t *aDim, const unsigned char *aRed, int keepdim,
                         uint64_t *aOut)
{
    int d, n = 0;
    for (d = 0; d < rank; d++) {
        if (!aRed[d]) aOut[n++] = aDim[d];
        else if (keepdim) aOut[n++] = 1;
    }
    return n;
}

/* ---- builders: operands, attributes, output shape and the kernel ------------------ */

/* aP: softplus's beta and threshold, elu's alpha, as float (torch casts them). */
static float unary_kernel(const char *zOp, int variant, const float *aP, float x)
{
    if (!strcmp(zOp, "relu")) return x != x ? x : (x > 0.0f ? x : 0.0f);
    if (!strcmp(zOp, "softplus")) {                  /* torch; log(1 + .) for log1p */
        float z = x * aP[0];
        if (z > aP[1]) return x;
        return (variant == 0 ? log1pf(expf(z)) : logf(1.0f + expf(z))) / aP[0];
    }
    if (!strcmp(zOp, "elu")) {                       /* torch's exp(x) - 1, or expm1 */
        if (x > 0.0f || x != x) return x;
        return variant == 0 ? (expf(x) - 1.0f) * aP[2] : aP[2] * expm1f(x);
    }
    if (!strcmp(zOp, "mish")) {                      /* torch, oneDNN's (q-1)/(q+1), 1-2/(q+1) */
        float w = expf(fminf(x, 22.1807f)) + 1.0f, q = w * w;
        if (variant == 0) return x * tanhf(log1pf(expf(x)));
        return x * (variant == 1 ? (q - 1.0f) / (q + 1.0f) : 1.0f - 2.0f / (q + 1.0f));
    }
    if (!strcmp(zOp, "gelu") && variant == 0)        /* approximate none, torch's form */
        return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    if (!strcmp(zOp, "gelu") && variant == 1)        /* none, through erfc */
        return 0.5f * x * erfcf(-x * 0.70710678118654752f);
    if (!strcmp(zOp, "gelu")) {                      /* tanh */
        float z = 0.7978845608028654f * (x + 0.044715f * x * x * x);
        if (variant == 2) return 0.5f * x * (1.0f + tanhf(z));
        return x / (1.0f + expf(-2.0f * z));
    }
    if (!strcmp(zOp, "silu"))
        return variant == 0 ? x / (1.0f + expf(-x)) : x * (1.0f / (1.0f + expf(-x)));
    if (!strcmp(zOp, "sigmoid")) {
        if (variant == 0 || x >= 0.0f) return 1.0f / (1.0f + expf(-x));
        { float e = expf(x); return e / (1.0f + e); }
    }
    if (!strcmp(zOp, "tanh")) return tanhf(x);
    if (!strcmp(zOp, "exp")) return expf(x);
    if (!strcmp(zOp, "log")) return logf(x);
    if (!strcmp(zOp, "sqrt")) return sqrtf(x);
    if (!strcmp(zOp, "rsqrt")) return 1.0f / sqrtf(x);
    if (!strcmp(zOp, "reciprocal")) return 1.0f / x;
    if (!strcmp(zOp, "erf")) return erff(x);
    if (!strcmp(zOp, "neg")) return -x;
    return fabsf(x);                                 /* abs */
}

static int build_unary(vcase *pC, uint64_t *s, const char *zOp)
{
    uint64_t aDim[PARITY_MAX_RANK], i;
    int rank = rnd_shape(s, 1, 4, 2048, aDim), variant = 0;
    int kind = (!strcmp(zOp, "log") || !strcmp(zOp, "sqrt") || !strcmp(zOp, "rsqrt")) ? 1 : 0;
    static const char *const azVar[] = { "erf", "erfc", "tanh", "tanh-as-exp" };
    static const double aBeta[] = { 2.0, 0.5, 0.1, 3.0, -1.5, 1.0 };
    static const double aThreshold[] = { 20.0, 10.0, 5.0, 1.0, -2.0, 30.0 };
    static const double aAlpha[] = { 0.5, 2.0, -1.0, 0.0, 1.0, 0.3 };
    float aP[3] = { 1.0f, 20.0f, 1.0f };
    add_operand(pC, s, rank, aDim, pC->inDt, rnd_int(s, 0, 1) ? 120 : 30, kind);
    set_out(pC, rank, aDim);
    if (!strcmp(zOp, "gelu")) {
        variant = rnd_int(s, 0, 3);
        if (variant >= 2) vc_attr_str(pC, "approximate", "tanh");
        else if (rnd_int(s, 0, 1)) vc_attr_str(pC, "approximate", "none");
        snprintf(pC->zLabel, sizeof pC->zLabel, "gelu(%s)", variant >= 2 ? "tanh" : "none");
        snprintf(pC->zStrategy, sizeof pC->zStrategy, "%s", azVar[variant]);
    } else if (!strcmp(zOp, "silu") || !strcmp(zOp, "sigmoid")) {
        variant = rnd_int(s, 0, 1);
        snprintf(pC->zStrategy, sizeof pC->zStrategy, "%s",
                 variant == 0 ? "1/(1+exp(-x))" : (!strcmp(zOp, "silu") ? "x*sigmoid"
                                                                        : "exp(x)/(1+exp(x))"));
    } else if (!strcmp(zOp, "softplus")) {
        /* log(1 + exp) cancels for bx < 0 and is outside the model by policy
         * (op_unary_param.c); the draw stays so that every later case keeps its values */
        (void)rnd_int(s, 0, 1);
        variant = 0;
        if (rnd_int(s, 0, 1)) {
            double b = aBeta[rnd(s) % 6], t = aThreshold[rnd(s) % 6];
            vc_attr_float(pC, "beta", b);
            vc_attr_float(pC, "threshold", t);
            aP[0] = (float)b;
            aP[1] = (float)t;
        }
        snprintf(pC->zStrategy, sizeof pC->zStrategy, "%s",
                 variant == 0 ? "log1p(exp(bx))/b" : "log(1+exp(bx))/b");
    } else if (!strcmp(zOp, "elu")) {
        variant = rnd_int(s, 0, 1);
        if (rnd_int(s, 0, 1)) {
            double a = aAlpha[rnd(s) % 6];
            vc_attr_float(pC, "alpha", a);
            aP[2] = (float)a;
        }
        snprintf(pC->zStrategy, sizeof pC->zStrategy, "%s",
                 variant == 0 ? "(exp(x)-1)*a" : "a*expm1(x)");
    } else if (!strcmp(zOp, "mish")) {
        static const char *const azMish[] = { "x*tanh(log1p(exp(x)))", "x*((1+e)^2-1)/((1+e)^2+1)",
                                              "x*(1-2/((1+e)^2+1))" };
        /* oneDNN's (1+e)^2 forms cancel for x < 0, outside the model by policy (op_unary.c;
         * test_op_unary checks them for x > 0); the draw stays so that every later case
         * keeps its values */
        (void)rnd_int(s, 0, 2);
        variant = 0;
        snprintf(pC->zStrategy, sizeof pC->zStrategy, "%s", azMish[variant]);
    } else {
        snprintf(pC->zStrategy, sizeof pC->zStrategy, "libm");
    }
    for (i = 0; i < pC->nOut; i++) pC->aY[i] = unary_kernel(zOp, variant, aP, pC->apInF[0][i]);
    return 0;
}

static int build_binary(vcase *pC, uint64_t *s, const char *zOp)
{
    uint64_t aOut[PARITY_MAX_RANK], aX[PARITY_MAX_RANK], aYd[PARITY_MAX_RANK];
    uint64_t aSx[PARITY_MAX_RANK], aSy[PARITY_MAX_RANK], i;
    int rank = rnd_shape(s, 1, 4, 2048, aOut), rX = rnd_int(s, 1, rank), rY = rnd_int(s, 1, rank);
    int d, useFma = 0;
    float alpha = 1.0f;
    static const double aAlpha[] = { 2.0, 0.5, -1.5, 0.3, 3.0, -1.0 };

    if (rnd_int(s, 0, 1)) { if (rnd_int(s, 0, 1)) rX = rank; else rY = rank; }
    for (d = 0; d < rX; d++) {
        uint64_t o = aOut[rank - rX + d];
        aX[d] = rnd_int(s, 0, 3) == 0 ? 1 : o;
    }
    for (d = 0; d < rY; d++) {
        uint64_t o = aOut[rank - rY + d];
        aYd[d] = rnd_int(s, 0, 3) == 0 ? 1 : o;
    }
    /* The output is the broadcast shape: rank max(rX, rY), and where both operands (or
     * the missing one) have 1, the output dim is 1. */
    if (rX < rank && rY < rank) {
        int newRank = rX > rY ? rX : rY;
        memmove(aOut, aOut + rank - newRank, (size_t)newRank * sizeof *aOut);
        rank = newRank;
    }
    for (d = 0; d < rank; d++) {
        int iX = d - (rank - rX), iY = d - (rank - rY);
        uint64_t dx = iX >= 0 ? aX[iX] : 1, dy = iY >= 0 ? aYd[iY] : 1;
        aOut[d] = dx > dy ? dx : dy;
    }
    add_operand(pC, s, rX, aX, pC->inDt, rnd_int(s, 0, 1) ? 120 : 30, 0);
    add_operand(pC, s, rY, aYd, rnd_int(s, 0, 3) == 0 ? PARITY_DT_F32 : pC->inDt,
                rnd_int(s, 0, 1) ? 120 : 30, 0);
    set_out(pC, rank, aOut);
    if ((!strcmp(zOp, "add") || !strcmp(zOp, "sub")) && rnd_int(s, 0, 3) == 0) {
        double a = aAlpha[rnd(s) % 6];
        vc_attr_float(pC, "alpha", a);
        alpha = (float)a;
        useFma = rnd_int(s, 0, 1);
    }
    snprintf(pC->zStrategy, sizeof pC->zStrategy, "%s",
             alpha == 1.0f ? "ieee" : useFma ? "alpha-fma" : "alpha-product");
    /* Strides over the output dims, 0 where broadcast. */
    {
        uint64_t st = 1;
        for (d = rank - 1; d >= 0; d--) {
            int iX = d - (rank - rX);
            aSx[d] = (iX < 0 || aX[iX] == 1) ? 0 : st;
            if (iX >= 0) st *= aX[iX];
        }
        st = 1;
        for (d = rank - 1; d >= 0; d--) {
            int iY = d - (rank - rY);
            aSy[d] = (iY < 0 || aYd[iY] == 1) ? 0 : st;
            if (iY >= 0) st *= aYd[iY];
        }
    }
    for (i = 0; i < pC->nOut; i++) {
        uint64_t rest = i, oX = 0, oY = 0;
        float x, y, r;
        for (d = rank - 1; d >= 0; d--) {
            uint64_t idx = rest % aOut[d];
            rest /= aOut[d];
            oX += idx * aSx[d];
            oY += idx * aSy[d];
        }
        x = pC->apInF[0][oX];
        y = pC->apInF[1][oY];
        if (!strcmp(zOp, "add"))
            r = alpha == 1.0f ? x + y : useFma ? fmaf(alpha, y, x) : x + alpha * y;
        else if (!strcmp(zOp, "sub"))
            r = alpha == 1.0f ? x - y : useFma ? fmaf(-alpha, y, x) : x - alpha * y;
        else if (!strcmp(zOp, "mul")) r = x * y;
        else if (!strcmp(zOp, "div")) r = x / y;
        else if (x != x || y != y) r = NAN;
        else if (!strcmp(zOp, "maximum")) r = x > y ? x : y;
        else r = x < y ? x : y;
        pC->aY[i] = r;
    }
    return 0;
}

/* sum, mean, amax, amin, var, logsumexp: reductions over dims with keepdim. */
static int build_reduce(vcase *pC, uint64_t *s, const char *zOp)
{
    uint64_t aDim[PARITY_MAX_RANK], aOut[PARITY_MAX_RANK], r, k;
    unsigned char aRed[PARITY_MAX_RANK];
    int rank, keepdim = rnd_int(s, 0, 1), outRank, strat, isVar = !strcmp(zOp, "var");
    int isLse = !strcmp(zOp, "logsumexp"), isMax = !strcmp(zOp, "amax") || !strcmp(zOp, "amin");
    int meanRecip = 0, varAlg = 0, online = 0;
    size_t chunk;
    double correction = 1.0;
    rowmap m;
    float *aRow, *aTmp;

    if (rnd_int(s, 0, 9) == 0) {            /* long rows */
        rank = rnd_int(s, 1, 2);
        aDim[0] = (uint64_t)rnd_int(s, 1000, 4000);
        if (rank == 2) aDim[1] = (uint64_t)rnd_int(s, 1, 3);
        if (rank == 2 && rnd_int(s, 0, 1)) { uint64_t t = aDim[0]; aDim[0] = aDim[1]; aDim[1] = t; }
    } else {
        rank = rnd_shape(s, 1, 4, 2048, aDim);
    }
    add_operand(pC, s, rank, aDim, pC->inDt, isVar ? 24 : 30, 0);
    reduce_dims(pC, s, rank, aRed, 1);
    if (rnd_int(s, 0, 2) || keepdim) vc_attr_int(pC, "keepdim", keepdim);
    outRank = reduced_shape(rank, aDim, aRed, keepdim, aOut);
    set_out(pC, outRank, aOut);
    rowmap_make(&m, rank, aDim, aRed);
    strat = rnd_int(s, 0, S_BLOCK);
    chunk = (size_t)rnd_int(s, 1, 300);
    if (isVar) {
        int c = rnd_int(s, 0, 3);
        if (c == 0) { correction = 0.0; vc_attr_float(pC, "correction", 0.0); }
        else if (c == 1) { correction = 1.0; vc_attr_float(pC, "correction", 1.0); }
        else if (c == 2) { correction = (double)rnd_int(s, 0, 1); vc_attr_int(pC, "unbiased", (int64_t)correction); }
        varAlg = rnd_int(s, 0, 2);
        snprintf(pC->zStrategy, sizeof pC->zStrategy, "%s/%s",
                 varAlg == 0 ? "two-pass" : varAlg == 1 ? "welford" : "one-pass", azSum[strat]);
    } else if (isLse) {
        online = rnd_int(s, 0, 1);
        snprintf(pC->zStrategy, sizeof pC->zStrategy, "%s", online ? "online" : "two-pass");
        if (!online) snprintf(pC->zStrategy, sizeof pC->zStrategy, "two-pass/%s", azSum[strat]);
    } else if (isMax) {
        snprintf(pC->zStrategy, sizeof pC->zStrategy, "sequential");
    } else {
        meanRecip = !strcmp(zOp, "mean") && rnd_int(s, 0, 1);
        snprintf(pC->zStrategy, sizeof pC->zStrategy, "%s%s", azSum[strat],
                 meanRecip ? "/recip" : "");
    }
    if (strat == S_SPLITK)
        snprintf(pC->zStrategy + strlen(pC->zStrategy),
                 sizeof pC->zStrategy - strlen(pC->zStrategy), "(%zu)", chunk);
    aRow = malloc((m.n + 1) * sizeof(float));
    aTmp = malloc((m.n + 1) * sizeof(float));
    cr_assert(aRow && aTmp);
    for (r = 0; r < m.nRow; r++) {
        float y, n = (float)m.n;
        for (k = 0; k < m.n; k++) aRow[k] = pC->apInF[0][m.aOff[r * m.n + k]];
        if (isMax) {
            y = aRow[0];
            for (k = 1; k < m.n; k++) {
                if (aRow[k] != aRow[k]) { y = aRow[k]; break; }
                if (!strcmp(zOp, "amax") ? aRow[k] > y : aRow[k] < y) y = aRow[k];
            }
        } else if (isLse) {
            float mx = -INFINITY, acc = 0.0f;
            if (online) {
                for (k = 0; k < m.n; k++) {
                    if (aRow[k] > mx) { acc = acc * expf(mx - aRow[k]) + 1.0f; mx = aRow[k]; }
                    else acc += expf(aRow[k] - mx);
                }
            } else {
                for (k = 0; k < m.n; k++) if (aRow[k] > mx) mx = aRow[k];
                for (k = 0; k < m.n; k++) aTmp[k] = expf(aRow[k] - mx);
                acc = sum_by(strat, aTmp, m.n, chunk);
            }
            y = mx + logf(acc);
        } else if (isVar) {
            float mu, m2, D = n - (float)correction;
            if (D < 0.0f) D = 0.0f;
            if (varAlg == 0) {
                mu = sum_by(strat, aRow, m.n, chunk) / n;
                for (k = 0; k < m.n; k++) { float d = aRow[k] - mu; aTmp[k] = d * d; }
                m2 = sum_by(strat, aTmp, m.n, chunk);
            } else if (varAlg == 1) {
                mu = 0.0f;
                m2 = 0.0f;
                for (k = 0; k < m.n; k++) {
                    float d = aRow[k] - mu;
                    mu += d / (float)(k + 1);
                    m2 += d * (aRow[k] - mu);
                }
            } else {
                float sx = sum_by(strat, aRow, m.n, chunk), sq;
                for (k = 0; k < m.n; k++) aTmp[k] = aRow[k] * aRow[k];
                sq = sum_by(strat, aTmp, m.n, chunk);
                m2 = sq - sx * (sx / n);
            }
            y = m2 / D;
        } else {
            y = sum_by(strat, aRow, m.n, chunk);
            if (!strcmp(zOp, "mean")) y = meanRecip ? y * (1.0f / n) : y / n;
        }
        pC->aY[r] = y;
    }
    free(aRow);
    free(aTmp);
    free(m.aOff);
    return 0;
}

/* softmax, log_softmax, cumsum: same-shape ops along one dim. */
static int build_rowwise(vcase *pC, uint64_t *s, const char *zOp)
{
    uint64_t aDim[PARITY_MAX_RANK], r, k;
    unsigned char aRed[PARITY_MAX_RANK];
    int rank, isCum = !strcmp(zOp, "cumsum"), isLog = !strcmp(zOp, "log_softmax");
    int alg, strat = rnd_int(s, 0, S_BLOCK), d;
    size_t chunk = (size_t)rnd_int(s, 1, 64);
    rowmap m;
    float *aRow, *aTmp;

    if (rnd_int(s, 0, 9) == 0) {
        rank = 1;
        aDim[0] = (uint64_t)rnd_int(s, 500, 2500);
    } else {
        rank = rnd_shape(s, 1, 4, 2048, aDim);
    }
    add_operand(pC, s, rank, aDim, pC->inDt, 30, 0);
    set_out(pC, rank, aDim);
    d = rnd_int(s, 0, rank - 1);
    memset(aRed, 0, sizeof aRed);
    aRed[d] = 1;
    if (d != rank - 1 || rnd_int(s, 0, 1)) vc_attr_int(pC, "dim", dim_arg(s, d, rank));
    rowmap_make(&m, rank, aDim, aRed);
    if (isCum) {
        alg = rnd_int(s, 0, 2);
        snprintf(pC->zStrategy, sizeof pC->zStrategy, "%s",
                 alg == 0 ? "sequential" : alg == 1 ? "blocked-scan" : "hillis-steele");
        if (alg == 1)
            snprintf(pC->zStrategy + strlen(pC->zStrategy),
                     sizeof pC->zStrategy - strlen(pC->zStrategy), "(%zu)", chunk);
    } else {
        alg = rnd_int(s, 0, 2);   /* two-pass divide, two-pass reciprocal, online */
        snprintf(pC->zStrategy, sizeof pC->zStrategy, "%s/%s",
                 alg == 2 ? "online" : alg == 1 ? (isLog ? "two-pass-lse" : "two-pass-recip")
                                                : "two-pass",
                 alg == 2 ? "sequential" : azSum[strat]);
    }
    aRow = malloc((m.n + 1) * sizeof(float));
    aTmp = malloc((m.n + 1) * sizeof(float));
    cr_assert(aRow && aTmp);
    for (r = 0; r < m.nRow; r++) {
        for (k = 0; k < m.n; k++) aRow[k] = pC->apInF[0][m.aOff[r * m.n + k]];
        if (isCum) {
            if (alg == 0) {
                float acc = 0.0f;
                for (k = 0; k < m.n; k++) { acc += aRow[k]; aTmp[k] = acc; }
            } else if (alg == 1) {
                float offset = 0.0f;
                uint64_t b0;
                for (b0 = 0; b0 < m.n; b0 += chunk) {
                    float local = 0.0f;
                    for (k = b0; k < m.n && k < b0 + chunk; k++) {
                        local += aRow[k];
                        aTmp[k] = b0 ? offset + local : local;
                    }
                    offset = b0 ? offset + local : local;
                }
            } else {
                uint64_t step;
                memcpy(aTmp, aRow, m.n * sizeof(float));
                for (step = 1; step < m.n; step *= 2) {
                    for (k = m.n; k-- > step;) aTmp[k] = aTmp[k] + aTmp[k - step];
                }
            }
        } else {
            float mx = -INFINITY, acc = 0.0f, L;
            if (alg == 2) {
                for (k = 0; k < m.n; k++) {
                    if (aRow[k] > mx) { acc = acc * expf(mx - aRow[k]) + 1.0f; mx = aRow[k]; }
                    else acc += expf(aRow[k] - mx);
                }
            } else {
                for (k = 0; k < m.n; k++) if (aRow[k] > mx) mx = aRow[k];
                for (k = 0; k < m.n; k++) aTmp[k] = expf(aRow[k] - mx);
                acc = sum_by(strat, aTmp, m.n, chunk);
            }
            if (isLog) {
                L = logf(acc);
                if (alg == 1) {
                    float lse = mx + L;
                    for (k = 0; k < m.n; k++) aTmp[k] = aRow[k] - lse;
                } else {
                    for (k = 0; k < m.n; k++) aTmp[k] = (aRow[k] - mx) - L;
                }
            } else {
                float inv = 1.0f / acc;
                for (k = 0; k < m.n; k++) {
                    float e = expf(aRow[k] - mx);
                    aTmp[k] = alg == 1 ? e * inv : e / acc;
                }
            }
        }
        for (k = 0; k < m.n; k++) pC->aY[m.aOff[r * m.n + k]] = aTmp[k];
    }
    free(aRow);
    free(aTmp);
    free(m.aOff);
    return 0;
}

/* layer_norm and rms_norm over the trailing 1 or 2 dims. */
static int build_norm(vcase *pC, uint64_t *s, const char *zOp)
{
    uint64_t aDim[PARITY_MAX_RANK], r, k, n, nRow;
    int rank, nNorm, isLn = !strcmp(zOp, "layer_norm"), alg = rnd_int(s, 0, 2);
    int strat = rnd_int(s, 0, S_BLOCK), nAffine, d;
    size_t chunk = (size_t)rnd_int(s, 1, 64);
    double eps;
    float epsF, *aTmp;
    const float *w = NULL, *b = NULL;

    if (rnd_int(s, 0, 9) == 0) {
        rank = 2;
        aDim[0] = (uint64_t)rnd_int(s, 1, 3);
        aDim[1] = (uint64_t)rnd_int(s, 500, 3000);
    } else {
        rank = rnd_shape(s, 1, 3, 2048, aDim);
    }
    nNorm = rank >= 2 && rnd_int(s, 0, 3) == 0 ? 2 : 1;
    add_operand(pC, s, rank, aDim, pC->inDt, 24, 0);
    nAffine = rnd_int(s, 0, isLn ? 2 : 1);
    for (d = 0; d < nAffine; d++)
        add_operand(pC, s, nNorm, aDim + rank - nNorm, pC->inDt, 4, 0);
    if (nAffine >= 1) w = pC->apInF[1];
    if (nAffine >= 2) b = pC->apInF[2];
    set_out(pC, rank, aDim);
    if (nAffine == 0 || rnd_int(s, 0, 1)) {
        int64_t aNs[2];
        for (d = 0; d < nNorm; d++) aNs[d] = (int64_t)aDim[rank - nNorm + d];
        vc_attr_ints(pC, "normalized_shape", aNs, (size_t)nNorm, 1);
    }
    if (isLn) {
        eps = 1e-5;
        if (rnd_int(s, 0, 1)) { eps = rnd_int(s, 0, 1) ? 1e-6 : 1e-3; vc_attr_float(pC, "eps", eps); }
    } else if (rnd_int(s, 0, 1)) {
        eps = 2.0 * parity_unit_roundoff(pC->inDt);   /* torch's eps=None: finfo(x).eps */
    } else {
        eps = rnd_int(s, 0, 1) ? 1e-6 : 1e-5;
        vc_attr_float(pC, "eps", eps);
    }
    epsF = (float)eps;
    n = prod(nNorm, aDim + rank - nNorm);
    nRow = pC->nOut / n;
    snprintf(pC->zStrategy, sizeof pC->zStrategy, "%s/%s/affine%d",
             isLn ? (alg == 0 ? "two-pass" : alg == 1 ? "welford" : "one-pass")
                  : (alg == 2 ? "sqrt-div" : "rsqrt"), azSum[strat], nAffine);
    aTmp = malloc((n + 1) * sizeof(float));
    cr_assert(aTmp);
    for (r = 0; r < nRow; r++) {
        const float *x = pC->apInF[0] + r * n;
        float *y = pC->aY + r * n;
        float nf = (float)n;
        if (isLn) {
            float mu, v, rs;
            if (alg == 0) {
                mu = sum_by(strat, x, n, chunk) / nf;
                for (k = 0; k < n; k++) { float dd = x[k] - mu; aTmp[k] = dd * dd; }
                v = sum_by(strat, aTmp, n, chunk) / nf;
            } else if (alg == 1) {
                float m2 = 0.0f;
                mu = 0.0f;
                for (k = 0; k < n; k++) {
                    float dd = x[k] - mu;
                    mu += dd / (float)(k + 1);
                    m2 += dd * (x[k] - mu);
                }
                v = m2 / nf;
            } else {
                float sx = sum_by(strat, x, n, chunk), sq;
                for (k = 0; k < n; k++) aTmp[k] = x[k] * x[k];
                sq = sum_by(strat, aTmp, n, chunk);
                mu = sx / nf;
                v = sq / nf - mu * mu;
                if (v < 0.0f) v = 0.0f;              /* kernels clamp the one-pass form */
            }
            rs = 1.0f / sqrtf(v + epsF);
            for (k = 0; k < n; k++) {
                float t = (x[k] - mu) * rs;
                if (w) t = t * w[k];
                if (b) t = t + b[k];
                y[k] = t;
            }
        } else {
            float ss, ms, rs;
            for (k = 0; k < n; k++) aTmp[k] = x[k] * x[k];
            ss = sum_by(strat, aTmp, n, chunk);
            ms = alg == 1 ? ss * (1.0f / nf) : ss / nf;
            rs = alg == 2 ? 1.0f / sqrtf(ms + epsF) : 1.0f / sqrtf(ms + epsF);
            for (k = 0; k < n; k++) {
                float t = alg == 2 ? x[k] / sqrtf(ms + epsF) : x[k] * rs;
                y[k] = w ? t * w[k] : t;
            }
        }
    }
    free(aTmp);
    return 0;
}

/* matmul (torch broadcasting, 1-D operands), bmm, linear (bias optional). */
static int build_dot(vcase *pC, uint64_t *s, const char *zOp)
{
    int isLinear = !strcmp(zOp, "linear"), isBmm = !strcmp(zOp, "bmm");
    int rA, rB, nBatch = 0, nbA, nbB, d, strat = rnd_int(s, 0, S_COUNT - 1), outRank = 0;
    uint64_t M, N, K, aBatch[PARITY_MAX_RANK], aA[PARITY_MAX_RANK], aB[PARITY_MAX_RANK];
    uint64_t aOut[PARITY_MAX_RANK], aSa[PARITY_MAX_RANK], aSb[PARITY_MAX_RANK], nB = 1;
    uint64_t i, k, cap;
    size_t chunk;
    int longK = rnd_int(s, 0, 9) == 0, bias = 0;
    float *aRowA, *aColB, *aTmp;

    K = longK ? (uint64_t)rnd_int(s, 1000, 4000) : rnd_dim(s) + (rnd_int(s, 0, 3) == 0 ? 60 : 0);
    M = rnd_dim(s);
    N = rnd_dim(s);
    chunk = (size_t)rnd_int(s, 1, K > 256 ? 512 : 32);
    if (isLinear) {
        rA = rnd_int(s, 1, 3);
        rB = 2;
        nBatch = rA - 1;                      /* x's leading dims, in aBatch */
        for (d = 0; d < nBatch; d++) aBatch[d] = rnd_dim(s);
        bias = rnd_int(s, 0, 1);
    } else if (isBmm) {
        rA = rB = 3;
        nBatch = 1;
        aBatch[0] = rnd_dim(s);
    } else {
        rA = rnd_int(s, 1, 4);
        rB = rnd_int(s, 1, 4);
        nbA = rA >= 2 ? rA - 2 : 0;
        nbB = rB >= 2 ? rB - 2 : 0;
        nBatch = nbA > nbB ? nbA : nbB;
        for (d = 0; d < nBatch; d++) aBatch[d] = rnd_dim(s);
    }
    /* Keep the exact reference affordable: output elements x K bounded. */
    cap = longK ? 24 : 4096;
    {
        uint64_t aAll[PARITY_MAX_RANK + 2];
        int nAll = 0;
        for (d = 0; d < nBatch; d++) aAll[nAll++] = aBatch[d];
        aAll[nAll++] = M;
        aAll[nAll++] = N;
        cap_shape(nAll, aAll, cap);
        for (d = 0; d < nBatch; d++) aBatch[d] = aAll[d];
        M = aAll[nBatch];
        N = aAll[nBatch + 1];
        if (!longK && prod(nAll, aAll) * K > 150000) K = 150000 / prod(nAll, aAll) + 1;
    }
    if (isLinear) {
        for (d = 0; d < nBatch; d++) aA[d] = aBatch[d];
        aA[rA - 1] = K;
        aB[0] = N;
        aB[1] = K;
        for (d = 0; d < nBatch; d++) { aOut[outRank++] = aBatch[d]; nB *= aBatch[d]; }
        aOut[outRank++] = N;
        M = 1;
        add_operand(pC, s, rA, aA, pC->inDt, 12, 0);
        add_operand(pC, s, 2, aB, pC->inDt, 12, 0);
        if (bias) { uint64_t nb = N; add_operand(pC, s, 1, &nb, pC->inDt, 12, 0); }
        snprintf(pC->zLabel, sizeof pC->zLabel, "linear(%s)", bias ? "bias" : "no bias");
    } else {
        nbA = rA >= 2 ? rA - 2 : 0;
        nbB = rB >= 2 ? rB - 2 : 0;
        for (d = 0; d < nbA; d++) {
            uint64_t o = aBatch[nBatch - nbA + d];
            aA[d] = (!isBmm && rnd_int(s, 0, 3) == 0) ? 1 : o;
        }
        for (d = 0; d < nbB; d++) {
            uint64_t o = aBatch[nBatch - nbB + d];
            aB[d] = (!isBmm && rnd_int(s, 0, 3) == 0) ? 1 : o;
        }
        /* The broadcast batch shape, recomputed from the operands. */
        for (d = 0; d < nBatch; d++) {
            int iA = d - (nBatch - nbA), iB = d - (nBatch - nbB);
            uint64_t da = iA >= 0 ? aA[iA] : 1, db = iB >= 0 ? aB[iB] : 1;
            aBatch[d] = da > db ? da : db;
            aOut[outRank++] = aBatch[d];
            nB *= aBatch[d];
        }
        if (rA == 1) { aA[0] = K; M = 1; } else { aA[rA - 2] = M; aA[rA - 1] = K; aOut[outRank++] = M; }
        if (rB == 1) { aB[0] = K; N = 1; } else { aB[rB - 2] = K; aB[rB - 1] = N; aOut[outRank++] = N; }
        add_operand(pC, s, rA, aA, pC->inDt, 12, 0);
        add_operand(pC, s, rB, aB, pC->inDt, 12, 0);
        /* Batch strides of a and b over the output batch dims. */
        {
            uint64_t st = M * K;
            for (d = nBatch - 1; d >= 0; d--) {
                int iA = d - (nBatch - nbA);
                aSa[d] = (iA < 0 || aA[iA] == 1) ? 0 : st;
                if (iA >= 0) st *= aA[iA];
            }
            st = K * N;
            for (d = nBatch - 1; d >= 0; d--) {
                int iB = d - (nBatch - nbB);
                aSb[d] = (iB < 0 || aB[iB] == 1) ? 0 : st;
                if (iB >= 0) st *= aB[iB];
            }
        }
    }
    set_out(pC, outRank, aOut);
    snprintf(pC->zStrategy, sizeof pC->zStrategy, "%s", azSum[strat]);
    if (strat == S_SPLITK)
        snprintf(pC->zStrategy + strlen(pC->zStrategy),
                 sizeof pC->zStrategy - strlen(pC->zStrategy), "(%zu)", chunk);
    if (bias) strncat(pC->zStrategy, "+bias", sizeof pC->zStrategy - strlen(pC->zStrategy) - 1);
    aRowA = malloc((K + 1) * sizeof(float));
    aColB = malloc((K + 1) * sizeof(float));
    aTmp = malloc((K + 1) * sizeof(float));
    cr_assert(aRowA && aColB && aTmp);
    for (i = 0; i < pC->nOut; i++) {
        uint64_t j = i % N, rest = i / N, mi = rest % M, ib = rest / M, offA = 0, offB = 0;
        float y;
        if (isLinear) {
            offA = (ib * M + mi) * K;
            for (k = 0; k < K; k++) { aRowA[k] = pC->apInF[0][offA + k]; aColB[k] = pC->apInF[1][j * K + k]; }
        } else {
            for (d = nBatch - 1; d >= 0; d--) {
                uint64_t idx = ib % aBatch[d];
                ib /= aBatch[d];
                offA += idx * aSa[d];
                offB += idx * aSb[d];
            }
            for (k = 0; k < K; k++) {
                aRowA[k] = pC->apInF[0][offA + mi * K + k];
                aColB[k] = pC->apInF[1][offB + k * N + j];
            }
        }
        y = dot_by(strat, aRowA, aColB, K, chunk, aTmp);
        if (bias) y += pC->apInF[2][j];
        pC->aY[i] = y;
    }
    free(aRowA);
    free(aColB);
    free(aTmp);
    return 0;
}

/* transpose, permute, reshape: exact moves; input dtype = output dtype. */
static int build_layout(vcase *pC, uint64_t *s, const char *zOp)
{
    uint64_t aDim[PARITY_MAX_RANK], aOut[PARITY_MAX_RANK], aStride[PARITY_MAX_RANK], st = 1, i;
    int rank = rnd_shape(s, 1, 4, 2048, aDim), aPerm[PARITY_MAX_RANK], d, outRank = rank;

    pC->inDt = pC->outDt;
    add_operand(pC, s, rank, aDim, pC->inDt, 30, 0);
    for (d = rank - 1; d >= 0; d--) { aStride[d] = st; st *= aDim[d]; }
    for (d = 0; d < rank; d++) aPerm[d] = d;
    snprintf(pC->zStrategy, sizeof pC->zStrategy, "gather");
    if (!strcmp(zOp, "transpose")) {
        int d0 = rnd_int(s, 0, rank - 1), d1 = rnd_int(s, 0, rank - 1);
        aPerm[d0] = d1;
        aPerm[d1] = d0;
        vc_attr_int(pC, "dim0", dim_arg(s, d0, rank));
        vc_attr_int(pC, "dim1", dim_arg(s, d1, rank));
    } else if (!strcmp(zOp, "permute")) {
        int64_t aArg[PARITY_MAX_RANK];
        for (d = rank - 1; d > 0; d--) {
            int j = rnd_int(s, 0, d), t = aPerm[d];
            aPerm[d] = aPerm[j];
            aPerm[j] = t;
        }
        for (d = 0; d < rank; d++) aArg[d] = dim_arg(s, aPerm[d], rank);
        vc_attr_ints(pC, "dims", aArg, (size_t)rank, 1);
    } else {
        /* reshape: a random factorisation of the element count. */
        uint64_t n = prod(rank, aDim), rem = n, f;
        int64_t aArg[PARITY_MAX_RANK];
        int mode = rnd_int(s, 0, 2);
        outRank = rnd_int(s, 1, 4);
        for (d = 0; d < outRank; d++) aOut[d] = 1;
        for (f = 2; rem > 1;) {
            if (rem % f == 0) { aOut[rnd_int(s, 0, outRank - 1)] *= f; rem /= f; }
            else f++;
        }
        for (d = 0; d < outRank; d++) aArg[d] = (int64_t)aOut[d];
        if (mode == 2) aArg[rnd_int(s, 0, outRank - 1)] = -1;
        if (mode) vc_attr_ints(pC, "shape", aArg, (size_t)outRank, 1);
        snprintf(pC->zStrategy, sizeof pC->zStrategy, "copy");
        set_out(pC, outRank, aOut);
        for (i = 0; i < pC->nOut; i++) pC->aY[i] = pC->apInF[0][i];
        return 0;
    }
    for (d = 0; d < rank; d++) aOut[d] = aDim[aPerm[d]];
    set_out(pC, outRank, aOut);
    for (i = 0; i < pC->nOut; i++) {
        uint64_t rest = i, off = 0;
        for (d = rank - 1; d >= 0; d--) { off += (rest % aOut[d]) * aStride[aPerm[d]]; rest /= aOut[d]; }
        pC->aY[i] = pC->apInF[0][off];
    }
    return 0;
}

/* cast from float32 or float64 to the output dtype, rounded once. */
static int build_cast(vcase *pC, uint64_t *s)
{
    uint64_t aDim[PARITY_MAX_RANK], i;
    int rank = rnd_shape(s, 1, 4, 2048, aDim);
    pC->inDt = rnd_int(s, 0, 2) == 0 ? PARITY_DT_F64 : PARITY_DT_F32;
    add_operand(pC, s, rank, aDim, pC->inDt, pC->outDt == PARITY_DT_F16 ? 8 : 30, 0);
    if (pC->inDt == PARITY_DT_F64)           /* full binary64 precision, not float values */
        for (i = 0; i < pC->aIn[0].nElem; i++)
            pC->apIn[0][i] *= 1.0 + (rnd_unit(s) - 0.5) * 0x1p-20;
    set_out(pC, rank, aDim);
    vc_attr_str(pC, "to", parity_dtype_name(pC->outDt));
    snprintf(pC->zStrategy, sizeof pC->zStrategy, "round-once");
    /* Encoded straight from the input value: one rounding (the output rounding of
     * finish_output is then exact). */
    for (i = 0; i < pC->nOut; i++) {
        unsigned char buf[8];
        double v;
        parity_encode(pC->outDt, pC->apIn[0][i], buf);
        parity_decode(pC->outDt, buf, &v, 1);
        pC->aY[i] = (float)v;
    }
    return 0;
}

static const char *const azUnary[] = { "relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log",
    "sqrt", "rsqrt", "reciprocal", "erf", "neg", "abs", "softplus", "elu", "mish", NULL };
static const char *const azBinary[] = { "add", "sub", "mul", "div", "maximum", "minimum", NULL };
static const char *const azReduce[] = { "sum", "mean", "amax", "amin", "var", "logsumexp", NULL };
static const char *const azRowwise[] = { "softmax", "log_softmax", "cumsum", NULL };
static const char *const azNorm[] = { "layer_norm", "rms_norm", NULL };
static const char *const azDot[] = { "matmul", "linear", "bmm", NULL };
static const char *const azLayout[] = { "transpose", "permute", "reshape", NULL };

static int in_list(const char *const *az, const char *z)
{
    for (; *az; az++) if (!strcmp(*az, z)) return 1;
    return 0;
}

static int supported(const char *zOp)
{
    return in_list(azUnary, zOp) || in_list(azBinary, zOp) || in_list(azReduce, zOp) ||
           in_list(azRowwise, zOp) || in_list(azNorm, zOp) || in_list(azDot, zOp) ||
           in_list(azLayout, zOp) || !strcmp(zOp, "cast");
}

/* Builds case pC for pDef from seed. */
static void build_case(vcase *pC, const parity_op_def *pDef, uint64_t seed)
{
    uint64_t s = seed;
    const char *zOp = pDef->zName;
    int r = rnd_int(&s, 0, 7);
    memset(pC, 0, sizeof *pC);
    pC->pDef = pDef;
    snprintf(pC->zLabel, sizeof pC->zLabel, "%s", zOp);
    pC->outDt = r == 6 ? PARITY_DT_BF16 : r == 7 ? PARITY_DT_F16 : PARITY_DT_F32;
    pC->inDt = pC->outDt != PARITY_DT_F32 && rnd_int(&s, 0, 1) ? pC->outDt : PARITY_DT_F32;
    if (in_list(azUnary, zOp)) build_unary(pC, &s, zOp);
    else if (in_list(azBinary, zOp)) build_binary(pC, &s, zOp);
    else if (in_list(azReduce, zOp)) build_reduce(pC, &s, zOp);
    else if (in_list(azRowwise, zOp)) build_rowwise(pC, &s, zOp);
    else if (in_list(azNorm, zOp)) build_norm(pC, &s, zOp);
    else if (in_list(azDot, zOp)) build_dot(pC, &s, zOp);
    else if (in_list(azLayout, zOp)) build_layout(pC, &s, zOp);
    else build_cast(pC, &s);
    finish_output(pC);
}

/* ---- reporting --------------------------------------------------------------------- */

static void element_ref(parity_op_call *pCall, uint64_t i, double *pRef, double *pBound)
{
    mpfr_t ref;
    mpfr_init2(ref, PARITY_REF_PREC);
    cr_assert(pCall->pDef->xElement(pCall, i, ref, pBound) == 0);
    *pRef = mpfr_get_d(ref, MPFR_RNDN);
    mpfr_clear(ref);
}

static void describe(const vcase *pC, char *z, size_t n)
{
    char zS[3][160], zO[160];
    size_t i, len;
    for (i = 0; i < 3; i++) zS[i][0] = 0;
    for (i = 0; i < pC->nIn; i++)
        parity_shape_str(pC->aIn[i].rank, pC->aIn[i].aDim, zS[i], sizeof zS[i]);
    parity_shape_str(pC->outRank, pC->aOut, zO, sizeof zO);
    len = (size_t)snprintf(z, n, "%s strategy %s, in %s %s%s%s%s%s (%s), out %s %s, attrs:",
                           pC->zLabel, pC->zStrategy, parity_dtype_name(pC->inDt), zS[0],
                           pC->nIn > 1 ? " " : "", zS[1], pC->nIn > 2 ? " " : "", zS[2],
                           pC->zDist, parity_dtype_name(pC->outDt), zO);
    for (i = 0; i < pC->nAttr && len < n; i++) {
        char zA[128];
        len += (size_t)snprintf(z + len, n - len, " %s=%s", pC->aAttr[i].zName,
                                parity_attr_format(&pC->aAttr[i], zA, sizeof zA));
    }
}

static void dump_operands(const vcase *pC)
{
    size_t i;
    uint64_t k;
    for (i = 0; i < pC->nIn; i++) {
        fprintf(stderr, "  %s =", pC->aIn[i].zName);
        for (k = 0; k < pC->aIn[i].nElem; k++) fprintf(stderr, " %a", pC->aIn[i].aValue[k]);
        fprintf(stderr, "\n");
    }
    fprintf(stderr, "  compiled =");
    for (k = 0; k < pC->nOut; k++) fprintf(stderr, " %a", pC->aC[k]);
    fprintf(stderr, "\n");
}

/* The KNOWN_ISSUES entry pC falls under, or -1. */
static int known_issue(const vcase *pC)
{
    size_t i, nX = strcspn(pC->zDist, ",");   /* the first operand's distribution */
    for (i = 0; KNOWN_ISSUES[i].zOp; i++)
        if (!strcmp(KNOWN_ISSUES[i].zOp, pC->pDef->zName) &&
            (!KNOWN_ISSUES[i].zStrategy ||
             !strncmp(KNOWN_ISSUES[i].zStrategy, pC->zStrategy,
                      strlen(KNOWN_ISSUES[i].zStrategy))) &&
            (!KNOWN_ISSUES[i].zDist || (strlen(KNOWN_ISSUES[i].zDist) == nX &&
                                        !strncmp(KNOWN_ISSUES[i].zDist, pC->zDist, nX))))
            return (int)i;
    return -1;
}

static uint64_t env_u64(const char *zName, uint64_t def)
{
    const char *z = getenv(zName);
    return z && *z ? strtoull(z, NULL, 0) : def;
}

/* ---- the test ---------------------------------------------------------------------- */

#define MAX_LABELS 64

Test(validation, random_cases_no_false_failures_and_injections_caught, .timeout = 1800)
{
#if defined(__SANITIZE_ADDRESS__)
    const uint64_t nDefault = VALIDATION_ASAN_N;
#else
    const uint64_t nDefault = VALIDATION_DEFAULT_N;
#endif
    uint64_t nCases = env_u64("PARITY_VALIDATION_N", nDefault);
    uint64_t first = env_u64("PARITY_VALIDATION_FIRST", 0);
    uint64_t base = env_u64("PARITY_VALIDATION_SEED", VALIDATION_SEED);
    int dump = getenv("PARITY_VALIDATION_DUMP") != NULL;
    const parity_op_def *apOp[64];
    int nOp = 0, i;
    char azLabel[MAX_LABELS][32];
    uint64_t aLabelN[MAX_LABELS], aLabelFail[MAX_LABELS];
    int nLabel = 0;
    uint64_t c, nRun = 0, nFalse = 0, nKnown = 0, nSetup = 0, nInj = 0, nCaught = 0, nInjSkip = 0;
    uint64_t nElem = 0;
    double t0 = now_seconds();

    for (i = 0; parity_op_registry[i]; i++) {
        if (supported(parity_op_registry[i]->zName)) apOp[nOp++] = parity_op_registry[i];
        else fprintf(stderr, "validation: skipping op %s (no generator)\n",
                     parity_op_registry[i]->zName);
    }
    cr_assert(nOp > 0);

    for (c = first; c < first + nCases; c++) {
        uint64_t seedState = base + c * UINT64_C(0x9E3779B97F4A7C15), seed = splitmix64(&seedState);
        const parity_op_def *pDef = apOp[c % (uint64_t)nOp];
        vcase vc;
        parity_op_call call;
        parity_judgement j;
        char zErr[PARITY_ERR_LEN], zDesc[1024];
        int iLabel;

        build_case(&vc, pDef, seed);
        nRun++;
        nElem += vc.nOut;
        for (iLabel = 0; iLabel < nLabel && strcmp(azLabel[iLabel], vc.zLabel); iLabel++) {}
        if (iLabel == nLabel && nLabel < MAX_LABELS) {
            snprintf(azLabel[nLabel], sizeof azLabel[nLabel], "%s", vc.zLabel);
            aLabelN[nLabel] = aLabelFail[nLabel] = 0;
            nLabel++;
        }
        if (iLabel < nLabel) aLabelN[iLabel]++;
        describe(&vc, zDesc, sizeof zDesc);
        if (dump) {
            fprintf(stderr, "case %llu: %s\n", (unsigned long long)c, zDesc);
            dump_operands(&vc);
        }

        zErr[0] = 0;
        if (parity_op_begin(&call, pDef, vc.aIn, vc.nIn, vc.outDt, vc.outRank, vc.aOut,
                            PARITY_DT_INVALID, vc.aAttr, vc.nAttr, zErr, sizeof zErr) != 0) {
            if (nSetup++ < MAX_REPORTS)
                fprintf(stderr, "validation: case %llu (seed 0x%llx) setup refused: %s\n  %s\n",
                        (unsigned long long)c, (unsigned long long)seed, zErr, zDesc);
            case_free(&vc);
            continue;
        }
        if (parity_judge(&call, NULL, vc.aC, &j, zErr, sizeof zErr) != 0) {
            if (nSetup++ < MAX_REPORTS)
                fprintf(stderr, "validation: case %llu judge error: %s\n  %s\n",
                        (unsigned long long)c, zErr, zDesc);
            parity_op_end(&call);
            case_free(&vc);
            continue;
        }
        if (j.nFail > 0) {
            int iKnown = known_issue(&vc), known = iKnown >= 0;
            double ref, bound;
            uint64_t w = j.worstLinear;
            if (known) nKnown++;
            else nFalse++;
            if (iLabel < nLabel) aLabelFail[iLabel]++;
            element_ref(&call, w, &ref, &bound);
            if (known ? nKnown <= 5 : nFalse <= MAX_REPORTS)
                fprintf(stderr, "validation: %sFALSE FAILURE case %llu (seed 0x%llx, replay "
                        "PARITY_VALIDATION_FIRST=%llu PARITY_VALIDATION_N=1): %s\n"
                        "  %llu of %llu elements fail; worst element %llu: compiled %.9g (%a) "
                        "float32 kernel %.9g, reference %.17g, error %.3g, bound %.3g "
                        "(%.3gx the bound)%s%s\n",
                        known ? "(known issue) " : "", (unsigned long long)c,
                        (unsigned long long)seed, (unsigned long long)c, zDesc,
                        (unsigned long long)j.nFail, (unsigned long long)vc.nOut,
                        (unsigned long long)w, vc.aC[w], vc.aC[w], (double)vc.aY[w], ref,
                        fabs(vc.aC[w] - ref), bound, j.worstRatio,
                        known ? "\n  known issue: " : "", known ? KNOWN_ISSUES[iKnown].zWhy : "");
        }

        /* Injection: 4 bounds + 3 ulps of the output, away from the reference. */
        if (c % INJECT_EVERY == 0 && vc.nOut > 0 && j.nFail == 0) {
            uint64_t s = seed ^ UINT64_C(0xA5A5A5A5), iBad = 0;
            double ref = 0.0, bound = 0.0;
            int tries, found = 0;
            for (tries = 0; tries < 16 && !found; tries++) {
                iBad = rnd(&s) % vc.nOut;
                element_ref(&call, iBad, &ref, &bound);
                found = isfinite(ref) && isfinite(bound) && isfinite(vc.aC[iBad]) &&
                        fabs(parity_round_double_to_dtype(ref, vc.outDt)) <=
                            parity_dtype_max_finite(vc.outDt);
            }
            if (!found) {
                nInjSkip++;
            } else {
                double *aBad = malloc(vc.nOut * sizeof *aBad), sgn, delta;
                uint64_t aIdx[PARITY_MAX_RANK];
                parity_judgement jb;
                int inside = 1, d;
                cr_assert(aBad);
                memcpy(aBad, vc.aC, vc.nOut * sizeof *aBad);
                sgn = vc.aC[iBad] > ref ? 1.0 : vc.aC[iBad] < ref ? -1.0
                    : (rnd(&s) & 1 ? 1.0 : -1.0);
                delta = 4.0 * bound + 3.0 * parity_ulp_at(vc.outDt, fabs(ref));
                aBad[iBad] = parity_round_double_to_dtype(ref + sgn * delta, vc.outDt);
                nInj++;
                cr_assert(parity_judge(&call, NULL, aBad, &jb, zErr, sizeof zErr) == 0, "%s", zErr);
                parity_unravel(vc.outRank, vc.aOut, iBad, aIdx);
                for (d = 0; d < vc.outRank; d++)
                    if (jb.nFail == 0 || aIdx[d] < jb.aSliceLo[d] || aIdx[d] >= jb.aSliceHi[d])
                        inside = 0;
                if (jb.nFail >= 1 && inside) {
                    nCaught++;
                    cr_expect_eq(jb.nFail, 1, "case %llu: injection at %llu: %llu failures: %s",
                                 (unsigned long long)c, (unsigned long long)iBad,
                                 (unsigned long long)jb.nFail, zDesc);
                } else {
                    fprintf(stderr, "validation: MISSED INJECTION case %llu (seed 0x%llx): %s\n"
                            "  element %llu: reference %.17g, bound %.3g, injected %.9g, "
                            "%llu failures\n", (unsigned long long)c, (unsigned long long)seed,
                            zDesc, (unsigned long long)iBad, ref, bound, aBad[iBad],
                            (unsigned long long)jb.nFail);
                }
                free(aBad);
            }
        }
        parity_op_end(&call);
        case_free(&vc);
    }

    {
        char zLine[4096];
        size_t len = 0;
        for (i = 0; i < nLabel && len < sizeof zLine; i++)
            len += aLabelFail[i]
                ? (size_t)snprintf(zLine + len, sizeof zLine - len, "%s%s %llu (%llu failing)",
                                   i ? ", " : "", azLabel[i], (unsigned long long)aLabelN[i],
                                   (unsigned long long)aLabelFail[i])
                : (size_t)snprintf(zLine + len, sizeof zLine - len, "%s%s %llu",
                                   i ? ", " : "", azLabel[i], (unsigned long long)aLabelN[i]);
        fprintf(stderr,
                "validation: %llu cases (%llu output elements) in %.1f s, %d ops; "
                "false failures %llu, known-issue failures %llu, setup errors %llu; "
                "injected errors caught %llu/%llu (%llu cases without an injectable "
                "element)\nvalidation: per op: %s\n",
                (unsigned long long)nRun, (unsigned long long)nElem, now_seconds() - t0, nOp,
                (unsigned long long)nFalse, (unsigned long long)nKnown,
                (unsigned long long)nSetup, (unsigned long long)nCaught,
                (unsigned long long)nInj, (unsigned long long)nInjSkip, zLine);
    }
    cr_expect_eq(nSetup, 0, "%llu cases were refused by parity_op_begin or the judge",
                 (unsigned long long)nSetup);
    cr_expect_eq(nFalse, 0, "%llu false failures (see stderr)", (unsigned long long)nFalse);
    cr_expect_eq(nCaught, nInj, "%llu of %llu injected errors caught",
                 (unsigned long long)nCaught, (unsigned long long)nInj);
}
