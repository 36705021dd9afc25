/*
 * test_fuzz_graph.c - graph cases (fuzz/cases/graph_cases.h) and `parityfuzz graph`:
 * 1. every family expands through the registry (shapes, attributes), deterministically,
 *    and its drop bits remove the ops they name;
 * 2. each fusion defect is found by a short campaign, minimized to the ops it needs, and
 *    stored as a pair paritydiff fails at /out, judged by the fused region, cause local;
 *    `parityfuzz graph replay` finds it still there with the defect and fixed without;
 * 3. the clean fused kernels give no finding, and judge cases (not only bit-identical ones);
 * 4. a worker (tests/fixtures/fake_worker.py) runs the graph families it answers in its
 *    handshake (graphs=), and a worker that answers none is refused;
 * 5. bad usage is one line on stderr and exit 2;
 * 6. a CPU's flush modes, which only a graph case shows apart from an op (XLA:CPU's), are
 *    named as such and grouped by dtype whatever the ops: results flushed, an intermediate
 *    underflowing to zero, subnormal inputs read as zero.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz/cases/graph_cases.h"
#include "fuzz/search/search.h"
#include "fuzz/targets/targets.h"
#include "support.h"

static void make_dir(void)
{
    support_dir_create(TEST_BINARY_DIR, "fuzzgraph-");
}

TestSuite(fuzz_graph, .init = make_dir, .fini = support_dir_remove, .timeout = 600);

/* ---- 1. expansion ------------------------------------------------------------------ */

static void expand_ok(const parity_graph_spec *pS, parity_graph_case *pG)
{
    char zErr[256] = "";
    cr_assert_eq(parity_graph_case_expand(pS, pG, zErr, sizeof zErr), 0, "%s", zErr);
}

Test(fuzz_graph, families_expand_through_the_registry_and_drop_their_ops)
{
    static const struct { const char *zFam; uint32_t variant; const char *zOps; } aWant[] = {
        { "gemm_epilogue", 0, "linear+gelu" },
        { "gemm_epilogue", 1, "linear+gelu" },                /* approximate="tanh" */
        { "gemm_epilogue", 2 | 1u << 8, "linear+relu" },      /* no bias */
        { "gemm_epilogue", 5 | 1u << 9, "linear" },           /* no activation */
        { "masked_softmax", 0, "add+softmax+matmul" },
        { "masked_softmax", 1u << 8, "softmax+matmul" },
        { "masked_softmax", 1u << 9, "add+softmax" },
        { "softmax_decomposed", 0, "amax+sub+exp+sum+div" },
        { "softmax_decomposed", 1u << 8, "exp+sum+div" },
        { "pointwise_reduce", 0, "mul+add+sum" },
        { "pointwise_reduce", 1 | 1u << 8, "mul+mean" },
        { "residual_norm", 0, "add+layer_norm" },
        { "residual_norm", 1u << 8, "layer_norm" },
        { "residual_rmsnorm", 0, "add+rms_norm" },
        { "residual_rmsnorm", 1u << 8, "rms_norm" },
    };
    size_t i, k;
    for (i = 0; i < sizeof aWant / sizeof aWant[0]; i++) {
        const parity_graph_family *pFam = parity_graph_family_find(aWant[i].zFam);
        parity_graph_spec s;
        parity_graph_case g, h;
        char zOps[160];
        size_t f;
        cr_assert_not_null(pFam);
        memset(&s, 0, sizeof s);
        for (f = 0; f < parity_graph_family_count(); f++)
            if (parity_graph_family_at(f) == pFam) s.family = (uint8_t)f;
        s.variant = aWant[i].variant;
        s.dtype = PARITY_DT_F32;
        for (k = 0; k < PARITY_GRAPH_CASE_MAX_DIMS; k++) s.aDim[k] = 3 + k;
        s.seed = 99;
        expand_ok(&s, &g);
        cr_assert_str_eq(parity_graph_case_ops(&g, zOps, sizeof zOps), aWant[i].zOps,
                         "%s variant %x", aWant[i].zFam, aWant[i].variant);
        cr_assert_str_eq(g.azNodeName[g.nNode - 1], "/out");
        cr_assert_gt(g.nOut, 0);
        if (aWant[i].variant == 1) {
            const parity_attr *pA = parity_attr_find(g.aNode[1].aAttr, g.aNode[1].nAttr,
                                                     "approximate");
            cr_assert(pA && strcmp(pA->azStr[0], "tanh") == 0);
        }
        expand_ok(&s, &h);      /* the same spec, the same values */
        for (k = 0; k < g.nIn; k++)
            cr_assert(memcmp(g.aIn[k].aValue, h.aIn[k].aValue,
                             g.aIn[k].nElem * sizeof(double)) == 0);
        parity_graph_case_free(&g);
        parity_graph_case_free(&h);
    }
}

