/*
 * graph_io.c - graph cases as captures (formats/FORMAT.md, "Graph cases"): the case file a
 * worker reads (inputs, and the graph as root attributes), the sides of a repro (eager.h5
 * with every intermediate, compiled.h5 with /out alone), and a worker's output read back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The graph as root attributes: graph_nodes (the node names, in order), and per node k
 * node.<k>.op, node.<k>.inputs and node.<k>.<attribute>; output_dtypes and output_shape of
 * /out, as a single op's case file has them. */
static int write_graph_attrs(parity_writer *pW, const parity_graph_case *pG)
{
    const char *azName[PARITY_GRAPH_CASE_MAX_NODES], *zOutDtype;
    const parity_graph_node *pLast = &pG->aNode[pG->nNode - 1];
    int64_t aShape[PARITY_MAX_RANK];
    char zKey[96];
    size_t i, k;
    for (i = 0; i < pG->nNode; i++) azName[i] = pG->azNodeName[i] + 1;   /* without "/" */
    if (parity_writer_attr_strings(pW, NULL, "graph_nodes", azName, pG->nNode) != 0) return -1;
    for (i = 0; i < pG->nNode; i++) {
        const parity_graph_node *pN = &pG->aNode[i];
        const char *azIn[PARITY_GRAPH_MAX_IN];
        operand_names(pG, i, azIn);
        for (k = 0; k < pN->nIn; k++)
            if (azIn[k][0] == '/') azIn[k]++;
        snprintf(zKey, sizeof zKey, "node.%zu.op", i);
        if (parity_writer_attr_string(pW, NULL, zKey, pN->pDef->zName) != 0) return -1;
        snprintf(zKey, sizeof zKey, "node.%zu.inputs", i);
        if (parity_writer_attr_strings(pW, NULL, zKey, azIn, pN->nIn) != 0) return -1;
        for (k = 0; k < pN->nAttr; k++) {
            snprintf(zKey, sizeof zKey, "node.%zu.%s", i, pN->aAttr[k].zName);
            if (parity_case_write_attr(pW, NULL, zKey, &pN->aAttr[k]) != 0) return -1;
        }
    }
    zOutDtype = parity_dtype_name(pLast->outDtype);
    for (i = 0; i < (size_t)pLast->outRank; i++) aShape[i] = (int64_t)pLast->aOutDim[i];
    if (parity_writer_attr_strings(pW, NULL, "output_dtypes", &zOutDtype, 1) != 0) return -1;
    return parity_writer_attr_ints(pW, NULL, "output_shape", aShape, (size_t)pLast->outRank);
}

