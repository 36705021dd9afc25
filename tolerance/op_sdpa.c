/*
 * op_sdpa.c - scaled_dot_product_attention(q, k, v, attn_mask?) with PyTorch semantics:
 * q [..., L, E], k [..., S, E], v [..., S, Ev] -> out [..., L, Ev]; batch dims broadcast
 * (equal, or 1; with enable_gqa = 1, k and v may have Hq / g heads, g query heads sharing
 * one, as torch's grouped-query attention does); attn_mask (4th input) broadcasts to [..., L, S] and is boolean (bool
 * dtype, True = keep) or float (added to the scores); attribute is_causal (0/1, default 0;
 * keeps j <= l, top-left aligned like torch's tril; an error together with a mask) and
 * scale (default 1/sqrt(E)).
 *
 * Reference (per output row b, l, at PARITY_REF_PREC bits): s_j = scale * (q . k_j) with the
 * dot product exact (mpref.h) and one rounding for the multiply, + mask_j for a float mask;
 * masked entries (causal, False, -Inf) are -Inf. Then the shifted softmax as in
 * op_softmax.c: m = max s_j, e_j = exp(s_j - m) and their sum with mpfr_sum, and each output
 * element o_c = (sum_j e_j v_jc) / sum_j e_j with the products exact and one summation
 * rounding. Non-finite rows follow torch: a NaN or +Inf score anywhere, or every entry
 * masked, makes the row NaN (torch's softmax gives NaN on a fully masked row); S = 0 gives
 * zeros. A masked entry has weight exactly 0 (0 * Inf v is NaN, as in torch's math path).
 *
 * Bound, for a kernel computing in precision u (acc_dtype), per output element (b, l, c):
 *
 * 1. Scores. Any summation order of the E products: Higham 2002, eq. (3.5), so
 *      |ds_j| <= gamma_{nS}(u) |scale| sum_e |q_e k_je| + E/2 subnormal_acc |scale|
 *    with nS = E + 4: besides the E terms, up to four roundings per product for the
 *    scaling (scale applied to the dot product: one; or, as torch's math backend does, q
 *    and k each multiplied by a rounded sqrt(scale): four), +2 when q, k are wider than
 *    acc_dtype (rounded to it). A float mask adds u (|s_j| + |mask_j|) (the add, and the
 *    mask's rounding to acc_dtype).
 * 2. Propagation through softmax. dp_j/ds_i = p_j (delta_ij - p_i), so to first order
 *      |dp_j| <= p_j (|ds_j| + sum_i p_i |ds_i|).
 *    Evaluated rigorously as p_j expm1(|ds_j| + e^D sum_i p_i |ds_i|), D = max_i |ds_i|
 *    (p^_j / p_j = e^{ds_j} / sum_i p_i e^{ds_i}, bounded with Jensen below and
 *    e^x <= 1 + x e^D above); equal to the first-order form for small ds.
 * 3. Softmax's own error on the computed scores: op_softmax.c's model (Blanchard, Higham
 *    & Higham 2021, Sec. 4, exp within c/2 ulps, c = 4):
 *      r2_j = (|s_j - m| + w + 2c + 2) u + gamma_{(c+2) S}(u),  w = sum_j p_j |s_j - m|.
 *    When v is narrower than acc_dtype, p is also rounded to v's dtype before the P V
 *    product (FlashAttention-2 feeds P to the tensor-core GEMM in fp16/bf16): r3 = u_v.
 *    Per weight, R_j = (1 + r1_j)(1 + r2_j)(1 + r3) - 1 with r1_j the relative error of 2.
 * 4. The weighted sum sum_j p^_j v_jc in any order: gamma_{nV}(u) sum_j p^_j |v_jc|, plus the
 *    weights' errors sum_j |dp_j| |v_jc| = sum_j p_j R_j |v_jc|. nV = 2S (+1 when v is
 *    wider than acc_dtype): S for the summation tree and up to S rescalings of the running
 *    accumulator by an online kernel (below).
 * 5. Output rounding 0.5 ulp_out(|o| + bound), and underflow slack of exps, products and
 *    partial sums: S subnormal_acc (1 + sum_j |v_jc|).
 * Altogether
 *   B = sum_j p_j |v_jc| [R_j + gamma_{nV}(u)(1 + R_j)] + S sub_acc (1 + sum_j |v_jc|)
 *       + 0.5 ulp_out(|o| + ...).
 *
 * Flash-attention style kernels (blocks over S, online softmax with running max m and sum
 * l, accumulator o rescaled by alpha = exp(m_old - m_new), o / l at the end) stay within B:
 * their scores are the same dot products (1.); e_j reaches its final scale through at most
 * S rescalings, each an exp and a multiply, which is exactly what the online term
 * gamma_{(c+2)S} of the softmax model counts (3.); the same rounded alpha multiplies o and
 * l, so its exp error cancels in o / l and only the multiply on o remains, counted by the
 * second S in nV (4.); dividing once at the end instead of per weight moves the same single
 * rounding (the softmax model's division u) out of the sum; exp2 with log2(e) folded into
 * the scale shifts all exponents of a row by one common rounded m, which cancels in the
 * normalisation, and otherwise rounds (s_j - m), covered by |s_j - m| u; and rounding P to
 * v's dtype is r3. Masked blocks skipped entirely contribute exactly the zeros the
 * reference has.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/propagate.h"
#include "tolerance/rows.h"
#include "formats/alloc.h"

#define SDPA_C_EXP 4.0

enum { ROW_OK, ROW_NAN, ROW_EMPTY };

/* The shapes, strides, mask kind and scale are the geometry (geom.attention); this is
 * what the reference and the model add. */
typedef struct {
    double nScore, nSum, uP;               /* gamma counts; p's extra rounding (r3) */
    /* the current row */
    int haveRow, rowKind;
    uint64_t row, vOff;
    mpfr_t *aE, *aProd;
    mpfr_ptr *apE, *apProd;
    uint64_t nInit;
    int haveMp;
    mpfr_t sum, m;
    double *aP, *aR, *aDs, *aShift;
    unsigned char *aLive;
    int rowOverflow;          /* a score's sum of |q k| reaches acc_dtype's largest finite */
    double gScore, gSum, gSoftmax;   /* gamma_{nScore}, gamma_{nSum}, gamma_{(c+2)S}:
                                      * the same for every element */
    uint64_t generation;      /* this call's number: the fast path's per-thread rows are
                               * keyed by it (a later call may get the same addresses) */
    /* propagation (sdpa_propagate): the operands' radii while it runs, else NULL; the row
     * made with them (rowRad) and whether some radius there is not finite or the mask's
     * is not 0 (rowVacuous) */
    const double *const *aRad;
    int rowRad, rowVacuous;
} sdpa_params;

