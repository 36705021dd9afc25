/*
 * test_graph.c - the propagated error bound of tolerance/graph.h: fused regions of several
 * registry ops judged against the MPFR reference of the whole region.
 *
 * 1. Soundness: implementations that err anywhere within each op's own model (emulated:
 *    each node's reference and bound from the op on the emulated operands, and a value
 *    drawn in that interval, its ends half of the time) stay within every node's radius,
 *    over graphs of unary, binary, dot-product, reduction and softmax ops, and of the
 *    exact ops that move, pick or round values (slice, cat, stack, where, masked_fill,
 *    clamp, cast, embedding), of the averaging pools, of attention after its projections
 *    (float, bool and causal masks), of log_softmax, logsumexp, cumsum and var, in float32
 *    and bfloat16.
 * 2. Reach: each unary op's enclosure over wide boxes (the dips of gelu, silu and mish
 *    inside them) holds the reference at 2001 points of the box; softplus's and elu's
 *    radii (attributes of either sign, softplus's branch change inside the box) hold the
 *    reference plus the op's bound there.
 * 3. The rewrites compilers make pass: reassociation and FMA contraction (linear + gelu),
 *    wider intermediates (the same in bfloat16, where the single-op judgement of gelu from
 *    eager's bfloat16 intermediate fails the fused output: the false alarm propagation
 *    removes), multiplying by a reciprocal (exp, sum, div), online softmax under a mask.
 * 4. A fusion defect (a tanh that saturates at |z| = 4 in a linear + tanh epilogue) passes
 *    a flat multiple of the single-op bounds on every element and fails the propagated one.
 * 5. A loose region's suspicious rule: compiled off eager beyond the tolerance and 16x
 *    eager's error is reported, not failed.
 * 6. Special values: a NaN input stays exact through the region and a fused kernel that
 *    loses it fails; a box that reaches a pole or a domain edge is vacuous and counted.
 * 7. Bad graphs: an operand that is not an earlier node, shapes an op refuses, an op that
 *    cannot carry its operands' error: one-line reasons, nothing judged.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpfr.h>

#include "formats/dtype.h"
#include "tolerance/graph.h"
#include "tolerance/judge.h"
#include "tolerance/mpref.h"
#include "tolerance/ops.h"
#include "support.h"

#define F32 PARITY_DT_F32
#define BF16 PARITY_DT_BF16
#define IN(k) PARITY_GRAPH_INPUT(k)

/* ---- data and small helpers ------------------------------------------------------- */

static double uniform(uint64_t *pS)            /* [0, 1) */
{
    return (double)(splitmix64(pS) >> 11) * 0x1p-53;
}

static double normal(uint64_t *pS)
{
    double u1 = uniform(pS), u2 = uniform(pS);
    return sqrt(-2.0 * log(u1 + 0x1p-60)) * cos(2.0 * M_PI * u2);
}

static parity_operand operand(const char *zName, parity_dtype dt, int rank,
                              const uint64_t *aDim, double *aValue)
{
    parity_operand o;
    memset(&o, 0, sizeof o);
    o.zName = zName;
    o.dtype = dt;
    o.rank = rank;
    memcpy(o.aDim, aDim, (size_t)rank * sizeof *aDim);
    o.nElem = parity_shape_elements(rank, aDim);
    o.aValue = aValue;
    return o;
}

/* n values of dt: normal * scale + shift, rounded to dt. */
static double *values(uint64_t *pS, size_t n, parity_dtype dt, double scale, double shift)
{
    double *a = malloc(n * sizeof *a);
    size_t i;
    cr_assert(a);
    for (i = 0; i < n; i++) a[i] = parity_round_double_to_dtype(normal(pS) * scale + shift, dt);
    return a;
}

static parity_graph_node node(const char *zOp, parity_dtype dt, int nIn, int i0, int i1, int i2)
{
    parity_graph_node n;
    memset(&n, 0, sizeof n);
    n.pDef = parity_op_find(zOp);
    cr_assert(n.pDef, "no op %s", zOp);
    n.nIn = (size_t)nIn;
    n.aIn[0] = i0;
    n.aIn[1] = i1;
    n.aIn[2] = i2;
    n.outDtype = dt;
    n.outRank = PARITY_OUT_INFER;
    return n;
}

static void with_attrs(parity_graph_node *pN, const parity_attr *aAttr, size_t nAttr)
{
    pN->aAttr = aAttr;
    pN->nAttr = nAttr;
}

static void propagate(const parity_graph_node *aNode, size_t nNode, const parity_operand *aIn,
                      size_t nIn, parity_graph_value *aOut)
{
    char zErr[512] = "";
    int rc = parity_graph_propagate(aNode, nNode, aIn, nIn, aOut, zErr, sizeof zErr);
    cr_assert_eq(rc, 0, "propagation failed: %s", zErr);
}

static void judge(const parity_graph_value *pV, const double *aEager, const double *aCompiled,
                  parity_judgement *pJ)
{
    char zErr[512] = "";
    int rc = parity_graph_judge(pV, aEager, aCompiled, aEager, NULL, pJ, zErr, sizeof zErr);
    cr_assert_eq(rc, 0, "judge failed: %s", zErr);
}

static float bf16f(float v) { return (float)parity_round_double_to_dtype(v, BF16); }
static float k_gelu(float x) { return x * 0.5f * (1.0f + erff(x * (float)M_SQRT1_2)); }

/* ---- 1. soundness against emulated correct implementations ------------------------- */

/* Emulates one correct implementation of the graph, node by node: the op's reference and
 * bound on the emulated operands, and a value within the bound (the ends half the time,
 * shrunk by 2^-30 so binary64's own rounding here cannot step outside). Every node's value
 * must lie within its propagated radius. Returns the number of elements checked. */
static uint64_t check_emulated(const parity_graph_node *aNode, size_t nNode,
                               const parity_operand *aIn, size_t nIn,
                               const parity_graph_value *aProp, uint64_t *pS)
{
    parity_operand aEm[16];
    uint64_t nChecked = 0;
    size_t k, i;
    mpfr_t ref;
    mpfr_init2(ref, PARITY_REF_PREC);
    cr_assert(nNode <= 16);
    (void)nIn;
    for (k = 0; k < nNode; k++) {
        parity_operand aOp[PARITY_GRAPH_MAX_IN];
        parity_op_call call;
        char zErr[256];
        double *aC;
        uint64_t e;
        for (i = 0; i < aNode[k].nIn; i++)
            aOp[i] = aNode[k].aIn[i] >= 0 ? aEm[aNode[k].aIn[i]] : aIn[-1 - aNode[k].aIn[i]];
        cr_assert_eq(parity_op_begin(&call, aNode[k].pDef, aOp, aNode[k].nIn, aNode[k].outDtype,
                                     aProp[k].value.rank, aProp[k].value.aDim, aNode[k].accDtype,
                                     aNode[k].aAttr, aNode[k].nAttr, zErr, sizeof zErr), 0,
                     "%s", zErr);
        aC = malloc((call.nOut + 1) * sizeof *aC);
        cr_assert(aC);
        for (e = 0; e < call.nOut; e++) {
            double b, r, t, mid = aProp[k].value.aValue[e], rad = aProp[k].aRadius[e];
            call.overflowPossible = 0;
            call.nonfiniteAny = 0;
            call.probBound = NAN;
            cr_assert_eq(call.pDef->xElement(&call, e, ref, &b), 0);
            r = mpfr_get_d(ref, MPFR_RNDN);
            t = uniform(pS) < 0.5 ? (uniform(pS) < 0.5 ? -1.0 : 1.0) : 2.0 * uniform(pS) - 1.0;
            aC[e] = isfinite(r) && b < INFINITY && !call.overflowPossible
                  ? r + t * b * (1.0 - 0x1p-30) : r;
            if (!(rad < INFINITY)) continue;       /* vacuous: anything goes */
            nChecked++;
            if (!isfinite(mid)) {
                cr_assert(same_double(aC[e], mid), "node %zu (%s) element %llu: exact %g, "
                          "emulated %g", k, call.pDef->zName, (unsigned long long)e, mid, aC[e]);
                continue;
            }
            cr_assert(fabs(aC[e] - mid) <= rad,
                      "node %zu (%s) element %llu: emulated %.17g is %.3g from the value "
                      "%.17g, radius %.3g", k, call.pDef->zName, (unsigned long long)e, aC[e],
                      fabs(aC[e] - mid), mid, rad);
        }
        parity_op_end(&call);
        aEm[k] = aProp[k].value;
        aEm[k].aValue = aC;
    }
    for (k = 0; k < nNode; k++) free(aEm[k].aValue);
    mpfr_clear(ref);
    return nChecked;
}

