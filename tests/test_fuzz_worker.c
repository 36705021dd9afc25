/*
 * test_fuzz_worker.c - the cmd: target: a worker that runs fine, diverges, crashes, hangs,
 * errors, breaks the protocol or never starts (tests/fixtures/fake_worker.py), the
 * protocol's version-2 handshake (the offer, what the worker answers, malformed
 * capabilities) and version-1 workers, and the example PyTorch worker
 * (fuzz/workers/torch_worker.py) where python3-torch is installed; and the isolation of
 * in-process targets (isolate.c) with a fake target that faults, exits, errors or answers.
 *
 * The tests that do not name a protocol run the fake worker in the one its environment
 * says (FAKE_WORKER_PROTOCOL; version 2 when unset): ctest runs this file twice, the second
 * time with FAKE_WORKER_PROTOCOL=1, so every failure-handling test also passes against a
 * version-1 worker.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fuzz/search/search.h"
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

/* Eager wrong and compiled right is no finding (the differential judges the compiled
 * side), but the reference proved eager wrong in every judged case, and the summary says
 * so: a kernel both sides share is what hides there. */
Test(fuzz_worker, a_wrong_eager_side_is_counted_not_found)
{
    run_result r;
    json_t *pDoc = fake_campaign("eagerwrong", "30", 0, &r);
    json_int_t nJudged = json_integer_value(json_object_get(pDoc, "judged"));
    cr_assert_gt(nJudged, 0, "%s", r.zOut);
    cr_assert_eq(json_array_size(json_object_get(pDoc, "findings")), 0);
    cr_assert_eq(json_integer_value(json_object_get(pDoc, "eager_beyond_bound")), nJudged,
                 "%s", r.zOut);
    cr_assert(strstr(r.zOut, "the reference proves eager wrong in "), "%s", r.zOut);
    /* and names the first such case, so that a user knows where to look */
    {
        const char *zFirst =
            json_string_value(json_object_get(pDoc, "eager_beyond_bound_first"));
        char zLine[300];
        cr_assert(zFirst && strncmp(zFirst, "relu ", 5) == 0 && strstr(zFirst, " seed="),
                  "first: %s", zFirst ? zFirst : "(null)");
        snprintf(zLine, sizeof zLine, "(eager_beyond_bound; the first: %s)\n", zFirst);
        cr_assert(strstr(r.zOut, zLine), "%s", r.zOut);
    }
    json_decref(pDoc);
    run_free(&r);
    /* and a correct eager side counts nothing */
    pDoc = fake_campaign("nan", "30", 1, &r);
    cr_assert_eq(json_integer_value(json_object_get(pDoc, "eager_beyond_bound")), 0);
    cr_assert(json_is_null(json_object_get(pDoc, "eager_beyond_bound_first")));
    cr_assert_null(strstr(r.zOut, "proves eager wrong"), "%s", r.zOut);
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
    /* the repro's compiled side has no /out: it says why, and paritydiff fails the pair
     * instead of passing the inputs that are there */
    {
        const char *zRepro = json_string_value(json_object_get(pF, "repro"));
        char zE[4400], zC[4400];
        run_result d;
        cr_assert_not_null(zRepro);
        snprintf(zE, sizeof zE, "%s/eager.h5", zRepro);
        snprintf(zC, sizeof zC, "%s/compiled.h5", zRepro);
        run_paritydiff(&d, zE, zC, NULL);
        cr_assert_eq(d.code, 1, "paritydiff on a crash repro: exit %d\n%s%s", d.code, d.zOut,
                     d.zErr);
        cr_assert(strstr(d.zOut, "compiled: its run failed: crash: ") &&
                  strstr(d.zOut, "signal 11"), "%s", d.zOut);
        /* the output the crash lost is where the pair diverges first */
        cr_assert(strstr(d.zOut, "first divergence: /out"), "%s", d.zOut);
        run_free(&d);
    }
    json_decref(pDoc);
    run_free(&r);
}

/* ---- in-process targets in a forked child (isolate.c) ---------------------------- */

