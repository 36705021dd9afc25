/*
 * test_cli.c - end to end through the built paritydiff binary: captures written with our
 * writer, diffed with --json FILE, the report parsed back with jansson.
 *
 * Covered: verdicts and exit codes (pass 0, fail 1, error 2); execution order for
 * first_divergence ("order" attribute, then topological order of "inputs", then name);
 * inputs compared bit for bit; missing/shape/dtype statuses and --strict; --rtol, --atol,
 * --max-ulp (an element passes if |c-e| <= atol + rtol*|e| or its ulp distance <= max_ulp);
 * --signed-zeros; NaN and Inf handling; worst_index ties; affected_slice; non-finite
 * numbers as null; integer counts; --json - and the atomic JSON file; determinism across
 * --threads and --slab-bytes; bf16 ulps; identity and telemetry.
 * Field names: reports/report_json.c (schema in diff/REPORT.md).
 *
 * Op names are "test.*" on purpose: no per-op error model (tolerance/ops.c) knows them, so
 * the per-dtype default tolerance and the options under test decide, and the data need not
 * be what a real op would compute from its inputs.
 */
#define _GNU_SOURCE 1   /* strndup, strtok_r */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "diff/diff.h"
#include "formats/capture.h"
#include "support.h"

/* ---- fixtures (running paritydiff, the directory, writer shortcuts: support.h) --- */

static void make_dir(void)
{
    support_dir_create(TEST_BINARY_DIR, "cli-");
}

TestSuite(cli, .init = make_dir, .fini = support_dir_remove, .timeout = 300);

/* x moved by n ulps (n may be negative) through its bit pattern; x finite, same sign. */
static float ulps_f32(float x, int n)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u = (uint32_t)((int64_t)u + n);
    memcpy(&x, &u, 4);
    return x;
}

/* ---- running a diff ---------------------------------------------------------------- */

static run_result g_last;   /* the last diff_json run, for checks on stdout/stderr */
static int g_nJson;

/* Runs paritydiff [opts...] --json FILE EAGER COMPILED (opts NULL-terminated), checks the
 * exit code and a clean stderr, and returns the parsed report. */
static json_t *diff_json(int wantCode, const char *zE, const char *zC, ...)
{
    const char *azArgv[64];
    char zName[64];
    const char *zJson;
    size_t n = 0;
    json_error_t err;
    json_t *pDoc;
    va_list ap;

    snprintf(zName, sizeof zName, "report-%d.json", g_nJson++);
    zJson = tmp_path(zName);
    azArgv[n++] = PARITYDIFF_BIN;
    va_start(ap, zC);
    for (;;) {
        const char *z = va_arg(ap, const char *);
        if (!z) break;
        cr_assert_lt(n, 58);
        azArgv[n++] = z;
    }
    va_end(ap);
    azArgv[n++] = "--json";
    azArgv[n++] = zJson;
    azArgv[n++] = zE;
    azArgv[n++] = zC;
    azArgv[n] = NULL;
    run_free(&g_last);
    run_argv(azArgv, 120.0, &g_last);
    expect_clean_stderr(&g_last, "paritydiff");
    cr_assert_eq(g_last.code, wantCode, "exit %d, want %d; stderr:\n%s\nstdout:\n%s", g_last.code,
                 wantCode, g_last.zErr, g_last.zOut);
    /* warnings are the tests' own business (a failing diff of files without "order" or
     * "inputs" always warns that the order is unknown); anything else is unexpected */
    if (wantCode != 2)
        cr_expect_eq(count_lines(g_last.zErr, 0, NULL, 0), 0, "unexpected stderr:\n%s",
                     g_last.zErr);
    pDoc = json_load_file(zJson, 0, &err);
    cr_assert_not_null(pDoc, "%s: %s (line %d)", zJson, err.text, err.line);
    return pDoc;
}

static const char *jstr(json_t *pObj, const char *zKey)
{
    json_t *p = json_object_get(pObj, zKey);
    cr_assert(json_is_string(p) || json_is_null(p), "'%s' is neither a string nor null", zKey);
    return json_string_value(p);
}

static json_int_t jint(json_t *pObj, const char *zKey)
{
    json_t *p = json_object_get(pObj, zKey);
    cr_assert(json_is_integer(p), "'%s' is not a JSON integer", zKey);
    return json_integer_value(p);
}


static const char *status_of(json_t *pDoc, const char *zName)
{
    return jstr(tensor_named(pDoc, zName), "status");
}

/* The tensors' names in report order, joined by spaces. */
static char *tensor_order(json_t *pDoc)
{
    json_t *pTensors = json_object_get(pDoc, "tensors");
    static char zBuf[4096];
    size_t i;
    zBuf[0] = 0;
    for (i = 0; i < json_array_size(pTensors); i++) {
        json_t *pT = json_array_get(pTensors, i);
        if (i) strncat(zBuf, " ", sizeof zBuf - strlen(zBuf) - 1);
        strncat(zBuf, json_string_value(json_object_get(pT, "name")), sizeof zBuf - strlen(zBuf) - 1);
        cr_expect_eq(jint(pT, "position"), (json_int_t)i);
    }
    return zBuf;
}

/* "[[1, 3], [2, 4]]"-style compact dump of a JSON value, for comparisons. */
static char *compact(json_t *p)
{
    static char zBuf[8][1024];
    static int iBuf;
    char *z = zBuf[iBuf++ % 8];
    char *zDump = json_dumps(p, JSON_COMPACT | JSON_ENCODE_ANY);
    snprintf(z, 1024, "%s", zDump ? zDump : "(none)");
    free(zDump);
    return z;
}

/* ---- verdicts and exit codes -------------------------------------------------------- */

/* /x (graph input) and /y = relu(x), y[2] off by yDelta, /y's op zOp, root side zSide
 * (NULL: none). */
static void write_relu_pair(const char *zFile, const char *zSide, const char *zOp, float yDelta)
{
    static const float aX[4] = { -1.0f, 0.5f, 2.0f, 3.0f };
    static const char *const azIn[] = { "/x" };
    float aY[4];
    int i;
    parity_writer *pW = wopen(zFile);
    for (i = 0; i < 4; i++) aY[i] = (aX[i] > 0 ? aX[i] : 0.0f) + (i == 2 ? yDelta : 0.0f);
    if (zSide) wcheck(pW, parity_writer_attr_string(pW, NULL, "side", zSide));
    w_f32(pW, "/x", aX, 4);
    w_f32(pW, "/y", aY, 4);
    w_op(pW, "/y", zOp, azIn, 1);
    wclose(pW);
}

/* The same under a made-up op (no model: the per-dtype tolerance judges). */
static void write_simple(const char *zFile, float yDelta)
{
    write_relu_pair(zFile, NULL, "test.act", yDelta);
}

Test(cli, verdict_pass_exit_0)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    json_t *pDoc, *pSummary;
    write_simple(zE, 0.0f);
    write_simple(zC, 0.0f);
    pDoc = diff_json(0, zE, zC, NULL);
    cr_expect_str_eq(jstr(pDoc, "verdict"), "pass");
    cr_expect_null(jstr(pDoc, "first_divergence"));
    cr_expect(json_is_true(json_object_get(pDoc, "inputs_match")));
    cr_expect_str_eq(jstr(pDoc, "tool"), "paritydiff");
    cr_expect_str_eq(jstr(pDoc, "eager"), zE);
    cr_expect_str_eq(jstr(pDoc, "compiled"), zC);
    pSummary = json_object_get(pDoc, "summary");
    cr_expect_eq(jint(pSummary, "pass"), 2);
    cr_expect_eq(jint(pSummary, "tensors"), 2);
    /* The text report still goes to stdout when the JSON goes to a file. */
    cr_expect_not_null(strstr(g_last.zOut, "verdict: PASS"), "%s", g_last.zOut);
    json_decref(pDoc);
}

Test(cli, verdict_fail_exit_1)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    json_t *pDoc;
    write_simple(zE, 0.0f);
    write_simple(zC, 0.25f);
    pDoc = diff_json(1, zE, zC, NULL);
    cr_expect_str_eq(jstr(pDoc, "verdict"), "fail");
    cr_expect_str_eq(jstr(pDoc, "first_divergence"), "/y");
    cr_expect_str_eq(status_of(pDoc, "/y"), "fail");
    cr_expect_str_eq(status_of(pDoc, "/x"), "pass");
    cr_expect_eq(jint(json_object_get(pDoc, "summary"), "fail"), 1);
    cr_expect_not_null(strstr(g_last.zOut, "verdict: FAIL"), "%s", g_last.zOut);
    json_decref(pDoc);
}

Test(cli, verdict_error_exit_2)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    static const uint16_t aBits[2] = { 0x3F80, 0x4000 };
    const uint64_t n = 2;
    parity_writer *pW;
    json_t *pDoc, *pT;
    char zLine[1024];
    pW = wopen(zE);
    w_tensor(pW, "/h", PARITY_DT_BF16, 1, &n, aBits);
    wclose(pW);
    pW = wopen(zC);
    w_tensor(pW, "/h", PARITY_DT_U16, 1, &n, aBits);
    wcheck(pW, parity_writer_attr_string(pW, "/h", "dtype", "float99"));
    wclose(pW);
    pDoc = diff_json(2, zE, zC, NULL);
    cr_expect_str_eq(jstr(pDoc, "verdict"), "error");
    pT = tensor_named(pDoc, "/h");
    cr_expect_str_eq(jstr(pT, "status"), "error");
    cr_expect_not_null(jstr(pT, "message"));
    cr_expect_not_null(strstr(jstr(pT, "message"), "float99"), "message '%s'", jstr(pT, "message"));
    cr_expect_eq(jint(json_object_get(pDoc, "summary"), "error"), 1);
    cr_expect_eq(count_lines(g_last.zErr, 0, zLine, sizeof zLine), 1, "stderr:\n%s", g_last.zErr);
    cr_expect_not_null(strstr(zLine, zC), "'%s' does not name %s", zLine, zC);
    json_decref(pDoc);
}

/* ---- execution order and first_divergence ------------------------------------------- */

/* Writes tensors of 3 floats; pfDelta(name) gives the compiled perturbation. Each entry:
 * name, op (or NULL), inputs (comma-separated or NULL), order (or -1), delta. */
