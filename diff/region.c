/*
 * region.c - the fused region behind a compiled tensor whose op inputs were fused away,
 * and the propagation of reference and error radius through it (region_internal.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "diff/region_internal.h"
#include "tolerance/contract.h"

typedef struct {
    parity_capture *pEagerCap, *pCompCap;
    size_t iTarget;
    parity_region *pReg;
    char *zWhy;
    size_t nWhy;
} region_builder;

/* Does the compiled capture hold eager tensor pI under its name, usable, same shape? */
static int held_by_compiled(parity_capture *pCompCap, const parity_tensor_info *pI)
{
    long iC = parity_capture_find(pCompCap, pI->zPath);
    const parity_tensor_info *pC = iC >= 0 ? parity_capture_tensor(pCompCap, (size_t)iC) : NULL;
    return pC && !pC->zError && parity_tensor_same_shape(pI, pC);
}

/* Adds eager tensor iT to the region (its inputs first) or as an input; *pRef is what a
 * node's operand list calls it. Returns 0, or -1 with the builder's zWhy. */
static int region_add(region_builder *pB, size_t iT, int *pRef)
{
    parity_region *pReg = pB->pReg;
    const parity_tensor_info *pI = parity_capture_tensor(pB->pEagerCap, iT);
    parity_graph_node *pN;
    const parity_op_def *pDef;
    parity_contract k;
    char zErr[160];
    size_t i;

    for (i = 0; i < pReg->nNode; i++)
        if (pReg->aNodeTensor[i] == iT) { *pRef = (int)i; return 0; }
    for (i = 0; i < pReg->nInput; i++)
        if (pReg->aInputTensor[i] == iT) { *pRef = PARITY_GRAPH_INPUT((int)i); return 0; }
    if (pI->zError) {
        snprintf(pB->zWhy, pB->nWhy, "%s is unusable in the eager capture", pI->zPath);
        return -1;
    }
    /* A fused-away integer or bool intermediate (position ids, a mask, an index) enters as
     * an input with eager's values: integer ops are exact, so a correct compiled kernel
     * computed the same integers from the same operands, and the registry's float models
     * cannot carry an integer node. (An integer a float comparison made, fused away, is
     * taken as eager's: a flipped comparison there is outside what the region judges.) */
    if (iT != pB->iTarget && (!pI->zOp || pI->nInput == 0 || !parity_dtype_is_float(pI->dtype) ||
                              held_by_compiled(pB->pCompCap, pI))) {
        if (pReg->nInput == REGION_MAX_INPUTS) {
            snprintf(pB->zWhy, pB->nWhy, "the fused region has more than %d inputs",
                     REGION_MAX_INPUTS);
            return -1;
        }
        pReg->aInputTensor[pReg->nInput] = iT;
        *pRef = PARITY_GRAPH_INPUT((int)pReg->nInput++);
        return 0;
    }
    if (!(pDef = parity_op_find(pI->zOp))) {
        snprintf(pB->zWhy, pB->nWhy, "op '%s' of fused %s has no model", pI->zOp, pI->zPath);
        return -1;
    }
    if (pI->nInput > PARITY_GRAPH_MAX_IN) {
        snprintf(pB->zWhy, pB->nWhy, "fused %s has more than %d inputs", pI->zPath,
                 PARITY_GRAPH_MAX_IN);
        return -1;
    }
    if (parity_contract_read(pI, pI, &k, zErr, sizeof zErr) != 0) {
        snprintf(pB->zWhy, pB->nWhy, "fused %s: %s", pI->zPath, zErr);
        return -1;
    }
    {
        int aRef[PARITY_GRAPH_MAX_IN];
        for (i = 0; i < pI->nInput; i++) {
            long iIn = parity_capture_find(pB->pEagerCap, pI->azInput[i]);
            if (iIn < 0) {
                snprintf(pB->zWhy, pB->nWhy, "input %s of fused %s is not captured",
                         pI->azInput[i], pI->zPath);
                return -1;
            }
            if ((size_t)iIn == pB->iTarget) {
                snprintf(pB->zWhy, pB->nWhy, "%s is its own input", pI->zPath);
                return -1;
            }
            if (region_add(pB, (size_t)iIn, &aRef[i]) != 0) return -1;
        }
        for (i = 0; i < pI->nInput; i++)
            if (aRef[i] >= 0 && !pDef->xPropagate) {
                /* refused before any reference is computed: the region would fail there */
                snprintf(pB->zWhy, pB->nWhy, "op '%s' of %s cannot carry the error of the fused "
                         "ops before it (no propagation for it yet)", pDef->zName, pI->zPath);
                return -1;
            }
        if (pReg->nNode == REGION_MAX_NODES) {
            snprintf(pB->zWhy, pB->nWhy, "the fused region has more than %d ops",
                     REGION_MAX_NODES);
            return -1;
        }
        pN = &pReg->aNode[pReg->nNode];
        memset(pN, 0, sizeof *pN);
        pN->pDef = pDef;
        pN->nIn = pI->nInput;
        memcpy(pN->aIn, aRef, pI->nInput * sizeof aRef[0]);
    }
    pN->outDtype = pI->dtype;
    pN->accDtype = k.pAcc ? k.accDtype : PARITY_DT_INVALID;
    pN->uOperand = k.pCompute && (pDef->flags & PARITY_OPF_COMPUTE_DTYPE) ? k.uOperand : 0.0;
    pN->outRank = pI->rank;
    memcpy(pN->aOutDim, pI->aDim, sizeof pN->aOutDim);
    pN->aAttr = pI->aAttr;
    pN->nAttr = pI->nAttr;
    pReg->aNodeTensor[pReg->nNode] = iT;
    pReg->nElem += pI->nElem;
    *pRef = (int)pReg->nNode++;
    return 0;
}

