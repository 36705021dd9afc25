/*
 * test_dtype.c - dtype decoding, ULP keys and encoding (formats/dtype.c).
 *
 * The decoders are checked against an independent ldexp formula on every bit pattern of
 * the 16- and 8-bit formats, the encoder against the decoder (round trip) and against a
 * brute-force nearest-neighbour search, and the ULP keys at the format boundaries where
 * sign-magnitude ordering usually goes wrong (zeros, subnormals, max/inf, NaN). The float
 * table (formats/float_format.c) is checked row by row against the same spec values.
 */
#include <criterion/criterion.h>

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "formats/dtype.h"
#include "formats/float_format.h"
#include "support.h"

/* ---------------------------------------------------------------------------------- */
/* Helpers                                                                            */

/* Description of a float format, written out by hand from the specs (not taken from
 * dtype.c), so the tests pin the encodings down independently. */
typedef struct {
    parity_dtype dt;
    int width, mbits, ebits, bias;
    int hasInf;          /* IEEE specials; 0 for e4m3fn */
    uint64_t maxBits;    /* largest finite positive pattern */
    uint64_t nanBits;    /* a positive NaN pattern */
    double maxVal;
} fmt_info;

static const fmt_info g_aFmt[] = {
    {PARITY_DT_F64, 64, 52, 11, 1023, 1, UINT64_C(0x7FEFFFFFFFFFFFFF),
     UINT64_C(0x7FF8000000000000), DBL_MAX},
    {PARITY_DT_F32, 32, 23, 8, 127, 1, 0x7F7FFFFF, 0x7FC00000, FLT_MAX},
    {PARITY_DT_F16, 16, 10, 5, 15, 1, 0x7BFF, 0x7E00, 65504.0},
    {PARITY_DT_BF16, 16, 7, 8, 127, 1, 0x7F7F, 0x7FC0, 0x1.fep+127},
    {PARITY_DT_F8E4M3FN, 8, 3, 4, 7, 0, 0x7E, 0x7F, 448.0},
    {PARITY_DT_F8E5M2, 8, 2, 5, 15, 1, 0x7B, 0x7E, 57344.0},
};
#define N_FMT (sizeof(g_aFmt) / sizeof(g_aFmt[0]))

static const fmt_info *fmt_of(parity_dtype dt)
{
    for (size_t i = 0; i < N_FMT; i++)
        if (g_aFmt[i].dt == dt)
            return &g_aFmt[i];
    cr_assert_fail("no fmt_info for %s", parity_dtype_name(dt));
    return NULL;
}

/* Stores a bit pattern in the dtype's native width. */
static void put_bits(int width, uint64_t bits, void *p)
{
    switch (width) {
    case 8: { uint8_t v = (uint8_t)bits; memcpy(p, &v, 1); break; }
    case 16: { uint16_t v = (uint16_t)bits; memcpy(p, &v, 2); break; }
    case 32: { uint32_t v = (uint32_t)bits; memcpy(p, &v, 4); break; }
    default: memcpy(p, &bits, 8); break;
    }
}

