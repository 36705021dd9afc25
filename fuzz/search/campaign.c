/*
 * campaign.c - the campaign loop and its spread over processes.
 *
 * The loop: a third of the cases continue the previous one by one mutation (a dim nudged
 * the way a dynamic-shape workload sends shapes, a recipe or dtype changed), the rest are
 * fresh draws for an op picked uniformly. A case that the oracle flags is deduplicated by
 * its raw signature, minimized, deduplicated again by the signature of the minimized case
 * (canonical dims), and stored.
 *
 * Jobs: with jobs > 1, or a target that runs foreign code in this process, the campaign
 * runs as child processes of the one supervisor (formats/process.h). A job sends its parent
 * fixed-size records (job_record: status, finding, op count, message, end, failure) through
 * the supervisor's channel; every string in them is a bounded array, so nothing is parsed.
 * The parent prints nothing either: messages and the status go to the caller's callbacks
 * (parity_campaign_options), from this process whatever the jobs.
 *
 * Supervision: a target that runs foreign code in this process (onednn's JIT) can fault
 * and take the campaign with it. Its campaigns always run as jobs (one or more child
 * processes), and each job mirrors into its shared state (job_slot) its counters and the
 * spec of the case in flight. When a job dies of a signal, the parent keeps its counts and
 * starts it again with a new seed and the time left; the new job first re-runs the fatal
 * case in a forked child (parity_target_isolate), minimizes it there and stores it as a
 * finding of class crash, then searches on. A fault that does not recur when its case runs
 * alone (it depends on what ran before) is said and not stored.
 *
 * Out of memory is an ordinary error: it makes the result's trouble ("out of memory"),
 * which is sticky (the first trouble is the one said) and ends the loop.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/alloc.h"
#include "formats/process.h"
#include "fuzz/search/search.h"
/* The one arrow back up from the search room (search.h): dedup by signature, repro writing. */
#include "fuzz/findings/findings.h"

#define SIG_LEN 512
#define SLOT_MAX_OPS 64
#define MAX_RESTARTS 256
#define REPRO_PATH_LEN 4400
#define MESSAGE_LEN 8192            /* a worker's skip list is one line */

/* What a supervised job shows its parent in shared memory; the job writes, the parent
 * reads after the job has died. */
enum { SLOT_IDLE, SLOT_RUNNING, SLOT_MINIMIZING };
typedef struct {
    volatile int state;
    parity_case_spec spec;            /* the case in flight while SLOT_RUNNING */
    uint64_t nExecs, nMinimizeExecs, nSkipped, nBitIdentical, nRawFindings, nJudged, nEagerWrong;
    char zEagerWrong[PARITY_EAGER_WRONG_LEN];
    parity_target_times times;
    size_t nOp;
    char azOp[SLOT_MAX_OPS][PARITY_CASE_OP_LEN];
    uint64_t anOpExecs[SLOT_MAX_OPS];
} job_slot;

/* What a job sends its parent: one fixed-size record per event. */
typedef enum {
    REC_STATUS = 1,    /* counts so far (nExecs, nRawFindings, nSkipped), about every second */
    REC_FINDING,       /* a stored finding */
    REC_OP,            /* at the end, per op: zOp and the cases it ran (nExecs) */
    REC_MESSAGE,       /* a line for the caller's xMessage (zText) */
    REC_END,           /* the job's summary: every count, and its trouble (zText) */
    REC_FAILED         /* the job could not start (zText: why) */
} job_record_kind;

typedef struct {
    int32_t kind;                     /* job_record_kind */
    int32_t cls;                      /* FINDING: parity_finding_class */
    int32_t minimal;                  /* FINDING */
    int32_t trouble;                  /* END */
    double tFound;                    /* FINDING: seconds since the job's own start */
    uint64_t nExecs, nMinimizeExecs, nSkipped, nBitIdentical, nRawFindings, nJudged, nEagerWrong;
    parity_target_times times;        /* END */
    char zEagerWrong[PARITY_EAGER_WRONG_LEN];   /* END */
    char zOp[PARITY_CASE_OP_LEN];     /* FINDING, OP */
    char zSignature[SIG_LEN];         /* FINDING */
    char zRepro[REPRO_PATH_LEN];      /* FINDING ("" when not stored) */
    parity_root_key cause;               /* FINDING */
    uint64_t nElems;                  /* FINDING: the stored case's input elements */
    char zText[MESSAGE_LEN];          /* FINDING: detail; MESSAGE; END: trouble; FAILED */
} job_record;

volatile sig_atomic_t parity_campaign_interrupted = 0;

void parity_campaign_options_init(parity_campaign_options *pOpt)
{
    memset(pOpt, 0, sizeof *pOpt);
    pOpt->zTarget = "builtin";
    pOpt->caseTimeout = 30.0;
    pOpt->jobs = 1;
    pOpt->minimize = 1;
    pOpt->strategy = PARITY_STRATEGY_GUIDED;
}

/* ---- trouble, sets and the result ------------------------------------------------------ */

/* The campaign's trouble; the first one stays (sticky, SQLite style). */
static void set_trouble(parity_campaign_result *pRes, const char *zFmt, ...)
{
    va_list ap;
    if (pRes->trouble) return;
    pRes->trouble = 1;
    va_start(ap, zFmt);
    vsnprintf(pRes->zTrouble, sizeof pRes->zTrouble, zFmt, ap);
    va_end(ap);
}

static void set_nomem(parity_campaign_result *pRes)
{
    set_trouble(pRes, "out of memory");
}

typedef struct {
    char **az;
    size_t n, nAlloc;
} str_set;

static int set_has(const str_set *p, const char *z)
{
    size_t i;
    for (i = 0; i < p->n; i++)
        if (strcmp(p->az[i], z) == 0) return 1;
    return 0;
}

/* Adds z; 0, or -1 when out of memory (the set is unchanged). */
static int set_add(str_set *p, const char *z)
{
    if (p->n == p->nAlloc) {
        size_t nNew = p->nAlloc ? 2 * p->nAlloc : 16;
        char **azNew = parity_realloc(p->az, nNew * sizeof *azNew);
        if (!azNew) return -1;
        p->az = azNew;
        p->nAlloc = nNew;
    }
    if ((p->az[p->n] = parity_strdup(z)) == NULL) return -1;
    p->n++;
    return 0;
}

