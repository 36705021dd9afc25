/*
 * report_fuzz.c - the JSON summary of a parityfuzz campaign. Field names and meanings are
 * documented in fuzz/FUZZ.md; the writer only reads the campaign's result.
 */
#include <stdio.h>
#include <string.h>
#include "formats/escape.h"
#include "reports/report.h"
#include "reports/report_fuzz.h"
#include "reports/report_internal.h"

static json_t *finding_json(const parity_finding *pF)
{
    return json_pack("{s:s, s:s, s:s, s:o, s:s, s:f, s:b}",
                     "signature", pF->zSignature, "op", pF->zOp, "class",
                     parity_finding_class_name(pF->cls),
                     "repro", pF->zRepro ? json_string(pF->zRepro) : json_null(),
                     "detail", pF->zDetail, "found_at_s", pF->tFound, "minimal", pF->minimal);
}

/* A comma-separated list as a JSON array of strings. */
static json_t *list_json(const char *z)
{
    json_t *p = json_array();
    while (p && z && *z) {
        size_t n = strcspn(z, ",");
        if (parity_report_append(p, json_stringn(z, n)) != 0) {
            json_decref(p);
            return NULL;
        }
        z += n + (z[n] == ',');
    }
    return p;
}

json_t *parity_report_root_causes_json(const parity_finding *aFinding,
                                       const parity_root_cause *aCause, size_t nCause)
{
    json_t *pList = json_array();
    size_t i, k;
    for (i = 0; i < nCause && pList; i++) {
        const parity_root_cause *pC = &aCause[i];
        json_t *pSigs = json_array();
        for (k = 0; k < pC->nFinding && pSigs; k++)
            if (parity_report_append(pSigs, json_string(aFinding[pC->aiFinding[k]].zSignature)) != 0) {
                json_decref(pSigs);
                pSigs = NULL;
            }
        if (parity_report_append(pList, json_pack("{s:s, s:o, s:s, s:o, s:s, s:o, s:s, s:I, s:o, s:o}",
                "op", pC->cause.zKernel, "ops", list_json(pC->zOps), "dtype", pC->zDtypes,
                "dtypes", list_json(pC->zDtypes),
                "symptom", pC->cause.shape ? pC->zSymptoms : pC->cause.zSymptom,
                "symptoms", list_json(pC->zSymptoms),
                "trigger", pC->cause.zTrigger, "count", (json_int_t)pC->nFinding,
                "signatures", pSigs ? pSigs : json_null(),
                "repro", pC->hasRepro ? json_string(aFinding[pC->iRepro].zRepro) : json_null())) != 0) {
            json_decref(pList);
            pList = NULL;
        }
    }
    return pList;
}

/* The target's time by side: seconds of its runs, of which compiling (what the target
 * said), and the compiled side's compile share. */
static json_t *times_json(const parity_target_times *pT)
{
    double comp = pT->runSeconds[1];
    return json_pack("{s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:f}",
                     "eager_s", pT->runSeconds[0], "compiled_s", comp,
                     "eager_compile_s", pT->compileSeconds[0],
                     "compiled_compile_s", pT->compileSeconds[1],
                     "eager_runs", (json_int_t)pT->nRuns[0],
                     "compiled_runs", (json_int_t)pT->nRuns[1],
                     "compiles", (json_int_t)pT->nCompiles[1],
                     "compile_share", comp > 0 ? pT->compileSeconds[1] / comp : 0.0);
}

/* Writes a built summary (NULL: memory ran out building it) and lets it go. */
static int write_summary(json_t *pDoc, const char *zPath, char *zErr, size_t nErr)
{
    int rc;
    if (!pDoc) {
        snprintf(zErr, nErr, "out of memory building the JSON summary");
        return -1;
    }
    rc = parity_report_json_write(pDoc, zPath, zErr, nErr);
    json_decref(pDoc);
    return rc;
}

