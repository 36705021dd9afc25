/*
 * io.c - fuzz cases as captures: the case file a target reads, the output capture it
 * writes, and the repro sides (eager.h5, compiled.h5) paritydiff diffs. The schema is
 * formats/FORMAT.md, "Fuzz cases"; the Python worker (fuzz/workers/) reads the same one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/cases/cases.h"
#include "formats/alloc.h"

#define W_CHECK(expr) do { if ((expr) != 0) goto write_fail; } while (0)

/* Writes values (decoded binary64) as a dataset in dt's storage form; *pOom set when its
 * buffer could not be had (the writer's own error is then empty). */
int parity_case_write_values(parity_writer *pW, const char *zPath, parity_dtype dt, int rank,
                             const uint64_t *aDim, const double *aValue, uint64_t n, int *pOom)
{
    size_t nSize = parity_dtype_size(dt);
    unsigned char *pBuf = parity_malloc((n ? n : 1) * nSize);
    uint64_t i;
    int rc;
    if (!pBuf) {
        *pOom = 1;
        return -1;
    }
    for (i = 0; i < n; i++) parity_encode(dt, aValue[i], pBuf + i * nSize);
    rc = parity_writer_tensor(pW, zPath, dt, rank, aDim, pBuf);
    free(pBuf);
    return rc;
}

int parity_case_write_attr(parity_writer *pW, const char *zPath, const char *zName,
                           const parity_attr *pA)
{
    switch (pA->kind) {
    case PARITY_ATTR_STRING:
        return pA->isArray ? parity_writer_attr_strings(pW, zPath, zName,
                                                        (const char *const *)pA->azStr, pA->n)
                           : parity_writer_attr_string(pW, zPath, zName, pA->azStr[0]);
    case PARITY_ATTR_INT:
        return pA->isArray ? parity_writer_attr_ints(pW, zPath, zName, pA->aInt, pA->n)
                           : parity_writer_attr_int(pW, zPath, zName, pA->aInt[0]);
    case PARITY_ATTR_FLOAT:
        return pA->isArray ? -1 : parity_writer_attr_float(pW, zPath, zName, pA->aFloat[0]);
    default:
        return -1;
    }
}

