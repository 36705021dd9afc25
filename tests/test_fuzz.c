/*
 * test_fuzz.c - parityfuzz end to end: campaigns against the builtin target find each
 * defect, minimize it (every dim 1-minimal) and store a repro that paritydiff fails at
 * /out; the clean target finds nothing; replay is a regression gate both ways; the same
 * seed gives the same campaign (with and without --jobs); bad input is one line on stderr
 * and exit 2.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz/findings/findings.h"
#include "support.h"

static void make_dir(void)
{
    support_dir_create(TEST_BINARY_DIR, "fuzz-");
}

TestSuite(fuzz, .init = make_dir, .fini = support_dir_remove, .timeout = 900);

/* The ops each defect touches, from the catalogue ("sum,mean"). */
static const char *defect_ops(const char *zDefect)
{
    const parity_defect *pD = parity_defect_find(zDefect);
    cr_assert_not_null(pD, "%s", zDefect);
    return pD->zOps;
}

static int one_line(const run_result *pR)
{
    return count_lines(pR->zErr, 0, NULL, 0) == 1;
}

/* Every used dim of the repro's case is 1-minimal: one smaller (same recipe and seed) does
 * not reproduce the stored finding on the same target. */
static void assert_one_minimal(const char *zRepro, uint32_t defects)
{
    char zFile[4200], zErr[PARITY_ERR_LEN];
    parity_case stored;
    parity_target *pT = parity_target_open("builtin", defects, 0, zErr, sizeof zErr);
    parity_oracle_result want, r;
    double *aE, *aC;
    int d, nChecked = 0;
    cr_assert_not_null(pT);
    snprintf(zFile, sizeof zFile, "%s/eager.h5", zRepro);
    cr_assert_eq(parity_case_read(zFile, &stored, zErr, sizeof zErr), 0, "%s", zErr);
    /* the finding, as the stored values give it */
    aE = malloc((stored.nOut + 1) * sizeof *aE);
    aC = malloc((stored.nOut + 1) * sizeof *aC);
    cr_assert_eq(parity_oracle_run(pT, &stored, aE, aC, &want), 0);
    cr_assert_eq(want.cls, PARITY_FINDING_DIVERGES, "%s no longer diverges", zRepro);
    free(aE);
    free(aC);
    for (d = 0; d < stored.spec.nDim; d++) {
        parity_case_spec smaller = stored.spec;
        parity_case c;
        if (!((stored.usedDims >> d) & 1) || stored.spec.aDim[d] <= 1) continue;
        smaller.aDim[d]--;
        if (parity_case_expand(&smaller, &c, zErr, sizeof zErr) != 0) continue;  /* illegal */
        aE = malloc((c.nOut + 1) * sizeof *aE);
        aC = malloc((c.nOut + 1) * sizeof *aC);
        cr_assert_not(parity_reproduces(pT, &c, &want, aE, aC, &r),
                      "%s: dim %d = %llu still reproduces at %llu", zRepro, d,
                      (unsigned long long)stored.spec.aDim[d], (unsigned long long)smaller.aDim[d]);
        nChecked++;
        free(aE);
        free(aC);
        parity_case_free(&c);
    }
    cr_log_info("%s: %d dims checked 1-minimal", zRepro, nChecked);
    parity_case_free(&stored);
    parity_target_close(pT);
}

/* ---- the clean target ---------------------------------------------------------------- */

Test(fuzz, clean_target_finds_nothing)
{
    run_result r;
    json_t *pDoc;
    const char *zJson = tmp_path("clean.json");
    run_parityfuzz(&r, "--max-execs", "1500", "--seed", "9", "--out", tmp_path("clean"),
                   "--json", zJson, NULL);
    cr_assert_eq(r.code, 0, "clean run: exit %d\n%s%s", r.code, r.zOut, r.zErr);
    pDoc = load_json_file(zJson);
    cr_assert_eq(json_integer_value(json_object_get(pDoc, "execs")), 1500);
    cr_assert_eq(json_array_size(json_object_get(pDoc, "findings")), 0);
    cr_assert(json_is_null(json_object_get(pDoc, "first_finding_s")));
    cr_assert_gt(json_object_size(json_object_get(pDoc, "cases_per_op")), 30,
                 "every op gets cases");
    cr_assert_lt(json_integer_value(json_object_get(pDoc, "bit_identical")), 1500,
                 "compiled must not equal eager everywhere");
    json_decref(pDoc);
    run_free(&r);
}

/* ---- each defect: found, minimized, diffable, replayable ------------------------------- */

/* Runs the signature file's line that starts with zKey ("look:" or "replay:") through
 * /bin/sh as a user pasting it would, with the built tools first on PATH. */
