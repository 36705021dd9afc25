/*
 * judge.c - per-element classification against the reference (see judge.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "formats/alloc.h"
#include "formats/parallel.h"
#include "tolerance/judge.h"
#include "tolerance/mpref.h"
#include "tolerance/superacc_internal.h"

/* |v - ref| in binary64 (rounded up), for finite v and finite ref. */
static double error_vs(mpfr_t scratch, const mpfr_t ref, double v)
{
    mpfr_set_d(scratch, v, MPFR_RNDN);
    mpfr_sub(scratch, scratch, ref, MPFR_RNDN);
    mpfr_abs(scratch, scratch, MPFR_RNDN);
    return mpfr_get_d(scratch, MPFR_RNDU);
}

static void mark_fail(const parity_op_call *pCall, uint64_t linear, parity_judgement *pJ)
{
    uint64_t aIndex[PARITY_MAX_RANK];
    int d;
    /* A box that holds the whole output grows no more: no index to work out (the
     * divisions were a twentieth of a transformer's judgement, whose echoes fail all over) */
    for (d = 0; pJ->nFail > 0 && d < pCall->outRank; d++)
        if (pJ->aSliceLo[d] != 0 || pJ->aSliceHi[d] != pCall->aOutDim[d]) break;
    if (pJ->nFail > 0 && d == pCall->outRank) {
        pJ->nFail++;
        return;
    }
    parity_unravel(pCall->outRank, pCall->aOutDim, linear, aIndex);
    for (d = 0; d < pCall->outRank; d++) {
        if (pJ->nFail == 0 || aIndex[d] < pJ->aSliceLo[d]) pJ->aSliceLo[d] = aIndex[d];
        if (pJ->nFail == 0 || aIndex[d] + 1 > pJ->aSliceHi[d]) pJ->aSliceHi[d] = aIndex[d] + 1;
    }
    pJ->nFail++;
}

/* Same value for the non-finite rule: NaN matches NaN, infinities match by sign. */
static int same_special(double a, double b)
{
    if (a != a || b != b) return a != a && b != b;
    return a == b;
}


/* Where some legal summation order overflows (pCall->overflowPossible, ops.h), the
 * model's bound is vacuous: an infinity, or the NaN of +Inf meeting -Inf, is then a
 * correct kernel's result wherever the reference is not NaN (a NaN operand propagates in
 * every order), on either side. Finite values need no rule of their own: they are judged
 * by the bound, which is infinite there (settle_bounds). */
static int vacuous_nonfinite(const parity_op_call *pCall, double rounded, double v)
{
    return pCall->overflowPossible && (rounded == rounded || pCall->nonfiniteAny) &&
           !isfinite(v);
}

/* An infinity v where the reference is a finite number: a correct kernel's value lies
 * within the bound of the reference (in the acc dtype, before its rounding to the output),
 * and where the end of that interval on v's side rounds to the infinity in the output
 * dtype (IEEE 754 round to nearest: at or past the largest finite plus half its ulp), the
 * infinity is a correct value rounded. A float16 dot product of
 * terms near 3.5e9 whose exact value is -65343 (bound 1.2e4 from float32 accumulation)
 * legally gives -inf: XLA's did (corpus/jax/retracted/linear-overflow-within-bound-float16). */
static int overflow_within_bound(const parity_op_call *pCall, const mpfr_t ref, double bound,
                                 double v)
{
    double r, edge;
    /* only where the element is a sum of terms, as its op model says (sumsTerms, set by
     * parity_note_overflow): an elementwise op whose value stays below its input
     * (OpenVINO's gelu giving +inf for x near the largest finite, corpus/openvino/repros)
     * is a defect, not a rounding */
    if (!pCall->sumsTerms) return 0;
    if (!isinf(v) || !mpfr_number_p(ref) || !(bound > 0.0)) return 0;
    r = mpfr_get_d(ref, v > 0 ? MPFR_RNDU : MPFR_RNDD);
    /* the reach on v's side, rounded outward, then the dtype table's own rounding: it
     * knows where each dtype overflows (float64's edge overflows binary64 itself) */
    edge = v > 0 ? nextafter(r + bound, INFINITY) : nextafter(r - bound, -INFINITY);
    return isinf(parity_round_double_to_dtype(edge, pCall->outDtype));
}

/* splitmix64's finaliser (Steele, Lea & Flood, OOPSLA 2014): a well-mixed hash of the
 * index, so the sample is spread evenly and the same on every run. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Should element i get the exact reference under a selective plan? */
static int selected(parity_op_call *pCall, const double *aApprox, const double *aCompiled,
                    uint64_t i, uint64_t threshold, uint64_t seed, parity_judgement *pJ)
{
    double c = aCompiled[i], e = aApprox ? aApprox[i] : c;
    if (!isfinite(c) || !isfinite(e) || fabs(c - e) > 2.0 * pCall->pDef->xEnvelope(pCall, i)) {
        pJ->nFlagged++;
        return 1;
    }
    if (mix(i ^ seed) < threshold) {
        pJ->nSampled++;
        return 1;
    }
    return 0;
}

