/*
 * op_concat.c - the exact ops that build a larger tensor from their inputs' elements, with
 * PyTorch semantics:
 *   cat(tensors..., dim = 0)      the inputs laid one after another along dim; every input
 *                                 has the same dims but that one (a 1-D input of size 0 is
 *                                 skipped, as torch.cat skips its legacy empty tensors)
 *   stack(tensors..., dim = 0)    the inputs, all of one shape, along a new dim
 *                                 (dim in [-rank - 1, rank])
 *   expand(x, size)               x broadcast to size: trailing dims aligned, a dim of 1 (or
 *                                 a new leading one) repeated, -1 keeping x's own
 *
 * Reference: exact. Each output element is one input element: its binary64 value, NaN
 * and -0 included. Bound: 0. The inputs may differ in dtype (torch.cat promotes); the
 * output dtype must hold every input value exactly for the bound 0 to be right
 * (parity_dtype_holds, the layout ops' rule), else the input is refused: a cast is its own
 * op.
 */
#include <stdio.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/propagate.h"

/* Is operand k a legacy empty tensor torch.cat skips (1-D, size 0)? */
static int cat_skipped(const parity_operand *pX, size_t nIn)
{
    return nIn > 1 && pX->rank == 1 && pX->aDim[0] == 0;
}

/* Shape checks of cat and stack, and their geometry; stack: a new dim. */
static int concat_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                          const char *zOp, int stack, char *zErr, size_t nErr)
{
    parity_concat_geometry *pG = &pCall->geom.concat;
    const parity_operand *pRef = NULL;
    uint64_t aOut[PARITY_MAX_RANK], total = 0;
    int64_t dim = 0;
    int rank, outRank, d;
    size_t k;

    for (k = 0; k < pCall->nIn && !pRef; k++)
        if (!cat_skipped(&pCall->aIn[k], pCall->nIn) || stack) pRef = &pCall->aIn[k];
    if (!pRef) pRef = &pCall->aIn[0];
    rank = pRef->rank;
    outRank = stack ? rank + 1 : rank;
    if (outRank > PARITY_MAX_RANK || (!stack && rank == 0)) {
        snprintf(zErr, nErr, "%s: inputs of rank %d cannot be %s", zOp, rank,
                 stack ? "stacked" : "concatenated (a 0-d tensor has no dim)");
        return -1;
    }
    if (parity_param_int(aAttr, nAttr, "dim", &dim, NULL, zErr, nErr) != 0) return -1;
    if (dim < -(int64_t)outRank || dim >= (int64_t)outRank) {
        snprintf(zErr, nErr, "%s: dim %lld out of range for rank %d", zOp, (long long)dim,
                 outRank);
        return -1;
    }
    if (dim < 0) dim += outRank;
    memset(pG, 0, sizeof *pG);
    pG->nIn = (int)pCall->nIn;
    pG->dim = (int)dim;
    for (k = 0; k < pCall->nIn; k++) {
        const parity_operand *pX = &pCall->aIn[k];
        if (!parity_dtype_holds(pCall->outDtype, pX->dtype)) {
            snprintf(zErr, nErr, "%s: input %zu is %s, which the output's %s does not hold "
                     "(a dtype change is a cast)", zOp, k,
                     parity_dtype_name(pX->dtype), parity_dtype_name(pCall->outDtype));
            return -1;
        }
        if (!stack && cat_skipped(pX, pCall->nIn) && pX != pRef) continue;
        if (pX->rank != rank) {
            snprintf(zErr, nErr, "%s: input %zu has rank %d, input 0 %d", zOp, k, pX->rank, rank);
            return -1;
        }
        for (d = 0; d < rank; d++)
            if (pX->aDim[d] != pRef->aDim[d] && (stack || d != dim)) {
                snprintf(zErr, nErr, "%s: input %zu has size %llu at dim %d, input 0 %llu", zOp,
                         k, (unsigned long long)pX->aDim[d], d,
                         (unsigned long long)pRef->aDim[d]);
                return -1;
            }
        pG->aSize[k] = stack ? 1 : pX->aDim[dim];
        total += pG->aSize[k];
    }
    pG->inner = 1;
    for (d = 0, k = 0; d < outRank; d++) {
        if (d == dim) {
            aOut[d] = total;
            if (!stack) k++;
        } else {
            aOut[d] = pRef->aDim[k++];
        }
        if (d > dim) pG->inner *= aOut[d];
    }
    pG->outSize = total;
    if (!parity_op_take_out(pCall, outRank, aOut)) {
        char zA[256], zB[256];
        snprintf(zErr, nErr, "%s: the inputs give shape %s, the output has %s", zOp,
                 parity_shape_str(outRank, aOut, zA, sizeof zA),
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zB, sizeof zB));
        return -1;
    }
    return 0;
}

static int cat_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                       char *zErr, size_t nErr)
{
    return concat_prepare(pCall, aAttr, nAttr, "cat", 0, zErr, nErr);
}

static int stack_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                         char *zErr, size_t nErr)
{
    return concat_prepare(pCall, aAttr, nAttr, "stack", 1, zErr, nErr);
}

