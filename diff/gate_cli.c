/*
 * gate_cli.c - `paritydiff gate` and `paritydiff gate merge` (diff/GATE.md).
 *
 *   paritydiff gate [OPTIONS] SUITE
 *   paritydiff gate merge [OPTIONS] SHARD.json...
 *
 * Both end in the same evaluation (slices, policy, history, reports), so a suite judged in
 * shards and merged gives the document an unsharded run gives. Exit 0 pass, 1 an alert
 * fired, 2 trouble; exit 2 is one line on stderr.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "diff/gate.h"
#include "formats/escape.h"
#include "reports/report.h"
#include "reports/report_gate.h"
#include "reports/report_internal.h"

#define MAX_SHARDS 4096

typedef struct {
    parity_gate_judge_options judge;
    const char *zPolicy, *zTraffic, *zHistory, *zTimestamp, *zRunId, *zSliceKeys;
    const char *zJson, *zJunit, *zMetrics, *zHtml, *zMitigations, *zTolerance;
    int quiet;
    int shardIndex, shardCount;        /* count 0: unsharded */
} gate_args;

static int gate_error(const char *zMsg)
{
    parity_escape_line(stderr, "paritydiff gate", zMsg, NULL);
    return 2;
}

static int usage_error(const char *zFmt, const char *zArg)
{
    char zMsg[1024];
    snprintf(zMsg, sizeof zMsg, zFmt, zArg);
    parity_escape_line(stderr, "paritydiff gate", zMsg, NULL);
    fprintf(stderr, "Try 'paritydiff gate --help' for more information.\n");
    return 2;
}

static void usage(void)
{
    printf(
"Usage: paritydiff gate [OPTIONS] SUITE\n"
"       paritydiff gate merge [OPTIONS] SHARD.json...\n"
"Judge every capture pair of a suite (a folder of folders holding eager.h5 and\n"
"compiled.h5, or a manifest of 'EAGER COMPILED [ID]' lines), slice the pairs by their\n"
"labels, put parity, outcome agreement and compile telemetry side by side per slice,\n"
"and alert per the policy.\n"
"\n"
"Gate:\n"
"      --policy FILE       rules with owners, normal ranges, persistence, mitigations\n"
"                          (YAML; default: every judged pair must pass, every slice\n"
"                          must have evidence)\n"
"      --traffic FILE      share of traffic per slice (CSV: slice keys, share)\n"
"      --history FILE      append the run to this SQLite history; persistence counts\n"
"                          consecutive out-of-range runs from it\n"
"      --slice-keys K,...  labels that form slices (default: the policy's, else\n"
"                          workload,shape_bucket)\n"
"      --timestamp TS      the run's time (ISO 8601, UTC; default: now)\n"
"      --run-id ID         the run's id (default: from the timestamp and process)\n"
"      --shard I/N         judge pairs I, I+N, ... only; write them for 'gate merge'\n"
"      --history-schema    print the history's SQL schema (SQLite and PostgreSQL) and exit\n"
"\n"
"Output (each written atomically):\n"
"      --json FILE         the gate's JSON document (diff/GATE.md)\n"
"      --junit FILE        JUnit XML: a testsuite per slice, a testcase per pair\n"
"      --metrics FILE      OpenMetrics text\n"
"      --html FILE         a self-contained HTML report\n"
"      --mitigations FILE  the mitigations a serving runtime applies\n"
"  -q, --quiet             no text report\n"
"      --progress          a line on stderr per judged pair\n"
"\n"
"Judging (per pair, as paritydiff):\n"
"      --tolerance FILE    op model overrides (tolerance/TOLERANCE.md)\n"
"      --rtol X, --atol X, --max-ulp N, --signed-zeros, --strict\n"
"                          as paritydiff's, for every pair\n"
"      --map-prefix OLD=NEW  rename tensors under OLD in both captures of every pair\n"
"                          (repeatable; /_orig_mod=/ for torch.compile)\n"
"      --jobs N            pairs judged at once (default: cores)\n"
"      --timeout SEC       per pair (default 3600, 0: none)\n"
"      --stall-timeout SEC per pair, no progress reading (default 60)\n"
"      --max-memory MIB    per pair's process (default 8192, 0: none)\n"
"\n"
"Exit status: 0 the gate passes, 1 an alert fired, 2 trouble.\n");
}

