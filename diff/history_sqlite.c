/*
 * history_sqlite.c - the gate's history in an SQLite file (history_backend.h), the
 * default: embedded, no server. Two processes appending to one file queue on its write
 * lock (BEGIN IMMEDIATE, with a 30 s busy timeout) rather than fail.
 */
#include <stdio.h>
#include <sqlite3.h>
#include "diff/history_backend.h"

static int sqlite_exec(void *pDb, const char *zSql, char *zErr, size_t nErr)
{
    if (sqlite3_exec(pDb, zSql, NULL, NULL, NULL) == SQLITE_OK) return 0;
    snprintf(zErr, nErr, "history: %s", sqlite3_errmsg(pDb));
    return -1;
}

static int sqlite_run(void *pDb, const char *zSql, const char *const *azParam, int nParam,
                      json_t *pRows, char *zErr, size_t nErr)
{
    sqlite3_stmt *pStmt;
    int i, step, nCol;
    if (sqlite3_prepare_v2(pDb, zSql, -1, &pStmt, NULL) != SQLITE_OK) {
        snprintf(zErr, nErr, "history: %s", sqlite3_errmsg(pDb));
        return -1;
    }
    for (i = 0; i < nParam; i++) {
        if (azParam[i]) sqlite3_bind_text(pStmt, i + 1, azParam[i], -1, SQLITE_TRANSIENT);
        else sqlite3_bind_null(pStmt, i + 1);
    }
    nCol = sqlite3_column_count(pStmt);
    while ((step = sqlite3_step(pStmt)) == SQLITE_ROW) {
        json_t *pRow;
        if (pRows == NULL) continue;
        pRow = json_array();
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
        snprintf(zErr, nErr, "history: %s", step == SQLITE_NOMEM ? "out of memory"
                                                                 : sqlite3_errmsg(pDb));
        sqlite3_finalize(pStmt);
        return -1;
    }
    sqlite3_finalize(pStmt);
    return 0;
}

static void sqlite_close(void *pDb)
{
    sqlite3_close(pDb);
}

static const history_backend g_sqlite = {
    "sqlite", "BEGIN IMMEDIATE", NULL, sqlite_exec, sqlite_run, sqlite_close
};

int history_sqlite_open(const char *zPath, int readOnly, void **ppDb,
                        const history_backend **ppBackend, char *zErr, size_t nErr)
{
    sqlite3 *pDb = NULL;
    int flags = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (sqlite3_open_v2(zPath, &pDb, flags, NULL) != SQLITE_OK) {
        snprintf(zErr, nErr, "%s: cannot open the history: %s", zPath,
                 pDb ? sqlite3_errmsg(pDb) : "out of memory");
        sqlite3_close(pDb);
        return -1;
    }
    sqlite3_busy_timeout(pDb, 30000);   /* another gate appending: wait for it */
    *ppDb = pDb;
    *ppBackend = &g_sqlite;
    return 0;
}
