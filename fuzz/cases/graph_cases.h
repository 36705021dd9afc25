/*
 * graph_cases.h - graph cases: a small DAG of registry ops applied to generated tensors,
 * the fuzz case of a fused region (case version 2; a version-1 case is one op, cases.h).
 *
 * A graph case is drawn from a family (graph_families.c): a pattern compilers fuse, with
 * the registry ops it is made of (the one registry: a family names ops, never redefines
 * them), its symbolic dims and their roles, and variant bits that pick an activation or
 * drop an optional op (the minimizer removes ops by clearing those). Its spec is small and
 * fixed-size like a single op's; parity_graph_case_expand makes the graph deterministically:
 * the inputs (shapes and values from the recipes, values.c), and the nodes with their
 * attributes and output shapes, each checked by the registry's xPrepare.
 *
 * Error style: 0 on success, -1 with a one-line reason in zErr.
 */
#ifndef PARITY_FUZZ_GRAPH_CASES_H
#define PARITY_FUZZ_GRAPH_CASES_H

#include "fuzz/cases/cases.h"
#include "tolerance/graph.h"

#define PARITY_CASE_VERSION_GRAPH 2
#define PARITY_GRAPH_CASE_MAX_NODES 8
#define PARITY_GRAPH_CASE_MAX_IN 4
#define PARITY_GRAPH_CASE_MAX_DIMS 4
#define PARITY_GRAPH_NODE_ATTRS 3

typedef struct {
    uint8_t family;           /* index into the family table (parity_graph_family_at) */
    uint32_t variant;         /* the family's choices */
    parity_dtype dtype;       /* of every float tensor */
    uint64_t aDim[PARITY_GRAPH_CASE_MAX_DIMS];
    parity_value_recipe aRecipe[PARITY_GRAPH_CASE_MAX_IN];
    uint64_t seed;
} parity_graph_spec;

typedef struct parity_graph_family parity_graph_family;
typedef struct parity_graph_case parity_graph_case;

struct parity_graph_case {
    parity_graph_spec spec;
    const parity_graph_family *pFam;
    size_t nIn;
    parity_operand aIn[PARITY_GRAPH_CASE_MAX_IN];
    char azInName[PARITY_GRAPH_CASE_MAX_IN][16];
    size_t nNode;
    parity_graph_node aNode[PARITY_GRAPH_CASE_MAX_NODES];   /* the last is the output */
    char azNodeName[PARITY_GRAPH_CASE_MAX_NODES][24];       /* capture names; last "/out" */
    parity_attr aaAttr[PARITY_GRAPH_CASE_MAX_NODES][PARITY_GRAPH_NODE_ATTRS];
    int64_t aaInt[PARITY_GRAPH_CASE_MAX_NODES][PARITY_GRAPH_NODE_ATTRS];
    char *aazStr[PARITY_GRAPH_CASE_MAX_NODES][PARITY_GRAPH_NODE_ATTRS];
    double aaFloat[PARITY_GRAPH_CASE_MAX_NODES][PARITY_GRAPH_NODE_ATTRS];
    uint64_t nOut;            /* elements of the output (the last node) */
    uint64_t work;            /* multiply-adds, roughly: what bounds its run time */
};

/* A family: a fused pattern. xBuild lays out the inputs and nodes of a spec with the
 * helpers below; dims and variant bits as its comment in graph_families.c says. */
struct parity_graph_family {
    const char *zName;
    int nDim;
    parity_dim_role aRole[PARITY_GRAPH_CASE_MAX_DIMS];
    int nIn;                  /* inputs whose recipes the spec carries */
    uint32_t nChoice;         /* variant bits 0..7: a choice below nChoice (activation) */
    uint32_t dropBits;        /* variant bits 8..: each clears an optional op */
    int (*xBuild)(parity_graph_case *pG, char *zErr, size_t nErr);
};

/* The families, their count, and one by name (NULL when unknown). */
const parity_graph_family *parity_graph_family_at(size_t i);
size_t parity_graph_family_count(void);
const parity_graph_family *parity_graph_family_find(const char *zName);

