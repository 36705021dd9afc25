/*
 * campaign.c - the campaign loop, its status line, and its spread over processes.
 *
 * The loop: a third of the cases continue the previous one by one mutation (a dim nudged
 * the way a dynamic-shape workload sends shapes, a recipe or dtype changed), the rest are
 * fresh draws for an op picked uniformly. A case that the oracle flags is deduplicated by
 * its raw signature, minimized, deduplicated again by the signature of the minimized case
 * (canonical dims), and stored.
 *
 * Supervision: a target that runs foreign code in this process (onednn's JIT) can fault
 * and take the campaign with it. Its campaigns always run as jobs (one or more child
 * processes), and each job mirrors into shared memory its counters and the spec of the
 * case in flight. When a job dies of a signal, the parent keeps its counts and starts it
 * again with a new seed and the time left; the new job first re-runs the fatal case in a
 * forked child (parity_target_isolate), minimizes it there and stores it as a finding of
 * class crash, then searches on. A fault that does not recur when its case runs alone
 * (it depends on what ran before) is said on stderr and not stored.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "fuzz/search/search.h"
/* The one arrow back up from the search room (search.h): dedup by signature, repro writing. */
#include "fuzz/findings/findings.h"

#define SIG_LEN 512
#define SLOT_MAX_OPS 64
#define MAX_RESTARTS 256

/* What a supervised job shows its parent (shared memory; the job writes, the parent
 * reads after the job has died). */
enum { SLOT_IDLE, SLOT_RUNNING, SLOT_MINIMIZING };
typedef struct {
    volatile int state;
    parity_case_spec spec;            /* the case in flight while SLOT_RUNNING */
    uint64_t nExecs, nMinimizeExecs, nSkipped, nBitIdentical, nRawFindings;
    size_t nOp;
    char azOp[SLOT_MAX_OPS][PARITY_CASE_OP_LEN];
    uint64_t anOpExecs[SLOT_MAX_OPS];
} job_slot;

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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- small sets and lists ------------------------------------------------------------ */

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

static void set_add(str_set *p, const char *z)
{
    if (p->n == p->nAlloc) {
        size_t nNew = p->nAlloc ? 2 * p->nAlloc : 16;
        char **azNew = realloc(p->az, nNew * sizeof *azNew);
        if (!azNew) return;
        p->az = azNew;
        p->nAlloc = nNew;
    }
    if ((p->az[p->n] = strdup(z)) != NULL) p->n++;
}

static void set_free(str_set *p)
{
    size_t i;
    for (i = 0; i < p->n; i++) free(p->az[i]);
    free(p->az);
    memset(p, 0, sizeof *p);
}

static void add_finding(parity_campaign_result *pRes, const char *zSig, const char *zOp,
                        const char *zClass, const char *zRepro, const char *zDetail,
                        double tFound, int minimal)
{
    parity_finding *aNew = realloc(pRes->aFinding, (pRes->nFinding + 1) * sizeof *aNew);
    parity_finding *pF;
    if (!aNew) return;
    pRes->aFinding = aNew;
    pF = &aNew[pRes->nFinding++];
    pF->zSignature = strdup(zSig);
    pF->zOp = strdup(zOp);
    pF->zClass = strdup(zClass);
    pF->zRepro = zRepro && zRepro[0] ? strdup(zRepro) : NULL;
    pF->zDetail = strdup(zDetail ? zDetail : "");
    pF->tFound = tFound;
    pF->minimal = minimal;
    if (pRes->firstFinding < 0 || tFound < pRes->firstFinding) pRes->firstFinding = tFound;
}

static size_t op_slot(parity_campaign_result *pRes, const char *zOp)
{
    size_t i;
    for (i = 0; i < pRes->nOp; i++)
        if (strcmp(pRes->azOp[i], zOp) == 0) return i;
    pRes->azOp = realloc(pRes->azOp, (pRes->nOp + 1) * sizeof *pRes->azOp);
    pRes->anOpExecs = realloc(pRes->anOpExecs, (pRes->nOp + 1) * sizeof *pRes->anOpExecs);
    pRes->azOp[pRes->nOp] = strdup(zOp);
    pRes->anOpExecs[pRes->nOp] = 0;
    return pRes->nOp++;
}

