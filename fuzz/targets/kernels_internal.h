/*
 * kernels_internal.h - what the builtin eager and compiled kernels (builtin_eager.c,
 * builtin_compiled.c) share: the compute precision and the final rounding, the
 * elementwise ops (whose math is the same on both sides), and the geometry of every op
 * as the registry works it out (tolerance/geometry.h), never recomputed here.
 *
 * Compute precision: binary64 when the output is float64, else binary32 (the registry's
 * default acc_dtype). Values travel as doubles; in binary32 mode every arithmetic result
 * is rounded to float by kern_acc. A binary32 +, -, *, / or sqrt computed in binary64 and
 * then rounded to binary32 is the correctly rounded binary32 result (double rounding is
 * innocuous when the wider format has at least 2p + 2 bits: Figueroa, "When is double
 * rounding innocuous?", SIGNUM Newsletter 30(3), 1995), so this is float arithmetic,
 * bit for bit, without a second copy of every kernel for float.
 *
 * Error style: 0, or -1 with a one-line reason in zErr (nothing left allocated).
 */
#ifndef PARITY_FUZZ_KERNELS_INTERNAL_H
#define PARITY_FUZZ_KERNELS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "fuzz/targets/targets.h"
#include "tolerance/rows.h"

typedef struct {
    int f32;                  /* compute in binary32 (else binary64) */
    parity_dtype out;         /* the output dtype: every result is rounded to it once */
    const parity_op_call *pCall;  /* the case as the registry reads it: its geometry
                               * (tolerance/geometry.h), set up by parity_kern_dispatch */
} kern_ctx;

/* A kernel of either side: defects are the compiled side's bits (0 for eager). */
typedef int (*kern_fn)(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                       double *aOut, char *zErr, size_t nErr);

/* A side's kernel of one registry op. */
typedef struct {
    const parity_op_def *pDef;
    kern_fn xRun;
} kern_entry;

/* Runs pCase's op: the entry of a side's NULL-terminated table, else the shared
 * elementwise kernels, after the registry's checks (input count, output dtype, shapes:
 * parity_case_op_shape), whose geometry the kernel then reads from pK->pCall. */
int parity_kern_dispatch(const kern_entry *aTable, const parity_case *pCase, uint32_t defects,
                         double *aOut, char *zErr, size_t nErr);
/* 1 when aTable or the shared elementwise kernels implement pDef. */
int parity_kern_has(const kern_entry *aTable, const parity_op_def *pDef);

/* x rounded to the compute precision. */
static inline double kern_acc(const kern_ctx *pK, double x)
{
    return pK->f32 ? (double)(float)x : x;
}

/* The one rounding of a result to the output dtype. */
static inline double kern_out(const kern_ctx *pK, double x)
{
    if (pK->out == PARITY_DT_F64) return x;
    if (pK->out == PARITY_DT_F32) return (double)(float)x;
    return parity_dtype_round(pK->out, x);
}

/* NaN-propagating max and min (torch.maximum / amax semantics). */
static inline double kern_max(double a, double b)
{
    return (a != a || a > b) ? a : b;      /* b NaN: a > b is false, b wins */
}
static inline double kern_min(double a, double b)
{
    return (a != a || a < b) ? a : b;
}

/* exp and log in the compute precision: expf/logf in binary32 mode. */
double parity_kern_exp(const kern_ctx *pK, double x);
double parity_kern_log(const kern_ctx *pK, double x);
double parity_kern_sqrt(const kern_ctx *pK, double x);

/* ---- elementwise ops (one copy for both sides) --------------------------------------- */

/* relu, gelu, silu, sigmoid, tanh, exp, log, sqrt, rsqrt, reciprocal, erf, neg, abs,
 * softplus, elu, mish.
 * PARITY_DEFECT_FASTMATH_NAN in defects makes relu drop NaN (builtin_compiled.c). */
/* An activation without attributes (gelu, its tanh form, relu, tanh, silu, sigmoid, ...)
 * of x in the compute precision, torch's formula, not rounded to the output dtype: what a
 * fused epilogue applies to its accumulator. NaN for an op that is not one. */
double parity_kern_activation(const kern_ctx *pK, const parity_op_def *pDef, int approxTanh,
                              double x);
int parity_kern_unary(const parity_case *pCase, const kern_ctx *pK, uint32_t defects, double *aOut,
                      char *zErr, size_t nErr);
