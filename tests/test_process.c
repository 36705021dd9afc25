/*
 * test_process.c - the process supervisor (formats/process.c): how a function child and a
 * program child end (exit, signal, stall, time limit), its streams (a channel, stdin and
 * stdout pipes, captured stderr), its shared state, group kills and the grace of a stop,
 * and group reaping (what a worker's shell leaves is killed, reaped and its CPU counted).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "formats/process.h"
#include "support.h"

TestSuite(process, .timeout = 120);

static int start_function(parity_process *p, int (*xMain)(void *, const parity_process_child *),
                          void *pArg, parity_process_stream out, parity_process_stream err,
                          size_t nState)
{
    parity_process_options opt;
    char zErr[256];
    memset(&opt, 0, sizeof opt);
    opt.xMain = xMain;
    opt.pArg = pArg;
    opt.out = out;
    opt.err = err;
    opt.nState = nState;
    cr_assert_eq(parity_process_start(p, &opt, zErr, sizeof zErr), 0, "%s", zErr);
    return 0;
}

static int exits_with_arg(void *pArg, const parity_process_child *pSelf)
{
    (void)pSelf;
    fprintf(stderr, "about to exit %d\n", *(int *)pArg);
    return *(int *)pArg;
}

static int dies_of_sigill(void *pArg, const parity_process_child *pSelf)
{
    (void)pArg;
    (void)pSelf;
    fprintf(stderr, "double free or corruption (fake)\n");
    raise(SIGILL);
    return 0;
}

Test(process, a_function_child_exits_or_dies_and_its_stderr_is_captured)
{
    parity_process p;
    int code = 7;
    start_function(&p, exits_with_arg, &code, PARITY_PROCESS_INHERIT, PARITY_PROCESS_CAPTURE, 0);
    cr_assert_eq(parity_process_wait(&p, 0, 0), PARITY_PROCESS_EXITED);
    cr_assert_eq(p.code, 7);
    cr_assert_str_eq(p.capture[2].z, "about to exit 7\n");
    parity_process_close(&p);
    cr_assert_eq(p.pid, 0);

    start_function(&p, dies_of_sigill, NULL, PARITY_PROCESS_INHERIT, PARITY_PROCESS_CAPTURE, 0);
    cr_assert_eq(parity_process_wait(&p, 0, 0), PARITY_PROCESS_SIGNALED);
    cr_assert_eq(p.sig, SIGILL);
    cr_assert(strstr(p.capture[2].z, "double free"), "%s", p.capture[2].z);
    parity_process_close(&p);
}

typedef struct {
    char zCurrent[64];
} beat_state;

/* Beats 20 times over about 0.4 s, then stops beating (n = 0: keeps beating). */
static int beats_then_stalls(void *pArg, const parity_process_child *pSelf)
{
    beat_state *pState = pSelf->pState;
    int i, stall = *(int *)pArg;
    snprintf(pState->zCurrent, sizeof pState->zCurrent, "stage one");
    for (i = 0; i < 20; i++) {
        parity_process_beat();
        usleep(20000);
    }
    snprintf(pState->zCurrent, sizeof pState->zCurrent, "stage two");
    for (;;) {
        if (!stall) parity_process_beat();
        usleep(20000);
    }
    return 0;
}

Test(process, a_stalled_child_is_killed_and_a_beating_one_runs_to_its_time_limit)
{
    parity_process p;
    double t0;
    int stall = 1;
    beat_state *pState;

    t0 = parity_process_now();
    start_function(&p, beats_then_stalls, &stall, PARITY_PROCESS_INHERIT, PARITY_PROCESS_INHERIT,
                   sizeof(beat_state));
    cr_assert_eq(parity_process_wait(&p, 0.5, 30), PARITY_PROCESS_STALLED);
    cr_assert_eq(p.sig, SIGKILL);
    cr_assert_geq(parity_process_beats(&p), 20);
    pState = parity_process_state(&p);
    cr_assert_str_eq(pState->zCurrent, "stage two", "the state outlives the child");
    cr_assert_lt(parity_process_now() - t0, 5.0);
    parity_process_close(&p);

    stall = 0;
    t0 = parity_process_now();
    start_function(&p, beats_then_stalls, &stall, PARITY_PROCESS_INHERIT, PARITY_PROCESS_INHERIT,
                   sizeof(beat_state));
    cr_assert_eq(parity_process_wait(&p, 0.5, 1.5), PARITY_PROCESS_TIMED_OUT);
    cr_assert_geq(parity_process_now() - t0, 1.4);
    cr_assert_lt(parity_process_now() - t0, 5.0);
    parity_process_close(&p);
}

