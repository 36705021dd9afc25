/*
 * parityfuzz.c - the command line: campaigns, replay of stored repros, the defect list;
 * `shrink` is parityfuzz_shrink.c.
 *
 * Exit status (diff-style): 0 no finding (replay: nothing diverges, or with
 * --expect-divergent every known divergence still there with its signature), 1 findings
 * (replay: something diverges, or a known divergence vanished or changed), 2 trouble.
 *
 * Paths, signatures and details read from repros (files from anywhere) and what targets
 * say reach the terminal escaped (formats/escape.h), so a newline or an escape sequence in
 * one can neither forge an output line nor drive the terminal.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuzz/search/search.h"
#include "formats/escape.h"
#include "fuzz/findings/findings.h"
#include "fuzz/parityfuzz_shrink.h"
#include "reports/report_fuzz.h"

#ifndef PARITY_VERSION
#define PARITY_VERSION "dev"
#endif

#define MAX_OPS 64

static void usage(FILE *f)
{
    fprintf(f,
"Usage: parityfuzz [OPTION]...                      run a campaign\n"
"       parityfuzz replay DIR [OPTION]...           re-run stored repros\n"
"       parityfuzz shrink EAGER COMPILED --tensor T --out DIR\n"
"                                                   minimize a captured op's failure\n"
"                                                   (parityfuzz shrink --help)\n"
"       parityfuzz triage DIR... [--json FILE]      stored repros by root cause\n"
"       parityfuzz --list-defects\n"
"       parityfuzz --list-ops [--target T]\n"
"Searches shape and value space for cases where a compiled target runs but diverges\n"
"from eager beyond the op's error bound; minimizes each new finding and stores it under\n"
"--out as eager.h5 + compiled.h5 (diff them with paritydiff) plus its signature.\n"
"\n"
"Campaign:\n"
"  --target T          builtin (default), onednn[:ISA] (the oneDNN library) or\n"
"                      cmd:COMMAND (a worker; fuzz/FUZZ.md)\n"
"  --defect NAME       switch on a defect of the builtin compiled target (repeatable)\n"
"  --list-defects      print the defect catalogue, one per line, name first\n"
"  --list-ops          print the ops the target (--target) runs, one per line, with the\n"
"                      dtypes it runs them in and the op's family:\n"
"                      \"relu float32,bfloat16 unary\"\n"
"  --ops LIST          comma-separated registry ops (default: every op the target runs)\n"
"  --time SECONDS      stop after this long (default: until --max-execs or Ctrl-C)\n"
"  --max-execs N       stop after N cases; the same --seed, --jobs and N give the same\n"
"                      findings (--time does not: it depends on the machine)\n"
"  --seed N            seed of every draw (default 1)\n"
"  --out DIR           store repros here (created if absent)\n"
"  --json FILE         write a summary (execs, elapsed_s, findings, ...) to FILE, - for stdout\n"
"  --jobs N            N processes, each with its own seed derived from --seed and its\n"
"                      share of --max-execs; deterministic for a given N\n"
"  --progress          status line every second on stderr even when it is not a terminal\n"
"  --strategy S        guided (default) or baseline (dims uniform in [1, 4096], values\n"
"                      N(0, 1): the benchmark's yardstick)\n"
"  --stop-after-first  stop at the first stored finding\n"
"  --values-per-shape N  draw N cases per shape, the later N - 1 with new values only:\n"
"                      a target that compiles per shape (jax, torch.compile) reuses\n"
"                      what it compiled (default 1)\n"
"  --no-minimize       store findings as found\n"
"  --case-timeout S    a cmd: worker request, or an isolated run of an in-process\n"
"                      target's compiled side, longer than S seconds is a hang (default 30)\n"
"\n"
"Replay:\n"
"  --target T, --defect NAME   the target to replay against (default builtin, no defect)\n"
"  --expect-divergent  exit 1 when a stored divergence disappears or changes signature\n"
"                      (a gate on known divergences); default: exit 1 when any diverges\n"
"\n"
"  -h, --help          this help      --version   the version\n"
"Exit status: 0 no finding, 1 findings, 2 trouble.\n");
}

static int fail_usage(const char *zMsg)
{
    char zEscaped[1024];   /* the message quotes the user's argument */
    fprintf(stderr, "parityfuzz: %s\nTry 'parityfuzz --help'.\n",
            parity_escape(zMsg, zEscaped, sizeof zEscaped));
    return 2;
}

