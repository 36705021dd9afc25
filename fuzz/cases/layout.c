/*
 * layout.c - how a case spec's symbolic dims and variant become operands and op
 * parameters: one layout per op family (tolerance/ops.h), keyed by the registry entry.
 *
 * A layout decides only what the fuzzer varies (rank, which dims reduce or broadcast,
 * optional inputs, the shape attributes of its family and the attributes an op lists in
 * its aCaseAttr); the output's shape and whether the result is a legal application of the
 * op are the registry's (parity_case_layout runs the op's own xPrepare, which works out the
 * output shape), so the shape rules exist once, in tolerance/. The variant is a small
 * integer whose bits pick the choices; nVariant bounds it so every variant value is
 * meaningful to the mutators.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/cases/cases.h"
#include "formats/alloc.h"

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
    pA->zName = parity_strdup(zName);
    pA->kind = kind;
    pA->isArray = isArray;
    pA->n = n;
    if (kind == PARITY_ATTR_INT) pA->aInt = parity_calloc(n ? n : 1, sizeof *pA->aInt);
    else if (kind == PARITY_ATTR_FLOAT) pA->aFloat = parity_calloc(1, sizeof *pA->aFloat);
    else pA->azStr = parity_calloc(1, sizeof *pA->azStr);
    /* out of memory: noted, and parity_layout_apply fails the case */
    if (!pA->zName || (!pA->aInt && !pA->aFloat && !pA->azStr)) pC->nomem = 1;
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
    if (pA->azStr && !(pA->azStr[0] = parity_strdup(zValue))) pC->nomem = 1;
}

/* Writes value `pick` (0 or 1) of the op's case attribute iAttr, unless it is "not
 * written" (a NaN or a NULL string: ops.h). */
static void case_attr(const parity_op_def *pDef, parity_case *pC, size_t iAttr, int pick)
{
    const parity_op_case_attr *pA;
    if (iAttr >= pDef->nCaseAttr) return;
    pA = &pDef->aCaseAttr[iAttr];
    if (pA->kind == PARITY_ATTR_STRING) {
        if (pA->azStr[pick]) param_string(pC, pA->zName, pA->azStr[pick]);
    } else if (pA->aFloat[pick] == pA->aFloat[pick]) {
        param_float(pC, pA->zName, pA->aFloat[pick]);
    }
}

static const int aIdentity[PARITY_CASE_MAX_DIMS] = { 0, 1, 2, 3, 4, 5, 6, 7 };

/* ---- elementwise ------------------------------------------------------------------- */

/* variant: rank 0..5 (v % 6); bit 3 picks value 1 of each of the op's case attributes
 * (gelu: approximate="tanh"; clamp: its min and max together): such ops have 16 variants,
 * the others 6. */
static int lay_unary(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    size_t i;
    (void)zErr; (void)nErr;
    add_input(pS, pC, "x", pS->dtype, (int)(pS->variant % 6), aIdentity);
    for (i = 0; i < pC->pDef->nCaseAttr; i++)
        case_attr(pC->pDef, pC, i, (pS->variant >> 3) & 1);
    return 0;
}

/* variant: rank 0..4 (v % 5); bits 3..6: dims where y is 1 (broadcast); bit 7: y has
 * fewer dims (its leading dim dropped, numpy-style broadcast); bit 8: the op's case
 * attribute's value 1 (add, sub: alpha = 0.5). */
static int lay_binary(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int rank = (int)(pS->variant % 5), aiY[5], d, yRank = rank;
    unsigned mask = (pS->variant >> 3) & 0xF;
    (void)zErr; (void)nErr;
    add_input(pS, pC, "x", pS->dtype, rank, aIdentity);
    for (d = 0; d < rank; d++) aiY[d] = (mask >> d) & 1 ? -1 : d;
    if (((pS->variant >> 7) & 1) && rank > 0) yRank = rank - 1;
    add_input(pS, pC, "y", pS->dtype, yRank, aiY + (rank - yRank));
    case_attr(pC->pDef, pC, 0, (pS->variant >> 8) & 1);
    return 0;
}