Test(fuzz_graph, a_spec_the_registry_refuses_is_no_case)
{
    parity_graph_spec s;
    parity_graph_case g;
    char zErr[256] = "";
    memset(&s, 0, sizeof s);
    s.family = 0;
    s.dtype = PARITY_DT_I32;
    s.aDim[0] = s.aDim[1] = s.aDim[2] = 2;
    cr_assert_eq(parity_graph_case_expand(&s, &g, zErr, sizeof zErr), -1);
    cr_assert(strstr(zErr, "not a float dtype"), "%s", zErr);
    s.dtype = PARITY_DT_F32;
    s.family = 200;
    cr_assert_eq(parity_graph_case_expand(&s, &g, zErr, sizeof zErr), -1);
    cr_assert(strstr(zErr, "no family"), "%s", zErr);
    s.family = 0;
    s.aDim[0] = s.aDim[1] = 1024;       /* M N K = 2^30 terms: over the work bound */
    s.aDim[2] = 1024;
    cr_assert_eq(parity_graph_case_expand(&s, &g, zErr, sizeof zErr), -1);
    cr_assert(strstr(zErr, "reference terms"), "%s", zErr);
}

/* ---- 2. the fusion defects --------------------------------------------------------- */

static void run_tool(run_result *pR, const char *zBin, const char *const *azArg)
{
    const char *azArgv[32];
    size_t n = 0;
    azArgv[n++] = zBin;
    while (*azArg && n < 31) azArgv[n++] = *azArg++;
    azArgv[n] = NULL;
    run_argv(azArgv, 300.0, pR);
}

