/*
 * builtin_compiled.c - the builtin target's compiled side: the kernels an ML compiler
 * emits (blocked and split-K GEMM, vectorised and split reductions, online softmax,
 * Welford with chunk merges, blocked scans, flash attention), plus the named defects of
 * defects.c, each behind its bit and each modelled on the public bug it cites.
 *
 * Without defects every kernel is correct: it computes the op in another summation order
 * (or with another exact rewriting), in the compute precision (float32 for 16-bit cases,
 * rounded once to the output dtype; float64 for float64), so it stays inside the
 * registry's error models (tolerance/op_*.c: their bounds hold for every summation tree,
 * online rescaling, Welford and merged variances) while differing from eager bit for bit
 * on most dot-product, reduction and softmax cases. A defect changes the result only on
 * the rare shapes or values its bug needed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/targets/kernels_internal.h"
#include "formats/alloc.h"

#define GEMM_BLOCK_K 64          /* K elements per GEMM block */
#define GEMM_LANES 4             /* partial accumulators (vector lanes) over k */
#define GEMM_SPLIT_MIN 2048      /* split-K above this K ... */
#define GEMM_SPLIT_CHUNK 1024    /* ... in chunks of this many */
#define RED_LANES 8              /* vector lanes of a reduction */
#define RED_SPLIT_MIN 6144       /* split reduction above this length ... */
#define RED_CHUNK 2048           /* ... in chunks of this many */
#define SOFTMAX_BUCKET 16        /* rows padded to a multiple of this ("shape bucket") */
#define NORM_CHUNK 2048          /* layer_norm rows longer than this are split */
#define SCAN_BLOCK 32            /* cumsum block */
#define FLASH_BLOCK 32           /* keys per flash-attention block */
#define BF16_ACCUM_MIN 256       /* bf16_reduce_accum: lengths above this ... */
#define BF16_BLOCK 256           /* ... whose tail after the last block of this many is short */
#define NORM_VECTOR 8            /* welford_merge: a last chunk shorter than this */

static int has(uint32_t defects, uint32_t bit)
{
    return (defects & bit) != 0;
}

/* ---- GEMM ----------------------------------------------------------------------------- */

/* One split-K chunk of a dot product: blocks of GEMM_BLOCK_K, each a vector loop over
 * GEMM_LANES interleaved accumulators and a scalar epilogue for its length % 4. kStart is
 * the chunk's first k in the whole dot product. */
static double gemm_chunk(const kern_ctx *pK, const double *a, const double *b, uint64_t n,
                         uint64_t kStart, double init, int kTailBug)
{
    double lane[GEMM_LANES] = { init, 0.0, 0.0, 0.0 };
    uint64_t kb, k;
    int l;

    for (kb = 0; kb < n; kb += GEMM_BLOCK_K) {
        uint64_t nb = n - kb < GEMM_BLOCK_K ? n - kb : GEMM_BLOCK_K;
        uint64_t nv = nb - nb % GEMM_LANES;
        const double *pa = a + kb, *pb = b + kb;
        for (k = 0; k < nv; k += GEMM_LANES)
            for (l = 0; l < GEMM_LANES; l++)
                lane[l] = kern_acc(pK, lane[l] + kern_acc(pK, pa[k + l] * pb[k + l]));
        /* gemm_k_tail (triton-lang/triton#630): the epilogue of a block after the first
         * is guarded by "the vector loop ran", so when the last block is shorter than one
         * vector (K > 64, K % 64 in 1..3) its products are never added. */
        if (kTailBug && nv == 0 && kStart + kb > 0) continue;
        for (k = nv; k < nb; k++)
            lane[0] = kern_acc(pK, lane[0] + kern_acc(pK, pa[k] * pb[k]));
    }
    return kern_acc(pK, kern_acc(pK, lane[0] + lane[1]) + kern_acc(pK, lane[2] + lane[3]));
}

/* The compiled dot product: init (a fused bias) plus a . b, split-K for long K with the
 * chunks' partials added at the end. */
