/*
 * chunk_read.c - chunked datasets read chunk by chunk: the stored bytes of each chunk
 * (H5Dread_chunk, its size from H5Dget_chunk_storage_size: both B-tree lookups), checked,
 * inflated and unshuffled on several threads (libdeflate), and the slab's rows copied out
 * of them on the same threads (chunk_read_internal.h says why and when).
 *
 * What a stored chunk must be, checked before a byte is decoded (the file is untrusted):
 *   - its stored size at most the chunk's size plus deflate's worst-case growth (HDF5 stores
 *     a chunk unfiltered, with its filter-mask bit set, when deflate would grow it);
 *   - deflate's output exactly the chunk's size: libdeflate refuses to write past the
 *     buffer (a chunk that would inflate past its declared size is an error, never a larger
 *     allocation) and reports a short one; its zlib stream's Adler-32 must match;
 *   - a chunk its filter mask left unfiltered exactly the chunk's size (a dataset without a
 *     pipeline records no sizes: its chunks are read at their nominal size, as libhdf5
 *     reads them).
 * Chunks never written (unallocated) read as the dataset's fill value, as libhdf5 reads
 * them. Edge chunks are stored whole; only their part inside the extent is copied.
 *
 * Memory: the chunks one read needs are decoded in batches of at most CHUNK_BATCH_BYTES,
 * and at most CHUNK_CACHE_BYTES of decoded chunks stay for the next read (a chunk that
 * spans two slabs is inflated once), so what a reader holds does not grow with the
 * tensor, whatever its chunk shape.
 */
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "formats/alloc.h"
#include "formats/capture.h"
#include "formats/chunk_read_internal.h"
#include "formats/parallel.h"

#define CHUNK_BATCH_BYTES (32u << 20)
#define CHUNK_CACHE_BYTES (32u << 20)
/* What each chunk costs beyond its bytes: its job in a batch (chunk_job), its cache entry,
 * two slots of the buffer pool and malloc's header. Counted in both budgets, so that tiny
 * chunks (one element each) cannot multiply the bookkeeping: a 4 MB tensor in 4-byte
 * chunks sized its batch at 8M jobs and took 6.4 GB (issue 14, item 5). */
#define CHUNK_OVERHEAD_BYTES 512   /* checked against the structs below */
/* The cache is searched linearly (chunk_entry); it exists for the band of chunks that
 * spans two slabs, which the slab plan keeps small, so a few hundred entries serve it. */
#define CHUNK_CACHE_MAX_ENTRIES 512
#define CHUNK_MAX_THREADS 16
#define MAX_FILTERS 2

typedef struct {
    uint64_t key;              /* the chunk's linear index in the chunk grid */
    unsigned char *p;          /* decoded, nChunkBytes */
    uint64_t lastUse;
} chunk_entry;

struct parity_chunk_reader {
    hid_t hDset;               /* not owned */
    int rank;
    uint64_t aDim[PARITY_MAX_RANK], aChunk[PARITY_MAX_RANK], aGrid[PARITY_MAX_RANK];
    size_t nElemSize, nChunkBytes;
    int nFilter;
    H5Z_filter_t aFilter[MAX_FILTERS];   /* pipeline order (as written) */
    unsigned char aFill[16];
    unsigned char *pFillChunk; /* the fill value throughout, made when first needed */
    chunk_entry *aCache;
    size_t nCache, nCacheMax;
    uint64_t tick;
    /* Buffers of nBufBytes (a decoded chunk, or the largest stored one allowed) kept for
     * reuse: fresh allocations of chunk size are fresh pages, zeroed by the kernel. */
    size_t nBufBytes;
    unsigned char **apFree;
    size_t nFree, nFreeMax;
    /* per decoding thread, made when first needed */
    struct libdeflate_decompressor *apDec[CHUNK_MAX_THREADS];
    unsigned char *apScratch[CHUNK_MAX_THREADS];
};

static int g_nThreads;

void parity_capture_set_decode_threads(int nThreads)
{
    g_nThreads = nThreads;
}

static int decode_threads(void)
{
    long n = g_nThreads > 0 ? g_nThreads : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (n > CHUNK_MAX_THREADS ? CHUNK_MAX_THREADS : (int)n);
}

/* The largest stored chunk accepted: deflate grows incompressible data by at most 5 bytes
 * per 16 KiB block plus its header and checksum (HDF5 then stores the chunk unfiltered).
 * Without filters a chunk is stored as it is. */
