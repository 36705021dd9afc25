/*
 * builtin_eager.c - the builtin target's eager side: the straightforward kernel of every
 * registry op, the way a framework's reference CPU path computes it. Sums and dot
 * products accumulate sequentially, left to right, in the compute precision (float32;
 * float64 for float64 cases: kernels_internal.h), math functions are the C library's in that
 * precision, special values follow torch's formulas (NaN propagates through max and min,
 * a fully masked softmax row is NaN, ...), and each output element is rounded once to the
 * output dtype.
 *
 * Elementwise ops share their code with the compiled side (kernels.c): a compiler emits
 * the same math for them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/targets/kernels_internal.h"

/* Sequential sum and dot product: the eager summation order. The binary32 loops use float
 * variables: the same roundings as kern_acc, without the conversions in the dependency
 * chain (these are the hot loops of eager matmul, conv2d and attention). */
static double eager_sum(const kern_ctx *pK, const double *x, uint64_t n)
{
    uint64_t k;
    if (pK->f32) {
        float s = 0.0f;
        for (k = 0; k < n; k++) s += (float)x[k];
        return s;
    } else {
        double s = 0.0;
        for (k = 0; k < n; k++) s += x[k];
        return s;
    }
}

static double eager_dot(const kern_ctx *pK, const double *a, const double *b, uint64_t n)
{
    uint64_t k;
    if (pK->f32) {
        float s = 0.0f;
        /* The product of two floats is exact in binary64; the cast is the one float
         * rounding of the product, and keeps a compiler from fusing it into the sum. */
        for (k = 0; k < n; k++) s += (float)(a[k] * b[k]);
        return s;
    } else {
        double s = 0.0;
        for (k = 0; k < n; k++) s += a[k] * b[k];
        return s;
    }
}

/* NaN-propagating max of a row; -Inf for an empty one. */
static double eager_row_max(const double *x, uint64_t n)
{
    double m = -INFINITY;
    uint64_t k;
    for (k = 0; k < n; k++) m = kern_max(m, x[k]);
    return m;
}

/* ---- reductions ----------------------------------------------------------------------- */

typedef struct {
    int isMax, isMin, isMean;
} reduce_kind;

/* sum, mean, amax, amin over 'dim' (a list; absent or empty: every dim). */
static double eager_reduce_row(const kern_ctx *pK, double *x, uint64_t n, void *pArg)
{
    const reduce_kind *pKind = pArg;
    double v;
    uint64_t k;
    if (pKind->isMax || pKind->isMin) {    /* n >= 1: the registry refuses an empty amax */
        v = x[0];
        for (k = 1; k < n; k++) v = pKind->isMax ? kern_max(v, x[k]) : kern_min(v, x[k]);
        return v;
    }
    v = eager_sum(pK, x, n);
    return pKind->isMean ? kern_acc(pK, v / (double)n) : v;   /* n = 0: 0/0 = NaN, as torch */
}

static int eager_reduce(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                        double *aOut, char *zErr, size_t nErr)
{
    reduce_kind kind = { pCase->pDef == &parity_op_amax, pCase->pDef == &parity_op_amin,
                         pCase->pDef == &parity_op_mean };
    (void)defects;
    return parity_kern_rows_apply(pCase, pK, 0, eager_reduce_row, &kind, aOut, zErr, nErr);
}

/* var: two-pass, M2 / max(n - correction, 0) (torch: Inf or NaN when that is 0). */
static double eager_var_row(const kern_ctx *pK, double *x, uint64_t n, void *pArg)
{
    double mean = kern_acc(pK, eager_sum(pK, x, n) / (double)n), m2 = 0.0;
    uint64_t k;
    for (k = 0; k < n; k++) {
        double d = kern_acc(pK, x[k] - mean);
        m2 = kern_acc(pK, m2 + kern_acc(pK, d * d));
    }
    return kern_acc(pK, m2 / *(const double *)pArg);
}

static int eager_var(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                     double *aOut, char *zErr, size_t nErr)
{
    kern_rows r;
    double D;
    (void)defects;
    if (parity_kern_var_open(&r, pCase, pK, &D, zErr, nErr) != 0) return -1;
    return parity_kern_rows_run(&r, pCase, pK, 0, eager_var_row, &D, aOut);
}

