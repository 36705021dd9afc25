/*
 * kernels.c - what both builtin kernel files use (kernels_internal.h): rounding, the
 * elementwise ops, and each op's geometry as the registry works it out (the case's
 * parity_op_call, tolerance/geometry.h), so the kernels and the judge never disagree on
 * what a case means, and no shape rule is written twice.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/targets/kernels_internal.h"
#include "formats/dtype.h"
#include "tolerance/mpref.h"
#include "formats/alloc.h"

/* ---- dispatch and rounding ------------------------------------------------------------ */

/* The ops whose math is the same on both sides, found by their registry family: a unary
 * or binary op by its row in the kind tables below (its formula), a layout op or cast by
 * the family alone. */
typedef struct { const parity_op_def *pDef; int kind; } kind_row;

/* 1 with *pKind when pDef has a row among the n of aRow. */
static int kind_of(const kind_row *aRow, size_t n, const parity_op_def *pDef, int *pKind)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (aRow[i].pDef == pDef) {
            *pKind = aRow[i].kind;
            return 1;
        }
    return 0;
}

static int unary_kind_of(const parity_op_def *pDef, int *pKind);
static int binary_kind_of(const parity_op_def *pDef, int *pKind);

static kern_fn kern_find(const kern_entry *aTable, const parity_op_def *pDef)
{
    const kern_entry *p;
    int kind;
    for (p = aTable; p->pDef; p++)
        if (p->pDef == pDef) return p->xRun;
    switch (pDef->family) {
    case PARITY_FAMILY_UNARY: return unary_kind_of(pDef, &kind) ? parity_kern_unary : NULL;
    case PARITY_FAMILY_BINARY: return binary_kind_of(pDef, &kind) ? parity_kern_binary : NULL;
    case PARITY_FAMILY_TRANSPOSE:
    case PARITY_FAMILY_PERMUTE:
    case PARITY_FAMILY_RESHAPE: return parity_kern_layout;
    case PARITY_FAMILY_CAST: return parity_kern_cast;
    case PARITY_FAMILY_SLICE: return parity_kern_slice;
    case PARITY_FAMILY_EMBEDDING: return parity_kern_embedding;
    case PARITY_FAMILY_CONCAT: return parity_kern_concat;
    case PARITY_FAMILY_WHERE: return parity_kern_where;
    default: return NULL;
    }
}

int parity_kern_has(const kern_entry *aTable, const parity_op_def *pDef)
{
    return pDef && kern_find(aTable, pDef) != NULL;
}

int parity_kern_dispatch(const kern_entry *aTable, const parity_case *pCase, uint32_t defects,
                         double *aOut, char *zErr, size_t nErr)
{
    kern_fn xRun = kern_find(aTable, pCase->pDef);
    parity_op_call call;
    kern_ctx k;
    size_t i;
    int rc;

    if (!xRun) {
        snprintf(zErr, nErr, "builtin: op '%s' is not implemented", pCase->spec.zOp);
        return -1;
    }
    for (i = 0; i < pCase->nIn; i++)
        if (pCase->aIn[i].nElem > 0 && !pCase->aIn[i].aValue) {
            snprintf(zErr, nErr, "builtin %s: input %zu has no values", pCase->spec.zOp, i);
            return -1;
        }
    /* The registry's checks (input count, output dtype, shapes) and geometry. */
    if (parity_case_op_shape(pCase, &call, zErr, nErr) != 0) return -1;
    k.f32 = pCase->outDtype != PARITY_DT_F64;
    k.out = pCase->outDtype;
    k.pCall = &call;
    rc = xRun(pCase, &k, defects, aOut, zErr, nErr);
    parity_op_end(&call);
    return rc;
}

double parity_kern_exp(const kern_ctx *pK, double x)
{
    return pK->f32 ? (double)expf((float)x) : exp(x);
}

double parity_kern_log(const kern_ctx *pK, double x)
{
    return pK->f32 ? (double)logf((float)x) : log(x);
}

double parity_kern_sqrt(const kern_ctx *pK, double x)
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

/* A copy of an operand's values in the compute precision (a float64 input under a
 * float32 contract is rounded once, as a kernel loading it would). NULL when out of
 * memory. */