#define BIG_N 300000    /* doubles: many pipe buffers */

static int sends_a_lot(void *pArg, const parity_process_child *pSelf)
{
    double *a = malloc(BIG_N * sizeof *a);
    uint32_t n = BIG_N;
    int i;
    (void)pArg;
    if (!a) return 3;
    for (i = 0; i < BIG_N; i++) a[i] = i * 0.5;
    printf("stdout is not the channel\n");
    if (parity_process_send(pSelf, &n, sizeof n) != 0 ||
        parity_process_send(pSelf, a, BIG_N * sizeof *a) != 0)
        return 4;
    free(a);
    return 0;
}

static int sends_half_then_dies(void *pArg, const parity_process_child *pSelf)
{
    uint32_t n = BIG_N;
    (void)pArg;
    parity_process_send(pSelf, &n, 2);
    _exit(9);
    return 0;
}

static int sleeps(void *pArg, const parity_process_child *pSelf)
{
    (void)pArg;
    (void)pSelf;
    for (;;) pause();
    return 0;
}

Test(process, a_channel_carries_exact_records_and_reads_keep_their_deadlines)
{
    parity_process p;
    uint32_t n = 0;
    double *a = malloc(BIG_N * sizeof *a), t0;
    int i;

    cr_assert_not_null(a);
    start_function(&p, sends_a_lot, NULL, PARITY_PROCESS_PIPE, PARITY_PROCESS_INHERIT, 0);
    cr_assert_eq(parity_process_read(&p, &n, sizeof n, 0), PARITY_PROCESS_OK);
    cr_assert_eq(n, BIG_N);
    cr_assert_eq(parity_process_read(&p, a, BIG_N * sizeof *a, parity_process_now() + 30),
                 PARITY_PROCESS_OK);
    for (i = 0; i < BIG_N; i++) cr_assert_eq(a[i], i * 0.5, "element %d", i);
    cr_assert_eq(parity_process_read(&p, &n, 1, 0), PARITY_PROCESS_EOF);
    cr_assert_eq(parity_process_wait(&p, 0, 0), PARITY_PROCESS_EXITED);
    cr_assert_eq(p.code, 0);
    parity_process_close(&p);

    /* half a record, then death: end of file, not a hang */
    start_function(&p, sends_half_then_dies, NULL, PARITY_PROCESS_PIPE, PARITY_PROCESS_INHERIT, 0);
    cr_assert_eq(parity_process_read(&p, &n, sizeof n, parity_process_now() + 30), PARITY_PROCESS_EOF);
    cr_assert_eq(parity_process_wait(&p, 0, 0), PARITY_PROCESS_EXITED);
    cr_assert_eq(p.code, 9);
    parity_process_close(&p);

    /* silence: the deadline ends the read, and closing kills and reaps the child */
    start_function(&p, sleeps, NULL, PARITY_PROCESS_PIPE, PARITY_PROCESS_INHERIT, 0);
    t0 = parity_process_now();
    cr_assert_eq(parity_process_read(&p, &n, sizeof n, t0 + 0.3), PARITY_PROCESS_TIMEOUT);
    cr_assert_lt(parity_process_now() - t0, 3.0);
    parity_process_close(&p);
    free(a);
}

static void start_shell_group(parity_process *p, const char *zScript, int ownGroup,
                              int reapGroup)
{
    const char *azArgv[] = { "/bin/sh", "-c", zScript, NULL };
    parity_process_options opt;
    char zErr[256];
    memset(&opt, 0, sizeof opt);
    opt.azArgv = azArgv;
    opt.in = PARITY_PROCESS_PIPE;
    opt.out = PARITY_PROCESS_PIPE;
    opt.err = PARITY_PROCESS_CAPTURE;
    opt.ownGroup = ownGroup;
    opt.reapGroup = reapGroup;
    cr_assert_eq(parity_process_start(p, &opt, zErr, sizeof zErr), 0, "%s", zErr);
}

static void start_shell(parity_process *p, const char *zScript, int ownGroup)
{
    start_shell_group(p, zScript, ownGroup, 0);
}

