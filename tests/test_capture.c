/*
 * test_capture.c - the capture reader, writer and slab planner (formats/capture_*.c,
 * formats/slab.c, formats/attr.c).
 *
 * Fixture captures are written by tests/fixtures/make_h5py_fixtures.py with plain h5py,
 * exactly as users write them, into a fresh directory per test. Their bit patterns and
 * values are spelled out again here, independently, and every tensor is read back through
 * parity_capture_open / parity_tensor_reader_open / parity_tensor_read / parity_decode.
 * The writer is checked by our reader and by h5py (the same script, --check-writer).
 */
#define _GNU_SOURCE   /* nftw, mkdtemp */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "formats/capture.h"

/* ---------------------------------------------------------------------------------- */
/* Helpers                                                                            */

static char g_zDir[4096];   /* this test's temporary directory */

static int remove_entry(const char *zPath, const struct stat *pSt, int flag, struct FTW *pFtw)
{
    (void)pSt; (void)flag; (void)pFtw;
    return remove(zPath);
}

static void make_dir(void)
{
    const char *zBase = TEST_BINARY_DIR;
    struct stat st;
    if (stat(zBase, &st) != 0 || !S_ISDIR(st.st_mode)) zBase = "/tmp";
    snprintf(g_zDir, sizeof g_zDir, "%s/capture.XXXXXX", zBase);
    cr_assert_not_null(mkdtemp(g_zDir), "mkdtemp(%s): %s", g_zDir, strerror(errno));
}

static void remove_dir(void)
{
    if (g_zDir[0]) nftw(g_zDir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    g_zDir[0] = 0;
}

static void path_in_dir(char *zBuf, size_t nBuf, const char *zName)
{
    snprintf(zBuf, nBuf, "%s/%s", g_zDir, zName);
}

/* Runs the h5py fixture script for one set into g_zDir. */
static void run_fixtures(const char *zSet)
{
    char zCmd[8192];
    int rc;
    snprintf(zCmd, sizeof zCmd, "'%s' '%s/fixtures/make_h5py_fixtures.py' '%s' %s",
             SYSTEM_PYTHON, TEST_SOURCE_DIR, g_zDir, zSet);
    rc = system(zCmd);
    cr_assert_eq(rc, 0, "fixture script failed (%d): %s", rc, zCmd);
}

static void setup_types(void) { make_dir(); run_fixtures("types"); }
static void setup_attrs(void) { make_dir(); run_fixtures("attrs"); }
static void setup_links(void) { make_dir(); run_fixtures("links"); }
static void setup_chunked(void) { make_dir(); run_fixtures("chunked"); }
static void setup_root(void) { make_dir(); run_fixtures("root"); }
static void setup_empty(void) { make_dir(); }

static parity_capture *open_fixture(const char *zName)
{
    char zFile[4200], zErr[PARITY_ERR_LEN] = "";
    parity_capture *pCap = NULL;
    path_in_dir(zFile, sizeof zFile, zName);
    cr_assert_eq(parity_capture_open(zFile, &pCap, zErr, sizeof zErr), 0,
                 "open %s: %s", zFile, zErr);
    cr_assert_not_null(pCap);
    return pCap;
}

static const parity_tensor_info *tensor_at(parity_capture *pCap, const char *zPath, size_t *pi)
{
    long i = parity_capture_find(pCap, zPath);
    const parity_tensor_info *pT;
    cr_assert_geq(i, 0, "tensor %s not listed", zPath);
    pT = parity_capture_tensor(pCap, (size_t)i);
    cr_assert_not_null(pT);
    cr_assert_str_eq(pT->zPath, zPath);
    if (pi) *pi = (size_t)i;
    return pT;
}

/* A usable tensor: no error, the given dtype and shape. */
static const parity_tensor_info *expect_tensor(parity_capture *pCap, const char *zPath,
                                               parity_dtype dt, int rank, const uint64_t *aDim)
{
    const parity_tensor_info *pT = tensor_at(pCap, zPath, NULL);
    uint64_t nElem = 1;
    int i;
    cr_assert_null(pT->zError, "%s: unexpected error: %s", zPath, pT->zError);
    cr_assert_eq(pT->dtype, dt, "%s: dtype %s, expected %s", zPath,
                 parity_dtype_name(pT->dtype), parity_dtype_name(dt));
    cr_assert_eq(pT->rank, rank, "%s: rank %d, expected %d", zPath, pT->rank, rank);
    for (i = 0; i < rank; i++) {
        cr_assert_eq(pT->aDim[i], aDim[i], "%s: dim %d is %llu, expected %llu", zPath, i,
                     (unsigned long long)pT->aDim[i], (unsigned long long)aDim[i]);
        nElem *= aDim[i];
    }
    cr_assert_eq(pT->nElem, nElem, "%s: nElem %llu", zPath, (unsigned long long)pT->nElem);
    return pT;
}

/* A tensor listed with an error whose message contains zNeedle. */
static void expect_tensor_error(parity_capture *pCap, const char *zPath, const char *zNeedle)
{
    size_t i;
    const parity_tensor_info *pT = tensor_at(pCap, zPath, &i);
    parity_tensor_reader *pRd = NULL;
    char zErr[PARITY_ERR_LEN] = "";
    cr_assert_not_null(pT->zError, "%s: expected an error mentioning '%s'", zPath, zNeedle);
    cr_assert_not_null(strstr(pT->zError, zNeedle), "%s: error '%s' does not mention '%s'",
                       zPath, pT->zError, zNeedle);
    cr_assert_eq(pT->dtype, PARITY_DT_INVALID, "%s: dtype must be invalid with an error", zPath);
    cr_assert_eq(parity_tensor_reader_open(pCap, i, &pRd, zErr, sizeof zErr), -1,
                 "%s: a tensor with an error must not open for reading", zPath);
    cr_assert_null(pRd);
    cr_assert_neq(zErr[0], 0);
}

/* Row alignment as the engine computes it (diff/compare.c): the chunk extent along the
 * split dimension an unaligned plan would choose. */
static uint64_t row_align(const parity_tensor_info *pT, const parity_tensor_reader *pRd,
                          uint64_t nMaxElem)
{
    parity_slab_plan probe;
    const uint64_t *aChunk = parity_tensor_reader_chunk(pRd);
    parity_slab_plan_init(&probe, pT->rank, pT->aDim, nMaxElem, 1);
    if (probe.splitDim >= 0 && aChunk[probe.splitDim] > 0) return aChunk[probe.splitDim];
    return 1;
}

/* Reads a whole tensor slab by slab (at most nMaxElem elements per slab) into a malloc'ed
 * buffer of storage bytes. *pnSlab receives the number of slabs read. */
static unsigned char *read_raw(parity_capture *pCap, const char *zPath, uint64_t nMaxElem,
                               size_t *pnSlab)
{
    size_t i, nSize, nSlab = 0;
    const parity_tensor_info *pT = tensor_at(pCap, zPath, &i);
    parity_tensor_reader *pRd = NULL;
    parity_slab_plan plan;
    parity_slab slab;
    unsigned char *pBuf;
    uint64_t next = 0;
    char zErr[PARITY_ERR_LEN] = "";

    cr_assert_null(pT->zError, "%s: %s", zPath, pT->zError);
    nSize = parity_dtype_size(pT->dtype);
    cr_assert_gt(nSize, 0);
    cr_assert_eq(parity_tensor_reader_open(pCap, i, &pRd, zErr, sizeof zErr), 0, "%s: %s",
                 zPath, zErr);
    pBuf = calloc(pT->nElem ? pT->nElem : 1, nSize);
    cr_assert_not_null(pBuf);
    parity_slab_plan_init(&plan, pT->rank, pT->aDim, nMaxElem, row_align(pT, pRd, nMaxElem));
    while (parity_slab_next(&plan, &slab)) {
        cr_assert_eq(slab.first, next, "%s: slab starts at %llu, expected %llu", zPath,
                     (unsigned long long)slab.first, (unsigned long long)next);
        cr_assert_leq(slab.first + slab.n, pT->nElem);
        cr_assert_eq(parity_tensor_read(pRd, &slab, pBuf + slab.first * nSize, zErr, sizeof zErr),
                     0, "%s: read: %s", zPath, zErr);
        next += slab.n;
        nSlab++;
    }
    cr_assert_eq(next, pT->nElem);
    parity_tensor_reader_close(pRd);
    if (pnSlab) *pnSlab = nSlab;
    return pBuf;
}

static double *read_decoded(parity_capture *pCap, const char *zPath, uint64_t nMaxElem)
{
    const parity_tensor_info *pT = tensor_at(pCap, zPath, NULL);
    unsigned char *pRaw = read_raw(pCap, zPath, nMaxElem, NULL);
    double *aVal = calloc(pT->nElem ? pT->nElem : 1, sizeof(double));
    cr_assert_not_null(aVal);
    parity_decode(pT->dtype, pRaw, aVal, pT->nElem);
    free(pRaw);
    return aVal;
}

/* Values equal as binary64 bit patterns (so -0 differs from 0); NaN matches any NaN. */
static void expect_doubles(const char *zWhat, const double *aGot, const double *aExp, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (isnan(aExp[i])) {
            cr_assert(isnan(aGot[i]), "%s[%zu]: got %a, expected NaN", zWhat, i, aGot[i]);
        } else {
            cr_assert(memcmp(&aGot[i], &aExp[i], sizeof(double)) == 0,
                      "%s[%zu]: got %a, expected %a", zWhat, i, aGot[i], aExp[i]);
        }
    }
}

static void expect_decoded(parity_capture *pCap, const char *zPath, const double *aExp, size_t n)
{
    double *aGot = read_decoded(pCap, zPath, 3);   /* small slabs on purpose */
    expect_doubles(zPath, aGot, aExp, n);
    free(aGot);
}

static void expect_u16_bits(parity_capture *pCap, const char *zPath, const uint16_t *aExp, size_t n)
{
    unsigned char *pRaw = read_raw(pCap, zPath, 5, NULL);
    size_t i;
    for (i = 0; i < n; i++) {
        /* Storage form is little-endian. */
        uint16_t v = (uint16_t)(pRaw[2 * i] | pRaw[2 * i + 1] << 8);
        cr_assert_eq(v, aExp[i], "%s[%zu]: bits 0x%04x, expected 0x%04x", zPath, i, v, aExp[i]);
    }
    free(pRaw);
}

static void expect_u8_bits(parity_capture *pCap, const char *zPath, const uint8_t *aExp, size_t n)
{
    unsigned char *pRaw = read_raw(pCap, zPath, 5, NULL);
    size_t i;
    for (i = 0; i < n; i++)
        cr_assert_eq(pRaw[i], aExp[i], "%s[%zu]: 0x%02x, expected 0x%02x", zPath, i, pRaw[i], aExp[i]);
    free(pRaw);
}

