/*
 * test_faults.c - out of memory as an ordinary error path, proved the SQLite way
 * (src/test_malloc.c): an allocation countdown (formats/alloc.h) fails the Nth allocation
 * of the library's own calls and of jansson's (through its hooks), swept over every N a
 * run reaches, in a transient mode (only the Nth fails) and a persistent one (the Nth and
 * every one after it).
 *
 * For every N the run must end with a clear error (one naming "memory"), or with exactly
 * the result of the run without faults: never a crash, a hang, a different verdict, a leak
 * (LeakSanitizer checks each test's process under ASan), or a half-written file. Swept:
 *   - paritydiff's engine on a small capture pair judged by op models (linear, softmax,
 *     sum), and the JSON report written from its result;
 *   - one short parityfuzz campaign on the builtin target with a defect, repros stored;
 *   - one repro write, one repro replay, and parityfuzz's JSON summary of a campaign
 *     with findings.
 * libhdf5, GMP and MPFR allocate on their own and are out of scope.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/alloc.h"
#include "formats/capture.h"
#include "diff/diff.h"
#include "reports/report.h"
#include "reports/report_fuzz.h"
#include "fuzz/findings/findings.h"
#include "support.h"

static void suite_init(void) { support_dir_create("/tmp", "parity-faults-"); }
static void suite_fini(void) { parity_alloc_fail_at(0, 0); support_dir_remove(); }
TestSuite(faults, .init = suite_init, .fini = suite_fini, .timeout = 600);

/* ---- helpers ------------------------------------------------------------------------- */

/* 1 when z names the cause the sweep injects. */
static int says_memory(const char *z)
{
    return z && strstr(z, "memory") != NULL;
}

/* 1 when the result carries an error that says memory ran out (its verdict must be
 * error then). */
static int result_says_memory(const parity_diff_result *pRes)
{
    size_t i;
    for (i = 0; i < pRes->nWarning; i++)
        if (says_memory(pRes->azWarning[i])) return pRes->verdict == PARITY_VERDICT_ERROR;
    for (i = 0; i < pRes->nTensor; i++)
        if (says_memory(pRes->aTensor[i].zMessage)) return pRes->verdict == PARITY_VERDICT_ERROR;
    return 0;
}

/* Entries of a folder other than . and ..; names of temporary ones (".tmp" in them) are
 * counted in *pnTemp. */
static int count_entries(const char *zDir, int *pnTemp)
{
    DIR *pD = opendir(zDir);
    struct dirent *pE;
    int n = 0;
    *pnTemp = 0;
    if (!pD) return 0;
    while ((pE = readdir(pD)) != NULL) {
        if (strcmp(pE->d_name, ".") == 0 || strcmp(pE->d_name, "..") == 0) continue;
        n++;
        if (strstr(pE->d_name, ".tmp")) (*pnTemp)++;
    }
    closedir(pD);
    return n;
}

static void remove_tree(const char *zPath)
{
    char zCmd[1200];
    snprintf(zCmd, sizeof zCmd, "rm -rf '%s'", zPath);
    cr_assert_eq(system(zCmd), 0);
}

/* ---- paritydiff's engine and the JSON report ------------------------------------------ */

/* eager and compiled captures of y = linear(x, w, b) [4, 6], p = softmax(y) and
 * s = sum(p, dim 1), and r, whose inputs name a missing tensor; the compiled side sums in another order (last bits differ), and its
 * p has one element off by far more than the bound, so the verdict is fail and every model
 * runs. */
