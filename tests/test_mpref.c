/*
 * test_mpref.c - the MPFR groundwork of the references (tolerance/mpref.c).
 *
 * Rounding to a dtype is checked three ways: hand-picked corner cases per format (ties at
 * midpoints, just above and below them by far less than a binary64 ulp, the subnormal range,
 * max finite and the overflow threshold, e4m3fn's NaN rule, mirrored negatives); bit for bit
 * against formats/dtype.c's independent encoder (decode(encode(x))) on random doubles of
 * every exponent range; and, for inputs wider than binary64, against a brute-force nearest
 * neighbour over every value of the 8- and 16-bit formats and against MPFR's own
 * mpfr_get_flt / mpfr_get_d (separate code paths inside MPFR) for binary32 / binary64.
 * Exact dot products and sums are checked against a sequential 256-bit MPFR evaluation
 * whose every step is asserted to be exact, on random data and on cancellation cases where
 * binary64 summation returns 0. Every function must leave MPFR's exponent range and flags
 * as it found them, also from several threads.
 */
#include <criterion/criterion.h>

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tolerance/mpref.h"
#include "support.h"

/* ---------------------------------------------------------------------------------- */
/* Helpers                                                                            */

/* Float formats written out from the specs (IEEE 754-2008, OCP OFP8 rev. 1.0), not taken
 * from mpref.c. eMin is the exponent of the smallest normal, eMax that of the top binade. */
typedef struct {
    parity_dtype dt;
    int width, p, eMin, eMax;
    double maxVal;
    int hasInf; /* 0: overflow gives NaN (e4m3fn) */
} fmt_t;

static const fmt_t g_aFmt[] = {
    {PARITY_DT_F64, 64, 53, -1022, 1023, DBL_MAX, 1},
    {PARITY_DT_F32, 32, 24, -126, 127, FLT_MAX, 1},
    {PARITY_DT_F16, 16, 11, -14, 15, 65504.0, 1},
    {PARITY_DT_BF16, 16, 8, -126, 127, 0x1.fep+127, 1},
    {PARITY_DT_F8E4M3FN, 8, 4, -6, 8, 448.0, 0},
    {PARITY_DT_F8E5M2, 8, 3, -14, 15, 57344.0, 1},
};
#define N_FMT (sizeof(g_aFmt) / sizeof(g_aFmt[0]))

static const parity_dtype g_aIntDt[] = {
    PARITY_DT_I8, PARITY_DT_I16, PARITY_DT_I32, PARITY_DT_I64,
    PARITY_DT_U8, PARITY_DT_U16, PARITY_DT_U32, PARITY_DT_U64,
};
#define N_INT (sizeof(g_aIntDt) / sizeof(g_aIntDt[0]))

/* dbits and same_double: support.h */

/* The generator is splitmix64 (support.h): deterministic, so a failure reproduces. */

