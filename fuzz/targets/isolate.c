/*
 * isolate.c - runs an in-process target's compiled side in a forked child, so that
 * a JIT kernel that faults (SIGILL, SIGSEGV, ...) becomes a finding of class crash instead
 * of the end of parityfuzz.
 *
 * A fork per run is affordable where runs are few: replaying stored repros, re-running the
 * case a campaign job died on, and minimizing it. A campaign's search does not fork per
 * case (it would also lose every JIT-compiled primitive with the child); campaign.c runs
 * its jobs under a supervisor instead and hands the case in flight to this wrapper.
 *
 * The child writes its status, message and output to a pipe and _exits; the parent reads
 * everything before it waits, so outputs of any size pass, and kills a child that has not
 * answered within the case timeout (a hang). The eager side (parity's own kernels) runs in
 * this process.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "fuzz/targets/targets.h"

typedef struct {
    parity_target base;
    parity_target *pInner;
    int ownInner;
    double timeout;           /* seconds a compiled run may take; 0: no limit */
} isolate_target;

typedef struct {
    int32_t status;           /* parity_run_status */
    uint32_t nMsg;            /* bytes of message that follow */
    uint64_t nOut;            /* doubles that follow the message (status OK only) */
} isolate_header;

static int write_all(int fd, const void *p, size_t n)
{
    const char *z = p;
    while (n > 0) {
        ssize_t k = write(fd, z, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        z += k;
        n -= (size_t)k;
    }
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Reads exactly n bytes before deadline (CLOCK_MONOTONIC seconds, 0: none); -1 on end of
 * file or error (the child died mid-write), -2 when the deadline passed. */
static int read_all(int fd, void *p, size_t n, double deadline)
{
    char *z = p;
    while (n > 0) {
        ssize_t k;
        if (deadline > 0) {
            struct pollfd pfd = { fd, POLLIN, 0 };
            double left = deadline - now_s();
            int rc;
            if (left <= 0) return -2;
            rc = poll(&pfd, 1, (int)(left * 1000) + 1);
            if (rc < 0 && errno == EINTR) continue;
            if (rc == 0) continue;                /* the loop sees the deadline */
            if (rc < 0) return -1;
        }
        k = read(fd, z, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        z += k;
        n -= (size_t)k;
    }
    return 0;
}

static void run_child(parity_target *pInner, const parity_case *pCase, double *aOut, int fd)
{
    char zMsg[PARITY_ERR_LEN] = "";
    isolate_header h;
    h.status = (int32_t)pInner->xRun(pInner, PARITY_SIDE_COMPILED, pCase, aOut, zMsg,
                                     sizeof zMsg);
    h.nMsg = (uint32_t)strlen(zMsg);
    h.nOut = h.status == PARITY_RUN_OK ? pCase->nOut : 0;
    if (write_all(fd, &h, sizeof h) != 0 || write_all(fd, zMsg, h.nMsg) != 0 ||
        write_all(fd, aOut, h.nOut * sizeof *aOut) != 0)
        _exit(3);
    _exit(0);
}

static parity_run_status isolate_run(parity_target *pT, parity_side side,
                                     const parity_case *pCase, double *aOut, char *zErr,
                                     size_t nErr)
{
    isolate_target *p = (isolate_target *)pT;
    isolate_header h;
    int aPipe[2], status = 0, got;
    pid_t pid;
    char zMsg[PARITY_ERR_LEN];
    double deadline;

    if (side == PARITY_SIDE_EAGER) return p->pInner->xRun(p->pInner, side, pCase, aOut, zErr, nErr);
    if (pipe(aPipe) != 0) {
        snprintf(zErr, nErr, "isolated run: pipe: %s", strerror(errno));
        return PARITY_RUN_ERROR;
    }
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        snprintf(zErr, nErr, "isolated run: fork: %s", strerror(errno));
        close(aPipe[0]);
        close(aPipe[1]);
        return PARITY_RUN_ERROR;
    }
    if (pid == 0) {
        close(aPipe[0]);
        run_child(p->pInner, pCase, aOut, aPipe[1]);
    }
    close(aPipe[1]);
    deadline = p->timeout > 0 ? now_s() + p->timeout : 0;
    got = read_all(aPipe[0], &h, sizeof h, deadline);
    if (got == 0 && (h.nMsg >= sizeof zMsg || (h.status == PARITY_RUN_OK && h.nOut != pCase->nOut)))
        got = -1;
    if (got == 0) got = read_all(aPipe[0], zMsg, h.nMsg, deadline);
    if (got == 0) got = read_all(aPipe[0], aOut, h.nOut * sizeof *aOut, deadline);
    close(aPipe[0]);
    if (got == -2) {
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        snprintf(zErr, nErr, "the compiled side did not finish within %g s: killed", p->timeout);
        return PARITY_RUN_HANG;
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        snprintf(zErr, nErr, "the compiled side died of signal %d (%s)", sig, strsignal(sig));
        return PARITY_RUN_CRASH;
    }
    if (got != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(zErr, nErr, "the compiled side's process ended without a result (exit %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return PARITY_RUN_CRASH;
    }
    zMsg[h.nMsg] = '\0';
    if (nErr) snprintf(zErr, nErr, "%s", zMsg);
    return (parity_run_status)h.status;
}

static int isolate_supports(parity_target *pT, const char *zOp)
{
    isolate_target *p = (isolate_target *)pT;
    return p->pInner->xSupports(p->pInner, zOp);
}

static int isolate_identity(parity_target *pT, const parity_case *pCase,
                            parity_case_identity *pId)
{
    isolate_target *p = (isolate_target *)pT;
    return p->pInner->xIdentity ? p->pInner->xIdentity(p->pInner, pCase, pId) : -1;
}

static void isolate_close(parity_target *pT)
{
    isolate_target *p = (isolate_target *)pT;
    if (p->ownInner) parity_target_close(p->pInner);
    free(p);
}

parity_target *parity_target_isolate(parity_target *pInner, int ownInner, double timeout,
                                     char *zErr, size_t nErr)
{
    isolate_target *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(zErr, nErr, "out of memory");
        if (ownInner) parity_target_close(pInner);
        return NULL;
    }
    p->base = *pInner;
    p->base.xRun = isolate_run;
    p->base.xSupports = isolate_supports;
    p->base.xIdentity = pInner->xIdentity ? isolate_identity : NULL;
    p->base.xClose = isolate_close;
    p->pInner = pInner;
    p->ownInner = ownInner;
    p->timeout = timeout;
    return &p->base;
}