static void set_free(str_set *p)
{
    size_t i;
    for (i = 0; i < p->n; i++) free(p->az[i]);
    free(p->az);
    memset(p, 0, sizeof *p);
}

/* Appends a finding; 0, or -1 when out of memory (then the result's trouble says so). */
static int add_finding(parity_campaign_result *pRes, const char *zSig, const char *zOp,
                       parity_finding_class cls, const char *zRepro, const char *zDetail,
                       double tFound, int minimal, const parity_root_key *pCause, uint64_t nElems)
{
    parity_finding *aNew = parity_realloc(pRes->aFinding, (pRes->nFinding + 1) * sizeof *aNew);
    parity_finding f;
    if (!aNew) goto nomem;
    pRes->aFinding = aNew;
    memset(&f, 0, sizeof f);
    f.zSignature = parity_strdup(zSig);
    f.zOp = parity_strdup(zOp);
    f.cls = cls;
    f.zRepro = zRepro && zRepro[0] ? parity_strdup(zRepro) : NULL;
    f.zDetail = parity_strdup(zDetail ? zDetail : "");
    f.tFound = tFound;
    f.minimal = minimal;
    if (pCause) {
        f.hasCause = 1;
        f.cause = *pCause;
    }
    f.nElems = nElems;
    if (!f.zSignature || !f.zOp || !f.zDetail || (zRepro && zRepro[0] && !f.zRepro)) {
        parity_finding_free(&f);
        goto nomem;
    }
    aNew[pRes->nFinding++] = f;
    if (pRes->firstFinding < 0 || tFound < pRes->firstFinding) pRes->firstFinding = tFound;
    return 0;
nomem:
    set_nomem(pRes);
    return -1;
}

/* Adds n cases to zOp's count (a new op gets a slot). 0, or -1 when out of memory. */
static int count_op(parity_campaign_result *pRes, const char *zOp, uint64_t n)
{
    char **azOp;
    uint64_t *anExecs;
    size_t i;
    for (i = 0; i < pRes->nOp; i++) {
        if (strcmp(pRes->azOp[i], zOp) == 0) {
            pRes->anOpExecs[i] += n;
            return 0;
        }
    }
    azOp = parity_realloc(pRes->azOp, (pRes->nOp + 1) * sizeof *azOp);
    if (azOp) pRes->azOp = azOp;
    anExecs = parity_realloc(pRes->anOpExecs, (pRes->nOp + 1) * sizeof *anExecs);
    if (anExecs) pRes->anOpExecs = anExecs;
    if (!azOp || !anExecs || !(pRes->azOp[pRes->nOp] = parity_strdup(zOp))) {
        set_nomem(pRes);
        return -1;
    }
    pRes->anOpExecs[pRes->nOp++] = n;
    return 0;
}

void parity_campaign_result_free(parity_campaign_result *pRes)
{
    size_t i;
    for (i = 0; i < pRes->nFinding; i++) parity_finding_free(&pRes->aFinding[i]);
    free(pRes->aFinding);
    parity_triage_free(pRes->aCause, pRes->nCause);
    for (i = 0; i < pRes->nOp; i++) free(pRes->azOp[i]);
    free(pRes->azOp);
    free(pRes->anOpExecs);
    memset(pRes, 0, sizeof *pRes);
}

/* ---- one process's search ------------------------------------------------------------- */

typedef struct {
    const parity_campaign_options *pOpt;
    parity_campaign_result *pRes;
    parity_target *pT;
    str_set ops, rawSeen, finalSeen;
    uint32_t dtypes;                  /* the case dtypes it draws */
    double t0;
    const parity_process_child *pJob; /* in a job: the channel to the parent; else NULL */
    job_slot *pSlot;                  /* in a job on an in-process target; else NULL */
    int lostParent;                   /* a record could not be sent: the job ends */
    double *aEager, *aCompiled;       /* output buffers, nAlloc each */
    size_t nAlloc;
    unsigned sameShapeLeft;           /* cases still to draw on the last shape (--values-per-shape) */
} search_state;

/* Sends a record to the parent; losing it ends the job. */
static void send_record(search_state *pS, const job_record *pRec)
{
    if (!pS->lostParent && parity_process_send(pS->pJob, pRec, sizeof *pRec) != 0)
        pS->lostParent = 1;
}

/* A message for the caller: to the parent in a job, else to xMessage. */
static void say(search_state *pS, const char *zFmt, ...)
{
    job_record rec;
    va_list ap;
    memset(&rec, 0, sizeof rec);
    va_start(ap, zFmt);
    vsnprintf(rec.zText, sizeof rec.zText, zFmt, ap);
    va_end(ap);
    if (pS->pJob) {
        rec.kind = REC_MESSAGE;
        send_record(pS, &rec);
    } else if (pS->pOpt->xMessage) {
        pS->pOpt->xMessage(pS->pOpt->pCtx, rec.zText);
    }
}

/* Ops to fuzz: the options' list (each checked), or every op with a layout the target
 * runs. */
static int pick_ops(search_state *pS, char *zErr, size_t nErr)
{
    const parity_campaign_options *pOpt = pS->pOpt;
    size_t i, n;
    if (pOpt->azOps) {
        for (i = 0; i < pOpt->nOps; i++) {
            const char *zOp = pOpt->azOps[i];
            if (!parity_op_find(zOp)) {
                snprintf(zErr, nErr, "--ops: '%s' is not a registry op", zOp);
                return -1;
            }
            if (!parity_layout_find(zOp)) {
                snprintf(zErr, nErr, "--ops: parityfuzz has no layout for '%s'", zOp);
                return -1;
            }
            if (!pS->pT->xSupports(pS->pT, zOp)) {
                snprintf(zErr, nErr, "--ops: target %s does not run '%s'", pOpt->zTarget, zOp);
                return -1;
            }
            if (!set_has(&pS->ops, zOp) && set_add(&pS->ops, zOp) != 0) goto nomem;
        }
    } else {
        const parity_layout_info *aInfo = parity_layout_all(&n);
        for (i = 0; i < n; i++)
            if (pS->pT->xSupports(pS->pT, aInfo[i].zOp) && set_add(&pS->ops, aInfo[i].zOp) != 0)
                goto nomem;
    }
    if (pS->ops.n == 0) {
        snprintf(zErr, nErr, "no op to fuzz on target %s", pOpt->zTarget);
        return -1;
    }
    return 0;
nomem:
    snprintf(zErr, nErr, "out of memory");
    return -1;
}

