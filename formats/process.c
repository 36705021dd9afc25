/*
 * process.c - the one supervisor of child processes (see process.h): fork, pipes, poll,
 * limits, heartbeat, kill and reap.
 *
 * The shared page is one anonymous MAP_SHARED mapping made before the fork: a beat counter,
 * then the caller's state. The parent never trusts the child to tell it anything else
 * about its health: a stall is a counter that stopped moving, a death is what waitpid says.
 *
 * Every pipe is made with O_CLOEXEC, so a program started later (another worker) inherits
 * no end of it; dup2 onto 0, 1, 2 clears the flag where the child needs the fd. The
 * parent's read ends are non-blocking and every read goes through poll, so no read can
 * outlive its deadline.
 *
 * Group reaping (reapGroup): a worker started through /bin/sh -c is the shell's child, and
 * torch's compile pool is the worker's. Killing the group and reaping the shell left the
 * rest to init, which reaped them: their CPU time never reached this process's
 * RUSAGE_CHILDREN, so a campaign that timed parityfuzz with wait4 counted 6.8 s of a 60 s
 * torch.compile run that used 39 s (measured with a subreaper around it). So this process
 * becomes a child subreaper (Linux prctl), orphans of its descendants come back to it, and
 * when the leader has ended the rest of its group is sent SIGKILL and reaped with
 * wait4(-group): nothing outlives a stopped worker, and what it cost is counted. A
 * descendant that left the group (setsid) is neither killed nor reaped here.
 */
#define _GNU_SOURCE 1   /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "formats/alloc.h"
#include "formats/process.h"

#if defined(__SANITIZE_ADDRESS__)
#define PROCESS_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PROCESS_UNDER_ASAN 1
#endif
#endif

extern char **environ;

typedef struct {
    volatile uint64_t nBeat;
    uint64_t aPad[7];              /* the caller's state starts on its own cache line */
} process_page;

/* In a function child: its own page (NULL in any other process). */
static process_page *g_pSelfPage;

#define POLL_SLICE_MS 50           /* how often a wait looks at the heartbeat and clock */

double parity_process_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void reset(parity_process *p)
{
    memset(p, 0, sizeof *p);
    p->fdIn = p->fdOut = p->fdPid = -1;
    p->aFdCapture[0] = p->aFdCapture[1] = p->aFdCapture[2] = -1;
}

static void close_fd(int *pFd)
{
    if (*pFd >= 0) close(*pFd);
    *pFd = -1;
}

/* ---- the child's side ----------------------------------------------------------------- */

