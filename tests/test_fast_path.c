/*
 * test_fast_path.c - the judge's fast path (tolerance/judge.h, "Fast path"; ops.h, xFast):
 * a binary64 reference with a stated error, MPFR only where that error leaves the verdict
 * open. Two properties, for every op that has a fast path:
 *
 * 1. Margin: the stated error is at least 2^10 times the worst error measured against the
 *    MPFR reference, over random inputs across the op's range and over its hard regions
 *    (the tails where a composite's condition number peaks, log near 1, exp's and the
 *    logistic's limits, rows of extreme spread for the norms). And the bound the fast path
 *    hands the judge is the one xElement gives, exactly. The worst measured error and the
 *    margin are logged (criterion --verbose) for the README.
 * 2. Equivalence: judging with and without the fast path (plan.noFastPath) gives the same
 *    counts, classes, failing slices and worst index class, and error figures within the
 *    stated error, on random data, special values, and compiled values placed at the bound
 *    to within 2^-45 (where the fast path must hand over to MPFR), with eager or without,
 *    under the tolerance file's scale and extra ulps, on 1 and 3 threads.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpfr.h>

#include "formats/capture.h"
#include "formats/dtype.h"
#include "tolerance/judge.h"
#include "tolerance/mpref.h"
#include "tolerance/ops.h"
#include "support.h"

#define MARGIN 1024.0   /* 2^10: stated error over the worst measured (the rule) */

/* ---- inputs ------------------------------------------------------------------------- */

static double uniform(uint64_t *pS, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(splitmix64(pS) >> 11) * 0x1p-53);
}

/* A float32 value: uniform in [lo, hi] three times in four, else sign * 2^[-40, 10]. */
static double draw(uint64_t *pS, double lo, double hi, int logScale)
{
    double v;
    if (logScale && splitmix64(pS) % 4 == 0) {
        v = exp2(uniform(pS, -40.0, 10.0));
        if (splitmix64(pS) & 1) v = -v;
    } else {
        v = uniform(pS, lo, hi);
    }
    return (double)(float)v;
}

/* One configuration of an op with a fast path: how its inputs are drawn. */
typedef struct {
    const char *zOp;
    const char *zApprox;      /* gelu's approximate, or NULL */
    double lo, hi;            /* random inputs, uniform */
    double hardLo, hardHi;    /* the hard region, uniform */
} unary_case;

static const unary_case kUnaryCases[] = {
    { "gelu", "none", -12, 12, -30, -3 },       /* erfc's tail: conditioning 2 t^2 */
    { "gelu", "tanh", -12, 12, -10, -3 },       /* exp(-2z)'s tail */
    { "silu", NULL, -100, 100, -700, -20 },     /* 1 + e with e huge */
    { "sigmoid", NULL, -100, 100, -700, -20 },
    { "mish", NULL, -100, 100, -700, -20 },     /* softplus near 0 */
    { "tanh", NULL, -20, 20, -1e-3, 1e-3 },
    { "exp", NULL, -100, 88, -700, -80 },       /* results far below float32 */
    { "log", NULL, 1e-30, 100, 0.999, 1.001 },  /* log near 1 */
    { "sqrt", NULL, 0, 1e6, 1e-38, 1e-30 },
    { "rsqrt", NULL, 0, 1e6, 1e-38, 1e-30 },
    { "reciprocal", NULL, -1e6, 1e6, -1e-30, 1e-30 },
    { "erf", NULL, -6, 6, -1e-4, 1e-4 },
    { "neg", NULL, -1e30, 1e30, -1e-38, 1e-38 },
    { "abs", NULL, -1e30, 1e30, -1e-38, 1e-38 },
};
#define N_UNARY (sizeof kUnaryCases / sizeof kUnaryCases[0])

/* Inputs of case pC: n values, the first nHard from the hard region, then specials, then
 * random ones. */
static double *unary_inputs(const unary_case *pC, size_t n, uint64_t seed)
{
    static const double kSpecial[] = { 0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0,
                                       0x1p-149, -0x1p-149, 0x1p-126, 3.4028234663852886e38,
                                       -3.4028234663852886e38, 88.72, -88.72, -103.9, 0.5 };
    double *a = malloc(n * sizeof *a);
    uint64_t s = seed;
    size_t i, nHard = n / 4, nSpecial = sizeof kSpecial / sizeof kSpecial[0];
    cr_assert(a);
    for (i = 0; i < n; i++) {
        if (i < nHard) a[i] = draw(&s, pC->hardLo, pC->hardHi, 0);
        else if (i < nHard + nSpecial) a[i] = kSpecial[i - nHard];
        else a[i] = draw(&s, pC->lo, pC->hi, 1);
    }
    return a;
}

static void begin_unary(parity_op_call *pCall, const unary_case *pC, parity_operand *pIn,
                        double *aX, uint64_t n, parity_dtype out)
{
    uint64_t aDim[1] = { n };
    parity_attr aA[1];
    size_t nA = 0;
    char zErr[256];
    *pIn = op_operand("x", PARITY_DT_F32, 1, aDim, aX);
    if (pC->zApprox) aA[nA++] = attr_str(0, "approximate", pC->zApprox);
    cr_assert_eq(parity_op_begin(pCall, parity_op_find(pC->zOp), pIn, 1, out, 1, aDim,
                                 PARITY_DT_INVALID, aA, nA, zErr, sizeof zErr), 0,
                 "%s: %s", pC->zOp, zErr);
}

/* ---- 1. margin ------------------------------------------------------------------------ */

/* The smallest margin seen by check_margin: stated error / measured error. */
static double g_minMargin;

/* Checks the fast path of every element of pCall against MPFR; returns the worst relative
 * error seen (and the share of elements the fast path took, in *pShare; the smallest
 * margin in g_minMargin). */
static double check_margin(parity_op_call *pCall, const char *zWhat, double *pShare)
{
    mpfr_t ref, d;
    uint64_t i, nFast = 0;
    double worst = 0.0;
    g_minMargin = INFINITY;
    mpfr_inits2(PARITY_REF_PREC, ref, d, (mpfr_ptr)0);
    for (i = 0; i < pCall->nOut; i++) {
        double r, err, bound, spread, slowBound, gap, rel;
        if (!pCall->pDef->xFast(pCall, i, &r, &err, &bound, &spread)) continue;
        nFast++;
        pCall->probBound = NAN;
        pCall->overflowPossible = 0;
        pCall->nonfiniteAny = 0;
        cr_assert_eq(pCall->pDef->xElement(pCall, i, ref, &slowBound), 0);
        cr_assert(mpfr_number_p(ref), "%s: element %llu: fast path where MPFR says %g",
                  zWhat, (unsigned long long)i, mpfr_get_d(ref, MPFR_RNDN));
        cr_assert(!pCall->overflowPossible);
        mpfr_set_d(d, r, MPFR_RNDN);
        mpfr_sub(d, d, ref, MPFR_RNDN);
        gap = fabs(mpfr_get_d(d, MPFR_RNDU));
        cr_assert(gap * MARGIN <= err,
                  "%s: element %llu: the fast reference %.17g is %.3g from MPFR's, more than "
                  "2^-10 of its stated error %.3g", zWhat, (unsigned long long)i, r, gap, err);
        cr_assert(spread == 0.0 ? same_double(bound, slowBound)
                                : fabs(bound - slowBound) <= spread,
                  "%s: element %llu: fast bound %.17g (+- %.3g), MPFR's %.17g", zWhat,
                  (unsigned long long)i, bound, spread, slowBound);
        if (gap > 0 && err / gap < g_minMargin) g_minMargin = err / gap;
        rel = r != 0.0 ? gap / fabs(r) : 0.0;
        if (rel > worst) worst = rel;
    }
    mpfr_clears(ref, d, (mpfr_ptr)0);
    *pShare = pCall->nOut ? (double)nFast / (double)pCall->nOut : 0.0;
    return worst;
}