static uint64_t get_bits(int width, const void *p)
{
    switch (width) {
    case 8: { uint8_t v; memcpy(&v, p, 1); return v; }
    case 16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 32: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static int64_t key_of(const fmt_info *f, uint64_t bits)
{
    unsigned char buf[8];
    int64_t k = 12345;
    put_bits(f->width, bits, buf);
    parity_ulp_keys(f->dt, buf, &k, 1);
    return k;
}

static uint64_t dist_bits(const fmt_info *f, uint64_t a, uint64_t b)
{
    return parity_ulp_distance(key_of(f, a), key_of(f, b));
}

static double decode_bits(const fmt_info *f, uint64_t bits)
{
    unsigned char buf[8];
    double d = -12345.0;
    put_bits(f->width, bits, buf);
    parity_decode(f->dt, buf, &d, 1);
    return d;
}

static uint64_t encode_bits(const fmt_info *f, double x)
{
    unsigned char buf[8];
    memset(buf, 0xA5, sizeof buf);
    parity_encode(f->dt, x, buf);
    return get_bits(f->width, buf);
}

static uint64_t sign_bit(const fmt_info *f)
{
    return UINT64_C(1) << (f->width - 1);
}

static uint64_t inf_bits(const fmt_info *f)
{
    return ((UINT64_C(1) << f->ebits) - 1) << f->mbits;
}

/* dbits and same_double: support.h */

/* The straightforward formula the decoders are checked against. */
static double ref_decode(const fmt_info *f, uint64_t bits)
{
    int m = f->mbits;
    uint64_t fracMask = (UINT64_C(1) << m) - 1;
    uint64_t expAll = (UINT64_C(1) << f->ebits) - 1;
    int neg = (bits >> (f->width - 1)) & 1;
    uint64_t frac = bits & fracMask;
    uint64_t ef = (bits >> m) & expAll;
    double v;
    if (f->hasInf && ef == expAll)
        v = frac ? NAN : INFINITY;
    else if (!f->hasInf && ef == expAll && frac == fracMask)
        v = NAN;
    else if (ef == 0)
        v = ldexp((double)frac, 1 - f->bias - m);
    else
        v = ldexp(1.0 + ldexp((double)frac, -m), (int)ef - f->bias);
    return neg ? -v : v;
}

/* The generator is xorshift64s (xorshift64*, support.h): deterministic, so a failure
 * reproduces. */

/* ---------------------------------------------------------------------------------- */
/* ULP keys at the boundaries of every float format                                   */

static void check_ulp_boundaries(parity_dtype dt)
{
    const fmt_info *f = fmt_of(dt);
    const uint64_t S = sign_bit(f);
    const uint64_t minSub = 1, maxSub = (UINT64_C(1) << f->mbits) - 1;
    const uint64_t minNorm = UINT64_C(1) << f->mbits;

    /* The patterns really are what the names say. */
    cr_assert(same_double(decode_bits(f, minSub), ldexp(1.0, 1 - f->bias - f->mbits)));
    cr_assert(same_double(decode_bits(f, minNorm), parity_dtype_smallest_normal(dt)));
    cr_assert(same_double(decode_bits(f, f->maxBits), f->maxVal));
    cr_assert(same_double(decode_bits(f, f->maxBits), parity_dtype_max_finite(dt)));

    /* Zeros. */
    cr_assert_eq(key_of(f, 0), 0);
    cr_assert_eq(key_of(f, S), 0, "-0 must map to the same key as +0");
    cr_assert_eq(dist_bits(f, 0, S), 0);

    /* Subnormals and the normal boundary. */
    cr_assert_eq(key_of(f, minSub), 1);
    cr_assert_eq(key_of(f, S | minSub), -1);
    cr_assert_eq(dist_bits(f, minSub, 0), 1);
    cr_assert_eq(dist_bits(f, S | minSub, 0), 1);
    cr_assert_eq(dist_bits(f, S | minSub, minSub), 2);
    cr_assert_eq(dist_bits(f, maxSub, minNorm), 1);
    cr_assert_eq(dist_bits(f, S | maxSub, S | minNorm), 1);
    cr_assert_eq(dist_bits(f, S | minNorm, minNorm), 2 * minNorm);

    /* Max finite, inf and the whole range. */
    int64_t kMax = key_of(f, f->maxBits);
    cr_assert_eq(kMax, (int64_t)f->maxBits);
    cr_assert_eq(key_of(f, S | f->maxBits), -kMax);
    if (f->hasInf) {
        cr_assert_eq(dist_bits(f, f->maxBits, inf_bits(f)), 1);
        cr_assert_eq(dist_bits(f, S | f->maxBits, S | inf_bits(f)), 1);
        cr_assert(isinf(decode_bits(f, inf_bits(f))) && decode_bits(f, inf_bits(f)) > 0);
    }
    uint64_t range = 2 * f->maxBits; /* exact in uint64 for every width */
    uint64_t want = range > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : range;
    cr_assert_eq(dist_bits(f, S | f->maxBits, f->maxBits), want);

    /* 1.0 and its neighbours on both sides (the binade below has half the spacing). */
    uint64_t one = encode_bits(f, 1.0);
    cr_assert(same_double(decode_bits(f, one), 1.0));
    cr_assert_eq(one, (uint64_t)f->bias << f->mbits);
    uint64_t up = encode_bits(f, 1.0 + ldexp(1.0, -f->mbits));
    uint64_t down = encode_bits(f, 1.0 - ldexp(1.0, -f->mbits - 1));
    cr_assert_eq(dist_bits(f, one, up), 1);
    cr_assert_eq(dist_bits(f, down, one), 1);
    cr_assert_eq(dist_bits(f, down, up), 2);
    cr_assert(key_of(f, down) < key_of(f, one) && key_of(f, one) < key_of(f, up));
    cr_assert_eq(dist_bits(f, S | one, one), 2 * one);

    /* NaN: keys exist and sit beyond every number (beyond inf where there is one), with
     * the sign of the NaN. Callers must handle NaN before using keys: two NaNs of opposite
     * sign are "far apart" and a NaN is a finite distance from inf. */
    uint64_t top = f->hasInf ? inf_bits(f) : f->maxBits;
    cr_assert(isnan(decode_bits(f, f->nanBits)));
    cr_assert(isnan(decode_bits(f, S | f->nanBits)));
    cr_assert_gt(key_of(f, f->nanBits), key_of(f, top));
    cr_assert_lt(key_of(f, S | f->nanBits), key_of(f, S | top));
    cr_assert_eq(key_of(f, S | f->nanBits), -key_of(f, f->nanBits));
}

Test(ulp, f64) { check_ulp_boundaries(PARITY_DT_F64); }
Test(ulp, f32) { check_ulp_boundaries(PARITY_DT_F32); }
Test(ulp, f16) { check_ulp_boundaries(PARITY_DT_F16); }
Test(ulp, bf16) { check_ulp_boundaries(PARITY_DT_BF16); }
Test(ulp, f8e4m3fn) { check_ulp_boundaries(PARITY_DT_F8E4M3FN); }
Test(ulp, f8e5m2) { check_ulp_boundaries(PARITY_DT_F8E5M2); }

Test(ulp, f64_nextafter_and_libm_agree)
{
    const fmt_info *f = fmt_of(PARITY_DT_F64);
    double xs[] = {1.0, -1.0, 0.0, DBL_MIN, DBL_TRUE_MIN, 1e300, -3.5};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double up = nextafter(xs[i], INFINITY), dn = nextafter(xs[i], -INFINITY);
        cr_assert_eq(dist_bits(f, dbits(xs[i]), dbits(up)), 1, "x=%a", xs[i]);
        cr_assert_eq(dist_bits(f, dbits(dn), dbits(xs[i])), 1, "x=%a", xs[i]);
    }
    const fmt_info *g = fmt_of(PARITY_DT_F32);
    uint32_t b1, b2;
    float one = 1.0f, nx = nextafterf(1.0f, 2.0f);
    memcpy(&b1, &one, 4);
    memcpy(&b2, &nx, 4);
    cr_assert_eq(dist_bits(g, b1, b2), 1);
}

/* Exhaustively, per small format: sorted by value, every two neighbouring representable
 * values have keys exactly 1 apart, and the two zeros share a key. */
typedef struct {
    double v;
    int64_t k;
} val_key;

static int cmp_val_key(const void *a, const void *b)
{
    double x = ((const val_key *)a)->v, y = ((const val_key *)b)->v;
    return (x > y) - (x < y);
}

static void check_keys_dense(parity_dtype dt)
{
    const fmt_info *f = fmt_of(dt);
    size_t count = (size_t)1 << f->width, n = 0;
    val_key *a = malloc(count * sizeof *a);
    cr_assert_not_null(a);
    for (size_t b = 0; b < count; b++) {
        double v = ref_decode(f, b);
        if (isnan(v))
            continue;
        a[n].v = v;
        a[n].k = key_of(f, b);
        n++;
    }
    qsort(a, n, sizeof *a, cmp_val_key);
    size_t nZeroPairs = 0;
    for (size_t i = 1; i < n; i++) {
        if (a[i].v == a[i - 1].v) {
            cr_assert_eq(a[i].v, 0.0);
            cr_assert_eq(a[i].k, a[i - 1].k);
            nZeroPairs++;
        } else {
            cr_assert_eq(a[i].k - a[i - 1].k, 1, "%s: %a -> %a", parity_dtype_name(dt),
                         a[i - 1].v, a[i].v);
        }
    }
    cr_assert_eq(nZeroPairs, 1);
    free(a);
}

Test(ulp, f16_keys_dense_exhaustive) { check_keys_dense(PARITY_DT_F16); }
Test(ulp, bf16_keys_dense_exhaustive) { check_keys_dense(PARITY_DT_BF16); }
Test(ulp, e4m3fn_keys_dense_exhaustive) { check_keys_dense(PARITY_DT_F8E4M3FN); }
Test(ulp, e5m2_keys_dense_exhaustive) { check_keys_dense(PARITY_DT_F8E5M2); }

Test(ulp, e4m3fn_top_of_range)
{
    const fmt_info *f = fmt_of(PARITY_DT_F8E4M3FN);
    cr_assert_eq(key_of(f, 0x7E), 126);
    cr_assert_eq(key_of(f, 0x7F), 127); /* NaN, one past the max */
    cr_assert_eq(key_of(f, 0xFE), -126);
    cr_assert_eq(key_of(f, 0xFF), -127);
    cr_assert_eq(dist_bits(f, 0x7D, 0x7E), 1); /* 416 -> 448 */
    cr_assert_eq(dist_bits(f, 0x77, 0x78), 1); /* 240 -> 256: exponent 1111 is ordinary */
    cr_assert_eq(dist_bits(f, 0xFE, 0x7E), 252);
}

/* ---------------------------------------------------------------------------------- */
/* Distance saturation                                                                */

Test(distance, saturation_and_symmetry)
{
    cr_assert_eq(parity_ulp_distance(5, 3), 2);
    cr_assert_eq(parity_ulp_distance(3, 5), 2);
    cr_assert_eq(parity_ulp_distance(-7, -7), 0);
    cr_assert_eq(parity_ulp_distance(-3, 4), 7);
    cr_assert_eq(parity_ulp_distance(0, INT64_MAX), (uint64_t)INT64_MAX);
    cr_assert_eq(parity_ulp_distance(-1, INT64_MAX - 1), (uint64_t)INT64_MAX);
    cr_assert_eq(parity_ulp_distance(-1, INT64_MAX), (uint64_t)INT64_MAX); /* 2^63 */
    cr_assert_eq(parity_ulp_distance(0, INT64_MIN), (uint64_t)INT64_MAX); /* 2^63 */
    cr_assert_eq(parity_ulp_distance(INT64_MIN, INT64_MAX), (uint64_t)INT64_MAX);
    cr_assert_eq(parity_ulp_distance(INT64_MAX, INT64_MIN), (uint64_t)INT64_MAX);
    cr_assert_eq(parity_ulp_distance(INT64_MIN, -1), (uint64_t)INT64_MAX);
    cr_assert_eq(parity_ulp_distance(INT64_MIN + 1, 0), (uint64_t)INT64_MAX);
    cr_assert_eq(parity_ulp_distance(INT64_MIN, INT64_MIN + 5), 5);
}

Test(distance, f64_large)
{
    const fmt_info *f = fmt_of(PARITY_DT_F64);
    /* -1 vs 1: 2 * 0x3FF0000000000000 = 0x7FE0000000000000, still exact. */
    cr_assert_eq(dist_bits(f, dbits(-1.0), dbits(1.0)), UINT64_C(0x7FE0000000000000));
    /* Keys +-0x3FFF_FFFF_FFFF_FFFF (just below 2.0) are exactly INT64_MAX - 1 apart. */
    double below2 = nextafter(2.0, 0.0);
    cr_assert_eq(dbits(below2), UINT64_C(0x3FFFFFFFFFFFFFFF));
    cr_assert_eq(dist_bits(f, dbits(-below2), dbits(below2)), (uint64_t)INT64_MAX - 1);
    /* ... and -below2 vs 2.0 is exactly INT64_MAX, the largest exact distance. */
    cr_assert_eq(dist_bits(f, dbits(-below2), dbits(2.0)), (uint64_t)INT64_MAX);
    /* -2 vs 2 is 2^63: saturates. */
    cr_assert_eq(dist_bits(f, dbits(-2.0), dbits(2.0)), (uint64_t)INT64_MAX);
    /* -max vs max is 0xFFDFFFFFFFFFFFFE in truth: saturates. */
    cr_assert_eq(dist_bits(f, dbits(-DBL_MAX), dbits(DBL_MAX)), (uint64_t)INT64_MAX);
    cr_assert_eq(dist_bits(f, dbits(-INFINITY), dbits(INFINITY)), (uint64_t)INT64_MAX);
    /* -max vs max in f32 is exact: 2 * 0x7F7FFFFF. */
    cr_assert_eq(dist_bits(fmt_of(PARITY_DT_F32), 0xFF7FFFFF, 0x7F7FFFFF), UINT64_C(0xFEFFFFFE));
}

/* ---------------------------------------------------------------------------------- */
/* Integer and bool keys                                                              */

Test(ulp, integer_keys)
{
    int8_t i8[] = {INT8_MIN, -1, 0, 1, INT8_MAX};
    int64_t k[5];
    parity_ulp_keys(PARITY_DT_I8, i8, k, 5);
    cr_assert(k[0] == -128 && k[1] == -1 && k[2] == 0 && k[3] == 1 && k[4] == 127);
    cr_assert_eq(parity_ulp_distance(k[0], k[4]), 255);

    uint8_t u8[] = {0, 255};
    parity_ulp_keys(PARITY_DT_U8, u8, k, 2);
    cr_assert_eq(parity_ulp_distance(k[0], k[1]), 255);

    int16_t i16[] = {INT16_MIN, INT16_MAX};
    parity_ulp_keys(PARITY_DT_I16, i16, k, 2);
    cr_assert_eq(parity_ulp_distance(k[0], k[1]), 65535);

    uint16_t u16[] = {0, UINT16_MAX};
    parity_ulp_keys(PARITY_DT_U16, u16, k, 2);
    cr_assert_eq(parity_ulp_distance(k[0], k[1]), 65535);

    int32_t i32[] = {INT32_MIN, INT32_MAX};
    parity_ulp_keys(PARITY_DT_I32, i32, k, 2);
    cr_assert_eq(parity_ulp_distance(k[0], k[1]), UINT64_C(0xFFFFFFFF));

    uint32_t u32[] = {0, UINT32_MAX};
    parity_ulp_keys(PARITY_DT_U32, u32, k, 2);
    cr_assert_eq(k[1], (int64_t)UINT32_MAX);
    cr_assert_eq(parity_ulp_distance(k[0], k[1]), UINT64_C(0xFFFFFFFF));

    int64_t i64[] = {INT64_MIN, INT64_MAX, -5, 7};
    parity_ulp_keys(PARITY_DT_I64, i64, k, 4);
    cr_assert(k[0] == INT64_MIN && k[1] == INT64_MAX);
    cr_assert_eq(parity_ulp_distance(k[0], k[1]), (uint64_t)INT64_MAX);
    cr_assert_eq(parity_ulp_distance(k[2], k[3]), 12);

    uint64_t u64[] = {0, (uint64_t)INT64_MAX, (uint64_t)INT64_MAX + 1, UINT64_MAX, 12345};
    parity_ulp_keys(PARITY_DT_U64, u64, k, 5);
    /* Keys are value - 2^63: distances are exact over the whole range. */
    cr_assert_eq(parity_ulp_distance(k[0], k[4]), 12345);
    cr_assert_eq(parity_ulp_distance(k[1], k[2]), 1, "INT64_MAX and INT64_MAX + 1 are 1 apart");
    cr_assert_eq(parity_ulp_distance(k[2], k[3]), (uint64_t)INT64_MAX);
    cr_assert_eq(parity_ulp_distance(k[0], k[3]), (uint64_t)INT64_MAX, "saturates");
    cr_assert(k[0] < k[1] && k[1] < k[2] && k[2] < k[3], "order is kept");

    uint8_t b[] = {0, 1, 2, 255};
    parity_ulp_keys(PARITY_DT_BOOL, b, k, 4);
    cr_assert(k[0] == 0 && k[1] == 1 && k[2] == 1 && k[3] == 1);
}

/* Many elements at once, from an unaligned buffer (the loops use memcpy loads). */
Test(ulp, bulk_unaligned_f32)
{
    enum { N = 1000 };
    unsigned char raw[N * 4 + 1];
    int64_t k[N];
    for (int i = 0; i < N; i++) {
        float v = (float)(i - N / 2) * 0.37f;
        memcpy(raw + 1 + 4 * i, &v, 4);
    }
    parity_ulp_keys(PARITY_DT_F32, raw + 1, k, N);
    for (int i = 0; i < N; i++) {
        float v;
        uint32_t b;
        memcpy(&v, raw + 1 + 4 * i, 4);
        memcpy(&b, &v, 4);
        int64_t want = (b & 0x80000000u) ? -(int64_t)(b & 0x7FFFFFFFu) : (int64_t)b;
        cr_assert_eq(k[i], want, "i=%d", i);
        if (i)
            cr_assert_lt(k[i - 1], k[i]);
    }
}

/* Array calls of every length 0..40 (block of 8 plus tail) at odd offsets agree with
 * single-element calls, for every dtype; neighbours outside [0, n) stay untouched. */
Test(bulk, every_dtype_every_length)
{
    uint64_t s = 12345;
    unsigned char raw[41 * 8 + 3];
    for (size_t i = 0; i < sizeof raw; i++)
        raw[i] = (unsigned char)xorshift64s(&s);
    for (int dt = PARITY_DT_INVALID + 1; dt < PARITY_DT_COUNT; dt++) {
        size_t sz = parity_dtype_size((parity_dtype)dt);
        for (size_t n = 0; n <= 40; n++) {
            double d[42];
            int64_t k[42];
            d[0] = d[n + 1] = -7.0;
            k[0] = k[n + 1] = -7;
            parity_decode((parity_dtype)dt, raw + 3, d + 1, n);
            parity_ulp_keys((parity_dtype)dt, raw + 3, k + 1, n);
            cr_assert(d[0] == -7.0 && d[n + 1] == -7.0 && k[0] == -7 && k[n + 1] == -7);
            for (size_t i = 0; i < n; i++) {
                double one;
                int64_t k1;
                parity_decode((parity_dtype)dt, raw + 3 + i * sz, &one, 1);
                parity_ulp_keys((parity_dtype)dt, raw + 3 + i * sz, &k1, 1);
                cr_assert(same_double(d[i + 1], one), "%s n=%zu i=%zu",
                          parity_dtype_name((parity_dtype)dt), n, i);
                cr_assert_eq(k[i + 1], k1, "%s n=%zu i=%zu", parity_dtype_name((parity_dtype)dt),
                             n, i);
            }
        }
    }
}

/* Same-width conversions may be done in place (the header does not forbid it). The
 * buffers are malloc'd so storing a different type into them is well defined. */
Test(bulk, in_place_8_byte)
{
    enum { N = 19 };
    unsigned char *buf = malloc(N * 8);
    int64_t want[N];
    cr_assert_not_null(buf);
    for (int i = 0; i < N; i++) {
        double v = (i - 9) * 0.75;
        memcpy(buf + 8 * i, &v, 8);
    }
    parity_ulp_keys(PARITY_DT_F64, buf, want, N);
    parity_ulp_keys(PARITY_DT_F64, buf, (int64_t *)(void *)buf, N);
    cr_assert_eq(memcmp(buf, want, sizeof want), 0);
    cr_assert_eq(want[9], 0);
    cr_assert_eq(want[10], (int64_t)dbits(0.75));
    cr_assert_eq(want[8], -(int64_t)dbits(0.75));

    double copy[N];
    for (int i = 0; i < N; i++) {
        copy[i] = i * 1.5;
        memcpy(buf + 8 * i, &copy[i], 8);
    }
    parity_decode(PARITY_DT_F64, buf, (double *)(void *)buf, N);
    cr_assert_eq(memcmp(buf, copy, sizeof copy), 0);

    for (int i = 0; i < N; i++) {
        int64_t iv = (int64_t)i * 1000 - 9000;
        memcpy(buf + 8 * i, &iv, 8);
    }
    parity_decode(PARITY_DT_I64, buf, (double *)(void *)buf, N);
    for (int i = 0; i < N; i++) {
        double d;
        memcpy(&d, buf + 8 * i, 8);
        cr_assert_eq(d, i * 1000.0 - 9000.0);
    }
    free(buf);
}

/* ---------------------------------------------------------------------------------- */
/* Decode                                                                             */

static void check_decode_exhaustive(parity_dtype dt)
{
    const fmt_info *f = fmt_of(dt);
    size_t count = (size_t)1 << f->width;
    size_t bytes = count * (size_t)(f->width / 8);
    unsigned char *src = malloc(bytes);
    double *dst = malloc(count * sizeof(double));
    cr_assert(src && dst);
    for (size_t i = 0; i < count; i++)
        put_bits(f->width, i, src + i * (size_t)(f->width / 8));
    parity_decode(dt, src, dst, count); /* all patterns in one call */
    size_t nNan = 0;
    for (size_t i = 0; i < count; i++) {
        double want = ref_decode(f, i);
        cr_assert(same_double(dst[i], want), "%s pattern %#zx: got %a want %a",
                  parity_dtype_name(dt), i, dst[i], want);
        cr_assert(same_double(decode_bits(f, i), want)); /* single-element path */
        nNan += isnan(dst[i]) != 0;
    }
    /* NaN census: IEEE formats have 2 * (2^m - 1) NaNs, e4m3fn exactly 2. */
    size_t wantNan = f->hasInf ? 2 * (((size_t)1 << f->mbits) - 1) : 2;
    cr_assert_eq(nNan, wantNan);
    free(src);
    free(dst);
}

Test(decode, f16_all_patterns) { check_decode_exhaustive(PARITY_DT_F16); }
Test(decode, bf16_all_patterns) { check_decode_exhaustive(PARITY_DT_BF16); }
Test(decode, e4m3fn_all_patterns) { check_decode_exhaustive(PARITY_DT_F8E4M3FN); }
Test(decode, e5m2_all_patterns) { check_decode_exhaustive(PARITY_DT_F8E5M2); }

Test(decode, e4m3fn_exponent_1111_is_finite)
{
    /* An IEEE-style reader takes exponent 1111 as inf/NaN; OFP8 e4m3fn does not. */
    const fmt_info *f = fmt_of(PARITY_DT_F8E4M3FN);
    cr_assert_eq(decode_bits(f, 0x7E), 448.0);
    cr_assert_eq(decode_bits(f, 0xFE), -448.0);
    cr_assert_eq(decode_bits(f, 0x78), 256.0);
    cr_assert_eq(decode_bits(f, 0x79), 288.0);
    cr_assert_eq(decode_bits(f, 0x7D), 416.0);
    cr_assert(isnan(decode_bits(f, 0x7F)));
    cr_assert(isnan(decode_bits(f, 0xFF)));
    cr_assert_eq(decode_bits(f, 0x01), 0x1p-9);  /* smallest subnormal */
    cr_assert_eq(decode_bits(f, 0x07), 7 * 0x1p-9);
    cr_assert_eq(decode_bits(f, 0x08), 0x1p-6);  /* smallest normal */
    cr_assert_eq(decode_bits(f, 0x38), 1.0);
    cr_assert(same_double(decode_bits(f, 0x80), -0.0));
}

Test(decode, known_values)
{
    cr_assert_eq(decode_bits(fmt_of(PARITY_DT_F16), 0x3C00), 1.0);
    cr_assert_eq(decode_bits(fmt_of(PARITY_DT_F16), 0xC000), -2.0);
    cr_assert_eq(decode_bits(fmt_of(PARITY_DT_F16), 0x7BFF), 65504.0);
    cr_assert_eq(decode_bits(fmt_of(PARITY_DT_F16), 0x0001), 0x1p-24);
    cr_assert_eq(decode_bits(fmt_of(PARITY_DT_F16), 0x3555), 0x1.554p-2);
    cr_assert_eq(decode_bits(fmt_of(PARITY_DT_BF16), 0x3F80), 1.0);
    cr_assert_eq(decode_bits(fmt_of(PARITY_DT_BF16), 0x4049), 3.140625);
    cr_assert_eq(decode_bits(fmt_of(PARITY_DT_BF16), 0x0001), 0x1p-133);
    cr_assert_eq(decode_bits(fmt_of(PARITY_DT_F8E5M2), 0x7B), 57344.0);
    cr_assert_eq(decode_bits(fmt_of(PARITY_DT_F8E5M2), 0x01), 0x1p-16);
    cr_assert(isinf(decode_bits(fmt_of(PARITY_DT_F8E5M2), 0xFC)));
    cr_assert_lt(decode_bits(fmt_of(PARITY_DT_F8E5M2), 0xFC), 0.0);
}

Test(decode, f32_f64_unaligned_and_exact)
{
    float fs[] = {0.0f, -0.0f, 1.0f, -FLT_MAX, FLT_TRUE_MIN, INFINITY, NAN, 0.1f};
    enum { N = sizeof fs / sizeof fs[0] };
    unsigned char raw[N * 8 + 3];
    double out[N];
    memcpy(raw + 3, fs, sizeof fs);
    parity_decode(PARITY_DT_F32, raw + 3, out, N);
    for (int i = 0; i < N; i++)
        cr_assert(same_double(out[i], (double)fs[i]), "i=%d", i);

    double ds[] = {0.1, -DBL_MAX, DBL_TRUE_MIN, -0.0};
    double od[4];
    memcpy(raw + 1, ds, sizeof ds);
    parity_decode(PARITY_DT_F64, raw + 1, od, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(dbits(od[i]), dbits(ds[i]));
    parity_decode(PARITY_DT_F64, raw, od, 0); /* n = 0 is a no-op */
}

Test(decode, integers_and_bool)
{
    double o[5];
    int8_t i8[] = {INT8_MIN, -1, 0, INT8_MAX};
    parity_decode(PARITY_DT_I8, i8, o, 4);
    cr_assert(o[0] == -128.0 && o[1] == -1.0 && o[2] == 0.0 && o[3] == 127.0);
    uint8_t u8[] = {0, 200, 255};
    parity_decode(PARITY_DT_U8, u8, o, 3);
    cr_assert(o[0] == 0.0 && o[1] == 200.0 && o[2] == 255.0);
    int16_t i16[] = {INT16_MIN, INT16_MAX};
    parity_decode(PARITY_DT_I16, i16, o, 2);
    cr_assert(o[0] == -32768.0 && o[1] == 32767.0);
    uint16_t u16[] = {UINT16_MAX};
    parity_decode(PARITY_DT_U16, u16, o, 1);
    cr_assert_eq(o[0], 65535.0);
    int32_t i32[] = {INT32_MIN, INT32_MAX};
    parity_decode(PARITY_DT_I32, i32, o, 2);
    cr_assert(o[0] == -2147483648.0 && o[1] == 2147483647.0);
    uint32_t u32[] = {UINT32_MAX};
    parity_decode(PARITY_DT_U32, u32, o, 1);
    cr_assert_eq(o[0], 4294967295.0);
    int64_t i64[] = {INT64_MIN, INT64_MAX, (INT64_C(1) << 53) + 1, -3};
    parity_decode(PARITY_DT_I64, i64, o, 4);
    cr_assert(o[0] == -0x1p63 && o[1] == 0x1p63 && o[3] == -3.0);
    cr_assert_eq(o[2], 0x1p53, "2^53+1 rounds to nearest even");
    uint64_t u64[] = {UINT64_MAX, UINT64_C(1) << 63, 42};
    parity_decode(PARITY_DT_U64, u64, o, 3);
    cr_assert(o[0] == 0x1p64 && o[1] == 0x1p63 && o[2] == 42.0);
    uint8_t b[] = {0, 1, 2, 255};
    parity_decode(PARITY_DT_BOOL, b, o, 4);
    cr_assert(o[0] == 0.0 && o[1] == 1.0 && o[2] == 1.0 && o[3] == 1.0);
}

/* The tables are built on first use; racing first uses must all see complete tables. */
static void *decode_thread(void *arg)
{
    (void)arg;
    uint16_t src[4096];
    double dst[4096];
    for (int i = 0; i < 4096; i++)
        src[i] = (uint16_t)(i * 16 + 15);
    parity_decode(PARITY_DT_F16, src, dst, 4096);
    const fmt_info *f = fmt_of(PARITY_DT_F16);
    for (int i = 0; i < 4096; i++)
        if (!same_double(dst[i], ref_decode(f, src[i])))
            return (void *)1;
    return NULL;
}

Test(decode, first_use_from_many_threads)
{
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, decode_thread, NULL), 0);
    for (int i = 0; i < 8; i++) {
        void *r;
        cr_assert_eq(pthread_join(t[i], &r), 0);
        cr_assert_null(r, "thread %d saw a wrong value", i);
    }
}

