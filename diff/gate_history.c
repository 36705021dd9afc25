/*
 * gate_history.c - the gate's run history (diff/GATE.md, "History and persistence"):
 * runs, per-slice metrics and rule states, alerts, and per pair what an investigation
 * needs (both paths and identities, first divergence, local causes).
 *
 * One schema, plain SQL that SQLite and PostgreSQL both run (TEXT, BIGINT, DOUBLE
 * PRECISION, no AUTOINCREMENT), over either back end (history_backend.h): an SQLite file
 * by default, a PostgreSQL server for a fleet (`--history postgresql://...`). One run is
 * one transaction: a gate killed half way leaves no half run that would count toward
 * persistence, and two gates appending at once queue on the write lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diff/gate.h"
#include "diff/history_backend.h"

struct parity_gate_history {
    void *pDb;
    const history_backend *pB;
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

/* One statement, its rows into pRows (NULL: none wanted). */
static int run(parity_gate_history *pH, const char *zSql, const char *const *azParam, int n,
               json_t *pRows, char *zErr, size_t nErr)
{
    return pH->pB->xRun(pH->pDb, zSql, azParam, n, pRows, zErr, nErr);
}

/* Creates the schema when it is missing (not when reading) and checks its version, in one
 * transaction. A reader takes no write lock and creates nothing: pointed at a database
 * that is no history, it says so instead of adding tables to it. */
static int ensure_schema(parity_gate_history *pH, const char *zWhere, int readOnly, char *zErr,
                         size_t nErr)
{
    json_t *pRows = json_array();
    char zVersion[32], zWhy[PARITY_GATE_ERR_LEN] = "";
    const char *azV[1] = { zVersion };
    const char *zName = history_is_pg(zWhere) ? "the PostgreSQL history" : zWhere;
    int rc = pRows ? 0 : -1, wrongVersion = 0;

    snprintf(zVersion, sizeof zVersion, "%d", PARITY_GATE_HISTORY_VERSION);
    if (rc == 0) rc = pH->pB->xExec(pH->pDb, readOnly ? "BEGIN" : pH->pB->zBeginWrite, zWhy, sizeof zWhy);
    if (rc == 0 && pH->pB->zSchemaLock && !readOnly)
        rc = pH->pB->xExec(pH->pDb, pH->pB->zSchemaLock, zWhy, sizeof zWhy);
    if (rc == 0 && !readOnly) rc = pH->pB->xExec(pH->pDb, parity_gate_history_schema, zWhy, sizeof zWhy);
    if (rc == 0) rc = run(pH, "SELECT version FROM schema_version", NULL, 0, pRows, zWhy, sizeof zWhy);
    if (rc == 0 && json_array_size(pRows) == 0 && readOnly) {
        snprintf(zWhy, sizeof zWhy, "it records no schema version");
        rc = -1;
    } else if (rc == 0 && json_array_size(pRows) == 0) {
        rc = run(pH, "INSERT INTO schema_version (version) VALUES (?)", azV, 1, NULL, zWhy, sizeof zWhy);
    } else if (rc == 0 && strcmp(json_string_value(json_array_get(json_array_get(pRows, 0), 0)),
                                 zVersion) != 0) {
        snprintf(zErr, nErr, "%s: history schema version %s, this paritydiff writes version %s",
                 zName, json_string_value(json_array_get(json_array_get(pRows, 0), 0)), zVersion);
        wrongVersion = 1;
        rc = -1;
    }
    if (rc == 0) rc = pH->pB->xExec(pH->pDb, "COMMIT", zWhy, sizeof zWhy);
    if (rc != 0) {
        char zIgnored[64];   /* the first error is the one to say */
        pH->pB->xExec(pH->pDb, "ROLLBACK", zIgnored, sizeof zIgnored);
        if (!wrongVersion)
            snprintf(zErr, nErr, "%s: not a gate history%s: %s", zName, readOnly ? "" : " (or not writable)",
                     strncmp(zWhy, "history: ", 9) == 0 ? zWhy + 9 : zWhy[0] ? zWhy : "out of memory");
    }
    json_decref(pRows);
    return rc;
}

int parity_gate_history_open(const char *zWhere, int readOnly, parity_gate_history **ppH,
                             char *zErr, size_t nErr)
{
    parity_gate_history *pH = calloc(1, sizeof *pH);
    int rc;
    *ppH = NULL;
    if (pH == NULL) {
        snprintf(zErr, nErr, "history: out of memory");
        return -1;
    }
    rc = history_is_pg(zWhere) ? history_pg_open(zWhere, readOnly, &pH->pDb, &pH->pB, zErr, nErr)
                               : history_sqlite_open(zWhere, readOnly, &pH->pDb, &pH->pB, zErr, nErr);
    if (rc == 0 && ensure_schema(pH, zWhere, readOnly, zErr, nErr) != 0) {
        pH->pB->xClose(pH->pDb);
        rc = -1;
    }
    if (rc != 0) {
        free(pH);
        return -1;
    }
    *ppH = pH;
    return 0;
}

