/*
 * chunk_read_internal.h - reading chunked datasets chunk by chunk, past libhdf5's
 * selection machinery (chunk_read.c).
 *
 * libhdf5 maps a hyperslab that does not follow the chunks element run by element run
 * (H5S_select_iterate, H5VM_chunk_index_scaled), and inflates on the one thread that holds
 * its global lock: chunked and compressed captures read no faster than h5diff. For the
 * pipelines it can decode itself (none; shuffle; deflate; shuffle then deflate) over a type
 * stored exactly as the memory type, the reader takes each chunk's stored bytes
 * (H5Dread_chunk), checks them, and inflates and unshuffles them on several threads
 * (libdeflate), then copies the slab's part out of them. Anything else (fletcher32, szip,
 * third-party filters, big-endian data, a conversion) still goes through libhdf5.
 */
#ifndef PARITY_FORMATS_CHUNK_READ_INTERNAL_H
#define PARITY_FORMATS_CHUNK_READ_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <hdf5.h>

typedef struct parity_chunk_reader parity_chunk_reader;

/* A chunk reader for dataset hDset (creation list hDcpl, memory type hMemType, file type
 * hFileType), or NULL when its layout, filters or type are not ones this file decodes, or
 * PARITY_NO_CHUNK_READER is set in the environment (the tests' libhdf5 path): the caller
 * reads through libhdf5 then. */
parity_chunk_reader *parity_chunk_reader_open(hid_t hDset, hid_t hDcpl, hid_t hFileType,
                                              hid_t hMemType, int rank, const uint64_t *aDim);

/* Reads the box [aStart, aStart + aCount) in row-major order into pBuf. Returns 0, or -1
 * with a one-line reason in zErr (a chunk that does not inflate to its size, a stored
 * chunk larger than it could be, a read that fails). */
int parity_chunk_read(parity_chunk_reader *p, const uint64_t *aStart, const uint64_t *aCount,
                      void *pBuf, char *zErr, size_t nErr);

void parity_chunk_reader_close(parity_chunk_reader *p);

#endif
