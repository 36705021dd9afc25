/*
 * geometry.h - what an op's shape rule works out, exported: the dot-product dims and batch
 * strides, the convolution's output size, the attention's shapes, the normalized rows, the
 * reduced dims, the broadcast strides, a permutation.
 *
 * Each op's xPrepare (ops.h) reads its operands' shapes and its attributes, checks them and
 * fills one member of parity_op_call.geom, the member of its family (parity_op_family). It
 * reads no operand values, so the fuzzer calls it on a case before the case has values
 * (parity_op_begin_shape) to get the output shape, the cost and these numbers: the builtin
 * kernels and the oneDNN target run from them, and nothing outside tolerance/ recomputes a
 * shape rule. Offsets and strides count elements of a row-major operand.
 */
#ifndef PARITY_TOLERANCE_GEOMETRY_H
#define PARITY_TOLERANCE_GEOMETRY_H

#include <stdint.h>
#include "formats/capture.h"

/* matmul, bmm, linear: nMat = prod(aBatchDim) independent [M, K] x [K, N] products.
 * Output element (iMat, i, j) is element (iMat M + i) N + j. Operand a's row i of matrix
 * iMat starts at sum_d idx_d aStrideA[d] + i strideAm and steps strideAk along K; b's
 * column j at sum_d idx_d aStrideB[d] + j strideBn, stepping strideBk. aStride* are 0 where
 * an operand broadcasts (torch.matmul's batch rule; a 1-D a is a row, a 1-D b a column). */
typedef struct {
    uint64_t M, K, N, nMat;
    int nBatch;                              /* batch dims of the output */
    uint64_t aBatchDim[PARITY_MAX_RANK];
    uint64_t aStrideA[PARITY_MAX_RANK], aStrideB[PARITY_MAX_RANK];
    uint64_t strideAk, strideAm, strideBk, strideBn;
    int hasBias;                             /* linear's bias [N] is input 2 */
    /* addmm, baddbmm: out = beta c + alpha (a b), the addend c input 0 (a and b follow, at
     * iA and iA + 1), read with stride aStrideC[d] along output dim d (0: broadcast); with
     * beta = 0, c is not read (torch ignores it, NaN included) */
    int iA, hasAddend;
    double alpha, beta;
    uint64_t aStrideC[PARITY_MAX_RANK];
} parity_dot_geometry;

/* conv2d: input [N, C, H, W] (unbatched [C, H, W]: N = 1), weight [O, Cg, kH, kW] with
 * Cg = C / G, output [N, O, Ho, Wo]; pH, pW the padding before (top, left). Output channel
 * o belongs to group o / Og. K = Cg kH kW terms per output element. */
typedef struct {
    uint64_t N, C, H, W, O, G, Cg, Og, kH, kW, Ho, Wo, K;
    int64_t sH, sW, pH, pW, dH, dW;
    int batched, hasBias;
} parity_conv_geometry;

/* scaled_dot_product_attention: q [.., L, E], k [.., S, E], v [.., S, Ev], out [.., L, Ev];
 * nRow = prod(batch) L query rows. Strides over the batch dims (0 where broadcast); the
 * mask's over batch.., L, S. */
typedef enum { PARITY_MASK_NONE, PARITY_MASK_BOOL, PARITY_MASK_FLOAT } parity_mask_kind;
typedef struct {
    uint64_t L, S, E, Ev, nRow;
    int nBatch;
    uint64_t aBatchDim[PARITY_MAX_RANK];
    uint64_t aStrQ[PARITY_MAX_RANK], aStrK[PARITY_MAX_RANK], aStrV[PARITY_MAX_RANK];
    uint64_t aStrM[PARITY_MAX_RANK + 2];
    /* Grouped-query attention (enable_gqa): k and v have nHeadKV = Hq / nGroup heads on
     * the head dim (batch dim iGroupDim, the last), and query head h reads k/v head
     * h / nGroup, as torch repeats them (repeat_interleave). nGroup 1: none. */
    uint64_t nGroup;
    int iGroupDim;
    parity_mask_kind maskKind;               /* a bool mask keeps True; a float one adds */
    int causal;
    double scale;                            /* 'scale', else 1 / sqrt(E) */
} parity_attention_geometry;

/* Rows of input 0 along some of its dims (reductions, softmax, scans, rms_norm): a row is
 * the elements sharing their indices on the kept dims, ordered row-major over the reduced
 * dims; rows are numbered row-major over the kept dims (the output index of a reduction).
 * See rows.h for the functions over it. */
