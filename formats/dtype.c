/*
 * dtype.c - decoding, ordering and encoding of the element types parity compares.
 *
 * Captures hold f16/bf16/fp8 tensors as raw bit patterns, so parity must decode them
 * itself, bit-exactly, and must measure differences in units of the tensor's own format.
 * The formats' field widths, biases, ranges and NaN rules are the table of float_format.c,
 * with their sources (IEEE 754-2019, bfloat16, OCP OFP8 rev. 1.0). The one that needs care
 * is float8_e4m3fn: no infinities, and the only NaNs are S.1111.111, so exponent 1111
 * still holds normal numbers and the max finite is S.1111.110 = 448. A generic IEEE-style
 * conversion (e.g. HDF5 converting a 1.4.3 custom float type) reads exponent 1111 as
 * inf/NaN and gets 0x78..0x7E wrong: that is why parity decodes fp8 itself.
 * Every small format goes through one generic description (its parity_float_format) and
 * one rounding routine, so the formats cannot drift apart in their corner cases.
 */
#include "formats/dtype.h"
#include "formats/float_format.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

/* ---------------------------------------------------------------------------------- */
/* Names and properties                                                               */

static const char *const g_azName[PARITY_DT_COUNT] = {
    [PARITY_DT_INVALID] = "invalid",
    [PARITY_DT_F64] = "float64",
    [PARITY_DT_F32] = "float32",
    [PARITY_DT_F16] = "float16",
    [PARITY_DT_BF16] = "bfloat16",
    [PARITY_DT_F8E4M3FN] = "float8_e4m3fn",
    [PARITY_DT_F8E5M2] = "float8_e5m2",
    [PARITY_DT_I8] = "int8",
    [PARITY_DT_I16] = "int16",
    [PARITY_DT_I32] = "int32",
    [PARITY_DT_I64] = "int64",
    [PARITY_DT_U8] = "uint8",
    [PARITY_DT_U16] = "uint16",
    [PARITY_DT_U32] = "uint32",
    [PARITY_DT_U64] = "uint64",
    [PARITY_DT_BOOL] = "bool",
};

static const struct {
    const char *zAlias;
    parity_dtype dt;
} g_aAlias[] = {
    {"f64", PARITY_DT_F64},           {"double", PARITY_DT_F64},
    {"f32", PARITY_DT_F32},           {"float", PARITY_DT_F32},
    {"f16", PARITY_DT_F16},           {"half", PARITY_DT_F16},
    {"bf16", PARITY_DT_BF16},         {"fp8_e4m3", PARITY_DT_F8E4M3FN},
    {"fp8_e4m3fn", PARITY_DT_F8E4M3FN}, {"fp8_e5m2", PARITY_DT_F8E5M2},
};

static int dt_valid(parity_dtype dt)
{
    /* Compare as unsigned so a negative value smuggled in through a cast is rejected too. */
    return (unsigned)dt > (unsigned)PARITY_DT_INVALID && (unsigned)dt < (unsigned)PARITY_DT_COUNT;
}

const char *parity_dtype_name(parity_dtype dt)
{
    return dt_valid(dt) ? g_azName[dt] : g_azName[PARITY_DT_INVALID];
}

parity_dtype parity_dtype_from_name(const char *zName)
{
    if (zName == NULL)
        return PARITY_DT_INVALID;
    /* Case-sensitive on purpose: names come from capture attributes written by code, and
     * "invalid" must not round-trip into a dtype. */
    for (int i = PARITY_DT_INVALID + 1; i < PARITY_DT_COUNT; i++)
        if (strcmp(zName, g_azName[i]) == 0)
            return (parity_dtype)i;
    for (size_t i = 0; i < sizeof(g_aAlias) / sizeof(g_aAlias[0]); i++)
        if (strcmp(zName, g_aAlias[i].zAlias) == 0)
            return g_aAlias[i].dt;
    return PARITY_DT_INVALID;
}