void parity_gate_history_close(parity_gate_history *pH)
{
    if (pH == NULL) return;
    pH->pB->xClose(pH->pDb);
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
    const char *az[3] = { zSlice, zRule, zTimestamp ? zTimestamp : "" };
    json_t *pRows = json_array(), *pRow;
    size_t i;
    int n = 0;
    if (pRows == NULL || run(pH, zSql, az, 3, pRows, zErr, nErr) != 0) {
        json_decref(pRows);
        return -1;
    }
    json_array_foreach(pRows, i, pRow) {
        const char *zState = json_string_value(json_array_get(pRow, 0));
        if (zState == NULL || strcmp(zState, "out_of_range") != 0) break;
        n++;
    }
    json_decref(pRows);
    return n;
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

/* One row from JSON values (consumes none of them); the first failure's reason stays
 * in zErr, later statements of the doomed transaction are not run. */
static int insert(parity_gate_history *pH, const char *zSql, const json_t *const *apV, int n,
                  char *zErr, size_t nErr)
{
    char *az[MAX_COLS];
    int i, rc;
    if (zErr[0]) return -1;
    for (i = 0; i < n; i++) az[i] = column_text(apV[i]);
    rc = run(pH, zSql, (const char *const *)az, n, NULL, zErr, nErr);
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
    json_t *pRows = json_array();
    if (pRows == NULL) {
        snprintf(zErr, nErr, "history: out of memory");
        return NULL;
    }
    if (run(pH, zSql, azParam, nParam, pRows, zErr, nErr) != 0) {
        json_decref(pRows);
        return NULL;
    }
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

    zErr[0] = 0;
    if (pH->pB->xExec(pH->pDb, pH->pB->zBeginWrite, zErr, nErr) != 0) return -1;
    {
        const json_t *aV[6] = { pRunId, json_object_get(pRun, "timestamp"),
                                json_object_get(pRun, "suite"), json_object_get(pRun, "policy"),
                                json_object_get(pDoc, "verdict"), pKeys };
        rc |= insert(pH, "INSERT INTO runs (run_id, timestamp, suite, policy, verdict, "
                     "slice_keys) VALUES (?, ?, ?, ?, ?, ?)", aV, 6, zErr, nErr);
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
        rc |= insert(pH, "INSERT INTO slices (run_id, slice, labels, pairs, pass, fail, error, "
                     "outcome_agreement, traffic_share, metrics) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     aV, 10, zErr, nErr);
        json_object_foreach((json_t *)json_object_get(pSlice, "rules"), zRule, pState) {
            json_t *pRule = json_string(zRule);
            const json_t *aS[4] = { pRunId, pName, pRule, pState };
            rc |= insert(pH, "INSERT INTO rule_states (run_id, slice, rule, state) "
                         "VALUES (?, ?, ?, ?)", aS, 4, zErr, nErr);
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
            rc |= insert(pH, "INSERT INTO alerts (run_id, slice, rule, metric, owner, value, "
                         "runs_out_of_range, persistence, mitigation, fired) VALUES "
                         "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", aV, 10, zErr, nErr);
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
        rc |= insert(pH, "INSERT INTO pairs (run_id, pair_id, slice, status, eager_path, "
                     "compiled_path, eager_identity, compiled_identity, first_divergence) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", aV, 9, zErr, nErr);
        json_decref(pName);
        json_decref(pIdE);
        json_decref(pIdC);
        json_array_foreach(json_object_get(pPair, "local_causes"), j, pCause) {
            const json_t *aC[5] = { pRunId, json_object_get(pPair, "id"),
                                    json_object_get(pCause, "name"), json_object_get(pCause, "op"),
                                    json_object_get(pCause, "affected_slice") };
            rc |= insert(pH, "INSERT INTO local_causes (run_id, pair_id, tensor, op, "
                         "affected_slice) VALUES (?, ?, ?, ?, ?)", aC, 5, zErr, nErr);
        }
    }
    if (rc == 0 && pH->pB->xExec(pH->pDb, "COMMIT", zErr, nErr) == 0) return 0;
    if (zErr[0] == 0) snprintf(zErr, nErr, "history: out of memory appending the run");
    {
        char zIgnored[64];
        pH->pB->xExec(pH->pDb, "ROLLBACK", zIgnored, sizeof zIgnored);
    }
    return -1;
}