static int expand_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                          char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    parity_concat_geometry *pG = &pCall->geom.concat;
    int64_t aSize[PARITY_MAX_RANK];
    uint64_t aOut[PARITY_MAX_RANK];
    size_t n = 0;
    int found = 0, d, lead;

    if (parity_param_ints(aAttr, nAttr, "size", aSize, PARITY_MAX_RANK, &n, &found, zErr,
                          nErr) != 0)
        return -1;
    if (!found) {
        snprintf(zErr, nErr, "expand: attribute 'size' missing");
        return -1;
    }
    if ((int)n < pX->rank) {
        snprintf(zErr, nErr, "expand: size has %zu dims, fewer than the input's %d", n, pX->rank);
        return -1;
    }
    if (pCall->outDtype != pX->dtype) {
        snprintf(zErr, nErr, "expand: the output dtype must be the input's");
        return -1;
    }
    memset(pG, 0, sizeof *pG);
    pG->nIn = 1;
    pG->expand = 1;
    lead = (int)n - pX->rank;
    for (d = 0; d < (int)n; d++) {
        if (aSize[d] == -1 && d >= lead) aOut[d] = pX->aDim[d - lead];   /* kept */
        else if (aSize[d] >= 0) aOut[d] = (uint64_t)aSize[d];
        else {
            snprintf(zErr, nErr, "expand: size %lld at dim %d%s", (long long)aSize[d], d,
                     d < lead ? " (a new dim)" : "");
            return -1;
        }
    }
    /* the registry's one broadcasting rule: a dim of 1 (or a new one) read with stride 0 */
    if (parity_broadcast_strides((int)n, aOut, pX->aDim, pX->rank, 1, pG->aStride) != 0) {
        char zA[256], zB[256];
        snprintf(zErr, nErr, "expand: the input %s does not broadcast to %s",
                 parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA),
                 parity_shape_str((int)n, aOut, zB, sizeof zB));
        return -1;
    }
    if (!parity_op_take_out(pCall, (int)n, aOut)) {
        char zA[256], zB[256];
        snprintf(zErr, nErr, "expand: size gives shape %s, the output has %s",
                 parity_shape_str((int)n, aOut, zA, sizeof zA),
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zB, sizeof zB));
        return -1;
    }
    return 0;
}

uint64_t parity_concat_source(const parity_concat_geometry *pG, const uint64_t *aOutDim,
                              int outRank, uint64_t linear, int *piIn)
{
    uint64_t along, outer, j, start = 0;
    int k;
    if (pG->expand) {
        uint64_t aIdx[PARITY_MAX_RANK], off = 0;
        int d;
        parity_unravel(outRank, aOutDim, linear, aIdx);
        for (d = 0; d < outRank; d++) off += aIdx[d] * pG->aStride[d];
        *piIn = 0;
        return off;
    }
    j = linear % pG->inner;
    along = (linear / pG->inner) % pG->outSize;
    outer = linear / (pG->inner * pG->outSize);
    for (k = 0; k < pG->nIn && along >= start + pG->aSize[k]; k++) start += pG->aSize[k];
    *piIn = k;
    return (outer * pG->aSize[k] + (along - start)) * pG->inner + j;
}

static int concat_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    int k;
    uint64_t off = parity_concat_source(&pCall->geom.concat, pCall->aOutDim, pCall->outRank,
                                        linear, &k);
    mpfr_set_d(ref, pCall->aIn[k].aValue[off], MPFR_RNDN);
    *pBound = 0.0;
    return 0;
}

/* Propagation (ops.h, xPropagate): the element moved (a promotion is exact), its radius
 * with it. */
static int concat_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                            mpfr_t ref, double *pRadius)
{
    int k;
    uint64_t off = parity_concat_source(&pCall->geom.concat, pCall->aOutDim, pCall->outRank,
                                        linear, &k);
    mpfr_set_d(ref, pCall->aIn[k].aValue[off], MPFR_RNDN);
    return parity_propagate_moved(pCall, aRad[k][off], pRadius);
}

const parity_op_def parity_op_cat = {
    .zName = "cat", .zModel = "exact (the inputs one after another along dim); bound 0",
    .nInMin = 1, .nInMax = PARITY_CONCAT_MAX_IN, .family = PARITY_FAMILY_CONCAT,
    .xPrepare = cat_prepare, .xElement = concat_element,
    .xPropagate = concat_propagate,
};

const parity_op_def parity_op_stack = {
    .zName = "stack", .zModel = "exact (the inputs along a new dim); bound 0",
    .nInMin = 1, .nInMax = PARITY_CONCAT_MAX_IN, .family = PARITY_FAMILY_CONCAT,
    .xPrepare = stack_prepare, .xElement = concat_element,
    .xPropagate = concat_propagate,
};

const parity_op_def parity_op_expand = {
    .zName = "expand", .zModel = "exact (the input broadcast to size); bound 0",
    .nInMin = 1, .nInMax = 1, .family = PARITY_FAMILY_CONCAT,
    .xPrepare = expand_prepare, .xElement = concat_element,
    .xPropagate = concat_propagate,
};
