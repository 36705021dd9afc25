/*
 * make_reader_corpus.c - writes the seed corpus of the reader harness (fuzz_reader.c):
 * small valid captures, one per layout or feature the reader handles, so that libFuzzer
 * starts from files that reach every branch of capture_read.c and chunk_read.c and
 * mutates from there. The output is committed under corpus/libfuzzer/reader/; rerun it
 * when the reader learns a new layout:
 *   build/make_reader_corpus corpus/libfuzzer/reader
 *
 * Tensors and attributes go through our writer (formats/capture_write.c), the layout every
 * capture has; what the writer never produces but h5py and h5repack do (chunks, filters,
 * fill values, compact and big-endian data, links, fixed-length and odd attribute types)
 * is added with libhdf5's own calls. Values are small and deterministic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hdf5.h>
#include "formats/capture.h"
#include "formats/dtype.h"
#include "formats/float_format.h"

#define CHUNK_SHUFFLE   1u
#define CHUNK_DEFLATE   2u
#define CHUNK_FLETCHER  4u
#define CHUNK_NO_WRITE  8u   /* leave every chunk unallocated: reads give the fill value */

static const char *zDir;
static char zFile[4096];
static parity_writer *pW;
static int nFiles;

static void die(const char *zWhat)
{
    fprintf(stderr, "make_reader_corpus: %s: %s\n", zFile, zWhat);
    exit(2);
}

/* ---- through our writer --------------------------------------------------------------- */

static void begin(const char *zName)
{
    char zErr[PARITY_ERR_LEN];
    snprintf(zFile, sizeof zFile, "%s/%s", zDir, zName);
    if (parity_writer_open(zFile, &pW, zErr, sizeof zErr) != 0) die(zErr);
    if (parity_writer_attr_string(pW, "/", "model", "reader-corpus") != 0) die(parity_writer_error(pW));
}

static void end(void)
{
    char zErr[PARITY_ERR_LEN];
    if (parity_writer_close(pW, zErr, sizeof zErr) != 0) die(zErr);
    pW = NULL;
    nFiles++;
}

static void tensor(const char *zPath, parity_dtype dt, int rank, const uint64_t *aDim,
                   const void *pData)
{
    if (parity_writer_tensor(pW, zPath, dt, rank, aDim, pData) != 0) die(parity_writer_error(pW));
}

static void attr_string(const char *zPath, const char *zName, const char *zValue)
{
    if (parity_writer_attr_string(pW, zPath, zName, zValue) != 0) die(parity_writer_error(pW));
}

static void attr_strings(const char *zPath, const char *zName, const char *const *az, size_t n)
{
    if (parity_writer_attr_strings(pW, zPath, zName, az, n) != 0) die(parity_writer_error(pW));
}

static void attr_int(const char *zPath, const char *zName, int64_t v)
{
    if (parity_writer_attr_int(pW, zPath, zName, v) != 0) die(parity_writer_error(pW));
}

/* n float32 values: a ramp with a sign pattern, exact in every narrower format we store. */
static float *ramp(size_t n, float scale)
{
    float *a = malloc((n ? n : 1) * sizeof *a);
    size_t i;
    if (!a) die("out of memory");
    for (i = 0; i < n; i++) a[i] = scale * (float)((int)(i % 17) - 8) / 4.0f;
    return a;
}

/* ---- through libhdf5, after the writer closed the file --------------------------------- */

static hid_t reopen(void)
{
    hid_t h = H5Fopen(zFile, H5F_ACC_RDWR, H5P_DEFAULT);
    if (h < 0) die("cannot reopen");
    return h;
}

/* IEEE binary16 as h5py stores numpy.float16 (the layout float_format.h gives). */
static hid_t f16_type(void)
{
    const parity_float_format *pF = parity_float_format_of(PARITY_DT_F16);
    hid_t h = H5Tcopy(H5T_IEEE_F32LE);
    H5Tset_fields(h, (size_t)pF->nBits - 1, (size_t)pF->mantissaBits, (size_t)pF->exponentBits,
                  0, (size_t)pF->mantissaBits);
    H5Tset_size(h, (size_t)pF->nBits / 8);
    H5Tset_ebias(h, (size_t)pF->bias);
    return h;
}

