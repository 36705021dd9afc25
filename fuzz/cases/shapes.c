/*
 * shapes.c - guided dim sizes: the sizes that take compilers' rare paths.
 *
 * Sources of the lists: tail tiles are the classic GEMM failure (a K that is not a multiple
 * of the block, triton-lang/triton#630); split reductions start at a few thousand elements
 * (openxla/xla#5544 and pytorch/pytorch#189895 fail past 8192 and 16384); a size-1 dim
 * takes broadcast and GEMV special paths (pytorch/pytorch#182181). The lists name generic
 * boundaries (powers of two and their neighbours, primes, tile sizes), never a particular
 * kernel's constants.
 */
#include "fuzz/cases/cases.h"

/* 2^k - 1, 2^k, 2^k + 1 for k = 1 .. 16, and primes with no small factor (a prime is
 * never a multiple of a vector width). */
static const uint32_t aPow2Near[] = {
    1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256,
    257, 511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 8191, 8192,
    8193, 16383, 16384, 16385, 32767, 32768, 32769, 65535, 65536, 65537,
};
static const uint32_t aPrime[] = {
    2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 61, 67, 97, 101, 127, 131, 193, 251, 257,
    389, 509, 521, 769, 1021, 1031, 2039, 2053, 4093, 4099, 8191, 8209, 16381, 16411, 32749,
    32771, 65521,
};
/* Tile and vector widths compilers use, to which a remainder is added or taken away. */
static const uint32_t aTile[] = { 4, 8, 16, 32, 64, 128, 256 };
/* Reduction lengths where split and multi-pass reductions start. */
static const uint32_t aSplitLen[] = { 4096, 8192, 16384, 32768 };

#define COUNT(a) (sizeof a / sizeof a[0])

static uint64_t pick(parity_rng *pRng, const uint32_t *a, size_t n, uint64_t maxValue)
{
    int tries;
    for (tries = 0; tries < 8; tries++) {
        uint64_t v = a[parity_rng_below(pRng, n)];
        if (v <= maxValue) return v;
    }
    return a[0];
}

/* A multiple of a tile width plus or minus a small remainder, at most maxValue. */
static uint64_t tile_with_remainder(parity_rng *pRng, uint64_t maxValue)
{
    uint64_t tile = aTile[parity_rng_below(pRng, COUNT(aTile))];
    uint64_t mult = 1 + parity_rng_below(pRng, 8);
    int64_t rem = (int64_t)parity_rng_below(pRng, 7) - 3;
    int64_t v = (int64_t)(tile * mult) + rem;
    if (v < 1) v = 1;
    if ((uint64_t)v > maxValue) v = (int64_t)maxValue;
    return (uint64_t)v;
}

/* A length around a split threshold: the threshold itself, a few off, or a tile off. */
static uint64_t around_split(parity_rng *pRng)
{
    uint64_t base = aSplitLen[parity_rng_below(pRng, COUNT(aSplitLen))];
    int64_t off;
    switch (parity_rng_below(pRng, 4)) {
    case 0: off = (int64_t)parity_rng_below(pRng, 9) - 4; break;
    case 1: off = (int64_t)aTile[parity_rng_below(pRng, COUNT(aTile))] *
                  (parity_rng_one_in(pRng, 2) ? 1 : -1) + (int64_t)parity_rng_below(pRng, 5) - 2;
            break;
    case 2: off = (int64_t)parity_rng_below(pRng, (uint64_t)base / 2); break;
    default: off = -(int64_t)parity_rng_below(pRng, (uint64_t)base / 4); break;
    }
    return (uint64_t)((int64_t)base + off);
}

/* A general size: small uniform, a power-of-two neighbour, a prime or a tile remainder. */
static uint64_t general(parity_rng *pRng, uint64_t maxValue)
{
    switch (parity_rng_below(pRng, 5)) {
    case 0: return 1 + parity_rng_below(pRng, maxValue < 64 ? maxValue : 64);
    case 1: return pick(pRng, aPow2Near, COUNT(aPow2Near), maxValue);
    case 2: return pick(pRng, aPrime, COUNT(aPrime), maxValue);
    default: return tile_with_remainder(pRng, maxValue);
    }
}

uint64_t parity_draw_dim(parity_rng *pRng, parity_dim_role role)
{
    switch (role) {
    case PARITY_ROLE_BATCH:
        if (parity_rng_one_in(pRng, 2)) return 1;
        return general(pRng, 16);
    case PARITY_ROLE_ROW:
        if (parity_rng_one_in(pRng, 50)) return 0;      /* zero-size tensors */
        if (parity_rng_one_in(pRng, 7)) return 1;
        return general(pRng, 1025);
    case PARITY_ROLE_REDUCE:
        if (parity_rng_one_in(pRng, 3)) return around_split(pRng);
        if (parity_rng_one_in(pRng, 10)) return 1;
        if (parity_rng_one_in(pRng, 8)) return pick(pRng, aPow2Near, COUNT(aPow2Near), 65537);
        return general(pRng, 2049);
    case PARITY_ROLE_K:
        if (parity_rng_one_in(pRng, 4)) return around_split(pRng);
        if (parity_rng_one_in(pRng, 12)) return 1;
        return general(pRng, 2049);
    case PARITY_ROLE_TILE:
        if (parity_rng_one_in(pRng, 6)) return 1;
        if (parity_rng_one_in(pRng, 2)) return tile_with_remainder(pRng, 300);
        return general(pRng, 300);
    case PARITY_ROLE_KERNEL:
        return 1 + parity_rng_below(pRng, 7);
    }
    return 1;
}
