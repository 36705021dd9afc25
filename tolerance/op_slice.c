/*
 * op_slice.c - the exact slicing ops, with PyTorch semantics:
 *   select(x, dim, index)               x with dim removed, at index (negative from the end)
 *   slice(x, dim, start, end, step)     elements start, start + step, ... below end along dim
 *                                       (aten::slice; start/end clamped as torch does)
 *   split(x, split_size, dim)           its first output: the first split_size along dim
 *                                       (the later outputs are the capture's #K tensors)
 *
 * Reference: exact. Each output element is one input element: its binary64 value, NaN and
 * -0 included. Bound: 0. One geometry serves all three: output element `linear` reads the
 * input at start + i step along dim (i its index along dim; for select, the dim is dropped
 * and i = 0).
 */
#include <stdio.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/propagate.h"

/* Output dims and the geometry, from dim, start, count along it, step, and whether the
 * dim is dropped. */
static int slice_setup(parity_op_call *pCall, const char *zOp, int dim, int64_t start,
                       uint64_t count, int64_t step, int drop, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    parity_slice_geometry *pG = &pCall->geom.slice;
    uint64_t aOut[PARITY_MAX_RANK], stride = 1;
    int d, r = 0;
    pG->rank = pX->rank;
    pG->dim = dim;
    pG->start = start;
    pG->step = step;
    pG->drop = drop;
    for (d = pX->rank - 1; d >= 0; d--) {
        pG->aInStride[d] = stride;
        stride *= pX->aDim[d];
    }
    for (d = 0; d < pX->rank; d++) {
        if (d == dim && drop) continue;
        aOut[r++] = d == dim ? count : pX->aDim[d];
    }
    if (pCall->outDtype != pX->dtype) {
        snprintf(zErr, nErr, "%s: the output dtype must be the input's", zOp);
        return -1;
    }
    if (!parity_op_take_out(pCall, r, aOut)) {
        char zA[256], zB[256];
        snprintf(zErr, nErr, "%s: the operands give shape %s, the output has %s", zOp,
                 parity_shape_str(r, aOut, zA, sizeof zA),
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zB, sizeof zB));
        return -1;
    }
    return 0;
}

/* 'dim' wrapped into 0..rank-1 (default dflt). */
static int get_dim(const parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                   const char *zOp, int64_t dflt, int *pDim, char *zErr, size_t nErr)
{
    int64_t dim = dflt;
    if (parity_param_int(aAttr, nAttr, "dim", &dim, NULL, zErr, nErr) != 0) return -1;
    *pDim = parity_wrap_dim(dim, pCall->aIn[0].rank);
    if (*pDim < 0 || pCall->aIn[0].rank == 0) {
        snprintf(zErr, nErr, "%s: dim %lld out of range for rank %d", zOp, (long long)dim,
                 pCall->aIn[0].rank);
        return -1;
    }
    return 0;
}

static int select_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                          char *zErr, size_t nErr)
{
    int64_t index = 0, size;
    int dim, found;
    if (get_dim(pCall, aAttr, nAttr, "select", 0, &dim, zErr, nErr) != 0) return -1;
    if (parity_param_int(aAttr, nAttr, "index", &index, &found, zErr, nErr) != 0) return -1;
    size = (int64_t)pCall->aIn[0].aDim[dim];
    if (!found || index < -size || index >= size) {
        snprintf(zErr, nErr, "select: index %lld out of range for size %lld%s", (long long)index,
                 (long long)size, found ? "" : " (attribute 'index' missing)");
        return -1;
    }
    if (index < 0) index += size;
    return slice_setup(pCall, "select", dim, index, 1, 1, 1, zErr, nErr);
}

