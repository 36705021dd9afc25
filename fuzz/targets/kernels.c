/*
 * kernels.c - what both builtin kernel files use (kernels_internal.h): rounding, the elementwise
 * ops, and each op's geometry read from the case's parameters the way the registry's
 * xPrepare reads them (tolerance/op_*.c), so the kernels and the judge never disagree on
 * what a case means.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/targets/kernels_internal.h"
#include "formats/dtype.h"
#include "tolerance/mpref.h"

/* ---- dispatch and rounding ------------------------------------------------------------ */

/* The ops whose math is the same on both sides. */
static const kern_entry aElementwise[] = {
    { "relu", kern_unary }, { "gelu", kern_unary }, { "silu", kern_unary },
    { "sigmoid", kern_unary }, { "tanh", kern_unary }, { "exp", kern_unary },
    { "log", kern_unary }, { "sqrt", kern_unary }, { "rsqrt", kern_unary },
    { "reciprocal", kern_unary }, { "erf", kern_unary }, { "neg", kern_unary },
    { "abs", kern_unary }, { "softplus", kern_unary }, { "elu", kern_unary },
    { "mish", kern_unary },
    { "add", kern_binary }, { "sub", kern_binary }, { "mul", kern_binary },
    { "div", kern_binary }, { "maximum", kern_binary }, { "minimum", kern_binary },
    { "transpose", kern_layout }, { "permute", kern_layout }, { "reshape", kern_layout },
    { "cast", kern_cast },
    { NULL, NULL }
};

static const kern_entry *kern_find(const kern_entry *aTable, const char *zOp)
{
    const kern_entry *p;
    for (p = aTable; p->zOp; p++)
        if (strcmp(p->zOp, zOp) == 0) return p;
    for (p = aElementwise; p->zOp; p++)
        if (strcmp(p->zOp, zOp) == 0) return p;
    return NULL;
}

int kern_has(const kern_entry *aTable, const char *zOp)
{
    return zOp && kern_find(aTable, zOp) != NULL;
}

int kern_dispatch(const kern_entry *aTable, const parity_case *pCase, uint32_t defects,
                  double *aOut, char *zErr, size_t nErr)
{
    const char *zOp = pCase->spec.zOp;
    const kern_entry *pE = kern_find(aTable, zOp);
    const parity_op_def *pDef = parity_op_find(zOp);
    kern_ctx k;
    size_t i;

    if (!pE || !pDef) {
        snprintf(zErr, nErr, "builtin: op '%s' is not implemented", zOp);
        return -1;
    }
    if (!parity_dtype_is_float(pCase->outDtype) && !pDef->allowIntOutput) {
        snprintf(zErr, nErr, "builtin %s: output dtype %s is not a float type", zOp,
                 parity_dtype_name(pCase->outDtype));
        return -1;
    }
    /* The kernels index operands by position: the counts must be the registry's. */
    if (pCase->nIn < pDef->nInMin || pCase->nIn > pDef->nInMax) {
        snprintf(zErr, nErr, "builtin %s: %zu inputs, the op takes %zu to %zu", zOp,
                 pCase->nIn, pDef->nInMin, pDef->nInMax);
        return -1;
    }
    for (i = 0; i < pCase->nIn; i++)
        if (pCase->aIn[i].nElem > 0 && !pCase->aIn[i].aValue) {
            snprintf(zErr, nErr, "builtin %s: input %zu has no values", zOp, i);
            return -1;
        }
    k.f32 = pCase->outDtype != PARITY_DT_F64;
    k.out = pCase->outDtype;
    return pE->xRun(pCase, &k, defects, aOut, zErr, nErr);
}

double kern_exp(const kern_ctx *pK, double x)
{
    return pK->f32 ? (double)expf((float)x) : exp(x);
}

double kern_log(const kern_ctx *pK, double x)
{
    return pK->f32 ? (double)logf((float)x) : log(x);
}

double kern_sqrt(const kern_ctx *pK, double x)
{
    return pK->f32 ? (double)sqrtf((float)x) : sqrt(x);
}

static double kern_tanh(const kern_ctx *pK, double x)
{
    return pK->f32 ? (double)tanhf((float)x) : tanh(x);
}

static double kern_erf(const kern_ctx *pK, double x)
{
    return pK->f32 ? (double)erff((float)x) : erf(x);
}

static double kern_log1p(const kern_ctx *pK, double x)
{
    return pK->f32 ? (double)log1pf((float)x) : log1p(x);
}

/* Strides of an operand (its dims right-aligned against nBatch batch dims, each equal or
 * 1) over those dims, 0 where it broadcasts; the operand's trailing nMatrix elements form
 * one matrix (1 for elementwise ops). -1 when a dim neither matches nor is 1. */
static int batch_strides(int nBatch, const uint64_t *aBatchDim, const uint64_t *aOwn,
                         int nOwn, uint64_t nMatrix, uint64_t *aStride)
{
    uint64_t stride = nMatrix;
    int d;
    for (d = nBatch - 1; d >= 0; d--) {
        int iOwn = nOwn - (nBatch - d);
        if (iOwn < 0) { aStride[d] = 0; continue; }
        if (aOwn[iOwn] == aBatchDim[d]) aStride[d] = aOwn[iOwn] == 1 ? 0 : stride;
        else if (aOwn[iOwn] == 1) aStride[d] = 0;
        else return -1;
        stride *= aOwn[iOwn];
    }
    return nOwn <= nBatch ? 0 : -1;
}

/* A copy of an operand's values in the compute precision (a float64 input under a
 * float32 contract is rounded once, as a kernel loading it would). NULL when out of
 * memory. */
static double *acc_copy(const kern_ctx *pK, const parity_operand *pIn)
{
    double *a = malloc((pIn->nElem + 1) * sizeof(double));
    uint64_t i;
    if (!a) return NULL;
    for (i = 0; i < pIn->nElem; i++) a[i] = kern_acc(pK, pIn->aValue[i]);
    return a;
}

static int out_count_check(const parity_case *pCase, uint64_t nWant, char *zErr, size_t nErr)
{
    if (pCase->nOut == nWant) return 0;
    snprintf(zErr, nErr, "builtin %s: the output has %llu elements, the operands give %llu",
             pCase->spec.zOp, (unsigned long long)pCase->nOut, (unsigned long long)nWant);
    return -1;
}

