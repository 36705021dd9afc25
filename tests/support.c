/*
 * support.c - helpers shared by the Criterion test executables; see support.h.
 */
#define _GNU_SOURCE 1   /* nftw */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "support.h"
#include "formats/process.h"
#include "tolerance/mpref.h"

extern char **environ;

/* ---- running a program and capturing everything ----------------------------------- */

double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sanitizer builds: libhdf5 is not instrumented and crashes on some corrupt files.
 * paritydiff's supervisor (formats/process.c) must see such a crash as the signal it is, to
 * turn it into one line and exit 2. If the sanitizer runtime handled SIGSEGV, SIGABRT,
 * SIGBUS or SIGFPE itself, it would print its report and exit with status 1, which the
 * supervisor passes on as "divergence", and the tests would test the sanitizer instead of
 * paritydiff. So the child gets handle_*=0 appended. Further:
 * - abort_on_error=1: ASan's interceptors (memcpy, malloc) do catch libhdf5's own memory
 *   errors on corrupt files (H5HG_read, H5O attribute messages); reported and then exit 1,
 *   they too would read as "divergence". As a SIGABRT they reach the supervisor the way a
 *   crash does in a normal build.
 * - allocator_may_return_null=1: a hostile size makes libhdf5 ask for terabytes; a normal
 *   build gets NULL (and RLIMIT_AS, which process.c skips under ASan), ASan would report.
 * - detect_leaks=0: the worker process leaves by _exit on purpose.
 * UBSAN_OPTIONS is set unconditionally: GCC defines no macro for UBSan, and without UBSan
 * it is ignored. Any sanitizer report still fails the tests that look at stderr. */
#define CHILD_ASAN_OPTIONS \
    "handle_segv=0:handle_abort=0:handle_sigbus=0:handle_sigfpe=0:detect_leaks=0:" \
    "allocator_may_return_null=1:abort_on_error=1"
#define CHILD_UBSAN_OPTIONS "handle_segv=0:handle_abort=0:handle_sigbus=0:handle_sigfpe=0"

static char *env_with(const char *zName, const char *zAppend)
{
    const char *zOld = getenv(zName);
    size_t n = strlen(zName) + strlen(zAppend) + (zOld ? strlen(zOld) : 0) + 4;
    char *z = malloc(n);
    if (!z) return NULL;
    if (zOld && zOld[0]) snprintf(z, n, "%s=%s:%s", zName, zOld, zAppend);
    else snprintf(z, n, "%s=%s", zName, zAppend);
    return z;
}

char **child_env(void)
{
    static char **s_az;
    size_t n = 0, i, k = 0;
    char **az;
    if (s_az) return s_az;
    while (environ[n]) n++;
    az = calloc(n + 3, sizeof(char *));
    if (!az) return environ;
    for (i = 0; i < n; i++) {
        if (strncmp(environ[i], "UBSAN_OPTIONS=", 14) == 0) continue;
#ifdef TEST_UNDER_ASAN
        if (strncmp(environ[i], "ASAN_OPTIONS=", 13) == 0) continue;
#endif
        az[k++] = environ[i];
    }
    if ((az[k] = env_with("UBSAN_OPTIONS", CHILD_UBSAN_OPTIONS)) != NULL) k++;
#ifdef TEST_UNDER_ASAN
    if ((az[k] = env_with("ASAN_OPTIONS", CHILD_ASAN_OPTIONS)) != NULL) k++;
#endif
    az[k] = NULL;
    s_az = az;
    return az;
}

static int append(char **pz, size_t *pn, const char *p, size_t n)
{
    char *z = realloc(*pz, *pn + n + 1);
    if (!z) return -1;
    memcpy(z + *pn, p, n);
    *pn += n;
    z[*pn] = 0;
    *pz = z;
    return 0;
}

void run_free(run_result *pRes)
{
    free(pRes->zOut);
    free(pRes->zErr);
    memset(pRes, 0, sizeof *pRes);
}