/* FAST_PATH_SAMPLES=K multiplies the margin test's sample (the figures in the README come
 * from K = 20: 1.2M inputs per function into float32). */
static uint64_t samples_scale(void)
{
    const char *z = getenv("FAST_PATH_SAMPLES");
    long k = z ? atol(z) : 1;
    return k < 1 ? 1 : (uint64_t)k;
}

Test(fast_path, unary_stated_error_keeps_its_margin_over_mpfr)
{
    static const parity_dtype kOut[] = { PARITY_DT_F32, PARITY_DT_BF16, PARITY_DT_F16 };
    size_t k, o;
    for (k = 0; k < N_UNARY; k++) {
        const unary_case *pC = &kUnaryCases[k];
        for (o = 0; o < sizeof kOut / sizeof kOut[0]; o++) {
            const uint64_t n = (o == 0 ? 60000 : 8000) * samples_scale();
            double *aX = unary_inputs(pC, n, 1000 + k * 7 + o), share, worst;
            parity_operand in;
            parity_op_call call;
            char zWhat[64];
            snprintf(zWhat, sizeof zWhat, "%s%s%s -> %s", pC->zOp, pC->zApprox ? " " : "",
                     pC->zApprox ? pC->zApprox : "", parity_dtype_name(kOut[o]));
            begin_unary(&call, pC, &in, aX, n, kOut[o]);
            cr_assert(call.pDef->xFast, "%s has no fast path", pC->zOp);
            worst = check_margin(&call, zWhat, &share);
            /* the fast path is not switched off by accident: most random inputs take it */
            cr_assert(share > 0.6, "%s: only %.1f%% of the inputs took the fast path", zWhat,
                      100.0 * share);
            if (o == 0)
                cr_log_info("%-18s worst fast-path error 2^%.1f relative (stated 2^-32), "
                            "margin 2^%.1f, fast share %.1f%%", zWhat,
                            worst > 0 ? log2(worst) : -INFINITY, log2(g_minMargin),
                            100.0 * share);
            parity_op_end(&call);
            free(aX);
        }
    }
}

/* float64 outputs judge against bounds near binary64's own accuracy: never the fast path
 * (but for the exact neg and abs). */
Test(fast_path, float64_outputs_take_the_mpfr_path)
{
    double aX[3] = { 0.25, -1.5, 3.0 };
    const unary_case *pC = &kUnaryCases[4];   /* mish */
    parity_operand in;
    parity_op_call call;
    double r, err, bound, spread;
    uint64_t aDim[1] = { 3 };
    char zErr[256];
    in = op_operand("x", PARITY_DT_F64, 1, aDim, aX);
    cr_assert_eq(parity_op_begin(&call, parity_op_find(pC->zOp), &in, 1, PARITY_DT_F64, 1, aDim,
                                 PARITY_DT_INVALID, NULL, 0, zErr, sizeof zErr), 0);
    cr_assert_eq(call.pDef->xFast(&call, 1, &r, &err, &bound, &spread), 0);
    parity_op_end(&call);
}

/* ---- 2. equivalence ------------------------------------------------------------------- */

/* How far the fast path's figures may be from MPFR's: the largest stated error over the
 * elements it can take, absolute, in ulps of the output and in bounds (each doubled for the
 * binary64 arithmetic's slack, and at least 2^-40 of the figure). */
typedef struct {
    double abs, ulps, ratio, bound;
    double spreadRel;         /* the bound's own spread, relative */
} figure_slack;

static figure_slack slack_of(const parity_op_call *pCall, const parity_judge_plan *pPlan)
{
    figure_slack f = { 0, 0, 0, 0, 0 };
    uint64_t i;
    for (i = 0; i < pCall->nOut; i++) {
        double r, err, bound, spread;
        if (!pCall->pDef->xFast(pCall, i, &r, &err, &bound, &spread)) continue;
        if (2 * spread > f.bound) f.bound = 2 * spread;
        bound = bound * pPlan->boundScale + pPlan->extraUlps * parity_ulp_at(pCall->outDtype, r);
        if (2 * err > f.abs) f.abs = 2 * err;
        if (2 * err / parity_ulp_at(pCall->outDtype, r) > f.ulps)
            f.ulps = 2 * err / parity_ulp_at(pCall->outDtype, r);
        if (bound > 0 && 2 * err / bound > f.ratio) f.ratio = 2 * err / bound;
        if (bound > 0 && 2 * spread / bound > f.spreadRel) f.spreadRel = 2 * spread / bound;
    }
    return f;
}

/* The judgements with and without the fast path agree: counts and slices exactly, figures
 * within the stated error (pSlack). */
static void expect_same_judgement(const parity_judgement *pF, const parity_judgement *pS,
                                  int rank, const figure_slack *pSlack, const char *zWhat)
{
    int d;
#define SAME(f) cr_assert_eq(pF->f, pS->f, "%s: " #f " fast %llu, mpfr %llu", zWhat, \
                             (unsigned long long)pF->f, (unsigned long long)pS->f)
    SAME(nChecked); SAME(nWithin); SAME(nCompiledWorse); SAME(nEagerWorse); SAME(nBothBeyond);
    SAME(nNonFinite); SAME(nOverflowAccepted); SAME(nOverflowRounded); SAME(nVacuous); SAME(nSuspicious); SAME(nFail);
    SAME(nFailEagerBeyond); SAME(sampled);
#undef SAME
    for (d = 0; d < rank && pF->nFail; d++) {
        cr_assert_eq(pF->aSliceLo[d], pS->aSliceLo[d], "%s: slice", zWhat);
        cr_assert_eq(pF->aSliceHi[d], pS->aSliceHi[d], "%s: slice", zWhat);
    }
#define NEAR(f, tol) cr_assert(pF->f == pS->f || \
                               fabs(pF->f - pS->f) <= (tol) + 0x1p-40 * fabs(pS->f), \
                               "%s: " #f " fast %.17g, mpfr %.17g (slack %.3g)", zWhat, \
                               pF->f, pS->f, (double)(tol))
    NEAR(maxErrCompiled, pSlack->abs); NEAR(maxErrEager, pSlack->abs);
    NEAR(maxUlpCompiled, pSlack->ulps); NEAR(maxUlpEager, pSlack->ulps);
    NEAR(maxRatioCompiled, pSlack->ratio + pSlack->spreadRel * pS->maxRatioCompiled);
    NEAR(maxRatioEager, pSlack->ratio + pSlack->spreadRel * pS->maxRatioEager);
    NEAR(worstRatio, pSlack->ratio + pSlack->spreadRel * pS->worstRatio);
    NEAR(maxBound, pSlack->bound);
#undef NEAR
}

/* Judges (aEager may be NULL) with and without the fast path and compares; returns the
 * fast judgement's slow-path count. */
