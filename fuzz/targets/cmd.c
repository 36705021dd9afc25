/*
 * cmd.c - an external target: a persistent worker process speaking the line protocol of
 * formats/FORMAT.md ("Fuzz worker protocol", versions 1 and 2) over its stdin and stdout.
 *
 * Version 2, the handshake carries capabilities as key=value fields that both sides
 * ignore when they do not know the key:
 *   worker -> us   HELLO 2 [key=value ...]                  it speaks version 2
 *   us -> worker   OFFER ops=<op,...> dtypes=<dtype,...>    what we may send
 *   worker -> us   SKIP <op> <reason>                       offered ops it does not run
 *   worker -> us   READY 2 <name> [ops=<op,...>] [dtypes=<dtype,...>]   what it runs
 * READY's fields: ops= and dtypes= (above), and eager=builtin: the worker runs compiled
 * sides only, and the eager side of every case is the builtin eager kernels' (as the
 * onednn target's), so the offered ops the builtin has no kernel for are skipped.
 * Version 1: SKIP lines, then READY 1 <name>; no offer (a version-1 worker answers any
 * line it does not expect with ERROR, so only a worker that said HELLO 2 gets one). Then,
 * either version:
 *   us -> worker   RUN <side> <case.h5> <out.h5>
 *   worker -> us   OK [compile_s=S] | ERROR <message> | SKIP <message>
 *   us -> worker   QUIT
 *
 * The offer is the registry's ops that have a fuzz layout, in registry order, and the
 * dtypes the generator draws: no worker needs a copy of either list. An op or dtype in the
 * worker's answer that was not offered is ignored (a worker answers from its own map, and
 * an op that map has and this build does not is no error); an offered op that the answer
 * does not name, or that it SKIPs, is never sent.
 *
 * The worker runs under /bin/sh -c in its own process group (the supervisor,
 * formats/process.h). When it dies mid-request the case is a crash and the next request
 * starts a new worker, held to what the first handshake settled; when a request outlives
 * the case timeout the group is killed and the case is a hang. Case and output files live
 * in a private temporary folder removed on close. What the worker skips is said once, in
 * the target's zNotice (the caller shows it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/alloc.h"
#include "formats/process.h"
#include "fuzz/targets/targets.h"

#define CMD_LINE_MAX PARITY_PROCESS_LINE_MAX
#define CMD_MAX_FIELDS 32
#define CMD_STARTUP_TIMEOUT 120.0    /* importing torch takes seconds on a cold cache */
#define CMD_QUIT_GRACE 2.0           /* seconds a worker has to leave after QUIT */
#define CMD_NOTICE_LEN 8192

typedef struct {
    char **az;
    size_t n;
} str_list;

typedef struct {
    parity_target base;
    char *zCommand;
    double caseTimeout;
    parity_process worker;    /* pid 0: no worker running */
    char zDir[64];            /* private folder for case and output files */
    /* what the first handshake settled (a restarted worker is held to it) */
    int started;
    int version;              /* 1 or 2 */
    char zWorkerName[128];
    str_list skips;           /* "<op> <reason>", in the worker's order */
    str_list runs;            /* version 2: the offered ops it runs */
    int eagerBuiltin;         /* version 2, eager=builtin: we run eager sides ourselves */
    char zNotice[CMD_NOTICE_LEN];
} cmd_target;

/* ---- small lists --------------------------------------------------------------------- */

static int list_add(str_list *pL, const char *z, size_t n)
{
    char **az = parity_realloc(pL->az, (pL->n + 1) * sizeof *az);
    char *zCopy = parity_malloc(n + 1);
    if (az) pL->az = az;
    if (!az || !zCopy) {
        free(zCopy);
        return -1;
    }
    memcpy(zCopy, z, n);
    zCopy[n] = '\0';
    pL->az[pL->n++] = zCopy;
    return 0;
}

static void list_free(str_list *pL)
{
    size_t i;
    for (i = 0; i < pL->n; i++) free(pL->az[i]);
    free(pL->az);
    memset(pL, 0, sizeof *pL);
}

/* 1 when z ("<op>" or "<op> <reason>") names zOp. */
static int names_op(const char *z, const char *zOp)
{
    size_t len = strlen(zOp);
    return strncmp(z, zOp, len) == 0 && (z[len] == ' ' || z[len] == '\0');
}

