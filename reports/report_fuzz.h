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

#include <stdio.h>
#include <jansson.h>

/* The root causes as the summary's "root_causes" array (FUZZ.md); NULL when out of memory.
 * `parityfuzz triage` writes the same array. */
json_t *parity_report_root_causes_json(const parity_finding *aFinding,
                                       const parity_root_cause *aCause, size_t nCause);

/* The root causes as text, one line each ("root cause 1: max/min (relu, maximum) float32:
 * nan lost, trigger nan input; 3 signatures") with the smallest repro under it. 0, or -1
 * on a write error. */
int parity_report_root_causes_text(FILE *pOut, const parity_finding *aFinding,
                                   const parity_root_cause *aCause, size_t nCause);

/* Writes the summary to zPath ("-": stdout) atomically. Returns 0, or -1 with zErr. */
int parity_report_fuzz_json(const parity_campaign_result *pRes, const char *zPath, char *zErr,
                            size_t nErr);

/* Writes what `parityfuzz shrink` did (fuzz/FUZZ.md, "Shrinking a captured op") to zPath
 * ("-": stdout) atomically; diverges 0: the whole op did not diverge (no crop, no repro).
 * Returns 0, or -1 with zErr. */
int parity_report_shrink_json(const parity_stored_op *pS, const parity_stored_minimized *pMin,
                              int diverges, const char *zRepro, const char *zPath, char *zErr,
                              size_t nErr);

/* Graph root causes as text, numbered "<zLabel> N: family (ops) dtype: symptom; K
 * <zCounted>s" with the case, its judgement and its repro below: a graph campaign's
 * ("root cause", "finding") and `parityfuzz triage`'s ("graph root cause", "repro"). */
void parity_report_graph_causes_text(FILE *pOut, const parity_graph_cause *aCause,
                                     size_t nCause, const char *zLabel, const char *zCounted);
/* The same as a "root_causes" array of a graph summary (fuzz/FUZZ.md, "Graph cases");
 * NULL when out of memory. */
json_t *parity_report_graph_causes_json(const parity_graph_cause *aCause, size_t nCause);
/* A graph campaign's root causes and counts as text (the root causes first, then the
 * summary line). 0, or -1 on a write error. */
int parity_report_graph_fuzz_text(FILE *pOut, const parity_graph_campaign_result *pRes);
/* Its JSON summary (fuzz/FUZZ.md, "Graph cases") to zPath ("-": stdout), atomically.
 * Returns 0, or -1 with zErr. */
int parity_report_graph_fuzz_json(const parity_graph_campaign_result *pRes, const char *zPath,
                                  char *zErr, size_t nErr);

#endif
