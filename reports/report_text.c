/*
 * report_text.c - the text report paritydiff prints for people, and the helpers both
 * report writers share (declared in report.h).
 *
 * The report reads top-down like diff or cmp output: a verdict line with counts, the first
 * divergence, differing inputs and global warnings, then one block per tensor worth
 * looking at (every non-pass tensor, and passing ones that carry warnings) in execution
 * order, then identity differences and telemetry side by side, and a closing count. No
 * colors: the output is often piped into files and CI logs.
 *
 * Every name and value a capture supplies (tensor and attribute names, ops, attribute
 * values, and the messages and warnings that quote them) is written through
 * parity_escape_fputs (formats/escape.h): a newline in a dataset name would otherwise
 * start a line of the report's own ("verdict: PASS"), and an escape sequence in an
 * attribute would reach the reader's terminal. A write error is sticky in the stream and
 * caught by the ferror at the end.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include "formats/escape.h"
#include "reports/report.h"

/* Room for one formatted attribute value; longer values are truncated, which is fine for
 * a report meant to be read on a terminal. */
#define REPORT_VALUE_LEN 256

/* ---- shared helpers ------------------------------------------------------------- */

void parity_report_count_statuses(const parity_diff_result *pRes,
                                  uint64_t aCount[PARITY_REPORT_NSTATUS])
{
    size_t i;
    memset(aCount, 0, sizeof(uint64_t) * PARITY_REPORT_NSTATUS);
    for (i = 0; i < pRes->nTensor; i++) {
        unsigned st = (unsigned)pRes->aTensor[i].status;
        if (st < (unsigned)PARITY_REPORT_NSTATUS) aCount[st]++;
    }
}

/* A result built by hand (or by a buggy engine) must not make us index past aDim. */
static int report_clamp_rank(int rank)
{
    if (rank < 0) return 0;
    return rank > PARITY_MAX_RANK ? PARITY_MAX_RANK : rank;
}

int parity_report_has_compiled(const parity_tensor_result *pT)
{
    return pT->status != PARITY_ST_MISSING_IN_COMPILED && pT->rankCompiled >= 0;
}

void parity_report_compiled_shape(const parity_tensor_result *pT, int *pRank,
                                  const uint64_t **paDim)
{
    *pRank = report_clamp_rank(pT->rankCompiled);
    *paDim = pT->aDimCompiled;
}

void parity_report_shape(const parity_tensor_result *pT, int *pRank, const uint64_t **paDim)
{
    if (pT->status == PARITY_ST_MISSING_IN_EAGER) {
        parity_report_compiled_shape(pT, pRank, paDim);
    } else {
        *pRank = report_clamp_rank(pT->rank);
        *paDim = pT->aDim;
    }
}

uint64_t parity_report_elements(const parity_tensor_result *pT)
{
    int i, rank;
    const uint64_t *aDim;
    uint64_t nElem = 1;

    if (pT->hasStats) return pT->stats.nElem;
    parity_report_shape(pT, &rank, &aDim);
    /* A zero extent anywhere empties the tensor even if the other extents overflow. */
    for (i = 0; i < rank; i++)
        if (aDim[i] == 0) return 0;
    for (i = 0; i < rank; i++)
        if (__builtin_mul_overflow(nElem, aDim[i], &nElem)) return UINT64_MAX;
    return nElem;
}

int parity_report_worst_index(const parity_tensor_result *pT, uint64_t *aIndex)
{
    int rank;
    const uint64_t *aDim;

    if (!pT->hasStats || pT->stats.nElem == 0) return 0;
    parity_report_shape(pT, &rank, &aDim);
    parity_unravel(rank, aDim, pT->stats.worstLinear, aIndex);
    return 1;
}

int parity_report_has_slice(const parity_tensor_result *pT)
{
    return pT->hasStats && pT->stats.nMismatch > 0;
}

/* snprintf-append at *pLen, keeping zBuf NUL-terminated when the text does not fit. */
static void report_appendf(char *zBuf, size_t nBuf, size_t *pLen, const char *zFormat, ...)
    __attribute__((format(printf, 4, 5)));
