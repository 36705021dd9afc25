/*
 * rng.h - the fuzzer's deterministic random streams.
 *
 * splitmix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
 * OOPSLA 2014): one 64-bit state, passes BigCrush, and any seed (0 included) is fine, so
 * a case's values depend on nothing but its seed. Same seed, same campaign.
 */
#ifndef PARITY_RNG_H
#define PARITY_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct { uint64_t state; } parity_rng;

static inline void parity_rng_seed(parity_rng *pR, uint64_t seed) { pR->state = seed; }

static inline uint64_t parity_rng_next(parity_rng *pR)
{
    uint64_t z = (pR->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 when n == 0. The modulo bias is below 2^-40 for n < 2^24. */
static inline uint64_t parity_rng_below(parity_rng *pR, uint64_t n)
{
    return n ? parity_rng_next(pR) % n : 0;
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double parity_rng_unit(parity_rng *pR)
{
    return (double)(parity_rng_next(pR) >> 11) * 0x1p-53;
}

/* Standard normal by Box-Muller (one of the pair; simplicity beats speed here). */
static inline double parity_rng_normal(parity_rng *pR)
{
    double u = parity_rng_unit(pR), v = parity_rng_unit(pR);
    return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

/* 1 with probability 1/n. */
static inline int parity_rng_one_in(parity_rng *pR, uint64_t n)
{
    return parity_rng_below(pR, n) == 0;
}

#endif