/* ---- unary ---------------------------------------------------------------------------- */

typedef enum {
    U_RELU, U_GELU, U_GELU_TANH, U_SILU, U_SIGMOID, U_TANH, U_EXP, U_LOG, U_SQRT, U_RSQRT,
    U_RECIPROCAL, U_ERF, U_NEG, U_ABS, U_SOFTPLUS, U_ELU, U_MISH
} unary_kind;

static const struct { const char *zName; unary_kind kind; } aUnaryName[] = {
    { "relu", U_RELU }, { "gelu", U_GELU }, { "silu", U_SILU }, { "sigmoid", U_SIGMOID },
    { "tanh", U_TANH }, { "exp", U_EXP }, { "log", U_LOG }, { "sqrt", U_SQRT },
    { "rsqrt", U_RSQRT }, { "reciprocal", U_RECIPROCAL }, { "erf", U_ERF },
    { "neg", U_NEG }, { "abs", U_ABS }, { "softplus", U_SOFTPLUS }, { "elu", U_ELU },
    { "mish", U_MISH },
};

/* The attributes of softplus (beta, threshold) and elu (alpha), rounded to the compute
 * precision as torch casts them (at::native's softplus_kernel, elu_kernel). */
typedef struct {
    double beta, threshold, alpha;
} unary_attrs;

/* torch's CPU formulas, one rounding per operation (at::native's gelu, silu, sigmoid,
 * softplus, elu, mish). */
static double unary_one(const kern_ctx *pK, unary_kind kind, const unary_attrs *pA,
                        int fastNan, double x)
{
    switch (kind) {
    case U_RELU:
        /* torch.relu keeps NaN; the fast-math comparison x > 0 ? x : 0 maps it to 0
         * (fastmath_nan, jax-ml/jax#276). */
        if (fastNan) return x > 0.0 ? x : 0.0;
        return x != x ? x : (x > 0.0 ? x : 0.0);
    case U_GELU: {      /* x * 0.5 * (1 + erf(x * M_SQRT1_2)) */
        double t = kern_acc(pK, x * kern_acc(pK, M_SQRT1_2));
        double g = kern_acc(pK, 1.0 + kern_erf(pK, t));
        return kern_acc(pK, kern_acc(pK, x * 0.5) * g);
    }
    case U_GELU_TANH: { /* 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) */
        double x3 = kern_acc(pK, kern_acc(pK, x * x) * x);
        double t = kern_acc(pK, x + kern_acc(pK, kern_acc(pK, 0.044715) * x3));
        double z = kern_acc(pK, kern_acc(pK, M_SQRT2 * M_2_SQRTPI * 0.5) * t);
        double g = kern_acc(pK, 1.0 + kern_tanh(pK, z));
        return kern_acc(pK, kern_acc(pK, 0.5 * x) * g);
    }
    case U_SILU:
        return kern_acc(pK, x / kern_acc(pK, 1.0 + kern_exp(pK, -x)));
    case U_SIGMOID:
        return kern_acc(pK, 1.0 / kern_acc(pK, 1.0 + kern_exp(pK, -x)));
    case U_TANH: return kern_tanh(pK, x);
    case U_EXP: return kern_exp(pK, x);
    case U_LOG: return kern_log(pK, x);
    case U_SQRT: return kern_sqrt(pK, x);
    case U_RSQRT: return kern_acc(pK, 1.0 / kern_sqrt(pK, x));   /* 1/sqrt(-0) = -Inf */
    case U_RECIPROCAL: return kern_acc(pK, 1.0 / x);
    case U_ERF: return kern_erf(pK, x);
    case U_NEG: return -x;
    case U_ABS: return fabs(x);
    case U_SOFTPLUS: {  /* x * beta > threshold ? x : log1p(exp(x * beta)) / beta */
        double z = kern_acc(pK, x * pA->beta);
        if (z > pA->threshold) return x;
        return kern_acc(pK, kern_log1p(pK, kern_exp(pK, z)) / pA->beta);
    }
    case U_ELU:         /* x <= 0 ? (exp(x) - 1) * alpha : x */
        return x <= 0.0 ? kern_acc(pK, kern_acc(pK, kern_exp(pK, x) - 1.0) * pA->alpha) : x;
    case U_MISH:        /* x * tanh(log1p(exp(x))) */
        return kern_acc(pK, x * kern_tanh(pK, kern_log1p(pK, kern_exp(pK, x))));
    }
    return NAN;
}

int kern_unary(const parity_case *pCase, const kern_ctx *pK, uint32_t defects, double *aOut,
               char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCase->aIn[0];
    const char *zOp = pCase->spec.zOp;
    int fastNan = (defects & PARITY_DEFECT_FASTMATH_NAN) != 0;
    unary_kind kind = U_RELU;
    unary_attrs attrs = { 1.0, 20.0, 1.0 };
    size_t i;
    uint64_t k;
    int found = 0;

    for (i = 0; i < sizeof aUnaryName / sizeof aUnaryName[0]; i++)
        if (strcmp(aUnaryName[i].zName, zOp) == 0) { kind = aUnaryName[i].kind; found = 1; }
    if (!found) {
        snprintf(zErr, nErr, "builtin %s: not a unary op", zOp);
        return -1;
    }
    if (kind == U_GELU) {
        const parity_attr *p = parity_attr_find(pCase->aParam, pCase->nParam, "approximate");
        if (p && p->kind == PARITY_ATTR_STRING && p->n == 1 && p->azStr && p->azStr[0] &&
            strcmp(p->azStr[0], "tanh") == 0)
            kind = U_GELU_TANH;
        else if (p && !(p->kind == PARITY_ATTR_STRING && p->n == 1 && p->azStr &&
                        p->azStr[0] && strcmp(p->azStr[0], "none") == 0)) {
            snprintf(zErr, nErr, "builtin gelu: 'approximate' must be \"none\" or \"tanh\"");
            return -1;
        }
    }
    if (parity_param_float(pCase->aParam, pCase->nParam, "beta", &attrs.beta, zErr, nErr) < 0
        || parity_param_float(pCase->aParam, pCase->nParam, "threshold", &attrs.threshold, zErr,
                              nErr) < 0
        || parity_param_float(pCase->aParam, pCase->nParam, "alpha", &attrs.alpha, zErr, nErr) < 0)
        return -1;
    attrs.beta = kern_acc(pK, attrs.beta);
    attrs.threshold = kern_acc(pK, attrs.threshold);
    attrs.alpha = kern_acc(pK, attrs.alpha);
    if (out_count_check(pCase, pX->nElem, zErr, nErr) != 0) return -1;
    for (k = 0; k < pX->nElem; k++)
        aOut[k] = kern_out(pK, unary_one(pK, kind, &attrs, fastNan,
                                         kern_acc(pK, pX->aValue[k])));
    return 0;
}

