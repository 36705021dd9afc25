/*
 * rows.c - rows of a tensor along some of its dims (see rows.h).
 */
#include <stdio.h>
#include <string.h>
#include "tolerance/rows.h"

void parity_rows_init(parity_rows *pR, const parity_operand *pX, const unsigned char *aReduce)
{
    uint64_t aStride[PARITY_MAX_RANK], stride = 1;
    int d;

    memset(pR, 0, sizeof *pR);
    pR->rank = pX->rank;
    for (d = pX->rank - 1; d >= 0; d--) {
        aStride[d] = stride;
        stride *= pX->aDim[d];
    }
    pR->n = 1;
    pR->nRow = 1;
    for (d = 0; d < pX->rank; d++) {
        pR->aDim[d] = pX->aDim[d];
        pR->aRed[d] = aReduce[d] ? 1 : 0;
        if (aReduce[d]) {
            pR->aRedDim[pR->nRed] = pX->aDim[d];
            pR->aRedStride[pR->nRed++] = aStride[d];
            pR->n *= pX->aDim[d];
        } else {
            pR->aKeptDim[pR->nKept] = pX->aDim[d];
            pR->aKeptStride[pR->nKept++] = aStride[d];
            pR->nRow *= pX->aDim[d];
        }
    }
    /* An empty row still leaves its rows (a reduction over a size-0 dim has outputs). */
}

int parity_rows_parse_dim(const char *zOp, const parity_operand *pX, const parity_attr *aAttr,
                          size_t nAttr, const char *zAttr, int allowList, int allIfAbsent,
                          int64_t defDim, unsigned char *aReduce, char *zErr, size_t nErr)
{
    int64_t aArg[PARITY_MAX_RANK];
    size_t nArg = 0, i;
    int found, d;
    char zA[256];

    memset(aReduce, 0, PARITY_MAX_RANK);
    if (parity_param_ints(aAttr, nAttr, zAttr, aArg, PARITY_MAX_RANK, &nArg, &found, zErr,
                          nErr) != 0)
        return -1;
    if (found && !allowList && nArg != 1) {
        snprintf(zErr, nErr, "%s: attribute '%s' must be one integer", zOp, zAttr);
        return -1;
    }
    if (!found || nArg == 0) {
        if (allIfAbsent) {
            for (d = 0; d < pX->rank; d++) aReduce[d] = 1;
            return 0;
        }
        aArg[0] = defDim;
        nArg = 1;
    }
    for (i = 0; i < nArg; i++) {
        int iDim = parity_wrap_dim(aArg[i], pX->rank);
        if (iDim < 0) {
            snprintf(zErr, nErr, "%s: dim %lld out of range for input %s of rank %d "
                     "(expected %d to %d)", zOp, (long long)aArg[i],
                     parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA), pX->rank,
                     pX->rank ? -pX->rank : -1, pX->rank ? pX->rank - 1 : 0);
            return -1;
        }
        if (pX->rank == 0) continue;   /* dim 0 / -1 of a scalar: a row of one */
        if (aReduce[iDim]) {
            snprintf(zErr, nErr, "%s: dim %d appears more than once in '%s'", zOp, iDim, zAttr);
            return -1;
        }
        aReduce[iDim] = 1;
    }
    return 0;
}

int parity_rows_parse_keepdim(const char *zOp, const parity_attr *aAttr, size_t nAttr,
                              int *pKeepdim, char *zErr, size_t nErr)
{
    int64_t keepdim = 0;
    if (parity_param_int(aAttr, nAttr, "keepdim", &keepdim, NULL, zErr, nErr) != 0) return -1;
    if (keepdim != 0 && keepdim != 1) {
        snprintf(zErr, nErr, "%s: keepdim must be 0 or 1, got %lld", zOp, (long long)keepdim);
        return -1;
    }
    *pKeepdim = (int)keepdim;
    return 0;
}

int parity_rows_check_reduced(const char *zOp, const parity_rows *pR, int keepdim,
                              parity_op_call *pCall, char *zErr, size_t nErr)
{
    uint64_t aWant[PARITY_MAX_RANK];
    int nWant = 0, d;
    char zA[256], zB[256], zC[256];

    for (d = 0; d < pR->rank; d++) {
        if (!pR->aRed[d]) aWant[nWant++] = pR->aDim[d];
        else if (keepdim) aWant[nWant++] = 1;
    }
    if (!parity_op_take_out(pCall, nWant, aWant)) {
        snprintf(zErr, nErr, "%s: input %s reduced (keepdim %d) gives shape %s, output has %s",
                 zOp, parity_shape_str(pR->rank, pR->aDim, zA, sizeof zA), keepdim,
                 parity_shape_str(nWant, aWant, zB, sizeof zB),
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zC, sizeof zC));
        return -1;
    }
    return 0;
}

int parity_rows_check_same(const char *zOp, const parity_operand *pX,
                           parity_op_call *pCall, char *zErr, size_t nErr)
{
    char zA[256], zB[256];
    if (!parity_op_take_out(pCall, pX->rank, pX->aDim)) {
        snprintf(zErr, nErr, "%s: input shape %s differs from output shape %s", zOp,
                 parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA),
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zB, sizeof zB));
        return -1;
    }
    return 0;
}