static int parse_count(const char *z, long lo, long hi, long *pOut)
{
    char *zEnd;
    errno = 0;
    *pOut = strtol(z, &zEnd, 10);
    return errno == 0 && zEnd != z && *zEnd == 0 && *pOut >= lo && *pOut <= hi;
}

/* The slice keys as a JSON array: --slice-keys, else the policy's, else the default; then
 * every key a rule's selector names that is not among them (GATE.md: the labels are the
 * slice keys and any other keys the policy names), so a selector can always match. */
static json_t *slice_keys(const gate_args *pArgs, const parity_gate_policy *pPolicy)
{
    json_t *p = json_array(), *pKey;
    size_t i, j, k;
    int rc = 0;
    if (pArgs->zSliceKeys) {
        char *zCopy = strdup(pArgs->zSliceKeys), *zSave = NULL, *zTok;
        for (zTok = zCopy ? strtok_r(zCopy, ",", &zSave) : NULL; zTok; zTok = strtok_r(NULL, ",", &zSave))
            rc |= parity_report_append(p, json_string(zTok));
        free(zCopy);
    } else if (pPolicy->nKey) {
        for (i = 0; i < pPolicy->nKey; i++) rc |= parity_report_append(p, json_string(pPolicy->azKey[i]));
    } else {
        rc |= parity_report_append(p, json_string("workload"));
        rc |= parity_report_append(p, json_string("shape_bucket"));
    }
    for (i = 0; rc == 0 && i < pPolicy->nRule; i++)
        for (j = 0; j < pPolicy->aRule[i].nSelect; j++) {
            const char *zSel = pPolicy->aRule[i].azSelectKey[j];
            int have = 0;
            json_array_foreach(p, k, pKey) have |= strcmp(json_string_value(pKey), zSel) == 0;
            if (!have) rc |= parity_report_append(p, json_string(zSel));
        }
    return parity_report_finish(p, rc);
}

/* Every key of the traffic file must be a slice key: a row is matched to slices by them. */
static int check_traffic_keys(const parity_gate_traffic *pT, const json_t *pKeys, const char *zPath,
                              char *zErr, size_t nErr)
{
    size_t t, k;
    json_t *pKey;
    for (t = 0; t < pT->nKey; t++) {
        int have = 0;
        json_array_foreach(pKeys, k, pKey) have |= strcmp(json_string_value(pKey), pT->azKey[t]) == 0;
        if (!have) {
            char *zKeys = json_dumps(pKeys, JSON_COMPACT);
            snprintf(zErr, nErr, "%s:1: '%s' is not a slice key (slice keys: %s)", zPath,
                     pT->azKey[t], zKeys ? zKeys : "?");
            free(zKeys);
            return -1;
        }
    }
    return 0;
}

/* Without --policy: every judged pair passes, and every slice has evidence. */
static int default_policy(parity_gate_policy *pPolicy)
{
    static const parity_gate_metric aMetric[2] = { PARITY_GM_NUMERICAL_PARITY, PARITY_GM_COVERAGE };
    size_t i;
    memset(pPolicy, 0, sizeof *pPolicy);
    pPolicy->aRule = calloc(2, sizeof *pPolicy->aRule);
    if (pPolicy->aRule == NULL) return -1;
    for (i = 0; i < 2; i++) {
        parity_gate_rule *p = &pPolicy->aRule[i];
        char zName[64];
        snprintf(zName, sizeof zName, "%s#%zu", parity_gate_metric_name(aMetric[i]), i + 1);
        p->metric = aMetric[i];
        p->zName = strdup(zName);
        p->zOwner = strdup("(no policy)");
        p->zMitigation = strdup("none");
        p->hasMin = 1;
        p->min = 1.0;
        p->persistence = 1;
        pPolicy->nRule++;
        if (!p->zName || !p->zOwner || !p->zMitigation) return -1;
    }
    return 0;
}