/* ---------------------------------------------------------------------------------- */
/* Encode                                                                             */

static void check_roundtrip(parity_dtype dt)
{
    const fmt_info *f = fmt_of(dt);
    uint64_t count = UINT64_C(1) << f->width;
    for (uint64_t b = 0; b < count; b++) {
        double v = ref_decode(f, b);
        uint64_t e = encode_bits(f, v);
        if (isnan(v)) {
            /* NaN stays NaN with its sign (payload not preserved: quiet NaN). */
            cr_assert(isnan(ref_decode(f, e)), "%#llx", (unsigned long long)b);
            cr_assert_eq(e & sign_bit(f), b & sign_bit(f));
            continue;
        }
        cr_assert_eq(e, b, "%s: %#llx -> %a -> %#llx", parity_dtype_name(dt),
                     (unsigned long long)b, v, (unsigned long long)e);
    }
}

Test(encode, f16_roundtrip_all) { check_roundtrip(PARITY_DT_F16); }
Test(encode, bf16_roundtrip_all) { check_roundtrip(PARITY_DT_BF16); }
Test(encode, e4m3fn_roundtrip_all) { check_roundtrip(PARITY_DT_F8E4M3FN); }
Test(encode, e5m2_roundtrip_all) { check_roundtrip(PARITY_DT_F8E5M2); }