/* Runs check_emulated nTrial times over one graph; returns the elements checked. */
static uint64_t soundness(const parity_graph_node *aNode, size_t nNode,
                          const parity_operand *aIn, size_t nIn, int nTrial, uint64_t seed)
{
    parity_graph_value aProp[16];
    uint64_t s = seed, n = 0;
    int t;
    propagate(aNode, nNode, aIn, nIn, aProp);
    for (t = 0; t < nTrial; t++) n += check_emulated(aNode, nNode, aIn, nIn, aProp, &s);
    parity_graph_values_free(aProp, nNode);
    return n;
}

Test(graph, emulated_correct_implementations_stay_within_the_radius)
{
    uint64_t s = 11, n;
    const parity_dtype aDt[2] = { F32, BF16 };
    int iDt;
    for (iDt = 0; iDt < 2; iDt++) {
        parity_dtype dt = aDt[iDt];
        uint64_t d8x4[2] = { 8, 4 }, d4x32[2] = { 4, 32 }, d16x32[2] = { 16, 32 }, d16[1] = { 16 };
        uint64_t d3x16[2] = { 3, 16 }, d2x3x8[3] = { 2, 3, 8 }, d8x5[2] = { 8, 5 };
        double *x = values(&s, 32, dt, 1.0, 0.0), *y = values(&s, 32, dt, 1.0, 0.0);
        double *z = values(&s, 32, dt, 0.3, 0.0);
        double *a = values(&s, 128, dt, 1.0, 0.0), *w = values(&s, 512, dt, 0.2, 0.0);
        double *b = values(&s, 16, dt, 0.5, 0.0), *e = values(&s, 48, dt, 2.0, 0.0);
        double *q = values(&s, 48, dt, 1.0, 0.0), *r = values(&s, 40, dt, 0.5, 0.0);
        double *sc = values(&s, 128, dt, 3.0, 0.0), *mask = calloc(128, sizeof *mask);
        int i;
        for (i = 0; i < 128; i++)
            if (i % 7 == 3) mask[i] = -INFINITY; else if (i % 5 == 1) mask[i] = -1e4;
        {
            /* add -> gelu, mul -> sub -> relu -> mean, exp -> log, sigmoid, mish, erf...,
             * softplus -> elu */
            parity_operand in[3] = { operand("x", dt, 2, d8x4, x), operand("y", dt, 2, d8x4, y),
                                     operand("z", dt, 2, d8x4, z) };
            parity_attr aMean[1] = { attr_int(0, "dim", 1) };
            /* softplus with its branch change at sub's 0.5 (beta 2, threshold 1) and elu
             * with a negative alpha after the fused ops */
            parity_attr aSoftplus[2] = { attr_float(0, "beta", 2.0),
                                         attr_float(1, "threshold", 1.0) };
            parity_attr aElu[1] = { attr_float(0, "alpha", -0.5) };
            parity_graph_node g[14] = {
                node("add", dt, 2, IN(0), IN(1), 0), node("gelu", dt, 1, 0, 0, 0),
                node("mul", dt, 2, 1, IN(2), 0), node("sub", dt, 2, 2, IN(0), 0),
                node("relu", dt, 1, 3, 0, 0), node("silu", dt, 1, 3, 0, 0),
                node("exp", dt, 1, 4, 0, 0), node("log", dt, 1, 6, 0, 0),
                node("sigmoid", dt, 1, 7, 0, 0), node("mish", dt, 1, 5, 0, 0),
                node("mean", dt, 1, 9, 0, 0), node("div", dt, 2, 8, 9, 0),
                node("softplus", dt, 1, 3, 0, 0), node("elu", dt, 1, 12, 0, 0),
            };
            with_attrs(&g[10], aMean, 1);
            with_attrs(&g[12], aSoftplus, 2);
            with_attrs(&g[13], aElu, 1);
            n = soundness(g, 14, in, 3, 20, 101 + iDt);
            cr_assert_gt(n, 20 * 8 * 4 * 12, "checked %llu", (unsigned long long)n);
        }
        {
            /* linear (bias) -> tanh, matmul -> silu, amax */
            /* and the dot products again after them: tanh [4, 16] @ w^T -> linear with the
             * bias from an op, matmul of erf's [2, 3, 5] by a [5, 16] slice of w */
            uint64_t d5x16[2] = { 5, 16 }, d32x16[2] = { 32, 16 };
            parity_operand in[7] = { operand("a", dt, 2, d4x32, a),
                                     operand("w", dt, 2, d16x32, w), operand("b", dt, 1, d16, b),
                                     operand("q", dt, 3, d2x3x8, q), operand("r", dt, 2, d8x5, r),
                                     operand("w5", dt, 2, d5x16, w),
                                     operand("w32", dt, 2, d32x16, w) };
            parity_attr aMax[1] = { attr_int(0, "dim", -1) };
            parity_graph_node g[8] = {
                node("linear", dt, 3, IN(0), IN(1), IN(2)), node("tanh", dt, 1, 0, 0, 0),
                node("matmul", dt, 2, IN(3), IN(4), 0), node("erf", dt, 1, 2, 0, 0),
                node("amax", dt, 1, 3, 0, 0), node("sigmoid", dt, 1, 1, 0, 0),
                node("linear", dt, 2, 1, IN(6), 0), node("matmul", dt, 2, 3, IN(5), 0),
            };
            with_attrs(&g[4], aMax, 1);
            n = soundness(g, 8, in, 7, 20, 202 + iDt);
            cr_assert_gt(n, 20 * (64 + 30 + 128 + 96));
        }
        {
            /* exp -> sum -> div (softmax decomposed); masked scores -> softmax -> mul */
            parity_operand in[3] = { operand("e", dt, 2, d3x16, e),
                                     operand("sc", dt, 2, d4x32, sc),
                                     operand("mask", dt, 2, d4x32, mask) };
            parity_attr aSum[2] = { attr_int(0, "dim", -1), attr_int(1, "keepdim", 1) };
            parity_attr aSoft[1] = { attr_int(2, "dim", -1) };
            parity_graph_node g[6] = {
                node("exp", dt, 1, IN(0), 0, 0), node("sum", dt, 1, 0, 0, 0),
                node("div", dt, 2, 0, 1, 0), node("add", dt, 2, IN(1), IN(2), 0),
                node("softmax", dt, 1, 3, 0, 0), node("mul", dt, 2, 4, 4, 0),
            };
            with_attrs(&g[1], aSum, 2);
            with_attrs(&g[4], aSoft, 1);
            n = soundness(g, 6, in, 3, 20, 303 + iDt);
            cr_assert_gt(n, 20 * (48 + 3 + 48 + 128));
        }
        {
            /* residual add -> layer_norm (weight, bias) -> gelu; a layer_norm after a sum */
            uint64_t d6x32[2] = { 6, 32 }, d32[1] = { 32 };
            double *h = values(&s, 192, dt, 1.0, 0.5), *res = values(&s, 192, dt, 0.3, 0.0);
            double *lw = values(&s, 32, dt, 0.3, 1.0), *lb = values(&s, 32, dt, 0.2, 0.0);
            parity_operand in[4] = { operand("h", dt, 2, d6x32, h), operand("res", dt, 2, d6x32, res),
                                     operand("lw", dt, 1, d32, lw), operand("lb", dt, 1, d32, lb) };
            parity_attr aLn[2] = { attr_int(3, "normalized_shape", 32), attr_float(4, "eps", 1e-5) };
            parity_graph_node g[4] = {
                node("add", dt, 2, IN(0), IN(1), 0), node("layer_norm", dt, 3, 0, IN(2), IN(3)),
                node("gelu", dt, 1, 1, 0, 0), node("layer_norm", dt, 1, 0, 0, 0),
            };
            with_attrs(&g[1], aLn, 2);
            with_attrs(&g[3], aLn, 2);
            n = soundness(g, 4, in, 4, 20, 404 + iDt);
            cr_assert_gt(n, 20 * 4 * 192 * 9 / 10, "checked %llu", (unsigned long long)n);
            free(h); free(res); free(lw); free(lb);
        }
        {
            /* residual add -> rms_norm (weight) -> silu, as in a Llama block; an rms_norm
             * without weight after an exp (rows of one sign, a wide dynamic range) */
            uint64_t d6x32[2] = { 6, 32 }, d32[1] = { 32 };
            double *h = values(&s, 192, dt, 1.0, 0.0), *res = values(&s, 192, dt, 0.3, 0.0);
            double *rw = values(&s, 32, dt, 0.3, 1.0);
            parity_operand in[3] = { operand("h", dt, 2, d6x32, h), operand("res", dt, 2, d6x32, res),
                                     operand("rw", dt, 1, d32, rw) };
            parity_attr aRms[2] = { attr_int(3, "normalized_shape", 32), attr_float(4, "eps", 1e-6) };
            parity_graph_node g[5] = {
                node("add", dt, 2, IN(0), IN(1), 0), node("rms_norm", dt, 2, 0, IN(2), 0),
                node("silu", dt, 1, 1, 0, 0), node("exp", dt, 1, 0, 0, 0),
                node("rms_norm", dt, 1, 3, 0, 0),
            };
            with_attrs(&g[1], aRms, 2);
            with_attrs(&g[4], aRms, 2);
            n = soundness(g, 5, in, 3, 20, 505 + iDt);
            cr_assert_gt(n, 20 * 5 * 192 * 9 / 10, "checked %llu", (unsigned long long)n);
            free(h); free(res); free(rw);
        }
        {
            /* torch 2.15's RMSNorm decomposed: pow(2) -> mean -> add eps -> rsqrt -> mul ->
             * mul weight; and pow's other cases after an op: x^3, exp(x)^-0.5, |x|^1.5,
             * (x + 2)^-2 */
            uint64_t d6x32[2] = { 6, 32 }, d32[1] = { 32 }, d1[1] = { 1 };
            double *h = values(&s, 192, dt, 1.0, 0.0), *res = values(&s, 192, dt, 0.3, 0.0);
            double *rw = values(&s, 32, dt, 0.3, 1.0), epsV = 1e-6, two = 2.0;
            parity_operand in[5] = { operand("h", dt, 2, d6x32, h), operand("res", dt, 2, d6x32, res),
                                     operand("rw", dt, 1, d32, rw), operand("eps", dt, 1, d1, &epsV),
                                     operand("two", dt, 1, d1, &two) };
            parity_attr aP2[1] = { attr_float(0, "exponent", 2.0) };
            parity_attr aMean[2] = { attr_int(1, "dim", -1), attr_int(2, "keepdim", 1) };
            parity_attr aP3[1] = { attr_float(3, "exponent", 3.0) };
            parity_attr aPm05[1] = { attr_float(4, "exponent", -0.5) };
            parity_attr aP15[1] = { attr_float(5, "exponent", 1.5) };
            parity_attr aPm2[1] = { attr_float(6, "exponent", -2.0) };
            parity_graph_node g[13] = {
                node("add", dt, 2, IN(0), IN(1), 0), node("pow", dt, 1, 0, 0, 0),
                node("mean", dt, 1, 1, 0, 0), node("add", dt, 2, 2, IN(3), 0),
                node("rsqrt", dt, 1, 3, 0, 0), node("mul", dt, 2, 0, 4, 0),
                node("mul", dt, 2, 5, IN(2), 0), node("pow", dt, 1, 0, 0, 0),
                node("exp", dt, 1, 0, 0, 0), node("pow", dt, 1, 8, 0, 0),
                node("abs", dt, 1, 0, 0, 0), node("pow", dt, 1, 10, 0, 0),
                node("add", dt, 2, 0, IN(4), 0),
            };
            parity_graph_node g2[1] = { node("pow", dt, 1, 12, 0, 0) };
            parity_graph_node all[14];
            with_attrs(&g[1], aP2, 1);
            with_attrs(&g[2], aMean, 2);
            with_attrs(&g[7], aP3, 1);
            with_attrs(&g[9], aPm05, 1);
            with_attrs(&g[11], aP15, 1);
            with_attrs(&g2[0], aPm2, 1);
            memcpy(all, g, sizeof g);
            all[13] = g2[0];
            n = soundness(all, 14, in, 5, 20, 606 + iDt);
            cr_assert_gt(n, 20 * 12 * 192 * 8 / 10, "checked %llu", (unsigned long long)n);
            free(h); free(res); free(rw);
        }
        {
            /* a CNN compiled whole: conv2d (bias) -> batch_norm (inference) -> relu ->
             * max_pool2d -> conv2d -> reshape -> transpose -> linear; a permute beside */
            uint64_t dX[4] = { 2, 3, 8, 8 }, dW1[4] = { 4, 3, 3, 3 }, dC4[1] = { 4 };
            uint64_t dW2[4] = { 5, 4, 2, 2 }, dFc[2] = { 3, 20 };
            double *xi = values(&s, 384, dt, 1.0, 0.0), *w1 = values(&s, 108, dt, 0.3, 0.0);
            double *b1 = values(&s, 4, dt, 0.1, 0.0), *bw = values(&s, 4, dt, 0.2, 1.0);
            double *bb = values(&s, 4, dt, 0.1, 0.0), *bm = values(&s, 4, dt, 0.2, 0.0);
            double *bv = values(&s, 4, dt, 0.1, 1.0), *w2 = values(&s, 80, dt, 0.3, 0.0);
            double *fc = values(&s, 60, dt, 0.2, 0.0);
            int ib;
            parity_operand in[9] = { operand("x", dt, 4, dX, xi), operand("w1", dt, 4, dW1, w1),
                                     operand("b1", dt, 1, dC4, b1), operand("bw", dt, 1, dC4, bw),
                                     operand("bb", dt, 1, dC4, bb), operand("bm", dt, 1, dC4, bm),
                                     operand("bv", dt, 1, dC4, bv), operand("w2", dt, 4, dW2, w2),
                                     operand("fc", dt, 2, dFc, fc) };
            int64_t aK[2] = { 2, 2 }, aShape[2] = { 2, 20 }, aDims[4] = { 0, 2, 3, 1 };
            parity_attr aPool[1], aRs[1], aTr[2] = { attr_int(0, "dim0", 0), attr_int(1, "dim1", 1) };
            parity_attr aPerm[1];
            parity_graph_node g[9] = {
                node("conv2d", dt, 3, IN(0), IN(1), IN(2)), node("batch_norm", dt, 3, 0, IN(3), IN(4)),
                node("relu", dt, 1, 1, 0, 0), node("max_pool2d", dt, 1, 2, 0, 0),
                node("conv2d", dt, 2, 3, IN(7), 0), node("reshape", dt, 1, 4, 0, 0),
                node("transpose", dt, 1, 5, 0, 0), node("linear", dt, 2, 5, IN(8), 0),
                node("permute", dt, 1, 1, 0, 0),
            };
            for (ib = 0; ib < 9; ib++) cr_assert_not_null(g[ib].pDef);
            aPool[0] = attr_ints(2, "kernel_size", aK, 2);
            aRs[0] = attr_ints(3, "shape", aShape, 2);
            aPerm[0] = attr_ints(4, "dims", aDims, 4);
            g[1].nIn = 5;
            g[1].aIn[3] = IN(5);
            g[1].aIn[4] = IN(6);
            with_attrs(&g[3], aPool, 1);
            with_attrs(&g[5], aRs, 1);
            with_attrs(&g[6], aTr, 2);
            with_attrs(&g[8], aPerm, 1);
            n = soundness(g, 9, in, 9, 20, 707 + iDt);
            cr_assert_gt(n, 20 * (288 * 4 + 72 + 40 * 3 + 6) * 8 / 10,
                         "checked %llu", (unsigned long long)n);
            free(xi); free(w1); free(b1); free(bw); free(bb); free(bm); free(bv); free(w2);
            free(fc);
        }
        {
            /* the exact ops of a transformer's plumbing, after ops that err: linear ->
             * slice, slice -> cat -> gelu -> where -> masked_fill -> clamp -> cast to the
             * other float dtype and back; tanh -> embedding; stack */
            parity_dtype other = dt == F32 ? BF16 : F32;
            uint64_t d4x16[2] = { 4, 16 }, d8x16[2] = { 8, 16 }, d8x4[2] = { 8, 4 };
            uint64_t d10x4[2] = { 10, 4 }, d4[1] = { 4 };
            double *h = values(&s, 64, dt, 1.0, 0.0), *wl = values(&s, 128, dt, 0.3, 0.0);
            double *we = values(&s, 40, dt, 1.0, 0.0), cond[32], fillMask[32], idx[4] = { 3, 0, 9, 3 };
            parity_operand in[6] = { operand("h", dt, 2, d4x16, h), operand("wl", dt, 2, d8x16, wl),
                                     operand("cond", PARITY_DT_BOOL, 2, d8x4, cond),
                                     operand("fill_mask", PARITY_DT_BOOL, 2, d8x4, fillMask),
                                     operand("we", dt, 2, d10x4, we),
                                     operand("idx", PARITY_DT_I64, 1, d4, idx) };
            parity_attr aSl1[4] = { attr_int(0, "dim", 1), attr_int(1, "start", 0),
                                    attr_int(2, "end", 4), attr_int(3, "step", 1) };
            parity_attr aSl2[4] = { attr_int(0, "dim", 1), attr_int(4, "start", 4),
                                    attr_int(5, "end", 8), attr_int(3, "step", 1) };
            parity_attr aDim0[1] = { attr_int(6, "dim", 0) };
            parity_attr aFill[1] = { attr_float(2, "value", 0.5) };
            parity_attr aClamp[2] = { attr_float(0, "min", -0.5), attr_float(1, "max", 0.5) };
            parity_attr aTo[1] = { attr_str(0, "to", parity_dtype_name(other)) };
            parity_attr aBack[1] = { attr_str(1, "to", parity_dtype_name(dt)) };
            parity_graph_node g[13] = {
                node("linear", dt, 2, IN(0), IN(1), 0), node("slice", dt, 1, 0, 0, 0),
                node("slice", dt, 1, 0, 0, 0), node("cat", dt, 2, 1, 2, 0),
                node("gelu", dt, 1, 3, 0, 0), node("where", dt, 3, IN(2), 4, 3),
                node("masked_fill", dt, 2, 5, IN(3), 0), node("clamp", dt, 1, 6, 0, 0),
                node("cast", other, 1, 7, 0, 0), node("cast", dt, 1, 8, 0, 0),
                node("tanh", dt, 1, IN(4), 0, 0), node("embedding", dt, 2, 10, IN(5), 0),
                node("stack", dt, 2, 1, 2, 0),
            };
            for (i = 0; i < 32; i++) {
                cond[i] = i % 3 == 0;
                fillMask[i] = i % 5 == 2;
            }
            with_attrs(&g[1], aSl1, 4);
            with_attrs(&g[2], aSl2, 4);
            with_attrs(&g[3], aDim0, 1);
            with_attrs(&g[6], aFill, 1);
            with_attrs(&g[7], aClamp, 2);
            with_attrs(&g[8], aTo, 1);
            with_attrs(&g[9], aBack, 1);
            with_attrs(&g[12], aDim0, 1);
            n = soundness(g, 13, in, 6, 20, 808 + iDt);
            cr_assert_gt(n, 20 * 350, "checked %llu", (unsigned long long)n);
            free(h); free(wl); free(we);
        }
        {
            /* a CNN's head: conv2d -> relu -> avg_pool2d (3x3, stride 2, padding 1, the
             * padding not counted) -> adaptive_avg_pool2d to 2x2, as ResNet ends */
            uint64_t dX[4] = { 2, 3, 9, 9 }, dW[4] = { 4, 3, 3, 3 };
            double *xi = values(&s, 486, dt, 1.0, 0.0), *wc = values(&s, 108, dt, 0.3, 0.0);
            parity_operand in[2] = { operand("x", dt, 4, dX, xi), operand("w", dt, 4, dW, wc) };
            int64_t aK[2] = { 3, 3 }, aS[2] = { 2, 2 }, aP[2] = { 1, 1 }, aO[2] = { 2, 2 };
            parity_attr aAvg[4] = { attr_ints(0, "kernel_size", aK, 2), attr_ints(1, "stride", aS, 2),
                                    attr_ints(2, "padding", aP, 2),
                                    attr_int(3, "count_include_pad", 0) };
            parity_attr aAd[1] = { attr_ints(4, "output_size", aO, 2) };
            parity_graph_node g[4] = {
                node("conv2d", dt, 2, IN(0), IN(1), 0), node("relu", dt, 1, 0, 0, 0),
                node("avg_pool2d", dt, 1, 1, 0, 0), node("adaptive_avg_pool2d", dt, 1, 2, 0, 0),
            };
            with_attrs(&g[2], aAvg, 4);
            with_attrs(&g[3], aAd, 1);
            n = soundness(g, 4, in, 2, 20, 909 + iDt);
            /* [2, 4, 7, 7] twice, [2, 4, 4, 4], [2, 4, 2, 2]: none vacuous */
            cr_assert_eq(n, 20 * (2 * 392 + 128 + 32), "checked %llu", (unsigned long long)n);
            free(xi); free(wc);
        }
        {
            /* self-attention compiled whole: q, k, v projections -> sdpa, with a float mask
             * made by an op (a bias added to an input mask with -inf entries), with a bool
             * mask, and causal; then the output projection */
            uint64_t d2x6x16[3] = { 2, 6, 16 }, d8x16[2] = { 8, 16 }, d6x6[2] = { 6, 6 };
            uint64_t d16x8[2] = { 16, 8 };
            double *xa = values(&s, 192, dt, 1.0, 0.0), *wq = values(&s, 128, dt, 0.4, 0.0);
            double *wk = values(&s, 128, dt, 0.4, 0.0), *wv = values(&s, 128, dt, 0.4, 0.0);
            double *wo = values(&s, 128, dt, 0.3, 0.0), *bias = values(&s, 36, dt, 0.5, 0.0);
            double fm[36], bm[36];
            parity_operand in[7] = { operand("x", dt, 3, d2x6x16, xa), operand("wq", dt, 2, d8x16, wq),
                                     operand("wk", dt, 2, d8x16, wk), operand("wv", dt, 2, d8x16, wv),
                                     operand("fm", dt, 2, d6x6, fm), operand("bm", PARITY_DT_BOOL, 2, d6x6, bm),
                                     operand("wo", dt, 2, d16x8, wo) };
            parity_operand inB = operand("bias", dt, 2, d6x6, bias);
            parity_operand all[8];
            parity_attr aCausal[1] = { attr_int(0, "is_causal", 1) };
            parity_graph_node g[9] = {
                node("linear", dt, 2, IN(0), IN(1), 0), node("linear", dt, 2, IN(0), IN(2), 0),
                node("linear", dt, 2, IN(0), IN(3), 0), node("add", dt, 2, IN(4), IN(7), 0),
                node("scaled_dot_product_attention", dt, 3, 0, 1, 2),
                node("scaled_dot_product_attention", dt, 3, 0, 1, 2),
                node("scaled_dot_product_attention", dt, 3, 0, 1, 2),
                node("linear", dt, 2, 4, IN(6), 0), node("tanh", dt, 1, 6, 0, 0),
            };
            for (i = 0; i < 36; i++) {
                fm[i] = i % 6 > i / 6 + 2 ? -INFINITY : 0.0;
                bm[i] = i % 7 != 2;
            }
            g[4].nIn = 4;
            g[4].aIn[3] = 3;                   /* the float mask from the add */
            g[5].nIn = 4;
            g[5].aIn[3] = IN(5);               /* the bool mask */
            with_attrs(&g[6], aCausal, 1);
            memcpy(all, in, sizeof in);
            all[7] = inB;
            n = soundness(g, 9, all, 8, 20, 1010 + iDt);
            /* 96 elements each for the three projections and three attentions, 192 for the
             * output projection and its tanh, 36 for the mask */
            cr_assert_gt(n, 20 * (6 * 96 + 2 * 192 + 36) * 9 / 10, "checked %llu",
                         (unsigned long long)n);
            free(xa); free(wq); free(wk); free(wv); free(wo); free(bias);
        }
        {
            /* a classifier's head: linear -> log_softmax, masked scores (an input mask with
             * -inf entries added) -> log_softmax, logsumexp with keepdim, exp of it; and
             * the logits' cumsum and variance */
            uint64_t d6x24[2] = { 6, 24 }, d10x24[2] = { 10, 24 }, d6x10[2] = { 6, 10 };
            double *h = values(&s, 144, dt, 1.0, 0.0), *wh = values(&s, 240, dt, 0.5, 0.0);
            double hm[60];
            parity_operand in[3] = { operand("h", dt, 2, d6x24, h), operand("wh", dt, 2, d10x24, wh),
                                     operand("hm", dt, 2, d6x10, hm) };
            parity_attr aLs[1] = { attr_int(0, "dim", -1) };
            parity_attr aLse[2] = { attr_int(0, "dim", -1), attr_int(1, "keepdim", 1) };
            parity_graph_node g[8] = {
                node("linear", dt, 2, IN(0), IN(1), 0), node("log_softmax", dt, 1, 0, 0, 0),
                node("add", dt, 2, 0, IN(2), 0), node("log_softmax", dt, 1, 2, 0, 0),
                node("logsumexp", dt, 1, 2, 0, 0), node("exp", dt, 1, 4, 0, 0),
                node("cumsum", dt, 1, 0, 0, 0), node("var", dt, 1, 0, 0, 0),
            };
            for (i = 0; i < 60; i++) hm[i] = i % 4 == 1 ? -INFINITY : 0.0;
            with_attrs(&g[1], aLs, 1);
            with_attrs(&g[3], aLs, 1);
            with_attrs(&g[4], aLse, 2);
            with_attrs(&g[6], aLs, 1);
            with_attrs(&g[7], aLs, 1);         /* var over the 10 logits, correction 1 */
            n = soundness(g, 8, in, 3, 20, 1111 + iDt);
            /* none vacuous: a -inf mask added to a moving score is exactly -inf */
            cr_assert_eq(n, 20 * (5 * 60 + 12 + 6), "checked %llu", (unsigned long long)n);
            free(h); free(wh);
        }
        free(x); free(y); free(z); free(a); free(w); free(b); free(e); free(q); free(r);
        free(sc); free(mask);
    }
}