static int list_names(const str_list *pL, const char *zOp)
{
    size_t i;
    for (i = 0; i < pL->n; i++)
        if (names_op(pL->az[i], zOp)) return 1;
    return 0;
}

/* ---- the worker process --------------------------------------------------------------- */

/* How the worker ended, for zErr: "worker <zWhat> (killed by signal 11)". */
static void describe_exit(const parity_process *pW, char *zErr, size_t nErr, const char *zWhat)
{
    if (pW->end == PARITY_PROCESS_SIGNALED)
        snprintf(zErr, nErr, "worker %s (killed by signal %d)", zWhat, pW->sig);
    else if (pW->end == PARITY_PROCESS_EXITED && pW->code > 128)
        /* /bin/sh (dash) reports its child's death by signal N as status 128 + N */
        snprintf(zErr, nErr, "worker %s (killed by signal %d)", zWhat, pW->code - 128);
    else if (pW->end == PARITY_PROCESS_EXITED)
        snprintf(zErr, nErr, "worker %s (exit status %d)", zWhat, pW->code);
    else
        snprintf(zErr, nErr, "worker %s", zWhat);
}

/* Ends the worker: politely (QUIT, then a grace period) or not (its process group is
 * killed). With zWhat, says in zErr how it ended. */
static void worker_stop(cmd_target *p, int force, const char *zWhat, char *zErr, size_t nErr)
{
    if (p->worker.pid <= 0) return;
    if (force) {
        parity_process_kill(&p->worker);
    } else {
        if (parity_process_write(&p->worker, "QUIT\n", 5) != 0) { /* already gone */ }
        parity_process_stop(&p->worker, CMD_QUIT_GRACE);
    }
    if (zWhat) describe_exit(&p->worker, zErr, nErr, zWhat);
    parity_process_close(&p->worker);
}

/* Reads one line of the worker's within timeout seconds: PARITY_PROCESS_OK, _EOF or
 * _TIMEOUT. */
static int read_line(cmd_target *p, char *zLine, size_t nLine, double timeout)
{
    return parity_process_read_line(&p->worker, zLine, nLine, parity_process_now() + timeout);
}

/* ---- capability fields: key=value, values of lists comma-separated ---------------------- */

typedef struct {
    const char *zKey, *zValue;     /* into aText */
} cmd_field;

typedef struct {
    char aText[CMD_LINE_MAX];      /* the words, cut at '=' and at spaces */
    cmd_field a[CMD_MAX_FIELDS];
    size_t n;
} cmd_fields;

/* Splits z (the rest of zLine, after its verb and version) into fields. -1 with zErr on a
 * word that is not key=value, an empty key or list item, a key given twice, or too many
 * fields. */
static int parse_fields(const char *z, cmd_fields *pF, const char *zLine, char *zErr,
                        size_t nErr)
{
    char *zSave = NULL, *zWord;
    pF->n = 0;
    snprintf(pF->aText, sizeof pF->aText, "%s", z);
    for (zWord = strtok_r(pF->aText, " ", &zSave); zWord; zWord = strtok_r(NULL, " ", &zSave)) {
        char *zEq = strchr(zWord, '=');
        size_t i;
        if (!zEq || zEq == zWord) {
            snprintf(zErr, nErr, "worker sent a malformed capability '%.100s' (want key=value) "
                     "in '%.200s'", zWord, zLine);
            return -1;
        }
        *zEq = '\0';
        if (zEq[1] == ',' || strstr(zEq + 1, ",,") ||
            (zEq[1] && zEq[strlen(zEq + 1)] == ',')) {
            snprintf(zErr, nErr, "worker sent an empty item in '%s' of '%.200s'", zWord, zLine);
            return -1;
        }
        for (i = 0; i < pF->n; i++) {
            if (strcmp(pF->a[i].zKey, zWord) == 0) {
                snprintf(zErr, nErr, "worker gave '%s' twice in '%.200s'", zWord, zLine);
                return -1;
            }
        }
        if (pF->n == CMD_MAX_FIELDS) {
            snprintf(zErr, nErr, "worker sent over %d capabilities in '%.200s'", CMD_MAX_FIELDS,
                     zLine);
            return -1;
        }
        pF->a[pF->n].zKey = zWord;
        pF->a[pF->n++].zValue = zEq + 1;
    }
    return 0;
}

