/*
 * order.c - execution order from "order" attributes and the "inputs" graph, as one
 * topological order.
 *
 * Every tensor, with or without "order", joins one graph: an edge from each tensor an
 * "inputs" attribute names to the tensor that names it, and a chain through the tensors
 * with "order", in ascending order (ties by name). Kahn's algorithm places a tensor once
 * everything before it is placed, so a consumer never precedes its producer: intermediates
 * written without "order" (the natural capture that tags module outputs only) come before
 * the ordered tensors that consume them, which is what lets an echo be told from its cause.
 * Among the tensors ready at once, the one with the smallest key goes first: a tensor's
 * own "order", or for a tensor without one the smallest "order" downstream of it (it runs
 * just before the earliest ordered tensor that needs it), ties and keyless tensors by
 * index (name order), so the result is the same on every run.
 *
 * When the orders contradict the inputs (a consumer ordered before its producer), the
 * chain is dropped: the inputs decide, the keys still steer, and each contradicting tensor
 * gets a warning. Whatever Kahn still cannot place lies on a cycle of "inputs" or behind
 * one; it goes last, by name, with a warning.
 */
#include <stdint.h>
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

/* A min-heap of tensor indices by (aKey[i], i); aKey NULL: by index alone. */
typedef struct { size_t *a; size_t n; const int64_t *aKey; } min_heap;

static int heap_less(const min_heap *h, size_t x, size_t y)
{
    if (h->aKey && h->aKey[x] != h->aKey[y]) return h->aKey[x] < h->aKey[y];
    return x < y;
}

static void heap_push(min_heap *h, size_t v)
{
    size_t i = h->n++;
    h->a[i] = v;
    while (i > 0 && heap_less(h, h->a[i], h->a[(i - 1) / 2])) {
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
        if (l < h->n && heap_less(h, h->a[l], h->a[m])) m = l;
        if (r < h->n && heap_less(h, h->a[r], h->a[m])) m = r;
        if (m == i) break;
        t = h->a[m]; h->a[m] = h->a[i]; h->a[i] = t;
        i = m;
    }
    return top;
}

/* The graph in CSR form: the consumers of tensor i are aEdge[aStart[i] .. aStart[i+1]). */
typedef struct {
    size_t n;
    size_t *aStart, *aEdge, nEdge;
    size_t *aChain;          /* the tensors with "order", sorted: nChain of them */
    size_t nChain;
} order_graph;

/* Index of the producer pT->azInput[k] names, or -1 (missing, or pT itself). */
static long producer(const parity_capture *pCap, size_t i, size_t k)
{
    const parity_tensor_info *pT = parity_capture_tensor(pCap, i);
    long iSrc = parity_capture_find(pCap, pT->azInput[k]);
    return iSrc >= 0 && (size_t)iSrc != i ? iSrc : -1;
}

/* The input edges, and the order chain when withChain. 0, or -1 out of memory. */
static int graph_build(const parity_capture *pCap, order_graph *pG, int withChain)
{
    size_t i, k, *aFill;
    memset(pG->aStart, 0, (pG->n + 1) * sizeof(size_t));
    for (i = 0; i < pG->n; i++) {
        const parity_tensor_info *pT = parity_capture_tensor(pCap, i);
        for (k = 0; k < pT->nInput; k++) {
            long iSrc = producer(pCap, i, k);
            if (iSrc >= 0) pG->aStart[iSrc + 1]++;
        }
    }
    if (withChain)
        for (k = 1; k < pG->nChain; k++) pG->aStart[pG->aChain[k - 1] + 1]++;
    for (i = 0; i < pG->n; i++) pG->aStart[i + 1] += pG->aStart[i];
    pG->nEdge = pG->aStart[pG->n];
    free(pG->aEdge);
    pG->aEdge = parity_malloc((pG->nEdge ? pG->nEdge : 1) * sizeof(size_t));
    aFill = parity_calloc(pG->n ? pG->n : 1, sizeof(size_t));
    if (!pG->aEdge || !aFill) { free(aFill); return -1; }
    for (i = 0; i < pG->n; i++) {
        const parity_tensor_info *pT = parity_capture_tensor(pCap, i);
        for (k = 0; k < pT->nInput; k++) {
            long iSrc = producer(pCap, i, k);
            if (iSrc >= 0) pG->aEdge[pG->aStart[iSrc] + aFill[iSrc]++] = i;
        }
    }
    if (withChain)
        for (k = 1; k < pG->nChain; k++) {
            size_t iSrc = pG->aChain[k - 1];
            pG->aEdge[pG->aStart[iSrc] + aFill[iSrc]++] = pG->aChain[k];
        }
    free(aFill);
    return 0;
}