/* ---- binary --------------------------------------------------------------------------- */

typedef enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN } binary_kind;

static const struct { const char *zName; binary_kind kind; } aBinaryName[] = {
    { "add", B_ADD }, { "sub", B_SUB }, { "mul", B_MUL }, { "div", B_DIV },
    { "maximum", B_MAX }, { "minimum", B_MIN },
};

int kern_binary(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                double *aOut, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCase->aIn[0], *pY = &pCase->aIn[1];
    const char *zOp = pCase->spec.zOp;
    uint64_t aStrX[PARITY_MAX_RANK], aStrY[PARITY_MAX_RANK], aIdx[PARITY_MAX_RANK] = { 0 };
    uint64_t offX = 0, offY = 0, i;
    int rank = pCase->outRank, d, found = 0;
    int fastNan = (defects & PARITY_DEFECT_FASTMATH_NAN) != 0;
    binary_kind kind = B_ADD;
    double alpha = 1.0;
    size_t j;

    for (j = 0; j < sizeof aBinaryName / sizeof aBinaryName[0]; j++)
        if (strcmp(aBinaryName[j].zName, zOp) == 0) { kind = aBinaryName[j].kind; found = 1; }
    if (!found) {
        snprintf(zErr, nErr, "builtin %s: not a binary op", zOp);
        return -1;
    }
    if (parity_param_float(pCase->aParam, pCase->nParam, "alpha", &alpha, zErr, nErr) < 0)
        return -1;
    if (batch_strides(rank, pCase->aOutDim, pX->aDim, pX->rank, 1, aStrX) != 0 ||
        batch_strides(rank, pCase->aOutDim, pY->aDim, pY->rank, 1, aStrY) != 0) {
        snprintf(zErr, nErr, "builtin %s: the operands do not broadcast to the output", zOp);
        return -1;
    }
    alpha = kern_acc(pK, alpha);   /* torch casts the scalar to the opmath type */
    for (i = 0; i < pCase->nOut; i++) {
        double x = kern_acc(pK, pX->aValue[offX]), y = kern_acc(pK, pY->aValue[offY]), r;
        switch (kind) {
        case B_ADD:
            r = alpha == 1.0 ? kern_acc(pK, x + y) : kern_acc(pK, x + kern_acc(pK, alpha * y));
            break;
        case B_SUB:
            r = alpha == 1.0 ? kern_acc(pK, x - y) : kern_acc(pK, x - kern_acc(pK, alpha * y));
            break;
        case B_MUL: r = kern_acc(pK, x * y); break;
        case B_DIV: r = kern_acc(pK, x / y); break;
        /* Fast-math: the non-NaN operand wins (fastmath_nan, jax-ml/jax#276). */
        case B_MAX: r = fastNan ? fmax(x, y) : kern_max(x, y); break;
        default: r = fastNan ? fmin(x, y) : kern_min(x, y); break;
        }
        aOut[i] = kern_out(pK, r);
        for (d = rank - 1; d >= 0; d--) {   /* odometer over the output dims */
            offX += aStrX[d];
            offY += aStrY[d];
            if (++aIdx[d] < pCase->aOutDim[d]) break;
            offX -= aIdx[d] * aStrX[d];
            offY -= aIdx[d] * aStrY[d];
            aIdx[d] = 0;
        }
    }
    return 0;
}

/* ---- layout and cast ------------------------------------------------------------------ */

/* The permutation transpose (dim0, dim1) or permute (dims) applies: output dim d reads
 * input dim aPerm[d]. */
static int layout_perm(const parity_case *pCase, int *aPerm, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCase->aIn[0];
    const parity_attr *aA = pCase->aParam;
    size_t nA = pCase->nParam;
    int d;
    for (d = 0; d < pX->rank; d++) aPerm[d] = d;
    if (strcmp(pCase->spec.zOp, "transpose") == 0) {
        int64_t dim0 = 0, dim1 = 0;
        int w0, w1;
        if (parity_param_int(aA, nA, "dim0", &dim0, zErr, nErr) != 1 ||
            parity_param_int(aA, nA, "dim1", &dim1, zErr, nErr) != 1) {
            snprintf(zErr, nErr, "builtin transpose: needs integer attributes dim0 and dim1");
            return -1;
        }
        w0 = parity_wrap_dim(dim0, pX->rank);
        w1 = parity_wrap_dim(dim1, pX->rank);
        if (w0 < 0 || w1 < 0) {
            snprintf(zErr, nErr, "builtin transpose: dim out of range");
            return -1;
        }
        if (pX->rank > 0) {
            aPerm[w0] = w1;
            aPerm[w1] = w0;
        }
    } else {
        int64_t aDims[PARITY_MAX_RANK];
        int aSeen[PARITY_MAX_RANK] = { 0 };
        size_t n = 0, i;
        if (parity_param_ints(aA, nA, "dims", aDims, PARITY_MAX_RANK, &n, zErr, nErr) != 1 ||
            n != (size_t)pX->rank) {
            snprintf(zErr, nErr, "builtin permute: 'dims' must list every dim once");
            return -1;
        }
        for (i = 0; i < n; i++) {
            int w = parity_wrap_dim(aDims[i], pX->rank);
            if (w < 0 || aSeen[w]++) {
                snprintf(zErr, nErr, "builtin permute: 'dims' must list every dim once");
                return -1;
            }
            aPerm[i] = w;
        }
    }
    for (d = 0; d < pX->rank; d++)
        if (d >= pCase->outRank || pCase->aOutDim[d] != pX->aDim[aPerm[d]]) {
            snprintf(zErr, nErr, "builtin %s: output shape is not the permuted input shape",
                     pCase->spec.zOp);
            return -1;
        }
    return 0;
}