int parity_region_build(parity_capture *pEagerCap, parity_capture *pCompCap, size_t iE,
                        parity_region *pReg, char *zWhy, size_t nWhy)
{
    region_builder b = { pEagerCap, pCompCap, iE, pReg, zWhy, nWhy };
    int ref;
    memset(pReg, 0, sizeof *pReg);
    return region_add(&b, iE, &ref);
}

int parity_region_propagate(const parity_region *pReg, parity_operand_cache *pCache,
                            parity_capture *pEagerCap, parity_capture *pCap,
                            parity_graph_value *aOut, int *pSame, int (*xBeat)(void *),
                            void *pBeatCtx, char *zErr, size_t nErr)
{
    parity_operand aIn[REGION_MAX_INPUTS] = { { 0 } };
    size_t i, nLoaded = 0;
    int rc = 0, same = 1;

    for (i = 0; i < pReg->nInput && rc == 0; i++) {
        const parity_tensor_info *pI = parity_capture_tensor(pEagerCap, pReg->aInputTensor[i]);
        long iC = pCap ? parity_capture_find(pCap, pI->zPath) : -1;
        int fromCap = iC >= 0 && held_by_compiled(pCap, pI);
        if (parity_operand_cache_load(pCache, fromCap ? pCap : pEagerCap,
                                      fromCap ? (size_t)iC : pReg->aInputTensor[i], &aIn[i],
                                      zErr, nErr) != 0) {
            rc = -1;
            break;
        }
        nLoaded++;
        if (fromCap && same && pSame) {
            parity_operand e;
            uint64_t k;
            if (parity_operand_cache_load(pCache, pEagerCap, pReg->aInputTensor[i], &e, zErr,
                                          nErr) != 0) {
                rc = -1;
                break;
            }
            for (k = 0; k < e.nElem && same; k++) {
                double a = e.aValue[k], c = aIn[i].aValue[k];
                same = a == c ? signbit(a) == signbit(c) : (a != a && c != c);
            }
            parity_operand_cache_release(pCache, &e);
        }
    }
    if (pSame) *pSame = rc == 0 && same;
    if (rc == 0 && !(pSame && *pSame)) {
        int r = parity_graph_propagate_beat(pReg->aNode, pReg->nNode, aIn, pReg->nInput, aOut,
                                            xBeat, pBeatCtx, zErr, nErr);
        rc = r == -2 ? -1 : r != 0 ? 1 : 0;
    }
    for (i = 0; i < nLoaded; i++) parity_operand_cache_release(pCache, &aIn[i]);
    return rc;
}
