/*
 * paritydiff.c - the command line: diff an eager and a compiled capture.
 *
 *   paritydiff [OPTIONS] EAGER.h5 COMPILED.h5
 *   paritydiff gate ...      (a release gate over a suite: diff/gate_cli.c, diff/GATE.md)
 *   paritydiff investigate ... and paritydiff bisect ...  (diff/INVESTIGATE.md)
 *
 * Exit status (as cmp and diff): 0 the runs agree, 1 they diverge, 2 trouble (bad
 * arguments, a file that cannot be read, a tensor that cannot be used). Everything that
 * touches libhdf5 runs in a supervised child (formats/process.h), so a hostile file costs
 * one line on stderr and exit 2, never a crash.
 *
 * Why a child: libhdf5 1.10 can segfault, abort or loop forever on corrupt files (h5dump
 * does too), and nothing in-process can recover from that. The child has a memory limit;
 * it reports the file it is reading through the engine's progress callback and the capture
 * reader's heartbeat into the supervisor's shared page, and the parent, which never reads
 * HDF5 itself, turns the child's death or stall into one line naming that file.
 *
 * The child's stderr is captured. When the child ends normally its messages are passed on
 * as they were; when it dies, what a corrupted libhdf5 or glibc wrote there ("double free
 * or corruption", ...) is dropped and one line of ours stands in for it, so the user always
 * gets one clear line. PARITY_KEEP_CHILD_STDERR=1 passes the dead child's output on too
 * (debugging, and sanitizer runs).
 *
 * What goes to stderr: exit 2 is exactly one line, the first trouble; warnings are said
 * only in runs that end 0 or 1 (the reports carry them always), so none stands before the
 * error. File names, tensor names and messages are escaped (formats/escape.h): a name
 * from a capture holding a newline or an escape sequence must not split the line or
 * drive the terminal.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include "diff/diff.h"
#include "diff/gate.h"
#include "formats/escape.h"
#include "formats/process.h"
#include "reports/report.h"

#ifndef PARITY_VERSION
#define PARITY_VERSION "0.0.0"
#endif

static const char *g_zProgram = "paritydiff";

/* No run goes on for days unasked (a legal file can declare 2^48 elements and store one
 * chunk of them). An hour is 30 times the largest capture pair we time (the 2.4 GB
 * transformer bench, 53 to 123 s, tests/bench/bench_transformer.py); --timeout 0 lifts it. */
#define DEFAULT_TIMEOUT_SECONDS 3600
#define MIN_MEMORY_MIB 256

typedef struct {
    unsigned stallSeconds;     /* kill when no heartbeat for this long (0: never) */
    unsigned timeoutSeconds;   /* kill after this long in all (0: never) */
    size_t maxMemoryMiB;       /* RLIMIT_AS of the child (0: none; ignored under ASan) */
} read_limits;

typedef struct {
    parity_diff_options diff;
    const char *zJson;
    const char *zTolerance;
    int quiet;
    unsigned timeoutSeconds;   /* --timeout: the child stops itself then (0: never) */
    int progressFd;            /* the user's stderr for the progress line, or -1: none */
    int progressTty;           /* ... a terminal: one line rewritten in place */
    const char *zEager, *zCompiled;
} cli_args;

