/*
 * ops.h - the op registry: for each op, how its parameters are read, how its operand
 * shapes are checked, its high-precision reference and its error-bound model.
 *
 * One registry serves the differ (diff/), the fuzzer's oracle and its case generator:
 * there is no second list of ops anywhere. An op is looked up by its aten-like name (the
 * capture's "op" attribute); each lives in one file, tolerance/op_<name>.c, whose first
 * comment derives its bound and cites its source.
 *
 * The reference of an output element is computed in MPFR from the captured operands
 * (precision rule in mpref.h). The bound is an absolute bound on |computed - exact| that
 * any correct kernel producing the output dtype, accumulating in the promised acc_dtype,
 * in any summation order, satisfies: it includes the final rounding to the output dtype.
 */
#ifndef PARITY_OPS_H
#define PARITY_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <mpfr.h>
#include "formats/capture.h"

/* A captured tensor decoded to binary64, whole (operands are read at random). */
typedef struct {
    const char *zName;
    parity_dtype dtype;
    int rank;
    uint64_t aDim[PARITY_MAX_RANK];
    uint64_t nElem;
    double *aValue;           /* row-major, nElem values */
} parity_operand;

/* Loads tensor iTensor of pCap whole (zName points at the capture's path string, so the
 * capture must outlive the operand). Returns 0, or -1 with zErr (nothing allocated). */
int parity_operand_load(parity_capture *pCap, size_t iTensor, parity_operand *pOp,
                        char *zErr, size_t nErr);
void parity_operand_free(parity_operand *pOp);

typedef struct parity_op_def parity_op_def;

/* What an overflowing legal summation order can make of a result (parity_op_call's
 * overflowPossible). */
#define PARITY_OVERFLOW_NONFINITE 1   /* an infinity, or the NaN of Inf - Inf */
#define PARITY_OVERFLOW_ANY_VALUE 2   /* that, or a finite value (an rsqrt of Inf is 0) */

/* One application of an op: the operands, the output's dtype and shape, the promised
 * accumulation dtype, and what the op's own code keeps between elements. */
typedef struct {
    const parity_op_def *pDef;
    const parity_operand *aIn;
    size_t nIn;
    parity_dtype outDtype;
    int outRank;
    uint64_t aOutDim[PARITY_MAX_RANK];
    uint64_t nOut;
    parity_dtype accDtype;    /* "acc_dtype", else the op's default for outDtype */
    void *pParams;            /* op-specific, made by xPrepare, freed by parity_op_end */
    /* Probabilistic bound (Higham & Mary 2019) for ops that have one (dot products,
     * sums): xElement stores the element's probabilistic bound in probBound, computed
     * with lambda; the judge sets probBound to NaN before each call, so ops without one
     * leave it NaN. */
    double lambda;
    double probBound;
    /* The "compute_dtype" contract: the kernel rounds its operands to a narrower format
     * (unit roundoff uOperand: 2^-11 for tf32, 2^-8 for bfloat16) before the products and
     * accumulates in accDtype, as tensor cores do. 0: operands are used as stored. Used by
     * the dot-product ops (matmul, linear, bmm). */
    double uOperand;
    /* Set by xElement (the judge clears it before each call) when some summation order
     * allowed by the model can overflow the accumulator: the sum of |terms| reaches the
     * largest finite value of accDtype. The error bound (Higham 2002, eq. 3.5 and 4.3)
     * assumes no overflow, so there the bound is vacuous (infinite) and an infinity (or
     * the NaN of Inf - Inf) from a reassociated kernel is a legitimate result, not a
     * divergence, while a NaN operand must still give NaN (judge.c, vacuous_special).
     * Also set where an infinite operand multiplies a quantity whose sign the bound leaves
     * open (layer_norm with an infinite weight): the sign of the infinity is then not
     * determined. PARITY_OVERFLOW_ANY_VALUE where the overflowing sum feeds an rsqrt (a
     * norm's variance or mean square): rsqrt(Inf) = 0 turns the overflow into a finite
     * result, so there even a finite value is legitimate where the exact one rounds to an
     * infinity. */
    int overflowPossible;     /* 0, PARITY_OVERFLOW_NONFINITE or PARITY_OVERFLOW_ANY_VALUE */
} parity_op_call;