static double rng_double_bits(uint64_t *pS)
{
    uint64_t u = splitmix64(pS);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* Random double with a random 53-bit significand, exponent in [eLo, eHi], random sign. */
static double rng_double_exp(uint64_t *pS, int eLo, int eHi)
{
    uint64_t r = splitmix64(pS);
    double m = 1.0 + ldexp((double)(r >> 12), -52);
    int e = eLo + (int)(splitmix64(pS) % (uint64_t)(eHi - eLo + 1));
    double d = ldexp(m, e); /* rounds in the subnormal range; still a valid double */
    return (r & 1) ? -d : d;
}

/* The dtype.c encoder and decoder: an implementation independent of MPFR. */
static double enc_dec(parity_dtype dt, double x)
{
    unsigned char buf[8];
    double d = -12345.0;
    memset(buf, 0xA5, sizeof buf);
    parity_encode(dt, x, buf);
    parity_decode(dt, buf, &d, 1);
    return d;
}

static double decode_pattern(const fmt_t *pF, uint64_t bits)
{
    unsigned char buf[8];
    double d = -12345.0;
    switch (pF->width) {
    case 8: { uint8_t v = (uint8_t)bits; memcpy(buf, &v, 1); break; }
    case 16: { uint16_t v = (uint16_t)bits; memcpy(buf, &v, 2); break; }
    case 32: { uint32_t v = (uint32_t)bits; memcpy(buf, &v, 4); break; }
    default: memcpy(buf, &bits, 8); break;
    }
    parity_decode(pF->dt, buf, &d, 1);
    return d;
}

static double smallest_sub(const fmt_t *pF) { return ldexp(1.0, pF->eMin - pF->p + 1); }
static double ulp_of_max(const fmt_t *pF) { return ldexp(1.0, pF->eMax - pF->p + 1); }

/* What overflow produces, with x's sign. */
static double overflow_value(const fmt_t *pF, int neg)
{
    if (!pF->hasInf)
        return NAN;
    return neg ? -INFINITY : INFINITY;
}

/* Rounds m 2^e + s1 2^e1 + s2 2^e2 (s1, s2 in {-1, 0, 1}), formed exactly, to dt. */
static double round_sum3(parity_dtype dt, double m, long e, int s1, long e1, int s2, long e2)
{
    mpfr_t x, t;
    double d;
    mpfr_inits2(8000, x, t, (mpfr_ptr)0); /* 2^5000 .. 2^-3000 exactly */
    cr_assert_eq(mpfr_set_d(x, m, MPFR_RNDN), 0);
    mpfr_mul_2si(x, x, e, MPFR_RNDN);
    if (s1 != 0) {
        mpfr_set_si_2exp(t, s1, e1, MPFR_RNDN);
        cr_assert_eq(mpfr_add(x, x, t, MPFR_RNDN), 0, "test input not exact");
    }
    if (s2 != 0) {
        mpfr_set_si_2exp(t, s2, e2, MPFR_RNDN);
        cr_assert_eq(mpfr_add(x, x, t, MPFR_RNDN), 0, "test input not exact");
    }
    /* Hand the rounding the narrowest exact copy, as a reference would (any precision
     * must work; 8000 bits is just what building the value needed). */
    mpfr_prec_round(x, mpfr_min_prec(x) < 2 ? 2 : mpfr_min_prec(x), MPFR_RNDN);
    d = parity_round_to_dtype(x, dt);
    mpfr_clears(x, t, (mpfr_ptr)0);
    return d;
}

/* m 2^e plus s 2^(e + tinyRel) (nothing when s == 0). */
static double round_scaled(parity_dtype dt, double m, long e, int s, long tinyRel)
{
    return round_sum3(dt, m, e, s, e + tinyRel, 0, 0);
}

/* A binary64 value plus s 2^tinyExp (absolute). */
static double round_plus(parity_dtype dt, double v, int s, long tinyExp)
{
    return round_sum3(dt, v, 0, s, tinyExp, 0, 0);
}

#define ASSERT_SAME(got, want, ...) \
    cr_assert(same_double((got), (want)), ##__VA_ARGS__)

/* ---------------------------------------------------------------------------------- */
/* Unit roundoff, gamma, ulp                                                          */

Test(mpref, unit_roundoff)
{
    cr_assert_eq(parity_unit_roundoff(PARITY_DT_F64), 0x1p-53);
    cr_assert_eq(parity_unit_roundoff(PARITY_DT_F32), 0x1p-24);
    cr_assert_eq(parity_unit_roundoff(PARITY_DT_F16), 0x1p-11);
    cr_assert_eq(parity_unit_roundoff(PARITY_DT_BF16), 0x1p-8);
    cr_assert_eq(parity_unit_roundoff(PARITY_DT_F8E4M3FN), 0x1p-4);
    cr_assert_eq(parity_unit_roundoff(PARITY_DT_F8E5M2), 0x1p-3);
    for (size_t i = 0; i < N_INT; i++)
        cr_assert_eq(parity_unit_roundoff(g_aIntDt[i]), 0.0);
    cr_assert_eq(parity_unit_roundoff(PARITY_DT_BOOL), 0.0);
    cr_assert_eq(parity_unit_roundoff(PARITY_DT_INVALID), 0.0);
}

/* g must be an upper bound of n u / (1 - n u) and within 2 ulps of it; checked exactly:
 * g (1 - n u) >= n u, with every product formed without rounding. */
static void check_gamma_bound(double n, double u)
{
    double g = parity_gamma(n, u);
    mpfr_t nu, den, lhs;
    mpfr_inits2(4400, nu, den, lhs, (mpfr_ptr)0);
    mpfr_set_d(nu, n, MPFR_RNDN);
    cr_assert_eq(mpfr_mul_d(nu, nu, u, MPFR_RNDN), 0);
    cr_assert(mpfr_cmp_ui(nu, 1) < 0);
    cr_assert_eq(mpfr_ui_sub(den, 1, nu, MPFR_RNDN), 0);
    cr_assert(isfinite(g) && g > 0.0, "gamma(%g, %a) = %a", n, u, g);
    cr_assert_eq(mpfr_mul_d(lhs, den, g, MPFR_RNDN), 0);
    cr_assert(mpfr_cmp(lhs, nu) >= 0, "gamma(%g, %a) = %a is below the exact value", n, u, g);
    /* Two steps down must be below the exact value: the bound is tight. */
    double g2 = nextafter(nextafter(g, 0.0), 0.0);
    cr_assert_eq(mpfr_mul_d(lhs, den, g2, MPFR_RNDN), 0);
    cr_assert(mpfr_cmp(lhs, nu) < 0, "gamma(%g, %a) = %a is more than 2 ulps high", n, u, g);
    mpfr_clears(nu, den, lhs, (mpfr_ptr)0);
}

Test(mpref, gamma)
{
    /* Exactly representable cases come out exactly. */
    cr_assert_eq(parity_gamma(15.0, 0x1p-4), 15.0);  /* (15/16) / (1/16) */
    cr_assert_eq(parity_gamma(1.0, 0.5), 1.0);
    cr_assert_eq(parity_gamma(3.0, 0.25), 3.0);
    cr_assert_eq(parity_gamma(0.0, 0x1p-53), 0.0);
    cr_assert_eq(parity_gamma(100.0, 0.0), 0.0);
    /* gamma_1 for binary64: 2^-53 / (1 - 2^-53) = 2^-53 (1 + 2^-53 + ...), rounded up. */
    cr_assert_eq(parity_gamma(1.0, 0x1p-53), 0x1p-53 * (1.0 + 0x1p-52));
    /* n u >= 1: no bound. */
    cr_assert(isinf(parity_gamma(16.0, 0x1p-4)) && parity_gamma(16.0, 0x1p-4) > 0);
    cr_assert(isinf(parity_gamma(17.0, 0x1p-4)));
    cr_assert(isinf(parity_gamma(0x1p53, 0x1p-53)));
    cr_assert(isinf(parity_gamma(1e300, 0x1p-24)));
    cr_assert(isinf(parity_gamma(INFINITY, 0x1p-24)));
    cr_assert(isnan(parity_gamma(NAN, 0x1p-24)));
    cr_assert(isnan(parity_gamma(-1.0, 0x1p-24)));
    /* Just below n u = 1 the bound is huge but finite. */
    cr_assert(isfinite(parity_gamma(0x1p53 - 1, 0x1p-53)));
    double aN[] = {1, 2, 3, 7, 10, 100, 1000, 4096, 12345, 1e6, 1e9, 0x1p52, 0x1p53 - 1};
    double aU[] = {0x1p-53, 0x1p-24, 0x1p-11, 0x1p-8, 0x1p-4, 0x1p-3};
    for (size_t i = 0; i < sizeof aN / sizeof aN[0]; i++)
        for (size_t j = 0; j < sizeof aU / sizeof aU[0]; j++)
            if (aN[i] * aU[j] < 1.0)
                check_gamma_bound(aN[i], aU[j]);
    check_gamma_bound(3.0, 0x1p-1074); /* tiny n u: the subnormal result is rounded up */
    check_gamma_bound(0.1, 0.3);       /* non-integer inputs: n u is formed exactly */
}

Test(mpref, ulp_at_known)
{
    cr_assert_eq(parity_ulp_at(PARITY_DT_F64, 1.0), 0x1p-52);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F32, 1.0), 0x1p-23);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F16, 1.0), 0x1p-10);
    cr_assert_eq(parity_ulp_at(PARITY_DT_BF16, 1.0), 0x1p-7);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F8E4M3FN, 1.0), 0x1p-3);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F8E5M2, 1.0), 0x1p-2);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F32, 1.9999), 0x1p-23);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F32, 2.0), 0x1p-22);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F32, -3.0), 0x1p-22);
    /* Zero and subnormals: the smallest subnormal. */
    cr_assert_eq(parity_ulp_at(PARITY_DT_F64, 0.0), 0x1p-1074);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F64, -0.0), 0x1p-1074);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F64, 0x1p-1074), 0x1p-1074);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F64, 0x1p-1022), 0x1p-1074);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F64, 0x1p-1021), 0x1p-1073);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F32, 0.0), 0x1p-149);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F32, 1e-45), 0x1p-149);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F32, 1e-300), 0x1p-149);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F32, 0x1p-126), 0x1p-149);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F32, 0x1p-125), 0x1p-148);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F16, 0.0), 0x1p-24);
    cr_assert_eq(parity_ulp_at(PARITY_DT_BF16, 0.0), 0x1p-133);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F8E4M3FN, 0.0), 0x1p-9);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F8E5M2, 0.0), 0x1p-16);
    /* Max finite and beyond: the spacing at the max. */
    cr_assert_eq(parity_ulp_at(PARITY_DT_F64, DBL_MAX), 0x1p971);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F64, INFINITY), 0x1p971);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F32, FLT_MAX), 0x1p104);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F32, 1e39), 0x1p104);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F32, -1e300), 0x1p104);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F32, -INFINITY), 0x1p104);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F16, 65504.0), 32.0);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F16, 1e6), 32.0);
    cr_assert_eq(parity_ulp_at(PARITY_DT_BF16, 0x1.fep+127), 0x1p120);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F8E4M3FN, 448.0), 32.0);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F8E4M3FN, 500.0), 32.0);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F8E4M3FN, 1e9), 32.0);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F8E5M2, 57344.0), 8192.0);
    cr_assert_eq(parity_ulp_at(PARITY_DT_F8E5M2, 1e9), 8192.0);
    cr_assert(isnan(parity_ulp_at(PARITY_DT_F32, NAN)));
    cr_assert_eq(parity_ulp_at(PARITY_DT_I32, 12345.0), 1.0);
}

/* Every finite value v of the 8- and 16-bit formats: the spacing at v is the distance to the
 * next value up (the next pattern), and also holds throughout [v, next). */
static void check_ulp_exhaustive(const fmt_t *pF)
{
    uint64_t nPos = UINT64_C(1) << (pF->width - 1);
    for (uint64_t b = 0; b + 1 < nPos; b++) {
        double v = decode_pattern(pF, b), w = decode_pattern(pF, b + 1);
        if (!isfinite(w))
            break;
        double mid = v + (w - v) * 0.75;
        cr_assert_eq(parity_ulp_at(pF->dt, v), w - v, "%s at %a", parity_dtype_name(pF->dt), v);
        cr_assert_eq(parity_ulp_at(pF->dt, -v), w - v);
        cr_assert_eq(parity_ulp_at(pF->dt, mid), w - v);
    }
}

Test(mpref, ulp_at_exhaustive_small_formats)
{
    for (size_t i = 0; i < N_FMT; i++)
        if (g_aFmt[i].width <= 16)
            check_ulp_exhaustive(&g_aFmt[i]);
}

Test(mpref, ulp_at_f32_f64_sampled)
{
    uint64_t s = 7;
    for (int i = 0; i < 200000; i++) {
        uint32_t b = (uint32_t)(splitmix64(&s) % 0x7F7FFFFFu); /* b + 1 <= FLT_MAX's pattern */
        float v, w;
        uint32_t b1 = b + 1;
        memcpy(&v, &b, 4);
        memcpy(&w, &b1, 4);
        cr_assert_eq(parity_ulp_at(PARITY_DT_F32, v), (double)w - (double)v, "%a", (double)v);
        double dv = rng_double_exp(&s, -1080, 1022);
        cr_assert_eq(parity_ulp_at(PARITY_DT_F64, dv), nextafter(fabs(dv), INFINITY) - fabs(dv),
                     "%a", dv);
    }
}

/* ---------------------------------------------------------------------------------- */
/* Rounding: hand-picked cases per format                                             */

/* Midpoints between consecutive values in several binades, exactly and off by 2^-100
 * relative (far below a binary64 ulp, so only a single correct rounding gets them right). */
