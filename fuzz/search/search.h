/*
 * search.h - the search room of parityfuzz (fuzz/search/): the oracle that decides whether
 * a case is a finding (oracle.c), the minimizer that shrinks one (minimize.c) and the
 * campaign that draws cases, runs them and stores what it finds (campaign.c). It builds on
 * the cases and targets rooms. One arrow runs back up: the campaign deduplicates by
 * signature and writes repros, both of the findings room (fuzz/findings/findings.h), so
 * campaign.c, and only it, includes that header.
 *
 * The oracle: deciding whether a case is a finding, and which.
 *
 * The verdict is the registry's (tolerance/judge.h), called as a library: the case's op
 * reference and error model judge the compiled output with the eager output beside it.
 * Classes, headline first:
 *   diverges   the compiled side ran and some output element is beyond the op's error
 *              bound and worse than eager, or non-finite where the reference is finite (or
 *              the reverse): "succeeds but diverges"
 *   error      the compiled side reported an error on a case eager runs
 *   crash      the compiled worker died
 *   hang       the compiled worker exceeded its time
 * A case the eager side cannot run (or the target skips) is no finding: it is counted as
 * skipped. Compiled outputs bit-identical to eager are not judged (nothing can be "worse
 * than eager"), which keeps exec/s high on ops compilers leave alone.
 */
#ifndef PARITY_FUZZ_SEARCH_H
#define PARITY_FUZZ_SEARCH_H

#include <signal.h>
#include "fuzz/search/result.h"      /* the finding classes, the campaign's result */
#include "fuzz/targets/targets.h"
#include "tolerance/judge.h"

typedef struct {
    parity_finding_class cls;
    parity_run_status eagerStatus, compiledStatus;
    int judged;               /* judgement is filled */
    int bitIdentical;         /* compiled == eager bit for bit (then not judged) */
    parity_judgement judgement;
    char zDetail[PARITY_ERR_LEN + 128];   /* the error text, or a one-line summary */
} parity_oracle_result;

/* 1 when two outputs hold the same bits (any NaN equals any NaN; +0 and -0 differ). */
int parity_outputs_identical(const double *a, const double *b, uint64_t n);

/* Runs both sides of pCase on pT and judges. The outputs are left in aEager/aCompiled
 * (pCase->nOut each, caller-allocated) for the repro writer. Returns 0, or -1 when the
 * judge itself failed or this process ran out of memory on the way (in a kernel, the
 * judge: parity_alloc_failed, which the caller resets when its unit of work begins;
 * zDetail says "out of memory"): a failure of ours, never a finding of the target's. */
int parity_oracle_run(parity_target *pT, const parity_case *pCase, double *aEager,
                      double *aCompiled, parity_oracle_result *pR);

/* ---- the minimizer (minimize.c) ----------------------------------------------------
 *
 * Shrinking a finding to the smallest case that still shows it. The minimizer keeps a candidate when it reproduces: same finding class and,
 * for divergences, the same kind (non-finite or beyond the bound). In order:
 *   1. value recipes: each input tries ones, small integers, then N(0, 1);
 *   2. dims: each dim the layout uses descends by halving steps (d - d/2, d - d/4, ...,
 *      d - 1), restarting after every success, until a whole pass changes nothing; the
 *      last pass tried d - 1 for every dim, so every dim is 1-minimal (one smaller does
 *      not reproduce) unless the exec budget ran out first (pResult->minimal says which);
 *   3. values: halves, quarters, ... of each input are set to 1 while the failure holds;
 *      the case then carries stored values (replay reads them, a recipe could not make
 *      them).
 *   4. for divergences, the dims again with those values kept: each crop axis (an output
 *      dim whose elements read one index of their inputs, stored.c) is cut around the
 *      worst element, to it alone or else to a window doubling from it; a cut is kept when
 *      it reproduces and the spec, with the dim that axis follows set to the cut length,
 *      lays out the same shapes (pass 2 draws new values with each smaller dim, so a
 *      failure owed to one value at the end of a long row kept the row).
 */

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

/* ---- minimizing a captured op (minimize_stored.c) ---------------------------------
 *
 * An investigation's local cause is no generated case: its inputs and both outputs are
 * stored tensors (fuzz/cases/stored.c), replayed by the stored target, and the compiled
 * side cannot be run again on other values. So only what replay can keep exact is shrunk:
 * windows of the output dims whose elements read one index of their inputs. In order:
 *   1. the whole op through the oracle: the finding to keep (not a divergence: nothing to
 *      shrink);
 *   2. the worst element alone (one index of every crop axis), kept when it reproduces;
 *   3. each crop axis's window by halving steps, cut from the end or from the start, until
 *      a whole pass changes nothing: every window is then 1-minimal at both ends unless
 *      the budget ran out (minimal says which);
 *   4. the result judged again, and its reference compared with the whole op's at the
 *      same elements: a crop that changed the computation is an error, never a repro.
 * Values are never changed: the stored compiled output belongs to the stored inputs. */
