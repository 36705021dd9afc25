/*
 * minimize.h - shrinking a finding to the smallest case that still shows it, and storing
 * it as a repro.
 *
 * The minimizer (minimize.c) keeps a candidate when it reproduces: same finding class and,
 * for divergences, the same kind (non-finite or beyond the bound). In order:
 *   1. value recipes: each input tries ones, small integers, then N(0, 1);
 *   2. dims: each dim the layout uses descends by halving steps (d - d/2, d - d/4, ...,
 *      d - 1), restarting after every success, until a whole pass changes nothing; the
 *      last pass tried d - 1 for every dim, so every dim is 1-minimal (one smaller does
 *      not reproduce) unless the exec budget ran out first (pResult->minimal says which);
 *   3. values: halves, quarters, ... of each input are set to 1 while the failure holds;
 *      the case then carries stored values (replay reads them, a recipe could not make
 *      them).
 */
#ifndef PARITY_MINIMIZE_H
#define PARITY_MINIMIZE_H

#include "oracle.h"

typedef struct {
    parity_case minimized;    /* values loaded; owned (parity_minimize_free) */
    double *aEager, *aCompiled;   /* its outputs (nOut each) */
    parity_oracle_result result;
    int minimal;              /* every dim passed the one-smaller check */
    uint64_t nExecs;          /* cases run while minimizing */
} parity_minimized;

#define PARITY_MINIMIZE_BUDGET 1500    /* cases per finding */

/* Minimizes the finding made by pSpec (whose oracle result is pFirst), within budget cases
 * and until deadline (CLOCK_MONOTONIC seconds, 0: none); past either it keeps what it has
 * (minimal 0). Returns 0 with *pMin filled, or -1 with zErr when the finding did not even
 * reproduce from its spec (a flaky target). */
int parity_minimize(parity_target *pT, const parity_case_spec *pSpec,
                    const parity_oracle_result *pFirst, uint64_t budget, double deadline,
                    parity_minimized *pMin, char *zErr, size_t nErr);
void parity_minimized_free(parity_minimized *pMin);

/* 1 when pCase reproduces the finding pWant (class and kind); fills pR and the outputs
 * (nOut each, caller-allocated). The replay and the 1-minimality tests use it too. */
int parity_reproduces(parity_target *pT, const parity_case *pCase,
                      const parity_oracle_result *pWant, double *aEager, double *aCompiled,
                      parity_oracle_result *pR);

/* ---- repros (repro.c) ------------------------------------------------------------- */

/* Writes a repro folder atomically under zOutDir (created if absent): eager.h5 and
 * compiled.h5 (the case with each side's output), and "signature" (the signature on its
 * first line, then what was found, how to look at it and how to replay it). The folder is
 * named "<op>-<16 hex digits of the signature hash>"; built under a temporary name and
 * renamed, so a reader never sees half a repro. Returns 0 (path in zPath), 1 when a repro
 * with that name already exists (another job found it first), -1 with zErr. */
int parity_repro_write(const char *zOutDir, const parity_case *pCase, const double *aEager,
                       const double *aCompiled, const parity_oracle_result *pR,
                       const char *zSignature, const char *zTarget, uint32_t defects,
                       const parity_case_identity *pId, char *zPath, size_t nPath, char *zErr,
                       size_t nErr);

/* Reads the first line of a repro's signature file. Returns 0, or -1 with zErr. */
int parity_repro_signature(const char *zRepro, char *zSig, size_t nSig, char *zErr, size_t nErr);

#endif