/* The value of key zKey, or NULL when absent. */
static const char *field(const cmd_fields *pF, const char *zKey)
{
    size_t i;
    for (i = 0; i < pF->n; i++)
        if (strcmp(pF->a[i].zKey, zKey) == 0) return pF->a[i].zValue;
    return NULL;
}

/* 1 when the comma-separated list zList names z. */
static int list_has(const char *zList, const char *z)
{
    size_t len = strlen(z);
    while (zList && *zList) {
        const char *zEnd = strchr(zList, ',');
        size_t n = zEnd ? (size_t)(zEnd - zList) : strlen(zList);
        if (n == len && strncmp(zList, z, n) == 0) return 1;
        zList = zEnd ? zEnd + 1 : NULL;
    }
    return 0;
}

/* ---- the offer: the registry's fuzzable ops, the drawable dtypes ------------------------ */

static int offered_op(const parity_op_def *pDef)
{
    return parity_layout_of(pDef) != NULL;
}

static int offered_dtype(int dt)
{
    return parity_spec_dtype_drawable((parity_dtype)dt);
}

/* "OFFER ops=... dtypes=...\n" into z. -1 when it does not fit. */
static int build_offer(char *z, size_t n)
{
    size_t len = (size_t)snprintf(z, n, "OFFER ops=");
    const char *zSep = "";
    int dt;
    size_t i;
    for (i = 0; parity_op_registry[i] && len < n; i++) {
        if (!offered_op(parity_op_registry[i])) continue;
        len += (size_t)snprintf(z + len, n - len, "%s%s", zSep, parity_op_registry[i]->zName);
        zSep = ",";
    }
    if (len < n) len += (size_t)snprintf(z + len, n - len, " dtypes=");
    for (dt = 0, zSep = ""; dt < PARITY_DT_COUNT && len < n; dt++) {
        if (!offered_dtype(dt)) continue;
        len += (size_t)snprintf(z + len, n - len, "%s%s", zSep, parity_dtype_name((parity_dtype)dt));
        zSep = ",";
    }
    if (len < n) len += (size_t)snprintf(z + len, n - len, " graphs=");
    for (i = 0, zSep = ""; i < parity_graph_family_count() && len < n; i++) {
        len += (size_t)snprintf(z + len, n - len, "%s%s", zSep, parity_graph_family_at(i)->zName);
        zSep = ",";
    }
    if (len < n) len += (size_t)snprintf(z + len, n - len, "\n");
    return len < n ? 0 : -1;
}

/* ---- the handshake ------------------------------------------------------------------------ */

/* Records "SKIP <op> <reason>" (the first handshake only: a restarted worker says it
 * again). 0, or -1 when out of memory. */
static int add_skip(cmd_target *p, const char *zLine)
{
    if (p->started || !zLine[5]) return 0;
    return list_add(&p->skips, zLine + 5, strlen(zLine + 5));
}

/* The notice: one line with every op the worker skips and why ("" when none). */
static void build_notice(cmd_target *p)
{
    char *z = p->zNotice;
    size_t n = sizeof p->zNotice, len, i;
    z[0] = '\0';
    if (p->skips.n == 0) return;
    len = (size_t)snprintf(z, n, "worker %s skips %zu op%s:", p->zWorkerName, p->skips.n,
                           p->skips.n == 1 ? "" : "s");
    for (i = 0; i < p->skips.n && len < n; i++) {
        const char *zSkip = p->skips.az[i];
        const char *zReason = strchr(zSkip, ' ');
        int lenOp = zReason ? (int)(zReason - zSkip) : (int)strlen(zSkip);
        len += (size_t)snprintf(z + len, n - len, "%s %.*s", i ? "," : "", lenOp, zSkip);
        if (zReason && zReason[1] && len < n)
            len += (size_t)snprintf(z + len, n - len, " (%s)", zReason + 1);
    }
    p->base.zNotice = p->zNotice;
}