static int slice_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                         char *zErr, size_t nErr)
{
    int64_t start = 0, end, step = 1, size;
    int dim;
    if (get_dim(pCall, aAttr, nAttr, "slice", 0, &dim, zErr, nErr) != 0) return -1;
    size = (int64_t)pCall->aIn[0].aDim[dim];
    end = size;
    if (parity_param_int(aAttr, nAttr, "start", &start, NULL, zErr, nErr) != 0 ||
        parity_param_int(aAttr, nAttr, "end", &end, NULL, zErr, nErr) != 0 ||
        parity_param_int(aAttr, nAttr, "step", &step, NULL, zErr, nErr) != 0)
        return -1;
    if (step < 1) {
        snprintf(zErr, nErr, "slice: step must be positive, got %lld", (long long)step);
        return -1;
    }
    /* torch: negative bounds count from the end, then both clamp into [0, size] */
    if (start < 0) start += size;
    if (end < 0) end += size;
    if (start < 0) start = 0;
    if (end > size) end = size;
    if (start > size) start = size;
    if (end < start) end = start;
    /* ceil((end - start) / step), written so that a step near INT64_MAX cannot overflow */
    return slice_setup(pCall, "slice", dim, start,
                       end == start ? 0 : (uint64_t)((end - start - 1) / step) + 1,
                       step, 0, zErr, nErr);
}

static int split_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                         char *zErr, size_t nErr)
{
    int64_t splitSize = 0, size;
    int dim, found;
    if (get_dim(pCall, aAttr, nAttr, "split", 0, &dim, zErr, nErr) != 0) return -1;
    if (parity_param_int(aAttr, nAttr, "split_size", &splitSize, &found, zErr, nErr) != 0)
        return -1;
    if (!found || splitSize < 1) {
        snprintf(zErr, nErr, "split: 'split_size' must be a positive integer");
        return -1;
    }
    size = (int64_t)pCall->aIn[0].aDim[dim];
    return slice_setup(pCall, "split", dim, 0, (uint64_t)(splitSize < size ? splitSize : size),
                       1, 0, zErr, nErr);
}

uint64_t parity_slice_source(const parity_slice_geometry *pG, const uint64_t *aOutDim,
                             int outRank, uint64_t linear)
{
    uint64_t aIdx[PARITY_MAX_RANK], off = 0;
    int d, r;
    parity_unravel(outRank, aOutDim, linear, aIdx);
    for (d = 0, r = 0; d < pG->rank; d++) {
        uint64_t i;
        if (d == pG->dim) {
            i = (uint64_t)pG->start + (pG->drop ? 0 : aIdx[r] * (uint64_t)pG->step);
            if (!pG->drop) r++;
        } else {
            i = aIdx[r++];
        }
        off += i * pG->aInStride[d];
    }
    return off;
}

static int slice_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    uint64_t off = parity_slice_source(&pCall->geom.slice, pCall->aOutDim, pCall->outRank, linear);
    mpfr_set_d(ref, pCall->aIn[0].aValue[off], MPFR_RNDN);
    *pBound = 0.0;
    return 0;
}

/* Propagation (ops.h, xPropagate): the element moved, its radius with it. */
static int slice_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                           mpfr_t ref, double *pRadius)
{
    uint64_t off = parity_slice_source(&pCall->geom.slice, pCall->aOutDim, pCall->outRank, linear);
    mpfr_set_d(ref, pCall->aIn[0].aValue[off], MPFR_RNDN);
    return parity_propagate_moved(pCall, aRad[0][off], pRadius);
}

static int slice_fast(const parity_op_call *pCall, uint64_t linear, double *pRef, double *pErr,
                      double *pBound, double *pSpread)
{
    uint64_t off = parity_slice_source(&pCall->geom.slice, pCall->aOutDim, pCall->outRank, linear);
    return parity_exact_fast(pCall->aIn[0].aValue[off], pRef, pErr, pBound, pSpread);
}

const parity_op_def parity_op_select = {
    .zName = "select", .zModel = "exact (one slice of the input); bound 0",
    .nInMin = 1, .nInMax = 1, .family = PARITY_FAMILY_SLICE,
    .xPrepare = select_prepare, .xElement = slice_element, .xFast = slice_fast,
    .xPropagate = slice_propagate,
};

const parity_op_def parity_op_slice = {
    .zName = "slice", .zModel = "exact (every step-th element of a range); bound 0",
    .nInMin = 1, .nInMax = 1, .family = PARITY_FAMILY_SLICE,
    .xPrepare = slice_prepare, .xElement = slice_element, .xFast = slice_fast,
    .xPropagate = slice_propagate,
};

const parity_op_def parity_op_split = {
    .zName = "split", .zModel = "exact (its first output: the first split_size along dim); bound 0",
    .nInMin = 1, .nInMax = 1, .family = PARITY_FAMILY_SLICE,
    .xPrepare = split_prepare, .xElement = slice_element, .xFast = slice_fast,
    .xPropagate = slice_propagate,
};