static void report_appendf(char *zBuf, size_t nBuf, size_t *pLen, const char *zFormat, ...)
{
    va_list ap;
    int n;
    if (*pLen + 1 >= nBuf) return;
    va_start(ap, zFormat);
    n = vsnprintf(zBuf + *pLen, nBuf - *pLen, zFormat, ap);
    va_end(ap);
    if (n < 0) return;
    *pLen += (size_t)n < nBuf - *pLen ? (size_t)n : nBuf - 1 - *pLen;
}

char *parity_report_format_dims(int rank, const uint64_t *aLo, const uint64_t *aHi,
                                char *zBuf, size_t nBuf)
{
    int i;
    size_t nLen = 0;

    if (nBuf == 0) return zBuf;
    zBuf[0] = 0;
    report_appendf(zBuf, nBuf, &nLen, "[");
    for (i = 0; i < rank; i++) {
        report_appendf(zBuf, nBuf, &nLen, "%s%" PRIu64, i > 0 ? ", " : "", aLo[i]);
        if (aHi) report_appendf(zBuf, nBuf, &nLen, ":%" PRIu64, aHi[i]);
    }
    report_appendf(zBuf, nBuf, &nLen, "]");
    return zBuf;
}

/* ---- the text report ------------------------------------------------------------ */

/* Prints a status or verdict name in capitals so it stands out without colors. */
static void report_put_upper(FILE *pOut, const char *zName)
{
    for (; *zName; zName++) {
        char c = *zName;
        fputc(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c, pOut);
    }
}

/* " (op)" after a name, escaped; nothing when there is no op. */
static void report_put_op(FILE *pOut, const char *zOp)
{
    if (!zOp) return;
    fputs(" (", pOut);
    parity_escape_fputs(zOp, pOut);
    fputc(')', pOut);
}

/* zLabel as it is, then zText escaped, then the end of the line. */
static void report_put_line(FILE *pOut, const char *zLabel, const char *zText)
{
    fputs(zLabel, pOut);
    parity_escape_fputs(zText, pOut);
    fputc('\n', pOut);
}

static const parity_tensor_result *report_find_tensor(const parity_diff_result *pRes,
                                                      const char *zName)
{
    size_t i;
    for (i = 0; i < pRes->nTensor; i++)
        if (pRes->aTensor[i].zName && strcmp(pRes->aTensor[i].zName, zName) == 0)
            return &pRes->aTensor[i];
    return NULL;
}

/* Whether the compiled side exists and differs from the shown dtype or shape: then the
 * block header names the compiled dtype and shape too. */
static int report_compiled_differs(const parity_tensor_result *pT)
{
    int i;
    if (!parity_report_has_compiled(pT) || pT->status == PARITY_ST_MISSING_IN_EAGER) return 0;
    if (pT->dtypeCompiled != pT->dtype || pT->rankCompiled != pT->rank) return 1;
    for (i = 0; i < pT->rank && i < PARITY_MAX_RANK; i++)
        if (pT->aDimCompiled[i] != pT->aDim[i]) return 1;
    return 0;
}

static void report_put_header(FILE *pOut, const parity_tensor_result *pT)
{
    char zDims[PARITY_REPORT_DIMS_LEN];
    int rank;
    const uint64_t *aDim;

    report_put_upper(pOut, parity_status_name(pT->status));
    fputc(' ', pOut);
    parity_escape_fputs(pT->zName ? pT->zName : "?", pOut);
    report_put_op(pOut, pT->zOp);
    parity_report_shape(pT, &rank, &aDim);
    fprintf(pOut, " %s %s", parity_dtype_name(pT->dtype),
            parity_report_format_dims(rank, aDim, NULL, zDims, sizeof zDims));
    if (report_compiled_differs(pT)) {
        parity_report_compiled_shape(pT, &rank, &aDim);
        fprintf(pOut, " vs compiled %s %s", parity_dtype_name(pT->dtypeCompiled),
                parity_report_format_dims(rank, aDim, NULL, zDims, sizeof zDims));
    }
    if (pT->isInput) fputs(" [input]", pOut);
    fputc('\n', pOut);
}


/* The suspicious elements' line: by the probabilistic bound, or (a fused region's loose
 * bound) by the tolerance from eager and eager's own error (judge.h). */