void parity_campaign_result_free(parity_campaign_result *pRes)
{
    size_t i;
    for (i = 0; i < pRes->nFinding; i++) {
        free(pRes->aFinding[i].zSignature);
        free(pRes->aFinding[i].zOp);
        free(pRes->aFinding[i].zClass);
        free(pRes->aFinding[i].zRepro);
        free(pRes->aFinding[i].zDetail);
    }
    free(pRes->aFinding);
    for (i = 0; i < pRes->nOp; i++) free(pRes->azOp[i]);
    free(pRes->azOp);
    free(pRes->anOpExecs);
    memset(pRes, 0, sizeof *pRes);
}

/* ---- the status line ---------------------------------------------------------------- */

static void print_status(const parity_campaign_result *pRes, double elapsed, int final)
{
    char zLine[2048];
    size_t len, i;
    int tty = isatty(2);
    len = (size_t)snprintf(zLine, sizeof zLine,
                           "parityfuzz: %.0f s  execs %llu (%.0f/s)  findings %llu (%zu unique)",
                           elapsed, (unsigned long long)pRes->nExecs,
                           elapsed > 0 ? (double)pRes->nExecs / elapsed : 0.0,
                           (unsigned long long)pRes->nRawFindings, pRes->nFinding);
    for (i = 0; i < pRes->nOp && len < sizeof zLine - 64; i++)
        len += (size_t)snprintf(zLine + len, sizeof zLine - len, "%s %s %llu",
                                i ? "," : " |", pRes->azOp[i],
                                (unsigned long long)pRes->anOpExecs[i]);
    if (tty) fprintf(stderr, "\r%s\033[K%s", zLine, final ? "\n" : "");
    else fprintf(stderr, "%s\n", zLine);
    fflush(stderr);
}

/* ---- one process's loop ------------------------------------------------------------- */

/* Ops to fuzz: the options' list (each checked), or every op with a layout the target
 * runs. */
static int pick_ops(const parity_campaign_options *pOpt, parity_target *pT, str_set *pOps,
                    char *zErr, size_t nErr)
{
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
            if (!pT->xSupports(pT, zOp)) {
                snprintf(zErr, nErr, "--ops: target %s does not run '%s'", pOpt->zTarget, zOp);
                return -1;
            }
            if (!set_has(pOps, zOp)) set_add(pOps, zOp);
        }
    } else {
        const parity_layout_info *aInfo = parity_layout_all(&n);
        for (i = 0; i < n; i++)
            if (pT->xSupports(pT, aInfo[i].zOp)) set_add(pOps, aInfo[i].zOp);
    }
    if (pOps->n == 0) {
        snprintf(zErr, nErr, "no op to fuzz on target %s", pOpt->zTarget);
        return -1;
    }
    return 0;
}

/* Writes one line to the parent (jobs > 1); losing the parent ends the job. */
static void tell_parent(int fd, const char *zLine)
{
    size_t len = strlen(zLine);
    if (fd >= 0 && write(fd, zLine, len) != (ssize_t)len) _exit(2);
}

/* Flattens tabs and newlines so a field fits the parent protocol's line. */
static void flatten(char *z)
{
    for (; *z; z++)
        if (*z == '\t' || *z == '\n') *z = ' ';
}

