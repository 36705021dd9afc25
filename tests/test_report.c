/*
 * test_report.c - tests of the report writers (reports/): diff results are built by hand
 * for each interesting case (pass, fail with a slice, error, missing tensors, rank 0,
 * zero-size, non-finite figures, odd attributes and names), then the JSON document is
 * inspected through jansson and the text report through its key lines.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "reports/report.h"

/* ---- building results by hand --------------------------------------------------- */

static parity_tensor_result make_tensor(const char *zName, const char *zOp, parity_status st,
                                        int rank, const uint64_t *aDim)
{
    parity_tensor_result t;
    memset(&t, 0, sizeof t);
    t.zName = (char *)zName;
    t.zOp = (char *)zOp;
    t.status = st;
    t.dtype = t.dtypeCompiled = PARITY_DT_F32;
    t.rank = t.rankCompiled = rank;
    if (rank > 0) {   /* aDim may be NULL for scalars */
        memcpy(t.aDim, aDim, sizeof(uint64_t) * (size_t)rank);
        memcpy(t.aDimCompiled, aDim, sizeof(uint64_t) * (size_t)rank);
    }
    t.tol.atol = 1e-5;
    t.tol.rtol = 1.3e-6;
    return t;
}

/* Stats of a tensor whose every element passed, worst at linear index 4. */
static void give_clean_stats(parity_tensor_result *pT, uint64_t nElem)
{
    pT->hasStats = 1;
    pT->stats.nElem = nElem;
    pT->stats.maxAbsErr = 1e-7;
    pT->stats.maxRelErr = 1e-8;
    pT->stats.sumSqRef = 1.0;
    pT->stats.worstScore = 0.25;
    pT->stats.worstLinear = nElem > 4 ? 4 : 0;
    pT->stats.aUlpHist[0] = nElem;
}

/* The failing /layer1/out of the fixtures: [4, 128], 12 mismatches in [0:4, 96:100]. */
static parity_tensor_result make_failing(void)
{
    static const uint64_t aDim[] = { 4, 128 };
    parity_tensor_result t = make_tensor("/layer1/out", "aten::mm", PARITY_ST_FAIL, 2, aDim);
    t.hasOrder = 1;
    t.iOrder = 7;
    t.hasStats = 1;
    t.stats.nElem = 512;
    t.stats.nMismatch = 12;
    t.stats.nBitDiff = 12;
    t.stats.maxAbsErr = 0.0015;
    t.stats.maxRelErr = 0.021;
    t.stats.maxUlp = 4100;
    t.stats.sumSqDiff = 4.0;
    t.stats.sumSqRef = 16.0;
    t.stats.worstScore = 3.25;
    t.stats.worstLinear = 1 * 128 + 97;
    t.stats.aSliceLo[0] = 0;
    t.stats.aSliceHi[0] = 4;
    t.stats.aSliceLo[1] = 96;
    t.stats.aSliceHi[1] = 100;
    t.stats.aUlpHist[0] = 500;
    t.stats.aUlpHist[1] = 3;
    t.stats.aUlpHist[3] = 5;
    t.stats.aUlpHist[13] = 4;
    t.tol.useUlp = 1;
    t.tol.maxUlp = 4;
    return t;
}

static parity_diff_result make_result(parity_tensor_result *aTensor, size_t nTensor,
                                      parity_verdict verdict, const char *zFirst)
{
    parity_diff_result r;
    memset(&r, 0, sizeof r);
    r.verdict = verdict;
    r.zEagerFile = (char *)"eager.h5";
    r.zCompiledFile = (char *)"compiled.h5";
    r.zFirstDivergence = (char *)zFirst;
    r.inputsMatch = 1;
    r.aTensor = aTensor;
    r.nTensor = nTensor;
    return r;
}

/* Root attributes of both sides and the identity keys that differ. */
static void set_roots(parity_diff_result *pRes, parity_attr *aEager, size_t nEager,
                      parity_attr *aCompiled, size_t nCompiled, char **azDiffers,
                      size_t nDiffers)
{
    pRes->aEagerRoot = aEager;
    pRes->nEagerRoot = nEager;
    pRes->aCompiledRoot = aCompiled;
    pRes->nCompiledRoot = nCompiled;
    pRes->azIdentityDiffers = azDiffers;
    pRes->nIdentityDiffers = nDiffers;
}

static parity_attr attr_string(const char *zName, char **azValue)
{
    parity_attr a = { (char *)zName, PARITY_ATTR_STRING, 0, 1, azValue, NULL, NULL, 0 };
    return a;
}

static parity_attr attr_float(const char *zName, double *aValue)
{
    parity_attr a = { (char *)zName, PARITY_ATTR_FLOAT, 0, 1, NULL, NULL, aValue, 0 };
    return a;
}

static parity_attr attr_int(const char *zName, int64_t *aValue)
{
    parity_attr a = { (char *)zName, PARITY_ATTR_INT, 0, 1, NULL, aValue, NULL, 0 };
    return a;
}

/* ---- inspecting output ---------------------------------------------------------- */

static json_t *build(const parity_diff_result *pRes)
{
    json_t *pDoc = parity_report_json_build(pRes);
    cr_assert_not_null(pDoc, "the JSON build failed");
    return pDoc;
}

static json_t *tensor_at(json_t *pDoc, size_t i)
{
    json_t *pTensors = json_object_get(pDoc, "tensors");
    cr_assert(json_is_array(pTensors));
    cr_assert_gt(json_array_size(pTensors), i);
    return json_array_get(pTensors, i);
}

/* The field must be present and JSON null (a dropped field is a failure). */
static void expect_null_field(json_t *pObj, const char *zKey)
{
    json_t *pVal = json_object_get(pObj, zKey);
    cr_assert_not_null(pVal, "field %s is missing", zKey);
    cr_assert(json_is_null(pVal), "field %s is not null", zKey);
}

static void expect_int_field(json_t *pObj, const char *zKey, json_int_t expected)
{
    json_t *pVal = json_object_get(pObj, zKey);
    cr_assert_not_null(pVal, "field %s is missing", zKey);
    cr_assert(json_is_integer(pVal), "field %s is not a JSON integer", zKey);
    cr_assert_eq(json_integer_value(pVal), expected, "%s = %lld, expected %lld", zKey,
                 (long long)json_integer_value(pVal), (long long)expected);
}

static void expect_string_field(json_t *pObj, const char *zKey, const char *zExpected)
{
    json_t *pVal = json_object_get(pObj, zKey);
    cr_assert(json_is_string(pVal), "field %s is not a string", zKey);
    cr_assert_str_eq(json_string_value(pVal), zExpected);
}

