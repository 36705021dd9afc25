/*
 * diff.h - the comparison engine: two captures in, one parity_diff_result out.
 *
 * parity_diff_run matches tensors by path, orders them (see order.c), compares each pair
 * in streamed slabs (compare.c) and fills a result that the report writers (reports/)
 * read. It never prints: warnings and errors are carried in the result.
 *
 * Contract (also in diff/REPORT.md):
 * - inputs: a tensor without an "op" that some eager "inputs" attribute names (a graph
 *   input or parameter) is compared bit for bit; any difference makes inputs_match false
 *   and the verdict fail.
 * - statuses: pass, fail, error, missing_in_compiled, missing_in_eager, shape_mismatch,
 *   dtype_mismatch. verdict: any error -> error; else any fail, shape/dtype mismatch or
 *   differing input -> fail; else pass. missing_* fail only with strict. A run that would
 *   pass having compared no tensor (no name in common) is an error (zError): never a
 *   silent pass.
 */
#ifndef PARITY_DIFF_H
#define PARITY_DIFF_H

#include <stdint.h>
#include <stdio.h>
#include "formats/capture.h"
#include "tolerance/tolerance.h"
#include "tolerance/judge.h"
#include "tolerance/tolfile.h"

#define PARITY_ULP_BUCKETS 64   /* bucket 0: distance 0; bucket k: [2^(k-1), 2^k) */

typedef enum {
    PARITY_ST_PASS,
    PARITY_ST_FAIL,
    PARITY_ST_ERROR,
    PARITY_ST_MISSING_IN_COMPILED,
    PARITY_ST_MISSING_IN_EAGER,
    PARITY_ST_SHAPE_MISMATCH,
    PARITY_ST_DTYPE_MISMATCH
} parity_status;

typedef enum { PARITY_VERDICT_PASS, PARITY_VERDICT_FAIL, PARITY_VERDICT_ERROR } parity_verdict;

/* Why a failing tensor fails (diff/semantic.c; REPORT.md's "cause"): its own computation
 * breaks its bound (local; also every failing tensor without an op), it is right for inputs
 * that failed earlier (propagated), or it was judged against the eager inputs because the
 * compiled capture lacks them (unknown). NONE, the zero value, for a tensor that passes. */
typedef enum {
    PARITY_CAUSE_NONE = 0,
    PARITY_CAUSE_LOCAL,
    PARITY_CAUSE_PROPAGATED,
    PARITY_CAUSE_UNKNOWN
} parity_cause;

const char *parity_status_name(parity_status st);
const char *parity_verdict_name(parity_verdict v);
/* "local", "propagated", "unknown"; NULL for PARITY_CAUSE_NONE (JSON null, no text line). */
const char *parity_cause_name(parity_cause cause);

/* Statistics of one compared tensor pair. Error figures (max_abs_err, max_rel_err,
 * max_ulp, rel_l2) cover elements finite on both sides; elements where exactly one side is
 * NaN or Inf, or the two are different infinities, count in nNanMismatch and fail. */
typedef struct {
    uint64_t nElem;
    uint64_t nMismatch;            /* elements that fail, all causes */
    uint64_t nNanMismatch;         /* NaN/Inf pattern differences */
    uint64_t nSignedZeroMismatch;  /* -0 vs +0 (failing only with signedZeros) */
    uint64_t nBitDiff;             /* elements whose bits differ at all */
    uint64_t nOddBool;             /* bool elements stored as a byte other than 0 or 1 on
                                    * either side: true, compared by truth, and warned of */
    double maxAbsErr;
    double maxRelErr;              /* |c - e| / max(|e|, smallest normal of dtype) */
    uint64_t maxUlp;
    double sumSqDiff;              /* sum (c - e)^2 over finite pairs */
    double sumSqRef;               /* sum e^2 over finite pairs */
    double worstScore;             /* largest error / allowed error; -1 when nElem == 0 */
    uint64_t worstLinear;          /* lowest linear index attaining worstScore */
    uint64_t aSliceLo[PARITY_MAX_RANK];  /* bounding box of failing elements, valid */
    uint64_t aSliceHi[PARITY_MAX_RANK];  /* when nMismatch > 0; half-open */
    uint64_t aUlpHist[PARITY_ULP_BUCKETS];
} parity_tensor_stats;

/* relative L2 error sqrt(sumSqDiff / sumSqRef); 0 when both are 0, +Inf when only the
 * reference is 0. */
double parity_stats_rel_l2(const parity_tensor_stats *pStats);