static uint64_t judge_both_ways(parity_op_call *pCall, const double *aEager,
                                const double *aCompiled, const double *aApprox,
                                const parity_judge_plan *pBase, const char *zWhat)
{
    parity_judge_plan plan = *pBase;
    parity_judgement fast, slow;
    figure_slack slack = slack_of(pCall, pBase);
    char zErr[256];
    plan.noFastPath = 1;
    cr_assert_eq(parity_judge_planned(pCall, aEager, aCompiled, aApprox, &plan, &slow, zErr,
                                      sizeof zErr), 0, "%s", zErr);
    cr_assert_eq(slow.nSlowPath, slow.nChecked);
    plan.noFastPath = 0;
    cr_assert_eq(parity_judge_planned(pCall, aEager, aCompiled, aApprox, &plan, &fast, zErr,
                                      sizeof zErr), 0, "%s", zErr);
    expect_same_judgement(&fast, &slow, pCall->outRank, &slack, zWhat);
    cr_assert(fast.nSlowPath < fast.nChecked / 2, "%s: %llu of %llu took the slow path", zWhat,
              (unsigned long long)fast.nSlowPath, (unsigned long long)fast.nChecked);
    return fast.nSlowPath;
}

/* Eager and compiled values for element i of a call whose reference is ref and bound b:
 * eager the reference rounded to float32 (sometimes a few ulps off, sometimes far), compiled
 * anything from within, to the bound to within 2^-45 on either side, to far beyond, to a
 * non-finite value. */
static void make_sides(uint64_t *pS, double ref, double b, double *pE, double *pC)
{
    double e = (double)(float)ref, c, ulp = parity_ulp_at(PARITY_DT_F32, ref);
    uint64_t kind = splitmix64(pS) % 16;
    if (!isfinite(ref)) {
        *pE = ref;
        *pC = kind < 12 ? ref : (kind < 14 ? 0.0 : NAN);
        return;
    }
    if (kind == 0) e += 40 * ulp;   /* eager beyond too, now and then */
    switch (kind) {
    case 1: case 2: case 3: case 4: {
        /* at the bound, either side, to within 2^-45 relative: MPFR decides */
        double s = splitmix64(pS) & 1 ? 1.0 : -1.0;
        double f = 1.0 + (double)((int)(splitmix64(pS) % 7) - 3) * 0x1p-45;
        c = ref + s * b * f;
        break;
    }
    case 5: c = ref + 3.0 * b + ulp; break;              /* beyond */
    case 6: c = e + 40 * ulp; break;                     /* beyond, maybe like eager */
    case 7: c = e; break;                                /* eager's value */
    case 8: c = splitmix64(pS) & 1 ? INFINITY : NAN; break;
    case 9: c = ref + b * (splitmix64(pS) & 1 ? 0.99 : -0.99); break;
    default: c = e + (double)((int)(splitmix64(pS) % 5) - 2) * ulp; break;
    }
    *pE = e;
    *pC = c;
}

/* Fills aEager and aCompiled for every element of pCall from its MPFR reference. */
static void sides_for_call(parity_op_call *pCall, uint64_t seed, double *aEager,
                           double *aCompiled)
{
    uint64_t i, s = seed;
    for (i = 0; i < pCall->nOut; i++) {
        double ref, bound;
        op_element(pCall, i, &ref, &bound);
        make_sides(&s, ref, bound, &aEager[i], &aCompiled[i]);
    }
}

Test(fast_path, unary_verdicts_are_the_same_with_and_without_it)
{
    size_t k;
    for (k = 0; k < N_UNARY; k++) {
        const unary_case *pC = &kUnaryCases[k];
        const uint64_t n = 12000;
        double *aX = unary_inputs(pC, n, 77 + k);
        double *aE = malloc(n * sizeof *aE), *aC = malloc(n * sizeof *aC);
        parity_operand in;
        parity_op_call call;
        parity_judge_plan plan;
        uint64_t nSlow;
        char zWhat[96];
        cr_assert(aE && aC);
        begin_unary(&call, pC, &in, aX, n, PARITY_DT_F32);
        sides_for_call(&call, 5 + k, aE, aC);
        parity_judge_plan_default(&plan);

        snprintf(zWhat, sizeof zWhat, "%s (eager and compiled)", pC->zOp);
        nSlow = judge_both_ways(&call, aE, aC, NULL, &plan, zWhat);
        /* the values placed at the bound went to MPFR (but for exact ops, whose bound of 0
         * the fast path decides alone) */
        if (strcmp(pC->zOp, "neg") != 0 && strcmp(pC->zOp, "abs") != 0)
            cr_assert(nSlow > n / 40, "%s: only %llu elements went to MPFR", zWhat,
                      (unsigned long long)nSlow);

        snprintf(zWhat, sizeof zWhat, "%s (compiled alone, identical to eager counts as it)",
                 pC->zOp);
        plan.identicalIsEager = 1;
        judge_both_ways(&call, NULL, aC, aE, &plan, zWhat);

        snprintf(zWhat, sizeof zWhat, "%s (3 threads, scale 1.5, 2 extra ulps)", pC->zOp);
        plan.identicalIsEager = 0;
        plan.nThreads = 3;
        plan.boundScale = 1.5;
        plan.extraUlps = 2.0;
        judge_both_ways(&call, aE, aC, NULL, &plan, zWhat);

        parity_op_end(&call);
        free(aX);
        free(aE);
        free(aC);
    }
}

/* The threads split the elements; the result is the one-thread result, however they
 * interleave, including the worst element's index and the failing slice. */
Test(fast_path, threads_do_not_change_the_judgement)
{
    const uint64_t n = 50000;
    const unary_case *pC = &kUnaryCases[6];   /* exp */
    double *aX = unary_inputs(pC, n, 9);
    double *aE = malloc(n * sizeof *aE), *aC = malloc(n * sizeof *aC);
    parity_operand in;
    parity_op_call call;
    parity_judge_plan plan;
    parity_judgement one, many;
    char zErr[256];
    int t;
    cr_assert(aE && aC);
    begin_unary(&call, pC, &in, aX, n, PARITY_DT_F32);
    sides_for_call(&call, 31, aE, aC);
    parity_judge_plan_default(&plan);
    cr_assert_eq(parity_judge_planned(&call, aE, aC, NULL, &plan, &one, zErr, sizeof zErr), 0);
    cr_assert(one.nFail > 0);
    for (t = 2; t <= 7; t += 5) {
        plan.nThreads = t;
        cr_assert_eq(parity_judge_planned(&call, aE, aC, NULL, &plan, &many, zErr, sizeof zErr), 0);
        cr_assert_eq(memcmp(&one, &many, sizeof one), 0, "%d threads judged otherwise", t);
    }
    parity_op_end(&call);
    free(aX);
    free(aE);
    free(aC);
}

/* The dot products' MPFR path runs on the plan's threads (PARITY_OPF_REFERENCE_THREADS):
 * the same judgement, bit for bit, fully verified and sampled, with failing elements,
 * eager beyond the bound now and then, and ties for the worst ratio; the time limit stops
 * every thread, and says so. */
static int stop_third(void *pCtx)
{
    return ++*(int *)pCtx >= 3;
}