size_t parity_dtype_size(parity_dtype dt)
{
    const parity_float_format *pF = parity_float_format_of(dt);
    if (pF != NULL)
        return (size_t)pF->nBits / 8;
    switch (dt) {
    case PARITY_DT_I64: case PARITY_DT_U64: return 8;
    case PARITY_DT_I32: case PARITY_DT_U32: return 4;
    case PARITY_DT_I16: case PARITY_DT_U16: return 2;
    case PARITY_DT_I8: case PARITY_DT_U8: case PARITY_DT_BOOL: return 1;
    default: return 0;
    }
}

int parity_dtype_is_float(parity_dtype dt)
{
    return parity_float_format_of(dt) != NULL;
}

int parity_dtype_is_exact(parity_dtype dt)
{
    return dt >= PARITY_DT_I8 && dt <= PARITY_DT_BOOL;
}

double parity_dtype_smallest_normal(parity_dtype dt)
{
    const parity_float_format *pF = parity_float_format_of(dt);
    /* 1.0 for integers and bool; also INVALID, so a stray caller never divides by 0 */
    return pF != NULL ? pF->minNormal : 1.0;
}

double parity_dtype_max_finite(parity_dtype dt)
{
    const parity_float_format *pF = parity_float_format_of(dt);
    if (pF != NULL)
        return pF->maxFinite;
    switch (dt) {
    case PARITY_DT_I8: return INT8_MAX;
    case PARITY_DT_I16: return INT16_MAX;
    case PARITY_DT_I32: return INT32_MAX;
    case PARITY_DT_I64: return 0x1p63; /* INT64_MAX rounded to nearest binary64 */
    case PARITY_DT_U8: return UINT8_MAX;
    case PARITY_DT_U16: return UINT16_MAX;
    case PARITY_DT_U32: return UINT32_MAX;
    case PARITY_DT_U64: return 0x1p64; /* UINT64_MAX rounded to nearest binary64 */
    case PARITY_DT_BOOL: return 1.0;
    default: return 0.0;
    }
}

/* ---------------------------------------------------------------------------------- */
/* Generic small binary float formats                                                 */

/* The routines below take the format's row of the float table (float_format.h): field
 * widths, bias, emin and the NaN rule are all they need. */

/* 1: exponent all-ones is inf/NaN (IEEE); 0: only S.1..1.1..1 is NaN (OFP8 "fn") */
static int fmt_ieee(const parity_float_format *f)
{
    return f->nanRule == PARITY_NAN_IEEE;
}

#define F64_SIGN UINT64_C(0x8000000000000000)
#define F64_FRAC_MASK UINT64_C(0x000FFFFFFFFFFFFF)
#define F64_QNAN UINT64_C(0x7FF8000000000000)

