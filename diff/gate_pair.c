/*
 * gate_pair.c - every pair of a suite judged in a supervised child, --jobs at a time.
 *
 * Why a child per pair: libhdf5 can crash or hang on a corrupt capture (paritydiff.c), and
 * one bad pair must cost that pair an error record, not the gate. Each child has an
 * address-space limit, so the gate's memory is bounded by jobs x that limit whatever the
 * suite holds; the parent never reads HDF5.
 *
 * Protocol: the child sends one line with the record's length in bytes, then the record
 * (compact JSON), and exits 0. Anything else (death, silence past the stall limit, a
 * record that does not parse) becomes an error record naming the pair's files.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "diff/gate.h"
#include "formats/capture.h"
#include "formats/process.h"
#include "reports/report.h"
#include "reports/report_internal.h"

#define RECORD_MAX (64u << 20)      /* a pair record holds summaries only: far below this */
#define LOCAL_CAUSES_MAX 64         /* local-cause tensors a record lists */
#define WARNINGS_MAX 16

/* ---- the record, built in the child ------------------------------------------------ */

/* The 64 log2 buckets of REPORT.md's ulp_histogram (entries {min, max, count}) as counts:
 * bucket 0 holds distance 0, bucket k distances [2^(k-1), 2^k). */
static json_t *ulp_counts(const json_t *pHist)
{
    json_t *pOut = json_array(), *pEntry;
    uint64_t aCount[PARITY_ULP_BUCKETS] = { 0 };
    size_t i;
    int rc = 0;
    json_array_foreach(pHist, i, pEntry) {
        json_int_t lo = json_integer_value(json_object_get(pEntry, "min"));
        int k = 0;
        while (lo > 0 && k < PARITY_ULP_BUCKETS - 1) { lo >>= 1; k++; }
        aCount[k] += (uint64_t)json_integer_value(json_object_get(pEntry, "count"));
    }
    for (i = 0; i < PARITY_ULP_BUCKETS; i++)
        rc |= parity_report_append(pOut, json_integer((json_int_t)aCount[i]));
    return parity_report_finish(pOut, rc);
}

static json_t *local_cause(const json_t *pT)
{
    json_t *pC = json_object();
    int rc = 0;
    rc |= parity_report_set(pC, "name", json_deep_copy(json_object_get(pT, "name")));
    rc |= parity_report_set(pC, "op", json_deep_copy(json_object_get(pT, "op")));
    rc |= parity_report_set(pC, "affected_slice",
                            json_deep_copy(json_object_get(pT, "affected_slice")));
    rc |= parity_report_set(pC, "max_ulp", json_deep_copy(json_object_get(pT, "max_ulp")));
    rc |= parity_report_set(pC, "ulp_hist", ulp_counts(json_object_get(pT, "ulp_histogram")));
    return parity_report_finish(pC, rc);
}

/* The record's fields every status has. */
static int record_head(json_t *pRec, const parity_gate_pair_spec *pSpec, const char *zStatus,
                       const char *zError)
{
    int rc = 0;
    /* ids and paths are folder names, errors quote captures: any bytes, repaired to UTF-8 */
    rc |= parity_report_set(pRec, "id", parity_report_string(pSpec->zId));
    rc |= parity_report_set(pRec, "eager", parity_report_string(pSpec->zEager));
    rc |= parity_report_set(pRec, "compiled", parity_report_string(pSpec->zCompiled));
    rc |= parity_report_set(pRec, "status", json_string(zStatus));
    rc |= parity_report_set(pRec, "error", parity_report_string(zError));
    return rc;
}

/* The pair record of one diff (GATE.md's PAIR), in the pair's child: the fields of
 * paritydiff's own JSON report it needs, so the two cannot disagree. */