Test(encode, f32_roundtrip_sampled)
{
    const fmt_info *f = fmt_of(PARITY_DT_F32);
    /* A stride coprime to 2^32 visits patterns spread over every exponent. */
    for (uint64_t i = 0, b = 0; i < 2000000; i++, b = (b + 2654435761u) & 0xFFFFFFFFu) {
        float fv;
        uint32_t b32 = (uint32_t)b;
        memcpy(&fv, &b32, 4);
        uint64_t e = encode_bits(f, (double)fv);
        if (isnan(fv))
            cr_assert(isnan(ref_decode(f, e)));
        else
            cr_assert_eq(e, b, "%#llx", (unsigned long long)b);
    }
}

/* The hardware double -> float conversion (RNE in the default environment) is an
 * independent reference for f32, including subnormals and overflow. */
Test(encode, f32_matches_hardware_cast)
{
    const fmt_info *f = fmt_of(PARITY_DT_F32);
    uint64_t s = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 1000000; i++) {
        uint64_t r = xorshift64s(&s);
        /* Exponents concentrated around float's range so subnormals, ties and overflow
         * are all hit; low bits random (random 29 low bits make exact ties rare, so the
         * low bits are sometimes zeroed to force them). */
        int exp = (int)(r % 320) - 160;
        double m = 1.0 + (double)(xorshift64s(&s) >> 11) * 0x1p-53;
        double x = ldexp(m, exp);
        uint64_t xb = dbits(x);
        if (i & 1)
            xb &= ~((UINT64_C(1) << 28) - 1);
        if (r & 0x100000)
            xb |= UINT64_C(1) << 63;
        memcpy(&x, &xb, 8);
        float want = (float)x;
        uint32_t wb;
        memcpy(&wb, &want, 4);
        cr_assert_eq(encode_bits(f, x), wb, "x=%a", x);
    }
}

