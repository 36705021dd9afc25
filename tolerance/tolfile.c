/*
 * tolfile.c - loading the tolerance file (YAML via libyaml's document API) and resolving
 * the override for a tensor. See tolfile.h and tolerance/TOLERANCE.md.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "tolerance/tolfile.h"
#include "tolerance/mpref.h"
#include "tolerance/ops.h"
#include "formats/alloc.h"
#include "formats/regular_file.h"

typedef struct {
    char *zKey;                  /* op name or tensor path */
    parity_tol_override ov;
} tol_entry;

struct parity_tolfile {
    parity_tol_override defaults;
    tol_entry *aOp, *aTensor;
    size_t nOp, nTensor;
};

static const char *scalar(yaml_document_t *pDoc, yaml_node_t *pNode)
{
    (void)pDoc;
    return pNode && pNode->type == YAML_SCALAR_NODE ? (const char *)pNode->data.scalar.value : NULL;
}

static int parse_number(const char *z, double *pValue)
{
    char *zEnd;
    if (!z || !*z) return -1;
    errno = 0;
    *pValue = strtod(z, &zEnd);
    return (errno == 0 && *zEnd == 0 && isfinite(*pValue)) ? 0 : -1;
}

/* Reads one override mapping ({scale: 2, acc_dtype: float32, ...}). zWhere names it. */
static int parse_override(yaml_document_t *pDoc, yaml_node_t *pMap, const char *zWhere,
                          parity_tol_override *pOv, char *zErr, size_t nErr)
{
    yaml_node_pair_t *pPair;
    if (!pMap || pMap->type != YAML_MAPPING_NODE) {
        snprintf(zErr, nErr, "%s: expected a mapping of settings", zWhere);
        return -1;
    }
    for (pPair = pMap->data.mapping.pairs.start; pPair < pMap->data.mapping.pairs.top; pPair++) {
        const char *zKey = scalar(pDoc, yaml_document_get_node(pDoc, pPair->key));
        const char *zVal = scalar(pDoc, yaml_document_get_node(pDoc, pPair->value));
        if (!zKey) {
            snprintf(zErr, nErr, "%s: keys must be plain strings", zWhere);
            return -1;
        }
        if (!zVal) {
            snprintf(zErr, nErr, "%s.%s: expected a single value", zWhere, zKey);
            return -1;
        }
        if (strcmp(zKey, "scale") == 0) {
            if (parse_number(zVal, &pOv->scale) != 0 || pOv->scale < 0) {
                snprintf(zErr, nErr, "%s.scale: '%s' is not a number >= 0", zWhere, zVal);
                return -1;
            }
            pOv->hasScale = 1;
        } else if (strcmp(zKey, "extra_ulps") == 0) {
            if (parse_number(zVal, &pOv->extraUlps) != 0 || pOv->extraUlps < 0) {
                snprintf(zErr, nErr, "%s.extra_ulps: '%s' is not a number >= 0", zWhere, zVal);
                return -1;
            }
            pOv->hasExtraUlps = 1;
        } else if (strcmp(zKey, "acc_dtype") == 0) {
            pOv->accDtype = parity_dtype_from_name(zVal);
            if (!parity_dtype_is_float(pOv->accDtype)) {
                snprintf(zErr, nErr, "%s.acc_dtype: '%s' is not a float dtype", zWhere, zVal);
                return -1;
            }
            pOv->hasAccDtype = 1;
        } else if (strcmp(zKey, "nan_policy") == 0) {
            if (strcmp(zVal, "reference") == 0) pOv->nanLenient = 0;
            else if (strcmp(zVal, "lenient") == 0) pOv->nanLenient = 1;
            else {
                snprintf(zErr, nErr, "%s.nan_policy: '%s' (expected reference or lenient)", zWhere, zVal);
                return -1;
            }
            pOv->hasNanPolicy = 1;
        } else if (strcmp(zKey, "model") == 0) {
            if (strcmp(zVal, "on") == 0 || strcmp(zVal, "true") == 0) pOv->useModel = 1;
            else if (strcmp(zVal, "off") == 0 || strcmp(zVal, "false") == 0) pOv->useModel = 0;
            else {
                snprintf(zErr, nErr, "%s.model: '%s' (expected on or off)", zWhere, zVal);
                return -1;
            }
            pOv->hasModel = 1;
        } else if (strcmp(zKey, "bound") == 0) {
            if (strcmp(zVal, "deterministic") == 0) pOv->probabilistic = 0;
            else if (strcmp(zVal, "probabilistic") == 0) pOv->probabilistic = 1;
            else {
                snprintf(zErr, nErr, "%s.bound: '%s' (expected deterministic or probabilistic)",
                         zWhere, zVal);
                return -1;
            }
            pOv->hasBound = 1;
        } else if (strcmp(zKey, "compute_dtype") == 0) {
            pOv->uOperand = parity_compute_roundoff(zVal);
            if (!(pOv->uOperand > 0.0)) {
                snprintf(zErr, nErr, "%s.compute_dtype: '%s' (expected tf32 or a float dtype)",
                         zWhere, zVal);
                return -1;
            }
            pOv->hasComputeDtype = 1;
        } else if (strcmp(zKey, "lambda") == 0) {
            if (parse_number(zVal, &pOv->lambda) != 0 || !(pOv->lambda > 0)) {
                snprintf(zErr, nErr, "%s.lambda: '%s' is not a number > 0", zWhere, zVal);
                return -1;
            }
            pOv->hasLambda = 1;
        } else {
            snprintf(zErr, nErr, "%s: unknown setting '%s' (scale, extra_ulps, acc_dtype, "
                     "compute_dtype, nan_policy, model, bound, lambda)", zWhere, zKey);
            return -1;
        }
    }
    return 0;
}

