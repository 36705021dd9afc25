/*
 * source.c - slab sources: mapped file windows when the bytes are raw, HDF5 reads else.
 * See source_internal.h for why.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "diff/source_internal.h"
#include "formats/alloc.h"

int parity_source_open(parity_slab_source *pSrc, parity_tensor_reader *pRd, size_t nElemSize,
                       uint64_t nMaxElem, char *zErr, size_t nErr)
{
    const char *zFile = NULL;
    int i;

    memset(pSrc, 0, sizeof *pSrc);
    pSrc->pRd = pRd;
    pSrc->nElemSize = nElemSize;
    pSrc->fd = -1;
    if (parity_tensor_reader_raw_offset(pRd, &pSrc->rawOffset, &zFile)) {
        pSrc->fd = open(zFile, O_RDONLY | O_CLOEXEC);
        if (pSrc->fd >= 0) return 0;
        /* Fall back to libhdf5, which has the file open already. */
    }
    for (i = 0; i < 2; i++) {
        pSrc->aBuf[i] = parity_malloc((nMaxElem ? nMaxElem : 1) * nElemSize);
        if (!pSrc->aBuf[i]) {
            snprintf(zErr, nErr, "out of memory for slab buffers");
            parity_source_close(pSrc);
            return -1;
        }
    }
    return 0;
}

const unsigned char *parity_source_fetch(parity_slab_source *pSrc, const parity_slab *pSlab,
                                         int iSlot, char *zErr, size_t nErr)
{
    if (pSrc->fd >= 0) {
        static long nPage;
        uint64_t start, aligned, delta;
        size_t nLen;
        void *p;

        if (!nPage) nPage = sysconf(_SC_PAGESIZE);
        if (pSrc->apMap[iSlot]) munmap(pSrc->apMap[iSlot], pSrc->anMap[iSlot]);
        pSrc->apMap[iSlot] = NULL;
        if (pSlab->n == 0) return (const unsigned char *)"";
        start = pSrc->rawOffset + pSlab->first * pSrc->nElemSize;
        aligned = start - start % (uint64_t)nPage;
        delta = start - aligned;
        nLen = (size_t)(pSlab->n * pSrc->nElemSize + delta);
        p = mmap(NULL, nLen, PROT_READ, MAP_PRIVATE, pSrc->fd, (off_t)aligned);
        if (p == MAP_FAILED) {
            snprintf(zErr, nErr, "cannot map the file: %s", strerror(errno));
            return NULL;
        }
        /* a window per slab is progress: beat, as the libhdf5 reads do, or the stall
         * watchdog takes a long healthy tensor of mapped slabs for a hung reader */
        parity_capture_beat();
        madvise(p, nLen, MADV_SEQUENTIAL);
        madvise(p, nLen, MADV_WILLNEED);
        pSrc->apMap[iSlot] = p;
        pSrc->anMap[iSlot] = nLen;
        return (const unsigned char *)p + delta;
    }
    if (parity_tensor_read(pSrc->pRd, pSlab, pSrc->aBuf[iSlot], zErr, nErr) != 0) return NULL;
    return pSrc->aBuf[iSlot];
}

void parity_source_close(parity_slab_source *pSrc)
{
    int i;
    for (i = 0; i < 2; i++) {
        if (pSrc->apMap[i]) munmap(pSrc->apMap[i], pSrc->anMap[i]);
        free(pSrc->aBuf[i]);
    }
    if (pSrc->fd >= 0) close(pSrc->fd);
    memset(pSrc, 0, sizeof *pSrc);
    pSrc->fd = -1;
}