static void usage(FILE *pOut)
{
    fprintf(pOut,
"Usage: paritydiff [OPTIONS] EAGER.h5 COMPILED.h5\n"
"       paritydiff gate [OPTIONS] SUITE   (see paritydiff gate --help)\n"
"       paritydiff investigate --history DB   (see paritydiff investigate --help)\n"
"       paritydiff bisect --policy FILE --versions FILE   (see paritydiff bisect --help)\n"
"Compare the tensors of an eager capture and a compiled capture (HDF5), tensor by\n"
"tensor, and say where the runs diverge.\n"
"\n"
"Tolerance (default: torch.testing.assert_close's per dtype; integers and bool exact):\n"
"      --rtol X            relative tolerance for every float tensor\n"
"      --atol X            absolute tolerance for every float tensor\n"
"      --max-ulp N         also accept elements within N ulps (in the tensor's dtype)\n"
"      --signed-zeros      -0 vs +0 is a mismatch (default: equal)\n"
"      --strict            tensors missing on one side fail the diff\n"
"      --tolerance FILE    overrides of the op models per op and tensor (YAML;\n"
"                          see tolerance/TOLERANCE.md)\n"
"      --map-prefix OLD=NEW  rename tensors under path OLD to NEW in both captures\n"
"                          before matching (repeatable; /_orig_mod=/ for torch.compile)\n"
"\n"
"Output:\n"
"      --json FILE         write the JSON report to FILE ('-': stdout, and no text report)\n"
"  -q, --quiet             no text report; the exit status says it all\n"
"      --progress          a progress line on stderr even when it is not a terminal\n"
"                          (on a terminal it is shown unless --quiet)\n"
"\n"
"Resources:\n"
"      --threads N         compute threads (default: all cores)\n"
"      --timeout SEC       stop judging after SEC seconds and report what was judged\n"
"                          (the tensors left are errors; default 3600, 0: no limit)\n"
"      --stall-timeout SEC give up when reading makes no progress for SEC seconds\n"
"                          (default 60; libhdf5 can hang on corrupt files)\n"
"      --max-memory MIB    address-space limit of the reading process (default 8192,\n"
"                          at least 256; 0: none)\n"
"      --max-depth N       group nesting a capture may have (default 64)\n"
"\n"
"  -h, --help              show this help and exit\n"
"  -V, --version           show the version and exit\n"
"\n"
"Exit status: 0 all tensors pass, 1 divergence, 2 trouble.\n"
"Formats: formats/FORMAT.md; JSON schema: diff/REPORT.md.\n");
}

static int usage_error(const char *zFmt, const char *zArg)
{
    char zEscaped[1024];
    fprintf(stderr, "%s: ", g_zProgram);
    fprintf(stderr, zFmt, parity_escape(zArg, zEscaped, sizeof zEscaped));
    fprintf(stderr, "\nTry 'paritydiff --help' for more information.\n");
    return 2;
}

static int parse_double(const char *z, double *pValue)
{
    char *zEnd;
    errno = 0;
    *pValue = strtod(z, &zEnd);
    return errno == 0 && zEnd != z && *zEnd == 0 && isfinite(*pValue) && *pValue >= 0.0;
}

static int parse_uint(const char *z, unsigned long long nMax, unsigned long long *pValue)
{
    char *zEnd;
    if (z[0] == '-' || z[0] == 0) return 0;
    errno = 0;
    *pValue = strtoull(z, &zEnd, 10);
    return errno == 0 && *zEnd == 0 && *pValue <= nMax;
}

/* The work done inside the supervised child: diff, report, exit code. */
static int run_diff(void *pArg)
{
    cli_args *pArgs = pArg;
    parity_diff_result res;
    char zErr[PARITY_ERR_LEN];
    int code;
    size_t i;
    parity_tolfile *pTolFile = NULL;

    if (pArgs->zTolerance) {
        if (parity_tolfile_load(pArgs->zTolerance, &pTolFile, zErr, sizeof zErr) != 0) {
            parity_escape_line(stderr, g_zProgram, zErr, NULL);
            return 2;
        }
        pArgs->diff.pTolFile = pTolFile;
    }
    if (parity_diff_run(&pArgs->diff, pArgs->zEager, pArgs->zCompiled, &res, zErr, sizeof zErr) != 0) {
        parity_escape_line(stderr, g_zProgram, zErr, NULL);
        parity_tolfile_free(pTolFile);
        return 2;
    }
    code = res.verdict == PARITY_VERDICT_PASS ? 0 : res.verdict == PARITY_VERDICT_FAIL ? 1 : 2;
    if (res.zError) {
        parity_escape_line(stderr, g_zProgram, pArgs->zCompiled, res.zError, NULL);
    } else if (res.verdict == PARITY_VERDICT_ERROR) {
        /* One line naming the first unusable tensor; the reports carry the rest. */
        for (i = 0; i < res.nTensor; i++) {
            if (res.aTensor[i].status == PARITY_ST_ERROR) {
                const char *zMessage = res.aTensor[i].zMessage;
                const char *zFile = zMessage && strncmp(zMessage, "compiled", 8) == 0
                                        ? pArgs->zCompiled : pArgs->zEager;
                parity_escape_line(stderr, g_zProgram, zFile, res.aTensor[i].zName,
                                   zMessage ? zMessage : "unusable", NULL);
                break;
            }
        }
    }
    /* A report that cannot be written is trouble of its own; it is said only when nothing
     * was said before, so exit 2 stays one line. */
    if (pArgs->zJson) {
        if (parity_report_json(&res, pArgs->zJson, zErr, sizeof zErr) != 0) {
            if (code != 2) parity_escape_line(stderr, g_zProgram, zErr, NULL);
            code = 2;
        }
    }
    if (!pArgs->quiet && !(pArgs->zJson && strcmp(pArgs->zJson, "-") == 0)) {
        if (parity_report_text(&res, stdout) != 0) {
            if (code != 2)
                parity_escape_line(stderr, g_zProgram, "cannot write the report to stdout", NULL);
            code = 2;
        }
    }
    if (fflush(stdout) != 0) code = 2;
    /* Warnings last, and only when the run did not end in trouble: then the one line of
     * exit 2 is the error, not a warning that happened to come first. */
    if (code != 2)
        for (i = 0; i < res.nWarning; i++)
            parity_escape_line(stderr, g_zProgram, "warning", res.azWarning[i], NULL);
    parity_diff_result_free(&res);
    parity_tolfile_free(pTolFile);
    return code;
}