static void report_put_suspicious(FILE *pOut, const parity_judgement *pJ)
{
    if (pJ->suspectOverEager > 0.0)
        fprintf(pOut, "  suspicious: %" PRIu64 " elements within the fused region's bound but "
                "off eager beyond the tolerance and %gx eager's error against the reference "
                "(reported, not failed)\n", pJ->nSuspicious, pJ->suspectOverEager);
    else
        fprintf(pOut, "  suspicious: %" PRIu64 " elements within the deterministic bound but "
                "beyond the probabilistic one (lambda %g; reported, not failed)\n",
                pJ->nSuspicious, pJ->lambda);
}

static void report_put_stats(FILE *pOut, const parity_tensor_result *pT)
{
    const parity_tensor_stats *pS = &pT->stats;
    const parity_tolerance *pTol = &pT->tol;
    char zDims[PARITY_REPORT_DIMS_LEN];
    uint64_t aIndex[PARITY_MAX_RANK];
    int rank;
    const uint64_t *aDim;

    fprintf(pOut, "  mismatches %" PRIu64 " of %" PRIu64 "; max abs %.4g, max rel %.4g, "
            "max ulp %" PRIu64 ", rel l2 %.4g\n", pS->nMismatch, pS->nElem, pS->maxAbsErr,
            pS->maxRelErr, pS->maxUlp, parity_stats_rel_l2(pS));
    if (pS->nNanMismatch > 0 || pS->nSignedZeroMismatch > 0)
        fprintf(pOut, "  nan/inf mismatches %" PRIu64 ", signed zero mismatches %" PRIu64 "\n",
                pS->nNanMismatch, pS->nSignedZeroMismatch);
    if (parity_report_worst_index(pT, aIndex)) {
        parity_report_shape(pT, &rank, &aDim);
        fprintf(pOut, "  worst %s score %.4g",
                parity_report_format_dims(rank, aIndex, NULL, zDims, sizeof zDims),
                pS->worstScore);
        if (parity_report_has_slice(pT))
            fprintf(pOut, "; affected slice %s",
                    parity_report_format_dims(rank, pS->aSliceLo, pS->aSliceHi, zDims,
                                              sizeof zDims));
        fputc('\n', pOut);
    }
    if (pT->hasJudgement) {
        const parity_judgement *pJ = &pT->judgement;
        /* against the bound first: near a zero reference an ulp is tiny, and 4.76e+43 ulp
         * says nothing a reader can use; the ulp figure is shown only where it reads */
        fprintf(pOut, "  vs MPFR reference: compiled max %.4g (%.3gx its bound", pJ->maxErrCompiled,
                pJ->maxRatioCompiled);
        if (pJ->maxUlpCompiled < 1e6) fprintf(pOut, ", %.3g ulp", pJ->maxUlpCompiled);
        fprintf(pOut, "), eager max %.4g (%.3gx", pJ->maxErrEager, pJ->maxRatioEager);
        if (pJ->maxUlpEager < 1e6) fprintf(pOut, ", %.3g ulp", pJ->maxUlpEager);
        fprintf(pOut, "), bound up to %.4g\n", pJ->maxBound);
        fprintf(pOut, "  classes: %" PRIu64 " within, %" PRIu64 " compiled worse, %" PRIu64
                " eager worse, %" PRIu64 " both beyond, %" PRIu64 " non-finite divergences\n",
                pJ->nWithin, pJ->nCompiledWorse, pJ->nEagerWorse, pJ->nBothBeyond,
                pJ->nNonFinite);
        fputs("  model ", pOut);
        parity_escape_fputs(pT->zModelOp, pOut);
        fprintf(pOut, " (acc %s): ", parity_dtype_name(pT->accDtype));
        parity_escape_fputs(pT->zModel, pOut);
        fputc('\n', pOut);
        if (pT->nRegionOp > 0) {
            size_t i;
            fprintf(pOut, "  fused region: %zu op%s (", pT->nRegionOp, pT->nRegionOp == 1 ? "" : "s");
            for (i = 0; i < pT->nRegionOp; i++) {
                if (i) fputs(", ", pOut);
                parity_escape_fputs(pT->azRegionOp[i], pOut);
            }
            fputs(") from ", pOut);
            for (i = 0; i < pT->nRegionInput; i++) {
                if (i) fputs(", ", pOut);
                parity_escape_fputs(pT->azRegionInput[i], pOut);
            }
            fputc('\n', pOut);
        }
        if (pJ->nSuspicious > 0) report_put_suspicious(pOut, pJ);
        if (pJ->sampled)
            fprintf(pOut, "  reference checked %" PRIu64 " of %" PRIu64 " elements: %" PRIu64
                    " where the runs disagree beyond the envelope, %" PRIu64 " sampled\n",
                    pJ->nChecked, pS->nElem, pJ->nFlagged, pJ->nSampled);
        return;
    }
    if (pT->zRule) {
        report_put_line(pOut, "  rule: ", pT->zRule);
        return;
    }
    if (pTol->exact) {
        fputs("  tolerance exact", pOut);
    } else {
        fprintf(pOut, "  tolerance atol %.4g, rtol %.4g", pTol->atol, pTol->rtol);
        if (pTol->useUlp) fprintf(pOut, ", max ulp %" PRIu64, pTol->maxUlp);
    }
    fputs(pTol->signedZeros ? ", signed zeros\n" : "\n", pOut);
}