void parity_judge_plan_default(parity_judge_plan *pPlan)
{
    memset(pPlan, 0, sizeof *pPlan);
    pPlan->budgetTerms = PARITY_JUDGE_BUDGET_TERMS;
    pPlan->nSample = PARITY_JUDGE_SAMPLE;
    pPlan->boundScale = 1.0;
    pPlan->lambda = PARITY_DEFAULT_LAMBDA;
}

int parity_judgement_eager_wrong(const parity_judgement *pJ)
{
    if (pJ->nEagerWorse + pJ->nBothBeyond + pJ->nFailEagerBeyond == 0) return 0;
    return pJ->nEagerNonFinite > 0 || pJ->maxRatioEager >= PARITY_EAGER_WRONG_RATIO ||
           !(pJ->maxBound > 0.0);
}

int parity_judge(parity_op_call *pCall, const double *aEager, const double *aCompiled,
                 parity_judgement *pJ, char *zErr, size_t nErr)
{
    return parity_judge_planned(pCall, aEager, aCompiled, NULL, NULL, pJ, zErr, nErr);
}

/* One element under judgement: its two values, its bounds, and what they make of it. */
typedef struct {
    double c, e;               /* compiled; eager (0 when only compiled is judged) */
    int hasEager;
    double bound;              /* the deciding bound */
    double probBound;          /* the other one (the deterministic one when the
                                * probabilistic decides); NaN when the op has none */
    double rounded;            /* the reference rounded to the output dtype */
    int cOut, eOut;            /* compiled, eager beyond the bound or off the special value */
    int cAccepted;             /* compiled off the special value, accepted (vacuous_nonfinite) */
    double ratio;              /* compiled error / bound */
} judged_element;

/* Both sides beyond the bound with the same value (NaN counting as one value), where the
 * reference or a side is non-finite: "both beyond", reported and not failed, as a finite
 * pair beyond the bound where compiled is no worse (classify_finite). Eager and compiled
 * agreeing cannot be a divergence between them; a capture whose data its metadata does not
 * explain (a NaN input with finite outputs) is said by the engine's warning, and a capture
 * diffed against itself passes. Returns 1 when it applied. */
static int both_beyond_alike(parity_judgement *pJ, judged_element *pEl)
{
    if (!pEl->cOut || !pEl->hasEager || !pEl->eOut || !same_special(pEl->c, pEl->e)) return 0;
    pJ->nBothBeyond++;
    pEl->cOut = 0;
    pEl->ratio = 1.0;
    return 1;
}


/* Threshold of the deterministic sample when the plan makes the judgement selective
 * (judge.h); 0 with pJ untouched otherwise. Returns 1 when selective. */
static int plan_selection(const parity_op_call *pCall, const parity_judge_plan *pPlan,
                          parity_judgement *pJ, uint64_t *pThreshold)
{
    *pThreshold = 0;
    if (!pPlan || !pCall->pDef->xEnvelope || !pCall->pDef->xCost ||
        !((double)pCall->nOut * pCall->pDef->xCost(pCall) > pPlan->budgetTerms))
        return 0;
    pJ->sampled = 1;
    /* P(mix < threshold) = nSample / nOut */
    *pThreshold = pPlan->nSample >= pCall->nOut ? UINT64_MAX
                : (uint64_t)((double)pPlan->nSample / (double)pCall->nOut * 18446744073709551615.0);
    return 1;
}

/* Which of the op's bounds decides, the tolerance file's scale and extra ulps, and no bound
 * where a legal summation order overflows. */
static void settle_bounds(const parity_op_call *pCall, const parity_judge_plan *pPlan,
                          const mpfr_t ref, parity_judgement *pJ, judged_element *pEl)
{
    if (pEl->probBound == pEl->probBound) {
        pJ->hasProbabilistic = 1;
        if (pJ->probabilisticDecides) {
            double t = pEl->bound;
            pEl->bound = pEl->probBound;
            pEl->probBound = t;   /* the deterministic one is then only a ceiling */
        }
    }
    if (pPlan && (pPlan->boundScale != 1.0 || pPlan->extraUlps > 0.0)) {
        double refD = mpfr_get_d(ref, MPFR_RNDN);
        double extra = pPlan->extraUlps * parity_ulp_at(pCall->outDtype, refD);
        pEl->bound = pEl->bound * pPlan->boundScale + extra;
        if (pEl->probBound == pEl->probBound)
            pEl->probBound = pEl->probBound * pPlan->boundScale + extra;
    }
    /* Where some legal summation order overflows (ops.h), the model's bound does not
     * hold: nothing finite can fail there, which the vacuous count says. */
    if (pCall->overflowPossible) pEl->bound = INFINITY;
}

/* The reference is NaN or infinite, or overflows the output dtype, and the compiled value
 * is not a finite one judged by the bound (judge_element): only the same special value is
 * right, but for the lenient NaN policy and a legal order's overflow. */
