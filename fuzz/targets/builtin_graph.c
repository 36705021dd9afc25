/*
 * builtin_graph.c - the builtin target's two sides of a graph case (graph_cases.h).
 *
 * Eager runs the graph op by op with the builtin eager kernels (builtin_eager.c): every
 * intermediate is a tensor of the case's dtype, rounded once per op, as a framework's
 * eager mode leaves it. Compiled runs each family as one fused kernel, the way compilers
 * emit it: intermediates kept in the compute precision (float32; float64 for float64
 * cases) and rounded once at the output, a GEMM's K loop in 8 interleaved partial sums
 * with FMA and the bias first, an online softmax over tiles of 16 with the running sum
 * rescaled, the decomposed softmax multiplied by the reciprocal of its sum, a pointwise
 * producer never materialised, a residual sum normalized without being stored. All of that is inside each op's model, so the clean fused
 * kernels pass the propagated bound (tolerance/graph.h); the fusion defects
 * (parity_graph_defects, defects.c) break it, each on its rare shape or value.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/alloc.h"
#include "fuzz/cases/graph_cases.h"
#include "fuzz/targets/kernels_internal.h"
#include "tolerance/mpref.h"

#define FUSED_TILE 16      /* the online softmax's tile */
#define FUSED_LANES 8      /* partial sums of a fused dot product or reduction */

int parity_builtin_graph_eager(const parity_graph_case *pG, double **aaOut, char *zErr,
                               size_t nErr)
{
    size_t i, k;
    memset(aaOut, 0, pG->nNode * sizeof *aaOut);
    for (i = 0; i < pG->nNode; i++) {
        const parity_graph_node *pN = &pG->aNode[i];
        parity_case c;
        uint64_t n = parity_shape_elements(pN->outRank, pN->aOutDim);
        memset(&c, 0, sizeof c);
        snprintf(c.spec.zOp, sizeof c.spec.zOp, "%s", pN->pDef->zName);
        c.spec.dtype = pN->outDtype;
        c.pDef = pN->pDef;
        c.nIn = pN->nIn;
        for (k = 0; k < pN->nIn; k++) parity_graph_case_operand(pG, pN->aIn[k], aaOut, &c.aIn[k]);
        c.aStoredAttr = pN->aAttr;
        c.nStoredAttr = pN->nAttr;
        c.outDtype = pN->outDtype;
        c.outRank = pN->outRank;
        memcpy(c.aOutDim, pN->aOutDim, sizeof c.aOutDim);
        c.nOut = n;
        c.accDtype = PARITY_DT_INVALID;
        aaOut[i] = parity_malloc((n ? n : 1) * sizeof(double));
        if (!aaOut[i]) {
            snprintf(zErr, nErr, "out of memory");
            return -1;
        }
        if (parity_builtin_eager(&c, aaOut[i], zErr, nErr) != 0) return -1;
    }
    return 0;
}

/* ---- the fused kernels ------------------------------------------------------------------ */

/* Sum of n values in FUSED_LANES interleaved partial sums, in the compute precision. */
static double lanes_sum(const kern_ctx *pK, const double *x, uint64_t stride, uint64_t n,
                        int halfAccum, parity_dtype half)
{
    double lane[FUSED_LANES] = { 0 }, s = 0.0;
    uint64_t k;
    int l;
    for (k = 0; k < n; k++) {
        double v = lane[k % FUSED_LANES] + x[k * stride];
        /* PARITY_DEFECT_FUSED_HALF_ACCUM: the fused reduction keeps its partial sums in the
         * 16-bit input dtype, the upcast lost (microsoft/onnxruntime#29034) */
        lane[k % FUSED_LANES] = halfAccum ? parity_round_double_to_dtype(v, half) : kern_acc(pK, v);
    }
    for (l = 0; l < FUSED_LANES; l++)
        s = halfAccum ? parity_round_double_to_dtype(s + lane[l], half) : kern_acc(pK, s + lane[l]);
    return s;
}

/* linear -> activation: the bias first, K in FUSED_LANES partial sums with FMA, the
 * activation on the accumulator, one rounding. */