Test(fuzz_graph, every_fusion_defect_is_found_minimized_and_fails_paritydiff_locally)
{
    /* the ops each one keeps once minimized (what it cannot do without), and one its
     * family has that it must have dropped */
    static const char *const azKeeps[][3] = {
        { "epilogue_bias_axis", "(linear)", "gelu" },
        { "fused_masked_row_uniform", "softmax) ", "matmul" },
        { "approx_reciprocal", "(exp+sum+div)", "amax" },
        /* no op it must drop: the add of a normal z can be what the 16-bit partial sums
         * need (eight lanes of equal terms sum exactly below 2048 each) */
        { "fused_half_accum", "(mul+", NULL },
    };
    size_t i;
    cr_assert_eq(parity_graph_defect_count, 4);
    for (i = 0; i < parity_graph_defect_count; i++) {
        const char *zDefect = parity_graph_defects[i].zName;
        char zOut[4200], zJson[4300], zE[8400], zC[8400];
        const char *azArg[] = { "graph", "--time", "120", "--max-execs", "600",
                                "--defect", zDefect, "--stop-after-first", "--out", zOut,
                                "--json", zJson, NULL };
        run_result r, d;
        json_t *pDoc, *pCause;
        const char *zRepro;
        snprintf(zOut, sizeof zOut, "%s", tmp_path(zDefect));
        snprintf(zJson, sizeof zJson, "%s.json", zOut);
        run_tool(&r, PARITYFUZZ_BIN, azArg);
        cr_assert_eq(r.code, 1, "%s: exit %d\n%s%s", zDefect, r.code, r.zOut, r.zErr);
        cr_assert(strstr(r.zOut, azKeeps[i][1]), "%s minimized to:\n%s", zDefect, r.zOut);
        {
            const char *zLine = strstr(r.zOut, "root cause 1: ");
            const char *zEnd = zLine ? strchr(zLine, '\n') : NULL;
            const char *zHit = zLine && azKeeps[i][2] ? strstr(zLine, azKeeps[i][2]) : NULL;
            cr_assert(zLine && (!zHit || zHit > zEnd), "%s kept %s:\n%s", zDefect,
                      azKeeps[i][2] ? azKeeps[i][2] : "-", r.zOut);
        }
        pDoc = load_json_file(zJson);
        pCause = json_array_get(json_object_get(pDoc, "root_causes"), 0);
        cr_assert(json_is_object(pCause), "%s: no root cause", zDefect);
        cr_assert_str_eq(json_string_value(json_array_get(json_object_get(pDoc, "defects"), 0)),
                         zDefect);
        zRepro = json_string_value(json_object_get(pCause, "repro"));
        cr_assert_not_null(zRepro);
        cr_log_info("%s: %lld execs, root cause %s (%s) %s", zDefect,
                    (long long)json_integer_value(json_object_get(pDoc, "execs")),
                    json_string_value(json_object_get(pCause, "ops")),
                    json_string_value(json_object_get(pCause, "dtype")),
                    json_string_value(json_object_get(pCause, "case")));
        /* the repro: paritydiff fails /out as the fused region's own failure */
        snprintf(zE, sizeof zE, "%s/eager.h5", zRepro);
        snprintf(zC, sizeof zC, "%s/compiled.h5", zRepro);
        {
            const char *azDiff[] = { zE, zC, NULL };
            run_tool(&d, PARITYDIFF_BIN, azDiff);
        }
        cr_assert_eq(d.code, 1, "%s: paritydiff exit %d\n%s%s", zDefect, d.code, d.zOut, d.zErr);
        cr_assert(strstr(d.zOut, "first divergence: /out"), "%s:\n%s", zDefect, d.zOut);
        cr_assert(strstr(d.zOut, "cause: local"), "%s:\n%s", zDefect, d.zOut);
        /* replay: the defect still there, and fixed on the clean kernels */
        {
            const char *azStill[] = { "graph", "replay", zRepro, "--defect", zDefect,
                                      "--expect-divergent", NULL };
            const char *azFixed[] = { "graph", "replay", zOut, NULL };
            run_result q;
            run_tool(&q, PARITYFUZZ_BIN, azStill);
            cr_assert_eq(q.code, 0, "%s: replay exit %d\n%s%s", zDefect, q.code, q.zOut, q.zErr);
            cr_assert(strstr(q.zOut, "0 fixed, 1 still diverge, 0 not replayed"), "%s", q.zOut);
            run_free(&q);
            run_tool(&q, PARITYFUZZ_BIN, azFixed);
            cr_assert_eq(q.code, 0, "%s: replay exit %d\n%s%s", zDefect, q.code, q.zOut, q.zErr);
            cr_assert(strstr(q.zOut, "1 fixed, 0 still diverge, 0 not replayed"), "%s", q.zOut);
            run_free(&q);
            run_tool(&q, PARITYFUZZ_BIN, (const char *[]){ "graph", "replay", zRepro, "--defect",
                                                          zDefect, NULL });
            cr_assert_eq(q.code, 1, "%s: a divergent repro without --expect-divergent: exit %d",
                         zDefect, q.code);
            run_free(&q);
        }
        json_decref(pDoc);
        run_free(&r);
        run_free(&d);
    }
}

/* ---- 3. the clean fused kernels ------------------------------------------------------- */