static double gemm_dot(const kern_ctx *pK, const double *a, const double *b, uint64_t K,
                       double init, int kTailBug)
{
    double s = init;
    uint64_t c0;
    if (K <= GEMM_SPLIT_MIN) return gemm_chunk(pK, a, b, K, 0, init, kTailBug);
    for (c0 = 0; c0 < K; c0 += GEMM_SPLIT_CHUNK) {
        uint64_t len = K - c0 < GEMM_SPLIT_CHUNK ? K - c0 : GEMM_SPLIT_CHUNK;
        s = kern_acc(pK, s + gemm_chunk(pK, a + c0, b + c0, len, c0, 0.0, kTailBug));
    }
    return s;
}

/* matmul, bmm, linear: blocked GEMM; linear's bias is the accumulator's initial value. */
static int compiled_matmul(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                           double *aOut, char *zErr, size_t nErr)
{
    int kTailBug = has(defects, PARITY_DEFECT_GEMM_K_TAIL);
    kern_gemm g;
    uint64_t iMat, i, j, o = 0;

    if (parity_kern_gemm_open(&g, pCase, pK, zErr, nErr) != 0) return -1;
    for (iMat = 0; iMat < g.nMat; iMat++) {
        uint64_t offA, offB;
        parity_kern_gemm_mat(&g, iMat, &offA, &offB);
        for (i = 0; i < g.M; i++)
            for (j = 0; j < g.N; j++) {
                double init = g.pBias ? g.pBias[j] : 0.0;
                /* size1_bias (pytorch/pytorch#182181): a linear over exactly one row
                 * takes a GEMV special path that never adds the bias. */
                if (g.pBias && g.M == 1 && has(defects, PARITY_DEFECT_SIZE1_BIAS)) init = 0.0;
                double s = gemm_dot(pK, g.aA + offA + i * g.K, g.aBT + offB + j * g.K, g.K,
                                    init, kTailBug);
                aOut[o] = kern_out(pK, parity_kern_gemm_addend(&g, pK, o, s));
                o++;
            }
    }
    parity_kern_gemm_close(&g);
    return 0;
}

/* conv2d: each output's receptive field gathered as one im2col column (padding taps
 * elided), then the blocked GEMM dot product with the bias fused. */
static int compiled_conv2d(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                           double *aOut, char *zErr, size_t nErr)
{
    kern_conv c;
    uint64_t i;
    (void)defects;

    if (parity_kern_conv_open(&c, pCase, pK, zErr, nErr) != 0) return -1;
    for (i = 0; i < pCase->nOut; i++) {
        uint64_t o, nTap = parity_kern_conv_gather(&c, i, &o);
        aOut[i] = kern_out(pK, gemm_dot(pK, c.aTapX, c.aTapW, nTap, c.aBias ? c.aBias[o] : 0.0,
                                        0));
    }
    parity_kern_conv_close(&c);
    return 0;
}

/* ---- reductions ----------------------------------------------------------------------- */

/* RED_LANES interleaved lanes, the tail into lane 0, then a tree over the lanes. */
static double sum_lanes(const kern_ctx *pK, const double *x, uint64_t n)
{
    double lane[RED_LANES] = { 0.0 };
    uint64_t nv = n - n % RED_LANES, i;
    int l, w;
    for (i = 0; i < nv; i += RED_LANES)
        for (l = 0; l < RED_LANES; l++) lane[l] = kern_acc(pK, lane[l] + x[i + l]);
    for (i = nv; i < n; i++) lane[0] = kern_acc(pK, lane[0] + x[i]);
    for (w = RED_LANES / 2; w > 0; w /= 2)
        for (l = 0; l < w; l++) lane[l] = kern_acc(pK, lane[l] + lane[l + w]);
    return lane[0];
}

/* The compiled sum: vectorised, and for long rows split into RED_CHUNK chunks whose
 * partials are combined at the end. */
static double sum_split(const kern_ctx *pK, const double *x, uint64_t n, int tailBug)
{
    double s = 0.0;
    uint64_t c0;
    if (n <= RED_SPLIT_MIN) return sum_lanes(pK, x, n);
    for (c0 = 0; c0 < n; c0 += RED_CHUNK) {
        uint64_t len = n - c0 < RED_CHUNK ? n - c0 : RED_CHUNK;
        /* split_reduction_tail (openxla/xla#5544, pytorch/pytorch#189895): the combine
         * step sizes its loop by n / RED_CHUNK, so a partial last chunk is dropped. */
        if (tailBug && len < RED_CHUNK) break;
        s = kern_acc(pK, s + sum_lanes(pK, x + c0, len));
    }
    return s;
}

