/*
 * op_avg_pool2d.c - the averaging pools, with PyTorch semantics (its CPU kernels,
 * aten/src/ATen/native/cpu/AvgPoolKernel.cpp and AdaptiveAvgPoolKernel.cpp), over
 * x [N, C, H, W] or [C, H, W]:
 *   avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
 *              divisor_override): the windows and output sizes of max_pool2d without
 *     dilation (op_max_pool2d.c: stride defaults to the kernel, padding at most half of
 *     it, pooling_output_shape with ceil_mode). Output = (sum of the window's taps inside
 *     the input) / D, where D is divisor_override when given (nonzero), else with
 *     count_include_pad (the default) torch's pool_size, the window clipped to the padded
 *     input: (min(y0 + kH, H + pH) - y0) x (min(x0 + kW, W + pW) - x0), y0 = oy sH - pH,
 *     which with ceil_mode can be less than kH kW; else the number of taps inside.
 *   adaptive_avg_pool2d(x, output_size) (aten._adaptive_avg_pool2d too): output (i, j)
 *     averages rows floor(i H / Ho) .. ceil((i + 1) H / Ho) - 1 and the same columns,
 *     D = its number of taps (torch computes sum / kh / kw, or sum / (kh kw)).
 *
 * Reference: the n taps summed exactly (parity_exact_sum), divided by D at 128 bits: one
 * rounding into the reference (mpref.h). Special values as the float sum: a NaN tap makes
 * NaN, +Inf and -Inf together NaN, else an infinite tap the infinity.
 *
 * Bound. A = sum |x_i| over the taps, u the unit roundoff of acc_dtype. The sum in any
 * order (torch's row-major loop, a compiler's rows or lanes, any summation tree) is
 * S + E, |E| <= gamma_{n-1}(u) A (Higham, Accuracy and Stability of Numerical Algorithms,
 * 2nd ed. 2002, eq. (4.3) with Lemma 3.1; additions are exact when they underflow). The
 * division makes at most two more roundings: fl(s / D), fl(fl(s / kh) / kw) as torch's
 * adaptive kernel, or fl(s fl(1 / D)) as a compiler's multiply by the reciprocal (inductor:
 * a constant 1 / D rounded to double, then float; the extra 2^-53 fits in the slack of
 * gamma), each a factor (1 + delta), |delta| <= u, and an underflow of at most half the
 * smallest subnormal of acc, sub/2, twice at most: sub. With Lemma 3.3
 * ((1 + theta_j)(1 + theta_k) = 1 + theta_{j+k}) and |S| <= A:
 *     |fl(S^ / D) - S / D| <= gamma_{n+1}(u) A / |D| + sub,
 * as mean's bound (op_reduce.c). One more factor where D is not exact in acc (|D| > 2^24
 * for float32: torch converts it), and where x is wider than acc_dtype one more per term
 * (gamma_{n+2}) plus n sub/2 / |D| for terms that underflow there. Then the rounding to
 * the output dtype: bound = e_acc + 0.5 ulp_out(|S / D| + e_acc). Where A reaches acc's
 * largest finite value an order may overflow (parity_note_overflow); an infinite
 * reference is judged by value.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/propagate.h"
#include "tolerance/op_pool_internal.h"
#include "formats/alloc.h"

typedef struct {
    int narrow;                    /* x wider than acc_dtype */
    double *aBuf;                  /* one window's taps, made by avg_load */
} avg_params;

static void avg_free(void *p)
{
    avg_params *pP = p;
    free(pP->aBuf);
    free(pP);
}

static int avg_params_new(parity_op_call *pCall, char *zErr, size_t nErr)
{
    avg_params *pP = parity_calloc(1, sizeof *pP);
    if (!pP) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pP->narrow = parity_unit_roundoff(pCall->aIn[0].dtype) < parity_unit_roundoff(pCall->accDtype);
    pCall->pParams = pP;
    return 0;
}

static int avg_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                       char *zErr, size_t nErr)
{
    parity_pool_geometry *pG = &pCall->geom.pool;
    int64_t include = 1, divisor = 0;
    if (parity_pool_planes(pCall, PARITY_POOL_AVG, zErr, nErr) != 0 ||
        parity_pool_window_params(pCall, aAttr, nAttr, zErr, nErr) != 0 ||
        parity_param_int(aAttr, nAttr, "count_include_pad", &include, NULL, zErr, nErr) != 0 ||
        parity_param_int(aAttr, nAttr, "divisor_override", &divisor, NULL, zErr, nErr) != 0)
        return -1;
    /* absent (None) is 0 here; torch refuses an explicit 0 ("divisor must be not zero"),
     * which a capture cannot tell apart from None, so 0 reads as None */
    pG->countIncludePad = include != 0;
    pG->divisor = divisor;
    if (parity_pool_take_out(pCall, zErr, nErr) != 0) return -1;
    return avg_params_new(pCall, zErr, nErr);
}