/* where(cond, x, y) and masked_fill(x, mask): the bool operand is a bool tensor (the
 * recipes' values rounded to bool are 0 or 1: a legal mask whatever the recipe; "ones" is
 * all true, signed_zeros about half). variant: rank 0..4 (v % 5); bits 3..6: dims where the
 * bool operand is 1 (broadcast); bit 7: where's y is 0-d (torch.where(c, x, 0.0)), a
 * masked_fill mask has its leading dim dropped; bit 8: the op's case attribute's value 1
 * (masked_fill: value 0.5 instead of -Inf). */
static int lay_where(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int rank = (int)(pS->variant % 5), aiC[5], d, cRank = rank;
    unsigned mask = (pS->variant >> 3) & 0xF;
    int bit7 = (pS->variant >> 7) & 1, isWhere = pC->pDef == &parity_op_where;
    (void)zErr; (void)nErr;
    for (d = 0; d < rank; d++) aiC[d] = (mask >> d) & 1 ? -1 : d;
    if (bit7 && !isWhere && rank > 0) cRank = rank - 1;
    if (isWhere) {
        add_input(pS, pC, "cond", PARITY_DT_BOOL, rank, aiC);
        add_input(pS, pC, "x", pS->dtype, rank, aIdentity);
        add_input(pS, pC, "y", pS->dtype, bit7 ? 0 : rank, aIdentity);
    } else {
        add_input(pS, pC, "x", pS->dtype, rank, aIdentity);
        add_input(pS, pC, "mask", PARITY_DT_BOOL, cRank, aiC + (rank - cRank));
    }
    case_attr(pC->pDef, pC, 0, (pS->variant >> 8) & 1);
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
 * for ops that always name a dim, PARITY_OPF_NAMES_DIM); bit 6: keepdim; bit 7: the op's
 * case attribute's value 1 (var: correction 0 instead of 1). */
static int lay_reduce(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int rank = (int)(pS->variant % 4) + 1, d, keepdim = (pS->variant >> 6) & 1;
    unsigned mask = (pS->variant >> 2) & 0xF & ((1u << rank) - 1);
    int namesDim = (pC->pDef->flags & PARITY_OPF_NAMES_DIM) != 0;
    int64_t aDimArg[4];
    size_t nDimArg = 0;
    int aiDim[4], iLast = rank - 1;
    (void)zErr; (void)nErr;
    if (mask == 0 && namesDim) mask = 1u << (rank - 1);
    while (mask != 0 && !((mask >> iLast) & 1)) iLast--;
    row_dims(rank, iLast, aiDim);
    add_input(pS, pC, "x", pS->dtype, rank, aiDim);
    if (mask != 0) {
        for (d = 0; d < rank; d++)
            if ((mask >> d) & 1) aDimArg[nDimArg++] = d;
        param_ints(pC, "dim", aDimArg, nDimArg);
    }
    param_int(pC, "keepdim", keepdim);
    case_attr(pC->pDef, pC, 0, (pS->variant >> 7) & 1);
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
    return 0;
}

/* variant: rank 1..4 (v % 4 + 1); bit 2: two normalized dims (when rank > 1); bit 3:
 * weight; bit 4: bias (with the weight, for ops that take one). eps: the op's case
 * attribute. */
static int lay_norm(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int rank = (int)(pS->variant % 4) + 1, nNorm = ((pS->variant >> 2) & 1) && rank > 1 ? 2 : 1;
    int d;
    int64_t aNorm[2];
    int aiDim[4];
    (void)zErr; (void)nErr;
    row_dims(rank, rank - 1, aiDim);
    add_input(pS, pC, "x", pS->dtype, rank, aiDim);
    for (d = 0; d < nNorm; d++) aNorm[d] = (int64_t)pC->aIn[0].aDim[rank - nNorm + d];
    param_ints(pC, "normalized_shape", aNorm, (size_t)nNorm);
    case_attr(pC->pDef, pC, 0, 0);
    if ((pS->variant >> 3) & 1) {
        add_input(pS, pC, "weight", pS->dtype, nNorm, aiDim + rank - nNorm);
        if (pC->pDef->nInMax >= 3 && ((pS->variant >> 4) & 1))
            add_input(pS, pC, "bias", pS->dtype, nNorm, aiDim + rank - nNorm);
    }
    return 0;
}