/* ---- 2. reach over wide boxes ------------------------------------------------------ */

Test(graph, unary_reach_holds_the_function_over_wide_boxes)
{
    static const char *azOp[] = { "gelu", "silu", "mish", "sigmoid", "tanh", "exp", "log",
                                  "sqrt", "rsqrt", "reciprocal", "erf", "neg", "abs", "relu",
                                  "cos", "sin", "hardsigmoid", "hardswish" };
    static const double aCenter[] = { -0.75, -1.28, -1.19, -2.0, -3.0, 0.1, 2.0, 0.6, 5.0,
                                      -9.0, 1.5707963, 3.1415927, -1.5, 40.0 };
    static const double aRadius[] = { 0.05, 0.3, 1.5, 1.8 };
    size_t iOp, iC, iR;
    mpfr_t ref;
    mpfr_init2(ref, PARITY_REF_PREC);
    for (iOp = 0; iOp < sizeof azOp / sizeof azOp[0]; iOp++)
        for (iC = 0; iC < sizeof aCenter / sizeof aCenter[0]; iC++)
            for (iR = 0; iR < sizeof aRadius / sizeof aRadius[0]; iR++) {
                const parity_op_def *pDef = parity_op_find(azOp[iOp]);
                uint64_t d1[1] = { 1 };
                double x = aCenter[iC], r = aRadius[iR], rad, mid, pt;
                const double *aRad[1] = { &r };
                parity_operand in = operand("x", F32, 1, d1, &x);
                parity_op_call call;
                char zErr[256];
                int k;
                cr_assert_eq(parity_op_begin(&call, pDef, &in, 1, F32, 1, d1, PARITY_DT_INVALID,
                                             NULL, 0, zErr, sizeof zErr), 0, "%s", zErr);
                call.overflowPossible = 0;
                cr_assert_eq(pDef->xPropagate(&call, aRad, 0, ref, &rad), 0);
                mid = mpfr_get_d(ref, MPFR_RNDN);
                parity_op_end(&call);
                if (!(rad < INFINITY)) {
                    /* only where the box reaches a pole or leaves the domain */
                    cr_assert(x - r <= 0.0, "%s at %g +- %g: vacuous", azOp[iOp], x, r);
                    continue;
                }
                for (k = 0; k <= 2000; k++) {
                    double b, v;
                    pt = x - r + 2.0 * r * k / 2000.0;
                    in.aValue = &pt;
                    cr_assert_eq(parity_op_begin(&call, pDef, &in, 1, F32, 1, d1,
                                                 PARITY_DT_INVALID, NULL, 0, zErr, sizeof zErr), 0);
                    cr_assert_eq(pDef->xElement(&call, 0, ref, &b), 0);
                    parity_op_end(&call);
                    v = mpfr_get_d(ref, MPFR_RNDN);
                    cr_assert(fabs(v - mid) <= rad, "%s on %g +- %g: f(%.17g) = %.17g is %.3g "
                              "from %.17g, radius %.3g", azOp[iOp], x, r, pt, v, fabs(v - mid),
                              mid, rad);
                }
                in.aValue = &x;
            }
    mpfr_clear(ref);
}

