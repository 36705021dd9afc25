/*
 * operand_internal.h - operands of the semantic judgements: how much one judgement may load,
 * and the cache that lets the next judgement reuse what this one loaded.
 *
 * References read operands at random (a matmul reads rows and columns), so operands are
 * held in memory whole (parity_operand_load, tolerance/ops.h); OPERAND_BUDGET_ELEMS caps
 * what one judgement may load, and a tensor beyond it keeps the per-dtype tolerance, with
 * a note.
 *
 * The cache. In an op-by-op capture the output of one op is an input of the next, on both
 * sides, so each tensor was read and decoded to binary64 two or more times: a fifth of a
 * 4-layer encoder's judgement, on one thread, with a freshly mapped and zeroed page every
 * 4 KiB of each new array. The cache keeps the operands a judgement released (idle
 * entries, at most OPERAND_CACHE_IDLE_ELEMS values, the least recently used dropped first)
 * and hands them out again, shared and read only, counted by references. It belongs to one
 * diff run (captures are identified by their handle), and a load that fails while idle
 * entries are held is tried once more without them (out of memory may show as a read
 * error, libhdf5 allocating on its own), so the cache never makes a judgement fail that
 * would have run without it.
 */
#ifndef PARITY_OPERAND_INTERNAL_H
#define PARITY_OPERAND_INTERNAL_H

#include "tolerance/ops.h"

/* 640 MiB of binary64 per judgement: a 16M-element output (eager and compiled: 256 MiB)
 * with up to 24M operand elements a side, so a [4, 2048, 2048] activation of a norm with
 * its weight and bias is judged, within --max-memory's default of 8 GiB. */
#define OPERAND_BUDGET_ELEMS (80ull << 20)

/* 128 MiB of idle binary64: both sides' outputs of an op up to 8M elements each, which
 * the next op reads as its inputs (256 MiB took the encoder benchmark from 27.1 s to
 * 26.0 s more, at 531 MiB of peak RSS instead of 353). */
#define OPERAND_CACHE_IDLE_ELEMS (16ull << 20)

typedef struct parity_operand_cache parity_operand_cache;

/* A new, empty cache; NULL when memory runs out (the functions below then load and free
 * without one). */
parity_operand_cache *parity_operand_cache_new(void);
/* Frees the cache and its idle entries (every loaded operand must have been released). */
void parity_operand_cache_free(parity_operand_cache *pCache);
/* parity_operand_load through the cache: *pOp's values may be shared with other holders
 * and must not be written. 0, or -1 with zErr. pCache may be NULL. */
int parity_operand_cache_load(parity_operand_cache *pCache, parity_capture *pCap,
                              size_t iTensor, parity_operand *pOp, char *zErr, size_t nErr);
/* Gives back an operand parity_operand_cache_load loaded (zeroes *pOp); one never loaded
 * (all zero) is ignored. */
void parity_operand_cache_release(parity_operand_cache *pCache, parity_operand *pOp);

#endif
