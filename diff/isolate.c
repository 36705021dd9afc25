/*
 * isolate.c - supervised child process for everything that touches libhdf5.
 *
 * The child shares one anonymous MAP_SHARED page with the parent: a heartbeat counter and
 * the name of the file being read. The parent polls every 50 ms; it never reads HDF5
 * itself, so whatever the file does to libhdf5 cannot take the parent down.
 *
 * Under AddressSanitizer RLIMIT_AS is not set: ASan reserves terabytes of shadow address
 * space and would fail at once.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "isolate.h"
#include "../formats/capture.h"

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

int parity_isolate_run(const char *zProgram, int (*xWork)(void *), void *pArg,
                       const parity_isolate_limits *pLimits)
{
    pid_t pid;
    int status = 0, rc = 2;
    double tStart, tLastBeat;
    unsigned long lastBeats = 0;

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
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "%s: cannot fork: %s\n", zProgram, strerror(errno));
        goto done;
    }
    if (pid == 0) {
        int code;
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

    tStart = tLastBeat = now_seconds();
    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        double t;
        unsigned long beats;
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
            fprintf(stderr, "%s: %s: %s; the file may be corrupt or hostile\n", zProgram,
                    current_file(),
                    stalled ? "no progress reading it (libhdf5 hangs on some corrupt files)"
                            : "time limit reached while reading it");
            goto done;
        }
        usleep(50 * 1000);
    }
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
    munmap(g_pShared, sizeof *g_pShared);
    g_pShared = NULL;
    return rc;
}
