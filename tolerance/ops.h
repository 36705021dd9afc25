/*
 * ops.h - the op registry: for each op, how its parameters are read, how its operand
 * shapes are checked and its output shape follows (its geometry, geometry.h), its
 * high-precision reference and its error-bound model.
 *
 * The registry is the one source of op knowledge: the differ (diff/), the fuzzer's case
 * layouts, its builtin kernels, its oneDNN target and its oracle all read it, and nothing
 * else lists the ops or repeats their shape rules. An op is looked up by its aten-like name
 * (the capture's "op" attribute) or referred to by its definition (parity_op_relu, ...);
 * each lives in one file, tolerance/op_<name>.c, whose first comment derives its bound and
 * cites its source. How to add one: tolerance/ADDING_AN_OP.md.
 *
 * The reference of an output element is computed in MPFR from the captured operands
 * (precision rule in mpref.h). The bound is an absolute bound on |computed - exact| that
 * any correct kernel producing the output dtype, accumulating in the promised acc_dtype,
 * in any summation order, satisfies: it includes the final rounding to the output dtype.
 */
#ifndef PARITY_TOLERANCE_OPS_H
#define PARITY_TOLERANCE_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <mpfr.h>
#include "formats/capture.h"
#include "tolerance/geometry.h"

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

/* An op's family: its operands, the attributes of its shape rule, and how its output shape
 * follows from them. Ops of one family share a member of parity_op_call.geom and a fuzz
 * layout (fuzz/cases/layout.c). */
typedef enum {
    PARITY_FAMILY_UNARY,      /* y = f(x), same shape; geom.elementwise (unary attributes) */
    PARITY_FAMILY_BINARY,     /* x, y broadcast (torch rules); geom.elementwise */
    PARITY_FAMILY_REDUCE,     /* over 'dim' (an int or a list; absent: every dim), keepdim;
                               * geom.rows */
    PARITY_FAMILY_ROWWISE,    /* along one 'dim' (default -1), same shape; geom.rows */
    PARITY_FAMILY_NORM,       /* over normalized_shape, weight?, bias?; geom.norm */
    PARITY_FAMILY_MATMUL,     /* torch.matmul: batch broadcast, 1-D sides; geom.dot */
    PARITY_FAMILY_LINEAR,     /* x [.., K], weight [N, K], bias? [N]; geom.dot */
    PARITY_FAMILY_BMM,        /* [B, M, K] x [B, K, N]; geom.dot */
    PARITY_FAMILY_CONV2D,     /* geom.conv */
    PARITY_FAMILY_ATTENTION,  /* q, k, v, attn_mask?; geom.attention */
    PARITY_FAMILY_TRANSPOSE,  /* dim0, dim1; geom.perm */
    PARITY_FAMILY_PERMUTE,    /* dims; geom.perm */
    PARITY_FAMILY_RESHAPE,    /* shape */
    PARITY_FAMILY_CAST,       /* to: the output dtype */
    PARITY_FAMILY_BATCH_NORM, /* x, (weight, bias)?, running_mean, running_var; geom.batchNorm */
    PARITY_FAMILY_POOL,       /* max_pool2d: kernel_size, stride, padding, dilation; avg_pool2d
                               * (no dilation; count_include_pad, divisor_override);
                               * adaptive_avg_pool2d: output_size; geom.pool */
    PARITY_FAMILY_SLICE,      /* select, slice, split along 'dim'; geom.slice */
    PARITY_FAMILY_EMBEDDING,  /* weight [V, D], indices; geom.embedding */
    PARITY_FAMILY_CONCAT,     /* cat, stack (tensors..., dim), expand (x, size); geom.concat */
    PARITY_FAMILY_ADDMM,      /* addmm, baddbmm: c, a, b, beta, alpha; geom.dot */
    PARITY_FAMILY_WHERE,      /* where(cond, x, y), masked_fill(x, mask, value): a bool
                               * operand picks, all broadcast; geom.elementwise */
    PARITY_FAMILY_COUNT
} parity_op_family;

/* An attribute a generated case sets beyond its family's shape attributes (gelu's
 * approximate, add's alpha, var's correction, a norm's eps): the fuzz layout writes value 0
 * unless the variant bit its family reserves for it picks value 1. A float value of NaN,
 * or a NULL string, means "not written". */
typedef struct {
    const char *zName;
    parity_attr_kind kind;    /* PARITY_ATTR_FLOAT or PARITY_ATTR_STRING */
    double aFloat[2];
    const char *azStr[2];
} parity_op_case_attr;