static void on_sigint(int sig)
{
    (void)sig;
    parity_campaign_interrupted = 1;
}

static int parse_u64(const char *z, uint64_t *pV)
{
    char *zEnd;
    unsigned long long v;
    if (!z || !*z || *z == '-') return -1;
    errno = 0;
    v = strtoull(z, &zEnd, 10);
    if (errno || *zEnd) return -1;
    *pV = v;
    return 0;
}

static int list_defects(void)
{
    size_t i;
    for (i = 0; i < parity_defect_count; i++) {
        const parity_defect *p = &parity_defects[i];
        printf("%s\tops: %s; trigger: %s; models %s\n", p->zName, p->zOps, p->zTrigger,
               p->zCitation);
    }
    return 0;
}

enum {
    OPT_TARGET = 256, OPT_DEFECT, OPT_LIST_DEFECTS, OPT_LIST_OPS, OPT_OPS, OPT_DTYPES, OPT_TIME, OPT_MAX_EXECS,
    OPT_SEED, OPT_OUT, OPT_JSON, OPT_JOBS, OPT_PROGRESS, OPT_STRATEGY, OPT_STOP_FIRST, OPT_VALUES_PER_SHAPE,
    OPT_NO_MINIMIZE, OPT_CASE_TIMEOUT, OPT_EXPECT_DIVERGENT, OPT_VERSION
};

static const struct option aLongOpt[] = {
    { "target", required_argument, NULL, OPT_TARGET },
    { "defect", required_argument, NULL, OPT_DEFECT },
    { "list-defects", no_argument, NULL, OPT_LIST_DEFECTS },
    { "list-ops", no_argument, NULL, OPT_LIST_OPS },
    { "ops", required_argument, NULL, OPT_OPS },
    { "dtypes", required_argument, NULL, OPT_DTYPES },
    { "time", required_argument, NULL, OPT_TIME },
    { "max-execs", required_argument, NULL, OPT_MAX_EXECS },
    { "seed", required_argument, NULL, OPT_SEED },
    { "out", required_argument, NULL, OPT_OUT },
    { "json", required_argument, NULL, OPT_JSON },
    { "jobs", required_argument, NULL, OPT_JOBS },
    { "progress", no_argument, NULL, OPT_PROGRESS },
    { "strategy", required_argument, NULL, OPT_STRATEGY },
    { "stop-after-first", no_argument, NULL, OPT_STOP_FIRST },
    { "values-per-shape", required_argument, NULL, OPT_VALUES_PER_SHAPE },
    { "no-minimize", no_argument, NULL, OPT_NO_MINIMIZE },
    { "case-timeout", required_argument, NULL, OPT_CASE_TIMEOUT },
    { "expect-divergent", no_argument, NULL, OPT_EXPECT_DIVERGENT },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, OPT_VERSION },
    { NULL, 0, NULL, 0 }
};

typedef struct {
    parity_campaign_options campaign;
    const char *zJson;
    int expectDivergent;
    int isReplay;
    int listOps;
    int progress;                 /* the status line on stderr */
    const char *zReplayDir;
    char *zOpsCopy;
    const char *azOps[MAX_OPS];
} cli_options;

/* --ops LIST into pCli; -1 to continue, else an exit status. */
static int parse_ops(const char *zList, cli_options *pCli)
{
    parity_campaign_options *pO = &pCli->campaign;
    char *z, *zSave = NULL;
    free(pCli->zOpsCopy);
    pCli->zOpsCopy = strdup(zList);
    if (!pCli->zOpsCopy) return fail_usage("out of memory");
    pO->nOps = 0;
    for (z = strtok_r(pCli->zOpsCopy, ",", &zSave); z; z = strtok_r(NULL, ",", &zSave)) {
        if (pO->nOps == MAX_OPS) return fail_usage("--ops: too many ops");
        pCli->azOps[pO->nOps++] = z;
    }
    if (pO->nOps == 0) return fail_usage("--ops: empty list");
    pO->azOps = pCli->azOps;
    return -1;
}

