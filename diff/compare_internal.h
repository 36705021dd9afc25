/*
 * compare_internal.h - element-wise comparison of one tensor pair, streamed (engine.c
 * and its test use it).
 *
 * parity_cmp_block judges a contiguous run of elements and accumulates
 * parity_tensor_stats; parity_cmp_stats_merge folds the stats of a later run into an earlier
 * one. Both are pure, so the streaming driver (parity_cmp_tensor) can split slabs into fixed
 * blocks, hand them to threads in any order and still produce the same result: blocks are
 * merged in index order and ties in worst score go to the lowest linear index.
 */
#ifndef PARITY_COMPARE_INTERNAL_H
#define PARITY_COMPARE_INTERNAL_H

#include "diff/diff.h"

typedef struct {
    parity_dtype dtype;
    int rank;
    const uint64_t *aDim;
    parity_tolerance tol;
} parity_cmp_spec;

void parity_cmp_stats_init(parity_tensor_stats *pStats);
void parity_cmp_block(const parity_cmp_spec *pSpec, const void *pEager, const void *pCompiled,
                      uint64_t first, size_t n, parity_tensor_stats *pStats);
void parity_cmp_stats_merge(parity_tensor_stats *pInto, const parity_tensor_stats *pFrom, int rank);

/* parity_cmp_tensor for a pair of which neither side stores data
 * (parity_tensor_reader_unstored): every element of each side is the one value element 0
 * reads as, so one element is judged and stands for all, in O(1) whatever the shape. The
 * figures are those of the element loop: counts and sums times nElem, maxima once, the
 * worst at index 0, the affected slice the whole tensor. */
int parity_cmp_unstored(parity_tensor_reader *pEager, parity_tensor_reader *pCompiled,
                        const parity_tensor_info *pInfo, parity_dtype dtypeCompiled,
                        const parity_tolerance *pTol, parity_tensor_stats *pStats, char *zErr,
                        size_t nErr);

/* The compute threads when --threads does not say: the cores online, 1 to 64. */
int parity_cmp_default_threads(void);

/* The dtype two float tensors of different dtypes are compared in: the narrower (larger
 * unit roundoff), so a bfloat16 compiled side is read against float32 eager rounded to
 * bfloat16, its ulps are bfloat16 ulps and its tolerance bfloat16's. Equal or non-float
 * dtypes: eager's. */
parity_dtype parity_cmp_dtype(parity_dtype eager, parity_dtype compiled);

/* Streams both tensors slab by slab through parity_cmp_block using nThreads compute threads
 * (reading overlaps computing). pInfo is eager's; when dtypeCompiled differs (both float),
 * the wider side is rounded to parity_cmp_dtype slab by slab (the max_abs_err and the rest
 * are then against that rounding). Returns 0, or -1 with zErr naming the side that failed. */
int parity_cmp_tensor(parity_tensor_reader *pEager, parity_tensor_reader *pCompiled,
                      const parity_tensor_info *pInfo, parity_dtype dtypeCompiled,
                      const parity_tolerance *pTol, int nThreads, uint64_t nSlabBytes,
                      parity_tensor_stats *pStats, char *zErr, size_t nErr);

#endif
