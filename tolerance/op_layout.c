/*
 * op_layout.c - the layout ops: transpose(x, dim0, dim1), permute(x, dims), reshape(x, shape)
 * with PyTorch semantics.
 *
 * Reference: exact. Each output element is one input element, moved: the reference is that
 * element's binary64 value (a decoded capture, so exact), NaN and -0 included.
 * Bound: 0. Moving a value cannot round it, provided the output dtype holds every value of
 * the input dtype; an output dtype narrower than the input's is a cast, not a layout op, and
 * is refused in prepare ("dtype changes: use cast").
 *
 * Index mapping, written once: transpose is the permutation that swaps dim0 and dim1, so
 * transpose and permute share one element function (output dim d reads input dim perm[d]:
 * input offset = sum_d out_index[d] * inStride[perm[d]]). reshape keeps the row-major order,
 * so output element i is input element i.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/propagate.h"
#include "tolerance/mpref.h"
#include "formats/alloc.h"

/* [lo, hi] of an integer or bool dtype, as binary64 (exact for widths up to 53 bits). */
static void int_range(parity_dtype dt, double *pLo, double *pHi)
{
    switch (dt) {
    case PARITY_DT_I8:  *pLo = -128.0; *pHi = 127.0; break;
    case PARITY_DT_I16: *pLo = -32768.0; *pHi = 32767.0; break;
    case PARITY_DT_I32: *pLo = -2147483648.0; *pHi = 2147483647.0; break;
    case PARITY_DT_I64: *pLo = -9223372036854775808.0; *pHi = 9223372036854775807.0; break;
    case PARITY_DT_U8:  *pLo = 0.0; *pHi = 255.0; break;
    case PARITY_DT_U16: *pLo = 0.0; *pHi = 65535.0; break;
    case PARITY_DT_U32: *pLo = 0.0; *pHi = 4294967295.0; break;
    case PARITY_DT_U64: *pLo = 0.0; *pHi = 18446744073709551615.0; break;
    default:            *pLo = 0.0; *pHi = 1.0; break;   /* bool */
    }
}

/* ops.h: 1 when every value of dtype `in` is a value of dtype `out`. */
int parity_dtype_holds(parity_dtype out, parity_dtype in)
{
    if (out == in) return 1;
    if (parity_dtype_is_float(in)) {
        /* Precision, range and the smallest subnormal must all be at least the input's. */
        return parity_dtype_is_float(out)
            && parity_unit_roundoff(out) <= parity_unit_roundoff(in)
            && parity_dtype_max_finite(out) >= parity_dtype_max_finite(in)
            && parity_ulp_at(out, 0.0) <= parity_ulp_at(in, 0.0);
    } else {
        double lo, hi, outLo, outHi;
        int_range(in, &lo, &hi);
        if (parity_dtype_is_float(out))   /* integers up to 2^p are exact in p bits */
            return fmax(fabs(lo), hi) <= 1.0 / parity_unit_roundoff(out)
                && hi <= parity_dtype_max_finite(out);
        int_range(out, &outLo, &outHi);
        return outLo <= lo && outHi >= hi;
    }
}

/* The checks every layout op makes on its input's dtype. */
static int check_dtype(const parity_op_call *pCall, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    if (!parity_dtype_holds(pCall->outDtype, pX->dtype)) {
        snprintf(zErr, nErr, "%s: input dtype %s does not fit output dtype %s: dtype changes: "
                 "use cast", pCall->pDef->zName, parity_dtype_name(pX->dtype),
                 parity_dtype_name(pCall->outDtype));
        return -1;
    }
    return 0;
}

/* ---- transpose and permute: one permutation ------------------------------------------ */

typedef struct {
    uint64_t aStride[PARITY_MAX_RANK];   /* per output dim: the input stride it walks */
} perm_params;

/* Checks the output shape against the permuted input shape and makes the strides. aPerm has
 * pX->rank entries, already wrapped, in range and distinct. */
static int perm_setup(parity_op_call *pCall, const int *aPerm, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    uint64_t aWant[PARITY_MAX_RANK], aInStride[PARITY_MAX_RANK], stride = 1;
    char zA[256], zB[256], zC[256];
    perm_params *pP;
    int d;

    for (d = pX->rank - 1; d >= 0; d--) {
        aInStride[d] = stride;
        stride *= pX->aDim[d];
    }
    for (d = 0; d < pX->rank; d++) aWant[d] = pX->aDim[aPerm[d]];
    if (!parity_op_take_out(pCall, pX->rank, aWant)) {
        snprintf(zErr, nErr, "%s: input shape %s gives %s, but the output shape is %s",
                 pCall->pDef->zName, parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA),
                 parity_shape_str(pX->rank, aWant, zB, sizeof zB),
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zC, sizeof zC));
        return -1;
    }
    if (check_dtype(pCall, zErr, nErr) != 0) return -1;
    pP = parity_calloc(1, sizeof *pP);
    if (!pP) {
        snprintf(zErr, nErr, "%s: out of memory", pCall->pDef->zName);
        return -1;
    }
    for (d = 0; d < pX->rank; d++) {
        pP->aStride[d] = aInStride[aPerm[d]];
        pCall->geom.perm.aPerm[d] = aPerm[d];
    }
    pCall->pParams = pP;
    return 0;
}