/* The dtypes to draw: the options' and the target's. -1 with zErr when none is left. */
static int pick_dtypes(search_state *pS, char *zErr, size_t nErr)
{
    const parity_campaign_options *pOpt = pS->pOpt;
    char zRuns[128] = "";
    size_t len = 0, i;
    pS->dtypes = (pOpt->dtypes ? pOpt->dtypes : ~0u) & (pS->pT->dtypes ? pS->pT->dtypes : ~0u);
    for (i = 0; i < PARITY_DT_COUNT; i++)
        if ((pS->dtypes & (1u << i)) && parity_spec_dtype_drawable((parity_dtype)i)) return 0;
    for (i = 0; i < PARITY_DT_COUNT; i++)
        if (parity_target_runs_dtype(pS->pT, (parity_dtype)i) &&
            parity_spec_dtype_drawable((parity_dtype)i) && len < sizeof zRuns)
            len += (size_t)snprintf(zRuns + len, sizeof zRuns - len, "%s%s", len ? ", " : "",
                                    parity_dtype_name((parity_dtype)i));
    snprintf(zErr, nErr, "--dtypes: target %s runs none of them (it runs %s)", pOpt->zTarget,
             zRuns);
    return -1;
}

/* Minimizes a finding into *pMin: 1 when it did, 0 when it did not (said). */
static int minimize_finding(search_state *pS, parity_target *pT, const parity_case *pCase,
                            const parity_oracle_result *pR, parity_minimized *pMin)
{
    const parity_campaign_options *pOpt = pS->pOpt;
    char zErr[PARITY_ERR_LEN];
    /* A crash costs a worker restart and a hang a whole --case-timeout: those classes get
     * a small budget (their dims shrink less far; "minimal" says so). */
    uint64_t budget = pR->cls == PARITY_FINDING_DIVERGES ? PARITY_MINIMIZE_BUDGET
                    : pR->cls == PARITY_FINDING_HANG ? 6 : 16;
    /* --time bounds the campaign: a minimization still running at its end gets a grace of
     * a tenth of it (at most 30 s), then stores what it has (not minimal) */
    double deadline = 0;
    if (pOpt->timeLimit > 0) {
        double grace = pOpt->timeLimit / 10 < 30 ? pOpt->timeLimit / 10 : 30;
        deadline = pS->t0 + pOpt->timeLimit + grace;
    }
    if (parity_minimize(pT, &pCase->spec, pR, budget, deadline, pMin, zErr, sizeof zErr) == 0)
        return 1;
    say(pS, "minimizing a %s finding failed: %s", pCase->spec.zOp, zErr);
    return 0;
}

/* Stores a finding in the result (and sends it to the parent in a job). */
static void keep_finding(search_state *pS, const char *zSig, const parity_case *pCase,
                         const parity_oracle_result *pR, const double *aCompiled,
                         const char *zRepro, double tFound, int minimal)
{
    job_record rec;
    parity_root_key cause;
    uint64_t nElems = 0;
    size_t i;
    for (i = 0; i < pCase->nIn; i++) nElems += pCase->aIn[i].nElem;
    parity_triage_cause(pCase, pR, pR->compiledStatus == PARITY_RUN_OK ? aCompiled : NULL, &cause);
    if (add_finding(pS->pRes, zSig, pCase->spec.zOp, pR->cls, zRepro, pR->zDetail, tFound,
                    minimal, &cause, nElems) != 0 || !pS->pJob)
        return;
    memset(&rec, 0, sizeof rec);
    rec.kind = REC_FINDING;
    rec.cls = pR->cls;
    rec.minimal = minimal;
    rec.tFound = tFound;
    snprintf(rec.zOp, sizeof rec.zOp, "%s", pCase->spec.zOp);
    snprintf(rec.zSignature, sizeof rec.zSignature, "%s", zSig);
    snprintf(rec.zRepro, sizeof rec.zRepro, "%s", zRepro);
    snprintf(rec.zText, sizeof rec.zText, "%s", pR->zDetail);
    rec.cause = cause;
    rec.nElems = nElems;
    send_record(pS, &rec);
}

/* Handles a flagged case: dedup, minimize, dedup again, store. */
static void handle_finding(search_state *pS, parity_target *pT, const parity_case *pCase,
                           const double *aEager, const double *aCompiled,
                           const parity_oracle_result *pR)
{
    const parity_campaign_options *pOpt = pS->pOpt;
    parity_campaign_result *pRes = pS->pRes;
    char zSig[SIG_LEN], zRepro[REPRO_PATH_LEN] = "", zErr[PARITY_ERR_LEN];
    const parity_case *pStore = pCase;
    const double *aE = aEager, *aC = aCompiled;
    const parity_oracle_result *pStoreR = pR;
    parity_minimized min;
    int haveMin = 0, minimal = 0, rc;
    double tFound = parity_process_now() - pS->t0;

    pRes->nRawFindings++;
    parity_signature(pCase, pR, zSig, sizeof zSig);
    if (set_has(&pS->rawSeen, zSig)) return;
    if (set_add(&pS->rawSeen, zSig) != 0) { set_nomem(pRes); return; }
    if (pOpt->minimize && (haveMin = minimize_finding(pS, pT, pCase, pR, &min)) != 0) {
        pRes->nMinimizeExecs += min.nExecs;
        pStore = &min.minimized;
        aE = min.aEager;
        aC = min.aCompiled;
        pStoreR = &min.result;
        minimal = min.minimal;
        parity_signature(pStore, pStoreR, zSig, sizeof zSig);
    }
    /* a minimization that ran out of memory may have given up early: store nothing */
    if (parity_alloc_failed()) { set_nomem(pRes); goto done; }
    if (set_has(&pS->finalSeen, zSig)) goto done;
    if (set_add(&pS->finalSeen, zSig) != 0) { set_nomem(pRes); goto done; }
    if (pOpt->zOutDir) {
        parity_case_identity id;
        int haveId = pT->xIdentity && pT->xIdentity(pT, pStore, &id) == 0;
        rc = parity_repro_write(pOpt->zOutDir, pStore, aE, aC, pStoreR, zSig, pOpt->zTarget,
                                pOpt->defects, haveId ? &id : NULL, zRepro, sizeof zRepro, zErr,
                                sizeof zErr);
        if (rc < 0) {
            set_trouble(pRes, "storing a repro: %s", zErr);
            goto done;
        }
        if (rc == 1) goto done;     /* another job stored this signature first */
    }
    keep_finding(pS, zSig, pStore, pStoreR, aC, zRepro, tFound, minimal);
done:
    if (haveMin) parity_minimized_free(&min);
}