static json_t *pair_record(const parity_gate_pair_spec *pSpec, const parity_diff_result *pRes,
                           json_t *pOutcomes)
{
    json_t *pRec = json_object(), *pReport = parity_report_json_build(pRes);
    json_t *pTensors, *pT, *pCauses = json_array(), *pIdentity, *pTel, *pWarn = json_array();
    const char *zError = pRes->zError;
    size_t i, nCompared = 0, nFail = 0;
    int rc = pReport == NULL;

    if (pReport == NULL) goto done;
    pTensors = json_object_get(pReport, "tensors");
    json_array_foreach(pTensors, i, pT) {
        const char *zSt = json_string_value(json_object_get(pT, "status"));
        const char *zCause = json_string_value(json_object_get(pT, "cause"));
        if (zSt && (strcmp(zSt, "pass") == 0 || strcmp(zSt, "fail") == 0)) nCompared++;
        if (zSt && strcmp(zSt, "pass") != 0 && strncmp(zSt, "missing", 7) != 0) nFail++;
        if (zSt && strcmp(zSt, "error") == 0 && zError == NULL)
            zError = json_string_value(json_object_get(pT, "message"));
        if (zCause && strcmp(zCause, "local") == 0 && json_array_size(pCauses) < LOCAL_CAUSES_MAX)
            rc |= parity_report_append(pCauses, local_cause(pT));
    }
    rc |= record_head(pRec, pSpec, parity_verdict_name(pRes->verdict),
                      pRes->verdict == PARITY_VERDICT_ERROR ? (zError ? zError : "unusable")
                                                           : NULL);
    rc |= parity_report_set(pRec, "first_divergence",
                            json_deep_copy(json_object_get(pReport, "first_divergence")));
    rc |= parity_report_set(pRec, "tensors", json_pack("{s:I,s:I}", "compared",
                            (json_int_t)nCompared, "fail", (json_int_t)nFail));
    rc |= parity_report_set(pRec, "local_causes", pCauses);
    pCauses = NULL;
    pIdentity = json_object_get(pReport, "identity");
    pTel = json_object_get(pReport, "telemetry");
    rc |= parity_report_set(pRec, "identity", json_pack("{s:O,s:O}",
                            "eager", json_object_get(pIdentity, "eager"),
                            "compiled", json_object_get(pIdentity, "compiled")));
    rc |= parity_report_set(pRec, "telemetry", json_deep_copy(pTel));
    rc |= parity_report_set(pRec, "outcomes", pOutcomes ? json_incref(pOutcomes) : json_array());
    for (i = 0; i < pRes->nWarning && i < WARNINGS_MAX; i++)
        rc |= parity_report_append(pWarn, parity_report_string(pRes->azWarning[i]));
    rc |= parity_report_set(pRec, "warnings", pWarn);
    pWarn = NULL;
done:
    json_decref(pReport);
    json_decref(pCauses);
    json_decref(pWarn);
    return parity_report_finish(pRec, rc);
}

/* A pair with one side only: its labels and telemetry from that capture's root. */
static json_t *one_sided_record(const parity_gate_pair_spec *pSpec)
{
    const char *zFile = pSpec->zEager ? pSpec->zEager : pSpec->zCompiled;
    parity_capture *pCap = NULL;
    json_t *pRec = json_object(), *pId = json_object(), *pTel = json_object();
    const parity_attr *aAttr = NULL;
    size_t nAttr = 0;
    char zErr[PARITY_ERR_LEN];
    const char *zSide = pSpec->zEager ? "eager" : "compiled";
    int rc = 0;

    if (parity_capture_open(zFile, &pCap, zErr, sizeof zErr) == 0)
        aAttr = parity_capture_root_attrs(pCap, &nAttr);
    rc |= record_head(pRec, pSpec, pSpec->zEager ? "missing_compiled" : "missing_eager",
                      pCap ? NULL : zErr);
    rc |= parity_report_set(pRec, "first_divergence", json_null());
    rc |= parity_report_set(pRec, "tensors", json_pack("{s:i,s:i}", "compared", 0, "fail", 0));
    rc |= parity_report_set(pRec, "local_causes", json_array());
    rc |= parity_report_set(pId, zSide, parity_report_attrs_json(aAttr, nAttr, 0));
    rc |= parity_report_set(pTel, zSide, parity_report_attrs_json(aAttr, nAttr, 1));
    rc |= parity_report_set(pRec, "identity", pId);
    rc |= parity_report_set(pRec, "telemetry", pTel);
    rc |= parity_report_set(pRec, "outcomes", json_array());
    rc |= parity_report_set(pRec, "warnings", json_array());
    if (pCap) parity_capture_close(pCap);
    return parity_report_finish(pRec, rc);
}

/* ---- the child --------------------------------------------------------------------- */

typedef struct {
    const parity_gate_judge_options *pOpt;
    const parity_gate_pair_spec *pSpec;
} child_arg;

static int child_beat(void *pCtx)
{
    (void)pCtx;
    parity_process_beat();
    return 0;   /* the parent's kill is the time limit */
}

static int send_record(const parity_process_child *pSelf, json_t *pRec)
{
    char *zText = pRec ? json_dumps(pRec, JSON_COMPACT) : NULL;
    char zLen[32];
    int rc;
    if (zText == NULL) return 3;
    snprintf(zLen, sizeof zLen, "%zu\n", strlen(zText));
    rc = parity_process_send(pSelf, zLen, strlen(zLen)) != 0 ||
         parity_process_send(pSelf, zText, strlen(zText)) != 0;
    free(zText);
    return rc ? 3 : 0;
}

