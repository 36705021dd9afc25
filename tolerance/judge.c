/*
 * judge.c - per-element classification against the reference (see judge.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "judge.h"
#include "mpref.h"

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
 * model's bound is vacuous, and a compiled value c that misses the reference's special
 * value (rounded: the reference in the output dtype, NaN or an infinity) may still be a
 * correct kernel's:
 *   - an infinity or NaN always: the overflowing order gives +-Inf, meeting the other
 *     infinity gives NaN;
 *   - a finite value only where the exact value is a finite number (it merely rounds to
 *     an infinity in the output dtype) and the overflow can vanish on the way
 *     (PARITY_OVERFLOW_ANY_VALUE: a norm's variance overflows, its rsqrt is 0, the row
 *     becomes the bias). A plain sum that overflows stays infinite in every order, and an
 *     infinite operand reaches the result in every order.
 * A NaN reference (a NaN operand) propagates in every order: nothing else is legal. */
static int vacuous_special(const parity_op_call *pCall, const mpfr_t ref, double rounded,
                           double c)
{
    if (rounded != rounded) return 0;
    if (!isfinite(c)) return 1;
    return pCall->overflowPossible == PARITY_OVERFLOW_ANY_VALUE && mpfr_number_p(ref);
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

int parity_judge_planned(parity_op_call *pCall, const double *aEager, const double *aCompiled,
                         const double *aApprox, const parity_judge_plan *pPlan,
                         parity_judgement *pJ, char *zErr, size_t nErr)
{
    mpfr_t ref, scratch;
    uint64_t i, threshold = 0;
    int rc = 0, selective = 0;

    memset(pJ, 0, sizeof *pJ);
    pJ->worstRatio = -1.0;
    if (pPlan && pCall->pDef->xEnvelope && pCall->pDef->xCost &&
        (double)pCall->nOut * pCall->pDef->xCost(pCall) > pPlan->budgetTerms) {
        selective = 1;
        pJ->sampled = 1;
        /* P(mix < threshold) = nSample / nOut */
        threshold = pPlan->nSample >= pCall->nOut ? UINT64_MAX
                  : (uint64_t)((double)pPlan->nSample / (double)pCall->nOut * 18446744073709551615.0);
    }
    if (pPlan) pCall->lambda = pPlan->lambda;
    pJ->lambda = pCall->lambda;
    pJ->probabilisticDecides = pPlan && pPlan->probabilistic;
    mpfr_inits2(PARITY_REF_PREC, ref, scratch, (mpfr_ptr)0);
    for (i = 0; i < pCall->nOut; i++) {
        double bound = 0.0, rounded, c = aCompiled[i], e = aEager ? aEager[i] : 0.0;
        double probBound;
        double errC, errE = 0.0, ulp, ratio;
        int cOut, eOut = 0, finiteRef, cAccepted = 0;

        if (pPlan && pPlan->skipIdentical && aEager && (c == e ? signbit(c) == signbit(e)
                                                         : (c != c && e != e))) {
            pJ->sampled = 1;
            continue;
        }
        if (selective && !selected(pCall, aApprox ? aApprox : aEager, aCompiled, i, threshold,
                                   pPlan->seed, pJ))
            continue;

        pCall->probBound = NAN;
        pCall->overflowPossible = 0;
        if (pCall->pDef->xElement(pCall, i, ref, &bound) != 0) {
            snprintf(zErr, nErr, "%s: reference failed at element %llu", pCall->pDef->zName,
                     (unsigned long long)i);
            rc = -1;
            break;
        }
        pJ->nChecked++;
        probBound = pCall->probBound;
        if (probBound == probBound) {
            pJ->hasProbabilistic = 1;
            if (pJ->probabilisticDecides) {
                double t = bound;
                bound = probBound;
                probBound = t;   /* the deterministic one is then only a ceiling */
            }
        }
        if (pPlan && (pPlan->boundScale != 1.0 || pPlan->extraUlps > 0.0)) {
            double extra = pPlan->extraUlps * parity_ulp_at(pCall->outDtype, mpfr_get_d(ref, MPFR_RNDN));
            bound = bound * pPlan->boundScale + extra;
            if (probBound == probBound) probBound = probBound * pPlan->boundScale + extra;
        }
        /* Where some legal summation order overflows (ops.h), the model's bound does not
         * hold: nothing finite can fail there, which the vacuous count says. */
        if (pCall->overflowPossible) bound = INFINITY;
        rounded = parity_round_to_dtype(ref, pCall->outDtype);
        finiteRef = isfinite(rounded);
        if (bound > pJ->maxBound) pJ->maxBound = bound;
        if (bound == INFINITY) pJ->nVacuous++;
        if (pCall->overflowPossible) pJ->nVacuousOverflow++;

        if (!finiteRef) {
            /* The reference is NaN or overflows the output dtype: only the same special
             * value is right. */
            cOut = !same_special(c, rounded);
            if (aEager) eOut = !same_special(e, rounded);
            /* Policy "lenient": a finite value where the reference is NaN is accepted
             * (fully masked softmax rows returning zeros, for instance). */
            if (pPlan && pPlan->nanLenient && rounded != rounded) {
                if (isfinite(c)) cOut = 0;
                if (aEager && isfinite(e)) eOut = 0;
            }
            if (cOut && pCall->overflowPossible && vacuous_special(pCall, ref, rounded, c)) {
                cOut = 0;
                cAccepted = 1;
                pJ->nOverflowAccepted++;
            }
            ratio = cOut ? INFINITY : 0.0;
            if (cOut) pJ->nNonFinite++;
        } else if (!isfinite(c) && pCall->overflowPossible) {
            /* a reassociated sum may overflow where the exact one does not (ops.h) */
            pJ->nOverflowAccepted++;
            cOut = 0;
            if (aEager) eOut = isfinite(e) && error_vs(scratch, ref, e) > bound;
            ratio = 0.0;
        } else if (!isfinite(c)) {
            cOut = 1;
            if (aEager) eOut = !isfinite(e) || error_vs(scratch, ref, e) > bound;
            ratio = INFINITY;
            pJ->nNonFinite++;
        } else {
            double refD = mpfr_get_d(ref, MPFR_RNDN);
            ulp = parity_ulp_at(pCall->outDtype, refD);
            errC = error_vs(scratch, ref, c);
            cOut = errC > bound;
            if (errC > pJ->maxErrCompiled) pJ->maxErrCompiled = errC;
            if (errC / ulp > pJ->maxUlpCompiled) pJ->maxUlpCompiled = errC / ulp;
            if (aEager) {
                if (!isfinite(e)) {
                    eOut = 1;
                    errE = INFINITY;
                } else {
                    errE = error_vs(scratch, ref, e);
                    eOut = errE > bound;
                    if (errE > pJ->maxErrEager) pJ->maxErrEager = errE;
                    if (errE / ulp > pJ->maxUlpEager) pJ->maxUlpEager = errE / ulp;
                }
            }
            ratio = bound > 0.0 ? errC / bound : (errC > 0.0 ? INFINITY : 0.0);
            /* Within the deciding bound but beyond the probabilistic one: reported. */
            if (!cOut && !pJ->probabilisticDecides && probBound == probBound && errC > probBound)
                pJ->nSuspicious++;
            if (cOut && eOut && errC <= errE) {
                pJ->nBothBeyond++;
                cOut = 0;   /* reported, not failed */
                ratio = ratio > 1.0 ? 1.0 : ratio;
            } else if (cOut) {
                pJ->nCompiledWorse++;
            }
            if (!cOut && eOut && !(errC > bound)) pJ->nEagerWorse++;
            if (!cOut && !eOut) pJ->nWithin++;
        }
        if (!finiteRef || !isfinite(c)) {
            /* Where the bound is vacuous and both sides left the exact value's special
             * value, neither is wrong by the model: reported, never failed. */
            if (cAccepted && eOut) pJ->nBothBeyond++;
            else if (!cOut && eOut) pJ->nEagerWorse++;
            if (!cOut && !eOut) pJ->nWithin++;
        }
        if (ratio > pJ->worstRatio) {
            pJ->worstRatio = ratio;
            pJ->worstLinear = i;
        }
        if (cOut) mark_fail(pCall, i, pJ);
    }
    mpfr_clears(ref, scratch, (mpfr_ptr)0);
    return rc;
}
