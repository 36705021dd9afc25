/*
 * process.h - the one supervisor of child processes: fork, pipes, limits, heartbeat, kill
 * and reap, for every caller (the way libuv has one process API).
 *
 * Why it lives in formats/: formats/ is the bottom layer every module links, and the
 * supervisor's first user isolates libhdf5 (paritydiff reads captures in a child, because
 * libhdf5 can crash or hang on a corrupt file). The fuzzer's users came after it: the
 * isolated target (a JIT kernel that faults), campaign jobs, cmd workers and replay's probe
 * read. It knows nothing of captures or cases.
 *
 * A child is a function run in a forked copy of this process (xMain), or a program
 * (azArgv, execve'd). Per child the caller chooses:
 *   - its streams: stdin from a pipe the parent writes, or /dev/null; stdout (a program's)
 *     or a channel (a function's: pSelf->fdOut, so that a library printing to stdout in
 *     the child cannot corrupt it) through a pipe the parent reads; stdout and stderr
 *     captured into memory (by default at most PARITY_PROCESS_CAPTURE_MAX bytes each); or
 *     the parent's own (the default);
 *   - a process group of its own, so that a kill reaches what it started (a shell's child);
 *   - an address-space limit (RLIMIT_AS; not under AddressSanitizer, whose shadow memory
 *     needs terabytes of address space);
 *   - a shared anonymous page: a heartbeat counter plus nState bytes of fixed state whose
 *     layout the caller defines (the file being read, a job's counters and the case in
 *     flight). The child writes it, the parent reads it, and it outlives the child's death.
 * The parent reads and writes with deadlines, waits under a stall and a total time limit,
 * kills (the process, or its group) and reaps. Captured streams are collected whenever the
 * parent reads, polls or waits, so a chatty child never blocks on a full pipe.
 *
 * A function child returns its exit status from xMain; the supervisor flushes stdio and
 * leaves by _exit (the one place a forked child exits: atexit handlers and stdio buffers
 * belong to the parent). Nothing here prints. Errors: 0 or -1 with one line in zErr.
 * SIGPIPE: starting a child with a stdin pipe sets SIGPIPE to SIG_IGN in this process, so
 * that writing to a child that died is an error (EPIPE), not the parent's death.
 */
#ifndef PARITY_PROCESS_H
#define PARITY_PROCESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PARITY_PROCESS_CAPTURE_MAX (1u << 20)   /* by default, beyond this a capture is cut */
#define PARITY_PROCESS_LINE_MAX 8192            /* longest line parity_process_read_line keeps */

/* What a child's stream is connected to. */
typedef enum {
    PARITY_PROCESS_INHERIT,   /* the parent's own (0: the default) */
    PARITY_PROCESS_NULL,      /* /dev/null */
    PARITY_PROCESS_PIPE,      /* stdin: the parent writes it; stdout: the parent reads it */
    PARITY_PROCESS_CAPTURE    /* stdout, stderr: collected in memory (capture[1], capture[2]) */
} parity_process_stream;

/* What a function child receives. */
typedef struct {
    void *pState;             /* the shared state (nState bytes, zeroed at start) */
    int fdOut;                /* the channel to the parent (stdout PIPE), else -1 */
} parity_process_child;

typedef struct {
    /* the child: a function, or a program */
    int (*xMain)(void *pArg, const parity_process_child *pSelf);  /* returns the exit status */
    void *pArg;
    const char *const *azArgv;    /* azArgv[0] is the path; NULL-terminated */
    char *const *azEnv;           /* the program's environment, used as given; NULL: this
                                   * process's, plus LIBC_FATAL_STDERR_=1 where stderr is
                                   * captured (glibc's fatal messages then reach it) */
    /* its streams */
    parity_process_stream in;     /* INHERIT, NULL or PIPE */
    parity_process_stream out;    /* INHERIT, NULL, PIPE or CAPTURE (a function: no CAPTURE,
                                   * and its PIPE is the channel pSelf->fdOut) */
    parity_process_stream err;    /* INHERIT, NULL or CAPTURE */
    /* its limits and shared state */
    int ownGroup;                 /* 1: it leads a process group of its own */
    int reapGroup;                /* with ownGroup, 1: once it ends, what it left in its group
                                   * is killed and reaped here (process.c, "Group reaping") */
    size_t maxMemoryMiB;          /* RLIMIT_AS (0: none; ignored under ASan) */
    size_t nState;                /* bytes of shared state beside the heartbeat */
    size_t nCaptureMax;           /* bytes kept per captured stream (0: CAPTURE_MAX) */
} parity_process_options;

/* How a child ended. */
typedef enum {
    PARITY_PROCESS_RUNNING,       /* not reaped yet */
    PARITY_PROCESS_EXITED,        /* exit status in code */
    PARITY_PROCESS_SIGNALED,      /* died of signal sig (SIGKILL when parity_process_kill) */
    PARITY_PROCESS_STALLED,       /* killed by parity_process_wait: no heartbeat in time */
    PARITY_PROCESS_TIMED_OUT      /* killed by parity_process_wait: past its time limit */
} parity_process_end;