/* Integer storage of n elements of nSize bytes, as signed or unsigned 64-bit values. */
static void expect_ints(parity_capture *pCap, const char *zPath, size_t nSize, int isSigned,
                        const int64_t *aExp, size_t n)
{
    unsigned char *pRaw = read_raw(pCap, zPath, 3, NULL);
    size_t i;
    for (i = 0; i < n; i++) {
        int64_t v = 0;
        const unsigned char *p = pRaw + i * nSize;
        switch (nSize) {
        case 1: v = isSigned ? (int64_t)(int8_t)p[0] : (int64_t)p[0]; break;
        case 2: { int16_t s; uint16_t u; memcpy(&s, p, 2); memcpy(&u, p, 2);
                  v = isSigned ? s : u; break; }
        case 4: { int32_t s; uint32_t u; memcpy(&s, p, 4); memcpy(&u, p, 4);
                  v = isSigned ? s : (int64_t)u; break; }
        case 8: memcpy(&v, p, 8); break;
        }
        cr_assert_eq(v, aExp[i], "%s[%zu]: %lld, expected %lld", zPath, i, (long long)v,
                     (long long)aExp[i]);
    }
    free(pRaw);
}

static int count_tmp_files(const char *zPrefix)
{
    DIR *pDir = opendir(g_zDir);
    struct dirent *pEnt;
    int n = 0;
    cr_assert_not_null(pDir);
    while ((pEnt = readdir(pDir)) != NULL)
        if (strncmp(pEnt->d_name, zPrefix, strlen(zPrefix)) == 0 && strstr(pEnt->d_name, ".tmp."))
            n++;
    closedir(pDir);
    return n;
}

static int count_dir_entries(void)
{
    DIR *pDir = opendir(g_zDir);
    struct dirent *pEnt;
    int n = 0;
    cr_assert_not_null(pDir);
    while ((pEnt = readdir(pDir)) != NULL)
        if (strcmp(pEnt->d_name, ".") != 0 && strcmp(pEnt->d_name, "..") != 0) n++;
    closedir(pDir);
    return n;
}

static int file_exists(const char *zPath)
{
    struct stat st;
    return stat(zPath, &st) == 0;
}

/* Sends stderr (fd 2) to zName in the test directory until stderr_restore, which returns
 * how many bytes were written there: HDF5's error stack must never reach the terminal. */
static int g_fdSavedErr = -1;
static char g_zErrFile[4200];