static hid_t bool_type(void)
{
    signed char v;
    hid_t h = H5Tenum_create(H5T_NATIVE_INT8);
    v = 0; H5Tenum_insert(h, "FALSE", &v);
    v = 1; H5Tenum_insert(h, "TRUE", &v);
    return h;
}

static void raw_attr_string(hid_t hObj, const char *zName, const char *zValue)
{
    hid_t hType = H5Tcopy(H5T_C_S1), hSpace = H5Screate(H5S_SCALAR), hAttr;
    H5Tset_size(hType, strlen(zValue) + 1);
    hAttr = H5Acreate2(hObj, zName, hType, hSpace, H5P_DEFAULT, H5P_DEFAULT);
    if (hAttr < 0 || H5Awrite(hAttr, hType, zValue) < 0) die("cannot write a raw attribute");
    H5Aclose(hAttr);
    H5Sclose(hSpace);
    H5Tclose(hType);
}

/* A dataset in a layout our writer does not make. hFileType/hMemType: its file and memory
 * types; aChunk NULL means contiguous, or compact when compact is set. zMark: the "dtype"
 * attribute of bit patterns stored as integers, or NULL. */
static void raw_dataset(hid_t hFile, const char *zPath, hid_t hFileType, hid_t hMemType,
                        int rank, const hsize_t *aDim, const hsize_t *aMaxDim,
                        const hsize_t *aChunk, unsigned flags, int compact, const void *pData,
                        const char *zMark)
{
    hid_t hSpace = rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, aDim, aMaxDim);
    hid_t hDcpl = H5Pcreate(H5P_DATASET_CREATE), hLcpl = H5Pcreate(H5P_LINK_CREATE), hDset;
    H5Pset_create_intermediate_group(hLcpl, 1);
    H5Pset_obj_track_times(hDcpl, 0);   /* reruns write the same bytes */
    if (aChunk) {
        H5Pset_chunk(hDcpl, rank, aChunk);
        if (flags & CHUNK_SHUFFLE) H5Pset_shuffle(hDcpl);
        if (flags & CHUNK_DEFLATE) H5Pset_deflate(hDcpl, 4);
        if (flags & CHUNK_FLETCHER) H5Pset_fletcher32(hDcpl);
        if (flags & CHUNK_NO_WRITE) {
            float fill = 1.5f;
            H5Pset_fill_value(hDcpl, H5T_NATIVE_FLOAT, &fill);
        }
    } else if (compact) {
        H5Pset_layout(hDcpl, H5D_COMPACT);
    }
    hDset = H5Dcreate2(hFile, zPath, hFileType, hSpace, hLcpl, hDcpl, H5P_DEFAULT);
    if (hDset < 0) die(zPath);
    if (pData && H5Dwrite(hDset, hMemType, H5S_ALL, H5S_ALL, H5P_DEFAULT, pData) < 0) die(zPath);
    if (zMark) {
        hid_t hType = H5Tcopy(H5T_C_S1), hAs = H5Screate(H5S_SCALAR), hAttr;
        H5Tset_size(hType, H5T_VARIABLE);
        H5Tset_cset(hType, H5T_CSET_UTF8);
        hAttr = H5Acreate2(hDset, "dtype", hType, hAs, H5P_DEFAULT, H5P_DEFAULT);
        if (hAttr < 0 || H5Awrite(hAttr, hType, &zMark) < 0) die("cannot mark a dtype");
        H5Aclose(hAttr);
        H5Sclose(hAs);
        H5Tclose(hType);
    }
    H5Dclose(hDset);
    H5Pclose(hLcpl);
    H5Pclose(hDcpl);
    H5Sclose(hSpace);
}

