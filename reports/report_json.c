/*
 * report_json.c - the machine-readable report: a parity_diff_result as one JSON document
 * (schema and example in diff/REPORT.md), written atomically.
 *
 * Two jansson traps shape this file:
 * - Constructors return NULL for values JSON cannot hold (json_real of NaN or Inf,
 *   json_string of invalid UTF-8) and json_object_set_new then drops the key without a
 *   word. Every value therefore goes through report_real / report_string, which turn
 *   non-finite numbers into null and repair invalid UTF-8, and every insertion is checked:
 *   a NULL still reaching report_set (out of memory) fails the whole build, so a consumer
 *   never sees a document with a field silently missing.
 * - JSON integers are int64 in jansson; uint64 counts above INT64_MAX are clamped to
 *   INT64_MAX (documented in REPORT.md; no real tensor gets near it).
 * The key order is the insertion order below (jansson keeps it), so documents diff well.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "reports/report.h"
#include "reports/report_internal.h"
#include "formats/alloc.h"

#define REPORT_JSON_VERSION 1
#define REPORT_DUMP_FLAGS (JSON_INDENT(2) | JSON_PRESERVE_ORDER)

/* ---- value constructors that never return NULL for a representable input ---------- */

/* The checked insertions (report_internal.h). */
int parity_report_set(json_t *pObj, const char *zKey, json_t *pVal)
{
    if (pVal == NULL) return -1;
    return json_object_set_new(pObj, zKey, pVal);
}

int parity_report_append(json_t *pArr, json_t *pVal)
{
    if (pVal == NULL) return -1;
    return json_array_append_new(pArr, pVal);
}

json_t *parity_report_finish(json_t *pContainer, int rc)
{
    if (rc == 0 && pContainer != NULL) return pContainer;
    json_decref(pContainer);
    return NULL;
}

size_t parity_report_utf8_decode(const unsigned char *z, unsigned long *pCp)
{
    unsigned char lo = 0x80, hi = 0xBF;
    unsigned long cp;
    size_t n, i;

    if (z[0] < 0x80) { if (pCp) *pCp = z[0]; return 1; }
    if (z[0] >= 0xC2 && z[0] <= 0xDF) { n = 2; cp = z[0] & 0x1F; }
    else if (z[0] >= 0xE0 && z[0] <= 0xEF) { n = 3; cp = z[0] & 0x0F; }
    else if (z[0] >= 0xF0 && z[0] <= 0xF4) { n = 4; cp = z[0] & 0x07; }
    else return 0;
    if (z[0] == 0xE0) lo = 0xA0;       /* overlong 3-byte forms */
    else if (z[0] == 0xED) hi = 0x9F;  /* UTF-16 surrogates */
    else if (z[0] == 0xF0) lo = 0x90;  /* overlong 4-byte forms */
    else if (z[0] == 0xF4) hi = 0x8F;  /* above U+10FFFF */
    if (z[1] < lo || z[1] > hi) return 0;
    for (i = 2; i < n; i++)
        if (z[i] < 0x80 || z[i] > 0xBF) return 0;
    for (i = 1; i < n; i++) cp = (cp << 6) | (z[i] & 0x3F);
    if (pCp) *pCp = cp;
    return n;
}

void parity_report_format_double(double x, char *zBuf, size_t nBuf)
{
    int prec;

    if (isnan(x)) { snprintf(zBuf, nBuf, "NaN"); return; }
    if (isinf(x)) { snprintf(zBuf, nBuf, x > 0 ? "+Inf" : "-Inf"); return; }
    for (prec = 15; prec < 17; prec++) {
        snprintf(zBuf, nBuf, "%.*g", prec, x);
        if (strtod(zBuf, NULL) == x) return;
    }
    snprintf(zBuf, nBuf, "%.17g", x);
}

static json_t *report_real(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *report_uint(uint64_t n)
{
    return json_integer(n > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)n);
}


/* A JSON string; NULL becomes null. Names and attribute values come from HDF5, which
 * allows any bytes, so bytes that are not UTF-8 are replaced by U+FFFD rather than letting
 * json_string fail and the field vanish. */