static int transpose_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                             char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    int aPerm[PARITY_MAX_RANK], d, w0, w1, found;
    int64_t dim0 = 0, dim1 = 0;

    if (parity_param_int(aAttr, nAttr, "dim0", &dim0, &found, zErr, nErr) != 0) return -1;
    if (!found && pX->rank <= 2 && !parity_attr_find(aAttr, nAttr, "dim1")) {
        /* aten::t: both dims absent, a matrix transposed (a vector or scalar unchanged) */
        dim0 = 0;
        dim1 = pX->rank == 2 ? 1 : 0;
    } else {
        if (!found) { snprintf(zErr, nErr, "transpose: attribute 'dim0' is missing"); return -1; }
        if (parity_param_int(aAttr, nAttr, "dim1", &dim1, &found, zErr, nErr) != 0) return -1;
        if (!found) { snprintf(zErr, nErr, "transpose: attribute 'dim1' is missing"); return -1; }
    }
    w0 = parity_wrap_dim(dim0, pX->rank);
    w1 = parity_wrap_dim(dim1, pX->rank);
    if (w0 < 0 || w1 < 0) {
        snprintf(zErr, nErr, "transpose: dim %lld out of range for rank %d",
                 (long long)(w0 < 0 ? dim0 : dim1), pX->rank);
        return -1;
    }
    for (d = 0; d < pX->rank; d++) aPerm[d] = d;
    if (pX->rank > 0) {           /* a scalar accepts dims 0 / -1 and stays itself */
        aPerm[w0] = w1;
        aPerm[w1] = w0;
    }
    return perm_setup(pCall, aPerm, zErr, nErr);
}

static int permute_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                           char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    int64_t aDims[PARITY_MAX_RANK];
    int aPerm[PARITY_MAX_RANK], aSeen[PARITY_MAX_RANK] = {0}, found;
    size_t n = 0, i;

    if (parity_param_ints(aAttr, nAttr, "dims", aDims, PARITY_MAX_RANK, &n, &found, zErr, nErr) != 0)
        return -1;
    if (!found) { snprintf(zErr, nErr, "permute: attribute 'dims' is missing"); return -1; }
    if (n != (size_t)pX->rank) {
        snprintf(zErr, nErr, "permute: 'dims' has %zu entries, the input has rank %d", n,
                 pX->rank);
        return -1;
    }
    for (i = 0; i < n; i++) {
        int w = parity_wrap_dim(aDims[i], pX->rank);
        if (w < 0) {
            snprintf(zErr, nErr, "permute: dim %lld out of range for rank %d",
                     (long long)aDims[i], pX->rank);
            return -1;
        }
        if (aSeen[w]++) {
            snprintf(zErr, nErr, "permute: dim %d repeated in 'dims'", w);
            return -1;
        }
        aPerm[i] = w;
    }
    return perm_setup(pCall, aPerm, zErr, nErr);
}

/* The input element output element `linear` moves. */
static uint64_t perm_source(const parity_op_call *pCall, uint64_t linear)
{
    const perm_params *pP = pCall->pParams;
    uint64_t off = 0, rest = linear;
    int d;
    for (d = pCall->outRank - 1; d >= 0; d--) {
        uint64_t n = pCall->aOutDim[d];
        off += (rest % n) * pP->aStride[d];
        rest /= n;
    }
    return off;
}

static double perm_value(const parity_op_call *pCall, uint64_t linear)
{
    return pCall->aIn[0].aValue[perm_source(pCall, linear)];
}

static int perm_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    mpfr_set_d(ref, perm_value(pCall, linear), MPFR_RNDN);
    *pBound = 0.0;
    return 0;
}

/* Propagation (ops.h, xPropagate): a data-movement op moves a value exactly, so its
 * output's radius is its source element's (bound 0). */
static int perm_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                          mpfr_t ref, double *pRadius)
{
    if (perm_element(pCall, linear, ref, pRadius) != 0) return -1;
    return parity_propagate_moved(pCall, aRad[0][perm_source(pCall, linear)], pRadius);
}

/* Fast path (ops.h) of the data-movement ops: the reference is the moved value itself,
 * exact in binary64 (stated error 0), bound 0; non-finite values go to MPFR. */
