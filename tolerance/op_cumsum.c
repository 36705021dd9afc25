/*
 * op_cumsum.c - cumsum(x, dim): y_k = sum_{j <= k} x_j along `dim` (one int, required by
 * torch; default -1 here), output shape = input shape.
 *
 * Reference: each prefix sum exactly, rounded once to PARITY_REF_PREC bits. Per row, the
 * running sum is kept in an MPFR number wide enough to be exact (from the row's largest
 * exponent down to its smallest last bit, plus log2 n carry bits), and each prefix is
 * stored as the unevaluated sum of three binary64 values (159 bits, more than
 * PARITY_REF_PREC), so the elements can be asked for in any order at O(1) each. Non-finite
 * values follow IEEE through the running sum: after a NaN, or after +Inf and -Inf have
 * both appeared, the prefix is NaN; after one infinity, that infinity.
 *
 * Bound. Whatever the scan (sequential, blocked, Blelloch/Hillis-Steele, decoupled
 * look-back), the computed y_k is a sum of the k + 1 terms x_0..x_k evaluated by some
 * binary tree of k additions (a partial sum that is reused is still one evaluation per
 * output), so each term passes through at most k additions and (Higham, Accuracy and
 * Stability of Numerical Algorithms, 2nd ed. 2002, eq. (4.3) with Lemma 3.1)
 *     |y^_k - y_k| <= gamma_k(u_acc) * sum_{j <= k} |x_j| =: e_k.
 * When the input is wider than acc_dtype each term is first rounded to it: gamma_{k+1}
 * and (k + 1) half-subnormals of acc_dtype. Then the rounding to the output dtype:
 *     bound_k = e_k + 0.5 ulp_out(|y_k| + e_k).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/propagate.h"
#include "tolerance/rows.h"
#include "formats/alloc.h"

typedef struct {
    parity_rows rows;
    int narrow;                    /* input wider than acc_dtype */
    double *aHi, *aMid, *aLo;      /* per input element: the exact prefix, 3 parts */
    double *aAbs;                  /* per input element: sum_{j <= k} |x_j| (rounded up) */
    double *aRadSum;               /* propagation: per element sum_{j <= k} r_j, rounded up
                                    * (+Inf where a radius is, or a value that moves is
                                    * not finite); made on the first cumsum_propagate */
} cumsum_params;

static void cumsum_free(void *p)
{
    cumsum_params *pP = p;
    free(pP->aHi);
    free(pP->aMid);
    free(pP->aLo);
    free(pP->aAbs);
    free(pP->aRadSum);
    free(pP);
}

/* Exact prefix sums of row iRow into the per-element arrays. */
static void cumsum_row(cumsum_params *pP, const double *x, uint64_t iRow, double *aBuf,
                       mpfr_t acc, mpfr_t t)
{
    uint64_t k, n = pP->rows.n;
    int eTop = INT32_MIN, eLsb = INT32_MAX, e;
    long prec;
    double absSum = 0.0;

    parity_rows_gather(&pP->rows, x, iRow, aBuf);
    for (k = 0; k < n; k++) {
        double v = aBuf[k];
        if (v == 0.0 || !isfinite(v)) continue;
        frexp(v, &e);                       /* |v| in [2^(e-1), 2^e) */
        if (e - 1 > eTop) eTop = e - 1;
        if (e - 53 < eLsb) eLsb = e - 53 < -1074 ? -1074 : e - 53;
    }
    prec = eTop == INT32_MIN ? 64 : (long)eTop - eLsb + 1 + 66;   /* 66 >= log2 n + 2 */
    if (prec < 64) prec = 64;
    mpfr_set_prec(acc, (mpfr_prec_t)prec);
    mpfr_set_prec(t, (mpfr_prec_t)prec);
    mpfr_set_zero(acc, 1);
    for (k = 0; k < n; k++) {
        uint64_t off = parity_rows_offset(&pP->rows, iRow, k);
        double hi, mid;
        mpfr_add_d(acc, acc, aBuf[k], MPFR_RNDN);   /* exact at this precision */
        absSum += fabs(aBuf[k]);
        absSum *= 1.0 + 0x1p-52;                    /* keep it an upper bound */
        pP->aAbs[off] = absSum;
        hi = mpfr_get_d(acc, MPFR_RNDN);
        pP->aHi[off] = hi;
        pP->aMid[off] = pP->aLo[off] = 0.0;
        if (!isfinite(hi)) continue;                /* NaN, Inf, or beyond binary64 */
        mpfr_sub_d(t, acc, hi, MPFR_RNDN);
        mid = mpfr_get_d(t, MPFR_RNDN);
        pP->aMid[off] = mid;
        mpfr_sub_d(t, t, mid, MPFR_RNDN);
        pP->aLo[off] = mpfr_get_d(t, MPFR_RNDN);
    }
}

static int cumsum_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                          char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    cumsum_params *pP = parity_calloc(1, sizeof *pP);
    unsigned char aReduce[PARITY_MAX_RANK];

    if (!pP) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pCall->pParams = pP;
    if (parity_rows_parse_dim("cumsum", pX, aAttr, nAttr, "dim", 0, 0, -1, aReduce, zErr,
                              nErr) != 0 ||
        parity_rows_check_same("cumsum", pX, pCall, zErr, nErr) != 0)
        return -1;
    parity_rows_init(&pP->rows, pX, aReduce);
    pCall->geom.rows.rows = pP->rows;
    pP->narrow = parity_unit_roundoff(pX->dtype) < parity_unit_roundoff(pCall->accDtype);
    return 0;
}

