/*
 * triage.c - findings grouped into root causes.
 *
 * A signature splits one defect by shape and value features (a NaN at rank 1 and at rank 3
 * are two signatures); a compiler engineer wants the defects. A finding's cause is what
 * its minimized case cannot do without (the minimizer has already removed the rest):
 *
 *   kernel   the op's kernel (parity_op_kernel: matmul, linear and bmm are one GEMM;
 *            maximum, minimum, amax, amin, relu and clamp one max/min), except for a
 *            flushed subnormal, which is the dtype's conversion or the CPU's flush mode
 *            whatever the op: "*", and then the dtype is part of the cause
 *   symptom  at the worst element, compiled against the reference rounded to the output
 *            dtype: nan lost (reference NaN, compiled a number), inf lost (reference
 *            infinite, compiled finite), nan made (reference infinite, compiled NaN:
 *            gelu(+Inf) = NaN), sign (an infinity of the other sign), nonfinite made
 *            (reference finite, compiled not),
 *            subnormal flushed (compiled 0 where the reference is a nonzero subnormal of
 *            the dtype), accuracy (any other error beyond the bound, an underflow to 0 of a
 *            normal result included), or the class: crash, hang, error
 *   trigger  a dim the minimizer could not bring to 64 or below (it shrinks every dim until
 *            one smaller no longer fails, so a large dim is necessary: a tail past a tile, a
 *            split threshold), named by its role in the layout and its alignment; then the defect is in the shape path and whatever the values
 *            showed (a NaN in a dropped tail, an overflow, a rounding error) is a symptom of
 *            it, so the symptom is left out of the cause and listed. Else the value class
 *            the case keeps: a nan input, an inf input (a masked row is one), a subnormal
 *            input; else, for accuracy, where the result lies: zero result, tiny result
 *            (within 2^24 of the smallest normal), huge result (within 2^24 of the largest
 *            finite), else "-"
 *
 * Dtypes are not part of a cause (a kernel that loses NaN in float32 and bfloat16 has one
 * bug) except for the flushed subnormal. The rules were checked against the oneDNN 2.6.3
 * findings of the README, one cause per row, and the builtin defects (tests/fuzz/).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/alloc.h"
#include "fuzz/findings/findings.h"
#include "tolerance/mpref.h"

static void set(char *zDst, size_t n, const char *zSrc)
{
    snprintf(zDst, n, "%s", zSrc);
}

/* The value class the inputs keep: the strongest of NaN, infinity, subnormal; NULL: none. */
static const char *value_trigger(const parity_case *pCase)
{
    int hasNan = 0, hasInf = 0, hasSub = 0;
    size_t i;
    uint64_t k;
    for (i = 0; i < pCase->nIn; i++) {
        const parity_operand *pIn = &pCase->aIn[i];
        double tiny = parity_dtype_smallest_normal(pIn->dtype);
        if (!parity_dtype_is_float(pIn->dtype) || !pIn->aValue) continue;
        for (k = 0; k < pIn->nElem; k++) {
            double v = pIn->aValue[k];
            if (isnan(v)) hasNan = 1;
            else if (isinf(v)) hasInf = 1;
            else if (v != 0 && fabs(v) < tiny) hasSub = 1;
        }
    }
    return hasNan ? "nan input" : hasInf ? "inf input" : hasSub ? "subnormal input" : NULL;
}

/* The dims the minimized case keeps above 64, as "large K dim (unaligned)"; "" when none.
 * The size is left out: the minimizer's halving steps prove a dim cannot be one smaller,
 * not that no smaller size fails (a K % 64 in 1..3 defect can stop at K = 4097 as well as
 * at K = 65), so a size band would split one defect. */