/* Version 2's answer, "READY 2 [<name>] [key=value ...]" (zRest: after "READY 2"): the
 * name, the offered ops it runs (an op it neither names nor SKIPs is skipped "not in its
 * answer") and the dtypes. 0, or -1 with zErr. */
static int take_answer(cmd_target *p, const char *zLine, const char *zRest, char *zErr,
                       size_t nErr)
{
    cmd_fields f;
    const char *zOps, *zDtypes, *zEager, *zGraphs;
    uint32_t dtypes = 0;
    size_t i, nWord;
    int dt;

    while (*zRest == ' ') zRest++;
    nWord = strcspn(zRest, " ");
    if (nWord > 0 && !memchr(zRest, '=', nWord)) {      /* a name comes before the fields */
        if (!p->started)
            snprintf(p->zWorkerName, sizeof p->zWorkerName, "%.*s", (int)nWord, zRest);
        zRest += nWord;
    } else if (!p->started) {
        snprintf(p->zWorkerName, sizeof p->zWorkerName, "worker");
    }
    if (parse_fields(zRest, &f, zLine, zErr, nErr) != 0) return -1;
    if (p->started) return 0;
    zOps = field(&f, "ops");
    zDtypes = field(&f, "dtypes");
    zEager = field(&f, "eager");
    zGraphs = field(&f, "graphs");
    for (i = 0; zGraphs && i < parity_graph_family_count(); i++)   /* absent: none */
        if (list_has(zGraphs, parity_graph_family_at(i)->zName)) p->base.graphFamilies |= 1u << i;
    if (zEager && strcmp(zEager, "builtin") != 0) {
        snprintf(zErr, nErr, "worker asked for eager=%.100s (parityfuzz knows eager=builtin)",
                 zEager);
        return -1;
    }
    p->eagerBuiltin = zEager != NULL;
    for (i = 0; parity_op_registry[i]; i++) {
        const char *zOp = parity_op_registry[i]->zName;
        int runs = !zOps || list_has(zOps, zOp);
        if (!offered_op(parity_op_registry[i])) continue;
        if (runs && p->eagerBuiltin && !parity_builtin_supports(parity_op_registry[i]) &&
            !list_names(&p->skips, zOp)) {
            char zSkip[128];
            snprintf(zSkip, sizeof zSkip, "%s the builtin eager side has no kernel for it", zOp);
            if (list_add(&p->skips, zSkip, strlen(zSkip)) != 0) goto nomem;
        } else if (runs && !list_names(&p->skips, zOp)) {
            if (list_add(&p->runs, zOp, strlen(zOp)) != 0) goto nomem;
        } else if (!list_names(&p->skips, zOp)) {
            char zSkip[128];
            snprintf(zSkip, sizeof zSkip, "%s not in its answer", zOp);
            if (list_add(&p->skips, zSkip, strlen(zSkip)) != 0) goto nomem;
        }
    }
    for (dt = 0; dt < PARITY_DT_COUNT; dt++)
        if (offered_dtype(dt) && (!zDtypes || list_has(zDtypes, parity_dtype_name((parity_dtype)dt))))
            dtypes |= 1u << dt;
    if (dtypes == 0) {
        snprintf(zErr, nErr, "worker runs none of the offered dtypes ('%.200s')", zLine);
        return -1;
    }
    p->base.dtypes = dtypes;
    return 0;
nomem:
    snprintf(zErr, nErr, "out of memory");
    return -1;
}