static int fused_gemm_epilogue(const parity_graph_case *pG, const kern_ctx *pK,
                               uint32_t defects, double *aOut)
{
    const parity_operand *pX = &pG->aIn[0], *pW = &pG->aIn[1];
    const double *b = pG->nIn > 2 ? pG->aIn[2].aValue : NULL;
    uint64_t M = pX->aDim[0], K = pX->aDim[1], N = pW->aDim[0], i, j, k;
    const parity_graph_node *pAct = pG->nNode > 1 ? &pG->aNode[1] : NULL;
    int approxTanh = 0;
    if (pAct) {
        const parity_attr *pA = parity_attr_find(pAct->aAttr, pAct->nAttr, "approximate");
        approxTanh = pA && pA->kind == PARITY_ATTR_STRING && strcmp(pA->azStr[0], "tanh") == 0;
    }
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            double lane[FUSED_LANES] = { 0 }, acc = 0.0, z;
            int l;
            /* PARITY_DEFECT_EPILOGUE_BIAS_AXIS: with a square output the bias's length
             * matches either axis, and the epilogue broadcasts it along rows
             * (openxla/xla#46897) */
            if (b) acc = (defects & PARITY_DEFECT_EPILOGUE_BIAS_AXIS) && M == N ? b[i] : b[j];
            for (k = 0; k < K; k++) {
                double p = pX->aValue[i * K + k] * pW->aValue[j * K + k];
                lane[k % FUSED_LANES] = pK->f32 ? (double)fmaf((float)pX->aValue[i * K + k],
                                                               (float)pW->aValue[j * K + k],
                                                               (float)lane[k % FUSED_LANES])
                                                : lane[k % FUSED_LANES] + p;
            }
            for (l = 0; l < FUSED_LANES; l++) acc = kern_acc(pK, acc + lane[l]);
            z = pAct ? parity_kern_activation(pK, pAct->pDef, approxTanh, acc) : acc;
            aOut[i * N + j] = kern_out(pK, z);
        }
    return 0;
}

/* add(scores, mask) -> softmax(-1) [-> matmul(., v)] in one pass over each row: online
 * softmax over tiles of FUSED_TILE (running max, sum rescaled by exp(m_old - m_new)), the
 * probabilities never rounded to the dtype before the matmul. */
static int fused_masked_softmax(const parity_graph_case *pG, const kern_ctx *pK,
                                uint32_t defects, double *aOut)
{
    const parity_operand *pS = &pG->aIn[0];
    int hasMask = strcmp(pG->aNode[0].pDef->zName, "add") == 0;
    const parity_operand *pM = hasMask ? &pG->aIn[1] : NULL;
    const parity_operand *pV = strcmp(pG->aNode[pG->nNode - 1].pDef->zName, "matmul") == 0
                             ? &pG->aIn[hasMask ? 2 : 1] : NULL;
    uint64_t B = pS->aDim[0], L = pS->aDim[1], S = pS->aDim[2], E = pV ? pV->aDim[2] : 0;
    uint64_t r, s, e;
    double *p = parity_malloc((S ? S : 1) * sizeof(double));
    if (!p) return -1;
    for (r = 0; r < B * L; r++) {
        const double *sc = pS->aValue + r * S, *mk = pM ? pM->aValue + r * S : NULL;
        double m = -INFINITY, d = 0.0;
        int nan = 0;
        for (s = 0; s < S; s++) {       /* tile by tile: the running max and sum */
            double v = kern_acc(pK, sc[s] + (mk ? mk[s] : 0.0));
            p[s] = v;
            if (v != v || v == INFINITY) nan = 1;
        }
        for (s = 0; s < S && !nan; s += FUSED_TILE) {
            uint64_t t, end = s + FUSED_TILE < S ? s + FUSED_TILE : S;
            double mt = m;
            for (t = s; t < end; t++) mt = fmax(mt, p[t]);
            if (mt == -INFINITY) continue;        /* a fully masked tile adds nothing */
            d = m == -INFINITY ? 0.0 : kern_acc(pK, d * parity_kern_exp(pK, kern_acc(pK, m - mt)));
            for (t = s; t < end; t++) d = kern_acc(pK, d + parity_kern_exp(pK, kern_acc(pK, p[t] - mt)));
            m = mt;
        }
        for (s = 0; s < S; s++) {
            if (nan || m == -INFINITY) {
                /* a NaN or +Inf in the row, or every key masked: NaN, as torch.
                 * PARITY_DEFECT_FUSED_MASKED_ROW_UNIFORM: the fused scale-mask-softmax
                 * kernel returns the uniform 1/S for a fully masked row (NVIDIA/apex#1390) */
                p[s] = !nan && (defects & PARITY_DEFECT_FUSED_MASKED_ROW_UNIFORM)
                     ? kern_acc(pK, 1.0 / (double)S) : NAN;
                continue;
            }
            p[s] = kern_acc(pK, parity_kern_exp(pK, kern_acc(pK, p[s] - m)) / d);
        }
        if (!pV) {
            for (s = 0; s < S; s++) aOut[r * S + s] = kern_out(pK, p[s]);
            continue;
        }
        for (e = 0; e < E; e++) {
            double acc = 0.0;
            const double *v = pV->aValue + (r / L) * S * E + e;
            for (s = 0; s < S; s++) acc = kern_acc(pK, acc + kern_acc(pK, p[s] * v[s * E]));
            aOut[r * E + e] = kern_out(pK, acc);
        }
    }
    parity_free(p);
    return 0;
}