static void write_pair(const char *zEager, const char *zCompiled)
{
    static const char *const azLin[] = { "/x", "/w", "/b" }, *const azSm[] = { "/y" },
                      *const azSum[] = { "/p" }, *const azMissing[] = { "/gone" };
    uint64_t aX[2] = { 4, 8 }, aW[2] = { 6, 8 }, aB[1] = { 6 }, aY[2] = { 4, 6 }, aS[1] = { 4 };
    float x[32], w[48], b[6], y[24], p[24], s[4];
    uint64_t seed = 3;
    int side, i, j, k;
    for (i = 0; i < 32; i++) x[i] = (float)((double)(splitmix64(&seed) >> 40) * 0x1p-23 - 1.0);
    for (i = 0; i < 48; i++) w[i] = (float)((double)(splitmix64(&seed) >> 40) * 0x1p-23 - 1.0);
    for (i = 0; i < 6; i++) b[i] = 0.25f * (float)i;
    for (side = 0; side < 2; side++) {
        parity_writer *pW = wopen(side ? zCompiled : zEager);
        for (i = 0; i < 4; i++) {
            float m = -INFINITY, t = 0.0f;
            for (j = 0; j < 6; j++) {
                float acc = b[j];
                if (side) for (k = 7; k >= 0; k--) acc += x[i * 8 + k] * w[j * 8 + k];
                else for (k = 0; k < 8; k++) acc += x[i * 8 + k] * w[j * 8 + k];
                y[i * 6 + j] = acc;
                if (acc > m) m = acc;
            }
            for (j = 0; j < 6; j++) t += p[i * 6 + j] = expf(y[i * 6 + j] - m);
            s[i] = 0.0f;
            for (j = 0; j < 6; j++) s[i] += p[i * 6 + j] /= t;
        }
        if (side) p[13] += 0.25f;            /* a compiled softmax element far off */
        w_tensor(pW, "/x", PARITY_DT_F32, 2, aX, x);
        w_tensor(pW, "/w", PARITY_DT_F32, 2, aW, w);
        w_tensor(pW, "/b", PARITY_DT_F32, 1, aB, b);
        w_tensor(pW, "/y", PARITY_DT_F32, 2, aY, y);
        w_op(pW, "/y", "linear", azLin, 3);
        w_order(pW, "/y", 1);
        w_tensor(pW, "/p", PARITY_DT_F32, 2, aY, p);
        w_op(pW, "/p", "softmax", azSm, 1);
        w_order(pW, "/p", 2);
        wcheck(pW, parity_writer_attr_int(pW, "/p", "dim", 1));
        w_tensor(pW, "/s", PARITY_DT_F32, 1, aS, s);
        w_op(pW, "/s", "sum", azSum, 1);
        w_order(pW, "/s", 3);
        wcheck(pW, parity_writer_attr_int(pW, "/s", "dim", 1));
        /* a relu whose inputs name a tensor the capture lacks: the ordering warns, and
         * that warning must survive or the run fail */
        w_tensor(pW, "/r", PARITY_DT_F32, 1, aS, s);
        w_op(pW, "/r", "relu", azMissing, 1);
        wclose(pW);
    }
}

/* One engine run and its JSON report, with whatever fault is armed. Returns 0 when both
 * succeeded (the report is in zJson), 1 when either failed with an error saying memory,
 * and fails the test otherwise. */
static int diff_once(const char *zEager, const char *zCompiled, const char *zJson, long n)
{
    parity_diff_options opt;
    parity_diff_result res;
    char zErr[PARITY_ERR_LEN] = "";
    int rc, nTemp;

    parity_diff_options_init(&opt);
    opt.nThreads = 1;
    rc = parity_diff_run(&opt, zEager, zCompiled, &res, zErr, sizeof zErr);
    if (rc != 0) {
        cr_assert(says_memory(zErr), "fault at %ld: the engine failed with \"%s\"", n, zErr);
        return 1;
    }
    if (result_says_memory(&res)) {
        parity_diff_result_free(&res);
        return 1;
    }
    unlink(zJson);
    rc = parity_report_json(&res, zJson, zErr, sizeof zErr);
    parity_diff_result_free(&res);
    count_entries(support_dir(), &nTemp);
    cr_assert_eq(nTemp, 0, "fault at %ld: a temporary file was left behind", n);
    if (rc != 0) {
        cr_assert(says_memory(zErr), "fault at %ld: the report failed with \"%s\"", n, zErr);
        cr_assert_neq(access(zJson, F_OK), 0, "fault at %ld: a failed report left %s", n, zJson);
        return 1;
    }
    return 0;
}

