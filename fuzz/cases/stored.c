/*
 * stored.c - one op application read back from a capture pair, and crops of it: the
 * material the minimizer shrinks when it replays stored tensors (an investigation's local
 * cause) instead of expanding a spec.
 *
 * What may be cropped. A crop keeps a window of some output dims and the matching window
 * of every input dim that output dim reads one index of ("follows"); every other dim stays
 * whole. That is exact only along dims where output element i depends on input index i
 * alone: the rows of a row-wise op, the kept dims of a reduction, M and N of a product,
 * the query rows of attention, the batch and channels of a convolution or a pool. A
 * reduced dim, K, a window or a causal mask's rows are never cropped, since a smaller one
 * would be another computation. The rule per family is crop_axes() below; the oracle
 * judges every crop afresh with the registry, and parity_stored_check_crop compares the
 * crop's reference with the whole op's at the same elements, so a wrong rule shows as an
 * error rather than a repro of something else.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/cases/cases.h"
#include "formats/alloc.h"
#include "tolerance/mpref.h"
#include "tolerance/contract.h"
#include "tolerance/tolfile.h"

/* Operands and outputs a stored op may hold in memory, in binary64 values (512 MiB): a
 * larger op is refused with its size rather than paged through. */
#define STORED_MAX_VALUES (1ull << 26)

/* Input i follows output axis d when its dims are right-aligned with the output's (torch's
 * broadcast rule) and it is not broadcast along d: the family rule of elementwise ops and
 * of the batch dims of products and attention. */
static int follow_right(const parity_case *pC, size_t i, int d)
{
    const parity_operand *pIn = &pC->aIn[i];
    int e = d - (pC->outRank - pIn->rank);
    if (e < 0 || e >= pIn->rank || pIn->aDim[e] != pC->aOutDim[d]) return -1;
    return e;
}

static void add_axis(const parity_case *pC, parity_crop_axis *aAxis, int *pnAxis, int d,
                     const int *aiIn)
{
    parity_crop_axis *pA;
    size_t i;
    int any = 0;
    for (i = 0; i < pC->nIn; i++) any |= aiIn[i] >= 0;
    if (!any || pC->aOutDim[d] < 2) return;   /* nothing to win along it */
    pA = &aAxis[(*pnAxis)++];
    pA->outAxis = d;
    for (i = 0; i < PARITY_CASE_MAX_OPERANDS; i++) pA->aInAxis[i] = i < pC->nIn ? aiIn[i] : -1;
}

/* The output dims that may be cropped and the input dims that follow each (file comment);
 * returns how many, written to aAxis. */
