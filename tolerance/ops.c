/*
 * ops.c - the registry table, op call setup, and parameter helpers shared by op files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "formats/alloc.h"

const parity_op_def *const parity_op_registry[PARITY_OP_COUNT + 1] = {
#define PARITY_OP(name) &parity_op_##name,
#include "tolerance/op_list.h"
#undef PARITY_OP
    NULL
};

const char *parity_op_kernel(const parity_op_def *pDef)
{
    return pDef->zKernel ? pDef->zKernel : pDef->zName;
}

const char *parity_op_family_name(parity_op_family family)
{
    static const char *const azName[PARITY_FAMILY_COUNT] = {
        "unary", "binary", "reduce", "rowwise", "norm", "matmul", "linear", "bmm", "conv2d",
        "attention", "transpose", "permute", "reshape", "cast", "batch_norm", "pool", "slice", "embedding",
        "concat", "addmm", "where"
    };
    return (unsigned)family < PARITY_FAMILY_COUNT ? azName[family] : "unknown";
}

/* aten ops that are registry ops under another name, with the same operands in the same
 * order and the registry's parameter names (FORMAT.md: the capture helper writes aten
 * schema argument names): _softmax(self, dim, half_to_float), native_layer_norm(input,
 * normalized_shape, weight, bias, eps), mm(self, mat2). The shape-only ops keep the
 * row-major order of their input, which is reshape's rule with the output's own shape
 * (their size / dim arguments are not reshape's 'shape', so the output shape decides);
 * t is transpose of a matrix (transpose without dims, op_layout.c). */
static const struct { const char *zAten, *zOp; } aAtenAlias[] = {
    { "_softmax", "softmax" },
    { "_log_softmax", "log_softmax" },
    { "mm", "matmul" },
    { "native_layer_norm", "layer_norm" },
    { "t", "transpose" },
    /* batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps),
     * inference only (op_batch_norm.c refuses training = 1); _legit_no_training has no
     * training argument */
    { "native_batch_norm", "batch_norm" },
    /* select.int(self, dim, index), slice.Tensor(self, dim, start, end, step),
     * split.Tensor(self, split_size, dim): same names, the registry's parameters */
    /* output 0 the values (1 the indices, which the capture keeps apart) */
    { "max_pool2d_with_indices", "max_pool2d" },
    /* _adaptive_avg_pool2d(self, output_size): what adaptive_avg_pool2d dispatches to */
    { "_adaptive_avg_pool2d", "adaptive_avg_pool2d" },
    { "_native_batch_norm_legit_no_training", "batch_norm" },
    { "_native_batch_norm_legit", "batch_norm" },
    { "_to_copy", "cast" },            /* its target as 'to' (the capture helper writes it) */
    /* clamp_min(self, min), clamp_max(self, max): clamp with one bound (op_clamp.c) */
    { "clamp_min", "clamp" },
    { "clamp_max", "clamp" },
    /* CPU SDPA kernels: (query, key, value, dropout_p, is_causal, attn_mask, scale), output
     * 0 the attention (1 its logsumexp, which the capture keeps apart) */
    { "_scaled_dot_product_flash_attention_for_cpu", "scaled_dot_product_attention" },
    { "_scaled_dot_product_attention_math", "scaled_dot_product_attention" },
    { "view", "reshape" },
    { "_unsafe_view", "reshape" },
    { "_reshape_alias", "reshape" },
    { "clone", "reshape" },
    { "contiguous", "reshape" },
    { "detach", "reshape" },
    { "alias", "reshape" },
    /* a constant tensor made in the model's code (torch.tensor(...)) lifted into the graph:
     * its input unchanged */
    { "lift_fresh", "reshape" },
    { "lift_fresh_copy", "reshape" },
    { "flatten", "reshape" },
    { "squeeze", "reshape" },
    { "unsqueeze", "reshape" },
};

static const parity_op_def *find_exact(const char *zName, size_t n)
{
    int i;
    for (i = 0; parity_op_registry[i]; i++)
        if (strlen(parity_op_registry[i]->zName) == n &&
            strncmp(parity_op_registry[i]->zName, zName, n) == 0)
            return parity_op_registry[i];
    return NULL;
}

double parity_operand_gamma(const parity_op_call *pCall, double gamma)
{
    return pCall->uOperand > 0.0 ? parity_gamma(2.0, pCall->uOperand) * (1.0 + gamma) : 0.0;
}

/* A registry name, or an aten spelling of one: "aten::linear", "aten.addmm.default",
 * "aten.relu_.default" (in-place: the data it produced), "aten.add.Tensor". */