static uint64_t g_generation;

static void sdpa_free(void *p)
{
    sdpa_params *pP = p;
    uint64_t j;
    for (j = 0; j < pP->nInit; j++) {
        mpfr_clear(pP->aE[j]);
        mpfr_clear(pP->aProd[j]);
    }
    if (pP->haveMp) mpfr_clears(pP->sum, pP->m, (mpfr_ptr)0);
    free(pP->aE);
    free(pP->aProd);
    free(pP->apE);
    free(pP->apProd);
    free(pP->aP);
    free(pP->aR);
    free(pP->aDs);
    free(pP->aShift);
    free(pP->aLive);
    free(pP);
}

/* Grouped-query attention (torch's enable_gqa = 1: Llama-3, Mistral, Qwen configs): q
 * [.., Hq, L, E] against k, v [.., Hkv, S, E] with Hkv dividing Hq. The batch broadcast
 * is then worked out with Hkv in q's place (aQDim), and the group size kept, so that row
 * addressing (parity_attention_row) maps query head h to k/v head h / (Hq / Hkv). Returns
 * 0, or -1 with zErr when the heads do not group. */
static int sdpa_group(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                      uint64_t *aQDim, char *zErr, size_t nErr)
{
    const parity_operand *pQ = &pCall->aIn[0], *pK = &pCall->aIn[1], *pV = &pCall->aIn[2];
    parity_attention_geometry *pG = &pCall->geom.attention;
    int64_t gqa = 0;
    uint64_t hQ, hK;
    memcpy(aQDim, pQ->aDim, sizeof pQ->aDim);
    pG->nGroup = 1;
    if (parity_param_int(aAttr, nAttr, "enable_gqa", &gqa, NULL, zErr, nErr) != 0) return -1;
    if (!gqa || pQ->rank < 3 || pK->rank < 3 || pV->rank < 3) return 0;
    hQ = pQ->aDim[pQ->rank - 3];
    hK = pK->aDim[pK->rank - 3];
    if (hK == hQ) return 0;
    if (hK == 0 || pV->aDim[pV->rank - 3] != hK || hQ % hK != 0) {
        snprintf(zErr, nErr, "scaled_dot_product_attention: enable_gqa needs k and v with the "
                 "same number of heads dividing q's, got %llu query heads, %llu and %llu",
                 (unsigned long long)hQ, (unsigned long long)hK,
                 (unsigned long long)pV->aDim[pV->rank - 3]);
        return -1;
    }
    pG->nGroup = hQ / hK;
    aQDim[pQ->rank - 3] = hK;
    return 0;
}

/* q, k, v shapes, their batch broadcast and the output shape into geom.attention. */
static int sdpa_shapes(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                       char *zErr, size_t nErr)
{
    const parity_operand *pQ = &pCall->aIn[0], *pK = &pCall->aIn[1], *pV = &pCall->aIn[2];
    parity_attention_geometry *pG = &pCall->geom.attention;
    uint64_t aWant[PARITY_MAX_RANK], aQDim[PARITY_MAX_RANK];
    int d, nQ, nK, nV, nWant = 0;
    char zA[128], zB[128], zC[128];

    if (pQ->rank < 2 || pK->rank < 2 || pV->rank < 2) {
        snprintf(zErr, nErr, "scaled_dot_product_attention: q, k, v need rank >= 2, got %s, %s, %s",
                 parity_shape_str(pQ->rank, pQ->aDim, zA, sizeof zA),
                 parity_shape_str(pK->rank, pK->aDim, zB, sizeof zB),
                 parity_shape_str(pV->rank, pV->aDim, zC, sizeof zC));
        return -1;
    }
    pG->L = pQ->aDim[pQ->rank - 2];
    pG->E = pQ->aDim[pQ->rank - 1];
    pG->S = pK->aDim[pK->rank - 2];
    pG->Ev = pV->aDim[pV->rank - 1];
    if (pK->aDim[pK->rank - 1] != pG->E || pV->aDim[pV->rank - 2] != pG->S) {
        snprintf(zErr, nErr, "scaled_dot_product_attention: need q [..., L, E], k [..., S, E], "
                 "v [..., S, Ev]; got %s, %s, %s",
                 parity_shape_str(pQ->rank, pQ->aDim, zA, sizeof zA),
                 parity_shape_str(pK->rank, pK->aDim, zB, sizeof zB),
                 parity_shape_str(pV->rank, pV->aDim, zC, sizeof zC));
        return -1;
    }
    nQ = pQ->rank - 2; nK = pK->rank - 2; nV = pV->rank - 2;
    if (sdpa_group(pCall, aAttr, nAttr, aQDim, zErr, nErr) != 0) return -1;
    {
        const int anRank[3] = { nQ, nK, nV };
        const uint64_t *const aapDim[3] = { aQDim, pK->aDim, pV->aDim };
        int iBad;
        pG->nBatch = parity_broadcast_shape(3, anRank, aapDim, pG->aBatchDim, &iBad);
        if (pG->nBatch < 0) {
            snprintf(zErr, nErr, "scaled_dot_product_attention: batch dimensions of q %s, "
                     "k %s, v %s do not broadcast%s",
                     parity_shape_str(pQ->rank, pQ->aDim, zA, sizeof zA),
                     parity_shape_str(pK->rank, pK->aDim, zB, sizeof zB),
                     parity_shape_str(pV->rank, pV->aDim, zC, sizeof zC),
                     pQ->rank >= 3 && pK->rank >= 3 ? " (grouped-query heads need the "
                     "attribute enable_gqa = 1)" : "");
            return -1;
        }
    }
    /* the head dim: the last batch dim; the output has q's heads there */
    pG->iGroupDim = pG->nBatch - 1;
    for (d = 0; d < pG->nBatch; d++) aWant[nWant++] = pG->aBatchDim[d];
    if (pG->nGroup > 1) aWant[pG->iGroupDim] *= pG->nGroup;
    aWant[nWant++] = pG->L;
    aWant[nWant++] = pG->Ev;
    if (!parity_op_take_out(pCall, nWant, aWant)) {
        snprintf(zErr, nErr, "scaled_dot_product_attention: operands give shape %s, output has %s",
                 parity_shape_str(nWant, aWant, zA, sizeof zA),
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zB, sizeof zB));
        return -1;
    }
    /* the batch dims broadcast (checked above): these cannot fail. Under grouped heads,
     * q's strides come from its own heads, k's and v's from the Hkv of aBatchDim; the
     * batch is then q's (aBatchDim's head dim scaled back up). */
    parity_broadcast_strides(pG->nBatch, pG->aBatchDim, aQDim, nQ, pG->L * pG->E, pG->aStrQ);
    parity_broadcast_strides(pG->nBatch, pG->aBatchDim, pK->aDim, nK, pG->S * pG->E, pG->aStrK);
    parity_broadcast_strides(pG->nBatch, pG->aBatchDim, pV->aDim, nV, pG->S * pG->Ev, pG->aStrV);
    if (pG->nGroup > 1) {
        pG->aBatchDim[pG->iGroupDim] *= pG->nGroup;
        parity_broadcast_strides(pG->nBatch, pG->aBatchDim, pQ->aDim, nQ, pG->L * pG->E,
                                 pG->aStrQ);
    }
    pG->nRow = pG->L;
    for (d = 0; d < pG->nBatch; d++) pG->nRow *= pG->aBatchDim[d];
    return 0;
}