/* Blocks go to tensors that are not pass, and to passing ones that carry warnings. */
static int report_has_block(const parity_tensor_result *pT)
{
    return pT->status != PARITY_ST_PASS || pT->nWarning > 0 ||
           (pT->hasJudgement && pT->judgement.nSuspicious > 0);
}

static void report_put_tensor(FILE *pOut, const parity_tensor_result *pT)
{
    const char *zCause = parity_cause_name(pT->cause);
    size_t i;

    fputc('\n', pOut);
    report_put_header(pOut, pT);
    /* A passing tensor is only shown for its warnings: its figures are not news. */
    if (pT->hasStats && pT->status != PARITY_ST_PASS) report_put_stats(pOut, pT);
    else if (pT->hasJudgement && pT->judgement.nSuspicious > 0)
        report_put_suspicious(pOut, &pT->judgement);
    if (zCause) fprintf(pOut, "  cause: %s\n", zCause);
    if (pT->zMessage) report_put_line(pOut, "  error: ", pT->zMessage);
    if (pT->zModelNote && pT->status != PARITY_ST_PASS)
        report_put_line(pOut, "  note: ", pT->zModelNote);
    for (i = 0; i < pT->nWarning; i++) report_put_line(pOut, "  warning: ", pT->azWarning[i]);
}

/* Whether a global warning is the engine's "name: warning" copy of a tensor warning that
 * the tensor's block already shows; the top of the report then skips it. */
static int report_is_block_warning(const parity_diff_result *pRes, const char *zWarning)
{
    size_t i, j;
    for (i = 0; i < pRes->nTensor; i++) {
        const parity_tensor_result *pT = &pRes->aTensor[i];
        size_t nName;
        if (pT->nWarning == 0 || !pT->zName || !report_has_block(pT)) continue;
        nName = strlen(pT->zName);
        if (strncmp(zWarning, pT->zName, nName) != 0 || strncmp(zWarning + nName, ": ", 2) != 0)
            continue;
        for (j = 0; j < pT->nWarning; j++)
            if (strcmp(zWarning + nName + 2, pT->azWarning[j]) == 0) return 1;
    }
    return 0;
}

/* "key: eager | compiled" with "(absent)" for a side that lacks the attribute. */
static void report_put_pair(FILE *pOut, const char *zKey, const parity_diff_result *pRes)
{
    char zEager[REPORT_VALUE_LEN], zCompiled[REPORT_VALUE_LEN];
    const parity_attr *pEager = parity_attr_find(pRes->aEagerRoot, pRes->nEagerRoot, zKey);
    const parity_attr *pCompiled =
        parity_attr_find(pRes->aCompiledRoot, pRes->nCompiledRoot, zKey);

    fputs("  ", pOut);
    parity_escape_fputs(zKey, pOut);
    fputs(": ", pOut);
    parity_escape_fputs(pEager ? parity_attr_format(pEager, zEager, sizeof zEager) : "(absent)",
                        pOut);
    fputs(" | ", pOut);
    report_put_line(pOut, "", pCompiled ? parity_attr_format(pCompiled, zCompiled, sizeof zCompiled)
                                        : "(absent)");
}

