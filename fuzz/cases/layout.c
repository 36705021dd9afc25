/*
 * layout.c - how a case spec's symbolic dims and variant become operand shapes and op
 * parameters, one layout per registry op.
 *
 * A layout decides only what the fuzzer varies (rank, which dims reduce or broadcast,
 * optional inputs, parameters); whether the result is a legal application of the op is
 * the registry's call (parity_case_op_begin runs the op's own xPrepare), so the shape
 * rules exist once, in tolerance/. The variant is a small integer whose bits pick the
 * choices; nVariant bounds it so every variant value is meaningful to the mutators.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/cases/cases.h"

/* ---- building operands and parameters -------------------------------------------- */

/* Adds an operand named zName of the given rank; its dims are symbolic dims (indices into
 * pS->aDim), or -1 for a literal 1 (a broadcast dim). */
static void add_input(const parity_case_spec *pS, parity_case *pC, const char *zName,
                      parity_dtype dt, int rank, const int *aiDim)
{
    parity_operand *pIn = &pC->aIn[pC->nIn];
    int d;
    snprintf(pC->azInName[pC->nIn], sizeof pC->azInName[0], "%s", zName);
    pIn->zName = pC->azInName[pC->nIn];
    pIn->dtype = dt;
    pIn->rank = rank;
    pIn->nElem = 1;
    for (d = 0; d < rank; d++) {
        pIn->aDim[d] = aiDim[d] < 0 ? 1 : pS->aDim[aiDim[d]];
        if (aiDim[d] >= 0) pC->usedDims |= 1u << aiDim[d];
        pIn->nElem *= pIn->aDim[d];
    }
    pIn->aValue = NULL;
    pC->nIn++;
}

static parity_attr *new_param(parity_case *pC, const char *zName, parity_attr_kind kind,
                              int isArray, size_t n)
{
    parity_attr *pA = &pC->aParam[pC->nParam++];
    memset(pA, 0, sizeof *pA);
    pA->zName = strdup(zName);
    pA->kind = kind;
    pA->isArray = isArray;
    pA->n = n;
    if (kind == PARITY_ATTR_INT) pA->aInt = calloc(n ? n : 1, sizeof *pA->aInt);
    else if (kind == PARITY_ATTR_FLOAT) pA->aFloat = calloc(1, sizeof *pA->aFloat);
    else pA->azStr = calloc(1, sizeof *pA->azStr);
    return pA;
}

static void param_int(parity_case *pC, const char *zName, int64_t v)
{
    parity_attr *pA = new_param(pC, zName, PARITY_ATTR_INT, 0, 1);
    if (pA->aInt) pA->aInt[0] = v;
}

static void param_ints(parity_case *pC, const char *zName, const int64_t *a, size_t n)
{
    parity_attr *pA = new_param(pC, zName, PARITY_ATTR_INT, 1, n);
    if (pA->aInt) memcpy(pA->aInt, a, n * sizeof *a);
}

static void param_float(parity_case *pC, const char *zName, double v)
{
    parity_attr *pA = new_param(pC, zName, PARITY_ATTR_FLOAT, 0, 1);
    if (pA->aFloat) pA->aFloat[0] = v;
}

static void param_string(parity_case *pC, const char *zName, const char *zValue)
{
    parity_attr *pA = new_param(pC, zName, PARITY_ATTR_STRING, 0, 1);
    if (pA->azStr) pA->azStr[0] = strdup(zValue);
}

static void set_out(parity_case *pC, parity_dtype dt, int rank, const uint64_t *aDim)
{
    int d;
    pC->outDtype = dt;
    pC->outRank = rank;
    pC->nOut = 1;
    for (d = 0; d < rank; d++) {
        pC->aOutDim[d] = aDim[d];
        pC->nOut *= aDim[d];
    }
}

static void out_like(parity_case *pC, size_t iIn)
{
    set_out(pC, pC->aIn[iIn].dtype, pC->aIn[iIn].rank, pC->aIn[iIn].aDim);
}