Test(fuzz_graph, clean_fused_kernels_give_no_finding)
{
    char zJson[4200];
    const char *azArg[] = { "graph", "--time", "0", "--max-execs", "150", "--seed", "7",
                            "--json", zJson, NULL };
    run_result r;
    json_t *pDoc;
    snprintf(zJson, sizeof zJson, "%s", tmp_path("clean.json"));
    run_tool(&r, PARITYFUZZ_BIN, azArg);
    cr_assert_eq(r.code, 0, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    pDoc = load_json_file(zJson);
    cr_assert_eq(json_integer_value(json_object_get(pDoc, "execs")), 150);
    cr_assert_eq(json_array_size(json_object_get(pDoc, "root_causes")), 0);
    cr_assert_gt(json_integer_value(json_object_get(pDoc, "judged")), 30, "%s", r.zOut);
    cr_assert_eq(json_integer_value(json_object_get(pDoc, "errors")), 0);
    json_decref(pDoc);
    run_free(&r);
}

/* ---- 4. workers: graph cases through the cmd: target ------------------------------------ */

/* parityfuzz graph against tests/fixtures/fake_worker.py with its environment. */
static void run_fake_graph(run_result *pR, const char *zMode, const char *zCaps,
                           const char *zOut, const char *zJson)
{
    char zTarget[8192];
    const char *azArg[] = { "graph", "--target", zTarget, "--families", "softmax_decomposed",
                            "--dtypes", "float32", "--time", "0", "--max-execs", "20",
                            "--out", zOut, "--json", zJson, NULL };
    snprintf(zTarget, sizeof zTarget, "cmd:env FAKE_WORKER_MODE=%s FAKE_WORKER_CAPS='%s' %s "
             "%s/fixtures/fake_worker.py", zMode, zCaps, SYSTEM_PYTHON, TEST_SOURCE_DIR);
    run_tool(pR, PARITYFUZZ_BIN, azArg);
}

Test(fuzz_graph, a_worker_runs_graph_cases_it_answers)
{
    char zOut[4200], zJson[4200];
    run_result r;
    json_t *pDoc, *pCause;
    snprintf(zOut, sizeof zOut, "%s", tmp_path("fake-ok"));
    snprintf(zJson, sizeof zJson, "%s", tmp_path("fake-ok.json"));
    run_fake_graph(&r, "ok", "graphs=softmax_decomposed", zOut, zJson);
    cr_assert_eq(r.code, 0, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    pDoc = load_json_file(zJson);
    cr_assert_gt(json_integer_value(json_object_get(pDoc, "judged")), 5, "%s", r.zOut);
    cr_assert_eq(json_integer_value(json_object_get(pDoc, "skipped")), 0, "%s", r.zOut);
    json_decref(pDoc);
    run_free(&r);

    /* a NaN-returning compiled graph: a non-finite root cause with its repro */
    snprintf(zOut, sizeof zOut, "%s", tmp_path("fake-nan"));
    snprintf(zJson, sizeof zJson, "%s", tmp_path("fake-nan.json"));
    run_fake_graph(&r, "nan", "graphs=softmax_decomposed", zOut, zJson);
    cr_assert_eq(r.code, 1, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    pDoc = load_json_file(zJson);
    pCause = json_array_get(json_object_get(pDoc, "root_causes"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(pCause, "symptom")), "nonfinite made");
    cr_assert(strstr(json_string_value(json_object_get(pDoc, "target")), "fake_worker.py"));
    cr_assert(json_is_string(json_object_get(pCause, "repro")));
    json_decref(pDoc);
    run_free(&r);
}

Test(fuzz_graph, a_worker_without_graphs_is_refused_in_one_line)
{
    char zOut[4200], zJson[4200];
    run_result r;
    snprintf(zOut, sizeof zOut, "%s", tmp_path("fake-none"));
    snprintf(zJson, sizeof zJson, "%s", tmp_path("fake-none.json"));
    run_fake_graph(&r, "ok", "", zOut, zJson);
    cr_assert_eq(r.code, 2, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    cr_assert_eq(count_lines(r.zErr, 0, NULL, 0), 1, "%s", r.zErr);
    cr_assert(strstr(r.zErr, "runs none of the graph families"), "%s", r.zErr);
    run_free(&r);
}

/* ---- 4b. triage of stored graph repros ------------------------------------------------ */

/* A copy of file zFrom at zTo (small files: repro captures). */
static void copy_file(const char *zFrom, const char *zTo)
{
    FILE *in = fopen(zFrom, "rb"), *out = fopen(zTo, "wb");
    char aBuf[65536];
    size_t n;
    cr_assert(in && out, "%s -> %s", zFrom, zTo);
    while ((n = fread(aBuf, 1, sizeof aBuf, in)) > 0) cr_assert_eq(fwrite(aBuf, 1, n, out), n);
    fclose(in);
    fclose(out);
}

/* Whether the triage document lists a graph cause with the campaign cause's key. */
static int triage_has(json_t *pTriage, json_t *pCause)
{
    static const char *const azKey[] = { "family", "ops", "dtype", "symptom" };
    json_t *aT = json_object_get(pTriage, "graph_root_causes");
    size_t i, k;
    for (i = 0; i < json_array_size(aT); i++) {
        json_t *pT = json_array_get(aT, i);
        for (k = 0; k < 4; k++)
            if (strcmp(json_string_value(json_object_get(pT, azKey[k])),
                       json_string_value(json_object_get(pCause, azKey[k]))) != 0)
                break;
        if (k == 4) return 1;
    }
    return 0;
}

/* `parityfuzz triage` over a graph campaign's repros gives the campaign's root causes,
 * from the stored tensors alone; beside single-op repros both are listed; a repro whose
 * compiled output now equals eager's no longer diverges; a damaged one is one line. */
Test(fuzz_graph, triage_groups_stored_graph_repros_as_the_campaign_did)
{
    char zOut[4200], zJson[4300], zTriage[4300], zOp[4200], zCopy[4300], zFile[8700],
        zFrom[8700];
    const char *azArg[] = { "graph", "--time", "120", "--max-execs", "300", "--seed", "3",
                            "--defect", "approx_reciprocal", "--defect", "epilogue_bias_axis",
                            "--out", zOut, "--json", zJson, NULL };
    json_t *pCamp, *pTri, *aCause;
    const char *zRepro;
    size_t i;
    run_result r;

    snprintf(zOut, sizeof zOut, "%s", tmp_path("g"));
    snprintf(zJson, sizeof zJson, "%s.json", zOut);
    snprintf(zTriage, sizeof zTriage, "%s-triage.json", zOut);
    run_tool(&r, PARITYFUZZ_BIN, azArg);
    cr_assert_eq(r.code, 1, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    run_free(&r);
    pCamp = load_json_file(zJson);
    aCause = json_object_get(pCamp, "root_causes");
    cr_assert_geq(json_array_size(aCause), 2, "the two defects, at least");

    run_tool(&r, PARITYFUZZ_BIN, (const char *[]){ "triage", zOut, "--json", zTriage, NULL });
    cr_assert_eq(r.code, 1, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    cr_assert(strstr(r.zOut, "graph root cause 1: "), "%s", r.zOut);
    run_free(&r);
    pTri = load_json_file(zTriage);
    cr_assert_eq(json_array_size(json_object_get(pTri, "graph_root_causes")),
                 json_array_size(aCause), "one cause per stored repro, as the campaign had");
    cr_assert_eq(json_array_size(json_object_get(pTri, "root_causes")), 0);
    cr_assert_eq(json_integer_value(json_object_get(pTri, "repros")),
                 (json_int_t)json_array_size(aCause));
    for (i = 0; i < json_array_size(aCause); i++)
        cr_assert(triage_has(pTri, json_array_get(aCause, i)), "campaign cause %zu: %s", i,
                  json_string_value(json_object_get(json_array_get(aCause, i), "case")));
    json_decref(pTri);

    /* beside a single op's repro: both kinds listed, counted together */
    snprintf(zOp, sizeof zOp, "%s/../corpus/repros/gemm_k_tail", TEST_SOURCE_DIR);
    run_tool(&r, PARITYFUZZ_BIN, (const char *[]){ "triage", zOut, zOp, "--json", zTriage, NULL });
    cr_assert_eq(r.code, 1, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    run_free(&r);
    pTri = load_json_file(zTriage);
    cr_assert_eq(json_array_size(json_object_get(pTri, "root_causes")), 1);
    cr_assert_eq(json_integer_value(json_object_get(pTri, "repros")),
                 (json_int_t)json_array_size(aCause) + 1);
    json_decref(pTri);

    /* a repro whose compiled output is eager's: no longer diverging, no cause */
    zRepro = json_string_value(json_object_get(json_array_get(aCause, 0), "repro"));
    snprintf(zCopy, sizeof zCopy, "%s", tmp_path("fixed"));
    cr_assert_eq(mkdir(zCopy, 0777), 0);
    snprintf(zFrom, sizeof zFrom, "%s/eager.h5", zRepro);
    snprintf(zFile, sizeof zFile, "%s/eager.h5", zCopy);
    copy_file(zFrom, zFile);
    snprintf(zFile, sizeof zFile, "%s/compiled.h5", zCopy);
    copy_file(zFrom, zFile);
    run_tool(&r, PARITYFUZZ_BIN, (const char *[]){ "triage", zCopy, "--json", zTriage, NULL });
    cr_assert_eq(r.code, 0, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    cr_assert(strstr(r.zOut, "1 no longer diverging"), "%s", r.zOut);
    run_free(&r);
    pTri = load_json_file(zTriage);
    cr_assert(strstr(json_string_value(json_object_get(json_array_get(
                  json_object_get(pTri, "no_longer_diverging"), 0), "why")), "bit-identical"));
    json_decref(pTri);

    /* a damaged compiled.h5: one line naming the repro, exit 2 */
    {
        FILE *f = fopen(zFile, "wb");
        cr_assert_not_null(f);
        fputs("not an HDF5 file", f);
        fclose(f);
    }
    run_tool(&r, PARITYFUZZ_BIN, (const char *[]){ "triage", zCopy, NULL });
    cr_assert_eq(r.code, 2, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    cr_assert_eq(count_lines(r.zErr, 0, NULL, 0), 1, "%s", r.zErr);
    cr_assert(strstr(r.zErr, zCopy), "%s", r.zErr);
    run_free(&r);
    json_decref(pCamp);
}

/* ---- 5. bad usage ------------------------------------------------------------------- */

Test(fuzz_graph, graph_replay_refuses_a_single_op_repro_in_one_line)
{
    char zRepro[4200];
    run_result r;
    snprintf(zRepro, sizeof zRepro, "%s/../corpus/torch/repros/erf-near-zero-float32",
             TEST_SOURCE_DIR);
    run_tool(&r, PARITYFUZZ_BIN, (const char *[]){ "graph", "replay", zRepro, NULL });
    cr_assert_eq(r.code, 2, "exit %d\n%s%s", r.code, r.zOut, r.zErr);
    cr_assert_eq(count_lines(r.zErr, 0, NULL, 0), 1, "%s", r.zErr);
    cr_assert(strstr(r.zErr, "a single-op case"), "%s", r.zErr);
    cr_assert(strstr(r.zOut, "1 not replayed"), "%s", r.zOut);
    run_free(&r);
}

Test(fuzz_graph, bad_usage_is_one_line_and_exit_2)
{
    static const char *const aaArg[][6] = {
        { "graph", "--defect", "gemm_k_tail", NULL },        /* a single-op defect */
        { "graph", "--families", "gemm_epilogue,nope", NULL },
        { "graph", "--dtypes", "int32", NULL },
        { "graph", "--time", "0", NULL },
        { "graph", "--time", "-1", NULL },
        { "graph", "stray", NULL },
        { "graph", "replay", NULL },
    };
    static const char *const azWant[] = { "unknown fusion defect 'gemm_k_tail'",
                                          "unknown graph family 'nope'",
                                          "'int32' is not a float dtype", "never end",
                                          "--time needs", "unexpected argument 'stray'",
                                          "replay needs a repro folder" };
    size_t i;
    for (i = 0; i < sizeof azWant / sizeof azWant[0]; i++) {
        run_result r;
        run_tool(&r, PARITYFUZZ_BIN, aaArg[i]);
        cr_assert_eq(r.code, 2, "%s: exit %d", azWant[i], r.code);
        cr_assert_eq(count_lines(r.zErr, 0, NULL, 0), 1, "%s:\n%s", azWant[i], r.zErr);
        cr_assert(strstr(r.zErr, azWant[i]), "want '%s':\n%s", azWant[i], r.zErr);
        run_free(&r);
    }
}

/* ---- 6. flush modes ---------------------------------------------------------------- */

/* How flush_target's compiled side differs from IEEE eager. */
static enum { FLUSH_DAZ, FLUSH_FTZ, FLUSH_DOUBLE } g_flushMode;

/* Eager's kernels in a flush mode: DAZ reads subnormal inputs as zero; FTZ zeroes results
 * below 2^24 times the smallest normal (an intermediate flushed inside a fused kernel
 * looks so); DOUBLE is a plain wrong kernel, twice eager. */
static parity_run_status flush_run(parity_target *pT, const parity_graph_case *pG,
                                   double *aOut, char *zErr, size_t nErr)
{
    parity_graph_case *pZ = malloc(sizeof *pZ);
    double *aaOut[PARITY_GRAPH_CASE_MAX_NODES] = { 0 }, aX[1];
    double tiny = parity_dtype_smallest_normal(pG->spec.dtype);
    uint64_t k;
    size_t i;
    (void)pT;
    cr_assert_not_null(pZ);
    *pZ = *pG;
    if (g_flushMode == FLUSH_DAZ) {     /* the test's x is one element */
        aX[0] = fabs(pG->aIn[0].aValue[0]) < tiny ? 0.0 : pG->aIn[0].aValue[0];
        pZ->aIn[0].aValue = aX;
    }
    cr_assert_eq(parity_builtin_graph_eager(pZ, aaOut, zErr, nErr), 0, "%s", zErr);
    for (k = 0; k < pG->nOut; k++) {
        double v = aaOut[pG->nNode - 1][k];
        aOut[k] = g_flushMode == FLUSH_FTZ && fabs(v) < ldexp(tiny, 24) ? 0.0
                : g_flushMode == FLUSH_DOUBLE ? 2 * v : v;
    }
    for (i = 0; i < pG->nNode; i++) free(aaOut[i]);
    free(pZ);
    return PARITY_RUN_OK;
}

/* The symptom of family zFam's case (variant) for one-element x and w under
 * g_flushMode. */
static const char *flush_symptom_of(const char *zFam, uint32_t variant, double x, double w)
{
    static char zSym[32];
    parity_graph_spec s;
    parity_graph_case g;
    parity_graph_oracle_result r;
    parity_target target;
    double *aaEager[PARITY_GRAPH_CASE_MAX_NODES] = { 0 }, aC[1];
    size_t i, f;
    memset(&s, 0, sizeof s);
    for (f = 0; f < parity_graph_family_count(); f++)
        if (parity_graph_family_at(f) == parity_graph_family_find(zFam))
            s.family = (uint8_t)f;
    s.variant = variant;
    s.dtype = PARITY_DT_F32;
    s.aDim[0] = s.aDim[1] = s.aDim[2] = 1;
    s.seed = 5;
    expand_ok(&s, &g);
    cr_assert_eq(g.nOut, 1);
    g.aIn[0].aValue[0] = x;
    g.aIn[1].aValue[0] = w;
    memset(&target, 0, sizeof target);
    target.zName = "flush";
    target.xRunGraph = flush_run;
    cr_assert_eq(parity_graph_oracle_run(&target, &g, aaEager, aC, &r), 0, "%s", r.zDetail);
    cr_assert_eq(r.cls, PARITY_FINDING_DIVERGES, "x %g w %g: %s", x, w, r.zDetail);
    snprintf(zSym, sizeof zSym, "%s", parity_graph_symptom(&r, PARITY_DT_F32));
    for (i = 0; i < g.nNode; i++) free(aaEager[i]);
    parity_graph_case_free(&g);
    return zSym;
}

/* linear(x, w) alone: gemm_epilogue without bias and activation */
static const char *flush_symptom(double x, double w)
{
    return flush_symptom_of("gemm_epilogue", 1u << 8 | 1u << 9, x, w);
}

Test(fuzz_graph, flush_modes_are_named_and_grouped_by_dtype)
{
    parity_graph_cause *aC = NULL;
    size_t n = 0;
    int isNew;

    g_flushMode = FLUSH_DAZ;            /* XLA:CPU: -2.26e-39 * -3.4e38 gave 0, not 0.77 */
    cr_assert_str_eq(flush_symptom(-2.263648e-39, -3.4028235e38), "subnormal input zeroed");
    /* whatever the symptom: rms_norm(-5.5e-39) * -inf is +inf, read as zero NaN ("nan
     * made"; XLA:CPU's residual_rmsnorm finding) */
    cr_assert_str_eq(flush_symptom_of("residual_rmsnorm", 1u << 8, -5.496579e-39, -INFINITY),
                     "subnormal input zeroed");
    g_flushMode = FLUSH_FTZ;
    cr_assert_str_eq(flush_symptom(1e-30, 1e-7), "underflow to zero");   /* 1e-37: normal */
    cr_assert_str_eq(flush_symptom(1e-30, 1e-9), "subnormal flushed");   /* 1e-39 */
    g_flushMode = FLUSH_DOUBLE;         /* a subnormal input alone names no flush */
    cr_assert_str_eq(flush_symptom(-2.263648e-39, -3.4028235e38), "accuracy");
    cr_assert_str_eq(flush_symptom(1e-30, 1e-7), "accuracy");

    /* a flush is the dtype's whatever the ops; accuracy and an underflow to zero (which a
     * kernel returning 0 early shows too) stay with their ops */
    cr_assert_not_null(parity_graph_cause_add(&aC, &n, "gemm_epilogue", "linear+silu",
                                              PARITY_DT_F32, "subnormal flushed", &isNew));
    cr_assert_not_null(parity_graph_cause_add(&aC, &n, "masked_softmax", "add+softmax",
                                              PARITY_DT_F32, "subnormal flushed", &isNew));
    cr_assert_eq(isNew, 0, "one flush cause for both families");
    cr_assert_str_eq(aC[0].zFamily, "*");
    cr_assert_not_null(parity_graph_cause_add(&aC, &n, "gemm_epilogue", "linear+silu",
                                              PARITY_DT_F32, "underflow to zero", &isNew));
    cr_assert_not_null(parity_graph_cause_add(&aC, &n, "masked_softmax", "add+softmax",
                                              PARITY_DT_F32, "underflow to zero", &isNew));
    cr_assert_eq((int)n, 3, "the underflows apart, by their ops");
    cr_assert_str_eq(aC[1].zOps, "linear+silu");
    cr_assert_not_null(parity_graph_cause_add(&aC, &n, "gemm_epilogue", "linear",
                                              PARITY_DT_F32, "subnormal input zeroed", &isNew));
    cr_assert_not_null(parity_graph_cause_add(&aC, &n, "gemm_epilogue", "linear",
                                              PARITY_DT_BF16, "subnormal input zeroed", &isNew));
    cr_assert_not_null(parity_graph_cause_add(&aC, &n, "gemm_epilogue", "linear+tanh",
                                              PARITY_DT_F32, "accuracy", &isNew));
    cr_assert_eq(n, 6, "float32 flush, two underflows, float32 and bfloat16 zeroed inputs, "
                 "tanh's accuracy");
    cr_assert_str_eq(aC[5].zOps, "linear+tanh");
    free(aC);
}