static void judge_special_reference(const parity_op_call *pCall, const parity_judge_plan *pPlan,
                                    mpfr_t scratch, const mpfr_t ref, parity_judgement *pJ,
                                    judged_element *pEl)
{
    pEl->cOut = !same_special(pEl->c, pEl->rounded);
    if (pEl->hasEager) {
        /* eager's finite value, as compiled's in judge_finite, by the bound */
        if (mpfr_number_p(ref) && isfinite(pEl->e))
            pEl->eOut = error_vs(scratch, ref, pEl->e) > pEl->bound;
        else
            pEl->eOut = !same_special(pEl->e, pEl->rounded);
    }
    /* Policy "lenient": a finite value where the reference is NaN is accepted
     * (fully masked softmax rows returning zeros, for instance). */
    if (pPlan && pPlan->nanLenient && pEl->rounded != pEl->rounded) {
        if (isfinite(pEl->c)) pEl->cOut = 0;
        if (pEl->hasEager && isfinite(pEl->e)) pEl->eOut = 0;
    }
    if (pEl->cOut && vacuous_nonfinite(pCall, pEl->rounded, pEl->c)) {
        pEl->cOut = 0;
        pEl->cAccepted = 1;
        pJ->nOverflowAccepted++;
    }
    if (pEl->eOut && vacuous_nonfinite(pCall, pEl->rounded, pEl->e)) pEl->eOut = 0;
    pEl->ratio = pEl->cOut ? INFINITY : 0.0;
    if (both_beyond_alike(pJ, pEl)) return;
    if (pEl->cOut) pJ->nNonFinite++;
}

/* A finite reference and a compiled NaN or infinity. */
static void judge_nonfinite_compiled(const parity_op_call *pCall, mpfr_t scratch,
                                     const mpfr_t ref, parity_judgement *pJ,
                                     judged_element *pEl)
{
    int rounded = !pCall->overflowPossible &&
                  overflow_within_bound(pCall, ref, pEl->bound, pEl->c);
    if (pCall->overflowPossible || rounded) {
        /* a reassociated sum may overflow where the exact one does not (ops.h), or a
         * value within the bound rounds to the infinity */
        pJ->nOverflowAccepted++;
        pJ->nOverflowRounded += rounded;
        pEl->cOut = 0;
        if (pEl->hasEager)
            pEl->eOut = isfinite(pEl->e) ? error_vs(scratch, ref, pEl->e) > pEl->bound
                      : !pCall->overflowPossible &&
                        !overflow_within_bound(pCall, ref, pEl->bound, pEl->e);
        pEl->ratio = 0.0;
    } else {
        pEl->cOut = 1;
        if (pEl->hasEager)
            pEl->eOut = isfinite(pEl->e) ? error_vs(scratch, ref, pEl->e) > pEl->bound
                      : !overflow_within_bound(pCall, ref, pEl->bound, pEl->e);
        pEl->ratio = INFINITY;
        if (!both_beyond_alike(pJ, pEl)) pJ->nNonFinite++;
    }
}

/* The classes and error figures of an element whose compiled value is finite and whose
 * reference is a finite number, once its errors are known: errC, errE (0 without eager;
 * eager's counts in its figures only when eagerFigures), the reference's ulp in the output
 * dtype, pEl->cOut and pEl->eOut (each side beyond the bound) and cNotWorse (errC <= errE,
 * asked only when both are beyond). Shared by the MPFR path (judge_finite) and the fast path
 * (fast_element), so both classify alike. */
static void classify_finite(parity_judgement *pJ, judged_element *pEl, double errC,
                            double errE, int eagerFigures, double ulp, int cNotWorse)
{
    int cBeyond = pEl->cOut;
    if (errC > pJ->maxErrCompiled) pJ->maxErrCompiled = errC;
    if (pEl->bound > 0.0 && errC / pEl->bound > pJ->maxRatioCompiled)
        pJ->maxRatioCompiled = errC / pEl->bound;
    if (errC / ulp > pJ->maxUlpCompiled) pJ->maxUlpCompiled = errC / ulp;
    if (pEl->hasEager && eagerFigures) {
        if (errE > pJ->maxErrEager) pJ->maxErrEager = errE;
        if (pEl->bound > 0.0 && errE / pEl->bound > pJ->maxRatioEager)
            pJ->maxRatioEager = errE / pEl->bound;
        if (errE / ulp > pJ->maxUlpEager) pJ->maxUlpEager = errE / ulp;
    }
    pEl->ratio = pEl->bound > 0.0 ? errC / pEl->bound : (errC > 0.0 ? INFINITY : 0.0);
    /* Within the deciding bound but beyond the probabilistic one, or (a plan's second rule)
     * beyond the tolerance from eager and far worse than eager: reported. */
    if (!pEl->cOut && !pJ->probabilisticDecides && pEl->probBound == pEl->probBound &&
        errC > pEl->probBound)
        pJ->nSuspicious++;
    else if (!pEl->cOut && pJ->suspectOverEager > 0.0 && pEl->hasEager &&
             fabs(pEl->c - pEl->e) > pJ->suspectAtol + pJ->suspectRtol * fabs(pEl->e) &&
             errC > pJ->suspectOverEager * errE)
        pJ->nSuspicious++;
    if (pEl->cOut && pEl->eOut && cNotWorse) {
        pJ->nBothBeyond++;
        pEl->cOut = 0;   /* reported, not failed */
        pEl->ratio = pEl->ratio > 1.0 ? 1.0 : pEl->ratio;
    } else if (pEl->cOut) {
        /* beyond the bound of an exact value that rounds to an infinity: a finite value
         * where the output dtype's answer is infinite, a non-finite divergence */
        if (isfinite(pEl->rounded)) pJ->nCompiledWorse++;
        else pJ->nNonFinite++;
    }
    if (!pEl->cOut && pEl->eOut && !cBeyond) pJ->nEagerWorse++;
    if (!pEl->cOut && !pEl->eOut) pJ->nWithin++;
}

