/*
 * mpref.c - the MPFR groundwork of the reference implementations: unit roundoffs, ulps,
 * rounding to a dtype exactly as an IEEE kernel would, exact dot products and sums, gamma_n.
 *
 * What each function computes, and how exact it is:
 *
 *   parity_unit_roundoff   u = 2^-p, exact (p = significand bits incl. the implicit one).
 *
 *   parity_gamma           gamma_n = n u / (1 - n u) (N. J. Higham, Accuracy and Stability of
 *                          Numerical Algorithms, 2nd ed., SIAM 2002, Lemma 3.1: the product
 *                          of n factors (1 + d_i)^(+-1), |d_i| <= u, is 1 + theta_n with
 *                          |theta_n| <= gamma_n when n u < 1). n u is formed exactly (a
 *                          product of two binary64 needs 106 bits); 1 - n u is rounded down
 *                          and the quotient up, so the binary64 returned is never below the
 *                          true gamma_n (at most 2 ulps above). A bound that came out one
 *                          rounding too small could fail a correct kernel.
 *
 *   parity_ulp_at          2^(e - p + 1) for |x| in [2^e, 2^(e+1)), with e clamped to the
 *                          format's [emin_normal, emax_normal]: exact powers of two.
 *
 *   parity_round_to_dtype  One correct rounding (to nearest, ties to even) of the MPFR value
 *                          to the format, subnormals and overflow included: the result is
 *                          what a correctly rounding IEEE kernel returns for that exact value.
 *                          Method, following the MPFR manual (4.2, "Exception Related
 *                          Functions": mpfr_check_range, mpfr_subnormalize and the latter's
 *                          example emulating binary32 with emin = -148, emax = 128): round
 *                          to p bits with an unbounded exponent (mpfr_set), then, with the
 *                          exponent range set to the target format's, mpfr_check_range
 *                          (overflow to Inf, and underflow below the smallest subnormal) and
 *                          mpfr_subnormalize (rounds to precision EXP(x) - emin + 1 in the
 *                          subnormal range).
 *                          Both take the ternary value of the previous rounding, which is what
 *                          makes the two-step process equal to a single rounding (no double
 *                          rounding at a midpoint). The manual requires that every variable in
 *                          use lie in the current exponent range and calls the behaviour
 *                          undefined otherwise, so the caller's x is only read while the range
 *                          is wide, and only our own temporary enters the narrowed range.
 *
 *                          Exponent ranges, MPFR convention x = 0.1b... * 2^e, so the smallest
 *                          subnormal is 2^(emin - 1) and every finite value is < 2^emax; with
 *                          IEEE's minimum normal exponent Emin and maximum exponent Emax
 *                          (the emin and emax columns of formats/float_format.c, which is
 *                          where p, Emin, Emax and the NaN rules come from),
 *                          emin = Emin - p + 2 and emax = Emax + 1, which gives:
 *                            binary64  p = 53  emin = -1073  emax = 1024
 *                            binary32  p = 24  emin =  -148  emax =  128
 *                            bfloat16  p =  8  emin =  -132  emax =  128
 *                            binary16  p = 11  emin =   -23  emax =   16
 *                            e5m2      p =  3  emin =   -15  emax =   16  (max 57344)
 *                            e4m3fn    p =  4  emin =    -8  emax =    9  (2^-9 .. 448)
 *                          e4m3fn (OCP OFP8 spec rev. 1.0, 2023) uses exponent field 1111 for
 *                          finite values except S.1111.111, its only NaN, so binade 2^8 holds
 *                          256 .. 448 and the format has no infinity (hasInf 0). It is rounded
 *                          as a 1.4.3 format with emax = 9 (binade 2^8 complete up to 480), and
 *                          a rounded magnitude above 448 (480, or the Inf of magnitudes >= 496)
 *                          becomes NaN, as torch's non-saturating cast does. So 464, the
 *                          midpoint of 448 (mantissa 110, even) and 480 (111, odd), rounds to
 *                          448, and everything above 464 is NaN; parity_encode agrees (tested).
 *
 *                          Integers: nearest, ties to even, clamped to the type's range, NaN
 *                          -> 0 (parity_encode's rules); bool: nonzero (NaN included) -> 1.
 *
 *   parity_exact_dot/sum   Exact: each product of two binary64 values is exact in 2 * 53 = 106
 *                          bits, and mpfr_sum returns the correctly rounded sum of its inputs
 *                          (MPFR manual, mpfr_sum), so r is the exact result rounded once to
 *                          r's precision. *pAbsSum is sum |a_i b_i| rounded up twice (to 53
 *                          bits, then to binary64 with its subnormals): an upper bound, and the
 *                          least binary64 not below the exact value, since the binary64 grid is a
 *                          subset of the 53-bit one. Special values follow mpfr_mul and
 *                          mpfr_sum, which implement IEEE 754: Inf * 0 = NaN, a NaN term gives
 *                          NaN, +Inf with -Inf gives NaN, otherwise any Inf gives that Inf.
 *
 * MPFR state: every function leaves the calling thread's exponent range and MPFR flags as it
 * found them. Work on inputs runs with the exponent range widened to MPFR's extremes (the
 * range MPFR's own functions use internally): products of binary64 subnormals reach 2^-2148,
 * beyond what a caller may have set. Debian builds MPFR with thread-local state
 * (mpfr_buildopt_tls_p), so this is safe from several threads at once.
 */
