/*
 * op_matmul.c - matmul (torch semantics, batch broadcasting), linear (x, weight[out, in],
 * optional bias) and bmm: every output element is a dot product of length K, plus a bias.
 *
 * Reference: the exact dot product of the captured operands (products of binary64 are
 * exact at 106 bits; mpfr_sum rounds the sum once), see mpref.h.
 *
 * Bound: for any order of summation (sequential, pairwise, blocked, split-K: every
 * summation tree) and with or without FMA, a dot product computed in precision u satisfies
 *     |fl(x^T y) - x^T y| <= gamma_n(u) * sum_i |x_i y_i|,   gamma_n = n u / (1 - n u)
 * (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed. 2002, eq. (3.5) and
 * Sec. 3.1 on arbitrary summation orders; the bound depends on the tree height, at most n).
 * n = K, or K + 1 with a bias. When the promised accumulation dtype (acc_dtype) is
 * narrower than the operands, the kernel also rounds each operand to it: two more
 * factors (1 + delta), so n grows by 2. The result is then rounded to the output dtype:
 * half an ulp of the output dtype at the largest value the result can take. Underflow in
 * products and partial sums adds at most half the accumulation dtype's smallest subnormal
 * per operation: n of those are added as absolute slack.
 * This deterministic bound is what decides failure: a correct kernel in any summation
 * order never exceeds it. (The probabilistic bound of Higham & Mary 2019, lambda sqrt(n) u,
 * is the later "suspicious" marker.)
 *
 * addmm(c, a, b, beta, alpha) and baddbmm (a batch of them): beta c + alpha (a b), c
 * broadcast to the output. Reference: the exact dot product scaled by alpha plus beta c
 * (exact at 106 bits) with one rounding. Bound: the same argument with the scaled terms
 * |alpha a_k b_k| and |beta c|, and three more roundings (alpha times the sum, beta times
 * c, the addition: BLAS gemm's C = alpha A B + beta C in either order), so n = K + 3. With
 * beta = 0 torch ignores c, NaN and Inf in it included, and so does the reference.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/propagate.h"
#include "formats/alloc.h"

/* The dims and strides are the geometry (geom.dot); this is what the reference adds. */
typedef struct {
    const double *pBias;                  /* linear's bias, or NULL */
    /* b as the element code reads it: matmul's b with its columns made contiguous (pBT,
     * made by matmul_load), else b itself; the step along K and along N there. */
    double *pBT;
    uint64_t strideBk, strideBn;
    /* For the envelope (selective verification): the 2-norm of every K-vector of a and of
     * b, indexed by the vector's offset (see vector_key). */
    double *aNormA, *aNormB;
    int envFailed;            /* out of memory for the norms: no envelope, every element checked */
    double envGamma, envSlack;            /* gamma_n and the underflow slack, once */
} matmul_params;

static double dot_terms(const parity_dot_geometry *pG)
{
    return (double)pG->K + (pG->hasBias ? 1.0 : 0.0) + (pG->hasAddend ? 3.0 : 0.0);
}

static void free_params(void *p)
{
    matmul_params *pP = p;
    free(pP->pBT);
    free(pP->aNormA);
    free(pP->aNormB);
    free(pP);
}

static double acc_rounding_terms(const parity_op_call *pCall)
{
    /* Operands wider than the accumulation dtype are rounded to it first. */
    size_t i;
    double uAcc = parity_unit_roundoff(pCall->accDtype);
    for (i = 0; i < pCall->nIn && i < 2; i++)
        if (parity_unit_roundoff(pCall->aIn[i].dtype) < uAcc) return 2.0;
    return 0.0;
}