/* The reading child's shared state: the file it reads now ("" before and after), and
 * the progress line, which only the child writes. */
typedef struct {
    char zCurrent[1024];
    int judging;               /* the last sign of life came from a model judging */
    double deadline;           /* CLOCK_MONOTONIC seconds the child must stop by (0: none) */
    int progressFd, progressTty;   /* as in cli_args */
    int progressShown;         /* a line is on a terminal, to be cleared */
    double tStart, tShown;     /* when the diff started, and the line was last written */
    size_t iDone, nTotal;      /* tensors judged so far, of nTotal (0: still reading) */
    char zTensor[256];         /* the tensor being judged */
} read_state;

static double monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Writes the whole buffer to fd, or gives up quietly: progress is never worth an error. */
static void write_all(int fd, const char *z, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, z, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        z += w;
        n -= (size_t)w;
    }
}

/* The progress line, in the child, on the user's stderr (the child's own is captured).
 * A diff that ends within a second shows none; after that it is rewritten in place five
 * times a second on a terminal, and written once a second, a line each, elsewhere, where
 * the end of the judging adds one last line. final: the judging is over. */
static void progress_show(read_state *pS, int final)
{
    double now;
    char zLine[512], zName[208];   /* the file or tensor, escaped and cut to fit the line */
    int n;
    if (pS->progressFd < 0) return;
    now = monotonic_seconds();
    if (final) {
        if (pS->progressTty && pS->progressShown) write_all(pS->progressFd, "\r\033[K", 4);
        pS->progressShown = 0;
        if (!pS->progressTty) {
            n = snprintf(zLine, sizeof zLine, "paritydiff: progress: %zu of %zu tensors judged "
                         "in %.1f s\n", pS->iDone, pS->nTotal, now - pS->tStart);
            write_all(pS->progressFd, zLine, (size_t)n);
        }
        return;
    }
    if (now - pS->tStart < 1.0 || now - pS->tShown < (pS->progressTty ? 0.2 : 1.0)) return;
    pS->tShown = now;
    parity_escape(pS->nTotal == 0 ? pS->zCurrent : pS->zTensor, zName, sizeof zName);
    if (pS->nTotal == 0)
        n = snprintf(zLine, sizeof zLine, "%sparitydiff: progress: reading %s, %.0f s%s",
                     pS->progressTty ? "\r" : "", zName, now - pS->tStart,
                     pS->progressTty ? "\033[K" : "\n");
    else
        n = snprintf(zLine, sizeof zLine, "%sparitydiff: progress: %zu of %zu tensors judged, "
                     "%.0f s; judging %s%s", pS->progressTty ? "\r" : "", pS->iDone, pS->nTotal,
                     now - pS->tStart, zName, pS->progressTty ? "\033[K" : "\n");
    if (n > 0) write_all(pS->progressFd, zLine, (size_t)n < sizeof zLine ? (size_t)n : sizeof zLine - 1);
    pS->progressShown = 1;
}

