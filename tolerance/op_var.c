/*
 * op_var.c - var(x, dim, correction, keepdim): over each row of n values along `dim` (an
 * int or a list; absent or empty: every dim),
 *     mu = sum x / n,  M2 = sum (x - mu)^2,  var = M2 / max(n - correction, 0),
 * with `correction` a number (default 1; the older `unbiased` 0/1 is read when correction
 * is absent) and `keepdim` 0/1.
 *
 * Reference: mu from the exact sum (mpref.h) divided by n at PARITY_REF_PREC bits; M2 from
 * deviations, squares and sum at PARITY_REF_PREC bits; then the divide. torch divides by
 * max(n - correction, 0): when that is 0, M2 > 0 gives +Inf and M2 = 0 (a constant row, a
 * single value with correction 1, an empty row) gives NaN. A NaN or an infinity in the row
 * makes the result NaN (Inf - Inf in the deviations).
 *
 * Bound (u = unit roundoff of acc_dtype, gamma_k = k u / (1 - k u), Higham 2002, Lemma 3.1;
 * D = n - correction > 0). Same reasoning as op_layer_norm.c, for M2 instead of M2 / n; it
 * holds for two-pass, Welford (streaming and merged, as in Chan, Golub & LeVeque,
 * "Algorithms for computing the sample variance: analysis and recommendations", Amer.
 * Statist. 37(3), 1983) and one-pass (sum of squares) kernels:
 *   mean:   |mu^ - mu| <= E_mu = gamma_{n+1} mean|x|        (sum of n, one divide)
 *   M2:     the one-pass formula sum x^2 - n mu^2 is the least accurate of the three: its
 *           error is at most gamma_{2n+4} sum x^2 = gamma_{2n+4} n (v + mu^2) (n squares
 *           and their sum, the square of mu, a product, a subtraction), and Welford and
 *           two-pass stay within it (Chan-Golub-LeVeque: their errors are bounded by
 *           n u kappa M2 with kappa^2 = 1 + n mu^2 / M2, and n kappa M2 <= n (M2 + n mu^2)
 *           since kappa M2 <= M2 + n mu^2). The error of mu^ adds n E_mu^2
 *           (sum (x_i - mu - delta)^2 = M2 + n delta^2 when centering at a wrong mean):
 *           E_M2 = gamma_{2n+4} sum x^2 + n E_mu^2
 *   divide: var^ = fl(M2^ / D), or M2^ * fl(1/D): two roundings at most,
 *   |var^ - var| <= (1 + 2u) E_M2 / D + 2u var + n (half the smallest subnormal of acc)/D
 *                   + 0.5 ulp_out(var),
 * the subnormal term for squares that underflow in acc_dtype, the last the output rounding.
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
    double correction;
    double *aBuf;                  /* one row */
    double *aRadBuf;               /* its radii (propagation), made on first use */
} var_params;

static void var_free(void *p)
{
    var_params *pP = p;
    free(pP->aBuf);
    free(pP->aRadBuf);
    free(pP);
}

static int var_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                       char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    var_params *pP = parity_calloc(1, sizeof *pP);
    unsigned char aReduce[PARITY_MAX_RANK];
    int keepdim = 0, found;
    int64_t unbiased = 1;

    if (!pP) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pCall->pParams = pP;
    pP->correction = 1.0;
    if (parity_param_float(aAttr, nAttr, "correction", &pP->correction, &found, zErr, nErr) != 0)
        return -1;
    if (!found) {
        if (parity_param_int(aAttr, nAttr, "unbiased", &unbiased, NULL, zErr, nErr) != 0)
            return -1;
        if (unbiased != 0 && unbiased != 1) {
            snprintf(zErr, nErr, "var: unbiased must be 0 or 1, got %lld", (long long)unbiased);
            return -1;
        }
        pP->correction = (double)unbiased;
    }
    if (!(pP->correction >= 0.0) || isinf(pP->correction)) {
        snprintf(zErr, nErr, "var: correction must be a finite number >= 0, got %g",
                 pP->correction);
        return -1;
    }
    if (parity_rows_parse_dim("var", pX, aAttr, nAttr, "dim", 1, 1, 0, aReduce, zErr,
                              nErr) != 0 ||
        parity_rows_parse_keepdim("var", aAttr, nAttr, &keepdim, zErr, nErr) != 0)
        return -1;
    parity_rows_init(&pP->rows, pX, aReduce);
    if (parity_rows_check_reduced("var", &pP->rows, keepdim, pCall, zErr, nErr) != 0) return -1;
    pCall->geom.rows.rows = pP->rows;
    pCall->geom.rows.keepdim = keepdim;
    pCall->geom.rows.correction = pP->correction;
    return 0;
}

static int var_load(parity_op_call *pCall, char *zErr, size_t nErr)
{
    var_params *pP = pCall->pParams;
    pP->aBuf = parity_malloc((pP->rows.n + 1) * sizeof(double));
    if (!pP->aBuf) { snprintf(zErr, nErr, "out of memory"); return -1; }
    return 0;
}

/* Row `linear`'s reference and bound; with aRad (the operand's radii, or NULL) the
 * radius over the operand box. With x_i moved by d_i, |d_i| <= r_i, and dbar their mean,
 * M2 moves by 2 sum (x_i - mu)(d_i - dbar) + sum (d_i - dbar)^2, where the first sum is
 * sum (x_i - mu) d_i (the deviations sum to 0) and the second at most sum d_i^2: var
 * moves by at most (2 sum |x_i - mu| r_i + sum r_i^2) / D (the reach). The bound grows
 * with sum |x|, sum x^2 and var: it is taken with sum (|x_i| + r_i), sum (|x_i| + r_i)^2
 * and var + reach. */
