/*
 * mpref.h - high-precision arithmetic helpers for the reference implementations.
 *
 * The references of tolerance/op_*.c compute in MPFR at PARITY_REF_PREC bits (or exactly),
 * then compare eager and compiled outputs against that value. This module gathers what all
 * of them need: unit roundoffs and ulps of every float dtype, rounding an MPFR value to a
 * dtype exactly as an IEEE kernel would (round to nearest even, the format's subnormals,
 * its overflow rule), exact dot products and sums of captured operands, and gamma_n.
 *
 * Precision rule: PARITY_REF_PREC = 128 bits. Every reference is either exact until one
 * final rounding (dot products, sums: the products of two binary64 values are exact at 106
 * bits and mpfr_sum rounds the sum correctly) or a short chain of correctly rounded MPFR
 * operations at 128 bits, so its relative error is below 2^-120, far below the tightest
 * bound any model uses (half an ulp of binary64, 2^-53).
 */
#ifndef PARITY_MPREF_H
#define PARITY_MPREF_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <mpfr.h>
#include "formats/dtype.h"
#include "formats/float_format.h"

#define PARITY_REF_PREC 128

/* Unit roundoff u = 2^-p of a float dtype (p = significand bits incl. the implicit one):
 * f64 2^-53, f32 2^-24, f16 2^-11, bf16 2^-8, e4m3fn 2^-4, e5m2 2^-3. 0 for non-floats. */
double parity_unit_roundoff(parity_dtype dt);

/* gamma_n = n u / (1 - n u) (Higham, Accuracy and Stability of Numerical Algorithms, 2nd
 * ed., 2002, Lemma 3.1); +Inf when n u >= 1 (no bound). */
double parity_gamma(double n, double u);

/* The probabilistic counterpart of gamma_n (Higham & Mary, "A new approach to probabilistic
 * rounding error analysis", SIAM J. Sci. Comput. 41(5), 2019, Theorem 2.4): with rounding
 * errors modelled as independent, mean-zero random variables, a sum or dot product of n
 * terms satisfies |error| <= gamma~_n(lambda) sum |terms| with probability at least
 * 1 - 2n exp(-lambda^2 (1 - u)^2 / 2), where
 *     gamma~_n(lambda) = exp(lambda sqrt(n) u + n u^2 / (1 - u)) - 1.
 * PARITY_DEFAULT_LAMBDA = 8 makes that failure probability at most 2n e^-32, about 2.5e-14 n.
 * Structured data (constant rows, exact cancellation) breaks the independence assumption,
 * which is why this bound only marks elements "suspicious" unless the tolerance file makes
 * it decide. Rounded up. */
#define PARITY_DEFAULT_LAMBDA 8.0
double parity_gamma_prob(double n, double u, double lambda);

/* The spacing of dt's representable numbers at |x|: 2^(e - p + 1) for |x| in [2^e, 2^(e+1))
 * clamped below at the smallest subnormal; for |x| beyond the largest finite value, the
 * spacing at the largest finite value. x may be 0 (gives the smallest subnormal). Inline:
 * the fast path asks it several times an element (it was a tenth of a transformer's
 * judgement as a call), so no frexp/ldexp calls where bits will do. */
static inline double parity_ulp_at(parity_dtype dt, double x)
{
    const parity_float_format *pF = parity_float_format_of(dt);
    double ax = fabs(x);
    int e;
    if (pF == NULL)
        return parity_dtype_is_exact(dt) ? 1.0 : NAN; /* integers are 1 apart */
    if (isnan(x))
        return NAN;
    if (isinf(ax)) {
        e = pF->emax;
    } else if (ax == 0.0) {
        e = pF->emin;
    } else {
        uint64_t bits;
        memcpy(&bits, &ax, sizeof bits);
        if ((bits >> 52) != 0) {
            e = (int)(bits >> 52) - 1023;   /* ax in [2^e, 2^(e+1)) */
        } else {
            int k;
            frexp(ax, &k); /* ax = m 2^k, m in [0.5, 1): ax in [2^(k-1), 2^k) */
            e = k - 1;
        }
    }
    if (e > pF->emax)
        e = pF->emax;
    if (e < pF->emin)
        e = pF->emin; /* subnormals share the lowest normal binade's spacing */
    e = e - pF->precision + 1;
    if (e >= -1022 && e <= 1023) {
        uint64_t bits = (uint64_t)(e + 1023) << 52;
        double r;
        memcpy(&r, &bits, sizeof r);
        return r;
    }
    return ldexp(1.0, e);
}

/* Rounds the MPFR value x to dt exactly as an IEEE kernel producing dt would, with round to
 * nearest even, and returns the result as a binary64 (every dt value is one): respects the
 * format's subnormals (via mpfr_subnormalize with the format's emin/emax, restored after
 * use), overflows to +-Inf for f64/f32/f16/bf16/e5m2, and to NaN for e4m3fn (no infinity:
 * values that round above 448 become NaN, as torch's cast does). NaN stays NaN. Integer
 * dtypes round to nearest even and clamp. Thread-safe (MPFR's exponent range is per
 * thread in Debian's build, and is restored). */
double parity_round_to_dtype(const mpfr_t x, parity_dtype dt);

/* The same for a binary64 input (convenience). */
double parity_round_double_to_dtype(double x, parity_dtype dt);

/* Exact dot product: r = sum_i a[i * strideA] * b[i * strideB] (+ bias when pBias != NULL),
 * all binary64 inputs (decoded captures), correctly rounded to r's precision. Also returns
 * in *pAbsSum the binary64 value (rounded up) of sum |a_i b_i| (+ |bias|), the quantity the
 * error models scale with. Returns 0, or -1 when memory runs out. Non-finite inputs give a
 * NaN/Inf result following IEEE rules (Inf * 0 = NaN, Inf - Inf = NaN). */
int parity_exact_dot(mpfr_t r, const double *a, size_t strideA, const double *b,
                     size_t strideB, size_t n, const double *pBias, double *pAbsSum);

/* Exact sum of n binary64 values (stride apart), correctly rounded to r's precision;
 * *pAbsSum as above (may be NULL). */
int parity_exact_sum(mpfr_t r, const double *a, size_t stride, size_t n, double *pAbsSum);

#endif
