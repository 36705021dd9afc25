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
 * The child sends its status, message and output through the supervisor's channel
 * (formats/process.h) and exits; the parent reads everything before it reaps, so outputs of
 * any size pass, and kills a child that has not answered within the case timeout (a
 * hang). The eager side (parity's own kernels) runs in this process.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/alloc.h"
#include "formats/process.h"
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

typedef struct {
    parity_target *pInner;
    const parity_case *pCase;
    double *aOut;
} isolate_work;

/* The child: runs the compiled side and sends header, message and output. */
static int run_child(void *pArg, const parity_process_child *pSelf)
{
    const isolate_work *pWork = pArg;
    char zMsg[PARITY_ERR_LEN] = "";
    isolate_header h;
    h.status = (int32_t)pWork->pInner->xRun(pWork->pInner, PARITY_SIDE_COMPILED, pWork->pCase,
                                            pWork->aOut, zMsg, sizeof zMsg);
    h.nMsg = (uint32_t)strlen(zMsg);
    h.nOut = h.status == PARITY_RUN_OK ? pWork->pCase->nOut : 0;
    if (parity_process_send(pSelf, &h, sizeof h) != 0 ||
        parity_process_send(pSelf, zMsg, h.nMsg) != 0 ||
        parity_process_send(pSelf, pWork->aOut, h.nOut * sizeof *pWork->aOut) != 0)
        return 3;
    return 0;
}

/* Reads the child's answer before deadline: OK, EOF (it died or sent nonsense) or TIMEOUT. */
static int read_answer(parity_process *pProc, const parity_case *pCase, isolate_header *pH,
                       char *zMsg, size_t nMsg, double *aOut, double deadline)
{
    int got = parity_process_read(pProc, pH, sizeof *pH, deadline);
    if (got == PARITY_PROCESS_OK &&
        (pH->nMsg >= nMsg || (pH->status == PARITY_RUN_OK && pH->nOut != pCase->nOut)))
        got = PARITY_PROCESS_EOF;
    if (got == PARITY_PROCESS_OK) got = parity_process_read(pProc, zMsg, pH->nMsg, deadline);
    if (got == PARITY_PROCESS_OK)
        got = parity_process_read(pProc, aOut, pH->nOut * sizeof *aOut, deadline);
    if (got == PARITY_PROCESS_OK) zMsg[pH->nMsg] = '\0';
    return got;
}

static parity_run_status isolate_run(parity_target *pT, parity_side side,
                                     const parity_case *pCase, double *aOut, char *zErr,
                                     size_t nErr)
{
    isolate_target *p = (isolate_target *)pT;
    isolate_work work;
    isolate_header h;
    parity_process proc;
    parity_process_options opt;
    parity_run_status st;
    char zMsg[PARITY_ERR_LEN], zWhy[PARITY_ERR_LEN];
    int got;

    if (side == PARITY_SIDE_EAGER) return p->pInner->xRun(p->pInner, side, pCase, aOut, zErr, nErr);
    work.pInner = p->pInner;
    work.pCase = pCase;
    work.aOut = aOut;
    memset(&opt, 0, sizeof opt);
    opt.xMain = run_child;
    opt.pArg = &work;
    opt.out = PARITY_PROCESS_PIPE;
    if (parity_process_start(&proc, &opt, zWhy, sizeof zWhy) != 0) {
        snprintf(zErr, nErr, "isolated run: %s", zWhy);
        return PARITY_RUN_ERROR;
    }
    got = read_answer(&proc, pCase, &h, zMsg, sizeof zMsg, aOut,
                      p->timeout > 0 ? parity_process_now() + p->timeout : 0);
    if (got == PARITY_PROCESS_TIMEOUT) {
        parity_process_close(&proc);
        snprintf(zErr, nErr, "the compiled side did not finish within %g s: killed", p->timeout);
        return PARITY_RUN_HANG;
    }
    parity_process_wait(&proc, 0, 0);
    if (proc.end == PARITY_PROCESS_SIGNALED) {
        snprintf(zErr, nErr, "the compiled side died of signal %d (%s)", proc.sig,
                 strsignal(proc.sig));
        st = PARITY_RUN_CRASH;
    } else if (got != PARITY_PROCESS_OK || proc.code != 0) {
        snprintf(zErr, nErr, "the compiled side's process ended without a result (exit %d)",
                 proc.code);
        st = PARITY_RUN_CRASH;
    } else {
        if (nErr) snprintf(zErr, nErr, "%s", zMsg);
        st = (parity_run_status)h.status;
    }
    parity_process_close(&proc);
    return st;
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
    isolate_target *p = parity_calloc(1, sizeof *p);
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