/* geometry.h: where matrix iMat of the batch starts in a and in b. */
void parity_dot_matrix(const parity_dot_geometry *pG, uint64_t iMat, uint64_t *pOffA,
                       uint64_t *pOffB)
{
    uint64_t offA = 0, offB = 0;
    int d;
    for (d = pG->nBatch - 1; d >= 0; d--) {
        uint64_t idx = iMat % pG->aBatchDim[d];
        iMat /= pG->aBatchDim[d];
        offA += idx * pG->aStrideA[d];
        offB += idx * pG->aStrideB[d];
    }
    *pOffA = offA;
    *pOffB = offB;
}

/* Offsets of the a row and b column that output element `linear` dots (b as the element
 * code reads it: pP's strides), and its column j. */
static void element_offsets(const parity_dot_geometry *pG, const matmul_params *pP,
                            uint64_t linear, uint64_t *pOffA, uint64_t *pOffB, uint64_t *pJ)
{
    uint64_t j = linear % pG->N, rest = linear / pG->N;
    uint64_t i = rest % pG->M, iMat = rest / pG->M;
    parity_dot_matrix(pG, iMat, pOffA, pOffB);
    *pOffA += i * pG->strideAm;
    *pOffB += j * pP->strideBn;
    *pJ = j;
}

/* A K-vector starting at offset off with the given stride along K: vectors with stride 1
 * start at multiples of K; with stride N (matmul's b columns) they start at
 * (matrix * K * N) + column. Either way this maps them onto 0 .. nElem / K - 1. */
static uint64_t vector_key(uint64_t off, uint64_t strideK, uint64_t K, uint64_t N)
{
    if (strideK == 1) return off / K;
    return off / (K * N) * N + off % N;
}

static double norm2(const double *x, uint64_t stride, uint64_t n)
{
    double s = 0.0;
    uint64_t k;
    for (k = 0; k < n; k++) s += x[k * stride] * x[k * stride];
    /* Rounded sums of squares can be a few ulps low; inflate so the norm stays an upper
     * bound (sum of n terms: gamma_n(2^-53) relative, Higham 2002, eq. 4.4). */
    return sqrt(s * (1.0 + ((double)n + 4.0) * 0x1p-52)) * (1.0 + 0x1p-51);
}

/* Precomputes the norms of every K-vector, O(nElem) for each operand. */
static int make_norms(parity_op_call *pCall, matmul_params *pP)
{
    const parity_operand *pA = &pCall->aIn[0], *pB = &pCall->aIn[1];
    const parity_dot_geometry *pG = &pCall->geom.dot;
    uint64_t nA = pG->K ? pA->nElem / pG->K : 0, nB = pG->K ? pB->nElem / pG->K : 0, v;
    double u = parity_unit_roundoff(pCall->accDtype);
    double n = dot_terms(pG) + acc_rounding_terms(pCall);
    pP->envGamma = parity_gamma(n, u);
    pP->envGamma += parity_operand_gamma(pCall, pP->envGamma);
    pP->envSlack = n * 0.5 * parity_ulp_at(pCall->accDtype, 0.0);
    pP->aNormA = parity_calloc(nA + 1, sizeof(double));
    pP->aNormB = parity_calloc(nB + 1, sizeof(double));
    if (!pP->aNormA || !pP->aNormB) {
        parity_free(pP->aNormA);
        parity_free(pP->aNormB);
        pP->aNormA = pP->aNormB = NULL;
        pP->envFailed = 1;
        return -1;
    }
    for (v = 0; v < nA; v++) {
        uint64_t off = pG->strideAk == 1 ? v * pG->K : v / pG->N * pG->K * pG->N + v % pG->N;
        pP->aNormA[v] = norm2(pA->aValue + off, pG->strideAk, pG->K);
    }
    for (v = 0; v < nB; v++) {
        uint64_t off = pP->strideBk == 1 ? v * pG->K : v / pG->N * pG->K * pG->N + v % pG->N;
        pP->aNormB[v] = norm2((pP->pBT ? pP->pBT : pB->aValue) + off, pP->strideBk, pG->K);
    }
    return 0;
}

static double dot_cost(const parity_op_call *pCall)
{
    return (double)pCall->geom.dot.K + 1.0;
}