/* Keeps the first eager-wrong case described (zDst, PARITY_EAGER_WRONG_LEN bytes). With
 * jobs, "the first" is the first a job reports, not the earliest. */
static void keep_first_eager_wrong(char *zDst, const char *zCase)
{
    if (!zDst[0] && zCase[0]) snprintf(zDst, PARITY_EAGER_WRONG_LEN, "%s", zCase);
}

/* Mirrors the job's counters into its slot, so that they outlive a fault. */
static void slot_mirror(job_slot *pSlot, const parity_campaign_result *pRes)
{
    size_t i;
    if (!pSlot) return;
    pSlot->nExecs = pRes->nExecs;
    pSlot->nMinimizeExecs = pRes->nMinimizeExecs;
    pSlot->nSkipped = pRes->nSkipped;
    pSlot->nBitIdentical = pRes->nBitIdentical;
    pSlot->nRawFindings = pRes->nRawFindings;
    pSlot->nJudged = pRes->nJudged;
    pSlot->nEagerWrong = pRes->nEagerWrong;
    keep_first_eager_wrong(pSlot->zEagerWrong, pRes->zEagerWrong);
    pSlot->times = pRes->times;
    for (i = 0; i < pRes->nOp && i < SLOT_MAX_OPS; i++) {
        if (i >= pSlot->nOp) snprintf(pSlot->azOp[i], sizeof pSlot->azOp[i], "%s", pRes->azOp[i]);
        pSlot->anOpExecs[i] = pRes->anOpExecs[i];
    }
    pSlot->nOp = i;
}

/* Output buffers for nOut values each; 0, or -1 when out of memory (trouble). */
static int ensure_buffers(search_state *pS, size_t nOut)
{
    if (nOut <= pS->nAlloc && pS->aEager) return 0;
    pS->nAlloc = nOut > 1024 ? nOut : 1024;
    free(pS->aEager);
    free(pS->aCompiled);
    pS->aEager = parity_malloc(pS->nAlloc * sizeof *pS->aEager);
    pS->aCompiled = parity_malloc(pS->nAlloc * sizeof *pS->aCompiled);
    if (pS->aEager && pS->aCompiled) return 0;
    pS->nAlloc = 0;
    set_nomem(pS->pRes);
    return -1;
}

/* The case the previous job died on, run again with its compiled side in a forked child:
 * a crash there is stored (minimized in forked children too) like any finding. */
static void rerun_fatal_case(search_state *pS, const parity_case_spec *pSpec)
{
    char zErr[PARITY_ERR_LEN], zDesc[1024];
    parity_target *pIso = parity_target_isolate(pS->pT, 0, pS->pOpt->caseTimeout, zErr,
                                                sizeof zErr);
    parity_case c;
    parity_oracle_result r;

    if (!pIso) {
        say(pS, "re-running the fatal case: %s", zErr);
        return;
    }
    if (parity_case_expand(pSpec, &c, zErr, sizeof zErr) != 0) {
        say(pS, "re-running the fatal case: %s", zErr);
        parity_target_close(pIso);
        return;
    }
    if (ensure_buffers(pS, c.nOut) == 0 &&
        parity_oracle_run(pIso, &c, pS->aEager, pS->aCompiled, &r) == 0) {
        pS->pRes->nExecs++;
        count_op(pS->pRes, c.spec.zOp, 1);
        if (r.cls == PARITY_FINDING_CRASH)
            handle_finding(pS, pIso, &c, pS->aEager, pS->aCompiled, &r);
        else
            say(pS, "the target's process died during %s, but that case alone does not crash "
                "(%s): the fault depends on what ran before it",
                parity_case_describe(&c, zDesc, sizeof zDesc), parity_finding_class_name(r.cls));
    }
    parity_case_free(&c);
    parity_target_close(pIso);
}

/* Opens the target and picks ops and dtypes. 0, or -1 with zErr (nothing left open). */
static int search_open(search_state *pS, char *zErr, size_t nErr)
{
    const parity_campaign_options *pOpt = pS->pOpt;
    size_t i;
    pS->pT = parity_target_open(pOpt->zTarget, pOpt->defects, pOpt->caseTimeout, zErr, nErr);
    if (!pS->pT) return -1;
    if (pS->pT->zNotice) say(pS, "%s", pS->pT->zNotice);
    if (pick_ops(pS, zErr, nErr) != 0 || pick_dtypes(pS, zErr, nErr) != 0) goto fail;
    for (i = 0; i < pS->ops.n; i++) {
        if (count_op(pS->pRes, pS->ops.az[i], 0) != 0) {
            snprintf(zErr, nErr, "out of memory");
            goto fail;
        }
    }
    return 0;
fail:
    set_free(&pS->ops);
    parity_target_close(pS->pT);
    pS->pT = NULL;
    return -1;
}

static void search_close(search_state *pS)
{
    free(pS->aEager);
    free(pS->aCompiled);
    set_free(&pS->ops);
    set_free(&pS->rawSeen);
    set_free(&pS->finalSeen);
    pS->pRes->times = pS->pT->times;
    parity_target_close(pS->pT);
}