static json_t *run_identity(const gate_args *pArgs, const char *zSuite, const json_t *pShard)
{
    char zTime[64], zId[128];
    time_t now = time(NULL);
    struct tm tmUtc;
    if (pArgs->zTimestamp) {
        snprintf(zTime, sizeof zTime, "%s", pArgs->zTimestamp);
    } else {
        gmtime_r(&now, &tmUtc);
        strftime(zTime, sizeof zTime, "%Y-%m-%dT%H:%M:%SZ", &tmUtc);
    }
    if (pArgs->zRunId) snprintf(zId, sizeof zId, "%s", pArgs->zRunId);
    else snprintf(zId, sizeof zId, "%s-%ld", zTime, (long)getpid());
    return json_pack("{s:s,s:s,s:s?,s:s?,s:O}", "id", zId, "timestamp", zTime, "suite", zSuite,
                     "policy", pArgs->zPolicy, "shard", pShard ? pShard : json_null());
}

/* Writes every report asked for; returns the exit status the writing allows (2 when a
 * report could not be written, after saying so once). */
static int write_reports(const gate_args *pArgs, json_t *pDoc, int code)
{
    char zErr[PARITY_GATE_ERR_LEN];
    struct {
        const char *zPath;
        int (*xWrite)(const json_t *, const char *, char *, size_t);
    } aOut[4] = {
        { pArgs->zJunit, parity_report_gate_junit },
        { pArgs->zMetrics, parity_report_gate_metrics },
        { pArgs->zHtml, parity_report_gate_html },
        { pArgs->zMitigations, parity_report_gate_mitigations },
    };
    size_t i;
    if (pArgs->zJson && parity_report_json_write(pDoc, pArgs->zJson, zErr, sizeof zErr) != 0)
        return code == 2 ? 2 : gate_error(zErr);
    for (i = 0; i < 4; i++)
        if (aOut[i].zPath && aOut[i].xWrite(pDoc, aOut[i].zPath, zErr, sizeof zErr) != 0)
            return code == 2 ? 2 : gate_error(zErr);
    if (!pArgs->quiet && !(pArgs->zJson && strcmp(pArgs->zJson, "-") == 0)) {
        if (parity_report_gate_text(pDoc, stdout) != 0 || fflush(stdout) != 0)
            return code == 2 ? 2 : gate_error("cannot write the report to stdout");
    }
    return code;
}

/* Moves "warnings" last, where GATE.md lists it, after the evaluation filled the rest. */
static void warnings_last(json_t *pDoc)
{
    json_t *pW = json_incref(json_object_get(pDoc, "warnings"));
    json_object_del(pDoc, "warnings");
    json_object_set_new(pDoc, "warnings", pW ? pW : json_array());
}

/* With a history: for every alert and pending alert, the rule's timeline over the past
 * runs with the boundary an investigation would find (GATE.md, "timelines"), read back
 * after this run was appended, so the HTML report can draw it. */
static int add_timelines(json_t *pDoc, parity_gate_history *pH, char *zErr, size_t nErr)
{
    json_t *pList = json_array(), *pA;
    const char *azList[2] = { "alerts", "pending" };
    const char *zAsOf = json_string_value(json_object_get(json_object_get(pDoc, "run"), "timestamp"));
    size_t i, k;
    for (k = 0; k < 2; k++)
        json_array_foreach(json_object_get(pDoc, azList[k]), i, pA) {
            char *zSlice = parity_gate_slice_name(json_object_get(pA, "labels"),
                                                  json_object_get(pDoc, "slice_keys"));
            json_t *pT = zSlice ? parity_investigate_timeline(pH, zSlice,
                             json_string_value(json_object_get(pA, "rule")),
                             json_string_value(json_object_get(pA, "metric")), zAsOf, zErr, nErr)
                                : NULL;
            free(zSlice);
            if (pT == NULL) {
                json_decref(pList);
                return -1;
            }
            json_object_set(pT, "rule", json_object_get(pA, "rule"));
            json_object_set(pT, "metric", json_object_get(pA, "metric"));
            json_object_set(pT, "labels", json_object_get(pA, "labels"));
            json_object_set(pT, "normal", json_object_get(pA, "normal"));
            json_object_set_new(pT, "fired", json_boolean(k == 0));
            json_array_append_new(pList, pT);
        }
    json_object_set_new(pDoc, "timelines", pList);
    return 0;
}