/* Cheap upper bound of the element's bound: Cauchy-Schwarz, sum |a_k b_k| <= |a|_2 |b|_2,
 * put into the same formula as dot_element's bound (|result| <= sum |terms| as well). */
static double dot_envelope(parity_op_call *pCall, uint64_t linear)
{
    matmul_params *pP = pCall->pParams;
    const parity_dot_geometry *pG = &pCall->geom.dot;
    uint64_t offA, offB, j;
    double s;
    if (pG->K == 0) return 0.0;   /* nothing to bound: every element is checked */
    /* without the norms, an envelope of 0 sends every element to the exact reference:
     * slower, never wrong */
    if (pP->envFailed || (!pP->aNormA && make_norms(pCall, pP) != 0)) return 0.0;
    element_offsets(pG, pP, linear, &offA, &offB, &j);
    s = pP->aNormA[vector_key(offA, pG->strideAk, pG->K, pG->N)] *
        pP->aNormB[vector_key(offB, pP->strideBk, pG->K, pG->N)];
    if (pG->hasBias) s += fabs(pP->pBias[j]);
    return pP->envGamma * s + 0.5 * parity_ulp_at(pCall->outDtype, s * (1.0 + pP->envGamma)) +
           pP->envSlack;
}

/* addmm, baddbmm: ref (the exact a b) becomes beta c + alpha ref, and *pAbsSum the sum of
 * the scaled terms' magnitudes. */
static void add_scaled(const parity_op_call *pCall, uint64_t linear, mpfr_t ref,
                       double *pAbsSum)
{
    const parity_dot_geometry *pG = &pCall->geom.dot;
    uint64_t aIdx[PARITY_MAX_RANK], off = 0;
    int d;
    mpfr_mul_d(ref, ref, pG->alpha, MPFR_RNDN);
    *pAbsSum *= fabs(pG->alpha);
    if (pG->beta == 0.0) return;
    parity_unravel(pCall->outRank, pCall->aOutDim, linear, aIdx);
    for (d = 0; d < pCall->outRank; d++) off += aIdx[d] * pG->aStrideC[d];
    {
        mpfr_t t;
        double c = pCall->aIn[0].aValue[off];
        mpfr_init2(t, 2 * 53 + 2);          /* beta c exactly */
        mpfr_set_d(t, c, MPFR_RNDN);
        mpfr_mul_d(t, t, pG->beta, MPFR_RNDN);
        mpfr_add(ref, ref, t, MPFR_RNDN);
        mpfr_clear(t);
        *pAbsSum += fabs(pG->beta * c);
    }
}

static int dot_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    const matmul_params *pP = pCall->pParams;
    const parity_dot_geometry *pG = &pCall->geom.dot;
    const double *a = pCall->aIn[pG->iA].aValue;
    const double *b = pP->pBT ? pP->pBT : pCall->aIn[pG->iA + 1].aValue;
    uint64_t offA, offB, j;
    double absSum = 0.0, u, n, gamma, magnitude;
    const double *pBias = NULL;

    element_offsets(pG, pP, linear, &offA, &offB, &j);
    if (pG->hasBias) pBias = &pP->pBias[j];
    if (parity_exact_dot(ref, a + offA, pG->strideAk, b + offB, pP->strideBk, pG->K, pBias,
                         &absSum) != 0)
        return -1;
    if (pG->hasAddend) add_scaled(pCall, linear, ref, &absSum);
    parity_note_overflow(pCall, absSum);
    u = parity_unit_roundoff(pCall->accDtype);
    n = dot_terms(pG) + acc_rounding_terms(pCall);
    gamma = parity_gamma(n, u);
    {
        double gOp = parity_operand_gamma(pCall, gamma);
        gamma += gOp;
    }
    magnitude = fabs(mpfr_get_d(ref, MPFR_RNDN)) + gamma * absSum;
    *pBound = gamma * absSum + 0.5 * parity_ulp_at(pCall->outDtype, magnitude) +
              n * 0.5 * parity_ulp_at(pCall->accDtype, 0.0);
    {
        double gProb = parity_gamma_prob(n, u, pCall->lambda);
        gProb += parity_operand_gamma(pCall, gProb);
        if (gProb < gamma)
            pCall->probBound = gProb * absSum +
                               0.5 * parity_ulp_at(pCall->outDtype, magnitude) +
                               n * 0.5 * parity_ulp_at(pCall->accDtype, 0.0);
    }
    return 0;
}