/* Reads a mapping of name -> override into *paEntry. */
static int parse_section(yaml_document_t *pDoc, yaml_node_t *pMap, const char *zSection,
                         tol_entry **paEntry, size_t *pn, char *zErr, size_t nErr)
{
    yaml_node_pair_t *pPair;
    size_t nPair;
    if (!pMap || pMap->type != YAML_MAPPING_NODE) {
        snprintf(zErr, nErr, "%s: expected a mapping", zSection);
        return -1;
    }
    nPair = (size_t)(pMap->data.mapping.pairs.top - pMap->data.mapping.pairs.start);
    *paEntry = parity_calloc(nPair ? nPair : 1, sizeof(tol_entry));
    if (!*paEntry) {
        snprintf(zErr, nErr, "out of memory");
        return -1;
    }
    for (pPair = pMap->data.mapping.pairs.start; pPair < pMap->data.mapping.pairs.top; pPair++) {
        const char *zName = scalar(pDoc, yaml_document_get_node(pDoc, pPair->key));
        char zWhere[512];
        tol_entry *pE = &(*paEntry)[*pn];
        if (!zName) {
            snprintf(zErr, nErr, "%s: names must be plain strings", zSection);
            return -1;
        }
        snprintf(zWhere, sizeof zWhere, "%s.%s", zSection, zName);
        pE->zKey = parity_strdup(zName);
        (*pn)++;
        if (!pE->zKey) {
            snprintf(zErr, nErr, "out of memory");
            return -1;
        }
        if (parse_override(pDoc, yaml_document_get_node(pDoc, pPair->value), zWhere, &pE->ov,
                           zErr, nErr) != 0)
            return -1;
    }
    return 0;
}

/* A setting an op does not use is a mistake to say, never one to ignore: an ops entry must
 * name a registry op (or an aten spelling of one), and compute_dtype only a dot product. */
