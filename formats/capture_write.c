/*
 * capture_write.c - writing captures in the layout formats/FORMAT.md describes, the same
 * layout plain h5py produces, so files from either source read alike.
 *
 * Files are written atomically: HDF5 writes into a temporary file next to the target
 * (mkstemp, same directory so rename(2) stays within one filesystem), which is flushed,
 * fsync'ed and renamed over the target on close. Readers never see a half-written capture.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <hdf5.h>
#include "formats/capture.h"
#include "formats/float_format.h"
#include "formats/alloc.h"

struct parity_writer {
    char *zFile;
    char *zTemp;
    hid_t hFile;
    char zErr[PARITY_ERR_LEN];
    /* streaming state */
    hid_t hStream;
    parity_dtype streamDtype;
    int streamRank;
    uint64_t aStreamDim[PARITY_MAX_RANK];
    uint64_t nStreamRow;     /* rows written so far */
};

static int fail(parity_writer *pW, const char *zFmt, ...)
{
    va_list ap;
    va_start(ap, zFmt);
    vsnprintf(pW->zErr, sizeof pW->zErr, zFmt, ap);
    va_end(ap);
    return -1;
}

const char *parity_writer_error(const parity_writer *pW) { return pW->zErr; }

int parity_writer_open(const char *zFile, parity_writer **ppW, char *zErr, size_t nErr)
{
    parity_writer *pW;
    int fd;

    *ppW = NULL;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    pW = parity_calloc(1, sizeof *pW);
    if (!pW) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pW->hFile = -1;
    pW->hStream = -1;
    pW->zFile = parity_strdup(zFile);
    pW->zTemp = parity_malloc(strlen(zFile) + 16);
    if (!pW->zFile || !pW->zTemp) { snprintf(zErr, nErr, "out of memory"); goto fail; }
    sprintf(pW->zTemp, "%s.tmp.XXXXXX", zFile);
    fd = mkstemp(pW->zTemp);
    if (fd < 0) {
        snprintf(zErr, nErr, "%s: cannot create a temporary file: %s", zFile, strerror(errno));
        free(pW->zTemp);
        pW->zTemp = NULL;
        goto fail;
    }
    {
        /* mkstemp creates 0600; a capture is an ordinary file, so give it the mode any
         * other new file would get (0666 less the umask, read back by setting it). */
        mode_t mask = umask(0);
        umask(mask);
        fchmod(fd, 0666 & ~mask);
    }
    close(fd);
    pW->hFile = H5Fcreate(pW->zTemp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (pW->hFile < 0) {
        snprintf(zErr, nErr, "%s: cannot create HDF5 file", zFile);
        goto fail;
    }
    *ppW = pW;
    return 0;
fail:
    parity_writer_abort(pW);
    return -1;
}

void parity_writer_abort(parity_writer *pW)
{
    if (!pW) return;
    if (pW->hStream >= 0) H5Dclose(pW->hStream);
    if (pW->hFile >= 0) H5Fclose(pW->hFile);
    if (pW->zTemp) unlink(pW->zTemp);
    free(pW->zTemp);
    free(pW->zFile);
    free(pW);
}

void parity_hdf5_no_exit_handler(void)
{
    H5dont_atexit();   /* fails only once the library is up: then it is too late anyway */
}

/* H5Ewalk2 callback: the operating system's reason, which the sec2 driver puts in its
 * message as "..., errno = 28, error message = 'No space left on device', ...". */
static herr_t find_system_reason(unsigned n, const H5E_error2_t *pE, void *pCtx)
{
    static const char zMark[] = "error message = '";
    const char *z = pE->desc ? strstr(pE->desc, zMark) : NULL;
    char *zReason = pCtx;
    (void)n;
    if (!z || zReason[0]) return 0;
    z += sizeof zMark - 1;
    snprintf(zReason, 128, "%.*s", (int)strcspn(z, "'"), z);
    return 0;
}

int parity_writer_close(parity_writer *pW, char *zErr, size_t nErr)
{
    int fd, rc = -1;

    if (pW->hStream >= 0) {
        snprintf(zErr, nErr, "%s: a streamed tensor was not ended", pW->zFile);
        goto done;
    }
    if (H5Fclose(pW->hFile) < 0) {
        char zReason[128] = "";
        pW->hFile = -1;
        H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, find_system_reason, zReason);
        snprintf(zErr, nErr, "%s: cannot finish HDF5 file%s%s", pW->zFile, zReason[0] ? ": " : "",
                 zReason);
        goto done;
    }
    pW->hFile = -1;
    fd = open(pW->zTemp, O_RDONLY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    if (rename(pW->zTemp, pW->zFile) != 0) {
        snprintf(zErr, nErr, "%s: cannot rename into place: %s", pW->zFile, strerror(errno));
        goto done;
    }
    free(pW->zTemp);
    pW->zTemp = NULL;
    rc = 0;
done:
    parity_writer_abort(pW);
    return rc;
}

/* ---- attributes ------------------------------------------------------------------ */

static hid_t open_target(parity_writer *pW, const char *zPath)
{
    if (!zPath || strcmp(zPath, "/") == 0 || zPath[0] == 0) return H5Gopen2(pW->hFile, "/", H5P_DEFAULT);
    return H5Oopen(pW->hFile, zPath, H5P_DEFAULT);
}

static void close_target(hid_t h)
{
    if (h >= 0) H5Oclose(h);
}

static int write_attr(parity_writer *pW, const char *zPath, const char *zName, hid_t hType,
                      int isArray, size_t n, const void *pData)
{
    hid_t hObj = open_target(pW, zPath), hSpace = -1, hAttr = -1;
    hsize_t nDim = n;
    int rc = -1;

    if (hObj < 0) return fail(pW, "%s: no such object for attribute '%s'", zPath ? zPath : "/", zName);
    if (H5Aexists(hObj, zName) > 0) H5Adelete(hObj, zName);
    hSpace = isArray ? H5Screate_simple(1, &nDim, NULL) : H5Screate(H5S_SCALAR);
    if (hSpace < 0) goto done;
    hAttr = H5Acreate2(hObj, zName, hType, hSpace, H5P_DEFAULT, H5P_DEFAULT);
    if (hAttr < 0) goto done;
    /* An empty array has nothing to write (HDF5 refuses a NULL buffer even then). */
    if ((n > 0 || !isArray) && H5Awrite(hAttr, hType, pData) < 0) goto done;
    rc = 0;
done:
    if (rc != 0) fail(pW, "cannot write attribute '%s'", zName);
    if (hAttr >= 0) H5Aclose(hAttr);
    if (hSpace >= 0) H5Sclose(hSpace);
    close_target(hObj);
    return rc;
}

/* Variable-length UTF-8 strings, as h5py writes Python str. */
static hid_t vlen_string_type(void)
{
    hid_t h = H5Tcopy(H5T_C_S1);
    H5Tset_size(h, H5T_VARIABLE);
    H5Tset_cset(h, H5T_CSET_UTF8);
    return h;
}

int parity_writer_attr_string(parity_writer *pW, const char *zPath, const char *zName,
                              const char *zValue)
{
    hid_t hType = vlen_string_type();
    int rc = write_attr(pW, zPath, zName, hType, 0, 1, &zValue);
    H5Tclose(hType);
    return rc;
}

int parity_writer_attr_strings(parity_writer *pW, const char *zPath, const char *zName,
                               const char *const *azValue, size_t n)
{
    hid_t hType = vlen_string_type();
    int rc = write_attr(pW, zPath, zName, hType, 1, n, azValue);
    H5Tclose(hType);
    return rc;
}

int parity_writer_attr_int(parity_writer *pW, const char *zPath, const char *zName,
                           int64_t value)
{
    return write_attr(pW, zPath, zName, H5T_NATIVE_INT64, 0, 1, &value);
}

int parity_writer_attr_ints(parity_writer *pW, const char *zPath, const char *zName,
                            const int64_t *aValue, size_t n)
{
    return write_attr(pW, zPath, zName, H5T_NATIVE_INT64, 1, n, aValue);
}

int parity_writer_attr_float(parity_writer *pW, const char *zPath, const char *zName,
                             double value)
{
    return write_attr(pW, zPath, zName, H5T_NATIVE_DOUBLE, 0, 1, &value);
}

/* ---- tensors --------------------------------------------------------------------- */

/* The file type of a dtype; *pzMark receives the "dtype" attribute value for formats
 * stored as integer bit patterns (NULL otherwise). */
static hid_t file_type(parity_dtype dt, const char **pzMark)
{
    hid_t h;
    *pzMark = NULL;
    switch (dt) {
    case PARITY_DT_F64: return H5Tcopy(H5T_IEEE_F64LE);
    case PARITY_DT_F32: return H5Tcopy(H5T_IEEE_F32LE);
    case PARITY_DT_F16: {
        /* IEEE binary16 as h5py defines it: sign bit 15, exponent bits 10-14, mantissa 0-9,
         * the float table's layout. The fields shrink before the size so each call leaves
         * a valid type. */
        const parity_float_format *pF = parity_float_format_of(dt);
        h = H5Tcopy(H5T_IEEE_F32LE);
        H5Tset_fields(h, (size_t)pF->nBits - 1, (size_t)pF->mantissaBits,
                      (size_t)pF->exponentBits, 0, (size_t)pF->mantissaBits);
        H5Tset_size(h, (size_t)pF->nBits / 8);
        H5Tset_ebias(h, (size_t)pF->bias);
        return h;
    }
    case PARITY_DT_BF16: *pzMark = parity_dtype_name(dt); return H5Tcopy(H5T_STD_U16LE);
    case PARITY_DT_F8E4M3FN:
    case PARITY_DT_F8E5M2: *pzMark = parity_dtype_name(dt); return H5Tcopy(H5T_STD_U8LE);
    case PARITY_DT_I8: return H5Tcopy(H5T_STD_I8LE);
    case PARITY_DT_I16: return H5Tcopy(H5T_STD_I16LE);
    case PARITY_DT_I32: return H5Tcopy(H5T_STD_I32LE);
    case PARITY_DT_I64: return H5Tcopy(H5T_STD_I64LE);
    case PARITY_DT_U8: return H5Tcopy(H5T_STD_U8LE);
    case PARITY_DT_U16: return H5Tcopy(H5T_STD_U16LE);
    case PARITY_DT_U32: return H5Tcopy(H5T_STD_U32LE);
    case PARITY_DT_U64: return H5Tcopy(H5T_STD_U64LE);
    case PARITY_DT_BOOL: {
        /* h5py's bool: an enum over int8 with FALSE = 0 and TRUE = 1. */
        signed char v;
        h = H5Tenum_create(H5T_NATIVE_INT8);
        v = 0; H5Tenum_insert(h, "FALSE", &v);
        v = 1; H5Tenum_insert(h, "TRUE", &v);
        return h;
    }
    default: return -1;
    }
}

static hid_t create_dataset(parity_writer *pW, const char *zPath, parity_dtype dt, int rank,
                            const uint64_t *aDim, hid_t *phType)
{
    hid_t hType, hSpace, hLcpl, hDset;
    hsize_t aH5Dim[PARITY_MAX_RANK];
    const char *zMark;
    int i;

    *phType = -1;
    if (rank < 0 || rank > PARITY_MAX_RANK) { fail(pW, "%s: bad rank %d", zPath, rank); return -1; }
    hType = file_type(dt, &zMark);
    if (hType < 0) { fail(pW, "%s: cannot store dtype %s", zPath, parity_dtype_name(dt)); return -1; }
    for (i = 0; i < rank; i++) aH5Dim[i] = aDim[i];
    hSpace = rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, aH5Dim, NULL);
    hLcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(hLcpl, 1);
    hDset = H5Dcreate2(pW->hFile, zPath, hType, hSpace, hLcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Pclose(hLcpl);
    H5Sclose(hSpace);
    if (hDset < 0) {
        H5Tclose(hType);
        fail(pW, "%s: cannot create dataset (exists already, or bad path)", zPath);
        return -1;
    }
    *phType = hType;
    if (zMark) {
        H5Dclose(hDset);
        if (parity_writer_attr_string(pW, zPath, "dtype", zMark) != 0) {
            H5Tclose(hType);
            *phType = -1;
            return -1;
        }
        hDset = H5Dopen2(pW->hFile, zPath, H5P_DEFAULT);
    }
    return hDset;
}

/* The memory type matching our little-endian storage bytes of dt. */
static hid_t memory_type_for(parity_dtype dt, hid_t hFileType)
{
    if (dt == PARITY_DT_F64) return H5Tcopy(H5T_NATIVE_DOUBLE);
    if (dt == PARITY_DT_F32) return H5Tcopy(H5T_NATIVE_FLOAT);
    return H5Tcopy(hFileType);   /* everything else is stored in our own byte layout */
}

int parity_writer_tensor(parity_writer *pW, const char *zPath, parity_dtype dt, int rank,
                         const uint64_t *aDim, const void *pData)
{
    hid_t hType, hMem, hDset = create_dataset(pW, zPath, dt, rank, aDim, &hType);
    uint64_t nElem = 1;
    int i, rc = 0;

    if (hDset < 0) return -1;
    for (i = 0; i < rank; i++) nElem *= aDim[i];
    hMem = memory_type_for(dt, hType);
    if (nElem > 0 && H5Dwrite(hDset, hMem, H5S_ALL, H5S_ALL, H5P_DEFAULT, pData) < 0)
        rc = fail(pW, "%s: write failed", zPath);
    H5Tclose(hMem);
    H5Tclose(hType);
    H5Dclose(hDset);
    return rc;
}

int parity_writer_tensor_begin(parity_writer *pW, const char *zPath, parity_dtype dt,
                               int rank, const uint64_t *aDim)
{
    hid_t hType;
    if (pW->hStream >= 0) return fail(pW, "%s: another streamed tensor is open", zPath);
    if (rank < 1) return fail(pW, "%s: streaming needs rank >= 1", zPath);
    pW->hStream = create_dataset(pW, zPath, dt, rank, aDim, &hType);
    if (pW->hStream < 0) return -1;
    H5Tclose(hType);
    pW->streamDtype = dt;
    pW->streamRank = rank;
    memcpy(pW->aStreamDim, aDim, (size_t)rank * sizeof(uint64_t));
    pW->nStreamRow = 0;
    return 0;
}

int parity_writer_tensor_append(parity_writer *pW, const void *pRows, uint64_t nRows)
{
    hid_t hFileSpace, hMemSpace, hFileType, hMem;
    hsize_t aStart[PARITY_MAX_RANK] = { 0 }, aCount[PARITY_MAX_RANK];
    int i, rc = 0;

    if (pW->hStream < 0) return fail(pW, "no streamed tensor is open");
    if (nRows == 0) return 0;
    if (pW->nStreamRow + nRows > pW->aStreamDim[0]) return fail(pW, "too many rows appended");
    aStart[0] = pW->nStreamRow;
    aCount[0] = nRows;
    for (i = 1; i < pW->streamRank; i++) aCount[i] = pW->aStreamDim[i];
    hFileSpace = H5Dget_space(pW->hStream);
    H5Sselect_hyperslab(hFileSpace, H5S_SELECT_SET, aStart, NULL, aCount, NULL);
    hMemSpace = H5Screate_simple(pW->streamRank, aCount, NULL);
    hFileType = H5Dget_type(pW->hStream);
    hMem = memory_type_for(pW->streamDtype, hFileType);
    if (H5Dwrite(pW->hStream, hMem, hMemSpace, hFileSpace, H5P_DEFAULT, pRows) < 0)
        rc = fail(pW, "streamed write failed");
    H5Tclose(hMem);
    H5Tclose(hFileType);
    H5Sclose(hMemSpace);
    H5Sclose(hFileSpace);
    if (rc == 0) pW->nStreamRow += nRows;
    return rc;
}

int parity_writer_tensor_end(parity_writer *pW)
{
    int rc = 0;
    if (pW->hStream < 0) return fail(pW, "no streamed tensor is open");
    if (pW->nStreamRow != pW->aStreamDim[0]) rc = fail(pW, "streamed tensor is incomplete");
    H5Dclose(pW->hStream);
    pW->hStream = -1;
    return rc;
}
