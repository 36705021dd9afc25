/*
 * bisect.c - paritydiff bisect: the first bad version of an ordered list, as `git bisect
 * run` finds the first bad commit, judged by the gate's policy on one slice
 * (diff/INVESTIGATE.md, "Bisect").
 *
 *   paritydiff bisect --policy FILE --versions FILE [--cmd COMMAND] [--slice K=V,...]
 *                     [--metric M] [--json FILE] [-q]
 *
 * The versions file lists one version a line, oldest first: `VERSION [SUITE]`. A version
 * with a SUITE folder is gated as it is; otherwise COMMAND builds its suite: it runs under
 * /bin/sh with {version} and {suite} replaced (and PARITY_VERSION, PARITY_SUITE in its
 * environment), writes the suite into the empty folder {suite}, and exits 0, or 125 when
 * this version cannot be built (it is skipped, as git bisect run skips), or anything else
 * to stop the bisection. A version is bad when the gate, run on its suite with the policy
 * and no history (every rule's persistence is 1), fires an alert on a slice matching
 * --slice (and on --metric); good otherwise.
 *
 * The first version must be good and the last bad (both are checked first); between them
 * the search halves the range each step, so n versions take about log2(n) steps, each one
 * gate run. A skipped version is replaced by its nearest untested neighbour; when skips
 * hide the boundary, every candidate is named. Bisect never appends to a history: its
 * runs are experiments, not releases. Exit 0 (found), 2 trouble.
 */
#define _GNU_SOURCE 1   /* nftw */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "diff/gate.h"
#include "formats/escape.h"
#include "formats/process.h"
#include "reports/report.h"

#define MAX_VERSIONS 100000
#define MAX_LINE 8192

typedef enum { V_UNTESTED, V_GOOD, V_BAD, V_SKIP } version_state;

typedef struct {
    char *zVersion;
    char *zSuite;            /* given in the versions file, or NULL: built by --cmd */
    version_state state;
    int nAlerts;
} version;

typedef struct {
    const char *zPolicy, *zCmd, *zSlice, *zMetric, *zSelf;
    char zTmp[PATH_MAX];     /* where --cmd builds suites */
    json_t *pSteps;          /* [{version, state, alerts}] in the order tested */
    char zErr[1024];
} bisect_ctx;

/* nftw's callback removing what the build commands wrote (links not followed). */
static int remove_entry(const char *zPath, const struct stat *pSt, int type, struct FTW *pFtw)
{
    (void)pSt;
    (void)pFtw;
    if (type == FTW_DP) rmdir(zPath);
    else unlink(zPath);
    return 0;
}

static int bisect_error(const char *zMsg)
{
    parity_escape_line(stderr, "paritydiff bisect", zMsg, NULL);
    return 2;
}

static int read_versions(const char *zPath, version **paV, size_t *pn, char *zErr, size_t nErr)
{
    FILE *pFile = fopen(zPath, "r");
    char zLine[MAX_LINE];
    version *a = NULL;
    size_t n = 0;
    int line = 0;
    if (pFile == NULL) {
        snprintf(zErr, nErr, "%s: cannot open the versions: %s", zPath, strerror(errno));
        return -1;
    }
    while (fgets(zLine, sizeof zLine, pFile)) {
        char *zSave = NULL, *zV, *zS, *zExtra;
        version *aNew;
        line++;
        zV = strtok_r(zLine, " \t\r\n", &zSave);
        if (zV == NULL || zV[0] == '#') continue;
        zS = strtok_r(NULL, " \t\r\n", &zSave);
        zExtra = strtok_r(NULL, " \t\r\n", &zSave);
        if (zExtra || n == MAX_VERSIONS) {
            snprintf(zErr, nErr, "%s:%d: %s", zPath, line, zExtra ? "expected 'VERSION [SUITE]'"
                                                                  : "too many versions");
            goto fail;
        }
        aNew = realloc(a, (n + 1) * sizeof *a);
        if (aNew == NULL) {
            snprintf(zErr, nErr, "out of memory");
            goto fail;
        }
        a = aNew;
        memset(&a[n], 0, sizeof a[n]);
        a[n].zVersion = strdup(zV);
        a[n].zSuite = zS ? strdup(zS) : NULL;
        n++;
    }
    fclose(pFile);
    if (n < 2) {
        snprintf(zErr, nErr, "%s: bisecting needs at least two versions", zPath);
        goto fail2;
    }
    *paV = a;
    *pn = n;
    return 0;
fail:
    fclose(pFile);
fail2:
    while (n-- > 0) {
        free(a[n].zVersion);
        free(a[n].zSuite);
    }
    free(a);
    return -1;
}

