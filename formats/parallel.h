/*
 * parallel.h - running one function over n shares of a job on n threads, the calling thread
 * taking share 0: the one spawn-and-join the judge's fast path (tolerance/judge.c) and the
 * chunk reader (formats/chunk_read.c) share. A thread that cannot be started leaves its
 * share to the calling thread, so every share always runs.
 */
#ifndef PARITY_FORMATS_PARALLEL_H
#define PARITY_FORMATS_PARALLEL_H

#include <stddef.h>

#define PARITY_MAX_THREADS 64

/* Runs xWork(aShare + k * nShareSize) for k in [0, n), n <= PARITY_MAX_THREADS, and returns
 * when all have returned. */
void parity_run_shares(void *(*xWork)(void *), void *aShare, size_t nShareSize, int n);

#endif
