/*
 * float_format.c - the table of parity's float formats (see float_format.h), with sources.
 *
 *   float64, float32, float16: IEEE 754-2019, 3.6 Table 3.5 (binary64: p = 53, emax = 1023;
 *     binary32: p = 24, emax = 127; binary16: p = 11, emax = 15), bias = emax and
 *     emin = 1 - emax (3.3, 3.4); subnormals, +-Inf and NaNs (3.4).
 *   bfloat16: the top 16 bits of binary32 (Intel, "BFLOAT16 - Hardware Numerics
 *     Definition", rev. 1.0, 2018): binary32's 8 exponent bits and bias 127 with 7 fraction
 *     bits, so p = 8, max (2 - 2^-7) * 2^127; IEEE subnormals, Inf and NaN.
 *   float8_e4m3fn: OCP 8-bit Floating Point Specification (OFP8), rev. 1.0, 2023, 5.1 E4M3:
 *     bias 7, no infinities, S.1111.111 the only NaNs, so exponent field 1111 still holds
 *     normal numbers (binade 2^8: 256 .. 448) and the max finite is S.1111.110 = 448;
 *     subnormals down to 2^-9.
 *   float8_e5m2: the same OFP8 spec, 5.1 E5M2: bias 15, IEEE conventions (Inf S.11111.00,
 *     NaN S.11111.{01, 10, 11}), max 57344 = 1.75 * 2^15, subnormals down to 2^-16.
 *
 * The derived columns (precision, emin, minNormal, minSubnormal, maxFinite) are written out
 * rather than computed, so each row reads like the spec's own table; tests/test_dtype.c
 * checks every row against the relations in float_format.h and against values it writes
 * from the specs itself.
 */
#include <stddef.h>
#include "formats/float_format.h"

const parity_float_format parity_float_formats[PARITY_DT_COUNT] = {
    /* dtype, nBits, exponentBits, mantissaBits, precision, bias, emin, emax;
     * maxFinite, minNormal, minSubnormal, hasInf, nanRule */
    [PARITY_DT_F64] = { PARITY_DT_F64, 64, 11, 52, 53, 1023, -1022, 1023,
                        0x1.fffffffffffffp+1023, 0x1p-1022, 0x1p-1074, 1, PARITY_NAN_IEEE },
    [PARITY_DT_F32] = { PARITY_DT_F32, 32, 8, 23, 24, 127, -126, 127,
                        0x1.fffffep+127, 0x1p-126, 0x1p-149, 1, PARITY_NAN_IEEE },
    [PARITY_DT_F16] = { PARITY_DT_F16, 16, 5, 10, 11, 15, -14, 15,
                        0x1.ffcp+15 /* 65504 */, 0x1p-14, 0x1p-24, 1, PARITY_NAN_IEEE },
    [PARITY_DT_BF16] = { PARITY_DT_BF16, 16, 8, 7, 8, 127, -126, 127,
                         0x1.fep+127, 0x1p-126, 0x1p-133, 1, PARITY_NAN_IEEE },
    [PARITY_DT_F8E4M3FN] = { PARITY_DT_F8E4M3FN, 8, 4, 3, 4, 7, -6, 8,
                             0x1.cp+8 /* 448 */, 0x1p-6, 0x1p-9, 0, PARITY_NAN_ALL_ONES_ONLY },
    [PARITY_DT_F8E5M2] = { PARITY_DT_F8E5M2, 8, 5, 2, 3, 15, -14, 15,
                           0x1.cp+15 /* 57344 */, 0x1p-14, 0x1p-16, 1, PARITY_NAN_IEEE },
};
