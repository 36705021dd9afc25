/*
 * parityfuzz_graph.c - `parityfuzz graph`: a campaign of graph cases (fused regions of
 * several registry ops, fuzz/cases/graph_cases.h) against the builtin target's fused
 * kernels, judged by the propagated bound (tolerance/graph.h).
 *
 * Exit status: 0 nothing found, 1 findings, 2 bad usage or trouble, and 2 when no case
 * was judged (every case skipped or bit-identical: a campaign that compared nothing).
 *
 * `parityfuzz graph replay DIR...` runs stored graph repros again (a repro folder, or a
 * folder of them): each is "fixed", "diverges" or not replayed (unreadable, or skipped by
 * the target); exit 0 when all are fixed (--expect-divergent: all diverge), 1 otherwise,
 * 2 when one was not replayed.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "formats/escape.h"
#include "fuzz/parityfuzz_shrink.h"
#include "fuzz/findings/findings.h"
#include "fuzz/search/search.h"
#include "reports/report_fuzz.h"

static int graph_fail(const char *zMsg)
{
    parity_escape_line(stderr, "parityfuzz graph", zMsg, NULL);
    return 2;
}

static void graph_usage(void)
{
    size_t i;
    printf(
"Usage: parityfuzz graph [--target T] [--time S] [--max-execs N] [--seed N] [--defect NAME]...\n"
"       parityfuzz graph replay DIR... [--target T] [--defect NAME]... [--expect-divergent]\n"
"                        [--families F,...] [--dtypes D,...] [--out DIR] [--json FILE]\n"
"                        [--no-minimize] [--stop-after-first]\n"
"Fuzzes fused regions: small graphs of registry ops (the families below) run op by op on\n"
"the eager side and as one fused kernel on the builtin compiled side, judged against the\n"
"MPFR reference propagated through the graph (fuzz/FUZZ.md, \"Graph cases\").\n"
"\n"
"  --target T          builtin (default: fused kernels, --defect) or cmd:COMMAND, a worker\n"
"                      that answers graphs= in its handshake (FORMAT.md); it runs the\n"
"                      compiled side, the builtin eager kernels the eager side\n"
"  --case-timeout S    a worker's seconds per case (default 30)\n"
"  --time S            seconds to run (default 60; 0 with --max-execs: no time limit)\n"
"  --max-execs N       cases to run at most\n"
"  --defect NAME       switch a fusion defect on (repeatable; --defect list names them)\n"
"  --families F,...    families to draw from (default: all)\n"
"  --dtypes D,...      float32, bfloat16, float16, float64 (default: all)\n"
"  --out DIR           store each root cause's minimized repro under DIR\n"
"  --json FILE         the summary as JSON (- for stdout)\n"
"  --list-families     each family and its ops, one per line\n"
"Families:");
    for (i = 0; i < parity_graph_family_count(); i++)
        printf(" %s", parity_graph_family_at(i)->zName);
    printf("\nExit status: 0 nothing found, 1 findings, 2 trouble or nothing judged.\n");
}

/* One line per family: its name and its ops with every optional op in ("gemm_epilogue
 * linear+gelu"), for scripts (campaigns.py --by graph). */
static int list_families(void)
{
    size_t i;
    for (i = 0; i < parity_graph_family_count(); i++) {
        parity_graph_spec s;
        parity_graph_case g;
        char zErr[256], zOps[160];
        int d;
        memset(&s, 0, sizeof s);
        s.family = (uint8_t)i;
        s.dtype = PARITY_DT_F32;
        for (d = 0; d < PARITY_GRAPH_CASE_MAX_DIMS; d++) s.aDim[d] = 2;
        if (parity_graph_case_layout(&s, &g, zErr, sizeof zErr) != 0) return graph_fail(zErr);
        printf("%s %s\n", parity_graph_family_at(i)->zName,
               parity_graph_case_ops(&g, zOps, sizeof zOps));
    }
    return 0;
}

static int list_graph_defects(void)
{
    size_t i;
    for (i = 0; i < parity_graph_defect_count; i++) {
        const parity_defect *p = &parity_graph_defects[i];
        printf("%s\tfamilies: %s; trigger: %s; models %s\n", p->zName, p->zOps, p->zTrigger,
               p->zCitation);
    }
    return 0;
}

/* Comma-separated names into a bit mask through xFind (index or -1). */
static int parse_list(const char *zList, int (*xFind)(const char *), uint32_t *pMask,
                      char *zBad, size_t nBad)
{
    char zBuf[512], *z, *zSave = NULL;
    snprintf(zBuf, sizeof zBuf, "%s", zList);
    for (z = strtok_r(zBuf, ",", &zSave); z; z = strtok_r(NULL, ",", &zSave)) {
        int i = xFind(z);
        if (i < 0) {
            snprintf(zBad, nBad, "%s", z);
            return -1;
        }
        *pMask |= 1u << i;
    }
    return 0;
}