struct parity_op_def {
    const char *zName;
    const char *zModel;       /* the error model in one line, with its source */
    size_t nInMin, nInMax;
    /* Reads parameters from the output tensor's attributes and checks operand shapes
     * against the output shape. Returns 0, or -1 with a one-line reason. */
    int (*xPrepare)(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                    char *zErr, size_t nErr);
    /* Reference (at PARITY_REF_PREC bits, or NaN/Inf per IEEE and the op's semantics) and
     * absolute error bound of output element `linear`. Elements are asked for in
     * increasing order, so ops may cache per-row work in pParams. Returns 0 or -1. */
    int (*xElement)(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound);
    void (*xFreeParams)(void *pParams);
    /* Optional, for ops whose reference is costly (dot products): the reference's cost per
     * element in terms, and a cheap upper bound of element `linear`'s error bound that
     * needs no reference (computed in O(1) from per-row data made by xPrepare). With both,
     * large outputs are verified selectively (judge.h). NULL otherwise. */
    double (*xCost)(const parity_op_call *pCall);
    double (*xEnvelope)(parity_op_call *pCall, uint64_t linear);
    int allowIntOutput;       /* the output may be an integer or bool tensor (cast) */
};

/* The op named zName, or NULL. */
const parity_op_def *parity_op_find(const char *zName);
/* Every registered op, NULL-terminated. */
extern const parity_op_def *const parity_op_registry[];

/* Sets up pCall for pDef over the operands, checking counts, parameters and shapes.
 * accDtype: PARITY_DT_INVALID to use the default (float32 for float32/16/bf16/fp8 outputs,
 * float64 for float64). Returns 0, or -1 with a reason (and nothing to free). */
int parity_op_begin(parity_op_call *pCall, const parity_op_def *pDef,
                    const parity_operand *aIn, size_t nIn, parity_dtype outDtype,
                    int outRank, const uint64_t *aOutDim, parity_dtype accDtype,
                    const parity_attr *aAttr, size_t nAttr, char *zErr, size_t nErr);
void parity_op_end(parity_op_call *pCall);

/* ---- helpers shared by op files ---------------------------------------------------- */

/* Reads an integer attribute (scalar) into *pValue; returns 1 found, 0 absent, -1 wrong
 * type (zErr set). */
int parity_param_int(const parity_attr *aAttr, size_t nAttr, const char *zName,
                     int64_t *pValue, char *zErr, size_t nErr);
/* Reads a float (or integer) scalar attribute. Same returns. */
int parity_param_float(const parity_attr *aAttr, size_t nAttr, const char *zName,
                       double *pValue, char *zErr, size_t nErr);
/* Reads an int or a list of ints (dims, normalized_shape). At most nMax. Same returns. */
int parity_param_ints(const parity_attr *aAttr, size_t nAttr, const char *zName,
                      int64_t *aValue, size_t nMax, size_t *pn, char *zErr, size_t nErr);
/* Sets pCall->overflowPossible when absSum (the exact sum of |terms| of an element's sum
 * or dot product) reaches the largest finite value of the accumulation dtype. */
void parity_note_overflow(parity_op_call *pCall, double absSum);
/* The same for a sum of squares that feeds an rsqrt (layer_norm, rms_norm): sets
 * PARITY_OVERFLOW_ANY_VALUE. */
void parity_note_overflow_any(parity_op_call *pCall, double absSum);
/* Normalises a possibly negative dim against rank; -1 when out of range. */
int parity_wrap_dim(int64_t dim, int rank);
/* Compares shapes; 1 when equal. */
int parity_same_shape(int rankA, const uint64_t *aA, int rankB, const uint64_t *aB);
/* Formats a shape "[2, 3]" for messages. */
const char *parity_shape_str(int rank, const uint64_t *aDim, char *zBuf, size_t nBuf);

#endif