int kern_layout(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                double *aOut, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCase->aIn[0];
    uint64_t aInStride[PARITY_MAX_RANK], aStr[PARITY_MAX_RANK], aIdx[PARITY_MAX_RANK] = { 0 };
    uint64_t stride = 1, off = 0, i;
    int aPerm[PARITY_MAX_RANK], d;
    (void)defects;

    if (out_count_check(pCase, pX->nElem, zErr, nErr) != 0) return -1;
    if (strcmp(pCase->spec.zOp, "reshape") == 0) {
        for (i = 0; i < pX->nElem; i++) aOut[i] = kern_out(pK, pX->aValue[i]);
        return 0;
    }
    if (layout_perm(pCase, aPerm, zErr, nErr) != 0) return -1;
    for (d = pX->rank - 1; d >= 0; d--) {
        aInStride[d] = stride;
        stride *= pX->aDim[d];
    }
    for (d = 0; d < pX->rank; d++) aStr[d] = aInStride[aPerm[d]];
    for (i = 0; i < pX->nElem; i++) {
        aOut[i] = kern_out(pK, pX->aValue[off]);
        for (d = pX->rank - 1; d >= 0; d--) {
            off += aStr[d];
            if (++aIdx[d] < pCase->aOutDim[d]) break;
            off -= aIdx[d] * aStr[d];
            aIdx[d] = 0;
        }
    }
    return 0;
}

/* x converted to an integer or bool dtype as torch's cast does: bool is x != 0 (NaN is
 * true); from a float, truncation toward zero (C's static_cast), and 0 where that is
 * undefined (NaN, Inf, out of range: the registry accepts any value there); from an
 * integer, two's complement wrap to the target width. */
static double cast_to_int(double x, parity_dtype from, parity_dtype to)
{
    int bits = (int)parity_dtype_size(to) * 8;
    int isSigned = to == PARITY_DT_I8 || to == PARITY_DT_I16 || to == PARITY_DT_I32 ||
                   to == PARITY_DT_I64;
    double lo = isSigned ? -ldexp(1.0, bits - 1) : 0.0;
    double hiExcl = ldexp(1.0, isSigned ? bits - 1 : bits);
    uint64_t v;
    if (to == PARITY_DT_BOOL) return x != 0.0 ? 1.0 : 0.0;
    if (parity_dtype_is_float(from)) {
        double t = trunc(x);
        return (isfinite(t) && t >= lo && t < hiExcl) ? t : 0.0;
    }
    if (!(fabs(x) <= 9007199254740992.0)) return 0.0;   /* decoded inexactly: undefined */
    v = (uint64_t)(int64_t)x;
    if (bits == 64) return isSigned ? (double)(int64_t)v : (double)v;
    v &= (UINT64_C(1) << bits) - 1;
    if (isSigned && (v >> (bits - 1))) return (double)(int64_t)(v | ~((UINT64_C(1) << bits) - 1));
    return (double)v;
}

int kern_cast(const parity_case *pCase, const kern_ctx *pK, uint32_t defects, double *aOut,
              char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCase->aIn[0];
    int toFloat = parity_dtype_is_float(pK->out);
    uint64_t i;
    (void)defects;
    if (out_count_check(pCase, pX->nElem, zErr, nErr) != 0) return -1;
    /* One correct rounding of the exact input: the cast has one right answer. */
    for (i = 0; i < pX->nElem; i++)
        aOut[i] = toFloat ? parity_dtype_round(pK->out, pX->aValue[i])
                          : cast_to_int(pX->aValue[i], pX->dtype, pK->out);
    return 0;
}

/* ---- rows ----------------------------------------------------------------------------- */

static int rows_finish(kern_rows *pR, const parity_case *pCase,
                       const unsigned char *aReduce, int same, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCase->aIn[0];
    uint64_t aIdx[PARITY_MAX_RANK] = { 0 }, k, off = 0, n;
    int d;

    parity_rows_init(&pR->rows, pX, aReduce);
    if (out_count_check(pCase, same ? pX->nElem : pR->rows.nRow, zErr, nErr) != 0) return -1;
    n = pR->rows.n;
    pR->aRel = malloc((n + 1) * sizeof(uint64_t));
    pR->aBuf = malloc((n + 16) * sizeof(double));
    if (!pR->aRel || !pR->aBuf) {
        kern_rows_close(pR);
        snprintf(zErr, nErr, "builtin %s: out of memory", pCase->spec.zOp);
        return -1;
    }
    for (k = 0; k < n; k++) {
        pR->aRel[k] = off;
        for (d = pR->rows.nRed - 1; d >= 0; d--) {   /* odometer over the reduced dims */
            off += pR->rows.aRedStride[d];
            if (++aIdx[d] < pR->rows.aRedDim[d]) break;
            off -= aIdx[d] * pR->rows.aRedStride[d];
            aIdx[d] = 0;
        }
    }
    return 0;
}

int kern_rows_open(kern_rows *pR, const parity_case *pCase, const char *zAttr, int allowList,
                   int allIfAbsent, int64_t defDim, int same, char *zErr, size_t nErr)
{
    unsigned char aReduce[PARITY_MAX_RANK];
    memset(pR, 0, sizeof *pR);
    if (parity_rows_parse_dim(pCase->spec.zOp, &pCase->aIn[0], pCase->aParam, pCase->nParam,
                              zAttr, allowList, allIfAbsent, defDim, aReduce, zErr, nErr) != 0)
        return -1;
    return rows_finish(pR, pCase, aReduce, same, zErr, nErr);
}

void kern_rows_close(kern_rows *pR)
{
    free(pR->aRel);
    free(pR->aBuf);
    pR->aRel = NULL;
    pR->aBuf = NULL;
}

void kern_rows_gather(kern_rows *pR, const kern_ctx *pK, const double *x, uint64_t iRow)
{
    uint64_t base = parity_rows_offset(&pR->rows, iRow, 0), k;
    for (k = 0; k < pR->rows.n; k++) pR->aBuf[k] = kern_acc(pK, x[base + pR->aRel[k]]);
}

void kern_rows_scatter(const kern_rows *pR, const kern_ctx *pK, uint64_t iRow,
                       const double *aVal, double *aOut)
{
    uint64_t base = parity_rows_offset(&pR->rows, iRow, 0), k;
    for (k = 0; k < pR->rows.n; k++) aOut[base + pR->aRel[k]] = kern_out(pK, aVal[k]);
}

