/*
 * test_layouts.c - the storage layout of a capture never changes a judgement (issue 13).
 *
 * Large captures come chunked and compressed (h5py chunks whenever it compresses), small
 * ones contiguous, and the two sides of a diff are often written by different tools. The
 * chunk reader (formats/chunk_read.c) decodes deflate and shuffle itself on the compute
 * threads, so it is a second way of reading the same data: these tests hold it to the
 * first, end to end through the CLI.
 *
 * 1. An op graph with real work for the models (layer_norm -> gelu -> softmax -> linear),
 *    a local bug in a tail block of gelu's output with its echoes downstream, legitimate
 *    one-ulp differences everywhere else, and plain tensors with NaN, Inf, -0, subnormals
 *    and float64: written contiguous by our writer, then rewritten by h5repack chunked
 *    (chunks that do not divide the extents, so edge chunks are partial) and chunked with
 *    shuffle and gzip. Every pairing of layouts (both sides alike, and mixed) gives the
 *    same verdict, first divergence, statuses, causes, classes, counts, slices, worst
 *    elements, histograms and error figures as the contiguous pair: bit for bit, except
 *    rel_l2 (a sum whose blocks may start elsewhere, 1e-12 relative) and the judgement's
 *    error figures, held to the fast path's stated error (2^-30 relative, judge.h).
 * 2. Chunks never written read as the dataset's fill value: a gzip capture whose one
 *    unwritten chunk holds the fill value 0 equals a contiguous capture of zeros there; with
 *    fill value 2 the mismatches are exactly that chunk, and the slice is its box.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hdf5.h>

#include "support.h"

static void setup(void)
{
    support_dir_create(TEST_BINARY_DIR, "layouts-");
}

TestSuite(layouts, .init = setup, .fini = support_dir_remove, .timeout = 300);

enum { R = 300, C = 130, D = 96, BAD_R0 = 200, BAD_R1 = 220, BAD_C0 = 50, BAD_C1 = 70 };

static double uniform(uint64_t *pState, double lo, double hi)
{
    return lo + (hi - lo) * (double)(splitmix64(pState) >> 11) * 0x1p-53;
}

/* x moved by k float32 ulps (k = 0: x). */
static float nudge(float x, int k)
{
    for (; k > 0; k--) x = nextafterf(x, INFINITY);
    for (; k < 0; k++) x = nextafterf(x, -INFINITY);
    return x;
}

static void layer_norm(const float *x, const float *w, const float *b, float *y)
{
    int i, k;
    for (i = 0; i < R; i++) {
        const float *xr = x + (size_t)i * C;
        double mu = 0.0, var = 0.0;
        for (k = 0; k < C; k++) mu += xr[k];
        mu /= C;
        for (k = 0; k < C; k++) var += (xr[k] - mu) * (xr[k] - mu);
        var /= C;
        for (k = 0; k < C; k++)
            y[(size_t)i * C + k] = (float)((xr[k] - mu) / sqrt(var + 1e-5) * w[k] + b[k]);
    }
}

static void gelu(const float *x, float *y, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) y[i] = (float)(0.5 * x[i] * erfc(-x[i] / sqrt(2.0)));
}

static void softmax(const float *x, float *y)
{
    int i, k;
    for (i = 0; i < R; i++) {
        const float *xr = x + (size_t)i * C;
        double m = -INFINITY, s = 0.0;
        for (k = 0; k < C; k++) m = xr[k] > m ? xr[k] : m;
        for (k = 0; k < C; k++) s += exp(xr[k] - m);
        for (k = 0; k < C; k++) y[(size_t)i * C + k] = (float)(exp(xr[k] - m) / s);
    }
}

static void linear(const float *x, const float *w, const float *b, float *y)
{
    int i, j, k;
    for (i = 0; i < R; i++)
        for (j = 0; j < D; j++) {
            double s = b[j];
            for (k = 0; k < C; k++) s += (double)x[(size_t)i * C + k] * w[(size_t)j * C + k];
            y[(size_t)i * D + j] = (float)s;
        }
}