/* dims: N, C, H, W. variant: bit 0 rank 2 ([N, C]) or 4; bit 1 picks eps (1e-5 or 1e-3).
 * Inputs x, running_mean and running_var: the 3-input form, since a case holds at most
 * PARITY_CASE_MAX_IN = 4 inputs (its codec has room for 4 recipes); the affine 5-input form
 * is judged by paritydiff and guarded in tests/test_reference_guard.c, not fuzzed. */
static int lay_batch_norm(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const int aC[1] = { 1 };
    int rank = (pS->variant & 1) ? 4 : 2;
    (void)zErr; (void)nErr;
    add_input(pS, pC, "x", pS->dtype, rank, aIdentity);
    add_input(pS, pC, "running_mean", pS->dtype, 1, aC);
    add_input(pS, pC, "running_var", pS->dtype, 1, aC);
    case_attr(pC->pDef, pC, 0, (int)((pS->variant >> 1) & 1));
    return 0;
}

/* adaptive_avg_pool2d, dims as lay_pool's, kH and kW the output size. variant: bit 0 x
 * unbatched [C, H, W]; bit 1 output_size one int (kH: square); bits 2..3 the output
 * (kH, kW), (H + kH - 1, W + kW - 1) (more outputs than inputs: windows of 1 or 2 taps
 * that overlap), (1, 1) (global pooling, one window of H W taps) or (ceil(H / kH),
 * ceil(W / kW)) (windows of about kH x kW, the ratio not an integer); bit 4 Ho = 1. */
static int lay_adaptive_pool(const parity_case_spec *pS, parity_case *pC)
{
    static const int aChw[3] = { 1, 2, 3 };
    uint64_t H = pS->aDim[2], W = pS->aDim[3], kH = pS->aDim[4], kW = pS->aDim[5];
    int64_t aO[2];
    if (pS->variant & 1) add_input(pS, pC, "x", pS->dtype, 3, aChw);
    else add_input(pS, pC, "x", pS->dtype, 4, aIdentity);
    pC->usedDims |= 3u << 4;   /* the kernel dims shape no input */
    switch ((pS->variant >> 2) & 3) {
    case 0: aO[0] = (int64_t)kH; aO[1] = (int64_t)kW; break;
    case 1: aO[0] = (int64_t)(H + kH - 1); aO[1] = (int64_t)(W + kW - 1); break;
    case 2: aO[0] = aO[1] = 1; break;
    default: aO[0] = (int64_t)((H + kH - 1) / kH); aO[1] = (int64_t)((W + kW - 1) / kW); break;
    }
    if ((pS->variant >> 4) & 1) aO[0] = 1;
    param_ints(pC, "output_size", aO, ((pS->variant >> 1) & 1) ? 1 : 2);
    return 0;
}

/* dims: N, C, H, W, kH, kW. variant: bit 0 stride 1 (else the default, the kernel size);
 * bit 1 padding floor(k / 2); bit 2 ceil_mode; bit 3 max_pool2d: dilation 2, avg_pool2d:
 * count_include_pad 0; bit 4 max_pool2d: x unbatched [C, H, W], avg_pool2d:
 * divisor_override kH kW + 1 (no window's own count). adaptive_avg_pool2d: its own. */