int kern_rows_run(kern_rows *pR, const parity_case *pCase, const kern_ctx *pK, int same,
                  kern_row_fn xRow, void *pArg, double *aOut)
{
    uint64_t iRow;
    for (iRow = 0; iRow < pR->rows.nRow; iRow++) {
        double v;
        kern_rows_gather(pR, pK, pCase->aIn[0].aValue, iRow);
        v = xRow(pK, pR->aBuf, pR->rows.n, pArg);
        if (same) kern_rows_scatter(pR, pK, iRow, pR->aBuf, aOut);
        else aOut[iRow] = kern_out(pK, v);
    }
    kern_rows_close(pR);
    return 0;
}

int kern_reduce_open(kern_rows *pR, const parity_case *pCase, char *zErr, size_t nErr)
{
    const char *zOp = pCase->spec.zOp;
    if (kern_rows_open(pR, pCase, "dim", 1, 1, 0, 0, zErr, nErr) != 0) return -1;
    if (pR->rows.n == 0 && (strcmp(zOp, "amax") == 0 || strcmp(zOp, "amin") == 0)) {
        kern_rows_close(pR);
        snprintf(zErr, nErr, "builtin %s: reduction over an empty dim", zOp);
        return -1;
    }
    return 0;
}

int kern_var_open(kern_rows *pR, const parity_case *pCase, const kern_ctx *pK,
                  double *pDivisor, char *zErr, size_t nErr)
{
    double correction = 1.0, D;
    int64_t unbiased = 1;
    int rc;
    rc = parity_param_float(pCase->aParam, pCase->nParam, "correction", &correction, zErr,
                            nErr);
    if (rc < 0) return -1;
    if (rc == 0) {
        if (parity_param_int(pCase->aParam, pCase->nParam, "unbiased", &unbiased, zErr,
                             nErr) < 0)
            return -1;
        correction = (double)unbiased;
    }
    if (kern_reduce_open(pR, pCase, zErr, nErr) != 0) return -1;
    /* torch divides by max(n - correction, 0): 0 makes Inf (or NaN for M2 = 0). */
    D = (double)pR->rows.n - correction;
    *pDivisor = kern_acc(pK, D > 0.0 ? D : 0.0);
    return 0;
}

int kern_norm_open(kern_norm *pN, const parity_case *pCase, const kern_ctx *pK, int isRms,
                   char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCase->aIn[0];
    const char *zOp = pCase->spec.zOp;
    unsigned char aReduce[PARITY_MAX_RANK] = { 0 };
    int64_t aNorm[PARITY_MAX_RANK];
    size_t nNorm = 0, i;
    uint64_t nn = 1;
    int rc;

    memset(pN, 0, sizeof *pN);
    /* eps: layer_norm 1e-5; rms_norm torch.finfo(dtype).eps = 2 u of the input dtype. */
    pN->eps = isRms ? 2.0 * parity_unit_roundoff(pX->dtype) : 1e-5;
    if (parity_param_float(pCase->aParam, pCase->nParam, "eps", &pN->eps, zErr, nErr) < 0)
        return -1;
    rc = parity_param_ints(pCase->aParam, pCase->nParam, "normalized_shape", aNorm,
                           PARITY_MAX_RANK, &nNorm, zErr, nErr);
    if (rc < 0) return -1;
    if (rc == 0) {   /* the weight's shape, else the last dim */
        if (pCase->nIn >= 2) {
            nNorm = (size_t)pCase->aIn[1].rank;
            for (i = 0; i < nNorm; i++) aNorm[i] = (int64_t)pCase->aIn[1].aDim[i];
        } else if (pX->rank > 0) {
            nNorm = 1;
            aNorm[0] = (int64_t)pX->aDim[pX->rank - 1];
        }
    }
    if (nNorm == 0 || (int)nNorm > pX->rank) {
        snprintf(zErr, nErr, "builtin %s: normalized_shape must name trailing dims", zOp);
        return -1;
    }
    for (i = 0; i < nNorm; i++) {
        int d = pX->rank - (int)nNorm + (int)i;
        if (aNorm[i] < 0 || (uint64_t)aNorm[i] != pX->aDim[d]) {
            snprintf(zErr, nErr, "builtin %s: normalized_shape does not match the input", zOp);
            return -1;
        }
        aReduce[d] = 1;
        nn *= pX->aDim[d];
    }
    for (i = 1; i < pCase->nIn; i++)
        if (pCase->aIn[i].nElem != nn) {
            snprintf(zErr, nErr, "builtin %s: weight and bias must have normalized_shape", zOp);
            return -1;
        }
    if (rows_finish(&pN->r, pCase, aReduce, 1, zErr, nErr) != 0) return -1;
    pN->pWeight = pCase->nIn >= 2 ? pCase->aIn[1].aValue : NULL;
    pN->pBias = !isRms && pCase->nIn >= 3 ? pCase->aIn[2].aValue : NULL;
    pN->eps = kern_acc(pK, pN->eps);
    return 0;
}

double kern_rstd(const kern_ctx *pK, double var, double eps)
{
    return kern_acc(pK, 1.0 / kern_sqrt(pK, kern_acc(pK, var + eps)));
}

void kern_norm_apply(const kern_norm *pN, const kern_ctx *pK, double *x, double mean,
                     double rstd)
{
    uint64_t k;
    for (k = 0; k < pN->r.rows.n; k++) {
        double y = kern_acc(pK, kern_acc(pK, x[k] - mean) * rstd);
        if (pN->pWeight) y = kern_acc(pK, y * kern_acc(pK, pN->pWeight[k]));
        if (pN->pBias) y = kern_acc(pK, y + kern_acc(pK, pN->pBias[k]));
        x[k] = y;
    }
}

/* ---- matmul, bmm, linear ------------------------------------------------------------- */