/* Kahn over pG by (aKey, index) (aKey NULL: index). Fills aOrder, marks aPlaced and
 * returns how many it placed; aIndegree and aHeap are scratch of n entries. */
static size_t kahn(const order_graph *pG, const int64_t *aKey, size_t *aOrder, char *aPlaced,
                   size_t *aIndegree, size_t *aHeap)
{
    min_heap heap = { aHeap, 0, aKey };
    size_t i, e, nPlaced = 0;
    memset(aIndegree, 0, pG->n * sizeof(size_t));
    memset(aPlaced, 0, pG->n);
    for (e = 0; e < pG->nEdge; e++) aIndegree[pG->aEdge[e]]++;
    for (i = 0; i < pG->n; i++)
        if (aIndegree[i] == 0) heap_push(&heap, i);
    while (heap.n > 0) {
        size_t iNode = heap_pop(&heap);
        aOrder[nPlaced++] = iNode;
        aPlaced[iNode] = 1;
        for (e = pG->aStart[iNode]; e < pG->aStart[iNode + 1]; e++)
            if (--aIndegree[pG->aEdge[e]] == 0) heap_push(&heap, pG->aEdge[e]);
    }
    return nPlaced;
}

/* Keys (file comment): a tensor's "order", else the smallest key of its consumers, else
 * INT64_MAX; over the nPlaced tensors of a topological order, walked backwards. */
static void compute_keys(const parity_capture *pCap, const order_graph *pG,
                         const size_t *aOrder, size_t nPlaced, int64_t *aKey)
{
    size_t i, k, e;
    for (i = 0; i < pG->n; i++) {
        const parity_tensor_info *pT = parity_capture_tensor(pCap, i);
        aKey[i] = pT->hasOrder ? pT->iOrder : INT64_MAX;
    }
    for (k = nPlaced; k-- > 0;) {
        size_t iNode = aOrder[k];
        if (parity_capture_tensor(pCap, iNode)->hasOrder) continue;
        for (e = pG->aStart[iNode]; e < pG->aStart[iNode + 1]; e++)
            if (aKey[pG->aEdge[e]] < aKey[iNode]) aKey[iNode] = aKey[pG->aEdge[e]];
    }
}

/* Warnings for inputs that name nothing or the tensor itself: one line per tensor for
 * its dangling names, naming the first few and counting the rest (65,536 dangling names
 * once made a warning of 65,536 clauses, built in quadratic time). 0, or -1 out of memory. */
#define DANGLING_NAMED 3
static int warn_inputs(const parity_capture *pCap, int warnDangling, char **azWarn)
{
    size_t n = parity_capture_count(pCap), i, k;
    for (i = 0; i < n; i++) {
        const parity_tensor_info *pT = parity_capture_tensor(pCap, i);
        size_t nDangling = 0, len = 0;
        char zMsg[900];
        int cycle = 0;
        for (k = 0; k < pT->nInput; k++) {
            long iSrc = parity_capture_find(pCap, pT->azInput[k]);
            if (iSrc >= 0) {
                cycle |= (size_t)iSrc == i;
                continue;
            }
            if (!warnDangling) continue;
            if (nDangling < DANGLING_NAMED && len < sizeof zMsg)
                len += (size_t)snprintf(zMsg + len, sizeof zMsg - len, "%s'%.200s'",
                                        nDangling ? ", " : "", pT->azInput[k]);
            nDangling++;
        }
        if (nDangling > 0) {
            char zLine[1100];
            if (nDangling == 1)
                snprintf(zLine, sizeof zLine, "inputs names %s, which is not in the capture",
                         zMsg);
            else if (nDangling <= DANGLING_NAMED)
                snprintf(zLine, sizeof zLine, "inputs names %s, which are not in the capture",
                         zMsg);
            else
                snprintf(zLine, sizeof zLine, "inputs names %zu tensors not in the capture: "
                         "%s and %zu more", nDangling, zMsg, nDangling - DANGLING_NAMED);
            if (append_warning(&azWarn[i], zLine) != 0) return -1;
        }
        if (cycle && append_warning(&azWarn[i], "inputs names the tensor itself (a cycle)") != 0)
            return -1;
    }
    return 0;
}

