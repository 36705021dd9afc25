/*
 * report.h - the report writers: they turn a parity_diff_result into a compact text report
 * for people (parity_report_text) and a JSON document for programs (parity_report_json;
 * the schema is documented in diff/REPORT.md). Writers only read the result.
 *
 * The second half declares the few helpers both writers share (implemented in
 * report_text.c), so the two reports cannot disagree on what shape a tensor has, how many
 * elements it holds, where its worst element is or how many tensors had each status.
 */
#ifndef PARITY_REPORT_H
#define PARITY_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "diff/diff.h"

/* Writes the text report to pOut. Returns 0, or -1 when writing failed. */
int parity_report_text(const parity_diff_result *pRes, FILE *pOut);

/* Writes the JSON report to zPath; "-" means stdout. A file is replaced atomically: the
 * document goes to a temporary file beside it (mkstemp), is fsynced and renamed over
 * zPath, so readers see the old file or the complete new one, never a torn one; the
 * temporary file is removed on failure. Returns 0, or -1 with a one-line reason in zErr. */
int parity_report_json(const parity_diff_result *pRes, const char *zPath, char *zErr,
                       size_t nErr);

/* Writes a report to zPath ("-": stdout) the atomic way above (a path that exists and is
 * not a regular file, /dev/null or a FIFO, is written in place: never replaced): xWrite(pCtx, pFile) writes
 * the whole report and returns 0, -1 when writing failed (errno says why) or -2 when
 * memory ran out. Every report of reports/ (JSON, JUnit, OpenMetrics, HTML) is written
 * through it. Returns 0, or -1 with a one-line reason in zErr. */
int parity_report_write_file(const char *zPath, int (*xWrite)(void *pCtx, FILE *pFile),
                             void *pCtx, char *zErr, size_t nErr);
/* Writes any JSON document to zPath ("-": stdout) the same atomic way; the fuzz summary
 * (report_fuzz.c) uses it too. Returns 0, or -1 with zErr. */
int parity_report_json_write(json_t *pDoc, const char *zPath, char *zErr, size_t nErr);
/* jansson allocates through the library's allocator (formats/alloc.h), so out of memory
 * in a report is counted, and injected, like any other. Idempotent; every builder here
 * calls it before its first jansson object. */
void parity_report_use_allocator(void);
/* Root attributes as a JSON object, as the report's "identity" (wantTelemetry 0: the keys
 * that are not telemetry) or "telemetry" (1) shows them; NULL when memory ran out. */
json_t *parity_report_attrs_json(const parity_attr *aAttr, size_t nAttr, int wantTelemetry);
/* Builds the JSON document (a new reference, or NULL when memory ran out). */
json_t *parity_report_json_build(const parity_diff_result *pRes);

/* ---- helpers shared by the two writers ------------------------------------------ */

#define PARITY_REPORT_NSTATUS ((int)PARITY_ST_DTYPE_MISMATCH + 1)

/* Room for any dimension list parity_report_format_dims writes: per dimension two 20-digit
 * numbers, ':' and ", ", plus the brackets. */
#define PARITY_REPORT_DIMS_LEN (PARITY_MAX_RANK * 44 + 3)

/* aCount[st] = number of tensors with status st. */
void parity_report_count_statuses(const parity_diff_result *pRes,
                                  uint64_t aCount[PARITY_REPORT_NSTATUS]);

/* The shape a report shows for a tensor: the eager one, or the compiled one when the
 * tensor is missing in eager. */
void parity_report_shape(const parity_tensor_result *pT, int *pRank, const uint64_t **paDim);

/* 1 when the tensor exists in the compiled capture: not missing_in_compiled, and not
 * rankCompiled < 0, which the engine uses for "no compiled side" (also on errors). */
int parity_report_has_compiled(const parity_tensor_result *pT);

/* The compiled shape (rankCompiled/aDimCompiled), rank clamped like the above. */
void parity_report_compiled_shape(const parity_tensor_result *pT, int *pRank,
                                  const uint64_t **paDim);

/* Elements of the tensor: stats.nElem when stats exist, else the product of the shown
 * shape (saturating at UINT64_MAX). */
uint64_t parity_report_elements(const parity_tensor_result *pT);

/* Fills aIndex (rank entries) with the multi-index of the worst element and returns 1;
 * returns 0 when there is none (no stats, or no elements). */
int parity_report_worst_index(const parity_tensor_result *pT, uint64_t *aIndex);

/* 1 when the tensor has a bounding box of failing elements (stats.aSliceLo/Hi). */
int parity_report_has_slice(const parity_tensor_result *pT);

/* Writes "[a, b, c]" (aHi NULL) or numpy-like half-open ranges "[lo:hi, lo:hi]" into zBuf;
 * "[]" for rank 0. Truncates to nBuf. Returns zBuf. */
char *parity_report_format_dims(int rank, const uint64_t *aLo, const uint64_t *aHi,
                                char *zBuf, size_t nBuf);

#endif