/* Handles a flagged case: dedup, minimize, dedup again, store. */
static void handle_finding(const parity_campaign_options *pOpt, parity_target *pT,
                           const parity_case *pCase, const double *aEager,
                           const double *aCompiled, const parity_oracle_result *pR,
                           str_set *pRawSeen, str_set *pFinalSeen, parity_campaign_result *pRes,
                           double t0, int fdParent)
{
    char zSig[SIG_LEN], zRepro[4400] = "", zErr[PARITY_ERR_LEN], zMsg[6000];
    const parity_case *pStore = pCase;
    const double *aE = aEager, *aC = aCompiled;
    const parity_oracle_result *pStoreR = pR;
    parity_minimized min;
    int haveMin = 0, minimal = 0, rc = 0;
    double tFound = now_s() - t0;

    pRes->nRawFindings++;
    parity_signature(pCase, pR, zSig, sizeof zSig);
    if (set_has(pRawSeen, zSig)) return;
    set_add(pRawSeen, zSig);
    if (pOpt->minimize) {
        /* A crash costs a worker restart and a hang a whole --case-timeout: those classes
         * get a small budget (their dims shrink less far; "minimal" says so). */
        uint64_t budget = pR->cls == PARITY_FINDING_DIVERGES ? PARITY_MINIMIZE_BUDGET
                        : pR->cls == PARITY_FINDING_HANG ? 6 : 16;
        /* --time bounds the campaign: a minimization still running at its end gets a
         * grace of a tenth of it (at most 30 s), then stores what it has (not minimal) */
        double deadline = 0;
        if (pOpt->timeLimit > 0) {
            double grace = pOpt->timeLimit / 10 < 30 ? pOpt->timeLimit / 10 : 30;
            deadline = t0 + pOpt->timeLimit + grace;
        }
        if (parity_minimize(pT, &pCase->spec, pR, budget, deadline, &min, zErr,
                            sizeof zErr) == 0) {
            haveMin = 1;
            pRes->nMinimizeExecs += min.nExecs;
            pStore = &min.minimized;
            aE = min.aEager;
            aC = min.aCompiled;
            pStoreR = &min.result;
            minimal = min.minimal;
            parity_signature(pStore, pStoreR, zSig, sizeof zSig);
        } else {
            fprintf(stderr, "parityfuzz: minimizing a %s finding failed: %s\n",
                    pCase->spec.zOp, zErr);
        }
    }
    if (set_has(pFinalSeen, zSig)) goto done;
    set_add(pFinalSeen, zSig);
    if (pOpt->zOutDir) {
        parity_case_identity id;
        int haveId = pT->xIdentity && pT->xIdentity(pT, pStore, &id) == 0;
        rc = parity_repro_write(pOpt->zOutDir, pStore, aE, aC, pStoreR, zSig, pOpt->zTarget,
                                pOpt->defects, haveId ? &id : NULL, zRepro, sizeof zRepro, zErr,
                                sizeof zErr);
        if (rc < 0) {
            pRes->trouble = 1;
            snprintf(pRes->zTrouble, sizeof pRes->zTrouble, "storing a repro: %s", zErr);
            goto done;
        }
        if (rc == 1) goto done;     /* another job stored this signature first */
    }
    add_finding(pRes, zSig, pStore->spec.zOp, parity_finding_class_name(pStoreR->cls), zRepro,
                pStoreR->zDetail, tFound, minimal);
    if (fdParent >= 0) {
        parity_finding *pF = &pRes->aFinding[pRes->nFinding - 1];
        flatten(pF->zDetail);
        snprintf(zMsg, sizeof zMsg, "F %.6f\t%d\t%s\t%s\t%s\t%s\t%s\n", tFound, minimal, zSig,
                 pF->zOp, pF->zClass, zRepro, pF->zDetail);
        tell_parent(fdParent, zMsg);
    }
done:
    if (haveMin) parity_minimized_free(&min);
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
    for (i = 0; i < pRes->nOp && i < SLOT_MAX_OPS; i++) {
        if (i >= pSlot->nOp) snprintf(pSlot->azOp[i], sizeof pSlot->azOp[i], "%s", pRes->azOp[i]);
        pSlot->anOpExecs[i] = pRes->anOpExecs[i];
    }
    pSlot->nOp = i;
}

/* The case the previous job died on, run again with its compiled side in a forked child:
 * a crash there is stored (minimized in forked children too) like any finding. */
static void rerun_fatal_case(const parity_campaign_options *pOpt, parity_target *pT,
                             const parity_case_spec *pSpec, str_set *pRawSeen,
                             str_set *pFinalSeen, parity_campaign_result *pRes, double t0,
                             int fdParent)
{
    char zErr[PARITY_ERR_LEN], zDesc[1024];
    parity_target *pIso = parity_target_isolate(pT, 0, pOpt->caseTimeout, zErr, sizeof zErr);
    parity_case c;
    parity_oracle_result r;
    double *aE = NULL, *aC = NULL;

    if (!pIso) {
        fprintf(stderr, "parityfuzz: re-running the fatal case: %s\n", zErr);
        return;
    }
    if (parity_case_expand(pSpec, &c, zErr, sizeof zErr) != 0) {
        fprintf(stderr, "parityfuzz: re-running the fatal case: %s\n", zErr);
        parity_target_close(pIso);
        return;
    }
    aE = malloc((c.nOut ? c.nOut : 1) * sizeof *aE);
    aC = malloc((c.nOut ? c.nOut : 1) * sizeof *aC);
    if (aE && aC && parity_oracle_run(pIso, &c, aE, aC, &r) == 0) {
        size_t iOp = op_slot(pRes, c.spec.zOp);     /* may grow anOpExecs: index after */
        pRes->nExecs++;
        pRes->anOpExecs[iOp]++;
        if (r.cls == PARITY_FINDING_CRASH)
            handle_finding(pOpt, pIso, &c, aE, aC, &r, pRawSeen, pFinalSeen, pRes, t0,
                           fdParent);
        else
            fprintf(stderr, "parityfuzz: the target's process died during %s, but that case "
                    "alone does not crash (%s): the fault depends on what ran before it\n",
                    parity_case_describe(&c, zDesc, sizeof zDesc),
                    parity_finding_class_name(r.cls));
    }
    free(aE);
    free(aC);
    parity_case_free(&c);
    parity_target_close(pIso);
}

