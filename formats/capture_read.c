/*
 * capture_read.c - listing and reading the tensors of a capture (any HDF5 file).
 *
 * What this file guards against, and why:
 * - External links and files named inside a capture are never opened: objects are found
 *   with H5Ovisit (which follows hard links only) and every access property list carries a
 *   traversal callback that refuses external links.
 * - Virtual datasets and external raw storage would read other files: refused per tensor.
 * - An object reached through several links (hard or soft) is listed once: H5Ovisit visits
 *   each object once, under its first path in name order.
 * - HDF5's own error stack is switched off; every failure becomes one line in zErr.
 * - Shapes whose element count overflows or exceeds PARITY_MAX_ELEMENTS are refused, and
 *   attribute reads are capped, so a hostile header cannot make us allocate without bound.
 * libhdf5 itself may still crash or hang on corrupt files; paritydiff reads in a supervised
 * child (formats/process.h) that contains that.
 *
 * Type detection follows the HDF5 type's bit fields rather than its name, so h5py's half
 * type, or any 16-bit float with 8 exponent bits (bfloat16), or 8-bit e4m3/e5m2 layouts are
 * recognised. A "dtype" attribute of "bfloat16" / "float8_e4m3fn" / "float8_e5m2" on a
 * 16-/8-bit integer dataset marks raw bit patterns (how torch tensors are saved with h5py).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <hdf5.h>
#include "formats/chunk_read_internal.h"
#include "formats/capture.h"
#include "formats/regular_file.h"
#include "formats/float_format.h"
#include "formats/alloc.h"

#define PARITY_MAX_TENSORS  1000000        /* objects listed per file */
#define PARITY_MAX_ATTR_ELEMENTS 65536     /* elements per attribute we interpret */

struct parity_capture {
    char *zFile;
    hid_t hFile;
    parity_tensor_info *aTensor;
    size_t nTensor, nAlloc;
    parity_attr *aRoot;
    size_t nRoot;
};

struct parity_tensor_reader {
    int hasRawOffset;        /* see parity_tensor_reader_raw_offset */
    uint64_t rawOffset;
    const char *zFile;       /* the capture's name; the capture outlives its readers */
    hid_t hDset;
    hid_t hMemType;
    parity_dtype dtype;
    int rank;
    uint64_t aChunk[PARITY_MAX_RANK];
    parity_chunk_reader *pChunks;   /* chunk by chunk, past libhdf5 (chunk_read_internal.h) */
};

static void (*g_xHeartbeat)(void);

void parity_capture_set_heartbeat(void (*xBeat)(void)) { g_xHeartbeat = xBeat; }

static unsigned g_maxDepth = PARITY_DEFAULT_MAX_DEPTH;
void parity_capture_set_max_depth(unsigned maxDepth)
{
    g_maxDepth = maxDepth ? maxDepth : PARITY_DEFAULT_MAX_DEPTH;
}
void parity_capture_beat(void) { if (g_xHeartbeat) g_xHeartbeat(); }

static void beat(void)
{
    if (g_xHeartbeat) g_xHeartbeat();
}

static char *dup_printf(const char *zFmt, const char *zArg)
{
    char zBuf[PARITY_ERR_LEN];
    snprintf(zBuf, sizeof zBuf, zFmt, zArg);
    return parity_strdup(zBuf);
}

/* External links are refused wherever HDF5 would traverse one. */
static herr_t refuse_external_link(const char *zParentFile, const char *zParentGroup,
                                   const char *zChildFile, const char *zChildObject,
                                   unsigned *pAccFlags, hid_t hFapl, void *pData)
{
    (void)zParentFile; (void)zParentGroup; (void)zChildFile; (void)zChildObject;
    (void)pAccFlags; (void)hFapl; (void)pData;
    return -1;
}

static hid_t make_access_plist(hid_t cls)
{
    hid_t h = H5Pcreate(cls);
    if (h >= 0) H5Pset_elink_cb(h, refuse_external_link, NULL);
    return h;
}

/* ---- attributes ------------------------------------------------------------------ */

static void attr_clear(parity_attr *pAttr)
{
    size_t i;
    free(pAttr->zName);
    if (pAttr->azStr) {
        for (i = 0; i < pAttr->n; i++) free(pAttr->azStr[i]);
        free(pAttr->azStr);
    }
    free(pAttr->aInt);
    free(pAttr->aFloat);
    memset(pAttr, 0, sizeof *pAttr);
}

/* Integer value of one enum element stored in the enum's own (native) base type. */
static int64_t enum_value(const unsigned char *p, size_t nSize, int isSigned)
{
    int64_t v = 0;
    switch (nSize) {
    case 1: v = isSigned ? (int64_t)*(const int8_t *)p : (int64_t)*p; break;
    case 2: { int16_t s; uint16_t u; memcpy(&s, p, 2); memcpy(&u, p, 2);
              v = isSigned ? s : u; break; }
    case 4: { int32_t s; uint32_t u; memcpy(&s, p, 4); memcpy(&u, p, 4);
              v = isSigned ? s : (int64_t)u; break; }
    case 8: memcpy(&v, p, 8); break;
    }
    return v;
}

/* Out of memory while reading an attribute: -2, which the readers pass up (read_attrs)
 * so that it fails the capture rather than one tensor. */
#define ATTR_OOM (-2)
static int attr_oom(const char *zName, char *zErr, size_t nErr)
{
    snprintf(zErr, nErr, "out of memory reading attribute '%s'", zName);
    return ATTR_OOM;
}

/* Reads the attribute's strings into pRaw (just allocated; NULL: out of memory) through a
 * C-string memory type nMemSize bytes long (H5T_VARIABLE: pointers HDF5 allocates) in the
 * attribute's own character set. */
static int read_raw_strings(hid_t hAttr, hid_t hType, size_t nMemSize, void *pRaw,
                            const char *zName, char *zErr, size_t nErr)
{
    hid_t hMem;
    int rc = 0;

    if (!pRaw) return attr_oom(zName, zErr, nErr);
    hMem = H5Tcopy(H5T_C_S1);
    if (hMem < 0) return attr_oom(zName, zErr, nErr);
    H5Tset_size(hMem, nMemSize);
    if (nMemSize != H5T_VARIABLE) H5Tset_strpad(hMem, H5T_STR_NULLTERM);
    H5Tset_cset(hMem, H5Tget_cset(hType));
    if (H5Aread(hAttr, hMem, pRaw) < 0) {
        snprintf(zErr, nErr, "cannot read string attribute '%s'", zName);
        rc = -1;
    }
    H5Tclose(hMem);
    return rc;
}

