/*
 * target_times.h - where a target's time went, a plain struct of its own so that the
 * campaign's result (fuzz/search/result.h), which the report writers read, can hold it
 * without the targets room.
 */
#ifndef PARITY_FUZZ_TARGET_TIMES_H
#define PARITY_FUZZ_TARGET_TIMES_H

#include <stdint.h>

/* Where a target's time went, by side (parity_side), for the campaign summary: the wall
 * seconds of its runs (the oracle measures every run) and, of those, the seconds spent
 * compiling, which only the target knows (a worker's "OK compile_s=S", oneDNN's primitive
 * creation; the builtin kernels compile nothing). */
typedef struct {
    double runSeconds[2];
    double compileSeconds[2];
    uint64_t nRuns[2];
    uint64_t nCompiles[2];       /* runs that compiled something */
} parity_target_times;

#endif
