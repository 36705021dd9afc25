/*
 * test_chunk_read.c - reading chunked datasets chunk by chunk (formats/chunk_read.c) gives
 * the bytes libhdf5 gives, and refuses what libhdf5 would not decode.
 *
 * 1. Every layout the reader takes (chunked with no filter, shuffle, deflate, shuffle and
 *    deflate; chunks that do not divide the extent, so edge chunks are partial; rank 1 to
 *    3; float32, float64, int16 and bool-like uint8; chunks never written, which read as the
 *    fill value) read slab by slab, with slabs that cut chunks, equals the libhdf5 read of
 *    the same file (PARITY_NO_CHUNK_READER), byte for byte.
 * 2. A chunk whose filter mask skips deflate (HDF5 stores incompressible chunks that way)
 *    reads as stored.
 * 3. Hostile chunks, written raw (H5Dwrite_chunk): a deflate stream that inflates past the
 *    chunk's size, one that inflates short of it, bytes that are no deflate stream, a chunk
 *    stored unfiltered by its mask at the wrong size, a stored chunk larger than a chunk can
 *    be: each read fails with one clear line, and nothing grows past the chunk's size.
 * 4. Pipelines the reader does not decode (fletcher32) still read through libhdf5, which
 *    checks the checksum: a corrupted chunk is a read error there too.
 */
#include <criterion/criterion.h>
#include <libdeflate.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hdf5.h>

#include "formats/capture.h"
#include "support.h"

static void setup(void)
{
    support_dir_create(TEST_BINARY_DIR, "chunk-read-");
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);   /* the hostile reads fail on purpose */
}

TestSuite(chunk_read, .init = setup, .fini = support_dir_remove, .timeout = 120);

/* ---- writing ------------------------------------------------------------------------- */

typedef struct {
    const char *zName;
    int rank;
    hsize_t aDim[3], aChunk[3];
    hid_t hType;
    int shuffle, deflate;
    int partial;               /* write only some chunks (the rest: fill value 7) */
} layout;

/* Deterministic contents for element i of a layout with elements of nSize bytes. */
static void fill_values(unsigned char *p, size_t n, size_t nSize, uint64_t seed)
{
    uint64_t s = seed;
    size_t i;
    for (i = 0; i < n; i++) {
        uint64_t v = splitmix64(&s);
        if (nSize == 4) {
            float f = (float)((double)(v >> 11) * 0x1p-53 * 4.0 - 2.0);
            memcpy(p + 4 * i, &f, 4);
        } else if (nSize == 8) {
            double d = (double)(v >> 11) * 0x1p-53 - 0.5;
            memcpy(p + 8 * i, &d, 8);
        } else {
            memcpy(p + nSize * i, &v, nSize);
        }
    }
}