static int crop_axes(const parity_case *pC, const parity_op_call *pCall, parity_crop_axis *aAxis)
{
    int d, aiIn[PARITY_CASE_MAX_OPERANDS], r = pC->outRank, k, nAxis = 0;
    size_t i;
    for (d = 0; d < r; d++) {
        for (i = 0; i < PARITY_CASE_MAX_OPERANDS; i++) aiIn[i] = -1;
        switch (pC->pDef->family) {
        case PARITY_FAMILY_UNARY:
        case PARITY_FAMILY_BINARY:
        case PARITY_FAMILY_WHERE:
        case PARITY_FAMILY_CAST:
            for (i = 0; i < pC->nIn; i++) aiIn[i] = follow_right(pC, i, d);
            break;
        case PARITY_FAMILY_ROWWISE:
            if (!pCall->geom.rows.rows.aRed[d]) aiIn[0] = d;
            break;
        case PARITY_FAMILY_REDUCE: {
            /* output dim d is the k-th kept input dim (keepdim: the same dim) */
            const parity_rows *pR = &pCall->geom.rows.rows;
            int e, nKept = 0;
            for (e = 0; e < pR->rank; e++) {
                if (pR->aRed[e]) continue;
                if (pCall->geom.rows.keepdim ? e == d : nKept == d) aiIn[0] = e;
                nKept++;
            }
            break;
        }
        case PARITY_FAMILY_NORM:
            if (d < r - pCall->geom.norm.nNormDims) aiIn[0] = d;
            break;
        case PARITY_FAMILY_LINEAR:
            if (d < r - 1) aiIn[0] = d;
            else aiIn[1] = 0, aiIn[2] = pC->nIn > 2 ? 0 : -1;
            break;
        case PARITY_FAMILY_MATMUL:
        case PARITY_FAMILY_BMM:
        case PARITY_FAMILY_ADDMM: {
            size_t iA = (size_t)pCall->geom.dot.iA;
            const parity_operand *pA = &pC->aIn[iA], *pB = &pC->aIn[iA + 1];
            if (pA->rank < 2 || pB->rank < 2) break;     /* 1-D sides: left whole */
            if (d == r - 2) aiIn[iA] = pA->rank - 2;
            else if (d == r - 1) aiIn[iA + 1] = pB->rank - 1;
            else aiIn[iA] = follow_right(pC, iA, d), aiIn[iA + 1] = follow_right(pC, iA + 1, d);
            if (iA > 0) aiIn[0] = follow_right(pC, 0, d);   /* the addend, broadcast */
            break;
        }
        case PARITY_FAMILY_ATTENTION:
            if (d == r - 1) break;                           /* Ev: v's columns, left whole */
            if (d == r - 2) {
                /* a causal mask is aligned to the query row's index: keep every row */
                if (pCall->geom.attention.causal) break;
                aiIn[0] = pC->aIn[0].rank - 2;
                if (pC->nIn > 3 && follow_right(pC, 3, d) >= 0) aiIn[3] = follow_right(pC, 3, d);
                break;
            }
            for (i = 0; i < pC->nIn; i++) {
                /* a batch dim every operand has or broadcasts */
                const parity_operand *pIn = &pC->aIn[i];
                int e = d - (r - pIn->rank);
                if (e < 0) continue;
                if (pIn->aDim[e] == pC->aOutDim[d]) aiIn[i] = e;
                else if (pIn->aDim[e] != 1) { for (k = 0; k < (int)pC->nIn; k++) aiIn[k] = -1; break; }
            }
            break;
        case PARITY_FAMILY_CONV2D:
            if (pCall->geom.conv.batched && d == 0) aiIn[0] = 0;
            if (d == (pCall->geom.conv.batched ? 1 : 0) && pCall->geom.conv.G == 1) {
                aiIn[1] = 0;                                   /* weight [O, C, kH, kW] */
                if (pC->nIn > 2) aiIn[2] = 0;                  /* bias [O] */
            }
            break;
        case PARITY_FAMILY_POOL:
            if (d < (pCall->geom.pool.batched ? 2 : 1)) aiIn[0] = d;
            break;
        case PARITY_FAMILY_BATCH_NORM:
            aiIn[0] = d;
            if (d == 1)
                for (i = 1; i < pC->nIn; i++) aiIn[i] = 0;     /* the per-channel operands */
            break;
        case PARITY_FAMILY_EMBEDDING:
            if (d < r - 1) aiIn[1] = d;                        /* indices */
            break;
        default:
            break;    /* data movement: an element's source index is not its own */
        }
        add_axis(pC, aAxis, &nAxis, d, aiIn);
    }
    return nAxis;
}

int parity_case_crop_axes(const parity_case *pC, parity_crop_axis *aAxis, char *zErr,
                          size_t nErr)
{
    parity_op_call call;
    int n;
    if (parity_case_op_shape(pC, &call, zErr, nErr) != 0) return -1;
    n = crop_axes(pC, &call, aAxis);
    parity_op_end(&call);
    return n;
}

/* The contract the differ reads (tolerance/contract.h). */
static int read_contract(parity_stored_op *pS, const parity_tensor_info *pE,
                         const parity_tensor_info *pC, char *zErr, size_t nErr)
{
    parity_contract k;
    char zWhy[160];
    if (parity_contract_read(pE, pC, &k, zWhy, sizeof zWhy) != 0) {
        snprintf(zErr, nErr, "%s: %s", pC->zPath, zWhy);
        return -1;
    }
    if (k.pAcc) pS->whole.accDtype = k.accDtype;
    if (k.pCompute && (pS->whole.pDef->flags & PARITY_OPF_COMPUTE_DTYPE))
        pS->whole.uOperand = k.uOperand;
    return 0;
}