static void run_pasted_line(run_result *pRes, const char *zRepro, const char *zKey)
{
    char zFile[4200], zLine[8192], zScript[9000], zDir[4096];
    const char *azArgv[4];
    FILE *f;
    int found = 0;
    snprintf(zFile, sizeof zFile, "%s/signature", zRepro);
    f = fopen(zFile, "r");
    cr_assert_not_null(f, "%s: no signature file", zRepro);
    while (fgets(zLine, sizeof zLine, f))
        if (strncmp(zLine, zKey, strlen(zKey)) == 0) { found = 1; break; }
    fclose(f);
    cr_assert(found, "%s: no '%s' line", zFile, zKey);
    snprintf(zDir, sizeof zDir, "%s", PARITYFUZZ_BIN);
    *strrchr(zDir, '/') = 0;
    snprintf(zScript, sizeof zScript, "PATH='%s':\"$PATH\"; %s", zDir, zLine + strlen(zKey));
    azArgv[0] = "/bin/sh";
    azArgv[1] = "-c";
    azArgv[2] = zScript;
    azArgv[3] = NULL;
    run_argv(azArgv, 120.0, pRes);
}

Test(fuzz, every_defect_is_found_minimized_stored_and_replayed)
{
    size_t i;
    for (i = 0; i < parity_defect_count; i++) {
        const char *zDefect = parity_defects[i].zName;
        char zOut[4096], zJson[4200];
        run_result r;
        json_t *pDoc, *pFindings;
        size_t k;
        snprintf(zOut, sizeof zOut, "%s", tmp_path(zDefect));
        snprintf(zJson, sizeof zJson, "%s.json", zOut);
        run_parityfuzz(&r, "--defect", zDefect, "--ops", defect_ops(zDefect), "--max-execs",
                       "3000", "--stop-after-first", "--seed", "1", "--out", zOut, "--json",
                       zJson, NULL);
        cr_assert_eq(r.code, 1, "%s: exit %d (want 1: findings)\n%s%s", zDefect, r.code, r.zOut, r.zErr);
        pDoc = load_json_file(zJson);
        pFindings = json_object_get(pDoc, "findings");
        cr_assert_geq(json_array_size(pFindings), 1, "%s not found", zDefect);
        cr_log_info("%s: found after %.2f s, %lld execs", zDefect,
                    json_real_value(json_object_get(pDoc, "first_finding_s")),
                    (long long)json_integer_value(json_object_get(pDoc, "execs")));
        for (k = 0; k < json_array_size(pFindings); k++) {
            json_t *pF = json_array_get(pFindings, k);
            const char *zRepro = json_string_value(json_object_get(pF, "repro"));
            const char *zOp = json_string_value(json_object_get(pF, "op"));
            char zE[4200], zC[4200];
            run_result d;
            cr_assert_str_eq(json_string_value(json_object_get(pF, "class")), "diverges");
            cr_assert(strstr(defect_ops(zDefect), zOp), "%s found on %s", zDefect, zOp);
            cr_assert_not_null(zRepro);
            cr_assert(json_is_true(json_object_get(pF, "minimal")), "%s: not minimized", zRepro);
            /* paritydiff fails the pair at /out */
            snprintf(zE, sizeof zE, "%s/eager.h5", zRepro);
            snprintf(zC, sizeof zC, "%s/compiled.h5", zRepro);
            run_paritydiff(&d, zE, zC, NULL);
            cr_assert_eq(d.code, 1, "paritydiff on %s: exit %d\n%s%s", zRepro, d.code, d.zOut, d.zErr);
            cr_assert(strstr(d.zOut, "first divergence: /out"), "%s", d.zOut);
            run_free(&d);
            /* the signature's own lines, pasted: look fails the pair, replay still diverges */
            run_pasted_line(&d, zRepro, "look:");
            cr_assert_eq(d.code, 1, "pasted look line: exit %d\n%s%s", d.code, d.zOut, d.zErr);
            run_free(&d);
            run_pasted_line(&d, zRepro, "replay:");
            cr_assert_eq(d.code, 1, "pasted replay line: exit %d\n%s%s", d.code, d.zOut, d.zErr);
            cr_assert(strstr(d.zOut, ": same"), "%s", d.zOut);
            run_free(&d);
            assert_one_minimal(zRepro, parity_defects[i].bit);
        }
        /* replay: a gate on the known divergence, and the clean target "fixes" it */
        run_free(&r);
        run_parityfuzz(&r, "replay", zOut, "--defect", zDefect, "--expect-divergent", NULL);
        cr_assert_eq(r.code, 0, "%s replay --expect-divergent: %d\n%s%s", zDefect, r.code, r.zOut, r.zErr);
        cr_assert(strstr(r.zOut, ": same"), "%s", r.zOut);
        run_free(&r);
        run_parityfuzz(&r, "replay", zOut, "--defect", zDefect, NULL);
        cr_assert_eq(r.code, 1, "%s replay: still diverges must exit 1, got %d", zDefect, r.code);
        run_free(&r);
        run_parityfuzz(&r, "replay", zOut, NULL);
        cr_assert_eq(r.code, 0, "%s replay on the clean target: %d\n%s%s", zDefect, r.code, r.zOut, r.zErr);
        cr_assert(strstr(r.zOut, ": fixed"), "%s", r.zOut);
        run_free(&r);
        run_parityfuzz(&r, "replay", zOut, "--expect-divergent", NULL);
        cr_assert_eq(r.code, 1, "a vanished divergence must fail --expect-divergent");
        run_free(&r);
        json_decref(pDoc);
    }
}