static int check_ops(const parity_tolfile *pFile, char *zErr, size_t nErr)
{
    size_t i;
    for (i = 0; i < pFile->nOp; i++) {
        const parity_op_def *pDef = parity_op_find(pFile->aOp[i].zKey);
        if (!pDef) {
            snprintf(zErr, nErr, "ops.%s: no such op has a model (see parityfuzz --list-ops)",
                     pFile->aOp[i].zKey);
            return -1;
        }
        if (pFile->aOp[i].ov.hasComputeDtype && !(pDef->flags & PARITY_OPF_COMPUTE_DTYPE)) {
            snprintf(zErr, nErr, "ops.%s.compute_dtype: %s does not use compute_dtype (the "
                     "dot-product ops do: matmul, linear, bmm, conv2d)", pFile->aOp[i].zKey,
                     pDef->zName);
            return -1;
        }
    }
    return 0;
}

int parity_tolfile_load(const char *zPath, parity_tolfile **ppFile, char *zErr, size_t nErr)
{
    FILE *pIn = NULL;
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_node_t *pRoot;
    yaml_node_pair_t *pPair;
    parity_tolfile *pFile = NULL;
    char zWhy[512];
    int haveParser = 0, haveDoc = 0, rc = -1, sawVersion = 0;

    *ppFile = NULL;
    pIn = parity_open_regular(zPath, PARITY_TOLFILE_MAX_BYTES, zErr, nErr);
    if (!pIn) return -1;
    pFile = parity_calloc(1, sizeof *pFile);
    if (!pFile || !yaml_parser_initialize(&parser)) {
        snprintf(zErr, nErr, "%s: out of memory", zPath);
        goto done;
    }
    haveParser = 1;
    yaml_parser_set_input_file(&parser, pIn);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(zErr, nErr, "%s: line %lu: %s", zPath, (unsigned long)parser.problem_mark.line + 1,
                 parser.problem ? parser.problem : "YAML syntax error");
        goto done;
    }
    haveDoc = 1;
    pRoot = yaml_document_get_root_node(&doc);
    if (!pRoot) {
        snprintf(zErr, nErr, "%s: empty file", zPath);
        goto done;
    }
    if (pRoot->type != YAML_MAPPING_NODE) {
        snprintf(zErr, nErr, "%s: expected a mapping at the top", zPath);
        goto done;
    }
    for (pPair = pRoot->data.mapping.pairs.start; pPair < pRoot->data.mapping.pairs.top; pPair++) {
        const char *zKey = scalar(&doc, yaml_document_get_node(&doc, pPair->key));
        yaml_node_t *pVal = yaml_document_get_node(&doc, pPair->value);
        int st = 0;
        if (!zKey) {
            snprintf(zWhy, sizeof zWhy, "top-level keys must be plain strings");
            st = -1;
        } else if (strcmp(zKey, "parity_tolerance") == 0) {
            const char *zV = scalar(&doc, pVal);
            sawVersion = 1;
            if (!zV || strcmp(zV, "1") != 0) {
                snprintf(zWhy, sizeof zWhy, "parity_tolerance: only version 1 is known");
                st = -1;
            }
        } else if (strcmp(zKey, "defaults") == 0) {
            st = parse_override(&doc, pVal, "defaults", &pFile->defaults, zWhy, sizeof zWhy);
        } else if (strcmp(zKey, "ops") == 0) {
            st = parse_section(&doc, pVal, "ops", &pFile->aOp, &pFile->nOp, zWhy, sizeof zWhy);
            if (st == 0) st = check_ops(pFile, zWhy, sizeof zWhy);
        } else if (strcmp(zKey, "tensors") == 0) {
            st = parse_section(&doc, pVal, "tensors", &pFile->aTensor, &pFile->nTensor, zWhy,
                               sizeof zWhy);
        } else {
            snprintf(zWhy, sizeof zWhy, "unknown top-level key '%s' (parity_tolerance, defaults, "
                     "ops, tensors)", zKey);
            st = -1;
        }
        if (st != 0) {
            snprintf(zErr, nErr, "%s: %s", zPath, zWhy);
            goto done;
        }
    }
    if (!sawVersion) {
        snprintf(zErr, nErr, "%s: missing 'parity_tolerance: 1'", zPath);
        goto done;
    }
    *ppFile = pFile;
    pFile = NULL;
    rc = 0;
