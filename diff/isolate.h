/*
 * isolate.h - running HDF5 work in a supervised child process.
 *
 * libhdf5 1.10 can segfault, abort or loop forever on corrupt files (h5dump does too), and
 * nothing in-process can recover from that. So the reading runs in a forked child with a
 * memory limit; the parent watches a heartbeat in shared memory and the wall clock, and
 * turns the child's death or stall into one line naming the file being read and exit 2.
 */
#ifndef PARITY_ISOLATE_H
#define PARITY_ISOLATE_H

#include <stddef.h>

typedef struct {
    unsigned stallSeconds;     /* kill when no heartbeat for this long (0: never) */
    unsigned timeoutSeconds;   /* kill after this long in all (0: never) */
    size_t maxMemoryMiB;       /* RLIMIT_AS of the child (0: none; ignored under ASan) */
} parity_isolate_limits;

/* Runs xWork(pArg) in a child and returns its exit status (0..255). When the child dies
 * by a signal, is killed for a stall or timeout, or cannot be started, writes one line
 * "zProgram: ..." to stderr naming the file being read and returns 2. */
int parity_isolate_run(const char *zProgram, int (*xWork)(void *), void *pArg,
                       const parity_isolate_limits *pLimits);

/* Called by the work (in the child) to say which file it is reading now; a no-op outside
 * parity_isolate_run. */
void parity_isolate_set_current(const char *zFile);

/* The heartbeat: call after each unit of progress. Installed as the capture reader's
 * heartbeat by parity_isolate_run. */
void parity_isolate_beat(void);

#endif
