/*
 * op_cast.c - cast(x, to): converts x to the dtype named by the attribute `to`, with
 * PyTorch semantics (Tensor.to(dtype)).
 *
 * The target comes from `to` only: `dtype` keeps its storage meaning (formats/FORMAT.md) and
 * is never read as the target. `to` must name a known dtype (parity_dtype_from_name) and be
 * the output tensor's dtype.
 *
 * Reference and bound, per target:
 * - float targets: round to nearest even into the target, with its subnormals; overflow
 *   gives +-Inf, and NaN for float8_e4m3fn (no infinity, as torch's cast does); NaN stays
 *   NaN (parity_round_double_to_dtype, mpref.h). The input is a decoded capture, an exact
 *   binary64, so this is one correct rounding of the exact value. Bound 0: once the rounding
 *   rule is fixed a cast has exactly one right answer, so a kernel that rounds toward zero
 *   (or rounds twice through a narrower type) fails where its result differs.
 * - bool: x != 0 (NaN is true), exact.
 * - integer targets from floats: torch (C++ static_cast) truncates toward zero. A NaN, an
 *   infinity or a truncated value outside the target's range is undefined behaviour in
 *   torch (the result depends on the CPU and the kernel), so any output value is accepted
 *   there: the element is skipped (reference 0, bound +Inf), not failed.
 * - integer targets from integers or bool: two's complement wrap to the target width, as
 *   torch does. int64/uint64 inputs beyond 2^53 were decoded inexactly (dtype.h): skipped
 *   like undefined values.
 *
 * Note: parity_op_begin currently accepts float output dtypes only, so integer and bool
 * targets are reachable only through a call set up without it (tests/test_op_layout.c).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/propagate.h"

/* Bits and signedness of an integer dtype; 0 bits for non-integers (bool included). */
static int int_bits(parity_dtype dt, int *pSigned)
{
    *pSigned = 1;
    switch (dt) {
    case PARITY_DT_I8:  return 8;
    case PARITY_DT_I16: return 16;
    case PARITY_DT_I32: return 32;
    case PARITY_DT_I64: return 64;
    default: break;
    }
    *pSigned = 0;
    switch (dt) {
    case PARITY_DT_U8:  return 8;
    case PARITY_DT_U16: return 16;
    case PARITY_DT_U32: return 32;
    case PARITY_DT_U64: return 64;
    default:            return 0;
    }
}

static int cast_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                        char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    const parity_attr *pTo = parity_attr_find(aAttr, nAttr, "to");
    parity_dtype to;
    char zA[256], zB[256];

    if (!pTo) {
        snprintf(zErr, nErr, "cast: attribute 'to' (the target dtype) is missing");
        return -1;
    }
    if (pTo->kind != PARITY_ATTR_STRING || pTo->n != 1 || !pTo->azStr || !pTo->azStr[0]) {
        snprintf(zErr, nErr, "cast: attribute 'to' must be one string naming a dtype");
        return -1;
    }
    to = parity_dtype_from_name(pTo->azStr[0]);
    if (to == PARITY_DT_INVALID) {
        snprintf(zErr, nErr, "cast: unknown dtype '%s' in 'to'", pTo->azStr[0]);
        return -1;
    }
    if (to != pCall->outDtype) {
        snprintf(zErr, nErr, "cast: 'to' is %s but the output dtype is %s",
                 parity_dtype_name(to), parity_dtype_name(pCall->outDtype));
        return -1;
    }
    if (!parity_op_take_out(pCall, pX->rank, pX->aDim)) {
        snprintf(zErr, nErr, "cast: input shape %s differs from output shape %s",
                 parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA),
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zB, sizeof zB));
        return -1;
    }
    return 0;
}

/* The value of an integer target, or 0 with *pSkip set when torch leaves it undefined. */
static double cast_to_int(double x, parity_dtype from, parity_dtype to, int *pSkip)
{
    int isSigned, bits = int_bits(to, &isSigned);
    double lo = isSigned ? -ldexp(1.0, bits - 1) : 0.0;
    double hiExcl = ldexp(1.0, isSigned ? bits - 1 : bits);   /* exact powers of two */
    *pSkip = 0;
    if (parity_dtype_is_float(from)) {
        double t;
        if (!isfinite(x)) { *pSkip = 1; return 0.0; }
        t = trunc(x);                               /* static_cast: toward zero */
        if (t < lo || t >= hiExcl) { *pSkip = 1; return 0.0; }
        return t;
    }
    if (fabs(x) > 9007199254740992.0) { *pSkip = 1; return 0.0; }   /* inexact decode */
    {
        uint64_t v = (uint64_t)(int64_t)x;          /* |x| <= 2^53: exact */
        if (bits < 64) {
            v &= (UINT64_C(1) << bits) - 1;
            if (isSigned && (v >> (bits - 1)))
                return (double)(int64_t)(v | ~((UINT64_C(1) << bits) - 1));
            return (double)v;
        }
        return isSigned ? (double)(int64_t)v : (double)v;
    }
}

static int cast_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    const parity_operand *pX = &pCall->aIn[0];
    double x = pX->aValue[linear], y;
    parity_dtype to = pCall->outDtype;
    int skip = 0;

    if (parity_dtype_is_float(to))
        y = parity_round_double_to_dtype(x, to);
    else if (to == PARITY_DT_BOOL)
        y = x != 0.0 ? 1.0 : 0.0;                   /* NaN != 0: true */
    else
        y = cast_to_int(x, pX->dtype, to, &skip);
    mpfr_set_d(ref, y, MPFR_RNDN);
    /* Undefined in torch (NaN, Inf, out of range to an integer): any value is accepted. */
    *pBound = skip ? INFINITY : 0.0;
    return 0;
}

/* Propagation (ops.h, xPropagate). To a float: the exact value anywhere in the box, rounded,
 * lies within rad + half an ulp of the output at |x| + rad from x, and the reference (x
 * rounded) within half an ulp of x: rad + one ulp. To an integer or bool the cast is a
 * step function: exact only when no step lies in the box, which a radius this side does not
 * check, so vacuous (a capture's integer tensors come from integer ops, radius 0). */
static int cast_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                          mpfr_t ref, double *pRadius)
{
    double x = pCall->aIn[0].aValue[linear], rad = aRad[0][linear], b;
    cast_element(pCall, linear, ref, pRadius);
    if (rad == 0.0) return 0;
    if (!parity_dtype_is_float(pCall->outDtype)) return parity_propagate_vacuous(pCall, pRadius);
    parity_propagate_picked(pCall, x, rad, 0.0, &b);    /* +Inf when vacuous */
    *pRadius = parity_radius_up(b + 0.5 * parity_ulp_at(pCall->outDtype, fabs(x)), 2.0);
    return 0;
}

const parity_op_def parity_op_cast = {
    .zName = "cast",
    .zModel = "exact: round to nearest even into 'to' (integers: truncation); bound 0",
    .nInMin = 1, .nInMax = 1,
    .family = PARITY_FAMILY_CAST,
    .flags = PARITY_OPF_INT_OUTPUT,
    .xPrepare = cast_prepare,
    .xElement = cast_element,
    .xPropagate = cast_propagate,
};