/* --dtypes LIST into pO; -1 to continue, else an exit status. */
static int parse_dtypes(const char *zList, parity_campaign_options *pO)
{
    char zMsg[600];
    char *zCopy = strdup(zList), *z, *zSave = NULL;
    if (!zCopy) return fail_usage("out of memory");
    pO->dtypes = 0;
    for (z = strtok_r(zCopy, ",", &zSave); z; z = strtok_r(NULL, ",", &zSave)) {
        parity_dtype dt = parity_dtype_from_name(z);
        if (!parity_spec_dtype_drawable(dt)) {
            snprintf(zMsg, sizeof zMsg, "--dtypes: '%s' is not one of float32, "
                     "bfloat16, float16, float64", z);
            free(zCopy);
            return fail_usage(zMsg);
        }
        pO->dtypes |= 1u << dt;
    }
    free(zCopy);
    if (pO->dtypes == 0) return fail_usage("--dtypes: empty list");
    return -1;
}

/* A number of seconds in (0, max]; -1 when it is not one. */
static int parse_seconds(const char *z, double max, double *pT)
{
    char *zEnd;
    double t = strtod(z, &zEnd);
    if (*zEnd || !(t > 0) || t > max) return -1;
    *pT = t;
    return 0;
}

/* One option into pCli; -1 to continue, else an exit status. */
static int parse_option(int c, const char *zArg, cli_options *pCli)
{
    parity_campaign_options *pO = &pCli->campaign;
    char zMsg[600];
    uint64_t v;
    switch (c) {
    case OPT_TARGET: pO->zTarget = zArg; break;
    case OPT_DEFECT: {
        const parity_defect *pD = parity_defect_find(zArg);
        if (!pD) {
            snprintf(zMsg, sizeof zMsg, "unknown defect '%s' (see --list-defects)", zArg);
            return fail_usage(zMsg);
        }
        pO->defects |= pD->bit;
        break;
    }
    case OPT_LIST_DEFECTS: return list_defects();
    case OPT_LIST_OPS: pCli->listOps = 1; break;
    case OPT_OPS: return parse_ops(zArg, pCli);
    case OPT_DTYPES: return parse_dtypes(zArg, pO);
    case OPT_TIME:
        if (parse_seconds(zArg, 1e9, &pO->timeLimit) != 0)
            return fail_usage("--time: a positive number of seconds");
        break;
    case OPT_MAX_EXECS:
        if (parse_u64(zArg, &v) != 0 || v == 0) return fail_usage("--max-execs: a positive integer");
        pO->maxExecs = v;
        break;
    case OPT_SEED:
        if (parse_u64(zArg, &v) != 0) return fail_usage("--seed: a non-negative integer");
        pO->seed = v;
        break;
    case OPT_OUT: pO->zOutDir = zArg; break;
    case OPT_JSON: pCli->zJson = zArg; break;
    case OPT_JOBS:
        if (parse_u64(zArg, &v) != 0 || v == 0 || v > 256) return fail_usage("--jobs: 1 to 256");
        pO->jobs = (int)v;
        break;
    case OPT_PROGRESS: pCli->progress = 1; break;
    case OPT_STRATEGY:
        if (strcmp(zArg, "guided") == 0) pO->strategy = PARITY_STRATEGY_GUIDED;
        else if (strcmp(zArg, "baseline") == 0) pO->strategy = PARITY_STRATEGY_BASELINE;
        else return fail_usage("--strategy: guided or baseline");
        break;
    case OPT_STOP_FIRST: pO->stopAfterFirst = 1; break;
    case OPT_VALUES_PER_SHAPE: {
        uint64_t n;
        if (parse_u64(zArg, &n) != 0 || n < 1 || n > 1000000)
            return fail_usage("--values-per-shape wants an integer from 1 to 1000000");
        pO->valuesPerShape = (unsigned)n;
        break;
    }
    case OPT_NO_MINIMIZE: pO->minimize = 0; break;
    case OPT_CASE_TIMEOUT:
        if (parse_seconds(zArg, HUGE_VAL, &pO->caseTimeout) != 0)
            return fail_usage("--case-timeout: a positive number of seconds");
        break;
    case OPT_EXPECT_DIVERGENT: pCli->expectDivergent = 1; break;
    case 'h': usage(stdout); return 0;
    case OPT_VERSION: printf("parityfuzz %s\n", PARITY_VERSION); return 0;
    default: return fail_usage("unknown option");
    }
    return -1;
}