/* ---- determinism ------------------------------------------------------------------------ */

static char *signatures_of(const char *zJson)
{
    json_t *pDoc = load_json_file(zJson), *pFindings = json_object_get(pDoc, "findings");
    size_t k, len = 0;
    char *z = calloc(1, 65536);
    for (k = 0; k < json_array_size(pFindings); k++)
        len += (size_t)snprintf(z + len, 65536 - len, "%s\n",
                                json_string_value(json_object_get(json_array_get(pFindings, k), "signature")));
    json_decref(pDoc);
    return z;
}

Test(fuzz, same_seed_same_findings_with_and_without_jobs)
{
    static const char *const azJobs[] = { "1", "2" };
    size_t j;
    for (j = 0; j < 2; j++) {
        char zA[4096], zB[4096];
        char *zSigA, *zSigB;
        run_result r;
        snprintf(zA, sizeof zA, "%s", tmp_path(j ? "det-a2.json" : "det-a1.json"));
        snprintf(zB, sizeof zB, "%s", tmp_path(j ? "det-b2.json" : "det-b1.json"));
        run_parityfuzz(&r, "--defect", "fastmath_nan", "--defect", "gemm_k_tail", "--ops",
                       "amax,maximum,relu,matmul", "--max-execs", "400", "--seed", "17",
                       "--jobs", azJobs[j], "--json", zA, NULL);
        cr_assert_eq(r.code, 1, "%s%s", r.zOut, r.zErr);
        run_free(&r);
        run_parityfuzz(&r, "--defect", "fastmath_nan", "--defect", "gemm_k_tail", "--ops",
                       "amax,maximum,relu,matmul", "--max-execs", "400", "--seed", "17",
                       "--jobs", azJobs[j], "--json", zB, NULL);
        cr_assert_eq(r.code, 1);
        run_free(&r);
        zSigA = signatures_of(zA);
        zSigB = signatures_of(zB);
        cr_assert_str_eq(zSigA, zSigB, "--jobs %s: two runs differ", azJobs[j]);
        cr_assert_gt(strlen(zSigA), 0);
        free(zSigA);
        free(zSigB);
    }
}

/* ---- the command line's bad paths ------------------------------------------------------- */

Test(fuzz, bad_arguments_are_one_line_and_exit_2)
{
    static const char *const aazArgs[][6] = {
        { "--defect", "no_such_defect", NULL },
        { "--ops", "no_such_op", "--max-execs", "5", NULL },
        { "--ops", "", NULL },
        { "--time", "-3", NULL },
        { "--max-execs", "0", NULL },
        { "--jobs", "0", NULL },
        { "--strategy", "random", NULL },
        { "--target", "gpu", "--max-execs", "5", NULL },
        { "--target", "cmd:", "--max-execs", "5", NULL },
        { "replay", NULL },
        { "--expect-divergent", "--max-execs", "5", NULL },
        { "stray", NULL },
    };
    size_t i;
    for (i = 0; i < sizeof aazArgs / sizeof aazArgs[0]; i++) {
        const char *azArgv[8] = { PARITYFUZZ_BIN };
        size_t k;
        run_result r;
        for (k = 0; aazArgs[i][k]; k++) azArgv[k + 1] = aazArgs[i][k];
        azArgv[k + 1] = NULL;
        run_argv(azArgv, 60.0, &r);
        cr_assert_eq(r.code, 2, "case %zu (%s): exit %d", i, aazArgs[i][0], r.code);
        cr_assert(strstr(r.zErr, "parityfuzz: "), "case %zu: %s", i, r.zErr);
        run_free(&r);
    }
}

