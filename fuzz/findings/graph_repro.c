/*
 * graph_repro.c - a graph case's repro as a diffable pair of captures (FORMAT.md, "Graph
 * cases"): eager.h5 holds the inputs, every intermediate (op, inputs, attributes, order:
 * what a capture of eager execution records) and /out; compiled.h5 holds the inputs and
 * /out only, as a compiler that fused the region leaves it. paritydiff judges the pair's
 * /out as the output of that fused region (diff/region_internal.h).
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "fuzz/findings/findings.h"
#include "fuzz/cases/graph_cases.h"

#define W_CHECK(expr) do { if ((expr) != 0) goto write_fail; } while (0)

/* The names a node's operands have in the captures. */
static void operand_names(const parity_graph_case *pG, size_t i, const char **az)
{
    size_t k;
    for (k = 0; k < pG->aNode[i].nIn; k++) {
        int j = pG->aNode[i].aIn[k];
        az[k] = j >= 0 ? pG->azNodeName[j] : pG->aIn[-1 - j].zName;
    }
}

static int write_side(const parity_graph_case *pG, int eager, double *const *aaEager,
                      const double *aCompiled, const char *zTarget, const char *zFile,
                      char *zErr, size_t nErr)
{
    const parity_graph_spec *pS = &pG->spec;
    parity_writer *pW = NULL;
    int64_t aDim[PARITY_GRAPH_CASE_MAX_DIMS];
    char zPath[64];
    size_t i, k, first = eager ? 0 : pG->nNode - 1;
    int oom = 0;

    if (parity_writer_open(zFile, &pW, zErr, nErr) != 0) return -1;
    for (i = 0; i < (size_t)pG->pFam->nDim; i++) aDim[i] = (int64_t)pS->aDim[i];
    W_CHECK(parity_writer_attr_int(pW, NULL, "case_version", PARITY_CASE_VERSION_GRAPH));
    W_CHECK(parity_writer_attr_string(pW, NULL, "graph_family", pG->pFam->zName));
    W_CHECK(parity_writer_attr_int(pW, NULL, "variant", (int64_t)pS->variant));
    W_CHECK(parity_writer_attr_ints(pW, NULL, "dims", aDim, (size_t)pG->pFam->nDim));
    W_CHECK(parity_writer_attr_int(pW, NULL, "seed", (int64_t)pS->seed));
    W_CHECK(parity_writer_attr_string(pW, NULL, "side", eager ? "eager" : "compiled"));
    W_CHECK(parity_writer_attr_string(pW, NULL, "target", zTarget));
    for (i = 0; i < pG->nIn; i++) {
        const parity_operand *pIn = &pG->aIn[i];
        snprintf(zPath, sizeof zPath, "/%s", pIn->zName);
        W_CHECK(parity_case_write_values(pW, zPath, pIn->dtype, pIn->rank, pIn->aDim,
                                         pIn->aValue, pIn->nElem, &oom));
        W_CHECK(parity_writer_attr_string(pW, zPath, "recipe",
                                          parity_value_kind_name((parity_value_kind)pS->aRecipe[i].kind)));
    }
    for (i = first; i < pG->nNode; i++) {
        const parity_graph_node *pN = &pG->aNode[i];
        const char *azIn[PARITY_GRAPH_MAX_IN];
        const char *zName = pG->azNodeName[i];
        uint64_t n = parity_shape_elements(pN->outRank, pN->aOutDim);
        W_CHECK(parity_case_write_values(pW, zName, pN->outDtype, pN->outRank, pN->aOutDim,
                                         eager ? aaEager[i] : aCompiled, n, &oom));
        W_CHECK(parity_writer_attr_string(pW, zName, "op", pN->pDef->zName));
        W_CHECK(parity_writer_attr_int(pW, zName, "order", (int64_t)i));
        for (k = 0; k < pN->nAttr; k++)
            W_CHECK(parity_case_write_attr(pW, zName, pN->aAttr[k].zName, &pN->aAttr[k]));
        if (eager) {   /* the compiled side fused them away: it has no record of them */
            operand_names(pG, i, azIn);
            W_CHECK(parity_writer_attr_strings(pW, zName, "inputs", azIn, pN->nIn));
        }
    }
    return parity_writer_close(pW, zErr, nErr);
write_fail:
    snprintf(zErr, nErr, "%s: %s", zFile, oom ? "out of memory" : parity_writer_error(pW));
    parity_writer_abort(pW);
    return -1;
}

int parity_graph_repro_write(const char *zDir, const parity_graph_case *pG,
                             double *const *aaEager, const double *aCompiled,
                             const char *zTarget, char *zErr, size_t nErr)
{
    char zFile[4200];
    if (mkdir(zDir, 0777) != 0) {
        struct stat st;
        if (stat(zDir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(zErr, nErr, "%s: cannot create the repro folder", zDir);
            return -1;
        }
    }
    snprintf(zFile, sizeof zFile, "%s/eager.h5", zDir);
    if (write_side(pG, 1, aaEager, aCompiled, zTarget, zFile, zErr, nErr) != 0) return -1;
    snprintf(zFile, sizeof zFile, "%s/compiled.h5", zDir);
    return write_side(pG, 0, aaEager, aCompiled, zTarget, zFile, zErr, nErr);
}