static const int aIdentity[PARITY_CASE_MAX_DIMS] = { 0, 1, 2, 3, 4, 5, 6, 7 };

/* ---- elementwise ------------------------------------------------------------------- */

/* variant: rank 0..5 (v % 6); gelu: bit 3 picks approximate="tanh". */
static int lay_unary(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    (void)zErr; (void)nErr;
    add_input(pS, pC, "x", pS->dtype, (int)(pS->variant % 6), aIdentity);
    if (strcmp(pS->zOp, "gelu") == 0 && (pS->variant >> 3) & 1)
        param_string(pC, "approximate", "tanh");
    out_like(pC, 0);
    return 0;
}

/* variant: rank 0..4 (v % 5); bits 3..6: dims where y is 1 (broadcast); bit 7: y has
 * fewer dims (its leading dim dropped, numpy-style broadcast); bit 8: alpha = 0.5
 * (add, sub). */
static int lay_binary(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int rank = (int)(pS->variant % 5), aiY[5], d, yRank = rank;
    unsigned mask = (pS->variant >> 3) & 0xF;
    (void)zErr; (void)nErr;
    add_input(pS, pC, "x", pS->dtype, rank, aIdentity);
    for (d = 0; d < rank; d++) aiY[d] = (mask >> d) & 1 ? -1 : d;
    if (((pS->variant >> 7) & 1) && rank > 0) yRank = rank - 1;
    add_input(pS, pC, "y", pS->dtype, yRank, aiY + (rank - yRank));
    if (((pS->variant >> 8) & 1) && (strcmp(pS->zOp, "add") == 0 || strcmp(pS->zOp, "sub") == 0))
        param_float(pC, "alpha", 0.5);
    out_like(pC, 0);
    return 0;
}

/* ---- reductions and row ops -------------------------------------------------------- */

/* Row ops give the dim they reduce or scan along (iRed) symbolic dim 3 (role "reduce") and
 * the others dims 0..2, so the length a kernel works along is drawn as a reduction length
 * whichever dim it is. */
static void row_dims(int rank, int iRed, int *aiDim)
{
    int d, next = 0;
    for (d = 0; d < rank; d++) aiDim[d] = d == iRed ? 3 : next++;
}

/* variant: rank 1..4 (v % 4 + 1); bits 2..5: reduced dims (none: every dim, or the last
 * for ops that need a dim); bit 6: keepdim; bit 7: var's correction 0 instead of 1. */
static int lay_reduce(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int rank = (int)(pS->variant % 4) + 1, d, nOut = 0, keepdim = (pS->variant >> 6) & 1;
    unsigned mask = (pS->variant >> 2) & 0xF & ((1u << rank) - 1);
    int needsDim = strcmp(pS->zOp, "logsumexp") == 0 || strcmp(pS->zOp, "var") == 0;
    int64_t aDimArg[4];
    size_t nDimArg = 0;
    uint64_t aOut[4];
    int aiDim[4], iLast = rank - 1;
    if (mask == 0 && needsDim) mask = 1u << (rank - 1);
    while (mask != 0 && !((mask >> iLast) & 1)) iLast--;
    row_dims(rank, iLast, aiDim);
    add_input(pS, pC, "x", pS->dtype, rank, aiDim);
    if (mask == 0 && needsDim) mask = 1u << (rank - 1);
    if (mask != 0) {
        for (d = 0; d < rank; d++)
            if ((mask >> d) & 1) aDimArg[nDimArg++] = d;
        param_ints(pC, "dim", aDimArg, nDimArg);
    } else {
        mask = (1u << rank) - 1;
    }
    if (strcmp(pS->zOp, "amax") == 0 || strcmp(pS->zOp, "amin") == 0) {
        for (d = 0; d < rank; d++) {
            if (((mask >> d) & 1) && pC->aIn[0].aDim[d] == 0) {
                snprintf(zErr, nErr, "%s over an empty dim is an error in torch", pS->zOp);
                return -1;
            }
        }
    }
    param_int(pC, "keepdim", keepdim);
    if (strcmp(pS->zOp, "var") == 0) param_float(pC, "correction", (pS->variant >> 7) & 1 ? 0 : 1);
    for (d = 0; d < rank; d++) {
        if (!((mask >> d) & 1)) aOut[nOut++] = pC->aIn[0].aDim[d];
        else if (keepdim) aOut[nOut++] = 1;
    }
    set_out(pC, pS->dtype, nOut, aOut);
    return 0;
}