static int lay_pool(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const int aChw[3] = { 1, 2, 3 };
    int64_t aK[2] = { (int64_t)pS->aDim[4], (int64_t)pS->aDim[5] }, aPair[2];
    int isAvg = pC->pDef == &parity_op_avg_pool2d;
    (void)zErr; (void)nErr;
    if (pC->pDef == &parity_op_adaptive_avg_pool2d) return lay_adaptive_pool(pS, pC);
    if (!isAvg && ((pS->variant >> 4) & 1)) add_input(pS, pC, "x", pS->dtype, 3, aChw);
    else add_input(pS, pC, "x", pS->dtype, 4, aIdentity);
    pC->usedDims |= 3u << 4;   /* the kernel dims shape no input */
    param_ints(pC, "kernel_size", aK, 2);
    if (isAvg) {
        if ((pS->variant >> 3) & 1) param_int(pC, "count_include_pad", 0);
        if ((pS->variant >> 4) & 1) param_int(pC, "divisor_override", aK[0] * aK[1] + 1);
    }
    if (pS->variant & 1) { aPair[0] = aPair[1] = 1; param_ints(pC, "stride", aPair, 2); }
    if ((pS->variant >> 1) & 1) {
        aPair[0] = aK[0] / 2;
        aPair[1] = aK[1] / 2;
        param_ints(pC, "padding", aPair, 2);
    }
    if ((pS->variant >> 2) & 1) param_int(pC, "ceil_mode", 1);
    if (!isAvg && ((pS->variant >> 3) & 1)) {
        aPair[0] = aPair[1] = 2;
        param_ints(pC, "dilation", aPair, 2);
    }
    return 0;
}

/* dims: A, B, C (rank 1..3, v % 3 + 1); the sliced dim is the last (bit 2: the first).
 * select: the last index (bit 3: index -1, from the end); slice: start 1 (when it fits),
 * step 2 (bit 3: 1) to the end; split: split_size half the dim, at least 1. */
static int lay_slice(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int rank = (int)(pS->variant % 3) + 1, dim = ((pS->variant >> 2) & 1) ? 0 : rank - 1;
    int64_t size;
    (void)zErr; (void)nErr;
    add_input(pS, pC, "x", pS->dtype, rank, aIdentity);
    size = (int64_t)pC->aIn[0].aDim[dim];
    param_int(pC, "dim", dim);
    if (pC->pDef == &parity_op_select) {
        param_int(pC, "index", ((pS->variant >> 3) & 1) ? -1 : size - 1);
    } else if (pC->pDef == &parity_op_slice) {
        param_int(pC, "start", size > 1 ? 1 : 0);
        param_int(pC, "step", ((pS->variant >> 3) & 1) ? 1 : 2);
    } else {
        param_int(pC, "split_size", size / 2 > 0 ? size / 2 : 1);
    }
    return 0;
}

/* dims: A, B, C, D; rank 1..3 (v % 3 + 1) over A, B, C. cat: 2 inputs (bit 2: 3), joined
 * along the last dim (bit 3: the first), input 0 sized A/B/C there and the others D;
 * stack: 2 or 3 inputs of one shape, along a new last dim (bit 3: a new first); expand:
 * x with its first dim 1 (bit 2; else as is) expanded to A/B/C, with a new leading dim D
 * (bit 3) and -1 for the dims it keeps (bit 4: their sizes written out). */
static int lay_concat(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int rank = (int)(pS->variant % 3) + 1, first = (pS->variant >> 3) & 1, d, k;
    int aDim[3] = { 0, 1, 2 };
    (void)zErr; (void)nErr;
    if (pC->pDef == &parity_op_expand) {
        int64_t aSize[4];
        int lead = first, bcast = (pS->variant >> 2) & 1;
        if (bcast) aDim[0] = -1;
        add_input(pS, pC, "x", pS->dtype, rank, aDim);
        if (lead) aSize[0] = (int64_t)pS->aDim[3];
        for (d = 0; d < rank; d++)
            aSize[lead + d] = (d == 0 && bcast) || ((pS->variant >> 4) & 1)
                                  ? (int64_t)pS->aDim[d] : -1;
        if (lead) pC->usedDims |= 1u << 3;
        if (bcast) pC->usedDims |= 1u;
        param_ints(pC, "size", aSize, (size_t)(rank + lead));
        return 0;
    }
    for (k = 0; k < 2 + (int)((pS->variant >> 2) & 1); k++) {
        static const char *const azName[3] = { "x0", "x1", "x2" };
        int aIn[3] = { 0, 1, 2 };
        if (pC->pDef == &parity_op_cat && k > 0) aIn[first ? 0 : rank - 1] = 3;
        add_input(pS, pC, azName[k], pS->dtype, rank, aIn);
    }
    param_int(pC, "dim", pC->pDef == &parity_op_stack ? (first ? 0 : rank)
                                                      : (first ? 0 : rank - 1));
    return 0;
}