const parity_op_def *parity_op_find(const char *zName)
{
    const parity_op_def *pDef;
    const char *zBase, *zDot;
    size_t n, i;
    if (!zName) return NULL;
    if ((pDef = find_exact(zName, strlen(zName))) != NULL) return pDef;
    if (strncmp(zName, "aten::", 6) == 0) zBase = zName + 6;
    else if (strncmp(zName, "aten.", 5) == 0) zBase = zName + 5;
    else return NULL;
    zDot = strchr(zBase, '.');
    n = zDot ? (size_t)(zDot - zBase) : strlen(zBase);
    if (n > 1 && zBase[n - 1] == '_' && zBase[0] != '_') n--;   /* relu_ -> relu */
    for (i = 0; i < sizeof aAtenAlias / sizeof aAtenAlias[0]; i++)
        if (strlen(aAtenAlias[i].zAten) == n && strncmp(aAtenAlias[i].zAten, zBase, n) == 0)
            return find_exact(aAtenAlias[i].zOp, strlen(aAtenAlias[i].zOp));
    return find_exact(zBase, n);
}

/* The number attribute pDef->zScalarInput as a last, 0-d float64 operand: the exact value
 * the capture recorded (a Python float is a binary64), so the reference uses it as given
 * and the op's bound says how a kernel may round it. One block: the operands, then the
 * value. */
static int append_scalar(parity_op_call *pCall, double scalar, char *zErr, size_t nErr)
{
    size_t n = pCall->nIn + 1;
    parity_operand *aOwn = parity_calloc(1, n * sizeof *aOwn + sizeof(double));
    double *pValue;
    if (!aOwn) {
        snprintf(zErr, nErr, "out of memory");
        return -1;
    }
    memcpy(aOwn, pCall->aIn, pCall->nIn * sizeof *aOwn);
    pValue = (double *)(void *)(aOwn + n);
    *pValue = scalar;
    aOwn[n - 1].zName = pCall->pDef->zScalarInput;
    aOwn[n - 1].dtype = PARITY_DT_F64;
    aOwn[n - 1].rank = 0;
    aOwn[n - 1].nElem = 1;
    aOwn[n - 1].aValue = pValue;
    pCall->aIn = pCall->aOwnedIn = aOwn;
    pCall->nIn = n;
    return 0;
}

/* Counts, output dtype, fields; then xPrepare (which infers the output shape when asked). */
static int op_setup(parity_op_call *pCall, const parity_op_def *pDef, const parity_operand *aIn,
                    size_t nIn, parity_dtype outDtype, int outRank, const uint64_t *aOutDim,
                    parity_dtype accDtype, const parity_attr *aAttr, size_t nAttr,
                    char *zErr, size_t nErr)
{
    int i, hasScalar = 0;
    double scalar = 0.0;
    memset(pCall, 0, sizeof *pCall);
    if (pDef->zScalarInput) {
        if (parity_param_float(aAttr, nAttr, pDef->zScalarInput, &scalar, &hasScalar, zErr,
                               nErr) != 0)
            return -1;
        if (hasScalar && nIn != pDef->nInMin - 1) {
            snprintf(zErr, nErr, "%s: '%s' is both an attribute and an input", pDef->zName,
                     pDef->zScalarInput);
            return -1;
        }
    }
    if (nIn + (size_t)hasScalar < pDef->nInMin || nIn > pDef->nInMax) {
        if (pDef->nInMin != pDef->nInMax)
            snprintf(zErr, nErr, "%s takes %zu to %zu inputs, 'inputs' names %zu",
                     pDef->zName, pDef->nInMin, pDef->nInMax, nIn);
        else if (pDef->zScalarInput && nIn + 1 == pDef->nInMin)
            snprintf(zErr, nErr, "%s takes %zu inputs, 'inputs' names %zu (and no number "
                     "attribute '%s')", pDef->zName, pDef->nInMin, nIn, pDef->zScalarInput);
        else
            snprintf(zErr, nErr, "%s takes %zu inputs, 'inputs' names %zu", pDef->zName,
                     pDef->nInMin, nIn);
        return -1;
    }
    if (!parity_dtype_is_float(outDtype) && !(pDef->flags & PARITY_OPF_INT_OUTPUT)) {
        snprintf(zErr, nErr, "%s: output dtype %s is not a float type", pDef->zName,
                 parity_dtype_name(outDtype));
        return -1;
    }
    if (outRank != PARITY_OUT_INFER && (outRank < 0 || outRank > PARITY_MAX_RANK)) {
        snprintf(zErr, nErr, "%s: output rank %d out of range", pDef->zName, outRank);
        return -1;
    }
    pCall->pDef = pDef;
    pCall->aIn = aIn;
    pCall->nIn = nIn;
    if (hasScalar && append_scalar(pCall, scalar, zErr, nErr) != 0) return -1;
    pCall->outDtype = outDtype;
    pCall->outRank = outRank;
    for (i = 0; i < outRank; i++) pCall->aOutDim[i] = aOutDim[i];
    pCall->nOut = parity_shape_elements(outRank, aOutDim);   /* INFER: 1, set by take_out */
    /* Kernels for 16- and 8-bit outputs accumulate in float32 unless they say otherwise. */
    pCall->accDtype = accDtype != PARITY_DT_INVALID ? accDtype
                    : outDtype == PARITY_DT_F64 ? PARITY_DT_F64 : PARITY_DT_F32;
    pCall->lambda = PARITY_DEFAULT_LAMBDA;
    pCall->probBound = NAN;
    if (pDef->xPrepare(pCall, aAttr, nAttr, zErr, nErr) != 0) {
        parity_op_end(pCall);
        return -1;
    }
    if (pCall->nOut > PARITY_MAX_ELEMENTS) {    /* a shape its parameters made absurd */
        char zS[256];
        snprintf(zErr, nErr, "%s: output shape %s has more than 2^48 elements", pDef->zName,
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zS, sizeof zS));
        parity_op_end(pCall);
        return -1;
    }
    if (pCall->outRank == PARITY_OUT_INFER) {   /* an op that never said: our bug */
        snprintf(zErr, nErr, "%s: the op did not work out its output shape", pDef->zName);
        parity_op_end(pCall);
        return -1;
    }
    return 0;
}

