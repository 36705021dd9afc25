/*
 * operand_cache.c - the semantic judgements' operand cache (operand_internal.h says why).
 *
 * A small table: few tensors are ever held at once (a judgement's operands, at most
 * SEMANTIC_MAX_INPUTS + 1 a side, and the idle ones under the cap), so a linear search
 * costs nothing beside reading a tensor. An operand the table has no room for is loaded
 * and freed as without a cache.
 */
#include <string.h>
#include "diff/operand_internal.h"
#include "formats/alloc.h"

#define CACHE_SLOTS 32

typedef struct {
    parity_capture *pCap;      /* NULL: the slot is free */
    size_t iTensor;
    parity_operand op;
    int nRef;
    uint64_t lastUse;
} cache_entry;

struct parity_operand_cache {
    cache_entry aEntry[CACHE_SLOTS];
    uint64_t clock;
    uint64_t nIdleElem;        /* values held by entries nobody references */
};

parity_operand_cache *parity_operand_cache_new(void)
{
    return parity_calloc(1, sizeof(parity_operand_cache));
}

static void drop(parity_operand_cache *pCache, cache_entry *pEntry)
{
    pCache->nIdleElem -= pEntry->op.nElem;
    parity_operand_free(&pEntry->op);
    memset(pEntry, 0, sizeof *pEntry);
}

/* Drops idle entries, least recently used first, until at most nKeep idle values remain. */
static void trim(parity_operand_cache *pCache, uint64_t nKeep)
{
    while (pCache->nIdleElem > nKeep) {
        cache_entry *pOldest = NULL;
        int k;
        for (k = 0; k < CACHE_SLOTS; k++) {
            cache_entry *p = &pCache->aEntry[k];
            if (p->pCap && p->nRef == 0 && (!pOldest || p->lastUse < pOldest->lastUse)) pOldest = p;
        }
        if (!pOldest) break;
        drop(pCache, pOldest);
    }
}

void parity_operand_cache_free(parity_operand_cache *pCache)
{
    int k;
    if (!pCache) return;
    for (k = 0; k < CACHE_SLOTS; k++)
        if (pCache->aEntry[k].pCap) parity_operand_free(&pCache->aEntry[k].op);
    parity_free(pCache);
}

int parity_operand_cache_load(parity_operand_cache *pCache, parity_capture *pCap,
                              size_t iTensor, parity_operand *pOp, char *zErr, size_t nErr)
{
    cache_entry *pFree = NULL;
    int k, wasFailed = parity_alloc_failed();
    if (!pCache) return parity_operand_load(pCap, iTensor, pOp, zErr, nErr);
    for (k = 0; k < CACHE_SLOTS; k++) {
        cache_entry *p = &pCache->aEntry[k];
        if (p->pCap == pCap && p->iTensor == iTensor) {
            if (p->nRef++ == 0) pCache->nIdleElem -= p->op.nElem;
            p->lastUse = ++pCache->clock;
            *pOp = p->op;
            return 0;
        }
        if (!p->pCap && !pFree) pFree = p;
    }
    if (parity_operand_load(pCap, iTensor, pOp, zErr, nErr) != 0) {
        /* with idle entries held, once more without them, as without a cache: out of
         * memory shows as a failed allocation of ours, or as a read error when libhdf5's
         * own allocation fails under --max-memory */
        if (pCache->nIdleElem == 0) return -1;
        trim(pCache, 0);
        if (!wasFailed) parity_alloc_reset_failed();
        if (parity_operand_load(pCap, iTensor, pOp, zErr, nErr) != 0) return -1;
    }
    if (!pFree) {
        /* every slot taken: the least recently used idle one goes, if any */
        for (k = 0; k < CACHE_SLOTS; k++) {
            cache_entry *p = &pCache->aEntry[k];
            if (p->nRef == 0 && (!pFree || p->lastUse < pFree->lastUse)) pFree = p;
        }
        if (pFree) drop(pCache, pFree);
    }
    if (pFree) {
        pFree->pCap = pCap;
        pFree->iTensor = iTensor;
        pFree->op = *pOp;
        pFree->nRef = 1;
        pFree->lastUse = ++pCache->clock;
    }
    return 0;
}

void parity_operand_cache_release(parity_operand_cache *pCache, parity_operand *pOp)
{
    int k;
    if (!pOp->aValue) {
        memset(pOp, 0, sizeof *pOp);
        return;
    }
    for (k = 0; pCache && k < CACHE_SLOTS; k++) {
        cache_entry *p = &pCache->aEntry[k];
        if (p->pCap && p->op.aValue == pOp->aValue) {
            if (--p->nRef == 0) {
                pCache->nIdleElem += p->op.nElem;
                trim(pCache, OPERAND_CACHE_IDLE_ELEMS);
            }
            memset(pOp, 0, sizeof *pOp);
            return;
        }
    }
    parity_operand_free(pOp);   /* loaded without a slot */
}
