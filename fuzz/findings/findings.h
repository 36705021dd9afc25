/*
 * findings.h - the findings room of parityfuzz (fuzz/findings/): what a finding is once
 * found: its signature (signature.c), its repro folder (repro.c), and replaying stored
 * repros against a target, the regression gate (replay.c). It builds on the search room
 * (the oracle judges replays); the CLI and the campaign use it.
 *
 * Replay: re-running stored repros against a target.
 *
 * A repro is replayed from its stored tensors (eager.h5), never from its recipe, which a
 * child process reads first (libhdf5 can crash or hang on a corrupt file: that becomes an
 * error outcome, not a crash of parityfuzz). Outcomes:
 *   fixed      no finding any more
 *   same       still a finding, with the stored signature
 *   changed    still a finding, with another signature (or another class)
 *   error      the repro cannot be read, or the target cannot run it
 *   other-isa  not replayed: the repro records a JIT ISA (its signature file's "compiled
 *              by" line) and the target runs another one here, where results may differ
 *              for reasons that are no regression; named, never counted as a pass
 */
#ifndef PARITY_FUZZ_FINDINGS_H
#define PARITY_FUZZ_FINDINGS_H

#include "formats/process.h"
#include "fuzz/search/search.h"

typedef enum {
    PARITY_REPLAY_FIXED,
    PARITY_REPLAY_SAME,
    PARITY_REPLAY_CHANGED,
    PARITY_REPLAY_ERROR,
    PARITY_REPLAY_OTHER_ISA
} parity_replay_outcome;

const char *parity_replay_outcome_name(parity_replay_outcome o);

typedef struct {
    parity_replay_outcome outcome;
    char zStored[512];        /* the stored signature */
    char zNow[512];           /* the signature now ("" when fixed) */
    char zDetail[PARITY_ERR_LEN + 256];
} parity_replay_result;

/* Replays the repro folder zRepro on pT. */
void parity_replay_one(parity_target *pT, const char *zRepro, parity_replay_result *pRes);

/* Lists the repros under zDir: zDir itself when it holds eager.h5, else the folders below
 * it that do, down to PARITY_REPLAY_LIST_DEPTH levels (a campaign's --out holds
 * family/repro or op/repro; a repro's own subfolders are not searched; symbolic links
 * are not followed; temporary folders of a running campaign are skipped), sorted by path.
 * Returns the count (*pazRepro malloc'd, free with parity_replay_list_free), or -1 with
 * zErr. */
#define PARITY_REPLAY_LIST_DEPTH 3
long parity_replay_list(const char *zDir, char ***pazRepro, char *zErr, size_t nErr);
void parity_replay_list_free(char **azRepro, long n);


/* ---- signatures (signature.c) ------------------------------------------------------ */

/* The signature that deduplicates findings (signature.c): op, dtype, class, and shape and value features of the case such as which dims are 1, their
 * alignment to 8/16/32, lengths past split thresholds, and NaN/Inf/fully masked rows.
 * Two cases with one signature are taken as the same bug. */
const char *parity_signature(const parity_case *pCase, const parity_oracle_result *pR,
                             char *zBuf, size_t nBuf);
/* A short stable hash of a signature (16 hex digits), used to name repro folders. */
void parity_signature_hash(const char *zSignature, char *zHex17);

/* ---- triage (triage.c) ------------------------------------------------------------
 *
 * Findings grouped into root causes: triage.c's first comment gives the rules. */

/* The cause of one finding: its minimized case (values loaded), its oracle result and its
 * compiled output (NULL when the compiled side gave none). */
/* The symptom of a compiled value c against the reference r rounded to the output dtype
 * dt (triage.c's first comment): "nan lost", "inf lost", "nan made", "sign", "nonfinite
 * made", "subnormal flushed" or "accuracy". */
const char *parity_triage_symptom(double r, double c, parity_dtype dt);
void parity_triage_cause(const parity_case *pCase, const parity_oracle_result *pR,
                         const double *aCompiled, parity_root_key *pCause);
/* Groups the findings that have a cause into root causes, most findings first. 0, or -1
 * when out of memory (nothing to free). */
int parity_triage_group(const parity_finding *aFinding, size_t nFinding,
                        parity_root_cause **paCause, size_t *pnCause);
