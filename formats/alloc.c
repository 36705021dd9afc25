/*
 * alloc.c - the library's allocator with its fault-injection countdown (alloc.h).
 *
 * One atomic counter per allocation is all it costs when no fault is armed. Buffers are
 * allocated per tensor or per slab; the one per-element caller is the exact MPFR sum of
 * tolerance/mpref.c (three blocks for an element's terms), whose O(n) MPFR work dwarfs it.
 */
#include <stdlib.h>
#include <string.h>
#include "formats/alloc.h"

static long g_nCount;          /* allocations since the last arming */
static long g_nFailures;       /* of them, failed on purpose */
static long g_nFailAt;         /* the allocation that fails (1-based); 0: none */
static int g_persist;          /* every allocation after it fails too */
static _Thread_local int g_bFailed;   /* parity_alloc_failed */

/* 1 when this allocation is to fail. */
static int should_fail(void)
{
    long n = __atomic_add_fetch(&g_nCount, 1, __ATOMIC_RELAXED);
    long at = __atomic_load_n(&g_nFailAt, __ATOMIC_RELAXED);
    if (at <= 0 || n < at || (n > at && !__atomic_load_n(&g_persist, __ATOMIC_RELAXED)))
        return 0;
    __atomic_add_fetch(&g_nFailures, 1, __ATOMIC_RELAXED);
    return 1;
}

/* p, noting a failure (the sticky flag) when it is NULL. */
static void *noted(void *p)
{
    if (!p) g_bFailed = 1;
    return p;
}

void *parity_malloc(size_t n)
{
    return noted(should_fail() ? NULL : malloc(n));
}

void *parity_calloc(size_t nMember, size_t nSize)
{
    return noted(should_fail() ? NULL : calloc(nMember, nSize));
}

void *parity_realloc(void *p, size_t n)
{
    return noted(should_fail() ? NULL : realloc(p, n));
}

int parity_alloc_failed(void)
{
    return g_bFailed;
}

void parity_alloc_reset_failed(void)
{
    g_bFailed = 0;
}

char *parity_strdup(const char *z)
{
    size_t n;
    char *zCopy;
    if (!z) return NULL;
    n = strlen(z) + 1;
    zCopy = parity_malloc(n);
    if (zCopy) memcpy(zCopy, z, n);
    return zCopy;
}

void parity_free(void *p)
{
    free(p);
}

void parity_alloc_fail_at(long n, int persist)
{
    __atomic_store_n(&g_nFailAt, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_nCount, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_nFailures, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_persist, persist, __ATOMIC_RELAXED);
    __atomic_store_n(&g_nFailAt, n > 0 ? n : 0, __ATOMIC_RELAXED);
}

long parity_alloc_count(void)
{
    return __atomic_load_n(&g_nCount, __ATOMIC_RELAXED);
}

long parity_alloc_failures(void)
{
    return __atomic_load_n(&g_nFailures, __ATOMIC_RELAXED);
}