int parity_rows_parse_norm(const parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                           parity_norm_geometry *pG, unsigned char *aReduce, char *zErr,
                           size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    const char *zOp = pCall->pDef->zName;
    int64_t aNorm[PARITY_MAX_RANK];
    uint64_t aGot[PARITY_MAX_RANK];
    size_t nNorm = 0, i;
    int found, d;
    char zA[256], zB[256];

    memset(aReduce, 0, PARITY_MAX_RANK);
    if (parity_param_ints(aAttr, nAttr, "normalized_shape", aNorm, PARITY_MAX_RANK, &nNorm,
                          &found, zErr, nErr) != 0)
        return -1;
    if (!found) {
        /* torch takes normalized_shape as an argument; captures without it get the
         * weight's shape, else the last dim */
        if (pCall->nIn >= 2) {
            nNorm = (size_t)pCall->aIn[1].rank;
            for (i = 0; i < nNorm; i++) aNorm[i] = (int64_t)pCall->aIn[1].aDim[i];
        } else if (pX->rank > 0) {
            nNorm = 1;
            aNorm[0] = (int64_t)pX->aDim[pX->rank - 1];
        }
    }
    if (nNorm == 0 || (int)nNorm > pX->rank) {
        snprintf(zErr, nErr, "%s: normalized_shape must name 1 to %d trailing dims of input "
                 "%s, got %zu", zOp, pX->rank, parity_shape_str(pX->rank, pX->aDim, zA,
                 sizeof zA), nNorm);
        return -1;
    }
    pG->D = 1;
    for (i = 0; i < nNorm; i++) {
        d = pX->rank - (int)nNorm + (int)i;
        aGot[i] = aNorm[i] < 0 ? 0 : (uint64_t)aNorm[i];
        if (aNorm[i] < 0 || aGot[i] != pX->aDim[d]) {
            snprintf(zErr, nErr, "%s: normalized_shape %s does not match the trailing dims of "
                     "input %s", zOp, parity_shape_str((int)nNorm, aGot, zB, sizeof zB),
                     parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA));
            return -1;
        }
        aReduce[d] = 1;
        pG->D *= pX->aDim[d];
    }
    for (i = 1; i < pCall->nIn; i++) {
        const parity_operand *pA = &pCall->aIn[i];
        if (!parity_same_shape(pA->rank, pA->aDim, (int)nNorm, aGot)) {
            snprintf(zErr, nErr, "%s: %s has shape %s, normalized_shape is %s", zOp,
                     i == 1 ? "weight" : "bias", parity_shape_str(pA->rank, pA->aDim, zA,
                     sizeof zA), parity_shape_str((int)nNorm, aGot, zB, sizeof zB));
            return -1;
        }
    }
    pG->nNormDims = (int)nNorm;
    pG->nRow = pG->D ? pX->nElem / pG->D : 0;
    pG->hasWeight = pCall->nIn >= 2;
    pG->hasBias = pCall->nIn >= 3;
    return 0;
}

uint64_t parity_rows_offset(const parity_rows *pR, uint64_t iRow, uint64_t k)
{
    uint64_t off = 0;
    int d;
    for (d = pR->nKept - 1; d >= 0; d--) {
        off += (iRow % pR->aKeptDim[d]) * pR->aKeptStride[d];
        iRow /= pR->aKeptDim[d];
    }
    for (d = pR->nRed - 1; d >= 0 && pR->n > 0; d--) {   /* an empty row has no element k */
        off += (k % pR->aRedDim[d]) * pR->aRedStride[d];
        k /= pR->aRedDim[d];
    }
    return off;
}

void parity_rows_gather(const parity_rows *pR, const double *x, uint64_t iRow, double *aOut)
{
    uint64_t aIdx[PARITY_MAX_RANK] = { 0 }, k, off = parity_rows_offset(pR, iRow, 0);
    int d;
    for (k = 0; k < pR->n; k++) {
        aOut[k] = x[off];
        for (d = pR->nRed - 1; d >= 0; d--) {   /* odometer over the reduced dims */
            off += pR->aRedStride[d];
            if (++aIdx[d] < pR->aRedDim[d]) break;
            off -= aIdx[d] * pR->aRedStride[d];
            aIdx[d] = 0;
        }
    }
}

void parity_rows_locate(const parity_rows *pR, uint64_t linear, uint64_t *piRow, uint64_t *pk)
{
    uint64_t iRow = 0, k = 0, mulRow = 1, mulK = 1;
    int d;
    for (d = pR->rank - 1; d >= 0; d--) {
        uint64_t idx = linear % pR->aDim[d];
        linear /= pR->aDim[d];
        if (pR->aRed[d]) {
            k += idx * mulK;
            mulK *= pR->aDim[d];
        } else {
            iRow += idx * mulRow;
            mulRow *= pR->aDim[d];
        }
    }
    *piRow = iRow;
    *pk = k;
}