/* Variable-length strings: HDF5 allocates each one, we copy them into pAttr->azStr. */
static int read_vlen_strings(hid_t hAttr, hid_t hType, const char *zName, size_t n,
                             parity_attr *pAttr, char *zErr, size_t nErr)
{
    char **azRaw = parity_calloc(n, sizeof(char *));
    size_t i;
    int rc = read_raw_strings(hAttr, hType, H5T_VARIABLE, azRaw, zName, zErr, nErr);

    if (rc == 0) {
        for (i = 0; i < n; i++) {
            pAttr->azStr[i] = parity_strdup(azRaw[i] ? azRaw[i] : "");
            free(azRaw[i]);   /* HDF5 allocates vlen strings with the C allocator */
        }
        for (i = 0; i < n && rc == 0; i++)
            if (!pAttr->azStr[i]) rc = attr_oom(zName, zErr, nErr);
    }
    free(azRaw);
    return rc;
}

/* Fixed-length strings: read with room for a terminator after each, then copied. */
static int read_fixed_strings(hid_t hAttr, hid_t hType, const char *zName, size_t n,
                              parity_attr *pAttr, char *zErr, size_t nErr)
{
    size_t nChar = H5Tget_size(hType), i;
    char *zRaw;
    int rc;

    if (nChar == 0 || nChar > (1u << 20)) {
        snprintf(zErr, nErr, "string attribute '%s' has an absurd size", zName);
        return -1;
    }
    zRaw = parity_calloc(n, nChar + 1);
    /* nChar + 1: room for a terminator HDF5 writes for us */
    rc = read_raw_strings(hAttr, hType, nChar + 1, zRaw, zName, zErr, nErr);
    for (i = 0; i < n && rc == 0; i++) {
        char *zItem = zRaw + i * (nChar + 1);
        zItem[nChar] = 0;
        pAttr->azStr[i] = parity_strdup(zItem);
        if (!pAttr->azStr[i]) rc = attr_oom(zName, zErr, nErr);
    }
    free(zRaw);
    return rc;
}

/* n string values, variable- or fixed-length, into pAttr->azStr. */
static int read_string_values(hid_t hAttr, hid_t hType, const char *zName, size_t n,
                              parity_attr *pAttr, char *zErr, size_t nErr)
{
    int isVlen = H5Tis_variable_str(hType);
    pAttr->kind = PARITY_ATTR_STRING;
    pAttr->azStr = parity_calloc(n ? n : 1, sizeof(char *));
    if (!pAttr->azStr) return attr_oom(zName, zErr, nErr);
    if (n == 0) return 0;
    if (isVlen > 0) return read_vlen_strings(hAttr, hType, zName, n, pAttr, zErr, nErr);
    if (isVlen == 0) return read_fixed_strings(hAttr, hType, zName, n, pAttr, zErr, nErr);
    snprintf(zErr, nErr, "cannot read the type of attribute '%s'", zName);
    return -1;
}

/* n integers or floats, converted by HDF5 to hMemType (native int64 or double), into
 * pValue, just allocated (NULL: out of memory). */
static int read_number_values(hid_t hAttr, hid_t hMemType, void *pValue, const char *zKind,
                              const char *zName, size_t n, char *zErr, size_t nErr)
{
    if (!pValue) return attr_oom(zName, zErr, nErr);
    if (n > 0 && H5Aread(hAttr, hMemType, pValue) < 0) {
        snprintf(zErr, nErr, "cannot read %s attribute '%s'", zKind, zName);
        return -1;
    }
    return 0;
}

/* Enums (h5py stores bool as an enum over int8): read as their integer values. An enum
 * over an integer of odd size becomes PARITY_ATTR_OTHER. */
static int read_enum_values(hid_t hAttr, hid_t hType, const char *zName, size_t n,
                            parity_attr *pAttr, char *zErr, size_t nErr)
{
    hid_t hBase = H5Tget_super(hType), hMem;
    size_t nSize = hBase >= 0 ? H5Tget_size(hBase) : 0, i;
    int isSigned = hBase >= 0 && H5Tget_sign(hBase) == H5T_SGN_2;
    unsigned char *pRaw;
    int rc = -1;

    if (hBase >= 0) H5Tclose(hBase);
    if (nSize != 1 && nSize != 2 && nSize != 4 && nSize != 8) {
        pAttr->kind = PARITY_ATTR_OTHER;
        return 0;
    }
    pAttr->kind = PARITY_ATTR_INT;
    pAttr->aInt = parity_calloc(n ? n : 1, sizeof(int64_t));
    pRaw = parity_calloc(n ? n : 1, nSize);
    hMem = H5Tget_native_type(hType, H5T_DIR_ASCEND);
    if (!pAttr->aInt || !pRaw || hMem < 0) {
        rc = attr_oom(zName, zErr, nErr);
        goto cleanup;
    }
    if (n > 0 && H5Aread(hAttr, hMem, pRaw) < 0) {
        snprintf(zErr, nErr, "cannot read enum attribute '%s'", zName);
        goto cleanup;
    }
    for (i = 0; i < n; i++) pAttr->aInt[i] = enum_value(pRaw + i * nSize, nSize, isSigned);
    rc = 0;
cleanup:
    free(pRaw);
    if (hMem >= 0) H5Tclose(hMem);
    return rc;
}

/* Reads one attribute into pAttr. Types we cannot interpret become PARITY_ATTR_OTHER; only
 * a failing read is an error. */
static int read_attr(hid_t hAttr, const char *zName, parity_attr *pAttr, char *zErr,
                     size_t nErr)
{
    hid_t hType = -1, hSpace = -1;
    H5T_class_t cls;
    H5S_class_t spaceClass;
    hssize_t nPoints;
    size_t n;
    int rc = -1;

    memset(pAttr, 0, sizeof *pAttr);
    pAttr->zName = parity_strdup(zName);
    if (!pAttr->zName) {
        rc = attr_oom(zName, zErr, nErr);
        goto cleanup;
    }
    hType = H5Aget_type(hAttr);
    hSpace = H5Aget_space(hAttr);
    if (hType < 0 || hSpace < 0) {
        snprintf(zErr, nErr, "cannot read the type of attribute '%s'", zName);
        goto cleanup;
    }
    spaceClass = H5Sget_simple_extent_type(hSpace);
    nPoints = H5Sget_simple_extent_npoints(hSpace);
    if (spaceClass == H5S_NULL) nPoints = 0;
    if (nPoints < 0 || nPoints > PARITY_MAX_ATTR_ELEMENTS) {
        pAttr->kind = PARITY_ATTR_OTHER;
        if (nPoints > 0) pAttr->nOverCap = (uint64_t)nPoints;
        rc = 0;
        goto cleanup;
    }
    n = (size_t)nPoints;
    pAttr->isArray = spaceClass == H5S_SIMPLE;
    pAttr->n = n;
    cls = H5Tget_class(hType);

    if (cls == H5T_STRING) {
        rc = read_string_values(hAttr, hType, zName, n, pAttr, zErr, nErr);
    } else if (cls == H5T_INTEGER) {
        pAttr->kind = PARITY_ATTR_INT;
        pAttr->aInt = parity_calloc(n ? n : 1, sizeof(int64_t));
        rc = read_number_values(hAttr, H5T_NATIVE_INT64, pAttr->aInt, "integer", zName, n,
                                zErr, nErr);
    } else if (cls == H5T_FLOAT) {
        pAttr->kind = PARITY_ATTR_FLOAT;
        pAttr->aFloat = parity_calloc(n ? n : 1, sizeof(double));
        rc = read_number_values(hAttr, H5T_NATIVE_DOUBLE, pAttr->aFloat, "float", zName, n,
                                zErr, nErr);
    } else if (cls == H5T_ENUM) {
        rc = read_enum_values(hAttr, hType, zName, n, pAttr, zErr, nErr);
    } else {
        pAttr->kind = PARITY_ATTR_OTHER;
        rc = 0;
    }
cleanup:
    if (hType >= 0) H5Tclose(hType);
    if (hSpace >= 0) H5Sclose(hSpace);
    if (rc != 0) attr_clear(pAttr);
    return rc;
}