/* Parses argv into pCli; returns -1 to continue, else an exit status. */
static int parse_args(int argc, char **argv, cli_options *pCli)
{
    char zMsg[600];
    int c, rc;

    while ((c = getopt_long(argc, argv, "h", aLongOpt, NULL)) != -1)
        if ((rc = parse_option(c, optarg, pCli)) >= 0) return rc;
    if (optind < argc && strcmp(argv[optind], "replay") == 0) {
        pCli->isReplay = 1;
        if (optind + 1 >= argc) return fail_usage("replay needs a folder");
        pCli->zReplayDir = argv[optind + 1];
        if (optind + 2 < argc) return fail_usage("replay takes one folder (options come first or after it)");
        return -1;
    }
    if (optind < argc) {
        snprintf(zMsg, sizeof zMsg, "unexpected argument '%s'", argv[optind]);
        return fail_usage(zMsg);
    }
    if (pCli->expectDivergent) return fail_usage("--expect-divergent belongs to replay");
    return -1;
}

/* ---- what the library has to say ----------------------------------------------------- */

static void on_message(void *pCtx, const char *zLine)
{
    (void)pCtx;
    parity_escape_line(stderr, "parityfuzz", zLine, NULL);
}

/* The status line: rewritten in place on a terminal, one line each otherwise. */
static void on_status(void *pCtx, const parity_campaign_result *pRes, double elapsed, int final)
{
    char zLine[2048];
    size_t len, i;
    (void)pCtx;
    len = (size_t)snprintf(zLine, sizeof zLine,
                           "parityfuzz: %.0f s  execs %llu (%.0f/s)  findings %llu (%zu unique)",
                           elapsed, (unsigned long long)pRes->nExecs,
                           elapsed > 0 ? (double)pRes->nExecs / elapsed : 0.0,
                           (unsigned long long)pRes->nRawFindings, pRes->nFinding);
    for (i = 0; i < pRes->nOp && len < sizeof zLine - 64; i++)
        len += (size_t)snprintf(zLine + len, sizeof zLine - len, "%s %s %llu",
                                i ? "," : " |", pRes->azOp[i],
                                (unsigned long long)pRes->anOpExecs[i]);
    if (isatty(2)) fprintf(stderr, "\r%s\033[K%s", zLine, final ? "\n" : "");
    else fprintf(stderr, "%s\n", zLine);
    fflush(stderr);
}

/* Opens the target of the options (an in-process one isolated when asked) and says its
 * notice; NULL after saying why. */
static parity_target *open_target(const parity_campaign_options *pO, int isolate)
{
    char zErr[PARITY_ERR_LEN];
    parity_target *pT = parity_target_open(pO->zTarget, pO->defects, pO->caseTimeout, zErr,
                                           sizeof zErr);
    if (pT && pT->zNotice) on_message(NULL, pT->zNotice);
    if (pT && isolate && parity_target_spec_in_process(pO->zTarget))
        pT = parity_target_isolate(pT, 1, pO->caseTimeout, zErr, sizeof zErr);
    if (!pT) parity_escape_line(stderr, "parityfuzz", zErr, NULL);
    return pT;
}


