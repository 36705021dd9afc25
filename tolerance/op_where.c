/*
 * op_where.c - the elementwise selections by a bool operand, with torch broadcasting:
 *   where(cond, x, y)          out = cond ? x : y       (aten.where.self)
 *   masked_fill(x, mask, v)    out = mask ? v : x       (aten.masked_fill.Scalar: v the
 *                               'value' attribute; masked_fill.Tensor: v a 0-d input 2)
 * All operands broadcast together (right-aligned, equal or 1, as op_binary.c): torch's
 * out-of-place masked_fill expands x and mask to their common shape (a [3] x under a [2, 3]
 * mask gives [2, 3]; checked on torch 1.13 and 2.15), and where broadcasts all three. A
 * Python number torch.where takes becomes a 0-d operand (torch 1.13 and 2.15 dispatch
 * scalar_tensor, then where.self), as in the capture.
 *
 * The bool operand (cond, mask) must be a bool or uint8 tensor: torch's masked_fill
 * refuses any other mask dtype, and where takes uint8 (deprecated) and bool; a capture
 * stores bool as HDF5 bool, or as uint8 where it was written so. Its values reach the op as
 * doubles; nonzero is true. The others must be float tensors. masked_fill's scalar value is
 * rounded to x's dtype first, as torch casts it (a bfloat16 x filled with 0.1 holds
 * 0.10009765625).
 *
 * Reference and bound: the result is one operand's value, copied (no arithmetic): the
 * reference is that value, NaN included (a NaN in the branch not taken does not matter),
 * and the bound 0; where the output dtype is narrower than the selected operand (a float64
 * y in a float32 where, which torch would promote, but a capture may declare) the one
 * rounding to the output costs half an ulp of it, as for maximum and minimum (op_binary.c).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/propagate.h"

/* Which input is the bool operand, x and y (masked_fill: x, the mask, the value operand or
 * -1), for pDef. */
static void where_roles(const parity_op_def *pDef, size_t nIn, int *piC, int *piX, int *piY)
{
    if (pDef == &parity_op_where) { *piC = 0; *piX = 1; *piY = 2; return; }
    *piX = 0;
    *piC = 1;
    *piY = nIn > 2 ? 2 : -1;
}

static int where_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                         char *zErr, size_t nErr)
{
    const char *zOp = pCall->pDef->zName;
    parity_elementwise_geometry *pG = &pCall->geom.elementwise;
    int anRank[3], iC, iX, iY, nOut, iBad, i;
    const uint64_t *aapDim[3];
    uint64_t aWant[PARITY_MAX_RANK];
    char zA[256], zB[256];

    where_roles(pCall->pDef, pCall->nIn, &iC, &iX, &iY);
    if (pCall->aIn[iC].dtype != PARITY_DT_BOOL && pCall->aIn[iC].dtype != PARITY_DT_U8) {
        snprintf(zErr, nErr, "%s: %s '%s' is %s; torch takes a bool tensor", zOp,
                 iC == 0 ? "condition" : "mask", pCall->aIn[iC].zName ? pCall->aIn[iC].zName : "?",
                 parity_dtype_name(pCall->aIn[iC].dtype));
        return -1;
    }
    for (i = 0; i < (int)pCall->nIn; i++)
        if (i != iC && !parity_dtype_is_float(pCall->aIn[i].dtype)) {
            snprintf(zErr, nErr, "%s: input %d is %s, not a float type", zOp, i,
                     parity_dtype_name(pCall->aIn[i].dtype));
            return -1;
        }
    pG->hasFillOperand = pCall->pDef == &parity_op_masked_fill && iY >= 0;
    if (pCall->pDef == &parity_op_masked_fill) {
        int found = 0;
        double v = NAN;
        if (pG->hasFillOperand && pCall->aIn[iY].rank != 0) {
            snprintf(zErr, nErr, "masked_fill: the value operand has rank %d; torch takes a "
                     "0-dimensional value tensor", pCall->aIn[iY].rank);
            return -1;
        }
        if (parity_param_float(aAttr, nAttr, "value", &v, &found, zA, sizeof zA) != 0) {
            snprintf(zErr, nErr, "masked_fill: %s", zA);
            return -1;
        }
        if (found == pG->hasFillOperand) {
            snprintf(zErr, nErr, "masked_fill: %s", found ? "both a 'value' attribute and a "
                     "value operand" : "no 'value' attribute and no value operand");
            return -1;
        }
        pG->fill = parity_round_double_to_dtype(v, pCall->aIn[iX].dtype);   /* torch's cast */
    }

    for (i = 0; i < (int)pCall->nIn; i++) {
        anRank[i] = pCall->aIn[i].rank;
        aapDim[i] = pCall->aIn[i].aDim;
    }
    nOut = parity_broadcast_shape((int)pCall->nIn, anRank, aapDim, aWant, &iBad);
    if (nOut < 0) {
        snprintf(zErr, nErr, "%s: operand shapes do not broadcast (dim %d of the result)", zOp,
                 iBad);
        return -1;
    }
    if (!parity_op_take_out(pCall, nOut, aWant)) {
        snprintf(zErr, nErr, "%s: operands broadcast to %s, output has %s", zOp,
                 parity_shape_str(nOut, aWant, zA, sizeof zA),
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zB, sizeof zB));
        return -1;
    }
    /* the shapes broadcast (checked above): these cannot fail */
    parity_broadcast_strides(nOut, aWant, pCall->aIn[iC].aDim, pCall->aIn[iC].rank, 1,
                             pG->aStrideC);
    parity_broadcast_strides(nOut, aWant, pCall->aIn[iX].aDim, pCall->aIn[iX].rank, 1,
                             pG->aStrideX);
    if (iY >= 0)
        parity_broadcast_strides(nOut, aWant, pCall->aIn[iY].aDim, pCall->aIn[iY].rank, 1,
                                 pG->aStrideY);
    else
        memset(pG->aStrideY, 0, sizeof pG->aStrideY);
    return 0;
}