/* A fake in-process target: its compiled side answers x + 1, except on a case whose first
 * input starts with 13 (it faults like oneDNN's AMX kernel: SIGILL, which the sanitizers
 * leave alone), 14 (it exits), 15 (it reports an error), 16 (it never returns). */
static parity_run_status fake_run(parity_target *pT, parity_side side, const parity_case *pC,
                                  double *aOut, char *zErr, size_t nErr)
{
    uint64_t i;
    double first = pC->aIn[0].aValue[0];
    (void)pT;
    if (side == PARITY_SIDE_COMPILED && first == 13.0) raise(SIGILL);
    if (side == PARITY_SIDE_COMPILED && first == 14.0) _exit(7);
    if (side == PARITY_SIDE_COMPILED && first == 16.0) for (;;) pause();
    if (side == PARITY_SIDE_COMPILED && first == 15.0) {
        snprintf(zErr, nErr, "fake: refused");
        return PARITY_RUN_ERROR;
    }
    for (i = 0; i < pC->nOut; i++) aOut[i] = pC->aIn[0].aValue[i] + (side == PARITY_SIDE_COMPILED);
    return PARITY_RUN_OK;
}

static int fake_supports(parity_target *pT, const char *zOp) { (void)pT; (void)zOp; return 1; }
static void fake_close(parity_target *pT) { (void)pT; }

static parity_run_status run_isolated(parity_target *pIso, parity_case *pC, double first,
                                      double *aOut, char *zErr, size_t nErr)
{
    pC->aIn[0].aValue[0] = first;
    return pIso->xRun(pIso, PARITY_SIDE_COMPILED, pC, aOut, zErr, nErr);
}