typedef struct {
    char *zName;
    char *zOp;                 /* eager "op", or NULL */
    int hasOrder;
    int64_t iOrder;
    parity_dtype dtype;        /* eager dtype (compiled's when missing in eager);
                                * rank/aDim likewise */
    parity_dtype dtypeCompiled;
    int rank;
    uint64_t aDim[PARITY_MAX_RANK];
    int rankCompiled;          /* -1 when the tensor is missing in compiled */
    uint64_t aDimCompiled[PARITY_MAX_RANK];
    parity_status status;
    parity_cause cause;        /* PARITY_CAUSE_NONE when passing */
    char *zMessage;            /* why status is error, or NULL */
    int isInput;               /* named by an eager "inputs" attribute */
    int metadataSuspect;       /* failing, and eager breaks the bound about as often: the
                                * capture's metadata likely misdescribes what ran */
    int hasStats;              /* stats filled (status pass or fail) */
    parity_tensor_stats stats;
    parity_tolerance tol;      /* the per-dtype tolerance (decides when no model does) */
    /* Semantic judgement (diff/semantic.c): when the tensor's op is in the registry and
     * its inputs were captured, the op's reference and error model decide pass/fail, and
     * stats.nMismatch, worst and slice describe the elements the model fails. */
    int hasJudgement;
    parity_judgement judgement;
    const char *zModelOp;      /* registry op that judged (static string), or NULL */
    const char *zModel;        /* its model in one line (static string), or NULL */
    parity_dtype accDtype;     /* accumulation dtype the model assumed */
    char *zModelNote;          /* why no model judged this op tensor, or NULL */
    const char *zRule;         /* a deliberate rule that judged an op tensor without a
                                * model (static string; the exact rule for integer and
                                * bool results, diff/semantic.c), or NULL */
    /* Judged as the output of a fused region (diff/region_internal.h): the eager tensors
     * the compiled side fused away, in execution order, and the region's inputs, the
     * tensors both sides hold (or graph inputs and parameters). nRegionOp 0: not so. */
    char **azRegionOp;
    size_t nRegionOp;
    char **azRegionInput;
    size_t nRegionInput;
    int hasLocalCheck;         /* the reference was recomputed from compiled inputs */
    uint64_t nLocalFail;       /* elements failing against that local reference */
    char **azWarning;
    size_t nWarning;
    int oom;                   /* building it ran out of memory (sticky; result.c): then
                                * parity_diff_run fails instead of returning it */
} parity_tensor_result;

typedef struct {
    parity_verdict verdict;
    char *zError;              /* why the run as a whole is an error (nothing was
                                * compared), or NULL; a tensor's error is its own */
    char *zEagerFile;
    char *zCompiledFile;
    char *zFirstDivergence;    /* name, or NULL */
    int inputsMatch;
    char **azInputDiffers;     /* names of inputs that differ */
    size_t nInputDiffers;
    parity_attr *aEagerRoot;   /* all root attributes, copied */
    size_t nEagerRoot;
    parity_attr *aCompiledRoot;
    size_t nCompiledRoot;
    char **azIdentityDiffers;  /* identity keys whose values differ */
    size_t nIdentityDiffers;
    char **azWarning;          /* every warning as "name: text" (tensor warnings included),
                                * so stderr and the top of a report need not walk tensors */
    size_t nWarning;
    parity_tensor_result *aTensor;  /* execution order; then tensors only in compiled */
    size_t nTensor;
    /* echo of the options that shaped the verdict */
    int strict;
    int signedZeros;
    int oom;                   /* as parity_tensor_result.oom, for the rest */
} parity_diff_result;

#define PARITY_DIFF_MAX_MAPS 16

typedef struct {
    int strict;               /* missing_in_* fail */
    int signedZeros;          /* -0 vs +0 fails */
    int hasRtol, hasAtol;     /* overrides of the per-dtype defaults */
    double rtol, atol;
    int hasMaxUlp;
    uint64_t maxUlp;
    int nThreads;             /* compute threads; 0 picks the number of cores */
    const parity_tolfile *pTolFile;   /* --tolerance overrides of the op models, or NULL */
    uint64_t nSlabBytes;      /* bytes per side per slab read; 0 picks the default */
    unsigned maxDepth;        /* group nesting a capture may have; 0 picks the default */
    /* Progress (NULL: none): called with the capture about to be read, and with NULL when
     * the reading is over, so that a supervisor can name the file a hang or a crash of
     * libhdf5 happened in (paritydiff.c wires it to its reading process's heartbeat). */
    void (*xProgress)(void *pCtx, const char *zFile);
    void *pProgressCtx;
    /* Called while a model judges (every PARITY_JUDGE_BEAT_ELEMS elements) and between
     * tensors (NULL: never); a non-zero return means the time limit is reached: the
     * tensor being judged and every later one become errors saying so, and the result
     * (a partial report) is still returned. */
    int (*xBeat)(void *pCtx);
    /* Called before each eager tensor is judged, iDone of nTotal judged so far, and once
     * after the last with zName NULL and iDone the tensors judged before any time limit
     * (NULL: never): a progress line. */
    void (*xTensor)(void *pCtx, size_t iDone, size_t nTotal, const char *zName);
    /* --map-prefix: tensors (and "inputs" entries) of both captures whose path starts with
     * azMapOld[i] are renamed to start with azMapNew[i] before matching, in this order
     * (formats/capture.h, parity_capture_map_prefix). */
    const char *azMapOld[PARITY_DIFF_MAX_MAPS], *azMapNew[PARITY_DIFF_MAX_MAPS];
    size_t nMap;
} parity_diff_options;

void parity_diff_options_init(parity_diff_options *pOpt);

/* Compares the two captures. Returns 0 with *pResult filled (any verdict), or -1 when a
 * file cannot be read at all (zErr names it). */
int parity_diff_run(const parity_diff_options *pOpt, const char *zEager,
                    const char *zCompiled, parity_diff_result *pResult, char *zErr,
                    size_t nErr);
void parity_diff_result_free(parity_diff_result *pResult);

/* Identity keys (compared, listed in identity.differs) and telemetry keys (reported side
 * by side, never compared). NULL-terminated. */
extern const char *const parity_identity_keys[];
extern const char *const parity_telemetry_keys[];
int parity_is_telemetry_key(const char *zKey);

#endif