typedef struct {
    parity_attr *aAttr;
    size_t nAttr, nAlloc;
    char *zErr;
    size_t nErr;
    int failed;
    int oom;                  /* the failure was out of memory */
} attr_list;

static herr_t collect_attr(hid_t hLoc, const char *zName, const H5A_info_t *pInfo, void *pData)
{
    attr_list *pList = pData;
    hid_t hAttr;
    int rc;
    (void)pInfo;

    if (pList->nAttr == pList->nAlloc) {
        size_t nNew = pList->nAlloc ? 2 * pList->nAlloc : 8;
        parity_attr *aNew = nNew > 100000 ? NULL : parity_realloc(pList->aAttr, nNew * sizeof *aNew);
        if (!aNew) {
            pList->oom = nNew <= 100000;
            snprintf(pList->zErr, pList->nErr, pList->oom ? "out of memory" : "too many attributes");
            pList->failed = 1;
            return -1;
        }
        pList->aAttr = aNew;
        pList->nAlloc = nNew;
    }
    hAttr = H5Aopen(hLoc, zName, H5P_DEFAULT);
    if (hAttr < 0) {
        snprintf(pList->zErr, pList->nErr, "cannot open attribute '%s'", zName);
        pList->failed = 1;
        return -1;
    }
    rc = read_attr(hAttr, zName, &pList->aAttr[pList->nAttr], pList->zErr, pList->nErr);
    H5Aclose(hAttr);
    if (rc != 0) {
        pList->failed = 1;
        pList->oom = rc == ATTR_OOM;
        return -1;
    }
    pList->nAttr++;
    return 0;
}

static void free_attrs(parity_attr *aAttr, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) attr_clear(&aAttr[i]);
    free(aAttr);
}

/* Reads every attribute of hObj, in name order. Returns 0, or -1 with zErr (ATTR_OOM when
 * memory ran out). */
static int read_attrs(hid_t hObj, parity_attr **paAttr, size_t *pnAttr, char *zErr,
                      size_t nErr)
{
    attr_list list = { NULL, 0, 0, zErr, nErr, 0, 0 };
    hsize_t idx = 0;
    herr_t st = H5Aiterate2(hObj, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_attr, &list);
    if (st < 0 || list.failed) {
        if (!list.failed) snprintf(zErr, nErr, "cannot list attributes");
        free_attrs(list.aAttr, list.nAttr);
        return list.oom ? ATTR_OOM : -1;
    }
    *paAttr = list.aAttr;
    *pnAttr = list.nAttr;
    return 0;
}

/* ---- element types ---------------------------------------------------------------- */

/* Maps an HDF5 float type to a dtype by its bit fields: the layout every format of the float
 * table has (mantissa at bit 0, exponent above it, the sign on top, implied leading bit),
 * then the row whose width, field sizes and bias it matches. PARITY_DT_INVALID if none. */
static parity_dtype float_dtype(hid_t hType)
{
    size_t nSize = H5Tget_size(hType), spos, epos, esize, mpos, msize, ebias;
    int i;
    if (H5Tget_fields(hType, &spos, &epos, &esize, &mpos, &msize) < 0) return PARITY_DT_INVALID;
    ebias = H5Tget_ebias(hType);
    if (mpos != 0 || epos != msize || spos != epos + esize || spos != nSize * 8 - 1)
        return PARITY_DT_INVALID;
    if (H5Tget_norm(hType) != H5T_NORM_IMPLIED) return PARITY_DT_INVALID;
    for (i = 0; i < PARITY_DT_COUNT; i++) {
        const parity_float_format *pF = parity_float_format_of((parity_dtype)i);
        if (pF && nSize * 8 == (size_t)pF->nBits && esize == (size_t)pF->exponentBits &&
            msize == (size_t)pF->mantissaBits && ebias == (size_t)pF->bias)
            return pF->dtype;
    }
    return PARITY_DT_INVALID;
}

static parity_dtype int_dtype(size_t nSize, int isSigned)
{
    switch (nSize) {
    case 1: return isSigned ? PARITY_DT_I8 : PARITY_DT_U8;
    case 2: return isSigned ? PARITY_DT_I16 : PARITY_DT_U16;
    case 4: return isSigned ? PARITY_DT_I32 : PARITY_DT_U32;
    case 8: return isSigned ? PARITY_DT_I64 : PARITY_DT_U64;
    }
    return PARITY_DT_INVALID;
}

/* Is this enum h5py's bool (two members, FALSE=0 and TRUE=1, over a 1-byte integer)? */
static int is_bool_enum(hid_t hType)
{
    hid_t hBase = H5Tget_super(hType);
    size_t nBase = hBase >= 0 ? H5Tget_size(hBase) : 0;
    int nMember = H5Tget_nmembers(hType), i, ok = 1;
    if (hBase >= 0) H5Tclose(hBase);
    if (nBase != 1 || nMember != 2) return 0;
    for (i = 0; i < 2 && ok; i++) {
        char *zName = H5Tget_member_name(hType, (unsigned)i);
        unsigned char value = 0xff;
        if (!zName || H5Tget_member_value(hType, (unsigned)i, &value) < 0) ok = 0;
        else if (value == 0) ok = strcasecmp(zName, "FALSE") == 0;
        else if (value == 1) ok = strcasecmp(zName, "TRUE") == 0;
        else ok = 0;
        H5free_memory(zName);
    }
    return ok;
}

