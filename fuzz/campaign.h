/*
 * campaign.h - a fuzzing campaign: draw cases, run them through the oracle, minimize and
 * store new findings, report progress.
 *
 * Determinism: one seed drives every draw, so the same seed, target and --max-execs give
 * the same cases and findings. With jobs > 1 each job is its own process with its own
 * seed derived from (seed, job index) and an equal share of max-execs, so the same seed,
 * jobs and max-execs also give the same findings; a --time bound does not (how far each
 * job gets depends on the machine).
 */
#ifndef PARITY_CAMPAIGN_H
#define PARITY_CAMPAIGN_H

#include "minimize.h"
#include "mutate.h"

typedef struct {
    const char *zTarget;          /* "builtin" or "cmd:COMMAND" */
    uint32_t defects;
    double caseTimeout;           /* per request of a cmd: target, seconds */
    const char *const *azOps;     /* ops to fuzz; NULL: every op with a layout the target runs */
    size_t nOps;
    uint32_t dtypes;              /* case dtypes to draw (bits 1 << dtype); 0: the target's */
    uint64_t seed;
    double timeLimit;             /* seconds; 0: none */
    uint64_t maxExecs;            /* 0: none */
    const char *zOutDir;          /* repros go here; NULL: findings are not stored */
    parity_strategy strategy;
    int progress;                 /* status line on stderr every second */
    int jobs;                     /* processes; 1 runs in this one */
    int stopAfterFirst;           /* stop at the first stored finding (the benchmark) */
    int minimize;                 /* 0: store findings as found */
} parity_campaign_options;

typedef struct {
    char *zSignature;
    char *zOp;
    char *zClass;
    char *zRepro;                 /* folder, or NULL when not stored */
    char *zDetail;
    double tFound;                /* seconds into the campaign */
    int minimal;                  /* minimization finished: every dim 1-minimal */
} parity_finding;

typedef struct {
    uint64_t nExecs;              /* cases run through the oracle by the search */
    uint64_t nMinimizeExecs;      /* cases run by the minimizer */
    uint64_t nSkipped;            /* cases the target could not run on the eager side */
    uint64_t nBitIdentical;       /* compiled equal to eager bit for bit */
    uint64_t nRawFindings;        /* findings before deduplication */
    double elapsed;
    double firstFinding;          /* seconds to the first finding; -1: none */
    parity_finding *aFinding;     /* unique signatures, in order of discovery */
    size_t nFinding;
    char **azOp;                  /* ops fuzzed, and cases run per op */
    uint64_t *anOpExecs;
    size_t nOp;
    int trouble;                  /* a target or storage error cut the campaign short */
    char zTrouble[PARITY_ERR_LEN + 128];
} parity_campaign_result;

/* Set (by a SIGINT handler, say) to end a running campaign early; it still reports. */
#include <signal.h>
extern volatile sig_atomic_t parity_campaign_interrupted;

void parity_campaign_options_init(parity_campaign_options *pOpt);
/* Runs the campaign. Returns 0 (findings or not; see pRes), or -1 with zErr when it could
 * not start (unknown target, no op to fuzz, output folder unwritable). */
int parity_campaign_run(const parity_campaign_options *pOpt, parity_campaign_result *pRes,
                        char *zErr, size_t nErr);
void parity_campaign_result_free(parity_campaign_result *pRes);

#endif