static void write_layout(hid_t hFile, const layout *pL, uint64_t seed)
{
    hid_t hSpace = H5Screate_simple(pL->rank, pL->aDim, NULL), hDcpl = H5Pcreate(H5P_DATASET_CREATE), hD;
    size_t nSize = H5Tget_size(pL->hType), n = 1;
    unsigned char *p;
    int d;
    for (d = 0; d < pL->rank; d++) n *= pL->aDim[d];
    cr_assert(H5Pset_chunk(hDcpl, pL->rank, pL->aChunk) >= 0);
    if (pL->shuffle) H5Pset_shuffle(hDcpl);
    if (pL->deflate) H5Pset_deflate(hDcpl, 1);
    if (pL->partial) {
        int seven = 7;
        H5Pset_fill_value(hDcpl, H5T_NATIVE_INT, &seven);
    }
    hD = H5Dcreate2(hFile, pL->zName, pL->hType, hSpace, H5P_DEFAULT, hDcpl, H5P_DEFAULT);
    cr_assert(hD >= 0);
    p = malloc(n * nSize);
    cr_assert(p);
    fill_values(p, n, nSize, seed);
    if (!pL->partial) {
        cr_assert(H5Dwrite(hD, pL->hType, H5S_ALL, H5S_ALL, H5P_DEFAULT, p) >= 0);
    } else {
        /* one box covering the first chunk and part of its neighbours along every dim */
        hsize_t aStart[3] = { 0, 0, 0 }, aCount[3];
        hid_t hMem, hFileSel = H5Dget_space(hD);
        for (d = 0; d < pL->rank; d++) aCount[d] = pL->aChunk[d] + 1 < pL->aDim[d] ? pL->aChunk[d] + 1 : pL->aDim[d];
        hsize_t nBox = 1;
        for (d = 0; d < pL->rank; d++) nBox *= aCount[d];
        hMem = H5Screate_simple(1, &nBox, NULL);
        H5Sselect_hyperslab(hFileSel, H5S_SELECT_SET, aStart, NULL, aCount, NULL);
        cr_assert(H5Dwrite(hD, pL->hType, hMem, hFileSel, H5P_DEFAULT, p) >= 0);
        H5Sclose(hMem);
        H5Sclose(hFileSel);
    }
    free(p);
    H5Dclose(hD);
    H5Pclose(hDcpl);
    H5Sclose(hSpace);
}

/* ---- reading ------------------------------------------------------------------------- */

static int g_decoded;   /* whether read_all's reader decoded the chunks itself */

/* Reads tensor zName of zFile whole, slab by slab (slabs of nSlabElem elements, which cut
 * chunks), with or without the chunk reader. Returns the bytes (n in *pn), or NULL with the
 * read's error in zErr. */
static unsigned char *read_all(const char *zFile, const char *zName, uint64_t nSlabElem,
                               int viaHdf5, size_t *pn, char *zErr, size_t nErr)
{
    parity_capture *pCap;
    parity_tensor_reader *pRd;
    const parity_tensor_info *pT;
    parity_slab_plan plan;
    parity_slab slab;
    unsigned char *p;
    size_t nSize;
    long i;
    if (viaHdf5) setenv("PARITY_NO_CHUNK_READER", "1", 1);
    else unsetenv("PARITY_NO_CHUNK_READER");
    cr_assert_eq(parity_capture_open(zFile, &pCap, zErr, nErr), 0, "%s", zErr);
    i = parity_capture_find(pCap, zName);
    cr_assert(i >= 0);
    pT = parity_capture_tensor(pCap, (size_t)i);
    cr_assert_eq(parity_tensor_reader_open(pCap, (size_t)i, &pRd, zErr, nErr), 0, "%s", zErr);
    g_decoded = parity_tensor_reader_decodes_chunks(pRd);
    nSize = parity_dtype_size(pT->dtype);
    p = malloc(pT->nElem * nSize + 1);
    cr_assert(p);
    parity_slab_plan_init(&plan, pT->rank, pT->aDim, nSlabElem, 1);
    while (parity_slab_next(&plan, &slab)) {
        if (parity_tensor_read(pRd, &slab, p + slab.first * nSize, zErr, nErr) != 0) {
            free(p);
            p = NULL;
            break;
        }
    }
    *pn = pT->nElem * nSize;
    parity_tensor_reader_close(pRd);
    parity_capture_close(pCap);
    unsetenv("PARITY_NO_CHUNK_READER");
    return p;
}