/* Memory type we read a dtype into: native order, storage layout unchanged. */
static hid_t memory_type(parity_dtype dt, hid_t hFileType)
{
    hid_t h;
    switch (dt) {
    case PARITY_DT_F64: return H5Tcopy(H5T_NATIVE_DOUBLE);
    case PARITY_DT_F32: return H5Tcopy(H5T_NATIVE_FLOAT);
    case PARITY_DT_I8: return H5Tcopy(H5T_NATIVE_INT8);
    case PARITY_DT_I16: return H5Tcopy(H5T_NATIVE_INT16);
    case PARITY_DT_I32: return H5Tcopy(H5T_NATIVE_INT32);
    case PARITY_DT_I64: return H5Tcopy(H5T_NATIVE_INT64);
    case PARITY_DT_U8: return H5Tcopy(H5T_NATIVE_UINT8);
    case PARITY_DT_U16: return H5Tcopy(H5T_NATIVE_UINT16);
    case PARITY_DT_U32: return H5Tcopy(H5T_NATIVE_UINT32);
    case PARITY_DT_U64: return H5Tcopy(H5T_NATIVE_UINT64);
    default: break;
    }
    /* 16- and 8-bit floats, bit patterns in integers, bool enums: the file's own layout in
     * little-endian order. HDF5's own small-float conversions are slow and wrong for e4m3fn
     * (0x7E, 448, becomes NaN), so we decode these ourselves (formats/dtype.c). */
    h = H5Tcopy(hFileType);
    if (h >= 0 && H5Tget_size(h) > 1 && H5Tget_class(h) != H5T_ENUM) H5Tset_order(h, H5T_ORDER_LE);
    return h;
}

/* The dtype of a dataset: from its HDF5 type, then refined by a "dtype" attribute. */
static parity_dtype dataset_dtype(hid_t hType, const parity_attr *pDtypeAttr, char **pzError)
{
    H5T_class_t cls = H5Tget_class(hType);
    size_t nSize = H5Tget_size(hType);
    parity_dtype dt = PARITY_DT_INVALID;

    if (cls == H5T_FLOAT) {
        dt = float_dtype(hType);
        if (dt == PARITY_DT_INVALID) {
            *pzError = parity_strdup("unsupported floating-point layout");
            return dt;
        }
    } else if (cls == H5T_INTEGER) {
        dt = int_dtype(nSize, H5Tget_sign(hType) == H5T_SGN_2);
    } else if (cls == H5T_ENUM && is_bool_enum(hType)) {
        dt = PARITY_DT_BOOL;
    }
    if (dt == PARITY_DT_INVALID) {
        static const char *const azClass[] = { "integer", "float", "time", "string",
            "bitfield", "opaque", "compound", "reference", "enum", "vlen", "array" };
        const char *zClass = (cls >= 0 && (int)cls < 11) ? azClass[cls] : "unknown";
        *pzError = dup_printf("unsupported element type (HDF5 class %s)", zClass);
        return dt;
    }
    if (pDtypeAttr) {
        parity_dtype marked;
        if (pDtypeAttr->kind != PARITY_ATTR_STRING || pDtypeAttr->n != 1 || pDtypeAttr->isArray) {
            *pzError = parity_strdup("attribute 'dtype' must be a string");
            return PARITY_DT_INVALID;
        }
        marked = parity_dtype_from_name(pDtypeAttr->azStr[0]);
        if (marked == PARITY_DT_INVALID) {
            *pzError = dup_printf("unknown dtype attribute '%s'", pDtypeAttr->azStr[0]);
            return PARITY_DT_INVALID;
        }
        if (marked == dt) return dt;
        /* float16 the same way: torch writes t.view(torch.int16) for both 16-bit floats */
        if (((marked == PARITY_DT_BF16 || marked == PARITY_DT_F16) &&
             (dt == PARITY_DT_U16 || dt == PARITY_DT_I16)) ||
            ((marked == PARITY_DT_F8E4M3FN || marked == PARITY_DT_F8E5M2) &&
             (dt == PARITY_DT_U8 || dt == PARITY_DT_I8)))
            return marked;
        /* A 16-bit float with 8 exponent bits is bf16 whatever the attribute; an 8-bit
         * float's exponent width decides e4m3fn vs e5m2 the same way, so the attribute can
         * only agree with it. */
        {
            char zBuf[PARITY_ERR_LEN];
            snprintf(zBuf, sizeof zBuf, "dtype attribute '%s' does not fit %s storage",
                     pDtypeAttr->azStr[0], parity_dtype_name(dt));
            *pzError = parity_strdup(zBuf);
        }
        return PARITY_DT_INVALID;
    }
    return dt;
}

/* ---- listing ---------------------------------------------------------------------- */

static void tensor_clear(parity_tensor_info *pT)
{
    size_t i;
    free(pT->zPath);
    free(pT->zStored);
    free(pT->zError);
    free(pT->zWarning);
    free(pT->zOp);
    for (i = 0; i < pT->nInput; i++) free(pT->azInput[i]);
    free(pT->azInput);
    free_attrs(pT->aAttr, pT->nAttr);
    memset(pT, 0, sizeof *pT);
}

/* pT's error, the first one said (a later one would only repeat its cause). Returns -1
 * when memory ran out storing it. */
static int tensor_error(parity_tensor_info *pT, const char *zMsg)
{
    if (pT->zError) return 0;
    pT->zError = parity_strdup(zMsg);
    return pT->zError ? 0 : -1;
}

/* Reads the metadata attributes every part of parity relies on (op, inputs, order). A
 * wrong type is an error for this tensor, not for the file. Returns -1 when memory ran
 * out (no input is ever dropped). */
static int interpret_tensor_attrs(parity_tensor_info *pT)
{
    const parity_attr *pOp = parity_attr_find(pT->aAttr, pT->nAttr, "op");
    const parity_attr *pInputs = parity_attr_find(pT->aAttr, pT->nAttr, "inputs");
    const parity_attr *pOrder = parity_attr_find(pT->aAttr, pT->nAttr, "order");
    size_t i;

    if (pOp) {
        if (pOp->kind != PARITY_ATTR_STRING || pOp->n != 1) {
            if (tensor_error(pT, "attribute 'op' must be one string") != 0) return -1;
        } else if (!(pT->zOp = parity_strdup(pOp->azStr[0]))) {
            return -1;
        }
    }
    if (pInputs) {
        /* h5py stores attrs["inputs"] = [] (an op without operands) as float64[0]: an
         * empty array of any type means no inputs. */
        if (pInputs->nOverCap > 0) {
            /* too many to read at all: saying "must be strings" would blame the type */
            char zWhy[128];
            snprintf(zWhy, sizeof zWhy, "attribute 'inputs' holds %" PRIu64 " entries, over the "
                     "cap of %d", pInputs->nOverCap, PARITY_MAX_ATTR_ELEMENTS);
            if (tensor_error(pT, zWhy) != 0) return -1;
        } else if (pInputs->kind != PARITY_ATTR_STRING && !(pInputs->isArray && pInputs->n == 0)) {
            if (tensor_error(pT, "attribute 'inputs' must be strings") != 0) return -1;
        } else {
            pT->azInput = parity_calloc(pInputs->n ? pInputs->n : 1, sizeof(char *));
            if (!pT->azInput) return -1;
            for (i = 0; i < pInputs->n; i++) {
                const char *z = pInputs->azStr[i];
                char *zFull = parity_malloc(strlen(z) + 2);
                if (!zFull) return -1;
                /* Paths are absolute in this format; "a/b" means "/a/b". */
                if (z[0] == '/') strcpy(zFull, z);
                else { zFull[0] = '/'; strcpy(zFull + 1, z); }
                pT->azInput[pT->nInput++] = zFull;
            }
        }
    }
    if (pOrder) {
        if (pOrder->kind != PARITY_ATTR_INT || pOrder->n != 1 || pOrder->isArray) {
            if (tensor_error(pT, "attribute 'order' must be one integer") != 0) return -1;
        } else {
            pT->hasOrder = 1;
            pT->iOrder = pOrder->aInt[0];
        }
    }
    return 0;
}