/* Every prefix sum, exactly, from the values. */
static int cumsum_load(parity_op_call *pCall, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    cumsum_params *pP = pCall->pParams;
    uint64_t iRow, nElem = pX->nElem;
    double *aBuf;
    mpfr_t acc, t;

    pP->aHi = parity_malloc((nElem + 1) * sizeof(double));
    pP->aMid = parity_malloc((nElem + 1) * sizeof(double));
    pP->aLo = parity_malloc((nElem + 1) * sizeof(double));
    pP->aAbs = parity_malloc((nElem + 1) * sizeof(double));
    aBuf = parity_malloc((pP->rows.n + 1) * sizeof(double));
    if (!pP->aHi || !pP->aMid || !pP->aLo || !pP->aAbs || !aBuf) {
        free(aBuf);
        snprintf(zErr, nErr, "out of memory");
        return -1;
    }
    mpfr_inits2(64, acc, t, (mpfr_ptr)0);
    if (pP->rows.n)
        for (iRow = 0; iRow < pP->rows.nRow; iRow++)
            cumsum_row(pP, pX->aValue, iRow, aBuf, acc, t);
    mpfr_clears(acc, t, (mpfr_ptr)0);
    free(aBuf);
    return 0;
}

static int cumsum_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    const cumsum_params *pP = pCall->pParams;
    uint64_t iRow, k;
    double u = parity_unit_roundoff(pCall->accDtype), y, e;

    parity_rows_locate(&pP->rows, linear, &iRow, &k);
    mpfr_set_d(ref, pP->aHi[linear], MPFR_RNDN);
    *pBound = 0.0;
    parity_note_overflow(pCall, pP->aAbs[linear]);
    if (!mpfr_number_p(ref)) return 0;
    mpfr_add_d(ref, ref, pP->aMid[linear], MPFR_RNDN);
    mpfr_add_d(ref, ref, pP->aLo[linear], MPFR_RNDN);
    y = pP->aHi[linear];
    e = parity_gamma((double)k + (pP->narrow ? 1.0 : 0.0), u) * pP->aAbs[linear];
    if (pP->narrow) e += ((double)k + 1.0) * 0.5 * parity_ulp_at(pCall->accDtype, 0.0);
    *pBound = e + 0.5 * parity_ulp_at(pCall->outDtype, fabs(y) + e);
    return 0;
}

/* Every element's prefix sum of radii (aRadSum), row by row. */
static int cumsum_radii(const parity_op_call *pCall, cumsum_params *pP, const double *aRad)
{
    const double *x = pCall->aIn[0].aValue;
    uint64_t iRow, k;
    pP->aRadSum = parity_malloc((pCall->aIn[0].nElem + 1) * sizeof(double));
    if (!pP->aRadSum) return -1;
    for (iRow = 0; iRow < pP->rows.nRow; iRow++) {
        double sum = 0.0;
        for (k = 0; k < pP->rows.n; k++) {
            uint64_t off = parity_rows_offset(&pP->rows, iRow, k);
            double r = aRad[off];
            if (!(r < INFINITY) || (r > 0.0 && !isfinite(x[off]))) sum = INFINITY;
            else sum = (sum + r) * (1.0 + 0x1p-52);   /* keep it an upper bound */
            pP->aRadSum[off] = sum;
        }
    }
    return 0;
}

/* Propagation (ops.h, xPropagate): a prefix sum is linear, so y_k moves by at most
 * R_k = sum_{j <= k} r_j, and the bound above, increasing in sum |x_j| and |y_k|, is
 * taken with both grown by R_k. */
static int cumsum_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                            mpfr_t ref, double *pRadius)
{
    cumsum_params *pP = pCall->pParams;
    uint64_t iRow, k;
    double u = parity_unit_roundoff(pCall->accDtype), R, y, e;

    if (cumsum_element(pCall, linear, ref, pRadius) != 0) return -1;
    if (!pP->aRadSum && cumsum_radii(pCall, pP, aRad[0]) != 0) return -1;
    R = pP->aRadSum[linear];
    if (R == 0.0) return 0;
    if (!(R < INFINITY) || !mpfr_number_p(ref)) return parity_propagate_vacuous(pCall, pRadius);
    parity_rows_locate(&pP->rows, linear, &iRow, &k);
    parity_note_overflow(pCall, pP->aAbs[linear] + R);
    y = fabs(pP->aHi[linear]) + R;
    e = parity_gamma((double)k + (pP->narrow ? 1.0 : 0.0), u) * (pP->aAbs[linear] + R);
    if (pP->narrow) e += ((double)k + 1.0) * 0.5 * parity_ulp_at(pCall->accDtype, 0.0);
    *pRadius = parity_radius_up(R + e + 0.5 * parity_ulp_at(pCall->outDtype, y + e), 8.0);
    return 0;
}

const parity_op_def parity_op_cumsum = {
    .zName = "cumsum",
    .family = PARITY_FAMILY_ROWWISE,
    .xLoad = cumsum_load,
    .zModel = "any scan: gamma_k(u_acc) sum_{j<=k} |x_j| + 0.5 ulp (Higham 2002, eq. 4.3, Lemma 3.1)",
    .nInMin = 1, .nInMax = 1,
    .xPrepare = cumsum_prepare, .xElement = cumsum_element, .xFreeParams = cumsum_free,
    .xPropagate = cumsum_propagate,
};
