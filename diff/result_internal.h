/*
 * result_internal.h - building a parity_diff_result: the string and list helpers the
 * engine (engine.c) and the semantic judgement (semantic.c) fill it with.
 *
 * Out of memory is sticky, as in SQLite (sqlite3OomFault): a helper that cannot allocate
 * sets *pOom and does nothing else, so the code building a result goes on without a check
 * at every call, and parity_diff_run, which looks at the flags once at the end, fails the
 * whole run with "out of memory" rather than hand out a result with a string, a warning or
 * an input name silently missing. Also the progress call both make while they read.
 */
#ifndef PARITY_DIFF_RESULT_INTERNAL_H
#define PARITY_DIFF_RESULT_INTERNAL_H

#include "diff/diff.h"

/* A copy of z (NULL for NULL); on failure NULL and *pOom set. */
char *parity_result_dup(int *pOom, const char *z);
/* Appends a copy of z to the list; on failure the list is unchanged and *pOom set. */
void parity_result_push(int *pOom, char ***pazList, size_t *pn, const char *z);
/* Replaces *pz by a copy of z. */
void parity_result_set(int *pOom, char **pz, const char *z);
/* A deep copy of n attributes into *paDst (their count is n); on failure *paDst holds what
 * was copied, freeable, and *pOom is set. */
void parity_result_copy_attrs(int *pOom, const parity_attr *aSrc, size_t n,
                              parity_attr **paDst);
/* 1 when any part of the result ran out of memory. */
int parity_result_oom(const parity_diff_result *pRes);

/* Calls pOpt's progress callback, if any (the engine's one way to report progress). */
static inline void parity_diff_progress(const parity_diff_options *pOpt, const char *zFile)
{
    if (pOpt->xProgress) pOpt->xProgress(pOpt->pProgressCtx, zFile);
}

#endif