Test(fast_path, threaded_reference_judges_as_one_thread)
{
    enum { M = 257, K = 96, N = 70 };
    double *aX = malloc(M * K * sizeof *aX), *aW = malloc(N * K * sizeof *aW), aB[N];
    double *aE = malloc(M * N * sizeof *aE), *aC = malloc(M * N * sizeof *aC);
    uint64_t s = 5, i, aDimX[2] = { M, K }, aDimW[2] = { N, K }, aDimB[1] = { N };
    uint64_t aOut[2] = { M, N };
    int sampled, t;
    cr_assert(aX && aW && aE && aC);
    for (i = 0; i < M * K; i++) aX[i] = draw(&s, -2, 2, 0);
    for (i = 0; i < N * K; i++) aW[i] = draw(&s, -1, 1, 0);
    for (i = 0; i < N; i++) aB[i] = draw(&s, -1, 1, 0);
    for (sampled = 0; sampled < 2; sampled++) {
        parity_operand aIn[3] = { op_operand("x", PARITY_DT_F32, 2, aDimX, aX),
                                  op_operand("w", PARITY_DT_F32, 2, aDimW, aW),
                                  op_operand("b", PARITY_DT_F32, 1, aDimB, aB) };
        parity_op_call call;
        parity_judge_plan plan;
        parity_judgement one, many;
        char zErr[256];
        int nBeat = 0;
        op_begin_ok(&call, "linear", aIn, 3, 2, aOut, NULL, 0);
        sides_for_call(&call, 77 + sampled, aE, aC);
        for (i = 0; i < M * N; i++)   /* a failing block, as a kernel's tail tile would */
            if (i / N >= 100 && i / N < 120 && i % N >= 60) aC[i] = aE[i] + 0.5;
        for (i = 0; i < M * N; i += 97) {   /* eager beyond, compiled at times alike */
            aE[i] += 1.0;
            if (i % 2) aC[i] = aE[i];
        }
        parity_judge_plan_default(&plan);
        if (sampled) {
            plan.budgetTerms = 1000.0;   /* far below M N K: the judgement samples */
            plan.nSample = 2000;
        }
        cr_assert_eq(parity_judge_planned(&call, aE, aC, NULL, &plan, &one, zErr, sizeof zErr), 0,
                     "%s", zErr);
        cr_assert(one.nFail > 0 && one.nEagerWorse + one.nBothBeyond > 0);
        cr_assert_eq(one.sampled, sampled);
        for (t = 2; t <= 5; t += 3) {
            plan.nThreads = t;
            cr_assert_eq(parity_judge_planned(&call, aE, aC, NULL, &plan, &many, zErr,
                                              sizeof zErr), 0, "%s", zErr);
            cr_assert_eq(memcmp(&one, &many, sizeof one), 0, "%d threads%s judged otherwise", t,
                         sampled ? ", sampled," : "");
        }
        plan.nThreads = 2;
        plan.budgetTerms = 1e18;
        plan.xBeat = stop_third;
        plan.pBeatCtx = &nBeat;
        cr_assert_eq(parity_judge_planned(&call, aE, aC, NULL, &plan, &many, zErr, sizeof zErr), -1);
        cr_assert(strstr(zErr, PARITY_JUDGE_TIME_LIMIT) != NULL, "%s", zErr);
        cr_assert_lt(many.nChecked, (uint64_t)M * N);
        parity_op_end(&call);
    }
    free(aX);
    free(aW);
    free(aE);
    free(aC);
}

/* The threaded MPFR path keeps the calling thread judging, and beating, until the work is
 * done, wherever the costly elements lie: here all of them in the last quarter of the
 * output (a failing tail tile; a sample of one otherwise), which a fixed half per thread
 * left to the other thread alone, with no beat for the watchdog. */
static int count_beats(void *pCtx)
{
    ++*(int *)pCtx;
    return 0;
}

Test(fast_path, threaded_reference_beats_wherever_the_work_lies)
{
    enum { M = 2048, K = 32, N = 64 };
    double *aX = malloc(M * K * sizeof *aX), *aW = malloc(N * K * sizeof *aW);
    double *aE = malloc(M * N * sizeof *aE), *aC = malloc(M * N * sizeof *aC);
    uint64_t s = 8, i, aDimX[2] = { M, K }, aDimW[2] = { N, K }, aOut[2] = { M, N };
    parity_operand aIn[2];
    parity_op_call call;
    parity_judge_plan plan;
    parity_judgement j;
    char zErr[256];
    int nBeat = 0;
    cr_assert(aX && aW && aE && aC);
    for (i = 0; i < M * K; i++) aX[i] = draw(&s, -2, 2, 0);
    for (i = 0; i < N * K; i++) aW[i] = draw(&s, -1, 1, 0);
    aIn[0] = op_operand("x", PARITY_DT_F32, 2, aDimX, aX);
    aIn[1] = op_operand("w", PARITY_DT_F32, 2, aDimW, aW);
    op_begin_ok(&call, "linear", aIn, 2, 2, aOut, NULL, 0);
    for (i = 0; i < M * N; i++) {
        double ref, bound;
        op_element(&call, i, &ref, &bound);
        aE[i] = (float)ref;
        aC[i] = i >= 3 * (uint64_t)M * N / 4 ? aE[i] + 0.5 : aE[i];
    }
    parity_judge_plan_default(&plan);
    plan.budgetTerms = 1000.0;   /* selective: the flagged tail, and a sample of one */
    plan.nSample = 1;
    plan.nThreads = 2;
    plan.xBeat = count_beats;
    plan.pBeatCtx = &nBeat;
    cr_assert_eq(parity_judge_planned(&call, aE, aC, NULL, &plan, &j, zErr, sizeof zErr), 0, "%s",
                 zErr);
    cr_assert_geq(j.nFail, (uint64_t)M * N / 4);
    cr_assert_gt(nBeat, 0, "the calling thread judged none of the %llu elements and never beat",
                 (unsigned long long)j.nChecked);
    parity_op_end(&call);
    free(aX);
    free(aW);
    free(aE);
    free(aC);
}

/* The time limit still stops a judgement that the fast path runs (the beat is called from
 * the fast path too). */
static int stop_now(void *pCtx)
{
    return ++*(int *)pCtx >= 2;
}

Test(fast_path, time_limit_stops_the_fast_path)
{
    const uint64_t n = 400000;
    const unary_case *pC = &kUnaryCases[5];   /* tanh */
    double *aX = unary_inputs(pC, n, 3), *aE = malloc(n * sizeof *aE);
    parity_operand in;
    parity_op_call call;
    parity_judge_plan plan;
    parity_judgement j;
    char zErr[256];
    uint64_t i;
    int nBeat = 0;
    cr_assert(aE);
    for (i = 0; i < n; i++) aE[i] = (double)(float)tanh(aX[i]);
    begin_unary(&call, pC, &in, aX, n, PARITY_DT_F32);
    parity_judge_plan_default(&plan);
    plan.xBeat = stop_now;
    plan.pBeatCtx = &nBeat;
    plan.nThreads = 2;
    cr_assert_eq(parity_judge_planned(&call, aE, aE, NULL, &plan, &j, zErr, sizeof zErr), -1);
    cr_assert(strstr(zErr, PARITY_JUDGE_TIME_LIMIT), "%s", zErr);
    parity_op_end(&call);
    free(aX);
    free(aE);
}

/* ---- the row-wise ops: softmax -------------------------------------------------------- */