static int family_index(const char *z)
{
    size_t i;
    for (i = 0; i < parity_graph_family_count(); i++)
        if (strcmp(parity_graph_family_at(i)->zName, z) == 0) return (int)i;
    return -1;
}

static int dtype_index(const char *z)
{
    parity_dtype dt = parity_dtype_from_name(z);
    return dt == PARITY_DT_INVALID || !parity_dtype_is_float(dt) ? -1 : (int)dt;
}

/* ---- parityfuzz graph replay ------------------------------------------------------- */

/* 1 when zDir holds a repro (an eager.h5). */
static int is_repro(const char *zDir)
{
    char zFile[4400];
    struct stat st;
    snprintf(zFile, sizeof zFile, "%s/eager.h5", zDir);
    return stat(zFile, &st) == 0 && S_ISREG(st.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays one repro; counts its outcome. Returns 0, or -1 after an error line. */
static void replay_one(parity_target *pT, const char *zRepro, int *pnFixed, int *pnStill,
                       int *pnTrouble)
{
    parity_graph_oracle_result r;
    char zErr[PARITY_ERR_LEN];
    if (parity_graph_replay(pT, zRepro, &r, zErr, sizeof zErr) != 0) {
        printf("error %s: %s\n", zRepro, zErr);
        fflush(stdout);
        graph_fail(zErr);   /* and the one line on stderr, as every refusal has */
        (*pnTrouble)++;
    } else if (r.cls == PARITY_FINDING_SKIPPED) {
        printf("not run %s: %s\n", zRepro, r.zDetail);
        (*pnTrouble)++;
    } else if (r.cls == PARITY_FINDING_NONE) {
        printf("fixed %s\n", zRepro);
        (*pnFixed)++;
    } else {
        printf("diverges %s: %s: %s\n", zRepro, parity_finding_class_name(r.cls), r.zDetail);
        (*pnStill)++;
    }
}

static int graph_replay_main(int argc, char **argv)
{
    static const struct option aOpt[] = {
        { "target", required_argument, NULL, 'T' }, { "defect", required_argument, NULL, 'd' },
        { "expect-divergent", no_argument, NULL, 'x' },
        { "case-timeout", required_argument, NULL, 'C' }, { NULL, 0, NULL, 0 }
    };
    const char *zTarget = "builtin";
    uint32_t defects = 0;
    double caseTimeout = 30.0;
    int c, a, expect = 0, nFixed = 0, nStill = 0, nTrouble = 0;
    parity_target *pT;
    char zErr[PARITY_ERR_LEN], *zEnd;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", aOpt, NULL)) != -1) {
        switch (c) {
        case 'T': zTarget = optarg; break;
        case 'x': expect = 1; break;
        case 'C':
            errno = 0;
            caseTimeout = strtod(optarg, &zEnd);
            if (errno || *zEnd || !(caseTimeout > 0)) return graph_fail("--case-timeout needs seconds > 0");
            break;
        case 'd': {
            const parity_defect *p = parity_graph_defect_find(optarg);
            if (!p) {
                snprintf(zErr, sizeof zErr, "unknown fusion defect '%s'", optarg);
                return graph_fail(zErr);
            }
            defects |= p->bit;
            break;
        }
        default:
            snprintf(zErr, sizeof zErr, "unknown option '%s'", argv[optind - 1]);
            return graph_fail(zErr);
        }
    }
    if (optind >= argc) return graph_fail("replay needs a repro folder (or a folder of them)");
    if (!(pT = parity_target_open(zTarget, defects, caseTimeout, zErr, sizeof zErr)))
        return graph_fail(zErr);
    for (a = optind; a < argc; a++) {
        DIR *pDir;
        struct dirent *pE;
        char **az = NULL;
        size_t n = 0, i;
        if (is_repro(argv[a])) {
            replay_one(pT, argv[a], &nFixed, &nStill, &nTrouble);
            continue;
        }
        if (!(pDir = opendir(argv[a]))) {
            printf("error %s: not a repro folder nor a folder of them\n", argv[a]);
            nTrouble++;
            continue;
        }
        while ((pE = readdir(pDir)) != NULL) {   /* every repro below, in name order */
            char zSub[4200], **azNew;
            if (pE->d_name[0] == '.') continue;
            snprintf(zSub, sizeof zSub, "%s/%s", argv[a], pE->d_name);
            if (!is_repro(zSub) || !(azNew = realloc(az, (n + 1) * sizeof *az))) continue;
            az = azNew;
            az[n++] = strdup(zSub);
        }
        closedir(pDir);
        if (n == 0) {
            printf("error %s: no repro in it\n", argv[a]);
            nTrouble++;
        }
        qsort(az, n, sizeof *az, cmp_str);
        for (i = 0; i < n; i++) {
            if (az[i]) replay_one(pT, az[i], &nFixed, &nStill, &nTrouble);
            free(az[i]);
        }
        free(az);
    }
    parity_target_close(pT);
    printf("parityfuzz graph replay: %d fixed, %d still diverge, %d not replayed\n", nFixed,
           nStill, nTrouble);
    if (nTrouble > 0) return 2;
    return expect ? (nFixed == 0 ? 0 : 1) : (nStill == 0 ? 0 : 1);
}

int parity_graph_main(int argc, char **argv)
{
    static const struct option aOpt[] = {
        { "time", required_argument, NULL, 't' }, { "max-execs", required_argument, NULL, 'n' },
        { "seed", required_argument, NULL, 's' }, { "defect", required_argument, NULL, 'd' },
        { "families", required_argument, NULL, 'f' }, { "dtypes", required_argument, NULL, 'D' },
        { "out", required_argument, NULL, 'o' }, { "json", required_argument, NULL, 'j' },
        { "no-minimize", no_argument, NULL, 'M' }, { "stop-after-first", no_argument, NULL, '1' },
        { "target", required_argument, NULL, 'T' },
        { "case-timeout", required_argument, NULL, 'C' },
        { "list-families", no_argument, NULL, 'L' },
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 }
    };
    parity_graph_campaign_options opt;
    parity_graph_campaign_result res;
    char zErr[PARITY_ERR_LEN], zBad[256], *zEnd;
    int c, rc;

    if (argc > 1 && strcmp(argv[1], "replay") == 0) return graph_replay_main(argc - 1, argv + 1);
    memset(&opt, 0, sizeof opt);
    opt.seconds = 60.0;
    opt.seed = 1;
    opt.minimize = 1;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", aOpt, NULL)) != -1) {
        errno = 0;
        switch (c) {
        case 't':
            opt.seconds = strtod(optarg, &zEnd);
            if (errno || *zEnd || !(opt.seconds >= 0)) return graph_fail("--time needs seconds >= 0");
            break;
        case 'n':
            opt.maxExecs = strtoull(optarg, &zEnd, 10);
            if (errno || *zEnd || optarg[0] == '-') return graph_fail("--max-execs needs a count");
            break;
        case 's':
            opt.seed = strtoull(optarg, &zEnd, 10);
            if (errno || *zEnd || optarg[0] == '-') return graph_fail("--seed needs a number");
            break;
        case 'd': {
            const parity_defect *p;
            if (strcmp(optarg, "list") == 0) return list_graph_defects();
            if (!(p = parity_graph_defect_find(optarg))) {
                snprintf(zErr, sizeof zErr, "unknown fusion defect '%s' (--defect list names "
                         "them)", optarg);
                return graph_fail(zErr);
            }
            opt.defects |= p->bit;
            break;
        }
        case 'f':
            if (parse_list(optarg, family_index, &opt.families, zBad, sizeof zBad) != 0) {
                snprintf(zErr, sizeof zErr, "unknown graph family '%s'", zBad);
                return graph_fail(zErr);
            }
            break;
        case 'D':
            if (parse_list(optarg, dtype_index, &opt.dtypes, zBad, sizeof zBad) != 0) {
                snprintf(zErr, sizeof zErr, "'%s' is not a float dtype", zBad);
                return graph_fail(zErr);
            }
            break;
        case 'T': opt.zTarget = optarg; break;
        case 'C':
            opt.caseTimeout = strtod(optarg, &zEnd);
            if (errno || *zEnd || !(opt.caseTimeout > 0))
                return graph_fail("--case-timeout needs seconds > 0");
            break;
        case 'o': opt.zOut = optarg; break;
        case 'j': opt.zJson = optarg; break;
        case 'M': opt.minimize = 0; break;
        case '1': opt.stopAfterFirst = 1; break;
        case 'h': graph_usage(); return 0;
        case 'L': return list_families();
        default:
            snprintf(zErr, sizeof zErr, "unknown option '%s' (--help lists them)",
                     argv[optind - 1]);
            return graph_fail(zErr);
        }
    }
    if (optind < argc) {
        snprintf(zErr, sizeof zErr, "unexpected argument '%s'", argv[optind]);
        return graph_fail(zErr);
    }
    if (opt.seconds == 0 && opt.maxExecs == 0)
        return graph_fail("--time 0 needs --max-execs: the campaign would never end");
    if (parity_graph_campaign_run(&opt, &res, zErr, sizeof zErr) != 0) {
        parity_graph_campaign_result_free(&res);
        return graph_fail(zErr);
    }
    rc = res.nCause > 0 ? 1 : 0;
    if (parity_report_graph_fuzz_text(stdout, &res) != 0) rc = 2;
    if (opt.zJson && parity_report_graph_fuzz_json(&res, opt.zJson, zErr, sizeof zErr) != 0)
        rc = graph_fail(zErr);
    if (res.nJudged == 0 && rc != 2) {
        graph_fail("no case was judged (every one skipped, failed or bit-identical to eager): "
                   "the campaign compared nothing");
        rc = 2;
    }
    parity_graph_campaign_result_free(&res);
    return rc;
}