/* Propagation (ops.h, xPropagate). With a_k' within ra_k of a_k and b_k' within rb_k of
 * b_k, each product moves by at most |a_k| rb_k + |b_k| ra_k + ra_k rb_k (interval
 * arithmetic, Moore et al. 2009, Ch. 2), the bias and addend by their radii (scaled by
 * alpha and beta), and the sum by the sum of those; dot_element's bound grows with
 * sum |terms|, which on the box is at most sum (|a_k| + ra_k)(|b_k| + rb_k) (+ the bias's
 * and addend's), and with |result|, at most |ref| + that reach. */
static int dot_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                         mpfr_t ref, double *pRadius)
{
    const matmul_params *pP = pCall->pParams;
    const parity_dot_geometry *pG = &pCall->geom.dot;
    const double *a = pCall->aIn[pG->iA].aValue, *b = pCall->aIn[pG->iA + 1].aValue;
    const double *ra = aRad[pG->iA], *rb = aRad[pG->iA + 1];
    uint64_t offA, offB, j = linear % pG->N, rest = linear / pG->N, k;
    double dev = 0.0, absSum = 0.0, u, n, gamma, bound, nOps = 4.0 * (double)pG->K + 16.0;
    int special = 0, moved = 0;

    if (dot_element(pCall, linear, ref, pRadius) != 0) return -1;
    /* the operands' own layout (the radii's), not the transposed copy dot_element reads */
    parity_dot_matrix(pG, rest / pG->M, &offA, &offB);
    offA += rest % pG->M * pG->strideAm;
    offB += j * pG->strideBn;
    for (k = 0; k < pG->K; k++) {
        double av = a[offA + k * pG->strideAk], bv = b[offB + k * pG->strideBk];
        double rav = ra[offA + k * pG->strideAk], rbv = rb[offB + k * pG->strideBk];
        if (rav != 0.0 || rbv != 0.0) moved = 1;
        if (!isfinite(av) || !isfinite(bv) || !(rav < INFINITY) || !(rbv < INFINITY)) special = 1;
        dev += fabs(av) * rbv + fabs(bv) * rav + rav * rbv;
        absSum += (fabs(av) + rav) * (fabs(bv) + rbv);
    }
    if (pG->hasBias) {
        double rBias = aRad[2][j];
        if (rBias != 0.0) moved = 1;
        dev += rBias;
        absSum += fabs(pP->pBias[j]) + rBias;
    }
    if (pG->hasAddend) {
        dev *= fabs(pG->alpha);
        absSum *= fabs(pG->alpha);
        if (pG->beta != 0.0) {
            uint64_t aIdx[PARITY_MAX_RANK], off = 0;
            int d;
            double c, rc;
            parity_unravel(pCall->outRank, pCall->aOutDim, linear, aIdx);
            for (d = 0; d < pCall->outRank; d++) off += aIdx[d] * pG->aStrideC[d];
            c = pCall->aIn[0].aValue[off];
            rc = aRad[0][off];
            if (rc != 0.0) moved = 1;
            if (!isfinite(c) || !(rc < INFINITY)) special = 1;
            dev += fabs(pG->beta) * rc;
            absSum += fabs(pG->beta) * (fabs(c) + rc);
        }
    }
    if (!moved) return 0;
    if (special || !mpfr_number_p(ref)) return parity_propagate_vacuous(pCall, pRadius);
    dev = parity_radius_up(dev, nOps);
    absSum = parity_radius_up(absSum, nOps);
    if (!(absSum < parity_dtype_max_finite(pCall->accDtype)))
        return parity_propagate_vacuous(pCall, pRadius);   /* an order may overflow */
    u = parity_unit_roundoff(pCall->accDtype);
    n = dot_terms(pG) + acc_rounding_terms(pCall);
    gamma = parity_gamma(n, u);
    gamma += parity_operand_gamma(pCall, gamma);
    bound = gamma * absSum +
            0.5 * parity_ulp_at(pCall->outDtype,
                                parity_radius_up(fabs(mpfr_get_d(ref, MPFR_RNDA)) + dev +
                                                 gamma * absSum, 3.0)) +
            n * 0.5 * parity_ulp_at(pCall->accDtype, 0.0);
    *pRadius = parity_radius_up(dev + bound, 8.0);
    return 0;
}