/* A finite compiled value against a reference that is a finite number: the error figures
 * and the classes of judge.h. The reference may still round to an infinity in the output
 * dtype (it lies past the overflow threshold): an order within the bound can stay below
 * the threshold, so the bound decides there too, and eager's infinity is then the exact
 * value's rounding. */
static void judge_finite(const parity_op_call *pCall, mpfr_t scratch, const mpfr_t ref,
                         parity_judgement *pJ, judged_element *pEl)
{
    double refD = mpfr_get_d(ref, MPFR_RNDN);
    double ulp = parity_ulp_at(pCall->outDtype, refD);
    double errC = error_vs(scratch, ref, pEl->c), errE = 0.0;
    int eagerFinite = pEl->hasEager && isfinite(pEl->e);

    pEl->cOut = errC > pEl->bound;
    if (pEl->hasEager && !eagerFinite) {
        pEl->eOut = !same_special(pEl->e, pEl->rounded) &&
                    !vacuous_nonfinite(pCall, pEl->rounded, pEl->e) &&
                    !overflow_within_bound(pCall, ref, pEl->bound, pEl->e);
        errE = pEl->eOut ? INFINITY : 0.0;
    } else if (eagerFinite) {
        errE = error_vs(scratch, ref, pEl->e);
        pEl->eOut = errE > pEl->bound;
    }
    classify_finite(pJ, pEl, errC, errE, eagerFinite, ulp, errC <= errE);
}

/* Classifies one element whose bounds are settled. */
static void judge_element(const parity_op_call *pCall, const parity_judge_plan *pPlan,
                          mpfr_t scratch, const mpfr_t ref, parity_judgement *pJ,
                          judged_element *pEl)
{
    if (mpfr_number_p(ref) && isfinite(pEl->c)) {
        judge_finite(pCall, scratch, ref, pJ, pEl);
        return;
    }
    if (!isfinite(pEl->rounded))
        judge_special_reference(pCall, pPlan, scratch, ref, pJ, pEl);
    else
        judge_nonfinite_compiled(pCall, scratch, ref, pJ, pEl);
    /* Where the bound is vacuous and both sides left the exact value's special
     * value, neither is wrong by the model: reported, never failed. */
    if (pEl->cAccepted && pEl->eOut) pJ->nBothBeyond++;
    else if (!pEl->cOut && pEl->eOut) pJ->nEagerWorse++;
    if (!pEl->cOut && !pEl->eOut) pJ->nWithin++;
}

/* Same value and sign, or both NaN (payloads aside). */
static int bit_identical(double a, double b)
{
    return a == b ? signbit(a) == signbit(b) : (a != a && b != b);
}

/* ---- the fast path (ops.h, xFast) -------------------------------------------------- */

/* Relative slack of the binary64 arithmetic below: |c - r| is computed with one rounding
 * (2^-53), MPFR's error figure is rounded up once (2^-52), and the reference at
 * PARITY_REF_PREC bits is within 2^-127 of exact, which every stated error that is not 0
 * exceeds by far (an exact fast reference, err = 0, is the MPFR one too: neg, abs).
 * 2^-50 covers their sum with room. */
#define FAST_SLACK 0x1p-50

/* What the interval [lo, hi] of an error says against a bound somewhere in [bound -
 * spread, bound + spread]: 0 within, 1 beyond, -1 open. */
static int side_of(double lo, double hi, double bound, double spread)
{
    if (hi <= bound - spread) return 0;
    if (lo > bound + spread) return 1;
    return -1;
}

/* The error |v - r| of a side's value v against the fast reference r (within err of the
 * exact one) in *pD, and the interval [*pLo, *pHi] that holds MPFR's figure of it. Where r
 * is exact with a bound that does not move (err and spread 0) and v - r is exact in
 * binary64, the interval is the point: MPFR's figure is that very value, and the verdict
 * (a comparison with the bound, ties included) is MPFR's to the bit. */
static void error_interval(double v, double r, double err, double spread, double *pD,
                           double *pLo, double *pHi)
{
    double d;
    if (err == 0.0 && spread == 0.0 && parity_sum_is_exact(v, -r, &d)) {
        *pD = *pLo = *pHi = fabs(d);
        return;
    }
    *pD = fabs(v - r);
    *pLo = (*pD - err) * (1.0 - FAST_SLACK);
    *pHi = (*pD + err) * (1.0 + FAST_SLACK);
}

/* The fast path of one element whose compiled (and eager) values are finite: 1 when the
 * binary64 reference decides it (classified into pJ like the MPFR path would), 0 when MPFR
 * must (nothing touched). */
