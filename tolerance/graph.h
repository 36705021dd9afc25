/*
 * graph.h - a small DAG of registry ops judged as one region, the way a compiler's fused
 * kernel computes it: the intermediates gone, only the region's outputs to compare.
 *
 * parity_graph_propagate evaluates the graph from its inputs, op by op. For every element
 * of every node it gives a value (the MPFR reference of the op applied to its operands'
 * values, rounded to binary64) and a radius: an upper bound of the distance between that
 * value and anything a correct implementation of the composition may give there, where
 * each op errs within its own model (ops.h) and takes operands anywhere within the radii
 * of the ops before it. So a fused kernel may reassociate, contract into FMAs, keep its
 * intermediates wider than the eager dtype or rescale a softmax online: all of that is
 * inside the ops' models, hence inside the radius, while an error no chain of correct ops
 * could make falls outside it.
 *
 * How a radius is made (each op's xPropagate, ops.h): the reach of the op's function over
 * the box of its operands (interval formulas for + - * / and dot products, monotone
 * pieces for the unary functions and softmax, evaluated in MPFR with directed rounding or
 * in binary64 rounded up, propagate.h) plus the largest bound its model gives anywhere on
 * the box (every model's bound grows with the magnitudes it reads, so it is evaluated at
 * their largest values on the box). Nothing is linearised, so there is no first-order
 * remainder to bound: the enclosure is rigorous, as interval arithmetic is (R. E. Moore,
 * R. B. Kearfott, M. J. Cloud, Introduction to Interval Analysis, SIAM 2009, Ch. 5-6),
 * but by op rather than by operation, which keeps the dependency problem inside one op.
 * The transcendental functions are not MPFI's (Debian's lacks erf): each unary op's reach
 * over [lo, hi] comes from its MPFR reference at the two ends, widened by one binary64
 * ulp (the references are within 2^-120 relative, mpref.h), and from its monotone pieces:
 * gelu, silu and mish fall to one minimum and rise after it, and where the box holds
 * that minimum's neighbourhood a stated lower bound of it is used (op_unary.c); softplus
 * rises on both branches and drops where its threshold switches them, elu is monotone on
 * each side of 0 (op_unary_param.c).
 * layer_norm's reach comes from the mean value theorem with its gradient bounded over the
 * box (op_layer_norm.c); no other op needs a derivative.
 * An element whose box reaches a special value, a pole or an overflow has radius +Inf
 * and is vacuous: the judge takes any value there and counts it (judge.h, nVacuous).
 * Ops without xPropagate take exact operands only (graph inputs, or earlier nodes whose
 * every radius is 0): a graph that needs more from them is refused, never judged with a
 * made-up bound.
 *
 * A node's value is the reference rounded to binary64 and its radius includes that
 * rounding, so the region's output is judged against a binary64 reference (2^-53
 * relative) rather than a 128-bit one: nothing for float32 and narrower outputs; for
 * float64 outputs the bound grows by half a binary64 ulp.
 */
#ifndef PARITY_TOLERANCE_GRAPH_H
#define PARITY_TOLERANCE_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include "formats/capture.h"
#include "tolerance/ops.h"
#include "tolerance/judge.h"

#define PARITY_GRAPH_MAX_IN 8
/* Operand aIn[i] of a node: an earlier node's index, or graph input k written so. */
#define PARITY_GRAPH_INPUT(k) (-1 - (k))

typedef struct {
    const parity_op_def *pDef;
    int aIn[PARITY_GRAPH_MAX_IN];
    size_t nIn;
    parity_dtype outDtype;
    parity_dtype accDtype;        /* PARITY_DT_INVALID: the op's default for outDtype */
    int outRank;                  /* PARITY_OUT_INFER (aOutDim unused): the op infers it */
    uint64_t aOutDim[PARITY_MAX_RANK];
    const parity_attr *aAttr;
    size_t nAttr;
    double uOperand;              /* the compute_dtype contract of a dot product (ops.h) */
} parity_graph_node;

/* What propagation leaves for one node. */
typedef struct {
    parity_operand value;         /* the values, named after the node's op, its dtype and
                                   * shape: an operand for later nodes or the judge */
    double *aRadius;              /* per element, rounded up; +Inf: vacuous */
    uint64_t nVacuous;            /* elements whose radius is +Inf */
} parity_graph_value;

/* Propagates the graph aNode[0 .. nNode-1] (each node's operands earlier nodes or inputs)
 * from the inputs aInput[0 .. nInput-1] (exact: radius 0) into aOut[0 .. nNode-1]. Returns
 * 0, or -1 with a one-line reason (a node's operands, shapes or attributes its op
 * refuses; an op that cannot carry its operands' radii; memory) and nothing to free. */
int parity_graph_propagate(const parity_graph_node *aNode, size_t nNode,
                           const parity_operand *aInput, size_t nInput,
                           parity_graph_value *aOut, char *zErr, size_t nErr);
/* The same, calling xBeat(pBeatCtx) (may be NULL) every PARITY_JUDGE_BEAT_ELEMS elements,
 * as the judge does: a region of many ops over large tensors takes a while (61 ops over
 * 65,536 elements: 17 s), and a supervisor must not take that for a hung reader. A
 * non-zero return stops it: -2, zErr "time limit reached while judging". */
int parity_graph_propagate_beat(const parity_graph_node *aNode, size_t nNode,
                                const parity_operand *aInput, size_t nInput,
                                parity_graph_value *aOut, int (*xBeat)(void *),
                                void *pBeatCtx, char *zErr, size_t nErr);
void parity_graph_values_free(parity_graph_value *aValue, size_t nValue);

/* Judges a region output computed by a fused kernel (aCompiled) and by eager (aEager, may
 * be NULL) against a propagated node: its value is the reference and its radius the bound,
 * with the classes and counts of judge.h; aApprox as parity_judge_planned's (may be NULL).
 * pPlan may be NULL (the default plan). Returns 0, or -1 with a reason. */
int parity_graph_judge(const parity_graph_value *pValue, const double *aEager,
                       const double *aCompiled, const double *aApprox,
                       const parity_judge_plan *pPlan, parity_judgement *pJ, char *zErr,
                       size_t nErr);

#endif
