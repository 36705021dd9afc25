/*
 * targets.h - the targets room of parityfuzz (fuzz/targets/): what parityfuzz runs cases
 * against. It builds on the cases room only.
 *
 * A target runs one side (eager or compiled) of a case and returns its output, decoded to
 * binary64 (each value exactly representable in the case's output dtype). Targets:
 *   builtin          in-process kernels (builtin_eager.c, builtin_compiled.c); the compiled
 *                    side may carry named defects (defects.c)
 *   cmd:COMMAND      a persistent external worker (cmd.c, protocol in FORMAT.md)
 *   onednn[:ISA]     oneDNN's JIT primitives as the compiled side, the builtin eager
 *                    kernels as eager (onednn.c; built when libdnnl-dev is found)
 *   stored           a captured op's stored outputs, cropped (stored.c): what minimizes
 *                    an investigation's local cause
 *
 * Run statuses are the oracle's raw material: a compiled side that errors, crashes or
 * hangs is a finding of its own class; a case the target does not support is skipped.
 */
#ifndef PARITY_FUZZ_TARGETS_H
#define PARITY_FUZZ_TARGETS_H

#include "fuzz/cases/cases.h"
#include "fuzz/cases/graph_cases.h"
#include "fuzz/targets/target_times.h"

typedef enum {
    PARITY_SIDE_EAGER,
    PARITY_SIDE_COMPILED
} parity_side;

typedef enum {
    PARITY_RUN_OK,
    PARITY_RUN_SKIP,      /* the target does not implement this op or dtype */
    PARITY_RUN_ERROR,     /* the target reported an error (zErr says which) */
    PARITY_RUN_CRASH,     /* the worker died */
    PARITY_RUN_HANG       /* the worker exceeded its time and was killed */
} parity_run_status;

/* Adds pSrc's times to pDst's. */
void parity_target_times_add(parity_target_times *pDst, const parity_target_times *pSrc);

typedef struct parity_target parity_target;
struct parity_target {
    const char *zName;        /* "builtin", "cmd:..." */
    /* Runs one side; aOut holds pCase->nOut values on PARITY_RUN_OK. */
    parity_run_status (*xRun)(parity_target *pT, parity_side side, const parity_case *pCase,
                              double *aOut, char *zErr, size_t nErr);
    /* 1 when the target implements the op (generation skips the others). */
    int (*xSupports)(parity_target *pT, const char *zOp);
    void (*xClose)(parity_target *pT);
    /* Optional (NULL: no graph cases): runs the compiled side of a graph case (the eager
     * side of a graph case is always the builtin eager kernels', op by op); aOut holds
     * pG->nOut values on PARITY_RUN_OK. graphFamilies: bit per family index it runs. */
    parity_run_status (*xRunGraph)(parity_target *pT, const parity_graph_case *pG,
                                   double *aOut, char *zErr, size_t nErr);
    uint32_t graphFamilies;
    /* Optional (NULL: nothing to say): the identity of the compiled side for pCase. */
    int (*xIdentity)(parity_target *pT, const parity_case *pCase, parity_case_identity *pId);
    uint32_t defects;         /* builtin: the defect bits switched on */
    uint32_t dtypes;          /* bit (1 << dtype) per case dtype it runs; 0: every dtype */
    /* A line the target has to say once it is open (a worker's skip list), or NULL; no
     * target prints, so whoever opened it passes this on. */
    const char *zNotice;
    parity_target_times times;   /* runSeconds and nRuns by the oracle, the rest by xRun */
};

/* Opens a target by name ("builtin", "onednn[:ISA]" or "cmd:COMMAND"); defects only for
 * builtin.
 * Returns NULL with zErr set. */
parity_target *parity_target_open(const char *zSpec, uint32_t defects, double caseTimeout,
                                   char *zErr, size_t nErr);
void parity_target_close(parity_target *pT);
/* The cmd: target (cmd.c); parity_target_open calls it. */
parity_target *parity_target_cmd_open(const char *zCommand, double caseTimeout, char *zErr,
                                      size_t nErr);
/* The onednn target (onednn.c), JIT capped at zIsa when given; present when the
 * build found oneDNN (PARITY_HAVE_ONEDNN). */
parity_target *parity_target_onednn_open(const char *zIsa, char *zErr, size_t nErr);
/* 1 when the target named zSpec runs foreign code in this process (onednn), where a fault
 * would end parityfuzz: campaigns then run under a supervisor that survives it
 * (campaign.c), and replay isolates the compiled side (parity_target_isolate). The one
 * place that says which targets these are: the campaign's parent asks before any target
 * is open, as a process must not fork after oneDNN made its first primitive. */