/* Vectorised max or min; fastNan: the fast-math comparison, which never selects a NaN
 * (fastmath_nan, jax-ml/jax#276). */
static double extreme_lanes(const double *x, uint64_t n, int isMax, int fastNan)
{
    double lane[RED_LANES];
    uint64_t i;
    int l, w;
    for (l = 0; l < RED_LANES; l++) lane[l] = isMax ? -INFINITY : INFINITY;
    for (i = 0; i < n; i++) {
        double *m = &lane[i % RED_LANES], v = x[i];
        if (fastNan) *m = (isMax ? v > *m : v < *m) ? v : *m;
        else *m = isMax ? kern_max(*m, v) : kern_min(*m, v);
    }
    for (w = RED_LANES / 2; w > 0; w /= 2)
        for (l = 0; l < w; l++) {
            double a = lane[l], b = lane[l + w];
            if (fastNan) lane[l] = (isMax ? b > a : b < a) ? b : a;
            else lane[l] = isMax ? kern_max(a, b) : kern_min(a, b);
        }
    return lane[0];
}

typedef struct {
    int isMax, isMin, isMean;
    uint32_t defects;
} reduce_kind;

static double compiled_reduce_row(const kern_ctx *pK, double *x, uint64_t n, void *pArg)
{
    const reduce_kind *pKind = pArg;
    double v;
    uint64_t k;
    if (pKind->isMax || pKind->isMin)
        return extreme_lanes(x, n, pKind->isMax, has(pKind->defects, PARITY_DEFECT_FASTMATH_NAN));
    if (pK->out == PARITY_DT_BF16 && n > BF16_ACCUM_MIN && n % BF16_BLOCK >= 1 &&
        n % BF16_BLOCK <= 3 && has(pKind->defects, PARITY_DEFECT_BF16_REDUCE_ACCUM)) {
        /* bf16_reduce_accum (pytorch/pytorch PR #141052, bf16 accumulated in bf16): the
         * long-row bf16 kernel works in blocks of BF16_BLOCK (8 lanes unrolled 32 times)
         * and handles a tail of 4 or more with masked vectors; a tail of 1 to 3 sends the
         * row to the scalar fallback, whose running sum is a bf16 value, rounded after
         * every add. */
        v = 0.0;
        for (k = 0; k < n; k++) v = parity_dtype_round(PARITY_DT_BF16, kern_acc(pK, v + x[k]));
    } else {
        v = sum_split(pK, x, n, has(pKind->defects, PARITY_DEFECT_SPLIT_REDUCTION_TAIL));
    }
    return pKind->isMean ? kern_acc(pK, v / (double)n) : v;
}

static int compiled_reduce(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                           double *aOut, char *zErr, size_t nErr)
{
    reduce_kind kind = { pCase->pDef == &parity_op_amax, pCase->pDef == &parity_op_amin,
                         pCase->pDef == &parity_op_mean, defects };
    return parity_kern_rows_apply(pCase, pK, 0, compiled_reduce_row, &kind, aOut, zErr, nErr);
}

/* var: two passes of the compiled sum (mean, then squared deviations). */
static double compiled_var_row(const kern_ctx *pK, double *x, uint64_t n, void *pArg)
{
    double mean = kern_acc(pK, sum_split(pK, x, n, 0) / (double)n);
    uint64_t k;
    for (k = 0; k < n; k++) {
        double d = kern_acc(pK, x[k] - mean);
        x[k] = kern_acc(pK, d * d);
    }
    return kern_acc(pK, sum_split(pK, x, n, 0) / *(const double *)pArg);
}

static int compiled_var(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                        double *aOut, char *zErr, size_t nErr)
{
    kern_rows r;
    double D;
    (void)defects;
    if (parity_kern_var_open(&r, pCase, pK, &D, zErr, nErr) != 0) return -1;
    return parity_kern_rows_run(&r, pCase, pK, 0, compiled_var_row, &D, aOut);
}

/* logsumexp: vectorised max, then the compiled sum of exp(x - m') (m' = m with the
 * infinities replaced by 0, as torch). */
