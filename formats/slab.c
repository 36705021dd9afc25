/*
 * slab.c - planning the linear runs ("slabs") in which tensors are streamed.
 *
 * A tensor is never held whole: both sides of a diff are read slab by slab. A slab must be
 * a rectangular HDF5 hyperslab and a contiguous run of row-major linear indices, so that
 * statistics can name elements by linear index. Both hold when the slab advances along a
 * dimension d and covers whole extents of every dimension after d, and a single index of
 * every dimension before d. We pick the outermost d whose inner block (product of the
 * extents after d) fits the budget; rank 0 and zero-size tensors get one (possibly empty)
 * slab.
 */
#include "formats/capture.h"

void parity_slab_plan_init(parity_slab_plan *pPlan, int rank, const uint64_t *aDim,
                           uint64_t nMaxElem, uint64_t rowAlign)
{
    int iDim;
    uint64_t nInner = 1;

    if (nMaxElem < 1) nMaxElem = 1;
    if (rowAlign < 1) rowAlign = 1;
    pPlan->rank = rank;
    pPlan->nElem = 1;
    for (iDim = 0; iDim < rank; iDim++) {
        pPlan->aDim[iDim] = aDim[iDim];
        pPlan->nElem *= aDim[iDim];
    }
    pPlan->next = 0;
    pPlan->splitDim = -1;
    pPlan->nInner = 1;
    pPlan->nStep = 1;
    if (rank == 0 || pPlan->nElem == 0) return;

    /* Walk inward from the last dimension while the inner block still fits. */
    iDim = rank - 1;
    while (iDim > 0 && nInner * aDim[iDim] <= nMaxElem) {
        nInner *= aDim[iDim];
        iDim--;
    }
    pPlan->splitDim = iDim;
    pPlan->nInner = nInner;
    pPlan->nStep = nMaxElem / nInner;
    if (pPlan->nStep < 1) pPlan->nStep = 1;
    if (pPlan->nStep > aDim[iDim]) pPlan->nStep = aDim[iDim];
    /* Round down to whole HDF5 chunks where that still leaves a step, so a chunk is never
     * inflated twice. */
    if (rowAlign > 1 && pPlan->nStep >= rowAlign && pPlan->nStep < aDim[iDim])
        pPlan->nStep -= pPlan->nStep % rowAlign;
}

void parity_unravel(int rank, const uint64_t *aDim, uint64_t linear, uint64_t *aIndex)
{
    int iDim;
    for (iDim = rank - 1; iDim >= 0; iDim--) {
        if (aDim[iDim] == 0) { aIndex[iDim] = 0; continue; }
        aIndex[iDim] = linear % aDim[iDim];
        linear /= aDim[iDim];
    }
}

int parity_slab_next(parity_slab_plan *pPlan, parity_slab *pSlab)
{
    int iDim, d = pPlan->splitDim;
    uint64_t aIndex[PARITY_MAX_RANK] = { 0 };
    uint64_t nAlong, nLeft;

    if (pPlan->rank == 0 || pPlan->nElem == 0) {
        /* One slab: the scalar, or nothing at all for a zero-size tensor. */
        if (pPlan->next > 0) return 0;
        pPlan->next = 1;
        pSlab->first = 0;
        pSlab->n = pPlan->nElem;
        for (iDim = 0; iDim < pPlan->rank; iDim++) {
            pSlab->aStart[iDim] = 0;
            pSlab->aCount[iDim] = pPlan->aDim[iDim];
        }
        return 1;
    }
    if (pPlan->next >= pPlan->nElem) return 0;

    parity_unravel(pPlan->rank, pPlan->aDim, pPlan->next, aIndex);
    nLeft = pPlan->aDim[d] - aIndex[d];
    nAlong = pPlan->nStep < nLeft ? pPlan->nStep : nLeft;
    for (iDim = 0; iDim < pPlan->rank; iDim++) {
        if (iDim < d) {
            pSlab->aStart[iDim] = aIndex[iDim];
            pSlab->aCount[iDim] = 1;
        } else if (iDim == d) {
            pSlab->aStart[iDim] = aIndex[iDim];
            pSlab->aCount[iDim] = nAlong;
        } else {
            pSlab->aStart[iDim] = 0;
            pSlab->aCount[iDim] = pPlan->aDim[iDim];
        }
    }
    pSlab->first = pPlan->next;
    pSlab->n = nAlong * pPlan->nInner;
    pPlan->next += pSlab->n;
    return 1;
}
