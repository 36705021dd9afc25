/*
 * ops.c - the registry table, op call setup, and parameter helpers shared by op files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"

extern const parity_op_def parity_op_relu, parity_op_matmul, parity_op_linear, parity_op_bmm,
    parity_op_softmax, parity_op_layer_norm;
extern const parity_op_def parity_op_log_softmax, parity_op_logsumexp, parity_op_var,
    parity_op_cumsum, parity_op_rms_norm;
extern const parity_op_def parity_op_transpose, parity_op_permute, parity_op_reshape,
    parity_op_cast;
extern const parity_op_def parity_op_gelu, parity_op_silu, parity_op_sigmoid, parity_op_tanh,
    parity_op_exp, parity_op_log, parity_op_sqrt, parity_op_rsqrt, parity_op_reciprocal,
    parity_op_erf, parity_op_neg, parity_op_abs, parity_op_mish, parity_op_softplus,
    parity_op_elu;
extern const parity_op_def parity_op_add, parity_op_sub, parity_op_mul, parity_op_div,
    parity_op_maximum, parity_op_minimum, parity_op_sum, parity_op_mean, parity_op_amax,
    parity_op_amin;
extern const parity_op_def parity_op_scaled_dot_product_attention, parity_op_conv2d;

const parity_op_def *const parity_op_registry[] = {
    &parity_op_relu,
    &parity_op_gelu, &parity_op_silu, &parity_op_sigmoid, &parity_op_tanh, &parity_op_exp,
    &parity_op_log, &parity_op_sqrt, &parity_op_rsqrt, &parity_op_reciprocal, &parity_op_erf,
    &parity_op_neg, &parity_op_abs, &parity_op_softplus, &parity_op_elu, &parity_op_mish,
    &parity_op_matmul,
    &parity_op_linear,
    &parity_op_bmm,
    &parity_op_scaled_dot_product_attention, &parity_op_conv2d,
    &parity_op_transpose, &parity_op_permute, &parity_op_reshape, &parity_op_cast,
    &parity_op_softmax,
    &parity_op_log_softmax, &parity_op_logsumexp, &parity_op_var, &parity_op_cumsum,
    &parity_op_rms_norm,
    &parity_op_layer_norm,
    &parity_op_add, &parity_op_sub, &parity_op_mul, &parity_op_div,
    &parity_op_maximum, &parity_op_minimum,
    &parity_op_sum, &parity_op_mean, &parity_op_amax, &parity_op_amin,
    NULL
};

const parity_op_def *parity_op_find(const char *zName)
{
    int i;
    if (!zName) return NULL;
    for (i = 0; parity_op_registry[i]; i++)
        if (strcmp(parity_op_registry[i]->zName, zName) == 0) return parity_op_registry[i];
    return NULL;
}

int parity_op_begin(parity_op_call *pCall, const parity_op_def *pDef,
                    const parity_operand *aIn, size_t nIn, parity_dtype outDtype,
                    int outRank, const uint64_t *aOutDim, parity_dtype accDtype,
                    const parity_attr *aAttr, size_t nAttr, char *zErr, size_t nErr)
{
    int i;
    memset(pCall, 0, sizeof *pCall);
    if (nIn < pDef->nInMin || nIn > pDef->nInMax) {
        if (pDef->nInMin == pDef->nInMax)
            snprintf(zErr, nErr, "%s takes %zu inputs, 'inputs' names %zu", pDef->zName,
                     pDef->nInMin, nIn);
        else
            snprintf(zErr, nErr, "%s takes %zu to %zu inputs, 'inputs' names %zu",
                     pDef->zName, pDef->nInMin, pDef->nInMax, nIn);
        return -1;
    }
    if (!parity_dtype_is_float(outDtype) && !pDef->allowIntOutput) {
        snprintf(zErr, nErr, "%s: output dtype %s is not a float type", pDef->zName,
                 parity_dtype_name(outDtype));
        return -1;
    }
    pCall->pDef = pDef;
    pCall->aIn = aIn;
    pCall->nIn = nIn;
    pCall->outDtype = outDtype;
    pCall->outRank = outRank;
    pCall->nOut = 1;
    for (i = 0; i < outRank; i++) {
        pCall->aOutDim[i] = aOutDim[i];
        pCall->nOut *= aOutDim[i];
    }
    /* Kernels for 16- and 8-bit outputs accumulate in float32 unless they say otherwise. */
    pCall->accDtype = accDtype != PARITY_DT_INVALID ? accDtype
                    : outDtype == PARITY_DT_F64 ? PARITY_DT_F64 : PARITY_DT_F32;
    pCall->lambda = PARITY_DEFAULT_LAMBDA;
    pCall->probBound = NAN;
    if (pDef->xPrepare(pCall, aAttr, nAttr, zErr, nErr) != 0) {
        parity_op_end(pCall);
        return -1;
    }
    return 0;
}