typedef struct {
    float x[R * C], lnw[C], lnb[C], w[D * C], bias[D];
    float ln[R * C], g[R * C], s[R * C], lin[R * D], aux[R * C];
    double d64[R * 7];
} graph;

/* The shared inputs and parameters. */
static void make_inputs(graph *pG)
{
    uint64_t seed = 13;
    size_t i;
    for (i = 0; i < R * C; i++) pG->x[i] = (float)uniform(&seed, -3.0, 3.0);
    pG->x[0] = -0.0f;
    pG->x[1] = 1e-40f;   /* subnormal */
    pG->x[2] = 0.0f;
    for (i = 0; i < C; i++) {
        pG->lnw[i] = (float)uniform(&seed, 0.5, 1.5);
        pG->lnb[i] = (float)uniform(&seed, -0.2, 0.2);
    }
    for (i = 0; i < D * C; i++) pG->w[i] = (float)uniform(&seed, -1.0, 1.0);
    for (i = 0; i < D; i++) pG->bias[i] = (float)uniform(&seed, -0.5, 0.5);
}

/* The ops, each from the previous op's output of this side. compiled: one-ulp differences
 * a reordered kernel leaves, and gelu's bug in the block [BAD_R0, BAD_R1) x [BAD_C0, BAD_C1). */
static void run_graph(graph *pG, int compiled)
{
    size_t i;
    uint64_t seed = 99;
    layer_norm(pG->x, pG->lnw, pG->lnb, pG->ln);
    if (compiled)
        for (i = 0; i < R * C; i += 3) pG->ln[i] = nudge(pG->ln[i], i % 2 ? 1 : -1);
    gelu(pG->ln, pG->g, R * C);
    if (compiled) {
        for (i = 1; i < R * C; i += 4) pG->g[i] = nudge(pG->g[i], 1);
        for (i = BAD_R0; i < BAD_R1; i++) {
            size_t k;
            for (k = BAD_C0; k < BAD_C1; k++) pG->g[i * C + k] += 0.01f;
        }
    }
    softmax(pG->g, pG->s);
    if (compiled)
        for (i = 2; i < R * C; i += 5) pG->s[i] = nudge(pG->s[i], -1);
    linear(pG->s, pG->w, pG->bias, pG->lin);
    if (compiled)
        for (i = 0; i < R * D; i += 2) pG->lin[i] = nudge(pG->lin[i], 1);
    /* plain tensors (per-dtype tolerance): specials on both sides alike, -0 against +0, a
     * subnormal, and a few ulps elsewhere */
    for (i = 0; i < R * C; i++) pG->aux[i] = (float)uniform(&seed, -10.0, 10.0);
    pG->aux[5] = NAN;
    pG->aux[6] = INFINITY;
    pG->aux[7] = -INFINITY;
    pG->aux[8] = compiled ? 0.0f : -0.0f;
    pG->aux[9] = compiled ? 2e-40f : 1e-40f;
    for (i = 0; i < R * 7; i++) pG->d64[i] = uniform(&seed, -1.0, 1.0);
    if (compiled) {
        for (i = 10; i < R * C; i += 7) pG->aux[i] = nudge(pG->aux[i], 3);
        for (i = 0; i < R * 7; i += 3) pG->d64[i] = nextafter(pG->d64[i], 2.0);
    }
}

static void op(parity_writer *pW, const char *zPath, const char *zOp, const char *const *az,
               size_t n, int64_t order)
{
    w_op(pW, zPath, zOp, az, n);
    w_order(pW, zPath, order);
}

