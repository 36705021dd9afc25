/*
 * graph_case.c - expanding, describing and drawing graph cases (graph_cases.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/alloc.h"
#include "fuzz/cases/graph_cases.h"

/* Most reference terms a graph case may cost (every node's outputs times the registry's
 * cost per element): the judge recomputes each node in MPFR, about a microsecond a term. */
#define GRAPH_MAX_WORK (1u << 20)

void parity_graph_case_input(parity_graph_case *pG, const char *zName, int rank,
                             const uint64_t *aDim)
{
    parity_operand *pIn = &pG->aIn[pG->nIn];
    snprintf(pG->azInName[pG->nIn], sizeof pG->azInName[0], "%s", zName);
    memset(pIn, 0, sizeof *pIn);
    pIn->zName = pG->azInName[pG->nIn];
    pIn->dtype = pG->spec.dtype;
    pIn->rank = rank;
    memcpy(pIn->aDim, aDim, (size_t)rank * sizeof *aDim);
    pIn->nElem = parity_shape_elements(rank, aDim);
    pG->nIn++;
}

int parity_graph_case_node(parity_graph_case *pG, const char *zOp, int nIn, const int *aIn,
                           char *zErr, size_t nErr)
{
    parity_graph_node *pN;
    const parity_op_def *pDef = parity_op_find(zOp);
    if (!pDef || pG->nNode == PARITY_GRAPH_CASE_MAX_NODES || nIn > PARITY_GRAPH_MAX_IN) {
        snprintf(zErr, nErr, "graph %s: cannot add op %s", pG->pFam->zName, zOp);
        return -1;
    }
    pN = &pG->aNode[pG->nNode];
    memset(pN, 0, sizeof *pN);
    pN->pDef = pDef;
    pN->nIn = (size_t)nIn;
    memcpy(pN->aIn, aIn, (size_t)nIn * sizeof *aIn);
    pN->outDtype = pG->spec.dtype;
    pN->accDtype = PARITY_DT_INVALID;
    pN->outRank = PARITY_OUT_INFER;
    pN->aAttr = pG->aaAttr[pG->nNode];
    snprintf(pG->azNodeName[pG->nNode], sizeof pG->azNodeName[0], "/%zu_%s", pG->nNode,
             pDef->zName);
    return (int)pG->nNode++;
}

static parity_attr *next_attr(parity_graph_case *pG, int i, const char *zName)
{
    parity_graph_node *pN = &pG->aNode[i];
    parity_attr *pA = &pG->aaAttr[i][pN->nAttr];
    memset(pA, 0, sizeof *pA);
    pA->zName = (char *)zName;
    pN->nAttr++;
    return pA;
}

void parity_graph_case_attr_int(parity_graph_case *pG, int i, const char *zName, int64_t v)
{
    size_t k = pG->aNode[i].nAttr;
    parity_attr *pA = next_attr(pG, i, zName);
    pG->aaInt[i][k] = v;
    pA->kind = PARITY_ATTR_INT;
    pA->n = 1;
    pA->aInt = &pG->aaInt[i][k];
}

void parity_graph_case_attr_float(parity_graph_case *pG, int i, const char *zName, double v)
{
    size_t k = pG->aNode[i].nAttr;
    parity_attr *pA = next_attr(pG, i, zName);
    pG->aaFloat[i][k] = v;
    pA->kind = PARITY_ATTR_FLOAT;
    pA->n = 1;
    pA->aFloat = &pG->aaFloat[i][k];
}

void parity_graph_case_attr_str(parity_graph_case *pG, int i, const char *zName,
                                const char *zValue)
{
    size_t k = pG->aNode[i].nAttr;
    parity_attr *pA = next_attr(pG, i, zName);
    pG->aazStr[i][k] = (char *)zValue;
    pA->kind = PARITY_ATTR_STRING;
    pA->n = 1;
    pA->azStr = &pG->aazStr[i][k];
}

void parity_graph_case_operand(const parity_graph_case *pG, int ref, double *const *aaValue,
                               parity_operand *pOp)
{
    if (ref < 0) {
        *pOp = pG->aIn[-1 - ref];
        return;
    }
    memset(pOp, 0, sizeof *pOp);
    pOp->zName = pG->azNodeName[ref];
    pOp->dtype = pG->aNode[ref].outDtype;
    pOp->rank = pG->aNode[ref].outRank;
    memcpy(pOp->aDim, pG->aNode[ref].aOutDim, sizeof pOp->aDim);
    pOp->nElem = parity_shape_elements(pOp->rank, pOp->aDim);
    pOp->aValue = aaValue ? aaValue[ref] : NULL;
}

/* Works out every node's output shape with the registry (shapes only) and the case's
 * work. Returns 0, or -1 with the registry's reason. */
