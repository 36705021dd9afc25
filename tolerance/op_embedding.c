/*
 * op_embedding.c - embedding(weight, indices, padding_idx, ...) with PyTorch's forward
 * semantics: weight [V, D], indices of any shape (integers; a float dtype holding integers
 * is read the same way), output [indices.., D]: output row r is weight row indices[r].
 * padding_idx only matters for gradients; max_norm renormalises the weight in place as a
 * side effect and is refused.
 *
 * Reference: exact, the weight element's binary64 value. An index that is not an integer in
 * [0, V) (torch raises there, so no capture of torch holds one) gives NaN: a fuzz case may
 * draw one, and then every side must say NaN. Bound: 0.
 */
#include <math.h>
#include <stdio.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/propagate.h"

static int emb_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                       char *zErr, size_t nErr)
{
    const parity_operand *pW = &pCall->aIn[0], *pI = &pCall->aIn[1];
    parity_embedding_geometry *pG = &pCall->geom.embedding;
    uint64_t aOut[PARITY_MAX_RANK];
    double maxNorm = NAN;
    int found = 0, d;
    if (parity_param_float(aAttr, nAttr, "max_norm", &maxNorm, &found, zErr, nErr) != 0)
        return -1;
    if (found && maxNorm == maxNorm) {
        snprintf(zErr, nErr, "embedding: max_norm renormalises the weight as it reads it; "
                 "no model");
        return -1;
    }
    if (pW->rank != 2) {
        snprintf(zErr, nErr, "embedding: weight must be [V, D], got rank %d", pW->rank);
        return -1;
    }
    if (pI->rank + 1 > PARITY_MAX_RANK) {
        snprintf(zErr, nErr, "embedding: indices of rank %d are too many dims", pI->rank);
        return -1;
    }
    pG->V = pW->aDim[0];
    pG->D = pW->aDim[1];
    for (d = 0; d < pI->rank; d++) aOut[d] = pI->aDim[d];
    aOut[pI->rank] = pG->D;
    if (pCall->outDtype != pW->dtype) {
        snprintf(zErr, nErr, "embedding: the output dtype must be the weight's");
        return -1;
    }
    if (!parity_op_take_out(pCall, pI->rank + 1, aOut)) {
        char zA[256], zB[256];
        snprintf(zErr, nErr, "embedding: indices and weight give shape %s, the output has %s",
                 parity_shape_str(pI->rank + 1, aOut, zA, sizeof zA),
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zB, sizeof zB));
        return -1;
    }
    return 0;
}

int64_t parity_embedding_row(const parity_embedding_geometry *pG, double index)
{
    if (!(index >= 0.0) || index >= (double)pG->V || index != floor(index)) return -1;
    return (int64_t)index;
}

static int emb_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    const parity_embedding_geometry *pG = &pCall->geom.embedding;
    int64_t row = parity_embedding_row(pG, pCall->aIn[1].aValue[linear / pG->D]);
    mpfr_set_d(ref, row < 0 ? NAN : pCall->aIn[0].aValue[(uint64_t)row * pG->D + linear % pG->D],
               MPFR_RNDN);
    *pBound = 0.0;
    return 0;
}

/* Propagation (ops.h, xPropagate): the weight element moved, its radius with it; an
 * index that is not exact could name another row: vacuous. */
static int emb_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                         mpfr_t ref, double *pRadius)
{
    const parity_embedding_geometry *pG = &pCall->geom.embedding;
    int64_t row = parity_embedding_row(pG, pCall->aIn[1].aValue[linear / pG->D]);
    emb_element(pCall, linear, ref, pRadius);
    if (aRad[1][linear / pG->D] != 0.0) return parity_propagate_vacuous(pCall, pRadius);
    if (row < 0) return 0;                      /* NaN, exact */
    return parity_propagate_moved(pCall, aRad[0][(uint64_t)row * pG->D + linear % pG->D],
                                  pRadius);
}

const parity_op_def parity_op_embedding = {
    .zName = "embedding",
    .zModel = "exact (a row of the weight; an index outside [0, V) is NaN); bound 0",
    .nInMin = 2, .nInMax = 2, .family = PARITY_FAMILY_EMBEDDING,
    .xPrepare = emb_prepare, .xElement = emb_element, .xPropagate = emb_propagate,
};
