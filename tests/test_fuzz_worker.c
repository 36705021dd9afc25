/*
 * test_fuzz_worker.c - the cmd: target: a worker that runs fine, diverges, crashes, hangs,
 * errors, breaks the protocol or never starts (tests/fixtures/fake_worker.py), and the
 * example PyTorch worker (fuzz/workers/torch_worker.py) where python3-torch is installed.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

static void make_dir(void)
{
    support_dir_create(TEST_BINARY_DIR, "fuzzworker-");
}

TestSuite(fuzz_worker, .init = make_dir, .fini = support_dir_remove, .timeout = 900);

/* "cmd:env FAKE_WORKER_MODE=<mode> python3 fake_worker.py" */
static const char *fake_target(const char *zMode, char *zBuf, size_t nBuf)
{
    snprintf(zBuf, nBuf, "cmd:env FAKE_WORKER_MODE=%s %s %s/fixtures/fake_worker.py", zMode,
             SYSTEM_PYTHON, TEST_SOURCE_DIR);
    return zBuf;
}

/* Runs a relu campaign on the fake worker in zMode; returns the summary. */
static json_t *fake_campaign(const char *zMode, const char *zExecs, int wantCode, run_result *pR)
{
    char zTarget[4096], zJson[4096], zOut[4096];
    snprintf(zJson, sizeof zJson, "%s", tmp_path(zMode));
    strcat(zJson, ".json");
    snprintf(zOut, sizeof zOut, "%s", tmp_path(zMode));
    run_parityfuzz(pR, "--target", fake_target(zMode, zTarget, sizeof zTarget), "--ops", "relu",
                   "--max-execs", zExecs, "--case-timeout", "1", "--out", zOut, "--json", zJson,
                   NULL);
    cr_assert_eq(pR->code, wantCode, "mode %s: exit %d\n%s%s", zMode, pR->code, pR->zOut, pR->zErr);
    return load_json_file(zJson);
}

static const char *first_class(json_t *pDoc)
{
    json_t *pF = json_array_get(json_object_get(pDoc, "findings"), 0);
    cr_assert_not_null(pF, "no finding");
    return json_string_value(json_object_get(pF, "class"));
}

Test(fuzz_worker, a_correct_worker_yields_nothing_and_its_skips_are_said)
{
    run_result r;
    json_t *pDoc = fake_campaign("ok", "40", 0, &r);
    cr_assert_eq(json_integer_value(json_object_get(pDoc, "execs")), 40);
    cr_assert(strstr(r.zErr, "skips 38 ops: relu") == NULL && strstr(r.zErr, " matmul (fake worker: relu only)"), "%s", r.zErr);
    cr_assert_gt(json_integer_value(json_object_get(json_object_get(pDoc, "cases_per_op"), "relu")), 0);
    json_decref(pDoc);
    run_free(&r);
}

Test(fuzz_worker, a_diverging_worker_is_found_and_its_repro_diffs)
{
    run_result r, d;
    json_t *pDoc = fake_campaign("nan", "30", 1, &r), *pF;
    char zE[4200], zC[4200];
    cr_assert_str_eq(first_class(pDoc), "diverges");
    pF = json_array_get(json_object_get(pDoc, "findings"), 0);
    snprintf(zE, sizeof zE, "%s/eager.h5", json_string_value(json_object_get(pF, "repro")));
    snprintf(zC, sizeof zC, "%s/compiled.h5", json_string_value(json_object_get(pF, "repro")));
    run_paritydiff(&d, zE, zC, NULL);
    cr_assert_eq(d.code, 1, "%s%s", d.zOut, d.zErr);
    cr_assert(strstr(d.zOut, "first divergence: /out"), "%s", d.zOut);
    run_free(&d);
    json_decref(pDoc);
    run_free(&r);
}

Test(fuzz_worker, crashes_are_recorded_and_the_worker_restarted)
{
    run_result r;
    json_t *pDoc = fake_campaign("crash", "12", 1, &r), *pF;
    cr_assert_str_eq(first_class(pDoc), "crash");
    pF = json_array_get(json_object_get(pDoc, "findings"), 0);
    cr_assert(strstr(json_string_value(json_object_get(pF, "detail")), "signal 11"), "%s",
              json_string_value(json_object_get(pF, "detail")));
    /* every case ran: the worker came back after each crash */
    cr_assert_eq(json_integer_value(json_object_get(pDoc, "execs")), 12);
    json_decref(pDoc);
    run_free(&r);
}