typedef struct {
    const char *zName, *zOp, *zInputs;
    int64_t iOrder;
    float delta;
} graph_node;

static void write_nodes(const char *zFile, const graph_node *aNode, size_t nNode, int compiled)
{
    parity_writer *pW = wopen(zFile);
    size_t i;
    for (i = 0; i < nNode; i++) {
        float a[3] = { 1.0f, 2.0f, 3.0f };
        if (compiled) a[1] += aNode[i].delta;
        w_f32(pW, aNode[i].zName, a, 3);
        if (aNode[i].zOp) wcheck(pW, parity_writer_attr_string(pW, aNode[i].zName, "op", aNode[i].zOp));
        if (aNode[i].zInputs) {
            char zCopy[256], *zTok, *zSave = NULL;
            const char *azIn[16];
            size_t nIn = 0;
            snprintf(zCopy, sizeof zCopy, "%s", aNode[i].zInputs);
            for (zTok = strtok_r(zCopy, ",", &zSave); zTok && nIn < 16; zTok = strtok_r(NULL, ",", &zSave))
                azIn[nIn++] = zTok;
            wcheck(pW, parity_writer_attr_strings(pW, aNode[i].zName, "inputs", azIn, nIn));
        }
        if (aNode[i].iOrder >= 0) w_order(pW, aNode[i].zName, aNode[i].iOrder);
    }
    wclose(pW);
}

static json_t *diff_nodes(int wantCode, const graph_node *aNode, size_t nNode)
{
    const char *zE = tmp_path("graph_e.h5"), *zC = tmp_path("graph_c.h5");
    write_nodes(zE, aNode, nNode, 0);
    write_nodes(zC, aNode, nNode, 1);
    return diff_json(wantCode, zE, zC, NULL);
}

Test(cli, first_divergence_by_order_attribute)
{
    /* Name order a, b, c, d; "order" says c, then b and d (tie: by name), then a. */
    static const graph_node aNode[] = {
        { "/a", "test.add", NULL, 2, 0.5f },
        { "/b", "test.mul", NULL, 1, 0.5f },
        { "/c", "test.neg", NULL, 0, 0.0f },
        { "/d", "test.exp", NULL, 1, 0.5f },
    };
    json_t *pDoc = diff_nodes(1, aNode, 4);
    cr_expect_str_eq(tensor_order(pDoc), "/c /b /d /a");
    cr_expect_str_eq(jstr(pDoc, "first_divergence"), "/b");
    cr_expect_eq(jint(tensor_named(pDoc, "/d"), "order"), 1);
    json_decref(pDoc);
}

Test(cli, first_divergence_by_topological_order)
{
    /* x -> z -> m -> a, and x -> p: name order (a, m, p, x, z) is the reverse of the data
     * flow. Kahn with ties by name gives x, p, z, m, a; "z" without the slash is "/z". */
    static const graph_node aNode[] = {
        { "/a", "test.add", "/m,/x", -1, 0.5f },
        { "/m", "test.mul", "z", -1, 0.5f },
        { "/p", "test.exp", "/x", -1, 0.0f },
        { "/x", NULL, NULL, -1, 0.0f },
        { "/z", "test.neg", "/x", -1, 0.5f },
    };
    json_t *pDoc = diff_nodes(1, aNode, 5);
    cr_expect_str_eq(tensor_order(pDoc), "/x /p /z /m /a");
    cr_expect_str_eq(jstr(pDoc, "first_divergence"), "/z");
    json_decref(pDoc);
}

Test(cli, order_attribute_never_precedes_inputs)
{
    /* Same graph, but only /a carries an "order" (the natural capture: module outputs
     * tagged, intermediates not): its producers still come first, so the first divergence
     * is the earliest cause, /z, not the echo /a. */
    static const graph_node aNode[] = {
        { "/a", "test.add", "/m,/x", 0, 0.5f },
        { "/m", "test.mul", "/z", -1, 0.5f },
        { "/x", NULL, NULL, -1, 0.0f },
        { "/z", "test.neg", "/x", -1, 0.5f },
    };
    json_t *pDoc = diff_nodes(1, aNode, 4);
    cr_expect_str_eq(tensor_order(pDoc), "/x /z /m /a");
    cr_expect_str_eq(jstr(pDoc, "first_divergence"), "/z");
    json_decref(pDoc);
}

Test(cli, first_divergence_by_name_without_graph)
{
    /* No "order", no "inputs": name order, nested groups included, and a warning that
     * this is all the order there is. */
    char zFirst[512];
    static const graph_node aNode2[] = {
        { "/q", "test.add", NULL, -1, 0.5f },
        { "/g/deep", "test.mul", NULL, -1, 0.5f },
        { "/j", NULL, NULL, -1, 0.0f },
    };
    json_t *pDoc = diff_nodes(1, aNode2, 3);
    cr_expect_str_eq(tensor_order(pDoc), "/g/deep /j /q");
    cr_expect_str_eq(jstr(pDoc, "first_divergence"), "/g/deep");
    cr_expect_eq(count_lines(g_last.zErr, 1, zFirst, sizeof zFirst), 2, "%s", g_last.zErr);
    cr_expect(strstr(zFirst, "execution order is unknown"), "%s", zFirst);
    cr_expect_eq(json_array_size(json_object_get(pDoc, "warnings")), 2);
    json_decref(pDoc);
}

/* ---- inputs: bit for bit ------------------------------------------------------------ */

Test(cli, inputs_are_compared_bit_for_bit)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    static const char *const azInY[] = { "/x", "/w" }, *const azInOut[] = { "/y" };
    const float aX[3] = { 1.0f, 2.0f, 3.0f }, aW[3] = { 0.5f, 0.25f, 0.125f };
    const float aY[3] = { 1.5f, 2.25f, 3.125f };
    float aX2[3], aY2[3], aFree2[3];
    parity_writer *pW;
    json_t *pDoc, *pT, *pDiffer;
    int side;

    memcpy(aX2, aX, sizeof aX);
    memcpy(aY2, aY, sizeof aY);
    memcpy(aFree2, aX, sizeof aX);
    aX2[1] = ulps_f32(aX[1], 1);       /* the input: 1 ulp */
    aY2[2] = ulps_f32(aY[2], 1);       /* an op's output: 1 ulp */
    aFree2[0] = ulps_f32(aX[0], -1);   /* no op, but no consumer either: not an input */
    for (side = 0; side < 2; side++) {
        pW = wopen(side ? zC : zE);
        w_f32(pW, "/x", side ? aX2 : aX, 3);
        w_f32(pW, "/w", aW, 3);
        w_f32(pW, "/y", side ? aY2 : aY, 3);
        w_op(pW, "/y", "test.linear", azInY, 2);
        w_f32(pW, "/out", aY, 3);
        w_op(pW, "/out", "test.softmax", azInOut, 1);
        w_f32(pW, "/free", side ? aFree2 : aX, 3);
        wclose(pW);
    }
    pDoc = diff_json(1, zE, zC, NULL);
    cr_expect_str_eq(jstr(pDoc, "verdict"), "fail");
    cr_expect(json_is_false(json_object_get(pDoc, "inputs_match")));
    pDiffer = json_object_get(pDoc, "inputs_differ");
    cr_expect_str_eq(compact(pDiffer), "[\"/x\"]");
    cr_expect_str_eq(jstr(pDoc, "first_divergence"), "/x");

    pT = tensor_named(pDoc, "/x");
    cr_expect_str_eq(jstr(pT, "status"), "fail");
    cr_expect(json_is_true(json_object_get(pT, "is_input")));
    cr_expect(json_is_true(json_object_get(json_object_get(pT, "tolerance"), "exact")));
    cr_expect_eq(jint(pT, "bit_differences"), 1);
    cr_expect_eq(jint(pT, "max_ulp"), 1);
    cr_expect_eq(jint(pT, "mismatches"), 1);

    pT = tensor_named(pDoc, "/w");
    cr_expect_str_eq(jstr(pT, "status"), "pass");
    cr_expect(json_is_true(json_object_get(pT, "is_input")));

    /* An op's output within 1 ulp passes under the default tolerance, even when a later
     * op names it in its inputs (an intermediate, not an input). */
    pT = tensor_named(pDoc, "/y");
    cr_expect_str_eq(jstr(pT, "status"), "pass");
    cr_expect(json_is_false(json_object_get(pT, "is_input")));
    cr_expect_eq(jint(pT, "bit_differences"), 1);
    cr_expect_eq(jint(pT, "max_ulp"), 1);
    cr_expect(json_is_false(json_object_get(json_object_get(pT, "tolerance"), "exact")));

    pT = tensor_named(pDoc, "/free");
    cr_expect_str_eq(jstr(pT, "status"), "pass");
    cr_expect(json_is_false(json_object_get(pT, "is_input")));
    json_decref(pDoc);
}

Test(cli, op_tensor_one_ulp_passes_by_default)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    write_simple(zE, 0.0f);
    write_simple(zC, ulps_f32(2.0f, 1) - 2.0f);   /* /y[2] = 2 + 1 ulp */
    {
        json_t *pDoc = diff_json(0, zE, zC, NULL), *pT = tensor_named(pDoc, "/y");
        cr_expect_str_eq(jstr(pDoc, "verdict"), "pass");
        cr_expect(json_is_true(json_object_get(pDoc, "inputs_match")));
        cr_expect_str_eq(jstr(pT, "status"), "pass");
        cr_expect_eq(jint(pT, "bit_differences"), 1);
        cr_expect_eq(jint(pT, "max_ulp"), 1);
        cr_expect_eq(jint(pT, "mismatches"), 0);
        json_decref(pDoc);
    }
}

/* ---- missing tensors, shapes and dtypes --------------------------------------------- */

static void write_named(const char *zFile, const char *const *azName, size_t n)
{
    static const float a[3] = { 1.0f, 2.0f, 3.0f };
    parity_writer *pW = wopen(zFile);
    size_t i;
    for (i = 0; i < n; i++) w_f32(pW, azName[i], a, 3);
    wclose(pW);
}