static void check_midpoints(const fmt_t *pF)
{
    const int p = pF->p;
    int aE[] = {pF->eMin, pF->eMin + 1, -1, 0, 1, pF->eMax - 1, pF->eMax};
    long aK[] = {0, 1, 2, 3, 4, 5, (1L << (p - 1)) - 2, (1L << (p - 1)) - 1};
    for (size_t ie = 0; ie < sizeof aE / sizeof aE[0]; ie++) {
        for (size_t ik = 0; ik < sizeof aK / sizeof aK[0]; ik++) {
            int e = aE[ie];
            long k = aK[ik];
            if (k >= (1L << (p - 1)))
                continue;
            /* v = 2^e (1 + k 2^(1-p)), next = v + 2^(e-p+1), mid = v + 2^(e-p) */
            double m = 1.0 + ldexp((double)k, 1 - p);
            double v = ldexp(m, e);
            if (v > pF->maxVal)
                continue;
            double ulp = ldexp(1.0, e - p + 1);
            int nextOver = (v == pF->maxVal);
            double next = nextOver ? overflow_value(pF, 0) : v + ulp;
            double want = (k % 2 == 0) ? v : next;
            for (int neg = 0; neg < 2; neg++) {
                double sg = neg ? -1.0 : 1.0;
                double wantS = isnan(want) ? NAN : sg * want;
                double nextS = isnan(next) ? NAN : sg * next;
                /* mid = v + 2^(e-p): p + 1 bits, so built in MPFR (binary64 lacks one for
                 * f64); then +- 2^(e-p-100). */
                int up = neg ? -1 : 1;
                ASSERT_SAME(round_sum3(pF->dt, sg * m, e, up, e - p, 0, 0), wantS,
                            "%s: midpoint above %a (k=%ld) should tie to even",
                            parity_dtype_name(pF->dt), sg * v, k);
                ASSERT_SAME(round_sum3(pF->dt, sg * m, e, up, e - p, up, e - p - 100), nextS,
                            "%s: just above the midpoint above %a", parity_dtype_name(pF->dt),
                            sg * v);
                ASSERT_SAME(round_sum3(pF->dt, sg * m, e, up, e - p, -up, e - p - 100), sg * v,
                            "%s: just below the midpoint above %a", parity_dtype_name(pF->dt),
                            sg * v);
                /* Exact values stay, and so do values a quarter ulp away. */
                ASSERT_SAME(round_scaled(pF->dt, sg * m, e, 0, 0), sg * v);
                ASSERT_SAME(round_scaled(pF->dt, sg * m, e, neg ? -1 : 1, -p - 1), sg * v);
                /* (For k = 0 this is a tie with the binade below, whose last value is odd.) */
                ASSERT_SAME(round_scaled(pF->dt, sg * m, e, neg ? 1 : -1, -p - 1), sg * v);
            }
        }
    }
}

static void check_subnormals(const fmt_t *pF)
{
    const double s = smallest_sub(pF);
    const long es = pF->eMin - pF->p + 1; /* s = 2^es */
    const double largestSub = ldexp(1.0, pF->eMin) - s;
    for (int neg = 0; neg < 2; neg++) {
        double sg = neg ? -1.0 : 1.0;
        const char *zN = parity_dtype_name(pF->dt);
        ASSERT_SAME(round_scaled(pF->dt, sg * 1.0, es, 0, 0), sg * s, "%s: smallest", zN);
        /* Half of the smallest subnormal: a tie between 0 (even) and s (odd). */
        ASSERT_SAME(round_scaled(pF->dt, sg * 0.5, es, 0, 0), sg * 0.0, "%s: s/2 -> 0", zN);
        ASSERT_SAME(round_scaled(pF->dt, sg * 0.5, es, neg ? -1 : 1, -90), sg * s,
                    "%s: just above s/2 -> s", zN);
        ASSERT_SAME(round_scaled(pF->dt, sg * 0.5, es, neg ? 1 : -1, -90), sg * 0.0,
                    "%s: just below s/2 -> 0", zN);
        ASSERT_SAME(round_scaled(pF->dt, sg * 0.75, es, 0, 0), sg * s, "%s: 0.75 s -> s", zN);
        ASSERT_SAME(round_scaled(pF->dt, sg * 0.25, es, 0, 0), sg * 0.0, "%s: s/4 -> 0", zN);
        ASSERT_SAME(round_scaled(pF->dt, sg * 1.0, es - 3000, 0, 0), sg * 0.0,
                    "%s: far below -> 0", zN);
        ASSERT_SAME(round_scaled(pF->dt, sg * 1.5, es, 0, 0), sg * 2 * s, "%s: 1.5 s -> 2 s", zN);
        ASSERT_SAME(round_scaled(pF->dt, sg * 2.5, es, 0, 0), sg * 2 * s, "%s: 2.5 s -> 2 s", zN);
        ASSERT_SAME(round_scaled(pF->dt, sg * 3.5, es, 0, 0), sg * 4 * s, "%s: 3.5 s -> 4 s", zN);
        ASSERT_SAME(round_scaled(pF->dt, sg * 1.5, es, neg ? 1 : -1, -90), sg * s,
                    "%s: below 1.5 s -> s", zN);
        /* The largest subnormal (odd) plus half a step ties up to the smallest normal. */
        ASSERT_SAME(round_plus(pF->dt, sg * largestSub, neg ? -1 : 1, es - 1),
                    sg * ldexp(1.0, pF->eMin), "%s: largest subnormal + s/2", zN);
        ASSERT_SAME(round_plus(pF->dt, sg * largestSub, neg ? 1 : -1, es - 1 - 60),
                    sg * largestSub, "%s: largest subnormal + tiny", zN);
        ASSERT_SAME(parity_round_double_to_dtype(sg * largestSub, pF->dt), sg * largestSub);
        ASSERT_SAME(parity_round_double_to_dtype(sg * s, pF->dt), sg * s);
    }
}

static void check_overflow(const fmt_t *pF)
{
    const double mx = pF->maxVal;
    const long eUlp = pF->eMax - pF->p + 1; /* ulp at max = 2^eUlp */
    const char *zN = parity_dtype_name(pF->dt);
    for (int neg = 0; neg < 2; neg++) {
        double sg = neg ? -1.0 : 1.0;
        int up = neg ? -1 : 1;
        ASSERT_SAME(parity_round_double_to_dtype(sg * mx, pF->dt), sg * mx, "%s: max", zN);
        /* max + ulp/2: IEEE formats tie to 2^(eMax+1) (even), which overflows; e4m3fn's max
         * 448 has an even mantissa and stays. */
        ASSERT_SAME(round_plus(pF->dt, sg * mx, up, eUlp - 1),
                    pF->hasInf ? overflow_value(pF, neg) : sg * mx, "%s: max + ulp/2", zN);
        ASSERT_SAME(round_plus(pF->dt, sg * mx, up, eUlp - 2), sg * mx, "%s: max + ulp/4", zN);
        ASSERT_SAME(round_scaled(pF->dt, sg * mx, 0, up, eUlp - 1 - 100),
                    sg * mx, "%s: max + tiny", zN);
        ASSERT_SAME(round_scaled(pF->dt, sg * 1.0, 5000, 0, 0), overflow_value(pF, neg),
                    "%s: 2^5000", zN);
        ASSERT_SAME(parity_round_double_to_dtype(sg * INFINITY, pF->dt), overflow_value(pF, neg),
                    "%s: inf", zN);
        cr_assert(isnan(parity_round_double_to_dtype(sg * NAN, pF->dt)));
        cr_assert(isnan(round_scaled(pF->dt, NAN, 0, 0, 0)));
        ASSERT_SAME(parity_round_double_to_dtype(sg * 0.0, pF->dt), sg * 0.0, "%s: zero", zN);
    }
}

Test(mpref, round_midpoints_all_formats)
{
    for (size_t i = 0; i < N_FMT; i++)
        check_midpoints(&g_aFmt[i]);
}

Test(mpref, round_subnormals_all_formats)
{
    for (size_t i = 0; i < N_FMT; i++)
        check_subnormals(&g_aFmt[i]);
}

Test(mpref, round_overflow_all_formats)
{
    for (size_t i = 0; i < N_FMT; i++)
        check_overflow(&g_aFmt[i]);
}