/* The counts so far: to the parent in a job, else to xStatus. */
static void search_status(search_state *pS, double t, int final)
{
    const parity_campaign_result *pRes = pS->pRes;
    if (pS->pJob && !final) {
        job_record rec;
        memset(&rec, 0, sizeof rec);
        rec.kind = REC_STATUS;
        rec.nExecs = pRes->nExecs;
        rec.nRawFindings = pRes->nRawFindings;
        rec.nSkipped = pRes->nSkipped;
        send_record(pS, &rec);
    } else if (!pS->pJob && pS->pOpt->xStatus) {
        pS->pOpt->xStatus(pS->pOpt->pCtx, pRes, t - pS->t0, final);
    }
}

/* 1 when the loop should end before the next case. */
static int search_done(const search_state *pS, uint64_t maxExecs, double t)
{
    const parity_campaign_options *pOpt = pS->pOpt;
    const parity_campaign_result *pRes = pS->pRes;
    return (maxExecs && pRes->nExecs >= maxExecs) ||
           (pOpt->timeLimit > 0 && t - pS->t0 >= pOpt->timeLimit) ||
           (pOpt->stopAfterFirst && pRes->nFinding > 0) || pRes->trouble ||
           parity_campaign_interrupted || pS->lostParent;
}

/* Draws the next case: a mutation of the previous spec or a fresh one, expanded into *pC.
 * 0, or -1 when this draw gives no legal case (the loop draws again). */
static int draw_case(search_state *pS, parity_rng *pRng, const parity_case_spec *pPrev,
                     parity_case_spec *pSpec, parity_case *pC)
{
    char zCaseErr[PARITY_ERR_LEN];
    if (pPrev && pS->sameShapeLeft > 0) {
        /* new values on the last shape, op, variant and dtype: a compiling target reuses
         * the program it built (the compiled side's cache hit, not a new compilation) */
        size_t i = (size_t)parity_rng_below(pRng, PARITY_CASE_MAX_IN);
        pS->sameShapeLeft--;
        *pSpec = *pPrev;
        pSpec->seed = parity_rng_next(pRng);
        if (parity_rng_one_in(pRng, 2))
            pSpec->aRecipe[i].kind = (uint8_t)parity_rng_below(pRng, PARITY_VAL_COUNT);
        return parity_case_expand(pSpec, pC, zCaseErr, sizeof zCaseErr) == 0 ? 0 : -1;
    }
    if (pS->pOpt->valuesPerShape > 1) pS->sameShapeLeft = pS->pOpt->valuesPerShape - 1;
    if (pPrev && pS->pOpt->strategy == PARITY_STRATEGY_GUIDED && parity_rng_one_in(pRng, 3)) {
        *pSpec = *pPrev;
        if (parity_spec_mutate(pRng, pSpec) != 0) return -1;
    } else {
        const char *zOp = pS->ops.az[parity_rng_below(pRng, pS->ops.n)];
        if (parity_spec_generate(pRng, zOp, pS->pOpt->strategy, pSpec) != 0) return -1;
    }
    parity_spec_restrict_dtypes(pRng, pSpec, pS->dtypes);
    return parity_case_expand(pSpec, pC, zCaseErr, sizeof zCaseErr) == 0 ? 0 : -1;
}

/* Runs one case through the oracle and handles what it finds. */
static void run_case(search_state *pS, parity_case *pC)
{
    parity_campaign_result *pRes = pS->pRes;
    parity_oracle_result r;
    if (ensure_buffers(pS, pC->nOut) != 0) return;
    if (pS->pSlot) {
        pS->pSlot->spec = pC->spec;
        pS->pSlot->state = SLOT_RUNNING;
    }
    if (parity_oracle_run(pS->pT, pC, pS->aEager, pS->aCompiled, &r) != 0 ||
        parity_alloc_failed()) {
        if (pS->pSlot) pS->pSlot->state = SLOT_IDLE;
        /* our own out of memory (in a kernel, the judge) is no finding of the target's */
        if (parity_alloc_failed()) {
            set_nomem(pRes);
            return;
        }
        /* the judge refused a case the layout made: our bug, say it and go on */
        say(pS, "internal: %s", r.zDetail);
        return;
    }
    pRes->nExecs++;
    count_op(pRes, pC->spec.zOp, 1);
    if (r.cls == PARITY_FINDING_SKIPPED) pRes->nSkipped++;
    else if (r.bitIdentical) pRes->nBitIdentical++;
    if (r.judged) pRes->nJudged++;
    if (r.judged && parity_judgement_eager_wrong(&r.judgement) && pRes->nEagerWrong++ == 0)
        parity_case_describe(pC, pRes->zEagerWrong, sizeof pRes->zEagerWrong);
    if (pS->pSlot) pS->pSlot->state = SLOT_MINIMIZING;
    if (r.cls != PARITY_FINDING_NONE && r.cls != PARITY_FINDING_SKIPPED)
        handle_finding(pS, pS->pT, pC, pS->aEager, pS->aCompiled, &r);
    pRes->times = pS->pT->times;
    if (pS->pSlot) pS->pSlot->state = SLOT_IDLE;
    slot_mirror(pS->pSlot, pRes);
}

/* One process's campaign: in this process (pJob NULL) or as a job. Returns 0 (see pRes),
 * or -1 with zErr when it could not start. */
static int run_loop(const parity_campaign_options *pOpt, uint64_t seed, uint64_t maxExecs,
                    const parity_process_child *pJob, job_slot *pSlot,
                    const parity_case_spec *pFatal, parity_campaign_result *pRes, char *zErr,
                    size_t nErr)
{
    search_state s;
    parity_rng rng;
    parity_case_spec prev;
    int havePrev = 0;
    double tStatus;

    memset(&s, 0, sizeof s);
    s.pOpt = pOpt;
    s.pRes = pRes;
    s.pJob = pJob;
    s.pSlot = pSlot;
    s.t0 = tStatus = parity_process_now();
    parity_alloc_reset_failed();
    if (search_open(&s, zErr, nErr) != 0) return -1;
    parity_rng_seed(&rng, seed);
    pRes->firstFinding = -1;
    if (pFatal) {
        rerun_fatal_case(&s, pFatal);
        slot_mirror(pSlot, pRes);
    }
    for (;;) {
        parity_case_spec spec;
        parity_case c;
        double t = parity_process_now();
        if (search_done(&s, maxExecs, t)) break;
        if (t - tStatus >= 1.0) {
            tStatus = t;
            search_status(&s, t, 0);
        }
        if (draw_case(&s, &rng, havePrev ? &prev : NULL, &spec, &c) != 0) {
            /* a draw that is no legal case is drawn again; one that ran out of memory
             * ends the campaign */
            if (parity_alloc_failed()) set_nomem(pRes);
            continue;
        }
        run_case(&s, &c);
        parity_case_free(&c);
        if (parity_alloc_failed()) set_nomem(pRes);   /* absorbed somewhere: still trouble */
        prev = spec;
        havePrev = 1;
    }
    pRes->elapsed = parity_process_now() - s.t0;
    search_status(&s, s.t0 + pRes->elapsed, 1);
    search_close(&s);
    return 0;
}

