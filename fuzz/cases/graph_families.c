/*
 * graph_families.c - the fused patterns graph cases are drawn from (graph_cases.h). Each
 * is a small DAG of registry ops, the way compilers fuse them:
 *
 *   gemm_epilogue       linear(x [M, K], w [N, K], b [N]) -> activation: the bias and the
 *                       activation folded into the GEMM's epilogue (Inductor, XLA's
 *                       cuBLASLt epilogues, oneDNN post-ops). Dims M, N (tiles), K.
 *                       Choice: the activation (gelu, gelu tanh, relu, tanh, silu,
 *                       sigmoid). Drop bits: 8 no bias, 9 no activation.
 *   masked_softmax      add(scores [B, L, S], mask [B, L, S]) -> softmax(-1) -> matmul with
 *                       v [B, S, E]: attention's core with an additive mask, fused into
 *                       one kernel (online softmax). The mask input's values are mapped to
 *                       0 and -inf (its recipe's negative values beyond -0.5 mask).
 *                       Dims B, L, S (the softmax row), E. Drop bits: 8 no mask, 9 no v.
 *   softmax_decomposed  [amax(x, -1) -> sub] -> exp -> sum(-1, keepdim) -> div: a softmax
 *                       written out, as models and decompositions do, fused into one pass
 *                       that multiplies by the sum's reciprocal. Dims R, C. Drop bit 8: no
 *                       max shift (the unstable form).
 *   pointwise_reduce    mul(x, y) -> add z -> sum(-1) (or mean: choice 1): a pointwise
 *                       producer fused into its reduction. Dims R, C. Drop bit 8: no add.
 *   residual_norm       add(x [R, C], res [R, C]) -> layer_norm(C, weight w [C], bias b [C];
 *                       eps 1e-5, the default): the residual add fused into the norm.
 *                       Dims R, C. Drop bit 8: no residual.
 *   residual_rmsnorm    add(x [R, C], res [R, C]) -> rms_norm(C, weight w [C]; eps 1e-6):
 *                       a Llama block's residual add fused into its RMSNorm (Inductor
 *                       and vLLM's fused_add_rms_norm). Dims R, C. Drop bit 8: no residual.
 */
#include <stdio.h>
#include <string.h>
#include "fuzz/cases/graph_cases.h"

#define IN(k) PARITY_GRAPH_INPUT(k)
#define DROPPED(pG, bit) (((pG)->spec.variant >> (bit)) & 1u)

static const char *const azActivation[] = { "gelu", "gelu", "relu", "tanh", "silu", "sigmoid" };

static int build_gemm_epilogue(parity_graph_case *pG, char *zErr, size_t nErr)
{
    const uint64_t *d = pG->spec.aDim;   /* M, N, K */
    uint64_t dX[2] = { d[0], d[2] }, dW[2] = { d[1], d[2] }, dB[1] = { d[1] };
    uint32_t act = (pG->spec.variant & 0xffu) % 6u;
    int aIn[3] = { IN(0), IN(1), IN(2) }, i;
    parity_graph_case_input(pG, "x", 2, dX);
    parity_graph_case_input(pG, "w", 2, dW);
    if (!DROPPED(pG, 8)) parity_graph_case_input(pG, "b", 1, dB);
    if ((i = parity_graph_case_node(pG, "linear", DROPPED(pG, 8) ? 2 : 3, aIn, zErr, nErr)) < 0)
        return -1;
    if (DROPPED(pG, 9)) return 0;
    if ((i = parity_graph_case_node(pG, azActivation[act], 1, &i, zErr, nErr)) < 0) return -1;
    if (act == 1) parity_graph_case_attr_str(pG, i, "approximate", "tanh");
    return 0;
}

static int build_masked_softmax(parity_graph_case *pG, char *zErr, size_t nErr)
{
    const uint64_t *d = pG->spec.aDim;   /* B, L, S, E */
    uint64_t dS[3] = { d[0], d[1], d[2] }, dV[3] = { d[0], d[2], d[3] };
    int aAdd[2] = { IN(0), IN(1) }, i, iSoft;
    parity_graph_case_input(pG, "scores", 3, dS);
    if (!DROPPED(pG, 8)) parity_graph_case_input(pG, "mask", 3, dS);
    if (!DROPPED(pG, 9)) parity_graph_case_input(pG, "v", 3, dV);
    i = IN(0);
    if (!DROPPED(pG, 8) && (i = parity_graph_case_node(pG, "add", 2, aAdd, zErr, nErr)) < 0)
        return -1;
    if ((iSoft = parity_graph_case_node(pG, "softmax", 1, &i, zErr, nErr)) < 0) return -1;
    parity_graph_case_attr_int(pG, iSoft, "dim", -1);
    if (!DROPPED(pG, 9)) {
        int aMm[2] = { iSoft, IN(DROPPED(pG, 8) ? 1 : 2) };
        if (parity_graph_case_node(pG, "matmul", 2, aMm, zErr, nErr) < 0) return -1;
    }
    return 0;
}