/* attn_mask (input 3): its kind and its strides over batch.., L, S. */
static int sdpa_mask(parity_op_call *pCall, char *zErr, size_t nErr)
{
    const parity_operand *pM = &pCall->aIn[3];
    parity_attention_geometry *pG = &pCall->geom.attention;
    uint64_t aFull[PARITY_MAX_RANK + 2];
    int nFull = pG->nBatch + 2, d;
    char zA[128], zB[128];

    if (pG->causal) {
        snprintf(zErr, nErr, "scaled_dot_product_attention: is_causal and attn_mask "
                 "cannot both be given");
        return -1;
    }
    if (pM->dtype == PARITY_DT_BOOL) pG->maskKind = PARITY_MASK_BOOL;
    else if (parity_dtype_is_float(pM->dtype)) pG->maskKind = PARITY_MASK_FLOAT;
    else {
        snprintf(zErr, nErr, "scaled_dot_product_attention: attn_mask must be bool or "
                 "float, got %s", parity_dtype_name(pM->dtype));
        return -1;
    }
    for (d = 0; d < pG->nBatch; d++) aFull[d] = pG->aBatchDim[d];
    aFull[pG->nBatch] = pG->L;
    aFull[pG->nBatch + 1] = pG->S;
    if (parity_broadcast_strides(nFull, aFull, pM->aDim, pM->rank, 1, pG->aStrM) != 0) {
        snprintf(zErr, nErr, "scaled_dot_product_attention: attn_mask %s does not "
                 "broadcast to the attention shape %s",
                 parity_shape_str(pM->rank, pM->aDim, zA, sizeof zA),
                 parity_shape_str(nFull, aFull, zB, sizeof zB));
        return -1;
    }
    return 0;
}

static int sdpa_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                        char *zErr, size_t nErr)
{
    const parity_operand *pQ = &pCall->aIn[0], *pK = &pCall->aIn[1], *pV = &pCall->aIn[2];
    parity_attention_geometry *pG = &pCall->geom.attention;
    sdpa_params *pP = parity_calloc(1, sizeof *pP);
    int64_t causal = 0;
    double scale = 0.0, uAcc = parity_unit_roundoff(pCall->accDtype);
    int found;

    if (!pP) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pCall->pParams = pP;
    if (sdpa_shapes(pCall, aAttr, nAttr, zErr, nErr) != 0) return -1;
    if (parity_param_int(aAttr, nAttr, "is_causal", &causal, NULL, zErr, nErr) != 0) return -1;
    if (causal != 0 && causal != 1) {
        snprintf(zErr, nErr, "scaled_dot_product_attention: is_causal must be 0 or 1, got %lld",
                 (long long)causal);
        return -1;
    }
    pG->causal = (int)causal;
    /* attention dropout draws at random: no reference can say what it kept */
    if (parity_param_float(aAttr, nAttr, "dropout_p", &scale, &found, zErr, nErr) != 0) return -1;
    if (found && scale != 0.0) {
        snprintf(zErr, nErr, "scaled_dot_product_attention: dropout_p %g has no reference "
                 "(capture in eval mode)", scale);
        return -1;
    }
    if (parity_param_float(aAttr, nAttr, "scale", &scale, &found, zErr, nErr) != 0) return -1;
    if (!found) scale = 1.0 / sqrt((double)pG->E);
    else if (!isfinite(scale)) {
        snprintf(zErr, nErr, "scaled_dot_product_attention: scale must be finite, got %g", scale);
        return -1;
    }
    pG->scale = scale;
    if (pCall->nIn == 4 && sdpa_mask(pCall, zErr, nErr) != 0) return -1;

    /* Error-model constants (header comment). */
    pP->nScore = (double)pG->E + 4.0;
    if (parity_unit_roundoff(pQ->dtype) < uAcc || parity_unit_roundoff(pK->dtype) < uAcc)
        pP->nScore += 2.0;
    pP->nSum = 2.0 * (double)pG->S + (parity_unit_roundoff(pV->dtype) < uAcc ? 1.0 : 0.0);
    pP->uP = parity_unit_roundoff(pV->dtype) > uAcc ? parity_unit_roundoff(pV->dtype) : 0.0;
    /* parity_gamma rounds up in MPFR: once per call, not per element */
    pP->gScore = parity_gamma(pP->nScore, uAcc);
    pP->gSum = parity_gamma(pP->nSum, uAcc);
    pP->gSoftmax = parity_gamma((SDPA_C_EXP + 2.0) * (double)pG->S, uAcc);
    return 0;
}