static int check_out(parity_op_call *pCall, const uint64_t *aWant, int nWant,
                     const char *zOp, char *zErr, size_t nErr)
{
    char zA[256], zB[256];
    if (parity_op_take_out(pCall, nWant, aWant)) return 0;
    snprintf(zErr, nErr, "%s: operands give shape %s, output has %s", zOp,
             parity_shape_str(nWant, aWant, zA, sizeof zA),
             parity_shape_str(pCall->outRank, pCall->aOutDim, zB, sizeof zB));
    return -1;
}

/* torch.matmul's shape rule (bmm's too, after its own check) into geom.dot. */
static int matmul_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                          char *zErr, size_t nErr)
{
    const parity_operand *pA = &pCall->aIn[0], *pB = &pCall->aIn[1];
    parity_dot_geometry *pG = &pCall->geom.dot;
    matmul_params *pP = parity_calloc(1, sizeof *pP);
    uint64_t aWant[PARITY_MAX_RANK], Ka, Kb;
    int nBatchA, nBatchB, nWant = 0, d, dropM = 0, dropN = 0;
    char zA[128], zB[128];
    (void)aAttr; (void)nAttr;

    if (!pP) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pCall->pParams = pP;
    if (pA->rank == 0 || pB->rank == 0) {
        snprintf(zErr, nErr, "matmul: operands must have rank >= 1");
        return -1;
    }
    /* torch.matmul: a 1-D left operand is a row [1, K], a 1-D right one a column [K, 1];
     * the added dimension is dropped from the result. */
    if (pA->rank == 1) { dropM = 1; pG->M = 1; Ka = pA->aDim[0]; nBatchA = 0; }
    else { pG->M = pA->aDim[pA->rank - 2]; Ka = pA->aDim[pA->rank - 1]; nBatchA = pA->rank - 2; }
    if (pB->rank == 1) { dropN = 1; pG->N = 1; Kb = pB->aDim[0]; nBatchB = 0; }
    else { pG->N = pB->aDim[pB->rank - 1]; Kb = pB->aDim[pB->rank - 2]; nBatchB = pB->rank - 2; }
    if (Ka != Kb) {
        snprintf(zErr, nErr, "matmul: inner dimensions differ: %s @ %s",
                 parity_shape_str(pA->rank, pA->aDim, zA, sizeof zA),
                 parity_shape_str(pB->rank, pB->aDim, zB, sizeof zB));
        return -1;
    }
    pG->K = Ka;
    {
        const int anRank[2] = { nBatchA, nBatchB };
        const uint64_t *const aapDim[2] = { pA->aDim, pB->aDim };
        int iBad;
        pG->nBatch = parity_broadcast_shape(2, anRank, aapDim, pG->aBatchDim, &iBad);
        if (pG->nBatch < 0) {
            snprintf(zErr, nErr, "matmul: batch dimensions do not broadcast: %s @ %s",
                     parity_shape_str(pA->rank, pA->aDim, zA, sizeof zA),
                     parity_shape_str(pB->rank, pB->aDim, zB, sizeof zB));
            return -1;
        }
    }
    pG->nMat = 1;
    for (d = 0; d < pG->nBatch; d++) {
        pG->nMat *= pG->aBatchDim[d];
        aWant[nWant++] = pG->aBatchDim[d];
    }
    if (!dropM) aWant[nWant++] = pG->M;
    if (!dropN) aWant[nWant++] = pG->N;
    if (check_out(pCall, aWant, nWant, "matmul", zErr, nErr) != 0) return -1;
    /* the batch dims broadcast (checked above): these cannot fail */
    parity_broadcast_strides(pG->nBatch, pG->aBatchDim, pA->aDim, nBatchA, pG->M * pG->K,
                             pG->aStrideA);
    parity_broadcast_strides(pG->nBatch, pG->aBatchDim, pB->aDim, nBatchB, pG->K * pG->N,
                             pG->aStrideB);
    pG->strideAk = 1;
    pG->strideAm = pG->K;
    pG->strideBk = pB->rank == 1 ? 1 : pG->N;
    pG->strideBn = 1;
    /* The element code reads b transposed (matmul_load): columns contiguous. */
    pP->strideBk = 1;
    pP->strideBn = pG->K;
    return 0;
}