/* ---- the files ------------------------------------------------------------------------- */

static void contiguous(void)
{
    uint64_t aDim[2] = { 4, 8 }, nD = 3;
    float *a = ramp(32, 1.0f);
    double aD[3] = { 1.0 / 3, -2.5e-300, 7e300 };
    begin("contiguous_f32.h5");
    attr_string("/", "framework", "pytorch");
    tensor("/x", PARITY_DT_F32, 2, aDim, a);
    tensor("/y64", PARITY_DT_F64, 1, &nD, aD);
    end();
    free(a);
}

/* Chunks that do not divide the shape (edge chunks), unfiltered: the chunk reader's plain
 * path; one filtered pair (shuffle + deflate, deflate alone): its inflate path. */
static void chunked(void)
{
    hsize_t aDim[2] = { 10, 12 }, aChunk[2] = { 4, 5 };
    hsize_t aDim2[2] = { 32, 16 }, aChunk2[2] = { 8, 16 }, nD = 20, nDChunk = 7;
    float *a = ramp(120, 1.0f), *b = ramp(512, 0.25f);
    double aD[20];
    hid_t hFile;
    int i;
    for (i = 0; i < 20; i++) aD[i] = i * 0.125 - 1;
    begin("chunked_f32.h5");
    end();
    hFile = reopen();
    raw_dataset(hFile, "/chunked", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, aDim, NULL, aChunk, 0, 0, a, NULL);
    H5Fclose(hFile);

    begin("deflate_f32_f64.h5");
    end();
    hFile = reopen();
    raw_dataset(hFile, "/shuffle_deflate", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, aDim2, NULL, aChunk2,
                CHUNK_SHUFFLE | CHUNK_DEFLATE, 0, b, NULL);
    raw_dataset(hFile, "/deflate64", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, &nD, NULL, &nDChunk,
                CHUNK_DEFLATE, 0, aD, NULL);
    H5Fclose(hFile);
    free(a);
    free(b);
}

/* Paths where libhdf5 reads: a filter the chunk reader does not decode (fletcher32),
 * unallocated chunks with a fill value, big-endian data (converted), compact layout. */
static void libhdf5_paths(void)
{
    hsize_t aDim[2] = { 6, 6 }, aChunk[2] = { 3, 4 }, n = 5;
    float *a = ramp(36, 2.0f);
    int32_t aI[5] = { -2, -1, 0, 1, 2147483647 };
    hid_t hFile;
    begin("fletcher32_fill.h5");
    end();
    hFile = reopen();
    raw_dataset(hFile, "/fletcher32", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, aDim, NULL, aChunk,
                CHUNK_FLETCHER, 0, a, NULL);
    raw_dataset(hFile, "/unwritten", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, aDim, NULL, aChunk,
                CHUNK_NO_WRITE, 0, NULL, NULL);
    H5Fclose(hFile);

    begin("big_endian_compact.h5");
    end();
    hFile = reopen();
    raw_dataset(hFile, "/be32", H5T_IEEE_F32BE, H5T_NATIVE_FLOAT, 1, &n, NULL, NULL, 0, 0, a, NULL);
    raw_dataset(hFile, "/be_int", H5T_STD_I32BE, H5T_NATIVE_INT32, 1, &n, NULL, NULL, 0, 0, aI, NULL);
    raw_dataset(hFile, "/compact", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, &n, NULL, NULL, 0, 1, a, NULL);
    H5Fclose(hFile);
    free(a);
}

static void bools(void)
{
    uint64_t aDim[2] = { 3, 5 };
    hsize_t aH[2] = { 9, 7 }, aChunk[2] = { 4, 4 };
    unsigned char a[15], b[63];
    hid_t hFile, hBool;
    int i;
    for (i = 0; i < 15; i++) a[i] = (unsigned char)(i % 3 == 0);
    for (i = 0; i < 63; i++) b[i] = (unsigned char)(i % 5 == 1);
    begin("bool.h5");
    tensor("/mask", PARITY_DT_BOOL, 2, aDim, a);
    end();
    hFile = reopen();
    hBool = bool_type();
    raw_dataset(hFile, "/mask_deflate", hBool, hBool, 2, aH, NULL, aChunk, CHUNK_DEFLATE, 0, b, NULL);
    H5Tclose(hBool);
    H5Fclose(hFile);
}