int parity_exact_fast(double v, double *pRef, double *pErr, double *pBound, double *pSpread)
{
    if (!isfinite(v)) return 0;
    *pRef = v;
    *pErr = 0.0;
    *pBound = 0.0;
    *pSpread = 0.0;
    return 1;
}

static int perm_fast(const parity_op_call *pCall, uint64_t linear, double *pRef, double *pErr,
                     double *pBound, double *pSpread)
{
    return parity_exact_fast(perm_value(pCall, linear), pRef, pErr, pBound, pSpread);
}

/* ---- reshape --------------------------------------------------------------------------- */

static int reshape_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                           char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    int64_t aShape[PARITY_MAX_RANK];
    size_t n = 0, i;
    char zA[256], zB[256];
    int found;

    if (parity_param_ints(aAttr, nAttr, "shape", aShape, PARITY_MAX_RANK, &n, &found, zErr, nErr) != 0)
        return -1;
    if (found) {
        /* torch: one -1 may stand for what the element count implies; other entries are
         * the sizes themselves (0 included). The result must be the output's shape. */
        uint64_t aWant[PARITY_MAX_RANK], known = 1;
        int iInfer = -1;
        for (i = 0; i < n; i++) {
            if (aShape[i] == -1) {
                if (iInfer >= 0) {
                    snprintf(zErr, nErr, "reshape: only one -1 allowed in 'shape'");
                    return -1;
                }
                iInfer = (int)i;
            } else if (aShape[i] < 0) {
                snprintf(zErr, nErr, "reshape: invalid size %lld in 'shape'",
                         (long long)aShape[i]);
                return -1;
            } else {
                known *= (uint64_t)aShape[i];
                aWant[i] = (uint64_t)aShape[i];
            }
        }
        if (iInfer >= 0) {
            if (known == 0 || pX->nElem % known != 0) {
                snprintf(zErr, nErr, "reshape: cannot infer the -1 in 'shape' for %llu "
                         "elements", (unsigned long long)pX->nElem);
                return -1;
            }
            aWant[iInfer] = pX->nElem / known;
        }
        if (!parity_op_take_out(pCall, (int)n, aWant)) {
            snprintf(zErr, nErr, "reshape: 'shape' gives %s, but the output shape is %s",
                     parity_shape_str((int)n, aWant, zA, sizeof zA),
                     parity_shape_str(pCall->outRank, pCall->aOutDim, zB, sizeof zB));
            return -1;
        }
    }
    if (pCall->outRank == PARITY_OUT_INFER) {
        snprintf(zErr, nErr, "reshape: without 'shape' the output shape cannot be worked out");
        return -1;
    }
    if (pX->nElem != pCall->nOut) {
        snprintf(zErr, nErr, "reshape: input shape %s (%llu elements) cannot become output "
                 "shape %s (%llu elements)", parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA),
                 (unsigned long long)pX->nElem,
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zB, sizeof zB),
                 (unsigned long long)pCall->nOut);
        return -1;
    }
    return check_dtype(pCall, zErr, nErr);
}

static int reshape_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    mpfr_set_d(ref, pCall->aIn[0].aValue[linear], MPFR_RNDN);
    *pBound = 0.0;
    return 0;
}

static int reshape_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                             mpfr_t ref, double *pRadius)
{
    if (reshape_element(pCall, linear, ref, pRadius) != 0) return -1;
    /* row-major order kept: the same element */
    return parity_propagate_moved(pCall, aRad[0][linear], pRadius);
}

static int reshape_fast(const parity_op_call *pCall, uint64_t linear, double *pRef, double *pErr,
                        double *pBound, double *pSpread)
{
    return parity_exact_fast(pCall->aIn[0].aValue[linear], pRef, pErr, pBound, pSpread);
}

const parity_op_def parity_op_transpose = {
    .zName = "transpose", .zModel = "exact (a permutation of the input); bound 0",
    .nInMin = 1, .nInMax = 1, .family = PARITY_FAMILY_TRANSPOSE,
    .xPrepare = transpose_prepare, .xElement = perm_element, .xFreeParams = free,
    .xFast = perm_fast, .xPropagate = perm_propagate,
};

const parity_op_def parity_op_permute = {
    .zName = "permute", .zModel = "exact (a permutation of the input); bound 0",
    .nInMin = 1, .nInMax = 1, .family = PARITY_FAMILY_PERMUTE,
    .xPrepare = permute_prepare, .xElement = perm_element, .xFreeParams = free,
    .xFast = perm_fast, .xPropagate = perm_propagate,
};

const parity_op_def parity_op_reshape = {
    .zName = "reshape", .zModel = "exact (row-major order kept); bound 0",
    .nInMin = 1, .nInMax = 1, .family = PARITY_FAMILY_RESHAPE,
    .xPrepare = reshape_prepare, .xElement = reshape_element, .xFast = reshape_fast,
    .xPropagate = reshape_propagate,
};
