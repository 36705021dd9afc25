/*
 * parityfuzz_graph.c - `parityfuzz graph`: a campaign of graph cases (fused regions of
 * several registry ops, fuzz/cases/graph_cases.h) against the builtin target's fused
 * kernels, judged by the propagated bound (tolerance/graph.h).
 *
 * Exit status: 0 nothing found, 1 findings, 2 bad usage or trouble, and 2 when no case
 * was judged (every case skipped or bit-identical: a campaign that compared nothing).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/escape.h"
#include "fuzz/parityfuzz_shrink.h"
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
"Families:");
    for (i = 0; i < parity_graph_family_count(); i++)
        printf(" %s", parity_graph_family_at(i)->zName);
    printf("\nExit status: 0 nothing found, 1 findings, 2 trouble or nothing judged.\n");
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
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 }
    };
    parity_graph_campaign_options opt;
    parity_graph_campaign_result res;
    char zErr[PARITY_ERR_LEN], zBad[256], *zEnd;
    int c, rc;

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