static int build_softmax_decomposed(parity_graph_case *pG, char *zErr, size_t nErr)
{
    uint64_t dX[2] = { pG->spec.aDim[0], pG->spec.aDim[1] };
    int x = IN(0), iExp, iSum, aDiv[2];
    parity_graph_case_input(pG, "x", 2, dX);
    if (!DROPPED(pG, 8)) {
        int iMax, aSub[2];
        if ((iMax = parity_graph_case_node(pG, "amax", 1, &x, zErr, nErr)) < 0) return -1;
        parity_graph_case_attr_int(pG, iMax, "dim", -1);
        parity_graph_case_attr_int(pG, iMax, "keepdim", 1);
        aSub[0] = IN(0);
        aSub[1] = iMax;
        if ((x = parity_graph_case_node(pG, "sub", 2, aSub, zErr, nErr)) < 0) return -1;
    }
    if ((iExp = parity_graph_case_node(pG, "exp", 1, &x, zErr, nErr)) < 0) return -1;
    if ((iSum = parity_graph_case_node(pG, "sum", 1, &iExp, zErr, nErr)) < 0) return -1;
    parity_graph_case_attr_int(pG, iSum, "dim", -1);
    parity_graph_case_attr_int(pG, iSum, "keepdim", 1);
    aDiv[0] = iExp;
    aDiv[1] = iSum;
    return parity_graph_case_node(pG, "div", 2, aDiv, zErr, nErr) < 0 ? -1 : 0;
}

static int build_pointwise_reduce(parity_graph_case *pG, char *zErr, size_t nErr)
{
    uint64_t dX[2] = { pG->spec.aDim[0], pG->spec.aDim[1] };
    int aMul[2] = { IN(0), IN(1) }, i, iRed;
    parity_graph_case_input(pG, "x", 2, dX);
    parity_graph_case_input(pG, "y", 2, dX);
    if (!DROPPED(pG, 8)) parity_graph_case_input(pG, "z", 2, dX);
    if ((i = parity_graph_case_node(pG, "mul", 2, aMul, zErr, nErr)) < 0) return -1;
    if (!DROPPED(pG, 8)) {
        int aAdd[2] = { i, IN(2) };
        if ((i = parity_graph_case_node(pG, "add", 2, aAdd, zErr, nErr)) < 0) return -1;
    }
    if ((iRed = parity_graph_case_node(pG, (pG->spec.variant & 0xffu) % 2u ? "mean" : "sum", 1,
                                       &i, zErr, nErr)) < 0)
        return -1;
    parity_graph_case_attr_int(pG, iRed, "dim", -1);
    return 0;
}

/* add(x, res) -> the norm zNorm over C: layer_norm with weight and bias (its default eps),
 * or rms_norm with weight (eps 1e-6, the fused kernel's). */
static int build_residual(parity_graph_case *pG, const char *zNorm, char *zErr, size_t nErr)
{
    uint64_t dX[2] = { pG->spec.aDim[0], pG->spec.aDim[1] }, dC[1] = { pG->spec.aDim[1] };
    int aAdd[2] = { IN(0), IN(1) }, i = IN(0), iNorm, nRes = DROPPED(pG, 8) ? 0 : 1;
    int isLn = strcmp(zNorm, "layer_norm") == 0, aNorm[3];
    parity_graph_case_input(pG, "x", 2, dX);
    if (nRes) parity_graph_case_input(pG, "res", 2, dX);
    parity_graph_case_input(pG, "w", 1, dC);
    if (isLn) parity_graph_case_input(pG, "b", 1, dC);
    if (nRes && (i = parity_graph_case_node(pG, "add", 2, aAdd, zErr, nErr)) < 0) return -1;
    aNorm[0] = i;
    aNorm[1] = IN(1 + nRes);
    aNorm[2] = IN(2 + nRes);
    if ((iNorm = parity_graph_case_node(pG, zNorm, isLn ? 3 : 2, aNorm, zErr, nErr)) < 0)
        return -1;
    parity_graph_case_attr_int(pG, iNorm, "normalized_shape", (int64_t)pG->spec.aDim[1]);
    if (!isLn) parity_graph_case_attr_float(pG, iNorm, "eps", 1e-6);
    return 0;
}

static int build_residual_norm(parity_graph_case *pG, char *zErr, size_t nErr)
{
    return build_residual(pG, "layer_norm", zErr, nErr);
}

static int build_residual_rmsnorm(parity_graph_case *pG, char *zErr, size_t nErr)
{
    return build_residual(pG, "rms_norm", zErr, nErr);
}

static const parity_graph_family aFamily[] = {
    { "gemm_epilogue", 3, { PARITY_ROLE_TILE, PARITY_ROLE_TILE, PARITY_ROLE_K }, 3, 6,
      (1u << 8) | (1u << 9), build_gemm_epilogue },
    { "masked_softmax", 4, { PARITY_ROLE_BATCH, PARITY_ROLE_ROW, PARITY_ROLE_REDUCE,
                             PARITY_ROLE_TILE }, 3, 1, (1u << 8) | (1u << 9),
      build_masked_softmax },
    { "softmax_decomposed", 2, { PARITY_ROLE_ROW, PARITY_ROLE_REDUCE }, 1, 1, 1u << 8,
      build_softmax_decomposed },
    { "pointwise_reduce", 2, { PARITY_ROLE_ROW, PARITY_ROLE_REDUCE }, 3, 2, 1u << 8,
      build_pointwise_reduce },
    { "residual_norm", 2, { PARITY_ROLE_ROW, PARITY_ROLE_REDUCE }, 4, 1, 1u << 8,
      build_residual_norm },
    { "residual_rmsnorm", 2, { PARITY_ROLE_ROW, PARITY_ROLE_REDUCE }, 3, 1, 1u << 8,
      build_residual_rmsnorm },
};

const parity_graph_family *parity_graph_family_at(size_t i)
{
    return i < sizeof aFamily / sizeof aFamily[0] ? &aFamily[i] : NULL;
}

size_t parity_graph_family_count(void)
{
    return sizeof aFamily / sizeof aFamily[0];
}

const parity_graph_family *parity_graph_family_find(const char *zName)
{
    size_t i;
    for (i = 0; i < sizeof aFamily / sizeof aFamily[0]; i++)
        if (strcmp(aFamily[i].zName, zName) == 0) return &aFamily[i];
    return NULL;
}