/* The engine's progress callback, in the child: the file, and a heartbeat. */
static void on_progress(void *pCtx, const char *zFile)
{
    read_state *pState = pCtx;
    snprintf(pState->zCurrent, sizeof pState->zCurrent, "%s", zFile ? zFile : "");
    pState->judging = 0;
    parity_process_beat();
    if (zFile && pState->nTotal == 0) progress_show(pState, 0);
}

/* The engine's callback before each tensor is judged, in the child. */
static void on_tensor(void *pCtx, size_t iDone, size_t nTotal, const char *zName)
{
    read_state *pState = pCtx;
    pState->iDone = iDone;
    pState->nTotal = nTotal;
    snprintf(pState->zTensor, sizeof pState->zTensor, "%s", zName ? zName : "");
    progress_show(pState, zName == NULL);
}

/* The engine's beat while a model judges, in the child: a heartbeat, so a long healthy
 * judgement is never taken for a hung reader, and the --timeout deadline, so the child
 * stops itself and writes what it judged (the parent's kill is the backstop). */
static int on_beat(void *pCtx)
{
    read_state *pState = pCtx;
    pState->judging = 1;
    parity_process_beat();
    progress_show(pState, 0);
    return pState->deadline > 0.0 && monotonic_seconds() > pState->deadline;
}

/* The reading child. The engine names each capture it reads through its options'
 * progress callback; the capture reader's heartbeat (formats/capture.h) stays a process-
 * wide hook with no context: it fires deep in slab reads and dataset opens, whose API
 * takes no options, and inside this child a heartbeat is a fact of the process anyway. */
static int diff_child(void *pArg, const parity_process_child *pSelf)
{
    cli_args *pArgs = pArg;
    pArgs->diff.xProgress = on_progress;
    pArgs->diff.xBeat = on_beat;
    pArgs->diff.xTensor = on_tensor;
    pArgs->diff.pProgressCtx = pSelf->pState;
    ((read_state *)pSelf->pState)->progressFd = pArgs->progressFd;
    ((read_state *)pSelf->pState)->progressTty = pArgs->progressTty;
    ((read_state *)pSelf->pState)->tStart = monotonic_seconds();
    if (pArgs->timeoutSeconds)
        ((read_state *)pSelf->pState)->deadline = monotonic_seconds() + pArgs->timeoutSeconds;
    parity_capture_set_heartbeat(parity_process_beat);
    return run_diff(pArgs);
}

/* Passes the child's stderr on, unless it died (see the file comment). */
static void pass_child_stderr(const parity_process *pProc, int died)
{
    const char *zKeep = getenv("PARITY_KEEP_CHILD_STDERR");
    const parity_process_text *pText = &pProc->capture[2];
    if (pText->n > 0 && (!died || (zKeep && strcmp(zKeep, "1") == 0))) {
        fwrite(pText->z, 1, pText->n, stderr);
        fflush(stderr);
    }
}

