/*
 * judge.h - judging a tensor against its op's reference and error bound.
 *
 * For each output element: the reference r and bound B from the op (ops.h); the compiled
 * error |c - r| and eager error |e - r|. Classes (per element, summed per tensor):
 *   within          neither side beyond B
 *   compiled_worse  compiled beyond B and worse than eager (or eager within): a failure
 *   eager_worse     eager beyond B, compiled within (compiled is closer to the truth)
 *   both_beyond     both beyond B, compiled not worse: reported, not a failure, since the
 *                   model or both kernels deserve a look
 * Fast path: ops with xFast (ops.h) give a binary64 reference with a stated error; where
 * the compiled and eager errors are farther from the bound than that error (and from each
 * other, when both are beyond), the element is decided without MPFR, with the same class;
 * elsewhere MPFR decides (Ziv's strategy: J.-M. Muller et al., Handbook of Floating-Point
 * Arithmetic, 2nd ed., 2018, 10.5). The error figures of fast-path elements are within the
 * stated error of MPFR's; counts, classes and slices are the same (tests/test_fast_path.c).
 * Non-finite values: the reference, rounded to the output dtype, decides. A compiled
 * NaN/Inf where that is finite, or a compiled finite value where it is NaN/Inf, or the
 * wrong infinity, is a non-finite divergence and fails; the same on the eager side counts
 * as eager_worse.
 */
#ifndef PARITY_JUDGE_H
#define PARITY_JUDGE_H

#include "tolerance/ops.h"

typedef struct {
    int sampled;                   /* 0: every element was checked; 1: selective (below) */
    uint64_t nFlagged;             /* checked because eager and compiled disagree too much */
    uint64_t nSampled;             /* checked because the deterministic sample drew them */
    uint64_t nChecked;
    uint64_t nSlowPath;            /* of those, the ones whose verdict MPFR decided: all of
                                    * them for ops without a fast path (ops.h, xFast) */
    uint64_t nWithin, nCompiledWorse, nEagerWorse, nBothBeyond;
    uint64_t nNonFinite;           /* compiled non-finite divergences (failures) */
    uint64_t nOverflowAccepted;    /* compiled values off the reference's special value, or
                                    * non-finite where it is finite, accepted because a legal
                                    * summation order overflows there (ops.h, judge.c's
                                    * vacuous_nonfinite) */
    uint64_t nOverflowRounded;     /* of the compiled infinities where the reference is
                                    * finite, those accepted because a value within the bound
                                    * rounds to them in the output dtype (judge.c,
                                    * overflow_within_bound); each also in nOverflowAccepted */
    uint64_t nVacuous;             /* checked elements whose bound is infinite (n u >= 1, say):
                                    * nothing finite can fail there, which must be said */
    uint64_t nVacuousOverflow;     /* of those, the ones where a legal summation order
                                    * overflows acc_dtype (ops.h, overflowPossible) */
    uint64_t nSuspicious;          /* compiled within the deterministic bound but beyond the
                                    * probabilistic one (ops that have one), or with
                                    * suspectOverEager, beyond the plan's tolerance from
                                    * eager and that many times eager's error: reported only */
    double suspectOverEager, suspectAtol, suspectRtol;   /* the plan's (0: the probabilistic
                                                          * rule only) */
    int eagerScaled;               /* set by the caller: the bound was capped at a multiple
                                    * of eager's own error (paritydiff's loose fused regions) */
    int hasProbabilistic;          /* the op provided a probabilistic bound */
    int probabilisticDecides;      /* the tolerance file made it the failing bound */
    double lambda;
    uint64_t nFail;                /* nCompiledWorse + nNonFinite */
    uint64_t nFailEagerBeyond;     /* of those, the ones where eager is beyond the bound too
                                    * (with nBothBeyond: how often eager breaks it where
                                    * compiled does; a capture whose metadata misdescribes
                                    * the op makes both sides break it alike) */
    uint64_t nEagerNonFinite;      /* eager beyond it with a NaN or an infinity on one side
                                    * of the comparison (its value or the reference's): no
                                    * bound slightly too tight for a real kernel explains one */
    double maxErrCompiled, maxErrEager;   /* absolute, against the reference (finite) */
    double maxUlpCompiled, maxUlpEager;   /* in ulps of the output dtype at the reference */
    double maxRatioCompiled, maxRatioEager;   /* largest error / bound of each side (finite
                                    * errors; an ulp figure near 0 is huge and says little) */
    double maxBound;
    double worstRatio;             /* largest compiled error / bound; -1 when nothing checked */
    uint64_t worstLinear;          /* lowest index attaining it */
    uint64_t aSliceLo[PARITY_MAX_RANK], aSliceHi[PARITY_MAX_RANK];  /* failing box */
} parity_judgement;