/* One row's scratch: S exponentials and products in MPFR, weights and their errors. */
static int sdpa_load(parity_op_call *pCall, char *zErr, size_t nErr)
{
    sdpa_params *pP = pCall->pParams;
    uint64_t j, S = pCall->geom.attention.S;

    pP->aE = parity_calloc(S + 1, sizeof(mpfr_t));
    pP->aProd = parity_calloc(S + 1, sizeof(mpfr_t));
    pP->apE = parity_calloc(S + 1, sizeof(mpfr_ptr));
    pP->apProd = parity_calloc(S + 1, sizeof(mpfr_ptr));
    pP->aP = parity_calloc(S + 1, sizeof(double));
    pP->aR = parity_calloc(S + 1, sizeof(double));
    pP->aDs = parity_calloc(S + 1, sizeof(double));
    pP->aShift = parity_calloc(S + 1, sizeof(double));
    pP->aLive = parity_calloc(S + 1, 1);
    if (!pP->aE || !pP->aProd || !pP->apE || !pP->apProd || !pP->aP || !pP->aR || !pP->aDs ||
        !pP->aShift || !pP->aLive) {
        snprintf(zErr, nErr, "out of memory");
        return -1;
    }
    mpfr_inits2(PARITY_REF_PREC, pP->sum, pP->m, (mpfr_ptr)0);
    pP->haveMp = 1;
    pP->generation = __atomic_add_fetch(&g_generation, 1, __ATOMIC_RELAXED);
    for (j = 0; j < S; j++) {
        mpfr_init2(pP->aE[j], PARITY_REF_PREC);
        mpfr_init2(pP->aProd[j], PARITY_REF_PREC + 64);   /* e_j * v exactly (128 + 53) */
        pP->apE[j] = pP->aE[j];
        pP->apProd[j] = pP->aProd[j];
        pP->nInit++;
    }
    return 0;
}

/* Reference terms per output element: S scores of E products each, shared by the row's Ev
 * outputs, and S products of the weighted sum. */
static double sdpa_cost(const parity_op_call *pCall)
{
    const parity_attention_geometry *pG = &pCall->geom.attention;
    return pG->Ev ? (double)pG->S * (double)(pG->E + pG->Ev) / (double)pG->Ev : 1.0;
}

void parity_attention_row(const parity_attention_geometry *pG, uint64_t iRow, uint64_t *pQ,
                          uint64_t *pK, uint64_t *pV, uint64_t *pM, uint64_t *pStrMS)
{
    uint64_t l = iRow % pG->L, iB = iRow / pG->L, q = 0, k = 0, v = 0, m = 0;
    int d;
    for (d = pG->nBatch - 1; d >= 0; d--) {
        uint64_t idx = iB % pG->aBatchDim[d];
        iB /= pG->aBatchDim[d];
        uint64_t kv = d == pG->iGroupDim ? idx / pG->nGroup : idx;  /* head h reads h / g */
        q += idx * pG->aStrQ[d];
        m += idx * pG->aStrM[d];
        k += kv * pG->aStrK[d];
        v += kv * pG->aStrV[d];
    }
    *pQ = q + l * pG->E;
    *pK = k;
    *pV = v;
    *pM = m + l * pG->aStrM[pG->nBatch];
    *pStrMS = pG->aStrM[pG->nBatch + 1];
}

/* How far the exact q . k moves over the operand box: sum_e |q_e| rk_e + rq_e |k_e| +
 * rq_e rk_e, rounded up (propagate.h); +Inf where a radius is, or where a value that
 * moves is not finite. */
static double score_reach(const double *const *aRad, const double *q, const double *k,
                          uint64_t qOff, uint64_t kOff, uint64_t E)
{
    const double *rq = aRad[0] + qOff, *rk = aRad[1] + kOff;
    double sum = 0.0;
    uint64_t e;
    for (e = 0; e < E; e++) {
        if (rq[e] == 0.0 && rk[e] == 0.0) continue;
        if (!(rq[e] < INFINITY) || !(rk[e] < INFINITY) || !isfinite(q[e]) || !isfinite(k[e]))
            return INFINITY;
        sum += fabs(q[e]) * rk[e] + rq[e] * fabs(k[e]) + rq[e] * rk[e];
    }
    return parity_radius_up(sum, 4.0 * (double)E);
}

/* Scores, weights and per-weight error bounds of row iRow (= batch * L + l); with
 * pP->aRad, over the operand box (sdpa_propagate). */