static void write_graph(const char *zFile, const char *zSide, const graph *pG)
{
    static const char *const azLn[] = { "/x", "/ln_w", "/ln_b" }, *const azG[] = { "/ln" };
    static const char *const azS[] = { "/g" }, *const azLin[] = { "/s", "/w", "/bias" };
    const uint64_t aRC[2] = { R, C }, aC[1] = { C }, aDC[2] = { D, C }, aD[1] = { D };
    const uint64_t aRD[2] = { R, D }, aR7[2] = { R, 7 };
    const int64_t aNorm[1] = { C };
    parity_writer *pW = wopen(zFile);
    wcheck(pW, parity_writer_attr_int(pW, NULL, "parity_format", 1));
    wcheck(pW, parity_writer_attr_string(pW, NULL, "side", zSide));
    w_tensor(pW, "/x", PARITY_DT_F32, 2, aRC, pG->x);
    w_tensor(pW, "/ln_w", PARITY_DT_F32, 1, aC, pG->lnw);
    w_tensor(pW, "/ln_b", PARITY_DT_F32, 1, aC, pG->lnb);
    w_tensor(pW, "/w", PARITY_DT_F32, 2, aDC, pG->w);
    w_tensor(pW, "/bias", PARITY_DT_F32, 1, aD, pG->bias);
    w_tensor(pW, "/ln", PARITY_DT_F32, 2, aRC, pG->ln);
    op(pW, "/ln", "layer_norm", azLn, 3, 0);
    wcheck(pW, parity_writer_attr_ints(pW, "/ln", "normalized_shape", aNorm, 1));
    wcheck(pW, parity_writer_attr_float(pW, "/ln", "eps", 1e-5));
    w_tensor(pW, "/g", PARITY_DT_F32, 2, aRC, pG->g);
    op(pW, "/g", "gelu", azG, 1, 1);
    w_tensor(pW, "/s", PARITY_DT_F32, 2, aRC, pG->s);
    op(pW, "/s", "softmax", azS, 1, 2);
    wcheck(pW, parity_writer_attr_int(pW, "/s", "dim", -1));
    w_tensor(pW, "/lin", PARITY_DT_F32, 2, aRD, pG->lin);
    op(pW, "/lin", "linear", azLin, 3, 3);
    w_tensor(pW, "/aux", PARITY_DT_F32, 2, aRC, pG->aux);
    w_tensor(pW, "/d64", PARITY_DT_F64, 2, aR7, pG->d64);
    wclose(pW);
}

/* zSrc rewritten by h5repack as zDst: chunks that cut every extent unevenly, and with
 * gzip shuffle and deflate too. */
static void repack(const char *zSrc, const char *zDst, int gzip)
{
    /* chunks per dataset; a filter given for no object in particular would replace the
     * one before it, so the filters name every dataset */
    static const char *const azLayout[] = {
        "-l", "/x,/ln,/g,/s,/aux:CHUNK=64x48", "-l", "/ln_w,/ln_b:CHUNK=48",
        "-l", "/w:CHUNK=40x48", "-l", "/bias:CHUNK=40", "-l", "/lin:CHUNK=64x40",
        "-l", "/d64:CHUNK=64x4",
    };
    static const char *const azGzip[] = {
        "-f", "/x,/ln,/g,/s,/aux,/ln_w,/ln_b,/w,/bias,/lin,/d64:SHUF",
        "-f", "/x,/ln,/g,/s,/aux,/ln_w,/ln_b,/w,/bias,/lin,/d64:GZIP=1",
    };
    const char *azArgv[32];
    size_t n = 0, k;
    run_result r;
    azArgv[n++] = H5REPACK_BIN;
    for (k = 0; k < sizeof azLayout / sizeof azLayout[0]; k++) azArgv[n++] = azLayout[k];
    for (k = 0; gzip && k < sizeof azGzip / sizeof azGzip[0]; k++) azArgv[n++] = azGzip[k];
    azArgv[n++] = zSrc;
    azArgv[n++] = zDst;
    azArgv[n] = NULL;
    run_argv(azArgv, 120.0, &r);
    cr_assert(r.exited && r.code == 0, "h5repack (from Debian's hdf5-tools, which "
              "scripts/setup-deps.sh installs) failed: %s", r.zErr);
    run_free(&r);
    {   /* the layout asked for is the one written (a filter h5repack dropped went unseen) */
        hid_t hF = H5Fopen(zDst, H5F_ACC_RDONLY, H5P_DEFAULT), hD = H5Dopen2(hF, "/g", H5P_DEFAULT);
        hid_t hP = H5Dget_create_plist(hD);
        cr_assert_eq(H5Pget_layout(hP), H5D_CHUNKED, "%s", zDst);
        cr_assert_eq(H5Pget_nfilters(hP), gzip ? 2 : 0, "%s", zDst);
        H5Pclose(hP);
        H5Dclose(hD);
        H5Fclose(hF);
    }
}