/* Expands a spec: inputs with values, nodes with shapes (the registry checks each). -1
 * (nothing allocated) when the spec is not a legal case. */
int parity_graph_case_expand(const parity_graph_spec *pSpec, parity_graph_case *pG,
                             char *zErr, size_t nErr);
/* Layout only: the inputs' shapes (no values), the nodes and their shapes. */
int parity_graph_case_layout(const parity_graph_spec *pSpec, parity_graph_case *pG,
                             char *zErr, size_t nErr);
void parity_graph_case_free(parity_graph_case *pG);
/* "gemm_epilogue float32 x[3, 67] w[5, 67] b[5]: linear gelu" */
const char *parity_graph_case_describe(const parity_graph_case *pG, char *zBuf, size_t nBuf);
/* The ops of the case, "linear+gelu" (the triage key). */
const char *parity_graph_case_ops(const parity_graph_case *pG, char *zBuf, size_t nBuf);
/* Draws a spec of family pFam (dims by role, a dtype from the mask aDtype, recipes). */
void parity_graph_spec_draw(parity_rng *pRng, const parity_graph_family *pFam,
                            uint32_t dtypeMask, parity_graph_spec *pSpec);

/* ---- storage (graph_io.c) ------------------------------------------------------------ */

/* Writes the case as a capture (FORMAT.md, "Graph cases"): the inputs, the spec and the
 * graph as root attributes. aaNode (may be NULL) adds every node's values with op, inputs,
 * order and attributes (a repro's eager side); else aOut (may be NULL) adds /out alone, with
 * op and order (a compiled side that fused everything). NULL both: the case file a worker
 * reads. zSide and zTarget (may be NULL) go to the root. Atomic. 0, or -1 with zErr. */
int parity_graph_case_write(const parity_graph_case *pG, double *const *aaNode,
                            const double *aOut, const char *zSide, const char *zTarget,
                            const char *zFile, char *zErr, size_t nErr);
/* Reads a graph case back from a capture written by parity_graph_case_write (a repro's
 * eager.h5): the spec from its root attributes, laid out again by the family, and the
 * inputs' stored values (never re-drawn: a minimized repro's are not the recipe's). 0, or
 * -1 with zErr (not a graph case, an unknown family, a stored input whose dtype or shape
 * is not the layout's). */
int parity_graph_case_read(const char *zFile, parity_graph_case *pG, char *zErr, size_t nErr);
/* Reads a worker's /out (pG->nOut values, the last node's dtype and shape). 0, or -1. */
int parity_graph_case_read_output(const parity_graph_case *pG, const char *zFile,
                                  double *aOut, char *zErr, size_t nErr);

/* ---- helpers for the families' builders -------------------------------------------- */

/* Input k: its name and shape (values come later from spec.aRecipe[k]). */
void parity_graph_case_input(parity_graph_case *pG, const char *zName, int rank,
                             const uint64_t *aDim);
/* A node: registry op zOp over operands (earlier nodes, or PARITY_GRAPH_INPUT(k)); returns
 * its index, or -1 with zErr (unknown op, too many nodes). */
int parity_graph_case_node(parity_graph_case *pG, const char *zOp, int nIn, const int *aIn,
                           char *zErr, size_t nErr);
/* Operand ref of a node (an earlier node, or PARITY_GRAPH_INPUT(k)) as an operand: an
 * input as it is, a node's shape and dtype with aaValue[node] as its values (aaValue may
 * be NULL: shapes only). */
void parity_graph_case_operand(const parity_graph_case *pG, int ref, double *const *aaValue,
                               parity_operand *pOp);
/* An int, float or string attribute of node i. */
void parity_graph_case_attr_int(parity_graph_case *pG, int i, const char *zName, int64_t v);
void parity_graph_case_attr_float(parity_graph_case *pG, int i, const char *zName, double v);
void parity_graph_case_attr_str(parity_graph_case *pG, int i, const char *zName,
                                const char *zValue);

#endif