/* From the document's pairs to the verdict, reports and exit status. */
static int finish(const gate_args *pArgs, json_t *pDoc)
{
    parity_gate_policy policy;
    parity_gate_traffic traffic;
    parity_gate_history *pHistory = NULL;
    char zErr[PARITY_GATE_ERR_LEN] = "";
    json_t *pPair;
    size_t i, nError = 0;
    int code = 0, hasTraffic = 0, sharded = pArgs->shardCount > 0;
    const char *zFirstError = NULL;

    memset(&traffic, 0, sizeof traffic);
    if (pArgs->zPolicy ? parity_gate_policy_load(pArgs->zPolicy, &policy, zErr, sizeof zErr)
                       : default_policy(&policy)) {
        if (!pArgs->zPolicy) snprintf(zErr, sizeof zErr, "out of memory");
        return gate_error(zErr);
    }
    if (pArgs->zTraffic) {
        if (parity_gate_traffic_load(pArgs->zTraffic, &traffic, zErr, sizeof zErr) != 0) {
            parity_gate_policy_free(&policy);
            return gate_error(zErr);
        }
        hasTraffic = 1;
    }
    if (pArgs->zHistory && !sharded &&
        parity_gate_history_open(pArgs->zHistory, 0, &pHistory, zErr, sizeof zErr) != 0) {
        code = gate_error(zErr);
        goto done;
    }
    if (parity_report_set(pDoc, "slice_keys", slice_keys(pArgs, &policy)) != 0) {
        code = gate_error("out of memory building the slices");
        goto done;
    }
    if (hasTraffic && check_traffic_keys(&traffic, json_object_get(pDoc, "slice_keys"),
                                         pArgs->zTraffic, zErr, sizeof zErr) != 0) {
        code = gate_error(zErr);
        goto done;
    }
    if (parity_gate_build_slices(pDoc, hasTraffic ? &traffic : NULL) != 0) {
        code = gate_error("out of memory building the slices");
        goto done;
    }
    if (!sharded && parity_gate_evaluate(pDoc, &policy, pHistory, zErr, sizeof zErr) != 0) {
        code = gate_error(zErr);
        goto done;
    }
    json_array_foreach(json_object_get(pDoc, "pairs"), i, pPair)
        if (strcmp(json_string_value(json_object_get(pPair, "status")), "error") == 0) {
            if (nError++ == 0) zFirstError = json_string_value(json_object_get(pPair, "id"));
        }
    if (nError) code = 2;
    else if (!sharded && json_array_size(json_object_get(pDoc, "alerts")) > 0) code = 1;
    json_object_set_new(pDoc, "verdict", json_string(code == 2 ? "error" : sharded ? "partial"
                                                     : code == 1 ? "fail" : "pass"));
    if (pHistory && parity_gate_history_append(pHistory, pDoc, zErr, sizeof zErr) != 0) {
        code = gate_error(zErr);
        goto done;
    }
    if (pHistory && add_timelines(pDoc, pHistory, zErr, sizeof zErr) != 0) {
        code = gate_error(zErr);
        goto done;
    }
    warnings_last(pDoc);
    code = write_reports(pArgs, pDoc, code);
    if (nError) {
        const json_t *pFirst = NULL;
        json_array_foreach(json_object_get(pDoc, "pairs"), i, pPair)
            if (!pFirst && strcmp(json_string_value(json_object_get(pPair, "id")), zFirstError) == 0)
                pFirst = pPair;
        snprintf(zErr, sizeof zErr, "%zu pair%s could not be judged; first %s: %s", nError,
                 nError == 1 ? "" : "s", zFirstError,
                 json_string_value(json_object_get(pFirst, "error")));
        gate_error(zErr);
    }
done:
    parity_gate_history_close(pHistory);
    parity_gate_policy_free(&policy);
    parity_gate_traffic_free(&traffic);
    return code;
}

