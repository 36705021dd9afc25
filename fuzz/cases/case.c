/*
 * case.c - expanding a case spec into operands, parameters and values; the bounds that
 * keep cases cheap; the registry call the oracle judges with.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/cases/cases.h"
#include "formats/alloc.h"

static void free_params(parity_case *pCase)
{
    size_t i, k;
    for (i = 0; i < pCase->nParam; i++) {
        parity_attr *pA = &pCase->aParam[i];
        free(pA->zName);
        free(pA->aInt);
        free(pA->aFloat);
        if (pA->azStr) {
            for (k = 0; k < pA->n; k++) free(pA->azStr[k]);
            free(pA->azStr);
        }
    }
    pCase->nParam = 0;
}

void parity_case_free(parity_case *pCase)
{
    size_t i;
    if (!pCase) return;
    free_params(pCase);
    for (i = 0; i < pCase->nIn; i++) {
        free(pCase->aIn[i].aValue);
        pCase->aIn[i].aValue = NULL;
    }
    pCase->nIn = 0;
}

uint64_t parity_case_work(const parity_case *pCase)
{
    double outWork = (double)pCase->nOut * pCase->opCost;
    uint64_t work = 0;
    size_t i;
    for (i = 0; i < pCase->nIn; i++) work += pCase->aIn[i].nElem;
    /* llround: the cost of attention is a ratio, exact to far below one term here */
    if (!(outWork < 1e18)) return UINT64_MAX;
    return work + (uint64_t)llround(outWork);
}

/* The registry works out the output shape of the laid-out case (and refuses an illegal
 * one with its reason) and its cost per output element. */
static int case_settle(parity_case *pCase, char *zErr, size_t nErr)
{
    parity_op_call call;
    int d;
    if (parity_op_begin_shape(&call, pCase->pDef, pCase->aIn, pCase->nIn, pCase->outDtype,
                              PARITY_OUT_INFER, NULL, PARITY_DT_INVALID, pCase->aParam,
                              pCase->nParam, zErr, nErr) != 0)
        return -1;
    pCase->outRank = call.outRank;
    pCase->nOut = call.nOut;
    for (d = 0; d < call.outRank; d++) pCase->aOutDim[d] = call.aOutDim[d];
    pCase->opCost = parity_op_cost(&call);
    parity_op_end(&call);
    return 0;
}

int parity_case_layout(const parity_case_spec *pSpec, parity_case *pCase, char *zErr,
                       size_t nErr)
{
    size_t i;
    int d;
    memset(pCase, 0, sizeof *pCase);
    pCase->spec = *pSpec;
    pCase->spec.zOp[sizeof pCase->spec.zOp - 1] = '\0';
    pCase->pDef = parity_op_find(pCase->spec.zOp);
    if (!pCase->pDef) {
        snprintf(zErr, nErr, "op '%s' is not in the registry", pCase->spec.zOp);
        return -1;
    }
    if (!parity_dtype_is_float(pSpec->dtype)) {
        snprintf(zErr, nErr, "case dtype %s is not a float type", parity_dtype_name(pSpec->dtype));
        return -1;
    }
    if (pSpec->nDim < 0 || pSpec->nDim > PARITY_CASE_MAX_DIMS) {
        snprintf(zErr, nErr, "case has %d dims (at most %d)", pSpec->nDim, PARITY_CASE_MAX_DIMS);
        return -1;
    }
    for (d = 0; d < pSpec->nDim; d++) {
        if (pSpec->aDim[d] > PARITY_CASE_MAX_ELEMS) {
            snprintf(zErr, nErr, "dim %d is %llu (at most %u)", d,
                     (unsigned long long)pSpec->aDim[d], PARITY_CASE_MAX_ELEMS);
            return -1;
        }
    }
    for (i = 0; i < PARITY_CASE_MAX_IN; i++) {
        if (pSpec->aRecipe[i].kind >= PARITY_VAL_COUNT) {
            snprintf(zErr, nErr, "input %zu: unknown value recipe %u", i,
                     (unsigned)pSpec->aRecipe[i].kind);
            return -1;
        }
    }
    if (parity_layout_apply(&pCase->spec, pCase, zErr, nErr) != 0 ||
        case_settle(pCase, zErr, nErr) != 0) {
        parity_case_free(pCase);
        return -1;
    }
    /* products of dims may exceed the bound even when each dim is within it */
    for (i = 0; i < pCase->nIn; i++) {
        if (pCase->aIn[i].nElem > PARITY_CASE_MAX_ELEMS) break;
    }
    if (i < pCase->nIn || pCase->nOut > PARITY_CASE_MAX_ELEMS ||
        parity_case_work(pCase) > PARITY_CASE_MAX_WORK) {
        snprintf(zErr, nErr, "case exceeds the size bounds (%u elements, %u multiply-adds)",
                 PARITY_CASE_MAX_ELEMS, PARITY_CASE_MAX_WORK);
        parity_case_free(pCase);
        return -1;
    }
    return 0;
}