/* Tensor iT of pCap, whole; a failure names the file and the tensor. */
static int load_named(parity_capture *pCap, long iT, parity_operand *pOp, char *zErr,
                      size_t nErr)
{
    char zWhy[PARITY_ERR_LEN];
    if (parity_operand_load(pCap, (size_t)iT, pOp, zWhy, sizeof zWhy) == 0) return 0;
    snprintf(zErr, nErr, "%s: %s: %s", parity_capture_filename(pCap),
             parity_capture_tensor(pCap, (size_t)iT)->zPath, zWhy);
    return -1;
}

static int load_output(parity_capture *pCap, long iT, double **paOut, char *zErr,
                       size_t nErr)
{
    parity_operand op;
    if (load_named(pCap, iT, &op, zErr, nErr) != 0) return -1;
    *paOut = op.aValue;
    return 0;
}

/* Input k of the op from pCap (the compiled capture: what the compiled kernel was given;
 * the eager capture for eager.h5 of the repro). */
static int load_input(parity_capture *pCap, const char *zName, parity_operand *pOp,
                      uint64_t *pnValues, char *zErr, size_t nErr)
{
    long iT = parity_capture_find(pCap, zName);
    const parity_tensor_info *pInfo;
    if (iT < 0) {
        snprintf(zErr, nErr, "%s lacks input %s of the op", parity_capture_filename(pCap), zName);
        return -1;
    }
    pInfo = parity_capture_tensor(pCap, (size_t)iT);
    if (pInfo->zError) {
        snprintf(zErr, nErr, "%s: %s", zName, pInfo->zError);
        return -1;
    }
    *pnValues += pInfo->nElem;
    if (*pnValues > STORED_MAX_VALUES) {
        snprintf(zErr, nErr, "the op's operands exceed %llu values: too large to replay whole",
                 (unsigned long long)STORED_MAX_VALUES);
        return -1;
    }
    return load_named(pCap, iT, pOp, zErr, nErr);
}