static size_t max_stored(const parity_chunk_reader *p)
{
    return p->nFilter == 0 ? p->nChunkBytes : p->nChunkBytes + p->nChunkBytes / 1024 + 1024;
}

/* Chunks decoded in one batch: the batch budget over what each costs, its stored and its
 * decoded buffer (both nBufBytes, from one pool) and its bookkeeping. */
static size_t batch_max(const parity_chunk_reader *p)
{
    size_t n = CHUNK_BATCH_BYTES / (2 * p->nBufBytes + CHUNK_OVERHEAD_BYTES);
    return n ? n : 1;
}

static unsigned char *buf_get(parity_chunk_reader *p)
{
    return p->nFree ? p->apFree[--p->nFree] : parity_malloc(p->nBufBytes);
}

static void buf_put(parity_chunk_reader *p, unsigned char *pBuf)
{
    if (!pBuf) return;
    if (p->nFree < p->nFreeMax) p->apFree[p->nFree++] = pBuf;
    else free(pBuf);
}

parity_chunk_reader *parity_chunk_reader_open(hid_t hDset, hid_t hDcpl, hid_t hFileType,
                                              hid_t hMemType, int rank, const uint64_t *aDim)
{
    parity_chunk_reader *p;
    hsize_t aChunk[H5S_MAX_RANK];
    int nFilter, i, d;
    size_t nElemSize;
    H5D_fill_value_t fillStatus;

    if (getenv("PARITY_NO_CHUNK_READER") || rank < 1 || rank > PARITY_MAX_RANK ||
        H5Pget_layout(hDcpl) != H5D_CHUNKED || H5Pget_chunk(hDcpl, rank, aChunk) != rank ||
        H5Tequal(hFileType, hMemType) <= 0)
        return NULL;
    nElemSize = H5Tget_size(hMemType);
    nFilter = H5Pget_nfilters(hDcpl);
    if (nElemSize < 1 || nElemSize > sizeof p->aFill || nFilter < 0 || nFilter > MAX_FILTERS)
        return NULL;
    p = parity_calloc(1, sizeof *p);
    if (!p) return NULL;
    p->hDset = hDset;
    p->rank = rank;
    p->nElemSize = nElemSize;
    p->nChunkBytes = nElemSize;
    for (d = 0; d < rank; d++) {
        if (aChunk[d] == 0) goto decline;
        p->aDim[d] = aDim[d];
        p->aChunk[d] = aChunk[d];
        p->aGrid[d] = (aDim[d] + aChunk[d] - 1) / aChunk[d];
        p->nChunkBytes *= aChunk[d];
    }
    /* only the pipelines decoded here, in the order h5py and torch write them */
    for (i = 0; i < nFilter; i++) {
        unsigned flags, aCd[8];
        size_t nCd = 8;
        char zName[64];
        H5Z_filter_t f = H5Pget_filter2(hDcpl, (unsigned)i, &flags, &nCd, aCd, sizeof zName,
                                        zName, NULL);
        if (f != H5Z_FILTER_SHUFFLE && f != H5Z_FILTER_DEFLATE) goto decline;
        if (f == H5Z_FILTER_SHUFFLE && i != 0) goto decline;   /* shuffle after deflate */
        p->aFilter[p->nFilter++] = f;
    }
    if (nFilter == 2 && p->aFilter[0] == p->aFilter[1]) goto decline;
    /* the fill value unallocated chunks read as (an undefined one: zeros, as libhdf5) */
    if (H5Pfill_value_defined(hDcpl, &fillStatus) < 0) goto decline;
    if (fillStatus != H5D_FILL_VALUE_UNDEFINED && H5Pget_fill_value(hDcpl, hMemType, p->aFill) < 0)
        goto decline;
    p->nBufBytes = max_stored(p);
    p->nCacheMax = CHUNK_CACHE_BYTES / (p->nBufBytes + CHUNK_OVERHEAD_BYTES);
    if (p->nCacheMax > CHUNK_CACHE_MAX_ENTRIES) p->nCacheMax = CHUNK_CACHE_MAX_ENTRIES;
    p->aCache = parity_calloc(p->nCacheMax + 1, sizeof *p->aCache);
    p->nFreeMax = 2 * batch_max(p) + 2;
    p->apFree = parity_calloc(p->nFreeMax, sizeof *p->apFree);
    if (!p->aCache || !p->apFree) goto decline;
    return p;
decline:
    parity_chunk_reader_close(p);
    return NULL;
}

