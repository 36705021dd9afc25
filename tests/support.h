/*
 * support.h - helpers shared by the Criterion test executables (tests/test_*.c), compiled
 * into each of them that lists support.c in tests/CMakeLists.txt.
 *
 * What is here:
 * - running a program (normally the built paritydiff, PARITYDIFF_BIN) with stdin from
 *   /dev/null and stdout, stderr, exit status and time captured, under a time limit, with
 *   the sanitizer options the child needs in sanitizer builds;
 * - reading that stderr: counting "paritydiff: warning: " and other lines, and checking it
 *   for what only a crash or a library dump would print;
 * - a per-suite temporary directory (Criterion .init/.fini) and paths inside it;
 * - shortcuts for the capture writer (formats/capture.h) that fail the test on error;
 * - whole-file reads and writes, and parsing a JSON document;
 * - the deterministic generators the tests draw data from (splitmix64, xorshift64*);
 * - bitwise comparison of doubles.
 *
 * Functions whose comment says "no Criterion calls" report failure through their result and
 * are safe in forked worker processes (tests/test_sweep.c); all others fail the current test
 * with cr_assert when the harness itself cannot do its part.
 */
#ifndef PARITY_TESTS_SUPPORT_H
#define PARITY_TESTS_SUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "formats/capture.h"
#include "tolerance/judge.h"

/* TEST_UNDER_ASAN: defined in an AddressSanitizer build (gcc or clang). */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_UNDER_ASAN 1
#endif
#endif

/* ---- running a program and capturing everything ----------------------------------- */

typedef struct {
    int failed;              /* the harness itself could not run it (pipe, fork, poll) */
    int exited, code;        /* WIFEXITED and WEXITSTATUS (code -1 otherwise) */
    int signaled, sig;       /* WIFSIGNALED and WTERMSIG */
    int timedOut;            /* we had to kill it */
    char *zOut, *zErr;       /* NUL-terminated captures */
    size_t nOut, nErr;
    double seconds;
    long maxRssKiB;          /* peak RSS of the program or its largest reaped child */
} run_result;

/* CLOCK_MONOTONIC in seconds. */
double now_seconds(void);

/* The environment of the child: ours, plus the sanitizer options (see support.c). Built
 * once per process and kept; call it before forking workers. No Criterion calls. */
char **child_env(void);

/* Runs azArgv (azArgv[0] is the program path, NULL-terminated) with stdin from /dev/null,
 * stdout and stderr captured, in its own process group; after limitSeconds the group is
 * killed (timedOut). No Criterion calls: on trouble pRes->failed is set. */
void run_argv_raw(const char *const *azArgv, double limitSeconds, run_result *pRes);

/* run_argv_raw, failing the test if the harness could not run the program. */
void run_argv(const char *const *azArgv, double limitSeconds, run_result *pRes);

/* Runs paritydiff with the NULL-terminated argument list (limit 120 s). */
void run_paritydiff(run_result *pRes, ...);
/* Runs parityfuzz likewise (limit 600 s). */
void run_parityfuzz(run_result *pRes, ...);

/* Frees the captures and zeroes *pRes. No Criterion calls. */
void run_free(run_result *pRes);

/* ---- reading stderr -------------------------------------------------------------- */

#define WARNING_PREFIX "paritydiff: warning: "

/* Lines of z that are (isWarning 1) or are not (0) "paritydiff: warning: " lines; the
 * first such line is copied to zFirst (if not NULL). An unterminated last line counts.
 * No Criterion calls. */
int count_lines(const char *z, int isWarning, char *zFirst, size_t nFirst);

/* Nothing anywhere in the output that only a crash or a library dump would print (no signal,
 * no time-out, no "HDF5-DIAG", no sanitizer or UBSan report); cr_expect, labelled zWhat. */
void expect_clean_stderr(const run_result *pRes, const char *zWhat);

/* ---- a temporary directory per suite --------------------------------------------- */

/* Creates zBase/zPrefixXXXXXX (mkdtemp); for a suite's .init. */
void support_dir_create(const char *zBase, const char *zPrefix);

/* Removes the directory and everything in it, and frees the tmp_path strings; usable as a
 * suite's .fini. */
void support_dir_remove(void);

/* The directory made by support_dir_create. */
const char *support_dir(void);

/* support_dir()/zName; the string stays valid until support_dir_remove. */
const char *tmp_path(const char *zName);

/* ---- capture writer shortcuts (fail the test on error) --------------------------- */

