/*
 * cmd.c - an external target: a persistent worker process speaking the line
 * protocol of formats/FORMAT.md ("Fuzz worker protocol") over its stdin and stdout.
 *
 *   worker -> us   SKIP <op> <reason>      zero or more: ops it does not implement
 *   worker -> us   READY <version> <name>  once, after start
 *   us -> worker   RUN <side> <case.h5> <out.h5>
 *   worker -> us   OK | ERROR <message> | SKIP <message>
 *   us -> worker   QUIT
 *
 * The worker runs under /bin/sh -c in its own process group. When it dies mid-request the
 * case is a crash and the next request starts a new worker; when a request outlives the
 * case timeout the group is killed and the case is a hang. Case and output files live in
 * a private temporary folder removed on close.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/process.h"
#include "fuzz/targets/targets.h"

#define CMD_PROTOCOL_VERSION 1
#define CMD_LINE_MAX PARITY_PROCESS_LINE_MAX
#define CMD_MAX_SKIP 64
#define CMD_STARTUP_TIMEOUT 120.0    /* importing torch takes seconds on a cold cache */
#define CMD_QUIT_GRACE 2.0           /* seconds a worker has to leave after QUIT */

typedef struct {
    parity_target base;
    char *zCommand;
    double caseTimeout;
    parity_process worker;    /* pid 0: no worker running */
    char zDir[64];            /* private folder for case and output files */
    char *azSkip[CMD_MAX_SKIP];
    size_t nSkip;
    int started;              /* the handshake succeeded once (SKIP list is known) */
    char zWorkerName[128];
} cmd_target;

/* How the worker ended, for zErr: "worker <zWhat> (killed by signal 11)". */
static void describe_exit(const parity_process *pW, char *zErr, size_t nErr, const char *zWhat)
{
    if (pW->end == PARITY_PROCESS_SIGNALED)
        snprintf(zErr, nErr, "worker %s (killed by signal %d)", zWhat, pW->sig);
    else if (pW->end == PARITY_PROCESS_EXITED && pW->code > 128)
        /* /bin/sh (dash) reports its child's death by signal N as status 128 + N */
        snprintf(zErr, nErr, "worker %s (killed by signal %d)", zWhat, pW->code - 128);
    else if (pW->end == PARITY_PROCESS_EXITED)
        snprintf(zErr, nErr, "worker %s (exit status %d)", zWhat, pW->code);
    else
        snprintf(zErr, nErr, "worker %s", zWhat);
}

/* Ends the worker: politely (QUIT, then a grace period) or not (its process group is
 * killed). With zWhat, says in zErr how it ended. */
static void worker_stop(cmd_target *p, int force, const char *zWhat, char *zErr, size_t nErr)
{
    if (p->worker.pid <= 0) return;
    if (force) {
        parity_process_kill(&p->worker);
    } else {
        if (parity_process_write(&p->worker, "QUIT\n", 5) != 0) { /* already gone */ }
        parity_process_stop(&p->worker, CMD_QUIT_GRACE);
    }
    if (zWhat) describe_exit(&p->worker, zErr, nErr, zWhat);
    parity_process_close(&p->worker);
}

/* Reads one line of the worker's within timeout seconds: PARITY_PROCESS_OK, _EOF or
 * _TIMEOUT. */
static int read_line(cmd_target *p, char *zLine, size_t nLine, double timeout)
{
    return parity_process_read_line(&p->worker, zLine, nLine, parity_process_now() + timeout);
}

/* Records "SKIP <op> <reason>" (the first handshake only: a restarted worker says it
 * again). */
static void add_skip(cmd_target *p, const char *zLine)
{
    if (p->started || p->nSkip >= CMD_MAX_SKIP || !zLine[5]) return;
    p->azSkip[p->nSkip] = strdup(zLine + 5);
    if (p->azSkip[p->nSkip]) p->nSkip++;
}