/* One handshake line. Returns 1 when the handshake is over, 0 to read on, -1 with zErr. */
static int handshake_line(cmd_target *p, const char *zLine, int *pHello, char *zErr,
                          size_t nErr)
{
    if (strncmp(zLine, "SKIP ", 5) == 0)
        return add_skip(p, zLine) == 0 ? 0 : (snprintf(zErr, nErr, "out of memory"), -1);
    if (strncmp(zLine, "HELLO ", 6) == 0 || strcmp(zLine, "HELLO") == 0) {
        char *zEnd, zOffer[CMD_LINE_MAX];
        cmd_fields f;
        long version = strtol(zLine + 5, &zEnd, 10);
        if (zEnd == zLine + 5 || (*zEnd && *zEnd != ' ') || *pHello) {
            snprintf(zErr, nErr, "worker sent a malformed HELLO line: '%.200s'", zLine);
            return -1;
        }
        if (version != 2) {
            snprintf(zErr, nErr, "worker speaks protocol %ld, parityfuzz speaks 1 and 2", version);
            return -1;
        }
        if (parse_fields(zEnd, &f, zLine, zErr, nErr) != 0) return -1;
        if (build_offer(zOffer, sizeof zOffer) != 0 ||
            parity_process_write(&p->worker, zOffer, strlen(zOffer)) != 0) {
            snprintf(zErr, nErr, "cannot send the worker its offer");
            return -1;
        }
        *pHello = 1;
        return 0;
    }
    if (strncmp(zLine, "READY ", 6) == 0) {
        char *zEnd;
        long version = strtol(zLine + 6, &zEnd, 10);
        if (zEnd == zLine + 6 || (*zEnd && *zEnd != ' ')) {
            snprintf(zErr, nErr, "worker sent a malformed READY line: '%.200s'", zLine);
            return -1;
        }
        if (version != 1 && version != 2) {
            snprintf(zErr, nErr, "worker speaks protocol %ld, parityfuzz speaks 1 and 2", version);
            return -1;
        }
        if ((version == 2) != *pHello) {
            snprintf(zErr, nErr, "worker said %s, then READY %ld", *pHello ? "HELLO 2" : "no HELLO 2",
                     version);
            return -1;
        }
        if (p->started && version != p->version) {
            snprintf(zErr, nErr, "restarted worker speaks protocol %ld, it spoke %d", version,
                     p->version);
            return -1;
        }
        if (version == 2) return take_answer(p, zLine, zEnd, zErr, nErr) == 0 ? 1 : -1;
        if (!p->started)
            snprintf(p->zWorkerName, sizeof p->zWorkerName, "%s", *zEnd ? zEnd + 1 : "worker");
        return 1;
    }
    if (*pHello && strncmp(zLine, "ERROR", 5) == 0) {
        snprintf(zErr, nErr, "worker refused the offer:%.300s", zLine + 5);
        return -1;
    }
    return 0;    /* anything else before READY is chatter (a library banner): ignore it */
}

/* Starts the worker and reads its handshake. Returns 0, or -1 with zErr. */
static int worker_start(cmd_target *p, char *zErr, size_t nErr)
{
    const char *azArgv[] = { "/bin/sh", "-c", p->zCommand, NULL };
    parity_process_options opt;
    char zLine[CMD_LINE_MAX];
    int hello = 0;
    memset(&opt, 0, sizeof opt);
    opt.azArgv = azArgv;
    opt.in = PARITY_PROCESS_PIPE;
    opt.out = PARITY_PROCESS_PIPE;
    opt.ownGroup = 1;
    opt.reapGroup = 1;      /* its shell's child and its compile pool end with it, counted */
    if (parity_process_start(&p->worker, &opt, zErr, nErr) != 0) return -1;
    for (;;) {
        int rc = read_line(p, zLine, sizeof zLine, CMD_STARTUP_TIMEOUT);
        if (rc != PARITY_PROCESS_OK) {
            worker_stop(p, 1, rc == PARITY_PROCESS_EOF ? "exited before READY"
                                                       : "sent no READY in time", zErr, nErr);
            return -1;
        }
        rc = handshake_line(p, zLine, &hello, zErr, nErr);
        if (rc < 0) {
            worker_stop(p, 1, NULL, NULL, 0);
            return -1;
        }
        if (rc == 0) continue;
        if (!p->started) {
            p->version = hello ? 2 : 1;
            build_notice(p);
        }
        p->started = 1;
        return 0;
    }
}

/* ---- the target ------------------------------------------------------------------------- */

static int cmd_supports(parity_target *pT, const char *zOp)
{
    cmd_target *p = (cmd_target *)pT;
    if (p->version == 2) return list_names(&p->runs, zOp);
    return !list_names(&p->skips, zOp);
}

/* OK's fields: compile_s=S, the seconds of this request the worker spent compiling (a
 * finite number >= 0), counted in the target's times; unknown keys are ignored. 0, or -1
 * with zErr when a field is malformed. */