/* pArr must be the JSON array of the n integers aExpected. */
static void expect_int_array(json_t *pArr, const json_int_t *aExpected, size_t n)
{
    size_t i;
    cr_assert(json_is_array(pArr), "not an array");
    cr_assert_eq(json_array_size(pArr), n);
    for (i = 0; i < n; i++) {
        cr_assert(json_is_integer(json_array_get(pArr, i)));
        cr_assert_eq(json_integer_value(json_array_get(pArr, i)), aExpected[i]);
    }
}

/* The object's keys, in order, must be exactly azKey (NULL-terminated). */
static void expect_keys(json_t *pObj, const char *const *azKey)
{
    void *pIter = json_object_iter(pObj);
    size_t i;
    for (i = 0; azKey[i]; i++) {
        cr_assert_not_null(pIter, "key %s missing at the end", azKey[i]);
        cr_assert_str_eq(json_object_iter_key(pIter), azKey[i]);
        pIter = json_object_iter_next(pObj, pIter);
    }
    cr_assert_null(pIter, "extra key %s", pIter ? json_object_iter_key(pIter) : "");
}

/* The text report as a malloc'ed string. */
static char *text_report(const parity_diff_result *pRes)
{
    char *zText = NULL;
    size_t nText = 0;
    FILE *pOut = open_memstream(&zText, &nText);
    cr_assert_not_null(pOut);
    cr_assert_eq(parity_report_text(pRes, pOut), 0);
    fclose(pOut);
    return zText;
}

static int has_line(const char *zText, const char *zLine)
{
    size_t nLine = strlen(zLine);
    const char *z;
    for (z = zText; z && *z; z = strchr(z, '\n') ? strchr(z, '\n') + 1 : NULL)
        if (strncmp(z, zLine, nLine) == 0 && (z[nLine] == '\n' || z[nLine] == 0)) return 1;
    return 0;
}

static void expect_line(const char *zText, const char *zLine)
{
    cr_assert(has_line(zText, zLine), "line \"%s\" not in report:\n%s", zLine, zText);
}

static void expect_first_line(const char *zText, const char *zLine)
{
    size_t nLine = strlen(zLine);
    cr_assert(strncmp(zText, zLine, nLine) == 0 && zText[nLine] == '\n',
              "first line is not \"%s\":\n%s", zLine, zText);
}

static void expect_last_line(const char *zText, const char *zLine)
{
    size_t nText = strlen(zText), nLine = strlen(zLine);
    cr_assert(nText > nLine + 1 && zText[nText - 1] == '\n' &&
              zText[nText - nLine - 2] == '\n' &&
              strncmp(zText + nText - nLine - 1, zLine, nLine) == 0,
              "last line is not \"%s\":\n%s", zLine, zText);
}

static size_t count_entries(const char *zDir)
{
    DIR *pDir = opendir(zDir);
    struct dirent *pEnt;
    size_t n = 0;
    cr_assert_not_null(pDir);
    while ((pEnt = readdir(pDir)) != NULL)
        if (strcmp(pEnt->d_name, ".") != 0 && strcmp(pEnt->d_name, "..") != 0) n++;
    closedir(pDir);
    return n;
}

/* ---- JSON: document level ------------------------------------------------------- */

Test(report_json, passing_result)
{
    static const uint64_t aDim[] = { 2, 3 };
    parity_tensor_result aT[2];
    parity_diff_result r;
    json_t *pDoc, *pSummary, *pT;
    static const json_int_t aWorst[] = { 1, 1 }, aShape[] = { 2, 3 };

    aT[0] = make_tensor("/a", "aten::add", PARITY_ST_PASS, 2, aDim);
    aT[1] = make_tensor("/b", NULL, PARITY_ST_PASS, 2, aDim);
    give_clean_stats(&aT[0], 6);
    give_clean_stats(&aT[1], 6);
    r = make_result(aT, 2, PARITY_VERDICT_PASS, NULL);
    pDoc = build(&r);

    expect_int_field(pDoc, "parity_report_version", 1);
    expect_string_field(pDoc, "tool", "paritydiff");
    expect_string_field(pDoc, "eager", "eager.h5");
    expect_string_field(pDoc, "compiled", "compiled.h5");
    expect_string_field(pDoc, "verdict", "pass");
    expect_null_field(pDoc, "first_divergence");
    cr_assert(json_is_true(json_object_get(pDoc, "inputs_match")));
    cr_assert_eq(json_array_size(json_object_get(pDoc, "inputs_differ")), 0);
    cr_assert(json_is_false(json_object_get(json_object_get(pDoc, "options"), "strict")));

    pSummary = json_object_get(pDoc, "summary");
    expect_int_field(pSummary, "pass", 2);
    expect_int_field(pSummary, "fail", 0);
    expect_int_field(pSummary, "missing_in_eager", 0);
    expect_int_field(pSummary, "tensors", 2);

    pT = tensor_at(pDoc, 1);
    expect_string_field(pT, "name", "/b");
    expect_null_field(pT, "op");
    expect_null_field(pT, "order");
    expect_int_field(pT, "position", 1);
    expect_string_field(pT, "dtype", "float32");
    expect_string_field(pT, "compiled_dtype", "float32");
    expect_int_array(json_object_get(pT, "shape"), aShape, 2);
    expect_int_array(json_object_get(pT, "compiled_shape"), aShape, 2);
    expect_string_field(pT, "status", "pass");
    expect_int_field(pT, "elements", 6);
    expect_int_field(pT, "mismatches", 0);
    expect_int_array(json_object_get(pT, "worst_index"), aWorst, 2);
    expect_null_field(pT, "affected_slice");
    expect_null_field(json_object_get(pT, "tolerance"), "max_ulp");
    json_decref(pDoc);
}

Test(report_json, top_level_keys_in_documented_order)
{
    static const char *const azKey[] = {
        "parity_report_version", "tool", "eager", "compiled", "verdict", "error", "first_divergence",
        "inputs_match", "inputs_differ", "options", "identity", "telemetry", "warnings",
        "summary", "tensors", NULL
    };
    static const char *const azSummaryKey[] = {
        "pass", "fail", "error", "missing_in_compiled", "missing_in_eager", "shape_mismatch",
        "dtype_mismatch", "tensors", NULL
    };
    parity_diff_result r = make_result(NULL, 0, PARITY_VERDICT_PASS, NULL);
    json_t *pDoc = build(&r);
    expect_keys(pDoc, azKey);
    expect_keys(json_object_get(pDoc, "summary"), azSummaryKey);
    json_decref(pDoc);
}