static json_t *new_doc(void)
{
    json_t *p = json_object();
    int rc = 0;
    rc |= parity_report_set(p, "schema", json_string("parity-gate/1"));
    rc |= parity_report_set(p, "verdict", json_string("error"));
    rc |= parity_report_set(p, "warnings", json_array());
    return parity_report_finish(p, rc);
}

static int run_suite(gate_args *pArgs, const char *zSuite)
{
    parity_gate_pair_spec *aSpec = NULL, *aMine;
    size_t nSpec = 0, nMine = 0, i;
    char zErr[PARITY_GATE_ERR_LEN];
    json_t *pDoc = new_doc(), *pPairs = json_array(), *pShard = NULL;
    int code;

    if (!pDoc || !pPairs) return gate_error("out of memory");
    if (parity_gate_suite_load(zSuite, &aSpec, &nSpec, zErr, sizeof zErr) != 0) {
        json_decref(pDoc);
        json_decref(pPairs);
        return gate_error(zErr);
    }
    /* This shard's pairs: every shardCount-th by id order, from shardIndex. */
    aMine = aSpec;
    nMine = nSpec;
    if (pArgs->shardCount) {
        size_t j = 0;
        for (i = 0; i < nSpec; i++)
            if (i % (size_t)pArgs->shardCount == (size_t)pArgs->shardIndex) {
                parity_gate_pair_spec tmp = aSpec[j];
                aSpec[j++] = aSpec[i];
                aSpec[i] = tmp;
            }
        nMine = j;
        pShard = json_pack("{s:i,s:i,s:I}", "index", pArgs->shardIndex, "count",
                           pArgs->shardCount, "suite_pairs", (json_int_t)nSpec);
    }
    if (parity_gate_judge(&pArgs->judge, aMine, nMine, pPairs, zErr, sizeof zErr) != 0) {
        parity_gate_suite_free(aSpec, nSpec);
        json_decref(pDoc);
        json_decref(pPairs);
        json_decref(pShard);
        return gate_error(zErr);
    }
    parity_gate_suite_free(aSpec, nSpec);
    json_object_set_new(pDoc, "run", run_identity(pArgs, zSuite, pShard));
    json_decref(pShard);
    json_object_set_new(pDoc, "pairs", pPairs);
    code = finish(pArgs, pDoc);
    json_decref(pDoc);
    return code;
}

static int by_pair_id(const void *pA, const void *pB)
{
    return strcmp(json_string_value(json_object_get(*(json_t *const *)pA, "id")),
                  json_string_value(json_object_get(*(json_t *const *)pB, "id")));
}