/* For random doubles, the encoding is a nearest representable value, and on a tie the one
 * with an even pattern. Neighbours come from the reference decoder, not from dtype.c. */
static void check_nearest(parity_dtype dt)
{
    const fmt_info *f = fmt_of(dt);
    uint64_t s = 0x243F6A8885A308D3u ^ (uint64_t)dt;
    int maxE = (int)((UINT64_C(1) << f->ebits) - 1) - f->bias; /* a bit above the max */
    int minE = 1 - f->bias - f->mbits - 3;                      /* a bit below min subnormal */
    for (int i = 0; i < 200000; i++) {
        uint64_t r = xorshift64s(&s);
        int exp = minE + (int)(r % (uint64_t)(maxE - minE + 1));
        double x = ldexp(1.0 + (double)(xorshift64s(&s) >> 11) * 0x1p-53, exp);
        if (i % 3 == 0) {
            /* Exact midpoint between two neighbouring patterns: forces the tie rule. */
            uint64_t lo = encode_bits(f, x) & ~sign_bit(f);
            if (lo >= f->maxBits)
                continue;
            double a = ref_decode(f, lo), b = ref_decode(f, lo + 1);
            x = a + (b - a) / 2; /* exact: the formats are far narrower than binary64 */
        }
        if (r & 1)
            x = -x;
        uint64_t e = encode_bits(f, x);
        double got = ref_decode(f, e);
        double ax = fabs(x);
        if (isnan(got) || isinf(got)) {
            /* Overflow: only allowed when |x| is at least max + half an ulp. */
            double maxV = f->maxVal;
            double halfUlp = ldexp(1.0, (int)(f->maxBits >> f->mbits) - f->bias - f->mbits - 1);
            cr_assert_geq(ax, maxV + halfUlp, "%s x=%a overflowed", parity_dtype_name(dt), x);
            cr_assert_eq(e & sign_bit(f), x < 0 ? sign_bit(f) : 0);
            if (f->hasInf)
                cr_assert(isinf(got));
            else
                cr_assert(isnan(got));
            continue;
        }
        cr_assert_eq((got < 0) || (got == 0 && signbit(got)), x < 0, "sign x=%a", x);
        uint64_t mag = e & ~sign_bit(f);
        double err = fabs(fabs(got) - ax);
        if (mag < f->maxBits) {
            double errUp = fabs(ref_decode(f, mag + 1) - ax);
            cr_assert_leq(err, errUp, "%s x=%a", parity_dtype_name(dt), x);
            if (err == errUp)
                cr_assert_eq(mag & 1, 0, "%s tie x=%a not to even", parity_dtype_name(dt), x);
        }
        if (mag > 0) {
            double errDown = fabs(ref_decode(f, mag - 1) - ax);
            cr_assert_leq(err, errDown, "%s x=%a", parity_dtype_name(dt), x);
            if (err == errDown)
                cr_assert_eq(mag & 1, 0, "%s tie x=%a not to even", parity_dtype_name(dt), x);
        }
        if (mag == f->maxBits) {
            /* Below the overflow threshold. */
            double halfUlp = ldexp(1.0, (int)(f->maxBits >> f->mbits) - f->bias - f->mbits - 1);
            cr_assert(ax < f->maxVal + halfUlp || (ax == f->maxVal + halfUlp && !(mag & 1)));
        }
    }
}

Test(encode, f16_nearest_even_random) { check_nearest(PARITY_DT_F16); }
Test(encode, bf16_nearest_even_random) { check_nearest(PARITY_DT_BF16); }
Test(encode, e4m3fn_nearest_even_random) { check_nearest(PARITY_DT_F8E4M3FN); }
Test(encode, e5m2_nearest_even_random) { check_nearest(PARITY_DT_F8E5M2); }