Test(report_json, failing_tensor_with_slice)
{
    static const uint64_t aDim[] = { 3 };
    parity_tensor_result aT[2];
    parity_diff_result r;
    json_t *pDoc, *pT, *pSlice, *pHist, *pTol;
    static const json_int_t aWorst[] = { 1, 97 }, aBox0[] = { 0, 4 }, aBox1[] = { 96, 100 };
    static const json_int_t aBucket[][3] = {
        { 0, 0, 500 }, { 1, 1, 3 }, { 4, 7, 5 }, { 4096, 8191, 4 }
    };
    size_t i;

    aT[0] = make_tensor("/x", NULL, PARITY_ST_PASS, 1, aDim);
    give_clean_stats(&aT[0], 3);
    aT[0].isInput = 1;
    aT[1] = make_failing();
    r = make_result(aT, 2, PARITY_VERDICT_FAIL, "/layer1/out");
    pDoc = build(&r);

    expect_string_field(pDoc, "verdict", "fail");
    expect_string_field(pDoc, "first_divergence", "/layer1/out");
    cr_assert(json_is_true(json_object_get(tensor_at(pDoc, 0), "is_input")));
    pT = tensor_at(pDoc, 1);
    cr_assert(json_is_false(json_object_get(pT, "is_input")));
    expect_string_field(pT, "op", "aten::mm");
    expect_int_field(pT, "order", 7);
    expect_string_field(pT, "status", "fail");
    expect_null_field(pT, "cause");
    expect_null_field(pT, "message");
    expect_int_field(pT, "elements", 512);
    expect_int_field(pT, "mismatches", 12);
    expect_int_field(pT, "bit_differences", 12);
    expect_int_field(pT, "max_ulp", 4100);
    cr_assert_float_eq(json_real_value(json_object_get(pT, "rel_l2")), 0.5, 1e-15);
    cr_assert_float_eq(json_real_value(json_object_get(pT, "worst_score")), 3.25, 1e-15);
    expect_int_array(json_object_get(pT, "worst_index"), aWorst, 2);

    pSlice = json_object_get(pT, "affected_slice");
    cr_assert_eq(json_array_size(pSlice), 2);
    expect_int_array(json_array_get(pSlice, 0), aBox0, 2);
    expect_int_array(json_array_get(pSlice, 1), aBox1, 2);

    pHist = json_object_get(pT, "ulp_histogram");
    cr_assert_eq(json_array_size(pHist), 4, "empty buckets must be omitted");
    for (i = 0; i < 4; i++) {
        json_t *pBucket = json_array_get(pHist, i);
        expect_int_field(pBucket, "min", aBucket[i][0]);
        expect_int_field(pBucket, "max", aBucket[i][1]);
        expect_int_field(pBucket, "count", aBucket[i][2]);
    }

    pTol = json_object_get(pT, "tolerance");
    expect_int_field(pTol, "max_ulp", 4);
    cr_assert_float_eq(json_real_value(json_object_get(pTol, "atol")), 1e-5, 1e-20);
    cr_assert(json_is_false(json_object_get(pTol, "exact")));
    expect_int_field(json_object_get(pDoc, "summary"), "fail", 1);
    json_decref(pDoc);
}

Test(report_json, highest_ulp_bucket_fits_int64)
{
    parity_tensor_result t = make_failing();
    parity_diff_result r = make_result(&t, 1, PARITY_VERDICT_FAIL, "/layer1/out");
    json_t *pDoc, *pHist, *pLast;

    t.stats.aUlpHist[63] = 1;
    pDoc = build(&r);
    pHist = json_object_get(tensor_at(pDoc, 0), "ulp_histogram");
    pLast = json_array_get(pHist, json_array_size(pHist) - 1);
    expect_int_field(pLast, "min", (json_int_t)1 << 62);
    expect_int_field(pLast, "max", INT64_MAX);
    json_decref(pDoc);
}

Test(report_json, error_tensor_has_null_stats)
{
    static const char *const azStat[] = {
        "mismatches", "nan_mismatches", "signed_zero_mismatches", "bit_differences",
        "max_abs_err", "max_rel_err", "max_ulp", "rel_l2", "worst_index", "worst_score",
        "affected_slice", "ulp_histogram", NULL
    };
    static const uint64_t aDim[] = { 2, 3 };
    parity_tensor_result t = make_tensor("/broken", "aten::conv", PARITY_ST_ERROR, 2, aDim);
    parity_diff_result r;
    json_t *pDoc, *pT;
    int i;

    t.dtype = PARITY_DT_INVALID;
    t.zMessage = (char *)"unsupported datatype";
    r = make_result(&t, 1, PARITY_VERDICT_ERROR, "/broken");
    pDoc = build(&r);
    expect_string_field(pDoc, "verdict", "error");
    pT = tensor_at(pDoc, 0);
    expect_string_field(pT, "status", "error");
    expect_string_field(pT, "message", "unsupported datatype");
    expect_null_field(pT, "dtype");
    expect_string_field(pT, "compiled_dtype", "float32");
    expect_int_field(pT, "elements", 6);
    for (i = 0; azStat[i]; i++) expect_null_field(pT, azStat[i]);
    expect_int_field(json_object_get(pDoc, "summary"), "error", 1);
    json_decref(pDoc);
}

Test(report_json, error_without_compiled_side)
{
    static const uint64_t aDim[] = { 2 };
    parity_tensor_result t = make_tensor("/broken", NULL, PARITY_ST_ERROR, 1, aDim);
    parity_diff_result r = make_result(&t, 1, PARITY_VERDICT_ERROR, "/broken");
    json_t *pDoc;
    char *zText;

    /* The engine marks "no compiled tensor" with rankCompiled -1, whatever the status. */
    t.rankCompiled = -1;
    t.dtypeCompiled = PARITY_DT_INVALID;
    pDoc = build(&r);
    expect_null_field(tensor_at(pDoc, 0), "compiled_shape");
    expect_null_field(tensor_at(pDoc, 0), "compiled_dtype");
    json_decref(pDoc);
    zText = text_report(&r);
    expect_line(zText, "ERROR /broken float32 [2]");
    free(zText);
}

