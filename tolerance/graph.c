/*
 * graph.c - propagation of references and error radii through a small DAG of registry
 * ops, and the judge of a fused region's outputs against them (graph.h says what the
 * radius means and why it is rigorous).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/alloc.h"
#include "tolerance/graph.h"
#include "tolerance/mpref.h"
#include "tolerance/propagate.h"

void parity_graph_values_free(parity_graph_value *aValue, size_t nValue)
{
    size_t i;
    for (i = 0; aValue && i < nValue; i++) {
        parity_free(aValue[i].value.aValue);
        parity_free(aValue[i].aRadius);
        memset(&aValue[i], 0, sizeof aValue[i]);
    }
}

/* Element `linear` of a prepared call: its value and radius, the op's special-value
 * verdicts kept (a NaN from a NaN input is exact: radius 0). */
static int node_element(parity_op_call *pCall, const double *const *aRad, int anyRadius,
                        uint64_t linear, mpfr_t ref, double *pValue, double *pRadius)
{
    double bound = 0.0, v, maxOut = parity_dtype_max_finite(pCall->outDtype);
    int rc;
    parity_op_call_clear_element(pCall);
    rc = anyRadius ? pCall->pDef->xPropagate(pCall, aRad, linear, ref, &bound)
                   : pCall->pDef->xElement(pCall, linear, ref, &bound);
    if (rc != 0) return -1;
    v = mpfr_get_d(ref, MPFR_RNDN);
    *pValue = v;
    if (pCall->overflowPossible || !(bound < INFINITY)) {
        *pRadius = INFINITY;
        return 0;
    }
    if (!isfinite(v)) {
        *pRadius = bound;   /* a special value the op's semantics fix */
        return 0;
    }
    *pRadius = parity_radius_up(bound + parity_radius_between(ref, v), 1.0);
    /* a value within the radius could overflow the output dtype: a correct kernel may
     * give an infinity there, which no finite radius covers */
    if (*pRadius > 0.0 && !(parity_radius_up(fabs(v) + *pRadius, 1.0) < maxOut))
        *pRadius = INFINITY;
    return 0;
}

static const double kZero[1] = { 0.0 };

/* Whether any element of any operand has a nonzero radius. */
static int any_radius(const parity_operand *aOp, const double *const *aRad, size_t nIn)
{
    size_t i;
    uint64_t k;
    for (i = 0; i < nIn; i++)
        for (k = 0; k < aOp[i].nElem; k++)
            if (aRad[i][k] != 0.0) return 1;
    return 0;
}

/* A propagation's heartbeat (parity_graph_propagate_beat). */
typedef struct {
    int (*xBeat)(void *);
    void *pCtx;
    uint64_t nSince;           /* elements since the last beat */
} graph_beat;

static int propagate_node(const parity_graph_node *pNode, size_t iNode,
                          const parity_operand *aInput, const double *const *aInputRad,
                          size_t nInput, parity_graph_value *aOut, graph_beat *pBeat,
                          char *zErr, size_t nErr)
{
    parity_operand aOp[PARITY_GRAPH_MAX_IN];
    const double *aRad[PARITY_GRAPH_MAX_IN];
    parity_graph_value *pV = &aOut[iNode];
    parity_op_call call;
    char zWhy[256];
    mpfr_t ref;
    size_t i;
    uint64_t k;
    int anyRadius, rc = 0;

    if (!pNode->pDef || pNode->nIn > PARITY_GRAPH_MAX_IN) {
        snprintf(zErr, nErr, "graph node %zu: no op, or more than %d operands", iNode,
                 PARITY_GRAPH_MAX_IN);
        return -1;
    }
    for (i = 0; i < pNode->nIn; i++) {
        int j = pNode->aIn[i];
        if (j >= 0 && (size_t)j < iNode) {
            aOp[i] = aOut[j].value;
            aRad[i] = aOut[j].aRadius;
        } else if (j < 0 && (size_t)(-1 - j) < nInput) {
            aOp[i] = aInput[-1 - j];
            aRad[i] = aInputRad[-1 - j];
        } else {
            snprintf(zErr, nErr, "graph node %zu (%s): operand %zu is neither an earlier node "
                     "nor an input", iNode, pNode->pDef->zName, i);
            return -1;
        }
    }
    if (parity_op_begin(&call, pNode->pDef, aOp, pNode->nIn, pNode->outDtype, pNode->outRank,
                        pNode->outRank == PARITY_OUT_INFER ? NULL : pNode->aOutDim,
                        pNode->accDtype, pNode->aAttr, pNode->nAttr, zWhy, sizeof zWhy) != 0) {
        snprintf(zErr, nErr, "graph node %zu (%s): %s", iNode, pNode->pDef->zName, zWhy);
        return -1;
    }
    /* an operand the call appended (a scalar attribute, ops.h zScalarInput) is exact */
    for (i = pNode->nIn; i < call.nIn && i < PARITY_GRAPH_MAX_IN; i++) aRad[i] = kZero;
    call.uOperand = pNode->uOperand;
    anyRadius = any_radius(aOp, aRad, pNode->nIn);
    if (anyRadius && !pNode->pDef->xPropagate) {
        snprintf(zErr, nErr, "graph node %zu (%s): its model cannot carry the error of the ops "
                 "before it (no propagation for this op yet)", iNode, pNode->pDef->zName);
        parity_op_end(&call);
        return -1;
    }
    pV->value.zName = pNode->pDef->zName;
    pV->value.dtype = call.outDtype;
    pV->value.rank = call.outRank;
    memcpy(pV->value.aDim, call.aOutDim, sizeof call.aOutDim);
    pV->value.nElem = call.nOut;
    pV->value.aValue = parity_malloc((call.nOut ? call.nOut : 1) * sizeof(double));
    pV->aRadius = parity_malloc((call.nOut ? call.nOut : 1) * sizeof(double));
    if (!pV->value.aValue || !pV->aRadius) {
        snprintf(zErr, nErr, "graph node %zu (%s): out of memory", iNode, pNode->pDef->zName);
        parity_op_end(&call);
        return -1;
    }
    mpfr_init2(ref, PARITY_REF_PREC);
    for (k = 0; k < call.nOut && rc == 0; k++) {
        rc = node_element(&call, aRad, anyRadius, k, ref, &pV->value.aValue[k],
                          &pV->aRadius[k]);
        if (rc == 0 && !(pV->aRadius[k] < INFINITY)) pV->nVacuous++;
        if (rc == 0 && pBeat->xBeat && ++pBeat->nSince >= PARITY_JUDGE_BEAT_ELEMS) {
            pBeat->nSince = 0;
            if (pBeat->xBeat(pBeat->pCtx) != 0) {
                snprintf(zErr, nErr, "time limit reached while judging");
                rc = -2;
            }
        }
    }
    mpfr_clear(ref);
    parity_op_end(&call);
    if (rc == -1)
        snprintf(zErr, nErr, "graph node %zu (%s): reference failed at element %llu", iNode,
                 pNode->pDef->zName, (unsigned long long)(k - 1));
    return rc;
}

