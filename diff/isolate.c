/*
 * isolate.c - supervised child process for everything that touches libhdf5.
 *
 * The child shares one anonymous MAP_SHARED page with the parent: a heartbeat counter and
 * the name of the file being read. The parent polls every 50 ms; it never reads HDF5
 * itself, so whatever the file does to libhdf5 cannot take the parent down.
 *
 * The child's stderr is a pipe the parent collects. When the child ends normally its
 * messages are passed on as they were; when it dies, what a corrupted libhdf5 or glibc
 * wrote there ("double free or corruption", ...) is dropped and one line of ours stands
 * in for it, so the user always gets one clear line. PARITY_KEEP_CHILD_STDERR=1 passes
 * the dead child's output on too (debugging, and sanitizer runs).
 *
 * Under AddressSanitizer RLIMIT_AS is not set: ASan reserves terabytes of shadow address
 * space and would fail at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "diff/isolate.h"
#include "formats/capture.h"

#if defined(__SANITIZE_ADDRESS__)
#define PARITY_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PARITY_UNDER_ASAN 1
#endif
#endif

typedef struct {
    volatile unsigned long beats;
    char zCurrent[1024];
} shared_state;

static shared_state *g_pShared;

void parity_isolate_beat(void)
{
    if (g_pShared) __atomic_add_fetch(&g_pShared->beats, 1, __ATOMIC_RELAXED);
}

void parity_isolate_set_current(const char *zFile)
{
    if (!g_pShared) return;
    snprintf(g_pShared->zCurrent, sizeof g_pShared->zCurrent, "%s", zFile ? zFile : "");
    parity_isolate_beat();
}

typedef struct {
    char *z;
    size_t n, nAlloc;
} text_buf;

#define CHILD_STDERR_MAX (1u << 20)   /* beyond this the child's messages are cut */