/* logsumexp, as torch: m' = amax with infinities replaced by 0, log(sum exp(x - m')) + m'.
 * So +Inf gives +Inf, an all -Inf (or empty) row -Inf, NaN NaN. */
static double eager_logsumexp_row(const kern_ctx *pK, double *x, uint64_t n, void *pArg)
{
    double m = eager_row_max(x, n), s = 0.0;
    uint64_t k;
    (void)pArg;
    if (isinf(m)) m = 0.0;
    for (k = 0; k < n; k++) s = kern_acc(pK, s + parity_kern_exp(pK, kern_acc(pK, x[k] - m)));
    return kern_acc(pK, parity_kern_log(pK, s) + m);
}

static int eager_logsumexp(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                           double *aOut, char *zErr, size_t nErr)
{
    (void)defects;
    return parity_kern_rows_apply(pCase, pK, 0, eager_logsumexp_row, NULL, aOut, zErr, nErr);
}

/* ---- row-wise ops with the input's shape ---------------------------------------------- */

/* softmax and log_softmax over one 'dim' (default -1): the shifted formulas. A row with
 * NaN or +Inf, or fully -Inf, comes out NaN through x - m. */
static double eager_softmax_row(const kern_ctx *pK, double *x, uint64_t n, void *pArg)
{
    int isLog = *(const int *)pArg;
    double m = eager_row_max(x, n), s = 0.0, logS;
    uint64_t k;
    for (k = 0; k < n; k++) {
        x[k] = kern_acc(pK, x[k] - m);
        s = kern_acc(pK, s + parity_kern_exp(pK, x[k]));
    }
    logS = parity_kern_log(pK, s);
    for (k = 0; k < n; k++)
        x[k] = isLog ? kern_acc(pK, x[k] - logS) : kern_acc(pK, parity_kern_exp(pK, x[k]) / s);
    return 0.0;
}

static int eager_softmax(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                         double *aOut, char *zErr, size_t nErr)
{
    int isLog = pCase->pDef == &parity_op_log_softmax;
    (void)defects;
    return parity_kern_rows_apply(pCase, pK, 1, eager_softmax_row, &isLog, aOut, zErr, nErr);
}

static double eager_cumsum_row(const kern_ctx *pK, double *x, uint64_t n, void *pArg)
{
    double s = 0.0;
    uint64_t k;
    (void)pArg;
    for (k = 0; k < n; k++) x[k] = s = kern_acc(pK, s + x[k]);
    return 0.0;
}

static int eager_cumsum(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                        double *aOut, char *zErr, size_t nErr)
{
    (void)defects;
    return parity_kern_rows_apply(pCase, pK, 1, eager_cumsum_row, NULL, aOut, zErr, nErr);
}

/* layer_norm: two-pass mean and biased variance, r = 1 / sqrt(v + eps),
 * y = (x - mu) r w + b. */
static double eager_layer_norm_row(const kern_ctx *pK, double *x, uint64_t n, void *pArg)
{
    const kern_norm *pN = pArg;
    double mean = kern_acc(pK, eager_sum(pK, x, n) / (double)n), m2 = 0.0;
    uint64_t k;
    for (k = 0; k < n; k++) {
        double d = kern_acc(pK, x[k] - mean);
        m2 = kern_acc(pK, m2 + kern_acc(pK, d * d));
    }
    parity_kern_norm_apply(pN, pK, x, mean,
                           parity_kern_rstd(pK, kern_acc(pK, m2 / (double)n), pN->eps));
    return 0.0;
}

/* rms_norm: ms = sum x^2 / D, r = 1 / sqrt(ms + eps), y = (x r) w. */
static double eager_rms_norm_row(const kern_ctx *pK, double *x, uint64_t n, void *pArg)
{
    const kern_norm *pN = pArg;
    double ms = kern_acc(pK, eager_dot(pK, x, x, n) / (double)n);
    parity_kern_norm_apply(pN, pK, x, 0.0, parity_kern_rstd(pK, ms, pN->eps));
    return 0.0;
}

static int eager_norm(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                      double *aOut, char *zErr, size_t nErr)
{
    int isRms = pCase->pDef == &parity_op_rms_norm;
    kern_norm nm;
    (void)defects;
    if (parity_kern_norm_open(&nm, pCase, pK, zErr, nErr) != 0) return -1;
    return parity_kern_rows_run(&nm.r, pCase, pK, 1,
                                isRms ? eager_rms_norm_row : eager_layer_norm_row,
                         &nm, aOut);
}