/* softplus and elu, with their attributes: at 2001 points of each box the reference plus
 * the op's own bound there stays within the propagated radius, across softplus's branch
 * change (t/beta, either sign of beta) and elu's 0 (alpha of either sign). */
Test(graph, softplus_and_elu_radii_hold_every_implementation_in_the_box)
{
    typedef struct { const char *zOp; double a, b; } param_case;   /* beta, threshold; alpha */
    static const param_case aCase[] = {
        { "softplus", 1.0, 20.0 }, { "softplus", 2.0, 5.0 }, { "softplus", -0.7, 3.0 },
        { "softplus", 0.3, 1.0 }, { "elu", 1.0, 0 }, { "elu", -0.5, 0 }, { "elu", 2.5, 0 },
    };
    /* t/beta of the cases (2.5, 10/3, -4.29) and elu's 0 among them */
    static const double aCenter[] = { -30.0, -3.0, -0.01, 0.0, 0.4, 2.5, 10.0 / 3.0, -4.29, 20.0 };
    /* 1e-8: a box beside t/beta that holds no branch change, where the kernel may still
     * take the other branch */
    static const double aRadius[] = { 1e-8, 0.002, 0.05, 0.3, 1.5 };
    static const parity_dtype aDt[] = { F32, BF16 };
    size_t iCase, iC, iR, iDt;
    uint64_t nChecked = 0;
    mpfr_t ref;
    mpfr_init2(ref, PARITY_REF_PREC);
    for (iCase = 0; iCase < sizeof aCase / sizeof aCase[0]; iCase++)
        for (iDt = 0; iDt < 2; iDt++)
            for (iC = 0; iC < sizeof aCenter / sizeof aCenter[0]; iC++)
                for (iR = 0; iR < sizeof aRadius / sizeof aRadius[0]; iR++) {
                    const param_case *pC = &aCase[iCase];
                    const parity_op_def *pDef = parity_op_find(pC->zOp);
                    int isSoftplus = strcmp(pC->zOp, "softplus") == 0;
                    parity_attr aAttr[2] = {
                        attr_float(0, isSoftplus ? "beta" : "alpha", pC->a),
                        attr_float(1, "threshold", pC->b) };
                    size_t nAttr = isSoftplus ? 2 : 1;
                    uint64_t d1[1] = { 1 };
                    double x = parity_round_double_to_dtype(aCenter[iC], aDt[iDt]);
                    double r = aRadius[iR], rad, mid, pt;
                    const double *aRad[1] = { &r };
                    parity_operand in = operand("x", aDt[iDt], 1, d1, &x);
                    parity_op_call call;
                    char zErr[256];
                    int k;
                    cr_assert_eq(parity_op_begin(&call, pDef, &in, 1, aDt[iDt], 1, d1,
                                                 PARITY_DT_INVALID, aAttr, nAttr, zErr,
                                                 sizeof zErr), 0, "%s", zErr);
                    cr_assert(pDef->xPropagate != NULL);
                    call.overflowPossible = 0;
                    cr_assert_eq(pDef->xPropagate(&call, aRad, 0, ref, &rad), 0);
                    mid = mpfr_get_d(ref, MPFR_RNDN);
                    parity_op_end(&call);
                    cr_assert(rad < INFINITY, "%s(%g, %g) at %g +- %g: vacuous", pC->zOp,
                              pC->a, pC->b, x, r);
                    for (k = 0; k <= 2000; k++) {
                        double b, v;
                        pt = x - r + 2.0 * r * k / 2000.0;
                        in.aValue = &pt;
                        cr_assert_eq(parity_op_begin(&call, pDef, &in, 1, aDt[iDt], 1, d1,
                                                     PARITY_DT_INVALID, aAttr, nAttr, zErr,
                                                     sizeof zErr), 0);
                        cr_assert_eq(pDef->xElement(&call, 0, ref, &b), 0);
                        parity_op_end(&call);
                        v = mpfr_get_d(ref, MPFR_RNDN);
                        cr_assert(fabs(v - mid) + b <= rad, "%s(%g, %g) on %g +- %g: f(%.17g) "
                                  "= %.17g, bound %.3g, is %.3g from %.17g, radius %.3g",
                                  pC->zOp, pC->a, pC->b, x, r, pt, v, b, fabs(v - mid), mid,
                                  rad);
                        nChecked++;
                    }
                    in.aValue = &x;
                }
    mpfr_clear(ref);
    cr_assert_eq(nChecked, 7ull * 2 * 9 * 5 * 2001);
}

