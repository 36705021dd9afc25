/*
 * op_unary_internal.h - what the two unary op files share: op_unary.c (the table-driven
 * ops without attributes) and op_unary_param.c (softplus and elu, whose attributes beta,
 * threshold and alpha change their special values and their allowance). Both judge an
 * element the same way: a reference at PARITY_REF_PREC bits, an allowance A in the acc
 * dtype derived in the file's first comment, then the rounding to the output dtype added
 * here, once, by parity_unary_bound.
 */
#ifndef PARITY_TOLERANCE_OP_UNARY_INTERNAL_H
#define PARITY_TOLERANCE_OP_UNARY_INTERNAL_H

#include <stddef.h>
#include <mpfr.h>
#include "tolerance/ops.h"

/* Ulps of acc allowed to a primitive exp, expm1, log, log1p, tanh or erf (c_f): 2x the
 * worst documented float error of glibc's and CUDA's (op_unary.c derives it). */
#define PARITY_UNARY_C_FN 4.0

/* Extra bits carried by the references' composite chains (op_unary.c, "Reference"). */
#define PARITY_UNARY_WORK_EXTRA 64

/* Input 0 and the output have the same shape (parity_op_take_out); else -1 with "<op>:
 * input shape ... differs from output shape ...". */
int parity_unary_shape_check(parity_op_call *pCall, char *zErr, size_t nErr);

/* The bound of an element whose reference is ref (finite; |ref| = absRef, rounded up) and
 * whose kernel is allowed A in the acc dtype: A plus half an ulp of the output at
 * absRef + A, the second term dropped when every acc value is an output value (the acc
 * rounding is then the last one); 0 when A is 0 and ref is representable in the output. */
double parity_unary_bound(const parity_op_call *pCall, mpfr_srcptr ref, double absRef,
                          double a);

/* softplus(z) = log(1 + e^z), evaluated as max(z, 0) + log1p(e^-|z|) (no cancellation: both
 * terms are >= 0; no overflow of e^z) at prec(y) + PARITY_UNARY_WORK_EXTRA bits, rounded
 * once into y. z finite. */
int parity_unary_softplus(mpfr_ptr y, mpfr_srcptr z, mpfr_rnd_t rnd);

/* The same in binary64, for allowances: max(z, 0) + log1p(exp(-|z|)). */
double parity_unary_softplus_d(double z);

/* Over the input box [lo, hi] (finite, lo < hi), an op's reach, an enclosure [*pLo, *pHi]
 * of its exact values there, and *pA, its allowance's largest value there (in the acc
 * dtype, before the rounding to the output dtype). Returns 0, or -1 where it cannot say
 * (a pole, a domain edge, an overflow): the element is then vacuous. */
typedef int (*parity_unary_box_fn)(const parity_op_call *pCall, double lo, double hi,
                                   double *pLo, double *pHi, double *pA);

/* xPropagate (ops.h) of a unary op whose xElement is pCall->pDef's: the element's own
 * reference and bound with radius 0; else the distance from the reference to the reach
 * over the box x +- r, plus the allowance there and the output rounding at the reach's
 * largest magnitude. A non-finite x or reference, or a box xBox refuses, is vacuous. */
int parity_unary_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                           mpfr_t ref, double *pRadius, parity_unary_box_fn xBox);

#endif