Test(mpref, f32_overflow_threshold)
{
    /* 2^128 (1 - 2^-25) = FLT_MAX + half its ulp: the first value rounding to inf. */
    cr_assert(isinf(round_scaled(PARITY_DT_F32, 1.0 - 0x1p-25, 128, 0, 0)));
    cr_assert(isinf(round_scaled(PARITY_DT_F32, -(1.0 - 0x1p-25), 128, 0, 0)));
    cr_assert_eq(round_scaled(PARITY_DT_F32, 1.0 - 0x1p-25, 128, -1, -200), FLT_MAX);
    cr_assert_eq(round_scaled(PARITY_DT_F32, -(1.0 - 0x1p-25), 128, 1, -200), -FLT_MAX);
    cr_assert(isinf(parity_round_double_to_dtype(0x1p128 * (1.0 - 0x1p-25), PARITY_DT_F32)));
    cr_assert_eq(parity_round_double_to_dtype(nextafter(0x1p128 * (1.0 - 0x1p-25), 0),
                                              PARITY_DT_F32), FLT_MAX);
    cr_assert(isinf(parity_round_double_to_dtype(1e39, PARITY_DT_F32)));
    /* Same for f16 (65520) and bf16. */
    cr_assert(isinf(parity_round_double_to_dtype(65520.0, PARITY_DT_F16)));
    cr_assert_eq(parity_round_double_to_dtype(65519.99, PARITY_DT_F16), 65504.0);
    cr_assert(isinf(parity_round_double_to_dtype(0x1.ffp+127, PARITY_DT_BF16)));
    cr_assert_eq(parity_round_double_to_dtype(0x1.feffffp+127, PARITY_DT_BF16), 0x1.fep+127);
    cr_assert(isinf(parity_round_double_to_dtype(61440.0, PARITY_DT_F8E5M2)));
    cr_assert_eq(parity_round_double_to_dtype(61439.0, PARITY_DT_F8E5M2), 57344.0);
}

/* parity_round_double_to_dtype rounds binary32 and binary64 by the hardware, the other
 * dtypes (and parity_round_to_dtype, always) through MPFR: the two agree to the bit on
 * doubles drawn over binary32's whole range, its subnormals and its overflow threshold,
 * exact midpoints included. */
Test(mpref, hardware_rounding_equals_mpfr)
{
    uint64_t s = 0x9e3779b97f4a7c15ULL, i;
    mpfr_t m;
    mpfr_init2(m, 53);
    for (i = 0; i < 400000; i++) {
        double x;
        int k;
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        switch (i % 4) {
        case 0: x = ldexp((double)(s >> 11) * 0x1p-53 + 1.0, (int)(s % 300) - 160); break;
        case 1: x = ldexp((double)(s >> 11) * 0x1p-53, -126 - (int)(s % 30)); break;  /* subnormal */
        case 2: { /* a binary32 midpoint: float plus half its ulp */
            float f = (float)ldexp((double)(s >> 40) + 1.0, (int)(s % 250) - 150 - 24);
            x = (double)f + 0.5 * parity_ulp_at(PARITY_DT_F32, f);
            break;
        }
        default: x = 0x1p128 * (1.0 - 0x1p-25) * (1.0 + ((double)(s % 2001) - 1000.0) * 0x1p-40); break;
        }
        if (s & 1) x = -x;
        for (k = 0; k < 2; k++) {
            parity_dtype dt = k ? PARITY_DT_F64 : PARITY_DT_F32;
            mpfr_set_d(m, x, MPFR_RNDN);
            ASSERT_SAME(parity_round_double_to_dtype(x, dt), parity_round_to_dtype(m, dt),
                        "%a to %s", x, parity_dtype_name(dt));
        }
    }
    mpfr_clear(m);
}

Test(mpref, e4m3fn_nan_rule)
{
    const parity_dtype dt = PARITY_DT_F8E4M3FN;
    cr_assert_eq(parity_round_double_to_dtype(448.0, dt), 448.0);
    cr_assert_eq(parity_round_double_to_dtype(-448.0, dt), -448.0);
    cr_assert_eq(parity_round_double_to_dtype(416.0, dt), 416.0);
    cr_assert_eq(parity_round_double_to_dtype(432.0, dt), 448.0); /* 416|448 tie: 448 even */
    cr_assert_eq(parity_round_double_to_dtype(400.0, dt), 384.0); /* 384|416 tie: 384 even */
    cr_assert_eq(parity_round_double_to_dtype(464.0, dt), 448.0); /* 448|480 tie: 448 even */
    cr_assert_eq(parity_round_double_to_dtype(-464.0, dt), -448.0);
    cr_assert_eq(parity_round_double_to_dtype(463.9, dt), 448.0);
    cr_assert(isnan(round_scaled(dt, 464.0, 0, 1, -92))); /* 464 + 2^-92: past the tie */
    cr_assert(isnan(round_scaled(dt, -464.0, 0, -1, -92)));
    cr_assert_eq(round_scaled(dt, 464.0, 0, -1, -92), 448.0);
    cr_assert(isnan(parity_round_double_to_dtype(465.0, dt)));
    cr_assert(isnan(parity_round_double_to_dtype(-465.0, dt)));
    cr_assert(isnan(parity_round_double_to_dtype(480.0, dt)));
    cr_assert(isnan(parity_round_double_to_dtype(496.0, dt)));
    cr_assert(isnan(parity_round_double_to_dtype(512.0, dt)));
    cr_assert(isnan(parity_round_double_to_dtype(1e10, dt)));
    cr_assert(isnan(parity_round_double_to_dtype(INFINITY, dt)));
    cr_assert(isnan(parity_round_double_to_dtype(-INFINITY, dt)));
    /* The same decisions as dtype.c's encoder. */
    double aX[] = {448, 449, 463.999, 464, 464.0001, 465, 479, 480, 496, 512, 1e30};
    for (size_t i = 0; i < sizeof aX / sizeof aX[0]; i++) {
        ASSERT_SAME(parity_round_double_to_dtype(aX[i], dt), enc_dec(dt, aX[i]), "%g", aX[i]);
        ASSERT_SAME(parity_round_double_to_dtype(-aX[i], dt), enc_dec(dt, -aX[i]), "%g", -aX[i]);
    }
}

Test(mpref, signed_zero_and_specials)
{
    for (size_t i = 0; i < N_FMT; i++) {
        parity_dtype dt = g_aFmt[i].dt;
        double r = round_scaled(dt, -1.0, -3000, 0, 0);
        cr_assert(r == 0.0 && signbit(r), "%s: negative underflow keeps its sign",
                  parity_dtype_name(dt));
        r = parity_round_double_to_dtype(-0.0, dt);
        cr_assert(r == 0.0 && signbit(r));
        r = parity_round_double_to_dtype(0.0, dt);
        cr_assert(r == 0.0 && !signbit(r));
    }
}

/* ---------------------------------------------------------------------------------- */
/* Rounding: cross-checks                                                             */

/* Random doubles: raw bit patterns (every exponent), exponents around the format's range,
 * values within a few binary64 ulps of the format's midpoints, and specials. */
static double sample_for(const fmt_t *pF, uint64_t *pS)
{
    switch (splitmix64(pS) % 4) {
    case 0:
        return rng_double_bits(pS);
    case 1:
        return rng_double_exp(pS, pF->eMin - pF->p - 3, pF->eMax + 2);
    case 2: {
        /* A format value v, plus half its spacing, nudged by 0..2 binary64 ulps. */
        double v = rng_double_exp(pS, pF->eMin - pF->p + 1, pF->eMax);
        double q = parity_round_double_to_dtype(v, pF->dt);
        if (!isfinite(q) || q == 0.0)
            return v;
        double half = ldexp(parity_ulp_at(pF->dt, q), -1);
        double m = q + (q > 0 ? half : -half);
        int nudge = (int)(splitmix64(pS) % 5) - 2;
        for (; nudge > 0; nudge--)
            m = nextafter(m, INFINITY);
        for (; nudge < 0; nudge++)
            m = nextafter(m, -INFINITY);
        return m;
    }
    default: {
        static const double aSpecial[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, DBL_MAX,
                                          DBL_MIN, 0x1p-1074, -0x1p-1074, 1.0, -1.0};
        double sp[16];
        size_t n = 0;
        for (size_t i = 0; i < sizeof aSpecial / sizeof aSpecial[0]; i++)
            sp[n++] = aSpecial[i];
        sp[n++] = pF->maxVal;
        sp[n++] = -pF->maxVal;
        sp[n++] = smallest_sub(pF);
        sp[n++] = ldexp(1.0, pF->eMin);
        sp[n++] = pF->maxVal + ulp_of_max(pF) / 2;
        return sp[splitmix64(pS) % n];
    }
    }
}

typedef struct {
    uint64_t seed;
    int nIter;
    mpfr_exp_t emin, emax; /* the caller's range to run under */
    long nMismatch, nRangeLost, nFlagsLost;
    double firstBad;
    parity_dtype firstBadDt;
} xcheck_job;