/* ---- 3. the rewrites compilers make ------------------------------------------------- */

/* A clean rewrite: eager's and the fused kernel's outputs differ somewhere (else nothing
 * is tested) and both pass the region, every element checked, none vacuous. */
static void expect_both_pass(const parity_graph_value *pV, const double *aEager,
                             const double *aFused, const char *zRewrite)
{
    parity_judgement jE, jF;
    uint64_t i, nDiffer = 0;
    for (i = 0; i < pV->value.nElem; i++) nDiffer += !same_double(aEager[i], aFused[i]);
    cr_assert_gt(nDiffer, 0, "%s: eager and fused gave the same bits: nothing tested", zRewrite);
    judge(pV, NULL, aEager, &jE);
    judge(pV, NULL, aFused, &jF);
    cr_assert_eq(jE.nFail, 0, "%s: eager fails the region: %llu", zRewrite,
                 (unsigned long long)jE.nFail);
    cr_assert_eq(jF.nFail, 0, "%s: the fused kernel fails the region: %llu (worst ratio %g)",
                 zRewrite, (unsigned long long)jF.nFail, jF.worstRatio);
    cr_assert_eq(jF.nChecked, pV->value.nElem);
    cr_assert_eq(jF.nVacuous, 0);
}

/* x [M, K] @ w [N, K]^T + b in two orders: eager's (ascending, bias last, float sums) and a
 * fused kernel's (descending, bias first, fmaf), then gelu; each side rounded to dt at the
 * ends eager rounds at (eager: after linear and after gelu; fused: once). */