static double *acc_copy(const kern_ctx *pK, const parity_operand *pIn)
{
    double *a = parity_malloc((pIn->nElem + 1) * sizeof(double));
    uint64_t i;
    if (!a) return NULL;
    for (i = 0; i < pIn->nElem; i++) a[i] = kern_acc(pK, pIn->aValue[i]);
    return a;
}

/* ---- unary ---------------------------------------------------------------------------- */

typedef enum {
    U_RELU, U_GELU, U_GELU_TANH, U_SILU, U_SIGMOID, U_TANH, U_EXP, U_LOG, U_SQRT, U_RSQRT,
    U_RECIPROCAL, U_ERF, U_COS, U_SIN, U_HARDSIGMOID, U_HARDSWISH, U_NEG, U_ABS, U_SOFTPLUS,
    U_ELU, U_MISH, U_CLAMP, U_POW
} unary_kind;

static const kind_row aUnaryKind[] = {
    { &parity_op_relu, U_RELU }, { &parity_op_gelu, U_GELU }, { &parity_op_silu, U_SILU },
    { &parity_op_sigmoid, U_SIGMOID }, { &parity_op_tanh, U_TANH }, { &parity_op_exp, U_EXP },
    { &parity_op_log, U_LOG }, { &parity_op_sqrt, U_SQRT }, { &parity_op_rsqrt, U_RSQRT },
    { &parity_op_reciprocal, U_RECIPROCAL }, { &parity_op_erf, U_ERF },
    { &parity_op_cos, U_COS }, { &parity_op_sin, U_SIN },
    { &parity_op_hardsigmoid, U_HARDSIGMOID }, { &parity_op_hardswish, U_HARDSWISH },
    { &parity_op_neg, U_NEG }, { &parity_op_abs, U_ABS }, { &parity_op_softplus, U_SOFTPLUS },
    { &parity_op_elu, U_ELU }, { &parity_op_mish, U_MISH },
    { &parity_op_clamp, U_CLAMP }, { &parity_op_hardtanh, U_CLAMP }, { &parity_op_pow, U_POW },
};

static int unary_kind_of(const parity_op_def *pDef, int *pKind)
{
    return kind_of(aUnaryKind, sizeof aUnaryKind / sizeof aUnaryKind[0], pDef, pKind);
}

/* The attributes of softplus (beta, threshold) and elu (alpha), rounded to the compute
 * precision as torch casts them (at::native's softplus_kernel, elu_kernel). */
typedef struct {
    double beta, threshold, alpha;
    double lo, hi, exponent;  /* clamp, pow: the registry rounded them to x's dtype */
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
        return kern_acc(pK, x / kern_acc(pK, 1.0 + parity_kern_exp(pK, -x)));
    case U_SIGMOID:
        return kern_acc(pK, 1.0 / kern_acc(pK, 1.0 + parity_kern_exp(pK, -x)));
    case U_TANH: return kern_tanh(pK, x);
    case U_EXP: return parity_kern_exp(pK, x);
    case U_LOG: return parity_kern_log(pK, x);
    case U_SQRT: return parity_kern_sqrt(pK, x);
    case U_RSQRT: return kern_acc(pK, 1.0 / parity_kern_sqrt(pK, x));   /* 1/sqrt(-0) = -Inf */
    case U_RECIPROCAL: return kern_acc(pK, 1.0 / x);
    case U_ERF: return kern_erf(pK, x);
    case U_COS: return pK->f32 ? (double)cosf((float)x) : cos(x);
    case U_SIN: return pK->f32 ? (double)sinf((float)x) : sin(x);
    case U_HARDSIGMOID:  /* min(max(x + 3, 0), 6) / 6 (at::native hardsigmoid_kernel) */
    case U_HARDSWISH: {  /* x * min(max(x + 3, 0), 6) / 6 (hardswish_kernel) */
        double g;
        if (x != x) return x;
        g = kern_acc(pK, x + 3.0);
        g = g < 0.0 ? 0.0 : (g > 6.0 ? 6.0 : g);
        return kind == U_HARDSIGMOID ? kern_acc(pK, g / 6.0)
                                     : kern_acc(pK, kern_acc(pK, x * g) / 6.0);
    }
    case U_NEG: return -x;
    case U_ABS: return fabs(x);
    case U_SOFTPLUS: {  /* x * beta > threshold ? x : log1p(exp(x * beta)) / beta */
        double z = kern_acc(pK, x * pA->beta);
        if (z > pA->threshold) return x;
        return kern_acc(pK, kern_log1p(pK, parity_kern_exp(pK, z)) / pA->beta);
    }
    case U_ELU:         /* x <= 0 ? (exp(x) - 1) * alpha : x */
        return x <= 0.0 ? kern_acc(pK, kern_acc(pK, parity_kern_exp(pK, x) - 1.0) * pA->alpha) : x;
    case U_MISH:        /* x * tanh(log1p(exp(x))) */
        return kern_acc(pK, x * kern_tanh(pK, kern_log1p(pK, parity_kern_exp(pK, x))));
    case U_CLAMP: {     /* isnan(x) ? x : min(max(x, lo), hi) */
        double r;
        if (x != x) return x;
        r = x < pA->lo ? pA->lo : x;
        return r > pA->hi ? pA->hi : r;
    }
    case U_POW: {       /* at::native pow_tensor_scalar_kernel's special cases */
        double e = pA->exponent;
        if (e == 0.5) return parity_kern_sqrt(pK, x);
        if (e == -0.5) return kern_acc(pK, 1.0 / parity_kern_sqrt(pK, x));
        if (e == 2.0) return kern_acc(pK, x * x);
        if (e == 3.0) return kern_acc(pK, kern_acc(pK, x * x) * x);
        if (e == -1.0) return kern_acc(pK, 1.0 / x);
        if (e == -2.0) return kern_acc(pK, 1.0 / kern_acc(pK, x * x));
        return pK->f32 ? (double)powf((float)x, (float)e) : pow(x, e);
    }
    }
    return NAN;
}