static int run_loop(const parity_campaign_options *pOpt, uint64_t seed, uint64_t maxExecs,
                    int fdParent, job_slot *pSlot, const parity_case_spec *pFatal,
                    parity_campaign_result *pRes, char *zErr, size_t nErr)
{
    parity_target *pT;
    str_set ops = { 0 }, rawSeen = { 0 }, finalSeen = { 0 };
    parity_rng rng;
    parity_case_spec prev;
    int havePrev = 0;
    double t0 = now_s(), tStatus = t0;
    double *aEager = NULL, *aCompiled = NULL;
    size_t nAlloc = 0, i;
    uint32_t dtypes;

    pT = parity_target_open(pOpt->zTarget, pOpt->defects, pOpt->caseTimeout, zErr, nErr);
    if (!pT) return -1;
    if (pick_ops(pOpt, pT, &ops, zErr, nErr) != 0) {
        parity_target_close(pT);
        return -1;
    }
    for (i = 0; i < ops.n; i++) op_slot(pRes, ops.az[i]);
    dtypes = (pOpt->dtypes ? pOpt->dtypes : ~0u) & (pT->dtypes ? pT->dtypes : ~0u);
    for (i = 0; i < PARITY_DT_COUNT; i++)
        if ((dtypes & (1u << i)) && parity_spec_dtype_drawable((parity_dtype)i)) break;
    if (i == PARITY_DT_COUNT) {
        char zRuns[128] = "";
        size_t len = 0;
        for (i = 0; i < PARITY_DT_COUNT; i++)
            if (parity_target_runs_dtype(pT, (parity_dtype)i) &&
                parity_spec_dtype_drawable((parity_dtype)i) && len < sizeof zRuns)
                len += (size_t)snprintf(zRuns + len, sizeof zRuns - len, "%s%s", len ? ", " : "",
                                        parity_dtype_name((parity_dtype)i));
        snprintf(zErr, nErr, "--dtypes: target %s runs none of them (it runs %s)",
                 pOpt->zTarget, zRuns);
        set_free(&ops);
        parity_target_close(pT);
        return -1;
    }
    parity_rng_seed(&rng, seed);
    pRes->firstFinding = -1;
    if (pFatal) {
        rerun_fatal_case(pOpt, pT, pFatal, &rawSeen, &finalSeen, pRes, t0, fdParent);
        slot_mirror(pSlot, pRes);
    }

    for (;;) {
        parity_case_spec spec;
        parity_case c;
        parity_oracle_result r;
        char zCaseErr[PARITY_ERR_LEN];
        double t = now_s();

        if (maxExecs && pRes->nExecs >= maxExecs) break;
        if (pOpt->timeLimit > 0 && t - t0 >= pOpt->timeLimit) break;
        if (pOpt->stopAfterFirst && pRes->nFinding > 0) break;
        if (pRes->trouble || parity_campaign_interrupted) break;
        if (t - tStatus >= 1.0) {
            tStatus = t;
            if (fdParent >= 0) {
                char zMsg[128];
                snprintf(zMsg, sizeof zMsg, "S %llu %llu %llu\n", (unsigned long long)pRes->nExecs,
                         (unsigned long long)pRes->nRawFindings,
                         (unsigned long long)pRes->nSkipped);
                tell_parent(fdParent, zMsg);
            } else if (pOpt->progress) {
                print_status(pRes, t - t0, 0);
            }
        }

        if (havePrev && pOpt->strategy == PARITY_STRATEGY_GUIDED && parity_rng_one_in(&rng, 3)) {
            spec = prev;
            if (parity_spec_mutate(&rng, &spec) != 0) continue;
        } else {
            const char *zOp = ops.az[parity_rng_below(&rng, ops.n)];
            if (parity_spec_generate(&rng, zOp, pOpt->strategy, &spec) != 0) continue;
        }
        parity_spec_restrict_dtypes(&rng, &spec, dtypes);
        if (parity_case_expand(&spec, &c, zCaseErr, sizeof zCaseErr) != 0) continue;
        if (c.nOut > nAlloc || !aEager) {
            nAlloc = c.nOut > 1024 ? c.nOut : 1024;
            free(aEager);
            free(aCompiled);
            aEager = malloc(nAlloc * sizeof *aEager);
            aCompiled = malloc(nAlloc * sizeof *aCompiled);
            if (!aEager || !aCompiled) {
                parity_case_free(&c);
                snprintf(zErr, nErr, "out of memory");
                pRes->trouble = 1;
                snprintf(pRes->zTrouble, sizeof pRes->zTrouble, "out of memory");
                break;
            }
        }
        if (pSlot) {
            pSlot->spec = spec;
            pSlot->state = SLOT_RUNNING;
        }
        if (parity_oracle_run(pT, &c, aEager, aCompiled, &r) != 0) {
            /* the judge refused a case the layout made: our bug, say it and go on */
            fprintf(stderr, "parityfuzz: internal: %s\n", r.zDetail);
            parity_case_free(&c);
            if (pSlot) pSlot->state = SLOT_IDLE;
            continue;
        }
        pRes->nExecs++;
        {
            size_t iOp = op_slot(pRes, spec.zOp);
            pRes->anOpExecs[iOp]++;
        }
        if (r.cls == PARITY_FINDING_SKIPPED) pRes->nSkipped++;
        else if (r.bitIdentical) pRes->nBitIdentical++;
        if (pSlot) pSlot->state = SLOT_MINIMIZING;
        if (r.cls != PARITY_FINDING_NONE && r.cls != PARITY_FINDING_SKIPPED)
            handle_finding(pOpt, pT, &c, aEager, aCompiled, &r, &rawSeen, &finalSeen, pRes, t0,
                           fdParent);
        if (pSlot) pSlot->state = SLOT_IDLE;
        slot_mirror(pSlot, pRes);
        parity_case_free(&c);
        prev = spec;
        havePrev = 1;
    }
    pRes->elapsed = now_s() - t0;
    if (fdParent < 0 && pOpt->progress) print_status(pRes, pRes->elapsed, 1);
    free(aEager);
    free(aCompiled);
    set_free(&ops);
    set_free(&rawSeen);
    set_free(&finalSeen);
    parity_target_close(pT);
    return 0;
}