/* paritydiff --json on the pair: the report, after checking the exit code and that stderr
 * has nothing but the warnings of a capture with no owner of its order. */
static json_t *diff(const char *zE, const char *zC, int wantCode)
{
    const char *zJson = tmp_path("report.json");
    const char *azArgv[] = { PARITYDIFF_BIN, "--json", zJson, zE, zC, NULL };
    run_result r;
    json_t *pDoc;
    run_argv(azArgv, 120.0, &r);
    expect_clean_stderr(&r, "paritydiff");
    cr_assert_eq(r.code, wantCode, "%s vs %s: exit %d, want %d; stderr:\n%s", zE, zC, r.code,
                 wantCode, r.zErr);
    run_free(&r);
    pDoc = load_json_file(zJson);
    return pDoc;
}

/* Is b within rel of a (both reals), or the same JSON value? */
static int close_enough(json_t *pA, json_t *pB, double rel)
{
    double a, b;
    if (json_equal(pA, pB)) return 1;
    if (!json_is_number(pA) || !json_is_number(pB)) return 0;
    a = json_number_value(pA);
    b = json_number_value(pB);
    return fabs(a - b) <= rel * fabs(a);
}

/* Every field of object pRef equals pOther's, except the figures named in azLoose (held to
 * rel). zWhere says which pairing and tensor. */
static void expect_same_object(json_t *pRef, json_t *pOther, const char *const *azLoose,
                               double rel, const char *zWhere)
{
    const char *zKey;
    json_t *pV;
    cr_expect_eq(json_object_size(pRef), json_object_size(pOther), "%s: fields differ", zWhere);
    json_object_foreach(pRef, zKey, pV) {
        json_t *pO = json_object_get(pOther, zKey);
        int loose = 0;
        size_t k;
        for (k = 0; azLoose[k]; k++) loose |= strcmp(azLoose[k], zKey) == 0;
        if (loose ? close_enough(pV, pO, rel) : json_equal(pV, pO)) continue;
        {
            char *zA = json_dumps(pV, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
            char *zB = pO ? json_dumps(pO, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17))
                          : NULL;
            cr_expect_fail("%s: '%s' is %s, contiguous says %s", zWhere, zKey, zB ? zB : "absent", zA);
            free(zA);
            free(zB);
        }
    }
}

static const char *str_of(json_t *p, const char *zKey)
{
    json_t *pV = json_object_get(p, zKey);
    return json_is_string(pV) ? json_string_value(pV) : "(not a string)";
}

static json_int_t int_of(json_t *p, const char *zKey)
{
    return json_integer_value(json_object_get(p, zKey));
}