Test(cli, missing_in_compiled_fails_only_with_strict)
{
    static const char *const azE[] = { "/a", "/b" }, *const azC[] = { "/a" };
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    json_t *pDoc;
    write_named(zE, azE, 2);
    write_named(zC, azC, 1);
    pDoc = diff_json(0, zE, zC, NULL);
    cr_expect_str_eq(jstr(pDoc, "verdict"), "pass");
    cr_expect_str_eq(status_of(pDoc, "/b"), "missing_in_compiled");
    cr_expect_null(jstr(pDoc, "first_divergence"));
    cr_expect_eq(jint(json_object_get(pDoc, "summary"), "missing_in_compiled"), 1);
    cr_expect(json_is_false(json_object_get(json_object_get(pDoc, "options"), "strict")));
    json_decref(pDoc);
    pDoc = diff_json(1, zE, zC, "--strict", NULL);
    cr_expect_str_eq(jstr(pDoc, "verdict"), "fail");
    cr_expect_str_eq(jstr(pDoc, "first_divergence"), "/b");
    cr_expect(json_is_true(json_object_get(json_object_get(pDoc, "options"), "strict")));
    json_decref(pDoc);
}

Test(cli, missing_in_eager_fails_only_with_strict)
{
    static const char *const azE[] = { "/a" }, *const azC[] = { "/a", "/c" };
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    json_t *pDoc, *pT;
    write_named(zE, azE, 1);
    write_named(zC, azC, 2);
    pDoc = diff_json(0, zE, zC, NULL);
    cr_expect_str_eq(jstr(pDoc, "verdict"), "pass");
    pT = tensor_named(pDoc, "/c");
    cr_expect_str_eq(jstr(pT, "status"), "missing_in_eager");
    cr_expect_str_eq(compact(json_object_get(pT, "shape")), "[3]");
    cr_expect_eq(jint(json_object_get(pDoc, "summary"), "missing_in_eager"), 1);
    json_decref(pDoc);
    pDoc = diff_json(1, zE, zC, "--strict", NULL);
    cr_expect_str_eq(jstr(pDoc, "verdict"), "fail");
    cr_expect_str_eq(jstr(pDoc, "first_divergence"), "/c");
    json_decref(pDoc);
}

Test(cli, shape_mismatch)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    static const float a[4] = { 1, 2, 3, 4 };
    static const uint64_t aDimE[1] = { 4 }, aDimC[2] = { 2, 2 };
    parity_writer *pW;
    json_t *pDoc, *pT;
    pW = wopen(zE);
    w_tensor(pW, "/s", PARITY_DT_F32, 1, aDimE, a);
    wclose(pW);
    pW = wopen(zC);
    w_tensor(pW, "/s", PARITY_DT_F32, 2, aDimC, a);
    wclose(pW);
    pDoc = diff_json(1, zE, zC, NULL);
    cr_expect_str_eq(jstr(pDoc, "verdict"), "fail");
    cr_expect_str_eq(jstr(pDoc, "first_divergence"), "/s");
    pT = tensor_named(pDoc, "/s");
    cr_expect_str_eq(jstr(pT, "status"), "shape_mismatch");
    cr_expect_str_eq(compact(json_object_get(pT, "shape")), "[4]");
    cr_expect_str_eq(compact(json_object_get(pT, "compiled_shape")), "[2,2]");
    cr_expect_eq(jint(json_object_get(pDoc, "summary"), "shape_mismatch"), 1);
    json_decref(pDoc);
}

Test(cli, dtype_mismatch)
{
    /* An integer against a float is a dtype mismatch (two float dtypes are compared in the
     * narrower: float32_against_bfloat16_is_compared_in_bfloat16). */
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    static const float a[2] = { 1, 2 };
    static const int32_t d[2] = { 1, 2 };
    static const double f64[2] = { 1, 2 };
    const uint64_t n = 2;
    parity_writer *pW;
    json_t *pDoc, *pT;
    pW = wopen(zE);
    w_tensor(pW, "/t", PARITY_DT_F32, 1, &n, a);
    wclose(pW);
    pW = wopen(zC);
    w_tensor(pW, "/t", PARITY_DT_I32, 1, &n, d);
    wclose(pW);
    pDoc = diff_json(1, zE, zC, NULL);
    cr_expect_str_eq(jstr(pDoc, "verdict"), "fail");
    pT = tensor_named(pDoc, "/t");
    cr_expect_str_eq(jstr(pT, "status"), "dtype_mismatch");
    cr_expect_str_eq(jstr(pT, "dtype"), "float32");
    cr_expect_str_eq(jstr(pT, "compiled_dtype"), "int32");
    cr_expect_eq(jint(json_object_get(pDoc, "summary"), "dtype_mismatch"), 1);
    json_decref(pDoc);
    /* float64 against float32: compared in float32, equal */
    pW = wopen(zC);
    w_tensor(pW, "/t", PARITY_DT_F64, 1, &n, f64);
    wclose(pW);
    pDoc = diff_json(0, zE, zC, NULL);
    pT = tensor_named(pDoc, "/t");
    cr_expect_str_eq(jstr(pT, "status"), "pass");
    cr_expect_eq(jint(pT, "elements"), 2);
    json_decref(pDoc);
}

/* ---- tolerance options -------------------------------------------------------------- */

Test(cli, tolerance_options)
{
    /* /one: e = 1 and c = 1 + 10 ulps (d = 1.1920929e-6); /neg: e = -4 and c = -4 - 10 ulps
     * (d = 4.7683716e-6, the same relative error: rtol must use |e|). */
    typedef struct { const char *azOpt[8]; const char *zOne, *zNeg; } tol_case;
    static const tol_case aCase[] = {
        { { NULL }, "pass", "pass" },
        { { "--atol", "0", "--rtol", "0", NULL }, "fail", "fail" },
        { { "--atol", "0", "--rtol", "0", "--max-ulp", "10", NULL }, "pass", "pass" },
        { { "--atol", "0", "--rtol", "0", "--max-ulp", "9", NULL }, "fail", "fail" },
        { { "--atol", "0", "--rtol", "0", "--max-ulp", "0", NULL }, "fail", "fail" },
        { { "--atol", "0", "--rtol", "1.2e-6", NULL }, "pass", "pass" },
        { { "--atol", "0", "--rtol", "1.19e-6", NULL }, "fail", "fail" },
        { { "--rtol", "0", "--atol", "1.2e-6", NULL }, "pass", "fail" },
        { { "--rtol", "0", "--atol", "4.8e-6", NULL }, "pass", "pass" },
        { { "--rtol", "0", "--atol", "1.19e-6", NULL }, "fail", "fail" },
        /* atol + rtol*|e|: 0.6e-6 + 0.6e-6 covers /one; /neg needs 0.6e-6 + 2.4e-6 < d */
        { { "--atol", "0.6e-6", "--rtol", "0.6e-6", NULL }, "pass", "fail" },
        { { "--atol", "0.59e-6", "--rtol", "0.59e-6", NULL }, "fail", "fail" },
        /* OR: either criterion is enough */
        { { "--atol", "0", "--rtol", "1e-9", "--max-ulp", "10", NULL }, "pass", "pass" },
        { { "--atol", "0", "--rtol", "1.2e-6", "--max-ulp", "1", NULL }, "pass", "pass" },
        /* --rtol alone keeps the dtype's default atol (1e-5 for float32) */
        { { "--rtol", "0", NULL }, "pass", "pass" },
    };
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    const float aOneE[1] = { 1.0f }, aNegE[1] = { -4.0f };
    const float aOneC[1] = { ulps_f32(1.0f, 10) }, aNegC[1] = { ulps_f32(-4.0f, 10) };
    parity_writer *pW;
    size_t i, k;

    cr_assert_float_eq((double)aOneC[0] - 1.0, 1.1920929e-6, 1e-12);
    cr_assert_float_eq((double)aNegC[0] + 4.0, -4.7683716e-6, 1e-12);
    pW = wopen(zE);
    w_f32(pW, "/one", aOneE, 1);
    w_f32(pW, "/neg", aNegE, 1);
    wclose(pW);
    pW = wopen(zC);
    w_f32(pW, "/one", aOneC, 1);
    w_f32(pW, "/neg", aNegC, 1);
    wclose(pW);

    for (i = 0; i < sizeof aCase / sizeof aCase[0]; i++) {
        const char *const *az = aCase[i].azOpt;
        int want = strcmp(aCase[i].zOne, "fail") == 0 || strcmp(aCase[i].zNeg, "fail") == 0;
        char zWhat[256] = "options:";
        json_t *pDoc, *pTol;
        for (k = 0; az[k]; k++) {
            strncat(zWhat, " ", sizeof zWhat - strlen(zWhat) - 1);
            strncat(zWhat, az[k], sizeof zWhat - strlen(zWhat) - 1);
        }
        pDoc = diff_json(want, zE, zC, az[0], az[1], az[2], az[3], az[4], az[5], az[6], NULL);
        cr_expect_str_eq(status_of(pDoc, "/one"), aCase[i].zOne, "%s: /one", zWhat);
        cr_expect_str_eq(status_of(pDoc, "/neg"), aCase[i].zNeg, "%s: /neg", zWhat);
        cr_expect_eq(jint(tensor_named(pDoc, "/one"), "max_ulp"), 10, "%s", zWhat);
        cr_expect_eq(jint(tensor_named(pDoc, "/neg"), "max_ulp"), 10, "%s", zWhat);
        /* The applied tolerance is echoed. */
        pTol = json_object_get(tensor_named(pDoc, "/one"), "tolerance");
        for (k = 0; az[k]; k += 2) {
            if (strcmp(az[k], "--max-ulp") == 0) {
                json_t *pV = json_object_get(pTol, "max_ulp");
                cr_expect(json_is_integer(pV), "%s: max_ulp %s", zWhat, compact(pV));
                cr_expect_eq(json_integer_value(pV), strtoll(az[k + 1], NULL, 10), "%s", zWhat);
            } else {
                json_t *pV = json_object_get(pTol, az[k] + 2);   /* "--atol" -> "atol" */
                cr_expect(json_is_number(pV), "%s: %s", zWhat, az[k]);
                cr_expect_float_eq(json_number_value(pV), strtod(az[k + 1], NULL), 1e-15, "%s", zWhat);
            }
        }
        if (!az[0]) {
            cr_expect(json_is_null(json_object_get(pTol, "max_ulp")));
            cr_expect_float_eq(json_number_value(json_object_get(pTol, "atol")), 1e-5, 1e-15);
            cr_expect_float_eq(json_number_value(json_object_get(pTol, "rtol")), 1.3e-6, 1e-15);
        }
        json_decref(pDoc);
    }
}