static int write_all(int fd, const void *pBuf, size_t n)
{
    const char *z = pBuf;
    while (n > 0) {
        ssize_t k = write(fd, z, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        z += k;
        n -= (size_t)k;
    }
    return 0;
}

void parity_process_beat(void)
{
    if (g_pSelfPage) __atomic_add_fetch(&g_pSelfPage->nBeat, 1, __ATOMIC_RELAXED);
}

int parity_process_send(const parity_process_child *pSelf, const void *pBuf, size_t n)
{
    return pSelf->fdOut >= 0 ? write_all(pSelf->fdOut, pBuf, n) : -1;
}

/* The pipes of one start: [stream][0 read end, 1 write end]. */
typedef struct {
    int a[3][2];
} pipe_set;

static void close_pipes(pipe_set *pPipes)
{
    int i;
    for (i = 0; i < 3; i++) {
        close_fd(&pPipes->a[i][0]);
        close_fd(&pPipes->a[i][1]);
    }
}

/* Connects fd (0, 1 or 2) as asked; the child end of its pipe, if any, is iEnd. */
static void child_stream(int fd, parity_process_stream how, int iEnd)
{
    if (how == PARITY_PROCESS_NULL) {
        int fdNull = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (fdNull >= 0 && fdNull != fd) {
            dup2(fdNull, fd);
            close(fdNull);
        }
    } else if (how != PARITY_PROCESS_INHERIT && iEnd >= 0) {
        dup2(iEnd, fd);
    }
}

/* In the child after fork: streams, group, limits, then the function or the program. */
static void run_child(const parity_process_options *pOpt, pipe_set *pPipes, void *pPage)
{
    parity_process_child self;
    int code, isFunction = pOpt->xMain != NULL;

    if (pOpt->ownGroup) setpgid(0, 0);
    child_stream(0, pOpt->in, pPipes->a[0][0]);
    /* a function's PIPE is a channel of its own; its stdout stays the parent's */
    if (!(isFunction && pOpt->out == PARITY_PROCESS_PIPE))
        child_stream(1, pOpt->out, pPipes->a[1][1]);
    child_stream(2, pOpt->err, pPipes->a[2][1]);
    self.fdOut = isFunction && pOpt->out == PARITY_PROCESS_PIPE ? pPipes->a[1][1] : -1;
    if (self.fdOut >= 0) pPipes->a[1][1] = -1;          /* kept open for the function */
    close_pipes(pPipes);
    /* glibc's fatal messages ("double free or corruption") go to /dev/tty unless this is
     * set; into a captured stderr they can be judged with the rest */
    if (pOpt->err == PARITY_PROCESS_CAPTURE) setenv("LIBC_FATAL_STDERR_", "1", 1);
#ifndef PROCESS_UNDER_ASAN
    if (pOpt->maxMemoryMiB > 0) {
        struct rlimit lim;
        lim.rlim_cur = lim.rlim_max = (rlim_t)pOpt->maxMemoryMiB << 20;
        setrlimit(RLIMIT_AS, &lim);
    }
#endif
    if (!isFunction) {
        execve(pOpt->azArgv[0], (char *const *)pOpt->azArgv,
               pOpt->azEnv ? pOpt->azEnv : environ);
        _exit(127);
    }
    g_pSelfPage = pPage;
    self.pState = (char *)pPage + sizeof(process_page);
    code = pOpt->xMain(pOpt->pArg, &self);
    fflush(stdout);
    fflush(stderr);
    _exit(code & 0xff);
}

/* ---- starting ------------------------------------------------------------------------- */

static int make_pipe(int aFd[2], char *zErr, size_t nErr)
{
    if (pipe2(aFd, O_CLOEXEC) == 0) return 0;
    snprintf(zErr, nErr, "cannot make a pipe: %s", strerror(errno));
    aFd[0] = aFd[1] = -1;
    return -1;
}

static int check_options(const parity_process_options *pOpt, char *zErr, size_t nErr)
{
    if ((pOpt->xMain != NULL) == (pOpt->azArgv != NULL)) {
        snprintf(zErr, nErr, "a child is a function or a program (one of xMain, azArgv)");
        return -1;
    }
    if (pOpt->in == PARITY_PROCESS_CAPTURE || pOpt->err == PARITY_PROCESS_PIPE ||
        (pOpt->xMain && pOpt->out == PARITY_PROCESS_CAPTURE)) {
        snprintf(zErr, nErr, "unsupported stream setting for a child");
        return -1;
    }
    return 0;
}

int parity_process_start(parity_process *p, const parity_process_options *pOpt, char *zErr,
                         size_t nErr)
{
    pipe_set pipes;
    parity_process_stream aHow[3];
    int i;
    pid_t pid;

    reset(p);
    memset(&pipes, -1, sizeof pipes);
    if (check_options(pOpt, zErr, nErr) != 0) return -1;
    aHow[0] = pOpt->in;
    aHow[1] = pOpt->out;
    aHow[2] = pOpt->err;
    p->nPage = sizeof(process_page) + pOpt->nState;
    p->pPage = mmap(NULL, p->nPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p->pPage == MAP_FAILED) {
        snprintf(zErr, nErr, "cannot map shared memory: %s", strerror(errno));
        reset(p);
        return -1;
    }
    memset(p->pPage, 0, p->nPage);
    for (i = 0; i < 3; i++)
        if ((aHow[i] == PARITY_PROCESS_PIPE || aHow[i] == PARITY_PROCESS_CAPTURE) &&
            make_pipe(pipes.a[i], zErr, nErr) != 0)
            goto fail;
    if (pOpt->in == PARITY_PROCESS_PIPE) signal(SIGPIPE, SIG_IGN);
    fflush(NULL);    /* what is buffered now belongs to the parent alone */
    pid = fork();
    if (pid < 0) {
        snprintf(zErr, nErr, "cannot fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0) run_child(pOpt, &pipes, p->pPage);   /* does not return */

    p->pid = pid;
    p->end = PARITY_PROCESS_RUNNING;
    p->ownGroup = pOpt->ownGroup;
    p->reapGroup = pOpt->ownGroup && pOpt->reapGroup;
#if defined(__linux__) && defined(PR_SET_CHILD_SUBREAPER)
    if (p->reapGroup) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);   /* once is enough; harmless again */
#endif
    p->nCaptureMax = pOpt->nCaptureMax ? pOpt->nCaptureMax : PARITY_PROCESS_CAPTURE_MAX;
    p->tStart = parity_process_now();
    if (pOpt->ownGroup) setpgid(pid, pid);   /* here too, so kill(-pid) works however the race goes */
#ifdef SYS_pidfd_open
    /* a wait wakes the moment the child ends (Linux 5.3 and later; else it looks every
     * POLL_SLICE_MS) */
    p->fdPid = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
    p->fdIn = pipes.a[0][1];
    pipes.a[0][1] = -1;
    for (i = 1; i < 3; i++) {
        int fd = pipes.a[i][0];
        if (fd < 0) continue;
        pipes.a[i][0] = -1;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        if (aHow[i] == PARITY_PROCESS_PIPE) p->fdOut = fd;
        else p->aFdCapture[i] = fd;
    }
    close_pipes(&pipes);     /* the child's ends */
    return 0;
fail:
    close_pipes(&pipes);
    munmap(p->pPage, p->nPage);
    reset(p);
    return -1;
}

void *parity_process_state(const parity_process *p)
{
    return p->pPage ? (char *)p->pPage + sizeof(process_page) : NULL;
}

uint64_t parity_process_beats(const parity_process *p)
{
    return p->pPage ? __atomic_load_n(&((process_page *)p->pPage)->nBeat, __ATOMIC_RELAXED) : 0;
}

/* ---- talking to it -------------------------------------------------------------------- */

/* A zeroed struct (never started) has fds of 0: every use of an fd checks pid first. */

int parity_process_write(parity_process *p, const void *pBuf, size_t n)
{
    return p->pid > 0 && p->fdIn >= 0 ? write_all(p->fdIn, pBuf, n) : -1;
}

static void close_in(parity_process *p)
{
    if (p->pid > 0) close_fd(&p->fdIn);
}

/* Moves what captured stream i holds now into its text; at end of file closes it. */
static void collect(parity_process *p, int i)
{
    char aChunk[4096];
    parity_process_text *pT = &p->capture[i];
    for (;;) {
        ssize_t n = read(p->aFdCapture[i], aChunk, sizeof aChunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (n <= 0) {
            close_fd(&p->aFdCapture[i]);
            return;
        }
        if (pT->n + (size_t)n + 1 > pT->nAlloc && pT->n + (size_t)n <= p->nCaptureMax) {
            size_t nNew = pT->nAlloc ? pT->nAlloc : 8192;
            char *z;
            while (nNew < pT->n + (size_t)n + 1) nNew *= 2;
            z = parity_realloc(pT->z, nNew);
            if (z) {
                pT->z = z;
                pT->nAlloc = nNew;
            }
        }
        /* once a chunk did not fit, nothing more is kept: the capture stays a prefix */
        if (!pT->truncated && pT->n + (size_t)n + 1 <= pT->nAlloc) {
            memcpy(pT->z + pT->n, aChunk, (size_t)n);
            pT->n += (size_t)n;
            pT->z[pT->n] = '\0';
        } else {
            pT->truncated = 1;     /* drained all the same, so the child never blocks */
        }
    }
}

/* Polls fdOut (when wantOut; else the child's end) and the captured streams for up to
 * timeoutMs, collecting the captures. Returns 1 when fdOut is readable or hung up, 0 when
 * not, -1 on a poll error. */
static int pump(parity_process *p, int wantOut, int timeoutMs)
{
    struct pollfd aPfd[3];
    int aWhich[3], nPfd = 0, i, rc, outReady = 0;
    if (wantOut && p->fdOut >= 0) {
        aPfd[nPfd].fd = p->fdOut;
        aPfd[nPfd].events = POLLIN;
        aWhich[nPfd++] = 0;
    } else if (!wantOut && p->fdPid >= 0 && p->end == PARITY_PROCESS_RUNNING) {
        aPfd[nPfd].fd = p->fdPid;
        aPfd[nPfd].events = POLLIN;
        aWhich[nPfd++] = -1;
    }
    for (i = 1; i < 3; i++) {
        if (p->aFdCapture[i] < 0) continue;
        aPfd[nPfd].fd = p->aFdCapture[i];
        aPfd[nPfd].events = POLLIN;
        aWhich[nPfd++] = i;
    }
    if (nPfd == 0) {
        if (timeoutMs > 0) usleep((useconds_t)timeoutMs * 1000);
        return 0;
    }
    rc = poll(aPfd, (nfds_t)nPfd, timeoutMs);
    if (rc < 0) return errno == EINTR ? 0 : -1;
    for (i = 0; i < nPfd; i++) {
        if (!(aPfd[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        if (aWhich[i] == 0) outReady = 1;
        else if (aWhich[i] > 0) collect(p, aWhich[i]);
    }
    return outReady;
}

/* Milliseconds to wait for deadline (0: none), at most capMs; 0 when it has passed. */
static int wait_ms(double deadline, int capMs)
{
    double left;
    if (deadline <= 0) return capMs;
    left = deadline - parity_process_now();
    if (left <= 0) return 0;
    return left * 1000 < capMs ? (int)(left * 1000) + 1 : capMs;
}

/* Reads what fdOut holds now into aBuf. OK (maybe nothing new), EOF. */
static int fill(parity_process *p)
{
    for (;;) {
        ssize_t n;
        if (p->nBuf == sizeof p->aBuf) return PARITY_PROCESS_OK;
        n = read(p->fdOut, p->aBuf + p->nBuf, sizeof p->aBuf - p->nBuf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return PARITY_PROCESS_OK;
        if (n <= 0) {
            close_fd(&p->fdOut);
            return PARITY_PROCESS_EOF;
        }
        p->nBuf += (size_t)n;
    }
}

/* Waits until fdOut is readable; OK, EOF (no fdOut) or TIMEOUT. */
static int await_out(parity_process *p, double deadline)
{
    for (;;) {
        int ms, rc;
        if (p->pid <= 0 || p->fdOut < 0) return PARITY_PROCESS_EOF;
        ms = wait_ms(deadline, 1000);
        if (ms == 0) return PARITY_PROCESS_TIMEOUT;
        rc = pump(p, 1, ms);
        if (rc < 0) return PARITY_PROCESS_EOF;
        if (rc > 0) return PARITY_PROCESS_OK;
    }
}

int parity_process_read(parity_process *p, void *pBuf, size_t n, double deadline)
{
    char *z = pBuf;
    for (;;) {
        size_t nTake = p->nBuf < n ? p->nBuf : n;
        int rc;
        memcpy(z, p->aBuf, nTake);
        memmove(p->aBuf, p->aBuf + nTake, p->nBuf - nTake);
        p->nBuf -= nTake;
        z += nTake;
        n -= nTake;
        if (n == 0) return PARITY_PROCESS_OK;
        if ((rc = await_out(p, deadline)) != PARITY_PROCESS_OK) return rc;
        if (fill(p) == PARITY_PROCESS_EOF && p->nBuf == 0) return PARITY_PROCESS_EOF;
    }
}

int parity_process_read_line(parity_process *p, char *zLine, size_t nLine, double deadline)
{
    for (;;) {
        char *pNl = memchr(p->aBuf, '\n', p->nBuf);
        int rc;
        if (p->skipLine) {            /* the tail of a line already returned, cut */
            size_t nDrop = pNl ? (size_t)(pNl - p->aBuf) + 1 : p->nBuf;
            memmove(p->aBuf, p->aBuf + nDrop, p->nBuf - nDrop);
            p->nBuf -= nDrop;
            if (pNl) {
                p->skipLine = 0;
                continue;
            }
        } else if (pNl) {
            size_t len = (size_t)(pNl - p->aBuf);
            size_t nCopy = len < nLine - 1 ? len : nLine - 1;
            memcpy(zLine, p->aBuf, nCopy);
            zLine[nCopy] = '\0';
            if (nCopy && zLine[nCopy - 1] == '\r') zLine[nCopy - 1] = '\0';
            memmove(p->aBuf, pNl + 1, p->nBuf - len - 1);
            p->nBuf -= len + 1;
            return PARITY_PROCESS_OK;
        }
        if (p->nBuf == sizeof p->aBuf) {
            /* an overlong line: what fits now, its tail dropped as it arrives */
            size_t nCopy = nLine - 1 < p->nBuf ? nLine - 1 : p->nBuf;
            memcpy(zLine, p->aBuf, nCopy);
            zLine[nCopy] = '\0';
            p->nBuf = 0;
            p->skipLine = 1;
            return PARITY_PROCESS_OK;
        }
        if ((rc = await_out(p, deadline)) != PARITY_PROCESS_OK) return rc;
        if (fill(p) == PARITY_PROCESS_EOF && !memchr(p->aBuf, '\n', p->nBuf))
            return PARITY_PROCESS_EOF;
    }
}

int parity_process_poll(parity_process *const *apProc, size_t n, int timeoutMs)
{
    struct pollfd aPfd[256];
    size_t aMap[256], nPfd = 0, i;
    int rc, nReady = 0;
    for (i = 0; i < n; i++) {
        parity_process *p = apProc[i];
        p->ready = 0;
        if (p->pid <= 0) continue;
        if (p->fdOut >= 0 && p->nBuf > 0) {
            p->ready = 1;                /* bytes already read wait to be consumed */
            nReady++;
        }
        if (p->fdOut < 0 || nPfd == sizeof aPfd / sizeof aPfd[0]) continue;
        aPfd[nPfd].fd = p->fdOut;
        aPfd[nPfd].events = POLLIN;
        aMap[nPfd++] = i;
    }
    if (nPfd == 0 || nReady > 0) return nReady;
    rc = poll(aPfd, (nfds_t)nPfd, timeoutMs);
    if (rc < 0) return errno == EINTR ? 0 : -1;
    for (i = 0; i < nPfd; i++) {
        if (!(aPfd[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        apProc[aMap[i]]->ready = 1;
        nReady++;
    }
    return nReady;
}

/* ---- its end -------------------------------------------------------------------------- */

static void set_end(parity_process *p, int status, const struct rusage *pRu)
{
    p->maxRssKiB = pRu->ru_maxrss;   /* Linux: KiB, the largest of it and its reaped children */
    if (WIFEXITED(status)) {
        p->end = PARITY_PROCESS_EXITED;
        p->code = WEXITSTATUS(status);
    } else {
        p->end = PARITY_PROCESS_SIGNALED;
        p->sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
}

/* Group reaping (file comment): once the leader is reaped, SIGKILL to what is left of its
 * group and wait4(-group) until none is left, for at most GROUP_REAP_S (members that are
 * not this process's children, without a subreaper, are left to whoever reaps them). */
#define GROUP_REAP_S 1.0
static void reap_group(parity_process *p)
{
    double t0;
    if (!p->reapGroup || p->pid <= 0) return;
    t0 = parity_process_now();
    kill(-p->pid, SIGKILL);
    for (;;) {
        pid_t got;
        do got = wait4(-p->pid, NULL, WNOHANG, NULL); while (got > 0 || (got < 0 && errno == EINTR));
        if (kill(-p->pid, 0) != 0 || parity_process_now() - t0 >= GROUP_REAP_S) return;
        poll(NULL, 0, 2);     /* a killed member still exiting, or not yet handed to us */
    }
}

/* Collects what the captured streams still hold (the child has ended; a grandchild may
 * keep a pipe open, so only what is there now). */
static void collect_rest(parity_process *p)
{
    int i;
    for (i = 1; i < 3; i++)
        if (p->aFdCapture[i] >= 0) collect(p, i);
}

static int try_reap(parity_process *p)
{
    struct rusage ru;
    int status;
    pid_t got;
    if (p->pid <= 0 || p->end != PARITY_PROCESS_RUNNING) return 1;
    do got = wait4(p->pid, &status, WNOHANG, &ru); while (got < 0 && errno == EINTR);
    if (got == 0) return 0;
    if (got == p->pid) set_end(p, status, &ru);
    else p->end = PARITY_PROCESS_SIGNALED;      /* lost (ECHILD): as good as dead */
    reap_group(p);
    collect_rest(p);
    return 1;
}

static void reap_blocking(parity_process *p)
{
    struct rusage ru;
    int status;
    pid_t got;
    do got = wait4(p->pid, &status, 0, &ru); while (got < 0 && errno == EINTR);
    if (got == p->pid) set_end(p, status, &ru);
    else p->end = PARITY_PROCESS_SIGNALED;
    reap_group(p);
    collect_rest(p);
}

static void send_kill(parity_process *p)
{
    if (p->ownGroup) kill(-p->pid, SIGKILL);
    kill(p->pid, SIGKILL);
}

void parity_process_kill(parity_process *p)
{
    if (p->pid <= 0 || p->end != PARITY_PROCESS_RUNNING) return;
    send_kill(p);
    reap_blocking(p);
}

parity_process_end parity_process_wait(parity_process *p, double stallSeconds,
                                       double timeoutSeconds)
{
    uint64_t lastBeats = parity_process_beats(p);
    double tLastBeat = parity_process_now();
    if (p->pid <= 0) return p->end;
    if (!stallSeconds && !timeoutSeconds && p->aFdCapture[1] < 0 && p->aFdCapture[2] < 0) {
        if (p->end == PARITY_PROCESS_RUNNING) reap_blocking(p);
        return p->end;
    }
    while (!try_reap(p)) {
        double t = parity_process_now();
        uint64_t beats = parity_process_beats(p);
        if (beats != lastBeats) {
            lastBeats = beats;
            tLastBeat = t;
        }
        if ((stallSeconds > 0 && t - tLastBeat > stallSeconds) ||
            (timeoutSeconds > 0 && t - p->tStart > timeoutSeconds)) {
            int stalled = stallSeconds > 0 && t - tLastBeat > stallSeconds;
            send_kill(p);
            reap_blocking(p);
            p->end = stalled ? PARITY_PROCESS_STALLED : PARITY_PROCESS_TIMED_OUT;
            p->sig = SIGKILL;
            return p->end;
        }
        pump(p, 0, POLL_SLICE_MS);     /* wakes early when the child writes */
    }
    return p->end;
}

parity_process_end parity_process_stop(parity_process *p, double graceSeconds)
{
    double t0 = parity_process_now();
    if (p->pid <= 0) return p->end;
    close_in(p);
    while (!try_reap(p)) {
        if (parity_process_now() - t0 >= graceSeconds) {
            parity_process_kill(p);
            break;
        }
        pump(p, 0, 10);
    }
    return p->end;
}

void parity_process_close(parity_process *p)
{
    int i;
    if (p->pid <= 0) return;
    if (p->end == PARITY_PROCESS_RUNNING) parity_process_kill(p);
    close_fd(&p->fdIn);
    close_fd(&p->fdOut);
    close_fd(&p->fdPid);
    for (i = 0; i < 3; i++) {
        close_fd(&p->aFdCapture[i]);
        free(p->capture[i].z);
    }
    if (p->pPage) munmap(p->pPage, p->nPage);
    reset(p);
}

int parity_process_run(const char *const *azArgv, char *const *azEnv, char **pzOut,
                       char *zErr, size_t nErr)
{
    parity_process proc;
    parity_process_options opt;
    int code;
    memset(&opt, 0, sizeof opt);
    opt.azArgv = azArgv;
    opt.azEnv = azEnv;
    opt.in = PARITY_PROCESS_NULL;
    opt.out = pzOut ? PARITY_PROCESS_CAPTURE : PARITY_PROCESS_NULL;
    opt.err = PARITY_PROCESS_CAPTURE;
    opt.nCaptureMax = 64u << 20;
    opt.ownGroup = 1;
    if (parity_process_start(&proc, &opt, zErr, nErr) != 0) return -1;
    parity_process_wait(&proc, 0, 0);
    if (proc.end != PARITY_PROCESS_EXITED) {
        snprintf(zErr, nErr, "%s died (signal %d)", azArgv[0], proc.sig);
        parity_process_close(&proc);
        return -1;
    }
    code = proc.code;
    if (code != 0 && code != 1 && code != 125 && proc.capture[2].z)
        snprintf(zErr, nErr, "%.*s", (int)strcspn(proc.capture[2].z, "\n"), proc.capture[2].z);
    if (pzOut) {
        *pzOut = proc.capture[1].z ? strdup(proc.capture[1].z) : strdup("");
    }
    parity_process_close(&proc);
    return code;
}
