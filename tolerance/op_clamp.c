/*
 * op_clamp.c - clamp(x, min?, max?) and hardtanh(x, min_val = -1, max_val = 1), torch's
 * elementwise clamps with scalar bounds: aten.clamp.default, clamp_min and clamp_max (ops.c's
 * aten aliases: clamp with one bound) and aten.hardtanh.default (relu6 dispatches to it as
 * hardtanh(x, 0, 6)).
 *
 * Semantics, as torch computes them (at::native clamp_scalar_kernel_impl and hardtanh, CPU;
 * checked on torch 1.13 and 2.15):
 *   clamp(x) = min(max(x, lo), hi), an absent bound left out;
 *   NaN x gives NaN (torch tests isnan first; the comparisons alone would drop it);
 *   lo > hi gives hi for every non-NaN x (max first, then min: torch.clamp(x, 2, 1) is 1);
 *   the bounds are rounded to x's dtype before the comparisons (torch casts the Scalar to
 *   scalar_t: clamp(bf16 0.09997, min=0.1) is bf16(0.1) = 0.10009765625, and a float32
 *   tensor compares with float(0.1)), so every result is a value of x's dtype or a rounded
 *   bound. hardtanh is the same function with min_val and max_val; torch 2.15 refuses
 *   min_val > max_val at the call, 1.13 returns max_val, which is what this reference does.
 * A NaN bound is refused: torch 1.13 ignores it (clamp(x, min=nan) is x) and torch 2.15
 * returns NaN everywhere, so no one answer is torch's.
 *
 * Reference and bound: the result is one of the inputs' values, exactly (no arithmetic), so
 * the reference is that value and the bound is 0; where the output dtype is narrower than x
 * (not what torch produces, but a capture may declare it) the one rounding to the output
 * costs half an ulp of it, as for maximum and minimum (op_binary.c). Signed zeros are kept
 * as selected (clamp(-0, min=0) is -0 in torch's scalar path, +0 in a max(lo, x) vector
 * path: only --signed-zeros tells them apart).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/propagate.h"
#include "tolerance/op_unary_internal.h"

/* Reads bound zName (dflt when absent, NAN dflt meaning "no bound": *pValue = absent) into
 * *pValue rounded to dt. 0, or -1 with zErr for a bound that is not a number or is NaN. */
static int clamp_bound(const parity_attr *aAttr, size_t nAttr, const char *zOp,
                       const char *zName, double dflt, double absent, parity_dtype dt,
                       double *pValue, char *zErr, size_t nErr)
{
    char zWhy[PARITY_ERR_LEN];
    int found = 0;
    double v = dflt;
    if (parity_param_float(aAttr, nAttr, zName, &v, &found, zWhy, sizeof zWhy) != 0) {
        snprintf(zErr, nErr, "%s: %s", zOp, zWhy);
        return -1;
    }
    if (found && v != v) {
        snprintf(zErr, nErr, "%s: attribute '%s' is NaN, which torch 1.13 ignores and torch "
                 "2.x propagates: not modelled", zOp, zName);
        return -1;
    }
    *pValue = (found || dflt == dflt) ? parity_round_double_to_dtype(v, dt) : absent;
    return 0;
}

static int clamp_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                         char *zErr, size_t nErr)
{
    const char *zOp = pCall->pDef->zName;
    parity_elementwise_geometry *pG = &pCall->geom.elementwise;
    parity_dtype dt = pCall->aIn[0].dtype;
    int isHardtanh = pCall->pDef == &parity_op_hardtanh;
    if (parity_unary_shape_check(pCall, zErr, nErr) != 0) return -1;
    if (!parity_dtype_is_float(dt)) {
        snprintf(zErr, nErr, "%s: input dtype %s is not a float type", zOp,
                 parity_dtype_name(dt));
        return -1;
    }
    if (clamp_bound(aAttr, nAttr, zOp, isHardtanh ? "min_val" : "min", isHardtanh ? -1.0 : NAN,
                    -INFINITY, dt, &pG->lo, zErr, nErr) != 0 ||
        clamp_bound(aAttr, nAttr, zOp, isHardtanh ? "max_val" : "max", isHardtanh ? 1.0 : NAN,
                    INFINITY, dt, &pG->hi, zErr, nErr) != 0)
        return -1;
    return 0;
}

static int clamp_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    const parity_elementwise_geometry *pG = &pCall->geom.elementwise;
    double x = pCall->aIn[0].aValue[linear], r;

    *pBound = 0.0;
    if (x != x) {
        mpfr_set_nan(ref);
        return 0;
    }
    r = x < pG->lo ? pG->lo : x;      /* max(x, lo), then min(., hi): torch's order */
    r = r > pG->hi ? pG->hi : r;
    mpfr_set_d(ref, r, MPFR_RNDN);
    if (isfinite(r) && parity_round_double_to_dtype(r, pCall->outDtype) != r)
        *pBound = 0.5 * parity_ulp_at(pCall->outDtype, fabs(r));
    return 0;
}

/* Propagation (ops.h, xPropagate): clamp is 1-Lipschitz (as relu). */
static int clamp_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                           mpfr_t ref, double *pRadius)
{
    double b;
    clamp_element(pCall, linear, ref, &b);
    return parity_propagate_picked(pCall, pCall->aIn[0].aValue[linear], aRad[0][linear], b,
                                   pRadius);
}

/* Generated cases: both bounds (-0.5, 0.5), or only max = 0.25 (fuzz/cases/layout.c). */
static const parity_op_case_attr aClampCase[] = {
    { "min", PARITY_ATTR_FLOAT, { -0.5, NAN }, { NULL, NULL } },
    { "max", PARITY_ATTR_FLOAT, { 0.5, 0.25 }, { NULL, NULL } },
};

/* hardtanh: its defaults (-1, 1), or relu6's (0, 6). */
static const parity_op_case_attr aHardtanhCase[] = {
    { "min_val", PARITY_ATTR_FLOAT, { NAN, 0.0 }, { NULL, NULL } },
    { "max_val", PARITY_ATTR_FLOAT, { NAN, 6.0 }, { NULL, NULL } },
};

const parity_op_def parity_op_clamp = {
    .zName = "clamp",
    .zKernel = "max/min",            /* min(max(x, lo), hi) */
    .zModel = "exact: min(max(x, min), max), the bounds rounded to x's dtype as torch casts "
    "them, NaN propagates; only the rounding to the output dtype (0.5 ulp)",
    .nInMin = 1, .nInMax = 1, .family = PARITY_FAMILY_UNARY,
    .aCaseAttr = aClampCase, .nCaseAttr = 2,
    .xPrepare = clamp_prepare, .xElement = clamp_element, .xPropagate = clamp_propagate,
};

const parity_op_def parity_op_hardtanh = {
    .zName = "hardtanh",
    .zKernel = "max/min",
    .zModel = "exact: clamp(x, min_val = -1, max_val = 1) (torch), NaN propagates; only the "
    "rounding to the output dtype (0.5 ulp)",
    .nInMin = 1, .nInMax = 1, .family = PARITY_FAMILY_UNARY,
    .aCaseAttr = aHardtanhCase, .nCaseAttr = 2,
    .xPrepare = clamp_prepare, .xElement = clamp_element, .xPropagate = clamp_propagate,
};