#define ENC(dt, x) encode_bits(fmt_of(dt), (x))

Test(encode, ties_to_even_hand_picked)
{
    /* f16, spacing 2^-10 at 1.0. */
    cr_assert_eq(ENC(PARITY_DT_F16, 1.0 + 0x1p-11), 0x3C00);          /* tie, down to even */
    cr_assert_eq(ENC(PARITY_DT_F16, 1.0 + 3 * 0x1p-11), 0x3C02);      /* tie, up to even */
    cr_assert_eq(ENC(PARITY_DT_F16, 1.0 + 0x1p-11 + 0x1p-40), 0x3C01); /* just above */
    cr_assert_eq(ENC(PARITY_DT_F16, 1.0 + 0x1p-11 - 0x1p-40), 0x3C00); /* just below */
    cr_assert_eq(ENC(PARITY_DT_F16, -(1.0 + 3 * 0x1p-11)), 0xBC02);
    /* f16 subnormals, spacing 2^-24. */
    cr_assert_eq(ENC(PARITY_DT_F16, 0x1p-25), 0x0000);           /* half the min: to 0 */
    cr_assert_eq(ENC(PARITY_DT_F16, -0x1p-25), 0x8000);          /* keeps the sign */
    cr_assert_eq(ENC(PARITY_DT_F16, 0x1p-25 + 0x1p-60), 0x0001);
    cr_assert_eq(ENC(PARITY_DT_F16, 3 * 0x1p-25), 0x0002);
    cr_assert_eq(ENC(PARITY_DT_F16, 0x1p-26), 0x0000);
    cr_assert_eq(ENC(PARITY_DT_F16, DBL_TRUE_MIN), 0x0000);
    cr_assert_eq(ENC(PARITY_DT_F16, (1023.5) * 0x1p-24), 0x0400); /* max subnormal + half: to normal */
    cr_assert_eq(ENC(PARITY_DT_F16, (1022.5) * 0x1p-24), 0x03FE);
    /* bf16, spacing 2^-7 at 1.0. */
    cr_assert_eq(ENC(PARITY_DT_BF16, 1.0 + 0x1p-8), 0x3F80);
    cr_assert_eq(ENC(PARITY_DT_BF16, 1.0 + 3 * 0x1p-8), 0x3F82);
    cr_assert_eq(ENC(PARITY_DT_BF16, 3.14159265358979), 0x4049);
    cr_assert_eq(ENC(PARITY_DT_BF16, 0x1p-134), 0x0000);
    cr_assert_eq(ENC(PARITY_DT_BF16, 3 * 0x1p-134), 0x0002);
    /* e4m3fn, spacing 2^-3 at 1.0, subnormal spacing 2^-9. */
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, 1.0 + 0x1p-4), 0x38);
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, 1.0 + 3 * 0x1p-4), 0x3A);
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, 0x1p-10), 0x00);
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, 3 * 0x1p-10), 0x02);
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, 432.0), 0x7E); /* 416|448 tie -> 448 (even) */
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, 464.0), 0x7E); /* 448|480 tie -> 448 (even) */
    /* e5m2, spacing 2^-2 at 1.0, subnormal spacing 2^-16. */
    cr_assert_eq(ENC(PARITY_DT_F8E5M2, 1.0 + 0x1p-3), 0x3C);
    cr_assert_eq(ENC(PARITY_DT_F8E5M2, 1.0 + 3 * 0x1p-3), 0x3E);
    cr_assert_eq(ENC(PARITY_DT_F8E5M2, 0x1p-17), 0x00);
    cr_assert_eq(ENC(PARITY_DT_F8E5M2, 3 * 0x1p-17), 0x02);
    cr_assert_eq(ENC(PARITY_DT_F8E5M2, 53248.0), 0x7A); /* 49152|57344 tie -> 0x7A (even) */
    /* f32. */
    cr_assert_eq(ENC(PARITY_DT_F32, 1.0 + 0x1p-24), 0x3F800000);
    cr_assert_eq(ENC(PARITY_DT_F32, 1.0 + 3 * 0x1p-24), 0x3F800002);
    cr_assert_eq(ENC(PARITY_DT_F32, 0x1p-150), 0x00000000);
    cr_assert_eq(ENC(PARITY_DT_F32, 3 * 0x1p-150), 0x00000002);
}

Test(encode, overflow)
{
    /* f16: max 65504, half ulp 16. */
    cr_assert_eq(ENC(PARITY_DT_F16, 65504.0), 0x7BFF);
    cr_assert_eq(ENC(PARITY_DT_F16, 65519.99), 0x7BFF);
    cr_assert_eq(ENC(PARITY_DT_F16, 65520.0), 0x7C00);
    cr_assert_eq(ENC(PARITY_DT_F16, -65520.0), 0xFC00);
    cr_assert_eq(ENC(PARITY_DT_F16, 1e300), 0x7C00);
    cr_assert_eq(ENC(PARITY_DT_F16, DBL_MAX), 0x7C00);
    cr_assert_eq(ENC(PARITY_DT_F16, INFINITY), 0x7C00);
    cr_assert_eq(ENC(PARITY_DT_F16, -INFINITY), 0xFC00);
    /* bf16: max (2 - 2^-7) 2^127, half ulp 2^119. */
    cr_assert_eq(ENC(PARITY_DT_BF16, 0x1.fep127), 0x7F7F);
    cr_assert_eq(ENC(PARITY_DT_BF16, 0x1.fep127 + 0x1p119 - 0x1p90), 0x7F7F);
    cr_assert_eq(ENC(PARITY_DT_BF16, 0x1.fep127 + 0x1p119), 0x7F80);
    cr_assert_eq(ENC(PARITY_DT_BF16, (double)FLT_MAX), 0x7F80);
    cr_assert_eq(ENC(PARITY_DT_BF16, -1e39), 0xFF80);
    /* e5m2: max 57344, half ulp 4096. */
    cr_assert_eq(ENC(PARITY_DT_F8E5M2, 61439.0), 0x7B);
    cr_assert_eq(ENC(PARITY_DT_F8E5M2, 61440.0), 0x7C);
    cr_assert_eq(ENC(PARITY_DT_F8E5M2, -1e10), 0xFC);
    cr_assert_eq(ENC(PARITY_DT_F8E5M2, INFINITY), 0x7C);
    /* e4m3fn: no inf, max 448, half ulp 16: what rounds above 448 becomes NaN. */
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, 448.0), 0x7E);
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, 464.0), 0x7E);
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, 464.0 + 0x1p-40), 0x7F);
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, -464.0 - 0x1p-40), 0xFF);
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, 480.0), 0x7F);
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, 1e300), 0x7F);
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, INFINITY), 0x7F);
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, -INFINITY), 0xFF);
    /* f32: max, half ulp 2^103. */
    cr_assert_eq(ENC(PARITY_DT_F32, (double)FLT_MAX), 0x7F7FFFFF);
    cr_assert_eq(ENC(PARITY_DT_F32, (double)FLT_MAX + 0x1p103), 0x7F800000);
    cr_assert_eq(ENC(PARITY_DT_F32, (double)FLT_MAX + 0x1p102), 0x7F7FFFFF);
    cr_assert_eq(ENC(PARITY_DT_F32, -DBL_MAX), 0xFF800000);
}

Test(encode, nan_and_zero)
{
    cr_assert_eq(ENC(PARITY_DT_F16, NAN), 0x7E00);
    cr_assert_eq(ENC(PARITY_DT_F16, -NAN), 0xFE00);
    cr_assert_eq(ENC(PARITY_DT_BF16, NAN), 0x7FC0);
    cr_assert_eq(ENC(PARITY_DT_F32, NAN), 0x7FC00000);
    cr_assert_eq(ENC(PARITY_DT_F8E5M2, NAN), 0x7E);
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, NAN), 0x7F);
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, -NAN), 0xFF);
    /* A signalling-NaN input still yields a quiet NaN. */
    double snan;
    uint64_t sb = UINT64_C(0x7FF0000000000001);
    memcpy(&snan, &sb, 8);
    cr_assert_eq(ENC(PARITY_DT_F16, snan), 0x7E00);
    cr_assert_eq(ENC(PARITY_DT_F16, -0.0), 0x8000);
    cr_assert_eq(ENC(PARITY_DT_F8E4M3FN, -0.0), 0x80);
    cr_assert_eq(ENC(PARITY_DT_F32, -0.0), 0x80000000);
    /* f64 is stored as is, NaN payload included. */
    cr_assert_eq(ENC(PARITY_DT_F64, snan), sb);
    cr_assert_eq(ENC(PARITY_DT_F64, -0.0), UINT64_C(0x8000000000000000));
}

