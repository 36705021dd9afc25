/*
 * gate_policy.c - the gate's policy file (diff/GATE.md, "Policies"): rules with an owner,
 * a slice selector, a normal range, a persistence and a mitigation.
 *
 * Read with libyaml's document API, so every error can name the line of the node it is
 * about ("policy.yaml:12: ..."). Anything not in the schema is an error, not ignored: a
 * misspelt `persistance:` silently falling back to 1 would page someone on a blip.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "diff/gate.h"

static const char *const azMetric[PARITY_GM_COUNT] = {
    "numerical_parity", "outcome_parity", "compile_time_s", "recompiles", "graph_breaks",
    "fallback_rate", "p50_latency_ms", "p99_latency_ms", "throughput", "coverage"
};

static const char *const azMitigation[] = {
    "eager_fallback", "pin_compiler_version", "rollback_artifact", "mark_dynamic",
    "raise_recompile_limit", "none", NULL
};

const char *parity_gate_metric_name(parity_gate_metric m)
{
    return (unsigned)m < PARITY_GM_COUNT ? azMetric[m] : "?";
}

int parity_gate_metric_has_eager(parity_gate_metric m)
{
    return m != PARITY_GM_NUMERICAL_PARITY && m != PARITY_GM_OUTCOME_PARITY &&
           m != PARITY_GM_COVERAGE;
}

typedef struct {
    yaml_document_t *pDoc;
    const char *zPath;
    char *zErr;
    size_t nErr;
} policy_reader;

static int fail_at(policy_reader *pR, const yaml_node_t *pNode, const char *zFmt, const char *zArg)
{
    char zMsg[512];
    snprintf(zMsg, sizeof zMsg, zFmt, zArg ? zArg : "");
    snprintf(pR->zErr, pR->nErr, "%s:%lu: %s", pR->zPath,
             pNode ? (unsigned long)pNode->start_mark.line + 1 : 1UL, zMsg);
    return -1;
}

static const char *scalar(const yaml_node_t *pNode)
{
    return pNode && pNode->type == YAML_SCALAR_NODE ? (const char *)pNode->data.scalar.value : NULL;
}

static int get_string(policy_reader *pR, const yaml_node_t *pNode, const char *zWhat, char **pz)
{
    const char *z = scalar(pNode);
    if (z == NULL || z[0] == 0) return fail_at(pR, pNode, "%s must be a non-empty string", zWhat);
    *pz = strdup(z);
    return *pz ? 0 : fail_at(pR, pNode, "out of memory%s", "");
}

static int get_number(policy_reader *pR, const yaml_node_t *pNode, const char *zWhat, double *px)
{
    const char *z = scalar(pNode);
    char *zEnd;
    if (z == NULL) return fail_at(pR, pNode, "%s must be a number", zWhat);
    errno = 0;
    *px = strtod(z, &zEnd);
    if (errno || zEnd == z || *zEnd || !isfinite(*px))
        return fail_at(pR, pNode, "%s must be a finite number", zWhat);
    return 0;
}

static int parse_normal(policy_reader *pR, yaml_node_t *pNode, parity_gate_rule *pRule)
{
    yaml_node_pair_t *p;
    if (pNode->type != YAML_MAPPING_NODE)
        return fail_at(pR, pNode, "normal must be a mapping of min, max, min_ratio, max_ratio%s", "");
    for (p = pNode->data.mapping.pairs.start; p < pNode->data.mapping.pairs.top; p++) {
        yaml_node_t *pKey = yaml_document_get_node(pR->pDoc, p->key);
        yaml_node_t *pVal = yaml_document_get_node(pR->pDoc, p->value);
        const char *zKey = scalar(pKey);
        int *pHas;
        double *px;
        if (zKey && strcmp(zKey, "min") == 0) { pHas = &pRule->hasMin; px = &pRule->min; }
        else if (zKey && strcmp(zKey, "max") == 0) { pHas = &pRule->hasMax; px = &pRule->max; }
        else if (zKey && strcmp(zKey, "min_ratio") == 0) { pHas = &pRule->hasMinRatio; px = &pRule->minRatio; }
        else if (zKey && strcmp(zKey, "max_ratio") == 0) { pHas = &pRule->hasMaxRatio; px = &pRule->maxRatio; }
        else return fail_at(pR, pKey, "unknown key '%s' in normal (min, max, min_ratio, max_ratio)", zKey);
        if (get_number(pR, pVal, zKey, px) != 0) return -1;
        *pHas = 1;
        if ((pHas == &pRule->hasMinRatio || pHas == &pRule->hasMaxRatio) &&
            !parity_gate_metric_has_eager(pRule->metric))
            return fail_at(pR, pKey, "metric %s has no eager value to be relative to; use min "
                           "or max", parity_gate_metric_name(pRule->metric));
    }
    if (!pRule->hasMin && !pRule->hasMax && !pRule->hasMinRatio && !pRule->hasMaxRatio)
        return fail_at(pR, pNode, "normal gives no bound%s", "");
    return 0;
}

static int parse_selector(policy_reader *pR, yaml_node_t *pNode, parity_gate_rule *pRule)
{
    yaml_node_pair_t *p;
    if (pNode->type != YAML_MAPPING_NODE)
        return fail_at(pR, pNode, "slice must be a mapping of label: value%s", "");
    for (p = pNode->data.mapping.pairs.start; p < pNode->data.mapping.pairs.top; p++) {
        yaml_node_t *pKey = yaml_document_get_node(pR->pDoc, p->key);
        yaml_node_t *pVal = yaml_document_get_node(pR->pDoc, p->value);
        if (pRule->nSelect == PARITY_GATE_MAX_KEYS)
            return fail_at(pR, pKey, "a selector names at most 8 labels%s", "");
        if (get_string(pR, pKey, "a slice label", &pRule->azSelectKey[pRule->nSelect]) != 0) return -1;
        pRule->nSelect++;
        if (get_string(pR, pVal, "a slice label's value", &pRule->azSelectValue[pRule->nSelect - 1]) != 0)
            return -1;
    }
    return 0;
}

/* The metric first: the normal range's check depends on it. */
static int parse_rule(policy_reader *pR, yaml_node_t *pNode, parity_gate_rule *pRule, size_t iRule)
{
    yaml_node_pair_t *p;
    yaml_node_t *pNormal = NULL;
    int m, hasMitigation = 0;
    char zName[64];

    memset(pRule, 0, sizeof *pRule);
    pRule->persistence = 1;
    pRule->metric = PARITY_GM_COUNT;
    pRule->line = (int)pNode->start_mark.line + 1;
    if (pNode->type != YAML_MAPPING_NODE) return fail_at(pR, pNode, "a rule must be a mapping%s", "");
    for (p = pNode->data.mapping.pairs.start; p < pNode->data.mapping.pairs.top; p++) {
        yaml_node_t *pKey = yaml_document_get_node(pR->pDoc, p->key);
        const char *zKey = scalar(pKey), *zVal;
        yaml_node_t *pVal = yaml_document_get_node(pR->pDoc, p->value);
        if (zKey == NULL) return fail_at(pR, pKey, "a rule's keys must be strings%s", "");
        if (strcmp(zKey, "metric") == 0) {
            zVal = scalar(pVal);
            for (m = 0; m < PARITY_GM_COUNT && !(zVal && strcmp(zVal, azMetric[m]) == 0); m++) {}
            if (m == PARITY_GM_COUNT)
                return fail_at(pR, pVal, "unknown metric '%s' (numerical_parity, outcome_parity, "
                               "compile_time_s, recompiles, graph_breaks, fallback_rate, "
                               "p50_latency_ms, p99_latency_ms, throughput, coverage)",
                               zVal ? zVal : "?");
            pRule->metric = (parity_gate_metric)m;
        } else if (strcmp(zKey, "owner") == 0) {
            if (get_string(pR, pVal, "owner", &pRule->zOwner) != 0) return -1;
        } else if (strcmp(zKey, "name") == 0) {
            if (get_string(pR, pVal, "name", &pRule->zName) != 0) return -1;
        } else if (strcmp(zKey, "slice") == 0) {
            if (parse_selector(pR, pVal, pRule) != 0) return -1;
        } else if (strcmp(zKey, "normal") == 0) {
            pNormal = pVal;
        } else if (strcmp(zKey, "persistence") == 0) {
            double x;
            if (get_number(pR, pVal, "persistence", &x) != 0) return -1;
            if (x < 1 || x > 1000 || x != floor(x))
                return fail_at(pR, pVal, "persistence must be a whole number of runs, 1 to 1000%s", "");
            pRule->persistence = (int)x;
        } else if (strcmp(zKey, "mitigation") == 0) {
            const char *const *pz;
            zVal = scalar(pVal);
            for (pz = azMitigation; *pz && !(zVal && strcmp(zVal, *pz) == 0); pz++) {}
            if (*pz == NULL)
                return fail_at(pR, pVal, "unknown mitigation '%s' (eager_fallback, "
                               "pin_compiler_version, rollback_artifact, mark_dynamic, "
                               "raise_recompile_limit, none)", zVal ? zVal : "?");
            if (get_string(pR, pVal, "mitigation", &pRule->zMitigation) != 0) return -1;
            hasMitigation = 1;
        } else {
            return fail_at(pR, pKey, "unknown key '%s' in a rule (metric, name, owner, slice, "
                           "normal, persistence, mitigation)", zKey);
        }
    }
    if (pRule->metric == PARITY_GM_COUNT) return fail_at(pR, pNode, "a rule needs a metric%s", "");
    if (pRule->zOwner == NULL) return fail_at(pR, pNode, "a rule needs an owner%s", "");
    if (!hasMitigation) return fail_at(pR, pNode, "a rule needs a mitigation (none for none)%s", "");
    if (pNormal == NULL) return fail_at(pR, pNode, "a rule needs a normal range%s", "");
    if (parse_normal(pR, pNormal, pRule) != 0) return -1;
    if (pRule->zName == NULL) {
        snprintf(zName, sizeof zName, "%s#%zu", azMetric[pRule->metric], iRule + 1);
        pRule->zName = strdup(zName);
        if (pRule->zName == NULL) return fail_at(pR, pNode, "out of memory%s", "");
    }
    return 0;
}