/* float16 as IEEE half (writer, and chunked the way h5py compresses it) and as int16 bit
 * patterns marked by "dtype"; bfloat16 as uint16 patterns, contiguous and chunked; fp8. */
static void narrow_floats(void)
{
    uint64_t aDim[2] = { 6, 4 }, n8 = 8;
    hsize_t aH[2] = { 16, 8 }, aChunk[2] = { 5, 8 }, nH = 12, nChunk = 12;
    float *a = ramp(128, 1.0f);
    uint16_t aHalf[128], aBf[128];
    uint8_t aE4[8], aE5[8];
    hid_t hFile, hHalf;
    int i;
    for (i = 0; i < 128; i++) {
        uint32_t u;
        memcpy(&u, &a[i], 4);
        aBf[i] = (uint16_t)(u >> 16);      /* exact: the ramp has few significant bits */
        parity_encode(PARITY_DT_F16, a[i], &aHalf[i]);
    }
    for (i = 0; i < 8; i++) {
        parity_encode(PARITY_DT_F8E4M3FN, a[i], &aE4[i]);
        parity_encode(PARITY_DT_F8E5M2, a[i], &aE5[i]);
    }
    aE4[7] = 0x7f;   /* e4m3fn's only NaN */
    aE5[7] = 0x7c;   /* e5m2's +Inf */
    begin("float16.h5");
    tensor("/half", PARITY_DT_F16, 2, aDim, aHalf);
    end();
    hFile = reopen();
    hHalf = f16_type();
    raw_dataset(hFile, "/half_deflate", hHalf, hHalf, 2, aH, NULL, aChunk, CHUNK_SHUFFLE | CHUNK_DEFLATE,
                0, aHalf, NULL);
    H5Tclose(hHalf);
    raw_dataset(hFile, "/half_bits", H5T_STD_I16LE, H5T_NATIVE_INT16, 1, &nH, NULL, &nChunk, 0, 0,
                aHalf, "float16");
    H5Fclose(hFile);

    begin("bfloat16_fp8.h5");
    tensor("/bf16", PARITY_DT_BF16, 2, aDim, aBf);
    tensor("/e4m3fn", PARITY_DT_F8E4M3FN, 1, &n8, aE4);
    tensor("/e5m2", PARITY_DT_F8E5M2, 1, &n8, aE5);
    end();
    hFile = reopen();
    raw_dataset(hFile, "/bf16_chunked", H5T_STD_U16LE, H5T_NATIVE_UINT16, 2, aH, NULL, aChunk,
                CHUNK_SHUFFLE | CHUNK_DEFLATE, 0, aBf, "bfloat16");
    H5Fclose(hFile);
    free(a);
}

static void integers(void)
{
    static const parity_dtype aDt[] = { PARITY_DT_I8, PARITY_DT_I16, PARITY_DT_I32, PARITY_DT_I64,
                                        PARITY_DT_U8, PARITY_DT_U16, PARITY_DT_U32, PARITY_DT_U64 };
    uint64_t n = 6;
    unsigned char aBytes[48];
    size_t i;
    for (i = 0; i < sizeof aBytes; i++) aBytes[i] = (unsigned char)(i * 37 + 5);
    begin("integers.h5");
    for (i = 0; i < sizeof aDt / sizeof aDt[0]; i++) {
        char zPath[64];
        snprintf(zPath, sizeof zPath, "/%s", parity_dtype_name(aDt[i]));
        tensor(zPath, aDt[i], 1, &n, aBytes);
    }
    end();
}