void run_argv_raw(const char *const *azArgv, double limitSeconds, run_result *pRes)
{
    parity_process proc;
    parity_process_options opt;
    parity_process_end end;
    char zWhy[256];
    double tStart = now_seconds();

    memset(pRes, 0, sizeof *pRes);
    pRes->code = -1;
    memset(&opt, 0, sizeof opt);
    opt.azArgv = azArgv;
    opt.azEnv = child_env();
    opt.in = PARITY_PROCESS_NULL;
    opt.out = PARITY_PROCESS_CAPTURE;
    opt.err = PARITY_PROCESS_CAPTURE;
    opt.ownGroup = 1;
    opt.nCaptureMax = (size_t)1 << 30;
    if (parity_process_start(&proc, &opt, zWhy, sizeof zWhy) != 0) {
        pRes->failed = 1;
        return;
    }
    end = parity_process_wait(&proc, 0, limitSeconds);
    pRes->seconds = now_seconds() - tStart;
    pRes->timedOut = end == PARITY_PROCESS_TIMED_OUT;
    pRes->exited = end == PARITY_PROCESS_EXITED;
    pRes->code = pRes->exited ? proc.code : -1;
    pRes->signaled = end == PARITY_PROCESS_SIGNALED || end == PARITY_PROCESS_TIMED_OUT;
    pRes->sig = pRes->signaled ? proc.sig : 0;
    pRes->maxRssKiB = proc.maxRssKiB;
    if (append(&pRes->zOut, &pRes->nOut, proc.capture[1].z ? proc.capture[1].z : "",
               proc.capture[1].n) ||
        append(&pRes->zErr, &pRes->nErr, proc.capture[2].z ? proc.capture[2].z : "",
               proc.capture[2].n) ||
        proc.capture[1].truncated || proc.capture[2].truncated)
        pRes->failed = 1;
    parity_process_close(&proc);
}

void run_argv(const char *const *azArgv, double limitSeconds, run_result *pRes)
{
    run_argv_raw(azArgv, limitSeconds, pRes);
    cr_assert(!pRes->failed, "could not run %s (pipe, fork or poll failed: %s)", azArgv[0],
              strerror(errno));
}

static void run_tool(const char *zBin, double limitSeconds, run_result *pRes, va_list ap)
{
    const char *azArgv[64];
    size_t n = 0;
    azArgv[n++] = zBin;
    for (;;) {
        const char *z = va_arg(ap, const char *);
        cr_assert_lt(n, 63);
        azArgv[n++] = z;
        if (!z) break;
    }
    run_argv(azArgv, limitSeconds, pRes);
}

void run_paritydiff(run_result *pRes, ...)
{
    va_list ap;
    va_start(ap, pRes);
    run_tool(PARITYDIFF_BIN, 120.0, pRes, ap);
    va_end(ap);
}

void run_parityfuzz(run_result *pRes, ...)
{
    va_list ap;
    va_start(ap, pRes);
    run_tool(PARITYFUZZ_BIN, 600.0, pRes, ap);
    va_end(ap);
}

/* ---- reading stderr -------------------------------------------------------------- */

int count_lines(const char *z, int isWarning, char *zFirst, size_t nFirst)
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

void expect_clean_stderr(const run_result *pRes, const char *zWhat)
{
    cr_expect(!pRes->signaled, "%s: killed by signal %d", zWhat, pRes->sig);
    cr_expect(!pRes->timedOut, "%s: did not finish", zWhat);
    cr_expect_null(strstr(pRes->zErr, "HDF5-DIAG"), "%s: HDF5 error stack dumped:\n%s", zWhat,
                   pRes->zErr);
    cr_expect_null(strstr(pRes->zErr, "Sanitizer"), "%s: sanitizer report:\n%s", zWhat, pRes->zErr);
    cr_expect_null(strstr(pRes->zErr, "runtime error:"), "%s: UBSan report:\n%s", zWhat, pRes->zErr);
}

/* ---- a temporary directory per suite --------------------------------------------- */

static char g_zDir[4096];

/* Paths handed out stay valid until the suite's fini frees them (kept in a global, so
 * LeakSanitizer sees them as reachable). */
static char *g_azKeep[4096];
static size_t g_nKeep;

void support_dir_create(const char *zBase, const char *zPrefix)
{
    snprintf(g_zDir, sizeof g_zDir, "%s/%sXXXXXX", zBase, zPrefix);
    cr_assert_not_null(mkdtemp(g_zDir), "mkdtemp %s: %s", g_zDir, strerror(errno));
}

static int remove_one(const char *zPath, const struct stat *pSt, int flag, struct FTW *pFtw)
{
    (void)pSt; (void)flag; (void)pFtw;
    remove(zPath);
    return 0;
}