/* batch_norm in inference as written: ((x - m) / sqrt(v + eps)) * w + b, each step rounded. */
static int eager_batch_norm(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                            double *aOut, char *zErr, size_t nErr)
{
    kern_batch_norm bn;
    uint64_t i;
    (void)defects; (void)zErr; (void)nErr;
    parity_kern_batch_norm_open(&bn, pCase, pK);
    for (i = 0; i < bn.n; i++) {
        uint64_t c = (i / bn.S) % bn.C;
        double t = kern_acc(pK, sqrt(kern_acc(pK, bn.v[c] + bn.eps)));
        double y = kern_acc(pK, kern_acc(pK, bn.x[i] - bn.m[c]) / t);
        if (bn.w) y = kern_acc(pK, kern_acc(pK, y * bn.w[c]) + bn.b[c]);
        aOut[i] = kern_out(pK, y);
    }
    return 0;
}

/* max_pool2d: each window in row-major tap order (the registry's walk). */
static int eager_max_pool2d(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                            double *aOut, char *zErr, size_t nErr)
{
    uint64_t i;
    (void)defects; (void)zErr; (void)nErr;
    for (i = 0; i < pCase->nOut; i++)
        aOut[i] = kern_out(pK, parity_pool_max(&pK->pCall->geom.pool, pCase->aIn[0].aValue, i));
    return 0;
}

/* avg_pool2d and adaptive_avg_pool2d as torch's CPU kernel: the registry's window, summed
 * row-major in the compute precision, then sum / divisor (adaptive: sum / kh / kw). */
static int eager_avg_pool2d(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                            double *aOut, char *zErr, size_t nErr)
{
    const parity_pool_geometry *pG = &pK->pCall->geom.pool;
    uint64_t o;
    (void)defects; (void)zErr; (void)nErr;
    for (o = 0; o < pCase->nOut; o++) {
        int64_t aWin[4], d, y, x;
        uint64_t plane;
        const double *xp;
        double s = 0.0;
        d = parity_pool_window(pG, o, aWin, &plane);
        xp = pCase->aIn[0].aValue + plane * pG->H * pG->W;
        for (y = aWin[0]; y < aWin[1]; y++)
            for (x = aWin[2]; x < aWin[3]; x++)
                s = kern_acc(pK, s + xp[(uint64_t)y * pG->W + (uint64_t)x]);
        if (pG->kind == PARITY_POOL_ADAPTIVE_AVG)
            s = kern_acc(pK, kern_acc(pK, s / (double)(aWin[1] - aWin[0])) /
                                 (double)(aWin[3] - aWin[2]));
        else
            s = kern_acc(pK, s / kern_acc(pK, (double)d));   /* torch converts D to float */
        aOut[o] = kern_out(pK, s);
    }
    return 0;
}

/* ---- dot-product ops ------------------------------------------------------------------ */

/* matmul, bmm, linear: one sequential dot product per output element, then the bias. */
static int eager_matmul(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                        double *aOut, char *zErr, size_t nErr)
{
    kern_gemm g;
    uint64_t iMat, i, j, o = 0;
    (void)defects;

    if (parity_kern_gemm_open(&g, pCase, pK, zErr, nErr) != 0) return -1;
    for (iMat = 0; iMat < g.nMat; iMat++) {
        uint64_t offA, offB;
        parity_kern_gemm_mat(&g, iMat, &offA, &offB);
        for (i = 0; i < g.M; i++)
            for (j = 0; j < g.N; j++) {
                double s = eager_dot(pK, g.aA + offA + i * g.K, g.aBT + offB + j * g.K, g.K);
                if (g.pBias) s = kern_acc(pK, s + g.pBias[j]);
                aOut[o] = kern_out(pK, parity_kern_gemm_addend(&g, pK, o, s));
                o++;
            }
    }
    parity_kern_gemm_close(&g);
    return 0;
}