void parity_chunk_reader_close(parity_chunk_reader *p)
{
    size_t i;
    if (!p) return;
    for (i = 0; i < p->nCache; i++) free(p->aCache[i].p);
    for (i = 0; i < p->nFree; i++) free(p->apFree[i]);
    for (i = 0; i < CHUNK_MAX_THREADS; i++) {
        if (p->apDec[i]) libdeflate_free_decompressor(p->apDec[i]);
        free(p->apScratch[i]);
    }
    free(p->apFree);
    free(p->aCache);
    free(p->pFillChunk);
    free(p);
}

/* ---- decoding one chunk --------------------------------------------------------------- */

/* One chunk of a batch: where it is, what was stored, and what decoding made of it. */
typedef struct {
    uint64_t aCoord[PARITY_MAX_RANK];   /* chunk-grid coordinates */
    uint64_t key;
    unsigned char *pRaw;       /* stored bytes (NULL: unallocated, or cached) */
    size_t nRaw;
    unsigned mask;             /* filters skipped for this chunk (bit i: filter i) */
    unsigned char *pOut;       /* decoded */
    int cached;                /* pOut belongs to the cache */
    int owned;                 /* pOut is this batch's to free */
    const char *zFail;         /* why decoding failed */
} chunk_job;

/* the job, the cache entry, two pool slots, and malloc's headers of both buffers */
_Static_assert(sizeof(chunk_job) + sizeof(chunk_entry) + 2 * sizeof(void *) + 32 <=
               CHUNK_OVERHEAD_BYTES, "CHUNK_OVERHEAD_BYTES must cover a chunk's bookkeeping");

/* HDF5's shuffle filter, undone: byte b of element i was stored at b * n + i. The bytes past
 * the last whole element stay where they are. */
static void unshuffle(const unsigned char *pIn, unsigned char *pOut, size_t nBytes, size_t es)
{
    size_t n = nBytes / es, i, b;
    if (es == 4) {
        /* the common case, as whole words (the compiler vectorises it) */
        const unsigned char *p0 = pIn, *p1 = pIn + n, *p2 = pIn + 2 * n, *p3 = pIn + 3 * n;
        for (i = 0; i < n; i++) {
            uint32_t w = (uint32_t)p0[i] | (uint32_t)p1[i] << 8 | (uint32_t)p2[i] << 16 |
                         (uint32_t)p3[i] << 24;
            memcpy(pOut + 4 * i, &w, 4);
        }
        memcpy(pOut + n * es, pIn + n * es, nBytes - n * es);
        return;
    }
    for (b = 0; b < es; b++) {
        const unsigned char *pSrc = pIn + b * n;
        for (i = 0; i < n; i++) pOut[i * es + b] = pSrc[i];
    }
    memcpy(pOut + n * es, pIn + n * es, nBytes - n * es);
}

static void decode_chunk(const parity_chunk_reader *p, chunk_job *pJob,
                         struct libdeflate_decompressor *pDec, unsigned char *pScratch)
{
    const unsigned char *pIn = pJob->pRaw;
    size_t nIn = pJob->nRaw;
    int i, inScratch = 0;

    for (i = p->nFilter - 1; i >= 0; i--) {
        if (pJob->mask & (1u << i)) continue;
        if (p->aFilter[i] == H5Z_FILTER_DEFLATE) {
            /* into pOut, or into the scratch when a shuffle is still to be undone */
            unsigned char *pDst = (i > 0 && !(pJob->mask & 1u)) ? pScratch : pJob->pOut;
            enum libdeflate_result r = libdeflate_zlib_decompress(pDec, pIn, nIn, pDst,
                                                                  p->nChunkBytes, NULL);
            if (r != LIBDEFLATE_SUCCESS) {
                pJob->zFail = r == LIBDEFLATE_INSUFFICIENT_SPACE
                                  ? "inflates past its declared size"
                              : r == LIBDEFLATE_SHORT_OUTPUT ? "inflates short of its declared size"
                                                             : "is not a valid deflate stream";
                return;
            }
            pIn = pDst;
            nIn = p->nChunkBytes;
            inScratch = pDst == pScratch;
        } else {
            if (nIn != p->nChunkBytes) {
                pJob->zFail = "is not its declared size";
                return;
            }
            unshuffle(pIn, pJob->pOut, nIn, p->nElemSize);
            pIn = pJob->pOut;
            inScratch = 0;
        }
    }
    if (pIn == pJob->pRaw) {   /* no filter applied to this chunk */
        if (nIn != p->nChunkBytes) {
            pJob->zFail = "is not its declared size";
            return;
        }
        memcpy(pJob->pOut, pIn, nIn);
    } else if (inScratch) {
        memcpy(pJob->pOut, pScratch, p->nChunkBytes);
    }
}