static void *xcheck_run(void *pArg)
{
    xcheck_job *pJ = pArg;
    uint64_t s = pJ->seed;
    mpfr_set_emin(pJ->emin);
    mpfr_set_emax(pJ->emax);
    mpfr_clear_flags();
    for (int it = 0; it < pJ->nIter; it++) {
        for (size_t i = 0; i < N_FMT; i++) {
            const fmt_t *pF = &g_aFmt[i];
            double x = sample_for(pF, &s);
            double got = parity_round_double_to_dtype(x, pF->dt);
            double want = enc_dec(pF->dt, x);
            if (!same_double(got, want)) {
                if (pJ->nMismatch++ == 0) {
                    pJ->firstBad = x;
                    pJ->firstBadDt = pF->dt;
                }
            }
            if (mpfr_get_emin() != pJ->emin || mpfr_get_emax() != pJ->emax)
                pJ->nRangeLost++;
            if (mpfr_flags_test(MPFR_FLAGS_ALL) != 0)
                pJ->nFlagsLost++;
        }
    }
    return NULL;
}

static void check_job(const xcheck_job *pJ)
{
    cr_assert_eq(pJ->nMismatch, 0, "%ld mismatches vs decode(encode(x)); first: %s x = %a",
                 pJ->nMismatch, parity_dtype_name(pJ->firstBadDt), pJ->firstBad);
    cr_assert_eq(pJ->nRangeLost, 0, "exponent range not restored %ld times", pJ->nRangeLost);
    cr_assert_eq(pJ->nFlagsLost, 0, "MPFR flags changed %ld times", pJ->nFlagsLost);
}

Test(mpref, cross_check_encode_random_doubles)
{
    /* The default range, a wide one, and one too narrow for binary64's subnormals (the
     * inputs are read with the range widened, so they still round correctly). */
    mpfr_exp_t aRange[][2] = {{mpfr_get_emin(), mpfr_get_emax()}, {-5000, 5000}, {-200, 200}};
    for (size_t r = 0; r < 3; r++) {
        xcheck_job job = {.seed = 1000 + r, .nIter = 100000, .emin = aRange[r][0],
                          .emax = aRange[r][1]};
        xcheck_run(&job);
        check_job(&job);
    }
}

Test(mpref, cross_check_threads)
{
    if (!mpfr_buildopt_tls_p())
        cr_skip_test("MPFR built without thread-local state");
    enum { N_THREAD = 4 };
    pthread_t aTid[N_THREAD];
    xcheck_job aJob[N_THREAD];
    for (int i = 0; i < N_THREAD; i++) {
        aJob[i] = (xcheck_job){.seed = 77 + (uint64_t)i, .nIter = 20000,
                               .emin = -3000 - 100 * i, .emax = 3000 + 100 * i};
        cr_assert_eq(pthread_create(&aTid[i], NULL, xcheck_run, &aJob[i]), 0);
    }
    for (int i = 0; i < N_THREAD; i++)
        pthread_join(aTid[i], NULL);
    for (int i = 0; i < N_THREAD; i++)
        check_job(&aJob[i]);
}

/* Brute-force nearest-even over a table of every non-negative finite value of an 8/16-bit
 * format, plus the virtual next value past the max (2^(eMax+1) for IEEE formats, 480 for
 * e4m3fn), which stands for overflow. Ties go to the even pattern. */
typedef struct {
    const fmt_t *pF;
    size_t n;      /* entries incl. the virtual one */
    double *aVal;  /* aVal[i] is the value of pattern i */
} table_t;

static void table_build(table_t *pT, const fmt_t *pF)
{
    uint64_t nPos = UINT64_C(1) << (pF->width - 1);
    pT->pF = pF;
    pT->aVal = malloc((nPos + 1) * sizeof(double));
    cr_assert_not_null(pT->aVal);
    size_t n = 0;
    for (uint64_t b = 0; b < nPos; b++) {
        double v = decode_pattern(pF, b);
        if (!isfinite(v))
            break;
        pT->aVal[n++] = v;
    }
    cr_assert_eq(pT->aVal[n - 1], pF->maxVal);
    pT->aVal[n] = pF->maxVal + ulp_of_max(pF);
    pT->n = n + 1;
}

static double table_round(const table_t *pT, mpfr_srcptr x)
{
    if (mpfr_nan_p(x))
        return NAN;
    int neg = mpfr_signbit(x) != 0;
    double sg = neg ? -1.0 : 1.0;
    mpfr_t ax, sum;
    mpfr_inits2(mpfr_get_prec(x) + 8, ax, (mpfr_ptr)0);
    mpfr_init2(sum, 64);
    mpfr_abs(ax, x, MPFR_RNDN);
    double res;
    if (mpfr_cmp_d(ax, pT->aVal[pT->n - 1]) >= 0) {
        res = overflow_value(pT->pF, neg);
    } else {
        /* largest i with aVal[i] <= |x| */
        size_t lo = 0, hi = pT->n - 1;
        while (hi - lo > 1) {
            size_t mid = (lo + hi) / 2;
            if (mpfr_cmp_d(ax, pT->aVal[mid]) >= 0)
                lo = mid;
            else
                hi = mid;
        }
        /* compare 2|x| with aVal[lo] + aVal[lo+1], both sides exact */
        mpfr_mul_2ui(ax, ax, 1, MPFR_RNDN);
        cr_assert_eq(mpfr_set_d(sum, pT->aVal[lo], MPFR_RNDN), 0);
        cr_assert_eq(mpfr_add_d(sum, sum, pT->aVal[lo + 1], MPFR_RNDN), 0);
        int c = mpfr_cmp(ax, sum);
        size_t k = c < 0 ? lo : c > 0 ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
        res = k == pT->n - 1 ? overflow_value(pT->pF, neg) : sg * pT->aVal[k];
    }
    mpfr_clears(ax, sum, (mpfr_ptr)0);
    return res;
}

/* The oracle for one format: the table for 8/16 bits, MPFR's conversions otherwise. */
static double oracle_round(const table_t *pT, const fmt_t *pF, mpfr_srcptr x)
{
    if (pF->dt == PARITY_DT_F64)
        return mpfr_get_d(x, MPFR_RNDN);
    if (pF->dt == PARITY_DT_F32)
        return (double)mpfr_get_flt(x, MPFR_RNDN);
    return table_round(pT, x);
}

/* Wide (128/256-bit) inputs: a random format value v plus a random fraction of the step to
 * the next one (or exactly half of it, or half +- 2^-100 of it), random sign; now and then
 * values far beyond the range. */
static void check_wide_inputs(const fmt_t *pF, int nIter)
{
    table_t tab = {0};
    uint64_t s = 4242 + (uint64_t)pF->dt;
    mpfr_t x, t;
    if (pF->width <= 16)
        table_build(&tab, pF);
    mpfr_inits2(256, x, t, (mpfr_ptr)0);
    for (int it = 0; it < nIter; it++) {
        /* v: a random non-negative format value; step: its spacing (exact, independent). */
        int e = pF->eMin - 1 + (int)(splitmix64(&s) % (uint64_t)(pF->eMax - pF->eMin + 2));
        double v, step;
        if (e < pF->eMin) { /* subnormal or zero */
            step = smallest_sub(pF);
            v = step * (double)(splitmix64(&s) % (UINT64_C(1) << (pF->p - 1)));
        } else {
            step = ldexp(1.0, e - pF->p + 1);
            v = ldexp(1.0 + ldexp((double)(splitmix64(&s) >> (64 - (pF->p - 1))), 1 - pF->p), e);
            if (v > pF->maxVal)
                v = pF->maxVal;
        }
        mpfr_set_d(x, v, MPFR_RNDN);
        switch (splitmix64(&s) % 5) {
        case 0: /* exactly half a step */
            mpfr_set_d(t, step, MPFR_RNDN);
            mpfr_div_2ui(t, t, 1, MPFR_RNDN);
            break;
        case 1: /* half a step +- 2^-100 of a step */
            mpfr_set_d(t, step, MPFR_RNDN);
            mpfr_div_2ui(t, t, 1, MPFR_RNDN);
            {
                mpfr_t d;
                mpfr_init2(d, 64);
                mpfr_set_d(d, step, MPFR_RNDN);
                mpfr_div_2ui(d, d, 100, MPFR_RNDN);
                if (splitmix64(&s) & 1)
                    mpfr_neg(d, d, MPFR_RNDN);
                mpfr_add(t, t, d, MPFR_RNDN);
                mpfr_clear(d);
            }
            break;
        case 2: /* far beyond the range (x = t alone) */
            mpfr_set_zero(x, 1);
            mpfr_set_d(t, pF->maxVal, MPFR_RNDN);
            mpfr_mul_2ui(t, t, 1 + splitmix64(&s) % 3000, MPFR_RNDN);
            break;
        default: { /* a random 128-bit fraction of a step */
            mpfr_set_ui(t, (unsigned long)(splitmix64(&s) >> 1), MPFR_RNDN);
            mpfr_mul_2ui(t, t, 64, MPFR_RNDN);
            mpfr_add_ui(t, t, (unsigned long)(splitmix64(&s) >> 1), MPFR_RNDN);
            mpfr_div_2ui(t, t, 127, MPFR_RNDN);
            mpfr_mul_d(t, t, step, MPFR_RNDN);
            break;
        }
        }
        cr_assert_eq(mpfr_add(x, x, t, MPFR_RNDN), 0, "test input not exact");
        if (splitmix64(&s) & 1)
            mpfr_neg(x, x, MPFR_RNDN);
        /* Half of the inputs at PARITY_REF_PREC, as the references produce them. */
        if (splitmix64(&s) & 1) {
            mpfr_t y;
            mpfr_init2(y, PARITY_REF_PREC);
            mpfr_set(y, x, MPFR_RNDN);
            double got = parity_round_to_dtype(y, pF->dt);
            double want = oracle_round(&tab, pF, y);
            if (!same_double(got, want))
                mpfr_printf("x = %Ra\n", y);
            ASSERT_SAME(got, want, "%s: 128-bit input: got %a want %a",
                        parity_dtype_name(pF->dt), got, want);
            mpfr_clear(y);
        } else {
            double got = parity_round_to_dtype(x, pF->dt);
            double want = oracle_round(&tab, pF, x);
            if (!same_double(got, want))
                mpfr_printf("x = %Ra\n", x);
            ASSERT_SAME(got, want, "%s: 256-bit input: got %a want %a",
                        parity_dtype_name(pF->dt), got, want);
        }
    }
    mpfr_clears(x, t, (mpfr_ptr)0);
    free(tab.aVal);
}