#include "tolerance/mpref.h"
#include "tolerance/superacc_internal.h"
#include "formats/float_format.h"
#include "formats/alloc.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------- */
/* Formats                                                                            */

/* The formats themselves are the table of formats/float_format.c. MPFR writes a number as
 * 0.1b... * 2^e, one exponent above IEEE's 1.b... * 2^e, so a format with IEEE exponents
 * emin..emax and precision p has, in MPFR's terms, its smallest subnormal at
 * 2^(emin - p + 1) = 2^(mpfr emin - 1) and every finite value below 2^(emax + 1) =
 * 2^(mpfr emax): the ranges of the file comment. */
static mpfr_exp_t mp_emin(const parity_float_format *pF)
{
    return (mpfr_exp_t)pF->emin - pF->precision + 2;
}

static mpfr_exp_t mp_emax(const parity_float_format *pF)
{
    return (mpfr_exp_t)pF->emax + 1;
}

/* Integer ranges as exact binary64 bounds: a rounded value r is in range iff lo <= r < hi
 * (hi is the first integer past the maximum, a power of two); dMin/dMax are the clamped
 * results as binary64 (INT64_MAX and UINT64_MAX round to 2^63 and 2^64, as parity_decode
 * gives them). */
typedef struct {
    double lo, hi, dMin, dMax;
} int_fmt;

static const int_fmt *int_fmt_of(parity_dtype dt)
{
    static const int_fmt aI8 = {-0x1p7, 0x1p7, -0x1p7, 0x1p7 - 1};
    static const int_fmt aI16 = {-0x1p15, 0x1p15, -0x1p15, 0x1p15 - 1};
    static const int_fmt aI32 = {-0x1p31, 0x1p31, -0x1p31, 0x1p31 - 1};
    static const int_fmt aI64 = {-0x1p63, 0x1p63, -0x1p63, 0x1p63};
    static const int_fmt aU8 = {0.0, 0x1p8, 0.0, 0x1p8 - 1};
    static const int_fmt aU16 = {0.0, 0x1p16, 0.0, 0x1p16 - 1};
    static const int_fmt aU32 = {0.0, 0x1p32, 0.0, 0x1p32 - 1};
    static const int_fmt aU64 = {0.0, 0x1p64, 0.0, 0x1p64};
    switch (dt) {
    case PARITY_DT_I8: return &aI8;
    case PARITY_DT_I16: return &aI16;
    case PARITY_DT_I32: return &aI32;
    case PARITY_DT_I64: return &aI64;
    case PARITY_DT_U8: return &aU8;
    case PARITY_DT_U16: return &aU16;
    case PARITY_DT_U32: return &aU32;
    case PARITY_DT_U64: return &aU64;
    default: return NULL;
    }
}