/* The jobs a decoding thread takes: every nStride-th from iFirst. */
/* A decoding thread's share of a batch: first every nStride-th job from iFirst decoded
 * (where stored bytes were read), then, once all are, its band of the box's rows copied
 * from every chunk that covers them (copying row by row keeps the writes sequential: the
 * chunks h5py picks are narrow, a few dozen bytes of each row). */
typedef struct {
    const parity_chunk_reader *p;
    chunk_job *aJob;
    size_t nJob, iFirst, nStride;
    struct libdeflate_decompressor *pDec;
    unsigned char *pScratch;
    const uint64_t *aStart, *aCount;
    unsigned char *pBuf;
    uint64_t rowLo, rowHi;     /* rows of the box (indices over all dims but the last) */
} decode_share;

static void *decode_worker(void *pArg)
{
    decode_share *pS = pArg;
    size_t i;
    for (i = pS->iFirst; i < pS->nJob; i += pS->nStride)
        if (pS->aJob[i].pRaw) decode_chunk(pS->p, &pS->aJob[i], pS->pDec, pS->pScratch);
    return NULL;
}

/* Copies rows [rowLo, rowHi) of the box from the batch's chunks. */
static void *copy_worker(void *pArg)
{
    decode_share *pS = pArg;
    const parity_chunk_reader *p = pS->p;
    const int r = p->rank, last = r - 1;
    const size_t es = p->nElemSize;
    uint64_t aIdx[PARITY_MAX_RANK], row, rest;
    uint64_t aChunkStride[PARITY_MAX_RANK], aBoxStride[PARITY_MAX_RANK];
    size_t j;
    int d;

    if (r < 1 || pS->rowLo >= pS->rowHi) return NULL;
    aChunkStride[last] = aBoxStride[last] = es;
    for (d = last - 1; d >= 0; d--) {
        aChunkStride[d] = aChunkStride[d + 1] * p->aChunk[d + 1];
        aBoxStride[d] = aBoxStride[d + 1] * pS->aCount[d + 1];
    }
    /* the first row's index tuple */
    rest = pS->rowLo;
    for (d = last - 1; d >= 0; d--) {
        aIdx[d] = pS->aStart[d] + rest % pS->aCount[d];
        rest /= pS->aCount[d];
    }
    for (row = pS->rowLo; row < pS->rowHi; row++) {
        uint64_t dstRow = 0;
        for (d = 0; d < last; d++) dstRow += (aIdx[d] - pS->aStart[d]) * aBoxStride[d];
        for (j = 0; j < pS->nJob; j++) {
            const chunk_job *pJ = &pS->aJob[j];
            uint64_t src = 0, lo, hi, o;
            if (pJ->zFail) continue;
            for (d = 0; d < last; d++) {
                o = pJ->aCoord[d] * p->aChunk[d];
                if (aIdx[d] < o || aIdx[d] >= o + p->aChunk[d]) break;
                src += (aIdx[d] - o) * aChunkStride[d];
            }
            if (d < last) continue;   /* this chunk does not cover the row */
            o = pJ->aCoord[last] * p->aChunk[last];
            lo = o > pS->aStart[last] ? o : pS->aStart[last];
            hi = o + p->aChunk[last];
            if (hi > pS->aStart[last] + pS->aCount[last]) hi = pS->aStart[last] + pS->aCount[last];
            if (lo >= hi) continue;
            {
                const unsigned char *pSrc = pJ->pOut + src + (lo - o) * es;
                unsigned char *pDst = pS->pBuf + dstRow + (lo - pS->aStart[last]) * es;
                size_t n = (size_t)((hi - lo) * es);
                /* the usual run lengths by fixed-size moves, not a memcpy call each */
                switch (n) {
                case 16: memcpy(pDst, pSrc, 16); break;
                case 32: memcpy(pDst, pSrc, 32); break;
                case 64: memcpy(pDst, pSrc, 64); break;
                case 128: memcpy(pDst, pSrc, 128); break;
                default: memcpy(pDst, pSrc, n); break;
                }
            }
        }
        for (d = last - 1; d >= 0; d--) {
            if (++aIdx[d] < pS->aStart[d] + pS->aCount[d]) break;
            aIdx[d] = pS->aStart[d];
        }
    }
    return NULL;
}