int parity_case_write(const parity_case *pCase, const double *aOut, const char *zSide,
                      const char *zTarget, const parity_case_identity *pId,
                      const char *zRunFailure, const char *zFile, char *zErr, size_t nErr)
{
    const parity_case_spec *pS = &pCase->spec;
    parity_writer *pW = NULL;
    const char *azInput[PARITY_CASE_MAX_OPERANDS], *azRecipe[PARITY_CASE_MAX_OPERANDS];
    const char *zOutName = "out", *zOutDtype = parity_dtype_name(pCase->outDtype);
    int64_t aDim[PARITY_CASE_MAX_DIMS], aScale[PARITY_CASE_MAX_OPERANDS], aOutShape[PARITY_MAX_RANK];
    char zName[80];
    size_t i;
    int d, oom = 0;

    if (pCase->nIn > PARITY_CASE_MAX_IN) {    /* a stored op's case: it has no spec to write */
        snprintf(zErr, nErr, "a case of %zu inputs has no spec to store", pCase->nIn);
        return -1;
    }
    if (parity_writer_open(zFile, &pW, zErr, nErr) != 0) return -1;
    for (i = 0; i < pCase->nIn; i++) {
        azInput[i] = pCase->aIn[i].zName;
        azRecipe[i] = parity_value_kind_name(pS->aRecipe[i].kind);
        aScale[i] = pS->aRecipe[i].scaleLog2;
    }
    for (d = 0; d < pS->nDim; d++) aDim[d] = (int64_t)pS->aDim[d];
    for (d = 0; d < pCase->outRank; d++) aOutShape[d] = (int64_t)pCase->aOutDim[d];
    W_CHECK(parity_writer_attr_int(pW, "/", "parity_case_version", PARITY_CASE_VERSION));
    W_CHECK(parity_writer_attr_string(pW, "/", "op", pS->zOp));
    W_CHECK(parity_writer_attr_int(pW, "/", "variant", pS->variant));
    W_CHECK(parity_writer_attr_string(pW, "/", "case_dtype", parity_dtype_name(pS->dtype)));
    W_CHECK(parity_writer_attr_ints(pW, "/", "dims", aDim, (size_t)pS->nDim));
    W_CHECK(parity_writer_attr_strings(pW, "/", "recipes", azRecipe, pCase->nIn));
    W_CHECK(parity_writer_attr_ints(pW, "/", "recipe_scale_log2", aScale, pCase->nIn));
    W_CHECK(parity_writer_attr_int(pW, "/", "seed", (int64_t)pS->seed));
    W_CHECK(parity_writer_attr_strings(pW, "/", "inputs", azInput, pCase->nIn));
    W_CHECK(parity_writer_attr_strings(pW, "/", "outputs", &zOutName, 1));
    W_CHECK(parity_writer_attr_strings(pW, "/", "output_dtypes", &zOutDtype, 1));
    W_CHECK(parity_writer_attr_ints(pW, "/", "output_shape", aOutShape, (size_t)pCase->outRank));
    for (i = 0; i < pCase->nParam; i++) {
        snprintf(zName, sizeof zName, "param.%s", pCase->aParam[i].zName);
        W_CHECK(parity_case_write_attr(pW, "/", zName, &pCase->aParam[i]));
    }
    if (zSide) W_CHECK(parity_writer_attr_string(pW, "/", "side", zSide));
    if (zTarget) W_CHECK(parity_writer_attr_string(pW, "/", "target", zTarget));
    if (pId) {
        const char *azKey[] = { "compiler", "compiler_version", "isa", "implementation" };
        const char *azValue[] = { pId->zCompiler, pId->zCompilerVersion, pId->zIsa, pId->zImpl };
        for (i = 0; i < sizeof azKey / sizeof azKey[0]; i++)
            if (azValue[i][0]) W_CHECK(parity_writer_attr_string(pW, "/", azKey[i], azValue[i]));
    }
    if (zRunFailure) W_CHECK(parity_writer_attr_string(pW, "/", "run_failure", zRunFailure));
    for (i = 0; i < pCase->nIn; i++) {
        const parity_operand *pIn = &pCase->aIn[i];
        snprintf(zName, sizeof zName, "/%s", pIn->zName);
        W_CHECK(parity_case_write_values(pW, zName, pIn->dtype, pIn->rank, pIn->aDim, pIn->aValue,
                             pIn->nElem, &oom));
        W_CHECK(parity_writer_attr_int(pW, zName, "order", 0));
    }
    if (aOut) {
        W_CHECK(parity_case_write_values(pW, "/out", pCase->outDtype, pCase->outRank, pCase->aOutDim, aOut,
                             pCase->nOut, &oom));
        W_CHECK(parity_writer_attr_string(pW, "/out", "op", pS->zOp));
        W_CHECK(parity_writer_attr_strings(pW, "/out", "inputs", azInput, pCase->nIn));
        W_CHECK(parity_writer_attr_int(pW, "/out", "order", 1));
        for (i = 0; i < pCase->nParam; i++)
            W_CHECK(parity_case_write_attr(pW, "/out", pCase->aParam[i].zName, &pCase->aParam[i]));
    }
    return parity_writer_close(pW, zErr, nErr);
write_fail:
    snprintf(zErr, nErr, "%s: %s", zFile, oom ? "out of memory" : parity_writer_error(pW));
    parity_writer_abort(pW);
    return -1;
}

/* ---- reading ----------------------------------------------------------------------- */

const parity_attr *parity_case_root_attr(const parity_attr *aAttr, size_t nAttr,
                                         const char *zName, parity_attr_kind kind,
                                         int needArray, const char *zFile, char *zErr,
                                         size_t nErr)
{
    const parity_attr *pA = parity_attr_find(aAttr, nAttr, zName);
    if (!pA) {
        snprintf(zErr, nErr, "%s: not a parity fuzz case (no root attribute '%s')", zFile, zName);
        return NULL;
    }
    if (pA->kind != kind || (!needArray && (pA->isArray || pA->n != 1))) {
        snprintf(zErr, nErr, "%s: root attribute '%s' has the wrong type", zFile, zName);
        return NULL;
    }
    return pA;
}

int parity_case_load_tensor(parity_capture *pCap, const char *zFile, const char *zName,
                            parity_dtype dt, int rank, const uint64_t *aDim, double **paValue,
                            char *zErr, size_t nErr)
{
    long iT = parity_capture_find(pCap, zName);
    const parity_tensor_info *pT;
    parity_operand op;
    char zA[128], zB[128];
    if (iT < 0) {
        snprintf(zErr, nErr, "%s: tensor '%s' is missing", zFile, zName);
        return -1;
    }
    pT = parity_capture_tensor(pCap, (size_t)iT);
    if (pT->zError) {
        snprintf(zErr, nErr, "%s: tensor '%s': %s", zFile, zName, pT->zError);
        return -1;
    }
    if (pT->dtype != dt || !parity_same_shape(pT->rank, pT->aDim, rank, aDim)) {
        snprintf(zErr, nErr, "%s: tensor '%s' is %s %s, the case says %s %s", zFile, zName,
                 parity_dtype_name(pT->dtype), parity_shape_str(pT->rank, pT->aDim, zA, sizeof zA),
                 parity_dtype_name(dt), parity_shape_str(rank, aDim, zB, sizeof zB));
        return -1;
    }
    if (parity_operand_load(pCap, (size_t)iT, &op, zErr, nErr) != 0) return -1;
    *paValue = op.aValue;
    return 0;
}