/* A reciprocal as the rcpps instruction gives it, 12 bits (relative error below 1.5 2^-12),
 * without the Newton step that makes it a float's: x's significand cut to 12 bits. */
static double rcp12(double x)
{
    int e;
    double m = frexp(1.0 / x, &e);
    return ldexp(floor(m * 4096.0) / 4096.0, e);
}

/* [amax -> sub] -> exp -> sum -> div in one pass per row: exp kept in the compute
 * precision, the sum in FUSED_LANES partial sums, then every element multiplied by the
 * sum's reciprocal. */
static int fused_softmax_decomposed(const parity_graph_case *pG, const kern_ctx *pK,
                                    uint32_t defects, double *aOut)
{
    const parity_operand *pX = &pG->aIn[0];
    int shifted = strcmp(pG->aNode[0].pDef->zName, "amax") == 0;
    uint64_t R = pX->aDim[0], C = pX->aDim[1], r, c;
    double *e = parity_malloc((C ? C : 1) * sizeof(double));
    if (!e) return -1;
    for (r = 0; r < R; r++) {
        const double *x = pX->aValue + r * C;
        double m = -INFINITY, s, inv;
        if (shifted) {
            for (c = 0; c < C; c++) m = kern_max(m, x[c]);
        }
        for (c = 0; c < C; c++)
            e[c] = parity_kern_exp(pK, shifted ? kern_acc(pK, x[c] - m) : x[c]);
        s = lanes_sum(pK, e, 1, C, 0, pK->out);
        /* PARITY_DEFECT_APPROX_RECIPROCAL: the fused division by the sum uses the 12-bit
         * hardware reciprocal with no refinement (pytorch/pytorch#122179, #101039) */
        inv = (defects & PARITY_DEFECT_APPROX_RECIPROCAL) && isfinite(s) && s != 0.0
            ? kern_acc(pK, rcp12(s)) : kern_acc(pK, 1.0 / s);
        for (c = 0; c < C; c++) aOut[r * C + c] = kern_out(pK, kern_acc(pK, e[c] * inv));
    }
    parity_free(e);
    return 0;
}

/* mul -> [add z] -> sum or mean: the producer computed in the compute precision inside
 * the reduction's loop, never stored. */
static int fused_pointwise_reduce(const parity_graph_case *pG, const kern_ctx *pK,
                                  uint32_t defects, double *aOut)
{
    const parity_operand *pX = &pG->aIn[0], *pY = &pG->aIn[1];
    const parity_operand *pZ = pG->nIn > 2 ? &pG->aIn[2] : NULL;
    int isMean = strcmp(pG->aNode[pG->nNode - 1].pDef->zName, "mean") == 0;
    int half = pG->spec.dtype == PARITY_DT_BF16 || pG->spec.dtype == PARITY_DT_F16;
    uint64_t R = pX->aDim[0], C = pX->aDim[1], r, c;
    double *t = parity_malloc((C ? C : 1) * sizeof(double));
    if (!t) return -1;
    for (r = 0; r < R; r++) {
        double s;
        for (c = 0; c < C; c++) {
            double v = kern_acc(pK, pX->aValue[r * C + c] * pY->aValue[r * C + c]);
            t[c] = pZ ? kern_acc(pK, v + pZ->aValue[r * C + c]) : v;
        }
        s = lanes_sum(pK, t, 1, C, half && (defects & PARITY_DEFECT_FUSED_HALF_ACCUM),
                      pG->spec.dtype);
        if (isMean) s = kern_acc(pK, s / (double)C);
        aOut[r] = kern_out(pK, s);
    }
    parity_free(t);
    return 0;
}

/* [add(x, res)] -> layer_norm(w, b) in one pass over each row: the sum kept in the compute
 * precision (never rounded to the dtype), mean and variance in FUSED_LANES partial sums
 * (two passes), then (s - mean) rsqrt(var + eps) w + b, one rounding. eps 1e-5, the
 * family's. */