static void sweep_diff(int persist)
{
    const char *zE = tmp_path("e.h5"), *zC = tmp_path("c.h5"), *zJson = tmp_path("r.json");
    unsigned char *aBase, *aNow;
    size_t nBase, nNow;
    long nAlloc, n, nError = 0;

    write_pair(zE, zC);
    parity_alloc_fail_at(0, 0);
    cr_assert_eq(diff_once(zE, zC, zJson, 0), 0, "the run without faults must succeed");
    nAlloc = parity_alloc_count();
    cr_assert_gt(nAlloc, 100, "the engine allocates through parity_malloc (%ld)", nAlloc);
    aBase = read_bytes(zJson, &nBase);
    cr_assert(strstr((char *)aBase, "\"verdict\": \"fail\""), "%s", aBase);
    cr_assert(strstr((char *)aBase, "which is not in the capture"), "the ordering warning: %s",
              aBase);
    /* n = nAlloc + 1 arms a fault the run never reaches: it must succeed untouched, which
     * proves the count covers every allocation of the run */
    for (n = 1; n <= nAlloc + 1; n++) {
        long nFailed;
        parity_alloc_fail_at(n, persist);
        if (diff_once(zE, zC, zJson, n) != 0) {
            cr_assert_gt(parity_alloc_failures(), 0, "an error at %ld without a fault", n);
            cr_assert_leq(n, nAlloc, "an error with the fault past the last allocation");
            nError++;
            continue;
        }
        nFailed = parity_alloc_failures();
        parity_alloc_fail_at(0, 0);
        if (n <= nAlloc) {
            cr_assert(!persist, "fault at %ld: a persistent fault cannot be absorbed", n);
            cr_assert_eq(nFailed, 1, "fault at %ld: the run succeeded, so its one fault must "
                         "have fired and been absorbed (%ld failures)", n, nFailed);
        } else {
            cr_assert_eq(nFailed, 0, "no fault past the last allocation (%ld failed)", nFailed);
        }
        aNow = read_bytes(zJson, &nNow);
        /* a run that absorbed the fault must give the very same report */
        cr_assert(nNow == nBase && memcmp(aNow, aBase, nBase) == 0,
                  "fault at %ld (%s): the report differs from the run without faults", n,
                  persist ? "persistent" : "transient");
        free(aNow);
    }
    parity_alloc_fail_at(0, 0);
    free(aBase);
    cr_log_info("diff sweep (%s): %ld allocations, %ld runs ended in an error",
                persist ? "persistent" : "transient", nAlloc, nError);
    /* A persistent fault fails every allocation after it: no run can absorb all of them.
     * A transient one may be absorbed where a retry allocates again (report_string
     * re-encodes a string jansson could not copy). */
    if (persist) cr_assert_eq(nError, nAlloc, "every persistent fault must surface");
    else cr_assert_gt(nError, nAlloc / 2, "most faults must surface as errors");
}

Test(faults, diff_engine_and_json_report_transient) { sweep_diff(0); }
Test(faults, diff_engine_and_json_report_persistent) { sweep_diff(1); }

/* ---- a parityfuzz campaign and a repro write -------------------------------------------- */

/* Every entry of zOut is a whole repro: its three files. */
static void expect_whole_repros(const char *zOut, long n)
{
    DIR *pD = opendir(zOut);
    struct dirent *pE;
    if (!pD) return;
    while ((pE = readdir(pD)) != NULL) {
        char zPath[1100];
        static const char *const azFile[] = { "eager.h5", "compiled.h5", "signature" };
        size_t i;
        if (pE->d_name[0] == '.') continue;
        cr_assert_null(strstr(pE->d_name, ".tmp"), "fault at %ld: %s left behind", n,
                       pE->d_name);
        for (i = 0; i < 3; i++) {
            snprintf(zPath, sizeof zPath, "%s/%s/%s", zOut, pE->d_name, azFile[i]);
            cr_assert_eq(access(zPath, F_OK), 0, "fault at %ld: %s missing", n, zPath);
        }
    }
    closedir(pD);
}