static double compiled_logsumexp_row(const kern_ctx *pK, double *x, uint64_t n, void *pArg)
{
    double m = extreme_lanes(x, n, 1, 0);
    uint64_t k;
    (void)pArg;
    if (isinf(m)) m = 0.0;
    for (k = 0; k < n; k++) x[k] = parity_kern_exp(pK, kern_acc(pK, x[k] - m));
    return kern_acc(pK, parity_kern_log(pK, sum_split(pK, x, n, 0)) + m);
}

static int compiled_logsumexp(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                              double *aOut, char *zErr, size_t nErr)
{
    (void)defects;
    return parity_kern_rows_apply(pCase, pK, 0, compiled_logsumexp_row, NULL, aOut, zErr, nErr);
}

/* ---- softmax -------------------------------------------------------------------------- */

/* Online softmax (Milakov & Gimelshein, "Online normalizer calculation for softmax",
 * 2018) over a row padded to a multiple of SOFTMAX_BUCKET, one running (max, sum) pair per
 * lane, merged at the end. x holds n values and room for the padding. Returns the row's
 * max in *pM and sum of exp(x - max) in *pD. */
static void online_softmax(const kern_ctx *pK, double *x, uint64_t n, int leakBug, double *pM,
                           double *pD)
{
    double m[SOFTMAX_BUCKET], d[SOFTMAX_BUCKET], M = -INFINITY;
    uint64_t nPad = (n + SOFTMAX_BUCKET - 1) / SOFTMAX_BUCKET * SOFTMAX_BUCKET, i;
    double pad = -INFINITY;
    int l, w;

    /* padded_stride_leak (pytorch/pytorch#194281): when the last vector holds a single
     * real element (n > 16, n % 16 == 1) its padding lanes are read from the buffer's
     * zeroed stride padding instead of the -Inf fill, and count in the sum. */
    if (leakBug && n > SOFTMAX_BUCKET && n % SOFTMAX_BUCKET == 1) pad = 0.0;
    for (i = n; i < nPad; i++) x[i] = pad;
    for (l = 0; l < SOFTMAX_BUCKET; l++) {
        m[l] = -INFINITY;
        d[l] = 0.0;
    }
    for (i = 0; i < nPad; i++) {
        double v = x[i];
        l = (int)(i % SOFTMAX_BUCKET);
        if (v == -INFINITY) continue;              /* masked lanes add exactly nothing */
        if (v > m[l]) {                            /* new max: rescale the running sum */
            double e = parity_kern_exp(pK, kern_acc(pK, m[l] - v));
            d[l] = kern_acc(pK, kern_acc(pK, d[l] * e) + 1.0);
            m[l] = v;
        } else {                                   /* NaN lands here and poisons d */
            d[l] = kern_acc(pK, d[l] + parity_kern_exp(pK, kern_acc(pK, v - m[l])));
        }
    }
    for (l = 0; l < SOFTMAX_BUCKET; l++) M = kern_max(M, m[l]);
    /* Each lane's sum rescaled to the row's max (M = -Inf: exp(NaN), the fully masked
     * row's NaN), then a tree across the lanes. */
    for (l = 0; l < SOFTMAX_BUCKET; l++)
        d[l] = kern_acc(pK, d[l] * parity_kern_exp(pK, kern_acc(pK, m[l] - M)));
    for (w = SOFTMAX_BUCKET / 2; w > 0; w /= 2)
        for (l = 0; l < w; l++) d[l] = kern_acc(pK, d[l] + d[l + w]);
    *pM = M;
    *pD = d[0];
}

typedef struct {
    int isLog;
    uint32_t defects;
} softmax_kind;

static double compiled_softmax_row(const kern_ctx *pK, double *x, uint64_t n, void *pArg)
{
    const softmax_kind *pKind = pArg;
    int zeroBug = !pKind->isLog && has(pKind->defects, PARITY_DEFECT_MASKED_SOFTMAX_ZERO);
    double M, D, logD, invD;
    uint64_t k;
    online_softmax(pK, x, n, has(pKind->defects, PARITY_DEFECT_PADDED_STRIDE_LEAK), &M, &D);
    logD = parity_kern_log(pK, D);
    /* one reciprocal per row and a multiply per element, as compilers emit for a division
     * by a row constant: one rounding more than eager's division, which the model's
     * (2c + 2) u term covers (tolerance/op_softmax.c) */
    invD = kern_acc(pK, 1.0 / D);
    for (k = 0; k < n; k++) {
        double t = kern_acc(pK, x[k] - M);
        x[k] = pKind->isLog ? kern_acc(pK, t - logD) : kern_acc(pK, parity_kern_exp(pK, t) * invD);
        /* masked_softmax_zero (pytorch/pytorch#161150): a fully masked row (max -Inf) is
         * written as zeros instead of NaN. */
        if (zeroBug && M == -INFINITY) x[k] = 0.0;
    }
    return 0.0;
}