Test(mpref, wide_inputs_vs_brute_force_and_mpfr)
{
    for (size_t i = 0; i < N_FMT; i++)
        check_wide_inputs(&g_aFmt[i], 30000);
}

/* The table oracle itself, on the rule it encodes for e4m3fn. */
Test(mpref, table_oracle_sanity)
{
    table_t tab;
    const fmt_t *pF = &g_aFmt[4];
    mpfr_t x;
    cr_assert_eq(pF->dt, PARITY_DT_F8E4M3FN);
    table_build(&tab, pF);
    cr_assert_eq(tab.aVal[tab.n - 1], 480.0);
    mpfr_init2(x, 64);
    mpfr_set_d(x, 464.0, MPFR_RNDN);
    cr_assert_eq(table_round(&tab, x), 448.0);
    mpfr_set_d(x, 464.5, MPFR_RNDN);
    cr_assert(isnan(table_round(&tab, x)));
    mpfr_set_d(x, 0x1p-10, MPFR_RNDN);
    cr_assert_eq(table_round(&tab, x), 0.0);
    mpfr_set_d(x, 0x1.8p-10, MPFR_RNDN);
    cr_assert_eq(table_round(&tab, x), 0x1p-9);
    mpfr_clear(x);
    free(tab.aVal);
}

/* ---------------------------------------------------------------------------------- */
/* Rounding: integers and bool                                                        */

Test(mpref, round_integers)
{
    const parity_dtype I8 = PARITY_DT_I8, U8 = PARITY_DT_U8;
    cr_assert_eq(parity_round_double_to_dtype(2.5, I8), 2.0);
    cr_assert_eq(parity_round_double_to_dtype(3.5, I8), 4.0);
    cr_assert_eq(parity_round_double_to_dtype(-2.5, I8), -2.0);
    cr_assert_eq(parity_round_double_to_dtype(0.5, I8), 0.0);
    cr_assert_eq(parity_round_double_to_dtype(1.5, I8), 2.0);
    cr_assert_eq(parity_round_double_to_dtype(2.4999, I8), 2.0);
    cr_assert_eq(parity_round_double_to_dtype(127.4, I8), 127.0);
    cr_assert_eq(parity_round_double_to_dtype(127.5, I8), 127.0); /* 128 clamps */
    cr_assert_eq(parity_round_double_to_dtype(1e10, I8), 127.0);
    cr_assert_eq(parity_round_double_to_dtype(-128.5, I8), -128.0);
    cr_assert_eq(parity_round_double_to_dtype(-129.0, I8), -128.0);
    cr_assert_eq(parity_round_double_to_dtype(INFINITY, I8), 127.0);
    cr_assert_eq(parity_round_double_to_dtype(-INFINITY, I8), -128.0);
    ASSERT_SAME(parity_round_double_to_dtype(NAN, I8), 0.0);
    ASSERT_SAME(parity_round_double_to_dtype(-0.3, I8), 0.0, "no -0 for integers");
    ASSERT_SAME(parity_round_double_to_dtype(-0.0, I8), 0.0);
    cr_assert_eq(parity_round_double_to_dtype(-1.0, U8), 0.0);
    ASSERT_SAME(parity_round_double_to_dtype(-0.5, U8), 0.0);
    cr_assert_eq(parity_round_double_to_dtype(255.5, U8), 255.0);
    cr_assert_eq(parity_round_double_to_dtype(254.5, U8), 254.0);
    cr_assert_eq(parity_round_double_to_dtype(1e300, PARITY_DT_U64), 0x1p64);
    cr_assert_eq(parity_round_double_to_dtype(0x1p63, PARITY_DT_I64), 0x1p63);
    cr_assert_eq(parity_round_double_to_dtype(-0x1p63, PARITY_DT_I64), -0x1p63);
    cr_assert_eq(parity_round_double_to_dtype(-1e300, PARITY_DT_I64), -0x1p63);
    cr_assert_eq(parity_round_double_to_dtype(4294967295.5, PARITY_DT_U32), 4294967295.0);
    cr_assert_eq(parity_round_double_to_dtype(-2147483648.5, PARITY_DT_I32), -2147483648.0);
    cr_assert_eq(parity_round_double_to_dtype(-2147483647.5, PARITY_DT_I32), -2147483648.0);
    /* A wide input just above a tie rounds up: no detour through binary64. */
    cr_assert_eq(round_scaled(I8, 2.5, 0, 1, -100), 3.0);
    cr_assert_eq(round_scaled(I8, 2.5, 0, -1, -100), 2.0);
    cr_assert_eq(round_scaled(PARITY_DT_I64, 1.0, 200, 0, 0), 0x1p63);
    cr_assert_eq(round_scaled(PARITY_DT_I16, 1.0, -5000, 0, 0), 0.0);
    /* bool: nonzero -> 1 (NaN too, as C's _Bool and parity_encode). */
    cr_assert_eq(parity_round_double_to_dtype(0.0, PARITY_DT_BOOL), 0.0);
    ASSERT_SAME(parity_round_double_to_dtype(-0.0, PARITY_DT_BOOL), 0.0);
    cr_assert_eq(parity_round_double_to_dtype(0.1, PARITY_DT_BOOL), 1.0);
    cr_assert_eq(parity_round_double_to_dtype(-7.0, PARITY_DT_BOOL), 1.0);
    cr_assert_eq(parity_round_double_to_dtype(NAN, PARITY_DT_BOOL), 1.0);
    cr_assert_eq(round_scaled(PARITY_DT_BOOL, 1.0, -5000, 0, 0), 1.0);
    cr_assert(isnan(parity_round_double_to_dtype(1.0, PARITY_DT_INVALID)));
}

Test(mpref, integers_cross_check_encode)
{
    uint64_t s = 99;
    for (int it = 0; it < 50000; it++) {
        for (size_t i = 0; i <= N_INT; i++) {
            parity_dtype dt = i < N_INT ? g_aIntDt[i] : PARITY_DT_BOOL;
            double x;
            switch (splitmix64(&s) % 4) {
            case 0: x = rng_double_bits(&s); break;
            case 1: x = rng_double_exp(&s, -3, 66); break;
            case 2: { /* ties k + 0.5 of every magnitude (absorbed above 2^52) */
                int sh = (int)(splitmix64(&s) % 64);
                x = (double)(int64_t)(splitmix64(&s) >> sh) + 0.5;
                break;
            }
            default: {
                int sh = (int)(splitmix64(&s) % 70);
                x = ldexp((double)(int64_t)splitmix64(&s), -sh);
                break;
            }
            }
            if (splitmix64(&s) & 1)
                x = -x;
            ASSERT_SAME(parity_round_double_to_dtype(x, dt), enc_dec(dt, x), "%s x = %a",
                        parity_dtype_name(dt), x);
        }
    }
}

/* ---------------------------------------------------------------------------------- */
/* MPFR state                                                                         */