/* The spec's scalar fields from the root attributes: version, op, variant, dtype, dims,
 * seed. */
static int read_spec_fields(const parity_attr *aRoot, size_t nRoot, const char *zFile,
                            parity_case_spec *pSpec, char *zErr, size_t nErr)
{
    const parity_attr *pA;
    size_t i;
    if (!(pA = parity_case_root_attr(aRoot, nRoot, "parity_case_version", PARITY_ATTR_INT, 0, zFile, zErr, nErr)))
        return -1;
    if (pA->aInt[0] != PARITY_CASE_VERSION) {
        snprintf(zErr, nErr, "%s: case version %lld, this parityfuzz reads version %d", zFile,
                 (long long)pA->aInt[0], PARITY_CASE_VERSION);
        return -1;
    }
    if (!(pA = parity_case_root_attr(aRoot, nRoot, "op", PARITY_ATTR_STRING, 0, zFile, zErr, nErr))) return -1;
    if (strlen(pA->azStr[0]) >= sizeof pSpec->zOp) {
        snprintf(zErr, nErr, "%s: op name too long", zFile);
        return -1;
    }
    strcpy(pSpec->zOp, pA->azStr[0]);
    if (!(pA = parity_case_root_attr(aRoot, nRoot, "variant", PARITY_ATTR_INT, 0, zFile, zErr, nErr))) return -1;
    if (pA->aInt[0] < 0 || pA->aInt[0] > 0xFFFF) {
        snprintf(zErr, nErr, "%s: variant %lld out of range", zFile, (long long)pA->aInt[0]);
        return -1;
    }
    pSpec->variant = (uint32_t)pA->aInt[0];
    if (!(pA = parity_case_root_attr(aRoot, nRoot, "case_dtype", PARITY_ATTR_STRING, 0, zFile, zErr, nErr)))
        return -1;
    pSpec->dtype = parity_dtype_from_name(pA->azStr[0]);
    if (pSpec->dtype == PARITY_DT_INVALID) {
        snprintf(zErr, nErr, "%s: unknown case_dtype '%s'", zFile, pA->azStr[0]);
        return -1;
    }
    if (!(pA = parity_case_root_attr(aRoot, nRoot, "dims", PARITY_ATTR_INT, 1, zFile, zErr, nErr))) return -1;
    if (pA->n > PARITY_CASE_MAX_DIMS) {
        snprintf(zErr, nErr, "%s: %zu dims (at most %d)", zFile, pA->n, PARITY_CASE_MAX_DIMS);
        return -1;
    }
    pSpec->nDim = (int)pA->n;
    for (i = 0; i < pA->n; i++) {
        if (pA->aInt[i] < 0 || pA->aInt[i] > (int64_t)PARITY_CASE_MAX_ELEMS) {
            snprintf(zErr, nErr, "%s: dim %zu is %lld (0 to %u)", zFile, i,
                     (long long)pA->aInt[i], PARITY_CASE_MAX_ELEMS);
            return -1;
        }
        pSpec->aDim[i] = (uint64_t)pA->aInt[i];
    }
    if (!(pA = parity_case_root_attr(aRoot, nRoot, "seed", PARITY_ATTR_INT, 0, zFile, zErr, nErr))) return -1;
    pSpec->seed = (uint64_t)pA->aInt[0];
    return 0;
}

/* The value recipes (one per input, with their scales) into pSpec. */
static int read_spec_recipes(const parity_attr *pRecipes, const parity_attr *pScales,
                             const char *zFile, parity_case_spec *pSpec, char *zErr,
                             size_t nErr)
{
    size_t i;
    if (pRecipes->n > PARITY_CASE_MAX_IN || pScales->n != pRecipes->n) {
        snprintf(zErr, nErr, "%s: 'recipes' and 'recipe_scale_log2' must have one entry per input",
                 zFile);
        return -1;
    }
    for (i = 0; i < pRecipes->n; i++) {
        parity_value_kind kind = parity_value_kind_find(pRecipes->azStr[i]);
        if (kind == PARITY_VAL_COUNT) {
            snprintf(zErr, nErr, "%s: unknown value recipe '%s'", zFile, pRecipes->azStr[i]);
            return -1;
        }
        if (pScales->aInt[i] < -126 || pScales->aInt[i] > 126) {
            snprintf(zErr, nErr, "%s: recipe scale 2^%lld out of range", zFile,
                     (long long)pScales->aInt[i]);
            return -1;
        }
        pSpec->aRecipe[i].kind = (uint8_t)kind;
        pSpec->aRecipe[i].scaleLog2 = (int8_t)pScales->aInt[i];
    }
    return 0;
}