static int take_ok_fields(cmd_target *p, parity_side side, const char *zLine, char *zErr,
                          size_t nErr)
{
    cmd_fields f;
    const char *zCompile;
    if (parse_fields(zLine + 2, &f, zLine, zErr, nErr) != 0) return -1;
    zCompile = field(&f, "compile_s");
    if (zCompile) {
        char *zEnd;
        double s = strtod(zCompile, &zEnd);
        if (zEnd == zCompile || *zEnd || !(s >= 0.0) || s > 1e9) {
            snprintf(zErr, nErr, "worker sent compile_s=%.40s (want seconds, a number >= 0)",
                     zCompile);
            return -1;
        }
        p->base.times.compileSeconds[side] += s;
        if (s > 0.0) p->base.times.nCompiles[side]++;
    }
    return 0;
}

static parity_run_status cmd_request(cmd_target *p, parity_side side, const char *zCase,
                                     const char *zOutFile, const parity_case *pCase,
                                     const parity_graph_case *pG, double *aOut, char *zErr,
                                     size_t nErr);

static parity_run_status cmd_run(parity_target *pT, parity_side side, const parity_case *pCase,
                                 double *aOut, char *zErr, size_t nErr)
{
    cmd_target *p = (cmd_target *)pT;
    char zCase[128], zOutFile[128];
    const char *zSide = side == PARITY_SIDE_EAGER ? "eager" : "compiled";

    if (!cmd_supports(pT, pCase->spec.zOp)) {
        snprintf(zErr, nErr, "worker skips %s", pCase->spec.zOp);
        return PARITY_RUN_SKIP;
    }
    if (side == PARITY_SIDE_EAGER && p->eagerBuiltin)
        return parity_builtin_eager(pCase, aOut, zErr, nErr) == 0 ? PARITY_RUN_OK
                                                                  : PARITY_RUN_ERROR;
    if (p->worker.pid <= 0 && worker_start(p, zErr, nErr) != 0) return PARITY_RUN_CRASH;
    snprintf(zCase, sizeof zCase, "%s/case.h5", p->zDir);
    snprintf(zOutFile, sizeof zOutFile, "%s/out-%s.h5", p->zDir, zSide);
    unlink(zOutFile);
    if (parity_case_write(pCase, NULL, NULL, NULL, NULL, NULL, zCase, zErr, nErr) != 0) return PARITY_RUN_ERROR;
    return cmd_request(p, side, zCase, zOutFile, pCase, NULL, aOut, zErr, nErr);
}

/* Sends RUN for a written case file and takes the answer: the output read back (a single
 * op's case pCase, or a graph case pG) on OK. */
static parity_run_status cmd_request(cmd_target *p, parity_side side, const char *zCase,
                                     const char *zOutFile, const parity_case *pCase,
                                     const parity_graph_case *pG, double *aOut, char *zErr,
                                     size_t nErr)
{
    char zReq[400], zLine[CMD_LINE_MAX];
    const char *zSide = side == PARITY_SIDE_EAGER ? "eager" : "compiled";
    int rc;
    size_t len;
    len = (size_t)snprintf(zReq, sizeof zReq, "RUN %s %s %s\n", zSide, zCase, zOutFile);
    if (parity_process_write(&p->worker, zReq, len) != 0) {
        worker_stop(p, 1, "died", zErr, nErr);
        return PARITY_RUN_CRASH;
    }
    rc = read_line(p, zLine, sizeof zLine, p->caseTimeout);
    if (rc == PARITY_PROCESS_TIMEOUT) {
        worker_stop(p, 1, NULL, NULL, 0);
        snprintf(zErr, nErr, "worker did not answer within %g s: killed", p->caseTimeout);
        return PARITY_RUN_HANG;
    }
    if (rc == PARITY_PROCESS_EOF) {
        worker_stop(p, 1, "died", zErr, nErr);
        return PARITY_RUN_CRASH;
    }
    if (strcmp(zLine, "OK") == 0 || strncmp(zLine, "OK ", 3) == 0) {
        if (take_ok_fields(p, side, zLine, zErr, nErr) != 0) {
            worker_stop(p, 1, NULL, NULL, 0);
            return PARITY_RUN_ERROR;
        }
        if ((pG ? parity_graph_case_read_output(pG, zOutFile, aOut, zErr, nErr)
                : parity_case_read_output(pCase, zOutFile, aOut, zErr, nErr)) != 0)
            return PARITY_RUN_ERROR;
        return PARITY_RUN_OK;
    }
    if (strncmp(zLine, "SKIP", 4) == 0) {
        snprintf(zErr, nErr, "worker skips the case:%s", zLine + 4);
        return PARITY_RUN_SKIP;
    }
    if (strncmp(zLine, "ERROR", 5) == 0) {
        snprintf(zErr, nErr, "worker error:%s", zLine + 5);
        return PARITY_RUN_ERROR;
    }
    snprintf(zErr, nErr, "worker broke the protocol: '%.200s'", zLine);
    worker_stop(p, 1, NULL, NULL, 0);
    return PARITY_RUN_ERROR;
}

