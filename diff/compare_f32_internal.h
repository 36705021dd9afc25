/*
 * compare_f32_internal.h - the float32 lane pass of parity_cmp_block (compare_f32.c).
 *
 * Float32 tensors dominate captures, so their common case (finite, bits differ) runs as a
 * branch-free pass over a group of elements that keeps its maxima and sums in
 * PARITY_F32_LANES lanes (element i in lane i mod PARITY_F32_LANES) and gives, per element,
 * its ulp histogram bucket when it enters the figures (finite, not both zero, bits differ)
 * and whether it needs a closer look (a special value, or an error that may fail or beat
 * the worst score).
 * The lanes are folded in lane order at the end of a block. The AVX2 version (chosen at
 * run time) and the portable one do the same IEEE operations per lane in the same order,
 * so they agree bit for bit (tests/test_compare.c).
 */
#ifndef PARITY_COMPARE_F32_INTERNAL_H
#define PARITY_COMPARE_F32_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "tolerance/tolerance.h"

#define PARITY_F32_LANES 8
#define PARITY_F32_GROUP 1024     /* elements per pass: buckets and looks on the caller's stack */

typedef struct {
    double maxAbs[PARITY_F32_LANES], maxRel[PARITY_F32_LANES];
    double sumSqDiff[PARITY_F32_LANES], sumSqRef[PARITY_F32_LANES];
    uint64_t maxUlp[PARITY_F32_LANES], nSame[PARITY_F32_LANES], nBitDiff[PARITY_F32_LANES];
} parity_f32_sums;

/* One group of n (<= PARITY_F32_GROUP) float32 pairs from pE, pC (any alignment): what each
 * adds to the lanes of pS and, per element, its ulp histogram bucket (aBucket: the bit length
 * of its ulp distance where COMMON, else 0) and whether it needs a look (aLook, 0 or 1).
 * worst: the block's worst score so far; an element that can neither fail nor beat it is
 * not flagged (the look rechecks against the current worst, which only grows). Returns 1
 * when some element needs a look. Tolerances with exact set are not for this pass. */
int parity_f32_lanes(const unsigned char *pE, const unsigned char *pC, size_t n,
                     const parity_tolerance *pTol, double floorRel, double worst,
                     parity_f32_sums *pS, unsigned char *aBucket, unsigned char *aLook);

/* Adds the buckets 1 and up of aBucket[0..n) (n <= PARITY_F32_GROUP), as parity_f32_lanes
 * gave them, to aHist[1..]; aHist[0] gets an arbitrary count (bucket 0 is counted through
 * the elements whose bits are the same). */
void parity_f32_bucket_counts(const unsigned char *aBucket, size_t n, uint64_t *aHist);

/* The portable versions alone (the tests compare them with the chosen ones). */
void parity_f32_bucket_counts_portable(const unsigned char *aBucket, size_t n,
                                       uint64_t *aHist);

int parity_f32_lanes_portable(const unsigned char *pE, const unsigned char *pC, size_t n,
                              const parity_tolerance *pTol, double floorRel, double worst,
                              parity_f32_sums *pS, unsigned char *aBucket,
                              unsigned char *aLook);

#endif
