/*
 * gate.h - paritydiff gate: a release gate over a suite of capture pairs (diff/GATE.md).
 *
 * The gate is built in stages, each a file of its own:
 *   gate_suite.c    the suite: a folder of pair folders, or a manifest, into pair specs
 *   gate_pair.c     each pair judged in a supervised child, --jobs at a time, into a pair
 *                   record (a JSON object: GATE.md's PAIR)
 *   gate_outcome.c  the decisions read from `outcome` tensors, in the pair's child
 *   gate_policy.c   the policy file (YAML) into rules
 *   gate_traffic.c  the traffic file (CSV) into shares per slice
 *   gate_slices.c   pair records into slices: parity, outcomes, telemetry, metrics,
 *                   coverage and the p99 explanation
 *   gate_alerts.c   rules over slices, persistence from the history, mitigations
 *   gate_history.c  the run history (SQLite)
 *   gate_cli.c      `paritydiff gate` and `paritydiff gate merge`
 * The document they build is the gate's result; every report (reports/report_gate.h)
 * reads it and nothing else.
 */
#ifndef PARITY_GATE_H
#define PARITY_GATE_H

#include <stddef.h>
#include <jansson.h>
#include "diff/diff.h"

#define PARITY_GATE_ERR_LEN 1024
#define PARITY_GATE_MAX_KEYS 8           /* slice keys a gate groups by */
#define PARITY_GATE_LATENCY_BUCKETS 256  /* latency_hist_ms (GATE.md, "Latency buckets") */
#define PARITY_GATE_UNSET "(unset)"      /* the label of a key a pair's captures lack */

/* ---- suites (gate_suite.c) ---------------------------------------------------------- */

typedef struct {
    char *zId;           /* relative folder, or the manifest's id */
    char *zEager;        /* path, or NULL when the pair has no eager capture */
    char *zCompiled;     /* path, or NULL when it has no compiled capture */
} parity_gate_pair_spec;

/* Reads SUITE (a folder or a manifest) into specs sorted by id. 0, or -1 with one line in
 * zErr (a suite that cannot be read, a bad manifest line, duplicate ids, no pairs). */
int parity_gate_suite_load(const char *zSuite, parity_gate_pair_spec **paSpec, size_t *pnSpec,
                           char *zErr, size_t nErr);
void parity_gate_suite_free(parity_gate_pair_spec *aSpec, size_t nSpec);

/* ---- judging pairs (gate_pair.c) ------------------------------------------------------ */

typedef struct {
    parity_diff_options diff;      /* as paritydiff's (tolerance file, map prefixes, ...) */
    int jobs;                      /* pairs judged at once (>= 1) */
    unsigned timeoutSeconds;       /* per pair (0: none) */
    unsigned stallSeconds;         /* per pair: no heartbeat for this long (0: none) */
    size_t maxMemoryMiB;           /* per pair's child (0: none) */
    int progress;                  /* a line on stderr per judged pair */
} parity_gate_judge_options;

/* Judges every spec and appends one record per spec to pPairs (in spec order). A pair
 * that cannot be judged is a record with status "error"; only trouble of the gate itself
 * (no fork, no memory) returns -1 with zErr. */
int parity_gate_judge(const parity_gate_judge_options *pOpt, const parity_gate_pair_spec *aSpec,
                      size_t nSpec, json_t *pPairs, char *zErr, size_t nErr);


/* ---- outcomes (gate_outcome.c) -------------------------------------------------------- */

/* The outcome records of a pair (GATE.md, "Outcome parity"): every eager tensor with an
 * `outcome` attribute, decided on both sides. A new JSON array, or NULL when memory ran
 * out; a tensor that cannot be decided gets a record with "error". */
json_t *parity_gate_outcomes(const parity_diff_options *pOpt, const char *zEager,
                             const char *zCompiled, const parity_diff_result *pRes);

/* ---- policies (gate_policy.c) --------------------------------------------------------- */

typedef enum {
    PARITY_GM_NUMERICAL_PARITY, PARITY_GM_OUTCOME_PARITY, PARITY_GM_COMPILE_TIME,
    PARITY_GM_RECOMPILES, PARITY_GM_GRAPH_BREAKS, PARITY_GM_FALLBACK_RATE,
    PARITY_GM_P50_LATENCY, PARITY_GM_P99_LATENCY, PARITY_GM_THROUGHPUT, PARITY_GM_COVERAGE,
    PARITY_GM_COUNT
} parity_gate_metric;

const char *parity_gate_metric_name(parity_gate_metric m);
/* 1 when the metric has an eager counterpart (ratios are allowed on it). */
int parity_gate_metric_has_eager(parity_gate_metric m);

typedef struct {
    char *zName;                   /* "METRIC#INDEX" unless named */
    parity_gate_metric metric;
    char *zOwner;
    size_t nSelect;                /* selector: key = value ("*": any) */
    char *azSelectKey[PARITY_GATE_MAX_KEYS], *azSelectValue[PARITY_GATE_MAX_KEYS];
    int hasMin, hasMax, hasMinRatio, hasMaxRatio;
    double min, max, minRatio, maxRatio;
    int persistence;               /* >= 1 */
    char *zMitigation;
    int line;                      /* where the rule starts in the file */
} parity_gate_rule;