void support_dir_remove(void)
{
    if (g_zDir[0]) nftw(g_zDir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    while (g_nKeep > 0) free(g_azKeep[--g_nKeep]);
}

const char *support_dir(void)
{
    return g_zDir;
}

const char *tmp_path(const char *zName)
{
    size_t n = strlen(g_zDir) + strlen(zName) + 2;
    char *z = malloc(n);
    cr_assert_not_null(z);
    cr_assert_lt(g_nKeep, sizeof g_azKeep / sizeof g_azKeep[0]);
    snprintf(z, n, "%s/%s", g_zDir, zName);
    g_azKeep[g_nKeep++] = z;
    return z;
}

/* ---- capture writer shortcuts ---------------------------------------------------- */

parity_writer *wopen(const char *zFile)
{
    parity_writer *pW;
    char zErr[PARITY_ERR_LEN];
    cr_assert_eq(parity_writer_open(zFile, &pW, zErr, sizeof zErr), 0, "%s", zErr);
    return pW;
}

void wcheck(parity_writer *pW, int rc)
{
    cr_assert_eq(rc, 0, "writer: %s", parity_writer_error(pW));
}

void wclose(parity_writer *pW)
{
    char zErr[PARITY_ERR_LEN];
    cr_assert_eq(parity_writer_close(pW, zErr, sizeof zErr), 0, "%s", zErr);
}

void w_tensor(parity_writer *pW, const char *zName, parity_dtype dt, int rank,
              const uint64_t *aDim, const void *pData)
{
    wcheck(pW, parity_writer_tensor(pW, zName, dt, rank, aDim, pData));
}

void w_f32(parity_writer *pW, const char *zName, const float *a, uint64_t n)
{
    w_tensor(pW, zName, PARITY_DT_F32, 1, &n, a);
}

void w_op(parity_writer *pW, const char *zName, const char *zOp,
          const char *const *azInputs, size_t nInputs)
{
    if (zOp) wcheck(pW, parity_writer_attr_string(pW, zName, "op", zOp));
    if (azInputs) wcheck(pW, parity_writer_attr_strings(pW, zName, "inputs", azInputs, nInputs));
}

void w_order(parity_writer *pW, const char *zName, int64_t iOrder)
{
    wcheck(pW, parity_writer_attr_int(pW, zName, "order", iOrder));
}

/* ---- files and JSON -------------------------------------------------------------- */

unsigned char *read_bytes(const char *zFile, size_t *pn)
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
    p[n] = 0;
    *pn = (size_t)n;
    return p;
}

int write_file(const char *zFile, const void *p, size_t n)
{
    FILE *pF = fopen(zFile, "wb");
    int ok;
    if (!pF) return -1;
    ok = fwrite(p, 1, n, pF) == n;
    return fclose(pF) == 0 && ok ? 0 : -1;
}

void write_bytes(const char *zFile, const void *p, size_t n)
{
    cr_assert_eq(write_file(zFile, p, n), 0, "%s: %s", zFile, strerror(errno));
}

json_t *tensor_named(json_t *pDoc, const char *zName)
{
    json_t *pTensors = json_object_get(pDoc, "tensors");
    size_t i;
    for (i = 0; i < json_array_size(pTensors); i++) {
        json_t *pT = json_array_get(pTensors, i);
        const char *z = json_string_value(json_object_get(pT, "name"));
        if (z && strcmp(z, zName) == 0) return pT;
    }
    cr_assert_fail("no tensor %s in the report", zName);
    return NULL;
}

json_t *parse_json(const char *z)
{
    json_error_t err;
    json_t *pDoc = json_loads(z, 0, &err);
    cr_assert_not_null(pDoc, "not JSON (%s at line %d):\n%s", err.text, err.line, z);
    return pDoc;
}

json_t *load_json_file(const char *zFile)
{
    size_t n;
    unsigned char *p = read_bytes(zFile, &n);
    json_t *pDoc;
    cr_assert_not_null(p, "no %s", zFile);
    pDoc = parse_json((const char *)p);
    free(p);
    return pDoc;
}

/* ---- deterministic randomness --------------------------------------------------- */