static void shape_trigger(const parity_case *pCase, char *zBuf, size_t nBuf)
{
    static const char *const azRole[] = { "batch", "row", "reduce", "K", "tile", "kernel" };
    const parity_layout_info *pInfo = parity_layout_of(pCase->pDef);
    size_t len = 0;
    int d;
    zBuf[0] = '\0';
    if (!pInfo) return;
    for (d = 0; d < pCase->spec.nDim && d < pInfo->nDim && len < nBuf; d++) {
        uint64_t n = pCase->spec.aDim[d];
        const char *zAlign;
        if (!((pCase->usedDims >> d) & 1) || n <= 64) continue;
        zAlign = n % 32 == 0 ? "multiple of 32" : n % 16 == 0 ? "multiple of 16"
               : n % 8 == 0 ? "multiple of 8" : "unaligned";
        len += (size_t)snprintf(zBuf + len, nBuf - len, "%slarge %s dim (%s)", len ? ", " : "",
                                (unsigned)pInfo->aRole[d] < sizeof azRole / sizeof azRole[0]
                                    ? azRole[pInfo->aRole[d]] : "?", zAlign);
    }
}

/* The reference of element `linear`, rounded to the output dtype; NaN with *pOk 0 when the
 * registry cannot say. */
static double reference_at(const parity_case *pCase, uint64_t linear, int *pOk)
{
    parity_op_call call;
    char zErr[PARITY_ERR_LEN];
    mpfr_t ref;
    double bound, r = NAN;
    *pOk = 0;
    if (linear >= pCase->nOut || parity_case_op_begin(pCase, &call, zErr, sizeof zErr) != 0)
        return NAN;
    mpfr_init2(ref, PARITY_REF_PREC);
    call.probBound = NAN;
    if (call.pDef->xElement(&call, linear, ref, &bound) == 0) {
        r = parity_round_to_dtype(ref, pCase->outDtype);
        *pOk = 1;
    }
    mpfr_clear(ref);
    parity_op_end(&call);
    return r;
}

const char *parity_triage_symptom(double r, double c, parity_dtype dt)
{
    if (isnan(r) && !isnan(c)) return "nan lost";
    if (isinf(r) && isfinite(c)) return "inf lost";
    if (isinf(r) && isnan(c)) return "nan made";
    if (isinf(r) && isinf(c) && signbit(r) != signbit(c)) return "sign";
    if (isfinite(r) && !isfinite(c)) return "nonfinite made";
    if (c == 0 && r != 0 && fabs(r) < parity_dtype_smallest_normal(dt)) return "subnormal flushed";
    return "accuracy";
}

void parity_triage_cause(const parity_case *pCase, const parity_oracle_result *pR,
                         const double *aCompiled, parity_root_key *pCause)
{
    const char *zTrigger = value_trigger(pCase);
    memset(pCause, 0, sizeof *pCause);
    set(pCause->zKernel, sizeof pCause->zKernel, parity_op_kernel(pCase->pDef));
    set(pCause->zDtype, sizeof pCause->zDtype, parity_dtype_name(pCase->outDtype));
    set(pCause->zTrigger, sizeof pCause->zTrigger, zTrigger ? zTrigger : "-");
    if (pCase->spec.nDim > 0 && !pCase->aStoredAttr) {
        char zShape[sizeof pCause->zTrigger];
        shape_trigger(pCase, zShape, sizeof zShape);
        if (zShape[0]) {
            set(pCause->zTrigger, sizeof pCause->zTrigger, zShape);
            pCause->shape = 1;
            zTrigger = zShape;   /* no value class or result band on top of it */
        }
    }
    if (pR->cls != PARITY_FINDING_DIVERGES || !pR->judged || !aCompiled) {
        set(pCause->zSymptom, sizeof pCause->zSymptom, parity_finding_class_name(pR->cls));
    } else {
        uint64_t w = pR->judgement.worstLinear;
        int ok;
        double r = reference_at(pCase, w, &ok), c = w < pCase->nOut ? aCompiled[w] : NAN;
        double tiny = parity_dtype_smallest_normal(pCase->outDtype);
        double huge = parity_dtype_max_finite(pCase->outDtype);
        /* no reference to read a symptom from: accuracy */
        const char *zSym = ok ? parity_triage_symptom(r, c, pCase->outDtype) : "accuracy";
        set(pCause->zSymptom, sizeof pCause->zSymptom, zSym);
        if (strcmp(zSym, "subnormal flushed") == 0 && !pCause->shape) {
            /* the dtype's flush, whatever op produced the subnormal */
            set(pCause->zKernel, sizeof pCause->zKernel, "*");
            set(pCause->zTrigger, sizeof pCause->zTrigger, "subnormal result");
        } else if (!zTrigger && ok && strcmp(zSym, "accuracy") == 0) {
            const char *zBand = r == 0 ? "zero result"
                              : fabs(r) < tiny * 0x1p24 ? "tiny result"
                              : fabs(r) > huge * 0x1p-24 ? "huge result" : "-";
            set(pCause->zTrigger, sizeof pCause->zTrigger, zBand);
        }
    }
    pCause->keyDtype = strcmp(pCause->zKernel, "*") == 0;
}