/* add, sub (alpha), mul, div, maximum, minimum with broadcasting; FASTMATH_NAN as above. */
int parity_kern_binary(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                       double *aOut, char *zErr, size_t nErr);
/* transpose, permute, reshape: values moved, not computed. */
int parity_kern_layout(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                       double *aOut, char *zErr, size_t nErr);
/* cast: one rounding into 'to' (the output dtype). */
int parity_kern_cast(const parity_case *pCase, const kern_ctx *pK, uint32_t defects, double *aOut,
                     char *zErr, size_t nErr);

/* ---- rows: reductions, softmax, scans, norms ----------------------------------------- */

typedef struct {
    parity_rows rows;         /* n values per row, nRow rows (rows.h) */
    uint64_t *aRel;           /* offset of row element k from the row's first element */
    double *aBuf;             /* one row (n + 16 values: room for a padded vector) */
} kern_rows;

/* The rows of input 0 the registry made for the op (geom.rows: reductions, softmax,
 * scans). */
int parity_kern_rows_open(kern_rows *pR, const parity_case *pCase, const kern_ctx *pK, char *zErr,
                          size_t nErr);
void parity_kern_rows_close(kern_rows *pR);
/* Copies row iRow of input 0 into pR->aBuf, each value rounded to the compute precision. */
void parity_kern_rows_gather(kern_rows *pR, const kern_ctx *pK, const double *x, uint64_t iRow);
/* Writes aVal (one row, compute precision) into aOut at the row's input-shaped offsets,
 * each value rounded to the output dtype. */
void parity_kern_rows_scatter(const kern_rows *pR, const kern_ctx *pK, uint64_t iRow,
                              const double *aVal, double *aOut);

/* One row of a row op: aRow holds the row's n values in the compute precision (with room
 * for 16 more, a padded vector); same-shape ops rewrite it in place, reductions return
 * their one value. pArg is the kernel's own state. */
typedef double (*kern_row_fn)(const kern_ctx *pK, double *aRow, uint64_t n, void *pArg);

/* The loop every row op shares: for each row of pR (opened by parity_kern_rows_open or one of
 * the *_open below), gathers it from input 0, calls xRow, and writes the rewritten row at
 * its input-shaped offsets (same) or the returned value at aOut[iRow], each rounded once
 * to the output dtype. Closes pR; returns 0. */
int parity_kern_rows_run(kern_rows *pR, const parity_case *pCase, const kern_ctx *pK, int same,
                         kern_row_fn xRow, void *pArg, double *aOut);
/* parity_kern_rows_open then parity_kern_rows_run: a row op with nothing of its own to
 * open. */
int parity_kern_rows_apply(const parity_case *pCase, const kern_ctx *pK, int same,
                           kern_row_fn xRow, void *pArg, double *aOut, char *zErr, size_t nErr);

/* The rows of var, with its divisor max(n - correction, 0) in the compute precision
 * (the registry's correction: 'correction', else 'unbiased', default 1). */
int parity_kern_var_open(kern_rows *pR, const parity_case *pCase, const kern_ctx *pK,
                         double *pDivisor, char *zErr, size_t nErr);

/* layer_norm (isRms 0) and rms_norm (isRms 1): normalized_shape, weight, bias, eps. */
typedef struct {
    kern_rows r;              /* one row per normalized slice; r.rows.n = D */
    const double *pWeight, *pBias;
    double eps;               /* already in the compute precision */
} kern_norm;

/* The normalized rows, weight, bias and eps of the registry's geom.norm. */
int parity_kern_norm_open(kern_norm *pN, const parity_case *pCase, const kern_ctx *pK, char *zErr,
                          size_t nErr);
/* 1 / sqrt(var + eps): two roundings, as torch's rsqrt on CPU. */
double parity_kern_rstd(const kern_ctx *pK, double var, double eps);
/* The row x (pN->r.aBuf) becomes ((x - mean) rstd) w + b in place; rms_norm passes mean 0
 * (x - 0 is exact). */
void parity_kern_norm_apply(const kern_norm *pN, const kern_ctx *pK, double *x, double mean,
                            double rstd);

/* ---- dot-product ops ------------------------------------------------------------------ */

/* matmul, bmm, linear as nMat independent [M, K] x [K, N] products. Both operands are
 * copied in the compute precision with K contiguous: A as [.., M, K], B transposed as
 * [.., N, K] (linear's weight already is). Output (iMat, i, j) is element
 * (iMat M + i) N + j. */
typedef struct {
    const parity_dot_geometry *pGeom;     /* the registry's (kern_ctx.pCall) */
    uint64_t M, K, N, nMat;
    double *aA, *aBT;
    const double *pBias;      /* linear's bias (compute precision: see aBias) */
    double *aBias;
    double *aC;               /* addmm's addend c (compute precision), or NULL */
} kern_gemm;