uint64_t splitmix64(uint64_t *pState)
{
    uint64_t z = (*pState += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

uint64_t xorshift64s(uint64_t *pState)
{
    uint64_t x = *pState;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *pState = x;
    return x * UINT64_C(2685821657736338717);
}

/* ---- doubles --------------------------------------------------------------------- */

uint64_t dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

int same_double(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return dbits(a) == dbits(b);
}

/* ---- calling the op registry directly --------------------------------------------- */

static int64_t g_aaIntStore[8][PARITY_MAX_RANK];
static double g_aFloatStore[8];
static char *g_azStrStore[8];

parity_attr attr_ints_ex(int iSlot, const char *zName, const int64_t *a, size_t n, int isArray)
{
    parity_attr at;
    memset(&at, 0, sizeof at);
    if (n) memcpy(g_aaIntStore[iSlot], a, n * sizeof *a);
    at.zName = (char *)zName;
    at.kind = PARITY_ATTR_INT;
    at.isArray = isArray;
    at.n = n;
    at.aInt = g_aaIntStore[iSlot];
    return at;
}

parity_attr attr_ints(int iSlot, const char *zName, const int64_t *a, size_t n)
{
    return attr_ints_ex(iSlot, zName, a, n, n != 1);
}

parity_attr attr_int(int iSlot, const char *zName, int64_t v)
{
    return attr_ints_ex(iSlot, zName, &v, 1, 0);
}

parity_attr attr_float(int iSlot, const char *zName, double v)
{
    parity_attr at;
    memset(&at, 0, sizeof at);
    g_aFloatStore[iSlot] = v;
    at.zName = (char *)zName;
    at.kind = PARITY_ATTR_FLOAT;
    at.n = 1;
    at.aFloat = &g_aFloatStore[iSlot];
    return at;
}

parity_attr attr_str(int iSlot, const char *zName, const char *zValue)
{
    parity_attr at;
    memset(&at, 0, sizeof at);
    g_azStrStore[iSlot] = (char *)zValue;
    at.zName = (char *)zName;
    at.kind = PARITY_ATTR_STRING;
    at.n = 1;
    at.azStr = &g_azStrStore[iSlot];
    return at;
}

parity_operand op_operand(const char *zName, parity_dtype dt, int rank, const uint64_t *aDim,
                          double *aValue)
{
    parity_operand o;
    int d;
    memset(&o, 0, sizeof o);
    o.zName = zName;
    o.dtype = dt;
    o.rank = rank;
    o.nElem = 1;
    for (d = 0; d < rank; d++) {
        o.aDim[d] = aDim[d];
        o.nElem *= aDim[d];
    }
    o.aValue = aValue;
    return o;
}

int op_begin(parity_op_call *pCall, const char *zOp, const parity_operand *aIn, size_t nIn,
             int outRank, const uint64_t *aOut, const parity_attr *aAttr, size_t nAttr,
             char *zErr, size_t nErr)
{
    const parity_op_def *pDef = parity_op_find(zOp);
    cr_assert(pDef, "op %s is registered", zOp);
    zErr[0] = 0;
    return parity_op_begin(pCall, pDef, aIn, nIn, PARITY_DT_F32, outRank, aOut,
                           PARITY_DT_INVALID, aAttr, nAttr, zErr, nErr);
}

void op_begin_ok(parity_op_call *pCall, const char *zOp, const parity_operand *aIn, size_t nIn,
                 int outRank, const uint64_t *aOut, const parity_attr *aAttr, size_t nAttr)
{
    char zErr[512];
    cr_assert_eq(op_begin(pCall, zOp, aIn, nIn, outRank, aOut, aAttr, nAttr, zErr, sizeof zErr),
                 0, "%s: %s", zOp, zErr);
}

void op_element(parity_op_call *pCall, uint64_t i, double *pRef, double *pBound)
{
    mpfr_t ref;
    mpfr_init2(ref, PARITY_REF_PREC);
    cr_assert(pCall->pDef->xElement(pCall, i, ref, pBound) == 0);
    *pRef = mpfr_get_d(ref, MPFR_RNDN);
    mpfr_clear(ref);
}

parity_judgement op_judge(parity_op_call *pCall, const double *aCompiled)
{
    parity_judgement j;
    char zErr[512];
    cr_assert_eq(parity_judge(pCall, NULL, aCompiled, &j, zErr, sizeof zErr), 0, "%s", zErr);
    return j;
}

/* ---- h5py (support.h) ------------------------------------------------------------ */

/* Does SYSTEM_PYTHON have h5py? Asked once per process. */
int have_h5py(void)
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
void run_h5py(const char *zScript)
{
    const char *azArgv[] = { SYSTEM_PYTHON, "-c", zScript, support_dir(), NULL };
    run_result r;
    if (!have_h5py()) cr_skip_test("%s has no h5py", SYSTEM_PYTHON);
    run_argv(azArgv, 120.0, &r);
    cr_assert(r.exited && r.code == 0, "python failed:\n%s", r.zErr);
    run_free(&r);
}