static void linear_gelu(const double *x, const double *w, const double *b, int M, int N, int K,
                        parity_dtype dt, double *aEager, double *aFused, double *aEagerZ)
{
    int i, j, k;
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            float e = 0.0f, f = (float)b[j];
            for (k = 0; k < K; k++) e += (float)x[i * K + k] * (float)w[j * K + k];
            e += (float)b[j];
            for (k = K - 1; k >= 0; k--) f = fmaf((float)x[i * K + k], (float)w[j * K + k], f);
            if (dt == BF16) e = bf16f(e);
            aEagerZ[i * N + j] = e;
            aEager[i * N + j] = parity_round_double_to_dtype(k_gelu(e), dt);
            aFused[i * N + j] = parity_round_double_to_dtype(k_gelu(f), dt);
        }
}

/* linear(x [M, K], w [N, K], b [N]) followed by an activation, propagated: normal data,
 * w scaled by wScale. */
typedef struct {
    double *x, *w, *b;
    parity_operand in[3];
    parity_graph_node g[2];
    parity_graph_value v[2];
} linear_region;

static void linear_region_make(linear_region *p, uint64_t seed, parity_dtype dt, int M, int N,
                               int K, double wScale, const char *zAct)
{
    uint64_t s = seed, dX[2] = { (uint64_t)M, (uint64_t)K }, dW[2] = { (uint64_t)N, (uint64_t)K };
    uint64_t dB[1] = { (uint64_t)N };
    p->x = values(&s, (size_t)(M * K), dt, 1.0, 0.0);
    p->w = values(&s, (size_t)(N * K), dt, wScale, 0.0);
    p->b = values(&s, (size_t)N, dt, 0.5, 0.0);
    p->in[0] = operand("x", dt, 2, dX, p->x);
    p->in[1] = operand("w", dt, 2, dW, p->w);
    p->in[2] = operand("b", dt, 1, dB, p->b);
    p->g[0] = node("linear", dt, 3, IN(0), IN(1), IN(2));
    p->g[1] = node(zAct, dt, 1, 0, 0, 0);
    propagate(p->g, 2, p->in, 3, p->v);
}

static void linear_region_free(linear_region *p)
{
    parity_graph_values_free(p->v, 2);
    free(p->x);
    free(p->w);
    free(p->b);
}

static void rewrite_linear_gelu(parity_dtype dt, int *pSingleOpFails)
{
    enum { M = 8, N = 32, K = 64 };
    double aEager[M * N], aFused[M * N], aEagerZ[M * N];
    linear_region r;

    linear_region_make(&r, 42, dt, M, N, K, 0.25, "gelu");
    linear_gelu(r.x, r.w, r.b, M, N, K, dt, aEager, aFused, aEagerZ);
    expect_both_pass(&r.v[1], aEager, aFused, "reassociation and FMA");
    {
        /* paritydiff's single-op view: gelu judged from eager's own intermediate */
        parity_operand z = operand("z", dt, 2, (uint64_t[2]){ M, N }, aEagerZ);
        parity_op_call call;
        parity_judgement j1;
        char zErr[256];
        cr_assert_eq(parity_op_begin(&call, parity_op_find("gelu"), &z, 1, dt, 2, z.aDim,
                                     PARITY_DT_INVALID, NULL, 0, zErr, sizeof zErr), 0);
        cr_assert_eq(parity_judge(&call, NULL, aFused, &j1, zErr, sizeof zErr), 0);
        parity_op_end(&call);
        *pSingleOpFails = (int)j1.nFail;
    }
    linear_region_free(&r);
}

Test(graph, reassociation_and_fma_pass)
{
    int nSingle;
    rewrite_linear_gelu(F32, &nSingle);
}

Test(graph, wider_intermediates_pass_where_the_single_op_judgement_cries_wolf)
{
    int nSingle;
    rewrite_linear_gelu(BF16, &nSingle);
    /* the fused kernel never rounded z to bfloat16; gelu's own bound from eager's rounded
     * z cannot allow for that, the region's can */
    cr_assert_gt(nSingle, 0, "the single-op judgement passed: the case shows nothing");
}

Test(graph, multiplying_by_a_reciprocal_passes)
{
    enum { R = 6, C = 48 };
    uint64_t s = 7, dX[2] = { R, C };
    double *x = values(&s, R * C, F32, 2.0, 0.0), aFused[R * C], aEager[R * C];
    parity_operand in[1] = { operand("x", F32, 2, dX, x) };
    parity_attr aSum[2] = { attr_int(0, "dim", -1), attr_int(1, "keepdim", 1) };
    parity_graph_node g[3] = { node("exp", F32, 1, IN(0), 0, 0), node("sum", F32, 1, 0, 0, 0),
                               node("div", F32, 2, 0, 1, 0) };
    parity_graph_value v[3];
    int i, k;
    with_attrs(&g[1], aSum, 2);
    for (i = 0; i < R; i++) {
        float e[C], sF = 0.0f, sE = 0.0f, inv;
        for (k = 0; k < C; k++) e[k] = expf((float)x[i * C + k]);
        for (k = 0; k < C; k++) sE += e[k];
        for (k = 0; k < C / 2; k++) sF += e[k] + e[k + C / 2];   /* paired, another order */
        inv = 1.0f / sF;
        for (k = 0; k < C; k++) {
            aEager[i * C + k] = e[k] / sE;
            aFused[i * C + k] = e[k] * inv;
        }
    }
    propagate(g, 3, in, 1, v);
    expect_both_pass(&v[2], aEager, aFused, "x * (1/s)");
    parity_graph_values_free(v, 3);
    free(x);
}

/* Residual add fused into rms_norm, as Inductor emits it for a Llama block: eager rounds
 * h = x + res to the dtype and sums squares in order; the fused kernel keeps h in float,
 * sums squares pairwise and multiplies by rsqrt. Both pass the region; a fused kernel that
 * drops eps, or reads the weight one element off, fails it. */
static void residual_rms(parity_dtype dt, int bug, double *aEager, double *aFused,
                         const double *x, const double *res, const double *w, int R, int C)
{
    int i, k;
    for (i = 0; i < R; i++) {
        double h[64];
        float ssE = 0.0f, ssF = 0.0f, rE, rF;
        for (k = 0; k < C; k++) {
            float hf = (float)x[i * C + k] + (float)res[i * C + k];
            h[k] = hf;
            ssE += (float)parity_round_double_to_dtype(hf, dt) *
                   (float)parity_round_double_to_dtype(hf, dt);
        }
        for (k = 0; k < C / 2; k++)
            ssF += (float)h[k] * (float)h[k] + (float)h[k + C / 2] * (float)h[k + C / 2];
        rE = 1.0f / sqrtf(ssE / (float)C + 1e-6f);
        rF = 1.0f / sqrtf(ssF / (float)C + (bug == 1 ? 0.0f : 1e-6f));
        for (k = 0; k < C; k++) {
            double wE = w[k], wF = w[bug == 2 ? (k + 1) % C : k];
            aEager[i * C + k] = parity_round_double_to_dtype(
                (float)parity_round_double_to_dtype(h[k], dt) * rE * (float)wE, dt);
            aFused[i * C + k] = parity_round_double_to_dtype((float)h[k] * rF * (float)wF, dt);
        }
    }
}