/* variant: rank 1..4 (v % 4 + 1); bits 2..3: the dim, counted from the last (0: last). */
static int lay_rowwise(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int rank = (int)(pS->variant % 4) + 1;
    int dim = rank - 1 - (int)((pS->variant >> 2) & 3) % rank;
    int aiDim[4];
    (void)zErr; (void)nErr;
    row_dims(rank, dim, aiDim);
    add_input(pS, pC, "x", pS->dtype, rank, aiDim);
    param_int(pC, "dim", dim);
    out_like(pC, 0);
    return 0;
}

/* variant: rank 1..4 (v % 4 + 1); bit 2: two normalized dims (when rank > 1); bit 3:
 * weight; bit 4: bias (layer_norm, with the weight). */
static int lay_norm(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int rank = (int)(pS->variant % 4) + 1, nNorm = ((pS->variant >> 2) & 1) && rank > 1 ? 2 : 1;
    int isLayer = strcmp(pS->zOp, "layer_norm") == 0, d;
    int64_t aNorm[2];
    int aiDim[4];
    (void)zErr; (void)nErr;
    row_dims(rank, rank - 1, aiDim);
    add_input(pS, pC, "x", pS->dtype, rank, aiDim);
    for (d = 0; d < nNorm; d++) aNorm[d] = (int64_t)pC->aIn[0].aDim[rank - nNorm + d];
    param_ints(pC, "normalized_shape", aNorm, (size_t)nNorm);
    param_float(pC, "eps", isLayer ? 1e-5 : 1e-6);
    if ((pS->variant >> 3) & 1) {
        add_input(pS, pC, "weight", pS->dtype, nNorm, aiDim + rank - nNorm);
        if (isLayer && ((pS->variant >> 4) & 1))
            add_input(pS, pC, "bias", pS->dtype, nNorm, aiDim + rank - nNorm);
    }
    out_like(pC, 0);
    return 0;
}

/* ---- dot products ------------------------------------------------------------------ */

/* dims: M, K, N, B. variant: 0 [M,K]x[K,N]; 1 [B,M,K]x[K,N]; 2 [K]x[K,N]; 3 [M,K]x[K];
 * 4 [B,M,K]x[B,K,N] (batched both sides). */
static int lay_matmul(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const int aMK[] = { 0, 1 }, aKN[] = { 1, 2 }, aBMK[] = { 3, 0, 1 },
                     aBKN[] = { 3, 1, 2 }, aK[] = { 1 };
    uint64_t aOut[3];
    (void)zErr; (void)nErr;
    switch (pS->variant % 5) {
    case 0:
        add_input(pS, pC, "a", pS->dtype, 2, aMK);
        add_input(pS, pC, "b", pS->dtype, 2, aKN);
        aOut[0] = pS->aDim[0]; aOut[1] = pS->aDim[2];
        set_out(pC, pS->dtype, 2, aOut);
        break;
    case 1:
        add_input(pS, pC, "a", pS->dtype, 3, aBMK);
        add_input(pS, pC, "b", pS->dtype, 2, aKN);
        aOut[0] = pS->aDim[3]; aOut[1] = pS->aDim[0]; aOut[2] = pS->aDim[2];
        set_out(pC, pS->dtype, 3, aOut);
        break;
    case 2:
        add_input(pS, pC, "a", pS->dtype, 1, aK);
        add_input(pS, pC, "b", pS->dtype, 2, aKN);
        aOut[0] = pS->aDim[2];
        set_out(pC, pS->dtype, 1, aOut);
        break;
    case 3:
        add_input(pS, pC, "a", pS->dtype, 2, aMK);
        add_input(pS, pC, "b", pS->dtype, 1, aK);
        aOut[0] = pS->aDim[0];
        set_out(pC, pS->dtype, 1, aOut);
        break;
    default:
        add_input(pS, pC, "a", pS->dtype, 3, aBMK);
        add_input(pS, pC, "b", pS->dtype, 3, aBKN);
        aOut[0] = pS->aDim[3]; aOut[1] = pS->aDim[0]; aOut[2] = pS->aDim[2];
        set_out(pC, pS->dtype, 3, aOut);
        break;
    }
    return 0;
}