static int campaign_once(const char *zOut, long n, parity_campaign_result *pRes)
{
    parity_campaign_options opt;
    char zErr[PARITY_ERR_LEN] = "";
    const char *azOps[] = { "relu", "sum" };
    int rc;
    parity_campaign_options_init(&opt);
    opt.defects = PARITY_DEFECT_FASTMATH_NAN | PARITY_DEFECT_SPLIT_REDUCTION_TAIL;
    opt.azOps = azOps;
    opt.nOps = 2;
    opt.seed = 1;
    opt.maxExecs = 12;
    opt.minimize = 0;
    opt.zOutDir = zOut;
    rc = parity_campaign_run(&opt, pRes, zErr, sizeof zErr);
    if (rc != 0) {
        cr_assert(says_memory(zErr), "fault at %ld: the campaign failed with \"%s\"", n, zErr);
        return 1;
    }
    if (pRes->trouble) {
        cr_assert(says_memory(pRes->zTrouble), "fault at %ld: trouble \"%s\"", n, pRes->zTrouble);
        parity_campaign_result_free(pRes);
        return 1;
    }
    return 0;
}

static void sweep_campaign(int persist)
{
    char zOut[1100];
    parity_campaign_result base, res;
    long nAlloc, n, nError = 0;
    size_t i;
    int rc;

    snprintf(zOut, sizeof zOut, "%s", tmp_path("repros"));
    parity_alloc_fail_at(0, 0);
    cr_assert_eq(campaign_once(zOut, 0, &base), 0);
    nAlloc = parity_alloc_count();
    cr_assert_gt(base.nFinding, 0, "the defects must give findings to store");
    cr_assert_gt(nAlloc, 100);
    /* A campaign stops on the first allocation that fails (it cannot tell which case it
     * would have lost), so every N up to nAlloc must end in an error that says memory,
     * with only whole repros stored; nAlloc + 1 is never reached and must give the run
     * without faults, case for case. */
    for (n = 1; n <= nAlloc + 1; n++) {
        long nFailed;
        remove_tree(zOut);
        parity_alloc_fail_at(n, persist);
        rc = campaign_once(zOut, n, &res);
        nFailed = parity_alloc_failures();
        parity_alloc_fail_at(0, 0);
        expect_whole_repros(zOut, n);
        if (n <= nAlloc) {
            cr_assert_eq(rc, 1, "fault at %ld of %ld: the campaign absorbed it", n, nAlloc);
            cr_assert_gt(nFailed, 0, "fault at %ld: an error without a fault", n);
            if (rc == 1) nError++;
            continue;
        }
        cr_assert_eq(rc, 0, "no fault reached: the campaign must succeed");
        cr_assert_eq(nFailed, 0);
        cr_assert_eq(res.nExecs, base.nExecs, "fault at %ld", n);
        cr_assert_eq(res.nRawFindings, base.nRawFindings, "fault at %ld", n);
        cr_assert_eq(res.nFinding, base.nFinding, "fault at %ld: %zu findings, not %zu", n,
                     res.nFinding, base.nFinding);
        for (i = 0; i < res.nFinding; i++)
            cr_assert_str_eq(res.aFinding[i].zSignature, base.aFinding[i].zSignature,
                             "fault at %ld", n);
        parity_campaign_result_free(&res);
    }
    parity_campaign_result_free(&base);
    cr_log_info("campaign sweep (%s): %ld allocations, %ld runs ended in an error",
                persist ? "persistent" : "transient", nAlloc, nError);
    cr_assert_eq(nError, nAlloc);
}