Test(layouts, every_layout_and_mix_gives_the_same_judgement)
{
    static const char *const azLayout[] = { "contiguous", "chunked", "gzip" };
    /* the sum of squares starts its blocks at slab starts (test_cli.c) */
    static const char *const azLooseTensor[] = { "rel_l2", NULL };
    /* the fast path's figures: within its stated error of MPFR's (judge.h) */
    static const char *const azLooseJudgement[] = {
        "compiled_max_abs_err", "eager_max_abs_err", "compiled_max_ulp", "eager_max_ulp",
        "compiled_max_bound_ratio", "eager_max_bound_ratio", "max_bound", NULL };
    static const int aaPair[][2] = { { 1, 1 }, { 2, 2 }, { 0, 2 }, { 2, 0 }, { 2, 1 } };
    graph *pE = calloc(1, sizeof *pE), *pC = calloc(1, sizeof *pC);
    char zE[3][64], zC[3][64];
    json_t *pRef, *pG, *pJ;
    size_t p, t;
    int l;

    cr_assert(pE && pC);
    make_inputs(pE);
    *pC = *pE;
    run_graph(pE, 0);
    run_graph(pC, 1);
    for (l = 0; l < 3; l++) {
        snprintf(zE[l], sizeof zE[l], "%s", tmp_path(l == 0 ? "e.h5" : l == 1 ? "e_chunked.h5" : "e_gzip.h5"));
        snprintf(zC[l], sizeof zC[l], "%s", tmp_path(l == 0 ? "c.h5" : l == 1 ? "c_chunked.h5" : "c_gzip.h5"));
    }
    write_graph(zE[0], "eager", pE);
    write_graph(zC[0], "compiled", pC);
    free(pE);
    free(pC);
    for (l = 1; l < 3; l++) {
        repack(zE[0], zE[l], l == 2);
        repack(zC[0], zC[l], l == 2);
    }

    /* The contiguous pair first: the judgement the others must repeat is the right one. */
    pRef = diff(zE[0], zC[0], 1);
    cr_assert_str_eq(str_of(pRef, "verdict"), "fail");
    cr_assert_str_eq(str_of(pRef, "first_divergence"), "/g");
    pG = tensor_named(pRef, "/g");
    cr_assert_str_eq(str_of(pG, "cause"), "local");
    cr_assert_eq(int_of(pG, "mismatches"), (BAD_R1 - BAD_R0) * (BAD_C1 - BAD_C0));
    {
        json_t *pSlice = json_object_get(pG, "affected_slice");
        const json_int_t aWant[] = { BAD_R0, BAD_R1, BAD_C0, BAD_C1 };
        size_t d;
        cr_assert_eq(json_array_size(pSlice), 2);
        for (d = 0; d < 2; d++) {
            json_t *pDim = json_array_get(pSlice, d);
            cr_expect_eq(json_integer_value(json_array_get(pDim, 0)), aWant[2 * d]);
            cr_expect_eq(json_integer_value(json_array_get(pDim, 1)), aWant[2 * d + 1]);
        }
    }
    cr_assert_str_eq(str_of(tensor_named(pRef, "/s"), "cause"), "propagated");
    cr_assert_str_eq(str_of(tensor_named(pRef, "/lin"), "cause"), "propagated");
    cr_assert_str_eq(str_of(tensor_named(pRef, "/ln"), "status"), "pass");
    cr_assert_str_eq(str_of(tensor_named(pRef, "/aux"), "status"), "pass");
    cr_assert_str_eq(str_of(tensor_named(pRef, "/d64"), "status"), "pass");
    cr_assert_eq(int_of(tensor_named(pRef, "/aux"), "signed_zero_mismatches"), 1);
    cr_assert_gt(int_of(tensor_named(pRef, "/d64"), "bit_differences"), 0);
    /* every element of every modelled output verified, none on trust */
    for (t = 0; t < 4; t++) {
        static const char *const azOp[] = { "/ln", "/g", "/s", "/lin" };
        json_t *pT = tensor_named(pRef, azOp[t]);
        pJ = json_object_get(pT, "judgement");
        cr_assert(json_is_object(pJ), "%s has no judgement", azOp[t]);
        cr_expect_eq(int_of(pJ, "checked"), int_of(pT, "elements"), "%s", azOp[t]);
        cr_expect_gt(int_of(pT, "bit_differences"), 0, "%s", azOp[t]);
    }

    for (p = 0; p < sizeof aaPair / sizeof aaPair[0]; p++) {
        int iE = aaPair[p][0], iC = aaPair[p][1];
        json_t *pDoc = diff(zE[iE], zC[iC], 1), *pTensors = json_object_get(pDoc, "tensors");
        json_t *pRefTensors = json_object_get(pRef, "tensors");
        static const char *const azTop[] = { "verdict", "first_divergence", "inputs_match",
                                             "inputs_differ", "summary", "warnings", NULL };
        char zWhere[256];
        for (t = 0; azTop[t]; t++) {
            snprintf(zWhere, sizeof zWhere, "eager %s, compiled %s: '%s'", azLayout[iE],
                     azLayout[iC], azTop[t]);
            cr_expect(json_equal(json_object_get(pRef, azTop[t]), json_object_get(pDoc, azTop[t])),
                      "%s differs from the contiguous pair's", zWhere);
        }
        cr_assert_eq(json_array_size(pTensors), json_array_size(pRefTensors));
        for (t = 0; t < json_array_size(pRefTensors); t++) {
            json_t *pA = json_array_get(pRefTensors, t), *pB = json_array_get(pTensors, t);
            json_t *pJA = json_object_get(pA, "judgement"), *pJB = json_object_get(pB, "judgement");
            json_t *pA2 = json_deep_copy(pA), *pB2 = json_deep_copy(pB);
            snprintf(zWhere, sizeof zWhere, "eager %s, compiled %s, tensor %s", azLayout[iE],
                     azLayout[iC], str_of(pA, "name"));
            json_object_del(pA2, "judgement");
            json_object_del(pB2, "judgement");
            expect_same_object(pA2, pB2, azLooseTensor, 1e-12, zWhere);
            cr_expect_eq(json_is_object(pJA), json_is_object(pJB), "%s: judged on one side only",
                         zWhere);
            if (json_is_object(pJA) && json_is_object(pJB))
                expect_same_object(pJA, pJB, azLooseJudgement, 0x1p-30, zWhere);
            json_decref(pA2);
            json_decref(pB2);
        }
        json_decref(pDoc);
    }
    json_decref(pRef);
}