/* ---------------------------------------------------------------------------------- */
/* MPFR state and small temporaries                                                   */

typedef struct {
    mpfr_exp_t emin, emax;
    mpfr_flags_t flags;
} mp_state;

/* Saves the caller's range and flags, then widens the range to MPFR's extremes. */
static void state_enter(mp_state *pS)
{
    pS->emin = mpfr_get_emin();
    pS->emax = mpfr_get_emax();
    pS->flags = mpfr_flags_save();
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
}

static void state_restore_range(const mp_state *pS)
{
    mpfr_set_emin(pS->emin);
    mpfr_set_emax(pS->emax);
}

static void state_leave(const mp_state *pS)
{
    state_restore_range(pS);
    mpfr_flags_restore(pS->flags, MPFR_FLAGS_ALL);
}

/* Temporaries of up to 128 bits live on the stack through MPFR's custom interface: no
 * malloc per rounding (these run per element) and no allocation that could abort. */
#define SMALL_PREC_MAX 128
#define SMALL_LIMBS ((SMALL_PREC_MAX + GMP_NUMB_BITS - 1) / GMP_NUMB_BITS)

static void small_init(mpfr_t x, mp_limb_t *aLimb, mpfr_prec_t prec)
{
    mpfr_custom_init(aLimb, prec);
    mpfr_custom_init_set(x, MPFR_ZERO_KIND, 0, prec, aLimb);
}

/* ---------------------------------------------------------------------------------- */
/* Unit roundoff, gamma, ulp                                                          */

double parity_unit_roundoff(parity_dtype dt)
{
    const parity_float_format *pF = parity_float_format_of(dt);
    return pF ? ldexp(1.0, -pF->precision) : 0.0;
}

double parity_gamma(double n, double u)
{
    if (isnan(n) || isnan(u) || n < 0.0 || u < 0.0)
        return NAN;
    if (n == 0.0 || u == 0.0)
        return isinf(n) || isinf(u) ? NAN : 0.0;

    mp_state st;
    mp_limb_t aLimbNu[SMALL_LIMBS], aLimbDen[SMALL_LIMBS], aLimbG[SMALL_LIMBS];
    mpfr_t nu, den, g;
    double res;

    state_enter(&st);
    small_init(nu, aLimbNu, 106);
    small_init(den, aLimbDen, 106);
    small_init(g, aLimbG, 53);
    mpfr_set_d(nu, n, MPFR_RNDN);
    mpfr_mul_d(nu, nu, u, MPFR_RNDN); /* exact: 53 x 53 bits */
    if (mpfr_cmp_ui(nu, 1) >= 0) {
        res = INFINITY; /* n u >= 1: Lemma 3.1 gives no bound */
    } else {
        mpfr_ui_sub(den, 1, nu, MPFR_RNDD);
        mpfr_div(g, nu, den, MPFR_RNDU);
        res = mpfr_get_d(g, MPFR_RNDU);
    }
    state_leave(&st);
    return res;
}

double parity_gamma_prob(double n, double u, double lambda)
{
    double g;
    if (!(n >= 0.0) || !(u >= 0.0) || !(lambda >= 0.0)) return NAN;
    if (n == 0.0) return 0.0;
    g = expm1(lambda * sqrt(n) * u + n * u * u / (1.0 - u));
    /* expm1 and the argument carry a few roundings: a relative 2^-48 up covers them. */
    return g * (1.0 + 0x1p-48);
}

/* ---------------------------------------------------------------------------------- */
/* Rounding to a dtype                                                                */