Test(fuzz_worker, an_isolated_in_process_target_turns_faults_into_crashes)
{
    parity_target fake = { .zName = "fake", .xRun = fake_run, .xSupports = fake_supports,
                           .xClose = fake_close };
    parity_case_spec s;
    parity_case c;
    char zErr[PARITY_ERR_LEN];
    parity_target *pIso;
    double *aOut;
    uint64_t i;

    memset(&s, 0, sizeof s);
    snprintf(s.zOp, sizeof s.zOp, "relu");
    s.dtype = PARITY_DT_F32;
    s.variant = 3;                /* rank 3 */
    s.nDim = 5;
    for (i = 0; i < 5; i++) s.aDim[i] = 24;   /* an output of many pages passes the pipe whole */
    s.seed = 3;
    cr_assert_eq(parity_case_expand(&s, &c, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_gt(c.nOut, 10000);
    aOut = calloc(c.nOut, sizeof *aOut);
    pIso = parity_target_isolate(&fake, 0, 1.0, zErr, sizeof zErr);
    cr_assert_not_null(pIso, "%s", zErr);

    /* an answer comes back bit for bit, NaN and -0 included */
    c.aIn[0].aValue[1] = NAN;
    c.aIn[0].aValue[2] = -1.0;
    cr_assert_eq(run_isolated(pIso, &c, 2.0, aOut, zErr, sizeof zErr), PARITY_RUN_OK, "%s", zErr);
    for (i = 0; i < c.nOut; i++) {
        double want = c.aIn[0].aValue[i] + 1.0;
        cr_assert(aOut[i] == want || (isnan(want) && isnan(aOut[i])), "element %llu",
                  (unsigned long long)i);
    }
    cr_assert(aOut[2] == 0.0 && !signbit(aOut[2]));
    /* a fault is a crash named by its signal, and this process lives on */
    cr_assert_eq(run_isolated(pIso, &c, 13.0, aOut, zErr, sizeof zErr), PARITY_RUN_CRASH);
    cr_assert(strstr(zErr, "died of signal 4 (Illegal instruction)"), "%s", zErr);
    /* an exit without an answer is a crash too */
    cr_assert_eq(run_isolated(pIso, &c, 14.0, aOut, zErr, sizeof zErr), PARITY_RUN_CRASH);
    cr_assert(strstr(zErr, "without a result (exit 7)"), "%s", zErr);
    /* a run that never returns is killed at the timeout: a hang, not a wait forever */
    {
        struct timespec t0, t1;
        double secs;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        cr_assert_eq(run_isolated(pIso, &c, 16.0, aOut, zErr, sizeof zErr), PARITY_RUN_HANG);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
        cr_assert(strstr(zErr, "did not finish within 1 s"), "%s", zErr);
        cr_assert(secs >= 0.9 && secs < 5.0, "killed after %.2f s", secs);
    }
    /* and the next run works: nothing of the killed child is left in the way */
    cr_assert_eq(run_isolated(pIso, &c, 2.0, aOut, zErr, sizeof zErr), PARITY_RUN_OK, "%s", zErr);
    /* an error passes through with its message */
    cr_assert_eq(run_isolated(pIso, &c, 15.0, aOut, zErr, sizeof zErr), PARITY_RUN_ERROR);
    cr_assert_str_eq(zErr, "fake: refused");
    /* the eager side runs here, unchanged */
    cr_assert_eq(pIso->xRun(pIso, PARITY_SIDE_EAGER, &c, aOut, zErr, sizeof zErr), PARITY_RUN_OK);
    cr_assert_eq(aOut[0], 15.0);
    parity_target_close(pIso);
    free(aOut);
    parity_case_free(&c);
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

/* ---- the handshake: version 2's offer and answer, version 1 -------------------------- */

/* "cmd:env FAKE_WORKER_PROTOCOL=<n> <zEnv> python3 fake_worker.py" */
static const char *fake_target_env(int protocol, const char *zEnv, char *zBuf, size_t nBuf)
{
    snprintf(zBuf, nBuf, "cmd:env FAKE_WORKER_PROTOCOL=%d %s %s %s/fixtures/fake_worker.py",
             protocol, zEnv, SYSTEM_PYTHON, TEST_SOURCE_DIR);
    return zBuf;
}

/* The lines of the worker's log (FAKE_WORKER_LOG) that start with zPrefix. */
static int log_lines(const char *zLog, const char *zPrefix, char *zFirst, size_t nFirst)
{
    size_t nBytes;
    char *z = (char *)read_bytes(zLog, &nBytes), *zLine, *zSave = NULL;
    int n = 0;
    for (zLine = strtok_r(z, "\n", &zSave); zLine; zLine = strtok_r(NULL, "\n", &zSave)) {
        if (strncmp(zLine, zPrefix, strlen(zPrefix)) != 0) continue;
        if (n++ == 0 && zFirst) snprintf(zFirst, nFirst, "%s", zLine);
    }
    free(z);
    return n;
}

/* 1 when the comma-separated value of key zKey in zLine names z. */
static int line_lists(const char *zLine, const char *zKey, const char *z)
{
    char zNeedle[128];
    const char *zList = strstr(zLine, zKey);
    size_t nList;
    if (!zList) return 0;
    zList += strlen(zKey);
    nList = strcspn(zList, " ");
    snprintf(zNeedle, sizeof zNeedle, ",%s,", z);
    {
        char zPadded[4200];
        snprintf(zPadded, sizeof zPadded, ",%.*s,", (int)nList, zList);
        return strstr(zPadded, zNeedle) != NULL;
    }
}

Test(fuzz_worker, the_v2_offer_is_the_registry_and_only_what_the_worker_answers_is_sent)
{
    char zTarget[8192], zEnv[4200], zOffer[4096], zJson[4200];
    const parity_layout_info *aInfo;
    size_t n, i;
    run_result r;
    json_t *pDoc, *pOps;
    const char *zLog = tmp_path("v2.log");

    snprintf(zEnv, sizeof zEnv, "FAKE_WORKER_LOG=%s", zLog);
    snprintf(zJson, sizeof zJson, "%s", tmp_path("v2.json"));
    /* no --ops: every op the target runs, which is what the worker answered */
    run_parityfuzz(&r, "--target", fake_target_env(2, zEnv, zTarget, sizeof zTarget),
                   "--max-execs", "30", "--json", zJson, NULL);
    cr_assert_eq(r.code, 0, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    cr_assert(strstr(r.zErr, " matmul (fake worker: relu only)"), "%s", r.zErr);
    /* the worker got one offer: every registry op with a layout, every drawable dtype */
    cr_assert_eq(log_lines(zLog, "OFFER ", zOffer, sizeof zOffer), 1);
    aInfo = parity_layout_all(&n);
    cr_assert_gt(n, 30);
    for (i = 0; i < n; i++)
        cr_assert(line_lists(zOffer, "ops=", aInfo[i].zOp), "%s not offered: %s", aInfo[i].zOp, zOffer);
    cr_assert(!line_lists(zOffer, "ops=", "frobnicate"));
    for (i = 0; i < PARITY_DT_COUNT; i++)
        cr_assert_eq(line_lists(zOffer, "dtypes=", parity_dtype_name((parity_dtype)i)),
                     parity_spec_dtype_drawable((parity_dtype)i), "%s: %s",
                     parity_dtype_name((parity_dtype)i), zOffer);
    /* what it did not answer is never sent */
    cr_assert_eq(log_lines(zLog, "RUN ", NULL, 0), log_lines(zLog, "RUN relu ", NULL, 0));
    cr_assert_gt(log_lines(zLog, "RUN relu ", NULL, 0), 0);
    pDoc = load_json_file(zJson);
    pOps = json_object_get(pDoc, "cases_per_op");
    cr_assert_eq(json_object_size(pOps), 1);
    cr_assert_eq(json_integer_value(json_object_get(pOps, "relu")), 30);
    json_decref(pDoc);
    run_free(&r);
    /* and cannot be asked for */
    run_parityfuzz(&r, "--target", fake_target_env(2, "", zTarget, sizeof zTarget), "--ops",
                   "relu,matmul", "--max-execs", "3", NULL);
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.zErr, "does not run 'matmul'"), "%s", r.zErr);
    run_free(&r);
}

Test(fuzz_worker, a_v2_worker_answers_its_dtypes_and_list_ops_says_them)
{
    char zTarget[4096], zJson[4200];
    run_result r;
    json_t *pDoc;
    run_parityfuzz(&r, "--list-ops", "--target",
                   fake_target_env(2, "FAKE_WORKER_CAPS=dtypes=float32,float128", zTarget,
                                   sizeof zTarget), NULL);
    cr_assert_eq(r.code, 0, "exit %d\n%s", r.code, r.zErr);
    cr_assert_str_eq(r.zOut, "relu float32 unary\n");
    run_free(&r);
    /* the campaign draws float32 only, so the worker skips no case */
    snprintf(zJson, sizeof zJson, "%s", tmp_path("dtypes.json"));
    run_parityfuzz(&r, "--target", zTarget, "--max-execs", "20", "--json", zJson, NULL);
    cr_assert_eq(r.code, 0, "exit %d\n%s", r.code, r.zErr);
    pDoc = load_json_file(zJson);
    cr_assert_eq(json_integer_value(json_object_get(pDoc, "skipped")), 0);
    cr_assert_eq(json_integer_value(json_object_get(pDoc, "execs")), 20);
    json_decref(pDoc);
    run_free(&r);
}

Test(fuzz_worker, a_version_1_worker_gets_no_offer_and_still_works)
{
    char zTarget[8192], zEnv[4200], zJson[4200];
    const char *zLog = tmp_path("v1.log");
    run_result r;
    json_t *pDoc;
    snprintf(zEnv, sizeof zEnv, "FAKE_WORKER_LOG=%s", zLog);
    snprintf(zJson, sizeof zJson, "%s", tmp_path("v1.json"));
    run_parityfuzz(&r, "--target", fake_target_env(1, zEnv, zTarget, sizeof zTarget), "--ops",
                   "relu", "--max-execs", "25", "--json", zJson, NULL);
    cr_assert_eq(r.code, 0, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    cr_assert(strstr(r.zErr, "worker fake-ok skips 1 op: matmul (fake worker: relu only)"), "%s",
              r.zErr);
    pDoc = load_json_file(zJson);
    cr_assert_eq(json_integer_value(json_object_get(pDoc, "execs")), 25);
    cr_assert(json_array_size(json_object_get(pDoc, "findings")) == 0,
              "an offer sent to a version-1 worker would have made its answers ERRORs");
    json_decref(pDoc);
    cr_assert_eq(log_lines(zLog, "OFFER", NULL, 0), 0);
    cr_assert_gt(log_lines(zLog, "RUN relu ", NULL, 0), 0);
    run_free(&r);
    /* what it SKIPs is not run, what it does not is (version 1 has no answer) */
    run_parityfuzz(&r, "--list-ops", "--target", zTarget, NULL);
    cr_assert_eq(r.code, 0);
    cr_assert(strstr(r.zOut, "relu float64,float32,float16,bfloat16 unary\n") == r.zOut, "%s", r.zOut);
    cr_assert(strstr(r.zOut, "\nmatmul ") == NULL, "%s", r.zOut);
    cr_assert(strstr(r.zOut, "\nsoftmax "), "%s", r.zOut);
    run_free(&r);
}

Test(fuzz_worker, an_answered_op_that_was_not_offered_is_ignored)
{
    char zTarget[4096];
    run_result r;
    run_parityfuzz(&r, "--list-ops", "--target",
                   fake_target_env(2, "FAKE_WORKER_CAPS=ops=relu,frobnicate,future_op", zTarget,
                                   sizeof zTarget), NULL);
    cr_assert_eq(r.code, 0, "exit %d\n%s", r.code, r.zErr);
    cr_assert_str_eq(r.zOut, "relu float64,float32,float16,bfloat16 unary\n");
    cr_assert(strstr(r.zErr, "frobnicate") == NULL, "%s", r.zErr);
    run_free(&r);
    run_parityfuzz(&r, "--target", zTarget, "--max-execs", "10", NULL);
    cr_assert_eq(r.code, 0, "exit %d\n%s", r.code, r.zErr);
    run_free(&r);
}

Test(fuzz_worker, malformed_capability_lines_are_one_clear_error)
{
    static const struct { const char *zMode, *zWant; } aCase[] = {
        { "badhello", "malformed HELLO line: 'HELLO two'" },
        { "badcaps", "malformed capability 'float32' (want key=value)" },
        { "emptyitem", "empty item in 'ops'" },
        { "refuse", "worker refused the offer: this worker refuses every offer" },
    };
    size_t i;
    for (i = 0; i < sizeof aCase / sizeof aCase[0]; i++) {
        char zTarget[4096], zEnv[128];
        run_result r;
        snprintf(zEnv, sizeof zEnv, "FAKE_WORKER_MODE=%s", aCase[i].zMode);
        run_parityfuzz(&r, "--target", fake_target_env(2, zEnv, zTarget, sizeof zTarget),
                       "--max-execs", "5", NULL);
        cr_assert_eq(r.code, 2, "%s: exit %d\n%s", aCase[i].zMode, r.code, r.zErr);
        cr_assert(strstr(r.zErr, aCase[i].zWant), "%s: %s", aCase[i].zMode, r.zErr);
        cr_assert_eq(count_lines(r.zErr, 0, NULL, 0), 1, "%s: %s", aCase[i].zMode, r.zErr);
        cr_assert_lt(r.seconds, 30.0, "%s: %.1f s", aCase[i].zMode, r.seconds);
        run_free(&r);
    }
}

/* ---- eager=builtin and compile_s ------------------------------------------------------ */

Test(fuzz_worker, an_eager_builtin_worker_runs_compiled_sides_only)
{
    char zTarget[8192], zEnv[4200], zJson[4200];
    const char *zLog = tmp_path("builtin.log");
    run_result r;
    json_t *pDoc;
    snprintf(zEnv, sizeof zEnv, "FAKE_WORKER_LOG=%s FAKE_WORKER_CAPS='eager=builtin dtypes=float32'",
             zLog);
    snprintf(zJson, sizeof zJson, "%s", tmp_path("builtin.json"));
    run_parityfuzz(&r, "--target", fake_target_env(2, zEnv, zTarget, sizeof zTarget),
                   "--max-execs", "20", "--json", zJson, NULL);
    cr_assert_eq(r.code, 0, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    pDoc = load_json_file(zJson);
    cr_assert_eq(json_integer_value(json_object_get(pDoc, "execs")), 20);
    cr_assert_eq(json_integer_value(json_object_get(pDoc, "skipped")), 0);
    cr_assert_eq(json_integer_value(json_object_get(pDoc, "judged")) +
                 json_integer_value(json_object_get(pDoc, "bit_identical")), 20);
    json_decref(pDoc);
    /* the worker saw every compiled side and no eager one */
    cr_assert_eq(log_lines(zLog, "RUN relu compiled", NULL, 0), 20);
    cr_assert_eq(log_lines(zLog, "RUN relu eager", NULL, 0), 0);
    run_free(&r);
    /* a compiled side that returns NaN is judged against the builtin eager relu */
    run_parityfuzz(&r, "--target",
                   fake_target_env(2, "FAKE_WORKER_MODE=nan FAKE_WORKER_CAPS=eager=builtin", zTarget,
                                   sizeof zTarget), "--max-execs", "20", "--json", zJson, NULL);
    cr_assert_eq(r.code, 1, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    pDoc = load_json_file(zJson);
    cr_assert_str_eq(first_class(pDoc), "diverges");
    json_decref(pDoc);
    run_free(&r);
    /* an eager side parityfuzz does not have is one clear error */
    run_parityfuzz(&r, "--target",
                   fake_target_env(2, "FAKE_WORKER_CAPS=eager=jit", zTarget, sizeof zTarget),
                   "--max-execs", "5", NULL);
    cr_assert_eq(r.code, 2, "exit %d\n%s", r.code, r.zErr);
    cr_assert(strstr(r.zErr, "worker asked for eager=jit (parityfuzz knows eager=builtin)"), "%s",
              r.zErr);
    cr_assert_eq(count_lines(r.zErr, 0, NULL, 0), 1, "%s", r.zErr);
    run_free(&r);
}

Test(fuzz_worker, compile_seconds_a_worker_reports_are_summed_and_shown)
{
    char zTarget[8192], zJson[4200];
    run_result r;
    json_t *pDoc, *pTime;
    snprintf(zJson, sizeof zJson, "%s", tmp_path("compile.json"));
    run_parityfuzz(&r, "--target",
                   fake_target_env(2, "FAKE_WORKER_COMPILE_S=0.25 FAKE_WORKER_CAPS=dtypes=float32",
                                   zTarget, sizeof zTarget),
                   "--max-execs", "10", "--json", zJson, NULL);
    cr_assert_eq(r.code, 0, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    pDoc = load_json_file(zJson);
    pTime = json_object_get(pDoc, "time");
    cr_assert_float_eq(json_real_value(json_object_get(pTime, "compiled_compile_s")), 2.5, 1e-9);
    cr_assert_float_eq(json_real_value(json_object_get(pTime, "eager_compile_s")), 0.0, 1e-12);
    cr_assert_eq(json_integer_value(json_object_get(pTime, "compiles")), 10);
    cr_assert_eq(json_integer_value(json_object_get(pTime, "compiled_runs")), 10);
    cr_assert_eq(json_integer_value(json_object_get(pTime, "eager_runs")), 10);
    /* the wall time measured around each request covers what the worker says it spent */
    cr_assert_gt(json_real_value(json_object_get(pTime, "compiled_s")), 0.0);
    cr_assert(strstr(r.zOut, "(compiling 2.5 s in 10 runs, "), "%s", r.zOut);
    json_decref(pDoc);
    run_free(&r);
    /* a malformed compile_s is the worker breaking the protocol: an error of the case */
    run_parityfuzz(&r, "--target",
                   fake_target_env(2, "FAKE_WORKER_COMPILE_S=soon FAKE_WORKER_CAPS=dtypes=float32",
                                   zTarget, sizeof zTarget),
                   "--max-execs", "3", "--json", zJson, NULL);
    cr_assert_eq(r.code, 1, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    pDoc = load_json_file(zJson);
    cr_assert_str_eq(first_class(pDoc), "error");
    cr_assert(strstr(json_string_value(json_object_get(json_array_get(json_object_get(pDoc, "findings"), 0),
                                                       "detail")), "compile_s=soon"));
    json_decref(pDoc);
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
    if (getenv("FAKE_WORKER_PROTOCOL") && strcmp(getenv("FAKE_WORKER_PROTOCOL"), "1") == 0)
        cr_skip_test("the version-1 run is the fake worker's (the PyTorch worker speaks 2)");
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