static void stderr_capture(const char *zName)
{
    int fd;
    path_in_dir(g_zErrFile, sizeof g_zErrFile, zName);
    fflush(stderr);
    g_fdSavedErr = dup(2);
    cr_assert_geq(g_fdSavedErr, 0);
    fd = open(g_zErrFile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(fd, 0);
    dup2(fd, 2);
    close(fd);
}

static long stderr_restore(void)
{
    struct stat st;
    fflush(stderr);
    dup2(g_fdSavedErr, 2);
    close(g_fdSavedErr);
    g_fdSavedErr = -1;
    cr_assert_eq(stat(g_zErrFile, &st), 0);
    if (st.st_size > 0) {   /* show what leaked */
        char zCmd[4400];
        snprintf(zCmd, sizeof zCmd, "head -c 2000 '%s' >&2", g_zErrFile);
        if (system(zCmd) != 0) fprintf(stderr, "(could not show %s)\n", g_zErrFile);
    }
    unlink(g_zErrFile);
    return (long)st.st_size;
}

static void writer_ok(parity_writer *pW, int rc, const char *zWhat)
{
    cr_assert_eq(rc, 0, "%s: %s", zWhat, parity_writer_error(pW));
}

/* ---------------------------------------------------------------------------------- */
/* Element types written by h5py                                                      */

TestSuite(capture_types, .init = setup_types, .fini = remove_dir, .timeout = 120);

Test(capture_types, listing_is_complete_and_sorted)
{
    static const char *const azExp[] = {
        "/bf16_float", "/bf16_i16_be", "/bf16_i16_fixed", "/bf16_i16_vlen", "/bf16_u16_fixed",
        "/bf16_u16_vlen", "/bool", "/bool_2d", "/complex", "/e4m3_float", "/e4m3_i8_fixed",
        "/e4m3_u8", "/e5m2_float", "/e5m2_u8_fixed", "/empty", "/f16", "/f16_be", "/f32_be",
        "/f32_le", "/f64_be", "/f64_le", "/i16", "/i16_be", "/i32", "/i64", "/i64_be", "/i8",
        "/null", "/scalar", "/strings", "/u16", "/u32", "/u32_be", "/u64", "/u8", "/vlen_string",
    };
    parity_capture *pCap = open_fixture("types.h5");
    size_t i, n = sizeof azExp / sizeof azExp[0];
    char zExpFile[4200];
    cr_assert_eq(parity_capture_count(pCap), n, "%zu tensors listed, expected %zu",
                 parity_capture_count(pCap), n);
    for (i = 0; i < n; i++) {
        cr_assert_str_eq(parity_capture_tensor(pCap, i)->zPath, azExp[i]);
        cr_assert_eq(parity_capture_find(pCap, azExp[i]), (long)i);
        cr_assert_eq(parity_capture_find(pCap, azExp[i] + 1), (long)i, "find without '/'");
    }
    cr_assert_null(parity_capture_tensor(pCap, n));
    cr_assert_eq(parity_capture_find(pCap, "/nope"), -1);
    cr_assert_eq(parity_capture_find(pCap, "/f1"), -1);
    path_in_dir(zExpFile, sizeof zExpFile, "types.h5");
    cr_assert_str_eq(parity_capture_filename(pCap), zExpFile);
    parity_capture_close(pCap);
}

Test(capture_types, float16_from_numpy)
{
    static const uint16_t aBits[] = { 0x0000, 0x8000, 0x3C00, 0xC000, 0x7BFF, 0x0001, 0x0003,
                                      0x0400, 0x7C00, 0xFC00, 0x7E00, 0x2E66 };
    const double aExp[] = { 0.0, -0.0, 1.0, -2.0, 65504.0, 0x1p-24, 0x3p-24, 0x1p-14,
                            INFINITY, -INFINITY, NAN, 0.0999755859375 };
    static const uint16_t aBeBits[] = { 0x3C00, 0xC000, 0x7BFF, 0x0001 };
    const double aBeExp[] = { 1.0, -2.0, 65504.0, 0x1p-24 };
    uint64_t dim = 12, dim4 = 4;
    parity_capture *pCap = open_fixture("types.h5");
    double *aGot;

    expect_tensor(pCap, "/f16", PARITY_DT_F16, 1, &dim);
    expect_u16_bits(pCap, "/f16", aBits, 12);
    expect_decoded(pCap, "/f16", aExp, 12);
    aGot = read_decoded(pCap, "/f16", 100);
    cr_assert(signbit(aGot[1]) && aGot[1] == 0.0, "-0 keeps its sign");
    cr_assert(!signbit(aGot[0]));
    free(aGot);
    /* '>f2': big-endian half, delivered in little-endian storage form. */
    expect_tensor(pCap, "/f16_be", PARITY_DT_F16, 1, &dim4);
    expect_u16_bits(pCap, "/f16_be", aBeBits, 4);
    expect_decoded(pCap, "/f16_be", aBeExp, 4);
    parity_capture_close(pCap);
}

Test(capture_types, float32_float64_both_byte_orders)
{
    const double aF32Be[] = { 1.5, -0.0, (double)3.0e38f, 0x1p-149, INFINITY };
    const double aF64Be[] = { 0.1, -1e308, 0x1p-1074, -INFINITY };
    const double aF32Le[] = { 1.25, -7.5, (double)0.1f, (double)1e-40f };
    const double aF64Le[] = { 0x1p60 + 256.0, -3.25 };
    uint64_t d5 = 5, d4 = 4, d2x2[2] = { 2, 2 }, d2 = 2;
    parity_capture *pCap = open_fixture("types.h5");
    unsigned char *pRaw;
    float f;

    expect_tensor(pCap, "/f32_be", PARITY_DT_F32, 1, &d5);
    expect_decoded(pCap, "/f32_be", aF32Be, 5);
    /* The storage form is the native little-endian float, not the file's bytes. */
    pRaw = read_raw(pCap, "/f32_be", 2, NULL);
    memcpy(&f, pRaw, 4);
    cr_assert_eq(f, 1.5f);
    free(pRaw);
    expect_tensor(pCap, "/f64_be", PARITY_DT_F64, 1, &d4);
    expect_decoded(pCap, "/f64_be", aF64Be, 4);
    expect_tensor(pCap, "/f32_le", PARITY_DT_F32, 2, d2x2);
    expect_decoded(pCap, "/f32_le", aF32Le, 4);
    expect_tensor(pCap, "/f64_le", PARITY_DT_F64, 1, &d2);
    expect_decoded(pCap, "/f64_le", aF64Le, 2);
    parity_capture_close(pCap);
}

Test(capture_types, bfloat16_bit_patterns_in_integers)
{
    static const char *const azPath[] = { "/bf16_u16_vlen", "/bf16_u16_fixed", "/bf16_i16_vlen",
                                          "/bf16_i16_fixed", "/bf16_i16_be" };
    static const uint16_t aBits[] = { 0x3F80, 0xC020, 0x7F80, 0xFF80, 0x7FC0, 0x0001, 0x8000,
                                      0x7F7F };
    const double aExp[] = { 1.0, -2.5, INFINITY, -INFINITY, NAN, 0x1p-133, -0.0, 0x1.fep127 };
    uint64_t dim = 8;
    parity_capture *pCap = open_fixture("types.h5");
    size_t i;

    for (i = 0; i < sizeof azPath / sizeof azPath[0]; i++) {
        const parity_tensor_info *pT = expect_tensor(pCap, azPath[i], PARITY_DT_BF16, 1, &dim);
        const parity_attr *pMark = parity_attr_find(pT->aAttr, pT->nAttr, "dtype");
        cr_assert_not_null(pMark, "%s: the dtype attribute is kept", azPath[i]);
        cr_assert_eq(pMark->kind, PARITY_ATTR_STRING);
        cr_assert_str_eq(pMark->azStr[0], "bfloat16", "%s: fixed-length attr read whole", azPath[i]);
        expect_u16_bits(pCap, azPath[i], aBits, 8);
        expect_decoded(pCap, azPath[i], aExp, 8);
    }
    /* A genuine 16-bit HDF5 float with 8 exponent bits is bf16 without any attribute. */
    {
        const parity_tensor_info *pT = expect_tensor(pCap, "/bf16_float", PARITY_DT_BF16, 1, &dim);
        cr_assert_null(parity_attr_find(pT->aAttr, pT->nAttr, "dtype"));
        expect_u16_bits(pCap, "/bf16_float", aBits, 8);
        expect_decoded(pCap, "/bf16_float", aExp, 8);
    }
    parity_capture_close(pCap);
}

Test(capture_types, float8_bit_patterns_in_integers)
{
    static const uint8_t aE4m3[] = { 0x7E, 0x7F, 0x01, 0x38, 0xB8, 0x80, 0x08, 0xFE };
    const double aE4m3Exp[] = { 448.0, NAN, 0x1p-9, 1.0, -1.0, -0.0, 0x1p-6, -448.0 };
    static const uint8_t aE5m2[] = { 0x3C, 0x7B, 0x7C, 0xFC, 0x7E, 0x01, 0x04, 0x80 };
    const double aE5m2Exp[] = { 1.0, 57344.0, INFINITY, -INFINITY, NAN, 0x1p-16, 0x1p-14, -0.0 };
    uint64_t dim = 8;
    parity_capture *pCap = open_fixture("types.h5");

    expect_tensor(pCap, "/e4m3_u8", PARITY_DT_F8E4M3FN, 1, &dim);
    expect_u8_bits(pCap, "/e4m3_u8", aE4m3, 8);
    expect_decoded(pCap, "/e4m3_u8", aE4m3Exp, 8);
    expect_tensor(pCap, "/e4m3_i8_fixed", PARITY_DT_F8E4M3FN, 1, &dim);
    expect_u8_bits(pCap, "/e4m3_i8_fixed", aE4m3, 8);
    expect_decoded(pCap, "/e4m3_i8_fixed", aE4m3Exp, 8);
    expect_tensor(pCap, "/e5m2_u8_fixed", PARITY_DT_F8E5M2, 1, &dim);
    expect_u8_bits(pCap, "/e5m2_u8_fixed", aE5m2, 8);
    expect_decoded(pCap, "/e5m2_u8_fixed", aE5m2Exp, 8);
    /* Genuine 8-bit HDF5 float types: read as bits, so 0x7E is 448, not HDF5's NaN. */
    expect_tensor(pCap, "/e4m3_float", PARITY_DT_F8E4M3FN, 1, &dim);
    expect_u8_bits(pCap, "/e4m3_float", aE4m3, 8);
    expect_decoded(pCap, "/e4m3_float", aE4m3Exp, 8);
    expect_tensor(pCap, "/e5m2_float", PARITY_DT_F8E5M2, 1, &dim);
    expect_u8_bits(pCap, "/e5m2_float", aE5m2, 8);
    expect_decoded(pCap, "/e5m2_float", aE5m2Exp, 8);
    parity_capture_close(pCap);
}

Test(capture_types, bool_enum)
{
    static const uint8_t aBits[] = { 1, 0, 1, 1, 0 };
    const double aExp[] = { 1, 0, 1, 1, 0 };
    static const uint8_t aBits2[] = { 0, 1, 1, 0 };
    uint64_t dim = 5, d2x2[2] = { 2, 2 };
    parity_capture *pCap = open_fixture("types.h5");

    expect_tensor(pCap, "/bool", PARITY_DT_BOOL, 1, &dim);
    expect_u8_bits(pCap, "/bool", aBits, 5);
    expect_decoded(pCap, "/bool", aExp, 5);
    expect_tensor(pCap, "/bool_2d", PARITY_DT_BOOL, 2, d2x2);
    expect_u8_bits(pCap, "/bool_2d", aBits2, 4);
    parity_capture_close(pCap);
}

Test(capture_types, all_integer_types)
{
    static const struct {
        const char *zPath;
        parity_dtype dt;
        size_t nSize;
        int isSigned;
        int64_t aExp[4];
    } aCase[] = {
        { "/i8", PARITY_DT_I8, 1, 1, { -128, -1, 0, 127 } },
        { "/i16", PARITY_DT_I16, 2, 1, { -32768, -1, 0, 32767 } },
        { "/i16_be", PARITY_DT_I16, 2, 1, { -32768, -1, 0, 32767 } },
        { "/i32", PARITY_DT_I32, 4, 1, { INT32_MIN, -1, 0, INT32_MAX } },
        { "/i64", PARITY_DT_I64, 8, 1, { INT64_MIN, -1, 0, INT64_MAX } },
        { "/i64_be", PARITY_DT_I64, 8, 1, { INT64_MIN, -1, 0, INT64_MAX } },
        { "/u8", PARITY_DT_U8, 1, 0, { 0, 1, 200, 255 } },
        { "/u16", PARITY_DT_U16, 2, 0, { 0, 1, 40000, 65535 } },
        { "/u32", PARITY_DT_U32, 4, 0, { 0, 1, 3000000000LL, 4294967295LL } },
        { "/u32_be", PARITY_DT_U32, 4, 0, { 0, 1, 3000000000LL, 4294967295LL } },
        /* u64 compared as bit patterns: 2^63 and 2^64 - 1. */
        { "/u64", PARITY_DT_U64, 8, 0, { 0, 1, INT64_MIN, -1 } },
    };
    uint64_t dim = 4;
    parity_capture *pCap = open_fixture("types.h5");
    size_t i;
    int j;

    for (i = 0; i < sizeof aCase / sizeof aCase[0]; i++) {
        expect_tensor(pCap, aCase[i].zPath, aCase[i].dt, 1, &dim);
        cr_assert_eq(parity_dtype_size(aCase[i].dt), aCase[i].nSize);
        expect_ints(pCap, aCase[i].zPath, aCase[i].nSize, aCase[i].isSigned, aCase[i].aExp, 4);
        if (aCase[i].nSize <= 4) {
            double aExp[4];
            for (j = 0; j < 4; j++) aExp[j] = (double)aCase[i].aExp[j];
            expect_decoded(pCap, aCase[i].zPath, aExp, 4);
        }
    }
    {
        const double aExp[] = { 0.0, 1.0, 0x1p63, 0x1p64 };   /* 2^64 - 1 rounds to 2^64 */
        expect_decoded(pCap, "/u64", aExp, 4);
    }
    parity_capture_close(pCap);
}

Test(capture_types, scalar_and_zero_size)
{
    uint64_t aEmpty[2] = { 0, 3 };
    parity_capture *pCap = open_fixture("types.h5");
    const parity_tensor_info *pT = expect_tensor(pCap, "/scalar", PARITY_DT_F32, 0, NULL);
    const double aExp[] = { 2.5 };
    size_t nSlab = 0;
    unsigned char *pRaw;

    cr_assert_eq(pT->nElem, 1);
    expect_decoded(pCap, "/scalar", aExp, 1);
    pRaw = read_raw(pCap, "/scalar", 1, &nSlab);
    cr_assert_eq(nSlab, 1, "a scalar is one slab");
    free(pRaw);

    pT = expect_tensor(pCap, "/empty", PARITY_DT_F32, 2, aEmpty);
    cr_assert_eq(pT->nElem, 0);
    pRaw = read_raw(pCap, "/empty", 4, &nSlab);
    cr_assert_eq(nSlab, 1, "a zero-size tensor is one empty slab");
    free(pRaw);
    parity_capture_close(pCap);
}

Test(capture_types, strings_are_unsupported)
{
    parity_capture *pCap = open_fixture("types.h5");
    expect_tensor_error(pCap, "/strings", "unsupported element type");
    expect_tensor_error(pCap, "/strings", "string");
    expect_tensor_error(pCap, "/vlen_string", "unsupported element type");
    expect_tensor_error(pCap, "/null", "null dataspace");
    expect_tensor_error(pCap, "/complex", "compound");   /* h5py's complex: {r, i} */
    parity_capture_close(pCap);
}

/* Raw bytes of the file at an offset. */
static unsigned char *read_file_bytes(const char *zFile, uint64_t offset, size_t n)
{
    unsigned char *p = malloc(n ? n : 1);
    FILE *pIn = fopen(zFile, "rb");
    cr_assert_not_null(p);
    cr_assert_not_null(pIn, "%s: %s", zFile, strerror(errno));
    cr_assert_eq(fseeko(pIn, (off_t)offset, SEEK_SET), 0);
    cr_assert_eq(fread(p, 1, n, pIn), n, "%s: short read at %llu", zFile,
                 (unsigned long long)offset);
    fclose(pIn);
    return p;
}

/* parity_tensor_reader_raw_offset: offered exactly for contiguous little-endian (or
 * single-byte) non-empty arrays, and then the file bytes are what parity_tensor_read
 * gives. */
Test(capture_types, raw_offset_only_when_bytes_match)
{
    parity_capture *pCap = open_fixture("types.h5");
    size_t i, nRaw = 0;
    for (i = 0; i < parity_capture_count(pCap); i++) {
        const parity_tensor_info *pT = parity_capture_tensor(pCap, i);
        parity_tensor_reader *pRd = NULL;
        char zErr[PARITY_ERR_LEN] = "";
        uint64_t offset = 0;
        const char *zFile = NULL;
        int expected, has;
        if (pT->zError) continue;
        expected = strstr(pT->zPath, "_be") == NULL && pT->rank > 0 && pT->nElem > 0;
        cr_assert_eq(parity_tensor_reader_open(pCap, i, &pRd, zErr, sizeof zErr), 0, "%s", zErr);
        has = parity_tensor_reader_raw_offset(pRd, &offset, &zFile);
        parity_tensor_reader_close(pRd);
        cr_assert_eq(has, expected, "%s: raw offset %s", pT->zPath, has ? "offered" : "refused");
        if (has) {
            size_t nBytes = pT->nElem * parity_dtype_size(pT->dtype);
            unsigned char *pRaw = read_raw(pCap, pT->zPath, 1000, NULL);
            unsigned char *pFile;
            cr_assert_str_eq(zFile, parity_capture_filename(pCap));
            pFile = read_file_bytes(zFile, offset, nBytes);
            cr_assert(memcmp(pRaw, pFile, nBytes) == 0, "%s: file bytes at %llu differ from "
                      "the read", pT->zPath, (unsigned long long)offset);
            free(pFile);
            free(pRaw);
            nRaw++;
        }
    }
    cr_assert_eq(nRaw, 23);
    parity_capture_close(pCap);
}

static int g_nBeat;
static void count_beat(void) { g_nBeat++; }

Test(capture_types, heartbeat_is_called)
{
    parity_capture *pCap;
    unsigned char *pRaw;
    int nAfterOpen;
    g_nBeat = 0;
    parity_capture_set_heartbeat(count_beat);
    pCap = open_fixture("types.h5");
    nAfterOpen = g_nBeat;
    cr_assert_geq(nAfterOpen, (int)parity_capture_count(pCap), "one beat per dataset at least");
    pRaw = read_raw(pCap, "/f16", 1, NULL);   /* 12 slabs */
    cr_assert_geq(g_nBeat - nAfterOpen, 12, "one beat per slab");
    free(pRaw);
    parity_capture_set_heartbeat(NULL);
    parity_capture_close(pCap);
}

/* ---------------------------------------------------------------------------------- */
/* Opening files that are not captures                                                */

TestSuite(capture_open, .init = setup_empty, .fini = remove_dir, .timeout = 60);

Test(capture_open, missing_empty_and_foreign_files)
{
    char zFile[4200], zErr[PARITY_ERR_LEN];
    parity_capture *pCap = (parity_capture *)&zErr;   /* must be reset to NULL */
    FILE *pOut;

    path_in_dir(zFile, sizeof zFile, "missing.h5");
    zErr[0] = 0;
    cr_assert_eq(parity_capture_open(zFile, &pCap, zErr, sizeof zErr), -1);
    cr_assert_null(pCap);
    cr_assert_not_null(strstr(zErr, "missing.h5"), "%s", zErr);
    cr_assert_not_null(strstr(zErr, strerror(ENOENT)), "%s", zErr);

    path_in_dir(zFile, sizeof zFile, "empty.h5");
    pOut = fopen(zFile, "wb");
    cr_assert_not_null(pOut);
    fclose(pOut);
    pCap = (parity_capture *)&zErr;
    cr_assert_eq(parity_capture_open(zFile, &pCap, zErr, sizeof zErr), -1);
    cr_assert_null(pCap);
    cr_assert_not_null(strstr(zErr, "not an HDF5 file"), "%s", zErr);

    /* A real capture cut in half: an HDF5 signature, then nothing. */
    {
        parity_writer *pW = NULL;
        float aVal[4096];
        uint64_t dim = 4096;
        size_t i;
        struct stat st;
        for (i = 0; i < 4096; i++) aVal[i] = (float)i;
        path_in_dir(zFile, sizeof zFile, "cut.h5");
        cr_assert_eq(parity_writer_open(zFile, &pW, zErr, sizeof zErr), 0, "%s", zErr);
        writer_ok(pW, parity_writer_tensor(pW, "/x", PARITY_DT_F32, 1, &dim, aVal), "x");
        writer_ok(pW, parity_writer_tensor(pW, "/y", PARITY_DT_F32, 1, &dim, aVal), "y");
        cr_assert_eq(parity_writer_close(pW, zErr, sizeof zErr), 0, "%s", zErr);
        cr_assert_eq(stat(zFile, &st), 0);
        cr_assert_eq(truncate(zFile, st.st_size / 2), 0);
        /* Printing on, as in a fresh process (the writer above switched it off). */
        H5Eset_auto2(H5E_DEFAULT, (H5E_auto2_t)H5Eprint2, stderr);
        stderr_capture("stderr.txt");
        pCap = (parity_capture *)&zErr;
        cr_assert_eq(parity_capture_open(zFile, &pCap, zErr, sizeof zErr), -1);
        cr_assert_eq(stderr_restore(), 0, "HDF5's error stack leaked to stderr");
        cr_assert_null(pCap);
        cr_assert_not_null(strstr(zErr, "cut.h5"), "%s", zErr);
        cr_assert(strstr(zErr, "truncated") || strstr(zErr, "corrupt"), "%s", zErr);
    }

    path_in_dir(zFile, sizeof zFile, "text.h5");
    pOut = fopen(zFile, "wb");
    cr_assert_not_null(pOut);
    fputs("this is not HDF5 at all\n", pOut);
    fclose(pOut);
    cr_assert_eq(parity_capture_open(zFile, &pCap, zErr, sizeof zErr), -1);
    cr_assert_not_null(strstr(zErr, "not an HDF5 file"), "%s", zErr);
}

/* ---------------------------------------------------------------------------------- */
/* Metadata attributes                                                                */

TestSuite(capture_attrs, .init = setup_attrs, .fini = remove_dir, .timeout = 60);

Test(capture_attrs, vlen_strings_and_int64_order)
{
    uint64_t dim = 3;
    parity_capture *pCap = open_fixture("attrs.h5");
    const parity_tensor_info *pT = expect_tensor(pCap, "/vlen", PARITY_DT_F32, 1, &dim);
    const parity_attr *pEps;
    char zBuf[64];

    cr_assert_str_eq(pT->zOp, "matmul");
    cr_assert_eq(pT->nInput, 2);
    cr_assert_str_eq(pT->azInput[0], "/x", "relative input paths gain a leading '/'");
    cr_assert_str_eq(pT->azInput[1], "/w");
    cr_assert_eq(pT->hasOrder, 1);
    cr_assert_eq(pT->iOrder, 3);
    cr_assert_eq(pT->nAttr, 4, "every attribute is kept (eps, inputs, op, order)");
    cr_assert_str_eq(pT->aAttr[0].zName, "eps", "attributes in name order");
    pEps = parity_attr_find(pT->aAttr, pT->nAttr, "eps");
    cr_assert_not_null(pEps);
    cr_assert_eq(pEps->kind, PARITY_ATTR_FLOAT);
    cr_assert_eq(pEps->aFloat[0], 1e-5);
    cr_assert_str_eq(parity_attr_format(parity_attr_find(pT->aAttr, pT->nAttr, "inputs"), zBuf,
                                        sizeof zBuf), "[\"x\", \"/w\"]");
    parity_capture_close(pCap);
}

Test(capture_attrs, fixed_length_strings_and_int32_order)
{
    uint64_t dim = 3;
    parity_capture *pCap = open_fixture("attrs.h5");
    const parity_tensor_info *pT = expect_tensor(pCap, "/fixed", PARITY_DT_F32, 1, &dim);

    cr_assert_str_eq(pT->zOp, "softmax");
    cr_assert_eq(pT->nInput, 2);
    cr_assert_str_eq(pT->azInput[0], "/a", "S8 padding is stripped");
    cr_assert_str_eq(pT->azInput[1], "/b");
    cr_assert_eq(pT->hasOrder, 1);
    cr_assert_eq(pT->iOrder, -7);

    pT = expect_tensor(pCap, "/inputs_scalar", PARITY_DT_F32, 1, &dim);
    cr_assert_eq(pT->nInput, 1, "a single string is one input");
    cr_assert_str_eq(pT->azInput[0], "/x");
    cr_assert_null(pT->zOp);
    cr_assert_eq(pT->hasOrder, 0);

    /* attrs["inputs"] = [] (an op without tensor operands): numpy makes the empty list a
     * float64 array of length 0. No inputs, not a type error. */
    pT = expect_tensor(pCap, "/inputs_empty", PARITY_DT_F32, 1, &dim);
    cr_assert_str_eq(pT->zOp, "arange");
    cr_assert_eq(pT->nInput, 0);
    parity_capture_close(pCap);
}

Test(capture_attrs, wrong_types_are_tensor_errors)
{
    parity_capture *pCap = open_fixture("attrs.h5");
    const parity_tensor_info *pT;

    expect_tensor_error(pCap, "/order_float", "'order'");
    expect_tensor_error(pCap, "/order_string", "'order'");
    expect_tensor_error(pCap, "/order_array", "'order'");
    pT = tensor_at(pCap, "/order_float", NULL);
    cr_assert_eq(pT->hasOrder, 0);
    expect_tensor_error(pCap, "/op_int", "'op'");
    cr_assert_null(tensor_at(pCap, "/op_int", NULL)->zOp);
    expect_tensor_error(pCap, "/inputs_int", "'inputs'");
    expect_tensor_error(pCap, "/dtype_unknown", "float13");
    expect_tensor_error(pCap, "/dtype_unknown", "dtype");
    expect_tensor_error(pCap, "/dtype_bf16_on_f32", "bfloat16");
    expect_tensor_error(pCap, "/dtype_bf16_on_f32", "float32");
    expect_tensor_error(pCap, "/dtype_int", "'dtype'");
    /* A dtype attribute that names the dataset's own type is fine. */
    {
        uint64_t dim = 3;
        const double aExp[] = { 0, 1, 2 };
        expect_tensor(pCap, "/dtype_agrees", PARITY_DT_F32, 1, &dim);
        expect_decoded(pCap, "/dtype_agrees", aExp, 3);
    }
    cr_assert_eq(parity_capture_count(pCap), 13);
    parity_capture_close(pCap);
}

/* ---------------------------------------------------------------------------------- */
/* Groups and links                                                                   */

TestSuite(capture_links, .init = setup_links, .fini = remove_dir, .timeout = 60);

Test(capture_links, each_object_once_and_no_external_files)
{
    static const char *const azExp[] = { "/a/b/c", "/extraw", "/m_alias", "/vds" };
    uint64_t d3 = 3, d2 = 2;
    const double aC[] = { 1, 2, 3 };
    const double aAlias[] = { 7, 8 };
    parity_capture *pCap = open_fixture("links.h5");
    size_t i, n = sizeof azExp / sizeof azExp[0];

    for (i = 0; i < parity_capture_count(pCap) && i < n; i++)
        cr_assert_str_eq(parity_capture_tensor(pCap, i)->zPath, azExp[i]);
    cr_assert_eq(parity_capture_count(pCap), n, "%zu tensors listed, expected %zu",
                 parity_capture_count(pCap), n);
    /* Soft links are not listed again; a hard-linked object is listed under the first
     * of its names in name order. */
    cr_assert_eq(parity_capture_find(pCap, "/soft"), -1);
    cr_assert_eq(parity_capture_find(pCap, "/a/soft_to_group/c"), -1);
    cr_assert_eq(parity_capture_find(pCap, "/z/orig"), -1);
    /* External links are not followed. */
    cr_assert_eq(parity_capture_find(pCap, "/ext"), -1);
    cr_assert_eq(parity_capture_find(pCap, "/secret"), -1);
    cr_assert_eq(parity_capture_find(pCap, "/ext_grp/secret2"), -1);

    expect_tensor(pCap, "/a/b/c", PARITY_DT_F32, 1, &d3);
    expect_decoded(pCap, "/a/b/c", aC, 3);
    cr_assert_eq(parity_capture_find(pCap, "a/b/c"), 0);
    expect_tensor(pCap, "/m_alias", PARITY_DT_I32, 1, &d2);
    expect_decoded(pCap, "/m_alias", aAlias, 2);

    expect_tensor_error(pCap, "/vds", "virtual");
    expect_tensor_error(pCap, "/extraw", "external raw storage");
    parity_capture_close(pCap);
}

Test(capture_links, external_target_is_never_opened)
{
    /* Replace the link targets and the VDS source with garbage: if the reader opened any
     * of them, listing or reading would see it. The capture itself still opens cleanly. */
    static const char *const azVictim[] = { "target.h5", "vsrc.h5", "raw.bin" };
    char zFile[4200];
    parity_capture *pCap;
    size_t i;
    for (i = 0; i < 3; i++) {
        FILE *pOut;
        path_in_dir(zFile, sizeof zFile, azVictim[i]);
        pOut = fopen(zFile, "wb");
        cr_assert_not_null(pOut);
        fputs("garbage", pOut);
        fclose(pOut);
        chmod(zFile, 0);
    }
    pCap = open_fixture("links.h5");
    cr_assert_eq(parity_capture_count(pCap), 4);
    cr_assert_null(tensor_at(pCap, "/a/b/c", NULL)->zError);
    cr_assert_null(tensor_at(pCap, "/m_alias", NULL)->zError);
    expect_tensor_error(pCap, "/vds", "virtual");
    expect_tensor_error(pCap, "/extraw", "external");
    parity_capture_close(pCap);
}

/* ---------------------------------------------------------------------------------- */
/* Chunked, compressed data read in slabs                                             */

TestSuite(capture_chunked, .init = setup_chunked, .fini = remove_dir, .timeout = 120);

/* Same formula as make_h5py_fixtures.py's chunk_value. */
static double chunk_value(uint64_t i) { return (double)(i * 37 % 1000) * 0.125 - 60.0; }

static void expect_chunk_values(parity_capture *pCap, const char *zPath, uint64_t nMaxElem,
                                size_t nSlabExpected)
{
    const parity_tensor_info *pT = tensor_at(pCap, zPath, NULL);
    unsigned char *pRaw;
    double *aVal;
    size_t nSlab = 0;
    uint64_t i;

    pRaw = read_raw(pCap, zPath, nMaxElem, &nSlab);
    aVal = malloc(pT->nElem * sizeof(double));
    cr_assert_not_null(aVal);
    parity_decode(pT->dtype, pRaw, aVal, pT->nElem);
    for (i = 0; i < pT->nElem; i++)
        cr_assert_eq(aVal[i], chunk_value(i), "%s (budget %llu): element %llu is %g, expected %g",
                     zPath, (unsigned long long)nMaxElem, (unsigned long long)i, aVal[i],
                     chunk_value(i));
    if (nSlabExpected)
        cr_assert_eq(nSlab, nSlabExpected, "%s (budget %llu): %zu slabs, expected %zu", zPath,
                     (unsigned long long)nMaxElem, nSlab, nSlabExpected);
    free(aVal);
    free(pRaw);
}

Test(capture_chunked, gzip_chunks_across_many_slabs)
{
    uint64_t aDim[2] = { 37, 10 }, aDim3[3] = { 6, 7, 9 };
    static const uint64_t aBudget[] = { 1, 2, 5, 9, 20, 27, 60, 63, 64, 200, 378, 1000 };
    parity_capture *pCap = open_fixture("chunked.h5");
    parity_tensor_reader *pRd = NULL;
    char zErr[PARITY_ERR_LEN];
    size_t i, iGz;
    const parity_tensor_info *pT = expect_tensor(pCap, "/gz", PARITY_DT_F32, 2, aDim);
    const uint64_t *aChunk;

    tensor_at(pCap, "/gz", &iGz);
    cr_assert_eq(parity_tensor_reader_open(pCap, iGz, &pRd, zErr, sizeof zErr), 0, "%s", zErr);
    aChunk = parity_tensor_reader_chunk(pRd);
    cr_assert_eq(aChunk[0], 8);
    cr_assert_eq(aChunk[1], 5);
    cr_assert_eq(row_align(pT, pRd, 100), 8, "split along rows: align to the chunk's 8 rows");
    cr_assert_eq(row_align(pT, pRd, 7), 5, "split inside a row: align to the chunk's 5 columns");
    {
        uint64_t offset;
        const char *zFile;
        cr_assert_eq(parity_tensor_reader_raw_offset(pRd, &offset, &zFile), 0, "compressed");
    }
    parity_tensor_reader_close(pRd);

    /* Budget 100: 10 rows fit, aligned down to 8: 8+8+8+8+5 rows. */
    expect_chunk_values(pCap, "/gz", 100, 5);
    /* Budget 7: split along columns, aligned to 5: two slabs per row. */
    expect_chunk_values(pCap, "/gz", 7, 74);
    /* Budget 1: one element per slab. */
    expect_chunk_values(pCap, "/gz", 1, 370);
    expect_chunk_values(pCap, "/gz", 370, 1);
    expect_chunk_values(pCap, "/gz", 1u << 20, 1);

    expect_tensor(pCap, "/gz3", PARITY_DT_F64, 3, aDim3);
    for (i = 0; i < sizeof aBudget / sizeof aBudget[0]; i++)
        expect_chunk_values(pCap, "/gz3", aBudget[i], 0);
    parity_capture_close(pCap);
}

Test(capture_chunked, contiguous_has_no_chunks)
{
    uint64_t aDim[2] = { 37, 10 };
    parity_capture *pCap = open_fixture("chunked.h5");
    parity_tensor_reader *pRd = NULL;
    char zErr[PARITY_ERR_LEN];
    size_t i;
    int iDim;
    const parity_tensor_info *pT = expect_tensor(pCap, "/contig", PARITY_DT_F32, 2, aDim);

    tensor_at(pCap, "/contig", &i);
    cr_assert_eq(parity_tensor_reader_open(pCap, i, &pRd, zErr, sizeof zErr), 0, "%s", zErr);
    for (iDim = 0; iDim < PARITY_MAX_RANK; iDim++)
        cr_assert_eq(parity_tensor_reader_chunk(pRd)[iDim], 0);
    cr_assert_eq(row_align(pT, pRd, 100), 1);
    {
        uint64_t offset;
        const char *zFile;
        cr_assert_eq(parity_tensor_reader_raw_offset(pRd, &offset, &zFile), 1);
    }
    parity_tensor_reader_close(pRd);
    expect_chunk_values(pCap, "/contig", 100, 4);
    expect_chunk_values(pCap, "/contig", 3, 148);
    parity_capture_close(pCap);
}

Test(capture_chunked, filter_missing_from_libhdf5)
{
    /* h5py's LZF filter lives in h5py: libhdf5 alone cannot inflate it. Either the listing
     * refuses the tensor or the read fails cleanly, saying why. */
    parity_capture *pCap = open_fixture("chunked.h5");
    size_t i;
    const parity_tensor_info *pT = tensor_at(pCap, "/lzf", &i);
    if (pT->zError) {
        cr_assert_not_null(strstr(pT->zError, "filter"), "%s", pT->zError);
    } else {
        parity_tensor_reader *pRd = NULL;
        parity_slab_plan plan;
        parity_slab slab;
        float aBuf[370];
        char zErr[PARITY_ERR_LEN] = "";
        cr_assert_eq(parity_tensor_reader_open(pCap, i, &pRd, zErr, sizeof zErr), 0, "%s", zErr);
        parity_slab_plan_init(&plan, pT->rank, pT->aDim, 370, 1);
        cr_assert_eq(parity_slab_next(&plan, &slab), 1);
        stderr_capture("stderr.txt");
        cr_assert_eq(parity_tensor_read(pRd, &slab, aBuf, zErr, sizeof zErr), -1);
        cr_assert_eq(stderr_restore(), 0, "HDF5's error stack leaked to stderr");
        cr_assert_not_null(strstr(zErr, "filter"), "%s", zErr);
        parity_tensor_reader_close(pRd);
    }
    parity_capture_close(pCap);
}

/* ---------------------------------------------------------------------------------- */
/* Root attributes                                                                    */

TestSuite(capture_root, .init = setup_root, .fini = remove_dir, .timeout = 60);

static const parity_attr *root_attr(parity_capture *pCap, const char *zName,
                                    parity_attr_kind kind, int isArray, size_t n,
                                    const char *zFormat)
{
    size_t nAttr;
    const parity_attr *aAttr = parity_capture_root_attrs(pCap, &nAttr);
    const parity_attr *pA = parity_attr_find(aAttr, nAttr, zName);
    char zBuf[256];
    cr_assert_not_null(pA, "root attribute %s missing", zName);
    cr_assert_str_eq(pA->zName, zName);
    cr_assert_eq(pA->kind, kind, "%s: kind %d, expected %d", zName, pA->kind, kind);
    cr_assert_eq(pA->isArray, isArray, "%s: isArray %d", zName, pA->isArray);
    cr_assert_eq(pA->n, n, "%s: n %zu, expected %zu", zName, pA->n, n);
    cr_assert_str_eq(parity_attr_format(pA, zBuf, sizeof zBuf), zFormat, "%s formats as %s",
                     zName, zBuf);
    return pA;
}

Test(capture_root, every_kind)
{
    static const char *const azName[] = { "bytes_vlen", "compound", "empty_ints", "f32",
        "fixed", "fixed_strs", "flag", "flags", "float", "floats", "grid", "int", "ints",
        "model", "neg_i8", "strs", "u16", "utf8" };
    parity_capture *pCap = open_fixture("root.h5");
    const parity_attr *aAttr, *pA;
    size_t nAttr, i;

    aAttr = parity_capture_root_attrs(pCap, &nAttr);
    cr_assert_eq(nAttr, sizeof azName / sizeof azName[0], "%zu root attributes", nAttr);
    for (i = 0; i < nAttr; i++) cr_assert_str_eq(aAttr[i].zName, azName[i], "name order");
    cr_assert_null(parity_attr_find(aAttr, nAttr, "absent"));
    cr_assert_eq(parity_capture_count(pCap), 0);

    pA = root_attr(pCap, "model", PARITY_ATTR_STRING, 0, 1, "mlp");
    cr_assert_str_eq(pA->azStr[0], "mlp");
    root_attr(pCap, "fixed", PARITY_ATTR_STRING, 0, 1, "abc");
    root_attr(pCap, "bytes_vlen", PARITY_ATTR_STRING, 0, 1, "raw");
    root_attr(pCap, "utf8", PARITY_ATTR_STRING, 0, 1, "caf\xc3\xa9");
    pA = root_attr(pCap, "int", PARITY_ATTR_INT, 0, 1, "7");
    cr_assert_eq(pA->aInt[0], 7);
    root_attr(pCap, "neg_i8", PARITY_ATTR_INT, 0, 1, "-5");
    root_attr(pCap, "u16", PARITY_ATTR_INT, 0, 1, "65535");
    pA = root_attr(pCap, "float", PARITY_ATTR_FLOAT, 0, 1, "0.1");   /* shortest exact form */
    cr_assert_eq(pA->aFloat[0], 0.1);
    pA = root_attr(pCap, "f32", PARITY_ATTR_FLOAT, 0, 1, "0.10000000149011612");
    cr_assert_eq(pA->aFloat[0], (double)0.1f);
    pA = root_attr(pCap, "ints", PARITY_ATTR_INT, 1, 3, "[1, 2, 3]");
    cr_assert_eq(pA->aInt[2], 3);
    pA = root_attr(pCap, "floats", PARITY_ATTR_FLOAT, 1, 2, "[0.5, -1.5]");
    cr_assert_eq(pA->aFloat[1], -1.5);
    pA = root_attr(pCap, "strs", PARITY_ATTR_STRING, 1, 2, "[\"a\", \"bc\"]");
    cr_assert_str_eq(pA->azStr[1], "bc");
    root_attr(pCap, "fixed_strs", PARITY_ATTR_STRING, 1, 2, "[\"x\", \"yz\"]");
    root_attr(pCap, "flag", PARITY_ATTR_INT, 0, 1, "1");
    root_attr(pCap, "flags", PARITY_ATTR_INT, 1, 3, "[1, 0, 1]");
    root_attr(pCap, "empty_ints", PARITY_ATTR_INT, 1, 0, "[]");
    root_attr(pCap, "grid", PARITY_ATTR_INT, 1, 4, "[1, 2, 3, 4]");
    pA = parity_attr_find(aAttr, nAttr, "compound");
    cr_assert_not_null(pA);
    cr_assert_eq(pA->kind, PARITY_ATTR_OTHER);
    {
        char zBuf[64];
        cr_assert_str_eq(parity_attr_format(pA, zBuf, sizeof zBuf), "<unsupported type>");
    }
    parity_capture_close(pCap);
}

Test(capture_root, format_truncates_safely)
{
    parity_capture *pCap = open_fixture("root.h5");
    size_t nAttr;
    const parity_attr *aAttr = parity_capture_root_attrs(pCap, &nAttr);
    const parity_attr *pInts = parity_attr_find(aAttr, nAttr, "ints");
    char zBuf[16];

    memset(zBuf, 'X', sizeof zBuf);
    cr_assert_str_eq(parity_attr_format(pInts, zBuf, 5), "[1, ");
    cr_assert_eq(zBuf[5], 'X', "nothing written past nBuf");
    cr_assert_str_eq(parity_attr_format(pInts, zBuf, 1), "");
    zBuf[0] = 'Q';
    parity_attr_format(pInts, zBuf, 0);
    cr_assert_eq(zBuf[0], 'Q', "nBuf 0 writes nothing");
    cr_assert_str_eq(parity_attr_format(pInts, zBuf, 10), "[1, 2, 3]");
    parity_capture_close(pCap);
}

/* ---------------------------------------------------------------------------------- */
/* The writer                                                                         */

TestSuite(capture_writer, .init = setup_empty, .fini = remove_dir, .timeout = 120);

typedef struct {
    const char *zPath;
    parity_dtype dt;
    unsigned char aBytes[6 * 8];
} writer_case;

static void put(unsigned char *p, size_t nSize, size_t i, const void *pVal)
{
    memcpy(p + i * nSize, pVal, nSize);
}

/* The six elements of every dtype the writer test stores (same values the h5py check in
 * make_h5py_fixtures.py --check-writer expects). */
static size_t writer_cases(writer_case *aCase)
{
    size_t n = 0, i;
    memset(aCase, 0, 15 * sizeof *aCase);
    {
        const double a[] = { 0.1, -1e308, 0x1p-1074, -INFINITY, 0.0, 2.5 };
        aCase[n].zPath = "/t/f64"; aCase[n].dt = PARITY_DT_F64;
        for (i = 0; i < 6; i++) put(aCase[n].aBytes, 8, i, &a[i]);
        n++;
    }
    {
        const float a[] = { 1.5f, -0.0f, 3.0f, -0.25f, INFINITY, 0.5f };
        aCase[n].zPath = "/t/f32"; aCase[n].dt = PARITY_DT_F32;
        for (i = 0; i < 6; i++) put(aCase[n].aBytes, 4, i, &a[i]);
        n++;
    }
    {
        const uint16_t a[] = { 0x3C00, 0xC000, 0x7BFF, 0x0001, 0xFC00, 0x7E00 };
        aCase[n].zPath = "/t/f16"; aCase[n].dt = PARITY_DT_F16;
        for (i = 0; i < 6; i++) put(aCase[n].aBytes, 2, i, &a[i]);
        n++;
    }
    {
        const uint16_t a[] = { 0x3F80, 0xC020, 0x7F80, 0xFF80, 0x7FC0, 0x0001 };
        aCase[n].zPath = "/t/bf16"; aCase[n].dt = PARITY_DT_BF16;
        for (i = 0; i < 6; i++) put(aCase[n].aBytes, 2, i, &a[i]);
        n++;
    }
    {
        const uint8_t a[] = { 0x7E, 0x7F, 0x01, 0x38, 0xB8, 0x80 };
        aCase[n].zPath = "/t/e4m3"; aCase[n].dt = PARITY_DT_F8E4M3FN;
        memcpy(aCase[n].aBytes, a, 6);
        n++;
    }
    {
        const uint8_t a[] = { 0x3C, 0x7B, 0x7C, 0xFC, 0x7E, 0x01 };
        aCase[n].zPath = "/t/e5m2"; aCase[n].dt = PARITY_DT_F8E5M2;
        memcpy(aCase[n].aBytes, a, 6);
        n++;
    }
    {
        const int8_t a[] = { -128, -1, 0, 127, 5, 6 };
        aCase[n].zPath = "/t/i8"; aCase[n].dt = PARITY_DT_I8;
        memcpy(aCase[n].aBytes, a, 6);
        n++;
    }
    {
        const int16_t a[] = { -32768, -1, 0, 32767, 5, 6 };
        aCase[n].zPath = "/t/i16"; aCase[n].dt = PARITY_DT_I16;
        for (i = 0; i < 6; i++) put(aCase[n].aBytes, 2, i, &a[i]);
        n++;
    }
    {
        const int32_t a[] = { INT32_MIN, -1, 0, INT32_MAX, 5, 6 };
        aCase[n].zPath = "/t/i32"; aCase[n].dt = PARITY_DT_I32;
        for (i = 0; i < 6; i++) put(aCase[n].aBytes, 4, i, &a[i]);
        n++;
    }
    {
        const int64_t a[] = { INT64_MIN, -1, 0, INT64_MAX, 5, 6 };
        aCase[n].zPath = "/t/i64"; aCase[n].dt = PARITY_DT_I64;
        for (i = 0; i < 6; i++) put(aCase[n].aBytes, 8, i, &a[i]);
        n++;
    }
    {
        const uint8_t a[] = { 0, 1, 200, 255, 5, 6 };
        aCase[n].zPath = "/t/u8"; aCase[n].dt = PARITY_DT_U8;
        memcpy(aCase[n].aBytes, a, 6);
        n++;
    }
    {
        const uint16_t a[] = { 0, 1, 40000, 65535, 5, 6 };
        aCase[n].zPath = "/t/u16"; aCase[n].dt = PARITY_DT_U16;
        for (i = 0; i < 6; i++) put(aCase[n].aBytes, 2, i, &a[i]);
        n++;
    }
    {
        const uint32_t a[] = { 0, 1, 3000000000u, UINT32_MAX, 5, 6 };
        aCase[n].zPath = "/t/u32"; aCase[n].dt = PARITY_DT_U32;
        for (i = 0; i < 6; i++) put(aCase[n].aBytes, 4, i, &a[i]);
        n++;
    }
    {
        const uint64_t a[] = { 0, 1, UINT64_C(1) << 63, UINT64_MAX, 5, 6 };
        aCase[n].zPath = "/t/u64"; aCase[n].dt = PARITY_DT_U64;
        for (i = 0; i < 6; i++) put(aCase[n].aBytes, 8, i, &a[i]);
        n++;
    }
    {
        const uint8_t a[] = { 1, 0, 0, 1, 1, 0 };
        aCase[n].zPath = "/t/bool"; aCase[n].dt = PARITY_DT_BOOL;
        memcpy(aCase[n].aBytes, a, 6);
        n++;
    }
    cr_assert_eq(n, (size_t)PARITY_DT_COUNT - 1, "one case per dtype");
    return n;
}


Test(capture_writer, round_trip_through_our_reader_and_h5py)
{
    writer_case aCase[15];
    size_t nCase = writer_cases(aCase), i;
    char zFile[4200], zErr[PARITY_ERR_LEN] = "", zCmd[9000];
    parity_writer *pW = NULL;
    parity_capture *pCap;
    uint64_t dim6 = 6, aStream[3] = { 5, 3, 4 }, aEmpty[2] = { 0, 4 };
    float aStreamVal[60];
    int32_t scalar = -3;
    const char *const azTag[] = { "x", "y\xc3\xa9" };
    const char *const azIn[] = { "/t/f32", "t/f64" };
    const int64_t aShape[] = { 4, -8 };
    int rc;

    path_in_dir(zFile, sizeof zFile, "written.h5");
    cr_assert_eq(parity_writer_open(zFile, &pW, zErr, sizeof zErr), 0, "%s", zErr);
    for (i = 0; i < nCase; i++)
        writer_ok(pW, parity_writer_tensor(pW, aCase[i].zPath, aCase[i].dt, 1, &dim6,
                                           aCase[i].aBytes), aCase[i].zPath);
    for (i = 0; i < 60; i++) aStreamVal[i] = (float)i * 0.5f - 7.0f;
    writer_ok(pW, parity_writer_tensor_begin(pW, "/deep/er/stream", PARITY_DT_F32, 3, aStream),
              "begin");
    writer_ok(pW, parity_writer_tensor_append(pW, aStreamVal, 2), "append 2");
    writer_ok(pW, parity_writer_tensor_append(pW, aStreamVal + 24, 0), "append 0");
    writer_ok(pW, parity_writer_tensor_append(pW, aStreamVal + 24, 1), "append 1");
    writer_ok(pW, parity_writer_tensor_append(pW, aStreamVal + 36, 2), "append 2 more");
    writer_ok(pW, parity_writer_tensor_end(pW), "end");
    writer_ok(pW, parity_writer_tensor(pW, "/scalar", PARITY_DT_I32, 0, NULL, &scalar), "scalar");
    writer_ok(pW, parity_writer_tensor(pW, "empty", PARITY_DT_F32, 2, aEmpty, NULL), "empty");

    writer_ok(pW, parity_writer_attr_string(pW, NULL, "side", "eager"), "side");
    writer_ok(pW, parity_writer_attr_int(pW, "/", "parity_format", 1), "parity_format");
    writer_ok(pW, parity_writer_attr_float(pW, "", "compile_time_s", 1.25), "compile_time_s");
    writer_ok(pW, parity_writer_attr_ints(pW, NULL, "shape", aShape, 2), "shape");
    writer_ok(pW, parity_writer_attr_strings(pW, NULL, "tags", azTag, 2), "tags");
    writer_ok(pW, parity_writer_attr_string(pW, "/deep/er/stream", "op", "matmul"), "op");
    writer_ok(pW, parity_writer_attr_strings(pW, "/deep/er/stream", "inputs", azIn, 2), "inputs");
    writer_ok(pW, parity_writer_attr_int(pW, "/deep/er/stream", "order", 4), "order");
    writer_ok(pW, parity_writer_attr_strings(pW, "/t/f64", "inputs", NULL, 0), "no inputs");
    writer_ok(pW, parity_writer_attr_ints(pW, NULL, "no_ints", NULL, 0), "no ints");
    writer_ok(pW, parity_writer_attr_string(pW, "/t/f32", "op", "first"), "op");
    writer_ok(pW, parity_writer_attr_string(pW, "/t/f32", "op", "replaced"), "op again");
    cr_assert_eq(parity_writer_close(pW, zErr, sizeof zErr), 0, "close: %s", zErr);

    /* Our reader. */
    pCap = open_fixture("written.h5");
    cr_assert_eq(parity_capture_count(pCap), nCase + 3);
    for (i = 0; i < nCase; i++) {
        const parity_tensor_info *pT = expect_tensor(pCap, aCase[i].zPath, aCase[i].dt, 1, &dim6);
        const parity_attr *pMark = parity_attr_find(pT->aAttr, pT->nAttr, "dtype");
        unsigned char *pRaw = read_raw(pCap, aCase[i].zPath, 4, NULL);
        cr_assert(memcmp(pRaw, aCase[i].aBytes, 6 * parity_dtype_size(aCase[i].dt)) == 0,
                  "%s: bytes differ after the round trip", aCase[i].zPath);
        free(pRaw);
        if (aCase[i].dt == PARITY_DT_BF16 || aCase[i].dt == PARITY_DT_F8E4M3FN ||
            aCase[i].dt == PARITY_DT_F8E5M2) {
            cr_assert_not_null(pMark, "%s: dtype attribute", aCase[i].zPath);
            cr_assert_str_eq(pMark->azStr[0], parity_dtype_name(aCase[i].dt));
        } else {
            cr_assert_null(pMark, "%s: no dtype attribute", aCase[i].zPath);
        }
    }
    {
        const parity_tensor_info *pT = expect_tensor(pCap, "/deep/er/stream", PARITY_DT_F32, 3,
                                                     aStream);
        unsigned char *pRaw = read_raw(pCap, "/deep/er/stream", 7, NULL);
        cr_assert(memcmp(pRaw, aStreamVal, sizeof aStreamVal) == 0, "streamed values");
        free(pRaw);
        cr_assert_str_eq(pT->zOp, "matmul");
        cr_assert_eq(pT->nInput, 2);
        cr_assert_str_eq(pT->azInput[0], "/t/f32");
        cr_assert_str_eq(pT->azInput[1], "/t/f64");
        cr_assert_eq(pT->hasOrder, 1);
        cr_assert_eq(pT->iOrder, 4);
        cr_assert_str_eq(tensor_at(pCap, "/t/f32", NULL)->zOp, "replaced");
        pT = tensor_at(pCap, "/t/f64", NULL);
        cr_assert_null(pT->zError);
        cr_assert_eq(pT->nInput, 0);
        cr_assert_not_null(parity_attr_find(pT->aAttr, pT->nAttr, "inputs"));
    }
    {
        const double aExp[] = { -3 };
        expect_tensor(pCap, "/scalar", PARITY_DT_I32, 0, NULL);
        expect_decoded(pCap, "/scalar", aExp, 1);
        expect_tensor(pCap, "/empty", PARITY_DT_F32, 2, aEmpty);
    }
    {
        size_t nRoot;
        const parity_attr *aRoot = parity_capture_root_attrs(pCap, &nRoot);
        const parity_attr *pA;
        char zBuf[128];
        cr_assert_eq(nRoot, 6);
        pA = parity_attr_find(aRoot, nRoot, "no_ints");
        cr_assert(pA && pA->kind == PARITY_ATTR_INT && pA->isArray && pA->n == 0);
        pA = parity_attr_find(aRoot, nRoot, "side");
        cr_assert(pA && pA->kind == PARITY_ATTR_STRING && !pA->isArray);
        cr_assert_str_eq(pA->azStr[0], "eager");
        pA = parity_attr_find(aRoot, nRoot, "parity_format");
        cr_assert(pA && pA->kind == PARITY_ATTR_INT && !pA->isArray && pA->aInt[0] == 1);
        pA = parity_attr_find(aRoot, nRoot, "compile_time_s");
        cr_assert(pA && pA->kind == PARITY_ATTR_FLOAT && pA->aFloat[0] == 1.25);
        pA = parity_attr_find(aRoot, nRoot, "shape");
        cr_assert_not_null(pA);
        cr_assert_str_eq(parity_attr_format(pA, zBuf, sizeof zBuf), "[4, -8]");
        pA = parity_attr_find(aRoot, nRoot, "tags");
        cr_assert_not_null(pA);
        cr_assert_str_eq(parity_attr_format(pA, zBuf, sizeof zBuf), "[\"x\", \"y\xc3\xa9\"]");
    }
    parity_capture_close(pCap);

    /* h5py. */
    snprintf(zCmd, sizeof zCmd, "'%s' '%s/fixtures/make_h5py_fixtures.py' --check-writer '%s'",
             SYSTEM_PYTHON, TEST_SOURCE_DIR, zFile);
    rc = system(zCmd);
    cr_assert_eq(rc, 0, "h5py check of the written file failed (%d)", rc);
}

Test(capture_writer, errors_are_reported)
{
    char zFile[4200], zErr[PARITY_ERR_LEN] = "";
    parity_writer *pW = NULL;
    uint64_t dim = 2, aDim2[2] = { 3, 2 };
    float aVal[6] = { 1, 2, 3, 4, 5, 6 };

    path_in_dir(zFile, sizeof zFile, "errors.h5");
    cr_assert_eq(parity_writer_open(zFile, &pW, zErr, sizeof zErr), 0, "%s", zErr);
    writer_ok(pW, parity_writer_tensor(pW, "/x", PARITY_DT_F32, 1, &dim, aVal), "x");
    stderr_capture("stderr.txt");
    cr_assert_eq(parity_writer_tensor(pW, "/x", PARITY_DT_F32, 1, &dim, aVal), -1, "duplicate");
    cr_assert_eq(stderr_restore(), 0, "HDF5's error stack leaked to stderr");
    cr_assert_not_null(strstr(parity_writer_error(pW), "/x"), "%s", parity_writer_error(pW));
    cr_assert_eq(parity_writer_tensor(pW, "/bad", PARITY_DT_INVALID, 1, &dim, aVal), -1);
    cr_assert_neq(parity_writer_error(pW)[0], 0);
    cr_assert_eq(parity_writer_attr_int(pW, "/nowhere", "order", 1), -1);
    cr_assert_not_null(strstr(parity_writer_error(pW), "order"), "%s", parity_writer_error(pW));
    cr_assert_eq(parity_writer_tensor_begin(pW, "/s0", PARITY_DT_F32, 0, NULL), -1, "rank 0 stream");
    cr_assert_eq(parity_writer_tensor_append(pW, aVal, 1), -1, "append without begin");
    cr_assert_eq(parity_writer_tensor_end(pW), -1, "end without begin");
    writer_ok(pW, parity_writer_tensor_begin(pW, "/s", PARITY_DT_F32, 2, aDim2), "begin");
    cr_assert_eq(parity_writer_tensor_begin(pW, "/s2", PARITY_DT_F32, 2, aDim2), -1, "nested begin");
    writer_ok(pW, parity_writer_tensor_append(pW, aVal, 2), "append");
    cr_assert_eq(parity_writer_tensor_append(pW, aVal, 2), -1, "past the last row");
    cr_assert_not_null(strstr(parity_writer_error(pW), "too many rows"), "%s", parity_writer_error(pW));
    cr_assert_eq(parity_writer_tensor_end(pW), -1, "incomplete");
    cr_assert_not_null(strstr(parity_writer_error(pW), "incomplete"), "%s", parity_writer_error(pW));
    /* The writer is still usable after errors. */
    writer_ok(pW, parity_writer_tensor(pW, "/y", PARITY_DT_F32, 1, &dim, aVal), "y");
    cr_assert_eq(parity_writer_close(pW, zErr, sizeof zErr), 0, "%s", zErr);
    {
        parity_capture *pCap = open_fixture("errors.h5");
        cr_assert_eq(parity_capture_count(pCap), 3);   /* /s, /x, /y */
        parity_capture_close(pCap);
    }
}

Test(capture_writer, abort_leaves_nothing)
{
    char zFile[4200], zErr[PARITY_ERR_LEN] = "";
    parity_writer *pW = NULL;
    uint64_t dim = 2;
    float aVal[2] = { 1, 2 };

    path_in_dir(zFile, sizeof zFile, "target.h5");
    cr_assert_eq(parity_writer_open(zFile, &pW, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(count_tmp_files("target.h5"), 1, "the data goes to a temporary file beside");
    cr_assert(!file_exists(zFile), "the target appears only on close");
    writer_ok(pW, parity_writer_tensor(pW, "/x", PARITY_DT_F32, 1, &dim, aVal), "x");
    parity_writer_abort(pW);
    cr_assert(!file_exists(zFile));
    cr_assert_eq(count_tmp_files("target.h5"), 0);
    cr_assert_eq(count_dir_entries(), 0);

    /* Aborting in the middle of a streamed tensor. */
    cr_assert_eq(parity_writer_open(zFile, &pW, zErr, sizeof zErr), 0, "%s", zErr);
    writer_ok(pW, parity_writer_tensor_begin(pW, "/s", PARITY_DT_F32, 1, &dim), "begin");
    writer_ok(pW, parity_writer_tensor_append(pW, aVal, 1), "append");
    parity_writer_abort(pW);
    cr_assert_eq(count_dir_entries(), 0);

    /* Closing with a stream still open fails and leaves nothing either. */
    cr_assert_eq(parity_writer_open(zFile, &pW, zErr, sizeof zErr), 0, "%s", zErr);
    writer_ok(pW, parity_writer_tensor_begin(pW, "/s", PARITY_DT_F32, 1, &dim), "begin");
    cr_assert_eq(parity_writer_close(pW, zErr, sizeof zErr), -1);
    cr_assert_not_null(strstr(zErr, "not ended"), "%s", zErr);
    cr_assert_eq(count_dir_entries(), 0);
}

Test(capture_writer, existing_target_replaced_only_on_close)
{
    char zFile[4200], zErr[PARITY_ERR_LEN] = "", zLine[64] = "";
    parity_writer *pW = NULL;
    parity_capture *pCap;
    uint64_t dim = 2;
    float aVal[2] = { 1, 2 };
    FILE *pF;

    path_in_dir(zFile, sizeof zFile, "target.h5");
    pF = fopen(zFile, "w");
    cr_assert_not_null(pF);
    fputs("old contents\n", pF);
    fclose(pF);

    cr_assert_eq(parity_writer_open(zFile, &pW, zErr, sizeof zErr), 0, "%s", zErr);
    writer_ok(pW, parity_writer_tensor(pW, "/x", PARITY_DT_F32, 1, &dim, aVal), "x");
    parity_writer_abort(pW);
    pF = fopen(zFile, "r");
    cr_assert_not_null(pF, "abort must not remove an existing target");
    cr_assert_not_null(fgets(zLine, sizeof zLine, pF));
    fclose(pF);
    cr_assert_str_eq(zLine, "old contents\n");
    cr_assert_eq(count_tmp_files("target.h5"), 0);

    cr_assert_eq(parity_writer_open(zFile, &pW, zErr, sizeof zErr), 0, "%s", zErr);
    writer_ok(pW, parity_writer_tensor(pW, "/x", PARITY_DT_F32, 1, &dim, aVal), "x");
    pF = fopen(zFile, "r");   /* still the old file while writing */
    cr_assert_not_null(pF);
    cr_assert_not_null(fgets(zLine, sizeof zLine, pF));
    fclose(pF);
    cr_assert_str_eq(zLine, "old contents\n");
    cr_assert_eq(parity_writer_close(pW, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(count_tmp_files("target.h5"), 0, "no temporary file after close");
    cr_assert_eq(count_dir_entries(), 1);
    pCap = open_fixture("target.h5");
    cr_assert_eq(parity_capture_count(pCap), 1);
    {
        const double aExp[] = { 1, 2 };
        expect_decoded(pCap, "/x", aExp, 2);
    }
    parity_capture_close(pCap);
}

Test(capture_writer, open_fails_cleanly)
{
    char zFile[4200], zErr[PARITY_ERR_LEN] = "";
    parity_writer *pW = (parity_writer *)&zErr;
    path_in_dir(zFile, sizeof zFile, "no/such/dir/x.h5");
    cr_assert_eq(parity_writer_open(zFile, &pW, zErr, sizeof zErr), -1);
    cr_assert_null(pW);
    cr_assert_not_null(strstr(zErr, "x.h5"), "%s", zErr);
    cr_assert_eq(count_dir_entries(), 0);
}

/* ---------------------------------------------------------------------------------- */
/* Slab planning                                                                      */

/* Walks a plan and checks that the slabs cover [0, nElem) in order, that each is a
 * hyperslab whose row-major elements are exactly [first, first + n), within the budget,
 * and aligned to rowAlign along the split dimension when the budget allows. Returns the
 * number of slabs. */
static uint64_t check_plan(int rank, const uint64_t *aDim, uint64_t nMaxElem, uint64_t rowAlign)
{
    parity_slab_plan plan;
    parity_slab slab;
    uint64_t nElem = 1, next = 0, nSlab = 0, aIdx[PARITY_MAX_RANK], nStepFree = 0;
    int i;

    for (i = 0; i < rank; i++) nElem *= aDim[i];
    parity_slab_plan_init(&plan, rank, aDim, nMaxElem, rowAlign);
    cr_assert_eq(plan.nElem, nElem);
    if (plan.splitDim >= 0) {
        uint64_t nInner = 1;
        for (i = plan.splitDim + 1; i < rank; i++) nInner *= aDim[i];
        cr_assert_eq(plan.nInner, nInner);
        nStepFree = nMaxElem / nInner;   /* steps the budget allows before alignment */
        cr_assert_geq(plan.nStep, 1);
        cr_assert_leq(plan.nStep, aDim[plan.splitDim], "nStep %llu beyond the dimension",
                      (unsigned long long)plan.nStep);
    } else {
        cr_assert(rank == 0 || nElem == 0, "no split dimension for a non-empty tensor");
    }
    while (parity_slab_next(&plan, &slab)) {
        uint64_t nProd = 1, j;
        int first = -1;
        cr_assert_lt(nSlab, nElem + 2, "runaway plan");
        cr_assert_eq(slab.first, next, "slab %llu starts at %llu, expected %llu",
                     (unsigned long long)nSlab, (unsigned long long)slab.first,
                     (unsigned long long)next);
        if (nElem > 0) {
            cr_assert_geq(slab.n, 1, "empty slab in a non-empty tensor");
            cr_assert_leq(slab.n, nMaxElem > 0 ? nMaxElem : 1, "slab of %llu over budget %llu",
                          (unsigned long long)slab.n, (unsigned long long)nMaxElem);
        }
        for (i = 0; i < rank; i++) {
            cr_assert_leq(slab.aStart[i] + slab.aCount[i], aDim[i], "dim %d out of range", i);
            nProd *= slab.aCount[i];
        }
        cr_assert_eq(nProd, slab.n, "hyperslab has %llu elements, slab says %llu",
                     (unsigned long long)nProd, (unsigned long long)slab.n);
        if (slab.n > 0) {
            /* start = unravel(first), last corner = unravel(first + n - 1), and past the
             * first dimension with count > 1 every dimension is whole: then the hyperslab
             * is exactly the linear run. */
            parity_unravel(rank, aDim, slab.first, aIdx);
            for (i = 0; i < rank; i++)
                cr_assert_eq(slab.aStart[i], aIdx[i], "start of dim %d", i);
            parity_unravel(rank, aDim, slab.first + slab.n - 1, aIdx);
            for (i = 0; i < rank; i++)
                cr_assert_eq(slab.aStart[i] + slab.aCount[i] - 1, aIdx[i], "end of dim %d", i);
            for (i = 0; i < rank; i++) {
                if (first >= 0) {
                    cr_assert_eq(slab.aStart[i], 0, "dim %d after a partial dim", i);
                    cr_assert_eq(slab.aCount[i], aDim[i], "dim %d after a partial dim", i);
                } else if (slab.aCount[i] > 1) {
                    first = i;
                }
            }
            /* Every linear index of the slab unravels inside the hyperslab (spot check). */
            for (j = 0; j < slab.n; j += 1 + slab.n / 7) {
                parity_unravel(rank, aDim, slab.first + j, aIdx);
                for (i = 0; i < rank; i++)
                    cr_assert(aIdx[i] >= slab.aStart[i] && aIdx[i] < slab.aStart[i] + slab.aCount[i]);
            }
            if (rowAlign > 1 && plan.splitDim >= 0 && nStepFree >= rowAlign &&
                nStepFree < aDim[plan.splitDim]) {
                cr_assert_eq(slab.aStart[plan.splitDim] % rowAlign, 0,
                             "slab starts inside a chunk (align %llu, start %llu)",
                             (unsigned long long)rowAlign,
                             (unsigned long long)slab.aStart[plan.splitDim]);
            }
        }
        next += slab.n;
        nSlab++;
    }
    cr_assert_eq(next, nElem, "slabs cover %llu of %llu elements", (unsigned long long)next,
                 (unsigned long long)nElem);
    cr_assert_eq(parity_slab_next(&plan, &slab), 0, "exhausted plans stay exhausted");
    return nSlab;
}

Test(slab_plan, rank0_and_zero_size)
{
    uint64_t a0[2] = { 0, 3 }, a1[3] = { 3, 0, 2 }, a2[1] = { 0 };
    parity_slab_plan plan;
    parity_slab slab;

    cr_assert_eq(check_plan(0, NULL, 1, 1), 1);
    cr_assert_eq(check_plan(0, NULL, 1000, 4), 1);
    parity_slab_plan_init(&plan, 0, NULL, 10, 1);
    cr_assert_eq(parity_slab_next(&plan, &slab), 1);
    cr_assert_eq(slab.first, 0);
    cr_assert_eq(slab.n, 1);
    cr_assert_eq(check_plan(2, a0, 1, 1), 1);
    cr_assert_eq(check_plan(3, a1, 5, 2), 1);
    cr_assert_eq(check_plan(1, a2, 5, 1), 1);
    parity_slab_plan_init(&plan, 2, a0, 10, 1);
    cr_assert_eq(parity_slab_next(&plan, &slab), 1);
    cr_assert_eq(slab.n, 0);
    cr_assert_eq(slab.aCount[0], 0);
    cr_assert_eq(slab.aCount[1], 3);
    cr_assert_eq(parity_slab_next(&plan, &slab), 0);
    /* A budget of 0 means 1. */
    {
        uint64_t d = 4;
        cr_assert_eq(check_plan(1, &d, 0, 1), 4);
    }
}

Test(slab_plan, small_shapes_every_budget)
{
    uint64_t a753[3] = { 7, 5, 3 }, a1[1] = { 13 }, a2[2] = { 4, 9 }, a4[4] = { 2, 1, 3, 2 };
    uint64_t nMax, align;
    for (nMax = 1; nMax <= 110; nMax++) {
        for (align = 1; align <= 8; align++) {
            check_plan(3, a753, nMax, align);
            check_plan(1, a1, nMax, align);
            check_plan(2, a2, nMax, align);
            check_plan(4, a4, nMax, align);
        }
    }
    /* Known splits for [7,5,3]. */
    cr_assert_eq(check_plan(3, a753, 105, 1), 1);
    cr_assert_eq(check_plan(3, a753, 15, 1), 7);    /* one outer index per slab */
    cr_assert_eq(check_plan(3, a753, 30, 1), 4);    /* 2+2+2+1 outer indices */
    cr_assert_eq(check_plan(3, a753, 4, 1), 35);    /* one row of 3 per slab */
    cr_assert_eq(check_plan(3, a753, 1, 1), 105);
    cr_assert_eq(check_plan(3, a753, 2, 1), 70, "a row of 3 does not fit 2: split it 2+1");
    cr_assert_eq(check_plan(3, a753, 90, 4), 2, "6 outer units per slab, aligned to 4: 4+3");
}

Test(slab_plan, huge_and_high_rank)
{
    uint64_t aHuge[2] = { 1, UINT64_C(1) << 33 };
    uint64_t aSquare[2] = { UINT64_C(1) << 20, UINT64_C(1) << 20 };
    uint64_t aWide[2] = { 1024, UINT64_C(1) << 20 };
    uint64_t aOdd[2] = { 1, 1000003 };
    uint64_t aRank[PARITY_MAX_RANK];
    int i;

    cr_assert_eq(check_plan(2, aHuge, UINT64_C(1) << 28, 1), 32);
    cr_assert_eq(check_plan(2, aHuge, UINT64_C(1) << 28, 1000), 33, "2^28 rounded down to 268435000");
    cr_assert_eq(check_plan(2, aSquare, UINT64_C(1) << 30, 1), 1024, "2^10 rows per slab");
    cr_assert_eq(check_plan(2, aWide, UINT64_C(3) << 20, 2), 512, "3 rows aligned to 2");
    cr_assert_eq(check_plan(2, aOdd, 1000, 1), 1001);
    cr_assert_eq(check_plan(2, aOdd, 1000, 64), 1042, "960 per slab when aligned to 64");
    for (i = 0; i < PARITY_MAX_RANK; i++) aRank[i] = (i % 4 == 0) ? 2 : 1;
    cr_assert_eq(check_plan(PARITY_MAX_RANK, aRank, 1, 1), 256);
    cr_assert_eq(check_plan(PARITY_MAX_RANK, aRank, 16, 1), 16);
    cr_assert_eq(check_plan(PARITY_MAX_RANK, aRank, 1000, 1), 1);
}

/* "Slabs split along the outermost dimension whose inner block fits" (capture.h). */
Test(slab_plan, split_dimension)
{
    static const struct {
        uint64_t nMax, align;
        int splitDim;
        uint64_t nInner, nStep;
    } aCase[] = {
        { 105, 1, 0, 15, 7 }, { 1000, 1, 0, 15, 7 }, { 15, 1, 0, 15, 1 }, { 30, 1, 0, 15, 2 },
        { 14, 1, 1, 3, 4 }, { 3, 1, 1, 3, 1 }, { 2, 1, 2, 1, 2 }, { 1, 1, 2, 1, 1 },
        { 90, 4, 0, 15, 4 }, { 90, 7, 0, 15, 6 }, { 14, 2, 1, 3, 4 }, { 14, 3, 1, 3, 3 },
        { 60, 5, 0, 15, 4 },
    };
    uint64_t aDim[3] = { 7, 5, 3 };
    size_t i;
    for (i = 0; i < sizeof aCase / sizeof aCase[0]; i++) {
        parity_slab_plan plan;
        parity_slab_plan_init(&plan, 3, aDim, aCase[i].nMax, aCase[i].align);
        cr_assert_eq(plan.splitDim, aCase[i].splitDim, "budget %llu: split %d, expected %d",
                     (unsigned long long)aCase[i].nMax, plan.splitDim, aCase[i].splitDim);
        cr_assert_eq(plan.nInner, aCase[i].nInner, "budget %llu", (unsigned long long)aCase[i].nMax);
        cr_assert_eq(plan.nStep, aCase[i].nStep, "budget %llu align %llu: step %llu",
                     (unsigned long long)aCase[i].nMax, (unsigned long long)aCase[i].align,
                     (unsigned long long)plan.nStep);
    }
}

Test(slab_plan, unravel_row_major)
{
    uint64_t aDim[3] = { 7, 5, 3 }, aIdx[3];
    parity_unravel(3, aDim, 0, aIdx);
    cr_assert(aIdx[0] == 0 && aIdx[1] == 0 && aIdx[2] == 0);
    parity_unravel(3, aDim, 3 * 5 * 2 + 3 * 4 + 1, aIdx);
    cr_assert(aIdx[0] == 2 && aIdx[1] == 4 && aIdx[2] == 1, "%llu %llu %llu",
              (unsigned long long)aIdx[0], (unsigned long long)aIdx[1],
              (unsigned long long)aIdx[2]);
    parity_unravel(3, aDim, 104, aIdx);
    cr_assert(aIdx[0] == 6 && aIdx[1] == 4 && aIdx[2] == 2);
}