/* Flags of parity_op_def. */
#define PARITY_OPF_INT_OUTPUT  1u   /* the output may be an integer or bool tensor (cast) */
#define PARITY_OPF_COMPUTE_DTYPE 4u /* the bound honours "compute_dtype" (uOperand): the
                                     * dot-product ops; declared on any other op it is an
                                     * error, never silently ignored */
#define PARITY_OPF_NAMES_DIM   2u   /* generated cases always name a 'dim' (torch's
                                     * logsumexp and var(dim) take one) */
#define PARITY_OPF_REFERENCE_THREADS 8u /* xElement may run on several threads at once,
                                     * each with a copy of the call, once xEnvelope has run
                                     * once: it writes nothing but the copy's per-element
                                     * outputs (probBound, overflowPossible, nonfiniteAny) */

/* The output shape parity_op_begin_shape infers instead of checking. */
#define PARITY_OUT_INFER (-1)

/* One application of an op: the operands, the output's dtype and shape, the promised
 * accumulation dtype, its geometry, and what the op's own code keeps between elements. */
typedef struct {
    const parity_op_def *pDef;
    const parity_operand *aIn;
    size_t nIn;
    parity_operand *aOwnedIn; /* aIn when the call appended a scalar input (zScalarInput);
                               * freed by parity_op_end */
    parity_dtype outDtype;
    int outRank;
    uint64_t aOutDim[PARITY_MAX_RANK];
    uint64_t nOut;
    parity_dtype accDtype;    /* "acc_dtype", else the op's default for outDtype */
    parity_op_geometry geom;  /* the family's member, filled by xPrepare (geometry.h) */
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
     * divergence, while a NaN operand must still give NaN (judge.c, vacuous_nonfinite).
     * Also set where an infinite operand multiplies a quantity whose sign the bound leaves
     * open (layer_norm with an infinite weight): the sign of the infinity is then not
     * determined. The bound being infinite there, a finite value passes too: the rsqrt of
     * an overflowed variance is 0 and a norm's row becomes its bias. */
    int overflowPossible;
    /* Set by xElement, with overflowPossible, where the reference is a NaN that no NaN
     * operand made (0 * Inf, Inf - Inf: layer_norm's x - mu = 0 against an infinite
     * weight) and a correct kernel's rounding can as well give an infinity of either sign:
     * any non-finite value is then accepted (judge.c). Cleared before each call. */
    int nonfiniteAny;
    /* Set by xElement (through parity_note_overflow) where the element is a sum of terms:
     * its bound is an accumulation's, so a value within it may round to an infinity
     * (judge.c, overflow_within_bound). Cleared before each call. */
    int sumsTerms;
} parity_op_call;

