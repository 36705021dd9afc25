/*
 * parityfuzz_shrink.c - `parityfuzz shrink`: one op of a capture pair, shrunk against a
 * replay of its stored tensors and stored as a repro folder paritydiff fails. What
 * `paritydiff investigate --repro` runs for a local cause (diff/INVESTIGATE.md).
 *
 * Exit status (diff-style): 1 the op diverges and its repro was written, 0 the op does not
 * diverge on replay (nothing to shrink, nothing written), 2 trouble.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/escape.h"
#include "formats/process.h"
#include "fuzz/findings/findings.h"
#include "fuzz/parityfuzz_shrink.h"
#include "reports/report_fuzz.h"

/* Replays per shrink: a window search costs about 2 log2(n) per crop axis, so 400 covers
 * four axes of a million indices each, and a replay of a small crop takes microseconds. */
#define SHRINK_BUDGET 400

static void shrink_usage(void)
{
    printf(
"Usage: parityfuzz shrink EAGER.h5 COMPILED.h5 --tensor NAME --out DIR [OPTION]...\n"
"Replays op output NAME of a capture pair (its inputs as the compiled capture stored them,\n"
"both outputs as stored), judges it with the registry, and shrinks it to the smallest\n"
"window of the dims that can be cut without changing the op (rows of a row-wise op, M and\n"
"N of a product, ...) that still fails; writes that crop to DIR as eager.h5 +\n"
"compiled.h5 (paritydiff fails the pair) and an 'origin' note. DIR is replaced when it\n"
"holds an earlier repro.\n"
"\n"
"  --tensor NAME     the op output to shrink (the differ's local cause)\n"
"  --out DIR         the repro folder to write\n"
"  --max-execs N     replays to spend (default %d)\n"
"  --json FILE       what was done, as JSON (- for stdout)\n"
"  -h, --help        this help\n"
"Exit status: 1 a repro was written, 0 the op does not diverge, 2 trouble.\n", SHRINK_BUDGET);
}

static int shrink_fail(const char *zMsg)
{
    parity_escape_line(stderr, "parityfuzz shrink", zMsg, NULL);
    return 2;
}

typedef struct {
    const char *zEager, *zCompiled, *zTensor, *zOut, *zJson;
    uint64_t budget;
} shrink_args;

/* The work, in a supervised child: libhdf5 may crash or hang on a corrupt capture, and
 * the one line and exit 2 must come whatever it does (formats/process.h). */
static int shrink_child(void *pArg, const parity_process_child *pSelf)
{
    const shrink_args *pA = pArg;
    const char *zTensor = pA->zTensor, *zOut = pA->zOut, *zJson = pA->zJson;
    char zErr[PARITY_ERR_LEN];
    parity_stored_op stored;
    parity_stored_minimized min;
    int rc, quiet;
    (void)pSelf;
    if (parity_stored_open(pA->zEager, pA->zCompiled, zTensor, &stored, zErr,
                           sizeof zErr) != 0)
        return shrink_fail(zErr);
    rc = parity_minimize_stored(&stored, pA->budget, &min, zErr, sizeof zErr);
    if (rc < 0) {
        parity_stored_close(&stored);
        return shrink_fail(zErr);
    }
    quiet = zJson && strcmp(zJson, "-") == 0;   /* stdout is the JSON's */
    if (rc == 1) {
        if (!quiet) {
            fputs("parityfuzz shrink: ", stdout);
            parity_escape_fputs(zTensor, stdout);
            printf(" does not diverge on replay (%s): nothing to shrink\n",
                   parity_finding_class_name(min.first.cls));
        }
        rc = zJson && parity_report_shrink_json(&stored, &min, 0, NULL, zJson, zErr,
                                                sizeof zErr) != 0 ? shrink_fail(zErr) : 0;
        parity_stored_close(&stored);
        return rc;
    }
    if (parity_repro_write_stored(zOut, &stored, &min, pA->zEager, pA->zCompiled, zErr,
                                  sizeof zErr) != 0) {
        rc = shrink_fail(zErr);
    } else if (!quiet) {
        char zShape[160], zFrom[160];
        fputs("repro: ", stdout);
        parity_escape_fputs(zOut, stdout);
        printf("\n  %s %s, from %s", stored.whole.spec.zOp,
               parity_shape_str(min.crop.c.outRank, min.crop.c.aOutDim, zShape, sizeof zShape),
               parity_shape_str(stored.whole.outRank, stored.whole.aOutDim, zFrom,
                                sizeof zFrom));
        printf(" in %llu replays%s\n  ", (unsigned long long)min.nExecs,
               min.minimal ? "" : " (budget spent: not minimal)");
        parity_escape_fputs(min.result.zDetail, stdout);
        fputc('\n', stdout);
    }
    if (rc == 0) {
        rc = 1;
        if (zJson && parity_report_shrink_json(&stored, &min, 1, zOut, zJson, zErr,
                                               sizeof zErr) != 0)
            rc = shrink_fail(zErr);
    }
    parity_stored_minimized_free(&min);
    parity_stored_close(&stored);
    return rc;
}

int parity_shrink_main(int argc, char **argv)
{
    static const struct option aOpt[] = {
        { "tensor", required_argument, NULL, 't' }, { "out", required_argument, NULL, 'o' },
        { "max-execs", required_argument, NULL, 'm' }, { "json", required_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 }
    };
    const char *zTensor = NULL, *zOut = NULL, *zJson = NULL;
    unsigned long long budget = SHRINK_BUDGET;
    char zErr[PARITY_ERR_LEN], *zEnd;
    shrink_args args;
    parity_process proc;
    parity_process_options opt;
    int c, rc;

    optind = 1;
    opterr = 0;   /* our one line, not getopt's */
    while ((c = getopt_long(argc, argv, "h", aOpt, NULL)) != -1) {
        switch (c) {
        case 't': zTensor = optarg; break;
        case 'o': zOut = optarg; break;
        case 'j': zJson = optarg; break;
        case 'm':
            budget = strtoull(optarg, &zEnd, 10);
            if (!*optarg || *zEnd || *optarg == '-' || budget < 1)
                return shrink_fail("--max-execs wants a positive integer");
            break;
        case 'h': shrink_usage(); return 0;
        default: return shrink_fail("unknown option (see parityfuzz shrink --help)");
        }
    }
    if (argc - optind != 2) return shrink_fail("wants EAGER.h5 COMPILED.h5 (see --help)");
    if (!zTensor || !zOut) return shrink_fail("wants --tensor NAME and --out DIR");
    args.zEager = argv[optind];
    args.zCompiled = argv[optind + 1];
    args.zTensor = zTensor;
    args.zOut = zOut;
    args.zJson = zJson;
    args.budget = budget;
    memset(&opt, 0, sizeof opt);
    opt.xMain = shrink_child;
    opt.pArg = &args;
    opt.in = PARITY_PROCESS_NULL;
    fflush(stdout);
    if (parity_process_start(&proc, &opt, zErr, sizeof zErr) != 0) return shrink_fail(zErr);
    parity_process_wait(&proc, 0, 0);
    if (proc.end == PARITY_PROCESS_EXITED) {
        rc = proc.code;
    } else {
        snprintf(zErr, sizeof zErr, "reading %s or %s died of signal %d (a corrupt capture?)",
                 args.zEager, args.zCompiled, proc.sig);
        rc = shrink_fail(zErr);
    }
    parity_process_close(&proc);
    return rc;
}
