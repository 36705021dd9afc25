/*
 * test_operand_cache.c - the semantic judgements' operand cache (diff/operand_cache.c):
 * a tensor loaded again while held or idle is not read again and holds the same values;
 * idle entries go least recently used first when the table is full; an operand loaded
 * without a slot is freed on release; a load that runs out of memory with idle entries held
 * drops them and succeeds, leaving no out-of-memory mark behind, and fails as before
 * without any.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "diff/operand_internal.h"
#include "formats/alloc.h"
#include "support.h"

enum { N_TENSOR = 40, N_ELEM = 100 };

static parity_capture *g_pCap;

static void setup(void)
{
    parity_writer *pW;
    char zErr[256];
    int t;
    support_dir_create(TEST_BINARY_DIR, "operand-cache-");
    pW = wopen(tmp_path("c.h5"));
    for (t = 0; t < N_TENSOR; t++) {
        float a[N_ELEM];
        char zName[32];
        int i;
        for (i = 0; i < N_ELEM; i++) a[i] = (float)(t * 1000 + i);
        snprintf(zName, sizeof zName, "/t%02d", t);
        w_f32(pW, zName, a, N_ELEM);
    }
    wclose(pW);
    cr_assert_eq(parity_capture_open(tmp_path("c.h5"), &g_pCap, zErr, sizeof zErr), 0, "%s", zErr);
}

static void teardown(void)
{
    parity_capture_close(g_pCap);
    support_dir_remove();
}

TestSuite(operand_cache, .init = setup, .fini = teardown, .timeout = 60);

static size_t index_of(int t)
{
    char zName[32];
    long i;
    snprintf(zName, sizeof zName, "/t%02d", t);
    i = parity_capture_find(g_pCap, zName);
    cr_assert(i >= 0);
    return (size_t)i;
}

/* Loads tensor t through the cache; returns the allocations the load made. */
static long load(parity_operand_cache *pCache, int t, parity_operand *pOp)
{
    char zErr[256];
    parity_alloc_fail_at(0, 0);   /* restarts the count */
    cr_assert_eq(parity_operand_cache_load(pCache, g_pCap, index_of(t), pOp, zErr, sizeof zErr),
                 0, "%s", zErr);
    cr_assert_eq(pOp->nElem, N_ELEM);
    cr_assert_eq(pOp->aValue[7], t * 1000 + 7);
    return parity_alloc_count();
}

/* Whether loading tensor t (and giving it back at once) read it: 1, or 0 for a cache hit. */
static int reads(parity_operand_cache *pCache, int t)
{
    parity_operand op;
    long nAlloc = load(pCache, t, &op);
    parity_operand_cache_release(pCache, &op);
    return nAlloc > 0;
}

Test(operand_cache, held_and_idle_tensors_are_not_read_again)
{
    parity_operand_cache *pCache = parity_operand_cache_new();
    parity_operand a, b;
    cr_assert(pCache);
    cr_assert_gt(load(pCache, 3, &a), 0, "a first load reads");
    cr_assert_eq(load(pCache, 3, &b), 0, "a held tensor is shared");
    cr_assert_eq(a.aValue, b.aValue);
    parity_operand_cache_release(pCache, &a);
    cr_assert_null(a.aValue);
    parity_operand_cache_release(pCache, &b);
    cr_assert(!reads(pCache, 3), "an idle tensor is handed out again");
    parity_operand_cache_free(pCache);
}

Test(operand_cache, a_full_table_drops_the_least_recently_used)
{
    parity_operand_cache *pCache = parity_operand_cache_new();
    parity_operand aOp[N_TENSOR];
    int t;
    cr_assert(pCache);
    for (t = 0; t < N_TENSOR; t++) {   /* more than the table holds, all held at once */
        cr_assert_gt(load(pCache, t, &aOp[t]), 0);
    }
    for (t = 0; t < N_TENSOR; t++) parity_operand_cache_release(pCache, &aOp[t]);
    /* those loaded past the table's size had no slot: freed on release, read again */
    cr_assert(reads(pCache, N_TENSOR - 1));
    /* that load took the slot of the least recently used idle entry, tensor 0, and this
     * one takes tensor 1's */
    cr_assert(reads(pCache, 0));
    cr_assert(!reads(pCache, N_TENSOR - 1), "a recent idle entry stays");
    cr_assert(!reads(pCache, 2), "so does an older one the table had room for");
    cr_assert(reads(pCache, 1), "the least recently used went");
    parity_operand_cache_free(pCache);
}

Test(operand_cache, out_of_memory_drops_idle_entries_and_retries)
{
    parity_operand_cache *pCache = parity_operand_cache_new();
    parity_operand a, b;
    char zErr[256];
    cr_assert(pCache);
    load(pCache, 5, &a);
    parity_operand_cache_release(pCache, &a);   /* idle */
    parity_alloc_reset_failed();
    parity_alloc_fail_at(1, 0);                 /* the next allocation fails, once */
    cr_assert_eq(parity_operand_cache_load(pCache, g_pCap, index_of(6), &b, zErr, sizeof zErr), 0,
                 "%s", zErr);
    cr_assert_eq(parity_alloc_failures(), 1);
    cr_assert_eq(parity_alloc_failed(), 0, "the retry's success leaves no mark");
    cr_assert_eq(b.aValue[7], 6007);
    parity_operand_cache_release(pCache, &b);
    /* nothing idle to drop but b: hold it, and the failure is the load's */
    load(pCache, 6, &b);
    parity_alloc_fail_at(1, 1);
    cr_assert_eq(parity_operand_cache_load(pCache, g_pCap, index_of(7), &a, zErr, sizeof zErr), -1);
    cr_assert(parity_alloc_failed());
    parity_alloc_fail_at(0, 0);
    parity_alloc_reset_failed();
    parity_operand_cache_release(pCache, &b);
    parity_operand_cache_free(pCache);
}

Test(operand_cache, without_a_cache_loads_and_frees)
{
    parity_operand a;
    cr_assert_gt(load(NULL, 9, &a), 0);
    parity_operand_cache_release(NULL, &a);
    cr_assert_null(a.aValue);
}