json_t *parity_report_string(const char *z)
{
    const unsigned char *zIn = (const unsigned char *)z;
    json_t *pStr;
    char *zFixed;
    size_t nIn, iIn, nOut = 0;

    if (z == NULL) return json_null();
    pStr = json_string(z);
    if (pStr) return pStr;
    nIn = strlen(z);
    zFixed = parity_malloc(nIn * 3 + 1);  /* each bad byte grows to the 3 bytes of U+FFFD */
    if (zFixed == NULL) return NULL;
    for (iIn = 0; iIn < nIn;) {
        size_t n = parity_report_utf8_decode(zIn + iIn, NULL);
        if (n == 0) {
            memcpy(zFixed + nOut, "\xEF\xBF\xBD", 3);
            nOut += 3;
            iIn++;
        } else {
            memcpy(zFixed + nOut, zIn + iIn, n);
            nOut += n;
            iIn += n;
        }
    }
    pStr = json_stringn(zFixed, nOut);
    free(zFixed);
    return pStr;
}

static json_t *report_string_array(char *const *azStr, size_t n)
{
    json_t *pArr = json_array();
    size_t i;
    int rc = 0;

    for (i = 0; i < n; i++) rc |= parity_report_append(pArr, parity_report_string(azStr[i]));
    return parity_report_finish(pArr, rc);
}

static json_t *report_uint_array(int rank, const uint64_t *aValue)
{
    json_t *pArr = json_array();
    int i, rc = 0;

    for (i = 0; i < rank; i++) rc |= parity_report_append(pArr, report_uint(aValue[i]));
    return parity_report_finish(pArr, rc);
}

/* ---- attributes ----------------------------------------------------------------- */

static json_t *report_attr_item(const parity_attr *pAttr, size_t i)
{
    switch (pAttr->kind) {
    case PARITY_ATTR_STRING: return parity_report_string(pAttr->azStr[i]);
    case PARITY_ATTR_INT: return json_integer(pAttr->aInt[i]);
    case PARITY_ATTR_FLOAT: return report_real(pAttr->aFloat[i]);
    case PARITY_ATTR_OTHER: break;
    }
    return json_null();
}

static json_t *report_attr_value(const parity_attr *pAttr)
{
    json_t *pArr;
    size_t i;
    int rc = 0;

    if (pAttr->kind == PARITY_ATTR_OTHER) return json_null();
    if (!pAttr->isArray) return pAttr->n >= 1 ? report_attr_item(pAttr, 0) : json_null();
    pArr = json_array();
    for (i = 0; i < pAttr->n; i++) rc |= parity_report_append(pArr, report_attr_item(pAttr, i));
    return parity_report_finish(pArr, rc);
}

/* {name: value} of the root attributes that are telemetry (wantTelemetry 1) or are not
 * (wantTelemetry 0). */
static json_t *report_attrs(const parity_attr *aAttr, size_t nAttr, int wantTelemetry)
{
    json_t *pObj = json_object();
    size_t i;
    int rc = 0;

    for (i = 0; i < nAttr; i++) {
        const char *zName = aAttr[i].zName ? aAttr[i].zName : "";
        int isTelemetryKey = parity_is_telemetry_key(zName) != 0;
        json_t *pKey;
        if (isTelemetryKey != wantTelemetry) continue;
        /* Keys must be UTF-8 too: reuse the repair of report_string. */
        pKey = parity_report_string(zName);
        if (pKey == NULL) { rc = -1; break; }
        rc |= parity_report_set(pObj, json_string_value(pKey), report_attr_value(&aAttr[i]));
        json_decref(pKey);
    }
    return parity_report_finish(pObj, rc);
}

json_t *parity_report_attrs_json(const parity_attr *aAttr, size_t nAttr, int wantTelemetry)
{
    return report_attrs(aAttr, nAttr, wantTelemetry);
}

/* The "identity" object (wantTelemetry 0: non-telemetry attributes of each side and the
 * keys that differ) or the "telemetry" object (wantTelemetry 1: never compared). */
static json_t *report_root_attrs(const parity_diff_result *pRes, int wantTelemetry)
{
    json_t *pObj = json_object();
    int rc = 0;

    rc |= parity_report_set(pObj, "eager",
                     report_attrs(pRes->aEagerRoot, pRes->nEagerRoot, wantTelemetry));
    rc |= parity_report_set(pObj, "compiled",
                     report_attrs(pRes->aCompiledRoot, pRes->nCompiledRoot, wantTelemetry));
    if (!wantTelemetry)
        rc |= parity_report_set(pObj, "differs",
                         report_string_array(pRes->azIdentityDiffers, pRes->nIdentityDiffers));
    return parity_report_finish(pObj, rc);
}