int parity_kern_unary(const parity_case *pCase, const kern_ctx *pK, uint32_t defects, double *aOut,
                      char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCase->aIn[0];
    const parity_elementwise_geometry *pG = &pK->pCall->geom.elementwise;
    int fastNan = (defects & PARITY_DEFECT_FASTMATH_NAN) != 0;
    unary_kind kind;
    unary_attrs attrs;
    uint64_t k;
    int iKind;

    if (!unary_kind_of(pCase->pDef, &iKind)) {
        snprintf(zErr, nErr, "builtin %s: not a unary op", pCase->spec.zOp);
        return -1;
    }
    kind = (unary_kind)iKind;
    if (kind == U_GELU && pG->approximateTanh) kind = U_GELU_TANH;
    /* the registry's values (its defaults where the case has none), rounded to the compute
     * precision as torch casts them */
    attrs.beta = kern_acc(pK, pG->beta);
    attrs.threshold = kern_acc(pK, pG->threshold);
    attrs.alpha = kern_acc(pK, pG->alpha);
    attrs.lo = pG->lo;
    attrs.hi = pG->hi;
    attrs.exponent = kern_acc(pK, pG->exponent);
    for (k = 0; k < pX->nElem; k++)
        aOut[k] = kern_out(pK, unary_one(pK, kind, &attrs, fastNan,
                                         kern_acc(pK, pX->aValue[k])));
    (void)zErr; (void)nErr;
    return 0;
}

double parity_kern_activation(const kern_ctx *pK, const parity_op_def *pDef, int approxTanh,
                              double x)
{
    unary_attrs attrs;
    int iKind;
    unary_kind kind;
    if (!unary_kind_of(pDef, &iKind)) return NAN;
    kind = (unary_kind)iKind;
    if (kind == U_GELU && approxTanh) kind = U_GELU_TANH;
    memset(&attrs, 0, sizeof attrs);
    return unary_one(pK, kind, &attrs, 0, kern_acc(pK, x));
}

/* ---- binary --------------------------------------------------------------------------- */

typedef enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN } binary_kind;

static const kind_row aBinaryKind[] = {
    { &parity_op_add, B_ADD }, { &parity_op_sub, B_SUB }, { &parity_op_mul, B_MUL },
    { &parity_op_div, B_DIV }, { &parity_op_maximum, B_MAX }, { &parity_op_minimum, B_MIN },
};

static int binary_kind_of(const parity_op_def *pDef, int *pKind)
{
    return kind_of(aBinaryKind, sizeof aBinaryKind / sizeof aBinaryKind[0], pDef, pKind);
}