/* dims: V, D, I. weight [V, D] and indices [I] in the case's dtype: a recipe's values are
 * indices where they are integers in [0, V) (the "ints" recipe draws -8..8), and NaN rows
 * on every side elsewhere (the registry's rule): weak as a fuzz of lookups, but every side
 * runs. variant: bit 0 indices of rank 2 ([I, 1]). */
static int lay_embedding(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const int aW[2] = { 0, 1 }, aI[2] = { 2, -1 };
    (void)zErr; (void)nErr;
    add_input(pS, pC, "weight", pS->dtype, 2, aW);
    add_input(pS, pC, "indices", pS->dtype, (pS->variant & 1) ? 2 : 1, aI);
    return 0;
}

/* ---- dot products ------------------------------------------------------------------ */

/* dims: M, K, N, B. variant: 0 [M,K]x[K,N]; 1 [B,M,K]x[K,N]; 2 [K]x[K,N]; 3 [M,K]x[K];
 * 4 [B,M,K]x[B,K,N] (batched both sides). */
static int lay_matmul(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const int aMK[] = { 0, 1 }, aKN[] = { 1, 2 }, aBMK[] = { 3, 0, 1 },
                     aBKN[] = { 3, 1, 2 }, aK[] = { 1 };
    static const struct { int rankA; const int *aiA; int rankB; const int *aiB; } aForm[] = {
        { 2, aMK, 2, aKN }, { 3, aBMK, 2, aKN }, { 1, aK, 2, aKN }, { 2, aMK, 1, aK },
        { 3, aBMK, 3, aBKN },
    };
    unsigned v = pS->variant % 5;
    (void)zErr; (void)nErr;
    add_input(pS, pC, "a", pS->dtype, aForm[v].rankA, aForm[v].aiA);
    add_input(pS, pC, "b", pS->dtype, aForm[v].rankB, aForm[v].aiB);
    return 0;
}

/* dims: M, K, N, B. variant bit 0: x is [B, M, K] (else [M, K]); bit 1: a bias. */
static int lay_linear(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const int aMK[] = { 0, 1 }, aBMK[] = { 3, 0, 1 }, aNK[] = { 2, 1 }, aN[] = { 2 };
    int batched = pS->variant & 1;
    (void)zErr; (void)nErr;
    add_input(pS, pC, "x", pS->dtype, batched ? 3 : 2, batched ? aBMK : aMK);
    add_input(pS, pC, "weight", pS->dtype, 2, aNK);
    if ((pS->variant >> 1) & 1) add_input(pS, pC, "bias", pS->dtype, 1, aN);
    return 0;
}

/* dims: M, K, N, B. addmm: a [M, K], b [K, N]; baddbmm: [B, M, K], [B, K, N]. The addend
 * c (variant % 3): the output's shape, [N] (a bias row), or [1]; bit 2: beta 0.5 (bit 3:
 * beta 0, c ignored); bit 4: alpha 2. */