static int sdpa_row(parity_op_call *pCall, sdpa_params *pP, uint64_t iRow)
{
    const parity_attention_geometry *pG = &pCall->geom.attention;
    const double *q = pCall->aIn[0].aValue, *k = pCall->aIn[1].aValue;
    const double *pMask = pCall->nIn == 4 ? pCall->aIn[3].aValue : NULL;
    double u = parity_unit_roundoff(pCall->accDtype), sub = parity_ulp_at(pCall->accDtype, 0.0);
    double gScore = pP->gScore, absScale = fabs(pG->scale);
    double D = 0.0, W = 0.0, w = 0.0, s, r2c, eD, reach = 0.0;
    uint64_t l = iRow % pG->L, qOff, kOff, vOff, mOff, strMS, j;
    int nan = 0, anyLive = 0;

    parity_attention_row(pG, iRow, &qOff, &kOff, &vOff, &mOff, &strMS);
    pP->row = iRow;
    pP->haveRow = 1;
    pP->rowRad = pP->aRad != NULL;
    pP->rowVacuous = 0;
    pP->vOff = vOff;
    pP->rowOverflow = 0;
    if (pG->S == 0) { pP->rowKind = ROW_EMPTY; return 0; }

    for (j = 0; j < pG->S; j++) {
        double absSum = 0.0;
        pP->aLive[j] = 0;
        mpfr_set_zero(pP->aE[j], 1);
        if (pG->causal && j > l) continue;
        if (pG->maskKind == PARITY_MASK_BOOL && pMask[mOff + j * strMS] == 0.0) continue;
        if (parity_exact_dot(pP->aE[j], q + qOff, 1, k + kOff + j * pG->E, 1, pG->E, NULL,
                             &absSum) != 0)
            return -1;
        if (pP->aRad) {
            /* over the operand box the exact score moves by at most |scale| reach, and the
             * kernel's error grows with sum |q k| to at most absSum + reach */
            reach = score_reach(pP->aRad, q + qOff, k + kOff + j * pG->E, qOff,
                                kOff + j * pG->E, pG->E);
            if (!(reach < INFINITY)) { pP->rowVacuous = 1; return 0; }
            absSum = parity_radius_up(absSum + reach, 1.0);
        }
        /* q k then scale, or q scaled first: either intermediate may overflow */
        if (!(absSum * (absScale > 1.0 ? absScale : 1.0) < parity_dtype_max_finite(pCall->accDtype)))
            pP->rowOverflow = 1;
        mpfr_mul_d(pP->aE[j], pP->aE[j], pG->scale, MPFR_RNDN);
        pP->aDs[j] = gScore * absScale * absSum +
                     0.5 * (double)pG->E * sub * (absScale > 1.0 ? absScale : 1.0) +
                     absScale * reach;
        if (pP->aRad && pMask && pP->aRad[3][mOff + j * strMS] != 0.0 &&
            (pG->maskKind == PARITY_MASK_BOOL ||
             !(pP->aRad[3][mOff + j * strMS] < INFINITY))) {
            pP->rowVacuous = 1;         /* a mask that may keep another set of scores */
            return 0;
        }
        if (pG->maskKind == PARITY_MASK_FLOAT) {
            double mv = pMask[mOff + j * strMS];
            double rm = pP->aRad ? pP->aRad[3][mOff + j * strMS] : 0.0;
            mpfr_add_d(pP->aE[j], pP->aE[j], mv, MPFR_RNDN);
            pP->aDs[j] += u * (fabs(mpfr_get_d(pP->aE[j], MPFR_RNDN)) + absScale * reach + rm +
                               fabs(mv) + rm) + rm;
        }
        if (pP->aRad) pP->aDs[j] = parity_radius_up(pP->aDs[j], 8.0);
        if (mpfr_nan_p(pP->aE[j]) || (mpfr_inf_p(pP->aE[j]) && mpfr_sgn(pP->aE[j]) > 0)) {
            nan = 1;
            break;
        }
        if (mpfr_inf_p(pP->aE[j])) { mpfr_set_zero(pP->aE[j], 1); continue; }   /* -Inf */
        if (!anyLive || mpfr_cmp(pP->aE[j], pP->m) > 0) mpfr_set(pP->m, pP->aE[j], MPFR_RNDN);
        pP->aLive[j] = 1;
        anyLive = 1;
    }
    if (nan || !anyLive) { pP->rowKind = ROW_NAN; return 0; }
    pP->rowKind = ROW_OK;

    for (j = 0; j < pG->S; j++) {
        if (!pP->aLive[j]) continue;
        mpfr_sub(pP->aE[j], pP->aE[j], pP->m, MPFR_RNDN);
        pP->aShift[j] = -mpfr_get_d(pP->aE[j], MPFR_RNDN);     /* |s_j - m| */
        mpfr_exp(pP->aE[j], pP->aE[j], MPFR_RNDN);
    }
    mpfr_sum(pP->sum, pP->apE, pG->S, MPFR_RNDN);
    s = mpfr_get_d(pP->sum, MPFR_RNDN);
    for (j = 0; j < pG->S; j++) {
        pP->aP[j] = pP->aLive[j] ? mpfr_get_d(pP->aE[j], MPFR_RNDN) / s : 0.0;
        if (!pP->aLive[j]) continue;
        W += pP->aP[j] * pP->aDs[j];
        if (pP->aDs[j] > D) D = pP->aDs[j];
    }
    eD = exp(D);
    /* the softmax kernel's own error is at the computed scores: with propagation they
     * lie up to ds_j from the reference's and their maximum up to D from m, so |s_j - m|
     * grows by ds_j + D, and w = sum p_j |s_j - m| is taken at the weights' upper end,
     * p_j (1 + r1_j) (2. above) */
    for (j = 0; j < pG->S; j++) {
        if (!pP->aLive[j]) continue;
        if (pP->aRad) pP->aShift[j] += pP->aDs[j] + D;
        w += pP->aP[j] * (pP->aRad ? 1.0 + expm1(pP->aDs[j] + eD * W) : 1.0) * pP->aShift[j];
    }
    if (pP->aRad) w = parity_radius_up(w, 4.0 * (double)pG->S);
    r2c = (w + 2.0 * SDPA_C_EXP + 2.0) * u + pP->gSoftmax;
    for (j = 0; j < pG->S; j++) {
        double r1, r2;
        if (!pP->aLive[j]) { pP->aR[j] = 0.0; continue; }
        r1 = expm1(pP->aDs[j] + eD * W);
        r2 = pP->aShift[j] * u + r2c;
        pP->aR[j] = (1.0 + r1) * (1.0 + r2) * (1.0 + pP->uP) - 1.0;
        pP->aR[j] *= 1.0 + 0x1p-50;   /* the binary64 evaluation of this bound */
    }
    return 0;
}

/* Output element `linear`: reference and bound; while propagating (pP->aRad) the radius
 * over the operand box: v_jc anywhere within r_jc adds sum_j p_j r_jc to the weighted sum
 * and widens |v_jc| to |v_jc| + r_jc in its error (4. above, and the scores' reach in
 * sdpa_row). */