static int pair_child(void *pArg, const parity_process_child *pSelf)
{
    const child_arg *pA = pArg;
    parity_diff_options opt = pA->pOpt->diff;
    parity_diff_result res;
    char zErr[PARITY_ERR_LEN];
    json_t *pRec, *pOutcomes;
    int rc;

    parity_capture_set_heartbeat(parity_process_beat);
    if (pA->pSpec->zEager == NULL || pA->pSpec->zCompiled == NULL) {
        pRec = one_sided_record(pA->pSpec);
    } else {
        opt.xBeat = child_beat;
        if (parity_diff_run(&opt, pA->pSpec->zEager, pA->pSpec->zCompiled, &res, zErr,
                            sizeof zErr) != 0) {
            pRec = json_object();
            if (pRec && (record_head(pRec, pA->pSpec, "error", zErr) != 0)) {
                json_decref(pRec);
                pRec = NULL;
            }
        } else {
            pOutcomes = parity_gate_outcomes(&opt, pA->pSpec->zEager, pA->pSpec->zCompiled, &res);
            pRec = pair_record(pA->pSpec, &res, pOutcomes);
            json_decref(pOutcomes);
            parity_diff_result_free(&res);
        }
    }
    rc = send_record(pSelf, pRec);
    json_decref(pRec);
    return rc;
}

/* ---- the parent -------------------------------------------------------------------- */

typedef struct {
    parity_process proc;
    child_arg arg;
    size_t iSpec;
    uint64_t lastBeats;
    double tLastBeat;
} running_pair;

/* An error record for a pair whose child failed; zWhy names what happened. */
static json_t *failed_record(const parity_gate_pair_spec *pSpec, const char *zWhy)
{
    json_t *pRec = json_object();
    int rc = record_head(pRec, pSpec, "error", zWhy);
    rc |= parity_report_set(pRec, "first_divergence", json_null());
    rc |= parity_report_set(pRec, "tensors", json_pack("{s:i,s:i}", "compared", 0, "fail", 0));
    rc |= parity_report_set(pRec, "local_causes", json_array());
    rc |= parity_report_set(pRec, "identity", json_object());
    rc |= parity_report_set(pRec, "telemetry", json_object());
    rc |= parity_report_set(pRec, "outcomes", json_array());
    rc |= parity_report_set(pRec, "warnings", json_array());
    return parity_report_finish(pRec, rc);
}

/* Reads the child's record, waits for it and returns the record (never NULL but on OOM). */
static json_t *collect(running_pair *pR, const parity_gate_pair_spec *pSpec, int killed,
                       const char *zKilled)
{
    char zLine[64], zWhy[PARITY_ERR_LEN];
    json_t *pRec = NULL;
    json_error_t jerr;

    if (!killed) {
        double deadline = parity_process_now() + 60.0;
        if (parity_process_read_line(&pR->proc, zLine, sizeof zLine, deadline) == PARITY_PROCESS_OK) {
            char *zEnd;
            unsigned long n = strtoul(zLine, &zEnd, 10);
            char *zBuf = (*zEnd == 0 && n > 0 && n < RECORD_MAX) ? malloc(n + 1) : NULL;
            if (zBuf && parity_process_read(&pR->proc, zBuf, n, deadline) == PARITY_PROCESS_OK) {
                zBuf[n] = 0;
                pRec = json_loads(zBuf, 0, &jerr);
            }
            free(zBuf);
        }
        parity_process_wait(&pR->proc, 60, 120);
    }
    if (pRec && json_is_object(pRec)) return pRec;
    json_decref(pRec);
    if (killed)
        snprintf(zWhy, sizeof zWhy, "%s", zKilled);
    else if (pR->proc.end == PARITY_PROCESS_SIGNALED)
        snprintf(zWhy, sizeof zWhy, "judging the pair crashed (%s); a capture may be corrupt "
                 "or hostile", pR->proc.sig == SIGKILL ? "killed, probably out of memory"
                                                      : strsignal(pR->proc.sig));
    else
        snprintf(zWhy, sizeof zWhy, "judging the pair failed (exit %d)", pR->proc.code);
    return failed_record(pSpec, zWhy);
}

/* What the child wrote on stderr is dropped (libhdf5 and glibc write there when a hostile
 * file breaks them, and the pair's record says what happened); PARITY_KEEP_CHILD_STDERR=1
 * passes it on, as paritydiff does, for debugging and sanitizer runs. */
static void pass_child_stderr(const parity_process *pProc)
{
    const char *zKeep = getenv("PARITY_KEEP_CHILD_STDERR");
    const parity_process_text *pText = &pProc->capture[2];
    if (pText->n > 0 && zKeep && strcmp(zKeep, "1") == 0) {
        fwrite(pText->z, 1, pText->n, stderr);
        fflush(stderr);
    }
}

