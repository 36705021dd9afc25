/*
 * history_backend.h - what a database must do to hold the gate's run history
 * (diff/gate_history.c): run a script, run one statement with text parameters and return
 * its rows as text, close. Two back ends implement it: SQLite, a file (history_sqlite.c,
 * the default), and PostgreSQL, a server many CI runners share (history_pg.c).
 *
 * Statements are written once, with '?' placeholders, in SQL both run; every parameter
 * and every value read is text (NULL: SQL NULL), so both back ends see the same bytes
 * and the history reads the same from either.
 */
#ifndef PARITY_HISTORY_BACKEND_H
#define PARITY_HISTORY_BACKEND_H
#include <stddef.h>
#include <jansson.h>

typedef struct {
    const char *zName;             /* "sqlite", "postgresql" */
    /* The statement that opens a transaction that will write: it takes the write lock at
     * once (SQLite's BEGIN IMMEDIATE), so two appenders queue instead of deadlocking. */
    const char *zBeginWrite;
    /* Run inside the schema's transaction before creating it, or NULL: PostgreSQL's
     * CREATE TABLE IF NOT EXISTS races with itself, so schema creation is serialised. */
    const char *zSchemaLock;
    /* Runs a script of statements without parameters. 0, or -1 with zErr. */
    int (*xExec)(void *pDb, const char *zSql, char *zErr, size_t nErr);
    /* Runs one statement; rows (arrays of strings or nulls) are appended to pRows when it
     * is not NULL. 0, or -1 with zErr. */
    int (*xRun)(void *pDb, const char *zSql, const char *const *azParam, int nParam,
                json_t *pRows, char *zErr, size_t nErr);
    void (*xClose)(void *pDb);
} history_backend;

/* Each opens zWhere (a file path; a libpq connection URI) and returns its connection and
 * its back end; readOnly: the file must exist and is opened read-only (SQLite), the
 * session's transactions are read-only (PostgreSQL). 0, or -1 with one line in zErr. */
int history_sqlite_open(const char *zPath, int readOnly, void **ppDb,
                        const history_backend **ppBackend, char *zErr, size_t nErr);
int history_pg_open(const char *zUri, int readOnly, void **ppDb,
                    const history_backend **ppBackend, char *zErr, size_t nErr);
/* 1 when zWhere names a PostgreSQL server (postgresql:// or postgres://). */
int history_is_pg(const char *zWhere);

#endif