static int compiled_softmax(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                            double *aOut, char *zErr, size_t nErr)
{
    softmax_kind kind = { pCase->pDef == &parity_op_log_softmax, defects };
    return parity_kern_rows_apply(pCase, pK, 1, compiled_softmax_row, &kind, aOut, zErr, nErr);
}

/* ---- scans and norms ------------------------------------------------------------------ */

/* cumsum: each block scanned locally, then the block sums scanned into offsets. */
static double compiled_cumsum_row(const kern_ctx *pK, double *x, uint64_t n, void *pArg)
{
    double offset = 0.0;
    uint64_t b0, k;
    (void)pArg;
    for (b0 = 0; b0 < n; b0 += SCAN_BLOCK) {
        uint64_t end = n - b0 < SCAN_BLOCK ? n : b0 + SCAN_BLOCK;
        double local = 0.0;
        for (k = b0; k < end; k++) x[k] = local = kern_acc(pK, local + x[k]);
        for (k = b0; k < end; k++) x[k] = kern_acc(pK, offset + x[k]);
        offset = kern_acc(pK, offset + local);
    }
    return 0.0;
}

static int compiled_cumsum(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                           double *aOut, char *zErr, size_t nErr)
{
    (void)defects;
    return parity_kern_rows_apply(pCase, pK, 1, compiled_cumsum_row, NULL, aOut, zErr, nErr);
}

/* Welford's running mean and M2 over n values. */
static void welford(const kern_ctx *pK, const double *x, uint64_t n, double *pMean,
                    double *pM2)
{
    double mean = 0.0, m2 = 0.0;
    uint64_t k;
    for (k = 0; k < n; k++) {
        double delta = kern_acc(pK, x[k] - mean);
        mean = kern_acc(pK, mean + kern_acc(pK, delta / (double)(k + 1)));
        m2 = kern_acc(pK, m2 + kern_acc(pK, delta * kern_acc(pK, x[k] - mean)));
    }
    *pMean = mean;
    *pM2 = m2;
}

typedef struct {
    const kern_norm *pN;
    uint32_t defects;
    double *aSq;              /* rms_norm: one row's squares */
} norm_state;

/* layer_norm: Welford per chunk of NORM_CHUNK, chunks merged with Chan, Golub & LeVeque's
 * pairwise update (Amer. Statist. 37(3), 1983), then y = (x - mu) r w + b. */
static double compiled_layer_norm_row(const kern_ctx *pK, double *x, uint64_t n, void *pArg)
{
    const norm_state *pS = pArg;
    int mergeBug = has(pS->defects, PARITY_DEFECT_WELFORD_MERGE);
    double mean = 0.0, m2 = 0.0, count = 0.0;
    uint64_t c0;
    for (c0 = 0; c0 < n; c0 += NORM_CHUNK) {
        uint64_t len = n - c0 < NORM_CHUNK ? n - c0 : NORM_CHUNK;
        double meanB, m2B, nB = (double)len, nAB, delta;
        welford(pK, x + c0, len, &meanB, &m2B);
        if (c0 == 0) {
            mean = meanB;
            m2 = m2B;
            count = nB;
            continue;
        }
        /* welford_merge (the split-reduction family of openxla/xla#5544): the merge counts
         * in whole vectors, so a last chunk shorter than one vector (n % 2048 in 1..7)
         * is merged as if it held NORM_VECTOR values. */
        if (mergeBug && len < NORM_VECTOR) nB = (double)NORM_VECTOR;
        nAB = count + nB;
        delta = kern_acc(pK, meanB - mean);
        mean = kern_acc(pK, mean + kern_acc(pK, delta * kern_acc(pK, nB / nAB)));
        m2 = kern_acc(pK, kern_acc(pK, m2 + m2B) +
                          kern_acc(pK, kern_acc(pK, delta * delta) *
                                       kern_acc(pK, kern_acc(pK, count * nB) / nAB)));
        count = nAB;
    }
    parity_kern_norm_apply(pS->pN, pK, x, mean,
                           parity_kern_rstd(pK, kern_acc(pK, m2 / count), pS->pN->eps));
    return 0.0;
}

