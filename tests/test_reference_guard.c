/*
 * test_reference_guard.c - guards against a toy model, for every op in parity_op_registry:
 *
 * (1) Independent reference. For each op, small random float32 operands (fixed seeds, with
 *     a few special but finite values: signed zeros, the smallest subnormal, the smallest
 *     normal, +-1, +-30, +-90) go through parity_op_begin and the op's xElement for every
 *     output element in increasing order. Each reference is compared with a straightforward
 *     MPFR evaluation written here from the op's mathematical definition (PyTorch
 *     semantics) at 256 bits (or more where the plain formula cancels), sharing no code
 *     with tolerance/: relative agreement within 2^-110, exact equality for the exact ops
 *     (relu, neg, abs, maximum, minimum, layout ops, cast against an independently rounded
 *     value, amax, amin), NaN and Inf identical. The test iterates the registry and fails
 *     for an op that has no guard here.
 * (2) Bound sensitivity. For every op whose bound depends on a length (K of the matmul
 *     family, C kH kW of conv2d, the row length of reductions, scans and normalisations, S
 *     and E of attention), the largest bound over the output grows with that length; for
 *     every op whose bound depends on the accumulation dtype, it is larger with bfloat16
 *     and float16 than with float32, and smaller with float64; exact ops have bound 0.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpfr.h>

#include "formats/capture.h"
#include "tolerance/mpref.h"
#include "tolerance/ops.h"
#include "support.h"

#define P 256                  /* precision of the evaluations written here */
#define MAXIN 5
#define MAXATTR 10

/* ---- a case: operands, attributes, output, and the parameters as this file reads them -- */

typedef struct {
    const char *zOp;
    size_t nIn;
    parity_operand aIn[MAXIN];
    parity_dtype outDt;
    int outRank;
    uint64_t aOut[PARITY_MAX_RANK];
    uint64_t nOut;
    parity_attr aAttr[MAXATTR];
    size_t nAttr;
    int64_t aIntStore[MAXATTR][8];
    double aFloatStore[MAXATTR];
    char *azStrStore[MAXATTR];
    /* parameters, the same values as the attributes */
    int dim;                       /* softmax, log_softmax, cumsum */
    unsigned char aRed[8];         /* reductions, var, logsumexp */
    int keepdim;
    double alpha, correction, eps, scale;   /* alpha: add, sub, elu */
    double beta, threshold;        /* softplus */
    double lo, hi;                 /* clamp, hardtanh: as given, -+Inf where absent */
    double exponent;               /* pow: as given */
    double fill;                   /* masked_fill's value attribute */
    int approx;                    /* gelu: 0 none, 1 tanh */
    int causal;
    int aPerm[8];                  /* transpose, permute */
    int64_t poolK, poolS, poolP, poolD;   /* max_pool2d, avg_pool2d (square) */
    int poolExcludePad;                   /* avg_pool2d: count_include_pad = 0 */
    int64_t poolDivisor;                  /* avg_pool2d: divisor_override, 0 none */
    int64_t sliceStart, sliceStep;        /* select, slice, split along dim 1 */
    int nNorm;                     /* layer_norm, rms_norm: trailing dims normalised */
    int64_t stride[2], pad[2], dil[2], groups;
} gcase;

static void gcase_init(gcase *pC, const char *zOp)
{
    memset(pC, 0, sizeof *pC);
    pC->zOp = zOp;
    pC->outDt = PARITY_DT_F32;
    pC->dim = -1;
    pC->alpha = 1.0;
    pC->beta = 1.0;
    pC->threshold = 20.0;
    pC->correction = 1.0;
    pC->eps = 1e-5;
    pC->groups = 1;
    pC->stride[0] = pC->stride[1] = 1;
    pC->dil[0] = pC->dil[1] = 1;
}

static void gcase_free(gcase *pC)
{
    size_t i;
    for (i = 0; i < pC->nIn; i++) free(pC->aIn[i].aValue);
}

static void set_out(gcase *pC, int rank, const uint64_t *aDim)
{
    int d;
    pC->outRank = rank;
    pC->nOut = 1;
    for (d = 0; d < rank; d++) {
        pC->aOut[d] = aDim[d];
        pC->nOut *= aDim[d];
    }
}

static const double kSpecial[] = {
    0.0, -0.0, 0x1p-149, -0x1p-149, 0x1p-126, -0x1p-126, 1.0, -1.0, 30.0, -30.0, 90.0, -90.0
};
#define N_SPECIAL (sizeof kSpecial / sizeof kSpecial[0])

/* An operand of float32 values uniform in [lo, hi]; with specials, the special values are
 * scattered over it (as many as fit in a quarter of the elements). */
static double *add_in(gcase *pC, parity_dtype dt, int rank, const uint64_t *aDim, uint64_t seed,
                      double lo, double hi, int withSpecial)
{
    parity_operand *p = &pC->aIn[pC->nIn++];
    uint64_t i, s = seed * 0x9E3779B97F4A7C15ull + 17, n = 1;
    int d;
    cr_assert(pC->nIn <= MAXIN);
    p->zName = "in";
    p->dtype = dt;
    p->rank = rank;
    for (d = 0; d < rank; d++) {
        p->aDim[d] = aDim[d];
        n *= aDim[d];
    }
    p->nElem = n;
    p->aValue = malloc((n ? n : 1) * sizeof(double));
    cr_assert(p->aValue);
    for (i = 0; i < n; i++) {
        double t = (double)(splitmix64(&s) >> 11) * 0x1p-53;
        p->aValue[i] = (double)(float)(lo + (hi - lo) * t);
    }
    if (withSpecial && n >= 8) {
        uint64_t nPut = n / 4 < N_SPECIAL ? n / 4 : N_SPECIAL, k;
        for (k = 0; k < nPut; k++) {
            uint64_t at = (k * 7919 + seed * 31 + (splitmix64(&s) % 5)) % n;
            p->aValue[at] = kSpecial[(k + seed) % N_SPECIAL];
        }
    }
    return p->aValue;
}

static parity_attr *new_attr(gcase *pC, const char *zName)
{
    parity_attr *a;
    cr_assert(pC->nAttr < MAXATTR);
    a = &pC->aAttr[pC->nAttr];
    memset(a, 0, sizeof *a);
    a->zName = (char *)zName;
    return a;
}

static void gc_attr_ints(gcase *pC, const char *zName, const int64_t *v, size_t n, int isArray)
{
    parity_attr *a = new_attr(pC, zName);
    memcpy(pC->aIntStore[pC->nAttr], v, n * sizeof *v);
    a->kind = PARITY_ATTR_INT;
    a->isArray = isArray;
    a->n = n;
    a->aInt = pC->aIntStore[pC->nAttr];
    pC->nAttr++;
}

static void gc_attr_int(gcase *pC, const char *zName, int64_t v)
{
    gc_attr_ints(pC, zName, &v, 1, 0);
}

static void gc_attr_float(gcase *pC, const char *zName, double v)
{
    parity_attr *a = new_attr(pC, zName);
    pC->aFloatStore[pC->nAttr] = v;
    a->kind = PARITY_ATTR_FLOAT;
    a->n = 1;
    a->aFloat = &pC->aFloatStore[pC->nAttr];
    pC->nAttr++;
}

static void gc_attr_str(gcase *pC, const char *zName, const char *zValue)
{
    parity_attr *a = new_attr(pC, zName);
    pC->azStrStore[pC->nAttr] = (char *)zValue;
    a->kind = PARITY_ATTR_STRING;
    a->n = 1;
    a->azStr = &pC->azStrStore[pC->nAttr];
    pC->nAttr++;
}

/* ---- index helpers (row-major) ------------------------------------------------------- */

static void unravel(int rank, const uint64_t *aDim, uint64_t lin, uint64_t *aIdx)
{
    int d;
    for (d = rank - 1; d >= 0; d--) {
        aIdx[d] = lin % aDim[d];
        lin /= aDim[d];
    }
}

/* Offset in operand p of the element at the index aIdx of a tensor of rank `rank` that p
 * broadcasts to (right-aligned; size-1 dims repeat). */
static uint64_t bcast_off(const parity_operand *p, int rank, const uint64_t *aIdx)
{
    uint64_t off = 0;
    int d;
    for (d = 0; d < p->rank; d++) {
        int od = rank - p->rank + d;
        off = off * p->aDim[d] + (p->aDim[d] == 1 ? 0 : aIdx[od]);
    }
    return off;
}

/* ---- the evaluations written here, at P bits ------------------------------------------- */

static int is_op(const gcase *pC, const char *z) { return strcmp(pC->zOp, z) == 0; }

