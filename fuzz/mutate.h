/*
 * mutate.h - drawing and mutating case specs: the fuzzer's search over shape and value
 * space (shapes.c draws dims, mutate.c builds and changes specs).
 *
 * Two strategies share the interface:
 *   guided     sizes that break compilers: 0 and 1, primes, 2^k - 1, 2^k, 2^k + 1 up to
 *              65537, tile sizes plus or minus a remainder, reduction lengths around 4096,
 *              8192, 16384 and 32768, broadcast dims, ranks 0 to 5, large K with small M
 *              and N; and every value recipe (values.c)
 *   baseline   what a naive tensor fuzzer does (the benchmark's yardstick): every dim
 *              uniform in [1, 4096], values N(0, 1)
 * Both keep cases inside the size bounds of case.h (guided by shrinking the largest
 * dims, baseline by drawing again, or after 1000 draws that do not fit by halving the
 * largest dims), so exec/s stays high.
 */
#ifndef PARITY_MUTATE_H
#define PARITY_MUTATE_H

#include "case.h"
#include "rng.h"

typedef enum {
    PARITY_STRATEGY_GUIDED,
    PARITY_STRATEGY_BASELINE
} parity_strategy;

/* A dim size for the role (guided). */
uint64_t parity_draw_dim(parity_rng *pRng, parity_dim_role role);

/* A fresh spec for op zOp (which must have a layout). Returns 0, or -1 when no draw fit
 * the bounds (rare; the caller draws again). */
int parity_spec_generate(parity_rng *pRng, const char *zOp, parity_strategy strategy,
                         parity_case_spec *pSpec);

/* Changes pSpec by one guided mutation (a dim nudged or redrawn, the variant, the dtype, a
 * value recipe or the seed), keeping it inside the bounds. Returns 0, or -1 when the
 * mutated spec could not be made to fit (pSpec is then unchanged). */
int parity_spec_mutate(parity_rng *pRng, parity_case_spec *pSpec);

/* 1 when the generator draws dtype dt (float32, bfloat16, float16, float64). */
int parity_spec_dtype_drawable(parity_dtype dt);
/* When pSpec's dtype is not in allowed (bits 1 << dtype), redraws it among the drawable
 * dtypes in allowed, with the generator's weights. allowed must hold a drawable dtype. */
void parity_spec_restrict_dtypes(parity_rng *pRng, parity_case_spec *pSpec, uint32_t allowed);

/* Shrinks the largest dims of pSpec until its case fits the bounds; 0 or -1. */
int parity_spec_fit(parity_case_spec *pSpec);

#endif