struct parity_op_def {
    const char *zName;
    const char *zModel;       /* the error model in one line, with its source */
    size_t nInMin, nInMax;
    /* Optional: the attribute that stands for the last input when the capture holds a
     * number there, not a tensor (torch's add.Scalar and mul.Scalar keep `other` as a
     * scalar argument). With nInMin - 1 inputs and this attribute, the call gets the
     * number as a 0-d float64 operand of that name (ops.c); the op's bound must then allow
     * the scalar to be rounded to the output dtype first (op_binary.c says why). */
    const char *zScalarInput;
    /* Optional: the kernel that serves this op together with others, as compilers and
     * libraries build them: "dot" (matmul, bmm, linear, addmm, baddbmm: one GEMM), "max/min"
     * (maximum, minimum, amax, amin, relu = max(x, 0), clamp, hardtanh: the max and min
     * instructions, whose NaN rule is the usual defect), "sum/mean" (one reduction).
     * Triage (fuzz/findings/triage.c) takes findings in one kernel for one root cause.
     * NULL: the op's own (parity_op_kernel). */
    const char *zKernel;
    parity_op_family family;
    unsigned flags;           /* PARITY_OPF_* */
    const parity_op_case_attr *aCaseAttr;   /* what generated cases set; nCaseAttr of them */
    size_t nCaseAttr;
    /* Reads parameters from the output tensor's attributes, checks the operand shapes and
     * fills pCall->geom and the output shape (parity_op_take_out). Reads no operand value
     * and allocates only O(1) state: the fuzzer calls it on cases without values. Returns
     * 0, or -1 with a one-line reason. */
    int (*xPrepare)(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                    char *zErr, size_t nErr);
    /* Optional: the work that needs the operands' values (per-row statistics, a transposed
     * copy), after xPrepare. Returns 0, or -1 with a reason. */
    int (*xLoad)(parity_op_call *pCall, char *zErr, size_t nErr);
    /* Reference (at PARITY_REF_PREC bits, or NaN/Inf per IEEE and the op's semantics) and
     * absolute error bound of output element `linear`. Elements are asked for in
     * increasing order, so ops may cache per-row work in pParams. Returns 0 or -1. */
    int (*xElement)(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound);
    void (*xFreeParams)(void *pParams);
    /* Optional, for ops whose reference is costly: its cost per output element in terms,
     * from the geometry alone (the fuzzer sizes its cases with it, and the judge decides
     * on selective verification). NULL: one term per element. */
    double (*xCost)(const parity_op_call *pCall);
    /* Optional (dot products): a cheap upper bound of element `linear`'s error bound that
     * needs no reference (O(1) from per-row data). With xCost, large outputs are verified
     * selectively (judge.h). */
    double (*xEnvelope)(parity_op_call *pCall, uint64_t linear);
    /* Optional: the judge's fast path (Ziv's strategy, judge.c). A binary64 evaluation of
     * element `linear`'s reference: *pRef lies within *pErr of the exact reference (the op's
     * stated error, with its source and the margin over what was measured, checked by
     * tests/test_fast_path.c), and the bound xElement gives for any reference within
     * [*pRef - *pErr, *pRef + *pErr] lies within *pSpread of *pBound (0 where it does not
     * depend on the reference's value; the op checks that no ulp term changes over the
     * interval). Returns 1, or 0 where it cannot say so (special values, an interval
     * across a binade where an ulp term changes, inputs outside the range its error holds
     * on): the judge then asks xElement. The judge calls MPFR only where the
     * interval leaves the verdict open. Must be thread-safe (it reads the call and the
     * operands and what xLoad made, and writes nothing): the judge calls it from several
     * threads at once, in no particular order. Never sets overflowPossible or probBound:
     * ops with those have no fast path. */
    int (*xFast)(const parity_op_call *pCall, uint64_t linear, double *pRef, double *pErr,
                 double *pBound, double *pSpread);
    /* Optional: propagation through a graph of ops (tolerance/graph.h). aRad[i] holds a
     * radius for every element of operand i, in its layout: the operand's true value may
     * be anything within that distance of the value given. Gives output element `linear`'s
     * reference from the operands as given (as xElement does) and in *pRadius an upper
     * bound, rounded up, of |c - ref| over every c that a correct kernel (this op's model)
     * may give on operands anywhere within their radii: how far the function moves over
     * that box plus the largest bound the model gives on it (tolerance/propagate.h). +Inf
     * where it cannot say (the box reaches a special value, a pole, a domain edge, an
     * overflow, a radius that is +Inf). With every radius 0 it is xElement's bound.
     * Returns 0 or -1. Ops without it propagate only exact operands (graph.c). */
    int (*xPropagate)(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                      mpfr_t ref, double *pRadius);
};

/* The registered ops, one definition each (tolerance/op_list.h names them), and their
 * count. */
#define PARITY_OP(name) extern const parity_op_def parity_op_##name;
#include "tolerance/op_list.h"
#undef PARITY_OP
enum {
#define PARITY_OP(name) PARITY_OP_INDEX_##name,
#include "tolerance/op_list.h"
#undef PARITY_OP
    PARITY_OP_COUNT
};

/* The "compute_dtype" contract's extra relative error of a dot product whose accumulation
 * error is gamma: each product a(1 + d1) b(1 + d2), |d| <= uOperand, adds gamma_2(uOperand)
 * |a b| (Higham 2002, Lemma 3.1), scaled by at most 1 + gamma: gamma_2 (1 + gamma), times
 * sum |a b|. 0 when the operands are used as stored. */
double parity_operand_gamma(const parity_op_call *pCall, double gamma);

/* The op named zName (its registry name, or an aten spelling of it: "aten::linear",
 * "aten.relu_.default", "aten._softmax.default"; ops.c), or NULL. */
const parity_op_def *parity_op_find(const char *zName);
/* Every registered op, NULL-terminated, in op_list.h's order. */
extern const parity_op_def *const parity_op_registry[PARITY_OP_COUNT + 1];
/* The kernel an op shares with others (zKernel), else its own name. */
const char *parity_op_kernel(const parity_op_def *pDef);
/* The name of a family ("unary", "matmul", ...). */
const char *parity_op_family_name(parity_op_family family);