static int fast_element(const parity_op_call *pCall, const parity_judge_plan *pPlan,
                        uint64_t i, parity_judgement *pJ, judged_element *pEl)
{
    const parity_dtype out = pCall->outDtype;
    double r, err, bound, spread, dC, dE = 0.0, loC, hiC, loE = 0.0, hiE = 0.0, ulp;
    int cSide, eSide = 0, cNotWorse = 1;

    if (!pCall->pDef->xFast(pCall, i, &r, &err, &bound, &spread)) return 0;
    /* Finite and not rounding to an infinity in the output dtype, whatever the exact
     * reference in the interval; the ulp of the output the same over it (the figures, the
     * tolerance file's extra ulps). */
    if (!isfinite(r) || !(fabs(r) + err <= parity_dtype_max_finite(out)) || !(bound < INFINITY))
        return 0;
    ulp = parity_ulp_at(out, r);
    if (err > 0.0 && (parity_ulp_at(out, fabs(r) > err ? fabs(r) - err : 0.0) != ulp ||
                      parity_ulp_at(out, fabs(r) + err) != ulp))
        return 0;
    if (pPlan && (pPlan->boundScale != 1.0 || pPlan->extraUlps > 0.0)) {
        bound = bound * pPlan->boundScale + pPlan->extraUlps * ulp;
        spread *= pPlan->boundScale;
    }
    error_interval(pEl->c, r, err, spread, &dC, &loC, &hiC);
    if ((cSide = side_of(loC, hiC, bound, spread)) < 0) return 0;
    if (pEl->hasEager) {
        error_interval(pEl->e, r, err, spread, &dE, &loE, &hiE);
        if ((eSide = side_of(loE, hiE, bound, spread)) < 0) return 0;
    }
    if (cSide && eSide && pEl->c != pEl->e) {
        /* both beyond: is compiled's error at most eager's? (equal values: equal errors) */
        if (hiC <= loE) cNotWorse = 1;
        else if (loC > hiE) cNotWorse = 0;
        else return 0;
    }
    pEl->bound = bound;
    pEl->probBound = NAN;
    pEl->rounded = r;   /* finite, all the classes ask of it here */
    pEl->cOut = cSide;
    pEl->eOut = eSide;
    if (bound > pJ->maxBound) pJ->maxBound = bound;
    classify_finite(pJ, pEl, dC, dE, pEl->hasEager, ulp, cNotWorse);
    return 1;
}

/* ---- one element, the whole judgement ------------------------------------------------- */

/* Element i's values: compiled's, and eager's (or compiled's own where it is bit-identical
 * to aApprox under identicalIsEager, judge.h). */
static void element_init(const double *aEager, const double *aCompiled, const double *aApprox,
                         const parity_judge_plan *pPlan, uint64_t i, judged_element *pEl)
{
    memset(pEl, 0, sizeof *pEl);
    pEl->c = aCompiled[i];
    pEl->e = aEager ? aEager[i] : 0.0;
    pEl->hasEager = aEager != NULL;
    if (!aEager && pPlan && pPlan->identicalIsEager && aApprox &&
        bit_identical(pEl->c, aApprox[i])) {
        pEl->e = pEl->c;
        pEl->hasEager = 1;
    }
}

/* Whether element i is judged at all (the plan's filters; judge.h), with el filled in. */
static int element_wanted(parity_op_call *pCall, const double *aEager, const double *aCompiled,
                          const double *aApprox, const parity_judge_plan *pPlan, int selective,
                          uint64_t threshold, uint64_t i, parity_judgement *pJ,
                          judged_element *pEl)
{
    double c = aCompiled[i], e = aEager ? aEager[i] : 0.0;
    if (pPlan && pPlan->skipIdentical && aEager && bit_identical(c, e)) {
        pJ->sampled = 1;
        return 0;
    }
    if (selective && !selected(pCall, aApprox ? aApprox : aEager, aCompiled, i, threshold,
                               pPlan->seed, pJ))
        return 0;
    element_init(aEager, aCompiled, aApprox, pPlan, i, pEl);
    return 1;
}

/* What an element's verdict leaves in the judgement beyond its class: the worst ratio and
 * the failing box. */
static void note_element(const parity_op_call *pCall, uint64_t i, parity_judgement *pJ,
                         const judged_element *pEl)
{
    pJ->nChecked++;
    if (pEl->ratio > pJ->worstRatio) {
        pJ->worstRatio = pEl->ratio;
        pJ->worstLinear = i;
    }
    if (pEl->cOut) {
        mark_fail(pCall, i, pJ);
        if (pEl->eOut) pJ->nFailEagerBeyond++;
    }
    if (pEl->eOut && pEl->hasEager && (!isfinite(pEl->e) || !isfinite(pEl->rounded)))
        pJ->nEagerNonFinite++;
}

