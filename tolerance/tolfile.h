/*
 * tolfile.h - the tolerance file: human-edited overrides of the op models, per op and per
 * tensor path (`paritydiff --tolerance FILE`). Format and example: tolerance/TOLERANCE.md.
 *
 * Resolution for a tensor: `defaults`, then `ops.<op>`, then `tensors.<path>`; each level
 * overrides only the keys it sets.
 */
#ifndef PARITY_TOLFILE_H
#define PARITY_TOLFILE_H

#include <stddef.h>
#include "formats/dtype.h"

typedef struct {
    int hasScale;
    double scale;            /* multiplies every element's bound (>= 0) */
    int hasExtraUlps;
    double extraUlps;        /* adds this many ulps of the output dtype at the reference */
    int hasAccDtype;
    parity_dtype accDtype;   /* the accumulation dtype to assume (overrides the attribute) */
    int hasNanPolicy;
    int nanLenient;          /* 0 "reference": the reference decides non-finite values;
                              * 1 "lenient": a finite compiled value where the reference is
                              * NaN passes (fully masked rows returning 0, say) */
    int hasModel;
    int useModel;            /* 0: judge with the per-dtype tolerance instead */
    int hasBound;
    int probabilistic;       /* "bound: probabilistic": the Higham-Mary bound decides */
    int hasLambda;
    double lambda;           /* of the probabilistic bound (> 0) */
    int hasComputeDtype;
    double uOperand;         /* "compute_dtype": unit roundoff the operands are rounded to */
} parity_tol_override;

typedef struct parity_tolfile parity_tolfile;

/* Reads and checks zPath (YAML, parsed with libyaml). Unknown keys, wrong types and bad
 * values are errors, so a typo never silently changes nothing. Returns 0, or -1 with one
 * line in zErr. */
/* Hand-written tolerance files are a few KiB; more is not one (and a device or a FIFO
 * named as one is refused, formats/regular_file.h). */
#define PARITY_TOLFILE_MAX_BYTES (16u << 20)
int parity_tolfile_load(const char *zPath, parity_tolfile **ppFile, char *zErr, size_t nErr);
void parity_tolfile_free(parity_tolfile *pFile);

/* Unit roundoff of a "compute_dtype" value: "tf32" (2^-11) or a float dtype name; 0 when
 * the name is neither. */
double parity_compute_roundoff(const char *zName);

/* The override in force for a tensor (zOp may be NULL). pFile may be NULL: nothing set. */
void parity_tolfile_resolve(const parity_tolfile *pFile, const char *zOp, const char *zPath,
                            parity_tol_override *pOut);

/* Does the file's own entry for tensor zPath set compute_dtype? (A default does not name
 * the tensor; the caller refuses compute_dtype named for an op that has no use for it.) */
int parity_tolfile_tensor_sets_compute(const parity_tolfile *pFile, const char *zPath);

#endif