/* ---- tensors -------------------------------------------------------------------- */

static json_t *report_tolerance(const parity_tolerance *pTol)
{
    json_t *pObj = json_object();
    int rc = 0;

    rc |= parity_report_set(pObj, "atol", report_real(pTol->atol));
    rc |= parity_report_set(pObj, "rtol", report_real(pTol->rtol));
    rc |= parity_report_set(pObj, "max_ulp", pTol->useUlp ? report_uint(pTol->maxUlp) : json_null());
    rc |= parity_report_set(pObj, "exact", json_boolean(pTol->exact));
    rc |= parity_report_set(pObj, "signed_zeros", json_boolean(pTol->signedZeros));
    return parity_report_finish(pObj, rc);
}

static json_t *report_dtype(parity_dtype dt)
{
    return dt == PARITY_DT_INVALID ? json_null() : json_string(parity_dtype_name(dt));
}

/* [[lo, hi], ...] of the failing elements' bounding box; null without failures. */
static json_t *report_slice(const parity_tensor_result *pT)
{
    json_t *pArr;
    int i, rank, rc = 0;
    const uint64_t *aDim;

    if (!parity_report_has_slice(pT)) return json_null();
    parity_report_shape(pT, &rank, &aDim);
    pArr = json_array();
    for (i = 0; i < rank; i++) {
        const uint64_t aBox[2] = { pT->stats.aSliceLo[i], pT->stats.aSliceHi[i] };
        rc |= parity_report_append(pArr, report_uint_array(2, aBox));
    }
    return parity_report_finish(pArr, rc);
}

static json_t *report_ulp_bucket(uint64_t lo, uint64_t hi, uint64_t count)
{
    json_t *pObj = json_object();
    int rc = 0;

    rc |= parity_report_set(pObj, "min", report_uint(lo));
    rc |= parity_report_set(pObj, "max", report_uint(hi));
    rc |= parity_report_set(pObj, "count", report_uint(count));
    return parity_report_finish(pObj, rc);
}

/* Non-empty ULP buckets as {"min", "max", "count"}: bucket 0 holds distance 0, bucket k
 * distances 2^(k-1) .. 2^k - 1 (k <= 63, so max fits in int64). */
static json_t *report_ulp_histogram(const parity_tensor_stats *pS)
{
    json_t *pArr = json_array();
    int k, rc = 0;

    for (k = 0; k < PARITY_ULP_BUCKETS; k++) {
        uint64_t lo = k == 0 ? 0 : (uint64_t)1 << (k - 1);
        uint64_t hi = k == 0 ? 0 : lo * 2 - 1;
        if (pS->aUlpHist[k] > 0)
            rc |= parity_report_append(pArr, report_ulp_bucket(lo, hi, pS->aUlpHist[k]));
    }
    return parity_report_finish(pArr, rc);
}

/* The statistics fields; all present and null when the tensor has no stats, so every
 * tensor object has the same keys. */
static int report_tensor_stats(json_t *pObj, const parity_tensor_result *pT)
{
    const parity_tensor_stats *pS = &pT->stats;
    uint64_t aIndex[PARITY_MAX_RANK];
    int hasWorst = parity_report_worst_index(pT, aIndex);
    int rank, rc = 0;
    const uint64_t *aDim;

/* Only the chosen branch is evaluated, so nothing is built just to be thrown away. */
#define REPORT_STAT(xValue) (pT->hasStats ? (xValue) : json_null())
    parity_report_shape(pT, &rank, &aDim);
    rc |= parity_report_set(pObj, "mismatches", REPORT_STAT(report_uint(pS->nMismatch)));
    rc |= parity_report_set(pObj, "nan_mismatches", REPORT_STAT(report_uint(pS->nNanMismatch)));
    rc |= parity_report_set(pObj, "signed_zero_mismatches",
                     REPORT_STAT(report_uint(pS->nSignedZeroMismatch)));
    rc |= parity_report_set(pObj, "bit_differences", REPORT_STAT(report_uint(pS->nBitDiff)));
    rc |= parity_report_set(pObj, "max_abs_err", REPORT_STAT(report_real(pS->maxAbsErr)));
    rc |= parity_report_set(pObj, "max_rel_err", REPORT_STAT(report_real(pS->maxRelErr)));
    rc |= parity_report_set(pObj, "max_ulp", REPORT_STAT(report_uint(pS->maxUlp)));
    rc |= parity_report_set(pObj, "rel_l2", REPORT_STAT(report_real(parity_stats_rel_l2(pS))));
    /* hasWorst implies hasStats; without elements there is no worst element. */
    rc |= parity_report_set(pObj, "worst_index",
                     hasWorst ? report_uint_array(rank, aIndex) : json_null());
    rc |= parity_report_set(pObj, "worst_score", hasWorst ? report_real(pS->worstScore) : json_null());
    rc |= parity_report_set(pObj, "affected_slice", report_slice(pT));
    rc |= parity_report_set(pObj, "ulp_histogram", REPORT_STAT(report_ulp_histogram(pS)));
#undef REPORT_STAT
    return rc;
}