/* The stored inputs, each checked against what the layout (pCase) says it must be. */
static int load_inputs(parity_capture *pCap, const char *zFile, const parity_attr *pInputs,
                       size_t nRecipes, parity_case *pCase, char *zErr, size_t nErr)
{
    size_t i;
    if (pInputs->n != pCase->nIn || nRecipes != pCase->nIn) {
        snprintf(zErr, nErr, "%s: the case lists %zu inputs, op %s with this layout takes %zu",
                 zFile, pInputs->n, pCase->spec.zOp, pCase->nIn);
        return -1;
    }
    for (i = 0; i < pCase->nIn; i++) {
        parity_operand *pIn = &pCase->aIn[i];
        if (strcmp(pInputs->azStr[i], pIn->zName) != 0) {
            snprintf(zErr, nErr, "%s: input %zu is named '%s', the layout names it '%s'", zFile,
                     i, pInputs->azStr[i], pIn->zName);
            return -1;
        }
        if (parity_case_load_tensor(pCap, zFile, pIn->zName, pIn->dtype, pIn->rank, pIn->aDim,
                         &pIn->aValue, zErr, nErr) != 0)
            return -1;
    }
    return 0;
}

int parity_case_read(const char *zFile, parity_case *pCase, char *zErr, size_t nErr)
{
    parity_capture *pCap = NULL;
    const parity_attr *aRoot, *pRecipes, *pScales, *pInputs;
    size_t nRoot;
    parity_case_spec spec;

    memset(pCase, 0, sizeof *pCase);
    memset(&spec, 0, sizeof spec);
    if (parity_capture_open(zFile, &pCap, zErr, nErr) != 0) return -1;
    aRoot = parity_capture_root_attrs(pCap, &nRoot);
    if (read_spec_fields(aRoot, nRoot, zFile, &spec, zErr, nErr) != 0) goto fail;
    if (!(pRecipes = parity_case_root_attr(aRoot, nRoot, "recipes", PARITY_ATTR_STRING, 1, zFile, zErr, nErr)) ||
        !(pScales = parity_case_root_attr(aRoot, nRoot, "recipe_scale_log2", PARITY_ATTR_INT, 1, zFile, zErr, nErr)) ||
        !(pInputs = parity_case_root_attr(aRoot, nRoot, "inputs", PARITY_ATTR_STRING, 1, zFile, zErr, nErr)))
        goto fail;
    if (read_spec_recipes(pRecipes, pScales, zFile, &spec, zErr, nErr) != 0) goto fail;
    /* The layout says what the inputs must be; the stored tensors must match it. */
    if (parity_case_layout(&spec, pCase, zErr, nErr) != 0) {
        char zWhy[PARITY_ERR_LEN];
        snprintf(zWhy, sizeof zWhy, "%s", zErr);
        snprintf(zErr, nErr, "%s: %s", zFile, zWhy);
        goto fail;
    }
    if (load_inputs(pCap, zFile, pInputs, pRecipes->n, pCase, zErr, nErr) != 0) {
        parity_case_free(pCase);
        goto fail;
    }
    pCase->fromStore = 1;
    parity_capture_close(pCap);
    return 0;
fail:
    parity_capture_close(pCap);
    return -1;
}

int parity_case_read_output(const parity_case *pCase, const char *zFile, double *aOut,
                            char *zErr, size_t nErr)
{
    parity_capture *pCap = NULL;
    double *aValue = NULL;
    if (parity_capture_open(zFile, &pCap, zErr, nErr) != 0) return -1;
    if (parity_case_load_tensor(pCap, zFile, "out", pCase->outDtype, pCase->outRank, pCase->aOutDim,
                     &aValue, zErr, nErr) != 0) {
        parity_capture_close(pCap);
        return -1;
    }
    memcpy(aOut, aValue, pCase->nOut * sizeof *aOut);
    free(aValue);
    parity_capture_close(pCap);
    return 0;
}