/* COMMAND with {version} and {suite} replaced (a new string, or NULL). */
static char *expand(const char *zCmd, const char *zVersion, const char *zSuite)
{
    size_t n = strlen(zCmd) + 1, i;
    const char *z;
    char *zOut, *p;
    for (z = zCmd; (z = strchr(z, '{')) != NULL; z++)
        n += strlen(zVersion) + strlen(zSuite);
    if ((zOut = malloc(n)) == NULL) return NULL;
    for (p = zOut, i = 0; zCmd[i];) {
        if (strncmp(zCmd + i, "{version}", 9) == 0) { p += sprintf(p, "%s", zVersion); i += 9; }
        else if (strncmp(zCmd + i, "{suite}", 7) == 0) { p += sprintf(p, "%s", zSuite); i += 7; }
        else *p++ = zCmd[i++];
    }
    *p = 0;
    return zOut;
}

/* Evaluates one version: builds its suite when needed, gates it, and sets its state.
 * 0, or -1 with pCtx->zErr (the bisection stops). */
static int evaluate(bisect_ctx *pCtx, version *pV)
{
    char zSuite[PATH_MAX + 64], *zOut = NULL;
    const char *zDir = pV->zSuite;
    json_t *pDoc, *pAlert;
    json_error_t jerr;
    size_t i;
    int code;

    if (zDir == NULL) {
        char *zCmd, zEnvV[PATH_MAX + 32], zEnvS[PATH_MAX + 128];
        extern char **environ;
        char **azEnv;
        size_t nEnv = 0, k;
        snprintf(zSuite, sizeof zSuite, "%s/suite-%zu", pCtx->zTmp, json_array_size(pCtx->pSteps));
        if (mkdir(zSuite, 0777) != 0) {
            snprintf(pCtx->zErr, sizeof pCtx->zErr, "cannot create %.900s: %s", zSuite, strerror(errno));
            return -1;
        }
        zCmd = expand(pCtx->zCmd, pV->zVersion, zSuite);
        while (environ[nEnv]) nEnv++;
        azEnv = calloc(nEnv + 3, sizeof *azEnv);
        if (zCmd == NULL || azEnv == NULL) {
            free(zCmd);
            free(azEnv);
            snprintf(pCtx->zErr, sizeof pCtx->zErr, "out of memory");
            return -1;
        }
        snprintf(zEnvV, sizeof zEnvV, "PARITY_VERSION=%s", pV->zVersion);
        snprintf(zEnvS, sizeof zEnvS, "PARITY_SUITE=%s", zSuite);
        for (k = 0; k < nEnv; k++) azEnv[k] = environ[k];
        azEnv[nEnv] = zEnvV;
        azEnv[nEnv + 1] = zEnvS;
        {
            const char *azArgv[] = { "/bin/sh", "-c", zCmd, NULL };
            code = parity_process_run(azArgv, azEnv, NULL, pCtx->zErr, sizeof pCtx->zErr);
        }
        free(zCmd);
        free(azEnv);
        if (code == 125) {
            pV->state = V_SKIP;
            return 0;
        }
        if (code != 0) {
            char zWhy[sizeof pCtx->zErr];
            snprintf(zWhy, sizeof zWhy, "%s", pCtx->zErr);
            snprintf(pCtx->zErr, sizeof pCtx->zErr, "building version %.200s failed (exit %d)%s%.600s",
                     pV->zVersion, code, zWhy[0] ? ": " : "", zWhy);
            return -1;
        }
        zDir = zSuite;
    }
    {
        const char *azArgv[] = { pCtx->zSelf, "gate", "-q", "--policy", pCtx->zPolicy,
                                 "--json", "-", zDir, NULL };
        code = parity_process_run(azArgv, NULL, &zOut, pCtx->zErr, sizeof pCtx->zErr);
    }
    if (code != 0 && code != 1) {
        char zWhy[sizeof pCtx->zErr];
        snprintf(zWhy, sizeof zWhy, "%s", pCtx->zErr);
        snprintf(pCtx->zErr, sizeof pCtx->zErr, "gating version %.200s: %.600s", pV->zVersion,
                 zWhy[0] ? zWhy : "trouble (exit 2)");
        free(zOut);
        return -1;
    }
    pDoc = zOut ? json_loads(zOut, 0, &jerr) : NULL;
    free(zOut);
    if (pDoc == NULL) {
        snprintf(pCtx->zErr, sizeof pCtx->zErr, "gating version %s gave no report", pV->zVersion);
        return -1;
    }
    pV->nAlerts = 0;
    json_array_foreach(json_object_get(pDoc, "alerts"), i, pAlert)
        if (parity_gate_labels_match(pCtx->zSlice, json_object_get(pAlert, "labels")) &&
            (!pCtx->zMetric || strcmp(pCtx->zMetric,
                                      json_string_value(json_object_get(pAlert, "metric"))) == 0))
            pV->nAlerts++;
    json_decref(pDoc);
    pV->state = pV->nAlerts ? V_BAD : V_GOOD;
    return 0;
}

