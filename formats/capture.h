/*
 * capture.h - reading and writing parity captures (HDF5 files of tensors).
 *
 * A capture is any HDF5 file: every dataset at any depth is a tensor, named by its full
 * path ("/layer1/out"). Metadata lives in optional attributes (see formats/FORMAT.md).
 * The reader never follows external links, refuses virtual datasets and external raw
 * storage, counts an object reached through several links once (under its first path in
 * name order), and keeps HDF5's error stack off the terminal.
 *
 * Data is read in slabs: linear runs of elements that are rectangular hyperslabs, planned
 * by parity_slab_* from the shape alone so both sides of a diff read the same ranges.
 *
 * Error style for the whole module: functions return 0 on success and -1 on failure with a
 * one-line reason written to zErr (nErr bytes). On failure nothing is left allocated.
 */
#ifndef PARITY_CAPTURE_H
#define PARITY_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include "formats/dtype.h"

#define PARITY_MAX_RANK 32    /* HDF5's own limit (H5S_MAX_RANK) */
/* The most elements a tensor may have: a capture's larger shape is refused, and so is an
 * op's output shape that its parameters make larger (tolerance/ops.c). 256 Ti elements:
 * beyond any real tensor, and far enough below 2^64 that offsets and counts derived from
 * it (a product with a dtype size, a sum of two) cannot wrap. */
#define PARITY_MAX_ELEMENTS (1ULL << 48)
/* prod(aDim) (0 when a dim is 0), or PARITY_MAX_ELEMENTS + 1 when a dim or the product of
 * the others is larger: the one element count of a shape, computed without wrapping. */
uint64_t parity_shape_elements(int rank, const uint64_t *aDim);
#define PARITY_ERR_LEN 512

/* ---- attributes ------------------------------------------------------------------ */

typedef enum {
    PARITY_ATTR_STRING,
    PARITY_ATTR_INT,
    PARITY_ATTR_FLOAT,
    PARITY_ATTR_OTHER   /* a type we do not interpret (compound, reference, ...) */
} parity_attr_kind;

/* One attribute. Scalars have isArray == 0 and n == 1; arrays have isArray == 1 and any
 * n >= 0. Exactly one of azStr / aInt / aFloat is used, according to kind. Booleans
 * (h5py enums) are stored as PARITY_ATTR_INT. */
typedef struct {
    char *zName;
    parity_attr_kind kind;
    int isArray;
    size_t n;
    char **azStr;
    int64_t *aInt;
    double *aFloat;
    uint64_t nOverCap;    /* > 0: kind is OTHER because the attribute holds this many
                           * elements, more than the reader interprets (capture_read.c);
                           * so an error can say why, not only that the type is wrong */
} parity_attr;

/* Finds an attribute by name in an array of n; NULL if absent. */
const parity_attr *parity_attr_find(const parity_attr *aAttr, size_t n, const char *zName);

/* Writes a compact, stable text form of the value ("abc", 3, 1.5, [1, 2], ["a", "b"]) into
 * zBuf; used to compare identity attributes and to show them. Returns zBuf. */
char *parity_attr_format(const parity_attr *pAttr, char *zBuf, size_t nBuf);

/* ---- tensors --------------------------------------------------------------------- */

typedef struct {
    char *zPath;             /* full path with leading "/": the name tensors match by */
    char *zStored;           /* its HDF5 path when parity_capture_map_prefix renamed it,
                              * else NULL (zPath is the HDF5 path) */
    parity_dtype dtype;      /* PARITY_DT_INVALID when zError is set */
    int rank;
    uint64_t aDim[PARITY_MAX_RANK];
    uint64_t nElem;          /* product of aDim; 1 for rank 0 */
    char *zError;            /* non-NULL: this tensor cannot be used, and why */
    char *zWarning;          /* non-NULL: usable, but read with care (a lossy filter) */
    /* From attributes; each may be absent. */
    char *zOp;               /* "op" */
    char **azInput;          /* "inputs", nInput entries */
    size_t nInput;
    int hasOrder;            /* "order" present and an integer */
    int64_t iOrder;
    parity_attr *aAttr;      /* every attribute, including the ones above */
    size_t nAttr;
} parity_tensor_info;

typedef struct parity_capture parity_capture;

/* Opens zFile and lists its tensors and root attributes. A file that is not HDF5 or cannot
 * be listed is an error; a dataset whose type or attributes are unusable is listed with
 * zError set. */
