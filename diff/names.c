/*
 * names.c - the fixed vocabulary of diff results: status, verdict and cause names, identity and
 * telemetry keys, and derived figures. Reports and the CLI print these names, and the
 * JSON schema (diff/REPORT.md) promises them, so they live in one place.
 */
#include <math.h>
#include <string.h>
#include "diff/diff.h"

const char *parity_status_name(parity_status st)
{
    switch (st) {
    case PARITY_ST_PASS: return "pass";
    case PARITY_ST_FAIL: return "fail";
    case PARITY_ST_ERROR: return "error";
    case PARITY_ST_MISSING_IN_COMPILED: return "missing_in_compiled";
    case PARITY_ST_MISSING_IN_EAGER: return "missing_in_eager";
    case PARITY_ST_SHAPE_MISMATCH: return "shape_mismatch";
    case PARITY_ST_DTYPE_MISMATCH: return "dtype_mismatch";
    }
    return "unknown";
}

const char *parity_verdict_name(parity_verdict v)
{
    switch (v) {
    case PARITY_VERDICT_PASS: return "pass";
    case PARITY_VERDICT_FAIL: return "fail";
    case PARITY_VERDICT_ERROR: return "error";
    }
    return "unknown";
}

const char *parity_cause_name(parity_cause cause)
{
    switch (cause) {
    case PARITY_CAUSE_NONE: return NULL;
    case PARITY_CAUSE_LOCAL: return "local";
    case PARITY_CAUSE_PROPAGATED: return "propagated";
    case PARITY_CAUSE_UNKNOWN: return "unknown";
    }
    return NULL;
}

const char *const parity_identity_keys[] = {
    "model", "model_version", "data_version", "framework", "framework_version",
    "compiler", "compiler_version", "device", "commit", "timestamp", "workload",
    "shape_bucket", NULL
};

const char *const parity_telemetry_keys[] = {
    "compile_time_s", "recompiles", "graph_breaks", "fallback_ops", "eager_frames",
    "latency_p50_ms", "latency_p99_ms",
    /* the gate's (diff/GATE.md, "Telemetry") */
    "calls", "fallback_calls", "steady_time_s", "latency_hist_ms", "recompile_reasons",
    "config_hash", "cache_hash", NULL
};

int parity_is_telemetry_key(const char *zKey)
{
    int i;
    for (i = 0; parity_telemetry_keys[i]; i++)
        if (strcmp(parity_telemetry_keys[i], zKey) == 0) return 1;
    return 0;
}

double parity_stats_rel_l2(const parity_tensor_stats *pStats)
{
    if (pStats->sumSqRef == 0.0) return pStats->sumSqDiff == 0.0 ? 0.0 : INFINITY;
    return sqrt(pStats->sumSqDiff / pStats->sumSqRef);
}