Test(cli, signed_zeros)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    const float aE[3] = { 0.0f, -0.0f, 1.0f }, aC[3] = { -0.0f, 0.0f, 1.0f };
    parity_writer *pW;
    json_t *pDoc, *pT;
    pW = wopen(zE);
    w_f32(pW, "/z", aE, 3);
    wclose(pW);
    pW = wopen(zC);
    w_f32(pW, "/z", aC, 3);
    wclose(pW);

    pDoc = diff_json(0, zE, zC, NULL);
    pT = tensor_named(pDoc, "/z");
    cr_expect_str_eq(jstr(pT, "status"), "pass");
    cr_expect_eq(jint(pT, "signed_zero_mismatches"), 2);
    cr_expect_eq(jint(pT, "bit_differences"), 2);
    cr_expect_eq(jint(pT, "mismatches"), 0);
    cr_expect_eq(jint(pT, "max_ulp"), 0);
    cr_expect(json_is_null(json_object_get(pT, "affected_slice")));
    cr_expect(json_is_false(json_object_get(json_object_get(pDoc, "options"), "signed_zeros")));
    json_decref(pDoc);

    pDoc = diff_json(1, zE, zC, "--signed-zeros", NULL);
    pT = tensor_named(pDoc, "/z");
    cr_expect_str_eq(jstr(pT, "status"), "fail");
    cr_expect_eq(jint(pT, "mismatches"), 2);
    cr_expect_str_eq(compact(json_object_get(pT, "affected_slice")), "[[0,2]]");
    cr_expect(json_is_true(json_object_get(json_object_get(pT, "tolerance"), "signed_zeros")));
    cr_expect(json_is_true(json_object_get(json_object_get(pDoc, "options"), "signed_zeros")));
    json_decref(pDoc);
}

Test(cli, nan_and_inf)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    const float fNan = NAN, fInf = INFINITY;
    float fNan2;
    uint32_t uNan2 = 0xFFC12345u;   /* a negative NaN with another payload */
    parity_writer *pW;
    json_t *pDoc, *pT;
    memcpy(&fNan2, &uNan2, 4);
    {
        const float aSameE[2] = { fNan, 1.0f }, aSameC[2] = { fNan, 1.0f };
        const float aPayloadC[2] = { fNan2, 1.0f };
        const float aOneE[2] = { 1.0f, 2.0f }, aOneC[2] = { 1.0f, fNan };
        const float aOtherE[2] = { fNan, 2.0f }, aOtherC[2] = { 1.0f, 2.0f };
        const float aInfE[2] = { fInf, 1.0f }, aInfC[2] = { -fInf, 1.0f };
        const float aInfSame[2] = { fInf, -fInf };
        const float aInfFinE[1] = { fInf }, aInfFinC[1] = { 3.4028235e38f };
        pW = wopen(zE);
        w_f32(pW, "/nan_same", aSameE, 2);
        w_f32(pW, "/nan_payload", aSameE, 2);
        w_f32(pW, "/nan_compiled", aOneE, 2);
        w_f32(pW, "/nan_eager", aOtherE, 2);
        w_f32(pW, "/inf_sign", aInfE, 2);
        w_f32(pW, "/inf_same", aInfSame, 2);
        w_f32(pW, "/inf_finite", aInfFinE, 1);
        wclose(pW);
        pW = wopen(zC);
        w_f32(pW, "/nan_same", aSameC, 2);
        w_f32(pW, "/nan_payload", aPayloadC, 2);
        w_f32(pW, "/nan_compiled", aOneC, 2);
        w_f32(pW, "/nan_eager", aOtherC, 2);
        w_f32(pW, "/inf_sign", aInfC, 2);
        w_f32(pW, "/inf_same", aInfSame, 2);
        w_f32(pW, "/inf_finite", aInfFinC, 1);
        wclose(pW);
    }
    pDoc = diff_json(1, zE, zC, NULL);
    cr_expect_str_eq(status_of(pDoc, "/nan_same"), "pass");
    cr_expect_str_eq(status_of(pDoc, "/nan_payload"), "pass");
    cr_expect_str_eq(status_of(pDoc, "/inf_same"), "pass");
    cr_expect_eq(jint(tensor_named(pDoc, "/nan_same"), "nan_mismatches"), 0);

    pT = tensor_named(pDoc, "/nan_compiled");
    cr_expect_str_eq(jstr(pT, "status"), "fail");
    cr_expect_eq(jint(pT, "nan_mismatches"), 1);
    cr_expect_eq(jint(pT, "mismatches"), 1);
    cr_expect_str_eq(compact(json_object_get(pT, "worst_index")), "[1]");
    cr_expect(json_is_null(json_object_get(pT, "worst_score")), "worst_score inf must be null, got %s",
              compact(json_object_get(pT, "worst_score")));
    /* error figures cover pairs finite on both sides: here 0, finite, present */
    cr_expect(json_is_number(json_object_get(pT, "max_abs_err")));
    cr_expect(json_is_number(json_object_get(pT, "max_rel_err")));
    cr_expect_str_eq(compact(json_object_get(pT, "affected_slice")), "[[1,2]]");

    pT = tensor_named(pDoc, "/nan_eager");
    cr_expect_str_eq(jstr(pT, "status"), "fail");
    cr_expect_eq(jint(pT, "nan_mismatches"), 1);

    pT = tensor_named(pDoc, "/inf_sign");
    cr_expect_str_eq(jstr(pT, "status"), "fail");
    cr_expect_eq(jint(pT, "nan_mismatches"), 1);
    cr_expect_str_eq(compact(json_object_get(pT, "worst_index")), "[0]");

    pT = tensor_named(pDoc, "/inf_finite");
    cr_expect_str_eq(jstr(pT, "status"), "fail");
    cr_expect_eq(jint(pT, "nan_mismatches"), 1);
    json_decref(pDoc);
}

/* ---- worst_index, affected_slice, nulls, integers ----------------------------------- */

Test(cli, worst_index_ties_and_affected_slice)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    static const uint64_t aDim[2] = { 4, 5 };
    float aE[20], aC[20];
    parity_writer *pW;
    json_t *pDoc, *pT;
    int i;
    for (i = 0; i < 20; i++) aE[i] = aC[i] = 1.0f;
    aC[13] = 1.5f;   /* [2, 3] */
    aC[7] = 1.5f;    /* [1, 2]: the same error, lower index: the worst */
    aC[18] = 1.25f;  /* [3, 3]: smaller */
    pW = wopen(zE);
    w_tensor(pW, "/m", PARITY_DT_F32, 2, aDim, aE);
    wclose(pW);
    pW = wopen(zC);
    w_tensor(pW, "/m", PARITY_DT_F32, 2, aDim, aC);
    wclose(pW);
    pDoc = diff_json(1, zE, zC, NULL);
    pT = tensor_named(pDoc, "/m");
    cr_expect_eq(jint(pT, "mismatches"), 3);
    cr_expect_str_eq(compact(json_object_get(pT, "worst_index")), "[1,2]");
    cr_expect_str_eq(compact(json_object_get(pT, "affected_slice")), "[[1,4],[2,4]]");
    cr_expect_float_eq(json_number_value(json_object_get(pT, "max_abs_err")), 0.5, 1e-12);
    cr_expect_float_eq(json_number_value(json_object_get(pT, "worst_score")), 0.5 / (1e-5 + 1.3e-6), 1e-6);
    json_decref(pDoc);
}

Test(cli, affected_slice_shapes)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    static const uint64_t aDim3[3] = { 2, 3, 4 };
    const float sE = 1.0f, sC = 2.0f;
    float aE[24], aC[24];
    parity_writer *pW;
    json_t *pDoc, *pT;
    int i;
    for (i = 0; i < 24; i++) aE[i] = aC[i] = (float)i;
    aC[0 * 12 + 1 * 4 + 2] += 1.0f;   /* [0, 1, 2] */
    aC[1 * 12 + 2 * 4 + 0] -= 1.0f;   /* [1, 2, 0] */
    pW = wopen(zE);
    w_tensor(pW, "/scalar", PARITY_DT_F32, 0, NULL, &sE);
    w_tensor(pW, "/cube", PARITY_DT_F32, 3, aDim3, aE);
    w_tensor(pW, "/same", PARITY_DT_F32, 3, aDim3, aE);
    wclose(pW);
    pW = wopen(zC);
    w_tensor(pW, "/scalar", PARITY_DT_F32, 0, NULL, &sC);
    w_tensor(pW, "/cube", PARITY_DT_F32, 3, aDim3, aC);
    w_tensor(pW, "/same", PARITY_DT_F32, 3, aDim3, aE);
    wclose(pW);
    pDoc = diff_json(1, zE, zC, NULL);

    pT = tensor_named(pDoc, "/scalar");
    cr_expect_str_eq(jstr(pT, "status"), "fail");
    cr_expect_str_eq(compact(json_object_get(pT, "shape")), "[]");
    cr_expect_str_eq(compact(json_object_get(pT, "affected_slice")), "[]");
    cr_expect_str_eq(compact(json_object_get(pT, "worst_index")), "[]");
    cr_expect_eq(jint(pT, "elements"), 1);

    pT = tensor_named(pDoc, "/cube");
    cr_expect_str_eq(compact(json_object_get(pT, "affected_slice")), "[[0,2],[1,3],[0,3]]");
    cr_expect_eq(jint(pT, "mismatches"), 2);

    pT = tensor_named(pDoc, "/same");
    cr_expect_str_eq(jstr(pT, "status"), "pass");
    cr_expect(json_is_null(json_object_get(pT, "affected_slice")));
    cr_expect_str_eq(compact(json_object_get(pT, "worst_index")), "[0,0,0]");
    json_decref(pDoc);
}