/* How far beyond its bound eager must be before it counts as proven wrong: a bound a
 * little tight for a real kernel leaves eager just past it (torch 2.15's vectorized GELU
 * at x = 0.0302 is 2.3x past: tests/test_semantic.c, both_beyond), and calling that wrong
 * on every capture holding such a value would be noise. 8x is beyond any such margin the
 * registry has met; torch 2.15's bfloat16 conv2d of output width 1 is 695x past, a tanh
 * GELU recorded without "approximate" about 1,000x. */
#define PARITY_EAGER_WRONG_RATIO 8.0

/* 1 when pJ proves the eager side wrong: beyond the bound somewhere, and by at least
 * PARITY_EAGER_WRONG_RATIO, with a NaN or an infinity, or at all for an exact op (every
 * bound 0). paritydiff warns on it (diff/semantic.c) and campaigns count it
 * (eager_beyond_bound): a kernel both sides share is invisible to the differential. */
int parity_judgement_eager_wrong(const parity_judgement *pJ);

/* Judges every output element of pCall. aEager may be NULL (only the compiled side is
 * judged: eager errors stay 0 and classes reduce to within / compiled_worse). Returns 0,
 * or -1 with a reason. */
int parity_judge(parity_op_call *pCall, const double *aEager, const double *aCompiled,
                 parity_judgement *pJ, char *zErr, size_t nErr);

/* Selective verification of large outputs. When the op has an envelope (ops.h) and
 * nOut * cost exceeds budgetTerms, only these elements get the exact reference:
 *   - flagged: an element where compiled and aApprox (the eager output) differ by more than
 *     twice the envelope, or either is non-finite: there at least one side is beyond its
 *     bound, so nothing that can fail is skipped on the compiled-vs-eager evidence;
 *   - sampled: a deterministic pseudo-random sample of about nSample elements (a hash of
 *     the index and seed), which catches a bug both sides share.
 * Other elements count as unchecked; pJ->sampled says so. */
typedef struct {
    double budgetTerms;            /* full verification up to this many reference terms */
    uint64_t nSample;
    uint64_t seed;
    /* Overrides from the tolerance file (tolfile.h); 1, 0, 0 keep the model as it is. */
    double boundScale;             /* every bound is multiplied by this */
    double lambda;                 /* of the probabilistic bound (PARITY_DEFAULT_LAMBDA) */
    int probabilistic;             /* the probabilistic bound decides failure */
    double extraUlps;              /* and grows by this many ulps of the output dtype */
    int nanLenient;                /* a finite compiled value where the reference is NaN passes */
    /* A second "suspicious" rule, for bounds that are sound but loose (a fused region's,
     * propagated through many ops, can be thousands of times the error a correct kernel
     * makes): an element within the bound is suspicious where compiled is beyond
     * suspectAtol + suspectRtol |e| from eager and its error against the reference is more
     * than suspectOverEager times eager's. 0 turns it off (the default). */
    double suspectOverEager, suspectAtol, suspectRtol;
    /* The fuzzer's question is "is compiled worse than eager": an element where the two
     * are bit-identical cannot be, so with this set it is not checked (and counts as
     * unchecked, pJ->sampled set). Needs aEager. */
    int skipIdentical;
    /* Judging the compiled side alone (aEager NULL) against a reference from its own
     * inputs: an element bit-identical to aApprox (eager's output) is judged as if eager
     * were given, so where both break the bound it is both_beyond, never a failure. A
     * compiled value that equals eager's cannot diverge from it; the bound broken is the
     * model's or both kernels' (README, "Judgement"). */
    int identicalIsEager;
    /* Called every PARITY_JUDGE_BEAT_ELEMS checked elements (NULL: never): a long healthy
     * judgement is not a hung reader to a supervisor, and a non-zero return stops the
     * judgement with the error "time limit reached while judging" (--timeout). */
    int (*xBeat)(void *pCtx);
    void *pBeatCtx;
    /* Threads for the fast path (ops with xFast): 0 or 1 judges on the calling thread.
     * The elements MPFR must decide are judged afterwards on the calling thread, in
     * increasing order, whatever the count; ops flagged PARITY_OPF_REFERENCE_THREADS
     * (ops.h) run their whole MPFR path on these threads instead. Either way the
     * judgement is the same, bit for bit, on any count. */
    int nThreads;
    /* Every element through xElement (MPFR), as if the op had no fast path: the tests'
     * judge of record. */
    int noFastPath;
} parity_judge_plan;

#define PARITY_JUDGE_BEAT_ELEMS 256   /* ~10 ms of the costliest reference (GELU, 43 us) */
#define PARITY_JUDGE_TIME_LIMIT "time limit reached while judging"

/* The plan paritydiff uses unless the tolerance file says otherwise. */
void parity_judge_plan_default(parity_judge_plan *pPlan);

#define PARITY_JUDGE_BUDGET_TERMS 6.7e7    /* ~2 s of exact dot products on this machine */
#define PARITY_JUDGE_SAMPLE 8192

int parity_judge_planned(parity_op_call *pCall, const double *aEager, const double *aCompiled,
                         const double *aApprox, const parity_judge_plan *pPlan,
                         parity_judgement *pJ, char *zErr, size_t nErr);

#endif
