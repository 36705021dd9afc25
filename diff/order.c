/*
 * order.c - execution order from "order" attributes and the "inputs" graph.
 *
 * Kahn's algorithm over the tensors without "order", with a binary min-heap keyed by
 * index (indices are in name order, so ties break by name and the result is the same on
 * every run). Edges from tensors that have an "order" are already satisfied. Whatever Kahn
 * cannot place lies on a cycle or downstream of one; it goes last, by name, with a warning.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diff/order_internal.h"
#include "formats/alloc.h"

/* Appends a warning to the tensor's; -1 when out of memory (the run then fails with that:
 * a result never lacks a warning silently). */
static int append_warning(char **pzWarn, const char *zText)
{
    size_t nOld = *pzWarn ? strlen(*pzWarn) : 0, nNew = strlen(zText);
    char *z = parity_realloc(*pzWarn, nOld + nNew + 3);
    if (!z) return -1;
    if (nOld) { memcpy(z + nOld, "; ", 2); nOld += 2; }
    memcpy(z + nOld, zText, nNew + 1);
    *pzWarn = z;
    return 0;
}

typedef struct { size_t *a; size_t n; } min_heap;

static void heap_push(min_heap *h, size_t v)
{
    size_t i = h->n++;
    h->a[i] = v;
    while (i > 0 && h->a[(i - 1) / 2] > h->a[i]) {
        size_t parent = (i - 1) / 2, t = h->a[parent];
        h->a[parent] = h->a[i];
        h->a[i] = t;
        i = parent;
    }
}

static size_t heap_pop(min_heap *h)
{
    size_t top = h->a[0], i = 0;
    h->a[0] = h->a[--h->n];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i, t;
        if (l < h->n && h->a[l] < h->a[m]) m = l;
        if (r < h->n && h->a[r] < h->a[m]) m = r;
        if (m == i) break;
        t = h->a[m]; h->a[m] = h->a[i]; h->a[i] = t;
        i = m;
    }
    return top;
}

/* A tensor with "order", sorted by it, ties by index (name order); qsort has no context
 * argument, so the key travels with the index instead of through a global. */
typedef struct { int64_t iOrder; size_t i; } order_key;

static int by_order_then_name(const void *a, const void *b)
{
    const order_key *pA = a, *pB = b;
    if (pA->iOrder != pB->iOrder) return pA->iOrder < pB->iOrder ? -1 : 1;
    return (pA->i > pB->i) - (pA->i < pB->i);
}

int parity_order_compute(const parity_capture *pCap, int warnDangling, size_t *aOrder,
                         char **azWarn)
{
    size_t n = parity_capture_count(pCap), nPlaced = 0, i, k;
    size_t *aIndegree = parity_calloc(n ? n : 1, sizeof(size_t));
    size_t *aEdgeStart = parity_calloc(n + 1, sizeof(size_t));
    size_t *aEdge = NULL, nEdge = 0;
    char *aPlaced = parity_calloc(n ? n : 1, 1);
    min_heap heap = { parity_calloc(n ? n : 1, sizeof(size_t)), 0 };
    int rc = -1;

    if (!aIndegree || !aEdgeStart || !aPlaced || !heap.a) goto cleanup;

    /* 1. Tensors with "order". */
    {
        order_key *aKey = parity_malloc((n ? n : 1) * sizeof *aKey);
        if (!aKey) goto cleanup;
        for (i = 0; i < n; i++) {
            const parity_tensor_info *pT = parity_capture_tensor(pCap, i);
            if (!pT->hasOrder) continue;
            aKey[nPlaced].iOrder = pT->iOrder;
            aKey[nPlaced++].i = i;
        }
        qsort(aKey, nPlaced, sizeof *aKey, by_order_then_name);
        for (k = 0; k < nPlaced; k++) {
            aOrder[k] = aKey[k].i;
            aPlaced[aKey[k].i] = 1;
        }
        free(aKey);
    }

    /* 2. Edges producer -> consumer among the unplaced, in CSR form. */
    for (i = 0; i < n; i++) {
        const parity_tensor_info *pT = parity_capture_tensor(pCap, i);
        for (k = 0; k < pT->nInput; k++) {
            long iSrc = parity_capture_find(pCap, pT->azInput[k]);
            if (iSrc < 0) {
                if (warnDangling) {
                    char zMsg[600];
                    snprintf(zMsg, sizeof zMsg, "inputs names '%.500s', which is not in the capture",
                             pT->azInput[k]);
                    if (append_warning(&azWarn[i], zMsg) != 0) goto cleanup;
                }
                continue;
            }
            if ((size_t)iSrc == i) {
                if (append_warning(&azWarn[i], "inputs names the tensor itself (a cycle)") != 0)
                    goto cleanup;
                continue;
            }
            if (aPlaced[iSrc] || aPlaced[i]) continue;
            aEdgeStart[iSrc + 1]++;
            aIndegree[i]++;
            nEdge++;
        }
    }
    for (i = 0; i < n; i++) aEdgeStart[i + 1] += aEdgeStart[i];
    aEdge = parity_malloc((nEdge ? nEdge : 1) * sizeof(size_t));
    if (!aEdge) goto cleanup;
    {
        size_t *aFill = parity_calloc(n ? n : 1, sizeof(size_t));
        if (!aFill) goto cleanup;
        for (i = 0; i < n; i++) {
            const parity_tensor_info *pT = parity_capture_tensor(pCap, i);
            for (k = 0; k < pT->nInput; k++) {
                long iSrc = parity_capture_find(pCap, pT->azInput[k]);
                if (iSrc < 0 || (size_t)iSrc == i || aPlaced[iSrc] || aPlaced[i]) continue;
                aEdge[aEdgeStart[iSrc] + aFill[iSrc]++] = i;
            }
        }
        free(aFill);
    }

    /* 3. Kahn. */
    for (i = 0; i < n; i++)
        if (!aPlaced[i] && aIndegree[i] == 0) heap_push(&heap, i);
    while (heap.n > 0) {
        size_t iNode = heap_pop(&heap), e;
        aOrder[nPlaced++] = iNode;
        aPlaced[iNode] = 1;
        for (e = aEdgeStart[iNode]; e < aEdgeStart[iNode + 1]; e++)
            if (--aIndegree[aEdge[e]] == 0) heap_push(&heap, aEdge[e]);
    }

    /* 4. What is left is on or behind a cycle. */
    for (i = 0; i < n; i++) {
        if (aPlaced[i]) continue;
        if (append_warning(&azWarn[i],
                           "its 'inputs' form a cycle or depend on one; ordered by name") != 0)
            goto cleanup;
        aOrder[nPlaced++] = i;
    }
    rc = 0;
cleanup:
    free(aIndegree);
    free(aEdgeStart);
    free(aEdge);
    free(aPlaced);
    free(heap.a);
    return rc;
}
