/*
 * operand.c - loading a captured tensor whole, decoded to binary64, as an op operand
 * (ops.h). The differ's semantic judgement and the fuzzer's case reader share it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tolerance/ops.h"
#include "formats/alloc.h"

int parity_operand_load(parity_capture *pCap, size_t iTensor, parity_operand *pOp,
                        char *zErr, size_t nErr)
{
    const parity_tensor_info *pT = parity_capture_tensor(pCap, iTensor);
    parity_tensor_reader *pRd = NULL;
    parity_slab_plan plan;
    parity_slab slab;
    size_t nSize;
    unsigned char *pBuf = NULL;
    const uint64_t nSlabElem = 1u << 20;

    memset(pOp, 0, sizeof *pOp);
    if (!pT || pT->zError) {
        snprintf(zErr, nErr, "%s: not usable", pT ? pT->zPath : "?");
        return -1;
    }
    nSize = parity_dtype_size(pT->dtype);
    pOp->zName = pT->zPath;
    pOp->dtype = pT->dtype;
    pOp->rank = pT->rank;
    memcpy(pOp->aDim, pT->aDim, sizeof pOp->aDim);
    pOp->nElem = pT->nElem;
    pOp->aValue = parity_malloc((pT->nElem ? pT->nElem : 1) * sizeof(double));
    pBuf = parity_malloc(nSlabElem * nSize);
    if (!pOp->aValue || !pBuf) {
        snprintf(zErr, nErr, "%s: out of memory loading the operand", pT->zPath);
        goto fail;
    }
    if (parity_tensor_reader_open(pCap, iTensor, &pRd, zErr, nErr) != 0) goto fail;
    parity_slab_plan_init(&plan, pT->rank, pT->aDim, nSlabElem, 1);
    while (parity_slab_next(&plan, &slab)) {
        if (parity_tensor_read(pRd, &slab, pBuf, zErr, nErr) != 0) goto fail;
        parity_decode(pT->dtype, pBuf, pOp->aValue + slab.first, slab.n);
    }
    parity_tensor_reader_close(pRd);
    free(pBuf);
    return 0;
fail:
    parity_tensor_reader_close(pRd);
    free(pBuf);
    parity_operand_free(pOp);
    return -1;
}

void parity_operand_free(parity_operand *pOp)
{
    free(pOp->aValue);
    memset(pOp, 0, sizeof *pOp);
}