/* Element i through MPFR: 0, or -1 with zErr. */
static int slow_element(parity_op_call *pCall, const parity_judge_plan *pPlan, uint64_t i,
                        mpfr_t ref, mpfr_t scratch, parity_judgement *pJ, judged_element *pEl,
                        char *zErr, size_t nErr)
{
    parity_op_call_clear_element(pCall);
    if (pCall->pDef->xElement(pCall, i, ref, &pEl->bound) != 0) {
        snprintf(zErr, nErr, "%s: reference failed at element %llu", pCall->pDef->zName,
                 (unsigned long long)i);
        return -1;
    }
    pJ->nSlowPath++;
    pEl->probBound = pCall->probBound;
    settle_bounds(pCall, pPlan, ref, pJ, pEl);
    pEl->rounded = parity_round_to_dtype(ref, pCall->outDtype);
    if (pEl->bound > pJ->maxBound) pJ->maxBound = pEl->bound;
    if (pEl->bound == INFINITY) pJ->nVacuous++;
    if (pCall->overflowPossible) pJ->nVacuousOverflow++;
    judge_element(pCall, pPlan, scratch, ref, pJ, pEl);
    note_element(pCall, i, pJ, pEl);
    return 0;
}

/* Adds judgement pSrc (of other elements) into pDst: counts add, maxima stay maxima, the
 * worst ratio keeps the lowest index attaining it, failing boxes join. */
static void merge_judgement(parity_judgement *pDst, const parity_judgement *pSrc, int rank)
{
    int d;
    pDst->sampled |= pSrc->sampled;
    pDst->hasProbabilistic |= pSrc->hasProbabilistic;
#define ADD(f) pDst->f += pSrc->f
    ADD(nFlagged); ADD(nSampled); ADD(nChecked); ADD(nSlowPath); ADD(nWithin);
    ADD(nCompiledWorse); ADD(nEagerWorse); ADD(nBothBeyond); ADD(nNonFinite);
    ADD(nOverflowAccepted); ADD(nOverflowRounded); ADD(nVacuous); ADD(nVacuousOverflow); ADD(nSuspicious);
    ADD(nFailEagerBeyond); ADD(nEagerNonFinite);
#undef ADD
#define MAX(f) if (pSrc->f > pDst->f) pDst->f = pSrc->f
    MAX(maxErrCompiled); MAX(maxErrEager); MAX(maxUlpCompiled); MAX(maxUlpEager);
    MAX(maxRatioCompiled); MAX(maxRatioEager); MAX(maxBound);
#undef MAX
    if (pSrc->worstRatio > pDst->worstRatio ||
        (pSrc->worstRatio == pDst->worstRatio && pSrc->worstRatio >= 0.0 &&
         pSrc->worstLinear < pDst->worstLinear)) {
        pDst->worstRatio = pSrc->worstRatio;
        pDst->worstLinear = pSrc->worstLinear;
    }
    if (pSrc->nFail) {
        for (d = 0; d < rank; d++) {
            if (pDst->nFail == 0 || pSrc->aSliceLo[d] < pDst->aSliceLo[d])
                pDst->aSliceLo[d] = pSrc->aSliceLo[d];
            if (pDst->nFail == 0 || pSrc->aSliceHi[d] > pDst->aSliceHi[d])
                pDst->aSliceHi[d] = pSrc->aSliceHi[d];
        }
        pDst->nFail += pSrc->nFail;
    }
}

/* A judgement of nothing yet, with the plan's settings. */
static void judgement_init(parity_judgement *pJ, const parity_op_call *pCall,
                           const parity_judge_plan *pPlan)
{
    memset(pJ, 0, sizeof *pJ);
    pJ->worstRatio = -1.0;
    pJ->lambda = pCall->lambda;
    pJ->probabilisticDecides = pPlan && pPlan->probabilistic;
    if (pPlan && pPlan->suspectOverEager > 0.0) {
        pJ->suspectOverEager = pPlan->suspectOverEager;
        pJ->suspectAtol = pPlan->suspectAtol;
        pJ->suspectRtol = pPlan->suspectRtol;
    }
}

/* The judgement's inputs, shared by the fast-path workers. */
typedef struct {
    parity_op_call *pCall;
    const double *aEager, *aCompiled, *aApprox;
    const parity_judge_plan *pPlan;
    int selective;
    uint64_t threshold;
    int stop;                  /* set (atomically) when the time limit is reached */
    uint64_t nextBlock;        /* slow_share: the next block of SLOW_BLOCK_ELEMS to take */
} judge_job;

/* One worker's share: elements [lo, hi), the fast path's verdicts in j, the rest's indices
 * (increasing) in aSlow for MPFR. */
typedef struct {
    judge_job *pJob;
    uint64_t lo, hi;
    parity_judgement j;
    uint64_t *aSlow;
    size_t nSlow, nSlowAlloc;
    int oom;
    int beats;                 /* this share calls the plan's xBeat (the calling thread's) */
    uint64_t iStopped;         /* where the time limit stopped it */
    int failed;                /* slow_share: the reference failed (zErr says where) */
    char zErr[160];
} judge_share;

#define FAST_BEAT_ELEMS 65536   /* fast elements between beats: well under 10 ms */