int parity_kern_binary(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                       double *aOut, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCase->aIn[0], *pY = &pCase->aIn[1];
    const parity_elementwise_geometry *pG = &pK->pCall->geom.elementwise;
    uint64_t aIdx[PARITY_MAX_RANK] = { 0 }, offX = 0, offY = 0, i;
    int rank = pCase->outRank, d;
    int fastNan = (defects & PARITY_DEFECT_FASTMATH_NAN) != 0;
    binary_kind kind;
    double alpha;
    int iKind;

    if (!binary_kind_of(pCase->pDef, &iKind)) {
        snprintf(zErr, nErr, "builtin %s: not a binary op", pCase->spec.zOp);
        return -1;
    }
    kind = (binary_kind)iKind;
    alpha = kern_acc(pK, pG->alpha);   /* torch casts the scalar to the opmath type */
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
            offX += pG->aStrideX[d];
            offY += pG->aStrideY[d];
            if (++aIdx[d] < pCase->aOutDim[d]) break;
            offX -= aIdx[d] * pG->aStrideX[d];
            offY -= aIdx[d] * pG->aStrideY[d];
            aIdx[d] = 0;
        }
    }
    return 0;
}

/* ---- layout and cast ------------------------------------------------------------------ */

int parity_kern_layout(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                       double *aOut, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCase->aIn[0];
    const int *aPerm = pK->pCall->geom.perm.aPerm;
    uint64_t aInStride[PARITY_MAX_RANK], aStr[PARITY_MAX_RANK], aIdx[PARITY_MAX_RANK] = { 0 };
    uint64_t stride = 1, off = 0, i;
    int d;
    (void)defects; (void)zErr; (void)nErr;

    if (pCase->pDef->family == PARITY_FAMILY_RESHAPE) {
        for (i = 0; i < pX->nElem; i++) aOut[i] = kern_out(pK, pX->aValue[i]);
        return 0;
    }
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

int parity_kern_cast(const parity_case *pCase, const kern_ctx *pK, uint32_t defects, double *aOut,
                     char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCase->aIn[0];
    int toFloat = parity_dtype_is_float(pK->out);
    uint64_t i;
    (void)defects; (void)zErr; (void)nErr;
    /* One correct rounding of the exact input: the cast has one right answer. */
    for (i = 0; i < pX->nElem; i++)
        aOut[i] = toFloat ? parity_dtype_round(pK->out, pX->aValue[i])
                          : cast_to_int(pX->aValue[i], pX->dtype, pK->out);
    return 0;
}

/* ---- rows ----------------------------------------------------------------------------- */

/* pR over the rows the registry made (pRows), with each row element's offset. */
static int rows_finish(kern_rows *pR, const parity_case *pCase, const parity_rows *pRows,
                       char *zErr, size_t nErr)
{
    uint64_t aIdx[PARITY_MAX_RANK] = { 0 }, k, off = 0, n;
    int d;

    memset(pR, 0, sizeof *pR);
    pR->rows = *pRows;
    n = pR->rows.n;
    pR->aRel = parity_malloc((n + 1) * sizeof(uint64_t));
    pR->aBuf = parity_malloc((n + 16) * sizeof(double));
    if (!pR->aRel || !pR->aBuf) {
        parity_kern_rows_close(pR);
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

int parity_kern_rows_open(kern_rows *pR, const parity_case *pCase, const kern_ctx *pK, char *zErr,
                          size_t nErr)
{
    return rows_finish(pR, pCase, &pK->pCall->geom.rows.rows, zErr, nErr);
}

void parity_kern_rows_close(kern_rows *pR)
{
    free(pR->aRel);
    free(pR->aBuf);
    pR->aRel = NULL;
    pR->aBuf = NULL;
}

void parity_kern_rows_gather(kern_rows *pR, const kern_ctx *pK, const double *x, uint64_t iRow)
{
    uint64_t base = parity_rows_offset(&pR->rows, iRow, 0), k;
    for (k = 0; k < pR->rows.n; k++) pR->aBuf[k] = kern_acc(pK, x[base + pR->aRel[k]]);
}

void parity_kern_rows_scatter(const kern_rows *pR, const kern_ctx *pK, uint64_t iRow,
                              const double *aVal, double *aOut)
{
    uint64_t base = parity_rows_offset(&pR->rows, iRow, 0), k;
    for (k = 0; k < pR->rows.n; k++) aOut[base + pR->aRel[k]] = kern_out(pK, aVal[k]);
}

int parity_kern_rows_run(kern_rows *pR, const parity_case *pCase, const kern_ctx *pK, int same,
                         kern_row_fn xRow, void *pArg, double *aOut)
{
    uint64_t iRow;
    for (iRow = 0; iRow < pR->rows.nRow; iRow++) {
        double v;
        parity_kern_rows_gather(pR, pK, pCase->aIn[0].aValue, iRow);
        v = xRow(pK, pR->aBuf, pR->rows.n, pArg);
        if (same) parity_kern_rows_scatter(pR, pK, iRow, pR->aBuf, aOut);
        else aOut[iRow] = kern_out(pK, v);
    }
    parity_kern_rows_close(pR);
    return 0;
}

int parity_kern_rows_apply(const parity_case *pCase, const kern_ctx *pK, int same,
                           kern_row_fn xRow, void *pArg, double *aOut, char *zErr, size_t nErr)
{
    kern_rows r;
    if (parity_kern_rows_open(&r, pCase, pK, zErr, nErr) != 0) return -1;
    return parity_kern_rows_run(&r, pCase, pK, same, xRow, pArg, aOut);
}

int parity_kern_var_open(kern_rows *pR, const parity_case *pCase, const kern_ctx *pK,
                         double *pDivisor, char *zErr, size_t nErr)
{
    double D;
    if (parity_kern_rows_open(pR, pCase, pK, zErr, nErr) != 0) return -1;
    /* torch divides by max(n - correction, 0): 0 makes Inf (or NaN for M2 = 0). */
    D = (double)pR->rows.n - pK->pCall->geom.rows.correction;
    *pDivisor = kern_acc(pK, D > 0.0 ? D : 0.0);
    return 0;
}

int parity_kern_norm_open(kern_norm *pN, const parity_case *pCase, const kern_ctx *pK, char *zErr,
                          size_t nErr)
{
    const parity_operand *pX = &pCase->aIn[0];
    const parity_norm_geometry *pG = &pK->pCall->geom.norm;
    unsigned char aReduce[PARITY_MAX_RANK] = { 0 };
    parity_rows rows;
    int d;

    memset(pN, 0, sizeof *pN);
    for (d = pX->rank - pG->nNormDims; d < pX->rank; d++) aReduce[d] = 1;
    parity_rows_init(&rows, pX, aReduce);
    if (rows_finish(&pN->r, pCase, &rows, zErr, nErr) != 0) return -1;
    pN->pWeight = pG->hasWeight ? pCase->aIn[1].aValue : NULL;
    pN->pBias = pG->hasBias ? pCase->aIn[2].aValue : NULL;
    pN->eps = kern_acc(pK, pG->eps);
    return 0;
}

double parity_kern_rstd(const kern_ctx *pK, double var, double eps)
{
    return kern_acc(pK, 1.0 / parity_kern_sqrt(pK, kern_acc(pK, var + eps)));
}

void parity_kern_norm_apply(const kern_norm *pN, const kern_ctx *pK, double *x, double mean,
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

int parity_kern_gemm_open(kern_gemm *pG, const parity_case *pCase, const kern_ctx *pK, char *zErr,
                          size_t nErr)
{
    const parity_dot_geometry *pD = &pK->pCall->geom.dot;
    const parity_operand *pB = &pCase->aIn[pD->iA + 1];
    uint64_t m, k, j, KN, nMatB;

    memset(pG, 0, sizeof *pG);
    pG->pGeom = pD;
    pG->M = pD->M;
    pG->K = pD->K;
    pG->N = pD->N;
    pG->nMat = pD->nMat;
    pG->aA = acc_copy(pK, &pCase->aIn[pD->iA]);
    pG->aBT = parity_malloc((pB->nElem + 1) * sizeof(double));
    if (pD->hasBias) pG->aBias = acc_copy(pK, &pCase->aIn[2]);
    if (pD->hasAddend) pG->aC = acc_copy(pK, &pCase->aIn[0]);
    if (!pG->aA || !pG->aBT || (pD->hasBias && !pG->aBias) || (pD->hasAddend && !pG->aC)) {
        parity_kern_gemm_close(pG);
        snprintf(zErr, nErr, "builtin %s: out of memory", pCase->spec.zOp);
        return -1;
    }
    pG->pBias = pG->aBias;
    KN = pG->K * pG->N;
    nMatB = KN ? pB->nElem / KN : 0;
    if (pD->strideBk == 1) {
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

double parity_kern_gemm_addend(const kern_gemm *pG, const kern_ctx *pK, uint64_t o, double s)
{
    const parity_dot_geometry *pD = pG->pGeom;
    uint64_t aIdx[PARITY_MAX_RANK], off = 0;
    int d;
    if (!pD->hasAddend) return s;
    s = kern_acc(pK, pD->alpha * s);
    if (pD->beta == 0.0) return s;     /* torch ignores c then, NaN included */
    parity_unravel(pK->pCall->outRank, pK->pCall->aOutDim, o, aIdx);
    for (d = 0; d < pK->pCall->outRank; d++) off += aIdx[d] * pD->aStrideC[d];
    return kern_acc(pK, s + kern_acc(pK, pD->beta * pG->aC[off]));
}

void parity_kern_gemm_close(kern_gemm *pG)
{
    free(pG->aC);
    free(pG->aA);
    free(pG->aBT);
    free(pG->aBias);
    pG->aA = pG->aBT = pG->aBias = NULL;
}

void parity_kern_gemm_mat(const kern_gemm *pG, uint64_t iMat, uint64_t *pOffA, uint64_t *pOffB)
{
    parity_dot_matrix(pG->pGeom, iMat, pOffA, pOffB);   /* b^T: b's batch layout */
}

/* ---- conv2d --------------------------------------------------------------------------- */

int parity_kern_conv_open(kern_conv *pC, const parity_case *pCase, const kern_ctx *pK, char *zErr,
                          size_t nErr)
{
    const parity_conv_geometry *pG = &pK->pCall->geom.conv;
    memset(pC, 0, sizeof *pC);
    pC->pGeom = pG;
    pC->K = pG->K;
    pC->aX = acc_copy(pK, &pCase->aIn[0]);
    pC->aW = acc_copy(pK, &pCase->aIn[1]);
    if (pG->hasBias) pC->aBias = acc_copy(pK, &pCase->aIn[2]);
    pC->aTapX = parity_malloc((pC->K + 1) * sizeof(double));
    pC->aTapW = parity_malloc((pC->K + 1) * sizeof(double));
    if (!pC->aX || !pC->aW || (pG->hasBias && !pC->aBias) || !pC->aTapX || !pC->aTapW) {
        parity_kern_conv_close(pC);
        snprintf(zErr, nErr, "builtin conv2d: out of memory");
        return -1;
    }
    return 0;
}

void parity_kern_conv_close(kern_conv *pC)
{
    free(pC->aX);
    free(pC->aW);
    free(pC->aBias);
    free(pC->aTapX);
    free(pC->aTapW);
    memset(pC, 0, sizeof *pC);
}

uint64_t parity_kern_conv_gather(kern_conv *pC, uint64_t linear, uint64_t *pO)
{
    return parity_conv_taps(pC->pGeom, pC->aX, pC->aW, linear, pC->aTapX, pC->aTapW, pO);
}

/* ---- scaled_dot_product_attention ----------------------------------------------------- */

int parity_kern_sdpa_open(kern_sdpa *pA, const parity_case *pCase, const kern_ctx *pK, char *zErr,
                          size_t nErr)
{
    const parity_attention_geometry *pG = &pK->pCall->geom.attention;

    memset(pA, 0, sizeof *pA);
    pA->pGeom = pG;
    pA->L = pG->L; pA->S = pG->S; pA->E = pG->E; pA->Ev = pG->Ev; pA->nRow = pG->nRow;
    pA->maskKind = pG->maskKind;
    pA->causal = pG->causal;
    pA->scale = kern_acc(pK, pG->scale);
    pA->aQ = acc_copy(pK, &pCase->aIn[0]);
    pA->aK = acc_copy(pK, &pCase->aIn[1]);
    pA->aV = acc_copy(pK, &pCase->aIn[2]);
    if (pCase->nIn == 4) pA->aM = acc_copy(pK, &pCase->aIn[3]);
    pA->aScore = parity_malloc((pA->S + 1) * sizeof(double));
    pA->aRowOut = parity_malloc((pA->Ev + 1) * sizeof(double));
    if (!pA->aQ || !pA->aK || !pA->aV || (pCase->nIn == 4 && !pA->aM) || !pA->aScore ||
        !pA->aRowOut) {
        parity_kern_sdpa_close(pA);
        snprintf(zErr, nErr, "builtin scaled_dot_product_attention: out of memory");
        return -1;
    }
    return 0;
}

void parity_kern_sdpa_close(kern_sdpa *pA)
{
    free(pA->aQ);
    free(pA->aK);
    free(pA->aV);
    free(pA->aM);
    free(pA->aScore);
    free(pA->aRowOut);
    memset(pA, 0, sizeof *pA);
}

void parity_kern_sdpa_row(const kern_sdpa *pA, uint64_t iRow, uint64_t *pQ, uint64_t *pK,
                          uint64_t *pV, uint64_t *pM, uint64_t *pStrMS)
{
    parity_attention_row(pA->pGeom, iRow, pQ, pK, pV, pM, pStrMS);
}

int parity_kern_sdpa_masked(const kern_sdpa *pA, uint64_t l, uint64_t j, uint64_t mOff,
                            uint64_t strMS)
{
    if (pA->causal && j > l) return 1;
    return pA->maskKind == PARITY_MASK_BOOL && pA->aM[mOff + j * strMS] == 0.0;
}

double parity_kern_sdpa_score(const kern_sdpa *pA, const kern_ctx *pK, double dot, uint64_t j,
                              uint64_t mOff, uint64_t strMS)
{
    double s = kern_acc(pK, dot * pA->scale);
    if (pA->maskKind == PARITY_MASK_FLOAT) s = kern_acc(pK, s + pA->aM[mOff + j * strMS]);
    return s;
}

/* ---- batch_norm ------------------------------------------------------------------------ */

void parity_kern_batch_norm_open(kern_batch_norm *pBn, const parity_case *pCase,
                                 const kern_ctx *pK)
{
    const parity_batch_norm_geometry *pG = &pK->pCall->geom.batchNorm;
    size_t iMean = pG->hasAffine ? 3 : 1;
    pBn->x = pCase->aIn[0].aValue;
    pBn->m = pCase->aIn[iMean].aValue;
    pBn->v = pCase->aIn[iMean + 1].aValue;
    pBn->w = pG->hasAffine ? pCase->aIn[1].aValue : NULL;
    pBn->b = pG->hasAffine ? pCase->aIn[2].aValue : NULL;
    pBn->eps = kern_acc(pK, pG->eps);
    pBn->S = pG->S;
    pBn->C = pG->C;
    pBn->n = pG->N * pG->C * pG->S;
}

/* ---- select, slice, split ------------------------------------------------------------- */

/* The input as [outer, size, inner] around the sliced dim: output (o, i, j) is input
 * (o, start + i step, j); select has one i. */
int parity_kern_slice(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                      double *aOut, char *zErr, size_t nErr)
{
    const parity_slice_geometry *pG = &pK->pCall->geom.slice;
    const parity_operand *pX = &pCase->aIn[0];
    uint64_t outer = 1, inner = 1, size = pX->aDim[pG->dim], count, o, i, j, n = 0;
    int d;
    (void)defects; (void)zErr; (void)nErr;
    for (d = 0; d < pG->dim; d++) outer *= pX->aDim[d];
    for (d = pG->dim + 1; d < pX->rank; d++) inner *= pX->aDim[d];
    count = pG->drop ? 1 : (outer > 0 && inner > 0 ? pCase->nOut / (outer * inner) : 0);
    for (o = 0; o < outer; o++)
        for (i = 0; i < count; i++)
            for (j = 0; j < inner; j++)
                aOut[n++] = kern_out(pK, pX->aValue[(o * size + (uint64_t)pG->start +
                                                     i * (uint64_t)pG->step) * inner + j]);
    return 0;
}

/* ---- cat, stack, expand ------------------------------------------------------------- */

/* Input by input (the registry's reference walks the output): cat and stack copy each
 * input's [outer, size, inner] block to its place along dim; expand writes each output
 * element from its broadcast source, counting the index up as an odometer. */
int parity_kern_concat(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                       double *aOut, char *zErr, size_t nErr)
{
    const parity_concat_geometry *pG = &pK->pCall->geom.concat;
    uint64_t start = 0, o, i, outer;
    int k;
    (void)defects; (void)zErr; (void)nErr;
    if (pG->expand) {
        uint64_t aIdx[PARITY_MAX_RANK] = { 0 }, off = 0, n;
        int rank = pK->pCall->outRank, d;
        for (n = 0; n < pCase->nOut; n++) {
            aOut[n] = kern_out(pK, pCase->aIn[0].aValue[off]);
            for (d = rank - 1; d >= 0; d--) {          /* the next index, and its offset */
                off += pG->aStride[d];
                if (++aIdx[d] < pK->pCall->aOutDim[d]) break;
                off -= aIdx[d] * pG->aStride[d];
                aIdx[d] = 0;
            }
        }
        return 0;
    }
    outer = pG->inner > 0 && pG->outSize > 0 ? pCase->nOut / (pG->inner * pG->outSize) : 0;
    for (k = 0; k < pG->nIn; k++) {
        const double *x = pCase->aIn[k].aValue;
        uint64_t block = pG->aSize[k] * pG->inner;
        for (o = 0; o < outer; o++)
            for (i = 0; i < block; i++)
                aOut[(o * pG->outSize + start) * pG->inner + i] = kern_out(pK, x[o * block + i]);
        start += pG->aSize[k];
    }
    return 0;
}

/* ---- where, masked_fill --------------------------------------------------------------- */

/* An odometer over the output dims, as the binary kernel walks (the registry's reference
 * divides each index out): the bool operand picks x or y (masked_fill: the value or x). */
int parity_kern_where(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                      double *aOut, char *zErr, size_t nErr)
{
    const parity_elementwise_geometry *pG = &pK->pCall->geom.elementwise;
    int isWhere = pCase->pDef == &parity_op_where, rank = pCase->outRank, d;
    const double *c = pCase->aIn[isWhere ? 0 : 1].aValue, *x = pCase->aIn[isWhere ? 1 : 0].aValue;
    const double *y = pCase->nIn > 2 ? pCase->aIn[2].aValue : NULL;
    uint64_t aIdx[PARITY_MAX_RANK] = { 0 }, offC = 0, offX = 0, offY = 0, i;
    (void)defects; (void)zErr; (void)nErr;
    for (i = 0; i < pCase->nOut; i++) {
        double r;
        if (isWhere) r = c[offC] != 0.0 ? x[offX] : y[offY];
        else r = c[offC] == 0.0 ? x[offX] : y ? y[offY] : pG->fill;
        aOut[i] = kern_out(pK, r);
        for (d = rank - 1; d >= 0; d--) {
            offC += pG->aStrideC[d];
            offX += pG->aStrideX[d];
            offY += pG->aStrideY[d];
            if (++aIdx[d] < pCase->aOutDim[d]) break;
            offC -= aIdx[d] * pG->aStrideC[d];
            offX -= aIdx[d] * pG->aStrideX[d];
            offY -= aIdx[d] * pG->aStrideY[d];
            aIdx[d] = 0;
        }
    }
    return 0;
}

/* ---- embedding ---------------------------------------------------------------------- */

/* Row by row: a copy of the weight row each index selects (NaN for one out of range). */
int parity_kern_embedding(const parity_case *pCase, const kern_ctx *pK, uint32_t defects,
                          double *aOut, char *zErr, size_t nErr)
{
    const parity_embedding_geometry *pG = &pK->pCall->geom.embedding;
    const double *w = pCase->aIn[0].aValue, *idx = pCase->aIn[1].aValue;
    uint64_t r, j, nRow = pCase->aIn[1].nElem;
    (void)defects; (void)zErr; (void)nErr;
    for (r = 0; r < nRow; r++) {
        int64_t row = parity_embedding_row(pG, idx[r]);
        for (j = 0; j < pG->D; j++)
            aOut[r * pG->D + j] = kern_out(pK, row < 0 ? NAN : w[(uint64_t)row * pG->D + j]);
    }
    return 0;
}