int parity_kern_gemm_open(kern_gemm *pG, const parity_case *pCase, const kern_ctx *pK, char *zErr,
                          size_t nErr);
void parity_kern_gemm_close(kern_gemm *pG);
/* addmm, baddbmm: output element o from its dot product s, beta c + alpha s, each step
 * rounded to the compute precision (s itself without an addend). */
double parity_kern_gemm_addend(const kern_gemm *pG, const kern_ctx *pK, uint64_t o, double s);
/* Offsets of output matrix iMat's A block and B^T block. */
void parity_kern_gemm_mat(const kern_gemm *pG, uint64_t iMat, uint64_t *pOffA, uint64_t *pOffB);

/* conv2d: every output element is a dot product over its receptive field. */
typedef struct {
    const parity_conv_geometry *pGeom;    /* the registry's (kern_ctx.pCall) */
    uint64_t K;                           /* terms per output element, at most */
    double *aX, *aW, *aBias;  /* compute precision copies; aBias NULL without bias */
    double *aTapX, *aTapW;    /* one receptive field, K each */
} kern_conv;

int parity_kern_conv_open(kern_conv *pC, const parity_case *pCase, const kern_ctx *pK, char *zErr,
                          size_t nErr);
void parity_kern_conv_close(kern_conv *pC);
/* Gathers output element `linear`'s live taps (c, i, j order; taps in the zero padding
 * are left out, so 0 * Inf never appears) into aTapX/aTapW; returns their count and the
 * output channel in *pO. */
uint64_t parity_kern_conv_gather(kern_conv *pC, uint64_t linear, uint64_t *pO);

/* scaled_dot_product_attention: q [.., L, E], k [.., S, E], v [.., S, Ev], mask. */
typedef struct {
    const parity_attention_geometry *pGeom;   /* the registry's (kern_ctx.pCall) */
    uint64_t L, S, E, Ev, nRow;           /* nRow = batch * L query rows */
    parity_mask_kind maskKind;            /* bool: False masks; float: added */
    int causal;
    double scale;                         /* compute precision */
    double *aQ, *aK, *aV, *aM;            /* compute precision copies */
    double *aScore, *aRowOut;             /* scratch: S scores, Ev outputs */
} kern_sdpa;

int parity_kern_sdpa_open(kern_sdpa *pA, const parity_case *pCase, const kern_ctx *pK, char *zErr,
                          size_t nErr);
void parity_kern_sdpa_close(kern_sdpa *pA);
/* Offsets of query row iRow's q row, its k and v matrices, and its mask row (of stride
 * *pStrMS along S). */
void parity_kern_sdpa_row(const kern_sdpa *pA, uint64_t iRow, uint64_t *pQ, uint64_t *pK,
                          uint64_t *pV, uint64_t *pM, uint64_t *pStrMS);
/* Score of key j from its dot product: dot times scale, plus a float mask. */
double parity_kern_sdpa_score(const kern_sdpa *pA, const kern_ctx *pK, double dot, uint64_t j,
                              uint64_t mOff, uint64_t strMS);
/* 1 when key j is masked out before any dot product (causal, or a False bool mask). */
int parity_kern_sdpa_masked(const kern_sdpa *pA, uint64_t l, uint64_t j, uint64_t mOff,
                            uint64_t strMS);

/* batch_norm's operands per element: x, and per channel the mean, variance, weight and
 * bias (1 and 0 without affine), eps in the compute precision; both builtin kernels walk
 * them, each with its own formula. */
typedef struct {
    const double *x, *m, *v, *w, *b;
    double eps;
    uint64_t n, S, C;
} kern_batch_norm;

void parity_kern_batch_norm_open(kern_batch_norm *pBn, const parity_case *pCase,
                                 const kern_ctx *pK);

/* select, slice, split: the one kernel of their family (exact), on both sides. */
int parity_kern_slice(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                      double *aOut, char *zErr, size_t nErr);

/* cat, stack, expand: the one kernel of their family (exact), on both sides. */
int parity_kern_concat(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                       double *aOut, char *zErr, size_t nErr);

/* embedding: the one kernel of its family (exact), on both sides. */
int parity_kern_embedding(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                          double *aOut, char *zErr, size_t nErr);

/* where, masked_fill: the one kernel of their family (exact), on both sides. */
int parity_kern_where(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                      double *aOut, char *zErr, size_t nErr);

#endif