Test(fuzz_worker, hangs_are_killed_and_recorded)
{
    run_result r;
    json_t *pDoc = fake_campaign("hang", "12", 1, &r);
    cr_assert_str_eq(first_class(pDoc), "hang");
    cr_assert_lt(r.seconds, 120.0, "hangs must cost about --case-timeout each");
    json_decref(pDoc);
    run_free(&r);
}

Test(fuzz_worker, errors_and_protocol_breaks_are_errors)
{
    run_result r;
    json_t *pDoc = fake_campaign("error", "6", 1, &r);
    cr_assert_str_eq(first_class(pDoc), "error");
    json_decref(pDoc);
    run_free(&r);
    pDoc = fake_campaign("garbage", "6", 1, &r);
    cr_assert_str_eq(first_class(pDoc), "error");
    cr_assert(strstr(json_string_value(json_object_get(json_array_get(json_object_get(pDoc, "findings"), 0), "detail")),
                     "protocol"));
    json_decref(pDoc);
    run_free(&r);
}

Test(fuzz_worker, a_worker_that_never_starts_is_trouble)
{
    char zTarget[4096];
    run_result r;
    run_parityfuzz(&r, "--target", fake_target("noready", zTarget, sizeof zTarget), "--max-execs",
                   "5", NULL);
    cr_assert_eq(r.code, 2, "%s", r.zErr);
    cr_assert(strstr(r.zErr, "READY"), "%s", r.zErr);
    cr_assert_eq(count_lines(r.zErr, 0, NULL, 0), 1, "%s", r.zErr);
    run_free(&r);
}

/* ---- the PyTorch worker ------------------------------------------------------------------ */

static int have_torch(void)
{
    const char *azArgv[] = { SYSTEM_PYTHON, "-c", "import torch", NULL };
    run_result r;
    int ok;
    run_argv(azArgv, 120.0, &r);
    ok = r.code == 0;
    run_free(&r);
    return ok;
}

Test(fuzz_worker, torch_worker_runs_a_campaign)
{
    char zTarget[4096], zJson[4096];
    run_result r;
    json_t *pDoc, *pOps;
    if (!have_torch()) {
        cr_log_warn("python3-torch is not installed: the PyTorch worker is not exercised");
        cr_skip_test("no torch");
    }
    snprintf(zTarget, sizeof zTarget, "cmd:%s %s/../fuzz/workers/torch_worker.py", SYSTEM_PYTHON,
             TEST_SOURCE_DIR);
    snprintf(zJson, sizeof zJson, "%s", tmp_path("torch.json"));
    run_parityfuzz(&r, "--target", zTarget, "--ops", "matmul,linear,softmax,sum,layer_norm,gelu",
                   "--max-execs", "60", "--seed", "4", "--out", tmp_path("torch"), "--json", zJson,
                   NULL);
    cr_assert_lt(r.code, 2, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    cr_assert(strstr(r.zErr, " scaled_dot_product_attention ("), "%s", r.zErr);
    pDoc = load_json_file(zJson);
    cr_assert_eq(json_integer_value(json_object_get(pDoc, "execs")), 60);
    pOps = json_object_get(pDoc, "cases_per_op");
    cr_assert_gt(json_integer_value(json_object_get(pOps, "matmul")), 0);
    cr_assert_lt(json_integer_value(json_object_get(pDoc, "skipped")), 60, "every case skipped");
    cr_log_info("torch worker: %lld execs, %lld bit-identical, %zu findings",
                (long long)json_integer_value(json_object_get(pDoc, "execs")),
                (long long)json_integer_value(json_object_get(pDoc, "bit_identical")),
                json_array_size(json_object_get(pDoc, "findings")));
    json_decref(pDoc);
    run_free(&r);

    /* its crash hook: a real worker dying is a crash finding */
    snprintf(zTarget, sizeof zTarget, "cmd:env PARITY_WORKER_CRASH_ON=softmax %s %s/../fuzz/workers/torch_worker.py",
             SYSTEM_PYTHON, TEST_SOURCE_DIR);
    run_parityfuzz(&r, "--target", zTarget, "--ops", "softmax", "--max-execs", "4",
                   "--no-minimize", "--json", zJson, NULL);
    cr_assert_eq(r.code, 1, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    pDoc = load_json_file(zJson);
    cr_assert_str_eq(first_class(pDoc), "crash");
    json_decref(pDoc);
    run_free(&r);
}