static double bits_to_f64(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static uint64_t f64_to_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* Largest finite magnitude pattern; everything above it is inf or NaN. */
static uint64_t fmt_max_bits(const parity_float_format *f)
{
    uint64_t all = (UINT64_C(1) << (f->exponentBits + f->mantissaBits)) - 1;
    if (fmt_ieee(f))
        return all - (UINT64_C(1) << f->mantissaBits); /* exponent all-ones minus one,
                                                        * fraction all-ones */
    return all - 1;                                     /* only the all-ones pattern is NaN */
}

static uint64_t fmt_nan_bits(const parity_float_format *f)
{
    uint64_t expAll = ((UINT64_C(1) << f->exponentBits) - 1) << f->mantissaBits;
    if (fmt_ieee(f))
        return expAll | (UINT64_C(1) << (f->mantissaBits - 1)); /* quiet: top fraction bit set */
    return expAll | ((UINT64_C(1) << f->mantissaBits) - 1);
}

/* What a too-large magnitude becomes: inf where the format has one; e4m3fn has none and
 * saturating would not be IEEE, so NaN, as torch's non-saturating cast does. */
static uint64_t fmt_overflow_bits(const parity_float_format *f)
{
    if (fmt_ieee(f))
        return ((UINT64_C(1) << f->exponentBits) - 1) << f->mantissaBits;
    return fmt_nan_bits(f);
}

/* Decodes one pattern by building the binary64 bits directly, so the result is exact
 * without relying on libm; the tests check it against an ldexp formula. */
static double fmt_decode(const parity_float_format *f, uint64_t bits)
{
    const int m = f->mantissaBits;
    const uint64_t fracMask = (UINT64_C(1) << m) - 1;
    const uint64_t expAll = (UINT64_C(1) << f->exponentBits) - 1;
    uint64_t sign = ((bits >> (f->exponentBits + m)) & 1) ? F64_SIGN : 0;
    uint64_t frac = bits & fracMask;
    uint64_t ef = (bits >> m) & expAll;

    if (fmt_ieee(f) ? ef == expAll : (ef == expAll && frac == fracMask)) {
        if (fmt_ieee(f) && frac == 0)
            return bits_to_f64(sign | UINT64_C(0x7FF0000000000000));
        /* Keep the payload for debugging, but always quiet so arithmetic never traps. */
        return bits_to_f64(sign | F64_QNAN | (frac << (52 - m)));
    }
    if (ef == 0) {
        if (frac == 0)
            return bits_to_f64(sign);
        /* Subnormal: value = frac * 2^(emin - m); renormalise on the leading bit. */
        int h = 63 - __builtin_clzll(frac);
        int64_t e = (int64_t)f->emin - (m - h);
        uint64_t mant = (frac - (UINT64_C(1) << h)) << (52 - h);
        return bits_to_f64(sign | ((uint64_t)(e + 1023) << 52) | mant);
    }
    int64_t e = (int64_t)ef - f->bias;
    return bits_to_f64(sign | ((uint64_t)(e + 1023) << 52) | (frac << (52 - m)));
}

/* Rounds a binary64 to the format with round-to-nearest-even and returns its bit pattern.
 * The value is taken as sig * 2^e2 (exact integers), the quantum of the target at the
 * value's binade (clamped at emin, which is what makes subnormals come out right) is
 * 2^q, and sig is shifted right by q - e2 with an explicit RNE on the dropped bits. A carry
 * out of the fraction simply increments the exponent field, because the pattern is built
 * as ((exponent field - 1) << m) + significand; for subnormals that field is 0 and the
 * significand (at most 2^m) lands in the fraction or, on carry, in the smallest normal. */
static uint64_t fmt_encode(const parity_float_format *f, double x)
{
    const int m = f->mantissaBits;
    const int emin = f->emin;
    const uint64_t signBit = UINT64_C(1) << (f->exponentBits + m);
    uint64_t u = f64_to_bits(x);
    uint64_t sign = (u & F64_SIGN) ? signBit : 0;
    uint64_t de = (u >> 52) & 0x7FF;
    uint64_t df = u & F64_FRAC_MASK;

    if (de == 0x7FF)
        return sign | (df != 0 ? fmt_nan_bits(f) : fmt_overflow_bits(f));
    if (de == 0 && df == 0)
        return sign;

    uint64_t sig;
    int e2, E; /* x = sig * 2^e2, 2^E <= |x| < 2^(E+1) */
    if (de == 0) {
        sig = df;
        e2 = -1074;
        E = (63 - __builtin_clzll(df)) - 1074;
    } else {
        sig = df | (UINT64_C(1) << 52);
        e2 = (int)de - 1075;
        E = (int)de - 1023;
    }
    int Eq = E < emin ? emin : E;
    int shift = (Eq - m) - e2; /* > 0: every format here is narrower than binary64 */
    uint64_t n;
    if (shift >= 64) {
        n = 0; /* sig < 2^53, so |x| is below a quarter of the smallest subnormal */
    } else if (shift <= 0) {
        n = sig; /* unreachable: only a format as wide as binary64 would get here */
    } else {
        uint64_t rem = sig & ((UINT64_C(1) << shift) - 1);
        uint64_t half = UINT64_C(1) << (shift - 1);
        n = sig >> shift;
        if (rem > half || (rem == half && (n & 1)))
            n++;
    }
    /* Eq + bias - 1 >= 0 since Eq >= emin, and the shift cannot overflow for E <= 1023;
     * the carry of n past the largest finite pattern is what makes RNE overflow at
     * max + half an ulp. */
    uint64_t mag = ((uint64_t)(Eq + f->bias - 1) << m) + n;
    if (mag > fmt_max_bits(f))
        return sign | fmt_overflow_bits(f);
    return sign | mag;
}

/* ---------------------------------------------------------------------------------- */
/* Lookup tables                                                                      */

/* float, not double: every binary16 value is exact in binary32 and 256 KiB stays in L2
 * where 512 KiB often would not. */
static float g_afF16[65536];
static double g_adE4M3FN[256];
static double g_adE5M2[256];
static pthread_once_t g_tablesOnce = PTHREAD_ONCE_INIT;

static void tables_build(void)
{
    for (uint32_t i = 0; i < 65536; i++)
        g_afF16[i] = (float)fmt_decode(parity_float_format_of(PARITY_DT_F16), i);
    for (uint32_t i = 0; i < 256; i++) {
        g_adE4M3FN[i] = fmt_decode(parity_float_format_of(PARITY_DT_F8E4M3FN), i);
        g_adE5M2[i] = fmt_decode(parity_float_format_of(PARITY_DT_F8E5M2), i);
    }
}

static void tables_init(void)
{
    pthread_once(&g_tablesOnce, tables_build);
}

/* ---------------------------------------------------------------------------------- */
/* Element kernels                                                                    */

/* One element each. memcpy loads because storage buffers need not be aligned for the
 * element type; GCC turns the fixed-size memcpy into a plain load. */
#define DEFINE_LOAD(T)                                  \
    static inline T ld_##T(const unsigned char *p)      \
    {                                                   \
        T v;                                            \
        memcpy(&v, p, sizeof v);                        \
        return v;                                       \
    }
DEFINE_LOAD(float)
DEFINE_LOAD(int8_t)
DEFINE_LOAD(int16_t)
DEFINE_LOAD(int32_t)
DEFINE_LOAD(int64_t)
DEFINE_LOAD(uint16_t)
DEFINE_LOAD(uint32_t)
DEFINE_LOAD(uint64_t)

static inline double dec_f32(const unsigned char *p) { return ld_float(p); }
static inline double dec_bf16(const unsigned char *p)
{
    float f;
    uint32_t w = (uint32_t)ld_uint16_t(p) << 16;
    memcpy(&f, &w, 4);
    return f;
}
static inline double dec_f16(const unsigned char *p) { return g_afF16[ld_uint16_t(p)]; }
static inline double dec_e4m3fn(const unsigned char *p) { return g_adE4M3FN[*p]; }
static inline double dec_e5m2(const unsigned char *p) { return g_adE5M2[*p]; }
static inline double dec_i8(const unsigned char *p) { return ld_int8_t(p); }
static inline double dec_i16(const unsigned char *p) { return ld_int16_t(p); }
static inline double dec_i32(const unsigned char *p) { return ld_int32_t(p); }
static inline double dec_i64(const unsigned char *p) { return (double)ld_int64_t(p); }
static inline double dec_u8(const unsigned char *p) { return *p; }
static inline double dec_u16(const unsigned char *p) { return ld_uint16_t(p); }
static inline double dec_u32(const unsigned char *p) { return ld_uint32_t(p); }
static inline double dec_u64(const unsigned char *p) { return (double)ld_uint64_t(p); }
static inline double dec_bool(const unsigned char *p) { return *p ? 1.0 : 0.0; }

/* The ordering itself is parity_sign_magnitude_key (dtype.h), shared with the judge's
 * float32 fast path. */
#define sm_key parity_sign_magnitude_key

static inline int64_t key_f64(const unsigned char *p) { return sm_key(ld_uint64_t(p), 64); }
static inline int64_t key_f32(const unsigned char *p) { return sm_key(ld_uint32_t(p), 32); }
static inline int64_t key_b16(const unsigned char *p) { return sm_key(ld_uint16_t(p), 16); }
static inline int64_t key_b8(const unsigned char *p) { return sm_key(*p, 8); }
static inline int64_t key_i8(const unsigned char *p) { return ld_int8_t(p); }
static inline int64_t key_i16(const unsigned char *p) { return ld_int16_t(p); }
static inline int64_t key_i32(const unsigned char *p) { return ld_int32_t(p); }
static inline int64_t key_i64(const unsigned char *p) { return ld_int64_t(p); }
static inline int64_t key_u8(const unsigned char *p) { return *p; }
static inline int64_t key_u16(const unsigned char *p) { return ld_uint16_t(p); }
static inline int64_t key_u32(const unsigned char *p) { return ld_uint32_t(p); }
static inline int64_t key_u64(const unsigned char *p)
{
    /* v - 2^63: order- and difference-preserving over the whole uint64 range (a clamp at
     * INT64_MAX would put every large value 0 apart). Flipping the top bit is that
     * subtraction, computed without signed overflow. */
    uint64_t v = ld_uint64_t(p) ^ (UINT64_C(1) << 63);
    int64_t key;
    memcpy(&key, &v, sizeof key);
    return key;
}
static inline int64_t key_bool(const unsigned char *p) { return *p != 0; }

/* Array drivers. These run over GiB of data, so the non-overlapping case gets restrict
 * pointers and fixed blocks of 8: GCC's -O2 cost model ("very cheap") vectorises neither
 * a loop of unknown trip count nor one that needs a runtime alias check, but it does
 * vectorise the constant-count inner loop. The header does not forbid pDst == pSrc (it
 * makes sense for 8-byte elements), so overlapping buffers take the plain loop instead. */
#define DEFINE_ARRAY(NAME, OUT_T, SIZE, ELEM)                                            \
    static void NAME##_fast(const unsigned char *restrict pS, OUT_T *restrict pD, size_t n) \
    {                                                                                     \
        size_t i = 0;                                                                     \
        for (; i + 8 <= n; i += 8)                                                        \
            for (size_t j = 0; j < 8; j++)                                                \
                pD[i + j] = ELEM(pS + (i + j) * (SIZE));                                  \
        for (; i < n; i++)                                                                \
            pD[i] = ELEM(pS + i * (SIZE));                                                \
    }                                                                                     \
    static void NAME(const void *pSrc, OUT_T *pDst, size_t n)                             \
    {                                                                                     \
        uintptr_t s = (uintptr_t)pSrc, d = (uintptr_t)pDst;                               \
        if (s + n * (SIZE) <= d || d + n * sizeof(OUT_T) <= s) {                          \
            NAME##_fast(pSrc, pDst, n);                                                   \
            return;                                                                       \
        }                                                                                 \
        const unsigned char *pS = pSrc;                                                   \
        for (size_t i = 0; i < n; i++)                                                    \
            pDst[i] = ELEM(pS + i * (SIZE));                                              \
    }

DEFINE_ARRAY(decode_f32, double, 4, dec_f32)
DEFINE_ARRAY(decode_bf16, double, 2, dec_bf16)
DEFINE_ARRAY(decode_f16, double, 2, dec_f16)
DEFINE_ARRAY(decode_e4m3fn, double, 1, dec_e4m3fn)
DEFINE_ARRAY(decode_e5m2, double, 1, dec_e5m2)
DEFINE_ARRAY(decode_i8, double, 1, dec_i8)
DEFINE_ARRAY(decode_i16, double, 2, dec_i16)
DEFINE_ARRAY(decode_i32, double, 4, dec_i32)
DEFINE_ARRAY(decode_i64, double, 8, dec_i64)
DEFINE_ARRAY(decode_u8, double, 1, dec_u8)
DEFINE_ARRAY(decode_u16, double, 2, dec_u16)
DEFINE_ARRAY(decode_u32, double, 4, dec_u32)
DEFINE_ARRAY(decode_u64, double, 8, dec_u64)
DEFINE_ARRAY(decode_bool, double, 1, dec_bool)
DEFINE_ARRAY(keys_f64, int64_t, 8, key_f64)
DEFINE_ARRAY(keys_f32, int64_t, 4, key_f32)
DEFINE_ARRAY(keys_b16, int64_t, 2, key_b16)
DEFINE_ARRAY(keys_b8, int64_t, 1, key_b8)
DEFINE_ARRAY(keys_i8, int64_t, 1, key_i8)
DEFINE_ARRAY(keys_i16, int64_t, 2, key_i16)
DEFINE_ARRAY(keys_i32, int64_t, 4, key_i32)
DEFINE_ARRAY(keys_i64, int64_t, 8, key_i64)
DEFINE_ARRAY(keys_u8, int64_t, 1, key_u8)
DEFINE_ARRAY(keys_u16, int64_t, 2, key_u16)
DEFINE_ARRAY(keys_u32, int64_t, 4, key_u32)
DEFINE_ARRAY(keys_u64, int64_t, 8, key_u64)
DEFINE_ARRAY(keys_bool, int64_t, 1, key_bool)

/* ---------------------------------------------------------------------------------- */
/* Decode and keys                                                                    */

void parity_decode(parity_dtype dt, const void *pSrc, double *pDst, size_t n)
{
    switch (dt) {
    case PARITY_DT_F64:
        if (n)
            memmove(pDst, pSrc, n * sizeof(double)); /* memmove: pDst == pSrc is allowed */
        break;
    case PARITY_DT_F32: decode_f32(pSrc, pDst, n); break;
    case PARITY_DT_F16: tables_init(); decode_f16(pSrc, pDst, n); break;
    case PARITY_DT_BF16: decode_bf16(pSrc, pDst, n); break;
    case PARITY_DT_F8E4M3FN: tables_init(); decode_e4m3fn(pSrc, pDst, n); break;
    case PARITY_DT_F8E5M2: tables_init(); decode_e5m2(pSrc, pDst, n); break;
    case PARITY_DT_I8: decode_i8(pSrc, pDst, n); break;
    case PARITY_DT_I16: decode_i16(pSrc, pDst, n); break;
    case PARITY_DT_I32: decode_i32(pSrc, pDst, n); break;
    case PARITY_DT_I64: decode_i64(pSrc, pDst, n); break;
    case PARITY_DT_U8: decode_u8(pSrc, pDst, n); break;
    case PARITY_DT_U16: decode_u16(pSrc, pDst, n); break;
    case PARITY_DT_U32: decode_u32(pSrc, pDst, n); break;
    case PARITY_DT_U64: decode_u64(pSrc, pDst, n); break;
    case PARITY_DT_BOOL: decode_bool(pSrc, pDst, n); break;
    default:
        /* No meaningful value exists; NaN makes any accidental use visible. */
        for (size_t i = 0; i < n; i++)
            pDst[i] = NAN;
        break;
    }
}

void parity_ulp_keys(parity_dtype dt, const void *pSrc, int64_t *pKeys, size_t n)
{
    switch (dt) {
    case PARITY_DT_F64: keys_f64(pSrc, pKeys, n); break;
    case PARITY_DT_F32: keys_f32(pSrc, pKeys, n); break;
    /* Own-width patterns, so bf16 distances come out in bf16 ulps, not f32 ones. */
    case PARITY_DT_F16:
    case PARITY_DT_BF16: keys_b16(pSrc, pKeys, n); break;
    case PARITY_DT_F8E4M3FN:
    case PARITY_DT_F8E5M2: keys_b8(pSrc, pKeys, n); break;
    case PARITY_DT_I8: keys_i8(pSrc, pKeys, n); break;
    case PARITY_DT_I16: keys_i16(pSrc, pKeys, n); break;
    case PARITY_DT_I32: keys_i32(pSrc, pKeys, n); break;
    case PARITY_DT_I64: keys_i64(pSrc, pKeys, n); break;
    case PARITY_DT_U8: keys_u8(pSrc, pKeys, n); break;
    case PARITY_DT_U16: keys_u16(pSrc, pKeys, n); break;
    case PARITY_DT_U32: keys_u32(pSrc, pKeys, n); break;
    case PARITY_DT_U64: keys_u64(pSrc, pKeys, n); break;
    case PARITY_DT_BOOL: keys_bool(pSrc, pKeys, n); break;
    default:
        for (size_t i = 0; i < n; i++)
            pKeys[i] = 0;
        break;
    }
}


/* ---------------------------------------------------------------------------------- */
/* Encode                                                                              */

/* Round half to even without depending on the FP environment's rounding mode, which a
 * host program may have changed. x - floor(x) is exact for every binary64. */
static double round_half_even(double x)
{
    double r = floor(x);
    double d = x - r;
    if (d > 0.5 || (d == 0.5 && fmod(r, 2.0) != 0.0))
        r += 1.0;
    return r;
}

/* lo/hi are exact binary64 bounds such that every rounded r with lo <= r < hi converts
 * without overflow (hi is the first power of two past the type's max). */
static int64_t to_signed(double x, double lo, double hi, int64_t tmin, int64_t tmax)
{
    if (isnan(x))
        return 0;
    double r = round_half_even(x);
    if (r < lo)
        return tmin;
    if (r >= hi)
        return tmax;
    return (int64_t)r;
}

static uint64_t to_unsigned(double x, double hi, uint64_t tmax)
{
    if (isnan(x))
        return 0;
    double r = round_half_even(x);
    if (r <= 0.0)
        return 0;
    if (r >= hi)
        return tmax;
    return (uint64_t)r;
}

/* Stores the low nBits (32, 16 or 8) of a float's bit pattern as one element. */
static void store_pattern(void *pDst, uint64_t bits, int nBits)
{
    if (nBits == 32) {
        uint32_t b = (uint32_t)bits;
        memcpy(pDst, &b, 4);
    } else if (nBits == 16) {
        uint16_t b = (uint16_t)bits;
        memcpy(pDst, &b, 2);
    } else {
        *(uint8_t *)pDst = (uint8_t)bits;
    }
}

void parity_encode(parity_dtype dt, double value, void *pDst)
{
    switch (dt) {
    case PARITY_DT_F64: memcpy(pDst, &value, 8); break;
    case PARITY_DT_F32:
    case PARITY_DT_F16:
    case PARITY_DT_BF16:
    case PARITY_DT_F8E4M3FN:
    case PARITY_DT_F8E5M2: {
        /* f32 too goes through the generic routine rather than a (float) cast, so overflow
         * never depends on Annex F and the rounding mode stays fixed at RNE. */
        const parity_float_format *pF = parity_float_format_of(dt);
        store_pattern(pDst, fmt_encode(pF, value), pF->nBits);
        break;
    }
    case PARITY_DT_I8: {
        int8_t v = (int8_t)to_signed(value, -0x1p7, 0x1p7, INT8_MIN, INT8_MAX);
        memcpy(pDst, &v, 1);
        break;
    }
    case PARITY_DT_I16: {
        int16_t v = (int16_t)to_signed(value, -0x1p15, 0x1p15, INT16_MIN, INT16_MAX);
        memcpy(pDst, &v, 2);
        break;
    }
    case PARITY_DT_I32: {
        int32_t v = (int32_t)to_signed(value, -0x1p31, 0x1p31, INT32_MIN, INT32_MAX);
        memcpy(pDst, &v, 4);
        break;
    }
    case PARITY_DT_I64: {
        int64_t v = to_signed(value, -0x1p63, 0x1p63, INT64_MIN, INT64_MAX);
        memcpy(pDst, &v, 8);
        break;
    }
    case PARITY_DT_U8: *(uint8_t *)pDst = (uint8_t)to_unsigned(value, 0x1p8, UINT8_MAX); break;
    case PARITY_DT_U16: {
        uint16_t v = (uint16_t)to_unsigned(value, 0x1p16, UINT16_MAX);
        memcpy(pDst, &v, 2);
        break;
    }
    case PARITY_DT_U32: {
        uint32_t v = (uint32_t)to_unsigned(value, 0x1p32, UINT32_MAX);
        memcpy(pDst, &v, 4);
        break;
    }
    case PARITY_DT_U64: {
        uint64_t v = to_unsigned(value, 0x1p64, UINT64_MAX);
        memcpy(pDst, &v, 8);
        break;
    }
    case PARITY_DT_BOOL:
        /* C's conversion to _Bool: NaN is nonzero, so it encodes as 1. */
        *(uint8_t *)pDst = value != 0.0;
        break;
    default:
        break; /* size 0: nothing to write */
    }
}

double parity_dtype_round(parity_dtype dt, double value)
{
    unsigned char aBits[8];
    double y;
    if (dt == PARITY_DT_F64) return value;
    if (dt == PARITY_DT_F32) return (double)(float)value;
    parity_encode(dt, value, aBits);
    parity_decode(dt, aBits, &y, 1);
    return y;
}