/* A tensor ordered before (or level with) one it consumes: the orders contradict the
 * inputs. 0, or -1 out of memory. */
static int warn_contradictions(const parity_capture *pCap, char **azWarn)
{
    size_t n = parity_capture_count(pCap), i, k;
    for (i = 0; i < n; i++) {
        const parity_tensor_info *pT = parity_capture_tensor(pCap, i);
        if (!pT->hasOrder) continue;
        for (k = 0; k < pT->nInput; k++) {
            long iSrc = producer(pCap, i, k);
            const parity_tensor_info *pS = iSrc >= 0 ? parity_capture_tensor(pCap, (size_t)iSrc) : NULL;
            char zMsg[700];
            if (!pS || !pS->hasOrder || pS->iOrder < pT->iOrder) continue;
            snprintf(zMsg, sizeof zMsg, "its order %lld is not after that of its input %.500s "
                     "(%lld): the orders contradict the inputs, which decide",
                     (long long)pT->iOrder, pS->zPath, (long long)pS->iOrder);
            if (append_warning(&azWarn[i], zMsg) != 0) return -1;
        }
    }
    return 0;
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

/* The tensors with "order", sorted, into pG->aChain. 0, or -1 out of memory. */
static int build_chain(const parity_capture *pCap, order_graph *pG)
{
    order_key *aKey = parity_malloc((pG->n ? pG->n : 1) * sizeof *aKey);
    size_t i, k;
    if (!aKey) return -1;
    pG->nChain = 0;
    for (i = 0; i < pG->n; i++) {
        const parity_tensor_info *pT = parity_capture_tensor(pCap, i);
        if (!pT->hasOrder) continue;
        aKey[pG->nChain].iOrder = pT->iOrder;
        aKey[pG->nChain++].i = i;
    }
    qsort(aKey, pG->nChain, sizeof *aKey, by_order_then_name);
    for (k = 0; k < pG->nChain; k++) pG->aChain[k] = aKey[k].i;
    free(aKey);
    return 0;
}

int parity_order_compute(const parity_capture *pCap, int warnDangling, size_t *aOrder,
                         char **azWarn)
{
    size_t n = parity_capture_count(pCap), nPlaced, i, n1 = n ? n : 1;
    order_graph g;
    size_t *aIndegree = parity_calloc(n1, sizeof(size_t)), *aHeap = parity_calloc(n1, sizeof(size_t));
    int64_t *aKey = parity_calloc(n1, sizeof(int64_t));
    char *aPlaced = parity_calloc(n1, 1);
    int rc = -1;

    memset(&g, 0, sizeof g);
    g.n = n;
    g.aStart = parity_calloc(n + 1, sizeof(size_t));
    g.aChain = parity_calloc(n1, sizeof(size_t));
    if (!aIndegree || !aHeap || !aKey || !aPlaced || !g.aStart || !g.aChain) goto cleanup;
    if (warn_inputs(pCap, warnDangling, azWarn) != 0 || build_chain(pCap, &g) != 0) goto cleanup;

    /* 1. A topological order by index, for the keys; with the chain unless the orders
     *    contradict the inputs (then some tensor is left unplaced: a cycle through it). */
    if (graph_build(pCap, &g, 1) != 0) goto cleanup;
    nPlaced = kahn(&g, NULL, aOrder, aPlaced, aIndegree, aHeap);
    if (nPlaced < n) {
        if (graph_build(pCap, &g, 0) != 0) goto cleanup;
        if (kahn(&g, NULL, aOrder, aPlaced, aIndegree, aHeap) == n &&
            warn_contradictions(pCap, azWarn) != 0)
            goto cleanup;
        nPlaced = kahn(&g, NULL, aOrder, aPlaced, aIndegree, aHeap);
    }
    compute_keys(pCap, &g, aOrder, nPlaced, aKey);

    /* 2. The order itself, steered by the keys. */
    nPlaced = kahn(&g, aKey, aOrder, aPlaced, aIndegree, aHeap);

    /* 3. What is left is on or behind a cycle of inputs. */
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
    free(aHeap);
    free(aKey);
    free(aPlaced);
    free(g.aStart);
    free(g.aEdge);
    free(g.aChain);
    return rc;
}