/* The value output element `linear` picks: from operand *piPicked at *pOff, or the fill
 * attribute (*piPicked -1); *pOffC is the condition's element. */
static double where_pick(const parity_op_call *pCall, uint64_t linear, int *piPicked,
                         uint64_t *pOff, uint64_t *pOffC)
{
    const parity_elementwise_geometry *pG = &pCall->geom.elementwise;
    uint64_t offC = 0, offX = 0, offY = 0, rest = linear;
    int iC, iX, iY, d, pick;

    where_roles(pCall->pDef, pCall->nIn, &iC, &iX, &iY);
    for (d = pCall->outRank - 1; d >= 0; d--) {
        uint64_t idx = rest % pCall->aOutDim[d];
        rest /= pCall->aOutDim[d];
        offC += idx * pG->aStrideC[d];
        offX += idx * pG->aStrideX[d];
        offY += idx * pG->aStrideY[d];
    }
    *pOffC = offC;
    pick = pCall->aIn[iC].aValue[offC] != 0.0;
    if (pCall->pDef == &parity_op_where) {
        *piPicked = pick ? iX : iY;
        *pOff = pick ? offX : offY;
    } else if (!pick) {
        *piPicked = iX;
        *pOff = offX;
    } else if (pG->hasFillOperand) {
        *piPicked = iY;
        *pOff = offY;
    } else {
        *piPicked = -1;
        *pOff = 0;
        return pG->fill;
    }
    return pCall->aIn[*piPicked].aValue[*pOff];
}

static int where_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    int iPicked;
    uint64_t off, offC;
    double r = where_pick(pCall, linear, &iPicked, &off, &offC);
    mpfr_set_d(ref, r, MPFR_RNDN);
    *pBound = (!isfinite(r) || parity_round_double_to_dtype(r, pCall->outDtype) == r)
                  ? 0.0 : 0.5 * parity_ulp_at(pCall->outDtype, fabs(r));
    return 0;
}

/* Propagation (ops.h, xPropagate): the picked value moves with its radius, then the one
 * rounding to the output; a condition that is not exact could pick the other: vacuous. */
static int where_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                           mpfr_t ref, double *pRadius)
{
    int iPicked, iC, iX, iY;
    uint64_t off, offC;
    double b, r = where_pick(pCall, linear, &iPicked, &off, &offC);
    where_element(pCall, linear, ref, &b);
    where_roles(pCall->pDef, pCall->nIn, &iC, &iX, &iY);
    if (aRad[iC][offC] != 0.0) return parity_propagate_vacuous(pCall, pRadius);
    return parity_propagate_picked(pCall, r, iPicked < 0 ? 0.0 : aRad[iPicked][off], b, pRadius);
}

/* Generated cases: fill with -Inf (attention masks) or 0.5 (fuzz/cases/layout.c). */
static const parity_op_case_attr aFillCase[] = {
    { "value", PARITY_ATTR_FLOAT, { -INFINITY, 0.5 }, { NULL, NULL } },
};

const parity_op_def parity_op_masked_fill = {
    .zName = "masked_fill",
    .zModel = "exact: mask ? value : x (value rounded to x's dtype as torch casts it), "
    "broadcast; only the rounding to the output dtype (0.5 ulp)",
    .nInMin = 2, .nInMax = 3, .family = PARITY_FAMILY_WHERE,
    .aCaseAttr = aFillCase, .nCaseAttr = 1,
    .xPrepare = where_prepare, .xElement = where_element, .xPropagate = where_propagate,
};

const parity_op_def parity_op_where = {
    .zName = "where",
    .zModel = "exact: cond ? x : y, broadcast; only the rounding to the output dtype (0.5 ulp)",
    .nInMin = 3, .nInMax = 3, .family = PARITY_FAMILY_WHERE,
    .xPrepare = where_prepare, .xElement = where_element, .xPropagate = where_propagate,
};