/* dims: M, K, N, B. variant bit 0: x is [B, M, K] (else [M, K]); bit 1: a bias. */
static int lay_linear(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const int aMK[] = { 0, 1 }, aBMK[] = { 3, 0, 1 }, aNK[] = { 2, 1 }, aN[] = { 2 };
    int batched = pS->variant & 1;
    uint64_t aOut[3];
    (void)zErr; (void)nErr;
    add_input(pS, pC, "x", pS->dtype, batched ? 3 : 2, batched ? aBMK : aMK);
    add_input(pS, pC, "weight", pS->dtype, 2, aNK);
    if ((pS->variant >> 1) & 1) add_input(pS, pC, "bias", pS->dtype, 1, aN);
    if (batched) { aOut[0] = pS->aDim[3]; aOut[1] = pS->aDim[0]; aOut[2] = pS->aDim[2]; }
    else { aOut[0] = pS->aDim[0]; aOut[1] = pS->aDim[2]; }
    set_out(pC, pS->dtype, batched ? 3 : 2, aOut);
    return 0;
}

/* dims: M, K, N, B. */
static int lay_bmm(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const int aBMK[] = { 3, 0, 1 }, aBKN[] = { 3, 1, 2 };
    uint64_t aOut[3] = { pS->aDim[3], pS->aDim[0], pS->aDim[2] };
    (void)zErr; (void)nErr;
    add_input(pS, pC, "a", pS->dtype, 3, aBMK);
    add_input(pS, pC, "b", pS->dtype, 3, aBKN);
    set_out(pC, pS->dtype, 3, aOut);
    return 0;
}

/* dims: B, H, L, S, E, Ev. variant bit 0: is_causal; bit 1: an additive float mask [L, S]
 * (not with is_causal). */
static int lay_sdpa(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const int aQ[] = { 0, 1, 2, 4 }, aK[] = { 0, 1, 3, 4 }, aV[] = { 0, 1, 3, 5 },
                     aM[] = { 2, 3 };
    uint64_t aOut[4] = { pS->aDim[0], pS->aDim[1], pS->aDim[2], pS->aDim[5] };
    (void)zErr; (void)nErr;
    add_input(pS, pC, "q", pS->dtype, 4, aQ);
    add_input(pS, pC, "k", pS->dtype, 4, aK);
    add_input(pS, pC, "v", pS->dtype, 4, aV);
    if (pS->variant & 1) param_int(pC, "is_causal", 1);
    else if ((pS->variant >> 1) & 1) add_input(pS, pC, "attn_mask", pS->dtype, 2, aM);
    set_out(pC, pS->dtype, 4, aOut);
    return 0;
}

/* dims: N, C, H, W, O, kH, kW. variant bit 0: stride 2; bit 1: padding 1; bit 2: bias. */
static int lay_conv2d(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const int aX[] = { 0, 1, 2, 3 }, aW[] = { 4, 1, 5, 6 }, aB[] = { 4 };
    int64_t stride = (pS->variant & 1) ? 2 : 1, pad = (pS->variant >> 1) & 1;
    int64_t aPair[2];
    int64_t oH = ((int64_t)pS->aDim[2] + 2 * pad - (int64_t)pS->aDim[5]) / stride + 1;
    int64_t oW = ((int64_t)pS->aDim[3] + 2 * pad - (int64_t)pS->aDim[6]) / stride + 1;
    uint64_t aOut[4];
    if ((int64_t)pS->aDim[2] + 2 * pad < (int64_t)pS->aDim[5] ||
        (int64_t)pS->aDim[3] + 2 * pad < (int64_t)pS->aDim[6]) {
        snprintf(zErr, nErr, "conv2d: kernel larger than the padded input");
        return -1;
    }
    add_input(pS, pC, "x", pS->dtype, 4, aX);
    add_input(pS, pC, "weight", pS->dtype, 4, aW);
    if ((pS->variant >> 2) & 1) add_input(pS, pC, "bias", pS->dtype, 1, aB);
    aPair[0] = aPair[1] = stride;
    param_ints(pC, "stride", aPair, 2);
    aPair[0] = aPair[1] = pad;
    param_ints(pC, "padding", aPair, 2);
    aOut[0] = pS->aDim[0]; aOut[1] = pS->aDim[4]; aOut[2] = (uint64_t)oH; aOut[3] = (uint64_t)oW;
    set_out(pC, pS->dtype, 4, aOut);
    return 0;
}