static int sdpa_compute(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    sdpa_params *pP = pCall->pParams;
    const parity_attention_geometry *pG = &pCall->geom.attention;
    const double *v = pCall->aIn[2].aValue, *rv = pP->aRad ? pP->aRad[2] : NULL;
    uint64_t c = linear % pG->Ev, iRow = linear / pG->Ev, j;
    double sub = parity_ulp_at(pCall->accDtype, 0.0);
    double gSum, b0 = 0.0, absV = 0.0, o, vReach = 0.0;
    int vacuous = 0;

    if ((!pP->haveRow || pP->row != iRow || pP->rowRad != (pP->aRad != NULL)) &&
        sdpa_row(pCall, pP, iRow) != 0)
        return -1;
    if (pP->rowVacuous) {       /* sdpa_propagate makes the reference without radii */
        *pBound = INFINITY;
        return 0;
    }
    /* a score that may overflow in some order makes the whole row's results open (ops.h) */
    pCall->overflowPossible = pP->rowOverflow;
    if (pP->rowKind == ROW_NAN) { mpfr_set_nan(ref); *pBound = 0.0; return 0; }
    if (pP->rowKind == ROW_EMPTY) {
        mpfr_set_zero(ref, 1);
        *pBound = 0.0;
        return 0;
    }
    gSum = pP->gSum;
    for (j = 0; j < pG->S; j++) {
        uint64_t iv = pP->vOff + j * pG->Ev + c;
        double vj = v[iv], av = fabs(vj);
        mpfr_mul_d(pP->aProd[j], pP->aE[j], vj, MPFR_RNDN);   /* exact */
        if (!pP->aLive[j]) continue;
        if (rv) {
            if (!(rv[iv] < INFINITY) || (!isfinite(vj) && rv[iv] > 0.0)) vacuous = 1;
            av += rv[iv];
            vReach += pP->aP[j] * rv[iv];
        }
        b0 += pP->aP[j] * av * (pP->aR[j] + gSum * (1.0 + pP->aR[j]));
        absV += av;
    }
    mpfr_sum(ref, pP->apProd, pG->S, MPFR_RNDN);
    mpfr_div(ref, ref, pP->sum, MPFR_RNDN);
    if (vacuous || (rv && !mpfr_number_p(ref) && vReach > 0.0))
        return parity_propagate_vacuous(pCall, pBound);
    if (!mpfr_number_p(ref)) {
        *pBound = 0.0;
        return 0;
    }
    b0 = (b0 + vReach) * (1.0 + 0x1p-48) + (double)pG->S * sub * (1.0 + absV);
    o = fabs(mpfr_get_d(ref, MPFR_RNDN));
    *pBound = b0 + 0.5 * parity_ulp_at(pCall->outDtype, o + b0);
    if (rv) *pBound = parity_radius_up(*pBound, 4.0 * (double)pG->S + 8.0);
    return 0;
}

static int sdpa_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    return sdpa_compute(pCall, linear, ref, pBound);
}

/* Propagation (ops.h, xPropagate): sdpa_compute with the radii, a row at a time. */
static int sdpa_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                          mpfr_t ref, double *pRadius)
{
    sdpa_params *pP = pCall->pParams;
    int rc;
    pP->aRad = aRad;
    rc = sdpa_compute(pCall, linear, ref, pRadius);
    pP->aRad = NULL;
    if (rc == 0 && pP->rowVacuous) {
        /* a radius the row cannot carry: the reference from the operands as given (the
         * row made again without radii), any value accepted */
        rc = sdpa_compute(pCall, linear, ref, pRadius);
        if (rc == 0) parity_propagate_vacuous(pCall, pRadius);
    }
    return rc;
}

/* ---- the fast path (ops.h, xFast) ------------------------------------------------------ */

/* A row's weights and their error bounds in binary64, kept per thread (xFast runs on
 * several at once; a thread's elements come in runs of rows): the row's p_j, R_j, the
 * weights' relative error pRel, and whether the fast path takes the row at all. */
typedef struct {
    uint64_t generation;       /* sdpa_params.generation of the call the row is of; 0: none */
    uint64_t row;
    int ok;
    uint64_t vOff, nAlloc;
    double pRel;
    double *aP, *aR, *aDs;
    unsigned char *aLive;
    /* The row's outputs, every column c at once (sdpa_fast reads them): sum_j p_j v_jc
     * compensated (aSum, aComp), sum p |v|, the bound's first-order part, sum |v| (not
     * finite when some v_jc is not, or the sum overflows: then MPFR decides). nAllocEv
     * columns. */
    uint64_t nAllocEv;
    double *aSum, *aComp, *aAbsPV, *aB0, *aAbsV;
} fast_row;

static pthread_key_t g_rowKey;
static pthread_once_t g_rowOnce = PTHREAD_ONCE_INIT;

static void fast_row_free(void *p)
{
    fast_row *pR = p;
    if (!pR) return;
    free(pR->aP);
    free(pR->aR);
    free(pR->aDs);
    free(pR->aLive);
    free(pR->aSum);
    free(pR->aComp);
    free(pR->aAbsPV);
    free(pR->aB0);
    free(pR->aAbsV);
    free(pR);
}

static void fast_row_key(void)
{
    if (pthread_key_create(&g_rowKey, fast_row_free) != 0) g_rowKey = (pthread_key_t)-1;
}

/* Row iRow in binary64, mirroring sdpa_row: the scores as binary64 dot products (error at
 * most (E + 2) 2^-53 |scale| sum |q k|, Higham 2002 eq. 3.5, plus a float mask's add), the
 * shifted exponentials, their compensated sum, the weights, and the bound's per-weight R_j
 * from the same formulas. The row is left to MPFR (ok = 0) when a score may carry more
 * than 2^-38 absolute error (the weights' relative error is then past 2^-36), when some
 * order may overflow, and for NaN, fully masked or empty rows. */
/* One key row j into the column sums (fast_row_columns): independent lanes of IEEE
 * arithmetic, which the compiler vectorises (-O3, CMakeLists.txt) with the same results as
 * the scalar loop; a function of its own with restrict arrays, as inside fast_row_columns
 * gcc 12 vectorised nothing ("no vectype" for the row's load). Built for AVX-512, AVX2 and
 * baseline x86-64, chosen at load time (function multiversioning, gcc and clang 14): the
 * same bits from each, as nothing is contracted into an FMA in this file (CMakeLists.txt). */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SDPA_NO_CLONES 1   /* clang's ASan: no ifunc resolvers that run before it starts */
#endif
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(SDPA_NO_CLONES)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void column_sums(const double *restrict vRow, uint64_t nEv, double pj, double fj,
                        double *restrict aSum, double *restrict aComp,
                        double *restrict aAbsPV, double *restrict aB0, double *restrict aAbsV)
{
    uint64_t c;
    for (c = 0; c < nEv; c++) {
        double vj = vRow[c], x = pj * vj, a = fabs(vj), t = aSum[c] + x, z = t - aSum[c];
        /* TwoSum (Knuth): the exact error of aSum + x without a branch, the same value
         * parity_comp_add's ordered Fast2Sum (rows.h) adds */
        aComp[c] += (aSum[c] - (t - z)) + (x - z);
        aSum[c] = t;
        aAbsPV[c] += pj * a;
        aB0[c] += fj * a;
        aAbsV[c] += a;
    }
}