static int graph_shapes(parity_graph_case *pG, char *zErr, size_t nErr)
{
    size_t i, k;
    pG->work = 0;
    for (i = 0; i < pG->nNode; i++) {
        parity_graph_node *pN = &pG->aNode[i];
        parity_operand aOp[PARITY_GRAPH_MAX_IN];
        parity_op_call call;
        char zWhy[256];
        for (k = 0; k < pN->nIn; k++) parity_graph_case_operand(pG, pN->aIn[k], NULL, &aOp[k]);
        if (parity_op_begin_shape(&call, pN->pDef, aOp, pN->nIn, pN->outDtype, PARITY_OUT_INFER,
                                  NULL, pN->accDtype, pN->aAttr, pN->nAttr, zWhy,
                                  sizeof zWhy) != 0) {
            snprintf(zErr, nErr, "graph %s: node %zu (%s): %s", pG->pFam->zName, i,
                     pN->pDef->zName, zWhy);
            return -1;
        }
        pN->outRank = call.outRank;
        memcpy(pN->aOutDim, call.aOutDim, sizeof pN->aOutDim);
        pG->work += (uint64_t)((double)call.nOut * parity_op_cost(&call));
        if (call.nOut > PARITY_CASE_MAX_ELEMS) pG->work = UINT64_MAX;
        parity_op_end(&call);
    }
    snprintf(pG->azNodeName[pG->nNode - 1], sizeof pG->azNodeName[0], "/out");
    pG->nOut = parity_shape_elements(pG->aNode[pG->nNode - 1].outRank,
                                     pG->aNode[pG->nNode - 1].aOutDim);
    for (i = 0; i < pG->nIn; i++)
        if (pG->aIn[i].nElem > PARITY_CASE_MAX_ELEMS) pG->work = UINT64_MAX;
    return 0;
}

int parity_graph_case_layout(const parity_graph_spec *pSpec, parity_graph_case *pG,
                             char *zErr, size_t nErr)
{
    memset(pG, 0, sizeof *pG);
    pG->spec = *pSpec;
    pG->pFam = parity_graph_family_at(pSpec->family);
    if (!pG->pFam) {
        snprintf(zErr, nErr, "graph case: no family %u", (unsigned)pSpec->family);
        return -1;
    }
    if (!parity_dtype_is_float(pSpec->dtype)) {
        snprintf(zErr, nErr, "graph %s: dtype %s is not a float dtype", pG->pFam->zName,
                 parity_dtype_name(pSpec->dtype));
        return -1;
    }
    if (pG->pFam->xBuild(pG, zErr, nErr) != 0) return -1;
    return graph_shapes(pG, zErr, nErr);
}

/* An additive attention mask from the recipe's values: 0 (keep) or -inf (masked), the
 * negative values beyond -0.5 and -inf masking; NaN stays NaN. A mask recipe's -inf rows
 * make fully masked rows. */
static void additive_mask(parity_operand *pIn)
{
    uint64_t k;
    for (k = 0; k < pIn->nElem; k++) {
        double v = pIn->aValue[k];
        if (v == v) pIn->aValue[k] = v < -0.5 ? -INFINITY : 0.0;
    }
}

int parity_graph_case_expand(const parity_graph_spec *pSpec, parity_graph_case *pG,
                             char *zErr, size_t nErr)
{
    size_t i;
    if (parity_graph_case_layout(pSpec, pG, zErr, nErr) != 0) return -1;
    if (pG->work > GRAPH_MAX_WORK) {
        snprintf(zErr, nErr, "graph %s: %llu reference terms, over the bound %u",
                 pG->pFam->zName, (unsigned long long)pG->work, GRAPH_MAX_WORK);
        return -1;
    }
    for (i = 0; i < pG->nIn; i++) {
        parity_operand *pIn = &pG->aIn[i];
        pIn->aValue = parity_malloc((pIn->nElem ? pIn->nElem : 1) * sizeof(double));
        if (!pIn->aValue) {
            snprintf(zErr, nErr, "out of memory");
            parity_graph_case_free(pG);
            return -1;
        }
        parity_values_fill(pIn, &pSpec->aRecipe[i < PARITY_GRAPH_CASE_MAX_IN ? i : 0],
                           pSpec->seed, i);
        if (strcmp(pIn->zName, "mask") == 0) additive_mask(pIn);
    }
    return 0;
}

void parity_graph_case_free(parity_graph_case *pG)
{
    size_t i;
    for (i = 0; i < pG->nIn; i++) {
        parity_free(pG->aIn[i].aValue);
        pG->aIn[i].aValue = NULL;
    }
}

const char *parity_graph_case_ops(const parity_graph_case *pG, char *zBuf, size_t nBuf)
{
    size_t i, len = 0;
    zBuf[0] = 0;
    for (i = 0; i < pG->nNode && len < nBuf; i++)
        len += (size_t)snprintf(zBuf + len, nBuf - len, "%s%s", i ? "+" : "",
                                pG->aNode[i].pDef->zName);
    return zBuf;
}