Test(report_json, missing_tensors)
{
    static const uint64_t aDim[] = { 5 }, aDimCompiled[] = { 7, 2 };
    parity_tensor_result aT[2];
    parity_diff_result r;
    json_t *pDoc, *pT;
    static const json_int_t aShape[] = { 5 }, aShapeCompiled[] = { 7, 2 };

    aT[0] = make_tensor("/only_eager", "aten::relu", PARITY_ST_MISSING_IN_COMPILED, 1, aDim);
    aT[0].dtypeCompiled = PARITY_DT_INVALID;
    aT[0].rankCompiled = 0;
    /* Missing in eager: the eager fields are empty, the compiled ones hold the tensor. */
    aT[1] = make_tensor("/only_compiled", NULL, PARITY_ST_MISSING_IN_EAGER, 0, aDim);
    aT[1].dtype = aT[1].dtypeCompiled = PARITY_DT_BF16;
    aT[1].rankCompiled = 2;
    memcpy(aT[1].aDimCompiled, aDimCompiled, sizeof aDimCompiled);
    r = make_result(aT, 2, PARITY_VERDICT_PASS, NULL);
    pDoc = build(&r);

    pT = tensor_at(pDoc, 0);
    expect_string_field(pT, "status", "missing_in_compiled");
    expect_string_field(pT, "dtype", "float32");
    expect_null_field(pT, "compiled_dtype");
    expect_null_field(pT, "compiled_shape");
    expect_int_array(json_object_get(pT, "shape"), aShape, 1);
    expect_int_field(pT, "elements", 5);
    expect_null_field(pT, "mismatches");

    pT = tensor_at(pDoc, 1);
    expect_string_field(pT, "status", "missing_in_eager");
    expect_string_field(pT, "dtype", "bfloat16");
    expect_string_field(pT, "compiled_dtype", "bfloat16");
    expect_int_array(json_object_get(pT, "shape"), aShapeCompiled, 2);
    expect_int_array(json_object_get(pT, "compiled_shape"), aShapeCompiled, 2);
    expect_int_field(pT, "elements", 14);

    expect_int_field(json_object_get(pDoc, "summary"), "missing_in_compiled", 1);
    expect_int_field(json_object_get(pDoc, "summary"), "missing_in_eager", 1);
    json_decref(pDoc);
}

Test(report_json, rank0_tensor)
{
    parity_tensor_result t = make_tensor("/loss", "aten::mean", PARITY_ST_FAIL, 0, NULL);
    parity_diff_result r;
    json_t *pDoc, *pT;

    t.hasStats = 1;
    t.stats.nElem = 1;
    t.stats.nMismatch = 1;
    t.stats.worstScore = 9.0;
    t.stats.worstLinear = 0;
    r = make_result(&t, 1, PARITY_VERDICT_FAIL, "/loss");
    pDoc = build(&r);
    pT = tensor_at(pDoc, 0);
    expect_int_array(json_object_get(pT, "shape"), NULL, 0);
    expect_int_array(json_object_get(pT, "worst_index"), NULL, 0);
    expect_int_array(json_object_get(pT, "affected_slice"), NULL, 0);
    expect_int_field(pT, "elements", 1);
    json_decref(pDoc);
}

Test(report_json, zero_size_tensor)
{
    static const uint64_t aDim[] = { 0, 3 };
    parity_tensor_result t = make_tensor("/empty", NULL, PARITY_ST_PASS, 2, aDim);
    parity_diff_result r;
    json_t *pDoc, *pT;
    static const json_int_t aShape[] = { 0, 3 };

    t.hasStats = 1;
    t.stats.worstScore = -1;
    r = make_result(&t, 1, PARITY_VERDICT_PASS, NULL);
    pDoc = build(&r);
    pT = tensor_at(pDoc, 0);
    expect_int_array(json_object_get(pT, "shape"), aShape, 2);
    expect_int_field(pT, "elements", 0);
    expect_int_field(pT, "mismatches", 0);
    expect_null_field(pT, "worst_index");
    expect_null_field(pT, "worst_score");
    expect_null_field(pT, "affected_slice");
    cr_assert_eq(json_array_size(json_object_get(pT, "ulp_histogram")), 0);
    json_decref(pDoc);
}