typedef struct {
    char *z;                      /* NUL-terminated; NULL until something came */
    size_t n, nAlloc;
    int truncated;                /* more came than nCaptureMax, or memory ran out */
} parity_process_text;

/* One supervised child. The caller owns the struct (zeroed, or reused after
 * parity_process_close); its fields are read-only to the caller. */
typedef struct {
    pid_t pid;                    /* 0: never started */
    parity_process_end end;       /* RUNNING until reaped */
    int code;                     /* EXITED: the exit status */
    int sig;                      /* SIGNALED, STALLED, TIMED_OUT: the signal it died of */
    long maxRssKiB;               /* once reaped: peak resident memory of it, or of the
                                   * largest child it waited for (wait4), in KiB */
    int fdIn;                     /* its stdin (PIPE), else -1 */
    int fdOut;                    /* what it sends (PIPE), else -1; -1 again at end of file */
    int ready;                    /* set by parity_process_poll: fdOut has data or hung up */
    parity_process_text capture[3];   /* [1] stdout, [2] stderr when CAPTURE */
    /* internal */
    int aFdCapture[3];
    int fdPid;                    /* a pidfd, readable once the child ended (-1: none) */
    size_t nCaptureMax;
    int ownGroup;
    int reapGroup;
    void *pPage;
    size_t nPage;
    double tStart;
    char aBuf[PARITY_PROCESS_LINE_MAX];
    size_t nBuf;
    int skipLine;             /* the rest of an overlong line is still to be discarded */
} parity_process;

/* CLOCK_MONOTONIC in seconds: the clock of every deadline here. */
double parity_process_now(void);

/* Starts the child. Returns 0, or -1 with zErr ("cannot fork: ...") and nothing left to
 * close. */
int parity_process_start(parity_process *p, const parity_process_options *pOpt, char *zErr,
                         size_t nErr);

/* The shared state (nState bytes), readable until parity_process_close. */
void *parity_process_state(const parity_process *p);
/* The heartbeats so far. */
uint64_t parity_process_beats(const parity_process *p);

/* Writes all n bytes to the child's stdin. 0, or -1 when it is gone (EPIPE). */
int parity_process_write(parity_process *p, const void *pBuf, size_t n);

/* Results of the reads. */
#define PARITY_PROCESS_OK        0
#define PARITY_PROCESS_EOF      -1     /* it closed its end (exited, died) or a read failed */
#define PARITY_PROCESS_TIMEOUT  -2     /* the deadline passed */

/* Reads exactly n bytes of what the child sends, before deadline (parity_process_now
 * seconds; 0: none). OK, EOF (also a partial read: it died mid-write) or TIMEOUT. */
int parity_process_read(parity_process *p, void *pBuf, size_t n, double deadline);
/* Reads one line (without its newline, or "\r\n") into zLine (cut to nLine - 1 bytes); a
 * line longer than PARITY_PROCESS_LINE_MAX is cut to what fits and the rest of it, up to
 * its newline, discarded. OK, EOF or TIMEOUT. */
int parity_process_read_line(parity_process *p, char *zLine, size_t nLine, double deadline);

/* Waits up to timeoutMs (-1: no limit) until one of the n children has something to read
 * or hung up; sets each one's ready. Returns how many are ready, or -1 with errno. */
int parity_process_poll(parity_process *const *apProc, size_t n, int timeoutMs);

/* Waits for the child to end while collecting its captured streams. stallSeconds (0:
 * none): killed when the heartbeat did not move for that long (STALLED); timeoutSeconds
 * (0: none): killed that long after its start (TIMED_OUT). Returns p->end. */
parity_process_end parity_process_wait(parity_process *p, double stallSeconds,
                                       double timeoutSeconds);
/* Closes its stdin, gives it graceSeconds to exit, then kills it. Returns p->end. */
parity_process_end parity_process_stop(parity_process *p, double graceSeconds);
/* SIGKILL to the child (and its group, with ownGroup), then reaps it. */
void parity_process_kill(parity_process *p);

/* Kills the child if it still runs, reaps it, closes the pipes, unmaps the shared page and
 * frees the captures; *p is zeroed (pid 0) and may be started again. */
void parity_process_close(parity_process *p);

/* Runs program azArgv to its end, stdin /dev/null, in a process group of its own, stderr
 * captured; *pzOut (NULL: stdout to /dev/null) receives its stdout (malloc'd, at most
 * 64 MiB). Returns its exit status; when that is none of 0, 1 and 125 (the conventions of
 * diff and of git bisect run), zErr holds the first line of its stderr. -1 (zErr) when it
 * could not start or died of a signal. */
int parity_process_run(const char *const *azArgv, char *const *azEnv, char **pzOut,
                       char *zErr, size_t nErr);

/* In a child the supervisor started (by xMain), one beat of its heartbeat; a no-op in any
 * other process. For hooks that get no context (formats/capture.h's heartbeat). */
void parity_process_beat(void);
/* In a function child: sends all n bytes to the parent (pSelf->fdOut). 0, or -1 when the
 * parent is gone. */
int parity_process_send(const parity_process_child *pSelf, const void *pBuf, size_t n);

#endif
