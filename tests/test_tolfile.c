/*
 * test_tolfile.c - the tolerance file (tolerance/tolfile.c): parsing, every error, the
 * resolution order, and its effect end to end through paritydiff --tolerance.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "support.h"
#include "tolerance/tolfile.h"

static void setup(void) { support_dir_create(TEST_BINARY_DIR, "tolfile-"); }

TestSuite(tolfile, .init = setup, .fini = support_dir_remove);

static const char *write_text(const char *zName, const char *zText)
{
    const char *zPath = tmp_path(zName);
    write_bytes(zPath, zText, strlen(zText));
    return zPath;
}

static parity_tolfile *load_ok(const char *zText)
{
    char zErr[512];
    parity_tolfile *pFile = NULL;
    int rc = parity_tolfile_load(write_text("t.yaml", zText), &pFile, zErr, sizeof zErr);
    cr_assert_eq(rc, 0, "load failed: %s", zErr);
    return pFile;
}

static void load_fails(const char *zText, const char *zExpect)
{
    char zErr[512] = "";
    parity_tolfile *pFile = NULL;
    int rc = parity_tolfile_load(write_text("bad.yaml", zText), &pFile, zErr, sizeof zErr);
    cr_assert_eq(rc, -1, "accepted: %s", zText);
    cr_assert_null(pFile);
    cr_assert(strstr(zErr, zExpect), "message '%s' lacks '%s'", zErr, zExpect);
    cr_assert_null(strchr(zErr, '\n'), "one line");
}

Test(tolfile, resolution_order)
{
    parity_tolfile *pFile = load_ok(
        "parity_tolerance: 1\n"
        "defaults: {scale: 2, nan_policy: reference}\n"
        "ops:\n  softmax: {nan_policy: lenient, extra_ulps: 3}\n  exp: {model: off}\n"
        "tensors:\n  /a/b: {scale: 5}\n  c: {acc_dtype: bfloat16}\n");
    parity_tol_override ov;

    parity_tolfile_resolve(pFile, "relu", "/x", &ov);
    cr_assert(ov.hasScale && ov.scale == 2.0);
    cr_assert(ov.hasNanPolicy && !ov.nanLenient);
    cr_assert(!ov.hasExtraUlps && !ov.hasModel && !ov.hasAccDtype);

    parity_tolfile_resolve(pFile, "softmax", "/a/b", &ov);
    cr_assert_eq(ov.scale, 5.0, "the tensor beats the defaults");
    cr_assert(ov.nanLenient, "the op beats the defaults");
    cr_assert_eq(ov.extraUlps, 3.0);

    parity_tolfile_resolve(pFile, "exp", "/c", &ov);
    cr_assert(ov.hasModel && !ov.useModel);
    cr_assert(ov.hasAccDtype && ov.accDtype == PARITY_DT_BF16, "'c' names '/c'");

    parity_tolfile_resolve(NULL, "exp", "/c", &ov);
    cr_assert(!ov.hasScale && !ov.hasModel, "no file: nothing set");
    parity_tolfile_free(pFile);
}

Test(tolfile, every_error_is_one_clear_line)
{
    char zErr[512];
    parity_tolfile *pFile = NULL;
    cr_assert_eq(parity_tolfile_load(tmp_path("missing.yaml"), &pFile, zErr, sizeof zErr), -1);
    cr_assert(strstr(zErr, "No such file"));
    load_fails("", "empty");
    load_fails("defaults: {scale: 1}\n", "missing 'parity_tolerance: 1'");
    load_fails("parity_tolerance: 2\n", "version 1");
    load_fails("parity_tolerance: 1\nfoo: 1\n", "unknown top-level key 'foo'");
    load_fails("parity_tolerance: 1\ndefaults: {scael: 2}\n", "unknown setting 'scael'");
    load_fails("parity_tolerance: 1\ndefaults: {scale: -1}\n", "defaults.scale");
    load_fails("parity_tolerance: 1\ndefaults: {scale: lots}\n", "defaults.scale");
    load_fails("parity_tolerance: 1\nops: {exp: {extra_ulps: nan}}\n", "ops.exp.extra_ulps");
    load_fails("parity_tolerance: 1\nops: {linear: {acc_dtype: int8}}\n", "not a float dtype");
    load_fails("parity_tolerance: 1\nops: {linear: {acc_dtype: float13}}\n", "float13");
    load_fails("parity_tolerance: 1\nops: {softmax: {nan_policy: maybe}}\n", "nan_policy");
    load_fails("parity_tolerance: 1\ntensors: {/x: {model: sometimes}}\n", "model");
    load_fails("parity_tolerance: 1\nops: [exp, log]\n", "ops: expected a mapping");
    load_fails("parity_tolerance: 1\nops: {exp: 3}\n", "ops.exp: expected a mapping");
    load_fails("parity_tolerance: 1\ndefaults: {scale: [1, 2]}\n", "expected a single value");
    load_fails("parity_tolerance: 1\ndefaults: {scale: 1\n", "line");
    load_fails("- 1\n- 2\n", "mapping at the top");
    /* a setting no op uses is a mistake: an unknown op, compute_dtype off a dot product */
    load_fails("parity_tolerance: 1\nops: {gelux: {scale: 2}}\n", "ops.gelux: no such op");
    load_fails("parity_tolerance: 1\nops: {gelu: {compute_dtype: bfloat16}}\n",
               "ops.gelu.compute_dtype: gelu does not use compute_dtype");
}