static int run_merge(gate_args *pArgs, int nFile, char **azFile)
{
    json_t *pDoc = new_doc(), *pPairs = json_array(), *pPair;
    json_t **apPair = NULL;
    char zErr[PARITY_GATE_ERR_LEN], *aSeen = NULL;
    const char *zSuite = NULL;
    long count = -1;
    size_t nPair = 0, i, nExpect = 0;
    int f, code = 2;

    for (f = 0; f < nFile; f++) {
        json_error_t jerr;
        json_t *pShardDoc = json_load_file(azFile[f], 0, &jerr), *pShard;
        long index, n;
        if (pShardDoc == NULL) {
            snprintf(zErr, sizeof zErr, "%s:%d: not a shard result: %s", azFile[f], jerr.line, jerr.text);
            goto fail;
        }
        pShard = json_object_get(json_object_get(pShardDoc, "run"), "shard");
        index = (long)json_integer_value(json_object_get(pShard, "index"));
        n = (long)json_integer_value(json_object_get(pShard, "count"));
        if (!json_is_object(pShard) || n < 1 || n > MAX_SHARDS || index < 0 || index >= n ||
            !json_is_array(json_object_get(pShardDoc, "pairs"))) {
            snprintf(zErr, sizeof zErr, "%s: not the JSON of a 'gate --shard I/N' run", azFile[f]);
            json_decref(pShardDoc);
            goto fail;
        }
        if (count < 0) {
            count = n;
            aSeen = calloc((size_t)n, 1);
            zSuite = NULL;
            nExpect = (size_t)json_integer_value(json_object_get(pShard, "suite_pairs"));
        }
        if (n != count || aSeen == NULL || aSeen[index]) {
            snprintf(zErr, sizeof zErr, "%s: shard %ld/%ld %s", azFile[f], index, n,
                     n != count ? "is of another split" : "is given twice");
            json_decref(pShardDoc);
            goto fail;
        }
        aSeen[index] = 1;
        if (zSuite == NULL && json_is_string(json_object_get(json_object_get(pShardDoc, "run"), "suite")))
            zSuite = strdup(json_string_value(json_object_get(json_object_get(pShardDoc, "run"), "suite")));
        json_array_foreach(json_object_get(pShardDoc, "pairs"), i, pPair) {
            json_object_del(pPair, "labels");   /* recomputed under this merge's keys */
            json_array_append(pPairs, pPair);
        }
        json_decref(pShardDoc);
    }
    for (i = 0; i < (size_t)count; i++)
        if (!aSeen[i]) {
            snprintf(zErr, sizeof zErr, "shard %zu of %ld is missing", i, count);
            goto fail;
        }
    nPair = json_array_size(pPairs);
    if (nPair != nExpect) {
        snprintf(zErr, sizeof zErr, "the shards hold %zu pairs, the suite %zu", nPair, nExpect);
        goto fail;
    }
    apPair = malloc((nPair ? nPair : 1) * sizeof *apPair);
    if (apPair == NULL) { snprintf(zErr, sizeof zErr, "out of memory"); goto fail; }
    for (i = 0; i < nPair; i++) apPair[i] = json_incref(json_array_get(pPairs, i));
    qsort(apPair, nPair, sizeof *apPair, by_pair_id);
    json_array_clear(pPairs);
    for (i = 0; i < nPair; i++) json_array_append_new(pPairs, apPair[i]);
    free(apPair);
    json_object_set_new(pDoc, "run", run_identity(pArgs, zSuite, NULL));
    json_object_set_new(pDoc, "pairs", pPairs);
    free((char *)zSuite);
    free(aSeen);
    pArgs->shardCount = 0;
    code = finish(pArgs, pDoc);
    json_decref(pDoc);
    return code;
fail:
    free((char *)zSuite);
    free(aSeen);
    json_decref(pDoc);
    json_decref(pPairs);
    return gate_error(zErr);
}