static int lay_addmm(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const int aMK[] = { 0, 1 }, aKN[] = { 1, 2 }, aBMK[] = { 3, 0, 1 },
                     aBKN[] = { 3, 1, 2 }, aMN[] = { 0, 2 }, aBMN[] = { 3, 0, 2 },
                     aN[] = { 2 }, aOne[] = { -1 };
    int batched = pC->pDef == &parity_op_baddbmm, form = (int)(pS->variant % 3);
    (void)zErr; (void)nErr;
    if (form == 0) add_input(pS, pC, "input", pS->dtype, batched ? 3 : 2, batched ? aBMN : aMN);
    else add_input(pS, pC, "input", pS->dtype, 1, form == 1 ? aN : aOne);
    add_input(pS, pC, batched ? "batch1" : "mat1", pS->dtype, batched ? 3 : 2, batched ? aBMK : aMK);
    add_input(pS, pC, batched ? "batch2" : "mat2", pS->dtype, batched ? 3 : 2, batched ? aBKN : aKN);
    if ((pS->variant >> 3) & 1) param_float(pC, "beta", 0.0);
    else if ((pS->variant >> 2) & 1) param_float(pC, "beta", 0.5);
    if ((pS->variant >> 4) & 1) param_float(pC, "alpha", 2.0);
    return 0;
}

/* dims: M, K, N, B. */
static int lay_bmm(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const int aBMK[] = { 3, 0, 1 }, aBKN[] = { 3, 1, 2 };
    (void)zErr; (void)nErr;
    add_input(pS, pC, "a", pS->dtype, 3, aBMK);
    add_input(pS, pC, "b", pS->dtype, 3, aBKN);
    return 0;
}

/* dims: B, H, L, S, E, Ev. variant bit 0: is_causal; bit 1: an additive float mask [L, S]
 * (not with is_causal). */
static int lay_sdpa(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const int aQ[] = { 0, 1, 2, 4 }, aK[] = { 0, 1, 3, 4 }, aV[] = { 0, 1, 3, 5 },
                     aM[] = { 2, 3 };
    (void)zErr; (void)nErr;
    add_input(pS, pC, "q", pS->dtype, 4, aQ);
    add_input(pS, pC, "k", pS->dtype, 4, aK);
    add_input(pS, pC, "v", pS->dtype, 4, aV);
    if (pS->variant & 1) param_int(pC, "is_causal", 1);
    else if ((pS->variant >> 1) & 1) add_input(pS, pC, "attn_mask", pS->dtype, 2, aM);
    return 0;
}

/* dims: N, C, H, W, O, kH, kW. variant bit 0: stride 2; bit 1: padding 1; bit 2: bias. */
static int lay_conv2d(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const int aX[] = { 0, 1, 2, 3 }, aW[] = { 4, 1, 5, 6 }, aB[] = { 4 };
    int64_t stride = (pS->variant & 1) ? 2 : 1, pad = (pS->variant >> 1) & 1;
    int64_t aPair[2];
    (void)zErr; (void)nErr;
    add_input(pS, pC, "x", pS->dtype, 4, aX);
    add_input(pS, pC, "weight", pS->dtype, 4, aW);
    if ((pS->variant >> 2) & 1) add_input(pS, pC, "bias", pS->dtype, 1, aB);
    aPair[0] = aPair[1] = stride;
    param_ints(pC, "stride", aPair, 2);
    aPair[0] = aPair[1] = pad;
    param_ints(pC, "padding", aPair, 2);
    return 0;
}

/* ---- layout ops and cast ----------------------------------------------------------- */

/* variant: rank 2..4 (v % 3 + 2); swaps the first and last dims. */
static int lay_transpose(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int rank = (int)(pS->variant % 3) + 2;
    (void)zErr; (void)nErr;
    add_input(pS, pC, "x", pS->dtype, rank, aIdentity);
    param_int(pC, "dim0", 0);
    param_int(pC, "dim1", rank - 1);
    return 0;
}

/* variant: rank 1..4 (v % 4 + 1); reverses the dims. */
static int lay_permute(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int rank = (int)(pS->variant % 4) + 1, d;
    int64_t aPerm[4];
    (void)zErr; (void)nErr;
    add_input(pS, pC, "x", pS->dtype, rank, aIdentity);
    for (d = 0; d < rank; d++) aPerm[d] = rank - 1 - d;
    param_ints(pC, "dims", aPerm, (size_t)rank);
    return 0;
}