/* x [nRow, nDim] of rows drawn with spread sigma, some masked elements (-Inf), a fully
 * masked row (NaN out), a row with +Inf (NaN out) and a row of equal values. */
static double *softmax_inputs(uint64_t nRow, uint64_t nDim, uint64_t seed)
{
    double *a = malloc(nRow * nDim * sizeof *a);
    uint64_t s = seed, r, k;
    cr_assert(a);
    for (r = 0; r < nRow; r++) {
        double sigma = r % 3 == 0 ? 1.0 : (r % 3 == 1 ? 6.0 : 40.0), mean = uniform(&s, -50, 50);
        for (k = 0; k < nDim; k++) {
            double v = mean + sigma * (uniform(&s, -1, 1) + uniform(&s, -1, 1) + uniform(&s, -1, 1));
            if (splitmix64(&s) % 17 == 0) v = -INFINITY;
            if (r == 1) v = -INFINITY;
            if (r == 2 && k == 3) v = INFINITY;
            if (r == 4) v = 0.25;
            a[r * nDim + k] = (double)(float)v;
        }
    }
    return a;
}

static void begin_softmax(parity_op_call *pCall, parity_operand *pIn, double *aX, uint64_t nRow,
                          uint64_t nDim, int dim, parity_dtype out)
{
    uint64_t aDim[2] = { nRow, nDim };
    parity_attr aA[1] = { attr_int(0, "dim", dim) };
    char zErr[256];
    *pIn = op_operand("x", PARITY_DT_F32, 2, aDim, aX);
    cr_assert_eq(parity_op_begin(pCall, parity_op_find("softmax"), pIn, 1, out, 2, aDim,
                                 PARITY_DT_INVALID, aA, 1, zErr, sizeof zErr), 0, "%s", zErr);
}

Test(fast_path, softmax_stated_error_keeps_its_margin_over_mpfr)
{
    static const struct { uint64_t nRow, nDim; int dim; parity_dtype out; } kShape[] = {
        { 300, 1024, -1, PARITY_DT_F32 }, { 1000, 7, -1, PARITY_DT_F32 },
        { 64, 300, 0, PARITY_DT_F32 }, { 100, 1024, -1, PARITY_DT_BF16 },
    };
    size_t k;
    for (k = 0; k < sizeof kShape / sizeof kShape[0]; k++) {
        double *aX = softmax_inputs(kShape[k].nRow, kShape[k].nDim, 40 + k), share, worst;
        parity_operand in;
        parity_op_call call;
        char zWhat[64];
        snprintf(zWhat, sizeof zWhat, "softmax [%llu, %llu] dim %d -> %s",
                 (unsigned long long)kShape[k].nRow, (unsigned long long)kShape[k].nDim,
                 kShape[k].dim, parity_dtype_name(kShape[k].out));
        begin_softmax(&call, &in, aX, kShape[k].nRow, kShape[k].nDim, kShape[k].dim,
                      kShape[k].out);
        worst = check_margin(&call, zWhat, &share);
        cr_assert(share > 0.6, "%s: only %.1f%% took the fast path", zWhat, 100.0 * share);
        cr_log_info("%s: worst fast-path error 2^%.1f relative (stated 2^-32), margin "
                    "2^%.1f, fast share %.1f%%", zWhat, log2(worst), log2(g_minMargin),
                    100.0 * share);
        parity_op_end(&call);
        free(aX);
    }
}

Test(fast_path, softmax_verdicts_are_the_same_with_and_without_it)
{
    const uint64_t nRow = 40, nDim = 300;
    double *aX = softmax_inputs(nRow, nDim, 5);
    double *aE = malloc(nRow * nDim * sizeof *aE), *aC = malloc(nRow * nDim * sizeof *aC);
    parity_operand in;
    parity_op_call call;
    parity_judge_plan plan;
    int dim;
    cr_assert(aE && aC);
    for (dim = -1; dim <= 0; dim++) {
        begin_softmax(&call, &in, aX, nRow, nDim, dim, PARITY_DT_F32);
        sides_for_call(&call, 8 + dim, aE, aC);
        parity_judge_plan_default(&plan);
        judge_both_ways(&call, aE, aC, NULL, &plan, "softmax (eager and compiled)");
        plan.identicalIsEager = 1;
        judge_both_ways(&call, NULL, aC, aE, &plan, "softmax (compiled alone)");
        plan.identicalIsEager = 0;
        plan.nThreads = 3;
        plan.boundScale = 0.7;
        plan.extraUlps = 1.0;
        judge_both_ways(&call, aE, aC, NULL, &plan, "softmax (3 threads, scale, ulps)");
        parity_op_end(&call);
    }
    free(aX);
    free(aE);
    free(aC);
}

/* ---- layer_norm ------------------------------------------------------------------------ */

/* x [nRow, nDim]: rows of every spread against their mean, down to |mu| / sigma = 2^20 (the
 * cancellation of the centering), a constant row, a NaN row; weight and bias drawn, one
 * weight 0. */
static void layer_norm_inputs(uint64_t nRow, uint64_t nDim, uint64_t seed, double *aX,
                              double *aW, double *aB)
{
    uint64_t s = seed, r, k;
    for (r = 0; r < nRow; r++) {
        double mean = uniform(&s, -100, 100), sigma = exp2(uniform(&s, -20, 4)) * (fabs(mean) + 1);
        for (k = 0; k < nDim; k++) {
            double v = mean + sigma * (uniform(&s, -1, 1) + uniform(&s, -1, 1));
            if (r == 2) v = 3.5;
            if (r == 3 && k == 5) v = NAN;
            aX[r * nDim + k] = (double)(float)v;
        }
    }
    for (k = 0; k < nDim; k++) {
        aW[k] = (double)(float)uniform(&s, -2, 2);
        aB[k] = (double)(float)uniform(&s, -1, 1);
    }
    aW[1] = 0.0;
}

static void begin_layer_norm(parity_op_call *pCall, parity_operand *aIn, double *aX, double *aW,
                             double *aB, uint64_t nRow, uint64_t nDim, parity_dtype out)
{
    uint64_t aDim[2] = { nRow, nDim }, aDimW[1] = { nDim };
    int64_t aNorm[1] = { (int64_t)nDim };
    parity_attr aA[2] = { attr_ints(0, "normalized_shape", aNorm, 1), attr_float(1, "eps", 1e-5) };
    char zErr[256];
    aIn[0] = op_operand("x", PARITY_DT_F32, 2, aDim, aX);
    aIn[1] = op_operand("weight", PARITY_DT_F32, 1, aDimW, aW);
    aIn[2] = op_operand("bias", PARITY_DT_F32, 1, aDimW, aB);
    cr_assert_eq(parity_op_begin(pCall, parity_op_find("layer_norm"), aIn, 3, out, 2, aDim,
                                 PARITY_DT_INVALID, aA, 2, zErr, sizeof zErr), 0, "%s", zErr);
}