static const char *state_name(version_state st)
{
    return st == V_GOOD ? "good" : st == V_BAD ? "bad" : st == V_SKIP ? "skip" : "untested";
}

static int test_version(bisect_ctx *pCtx, version *aV, size_t i, const char *zRole)
{
    if (evaluate(pCtx, &aV[i]) != 0) return -1;
    json_array_append_new(pCtx->pSteps, json_pack("{s:s,s:s,s:i,s:s}", "version", aV[i].zVersion,
                          "state", state_name(aV[i].state), "alerts", aV[i].nAlerts, "role", zRole));
    return 0;
}

/* The untested version nearest the middle of (lo, hi), or hi when none is left. */
static size_t next_probe(const version *aV, size_t lo, size_t hi)
{
    size_t mid = lo + (hi - lo) / 2, d;
    for (d = 0; d < hi - lo; d++) {
        if (mid + d < hi && mid + d > lo && aV[mid + d].state == V_UNTESTED) return mid + d;
        if (mid >= d && mid - d > lo && mid - d < hi && aV[mid - d].state == V_UNTESTED) return mid - d;
    }
    return hi;
}

static void bisect_usage(void)
{
    printf(
"Usage: paritydiff bisect --policy FILE --versions FILE [OPTIONS]\n"
"Find the first version whose suite the gate's policy fails, as git bisect run does:\n"
"the first version must be good, the last bad; each step gates the version in the\n"
"middle of what is left (no history: persistence 1).\n"
"\n"
"      --policy FILE       the gate's policy (diff/GATE.md)\n"
"      --versions FILE     one 'VERSION [SUITE]' a line, oldest first\n"
"      --cmd COMMAND       builds the suite of a version without one: /bin/sh, with\n"
"                          {version} and {suite} replaced; exit 125 skips the version\n"
"      --slice K=V,...     only alerts on slices with these labels make a version bad\n"
"      --metric M          ... and only on this metric\n"
"      --json FILE         the steps and the result as JSON\n"
"  -q, --quiet             no text report\n"
"\n"
"Exit status: 0 the first bad version is named, 2 trouble.\n");
}