static int gemm_shape(kern_gemm *pG, const parity_case *pCase, char *zErr, size_t nErr)
{
    const parity_operand *pA = &pCase->aIn[0], *pB = &pCase->aIn[1];
    const char *zOp = pCase->spec.zOp;
    uint64_t Kb;
    int nBatchA, nBatchB, d;

    if (strcmp(zOp, "linear") == 0) {
        if (pA->rank < 1 || pB->rank != 2 || pA->aDim[pA->rank - 1] != pB->aDim[1]) {
            snprintf(zErr, nErr, "builtin linear: needs x[..., in] and weight[out, in]");
            return -1;
        }
        pG->K = pB->aDim[1];
        pG->N = pB->aDim[0];
        pG->M = 1;
        for (d = 0; d < pA->rank - 1; d++) pG->M *= pA->aDim[d];
        pG->nMat = 1;
        if (pCase->nIn == 3 && (pCase->aIn[2].rank != 1 || pCase->aIn[2].aDim[0] != pG->N)) {
            snprintf(zErr, nErr, "builtin linear: bias must be [out]");
            return -1;
        }
        return 0;
    }
    if (pA->rank < 1 || pB->rank < 1 ||
        (strcmp(zOp, "bmm") == 0 && (pA->rank != 3 || pB->rank != 3))) {
        snprintf(zErr, nErr, "builtin %s: operand ranks do not fit", zOp);
        return -1;
    }
    /* torch.matmul: a 1-D left operand is a row, a 1-D right one a column. */
    if (pA->rank == 1) { pG->M = 1; pG->K = pA->aDim[0]; nBatchA = 0; }
    else { pG->M = pA->aDim[pA->rank - 2]; pG->K = pA->aDim[pA->rank - 1]; nBatchA = pA->rank - 2; }
    if (pB->rank == 1) { pG->N = 1; Kb = pB->aDim[0]; nBatchB = 0; }
    else { pG->N = pB->aDim[pB->rank - 1]; Kb = pB->aDim[pB->rank - 2]; nBatchB = pB->rank - 2; }
    if (Kb != pG->K) {
        snprintf(zErr, nErr, "builtin %s: inner dimensions differ", zOp);
        return -1;
    }
    pG->nBatch = nBatchA > nBatchB ? nBatchA : nBatchB;
    pG->nMat = 1;
    for (d = 0; d < pG->nBatch; d++) {
        int iA = nBatchA - (pG->nBatch - d), iB = nBatchB - (pG->nBatch - d);
        uint64_t dimA = iA >= 0 ? pA->aDim[iA] : 1, dimB = iB >= 0 ? pB->aDim[iB] : 1;
        pG->aBatchDim[d] = dimA > dimB ? dimA : dimB;
        pG->nMat *= pG->aBatchDim[d];
    }
    if (batch_strides(pG->nBatch, pG->aBatchDim, pA->aDim, nBatchA, pG->M * pG->K,
                      pG->aStrA) != 0 ||
        batch_strides(pG->nBatch, pG->aBatchDim, pB->aDim, nBatchB, pG->K * pG->N,
                      pG->aStrB) != 0) {
        snprintf(zErr, nErr, "builtin %s: batch dimensions do not broadcast", zOp);
        return -1;
    }
    return 0;
}

int kern_gemm_open(kern_gemm *pG, const parity_case *pCase, const kern_ctx *pK, char *zErr,
                   size_t nErr)
{
    const parity_operand *pB = &pCase->aIn[1];
    int isLinear = strcmp(pCase->spec.zOp, "linear") == 0;
    uint64_t m, k, j, KN, nMatB;

    memset(pG, 0, sizeof *pG);
    if (gemm_shape(pG, pCase, zErr, nErr) != 0 ||
        out_count_check(pCase, pG->nMat * pG->M * pG->N, zErr, nErr) != 0)
        return -1;
    pG->aA = acc_copy(pK, &pCase->aIn[0]);
    pG->aBT = malloc((pB->nElem + 1) * sizeof(double));
    if (isLinear && pCase->nIn == 3) pG->aBias = acc_copy(pK, &pCase->aIn[2]);
    if (!pG->aA || !pG->aBT || (isLinear && pCase->nIn == 3 && !pG->aBias)) {
        kern_gemm_close(pG);
        snprintf(zErr, nErr, "builtin %s: out of memory", pCase->spec.zOp);
        return -1;
    }
    pG->pBias = pG->aBias;
    KN = pG->K * pG->N;
    nMatB = KN ? pB->nElem / KN : 0;
    if (isLinear || pB->rank == 1) {
        /* The weight [out, in] (or a column vector) already has K contiguous. */
        for (k = 0; k < pB->nElem; k++) pG->aBT[k] = kern_acc(pK, pB->aValue[k]);
    } else {
        for (m = 0; m < nMatB; m++)
            for (k = 0; k < pG->K; k++)
                for (j = 0; j < pG->N; j++)
                    pG->aBT[m * KN + j * pG->K + k] =
                        kern_acc(pK, pB->aValue[m * KN + k * pG->N + j]);
    }
    return 0;
}

void kern_gemm_close(kern_gemm *pG)
{
    free(pG->aA);
    free(pG->aBT);
    free(pG->aBias);
    pG->aA = pG->aBT = pG->aBias = NULL;
}

void kern_gemm_mat(const kern_gemm *pG, uint64_t iMat, uint64_t *pOffA, uint64_t *pOffB)
{
    uint64_t offA = 0, offB = 0;
    int d;
    for (d = pG->nBatch - 1; d >= 0; d--) {
        uint64_t idx = iMat % pG->aBatchDim[d];
        iMat /= pG->aBatchDim[d];
        offA += idx * pG->aStrA[d];
        offB += idx * pG->aStrB[d];
    }
    *pOffA = offA;
    *pOffB = offB;
}

/* ---- conv2d --------------------------------------------------------------------------- */

/* An int-or-pair attribute, as op_conv2d.c reads it. */
static int conv_pair(const parity_case *pCase, const char *zName, int64_t def, int64_t *a,
                     char *zErr, size_t nErr)
{
    int64_t v[2];
    size_t n = 0;
    int rc = parity_param_ints(pCase->aParam, pCase->nParam, zName, v, 2, &n, zErr, nErr);
    if (rc == 0) { a[0] = a[1] = def; return 0; }
    if (rc == 1 && (n == 1 || n == 2)) {
        a[0] = v[0];
        a[1] = v[n - 1];
        return 0;
    }
    snprintf(zErr, nErr, "builtin conv2d: attribute '%s' must be an int or a pair", zName);
    return -1;
}