int parity_stored_open(const char *zEager, const char *zCompiled, const char *zTensor,
                       parity_stored_op *pS, char *zErr, size_t nErr)
{
    const parity_tensor_info *pE, *pC;
    parity_op_call call;
    uint64_t nValues;
    size_t i;
    int d;

    memset(pS, 0, sizeof *pS);
    if (parity_capture_open(zEager, &pS->pEagerCap, zErr, nErr) != 0 ||
        parity_capture_open(zCompiled, &pS->pCompiledCap, zErr, nErr) != 0)
        goto fail;
    pS->iEager = parity_capture_find(pS->pEagerCap, zTensor);
    pS->iCompiled = parity_capture_find(pS->pCompiledCap, zTensor);
    if (pS->iEager < 0 || pS->iCompiled < 0) {
        snprintf(zErr, nErr, "no tensor %s in %s", zTensor, pS->iEager < 0 ? zEager : zCompiled);
        goto fail;
    }
    pE = parity_capture_tensor(pS->pEagerCap, (size_t)pS->iEager);
    pC = parity_capture_tensor(pS->pCompiledCap, (size_t)pS->iCompiled);
    if (pE->zError || pC->zError) {
        snprintf(zErr, nErr, "%s: %s", zTensor, pE->zError ? pE->zError : pC->zError);
        goto fail;
    }
    if (!pE->zOp || !(pS->whole.pDef = parity_op_find(pE->zOp))) {
        snprintf(zErr, nErr, "%s: %s", zTensor, pE->zOp ? "its op has no model in the registry"
                                                        : "no 'op' attribute: not an op's output");
        goto fail;
    }
    if (pC->zOp && strcmp(pC->zOp, pE->zOp) != 0) {
        snprintf(zErr, nErr, "%s: eager says op %s, compiled says %s", zTensor, pE->zOp, pC->zOp);
        goto fail;
    }
    if (!parity_tensor_same_shape(pE, pC) || pE->dtype != pC->dtype) {
        snprintf(zErr, nErr, "%s: eager and compiled differ in shape or dtype", zTensor);
        goto fail;
    }
    /* the compiled kernel's inputs: those the compiled tensor names, else eager's names */
    if (pC->nInput > 0 && pC->nInput != pE->nInput) {
        snprintf(zErr, nErr, "%s: eager names %zu inputs, compiled %zu", zTensor, pE->nInput,
                 pC->nInput);
        goto fail;
    }
    if (pE->nInput > PARITY_CASE_MAX_OPERANDS) {
        snprintf(zErr, nErr, "%s: %zu inputs (a replay takes at most %d)", zTensor,
                 pE->nInput, PARITY_CASE_MAX_OPERANDS);
        goto fail;
    }
    snprintf(pS->whole.spec.zOp, sizeof pS->whole.spec.zOp, "%s", pE->zOp);
    pS->whole.spec.dtype = pE->dtype;
    pS->whole.outDtype = pE->dtype;
    pS->whole.fromStore = 1;
    /* the op's parameters as the differ reads them: eager's record of the call (a compiled
     * capture may name only op and inputs) */
    pS->whole.aStoredAttr = pE->aAttr;
    pS->whole.nStoredAttr = pE->nAttr;
    if (read_contract(pS, pE, pC, zErr, nErr) != 0) goto fail;
    nValues = 2 * pE->nElem;
    for (i = 0; i < pE->nInput; i++) {
        const char *zIn = pC->nInput ? pC->azInput[i] : pE->azInput[i];
        if (load_input(pS->pCompiledCap, zIn, &pS->whole.aIn[i], &nValues, zErr, nErr) != 0)
            goto fail;
        pS->whole.nIn++;
        /* eager's own input where eager has it, with the same shape */
        if (parity_capture_find(pS->pEagerCap, pE->azInput[i]) >= 0 &&
            load_input(pS->pEagerCap, pE->azInput[i], &pS->aEagerIn[i], &nValues, zErr,
                       nErr) == 0 &&
            pS->aEagerIn[i].rank == pS->whole.aIn[i].rank &&
            memcmp(pS->aEagerIn[i].aDim, pS->whole.aIn[i].aDim,
                   (size_t)pS->whole.aIn[i].rank * sizeof(uint64_t)) == 0)
            continue;
        parity_operand_free(&pS->aEagerIn[i]);
        pS->aEagerIn[i].aValue = NULL;
    }
    if (nValues > STORED_MAX_VALUES) {
        snprintf(zErr, nErr, "the op's operands exceed %llu values: too large to replay whole",
                 (unsigned long long)STORED_MAX_VALUES);
        goto fail;
    }
    pS->whole.outRank = pE->rank;
    for (d = 0; d < pE->rank; d++) pS->whole.aOutDim[d] = pE->aDim[d];
    pS->whole.nOut = pE->nElem;
    if (parity_case_op_shape(&pS->whole, &call, zErr, nErr) != 0) goto fail;
    pS->whole.opCost = parity_op_cost(&call);
    pS->nAxis = crop_axes(&pS->whole, &call, pS->aAxis);
    parity_op_end(&call);
    if (load_output(pS->pEagerCap, pS->iEager, &pS->aEagerOut, zErr, nErr) != 0 ||
        load_output(pS->pCompiledCap, pS->iCompiled, &pS->aCompiledOut, zErr, nErr) != 0)
        goto fail;
    return 0;
fail:
    parity_stored_close(pS);
    return -1;
}

void parity_stored_close(parity_stored_op *pS)
{
    size_t i;
    for (i = 0; i < PARITY_CASE_MAX_OPERANDS; i++) {
        free(pS->whole.aIn[i].aValue);
        free(pS->aEagerIn[i].aValue);
    }
    free(pS->aEagerOut);
    free(pS->aCompiledOut);
    if (pS->pEagerCap) parity_capture_close(pS->pEagerCap);
    if (pS->pCompiledCap) parity_capture_close(pS->pCompiledCap);
    memset(pS, 0, sizeof *pS);
}

/* aDst = the window aLo[d] .. aLo[d] + aLen[d] - 1 of every dim of a row-major tensor. */
static void gather(const double *aSrc, int rank, const uint64_t *aDim, const uint64_t *aLo,
                   const uint64_t *aLen, double *aDst)
{
    uint64_t aIdx[PARITY_MAX_RANK] = { 0 }, n = parity_shape_elements(rank, aLen), k;
    int d;
    for (k = 0; k < n; k++) {
        uint64_t off = 0;
        for (d = 0; d < rank; d++) off = off * aDim[d] + aLo[d] + aIdx[d];
        aDst[k] = aSrc[off];
        for (d = rank - 1; d >= 0; d--) {
            if (++aIdx[d] < aLen[d]) break;
            aIdx[d] = 0;
        }
    }
}

