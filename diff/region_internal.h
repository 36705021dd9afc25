/*
 * region_internal.h - fused regions: a compiled tensor whose op inputs the compiled side
 * fused away is the output of a region of eager's graph that reaches back to the nearest
 * tensors both captures hold (and to graph inputs and parameters, the same data by
 * contract). region.c finds that region and propagates the reference and error radius
 * through it (tolerance/graph.h); semantic.c judges the tensor by it.
 */
#ifndef PARITY_REGION_INTERNAL_H
#define PARITY_REGION_INTERNAL_H

#include "diff/operand_internal.h"
#include "tolerance/graph.h"

#define REGION_MAX_NODES 64
#define REGION_MAX_INPUTS 32

typedef struct {
    parity_graph_node aNode[REGION_MAX_NODES];   /* in execution order; the last is the
                                                  * judged tensor */
    size_t aNodeTensor[REGION_MAX_NODES];        /* each node's eager tensor */
    size_t nNode;
    size_t aInputTensor[REGION_MAX_INPUTS];      /* the region's inputs (eager tensors) */
    size_t nInput;
    uint64_t nElem;                              /* elements of all nodes together */
} parity_region;

/* Finds the region ending at eager tensor iE: each input the compiled capture lacks (or
 * holds with another shape) and that eager computed with an op joins as a node, with its
 * own inputs in turn; every other input is a region input. Returns 0, or -1 with zWhy, a
 * reason not to judge by the region (an op without a model, too many ops), not an error. */
int parity_region_build(parity_capture *pEagerCap, parity_capture *pCompCap, size_t iE,
                        parity_region *pReg, char *zWhy, size_t nWhy);

/* Propagates the region from its inputs as pCap holds them (the compiled capture: where it
 * lacks one, a graph input or parameter, eager's is the same data) or as eager holds them
 * (pCap NULL), into aOut[0 .. nNode-1]. *pSame (may be NULL) is set when every input read
 * from pCap holds eager's bits. xBeat (may be NULL) beats as the judge's (graph.h). Returns
 * 0; 1 when the region cannot carry its operands' error (zErr says why, nothing to free);
 * -1 on a read error or when xBeat stopped it (zErr). */
int parity_region_propagate(const parity_region *pReg, parity_operand_cache *pCache,
                            parity_capture *pEagerCap, parity_capture *pCap,
                            parity_graph_value *aOut, int *pSame, int (*xBeat)(void *),
                            void *pBeatCtx, char *zErr, size_t nErr);

#endif