Test(report_json, non_finite_numbers_become_null_not_dropped)
{
    parity_tensor_result t = make_failing();
    parity_diff_result r = make_result(&t, 1, PARITY_VERDICT_FAIL, "/layer1/out");
    json_t *pDoc, *pT;
    char *zDump;

    t.stats.maxAbsErr = NAN;
    t.stats.maxRelErr = INFINITY;
    t.stats.sumSqRef = 0.0;      /* rel_l2 = +Inf */
    t.stats.worstScore = INFINITY;
    t.stats.nNanMismatch = 3;
    t.tol.atol = INFINITY;
    pDoc = build(&r);
    pT = tensor_at(pDoc, 0);
    expect_null_field(pT, "max_abs_err");
    expect_null_field(pT, "max_rel_err");
    expect_null_field(pT, "rel_l2");
    expect_null_field(pT, "worst_score");
    expect_null_field(json_object_get(pT, "tolerance"), "atol");
    cr_assert(json_is_array(json_object_get(pT, "worst_index")));
    expect_int_field(pT, "nan_mismatches", 3);

    /* What a consumer parses: the serialized text says null too. */
    zDump = json_dumps(pDoc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    cr_assert_not_null(zDump);
    cr_assert_not_null(strstr(zDump, "\"max_abs_err\": null"));
    cr_assert_not_null(strstr(zDump, "\"rel_l2\": null"));
    free(zDump);
    json_decref(pDoc);
}

Test(report_json, counts_above_int64_are_clamped)
{
    parity_tensor_result t = make_failing();
    parity_diff_result r = make_result(&t, 1, PARITY_VERDICT_FAIL, "/layer1/out");
    json_t *pDoc;

    t.stats.nMismatch = UINT64_MAX;
    t.stats.maxUlp = (uint64_t)INT64_MAX + 5;
    pDoc = build(&r);
    expect_int_field(tensor_at(pDoc, 0), "mismatches", INT64_MAX);
    expect_int_field(tensor_at(pDoc, 0), "max_ulp", INT64_MAX);
    json_decref(pDoc);
}

/* Each cause under its documented name (diff/REPORT.md), and null when there is none. */
Test(report_json, cause_names)
{
    static const uint64_t aDim[] = { 2 };
    static const char *const azName[] = { NULL, "local", "propagated", "unknown" };
    parity_tensor_result aT[4];
    parity_diff_result r;
    json_t *pDoc;
    size_t i;

    for (i = 0; i < 4; i++) {
        aT[i] = make_tensor("/t", "aten::relu", i ? PARITY_ST_FAIL : PARITY_ST_PASS, 1, aDim);
        aT[i].cause = (parity_cause)i;
    }
    cr_assert_eq(aT[0].cause, PARITY_CAUSE_NONE);
    cr_assert_eq(aT[3].cause, PARITY_CAUSE_UNKNOWN);
    r = make_result(aT, 4, PARITY_VERDICT_FAIL, "/t");
    pDoc = build(&r);
    for (i = 0; i < 4; i++) {
        if (azName[i]) expect_string_field(tensor_at(pDoc, i), "cause", azName[i]);
        else expect_null_field(tensor_at(pDoc, i), "cause");
        if (azName[i]) cr_assert_str_eq(parity_cause_name(aT[i].cause), azName[i]);
        else cr_assert_null(parity_cause_name(aT[i].cause));
    }
    json_decref(pDoc);
}

Test(report_json, every_tensor_has_the_same_keys)
{
    static const char *const azKey[] = {
        "name", "op", "order", "position", "dtype", "compiled_dtype", "shape",
        "compiled_shape", "status", "cause", "message", "is_input", "warnings", "tolerance",
        "elements", "mismatches", "nan_mismatches", "signed_zero_mismatches",
        "bit_differences", "max_abs_err", "max_rel_err", "max_ulp", "rel_l2", "worst_index",
        "worst_score", "affected_slice", "ulp_histogram", "judgement", "model_note", "rule", NULL
    };
    static const char *const azTolKey[] = {
        "atol", "rtol", "max_ulp", "exact", "signed_zeros", NULL
    };
    static const uint64_t aDim[] = { 4 };
    parity_tensor_result aT[PARITY_REPORT_NSTATUS];
    parity_diff_result r;
    json_t *pDoc;
    int st;

    for (st = 0; st < PARITY_REPORT_NSTATUS; st++)
        aT[st] = make_tensor("/t", NULL, (parity_status)st, 1, aDim);
    aT[PARITY_ST_PASS] = make_failing();
    aT[PARITY_ST_PASS].status = PARITY_ST_PASS;
    aT[PARITY_ST_FAIL] = make_failing();
    r = make_result(aT, PARITY_REPORT_NSTATUS, PARITY_VERDICT_ERROR, "/t");
    pDoc = build(&r);
    for (st = 0; st < PARITY_REPORT_NSTATUS; st++) {
        expect_keys(tensor_at(pDoc, (size_t)st), azKey);
        expect_keys(json_object_get(tensor_at(pDoc, (size_t)st), "tolerance"), azTolKey);
        expect_string_field(tensor_at(pDoc, (size_t)st), "status",
                            parity_status_name((parity_status)st));
    }
    json_decref(pDoc);
}

Test(report_json, identity_and_telemetry_are_split)
{
    const char *zIdKey = parity_identity_keys[0];
    const char *zTelFloat = parity_telemetry_keys[0];
    const char *zTelInt = parity_telemetry_keys[1];
    char *azModelE[] = { (char *)"resnet" }, *azModelC[] = { (char *)"resnet-2" };
    char *azNote[] = { (char *)"hello" };
    double aTimeE[] = { 1.5 }, aTimeC[] = { 3.0 };
    int64_t aCount[] = { 2 };
    char *azDiffers[] = { (char *)zIdKey };
    parity_attr aEager[4], aCompiled[2];
    parity_diff_result r = make_result(NULL, 0, PARITY_VERDICT_PASS, NULL);
    json_t *pDoc, *pId, *pTel;

    cr_assert(zTelFloat && zTelInt && zIdKey);
    aEager[0] = attr_string(zIdKey, azModelE);
    aEager[1] = attr_float(zTelFloat, aTimeE);
    aEager[2] = attr_string("custom_note", azNote);   /* neither list: identity side */
    aEager[3] = attr_int(zTelInt, aCount);
    aCompiled[0] = attr_string(zIdKey, azModelC);
    aCompiled[1] = attr_float(zTelFloat, aTimeC);
    set_roots(&r, aEager, 4, aCompiled, 2, azDiffers, 1);
    pDoc = build(&r);

    pId = json_object_get(pDoc, "identity");
    expect_string_field(json_object_get(pId, "eager"), zIdKey, "resnet");
    expect_string_field(json_object_get(pId, "eager"), "custom_note", "hello");
    expect_string_field(json_object_get(pId, "compiled"), zIdKey, "resnet-2");
    cr_assert_eq(json_object_size(json_object_get(pId, "eager")), 2);
    cr_assert_eq(json_object_size(json_object_get(pId, "compiled")), 1);
    cr_assert_null(json_object_get(json_object_get(pId, "eager"), zTelFloat));
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(pId, "differs"), 0)),
                     zIdKey);

    pTel = json_object_get(pDoc, "telemetry");
    cr_assert_eq(json_object_size(json_object_get(pTel, "eager")), 2);
    cr_assert_float_eq(json_real_value(json_object_get(json_object_get(pTel, "eager"),
                                                       zTelFloat)), 1.5, 1e-15);
    expect_int_field(json_object_get(pTel, "eager"), zTelInt, 2);
    cr_assert_float_eq(json_real_value(json_object_get(json_object_get(pTel, "compiled"),
                                                       zTelFloat)), 3.0, 1e-15);
    cr_assert_null(json_object_get(json_object_get(pTel, "eager"), zIdKey));
    json_decref(pDoc);
}

Test(report_json, attribute_value_kinds)
{
    char *azList[] = { (char *)"a", (char *)"b" };
    int64_t aInts[] = { 1, -2, 3 };
    double aNan[] = { NAN }, aFloats[] = { 2.5, INFINITY };
    parity_attr aAttr[6];
    parity_diff_result r = make_result(NULL, 0, PARITY_VERDICT_PASS, NULL);
    json_t *pDoc, *pEager, *pArr;
    static const json_int_t aExpected[] = { 1, -2, 3 };

    aAttr[0] = attr_float("nan_value", aNan);
    aAttr[1] = attr_int("ints", aInts);
    aAttr[1].isArray = 1;
    aAttr[1].n = 3;
    aAttr[2] = attr_string("strs", azList);
    aAttr[2].isArray = 1;
    aAttr[2].n = 2;
    aAttr[3] = attr_float("floats", aFloats);
    aAttr[3].isArray = 1;
    aAttr[3].n = 2;
    aAttr[4] = attr_int("compound", NULL);
    aAttr[4].kind = PARITY_ATTR_OTHER;
    aAttr[5] = attr_int("empty", NULL);
    aAttr[5].isArray = 1;
    aAttr[5].n = 0;
    set_roots(&r, aAttr, 6, NULL, 0, NULL, 0);
    pDoc = build(&r);
    pEager = json_object_get(json_object_get(pDoc, "identity"), "eager");

    expect_null_field(pEager, "nan_value");
    expect_int_array(json_object_get(pEager, "ints"), aExpected, 3);
    pArr = json_object_get(pEager, "strs");
    cr_assert_eq(json_array_size(pArr), 2);
    cr_assert_str_eq(json_string_value(json_array_get(pArr, 1)), "b");
    pArr = json_object_get(pEager, "floats");
    cr_assert_eq(json_array_size(pArr), 2, "a non-finite item must stay in the array");
    cr_assert_float_eq(json_real_value(json_array_get(pArr, 0)), 2.5, 1e-15);
    cr_assert(json_is_null(json_array_get(pArr, 1)));
    expect_null_field(pEager, "compound");
    cr_assert(json_is_array(json_object_get(pEager, "empty")));
    cr_assert_eq(json_array_size(json_object_get(pEager, "empty")), 0);
    json_decref(pDoc);
}