void parity_triage_free(parity_root_cause *aCause, size_t nCause);
/* A stored repro as a finding with its cause (triage_repro.c), from its tensors and its
 * signature file alone, read in a supervised child. 0 with *pF filled (free it with
 * parity_finding_free); 1 when its stored outputs no longer diverge (zErr says so:
 * a registry that changed since it was stored); -1 with zErr (not a fuzz repro, damaged). */
int parity_triage_repro(const char *zRepro, parity_finding *pF, char *zErr, size_t nErr);
/* Runs xMain(pArg) in a supervised child that leaves its verdict in a shared state of
 * nState bytes, copied to pState: 0 when the child ended (whatever it left there), -1 with
 * zErr when it ran over the triage time limit or crashed (libhdf5 on a damaged file).
 * Both triages read their repros this way. */
int parity_triage_supervised(int (*xMain)(void *, const parity_process_child *), void *pArg,
                             void *pState, size_t nState, char *zErr, size_t nErr);
/* Frees a finding's strings and zeroes it: the campaign's findings and triage's alike. */
void parity_finding_free(parity_finding *pF);

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

/* mkdir -p: 0, or -1 with zErr. */
int parity_make_dirs(const char *zDir, char *zErr, size_t nErr);
/* Removes a repro folder's files (those the writers make) and the folder. */
void parity_repro_remove(const char *zDir);

/* Writes the minimized crop of a captured op (parity_minimize_stored) as the repro folder
 * zDir itself: eager.h5 and compiled.h5, each side's inputs and output with the source
 * tensors' names and attributes and the side's identity, so paritydiff fails the pair for
 * the same local cause; and "origin" (where the crop comes from and how to look at it).
 * Built under a temporary name beside zDir and renamed; an earlier repro at zDir is
 * replaced (anything else there is refused). 0, or -1 with zErr. */
int parity_repro_write_stored(const char *zDir, const parity_stored_op *pS,
                              const parity_stored_minimized *pMin, const char *zEagerSrc,
                              const char *zCompiledSrc, char *zErr, size_t nErr);

/* Reads the first line of a repro's signature file. A signature is a line or a few (the
 * identity below it); a repro folder is a file from anywhere, so anything but a regular
 * file of at most PARITY_SIGNATURE_MAX_BYTES is refused, never read (formats/regular_file.h).
 * Returns 0, or -1 with zErr. */
#define PARITY_SIGNATURE_MAX_BYTES (1u << 20)
int parity_repro_signature(const char *zRepro, char *zSig, size_t nSig, char *zErr, size_t nErr);

/* ---- graph repros (graph_repro.c) ---------------------------------------------------- */

/* Writes a graph case's repro into zDir (made when absent): eager.h5 with the inputs,
 * every intermediate and /out; compiled.h5 with the inputs and /out (the compiled output
 * aCompiled) as a fusing compiler leaves it (FORMAT.md, "Graph cases"). Atomic per file.
 * Returns 0, or -1 with zErr. */
int parity_graph_repro_write(const char *zDir, const parity_graph_case *pG,
                             double *const *aaEager, const double *aCompiled,
                             const char *zTarget, char *zErr, size_t nErr);
/* Runs a stored graph repro (zRepro/eager.h5: its stored inputs, its graph laid out again)
 * through the graph oracle on pT (graph_replay.c). Returns 0 with the result, or -1 with
 * zErr (the repro cannot be read, or the oracle failed for a reason of ours). */
int parity_graph_replay(parity_target *pT, const char *zRepro, parity_graph_oracle_result *pR,
                        char *zErr, size_t nErr);
/* 1 when zRepro is a graph case's repro (eager.h5 and no signature file, which every
 * single op's repro has), else 0. */
int parity_is_graph_repro(const char *zRepro);
/* A stored graph repro's root cause (graph_triage.c), from its tensors alone, read in a
 * supervised child: 0 with *pCause filled (count 1, its repro zRepro); 1 when its stored
 * output no longer diverges (zErr says why: a registry that changed since); -1 with zErr
 * (damaged, not a graph case). */
int parity_graph_triage_repro(const char *zRepro, parity_graph_cause *pCause, char *zErr,
                              size_t nErr);

#endif