/* ---- jobs: the child's side ------------------------------------------------------------ */

typedef struct {
    const parity_campaign_options *pOpt;  /* with the time left to this job */
    int job, restart;
    uint64_t maxExecs;
    int useSlot;                          /* an in-process target: mirror into the slot */
    const parity_case_spec *pFatal;       /* the case the previous process died on, or NULL */
} job_args;

/* The job's process: runs its share and reports. A restarted job (restart > 0) draws from
 * another seed, and re-runs pFatal first. */
static int job_main(void *pArg, const parity_process_child *pSelf)
{
    const job_args *pA = pArg;
    parity_campaign_result res;
    job_record rec;
    char zErr[PARITY_ERR_LEN];
    uint64_t seed = pA->pOpt->seed + (uint64_t)pA->job * 0x9E3779B97F4A7C15ull
                  + (uint64_t)pA->restart * 0xD1B54A32D192ED03ull;
    size_t i;
    int lost = 0;

    memset(&res, 0, sizeof res);
    memset(&rec, 0, sizeof rec);
    if (run_loop(pA->pOpt, seed, pA->maxExecs, pSelf, pA->useSlot ? pSelf->pState : NULL,
                 pA->pFatal, &res, zErr, sizeof zErr) != 0) {
        rec.kind = REC_FAILED;
        snprintf(rec.zText, sizeof rec.zText, "%s", zErr);
        parity_process_send(pSelf, &rec, sizeof rec);
        parity_campaign_result_free(&res);
        return 2;
    }
    rec.kind = REC_OP;
    for (i = 0; i < res.nOp && !lost; i++) {
        snprintf(rec.zOp, sizeof rec.zOp, "%s", res.azOp[i]);
        rec.nExecs = res.anOpExecs[i];
        lost = parity_process_send(pSelf, &rec, sizeof rec) != 0;
    }
    memset(&rec, 0, sizeof rec);
    rec.kind = REC_END;
    rec.nExecs = res.nExecs;
    rec.nMinimizeExecs = res.nMinimizeExecs;
    rec.nSkipped = res.nSkipped;
    rec.nBitIdentical = res.nBitIdentical;
    rec.nRawFindings = res.nRawFindings;
    rec.nJudged = res.nJudged;
    rec.nEagerWrong = res.nEagerWrong;
    snprintf(rec.zEagerWrong, sizeof rec.zEagerWrong, "%s", res.zEagerWrong);
    rec.times = res.times;
    rec.trouble = res.trouble;
    snprintf(rec.zText, sizeof rec.zText, "%s", res.zTrouble);
    if (!lost) lost = parity_process_send(pSelf, &rec, sizeof rec) != 0;
    parity_campaign_result_free(&res);
    return lost ? 2 : 0;
}

/* ---- jobs: the parent's side ----------------------------------------------------------- */

typedef struct {
    parity_process proc;                 /* its current process (pid 0: none) */
    uint64_t nExecs, nRaw, nSkipped;     /* from its latest status */
    int done;                            /* its summary came, or it is over */
    uint64_t share;                      /* max-execs of its current process (0: none) */
    int restarts;                        /* times it died and was started again */
    int found;                           /* it sent a finding */
    double tOffset;                      /* when its current process started (campaign s) */
} job_state;

typedef struct {
    const parity_campaign_options *pOpt;
    parity_campaign_result *pRes;
    job_state *aJob;
    int nJob;
    int inProcess;                       /* jobs have slots and are restarted when they die */
    str_set seen;                        /* signatures of the findings kept */
    double t0;
    char *zErr;                          /* a job's failure to start */
    size_t nErr;
} job_pool;

static void pool_say(const job_pool *pP, const char *zFmt, ...)
{
    char zLine[MESSAGE_LEN];
    va_list ap;
    if (!pP->pOpt->xMessage) return;
    va_start(ap, zFmt);
    vsnprintf(zLine, sizeof zLine, zFmt, ap);
    va_end(ap);
    pP->pOpt->xMessage(pP->pOpt->pCtx, zLine);
}

/* Starts (or restarts) job j: its share of execs and time, counted from the campaign's
 * start. Returns -1 with zErr when no process could be made. */
static int start_job(job_pool *pP, int j, uint64_t maxExecs, const parity_case_spec *pFatal,
                     char *zErr, size_t nErr)
{
    job_state *pJob = &pP->aJob[j];
    parity_campaign_options opt = *pP->pOpt;
    parity_process_options popt;
    job_args args;

    pJob->tOffset = parity_process_now() - pP->t0;
    if (opt.timeLimit > 0) opt.timeLimit -= pJob->tOffset;
    if (pP->pOpt->maxExecs && maxExecs == 0) {
        pJob->done = 1;            /* no share of the cases: nothing to run */
        return 0;
    }
    args.pOpt = &opt;
    args.job = j;
    args.restart = pJob->restarts;
    args.maxExecs = maxExecs;
    args.useSlot = pP->inProcess;
    args.pFatal = pFatal;
    memset(&popt, 0, sizeof popt);
    popt.xMain = job_main;
    popt.pArg = &args;            /* the child has its copy of this stack frame */
    popt.out = PARITY_PROCESS_PIPE;
    popt.nState = pP->inProcess ? sizeof(job_slot) : 0;
    if (parity_process_start(&pJob->proc, &popt, zErr, nErr) != 0) {
        pJob->done = 1;
        return -1;
    }
    return 0;
}

