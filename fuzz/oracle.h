/*
 * oracle.h - deciding whether a case is a finding, and which.
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
#ifndef PARITY_ORACLE_H
#define PARITY_ORACLE_H

#include "target.h"
#include "../tolerance/judge.h"

typedef enum {
    PARITY_FINDING_NONE,
    PARITY_FINDING_DIVERGES,
    PARITY_FINDING_ERROR,
    PARITY_FINDING_CRASH,
    PARITY_FINDING_HANG,
    PARITY_FINDING_SKIPPED    /* not a finding: eager could not run it, or unsupported */
} parity_finding_class;

const char *parity_finding_class_name(parity_finding_class cls);

typedef struct {
    parity_finding_class cls;
    parity_run_status eagerStatus, compiledStatus;
    int judged;               /* judgement is filled */
    int bitIdentical;         /* compiled == eager bit for bit (then not judged) */
    parity_judgement judgement;
    char zDetail[PARITY_ERR_LEN + 128];   /* the error text, or a one-line summary */
} parity_oracle_result;

/* Runs both sides of pCase on pT and judges. The outputs are left in aEager/aCompiled
 * (pCase->nOut each, caller-allocated) for the repro writer. Returns 0, or -1 when the
 * judge itself failed (zDetail says why; a bug of ours, not the target's). */
int parity_oracle_run(parity_target *pT, const parity_case *pCase, double *aEager,
                      double *aCompiled, parity_oracle_result *pR);

/* The signature that deduplicates findings (signature.c): op, dtype, class, and shape and value features of the case such as which dims are 1, their
 * alignment to 8/16/32, lengths past split thresholds, and NaN/Inf/fully masked rows.
 * Two cases with one signature are taken as the same bug. */
const char *parity_signature(const parity_case *pCase, const parity_oracle_result *pR,
                             char *zBuf, size_t nBuf);
/* A short stable hash of a signature (16 hex digits), used to name repro folders. */
void parity_signature_hash(const char *zSignature, char *zHex17);

#endif