/* Storage this reader refuses, as pT's error: virtual and external storage (they read
 * other files) and filters this libhdf5 lacks (named now, rather than "read failed"
 * later). Returns -1 when memory ran out. */
static int check_storage(hid_t hDcpl, parity_tensor_info *pT)
{
    int nFilter, iFilter;
    if (H5Pget_layout(hDcpl) == H5D_VIRTUAL)
        return tensor_error(pT, "virtual datasets are refused (they read other files)");
    if (H5Pget_external_count(hDcpl) != 0)
        return tensor_error(pT, "external raw storage is refused (it reads other files)");
    nFilter = H5Pget_nfilters(hDcpl);
    for (iFilter = 0; iFilter < nFilter; iFilter++) {
        unsigned flags = 0, aValue[8];
        size_t nValue = 8;
        char zName[64] = "";
        H5Z_filter_t id = H5Pget_filter2(hDcpl, (unsigned)iFilter, &flags, &nValue, aValue,
                                         sizeof zName, zName, NULL);
        if (id < 0 || H5Zfilter_avail(id) <= 0) {
            char zMsg[200];
            zName[sizeof zName - 1] = 0;
            snprintf(zMsg, sizeof zMsg, "compressed with filter %d (%s), which this libhdf5 lacks",
                     (int)id, zName[0] ? zName : "unnamed");
            return tensor_error(pT, zMsg);
        }
        /* A float dataset through scaleoffset keeps only the decimal digits it was told to
         * (D-scaling): every difference may be the filter's, which must be said. */
        if (id == H5Z_FILTER_SCALEOFFSET && !pT->zWarning) {
            pT->zWarning = parity_strdup("stored with the scaleoffset filter, lossy for floats: "
                                         "the values read may not be the values written");
            if (!pT->zWarning) return -1;
        }
    }
    return 0;
}

/* Fills pT for the dataset at zPath. Problems with this tensor go to pT->zError; the
 * return value is -1 only when memory runs out. */
static int describe_dataset(hid_t hFile, const char *zPath, parity_tensor_info *pT)
{
    hid_t hDapl = -1, hDset = -1, hType = -1, hSpace = -1, hDcpl = -1;
    char zErr[PARITY_ERR_LEN];
    hsize_t aDim[H5S_MAX_RANK];
    int rank, i, rc = 0;

    memset(pT, 0, sizeof *pT);
    pT->zPath = parity_strdup(zPath);
    if (!pT->zPath) return -1;
    hDapl = make_access_plist(H5P_DATASET_ACCESS);
    hDset = H5Dopen2(hFile, zPath, hDapl);
    beat();
    if (hDset < 0) { if (tensor_error(pT, "cannot open dataset") != 0) goto oom; goto cleanup; }

    rc = read_attrs(hDset, &pT->aAttr, &pT->nAttr, zErr, sizeof zErr);
    if (rc == ATTR_OOM) goto oom;
    if (rc != 0) {
        rc = 0;
        if (tensor_error(pT, zErr) != 0) goto oom;
        goto cleanup;
    }
    if (interpret_tensor_attrs(pT) != 0) goto oom;

    hSpace = H5Dget_space(hDset);
    if (hSpace < 0) { if (tensor_error(pT, "cannot read dataspace") != 0) goto oom; goto cleanup; }
    switch (H5Sget_simple_extent_type(hSpace)) {
    case H5S_SCALAR: rank = 0; break;
    case H5S_SIMPLE: rank = H5Sget_simple_extent_ndims(hSpace); break;
    case H5S_NULL:
        if (tensor_error(pT, "dataset has a null dataspace (no shape)") != 0) goto oom;
        goto cleanup;
    default: rank = -1; break;
    }
    if (rank < 0 || rank > PARITY_MAX_RANK ||
        (rank > 0 && H5Sget_simple_extent_dims(hSpace, aDim, NULL) != rank)) {
        if (tensor_error(pT, "unreadable or absurd dataspace") != 0) goto oom;
        goto cleanup;
    }
    pT->rank = rank;
    for (i = 0; i < rank; i++) pT->aDim[i] = aDim[i];
    pT->nElem = parity_shape_elements(rank, pT->aDim);
    if (pT->nElem > PARITY_MAX_ELEMENTS) {
        pT->nElem = 0;
        if (tensor_error(pT, "absurd shape (more than 2^48 elements)") != 0) goto oom;
        goto cleanup;
    }

    hDcpl = H5Dget_create_plist(hDset);
    if (hDcpl < 0) { if (tensor_error(pT, "cannot read storage layout") != 0) goto oom; goto cleanup; }
    if (check_storage(hDcpl, pT) != 0) goto oom;
    if (pT->zError) goto cleanup;

    hType = H5Dget_type(hDset);
    if (hType < 0) { if (tensor_error(pT, "cannot read element type") != 0) goto oom; goto cleanup; }
    {
        char *zTypeErr = NULL;
        const parity_attr *pDtype = parity_attr_find(pT->aAttr, pT->nAttr, "dtype");
        pT->dtype = dataset_dtype(hType, pDtype, &zTypeErr);
        if (pT->dtype == PARITY_DT_INVALID && !zTypeErr) goto oom;   /* its message was lost */
        if (zTypeErr) {
            if (!pT->zError) pT->zError = zTypeErr;
            else free(zTypeErr);
        }
    }
    goto cleanup;
oom:
    rc = -1;
cleanup:
    if (pT->zError) pT->dtype = PARITY_DT_INVALID;
    if (hType >= 0) H5Tclose(hType);
    if (hDcpl >= 0) H5Pclose(hDcpl);
    if (hSpace >= 0) H5Sclose(hSpace);
    if (hDset >= 0) H5Dclose(hDset);
    if (hDapl >= 0) H5Pclose(hDapl);
    return rc;
}

