/*
 * op_relu.c - relu(x) = max(x, 0), elementwise.
 *
 * Reference: exact (max of a binary64 and 0); NaN stays NaN, as torch.relu does.
 * Bound: relu is exact in any precision at least as wide as its input, so the only error a
 * correct kernel may make is the final rounding to the output dtype: half an ulp of the
 * output dtype at the result (0 when the result is representable, the usual case).
 */
#include <math.h>
#include <stdio.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/propagate.h"

static int relu_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                        char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    char zA[128], zB[128];
    (void)aAttr; (void)nAttr;
    if (!parity_op_take_out(pCall, pX->rank, pX->aDim)) {
        snprintf(zErr, nErr, "relu: input shape %s differs from output shape %s",
                 parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA),
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zB, sizeof zB));
        return -1;
    }
    return 0;
}

/* relu(x) and its bound: representable results are exact; otherwise the output rounding
 * is all. */
static double relu_value(const parity_op_call *pCall, uint64_t linear, double *pBound)
{
    double x = pCall->aIn[0].aValue[linear];
    double y = x != x ? x : (x > 0.0 ? x : 0.0);
    double rounded = parity_round_double_to_dtype(y, pCall->outDtype);
    *pBound = (rounded == y || y != y) ? 0.0 : 0.5 * parity_ulp_at(pCall->outDtype, y);
    return y;
}

static int relu_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    mpfr_set_d(ref, relu_value(pCall, linear, pBound), MPFR_RNDN);
    return 0;
}

/* Fast path (ops.h): relu is exact in binary64 (stated error 0), its bound as above. */
static int relu_fast(const parity_op_call *pCall, uint64_t linear, double *pRef, double *pErr,
                     double *pBound, double *pSpread)
{
    double b, y = relu_value(pCall, linear, &b);
    if (!parity_exact_fast(y, pRef, pErr, pBound, pSpread)) return 0;
    *pBound = b;
    return 1;
}

/* Propagation (ops.h, xPropagate): relu is 1-Lipschitz, so it moves by at most the
 * operand's radius r; its bound is at most half an ulp of the output at |x| + r. */
static int relu_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                          mpfr_t ref, double *pRadius)
{
    double b;
    relu_element(pCall, linear, ref, &b);
    return parity_propagate_picked(pCall, pCall->aIn[0].aValue[linear], aRad[0][linear], b,
                                   pRadius);
}

const parity_op_def parity_op_relu = {
    .zName = "relu",
    .zKernel = "max/min",            /* max(x, 0) */
    .zModel = "exact; only the rounding to the output dtype (0.5 ulp)",
    .nInMin = 1, .nInMax = 1,
    .family = PARITY_FAMILY_UNARY,
    .xPrepare = relu_prepare,
    .xElement = relu_element,
    .xFast = relu_fast,
    .xPropagate = relu_propagate,
};