/* rms_norm: the compiled sum of the squares, then x r w. */
static double compiled_rms_norm_row(const kern_ctx *pK, double *x, uint64_t n, void *pArg)
{
    const norm_state *pS = pArg;
    uint64_t k;
    for (k = 0; k < n; k++) pS->aSq[k] = kern_acc(pK, x[k] * x[k]);
    parity_kern_norm_apply(pS->pN, pK, x, 0.0,
                    parity_kern_rstd(pK, kern_acc(pK, sum_split(pK, pS->aSq, n, 0) / (double)n),
                              pS->pN->eps));
    return 0.0;
}

static int compiled_norm(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                         double *aOut, char *zErr, size_t nErr)
{
    int isRms = pCase->pDef == &parity_op_rms_norm;
    kern_norm nm;
    norm_state st = { &nm, defects, NULL };
    int rc;
    if (parity_kern_norm_open(&nm, pCase, pK, zErr, nErr) != 0) return -1;
    st.aSq = parity_malloc((nm.r.rows.n + 1) * sizeof(double));   /* rms_norm's squares */
    if (!st.aSq) {
        parity_kern_rows_close(&nm.r);
        snprintf(zErr, nErr, "builtin %s: out of memory", pCase->spec.zOp);
        return -1;
    }
    rc = parity_kern_rows_run(&nm.r, pCase, pK, 1,
                       isRms ? compiled_rms_norm_row : compiled_layer_norm_row, &st, aOut);
    free(st.aSq);
    return rc;
}

/* ---- attention ------------------------------------------------------------------------ */

/* Flash attention (Dao et al., "FlashAttention", NeurIPS 2022, Algorithm 1): keys in
 * blocks of FLASH_BLOCK with a running max m and sum l; the output stays normalised, each
 * block rescaling it by l_old exp(m_old - m_new) / l_new and adding its weights p / l_new
 * times v. Normalising as it goes (rather than dividing once at the end) keeps every
 * partial sum below max |v|, so no intermediate overflows where the math path does not.
 * Masked keys get weight exactly 0 and still multiply v (0 * Inf = NaN), as the math path
 * does. */
static int compiled_sdpa(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                         double *aOut, char *zErr, size_t nErr)
{
    int zeroBug = has(defects, PARITY_DEFECT_MASKED_SOFTMAX_ZERO);
    kern_sdpa a;
    uint64_t iRow, j0, j, c;

    if (parity_kern_sdpa_open(&a, pCase, pK, zErr, nErr) != 0) return -1;
    for (iRow = 0; iRow < a.nRow; iRow++) {
        uint64_t qOff, kOff, vOff, mOff, strMS, l = iRow % a.L;
        double m = -INFINITY, sum = 0.0, *o = a.aRowOut, *s = a.aScore;
        double *pOut = aOut + iRow * a.Ev;
        parity_kern_sdpa_row(&a, iRow, &qOff, &kOff, &vOff, &mOff, &strMS);
        if (a.S == 0) {
            for (c = 0; c < a.Ev; c++) pOut[c] = 0.0;
            continue;
        }
        for (c = 0; c < a.Ev; c++) o[c] = 0.0;
        for (j0 = 0; j0 < a.S; j0 += FLASH_BLOCK) {
            uint64_t j1 = a.S - j0 < FLASH_BLOCK ? a.S : j0 + FLASH_BLOCK;
            double mNew = m, sumOld, sumNew, ratio;
            for (j = j0; j < j1; j++) {
                if (parity_kern_sdpa_masked(&a, l, j, mOff, strMS)) s[j] = -INFINITY;
                else s[j] = parity_kern_sdpa_score(&a, pK, gemm_dot(pK, a.aQ + qOff,
                                                                    a.aK + kOff + j * a.E, a.E,
                                                                    0.0, 0), j, mOff, strMS);
                mNew = kern_max(mNew, s[j]);
            }
            /* Nothing live yet (mNew = -Inf): every weight so far is 0, keep the scale. */
            sumOld = mNew == -INFINITY ? sum
                   : kern_acc(pK, sum * parity_kern_exp(pK, kern_acc(pK, m - mNew)));
            sumNew = sumOld;
            for (j = j0; j < j1; j++) {
                s[j] = s[j] == -INFINITY ? 0.0 : parity_kern_exp(pK, kern_acc(pK, s[j] - mNew));
                sumNew = kern_acc(pK, sumNew + s[j]);
            }
            ratio = sumNew == 0.0 ? 1.0 : kern_acc(pK, sumOld / sumNew);
            for (c = 0; c < a.Ev; c++) o[c] = kern_acc(pK, o[c] * ratio);
            for (j = j0; j < j1; j++) {
                const double *v = a.aV + vOff + j * a.Ev;
                double w = sumNew == 0.0 ? 0.0 : kern_acc(pK, s[j] / sumNew);
                for (c = 0; c < a.Ev; c++) o[c] = kern_acc(pK, o[c] + kern_acc(pK, w * v[c]));
            }
            m = mNew;
            sum = sumNew;
        }
        for (c = 0; c < a.Ev; c++) {
            /* A query row whose every key is masked: softmax of all -Inf is NaN.
             * masked_softmax_zero (pytorch/pytorch#161150): written as zeros instead. */
            if (m == -INFINITY) pOut[c] = zeroBug ? 0.0 : NAN;
            else pOut[c] = kern_out(pK, o[c]);
        }
    }
    parity_kern_sdpa_close(&a);
    return 0;
}