/* dims: A, B, C. [A, B, C] -> [A * B, C]. */
static int lay_reshape(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    int64_t aShape[2] = { (int64_t)(pS->aDim[0] * pS->aDim[1]), (int64_t)pS->aDim[2] };
    (void)zErr; (void)nErr;
    add_input(pS, pC, "x", pS->dtype, 3, aIdentity);
    param_ints(pC, "shape", aShape, 2);
    return 0;
}

/* variant: rank 0..3 (v % 4); bits 2..3 pick the target dtype among float16, bfloat16,
 * float32 and int32, skipping the case's own. The output dtype is the target. */
static int lay_cast(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    static const parity_dtype aTo[] = { PARITY_DT_F16, PARITY_DT_BF16, PARITY_DT_F32,
                                        PARITY_DT_I32 };
    parity_dtype to = aTo[(pS->variant >> 2) & 3];
    (void)zErr; (void)nErr;
    if (to == pS->dtype) to = PARITY_DT_I32;
    add_input(pS, pC, "x", pS->dtype, (int)(pS->variant % 4), aIdentity);
    param_string(pC, "to", parity_dtype_name(to));
    pC->outDtype = to;
    return 0;
}

/* ---- the table: one layout per family ---------------------------------------------- */

#define R_ROW PARITY_ROLE_ROW
#define R_BAT PARITY_ROLE_BATCH
#define R_RED PARITY_ROLE_REDUCE
#define R_K   PARITY_ROLE_K
#define R_TIL PARITY_ROLE_TILE
#define R_KER PARITY_ROLE_KERNEL
#define MATMUL_DIMS 4, { R_TIL, R_K, R_TIL, R_BAT }

typedef struct {
    int nDim;
    parity_dim_role aRole[PARITY_CASE_MAX_DIMS];
    uint32_t nVariant;        /* with a case attribute (UNARY: nVariantAttr) */
    uint32_t nVariantAttr;
    int (*xLayout)(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr);
} family_layout;

/* Indexed by parity_op_family. */
static const family_layout aFamily[PARITY_FAMILY_COUNT] = {
    [PARITY_FAMILY_UNARY] = { 5, { R_BAT, R_BAT, R_ROW, R_ROW, R_ROW }, 6, 16, lay_unary },
    [PARITY_FAMILY_BINARY] = { 4, { R_BAT, R_ROW, R_ROW, R_ROW }, 512, 512, lay_binary },
    [PARITY_FAMILY_REDUCE] = { 4, { R_BAT, R_ROW, R_ROW, R_RED }, 256, 256, lay_reduce },
    [PARITY_FAMILY_ROWWISE] = { 4, { R_BAT, R_ROW, R_ROW, R_RED }, 16, 16, lay_rowwise },
    [PARITY_FAMILY_NORM] = { 4, { R_BAT, R_ROW, R_ROW, R_RED }, 32, 32, lay_norm },
    [PARITY_FAMILY_MATMUL] = { MATMUL_DIMS, 5, 5, lay_matmul },
    [PARITY_FAMILY_LINEAR] = { MATMUL_DIMS, 4, 4, lay_linear },
    [PARITY_FAMILY_BMM] = { MATMUL_DIMS, 1, 1, lay_bmm },
    [PARITY_FAMILY_ADDMM] = { MATMUL_DIMS, 32, 32, lay_addmm },
    [PARITY_FAMILY_CONV2D] = { 7, { R_BAT, R_K, R_ROW, R_ROW, R_TIL, R_KER, R_KER }, 8, 8,
                               lay_conv2d },
    [PARITY_FAMILY_ATTENTION] = { 6, { R_BAT, R_BAT, R_TIL, R_RED, R_K, R_TIL }, 4, 4,
                                  lay_sdpa },
    [PARITY_FAMILY_TRANSPOSE] = { 4, { R_ROW, R_ROW, R_ROW, R_ROW }, 3, 3, lay_transpose },
    [PARITY_FAMILY_PERMUTE] = { 4, { R_ROW, R_ROW, R_ROW, R_ROW }, 4, 4, lay_permute },
    [PARITY_FAMILY_RESHAPE] = { 3, { R_ROW, R_ROW, R_ROW }, 1, 1, lay_reshape },
    [PARITY_FAMILY_CAST] = { 4, { R_ROW, R_ROW, R_ROW, R_ROW }, 16, 16, lay_cast },
    [PARITY_FAMILY_BATCH_NORM] = { 4, { R_BAT, R_ROW, R_ROW, R_ROW }, 4, 4, lay_batch_norm },
    [PARITY_FAMILY_POOL] = { 6, { R_BAT, R_ROW, R_ROW, R_ROW, R_KER, R_KER }, 32, 32,
                             lay_pool },
    [PARITY_FAMILY_SLICE] = { 3, { R_ROW, R_ROW, R_ROW }, 16, 16, lay_slice },
    [PARITY_FAMILY_EMBEDDING] = { 3, { R_ROW, R_ROW, R_ROW }, 2, 2, lay_embedding },
    [PARITY_FAMILY_CONCAT] = { 4, { R_ROW, R_ROW, R_ROW, R_ROW }, 32, 32, lay_concat },
    [PARITY_FAMILY_WHERE] = { 4, { R_BAT, R_ROW, R_ROW, R_ROW }, 512, 512, lay_where },
};