/* Takes one record from job j into the aggregate. */
static void take_record(job_pool *pP, job_state *pJob, const job_record *pRec)
{
    parity_campaign_result *pRes = pP->pRes;
    switch ((job_record_kind)pRec->kind) {
    case REC_STATUS:
        pJob->nExecs = pRec->nExecs;
        pJob->nRaw = pRec->nRawFindings;
        pJob->nSkipped = pRec->nSkipped;
        break;
    case REC_FINDING:
        pJob->found = 1;
        if (set_has(&pP->seen, pRec->zSignature)) break;
        if (set_add(&pP->seen, pRec->zSignature) != 0) { set_nomem(pRes); break; }
        /* the job's times count from its own (re)start */
        add_finding(pRes, pRec->zSignature, pRec->zOp, (parity_finding_class)pRec->cls,
                    pRec->zRepro, pRec->zText, pRec->tFound + pJob->tOffset, pRec->minimal,
                    &pRec->cause, pRec->nElems);
        break;
    case REC_OP:
        count_op(pRes, pRec->zOp, pRec->nExecs);
        break;
    case REC_MESSAGE:
        pool_say(pP, "%s", pRec->zText);
        break;
    case REC_END:
        pJob->nExecs = pJob->nRaw = pJob->nSkipped = 0;
        pRes->nExecs += pRec->nExecs;
        pRes->nMinimizeExecs += pRec->nMinimizeExecs;
        pRes->nSkipped += pRec->nSkipped;
        pRes->nBitIdentical += pRec->nBitIdentical;
        pRes->nRawFindings += pRec->nRawFindings;
        pRes->nJudged += pRec->nJudged;
        pRes->nEagerWrong += pRec->nEagerWrong;
        keep_first_eager_wrong(pRes->zEagerWrong, pRec->zEagerWrong);
        parity_target_times_add(&pRes->times, &pRec->times);
        if (pRec->trouble) set_trouble(pRes, "%s", pRec->zText[0] ? pRec->zText : "a job failed");
        pJob->done = 1;
        break;
    case REC_FAILED:
        snprintf(pP->zErr, pP->nErr, "%s", pRec->zText);
        set_trouble(pRes, "%s", pRec->zText);
        pJob->done = 1;
        break;
    }
}

/* How job j's process died, into zHow; 0 when it did not die (it ended without a summary). */
static int death_of(const parity_process *pProc, const job_slot *pSlot, char *zHow, size_t nHow)
{
    /* a death: a signal, or an exit in the middle of a case (a sanitizer's report of a
     * fault in the target exits instead of dying) */
    if (pProc->end == PARITY_PROCESS_SIGNALED) {
        snprintf(zHow, nHow, "died of signal %d (%s)", pProc->sig, strsignal(pProc->sig));
        return 1;
    }
    if (pProc->end == PARITY_PROCESS_EXITED && pProc->code != 0 && pSlot->state != SLOT_IDLE) {
        snprintf(zHow, nHow, "exited with status %d in the middle of a case", pProc->code);
        return 1;
    }
    return 0;
}

/* Job j's channel closed before its summary: if it died (of a signal, or by an exit in the
 * middle of a case), keep what it counted and start it again on the rest of its time and
 * execs, with the case it died on (when it died running one) to re-run first. */
static void job_died(job_pool *pP, int j)
{
    const parity_campaign_options *pOpt = pP->pOpt;
    parity_campaign_result *pRes = pP->pRes;
    job_state *pJob = &pP->aJob[j];
    job_slot slot;
    uint64_t left = 0;
    int haveFatal;
    size_t i;
    char zErr[PARITY_ERR_LEN], zHow[128];

    parity_process_wait(&pJob->proc, 0, 0);
    slot = *(const job_slot *)parity_process_state(&pJob->proc);   /* before it is unmapped */
    haveFatal = slot.state == SLOT_RUNNING;
    if (!death_of(&pJob->proc, &slot, zHow, sizeof zHow)) {
        set_trouble(pRes, "job %d ended without a summary", j);
        return;
    }
    parity_process_close(&pJob->proc);
    pJob->done = 1;
    pRes->nExecs += slot.nExecs;
    pRes->nMinimizeExecs += slot.nMinimizeExecs;
    pRes->nSkipped += slot.nSkipped;
    pRes->nBitIdentical += slot.nBitIdentical;
    pRes->nJudged += slot.nJudged;
    pRes->nEagerWrong += slot.nEagerWrong;
    keep_first_eager_wrong(pRes->zEagerWrong, slot.zEagerWrong);
    parity_target_times_add(&pRes->times, &slot.times);
    pRes->nRawFindings += slot.nRawFindings + (haveFatal ? 0 : 1);
    for (i = 0; i < slot.nOp; i++) count_op(pRes, slot.azOp[i], slot.anOpExecs[i]);
    pJob->nExecs = pJob->nRaw = pJob->nSkipped = 0;
    pool_say(pP, "job %d: the target's process %s%s", j, zHow,
             haveFatal ? "; re-running that case alone, then going on"
                       : " while minimizing a finding; going on (nothing to store)");
    if (pOpt->maxExecs) {
        if (slot.nExecs >= pJob->share) return;
        pJob->share -= slot.nExecs;      /* what its next process may still run */
        left = pJob->share;
    }
    if (pOpt->timeLimit > 0 && parity_process_now() - pP->t0 >= pOpt->timeLimit) return;
    if (parity_campaign_interrupted || (pOpt->stopAfterFirst && pRes->nFinding > 0)) return;
    if (pJob->restarts >= MAX_RESTARTS) {
        set_trouble(pRes, "job %d died %d times: not restarted", j, pJob->restarts + 1);
        return;
    }
    pJob->restarts++;
    pJob->done = 0;
    if (start_job(pP, j, left, haveFatal ? &slot.spec : NULL, zErr, sizeof zErr) != 0)
        set_trouble(pRes, "restarting job %d: %s", j, zErr);
}