Test(graph, fused_residual_rms_norm_passes_and_its_bugs_fail)
{
    enum { R = 6, C = 64 };
    uint64_t s = 13, dX[2] = { R, C }, dW[1] = { C };
    const parity_dtype aDt[2] = { F32, BF16 };
    int iDt;
    for (iDt = 0; iDt < 2; iDt++) {
        parity_dtype dt = aDt[iDt];
        double *x = values(&s, R * C, dt, 1.0, 0.0), *res = values(&s, R * C, dt, 0.5, 0.0);
        double *w = values(&s, C, dt, 0.3, 1.0), aEager[R * C], aFused[R * C];
        parity_operand in[3] = { operand("x", dt, 2, dX, x), operand("res", dt, 2, dX, res),
                                 operand("w", dt, 1, dW, w) };
        parity_attr aRms[2] = { attr_int(0, "normalized_shape", C), attr_float(1, "eps", 1e-6) };
        parity_graph_node g[2] = { node("add", dt, 2, IN(0), IN(1), 0),
                                   node("rms_norm", dt, 2, 0, IN(2), 0) };
        parity_graph_value v[2];
        parity_judgement j;
        int bug;
        with_attrs(&g[1], aRms, 2);
        propagate(g, 2, in, 3, v);
        residual_rms(dt, 0, aEager, aFused, x, res, w, R, C);
        expect_both_pass(&v[1], aEager, aFused, "add + rms_norm, fused");
        for (bug = 1; bug <= 2; bug++) {
            residual_rms(dt, bug, aEager, aFused, x, res, w, R, C);
            judge(&v[1], NULL, aFused, &j);
            if (bug == 1) {
                /* eps 1e-6 against a mean square near 1: a relative 5e-7, within float32's
                 * rounding, so dropping it must pass; a weight read one off must not */
                cr_assert_eq(j.nFail, 0, "%s: no eps fails: %llu", parity_dtype_name(dt),
                             (unsigned long long)j.nFail);
            } else {
                cr_assert_gt(j.nFail, R * C / 2, "%s: a shifted weight passes: %llu of %d",
                             parity_dtype_name(dt), (unsigned long long)j.nFail, R * C);
            }
        }
        parity_graph_values_free(v, 2);
        free(x); free(res); free(w);
    }
}

Test(graph, online_softmax_under_a_mask_passes)
{
    enum { R = 5, C = 96 };
    uint64_t s = 9, d[2] = { R, C };
    double *sc = values(&s, R * C, F32, 4.0, 0.0), mask[R * C], aFused[R * C], aEager[R * C];
    parity_operand in[2] = { operand("scores", F32, 2, d, sc), operand("mask", F32, 2, d, mask) };
    parity_attr aSoft[1] = { attr_int(0, "dim", -1) };
    parity_graph_node g[2] = { node("add", F32, 2, IN(0), IN(1), 0),
                               node("softmax", F32, 1, 0, 0, 0) };
    parity_graph_value v[2];
    int i, k;
    with_attrs(&g[1], aSoft, 1);
    for (i = 0; i < R * C; i++)   /* causal-like -inf tail, and a few large negatives */
        mask[i] = i % C > C - 1 - 9 * (i / C) ? -INFINITY : (i % 11 == 0 ? -1e4 : 0.0);
    for (i = 0; i < R; i++) {
        float m = -INFINITY, dSum = 0.0f, mE = -INFINITY, sE = 0.0f, v2[C];
        for (k = 0; k < C; k++) {        /* the fused kernel: one pass, rescaled sums */
            float val = (float)sc[i * C + k] + (float)mask[i * C + k], mNew = fmaxf(m, val);
            v2[k] = val;
            if (mNew == -INFINITY) continue;
            dSum = dSum * expf(m - mNew) + expf(val - mNew);
            m = mNew;
        }
        for (k = 0; k < C; k++) mE = fmaxf(mE, v2[k]);   /* eager: two passes */
        for (k = 0; k < C; k++) sE += expf(v2[k] - mE);
        for (k = 0; k < C; k++) {
            aFused[i * C + k] = expf(v2[k] - m) / dSum;
            aEager[i * C + k] = expf(v2[k] - mE) / sE;
        }
    }
    propagate(g, 2, in, 2, v);
    expect_both_pass(&v[1], aEager, aFused, "online softmax");
    parity_graph_values_free(v, 2);
    free(sc);
}

/* ---- 4. a fusion defect a flat multiplier misses ------------------------------------ */

/* A tanh epilogue that saturates early: +-1 for |z| > 4 (1 - tanh(4) = 6.7e-4 off), as
 * fast tanh approximations with a clamp do. */
static float tanh_saturating(float z) { return fabsf(z) > 4.0f ? copysignf(1.0f, z) : tanhf(z); }

