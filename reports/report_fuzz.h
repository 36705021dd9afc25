/*
 * report_fuzz.h - the JSON summary of a parityfuzz campaign (schema in fuzz/FUZZ.md).
 *
 * It reads the campaign's plain result only (fuzz/search/result.h: counts, findings, and
 * the echo of the options that shaped them, defect names included); no fuzz internals.
 */
#ifndef PARITY_REPORT_FUZZ_H
#define PARITY_REPORT_FUZZ_H

#include "fuzz/search/result.h"

/* Writes the summary to zPath ("-": stdout) atomically. Returns 0, or -1 with zErr. */
int parity_report_fuzz_json(const parity_campaign_result *pRes, const char *zPath, char *zErr,
                            size_t nErr);

#endif