int parity_report_fuzz_json(const parity_campaign_result *pRes, const char *zPath, char *zErr,
                            size_t nErr)
{
    json_t *pDoc, *pFindings, *pDefects, *pOps;
    size_t i;
    int rc;

    parity_report_use_allocator();
    pFindings = json_array();
    pDefects = json_array();
    pOps = json_object();
    if (!pFindings || !pDefects || !pOps) {
        json_decref(pFindings);
        json_decref(pDefects);
        json_decref(pOps);
        snprintf(zErr, nErr, "out of memory building the JSON summary");
        return -1;
    }
    /* every entry or none: a finding lost to out of memory must not leave a summary that
     * reads whole */
    rc = 0;
    for (i = 0; i < pRes->nFinding; i++)
        rc |= parity_report_append(pFindings, finding_json(&pRes->aFinding[i]));
    for (i = 0; i < pRes->nDefect; i++)
        rc |= parity_report_append(pDefects, json_string(pRes->azDefect[i]));
    for (i = 0; i < pRes->nOp; i++)
        rc |= parity_report_set(pOps, pRes->azOp[i], json_integer((json_int_t)pRes->anOpExecs[i]));
    if (rc != 0) {
        json_decref(pFindings);
        json_decref(pDefects);
        json_decref(pOps);
        snprintf(zErr, nErr, "out of memory building the JSON summary");
        return -1;
    }
    pDoc = json_pack("{s:s, s:i, s:s, s:o, s:s, s:I, s:I, s:I, s:f, s:f, s:o, s:I, s:I, s:I, "
                     "s:I, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:i}",
                     "tool", "parityfuzz", "schema_version", 1, "target", pRes->zTarget,
                     "defects", pDefects,
                     "strategy", pRes->zStrategy, "seed", (json_int_t)pRes->seed,
                     "execs", (json_int_t)pRes->nExecs,
                     "minimize_execs", (json_int_t)pRes->nMinimizeExecs,
                     "elapsed_s", pRes->elapsed,
                     "execs_per_s", pRes->elapsed > 0 ? (double)pRes->nExecs / pRes->elapsed : 0.0,
                     "first_finding_s",
                     pRes->firstFinding >= 0 ? json_real(pRes->firstFinding) : json_null(),
                     "skipped", (json_int_t)pRes->nSkipped,
                     "bit_identical", (json_int_t)pRes->nBitIdentical,
                     "judged", (json_int_t)pRes->nJudged,
                     "eager_beyond_bound", (json_int_t)pRes->nEagerWrong,
                     "eager_beyond_bound_first",
                     pRes->zEagerWrong[0] ? json_string(pRes->zEagerWrong) : json_null(),
                     "raw_findings", (json_int_t)pRes->nRawFindings,
                     "root_causes", parity_report_root_causes_json(pRes->aFinding, pRes->aCause,
                                                                   pRes->nCause),
                     "findings", pFindings, "cases_per_op", pOps,
                     "time", times_json(&pRes->times),
                     "trouble", pRes->trouble ? json_string(pRes->zTrouble) : json_null(),
                     "jobs", pRes->jobs);
    return write_summary(pDoc, zPath, zErr, nErr);
}

static json_t *dims_json(int rank, const uint64_t *aDim)
{
    json_t *p = json_array();
    int d;
    for (d = 0; d < rank && p; d++)
        if (parity_report_append(p, json_integer((json_int_t)aDim[d])) != 0) {
            json_decref(p);
            return NULL;
        }
    return p;
}

int parity_report_shrink_json(const parity_stored_op *pS, const parity_stored_minimized *pMin,
                              int diverges, const char *zRepro, const char *zPath, char *zErr,
                              size_t nErr)
{
    uint64_t aOffset[PARITY_MAX_RANK] = { 0 }, aCropDims[PARITY_MAX_RANK];
    const parity_tensor_info *pT = parity_capture_tensor(pS->pCompiledCap, (size_t)pS->iCompiled);
    json_t *pDoc;
    int k;

    parity_report_use_allocator();
    for (k = 0; k < pS->nAxis; k++) {
        aCropDims[k] = (uint64_t)pS->aAxis[k].outAxis;
        if (diverges) aOffset[pS->aAxis[k].outAxis] = pMin->crop.aLo[k];
    }
    pDoc = json_pack("{s:s, s:i, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:s, s:o, s:I, s:b, s:o}",
                     "tool", "parityfuzz shrink", "schema_version", 1, "tensor", pT->zPath,
                     "op", pS->whole.spec.zOp,
                     "family", parity_op_family_name(pS->whole.pDef->family),
                     "source_shape", dims_json(pS->whole.outRank, pS->whole.aOutDim),
                     "crop_dims", dims_json(pS->nAxis, aCropDims),
                     "shape", diverges ? dims_json(pMin->crop.c.outRank, pMin->crop.c.aOutDim)
                                       : json_null(),
                     "offset", diverges ? dims_json(pS->whole.outRank, aOffset) : json_null(),
                     "whole", pMin->first.zDetail,
                     "detail", diverges ? json_string(pMin->result.zDetail) : json_null(),
                     "execs", (json_int_t)pMin->nExecs, "minimal", diverges && pMin->minimal,
                     "repro", zRepro ? json_string(zRepro) : json_null());
    return write_summary(pDoc, zPath, zErr, nErr);
}

/* "max/min (relu, maximum) float32,bfloat16: nan lost, trigger nan input" */
static void put_cause(FILE *pOut, const parity_root_cause *pC)
{
    fprintf(pOut, "%s", pC->cause.zKernel);
    if (strcmp(pC->cause.zKernel, pC->zOps) != 0) {
        fputs(" (", pOut);
        parity_escape_fputs(pC->zOps, pOut);
        fputc(')', pOut);
    }
    fprintf(pOut, " %s: %s", pC->zDtypes, pC->cause.shape ? pC->zSymptoms : pC->cause.zSymptom);
    if (strcmp(pC->cause.zTrigger, "-") != 0) fprintf(pOut, ", trigger %s", pC->cause.zTrigger);
}