Test(process, a_program_speaks_in_lines_and_its_group_is_killed)
{
    parity_process p;
    char zLine[64];
    double t0;

    start_shell(&p, "echo banner >&2; echo READY; read x; echo \"got $x\"; echo tail", 1);
    cr_assert_eq(parity_process_read_line(&p, zLine, sizeof zLine, parity_process_now() + 30),
                 PARITY_PROCESS_OK);
    cr_assert_str_eq(zLine, "READY");
    cr_assert_eq(parity_process_write(&p, "hello\n", 6), 0);
    cr_assert_eq(parity_process_read_line(&p, zLine, sizeof zLine, parity_process_now() + 30),
                 PARITY_PROCESS_OK);
    cr_assert_str_eq(zLine, "got hello");
    cr_assert_eq(parity_process_read_line(&p, zLine, sizeof zLine, parity_process_now() + 30),
                 PARITY_PROCESS_OK);
    cr_assert_str_eq(zLine, "tail");
    cr_assert_eq(parity_process_read_line(&p, zLine, sizeof zLine, parity_process_now() + 30),
                 PARITY_PROCESS_EOF);
    cr_assert_eq(parity_process_wait(&p, 0, 0), PARITY_PROCESS_EXITED);
    cr_assert_str_eq(p.capture[2].z, "banner\n");
    parity_process_close(&p);

    /* a line longer than the reader's buffer (9000 bytes): its head comes back cut, its
     * tail is discarded up to its newline, and the next line is whole */
    start_shell(&p, "head -c 9000 /dev/zero | tr '\\0' x; echo; echo next", 1);
    cr_assert_eq(parity_process_read_line(&p, zLine, sizeof zLine, parity_process_now() + 30),
                 PARITY_PROCESS_OK);
    cr_assert_eq(strlen(zLine), sizeof zLine - 1);
    cr_assert_eq(strspn(zLine, "x"), sizeof zLine - 1, "%s", zLine);
    cr_assert_eq(parity_process_read_line(&p, zLine, sizeof zLine, parity_process_now() + 30),
                 PARITY_PROCESS_OK);
    cr_assert_str_eq(zLine, "next", "the tail of the long line came back as a line: %s", zLine);
    cr_assert_eq(parity_process_read_line(&p, zLine, sizeof zLine, parity_process_now() + 30),
                 PARITY_PROCESS_EOF);
    parity_process_wait(&p, 0, 0);
    parity_process_close(&p);

    /* a shell whose child holds the pipe: the group kill reaches the child, so the pipe
     * closes and nothing is left running */
    start_shell(&p, "sleep 100; echo never", 1);
    t0 = parity_process_now();
    cr_assert_eq(parity_process_read_line(&p, zLine, sizeof zLine, t0 + 0.3), PARITY_PROCESS_TIMEOUT);
    parity_process_kill(&p);
    cr_assert_eq(p.end, PARITY_PROCESS_SIGNALED);
    cr_assert_eq(p.sig, SIGKILL);
    cr_assert_eq(parity_process_read_line(&p, zLine, sizeof zLine, parity_process_now() + 10),
                 PARITY_PROCESS_EOF, "the sleep still holds the pipe");
    cr_assert_lt(parity_process_now() - t0, 5.0);
    parity_process_close(&p);

    /* a program that cannot be run exits 127 */
    {
        const char *azArgv[] = { "/nonexistent/program", NULL };
        parity_process_options opt;
        char zErr[256];
        memset(&opt, 0, sizeof opt);
        opt.azArgv = azArgv;
        opt.err = PARITY_PROCESS_NULL;
        cr_assert_eq(parity_process_start(&p, &opt, zErr, sizeof zErr), 0, "%s", zErr);
        cr_assert_eq(parity_process_wait(&p, 0, 0), PARITY_PROCESS_EXITED);
        cr_assert_eq(p.code, 127);
        parity_process_close(&p);
    }
}

Test(process, a_stop_gives_grace_then_kills)
{
    parity_process p;
    double t0;

    /* leaves at end of input: within the grace */
    start_shell(&p, "cat >/dev/null; exit 3", 1);
    cr_assert_eq(parity_process_stop(&p, 2.0), PARITY_PROCESS_EXITED);
    cr_assert_eq(p.code, 3);
    parity_process_close(&p);

    /* ignores its input: killed after the grace */
    start_shell(&p, "exec sleep 100", 1);
    t0 = parity_process_now();
    cr_assert_eq(parity_process_stop(&p, 0.3), PARITY_PROCESS_SIGNALED);
    cr_assert_geq(parity_process_now() - t0, 0.25);
    cr_assert_lt(parity_process_now() - t0, 5.0);
    parity_process_close(&p);
}