int parity_graph_case_write(const parity_graph_case *pG, double *const *aaNode,
                            const double *aOut, const char *zSide, const char *zTarget,
                            const char *zFile, char *zErr, size_t nErr)
{
    const parity_graph_spec *pS = &pG->spec;
    parity_writer *pW = NULL;
    int64_t aDim[PARITY_GRAPH_CASE_MAX_DIMS];
    char zPath[64];
    size_t i, k, first = aaNode ? 0 : pG->nNode;
    int oom = 0;

    if (parity_writer_open(zFile, &pW, zErr, nErr) != 0) return -1;
    for (i = 0; i < (size_t)pG->pFam->nDim; i++) aDim[i] = (int64_t)pS->aDim[i];
    W_CHECK(parity_writer_attr_int(pW, NULL, "case_version", PARITY_CASE_VERSION_GRAPH));
    W_CHECK(parity_writer_attr_string(pW, NULL, "graph_family", pG->pFam->zName));
    W_CHECK(parity_writer_attr_int(pW, NULL, "variant", (int64_t)pS->variant));
    W_CHECK(parity_writer_attr_string(pW, NULL, "case_dtype", parity_dtype_name(pS->dtype)));
    W_CHECK(parity_writer_attr_ints(pW, NULL, "dims", aDim, (size_t)pG->pFam->nDim));
    W_CHECK(parity_writer_attr_int(pW, NULL, "seed", (int64_t)pS->seed));
    W_CHECK(write_graph_attrs(pW, pG));
    if (zSide) W_CHECK(parity_writer_attr_string(pW, NULL, "side", zSide));
    if (zTarget) W_CHECK(parity_writer_attr_string(pW, NULL, "target", zTarget));
    {
        const char *azIn[PARITY_GRAPH_CASE_MAX_IN];
        for (i = 0; i < pG->nIn; i++) azIn[i] = pG->aIn[i].zName;
        W_CHECK(parity_writer_attr_strings(pW, NULL, "inputs", azIn, pG->nIn));
    }
    for (i = 0; i < pG->nIn; i++) {
        const parity_operand *pIn = &pG->aIn[i];
        snprintf(zPath, sizeof zPath, "/%s", pIn->zName);
        W_CHECK(parity_case_write_values(pW, zPath, pIn->dtype, pIn->rank, pIn->aDim,
                                         pIn->aValue, pIn->nElem, &oom));
        W_CHECK(parity_writer_attr_string(pW, zPath, "recipe",
                                          parity_value_kind_name((parity_value_kind)pS->aRecipe[i].kind)));
    }
    if (!aaNode && aOut) first = pG->nNode - 1;
    for (i = first; i < pG->nNode; i++) {
        const parity_graph_node *pN = &pG->aNode[i];
        const char *azIn[PARITY_GRAPH_MAX_IN];
        const char *zName = pG->azNodeName[i];
        uint64_t n = parity_shape_elements(pN->outRank, pN->aOutDim);
        W_CHECK(parity_case_write_values(pW, zName, pN->outDtype, pN->outRank, pN->aOutDim,
                                         aaNode ? aaNode[i] : aOut, n, &oom));
        W_CHECK(parity_writer_attr_string(pW, zName, "op", pN->pDef->zName));
        W_CHECK(parity_writer_attr_int(pW, zName, "order", (int64_t)i));
        for (k = 0; k < pN->nAttr; k++)
            W_CHECK(parity_case_write_attr(pW, zName, pN->aAttr[k].zName, &pN->aAttr[k]));
        if (aaNode) {   /* a fused side keeps no record of what it fused */
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

int parity_graph_case_read_output(const parity_graph_case *pG, const char *zFile,
                                  double *aOut, char *zErr, size_t nErr)
{
    const parity_graph_node *pLast = &pG->aNode[pG->nNode - 1];
    parity_case c;
    memset(&c, 0, sizeof c);
    c.outDtype = pLast->outDtype;
    c.outRank = pLast->outRank;
    memcpy(c.aOutDim, pLast->aOutDim, sizeof c.aOutDim);
    c.nOut = pG->nOut;
    return parity_case_read_output(&c, zFile, aOut, zErr, nErr);
}

/* The spec of a graph case file from its root attributes. 0, or -1 with zErr. */
static int read_spec(const parity_attr *aRoot, size_t nRoot, const char *zFile,
                     parity_graph_spec *pSpec, char *zErr, size_t nErr)
{
    const parity_attr *pA;
    size_t i;
    memset(pSpec, 0, sizeof *pSpec);
    if (parity_attr_find(aRoot, nRoot, "parity_case_version")) {
        snprintf(zErr, nErr, "%s: a single-op case (parity_case_version): parityfuzz replay "
                 "reads it, not parityfuzz graph replay", zFile);
        return -1;
    }
    if (!(pA = parity_case_root_attr(aRoot, nRoot, "case_version", PARITY_ATTR_INT, 0, zFile,
                                     zErr, nErr)))
        return -1;
    if (pA->aInt[0] != PARITY_CASE_VERSION_GRAPH) {
        snprintf(zErr, nErr, "%s: case_version %lld is not a graph case (%d)", zFile,
                 (long long)pA->aInt[0], PARITY_CASE_VERSION_GRAPH);
        return -1;
    }
    if (!(pA = parity_case_root_attr(aRoot, nRoot, "graph_family", PARITY_ATTR_STRING, 0, zFile,
                                     zErr, nErr)))
        return -1;
    for (i = 0; i < parity_graph_family_count(); i++)
        if (strcmp(parity_graph_family_at(i)->zName, pA->azStr[0]) == 0) break;
    if (i == parity_graph_family_count()) {
        snprintf(zErr, nErr, "%s: unknown graph family '%.64s'", zFile, pA->azStr[0]);
        return -1;
    }
    pSpec->family = (uint8_t)i;
    if (!(pA = parity_case_root_attr(aRoot, nRoot, "variant", PARITY_ATTR_INT, 0, zFile, zErr,
                                     nErr)))
        return -1;
    pSpec->variant = (uint32_t)pA->aInt[0];
    if (!(pA = parity_case_root_attr(aRoot, nRoot, "case_dtype", PARITY_ATTR_STRING, 0, zFile,
                                     zErr, nErr)))
        return -1;
    pSpec->dtype = parity_dtype_from_name(pA->azStr[0]);
    if (!(pA = parity_case_root_attr(aRoot, nRoot, "dims", PARITY_ATTR_INT, 1, zFile, zErr,
                                     nErr)))
        return -1;
    if (pA->n != (size_t)parity_graph_family_at(pSpec->family)->nDim) {
        snprintf(zErr, nErr, "%s: %zu dims, family %s has %d", zFile, pA->n,
                 parity_graph_family_at(pSpec->family)->zName,
                 parity_graph_family_at(pSpec->family)->nDim);
        return -1;
    }
    for (i = 0; i < pA->n; i++) {
        if (pA->aInt[i] < 0) {
            snprintf(zErr, nErr, "%s: a negative dim", zFile);
            return -1;
        }
        pSpec->aDim[i] = (uint64_t)pA->aInt[i];
    }
    if (!(pA = parity_case_root_attr(aRoot, nRoot, "seed", PARITY_ATTR_INT, 0, zFile, zErr,
                                     nErr)))
        return -1;
    pSpec->seed = (uint64_t)pA->aInt[0];
    return 0;
}

int parity_graph_case_read(const char *zFile, parity_graph_case *pG, char *zErr, size_t nErr)
{
    parity_capture *pCap = NULL;
    parity_graph_spec spec;
    const parity_attr *aRoot;
    size_t nRoot, i;
    int rc = -1;
    if (parity_capture_open(zFile, &pCap, zErr, nErr) != 0) return -1;
    aRoot = parity_capture_root_attrs(pCap, &nRoot);
    if (read_spec(aRoot, nRoot, zFile, &spec, zErr, nErr) == 0 &&
        parity_graph_case_layout(&spec, pG, zErr, nErr) == 0) {
        rc = 0;
        for (i = 0; i < pG->nIn && rc == 0; i++) {
            parity_operand *pIn = &pG->aIn[i];
            long iT = parity_capture_find(pCap, pIn->zName);
            rc = parity_case_load_tensor(pCap, zFile, pIn->zName, pIn->dtype, pIn->rank,
                                         pIn->aDim, &pIn->aValue, zErr, nErr);
            /* the value class it was drawn from, for the description (the values are
             * the stored ones whatever it says; an unknown or absent one stays as read) */
            if (rc == 0 && iT >= 0) {
                const parity_tensor_info *pT = parity_capture_tensor(pCap, (size_t)iT);
                const parity_attr *pA = parity_attr_find(pT->aAttr, pT->nAttr, "recipe");
                if (pA && pA->kind == PARITY_ATTR_STRING && pA->n == 1 &&
                    parity_value_kind_find(pA->azStr[0]) < PARITY_VAL_COUNT)
                    pG->spec.aRecipe[i].kind = (uint8_t)parity_value_kind_find(pA->azStr[0]);
            }
        }
        if (rc != 0) parity_graph_case_free(pG);
    }
    parity_capture_close(pCap);
    return rc;
}