/* Columns of b are N apart in memory: every term of a dot product would touch another
 * cache line. One transposed copy (per batch matrix) makes them contiguous. */
static int matmul_load(parity_op_call *pCall, char *zErr, size_t nErr)
{
    const parity_dot_geometry *pG = &pCall->geom.dot;
    const parity_operand *pB = &pCall->aIn[pG->iA + 1];
    matmul_params *pP = pCall->pParams;
    uint64_t KN = pG->K * pG->N, nMat = KN != 0 ? pB->nElem / KN : 0, m, k, j;
    pP->pBT = parity_malloc((pB->nElem ? pB->nElem : 1) * sizeof(double));
    if (!pP->pBT) { snprintf(zErr, nErr, "out of memory"); return -1; }
    for (m = 0; m < nMat; m++)
        for (k = 0; k < pG->K; k++)
            for (j = 0; j < pG->N; j++)
                pP->pBT[m * KN + j * pG->K + k] = pB->aValue[m * KN + k * pG->N + j];
    return 0;
}

static int bmm_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                       char *zErr, size_t nErr)
{
    const parity_operand *pA = &pCall->aIn[0], *pB = &pCall->aIn[1];
    if (pA->rank != 3 || pB->rank != 3 || pA->aDim[0] != pB->aDim[0]) {
        snprintf(zErr, nErr, "bmm: operands must be [B, M, K] and [B, K, N] with the same B");
        return -1;
    }
    return matmul_prepare(pCall, aAttr, nAttr, zErr, nErr);
}

static int linear_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                          char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0], *pW = &pCall->aIn[1];
    parity_dot_geometry *pG = &pCall->geom.dot;
    matmul_params *pP = parity_calloc(1, sizeof *pP);
    uint64_t aWant[PARITY_MAX_RANK];
    int d;
    char zA[128], zB[128];
    (void)aAttr; (void)nAttr;

    if (!pP) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pCall->pParams = pP;
    if (pX->rank < 1 || pW->rank != 2 || pX->aDim[pX->rank - 1] != pW->aDim[1]) {
        snprintf(zErr, nErr, "linear: needs x[..., in] and weight[out, in], got %s and %s",
                 parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA),
                 parity_shape_str(pW->rank, pW->aDim, zB, sizeof zB));
        return -1;
    }
    pG->K = pW->aDim[1];
    pG->N = pW->aDim[0];
    pG->M = 1;
    pG->nMat = 1;
    for (d = 0; d < pX->rank - 1; d++) pG->M *= pX->aDim[d];
    if (pCall->nIn == 3) {
        const parity_operand *pBias = &pCall->aIn[2];
        if (pBias->rank != 1 || pBias->aDim[0] != pG->N) {
            snprintf(zErr, nErr, "linear: bias must be [%llu], got %s",
                     (unsigned long long)pG->N,
                     parity_shape_str(pBias->rank, pBias->aDim, zA, sizeof zA));
            return -1;
        }
        pP->pBias = pBias->aValue;
        pG->hasBias = 1;
    }
    for (d = 0; d < pX->rank - 1; d++) aWant[d] = pX->aDim[d];
    aWant[pX->rank - 1] = pG->N;
    if (check_out(pCall, aWant, pX->rank, "linear", zErr, nErr) != 0) return -1;
    /* x rows are contiguous along K; weight row j is the "column" j of x W^T. */
    pG->nBatch = 0;
    pG->strideAk = 1;
    pG->strideAm = pG->K;
    pG->strideBk = 1;
    pG->strideBn = pG->K;
    pP->strideBk = pG->strideBk;
    pP->strideBn = pG->strideBn;
    return 0;
}

