/*
 * report_fuzz.h - the JSON summary of a parityfuzz campaign (schema in fuzz/FUZZ.md).
 *
 * It reads the campaign's plain result only (fuzz/search/result.h: counts, findings, and
 * the echo of the options that shaped them, defect names included); no fuzz internals.
 */
#ifndef PARITY_REPORT_FUZZ_H
#define PARITY_REPORT_FUZZ_H

#include "fuzz/search/result.h"
#include "fuzz/search/search.h"

/* Writes the summary to zPath ("-": stdout) atomically. Returns 0, or -1 with zErr. */
int parity_report_fuzz_json(const parity_campaign_result *pRes, const char *zPath, char *zErr,
                            size_t nErr);

/* Writes what `parityfuzz shrink` did (fuzz/FUZZ.md, "Shrinking a captured op") to zPath
 * ("-": stdout) atomically; diverges 0: the whole op did not diverge (no crop, no repro).
 * Returns 0, or -1 with zErr. */
int parity_report_shrink_json(const parity_stored_op *pS, const parity_stored_minimized *pMin,
                              int diverges, const char *zRepro, const char *zPath, char *zErr,
                              size_t nErr);

#endif