/* ---- layout ops and cast ----------------------------------------------------------- */

/* variant: rank 2..4 (v % 3 + 2); swaps the first and last dims. */
static int lay_transpose(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int rank = (int)(pS->variant % 3) + 2;
    uint64_t aOut[4];
    (void)zErr; (void)nErr;
    add_input(pS, pC, "x", pS->dtype, rank, aIdentity);
    memcpy(aOut, pC->aIn[0].aDim, sizeof aOut);
    aOut[0] = pC->aIn[0].aDim[rank - 1];
    aOut[rank - 1] = pC->aIn[0].aDim[0];
    param_int(pC, "dim0", 0);
    param_int(pC, "dim1", rank - 1);
    set_out(pC, pS->dtype, rank, aOut);
    return 0;
}

/* variant: rank 1..4 (v % 4 + 1); reverses the dims. */
static int lay_permute(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int rank = (int)(pS->variant % 4) + 1, d;
    int64_t aPerm[4];
    uint64_t aOut[4];
    (void)zErr; (void)nErr;
    add_input(pS, pC, "x", pS->dtype, rank, aIdentity);
    for (d = 0; d < rank; d++) {
        aPerm[d] = rank - 1 - d;
        aOut[d] = pC->aIn[0].aDim[rank - 1 - d];
    }
    param_ints(pC, "dims", aPerm, (size_t)rank);
    set_out(pC, pS->dtype, rank, aOut);
    return 0;
}

/* dims: A, B, C. [A, B, C] -> [A * B, C]. */
static int lay_reshape(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int64_t aShape[2] = { (int64_t)(pS->aDim[0] * pS->aDim[1]), (int64_t)pS->aDim[2] };
    uint64_t aOut[2] = { pS->aDim[0] * pS->aDim[1], pS->aDim[2] };
    (void)zErr; (void)nErr;
    add_input(pS, pC, "x", pS->dtype, 3, aIdentity);
    param_ints(pC, "shape", aShape, 2);
    set_out(pC, pS->dtype, 2, aOut);
    return 0;
}

/* variant: rank 0..3 (v % 4); bits 2..3 pick the target dtype among float16, bfloat16,
 * float32 and int32, skipping the case's own. */
static int lay_cast(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const parity_dtype aTo[] = { PARITY_DT_F16, PARITY_DT_BF16, PARITY_DT_F32,
                                        PARITY_DT_I32 };
    parity_dtype to = aTo[(pS->variant >> 2) & 3];
    (void)zErr; (void)nErr;
    if (to == pS->dtype) to = PARITY_DT_I32;
    add_input(pS, pC, "x", pS->dtype, (int)(pS->variant % 4), aIdentity);
    param_string(pC, "to", parity_dtype_name(to));
    set_out(pC, to, pC->aIn[0].rank, pC->aIn[0].aDim);
    return 0;
}

/* ---- the table --------------------------------------------------------------------- */

#define R_ROW PARITY_ROLE_ROW
#define R_BAT PARITY_ROLE_BATCH
#define R_RED PARITY_ROLE_REDUCE
#define R_K   PARITY_ROLE_K
#define R_TIL PARITY_ROLE_TILE
#define R_KER PARITY_ROLE_KERNEL