Test(cli, non_finite_numbers_are_null_and_counts_are_integers)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    const float aE[3] = { 0.0f, 0.0f, 0.0f }, aC[3] = { 0.0f, 1.0f, 0.0f };
    const double dE[2] = { 1.0, 2.0 }, dC[2] = { 1.0, NAN };
    const uint64_t n2 = 2;
    parity_writer *pW;
    json_t *pDoc, *pT, *pSummary, *pHist, *pV;
    const char *zKey;
    size_t i;
    static const char *const azCount[] = { "mismatches", "nan_mismatches", "signed_zero_mismatches",
                                           "bit_differences", "max_ulp", "elements", "position" };

    pW = wopen(zE);
    w_f32(pW, "/zero_ref", aE, 3);
    w_tensor(pW, "/nan64", PARITY_DT_F64, 1, &n2, dE);
    wclose(pW);
    pW = wopen(zC);
    w_f32(pW, "/zero_ref", aC, 3);
    w_tensor(pW, "/nan64", PARITY_DT_F64, 1, &n2, dC);
    wclose(pW);
    pDoc = diff_json(1, zE, zC, NULL);

    /* The reference is all zeros: rel_l2 is +Inf, reported as null (not dropped). */
    pT = tensor_named(pDoc, "/zero_ref");
    cr_expect_str_eq(jstr(pT, "status"), "fail");
    cr_expect(json_object_get(pT, "rel_l2") != NULL, "rel_l2 key missing");
    cr_expect(json_is_null(json_object_get(pT, "rel_l2")), "rel_l2: %s", compact(json_object_get(pT, "rel_l2")));
    cr_expect(json_is_real(json_object_get(pT, "max_rel_err")));
    cr_expect(json_is_real(json_object_get(pT, "max_abs_err")));
    cr_expect(json_is_real(json_object_get(pT, "worst_score")));

    pT = tensor_named(pDoc, "/nan64");
    cr_expect(json_object_get(pT, "worst_score") != NULL, "worst_score key missing");
    cr_expect(json_is_null(json_object_get(pT, "worst_score")));
    cr_expect(json_is_real(json_object_get(pT, "rel_l2")));

    for (i = 0; i < json_array_size(json_object_get(pDoc, "tensors")); i++) {
        size_t k;
        pT = json_array_get(json_object_get(pDoc, "tensors"), i);
        for (k = 0; k < sizeof azCount / sizeof azCount[0]; k++)
            cr_expect(json_is_integer(json_object_get(pT, azCount[k])), "%s.%s is %s", jstr(pT, "name"),
                      azCount[k], compact(json_object_get(pT, azCount[k])));
        pHist = json_object_get(pT, "ulp_histogram");
        cr_expect(json_is_array(pHist));
        for (k = 0; k < json_array_size(pHist); k++) {
            cr_expect(json_is_integer(json_object_get(json_array_get(pHist, k), "min")));
            cr_expect(json_is_integer(json_object_get(json_array_get(pHist, k), "max")));
            cr_expect(json_is_integer(json_object_get(json_array_get(pHist, k), "count")));
        }
        pV = json_object_get(pT, "worst_index");
        for (k = 0; k < json_array_size(pV); k++) cr_expect(json_is_integer(json_array_get(pV, k)));
    }
    pSummary = json_object_get(pDoc, "summary");
    json_object_foreach(pSummary, zKey, pV)
        cr_expect(json_is_integer(pV), "summary.%s is %s", zKey, compact(pV));
    cr_expect(json_is_integer(json_object_get(pDoc, "parity_report_version")));
    json_decref(pDoc);
}

/* ---- the JSON output itself --------------------------------------------------------- */

Test(cli, json_to_stdout_is_only_json)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    const char *azArgv[] = { PARITYDIFF_BIN, "--json", "-", zE, zC, NULL };
    run_result r;
    json_error_t err;
    json_t *pDoc;
    write_simple(zE, 0.0f);
    write_simple(zC, 0.25f);
    run_argv(azArgv, 60.0, &r);
    expect_clean_stderr(&r, "--json -");
    cr_expect_eq(r.code, 1, "exit %d", r.code);
    cr_expect_eq(count_lines(r.zErr, 0, NULL, 0), 0, "stderr:\n%s", r.zErr);   /* warnings only */
    /* json_loads without JSON_DISABLE_EOF_CHECK rejects anything after the document. */
    pDoc = json_loads(r.zOut, 0, &err);
    cr_assert_not_null(pDoc, "stdout is not exactly one JSON document (%s, line %d):\n%s", err.text,
                       err.line, r.zOut);
    cr_expect_str_eq(jstr(pDoc, "verdict"), "fail");
    cr_expect_null(strstr(r.zOut, "verdict: FAIL"));
    json_decref(pDoc);
    run_free(&r);
}

static int count_dir_entries(const char *zDir, char *zList, size_t nList)
{
    DIR *pDir = opendir(zDir);
    struct dirent *pEnt;
    int n = 0;
    zList[0] = 0;
    cr_assert_not_null(pDir, "%s: %s", zDir, strerror(errno));
    while ((pEnt = readdir(pDir)) != NULL) {
        if (strcmp(pEnt->d_name, ".") == 0 || strcmp(pEnt->d_name, "..") == 0) continue;
        n++;
        strncat(zList, pEnt->d_name, nList - strlen(zList) - 1);
        strncat(zList, " ", nList - strlen(zList) - 1);
    }
    closedir(pDir);
    return n;
}

Test(cli, json_file_is_written_atomically)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5"), *zOutDir = tmp_path("out");
    const char *zJson = tmp_path("out/report.json");
    const char *azArgv[] = { PARITYDIFF_BIN, "-q", "--json", zJson, zE, zC, NULL };
    char zList[4096];
    run_result r;
    json_error_t err;
    json_t *pDoc;
    FILE *pF;
    write_simple(zE, 0.0f);
    write_simple(zC, 0.25f);
    cr_assert_eq(mkdir(zOutDir, 0755), 0);

    /* A stale report is replaced as a whole. */
    pF = fopen(zJson, "w");
    cr_assert_not_null(pF);
    fputs("{\"stale\": true, \"padding\": \"", pF);
    for (int i = 0; i < 100000; i++) fputc('x', pF);
    fputs("\"}\n", pF);
    fclose(pF);

    run_argv(azArgv, 60.0, &r);
    expect_clean_stderr(&r, "--json FILE");
    cr_expect_eq(r.code, 1);
    cr_expect_eq(r.nOut, 0, "-q: stdout should be empty:\n%s", r.zOut);
    run_free(&r);
    pDoc = json_load_file(zJson, 0, &err);
    cr_assert_not_null(pDoc, "%s (line %d)", err.text, err.line);
    cr_expect_null(json_object_get(pDoc, "stale"));
    cr_expect_str_eq(jstr(pDoc, "verdict"), "fail");
    json_decref(pDoc);
    cr_expect_eq(count_dir_entries(zOutDir, zList, sizeof zList), 1, "left behind: %s", zList);
    {
        struct stat st;
        cr_assert_eq(stat(zJson, &st), 0);
        cr_expect((st.st_mode & 0444) != 0, "report mode %o", (unsigned)st.st_mode);
    }
}

/* ---- determinism -------------------------------------------------------------------- */

/* rel_l2 = sqrt(sumSqDiff / sumSqRef) is a floating sum whose association follows the
 * 65536-element blocks, which start at each slab's start. Inline and pooled runs use the
 * same blocks, so the thread count never changes anything (checked exactly below), but a
 * different --slab-bytes (a testing and benchmarking option) moves block boundaries and can
 * change the last digits of rel_l2 (seen: 4.4918376942239167e-5 vs 4.4918376942243619e-5).
 * For those runs rel_l2 is compared to 1e-12 relative; every other field exactly. */
#ifndef REL_L2_DEPENDS_ON_SUMMATION_ORDER
#define REL_L2_DEPENDS_ON_SUMMATION_ORDER 1
#endif