/* The per-op view (parity_layout_info), made once from the registry. */
static parity_layout_info aLayout[PARITY_OP_COUNT];
static size_t nLayout;
static pthread_once_t layoutOnce = PTHREAD_ONCE_INIT;

static void make_layouts(void)
{
    size_t i;
    for (i = 0; parity_op_registry[i]; i++) {
        const parity_op_def *pDef = parity_op_registry[i];
        const family_layout *pF;
        parity_layout_info *pL;
        if ((unsigned)pDef->family >= PARITY_FAMILY_COUNT) continue;
        pF = &aFamily[pDef->family];
        if (!pF->xLayout) continue;
        pL = &aLayout[nLayout++];
        pL->pDef = pDef;
        pL->zOp = pDef->zName;
        pL->nDim = pF->nDim;
        memcpy(pL->aRole, pF->aRole, sizeof pL->aRole);
        pL->nVariant = pDef->nCaseAttr ? pF->nVariantAttr : pF->nVariant;
    }
}

const parity_layout_info *parity_layout_of(const parity_op_def *pDef)
{
    size_t i;
    pthread_once(&layoutOnce, make_layouts);
    for (i = 0; i < nLayout; i++)
        if (aLayout[i].pDef == pDef) return &aLayout[i];
    return NULL;
}

const parity_layout_info *parity_layout_find(const char *zOp)
{
    const parity_op_def *pDef = parity_op_find(zOp);
    return pDef ? parity_layout_of(pDef) : NULL;
}

const parity_layout_info *parity_layout_all(size_t *pn)
{
    pthread_once(&layoutOnce, make_layouts);
    *pn = nLayout;
    return aLayout;
}

int parity_layout_families(void)
{
    int n = 0, f;
    for (f = 0; f < PARITY_FAMILY_COUNT; f++) n += aFamily[f].xLayout != NULL;
    return n;
}

int parity_layout_apply(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr)
{
    const parity_layout_info *p = pC->pDef ? parity_layout_of(pC->pDef) : NULL;
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
    pC->outDtype = pS->dtype;     /* the layout may say otherwise (cast) */
    if (aFamily[p->pDef->family].xLayout(pS, pC, zErr, nErr) != 0) return -1;
    if (pC->nomem) {
        snprintf(zErr, nErr, "out of memory");
        return -1;
    }
    return 0;
}