parity_writer *wopen(const char *zFile);
void wcheck(parity_writer *pW, int rc);
void wclose(parity_writer *pW);
void w_tensor(parity_writer *pW, const char *zName, parity_dtype dt, int rank,
              const uint64_t *aDim, const void *pData);
/* A rank-1 float32 tensor of n elements. */
void w_f32(parity_writer *pW, const char *zName, const float *a, uint64_t n);
/* The "op" attribute (if zOp) and the "inputs" attribute (if azInputs). */
void w_op(parity_writer *pW, const char *zName, const char *zOp,
          const char *const *azInputs, size_t nInputs);
/* The "order" attribute. */
void w_order(parity_writer *pW, const char *zName, int64_t iOrder);

/* ---- files and JSON -------------------------------------------------------------- */

/* The whole file (malloc'ed, with a NUL after the *pn bytes); fails the test on error. */
unsigned char *read_bytes(const char *zFile, size_t *pn);

/* Writes n bytes to zFile: 0, or -1 on error. No Criterion calls. */
int write_file(const char *zFile, const void *p, size_t n);

/* write_file, failing the test on error. */
void write_bytes(const char *zFile, const void *p, size_t n);

/* The JSON document in z (json_decref it); fails the test if it is not one. */
json_t *parse_json(const char *z);
/* The tensor object named zName in a JSON report; fails the test when there is none. */
json_t *tensor_named(json_t *pDoc, const char *zName);
/* Reads and parses the JSON file zFile, failing the test if it is missing or malformed. */
json_t *load_json_file(const char *zFile);

/* ---- deterministic randomness (a failure reproduces) ---------------------------- */

/* splitmix64: the next 64 random bits; advances *pState. No Criterion calls. */
uint64_t splitmix64(uint64_t *pState);

/* xorshift64*: the next 64 random bits; *pState must not be 0. No Criterion calls. */
uint64_t xorshift64s(uint64_t *pState);

/* ---- doubles --------------------------------------------------------------------- */

/* The bit pattern of d. */
uint64_t dbits(double d);

/* Bitwise identity, so -0 vs +0 is caught; any NaN matches any NaN (payloads differ). */
int same_double(double a, double b);

/* ---- calling the op registry directly --------------------------------------------- */

/* Attributes built in place. Slot iSlot (0..7) holds the value until the next call with the
 * same slot, so several attributes can be alive at once. attr_ints makes a scalar for n = 1
 * and a list otherwise; attr_ints_ex says which. */
parity_attr attr_ints_ex(int iSlot, const char *zName, const int64_t *a, size_t n, int isArray);
parity_attr attr_ints(int iSlot, const char *zName, const int64_t *a, size_t n);
parity_attr attr_int(int iSlot, const char *zName, int64_t v);
parity_attr attr_float(int iSlot, const char *zName, double v);
parity_attr attr_str(int iSlot, const char *zName, const char *zValue);

/* An operand over caller-owned values (aValue, prod(aDim) of them). */
parity_operand op_operand(const char *zName, parity_dtype dt, int rank, const uint64_t *aDim,
                          double *aValue);

/* parity_op_begin for the registered op zOp (asserted to exist) with a float32 output and
 * the default accumulation dtype: 0, or -1 with the reason in zErr. */
int op_begin(parity_op_call *pCall, const char *zOp, const parity_operand *aIn, size_t nIn,
             int outRank, const uint64_t *aOut, const parity_attr *aAttr, size_t nAttr,
             char *zErr, size_t nErr);
/* op_begin, failing the test unless it succeeds. */
void op_begin_ok(parity_op_call *pCall, const char *zOp, const parity_operand *aIn, size_t nIn,
                 int outRank, const uint64_t *aOut, const parity_attr *aAttr, size_t nAttr);
/* The op's reference (as binary64) and bound of element i. */
void op_element(parity_op_call *pCall, uint64_t i, double *pRef, double *pBound);
/* parity_judge of aCompiled alone, failing the test on error. */
parity_judgement op_judge(parity_op_call *pCall, const double *aCompiled);

/* ---- h5py, for files our writer cannot make ---------------------------------------- */

/* Does SYSTEM_PYTHON have h5py (and numpy)? Asked once per process. */
int have_h5py(void);
/* Runs a Python snippet with h5py, the suite's directory as sys.argv[1]; skips the test
 * when there is no h5py, fails it when the snippet fails. */
void run_h5py(const char *zScript);

#endif /* PARITY_TESTS_SUPPORT_H */
