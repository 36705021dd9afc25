/*
 * dtype.h - the element types parity understands, how their storage bytes decode
 * to binary64, and how their bit patterns map onto ordered integers for ULP distances.
 *
 * Every dtype is decoded exactly: each value of f16, bf16, fp8 and f32 is representable
 * in binary64, and integers up to 2^53 are too (int64/uint64 beyond that round to nearest,
 * which only affects the reported error magnitude, never the exact-equality verdict that
 * integer tensors get: see parity_dtype_is_exact).
 *
 * ULP distance: the bit pattern of a float, read as sign-magnitude, is mapped to a two's
 * complement integer key so that adjacent representable values differ by exactly 1 and
 * +0 and -0 both map to 0 (Bruce Dawson, "Comparing Floating Point Numbers", 2012; the
 * same ordering IEEE 754-2008 5.10 totalOrder uses for finite values). The distance of two
 * finite values is |key(a) - key(b)|. For integer dtypes the "ulp" is 1: the distance is
 * the integer difference. Distances saturate at INT64_MAX (reachable in f64/i64/u64, and by
 * NaNs of opposite sign in any float format; callers keep NaN out of distances).
 */
#ifndef PARITY_DTYPE_H
#define PARITY_DTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    PARITY_DT_INVALID = 0,
    PARITY_DT_F64,
    PARITY_DT_F32,
    PARITY_DT_F16,
    PARITY_DT_BF16,
    PARITY_DT_F8E4M3FN, /* OCP OFP8 E4M3 "fn": no inf, S.1111.111 the only NaN */
    PARITY_DT_F8E5M2,   /* OCP OFP8 E5M2: IEEE-like, inf and NaNs */
    PARITY_DT_I8,
    PARITY_DT_I16,
    PARITY_DT_I32,
    PARITY_DT_I64,
    PARITY_DT_U8,
    PARITY_DT_U16,
    PARITY_DT_U32,
    PARITY_DT_U64,
    PARITY_DT_BOOL,
    PARITY_DT_COUNT
} parity_dtype;

/* Canonical name ("float32", "bfloat16", "float8_e4m3fn", "int8", "bool", ...);
 * "invalid" for out-of-range values. */
const char *parity_dtype_name(parity_dtype dt);

/* Inverse of parity_dtype_name; also accepts the short aliases f64 f32 f16 bf16 fp8_e4m3
 * fp8_e5m2. Returns PARITY_DT_INVALID for unknown names. */
parity_dtype parity_dtype_from_name(const char *zName);

/* Bytes per element in storage (1, 2, 4 or 8); 0 for PARITY_DT_INVALID. */
size_t parity_dtype_size(parity_dtype dt);

/* 1 for floating types (f64 .. f8e5m2: those with a row in float_format.h), 0 otherwise. */
int parity_dtype_is_float(parity_dtype dt);

/* 1 when values must match exactly by default (integers and bool). */
int parity_dtype_is_exact(parity_dtype dt);

/* Smallest positive normal number of a float dtype (its minNormal, float_format.h); 1.0
 * for integer and bool dtypes. Used as the floor of the relative-error denominator so
 * values near zero do not explode. */
double parity_dtype_smallest_normal(parity_dtype dt);

/* Largest finite value of the dtype (as binary64; u64/i64 rounded): a float's maxFinite. */
double parity_dtype_max_finite(parity_dtype dt);

/* Decode n elements of little-endian storage (native layout as read from HDF5 into a
 * native memory type) to binary64. Bool decodes nonzero bytes to 1.0. pDst and pSrc must
 * not overlap (except pDst == pSrc for 8-byte dtypes). */
void parity_decode(parity_dtype dt, const void *pSrc, double *pDst, size_t n);

/* Ordered-integer keys of n elements (see the header comment). For floats NaN gets a key
 * too (beyond the infinities); callers handle NaN before using keys. Integers map to
 * themselves, except uint64, which maps to value - 2^63 (only differences of keys carry
 * meaning). pDst and pSrc must not overlap. */
void parity_ulp_keys(parity_dtype dt, const void *pSrc, int64_t *pKeys, size_t n);

/* The ordered key of a float bit pattern `width` bits wide (64, 32, 16 or 8): sign-magnitude
 * to two's complement without branches or overflow. For a negative pattern s = -1 and
 * (mag ^ -1) - (-1) = -mag, so -0 lands on 0 like +0; mag never exceeds INT64_MAX because
 * the sign bit is masked off. */
static inline int64_t parity_sign_magnitude_key(uint64_t bits, int width)
{
    int64_t s = -(int64_t)((bits >> (width - 1)) & 1);
    int64_t mag = (int64_t)(bits & ((UINT64_C(1) << (width - 1)) - 1));
    return (mag ^ s) - s;
}

/* |a - b| of two keys, saturating at INT64_MAX. Inline: it runs once per differing element.
 * The true |a - b| is at most 2^64 - 1, so the unsigned difference is exact. */
static inline uint64_t parity_ulp_distance(int64_t a, int64_t b)
{
    uint64_t d = a >= b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
    return d > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : d;
}

/* Encode a binary64 into one element of dt with round-to-nearest-even, respecting the
 * dtype's subnormals and overflow rules (f16/bf16/e5m2 overflow to inf as IEEE rounding
 * does; e4m3fn has no inf, so what rounds above 448 becomes NaN, as torch's cast does).
 * Integers round to nearest and clamp. Used by the writer, tests and the fuzzer. */
void parity_encode(parity_dtype dt, double value, void *pDst);
/* value rounded into dt and decoded back (parity_encode then parity_decode), with the
 * float64 and float32 cases done by a cast: the one place "round to this dtype" lives for
 * code that works in binary64 (the fuzzer's kernels and value recipes). */
double parity_dtype_round(parity_dtype dt, double value);

#endif
