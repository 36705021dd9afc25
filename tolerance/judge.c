/*
 * judge.c - per-element classification against the reference (see judge.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tolerance/judge.h"
#include "tolerance/mpref.h"

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
    if (pEl->cOut) pJ->nNonFinite++;
}

/* A finite reference and a compiled NaN or infinity. */
static void judge_nonfinite_compiled(const parity_op_call *pCall, mpfr_t scratch,
                                     const mpfr_t ref, parity_judgement *pJ,
                                     judged_element *pEl)
{
    if (pCall->overflowPossible) {
        /* a reassociated sum may overflow where the exact one does not (ops.h) */
        pJ->nOverflowAccepted++;
        pEl->cOut = 0;
        if (pEl->hasEager)
            pEl->eOut = isfinite(pEl->e) && error_vs(scratch, ref, pEl->e) > pEl->bound;
        pEl->ratio = 0.0;
    } else {
        pEl->cOut = 1;
        if (pEl->hasEager)
            pEl->eOut = !isfinite(pEl->e) || error_vs(scratch, ref, pEl->e) > pEl->bound;
        pEl->ratio = INFINITY;
        pJ->nNonFinite++;
    }
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

    pEl->cOut = errC > pEl->bound;
    if (errC > pJ->maxErrCompiled) pJ->maxErrCompiled = errC;
    if (pEl->bound > 0.0 && errC / pEl->bound > pJ->maxRatioCompiled)
        pJ->maxRatioCompiled = errC / pEl->bound;
    if (errC / ulp > pJ->maxUlpCompiled) pJ->maxUlpCompiled = errC / ulp;
    if (pEl->hasEager) {
        if (!isfinite(pEl->e)) {
            pEl->eOut = !same_special(pEl->e, pEl->rounded) &&
                        !vacuous_nonfinite(pCall, pEl->rounded, pEl->e);
            errE = pEl->eOut ? INFINITY : 0.0;
        } else {
            errE = error_vs(scratch, ref, pEl->e);
            pEl->eOut = errE > pEl->bound;
            if (errE > pJ->maxErrEager) pJ->maxErrEager = errE;
            if (pEl->bound > 0.0 && errE / pEl->bound > pJ->maxRatioEager)
                pJ->maxRatioEager = errE / pEl->bound;
            if (errE / ulp > pJ->maxUlpEager) pJ->maxUlpEager = errE / ulp;
        }
    }
    pEl->ratio = pEl->bound > 0.0 ? errC / pEl->bound : (errC > 0.0 ? INFINITY : 0.0);
    /* Within the deciding bound but beyond the probabilistic one: reported. */
    if (!pEl->cOut && !pJ->probabilisticDecides && pEl->probBound == pEl->probBound &&
        errC > pEl->probBound)
        pJ->nSuspicious++;
    if (pEl->cOut && pEl->eOut && errC <= errE) {
        pJ->nBothBeyond++;
        pEl->cOut = 0;   /* reported, not failed */
        pEl->ratio = pEl->ratio > 1.0 ? 1.0 : pEl->ratio;
    } else if (pEl->cOut) {
        /* beyond the bound of an exact value that rounds to an infinity: a finite value
         * where the output dtype's answer is infinite, a non-finite divergence */
        if (isfinite(pEl->rounded)) pJ->nCompiledWorse++;
        else pJ->nNonFinite++;
    }
    if (!pEl->cOut && pEl->eOut && !(errC > pEl->bound)) pJ->nEagerWorse++;
    if (!pEl->cOut && !pEl->eOut) pJ->nWithin++;
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

int parity_judge_planned(parity_op_call *pCall, const double *aEager, const double *aCompiled,
                         const double *aApprox, const parity_judge_plan *pPlan,
                         parity_judgement *pJ, char *zErr, size_t nErr)
{
    mpfr_t ref, scratch;
    uint64_t i, threshold;
    int rc = 0, selective;

    memset(pJ, 0, sizeof *pJ);
    pJ->worstRatio = -1.0;
    selective = plan_selection(pCall, pPlan, pJ, &threshold);
    if (pPlan) pCall->lambda = pPlan->lambda;
    pJ->lambda = pCall->lambda;
    pJ->probabilisticDecides = pPlan && pPlan->probabilistic;
    mpfr_inits2(PARITY_REF_PREC, ref, scratch, (mpfr_ptr)0);
    for (i = 0; i < pCall->nOut; i++) {
        judged_element el;
        double c = aCompiled[i], e = aEager ? aEager[i] : 0.0;

        if (pPlan && pPlan->skipIdentical && aEager && bit_identical(c, e)) {
            pJ->sampled = 1;
            continue;
        }
        if (selective && !selected(pCall, aApprox ? aApprox : aEager, aCompiled, i, threshold,
                                   pPlan->seed, pJ))
            continue;

        memset(&el, 0, sizeof el);
        el.c = c;
        el.e = e;
        el.hasEager = aEager != NULL;
        if (!aEager && pPlan && pPlan->identicalIsEager && aApprox &&
            bit_identical(c, aApprox[i])) {
            el.e = c;
            el.hasEager = 1;
        }
        pCall->probBound = NAN;
        pCall->overflowPossible = 0;
        pCall->nonfiniteAny = 0;
        if (pCall->pDef->xElement(pCall, i, ref, &el.bound) != 0) {
            snprintf(zErr, nErr, "%s: reference failed at element %llu", pCall->pDef->zName,
                     (unsigned long long)i);
            rc = -1;
            break;
        }
        pJ->nChecked++;
        if (pPlan && pPlan->xBeat && pJ->nChecked % PARITY_JUDGE_BEAT_ELEMS == 0 &&
            pPlan->xBeat(pPlan->pBeatCtx) != 0) {
            snprintf(zErr, nErr, "%s: %s at element %llu of %llu", pCall->pDef->zName,
                     PARITY_JUDGE_TIME_LIMIT, (unsigned long long)i,
                     (unsigned long long)pCall->nOut);
            rc = -1;
            break;
        }
        el.probBound = pCall->probBound;
        settle_bounds(pCall, pPlan, ref, pJ, &el);
        el.rounded = parity_round_to_dtype(ref, pCall->outDtype);
        if (el.bound > pJ->maxBound) pJ->maxBound = el.bound;
        if (el.bound == INFINITY) pJ->nVacuous++;
        if (pCall->overflowPossible) pJ->nVacuousOverflow++;

        judge_element(pCall, pPlan, scratch, ref, pJ, &el);
        if (el.ratio > pJ->worstRatio) {
            pJ->worstRatio = el.ratio;
            pJ->worstLinear = i;
        }
        if (el.cOut) {
            mark_fail(pCall, i, pJ);
            if (el.eOut) pJ->nFailEagerBeyond++;
        }
    }
    mpfr_clears(ref, scratch, (mpfr_ptr)0);
    return rc;
}