/* Every attribute kind the reader interprets, and some it does not. */
static void attributes(void)
{
    static const char *const azTags[] = { "a", "", "ünïcode", "tab\tand\nnewline" };
    static const int64_t aInts[] = { -1, 0, 1, INT64_MAX };
    uint64_t n = 4;
    float *a = ramp(4, 1.0f);
    hid_t hFile, hDset, hSpace, hAttr, hType;
    signed char yes = 1;
    begin("attributes.h5");
    attr_string("/", "framework_version", "2.15.0");
    attr_strings("/", "tags", azTags, 4);
    attr_strings("/", "no_tags", azTags, 0);
    tensor("/t", PARITY_DT_F32, 1, &n, a);
    attr_int("/t", "order", 3);
    if (parity_writer_attr_ints(pW, "/t", "shape_hint", aInts, 4) != 0) die(parity_writer_error(pW));
    if (parity_writer_attr_float(pW, "/t", "eps", 1e-5) != 0) die(parity_writer_error(pW));
    end();
    hFile = reopen();
    raw_attr_string(hFile, "fixed_length", "fixed");
    hDset = H5Dopen2(hFile, "/t", H5P_DEFAULT);
    /* an h5py bool attribute (enum), and a compound one the reader lists as "other" */
    hType = bool_type();
    hSpace = H5Screate(H5S_SCALAR);
    hAttr = H5Acreate2(hDset, "flag", hType, hSpace, H5P_DEFAULT, H5P_DEFAULT);
    if (hAttr < 0 || H5Awrite(hAttr, hType, &yes) < 0) die("cannot write a bool attribute");
    H5Aclose(hAttr);
    H5Tclose(hType);
    hType = H5Tcreate(H5T_COMPOUND, 8);
    H5Tinsert(hType, "lo", 0, H5T_NATIVE_INT32);
    H5Tinsert(hType, "hi", 4, H5T_NATIVE_INT32);
    hAttr = H5Acreate2(hDset, "pair", hType, hSpace, H5P_DEFAULT, H5P_DEFAULT);
    if (hAttr < 0 || H5Awrite(hAttr, hType, aInts) < 0) die("cannot write a compound attribute");
    H5Aclose(hAttr);
    H5Tclose(hType);
    H5Sclose(hSpace);
    H5Dclose(hDset);
    H5Fclose(hFile);
    free(a);
}

/* A small graph: inputs, a linear op computed exactly as its model expects (float32 data,
 * products summed in double and rounded once), a relu of it; op, inputs, order, acc_dtype. */
static void graph(void)
{
    static const char *const azLinear[] = { "/x", "/fc/weight", "/fc/bias" };
    static const char *const azRelu[] = { "/fc/out" };
    uint64_t aX[2] = { 3, 4 }, aW[2] = { 5, 4 }, nB = 5, aY[2] = { 3, 5 };
    float *x = ramp(12, 1.0f), *w = ramp(20, 0.5f), b[5] = { 0.5f, -1, 0, 2, 0.25f };
    float y[15], r[15];
    int i, j, k;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 5; j++) {
            double s = b[j];
            for (k = 0; k < 4; k++) s += (double)x[i * 4 + k] * w[j * 4 + k];
            y[i * 5 + j] = (float)s;
            r[i * 5 + j] = y[i * 5 + j] > 0 ? y[i * 5 + j] : 0;
        }
    begin("graph_ops.h5");
    tensor("/x", PARITY_DT_F32, 2, aX, x);
    tensor("/fc/weight", PARITY_DT_F32, 2, aW, w);
    tensor("/fc/bias", PARITY_DT_F32, 1, &nB, b);
    tensor("/fc/out", PARITY_DT_F32, 2, aY, y);
    attr_string("/fc/out", "op", "linear");
    attr_strings("/fc/out", "inputs", azLinear, 3);
    attr_string("/fc/out", "acc_dtype", "float32");
    attr_int("/fc/out", "order", 0);
    tensor("/act/out", PARITY_DT_F32, 2, aY, r);
    attr_string("/act/out", "op", "relu");
    attr_strings("/act/out", "inputs", azRelu, 1);
    attr_int("/act/out", "order", 1);
    end();
    free(x);
    free(w);
}

