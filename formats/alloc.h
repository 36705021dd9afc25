/*
 * alloc.h - the one allocator of the library: formats/, tolerance/, diff/, fuzz/ and
 * reports/ allocate through these (and jansson does too, through its hooks: reports/), so
 * that a test can fail the Nth allocation and prove that out of memory is an ordinary error
 * path, the way SQLite's test_malloc.c does (tests/test_faults.c sweeps every N).
 *
 * The functions behave as their C library namesakes: NULL on failure, memory released with
 * free() (parity_free is free, for callers that want the pair). A failed allocation is an
 * error the caller reports ("out of memory") and unwinds from: nothing is printed, nothing
 * exits. libhdf5, GMP and MPFR allocate on their own and are not counted.
 */
#ifndef PARITY_FORMATS_ALLOC_H
#define PARITY_FORMATS_ALLOC_H

#include <stddef.h>

void *parity_malloc(size_t n);
void *parity_calloc(size_t nMember, size_t nSize);
void *parity_realloc(void *p, size_t n);
char *parity_strdup(const char *z);
void parity_free(void *p);

/* Sticky per thread, like SQLite's mallocFailed: 1 when an allocation this thread asked
 * for has failed (for real or injected) since parity_alloc_reset_failed. Code that takes
 * some failures as normal (a fuzz case the registry refuses, a draw that does not fit)
 * checks it to tell such a refusal from out of memory, which must stop it instead. */
int parity_alloc_failed(void);
void parity_alloc_reset_failed(void);

/* Fault injection, for tests: the nth allocation from now fails (n >= 1), and with
 * persist every one after it too; n = 0 fails none. Either way the counts restart. The
 * countdown is process-wide and atomic (the comparison threads allocate too). */
void parity_alloc_fail_at(long n, int persist);
/* Allocations asked for since the last parity_alloc_fail_at, and how many of them failed. */
long parity_alloc_count(void);
long parity_alloc_failures(void);

#endif