Test(cli, same_json_whatever_threads_and_slabs)
{
    /* 1000 x 601 = 601000 float32 (> 300000, above the inline limit so threads are used;
     * 601 columns so slabs of 4096 bytes do not line up with the 65536-element blocks).
     * Every element differs by a few ulps (so the sums have many terms), some fail, and two
     * share the largest error (ties: the lower index must win whatever the split). */
    enum { ROWS = 1000, COLS = 601, N = ROWS * COLS };
    const uint64_t aDim[2] = { ROWS, COLS };
    const char *zE = tmp_path("big_e.h5"), *zC = tmp_path("big_c.h5");
    static const char *const aazOpt[][5] = {
        { "--threads", "1", NULL },
        { "--threads", "2", NULL },
        { "--threads", "2", "--slab-bytes", "4096" },
        { "--threads", "1", "--slab-bytes", "4096" },
        { "--threads", "3", "--slab-bytes", "1000000" },
        { NULL },
    };
    float *aE = malloc(N * sizeof(float)), *aC = malloc(N * sizeof(float));
    uint64_t state = 12345;
    parity_writer *pW;
    json_t *pRef = NULL, *pRefDoc = NULL;
    size_t i;
    cr_assert(aE && aC);
    for (i = 0; i < N; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        aE[i] = (float)((double)(state >> 11) / 9007199254740992.0 * 2.0 - 1.0) * 100.0f;
        aC[i] = ulps_f32(aE[i], (int)(state >> 61) - 3);   /* -3 .. +4 ulps */
        if (i % 997 == 0) aC[i] = aE[i] * 1.001f;          /* fails */
    }
    aE[70001] = aE[400003] = 1.0f;   /* the two worst, equal errors */
    aC[70001] = aC[400003] = 2.0f;
    pW = wopen(zE);
    w_tensor(pW, "/big", PARITY_DT_F32, 2, aDim, aE);
    wclose(pW);
    pW = wopen(zC);
    w_tensor(pW, "/big", PARITY_DT_F32, 2, aDim, aC);
    wclose(pW);
    free(aE);
    free(aC);

    for (i = 0; i < sizeof aazOpt / sizeof aazOpt[0]; i++) {
        const char *const *az = aazOpt[i];
        json_t *pDoc = diff_json(1, zE, zC, az[0], az[1], az[2], az[3], NULL);
        json_t *pTensors = json_object_get(pDoc, "tensors");
        json_t *pT = json_array_get(pTensors, 0);
        char zIndex[64];
        snprintf(zIndex, sizeof zIndex, "[%d,%d]", 70001 / COLS, 70001 % COLS);
        cr_expect_str_eq(compact(json_object_get(pT, "worst_index")), zIndex, "run %zu", i);
        cr_expect_gt(jint(pT, "mismatches"), 600);
        if (!pRef) {
            pRef = pTensors;
            pRefDoc = pDoc;
            continue;
        }
        {
            json_t *pR0 = json_array_get(pRef, 0);
            const char *zKey;
            json_t *pV;
            cr_expect_eq(json_array_size(pTensors), json_array_size(pRef));
            json_object_foreach(pR0, zKey, pV) {
                json_t *pOther = json_object_get(pT, zKey);
                if (json_equal(pV, pOther)) continue;
#if REL_L2_DEPENDS_ON_SUMMATION_ORDER
                if (az[2] != NULL && strcmp(zKey, "rel_l2") == 0 && json_is_real(pV) && json_is_real(pOther) &&
                    fabs(json_real_value(pV) - json_real_value(pOther)) <=
                        1e-12 * fabs(json_real_value(pV)))
                    continue;
#endif
                {
                    char *zA = json_dumps(pV, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
                    char *zB = json_dumps(pOther, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
                    cr_expect_fail("run %zu (%s %s %s %s): '%s' differs: %s vs %s", i, az[0] ? az[0] : "defaults",
                                   az[1] ? az[1] : "", az[2] ? az[2] : "", az[3] ? az[3] : "", zKey, zA, zB);
                    free(zA);
                    free(zB);
                }
            }
        }
        json_decref(pDoc);
    }
    json_decref(pRefDoc);
}

/* ---- bf16 ---------------------------------------------------------------------------- */

Test(cli, bf16_ulps_are_bf16_ulps)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    /* 1.0, 2.0, -3.0 against 1.0 + 3 ulps, 2.0, -3.0 - 1 ulp (in bfloat16). */
    static const uint16_t aE[3] = { 0x3F80, 0x4000, 0xC040 }, aC[3] = { 0x3F83, 0x4000, 0xC041 };
    const uint64_t n = 3;
    parity_writer *pW;
    json_t *pDoc, *pT;
    pW = wopen(zE);
    w_tensor(pW, "/h", PARITY_DT_BF16, 1, &n, aE);
    wclose(pW);
    pW = wopen(zC);
    w_tensor(pW, "/h", PARITY_DT_BF16, 1, &n, aC);
    wclose(pW);

    pDoc = diff_json(1, zE, zC, NULL);
    pT = tensor_named(pDoc, "/h");
    cr_expect_str_eq(jstr(pT, "dtype"), "bfloat16");
    cr_expect_eq(jint(pT, "max_ulp"), 3);
    cr_expect_eq(jint(pT, "mismatches"), 1);   /* 3 ulps at 1.0 exceed rtol 1.6e-2 */
    cr_expect_str_eq(compact(json_object_get(pT, "worst_index")), "[0]");
    cr_expect_float_eq(json_number_value(json_object_get(pT, "max_abs_err")), 3.0 / 128.0, 1e-12);
    json_decref(pDoc);

    pDoc = diff_json(0, zE, zC, "--atol", "0", "--rtol", "0", "--max-ulp", "3", NULL);
    cr_expect_str_eq(status_of(pDoc, "/h"), "pass");
    json_decref(pDoc);
    pDoc = diff_json(1, zE, zC, "--atol", "0", "--rtol", "0", "--max-ulp", "2", NULL);
    pT = tensor_named(pDoc, "/h");
    cr_expect_str_eq(jstr(pT, "status"), "fail");
    cr_expect_eq(jint(pT, "mismatches"), 1);
    json_decref(pDoc);
}

/* ---- identity and telemetry ---------------------------------------------------------- */

Test(cli, identity_and_telemetry)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    static const float a[2] = { 1, 2 };
    parity_writer *pW;
    json_t *pDoc, *pId, *pTel;

    pW = wopen(zE);
    w_f32(pW, "/t", a, 2);
    wcheck(pW, parity_writer_attr_string(pW, "/", "model", "resnet-a"));
    wcheck(pW, parity_writer_attr_string(pW, "/", "framework", "torch"));
    wcheck(pW, parity_writer_attr_string(pW, "/", "side", "eager"));
    wcheck(pW, parity_writer_attr_float(pW, "/", "compile_time_s", 0.5));
    wcheck(pW, parity_writer_attr_int(pW, "/", "parity_format", 1));
    wclose(pW);
    pW = wopen(zC);
    w_f32(pW, "/t", a, 2);
    wcheck(pW, parity_writer_attr_string(pW, "/", "model", "resnet-b"));
    wcheck(pW, parity_writer_attr_string(pW, "/", "framework", "torch"));
    wcheck(pW, parity_writer_attr_string(pW, "/", "side", "compiled"));
    wcheck(pW, parity_writer_attr_string(pW, "/", "device", "gpu0"));
    wcheck(pW, parity_writer_attr_float(pW, "/", "compile_time_s", 2.5));
    wcheck(pW, parity_writer_attr_int(pW, "/", "graph_breaks", 3));
    wcheck(pW, parity_writer_attr_int(pW, "/", "parity_format", 1));
    wclose(pW);

    pDoc = diff_json(0, zE, zC, NULL);
    pId = json_object_get(pDoc, "identity");
    /* model differs; device is on one side only; side and telemetry are never listed. */
    cr_expect_str_eq(compact(json_object_get(pId, "differs")), "[\"device\",\"model\"]");
    cr_expect_str_eq(jstr(json_object_get(pId, "eager"), "model"), "resnet-a");
    cr_expect_str_eq(jstr(json_object_get(pId, "compiled"), "model"), "resnet-b");
    cr_expect_null(json_object_get(json_object_get(pId, "compiled"), "compile_time_s"));
    cr_expect_null(json_object_get(json_object_get(pId, "compiled"), "graph_breaks"));

    pTel = json_object_get(pDoc, "telemetry");
    cr_expect_float_eq(json_number_value(json_object_get(json_object_get(pTel, "eager"), "compile_time_s")),
                       0.5, 1e-12);
    cr_expect_float_eq(json_number_value(json_object_get(json_object_get(pTel, "compiled"), "compile_time_s")),
                       2.5, 1e-12);
    cr_expect_eq(jint(json_object_get(pTel, "compiled"), "graph_breaks"), 3);
    cr_expect_null(json_object_get(json_object_get(pTel, "eager"), "graph_breaks"));
    cr_expect_null(json_object_get(json_object_get(pTel, "eager"), "model"));
    /* identity differences alone do not change the verdict */
    cr_expect_str_eq(jstr(pDoc, "verdict"), "pass");
    json_decref(pDoc);
}

/* ---- nothing compared, prefixes, sides ------------------------------------------------ */

/* One line on stderr, naming the compiled file, exit 2, and the reason in the report. */
static void expect_nothing_compared(json_t *pDoc, const char *zC)
{
    char zFirst[512];
    cr_expect_str_eq(jstr(pDoc, "verdict"), "error");
    cr_assert_not_null(jstr(pDoc, "error"));
    cr_expect(strncmp(jstr(pDoc, "error"), "nothing compared: ", 18) == 0, "%s", jstr(pDoc, "error"));
    cr_expect_eq(count_lines(g_last.zErr, 0, zFirst, sizeof zFirst), 1, "stderr:\n%s", g_last.zErr);
    cr_expect(strstr(zFirst, zC) && strstr(zFirst, "nothing compared"), "%s", zFirst);
    cr_expect(strstr(g_last.zOut, "\nerror: nothing compared: "), "text report:\n%s", g_last.zOut);
}

Test(cli, nothing_compared_is_an_error_not_a_pass)
{
    static const char *const azE[] = { "/fc1/out", "/fc2/out" };
    static const char *const azC[] = { "/_orig_mod/fc1/out", "/_orig_mod/fc2/out" };
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5"), *zEmpty = tmp_path("empty.h5");
    json_t *pDoc;
    parity_writer *pW;

    write_named(zE, azE, 2);
    write_named(zC, azC, 2);
    pW = wopen(zEmpty);
    wclose(pW);
    /* an empty compiled capture: every tensor missing, nothing compared */
    pDoc = diff_json(2, zE, zEmpty, NULL);
    expect_nothing_compared(pDoc, zEmpty);
    cr_expect_eq(jint(json_object_get(pDoc, "summary"), "missing_in_compiled"), 2);
    json_decref(pDoc);
    /* the same with --strict is a divergence, as before: the missing tensors fail */
    pDoc = diff_json(1, zE, zEmpty, "--strict", NULL);
    cr_expect_str_eq(jstr(pDoc, "verdict"), "fail");
    cr_expect_null(jstr(pDoc, "error"));
    json_decref(pDoc);
    /* two empty captures */
    pDoc = diff_json(2, zEmpty, zEmpty, NULL);
    expect_nothing_compared(pDoc, zEmpty);
    json_decref(pDoc);
    /* torch.compile's _orig_mod/ prefix: no name in common, and the message says how */
    pDoc = diff_json(2, zE, zC, NULL);
    expect_nothing_compared(pDoc, zC);
    cr_expect(strstr(jstr(pDoc, "error"), "--map-prefix"), "%s", jstr(pDoc, "error"));
    json_decref(pDoc);
    /* mapped, every tensor lines up and passes */
    pDoc = diff_json(0, zE, zC, "--map-prefix", "/_orig_mod=/", NULL);
    cr_expect_str_eq(jstr(pDoc, "verdict"), "pass");
    cr_expect_null(jstr(pDoc, "error"));
    cr_expect_eq(jint(json_object_get(pDoc, "summary"), "pass"), 2);
    cr_expect_str_eq(tensor_order(pDoc), "/fc1/out /fc2/out");
    json_decref(pDoc);
    /* without the leading slash, and mapping onto another prefix on both sides */
    pDoc = diff_json(0, zE, zC, "--map-prefix", "_orig_mod=", NULL);
    cr_expect_eq(jint(json_object_get(pDoc, "summary"), "pass"), 2);
    json_decref(pDoc);
    pDoc = diff_json(0, zE, zC, "--map-prefix", "/_orig_mod=/m", "--map-prefix", "/fc1=/m/fc1",
                     "--map-prefix", "/fc2=/m/fc2", NULL);
    cr_expect_str_eq(tensor_order(pDoc), "/m/fc1/out /m/fc2/out");
    json_decref(pDoc);
    /* whole components only: /_orig is not a prefix of /_orig_mod */
    pDoc = diff_json(2, zE, zC, "--map-prefix", "/_orig=/", NULL);
    expect_nothing_compared(pDoc, zC);
    json_decref(pDoc);
}