static double children_cpu_s(void)
{
    struct rusage ru;
    cr_assert_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec
         + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* reapGroup: a shell's child (a worker behind `sh -c`) that burned about 0.5 s of CPU and
 * then sleeps is killed and reaped here when the shell ends, killed or by itself, and its
 * CPU time is in this process's RUSAGE_CHILDREN. Without it the grandchild went to init:
 * a torch.compile campaign's wait4 counted 6.8 of 39 CPU seconds. */
Test(process, a_reaped_group_leaves_nothing_running_and_its_cpu_is_counted)
{
    static const char *const azScript[2] = {
        "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo $$; exec sleep 100' "
        "& wait",
        "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo $$; exec sleep 100' "
        "& read x",
    };
    int graceful;
    for (graceful = 0; graceful < 2; graceful++) {
        parity_process p;
        char zLine[64];
        double cpu0 = children_cpu_s();
        long pid;
        start_shell_group(&p, azScript[graceful], 1, 1);
        cr_assert_eq(parity_process_read_line(&p, zLine, sizeof zLine,
                                              parity_process_now() + 60), PARITY_PROCESS_OK);
        pid = atol(zLine);
        cr_assert_gt(pid, 1, "%s", zLine);
        cr_assert_eq(kill((pid_t)pid, 0), 0, "the grandchild is not running");
        if (graceful)      /* end of input: the shell leaves by itself, its child stays */
            cr_assert_eq(parity_process_stop(&p, 5.0), PARITY_PROCESS_EXITED);
        else
            parity_process_kill(&p);
        /* gone, and reaped: a zombie would still answer kill(pid, 0) */
        cr_assert_eq(kill((pid_t)pid, 0), -1, "graceful %d: the grandchild outlived its group",
                     graceful);
        cr_assert_eq(errno, ESRCH);
        cr_assert_geq(children_cpu_s() - cpu0, 0.2, "graceful %d: %.3f s counted", graceful,
                      children_cpu_s() - cpu0);
        parity_process_close(&p);
    }
}

Test(process, poll_says_which_child_has_something)
{
    parity_process aP[2], *apP[2] = { &aP[0], &aP[1] };
    char zLine[32];
    start_shell(&aP[0], "sleep 100", 1);
    start_shell(&aP[1], "echo one", 1);
    cr_assert_eq(parity_process_poll(apP, 2, 10000), 1);
    cr_assert(!aP[0].ready && aP[1].ready);
    cr_assert_eq(parity_process_read_line(&aP[1], zLine, sizeof zLine, 0), PARITY_PROCESS_OK);
    cr_assert_str_eq(zLine, "one");
    parity_process_close(&aP[0]);
    parity_process_close(&aP[1]);
}

static int allocates(void *pArg, const parity_process_child *pSelf)
{
    size_t n = (size_t)512 << 20;
    char *z = malloc(n);
    (void)pArg;
    (void)pSelf;
    if (!z) return 5;
    memset(z, 1, n);
    free(z);
    return 0;
}

Test(process, the_memory_limit_holds_in_the_child)
{
    parity_process p;
    parity_process_options opt;
    char zErr[256];
#ifdef TEST_UNDER_ASAN
    cr_skip_test("RLIMIT_AS is not set under AddressSanitizer");
#endif
    memset(&opt, 0, sizeof opt);
    opt.xMain = allocates;
    opt.maxMemoryMiB = 128;
    cr_assert_eq(parity_process_start(&p, &opt, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(parity_process_wait(&p, 0, 0), PARITY_PROCESS_EXITED);
    cr_assert_eq(p.code, 5, "a 512 MiB allocation under a 128 MiB limit succeeded");
    parity_process_close(&p);
}

Test(process, bad_options_are_refused)
{
    parity_process p;
    parity_process_options opt;
    char zErr[256];
    memset(&opt, 0, sizeof opt);
    cr_assert_eq(parity_process_start(&p, &opt, zErr, sizeof zErr), -1);
    cr_assert(strstr(zErr, "function or a program"), "%s", zErr);
    parity_process_close(&p);    /* nothing to close, and no harm */
}
