/*
 * defects.c - the catalogue of defects the builtin compiled kernels can carry
 * (PARITY_DEFECT_* in targets.h). Each is modelled on a public bug and, like it, changes
 * the result only on a rare shape or value, so a campaign has to search for it; the code
 * of each lives in builtin_compiled.c behind its bit, next to a comment citing the same
 * bug.
 */
#include <string.h>
#include "fuzz/targets/targets.h"

const parity_defect parity_defects[] = {
    /* openxla/xla#5544, pytorch/pytorch#189895: a split reduction's combine loop runs
     * n / chunk times, dropping the partial last chunk. */
    { "split_reduction_tail", PARITY_DEFECT_SPLIT_REDUCTION_TAIL, "sum,mean",
      "reduced length n > 6144 split into chunks of 2048, with n % 2048 != 0",
      "openxla/xla#5544; pytorch/pytorch#189895" },
    /* triton-lang/triton#630: a K-loop epilogue guarded by the vector loop having run. */
    { "gemm_k_tail", PARITY_DEFECT_GEMM_K_TAIL, "matmul,linear,bmm",
      "K > 64 with K % 64 in 1..3: the last K % 64 products are dropped",
      "triton-lang/triton#630" },
    /* pytorch/pytorch#182181: linear with one row goes to a GEMV path without the bias. */
    { "size1_bias", PARITY_DEFECT_SIZE1_BIAS, "linear",
      "linear with a bias whose x has exactly one row (product of leading dims 1)",
      "pytorch/pytorch#182181" },
    /* pytorch/pytorch#161150: a fully masked softmax row returns 0 instead of NaN. */
    { "masked_softmax_zero", PARITY_DEFECT_MASKED_SOFTMAX_ZERO,
      "softmax,scaled_dot_product_attention",
      "a row whose every element (every key) is masked to -Inf",
      "pytorch/pytorch#161150" },
    /* pytorch/pytorch PR #141052: bf16 reductions accumulating in bf16. */
    { "bf16_reduce_accum", PARITY_DEFECT_BF16_REDUCE_ACCUM, "sum,mean",
      "bfloat16 input with reduced length n > 256 and n % 256 in 1..3: the scalar fallback "
      "for short tails keeps its running sum in bf16",
      "pytorch/pytorch PR #141052" },
    /* jax-ml/jax#276: fast-math max/min comparisons that never select NaN. */
    { "fastmath_nan", PARITY_DEFECT_FASTMATH_NAN, "amax,amin,maximum,minimum,relu",
      "a NaN in the input: max/min/relu pick the non-NaN operand",
      "jax-ml/jax#276" },
    /* pytorch/pytorch#194281: padding lanes of a shape bucket read 0.0, not -Inf. */
    { "padded_stride_leak", PARITY_DEFECT_PADDED_STRIDE_LEAK, "softmax,log_softmax",
      "row length n > 16 with n % 16 == 1: 15 padding lanes of 0.0 join the row's sum",
      "pytorch/pytorch#194281" },
    /* The split-reduction family of openxla/xla#5544, in layer_norm's Welford merge. */
    { "welford_merge", PARITY_DEFECT_WELFORD_MERGE, "layer_norm",
      "normalized length n > 2048 with n % 2048 in 1..7: a last chunk shorter than one "
      "vector is merged with a count of 8",
      "openxla/xla#5544 (split-reduction family)" },
};

const size_t parity_defect_count = sizeof parity_defects / sizeof parity_defects[0];

static const parity_defect *find_in(const parity_defect *a, size_t n, const char *zName)
{
    size_t i;
    if (!zName) return NULL;
    for (i = 0; i < n; i++)
        if (strcmp(a[i].zName, zName) == 0) return &a[i];
    return NULL;
}

const parity_defect *parity_defect_find(const char *zName)
{
    return find_in(parity_defects, parity_defect_count, zName);
}

/* Fusion defects: the ops are right one by one, the fused kernel is not. Each lives in
 * builtin_graph.c behind its bit, next to a comment citing the same bug. */
const parity_defect parity_graph_defects[] = {
    /* openxla/xla#46897: a bias folded into a GEMM epilogue is checked against the minor
     * dim's length only, so on a square output it is broadcast along the wrong axis. */
    { "epilogue_bias_axis", PARITY_DEFECT_EPILOGUE_BIAS_AXIS, "gemm_epilogue",
      "a linear with a bias whose output is square (M == N > 1): the epilogue adds bias[i] "
      "to row i instead of bias[j] to column j", "openxla/xla#46897" },
    /* NVIDIA/apex#1390: the fused scale-mask-softmax kernel returns a uniform row where
     * every key is masked (fixed in apex PR #1444). */
    { "fused_masked_row_uniform", PARITY_DEFECT_FUSED_MASKED_ROW_UNIFORM, "masked_softmax",
      "a fully masked row (every key -inf): the fused softmax gives 1/S instead of NaN",
      "NVIDIA/apex#1390" },
    /* pytorch/pytorch#122179 (and #101039): the fused division uses a fast, inexact
     * reciprocal. */
    { "approx_reciprocal", PARITY_DEFECT_APPROX_RECIPROCAL, "softmax_decomposed",
      "a decomposed softmax fused into one pass: the sum's reciprocal is the 12-bit rcpps "
      "value without a Newton step (relative error up to 2^-12)",
      "pytorch/pytorch#122179; pytorch/pytorch#101039" },
    /* microsoft/onnxruntime#29034: a fused residual + norm kernel accumulates in fp16. */
    { "fused_half_accum", PARITY_DEFECT_FUSED_HALF_ACCUM, "pointwise_reduce",
      "a bfloat16 or float16 product fused into its sum: the partial sums stay in the "
      "16-bit dtype (stagnation past 256 ones in bf16, overflow past 65504 in f16)",
      "microsoft/onnxruntime#29034" },
};

const size_t parity_graph_defect_count = sizeof parity_graph_defects / sizeof parity_graph_defects[0];

const parity_defect *parity_graph_defect_find(const char *zName)
{
    return find_in(parity_graph_defects, parity_graph_defect_count, zName);
}