/* Deep groups, an object under two names (a hard link: listed once), a soft link and a
 * dangling one. */
static void nested(void)
{
    uint64_t n = 3;
    float a[3] = { 1, 2, 3 };
    hid_t hFile;
    begin("nested_links.h5");
    tensor("/a/b/c/d/t", PARITY_DT_F32, 1, &n, a);
    tensor("/a/u", PARITY_DT_F32, 1, &n, a);
    end();
    hFile = reopen();
    if (H5Lcreate_hard(hFile, "/a/b/c/d/t", hFile, "/z_alias", H5P_DEFAULT, H5P_DEFAULT) < 0 ||
        H5Lcreate_soft("/a/u", hFile, "/soft", H5P_DEFAULT, H5P_DEFAULT) < 0 ||
        H5Lcreate_soft("/nowhere", hFile, "/dangling", H5P_DEFAULT, H5P_DEFAULT) < 0)
        die("cannot make links");
    H5Fclose(hFile);
}

/* Empty tensors (a zero dim, contiguous and chunked with room to grow) and scalars. */
static void empty_and_scalar(void)
{
    uint64_t n0 = 0, a302[3] = { 3, 0, 2 };
    hsize_t aDim[2] = { 0, 4 }, aMax[2] = { H5S_UNLIMITED, 4 }, aChunk[2] = { 2, 4 };
    float f = -0.0f;
    int64_t i = -42;
    unsigned char yes = 1;
    hid_t hFile;
    begin("empty.h5");
    tensor("/empty", PARITY_DT_F32, 1, &n0, NULL);
    tensor("/empty3", PARITY_DT_BF16, 3, a302, NULL);
    end();
    hFile = reopen();
    raw_dataset(hFile, "/empty_chunked", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, aDim, aMax, aChunk,
                CHUNK_DEFLATE, 0, NULL, NULL);
    H5Fclose(hFile);

    begin("scalar.h5");
    tensor("/s32", PARITY_DT_F32, 0, NULL, &f);
    tensor("/s64", PARITY_DT_I64, 0, NULL, &i);
    tensor("/sbool", PARITY_DT_BOOL, 0, NULL, &yes);
    end();
}

/* Rank 5 with size-1 dims, chunked rank 3 with chunks that divide nothing. */
static void high_rank(void)
{
    uint64_t a5[5] = { 2, 1, 3, 1, 2 };
    hsize_t a3[3] = { 5, 3, 7 }, aChunk[3] = { 2, 2, 3 };
    float *a = ramp(105, 1.0f);
    hid_t hFile;
    begin("rank5_chunked3.h5");
    tensor("/r5", PARITY_DT_F32, 5, a5, a);
    end();
    hFile = reopen();
    raw_dataset(hFile, "/r3", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, a3, NULL, aChunk,
                CHUNK_SHUFFLE | CHUNK_DEFLATE, 0, a, NULL);
    H5Fclose(hFile);
    free(a);
}

/* A compiled side whose run failed (FORMAT.md, "run_failure"). */
static void run_failure(void)
{
    uint64_t n = 2;
    float a[2] = { 1, 2 };
    begin("run_failure.h5");
    attr_string("/", "run_failure", "RuntimeError: the kernel raised");
    tensor("/out", PARITY_DT_F32, 1, &n, a);
    end();
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    zDir = argv[1];
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    contiguous();
    chunked();
    libhdf5_paths();
    bools();
    narrow_floats();
    integers();
    attributes();
    graph();
    nested();
    empty_and_scalar();
    high_rank();
    run_failure();
    fprintf(stderr, "make_reader_corpus: %d captures\n", nFiles);
    return 0;
}