/* The items ("large K dim (unaligned)") two shape triggers share, ", "-separated, into
 * zOut; returns how many. */
static int common_items(const char *zA, const char *zB, char *zOut, size_t nOut)
{
    size_t len = 0;
    int n = 0;
    zOut[0] = '\0';
    while (*zA) {
        const char *zEnd = strstr(zA, ", "), *p = zB;
        size_t item = zEnd ? (size_t)(zEnd - zA) : strlen(zA);
        while (*p) {
            const char *pEnd = strstr(p, ", ");
            size_t other = pEnd ? (size_t)(pEnd - p) : strlen(p);
            if (other == item && strncmp(p, zA, item) == 0) {
                if (len + item + 3 < nOut) {
                    len += (size_t)snprintf(zOut + len, nOut - len, "%s%.*s", n ? ", " : "",
                                            (int)item, zA);
                }
                n++;
                break;
            }
            p += other + (pEnd ? 2 : 0);
        }
        zA += item + (zEnd ? 2 : 0);
    }
    return n;
}

/* One cause: the same kernel, and the same symptom and trigger (and dtype where it is
 * keyed); a shape cause instead needs only one large dim in common with the other (a case
 * that also kept a large M is the K tail's too). */
static int same_cause(const parity_root_key *pA, const parity_root_key *pB)
{
    char zCommon[sizeof pA->zTrigger];
    if (strcmp(pA->zKernel, pB->zKernel) != 0 || pA->shape != pB->shape) return 0;
    if (pA->shape) return common_items(pA->zTrigger, pB->zTrigger, zCommon, sizeof zCommon) > 0;
    return strcmp(pA->zSymptom, pB->zSymptom) == 0 && strcmp(pA->zTrigger, pB->zTrigger) == 0 &&
           (!pA->keyDtype || strcmp(pA->zDtype, pB->zDtype) == 0);
}

/* A shape cause's trigger narrowed to what pOther's shares with it. */
static void narrow_trigger(parity_root_key *pKey, const parity_root_key *pOther)
{
    char zCommon[sizeof pKey->zTrigger];
    if (pKey->shape && common_items(pKey->zTrigger, pOther->zTrigger, zCommon, sizeof zCommon) > 0)
        set(pKey->zTrigger, sizeof pKey->zTrigger, zCommon);
}

/* z appended to the comma-separated list *pz unless there; 0 or -1 (out of memory). */
static int list_add(char **pz, const char *z)
{
    size_t n = *pz ? strlen(*pz) : 0, len = strlen(z);
    const char *p = *pz;
    char *zNew;
    while (p && *p) {
        size_t item = strcspn(p, ",");
        if (item == len && strncmp(p, z, len) == 0) return 0;
        p += item + (p[item] == ',');
    }
    zNew = parity_realloc(*pz, n + len + 2);
    if (!zNew) return -1;
    if (n) zNew[n++] = ',';
    memcpy(zNew + n, z, len + 1);
    *pz = zNew;
    return 0;
}

static void cause_free(parity_root_cause *pC)
{
    free(pC->zOps);
    free(pC->zDtypes);
    free(pC->zSymptoms);
    free(pC->aiFinding);
}