Test(cli, map_prefix_bad_arguments_and_collisions)
{
    static const char *const azE[] = { "/a/x", "/x" };
    const char *zE = tmp_path("e.h5");
    const char *azBad[] = { "noequals", "=/x" };
    size_t i;
    char zFirst[512];
    write_named(zE, azE, 2);
    for (i = 0; i < 2; i++) {
        const char *azArgv[] = { PARITYDIFF_BIN, "--map-prefix", azBad[i], zE, zE, NULL };
        run_free(&g_last);
        run_argv(azArgv, 60.0, &g_last);
        cr_expect_eq(g_last.code, 2, "--map-prefix %s: exit %d", azBad[i], g_last.code);
        cr_expect(strstr(g_last.zErr, "invalid --map-prefix"), "%s", g_last.zErr);
    }
    /* /a/x renamed onto /x, which exists: two tensors, one name */
    {
        const char *azArgv[] = { PARITYDIFF_BIN, "--map-prefix", "/a=/", zE, zE, NULL };
        run_free(&g_last);
        run_argv(azArgv, 60.0, &g_last);
        cr_expect_eq(g_last.code, 2);
        cr_expect_eq(count_lines(g_last.zErr, 0, zFirst, sizeof zFirst), 1, "%s", g_last.zErr);
        cr_expect(strstr(zFirst, "two tensors the name /x"), "%s", zFirst);
    }
}

/* relu under the registry's model, with a root side. */
static void write_sided(const char *zFile, const char *zSide, float yDelta)
{
    write_relu_pair(zFile, zSide, "relu", yDelta);
}

Test(cli, swapped_sides_are_a_warning)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    json_t *pDoc, *aWarn;
    const char *azArgv[] = { PARITYDIFF_BIN, "--json", tmp_path("sw.json"), zC, zE, NULL };
    json_error_t err;
    char zFirst[1024];

    write_sided(zE, "eager", 0.0f);
    write_sided(zC, "compiled", 0.25f);   /* relu output wrong on the compiled side */
    /* the right order: a failure, no warning */
    pDoc = diff_json(1, zE, zC, NULL);
    cr_expect_eq(json_array_size(json_object_get(pDoc, "warnings")), 0);
    json_decref(pDoc);
    /* swapped: the compiled bug reads as eager_worse and passes, so it must be said: the
     * swap, and the tensor where the side taken as eager breaks relu's exact bound */
    run_free(&g_last);
    run_argv(azArgv, 60.0, &g_last);
    cr_expect_eq(g_last.code, 0, "exit %d: %s", g_last.code, g_last.zErr);
    cr_expect_eq(count_lines(g_last.zErr, 1, zFirst, sizeof zFirst), 2, "%s", g_last.zErr);
    cr_expect(strstr(g_last.zErr, "swapped") &&
              strstr(g_last.zErr, "first file says side = \"compiled\"") &&
              strstr(g_last.zErr, "second file says side = \"eager\""), "%s", g_last.zErr);
    cr_expect(strstr(g_last.zErr, "warning: /y: eager breaks the error bound at 1 element(s) "
                     "where compiled is within it"), "%s", g_last.zErr);
    pDoc = json_load_file(tmp_path("sw.json"), 0, &err);
    cr_assert_not_null(pDoc);
    aWarn = json_object_get(pDoc, "warnings");
    cr_expect_eq(json_array_size(aWarn), 2);
    cr_expect(strstr(json_string_value(json_array_get(aWarn, 0)), "swapped") ||
              strstr(json_string_value(json_array_get(aWarn, 1)), "swapped"));
    cr_expect(strstr(g_last.zOut, "swapped"), "text report:\n%s", g_last.zOut);
    json_decref(pDoc);
    /* a capture against itself (both say eager) is no swap */
    pDoc = diff_json(0, zE, zE, NULL);
    cr_expect_eq(json_array_size(json_object_get(pDoc, "warnings")), 0);
    json_decref(pDoc);
    /* one file without a side, the other contradicting: still said */
    write_sided(zE, "compiled", 0.0f);
    write_sided(zC, NULL, 0.25f);
    {
        const char *azArgv2[] = { PARITYDIFF_BIN, zE, zC, NULL };
        run_free(&g_last);
        run_argv(azArgv2, 60.0, &g_last);
        cr_expect_eq(g_last.code, 1);
        cr_expect_eq(count_lines(g_last.zErr, 1, zFirst, sizeof zFirst), 1, "%s", g_last.zErr);
        cr_expect(strstr(zFirst, "first file says side") && !strstr(zFirst, "second file"),
                  "%s", zFirst);
    }
}

/* ---- long judgements: heartbeat and --timeout ---------------------------------------- */

/* /x and /y = gelu(x) in float64, n elements; GELU's MPFR reference costs ~40 us an element
 * here, and float64 outputs take no fast path (their bounds are near binary64's own
 * accuracy; judge.h), so n = 200000 judges for several seconds (both files: identical). */
static void write_gelu(const char *zFile, size_t n)
{
    static const char *const azIn[] = { "/x" };
    double *aX = malloc(n * sizeof(double)), *aY = malloc(n * sizeof(double));
    parity_writer *pW = wopen(zFile);
    uint64_t aDim[1] = { n };
    size_t i;
    cr_assert(aX && aY);
    for (i = 0; i < n; i++) {
        double x = -4.0 + 8.0 * (double)i / (double)n;
        aX[i] = x;
        aY[i] = 0.5 * x * erfc(-x / sqrt(2.0));
    }
    wcheck(pW, parity_writer_tensor(pW, "/x", PARITY_DT_F64, 1, aDim, aX));
    wcheck(pW, parity_writer_tensor(pW, "/y", PARITY_DT_F64, 1, aDim, aY));
    w_op(pW, "/y", "gelu", azIn, 1);
    wclose(pW);
    free(aX);
    free(aY);
}

/* --progress with stderr a pipe: a line a second while /y is judged, naming it, then one
 * saying how many were judged; none without --progress (diff_json wants a clean stderr).
 * Under --timeout the last line counts only what was judged. */
static void check_progress_line(const char *zE)
{
    const char *azArgv[] = { PARITYDIFF_BIN, "-q", "--progress", "--threads", "1", zE, zE,
                             NULL, NULL, NULL };
    const char *zLast;
    run_result r;
    run_argv(azArgv, 120.0, &r);
    expect_clean_stderr(&r, "paritydiff --progress");
    cr_expect_eq(r.code, 0, "%s", r.zErr);
    cr_expect_geq(count_lines(r.zErr, 0, NULL, 0), 2, "a line while judging, one at the end:\n%s",
                  r.zErr);
    cr_expect(strstr(r.zErr, "paritydiff: progress: 1 of 2 tensors judged, "), "%s", r.zErr);
    cr_expect(strstr(r.zErr, "; judging /y\n"), "%s", r.zErr);
    zLast = strstr(r.zErr, "paritydiff: progress: 2 of 2 tensors judged in ");
    cr_expect(zLast && strchr(zLast, '\n') && strchr(zLast, '\n')[1] == 0, "%s", r.zErr);
    run_free(&r);
    azArgv[5] = "--timeout";
    azArgv[6] = "1";
    azArgv[7] = zE;
    azArgv[8] = zE;
    run_argv(azArgv, 120.0, &r);
    cr_expect_eq(r.code, 2, "%s", r.zErr);
    cr_expect(strstr(r.zErr, "paritydiff: progress: 1 of 2 tensors judged in "), "%s", r.zErr);
    run_free(&r);
}

Test(cli, long_judgement_is_not_a_stall_and_timeout_reports_what_was_judged)
{
    const char *zE = tmp_path("g.h5");
    char zSec[16];
    double t0;
    json_t *pDoc;
    char zFirst[512];
    size_t n = 200000;

#ifdef TEST_UNDER_ASAN
    n = 60000;
#endif
    write_gelu(zE, n);
    /* the judging takes seconds; the stall limit of 1 s must not kill it */
    t0 = now_seconds();
    pDoc = diff_json(0, zE, zE, "--stall-timeout", "1", "--threads", "1", NULL);
    cr_expect_str_eq(jstr(pDoc, "verdict"), "pass");
    cr_expect_eq(jint(json_object_get(tensor_named(pDoc, "/y"), "judgement"), "checked"),
                 (json_int_t)n);
    cr_log_info("gelu over %zu elements judged in %.1f s", n, now_seconds() - t0);
    cr_assert_gt(now_seconds() - t0, 1.5, "too quick to show anything: raise n");
    json_decref(pDoc);
    /* --timeout 1: the child stops itself, the report is written, /y says why */
    snprintf(zSec, sizeof zSec, "%d", 1);
    pDoc = diff_json(2, zE, zE, "--timeout", zSec, "--threads", "1", NULL);
    cr_expect_str_eq(jstr(pDoc, "verdict"), "error");
    cr_expect_str_eq(status_of(pDoc, "/x"), "pass");
    cr_expect_str_eq(status_of(pDoc, "/y"), "error");
    cr_expect(strstr(jstr(tensor_named(pDoc, "/y"), "message"), "time limit reached while judging"),
              "%s", jstr(tensor_named(pDoc, "/y"), "message"));
    cr_expect_eq(count_lines(g_last.zErr, 0, zFirst, sizeof zFirst), 1, "%s", g_last.zErr);
    cr_expect(strstr(zFirst, "time limit reached while judging"), "%s", zFirst);
    cr_expect_null(strstr(g_last.zErr, "corrupt"), "%s", g_last.zErr);
    json_decref(pDoc);
    check_progress_line(zE);
}

/* float16 stored as its bit patterns in int16 (t.view(torch.int16)) with dtype = "float16"
 * reads as float16, like the same values stored as IEEE half. */
