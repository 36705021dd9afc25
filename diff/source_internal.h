/*
 * source_internal.h - where one side's slabs come from (compare.c's).
 *
 * A slab source hands out the bytes of slab after slab in two alternating slots, so the
 * caller can fill one slot while threads still read the other. When the tensor lies in the
 * file in our storage form (parity_tensor_reader_raw_offset) the slot is a read-only
 * mapping of just that window of the file: no copy through libhdf5 or the kernel, and the
 * page faults happen in the threads that read it, in parallel. Otherwise the slot is a
 * buffer filled by parity_tensor_read. Either way at most two slabs per side are resident,
 * so memory does not grow with the tensor.
 */
#ifndef PARITY_SOURCE_INTERNAL_H
#define PARITY_SOURCE_INTERNAL_H

#include "formats/capture.h"

typedef struct {
    parity_tensor_reader *pRd;
    size_t nElemSize;
    int fd;                      /* >= 0: mapping the file */
    uint64_t rawOffset;
    unsigned char *aBuf[2];      /* read buffers (not mapping) */
    void *apMap[2];              /* mapped windows (mapping) */
    size_t anMap[2];
} parity_slab_source;

/* Prepares a source for slabs of at most nMaxElem elements. Returns 0 or -1 (zErr). */
int parity_source_open(parity_slab_source *pSrc, parity_tensor_reader *pRd, size_t nElemSize,
                       uint64_t nMaxElem, char *zErr, size_t nErr);
/* The bytes of pSlab, valid until slot iSlot is fetched again. NULL on failure (zErr). */
const unsigned char *parity_source_fetch(parity_slab_source *pSrc, const parity_slab *pSlab,
                                         int iSlot, char *zErr, size_t nErr);
void parity_source_close(parity_slab_source *pSrc);

#endif