typedef struct {
    char **azPath;
    size_t n, nAlloc;
    int failed;              /* 1 out of memory, 2 too many objects, 3 too deep */
    char *zDeep;             /* failed == 3: the first object past the depth limit */
} path_list;

/* The nesting depth of an object H5Ovisit names "a/b/c" (relative to the root): 3. */
static unsigned path_depth(const char *zName)
{
    unsigned n = 1;
    for (; *zName; zName++) n += *zName == '/';
    return n;
}

static herr_t collect_dataset(hid_t hObj, const char *zName, const H5O_info_t *pInfo, void *pData)
{
    path_list *pList = pData;
    char *zPath;
    (void)hObj;

    beat();
    /* Stop at the first object past the limit, so the visit's cost stays that of the
     * limit, whatever the file's depth. */
    if (path_depth(zName) > g_maxDepth) {
        pList->failed = 3;
        pList->zDeep = parity_strdup(zName);
        return -1;
    }
    if (pInfo->type != H5O_TYPE_DATASET) return 0;
    if (pList->n >= PARITY_MAX_TENSORS) { pList->failed = 2; return -1; }
    if (pList->n == pList->nAlloc) {
        size_t nNew = pList->nAlloc ? 2 * pList->nAlloc : 64;
        char **azNew = parity_realloc(pList->azPath, nNew * sizeof(char *));
        if (!azNew) { pList->failed = 1; return -1; }
        pList->azPath = azNew;
        pList->nAlloc = nNew;
    }
    zPath = parity_malloc(strlen(zName) + 2);
    if (!zPath) { pList->failed = 1; return -1; }
    zPath[0] = '/';
    strcpy(zPath + 1, zName);
    pList->azPath[pList->n++] = zPath;
    return 0;
}

static int compare_tensor_path(const void *a, const void *b)
{
    return strcmp(((const parity_tensor_info *)a)->zPath, ((const parity_tensor_info *)b)->zPath);
}

int parity_capture_open(const char *zFile, parity_capture **ppCap, char *zErr, size_t nErr)
{
    parity_capture *pCap = NULL;
    hid_t hFapl = -1;
    path_list paths = { NULL, 0, 0, 0, NULL };
    FILE *pProbe;
    size_t i;
    htri_t isHdf5;

    *ppCap = NULL;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);   /* per thread: our messages, not HDF5's stack */

    /* a FIFO would block libhdf5's open(2) for good; a device would never end */
    pProbe = parity_open_regular(zFile, 0, zErr, nErr);
    if (!pProbe) return -1;
    fclose(pProbe);
    isHdf5 = H5Fis_hdf5(zFile);
    if (isHdf5 <= 0) {
        snprintf(zErr, nErr, "%s: not an HDF5 file (empty, truncated or another format)", zFile);
        return -1;
    }

    pCap = parity_calloc(1, sizeof *pCap);
    if (!pCap) goto oom;
    pCap->hFile = -1;
    pCap->zFile = parity_strdup(zFile);
    if (!pCap->zFile) goto oom;
    hFapl = make_access_plist(H5P_FILE_ACCESS);
    if (hFapl >= 0) H5Pset_fclose_degree(hFapl, H5F_CLOSE_STRONG);
    pCap->hFile = H5Fopen(zFile, H5F_ACC_RDONLY, hFapl);
    beat();
    if (pCap->hFile < 0) {
        snprintf(zErr, nErr, "%s: cannot open as HDF5 (corrupt or truncated file)", zFile);
        goto fail;
    }
    if (read_attrs(pCap->hFile, &pCap->aRoot, &pCap->nRoot, zErr, nErr) != 0) {
        char zWhy[PARITY_ERR_LEN];
        snprintf(zWhy, sizeof zWhy, "%s", zErr);
        snprintf(zErr, nErr, "%s: root attributes: %s", zFile, zWhy);
        goto fail;
    }
    if (H5Ovisit2(pCap->hFile, H5_INDEX_NAME, H5_ITER_INC, collect_dataset, &paths,
                  H5O_INFO_BASIC) < 0) {
        if (paths.failed == 2)
            snprintf(zErr, nErr, "%s: more than %d objects", zFile, PARITY_MAX_TENSORS);
        else if (paths.failed == 3)
            snprintf(zErr, nErr, "%s: groups nested more than %u deep (at /%.200s%s); "
                     "paritydiff --max-depth raises the limit", zFile, g_maxDepth,
                     paths.zDeep ? paths.zDeep : "?",
                     paths.zDeep && strlen(paths.zDeep) > 200 ? "..." : "");
        else if (paths.failed == 1)
            goto oom;
        else
            snprintf(zErr, nErr, "%s: cannot list objects (corrupt file)", zFile);
        goto fail;
    }
    pCap->aTensor = parity_calloc(paths.n ? paths.n : 1, sizeof(parity_tensor_info));
    if (!pCap->aTensor) goto oom;
    for (i = 0; i < paths.n; i++) {
        if (describe_dataset(pCap->hFile, paths.azPath[i], &pCap->aTensor[i]) != 0) {
            tensor_clear(&pCap->aTensor[i]);
            goto oom;
        }
        pCap->nTensor++;
    }
    /* Name order regardless of how HDF5 indexed the groups: "file order" is name order. */
    qsort(pCap->aTensor, pCap->nTensor, sizeof(parity_tensor_info), compare_tensor_path);
    /* Tensors match by path, so a path must name one tensor. HDF5 never writes two links
     * of one name into a group, but a corrupt group can hold them (found by
     * fuzz/libfuzzer/fuzz_reader.c): both open as the same dataset, and a diff of the
     * file against itself reported one of them missing. Refuse the file. */
    for (i = 1; i < pCap->nTensor; i++)
        if (strcmp(pCap->aTensor[i - 1].zPath, pCap->aTensor[i].zPath) == 0) {
            snprintf(zErr, nErr, "%s: two datasets at one path %.300s (a corrupt group)", zFile,
                     pCap->aTensor[i].zPath);
            goto fail;
        }
    for (i = 0; i < paths.n; i++) free(paths.azPath[i]);
    free(paths.azPath);
    H5Pclose(hFapl);
    *ppCap = pCap;
    return 0;

oom:
    snprintf(zErr, nErr, "%s: out of memory", zFile);
fail:
    for (i = 0; i < paths.n; i++) free(paths.azPath[i]);
    free(paths.azPath);
    free(paths.zDeep);
    if (hFapl >= 0) H5Pclose(hFapl);
    parity_capture_close(pCap);
    return -1;
}