/* addmm(c, a [M, K], b [K, N]) and baddbmm(c, a [B, M, K], b [B, K, N]), c broadcast to
 * the output; beta and alpha default to 1. */
static int addmm_prepare_common(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                                const char *zOp, int batched, char *zErr, size_t nErr)
{
    const parity_operand *pC = &pCall->aIn[0], *pA = &pCall->aIn[1], *pB = &pCall->aIn[2];
    parity_dot_geometry *pG = &pCall->geom.dot;
    matmul_params *pP = parity_calloc(1, sizeof *pP);
    uint64_t aWant[3];
    int r = batched ? 3 : 2, nWant = 0;
    char zA[128], zB[128];

    if (!pP) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pCall->pParams = pP;
    if (pA->rank != r || pB->rank != r || pA->aDim[r - 1] != pB->aDim[r - 2] ||
        (batched && pA->aDim[0] != pB->aDim[0])) {
        snprintf(zErr, nErr, "%s: needs %s, got %s and %s", zOp,
                 batched ? "[B, M, K] and [B, K, N]" : "[M, K] and [K, N]",
                 parity_shape_str(pA->rank, pA->aDim, zA, sizeof zA),
                 parity_shape_str(pB->rank, pB->aDim, zB, sizeof zB));
        return -1;
    }
    pG->alpha = pG->beta = 1.0;
    if (parity_param_float(aAttr, nAttr, "alpha", &pG->alpha, NULL, zErr, nErr) != 0 ||
        parity_param_float(aAttr, nAttr, "beta", &pG->beta, NULL, zErr, nErr) != 0)
        return -1;
    if (!isfinite(pG->alpha) || !isfinite(pG->beta)) {
        snprintf(zErr, nErr, "%s: alpha and beta must be finite", zOp);
        return -1;
    }
    pG->iA = 1;
    pG->hasAddend = 1;
    pG->M = pA->aDim[r - 2];
    pG->K = pA->aDim[r - 1];
    pG->N = pB->aDim[r - 1];
    pG->nMat = batched ? pA->aDim[0] : 1;
    pG->nBatch = batched;
    if (batched) {
        pG->aBatchDim[0] = pA->aDim[0];
        pG->aStrideA[0] = pG->M * pG->K;
        pG->aStrideB[0] = pG->K * pG->N;
        aWant[nWant++] = pA->aDim[0];
    }
    aWant[nWant++] = pG->M;
    aWant[nWant++] = pG->N;
    if (check_out(pCall, aWant, nWant, zOp, zErr, nErr) != 0) return -1;
    if (parity_broadcast_strides(nWant, aWant, pC->aDim, pC->rank, 1, pG->aStrideC) != 0) {
        snprintf(zErr, nErr, "%s: the addend %s does not broadcast to %s", zOp,
                 parity_shape_str(pC->rank, pC->aDim, zA, sizeof zA),
                 parity_shape_str(nWant, aWant, zB, sizeof zB));
        return -1;
    }
    pG->strideAk = 1;
    pG->strideAm = pG->K;
    pG->strideBk = pG->N;
    pG->strideBn = 1;
    pP->strideBk = 1;               /* b read transposed (matmul_load) */
    pP->strideBn = pG->K;
    return 0;
}