/* Decodes the batch's stored chunks, then copies the box's rows from them, each on up to
 * decode_threads() threads (each with its decompressor and scratch, kept by the reader).
 * 0, or -1 when memory runs out. */
static int decode_batch(parity_chunk_reader *p, chunk_job *aJob, size_t nJob,
                        const uint64_t *aStart, const uint64_t *aCount, unsigned char *pBuf)
{
    decode_share aShare[CHUNK_MAX_THREADS];
    int nThread = decode_threads(), nCopy, t, d;
    uint64_t nRow = 1;

    if (nJob == 0) return 0;
    for (d = 0; d + 1 < p->rank; d++) nRow *= aCount[d];
    nCopy = (uint64_t)nThread > nRow ? (int)nRow : nThread;
    for (t = 0; t < nThread; t++) {
        if (!p->apDec[t]) p->apDec[t] = libdeflate_alloc_decompressor();
        if (!p->apScratch[t]) p->apScratch[t] = parity_malloc(p->nChunkBytes);
        if (!p->apDec[t] || !p->apScratch[t]) return -1;
        aShare[t] = (decode_share){ p, aJob, nJob, (size_t)t, (size_t)nThread, p->apDec[t],
                                    p->apScratch[t], aStart, aCount, pBuf,
                                    t < nCopy ? nRow * (uint64_t)t / (uint64_t)nCopy : 0,
                                    t < nCopy ? nRow * (uint64_t)(t + 1) / (uint64_t)nCopy : 0 };
    }
    parity_run_shares(decode_worker, aShare, sizeof aShare[0],
                      (size_t)nThread > nJob ? (int)nJob : nThread);
    parity_run_shares(copy_worker, aShare, sizeof aShare[0], nCopy);
    return 0;
}

/* ---- the cache ------------------------------------------------------------------------ */

static chunk_entry *cache_find(parity_chunk_reader *p, uint64_t key)
{
    size_t i;
    for (i = 0; i < p->nCache; i++)
        if (p->aCache[i].key == key) return &p->aCache[i];
    return NULL;
}

/* Hands a decoded chunk to the cache (which then owns it), evicting the least recently
 * used when full; with no room at all the caller keeps it. Returns 1 when taken. */
static int cache_put(parity_chunk_reader *p, uint64_t key, unsigned char *pBuf)
{
    size_t i, iOld = 0;
    if (p->nCacheMax == 0) return 0;
    if (p->nCache < p->nCacheMax) {
        p->aCache[p->nCache++] = (chunk_entry){ key, pBuf, ++p->tick };
        return 1;
    }
    for (i = 1; i < p->nCache; i++)
        if (p->aCache[i].lastUse < p->aCache[iOld].lastUse) iOld = i;
    buf_put(p, p->aCache[iOld].p);
    p->aCache[iOld] = (chunk_entry){ key, pBuf, ++p->tick };
    return 1;
}

/* ---- reading a box ---------------------------------------------------------------------- */

/* The fill chunk, made once. */
static const unsigned char *fill_chunk(parity_chunk_reader *p)
{
    size_t i;
    if (p->pFillChunk) return p->pFillChunk;
    p->pFillChunk = parity_malloc(p->nChunkBytes);
    if (!p->pFillChunk) return NULL;
    for (i = 0; i < p->nChunkBytes; i += p->nElemSize)
        memcpy(p->pFillChunk + i, p->aFill, p->nElemSize);
    return p->pFillChunk;
}

/* Reads the stored bytes of job pJob's chunk (or notes it unallocated, or finds it cached).
 * 0, or -1 with zErr. */