Test(faults, campaign_step_transient) { sweep_campaign(0); }
Test(faults, campaign_step_persistent) { sweep_campaign(1); }

/* parityfuzz's JSON summary from a campaign result with findings: every fault ends in an
 * error saying memory and no file, or in a summary that lists every finding, defect and
 * op (a dropped entry would read as a whole summary). */
Test(faults, fuzz_json_summary)
{
    char zOut[1100], zErr[PARITY_ERR_LEN];
    const char *zJson = tmp_path("summary.json");
    parity_campaign_result res;
    long nAlloc, n, nError = 0;

    snprintf(zOut, sizeof zOut, "%s", tmp_path("summary-repros"));
    parity_alloc_fail_at(0, 0);
    cr_assert_eq(campaign_once(zOut, 0, &res), 0);
    cr_assert_gt(res.nFinding, 0);
    parity_alloc_fail_at(0, 0);
    cr_assert_eq(parity_report_fuzz_json(&res, zJson, zErr, sizeof zErr), 0, "%s", zErr);
    nAlloc = parity_alloc_count();
    cr_assert_gt(nAlloc, 10, "jansson allocates through the library's allocator (%ld)", nAlloc);
    for (n = 1; n <= nAlloc + 1; n++) {
        int rc, nTemp;
        unlink(zJson);
        parity_alloc_fail_at(n, 0);
        rc = parity_report_fuzz_json(&res, zJson, zErr, sizeof zErr);
        parity_alloc_fail_at(0, 0);
        count_entries(support_dir(), &nTemp);
        cr_assert_eq(nTemp, 0, "fault at %ld: a temporary file was left behind", n);
        if (rc != 0) {
            cr_assert(says_memory(zErr), "fault at %ld: \"%s\"", n, zErr);
            cr_assert_neq(access(zJson, F_OK), 0, "fault at %ld: a failed summary left a file", n);
            nError++;
        } else {
            json_t *pDoc = json_load_file(zJson, 0, NULL);
            cr_assert_not_null(pDoc, "fault at %ld: the summary is not JSON", n);
            cr_assert_eq(json_array_size(json_object_get(pDoc, "findings")), res.nFinding,
                         "fault at %ld: a finding went missing", n);
            cr_assert_eq(json_array_size(json_object_get(pDoc, "defects")), res.nDefect,
                         "fault at %ld", n);
            cr_assert_eq(json_object_size(json_object_get(pDoc, "cases_per_op")), res.nOp,
                         "fault at %ld", n);
            json_decref(pDoc);
        }
    }
    parity_campaign_result_free(&res);
    cr_log_info("fuzz summary sweep: %ld allocations, %ld ended in an error", nAlloc, nError);
    cr_assert_gt(nError, nAlloc / 2);
}

/* A stored repro replayed on the target with its defects: every fault ends in an error
 * saying memory, or in "same"; never "changed" or "fixed" (a kernel that ran out of our
 * memory is no finding of the target's, and the replay gate must not read it as one). */