/* 1 when SKIP line z ("<op> <reason>") names zOp. */
static int skip_names(const char *z, const char *zOp)
{
    size_t len = strlen(zOp);
    return strncmp(z, zOp, len) == 0 && (z[len] == ' ' || z[len] == '\0');
}

/* One line on stderr with every op the worker skips and why. */
static void say_skips(const cmd_target *p)
{
    size_t i;
    if (p->nSkip == 0) return;
    fprintf(stderr, "parityfuzz: worker %s skips %zu op%s:", p->zWorkerName, p->nSkip,
            p->nSkip == 1 ? "" : "s");
    for (i = 0; i < p->nSkip; i++) {
        const char *zReason = strchr(p->azSkip[i], ' ');
        int lenOp = zReason ? (int)(zReason - p->azSkip[i]) : (int)strlen(p->azSkip[i]);
        fprintf(stderr, "%s %.*s", i ? "," : "", lenOp, p->azSkip[i]);
        if (zReason && zReason[1]) fprintf(stderr, " (%s)", zReason + 1);
    }
    fprintf(stderr, "\n");
}

/* Starts the worker and reads its handshake. Returns 0, or -1 with zErr. */
static int worker_start(cmd_target *p, char *zErr, size_t nErr)
{
    const char *azArgv[] = { "/bin/sh", "-c", p->zCommand, NULL };
    parity_process_options opt;
    char zLine[CMD_LINE_MAX];
    memset(&opt, 0, sizeof opt);
    opt.azArgv = azArgv;
    opt.in = PARITY_PROCESS_PIPE;
    opt.out = PARITY_PROCESS_PIPE;
    opt.ownGroup = 1;
    if (parity_process_start(&p->worker, &opt, zErr, nErr) != 0) return -1;
    for (;;) {
        int rc = read_line(p, zLine, sizeof zLine, CMD_STARTUP_TIMEOUT);
        if (rc != PARITY_PROCESS_OK) {
            worker_stop(p, 1, rc == PARITY_PROCESS_EOF ? "exited before READY"
                                                       : "sent no READY in time", zErr, nErr);
            return -1;
        }
        if (strncmp(zLine, "SKIP ", 5) == 0) { add_skip(p, zLine); continue; }
        if (strncmp(zLine, "READY ", 6) == 0) {
            int version = atoi(zLine + 6);
            const char *zName = strchr(zLine + 6, ' ');
            if (version != CMD_PROTOCOL_VERSION) {
                worker_stop(p, 1, NULL, NULL, 0);
                snprintf(zErr, nErr, "worker speaks protocol %d, parityfuzz speaks %d", version,
                         CMD_PROTOCOL_VERSION);
                return -1;
            }
            snprintf(p->zWorkerName, sizeof p->zWorkerName, "%s", zName ? zName + 1 : "worker");
            if (!p->started) say_skips(p);
            p->started = 1;
            return 0;
        }
        /* anything else before READY is chatter (a library banner): ignore it */
    }
}

static int cmd_supports(parity_target *pT, const char *zOp)
{
    cmd_target *p = (cmd_target *)pT;
    size_t i;
    for (i = 0; i < p->nSkip; i++)
        if (skip_names(p->azSkip[i], zOp)) return 0;
    return 1;
}