Test(tolfile, aten_op_names_and_compute_dtype)
{
    parity_tolfile *pFile = load_ok(
        "parity_tolerance: 1\n"
        "ops:\n  conv2d: {compute_dtype: bfloat16}\n  aten.linear.default: {scale: 3}\n"
        "tensors:\n  /act: {compute_dtype: bfloat16}\n");
    parity_tol_override ov;
    /* an ops key covers every spelling of its op */
    parity_tolfile_resolve(pFile, "aten::linear", "/fc", &ov);
    cr_assert(ov.hasScale && ov.scale == 3.0);
    parity_tolfile_resolve(pFile, "linear", "/fc", &ov);
    cr_assert(ov.hasScale && ov.scale == 3.0);
    parity_tolfile_resolve(pFile, "conv2d", "/c", &ov);
    cr_assert(ov.hasComputeDtype && ov.uOperand == 0x1p-8);
    cr_assert(parity_tolfile_tensor_sets_compute(pFile, "/act"));
    cr_assert(parity_tolfile_tensor_sets_compute(pFile, "act") == 0, "paths start with /");
    cr_assert(!parity_tolfile_tensor_sets_compute(pFile, "/fc"));
    parity_tolfile_free(pFile);
}

/* ---- end to end -------------------------------------------------------------------- */

/* A softmax over [3, 4] whose row 1 is fully masked (-inf): eager NaN there, compiled 0. */
static void write_masked_softmax(const char *zEager, const char *zCompiled)
{
    const uint64_t aDim[2] = { 3, 4 };
    float x[12], ye[12], yc[12];
    const char *azIn[] = { "/x" };
    int side, r, c;
    for (r = 0; r < 3; r++)
        for (c = 0; c < 4; c++) x[r * 4 + c] = r == 1 ? -INFINITY : (float)(c - r) * 0.5f;
    for (r = 0; r < 3; r++) {
        float m = x[r * 4], s = 0.0f;
        for (c = 1; c < 4; c++) m = fmaxf(m, x[r * 4 + c]);
        for (c = 0; c < 4; c++) s += expf(x[r * 4 + c] - m);
        for (c = 0; c < 4; c++) {
            ye[r * 4 + c] = expf(x[r * 4 + c] - m) / s;   /* NaN in the masked row */
            yc[r * 4 + c] = r == 1 ? 0.0f : ye[r * 4 + c];
        }
    }
    for (side = 0; side < 2; side++) {
        parity_writer *pW = wopen(side ? zCompiled : zEager);
        w_tensor(pW, "/x", PARITY_DT_F32, 2, aDim, x);
        w_tensor(pW, "/y", PARITY_DT_F32, 2, aDim, side ? yc : ye);
        w_op(pW, "/y", "softmax", azIn, 1);
        wcheck(pW, parity_writer_attr_int(pW, "/y", "dim", -1));
        wclose(pW);
    }
}