static int conv_shape(kern_conv *pC, const parity_case *pCase, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCase->aIn[0], *pW = &pCase->aIn[1];
    const parity_attr *pPad = parity_attr_find(pCase->aParam, pCase->nParam, "padding");
    int64_t stride[2], pad[2] = { 0, 0 }, dil[2], after[2], groups = 1, ext[2], in[2];
    int batched = pX->rank == 4, same = 0, i;

    if ((pX->rank != 4 && pX->rank != 3) || pW->rank != 4) {
        snprintf(zErr, nErr, "builtin conv2d: needs input [N, C, H, W] and weight [O, C/g, kH, kW]");
        return -1;
    }
    pC->N = batched ? pX->aDim[0] : 1;
    pC->C = pX->aDim[batched];
    pC->H = pX->aDim[batched + 1];
    pC->W = pX->aDim[batched + 2];
    pC->O = pW->aDim[0];
    pC->Cg = pW->aDim[1];
    pC->kH = pW->aDim[2];
    pC->kW = pW->aDim[3];
    if (conv_pair(pCase, "stride", 1, stride, zErr, nErr) != 0 ||
        conv_pair(pCase, "dilation", 1, dil, zErr, nErr) != 0)
        return -1;
    if (pPad && pPad->kind == PARITY_ATTR_STRING && pPad->n == 1) {
        same = strcmp(pPad->azStr[0], "same") == 0;
    } else if (conv_pair(pCase, "padding", 0, pad, zErr, nErr) != 0) {
        return -1;
    }
    if (parity_param_int(pCase->aParam, pCase->nParam, "groups", &groups, zErr, nErr) < 0)
        return -1;
    if (stride[0] <= 0 || stride[1] <= 0 || dil[0] <= 0 || dil[1] <= 0 || pad[0] < 0 ||
        pad[1] < 0 || groups <= 0 || pC->C % (uint64_t)groups != 0 ||
        pC->O % (uint64_t)groups != 0 || pC->Cg * (uint64_t)groups != pC->C ||
        pC->kH == 0 || pC->kW == 0) {
        snprintf(zErr, nErr, "builtin conv2d: stride, padding, dilation or groups do not fit");
        return -1;
    }
    pC->G = (uint64_t)groups;
    pC->Og = pC->O / pC->G;
    for (i = 0; i < 2; i++) {
        int64_t k = (int64_t)(i == 0 ? pC->kH : pC->kW);
        /* torch's 'same': total dil (k - 1), the smaller half before. */
        if (same) pad[i] = dil[i] * (k - 1) / 2;
        after[i] = same ? dil[i] * (k - 1) - pad[i] : pad[i];
        in[i] = (int64_t)(i == 0 ? pC->H : pC->W) + pad[i] + after[i];
        ext[i] = dil[i] * (k - 1) + 1;
        if (ext[i] > in[i]) {
            snprintf(zErr, nErr, "builtin conv2d: kernel larger than the padded input");
            return -1;
        }
    }
    pC->Ho = (uint64_t)((in[0] - ext[0]) / stride[0] + 1);
    pC->Wo = (uint64_t)((in[1] - ext[1]) / stride[1] + 1);
    pC->sH = stride[0]; pC->sW = stride[1];
    pC->pH = pad[0]; pC->pW = pad[1];
    pC->dH = dil[0]; pC->dW = dil[1];
    pC->K = pC->Cg * pC->kH * pC->kW;
    if (pCase->nIn == 3 && (pCase->aIn[2].rank != 1 || pCase->aIn[2].aDim[0] != pC->O)) {
        snprintf(zErr, nErr, "builtin conv2d: bias must be [O]");
        return -1;
    }
    return out_count_check(pCase, pC->N * pC->O * pC->Ho * pC->Wo, zErr, nErr);
}

int kern_conv_open(kern_conv *pC, const parity_case *pCase, const kern_ctx *pK, char *zErr,
                   size_t nErr)
{
    memset(pC, 0, sizeof *pC);
    if (conv_shape(pC, pCase, zErr, nErr) != 0) return -1;
    pC->aX = acc_copy(pK, &pCase->aIn[0]);
    pC->aW = acc_copy(pK, &pCase->aIn[1]);
    if (pCase->nIn == 3) pC->aBias = acc_copy(pK, &pCase->aIn[2]);
    pC->aTapX = malloc((pC->K + 1) * sizeof(double));
    pC->aTapW = malloc((pC->K + 1) * sizeof(double));
    if (!pC->aX || !pC->aW || (pCase->nIn == 3 && !pC->aBias) || !pC->aTapX || !pC->aTapW) {
        kern_conv_close(pC);
        snprintf(zErr, nErr, "builtin conv2d: out of memory");
        return -1;
    }
    return 0;
}

void kern_conv_close(kern_conv *pC)
{
    free(pC->aX);
    free(pC->aW);
    free(pC->aBias);
    free(pC->aTapX);
    free(pC->aTapW);
    memset(pC, 0, sizeof *pC);
}

uint64_t kern_conv_gather(kern_conv *pC, uint64_t linear, uint64_t *pO)
{
    uint64_t ox = linear % pC->Wo, oy, o, n, g, c, i, j, nTap = 0;
    linear /= pC->Wo;
    oy = linear % pC->Ho;
    linear /= pC->Ho;
    o = linear % pC->O;
    n = linear / pC->O;
    g = o / pC->Og;
    for (c = 0; c < pC->Cg; c++) {
        const double *xc = pC->aX + ((n * pC->C + g * pC->Cg + c) * pC->H) * pC->W;
        const double *wc = pC->aW + (o * pC->Cg + c) * pC->kH * pC->kW;
        for (i = 0; i < pC->kH; i++) {
            int64_t iy = (int64_t)oy * pC->sH - pC->pH + (int64_t)i * pC->dH;
            if (iy < 0 || iy >= (int64_t)pC->H) continue;
            for (j = 0; j < pC->kW; j++) {
                int64_t ix = (int64_t)ox * pC->sW - pC->pW + (int64_t)j * pC->dW;
                if (ix < 0 || ix >= (int64_t)pC->W) continue;
                pC->aTapX[nTap] = xc[(uint64_t)iy * pC->W + (uint64_t)ix];
                pC->aTapW[nTap] = wc[i * pC->kW + j];
                nTap++;
            }
        }
    }
    *pO = o;
    return nTap;
}

/* ---- scaled_dot_product_attention ----------------------------------------------------- */