Test(fast_path, layer_norm_stated_error_keeps_its_margin_over_mpfr)
{
    static const struct { uint64_t nRow, nDim; parity_dtype out; } kShape[] = {
        { 200, 1024, PARITY_DT_F32 }, { 2000, 3, PARITY_DT_F32 }, { 100, 512, PARITY_DT_BF16 },
    };
    size_t k;
    for (k = 0; k < sizeof kShape / sizeof kShape[0]; k++) {
        uint64_t n = kShape[k].nRow * kShape[k].nDim;
        double *aX = malloc(n * sizeof *aX), *aW = malloc(kShape[k].nDim * sizeof *aW);
        double *aB = malloc(kShape[k].nDim * sizeof *aB), share, worst;
        parity_operand aIn[3];
        parity_op_call call;
        char zWhat[64];
        cr_assert(aX && aW && aB);
        layer_norm_inputs(kShape[k].nRow, kShape[k].nDim, 60 + k, aX, aW, aB);
        snprintf(zWhat, sizeof zWhat, "layer_norm [%llu, %llu] -> %s",
                 (unsigned long long)kShape[k].nRow, (unsigned long long)kShape[k].nDim,
                 parity_dtype_name(kShape[k].out));
        begin_layer_norm(&call, aIn, aX, aW, aB, kShape[k].nRow, kShape[k].nDim, kShape[k].out);
        worst = check_margin(&call, zWhat, &share);
        cr_assert(share > 0.6, "%s: only %.1f%% took the fast path", zWhat, 100.0 * share);
        cr_log_info("%s: worst fast-path error 2^%.1f of |y| (stated 2^-32 of |d r w| + |y| "
                    "+ |b|), margin 2^%.1f, fast share %.1f%%", zWhat, log2(worst),
                    log2(g_minMargin), 100.0 * share);
        parity_op_end(&call);
        free(aX);
        free(aW);
        free(aB);
    }
}

Test(fast_path, layer_norm_verdicts_are_the_same_with_and_without_it)
{
    const uint64_t nRow = 40, nDim = 256, n = nRow * nDim;
    double *aX = malloc(n * sizeof *aX), aW[256], aB[256];
    double *aE = malloc(n * sizeof *aE), *aC = malloc(n * sizeof *aC);
    parity_operand aIn[3];
    parity_op_call call;
    parity_judge_plan plan;
    cr_assert(aX && aE && aC);
    layer_norm_inputs(nRow, nDim, 6, aX, aW, aB);
    begin_layer_norm(&call, aIn, aX, aW, aB, nRow, nDim, PARITY_DT_F32);
    sides_for_call(&call, 12, aE, aC);
    parity_judge_plan_default(&plan);
    judge_both_ways(&call, aE, aC, NULL, &plan, "layer_norm (eager and compiled)");
    plan.identicalIsEager = 1;
    judge_both_ways(&call, NULL, aC, aE, &plan, "layer_norm (compiled alone)");
    plan.identicalIsEager = 0;
    plan.nThreads = 3;
    plan.boundScale = 2.0;
    plan.extraUlps = 0.5;
    judge_both_ways(&call, aE, aC, NULL, &plan, "layer_norm (3 threads, scale, ulps)");
    parity_op_end(&call);
    free(aX);
    free(aE);
    free(aC);
}

/* ---- binary, data-movement ops and relu ------------------------------------------------- */

/* Runs the margin check and the equivalence checks on a prepared call. */
static void margin_and_equivalence(parity_op_call *pCall, const char *zWhat, uint64_t seed)
{
    double share, *aE = malloc(pCall->nOut * sizeof *aE), *aC = malloc(pCall->nOut * sizeof *aC);
    parity_judge_plan plan;
    cr_assert(aE && aC);
    check_margin(pCall, zWhat, &share);
    cr_assert(share > 0.6, "%s: only %.1f%% took the fast path", zWhat, 100.0 * share);
    cr_log_info("%s: margin 2^%.1f, fast share %.1f%%", zWhat, log2(g_minMargin), 100.0 * share);
    sides_for_call(pCall, seed, aE, aC);
    parity_judge_plan_default(&plan);
    judge_both_ways(pCall, aE, aC, NULL, &plan, zWhat);
    plan.identicalIsEager = 1;
    judge_both_ways(pCall, NULL, aC, aE, &plan, zWhat);
    plan.identicalIsEager = 0;
    plan.nThreads = 3;
    plan.boundScale = 1.25;
    plan.extraUlps = 1.0;
    judge_both_ways(pCall, aE, aC, NULL, &plan, zWhat);
    free(aE);
    free(aC);
}

Test(fast_path, binary_ops_keep_their_margin_and_their_verdicts)
{
    static const char *const azOp[] = { "add", "sub", "mul", "div" };
    const uint64_t nRow = 100, nCol = 97;
    double *aX = malloc(nRow * nCol * sizeof *aX), aY[97];
    uint64_t s = 17, i, aDimX[2] = { nRow, nCol }, aDimY[1] = { nCol };
    size_t k, o;
    cr_assert(aX);
    for (i = 0; i < nRow * nCol; i++) aX[i] = draw(&s, -100, 100, 1);
    for (i = 0; i < nCol; i++) aY[i] = draw(&s, -3, 3, 1);
    aX[5] = INFINITY;
    aX[6] = NAN;
    aX[7] = -aY[7];   /* cancels to 0 in add */
    aY[3] = 0.0;
    for (k = 0; k < 4; k++)
        for (o = 0; o < 3; o++) {
            static const parity_dtype kOut[] = { PARITY_DT_F32, PARITY_DT_BF16, PARITY_DT_F32 };
            parity_operand aIn[2] = { op_operand("x", PARITY_DT_F32, 2, aDimX, aX),
                                      op_operand("y", PARITY_DT_F32, 1, aDimY, aY) };
            parity_attr aA[1] = { attr_float(0, "alpha", 0.5) };
            parity_op_call call;
            char zErr[256], zWhat[64];
            /* o == 2: add and sub with alpha 0.5 (two roundings), the others bfloat16 in */
            if (o == 2 && k >= 2) continue;
            snprintf(zWhat, sizeof zWhat, "%s -> %s%s", azOp[k], parity_dtype_name(kOut[o]),
                     o == 2 ? ", alpha 0.5" : "");
            cr_assert_eq(parity_op_begin(&call, parity_op_find(azOp[k]), aIn, 2, kOut[o], 2, aDimX,
                                         PARITY_DT_INVALID, aA, o == 2 ? 1 : 0, zErr, sizeof zErr),
                         0, "%s", zErr);
            margin_and_equivalence(&call, zWhat, 90 + k * 3 + o);
            parity_op_end(&call);
        }
    free(aX);
}

/* Sums, differences and products of float32 values are exact in binary64: where compiled is
 * one ulp from eager, as a kernel fed inputs an ulp apart gives, its error lies on add's
 * bound (1 ulp) or near mul's, and the exact reference decides those ties as MPFR does
 * without asking it (a tenth of a real transformer's residual adds took MPFR before). */