static void sweep_replay(int persist)
{
    char zOut[1100], zErr[PARITY_ERR_LEN];
    parity_campaign_result res;
    parity_replay_result rep;
    parity_target *pT;
    char **azRepro;
    long nRepro, nAlloc, n, nError = 0;

    snprintf(zOut, sizeof zOut, "%s", tmp_path(persist ? "replay-p" : "replay-t"));
    parity_alloc_fail_at(0, 0);
    cr_assert_eq(campaign_once(zOut, 0, &res), 0);
    parity_campaign_result_free(&res);
    nRepro = parity_replay_list(zOut, &azRepro, zErr, sizeof zErr);
    cr_assert_gt(nRepro, 0, "%s", zErr);
    pT = parity_target_open("builtin", PARITY_DEFECT_FASTMATH_NAN |
                            PARITY_DEFECT_SPLIT_REDUCTION_TAIL, 0, zErr, sizeof zErr);
    cr_assert_not_null(pT, "%s", zErr);
    parity_alloc_fail_at(0, 0);
    parity_replay_one(pT, azRepro[0], &rep);
    cr_assert_eq(rep.outcome, PARITY_REPLAY_SAME, "%s: %s", azRepro[0], rep.zDetail);
    nAlloc = parity_alloc_count();
    cr_assert_gt(nAlloc, 0);
    for (n = 1; n <= nAlloc + 1; n++) {
        parity_alloc_fail_at(n, persist);
        parity_replay_one(pT, azRepro[0], &rep);
        parity_alloc_fail_at(0, 0);
        if (rep.outcome == PARITY_REPLAY_ERROR) {
            cr_assert(says_memory(rep.zDetail), "fault at %ld: \"%s\"", n, rep.zDetail);
            nError++;
        } else {
            cr_assert_eq(rep.outcome, PARITY_REPLAY_SAME, "fault at %ld: outcome %d (%s)", n,
                         (int)rep.outcome, rep.zDetail);
        }
    }
    parity_target_close(pT);
    parity_replay_list_free(azRepro, nRepro);
    cr_log_info("replay sweep (%s): %ld allocations, %ld ended in an error",
                persist ? "persistent" : "transient", nAlloc, nError);
    cr_assert_gt(nError, 0);
}

Test(faults, replay_transient) { sweep_replay(0); }
Test(faults, replay_persistent) { sweep_replay(1); }

Test(faults, repro_write)
{
    uint64_t aDim[5] = { 3, 1, 4, 5, 6 };
    parity_case_spec s;
    parity_case c;
    parity_oracle_result r;
    char zErr[PARITY_ERR_LEN], zPath[1200], zOut[1100];
    double aE[64], aC[64];
    long nAlloc, n, nError = 0;
    int rc, k;

    memset(&s, 0, sizeof s);
    snprintf(s.zOp, sizeof s.zOp, "relu");
    s.variant = 2;
    s.dtype = PARITY_DT_F32;
    s.nDim = 5;
    memcpy(s.aDim, aDim, sizeof aDim);
    s.seed = 9;
    cr_assert_eq(parity_case_expand(&s, &c, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_leq(c.nOut, 64);
    for (k = 0; k < (int)c.nOut; k++) aE[k] = aC[k] = c.aIn[0].aValue[k] > 0 ? c.aIn[0].aValue[k] : 0;
    aC[0] = NAN;
    memset(&r, 0, sizeof r);
    r.cls = PARITY_FINDING_DIVERGES;
    snprintf(r.zDetail, sizeof r.zDetail, "a NaN where relu gives a number");
    snprintf(zOut, sizeof zOut, "%s", tmp_path("one"));
    parity_alloc_fail_at(0, 0);
    rc = parity_repro_write(zOut, &c, aE, aC, &r, "relu float32 diverges/nonfinite", "builtin",
                            0, NULL, zPath, sizeof zPath, zErr, sizeof zErr);
    cr_assert_eq(rc, 0, "%s", zErr);
    nAlloc = parity_alloc_count();
    for (n = 1; n <= nAlloc + 1; n++) {
        remove_tree(zOut);
        parity_alloc_fail_at(n, 1);
        rc = parity_repro_write(zOut, &c, aE, aC, &r, "relu float32 diverges/nonfinite",
                                "builtin", 0, NULL, zPath, sizeof zPath, zErr, sizeof zErr);
        parity_alloc_fail_at(0, 0);
        if (rc != 0) {
            int nTemp, nEntries = count_entries(zOut, &nTemp);
            cr_assert(says_memory(zErr), "fault at %ld: \"%s\"", n, zErr);
            cr_assert_eq(nEntries, 0, "fault at %ld: a failed write left %d entries", n,
                         nEntries);
            nError++;
        } else {
            expect_whole_repros(zOut, n);
        }
    }
    parity_case_free(&c);
    cr_assert_eq(nError, nAlloc, "every one of the %ld allocations is needed", nAlloc);
}
