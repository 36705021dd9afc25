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

static int relu_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                        char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    char zA[128], zB[128];
    (void)aAttr; (void)nAttr;
    if (!parity_same_shape(pX->rank, pX->aDim, pCall->outRank, pCall->aOutDim)) {
        snprintf(zErr, nErr, "relu: input shape %s differs from output shape %s",
                 parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA),
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zB, sizeof zB));
        return -1;
    }
    return 0;
}

static int relu_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    double x = pCall->aIn[0].aValue[linear];
    double y = x != x ? x : (x > 0.0 ? x : 0.0);
    double rounded;
    mpfr_set_d(ref, y, MPFR_RNDN);
    rounded = parity_round_double_to_dtype(y, pCall->outDtype);
    /* Representable results are exact; otherwise the output rounding is all. */
    *pBound = (rounded == y || y != y) ? 0.0 : 0.5 * parity_ulp_at(pCall->outDtype, y);
    return 0;
}

const parity_op_def parity_op_relu = {
    "relu", "exact; only the rounding to the output dtype (0.5 ulp)", 1, 1,
    relu_prepare, relu_element, NULL, NULL, NULL, 0
};
