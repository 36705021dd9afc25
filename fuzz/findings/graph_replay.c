/*
 * graph_replay.c - a stored graph repro run again: the case read back from its eager.h5
 * (the stored inputs, the graph laid out again from the spec: graph_io.c) and judged by
 * the graph oracle against a target, so a fixed compiler turns the repro "fixed" and a
 * regression gate can hold the stored fusion findings to account.
 */
#include <stdio.h>
#include <string.h>
#include "formats/alloc.h"
#include "fuzz/findings/findings.h"

int parity_graph_replay(parity_target *pT, const char *zRepro, parity_graph_oracle_result *pR,
                        char *zErr, size_t nErr)
{
    parity_graph_case g;
    double *aaEager[PARITY_GRAPH_CASE_MAX_NODES] = { 0 }, *aC;
    char zFile[4200];
    size_t i;
    int rc;
    snprintf(zFile, sizeof zFile, "%s/eager.h5", zRepro);
    if (parity_graph_case_read(zFile, &g, zErr, nErr) != 0) return -1;
    aC = parity_malloc((g.nOut ? g.nOut : 1) * sizeof(double));
    if (!aC) {
        parity_graph_case_free(&g);
        snprintf(zErr, nErr, "out of memory");
        return -1;
    }
    rc = parity_graph_oracle_run(pT, &g, aaEager, aC, pR);
    if (rc != 0) snprintf(zErr, nErr, "%s", pR->zDetail);
    for (i = 0; i < g.nNode; i++) parity_free(aaEager[i]);
    parity_free(aC);
    parity_graph_case_free(&g);
    return rc;
}