/* The semantic judgement: the op's model, its bound, both sides' errors against the MPFR
 * reference and the per-element classes; null when no model judged the tensor. */
static json_t *report_judgement(const parity_tensor_result *pT)
{
    const parity_judgement *pJ = &pT->judgement;
    json_t *pObj, *pClasses;
    int rc = 0;

    if (!pT->hasJudgement) return json_null();
    pObj = json_object();
    pClasses = json_object();
    rc |= parity_report_set(pClasses, "within", report_uint(pJ->nWithin));
    rc |= parity_report_set(pClasses, "compiled_worse", report_uint(pJ->nCompiledWorse));
    rc |= parity_report_set(pClasses, "eager_worse", report_uint(pJ->nEagerWorse));
    rc |= parity_report_set(pClasses, "both_beyond", report_uint(pJ->nBothBeyond));
    rc |= parity_report_set(pClasses, "nonfinite_divergence", report_uint(pJ->nNonFinite));
    rc |= parity_report_set(pClasses, "suspicious", report_uint(pJ->nSuspicious));
    rc |= parity_report_set(pClasses, "vacuous_bound", report_uint(pJ->nVacuous));
    rc |= parity_report_set(pObj, "model", parity_report_string(pT->zModelOp));
    rc |= parity_report_set(pObj, "model_description", parity_report_string(pT->zModel));
    rc |= parity_report_set(pObj, "acc_dtype", report_dtype(pT->accDtype));
    rc |= parity_report_set(pObj, "reference", json_string(pJ->sampled ? "sampled" : "all"));
    rc |= parity_report_set(pObj, "checked", report_uint(pJ->nChecked));
    rc |= parity_report_set(pObj, "slow_path", report_uint(pJ->nSlowPath));
    rc |= parity_report_set(pObj, "flagged", pJ->sampled ? report_uint(pJ->nFlagged) : json_null());
    rc |= parity_report_set(pObj, "sampled", pJ->sampled ? report_uint(pJ->nSampled) : json_null());
    rc |= parity_report_set(pObj, "max_bound", report_real(pJ->maxBound));
    rc |= parity_report_set(pObj, "bound", json_string(pJ->eagerScaled ? "eager_scaled"
                                                       : pJ->probabilisticDecides ? "probabilistic"
                                                                                  : "deterministic"));
    rc |= parity_report_set(pObj, "lambda", pJ->hasProbabilistic ? report_real(pJ->lambda) : json_null());
    rc |= parity_report_set(pObj, "suspicious", json_boolean(pJ->nSuspicious > 0));
    rc |= parity_report_set(pObj, "suspicious_rule",
                            json_string(pJ->suspectOverEager > 0.0 ? "tolerance_and_eager"
                                                                   : "probabilistic"));
    rc |= parity_report_set(pObj, "compiled_max_abs_err", report_real(pJ->maxErrCompiled));
    rc |= parity_report_set(pObj, "eager_max_abs_err", report_real(pJ->maxErrEager));
    rc |= parity_report_set(pObj, "compiled_max_ulp", report_real(pJ->maxUlpCompiled));
    rc |= parity_report_set(pObj, "eager_max_ulp", report_real(pJ->maxUlpEager));
    rc |= parity_report_set(pObj, "compiled_max_bound_ratio", report_real(pJ->maxRatioCompiled));
    rc |= parity_report_set(pObj, "eager_max_bound_ratio", report_real(pJ->maxRatioEager));
    rc |= parity_report_set(pObj, "classes", pClasses);
    rc |= parity_report_set(pObj, "local_check", pT->hasLocalCheck ? json_true() : json_false());
    rc |= parity_report_set(pObj, "local_failures",
                     pT->hasLocalCheck ? report_uint(pT->nLocalFail) : json_null());
    if (pT->nRegionOp > 0) {
        json_t *pRegion = json_object();
        int rcR = parity_report_set(pRegion, "ops",
                                    report_string_array(pT->azRegionOp, pT->nRegionOp));
        rcR |= parity_report_set(pRegion, "inputs",
                                 report_string_array(pT->azRegionInput, pT->nRegionInput));
        rc |= parity_report_set(pObj, "fused_region", parity_report_finish(pRegion, rcR));
    } else {
        rc |= parity_report_set(pObj, "fused_region", json_null());
    }
    return parity_report_finish(pObj, rc);
}

