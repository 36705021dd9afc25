/*
 * float_format.h - the one description of parity's binary floating-point formats.
 *
 * Every fact about how a float dtype encodes its values (field widths, bias, exponent
 * range, largest finite value, whether it has infinities, which patterns are NaN) is
 * written once, in the table of float_format.c, next to the specification it comes from.
 * Everything that needs such a fact reads it from there: decoding and encoding
 * (formats/dtype.c), the capture reader's and writer's HDF5 type layouts
 * (formats/capture_read.c, capture_write.c), MPFR rounding and ulps (tolerance/mpref.c)
 * and the per-dtype default tolerances (tolerance/tolerance.c).
 *
 * Conventions are IEEE 754-2019's (3.3, 3.4): a normal value is (-1)^s * 1.f * 2^e with
 * emin <= e <= emax, stored with exponent field e + bias; the field 0 holds the zeros and
 * the subnormals (-1)^s * 0.f * 2^emin. In these terms e4m3fn has emax = 8, because its
 * exponent field 1111 still holds finite numbers (256 .. 448).
 */
#ifndef PARITY_FLOAT_FORMAT_H
#define PARITY_FLOAT_FORMAT_H

#include "formats/dtype.h"

/* Which bit patterns are not numbers. */
typedef enum {
    /* IEEE 754: exponent field all ones is +-Inf with a zero fraction, NaN otherwise. */
    PARITY_NAN_IEEE,
    /* OCP OFP8 "fn" (finite, NaN): only S.1...1.1...1 is NaN, there is no infinity, and the
     * all-ones exponent field holds finite numbers below that pattern. */
    PARITY_NAN_ALL_ONES_ONLY
} parity_nan_rule;

typedef struct {
    parity_dtype dtype;
    int nBits;              /* storage width: 1 + exponentBits + mantissaBits */
    int exponentBits;
    int mantissaBits;       /* explicit fraction bits */
    int precision;          /* p: significand bits including the implicit one */
    int bias;
    int emin;               /* exponent of the smallest normal: 1 - bias */
    int emax;               /* exponent of the largest finite binade */
    double maxFinite;       /* largest finite value */
    double minNormal;       /* 2^emin */
    double minSubnormal;    /* 2^(emin - mantissaBits) */
    int hasInf;             /* 0: what rounds beyond maxFinite is NaN (e4m3fn) */
    parity_nan_rule nanRule;
} parity_float_format;

/* The table (float_format.c), indexed by dtype; the rows of other dtypes are zero. Read it
 * through parity_float_format_of. */
extern const parity_float_format parity_float_formats[PARITY_DT_COUNT];

/* The format of a float dtype (float64 .. float8_e5m2); NULL for every other dtype. Inline:
 * the judge asks it for every element (through parity_ulp_at). */
static inline const parity_float_format *parity_float_format_of(parity_dtype dt)
{
    /* Unsigned, so a negative value smuggled in through a cast is rejected too; rows left
     * zero by the designated initialisers are the non-float dtypes. */
    if ((unsigned)dt >= (unsigned)PARITY_DT_COUNT || parity_float_formats[dt].nBits == 0)
        return NULL;
    return &parity_float_formats[dt];
}

#endif