void parity_op_end(parity_op_call *pCall)
{
    if (pCall->pDef && pCall->pDef->xFreeParams && pCall->pParams)
        pCall->pDef->xFreeParams(pCall->pParams);
    pCall->pParams = NULL;
}

/* ---- parameters ------------------------------------------------------------------- */

int parity_param_int(const parity_attr *aAttr, size_t nAttr, const char *zName,
                     int64_t *pValue, char *zErr, size_t nErr)
{
    const parity_attr *p = parity_attr_find(aAttr, nAttr, zName);
    if (!p) return 0;
    if (p->kind != PARITY_ATTR_INT || p->n != 1) {
        snprintf(zErr, nErr, "attribute '%s' must be one integer", zName);
        return -1;
    }
    *pValue = p->aInt[0];
    return 1;
}

int parity_param_float(const parity_attr *aAttr, size_t nAttr, const char *zName,
                       double *pValue, char *zErr, size_t nErr)
{
    const parity_attr *p = parity_attr_find(aAttr, nAttr, zName);
    if (!p) return 0;
    if (p->n == 1 && p->kind == PARITY_ATTR_FLOAT) { *pValue = p->aFloat[0]; return 1; }
    if (p->n == 1 && p->kind == PARITY_ATTR_INT) { *pValue = (double)p->aInt[0]; return 1; }
    snprintf(zErr, nErr, "attribute '%s' must be one number", zName);
    return -1;
}

int parity_param_ints(const parity_attr *aAttr, size_t nAttr, const char *zName,
                      int64_t *aValue, size_t nMax, size_t *pn, char *zErr, size_t nErr)
{
    const parity_attr *p = parity_attr_find(aAttr, nAttr, zName);
    size_t i;
    if (!p) return 0;
    if (p->kind != PARITY_ATTR_INT || p->n > nMax) {
        snprintf(zErr, nErr, "attribute '%s' must be an integer or a list of at most %zu",
                 zName, nMax);
        return -1;
    }
    for (i = 0; i < p->n; i++) aValue[i] = p->aInt[i];
    *pn = p->n;
    return 1;
}

int parity_wrap_dim(int64_t dim, int rank)
{
    int64_t r = rank == 0 ? 1 : rank;   /* torch accepts dim 0 / -1 on scalars */
    if (dim < -r || dim >= r) return -1;
    return (int)(dim < 0 ? dim + r : dim);
}

int parity_same_shape(int rankA, const uint64_t *aA, int rankB, const uint64_t *aB)
{
    int i;
    if (rankA != rankB) return 0;
    for (i = 0; i < rankA; i++)
        if (aA[i] != aB[i]) return 0;
    return 1;
}

const char *parity_shape_str(int rank, const uint64_t *aDim, char *zBuf, size_t nBuf)
{
    size_t nLen = 0;
    int i;
    nLen += (size_t)snprintf(zBuf, nBuf, "[");
    for (i = 0; i < rank && nLen < nBuf; i++)
        nLen += (size_t)snprintf(zBuf + nLen, nBuf - nLen, i ? ", %llu" : "%llu",
                                 (unsigned long long)aDim[i]);
    if (nLen < nBuf) snprintf(zBuf + nLen, nBuf - nLen, "]");
    return zBuf;
}

void parity_note_overflow(parity_op_call *pCall, double absSum)
{
    if (!(absSum < parity_dtype_max_finite(pCall->accDtype)) && !pCall->overflowPossible)
        pCall->overflowPossible = PARITY_OVERFLOW_NONFINITE;
}

void parity_note_overflow_any(parity_op_call *pCall, double absSum)
{
    if (!(absSum < parity_dtype_max_finite(pCall->accDtype)))
        pCall->overflowPossible = PARITY_OVERFLOW_ANY_VALUE;
}