static int fused_residual_norm(const parity_graph_case *pG, const kern_ctx *pK,
                               uint32_t defects, double *aOut)
{
    int hasRes = pG->nNode > 1;
    const parity_operand *pX = &pG->aIn[0], *pR = hasRes ? &pG->aIn[1] : NULL;
    const double *w = pG->aIn[hasRes ? 2 : 1].aValue, *b = pG->aIn[hasRes ? 3 : 2].aValue;
    uint64_t R = pX->aDim[0], C = pX->aDim[1], r, c;
    double *t = parity_malloc((C ? C : 1) * sizeof(double));
    (void)defects;
    if (!t) return -1;
    for (r = 0; r < R; r++) {
        double mean, var, rstd;
        for (c = 0; c < C; c++)
            t[c] = pR ? kern_acc(pK, pX->aValue[r * C + c] + pR->aValue[r * C + c])
                      : pX->aValue[r * C + c];
        mean = kern_acc(pK, lanes_sum(pK, t, 1, C, 0, pK->out) / (double)C);
        {
            double lane[FUSED_LANES] = { 0 }, sq = 0.0;
            int l;
            for (c = 0; c < C; c++) {
                double d = kern_acc(pK, t[c] - mean);
                lane[c % FUSED_LANES] = kern_acc(pK, lane[c % FUSED_LANES] + kern_acc(pK, d * d));
            }
            for (l = 0; l < FUSED_LANES; l++) sq = kern_acc(pK, sq + lane[l]);
            var = kern_acc(pK, sq / (double)C);
        }
        rstd = kern_acc(pK, 1.0 / parity_kern_sqrt(pK, kern_acc(pK, var + kern_acc(pK, 1e-5))));
        for (c = 0; c < C; c++)
            aOut[r * C + c] = kern_out(pK, kern_acc(pK, kern_acc(pK, kern_acc(pK, t[c] - mean) *
                                                                  rstd) * w[c]) + b[c]);
    }
    parity_free(t);
    return 0;
}

/* [add(x, res)] -> rms_norm(w) in one pass over each row: the sum kept in the compute
 * precision, its squares summed in FUSED_LANES partial sums, then s rsqrt(ms + eps) w, one
 * rounding (vLLM's fused_add_rms_norm, Inductor's fusion of a Llama block). eps 1e-6, the
 * family's. */
static int fused_residual_rmsnorm(const parity_graph_case *pG, const kern_ctx *pK,
                                  uint32_t defects, double *aOut)
{
    int hasRes = pG->nNode > 1;
    const parity_operand *pX = &pG->aIn[0], *pR = hasRes ? &pG->aIn[1] : NULL;
    const double *w = pG->aIn[hasRes ? 2 : 1].aValue;
    uint64_t R = pX->aDim[0], C = pX->aDim[1], r, c;
    double *t = parity_malloc((C ? C : 1) * sizeof(double));
    (void)defects;
    if (!t) return -1;
    for (r = 0; r < R; r++) {
        double lane[FUSED_LANES] = { 0 }, sq = 0.0, rr;
        int l;
        for (c = 0; c < C; c++) {
            t[c] = pR ? kern_acc(pK, pX->aValue[r * C + c] + pR->aValue[r * C + c])
                      : pX->aValue[r * C + c];
            lane[c % FUSED_LANES] = kern_acc(pK, lane[c % FUSED_LANES] + kern_acc(pK, t[c] * t[c]));
        }
        for (l = 0; l < FUSED_LANES; l++) sq = kern_acc(pK, sq + lane[l]);
        rr = kern_acc(pK, 1.0 / parity_kern_sqrt(pK, kern_acc(pK, kern_acc(pK, sq / (double)C) +
                                                               kern_acc(pK, 1e-6))));
        for (c = 0; c < C; c++)
            aOut[r * C + c] = kern_out(pK, kern_acc(pK, kern_acc(pK, t[c] * rr) * w[c]));
    }
    parity_free(t);
    return 0;
}

int parity_builtin_graph_fused(const parity_graph_case *pG, uint32_t defects, double *aOut,
                               char *zErr, size_t nErr)
{
    kern_ctx k;
    const char *zFam = pG->pFam->zName;
    int rc;
    memset(&k, 0, sizeof k);
    k.f32 = pG->spec.dtype != PARITY_DT_F64;
    k.out = pG->spec.dtype;
    if (strcmp(zFam, "gemm_epilogue") == 0) rc = fused_gemm_epilogue(pG, &k, defects, aOut);
    else if (strcmp(zFam, "masked_softmax") == 0) rc = fused_masked_softmax(pG, &k, defects, aOut);
    else if (strcmp(zFam, "softmax_decomposed") == 0)
        rc = fused_softmax_decomposed(pG, &k, defects, aOut);
    else if (strcmp(zFam, "pointwise_reduce") == 0)
        rc = fused_pointwise_reduce(pG, &k, defects, aOut);
    else if (strcmp(zFam, "residual_norm") == 0)
        rc = fused_residual_norm(pG, &k, defects, aOut);
    else if (strcmp(zFam, "residual_rmsnorm") == 0)
        rc = fused_residual_rmsnorm(pG, &k, defects, aOut);
    else {
        snprintf(zErr, nErr, "builtin: no fused kernel for graph family %s", zFam);
        return -1;
    }
    if (rc != 0) snprintf(zErr, nErr, "builtin %s: out of memory", zFam);
    return rc;
}
