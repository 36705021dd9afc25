/*
 * parityfuzz.c - the command line: campaigns, replay of stored repros, the defect list.
 *
 * Exit status (diff-style): 0 no finding (replay: nothing diverges, or with
 * --expect-divergent every known divergence still there with its signature), 1 findings
 * (replay: something diverges, or a known divergence vanished or changed), 2 trouble.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuzz/search/search.h"
#include "fuzz/findings/findings.h"
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
"       parityfuzz --list-defects\n"
"Searches shape and value space for cases where a compiled target runs but diverges\n"
"from eager beyond the op's error bound; minimizes each new finding and stores it under\n"
"--out as eager.h5 + compiled.h5 (diff them with paritydiff) plus its signature.\n"
"\n"
"Campaign:\n"
"  --target T          builtin (default) or cmd:COMMAND (a worker; fuzz/FUZZ.md)\n"
"  --defect NAME       switch on a defect of the builtin compiled target (repeatable)\n"
"  --list-defects      print the defect catalogue, one per line, name first\n"
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
    fprintf(stderr, "parityfuzz: %s\nTry 'parityfuzz --help'.\n", zMsg);
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
    OPT_TARGET = 256, OPT_DEFECT, OPT_LIST_DEFECTS, OPT_OPS, OPT_DTYPES, OPT_TIME, OPT_MAX_EXECS,
    OPT_SEED, OPT_OUT, OPT_JSON, OPT_JOBS, OPT_PROGRESS, OPT_STRATEGY, OPT_STOP_FIRST,
    OPT_NO_MINIMIZE, OPT_CASE_TIMEOUT, OPT_EXPECT_DIVERGENT, OPT_VERSION
};

static const struct option aLongOpt[] = {
    { "target", required_argument, NULL, OPT_TARGET },
    { "defect", required_argument, NULL, OPT_DEFECT },
    { "list-defects", no_argument, NULL, OPT_LIST_DEFECTS },
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
    const char *zReplayDir;
    char *zOpsCopy;
    const char *azOps[MAX_OPS];
} cli_options;

/* Parses argv into pCli; returns -1 to continue, else an exit status. */
static int parse_args(int argc, char **argv, cli_options *pCli)
{
    int c;
    char zMsg[600];
    parity_campaign_options *pO = &pCli->campaign;
    double t;
    uint64_t v;

    while ((c = getopt_long(argc, argv, "h", aLongOpt, NULL)) != -1) {
        switch (c) {
        case OPT_TARGET: pO->zTarget = optarg; break;
        case OPT_DEFECT: {
            const parity_defect *pD = parity_defect_find(optarg);
            if (!pD) {
                snprintf(zMsg, sizeof zMsg, "unknown defect '%s' (see --list-defects)", optarg);
                return fail_usage(zMsg);
            }
            pO->defects |= pD->bit;
            break;
        }
        case OPT_LIST_DEFECTS: return list_defects();
        case OPT_OPS: {
            char *z, *zSave = NULL;
            free(pCli->zOpsCopy);
            pCli->zOpsCopy = strdup(optarg);
            pO->nOps = 0;
            for (z = strtok_r(pCli->zOpsCopy, ",", &zSave); z; z = strtok_r(NULL, ",", &zSave)) {
                if (pO->nOps == MAX_OPS) return fail_usage("--ops: too many ops");
                pCli->azOps[pO->nOps++] = z;
            }
            if (pO->nOps == 0) return fail_usage("--ops: empty list");
            pO->azOps = pCli->azOps;
            break;
        }
        case OPT_DTYPES: {
            char *zCopy = strdup(optarg), *z, *zSave = NULL;
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
            break;
        }
        case OPT_TIME: {
            char *zEnd;
            t = strtod(optarg, &zEnd);
            if (*zEnd || !(t > 0) || t > 1e9) return fail_usage("--time: a positive number of seconds");
            pO->timeLimit = t;
            break;
        }
        case OPT_MAX_EXECS:
            if (parse_u64(optarg, &v) != 0 || v == 0) return fail_usage("--max-execs: a positive integer");
            pO->maxExecs = v;
            break;
        case OPT_SEED:
            if (parse_u64(optarg, &v) != 0) return fail_usage("--seed: a non-negative integer");
            pO->seed = v;
            break;
        case OPT_OUT: pO->zOutDir = optarg; break;
        case OPT_JSON: pCli->zJson = optarg; break;
        case OPT_JOBS:
            if (parse_u64(optarg, &v) != 0 || v == 0 || v > 256) return fail_usage("--jobs: 1 to 256");
            pO->jobs = (int)v;
            break;
        case OPT_PROGRESS: pO->progress = 1; break;
        case OPT_STRATEGY:
            if (strcmp(optarg, "guided") == 0) pO->strategy = PARITY_STRATEGY_GUIDED;
            else if (strcmp(optarg, "baseline") == 0) pO->strategy = PARITY_STRATEGY_BASELINE;
            else return fail_usage("--strategy: guided or baseline");
            break;
        case OPT_STOP_FIRST: pO->stopAfterFirst = 1; break;
        case OPT_NO_MINIMIZE: pO->minimize = 0; break;
        case OPT_CASE_TIMEOUT: {
            char *zEnd;
            t = strtod(optarg, &zEnd);
            if (*zEnd || !(t > 0)) return fail_usage("--case-timeout: a positive number of seconds");
            pO->caseTimeout = t;
            break;
        }
        case OPT_EXPECT_DIVERGENT: pCli->expectDivergent = 1; break;
        case 'h': usage(stdout); return 0;
        case OPT_VERSION: printf("parityfuzz %s\n", PARITY_VERSION); return 0;
        default: return fail_usage("unknown option");
        }
    }
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

static int run_replay(const cli_options *pCli)
{
    const parity_campaign_options *pO = &pCli->campaign;
    char zErr[PARITY_ERR_LEN];
    char **azRepro = NULL;
    long n, i;
    int nFail = 0, nError = 0, nOtherIsa = 0;
    parity_target *pT;

    n = parity_replay_list(pCli->zReplayDir, &azRepro, zErr, sizeof zErr);
    if (n < 0) { fprintf(stderr, "parityfuzz: %s\n", zErr); return 2; }
    if (n == 0) {
        fprintf(stderr, "parityfuzz: no repro under %s (a repro folder holds eager.h5)\n",
                pCli->zReplayDir);
        return 2;
    }
    pT = parity_target_open(pO->zTarget, pO->defects, pO->caseTimeout, zErr, sizeof zErr);
    /* a repro may be a crash of an in-process JIT: replay must outlive it */
    if (pT && parity_target_spec_in_process(pO->zTarget))
        pT = parity_target_isolate(pT, 1, pO->caseTimeout, zErr, sizeof zErr);
    if (!pT) {
        parity_replay_list_free(azRepro, n);
        fprintf(stderr, "parityfuzz: %s\n", zErr);
        return 2;
    }
    for (i = 0; i < n; i++) {
        parity_replay_result r;
        parity_replay_one(pT, azRepro[i], &r);
        printf("%s: %s", azRepro[i], parity_replay_outcome_name(r.outcome));
        if (r.outcome == PARITY_REPLAY_CHANGED) printf(" (was: %s; now: %s)", r.zStored, r.zNow);
        if (r.zDetail[0]) printf(": %s", r.zDetail);
        printf("\n");
        if (r.outcome == PARITY_REPLAY_ERROR) {
            fprintf(stderr, "parityfuzz: %s: %s\n", azRepro[i], r.zDetail);
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

static int run_campaign(const cli_options *pCli)
{
    parity_campaign_result res;
    char zErr[PARITY_ERR_LEN];
    size_t i;
    int rc;
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (parity_campaign_run(&pCli->campaign, &res, zErr, sizeof zErr) != 0) {
        fprintf(stderr, "parityfuzz: %s\n", zErr);
        parity_campaign_result_free(&res);
        return 2;
    }
    for (i = 0; i < res.nFinding; i++) {
        const parity_finding *pF = &res.aFinding[i];
        printf("finding %zu: %s\n  %s\n", i + 1, pF->zSignature, pF->zDetail);
        if (pF->zRepro) printf("  repro: %s\n", pF->zRepro);
    }
    printf("parityfuzz: %llu execs in %.1f s, %zu finding%s\n", (unsigned long long)res.nExecs,
           res.elapsed, res.nFinding, res.nFinding == 1 ? "" : "s");
    rc = res.nFinding ? 1 : 0;
    if (res.trouble) {
        fprintf(stderr, "parityfuzz: %s\n", res.zTrouble);
        rc = 2;
    }
    if (pCli->zJson &&
        parity_report_fuzz_json(&pCli->campaign, &res, pCli->zJson, zErr, sizeof zErr) != 0) {
        fprintf(stderr, "parityfuzz: %s\n", zErr);
        rc = 2;
    }
    parity_campaign_result_free(&res);
    return rc;
}

int main(int argc, char **argv)
{
    cli_options cli;
    int rc;
    memset(&cli, 0, sizeof cli);
    parity_campaign_options_init(&cli.campaign);
    cli.campaign.seed = 1;
    cli.campaign.progress = isatty(2);
    rc = parse_args(argc, argv, &cli);
    if (rc < 0) rc = cli.isReplay ? run_replay(&cli) : run_campaign(&cli);
    free(cli.zOpsCopy);
    return rc;
}
