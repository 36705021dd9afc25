/*
 * superacc.c - exact fixed-point accumulation of binary64 terms; see superacc_internal.h.
 *
 * Representation: the value is sum_k aLimb[k] * 2^(32 k + PARITY_SUPERACC_MIN_EXP). The
 * additions (inline, in superacc_internal.h) put each term's 53 bits into three 32-bit
 * digits; each limb stays below 2^63 in magnitude for 2^30 additions of values below 2^33,
 * so carries are propagated only every 2^30 additions and at the end
 * (parity_superacc_normalise).
 */
#include <gmp.h>
#include <math.h>
#include <string.h>
#include "tolerance/superacc_internal.h"


void parity_superacc_clear(parity_superacc *pAcc)
{
    if (pAcc->lo <= pAcc->hi)
        memset(&pAcc->aLimb[pAcc->lo], 0, (size_t)(pAcc->hi - pAcc->lo + 1) * sizeof(int64_t));
    pAcc->lo = PARITY_SUPERACC_LIMBS;
    pAcc->hi = -1;
    pAcc->nAdd = 0;
    pAcc->refused = 0;
}

/* Propagates carries so every limb but the top holds a digit in [0, 2^32). */
void parity_superacc_normalise(parity_superacc *pAcc)
{
    int k;
    int64_t carry = 0;
    if (pAcc->lo > pAcc->hi) return;
    for (k = pAcc->lo; k < PARITY_SUPERACC_LIMBS; k++) {
        int64_t v = pAcc->aLimb[k] + carry;
        if (k >= pAcc->hi && v >= 0 && v < ((int64_t)1 << 32)) {
            pAcc->aLimb[k] = v;
            if (k > pAcc->hi) pAcc->hi = k;
            carry = 0;
            break;
        }
        /* floor division by 2^32 with a non-negative remainder */
        carry = v >> 32;
        pAcc->aLimb[k] = v - carry * ((int64_t)1 << 32);
        if (k > pAcc->hi) pAcc->hi = k;
        if (k == PARITY_SUPERACC_LIMBS - 1) pAcc->aLimb[k] = v;   /* top keeps the sign */
    }
    pAcc->nAdd = 0;
}

int parity_superacc_round(parity_superacc *pAcc, mpfr_t r, mpfr_rnd_t rnd)
{
    mpz_t z;
    int k, lo;
    if (pAcc->refused) return -1;
    if (pAcc->lo > pAcc->hi) {
        mpfr_set_zero(r, 1);
        return 0;
    }
    parity_superacc_normalise(pAcc);
    lo = pAcc->lo;
    mpz_init_set_si(z, (long)pAcc->aLimb[pAcc->hi]);
    for (k = pAcc->hi - 1; k >= lo; k--) {
        mpz_mul_2exp(z, z, 32);
        mpz_add_ui(z, z, (unsigned long)pAcc->aLimb[k]);
    }
    /* value = z * 2^(32 lo + PARITY_SUPERACC_MIN_EXP), rounded once to r's precision */
    mpfr_set_z_2exp(r, z, 32 * lo + PARITY_SUPERACC_MIN_EXP, rnd);
    mpz_clear(z);
    return 0;
}