/* Telemetry keys in eager order, then those only compiled has. */
static void report_put_telemetry(FILE *pOut, const parity_diff_result *pRes)
{
    size_t i;
    int isFirst = 1;

    for (i = 0; i < pRes->nEagerRoot + pRes->nCompiledRoot; i++) {
        const char *zKey = i < pRes->nEagerRoot
                               ? pRes->aEagerRoot[i].zName
                               : pRes->aCompiledRoot[i - pRes->nEagerRoot].zName;
        if (!parity_is_telemetry_key(zKey)) continue;
        if (i >= pRes->nEagerRoot && parity_attr_find(pRes->aEagerRoot, pRes->nEagerRoot, zKey))
            continue;
        if (isFirst) fputs("\ntelemetry (eager | compiled):\n", pOut);
        isFirst = 0;
        report_put_pair(pOut, zKey, pRes);
    }
}

int parity_report_text(const parity_diff_result *pRes, FILE *pOut)
{
    uint64_t aCount[PARITY_REPORT_NSTATUS];
    size_t i, nSuspect;
    int st;

    parity_report_count_statuses(pRes, aCount);
    fputs("verdict: ", pOut);
    report_put_upper(pOut, parity_verdict_name(pRes->verdict));
    fprintf(pOut, " (%zu tensors", pRes->nTensor);
    for (st = 0; st < PARITY_REPORT_NSTATUS; st++)
        if (aCount[st] > 0)
            fprintf(pOut, ", %" PRIu64 " %s", aCount[st], parity_status_name((parity_status)st));
    for (i = 0, nSuspect = 0; i < pRes->nTensor; i++)
        nSuspect += pRes->aTensor[i].hasJudgement && pRes->aTensor[i].judgement.nSuspicious > 0;
    if (nSuspect > 0) fprintf(pOut, "; %zu with suspicious elements", nSuspect);
    fputs(")\n", pOut);
    if (pRes->zError) report_put_line(pOut, "error: ", pRes->zError);

    if (pRes->zFirstDivergence) {
        const parity_tensor_result *pFirst = report_find_tensor(pRes, pRes->zFirstDivergence);
        fputs("first divergence: ", pOut);
        parity_escape_fputs(pRes->zFirstDivergence, pOut);
        if (pFirst) report_put_op(pOut, pFirst->zOp);
        if (pFirst && pFirst->cause == PARITY_CAUSE_LOCAL && !pFirst->zOp)
            fputs(pFirst->isInput
                      ? ", no op: treated as an input (if it is computed, give it its op)"
                      : ", no op: compared by tolerance (if it is computed, give it its op)",
                  pOut);
        else if (pFirst && pFirst->cause == PARITY_CAUSE_LOCAL && pFirst->metadataSuspect)
            fputs(", root cause: eager breaks the error bound as often: metadata that "
                  "does not describe what ran, or a kernel both sides call (see its warning)",
                  pOut);
        else if (pFirst && pFirst->cause == PARITY_CAUSE_LOCAL)
            fputs(", root cause: its own kernel breaks the error bound", pOut);
        fputc('\n', pOut);
    } else {
        fputs("first divergence: none\n", pOut);
    }
    if (!pRes->inputsMatch) {
        fputs("inputs differ:", pOut);
        for (i = 0; i < pRes->nInputDiffers; i++) {
            fputs(i > 0 ? ", " : " ", pOut);
            parity_escape_fputs(pRes->azInputDiffers[i], pOut);
        }
        fputc('\n', pOut);
    }
    for (i = 0; i < pRes->nWarning; i++)
        if (!report_is_block_warning(pRes, pRes->azWarning[i]))
            report_put_line(pOut, "warning: ", pRes->azWarning[i]);

    for (i = 0; i < pRes->nTensor; i++) {
        const parity_tensor_result *pT = &pRes->aTensor[i];
        if (report_has_block(pT)) report_put_tensor(pOut, pT);
    }

    if (pRes->nIdentityDiffers > 0) {
        fputs("\nidentity differs (eager | compiled):\n", pOut);
        for (i = 0; i < pRes->nIdentityDiffers; i++)
            report_put_pair(pOut, pRes->azIdentityDiffers[i], pRes);
    }
    report_put_telemetry(pOut, pRes);

    fprintf(pOut, "\n%" PRIu64 " of %zu tensors passed\n", aCount[PARITY_ST_PASS],
            pRes->nTensor);
    if (fflush(pOut) != 0 || ferror(pOut)) return -1;
    return 0;
}