Test(fast_path, exact_sums_and_products_decide_ties_without_mpfr)
{
    static const char *const azOp[] = { "add", "sub", "mul" };
    const uint64_t n = 4096;
    double *aX = malloc(n * sizeof *aX), *aY = malloc(n * sizeof *aY);
    double *aE = malloc(n * sizeof *aE), *aC = malloc(n * sizeof *aC);
    uint64_t s = 23, i, aDim[1] = { n };
    size_t k;
    cr_assert(aX && aY && aE && aC);
    for (i = 0; i < n; i++) {
        aX[i] = draw(&s, -4, 4, 0);
        aY[i] = draw(&s, -4, 4, 0);
    }
    for (k = 0; k < 3; k++) {
        parity_operand aIn[2] = { op_operand("x", PARITY_DT_F32, 1, aDim, aX),
                                  op_operand("y", PARITY_DT_F32, 1, aDim, aY) };
        parity_op_call call;
        parity_judge_plan plan;
        uint64_t nSlow, nTie = 0;
        op_begin_ok(&call, azOp[k], aIn, 2, 1, aDim, NULL, 0);
        for (i = 0; i < n; i++) {
            double exact = k == 0 ? aX[i] + aY[i] : k == 1 ? aX[i] - aY[i] : aX[i] * aY[i];
            double ref, bound;
            float e = (float)exact;
            aE[i] = e;
            aC[i] = nextafterf(e, i % 2 ? INFINITY : -INFINITY);
            op_element(&call, i, &ref, &bound);
            nTie += fabs(aC[i] - ref) == bound;
        }
        parity_judge_plan_default(&plan);
        nSlow = judge_both_ways(&call, aE, aC, NULL, &plan, azOp[k]);
        cr_expect_eq(nSlow, 0, "%s: %llu of %llu elements took MPFR", azOp[k],
                     (unsigned long long)nSlow, (unsigned long long)n);
        if (k < 2) cr_expect_gt(nTie, n / 4, "%s: only %llu ties", azOp[k], (unsigned long long)nTie);
        parity_op_end(&call);
    }
    free(aX);
    free(aY);
    free(aE);
    free(aC);
}

Test(fast_path, data_movement_and_relu_are_exact_on_the_fast_path)
{
    const uint64_t nA = 20, nB = 30, nC = 7, n = nA * nB * nC;
    double *aX = malloc(n * sizeof *aX);
    uint64_t s = 5, i, aDim[3] = { nA, nB, nC };
    cr_assert(aX);
    for (i = 0; i < n; i++) aX[i] = draw(&s, -10, 10, 1);
    aX[3] = NAN;
    aX[4] = -INFINITY;
    aX[5] = -0.0;
    {
        parity_operand in = op_operand("x", PARITY_DT_F32, 3, aDim, aX);
        parity_op_call call;
        char zErr[256];
        uint64_t aT[3] = { nA, nC, nB }, aR[2] = { nA * nB, nC }, aS[2] = { nA, nC };
        int64_t aShape[2] = { (int64_t)(nA * nB), (int64_t)nC };
        parity_attr aTr[2] = { attr_int(0, "dim0", 1), attr_int(1, "dim1", 2) };
        parity_attr aRe[1] = { attr_ints(2, "shape", aShape, 2) };
        parity_attr aSe[2] = { attr_int(3, "dim", 1), attr_int(4, "index", 4) };

        cr_assert_eq(parity_op_begin(&call, parity_op_find("transpose"), &in, 1, PARITY_DT_F32,
                                     3, aT, PARITY_DT_INVALID, aTr, 2, zErr, sizeof zErr), 0, "%s", zErr);
        margin_and_equivalence(&call, "transpose", 1);
        parity_op_end(&call);
        cr_assert_eq(parity_op_begin(&call, parity_op_find("reshape"), &in, 1, PARITY_DT_F32,
                                     2, aR, PARITY_DT_INVALID, aRe, 1, zErr, sizeof zErr), 0, "%s", zErr);
        margin_and_equivalence(&call, "reshape", 2);
        parity_op_end(&call);
        cr_assert_eq(parity_op_begin(&call, parity_op_find("select"), &in, 1, PARITY_DT_F32,
                                     2, aS, PARITY_DT_INVALID, aSe, 2, zErr, sizeof zErr), 0, "%s", zErr);
        margin_and_equivalence(&call, "select", 3);
        parity_op_end(&call);
        cr_assert_eq(parity_op_begin(&call, parity_op_find("relu"), &in, 1, PARITY_DT_BF16,
                                     3, aDim, PARITY_DT_INVALID, NULL, 0, zErr, sizeof zErr), 0, "%s", zErr);
        margin_and_equivalence(&call, "relu -> bfloat16", 4);
        parity_op_end(&call);
    }
    free(aX);
}

/* ---- attention ---------------------------------------------------------------------------- */

Test(fast_path, attention_keeps_its_margin_and_its_verdicts)
{
    enum { B = 2, H = 3, L = 24, S = 24, E = 16, EV = 8 };
    static double aQ[B * H * L * E], aK[B * H * S * E], aV[B * H * S * EV], aM[L * S];
    uint64_t s = 23, i, aDimQ[4] = { B, H, L, E }, aDimK[4] = { B, H, S, E };
    uint64_t aDimV[4] = { B, H, S, EV }, aDimO[4] = { B, H, L, EV }, aDimM[2] = { L, S };
    int variant;
    for (i = 0; i < sizeof aQ / sizeof aQ[0]; i++) aQ[i] = draw(&s, -2, 2, 0);
    for (i = 0; i < sizeof aK / sizeof aK[0]; i++) aK[i] = draw(&s, -2, 2, 0);
    for (i = 0; i < sizeof aV / sizeof aV[0]; i++) aV[i] = draw(&s, -3, 3, 0);
    for (i = 0; i < L * S; i++) aM[i] = i % 7 == 0 ? -INFINITY : draw(&s, -1, 1, 0);
    aK[5] *= 60.0;   /* a score far above its row: weights down to e^-100 */
    for (variant = 0; variant < 3; variant++) {
        parity_operand aIn[4] = { op_operand("q", PARITY_DT_F32, 4, aDimQ, aQ),
                                  op_operand("k", PARITY_DT_F32, 4, aDimK, aK),
                                  op_operand("v", PARITY_DT_F32, 4, aDimV, aV),
                                  op_operand("m", PARITY_DT_F32, 2, aDimM, aM) };
        parity_attr aA[1] = { attr_int(0, "is_causal", 1) };
        parity_op_call call;
        char zErr[256];
        static const char *const azWhat[] = { "sdpa", "sdpa causal", "sdpa float mask" };
        cr_assert_eq(parity_op_begin(&call, parity_op_find("scaled_dot_product_attention"), aIn,
                                     variant == 2 ? 4 : 3, PARITY_DT_F32, 4, aDimO,
                                     PARITY_DT_INVALID, aA, variant == 1 ? 1 : 0, zErr,
                                     sizeof zErr), 0, "%s", zErr);
        margin_and_equivalence(&call, azWhat[variant], 40 + variant);
        parity_op_end(&call);
    }
}

/* The per-thread rows are keyed by the call's generation, not its address: two one-row
 * calls in the same place, with different values, each get their own row (the clean
 * campaign's seed 2 caught a stale row from the previous case). */
Test(fast_path, attention_rows_are_not_reused_across_calls)
{
    double aQ[4], aK[8], aV[2];
    uint64_t aDimQ[2] = { 1, 4 }, aDimK[2] = { 2, 4 }, aDimV[2] = { 2, 1 }, aDimO[2] = { 1, 1 };
    int round;
    for (round = 0; round < 2; round++) {
        parity_operand aIn[3];
        parity_op_call call;
        char zErr[256];
        double share;
        int i;
        for (i = 0; i < 4; i++) aQ[i] = round ? -1.5 + i : 0.25 * i;
        for (i = 0; i < 8; i++) aK[i] = round ? 0.5 * i - 2.0 : 1.0 - 0.125 * i;
        aV[0] = round ? 3.0 : -1.0;
        aV[1] = round ? -2.0 : 0.5;
        aIn[0] = op_operand("q", PARITY_DT_F32, 2, aDimQ, aQ);
        aIn[1] = op_operand("k", PARITY_DT_F32, 2, aDimK, aK);
        aIn[2] = op_operand("v", PARITY_DT_F32, 2, aDimV, aV);
        cr_assert_eq(parity_op_begin(&call, parity_op_find("scaled_dot_product_attention"), aIn,
                                     3, PARITY_DT_F32, 2, aDimO, PARITY_DT_INVALID, NULL, 0, zErr,
                                     sizeof zErr), 0, "%s", zErr);
        check_margin(&call, round ? "second call" : "first call", &share);
        cr_assert_eq(share, 1.0);
        parity_op_end(&call);
    }
}