typedef struct {
    parity_stored_crop crop;      /* the smallest crop that reproduces (owned) */
    parity_oracle_result first;   /* the whole op's verdict */
    parity_oracle_result result;  /* the crop's */
    uint64_t nExecs;              /* crops judged, the whole op included */
    uint64_t nRefDiffer;          /* step 4: 0 on success */
    int minimal;
} parity_stored_minimized;

/* 0 with *pMin filled; 1 when the whole op is no divergence on replay (pMin->first says
 * what it is; nothing to free); -1 with zErr. */
int parity_minimize_stored(const parity_stored_op *pS, uint64_t budget,
                           parity_stored_minimized *pMin, char *zErr, size_t nErr);
void parity_stored_minimized_free(parity_stored_minimized *pMin);

/* 1 when pCase reproduces the finding pWant (class and kind); fills pR and the outputs
 * (nOut each, caller-allocated). The replay and the 1-minimality tests use it too. */
int parity_reproduces(parity_target *pT, const parity_case *pCase,
                      const parity_oracle_result *pWant, double *aEager, double *aCompiled,
                      parity_oracle_result *pR);

/* ---- campaigns (campaign.c) ----------------------------------------------------------
 *
 * A fuzzing campaign: draw cases, run them through the oracle, minimize and store new
 * findings, report progress.
 *
 * Determinism: one seed drives every draw, so the same seed, target and --max-execs give
 * the same cases and findings. With jobs > 1 each job is its own process with its own
 * seed derived from (seed, job index) and an equal share of max-execs, so the same seed,
 * jobs and max-execs also give the same findings; a --time bound does not (how far each
 * job gets depends on the machine).
 */

typedef struct {
    const char *zTarget;          /* "builtin", "onednn[:ISA]" or "cmd:COMMAND" */
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
    int jobs;                     /* processes; 1 runs in this one */
    int stopAfterFirst;           /* stop at the first stored finding (the benchmark) */
    int minimize;                 /* 0: store findings as found */
    unsigned valuesPerShape;      /* cases drawn per shape, the later ones with new values
                                   * only (0, 1: every case a new draw): a target that
                                   * compiles per shape (a jit) reuses its program */
    /* What the campaign has to say, for the caller to show (the campaign prints nothing).
     * xMessage (NULL: dropped): one line at a time, without the program's name ("job 0:
     * the target's process died of signal 4 (Illegal instruction); ..."). xStatus (NULL:
     * none): the counts so far about every second, and once more at the end (final 1);
     * pSoFar is valid during the call only. Both run in the calling process, whatever the
     * jobs. */
    void (*xMessage)(void *pCtx, const char *zLine);
    void (*xStatus)(void *pCtx, const parity_campaign_result *pSoFar, double elapsed,
                    int final);
    void *pCtx;
} parity_campaign_options;

/* Set (by a SIGINT handler, say) to end a running campaign early; it still reports. */
extern volatile sig_atomic_t parity_campaign_interrupted;

void parity_campaign_options_init(parity_campaign_options *pOpt);
/* Runs the campaign. Returns 0 (findings or not; see pRes, whose trouble says why it
 * stopped short, "out of memory" included), or -1 with zErr when it could not start
 * (unknown target, no op to fuzz, output folder unwritable, out of memory); pRes then
 * holds nothing to free. */
int parity_campaign_run(const parity_campaign_options *pOpt, parity_campaign_result *pRes,
                        char *zErr, size_t nErr);
void parity_campaign_result_free(parity_campaign_result *pRes);

/* ---- graph cases (graph_oracle.c, graph_campaign.c) ----------------------------------
 *
 * The oracle of a graph case runs eager op by op (every intermediate kept for the repro)
 * and the compiled side's fused kernel, and judges the compiled output against the
 * reference propagated through the graph from its inputs (tolerance/graph.h), with eager's
 * output beside it: the same classes as a single op's. Targets: the builtin one (fused
 * kernels and fusion defects, builtin_graph.c). */