int parity_capture_open(const char *zFile, parity_capture **ppCap, char *zErr, size_t nErr);
void parity_capture_close(parity_capture *pCap);

const char *parity_capture_filename(const parity_capture *pCap);
size_t parity_capture_count(const parity_capture *pCap);
const parity_tensor_info *parity_capture_tensor(const parity_capture *pCap, size_t i);
/* Do the two tensors have the same shape (rank and every dim)? */
int parity_tensor_same_shape(const parity_tensor_info *pA, const parity_tensor_info *pB);

/* Index of the tensor at zPath (with or without the leading "/"), or -1. */
long parity_capture_find(const parity_capture *pCap, const char *zPath);
const parity_attr *parity_capture_root_attrs(const parity_capture *pCap, size_t *pnAttr);

/* Renames every tensor whose path starts with the path prefix zOld (whole components:
 * "/_orig_mod" matches "/_orig_mod/fc1/out", not "/_orig_modx") to start with zNew instead
 * ("" or "/" for the root), and every "inputs" entry the same way, so that captures whose
 * names differ by a wrapper's prefix (torch.compile's _orig_mod) line up. Both prefixes
 * are normalised to a leading "/" and no trailing one. Returns the number of tensors
 * renamed, or -1 with zErr when two tensors would end up with one name. */
long parity_capture_map_prefix(parity_capture *pCap, const char *zOld, const char *zNew,
                               char *zErr, size_t nErr);

/* ---- slabs ----------------------------------------------------------------------- */

/* A slab: the hyperslab start[]/count[] covering linear elements [first, first + n). */
typedef struct {
    uint64_t first;
    uint64_t n;
    uint64_t aStart[PARITY_MAX_RANK];
    uint64_t aCount[PARITY_MAX_RANK];
} parity_slab;

/* Plans slabs of at most nMaxElem elements (>= 1) over a tensor of the given shape.
 * Slabs split along the outermost dimension whose inner block fits, so each is a
 * contiguous linear run. rowAlign (>= 1) rounds the split length to a multiple of it
 * when possible (the HDF5 chunk extent, so compressed chunks are inflated once). */
typedef struct {
    int rank;
    uint64_t aDim[PARITY_MAX_RANK];
    uint64_t nElem;
    int splitDim;           /* dimension the slabs advance along */
    uint64_t nInner;        /* elements per unit of splitDim */
    uint64_t nStep;         /* units of splitDim per slab */
    uint64_t next;          /* next linear element */
} parity_slab_plan;

void parity_slab_plan_init(parity_slab_plan *pPlan, int rank, const uint64_t *aDim,
                           uint64_t nMaxElem, uint64_t rowAlign);
/* Fills *pSlab with the next slab; returns 0 when none is left. */
int parity_slab_next(parity_slab_plan *pPlan, parity_slab *pSlab);

/* Converts a linear index to a multi-index (row-major). */
void parity_unravel(int rank, const uint64_t *aDim, uint64_t linear, uint64_t *aIndex);

/* ---- reading data ---------------------------------------------------------------- */

typedef struct parity_tensor_reader parity_tensor_reader;

/* Opens tensor i for reading; fails for tensors with zError. Slab plans may align to the
 * data's HDF5 chunks (parity_tensor_reader_chunk) so each compressed chunk is inflated once. */
int parity_tensor_reader_open(parity_capture *pCap, size_t i, parity_tensor_reader **ppRd,
                              char *zErr, size_t nErr);
/* Chunk extent per dimension (all 0 when the data is not chunked). */
const uint64_t *parity_tensor_reader_chunk(const parity_tensor_reader *pRd);
/* 1 when the chunks are read and decoded here, past libhdf5's selection machinery and on
 * several threads (formats/chunk_read.c: no filter, shuffle, deflate, both); 0 when
 * libhdf5 reads them (other filters, conversions) or the data is not chunked. */
int parity_tensor_reader_decodes_chunks(const parity_tensor_reader *pRd);
/* 1 when the tensor stores no data at all: a dataset created and never written, whose
 * storage libhdf5 allocates lazily, so every element reads as the same fill value. A 6 KB
 * file can declare 2^48 such elements; readers judge them by one element (diff/engine.c). */
int parity_tensor_reader_unstored(const parity_tensor_reader *pRd);
/* Group nesting a capture may have (0: PARITY_DEFAULT_MAX_DEPTH). Deeper files are
 * refused when listed: libhdf5's H5Ovisit costs about depth^3 (depth 300 0.27 s, 600 2.0 s,
 * 1,000 22.5 s, 2,000 over 100 s, measured with paritydiff on h5py files), and real
 * captures nest a few levels (module paths such as /layers/0/self_attn/out are 4). */
