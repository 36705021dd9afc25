/*
 * history_pg.c - the gate's history on a PostgreSQL server (history_backend.h), for a
 * fleet: many CI runners append to one history and every investigation sees all of it.
 * Chosen by a libpq connection URI (`--history postgresql://host/db`; a Unix socket with
 * `postgresql:///db?host=/run/postgresql`).
 *
 * Statements are written with '?' placeholders (history_backend.h); they become $1, $2,
 * ... here (no statement of the history has a '?' inside a literal). Parameters go as
 * untyped text, so the server reads them in the type of the column they meet.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>
#include "diff/history_backend.h"

int history_is_pg(const char *zWhere)
{
    return strncmp(zWhere, "postgresql://", 13) == 0 || strncmp(zWhere, "postgres://", 11) == 0;
}

/* The server's message on one line (libpq's end in a newline, some span several). */
static void pg_error(PGconn *pConn, const PGresult *pRes, char *zErr, size_t nErr)
{
    const char *z = pRes ? PQresultErrorMessage(pRes) : PQerrorMessage(pConn);
    size_t i;
    snprintf(zErr, nErr, "history: %s", z && z[0] ? z : "PostgreSQL error");
    for (i = 0; zErr[i]; i++)
        if (zErr[i] == '\n') zErr[i] = zErr[i + 1] ? ' ' : 0;
}

static int pg_exec(void *pDb, const char *zSql, char *zErr, size_t nErr)
{
    PGresult *pRes = PQexec(pDb, zSql);
    ExecStatusType st = PQresultStatus(pRes);
    int rc = (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) ? 0 : -1;
    if (rc) pg_error(pDb, pRes, zErr, nErr);
    PQclear(pRes);
    return rc;
}

/* zSql with each '?' as $1, $2, ... (a new string, or NULL). */
static char *numbered(const char *zSql)
{
    size_t n = strlen(zSql), k = 0, i;
    char *z = malloc(n * 4 + 1), *p = z;
    if (z == NULL) return NULL;
    for (i = 0; i < n; i++) {
        if (zSql[i] == '?') p += sprintf(p, "$%zu", ++k);
        else *p++ = zSql[i];
    }
    *p = 0;
    return z;
}

static int pg_run(void *pDb, const char *zSql, const char *const *azParam, int nParam,
                  json_t *pRows, char *zErr, size_t nErr)
{
    char *zNumbered = numbered(zSql);
    PGresult *pRes;
    ExecStatusType st;
    int r, c, nRow, nCol, rc = 0;
    if (zNumbered == NULL) {
        snprintf(zErr, nErr, "history: out of memory");
        return -1;
    }
    pRes = PQexecParams(pDb, zNumbered, nParam, NULL, azParam, NULL, NULL, 0);
    free(zNumbered);
    st = PQresultStatus(pRes);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        pg_error(pDb, pRes, zErr, nErr);
        PQclear(pRes);
        return -1;
    }
    nRow = PQntuples(pRes);
    nCol = PQnfields(pRes);
    for (r = 0; pRows && r < nRow && rc == 0; r++) {
        json_t *pRow = json_array();
        for (c = 0; pRow && c < nCol; c++)
            json_array_append_new(pRow, PQgetisnull(pRes, r, c) ? json_null()
                                                                : json_string(PQgetvalue(pRes, r, c)));
        if (pRow == NULL || json_array_append_new(pRows, pRow) != 0) {
            snprintf(zErr, nErr, "history: out of memory");
            rc = -1;
        }
    }
    PQclear(pRes);
    return rc;
}

static void pg_close(void *pDb)
{
    PQfinish(pDb);
}

/* Notices (a table that already exists) are not the user's business. */
static void quiet_notice(void *pArg, const char *zMessage)
{
    (void)pArg;
    (void)zMessage;
}

static const history_backend g_pg = {
    "postgresql", "BEGIN", "SELECT pg_advisory_xact_lock(717501)", pg_exec, pg_run, pg_close
};

int history_pg_open(const char *zUri, int readOnly, void **ppDb,
                    const history_backend **ppBackend, char *zErr, size_t nErr)
{
    PGconn *pConn = PQconnectdb(zUri);
    if (pConn == NULL || PQstatus(pConn) != CONNECTION_OK) {
        char zWhy[512];
        pg_error(pConn, NULL, zWhy, sizeof zWhy);
        /* not the URI: it may hold a password */
        snprintf(zErr, nErr, "cannot connect to the PostgreSQL history: %s", zWhy + 9);
        PQfinish(pConn);
        return -1;
    }
    PQsetNoticeProcessor(pConn, quiet_notice, NULL);
    if (readOnly && pg_exec(pConn, "SET default_transaction_read_only = on", zErr, nErr) != 0) {
        PQfinish(pConn);
        return -1;
    }
    *ppDb = pConn;
    *ppBackend = &g_pg;
    return 0;
}