/* ---- jobs ----------------------------------------------------------------------------- */

/* Child side: runs its share and reports; never returns. A restarted job (restart > 0)
 * draws from another seed, and re-runs pFatal first. */
static void run_child(const parity_campaign_options *pOpt, int job, int restart,
                      uint64_t maxExecs, int fd, job_slot *pSlot, const parity_case_spec *pFatal)
{
    parity_campaign_result res;
    char zErr[PARITY_ERR_LEN], zMsg[PARITY_ERR_LEN + 200];
    uint64_t seed = pOpt->seed + (uint64_t)job * 0x9E3779B97F4A7C15ull
                  + (uint64_t)restart * 0xD1B54A32D192ED03ull;
    size_t i;
    memset(&res, 0, sizeof res);
    if (run_loop(pOpt, seed, maxExecs, fd, pSlot, pFatal, &res, zErr, sizeof zErr) != 0) {
        flatten(zErr);
        snprintf(zMsg, sizeof zMsg, "X %s\n", zErr);
        tell_parent(fd, zMsg);
        _exit(2);
    }
    for (i = 0; i < res.nOp; i++) {
        snprintf(zMsg, sizeof zMsg, "O %s %llu\n", res.azOp[i], (unsigned long long)res.anOpExecs[i]);
        tell_parent(fd, zMsg);
    }
    flatten(res.zTrouble);
    snprintf(zMsg, sizeof zMsg, "E %llu %llu %llu %llu %llu %d %s\n",
             (unsigned long long)res.nExecs, (unsigned long long)res.nMinimizeExecs,
             (unsigned long long)res.nSkipped, (unsigned long long)res.nBitIdentical,
             (unsigned long long)res.nRawFindings, res.trouble, res.zTrouble);
    tell_parent(fd, zMsg);
    _exit(0);
}

typedef struct {
    pid_t pid;
    int fd;
    char aBuf[16384];
    size_t nBuf;
    uint64_t nExecs, nRaw, nSkipped;     /* from its latest status */
    int done;
    uint64_t share;                      /* max-execs of its current process (0: none) */
    int restarts;                        /* times it died and was started again */
    double tOffset;                      /* when its current process started (campaign s) */
} job_state;