int parity_triage_group(const parity_finding *aFinding, size_t nFinding,
                        parity_root_cause **paCause, size_t *pnCause)
{
    parity_root_cause *a = NULL;
    size_t n = 0, i, k;
    for (i = 0; i < nFinding; i++) {
        const parity_finding *pF = &aFinding[i];
        parity_root_cause *pC;
        if (!pF->hasCause) continue;
        for (k = 0; k < n; k++)
            if (same_cause(&a[k].cause, &pF->cause)) break;
        if (k == n) {
            parity_root_cause *aNew = parity_realloc(a, (n + 1) * sizeof *aNew);
            if (!aNew) goto nomem;
            a = aNew;
            memset(&a[n], 0, sizeof a[n]);
            a[n].cause = pF->cause;
            n++;
        }
        pC = &a[k];
        narrow_trigger(&pC->cause, &pF->cause);
        pC->nFinding++;
        if (list_add(&pC->zOps, pF->zOp) != 0 || list_add(&pC->zDtypes, pF->cause.zDtype) != 0 ||
            list_add(&pC->zSymptoms, pF->cause.zSymptom) != 0)
            goto nomem;
        {
            size_t *aNew = parity_realloc(pC->aiFinding, pC->nFinding * sizeof *aNew);
            if (!aNew) goto nomem;
            pC->aiFinding = aNew;
            pC->aiFinding[pC->nFinding - 1] = i;
        }
        /* the representative: the smallest stored repro */
        if (pF->zRepro && (!pC->hasRepro || pF->nElems < pC->nReproElems)) {
            pC->iRepro = (long)i;
            pC->hasRepro = 1;
            pC->nReproElems = pF->nElems;
        }
    }
    /* shape causes that came apart by the order of the findings and share a dim: one */
    for (i = 0; i < n; i++) {
        for (k = i + 1; k < n; k++) {
            parity_root_cause *pI = &a[i], *pK = &a[k];
            size_t *aNew, m;
            const char *azSrc[3] = { pK->zOps, pK->zDtypes, pK->zSymptoms };
            char **apzDst[3] = { &pI->zOps, &pI->zDtypes, &pI->zSymptoms };
            if (!pI->cause.shape || !same_cause(&pI->cause, &pK->cause)) continue;
            aNew = parity_realloc(pI->aiFinding, (pI->nFinding + pK->nFinding) * sizeof *aNew);
            if (!aNew) goto nomem;
            pI->aiFinding = aNew;
            memcpy(aNew + pI->nFinding, pK->aiFinding, pK->nFinding * sizeof *aNew);
            pI->nFinding += pK->nFinding;
            for (m = 0; m < 3; m++) {
                const char *z = azSrc[m];
                char zItem[64];
                while (z && *z) {
                    size_t item = strcspn(z, ",");
                    snprintf(zItem, sizeof zItem, "%.*s", (int)item, z);
                    if (list_add(apzDst[m], zItem) != 0) goto nomem;
                    z += item + (z[item] == ',');
                }
            }
            if (pK->hasRepro && (!pI->hasRepro || pK->nReproElems < pI->nReproElems)) {
                pI->hasRepro = 1;
                pI->iRepro = pK->iRepro;
                pI->nReproElems = pK->nReproElems;
            }
            narrow_trigger(&pI->cause, &pK->cause);
            cause_free(pK);
            memmove(pK, pK + 1, (n - k - 1) * sizeof *pK);
            n--;
            k = i;                                   /* the narrowed trigger may join more */
        }
    }
    /* most findings first; ties by kernel and symptom, so the order is the same each run */
    for (i = 1; i < n; i++) {
        parity_root_cause t = a[i];
        for (k = i; k > 0; k--) {
            const parity_root_cause *p = &a[k - 1];
            int c = p->nFinding != t.nFinding ? (p->nFinding < t.nFinding ? 1 : -1)
                  : strcmp(p->cause.zKernel, t.cause.zKernel) != 0
                        ? strcmp(p->cause.zKernel, t.cause.zKernel)
                        : strcmp(p->cause.zSymptom, t.cause.zSymptom) != 0
                              ? strcmp(p->cause.zSymptom, t.cause.zSymptom)
                              : strcmp(p->cause.zTrigger, t.cause.zTrigger) != 0
                                    ? strcmp(p->cause.zTrigger, t.cause.zTrigger)
                                    : strcmp(p->cause.zDtype, t.cause.zDtype);
            if (c <= 0) break;
            a[k] = a[k - 1];
        }
        a[k] = t;
    }
    *paCause = a;
    *pnCause = n;
    return 0;
nomem:
    parity_triage_free(a, n);
    *paCause = NULL;
    *pnCause = 0;
    return -1;
}

void parity_triage_free(parity_root_cause *aCause, size_t nCause)
{
    size_t i;
    for (i = 0; i < nCause; i++) cause_free(&aCause[i]);
    free(aCause);
}