static int var_compute(parity_op_call *pCall, const double *aRad, uint64_t linear, mpfr_t ref,
                       double *pBound)
{
    var_params *pP = pCall->pParams;
    uint64_t k, nn = pP->rows.n;
    double n = (double)nn, D = n - pP->correction, absSum = 0.0, sumSq = 0.0, u, v;
    double eMu, eM2, reach = 0.0, radSum = 0.0, mu = 0.0;
    int moves = 0, vacuous = 0;
    mpfr_t mean, t;

    *pBound = 0.0;
    parity_rows_gather(&pP->rows, pCall->aIn[0].aValue, linear, pP->aBuf);
    if (aRad) {
        if (!pP->aRadBuf && !(pP->aRadBuf = parity_malloc((nn + 1) * sizeof(double))))
            return -1;
        parity_rows_gather(&pP->rows, aRad, linear, pP->aRadBuf);
        for (k = 0; k < nn; k++) moves |= pP->aRadBuf[k] != 0.0;
    }
    mpfr_inits2(PARITY_REF_PREC, mean, t, (mpfr_ptr)0);
    if (parity_exact_sum(mean, pP->aBuf, 1, nn, &absSum) != 0) {
        mpfr_clears(mean, t, (mpfr_ptr)0);
        return -1;
    }
    if (nn) mpfr_div_ui(mean, mean, (unsigned long)nn, MPFR_RNDN);
    mu = mpfr_get_d(mean, MPFR_RNDN);
    mpfr_set_zero(ref, 1);
    for (k = 0; k < nn; k++) {
        mpfr_set_d(t, pP->aBuf[k], MPFR_RNDN);
        mpfr_sub(t, t, mean, MPFR_RNDN);
        mpfr_sqr(t, t, MPFR_RNDN);
        mpfr_add(ref, ref, t, MPFR_RNDN);
        if (moves) {
            double r = pP->aRadBuf[k], a = fabs(pP->aBuf[k]) + r;
            /* |x - mu| with mu's binary64 rounding (half an ulp) added back */
            reach += 2.0 * (fabs(pP->aBuf[k] - mu) + 0.5 * parity_ulp_at(PARITY_DT_F64, mu)) * r +
                     r * r;
            radSum += r;
            sumSq += a * a;
        } else {
            sumSq += pP->aBuf[k] * pP->aBuf[k];
        }
    }
    mpfr_clears(mean, t, (mpfr_ptr)0);
    if (moves) {
        vacuous = !(reach < INFINITY) || !(D > 0.0) || !mpfr_number_p(ref);
        reach = parity_radius_up(reach / D, 4.0 * n + 2.0);
        absSum = parity_radius_up(absSum + radSum, n + 1.0);
        sumSq = parity_radius_up(sumSq, 2.0 * n + 2.0);
    }
    parity_note_overflow(pCall, sumSq);     /* a one-pass sum of squares may overflow */
    if (mpfr_nan_p(ref)) return vacuous ? parity_propagate_vacuous(pCall, pBound) : 0;
    if (!(D > 0.0)) {
        /* torch: M2 / max(n - correction, 0). */
        if (mpfr_zero_p(ref)) mpfr_set_nan(ref);
        else mpfr_set_inf(ref, 1);
        return vacuous ? parity_propagate_vacuous(pCall, pBound) : 0;
    }
    mpfr_div_d(ref, ref, D, MPFR_RNDN);
    if (vacuous || (moves && mpfr_inf_p(ref))) return parity_propagate_vacuous(pCall, pBound);
    if (mpfr_inf_p(ref)) return 0;
    u = parity_unit_roundoff(pCall->accDtype);
    v = mpfr_get_d(ref, MPFR_RNDN) + reach;
    eMu = parity_gamma(n + 1.0, u) * (absSum / n);
    eM2 = parity_gamma(2.0 * n + 4.0, u) * (sumSq * (1.0 + 4.0 * 0x1p-53)) + n * eMu * eMu;
    *pBound = (1.0 + 2.0 * u) * eM2 / D + 2.0 * u * v +
              n * 0.5 * parity_ulp_at(pCall->accDtype, 0.0) / D +
              0.5 * parity_ulp_at(pCall->outDtype, v);
    if (moves) *pBound = parity_radius_up(reach + *pBound, 12.0);
    return 0;
}

static int var_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    return var_compute(pCall, NULL, linear, ref, pBound);
}

/* Propagation (ops.h, xPropagate): var_compute over the operand box. */
static int var_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                         mpfr_t ref, double *pRadius)
{
    return var_compute(pCall, aRad[0], linear, ref, pRadius);
}

/* generated cases try correction 0 too (fuzz/cases/layout.c) */
static const parity_op_case_attr aVarCase[] = {
    { "correction", PARITY_ATTR_FLOAT, { 1.0, 0.0 }, { NULL, NULL } },
};

const parity_op_def parity_op_var = {
    .zName = "var",
    .family = PARITY_FAMILY_REDUCE,
    .flags = PARITY_OPF_NAMES_DIM,
    .aCaseAttr = aVarCase, .nCaseAttr = 1,
    .xLoad = var_load,
    .zModel = "derived in op_var.c: (1+2u)(gamma_{2n+4} sum x^2 + n E_mu^2)/(n - correction) + 2u var + 0.5 ulp, E_mu = gamma_{n+1} mean|x|; two-pass, Welford, one-pass (Chan-Golub-LeVeque 1983)",
    .nInMin = 1, .nInMax = 1,
    .xPrepare = var_prepare, .xElement = var_element, .xFreeParams = var_free,
    .xPropagate = var_propagate,
};