#define UNARY(name, nv) { name, 5, { R_BAT, R_BAT, R_ROW, R_ROW, R_ROW }, nv, lay_unary }
#define BINARY(name) { name, 4, { R_BAT, R_ROW, R_ROW, R_ROW }, 512, lay_binary }
#define REDUCE(name) { name, 4, { R_BAT, R_ROW, R_ROW, R_RED }, 256, lay_reduce }
#define ROWWISE(name) { name, 4, { R_BAT, R_ROW, R_ROW, R_RED }, 16, lay_rowwise }
#define NORM(name) { name, 4, { R_BAT, R_ROW, R_ROW, R_RED }, 32, lay_norm }
#define MATMUL_DIMS 4, { R_TIL, R_K, R_TIL, R_BAT }

static const parity_layout_info aLayout[] = {
    UNARY("relu", 6),
    UNARY("gelu", 16), UNARY("silu", 6), UNARY("sigmoid", 6), UNARY("tanh", 6),
    UNARY("exp", 6), UNARY("log", 6), UNARY("sqrt", 6), UNARY("rsqrt", 6),
    UNARY("reciprocal", 6), UNARY("erf", 6), UNARY("neg", 6), UNARY("abs", 6),
    UNARY("softplus", 6), UNARY("elu", 6), UNARY("mish", 6),
    { "matmul", MATMUL_DIMS, 5, lay_matmul },
    { "linear", MATMUL_DIMS, 4, lay_linear },
    { "bmm", MATMUL_DIMS, 1, lay_bmm },
    { "scaled_dot_product_attention", 6, { R_BAT, R_BAT, R_TIL, R_RED, R_K, R_TIL }, 4,
      lay_sdpa },
    { "conv2d", 7, { R_BAT, R_K, R_ROW, R_ROW, R_TIL, R_KER, R_KER }, 8, lay_conv2d },
    { "transpose", 4, { R_ROW, R_ROW, R_ROW, R_ROW }, 3, lay_transpose },
    { "permute", 4, { R_ROW, R_ROW, R_ROW, R_ROW }, 4, lay_permute },
    { "reshape", 3, { R_ROW, R_ROW, R_ROW }, 1, lay_reshape },
    { "cast", 4, { R_ROW, R_ROW, R_ROW, R_ROW }, 16, lay_cast },
    ROWWISE("softmax"), ROWWISE("log_softmax"),
    REDUCE("logsumexp"), REDUCE("var"),
    ROWWISE("cumsum"),
    NORM("rms_norm"), NORM("layer_norm"),
    BINARY("add"), BINARY("sub"), BINARY("mul"), BINARY("div"),
    BINARY("maximum"), BINARY("minimum"),
    REDUCE("sum"), REDUCE("mean"), REDUCE("amax"), REDUCE("amin"),
};

#define N_LAYOUT (sizeof aLayout / sizeof aLayout[0])

const parity_layout_info *parity_layout_find(const char *zOp)
{
    size_t i;
    for (i = 0; i < N_LAYOUT; i++)
        if (strcmp(aLayout[i].zOp, zOp) == 0) return &aLayout[i];
    return NULL;
}

const parity_layout_info *parity_layout_all(size_t *pn)
{
    *pn = N_LAYOUT;
    return aLayout;
}

int parity_layout_apply(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    const parity_layout_info *p = parity_layout_find(pS->zOp);
    if (!p) {
        snprintf(zErr, nErr, "no fuzz layout for op '%s'", pS->zOp);
        return -1;
    }
    if (pS->nDim < p->nDim) {
        snprintf(zErr, nErr, "%s needs %d dims, the case has %d", pS->zOp, p->nDim,
                 pS->nDim);
        return -1;
    }
    if (pS->variant >= p->nVariant) {
        snprintf(zErr, nErr, "%s: variant %u out of range (0..%u)", pS->zOp,
                 (unsigned)pS->variant, (unsigned)p->nVariant - 1);
        return -1;
    }
    return p->xLayout(pS, pC, zErr, nErr);
}
