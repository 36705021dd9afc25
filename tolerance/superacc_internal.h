/*
 * superacc_internal.h - an exact fixed-point accumulator for sums of binary64 values
 * (mpref.c's fast path), and the error-free transformations it and the judge's fast paths
 * share (parity_significant_bits, parity_sum_is_exact).
 *
 * mpfr_sum per output element of a matmul costs about 20x a naive binary64 loop. This
 * accumulator instead adds every term exactly into a long fixed-point integer (a Kulisch
 * accumulator, Kulisch & Miranker, "The arithmetic of the digital computer", SIAM Review
 * 28(1), 1986): ~2100 bits split into 32-bit digits held in int64 limbs, so carries can be
 * deferred for 2^30 additions. Products a*b are split error-free into p + e with
 * p = fl(a*b), e = fma(a, b, -p) (exact when no underflow: Ogita, Rump & Oishi, "Accurate
 * sum and dot product", SIAM J. Sci. Comput. 26(6), 2005, TwoProduct), so a dot product of
 * any binary64 operands is accumulated exactly. The result is rounded once, by MPFR, to the
 * caller's precision. Terms outside the covered exponent range (|x| > 2^1000, or a nonzero
 * part below 2^-1020, where TwoProduct may be inexact) and non-finite terms are refused: the
 * caller then falls back to mpfr_sum.
 */
#ifndef PARITY_SUPERACC_INTERNAL_H
#define PARITY_SUPERACC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>
#include <mpfr.h>

#define PARITY_SUPERACC_LIMBS 68   /* 68 x 32 bits: 2^-1100 .. 2^1076 */

typedef struct {
    int64_t aLimb[PARITY_SUPERACC_LIMBS];
    int lo, hi;                    /* touched limb range, for a cheap clear and finish */
    uint32_t nAdd;                 /* additions since the last carry normalisation */
    int refused;                   /* a term could not be taken exactly */
} parity_superacc;

void parity_superacc_clear(parity_superacc *pAcc);
/* Propagates carries (done by parity_superacc_add every 2^30 additions, and by
 * parity_superacc_round). */
void parity_superacc_normalise(parity_superacc *pAcc);

/* The additions are inline: a reference dot product calls them per term. */
#define PARITY_SUPERACC_MIN_EXP (-1100)   /* weight of bit 0 of limb 0 */
#define PARITY_SUPERACC_NORMALISE_EVERY (1u << 30)

/* Adds x exactly (or sets refused). A finite double x = +-mag * 2^(biased - 1075) lands at
 * bit position biased - 1075 - PARITY_SUPERACC_MIN_EXP: its 53 bits, shifted by the
 * position mod 32, span at most three 32-bit digits, added (or subtracted) into three
 * limbs. */
static inline void parity_superacc_add(parity_superacc *pAcc, double x)
{
    uint64_t bits, mag;
    int biased, pos, limb, shift;
    unsigned __int128 wide;
    int64_t d0, d1, d2;

    if (x == 0.0) return;
    memcpy(&bits, &x, sizeof bits);
    biased = (int)((bits >> 52) & 0x7ff);
    /* Normal numbers from 2^-1020 to 2^1000 only: exponent field 3 .. 2023. */
    if (biased < 3 || biased > 2023) {
        pAcc->refused = 1;
        return;
    }
    mag = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);   /* x = +-mag 2^(biased-1075) */
    pos = biased - 1075 - PARITY_SUPERACC_MIN_EXP;                    /* >= 28 */
    limb = pos >> 5;
    shift = pos & 31;
    wide = (unsigned __int128)mag << shift;
    d0 = (int64_t)((uint64_t)wide & 0xffffffffu);
    d1 = (int64_t)(((uint64_t)wide >> 32) & 0xffffffffu);
    d2 = (int64_t)(uint64_t)(wide >> 64);
    {
        /* Negate without a branch: the sign is random data, and a mispredicted branch per
         * term costs more than the arithmetic. (d ^ s) - s is -d for s = -1, d for 0. */
        int64_t sgn = -(int64_t)(bits >> 63);
        d0 = (d0 ^ sgn) - sgn;
        d1 = (d1 ^ sgn) - sgn;
        d2 = (d2 ^ sgn) - sgn;
    }
    pAcc->aLimb[limb] += d0;
    pAcc->aLimb[limb + 1] += d1;
    pAcc->aLimb[limb + 2] += d2;
    if (limb < pAcc->lo) pAcc->lo = limb;
    if (limb + 2 > pAcc->hi) pAcc->hi = limb + 2;
    if (++pAcc->nAdd >= PARITY_SUPERACC_NORMALISE_EVERY) parity_superacc_normalise(pAcc);
}

/* Error-free transformations, shared with the fast paths (judge.c, op_binary.c): where
 * they say a binary64 result is exact, the fast reference is the exact one. */

/* Number of significant bits of a normal double's significand (1 .. 53). A product of two
 * values whose counts add up to at most 53 is exact (barring underflow). */
static inline int parity_significant_bits(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    bits = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
    return 53 - __builtin_ctzll(bits);
}

/* Is a + b exact in binary64? *pSum = a + b rounded; its rounding error by Knuth's TwoSum
 * (exact for any finite a, b in round to nearest, Knuth TAOCP vol. 2, 4.2.2) is 0. An
 * exact reference and an exact error decide a verdict as MPFR does, to the bit (judge.c). */
static inline int parity_sum_is_exact(double a, double b, double *pSum)
{
    double s = a + b, bv = s - a, av = s - bv;
    *pSum = s;
    return isfinite(s) && (a - av) + (b - bv) == 0.0;
}

/* Adds a * b exactly (or sets refused). When pAbs is not NULL, also adds |a * b| exactly
 * to it: |p + err| = |p| + sign(p) err, since |err| is below half an ulp of p. */
static inline void parity_superacc_add_product(parity_superacc *pAcc, double a, double b,
                                               parity_superacc *pAbs)
{
    double p = a * b, err;
    if (p == 0.0 && (a == 0.0 || b == 0.0)) return;   /* an exact zero */
    if (!(fabs(p) <= 0x1p1000) || fabs(p) < 0x1p-960) {
        /* Overflow, non-finite, or so small that the error term could underflow. */
        pAcc->refused = 1;
        return;
    }
    /* a * b = p + err exactly (TwoProduct). When the significands' lengths add up to at
     * most 53 bits the product is exact and err is 0: always so for float32, float16 and
     * bfloat16 operands, and cheaper to see from the bits than to call fma. */
    err = parity_significant_bits(a) + parity_significant_bits(b) <= 53 ? 0.0 : fma(a, b, -p);
    parity_superacc_add(pAcc, p);
    if (err != 0.0) parity_superacc_add(pAcc, err);
    if (pAbs) {
        parity_superacc_add(pAbs, fabs(p));
        if (err != 0.0) parity_superacc_add(pAbs, p < 0.0 ? -err : err);
    }
}


/* Rounds the exact sum to r's precision in direction rnd. Returns 0, or -1 when refused
 * (r untouched). */
int parity_superacc_round(parity_superacc *pAcc, mpfr_t r, mpfr_rnd_t rnd);

#endif