static void ev_unary_one(const gcase *pC, double x, mpfr_t r)
{
    mpfr_prec_t prec = P + 64;
    mpfr_t xm, t, s;
    if (is_op(pC, "gelu") && pC->approx == 0 && x < 0) prec += (mpfr_prec_t)(0.75 * x * x);
    if (is_op(pC, "gelu") && pC->approx == 1) {
        double z = sqrt(2.0 / acos(-1.0)) * (x + 0.044715 * x * x * x);
        if (z < 0) prec += (mpfr_prec_t)(3.0 * -z) + 16;
    }
    /* 1 + e^z for z < 0 (softplus, mish) and e^x - 1 for x near 0 (elu, down to 2^-149) */
    if ((is_op(pC, "softplus") || is_op(pC, "mish")) && pC->beta * x < 0)
        prec += (mpfr_prec_t)(1.5 * fabs(pC->beta * x)) + 16;
    if (is_op(pC, "elu")) prec += 160;
    mpfr_inits2(prec, xm, t, s, (mpfr_ptr)0);
    mpfr_set_d(xm, x, MPFR_RNDN);
    if (is_op(pC, "exp")) mpfr_exp(t, xm, MPFR_RNDN);
    else if (is_op(pC, "log")) mpfr_log(t, xm, MPFR_RNDN);
    else if (is_op(pC, "sqrt")) mpfr_sqrt(t, xm, MPFR_RNDN);
    else if (is_op(pC, "rsqrt")) {                  /* 1 / sqrt(x) */
        mpfr_sqrt(s, xm, MPFR_RNDN);
        mpfr_ui_div(t, 1, s, MPFR_RNDN);
    } else if (is_op(pC, "reciprocal")) mpfr_ui_div(t, 1, xm, MPFR_RNDN);
    else if (is_op(pC, "erf")) mpfr_erf(t, xm, MPFR_RNDN);
    else if (is_op(pC, "cos")) mpfr_cos(t, xm, MPFR_RNDN);
    else if (is_op(pC, "sin")) mpfr_sin(t, xm, MPFR_RNDN);
    else if (is_op(pC, "hardsigmoid") || is_op(pC, "hardswish")) {
        /* relu6(x + 3) / 6, times x for hardswish */
        mpfr_add_ui(s, xm, 3, MPFR_RNDN);
        if (mpfr_sgn(s) < 0) mpfr_set_zero(s, 1);
        if (mpfr_cmp_ui(s, 6) > 0) mpfr_set_ui(s, 6, MPFR_RNDN);
        mpfr_div_ui(t, s, 6, MPFR_RNDN);
        if (is_op(pC, "hardswish")) mpfr_mul(t, t, xm, MPFR_RNDN);
    }
    else if (is_op(pC, "tanh")) mpfr_tanh(t, xm, MPFR_RNDN);
    else if (is_op(pC, "neg")) mpfr_neg(t, xm, MPFR_RNDN);
    else if (is_op(pC, "abs")) mpfr_abs(t, xm, MPFR_RNDN);
    else if (is_op(pC, "softplus") || is_op(pC, "mish")) {
        /* softplus: x where beta x > threshold, else log(1 + e^(beta x)) / beta;
         * mish: x tanh(log(1 + e^x)) */
        mpfr_mul_d(s, xm, pC->beta, MPFR_RNDN);
        mpfr_exp(s, s, MPFR_RNDN);
        mpfr_add_ui(s, s, 1, MPFR_RNDN);
        mpfr_log(s, s, MPFR_RNDN);
        if (is_op(pC, "mish")) {
            mpfr_tanh(s, s, MPFR_RNDN);
            mpfr_mul(t, s, xm, MPFR_RNDN);
        } else if (pC->beta * x > pC->threshold) {
            mpfr_set(t, xm, MPFR_RNDN);
        } else {
            mpfr_div_d(t, s, pC->beta, MPFR_RNDN);
        }
    } else if (is_op(pC, "elu")) {     /* x > 0 ? x : alpha (e^x - 1) */
        mpfr_exp(s, xm, MPFR_RNDN);
        mpfr_sub_ui(s, s, 1, MPFR_RNDN);
        mpfr_mul_d(s, s, pC->alpha, MPFR_RNDN);
        mpfr_set(t, x > 0 ? xm : s, MPFR_RNDN);
    }
    else if (is_op(pC, "sigmoid") || is_op(pC, "silu")) {   /* x^? / (1 + e^-x) */
        mpfr_neg(s, xm, MPFR_RNDN);
        mpfr_exp(s, s, MPFR_RNDN);
        mpfr_add_ui(s, s, 1, MPFR_RNDN);
        mpfr_ui_div(t, 1, s, MPFR_RNDN);
        if (is_op(pC, "silu")) mpfr_mul(t, t, xm, MPFR_RNDN);
    } else if (is_op(pC, "gelu") && pC->approx == 0) {     /* x/2 (1 + erf(x / sqrt 2)) */
        mpfr_sqrt_ui(s, 2, MPFR_RNDN);
        mpfr_div(s, xm, s, MPFR_RNDN);
        mpfr_erf(s, s, MPFR_RNDN);
        mpfr_add_ui(s, s, 1, MPFR_RNDN);
        mpfr_mul(t, s, xm, MPFR_RNDN);
        mpfr_div_2ui(t, t, 1, MPFR_RNDN);
    } else if (is_op(pC, "gelu")) {    /* x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
        mpfr_t k;
        mpfr_init2(k, prec);
        mpfr_set_str(k, "0.044715", 10, MPFR_RNDN);
        mpfr_mul(s, xm, xm, MPFR_RNDN);
        mpfr_mul(s, s, xm, MPFR_RNDN);
        mpfr_mul(s, s, k, MPFR_RNDN);
        mpfr_add(s, s, xm, MPFR_RNDN);
        mpfr_const_pi(k, MPFR_RNDN);
        mpfr_ui_div(k, 2, k, MPFR_RNDN);
        mpfr_sqrt(k, k, MPFR_RNDN);
        mpfr_mul(s, s, k, MPFR_RNDN);
        mpfr_tanh(s, s, MPFR_RNDN);
        mpfr_add_ui(s, s, 1, MPFR_RNDN);
        mpfr_mul(t, s, xm, MPFR_RNDN);
        mpfr_div_2ui(t, t, 1, MPFR_RNDN);
        mpfr_clear(k);
    } else cr_assert_fail("no unary evaluation for %s", pC->zOp);
    mpfr_set(r, t, MPFR_RNDN);
    mpfr_clears(xm, t, s, (mpfr_ptr)0);
}

static void ev_elementwise(const gcase *pC, mpfr_t *aM)
{
    uint64_t i, aIdx[PARITY_MAX_RANK];
    mpfr_t t;
    mpfr_init2(t, P);
    for (i = 0; i < pC->nOut; i++) {
        if (pC->nIn == 1) {
            double x = pC->aIn[0].aValue[i];
            if (is_op(pC, "relu")) mpfr_set_d(aM[i], x > 0 ? x : 0.0, MPFR_RNDN);
            else ev_unary_one(pC, x, aM[i]);
            continue;
        }
        unravel(pC->outRank, pC->aOut, i, aIdx);
        {
            double x = pC->aIn[0].aValue[bcast_off(&pC->aIn[0], pC->outRank, aIdx)];
            double y = pC->aIn[1].aValue[bcast_off(&pC->aIn[1], pC->outRank, aIdx)];
            mpfr_set_d(aM[i], x, MPFR_RNDN);
            mpfr_set_d(t, y, MPFR_RNDN);
            if (is_op(pC, "add") || is_op(pC, "sub")) {
                mpfr_mul_d(t, t, pC->alpha, MPFR_RNDN);
                if (is_op(pC, "add")) mpfr_add(aM[i], aM[i], t, MPFR_RNDN);
                else mpfr_sub(aM[i], aM[i], t, MPFR_RNDN);
            } else if (is_op(pC, "mul")) mpfr_mul(aM[i], aM[i], t, MPFR_RNDN);
            else if (is_op(pC, "div")) mpfr_div(aM[i], aM[i], t, MPFR_RNDN);
            else if (is_op(pC, "maximum")) mpfr_set_d(aM[i], x >= y ? x : y, MPFR_RNDN);
            else if (is_op(pC, "minimum")) mpfr_set_d(aM[i], x <= y ? x : y, MPFR_RNDN);
            else cr_assert_fail("no binary evaluation for %s", pC->zOp);
        }
    }
    mpfr_clear(t);
}

/* matmul / bmm (torch.matmul semantics) and linear. */
static void ev_matmul(const gcase *pC, mpfr_t *aM)
{
    const parity_operand *A = &pC->aIn[0], *B = &pC->aIn[1];
    uint64_t M, K, N, i, aBatch[PARITY_MAX_RANK], aIdx[PARITY_MAX_RANK], nBatchElem = 1;
    int nbA, nbB, nb, d;
    mpfr_t t;
    mpfr_init2(t, P);
    if (is_op(pC, "linear")) {
        K = B->aDim[1];
        N = B->aDim[0];
        for (i = 0; i < pC->nOut; i++) {
            uint64_t r = i / N, j = i % N, k;
            mpfr_set_zero(aM[i], 1);
            for (k = 0; k < K; k++) {
                mpfr_set_d(t, A->aValue[r * K + k], MPFR_RNDN);
                mpfr_mul_d(t, t, B->aValue[j * K + k], MPFR_RNDN);
                mpfr_add(aM[i], aM[i], t, MPFR_RNDN);
            }
            if (pC->nIn == 3) mpfr_add_d(aM[i], aM[i], pC->aIn[2].aValue[j], MPFR_RNDN);
        }
        mpfr_clear(t);
        return;
    }
    M = A->rank == 1 ? 1 : A->aDim[A->rank - 2];
    K = A->aDim[A->rank - 1];
    N = B->rank == 1 ? 1 : B->aDim[B->rank - 1];
    nbA = A->rank >= 2 ? A->rank - 2 : 0;
    nbB = B->rank >= 2 ? B->rank - 2 : 0;
    nb = nbA > nbB ? nbA : nbB;
    for (d = 0; d < nb; d++) {
        int iA = nbA - nb + d, iB = nbB - nb + d;
        uint64_t a = iA >= 0 ? A->aDim[iA] : 1, b = iB >= 0 ? B->aDim[iB] : 1;
        aBatch[d] = a > b ? a : b;
        nBatchElem *= aBatch[d];
    }
    cr_assert_eq(nBatchElem * M * N, pC->nOut);
    for (i = 0; i < pC->nOut; i++) {
        uint64_t j = i % N, r = (i / N) % M, bl = i / (M * N), offA = 0, offB = 0, k;
        unravel(nb, aBatch, bl, aIdx);
        for (d = 0; d < nbA; d++)
            offA = offA * A->aDim[d] + (A->aDim[d] == 1 ? 0 : aIdx[nb - nbA + d]);
        for (d = 0; d < nbB; d++)
            offB = offB * B->aDim[d] + (B->aDim[d] == 1 ? 0 : aIdx[nb - nbB + d]);
        offA *= M * K;
        offB *= K * N;
        mpfr_set_zero(aM[i], 1);
        for (k = 0; k < K; k++) {
            mpfr_set_d(t, A->aValue[offA + r * K + k], MPFR_RNDN);
            mpfr_mul_d(t, t, B->aValue[offB + k * N + j], MPFR_RNDN);
            mpfr_add(aM[i], aM[i], t, MPFR_RNDN);
        }
    }
    mpfr_clear(t);
}

/* out = softmax(scale q k^T + mask) v, masked (causal j > l, False, -Inf) entries weight 0;
 * a row with nothing left is NaN. */
static void ev_sdpa(const gcase *pC, mpfr_t *aM)
{
    const parity_operand *Q = &pC->aIn[0], *Kt = &pC->aIn[1], *V = &pC->aIn[2];
    const parity_operand *pMask = pC->nIn == 4 ? &pC->aIn[3] : NULL;
    int rank = pC->outRank, nb = rank - 2, d;
    uint64_t L = pC->aOut[rank - 2], Ev = pC->aOut[rank - 1], E = Q->aDim[Q->rank - 1];
    uint64_t S = Kt->aDim[Kt->rank - 2], nRow = pC->nOut / Ev, row, j, c, e;
    uint64_t aIdx[PARITY_MAX_RANK + 2];
    mpfr_t *aS = malloc(S * sizeof(mpfr_t)), m, den, t, num;
    unsigned char *aLive = malloc(S);
    double scale = pC->scale;
    cr_assert(aS && aLive);
    for (j = 0; j < S; j++) mpfr_init2(aS[j], P);
    mpfr_inits2(P, m, den, t, num, (mpfr_ptr)0);
    for (row = 0; row < nRow; row++) {
        uint64_t l = row % L, offQ, offK, offV;
        int any = 0;
        unravel(nb, pC->aOut, row / L, aIdx);
        aIdx[nb] = l;
        aIdx[nb + 1] = 0;
        /* batch offsets of q, k, v: broadcast over the batch dims only */
        offQ = offK = offV = 0;
        for (d = 0; d < Q->rank - 2; d++)
            offQ = offQ * Q->aDim[d] + (Q->aDim[d] == 1 ? 0 : aIdx[nb - (Q->rank - 2) + d]);
        for (d = 0; d < Kt->rank - 2; d++)
            offK = offK * Kt->aDim[d] + (Kt->aDim[d] == 1 ? 0 : aIdx[nb - (Kt->rank - 2) + d]);
        for (d = 0; d < V->rank - 2; d++)
            offV = offV * V->aDim[d] + (V->aDim[d] == 1 ? 0 : aIdx[nb - (V->rank - 2) + d]);
        offQ = offQ * L * E + l * E;
        offK *= S * E;
        offV *= S * Ev;
        for (j = 0; j < S; j++) {
            aLive[j] = 0;
            if (pC->causal && j > l) continue;
            mpfr_set_zero(aS[j], 1);
            for (e = 0; e < E; e++) {
                mpfr_set_d(t, Q->aValue[offQ + e], MPFR_RNDN);
                mpfr_mul_d(t, t, Kt->aValue[offK + j * E + e], MPFR_RNDN);
                mpfr_add(aS[j], aS[j], t, MPFR_RNDN);
            }
            mpfr_mul_d(aS[j], aS[j], scale, MPFR_RNDN);
            if (pMask) {
                double mv;
                aIdx[nb + 1] = j;
                mv = pMask->aValue[bcast_off(pMask, nb + 2, aIdx)];
                if (pMask->dtype == PARITY_DT_BOOL) {
                    if (mv == 0.0) continue;
                } else {
                    mpfr_add_d(aS[j], aS[j], mv, MPFR_RNDN);
                    if (mpfr_inf_p(aS[j])) continue;   /* -Inf: masked */
                }
            }
            aLive[j] = 1;
            if (!any || mpfr_cmp(aS[j], m) > 0) mpfr_set(m, aS[j], MPFR_RNDN);
            any = 1;
        }
        for (c = 0; c < Ev; c++) {
            mpfr_ptr out = aM[row * Ev + c];
            if (!any) { mpfr_set_nan(out); continue; }
            mpfr_set_zero(den, 1);
            mpfr_set_zero(num, 1);
            for (j = 0; j < S; j++) {
                if (!aLive[j]) continue;
                mpfr_sub(t, aS[j], m, MPFR_RNDN);
                mpfr_exp(t, t, MPFR_RNDN);
                mpfr_add(den, den, t, MPFR_RNDN);
                mpfr_mul_d(t, t, V->aValue[offV + j * Ev + c], MPFR_RNDN);
                mpfr_add(num, num, t, MPFR_RNDN);
            }
            mpfr_div(out, num, den, MPFR_RNDN);
        }
    }
    for (j = 0; j < S; j++) mpfr_clear(aS[j]);
    mpfr_clears(m, den, t, num, (mpfr_ptr)0);
    free(aS);
    free(aLive);
}

/* conv2d with zero padding pad[] before and after (pad[] already resolved for "same"). */
static void ev_conv2d(const gcase *pC, mpfr_t *aM)
{
    const parity_operand *X = &pC->aIn[0], *W = &pC->aIn[1];
    int batched = X->rank == 4;
    uint64_t C = X->aDim[batched], H = X->aDim[batched + 1], Wd = X->aDim[batched + 2];
    uint64_t O = W->aDim[0], Cg = W->aDim[1], kH = W->aDim[2], kW = W->aDim[3];
    uint64_t Ho = pC->aOut[pC->outRank - 2], Wo = pC->aOut[pC->outRank - 1], i;
    uint64_t Og = O / (uint64_t)pC->groups;
    mpfr_t t;
    mpfr_init2(t, P);
    for (i = 0; i < pC->nOut; i++) {
        uint64_t ox = i % Wo, oy = (i / Wo) % Ho, o = (i / (Wo * Ho)) % O, n = i / (Wo * Ho * O);
        uint64_t g = o / Og, c, a, b;
        mpfr_set_zero(aM[i], 1);
        for (c = 0; c < Cg; c++)
            for (a = 0; a < kH; a++)
                for (b = 0; b < kW; b++) {
                    int64_t y = (int64_t)oy * pC->stride[0] - pC->pad[0] + (int64_t)a * pC->dil[0];
                    int64_t x = (int64_t)ox * pC->stride[1] - pC->pad[1] + (int64_t)b * pC->dil[1];
                    if (y < 0 || x < 0 || y >= (int64_t)H || x >= (int64_t)Wd) continue;
                    mpfr_set_d(t, X->aValue[((n * C + g * Cg + c) * H + (uint64_t)y) * Wd + (uint64_t)x],
                               MPFR_RNDN);
                    mpfr_mul_d(t, t, W->aValue[((o * Cg + c) * kH + a) * kW + b], MPFR_RNDN);
                    mpfr_add(aM[i], aM[i], t, MPFR_RNDN);
                }
        if (pC->nIn == 3) mpfr_add_d(aM[i], aM[i], pC->aIn[2].aValue[o], MPFR_RNDN);
    }
    mpfr_clear(t);
}

/* transpose / permute (aPerm: output dim d is input dim aPerm[d]) and reshape. */
static void ev_layout(const gcase *pC, mpfr_t *aM)
{
    const parity_operand *X = &pC->aIn[0];
    uint64_t i, aIdx[PARITY_MAX_RANK], aIn[PARITY_MAX_RANK], off;
    int d;
    for (i = 0; i < pC->nOut; i++) {
        if (is_op(pC, "reshape")) { mpfr_set_d(aM[i], X->aValue[i], MPFR_RNDN); continue; }
        unravel(pC->outRank, pC->aOut, i, aIdx);
        for (d = 0; d < X->rank; d++) aIn[pC->aPerm[d]] = aIdx[d];
        off = 0;
        for (d = 0; d < X->rank; d++) off = off * X->aDim[d] + aIn[d];
        mpfr_set_d(aM[i], X->aValue[off], MPFR_RNDN);
    }
}

/* float -> float16 by the compiler's conversion, float -> bfloat16 by rounding the float's
 * bits to nearest even: both independent of MPFR. */
static double to_bf16(float f)
{
    uint32_t b, r;
    float g;
    memcpy(&b, &f, 4);
    r = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
    memcpy(&g, &r, 4);
    return (double)g;
}

static void ev_cast(const gcase *pC, mpfr_t *aM)
{
    uint64_t i;
    for (i = 0; i < pC->nOut; i++) {
        float f = (float)pC->aIn[0].aValue[i];
        double y = pC->outDt == PARITY_DT_F16 ? (double)(_Float16)f
                 : pC->outDt == PARITY_DT_BF16 ? to_bf16(f) : (double)f;
        mpfr_set_d(aM[i], y, MPFR_RNDN);
    }
}

/* Rows along one dim: element k of row (outer, inner) is at (outer * n + k) * inner + inner. */
static void row_geom(const gcase *pC, uint64_t *pN, uint64_t *pInner, uint64_t *pRows)
{
    const parity_operand *X = &pC->aIn[0];
    int dim = pC->dim < 0 ? pC->dim + X->rank : pC->dim, d;
    *pN = X->aDim[dim];
    *pInner = 1;
    for (d = dim + 1; d < X->rank; d++) *pInner *= X->aDim[d];
    *pRows = X->nElem / *pN;
}

static void ev_rowwise(const gcase *pC, mpfr_t *aM)
{
    const double *x = pC->aIn[0].aValue;
    uint64_t n, inner, nRows, r, k;
    mpfr_t m, s, t;
    mpfr_inits2(P, m, s, t, (mpfr_ptr)0);
    row_geom(pC, &n, &inner, &nRows);
    for (r = 0; r < nRows; r++) {
        uint64_t base = (r / inner) * n * inner + r % inner;
        double mx = -INFINITY;
        if (is_op(pC, "cumsum")) {
            mpfr_set_zero(s, 1);
            for (k = 0; k < n; k++) {
                mpfr_add_d(s, s, x[base + k * inner], MPFR_RNDN);
                mpfr_set(aM[base + k * inner], s, MPFR_RNDN);
            }
            continue;
        }
        for (k = 0; k < n; k++) mx = fmax(mx, x[base + k * inner]);
        mpfr_set_d(m, mx, MPFR_RNDN);
        mpfr_set_zero(s, 1);
        for (k = 0; k < n; k++) {                  /* sum exp(x_j - max) */
            mpfr_set_d(t, x[base + k * inner], MPFR_RNDN);
            mpfr_sub(t, t, m, MPFR_RNDN);
            mpfr_exp(t, t, MPFR_RNDN);
            mpfr_add(s, s, t, MPFR_RNDN);
        }
        for (k = 0; k < n; k++) {
            mpfr_ptr y = aM[base + k * inner];
            mpfr_set_d(t, x[base + k * inner], MPFR_RNDN);
            mpfr_sub(t, t, m, MPFR_RNDN);
            if (is_op(pC, "softmax")) {
                mpfr_exp(t, t, MPFR_RNDN);
                mpfr_div(y, t, s, MPFR_RNDN);
            } else {                                 /* log_softmax */
                mpfr_log(y, s, MPFR_RNDN);
                mpfr_sub(y, t, y, MPFR_RNDN);
            }
        }
    }
    mpfr_clears(m, s, t, (mpfr_ptr)0);
}

/* sum, mean, amax, amin, var, logsumexp over the dims flagged in aRed. */
static void ev_reduce(const gcase *pC, mpfr_t *aM)
{
    const parity_operand *X = &pC->aIn[0];
    uint64_t i, o, aIdx[PARITY_MAX_RANK], nOut = pC->nOut, n = 1;
    uint64_t *aOutOf = malloc(X->nElem * sizeof(uint64_t));
    mpfr_t *aA = malloc(nOut * sizeof(mpfr_t)), t;
    double *aExt = malloc(nOut * sizeof(double));
    int d;
    cr_assert(aOutOf && aA && aExt);
    for (d = 0; d < X->rank; d++) if (pC->aRed[d]) n *= X->aDim[d];
    for (i = 0; i < X->nElem; i++) {            /* output element of each input element */
        unravel(X->rank, X->aDim, i, aIdx);
        o = 0;
        for (d = 0; d < X->rank; d++)
            if (!pC->aRed[d]) o = o * X->aDim[d] + aIdx[d];
        aOutOf[i] = o;
    }
    mpfr_init2(t, P);
    for (o = 0; o < nOut; o++) {
        mpfr_init2(aA[o], P);
        mpfr_set_zero(aA[o], 1);
        aExt[o] = NAN;
    }
    for (i = 0; i < X->nElem; i++) {
        double v = X->aValue[i];
        o = aOutOf[i];
        if (aExt[o] != aExt[o]) aExt[o] = v;
        else if (is_op(pC, "amin") ? v < aExt[o] : v > aExt[o]) aExt[o] = v;
        mpfr_add_d(aA[o], aA[o], v, MPFR_RNDN);
    }
    if (is_op(pC, "amax") || is_op(pC, "amin")) {
        for (o = 0; o < nOut; o++) mpfr_set_d(aM[o], aExt[o], MPFR_RNDN);
    } else if (is_op(pC, "sum")) {
        for (o = 0; o < nOut; o++) mpfr_set(aM[o], aA[o], MPFR_RNDN);
    } else if (is_op(pC, "mean")) {
        for (o = 0; o < nOut; o++) mpfr_div_ui(aM[o], aA[o], (unsigned long)n, MPFR_RNDN);
    } else if (is_op(pC, "var")) {
        /* mean, then sum (x - mean)^2, then / max(n - correction, 0) */
        for (o = 0; o < nOut; o++) {
            mpfr_div_ui(aA[o], aA[o], (unsigned long)n, MPFR_RNDN);
            mpfr_set_zero(aM[o], 1);
        }
        for (i = 0; i < X->nElem; i++) {
            o = aOutOf[i];
            mpfr_set_d(t, X->aValue[i], MPFR_RNDN);
            mpfr_sub(t, t, aA[o], MPFR_RNDN);
            mpfr_sqr(t, t, MPFR_RNDN);
            mpfr_add(aM[o], aM[o], t, MPFR_RNDN);
        }
        for (o = 0; o < nOut; o++) {
            double D = (double)n - pC->correction;
            mpfr_set_d(t, D > 0 ? D : 0.0, MPFR_RNDN);
            mpfr_div(aM[o], aM[o], t, MPFR_RNDN);    /* M2 / 0: +Inf, 0 / 0: NaN */
        }
    } else if (is_op(pC, "logsumexp")) {
        /* max + log sum exp(x - max) */
        for (o = 0; o < nOut; o++) mpfr_set_zero(aA[o], 1);
        for (i = 0; i < X->nElem; i++) {
            o = aOutOf[i];
            mpfr_set_d(t, X->aValue[i] - 0.0, MPFR_RNDN);
            mpfr_sub_d(t, t, aExt[o], MPFR_RNDN);
            mpfr_exp(t, t, MPFR_RNDN);
            mpfr_add(aA[o], aA[o], t, MPFR_RNDN);
        }
        for (o = 0; o < nOut; o++) {
            mpfr_log(aM[o], aA[o], MPFR_RNDN);
            mpfr_add_d(aM[o], aM[o], aExt[o], MPFR_RNDN);
        }
    } else cr_assert_fail("no reduction evaluation for %s", pC->zOp);
    for (o = 0; o < nOut; o++) mpfr_clear(aA[o]);
    mpfr_clear(t);
    free(aA);
    free(aExt);
    free(aOutOf);
}

/* layer_norm: (x - mu) / sqrt(var + eps) * w + b, biased var; rms_norm: x / sqrt(mean x^2
 * + eps) * w; over the last nNorm dims. */
static void ev_norm(const gcase *pC, mpfr_t *aM)
{
    const parity_operand *X = &pC->aIn[0];
    const double *w = pC->nIn >= 2 ? pC->aIn[1].aValue : NULL;
    const double *b = pC->nIn >= 3 ? pC->aIn[2].aValue : NULL;
    uint64_t n = 1, r, k;
    int d, isLn = is_op(pC, "layer_norm");
    mpfr_t mu, v, t;
    for (d = X->rank - pC->nNorm; d < X->rank; d++) n *= X->aDim[d];
    mpfr_inits2(P, mu, v, t, (mpfr_ptr)0);
    for (r = 0; r < X->nElem / n; r++) {
        const double *x = X->aValue + r * n;
        mpfr_set_zero(mu, 1);
        if (isLn) {
            for (k = 0; k < n; k++) mpfr_add_d(mu, mu, x[k], MPFR_RNDN);
            mpfr_div_ui(mu, mu, (unsigned long)n, MPFR_RNDN);
        }
        mpfr_set_zero(v, 1);
        for (k = 0; k < n; k++) {
            mpfr_set_d(t, x[k], MPFR_RNDN);
            mpfr_sub(t, t, mu, MPFR_RNDN);
            mpfr_sqr(t, t, MPFR_RNDN);
            mpfr_add(v, v, t, MPFR_RNDN);
        }
        mpfr_div_ui(v, v, (unsigned long)n, MPFR_RNDN);
        mpfr_add_d(v, v, pC->eps, MPFR_RNDN);
        mpfr_sqrt(v, v, MPFR_RNDN);
        for (k = 0; k < n; k++) {
            mpfr_ptr y = aM[r * n + k];
            mpfr_set_d(t, x[k], MPFR_RNDN);
            mpfr_sub(t, t, mu, MPFR_RNDN);
            mpfr_div(y, t, v, MPFR_RNDN);
            if (w) mpfr_mul_d(y, y, w[k], MPFR_RNDN);
            if (b) mpfr_add_d(y, y, b[k], MPFR_RNDN);
        }
    }
    mpfr_clears(mu, v, t, (mpfr_ptr)0);
}

/* batch_norm in inference: (x - m_c) / sqrt(v_c + eps) * w_c + b_c over channel dim 1,
 * with eps as a float32 kernel has it (the op's definition: torch casts its double eps). */
static void ev_batch_norm(const gcase *pC, mpfr_t *aM)
{
    const parity_operand *X = &pC->aIn[0];
    int affine = pC->nIn == 5;
    const double *m = pC->aIn[affine ? 3 : 1].aValue, *v = pC->aIn[affine ? 4 : 2].aValue;
    uint64_t S = 1, C = X->aDim[1], i;
    int d;
    mpfr_t s;
    for (d = 2; d < X->rank; d++) S *= X->aDim[d];
    mpfr_init2(s, P);
    for (i = 0; i < X->nElem; i++) {
        uint64_t c = (i / S) % C;
        mpfr_set_d(s, v[c], MPFR_RNDN);
        mpfr_add_d(s, s, (double)(float)pC->eps, MPFR_RNDN);
        mpfr_sqrt(s, s, MPFR_RNDN);
        mpfr_set_d(aM[i], X->aValue[i], MPFR_RNDN);
        mpfr_sub_d(aM[i], aM[i], m[c], MPFR_RNDN);
        mpfr_div(aM[i], aM[i], s, MPFR_RNDN);
        if (affine) {
            mpfr_mul_d(aM[i], aM[i], pC->aIn[1].aValue[c], MPFR_RNDN);
            mpfr_add_d(aM[i], aM[i], pC->aIn[2].aValue[c], MPFR_RNDN);
        }
    }
    mpfr_clear(s);
}

/* max_pool2d over x [N, C, H, W] with this case's kernel k, stride s, padding p and
 * dilation d (square): the largest tap inside the input, NaN if one is NaN. */
static void ev_max_pool2d(const gcase *pC, mpfr_t *aM)
{
    const parity_operand *X = &pC->aIn[0];
    uint64_t H = X->aDim[2], W = X->aDim[3], Ho = pC->aOut[2], Wo = pC->aOut[3], o;
    int64_t k = pC->poolK, s = pC->poolS, p = pC->poolP, d = pC->poolD;
    for (o = 0; o < pC->nOut; o++) {
        uint64_t ox = o % Wo, oy = (o / Wo) % Ho, plane = o / (Wo * Ho);
        double m = -INFINITY;
        int nan = 0;
        int64_t i, j;
        for (i = 0; i < k; i++)
            for (j = 0; j < k; j++) {
                int64_t y = (int64_t)oy * s - p + i * d, x = (int64_t)ox * s - p + j * d;
                double v;
                if (y < 0 || x < 0 || y >= (int64_t)H || x >= (int64_t)W) continue;
                v = X->aValue[plane * H * W + (uint64_t)y * W + (uint64_t)x];
                if (isnan(v)) nan = 1;
                else if (v > m) m = v;
            }
        mpfr_set_d(aM[o], nan ? NAN : m, MPFR_RNDN);
    }
}

/* avg_pool2d over x [N, C, H, W] or [C, H, W], square kernel k, stride s, padding p, and
 * adaptive_avg_pool2d (the output's shape its output_size): the exact sum of the window's
 * taps inside the input over the divisor, here counted tap by tap: divisor_override, else
 * with count_include_pad the kernel's taps at rows and columns < H + p (torch's window
 * clipped to the padded input), else the taps inside; adaptive: rows
 * floor(i H / Ho) .. ceil((i + 1) H / Ho) - 1 (in doubles: small integers are exact). */
static void ev_avg_pool2d(const gcase *pC, mpfr_t *aM)
{
    const parity_operand *X = &pC->aIn[0];
    int r = X->rank, adaptive = is_op(pC, "adaptive_avg_pool2d");
    uint64_t H = X->aDim[r - 2], W = X->aDim[r - 1], Ho = pC->aOut[r - 2], Wo = pC->aOut[r - 1], o;
    int64_t k = pC->poolK, s = pC->poolS, p = pC->poolP;
    for (o = 0; o < pC->nOut; o++) {
        uint64_t ox = o % Wo, oy = (o / Wo) % Ho, plane = o / (Wo * Ho);
        int64_t y, x, yLo, yHi, xLo, xHi, nIn = 0, nPadded = 0, div;
        mpfr_set_zero(aM[o], 1);
        if (adaptive) {
            yLo = (int64_t)floor((double)(oy * H) / (double)Ho);
            yHi = (int64_t)ceil((double)((oy + 1) * H) / (double)Ho);
            xLo = (int64_t)floor((double)(ox * W) / (double)Wo);
            xHi = (int64_t)ceil((double)((ox + 1) * W) / (double)Wo);
        } else {
            yLo = (int64_t)oy * s - p; yHi = yLo + k;
            xLo = (int64_t)ox * s - p; xHi = xLo + k;
        }
        for (y = yLo; y < yHi; y++)
            for (x = xLo; x < xHi; x++) {
                if (y < (int64_t)H + p && x < (int64_t)W + p) nPadded++;
                if (y < 0 || x < 0 || y >= (int64_t)H || x >= (int64_t)W) continue;
                nIn++;
                mpfr_add_d(aM[o], aM[o], X->aValue[plane * H * W + (uint64_t)y * W + (uint64_t)x],
                           MPFR_RNDN);
            }
        div = adaptive ? nIn : pC->poolDivisor ? pC->poolDivisor
                             : pC->poolExcludePad ? nIn : nPadded;
        mpfr_div_si(aM[o], aM[o], (long)div, MPFR_RNDN);
    }
}

/* select / slice / split (first output) of a [A, B, C] input along dim 1: output
 * (a, i, c) is input (a, start + i step, c); select drops the dim. */
static void ev_slice(const gcase *pC, mpfr_t *aM)
{
    const parity_operand *X = &pC->aIn[0];
    uint64_t A = X->aDim[0], B = X->aDim[1], C = X->aDim[2], count, a, i, c, n = 0;
    count = is_op(pC, "select") ? 1 : pC->nOut / (A * C);
    for (a = 0; a < A; a++)
        for (i = 0; i < count; i++)
            for (c = 0; c < C; c++) {
                uint64_t b = (uint64_t)pC->sliceStart + i * (uint64_t)pC->sliceStep;
                mpfr_set_d(aM[n++], X->aValue[(a * B + b) * C + c], MPFR_RNDN);
            }
}

/* embedding: output row r is weight row indices[r]; an index that is no integer in
 * [0, V) gives NaN. */
static void ev_embedding(const gcase *pC, mpfr_t *aM)
{
    const parity_operand *W = &pC->aIn[0], *I = &pC->aIn[1];
    uint64_t V = W->aDim[0], D = W->aDim[1], r, j;
    for (r = 0; r < I->nElem; r++) {
        double ix = I->aValue[r];
        int ok = ix >= 0 && ix < (double)V && ix == (double)(int64_t)ix;
        for (j = 0; j < D; j++)
            mpfr_set_d(aM[r * D + j], ok ? W->aValue[(uint64_t)ix * D + j] : NAN, MPFR_RNDN);
    }
}

/* cat along dim 1 of inputs [A, B_k, C]; stack of inputs [A, C] along a new dim 1;
 * expand of x [B, 1] to [A, B, C] (a new leading dim, the 1 repeated). Written as loops
 * over the output, each element copied from the input it comes from. */
static void ev_concat(const gcase *pC, mpfr_t *aM)
{
    uint64_t n = 0, a, b, c, k;
    if (is_op(pC, "expand")) {
        const parity_operand *X = &pC->aIn[0];
        for (a = 0; a < pC->aOut[0]; a++)
            for (b = 0; b < pC->aOut[1]; b++)
                for (c = 0; c < pC->aOut[2]; c++)
                    mpfr_set_d(aM[n++], X->aValue[b], MPFR_RNDN);
        return;
    }
    for (a = 0; a < pC->aOut[0]; a++)
        for (k = 0; k < pC->nIn; k++) {
            const parity_operand *X = &pC->aIn[k];
            uint64_t B = is_op(pC, "stack") ? 1 : X->aDim[1], C = X->aDim[X->rank - 1];
            for (b = 0; b < B; b++)
                for (c = 0; c < C; c++)
                    mpfr_set_d(aM[n++], X->aValue[(a * B + b) * C + c], MPFR_RNDN);
        }
}

/* addmm / baddbmm: beta c + alpha (a b) over [B?, M, K] x [B?, K, N], c of the output's
 * shape or [N] (attributes alpha and beta as gcase's alpha and beta); beta 0 drops c. */
static void ev_addmm(const gcase *pC, mpfr_t *aM)
{
    const parity_operand *Cc = &pC->aIn[0], *A = &pC->aIn[1], *B = &pC->aIn[2];
    int r = A->rank;
    uint64_t nMat = r == 3 ? A->aDim[0] : 1, M = A->aDim[r - 2], K = A->aDim[r - 1];
    uint64_t N = B->aDim[r - 1], m, i, j, k, n = 0;
    mpfr_t t;
    mpfr_init2(t, P);
    for (m = 0; m < nMat; m++)
        for (i = 0; i < M; i++)
            for (j = 0; j < N; j++, n++) {
                mpfr_set_zero(aM[n], 1);
                for (k = 0; k < K; k++) {
                    mpfr_set_d(t, A->aValue[(m * M + i) * K + k], MPFR_RNDN);
                    mpfr_mul_d(t, t, B->aValue[(m * K + k) * N + j], MPFR_RNDN);
                    mpfr_add(aM[n], aM[n], t, MPFR_RNDN);
                }
                mpfr_mul_d(aM[n], aM[n], pC->alpha, MPFR_RNDN);
                if (pC->beta != 0.0) {
                    mpfr_set_d(t, Cc->aValue[Cc->nElem == N ? j : n], MPFR_RNDN);
                    mpfr_mul_d(t, t, pC->beta, MPFR_RNDN);
                    mpfr_add(aM[n], aM[n], t, MPFR_RNDN);
                }
            }
    mpfr_clear(t);
}

/* clamp and hardtanh: NaN stays NaN; else max with the low bound, then min with the high
 * one (so a low bound above the high one gives the high one), the bounds rounded to
 * float32 (the guard's inputs are float32) as torch casts a Scalar to the tensor's type. */
static void ev_clamp(const gcase *pC, mpfr_t *aM)
{
    double lo = (double)(float)pC->lo, hi = (double)(float)pC->hi;
    uint64_t i;
    for (i = 0; i < pC->nOut; i++) {
        double x = pC->aIn[0].aValue[i], r = x;
        if (x == x) {
            if (r < lo) r = lo;
            if (r > hi) r = hi;
        }
        mpfr_set_d(aM[i], r, MPFR_RNDN);
    }
}

/* pow(x, e) with e rounded to float32 (torch's cast): C99's pow (mpfr_pow's special values,
 * Annex F.9.4.4) except e = 0.5 and -0.5, which torch computes as sqrt(x) and 1 / sqrt(x):
 * there -0 gives -0 and -Inf, and -Inf gives NaN. */
static void ev_pow(const gcase *pC, mpfr_t *aM)
{
    double e = (double)(float)pC->exponent;
    uint64_t i;
    mpfr_t xm, em;
    mpfr_inits2(P, xm, em, (mpfr_ptr)0);
    mpfr_set_d(em, e, MPFR_RNDN);
    for (i = 0; i < pC->nOut; i++) {
        double x = pC->aIn[0].aValue[i];
        mpfr_set_d(xm, x, MPFR_RNDN);
        if (e == 0.5 || e == -0.5) {
            mpfr_sqrt(aM[i], xm, MPFR_RNDN);             /* sqrt(-0) = -0, sqrt(-Inf) NaN */
            if (e < 0) mpfr_ui_div(aM[i], 1, aM[i], MPFR_RNDN);   /* 1 / -0 = -Inf */
        } else {
            mpfr_pow(aM[i], xm, em, MPFR_RNDN);
        }
    }
    mpfr_clears(xm, em, (mpfr_ptr)0);
}

/* where(cond, x, y): cond ? x : y; masked_fill(x, mask, value): mask ? value : x, the value
 * an attribute rounded to float32 or a 0-d input 2; every operand broadcast to the
 * output. */
static void ev_where(const gcase *pC, mpfr_t *aM)
{
    int isWhere = is_op(pC, "where");
    const parity_operand *C = &pC->aIn[isWhere ? 0 : 1], *X = &pC->aIn[isWhere ? 1 : 0];
    uint64_t i, aIdx[PARITY_MAX_RANK];
    for (i = 0; i < pC->nOut; i++) {
        double c, x, y;
        unravel(pC->outRank, pC->aOut, i, aIdx);
        c = C->aValue[bcast_off(C, pC->outRank, aIdx)];
        x = X->aValue[bcast_off(X, pC->outRank, aIdx)];
        y = pC->nIn > 2 ? pC->aIn[2].aValue[bcast_off(&pC->aIn[2], pC->outRank, aIdx)]
                        : (double)(float)pC->fill;
        mpfr_set_d(aM[i], isWhere ? (c != 0 ? x : y) : (c != 0 ? y : x), MPFR_RNDN);
    }
}

static void evaluate(const gcase *pC, mpfr_t *aM)
{
    if (is_op(pC, "clamp") || is_op(pC, "hardtanh")) { ev_clamp(pC, aM); return; }
    if (is_op(pC, "pow")) { ev_pow(pC, aM); return; }
    if (is_op(pC, "where") || is_op(pC, "masked_fill")) { ev_where(pC, aM); return; }
    static const char *const azElem[] = {
        "relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "reciprocal",
        "erf", "cos", "sin", "hardsigmoid", "hardswish", "neg", "abs", "softplus", "elu", "mish",
        "add", "sub", "mul", "div", "maximum",
        "minimum", NULL };
    int i;
    for (i = 0; azElem[i]; i++)
        if (is_op(pC, azElem[i])) { ev_elementwise(pC, aM); return; }
    if (is_op(pC, "matmul") || is_op(pC, "bmm") || is_op(pC, "linear")) ev_matmul(pC, aM);
    else if (is_op(pC, "scaled_dot_product_attention")) ev_sdpa(pC, aM);
    else if (is_op(pC, "conv2d")) ev_conv2d(pC, aM);
    else if (is_op(pC, "transpose") || is_op(pC, "permute") || is_op(pC, "reshape")) ev_layout(pC, aM);
    else if (is_op(pC, "cast")) ev_cast(pC, aM);
    else if (is_op(pC, "softmax") || is_op(pC, "log_softmax") || is_op(pC, "cumsum")) ev_rowwise(pC, aM);
    else if (is_op(pC, "layer_norm") || is_op(pC, "rms_norm")) ev_norm(pC, aM);
    else if (is_op(pC, "batch_norm")) ev_batch_norm(pC, aM);
    else if (is_op(pC, "max_pool2d")) ev_max_pool2d(pC, aM);
    else if (is_op(pC, "avg_pool2d") || is_op(pC, "adaptive_avg_pool2d")) ev_avg_pool2d(pC, aM);
    else if (is_op(pC, "select") || is_op(pC, "slice") || is_op(pC, "split")) ev_slice(pC, aM);
    else if (is_op(pC, "embedding")) ev_embedding(pC, aM);
    else if (is_op(pC, "cat") || is_op(pC, "stack") || is_op(pC, "expand")) ev_concat(pC, aM);
    else if (is_op(pC, "addmm") || is_op(pC, "baddbmm")) ev_addmm(pC, aM);
    else ev_reduce(pC, aM);
}

/* ---- the guard cases ---------------------------------------------------------------- */

#define DIMS(...) (const uint64_t[]){ __VA_ARGS__ }
#define NDIMS(...) (int)(sizeof((uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t))
#define IN(pC, seed, lo, hi, sp, ...) add_in(pC, PARITY_DT_F32, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__), seed, lo, hi, sp)
#define OUT(pC, ...) set_out(pC, NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

static int in_list(const char *z, const char *const *az)
{
    int i;
    for (i = 0; az[i]; i++) if (strcmp(z, az[i]) == 0) return 1;
    return 0;
}

static const char *const kUnaryOps[] = {
    "relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "reciprocal",
    "erf", "cos", "sin", "hardsigmoid", "hardswish", "neg", "abs", "softplus", "elu", "mish",
    NULL };
static const char *const kBinaryOps[] = { "add", "sub", "mul", "div", "maximum", "minimum", NULL };
static const char *const kReduceOps[] = { "sum", "mean", "amax", "amin", NULL };

/* Sets the reduced dims and the output shape of a reduction over X (aDims, nDims; nDims 0:
 * every dim). */
static void reduce_shape(gcase *pC, const int *aDims, int nDims, int keepdim)
{
    const parity_operand *X = &pC->aIn[0];
    uint64_t aOut[PARITY_MAX_RANK];
    int d, r = 0, i;
    memset(pC->aRed, 0, sizeof pC->aRed);
    for (i = 0; i < nDims; i++) pC->aRed[aDims[i] < 0 ? aDims[i] + X->rank : aDims[i]] = 1;
    if (nDims == 0) for (d = 0; d < X->rank; d++) pC->aRed[d] = 1;
    for (d = 0; d < X->rank; d++) {
        if (!pC->aRed[d]) aOut[r++] = X->aDim[d];
        else if (keepdim) aOut[r++] = 1;
    }
    pC->keepdim = keepdim;
    set_out(pC, r, aOut);
}

/* Builds variant v of zOp's guard cases; 0 when there is no such variant. */
static int build_guard(gcase *pC, const char *zOp, int v)
{
    gcase_init(pC, zOp);
    if (in_list(zOp, kUnaryOps)) {
        int isGelu = strcmp(zOp, "gelu") == 0, isSoftplus = strcmp(zOp, "softplus") == 0;
        int isElu = strcmp(zOp, "elu") == 0;
        if (v > (isGelu || isSoftplus ? 2 : isElu ? 1 : 0)) return 0;
        IN(pC, 11 + v, -6.0, 6.0, 1, 5, 9);
        OUT(pC, 5, 9);
        if (isGelu && v == 1) gc_attr_str(pC, "approximate", "none");
        if (isGelu && v == 2) { gc_attr_str(pC, "approximate", "tanh"); pC->approx = 1; }
        if (isSoftplus && v == 1) {      /* the threshold inside [-6, 6]: x > 2.5 is x */
            pC->beta = 2.0;
            pC->threshold = 5.0;
            gc_attr_float(pC, "beta", 2.0);
            gc_attr_int(pC, "threshold", 5);
        }
        if (isSoftplus && v == 2) {      /* beta < 0: the threshold on the left */
            pC->beta = -0.5;
            pC->threshold = 1.0;
            gc_attr_float(pC, "beta", -0.5);
            gc_attr_float(pC, "threshold", 1.0);
        }
        if (isElu && v == 1) { pC->alpha = 0.3; gc_attr_float(pC, "alpha", 0.3); }
        return 1;
    }
    if (in_list(zOp, kBinaryOps)) {
        int hasAlpha = strcmp(zOp, "add") == 0 || strcmp(zOp, "sub") == 0;
        if (v == 0) {
            IN(pC, 21, -4.0, 4.0, 1, 6, 4);
            IN(pC, 22, -4.0, 4.0, 1, 4);
            OUT(pC, 6, 4);
        } else if (v == 1) {
            IN(pC, 23, -4.0, 4.0, 1, 2, 1, 4);
            IN(pC, 24, -4.0, 4.0, 1, 3, 1);
            OUT(pC, 2, 3, 4);
            if (hasAlpha) {
                pC->alpha = strcmp(zOp, "add") == 0 ? 0.3 : 2.5;
                gc_attr_float(pC, "alpha", pC->alpha);
            }
        } else if (v == 2) {                         /* the specials against each other */
            uint64_t i;
            double *x = IN(pC, 25, 0, 0, 0, N_SPECIAL, 1);
            double *y = IN(pC, 26, 0, 0, 0, N_SPECIAL);
            for (i = 0; i < N_SPECIAL; i++) x[i] = y[i] = kSpecial[i];
            OUT(pC, N_SPECIAL, N_SPECIAL);
            if (hasAlpha) { pC->alpha = -3; gc_attr_int(pC, "alpha", -3); }
        } else return 0;
        return 1;
    }
    if (in_list(zOp, kReduceOps)) {
        if (v == 0) { IN(pC, 31, -5, 5, 1, 3, 5, 4); reduce_shape(pC, (int[]){0, 2}, 2, 0);
                      gc_attr_ints(pC, "dim", (int64_t[]){0, -1}, 2, 1); }
        else if (v == 1) { IN(pC, 32, -5, 5, 1, 3, 5, 4); reduce_shape(pC, (int[]){1}, 1, 1);
                           gc_attr_int(pC, "dim", 1); gc_attr_int(pC, "keepdim", 1); }
        else if (v == 2) { IN(pC, 33, -5, 5, 1, 4, 6); reduce_shape(pC, NULL, 0, 0); }
        else return 0;
        return 1;
    }
    if (strcmp(zOp, "matmul") == 0 || strcmp(zOp, "bmm") == 0) {
        if (strcmp(zOp, "bmm") == 0) {
            if (v > 0) return 0;
            IN(pC, 41, -2, 2, 1, 2, 3, 5); IN(pC, 42, -2, 2, 1, 2, 5, 4); OUT(pC, 2, 3, 4);
            return 1;
        }
        if (v == 0) { IN(pC, 43, -2, 2, 1, 2, 3, 5); IN(pC, 44, -2, 2, 1, 1, 5, 4); OUT(pC, 2, 3, 4); }
        else if (v == 1) { IN(pC, 45, -2, 2, 1, 5); IN(pC, 46, -2, 2, 1, 2, 5, 3); OUT(pC, 2, 3); }
        else if (v == 2) { IN(pC, 47, -2, 2, 1, 4, 9); IN(pC, 48, -2, 2, 1, 9); OUT(pC, 4); }
        else return 0;
        return 1;
    }
    if (strcmp(zOp, "addmm") == 0 || strcmp(zOp, "baddbmm") == 0) {
        /* v 0: c of the output's shape, beta 0.5, alpha 2; v 1: c a row [N] holding a NaN
         * and an Inf, beta 0 (c ignored); v 2: the defaults, with specials in a and b */
        int bat = strcmp(zOp, "baddbmm") == 0;
        double *c;
        if (v > 2) return 0;
        if (v == 1) { c = IN(pC, 221, -2, 2, 0, 4); c[1] = NAN; c[2] = INFINITY; }
        else if (bat) IN(pC, 222, -2, 2, 0, 2, 3, 4);
        else IN(pC, 222, -2, 2, 0, 3, 4);
        if (bat) { IN(pC, 223, -2, 2, v == 2, 2, 3, 5); IN(pC, 224, -2, 2, v == 2, 2, 5, 4); OUT(pC, 2, 3, 4); }
        else { IN(pC, 223, -2, 2, v == 2, 3, 5); IN(pC, 224, -2, 2, v == 2, 5, 4); OUT(pC, 3, 4); }
        if (v == 0) { pC->beta = 0.5; pC->alpha = 2.0; gc_attr_float(pC, "beta", 0.5);
                      gc_attr_float(pC, "alpha", 2.0); }
        if (v == 1) { pC->beta = 0.0; gc_attr_float(pC, "beta", 0.0); }
        return 1;
    }
    if (strcmp(zOp, "linear") == 0) {
        if (v == 0) { IN(pC, 51, -2, 2, 1, 2, 3, 5); IN(pC, 52, -2, 2, 1, 4, 5); IN(pC, 53, -2, 2, 0, 4);
                      OUT(pC, 2, 3, 4); }
        else if (v == 1) { IN(pC, 54, -2, 2, 1, 9); IN(pC, 55, -2, 2, 1, 4, 9); OUT(pC, 4); }
        else return 0;
        return 1;
    }
    if (strcmp(zOp, "scaled_dot_product_attention") == 0) {
        if (v == 0 || v == 1) {
            IN(pC, 61 + v, -2, 2, 1, 2, 2, 3, 4);
            IN(pC, 63 + v, -2, 2, 1, 2, 1, 5, 4);
            IN(pC, 65 + v, -2, 2, 1, 2, 1, 5, 3);
            OUT(pC, 2, 2, 3, 3);
            pC->scale = 0.5;                 /* 1 / sqrt(4) */
            if (v == 1) {
                pC->causal = 1;
                pC->scale = 0.3;
                gc_attr_int(pC, "is_causal", 1);
                gc_attr_float(pC, "scale", 0.3);
            }
        } else if (v == 2 || v == 3) {
            double *m;
            uint64_t j;
            IN(pC, 67 + v, -3, 3, 1, 1, 4, 3);
            IN(pC, 69 + v, -3, 3, 1, 1, 6, 3);
            IN(pC, 71 + v, -3, 3, 1, 1, 6, 2);
            /* torch: the default scale is the double 1 / sqrt(E) */
            pC->scale = 1.0 / sqrt(3.0);
            if (v == 2) {
                m = add_in(pC, PARITY_DT_BOOL, 2, DIMS(4, 6), 73, 0, 2, 0);
                for (j = 0; j < 24; j++) m[j] = m[j] >= 1.0 ? 1.0 : 0.0;
                for (j = 6; j < 12; j++) m[j] = 0.0;          /* row 1 fully masked: NaN */
                m[0] = 1.0;
            } else {
                m = IN(pC, 74, -2, 2, 0, 4, 6);
                m[1] = m[4] = m[20] = -INFINITY;
                for (j = 12; j < 18; j++) m[j] = -INFINITY;   /* row 2 fully masked: NaN */
            }
            OUT(pC, 1, 4, 2);
        } else return 0;
        return 1;
    }
    if (strcmp(zOp, "conv2d") == 0) {
        if (v == 0) {
            IN(pC, 81, -2, 2, 1, 2, 4, 6, 7); IN(pC, 82, -2, 2, 1, 6, 2, 3, 2); IN(pC, 83, -2, 2, 0, 6);
            pC->stride[0] = 2; pC->stride[1] = 1; pC->pad[0] = 1; pC->pad[1] = 2;
            pC->dil[0] = 1; pC->dil[1] = 2; pC->groups = 2;
            gc_attr_ints(pC, "stride", (int64_t[]){2, 1}, 2, 1);
            gc_attr_ints(pC, "padding", (int64_t[]){1, 2}, 2, 1);
            gc_attr_ints(pC, "dilation", (int64_t[]){1, 2}, 2, 1);
            gc_attr_int(pC, "groups", 2);
            /* Ho = (6 + 2 - 2 - 1) / 2 + 1 = 3, Wo = (7 + 4 - 2 - 1) / 1 + 1 = 9 */
            OUT(pC, 2, 6, 3, 9);
        } else if (v == 1) {
            IN(pC, 84, -2, 2, 1, 3, 5, 5); IN(pC, 85, -2, 2, 1, 2, 3, 3, 3); IN(pC, 86, -2, 2, 0, 2);
            pC->dil[0] = pC->dil[1] = 2;
            pC->pad[0] = pC->pad[1] = 2;     /* "same": total 2 (3 - 1) = 4, 2 before */
            gc_attr_int(pC, "dilation", 2);
            gc_attr_str(pC, "padding", "same");
            OUT(pC, 2, 5, 5);
        } else if (v == 2) {
            IN(pC, 87, -2, 2, 1, 1, 2, 7, 6); IN(pC, 88, -2, 2, 1, 3, 2, 2, 3);
            pC->stride[0] = pC->stride[1] = 2;
            gc_attr_int(pC, "stride", 2);
            gc_attr_str(pC, "padding", "valid");
            /* Ho = (7 - 2) / 2 + 1 = 3, Wo = (6 - 3) / 2 + 1 = 2 */
            OUT(pC, 1, 3, 3, 2);
        } else return 0;
        return 1;
    }
    if (strcmp(zOp, "transpose") == 0 || strcmp(zOp, "permute") == 0 ||
        strcmp(zOp, "reshape") == 0) {
        if (v > 0) return 0;
        IN(pC, 91, -5, 5, 1, 2, 3, 4);
        if (strcmp(zOp, "transpose") == 0) {
            pC->aPerm[0] = 2; pC->aPerm[1] = 1; pC->aPerm[2] = 0;
            gc_attr_int(pC, "dim0", 0); gc_attr_int(pC, "dim1", -1);
            OUT(pC, 4, 3, 2);
        } else if (strcmp(zOp, "permute") == 0) {
            pC->aPerm[0] = 2; pC->aPerm[1] = 0; pC->aPerm[2] = 1;
            gc_attr_ints(pC, "dims", (int64_t[]){-1, 0, 1}, 3, 1);
            OUT(pC, 4, 2, 3);
        } else {
            gc_attr_ints(pC, "shape", (int64_t[]){4, -1}, 2, 1);
            OUT(pC, 4, 6);
        }
        return 1;
    }
    if (strcmp(zOp, "cast") == 0) {
        static const double kCastEdge[] = {
            65504.0, 65519.99609375, 65520.0, 70000.0, -65536.0, 0x1p-24, 0x1p-25, 0x1.8p-25,
            -0x1p-25, 0x1.0000000p-14, 0x1.ffcp-15, 0x1.004p-10, 0x1.006p-10, 3.3895313892515355e38,
            3.4028234663852886e38, 0x1.01p0, 0x1.03p0, -0x1.018p0, 1e-40, -1e-40 };
        double *x;
        uint64_t i;
        if (v > 2) return 0;
        x = IN(pC, 95, -1000, 1000, 1, 6, 8);
        for (i = 0; i < sizeof kCastEdge / sizeof kCastEdge[0]; i++)
            x[i + 12] = (double)(float)kCastEdge[i];
        OUT(pC, 6, 8);
        pC->outDt = v == 0 ? PARITY_DT_F16 : v == 1 ? PARITY_DT_BF16 : PARITY_DT_F32;
        gc_attr_str(pC, "to", v == 0 ? "float16" : v == 1 ? "bfloat16" : "float32");
        return 1;
    }
    if (strcmp(zOp, "softmax") == 0 || strcmp(zOp, "log_softmax") == 0 ||
        strcmp(zOp, "cumsum") == 0) {
        if (v == 0) {
            IN(pC, 101, -8, 8, 1, 3, 5, 4);
            OUT(pC, 3, 5, 4);
            pC->dim = strcmp(zOp, "log_softmax") == 0 ? 0 : 1;
            gc_attr_int(pC, "dim", pC->dim);
        } else if (v == 1) {
            IN(pC, 102, -8, 8, 1, 4, 7);
            OUT(pC, 4, 7);
            if (strcmp(zOp, "cumsum") == 0) gc_attr_int(pC, "dim", -1);   /* torch requires it */
        } else return 0;
        return 1;
    }
    if (strcmp(zOp, "logsumexp") == 0) {
        if (v == 0) { IN(pC, 111, -8, 8, 1, 3, 5, 4); reduce_shape(pC, (int[]){0, 2}, 2, 1);
                      gc_attr_ints(pC, "dim", (int64_t[]){0, 2}, 2, 1); gc_attr_int(pC, "keepdim", 1); }
        else if (v == 1) { IN(pC, 112, -8, 8, 1, 4, 7); reduce_shape(pC, NULL, 0, 0); }
        else if (v == 2) { IN(pC, 113, -8, 8, 1, 4, 7); reduce_shape(pC, (int[]){1}, 1, 0);
                           gc_attr_int(pC, "dim", 1); }
        else if (v == 3) {             /* max 0 dominating: lse = log(1 + tiny) is tiny */
            static const double kRows[8] = { 0.0, -90.0, -91.0, -100.0, 0.0, -30.0, -40.0, -50.0 };
            double *x = IN(pC, 114, 0, 0, 0, 2, 4);
            memcpy(x, kRows, sizeof kRows);
            reduce_shape(pC, (int[]){1}, 1, 0);
            gc_attr_int(pC, "dim", 1);
        } else return 0;
        return 1;
    }
    if (strcmp(zOp, "var") == 0) {
        if (v == 0) { IN(pC, 121, -5, 5, 1, 3, 5, 4); reduce_shape(pC, (int[]){1}, 1, 0);
                      gc_attr_ints(pC, "dim", (int64_t[]){1}, 1, 1); }
        else if (v == 1) { IN(pC, 122, -5, 5, 1, 3, 5, 4); reduce_shape(pC, (int[]){0, 2}, 2, 1);
                           gc_attr_ints(pC, "dim", (int64_t[]){0, 2}, 2, 1); gc_attr_int(pC, "keepdim", 1);
                           pC->correction = 0; gc_attr_int(pC, "correction", 0); }
        else if (v == 2) { IN(pC, 123, -5, 5, 1, 4, 7); reduce_shape(pC, (int[]){1}, 1, 0);
                           gc_attr_int(pC, "dim", -1); pC->correction = 2.5;
                           gc_attr_float(pC, "correction", 2.5); }
        else if (v == 3) { double *x = IN(pC, 124, -5, 5, 0, 4, 2);   /* n - correction = 0 */
                           x[6] = x[7] = 1.5;                           /* constant row: NaN */
                           reduce_shape(pC, (int[]){1}, 1, 0); gc_attr_int(pC, "dim", 1);
                           pC->correction = 2; gc_attr_int(pC, "correction", 2); }
        else if (v == 4) { IN(pC, 125, -5, 5, 1, 4, 7); reduce_shape(pC, NULL, 0, 0);
                           pC->correction = 0; gc_attr_int(pC, "unbiased", 0); }
        else return 0;
        return 1;
    }
    if (strcmp(zOp, "rms_norm") == 0) {
        if (v == 0) { IN(pC, 131, -3, 3, 1, 3, 8); IN(pC, 132, -2, 2, 0, 8); OUT(pC, 3, 8);
                      pC->nNorm = 1; pC->eps = 0x1p-23;   /* torch.finfo(float32).eps */ }
        else if (v == 1) { IN(pC, 133, -3, 3, 1, 3, 2, 4); OUT(pC, 3, 2, 4); pC->nNorm = 2;
                           pC->eps = 1e-6; gc_attr_ints(pC, "normalized_shape", (int64_t[]){2, 4}, 2, 1);
                           gc_attr_float(pC, "eps", 1e-6); }
        else return 0;
        return 1;
    }
    if (strcmp(zOp, "layer_norm") == 0) {
        if (v == 0) { IN(pC, 141, -3, 3, 1, 3, 8); IN(pC, 142, -2, 2, 0, 8); IN(pC, 143, -2, 2, 0, 8);
                      OUT(pC, 3, 8); pC->nNorm = 1; pC->eps = 1e-5;
                      gc_attr_ints(pC, "normalized_shape", (int64_t[]){8}, 1, 1);
                      gc_attr_float(pC, "eps", 1e-5); }
        else if (v == 1) { IN(pC, 144, -3, 3, 1, 2, 2, 3); OUT(pC, 2, 2, 3); pC->nNorm = 2;
                           pC->eps = 0.1; gc_attr_ints(pC, "normalized_shape", (int64_t[]){2, 3}, 2, 1);
                           gc_attr_float(pC, "eps", 0.1); }
        else return 0;
        return 1;
    }
    if (strcmp(zOp, "select") == 0 || strcmp(zOp, "slice") == 0 || strcmp(zOp, "split") == 0) {
        /* x [3, 7, 2] with specials, sliced along dim 1 */
        if (v > 1) return 0;
        IN(pC, 181 + (uint64_t)v, -3, 3, 1, 3, 7, 2);
        gc_attr_int(pC, "dim", 1);
        pC->sliceStep = 1;
        if (strcmp(zOp, "select") == 0) {
            pC->sliceStart = v ? 6 : 2;
            gc_attr_int(pC, "index", v ? -1 : 2);
            OUT(pC, 3, 2);
        } else if (strcmp(zOp, "slice") == 0) {   /* v 0: [1:6:2]; v 1: [-3:] */
            pC->sliceStart = v ? 4 : 1;
            pC->sliceStep = v ? 1 : 2;
            gc_attr_int(pC, "start", v ? -3 : 1);
            if (!v) { gc_attr_int(pC, "end", 6); gc_attr_int(pC, "step", 2); }
            OUT(pC, 3, v ? 3 : 3, 2);
        } else {                                  /* v 0: 3 of 7; v 1: 9, the whole dim */
            pC->sliceStart = 0;
            gc_attr_int(pC, "split_size", v ? 9 : 3);
            OUT(pC, 3, v ? 7 : 3, 2);
        }
        return 1;
    }
    if (strcmp(zOp, "cat") == 0 || strcmp(zOp, "stack") == 0) {
        /* cat: [3, 2, 4], [3, 5, 4] (v 1: and [3, 1, 4]) along dim 1; stack: two (v 1:
         * three) [3, 4] along a new dim 1; specials among the values */
        int stack = strcmp(zOp, "stack") == 0;
        if (v > 1) return 0;
        if (stack) {
            IN(pC, 201, -3, 3, 1, 3, 4); IN(pC, 202, -3, 3, 1, 3, 4);
            if (v) IN(pC, 203, -3, 3, 1, 3, 4);
            OUT(pC, 3, v ? 3 : 2, 4);
        } else {
            IN(pC, 204, -3, 3, 1, 3, 2, 4); IN(pC, 205, -3, 3, 1, 3, 5, 4);
            if (v) IN(pC, 206, -3, 3, 1, 3, 1, 4);
            OUT(pC, 3, v ? 8 : 7, 4);
        }
        gc_attr_int(pC, "dim", v ? -2 : 1);   /* stack: -2 of rank 3 is 1 */
        return 1;
    }
    if (strcmp(zOp, "expand") == 0) {
        /* x [5, 1] with specials to [2, 5, 3]; v 1 with the sizes written out */
        if (v > 1) return 0;
        IN(pC, 207 + (uint64_t)v, -3, 3, 1, 5, 1);
        OUT(pC, 2, 5, 3);
        gc_attr_ints(pC, "size", v ? (int64_t[]){2, 5, 3} : (int64_t[]){2, -1, 3}, 3, 1);
        return 1;
    }
    if (strcmp(zOp, "clamp") == 0 || strcmp(zOp, "hardtanh") == 0) {
        /* clamp v 0: [-0.5, 0.5]; 1: min 0.1 only (not a float32: rounded); 2: max 0.3 only;
         * 3: min 2 > max 1 (gives max). hardtanh v 0: its defaults [-1, 1]; 1: relu6's [0, 6] */
        static const double aLo[4] = { -0.5, 0.1, -INFINITY, 2.0 }, aHi[4] = { 0.5, INFINITY, 0.3, 1.0 };
        int isHt = strcmp(zOp, "hardtanh") == 0;
        if (v > (isHt ? 1 : 3)) return 0;
        IN(pC, 221 + (uint64_t)v, -3, 3, 1, 5, 9);
        OUT(pC, 5, 9);
        if (isHt) {
            pC->lo = v ? 0.0 : -1.0;
            pC->hi = v ? 6.0 : 1.0;
            if (v) { gc_attr_int(pC, "min_val", 0); gc_attr_float(pC, "max_val", 6.0); }
        } else {
            pC->lo = aLo[v];
            pC->hi = aHi[v];
            if (isfinite(pC->lo)) gc_attr_float(pC, "min", pC->lo);
            if (isfinite(pC->hi)) gc_attr_float(pC, "max", pC->hi);
        }
        return 1;
    }
    if (strcmp(zOp, "pow") == 0) {
        /* torch's special exponents, integers of either sign, fractions (0.1 and 1/3 are no
         * float32: rounded), over [-6, 6] with the specials (+-0, subnormals, +-1, +-30, +-90) */
        static const double aE[] = { 0.5, -0.5, 2, 3, -1, -2, 1.5, 0.1, 1.0 / 3, -3, 4, 0, 1,
                                     -0.75, 7 };
        if (v >= (int)(sizeof aE / sizeof aE[0])) return 0;
        IN(pC, 231 + (uint64_t)v, -6, 6, 1, 5, 9);
        OUT(pC, 5, 9);
        pC->exponent = aE[v];
        gc_attr_float(pC, "exponent", aE[v]);
        return 1;
    }
    if (strcmp(zOp, "masked_fill") == 0 || strcmp(zOp, "where") == 0) {
        /* masked_fill v 0: mask [9] under x [5, 9], value -Inf; 1: value 0.1 (rounded);
         * 2: the value a 0-d operand; 3: mask [2, 1, 9] grows x [5, 9] to [2, 5, 9].
         * where v 0: cond [5, 9], x [5, 9], y [9]; 1: cond [5, 1], x [1, 9], y 0-d. */
        int isWhere = strcmp(zOp, "where") == 0;
        uint64_t i, nC;
        double *c;
        if (v > (isWhere ? 1 : 3)) return 0;
        if (isWhere) {
            c = add_in(pC, PARITY_DT_BOOL, 2, v ? DIMS(5, 1) : DIMS(5, 9), 0, 0, 0, 0);
            nC = v ? 5 : 45;
            if (v) IN(pC, 241, -3, 3, 1, 1, 9); else IN(pC, 241, -3, 3, 1, 5, 9);
            if (v) add_in(pC, PARITY_DT_F32, 0, NULL, 242, -3, 3, 0); else IN(pC, 242, -3, 3, 1, 9);
            OUT(pC, 5, 9);
        } else {
            IN(pC, 243 + (uint64_t)v, -3, 3, 1, 5, 9);
            c = v == 3 ? add_in(pC, PARITY_DT_BOOL, 3, DIMS(2, 1, 9), 0, 0, 0, 0)
                       : add_in(pC, PARITY_DT_BOOL, 1, DIMS(9), 0, 0, 0, 0);
            nC = v == 3 ? 18 : 9;
            if (v == 2) add_in(pC, PARITY_DT_F32, 0, NULL, 247, -3, 3, 0);
            else {
                pC->fill = v == 1 ? 0.1 : -INFINITY;
                gc_attr_float(pC, "value", pC->fill);
            }
            if (v == 3) OUT(pC, 2, 5, 9); else OUT(pC, 5, 9);
        }
        for (i = 0; i < nC; i++) c[i] = (i * 7 + (uint64_t)v) % 3 == 0;
        return 1;
    }
    if (strcmp(zOp, "embedding") == 0) {
        /* weight [6, 3] with specials; indices 0..5, and (v 1) an out-of-range and a
         * fractional one, which read as NaN */
        double *ix;
        if (v > 1) return 0;
        IN(pC, 191 + (uint64_t)v, -3, 3, 1, 6, 3);
        ix = IN(pC, 193, 0, 1, 0, 2, 4);
        ix[0] = 5; ix[1] = 0; ix[2] = 3; ix[3] = 3; ix[4] = 1; ix[5] = 2; ix[6] = 4; ix[7] = 0;
        if (v == 1) { ix[2] = 6; ix[5] = 1.5; }
        OUT(pC, 2, 4, 3);
        return 1;
    }
    if (strcmp(zOp, "max_pool2d") == 0) {
        /* v 0: k 2 (stride 2); 1: k 3 stride 1 padding 1; 2: k 3 stride 2 dilation 2, ceil */
        static const int64_t aK[3] = { 2, 3, 3 }, aS[3] = { 2, 1, 2 }, aP[3] = { 0, 1, 0 },
                             aD[3] = { 1, 1, 2 }, aHo[3] = { 3, 6, 2 };
        if (v > 2) return 0;
        IN(pC, 171 + (uint64_t)v, -3, 3, 1, 2, 2, 6, 6);
        pC->poolK = aK[v]; pC->poolS = aS[v]; pC->poolP = aP[v]; pC->poolD = aD[v];
        OUT(pC, 2, 2, (uint64_t)aHo[v], (uint64_t)aHo[v]);
        gc_attr_ints(pC, "kernel_size", (int64_t[]){aK[v], aK[v]}, 2, 1);
        if (v > 0) gc_attr_ints(pC, "stride", (int64_t[]){aS[v], aS[v]}, 2, 1);
        if (aP[v]) gc_attr_ints(pC, "padding", (int64_t[]){aP[v], aP[v]}, 2, 1);
        if (aD[v] > 1) gc_attr_ints(pC, "dilation", (int64_t[]){aD[v], aD[v]}, 2, 1);
        if (v == 2) gc_attr_int(pC, "ceil_mode", 1);
        return 1;
    }
    if (strcmp(zOp, "avg_pool2d") == 0) {
        /* x 6x6. v 0: k 2; 1: k 3 stride 1 padding 1; 2: k 3 stride 2 padding 1, ceil,
         * count_include_pad 0 (the last window has 1 row inside, 2 in the padded input);
         * 3: the same counting the padding; 4: unbatched, k 3 stride 2, divisor_override 5 */
        static const int64_t aK[5] = { 2, 3, 3, 3, 3 }, aS[5] = { 2, 1, 2, 2, 2 },
                             aP[5] = { 0, 1, 1, 1, 0 }, aHo[5] = { 3, 6, 4, 4, 2 };
        if (v > 4) return 0;
        if (v == 4) { IN(pC, 191, -3, 3, 1, 2, 6, 6); OUT(pC, 2, 2, 2); }
        else { IN(pC, 191 + (uint64_t)v, -3, 3, 1, 2, 2, 6, 6);
               OUT(pC, 2, 2, (uint64_t)aHo[v], (uint64_t)aHo[v]); }
        pC->poolK = aK[v]; pC->poolS = aS[v]; pC->poolP = aP[v]; pC->poolD = 1;
        gc_attr_ints(pC, "kernel_size", (int64_t[]){aK[v], aK[v]}, 2, 1);
        if (v > 0) gc_attr_ints(pC, "stride", (int64_t[]){aS[v], aS[v]}, 2, 1);
        if (aP[v]) gc_attr_ints(pC, "padding", (int64_t[]){aP[v], aP[v]}, 2, 1);
        if (v == 2 || v == 3) gc_attr_int(pC, "ceil_mode", 1);
        if (v == 2) { gc_attr_int(pC, "count_include_pad", 0); pC->poolExcludePad = 1; }
        if (v == 3) gc_attr_int(pC, "count_include_pad", 1);
        if (v == 4) { gc_attr_int(pC, "divisor_override", 5); pC->poolDivisor = 5; }
        return 1;
    }
    if (strcmp(zOp, "adaptive_avg_pool2d") == 0) {
        /* v 0: 6x6 -> 1x1; 1: 7x5 -> 3x2 (overlapping windows); 2: unbatched 5x4 -> 6x3
         * (more rows out than in); 3: output_size one int, 6x6 -> 4x4 */
        if (v == 0) { IN(pC, 201, -3, 3, 1, 2, 2, 6, 6); OUT(pC, 2, 2, 1, 1);
                      gc_attr_ints(pC, "output_size", (int64_t[]){1, 1}, 2, 1); }
        else if (v == 1) { IN(pC, 202, -3, 3, 1, 2, 2, 7, 5); OUT(pC, 2, 2, 3, 2);
                           gc_attr_ints(pC, "output_size", (int64_t[]){3, 2}, 2, 1); }
        else if (v == 2) { IN(pC, 203, -3, 3, 1, 2, 5, 4); OUT(pC, 2, 6, 3);
                           gc_attr_ints(pC, "output_size", (int64_t[]){6, 3}, 2, 1); }
        else if (v == 3) { IN(pC, 204, -3, 3, 1, 1, 2, 6, 6); OUT(pC, 1, 2, 4, 4);
                           gc_attr_ints(pC, "output_size", (int64_t[]){4}, 1, 1); }
        else return 0;
        return 1;
    }
    if (strcmp(zOp, "batch_norm") == 0) {
        /* running_var positive (a negative one is NaN on every side); v 2: without affine */
        if (v == 0) { IN(pC, 151, -3, 3, 1, 2, 3, 2, 2); IN(pC, 152, -2, 2, 0, 3);
                      IN(pC, 153, -2, 2, 0, 3); IN(pC, 154, -1, 1, 0, 3);
                      IN(pC, 155, 0.1, 2, 0, 3); OUT(pC, 2, 3, 2, 2); pC->eps = 1e-5; }
        else if (v == 1) { IN(pC, 156, -3, 3, 1, 4, 5); IN(pC, 157, -2, 2, 0, 5);
                           IN(pC, 158, -2, 2, 0, 5); IN(pC, 159, -1, 1, 0, 5);
                           IN(pC, 160, 0.1, 2, 0, 5); OUT(pC, 4, 5); pC->eps = 1e-3;
                           gc_attr_float(pC, "eps", 1e-3); }
        else if (v == 2) { IN(pC, 161, -3, 3, 1, 2, 3, 4); IN(pC, 162, -1, 1, 0, 3);
                           IN(pC, 163, 0.1, 2, 0, 3); OUT(pC, 2, 3, 4); pC->eps = 1e-5; }
        else return 0;
        return 1;
    }
    return -1;   /* no guard for this op */
}

/* ---- running an op and comparing ---------------------------------------------------- */

enum { CMP_REL, CMP_EXACT, CMP_EXACT_SIGNED };

static int exact_mode(const char *zOp)
{
    static const char *const azSigned[] = { "neg", "abs", "transpose", "permute", "reshape",
                                            "cast", "select", "slice", "split", "embedding",
                                            "cat", "stack", "expand", "clamp", "hardtanh",
                                            "masked_fill", "where", NULL };
    static const char *const azExact[] = { "relu", "maximum", "minimum", "amax", "amin",
                                           "max_pool2d", NULL };
    if (in_list(zOp, azSigned)) return CMP_EXACT_SIGNED;
    if (in_list(zOp, azExact)) return CMP_EXACT;
    return CMP_REL;
}

static int agree(mpfr_t ref, mpfr_t mine, int mode)
{
    int ok;
    mpfr_t d, tol;
    if (mpfr_nan_p(mine) || mpfr_nan_p(ref)) return mpfr_nan_p(mine) && mpfr_nan_p(ref);
    if (mpfr_inf_p(mine) || mpfr_inf_p(ref))
        return mpfr_inf_p(mine) && mpfr_inf_p(ref) && mpfr_sgn(mine) == mpfr_sgn(ref);
    if (mode != CMP_REL) {
        if (mpfr_cmp(ref, mine) != 0) return 0;
        return mode != CMP_EXACT_SIGNED || !mpfr_zero_p(mine) ||
               mpfr_signbit(ref) == mpfr_signbit(mine);
    }
    if (mpfr_zero_p(mine)) return mpfr_zero_p(ref);
    mpfr_inits2(P, d, tol, (mpfr_ptr)0);
    mpfr_sub(d, ref, mine, MPFR_RNDN);
    mpfr_abs(d, d, MPFR_RNDN);
    mpfr_abs(tol, mine, MPFR_RNDN);
    mpfr_mul_2si(tol, tol, -110, MPFR_RNDN);
    ok = mpfr_cmp(d, tol) <= 0;
    mpfr_clears(d, tol, (mpfr_ptr)0);
    return ok;
}


typedef struct {
    double maxBound;               /* over the finite-reference elements */
    double maxRelBound;            /* max bound / |ref| over finite nonzero references */
    int allZero;                   /* every bound exactly 0 */
    uint64_t nChecked, nBad, nKnown;
} run_stats;

/* Runs the op over pC with acc_dtype acc; compares with aMine when not NULL. */
static void run_case(const gcase *pC, parity_dtype acc, mpfr_t *aMine, const char *zLabel,
                     run_stats *pS)
{
    const parity_op_def *pDef = parity_op_find(pC->zOp);
    parity_op_call call;
    char zErr[PARITY_ERR_LEN];
    uint64_t i;
    int mode = exact_mode(pC->zOp), rc;
    mpfr_t ref;

    memset(pS, 0, sizeof *pS);
    pS->allZero = 1;
    cr_assert(pDef, "%s: not in the registry", pC->zOp);
    rc = parity_op_begin(&call, pDef, pC->aIn, pC->nIn, pC->outDt, pC->outRank, pC->aOut, acc,
                         pC->aAttr, pC->nAttr, zErr, sizeof zErr);
    cr_assert_eq(rc, 0, "%s: parity_op_begin: %s", zLabel, zErr);
    cr_assert_eq(call.nOut, pC->nOut, "%s: output size", zLabel);
    mpfr_init2(ref, PARITY_REF_PREC);
    for (i = 0; i < pC->nOut; i++) {
        double bound = NAN;
        call.probBound = NAN;
        cr_assert_eq(pDef->xElement(&call, i, ref, &bound), 0, "%s: xElement(%llu)", zLabel,
                     (unsigned long long)i);
        cr_assert(bound >= 0.0, "%s: element %llu: bound %g", zLabel, (unsigned long long)i,
                  bound);
        if (bound != 0.0) pS->allZero = 0;
        if (mpfr_number_p(ref)) {
            double r = fabs(mpfr_get_d(ref, MPFR_RNDN));
            if (bound > pS->maxBound) pS->maxBound = bound;
            if (r > 0 && isfinite(r) && bound / r > pS->maxRelBound) pS->maxRelBound = bound / r;
        }
        if (aMine) {
            pS->nChecked++;
            if (!agree(ref, aMine[i], mode)) {
                if (pS->nBad++ < 4) {
                    char zA[160], zB[160];
                    mpfr_snprintf(zA, sizeof zA, "%.36Rg", ref);
                    mpfr_snprintf(zB, sizeof zB, "%.36Rg", aMine[i]);
                    cr_expect_fail("%s: element %llu: op reference %s, independent %s", zLabel,
                                   (unsigned long long)i, zA, zB);
                }
            }
        }
    }
    mpfr_clear(ref);
    parity_op_end(&call);
}

static mpfr_t *mine_alloc(uint64_t n)
{
    mpfr_t *a = malloc((n ? n : 1) * sizeof(mpfr_t));
    uint64_t i;
    cr_assert(a);
    for (i = 0; i < n; i++) {
        mpfr_init2(a[i], P);
        mpfr_set_nan(a[i]);
    }
    return a;
}

static void mine_free(mpfr_t *a, uint64_t n)
{
    uint64_t i;
    for (i = 0; i < n; i++) mpfr_clear(a[i]);
    free(a);
}

/* ---- (1) every op's reference against the evaluation written here ------------------- */

Test(reference_guard, every_registered_op_has_an_independent_reference, .timeout = 120)
{
    int iOp, nOp = 0, nVariant = 0;
    uint64_t nChecks = 0, nBad = 0, nKnown = 0;
    double t0 = now_seconds();
    for (iOp = 0; parity_op_registry[iOp]; iOp++) {
        const char *zOp = parity_op_registry[iOp]->zName;
        int v, rc, nHere = 0;
        for (v = 0;; v++) {
            gcase c;
            mpfr_t *aMine;
            run_stats st;
            char zLabel[128];
            rc = build_guard(&c, zOp, v);
            if (rc <= 0) { gcase_free(&c); break; }
            snprintf(zLabel, sizeof zLabel, "%s (variant %d)", zOp, v);
            aMine = mine_alloc(c.nOut);
            evaluate(&c, aMine);
            run_case(&c, PARITY_DT_INVALID, aMine, zLabel, &st);
            nChecks += st.nChecked;
            nBad += st.nBad;
            nKnown += st.nKnown;
            nHere++;
            mine_free(aMine, c.nOut);
            gcase_free(&c);
        }
        cr_expect(rc == 0 && nHere > 0,
                  "op '%s' is in the registry but has no independent-reference guard in "
                  "tests/test_reference_guard.c", zOp);
        nVariant += nHere;
        nOp++;
    }
    cr_expect_eq(nBad, 0);
    fprintf(stderr, "reference_guard: %d ops, %d cases, %llu elements compared, %llu "
            "disagreements, %llu known issues, %.2f s\n", nOp, nVariant,
            (unsigned long long)nChecks, (unsigned long long)nBad, (unsigned long long)nKnown,
            now_seconds() - t0);
}

/* ---- (2) bounds move with the length and the accumulation dtype --------------------- */

static const char *const kExactOps[] = {
    "relu", "neg", "abs", "maximum", "minimum", "transpose", "permute", "reshape", "cast",
    "amax", "amin", "max_pool2d", "select", "slice", "split", "embedding", "cat", "stack",
    "expand", "clamp", "hardtanh", "masked_fill", "where", NULL };

/* Cases for the bound checks: values uniform in [-1, 1] (positive for log, sqrt, rsqrt:
 * their bounds at NaN results are 0), the op's length `len` (K, C, row length, S) and, for
 * attention, E = len2. */
static void build_len(gcase *pC, const char *zOp, uint64_t len, uint64_t len2, uint64_t seed)
{
    gcase_init(pC, zOp);
    if (strcmp(zOp, "clamp") == 0 || strcmp(zOp, "hardtanh") == 0 || strcmp(zOp, "pow") == 0) {
        /* clamp to [-0.5, 0.5], hardtanh's [-1, 1]; pow: exponent 1.5 (std::pow) over x > 0 */
        int isPow = strcmp(zOp, "pow") == 0;
        IN(pC, seed, isPow ? 0.25 : -1.0, 1.0, 0, 3, len);
        OUT(pC, 3, len);
        if (isPow) gc_attr_float(pC, "exponent", 1.5);
        else if (strcmp(zOp, "clamp") == 0) { gc_attr_float(pC, "min", -0.5); gc_attr_float(pC, "max", 0.5); }
        return;
    }
    if (strcmp(zOp, "masked_fill") == 0 || strcmp(zOp, "where") == 0) {
        int isWhere = strcmp(zOp, "where") == 0;
        double *c;
        uint64_t i;
        if (!isWhere) IN(pC, seed, -1.0, 1.0, 0, 3, len);
        c = add_in(pC, PARITY_DT_BOOL, 2, DIMS(3, len), seed, 0, 0, 0);
        for (i = 0; i < 3 * len; i++) c[i] = i % 2;
        if (isWhere) { IN(pC, seed + 1, -1.0, 1.0, 0, 3, len); IN(pC, seed + 2, -1.0, 1.0, 0, len); }
        else gc_attr_float(pC, "value", 0.1);
        OUT(pC, 3, len);
        return;
    }
    if (in_list(zOp, kUnaryOps)) {
        int pos = strcmp(zOp, "log") == 0 || strcmp(zOp, "sqrt") == 0 || strcmp(zOp, "rsqrt") == 0;
        IN(pC, seed, pos ? 0.25 : -1.0, 1.0, 0, 3, len);
        OUT(pC, 3, len);
    } else if (in_list(zOp, kBinaryOps)) {
        IN(pC, seed, -1, 1, 0, 3, len);
        IN(pC, seed + 1, 0.25, 1, 0, 3, len);
        OUT(pC, 3, len);
    } else if (in_list(zOp, kReduceOps) || strcmp(zOp, "var") == 0 ||
               strcmp(zOp, "logsumexp") == 0) {
        IN(pC, seed, -1, 1, 0, 3, len);
        reduce_shape(pC, (int[]){1}, 1, 0);
        gc_attr_int(pC, "dim", 1);
    } else if (strcmp(zOp, "softmax") == 0 || strcmp(zOp, "log_softmax") == 0 ||
               strcmp(zOp, "cumsum") == 0 || strcmp(zOp, "transpose") == 0 ||
               strcmp(zOp, "permute") == 0 || strcmp(zOp, "reshape") == 0 ||
               strcmp(zOp, "cast") == 0) {
        IN(pC, seed, -1, 1, 0, 3, len);
        OUT(pC, 3, len);
        if (strcmp(zOp, "transpose") == 0) {
            gc_attr_int(pC, "dim0", 0); gc_attr_int(pC, "dim1", 1); OUT(pC, len, 3);
        } else if (strcmp(zOp, "permute") == 0) {
            gc_attr_ints(pC, "dims", (int64_t[]){1, 0}, 2, 1); OUT(pC, len, 3);
        } else if (strcmp(zOp, "reshape") == 0) {
            gc_attr_ints(pC, "shape", (int64_t[]){-1}, 1, 1); OUT(pC, 3 * len);
        } else if (strcmp(zOp, "cast") == 0) {
            gc_attr_str(pC, "to", "float32");
        } else {
            gc_attr_int(pC, "dim", 1);
        }
    } else if (strcmp(zOp, "matmul") == 0) {
        IN(pC, seed, -1, 1, 0, 3, len); IN(pC, seed + 1, -1, 1, 0, len, 4); OUT(pC, 3, 4);
    } else if (strcmp(zOp, "bmm") == 0) {
        IN(pC, seed, -1, 1, 0, 2, 3, len); IN(pC, seed + 1, -1, 1, 0, 2, len, 4); OUT(pC, 2, 3, 4);
    } else if (strcmp(zOp, "addmm") == 0) {
        IN(pC, seed + 2, -1, 1, 0, 3, 4);
        IN(pC, seed, -1, 1, 0, 3, len); IN(pC, seed + 1, -1, 1, 0, len, 4); OUT(pC, 3, 4);
    } else if (strcmp(zOp, "baddbmm") == 0) {
        IN(pC, seed + 2, -1, 1, 0, 4);
        IN(pC, seed, -1, 1, 0, 2, 3, len); IN(pC, seed + 1, -1, 1, 0, 2, len, 4); OUT(pC, 2, 3, 4);
    } else if (strcmp(zOp, "linear") == 0) {
        IN(pC, seed, -1, 1, 0, 3, len); IN(pC, seed + 1, -1, 1, 0, 4, len);
        IN(pC, seed + 2, -1, 1, 0, 4); OUT(pC, 3, 4);
    } else if (strcmp(zOp, "conv2d") == 0) {
        IN(pC, seed, -1, 1, 0, 1, len, 5, 5); IN(pC, seed + 1, -1, 1, 0, 2, len, 3, 3);
        OUT(pC, 1, 2, 3, 3);
    } else if (strcmp(zOp, "scaled_dot_product_attention") == 0) {
        IN(pC, seed, -1, 1, 0, 1, 3, len2); IN(pC, seed + 1, -1, 1, 0, 1, len, len2);
        IN(pC, seed + 2, -1, 1, 0, 1, len, 3); OUT(pC, 1, 3, 3);
    } else if (strcmp(zOp, "layer_norm") == 0) {
        IN(pC, seed, -1, 1, 0, 3, len); IN(pC, seed + 1, -1, 1, 0, len);
        IN(pC, seed + 2, -1, 1, 0, len); OUT(pC, 3, len);
    } else if (strcmp(zOp, "rms_norm") == 0) {
        IN(pC, seed, -1, 1, 0, 3, len); IN(pC, seed + 1, -1, 1, 0, len); OUT(pC, 3, len);
    } else if (strcmp(zOp, "select") == 0 || strcmp(zOp, "slice") == 0 ||
               strcmp(zOp, "split") == 0) {
        IN(pC, seed, -1, 1, 0, 2, len, 3);
        gc_attr_int(pC, "dim", 1);
        pC->sliceStart = 0;
        pC->sliceStep = 1;
        if (strcmp(zOp, "select") == 0) { gc_attr_int(pC, "index", 0); OUT(pC, 2, 3); }
        else if (strcmp(zOp, "slice") == 0) OUT(pC, 2, len, 3);
        else { gc_attr_int(pC, "split_size", (int64_t)len); OUT(pC, 2, len, 3); }
    } else if (strcmp(zOp, "cat") == 0 || strcmp(zOp, "stack") == 0) {
        IN(pC, seed, -1, 1, 0, 2, len, 3); IN(pC, seed + 1, -1, 1, 0, 2, len, 3);
        gc_attr_int(pC, "dim", 1);
        if (strcmp(zOp, "cat") == 0) OUT(pC, 2, 2 * len, 3);
        else OUT(pC, 2, 2, len, 3);
    } else if (strcmp(zOp, "expand") == 0) {
        IN(pC, seed, -1, 1, 0, len, 1); OUT(pC, 2, len, 3);
        gc_attr_ints(pC, "size", (int64_t[]){2, -1, 3}, 3, 1);
    } else if (strcmp(zOp, "embedding") == 0) {
        double *ix;
        uint64_t k;
        IN(pC, seed, -1, 1, 0, len, 3);
        ix = IN(pC, seed + 1, 0, 1, 0, 4);
        for (k = 0; k < 4; k++) ix[k] = (double)(k % len);
        OUT(pC, 4, 3);
    } else if (strcmp(zOp, "max_pool2d") == 0) {
        IN(pC, seed, -1, 1, 0, 1, 2, 4, len); OUT(pC, 1, 2, 2, len / 2);
        gc_attr_ints(pC, "kernel_size", (int64_t[]){2, 2}, 2, 1);
        pC->poolK = 2; pC->poolS = 2; pC->poolP = 0; pC->poolD = 1;
    } else if (strcmp(zOp, "avg_pool2d") == 0) {     /* windows of 2 x len taps */
        IN(pC, seed, -1, 1, 0, 1, 2, 4, len); OUT(pC, 1, 2, 2, 1);
        gc_attr_ints(pC, "kernel_size", (int64_t[]){2, (int64_t)len}, 2, 1);
    } else if (strcmp(zOp, "adaptive_avg_pool2d") == 0) {
        IN(pC, seed, -1, 1, 0, 1, 2, 4, len); OUT(pC, 1, 2, 2, 1);
        gc_attr_ints(pC, "output_size", (int64_t[]){2, 1}, 2, 1);
    } else if (strcmp(zOp, "batch_norm") == 0) {
        IN(pC, seed, -1, 1, 0, 3, len); IN(pC, seed + 1, -1, 1, 0, len);
        IN(pC, seed + 2, 0.25, 1, 0, len); OUT(pC, 3, len); pC->eps = 1e-5;
    } else {
        cr_assert_fail("no bound case for '%s' in tests/test_reference_guard.c", zOp);
    }
}

static run_stats bound_stats(const char *zOp, uint64_t len, uint64_t len2, parity_dtype acc,
                             parity_dtype outDt)
{
    gcase c;
    run_stats st;
    char zLabel[128];
    build_len(&c, zOp, len, len2, 7);
    if (strcmp(zOp, "cast") != 0) c.outDt = outDt;
    snprintf(zLabel, sizeof zLabel, "%s (len %llu, acc %s)", zOp, (unsigned long long)len,
             parity_dtype_name(acc));
    run_case(&c, acc, NULL, zLabel, &st);
    gcase_free(&c);
    return st;
}

Test(reference_guard, bound_grows_with_the_length, .timeout = 60)
{
    static const char *const azLen[] = {
        "matmul", "linear", "bmm", "addmm", "baddbmm", "conv2d", "sum", "mean", "cumsum", "var", "softmax",
        "log_softmax", "logsumexp", "layer_norm", "rms_norm", "avg_pool2d",
        "adaptive_avg_pool2d", NULL };
    int i;
    for (i = 0; azLen[i]; i++) {
        run_stats a = bound_stats(azLen[i], 8, 4, PARITY_DT_F32, PARITY_DT_F32);
        run_stats b = bound_stats(azLen[i], 64, 4, PARITY_DT_F32, PARITY_DT_F32);
        if (strcmp(azLen[i], "softmax") == 0) {
            /* softmax outputs shrink like 1/n, so its absolute bound need not grow: the
             * bound relative to the output does (gamma_{(c+2) n}). */
            cr_expect(b.maxRelBound > a.maxRelBound, "softmax: relative bound %g (n 64) <= %g "
                      "(n 8)", b.maxRelBound, a.maxRelBound);
        } else {
            cr_expect(b.maxBound > a.maxBound, "%s: max bound %g (length 64) <= %g (length 8)",
                      azLen[i], b.maxBound, a.maxBound);
        }
    }
    {
        const char *z = "scaled_dot_product_attention";
        run_stats s8 = bound_stats(z, 8, 4, PARITY_DT_F32, PARITY_DT_F32);
        run_stats s64 = bound_stats(z, 64, 4, PARITY_DT_F32, PARITY_DT_F32);
        run_stats e32 = bound_stats(z, 8, 32, PARITY_DT_F32, PARITY_DT_F32);
        cr_expect(s64.maxBound > s8.maxBound, "sdpa: bound %g (S 64) <= %g (S 8)", s64.maxBound,
                  s8.maxBound);
        cr_expect(e32.maxBound > s8.maxBound, "sdpa: bound %g (E 32) <= %g (E 4)", e32.maxBound,
                  s8.maxBound);
    }
}

Test(reference_guard, bound_follows_the_accumulation_dtype, .timeout = 60)
{
    int iOp, nAcc = 0, nExact = 0;
    for (iOp = 0; parity_op_registry[iOp]; iOp++) {
        const char *zOp = parity_op_registry[iOp]->zName;
        if (in_list(zOp, kExactOps)) {
            /* float32 in and out: nothing rounds, whatever the acc dtype */
            static const parity_dtype aAcc[] = { PARITY_DT_BF16, PARITY_DT_F16, PARITY_DT_F32,
                                                 PARITY_DT_F64 };
            size_t k;
            for (k = 0; k < 4; k++) {
                run_stats s = bound_stats(zOp, 16, 8, aAcc[k], PARITY_DT_F32);
                cr_expect(s.allZero, "%s: exact op with a nonzero bound (acc %s), max %g", zOp,
                          parity_dtype_name(aAcc[k]), s.maxBound);
            }
            nExact++;
            continue;
        }
        {
            run_stats b16 = bound_stats(zOp, 16, 8, PARITY_DT_BF16, PARITY_DT_F32);
            run_stats h16 = bound_stats(zOp, 16, 8, PARITY_DT_F16, PARITY_DT_F32);
            run_stats f32 = bound_stats(zOp, 16, 8, PARITY_DT_F32, PARITY_DT_F32);
            run_stats f64;
            cr_expect(f32.maxBound > 0.0 && isfinite(f32.maxBound), "%s: float32 bound %g",
                      zOp, f32.maxBound);
            cr_expect(b16.maxBound > f32.maxBound, "%s: bound with acc bfloat16 %g <= float32 %g",
                      zOp, b16.maxBound, f32.maxBound);
            cr_expect(h16.maxBound > f32.maxBound, "%s: bound with acc float16 %g <= float32 %g",
                      zOp, h16.maxBound, f32.maxBound);
            /* sqrt and reciprocal are correctly rounded: into a float32 output, a float32
             * kernel makes the single rounding 0.5 ulp, and a float64 one rounds twice
             * (0.5 ulp_f64 + 0.5 ulp_f32), legitimately a larger bound. With a float64
             * output the float64 kernel is the more accurate, as for every other op. */
            if (strcmp(zOp, "sqrt") == 0 || strcmp(zOp, "reciprocal") == 0) {
                run_stats a = bound_stats(zOp, 16, 8, PARITY_DT_F32, PARITY_DT_F64);
                f64 = bound_stats(zOp, 16, 8, PARITY_DT_F64, PARITY_DT_F64);
                cr_expect(f64.maxBound < a.maxBound, "%s: float64 output: bound with acc "
                          "float64 %g >= float32 %g", zOp, f64.maxBound, a.maxBound);
            } else {
                f64 = bound_stats(zOp, 16, 8, PARITY_DT_F64, PARITY_DT_F32);
                cr_expect(f64.maxBound < f32.maxBound, "%s: bound with acc float64 %g >= "
                          "float32 %g", zOp, f64.maxBound, f32.maxBound);
            }
            nAcc++;
        }
    }
    cr_expect_eq(nAcc + nExact, iOp);
}

/* The guards' own bookkeeping: every registered op is either exact or acc-dependent here,
 * and has guard cases (a new op must be added to both lists). */
Test(reference_guard, every_registered_op_is_classified)
{
    int iOp;
    for (iOp = 0; parity_op_registry[iOp]; iOp++) {
        const char *zOp = parity_op_registry[iOp]->zName;
        gcase c;
        int rc = build_guard(&c, zOp, 0);
        gcase_free(&c);
        cr_expect(rc == 1, "op '%s' has no guard case", zOp);
    }
}