static json_t *report_tensor(const parity_tensor_result *pT, size_t iPosition)
{
    json_t *pObj = json_object();
    int rank, rc = 0;
    const uint64_t *aDim;
    int hasCompiled = parity_report_has_compiled(pT);

    parity_report_shape(pT, &rank, &aDim);
    rc |= parity_report_set(pObj, "name", parity_report_string(pT->zName));
    rc |= parity_report_set(pObj, "op", parity_report_string(pT->zOp));
    rc |= parity_report_set(pObj, "order", pT->hasOrder ? json_integer(pT->iOrder) : json_null());
    rc |= parity_report_set(pObj, "position", report_uint(iPosition));
    rc |= parity_report_set(pObj, "dtype", report_dtype(pT->dtype));
    rc |= parity_report_set(pObj, "compiled_dtype",
                     hasCompiled ? report_dtype(pT->dtypeCompiled) : json_null());
    rc |= parity_report_set(pObj, "shape", report_uint_array(rank, aDim));
    parity_report_compiled_shape(pT, &rank, &aDim);
    rc |= parity_report_set(pObj, "compiled_shape",
                     hasCompiled ? report_uint_array(rank, aDim) : json_null());
    rc |= parity_report_set(pObj, "status", json_string(parity_status_name(pT->status)));
    rc |= parity_report_set(pObj, "cause", parity_report_string(parity_cause_name(pT->cause)));
    rc |= parity_report_set(pObj, "message", parity_report_string(pT->zMessage));
    rc |= parity_report_set(pObj, "is_input", json_boolean(pT->isInput));
    rc |= parity_report_set(pObj, "warnings", report_string_array(pT->azWarning, pT->nWarning));
    rc |= parity_report_set(pObj, "tolerance", report_tolerance(&pT->tol));
    rc |= parity_report_set(pObj, "elements", report_uint(parity_report_elements(pT)));
    rc |= report_tensor_stats(pObj, pT);
    rc |= parity_report_set(pObj, "judgement", report_judgement(pT));
    rc |= parity_report_set(pObj, "model_note", parity_report_string(pT->zModelNote));
    rc |= parity_report_set(pObj, "rule", parity_report_string(pT->zRule));
    return parity_report_finish(pObj, rc);
}

/* ---- the document --------------------------------------------------------------- */

static json_t *report_summary(const parity_diff_result *pRes)
{
    json_t *pObj = json_object();
    uint64_t aCount[PARITY_REPORT_NSTATUS];
    int st, rc = 0;

    parity_report_count_statuses(pRes, aCount);
    for (st = 0; st < PARITY_REPORT_NSTATUS; st++)
        rc |= parity_report_set(pObj, parity_status_name((parity_status)st), report_uint(aCount[st]));
    rc |= parity_report_set(pObj, "tensors", report_uint(pRes->nTensor));
    return parity_report_finish(pObj, rc);
}

static json_t *report_options(const parity_diff_result *pRes)
{
    json_t *pObj = json_object();
    int rc = 0;

    rc |= parity_report_set(pObj, "strict", json_boolean(pRes->strict));
    rc |= parity_report_set(pObj, "signed_zeros", json_boolean(pRes->signedZeros));
    return parity_report_finish(pObj, rc);
}

void parity_report_use_allocator(void)
{
    /* parity_malloc's memory is malloc's, so objects made before the call free fine */
    json_set_alloc_funcs(parity_malloc, parity_free);
}

