/*
 * parityfuzz_triage.c - `parityfuzz triage DIR...`: the stored repros under each DIR grouped
 * into root causes (fuzz/findings/triage.c), the text root causes first as a campaign
 * prints them, and the same "root_causes" array its summary has (--json). Repros of graph
 * cases (`parityfuzz graph`) group as a graph campaign groups them (graph_triage.c), listed
 * after the single ops' as "graph root cause N" and in "graph_root_causes".
 *
 * Exit status: 1 root causes listed, 0 none (no repro diverges any more), 2 trouble (no
 * repro found, a repro that cannot be read).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/alloc.h"
#include "formats/escape.h"
#include "fuzz/findings/findings.h"
#include "fuzz/parityfuzz_shrink.h"
#include "reports/report.h"
#include "reports/report_fuzz.h"
#include "reports/report_internal.h"

static int triage_fail(const char *zMsg)
{
    parity_escape_line(stderr, "parityfuzz triage", zMsg, NULL);
    return 2;
}

static void triage_usage(void)
{
    printf(
"Usage: parityfuzz triage DIR... [--json FILE]\n"
"Groups the repros under each DIR (a repro folder holds eager.h5, compiled.h5 and its\n"
"signature) into root causes: the kernel, the symptom at the worst element and the value\n"
"class or result range the minimized case keeps (fuzz/FUZZ.md, \"Root causes\"). Repros\n"
"of graph cases (parityfuzz graph, no signature file) group by family, ops, dtype and\n"
"symptom, as a graph campaign does. Reads the stored tensors only: no target runs.\n"
"\n"
"  --json FILE   the root causes as JSON (- for stdout)\n"
"  -h, --help    this help\n"
"Exit status: 1 root causes listed, 0 none, 2 trouble.\n");
}

/* A graph repro counted under its root cause (the first repro of a cause stands for it),
 * or among those that no longer diverge. 0, or 2 after saying why. */
static int triage_graph(const char *zRepro, parity_graph_cause **paGraph, size_t *pnGraph,
                        size_t *pnRepro, long *pnGone, json_t *pGone)
{
    parity_graph_cause one, *pC;
    char zErr[PARITY_ERR_LEN];
    int isNew, r = parity_graph_triage_repro(zRepro, &one, zErr, sizeof zErr);
    if (r < 0) {
        char zMsg[2 * PARITY_ERR_LEN];
        snprintf(zMsg, sizeof zMsg, "%s: %s", zRepro, zErr);
        return triage_fail(zMsg);
    }
    if (r == 1) {
        (*pnGone)++;
        json_array_append_new(pGone, json_pack("{s:s,s:s}", "repro", zRepro, "why", zErr));
        return 0;
    }
    pC = parity_graph_cause_add(paGraph, pnGraph, one.zFamily, one.zOps, one.dtype,
                                one.zSymptom, &isNew);
    if (!pC) return triage_fail("out of memory");
    if (isNew) *pC = one;
    else pC->count++;
    (*pnRepro)++;
    return 0;
}

int parity_triage_main(int argc, char **argv)
{
    static const struct option aOpt[] = {
        { "json", required_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    const char *zJson = NULL;
    char zErr[PARITY_ERR_LEN];
    parity_finding *aFinding = NULL;
    parity_root_cause *aCause = NULL;
    parity_graph_cause *aGraph = NULL;
    size_t nFinding = 0, nCause = 0, nGraph = 0, nGraphRepro = 0, i;
    long nGone = 0;
    int c, a, rc = 0;
    json_t *pGone = json_array();

    optind = 1;
    opterr = 0;   /* our one line, not getopt's */
    while ((c = getopt_long(argc, argv, "h", aOpt, NULL)) != -1) {
        switch (c) {
        case 'j': zJson = optarg; break;
        case 'h': triage_usage(); json_decref(pGone); return 0;
        default: json_decref(pGone); return triage_fail("unknown option (see parityfuzz triage --help)");
        }
    }
    if (optind >= argc) {
        json_decref(pGone);
        return triage_fail("wants a folder of repros (see --help)");
    }
    for (a = optind; a < argc && rc == 0; a++) {
        char **azRepro = NULL;
        long n = parity_replay_list(argv[a], &azRepro, zErr, sizeof zErr), k;
        if (n < 0) { rc = triage_fail(zErr); break; }
        if (n == 0) {
            char zMsg[PARITY_ERR_LEN + 80];
            snprintf(zMsg, sizeof zMsg, "no repro under %s (a repro folder holds eager.h5)", argv[a]);
            rc = triage_fail(zMsg);
        }
        for (k = 0; k < n && rc == 0; k++) {
            parity_finding f;
            int r;
            if (parity_is_graph_repro(azRepro[k])) {
                rc = triage_graph(azRepro[k], &aGraph, &nGraph, &nGraphRepro, &nGone, pGone);
                continue;
            }
            r = parity_triage_repro(azRepro[k], &f, zErr, sizeof zErr);
            if (r < 0) {
                char zMsg[2 * PARITY_ERR_LEN];
                snprintf(zMsg, sizeof zMsg, "%s: %s", azRepro[k], zErr);
                rc = triage_fail(zMsg);
            } else if (r == 1) {
                nGone++;
                json_array_append_new(pGone, json_pack("{s:s,s:s}", "repro", azRepro[k], "why", zErr));
            } else {
                parity_finding *aNew = parity_realloc(aFinding, (nFinding + 1) * sizeof *aNew);
                if (!aNew) { parity_finding_free(&f); rc = triage_fail("out of memory"); break; }
                aFinding = aNew;
                aFinding[nFinding++] = f;
            }
        }
        parity_replay_list_free(azRepro, n);
    }
    if (rc == 0 && parity_triage_group(aFinding, nFinding, &aCause, &nCause) != 0)
        rc = triage_fail("out of memory");
    if (rc == 0) {
        int quiet = zJson && strcmp(zJson, "-") == 0;
        if (!quiet) {
            parity_report_root_causes_text(stdout, aFinding, aCause, nCause);
            parity_report_graph_causes_text(stdout, aGraph, nGraph, "graph root cause", "repro");
            printf("parityfuzz triage: %zu repro%s, %zu root cause%s", nFinding + nGraphRepro,
                   nFinding + nGraphRepro == 1 ? "" : "s", nCause + nGraph,
                   nCause + nGraph == 1 ? "" : "s");
            if (nGraph) printf(" (%zu of graph cases)", nGraph);
            if (nGone) printf(", %ld no longer diverging", nGone);
            printf("\n");
        }
        if (zJson) {
            json_t *pDoc;
            parity_report_use_allocator();
            pDoc = json_pack("{s:s,s:i,s:I,s:o,s:o,s:o}", "tool", "parityfuzz triage",
                             "schema_version", 1, "repros", (json_int_t)(nFinding + nGraphRepro),
                             "no_longer_diverging", json_incref(pGone),
                             "root_causes", parity_report_root_causes_json(aFinding, aCause, nCause),
                             "graph_root_causes", parity_report_graph_causes_json(aGraph, nGraph));
            if (!pDoc || parity_report_json_write(pDoc, zJson, zErr, sizeof zErr) != 0)
                rc = triage_fail(pDoc ? zErr : "out of memory building the JSON");
            json_decref(pDoc);
        }
        if (rc == 0) rc = nCause + nGraph ? 1 : 0;
    }
    parity_free(aGraph);
    parity_triage_free(aCause, nCause);
    for (i = 0; i < nFinding; i++) parity_finding_free(&aFinding[i]);
    free(aFinding);
    json_decref(pGone);
    return rc;
}