Test(tolfile, nan_policy_and_model_switch_end_to_end)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5");
    const char *zLenient = write_text("lenient.yaml",
        "parity_tolerance: 1\nops:\n  softmax: {nan_policy: lenient}\n");
    const char *zOff = write_text("off.yaml", "parity_tolerance: 1\ntensors:\n  /y: {model: off}\n");
    const char *zBad = write_text("bad.yaml", "parity_tolerance: 1\nops: {softmax: {nan_polcy: x}}\n");
    run_result res;
    json_t *pDoc, *pT;

    write_masked_softmax(zE, zC);
    run_paritydiff(&res, "--json", "-", zE, zC, NULL);
    cr_assert_eq(res.code, 1, "the reference decides by default: zeros where NaN fail");
    run_free(&res);

    run_paritydiff(&res, "--json", "-", "--tolerance", zLenient, zE, zC, NULL);
    cr_assert_eq(res.code, 0, "lenient: %s", res.zErr);
    pDoc = parse_json(res.zOut);
    pT = json_array_get(json_object_get(pDoc, "tensors"), 1);
    cr_assert_str_eq(json_string_value(json_object_get(pT, "name")), "/y");
    cr_assert(json_is_object(json_object_get(pT, "judgement")), "still judged by the model");
    json_decref(pDoc);
    run_free(&res);

    /* model off: the per-dtype tolerance sees NaN vs 0: still a failure, without a model */
    run_paritydiff(&res, "--json", "-", "--tolerance", zOff, zE, zC, NULL);
    cr_assert_eq(res.code, 1);
    pDoc = parse_json(res.zOut);
    pT = json_array_get(json_object_get(pDoc, "tensors"), 1);
    cr_assert(json_is_null(json_object_get(pT, "judgement")));
    cr_assert(strstr(json_string_value(json_object_get(pT, "model_note")), "tolerance file"));
    json_decref(pDoc);
    run_free(&res);

    run_paritydiff(&res, "--tolerance", zBad, zE, zC, NULL);
    cr_assert_eq(res.code, 2);
    cr_assert_eq(count_lines(res.zErr, 0, NULL, 0), 1, "one line: %s", res.zErr);
    cr_assert(strstr(res.zErr, "nan_polcy"));
    run_free(&res);
}

/* A small-K matmul whose last column is off by 4e-6 (the model fails it); scale 100 or
 * extra_ulps widen the bound enough to pass it, and acc_dtype bfloat16 as well. */
Test(tolfile, scale_extra_ulps_and_acc_dtype_end_to_end)
{
    const char *zE = tmp_path("me.h5"), *zC = tmp_path("mc.h5");
    const uint64_t aA[2] = { 2, 4 }, aB[2] = { 4, 3 }, aY[2] = { 2, 3 };
    float a[8] = { 1, 0.5f, 0.25f, 2, -1, 1.5f, 0.75f, 0.125f };
    float b[12] = { 1, 2, 0.5f, -1, 0.25f, 1, 2, 1, 0.5f, 0.125f, -2, 1 };
    float y[6], yc[6];
    const char *azIn[] = { "/a", "/b" };
    const char *zScale = write_text("s.yaml", "parity_tolerance: 1\nops: {matmul: {scale: 100}}\n");
    const char *zUlps = write_text("u.yaml", "parity_tolerance: 1\ntensors: {/y: {extra_ulps: 64}}\n");
    const char *zAcc = write_text("a.yaml", "parity_tolerance: 1\ndefaults: {acc_dtype: bfloat16}\n");
    const char *azFile[] = { zScale, zUlps, zAcc };
    int i, j, k, side;
    run_result res;

    for (i = 0; i < 2; i++)
        for (j = 0; j < 3; j++) {
            float s = 0.0f;
            for (k = 0; k < 4; k++) s += a[i * 4 + k] * b[k * 3 + j];
            y[i * 3 + j] = s;
            yc[i * 3 + j] = j == 2 ? s + 4e-6f : s;
        }
    for (side = 0; side < 2; side++) {
        parity_writer *pW = wopen(side ? zC : zE);
        w_tensor(pW, "/a", PARITY_DT_F32, 2, aA, a);
        w_tensor(pW, "/b", PARITY_DT_F32, 2, aB, b);
        w_tensor(pW, "/y", PARITY_DT_F32, 2, aY, side ? yc : y);
        w_op(pW, "/y", "matmul", azIn, 2);
        wclose(pW);
    }
    run_paritydiff(&res, zE, zC, NULL);
    cr_assert_eq(res.code, 1, "4e-6 on values of a few units is beyond gamma_4 u sum|ab|");
    run_free(&res);
    for (i = 0; i < 3; i++) {
        run_paritydiff(&res, "--tolerance", azFile[i], zE, zC, NULL);
        cr_assert_eq(res.code, 0, "file %d widens the bound: %s%s", i, res.zOut, res.zErr);
        run_free(&res);
    }
}