static int fetch_chunk(parity_chunk_reader *p, chunk_job *pJob, char *zErr, size_t nErr)
{
    hsize_t aOffset[H5S_MAX_RANK];
    hsize_t nStored = 0;
    uint32_t mask = 0;
    chunk_entry *pE = cache_find(p, pJob->key);
    int d;

    if (pE) {
        pE->lastUse = ++p->tick;
        pJob->pOut = pE->p;
        pJob->cached = 1;
        return 0;
    }
    for (d = 0; d < p->rank; d++) aOffset[d] = pJob->aCoord[d] * p->aChunk[d];
    /* a B-tree lookup (H5Dget_chunk_info_by_coord would walk every chunk before it: O(n^2)
     * over a tensor in HDF5 1.10) */
    if (H5Dget_chunk_storage_size(p->hDset, aOffset, &nStored) < 0 || nStored == 0) {
        const unsigned char *pFill = fill_chunk(p);
        if (!pFill) {
            snprintf(zErr, nErr, "out of memory for a chunk");
            return -1;
        }
        pJob->pOut = (unsigned char *)pFill;
        pJob->cached = 1;   /* not this batch's to free */
        return 0;
    }
    if (nStored > max_stored(p)) {
        snprintf(zErr, nErr, "a stored chunk of %llu bytes is larger than a %llu-byte chunk "
                 "can be", (unsigned long long)nStored, (unsigned long long)p->nChunkBytes);
        return -1;
    }
    pJob->pOut = buf_get(p);
    pJob->pRaw = p->nFilter ? buf_get(p) : NULL;
    if (!pJob->pOut || (p->nFilter && !pJob->pRaw)) {
        snprintf(zErr, nErr, "out of memory for a chunk");
        return -1;
    }
    pJob->owned = 1;
    if (!p->nFilter && nStored != p->nChunkBytes) {
        snprintf(zErr, nErr, "read failed (a stored chunk is not its declared size)");
        return -1;
    }
    /* no pipeline: the stored bytes are the chunk, read in place */
    if (H5Dread_chunk(p->hDset, H5P_DEFAULT, aOffset, &mask,
                      p->nFilter ? pJob->pRaw : pJob->pOut) < 0) {
        snprintf(zErr, nErr, "read failed (a stored chunk cannot be read)");
        return -1;
    }
    pJob->nRaw = (size_t)nStored;
    pJob->mask = mask;
    return 0;
}

/* Frees what a batch still owns; decoded chunks go to the cache. */
static void batch_done(parity_chunk_reader *p, chunk_job *aJob, size_t nJob, int keep)
{
    size_t i;
    for (i = 0; i < nJob; i++) {
        buf_put(p, aJob[i].pRaw);
        aJob[i].pRaw = NULL;
        if (aJob[i].owned && !(keep && cache_put(p, aJob[i].key, aJob[i].pOut)))
            buf_put(p, aJob[i].pOut);
        aJob[i].owned = 0;
    }
}

int parity_chunk_read(parity_chunk_reader *p, const uint64_t *aStart, const uint64_t *aCount,
                      void *pBuf, char *zErr, size_t nErr)
{
    uint64_t aLo[PARITY_MAX_RANK], aHi[PARITY_MAX_RANK], aC[PARITY_MAX_RANK];
    size_t nBatchMax = batch_max(p), nJob = 0, i;
    chunk_job *aJob;
    int d, rc = 0, more = 1;

    if (nBatchMax < 1) nBatchMax = 1;
    for (d = 0; d < p->rank; d++) {
        if (aCount[d] == 0) return 0;
        aLo[d] = aStart[d] / p->aChunk[d];
        aHi[d] = (aStart[d] + aCount[d] - 1) / p->aChunk[d] + 1;
        aC[d] = aLo[d];
    }
    aJob = parity_calloc(nBatchMax, sizeof *aJob);
    if (!aJob) {
        snprintf(zErr, nErr, "out of memory for a chunk batch");
        return -1;
    }
    /* every chunk of the box, row-major over the chunk grid, a batch at a time */
    while (more && rc == 0) {
        chunk_job *pJob = &aJob[nJob];
        uint64_t key = 0;
        memset(pJob, 0, sizeof *pJob);
        for (d = 0; d < p->rank; d++) {
            pJob->aCoord[d] = aC[d];
            key = key * p->aGrid[d] + aC[d];
        }
        pJob->key = key;
        nJob++;
        rc = fetch_chunk(p, pJob, zErr, nErr);
        for (d = p->rank - 1; d >= 0; d--) {
            if (++aC[d] < aHi[d]) break;
            aC[d] = aLo[d];
        }
        more = d >= 0;
        if (rc == 0 && (nJob == nBatchMax || !more)) {
            if (decode_batch(p, aJob, nJob, aStart, aCount, pBuf) != 0) {
                snprintf(zErr, nErr, "out of memory while inflating chunks");
                rc = -1;
            }
            for (i = 0; i < nJob && rc == 0; i++) {
                if (aJob[i].zFail) {
                    snprintf(zErr, nErr, "read failed (a stored chunk %s)", aJob[i].zFail);
                    rc = -1;
                }
            }
            batch_done(p, aJob, nJob, rc == 0);
            nJob = 0;
        }
    }
    batch_done(p, aJob, nJob, 0);
    free(aJob);
    return rc;
}