/* The window of adaptive output index i along a dim of `in` inputs and `out` outputs. */
static void adaptive_range(uint64_t i, uint64_t in, uint64_t out, int64_t *pStart, int64_t *pEnd)
{
    /* in <= 2^48 and out <= 2^20: the products need more than 64 bits */
    *pStart = (int64_t)((unsigned __int128)i * in / out);
    *pEnd = (int64_t)(((unsigned __int128)(i + 1) * in + out - 1) / out);
}

/* The largest adaptive window along a dim. */
static uint64_t adaptive_widest(uint64_t in, uint64_t out)
{
    uint64_t i, m = 0;
    for (i = 0; i < out; i++) {
        int64_t a, b;
        adaptive_range(i, in, out, &a, &b);
        if ((uint64_t)(b - a) > m) m = (uint64_t)(b - a);
    }
    return m;
}

static int adaptive_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                            char *zErr, size_t nErr)
{
    parity_pool_geometry *pG = &pCall->geom.pool;
    int64_t aO[2];
    size_t n = 0;
    int found = 0, i;
    if (parity_pool_planes(pCall, PARITY_POOL_ADAPTIVE_AVG, zErr, nErr) != 0 ||
        parity_param_ints(aAttr, nAttr, "output_size", aO, 2, &n, &found, zErr, nErr) != 0)
        return -1;
    if (!found || n == 0) {
        snprintf(zErr, nErr, "adaptive_avg_pool2d: output_size is required");
        return -1;
    }
    if (n == 1) aO[1] = aO[0];
    for (i = 0; i < 2; i++)
        if (aO[i] < 1 || aO[i] > (1 << 20)) {
            snprintf(zErr, nErr, "adaptive_avg_pool2d: output_size %lld must be 1..%d",
                     (long long)aO[i], 1 << 20);
            return -1;
        }
    pG->Ho = (uint64_t)aO[0];
    pG->Wo = (uint64_t)aO[1];
    pG->kH = adaptive_widest(pG->H, pG->Ho);
    pG->kW = adaptive_widest(pG->W, pG->Wo);
    if (parity_pool_take_out(pCall, zErr, nErr) != 0) return -1;
    return avg_params_new(pCall, zErr, nErr);
}

int64_t parity_pool_window(const parity_pool_geometry *pG, uint64_t linear, int64_t aWin[4],
                           uint64_t *pPlane)
{
    uint64_t ox = linear % pG->Wo, oy = (linear / pG->Wo) % pG->Ho;
    int64_t y0, x0, y1, x1, padded;
    *pPlane = linear / (pG->Wo * pG->Ho);
    if (pG->kind == PARITY_POOL_ADAPTIVE_AVG) {
        adaptive_range(oy, pG->H, pG->Ho, &aWin[0], &aWin[1]);
        adaptive_range(ox, pG->W, pG->Wo, &aWin[2], &aWin[3]);
        return (aWin[1] - aWin[0]) * (aWin[3] - aWin[2]);
    }
    y0 = (int64_t)oy * pG->sH - pG->pH;
    x0 = (int64_t)ox * pG->sW - pG->pW;
    y1 = y0 + (int64_t)pG->kH < (int64_t)pG->H + pG->pH ? y0 + (int64_t)pG->kH
                                                          : (int64_t)pG->H + pG->pH;
    x1 = x0 + (int64_t)pG->kW < (int64_t)pG->W + pG->pW ? x0 + (int64_t)pG->kW
                                                          : (int64_t)pG->W + pG->pW;
    padded = (y1 - y0) * (x1 - x0);              /* torch's pool_size */
    aWin[0] = y0 > 0 ? y0 : 0;
    aWin[1] = y1 < (int64_t)pG->H ? y1 : (int64_t)pG->H;
    aWin[2] = x0 > 0 ? x0 : 0;
    aWin[3] = x1 < (int64_t)pG->W ? x1 : (int64_t)pG->W;
    /* Never empty: a window starts before H (ceil_mode drops one starting in the right
     * padding) and ends past 0 (padding at most half the kernel), and H, W >= 1. */
    if (pG->divisor != 0) return pG->divisor;
    return pG->countIncludePad ? padded : (aWin[1] - aWin[0]) * (aWin[3] - aWin[2]);
}

static int avg_load(parity_op_call *pCall, char *zErr, size_t nErr)
{
    avg_params *pP = pCall->pParams;
    const parity_pool_geometry *pG = &pCall->geom.pool;
    uint64_t n = pG->kH * pG->kW;
    pP->aBuf = parity_malloc((n ? n : 1) * sizeof(double));
    if (!pP->aBuf) { snprintf(zErr, nErr, "out of memory"); return -1; }
    return 0;
}