/* ---- 2. chunks never written ---------------------------------------------------------- */

Test(layouts, unwritten_chunks_read_as_the_fill_value)
{
    /* eager: contiguous, zeros in the box [64, 128) x [48, 96); compiled: gzip chunks of
     * 64 x 48, that one chunk never written (fill value 0, then 2) */
    run_h5py(
        "import sys, h5py, numpy as np\n"
        "d = sys.argv[1]\n"
        "x = np.arange(300 * 130, dtype=np.float32).reshape(300, 130) * 0.25 - 77.0\n"
        "x[64:128, 48:96] = 0\n"
        "with h5py.File(d + '/e.h5', 'w') as f:\n"
        "    f.attrs['parity_format'] = 1\n"
        "    f.create_dataset('t', data=x)\n"
        "for name, fill in (('c0.h5', 0.0), ('c2.h5', 2.0)):\n"
        "    with h5py.File(d + '/' + name, 'w') as f:\n"
        "        f.attrs['parity_format'] = 1\n"
        "        t = f.create_dataset('t', shape=x.shape, dtype=np.float32, chunks=(64, 48),\n"
        "                             compression='gzip', shuffle=True, fillvalue=fill)\n"
        "        for r in range(0, 300, 64):\n"
        "            for c in range(0, 130, 48):\n"
        "                if (r, c) != (64, 48):\n"
        "                    t[r:r + 64, c:c + 48] = x[r:r + 64, c:c + 48]\n"
        "        assert t.id.get_num_chunks() == 5 * 3 - 1\n");
    {
        json_t *pDoc = diff(tmp_path("e.h5"), tmp_path("c0.h5"), 0), *pT = tensor_named(pDoc, "/t");
        cr_expect_eq(int_of(pT, "elements"), 300 * 130);
        cr_expect_eq(int_of(pT, "bit_differences"), 0);
        json_decref(pDoc);
    }
    {
        json_t *pDoc = diff(tmp_path("e.h5"), tmp_path("c2.h5"), 1), *pT = tensor_named(pDoc, "/t");
        json_t *pSlice = json_object_get(pT, "affected_slice");
        cr_expect_eq(int_of(pT, "mismatches"), 64 * 48);
        cr_expect_eq(int_of(pT, "bit_differences"), 64 * 48);
        cr_expect_eq(json_integer_value(json_array_get(json_array_get(pSlice, 0), 0)), 64);
        cr_expect_eq(json_integer_value(json_array_get(json_array_get(pSlice, 0), 1)), 128);
        cr_expect_eq(json_integer_value(json_array_get(json_array_get(pSlice, 1), 0)), 48);
        cr_expect_eq(json_integer_value(json_array_get(json_array_get(pSlice, 1), 1)), 96);
        cr_expect_eq(json_real_value(json_object_get(pT, "max_abs_err")), 2.0);
        json_decref(pDoc);
    }
}