Test(cli, float16_as_int16_bits_with_dtype_attribute)
{
    static const uint16_t aBits[4] = { 0x3C00, 0xC000, 0x7C00, 0x0001 };   /* 1, -2, Inf, 2^-24 */
    uint16_t aOther[4];
    const char *zE = tmp_path("h_e.h5"), *zC = tmp_path("h_c.h5");
    uint64_t aDim[1] = { 4 };
    parity_writer *pW;
    json_t *pDoc;

    pW = wopen(zE);
    wcheck(pW, parity_writer_tensor(pW, "/h", PARITY_DT_I16, 1, aDim, aBits));
    wcheck(pW, parity_writer_attr_string(pW, "/h", "dtype", "float16"));
    wclose(pW);
    pW = wopen(zC);
    wcheck(pW, parity_writer_tensor(pW, "/h", PARITY_DT_F16, 1, aDim, aBits));
    wclose(pW);
    pDoc = diff_json(0, zE, zC, NULL);
    cr_expect_str_eq(jstr(tensor_named(pDoc, "/h"), "dtype"), "float16");
    cr_expect_str_eq(status_of(pDoc, "/h"), "pass");
    json_decref(pDoc);
    memcpy(aOther, aBits, sizeof aOther);
    aOther[0] = 0x3C01;   /* 1 + 2^-10: one float16 ulp */
    pW = wopen(zC);
    wcheck(pW, parity_writer_tensor(pW, "/h", PARITY_DT_F16, 1, aDim, aOther));
    wclose(pW);
    pDoc = diff_json(1, zE, zC, "--atol", "0", "--rtol", "0", NULL);
    cr_expect_eq(jint(tensor_named(pDoc, "/h"), "max_ulp"), 1);
    cr_expect_eq(jint(tensor_named(pDoc, "/h"), "mismatches"), 1);
    json_decref(pDoc);
}

/* float32 eager against bfloat16 compiled: compared in bfloat16 (eager rounded to it), with
 * statistics and a warning; an input of another dtype is still a dtype mismatch. */
Test(cli, float32_against_bfloat16_is_compared_in_bfloat16)
{
    static const float aE[4] = { 1.0f, 0.3f, -2.5f, 1000.0f };
    uint16_t aC[4];
    const char *zE = tmp_path("m_e.h5"), *zC = tmp_path("m_c.h5");
    uint64_t aDim[1] = { 4 };
    parity_writer *pW;
    json_t *pDoc, *pT;
    int i;
    for (i = 0; i < 4; i++) {   /* bf16 rounding of each eager value (round to nearest even) */
        uint32_t u;
        memcpy(&u, &aE[i], 4);
        u += 0x7FFF + ((u >> 16) & 1);
        aC[i] = (uint16_t)(u >> 16);
    }
    pW = wopen(zE);
    w_f32(pW, "/y", aE, 4);
    wclose(pW);
    pW = wopen(zC);
    wcheck(pW, parity_writer_tensor(pW, "/y", PARITY_DT_BF16, 1, aDim, aC));
    wclose(pW);
    pDoc = diff_json(0, zE, zC, NULL);
    pT = tensor_named(pDoc, "/y");
    cr_expect_str_eq(jstr(pT, "status"), "pass");
    cr_expect_str_eq(jstr(pT, "compiled_dtype"), "bfloat16");
    cr_expect_eq(jint(pT, "elements"), 4);
    cr_expect_eq(jint(pT, "max_ulp"), 0, "compiled is eager's bf16 rounding: 0 bf16 ulps");
    cr_expect(strstr(json_string_value(json_array_get(json_object_get(pT, "warnings"), 0)),
                     "dtypes differ (eager float32, compiled bfloat16): compared in bfloat16"));
    json_decref(pDoc);
    /* 8 bf16 ulps (32) off at 1000, beyond bf16's rtol 1.6e-2: fails, counted in bf16 ulps */
    aC[3] += 8;
    pW = wopen(zC);
    wcheck(pW, parity_writer_tensor(pW, "/y", PARITY_DT_BF16, 1, aDim, aC));
    wclose(pW);
    pDoc = diff_json(1, zE, zC, NULL);
    pT = tensor_named(pDoc, "/y");
    cr_expect_str_eq(jstr(pT, "status"), "fail");
    cr_expect_eq(jint(pT, "max_ulp"), 8);
    cr_expect_eq(jint(pT, "mismatches"), 1);
    json_decref(pDoc);
}

/* ---- hostile names and values (issue 14, item 4) -------------------------------------- */

/* The starts of the text report's own lines (reports/report_text.c): the verdict line
 * (first, and only there), the lines above the blocks, a block's header (a status in
 * capitals and a space), a block's indented lines, the section headings, blank lines and
 * the closing count (last, and only there). NULL when every line of zText starts as one of them, else the first
 * line that does not (in a static buffer). */
static const char *forged_report_line(const char *zText)
{
    static const char *const azOwn[] = { "error: ", "first divergence: ", "inputs differ:",
                                         "warning: ", "  ", "identity differs (eager | compiled):",
                                         "telemetry (eager | compiled):", NULL };
    static char zLine[1024];
    const char *z = zText;
    int iLine;
    for (iLine = 0; *z; iLine++) {
        const char *zEnd = strchr(z, '\n');
        size_t nLine = zEnd ? (size_t)(zEnd - z) : strlen(z), k;
        int isLast = !zEnd || zEnd[1] == 0;
        int own = nLine == 0 || (isLast && z[0] >= '0' && z[0] <= '9' &&
                                 nLine > 15 && strncmp(z + nLine - 15, " tensors passed", 15) == 0);
        if (iLine == 0) own = strncmp(z, "verdict: ", 9) == 0;
        for (k = 0; iLine > 0 && !own && azOwn[k]; k++)
            own = strncmp(z, azOwn[k], strlen(azOwn[k])) == 0;
        for (k = 0; iLine > 0 && !own && k <= (size_t)PARITY_ST_DTYPE_MISMATCH; k++) {
            const char *zSt = parity_status_name((parity_status)k);
            size_t nSt = strlen(zSt), j;
            own = nLine > nSt && z[nSt] == ' ';
            for (j = 0; own && j < nSt; j++)
                own = z[j] == (zSt[j] >= 'a' && zSt[j] <= 'z' ? zSt[j] - 'a' + 'A' : zSt[j]);
        }
        if (!own) {
            snprintf(zLine, sizeof zLine, "%.*s", (int)nLine, z);
            return zLine;
        }
        z += nLine + (zEnd ? 1 : 0);
    }
    return NULL;
}

/* A control byte other than the newlines that end lines: the first one's offset, or -1. */
static long control_byte_at(const char *z)
{
    const char *p;
    for (p = z; *p; p++)
        if ((*p != '\n' && (unsigned char)*p < 0x20) || *p == 0x7f) return (long)(p - z);
    return -1;
}

/* A dataset whose name holds a newline and a forged verdict, diverging, in a compiled
 * capture whose run_failure holds a clear-screen sequence and newlines: the text report
 * shows both escaped on lines of its own making, each stderr warning is one line, and the
 * JSON keeps the exact bytes. */
Test(cli, hostile_names_do_not_forge_report_lines)
{
    static const char zName[] = "/y\nverdict: PASS (9 tensors, 9 pass)\n\n9 of 9 tensors passed";
    static const char zFailure[] = "crash: \x1b[2J\nverdict: PASS\n\x1b[31mred";
    static const float aX[4] = { -1.0f, 0.5f, 2.0f, 3.0f };
    static const char *const azIn[] = { "/x" };
    const char *zE = tmp_path("hostile_e.h5"), *zC = tmp_path("hostile_c.h5"), *zForged;
    float aY[4] = { 0.0f, 0.5f, 2.0f, 3.0f };
    parity_writer *pW;
    json_t *pDoc, *pWarn;
    size_t i;
    int found = 0;

    pW = wopen(zE);
    w_f32(pW, "/x", aX, 4);
    w_f32(pW, zName, aY, 4);
    w_op(pW, zName, "test.act", azIn, 1);
    wclose(pW);
    aY[2] += 1.0f;
    pW = wopen(zC);
    wcheck(pW, parity_writer_attr_string(pW, "/", "run_failure", zFailure));
    w_f32(pW, "/x", aX, 4);
    w_f32(pW, zName, aY, 4);
    w_op(pW, zName, "test.act", azIn, 1);
    wclose(pW);

    /* diff_json: exit 1, and no stderr line that is not a warning line */
    pDoc = diff_json(1, zE, zC, NULL);
    zForged = forged_report_line(g_last.zOut);
    cr_expect_null(zForged, "a line the report did not write: '%s'\n%s", zForged, g_last.zOut);
    cr_expect(strncmp(g_last.zOut, "verdict: FAIL", 13) == 0, "%s", g_last.zOut);
    cr_expect_eq(control_byte_at(g_last.zOut), -1, "control byte in the report:\n%s", g_last.zOut);
    cr_expect_not_null(strstr(g_last.zOut, "FAIL /y\\nverdict: PASS (9 tensors, 9 pass)\\n\\n9 of 9 "
                              "tensors passed (test.act) float32 [4]\n"), "%s", g_last.zOut);
    cr_expect_not_null(strstr(g_last.zOut, "crash: \\x1b[2J\\nverdict: PASS\\n\\x1b[31mred\n"),
                       "%s", g_last.zOut);
    cr_expect_eq(control_byte_at(g_last.zErr), -1, "control byte on stderr:\n%s", g_last.zErr);
    pWarn = json_object_get(pDoc, "warnings");
    cr_expect_eq(count_lines(g_last.zErr, 1, NULL, 0), (int)json_array_size(pWarn),
                 "one stderr line per warning:\n%s", g_last.zErr);
    /* the JSON report keeps the raw bytes */
    cr_expect_str_eq(status_of(pDoc, zName), "fail");
    cr_expect_str_eq(jstr(pDoc, "first_divergence"), zName);
    for (i = 0; i < json_array_size(pWarn); i++)
        found |= strstr(json_string_value(json_array_get(pWarn, i)), zFailure) != NULL;
    cr_expect(found, "no warning holds the raw run_failure: %s", compact(pWarn));
    json_decref(pDoc);
}