Test(mpref, exponent_range_and_flags_restored)
{
    mpfr_t x, r;
    double abssum;
    const double a[] = {1e300, 1e-300, 0x1p-1074}, b[] = {1e300, 1e-300, 0x1p-1074};

    mpfr_set_emin(-300);
    mpfr_set_emax(300);
    mpfr_inits2(128, x, r, (mpfr_ptr)0);
    mpfr_set_ui_2exp(x, 3, -299, MPFR_RNDN); /* inside the caller's range */
    mpfr_clear_flags();
    for (size_t i = 0; i < N_FMT; i++) {
        parity_dtype dt = g_aFmt[i].dt;
        double want = enc_dec(dt, 0x3p-299);
        ASSERT_SAME(parity_round_to_dtype(x, dt), want, "%s", parity_dtype_name(dt));
        ASSERT_SAME(parity_round_double_to_dtype(0x1p-1074, dt), enc_dec(dt, 0x1p-1074));
        ASSERT_SAME(parity_round_double_to_dtype(1e300, dt), enc_dec(dt, 1e300));
        cr_assert_eq(mpfr_get_emin(), -300);
        cr_assert_eq(mpfr_get_emax(), 300);
        cr_assert_eq(mpfr_flags_test(MPFR_FLAGS_ALL), 0, "flags leaked");
    }
    (void)parity_gamma(10, 0x1p-24);
    cr_assert_eq(mpfr_get_emin(), -300);
    cr_assert_eq(mpfr_get_emax(), 300);
    cr_assert_eq(parity_exact_dot(r, a, 1, b, 1, 3, NULL, &abssum), 0);
    cr_assert_eq(mpfr_get_emin(), -300);
    cr_assert_eq(mpfr_get_emax(), 300);
    cr_assert_eq(mpfr_flags_test(MPFR_FLAGS_ALL), 0, "flags leaked");
    /* r obeys the caller's range: 1e600 overflows it. */
    cr_assert(mpfr_inf_p(r) && mpfr_sgn(r) > 0);
    cr_assert(isinf(abssum));
    /* Inputs below the caller's range are still read exactly. */
    const double c[] = {0x1p-250, 0x1p-1074};
    cr_assert_eq(parity_exact_sum(r, c, 1, 2, &abssum), 0);
    cr_assert(mpfr_cmp_d(r, 0x1p-250) == 0);
    cr_assert_eq(abssum, nextafter(0x1p-250, 1.0));
    cr_assert_eq(mpfr_get_emin(), -300);
    cr_assert_eq(mpfr_get_emax(), 300);
    mpfr_clears(x, r, (mpfr_ptr)0);
}

/* ---------------------------------------------------------------------------------- */
/* Exact dot products and sums                                                        */

/* Reference: products and a sequential sum at 256 bits, each step asserted exact (so the
 * test data must stay within 256 bits of span, which it does by construction). */
static void ref_dot(mpfr_t ref, mpfr_t refAbs, const double *a, size_t sa, const double *b,
                    size_t sb, size_t n, const double *pBias)
{
    mpfr_t p;
    mpfr_init2(p, 256);
    mpfr_set_zero(ref, 1);
    mpfr_set_zero(refAbs, 1);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(mpfr_set_d(p, a[i * sa], MPFR_RNDN), 0);
        cr_assert_eq(mpfr_mul_d(p, p, b[i * sb], MPFR_RNDN), 0);
        cr_assert_eq(mpfr_add(ref, ref, p, MPFR_RNDN), 0, "reference sum inexact at %zu", i);
        cr_assert_eq(mpfr_abs(p, p, MPFR_RNDN), 0);
        cr_assert_eq(mpfr_add(refAbs, refAbs, p, MPFR_RNDN), 0);
    }
    if (pBias != NULL) {
        cr_assert_eq(mpfr_add_d(ref, ref, *pBias, MPFR_RNDN), 0);
        cr_assert_eq(mpfr_set_d(p, fabs(*pBias), MPFR_RNDN), 0);
        cr_assert_eq(mpfr_add(refAbs, refAbs, p, MPFR_RNDN), 0);
    }
    mpfr_clear(p);
}

/* Compares parity_exact_dot at result precisions 24, 53 and 256 with the reference. */
static void check_dot(const double *a, size_t sa, const double *b, size_t sb, size_t n,
                      const double *pBias)
{
    mpfr_t ref, refAbs, r, want;
    mpfr_prec_t aPrec[] = {24, 53, 256};
    mpfr_inits2(256, ref, refAbs, (mpfr_ptr)0);
    ref_dot(ref, refAbs, a, sa, b, sb, n, pBias);
    double wantAbs = mpfr_get_d(refAbs, MPFR_RNDU);
    for (size_t k = 0; k < 3; k++) {
        double abssum = -1.0;
        mpfr_inits2(aPrec[k], r, want, (mpfr_ptr)0);
        cr_assert_eq(parity_exact_dot(r, a, sa, b, sb, n, pBias, &abssum), 0);
        mpfr_set(want, ref, MPFR_RNDN); /* one rounding of the exact value */
        cr_assert(mpfr_equal_p(r, want) && mpfr_signbit(r) == mpfr_signbit(want),
                  "dot n=%zu prec %ld differs from the exact reference", n, (long)aPrec[k]);
        cr_assert_eq(abssum, wantAbs, "abssum n=%zu: %a vs %a", n, abssum, wantAbs);
        cr_assert(mpfr_cmp_d(refAbs, abssum) <= 0, "abssum below the exact value");
        mpfr_clears(r, want, (mpfr_ptr)0);
    }
    mpfr_clears(ref, refAbs, (mpfr_ptr)0);
}

Test(mpref, exact_dot_random)
{
    uint64_t s = 2024;
    size_t aN[] = {1, 2, 3, 7, 16, 100, 1000};
    double *a = malloc(3 * 1000 * sizeof(double)), *b = malloc(3 * 1000 * sizeof(double));
    cr_assert(a && b);
    for (size_t in = 0; in < sizeof aN / sizeof aN[0]; in++) {
        for (int rep = 0; rep < 20; rep++) {
            size_t n = aN[in];
            for (size_t i = 0; i < 3 * n; i++) {
                a[i] = rng_double_exp(&s, -16, 16);
                b[i] = rng_double_exp(&s, -16, 16);
            }
            double bias = rng_double_exp(&s, -16, 16);
            check_dot(a, 1, b, 1, n, NULL);
            check_dot(a, 1, b, 1, n, &bias);
            check_dot(a, 2, b, 3, n, NULL); /* strided */
            check_dot(a, 3, b, 0, n, &bias); /* b broadcast */
        }
    }
    free(a);
    free(b);
}

Test(mpref, exact_dot_cancellation)
{
    /* Products 1e30, 1, -1e30 (exactly: 1e15 is a binary64, 10^30 needs 70 bits). */
    const double a[] = {1e15, 1.0, -1e15}, b[] = {1e15, 1.0, 1e15};
    volatile double naive = 0.0;
    for (int i = 0; i < 3; i++) {
        volatile double pr = a[i] * b[i];
        naive += pr;
    }
    cr_assert_eq(naive, 0.0, "the case must defeat binary64 summation");
    mpfr_t r;
    double abssum;
    mpfr_init2(r, 53);
    cr_assert_eq(parity_exact_dot(r, a, 1, b, 1, 3, NULL, &abssum), 0);
    cr_assert_eq(mpfr_cmp_ui(r, 1), 0, "exact dot must be 1");
    cr_assert(abssum >= 2e30);
    check_dot(a, 1, b, 1, 3, NULL);

    /* Inexact products: (1+2^-30)^2 - (1+2^-29) = 2^-60, binary64 gives 0. */
    const double c[] = {1.0 + 0x1p-30, -1.0}, d[] = {1.0 + 0x1p-30, 1.0 + 0x1p-29};
    cr_assert_eq(parity_exact_dot(r, c, 1, d, 1, 2, NULL, NULL), 0);
    cr_assert_eq(mpfr_cmp_d(r, 0x1p-60), 0);
    check_dot(c, 1, d, 1, 2, NULL);

    /* Random terms followed by their negations, plus one small term: the small term. */
    uint64_t s = 5;
    double x[201], y[201];
    for (int i = 0; i < 100; i++) {
        x[i] = rng_double_exp(&s, -20, 20);
        y[i] = rng_double_exp(&s, -20, 20);
        x[100 + i] = -x[i];
        y[100 + i] = y[i];
    }
    x[200] = 0x1.234p-40;
    y[200] = 3.0;
    cr_assert_eq(parity_exact_dot(r, x, 1, y, 1, 201, NULL, NULL), 0);
    cr_assert_eq(mpfr_cmp_d(r, 0x1.234p-40 * 3.0), 0);
    check_dot(x, 1, y, 1, 201, NULL);
    mpfr_clear(r);
}