const char *parity_graph_case_describe(const parity_graph_case *pG, char *zBuf, size_t nBuf)
{
    size_t i, len;
    char zShape[128], zOps[256];
    len = (size_t)snprintf(zBuf, nBuf, "%s %s", pG->pFam->zName,
                           parity_dtype_name(pG->spec.dtype));
    for (i = 0; i < pG->nIn && len < nBuf; i++)
        len += (size_t)snprintf(zBuf + len, nBuf - len, " %s%s", pG->aIn[i].zName,
                                parity_shape_str(pG->aIn[i].rank, pG->aIn[i].aDim, zShape,
                                                 sizeof zShape));
    for (i = 0; i < pG->nIn && len < nBuf; i++)
        len += (size_t)snprintf(zBuf + len, nBuf - len, "%s%s", i ? "," : " values=",
                                parity_value_kind_name((parity_value_kind)pG->spec.aRecipe[i].kind));
    if (len < nBuf)
        snprintf(zBuf + len, nBuf - len, " seed=%llu: %s", (unsigned long long)pG->spec.seed,
                 parity_graph_case_ops(pG, zOps, sizeof zOps));
    return zBuf;
}

void parity_graph_spec_draw(parity_rng *pRng, const parity_graph_family *pFam,
                            uint32_t dtypeMask, parity_graph_spec *pSpec)
{
    static const parity_dtype aDt[] = { PARITY_DT_F32, PARITY_DT_F32, PARITY_DT_BF16,
                                        PARITY_DT_F16, PARITY_DT_F64 };
    static const parity_value_kind aKind[] = {
        PARITY_VAL_NORMAL, PARITY_VAL_NORMAL, PARITY_VAL_NORMAL, PARITY_VAL_UNIFORM,
        PARITY_VAL_SPECIALS, PARITY_VAL_SUBNORMAL, PARITY_VAL_SIGNED_ZEROS,
        PARITY_VAL_CANCEL, PARITY_VAL_MASK_ROWS, PARITY_VAL_EXTREMES, PARITY_VAL_CONST_ROWS,
        PARITY_VAL_SORTED };
    size_t i;
    int tries;
    memset(pSpec, 0, sizeof *pSpec);
    for (i = 0; i < parity_graph_family_count(); i++)
        if (parity_graph_family_at(i) == pFam) pSpec->family = (uint8_t)i;
    pSpec->variant = (uint32_t)parity_rng_below(pRng, pFam->nChoice ? pFam->nChoice : 1);
    for (i = 0; i < 8; i++)     /* an optional op is dropped one time in six */
        if ((pFam->dropBits >> (8 + i) & 1) && parity_rng_one_in(pRng, 6))
            pSpec->variant |= 1u << (8 + i);
    for (tries = 0; tries < 64; tries++) {
        pSpec->dtype = aDt[parity_rng_below(pRng, sizeof aDt / sizeof aDt[0])];
        if (!dtypeMask || (dtypeMask >> pSpec->dtype & 1)) break;
    }
    for (i = 0; i < (size_t)pFam->nDim; i++) {
        uint64_t d = parity_draw_dim(pRng, pFam->aRole[i]);
        pSpec->aDim[i] = d ? d : 1;
    }
    for (i = 0; i < PARITY_GRAPH_CASE_MAX_IN; i++) {
        pSpec->aRecipe[i].kind = (uint8_t)aKind[parity_rng_below(pRng, sizeof aKind / sizeof aKind[0])];
        pSpec->aRecipe[i].scaleLog2 = (int8_t)(parity_rng_below(pRng, 5) - 1);
    }
    /* two tile dims (a GEMM's M and N): one draw in four makes the output square, a shape
     * some epilogues mishandle (openxla/xla#46897) */
    if (pFam->nDim >= 2 && pFam->aRole[0] == PARITY_ROLE_TILE &&
        pFam->aRole[1] == PARITY_ROLE_TILE && parity_rng_one_in(pRng, 4))
        pSpec->aDim[1] = pSpec->aDim[0];
    pSpec->seed = parity_rng_next(pRng);
    /* inside the work bound: halve the largest dim until the layout fits */
    for (tries = 0; tries < 64; tries++) {
        parity_graph_case g;
        char zErr[256];
        int iMax = 0, d;
        if (parity_graph_case_layout(pSpec, &g, zErr, sizeof zErr) == 0 && g.work <= GRAPH_MAX_WORK) return;
        for (d = 1; d < pFam->nDim; d++)
            if (pSpec->aDim[d] > pSpec->aDim[iMax]) iMax = d;
        if (pSpec->aDim[iMax] <= 1) return;
        pSpec->aDim[iMax] = (pSpec->aDim[iMax] + 1) / 2;
    }
}