Test(encode, integers)
{
    int8_t i8;
    parity_encode(PARITY_DT_I8, 2.5, &i8);   cr_assert_eq(i8, 2);
    parity_encode(PARITY_DT_I8, 3.5, &i8);   cr_assert_eq(i8, 4);
    parity_encode(PARITY_DT_I8, -2.5, &i8);  cr_assert_eq(i8, -2);
    parity_encode(PARITY_DT_I8, -3.5, &i8);  cr_assert_eq(i8, -4);
    parity_encode(PARITY_DT_I8, -0.5, &i8);  cr_assert_eq(i8, 0);
    parity_encode(PARITY_DT_I8, 0.5000001, &i8); cr_assert_eq(i8, 1);
    parity_encode(PARITY_DT_I8, 1.4999999, &i8); cr_assert_eq(i8, 1);
    parity_encode(PARITY_DT_I8, 127.4, &i8); cr_assert_eq(i8, 127);
    parity_encode(PARITY_DT_I8, 127.5, &i8); cr_assert_eq(i8, 127); /* 128 clamped */
    parity_encode(PARITY_DT_I8, 300.0, &i8); cr_assert_eq(i8, 127);
    parity_encode(PARITY_DT_I8, -128.5, &i8); cr_assert_eq(i8, -128);
    parity_encode(PARITY_DT_I8, -129.0, &i8); cr_assert_eq(i8, -128);
    parity_encode(PARITY_DT_I8, NAN, &i8);   cr_assert_eq(i8, 0);
    parity_encode(PARITY_DT_I8, INFINITY, &i8);  cr_assert_eq(i8, 127);
    parity_encode(PARITY_DT_I8, -INFINITY, &i8); cr_assert_eq(i8, -128);

    uint8_t u8;
    parity_encode(PARITY_DT_U8, -5.0, &u8);  cr_assert_eq(u8, 0);
    parity_encode(PARITY_DT_U8, -0.4, &u8);  cr_assert_eq(u8, 0);
    parity_encode(PARITY_DT_U8, 254.5, &u8); cr_assert_eq(u8, 254);
    parity_encode(PARITY_DT_U8, 255.5, &u8); cr_assert_eq(u8, 255);
    parity_encode(PARITY_DT_U8, 1e9, &u8);   cr_assert_eq(u8, 255);
    parity_encode(PARITY_DT_U8, NAN, &u8);   cr_assert_eq(u8, 0);

    int16_t i16;
    parity_encode(PARITY_DT_I16, -40000.0, &i16); cr_assert_eq(i16, INT16_MIN);
    parity_encode(PARITY_DT_I16, 32766.5, &i16);  cr_assert_eq(i16, 32766);
    uint16_t u16;
    parity_encode(PARITY_DT_U16, 65535.49, &u16); cr_assert_eq(u16, 65535);
    parity_encode(PARITY_DT_U16, 70000.0, &u16);  cr_assert_eq(u16, 65535);

    int32_t i32;
    parity_encode(PARITY_DT_I32, 2147483646.5, &i32); cr_assert_eq(i32, 2147483646);
    parity_encode(PARITY_DT_I32, 2147483647.5, &i32); cr_assert_eq(i32, INT32_MAX);
    parity_encode(PARITY_DT_I32, -2147483648.5, &i32); cr_assert_eq(i32, INT32_MIN);
    parity_encode(PARITY_DT_I32, -1e12, &i32); cr_assert_eq(i32, INT32_MIN);
    uint32_t u32;
    parity_encode(PARITY_DT_U32, 4294967294.5, &u32); cr_assert_eq(u32, 4294967294u);
    parity_encode(PARITY_DT_U32, 4294967295.5, &u32); cr_assert_eq(u32, UINT32_MAX);

    int64_t i64;
    parity_encode(PARITY_DT_I64, 0x1p63, &i64);  cr_assert_eq(i64, INT64_MAX);
    parity_encode(PARITY_DT_I64, 1e19, &i64);    cr_assert_eq(i64, INT64_MAX);
    parity_encode(PARITY_DT_I64, -0x1p63, &i64); cr_assert_eq(i64, INT64_MIN);
    parity_encode(PARITY_DT_I64, -1e19, &i64);   cr_assert_eq(i64, INT64_MIN);
    parity_encode(PARITY_DT_I64, 0x1.fffffffffffffp62, &i64);
    cr_assert_eq(i64, INT64_C(0x7FFFFFFFFFFFFC00));
    parity_encode(PARITY_DT_I64, NAN, &i64);     cr_assert_eq(i64, 0);
    parity_encode(PARITY_DT_I64, 4503599627370495.5, &i64); /* 2^52 - 0.5: tie, to even */
    cr_assert_eq(i64, INT64_C(4503599627370496));
    parity_encode(PARITY_DT_I64, 4503599627370494.5, &i64);
    cr_assert_eq(i64, INT64_C(4503599627370494));

    uint64_t u64;
    parity_encode(PARITY_DT_U64, 0x1p64, &u64);  cr_assert_eq(u64, UINT64_MAX);
    parity_encode(PARITY_DT_U64, 0x1.fffffffffffffp63, &u64);
    cr_assert_eq(u64, UINT64_C(0xFFFFFFFFFFFFF800));
    parity_encode(PARITY_DT_U64, -1.0, &u64);    cr_assert_eq(u64, 0);
    parity_encode(PARITY_DT_U64, NAN, &u64);     cr_assert_eq(u64, 0);
    parity_encode(PARITY_DT_U64, INFINITY, &u64); cr_assert_eq(u64, UINT64_MAX);

    uint8_t b = 7;
    parity_encode(PARITY_DT_BOOL, 0.0, &b);   cr_assert_eq(b, 0);
    parity_encode(PARITY_DT_BOOL, -0.0, &b);  cr_assert_eq(b, 0);
    parity_encode(PARITY_DT_BOOL, 0.1, &b);   cr_assert_eq(b, 1);
    parity_encode(PARITY_DT_BOOL, -3.0, &b);  cr_assert_eq(b, 1);
    parity_encode(PARITY_DT_BOOL, NAN, &b);   cr_assert_eq(b, 1); /* C's _Bool semantics */
}

Test(encode, writes_only_its_size)
{
    for (int dt = PARITY_DT_INVALID; dt < PARITY_DT_COUNT; dt++) {
        unsigned char buf[16];
        memset(buf, 0xA5, sizeof buf);
        parity_encode((parity_dtype)dt, 1.0, buf);
        size_t sz = parity_dtype_size((parity_dtype)dt);
        for (size_t i = sz; i < sizeof buf; i++)
            cr_assert_eq(buf[i], 0xA5, "%s wrote byte %zu", parity_dtype_name((parity_dtype)dt), i);
        if (dt != PARITY_DT_INVALID) {
            double back = 0;
            parity_decode((parity_dtype)dt, buf, &back, 1);
            cr_assert_eq(back, 1.0, "%s", parity_dtype_name((parity_dtype)dt));
        }
    }
}

/* ---------------------------------------------------------------------------------- */
/* Names and properties                                                               */