/* Runs the diff in a supervised child; returns the exit status. */
static int run_isolated(cli_args *pArgs, const read_limits *pLimits)
{
    parity_process proc;
    parity_process_options opt;
    const read_state *pState;
    const char *zCurrent;
    char zErr[PARITY_ERR_LEN];
    int rc = 2;

    memset(&opt, 0, sizeof opt);
    opt.xMain = diff_child;
    opt.pArg = pArgs;
    opt.err = PARITY_PROCESS_CAPTURE;
    opt.maxMemoryMiB = pLimits->maxMemoryMiB;
    opt.nState = sizeof(read_state);
    if (parity_process_start(&proc, &opt, zErr, sizeof zErr) != 0) {
        parity_escape_line(stderr, g_zProgram, zErr, NULL);
        return 2;
    }
    /* The child stops itself at --timeout and writes its partial report; the kill after
     * a grace (a tenth more, at least 5 s) is for a child stuck inside libhdf5. */
    parity_process_wait(&proc, pLimits->stallSeconds,
                        pLimits->timeoutSeconds == 0 ? 0
                        : pLimits->timeoutSeconds + (pLimits->timeoutSeconds / 10 > 5
                                                     ? pLimits->timeoutSeconds / 10 : 5));
    pState = parity_process_state(&proc);
    zCurrent = pState->zCurrent[0] ? pState->zCurrent : "the input";
    if (pState->progressShown && pArgs->progressTty) {
        fputs("\r\033[K", stderr);   /* a child that died mid-line leaves it behind */
        fflush(stderr);
    }
    pass_child_stderr(&proc, proc.end != PARITY_PROCESS_EXITED &&
                             !(proc.end == PARITY_PROCESS_SIGNALED && proc.sig == SIGPIPE));
    switch (proc.end) {
    case PARITY_PROCESS_EXITED:
        rc = proc.code;
        break;
    case PARITY_PROCESS_STALLED:
    case PARITY_PROCESS_TIMED_OUT:
        if (pState->judging)
            parity_escape_line(stderr, g_zProgram, zCurrent,
                               proc.end == PARITY_PROCESS_STALLED
                                   ? "no progress while judging its tensors"
                                   : "time limit reached while judging",
                               NULL);
        else
            parity_escape_line(stderr, g_zProgram, zCurrent,
                               proc.end == PARITY_PROCESS_STALLED
                                   ? "no progress reading it (libhdf5 hangs on some corrupt "
                                     "files); the file may be corrupt or hostile"
                                   : "time limit reached while reading it; the file may be "
                                     "corrupt or hostile",
                               NULL);
        break;
    case PARITY_PROCESS_SIGNALED:
        if (proc.sig == SIGPIPE) {
            /* The reader of our output went away (| head): die the same quiet death. */
            parity_process_close(&proc);
            signal(SIGPIPE, SIG_DFL);
            raise(SIGPIPE);
            return 2;
        }
        snprintf(zErr, sizeof zErr, "reading it crashed libhdf5 (%s); the file is corrupt or hostile",
                 proc.sig == SIGKILL ? "killed, probably out of memory" : strsignal(proc.sig));
        parity_escape_line(stderr, g_zProgram, zCurrent, zErr, NULL);
        break;
    case PARITY_PROCESS_RUNNING:
        break;
    }
    parity_process_close(&proc);
    return rc;
}