/* batch_norm in inference as torch's CPU kernel: per channel alpha = w / sqrt(v + eps) and
 * beta = b - m alpha, then y = x alpha + beta. */
static int compiled_batch_norm(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                               double *aOut, char *zErr, size_t nErr)
{
    kern_batch_norm bn;
    uint64_t i;
    (void)defects; (void)zErr; (void)nErr;
    parity_kern_batch_norm_open(&bn, pCase, pK);
    for (i = 0; i < bn.n; i++) {
        uint64_t c = (i / bn.S) % bn.C;
        double w = bn.w ? bn.w[c] : 1.0, b = bn.b ? bn.b[c] : 0.0;
        double alpha = kern_acc(pK, w / kern_acc(pK, sqrt(kern_acc(pK, bn.v[c] + bn.eps))));
        double beta = kern_acc(pK, b - kern_acc(pK, bn.m[c] * alpha));
        aOut[i] = kern_out(pK, kern_acc(pK, kern_acc(pK, bn.x[i] * alpha) + beta));
    }
    return 0;
}

/* max_pool2d walking each window column by column, as a vectorised kernel over W would;
 * a NaN tap wins as in torch (val > max || isnan(val)). */
static int compiled_max_pool2d(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                               double *aOut, char *zErr, size_t nErr)
{
    const parity_pool_geometry *pG = &pK->pCall->geom.pool;
    const double *x = pCase->aIn[0].aValue;
    uint64_t o;
    (void)defects; (void)zErr; (void)nErr;
    for (o = 0; o < pCase->nOut; o++) {
        uint64_t ox = o % pG->Wo, oy = (o / pG->Wo) % pG->Ho, plane = o / (pG->Wo * pG->Ho);
        const double *xp = x + plane * pG->H * pG->W;
        double m = -INFINITY;
        int64_t i, j;
        for (j = 0; j < (int64_t)pG->kW; j++) {
            int64_t xx = (int64_t)ox * pG->sW - pG->pW + j * pG->dW;
            if (xx < 0 || xx >= (int64_t)pG->W) continue;
            for (i = 0; i < (int64_t)pG->kH; i++) {
                int64_t y = (int64_t)oy * pG->sH - pG->pH + i * pG->dH;
                double v;
                if (y < 0 || y >= (int64_t)pG->H) continue;
                v = xp[y * (int64_t)pG->W + xx];
                if (v > m || v != v) m = v;
                if (m != m) break;
            }
            if (m != m) break;
        }
        aOut[o] = kern_out(pK, m);
    }
    return 0;
}

/* avg_pool2d and adaptive_avg_pool2d as a compiler lowers them (inductor's avg_pool2d):
 * the window worked out here from the geometry, not by the registry's walk; each window
 * row summed on its own and the row sums added (a two-level tree, another order than
 * eager's), then multiplied by the divisor's rounded reciprocal. The divisor is counted
 * the other way round: the padded window's rows and columns tested tap by tap. */