/* A [2, 4096] @ [4096, 2] matmul of values in [0, 1) (sums ~1024): the deterministic bound
 * is gamma_4096(2^-24) * 1024 ~ 0.25, the probabilistic one (lambda 8) about 8 * 64 * 2^-24
 * * 1024 ~ 0.03. A compiled error of 0.1 lies between: suspicious but passing by default,
 * failing with "bound: probabilistic", passing again with a lambda large enough. */
Test(tolfile, probabilistic_bound_marks_then_decides)
{
    enum { M = 2, K = 4096, N = 2 };
    const char *zE = tmp_path("pe.h5"), *zC = tmp_path("pc.h5");
    const uint64_t aA[2] = { M, K }, aB[2] = { K, N }, aY[2] = { M, N };
    static float a[M * K], b[K * N];
    float y[M * N], yc[M * N];
    const char *azIn[] = { "/a", "/b" };
    const char *zProb = write_text("p.yaml", "parity_tolerance: 1\nops: {matmul: {bound: probabilistic}}\n");
    const char *zLam = write_text("l.yaml",
        "parity_tolerance: 1\nops: {matmul: {bound: probabilistic, lambda: 40}}\n");
    uint64_t state = 99;
    int i, j, k, side;
    run_result res;
    json_t *pDoc, *pJ;

    for (i = 0; i < M * K; i++) a[i] = (float)((double)(splitmix64(&state) >> 11) * 0x1p-53);
    for (i = 0; i < K * N; i++) b[i] = (float)((double)(splitmix64(&state) >> 11) * 0x1p-53);
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            double s = 0.0;   /* near-exact: binary64 accumulation */
            for (k = 0; k < K; k++) s += (double)a[i * K + k] * b[k * N + j];
            y[i * N + j] = (float)s;
            yc[i * N + j] = (float)(s + (i == 1 && j == 1 ? 0.1 : 0.0));
        }
    for (side = 0; side < 2; side++) {
        parity_writer *pW = wopen(side ? zC : zE);
        w_tensor(pW, "/a", PARITY_DT_F32, 2, aA, a);
        w_tensor(pW, "/b", PARITY_DT_F32, 2, aB, b);
        w_tensor(pW, "/y", PARITY_DT_F32, 2, aY, side ? yc : y);
        w_op(pW, "/y", "matmul", azIn, 2);
        wclose(pW);
    }
    run_paritydiff(&res, "--json", "-", zE, zC, NULL);
    cr_assert_eq(res.code, 0, "the deterministic bound decides by default: %s", res.zErr);
    pDoc = parse_json(res.zOut);
    pJ = json_object_get(json_array_get(json_object_get(pDoc, "tensors"), 2), "judgement");
    cr_assert(json_is_true(json_object_get(pJ, "suspicious")), "marked suspicious");
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(pJ, "classes"), "suspicious")), 1);
    cr_assert_str_eq(json_string_value(json_object_get(pJ, "bound")), "deterministic");
    cr_assert_float_eq(json_real_value(json_object_get(pJ, "lambda")), 8.0, 0.0);
    json_decref(pDoc);
    run_free(&res);

    run_paritydiff(&res, "--tolerance", zProb, zE, zC, NULL);
    cr_assert_eq(res.code, 1, "the probabilistic bound fails it: %s", res.zOut);
    run_free(&res);
    run_paritydiff(&res, "--tolerance", zLam, zE, zC, NULL);
    cr_assert_eq(res.code, 0, "lambda 40 widens it past 0.1: %s", res.zOut);
    run_free(&res);
}