/* The weighted sums of every column of the row, j outer and c inner: v's rows are read
 * contiguously, once per output row rather than once per element (strided by Ev), and each
 * column sums its terms in the same order as one element alone would. */
static void fast_row_columns(const parity_op_call *pCall, const sdpa_params *pP, fast_row *pR)
{
    const parity_attention_geometry *pG = &pCall->geom.attention;
    const double *v = pCall->aIn[2].aValue;
    uint64_t j, nEv = pG->Ev;
    double gSum = pP->gSum;
    memset(pR->aSum, 0, nEv * sizeof(double));
    memset(pR->aComp, 0, nEv * sizeof(double));
    memset(pR->aAbsPV, 0, nEv * sizeof(double));
    memset(pR->aB0, 0, nEv * sizeof(double));
    memset(pR->aAbsV, 0, nEv * sizeof(double));
    for (j = 0; j < pG->S; j++) {
        double pj = pR->aP[j], fj = pj * (pR->aR[j] + gSum * (1.0 + pR->aR[j]));
        if (!pR->aLive[j]) continue;
        column_sums(v + pR->vOff + j * nEv, nEv, pj, fj, pR->aSum, pR->aComp, pR->aAbsPV,
                    pR->aB0, pR->aAbsV);
    }
}

#define FAST_KEYS 4   /* keys whose scores are summed side by side (fast_row_make) */

static void fast_row_make(const parity_op_call *pCall, const sdpa_params *pP, uint64_t iRow,
                          fast_row *pR)
{
    const parity_attention_geometry *pG = &pCall->geom.attention;
    const double *q = pCall->aIn[0].aValue, *k = pCall->aIn[1].aValue;
    const double *pMask = pCall->nIn == 4 ? pCall->aIn[3].aValue : NULL;
    double u = parity_unit_roundoff(pCall->accDtype), sub = parity_ulp_at(pCall->accDtype, 0.0);
    double gScore = pP->gScore, absScale = fabs(pG->scale);
    double m = -INFINITY, maxErr = 0.0, D = 0.0, W = 0.0, w = 0.0, r2c, eD, sum;
    parity_comp_sum acc = { 0.0, 0.0 };
    uint64_t l = iRow % pG->L, qOff, kOff, mOff, strMS, j, e;
    double *aS = pR->aR;   /* the scores, then the shifts, then R */
    double *aDs = pR->aDs; /* the score bounds */
    int anyLive = 0;

    pR->generation = pP->generation;
    pR->row = iRow;
    pR->ok = 0;
    if (pG->S == 0) return;
    parity_attention_row(pG, iRow, &qOff, &kOff, &pR->vOff, &mOff, &strMS);
    /* Every key's q.k and sum |q_e k_e|, in aS and aDs for now: FAST_KEYS keys at a time,
     * each summed in e's order as before (the same bits), their chains of dependent
     * additions interleaved rather than one after another (masked keys too: their sums
     * are never read) */
    for (j = 0; j < pG->S; j += FAST_KEYS) {
        double aDot[FAST_KEYS] = { 0.0 }, aAbs[FAST_KEYS] = { 0.0 };
        uint64_t nKey = pG->S - j < FAST_KEYS ? pG->S - j : FAST_KEYS, b;
        const double *kRow = k + kOff + j * pG->E;
        if (nKey == FAST_KEYS) {
            for (e = 0; e < pG->E; e++)
                for (b = 0; b < FAST_KEYS; b++) {
                    double t = q[qOff + e] * kRow[b * pG->E + e];
                    aDot[b] += t;
                    aAbs[b] += fabs(t);
                }
        } else {
            for (b = 0; b < nKey; b++)
                for (e = 0; e < pG->E; e++) {
                    double t = q[qOff + e] * kRow[b * pG->E + e];
                    aDot[b] += t;
                    aAbs[b] += fabs(t);
                }
        }
        for (b = 0; b < nKey; b++) {
            aS[j + b] = aDot[b];
            aDs[j + b] = aAbs[b];
        }
    }
    for (j = 0; j < pG->S; j++) {
        double dot = aS[j], absSum = aDs[j], sj, err;
        pR->aLive[j] = 0;
        if (pG->causal && j > l) continue;
        if (pG->maskKind == PARITY_MASK_BOOL && pMask[mOff + j * strMS] == 0.0) continue;
        if (!(absSum * (absScale > 1.0 ? absScale : 1.0) < parity_dtype_max_finite(pCall->accDtype)) ||
            !isfinite(dot))
            return;   /* may overflow, or NaN/Inf: MPFR's */
        sj = dot * pG->scale;
        err = ((double)pG->E + 2.0) * 0x1p-53 * absSum * absScale;
        aDs[j] = gScore * absScale * absSum + 0.5 * (double)pG->E * sub * (absScale > 1.0 ? absScale : 1.0);
        if (pG->maskKind == PARITY_MASK_FLOAT) {
            double mv = pMask[mOff + j * strMS];
            if (mv == -INFINITY) continue;
            if (!isfinite(mv)) return;
            sj += mv;
            err += 0x1p-52 * (fabs(sj) + fabs(mv));
            aDs[j] += u * (fabs(sj) + fabs(mv));
        }
        if (err > maxErr) maxErr = err;
        aS[j] = sj;
        if (sj > m) m = sj;
        pR->aLive[j] = 1;
        anyLive = 1;
    }
    if (!anyLive || !(maxErr <= 0x1p-38)) return;
    /* exp(s_j - m) once a key, kept in aP until p_j replaces it (exp(-shift) below is the
     * same call: -(m - s_j) is s_j - m exactly) */
    for (j = 0; j < pG->S; j++)
        if (pR->aLive[j]) parity_comp_add(&acc, pR->aP[j] = exp(aS[j] - m));
    sum = acc.s + acc.c;
    for (j = 0; j < pG->S; j++) {
        double shift, pj;
        if (!pR->aLive[j]) { pR->aP[j] = 0.0; pR->aR[j] = 0.0; continue; }
        shift = m - aS[j];
        pj = pR->aP[j] / sum;
        w += pj * shift;
        W += pj * aDs[j];
        if (aDs[j] > D) D = aDs[j];
        pR->aR[j] = shift;     /* the shift (aS's storage), until R replaces it below */
        pR->aP[j] = pj;
    }
    eD = exp(D);
    r2c = (w + 2.0 * SDPA_C_EXP + 2.0) * u + pP->gSoftmax;
    for (j = 0; j < pG->S; j++) {
        double r1, r2;
        if (!pR->aLive[j]) continue;
        r1 = expm1(aDs[j] + eD * W);
        r2 = pR->aR[j] * u + r2c;
        pR->aR[j] = ((1.0 + r1) * (1.0 + r2) * (1.0 + pP->uP) - 1.0) * (1.0 + 0x1p-50);
    }
    /* the weights: the scores' error e^maxErr - 1 twice (numerator and sum), exp's, the
     * compensated sum's and the division's roundings */
    pR->pRel = 2.0 * expm1(maxErr) + 0x1p-48;
    fast_row_columns(pCall, pP, pR);
    pR->ok = 1;
}