int parity_op_begin_shape(parity_op_call *pCall, const parity_op_def *pDef,
                          const parity_operand *aIn, size_t nIn, parity_dtype outDtype,
                          int outRank, const uint64_t *aOutDim, parity_dtype accDtype,
                          const parity_attr *aAttr, size_t nAttr, char *zErr, size_t nErr)
{
    return op_setup(pCall, pDef, aIn, nIn, outDtype, outRank, aOutDim, accDtype, aAttr, nAttr,
                    zErr, nErr);
}

int parity_op_begin(parity_op_call *pCall, const parity_op_def *pDef,
                    const parity_operand *aIn, size_t nIn, parity_dtype outDtype,
                    int outRank, const uint64_t *aOutDim, parity_dtype accDtype,
                    const parity_attr *aAttr, size_t nAttr, char *zErr, size_t nErr)
{
    if (op_setup(pCall, pDef, aIn, nIn, outDtype, outRank, aOutDim, accDtype, aAttr, nAttr,
                 zErr, nErr) != 0)
        return -1;
    if (pDef->xLoad && pDef->xLoad(pCall, zErr, nErr) != 0) {
        parity_op_end(pCall);
        return -1;
    }
    return 0;
}

int parity_op_take_out(parity_op_call *pCall, int rank, const uint64_t *aDim)
{
    int i;
    if (pCall->outRank != PARITY_OUT_INFER)
        return parity_same_shape(rank, aDim, pCall->outRank, pCall->aOutDim);
    pCall->outRank = rank;
    for (i = 0; i < rank; i++) pCall->aOutDim[i] = aDim[i];
    pCall->nOut = parity_shape_elements(rank, aDim);   /* op_setup refuses too many */
    return 1;
}

double parity_op_cost(const parity_op_call *pCall)
{
    return pCall->pDef->xCost ? pCall->pDef->xCost(pCall) : 1.0;
}

int parity_broadcast_shape(int n, const int *anRank, const uint64_t *const *aapDim,
                           uint64_t *aOut, int *piBad)
{
    int nOut = 0, i, d;
    for (i = 0; i < n; i++)
        if (anRank[i] > nOut) nOut = anRank[i];
    for (d = 0; d < nOut; d++) {
        uint64_t dim = 1;
        for (i = 0; i < n; i++) {
            int iOwn = anRank[i] - (nOut - d);
            uint64_t own = iOwn >= 0 ? aapDim[i][iOwn] : 1;
            if (own == 1) continue;
            if (dim != 1 && own != dim) {
                *piBad = d;
                return -1;
            }
            dim = own;
        }
        aOut[d] = dim;
    }
    return nOut;
}