/* The window of every dim of operand i of pC (input i, or the output for i == -1), from
 * the windows (aLo, aLen) of its crop axes. */
static void windows_of(const parity_case *pC, const parity_crop_axis *aAxis, int nAxis, int i,
                       const uint64_t *aLo, const uint64_t *aLen, const parity_operand *pIn,
                       uint64_t *aInLo, uint64_t *aInLen)
{
    int d, k, rank = i < 0 ? pC->outRank : pIn->rank;
    for (d = 0; d < rank; d++) {
        aInLo[d] = 0;
        aInLen[d] = i < 0 ? pC->aOutDim[d] : pIn->aDim[d];
    }
    for (k = 0; k < nAxis; k++) {
        int e = i < 0 ? aAxis[k].outAxis : aAxis[k].aInAxis[i];
        if (e < 0) continue;
        aInLo[e] = aLo[k];
        aInLen[e] = aLen[k];
    }
}

int parity_case_crop_input(const parity_case *pC, const parity_crop_axis *aAxis, int nAxis,
                           int i, const parity_operand *pSrc, const uint64_t *aLo,
                           const uint64_t *aLen, parity_operand *pDst)
{
    uint64_t aInLo[PARITY_MAX_RANK], aInLen[PARITY_MAX_RANK];
    windows_of(pC, aAxis, nAxis, i, aLo, aLen, pSrc, aInLo, aInLen);
    *pDst = *pSrc;
    memcpy(pDst->aDim, aInLen, sizeof pDst->aDim);
    pDst->nElem = parity_shape_elements(pSrc->rank, aInLen);
    pDst->aValue = parity_malloc((pDst->nElem ? pDst->nElem : 1) * sizeof *pDst->aValue);
    if (!pDst->aValue) return -1;
    gather(pSrc->aValue, pSrc->rank, pSrc->aDim, aInLo, aInLen, pDst->aValue);
    return 0;
}

void parity_stored_crop_free(parity_stored_crop *pCrop)
{
    size_t i;
    for (i = 0; i < PARITY_CASE_MAX_OPERANDS; i++) {
        free(pCrop->c.aIn[i].aValue);
        free(pCrop->aEagerIn[i].aValue);
    }
    free(pCrop->aEager);
    free(pCrop->aCompiled);
    memset(pCrop, 0, sizeof *pCrop);
}