/* Fast path (ops.h): o = sum_j p_j v_jc in binary64 (compensated) over the row's binary64
 * weights, within pRel sum p |v| + 2^-50 sum p |v| of exact; stated 2^-30 sum_j p_j |v_jc|
 * (plus 2^-1000 for weights that underflow), 2^6 over the worst that analysis allows and
 * checked against MPFR by tests/test_fast_path.c with a margin of 2^10. The bound uses the
 * binary64 weights where the MPFR path uses MPFR's: it is first order in them, and they
 * differ by pRel < 2^-36 relative, so the spread 2^-30 of the bound covers it. */
static int sdpa_fast(const parity_op_call *pCall, uint64_t linear, double *pRef, double *pErr,
                     double *pBound, double *pSpread)
{
    const sdpa_params *pP = pCall->pParams;
    const parity_attention_geometry *pG = &pCall->geom.attention;
    uint64_t c = pG->Ev ? linear % pG->Ev : 0, iRow = pG->Ev ? linear / pG->Ev : 0;
    double sub = parity_ulp_at(pCall->accDtype, 0.0), b0, absPV, o, err, bLo, bHi;
    fast_row *pR;

    if (pCall->accDtype == PARITY_DT_F64 || pCall->outDtype == PARITY_DT_F64) return 0;
    pthread_once(&g_rowOnce, fast_row_key);
    if (g_rowKey == (pthread_key_t)-1) return 0;
    pR = pthread_getspecific(g_rowKey);
    if (!pR || pR->nAlloc < pG->S || pR->nAllocEv < pG->Ev) {
        fast_row_free(pR);
        pR = calloc(1, sizeof *pR);
        if (pR) {
            uint64_t nEv = pG->Ev + 1;
            pR->aP = malloc((pG->S + 1) * sizeof(double));
            pR->aR = malloc((pG->S + 1) * sizeof(double));
            pR->aDs = malloc((pG->S + 1) * sizeof(double));
            pR->aLive = malloc(pG->S + 1);
            pR->aSum = malloc(nEv * sizeof(double));
            pR->aComp = malloc(nEv * sizeof(double));
            pR->aAbsPV = malloc(nEv * sizeof(double));
            pR->aB0 = malloc(nEv * sizeof(double));
            pR->aAbsV = malloc(nEv * sizeof(double));
            pR->nAlloc = pG->S;
            pR->nAllocEv = pG->Ev;
            if (!pR->aP || !pR->aR || !pR->aDs || !pR->aLive || !pR->aSum || !pR->aComp ||
                !pR->aAbsPV || !pR->aB0 || !pR->aAbsV) {
                fast_row_free(pR);
                pR = NULL;
            }
        }
        pthread_setspecific(g_rowKey, pR);
        if (!pR) return 0;
        pR->generation = 0;
    }
    if (pR->generation != pP->generation || pR->row != iRow) fast_row_make(pCall, pP, iRow, pR);
    if (!pR->ok || !isfinite(pR->aAbsV[c])) return 0;
    o = pR->aSum[c] + pR->aComp[c];
    absPV = pR->aAbsPV[c];
    err = 0x1p-30 * absPV + 0x1p-1000;
    /* aB0 sums S non-negative terms of two roundings each in binary64: below the exact
     * sum by at most (S + 1) 2^-53 relative (Higham 2002, eq. 4.4); 2^-48 more as before */
    b0 = pR->aB0[c] * (1.0 + ((double)pG->S + 1.0) * 0x1p-53 + 0x1p-48) +
         (double)pG->S * sub * (1.0 + pR->aAbsV[c]);
    bLo = b0 + 0.5 * parity_ulp_at(pCall->outDtype, (fabs(o) > err ? fabs(o) - err : 0.0) + b0);
    bHi = b0 + 0.5 * parity_ulp_at(pCall->outDtype, fabs(o) + err + b0);
    *pRef = o;
    *pErr = err;
    *pBound = b0 + 0.5 * parity_ulp_at(pCall->outDtype, fabs(o) + b0);
    *pSpread = (bHi - bLo) + 0x1p-30 * b0;
    return 1;
}

const parity_op_def parity_op_scaled_dot_product_attention = {
    .zName = "scaled_dot_product_attention",
    .zModel = "scores gamma_{E+4}(u)|scale|sum|q k| through softmax p_j(|ds_j| + sum p|ds|), "
              "softmax y[(|s-m| + w + 2c+2)u + gamma_{(c+2)S}], weighted sum gamma_{2S} "
              "sum p|v| + sum |dp||v| + 0.5 ulp (Higham 2002; Blanchard-Higham-Higham 2021)",
    .nInMin = 3,
    .nInMax = 4,
    .family = PARITY_FAMILY_ATTENTION,
    .xPrepare = sdpa_prepare,
    .xLoad = sdpa_load,
    .xElement = sdpa_element,
    .xFreeParams = sdpa_free,
    .xCost = sdpa_cost,
    .xEnvelope = NULL,
    .xFast = sdpa_fast,
    .xPropagate = sdpa_propagate,
};