typedef struct {
    size_t nKey;                   /* 0: the default slice keys */
    char *azKey[PARITY_GATE_MAX_KEYS];
    parity_gate_rule *aRule;
    size_t nRule;
} parity_gate_policy;

/* Loads the policy; 0, or -1 with "FILE:LINE: what is wrong" in zErr. */
int parity_gate_policy_load(const char *zPath, parity_gate_policy *pPolicy, char *zErr,
                            size_t nErr);
void parity_gate_policy_free(parity_gate_policy *pPolicy);

/* ---- traffic (gate_traffic.c) --------------------------------------------------------- */

typedef struct {
    size_t nKey;
    char *azKey[PARITY_GATE_MAX_KEYS];
    size_t nRow;
    char **azValue;                /* nRow x nKey */
    double *aShare;
} parity_gate_traffic;

int parity_gate_traffic_load(const char *zPath, parity_gate_traffic *pTraffic, char *zErr,
                             size_t nErr);
void parity_gate_traffic_free(parity_gate_traffic *pTraffic);

/* ---- evaluation (gate_slices.c, gate_alerts.c) ---------------------------------------- */

/* A JSON scalar as text: strings as they are, integers in decimal, reals to 17 digits (a
 * label such as shape_bucket may be written as a number); NULL for anything else. The
 * caller frees it. */
char *parity_gate_scalar_text(const json_t *pV);

/* 1 when the labels hold every "key=value" of zWant ("k=v,k=v"; NULL: any labels): the
 * --slice filter of investigate and bisect. */
int parity_gate_labels_match(const char *zWant, const json_t *pLabels);

/* The canonical name of a slice: "key=value,key=value" in slice-key order. */
char *parity_gate_slice_name(const json_t *pLabels, const json_t *pKeys);


/* Fills pDoc's "slice_keys", "slices", "coverage", "p99_explanation" and "warnings" from
 * its "pairs". pTraffic may be NULL. 0, or -1 when memory ran out. */
int parity_gate_build_slices(json_t *pDoc, const parity_gate_traffic *pTraffic);

typedef struct parity_gate_history parity_gate_history;

/* Evaluates the rules over pDoc's slices: fills "alerts", "pending", "mitigations" and each
 * slice's rule states; persistence from pHistory (NULL: every count is 1 and every rule's
 * persistence is taken as 1). 0, or -1 with zErr. */
int parity_gate_evaluate(json_t *pDoc, const parity_gate_policy *pPolicy,
                         parity_gate_history *pHistory, char *zErr, size_t nErr);

/* ---- history (gate_history.c) --------------------------------------------------------- */

/* Opens the history at zWhere (an SQLite file, or a postgresql:// URI; GATE.md "Back
 * ends"). A writer (readOnly 0) creates the file and the schema when missing; a reader
 * (readOnly 1) needs an existing history and changes nothing. */
int parity_gate_history_open(const char *zWhere, int readOnly, parity_gate_history **ppH, char *zErr,
                             size_t nErr);
void parity_gate_history_close(parity_gate_history *pH);
/* Out-of-range runs of (rule, slice) before zTimestamp, counted back from the latest until
 * one in range; runs where the slice was unknown are skipped. -1 on a database error. */
int parity_gate_history_out_of_range(parity_gate_history *pH, const char *zRule,
                                     const char *zSlice, const char *zTimestamp, char *zErr,
                                     size_t nErr);
/* Appends the run in pDoc (one transaction). 0, or -1 with zErr. */
int parity_gate_history_append(parity_gate_history *pH, const json_t *pDoc, char *zErr,
                               size_t nErr);
/* Runs a read-only query with text parameters; rows as JSON arrays of strings (NULL as
 * null), in the query's order. A new array, or NULL with zErr. The investigation reads
 * the history through it alone, so another back end implements this one call. */
json_t *parity_gate_history_query(parity_gate_history *pH, const char *zSql,
                                  const char *const *azParam, int nParam, char *zErr, size_t nErr);
/* The schema, for the docs and for other back ends (PostgreSQL runs it as it is). */
extern const char parity_gate_history_schema[];
#define PARITY_GATE_HISTORY_VERSION 1

/* ---- the command (gate_cli.c) --------------------------------------------------------- */

/* `paritydiff gate ARGS...` (argv[0] is "gate"); returns the exit status. */
int parity_gate_main(int argc, char **argv);
/* `paritydiff investigate ARGS...` (diff/investigate.c, diff/INVESTIGATE.md). */
int parity_investigate_main(int argc, char **argv);
/* A rule's timeline for a slice, as of zAsOf (the last 60 runs): {earliest_known_bad,
 * last_known_good (run ids or null), points: [{run, timestamp, state, value, eager}]},
 * the boundary found as investigate finds it. NULL with zErr on a database error. */
json_t *parity_investigate_timeline(parity_gate_history *pH, const char *zSlice, const char *zRule,
                                    const char *zMetric, const char *zAsOf, char *zErr, size_t nErr);
/* `paritydiff bisect ARGS...` (diff/bisect.c, diff/INVESTIGATE.md). */
int parity_bisect_main(int argc, char **argv);

#endif