done:
    if (haveDoc) yaml_document_delete(&doc);
    if (haveParser) yaml_parser_delete(&parser);
    if (pIn) fclose(pIn);
    parity_tolfile_free(pFile);
    return rc;
}

double parity_compute_roundoff(const char *zName)
{
    parity_dtype dt;
    if (!zName) return 0.0;
    if (strcmp(zName, "tf32") == 0 || strcmp(zName, "tensorfloat32") == 0)
        return 0x1p-11;   /* TF32: 8 exponent bits, 10 stored significand bits */
    dt = parity_dtype_from_name(zName);
    return parity_dtype_is_float(dt) ? parity_unit_roundoff(dt) : 0.0;
}

void parity_tolfile_free(parity_tolfile *pFile)
{
    size_t i;
    if (!pFile) return;
    for (i = 0; i < pFile->nOp; i++) free(pFile->aOp[i].zKey);
    for (i = 0; i < pFile->nTensor; i++) free(pFile->aTensor[i].zKey);
    free(pFile->aOp);
    free(pFile->aTensor);
    free(pFile);
}

static void apply(parity_tol_override *pOut, const parity_tol_override *pIn)
{
    if (pIn->hasScale) { pOut->hasScale = 1; pOut->scale = pIn->scale; }
    if (pIn->hasExtraUlps) { pOut->hasExtraUlps = 1; pOut->extraUlps = pIn->extraUlps; }
    if (pIn->hasAccDtype) { pOut->hasAccDtype = 1; pOut->accDtype = pIn->accDtype; }
    if (pIn->hasNanPolicy) { pOut->hasNanPolicy = 1; pOut->nanLenient = pIn->nanLenient; }
    if (pIn->hasModel) { pOut->hasModel = 1; pOut->useModel = pIn->useModel; }
    if (pIn->hasBound) { pOut->hasBound = 1; pOut->probabilistic = pIn->probabilistic; }
    if (pIn->hasLambda) { pOut->hasLambda = 1; pOut->lambda = pIn->lambda; }
    if (pIn->hasComputeDtype) { pOut->hasComputeDtype = 1; pOut->uOperand = pIn->uOperand; }
}

/* An ops key names the capture's op: the same string, or the same registry op (the key
 * "linear" covers a capture's "aten.linear.default"). */
static int same_op(const char *zKey, const char *zOp)
{
    const parity_op_def *pDef;
    if (strcmp(zKey, zOp) == 0) return 1;
    pDef = parity_op_find(zOp);
    return pDef && pDef == parity_op_find(zKey);
}

/* "a/b" and "/a/b" name the same tensor. */
static int names_tensor(const char *zKey, const char *zPath)
{
    return strcmp(zKey, zPath) == 0 ||
           (zKey[0] != '/' && zPath[0] == '/' && strcmp(zKey, zPath + 1) == 0);
}

void parity_tolfile_resolve(const parity_tolfile *pFile, const char *zOp, const char *zPath,
                            parity_tol_override *pOut)
{
    size_t i;
    memset(pOut, 0, sizeof *pOut);
    if (!pFile) return;
    apply(pOut, &pFile->defaults);
    for (i = 0; zOp && i < pFile->nOp; i++)
        if (same_op(pFile->aOp[i].zKey, zOp)) apply(pOut, &pFile->aOp[i].ov);
    for (i = 0; zPath && i < pFile->nTensor; i++)
        if (names_tensor(pFile->aTensor[i].zKey, zPath)) apply(pOut, &pFile->aTensor[i].ov);
}

int parity_tolfile_tensor_sets_compute(const parity_tolfile *pFile, const char *zPath)
{
    size_t i;
    for (i = 0; pFile && i < pFile->nTensor; i++)
        if (names_tensor(pFile->aTensor[i].zKey, zPath) && pFile->aTensor[i].ov.hasComputeDtype)
            return 1;
    return 0;
}
