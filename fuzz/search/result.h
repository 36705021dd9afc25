/*
 * result.h - what a parityfuzz campaign found and counted, as plain data: the one header a
 * reader outside fuzz/ needs (reports/report_fuzz.c writes the JSON summary from it and
 * nothing else). search.h includes it; the campaign (campaign.c) fills it; the finding
 * classes' names are the oracle's one table (oracle.c).
 *
 * The result echoes the options that shaped it (target, strategy, seed, jobs, the names of
 * the defects switched on), the way paritydiff's result echoes strict and signed zeros, so
 * that a report needs no campaign options and no defect catalogue.
 */
#ifndef PARITY_FUZZ_RESULT_H
#define PARITY_FUZZ_RESULT_H

#include <stddef.h>
#include <stdint.h>
#include "formats/capture.h"     /* PARITY_ERR_LEN */
#include "fuzz/targets/target_times.h"

typedef enum {
    PARITY_FINDING_NONE,
    PARITY_FINDING_DIVERGES,
    PARITY_FINDING_ERROR,
    PARITY_FINDING_CRASH,
    PARITY_FINDING_HANG,
    PARITY_FINDING_SKIPPED    /* not a finding: eager could not run it, or unsupported */
} parity_finding_class;

/* "none", "diverges", "error", "crash", "hang", "skipped" (oracle.c). */
const char *parity_finding_class_name(parity_finding_class cls);

/* The root cause a finding is taken for (fuzz/findings/triage.c says how each part is
 * read off the minimized case). */
typedef struct {
    char zKernel[40];             /* the op's kernel (matmul, linear, bmm: "dot"), or "*" */
    char zSymptom[24];            /* "nan lost", "accuracy", "crash", ... */
    char zTrigger[96];            /* "large K dim (65..4096, unaligned)", "nan input", "-" */
    int shape;                    /* the trigger is a dim the minimizer could not shrink: the
                                   * symptom is then not part of the cause */
    char zDtype[16];              /* the case's dtype */
    int keyDtype;                 /* the dtype is part of the cause (a flushed subnormal) */
} parity_root_key;

typedef struct {
    char *zSignature;
    char *zOp;
    parity_finding_class cls;
    char *zRepro;                 /* folder, or NULL when not stored */
    char *zDetail;
    double tFound;                /* seconds into the campaign */
    int minimal;                  /* minimization finished: every dim 1-minimal */
    int hasCause;                 /* cause is filled */
    parity_root_key cause;
    uint64_t nElems;              /* input elements of the stored case (repros' size) */
} parity_finding;

/* Findings of one cause (parity_triage_group). */
typedef struct {
    parity_root_key cause;           /* its zDtype: the first finding's */
    char *zOps;                   /* the ops, comma-separated, in order of finding */
    char *zDtypes;                /* the dtypes, likewise */
    char *zSymptoms;              /* the symptoms, likewise (several only for a shape cause) */
    size_t nFinding;
    size_t *aiFinding;            /* indices into the findings */
    int hasRepro;
    long iRepro;                  /* the finding whose repro is the smallest (hasRepro) */
    uint64_t nReproElems;
} parity_root_cause;

#define PARITY_CAMPAIGN_MAX_DEFECTS 32    /* defects are bits of a uint32_t */

#define PARITY_EAGER_WRONG_LEN 256

typedef struct {
    /* echo of the options */
    const char *zTarget;          /* as given (the options' string) */
    const char *zStrategy;        /* "guided" or "baseline" */
    uint64_t seed;
    int jobs;
    const char *azDefect[PARITY_CAMPAIGN_MAX_DEFECTS];   /* names switched on (static) */
    size_t nDefect;
    /* counts */
    uint64_t nExecs;              /* cases run through the oracle by the search */
    uint64_t nMinimizeExecs;      /* cases run by the minimizer */
    uint64_t nSkipped;            /* cases the target could not run on the eager side */
    uint64_t nBitIdentical;       /* compiled equal to eager bit for bit */
    uint64_t nRawFindings;        /* findings before deduplication */
    double elapsed;
    double firstFinding;          /* seconds to the first finding; -1: none */
    parity_finding *aFinding;     /* unique signatures, in order of discovery */
    size_t nFinding;
    uint64_t nJudged;             /* cases whose outputs the judge compared */
    uint64_t nEagerWrong;         /* of those, the ones whose eager side the reference proves
                                   * wrong (parity_judgement_eager_wrong): a kernel both
                                   * sides share, which no divergence can show */
    char zEagerWrong[PARITY_EAGER_WRONG_LEN];   /* the first of them, described (op, dtype,
                                   * shapes, value class, seed): what a user looks at first;
                                   * "" when none */
    parity_target_times times;    /* the target's time by side, compiling apart */
    parity_root_cause *aCause;    /* the findings' root causes, most findings first */
    size_t nCause;
    char **azOp;                  /* ops fuzzed, and cases run per op */
    uint64_t *anOpExecs;
    size_t nOp;
    /* a target or storage error, or out of memory, cut the campaign short; sticky: the
     * first trouble is the one said */
    int trouble;
    char zTrouble[PARITY_ERR_LEN + 128];
} parity_campaign_result;

#endif