#define PARITY_DEFAULT_MAX_DEPTH 64
void parity_capture_set_max_depth(unsigned maxDepth);
/* Threads that inflate chunks in the readers of this process (0: the cores online). */
void parity_capture_set_decode_threads(int nThreads);
/* Reads the slab into pBuf (pSlab->n * parity_dtype_size(dtype) bytes) in the dtype's
 * little-endian storage form. */
int parity_tensor_read(parity_tensor_reader *pRd, const parity_slab *pSlab, void *pBuf,
                       char *zErr, size_t nErr);
void parity_tensor_reader_close(parity_tensor_reader *pRd);

/* When the tensor's bytes sit in the file exactly in our storage form (contiguous layout,
 * no filters, little-endian or single-byte, fully allocated and inside the file), stores
 * their byte offset in *pOffset and the file's name in *pzFile and returns 1, so callers
 * may map the file instead of copying through libhdf5. Returns 0 otherwise. */
int parity_tensor_reader_raw_offset(const parity_tensor_reader *pRd, uint64_t *pOffset,
                                    const char **pzFile);

/* A hook called after each slab read and each dataset opened, so a supervising process
 * can tell slow progress from a hang. NULL by default. */
void parity_capture_set_heartbeat(void (*xBeat)(void));
/* Calls that heartbeat (if set): for read paths outside this reader that make progress on
 * their own, such as diff/source.c's mapped windows, whose pages the judging threads fault
 * in with no libhdf5 call at all. */
void parity_capture_beat(void);

/* ---- writing --------------------------------------------------------------------- */

typedef struct parity_writer parity_writer;

/* Creates zFile atomically: data goes to a temporary file beside it, renamed over zFile by
 * parity_writer_close; parity_writer_abort (or a crash) leaves zFile untouched. */
int parity_writer_open(const char *zFile, parity_writer **ppW, char *zErr, size_t nErr);
int parity_writer_close(parity_writer *pW, char *zErr, size_t nErr);
void parity_writer_abort(parity_writer *pW);

/* Called first in main() of every program that writes captures, before any other HDF5
 * call. When H5Fclose fails (a full disk), libhdf5 1.10 keeps the half-closed file in its
 * tables and its exit handler then crashes on it (HDFFV-11052: SIGSEGV in H5F__close_cb
 * from H5_term_library, seen here with the disk filled by RLIMIT_FSIZE). Every file we
 * open is closed by us, so the handler has nothing else to do: it is turned off
 * (H5dont_atexit) and a failed write ends in our one line and exit 2. */
void parity_hdf5_no_exit_handler(void);

/* Root ("/") or tensor attributes; zPath NULL or "/" means the root group. */
int parity_writer_attr_string(parity_writer *pW, const char *zPath, const char *zName,
                              const char *zValue);
int parity_writer_attr_strings(parity_writer *pW, const char *zPath, const char *zName,
                               const char *const *azValue, size_t n);
int parity_writer_attr_int(parity_writer *pW, const char *zPath, const char *zName,
                           int64_t value);
int parity_writer_attr_ints(parity_writer *pW, const char *zPath, const char *zName,
                            const int64_t *aValue, size_t n);
int parity_writer_attr_float(parity_writer *pW, const char *zPath, const char *zName,
                             double value);

/* Writes a whole tensor from storage bytes (parity_dtype_size(dt) * nElem). Intermediate
 * groups are created. f16 is stored as an IEEE half (as h5py does); bf16 and fp8 as
 * uint16/uint8 bit patterns with a "dtype" attribute; bool as h5py's enum. */
int parity_writer_tensor(parity_writer *pW, const char *zPath, parity_dtype dt, int rank,
                         const uint64_t *aDim, const void *pData);

/* Streaming form for large tensors: begin, then append slabs along dimension 0 in order
 * (each a whole number of rows), then end. The dataset is contiguous (the fastest layout
 * to read back) and filled by hyperslabs, so the whole tensor is never in memory. */
int parity_writer_tensor_begin(parity_writer *pW, const char *zPath, parity_dtype dt,
                               int rank, const uint64_t *aDim);
int parity_writer_tensor_append(parity_writer *pW, const void *pRows, uint64_t nRows);
int parity_writer_tensor_end(parity_writer *pW);

/* The last writer error (one line). */
const char *parity_writer_error(const parity_writer *pW);

#endif