/* Sets up pCall for pDef over the operands, checking counts, parameters and shapes, then
 * loads what the reference needs from their values. accDtype: PARITY_DT_INVALID to use
 * the default (float32 for float32/16/bf16/fp8 outputs, float64 for float64). Returns 0,
 * or -1 with a reason (and nothing to free). */
int parity_op_begin(parity_op_call *pCall, const parity_op_def *pDef,
                    const parity_operand *aIn, size_t nIn, parity_dtype outDtype,
                    int outRank, const uint64_t *aOutDim, parity_dtype accDtype,
                    const parity_attr *aAttr, size_t nAttr, char *zErr, size_t nErr);
/* The same up to the geometry: checks and shapes only, no operand value read (they may be
 * absent). outRank PARITY_OUT_INFER (aOutDim NULL): the op works out the output shape and
 * leaves it in pCall. parity_op_end frees it; xElement must not be called on it. */
int parity_op_begin_shape(parity_op_call *pCall, const parity_op_def *pDef,
                          const parity_operand *aIn, size_t nIn, parity_dtype outDtype,
                          int outRank, const uint64_t *aOutDim, parity_dtype accDtype,
                          const parity_attr *aAttr, size_t nAttr, char *zErr, size_t nErr);
void parity_op_end(parity_op_call *pCall);
/* For xPrepare: the output shape its operands give. Returns 1 when it is the call's (or
 * the call infers it: it becomes the call's), 0 when the call's differs (the op then says
 * so in its own words). */
int parity_op_take_out(parity_op_call *pCall, int rank, const uint64_t *aDim);
/* *p = a * b + c in int64: 0, or -1 when any step overflows (window arithmetic of
 * parameters a capture may set to anything: conv2d's padding and dilation). */
static inline int parity_i64_muladd(int64_t a, int64_t b, int64_t c, int64_t *p)
{
    int64_t t;
    return __builtin_mul_overflow(a, b, &t) || __builtin_add_overflow(t, c, p) ? -1 : 0;
}
/* The cost of one output element of a prepared call in reference terms (xCost, or 1). */
double parity_op_cost(const parity_op_call *pCall);

/* ---- helpers shared by op files ---------------------------------------------------- */

/* Parameter readers, in the one error style: 0, or -1 with zErr when the attribute is
 * there but of the wrong type or size. An absent attribute leaves the value as it was (the
 * caller's default) and *pFound (when not NULL) tells the two cases apart. */
/* One integer. */
int parity_param_int(const parity_attr *aAttr, size_t nAttr, const char *zName,
                     int64_t *pValue, int *pFound, char *zErr, size_t nErr);
/* One float (or integer). */
int parity_param_float(const parity_attr *aAttr, size_t nAttr, const char *zName,
                       double *pValue, int *pFound, char *zErr, size_t nErr);
/* An int or a list of ints (dims, normalized_shape), at most nMax; their count in *pn. */
int parity_param_ints(const parity_attr *aAttr, size_t nAttr, const char *zName,
                      int64_t *aValue, size_t nMax, size_t *pn, int *pFound, char *zErr,
                      size_t nErr);
/* Clears what xElement and xPropagate set per element (probBound, overflowPossible,
 * nonfiniteAny, sumsTerms): before each element's call. */
void parity_op_call_clear_element(parity_op_call *pCall);
/* Sets pCall->overflowPossible when absSum (the exact sum of |terms| of an element's sum
 * or dot product) reaches the largest finite value of the accumulation dtype. */
void parity_note_overflow(parity_op_call *pCall, double absSum);
/* Normalises a possibly negative dim against rank; -1 when out of range. */
int parity_wrap_dim(int64_t dim, int rank);
/* Compares shapes; 1 when equal. */
int parity_same_shape(int rankA, const uint64_t *aA, int rankB, const uint64_t *aB);
/* Formats a shape "[2, 3]" for messages. */
const char *parity_shape_str(int rank, const uint64_t *aDim, char *zBuf, size_t nBuf);
/* 1 when every value of dtype `in` is a value of dtype `out` (precision, range and the
 * smallest subnormal; integers by their range): the data-movement ops' rule that moving a
 * value cannot round it (op_layout.c). */
int parity_dtype_holds(parity_dtype out, parity_dtype in);
/* The fast path (xFast) of an op whose reference is the binary64 value v itself (the
 * data-movement ops, relu): v with stated error 0 and bound 0; 0 when v is not finite
 * (op_layout.c). */
int parity_exact_fast(double v, double *pRef, double *pErr, double *pBound, double *pSpread);

#endif
