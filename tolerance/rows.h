/*
 * rows.h - rows of a tensor along some of its dims, for the op files that reduce, scan or
 * normalise along dims (op_reduce.c, op_softmax.c, op_log_softmax.c, op_var.c,
 * op_cumsum.c, op_layer_norm.c, op_rms_norm.c) and the fuzzer's row kernels.
 *
 * A "row" is the set of elements that share their indices on the kept dims; its elements
 * are ordered row-major over the reduced dims. Rows are numbered row-major over the kept
 * dims, so for a reduction the row number is the output's linear index (with or without
 * keepdim), and for a same-shape op (softmax, cumsum) parity_rows_locate maps an output
 * index to (row, position in row).
 */
#ifndef PARITY_ROWS_H
#define PARITY_ROWS_H

#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include "tolerance/ops.h"

/* parity_rows itself is in geometry.h: it is the rows families' geometry. */

/* Sets pR up for pX with the dims flagged in aReduce (rank entries, 0/1). */
void parity_rows_init(parity_rows *pR, const parity_operand *pX, const unsigned char *aReduce);

/* Reads attribute zAttr ("dim": an int, or a list when allowList) into aReduce. Absent or
 * an empty list: every dim when allIfAbsent, else dim defDim. Errors (-1, zErr set, message
 * prefixed with zOp): wrong type, a dim out of range (naming the dim and the rank), a dim
 * given twice. Returns 0. */
int parity_rows_parse_dim(const char *zOp, const parity_operand *pX, const parity_attr *aAttr,
                          size_t nAttr, const char *zAttr, int allowList, int allIfAbsent,
                          int64_t defDim, unsigned char *aReduce, char *zErr, size_t nErr);

/* Reads "keepdim" (0/1, default 0). Returns 0, or -1 with zErr set. */
int parity_rows_parse_keepdim(const char *zOp, const parity_attr *aAttr, size_t nAttr,
                              int *pKeepdim, char *zErr, size_t nErr);

/* The output of a reduction over pR (keepdim 0/1): checked against the call's, or taken as
 * it when the call infers it (parity_op_take_out). */
int parity_rows_check_reduced(const char *zOp, const parity_rows *pR, int keepdim,
                              parity_op_call *pCall, char *zErr, size_t nErr);

/* The output has the input's shape: checked, or taken likewise. */
int parity_rows_check_same(const char *zOp, const parity_operand *pX,
                           parity_op_call *pCall, char *zErr, size_t nErr);

/* layer_norm and rms_norm: normalized_shape (the attribute; else the weight's shape, input
 * 1; else the last dim) must name trailing dims of input 0, and the weight and bias (inputs
 * 1 and 2, when given) must have that shape. Fills pG's shape fields (D, nRow, nNormDims,
 * hasWeight, hasBias; not eps) and aReduce (the normalized dims, for parity_rows_init).
 * Returns 0, or -1 with "<op>: ..." in zErr. */
int parity_rows_parse_norm(const parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                           parity_norm_geometry *pG, unsigned char *aReduce, char *zErr,
                           size_t nErr);

/* Offset in the input of element k (0 <= k < n) of row iRow. */
uint64_t parity_rows_offset(const parity_rows *pR, uint64_t iRow, uint64_t k);

/* Copies row iRow of x into aOut (n values). */
void parity_rows_gather(const parity_rows *pR, const double *x, uint64_t iRow, double *aOut);

/* For an input-shaped index: its row and its position in the row. */
void parity_rows_locate(const parity_rows *pR, uint64_t linear, uint64_t *piRow, uint64_t *pk);

/* A row's binary64 sum for the fast paths (ops.h, xFast), compensated as Neumaier's
 * (Neumaier 1974; Higham 2002, 4.3): relative error at most 2u + O(n u^2) over the sum of
 * |terms|, u = 2^-53. Start from { 0, 0 }; the sum is s + c. */
typedef struct {
    double s, c;
} parity_comp_sum;

static inline void parity_comp_add(parity_comp_sum *pS, double v)
{
    double t = pS->s + v;
    if (fabs(pS->s) >= fabs(v)) pS->c += (pS->s - t) + v;
    else pS->c += (v - t) + pS->s;
    pS->s = t;
}

#endif