static hid_t new_file(const char *zFile)
{
    hid_t h = H5Fcreate(zFile, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    cr_assert(h >= 0);
    return h;
}

Test(chunk_read, every_layout_reads_as_libhdf5_reads_it)
{
    static const layout kLayout[] = {
        { "/plain", 2, { 300, 257 }, { 64, 100 }, 0, 0, 0, 0 },
        { "/shuffle", 2, { 300, 257 }, { 64, 100 }, 0, 1, 0, 0 },
        { "/deflate", 2, { 300, 257 }, { 64, 100 }, 0, 0, 1, 0 },
        { "/both", 2, { 300, 257 }, { 64, 100 }, 0, 1, 1, 0 },
        { "/rank1", 1, { 10007 }, { 1000 }, 0, 1, 1, 0 },
        { "/rank3", 3, { 7, 33, 65 }, { 2, 16, 64 }, 0, 1, 1, 0 },
        { "/f64", 2, { 129, 65 }, { 32, 32 }, 0, 1, 1, 0 },
        { "/i16", 2, { 129, 65 }, { 32, 32 }, 0, 1, 1, 0 },
        { "/u8", 2, { 129, 65 }, { 32, 32 }, 0, 0, 1, 0 },
        { "/partial", 2, { 300, 257 }, { 64, 100 }, 0, 1, 1, 1 },
        { "/partial_plain", 3, { 9, 40, 40 }, { 4, 16, 16 }, 0, 0, 0, 1 },
        { "/one_chunk", 2, { 50, 50 }, { 50, 50 }, 0, 1, 1, 0 },
    };
    const char *zFile = tmp_path("layouts.h5");
    static const uint64_t kSlab[] = { 1000, 4096, 1 << 20 };
    hid_t hFile = new_file(zFile);
    size_t k, s;
    for (k = 0; k < sizeof kLayout / sizeof kLayout[0]; k++) {
        layout L = kLayout[k];
        L.hType = strcmp(L.zName, "/f64") == 0 ? H5T_IEEE_F64LE
                : strcmp(L.zName, "/i16") == 0 ? H5T_STD_I16LE
                : strcmp(L.zName, "/u8") == 0 ? H5T_STD_U8LE : H5T_IEEE_F32LE;
        write_layout(hFile, &L, 11 + k);
    }
    H5Fclose(hFile);
    for (k = 0; k < sizeof kLayout / sizeof kLayout[0]; k++)
        for (s = 0; s < sizeof kSlab / sizeof kSlab[0]; s++) {
            char zErr[256];
            size_t nA, nB;
            unsigned char *pA = read_all(zFile, kLayout[k].zName, kSlab[s], 0, &nA, zErr, sizeof zErr);
            cr_assert(g_decoded, "%s: the chunk reader declined it", kLayout[k].zName);
            unsigned char *pB = read_all(zFile, kLayout[k].zName, kSlab[s], 1, &nB, zErr, sizeof zErr);
            cr_assert(!g_decoded);
            cr_assert(pA && pB, "%s: %s", kLayout[k].zName, zErr);
            cr_assert_eq(nA, nB);
            cr_assert_eq(memcmp(pA, pB, nA), 0, "%s, slabs of %llu: the chunk reader's bytes "
                         "differ from libhdf5's", kLayout[k].zName,
                         (unsigned long long)kSlab[s]);
            free(pA);
            free(pB);
        }
}

/* ---- raw chunks ---------------------------------------------------------------------- */

/* A float32 [64, 64] dataset with (32, 32) chunks and the given pipeline, whose chunk at
 * (0, 0) is written raw (nBytes of pChunk, filter mask mask); the other chunks normally. */
static void write_raw_chunk(const char *zFile, int shuffle, int deflate, int fletcher,
                            const void *pChunk, size_t nBytes, uint32_t mask)
{
    hsize_t aDim[2] = { 64, 64 }, aChunk[2] = { 32, 32 }, aOff[2] = { 0, 0 };
    hid_t hFile = new_file(zFile), hSpace = H5Screate_simple(2, aDim, NULL);
    hid_t hDcpl = H5Pcreate(H5P_DATASET_CREATE), hD;
    float a[64 * 64];
    int i;
    for (i = 0; i < 64 * 64; i++) a[i] = (float)i * 0.25f;
    H5Pset_chunk(hDcpl, 2, aChunk);
    if (shuffle) H5Pset_shuffle(hDcpl);
    if (deflate) H5Pset_deflate(hDcpl, 1);
    if (fletcher) H5Pset_fletcher32(hDcpl);
    hD = H5Dcreate2(hFile, "/t", H5T_IEEE_F32LE, hSpace, H5P_DEFAULT, hDcpl, H5P_DEFAULT);
    cr_assert(H5Dwrite(hD, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, a) >= 0);
    if (pChunk) cr_assert(H5Dwrite_chunk(hD, H5P_DEFAULT, mask, aOff, nBytes, pChunk) >= 0);
    H5Dclose(hD);
    H5Pclose(hDcpl);
    H5Sclose(hSpace);
    H5Fclose(hFile);
}

/* zlib-wrapped deflate of n bytes (libdeflate), into a malloc'd buffer. */
static unsigned char *zlib_of(const void *p, size_t n, size_t *pnOut)
{
    struct libdeflate_compressor *pC = libdeflate_alloc_compressor(1);
    size_t nMax = libdeflate_zlib_compress_bound(pC, n);
    unsigned char *pOut = malloc(nMax);
    cr_assert(pC && pOut);
    *pnOut = libdeflate_zlib_compress(pC, p, n, pOut, nMax);
    cr_assert(*pnOut > 0);
    libdeflate_free_compressor(pC);
    return pOut;
}

static void expect_read_error(const char *zFile, const char *zWhat, const char *zNeedle)
{
    char zErr[256] = "";
    size_t n;
    unsigned char *p = read_all(zFile, "/t", 4096, 0, &n, zErr, sizeof zErr);
    cr_assert_null(p, "%s: read without error", zWhat);
    cr_assert(strstr(zErr, zNeedle), "%s: \"%s\" does not say \"%s\"", zWhat, zErr, zNeedle);
    cr_assert_null(strchr(zErr, '\n'), "one line");
}

Test(chunk_read, a_chunk_stored_unfiltered_by_its_mask_reads_as_stored)
{
    const char *zFile = tmp_path("mask.h5");
    float aChunk[32 * 32];
    char zErr[256];
    size_t n, nB, i;
    unsigned char *pA, *pB;
    for (i = 0; i < 32 * 32; i++) aChunk[i] = -(float)i;
    write_raw_chunk(zFile, 0, 1, 0, aChunk, sizeof aChunk, 1u);   /* deflate skipped */
    pA = read_all(zFile, "/t", 4096, 0, &n, zErr, sizeof zErr);
    cr_assert(g_decoded);
    pB = read_all(zFile, "/t", 4096, 1, &nB, zErr, sizeof zErr);
    cr_assert(pA && pB, "%s", zErr);
    cr_assert_eq(memcmp(pA, pB, n), 0);
    cr_assert_eq(((float *)pA)[64 + 1], -33.0f);   /* row 1, column 1 of chunk (0, 0) */
    free(pA);
    free(pB);
}

Test(chunk_read, hostile_chunks_are_read_errors)
{
    const char *zFile = tmp_path("hostile.h5");
    unsigned char aBig[32 * 32 * 4 * 2], aGarbage[300];
    float aChunk[32 * 32];
    size_t nZ, i;
    unsigned char *pZ;

    /* inflates to twice the chunk's size */
    memset(aBig, 0x41, sizeof aBig);
    pZ = zlib_of(aBig, sizeof aBig, &nZ);
    write_raw_chunk(zFile, 0, 1, 0, pZ, nZ, 0);
    expect_read_error(zFile, "over-long stream", "inflates past its declared size");
    free(pZ);
    /* inflates to half of it */
    pZ = zlib_of(aBig, sizeof aBig / 4, &nZ);
    write_raw_chunk(zFile, 0, 1, 0, pZ, nZ, 0);
    expect_read_error(zFile, "short stream", "inflates short of its declared size");
    free(pZ);
    /* no deflate stream at all */
    for (i = 0; i < sizeof aGarbage; i++) aGarbage[i] = (unsigned char)(i * 37 + 11);
    write_raw_chunk(zFile, 1, 1, 0, aGarbage, sizeof aGarbage, 0);
    expect_read_error(zFile, "garbage", "is not a valid deflate stream");
    /* a chunk stored unfiltered (its mask skips deflate) but of the wrong size (a dataset
     * with no pipeline records no chunk sizes at all: there libhdf5 and the reader both
     * read the chunk's nominal size) */
    memset(aChunk, 0, sizeof aChunk);
    write_raw_chunk(zFile, 0, 1, 0, aChunk, sizeof aChunk / 2, 1u);
    expect_read_error(zFile, "short raw chunk", "is not its declared size");
    /* a stored chunk far larger than a chunk can be */
    {
        size_t nHuge = sizeof aChunk * 4;
        unsigned char *pHuge = calloc(1, nHuge);
        write_raw_chunk(zFile, 0, 1, 0, pHuge, nHuge, 0);
        expect_read_error(zFile, "oversized stored chunk", "is larger than");
        free(pHuge);
    }
}

Test(chunk_read, fletcher32_goes_through_libhdf5_and_its_checksum_holds)
{
    const char *zFile = tmp_path("fletcher.h5");
    char zErr[256];
    size_t n, nB;
    unsigned char *pA, *pB, aBad[32 * 32 * 4 + 4];
    write_raw_chunk(zFile, 0, 0, 1, NULL, 0, 0);
    pA = read_all(zFile, "/t", 1000, 0, &n, zErr, sizeof zErr);
    cr_assert(!g_decoded, "fletcher32 is libhdf5's to check");
    pB = read_all(zFile, "/t", 1000, 1, &nB, zErr, sizeof zErr);
    cr_assert(pA && pB, "%s", zErr);
    cr_assert_eq(memcmp(pA, pB, n), 0);
    cr_assert_eq(((float *)pA)[65], 65 * 0.25f);
    free(pA);
    free(pB);
    /* a chunk whose checksum does not match its bytes */
    memset(aBad, 0x3c, sizeof aBad);
    write_raw_chunk(zFile, 0, 0, 1, aBad, sizeof aBad, 0);
    expect_read_error(zFile, "bad checksum", "read failed");
}

/* Chunk addresses are relative to the user block: a file with one (h5py's userblock_size)
 * reads the same through the reader's own descriptor as through libhdf5. */
Test(chunk_read, a_user_block_shifts_the_chunks)
{
    static const layout kLayout[] = {
        { "/plain", 2, { 100, 70 }, { 32, 32 }, 0, 0, 0, 0 },
        { "/both", 2, { 100, 70 }, { 32, 32 }, 0, 1, 1, 0 },
    };
    const char *zFile = tmp_path("userblock.h5");
    hid_t hFcpl = H5Pcreate(H5P_FILE_CREATE), hFile;
    size_t k;
    cr_assert(H5Pset_userblock(hFcpl, 4096) >= 0);
    hFile = H5Fcreate(zFile, H5F_ACC_TRUNC, hFcpl, H5P_DEFAULT);
    cr_assert(hFile >= 0);
    for (k = 0; k < 2; k++) {
        layout L = kLayout[k];
        L.hType = H5T_IEEE_F32LE;
        write_layout(hFile, &L, 3 + k);
    }
    H5Fclose(hFile);
    H5Pclose(hFcpl);
    for (k = 0; k < 2; k++) {
        char zErr[256];
        size_t nA, nB;
        unsigned char *pA = read_all(zFile, kLayout[k].zName, 2000, 0, &nA, zErr, sizeof zErr);
        unsigned char *pB;
        cr_assert(pA && g_decoded, "%s: %s", kLayout[k].zName, zErr);
        pB = read_all(zFile, kLayout[k].zName, 2000, 1, &nB, zErr, sizeof zErr);
        cr_assert(pB);
        cr_assert_eq(memcmp(pA, pB, nA), 0, "%s: differs under a user block", kLayout[k].zName);
        free(pA);
        free(pB);
    }
}