static void *fast_share(void *pArg)
{
    judge_share *pS = pArg;
    judge_job *pJob = pS->pJob;
    const parity_judge_plan *pPlan = pJob->pPlan;
    uint64_t i;
    for (i = pS->lo; i < pS->hi; i++) {
        judged_element el;
        if ((i - pS->lo) % FAST_BEAT_ELEMS == FAST_BEAT_ELEMS - 1) {
            if (pS->beats && pPlan->xBeat && pPlan->xBeat(pPlan->pBeatCtx) != 0)
                __atomic_store_n(&pJob->stop, 1, __ATOMIC_RELAXED);
            if (__atomic_load_n(&pJob->stop, __ATOMIC_RELAXED)) {
                pS->iStopped = i;
                break;
            }
        }
        if (!element_wanted(pJob->pCall, pJob->aEager, pJob->aCompiled, pJob->aApprox, pPlan,
                            pJob->selective, pJob->threshold, i, &pS->j, &el))
            continue;
        if (isfinite(el.c) && (!el.hasEager || isfinite(el.e)) &&
            fast_element(pJob->pCall, pPlan, i, &pS->j, &el)) {
            note_element(pJob->pCall, i, &pS->j, &el);
            continue;
        }
        if (pS->nSlow == pS->nSlowAlloc) {
            size_t n = pS->nSlowAlloc ? 2 * pS->nSlowAlloc : 1024;
            uint64_t *a = parity_realloc(pS->aSlow, n * sizeof *a);
            if (!a) {
                pS->oom = 1;
                break;
            }
            pS->aSlow = a;
            pS->nSlowAlloc = n;
        }
        pS->aSlow[pS->nSlow++] = i;
    }
    return NULL;
}

static void time_limit(const parity_op_call *pCall, uint64_t i, char *zErr, size_t nErr)
{
    snprintf(zErr, nErr, "%s: %s at element %llu of %llu", pCall->pDef->zName,
             PARITY_JUDGE_TIME_LIMIT, (unsigned long long)i, (unsigned long long)pCall->nOut);
}

/* The plan's beat every PARITY_JUDGE_BEAT_ELEMS elements MPFR judged (nChecked of them,
 * element i the last): 0, or -1 with the time limit's error. */
static int beat(const parity_op_call *pCall, const parity_judge_plan *pPlan, uint64_t nChecked,
                uint64_t i, char *zErr, size_t nErr)
{
    if (!pPlan || !pPlan->xBeat || nChecked % PARITY_JUDGE_BEAT_ELEMS != 0 ||
        pPlan->xBeat(pPlan->pBeatCtx) == 0)
        return 0;
    time_limit(pCall, i, zErr, nErr);
    return -1;
}

#define JUDGE_MAX_THREADS PARITY_MAX_THREADS

/* The MPFR path on one of several threads (ops flagged PARITY_OPF_REFERENCE_THREADS,
 * ops.h), with its own copy of the call and its own MPFR variables: blocks of
 * SLOW_BLOCK_ELEMS taken in turn until none is left, the elements the plan wants in them
 * judged into the share's judgement (the merge is the same whoever judged what). The
 * sampled dot products of a transformer's linears (8192 a tensor, K up to 2048) ran on one
 * thread, a sixth of its judgement. Share 0 runs on the calling thread and alone beats;
 * taking blocks until the last, it keeps beating while the others work, however the
 * costly elements lie (a fixed half each left it idle, and the watchdog without a beat,
 * when a failing region sat in the other half). The others stop when it says the time is
 * up. */
#define SLOW_BLOCK_ELEMS 1024

static void *slow_share(void *pArg)
{
    judge_share *pS = pArg;
    judge_job *pJob = pS->pJob;
    const parity_judge_plan *pPlan = pJob->pPlan;
    parity_op_call call = *pJob->pCall;
    mpfr_t ref, scratch;
    uint64_t i = 0, hi = 0;
    mpfr_inits2(PARITY_REF_PREC, ref, scratch, (mpfr_ptr)0);
    for (;; i++) {
        judged_element el;
        if (i == hi) {
            i = __atomic_fetch_add(&pJob->nextBlock, 1, __ATOMIC_RELAXED) * SLOW_BLOCK_ELEMS;
            if (i >= call.nOut) break;
            hi = call.nOut - i < SLOW_BLOCK_ELEMS ? call.nOut : i + SLOW_BLOCK_ELEMS;
        }
        if (__atomic_load_n(&pJob->stop, __ATOMIC_RELAXED)) {
            pS->iStopped = i;
            break;
        }
        if (!element_wanted(&call, pJob->aEager, pJob->aCompiled, pJob->aApprox, pPlan,
                            pJob->selective, pJob->threshold, i, &pS->j, &el))
            continue;
        if (slow_element(&call, pPlan, i, ref, scratch, &pS->j, &el, pS->zErr,
                         sizeof pS->zErr) != 0) {
            pS->failed = 1;
            __atomic_store_n(&pJob->stop, 1, __ATOMIC_RELAXED);
            break;
        }
        if (pS->beats && beat(&call, pPlan, pS->j.nChecked, i, pS->zErr, sizeof pS->zErr) != 0) {
            pS->iStopped = i;
            __atomic_store_n(&pJob->stop, 1, __ATOMIC_RELAXED);
            break;
        }
    }
    mpfr_clears(ref, scratch, (mpfr_ptr)0);
    if (!pS->beats) mpfr_free_cache();   /* the thread's own caches end with it */
    return NULL;
}

/* xWork (fast_share: the fast path over the share's [lo, hi), leaving its MPFR elements in
 * the share; slow_share: the MPFR path, block by block) over every element, on the plan's
 * threads, into each share's verdicts. Returns the shares made (aShare[0] ran on the
 * calling thread). */