/* Where the target's time went: each side's seconds and, where the target says, the
 * compiled side's compile seconds (a compiler's cost per case is mostly compilation). */
static void print_times(const parity_target_times *pT)
{
    if (pT->nRuns[0] + pT->nRuns[1] == 0) return;
    printf("parityfuzz: time in the target: eager %.1f s, compiled %.1f s", pT->runSeconds[0],
           pT->runSeconds[1]);
    if (pT->nCompiles[1] > 0)
        printf(" (compiling %.1f s in %llu runs, %.0f%% of the compiled side)",
               pT->compileSeconds[1], (unsigned long long)pT->nCompiles[1],
               pT->runSeconds[1] > 0 ? 100.0 * pT->compileSeconds[1] / pT->runSeconds[1] : 0.0);
    fputc('\n', stdout);
}
/* --list-ops: every op of the registry (with a layout) the target runs, its dtypes and its
 * family ("relu float32,bfloat16 unary"): campaigns are planned per family and dtype. */
static int list_ops(const cli_options *pCli)
{
    parity_target *pT = open_target(&pCli->campaign, 0);
    const parity_layout_info *aInfo;
    size_t n, i;
    int dt;
    if (!pT) return 2;
    aInfo = parity_layout_all(&n);
    for (i = 0; i < n; i++) {
        const char *zSep = " ";
        if (!pT->xSupports(pT, aInfo[i].zOp)) continue;
        printf("%s", aInfo[i].zOp);
        for (dt = 0; dt < PARITY_DT_COUNT; dt++) {
            if (!parity_spec_dtype_drawable((parity_dtype)dt) ||
                !parity_target_runs_dtype(pT, (parity_dtype)dt))
                continue;
            printf("%s%s", zSep, parity_dtype_name((parity_dtype)dt));
            zSep = ",";
        }
        printf(" %s\n", parity_op_family_name(aInfo[i].pDef->family));
    }
    parity_target_close(pT);
    return fflush(stdout) == 0 ? 0 : 2;
}

static int run_replay(const cli_options *pCli)
{
    const parity_campaign_options *pO = &pCli->campaign;
    char zErr[PARITY_ERR_LEN];
    char **azRepro = NULL;
    long n, i;
    int nFail = 0, nError = 0, nOtherIsa = 0;
    parity_target *pT;

    n = parity_replay_list(pCli->zReplayDir, &azRepro, zErr, sizeof zErr);
    if (n < 0) {
        parity_escape_line(stderr, "parityfuzz", zErr, NULL);
        return 2;
    }
    if (n == 0) {
        char zDir[1024];
        fprintf(stderr, "parityfuzz: no repro under %s (a repro folder holds eager.h5)\n",
                parity_escape(pCli->zReplayDir, zDir, sizeof zDir));
        return 2;
    }
    /* a repro may be a crash of an in-process JIT: replay must outlive it */
    pT = open_target(pO, 1);
    if (!pT) {
        parity_replay_list_free(azRepro, n);
        return 2;
    }
    for (i = 0; i < n; i++) {
        parity_replay_result r;
        parity_replay_one(pT, azRepro[i], &r);
        parity_escape_fputs(azRepro[i], stdout);
        printf(": %s", parity_replay_outcome_name(r.outcome));
        if (r.outcome == PARITY_REPLAY_CHANGED) {
            fputs(" (was: ", stdout);
            parity_escape_fputs(r.zStored, stdout);
            fputs("; now: ", stdout);
            parity_escape_fputs(r.zNow, stdout);
            fputc(')', stdout);
        }
        if (r.zDetail[0]) {
            fputs(": ", stdout);
            parity_escape_fputs(r.zDetail, stdout);
        }
        printf("\n");
        if (r.outcome == PARITY_REPLAY_ERROR) {
            parity_escape_line(stderr, "parityfuzz", azRepro[i], r.zDetail, NULL);
            nError++;
        } else if (r.outcome == PARITY_REPLAY_OTHER_ISA) {
            nOtherIsa++;
        } else if (pCli->expectDivergent ? r.outcome != PARITY_REPLAY_SAME
                                         : r.outcome != PARITY_REPLAY_FIXED) {
            nFail++;
        }
    }
    parity_target_close(pT);
    parity_replay_list_free(azRepro, n);
    if (nOtherIsa)
        fprintf(stderr, "parityfuzz: %d of %ld repros not replayed: recorded on another ISA\n",
                nOtherIsa, n);
    if (nError) return 2;
    return nFail ? 1 : 0;
}