/* Runs with the range wide (state_enter) and leaves it narrowed; the caller restores. */
static double round_float(mpfr_srcptr x, const parity_float_format *pF)
{
    mp_limb_t aLimb[SMALL_LIMBS];
    mpfr_t y;
    int t;
    double d;

    if (mpfr_nan_p(x))
        return NAN;
    small_init(y, aLimb, pF->precision);
    /* Exponent unbounded here, so only the significand is rounded; t records the direction,
     * which check_range and subnormalize need to resolve midpoints created by this first
     * rounding. */
    t = mpfr_set(y, x, MPFR_RNDN);
    mpfr_set_emin(mp_emin(pF));
    mpfr_set_emax(mp_emax(pF));
    t = mpfr_check_range(y, t, MPFR_RNDN);
    mpfr_subnormalize(y, t, MPFR_RNDN);
    d = mpfr_get_d(y, MPFR_RNDN); /* exact: at most 53 bits, inside binary64's range */
    if (!pF->hasInf && !(fabs(d) <= pF->maxFinite))
        return NAN; /* e4m3fn: no infinity, so what rounds beyond the largest finite is NaN */
    return d;
}

static double round_int(mpfr_srcptr x, const int_fmt *pI)
{
    mp_limb_t aLimb[SMALL_LIMBS];
    mpfr_t r;

    if (mpfr_nan_p(x))
        return 0.0;
    /* 66 bits hold every integer below 2^66 exactly, so rint rounds once (ties to even);
     * anything larger is clamped whatever its low bits. */
    small_init(r, aLimb, 66);
    mpfr_rint(r, x, MPFR_RNDN);
    if (mpfr_cmp_d(r, pI->lo) < 0)
        return pI->dMin;
    if (mpfr_cmp_d(r, pI->hi) >= 0)
        return pI->dMax;
    if (mpfr_zero_p(r))
        return 0.0; /* integers have no -0 */
    return mpfr_get_d(r, MPFR_RNDN); /* exact below 2^53; i64/u64 beyond round like decode */
}

/* Dispatch; runs with the range wide. */
static double round_any(mpfr_srcptr x, parity_dtype dt)
{
    const parity_float_format *pF = parity_float_format_of(dt);
    if (pF != NULL)
        return round_float(x, pF);
    const int_fmt *pI = int_fmt_of(dt);
    if (pI != NULL)
        return round_int(x, pI);
    if (dt == PARITY_DT_BOOL)
        return mpfr_zero_p(x) ? 0.0 : 1.0; /* as C's _Bool and parity_encode: NaN -> 1 */
    return NAN;
}

double parity_round_to_dtype(const mpfr_t x, parity_dtype dt)
{
    mp_state st;
    double d;

    state_enter(&st);
    d = round_any(x, dt);
    state_leave(&st);
    return d;
}

double parity_round_double_to_dtype(double x, parity_dtype dt)
{
    mp_state st;
    mp_limb_t aLimb[SMALL_LIMBS];
    mpfr_t mx;
    double d;

    /* binary64 and binary32 by the hardware: IEEE 754's conversion rounds to nearest even,
     * subnormals and overflow to an infinity included (C11 F.4, with no excess precision),
     * what round_any gives, without MPFR's per-thread state on the judge's every element
     * (relu and the data-movement ops call this for each; it was a fifth of their time) */
#if FLT_EVAL_METHOD == 0
    if (dt == PARITY_DT_F64) return x;
    if (dt == PARITY_DT_F32) return (double)(float)x;
#endif
    state_enter(&st); /* before mpfr_set_d: a binary64 subnormal may lie below a narrow range */
    small_init(mx, aLimb, 53);
    mpfr_set_d(mx, x, MPFR_RNDN); /* exact */
    d = round_any(mx, dt);
    state_leave(&st);
    return d;
}

/* ---------------------------------------------------------------------------------- */
/* Exact dot products and sums                                                        */

/* Two paths. The fast one (fast_dot, below) adds every term exactly into a fixed-point
 * accumulator with integer operations, as in Kulisch's exact dot product
 * (superacc_internal.h), and rounds once at the end. It refuses terms outside its range
 * (non-finite, beyond 2^1000, or with a part below 2^-1020); those sums take this
 * straightforward path: one 106-bit MPFR number per term, then mpfr_sum. */
#define TERM_PREC 106 /* 2 * 53: a product of two binary64 values is exact */