/* Reads what ready job j sent: one record, or the end of its channel. */
static void job_read(job_pool *pP, int j)
{
    job_state *pJob = &pP->aJob[j];
    job_record rec;
    if (parity_process_read(&pJob->proc, &rec, sizeof rec, 0) == PARITY_PROCESS_OK) {
        take_record(pP, pJob, &rec);
        return;
    }
    if (pP->inProcess && !pJob->done) job_died(pP, j);
    else parity_process_wait(&pJob->proc, 0, 0);
}

/* The stop-after-first benchmark's question is answered: stop the other jobs, and take
 * nothing more from them. A job that found something ends by itself (its own loop stops
 * at its first finding) and sends its summary. */
static void stop_jobs(job_pool *pP)
{
    int j;
    for (j = 0; j < pP->nJob; j++) {
        if (pP->aJob[j].found) continue;
        parity_process_close(&pP->aJob[j].proc);
        pP->aJob[j].done = 1;
    }
}

/* The counts so far, the running jobs' latest status included. */
static void pool_status(const job_pool *pP, double t)
{
    parity_campaign_result view = *pP->pRes;
    int j;
    for (j = 0; j < pP->nJob; j++) {
        view.nExecs += pP->aJob[j].nExecs;
        view.nRawFindings += pP->aJob[j].nRaw;
    }
    pP->pOpt->xStatus(pP->pOpt->pCtx, &view, t - pP->t0, 0);
}

/* Polls the jobs and takes their records until every channel is closed. */
static void pool_run(job_pool *pP)
{
    parity_process *apProc[256];
    double tStatus = pP->t0;
    int j;
    for (j = 0; j < pP->nJob; j++) apProc[j] = &pP->aJob[j].proc;
    for (;;) {
        double t;
        int nOpen = 0;
        for (j = 0; j < pP->nJob; j++) nOpen += apProc[j]->pid > 0 && apProc[j]->fdOut >= 0;
        if (nOpen == 0) break;
        if (parity_process_poll(apProc, (size_t)pP->nJob, 250) < 0) break;
        for (j = 0; j < pP->nJob; j++)
            if (apProc[j]->ready) job_read(pP, j);
        if (pP->pOpt->stopAfterFirst && pP->pRes->nFinding > 0) stop_jobs(pP);
        t = parity_process_now();
        if (pP->pOpt->xStatus && t - tStatus >= 1.0) {
            tStatus = t;
            pool_status(pP, t);
        }
    }
}

static int cmp_finding(const void *a, const void *b)
{
    return strcmp(((const parity_finding *)a)->zSignature, ((const parity_finding *)b)->zSignature);
}

static int run_jobs(const parity_campaign_options *pOpt, parity_campaign_result *pRes,
                    char *zErr, size_t nErr)
{
    job_pool pool;
    int j;

    memset(&pool, 0, sizeof pool);
    pool.pOpt = pOpt;
    pool.pRes = pRes;
    pool.nJob = pOpt->jobs;
    pool.inProcess = parity_target_spec_in_process(pOpt->zTarget);
    pool.t0 = parity_process_now();
    pool.zErr = zErr;
    pool.nErr = nErr;
    pool.aJob = parity_calloc((size_t)pool.nJob, sizeof *pool.aJob);
    if (!pool.aJob) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pRes->firstFinding = -1;
    for (j = 0; j < pool.nJob; j++) {
        job_state *pJob = &pool.aJob[j];
        if (pOpt->maxExecs)
            pJob->share = pOpt->maxExecs / (uint64_t)pool.nJob
                        + ((uint64_t)j < pOpt->maxExecs % (uint64_t)pool.nJob);
        if (start_job(&pool, j, pJob->share, NULL, zErr, nErr) != 0) {
            set_trouble(pRes, "starting job %d: %s", j, zErr);
            break;
        }
    }
    pool_run(&pool);
    for (j = 0; j < pool.nJob; j++) {
        job_state *pJob = &pool.aJob[j];
        if (pJob->proc.pid > 0) parity_process_wait(&pJob->proc, 0, 0);
        if (pJob->proc.pid > 0 && !pJob->done) set_trouble(pRes, "job %d ended without a summary", j);
        parity_process_close(&pJob->proc);
    }
    pRes->elapsed = parity_process_now() - pool.t0;
    /* the jobs' records interleave in any order: sort, so the same seed, jobs and
     * max-execs list the same findings in the same order */
    if (pRes->nFinding > 1) qsort(pRes->aFinding, pRes->nFinding, sizeof *pRes->aFinding, cmp_finding);
    if (pOpt->xStatus) pOpt->xStatus(pOpt->pCtx, pRes, pRes->elapsed, 1);
    set_free(&pool.seen);
    free(pool.aJob);
    if (pRes->trouble && pRes->nExecs == 0 && zErr[0]) return -1;
    return 0;
}

/* The result's echo of the options. */
static void echo_options(const parity_campaign_options *pOpt, parity_campaign_result *pRes)
{
    size_t i;
    pRes->zTarget = pOpt->zTarget;
    pRes->zStrategy = pOpt->strategy == PARITY_STRATEGY_BASELINE ? "baseline" : "guided";
    pRes->seed = pOpt->seed;
    pRes->jobs = pOpt->jobs;
    for (i = 0; i < parity_defect_count && pRes->nDefect < PARITY_CAMPAIGN_MAX_DEFECTS; i++)
        if (pOpt->defects & parity_defects[i].bit)
            pRes->azDefect[pRes->nDefect++] = parity_defects[i].zName;
}

int parity_campaign_run(const parity_campaign_options *pOpt, parity_campaign_result *pRes,
                        char *zErr, size_t nErr)
{
    int rc;
    memset(pRes, 0, sizeof *pRes);
    zErr[0] = '\0';
    echo_options(pOpt, pRes);
    if (pOpt->jobs > 1 || parity_target_spec_in_process(pOpt->zTarget))
        rc = run_jobs(pOpt, pRes, zErr, nErr);
    else
        rc = run_loop(pOpt, pOpt->seed, pOpt->maxExecs, NULL, NULL, NULL, pRes, zErr, nErr);
    if (rc == 0 && parity_triage_group(pRes->aFinding, pRes->nFinding, &pRes->aCause,
                                       &pRes->nCause) != 0)
        set_nomem(pRes);
    if (rc != 0) parity_campaign_result_free(pRes);   /* -1: nothing for the caller to free */
    return rc;
}
