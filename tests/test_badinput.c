/*
 * test_badinput.c - the CLI's contract on bad input, through the built paritydiff binary.
 *
 * Exit status: 0 all pass, 1 divergence, 2 trouble. Every kind of bad input (missing file,
 * directory, empty file, random bytes, truncated HDF5, unknown or wrongly typed attributes,
 * absurd shapes, element types we cannot compare) must give exit 2 and ONE line on stderr
 * that names the file, never a signal death and never HDF5's own error stack ("HDF5-DIAG").
 * Dangling or cyclic "inputs" are legal: a verdict plus "paritydiff: warning: ..." lines
 * (and "warnings" in the JSON report). Usage errors: one line, then the "Try 'paritydiff
 * --help'" hint, exit 2.
 *
 * Fixtures are written with our own writer (formats/capture.h); only the cases the writer
 * cannot produce (an absurd chunked shape, string and compound datasets) use h5py through
 * SYSTEM_PYTHON, and those tests are skipped when h5py is not there. Op names are "test.*"
 * so that no per-op error model (tolerance/ops.c) judges data that is not a real op's.
 */
#define _GNU_SOURCE 1   /* pipe2, nftw, strndup */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "formats/capture.h"

extern char **environ;

/* ---- running a program and capturing everything ----------------------------------- */

typedef struct {
    int exited, code;        /* WIFEXITED and WEXITSTATUS (code -1 otherwise) */
    int signaled, sig;       /* WIFSIGNALED and WTERMSIG */
    int timedOut;            /* we had to kill it */
    char *zOut, *zErr;       /* NUL-terminated captures */
    size_t nOut, nErr;
    double seconds;
} run_result;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The environment of the child: ours, plus sanitizer options in sanitizer builds.
 * libhdf5 is not instrumented and crashes on some corrupt files; paritydiff's supervisor
 * (diff/isolate.c) is what turns such a crash into one line and exit 2. If the sanitizer
 * runtime caught SIGSEGV/SIGABRT/SIGBUS/SIGFPE itself it would print a report and exit
 * with status 1, which the supervisor would pass on as "divergence". With handle_*=0 the
 * signal reaches the supervisor as the signal it is. The same holds for errors ASan's
 * interceptors find inside libhdf5 (memcpy overflows): abort_on_error=1 makes them a
 * SIGABRT too. allocator_may_return_null=1 lets a hostile size fail as malloc does in a
 * normal build (ASan would otherwise report and exit); the RLIMIT_AS that isolate.c sets
 * is skipped under ASan. Leak checking is off because the worker leaves by _exit on
 * purpose. UBSAN_OPTIONS is set unconditionally (GCC has no macro that says UBSan is on;
 * the variable is ignored without UBSan). Any sanitizer report still fails these tests. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_UNDER_ASAN 1
#endif
#endif
#define CHILD_ASAN_OPTIONS \
    "handle_segv=0:handle_abort=0:handle_sigbus=0:handle_sigfpe=0:detect_leaks=0:" \
    "allocator_may_return_null=1:abort_on_error=1"
#define CHILD_UBSAN_OPTIONS "handle_segv=0:handle_abort=0:handle_sigbus=0:handle_sigfpe=0"

static char *env_with(const char *zName, const char *zAppend)
{
    const char *zOld = getenv(zName);
    size_t n = strlen(zName) + strlen(zAppend) + (zOld ? strlen(zOld) : 0) + 4;
    char *z = malloc(n);
    cr_assert_not_null(z);
    if (zOld && zOld[0]) snprintf(z, n, "%s=%s:%s", zName, zOld, zAppend);
    else snprintf(z, n, "%s=%s", zName, zAppend);
    return z;
}

/* Built once per process and kept (the test processes are short-lived). */
static char **child_env(void)
{
    static char **s_az;
    size_t n = 0, i, k = 0;
    char **az;
    if (s_az) return s_az;
    while (environ[n]) n++;
    az = calloc(n + 3, sizeof(char *));
    cr_assert_not_null(az);
    for (i = 0; i < n; i++) {
        if (strncmp(environ[i], "UBSAN_OPTIONS=", 14) == 0) continue;
#ifdef TEST_UNDER_ASAN
        if (strncmp(environ[i], "ASAN_OPTIONS=", 13) == 0) continue;
#endif
        az[k++] = environ[i];
    }
    az[k++] = env_with("UBSAN_OPTIONS", CHILD_UBSAN_OPTIONS);
#ifdef TEST_UNDER_ASAN
    az[k++] = env_with("ASAN_OPTIONS", CHILD_ASAN_OPTIONS);
#endif
    az[k] = NULL;
    s_az = az;
    return az;
}

static void append(char **pz, size_t *pn, const char *p, size_t n)
{
    char *z = realloc(*pz, *pn + n + 1);
    cr_assert_not_null(z);
    memcpy(z + *pn, p, n);
    *pn += n;
    z[*pn] = 0;
    *pz = z;
}

/* Runs azArgv (azArgv[0] is the program path) with stdin from /dev/null, stdout and stderr
 * captured, in its own process group; after limitSeconds the group is killed. */