int parity_stored_crop_make(const parity_stored_op *pS, const uint64_t *aLo,
                            const uint64_t *aLen, parity_stored_crop *pCrop, char *zErr,
                            size_t nErr)
{
    uint64_t aOutLo[PARITY_MAX_RANK], aOutLen[PARITY_MAX_RANK];
    parity_op_call call;
    size_t i;
    int k, d;
    memset(pCrop, 0, sizeof *pCrop);
    for (k = 0; k < pS->nAxis; k++) {
        uint64_t full = pS->whole.aOutDim[pS->aAxis[k].outAxis];
        if (aLen[k] < 1 || aLo[k] > full || aLen[k] > full - aLo[k]) {
            snprintf(zErr, nErr, "window %d [%llu, +%llu) outside the output", k,
                     (unsigned long long)aLo[k], (unsigned long long)aLen[k]);
            return -1;
        }
    }
    pCrop->c = pS->whole;
    for (i = 0; i < PARITY_CASE_MAX_OPERANDS; i++) pCrop->c.aIn[i].aValue = NULL;
    for (i = 0; i < pS->whole.nIn; i++) {
        if (parity_case_crop_input(&pS->whole, pS->aAxis, pS->nAxis, (int)i, &pS->whole.aIn[i],
                                   aLo, aLen, &pCrop->c.aIn[i]) != 0 ||
            (pS->aEagerIn[i].aValue &&
             parity_case_crop_input(&pS->whole, pS->aAxis, pS->nAxis, (int)i,
                                    &pS->aEagerIn[i], aLo, aLen, &pCrop->aEagerIn[i]) != 0))
            goto nomem;
    }
    windows_of(&pS->whole, pS->aAxis, pS->nAxis, -1, aLo, aLen, NULL, aOutLo, aOutLen);
    for (d = 0; d < pS->whole.outRank; d++) pCrop->c.aOutDim[d] = aOutLen[d];
    pCrop->c.nOut = parity_shape_elements(pS->whole.outRank, aOutLen);
    memcpy(pCrop->aLo, aLo, (size_t)pS->nAxis * sizeof *aLo);
    memcpy(pCrop->aLen, aLen, (size_t)pS->nAxis * sizeof *aLen);
    pCrop->aEager = parity_malloc((pCrop->c.nOut ? pCrop->c.nOut : 1) * sizeof(double));
    pCrop->aCompiled = parity_malloc((pCrop->c.nOut ? pCrop->c.nOut : 1) * sizeof(double));
    if (!pCrop->aEager || !pCrop->aCompiled) goto nomem;
    gather(pS->aEagerOut, pS->whole.outRank, pS->whole.aOutDim, aOutLo, aOutLen, pCrop->aEager);
    gather(pS->aCompiledOut, pS->whole.outRank, pS->whole.aOutDim, aOutLo, aOutLen,
           pCrop->aCompiled);
    /* the registry must agree that the cropped operands make the cropped output */
    if (parity_case_op_shape(&pCrop->c, &call, zErr, nErr) != 0) {
        parity_stored_crop_free(pCrop);
        return -1;
    }
    pCrop->c.opCost = parity_op_cost(&call);
    parity_op_end(&call);
    return 0;
nomem:
    parity_stored_crop_free(pCrop);
    snprintf(zErr, nErr, "out of memory for a crop");
    return -1;
}

int parity_stored_check_crop(const parity_stored_op *pS, const parity_stored_crop *pCrop,
                             uint64_t *pnDiffer, char *zErr, size_t nErr)
{
    uint64_t aOutLo[PARITY_MAX_RANK], aOutLen[PARITY_MAX_RANK], aIdx[PARITY_MAX_RANK] = { 0 };
    parity_op_call whole, crop;
    mpfr_t refWhole, refCrop;
    uint64_t k;
    int d, rc = 0;
    double bound;
    *pnDiffer = 0;
    windows_of(&pS->whole, pS->aAxis, pS->nAxis, -1, pCrop->aLo, pCrop->aLen, NULL, aOutLo,
               aOutLen);
    if (parity_case_op_begin(&pS->whole, &whole, zErr, nErr) != 0) return -1;
    if (parity_case_op_begin(&pCrop->c, &crop, zErr, nErr) != 0) {
        parity_op_end(&whole);
        return -1;
    }
    mpfr_init2(refWhole, PARITY_REF_PREC);
    mpfr_init2(refCrop, PARITY_REF_PREC);
    for (k = 0; k < pCrop->c.nOut && rc == 0; k++) {
        uint64_t src = 0;
        for (d = 0; d < pS->whole.outRank; d++)
            src = src * pS->whole.aOutDim[d] + aOutLo[d] + aIdx[d];
        whole.probBound = crop.probBound = NAN;
        whole.overflowPossible = crop.overflowPossible = 0;
        whole.nonfiniteAny = crop.nonfiniteAny = 0;
        if (whole.pDef->xElement(&whole, src, refWhole, &bound) != 0 ||
            crop.pDef->xElement(&crop, k, refCrop, &bound) != 0) {
            snprintf(zErr, nErr, "the reference failed at element %llu", (unsigned long long)k);
            rc = -1;
            break;
        }
        if (mpfr_nan_p(refWhole) || mpfr_nan_p(refCrop)) {
            if (!mpfr_nan_p(refWhole) || !mpfr_nan_p(refCrop)) (*pnDiffer)++;
        } else if (mpfr_cmp(refWhole, refCrop) != 0) {
            (*pnDiffer)++;
        }
        for (d = pS->whole.outRank - 1; d >= 0; d--) {
            if (++aIdx[d] < aOutLen[d]) break;
            aIdx[d] = 0;
        }
    }
    mpfr_clear(refWhole);
    mpfr_clear(refCrop);
    parity_op_end(&crop);
    parity_op_end(&whole);
    return rc;
}