int parity_gate_main(int argc, char **argv)
{
    enum { O_POLICY = 256, O_TRAFFIC, O_HISTORY, O_TIMESTAMP, O_RUN_ID, O_SLICE_KEYS, O_JSON,
           O_JUNIT, O_METRICS, O_HTML, O_MITIGATIONS, O_TOLERANCE, O_JOBS, O_TIMEOUT, O_STALL,
           O_MEMORY, O_SHARD, O_PROGRESS, O_SCHEMA, O_RTOL, O_ATOL, O_MAX_ULP, O_SIGNED_ZEROS,
           O_STRICT, O_MAP_PREFIX };
    static const struct option aLong[] = {
        { "policy", required_argument, NULL, O_POLICY },
        { "traffic", required_argument, NULL, O_TRAFFIC },
        { "history", required_argument, NULL, O_HISTORY },
        { "timestamp", required_argument, NULL, O_TIMESTAMP },
        { "run-id", required_argument, NULL, O_RUN_ID },
        { "slice-keys", required_argument, NULL, O_SLICE_KEYS },
        { "json", required_argument, NULL, O_JSON },
        { "junit", required_argument, NULL, O_JUNIT },
        { "metrics", required_argument, NULL, O_METRICS },
        { "html", required_argument, NULL, O_HTML },
        { "mitigations", required_argument, NULL, O_MITIGATIONS },
        { "tolerance", required_argument, NULL, O_TOLERANCE },
        { "jobs", required_argument, NULL, O_JOBS },
        { "timeout", required_argument, NULL, O_TIMEOUT },
        { "stall-timeout", required_argument, NULL, O_STALL },
        { "max-memory", required_argument, NULL, O_MEMORY },
        { "shard", required_argument, NULL, O_SHARD },
        { "progress", no_argument, NULL, O_PROGRESS },
        { "history-schema", no_argument, NULL, O_SCHEMA },
        { "rtol", required_argument, NULL, O_RTOL },
        { "atol", required_argument, NULL, O_ATOL },
        { "max-ulp", required_argument, NULL, O_MAX_ULP },
        { "signed-zeros", no_argument, NULL, O_SIGNED_ZEROS },
        { "strict", no_argument, NULL, O_STRICT },
        { "map-prefix", required_argument, NULL, O_MAP_PREFIX },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    gate_args args;
    parity_tolfile *pTolFile = NULL;
    char zErr[PARITY_GATE_ERR_LEN];
    int c, merge = argc > 1 && strcmp(argv[1], "merge") == 0, code;
    long n, cores = sysconf(_SC_NPROCESSORS_ONLN);

    memset(&args, 0, sizeof args);
    parity_diff_options_init(&args.judge.diff);
    args.judge.jobs = cores > 0 ? (int)cores : 1;
    args.judge.timeoutSeconds = 3600;
    args.judge.stallSeconds = 60;
    args.judge.maxMemoryMiB = 8192;
    if (merge) { argc--; argv++; }
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "qh", aLong, NULL)) != -1) {
        switch (c) {
        case O_POLICY: args.zPolicy = optarg; break;
        case O_TRAFFIC: args.zTraffic = optarg; break;
        case O_HISTORY: args.zHistory = optarg; break;
        case O_TIMESTAMP: args.zTimestamp = optarg; break;
        case O_RUN_ID: args.zRunId = optarg; break;
        case O_SLICE_KEYS:
            if (optarg[0] == 0 || strstr(optarg, ",,") || optarg[strlen(optarg) - 1] == ',')
                return usage_error("invalid --slice-keys '%s' (names separated by commas)", optarg);
            args.zSliceKeys = optarg;
            break;
        case O_JSON: args.zJson = optarg; break;
        case O_JUNIT: args.zJunit = optarg; break;
        case O_METRICS: args.zMetrics = optarg; break;
        case O_HTML: args.zHtml = optarg; break;
        case O_MITIGATIONS: args.zMitigations = optarg; break;
        case O_TOLERANCE: args.zTolerance = optarg; break;
        case O_PROGRESS: args.judge.progress = 1; break;
        case 'q': args.quiet = 1; break;
        case O_JOBS:
            if (!parse_count(optarg, 1, 256, &n)) return usage_error("invalid --jobs '%s' (1 to 256)", optarg);
            args.judge.jobs = (int)n;
            break;
        case O_TIMEOUT:
            if (!parse_count(optarg, 0, 1000000, &n)) return usage_error("invalid --timeout '%s'", optarg);
            args.judge.timeoutSeconds = (unsigned)n;
            break;
        case O_STALL:
            if (!parse_count(optarg, 0, 1000000, &n)) return usage_error("invalid --stall-timeout '%s'", optarg);
            args.judge.stallSeconds = (unsigned)n;
            break;
        case O_MEMORY:
            if (!parse_count(optarg, 0, 1L << 30, &n) || (n != 0 && n < 256))
                return usage_error("invalid --max-memory '%s' (0 for none, or at least 256)", optarg);
            args.judge.maxMemoryMiB = (size_t)n;
            break;
        case O_SHARD: {
            char *zSlash = strchr(optarg, '/');
            long index, count;
            if (merge) return usage_error("%s", "--shard is for gate runs, not merge");
            if (!zSlash) return usage_error("invalid --shard '%s' (I/N, 0 <= I < N)", optarg);
            *zSlash = 0;
            if (!parse_count(optarg, 0, MAX_SHARDS - 1, &index) ||
                !parse_count(zSlash + 1, 1, MAX_SHARDS, &count) || index >= count) {
                *zSlash = '/';
                return usage_error("invalid --shard '%s' (I/N, 0 <= I < N)", optarg);
            }
            args.shardIndex = (int)index;
            args.shardCount = (int)count;
            break;
        }
        case O_RTOL:
        case O_ATOL: {
            char *zEnd;
            double x;
            errno = 0;
            x = strtod(optarg, &zEnd);
            if (errno || zEnd == optarg || *zEnd || !(x >= 0.0) || x == HUGE_VAL)
                return usage_error(c == O_RTOL ? "invalid --rtol '%s'" : "invalid --atol '%s'", optarg);
            if (c == O_RTOL) { args.judge.diff.rtol = x; args.judge.diff.hasRtol = 1; }
            else { args.judge.diff.atol = x; args.judge.diff.hasAtol = 1; }
            break;
        }
        case O_MAX_ULP:
            if (!parse_count(optarg, 0, LONG_MAX, &n)) return usage_error("invalid --max-ulp '%s'", optarg);
            args.judge.diff.hasMaxUlp = 1;
            args.judge.diff.maxUlp = (uint64_t)n;
            break;
        case O_SIGNED_ZEROS: args.judge.diff.signedZeros = 1; break;
        case O_STRICT: args.judge.diff.strict = 1; break;
        case O_MAP_PREFIX: {
            char *zEq = strchr(optarg, '=');
            if (!zEq || zEq == optarg)
                return usage_error("invalid --map-prefix '%s' (OLD=NEW, OLD not empty)", optarg);
            if (args.judge.diff.nMap == PARITY_DIFF_MAX_MAPS)
                return usage_error("%s", "too many --map-prefix (16 at most)");
            *zEq = 0;
            args.judge.diff.azMapOld[args.judge.diff.nMap] = optarg;
            args.judge.diff.azMapNew[args.judge.diff.nMap++] = zEq + 1;
            break;
        }
        case 'h': usage(); return 0;
        case O_SCHEMA:
            fputs(parity_gate_history_schema, stdout);
            return fflush(stdout) == 0 ? 0 : 2;
        default:
            return usage_error("invalid option '%s'", argv[optind - 1]);
        }
    }
    if (args.shardCount && args.zHistory)
        return usage_error("%s", "--history is for unsharded runs and merge: shards append nothing");
    if (!merge && argc - optind != 1)
        return usage_error("%s", argc - optind < 1 ? "missing operand: need SUITE" : "too many operands");
    if (merge && argc - optind < 1)
        return usage_error("%s", "missing operand: need the shards' JSON files");
    /* Threads: the cores shared among the pairs judged at once. */
    args.judge.diff.nThreads = cores > args.judge.jobs ? (int)(cores / args.judge.jobs) : 1;
    if (args.zTolerance) {
        if (parity_tolfile_load(args.zTolerance, &pTolFile, zErr, sizeof zErr) != 0)
            return gate_error(zErr);
        args.judge.diff.pTolFile = pTolFile;
    }
    if (merge) {
        code = run_merge(&args, argc - optind, argv + optind);
    } else {
        code = run_suite(&args, argv[optind]);
    }
    parity_tolfile_free(pTolFile);
    return code;
}
