/*
 * gate_history.c - the gate's run history in SQLite (diff/GATE.md, "History and
 * persistence"): runs, per-slice metrics and rule states, alerts, and per pair what an
 * investigation needs (both paths and identities, first divergence, local causes).
 *
 * The schema is plain SQL that PostgreSQL runs as it is (TEXT, BIGINT, DOUBLE PRECISION,
 * no AUTOINCREMENT, no SQLite-only types), so the next back end reuses it. One run is one
 * transaction: a gate killed half way leaves no half run that would count toward
 * persistence.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include "diff/gate.h"

struct parity_gate_history {
    sqlite3 *pDb;
};

const char parity_gate_history_schema[] =
    "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS runs (\n"
    "  run_id TEXT PRIMARY KEY, timestamp TEXT NOT NULL, suite TEXT, policy TEXT,\n"
    "  verdict TEXT NOT NULL, slice_keys TEXT NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS slices (\n"
    "  run_id TEXT NOT NULL REFERENCES runs (run_id), slice TEXT NOT NULL,\n"
    "  labels TEXT NOT NULL, pairs BIGINT NOT NULL, pass BIGINT NOT NULL,\n"
    "  fail BIGINT NOT NULL, error BIGINT NOT NULL, outcome_agreement DOUBLE PRECISION,\n"
    "  traffic_share DOUBLE PRECISION, metrics TEXT NOT NULL,\n"
    "  PRIMARY KEY (run_id, slice));\n"
    "CREATE TABLE IF NOT EXISTS rule_states (\n"
    "  run_id TEXT NOT NULL REFERENCES runs (run_id), slice TEXT NOT NULL,\n"
    "  rule TEXT NOT NULL, state TEXT NOT NULL,\n"
    "  PRIMARY KEY (run_id, slice, rule));\n"
    "CREATE TABLE IF NOT EXISTS alerts (\n"
    "  run_id TEXT NOT NULL REFERENCES runs (run_id), slice TEXT NOT NULL,\n"
    "  rule TEXT NOT NULL, metric TEXT NOT NULL, owner TEXT NOT NULL,\n"
    "  value DOUBLE PRECISION, runs_out_of_range BIGINT NOT NULL,\n"
    "  persistence BIGINT NOT NULL, mitigation TEXT NOT NULL, fired BIGINT NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS pairs (\n"
    "  run_id TEXT NOT NULL REFERENCES runs (run_id), pair_id TEXT NOT NULL,\n"
    "  slice TEXT NOT NULL, status TEXT NOT NULL, eager_path TEXT, compiled_path TEXT,\n"
    "  eager_identity TEXT, compiled_identity TEXT, first_divergence TEXT,\n"
    "  PRIMARY KEY (run_id, pair_id));\n"
    "CREATE TABLE IF NOT EXISTS local_causes (\n"
    "  run_id TEXT NOT NULL REFERENCES runs (run_id), pair_id TEXT NOT NULL,\n"
    "  tensor TEXT NOT NULL, op TEXT, affected_slice TEXT);\n"
    "CREATE INDEX IF NOT EXISTS rule_states_by_slice ON rule_states (slice, rule);\n";

static int db_fail(sqlite3 *pDb, const char *zWhat, char *zErr, size_t nErr)
{
    snprintf(zErr, nErr, "history: %s: %s", zWhat, pDb ? sqlite3_errmsg(pDb) : "no database");
    return -1;
}

int parity_gate_history_open(const char *zPath, parity_gate_history **ppH, char *zErr, size_t nErr)
{
    parity_gate_history *pH = calloc(1, sizeof *pH);
    sqlite3_stmt *pStmt = NULL;
    int version = -1;

    *ppH = NULL;
    if (pH == NULL) {
        snprintf(zErr, nErr, "history: out of memory");
        return -1;
    }
    if (sqlite3_open_v2(zPath, &pH->pDb, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        snprintf(zErr, nErr, "%s: cannot open the history: %s", zPath,
                 pH->pDb ? sqlite3_errmsg(pH->pDb) : "out of memory");
        goto fail;
    }
    sqlite3_busy_timeout(pH->pDb, 30000);   /* shards' merges may meet on one file */
    if (sqlite3_exec(pH->pDb, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(pH->pDb, parity_gate_history_schema, NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(zErr, nErr, "%s: not a gate history (or not writable): %s", zPath,
                 sqlite3_errmsg(pH->pDb));
        goto fail;
    }
    if (sqlite3_prepare_v2(pH->pDb, "SELECT version FROM schema_version", -1, &pStmt, NULL) != SQLITE_OK)
        goto dbfail;
    if (sqlite3_step(pStmt) == SQLITE_ROW) version = sqlite3_column_int(pStmt, 0);
    sqlite3_finalize(pStmt);
    pStmt = NULL;
    if (version < 0) {
        char zSql[96];
        snprintf(zSql, sizeof zSql, "INSERT INTO schema_version (version) VALUES (%d)",
                 PARITY_GATE_HISTORY_VERSION);
        if (sqlite3_exec(pH->pDb, zSql, NULL, NULL, NULL) != SQLITE_OK) goto dbfail;
    } else if (version != PARITY_GATE_HISTORY_VERSION) {
        snprintf(zErr, nErr, "%s: history schema version %d, this paritydiff writes version %d",
                 zPath, version, PARITY_GATE_HISTORY_VERSION);
        goto fail;
    }
    if (sqlite3_exec(pH->pDb, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) goto dbfail;
    *ppH = pH;
    return 0;
dbfail:
    snprintf(zErr, nErr, "%s: %s", zPath, sqlite3_errmsg(pH->pDb));
fail:
    sqlite3_close(pH->pDb);
    free(pH);
    return -1;
}

void parity_gate_history_close(parity_gate_history *pH)
{
    if (pH == NULL) return;
    sqlite3_close(pH->pDb);
    free(pH);
}

int parity_gate_history_out_of_range(parity_gate_history *pH, const char *zRule,
                                     const char *zSlice, const char *zTimestamp, char *zErr,
                                     size_t nErr)
{
    static const char zSql[] =
        "SELECT s.state FROM rule_states s JOIN runs r ON r.run_id = s.run_id "
        "WHERE s.slice = ? AND s.rule = ? AND s.state <> 'unknown' AND r.timestamp < ? "
        "ORDER BY r.timestamp DESC";
    sqlite3_stmt *pStmt;
    int n = 0, step;
    if (sqlite3_prepare_v2(pH->pDb, zSql, -1, &pStmt, NULL) != SQLITE_OK)
        return db_fail(pH->pDb, "reading past runs", zErr, nErr);
    sqlite3_bind_text(pStmt, 1, zSlice, -1, SQLITE_STATIC);
    sqlite3_bind_text(pStmt, 2, zRule, -1, SQLITE_STATIC);
    sqlite3_bind_text(pStmt, 3, zTimestamp ? zTimestamp : "", -1, SQLITE_STATIC);
    while ((step = sqlite3_step(pStmt)) == SQLITE_ROW) {
        const char *zState = (const char *)sqlite3_column_text(pStmt, 0);
        if (zState == NULL || strcmp(zState, "out_of_range") != 0) break;
        n++;
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE) n = db_fail(pH->pDb, "reading past runs", zErr, nErr);
    sqlite3_finalize(pStmt);
    return n;
}

/* Binds the values (strings; NULL binds SQL NULL) and runs one statement. */
static int exec_row(sqlite3 *pDb, const char *zSql, const char *const *azValue, int n)
{
    sqlite3_stmt *pStmt;
    int i, rc;
    if (sqlite3_prepare_v2(pDb, zSql, -1, &pStmt, NULL) != SQLITE_OK) return -1;
    for (i = 0; i < n; i++) {
        if (azValue[i]) sqlite3_bind_text(pStmt, i + 1, azValue[i], -1, SQLITE_TRANSIENT);
        else sqlite3_bind_null(pStmt, i + 1);
    }
    rc = sqlite3_step(pStmt) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(pStmt);
    return rc;
}

/* A JSON value as text for a column: scalars as parity_gate_scalar_text writes them, the
 * rest dumped; NULL for JSON null or absence. The caller frees it. */
static char *column_text(const json_t *p)
{
    if (p == NULL || json_is_null(p)) return NULL;
    if (json_is_string(p) || json_is_number(p)) return parity_gate_scalar_text(p);
    return json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);
}

#define MAX_COLS 10

/* One row from JSON values; consumes none of them. */
static int insert(sqlite3 *pDb, const char *zSql, const json_t *const *apV, int n)
{
    char *az[MAX_COLS];
    int i, rc;
    for (i = 0; i < n; i++) az[i] = column_text(apV[i]);
    rc = exec_row(pDb, zSql, (const char *const *)az, n);
    for (i = 0; i < n; i++) free(az[i]);
    return rc;
}

/* What a pair's side was built from, for the history: its identity, plus the build keys
 * the captures write among their telemetry (config_hash, cache_hash): an investigation
 * compares them across a boundary like any identity key. A new object, or NULL. */
static json_t *build_identity(const json_t *pPair, const char *zSide)
{
    static const char *const azBuild[] = { "config_hash", "cache_hash", NULL };
    const json_t *pId = json_object_get(json_object_get(pPair, "identity"), zSide);
    const json_t *pTel = json_object_get(json_object_get(pPair, "telemetry"), zSide);
    json_t *p = json_is_object(pId) ? json_deep_copy(pId) : json_object();
    const char *const *pz;
    for (pz = azBuild; p && *pz; pz++)
        if (json_is_string(json_object_get(pTel, *pz)))
            json_object_set(p, *pz, json_object_get(pTel, *pz));
    return p;
}

json_t *parity_gate_history_query(parity_gate_history *pH, const char *zSql,
                                  const char *const *azParam, int nParam, char *zErr, size_t nErr)
{
    sqlite3_stmt *pStmt;
    json_t *pRows = json_array();
    int i, step, nCol;
    if (pRows == NULL) {
        snprintf(zErr, nErr, "history: out of memory");
        return NULL;
    }
    if (sqlite3_prepare_v2(pH->pDb, zSql, -1, &pStmt, NULL) != SQLITE_OK) {
        db_fail(pH->pDb, "reading the history", zErr, nErr);
        json_decref(pRows);
        return NULL;
    }
    for (i = 0; i < nParam; i++) sqlite3_bind_text(pStmt, i + 1, azParam[i], -1, SQLITE_STATIC);
    nCol = sqlite3_column_count(pStmt);
    while ((step = sqlite3_step(pStmt)) == SQLITE_ROW) {
        json_t *pRow = json_array();
        for (i = 0; pRow && i < nCol; i++) {
            const char *z = (const char *)sqlite3_column_text(pStmt, i);
            json_array_append_new(pRow, z ? json_string(z) : json_null());
        }
        if (pRow == NULL || json_array_append_new(pRows, pRow) != 0) {
            step = SQLITE_NOMEM;
            break;
        }
    }
    if (step != SQLITE_DONE) {
        db_fail(pH->pDb, "reading the history", zErr, nErr);
        json_decref(pRows);
        pRows = NULL;
    }
    sqlite3_finalize(pStmt);
    return pRows;
}

int parity_gate_history_append(parity_gate_history *pH, const json_t *pDoc, char *zErr, size_t nErr)
{
    const json_t *pRun = json_object_get(pDoc, "run"), *pKeys = json_object_get(pDoc, "slice_keys");
    const json_t *pSlice, *pPair, *pAlert, *pState, *pCause;
    json_t *pRunId = json_object_get(pRun, "id");
    size_t i, j;
    const char *zRule;
    int rc = 0;

    if (sqlite3_exec(pH->pDb, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(pH->pDb, "starting the run", zErr, nErr);
    {
        const json_t *aV[6] = { pRunId, json_object_get(pRun, "timestamp"),
                                json_object_get(pRun, "suite"), json_object_get(pRun, "policy"),
                                json_object_get(pDoc, "verdict"), pKeys };
        rc |= insert(pH->pDb, "INSERT INTO runs (run_id, timestamp, suite, policy, verdict, "
                     "slice_keys) VALUES (?, ?, ?, ?, ?, ?)", aV, 6);
    }
    json_array_foreach(json_object_get(pDoc, "slices"), i, pSlice) {
        char *zName = parity_gate_slice_name(json_object_get(pSlice, "labels"), pKeys);
        json_t *pName = zName ? json_string(zName) : NULL;
        const json_t *pParity = json_object_get(pSlice, "parity");
        const json_t *aV[10] = { pRunId, pName, json_object_get(pSlice, "labels"),
                                 json_object_get(pSlice, "pairs"), json_object_get(pParity, "pass"),
                                 json_object_get(pParity, "fail"), json_object_get(pParity, "error"),
                                 json_object_get(pSlice, "outcome_agreement"),
                                 json_object_get(pSlice, "traffic_share"),
                                 json_object_get(pSlice, "metrics") };
        free(zName);
        if (pName == NULL) { rc = -1; break; }
        rc |= insert(pH->pDb, "INSERT INTO slices (run_id, slice, labels, pairs, pass, fail, error, "
                     "outcome_agreement, traffic_share, metrics) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     aV, 10);
        json_object_foreach((json_t *)json_object_get(pSlice, "rules"), zRule, pState) {
            json_t *pRule = json_string(zRule);
            const json_t *aS[4] = { pRunId, pName, pRule, pState };
            rc |= insert(pH->pDb, "INSERT INTO rule_states (run_id, slice, rule, state) "
                         "VALUES (?, ?, ?, ?)", aS, 4);
            json_decref(pRule);
        }
        json_decref(pName);
    }
    for (j = 0; j < 2; j++) {
        const json_t *pList = json_object_get(pDoc, j == 0 ? "alerts" : "pending");
        json_t *pFired = json_integer(j == 0);
        json_array_foreach(pList, i, pAlert) {
            char *zName = parity_gate_slice_name(json_object_get(pAlert, "labels"), pKeys);
            json_t *pName = zName ? json_string(zName) : NULL;
            const json_t *aV[10] = { pRunId, pName, json_object_get(pAlert, "rule"),
                                     json_object_get(pAlert, "metric"), json_object_get(pAlert, "owner"),
                                     json_object_get(pAlert, "value"),
                                     json_object_get(pAlert, "runs_out_of_range"),
                                     json_object_get(pAlert, "persistence"),
                                     json_object_get(pAlert, "mitigation"), pFired };
            free(zName);
            rc |= pName == NULL;
            rc |= insert(pH->pDb, "INSERT INTO alerts (run_id, slice, rule, metric, owner, value, "
                         "runs_out_of_range, persistence, mitigation, fired) VALUES "
                         "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", aV, 10);
            json_decref(pName);
        }
        json_decref(pFired);
    }
    json_array_foreach(json_object_get(pDoc, "pairs"), i, pPair) {
        char *zName = parity_gate_slice_name(json_object_get(pPair, "labels"), pKeys);
        json_t *pName = zName ? json_string(zName) : NULL;
        json_t *pIdE = build_identity(pPair, "eager"), *pIdC = build_identity(pPair, "compiled");
        const json_t *aV[9] = { pRunId, json_object_get(pPair, "id"), pName,
                                json_object_get(pPair, "status"), json_object_get(pPair, "eager"),
                                json_object_get(pPair, "compiled"), pIdE, pIdC,
                                json_object_get(pPair, "first_divergence") };
        free(zName);
        rc |= pName == NULL || pIdE == NULL || pIdC == NULL;
        rc |= insert(pH->pDb, "INSERT INTO pairs (run_id, pair_id, slice, status, eager_path, "
                     "compiled_path, eager_identity, compiled_identity, first_divergence) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", aV, 9);
        json_decref(pName);
        json_decref(pIdE);
        json_decref(pIdC);
        json_array_foreach(json_object_get(pPair, "local_causes"), j, pCause) {
            const json_t *aC[5] = { pRunId, json_object_get(pPair, "id"),
                                    json_object_get(pCause, "name"), json_object_get(pCause, "op"),
                                    json_object_get(pCause, "affected_slice") };
            rc |= insert(pH->pDb, "INSERT INTO local_causes (run_id, pair_id, tensor, op, "
                         "affected_slice) VALUES (?, ?, ?, ?, ?)", aC, 5);
        }
    }
    if (rc != 0) {
        db_fail(pH->pDb, "appending the run", zErr, nErr);
        sqlite3_exec(pH->pDb, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    if (sqlite3_exec(pH->pDb, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        db_fail(pH->pDb, "committing the run", zErr, nErr);
        sqlite3_exec(pH->pDb, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    return 0;
}