int main(int argc, char **argv)
{
    enum { OPT_RTOL = 256, OPT_ATOL, OPT_MAX_ULP, OPT_SIGNED_ZEROS, OPT_STRICT, OPT_JSON,
           OPT_TOLERANCE,
           OPT_THREADS, OPT_TIMEOUT, OPT_STALL, OPT_MAX_MEMORY, OPT_SLAB, OPT_MAP_PREFIX,
           OPT_PROGRESS, OPT_MAX_DEPTH };
    static const struct option aLong[] = {
        { "rtol", required_argument, NULL, OPT_RTOL },
        { "atol", required_argument, NULL, OPT_ATOL },
        { "max-ulp", required_argument, NULL, OPT_MAX_ULP },
        { "signed-zeros", no_argument, NULL, OPT_SIGNED_ZEROS },
        { "strict", no_argument, NULL, OPT_STRICT },
        { "json", required_argument, NULL, OPT_JSON },
        { "tolerance", required_argument, NULL, OPT_TOLERANCE },
        { "quiet", no_argument, NULL, 'q' },
        { "threads", required_argument, NULL, OPT_THREADS },
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        { "stall-timeout", required_argument, NULL, OPT_STALL },
        { "max-memory", required_argument, NULL, OPT_MAX_MEMORY },
        { "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
        { "slab-bytes", required_argument, NULL, OPT_SLAB },   /* for tests and benchmarks */
        { "help", no_argument, NULL, 'h' },
        { "map-prefix", required_argument, NULL, OPT_MAP_PREFIX },
        { "progress", no_argument, NULL, OPT_PROGRESS },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 }
    };
    cli_args args;
    read_limits limits = { 60, DEFAULT_TIMEOUT_SECONDS, 8192 };
    unsigned long long u;
    int c, progress = 0;

    if (argc > 1 && strcmp(argv[1], "gate") == 0) return parity_gate_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "investigate") == 0)
        return parity_investigate_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "bisect") == 0) return parity_bisect_main(argc - 1, argv + 1);
    memset(&args, 0, sizeof args);
    parity_diff_options_init(&args.diff);
    args.timeoutSeconds = DEFAULT_TIMEOUT_SECONDS;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "qhV", aLong, NULL)) != -1) {
        switch (c) {
        case OPT_RTOL:
            if (!parse_double(optarg, &args.diff.rtol)) return usage_error("invalid --rtol '%s'", optarg);
            args.diff.hasRtol = 1;
            break;
        case OPT_ATOL:
            if (!parse_double(optarg, &args.diff.atol)) return usage_error("invalid --atol '%s'", optarg);
            args.diff.hasAtol = 1;
            break;
        case OPT_MAX_ULP:
            if (!parse_uint(optarg, (1ULL << 63) - 1, &u)) return usage_error("invalid --max-ulp '%s'", optarg);
            args.diff.hasMaxUlp = 1;
            args.diff.maxUlp = u;
            break;
        case OPT_SIGNED_ZEROS: args.diff.signedZeros = 1; break;
        case OPT_STRICT: args.diff.strict = 1; break;
        case OPT_JSON: args.zJson = optarg; break;
        case OPT_TOLERANCE: args.zTolerance = optarg; break;
        case 'q': args.quiet = 1; break;
        case OPT_PROGRESS: progress = 1; break;
        case OPT_THREADS:
            if (!parse_uint(optarg, 64, &u) || u == 0) return usage_error("invalid --threads '%s' (1 to 64)", optarg);
            args.diff.nThreads = (int)u;
            break;
        case OPT_TIMEOUT:
            if (!parse_uint(optarg, 1000000, &u)) return usage_error("invalid --timeout '%s'", optarg);
            limits.timeoutSeconds = (unsigned)u;
            args.timeoutSeconds = (unsigned)u;
            break;
        case OPT_STALL:
            if (!parse_uint(optarg, 1000000, &u)) return usage_error("invalid --stall-timeout '%s'", optarg);
            limits.stallSeconds = (unsigned)u;
            break;
        case OPT_MAX_MEMORY:
            /* Under 48 MiB libhdf5 itself dies starting up (measured on a real CNN
             * capture), which read as a corrupt file; every reading thread adds its stack. */
            if (!parse_uint(optarg, 1ULL << 30, &u) || (u != 0 && u < MIN_MEMORY_MIB))
                return usage_error("invalid --max-memory '%s' (0 for none, or at least 256)", optarg);
            limits.maxMemoryMiB = (size_t)u;
            break;
        case OPT_MAX_DEPTH:
            if (!parse_uint(optarg, 1000000, &u) || u == 0)
                return usage_error("invalid --max-depth '%s'", optarg);
            args.diff.maxDepth = (unsigned)u;
            break;
        case OPT_SLAB:
            if (!parse_uint(optarg, 1ULL << 34, &u) || u == 0) return usage_error("invalid --slab-bytes '%s'", optarg);
            args.diff.nSlabBytes = u;
            break;
        case OPT_MAP_PREFIX: {
            char *zEq = strchr(optarg, '=');
            if (!zEq || zEq == optarg)
                return usage_error("invalid --map-prefix '%s' (OLD=NEW, OLD not empty)", optarg);
            if (args.diff.nMap == PARITY_DIFF_MAX_MAPS)
                return usage_error("%s", "too many --map-prefix (16 at most)");
            *zEq = 0;
            args.diff.azMapOld[args.diff.nMap] = optarg;
            args.diff.azMapNew[args.diff.nMap++] = zEq + 1;
            break;
        }
        case 'h': usage(stdout); return 0;
        case 'V': printf("paritydiff %s\n", PARITY_VERSION); return 0;
        default:
            if (optopt && optopt < 256) {
                char zOpt[3] = { '-', (char)optopt, 0 };
                return usage_error("invalid option '%s'", zOpt);
            }
            return usage_error("invalid option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return usage_error("%s", argc - optind < 2 ? "missing operand: need EAGER.h5 and COMPILED.h5"
                                                   : "too many operands");
    args.zEager = argv[optind];
    args.zCompiled = argv[optind + 1];
    args.progressTty = isatty(2);
    args.progressFd = -1;
    if (progress || (args.progressTty && !args.quiet))
        args.progressFd = fcntl(2, F_DUPFD_CLOEXEC, 3);   /* -1: no progress, no harm */
    return run_isolated(&args, &limits);
}
