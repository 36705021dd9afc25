/*
 * target.c - opening targets by name, and the builtin target over the in-process kernels.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/targets/targets.h"
#include "formats/alloc.h"

static parity_run_status builtin_run(parity_target *pT, parity_side side,
                                     const parity_case *pCase, double *aOut, char *zErr,
                                     size_t nErr)
{
    int rc;
    if (!parity_builtin_supports(pCase->pDef)) {
        snprintf(zErr, nErr, "builtin: no kernel for %s", pCase->spec.zOp);
        return PARITY_RUN_SKIP;
    }
    rc = side == PARITY_SIDE_EAGER ? parity_builtin_eager(pCase, aOut, zErr, nErr)
                                   : parity_builtin_compiled(pCase, pT->defects, aOut, zErr, nErr);
    return rc == 0 ? PARITY_RUN_OK : PARITY_RUN_ERROR;
}

static int builtin_supports(parity_target *pT, const char *zOp)
{
    (void)pT;
    return parity_builtin_supports(parity_op_find(zOp));
}

static parity_run_status builtin_run_graph(parity_target *pT, const parity_graph_case *pG,
                                           double *aOut, char *zErr, size_t nErr)
{
    return parity_builtin_graph_fused(pG, pT->defects, aOut, zErr, nErr) == 0 ? PARITY_RUN_OK
                                                                             : PARITY_RUN_ERROR;
}

static void builtin_close(parity_target *pT) { free(pT); }

parity_target *parity_target_open(const char *zSpec, uint32_t defects, double caseTimeout,
                                  char *zErr, size_t nErr)
{
    if (strcmp(zSpec, "builtin") == 0) {
        parity_target *pT = parity_calloc(1, sizeof *pT);
        if (!pT) { snprintf(zErr, nErr, "out of memory"); return NULL; }
        pT->zName = "builtin";
        pT->xRun = builtin_run;
        pT->xSupports = builtin_supports;
        pT->xClose = builtin_close;
        pT->xRunGraph = builtin_run_graph;
        pT->graphFamilies = (1u << parity_graph_family_count()) - 1;
        pT->defects = defects;
        return pT;
    }
    if (strncmp(zSpec, "cmd:", 4) == 0) {
        if (defects) {
            snprintf(zErr, nErr, "--defect applies to the builtin target only");
            return NULL;
        }
        if (zSpec[4] == '\0') {
            snprintf(zErr, nErr, "target 'cmd:' needs a command after the colon");
            return NULL;
        }
        return parity_target_cmd_open(zSpec + 4, caseTimeout, zErr, nErr);
    }
    if (strcmp(zSpec, "onednn") == 0 || strncmp(zSpec, "onednn:", 7) == 0) {
        if (defects) {
            snprintf(zErr, nErr, "--defect applies to the builtin target only");
            return NULL;
        }
#ifdef PARITY_HAVE_ONEDNN
        return parity_target_onednn_open(zSpec[6] == ':' ? zSpec + 7 : NULL, zErr, nErr);
#else
        snprintf(zErr, nErr, "this build has no onednn target: install libdnnl-dev "
                 "(scripts/setup-deps.sh) and rebuild");
        return NULL;
#endif
    }
    snprintf(zErr, nErr, "unknown target '%s' (builtin, cmd:COMMAND or onednn[:ISA])", zSpec);
    return NULL;
}

int parity_target_spec_in_process(const char *zSpec)
{
    return strcmp(zSpec, "onednn") == 0 || strncmp(zSpec, "onednn:", 7) == 0;
}

int parity_target_runs_dtype(const parity_target *pT, parity_dtype dt)
{
    return pT->dtypes == 0 || (pT->dtypes & (1u << dt)) != 0;
}

void parity_target_close(parity_target *pT)
{
    if (pT) pT->xClose(pT);
}

void parity_target_times_add(parity_target_times *pDst, const parity_target_times *pSrc)
{
    int s;
    for (s = 0; s < 2; s++) {
        pDst->runSeconds[s] += pSrc->runSeconds[s];
        pDst->compileSeconds[s] += pSrc->compileSeconds[s];
        pDst->nRuns[s] += pSrc->nRuns[s];
        pDst->nCompiles[s] += pSrc->nCompiles[s];
    }
}
