/*
 * graph_triage.c - the root cause of a stored graph repro (`parityfuzz triage DIR`), from
 * its tensors alone, as triage_repro.c does for a single op's: the stored compiled /out is
 * judged again against the reference propagated through the graph read back from
 * eager.h5, and the minimized case's family, ops, dtype and symptom are the key a graph
 * campaign groups by (parity_graph_cause_add). No target runs: the eager side is the
 * builtin eager chain, as in every graph case, and the compiled side is what was stored.
 *
 * The reading runs in a supervised child (parity_triage_supervised: libhdf5 may crash or
 * hang on a damaged file), which hands its verdict back in shared memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "formats/alloc.h"
#include "formats/process.h"
#include "fuzz/findings/findings.h"

typedef struct {
    int rc;                       /* 0 triaged, 1 no finding now, 2 cannot be read */
    parity_graph_cause cause;
    char zWhy[PARITY_ERR_LEN];
} graph_triage_state;

/* The replay target of a graph case: its compiled side returns the stored /out. */
typedef struct {
    parity_target base;
    const double *aStored;
    uint64_t nStored;
} stored_graph_target;

static parity_run_status stored_graph_run(parity_target *pT, const parity_graph_case *pG,
                                          double *aOut, char *zErr, size_t nErr)
{
    const stored_graph_target *pS = (const stored_graph_target *)pT;
    if (pS->nStored != pG->nOut) {
        snprintf(zErr, nErr, "the stored output has %llu elements, the graph %llu",
                 (unsigned long long)pS->nStored, (unsigned long long)pG->nOut);
        return PARITY_RUN_ERROR;
    }
    memcpy(aOut, pS->aStored, pG->nOut * sizeof *aOut);
    return PARITY_RUN_OK;
}

int parity_is_graph_repro(const char *zRepro)
{
    char zFile[4200];
    struct stat st;
    /* a single op's repro always has its signature file; a graph repro has none */
    snprintf(zFile, sizeof zFile, "%s/signature", zRepro);
    if (stat(zFile, &st) == 0) return 0;
    snprintf(zFile, sizeof zFile, "%s/eager.h5", zRepro);
    return stat(zFile, &st) == 0;
}

/* 1 when zFile is a single op's case file (its root has parity_case_version). */
static int single_op_case(const char *zFile)
{
    parity_capture *pCap = NULL;
    const parity_attr *aRoot;
    size_t nRoot;
    char zErr[PARITY_ERR_LEN];
    int is;
    if (parity_capture_open(zFile, &pCap, zErr, sizeof zErr) != 0) return 0;
    aRoot = parity_capture_root_attrs(pCap, &nRoot);
    is = parity_attr_find(aRoot, nRoot, "parity_case_version") != NULL;
    parity_capture_close(pCap);
    return is;
}

static int graph_triage_child(void *pArg, const parity_process_child *pSelf)
{
    const char *zRepro = pArg;
    graph_triage_state *pSt = pSelf->pState;
    stored_graph_target target;
    parity_graph_case g;
    parity_graph_oracle_result r;
    double *aaEager[PARITY_GRAPH_CASE_MAX_NODES] = { 0 }, *aStored = NULL, *aC = NULL;
    char zFile[4200], zOps[160];
    size_t i;
    int isNew;

    pSt->rc = 2;
    snprintf(zFile, sizeof zFile, "%s/eager.h5", zRepro);
    if (single_op_case(zFile)) {
        /* a single op's repro that lost its signature file, not a graph repro */
        snprintf(pSt->zWhy, sizeof pSt->zWhy, "signature: no such file (a single op's repro "
                 "keeps its signature beside eager.h5)");
        return 0;
    }
    if (parity_graph_case_read(zFile, &g, pSt->zWhy, sizeof pSt->zWhy) != 0) return 0;
    aStored = parity_malloc((g.nOut ? g.nOut : 1) * sizeof *aStored);
    aC = parity_malloc((g.nOut ? g.nOut : 1) * sizeof *aC);
    snprintf(zFile, sizeof zFile, "%s/compiled.h5", zRepro);
    if (!aStored || !aC) {
        snprintf(pSt->zWhy, sizeof pSt->zWhy, "out of memory");
        goto done;
    }
    if (parity_graph_case_read_output(&g, zFile, aStored, pSt->zWhy, sizeof pSt->zWhy) != 0)
        goto done;
    memset(&target, 0, sizeof target);
    target.base.zName = "stored";
    target.base.xRunGraph = stored_graph_run;
    target.aStored = aStored;
    target.nStored = g.nOut;
    if (parity_graph_oracle_run(&target.base, &g, aaEager, aC, &r) != 0) {
        snprintf(pSt->zWhy, sizeof pSt->zWhy, "the judge failed: %.480s", r.zDetail);
    } else if (r.cls != PARITY_FINDING_DIVERGES) {
        snprintf(pSt->zWhy, sizeof pSt->zWhy, "its stored output no longer diverges (%.400s)",
                 r.bitIdentical ? "bit-identical" : r.judged ? "within the propagated bound"
                                                             : r.zDetail);
        pSt->rc = r.cls == PARITY_FINDING_NONE ? 1 : 2;
    } else {
        parity_graph_cause *pC = NULL;
        size_t n = 0;
        parity_graph_case_ops(&g, zOps, sizeof zOps);
        pC = parity_graph_cause_add(&pC, &n, g.pFam->zName, zOps, g.spec.dtype,
                                    parity_graph_symptom(&r, g.spec.dtype), &isNew);
        if (!pC) {
            snprintf(pSt->zWhy, sizeof pSt->zWhy, "out of memory");
            goto done;
        }
        pSt->cause = *pC;
        parity_free(pC);
        pSt->cause.count = 1;
        parity_graph_case_describe(&g, pSt->cause.zCase, sizeof pSt->cause.zCase);
        snprintf(pSt->cause.zDetail, sizeof pSt->cause.zDetail, "%s", r.zDetail);
        snprintf(pSt->cause.zRepro, sizeof pSt->cause.zRepro, "%s", zRepro);
        pSt->rc = 0;
    }
done:
    for (i = 0; i < g.nNode; i++) parity_free(aaEager[i]);
    parity_free(aStored);
    parity_free(aC);
    parity_graph_case_free(&g);
    return 0;
}

int parity_graph_triage_repro(const char *zRepro, parity_graph_cause *pCause, char *zErr,
                              size_t nErr)
{
    graph_triage_state st;

    memset(pCause, 0, sizeof *pCause);
    if (parity_triage_supervised(graph_triage_child, (void *)zRepro, &st, sizeof st, zErr,
                                 nErr) != 0)
        return -1;
    st.zWhy[sizeof st.zWhy - 1] = '\0';
    if (st.rc != 0) {
        snprintf(zErr, nErr, "%s", st.zWhy[0] ? st.zWhy : "cannot be read");
        return st.rc == 1 ? 1 : -1;
    }
    *pCause = st.cause;
    pCause->zFamily[sizeof pCause->zFamily - 1] = '\0';
    pCause->zOps[sizeof pCause->zOps - 1] = '\0';
    pCause->zSymptom[sizeof pCause->zSymptom - 1] = '\0';
    pCause->zCase[sizeof pCause->zCase - 1] = '\0';
    pCause->zDetail[sizeof pCause->zDetail - 1] = '\0';
    pCause->zRepro[sizeof pCause->zRepro - 1] = '\0';
    return 0;
}