int parity_graph_propagate(const parity_graph_node *aNode, size_t nNode,
                           const parity_operand *aInput, size_t nInput,
                           parity_graph_value *aOut, char *zErr, size_t nErr)
{
    return parity_graph_propagate_beat(aNode, nNode, aInput, nInput, aOut, NULL, NULL, zErr,
                                       nErr);
}

int parity_graph_propagate_beat(const parity_graph_node *aNode, size_t nNode,
                                const parity_operand *aInput, size_t nInput,
                                parity_graph_value *aOut, int (*xBeat)(void *),
                                void *pBeatCtx, char *zErr, size_t nErr)
{
    graph_beat beat = { xBeat, pBeatCtx, 0 };
    double **aInputRad = parity_calloc(nInput + 1, sizeof(double *));
    size_t i;
    int rc = 0;

    memset(aOut, 0, nNode * sizeof *aOut);
    if (!aInputRad) { snprintf(zErr, nErr, "out of memory"); return -1; }
    for (i = 0; i < nInput && rc == 0; i++) {
        aInputRad[i] = parity_calloc(aInput[i].nElem ? aInput[i].nElem : 1, sizeof(double));
        if (!aInputRad[i]) { snprintf(zErr, nErr, "out of memory"); rc = -1; }
    }
    for (i = 0; i < nNode && rc == 0; i++)
        rc = propagate_node(&aNode[i], i, aInput, (const double *const *)aInputRad, nInput,
                            aOut, &beat, zErr, nErr);
    for (i = 0; i < nInput; i++) parity_free(aInputRad[i]);
    parity_free(aInputRad);
    if (rc != 0) parity_graph_values_free(aOut, nNode);
    return rc;
}

/* ---- the judge: a node's values and radii as an op whose reference they are -------- */

static int output_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    const parity_graph_value *pV = pCall->pParams;
    double v = pV->value.aValue[linear];
    *pBound = pV->aRadius[linear];
    if (!(*pBound < INFINITY)) {
        /* vacuous: anything goes, finite or not (judge.c takes any non-finite value under
         * overflowPossible, and a finite one by the infinite bound, which needs a finite
         * reference: the value where it is one, else 0, which nothing is judged by) */
        pCall->overflowPossible = 1;
        pCall->nonfiniteAny = 1;
        if (!isfinite(v)) v = 0.0;
    }
    mpfr_set_d(ref, v, MPFR_RNDN);
    return 0;
}

/* The value is the reference (exact in binary64: stated error 0) and the radius the
 * bound; vacuous and special elements go to output_element, which flags them. */
static int output_fast(const parity_op_call *pCall, uint64_t linear, double *pRef,
                       double *pErr, double *pBound, double *pSpread)
{
    const parity_graph_value *pV = pCall->pParams;
    double v = pV->value.aValue[linear], r = pV->aRadius[linear];
    if (!isfinite(v) || !(r < INFINITY)) return 0;
    *pRef = v;
    *pErr = 0.0;
    *pBound = r;
    *pSpread = 0.0;
    return 1;
}

static const parity_op_def kGraphOutput = {
    .zName = "graph",
    .zModel = "propagated through the region's ops, each within its own model (graph.h)",
    .nInMin = 1, .nInMax = 1,
    .xElement = output_element,
    .xFast = output_fast,
};

int parity_graph_judge(const parity_graph_value *pValue, const double *aEager,
                       const double *aCompiled, const double *aApprox,
                       const parity_judge_plan *pPlan, parity_judgement *pJ, char *zErr,
                       size_t nErr)
{
    parity_op_call call;
    parity_judge_plan plan;
    memset(&call, 0, sizeof call);
    call.pDef = &kGraphOutput;
    call.aIn = &pValue->value;
    call.nIn = 1;
    call.outDtype = pValue->value.dtype;
    call.accDtype = pValue->value.dtype;
    call.outRank = pValue->value.rank;
    memcpy(call.aOutDim, pValue->value.aDim, sizeof call.aOutDim);
    call.nOut = pValue->value.nElem;
    call.pParams = (void *)pValue;
    call.lambda = PARITY_DEFAULT_LAMBDA;
    if (!pPlan) {
        parity_judge_plan_default(&plan);
        pPlan = &plan;
    }
    return parity_judge_planned(&call, aEager, aCompiled, aApprox, pPlan, pJ, zErr, nErr);
}