Test(fuzz, unwritable_outputs_and_broken_repros_are_trouble)
{
    run_result r;
    char zRepro[4096], zFile[4200];
    /* --out under a regular file */
    write_bytes(tmp_path("afile"), "x", 1);
    run_parityfuzz(&r, "--defect", "fastmath_nan", "--ops", "amax", "--max-execs", "300",
                   "--out", tmp_path("afile/sub"), NULL);
    cr_assert_eq(r.code, 2, "exit %d\n%s", r.code, r.zErr);
    cr_assert(strstr(r.zErr, "afile"), "%s", r.zErr);
    run_free(&r);
    /* --json into a missing folder */
    run_parityfuzz(&r, "--max-execs", "3", "--json", tmp_path("missing/dir/x.json"), NULL);
    cr_assert_eq(r.code, 2);
    cr_assert(one_line(&r), "%s", r.zErr);
    run_free(&r);
    /* replay: a missing folder, a folder without repros, a truncated repro */
    run_parityfuzz(&r, "replay", tmp_path("nowhere"), NULL);
    cr_assert_eq(r.code, 2);
    cr_assert(one_line(&r), "%s", r.zErr);
    run_free(&r);
    mkdir(tmp_path("empty"), 0777);
    run_parityfuzz(&r, "replay", tmp_path("empty"), NULL);
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.zErr, "no repro"), "%s", r.zErr);
    run_free(&r);
    snprintf(zRepro, sizeof zRepro, "%s", tmp_path("broken"));
    run_parityfuzz(&r, "--defect", "fastmath_nan", "--ops", "amax", "--max-execs", "500",
                   "--stop-after-first", "--out", zRepro, NULL);
    cr_assert_eq(r.code, 1, "%s", r.zErr);
    run_free(&r);
    {
        char **azRepro;
        long n = parity_replay_list(zRepro, &azRepro, zFile, sizeof zFile);
        size_t nBytes;
        unsigned char *p;
        cr_assert_eq(n, 1);
        snprintf(zFile, sizeof zFile, "%s/eager.h5", azRepro[0]);
        p = read_bytes(zFile, &nBytes);
        write_bytes(zFile, p, nBytes / 3);
        free(p);
        parity_replay_list_free(azRepro, n);
    }
    run_parityfuzz(&r, "replay", zRepro, "--defect", "fastmath_nan", NULL);
    cr_assert_eq(r.code, 2, "a truncated repro: exit %d\n%s", r.code, r.zErr);
    cr_assert(strstr(r.zErr, "eager.h5"), "%s", r.zErr);
    run_free(&r);
}

Test(fuzz, list_defects_names_first_and_progress_goes_to_stderr)
{
    run_result r;
    const char *z;
    int nLine = 0;
    run_parityfuzz(&r, "--list-defects", NULL);
    cr_assert_eq(r.code, 0);
    for (z = r.zOut; *z; z = strchr(z, '\n') + 1) {
        char zName[64];
        size_t len = strcspn(z, "\t");
        cr_assert_lt(len, sizeof zName);
        memcpy(zName, z, len);
        zName[len] = '\0';
        cr_assert_not_null(parity_defect_find(zName), "line starts with '%s'", zName);
        nLine++;
        if (!strchr(z, '\n')) break;
    }
    cr_assert_geq(nLine, 7);
    run_free(&r);
    run_parityfuzz(&r, "--ops", "softmax,sum", "--time", "2.5", "--progress", NULL);
    cr_assert_eq(r.code, 0, "%s", r.zErr);
    cr_assert(strstr(r.zErr, "execs") && strstr(r.zErr, "/s)") && strstr(r.zErr, "softmax"),
              "no status line: %s", r.zErr);
    cr_assert_null(strstr(r.zOut, "/s)"), "the status line belongs on stderr");
    run_free(&r);
}

Test(fuzz, list_ops_prints_every_op_the_target_runs_with_its_dtypes)
{
    const parity_layout_info *aInfo;
    run_result r;
    const char *z;
    size_t n, i = 0;
    run_parityfuzz(&r, "--list-ops", NULL);
    cr_assert_eq(r.code, 0, "%s", r.zErr);
    aInfo = parity_layout_all(&n);
    /* the builtin target runs every op with a layout, in every drawable dtype, in the
     * registry's order */
    for (z = r.zOut; *z && i < n; z = strchr(z, '\n') + 1, i++) {
        char zWant[128];
        snprintf(zWant, sizeof zWant, "%s float64,float32,float16,bfloat16 %s\n", aInfo[i].zOp,
                 parity_op_family_name(aInfo[i].pDef->family));
        cr_assert(strncmp(z, zWant, strlen(zWant)) == 0, "line %zu: want %s", i + 1, zWant);
    }
    cr_assert_eq(i, n);
    cr_assert_str_eq(z, "");
    run_free(&r);
    run_parityfuzz(&r, "--list-ops", "--target", "nowhere", NULL);
    cr_assert_eq(r.code, 2);
    cr_assert(strstr(r.zErr, "unknown target"), "%s", r.zErr);
    run_free(&r);
}
