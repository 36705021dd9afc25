/*
 * builtin_eager.c - the builtin target's eager side: the straightforward kernel of every
 * registry op, the way a framework's reference CPU path computes it. Sums and dot
 * products accumulate sequentially, left to right, in the compute precision (float32;
 * float64 for float64 cases: kernels.h), math functions are the C library's in that
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
#include "kernels.h"
#include "target.h"

/* Sequential sum and dot product: the eager summation order. */
static double eager_sum(const kern_ctx *pK, const double *x, uint64_t n)
{
    double s = 0.0;
    uint64_t k;
    for (k = 0; k < n; k++) s = kern_acc(pK, s + x[k]);
    return s;
}

static double eager_dot(const kern_ctx *pK, const double *a, const double *b, uint64_t n)
{
    double s = 0.0;
    uint64_t k;
    for (k = 0; k < n; k++) s = kern_acc(pK, s + kern_acc(pK, a[k] * b[k]));
    return s;
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

/* sum, mean, amax, amin over 'dim' (a list; absent or empty: every dim). */
static int eager_reduce(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                        double *aOut, char *zErr, size_t nErr)
{
    const char *zOp = pCase->spec.zOp;
    int isMax = strcmp(zOp, "amax") == 0, isMin = strcmp(zOp, "amin") == 0;
    int isMean = strcmp(zOp, "mean") == 0;
    kern_rows r;
    uint64_t iRow, k, n;
    (void)defects;

    if (kern_reduce_open(&r, pCase, zErr, nErr) != 0) return -1;
    n = r.rows.n;
    for (iRow = 0; iRow < r.rows.nRow; iRow++) {
        double v;
        kern_rows_gather(&r, pK, pCase->aIn[0].aValue, iRow);
        if (isMax || isMin) {
            v = r.aBuf[0];
            for (k = 1; k < n; k++) v = isMax ? kern_max(v, r.aBuf[k]) : kern_min(v, r.aBuf[k]);
        } else {
            v = eager_sum(pK, r.aBuf, n);
            if (isMean) v = kern_acc(pK, v / (double)n);   /* n = 0: 0/0 = NaN, as torch */
        }
        aOut[iRow] = kern_out(pK, v);
    }
    kern_rows_close(&r);
    return 0;
}

/* var: two-pass, M2 / max(n - correction, 0) (torch: Inf or NaN when that is 0). */
static int eager_var(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                     double *aOut, char *zErr, size_t nErr)
{
    kern_rows r;
    double D;
    uint64_t iRow, k, n;
    (void)defects;

    if (kern_var_open(&r, pCase, pK, &D, zErr, nErr) != 0) return -1;
    n = r.rows.n;
    for (iRow = 0; iRow < r.rows.nRow; iRow++) {
        double mean, m2 = 0.0;
        kern_rows_gather(&r, pK, pCase->aIn[0].aValue, iRow);
        mean = kern_acc(pK, eager_sum(pK, r.aBuf, n) / (double)n);
        for (k = 0; k < n; k++) {
            double d = kern_acc(pK, r.aBuf[k] - mean);
            m2 = kern_acc(pK, m2 + kern_acc(pK, d * d));
        }
        aOut[iRow] = kern_out(pK, kern_acc(pK, m2 / D));
    }
    kern_rows_close(&r);
    return 0;
}

/* logsumexp, as torch: m' = amax with infinities replaced by 0, log(sum exp(x - m')) + m'.
 * So +Inf gives +Inf, an all -Inf (or empty) row -Inf, NaN NaN. */
static int eager_logsumexp(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                           double *aOut, char *zErr, size_t nErr)
{
    kern_rows r;
    uint64_t iRow, k, n;
    (void)defects;

    if (kern_reduce_open(&r, pCase, zErr, nErr) != 0) return -1;
    n = r.rows.n;
    for (iRow = 0; iRow < r.rows.nRow; iRow++) {
        double m, s = 0.0;
        kern_rows_gather(&r, pK, pCase->aIn[0].aValue, iRow);
        m = eager_row_max(r.aBuf, n);
        if (isinf(m)) m = 0.0;
        for (k = 0; k < n; k++) s = kern_acc(pK, s + kern_exp(pK, kern_acc(pK, r.aBuf[k] - m)));
        aOut[iRow] = kern_out(pK, kern_acc(pK, kern_log(pK, s) + m));
    }
    kern_rows_close(&r);
    return 0;
}

/* ---- row-wise ops with the input's shape ---------------------------------------------- */

/* softmax and log_softmax over one 'dim' (default -1): the shifted formulas. A row with
 * NaN or +Inf, or fully -Inf, comes out NaN through x - m. */
static int eager_softmax(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                         double *aOut, char *zErr, size_t nErr)
{
    int isLog = strcmp(pCase->spec.zOp, "log_softmax") == 0;
    kern_rows r;
    uint64_t iRow, k, n;
    (void)defects;

    if (kern_rows_open(&r, pCase, "dim", 0, 0, -1, 1, zErr, nErr) != 0) return -1;
    n = r.rows.n;
    for (iRow = 0; iRow < r.rows.nRow; iRow++) {
        double m, s = 0.0, logS;
        kern_rows_gather(&r, pK, pCase->aIn[0].aValue, iRow);
        m = eager_row_max(r.aBuf, n);
        for (k = 0; k < n; k++) {
            r.aBuf[k] = kern_acc(pK, r.aBuf[k] - m);
            s = kern_acc(pK, s + kern_exp(pK, r.aBuf[k]));
        }
        logS = kern_log(pK, s);
        for (k = 0; k < n; k++)
            r.aBuf[k] = isLog ? kern_acc(pK, r.aBuf[k] - logS)
                              : kern_acc(pK, kern_exp(pK, r.aBuf[k]) / s);
        kern_rows_scatter(&r, pK, iRow, r.aBuf, aOut);
    }
    kern_rows_close(&r);
    return 0;
}

static int eager_cumsum(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                        double *aOut, char *zErr, size_t nErr)
{
    kern_rows r;
    uint64_t iRow, k;
    (void)defects;

    if (kern_rows_open(&r, pCase, "dim", 0, 0, -1, 1, zErr, nErr) != 0) return -1;
    for (iRow = 0; iRow < r.rows.nRow; iRow++) {
        double s = 0.0;
        kern_rows_gather(&r, pK, pCase->aIn[0].aValue, iRow);
        for (k = 0; k < r.rows.n; k++) r.aBuf[k] = s = kern_acc(pK, s + r.aBuf[k]);
        kern_rows_scatter(&r, pK, iRow, r.aBuf, aOut);
    }
    kern_rows_close(&r);
    return 0;
}

/* layer_norm: two-pass mean and biased variance, r = 1 / sqrt(v + eps),
 * y = (x - mu) r w + b. */
static int eager_layer_norm(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                            double *aOut, char *zErr, size_t nErr)
{
    kern_norm nm;
    uint64_t iRow, k, n;
    (void)defects;

    if (kern_norm_open(&nm, pCase, pK, 0, zErr, nErr) != 0) return -1;
    n = nm.r.rows.n;
    for (iRow = 0; iRow < nm.r.rows.nRow; iRow++) {
        double *x = nm.r.aBuf, mean, m2 = 0.0, rstd;
        kern_rows_gather(&nm.r, pK, pCase->aIn[0].aValue, iRow);
        mean = kern_acc(pK, eager_sum(pK, x, n) / (double)n);
        for (k = 0; k < n; k++) {
            double d = kern_acc(pK, x[k] - mean);
            m2 = kern_acc(pK, m2 + kern_acc(pK, d * d));
        }
        rstd = kern_rstd(pK, kern_acc(pK, m2 / (double)n), nm.eps);
        kern_norm_apply(&nm, pK, x, mean, rstd);
        kern_rows_scatter(&nm.r, pK, iRow, x, aOut);
    }
    kern_rows_close(&nm.r);
    return 0;
}

/* rms_norm: ms = sum x^2 / D, r = 1 / sqrt(ms + eps), y = (x r) w. */
static int eager_rms_norm(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                          double *aOut, char *zErr, size_t nErr)
{
    kern_norm nm;
    uint64_t iRow, n;
    (void)defects;

    if (kern_norm_open(&nm, pCase, pK, 1, zErr, nErr) != 0) return -1;
    n = nm.r.rows.n;
    for (iRow = 0; iRow < nm.r.rows.nRow; iRow++) {
        double *x = nm.r.aBuf, rstd;
        kern_rows_gather(&nm.r, pK, pCase->aIn[0].aValue, iRow);
        rstd = kern_rstd(pK, kern_acc(pK, eager_dot(pK, x, x, n) / (double)n), nm.eps);
        kern_norm_apply(&nm, pK, x, 0.0, rstd);
        kern_rows_scatter(&nm.r, pK, iRow, x, aOut);
    }
    kern_rows_close(&nm.r);
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

    if (kern_gemm_open(&g, pCase, pK, zErr, nErr) != 0) return -1;
    for (iMat = 0; iMat < g.nMat; iMat++) {
        uint64_t offA, offB;
        kern_gemm_mat(&g, iMat, &offA, &offB);
        for (i = 0; i < g.M; i++)
            for (j = 0; j < g.N; j++) {
                double s = eager_dot(pK, g.aA + offA + i * g.K, g.aBT + offB + j * g.K, g.K);
                if (g.pBias) s = kern_acc(pK, s + g.pBias[j]);
                aOut[o++] = kern_out(pK, s);
            }
    }
    kern_gemm_close(&g);
    return 0;
}

/* conv2d: a direct loop over each receptive field (padding taps skipped), then the bias. */
static int eager_conv2d(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                        double *aOut, char *zErr, size_t nErr)
{
    kern_conv c;
    uint64_t i;
    (void)defects;

    if (kern_conv_open(&c, pCase, pK, zErr, nErr) != 0) return -1;
    for (i = 0; i < pCase->nOut; i++) {
        uint64_t o, nTap = kern_conv_gather(&c, i, &o);
        double s = eager_dot(pK, c.aTapX, c.aTapW, nTap);
        if (c.aBias) s = kern_acc(pK, s + c.aBias[o]);
        aOut[i] = kern_out(pK, s);
    }
    kern_conv_close(&c);
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

    if (kern_sdpa_open(&a, pCase, pK, zErr, nErr) != 0) return -1;
    for (iRow = 0; iRow < a.nRow; iRow++) {
        uint64_t qOff, kOff, vOff, mOff, strMS, l = iRow % a.L;
        double *s = a.aScore, m, sum = 0.0;
        double *pOut = aOut + iRow * a.Ev;
        kern_sdpa_row(&a, iRow, &qOff, &kOff, &vOff, &mOff, &strMS);
        if (a.S == 0) {   /* no keys: zeros, as the registry's reference */
            for (c = 0; c < a.Ev; c++) pOut[c] = 0.0;
            continue;
        }
        for (j = 0; j < a.S; j++)
            s[j] = kern_sdpa_masked(&a, l, j, mOff, strMS) ? -INFINITY
                 : kern_sdpa_score(&a, pK, eager_dot(pK, a.aQ + qOff, a.aK + kOff + j * a.E,
                                                     a.E), j, mOff, strMS);
        m = eager_row_max(s, a.S);
        for (j = 0; j < a.S; j++) {
            s[j] = kern_exp(pK, kern_acc(pK, s[j] - m));
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
    kern_sdpa_close(&a);
    return 0;
}

static const kern_entry aEager[] = {
    { "sum", eager_reduce }, { "mean", eager_reduce }, { "amax", eager_reduce },
    { "amin", eager_reduce }, { "var", eager_var }, { "logsumexp", eager_logsumexp },
    { "softmax", eager_softmax }, { "log_softmax", eager_softmax },
    { "cumsum", eager_cumsum }, { "layer_norm", eager_layer_norm },
    { "rms_norm", eager_rms_norm },
    { "matmul", eager_matmul }, { "bmm", eager_matmul }, { "linear", eager_matmul },
    { "conv2d", eager_conv2d }, { "scaled_dot_product_attention", eager_sdpa },
    { NULL, NULL }
};

int parity_builtin_supports(const char *zOp)
{
    return kern_has(aEager, zOp);
}

int parity_builtin_eager(const parity_case *pCase, double *aOut, char *zErr, size_t nErr)
{
    return kern_dispatch(aEager, pCase, 0, aOut, zErr, nErr);
}