static int run_shares(judge_job *pJob, judge_share *aShare, void *(*xWork)(void *))
{
    parity_op_call *pCall = pJob->pCall;
    int nShare = pJob->pPlan && pJob->pPlan->nThreads > 1 ? pJob->pPlan->nThreads : 1, k;

    if (nShare > JUDGE_MAX_THREADS) nShare = JUDGE_MAX_THREADS;
    /* a thread is worth its start-up only over some elements */
    if ((uint64_t)nShare > pCall->nOut / 4096 + 1) nShare = (int)(pCall->nOut / 4096 + 1);
    for (k = 0; k < nShare; k++) {
        memset(&aShare[k], 0, sizeof aShare[k]);
        aShare[k].pJob = pJob;
        aShare[k].lo = pCall->nOut / nShare * k;
        aShare[k].hi = k + 1 == nShare ? pCall->nOut : pCall->nOut / nShare * (k + 1);
        aShare[k].iStopped = UINT64_MAX;
        aShare[k].beats = k == 0;
        judgement_init(&aShare[k].j, pCall, pJob->pPlan);
    }
    parity_run_shares(xWork, aShare, sizeof aShare[0], nShare);
    return nShare;
}


int parity_judge_planned(parity_op_call *pCall, const double *aEager, const double *aCompiled,
                         const double *aApprox, const parity_judge_plan *pPlan,
                         parity_judgement *pJ, char *zErr, size_t nErr)
{
    mpfr_t ref, scratch;
    uint64_t i, threshold;
    int rc = 0, selective, nShare = 0, k;
    judge_share aShare[JUDGE_MAX_THREADS];
    judge_job job;

    if (pPlan) pCall->lambda = pPlan->lambda;
    judgement_init(pJ, pCall, pPlan);
    selective = plan_selection(pCall, pPlan, pJ, &threshold);
    job = (judge_job){ pCall, aEager, aCompiled, aApprox, pPlan, selective, threshold, 0, 0 };
    if (pCall->pDef->xFast && !(pPlan && pPlan->noFastPath)) {
        nShare = run_shares(&job, aShare, fast_share);
        for (k = 0; k < nShare; k++) {
            if (aShare[k].oom) {
                snprintf(zErr, nErr, "%s: out of memory while judging", pCall->pDef->zName);
                rc = -1;
            } else if (aShare[k].iStopped != UINT64_MAX && rc == 0) {
                time_limit(pCall, aShare[k].iStopped, zErr, nErr);
                rc = -1;
            }
        }
    }
    mpfr_inits2(PARITY_REF_PREC, ref, scratch, (mpfr_ptr)0);
    if (nShare > 0) {
        /* what the fast path left, in increasing order; the filters ran already */
        parity_judgement slow;
        judgement_init(&slow, pCall, pPlan);
        for (k = 0; k < nShare && rc == 0; k++) {
            size_t s;
            merge_judgement(pJ, &aShare[k].j, pCall->outRank);
            for (s = 0; s < aShare[k].nSlow && rc == 0; s++) {
                judged_element el;
                i = aShare[k].aSlow[s];
                element_init(aEager, aCompiled, aApprox, pPlan, i, &el);
                rc = slow_element(pCall, pPlan, i, ref, scratch, &slow, &el, zErr, nErr);
                if (rc == 0) rc = beat(pCall, pPlan, slow.nChecked, i, zErr, nErr);
            }
        }
        merge_judgement(pJ, &slow, pCall->outRank);
        for (k = 0; k < nShare; k++) parity_free(aShare[k].aSlow);
    } else if ((pCall->pDef->flags & PARITY_OPF_REFERENCE_THREADS) && pPlan &&
               pPlan->nThreads > 1) {
        /* the op's lazily made state first, so the threads only read it */
        if (selective && pCall->nOut > 0) pCall->pDef->xEnvelope(pCall, 0);
        nShare = run_shares(&job, aShare, slow_share);
        /* a reference that failed says so; else a share the time limit stopped */
        for (k = 0; k < nShare && rc == 0; k++)
            if (aShare[k].failed) {
                snprintf(zErr, nErr, "%s", aShare[k].zErr);
                rc = -1;
            }
        for (k = 0; k < nShare && rc == 0; k++)
            if (aShare[k].iStopped != UINT64_MAX) {
                time_limit(pCall, aShare[k].iStopped, zErr, nErr);
                rc = -1;
            }
        for (k = 0; k < nShare; k++) merge_judgement(pJ, &aShare[k].j, pCall->outRank);
    } else {
        for (i = 0; i < pCall->nOut && rc == 0; i++) {
            judged_element el;
            if (!element_wanted(pCall, aEager, aCompiled, aApprox, pPlan, selective, threshold,
                                i, pJ, &el))
                continue;
            rc = slow_element(pCall, pPlan, i, ref, scratch, pJ, &el, zErr, nErr);
            if (rc == 0) rc = beat(pCall, pPlan, pJ->nChecked, i, zErr, nErr);
        }
    }
    mpfr_clears(ref, scratch, (mpfr_ptr)0);
    return rc;
}
