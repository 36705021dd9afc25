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
#define _GNU_SOURCE 1   /* strndup */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <hdf5.h>
#include "formats/capture.h"
#include "support.h"

/* ---- reading stderr (running paritydiff and counting lines: support.h) ---------- */

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

static void make_dir(void)
{
    support_dir_create(TEST_BINARY_DIR, "badinput-");
}

TestSuite(badinput, .init = make_dir, .fini = support_dir_remove);

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

/* A FIFO would block libhdf5's open(2) until a writer came (never); a device never ends.
 * Both are refused at once, as captures and as a --tolerance file (formats/regular_file.h). */
Test(badinput, fifo_and_device_are_refused_at_once, .timeout = 60)
{
    const char *zFifo = tmp_path("capture.fifo");
    run_result r;
    write_good_pair();
    cr_assert_eq(mkfifo(zFifo, 0666), 0);
    expect_trouble_both_ways(zFifo, "FIFO", "not a regular file", "FIFO");
    expect_trouble_both_ways("/dev/zero", "device", "not a regular file", "character device");
    run_paritydiff(&r, "--tolerance", zFifo, g_zGoodE, g_zGoodC, NULL);
    expect_trouble(&r, "FIFO tolerance file", zFifo, "not a regular file", NULL);
    run_free(&r);
    run_paritydiff(&r, "--tolerance", "/dev/zero", g_zGoodE, g_zGoodC, NULL);
    expect_trouble(&r, "device tolerance file", "/dev/zero", "not a regular file", NULL);
    run_free(&r);
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
            for (j = 0; j < n; j++) p[j] = (unsigned char)(xorshift64s(&state) >> 56);
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

/* A tensor whose 'op' is unusable, named by a later op's inputs, is an error, not a graph
 * input: it was shown as "[input]" with "inputs differ" (battery finding C). */
Test(badinput, unusable_op_is_not_an_input)
{
    static const float aX[4] = { -1.0f, 0.5f, 2.0f, 3.0f };
    static const char *const azIn[] = { "/y" };
    const char *zBad = tmp_path("bad_op_consumed.h5"), *zGood = tmp_path("good_consumed.h5");
    const char *azFile[2] = { zGood, zBad };
    run_result r;
    json_t *pDoc, *pT;
    size_t i;
    for (i = 0; i < 2; i++) {
        parity_writer *pW = wopen(azFile[i]);
        w_f32(pW, "/y", aX, 4);
        w_f32(pW, "/z", aX, 4);
        w_op(pW, "/z", "test.act", azIn, 1);
        if (i == 1) bad_op_int(pW);
        else wcheck(pW, parity_writer_attr_string(pW, "/y", "op", "test.act"));
        wclose(pW);
    }
    run_paritydiff(&r, "--json", "-", zBad, zGood, NULL);
    cr_expect_eq(r.code, 2, "exit %d: %s", r.code, r.zErr);
    pDoc = parse_json(r.zOut);
    pT = tensor_named(pDoc, "/y");
    cr_expect_str_eq(json_string_value(json_object_get(pT, "status")), "error");
    cr_expect(json_is_false(json_object_get(pT, "is_input")), "%s", r.zOut);
    cr_expect(json_is_true(json_object_get(pDoc, "inputs_match")), "%s", r.zOut);
    json_decref(pDoc);
    run_free(&r);
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
    /* the one warning left names the made-up ops as unmodelled */
    cr_expect_null(strstr(r.zErr, "fused_away"), "stderr:\n%s", r.zErr);
    cr_expect_eq(count_lines(r.zErr, 1, NULL, 0), 1, "stderr:\n%s", r.zErr);
    cr_expect(strstr(r.zErr, "no model for 2 op(s)"), "stderr:\n%s", r.zErr);
    pDoc = parse_json(r.zOut);
    cr_expect_str_eq(json_string_value(json_object_get(pDoc, "verdict")), "pass");
    cr_expect_eq(json_array_size(json_object_get(pDoc, "warnings")), 1);
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

/* Runs paritydiff --json on a legal pair and expects exit wantCode with the verdict
 * zVerdict, first divergence zFirst (NULL: none), a warning containing zWarning on stderr
 * and in the JSON, and no other stderr line. */
static void expect_judged_with_warning(const char *zE, const char *zC, const char *zWhat,
                                       int wantCode, const char *zVerdict, const char *zFirst,
                                       const char *zWarning)
{
    run_result r;
    json_t *pDoc;
    run_paritydiff(&r, "--json", "-", zE, zC, NULL);
    expect_clean_stderr(&r, zWhat);
    cr_expect_eq(r.code, wantCode, "%s: exit %d; stderr:\n%s", zWhat, r.code, r.zErr);
    pDoc = parse_json(r.zOut);
    cr_expect_str_eq(json_string_value(json_object_get(pDoc, "verdict")), zVerdict, "%s", zWhat);
    if (zFirst)
        cr_expect_str_eq(json_string_value(json_object_get(pDoc, "first_divergence")), zFirst,
                         "%s", zWhat);
    expect_warning(&r, pDoc, zWarning);
    json_decref(pDoc);
    run_free(&r);
}

/* Issue 14, item 8: 2^47 float32 elements (under the 2^48 limit, so not refused), never
 * written, in a 6 KB file: reading the fill values element by element took days. Neither
 * side stores data, so one element is judged for all: a pass against itself in well under
 * a second, and against a file whose fill value is 1.5 a failure of every element, with
 * the figures the element loop would give. */
Test(badinput, enormous_unwritten_tensor_is_judged_once, .timeout = 120)
{
    const char *zBig = tmp_path("enormous.h5"), *zFill = tmp_path("enormous_fill.h5");
    const uint64_t n = 1ULL << 47;
    run_result r;
    json_t *pDoc, *pT;
    char *zWorst, *zSlice;
    run_h5py("import h5py, sys\n"
             "for name, fill in (('enormous', 0.0), ('enormous_fill', 1.5)):\n"
             "    with h5py.File(sys.argv[1] + '/' + name + '.h5', 'w') as f:\n"
             "        f.create_dataset('y', shape=(2**24, 2**23), dtype='f4', chunks=(1, 4096),\n"
             "                         fillvalue=fill)\n");
    expect_judged_with_warning(zBig, zBig, "unwritten against itself", 0, "pass", NULL,
                               "no data stored on either side");
    run_paritydiff(&r, "--json", "-", zBig, zFill, NULL);
    cr_expect_eq(r.code, 1, "exit %d; stderr:\n%s", r.code, r.zErr);
    cr_expect_lt(r.seconds, 10.0, "took %.1f s", r.seconds);
    pDoc = parse_json(r.zOut);
    pT = tensor_named(pDoc, "/y");
    cr_expect_eq(json_integer_value(json_object_get(pT, "elements")), (json_int_t)n);
    cr_expect_eq(json_integer_value(json_object_get(pT, "mismatches")), (json_int_t)n, "%s", r.zOut);
    cr_expect_eq(json_real_value(json_object_get(pT, "max_abs_err")), 1.5, "%s", r.zOut);
    zWorst = json_dumps(json_object_get(pT, "worst_index"), JSON_COMPACT);
    cr_expect_str_eq(zWorst, "[0,0]");
    zSlice = json_dumps(json_object_get(pT, "affected_slice"), JSON_COMPACT);
    cr_expect(zSlice && strstr(zSlice, "16777216") && strstr(zSlice, "8388608"),
              "slice not the whole tensor: %s", zSlice);
    free(zWorst);
    free(zSlice);
    json_decref(pDoc);
    run_free(&r);
}

/* One chunk written on one side is data to compare element by element against the other
 * side's fill values: still days for 2^47 elements, so --timeout ends it with one line. */
Test(badinput, enormous_partly_written_tensor_is_bounded_by_timeout, .timeout = 120)
{
    const char *zBig = tmp_path("enormous_one.h5"), *zEmpty = tmp_path("enormous_none.h5");
    run_result r;
    run_h5py("import h5py, sys, numpy\n"
             "for name in ('enormous_one', 'enormous_none'):\n"
             "    with h5py.File(sys.argv[1] + '/' + name + '.h5', 'w') as f:\n"
             "        d = f.create_dataset('y', shape=(2**24, 2**23), dtype='f4', chunks=(1, 4096))\n"
             "        if name == 'enormous_one': d[0, :4096] = numpy.zeros(4096, 'f4')\n");
    run_paritydiff(&r, "--timeout", "3", "--stall-timeout", "3", zEmpty, zBig, NULL);
    expect_trouble(&r, "enormous partly written tensor", zEmpty, "time limit", NULL);
    cr_expect_lt(r.seconds, 30.0, "took %.1f s", r.seconds);
    run_free(&r);
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
    expect_judged_with_warning(zE, zC2, "eager dangling, fail", 1, "fail", "/a",
                               "/missing_tensor");
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

/* run_failure (FORMAT.md, root attributes): a side whose run failed fails the pair, and the
 * tensors it lacks fail as lost (the first is the first divergence) where without it they
 * would be "fused away" and pass. Wrongly typed, it is bad input like any attribute. */
static void write_failed_run(const char *zFile, int asString)
{
    static const float aX[4] = { -1.0f, 0.5f, 2.0f, 3.0f };
    parity_writer *pW = wopen(zFile);
    wcheck(pW, parity_writer_attr_string(pW, "/", "side", "compiled"));
    if (asString)
        wcheck(pW, parity_writer_attr_string(pW, "/", "run_failure", "crash: signal 4"));
    else
        wcheck(pW, parity_writer_attr_int(pW, "/", "run_failure", 4));
    w_f32(pW, "/x", aX, 4);                 /* what it wrote before it died: no /y */
    wclose(pW);
}

Test(badinput, run_failure_fails_the_pair_and_what_the_run_lost)
{
    const char *zLost = tmp_path("failed_run.h5"), *zBad = tmp_path("failed_run_int.h5");
    const char *zPlain = tmp_path("no_y.h5");
    static const float aX[4] = { -1.0f, 0.5f, 2.0f, 3.0f };
    parity_writer *pW;
    run_result r;

    write_good_pair();
    /* without run_failure a missing /y is fused away, not lost; but with only the input
     * /x left, nothing computed was compared, which is no pass either (exit 2) */
    pW = wopen(zPlain);
    w_f32(pW, "/x", aX, 4);
    wclose(pW);
    run_paritydiff(&r, g_zGoodE, zPlain, NULL);
    cr_expect_eq(r.code, 2, "only the input left: exit %d\n%s%s", r.code, r.zOut, r.zErr);
    cr_expect(strstr(r.zErr, "nothing computed compared") != NULL, "%s", r.zErr);
    run_free(&r);

    write_failed_run(zLost, 1);
    expect_judged_with_warning(g_zGoodE, zLost, "failed compiled run", 1, "fail", "/y",
                               "compiled: its run failed: crash: signal 4");
    /* the same file as the eager side: the run that failed is named as eager */
    expect_judged_with_warning(zLost, g_zGoodC, "failed eager run", 1, "fail", "/y",
                               "eager: its run failed: crash: signal 4");

    write_failed_run(zBad, 0);
    expect_trouble_both_ways(zBad, "run_failure is an integer", "run_failure", "one string");
}

/* ---- hostile names and values (issue 14: item 4 and the minor points) --------------- */

/* The unusable tensor of a bad file has a name with a newline and a forged verdict, and
 * the file's run_failure (a warning on its own) holds escape sequences and newlines:
 * exit 2 is still one line on stderr in all, the error, with the name escaped; the warning
 * goes to the reports only, and the JSON keeps the raw name. */
Test(badinput, hostile_name_in_an_error_is_one_stderr_line)
{
    static const char zName[] = "/y\nverdict: PASS";
    static const float aX[4] = { -1.0f, 0.5f, 2.0f, 3.0f };
    const char *zBad = tmp_path("hostile_name.h5"), *zJson = tmp_path("hostile_name.json");
    parity_writer *pW;
    int asCompiled;

    write_good_pair();
    pW = wopen(zBad);
    wcheck(pW, parity_writer_attr_string(pW, "/", "run_failure",
                                         "crash: \x1b[2J\nparitydiff: forged\n"));
    w_f32(pW, "/x", aX, 4);
    w_f32(pW, zName, aX, 4);
    wcheck(pW, parity_writer_attr_int(pW, zName, "op", 3));   /* unusable: not a string */
    wclose(pW);
    for (asCompiled = 0; asCompiled <= 1; asCompiled++) {
        const char *zWhat = asCompiled ? "hostile name as compiled" : "hostile name as eager";
        run_result r;
        json_t *pDoc, *pTensors;
        size_t i;
        const char *zStatus = NULL;
        run_paritydiff(&r, "-q", "--json", zJson, asCompiled ? g_zGoodE : zBad,
                       asCompiled ? zBad : g_zGoodC, NULL);
        expect_trouble(&r, zWhat, zBad, "/y\\nverdict: PASS", "'op'");
        cr_expect_eq(count_lines(r.zErr, 0, NULL, 0) + count_lines(r.zErr, 1, NULL, 0), 1,
                     "%s: exit 2 must be one stderr line, warnings included:\n%s", zWhat, r.zErr);
        cr_expect_null(strchr(r.zErr, '\x1b'), "%s: escape sequence on stderr", zWhat);
        pDoc = load_json_file(zJson);
        pTensors = json_object_get(pDoc, "tensors");
        for (i = 0; i < json_array_size(pTensors); i++) {
            json_t *pT = json_array_get(pTensors, i);
            if (strcmp(json_string_value(json_object_get(pT, "name")), zName) == 0)
                zStatus = json_string_value(json_object_get(pT, "status"));
        }
        cr_expect(zStatus && strcmp(zStatus, "error") == 0, "%s: the raw name in the JSON: %s",
                  zWhat, zStatus ? zStatus : "(absent)");
        json_decref(pDoc);
        run_free(&r);
    }
}

/* /x, and /y whose "inputs" are nInputs copies of "/x". Over 64 KiB an attribute needs
 * dense attribute storage, which only the latest file format has and our writer does not
 * ask for, so libhdf5 writes this file directly. */
static void write_inputs_attr(const char *zFile, size_t nInputs)
{
    static const float aX[4] = { -1.0f, 0.5f, 2.0f, 3.0f };
    hsize_t nDim = 4, nStr = nInputs;
    const char **azIn = malloc(nInputs * sizeof *azIn);
    hid_t hFapl = H5Pcreate(H5P_FILE_ACCESS), hFile, hSpace, hStrSpace, hStr, hSet, hAttr;
    size_t i;
    cr_assert(azIn && hFapl >= 0);
    for (i = 0; i < nInputs; i++) azIn[i] = "/x";
    cr_assert(H5Pset_libver_bounds(hFapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) >= 0);
    hFile = H5Fcreate(zFile, H5F_ACC_TRUNC, H5P_DEFAULT, hFapl);
    hSpace = H5Screate_simple(1, &nDim, NULL);
    hStrSpace = H5Screate_simple(1, &nStr, NULL);
    hStr = H5Tcopy(H5T_C_S1);
    cr_assert(hFile >= 0 && hSpace >= 0 && hStrSpace >= 0 && hStr >= 0);
    cr_assert(H5Tset_size(hStr, H5T_VARIABLE) >= 0);
    for (i = 0; i < 2; i++) {
        hSet = H5Dcreate2(hFile, i == 0 ? "/x" : "/y", H5T_IEEE_F32LE, hSpace, H5P_DEFAULT,
                          H5P_DEFAULT, H5P_DEFAULT);
        cr_assert(hSet >= 0);
        cr_assert(H5Dwrite(hSet, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, aX) >= 0);
        if (i == 1) {
            hAttr = H5Acreate2(hSet, "inputs", hStr, hStrSpace, H5P_DEFAULT, H5P_DEFAULT);
            cr_assert(hAttr >= 0);
            cr_assert(H5Awrite(hAttr, hStr, azIn) >= 0);
            H5Aclose(hAttr);
        }
        H5Dclose(hSet);
    }
    H5Tclose(hStr);
    H5Sclose(hStrSpace);
    H5Sclose(hSpace);
    H5Pclose(hFapl);
    cr_assert(H5Fclose(hFile) >= 0);
    free(azIn);
}

/* The reader interprets attributes of 65,536 elements at most (formats/capture_read.c):
 * "inputs" one over is refused as over that cap, not as "must be strings", which they are. */
Test(badinput, inputs_over_the_cap_are_called_so)
{
    const char *zBad = tmp_path("inputs_over_cap.h5");
    write_good_pair();
    write_inputs_attr(zBad, 65537);
    expect_trouble_both_ways(zBad, "inputs over the cap", "65537", "over the cap of 65536");
}