typedef struct {
    parity_finding_class cls;
    int judged, bitIdentical;
    int nonFinite;            /* a divergence with non-finite elements */
    int subnormalInputZeroed; /* compiled's worst element is eager's with subnormal
                               * inputs read as zero (denormals-are-zero) */
    double worstRef, worstCompiled;   /* at the judgement's worst element: the reference
                                       * rounded to the output dtype, and compiled's value */
    parity_judgement judgement;
    char zDetail[PARITY_ERR_LEN + 128];
} parity_graph_oracle_result;

/* Runs and judges pG: eager op by op with the builtin eager kernels, compiled on pT
 * (xRunGraph: the builtin fused kernels with their defect bits, or a worker). aaEager
 * (nNode slots) receives every node's eager output (parity_free each), aCompiled
 * (pG->nOut values) the compiled one. A compiled side that errors, crashes or hangs is a
 * finding of that class; a target that skips the case, a skip. Returns 0, or -1 with
 * zDetail when the run or the judge failed for a reason of ours. */
int parity_graph_oracle_run(parity_target *pT, const parity_graph_case *pG, double **aaEager,
                            double *aCompiled, parity_graph_oracle_result *pR);

/* Shrinks a finding: drops the family's optional ops, simplifies the value recipes, then
 * halves each dim while the finding keeps its class and kind (non-finite or accuracy);
 * budget cases at most. *pSpec becomes the smallest spec found; returns the cases run. */
uint64_t parity_graph_minimize(parity_graph_spec *pSpec, parity_target *pT,
                               const parity_graph_oracle_result *pFirst, uint64_t budget);

typedef struct {
    const char *zTarget;      /* "builtin" (NULL: builtin) or "cmd:COMMAND" */
    double caseTimeout;       /* a worker's case timeout (0: the default, 30 s) */
    double seconds;           /* time budget (0: none) */
    uint64_t maxExecs;        /* case budget (0: none) */
    uint64_t seed;
    uint32_t defects;
    uint32_t families;        /* bit per family index; 0: every family */
    uint32_t dtypes;          /* bit (1 << dtype); 0: every drawable dtype */
    const char *zOut;         /* repro folder root, or NULL */
    const char *zJson;        /* summary JSON, or NULL */
    int minimize;
    int stopAfterFirst;
} parity_graph_campaign_options;

/* A root cause of a graph campaign: the findings whose minimized case has the same
 * family, ops, dtype and symptom, except a flushed subnormal, which is the dtype's flush
 * whatever ops made the subnormal (family and ops "*"); the first one's minimized repro
 * stands for them. */
typedef struct {
    char zFamily[32];
    char zOps[160];           /* "linear+gelu": the ops the minimizer could not remove */
    parity_dtype dtype;
    char zSymptom[24];        /* at the worst element: triage.c's symptoms ("accuracy",
                               * "nan lost", "subnormal flushed", ...) or the class
                               * ("error", "crash", "hang") */
    uint64_t count;           /* findings (before minimization) of this cause */
    char zCase[600];          /* the minimized case, described */
    char zDetail[PARITY_ERR_LEN + 128];
    char zRepro[4200];        /* its repro folder, or "" without --out */
} parity_graph_cause;

typedef struct {
    uint64_t nExecs, nJudged, nSkipped, nIdentical, nErrors, nFindings, nMinimizeExecs;
    double seconds;
    char zTarget[256];
    char zNotice[8192];       /* the target's notice (a worker's skips), or "" */
    uint64_t seed;
    uint32_t defects;
    parity_graph_cause *aCause;
    size_t nCause;
} parity_graph_campaign_result;

/* The root cause in (*paCause, *pnCause) with this family, ops, dtype and symptom, appended
 * when new (*pNew set; the rest of it zeroed for the caller to fill), the rule above for a
 * flushed subnormal applied; NULL when out of memory. Campaigns and `parityfuzz triage`
 * of stored graph repros group alike through it. */
parity_graph_cause *parity_graph_cause_add(parity_graph_cause **paCause, size_t *pnCause,
                                           const char *zFamily, const char *zOps,
                                           parity_dtype dtype, const char *zSymptom, int *pNew);
/* A graph finding's symptom: triage.c's at the worst element, or its class ("error",
 * "crash", "hang") when it was not judged. */
const char *parity_graph_symptom(const parity_graph_oracle_result *pR, parity_dtype dt);

/* Runs a graph campaign; progress lines on stderr. Returns 0, or -1 with zErr (the repro
 * folder cannot be written, memory). */
int parity_graph_campaign_run(const parity_graph_campaign_options *pOpt,
                              parity_graph_campaign_result *pRes, char *zErr, size_t nErr);
void parity_graph_campaign_result_free(parity_graph_campaign_result *pRes);

#endif