typedef struct {
    size_t nTerm;
    mpfr_t *aTerm;
    mpfr_ptr *apTerm; /* mpfr_sum takes an array of pointers */
    mp_limb_t *aLimb;
} term_set;

/* Allocates nTerm zero terms in three blocks (custom interface: no per-term malloc, and a
 * failure is reported instead of aborting). Returns 0 or -1. */
static int terms_alloc(term_set *pT, size_t nTerm)
{
    const size_t nLimbPer = (TERM_PREC + GMP_NUMB_BITS - 1) / GMP_NUMB_BITS;

    pT->nTerm = nTerm;
    pT->aTerm = NULL;
    pT->apTerm = NULL;
    pT->aLimb = NULL;
    if (nTerm > SIZE_MAX / (nLimbPer * sizeof(mp_limb_t) + sizeof(mpfr_t) + sizeof(mpfr_ptr)))
        return -1;
    pT->aTerm = parity_malloc(nTerm * sizeof(mpfr_t));
    pT->apTerm = parity_malloc(nTerm * sizeof(mpfr_ptr));
    pT->aLimb = parity_malloc(nTerm * nLimbPer * sizeof(mp_limb_t));
    if (pT->aTerm == NULL || pT->apTerm == NULL || pT->aLimb == NULL)
        return -1;
    for (size_t i = 0; i < nTerm; i++) {
        small_init(pT->aTerm[i], pT->aLimb + i * nLimbPer, TERM_PREC);
        pT->apTerm[i] = pT->aTerm[i];
    }
    return 0;
}

static void terms_free(term_set *pT)
{
    /* Custom-interface variables are never mpfr_clear'ed: the blocks are ours. */
    free(pT->aTerm);
    free(pT->apTerm);
    free(pT->aLimb);
}

/* r = the correctly rounded sum of the terms in the caller's exponent range; *pAbsSum as in
 * the header. Consumes the terms (takes their absolute values). Runs with the range wide and
 * ends with it restored (mpfr_check_range then applies the caller's range to r). */
static void terms_sum(mpfr_t r, term_set *pT, double *pAbsSum, const mp_state *pSt)
{
    int t = mpfr_sum(r, pT->apTerm, pT->nTerm, MPFR_RNDN);
    if (pAbsSum != NULL) {
        mp_limb_t aLimb[SMALL_LIMBS];
        mpfr_t s;
        small_init(s, aLimb, 53);
        for (size_t i = 0; i < pT->nTerm; i++)
            mpfr_abs(pT->aTerm[i], pT->aTerm[i], MPFR_RNDN); /* exact */
        mpfr_sum(s, pT->apTerm, pT->nTerm, MPFR_RNDU);
        *pAbsSum = mpfr_get_d(s, MPFR_RNDU);
    }
    state_restore_range(pSt);
    mpfr_check_range(r, t, MPFR_RNDN);
}

/* The fast path: terms accumulated exactly in fixed-point accumulators (superacc_internal.h), the
 * sum rounded once to r's precision and sum |terms| rounded up to binary64, as the MPFR path
 * does. Returns -1 (nothing written) when a term is out of the accumulator's range. */