void parity_capture_close(parity_capture *pCap)
{
    size_t i;
    if (!pCap) return;
    for (i = 0; i < pCap->nTensor; i++) tensor_clear(&pCap->aTensor[i]);
    free(pCap->aTensor);
    free_attrs(pCap->aRoot, pCap->nRoot);
    if (pCap->hFile >= 0) H5Fclose(pCap->hFile);
    free(pCap->zFile);
    free(pCap);
}

const char *parity_capture_filename(const parity_capture *pCap) { return pCap->zFile; }
size_t parity_capture_count(const parity_capture *pCap) { return pCap->nTensor; }

const parity_tensor_info *parity_capture_tensor(const parity_capture *pCap, size_t i)
{
    return i < pCap->nTensor ? &pCap->aTensor[i] : NULL;
}

int parity_tensor_same_shape(const parity_tensor_info *pA, const parity_tensor_info *pB)
{
    int i;
    if (pA->rank != pB->rank) return 0;
    for (i = 0; i < pA->rank; i++)
        if (pA->aDim[i] != pB->aDim[i]) return 0;
    return 1;
}

uint64_t parity_shape_elements(int rank, const uint64_t *aDim)
{
    uint64_t n = 1;
    int i, anyZero = 0;
    for (i = 0; i < rank; i++) {
        if (aDim[i] == 0) { anyZero = 1; continue; }
        if (aDim[i] > PARITY_MAX_ELEMENTS / n) return PARITY_MAX_ELEMENTS + 1;  /* no wrap */
        n *= aDim[i];
    }
    return anyZero ? 0 : n;
}