static int addmm_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                         char *zErr, size_t nErr)
{
    return addmm_prepare_common(pCall, aAttr, nAttr, "addmm", 0, zErr, nErr);
}

static int baddbmm_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                           char *zErr, size_t nErr)
{
    return addmm_prepare_common(pCall, aAttr, nAttr, "baddbmm", 1, zErr, nErr);
}

const parity_op_def parity_op_matmul = {
    .zName = "matmul", .zKernel = "dot", .flags = PARITY_OPF_COMPUTE_DTYPE | PARITY_OPF_REFERENCE_THREADS,
    .zModel = "dot products: gamma_n(u_acc) sum|a b| + 0.5 ulp (Higham 2002, eq. 3.5)",
    .nInMin = 2, .nInMax = 2, .family = PARITY_FAMILY_MATMUL,
    .xPrepare = matmul_prepare, .xLoad = matmul_load, .xElement = dot_element, .xPropagate = dot_propagate,
    .xFreeParams = free_params, .xCost = dot_cost, .xEnvelope = dot_envelope,
};

const parity_op_def parity_op_bmm = {
    .zName = "bmm", .zKernel = "dot", .flags = PARITY_OPF_COMPUTE_DTYPE | PARITY_OPF_REFERENCE_THREADS,
    .zModel = "dot products: gamma_n(u_acc) sum|a b| + 0.5 ulp (Higham 2002, eq. 3.5)",
    .nInMin = 2, .nInMax = 2, .family = PARITY_FAMILY_BMM,
    .xPrepare = bmm_prepare, .xLoad = matmul_load, .xElement = dot_element, .xPropagate = dot_propagate,
    .xFreeParams = free_params, .xCost = dot_cost, .xEnvelope = dot_envelope,
};

const parity_op_def parity_op_linear = {
    .zName = "linear", .zKernel = "dot", .flags = PARITY_OPF_COMPUTE_DTYPE | PARITY_OPF_REFERENCE_THREADS,
    .zModel = "dot products plus bias: gamma_{K+1}(u_acc) sum|terms| + 0.5 ulp (Higham 2002)",
    .nInMin = 2, .nInMax = 3, .family = PARITY_FAMILY_LINEAR,
    .xPrepare = linear_prepare, .xElement = dot_element, .xPropagate = dot_propagate,
    .xFreeParams = free_params, .xCost = dot_cost, .xEnvelope = dot_envelope,
};

const parity_op_def parity_op_addmm = {
    .zName = "addmm", .zKernel = "dot", .flags = PARITY_OPF_COMPUTE_DTYPE | PARITY_OPF_REFERENCE_THREADS,
    .zModel = "beta c + alpha (a b): gamma_{K+3}(u_acc) sum|scaled terms| + 0.5 ulp (Higham 2002)",
    .nInMin = 3, .nInMax = 3, .family = PARITY_FAMILY_ADDMM,
    .xPrepare = addmm_prepare, .xLoad = matmul_load, .xElement = dot_element, .xPropagate = dot_propagate,
    .xFreeParams = free_params, .xCost = dot_cost,
};

const parity_op_def parity_op_baddbmm = {
    .zName = "baddbmm", .zKernel = "dot", .flags = PARITY_OPF_COMPUTE_DTYPE | PARITY_OPF_REFERENCE_THREADS,
    .zModel = "beta c + alpha (a b), batched: gamma_{K+3}(u_acc) sum|scaled terms| + 0.5 ulp",
    .nInMin = 3, .nInMax = 3, .family = PARITY_FAMILY_ADDMM,
    .xPrepare = baddbmm_prepare, .xLoad = matmul_load, .xElement = dot_element, .xPropagate = dot_propagate,
    .xFreeParams = free_params, .xCost = dot_cost,
};