static int parse_policy(policy_reader *pR, parity_gate_policy *pPolicy)
{
    yaml_node_t *pRoot = yaml_document_get_root_node(pR->pDoc);
    yaml_node_pair_t *p;
    int hasVersion = 0, hasRules = 0;

    if (pRoot == NULL) return fail_at(pR, NULL, "the policy is empty%s", "");
    if (pRoot->type != YAML_MAPPING_NODE)
        return fail_at(pR, pRoot, "the policy must be a mapping (version, slice_keys, rules)%s", "");
    for (p = pRoot->data.mapping.pairs.start; p < pRoot->data.mapping.pairs.top; p++) {
        yaml_node_t *pKey = yaml_document_get_node(pR->pDoc, p->key);
        yaml_node_t *pVal = yaml_document_get_node(pR->pDoc, p->value);
        const char *zKey = scalar(pKey);
        yaml_node_item_t *pItem;
        if (zKey && strcmp(zKey, "version") == 0) {
            const char *z = scalar(pVal);
            if (z == NULL || strcmp(z, "1") != 0)
                return fail_at(pR, pVal, "version must be 1 (this paritydiff reads policy version 1)%s", "");
            hasVersion = 1;
        } else if (zKey && strcmp(zKey, "slice_keys") == 0) {
            if (pVal->type != YAML_SEQUENCE_NODE)
                return fail_at(pR, pVal, "slice_keys must be a list of label names%s", "");
            for (pItem = pVal->data.sequence.items.start; pItem < pVal->data.sequence.items.top; pItem++) {
                yaml_node_t *pK = yaml_document_get_node(pR->pDoc, *pItem);
                if (pPolicy->nKey == PARITY_GATE_MAX_KEYS)
                    return fail_at(pR, pK, "at most 8 slice keys%s", "");
                if (get_string(pR, pK, "a slice key", &pPolicy->azKey[pPolicy->nKey]) != 0) return -1;
                pPolicy->nKey++;
            }
        } else if (zKey && strcmp(zKey, "rules") == 0) {
            size_t n;
            if (pVal->type != YAML_SEQUENCE_NODE)
                return fail_at(pR, pVal, "rules must be a list%s", "");
            n = (size_t)(pVal->data.sequence.items.top - pVal->data.sequence.items.start);
            pPolicy->aRule = calloc(n ? n : 1, sizeof *pPolicy->aRule);
            if (pPolicy->aRule == NULL) return fail_at(pR, pVal, "out of memory%s", "");
            for (pItem = pVal->data.sequence.items.start; pItem < pVal->data.sequence.items.top; pItem++) {
                int rc = parse_rule(pR, yaml_document_get_node(pR->pDoc, *pItem),
                                    &pPolicy->aRule[pPolicy->nRule], pPolicy->nRule);
                pPolicy->nRule++;   /* counted even when it failed: freed with the rest */
                if (rc != 0) return -1;
            }
            hasRules = 1;
        } else {
            return fail_at(pR, pKey, "unknown key '%s' (version, slice_keys, rules)", zKey ? zKey : "?");
        }
    }
    if (!hasVersion) return fail_at(pR, pRoot, "the policy needs 'version: 1'%s", "");
    if (!hasRules) return fail_at(pR, pRoot, "the policy needs a list of rules%s", "");
    return 0;
}