int parity_broadcast_strides(int nDim, const uint64_t *aDim, const uint64_t *aOwn, int nOwn,
                             uint64_t nInner, uint64_t *aStride)
{
    uint64_t stride = nInner;
    int d;
    if (nOwn > nDim) return -1;
    for (d = nDim - 1; d >= 0; d--) {
        int iOwn = nOwn - (nDim - d);
        if (iOwn < 0) { aStride[d] = 0; continue; }
        if (aOwn[iOwn] == aDim[d]) aStride[d] = aOwn[iOwn] == 1 ? 0 : stride;
        else if (aOwn[iOwn] == 1) aStride[d] = 0;
        else return -1;
        stride *= aOwn[iOwn];
    }
    return 0;
}

void parity_op_end(parity_op_call *pCall)
{
    if (pCall->pDef && pCall->pDef->xFreeParams && pCall->pParams)
        pCall->pDef->xFreeParams(pCall->pParams);
    pCall->pParams = NULL;
    free(pCall->aOwnedIn);
    pCall->aOwnedIn = NULL;
}

/* ---- parameters ------------------------------------------------------------------- */

/* Looks zName up: *pFound (when given) says whether it is there. */
static const parity_attr *param_find(const parity_attr *aAttr, size_t nAttr,
                                     const char *zName, int *pFound)
{
    const parity_attr *p = parity_attr_find(aAttr, nAttr, zName);
    if (pFound) *pFound = p != NULL;
    return p;
}

int parity_param_int(const parity_attr *aAttr, size_t nAttr, const char *zName,
                     int64_t *pValue, int *pFound, char *zErr, size_t nErr)
{
    const parity_attr *p = param_find(aAttr, nAttr, zName, pFound);
    if (!p) return 0;
    if (p->kind != PARITY_ATTR_INT || p->n != 1) {
        snprintf(zErr, nErr, "attribute '%s' must be one integer", zName);
        return -1;
    }
    *pValue = p->aInt[0];
    return 0;
}

int parity_param_float(const parity_attr *aAttr, size_t nAttr, const char *zName,
                       double *pValue, int *pFound, char *zErr, size_t nErr)
{
    const parity_attr *p = param_find(aAttr, nAttr, zName, pFound);
    if (!p) return 0;
    if (p->n == 1 && p->kind == PARITY_ATTR_FLOAT) { *pValue = p->aFloat[0]; return 0; }
    if (p->n == 1 && p->kind == PARITY_ATTR_INT) { *pValue = (double)p->aInt[0]; return 0; }
    snprintf(zErr, nErr, "attribute '%s' must be one number", zName);
    return -1;
}

int parity_param_ints(const parity_attr *aAttr, size_t nAttr, const char *zName,
                      int64_t *aValue, size_t nMax, size_t *pn, int *pFound, char *zErr,
                      size_t nErr)
{
    const parity_attr *p = param_find(aAttr, nAttr, zName, pFound);
    size_t i;
    if (!p) return 0;
    if (p->kind != PARITY_ATTR_INT || p->n > nMax) {
        snprintf(zErr, nErr, "attribute '%s' must be an integer or a list of at most %zu",
                 zName, nMax);
        return -1;
    }
    for (i = 0; i < p->n; i++) aValue[i] = p->aInt[i];
    *pn = p->n;
    return 0;
}

int parity_wrap_dim(int64_t dim, int rank)
{
    int64_t r = rank == 0 ? 1 : rank;   /* torch accepts dim 0 / -1 on scalars */
    if (dim < -r || dim >= r) return -1;
    return (int)(dim < 0 ? dim + r : dim);
}

int parity_same_shape(int rankA, const uint64_t *aA, int rankB, const uint64_t *aB)
{
    int i;
    if (rankA != rankB) return 0;
    for (i = 0; i < rankA; i++)
        if (aA[i] != aB[i]) return 0;
    return 1;
}

const char *parity_shape_str(int rank, const uint64_t *aDim, char *zBuf, size_t nBuf)
{
    size_t nLen = 0;
    int i;
    nLen += (size_t)snprintf(zBuf, nBuf, "[");
    for (i = 0; i < rank && nLen < nBuf; i++)
        nLen += (size_t)snprintf(zBuf + nLen, nBuf - nLen, i ? ", %llu" : "%llu",
                                 (unsigned long long)aDim[i]);
    if (nLen < nBuf) snprintf(zBuf + nLen, nBuf - nLen, "]");
    return zBuf;
}

void parity_op_call_clear_element(parity_op_call *pCall)
{
    pCall->probBound = NAN;
    pCall->overflowPossible = 0;
    pCall->nonfiniteAny = 0;
    pCall->sumsTerms = 0;
}

void parity_note_overflow(parity_op_call *pCall, double absSum)
{
    pCall->sumsTerms = 1;
    if (!(absSum < parity_dtype_max_finite(pCall->accDtype))) pCall->overflowPossible = 1;
}