static parity_run_status cmd_run(parity_target *pT, parity_side side, const parity_case *pCase,
                                 double *aOut, char *zErr, size_t nErr)
{
    cmd_target *p = (cmd_target *)pT;
    char zCase[128], zOutFile[128], zReq[400], zLine[CMD_LINE_MAX];
    const char *zSide = side == PARITY_SIDE_EAGER ? "eager" : "compiled";
    int rc;
    size_t len;

    if (!cmd_supports(pT, pCase->spec.zOp)) {
        snprintf(zErr, nErr, "worker skips %s", pCase->spec.zOp);
        return PARITY_RUN_SKIP;
    }
    if (p->worker.pid <= 0 && worker_start(p, zErr, nErr) != 0) return PARITY_RUN_CRASH;
    snprintf(zCase, sizeof zCase, "%s/case.h5", p->zDir);
    snprintf(zOutFile, sizeof zOutFile, "%s/out-%s.h5", p->zDir, zSide);
    unlink(zOutFile);
    if (parity_case_write(pCase, NULL, NULL, NULL, NULL, NULL, zCase, zErr, nErr) != 0) return PARITY_RUN_ERROR;
    len = (size_t)snprintf(zReq, sizeof zReq, "RUN %s %s %s\n", zSide, zCase, zOutFile);
    if (parity_process_write(&p->worker, zReq, len) != 0) {
        worker_stop(p, 1, "died", zErr, nErr);
        return PARITY_RUN_CRASH;
    }
    rc = read_line(p, zLine, sizeof zLine, p->caseTimeout);
    if (rc == PARITY_PROCESS_TIMEOUT) {
        worker_stop(p, 1, NULL, NULL, 0);
        snprintf(zErr, nErr, "worker did not answer within %g s: killed", p->caseTimeout);
        return PARITY_RUN_HANG;
    }
    if (rc == PARITY_PROCESS_EOF) {
        worker_stop(p, 1, "died", zErr, nErr);
        return PARITY_RUN_CRASH;
    }
    if (strcmp(zLine, "OK") == 0) {
        if (parity_case_read_output(pCase, zOutFile, aOut, zErr, nErr) != 0) return PARITY_RUN_ERROR;
        return PARITY_RUN_OK;
    }
    if (strncmp(zLine, "SKIP", 4) == 0) {
        snprintf(zErr, nErr, "worker skips the case:%s", zLine + 4);
        return PARITY_RUN_SKIP;
    }
    if (strncmp(zLine, "ERROR", 5) == 0) {
        snprintf(zErr, nErr, "worker error:%s", zLine + 5);
        return PARITY_RUN_ERROR;
    }
    snprintf(zErr, nErr, "worker broke the protocol: '%.200s'", zLine);
    worker_stop(p, 1, NULL, NULL, 0);
    return PARITY_RUN_ERROR;
}

static void remove_dir(const char *zDir)
{
    char zPath[160];
    static const char *const azFile[] = { "case.h5", "out-eager.h5", "out-compiled.h5" };
    size_t i;
    for (i = 0; i < sizeof azFile / sizeof azFile[0]; i++) {
        snprintf(zPath, sizeof zPath, "%s/%s", zDir, azFile[i]);
        unlink(zPath);
    }
    rmdir(zDir);
}

static void cmd_close(parity_target *pT)
{
    cmd_target *p = (cmd_target *)pT;
    size_t i;
    worker_stop(p, 0, NULL, NULL, 0);
    remove_dir(p->zDir);
    for (i = 0; i < p->nSkip; i++) free(p->azSkip[i]);
    free(p->zCommand);
    free(p);
}

parity_target *parity_target_cmd_open(const char *zCommand, double caseTimeout, char *zErr,
                                      size_t nErr)
{
    cmd_target *p = calloc(1, sizeof *p);
    const char *zTmp = getenv("TMPDIR");
    if (!p) { snprintf(zErr, nErr, "out of memory"); return NULL; }
    p->zCommand = strdup(zCommand);
    p->caseTimeout = caseTimeout > 0 ? caseTimeout : 30.0;
    snprintf(p->zDir, sizeof p->zDir, "%s/parityfuzz-XXXXXX",
             zTmp && strlen(zTmp) < 40 ? zTmp : "/tmp");
    if (!p->zCommand || !mkdtemp(p->zDir)) {
        snprintf(zErr, nErr, "cannot create a temporary folder: %s", strerror(errno));
        free(p->zCommand);
        free(p);
        return NULL;
    }
    p->base.zName = "cmd";
    p->base.xRun = cmd_run;
    p->base.xSupports = cmd_supports;
    p->base.xClose = cmd_close;
    if (worker_start(p, zErr, nErr) != 0) {
        remove_dir(p->zDir);
        free(p->zCommand);
        free(p);
        return NULL;
    }
    return &p->base;
}