/* conv2d: a direct loop over each receptive field (padding taps skipped), then the bias. */
static int eager_conv2d(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                        double *aOut, char *zErr, size_t nErr)
{
    kern_conv c;
    uint64_t i;
    (void)defects;

    if (parity_kern_conv_open(&c, pCase, pK, zErr, nErr) != 0) return -1;
    for (i = 0; i < pCase->nOut; i++) {
        uint64_t o, nTap = parity_kern_conv_gather(&c, i, &o);
        double s = eager_dot(pK, c.aTapX, c.aTapW, nTap);
        if (c.aBias) s = kern_acc(pK, s + c.aBias[o]);
        aOut[i] = kern_out(pK, s);
    }
    parity_kern_conv_close(&c);
    return 0;
}

/* scaled_dot_product_attention as torch's math path: scores, softmax, weights @ v. A fully
 * masked row is NaN (x - m with m = -Inf); masked keys still multiply v (0 * Inf = NaN). */
static int eager_sdpa(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                      double *aOut, char *zErr, size_t nErr)
{
    kern_sdpa a;
    uint64_t iRow, j, c;
    (void)defects;

    if (parity_kern_sdpa_open(&a, pCase, pK, zErr, nErr) != 0) return -1;
    for (iRow = 0; iRow < a.nRow; iRow++) {
        uint64_t qOff, kOff, vOff, mOff, strMS, l = iRow % a.L;
        double *s = a.aScore, m, sum = 0.0;
        double *pOut = aOut + iRow * a.Ev;
        parity_kern_sdpa_row(&a, iRow, &qOff, &kOff, &vOff, &mOff, &strMS);
        if (a.S == 0) {   /* no keys: zeros, as the registry's reference */
            for (c = 0; c < a.Ev; c++) pOut[c] = 0.0;
            continue;
        }
        for (j = 0; j < a.S; j++)
            s[j] = parity_kern_sdpa_masked(&a, l, j, mOff, strMS) ? -INFINITY
                 : parity_kern_sdpa_score(&a, pK, eager_dot(pK, a.aQ + qOff, a.aK + kOff + j * a.E,
                                                     a.E), j, mOff, strMS);
        m = eager_row_max(s, a.S);
        for (j = 0; j < a.S; j++) {
            s[j] = parity_kern_exp(pK, kern_acc(pK, s[j] - m));
            sum = kern_acc(pK, sum + s[j]);
        }
        for (j = 0; j < a.S; j++) s[j] = kern_acc(pK, s[j] / sum);
        for (c = 0; c < a.Ev; c++) a.aRowOut[c] = 0.0;
        for (j = 0; j < a.S; j++) {
            const double *v = a.aV + vOff + j * a.Ev;
            for (c = 0; c < a.Ev; c++)
                a.aRowOut[c] = kern_acc(pK, a.aRowOut[c] + kern_acc(pK, s[j] * v[c]));
        }
        for (c = 0; c < a.Ev; c++) pOut[c] = kern_out(pK, a.aRowOut[c]);
    }
    parity_kern_sdpa_close(&a);
    return 0;
}

static const kern_entry aEager[] = {
    { &parity_op_sum, eager_reduce }, { &parity_op_mean, eager_reduce },
    { &parity_op_amax, eager_reduce }, { &parity_op_amin, eager_reduce },
    { &parity_op_var, eager_var }, { &parity_op_logsumexp, eager_logsumexp },
    { &parity_op_softmax, eager_softmax }, { &parity_op_log_softmax, eager_softmax },
    { &parity_op_cumsum, eager_cumsum },
    { &parity_op_layer_norm, eager_norm }, { &parity_op_rms_norm, eager_norm },
    { &parity_op_batch_norm, eager_batch_norm }, { &parity_op_max_pool2d, eager_max_pool2d },
    { &parity_op_avg_pool2d, eager_avg_pool2d },
    { &parity_op_adaptive_avg_pool2d, eager_avg_pool2d },
    { &parity_op_matmul, eager_matmul }, { &parity_op_bmm, eager_matmul },
    { &parity_op_linear, eager_matmul }, { &parity_op_conv2d, eager_conv2d },
    { &parity_op_addmm, eager_matmul }, { &parity_op_baddbmm, eager_matmul },
    { &parity_op_scaled_dot_product_attention, eager_sdpa },
    { NULL, NULL }
};

int parity_builtin_supports(const parity_op_def *pDef)
{
    return parity_kern_has(aEager, pDef);
}

int parity_builtin_eager(const parity_case *pCase, double *aOut, char *zErr, size_t nErr)
{
    return parity_kern_dispatch(aEager, pCase, 0, aOut, zErr, nErr);
}