Test(graph, early_saturating_tanh_epilogue_fails_the_region_not_a_flat_multiple)
{
    enum { M = 16, N = 32, K = 256, FLAT = 2 };
    uint64_t dZ[2] = { M, N };
    double aZ[M * N], aGood[M * N], aBad[M * N];
    parity_judgement jGood, jBad;
    parity_op_call lin, th;
    parity_operand zOp = operand("z", F32, 2, dZ, aZ);
    linear_region rg;
    mpfr_t ref;
    char zErr[256];
    int i, k, nFlatFail = 0, nInDefectRange = 0;

    linear_region_make(&rg, 5, F32, M, N, K, 0.19, "tanh");
    for (i = 0; i < M * N; i++) {
        float z = (float)rg.b[i % N];
        for (k = K - 1; k >= 0; k--)
            z = fmaf((float)rg.x[i / N * K + k], (float)rg.w[i % N * K + k], z);
        aZ[i] = z;
        aGood[i] = tanhf(z);
        aBad[i] = tanh_saturating(z);
        nInDefectRange += fabsf(z) > 4.0f && fabsf(z) < 7.0f;
    }
    cr_assert_gt(nInDefectRange, 10, "too few |z| in (4, 7): %d", nInDefectRange);
    judge(&rg.v[1], NULL, aGood, &jGood);
    judge(&rg.v[1], NULL, aBad, &jBad);
    cr_assert_eq(jGood.nFail, 0, "tanhf fails: %llu", (unsigned long long)jGood.nFail);
    cr_assert_geq(jBad.nFail, (uint64_t)nInDefectRange / 2, "the defect passed: %llu failures",
                  (unsigned long long)jBad.nFail);

    /* the flat alternative: tanh's reference from the compiled z (what a capture without
     * the fused intermediate gives to chase), bound FLAT times the sum of the two ops'
     * own bounds at the element */
    mpfr_init2(ref, PARITY_REF_PREC);
    cr_assert_eq(parity_op_begin(&lin, rg.g[0].pDef, rg.in, 3, F32, 2, dZ, PARITY_DT_INVALID,
                                 NULL, 0, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(parity_op_begin(&th, rg.g[1].pDef, &zOp, 1, F32, 2, dZ, PARITY_DT_INVALID, NULL, 0,
                                 zErr, sizeof zErr), 0, "%s", zErr);
    for (i = 0; i < M * N; i++) {
        double bLin, bTanh, r;
        cr_assert_eq(lin.pDef->xElement(&lin, (uint64_t)i, ref, &bLin), 0);
        cr_assert_eq(th.pDef->xElement(&th, (uint64_t)i, ref, &bTanh), 0);
        r = mpfr_get_d(ref, MPFR_RNDN);
        nFlatFail += fabs(aBad[i] - r) > FLAT * (bLin + bTanh);
    }
    parity_op_end(&lin);
    parity_op_end(&th);
    mpfr_clear(ref);
    cr_assert_eq(nFlatFail, 0, "the flat multiple caught %d: the case shows nothing", nFlatFail);
    cr_log_info("saturating tanh: %d of %d elements with |z| in (4, 7); the region fails %llu "
                "(worst %.3g x its radius), %d times the single-op bounds fails 0", nInDefectRange,
                M * N, (unsigned long long)jBad.nFail, jBad.worstRatio, FLAT);
    linear_region_free(&rg);
}

/* ---- 5. special values -------------------------------------------------------------- */

/* The region's second suspicious rule (judge.h, suspectOverEager): within the loose
 * bound of a long region, compiled off eager beyond the tolerance and far worse than eager
 * is reported, never failed; a compiled as close as eager, or within the tolerance, is
 * not. */
Test(graph, a_loose_region_reports_what_errs_far_beyond_eager)
{
    uint64_t d[1] = { 64 };
    double x[64], w[64 * 64], c[64], e[64], off;
    uint64_t dw[2] = { 64, 64 };
    parity_operand in[2];
    parity_graph_node g[4] = { node("linear", F32, 2, IN(0), IN(1), 0), node("tanh", F32, 1, 0, 0, 0),
                               node("linear", F32, 2, 1, IN(1), 0), node("gelu", F32, 1, 2, 0, 0) };
    parity_graph_value v[4];
    parity_judge_plan plan;
    parity_judgement j;
    char zErr[256];
    uint64_t s = 5;
    int i;
    for (i = 0; i < 64; i++) x[i] = (float)normal(&s);
    for (i = 0; i < 64 * 64; i++) w[i] = (float)(0.3 * normal(&s));
    in[0] = operand("x", F32, 1, d, x);
    in[1] = operand("w", F32, 2, dw, w);
    propagate(g, 4, in, 2, v);
    for (i = 0; i < 64; i++) {
        e[i] = parity_round_double_to_dtype(v[3].value.aValue[i], F32);   /* eager: exact */
        c[i] = e[i];
    }
    /* half the bound away: a region of two K = 64 linears is loose enough that this is
     * several float32 tolerances (1e-5 + 1.3e-6 |e|) */
    off = 0.5 * v[3].aRadius[7];
    cr_assert_gt(off, 4.0 * (1e-5 + 1.3e-6 * fabs(e[7])), "radius %g", v[3].aRadius[7]);
    c[7] = e[7] + off;
    parity_judge_plan_default(&plan);
    plan.suspectOverEager = 16.0;
    plan.suspectAtol = 1e-5;
    plan.suspectRtol = 1.3e-6;
    cr_assert_eq(parity_graph_judge(&v[3], e, c, e, &plan, &j, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(j.nFail, 0);
    cr_assert_eq(j.nSuspicious, 1);
    cr_assert_eq(j.suspectOverEager, 16.0);
    /* eager as far off as compiled (its own error, not the kernel's): not suspicious */
    e[7] = e[7] - off;
    cr_assert_eq(parity_graph_judge(&v[3], e, c, e, &plan, &j, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(j.nSuspicious, 0);
    /* within the tolerance of eager: not suspicious, however exact eager is */
    e[7] = parity_round_double_to_dtype(v[3].value.aValue[7], F32);
    c[7] = e[7] + 0.5e-5;
    cr_assert_eq(parity_graph_judge(&v[3], e, c, e, &plan, &j, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(j.nSuspicious, 0);
    /* the rule off (the default plan): the probabilistic rule only, which a region lacks */
    c[7] = e[7] + off;
    parity_judge_plan_default(&plan);
    cr_assert_eq(parity_graph_judge(&v[3], e, c, e, &plan, &j, zErr, sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(j.nSuspicious, 0);
    parity_graph_values_free(v, 4);
}

Test(graph, a_nan_input_stays_exact_and_losing_it_fails)
{
    uint64_t d[1] = { 6 };
    double x[6] = { 0.5, NAN, -1.0, 2.0, -0.25, 3.0 }, y[6] = { 0.1, 0.2, 0.3, 0.4, 0.5, 0.6 };
    double c[6];
    parity_operand in[2] = { operand("x", F32, 1, d, x), operand("y", F32, 1, d, y) };
    parity_graph_node g[3] = { node("mul", F32, 2, IN(0), IN(1), 0), node("add", F32, 2, 0, IN(1), 0),
                               node("gelu", F32, 1, 1, 0, 0) };
    parity_graph_value v[3];
    parity_judgement j;
    int i;
    propagate(g, 3, in, 2, v);
    cr_assert(isnan(v[2].value.aValue[1]));
    cr_assert_eq(v[2].aRadius[1], 0.0);
    cr_assert_gt(v[2].aRadius[0], 0.0);
    for (i = 0; i < 6; i++) c[i] = k_gelu((float)x[i] * (float)y[i] + (float)y[i]);
    judge(&v[2], NULL, c, &j);
    cr_assert_eq(j.nFail, 0);
    c[1] = 0.0;                      /* a fused kernel that lost the NaN */
    judge(&v[2], NULL, c, &j);
    cr_assert_eq(j.nFail, 1);
    cr_assert_eq(j.nNonFinite, 1);
    parity_graph_values_free(v, 3);
}

Test(graph, a_box_reaching_a_domain_edge_is_vacuous_and_counted)
{
    uint64_t d[1] = { 4 };
    double c[4];
    parity_judgement j;
    int i;
    {
        /* exp(x) - exp(y) with x = y: a box around 0, then log: vacuous */
        double xs[4] = { 0.5, 1.0, 2.0, 0.25 }, ys[4] = { 0.5, 0.0, 0.0, 0.0 };
        parity_operand in2[2] = { operand("x", F32, 1, d, xs), operand("y", F32, 1, d, ys) };
        parity_graph_node g2[4] = { node("exp", F32, 1, IN(0), 0, 0), node("exp", F32, 1, IN(1), 0, 0),
                                    node("sub", F32, 2, 0, 1, 0), node("log", F32, 1, 2, 0, 0) };
        parity_graph_value v2[4];
        for (i = 0; i < 4; i++) c[i] = logf(expf((float)xs[i]) - expf((float)ys[i]));
        c[0] = 123.0;                 /* anything passes where the region is vacuous */
        propagate(g2, 4, in2, 2, v2);
        cr_assert_eq(v2[3].nVacuous, 1);
        cr_assert(!(v2[3].aRadius[0] < INFINITY));
        judge(&v2[3], NULL, c, &j);
        cr_assert_eq(j.nFail, 0);
        cr_assert_eq(j.nVacuous, 1);
        c[2] = c[2] * 1.01;           /* but the others are judged */
        judge(&v2[3], NULL, c, &j);
        cr_assert_eq(j.nFail, 1);
        parity_graph_values_free(v2, 4);
    }
}

/* A long propagation beats like the judge (a supervisor must not take it for a hung
 * reader), and a beat that says stop stops it with the judge's message. */
static int g_nBeat, g_stopAt;
static int count_beat(void *pCtx)
{
    (void)pCtx;
    return ++g_nBeat == g_stopAt;
}

Test(graph, a_long_propagation_beats_and_stops_when_told)
{
    enum { N = 4096 };
    uint64_t d[1] = { N };
    double *x = calloc(N, sizeof *x);
    parity_operand in[1];
    parity_graph_node g[2] = { node("exp", F32, 1, IN(0), 0, 0), node("tanh", F32, 1, 0, 0, 0) };
    parity_graph_value v[2];
    char zErr[256] = "";
    cr_assert(x);
    in[0] = operand("x", F32, 1, d, x);
    g_nBeat = 0;
    g_stopAt = -1;
    cr_assert_eq(parity_graph_propagate_beat(g, 2, in, 1, v, count_beat, NULL, zErr,
                                             sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(g_nBeat, 2 * N / PARITY_JUDGE_BEAT_ELEMS);
    parity_graph_values_free(v, 2);
    g_nBeat = 0;
    g_stopAt = 3;
    cr_assert_eq(parity_graph_propagate_beat(g, 2, in, 1, v, count_beat, NULL, zErr,
                                             sizeof zErr), -2);
    cr_assert_str_eq(zErr, "time limit reached while judging");
    cr_assert(v[0].value.aValue == NULL && v[1].value.aValue == NULL, "left allocated");
    free(x);
}

/* ---- 6. bad graphs ------------------------------------------------------------------- */

static void expect_refused(const parity_graph_node *g, size_t n, const parity_operand *in,
                           size_t nIn, const char *zWant)
{
    parity_graph_value v[8];
    char zErr[512] = "";
    cr_assert_eq(parity_graph_propagate(g, n, in, nIn, v, zErr, sizeof zErr), -1);
    cr_assert(strstr(zErr, zWant), "reason \"%s\" lacks \"%s\"", zErr, zWant);
    cr_assert(!strchr(zErr, '\n'));
    cr_assert(v[0].value.aValue == NULL && v[0].aRadius == NULL, "left allocated");
}

Test(graph, bad_graphs_are_refused_with_a_reason)
{
    uint64_t d3[1] = { 3 }, d4[1] = { 4 }, d2x4[2] = { 2, 4 };
    double a[3] = { 1, 2, 3 }, b[4] = { 1, 2, 3, 4 }, m[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    double w4[4] = { 1, 1, 1, 1 }, z4[4] = { 0, 0, 0, 0 };
    parity_operand in[5] = { operand("a", F32, 1, d3, a), operand("b", F32, 1, d4, b),
                             operand("m", F32, 2, d2x4, m), operand("w", F32, 1, d4, w4),
                             operand("z", F32, 1, d4, z4) };
    parity_graph_node g[3];
    parity_attr aNorm[1] = { attr_int(0, "dim", -1) };

    g[0] = node("exp", F32, 1, 1, 0, 0);                  /* itself */
    expect_refused(g, 1, in, 5, "neither an earlier node nor an input");
    g[0] = node("exp", F32, 1, IN(7), 0, 0);              /* no such input */
    expect_refused(g, 1, in, 5, "neither an earlier node nor an input");
    g[0] = node("add", F32, 2, IN(0), IN(1), 0);          /* [3] + [4] */
    expect_refused(g, 1, in, 5, "graph node 0 (add): add: shapes [3] and [4] do not broadcast");
    /* an op without xPropagate (every registered op has one now: elu without it stands
     * in for the next op added): fine on exact inputs, refused after an op */
    {
        parity_op_def eluAlone = parity_op_elu;
        parity_graph_value v[1];
        eluAlone.xPropagate = NULL;
        g[0] = node("elu", F32, 1, IN(2), 0, 0);
        g[0].pDef = &eluAlone;
        with_attrs(&g[0], aNorm, 1);
        propagate(g, 1, in, 5, v);
        cr_assert_eq(v[0].nVacuous, 0);
        parity_graph_values_free(v, 1);
        g[1] = g[0];
        g[0] = node("exp", F32, 1, IN(2), 0, 0);
        g[1].aIn[0] = 0;
        expect_refused(g, 2, in, 5, "graph node 1 (elu): its model cannot carry the error");
    }
}