static int start_pair(running_pair *pR, const parity_gate_judge_options *pOpt,
                      const parity_gate_pair_spec *pSpec, size_t iSpec, char *zErr, size_t nErr)
{
    parity_process_options po;
    memset(&po, 0, sizeof po);
    memset(pR, 0, sizeof *pR);
    pR->arg.pOpt = pOpt;
    pR->arg.pSpec = pSpec;
    pR->iSpec = iSpec;
    po.xMain = pair_child;
    po.pArg = &pR->arg;
    po.out = PARITY_PROCESS_PIPE;
    po.err = PARITY_PROCESS_CAPTURE;
    po.maxMemoryMiB = pOpt->maxMemoryMiB;
    if (parity_process_start(&pR->proc, &po, zErr, nErr) != 0) return -1;
    pR->tLastBeat = parity_process_now();
    return 0;
}

int parity_gate_judge(const parity_gate_judge_options *pOpt, const parity_gate_pair_spec *aSpec,
                      size_t nSpec, json_t *pPairs, char *zErr, size_t nErr)
{
    running_pair *aRun = calloc((size_t)pOpt->jobs, sizeof *aRun);
    parity_process **apProc = calloc((size_t)pOpt->jobs, sizeof *apProc);
    json_t **apRec = calloc(nSpec ? nSpec : 1, sizeof *apRec);
    size_t iNext = 0, nDone = 0, i, nRun = 0;
    int rc = 0;

    if (!aRun || !apProc || !apRec) {
        snprintf(zErr, nErr, "out of memory judging the suite");
        rc = -1;
        goto done;
    }
    while (nDone < nSpec && rc == 0) {
        /* Fill the free slots. */
        for (i = 0; i < (size_t)pOpt->jobs && iNext < nSpec; i++) {
            if (aRun[i].proc.pid != 0) continue;
            if (start_pair(&aRun[i], pOpt, &aSpec[iNext], iNext, zErr, nErr) != 0) {
                rc = -1;
                break;
            }
            iNext++;
        }
        if (rc) break;
        nRun = 0;
        for (i = 0; i < (size_t)pOpt->jobs; i++)
            if (aRun[i].proc.pid != 0) apProc[nRun++] = &aRun[i].proc;
        if (parity_process_poll(apProc, nRun, 500) < 0 && errno != EINTR) {
            snprintf(zErr, nErr, "cannot wait for the pairs: %s", strerror(errno));
            rc = -1;
            break;
        }
        for (i = 0; i < (size_t)pOpt->jobs; i++) {
            running_pair *pR = &aRun[i];
            const char *zKilled = NULL;
            double now = parity_process_now();
            uint64_t beats;
            if (pR->proc.pid == 0) continue;
            beats = parity_process_beats(&pR->proc);
            if (beats != pR->lastBeats) {
                pR->lastBeats = beats;
                pR->tLastBeat = now;
            }
            if (pOpt->timeoutSeconds && now - pR->proc.tStart > pOpt->timeoutSeconds)
                zKilled = "time limit reached while judging the pair (--timeout)";
            else if (pOpt->stallSeconds && now - pR->tLastBeat > pOpt->stallSeconds)
                zKilled = "no progress judging the pair (libhdf5 hangs on some corrupt files)";
            if (zKilled) parity_process_kill(&pR->proc);
            else if (!pR->proc.ready) continue;
            apRec[pR->iSpec] = collect(pR, &aSpec[pR->iSpec], zKilled != NULL, zKilled);
            pass_child_stderr(&pR->proc);
            parity_process_close(&pR->proc);
            nDone++;
            if (apRec[pR->iSpec] == NULL) {
                snprintf(zErr, nErr, "out of memory judging the suite");
                rc = -1;
            } else if (pOpt->progress) {
                fprintf(stderr, "paritydiff gate: %zu of %zu pairs judged\n", nDone, nSpec);
            }
        }
    }
    for (i = 0; rc == 0 && i < nSpec; i++) {
        int rcAppend = parity_report_append(pPairs, apRec[i]);   /* consumes the record */
        apRec[i] = NULL;
        if (rcAppend != 0) {
            snprintf(zErr, nErr, "out of memory judging the suite");
            rc = -1;
        }
    }
done:
    if (aRun)
        for (i = 0; i < (size_t)pOpt->jobs; i++)
            if (aRun[i].proc.pid != 0) parity_process_close(&aRun[i].proc);
    if (apRec)
        for (i = 0; i < nSpec; i++) json_decref(apRec[i]);
    free(aRun);
    free(apProc);
    free(apRec);
    return rc;
}
