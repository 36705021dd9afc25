/*
 * report_fuzz.h - the JSON summary of a parityfuzz campaign (schema in fuzz/FUZZ.md).
 */
#ifndef PARITY_REPORT_FUZZ_H
#define PARITY_REPORT_FUZZ_H

#include "fuzz/search/search.h"

/* Writes the summary to zPath ("-": stdout) atomically. Returns 0, or -1 with zErr. */
int parity_report_fuzz_json(const parity_campaign_options *pOpt,
                            const parity_campaign_result *pRes, const char *zPath,
                            char *zErr, size_t nErr);

#endif
