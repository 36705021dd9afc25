/*
 * propagate.h - what the ops' propagation hooks (ops.h, xPropagate) share: radii rounded
 * up, so that every enclosure they give is an upper bound and never a rounding short.
 *
 * A radius is a sum of a few nonnegative binary64 terms (a reach and a bound). Rounding
 * to nearest errs by at most half an ulp per operation, 2^-53 relative (Higham 2002,
 * Sec. 2.2), and an operation whose result underflows by at most half the smallest
 * subnormal; so k such operations on nonnegative values are at most (1 + 2^-53)^k times
 * too small, plus k half-subnormals. parity_radius_up(v, k) returns v (1 + (k + 2) 2^-52)
 * + k 2^-1074, which covers both for k < 2^40 (gamma_k(2^-53) < (k + 1) 2^-53 there).
 * Every hook passes the count of operations behind its value: a dot product of K terms
 * passes about 3 K, a unary op a handful.
 */
#ifndef PARITY_TOLERANCE_PROPAGATE_H
#define PARITY_TOLERANCE_PROPAGATE_H

#include <math.h>
#include <mpfr.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"   /* PARITY_REF_PREC */

/* v (>= 0, computed with k rounded operations on nonnegative values) made an upper bound
 * of the exact value; +Inf and NaN become +Inf. */
static inline double parity_radius_up(double v, double k)
{
    double r;
    if (!(v < INFINITY)) return INFINITY;
    r = v * (1.0 + (k + 2.0) * 0x1p-52) + k * 0x1p-1074;
    return r;
}

/* The exact |a - b| of an MPFR value and a binary64 one, rounded up to binary64 (NaN and
 * infinities give +Inf). */
static inline double parity_radius_between(mpfr_srcptr a, double b)
{
    MPFR_DECL_INIT(t, PARITY_REF_PREC + 64);
    if (!mpfr_number_p(a) || !isfinite(b)) return INFINITY;
    mpfr_sub_d(t, a, b, MPFR_RNDA);      /* away from 0: |t| >= the exact |a - b| */
    mpfr_abs(t, t, MPFR_RNDN);
    return mpfr_get_d(t, MPFR_RNDU);
}

/* An element the box leaves undetermined: radius +Inf, and the judge takes any value
 * there (overflowPossible and nonfiniteAny, ops.h), counting it vacuous. Returns 0. */
static inline int parity_propagate_vacuous(parity_op_call *pCall, double *pRadius)
{
    *pRadius = INFINITY;
    pCall->overflowPossible = 1;
    pCall->nonfiniteAny = 1;
    return 0;
}

/* Propagation through an op that moves one operand element unchanged (transpose, slice,
 * cat, embedding's weight row): the output's radius is that element's, bound 0. */
static inline int parity_propagate_moved(parity_op_call *pCall, double rad, double *pRadius)
{
    *pRadius = rad;
    return rad < INFINITY ? 0 : parity_propagate_vacuous(pCall, pRadius);
}

/* Propagation through an exact op that picks a value v (radius rad) by a 1-Lipschitz rule
 * and rounds it to the output dtype (relu, clamp, where, a float cast): it moves by at
 * most rad, and its rounding by at most half an ulp of the output at |v| + rad (with
 * rad 0 the op's own bound, boundExact). A box past the output dtype's largest finite may
 * round to infinity: vacuous. */
static inline int parity_propagate_picked(parity_op_call *pCall, double v, double rad,
                                          double boundExact, double *pRadius)
{
    if (rad == 0.0) {
        *pRadius = boundExact;
        return 0;
    }
    if (!isfinite(v) || !(rad < INFINITY) ||
        fabs(v) + rad >= parity_dtype_max_finite(pCall->outDtype))
        return parity_propagate_vacuous(pCall, pRadius);
    *pRadius = parity_radius_up(rad + 0.5 * parity_ulp_at(pCall->outDtype, fabs(v) + rad), 3.0);
    return 0;
}

/* The interval [x - r, x + r] widened outward by one ulp of binary64 at each end, so that
 * it contains the exact interval; r > 0 and finite, x finite. */
static inline void parity_propagate_box(double x, double r, double *pLo, double *pHi)
{
    *pLo = nextafter(x - r, -INFINITY);
    *pHi = nextafter(x + r, INFINITY);
}

#endif