int parity_report_root_causes_text(FILE *pOut, const parity_finding *aFinding,
                                   const parity_root_cause *aCause, size_t nCause)
{
    size_t i;
    for (i = 0; i < nCause; i++) {
        const parity_root_cause *pC = &aCause[i];
        fprintf(pOut, "root cause %zu: ", i + 1);
        put_cause(pOut, pC);
        fprintf(pOut, "; %zu signature%s\n", pC->nFinding, pC->nFinding == 1 ? "" : "s");
        if (pC->hasRepro) {
            fputs("  repro: ", pOut);
            parity_escape_fputs(aFinding[pC->iRepro].zRepro, pOut);
            fputc('\n', pOut);
        }
    }
    return ferror(pOut) ? -1 : 0;
}

/* ---- graph campaigns ---------------------------------------------------------------- */

void parity_report_graph_causes_text(FILE *pOut, const parity_graph_cause *aCause,
                                     size_t nCause, const char *zLabel, const char *zCounted)
{
    size_t i;
    for (i = 0; i < nCause; i++) {
        const parity_graph_cause *p = &aCause[i];
        fprintf(pOut, "%s %zu: %s (%s) %s: %s; %llu %s%s\n", zLabel, i + 1, p->zFamily,
                p->zOps, parity_dtype_name(p->dtype), p->zSymptom,
                (unsigned long long)p->count, zCounted, p->count == 1 ? "" : "s");
        fprintf(pOut, "  case: %s\n  judged: %s\n", p->zCase, p->zDetail);
        if (p->zRepro[0]) fprintf(pOut, "  repro: %s\n", p->zRepro);
    }
}

int parity_report_graph_fuzz_text(FILE *pOut, const parity_graph_campaign_result *pRes)
{
    if (pRes->zNotice[0]) fprintf(pOut, "parityfuzz graph: %s\n", pRes->zNotice);
    parity_report_graph_causes_text(pOut, pRes->aCause, pRes->nCause, "root cause", "finding");
    fprintf(pOut, "parityfuzz graph: %s: %llu execs in %.1f s (%.1f exec/s): %llu judged, %llu "
            "bit-identical to eager, %llu skipped, %llu errors; %llu findings in %zu root "
            "cause%s (minimizing: %llu execs)\n", pRes->zTarget,
            (unsigned long long)pRes->nExecs, pRes->seconds,
            pRes->seconds > 0 ? (double)pRes->nExecs / pRes->seconds : 0.0,
            (unsigned long long)pRes->nJudged, (unsigned long long)pRes->nIdentical,
            (unsigned long long)pRes->nSkipped, (unsigned long long)pRes->nErrors,
            (unsigned long long)pRes->nFindings, pRes->nCause, pRes->nCause == 1 ? "" : "s",
            (unsigned long long)pRes->nMinimizeExecs);
    return ferror(pOut) ? -1 : 0;
}

json_t *parity_report_graph_causes_json(const parity_graph_cause *aCause, size_t nCause)
{
    json_t *pCauses = json_array();
    size_t i;
    int rc = 0;
    parity_report_use_allocator();
    for (i = 0; pCauses && i < nCause; i++) {
        const parity_graph_cause *p = &aCause[i];
        rc |= parity_report_append(pCauses, json_pack(
            "{s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:o}", "family", p->zFamily, "ops", p->zOps,
            "dtype", parity_dtype_name(p->dtype),
            "symptom", p->zSymptom, "count", (json_int_t)p->count,
            "case", p->zCase, "judged", p->zDetail,
            "repro", p->zRepro[0] ? json_string(p->zRepro) : json_null()));
    }
    if (rc != 0) {
        json_decref(pCauses);
        return NULL;
    }
    return pCauses;
}

int parity_report_graph_fuzz_json(const parity_graph_campaign_result *pRes, const char *zPath,
                                  char *zErr, size_t nErr)
{
    json_t *pDoc, *pCauses, *pDefects;
    size_t i;
    int rc = 0;
    parity_report_use_allocator();
    pCauses = parity_report_graph_causes_json(pRes->aCause, pRes->nCause);
    pDefects = json_array();
    for (i = 0; pDefects && i < parity_graph_defect_count; i++)
        if (pRes->defects & parity_graph_defects[i].bit)
            rc |= parity_report_append(pDefects, json_string(parity_graph_defects[i].zName));
    if (!pCauses || !pDefects || rc != 0) {
        json_decref(pCauses);
        json_decref(pDefects);
        snprintf(zErr, nErr, "out of memory building the JSON summary");
        return -1;
    }
    pDoc = json_pack("{s:s, s:i, s:s, s:o, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
                     "tool", "parityfuzz graph", "schema_version", 1, "target", pRes->zTarget,
                     "defects", pDefects, "seed", (json_int_t)pRes->seed,
                     "execs", (json_int_t)pRes->nExecs, "elapsed_s", pRes->seconds,
                     "judged", (json_int_t)pRes->nJudged,
                     "bit_identical", (json_int_t)pRes->nIdentical,
                     "skipped", (json_int_t)pRes->nSkipped,
                     "errors", (json_int_t)pRes->nErrors,
                     "findings", (json_int_t)pRes->nFindings,
                     "minimize_execs", (json_int_t)pRes->nMinimizeExecs,
                     "root_causes", pCauses);
    return write_summary(pDoc, zPath, zErr, nErr);
}
