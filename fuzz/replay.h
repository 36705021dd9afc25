/*
 * replay.h - re-running stored repros against a target: the regression gate.
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
#ifndef PARITY_REPLAY_H
#define PARITY_REPLAY_H

#include "oracle.h"

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

/* Lists the repros under zDir: zDir itself when it holds eager.h5, else its subfolders
 * that do (sorted by name; temporary folders of a running campaign are skipped). Returns
 * the count (*pazRepro malloc'd, free with parity_replay_list_free), or -1 with zErr. */
long parity_replay_list(const char *zDir, char ***pazRepro, char *zErr, size_t nErr);
void parity_replay_list_free(char **azRepro, long n);

#endif