int parity_case_fill_values(parity_case *pCase, char *zErr, size_t nErr)
{
    size_t i;
    for (i = 0; i < pCase->nIn; i++) {
        parity_operand *pIn = &pCase->aIn[i];
        free(pIn->aValue);
        pIn->aValue = parity_malloc((pIn->nElem ? pIn->nElem : 1) * sizeof *pIn->aValue);
        if (!pIn->aValue) {
            snprintf(zErr, nErr, "out of memory for input %s", pIn->zName);
            return -1;
        }
        parity_values_fill(pIn, &pCase->spec.aRecipe[i], pCase->spec.seed, i);
    }
    pCase->fromStore = 0;
    return 0;
}

int parity_case_expand(const parity_case_spec *pSpec, parity_case *pCase, char *zErr,
                       size_t nErr)
{
    if (parity_case_layout(pSpec, pCase, zErr, nErr) != 0) return -1;
    if (parity_case_fill_values(pCase, zErr, nErr) != 0) {
        parity_case_free(pCase);
        return -1;
    }
    return 0;
}

int parity_case_op_begin(const parity_case *pCase, parity_op_call *pCall, char *zErr,
                         size_t nErr)
{
    const parity_attr *aAttr = pCase->aStoredAttr ? pCase->aStoredAttr : pCase->aParam;
    size_t nAttr = pCase->aStoredAttr ? pCase->nStoredAttr : pCase->nParam;
    if (parity_op_begin(pCall, pCase->pDef, pCase->aIn, pCase->nIn, pCase->outDtype,
                        pCase->outRank, pCase->aOutDim, pCase->accDtype, aAttr, nAttr, zErr,
                        nErr) != 0)
        return -1;
    pCall->uOperand = pCase->uOperand;
    return 0;
}

int parity_case_op_shape(const parity_case *pCase, parity_op_call *pCall, char *zErr,
                         size_t nErr)
{
    const parity_attr *aAttr = pCase->aStoredAttr ? pCase->aStoredAttr : pCase->aParam;
    size_t nAttr = pCase->aStoredAttr ? pCase->nStoredAttr : pCase->nParam;
    return parity_op_begin_shape(pCall, pCase->pDef, pCase->aIn, pCase->nIn, pCase->outDtype,
                                 pCase->outRank, pCase->aOutDim, pCase->accDtype, aAttr, nAttr,
                                 zErr, nErr);
}

const char *parity_case_describe(const parity_case *pCase, char *zBuf, size_t nBuf)
{
    size_t i, len;
    char zShape[160];
    len = (size_t)snprintf(zBuf, nBuf, "%s %s", pCase->spec.zOp,
                           parity_dtype_name(pCase->spec.dtype));
    for (i = 0; i < pCase->nIn && len < nBuf; i++) {
        len += (size_t)snprintf(zBuf + len, nBuf - len, " %s%s", pCase->aIn[i].zName,
                                parity_shape_str(pCase->aIn[i].rank, pCase->aIn[i].aDim,
                                                 zShape, sizeof zShape));
    }
    for (i = 0; i < pCase->nIn && len < nBuf; i++) {
        len += (size_t)snprintf(zBuf + len, nBuf - len, "%s%s", i ? "," : " values=",
                                pCase->fromStore ? "stored"
                                : parity_value_kind_name(pCase->spec.aRecipe[i].kind));
    }
    if (len < nBuf)
        snprintf(zBuf + len, nBuf - len, " seed=%llu", (unsigned long long)pCase->spec.seed);
    return zBuf;
}