/* Moves what the pipe holds now into pBuf; returns 0 at end of file. */
static int drain_pipe(int fd, text_buf *pBuf)
{
    char aChunk[4096];
    for (;;) {
        ssize_t n = read(fd, aChunk, sizeof aChunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return 1;            /* EAGAIN: nothing more for now */
        if (n == 0) return 0;
        if (pBuf->n + (size_t)n > pBuf->nAlloc && pBuf->n + (size_t)n <= CHILD_STDERR_MAX) {
            size_t nNew = pBuf->nAlloc ? pBuf->nAlloc * 2 : 8192;
            char *z;
            while (nNew < pBuf->n + (size_t)n) nNew *= 2;
            z = realloc(pBuf->z, nNew);
            if (!z) continue;
            pBuf->z = z;
            pBuf->nAlloc = nNew;
        }
        if (pBuf->n + (size_t)n <= pBuf->nAlloc) {
            memcpy(pBuf->z + pBuf->n, aChunk, (size_t)n);
            pBuf->n += (size_t)n;
        }
    }
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *current_file(void)
{
    return g_pShared->zCurrent[0] ? g_pShared->zCurrent : "the input";
}

/* Passes the child's stderr on, unless it died (see the file comment). Empties pBuf. */
static void flush_child_text(text_buf *pBuf, int died)
{
    const char *zKeep = getenv("PARITY_KEEP_CHILD_STDERR");
    if (pBuf->n > 0 && (!died || (zKeep && strcmp(zKeep, "1") == 0))) {
        fwrite(pBuf->z, 1, pBuf->n, stderr);
        fflush(stderr);
    }
    pBuf->n = 0;
}

int parity_isolate_run(const char *zProgram, int (*xWork)(void *), void *pArg,
                       const parity_isolate_limits *pLimits)
{
    pid_t pid;
    int status = 0, rc = 2, aPipe[2] = { -1, -1 }, pipeOpen = 0, died = 0;
    double tStart, tLastBeat;
    unsigned long lastBeats = 0;
    text_buf errText = { NULL, 0, 0 };

    g_pShared = mmap(NULL, sizeof(shared_state), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_pShared == MAP_FAILED) {
        g_pShared = NULL;
        fprintf(stderr, "%s: cannot map shared memory: %s\n", zProgram, strerror(errno));
        return 2;
    }
    memset(g_pShared, 0, sizeof *g_pShared);
    fflush(stdout);
    fflush(stderr);
    if (pipe(aPipe) == 0) pipeOpen = 1;
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "%s: cannot fork: %s\n", zProgram, strerror(errno));
        goto done;
    }
    if (pid == 0) {
        int code;
        if (pipeOpen) {
            dup2(aPipe[1], STDERR_FILENO);
            close(aPipe[0]);
            close(aPipe[1]);
        }
        /* glibc's fatal messages ("double free or corruption") go to /dev/tty unless this
         * is set; into the pipe they can be dropped with the rest. */
        setenv("LIBC_FATAL_STDERR_", "1", 1);
#ifndef PARITY_UNDER_ASAN
        if (pLimits->maxMemoryMiB > 0) {
            struct rlimit lim;
            lim.rlim_cur = lim.rlim_max = (rlim_t)pLimits->maxMemoryMiB << 20;
            setrlimit(RLIMIT_AS, &lim);
        }
#endif
        parity_capture_set_heartbeat(parity_isolate_beat);
        code = xWork(pArg);
        fflush(stdout);
        fflush(stderr);
        _exit(code & 0xff);
    }

    if (pipeOpen) {
        close(aPipe[1]);
        aPipe[1] = -1;
        fcntl(aPipe[0], F_SETFL, O_NONBLOCK);
    }
    tStart = tLastBeat = now_seconds();
    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        double t;
        unsigned long beats;
        if (pipeOpen && drain_pipe(aPipe[0], &errText) == 0) {
            close(aPipe[0]);
            aPipe[0] = -1;
            pipeOpen = 0;
        }
        if (got == pid) break;
        if (got < 0 && errno != EINTR) {
            fprintf(stderr, "%s: lost the worker process: %s\n", zProgram, strerror(errno));
            goto done;
        }
        t = now_seconds();
        beats = __atomic_load_n(&g_pShared->beats, __ATOMIC_RELAXED);
        if (beats != lastBeats) {
            lastBeats = beats;
            tLastBeat = t;
        }
        if ((pLimits->stallSeconds && t - tLastBeat > pLimits->stallSeconds) ||
            (pLimits->timeoutSeconds && t - tStart > pLimits->timeoutSeconds)) {
            int stalled = pLimits->stallSeconds && t - tLastBeat > pLimits->stallSeconds;
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            died = 1;
            flush_child_text(&errText, died);
            fprintf(stderr, "%s: %s: %s; the file may be corrupt or hostile\n", zProgram,
                    current_file(),
                    stalled ? "no progress reading it (libhdf5 hangs on some corrupt files)"
                            : "time limit reached while reading it");
            goto done;
        }
        if (pipeOpen) {
            struct pollfd pfd = { aPipe[0], POLLIN, 0 };
            poll(&pfd, 1, 50);   /* wakes early when the child writes */
        } else {
            usleep(50 * 1000);
        }
    }
    if (pipeOpen) drain_pipe(aPipe[0], &errText);
    died = !WIFEXITED(status);
    flush_child_text(&errText, died && WTERMSIG(status) != SIGPIPE);
    if (WIFEXITED(status)) {
        rc = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE) {
        /* The reader of our output went away (| head): die the same quiet death. */
        munmap(g_pShared, sizeof *g_pShared);
        g_pShared = NULL;
        signal(SIGPIPE, SIG_DFL);
        raise(SIGPIPE);
        return 2;
    } else if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        fprintf(stderr, "%s: %s: reading it crashed libhdf5 (%s); the file is corrupt or hostile\n",
                zProgram, current_file(), sig == SIGKILL ? "killed, probably out of memory" : strsignal(sig));
        rc = 2;
    }
done:
    if (aPipe[0] >= 0) close(aPipe[0]);
    if (aPipe[1] >= 0) close(aPipe[1]);
    free(errText.z);
    munmap(g_pShared, sizeof *g_pShared);
    g_pShared = NULL;
    return rc;
}