/* Output element `linear`: its reference and bound, and with aRad (the operand's radii,
 * or NULL) the radius over the operand box: the average is linear, so it moves by at most
 * sum r_i / |D| (the reach), and the bound above grows with A and |S / D|, so it holds on
 * the box with A + sum r_i and |S / D| + reach (propagate.h). */
static int avg_compute(parity_op_call *pCall, const double *aRad, uint64_t linear, mpfr_t ref,
                       double *pBound)
{
    avg_params *pP = pCall->pParams;
    const parity_pool_geometry *pG = &pCall->geom.pool;
    parity_dtype acc = pCall->accDtype, out = pCall->outDtype;
    double u = parity_unit_roundoff(acc), sub = parity_ulp_at(acc, 0.0), absSum = 0.0;
    double absD, nRound, eAcc, r, radSum = 0.0, reach = 0.0;
    const double *xp;
    int64_t aWin[4], d, y, x;
    uint64_t plane, n = 0, off;

    d = parity_pool_window(pG, linear, aWin, &plane);
    off = plane * pG->H * pG->W;
    xp = pCall->aIn[0].aValue + off;
    for (y = aWin[0]; y < aWin[1]; y++)
        for (x = aWin[2]; x < aWin[3]; x++) {
            uint64_t i = (uint64_t)y * pG->W + (uint64_t)x;
            pP->aBuf[n++] = xp[i];
            if (aRad) radSum += aRad[off + i];
        }
    if (parity_exact_sum(ref, pP->aBuf, 1, n, &absSum) != 0) return -1;
    parity_note_overflow(pCall, absSum);
    mpfr_div_si(ref, ref, (long)d, MPFR_RNDN);
    r = fabs(mpfr_get_d(ref, MPFR_RNDN));
    absD = fabs((double)d);
    if (aRad && radSum > 0.0) {
        if (!isfinite(r) || !(radSum < INFINITY))
            return parity_propagate_vacuous(pCall, pBound);
        radSum = parity_radius_up(radSum, (double)n);
        reach = parity_radius_up(radSum / absD, 1.0);
        absSum = parity_radius_up(absSum + radSum, 1.0);
        r = parity_radius_up(r + reach, 1.0);
        parity_note_overflow(pCall, absSum);
        if (!isfinite(r)) return parity_propagate_vacuous(pCall, pBound);
    }
    if (!isfinite(r)) {
        *pBound = 0.0;   /* judged by value alone */
        return 0;
    }
    /* n - 1 additions and 2 roundings of the division; one per term narrowed into acc;
     * one for a divisor acc does not hold */
    nRound = (double)n + 1.0 + (pP->narrow ? 1.0 : 0.0) +
             (parity_round_double_to_dtype(absD, acc) != absD ? 1.0 : 0.0);
    eAcc = parity_gamma(nRound, u) * (absSum / absD) + sub;
    if (pP->narrow) eAcc += (double)n * 0.5 * sub / absD;
    *pBound = eAcc + 0.5 * parity_ulp_at(out, r + eAcc);
    if (reach > 0.0) *pBound = parity_radius_up(reach + *pBound, 8.0);
    return 0;
}

static int avg_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    return avg_compute(pCall, NULL, linear, ref, pBound);
}

/* Propagation (ops.h, xPropagate): avg_compute over the operand box. */
static int avg_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                         mpfr_t ref, double *pRadius)
{
    return avg_compute(pCall, aRad[0], linear, ref, pRadius);
}

/* Terms per output element: the (largest) window. */
static double avg_cost(const parity_op_call *pCall)
{
    const parity_pool_geometry *pG = &pCall->geom.pool;
    return (double)(pG->kH * pG->kW > 0 ? pG->kH * pG->kW : 1);
}

const parity_op_def parity_op_avg_pool2d = {
    .zName = "avg_pool2d",
    .zModel = "exact window sum / divisor: gamma_{n+1}(u_acc) sum|x|/|D| + 0.5 ulp "
              "(Higham 2002, eq. 4.3, Lemma 3.3)",
    .nInMin = 1, .nInMax = 1, .family = PARITY_FAMILY_POOL,
    .xPrepare = avg_prepare, .xLoad = avg_load, .xElement = avg_element,
    .xPropagate = avg_propagate,
    .xFreeParams = avg_free, .xCost = avg_cost,
};

const parity_op_def parity_op_adaptive_avg_pool2d = {
    .zName = "adaptive_avg_pool2d",
    .zModel = "exact window sum / taps: gamma_{n+1}(u_acc) sum|x|/n + 0.5 ulp "
              "(Higham 2002, eq. 4.3, Lemma 3.3)",
    .nInMin = 1, .nInMax = 1, .family = PARITY_FAMILY_POOL,
    .xPrepare = adaptive_prepare, .xLoad = avg_load, .xElement = avg_element,
    .xPropagate = avg_propagate,
    .xFreeParams = avg_free, .xCost = avg_cost,
};