/* Parses one line from a child into the aggregate. */
static void parent_line(job_state *pJob, char *zLine, parity_campaign_result *pRes,
                        str_set *pSeen, char *zErr, size_t nErr)
{
    unsigned long long a, b, c, d, e;
    int trouble, minimal;
    double t;
    if (zLine[0] == 'S' && sscanf(zLine + 2, "%llu %llu %llu", &a, &b, &c) == 3) {
        pJob->nExecs = a; pJob->nRaw = b; pJob->nSkipped = c;
    } else if (zLine[0] == 'F' && sscanf(zLine + 2, "%lf\t%d\t", &t, &minimal) == 2) {
        char *azField[7], *z = zLine + 2;
        int k;
        t += pJob->tOffset;          /* the job's times count from its own (re)start */
        for (k = 0; k < 7; k++) {
            azField[k] = z;
            z = strchr(z, '\t');
            if (z) *z++ = '\0';
            else { k++; break; }
        }
        if (k == 7 && !set_has(pSeen, azField[2])) {
            set_add(pSeen, azField[2]);
            add_finding(pRes, azField[2], azField[3], azField[4], azField[5], azField[6], t,
                        minimal);
        }
    } else if (zLine[0] == 'O') {
        char zOp[PARITY_CASE_OP_LEN];
        if (sscanf(zLine + 2, "%39s %llu", zOp, &a) == 2) {
            size_t iOp = op_slot(pRes, zOp);     /* may grow anOpExecs: index after */
            pRes->anOpExecs[iOp] += a;
        }
    } else if (zLine[0] == 'E' &&
               sscanf(zLine + 2, "%llu %llu %llu %llu %llu %d", &a, &b, &c, &d, &e, &trouble) == 6) {
        pJob->nExecs = 0; pJob->nRaw = 0; pJob->nSkipped = 0;
        pRes->nExecs += a; pRes->nMinimizeExecs += b; pRes->nSkipped += c;
        pRes->nBitIdentical += d; pRes->nRawFindings += e;
        if (trouble && !pRes->trouble) {
            const char *zWhy = zLine + 2;
            int k;
            for (k = 0; k < 6 && zWhy; k++) { zWhy = strchr(zWhy, ' '); if (zWhy) zWhy++; }
            pRes->trouble = 1;
            snprintf(pRes->zTrouble, sizeof pRes->zTrouble, "%s", zWhy ? zWhy : "a job failed");
        }
        pJob->done = 1;
    } else if (zLine[0] == 'X') {
        snprintf(zErr, nErr, "%s", zLine + 2);
        pRes->trouble = 1;
        snprintf(pRes->zTrouble, sizeof pRes->zTrouble, "%s", zLine + 2);
        pJob->done = 1;
    }
}

static int cmp_finding(const void *a, const void *b)
{
    return strcmp(((const parity_finding *)a)->zSignature, ((const parity_finding *)b)->zSignature);
}

/* Starts (or restarts) job j: its share of execs and time, counted from the campaign's
 * start t0. Returns -1 with zErr when no process could be made. */
static int start_job(const parity_campaign_options *pOpt, job_state *pJob, int j,
                     uint64_t maxExecs, job_slot *pSlot, const parity_case_spec *pFatal,
                     double t0, char *zErr, size_t nErr)
{
    parity_campaign_options opt = *pOpt;
    int aPipe[2];
    pJob->tOffset = now_s() - t0;
    if (opt.timeLimit > 0) opt.timeLimit -= pJob->tOffset;
    if (pSlot) memset(pSlot, 0, sizeof *pSlot);
    if (pipe(aPipe) != 0) {
        snprintf(zErr, nErr, "pipe: %s", strerror(errno));
        pJob->done = 1;
        pJob->fd = -1;
        return -1;
    }
    fflush(NULL);
    pJob->pid = fork();
    if (pJob->pid == 0) {
        close(aPipe[0]);
        if (pOpt->maxExecs && maxExecs == 0) _exit(0);
        run_child(&opt, j, pJob->restarts, maxExecs, aPipe[1], pSlot, pFatal);
    }
    close(aPipe[1]);
    pJob->fd = aPipe[0];
    if (pJob->pid < 0) {
        snprintf(zErr, nErr, "fork: %s", strerror(errno));
        close(aPipe[0]);
        pJob->done = 1;
        pJob->fd = -1;
        return -1;
    }
    return 0;
}