Test(mpref, exact_dot_specials)
{
    mpfr_t r;
    double abssum;
    mpfr_init2(r, 53);
#define DOT(nA, ...)                                                                      \
    do {                                                                                  \
        const double aa[] = {__VA_ARGS__};                                                \
        static const double ones[] = {1, 1, 1, 1};                                        \
        cr_assert_eq(parity_exact_dot(r, aa, 1, ones, 1, (nA), NULL, &abssum), 0);        \
    } while (0)
    DOT(2, INFINITY, 1.0);
    cr_assert(mpfr_inf_p(r) && mpfr_sgn(r) > 0);
    cr_assert(isinf(abssum));
    DOT(2, -INFINITY, 5.0);
    cr_assert(mpfr_inf_p(r) && mpfr_sgn(r) < 0);
    DOT(3, INFINITY, -INFINITY, 1.0);
    cr_assert(mpfr_nan_p(r), "Inf - Inf is NaN");
    cr_assert(isinf(abssum) && abssum > 0);
    DOT(2, NAN, 1.0);
    cr_assert(mpfr_nan_p(r));
    cr_assert(isnan(abssum));
    DOT(3, INFINITY, INFINITY, 1e308);
    cr_assert(mpfr_inf_p(r) && mpfr_sgn(r) > 0);
#undef DOT
    /* Inf * 0 = NaN */
    const double inf1[] = {INFINITY}, zero1[] = {0.0};
    cr_assert_eq(parity_exact_dot(r, inf1, 1, zero1, 1, 1, NULL, &abssum), 0);
    cr_assert(mpfr_nan_p(r));
    /* A bias of -Inf against a +Inf product: NaN. */
    const double one1[] = {1.0}, mInf = -INFINITY;
    cr_assert_eq(parity_exact_dot(r, inf1, 1, one1, 1, 1, &mInf, &abssum), 0);
    cr_assert(mpfr_nan_p(r));
    /* Beyond binary64: exact in MPFR's default range, abssum rounds up to Inf. */
    const double big[] = {DBL_MAX, DBL_MAX}, two[] = {2.0, 2.0};
    cr_assert_eq(parity_exact_dot(r, big, 1, two, 1, 2, NULL, &abssum), 0);
    cr_assert(mpfr_number_p(r));
    cr_assert(mpfr_cmp_d(r, DBL_MAX) > 0);
    mpfr_div_2ui(r, r, 2, MPFR_RNDN);
    cr_assert_eq(mpfr_cmp_d(r, DBL_MAX), 0);
    cr_assert(isinf(abssum));
    /* Products of subnormals: 2^-2148 exactly; abssum rounds up to 2^-1074, not 0. */
    const double tiny[] = {0x1p-1074};
    cr_assert_eq(parity_exact_dot(r, tiny, 1, tiny, 1, 1, NULL, &abssum), 0);
    cr_assert(mpfr_number_p(r) && mpfr_get_exp(r) == -2147);
    cr_assert_eq(abssum, 0x1p-1074);
    /* Zeros: -0 * 1 is -0; -0 + +0 and 1 - 1 are +0 (IEEE). */
    const double mz[] = {-0.0}, pz[] = {-0.0, 0.0}, pm[] = {1.0, -1.0}, ones[] = {1.0, 1.0};
    cr_assert_eq(parity_exact_dot(r, mz, 1, ones, 1, 1, NULL, &abssum), 0);
    cr_assert(mpfr_zero_p(r) && mpfr_signbit(r));
    cr_assert_eq(abssum, 0.0);
    cr_assert_eq(parity_exact_dot(r, pz, 1, ones, 1, 2, NULL, NULL), 0);
    cr_assert(mpfr_zero_p(r) && !mpfr_signbit(r));
    cr_assert_eq(parity_exact_dot(r, pm, 1, ones, 1, 2, NULL, &abssum), 0);
    cr_assert(mpfr_zero_p(r) && !mpfr_signbit(r));
    cr_assert_eq(abssum, 2.0);
    /* n = 0: +0 and abssum 0; with a bias: the bias. */
    mpfr_set_d(r, 7.0, MPFR_RNDN);
    abssum = -1.0;
    cr_assert_eq(parity_exact_dot(r, NULL, 1, NULL, 1, 0, NULL, &abssum), 0);
    cr_assert(mpfr_zero_p(r) && !mpfr_signbit(r));
    cr_assert_eq(abssum, 0.0);
    const double bias = -2.5;
    cr_assert_eq(parity_exact_dot(r, NULL, 1, NULL, 1, 0, &bias, &abssum), 0);
    cr_assert_eq(mpfr_cmp_d(r, -2.5), 0);
    cr_assert_eq(abssum, 2.5);
    mpfr_clear(r);
}

/* Sum reference: sequential 256-bit additions, asserted exact. */
static void check_sum(const double *a, size_t stride, size_t n)
{
    mpfr_t ref, refAbs, r;
    double abssum = -1.0;
    mpfr_inits2(256, ref, refAbs, (mpfr_ptr)0);
    mpfr_init2(r, 53);
    mpfr_set_zero(ref, 1);
    mpfr_set_zero(refAbs, 1);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(mpfr_add_d(ref, ref, a[i * stride], MPFR_RNDN), 0);
        cr_assert_eq(mpfr_add_d(refAbs, refAbs, fabs(a[i * stride]), MPFR_RNDN), 0);
    }
    cr_assert_eq(parity_exact_sum(r, a, stride, n, &abssum), 0);
    mpfr_prec_round(ref, 53, MPFR_RNDN);
    cr_assert(mpfr_equal_p(r, ref), "sum n=%zu differs from the exact reference", n);
    cr_assert_eq(abssum, mpfr_get_d(refAbs, MPFR_RNDU));
    cr_assert_eq(parity_exact_sum(r, a, stride, n, NULL), 0); /* pAbsSum may be NULL */
    cr_assert(mpfr_equal_p(r, ref));
    mpfr_clears(ref, refAbs, r, (mpfr_ptr)0);
}

Test(mpref, exact_sum)
{
    uint64_t s = 31337;
    double *a = malloc(2 * 1000 * sizeof(double));
    cr_assert_not_null(a);
    size_t aN[] = {1, 2, 5, 64, 1000};
    for (size_t in = 0; in < sizeof aN / sizeof aN[0]; in++) {
        for (int rep = 0; rep < 20; rep++) {
            for (size_t i = 0; i < 2 * aN[in]; i++)
                a[i] = rng_double_exp(&s, -60, 60);
            check_sum(a, 1, aN[in]);
            check_sum(a, 2, aN[in]);
        }
    }
    free(a);

    /* Cancellation binary64 gets wrong. */
    const double c1[] = {1e300, 1.0, -1e300}, c2[] = {0x1p53, 1.0, -0x1p53};
    volatile double naive = c2[0];
    naive += c2[1];
    naive += c2[2];
    cr_assert_eq(naive, 0.0);
    mpfr_t r;
    double abssum;
    mpfr_init2(r, 53);
    cr_assert_eq(parity_exact_sum(r, c1, 1, 3, &abssum), 0);
    cr_assert_eq(mpfr_cmp_ui(r, 1), 0);
    cr_assert_eq(abssum, nextafter(2e300, INFINITY)); /* 2e300 + 1 rounded up */
    cr_assert_eq(parity_exact_sum(r, c2, 1, 3, &abssum), 0);
    cr_assert_eq(mpfr_cmp_ui(r, 1), 0);
    cr_assert_eq(abssum, 0x1p54 + 4.0); /* 2^54 + 1 rounded up to the 2^54 grid step 4 */
    check_sum(c2, 1, 3);
    /* n = 0 and specials. */
    cr_assert_eq(parity_exact_sum(r, NULL, 1, 0, &abssum), 0);
    cr_assert(mpfr_zero_p(r) && !mpfr_signbit(r) && abssum == 0.0);
    const double sp[] = {INFINITY, -INFINITY};
    cr_assert_eq(parity_exact_sum(r, sp, 1, 2, &abssum), 0);
    cr_assert(mpfr_nan_p(r) && isinf(abssum));
    cr_assert_eq(parity_exact_sum(r, sp, 1, 1, &abssum), 0);
    cr_assert(mpfr_inf_p(r) && mpfr_sgn(r) > 0);
    const double mz[] = {-0.0, -0.0};
    cr_assert_eq(parity_exact_sum(r, mz, 1, 2, NULL), 0);
    cr_assert(mpfr_zero_p(r) && mpfr_signbit(r), "-0 + -0 = -0");
    mpfr_clear(r);
}