Test(names, roundtrip_every_dtype)
{
    const char *want[PARITY_DT_COUNT] = {
        "invalid", "float64", "float32", "float16", "bfloat16", "float8_e4m3fn",
        "float8_e5m2", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
        "uint64", "bool"};
    for (int dt = PARITY_DT_INVALID + 1; dt < PARITY_DT_COUNT; dt++) {
        const char *z = parity_dtype_name((parity_dtype)dt);
        cr_assert_str_eq(z, want[dt]);
        cr_assert_eq(parity_dtype_from_name(z), (parity_dtype)dt, "%s", z);
    }
    cr_assert_str_eq(parity_dtype_name(PARITY_DT_INVALID), "invalid");
    cr_assert_str_eq(parity_dtype_name(PARITY_DT_COUNT), "invalid");
    cr_assert_str_eq(parity_dtype_name((parity_dtype)1000), "invalid");
}

Test(names, aliases)
{
    cr_assert_eq(parity_dtype_from_name("f64"), PARITY_DT_F64);
    cr_assert_eq(parity_dtype_from_name("double"), PARITY_DT_F64);
    cr_assert_eq(parity_dtype_from_name("f32"), PARITY_DT_F32);
    cr_assert_eq(parity_dtype_from_name("float"), PARITY_DT_F32);
    cr_assert_eq(parity_dtype_from_name("f16"), PARITY_DT_F16);
    cr_assert_eq(parity_dtype_from_name("half"), PARITY_DT_F16);
    cr_assert_eq(parity_dtype_from_name("bf16"), PARITY_DT_BF16);
    cr_assert_eq(parity_dtype_from_name("fp8_e4m3"), PARITY_DT_F8E4M3FN);
    cr_assert_eq(parity_dtype_from_name("fp8_e4m3fn"), PARITY_DT_F8E4M3FN);
    cr_assert_eq(parity_dtype_from_name("fp8_e5m2"), PARITY_DT_F8E5M2);
}

Test(names, invalid)
{
    const char *bad[] = {"", "invalid", "float128", "Float32", "FLOAT32", "float32 ",
                         "int", "f8", "float8_e4m3fnuz", "float8_e5m2fnuz", "bfloat", "uint",
                         "boolean", "i8", "u8"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(parity_dtype_from_name(bad[i]), PARITY_DT_INVALID, "'%s'", bad[i]);
    cr_assert_eq(parity_dtype_from_name(NULL), PARITY_DT_INVALID);
}

Test(props, table)
{
    static const struct {
        parity_dtype dt;
        size_t size;
        int isFloat, isExact;
        double minNorm, maxFin;
    } t[] = {
        {PARITY_DT_F64, 8, 1, 0, 0x1p-1022, DBL_MAX},
        {PARITY_DT_F32, 4, 1, 0, 0x1p-126, FLT_MAX},
        {PARITY_DT_F16, 2, 1, 0, 0x1p-14, 65504.0},
        {PARITY_DT_BF16, 2, 1, 0, 0x1p-126, 0x1.fep127},
        {PARITY_DT_F8E4M3FN, 1, 1, 0, 0x1p-6, 448.0},
        {PARITY_DT_F8E5M2, 1, 1, 0, 0x1p-14, 57344.0},
        {PARITY_DT_I8, 1, 0, 1, 1.0, 127.0},
        {PARITY_DT_I16, 2, 0, 1, 1.0, 32767.0},
        {PARITY_DT_I32, 4, 0, 1, 1.0, 2147483647.0},
        {PARITY_DT_I64, 8, 0, 1, 1.0, 0x1p63},
        {PARITY_DT_U8, 1, 0, 1, 1.0, 255.0},
        {PARITY_DT_U16, 2, 0, 1, 1.0, 65535.0},
        {PARITY_DT_U32, 4, 0, 1, 1.0, 4294967295.0},
        {PARITY_DT_U64, 8, 0, 1, 1.0, 0x1p64},
        {PARITY_DT_BOOL, 1, 0, 1, 1.0, 1.0},
    };
    cr_assert_eq(sizeof t / sizeof t[0], (size_t)PARITY_DT_COUNT - 1, "every dtype listed");
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        const char *z = parity_dtype_name(t[i].dt);
        cr_assert_eq(parity_dtype_size(t[i].dt), t[i].size, "%s", z);
        cr_assert_eq(parity_dtype_is_float(t[i].dt), t[i].isFloat, "%s", z);
        cr_assert_eq(parity_dtype_is_exact(t[i].dt), t[i].isExact, "%s", z);
        cr_assert_eq(parity_dtype_smallest_normal(t[i].dt), t[i].minNorm, "%s", z);
        cr_assert_eq(parity_dtype_max_finite(t[i].dt), t[i].maxFin, "%s", z);
    }
    cr_assert_eq(parity_dtype_size(PARITY_DT_INVALID), 0);
    cr_assert_eq(parity_dtype_is_float(PARITY_DT_INVALID), 0);
    cr_assert_eq(parity_dtype_is_exact(PARITY_DT_INVALID), 0);
}

/* ---------------------------------------------------------------------------------- */
/* The float table                                                                    */

/* Each row against this file's spec values and the relations float_format.h states. */
Test(float_format, rows_match_the_specs)
{
    for (size_t i = 0; i < N_FMT; i++) {
        const fmt_info *pI = &g_aFmt[i];
        const parity_float_format *pF = parity_float_format_of(pI->dt);
        const char *z = parity_dtype_name(pI->dt);
        int emin = 1 - pI->bias;
        /* The top binade's exponent field: all ones less one (IEEE) or all ones (e4m3fn). */
        int emax = (1 << pI->ebits) - (pI->hasInf ? 2 : 1) - pI->bias;
        double aMax[1];
        unsigned char aBits[8];

        cr_assert_not_null(pF, "%s", z);
        cr_assert_eq(pF->dtype, pI->dt, "%s", z);
        cr_assert_eq(pF->nBits, pI->width, "%s", z);
        cr_assert_eq(pF->nBits, 1 + pF->exponentBits + pF->mantissaBits, "%s", z);
        cr_assert_eq((size_t)pF->nBits, 8 * parity_dtype_size(pI->dt), "%s", z);
        cr_assert_eq(pF->exponentBits, pI->ebits, "%s", z);
        cr_assert_eq(pF->mantissaBits, pI->mbits, "%s", z);
        cr_assert_eq(pF->precision, pI->mbits + 1, "%s", z);
        cr_assert_eq(pF->bias, pI->bias, "%s", z);
        cr_assert_eq(pF->emin, emin, "%s", z);
        cr_assert_eq(pF->emax, emax, "%s", z);
        cr_assert_eq(pF->maxFinite, pI->maxVal, "%s", z);
        cr_assert_eq(pF->maxFinite, ldexp(2.0 - ldexp(1.0, pI->hasInf ? -pI->mbits
                                                                    : 1 - pI->mbits), emax),
                     "%s", z);
        put_bits(pI->width, pI->maxBits, aBits);
        if (pI->width == 64) memcpy(aMax, aBits, 8);
        else parity_decode(pI->dt, aBits, aMax, 1);
        cr_assert_eq(aMax[0], pF->maxFinite, "%s: the largest finite pattern", z);
        cr_assert_eq(pF->minNormal, ldexp(1.0, emin), "%s", z);
        cr_assert_eq(pF->minSubnormal, ldexp(1.0, emin - pI->mbits), "%s", z);
        cr_assert_eq(pF->hasInf, pI->hasInf, "%s", z);
        cr_assert_eq(pF->nanRule, pI->hasInf ? PARITY_NAN_IEEE : PARITY_NAN_ALL_ONES_ONLY, "%s", z);
    }
}

Test(float_format, rows_exactly_for_the_float_dtypes)
{
    size_t nRow = 0;
    for (int i = 0; i < PARITY_DT_COUNT; i++) {
        parity_dtype dt = (parity_dtype)i;
        cr_assert_eq(parity_float_format_of(dt) != NULL, parity_dtype_is_float(dt) != 0, "%s",
                     parity_dtype_name(dt));
        nRow += parity_float_format_of(dt) != NULL;
    }
    cr_assert_eq(nRow, N_FMT);
    cr_assert_null(parity_float_format_of(PARITY_DT_INVALID));
    cr_assert_null(parity_float_format_of(PARITY_DT_COUNT));
    cr_assert_null(parity_float_format_of((parity_dtype)-1));
}
