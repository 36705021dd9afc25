/*
 * regular_file.h - opening a small file named by a user or found in a folder from
 * anywhere (a repro's signature, a tolerance file, a corpus input, a capture) so that
 * what it is cannot hang or exhaust the reader.
 *
 * Why: open(2) of a FIFO for reading blocks until a writer comes, which may be never; a
 * link to /dev/zero or a character device never ends. Only a regular file is read, and
 * the open itself never blocks (O_NONBLOCK, cleared once the file is known to be regular).
 */
#ifndef PARITY_REGULAR_FILE_H
#define PARITY_REGULAR_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Opens zPath for reading ("rb") if it is a regular file (links followed) of at most
 * maxBytes bytes (0: any size). NULL with "zPath: reason" in zErr otherwise: the open
 * error, "not a regular file (a FIFO)", or "N bytes, over the limit of M". */
FILE *parity_open_regular(const char *zPath, uint64_t maxBytes, char *zErr, size_t nErr);

#endif
