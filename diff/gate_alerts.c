/*
 * gate_alerts.c - the policy's rules over a run's slices (diff/GATE.md, "Policies",
 * "History and persistence"): in range, out of range or unknown per rule and slice; the
 * persistence count from the history; alerts, pending alerts and the mitigations they ask
 * for.
 *
 * Unknown is never good and never an alert: a slice the run did not measure (no telemetry,
 * no outcome tensors) says nothing, and the coverage rule is how a policy demands evidence.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diff/gate.h"
#include "reports/report_internal.h"

static int selects(const parity_gate_rule *pRule, const json_t *pLabels)
{
    size_t i;
    for (i = 0; i < pRule->nSelect; i++) {
        const char *zV = json_string_value(json_object_get(pLabels, pRule->azSelectKey[i]));
        if (strcmp(pRule->azSelectValue[i], "*") == 0) continue;
        if (zV == NULL || strcmp(zV, pRule->azSelectValue[i]) != 0) return 0;
    }
    return 1;
}

/* 1 in range, 0 out of range, -1 unknown. */
static int in_range(const parity_gate_rule *pRule, double value, double eager)
{
    double ratio;
    if (!isfinite(value)) return -1;
    if ((pRule->hasMinRatio || pRule->hasMaxRatio) && !(isfinite(eager) && eager > 0.0))
        return -1;
    ratio = value / eager;
    if (pRule->hasMin && value < pRule->min) return 0;
    if (pRule->hasMax && value > pRule->max) return 0;
    if (pRule->hasMinRatio && ratio < pRule->minRatio) return 0;
    if (pRule->hasMaxRatio && ratio > pRule->maxRatio) return 0;
    return 1;
}

static json_t *normal_json(const parity_gate_rule *pRule)
{
    json_t *p = json_object();
    int rc = 0;
    if (pRule->hasMin) rc |= parity_report_set(p, "min", json_real(pRule->min));
    if (pRule->hasMax) rc |= parity_report_set(p, "max", json_real(pRule->max));
    if (pRule->hasMinRatio) rc |= parity_report_set(p, "min_ratio", json_real(pRule->minRatio));
    if (pRule->hasMaxRatio) rc |= parity_report_set(p, "max_ratio", json_real(pRule->maxRatio));
    return parity_report_finish(p, rc);
}

static json_t *num_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

int parity_gate_evaluate(json_t *pDoc, const parity_gate_policy *pPolicy,
                         parity_gate_history *pHistory, char *zErr, size_t nErr)
{
    json_t *pSlices = json_object_get(pDoc, "slices"), *pSlice;
    json_t *pAlerts = json_array(), *pPending = json_array(), *pMitigations = json_array();
    const char *zTimestamp = json_string_value(json_object_get(json_object_get(pDoc, "run"),
                                                               "timestamp"));
    size_t i, r;
    int rc = 0;

    json_array_foreach(pSlices, i, pSlice) {
        json_t *pLabels = json_object_get(pSlice, "labels"), *pStates = json_object();
        char *zSlice = parity_gate_slice_name(pLabels, json_object_get(pDoc, "slice_keys"));
        if (zSlice == NULL || pStates == NULL) {
            free(zSlice);
            json_decref(pStates);
            snprintf(zErr, nErr, "out of memory evaluating the policy");
            rc = -1;
            break;
        }
        for (r = 0; r < pPolicy->nRule && rc == 0; r++) {
            const parity_gate_rule *pRule = &pPolicy->aRule[r];
            const json_t *pM = json_object_get(json_object_get(pSlice, "metrics"),
                                               parity_gate_metric_name(pRule->metric));
            double value = json_is_number(json_object_get(pM, "value"))
                               ? json_number_value(json_object_get(pM, "value")) : NAN;
            double eager = json_is_number(json_object_get(pM, "eager"))
                               ? json_number_value(json_object_get(pM, "eager")) : NAN;
            int state, count, persistence = pHistory ? pRule->persistence : 1;
            json_t *pAlert;
            if (!selects(pRule, pLabels)) continue;
            state = in_range(pRule, value, eager);
            rc |= parity_report_set(pStates, pRule->zName, json_string(
                      state < 0 ? "unknown" : state ? "in_range" : "out_of_range"));
            if (state != 0) continue;
            count = 1;
            if (pHistory) {
                int before = parity_gate_history_out_of_range(pHistory, pRule->zName, zSlice,
                                                              zTimestamp, zErr, nErr);
                if (before < 0) { rc = -1; break; }
                count += before;
            }
            pAlert = json_pack("{s:s,s:s,s:O,s:s,s:o,s:o,s:o,s:i,s:i,s:s}",
                               "rule", pRule->zName,
                               "metric", parity_gate_metric_name(pRule->metric),
                               "labels", pLabels, "owner", pRule->zOwner,
                               "value", num_or_null(value), "eager", num_or_null(eager),
                               "normal", normal_json(pRule), "runs_out_of_range", count,
                               "persistence", persistence, "mitigation", pRule->zMitigation);
            if (count >= persistence) {
                rc |= parity_report_append(pAlerts, pAlert);
                if (strcmp(pRule->zMitigation, "none") != 0)
                    rc |= parity_report_append(pMitigations, json_pack("{s:s,s:O,s:s,s:s}",
                              "action", pRule->zMitigation, "labels", pLabels,
                              "rule", pRule->zName, "owner", pRule->zOwner));
            } else {
                rc |= parity_report_append(pPending, pAlert);
            }
            if (rc) snprintf(zErr, nErr, "out of memory evaluating the policy");
        }
        free(zSlice);
        rc |= parity_report_set(pSlice, "rules", pStates);
        if (rc) break;
    }
    rc |= parity_report_set(pDoc, "alerts", pAlerts);
    rc |= parity_report_set(pDoc, "pending", pPending);
    rc |= parity_report_set(pDoc, "mitigations", pMitigations);
    if (rc && zErr[0] == 0) snprintf(zErr, nErr, "out of memory evaluating the policy");
    return rc ? -1 : 0;
}