/* ---- log_softmax, logsumexp, rms_norm -------------------------------------------------- */

/* softmax_inputs' rows, and (nRow >= 10) the log-sum's hard rows: a maximum that dominates
 * (the others 30 below: s - 1 near 1e-10), one unmasked element (L = 0 exactly), terms that
 * vanish in binary64 (1000 below: the MPFR path's), subnormal terms (740 below), a repeated
 * maximum. */
static double *log_softmax_inputs(uint64_t nRow, uint64_t nDim, uint64_t seed)
{
    double *a = softmax_inputs(nRow, nDim, seed);
    uint64_t k;
    if (nRow < 10) return a;
    for (k = 0; k < nDim; k++) {
        a[5 * nDim + k] = k == 0 ? 0.0 : -30.0;
        a[6 * nDim + k] = k == 2 ? 3.0 : -INFINITY;
        a[7 * nDim + k] = k == 1 ? 2.0 : -998.0;
        a[8 * nDim + k] = k == 0 ? 10.0 : -730.0;
        a[9 * nDim + k] = k % 3 == 0 ? 7.5 : (double)(float)(7.5 - 0.01 * (double)k);
    }
    return a;
}

Test(fast_path, log_softmax_and_logsumexp_keep_their_margin_and_their_verdicts)
{
    static const struct { uint64_t nRow, nDim; int dim; parity_dtype out; } kShape[] = {
        { 300, 1024, -1, PARITY_DT_F32 }, { 1000, 7, -1, PARITY_DT_F32 },
        { 64, 300, 0, PARITY_DT_F32 }, { 100, 1024, -1, PARITY_DT_BF16 },
    };
    size_t k, o;
    for (k = 0; k < sizeof kShape / sizeof kShape[0]; k++)
        for (o = 0; o < 2; o++) {
            const char *zOp = o ? "logsumexp" : "log_softmax";
            uint64_t nRow = kShape[k].nRow, nDim = kShape[k].nDim;
            uint64_t aDim[2] = { nRow, nDim }, aOut[1] = { kShape[k].dim == 0 ? nDim : nRow };
            double *aX = log_softmax_inputs(nRow, nDim, 70 + k);
            parity_attr aA[1] = { attr_int(0, "dim", kShape[k].dim) };
            parity_operand in = op_operand("x", PARITY_DT_F32, 2, aDim, aX);
            parity_op_call call;
            char zErr[256], zWhat[64];
            snprintf(zWhat, sizeof zWhat, "%s [%llu, %llu] dim %d -> %s", zOp,
                     (unsigned long long)nRow, (unsigned long long)nDim, kShape[k].dim,
                     parity_dtype_name(kShape[k].out));
            cr_assert_eq(parity_op_begin(&call, parity_op_find(zOp), &in, 1, kShape[k].out,
                                         o ? 1 : 2, o ? aOut : aDim, PARITY_DT_INVALID, aA, 1,
                                         zErr, sizeof zErr), 0, "%s: %s", zWhat, zErr);
            margin_and_equivalence(&call, zWhat, 110 + k * 2 + o);
            parity_op_end(&call);
            free(aX);
        }
}

/* x [nRow, nDim]: rows of scale 2^-60 to 2^60, a zero row, a NaN row, a row with an
 * infinity, a row whose sum of squares overflows float32 (MPFR's, overflowPossible), rows
 * with subnormal float32 values; the weight drawn, one weight 0 and one negative zero. */
static void rms_norm_inputs(uint64_t nRow, uint64_t nDim, uint64_t seed, double *aX, double *aW)
{
    uint64_t s = seed, r, k;
    for (r = 0; r < nRow; r++) {
        double scale = exp2(uniform(&s, -60, 60));
        for (k = 0; k < nDim; k++) {
            double v = scale * (uniform(&s, -1, 1) + uniform(&s, -1, 1));
            if (r == 1) v = 0.0;
            if (r == 2 && k == 3) v = NAN;
            if (r == 3 && k == 1) v = -INFINITY;
            if (r == 4) v = 1e20 * uniform(&s, 0.5, 1);
            if (r == 5) v = 0x1p-140 * uniform(&s, -1, 1);
            aX[r * nDim + k] = (double)(float)v;
        }
    }
    for (k = 0; k < nDim; k++) aW[k] = (double)(float)uniform(&s, -2, 2);
    aW[1] = 0.0;
    if (nDim > 2) aW[2] = -0.0;
}

Test(fast_path, rms_norm_keeps_its_margin_and_its_verdicts)
{
    static const struct { uint64_t nRow, nDim; double eps; int weight; parity_dtype out; } kShape[] = {
        { 200, 1024, 1e-6, 1, PARITY_DT_F32 }, { 2000, 3, 1e-6, 1, PARITY_DT_F32 },
        { 300, 64, 0.0, 0, PARITY_DT_F32 }, { 100, 512, 1e-5, 1, PARITY_DT_BF16 },
    };
    size_t k;
    for (k = 0; k < sizeof kShape / sizeof kShape[0]; k++) {
        uint64_t nRow = kShape[k].nRow, nDim = kShape[k].nDim, n = nRow * nDim;
        uint64_t aDim[2] = { nRow, nDim }, aDimW[1] = { nDim };
        int64_t aNorm[1] = { (int64_t)nDim };
        double *aX = malloc(n * sizeof *aX), *aW = malloc(nDim * sizeof *aW);
        parity_attr aA[2] = { attr_ints(0, "normalized_shape", aNorm, 1),
                              attr_float(1, "eps", kShape[k].eps) };
        parity_operand aIn[2];
        parity_op_call call;
        char zErr[256], zWhat[64];
        cr_assert(aX && aW);
        rms_norm_inputs(nRow, nDim, 80 + k, aX, aW);
        aIn[0] = op_operand("x", PARITY_DT_F32, 2, aDim, aX);
        aIn[1] = op_operand("weight", PARITY_DT_F32, 1, aDimW, aW);
        snprintf(zWhat, sizeof zWhat, "rms_norm [%llu, %llu] eps %g%s -> %s",
                 (unsigned long long)nRow, (unsigned long long)nDim, kShape[k].eps,
                 kShape[k].weight ? "" : " (no weight)", parity_dtype_name(kShape[k].out));
        cr_assert_eq(parity_op_begin(&call, parity_op_find("rms_norm"), aIn,
                                     kShape[k].weight ? 2 : 1, kShape[k].out, 2, aDim,
                                     PARITY_DT_INVALID, aA, 2, zErr, sizeof zErr), 0,
                     "%s: %s", zWhat, zErr);
        margin_and_equivalence(&call, zWhat, 120 + k);
        parity_op_end(&call);
        free(aX);
        free(aW);
    }
}