static void run_argv(const char *const *azArgv, double limitSeconds, run_result *pRes)
{
    int aOut[2], aErr[2], status = 0;
    char **azEnv = child_env();
    double tStart = now_seconds();
    struct pollfd aPoll[2];
    pid_t pid;

    memset(pRes, 0, sizeof *pRes);
    pRes->code = -1;
    append(&pRes->zOut, &pRes->nOut, "", 0);
    append(&pRes->zErr, &pRes->nErr, "", 0);
    cr_assert(pipe2(aOut, O_CLOEXEC) == 0 && pipe2(aErr, O_CLOEXEC) == 0);
    fflush(NULL);
    pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int fdNull = open("/dev/null", O_RDONLY);
        setpgid(0, 0);
        if (fdNull >= 0) dup2(fdNull, 0);
        dup2(aOut[1], 1);
        dup2(aErr[1], 2);
        execve(azArgv[0], (char *const *)azArgv, azEnv);
        _exit(127);
    }
    setpgid(pid, pid);   /* also here, so kill(-pid) works however the race goes */
    close(aOut[1]);
    close(aErr[1]);
    aPoll[0].fd = aOut[0];
    aPoll[1].fd = aErr[0];
    aPoll[0].events = aPoll[1].events = POLLIN;
    while (aPoll[0].fd >= 0 || aPoll[1].fd >= 0) {
        double left = limitSeconds - (now_seconds() - tStart);
        int i, got;
        if (left <= 0) {
            pRes->timedOut = 1;
            kill(-pid, SIGKILL);
            break;
        }
        got = poll(aPoll, 2, (int)(left * 1000) + 1);
        if (got < 0 && errno == EINTR) continue;
        cr_assert(got >= 0, "poll: %s", strerror(errno));
        for (i = 0; i < 2; i++) {
            char aBuf[65536];
            ssize_t n;
            if (aPoll[i].fd < 0 || !(aPoll[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            n = read(aPoll[i].fd, aBuf, sizeof aBuf);
            if (n > 0) {
                if (i == 0) append(&pRes->zOut, &pRes->nOut, aBuf, (size_t)n);
                else append(&pRes->zErr, &pRes->nErr, aBuf, (size_t)n);
            } else if (n == 0 || errno != EINTR) {
                close(aPoll[i].fd);
                aPoll[i].fd = -1;
            }
        }
    }
    if (aPoll[0].fd >= 0) close(aPoll[0].fd);
    if (aPoll[1].fd >= 0) close(aPoll[1].fd);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    pRes->seconds = now_seconds() - tStart;
    pRes->exited = WIFEXITED(status);
    pRes->code = pRes->exited ? WEXITSTATUS(status) : -1;
    pRes->signaled = WIFSIGNALED(status);
    pRes->sig = pRes->signaled ? WTERMSIG(status) : 0;
}

static void run_free(run_result *pRes)
{
    free(pRes->zOut);
    free(pRes->zErr);
    memset(pRes, 0, sizeof *pRes);
}

/* Runs paritydiff with the NULL-terminated argument list. */
static void run_paritydiff(run_result *pRes, ...)
{
    const char *azArgv[64];
    size_t n = 0;
    va_list ap;
    azArgv[n++] = PARITYDIFF_BIN;
    va_start(ap, pRes);
    for (;;) {
        const char *z = va_arg(ap, const char *);
        cr_assert_lt(n, 63);
        azArgv[n++] = z;
        if (!z) break;
    }
    va_end(ap);
    run_argv(azArgv, 120.0, pRes);
}

/* ---- reading stderr -------------------------------------------------------------- */

#define WARNING_PREFIX "paritydiff: warning: "

/* Lines of z that are (isWarning 1) or are not (0) "paritydiff: warning: " lines; the
 * first such line is copied to zFirst. An unterminated last line counts. */
static int count_lines(const char *z, int isWarning, char *zFirst, size_t nFirst)
{
    int n = 0;
    if (zFirst && nFirst) zFirst[0] = 0;
    while (*z) {
        const char *zEnd = strchr(z, '\n');
        size_t nLine = zEnd ? (size_t)(zEnd - z) : strlen(z);
        int warn = strncmp(z, WARNING_PREFIX, strlen(WARNING_PREFIX)) == 0;
        if (warn == isWarning) {
            if (n == 0 && zFirst && nFirst) {
                size_t nCopy = nLine < nFirst - 1 ? nLine : nFirst - 1;
                memcpy(zFirst, z, nCopy);
                zFirst[nCopy] = 0;
            }
            n++;
        }
        z += nLine + (zEnd ? 1 : 0);
    }
    return n;
}

/* Nothing anywhere in the output that only a crash or a library dump would print. */
static void expect_clean_stderr(const run_result *pRes, const char *zWhat)
{
    cr_expect(!pRes->signaled, "%s: killed by signal %d", zWhat, pRes->sig);
    cr_expect(!pRes->timedOut, "%s: did not finish", zWhat);
    cr_expect_null(strstr(pRes->zErr, "HDF5-DIAG"), "%s: HDF5 error stack dumped:\n%s", zWhat,
                   pRes->zErr);
    cr_expect_null(strstr(pRes->zErr, "Sanitizer"), "%s: sanitizer report:\n%s", zWhat, pRes->zErr);
    cr_expect_null(strstr(pRes->zErr, "runtime error:"), "%s: UBSan report:\n%s", zWhat, pRes->zErr);
}

/* Exit 2 with exactly one (non-warning) line on stderr, "paritydiff: ...", naming zFile
 * and containing each of the optional needles. */
static void expect_trouble(const run_result *pRes, const char *zWhat, const char *zFile,
                           const char *zNeedle1, const char *zNeedle2)
{
    char zLine[4096];
    int nLines = count_lines(pRes->zErr, 0, zLine, sizeof zLine);
    expect_clean_stderr(pRes, zWhat);
    cr_expect_eq(pRes->code, 2, "%s: exit %d, want 2; stderr:\n%s", zWhat, pRes->code, pRes->zErr);
    cr_expect_eq(nLines, 1, "%s: %d error lines on stderr, want 1:\n%s", zWhat, nLines, pRes->zErr);
    cr_expect(strncmp(zLine, "paritydiff: ", 12) == 0, "%s: line '%s'", zWhat, zLine);
    cr_expect_not_null(strstr(zLine, zFile), "%s: line '%s' does not name %s", zWhat, zLine, zFile);
    if (zNeedle1)
        cr_expect_not_null(strstr(zLine, zNeedle1), "%s: line '%s' lacks '%s'", zWhat, zLine, zNeedle1);
    if (zNeedle2)
        cr_expect_not_null(strstr(zLine, zNeedle2), "%s: line '%s' lacks '%s'", zWhat, zLine, zNeedle2);
}

/* ---- fixtures -------------------------------------------------------------------- */

static char g_zDir[4096];

static void make_dir(void)
{
    snprintf(g_zDir, sizeof g_zDir, "%s/badinput-XXXXXX", TEST_BINARY_DIR);
    cr_assert_not_null(mkdtemp(g_zDir), "mkdtemp %s: %s", g_zDir, strerror(errno));
}

static int remove_one(const char *zPath, const struct stat *pSt, int flag, struct FTW *pFtw)
{
    (void)pSt; (void)flag; (void)pFtw;
    remove(zPath);
    return 0;
}

static void free_paths(void);

static void remove_dir(void)
{
    if (g_zDir[0]) nftw(g_zDir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    free_paths();
}

TestSuite(badinput, .init = make_dir, .fini = remove_dir);

/* Paths handed out stay valid until the suite's fini frees them (kept in a global, so
 * LeakSanitizer sees them as reachable). */
static char *g_azKeep[4096];
static size_t g_nKeep;

static const char *tmp_path(const char *zName)
{
    size_t n = strlen(g_zDir) + strlen(zName) + 2;
    char *z = malloc(n);
    cr_assert_not_null(z);
    cr_assert_lt(g_nKeep, sizeof g_azKeep / sizeof g_azKeep[0]);
    snprintf(z, n, "%s/%s", g_zDir, zName);
    g_azKeep[g_nKeep++] = z;
    return z;
}

static void free_paths(void)
{
    while (g_nKeep > 0) free(g_azKeep[--g_nKeep]);
}

static parity_writer *wopen(const char *zFile)
{
    parity_writer *pW;
    char zErr[PARITY_ERR_LEN];
    cr_assert_eq(parity_writer_open(zFile, &pW, zErr, sizeof zErr), 0, "%s", zErr);
    return pW;
}

static void wcheck(parity_writer *pW, int rc)
{
    cr_assert_eq(rc, 0, "writer: %s", parity_writer_error(pW));
}

static void wclose(parity_writer *pW)
{
    char zErr[PARITY_ERR_LEN];
    cr_assert_eq(parity_writer_close(pW, zErr, sizeof zErr), 0, "%s", zErr);
}

static void w_f32(parity_writer *pW, const char *zName, const float *a, uint64_t n)
{
    wcheck(pW, parity_writer_tensor(pW, zName, PARITY_DT_F32, 1, &n, a));
}

static void w_op(parity_writer *pW, const char *zName, const char *zOp,
                 const char *const *azInputs, size_t nInputs)
{
    if (zOp) wcheck(pW, parity_writer_attr_string(pW, zName, "op", zOp));
    if (azInputs) wcheck(pW, parity_writer_attr_strings(pW, zName, "inputs", azInputs, nInputs));
}

/* A valid pair: /x (graph input) -> /y = relu(x); /y differs when yDelta != 0. */
static void write_simple(const char *zFile, float yDelta, const char *zSide)
{
    static const float aX[4] = { -1.0f, 0.5f, 2.0f, 3.0f };
    float aY[4];
    static const char *const azIn[] = { "/x" };
    parity_writer *pW = wopen(zFile);
    int i;
    for (i = 0; i < 4; i++) aY[i] = (aX[i] > 0 ? aX[i] : 0.0f) + yDelta;
    wcheck(pW, parity_writer_attr_string(pW, "/", "side", zSide));
    w_f32(pW, "/x", aX, 4);
    w_f32(pW, "/y", aY, 4);
    w_op(pW, "/y", "test.act", azIn, 1);
    wclose(pW);
}

static const char *g_zGoodE, *g_zGoodC;

static void write_good_pair(void)
{
    g_zGoodE = tmp_path("good_eager.h5");
    g_zGoodC = tmp_path("good_compiled.h5");
    write_simple(g_zGoodE, 0.0f, "eager");
    write_simple(g_zGoodC, 0.0f, "compiled");
}

static void write_bytes(const char *zFile, const void *p, size_t n)
{
    FILE *pF = fopen(zFile, "wb");
    cr_assert_not_null(pF, "%s: %s", zFile, strerror(errno));
    cr_assert_eq(fwrite(p, 1, n, pF), n);
    cr_assert_eq(fclose(pF), 0);
}

static unsigned char *read_bytes(const char *zFile, size_t *pn)
{
    FILE *pF = fopen(zFile, "rb");
    unsigned char *p;
    long n;
    cr_assert_not_null(pF, "%s: %s", zFile, strerror(errno));
    fseek(pF, 0, SEEK_END);
    n = ftell(pF);
    fseek(pF, 0, SEEK_SET);
    p = malloc((size_t)n + 1);
    cr_assert_not_null(p);
    cr_assert_eq(fread(p, 1, (size_t)n, pF), (size_t)n);
    fclose(pF);
    *pn = (size_t)n;
    return p;
}

/* Deterministic bytes (xorshift64*). */
static uint64_t next_random(uint64_t *pState)
{
    uint64_t x = *pState;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    *pState = x;
    return x * 2685821657736338717ULL;
}

/* Runs the bad file both as eager (against the good compiled) and as compiled (against the
 * good eager), expecting trouble that names it. */
static void expect_trouble_both_ways(const char *zBad, const char *zWhat, const char *zNeedle1,
                                     const char *zNeedle2)
{
    run_result r;
    char zLabel[512];
    snprintf(zLabel, sizeof zLabel, "%s as compiled", zWhat);
    run_paritydiff(&r, g_zGoodE, zBad, NULL);
    expect_trouble(&r, zLabel, zBad, zNeedle1, zNeedle2);
    run_free(&r);
    snprintf(zLabel, sizeof zLabel, "%s as eager", zWhat);
    run_paritydiff(&r, zBad, g_zGoodC, NULL);
    expect_trouble(&r, zLabel, zBad, zNeedle1, zNeedle2);
    run_free(&r);
}

/* Does SYSTEM_PYTHON have h5py? Asked once per process. */
static int have_h5py(void)
{
    static int s_known = -1;
    if (s_known < 0) {
        const char *azArgv[] = { SYSTEM_PYTHON, "-c", "import h5py, numpy", NULL };
        run_result r;
        run_argv(azArgv, 60.0, &r);
        s_known = r.exited && r.code == 0;
        run_free(&r);
    }
    return s_known;
}

/* Runs a Python snippet with h5py; the test's directory is sys.argv[1]. */
static void run_h5py(const char *zScript)
{
    const char *azArgv[] = { SYSTEM_PYTHON, "-c", zScript, g_zDir, NULL };
    run_result r;
    if (!have_h5py()) cr_skip_test("%s has no h5py", SYSTEM_PYTHON);
    run_argv(azArgv, 120.0, &r);
    cr_assert(r.exited && r.code == 0, "python failed:\n%s", r.zErr);
    run_free(&r);
}

static json_t *parse_json(const char *z)
{
    json_error_t err;
    json_t *pDoc = json_loads(z, 0, &err);
    cr_assert_not_null(pDoc, "not JSON (%s at line %d):\n%s", err.text, err.line, z);
    return pDoc;
}

/* ---- files that are not captures -------------------------------------------------- */

Test(badinput, nonexistent_file)
{
    write_good_pair();
    expect_trouble_both_ways(tmp_path("no_such_file.h5"), "nonexistent", "No such file", NULL);
}

Test(badinput, directory)
{
    const char *zDir = tmp_path("a_directory.h5");
    write_good_pair();
    cr_assert_eq(mkdir(zDir, 0755), 0);
    expect_trouble_both_ways(zDir, "directory", NULL, NULL);
}

Test(badinput, empty_file)
{
    const char *zEmpty = tmp_path("empty.h5");
    write_good_pair();
    write_bytes(zEmpty, "", 0);
    expect_trouble_both_ways(zEmpty, "empty file", NULL, NULL);
}

Test(badinput, random_bytes)
{
    static const size_t aSize[] = { 1, 7, 100, 4096, 100000 };
    static const unsigned char aSig[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
    uint64_t state = 0x9E3779B97F4A7C15ULL;
    size_t i, k;
    write_good_pair();
    for (i = 0; i < sizeof aSize / sizeof aSize[0]; i++) {
        for (k = 0; k < 2; k++) {
            /* k == 1: random bytes behind a valid HDF5 signature, so libhdf5 parses them. */
            unsigned char *p = malloc(aSize[i] + 8);
            char zName[64], zWhat[128];
            size_t j, n = aSize[i] + (k ? 8 : 0);
            const char *zFile;
            cr_assert_not_null(p);
            for (j = 0; j < n; j++) p[j] = (unsigned char)(next_random(&state) >> 56);
            if (k) memcpy(p, aSig, 8);
            snprintf(zName, sizeof zName, "random_%zu_%zu.h5", aSize[i], k);
            zFile = tmp_path(zName);
            write_bytes(zFile, p, n);
            free(p);
            snprintf(zWhat, sizeof zWhat, "%zu random bytes%s", n, k ? " after the signature" : "");
            expect_trouble_both_ways(zFile, zWhat, NULL, NULL);
        }
    }
}

Test(badinput, truncated)
{
    size_t n, i;
    unsigned char *p;
    write_good_pair();
    p = read_bytes(g_zGoodC, &n);
    cr_assert_gt(n, 2100);
    {
        const size_t aCut[] = { 1, 8, 9, 64, 200, 512, 1000, 2048, n / 2, n - 100, n - 8, n - 1 };
        for (i = 0; i < sizeof aCut / sizeof aCut[0]; i++) {
            char zName[64], zWhat[128];
            const char *zFile;
            snprintf(zName, sizeof zName, "truncated_%zu.h5", aCut[i]);
            zFile = tmp_path(zName);
            write_bytes(zFile, p, aCut[i]);
            snprintf(zWhat, sizeof zWhat, "truncated to %zu of %zu bytes", aCut[i], n);
            expect_trouble_both_ways(zFile, zWhat, NULL, NULL);
        }
    }
    free(p);
}

/* ---- unusable metadata ------------------------------------------------------------- */

Test(badinput, unknown_dtype_attribute)
{
    const char *zBad = tmp_path("unknown_dtype.h5");
    static const uint16_t aBits[4] = { 0x3F80, 0x4000, 0x4040, 0x4080 };
    const uint64_t n = 4;
    parity_writer *pW;
    write_good_pair();
    pW = wopen(zBad);
    wcheck(pW, parity_writer_tensor(pW, "/y", PARITY_DT_U16, 1, &n, aBits));
    wcheck(pW, parity_writer_attr_string(pW, "/y", "dtype", "float99"));
    wclose(pW);
    expect_trouble_both_ways(zBad, "unknown dtype attribute", "/y", "float99");
}

/* One bad attribute on /y per file: its kind and the value writer. */
typedef struct {
    const char *zLabel, *zAttr;
    void (*xWrite)(parity_writer *pW);
} bad_attr_case;

static void bad_op_int(parity_writer *pW) { wcheck(pW, parity_writer_attr_int(pW, "/y", "op", 3)); }
static void bad_op_array(parity_writer *pW)
{
    static const char *const az[] = { "relu", "gelu" };
    wcheck(pW, parity_writer_attr_strings(pW, "/y", "op", az, 2));
}
static void bad_inputs_int(parity_writer *pW)
{
    static const int64_t a[] = { 1, 2 };
    wcheck(pW, parity_writer_attr_ints(pW, "/y", "inputs", a, 2));
}
static void bad_order_string(parity_writer *pW)
{
    wcheck(pW, parity_writer_attr_string(pW, "/y", "order", "first"));
}
static void bad_order_float(parity_writer *pW)
{
    wcheck(pW, parity_writer_attr_float(pW, "/y", "order", 1.5));
}
static void bad_order_array(parity_writer *pW)
{
    static const int64_t a[] = { 1, 2 };
    wcheck(pW, parity_writer_attr_ints(pW, "/y", "order", a, 2));
}
static void bad_dtype_int(parity_writer *pW) { wcheck(pW, parity_writer_attr_int(pW, "/y", "dtype", 7)); }
static void bad_dtype_mismatch(parity_writer *pW)
{
    /* A float32 dataset cannot hold bfloat16 bit patterns. */
    wcheck(pW, parity_writer_attr_string(pW, "/y", "dtype", "bfloat16"));
}

Test(badinput, wrong_attribute_types)
{
    static const bad_attr_case aCase[] = {
        { "op is an integer", "op", bad_op_int },
        { "op is two strings", "op", bad_op_array },
        { "inputs are integers", "inputs", bad_inputs_int },
        { "order is a string", "order", bad_order_string },
        { "order is a float", "order", bad_order_float },
        { "order is an array", "order", bad_order_array },
        { "dtype is an integer", "dtype", bad_dtype_int },
        { "dtype does not fit the storage", "dtype", bad_dtype_mismatch },
    };
    static const float aX[4] = { -1.0f, 0.5f, 2.0f, 3.0f };
    static const float aY[4] = { 0.0f, 0.5f, 2.0f, 3.0f };
    size_t i;
    write_good_pair();
    for (i = 0; i < sizeof aCase / sizeof aCase[0]; i++) {
        char zName[64];
        const char *zBad;
        parity_writer *pW;
        snprintf(zName, sizeof zName, "bad_attr_%zu.h5", i);
        zBad = tmp_path(zName);
        pW = wopen(zBad);
        w_f32(pW, "/x", aX, 4);
        w_f32(pW, "/y", aY, 4);
        aCase[i].xWrite(pW);
        wclose(pW);
        expect_trouble_both_ways(zBad, aCase[i].zLabel, "/y", aCase[i].zAttr);
    }
}

/* ---- what only h5py can write ------------------------------------------------------ */

Test(badinput, absurd_shape)
{
    /* 2^60 elements, chunked and never written: legal HDF5, a 1.4 KB file. */
    const char *zBad = tmp_path("absurd.h5");
    write_good_pair();
    run_h5py("import h5py, sys\n"
             "with h5py.File(sys.argv[1] + '/absurd.h5', 'w') as f:\n"
             "    f.create_dataset('y', shape=(2**40, 2**20), dtype='f4', chunks=(1, 1024))\n"
             "    f.create_dataset('x', data=[-1.0, 0.5, 2.0, 3.0], dtype='f4')\n");
    expect_trouble_both_ways(zBad, "absurd shape", "absurd shape", "/y");
}

Test(badinput, enormous_legal_shape_is_bounded_by_timeout, .timeout = 120)
{
    /* 2^47 float32 elements (under the 2^48 limit, so not refused), never written: reading
     * the fill values would take days. --timeout must end it with one line and exit 2. */
    const char *zBig = tmp_path("enormous.h5");
    run_result r;
    run_h5py("import h5py, sys\n"
             "with h5py.File(sys.argv[1] + '/enormous.h5', 'w') as f:\n"
             "    f.create_dataset('y', shape=(2**24, 2**23), dtype='f4', chunks=(1, 4096))\n");
    run_paritydiff(&r, "--timeout", "3", "--stall-timeout", "3", zBig, zBig, NULL);
    expect_trouble(&r, "enormous unwritten tensor", zBig, "time limit", NULL);
    cr_expect_lt(r.seconds, 30.0, "took %.1f s", r.seconds);
    run_free(&r);
}

Test(badinput, unsupported_element_types)
{
    const char *zBad = tmp_path("types.h5");
    write_good_pair();
    run_h5py("import h5py, numpy as np, sys\n"
             "with h5py.File(sys.argv[1] + '/types.h5', 'w') as f:\n"
             "    f['x'] = np.array([-1.0, 0.5, 2.0, 3.0], dtype='f4')\n"
             "    f['y'] = np.array([b'ab', b'cd', b'ef', b'gh'])\n");
    expect_trouble_both_ways(zBad, "string dataset", "/y", "string");
    run_h5py("import h5py, numpy as np, sys\n"
             "with h5py.File(sys.argv[1] + '/types.h5', 'w') as f:\n"
             "    f['x'] = np.array([-1.0, 0.5, 2.0, 3.0], dtype='f4')\n"
             "    f['y'] = np.zeros(4, dtype=[('a', 'i4'), ('b', 'f4')])\n");
    expect_trouble_both_ways(zBad, "compound dataset", "/y", "compound");
}

/* ---- legal oddities: a verdict, and warnings where the brief asks for them ---------- */

/* Writes a capture with tensors /a, /b (op) whose inputs are given; deltas perturb them. */
static void write_graph(const char *zFile, const char *const *azInA, size_t nInA,
                        const char *const *azInB, size_t nInB, float deltaA)
{
    static const float aBase[3] = { 1.0f, 2.0f, 3.0f };
    float aA[3];
    int i;
    parity_writer *pW = wopen(zFile);
    for (i = 0; i < 3; i++) aA[i] = aBase[i] + deltaA;
    w_f32(pW, "/a", aA, 3);
    w_f32(pW, "/b", aBase, 3);
    w_op(pW, "/a", "test.add", azInA, nInA);
    w_op(pW, "/b", "test.mul", azInB, nInB);
    wclose(pW);
}

Test(badinput, compiled_dangling_inputs_are_silent)
{
    /* The compiled side may fuse intermediates away: its "inputs" naming a tensor it lacks
     * is normal, not worth a warning. */
    static const char *const azIn[] = { "/fused_away" };
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    run_result r;
    json_t *pDoc;
    write_graph(zE, NULL, 0, NULL, 0, 0.0f);
    write_graph(zC, azIn, 1, azIn, 1, 0.0f);
    run_paritydiff(&r, "--json", "-", zE, zC, NULL);
    expect_clean_stderr(&r, "compiled dangling");
    cr_expect_eq(r.code, 0, "exit %d; stderr:\n%s", r.code, r.zErr);
    cr_expect_eq(r.nErr, 0, "stderr should be empty:\n%s", r.zErr);
    pDoc = parse_json(r.zOut);
    cr_expect_str_eq(json_string_value(json_object_get(pDoc, "verdict")), "pass");
    cr_expect_eq(json_array_size(json_object_get(pDoc, "warnings")), 0);
    json_decref(pDoc);
    run_free(&r);
}

/* A warning line on stderr and in the JSON "warnings" containing zNeedle. */
static void expect_warning(const run_result *pRes, json_t *pDoc, const char *zNeedle)
{
    json_t *pWarn = json_object_get(pDoc, "warnings");
    size_t i, nJson = 0;
    const char *z = pRes->zErr;
    int nStderr = 0;
    while ((z = strstr(z, WARNING_PREFIX)) != NULL) {
        const char *zEnd = strchr(z, '\n');
        size_t nLine = zEnd ? (size_t)(zEnd - z) : strlen(z);
        char *zLine = strndup(z, nLine);
        if (strstr(zLine, zNeedle)) nStderr++;
        free(zLine);
        z += nLine;
    }
    cr_expect_gt(nStderr, 0, "no stderr warning containing '%s':\n%s", zNeedle, pRes->zErr);
    cr_expect(json_is_array(pWarn), "JSON has no warnings array");
    for (i = 0; i < json_array_size(pWarn); i++) {
        const char *zW = json_string_value(json_array_get(pWarn, i));
        if (zW && strstr(zW, zNeedle)) nJson++;
    }
    cr_expect_gt(nJson, 0, "no JSON warning containing '%s'", zNeedle);
    cr_expect_eq(count_lines(pRes->zErr, 0, NULL, 0), 0, "non-warning lines on stderr:\n%s", pRes->zErr);
}

Test(badinput, eager_dangling_inputs_warn_and_judge)
{
    static const char *const azIn[] = { "/a", "/missing_tensor" };
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5"), *zC2 = tmp_path("c2.h5");
    run_result r;
    json_t *pDoc;
    write_graph(zE, NULL, 0, azIn, 2, 0.0f);
    write_graph(zC, NULL, 0, azIn, 2, 0.0f);
    write_graph(zC2, NULL, 0, azIn, 2, 0.5f);

    run_paritydiff(&r, "--json", "-", zE, zC, NULL);
    expect_clean_stderr(&r, "eager dangling, pass");
    cr_expect_eq(r.code, 0, "exit %d; stderr:\n%s", r.code, r.zErr);
    pDoc = parse_json(r.zOut);
    cr_expect_str_eq(json_string_value(json_object_get(pDoc, "verdict")), "pass");
    expect_warning(&r, pDoc, "/missing_tensor");
    json_decref(pDoc);
    run_free(&r);

    /* The verdict is still computed: /a differs, so fail. */
    run_paritydiff(&r, "--json", "-", zE, zC2, NULL);
    expect_clean_stderr(&r, "eager dangling, fail");
    cr_expect_eq(r.code, 1, "exit %d; stderr:\n%s", r.code, r.zErr);
    pDoc = parse_json(r.zOut);
    cr_expect_str_eq(json_string_value(json_object_get(pDoc, "verdict")), "fail");
    cr_expect_str_eq(json_string_value(json_object_get(pDoc, "first_divergence")), "/a");
    expect_warning(&r, pDoc, "/missing_tensor");
    json_decref(pDoc);
    run_free(&r);
}

Test(badinput, cycle_warns_and_judges)
{
    /* /a <- /b <- /a */
    static const char *const azInA[] = { "/b" }, *const azInB[] = { "/a" };
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5"), *zC2 = tmp_path("c2.h5");
    run_result r;
    json_t *pDoc;
    write_graph(zE, azInA, 1, azInB, 1, 0.0f);
    write_graph(zC, azInA, 1, azInB, 1, 0.0f);
    write_graph(zC2, azInA, 1, azInB, 1, 0.5f);

    run_paritydiff(&r, "--json", "-", zE, zC, NULL);
    expect_clean_stderr(&r, "cycle, pass");
    cr_expect_eq(r.code, 0, "exit %d; stderr:\n%s", r.code, r.zErr);
    pDoc = parse_json(r.zOut);
    cr_expect_str_eq(json_string_value(json_object_get(pDoc, "verdict")), "pass");
    expect_warning(&r, pDoc, "cycle");
    cr_expect_eq(json_array_size(json_object_get(pDoc, "tensors")), 2);
    json_decref(pDoc);
    run_free(&r);

    run_paritydiff(&r, "--json", "-", zE, zC2, NULL);
    expect_clean_stderr(&r, "cycle, fail");
    cr_expect_eq(r.code, 1, "exit %d; stderr:\n%s", r.code, r.zErr);
    pDoc = parse_json(r.zOut);
    cr_expect_str_eq(json_string_value(json_object_get(pDoc, "verdict")), "fail");
    cr_expect_str_eq(json_string_value(json_object_get(pDoc, "first_divergence")), "/a");
    expect_warning(&r, pDoc, "cycle");
    json_decref(pDoc);
    run_free(&r);
}

Test(badinput, self_cycle_warns)
{
    static const char *const azInA[] = { "/a" };
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    run_result r;
    json_t *pDoc;
    write_graph(zE, azInA, 1, NULL, 0, 0.0f);
    write_graph(zC, azInA, 1, NULL, 0, 0.0f);
    run_paritydiff(&r, "--json", "-", zE, zC, NULL);
    expect_clean_stderr(&r, "self cycle");
    cr_expect_eq(r.code, 0, "exit %d; stderr:\n%s", r.code, r.zErr);
    pDoc = parse_json(r.zOut);
    expect_warning(&r, pDoc, "cycle");
    json_decref(pDoc);
    run_free(&r);
}

Test(badinput, zero_size_tensors_pass_with_warning)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    const char *azFile[2] = { zE, zC };
    static const uint64_t aDim0[1] = { 0 }, aDim30[2] = { 3, 0 };
    float dummy = 0.0f;
    run_result r;
    json_t *pDoc, *pTensors;
    size_t i;
    for (i = 0; i < 2; i++) {
        parity_writer *pW = wopen(azFile[i]);
        wcheck(pW, parity_writer_tensor(pW, "/empty", PARITY_DT_F32, 1, aDim0, &dummy));
        wcheck(pW, parity_writer_tensor(pW, "/empty2d", PARITY_DT_F64, 2, aDim30, &dummy));
        wclose(pW);
    }
    run_paritydiff(&r, "--json", "-", zE, zC, NULL);
    expect_clean_stderr(&r, "zero-size");
    cr_expect_eq(r.code, 0, "exit %d; stderr:\n%s", r.code, r.zErr);
    pDoc = parse_json(r.zOut);
    cr_expect_str_eq(json_string_value(json_object_get(pDoc, "verdict")), "pass");
    expect_warning(&r, pDoc, "/empty2d");
    expect_warning(&r, pDoc, "zero-size");
    pTensors = json_object_get(pDoc, "tensors");
    cr_expect_eq(json_array_size(pTensors), 2);
    for (i = 0; i < json_array_size(pTensors); i++) {
        json_t *pT = json_array_get(pTensors, i);
        cr_expect_str_eq(json_string_value(json_object_get(pT, "status")), "pass");
        cr_expect_eq(json_integer_value(json_object_get(pT, "elements")), 0);
        /* diff/REPORT.md: no worst element and no failing box in a zero-size tensor */
        cr_expect(json_is_null(json_object_get(pT, "worst_index")));
        cr_expect(json_is_null(json_object_get(pT, "worst_score")));
        cr_expect(json_is_null(json_object_get(pT, "affected_slice")));
        cr_expect(json_is_integer(json_object_get(pT, "mismatches")));
        cr_expect_eq(json_array_size(json_object_get(pT, "warnings")), 1);
    }
    json_decref(pDoc);
    run_free(&r);
}

/* ---- the command line itself -------------------------------------------------------- */

Test(badinput, usage_errors)
{
    static const char *const aazCase[][6] = {
        { "--bogus", "a.h5", "b.h5", NULL },
        { "-x", "a.h5", "b.h5", NULL },
        { "a.h5", NULL },
        { NULL },
        { "a.h5", "b.h5", "c.h5", NULL },
        { "--rtol", "abc", "a.h5", "b.h5", NULL },
        { "--rtol", "-1", "a.h5", "b.h5", NULL },
        { "--atol", "nan", "a.h5", "b.h5", NULL },
        { "--max-ulp", "-3", "a.h5", "b.h5", NULL },
        { "--threads", "0", "a.h5", "b.h5", NULL },
        { "--threads", "65", "a.h5", "b.h5", NULL },
        { "--timeout", "soon", "a.h5", "b.h5", NULL },
        { "--max-memory", "", "a.h5", "b.h5", NULL },
        { "--json", NULL },
    };
    size_t i, k;
    for (i = 0; i < sizeof aazCase / sizeof aazCase[0]; i++) {
        const char *azArgv[8];
        char zWhat[256] = "paritydiff", zFirst[1024];
        run_result r;
        size_t n = 0;
        const char *zSecond;
        azArgv[n++] = PARITYDIFF_BIN;
        for (k = 0; aazCase[i][k]; k++) {
            azArgv[n++] = aazCase[i][k];
            strncat(zWhat, " ", sizeof zWhat - strlen(zWhat) - 1);
            strncat(zWhat, aazCase[i][k], sizeof zWhat - strlen(zWhat) - 1);
        }
        azArgv[n] = NULL;
        run_argv(azArgv, 30.0, &r);
        expect_clean_stderr(&r, zWhat);
        cr_expect_eq(r.code, 2, "%s: exit %d", zWhat, r.code);
        cr_expect_eq(r.nOut, 0, "%s: stdout not empty:\n%s", zWhat, r.zOut);
        cr_expect_eq(count_lines(r.zErr, 0, zFirst, sizeof zFirst), 2, "%s: stderr:\n%s", zWhat, r.zErr);
        cr_expect(strncmp(zFirst, "paritydiff: ", 12) == 0, "%s: first line '%s'", zWhat, zFirst);
        zSecond = strchr(r.zErr, '\n');
        cr_expect(zSecond && strncmp(zSecond + 1, "Try 'paritydiff --help'", 23) == 0,
                  "%s: no help hint on the second line:\n%s", zWhat, r.zErr);
        run_free(&r);
    }
}

Test(badinput, help_and_version)
{
    run_result r;
    run_paritydiff(&r, "--help", NULL);
    expect_clean_stderr(&r, "--help");
    cr_expect_eq(r.code, 0);
    cr_expect_eq(r.nErr, 0);
    cr_expect_not_null(strstr(r.zOut, "Usage: paritydiff"), "%s", r.zOut);
    cr_expect_not_null(strstr(r.zOut, "Exit status"), "%s", r.zOut);
    run_free(&r);
    run_paritydiff(&r, "-h", NULL);
    cr_expect_eq(r.code, 0);
    cr_expect_not_null(strstr(r.zOut, "Usage: paritydiff"));
    run_free(&r);
    run_paritydiff(&r, "--version", NULL);
    expect_clean_stderr(&r, "--version");
    cr_expect_eq(r.code, 0);
    cr_expect_eq(r.nErr, 0);
    cr_expect(strncmp(r.zOut, "paritydiff ", 11) == 0 && strchr(r.zOut, '\n') == r.zOut + r.nOut - 1,
              "version output: '%s'", r.zOut);
    run_free(&r);
    run_paritydiff(&r, "-V", NULL);
    cr_expect_eq(r.code, 0);
    run_free(&r);
}

Test(badinput, unwritable_json_report)
{
    const char *zJson = tmp_path("no_such_dir/report.json");
    run_result r;
    write_good_pair();
    run_paritydiff(&r, "-q", "--json", zJson, g_zGoodE, g_zGoodC, NULL);
    expect_trouble(&r, "unwritable --json", zJson, NULL, NULL);
    run_free(&r);
}