long parity_capture_find(const parity_capture *pCap, const char *zPath)
{
    size_t lo = 0, hi = pCap->nTensor;
    char zKey[4096];
    if (zPath[0] != '/') {
        snprintf(zKey, sizeof zKey, "/%s", zPath);
        zPath = zKey;
    }
    while (lo < hi) {   /* aTensor is sorted by path */
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(pCap->aTensor[mid].zPath, zPath);
        if (c == 0) return (long)mid;
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return -1;
}

const parity_attr *parity_capture_root_attrs(const parity_capture *pCap, size_t *pnAttr)
{
    *pnAttr = pCap->nRoot;
    return pCap->aRoot;
}

/* ---- renaming --------------------------------------------------------------------- */

/* zPrefix without its trailing "/" and with a leading one, into zBuf ("" for the root). */
static const char *normal_prefix(const char *zPrefix, char *zBuf, size_t nBuf)
{
    size_t n;
    snprintf(zBuf, nBuf, "%s%s", zPrefix[0] == '/' ? "" : "/", zPrefix);
    n = strlen(zBuf);
    while (n > 0 && zBuf[n - 1] == '/') zBuf[--n] = 0;
    return zBuf;
}

/* zPath with prefix zOld replaced by zNew (both normal), or NULL when zPath is not under
 * zOld; *pOom on allocation failure. */
static char *renamed(const char *zPath, const char *zOld, const char *zNew, int *pOom)
{
    size_t nOld = strlen(zOld);
    const char *zRest;
    char *z;
    char zFull[4096];
    if (zPath[0] != '/') {
        snprintf(zFull, sizeof zFull, "/%s", zPath);
        zPath = zFull;
    }
    if (strncmp(zPath, zOld, nOld) != 0 || (zPath[nOld] != '/' && zPath[nOld] != 0))
        return NULL;
    zRest = zPath + nOld;
    if (!zNew[0] && !zRest[0]) return NULL;   /* the prefix itself onto the root: no name */
    z = parity_malloc(strlen(zNew) + strlen(zRest) + 1);
    if (!z) { *pOom = 1; return NULL; }
    strcpy(z, zNew);
    strcat(z, zRest);
    return z;
}

long parity_capture_map_prefix(parity_capture *pCap, const char *zOld, const char *zNew,
                               char *zErr, size_t nErr)
{
    char zO[2048], zN[2048];
    size_t i, k;
    long nRenamed = 0;
    int oom = 0;
    normal_prefix(zOld, zO, sizeof zO);
    normal_prefix(zNew, zN, sizeof zN);
    for (i = 0; i < pCap->nTensor; i++) {
        parity_tensor_info *pT = &pCap->aTensor[i];
        char *z = renamed(pT->zPath, zO, zN, &oom);
        if (z) {
            if (!pT->zStored) pT->zStored = pT->zPath;
            else free(pT->zPath);
            pT->zPath = z;
            nRenamed++;
        }
        for (k = 0; k < pT->nInput; k++) {
            char *zIn = renamed(pT->azInput[k], zO, zN, &oom);
            if (zIn) {
                free(pT->azInput[k]);
                pT->azInput[k] = zIn;
            }
        }
        if (oom) {
            snprintf(zErr, nErr, "%s: out of memory", pCap->zFile);
            return -1;
        }
    }
    qsort(pCap->aTensor, pCap->nTensor, sizeof(parity_tensor_info), compare_tensor_path);
    for (i = 1; i < pCap->nTensor; i++) {
        if (strcmp(pCap->aTensor[i - 1].zPath, pCap->aTensor[i].zPath) == 0) {
            snprintf(zErr, nErr, "%s: --map-prefix %s=%s gives two tensors the name %s",
                     pCap->zFile, zOld, zNew, pCap->aTensor[i].zPath);
            return -1;
        }
    }
    return nRenamed;
}

/* ---- reading ----------------------------------------------------------------------- */

/* Decides whether the raw bytes may be read straight from the file. Everything that could
 * make them differ from what H5Dread would give is excluded: chunking and filters, external
 * storage, big-endian order, unallocated storage (fill values), and any offset or size a
 * corrupt header could make point outside the file. */
static void find_raw_offset(const parity_capture *pCap, const parity_tensor_info *pT,
                            parity_tensor_reader *pRd, hid_t hDcpl, hid_t hFileType)
{
    size_t nSize = parity_dtype_size(pT->dtype);
    uint64_t nBytes = pT->nElem * nSize;
    haddr_t offset;
    hsize_t nStored, nFileSize = 0;

    pRd->hasRawOffset = 0;
    if (hDcpl < 0 || pT->nElem == 0 || pT->rank == 0) return;
    if (H5Pget_layout(hDcpl) != H5D_CONTIGUOUS || H5Pget_nfilters(hDcpl) != 0 ||
        H5Pget_external_count(hDcpl) != 0)
        return;
    if (H5Tget_size(hFileType) != nSize) return;
    if (nSize > 1 && H5Tget_class(hFileType) != H5T_ENUM && H5Tget_order(hFileType) != H5T_ORDER_LE)
        return;
    offset = H5Dget_offset(pRd->hDset);
    nStored = H5Dget_storage_size(pRd->hDset);
    if (offset == HADDR_UNDEF || nStored != nBytes) return;
    if (H5Fget_filesize(pCap->hFile, &nFileSize) < 0) return;
    if (offset > nFileSize || nBytes > nFileSize - offset) return;
    pRd->rawOffset = offset;
    pRd->zFile = pCap->zFile;
    pRd->hasRawOffset = 1;
}

int parity_tensor_reader_raw_offset(const parity_tensor_reader *pRd, uint64_t *pOffset,
                                    const char **pzFile)
{
    if (!pRd->hasRawOffset) return 0;
    *pOffset = pRd->rawOffset;
    *pzFile = pRd->zFile;
    return 1;
}

int parity_tensor_reader_open(parity_capture *pCap, size_t i, parity_tensor_reader **ppRd,
                              char *zErr, size_t nErr)
{
    const parity_tensor_info *pT = parity_capture_tensor(pCap, i);
    parity_tensor_reader *pRd = NULL;
    hid_t hDapl = -1, hDcpl = -1, hType = -1;
    hsize_t aChunk[H5S_MAX_RANK];
    int iDim;

    *ppRd = NULL;
    if (!pT || pT->zError) {
        snprintf(zErr, nErr, "%s: not readable", pT ? pT->zPath : "?");
        return -1;
    }
    pRd = parity_calloc(1, sizeof *pRd);
    if (!pRd) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pRd->hDset = -1;
    pRd->hMemType = -1;
    pRd->dtype = pT->dtype;
    pRd->rank = pT->rank;
    hDapl = make_access_plist(H5P_DATASET_ACCESS);
    pRd->hDset = H5Dopen2(pCap->hFile, pT->zStored ? pT->zStored : pT->zPath, hDapl);
    beat();
    if (pRd->hDset < 0) goto fail;
    hDcpl = H5Dget_create_plist(pRd->hDset);
    if (hDcpl >= 0 && H5Pget_layout(hDcpl) == H5D_CHUNKED && pT->rank > 0 &&
        H5Pget_chunk(hDcpl, pT->rank, aChunk) == pT->rank) {
        uint64_t nChunkBytes = parity_dtype_size(pT->dtype);
        for (iDim = 0; iDim < pT->rank; iDim++) {
            pRd->aChunk[iDim] = aChunk[iDim];
            nChunkBytes *= aChunk[iDim] ? aChunk[iDim] : 1;
        }
        /* Keep a band of chunks cached, so chunks spanning two slabs inflate once. Re-open
         * with the sized cache; w0 = 1 evicts fully read chunks first. */
        {
            size_t nCache = 32u << 20;
            if (nChunkBytes * 4 > nCache && nChunkBytes * 4 <= (256u << 20)) nCache = nChunkBytes * 4;
            H5Dclose(pRd->hDset);
            H5Pset_chunk_cache(hDapl, 12421, nCache, 1.0);
            pRd->hDset = H5Dopen2(pCap->hFile, pT->zStored ? pT->zStored : pT->zPath, hDapl);
            if (pRd->hDset < 0) goto fail;
        }
    }
    hType = H5Dget_type(pRd->hDset);
    if (hType < 0) goto fail;
    pRd->hMemType = memory_type(pT->dtype, hType);
    if (pRd->hMemType < 0) goto fail;
    if (hDcpl >= 0)
        pRd->pChunks = parity_chunk_reader_open(pRd->hDset, hDcpl, hType, pRd->hMemType,
                                                pT->rank, pT->aDim);
    find_raw_offset(pCap, pT, pRd, hDcpl, hType);
    H5Tclose(hType);
    if (hDcpl >= 0) H5Pclose(hDcpl);
    H5Pclose(hDapl);
    *ppRd = pRd;
    return 0;
fail:
    snprintf(zErr, nErr, "%s: cannot open dataset for reading", pT->zPath);
    if (hType >= 0) H5Tclose(hType);
    if (hDcpl >= 0) H5Pclose(hDcpl);
    if (hDapl >= 0) H5Pclose(hDapl);
    parity_tensor_reader_close(pRd);
    return -1;
}

const uint64_t *parity_tensor_reader_chunk(const parity_tensor_reader *pRd)
{
    return pRd->aChunk;
}

int parity_tensor_reader_unstored(const parity_tensor_reader *pRd)
{
    H5D_space_status_t status;
    return H5Dget_space_status(pRd->hDset, &status) >= 0 &&
           status == H5D_SPACE_STATUS_NOT_ALLOCATED;
}

int parity_tensor_reader_decodes_chunks(const parity_tensor_reader *pRd)
{
    return pRd->pChunks != NULL;
}

int parity_tensor_read(parity_tensor_reader *pRd, const parity_slab *pSlab, void *pBuf,
                       char *zErr, size_t nErr)
{
    hid_t hFileSpace = -1, hMemSpace = -1;
    hsize_t aStart[H5S_MAX_RANK], aCount[H5S_MAX_RANK], nMem = pSlab->n;
    int iDim, rc = -1;

    if (pSlab->n == 0) return 0;
    if (pRd->pChunks) {
        rc = parity_chunk_read(pRd->pChunks, pSlab->aStart, pSlab->aCount, pBuf, zErr, nErr);
        beat();
        return rc;
    }
    hFileSpace = H5Dget_space(pRd->hDset);
    if (hFileSpace < 0) goto cleanup;
    if (pRd->rank > 0) {
        for (iDim = 0; iDim < pRd->rank; iDim++) {
            aStart[iDim] = pSlab->aStart[iDim];
            aCount[iDim] = pSlab->aCount[iDim];
        }
        if (H5Sselect_hyperslab(hFileSpace, H5S_SELECT_SET, aStart, NULL, aCount, NULL) < 0)
            goto cleanup;
        hMemSpace = H5Screate_simple(1, &nMem, NULL);
    } else {
        hMemSpace = H5Screate(H5S_SCALAR);
    }
    if (hMemSpace < 0) goto cleanup;
    if (H5Dread(pRd->hDset, pRd->hMemType, hMemSpace, hFileSpace, H5P_DEFAULT, pBuf) < 0)
        goto cleanup;
    rc = 0;
cleanup:
    beat();
    if (rc != 0) snprintf(zErr, nErr, "read failed (corrupt data, or a filter this HDF5 lacks)");
    if (hMemSpace >= 0) H5Sclose(hMemSpace);
    if (hFileSpace >= 0) H5Sclose(hFileSpace);
    return rc;
}

void parity_tensor_reader_close(parity_tensor_reader *pRd)
{
    if (!pRd) return;
    parity_chunk_reader_close(pRd->pChunks);
    if (pRd->hMemType >= 0) H5Tclose(pRd->hMemType);
    if (pRd->hDset >= 0) H5Dclose(pRd->hDset);
    free(pRd);
}