typedef struct {
    int rank;
    uint64_t aDim[PARITY_MAX_RANK];
    unsigned char aRed[PARITY_MAX_RANK];     /* 1: dim is reduced (in the row) */
    int nKept, nRed;
    uint64_t aKeptDim[PARITY_MAX_RANK], aKeptStride[PARITY_MAX_RANK];
    uint64_t aRedDim[PARITY_MAX_RANK], aRedStride[PARITY_MAX_RANK];
    uint64_t n;                              /* elements per row */
    uint64_t nRow;
} parity_rows;

typedef struct {
    parity_rows rows;
    int keepdim;                             /* reductions */
    double correction;                       /* var: the divisor is max(n - correction, 0) */
} parity_rows_geometry;

/* layer_norm and rms_norm: nRow rows of the last D = prod(normalized_shape) elements. */
typedef struct {
    uint64_t D, nRow;
    int nNormDims;
    double eps;
    int hasWeight, hasBias;                  /* inputs 1 and 2, shaped normalized_shape */
} parity_norm_geometry;

/* Elementwise ops. Binary: per output dim, the stride of x and y (0 where broadcast),
 * alpha (add, sub). Unary: gelu's approximation, softplus's beta and threshold, elu's
 * alpha, clamp's bounds and pow's exponent (each rounded to the input's dtype, as torch
 * casts the scalar: op_clamp.c, op_pow.c). where and masked_fill (op_where.c): the bool
 * operand's strides in aStrideC, x's in aStrideX, y's (masked_fill: a 0-d value operand's)
 * in aStrideY. */
typedef struct {
    uint64_t aStrideX[PARITY_MAX_RANK], aStrideY[PARITY_MAX_RANK];
    double alpha, beta, threshold;
    int approximateTanh;
    double lo, hi;                           /* clamp: -Inf / +Inf where absent */
    double exponent;                         /* pow */
    uint64_t aStrideC[PARITY_MAX_RANK];      /* where's cond, masked_fill's mask */
    double fill;                             /* masked_fill's value (no value operand) */
    int hasFillOperand;                      /* masked_fill.Tensor: the value is input 2 */
} parity_elementwise_geometry;

/* batch_norm (inference): x [N, C, spatial..] (rank >= 2), S = prod(spatial) elements a
 * channel per sample; element `linear` is channel (linear / S) % C. Operands: x, then
 * weight and bias [C] when hasAffine, then running_mean and running_var [C]. */
typedef struct {
    uint64_t N, C, S;
    int hasAffine;
    double eps;
} parity_batch_norm_geometry;

/* max_pool2d, avg_pool2d, adaptive_avg_pool2d: x [N, C, H, W] (unbatched [C, H, W]:
 * N = 1), output [N, C, Ho, Wo]. max and avg: window taps at (oy sH - pH + i dH,
 * ox sW - pW + j dW), those outside the input skipped (avg: dH = dW = 1). adaptive: rows
 * floor(oy H / Ho) .. ceil((oy + 1) H / Ho) - 1 and the same for columns; kH, kW are its
 * largest window, the strides, paddings and dilations 0. */
typedef enum { PARITY_POOL_MAX, PARITY_POOL_AVG, PARITY_POOL_ADAPTIVE_AVG } parity_pool_kind;
typedef struct {
    uint64_t N, C, H, W, kH, kW, Ho, Wo;
    int64_t sH, sW, pH, pW, dH, dW;
    int batched;
    parity_pool_kind kind;
    int countIncludePad;                     /* avg: taps in the padding count in the divisor */
    int64_t divisor;                         /* avg: divisor_override, 0 when none */
} parity_pool_geometry;

/* select, slice, split (its first output): along dim, output index i reads input index
 * start + i step (select drops the dim: i = 0); the other dims are kept. */
typedef struct {
    int rank, dim, drop;
    int64_t start, step;
    uint64_t aInStride[PARITY_MAX_RANK];
} parity_slice_geometry;

/* cat, stack, expand: output element `linear` is one element of one input
 * (parity_concat_source). cat and stack: output [outer, outSize, inner] around dim, input k
 * holding aSize[k] consecutive indices along it (stack: 1 each, along a new dim); expand
 * (expand = 1): its one input read with stride aStride[d] along output dim d, 0 where a dim
 * of 1 is repeated or the dim is new. */
#define PARITY_CONCAT_MAX_IN 8
typedef struct {
    int nIn, dim, expand;
    uint64_t inner, outSize;
    uint64_t aSize[PARITY_CONCAT_MAX_IN];
    uint64_t aStride[PARITY_MAX_RANK];
} parity_concat_geometry;

/* embedding: weight [V, D]; output row r is weight row indices[r]. */
typedef struct {
    uint64_t V, D;
} parity_embedding_geometry;