/* A graph case's compiled side: the case file (graph_io.c) and one RUN compiled. */
static parity_run_status cmd_run_graph(parity_target *pT, const parity_graph_case *pG,
                                       double *aOut, char *zErr, size_t nErr)
{
    cmd_target *p = (cmd_target *)pT;
    char zCase[128], zOutFile[128];
    size_t i;
    for (i = 0; i < parity_graph_family_count(); i++)
        if (parity_graph_family_at(i) == pG->pFam && !(pT->graphFamilies >> i & 1)) {
            snprintf(zErr, nErr, "worker skips graph family %s", pG->pFam->zName);
            return PARITY_RUN_SKIP;
        }
    if (p->worker.pid <= 0 && worker_start(p, zErr, nErr) != 0) return PARITY_RUN_CRASH;
    snprintf(zCase, sizeof zCase, "%s/graph.h5", p->zDir);
    snprintf(zOutFile, sizeof zOutFile, "%s/out-graph.h5", p->zDir);
    unlink(zOutFile);
    if (parity_graph_case_write(pG, NULL, NULL, NULL, NULL, zCase, zErr, nErr) != 0)
        return PARITY_RUN_ERROR;
    return cmd_request(p, PARITY_SIDE_COMPILED, zCase, zOutFile, NULL, pG, aOut, zErr, nErr);
}

static void remove_dir(const char *zDir)
{
    char zPath[160];
    static const char *const azFile[] = { "case.h5", "out-eager.h5", "out-compiled.h5" };
    size_t i;
    for (i = 0; i < sizeof azFile / sizeof azFile[0]; i++) {
        snprintf(zPath, sizeof zPath, "%s/%s", zDir, azFile[i]);
        unlink(zPath);
    }
    rmdir(zDir);
}

static void cmd_free(cmd_target *p)
{
    remove_dir(p->zDir);
    list_free(&p->skips);
    list_free(&p->runs);
    free(p->zCommand);
    free(p);
}

static void cmd_close(parity_target *pT)
{
    cmd_target *p = (cmd_target *)pT;
    worker_stop(p, 0, NULL, NULL, 0);
    cmd_free(p);
}

parity_target *parity_target_cmd_open(const char *zCommand, double caseTimeout, char *zErr,
                                      size_t nErr)
{
    cmd_target *p = parity_calloc(1, sizeof *p);
    const char *zTmp = getenv("TMPDIR");
    if (!p) { snprintf(zErr, nErr, "out of memory"); return NULL; }
    p->zCommand = parity_strdup(zCommand);
    p->caseTimeout = caseTimeout > 0 ? caseTimeout : 30.0;
    snprintf(p->zDir, sizeof p->zDir, "%s/parityfuzz-XXXXXX",
             zTmp && strlen(zTmp) < 40 ? zTmp : "/tmp");
    if (!p->zCommand || !mkdtemp(p->zDir)) {
        snprintf(zErr, nErr, "cannot create a temporary folder: %s", strerror(errno));
        free(p->zCommand);
        free(p);
        return NULL;
    }
    p->base.zName = "cmd";
    p->base.xRun = cmd_run;
    p->base.xRunGraph = cmd_run_graph;
    p->base.xSupports = cmd_supports;
    p->base.xClose = cmd_close;
    if (worker_start(p, zErr, nErr) != 0) {
        cmd_free(p);
        return NULL;
    }
    return &p->base;
}