static int sdpa_shape(kern_sdpa *pA, const parity_case *pCase, char *zErr, size_t nErr)
{
    const parity_operand *pQ = &pCase->aIn[0], *pK = &pCase->aIn[1], *pV = &pCase->aIn[2];
    int nQ, nK, nV, d;
    uint64_t nBatchTotal = 1;

    if (pQ->rank < 2 || pK->rank < 2 || pV->rank < 2) goto bad;
    pA->L = pQ->aDim[pQ->rank - 2];
    pA->E = pQ->aDim[pQ->rank - 1];
    pA->S = pK->aDim[pK->rank - 2];
    pA->Ev = pV->aDim[pV->rank - 1];
    if (pK->aDim[pK->rank - 1] != pA->E || pV->aDim[pV->rank - 2] != pA->S) goto bad;
    nQ = pQ->rank - 2;
    nK = pK->rank - 2;
    nV = pV->rank - 2;
    pA->nBatch = nQ > nK ? nQ : nK;
    if (nV > pA->nBatch) pA->nBatch = nV;
    for (d = 0; d < pA->nBatch; d++) {
        int iQ = nQ - (pA->nBatch - d), iK = nK - (pA->nBatch - d), iV = nV - (pA->nBatch - d);
        uint64_t dim = 1;
        if (iQ >= 0 && pQ->aDim[iQ] != 1) dim = pQ->aDim[iQ];
        if (iK >= 0 && pK->aDim[iK] != 1) dim = pK->aDim[iK];
        if (iV >= 0 && pV->aDim[iV] != 1) dim = pV->aDim[iV];
        pA->aBatchDim[d] = dim;
        nBatchTotal *= dim;
    }
    if (batch_strides(pA->nBatch, pA->aBatchDim, pQ->aDim, nQ, pA->L * pA->E, pA->aStrQ) ||
        batch_strides(pA->nBatch, pA->aBatchDim, pK->aDim, nK, pA->S * pA->E, pA->aStrK) ||
        batch_strides(pA->nBatch, pA->aBatchDim, pV->aDim, nV, pA->S * pA->Ev, pA->aStrV))
        goto bad;
    if (pCase->nIn == 4) {
        const parity_operand *pM = &pCase->aIn[3];
        uint64_t aFull[PARITY_MAX_RANK + 2];
        for (d = 0; d < pA->nBatch; d++) aFull[d] = pA->aBatchDim[d];
        aFull[pA->nBatch] = pA->L;
        aFull[pA->nBatch + 1] = pA->S;
        pA->maskKind = pM->dtype == PARITY_DT_BOOL ? 1 : 2;
        if (batch_strides(pA->nBatch + 2, aFull, pM->aDim, pM->rank, 1, pA->aStrM) != 0)
            goto bad;
    }
    pA->nRow = nBatchTotal * pA->L;
    return out_count_check(pCase, pA->nRow * pA->Ev, zErr, nErr);
bad:
    snprintf(zErr, nErr, "builtin scaled_dot_product_attention: q, k, v, mask shapes do not fit");
    return -1;
}

int kern_sdpa_open(kern_sdpa *pA, const parity_case *pCase, const kern_ctx *pK, char *zErr,
                   size_t nErr)
{
    int64_t causal = 0;
    double scale = 0.0;
    int rc;

    memset(pA, 0, sizeof *pA);
    if (sdpa_shape(pA, pCase, zErr, nErr) != 0) return -1;
    if (parity_param_int(pCase->aParam, pCase->nParam, "is_causal", &causal, zErr, nErr) < 0)
        return -1;
    rc = parity_param_float(pCase->aParam, pCase->nParam, "scale", &scale, zErr, nErr);
    if (rc < 0) return -1;
    if (rc == 0) scale = 1.0 / sqrt((double)pA->E);
    pA->causal = causal != 0;
    pA->scale = kern_acc(pK, scale);
    pA->aQ = acc_copy(pK, &pCase->aIn[0]);
    pA->aK = acc_copy(pK, &pCase->aIn[1]);
    pA->aV = acc_copy(pK, &pCase->aIn[2]);
    if (pCase->nIn == 4) pA->aM = acc_copy(pK, &pCase->aIn[3]);
    pA->aScore = malloc((pA->S + 1) * sizeof(double));
    pA->aRowOut = malloc((pA->Ev + 1) * sizeof(double));
    if (!pA->aQ || !pA->aK || !pA->aV || (pCase->nIn == 4 && !pA->aM) || !pA->aScore ||
        !pA->aRowOut) {
        kern_sdpa_close(pA);
        snprintf(zErr, nErr, "builtin scaled_dot_product_attention: out of memory");
        return -1;
    }
    return 0;
}

void kern_sdpa_close(kern_sdpa *pA)
{
    free(pA->aQ);
    free(pA->aK);
    free(pA->aV);
    free(pA->aM);
    free(pA->aScore);
    free(pA->aRowOut);
    memset(pA, 0, sizeof *pA);
}

void kern_sdpa_row(const kern_sdpa *pA, uint64_t iRow, uint64_t *pQ, uint64_t *pK,
                   uint64_t *pV, uint64_t *pM, uint64_t *pStrMS)
{
    uint64_t l = iRow % pA->L, iB = iRow / pA->L, q = 0, k = 0, v = 0, m = 0;
    int d;
    for (d = pA->nBatch - 1; d >= 0; d--) {
        uint64_t idx = iB % pA->aBatchDim[d];
        iB /= pA->aBatchDim[d];
        q += idx * pA->aStrQ[d];
        k += idx * pA->aStrK[d];
        v += idx * pA->aStrV[d];
        m += idx * pA->aStrM[d];
    }
    *pQ = q + l * pA->E;
    *pK = k;
    *pV = v;
    *pM = m + l * pA->aStrM[pA->nBatch];
    *pStrMS = pA->aStrM[pA->nBatch + 1];
}

int kern_sdpa_masked(const kern_sdpa *pA, uint64_t l, uint64_t j, uint64_t mOff,
                     uint64_t strMS)
{
    if (pA->causal && j > l) return 1;
    return pA->maskKind == 1 && pA->aM[mOff + j * strMS] == 0.0;
}

double kern_sdpa_score(const kern_sdpa *pA, const kern_ctx *pK, double dot, uint64_t j,
                       uint64_t mOff, uint64_t strMS)
{
    double s = kern_acc(pK, dot * pA->scale);
    if (pA->maskKind == 2) s = kern_acc(pK, s + pA->aM[mOff + j * strMS]);
    return s;
}