/* transpose, permute: output dim d reads input dim aPerm[d]. */
typedef struct {
    int aPerm[PARITY_MAX_RANK];
} parity_perm_geometry;

typedef union {
    parity_dot_geometry dot;
    parity_conv_geometry conv;
    parity_attention_geometry attention;
    parity_rows_geometry rows;
    parity_norm_geometry norm;
    parity_batch_norm_geometry batchNorm;
    parity_pool_geometry pool;
    parity_slice_geometry slice;
    parity_concat_geometry concat;
    parity_embedding_geometry embedding;
    parity_elementwise_geometry elementwise;
    parity_perm_geometry perm;
} parity_op_geometry;

/* The walks over a geometry that the registry's references and the fuzzer's kernels share
 * (op_matmul.c, op_conv2d.c, op_sdpa.c). */

/* Offsets of matrix iMat's a and b blocks (a's row 0, b's column 0). */
void parity_dot_matrix(const parity_dot_geometry *pG, uint64_t iMat, uint64_t *pOffA,
                       uint64_t *pOffB);
/* Gathers output element `linear`'s live taps, input x weight, into aX and aW in (c, i, j)
 * order (taps in the zero padding are left out, so 0 * Inf never appears); returns their
 * count (at most K) and the output channel in *pO. */
uint64_t parity_conv_taps(const parity_conv_geometry *pG, const double *x, const double *w,
                          uint64_t linear, double *aX, double *aW, uint64_t *pO);
/* The weight row an embedding index selects, or -1 when it is no integer in [0, V). */
int64_t parity_embedding_row(const parity_embedding_geometry *pG, double index);
/* The input offset that output element `linear` of a slicing op reads (op_slice.c). */
uint64_t parity_slice_source(const parity_slice_geometry *pG, const uint64_t *aOutDim,
                             int outRank, uint64_t linear);
/* The input (*piIn) and its offset that output element `linear` of cat, stack or expand
 * reads (op_concat.c). */
uint64_t parity_concat_source(const parity_concat_geometry *pG, const uint64_t *aOutDim,
                              int outRank, uint64_t linear, int *piIn);
/* max_pool2d's output element `linear`: the largest tap of its window, NaN if one is NaN
 * (op_max_pool2d.c; the builtin kernels walk the window their own ways). */
double parity_pool_max(const parity_pool_geometry *pG, const double *x, uint64_t linear);
/* avg_pool2d's and adaptive_avg_pool2d's output element `linear`: its taps inside the
 * input, rows [aWin[0], aWin[1]) and columns [aWin[2], aWin[3]) of plane *pPlane (n C + c,
 * H W elements from x's start), never empty; returns the divisor of their sum, torch's
 * divide_factor: divisor_override, else with count_include_pad the window clipped to the
 * padded input, else the taps; adaptive: the taps (op_avg_pool2d.c). */
int64_t parity_pool_window(const parity_pool_geometry *pG, uint64_t linear, int64_t aWin[4],
                           uint64_t *pPlane);
/* Offsets of query row iRow (batch * L + l): its q row, its k and v matrices, its mask row
 * and the mask's stride along S. */
void parity_attention_row(const parity_attention_geometry *pG, uint64_t iRow, uint64_t *pQ,
                          uint64_t *pK, uint64_t *pV, uint64_t *pM, uint64_t *pStrMS);

/* The broadcast shape of n operands, operand i being the nRank[i] dims at aapDim[i]
 * (right-aligned; for the batched ops, their leading batch dims): each dim of the result
 * is the operands' common size, a 1 giving way to any other. Returns the result's rank
 * (the largest of the ranks) with its dims in aOut, or -1 when some dim has two sizes
 * other than 1, whose index in the result is then *piBad. */
int parity_broadcast_shape(int n, const int *anRank, const uint64_t *const *aapDim,
                           uint64_t *aOut, int *piBad);

/* Strides of an operand whose dims (nOwn, right-aligned) broadcast against nDim dims aDim,
 * each equal or 1: its trailing nInner elements form one block (1 for elementwise ops, a
 * matrix for the batched ones), and aStride[d] is the step of dim d, 0 where the operand
 * has no such dim or broadcasts a 1. Returns 0, or -1 when a dim neither matches nor is 1,
 * or the operand has more dims than aDim. With parity_broadcast_shape, the one
 * broadcasting rule of the registry. */
int parity_broadcast_strides(int nDim, const uint64_t *aDim, const uint64_t *aOwn, int nOwn,
                             uint64_t nInner, uint64_t *aStride);

#endif