Test(report_json, invalid_utf8_is_repaired_not_dropped)
{
    static const uint64_t aDim[] = { 1 };
    parity_tensor_result t = make_tensor("/bad\xff" "name", "op\xc3", PARITY_ST_PASS, 1, aDim);
    char *azValue[] = { (char *)"caf\xc3\xa9 \xed\xa0\x80" };   /* valid é, then a surrogate */
    parity_attr attr = attr_string("note\xfe", azValue);
    parity_diff_result r = make_result(&t, 1, PARITY_VERDICT_PASS, NULL);
    json_t *pDoc, *pEager;

    give_clean_stats(&t, 1);
    set_roots(&r, &attr, 1, NULL, 0, NULL, 0);
    pDoc = build(&r);
    expect_string_field(tensor_at(pDoc, 0), "name", "/bad\xef\xbf\xbdname");
    expect_string_field(tensor_at(pDoc, 0), "op", "op\xef\xbf\xbd");
    pEager = json_object_get(json_object_get(pDoc, "identity"), "eager");
    expect_string_field(pEager, "note\xef\xbf\xbd",
                        "caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    json_decref(pDoc);
}

/* ---- JSON: writing -------------------------------------------------------------- */

Test(report_json, atomic_write_replaces_file_and_leaves_no_temp)
{
    char zDir[] = "/tmp/test_report.XXXXXX";
    char zPath[64], zErr[PARITY_ERR_LEN];
    parity_tensor_result t = make_failing();
    parity_diff_result r = make_result(&t, 1, PARITY_VERDICT_FAIL, "/layer1/out");
    json_t *pDoc;
    json_error_t err;
    struct stat st;
    mode_t mask;
    FILE *pOld;

    cr_assert_not_null(mkdtemp(zDir));
    snprintf(zPath, sizeof zPath, "%s/report.json", zDir);
    pOld = fopen(zPath, "w");   /* an old report to be replaced */
    cr_assert_not_null(pOld);
    fputs("old and not JSON", pOld);
    fclose(pOld);

    cr_assert_eq(parity_report_json(&r, zPath, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(count_entries(zDir), 1, "a temporary file was left behind");
    pDoc = json_load_file(zPath, 0, &err);
    cr_assert_not_null(pDoc, "the report does not parse: %s", err.text);
    expect_string_field(pDoc, "verdict", "fail");
    expect_string_field(pDoc, "first_divergence", "/layer1/out");
    json_decref(pDoc);

    mask = umask(0);
    umask(mask);
    cr_assert_eq(stat(zPath, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0666 & ~mask, "mode %o", st.st_mode & 0777);
    unlink(zPath);
    rmdir(zDir);
}

Test(report_json, failed_write_removes_temp_and_reports_one_line)
{
    char zDir[] = "/tmp/test_report.XXXXXX";
    char zPath[64], zErr[PARITY_ERR_LEN];
    parity_diff_result r = make_result(NULL, 0, PARITY_VERDICT_PASS, NULL);

    cr_assert_not_null(mkdtemp(zDir));
    /* The target is a non-empty directory: rename fails after the temp file is written. */
    snprintf(zPath, sizeof zPath, "%s/sub", zDir);
    cr_assert_eq(mkdir(zPath, 0700), 0);
    snprintf(zPath, sizeof zPath, "%s/sub/keep", zDir);
    cr_assert_eq(mkdir(zPath, 0700), 0);
    snprintf(zPath, sizeof zPath, "%s/sub", zDir);

    zErr[0] = 0;
    cr_assert_eq(parity_report_json(&r, zPath, zErr, sizeof zErr), -1);
    cr_assert_neq(zErr[0], 0);
    cr_assert_null(strchr(zErr, '\n'), "the reason must be one line: %s", zErr);
    cr_assert_eq(count_entries(zDir), 1, "the temporary file was not removed");

    snprintf(zPath, sizeof zPath, "%s/no/such/dir/report.json", zDir);
    cr_assert_eq(parity_report_json(&r, zPath, zErr, sizeof zErr), -1);
    cr_assert_not_null(strstr(zErr, zPath), "the reason should name the path: %s", zErr);

    snprintf(zPath, sizeof zPath, "%s/sub/keep", zDir);
    rmdir(zPath);
    snprintf(zPath, sizeof zPath, "%s/sub", zDir);
    rmdir(zPath);
    rmdir(zDir);
}

Test(report_json, dash_writes_to_stdout)
{
    parity_tensor_result t = make_failing();
    parity_diff_result r = make_result(&t, 1, PARITY_VERDICT_FAIL, "/layer1/out");
    char zErr[PARITY_ERR_LEN];
    FILE *pCapture = tmpfile();
    json_t *pDoc;
    json_error_t err;
    int fdSaved, rc;

    cr_assert_not_null(pCapture);
    fflush(stdout);
    fdSaved = dup(STDOUT_FILENO);
    cr_assert_geq(fdSaved, 0);
    dup2(fileno(pCapture), STDOUT_FILENO);
    rc = parity_report_json(&r, "-", zErr, sizeof zErr);
    fflush(stdout);
    dup2(fdSaved, STDOUT_FILENO);
    close(fdSaved);
    cr_assert_eq(rc, 0, "%s", zErr);

    rewind(pCapture);
    pDoc = json_loadf(pCapture, 0, &err);
    cr_assert_not_null(pDoc, "stdout does not hold one JSON document: %s", err.text);
    expect_string_field(pDoc, "verdict", "fail");
    json_decref(pDoc);
    fclose(pCapture);
}

/* ---- text report ---------------------------------------------------------------- */

Test(report_text, failing_result)
{
    static const uint64_t aDim[] = { 3 };
    parity_tensor_result aT[3];
    char *azInputs[] = { (char *)"/x" };
    char *azWarn[] = { (char *)"compared under the default tolerance" };
    /* The engine also copies tensor warnings into the global list as "name: warning". */
    char *azGlobal[] = { (char *)"input /y names no tensor",
                         (char *)"/layer1/out: compared under the default tolerance" };
    char *azDiffers[] = { (char *)"model" };
    char *azModelE[] = { (char *)"resnet" }, *azModelC[] = { (char *)"resnet-2" };
    double aTimeE[] = { 1.5 }, aTimeC[] = { 3.0 };
    parity_attr aEager[2], aCompiled[2];
    parity_diff_result r;
    char *zText, zLine[160];

    aT[0] = make_tensor("/x", NULL, PARITY_ST_FAIL, 1, aDim);
    aT[0].isInput = 1;
    aT[0].hasStats = 1;
    aT[0].stats.nElem = 3;
    aT[0].stats.nMismatch = 1;
    aT[0].stats.aSliceLo[0] = 2;
    aT[0].stats.aSliceHi[0] = 3;
    aT[0].stats.worstLinear = 2;
    aT[0].tol.exact = 1;
    aT[1] = make_failing();
    aT[1].azWarning = azWarn;
    aT[1].nWarning = 1;
    aT[2] = make_tensor("/z", "aten::relu", PARITY_ST_PASS, 1, aDim);
    give_clean_stats(&aT[2], 3);
    r = make_result(aT, 3, PARITY_VERDICT_FAIL, "/layer1/out");
    r.inputsMatch = 0;
    r.azInputDiffers = azInputs;
    r.nInputDiffers = 1;
    r.azWarning = azGlobal;
    r.nWarning = 2;
    aEager[0] = attr_string("model", azModelE);
    aEager[1] = attr_float(parity_telemetry_keys[0], aTimeE);
    aCompiled[0] = attr_string("model", azModelC);
    aCompiled[1] = attr_float(parity_telemetry_keys[0], aTimeC);
    set_roots(&r, aEager, 2, aCompiled, 2, azDiffers, 1);

    zText = text_report(&r);
    expect_first_line(zText, "verdict: FAIL (3 tensors, 1 pass, 2 fail)");
    expect_line(zText, "first divergence: /layer1/out (aten::mm)");
    expect_line(zText, "inputs differ: /x");
    expect_line(zText, "warning: input /y names no tensor");
    expect_line(zText, "FAIL /x float32 [3] [input]");
    expect_line(zText, "  worst [2] score 0; affected slice [2:3]");
    expect_line(zText, "  tolerance exact");
    expect_line(zText, "FAIL /layer1/out (aten::mm) float32 [4, 128]");
    expect_line(zText, "  mismatches 12 of 512; max abs 0.0015, max rel 0.021, max ulp 4100, "
                       "rel l2 0.5");
    expect_line(zText, "  worst [1, 97] score 3.25; affected slice [0:4, 96:100]");
    expect_line(zText, "  tolerance atol 1e-05, rtol 1.3e-06, max ulp 4");
    expect_line(zText, "  warning: compared under the default tolerance");
    cr_assert_null(strstr(strstr(zText, "compared under") + 1, "compared under"),
                   "a tensor warning must be shown once, in its block:\n%s", zText);
    cr_assert(!strstr(zText, "/z"), "a clean passing tensor must not get a block");
    expect_line(zText, "identity differs (eager | compiled):");
    expect_line(zText, "  model: resnet | resnet-2");
    expect_line(zText, "telemetry (eager | compiled):");
    snprintf(zLine, sizeof zLine, "  %s: 1.5 | 3", parity_telemetry_keys[0]);
    expect_line(zText, zLine);
    expect_last_line(zText, "1 of 3 tensors passed");
    /* The first divergence block comes after the input's: execution order is kept. */
    cr_assert_lt(strstr(zText, "FAIL /x"), strstr(zText, "FAIL /layer1/out"));
    free(zText);
}

Test(report_text, passing_tensor_with_warning_shows_only_the_warning)
{
    static const uint64_t aDim[] = { 0 };
    char *azWarn[] = { (char *)"zero-size tensor: nothing to compare" };
    parity_tensor_result t = make_tensor("/empty", NULL, PARITY_ST_PASS, 1, aDim);
    parity_diff_result r = make_result(&t, 1, PARITY_VERDICT_PASS, NULL);
    char *zText;

    t.hasStats = 1;
    t.stats.worstScore = -1;
    t.azWarning = azWarn;
    t.nWarning = 1;
    zText = text_report(&r);
    expect_line(zText, "PASS /empty float32 [0]");
    expect_line(zText, "  warning: zero-size tensor: nothing to compare");
    cr_assert_null(strstr(zText, "mismatches"), "no figures for a passing tensor:\n%s", zText);
    expect_last_line(zText, "1 of 1 tensors passed");
    free(zText);
}

Test(report_text, passing_result_is_short)
{
    static const uint64_t aDim[] = { 2 };
    parity_tensor_result aT[2];
    parity_diff_result r;
    char *zText;

    aT[0] = make_tensor("/a", NULL, PARITY_ST_PASS, 1, aDim);
    aT[1] = make_tensor("/b", NULL, PARITY_ST_PASS, 1, aDim);
    give_clean_stats(&aT[0], 2);
    give_clean_stats(&aT[1], 2);
    r = make_result(aT, 2, PARITY_VERDICT_PASS, NULL);
    zText = text_report(&r);
    cr_assert_str_eq(zText, "verdict: PASS (2 tensors, 2 pass)\n"
                            "first divergence: none\n"
                            "\n"
                            "2 of 2 tensors passed\n");
    free(zText);
}

Test(report_text, mismatch_missing_error_and_rank0_blocks)
{
    static const uint64_t aDim[] = { 4, 8 }, aDimCompiled[] = { 4, 9 };
    parity_tensor_result aT[5];
    parity_diff_result r;
    char *zText;

    aT[0] = make_tensor("/y", "aten::view", PARITY_ST_SHAPE_MISMATCH, 2, aDim);
    memcpy(aT[0].aDimCompiled, aDimCompiled, sizeof aDimCompiled);
    aT[1] = make_tensor("/h", NULL, PARITY_ST_DTYPE_MISMATCH, 2, aDim);
    aT[1].dtypeCompiled = PARITY_DT_F16;
    aT[2] = make_tensor("/gone", NULL, PARITY_ST_MISSING_IN_COMPILED, 2, aDim);
    aT[2].rankCompiled = 0;
    aT[3] = make_tensor("/bad", NULL, PARITY_ST_ERROR, 0, NULL);
    aT[3].zMessage = (char *)"cannot read dataset";
    aT[3].cause = PARITY_CAUSE_UNKNOWN;
    aT[4] = make_tensor("/loss", NULL, PARITY_ST_FAIL, 0, NULL);
    aT[4].hasStats = 1;
    aT[4].stats.nElem = 1;
    aT[4].stats.nMismatch = 1;
    aT[4].stats.nNanMismatch = 1;
    aT[4].stats.worstScore = INFINITY;
    aT[4].stats.maxAbsErr = NAN;
    r = make_result(aT, 5, PARITY_VERDICT_ERROR, "/y");
    zText = text_report(&r);
    expect_first_line(zText, "verdict: ERROR (5 tensors, 1 fail, 1 error, "
                             "1 missing_in_compiled, 1 shape_mismatch, 1 dtype_mismatch)");
    expect_line(zText, "first divergence: /y (aten::view)");
    expect_line(zText, "SHAPE_MISMATCH /y (aten::view) float32 [4, 8] vs compiled float32 [4, 9]");
    expect_line(zText, "DTYPE_MISMATCH /h float32 [4, 8] vs compiled float16 [4, 8]");
    expect_line(zText, "MISSING_IN_COMPILED /gone float32 [4, 8]");
    expect_line(zText, "ERROR /bad float32 []");
    expect_line(zText, "  cause: unknown");
    expect_line(zText, "  error: cannot read dataset");
    expect_line(zText, "  nan/inf mismatches 1, signed zero mismatches 0");
    expect_line(zText, "  worst [] score inf; affected slice []");
    expect_last_line(zText, "0 of 5 tensors passed");
    free(zText);
}

/* Names and values come from files anyone can write (issue 14, item 4): every string of
 * the result that reaches the text report is escaped (formats/escape.h), so no newline in
 * a name starts a line of its own and no escape sequence reaches the terminal. */
Test(report_text, hostile_names_and_values_are_escaped)
{
    static const uint64_t aDim[] = { 3 };
    parity_tensor_result aT[2];
    char *azWarn[] = { (char *)"w\r\nwarning: forged" };
    char *azGlobal[] = { (char *)"compiled: its run failed: \x1b[2Jcrash\nverdict: PASS" };
    char *azInputs[] = { (char *)"/in\n" };
    char *azDiffers[] = { (char *)"model\n" };
    char *azModelE[] = { (char *)"x\x1b]0;title\x07" }, *azModelC[] = { (char *)"y" };
    parity_attr aEager[1], aCompiled[1];
    parity_diff_result r;
    char *zText;
    const char *z;
    int nVerdict = 0;

    aT[0] = make_tensor("/a\nverdict: PASS", "op\x1b[2J", PARITY_ST_FAIL, 1, aDim);
    aT[0].hasStats = 1;
    aT[0].stats.nElem = 3;
    aT[0].stats.nMismatch = 1;
    aT[0].azWarning = azWarn;
    aT[0].nWarning = 1;
    aT[1] = make_tensor("/b\\", NULL, PARITY_ST_ERROR, 0, NULL);
    aT[1].zMessage = (char *)"dataset 'x\nerror: forged' is unreadable";
    r = make_result(aT, 2, PARITY_VERDICT_FAIL, "/a\nverdict: PASS");
    r.zError = (char *)"bad\nverdict: PASS";
    r.inputsMatch = 0;
    r.azInputDiffers = azInputs;
    r.nInputDiffers = 1;
    r.azWarning = azGlobal;
    r.nWarning = 1;
    aEager[0] = attr_string("model\n", azModelE);
    aCompiled[0] = attr_string("model\n", azModelC);
    set_roots(&r, aEager, 1, aCompiled, 1, azDiffers, 1);

    zText = text_report(&r);
    expect_first_line(zText, "verdict: FAIL (2 tensors, 1 fail, 1 error)");
    expect_line(zText, "error: bad\\nverdict: PASS");
    expect_line(zText, "first divergence: /a\\nverdict: PASS (op\\x1b[2J)");
    expect_line(zText, "inputs differ: /in\\n");
    expect_line(zText, "warning: compiled: its run failed: \\x1b[2Jcrash\\nverdict: PASS");
    expect_line(zText, "FAIL /a\\nverdict: PASS (op\\x1b[2J) float32 [3]");
    expect_line(zText, "  warning: w\\r\\nwarning: forged");
    expect_line(zText, "ERROR /b\\\\ float32 []");
    expect_line(zText, "  error: dataset 'x\\nerror: forged' is unreadable");
    expect_line(zText, "  model\\n: x\\x1b]0;title\\x07 | y");
    expect_last_line(zText, "0 of 2 tensors passed");
    for (z = zText; *z; z++) {
        cr_expect(*z == '\n' || ((unsigned char)*z >= 0x20 && *z != 0x7f),
                  "control byte 0x%02x at offset %zu of the report:\n%s", (unsigned char)*z,
                  (size_t)(z - zText), zText);
        if ((z == zText || z[-1] == '\n') && strncmp(z, "verdict:", 8) == 0) nVerdict++;
    }
    cr_expect_eq(nVerdict, 1, "%d verdict lines:\n%s", nVerdict, zText);
    free(zText);
}

Test(report_text, write_error_is_reported)
{
    parity_diff_result r = make_result(NULL, 0, PARITY_VERDICT_PASS, NULL);
    FILE *pFull = fopen("/dev/full", "w");
    cr_assert_not_null(pFull);
    cr_assert_eq(parity_report_text(&r, pFull), -1);
    fclose(pFull);
}

/* ---- shared helpers ------------------------------------------------------------- */

Test(report_helpers, format_dims)
{
    static const uint64_t aLo[] = { 0, 96, 5 }, aHi[] = { 4, 100, 6 };
    char zBuf[PARITY_REPORT_DIMS_LEN], zSmall[8];
    uint64_t aBig[PARITY_MAX_RANK], aBigHi[PARITY_MAX_RANK];
    int i;

    cr_assert_str_eq(parity_report_format_dims(0, aLo, aHi, zBuf, sizeof zBuf), "[]");
    cr_assert_str_eq(parity_report_format_dims(1, aLo + 2, NULL, zBuf, sizeof zBuf), "[5]");
    cr_assert_str_eq(parity_report_format_dims(2, aLo, aHi, zBuf, sizeof zBuf),
                     "[0:4, 96:100]");
    cr_assert_str_eq(parity_report_format_dims(3, aLo, NULL, zBuf, sizeof zBuf),
                     "[0, 96, 5]");
    /* Truncated to the buffer, still NUL-terminated. */
    cr_assert_str_eq(parity_report_format_dims(3, aLo, aHi, zSmall, sizeof zSmall), "[0:4, 9");

    /* The documented buffer size holds the longest possible list. */
    for (i = 0; i < PARITY_MAX_RANK; i++) aBig[i] = aBigHi[i] = UINT64_MAX;
    parity_report_format_dims(PARITY_MAX_RANK, aBig, aBigHi, zBuf, sizeof zBuf);
    cr_assert_eq(zBuf[strlen(zBuf) - 1], ']');
}

Test(report_helpers, elements_without_stats)
{
    static const uint64_t aHuge[] = { UINT64_MAX, 3, 0 }, aOverflow[] = { UINT64_MAX, 3 };
    parity_tensor_result t = make_tensor("/t", NULL, PARITY_ST_ERROR, 3, aHuge);
    cr_assert_eq(parity_report_elements(&t), 0, "a zero extent empties the tensor");
    t = make_tensor("/t", NULL, PARITY_ST_ERROR, 2, aOverflow);
    cr_assert_eq(parity_report_elements(&t), UINT64_MAX);
    t = make_tensor("/t", NULL, PARITY_ST_ERROR, 0, NULL);
    cr_assert_eq(parity_report_elements(&t), 1);
}