/* A supervised job's pipe closed before its summary: if it died (of a signal, or by an
 * exit in the middle of a case), keep what it counted and start it again on the rest of
 * its time and execs, with the case it died on (when it died running one) to re-run
 * first. */
static void job_died(const parity_campaign_options *pOpt, job_state *pJob, int j,
                     job_slot *pSlot, parity_campaign_result *pRes, double t0)
{
    int status = 0;
    uint64_t left = 0;
    parity_case_spec fatal;
    int haveFatal = pSlot->state == SLOT_RUNNING;
    size_t i;
    char zErr[PARITY_ERR_LEN], zHow[128];

    while (waitpid(pJob->pid, &status, 0) < 0 && errno == EINTR) {}
    pJob->pid = 0;
    /* a death: a signal, or an exit in the middle of a case (a sanitizer's report of a
     * fault in the target exits instead of dying) */
    if (WIFSIGNALED(status))
        snprintf(zHow, sizeof zHow, "died of signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && pSlot->state != SLOT_IDLE)
        snprintf(zHow, sizeof zHow, "exited with status %d in the middle of a case",
                 WEXITSTATUS(status));
    else {
        if (!pRes->trouble) {
            pRes->trouble = 1;
            snprintf(pRes->zTrouble, sizeof pRes->zTrouble, "job %d ended without a summary", j);
        }
        return;
    }
    pJob->done = 1;
    pRes->nExecs += pSlot->nExecs;
    pRes->nMinimizeExecs += pSlot->nMinimizeExecs;
    pRes->nSkipped += pSlot->nSkipped;
    pRes->nBitIdentical += pSlot->nBitIdentical;
    pRes->nRawFindings += pSlot->nRawFindings + (haveFatal ? 0 : 1);
    for (i = 0; i < pSlot->nOp; i++) {
        size_t iOp = op_slot(pRes, pSlot->azOp[i]);  /* may grow anOpExecs: index after */
        pRes->anOpExecs[iOp] += pSlot->anOpExecs[i];
    }
    pJob->nExecs = pJob->nRaw = pJob->nSkipped = 0;
    fatal = pSlot->spec;
    fprintf(stderr, "parityfuzz: job %d: the target's process %s%s\n", j, zHow,
            haveFatal ? "; re-running that case alone, then going on"
                      : " while minimizing a finding; going on (nothing to store)");
    if (pOpt->maxExecs) {
        if (pSlot->nExecs >= pJob->share) return;
        pJob->share -= pSlot->nExecs;      /* what its next process may still run */
        left = pJob->share;
    }
    if (pOpt->timeLimit > 0 && now_s() - t0 >= pOpt->timeLimit) return;
    if (parity_campaign_interrupted || (pOpt->stopAfterFirst && pRes->nFinding > 0)) return;
    if (pJob->restarts >= MAX_RESTARTS) {
        pRes->trouble = 1;
        snprintf(pRes->zTrouble, sizeof pRes->zTrouble, "job %d died %d times: not restarted",
                 j, pJob->restarts + 1);
        return;
    }
    pJob->restarts++;
    pJob->done = 0;
    if (start_job(pOpt, pJob, j, left, pSlot, haveFatal ? &fatal : NULL, t0, zErr,
                  sizeof zErr) != 0) {
        pRes->trouble = 1;
        snprintf(pRes->zTrouble, sizeof pRes->zTrouble, "restarting job %d: %s", j, zErr);
    }
}

static int run_jobs(const parity_campaign_options *pOpt, parity_campaign_result *pRes,
                    char *zErr, size_t nErr)
{
    int nJob = pOpt->jobs, j, nOpen;
    job_state *aJob = calloc((size_t)nJob, sizeof *aJob);
    job_slot *aSlot = NULL;
    size_t nSlotBytes = (size_t)nJob * sizeof *aSlot;
    str_set seen = { 0 };
    double t0 = now_s(), tStatus = t0;
    if (!aJob) { snprintf(zErr, nErr, "out of memory"); return -1; }
    if (parity_target_spec_in_process(pOpt->zTarget)) {
        aSlot = mmap(NULL, nSlotBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (aSlot == MAP_FAILED) {
            snprintf(zErr, nErr, "mmap: %s", strerror(errno));
            free(aJob);
            return -1;
        }
    }
    pRes->firstFinding = -1;
    for (j = 0; j < nJob; j++) {
        if (pOpt->maxExecs)
            aJob[j].share = pOpt->maxExecs / (uint64_t)nJob
                          + ((uint64_t)j < pOpt->maxExecs % (uint64_t)nJob);
        if (start_job(pOpt, &aJob[j], j, aJob[j].share, aSlot ? &aSlot[j] : NULL, NULL, t0,
                      zErr, nErr) != 0)
            break;
    }
    for (;;) {
        struct pollfd aPfd[256];
        int aMap[256], np = 0;
        double t = now_s();
        nOpen = 0;
        for (j = 0; j < nJob && np < 256; j++) {
            if (aJob[j].fd < 0) continue;
            aPfd[np].fd = aJob[j].fd;
            aPfd[np].events = POLLIN;
            aMap[np++] = j;
            nOpen++;
        }
        if (nOpen == 0) break;
        if (poll(aPfd, (nfds_t)np, 250) < 0 && errno != EINTR) break;
        for (j = 0; j < np; j++) {
            job_state *pJob = &aJob[aMap[j]];
            ssize_t n;
            char *pNl;
            if (!(aPfd[j].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            n = read(pJob->fd, pJob->aBuf + pJob->nBuf, sizeof pJob->aBuf - 1 - pJob->nBuf);
            if (n <= 0) {
                close(pJob->fd);
                pJob->fd = -1;
                pJob->nBuf = 0;
                if (aSlot && !pJob->done && pJob->pid > 0)
                    job_died(pOpt, pJob, aMap[j], &aSlot[aMap[j]], pRes, t0);
                continue;
            }
            pJob->nBuf += (size_t)n;
            pJob->aBuf[pJob->nBuf] = '\0';
            while ((pNl = strchr(pJob->aBuf, '\n')) != NULL) {
                *pNl = '\0';
                parent_line(pJob, pJob->aBuf, pRes, &seen, zErr, nErr);
                size_t consumed = (size_t)(pNl + 1 - pJob->aBuf);
                memmove(pJob->aBuf, pNl + 1, pJob->nBuf - consumed + 1);
                pJob->nBuf -= consumed;
            }
            if (pJob->nBuf == sizeof pJob->aBuf - 1) pJob->nBuf = 0;   /* overlong: drop */
        }
        if (pOpt->stopAfterFirst && pRes->nFinding > 0) {
            /* the benchmark's question is answered: stop the other jobs */
            for (j = 0; j < nJob; j++) {
                if (aJob[j].pid > 0 && !aJob[j].done) kill(aJob[j].pid, SIGKILL);
                aJob[j].done = 1;
                if (aJob[j].fd >= 0) { close(aJob[j].fd); aJob[j].fd = -1; }
            }
        }
        if (pOpt->progress && t - tStatus >= 1.0) {
            parity_campaign_result view = *pRes;
            for (j = 0; j < nJob; j++) {
                view.nExecs += aJob[j].nExecs;
                view.nRawFindings += aJob[j].nRaw;
            }
            tStatus = t;
            print_status(&view, t - t0, 0);
        }
    }
    for (j = 0; j < nJob; j++) {
        int status;
        if (aJob[j].pid > 0) waitpid(aJob[j].pid, &status, 0);
        if (aJob[j].pid > 0 && !aJob[j].done && !pRes->trouble) {
            pRes->trouble = 1;
            snprintf(pRes->zTrouble, sizeof pRes->zTrouble, "job %d ended without a summary", j);
        }
    }
    pRes->elapsed = now_s() - t0;
    /* the jobs' messages interleave in any order: sort, so the same seed, jobs and
     * max-execs list the same findings in the same order */
    if (pRes->nFinding > 1) qsort(pRes->aFinding, pRes->nFinding, sizeof *pRes->aFinding, cmp_finding);
    if (pOpt->progress) print_status(pRes, pRes->elapsed, 1);
    set_free(&seen);
    free(aJob);
    if (aSlot) munmap(aSlot, nSlotBytes);
    if (pRes->trouble && pRes->nExecs == 0 && zErr[0]) return -1;
    return 0;
}

int parity_campaign_run(const parity_campaign_options *pOpt, parity_campaign_result *pRes,
                        char *zErr, size_t nErr)
{
    memset(pRes, 0, sizeof *pRes);
    zErr[0] = '\0';
    if (pOpt->jobs > 1 || parity_target_spec_in_process(pOpt->zTarget))
        return run_jobs(pOpt, pRes, zErr, nErr);
    return run_loop(pOpt, pOpt->seed, pOpt->maxExecs, -1, NULL, NULL, pRes, zErr, nErr);
}