static int compiled_avg_pool2d(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                               double *aOut, char *zErr, size_t nErr)
{
    const parity_pool_geometry *pG = &pK->pCall->geom.pool;
    const int64_t H = (int64_t)pG->H, W = (int64_t)pG->W;
    const double *x = pCase->aIn[0].aValue;
    uint64_t o;
    (void)defects; (void)zErr; (void)nErr;
    for (o = 0; o < pCase->nOut; o++) {
        uint64_t ox = o % pG->Wo, oy = (o / pG->Wo) % pG->Ho, plane = o / (pG->Wo * pG->Ho);
        const double *xp = x + plane * pG->H * pG->W;
        int64_t y0, y1, x0, x1, nPadRows = 0, nPadCols = 0, y, xx, div;
        double total = 0.0;
        if (pG->kind == PARITY_POOL_ADAPTIVE_AVG) {
            y0 = (int64_t)(oy * pG->H / pG->Ho);
            y1 = (int64_t)((oy + 1) * pG->H / pG->Ho) + ((oy + 1) * pG->H % pG->Ho != 0);
            x0 = (int64_t)(ox * pG->W / pG->Wo);
            x1 = (int64_t)((ox + 1) * pG->W / pG->Wo) + ((ox + 1) * pG->W % pG->Wo != 0);
            div = (y1 - y0) * (x1 - x0);
        } else {
            int64_t i;
            y0 = (int64_t)oy * pG->sH - pG->pH;
            x0 = (int64_t)ox * pG->sW - pG->pW;
            /* rows and columns of the window inside the padded input (torch's pool_size) */
            for (i = 0; i < (int64_t)pG->kH; i++) nPadRows += y0 + i < H + pG->pH;
            for (i = 0; i < (int64_t)pG->kW; i++) nPadCols += x0 + i < W + pG->pW;
            y1 = y0 + (int64_t)pG->kH;
            x1 = x0 + (int64_t)pG->kW;
            if (y0 < 0) y0 = 0;
            if (x0 < 0) x0 = 0;
            if (y1 > H) y1 = H;
            if (x1 > W) x1 = W;
            div = pG->divisor ? pG->divisor
                : pG->countIncludePad ? nPadRows * nPadCols : (y1 - y0) * (x1 - x0);
        }
        for (y = y0; y < y1; y++) {
            double row = 0.0;
            for (xx = x0; xx < x1; xx++) row = kern_acc(pK, row + xp[y * W + xx]);
            total = kern_acc(pK, total + row);
        }
        aOut[o] = kern_out(pK, kern_acc(pK, total * kern_acc(pK, 1.0 / (double)div)));
    }
    return 0;
}

static const kern_entry aCompiled[] = {
    { &parity_op_sum, compiled_reduce }, { &parity_op_mean, compiled_reduce },
    { &parity_op_amax, compiled_reduce }, { &parity_op_amin, compiled_reduce },
    { &parity_op_var, compiled_var }, { &parity_op_logsumexp, compiled_logsumexp },
    { &parity_op_softmax, compiled_softmax }, { &parity_op_log_softmax, compiled_softmax },
    { &parity_op_cumsum, compiled_cumsum },
    { &parity_op_layer_norm, compiled_norm }, { &parity_op_rms_norm, compiled_norm },
    { &parity_op_batch_norm, compiled_batch_norm },
    { &parity_op_max_pool2d, compiled_max_pool2d },
    { &parity_op_avg_pool2d, compiled_avg_pool2d },
    { &parity_op_adaptive_avg_pool2d, compiled_avg_pool2d },
    { &parity_op_matmul, compiled_matmul }, { &parity_op_bmm, compiled_matmul },
    { &parity_op_linear, compiled_matmul }, { &parity_op_conv2d, compiled_conv2d },
    { &parity_op_addmm, compiled_matmul }, { &parity_op_baddbmm, compiled_matmul },
    { &parity_op_scaled_dot_product_attention, compiled_sdpa },
    { NULL, NULL }
};

int parity_builtin_compiled(const parity_case *pCase, uint32_t defects, double *aOut,
                            char *zErr, size_t nErr)
{
    return parity_kern_dispatch(aCompiled, pCase, defects, aOut, zErr, nErr);
}