int parity_bisect_main(int argc, char **argv)
{
    static const struct option aLong[] = {
        { "policy", required_argument, NULL, 'p' }, { "versions", required_argument, NULL, 'v' },
        { "cmd", required_argument, NULL, 'c' }, { "slice", required_argument, NULL, 's' },
        { "metric", required_argument, NULL, 'm' }, { "json", required_argument, NULL, 'j' },
        { "quiet", no_argument, NULL, 'q' }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    bisect_ctx ctx;
    const char *zVersions = NULL, *zJson = NULL;
    version *aV = NULL;
    size_t n = 0, lo, hi, i, nSteps = 0;
    int c, quiet = 0, code = 0;
    char zSelf[PATH_MAX];
    ssize_t nSelf;
    json_t *pDoc = NULL, *pCandidates = NULL;

    memset(&ctx, 0, sizeof ctx);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "qh", aLong, NULL)) != -1) {
        switch (c) {
        case 'p': ctx.zPolicy = optarg; break;
        case 'v': zVersions = optarg; break;
        case 'c': ctx.zCmd = optarg; break;
        case 's': ctx.zSlice = optarg; break;
        case 'm': ctx.zMetric = optarg; break;
        case 'j': zJson = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': bisect_usage(); return 0;
        default: {
            char zMsg[512];
            snprintf(zMsg, sizeof zMsg, "invalid option '%s'", argv[optind - 1]);
            return bisect_error(zMsg);
        }
        }
    }
    if (!ctx.zPolicy || !zVersions) return bisect_error("need --policy FILE and --versions FILE");
    if (optind != argc) return bisect_error("too many operands");
    nSelf = readlink("/proc/self/exe", zSelf, sizeof zSelf - 1);
    if (nSelf <= 0) return bisect_error("cannot find the paritydiff executable (/proc/self/exe)");
    zSelf[nSelf] = 0;
    ctx.zSelf = zSelf;
    if (read_versions(zVersions, &aV, &n, ctx.zErr, sizeof ctx.zErr) != 0) return bisect_error(ctx.zErr);
    for (i = 0; i < n; i++)
        if (aV[i].zSuite == NULL && ctx.zCmd == NULL) {
            snprintf(ctx.zErr, sizeof ctx.zErr, "version %s has no suite and no --cmd builds one",
                     aV[i].zVersion);
            code = bisect_error(ctx.zErr);
            goto done;
        }
    snprintf(ctx.zTmp, sizeof ctx.zTmp, "%s/parity-bisect-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(ctx.zTmp) == NULL) {
        code = bisect_error("cannot create a temporary folder for the suites");
        goto done;
    }
    ctx.pSteps = json_array();
    /* the ends: good first, bad last, as git bisect wants them marked */
    if (test_version(&ctx, aV, 0, "first") != 0 || test_version(&ctx, aV, n - 1, "last") != 0) {
        code = bisect_error(ctx.zErr);
        goto done;
    }
    if (aV[0].state != V_GOOD || aV[n - 1].state != V_BAD) {
        snprintf(ctx.zErr, sizeof ctx.zErr, "the first version must be good and the last bad; "
                 "%s is %s, %s is %s", aV[0].zVersion, state_name(aV[0].state),
                 aV[n - 1].zVersion, state_name(aV[n - 1].state));
        code = bisect_error(ctx.zErr);
        goto done;
    }
    /* invariant: aV[lo] good, aV[hi] bad, versions between untested or skipped */
    lo = 0;
    hi = n - 1;
    for (;;) {
        size_t probe = next_probe(aV, lo, hi);
        if (probe == hi) break;
        if (test_version(&ctx, aV, probe, "step") != 0) {
            code = bisect_error(ctx.zErr);
            goto done;
        }
        nSteps++;
        if (aV[probe].state == V_GOOD) lo = probe;
        else if (aV[probe].state == V_BAD) hi = probe;
    }
    pCandidates = json_array();
    for (i = lo + 1; i <= hi; i++) json_array_append_new(pCandidates, json_string(aV[i].zVersion));
    pDoc = json_pack("{s:s,s:s?,s:s?,s:o,s:O,s:I,s:O}", "schema", "parity-bisect/1",
                     "slice", ctx.zSlice, "metric", ctx.zMetric,
                     "first_bad", json_array_size(pCandidates) == 1 ? json_string(aV[hi].zVersion)
                                                                    : json_null(),
                     "candidates", pCandidates, "steps_taken", (json_int_t)nSteps,
                     "steps", ctx.pSteps);
    if (zJson && parity_report_json_write(pDoc, zJson, ctx.zErr, sizeof ctx.zErr) != 0) {
        code = bisect_error(ctx.zErr);
        goto done;
    }
    if (!quiet && !(zJson && strcmp(zJson, "-") == 0)) {
        json_t *pStep;
        json_array_foreach(ctx.pSteps, i, pStep)
            printf("%-5s %-24s %s (%d alert%s)\n", json_string_value(json_object_get(pStep, "role")),
                   json_string_value(json_object_get(pStep, "version")),
                   json_string_value(json_object_get(pStep, "state")),
                   (int)json_integer_value(json_object_get(pStep, "alerts")),
                   json_integer_value(json_object_get(pStep, "alerts")) == 1 ? "" : "s");
        if (json_array_size(pCandidates) == 1)
            printf("first bad version: %s (%zu steps between the ends)\n", aV[hi].zVersion, nSteps);
        else {
            printf("the first bad version is one of (skipped versions hide which):");
            for (i = lo + 1; i <= hi; i++) printf(" %s", aV[i].zVersion);
            printf("\n");
        }
    }
done:
    if (ctx.zTmp[0]) nftw(ctx.zTmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    for (i = 0; i < n; i++) {
        free(aV[i].zVersion);
        free(aV[i].zSuite);
    }
    free(aV);
    json_decref(pDoc);
    json_decref(pCandidates);
    json_decref(ctx.pSteps);
    return code;
}