static int fast_dot(mpfr_t r, const double *a, size_t strideA, const double *b,
                    size_t strideB, size_t n, const double *pBias, double *pAbsSum)
{
    static __thread parity_superacc acc = { { 0 }, PARITY_SUPERACC_LIMBS, -1, 0, 0 };
    static __thread parity_superacc accAbs = { { 0 }, PARITY_SUPERACC_LIMBS, -1, 0, 0 };
    parity_superacc *pAbs = pAbsSum ? &accAbs : NULL;
    size_t i;
    int negZeroOnly = 1, rc;   /* IEEE: a sum of -0 terms only is -0 */
    mpfr_flags_t flags = mpfr_flags_save();
    mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
    mpfr_t absSum;

    parity_superacc_clear(&acc);
    parity_superacc_clear(&accAbs);
    for (i = 0; i < n; i++) {
        double x = a[i * strideA];
        if (b) {
            double y = b[i * strideB];
            parity_superacc_add_product(&acc, x, y, pAbs);
            /* only a zero product with opposite signs is -0 */
            negZeroOnly &= (x == 0.0 || y == 0.0) && signbit(x) != signbit(y);
        } else {
            parity_superacc_add(&acc, x);
            if (pAbs) parity_superacc_add(pAbs, fabs(x));
            if (!(x == 0.0 && signbit(x))) negZeroOnly = 0;
        }
    }
    if (pBias) {
        parity_superacc_add(&acc, *pBias);
        if (pAbs) parity_superacc_add(pAbs, fabs(*pBias));
        if (!(*pBias == 0.0 && signbit(*pBias))) negZeroOnly = 0;
    }
    if (acc.refused || accAbs.refused) return -1;
    /* The exact sum may span more than the caller's exponent range allows: round with the
     * widest range, then let the caller's range apply, as mpfr_sum would. */
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
    rc = parity_superacc_round(&acc, r, MPFR_RNDN);
    if (rc == 0 && negZeroOnly && mpfr_zero_p(r)) mpfr_set_zero(r, -1);
    if (rc == 0 && pAbs) {
        mpfr_init2(absSum, 53);
        rc = parity_superacc_round(pAbs, absSum, MPFR_RNDU);
        if (rc == 0) *pAbsSum = mpfr_get_d(absSum, MPFR_RNDU);
        mpfr_clear(absSum);
    }
    mpfr_set_emin(emin);
    mpfr_set_emax(emax);
    if (rc == 0) mpfr_check_range(r, 0, MPFR_RNDN);
    mpfr_flags_restore(flags, MPFR_FLAGS_ALL);
    return rc;
}

int parity_exact_dot(mpfr_t r, const double *a, size_t strideA, const double *b,
                     size_t strideB, size_t n, const double *pBias, double *pAbsSum)
{
    size_t nTerm = n + (pBias != NULL);
    term_set ts;
    mp_state st;

    if (nTerm > 0 && fast_dot(r, a, strideA, b, strideB, n, pBias, pAbsSum) == 0) return 0;

    if (nTerm == 0) {
        mpfr_set_zero(r, 1); /* the empty sum, as mpfr_sum gives it */
        if (pAbsSum != NULL)
            *pAbsSum = 0.0;
        return 0;
    }
    if (terms_alloc(&ts, nTerm) != 0) {
        terms_free(&ts);
        return -1;
    }
    state_enter(&st);
    for (size_t i = 0; i < n; i++) {
        mpfr_set_d(ts.aTerm[i], a[i * strideA], MPFR_RNDN);
        mpfr_mul_d(ts.aTerm[i], ts.aTerm[i], b[i * strideB], MPFR_RNDN); /* exact */
    }
    if (pBias != NULL)
        mpfr_set_d(ts.aTerm[n], *pBias, MPFR_RNDN);
    terms_sum(r, &ts, pAbsSum, &st);
    mpfr_flags_restore(st.flags, MPFR_FLAGS_ALL);
    terms_free(&ts);
    return 0;
}

int parity_exact_sum(mpfr_t r, const double *a, size_t stride, size_t n, double *pAbsSum)
{
    term_set ts;
    mp_state st;

    if (n > 0 && fast_dot(r, a, stride, NULL, 0, n, NULL, pAbsSum) == 0) return 0;

    if (n == 0) {
        mpfr_set_zero(r, 1);
        if (pAbsSum != NULL)
            *pAbsSum = 0.0;
        return 0;
    }
    if (terms_alloc(&ts, n) != 0) {
        terms_free(&ts);
        return -1;
    }
    state_enter(&st);
    for (size_t i = 0; i < n; i++)
        mpfr_set_d(ts.aTerm[i], a[i * stride], MPFR_RNDN);
    terms_sum(r, &ts, pAbsSum, &st);
    mpfr_flags_restore(st.flags, MPFR_FLAGS_ALL);
    terms_free(&ts);
    return 0;
}