json_t *parity_report_json_build(const parity_diff_result *pRes)
{
    json_t *pDoc, *pTensors;
    size_t i;
    int rc = 0;

    parity_report_use_allocator();
    pDoc = json_object();
    pTensors = json_array();
    rc |= parity_report_set(pDoc, "parity_report_version", json_integer(REPORT_JSON_VERSION));
    rc |= parity_report_set(pDoc, "tool", json_string("paritydiff"));
    rc |= parity_report_set(pDoc, "eager", parity_report_string(pRes->zEagerFile));
    rc |= parity_report_set(pDoc, "compiled", parity_report_string(pRes->zCompiledFile));
    rc |= parity_report_set(pDoc, "verdict", json_string(parity_verdict_name(pRes->verdict)));
    rc |= parity_report_set(pDoc, "error", parity_report_string(pRes->zError));
    rc |= parity_report_set(pDoc, "first_divergence", parity_report_string(pRes->zFirstDivergence));
    rc |= parity_report_set(pDoc, "inputs_match", json_boolean(pRes->inputsMatch));
    rc |= parity_report_set(pDoc, "inputs_differ",
                     report_string_array(pRes->azInputDiffers, pRes->nInputDiffers));
    rc |= parity_report_set(pDoc, "options", report_options(pRes));
    rc |= parity_report_set(pDoc, "identity", report_root_attrs(pRes, 0));
    rc |= parity_report_set(pDoc, "telemetry", report_root_attrs(pRes, 1));
    rc |= parity_report_set(pDoc, "warnings", report_string_array(pRes->azWarning, pRes->nWarning));
    rc |= parity_report_set(pDoc, "summary", report_summary(pRes));
    for (i = 0; i < pRes->nTensor && rc == 0; i++)
        rc |= parity_report_append(pTensors, report_tensor(&pRes->aTensor[i], i));
    /* Last, so the overview stays at the top of the file. Consumes pTensors. */
    rc |= parity_report_set(pDoc, "tensors", pTensors);
    return parity_report_finish(pDoc, rc);
}

/* ---- writing -------------------------------------------------------------------- */

/* Syncs the directory holding zPath so the rename itself survives a crash. Best effort:
 * some file systems refuse fsync on directories, and the report is complete regardless. */