int parity_target_spec_in_process(const char *zSpec);
/* A target whose compiled side runs pInner's in a forked child (isolate.c): a fault
 * there is PARITY_RUN_CRASH, "died of signal N (name)", and a child still running after
 * timeout seconds (0: no limit) is killed, PARITY_RUN_HANG. The eager side runs in this
 * process. With ownInner, closing it closes pInner. NULL with zErr on failure. */
parity_target *parity_target_isolate(parity_target *pInner, int ownInner, double timeout,
                                     char *zErr, size_t nErr);
/* The replay target (stored.c): returns the stored outputs of the crop it serves, for
 * shrinking a captured op's failure (parity_minimize_stored). Not a target a campaign or
 * parity_target_open can name: there is nothing to draw cases for. */
parity_target *parity_target_stored_open(char *zErr, size_t nErr);
/* The crop the next runs return (pCrop must outlive them). */
void parity_target_stored_serve(parity_target *pT, const parity_stored_crop *pCrop);
/* 1 when the target accepts case dtype dt. */
int parity_target_runs_dtype(const parity_target *pT, parity_dtype dt);

/* ---- the builtin kernels (builtin_eager.c, builtin_compiled.c) ---------------------- */

/* 1 when the builtin kernels implement the registry op pDef (NULL: 0). */
int parity_builtin_supports(const parity_op_def *pDef);
/* Eager: straightforward kernels, sequential accumulation in float32 (float64 for float64
 * cases), one rounding to the output dtype per op. Returns 0, or -1 with zErr. */
int parity_builtin_eager(const parity_case *pCase, double *aOut, char *zErr, size_t nErr);
/* Compiled: the kernels a compiler emits (blocked, split, online, fused), with the defect
 * bits switched on. Returns 0, or -1 with zErr. */
int parity_builtin_compiled(const parity_case *pCase, uint32_t defects, double *aOut,
                            char *zErr, size_t nErr);

/* ---- the builtin graph kernels (builtin_graph.c) ------------------------------------ */

/* Eager: the graph op by op with the eager kernels, each node's output rounded to its
 * dtype, into aaOut[0 .. nNode-1] (allocated here, parity_free each, also on failure).
 * Returns 0, or -1 with zErr. */
int parity_builtin_graph_eager(const parity_graph_case *pG, double **aaOut, char *zErr,
                               size_t nErr);
/* Compiled: the family's fused kernel with the fusion defect bits switched on; the output
 * (pG->nOut values) in aOut. Returns 0, or -1 with zErr. */
int parity_builtin_graph_fused(const parity_graph_case *pG, uint32_t defects, double *aOut,
                               char *zErr, size_t nErr);

/* ---- the defect catalogue (defects.c) ----------------------------------------------- */

/* Defect bits (the catalogue in defects.c says what each does and which bug it models). */
#define PARITY_DEFECT_SPLIT_REDUCTION_TAIL  (1u << 0)
#define PARITY_DEFECT_GEMM_K_TAIL           (1u << 1)
#define PARITY_DEFECT_SIZE1_BIAS            (1u << 2)
#define PARITY_DEFECT_MASKED_SOFTMAX_ZERO   (1u << 3)
#define PARITY_DEFECT_BF16_REDUCE_ACCUM     (1u << 4)
#define PARITY_DEFECT_FASTMATH_NAN          (1u << 5)
#define PARITY_DEFECT_PADDED_STRIDE_LEAK    (1u << 6)
#define PARITY_DEFECT_WELFORD_MERGE         (1u << 7)
/* Fusion defects: only the fused kernels of graph cases carry them (builtin_graph.c). */
#define PARITY_DEFECT_EPILOGUE_BIAS_AXIS    (1u << 8)
#define PARITY_DEFECT_FUSED_MASKED_ROW_UNIFORM (1u << 9)
#define PARITY_DEFECT_APPROX_RECIPROCAL     (1u << 10)
#define PARITY_DEFECT_FUSED_HALF_ACCUM      (1u << 11)

typedef struct {
    const char *zName;
    uint32_t bit;
    const char *zOps;         /* the ops it affects, comma-separated */
    const char *zTrigger;     /* the rare shape or value that triggers it */
    const char *zCitation;    /* the public bug it is modelled on */
} parity_defect;

extern const parity_defect parity_defects[];
extern const size_t parity_defect_count;
/* The defect named zName, or NULL. */
const parity_defect *parity_defect_find(const char *zName);
/* The fusion defects of graph cases, with the graph families they affect in zOps. */
extern const parity_defect parity_graph_defects[];
extern const size_t parity_graph_defect_count;
const parity_defect *parity_graph_defect_find(const char *zName);

#endif