static int run_campaign(cli_options *pCli)
{
    parity_campaign_result res;
    char zErr[PARITY_ERR_LEN];
    size_t i;
    int rc;
    struct sigaction sa;

    pCli->campaign.xMessage = on_message;
    pCli->campaign.xStatus = pCli->progress ? on_status : NULL;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (parity_campaign_run(&pCli->campaign, &res, zErr, sizeof zErr) != 0) {
        parity_escape_line(stderr, "parityfuzz", zErr, NULL);
        parity_campaign_result_free(&res);
        return 2;
    }
    /* what a compiler engineer fixes first; the signatures after */
    parity_report_root_causes_text(stdout, res.aFinding, res.aCause, res.nCause);
    for (i = 0; i < res.nFinding; i++) {
        const parity_finding *pF = &res.aFinding[i];
        printf("finding %zu: ", i + 1);
        parity_escape_fputs(pF->zSignature, stdout);
        fputs("\n  ", stdout);
        parity_escape_fputs(pF->zDetail, stdout);
        fputc('\n', stdout);
        if (pF->zRepro) {
            fputs("  repro: ", stdout);
            parity_escape_fputs(pF->zRepro, stdout);
            fputc('\n', stdout);
        }
    }
    print_times(&res.times);
    if (res.nEagerWrong > 0)
        printf("parityfuzz: the reference proves eager wrong in %llu of the judged cases: a "
               "kernel both sides share, or a contract the registry does not model, which "
               "the differential cannot call a finding (eager_beyond_bound; the first: %s)\n",
               (unsigned long long)res.nEagerWrong, res.zEagerWrong);
    /* last: a campaign that judged nothing found nothing by construction: the counts say so */
    printf("parityfuzz: %llu execs in %.1f s (%llu judged, %llu skipped, %llu bit-identical), "
           "%zu finding%s, %zu root cause%s\n", (unsigned long long)res.nExecs, res.elapsed,
           (unsigned long long)res.nJudged, (unsigned long long)res.nSkipped,
           (unsigned long long)res.nBitIdentical, res.nFinding, res.nFinding == 1 ? "" : "s",
           res.nCause, res.nCause == 1 ? "" : "s");
    rc = res.nFinding ? 1 : 0;
    if (res.trouble) {
        parity_escape_line(stderr, "parityfuzz", res.zTrouble, NULL);
        rc = 2;
    }
    if (pCli->zJson &&
        parity_report_fuzz_json(&res, pCli->zJson, zErr, sizeof zErr) != 0) {
        parity_escape_line(stderr, "parityfuzz", zErr, NULL);
        rc = 2;
    }
    parity_campaign_result_free(&res);
    return rc;
}

int main(int argc, char **argv)
{
    cli_options cli;
    int rc;
    parity_hdf5_no_exit_handler();   /* first: a full --out must not crash at exit */
    if (argc > 1 && strcmp(argv[1], "shrink") == 0) return parity_shrink_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "triage") == 0) return parity_triage_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "graph") == 0) return parity_graph_main(argc - 1, argv + 1);
    memset(&cli, 0, sizeof cli);
    parity_campaign_options_init(&cli.campaign);
    cli.campaign.seed = 1;
    cli.progress = isatty(2);
    rc = parse_args(argc, argv, &cli);
    if (rc < 0 && cli.listOps) rc = list_ops(&cli);
    if (rc < 0) rc = cli.isReplay ? run_replay(&cli) : run_campaign(&cli);
    free(cli.zOpsCopy);
    return rc;
}