static void report_sync_dir(const char *zPath)
{
    const char *zSlash = strrchr(zPath, '/');
    char zDir[4096];
    int fd, nDir = zSlash == NULL ? 0 : zSlash == zPath ? 1 : (int)(zSlash - zPath);

    if (zSlash == NULL) snprintf(zDir, sizeof zDir, ".");
    else if ((size_t)nDir < sizeof zDir) snprintf(zDir, sizeof zDir, "%.*s", nDir, zPath);
    else return;   /* a folder name that long: no sync, as on a file system without one */
    fd = open(zDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* json_dumpf fails alike when jansson's buffer cannot be had and when the file cannot be
 * written: the allocator's sticky flag tells the two apart. */
static int dump_failed(json_t *pDoc, FILE *pFile, int *pOom)
{
    int failed;
    parity_alloc_reset_failed();
    failed = json_dumpf(pDoc, pFile, REPORT_DUMP_FLAGS) != 0;
    *pOom = failed && parity_alloc_failed();
    return failed;
}

/* The JSON document and its final newline, as a parity_report_write_file writer. */
static int write_json_doc(void *pCtx, FILE *pFile)
{
    int oom;
    if (dump_failed(pCtx, pFile, &oom) || fputc('\n', pFile) == EOF) return oom ? -2 : -1;
    return 0;
}

/* A report to a path that is not a regular file (/dev/null, /dev/stdout, a FIFO a reader
 * waits on): written in place. Renaming a temporary file over it would replace the device
 * or the pipe with a plain file: as root, `--json /dev/null` once left the machine
 * without a /dev/null. */
static int write_in_place(const char *zPath, int (*xWrite)(void *pCtx, FILE *pFile),
                          void *pCtx, char *zErr, size_t nErr)
{
    FILE *pFile = fopen(zPath, "w");
    int wrc;
    if (pFile == NULL) {
        snprintf(zErr, nErr, "cannot open %s: %s", zPath, strerror(errno));
        return -1;
    }
    wrc = xWrite(pCtx, pFile);
    if (wrc != 0 || fflush(pFile) != 0 || ferror(pFile)) {
        if (wrc == -2) snprintf(zErr, nErr, "out of memory writing %s", zPath);
        else snprintf(zErr, nErr, "cannot write %s: %s", zPath, strerror(errno));
        fclose(pFile);
        return -1;
    }
    if (fclose(pFile) != 0) {
        snprintf(zErr, nErr, "cannot close %s: %s", zPath, strerror(errno));
        return -1;
    }
    return 0;
}

int parity_report_write_file(const char *zPath, int (*xWrite)(void *pCtx, FILE *pFile),
                             void *pCtx, char *zErr, size_t nErr)
{
    char *zTemp = NULL;
    FILE *pFile = NULL;
    int fd = -1, rc = -1, wrc;
    mode_t mask;
    size_t nTemp = strlen(zPath) + sizeof ".XXXXXX";
    struct stat st;

    if (stat(zPath, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        return write_in_place(zPath, xWrite, pCtx, zErr, nErr);
    if (strcmp(zPath, "-") == 0) {
        wrc = xWrite(pCtx, stdout);
        if (wrc != 0 || fflush(stdout) != 0 || ferror(stdout)) {
            if (wrc == -2) snprintf(zErr, nErr, "out of memory writing a report to stdout");
            else snprintf(zErr, nErr, "cannot write a report to stdout: %s", strerror(errno));
            return -1;
        }
        return 0;
    }
    /* Beside the target, so the rename stays within one file system. */
    zTemp = parity_malloc(nTemp);
    if (zTemp == NULL) {
        snprintf(zErr, nErr, "out of memory writing %s", zPath);
        goto cleanup;
    }
    snprintf(zTemp, nTemp, "%s.XXXXXX", zPath);
    fd = mkstemp(zTemp);
    if (fd < 0) {
        snprintf(zErr, nErr, "cannot create a temporary file for %s: %s", zPath,
                 strerror(errno));
        free(zTemp);
        zTemp = NULL;   /* nothing was created, so nothing to remove */
        goto cleanup;
    }
    /* mkstemp creates 0600; give the report the mode a plain fopen would (0666 less the
     * umask). umask can only be read by setting it, which is harmless here: reports are
     * written after the compute threads have finished. */
    mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0) {
        snprintf(zErr, nErr, "cannot set the mode of %s: %s", zTemp, strerror(errno));
        goto cleanup;
    }
    pFile = fdopen(fd, "w");
    if (pFile == NULL) {
        snprintf(zErr, nErr, "cannot open %s: %s", zTemp, strerror(errno));
        goto cleanup;
    }
    fd = -1;   /* owned by pFile now */
    wrc = xWrite(pCtx, pFile);
    if (wrc != 0 || fflush(pFile) != 0 || ferror(pFile)) {
        if (wrc == -2) snprintf(zErr, nErr, "out of memory writing %s", zPath);
        else snprintf(zErr, nErr, "cannot write %s: %s", zTemp, strerror(errno));
        goto cleanup;
    }
    if (fsync(fileno(pFile)) != 0) {
        snprintf(zErr, nErr, "cannot sync %s: %s", zTemp, strerror(errno));
        goto cleanup;
    }
    if (fclose(pFile) != 0) {
        pFile = NULL;
        snprintf(zErr, nErr, "cannot close %s: %s", zTemp, strerror(errno));
        goto cleanup;
    }
    pFile = NULL;
    if (rename(zTemp, zPath) != 0) {
        snprintf(zErr, nErr, "cannot rename %s to %s: %s", zTemp, zPath, strerror(errno));
        goto cleanup;
    }
    free(zTemp);
    zTemp = NULL;
    report_sync_dir(zPath);
    rc = 0;

cleanup:
    if (pFile) fclose(pFile);
    if (fd >= 0) close(fd);
    if (zTemp) {
        unlink(zTemp);
        free(zTemp);
    }
    return rc;
}

int parity_report_json_write(json_t *pDoc, const char *zPath, char *zErr, size_t nErr)
{
    return parity_report_write_file(zPath, write_json_doc, pDoc, zErr, nErr);
}

int parity_report_json(const parity_diff_result *pRes, const char *zPath, char *zErr,
                       size_t nErr)
{
    json_t *pDoc = parity_report_json_build(pRes);
    int rc;

    if (pDoc == NULL) {
        snprintf(zErr, nErr, "out of memory building the JSON report");
        return -1;
    }
    rc = parity_report_json_write(pDoc, zPath, zErr, nErr);
    json_decref(pDoc);
    return rc;
}