int parity_gate_policy_load(const char *zPath, parity_gate_policy *pPolicy, char *zErr,
                            size_t nErr)
{
    FILE *pFile;
    yaml_parser_t parser;
    yaml_document_t doc;
    policy_reader r = { &doc, zPath, zErr, nErr };
    int rc;

    memset(pPolicy, 0, sizeof *pPolicy);
    pFile = fopen(zPath, "rb");
    if (pFile == NULL) {
        snprintf(zErr, nErr, "%s: cannot open the policy: %s", zPath, strerror(errno));
        return -1;
    }
    if (!yaml_parser_initialize(&parser)) {
        fclose(pFile);
        snprintf(zErr, nErr, "%s: out of memory", zPath);
        return -1;
    }
    yaml_parser_set_input_file(&parser, pFile);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(zErr, nErr, "%s:%lu: not YAML: %s", zPath,
                 (unsigned long)parser.problem_mark.line + 1,
                 parser.problem ? parser.problem : "parse error");
        yaml_parser_delete(&parser);
        fclose(pFile);
        return -1;
    }
    rc = parse_policy(&r, pPolicy);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    fclose(pFile);
    if (rc != 0) parity_gate_policy_free(pPolicy);
    return rc;
}

void parity_gate_policy_free(parity_gate_policy *pPolicy)
{
    size_t i, j;
    for (i = 0; i < pPolicy->nKey; i++) free(pPolicy->azKey[i]);
    for (i = 0; i < pPolicy->nRule; i++) {
        parity_gate_rule *p = &pPolicy->aRule[i];
        free(p->zName);
        free(p->zOwner);
        free(p->zMitigation);
        for (j = 0; j < p->nSelect; j++) {
            free(p->azSelectKey[j]);
            free(p->azSelectValue[j]);
        }
    }
    free(pPolicy->aRule);
    memset(pPolicy, 0, sizeof *pPolicy);
}
