/*
 * minimize.c - shrinking findings (the order of the passes and why is in search.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fuzz/search/search.h"
#include "formats/alloc.h"

/* Same class, and for divergences the same kind: a NaN finding must not turn into a
 * rounding finding while it shrinks. */
static int same_finding(const parity_oracle_result *pA, const parity_oracle_result *pB)
{
    if (pA->cls != pB->cls) return 0;
    if (pA->cls != PARITY_FINDING_DIVERGES) return 1;
    return (pA->judgement.nNonFinite > 0) == (pB->judgement.nNonFinite > 0);
}

int parity_reproduces(parity_target *pT, const parity_case *pCase,
                      const parity_oracle_result *pWant, double *aEager, double *aCompiled,
                      parity_oracle_result *pR)
{
    if (parity_oracle_run(pT, pCase, aEager, aCompiled, pR) != 0) return 0;
    return same_finding(pWant, pR);
}

typedef struct {
    parity_target *pT;
    const parity_oracle_result *pWant;
    uint64_t budget, nExecs;
    double deadline;          /* CLOCK_MONOTONIC seconds; 0: none */
    int expired;              /* the deadline passed (sticky: every later check agrees) */
} min_ctx;

/* Spent: the exec budget is used up, or the deadline passed. */
static int spent(min_ctx *pCtx)
{
    if (pCtx->nExecs >= pCtx->budget || pCtx->expired) return 1;
    if (pCtx->deadline > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        pCtx->expired = (double)ts.tv_sec + ts.tv_nsec * 1e-9 >= pCtx->deadline;
    }
    return pCtx->expired;
}

/* Expands pSpec and checks it; on success *pCase holds it (caller frees). */
static int try_spec(min_ctx *pCtx, const parity_case_spec *pSpec, parity_case *pCase)
{
    char zErr[PARITY_ERR_LEN];
    double *aE, *aC;
    parity_oracle_result r;
    int ok;
    if (spent(pCtx)) return 0;
    if (parity_case_expand(pSpec, pCase, zErr, sizeof zErr) != 0) return 0;
    aE = parity_malloc((pCase->nOut ? pCase->nOut : 1) * sizeof *aE);
    aC = parity_malloc((pCase->nOut ? pCase->nOut : 1) * sizeof *aC);
    pCtx->nExecs++;
    ok = aE && aC && parity_reproduces(pCtx->pT, pCase, pCtx->pWant, aE, aC, &r);
    free(aE);
    free(aC);
    if (!ok) parity_case_free(pCase);
    return ok;
}

static int try_spec_only(min_ctx *pCtx, const parity_case_spec *pSpec)
{
    parity_case c;
    if (!try_spec(pCtx, pSpec, &c)) return 0;
    parity_case_free(&c);
    return 1;
}

/* Pass 1: simpler recipes, one input at a time. Returns 1 when something changed. */
static int simplify_recipes(min_ctx *pCtx, parity_case_spec *pSpec, size_t nIn)
{
    static const parity_value_recipe aSimple[] = {
        { PARITY_VAL_ONES, 0 }, { PARITY_VAL_INTS, 0 }, { PARITY_VAL_NORMAL, 0 },
    };
    size_t i, k;
    int changed = 0;
    for (i = 0; i < nIn; i++) {
        for (k = 0; k < sizeof aSimple / sizeof aSimple[0]; k++) {
            parity_case_spec next = *pSpec;
            if (pSpec->aRecipe[i].kind == aSimple[k].kind &&
                pSpec->aRecipe[i].scaleLog2 == aSimple[k].scaleLog2)
                break;      /* already this simple: nothing simpler after it either */
            next.aRecipe[i] = aSimple[k];
            if (try_spec_only(pCtx, &next)) {
                *pSpec = next;
                changed = 1;
                break;
            }
        }
    }
    return changed;
}

/* Pass 2: one dim down by halving steps; returns 1 when it moved. */
static int shrink_dim(min_ctx *pCtx, parity_case_spec *pSpec, int d)
{
    int moved = 0;
    uint64_t step = pSpec->aDim[d] / 2;
    while (pSpec->aDim[d] > 1 && !spent(pCtx)) {
        parity_case_spec next = *pSpec;
        if (step == 0) step = 1;
        next.aDim[d] = pSpec->aDim[d] - step;
        if (next.aDim[d] >= 1 && try_spec_only(pCtx, &next)) {
            *pSpec = next;
            moved = 1;
            step = pSpec->aDim[d] / 2;
            continue;
        }
        if (step == 1) break;     /* d - 1 failed to reproduce: 1-minimal */
        step /= 2;
    }
    return moved;
}

/* Pass 3: sets blocks of stored values to 1 while the finding holds. */
static void simplify_values(min_ctx *pCtx, parity_case *pCase)
{
    size_t i;
    double *aE = parity_malloc((pCase->nOut ? pCase->nOut : 1) * sizeof *aE);
    double *aC = parity_malloc((pCase->nOut ? pCase->nOut : 1) * sizeof *aC);
    if (!aE || !aC) goto done;
    for (i = 0; i < pCase->nIn; i++) {
        parity_operand *pIn = &pCase->aIn[i];
        uint64_t block, start, k;
        double *aSaved = parity_malloc((pIn->nElem ? pIn->nElem : 1) * sizeof *aSaved);
        if (!aSaved) break;
        for (block = pIn->nElem / 2; block >= 1 && !spent(pCtx); block /= 2) {
            for (start = 0; start < pIn->nElem && !spent(pCtx); start += block) {
                uint64_t end = start + block < pIn->nElem ? start + block : pIn->nElem;
                int any = 0;
                parity_oracle_result r;
                for (k = start; k < end; k++) any |= pIn->aValue[k] != 1.0;
                if (!any) continue;
                memcpy(aSaved + start, pIn->aValue + start, (end - start) * sizeof *aSaved);
                for (k = start; k < end; k++) pIn->aValue[k] = 1.0;
                pCtx->nExecs++;
                if (parity_reproduces(pCtx->pT, pCase, pCtx->pWant, aE, aC, &r)) {
                    pCase->fromStore = 1;
                } else {
                    memcpy(pIn->aValue + start, aSaved + start, (end - start) * sizeof *aSaved);
                }
            }
            if (block == 1) break;
            if (pIn->nElem / block > 64) break;   /* finer blocks cost more than they tell */
        }
        free(aSaved);
    }
done:
    free(aE);
    free(aC);
}

/* The coordinate along output dim d of linear output index k. */
static uint64_t out_coord(const parity_case *pCase, uint64_t k, int d)
{
    int e;
    for (e = pCase->outRank - 1; e > d; e--) k /= pCase->aOutDim[e];
    return k % pCase->aOutDim[d];
}

/* Crop axis k of pCase cut to [lo, lo + len), the others whole, as a case of its own: the
 * layout of the spec with the dim that axis follows set to len (the spec dim whose layout
 * makes exactly the cut shapes), filled with the kept values. 1 when it reproduces (then
 * *pCase is it and *pWorst its worst element), else 0 and pCase untouched. */
static int try_crop(min_ctx *pCtx, parity_case *pCase, const parity_crop_axis *aAxis, int nAxis,
                    int k, uint64_t lo, uint64_t len, uint64_t *pWorst)
{
    uint64_t aLo[PARITY_MAX_RANK], aLen[PARITY_MAX_RANK];
    uint64_t full = pCase->aOutDim[aAxis[k].outAxis];
    char zErr[PARITY_ERR_LEN];
    int j, d;
    for (j = 0; j < nAxis; j++) {
        aLo[j] = 0;
        aLen[j] = pCase->aOutDim[aAxis[j].outAxis];
    }
    aLo[k] = lo;
    aLen[k] = len;
    for (d = 0; d < pCase->spec.nDim && !spent(pCtx); d++) {
        parity_case_spec spec = pCase->spec;
        parity_case next;
        parity_oracle_result r;
        double *aE, *aC;
        size_t i;
        int same, ok;
        if (!((pCase->usedDims >> d) & 1) || spec.aDim[d] != full) continue;
        spec.aDim[d] = len;
        if (parity_case_layout(&spec, &next, zErr, sizeof zErr) != 0) continue;
        same = next.nIn == pCase->nIn && next.outRank == pCase->outRank;
        for (i = 0; same && i < next.nIn; i++) {
            parity_operand cut;
            if (parity_case_crop_input(pCase, aAxis, nAxis, (int)i, &pCase->aIn[i], aLo, aLen,
                                       &cut) != 0) {
                same = 0;
                break;
            }
            same = cut.rank == next.aIn[i].rank &&
                   memcmp(cut.aDim, next.aIn[i].aDim, (size_t)cut.rank * sizeof *cut.aDim) == 0;
            if (same) next.aIn[i].aValue = cut.aValue;
            else free(cut.aValue);
        }
        for (j = 0; same && j < next.outRank; j++)
            same = next.aOutDim[j] == (j == aAxis[k].outAxis ? len : pCase->aOutDim[j]);
        if (!same) {
            parity_case_free(&next);
            continue;    /* this spec dim shapes more than the axis: another may not */
        }
        next.fromStore = 1;
        aE = parity_malloc((next.nOut ? next.nOut : 1) * sizeof *aE);
        aC = parity_malloc((next.nOut ? next.nOut : 1) * sizeof *aC);
        pCtx->nExecs++;
        ok = aE && aC && parity_reproduces(pCtx->pT, &next, pCtx->pWant, aE, aC, &r) &&
             r.judged;
        free(aE);
        free(aC);
        if (!ok) {
            parity_case_free(&next);
            return 0;
        }
        parity_case_free(pCase);
        *pCase = next;
        for (i = 0; i < pCase->nIn; i++) pCase->aIn[i].zName = pCase->azInName[i];
        *pWorst = r.judgement.worstLinear;
        return 1;
    }
    return 0;
}

/* Pass 4, once the values are stored: each crop axis (an output dim whose elements read
 * one index of their inputs, stored.c) is cut around the worst element with the values
 * kept: the element alone, else windows ending or starting at it that double in length.
 * Pass 2 cannot do this: a smaller spec dim draws new values, and the value that failed
 * may not be among them, so an elementwise op failing at the last of 92 elements kept all
 * 92 and triage took the long dim for a trigger. Cuts are kept only as cases the layout
 * makes (try_crop), so signature and triage read the cut case's own dims. */
static void crop_kept_values(min_ctx *pCtx, parity_case *pCase)
{
    parity_crop_axis aAxis[PARITY_MAX_RANK];
    parity_oracle_result r;
    char zErr[PARITY_ERR_LEN];
    uint64_t worst;
    double *aE = parity_malloc((pCase->nOut ? pCase->nOut : 1) * sizeof *aE);
    double *aC = parity_malloc((pCase->nOut ? pCase->nOut : 1) * sizeof *aC);
    int ok, nAxis, k;
    if (spent(pCtx)) {
        free(aE);
        free(aC);
        return;
    }
    pCtx->nExecs++;
    ok = aE && aC && parity_reproduces(pCtx->pT, pCase, pCtx->pWant, aE, aC, &r) && r.judged;
    free(aE);
    free(aC);
    if (!ok) return;
    worst = r.judgement.worstLinear;
restart:
    nAxis = parity_case_crop_axes(pCase, aAxis, zErr, sizeof zErr);
    for (k = 0; k < nAxis && !spent(pCtx); k++) {
        uint64_t full = pCase->aOutDim[aAxis[k].outAxis], len;
        uint64_t w = out_coord(pCase, worst, aAxis[k].outAxis);
        for (len = 1; len < full && !spent(pCtx); len *= 2) {
            uint64_t loStart = w + len <= full ? w : full - len;   /* [w, w + len) */
            uint64_t loEnd = w + 1 >= len ? w + 1 - len : 0;       /* [w + 1 - len, w + 1) */
            if (try_crop(pCtx, pCase, aAxis, nAxis, k, loStart, len, &worst) ||
                (loEnd != loStart && try_crop(pCtx, pCase, aAxis, nAxis, k, loEnd, len, &worst)))
                goto restart;    /* the axes of the smaller case (a dim of 1 is none) */
        }
    }
}

int parity_minimize(parity_target *pT, const parity_case_spec *pSpec,
                    const parity_oracle_result *pFirst, uint64_t budget, double deadline,
                    parity_minimized *pMin, char *zErr, size_t nErr)
{
    min_ctx ctx = { pT, pFirst, budget, 0, 0, 0 };   /* the first check runs whatever the time */
    parity_case_spec spec = *pSpec;
    parity_case probe;
    int round, d, changed;
    uint64_t n;

    memset(pMin, 0, sizeof *pMin);
    if (parity_case_layout(&spec, &probe, zErr, nErr) != 0) return -1;
    n = probe.nIn;
    parity_case_free(&probe);
    if (!try_spec_only(&ctx, &spec)) {
        snprintf(zErr, nErr, "the finding does not reproduce from its spec (flaky target?)");
        return -1;
    }
    ctx.deadline = deadline;
    for (round = 0; round < 4; round++) {
        changed = simplify_recipes(&ctx, &spec, (size_t)n);
        for (;;) {
            int moved = 0;
            uint32_t used;
            if (parity_case_layout(&spec, &probe, zErr, nErr) != 0) return -1;
            used = probe.usedDims;
            parity_case_free(&probe);
            for (d = 0; d < spec.nDim; d++)
                if ((used >> d) & 1) moved |= shrink_dim(&ctx, &spec, d);
            if (!moved) break;
            changed = 1;
        }
        if (!changed || spent(&ctx)) break;
    }
    pMin->minimal = !spent(&ctx);
    if (!try_spec(&ctx, &spec, &pMin->minimized)) {
        ctx.budget = ctx.nExecs + 1;     /* one more, whatever the budget and the time */
        ctx.deadline = 0;
        ctx.expired = 0;
        if (!try_spec(&ctx, &spec, &pMin->minimized)) {
            snprintf(zErr, nErr, "the minimized case stopped reproducing (flaky target?)");
            return -1;
        }
    }
    simplify_values(&ctx, &pMin->minimized);
    if (pFirst->cls == PARITY_FINDING_DIVERGES) crop_kept_values(&ctx, &pMin->minimized);
    pMin->aEager = parity_malloc((pMin->minimized.nOut ? pMin->minimized.nOut : 1) * sizeof(double));
    pMin->aCompiled = parity_malloc((pMin->minimized.nOut ? pMin->minimized.nOut : 1) * sizeof(double));
    if (!pMin->aEager || !pMin->aCompiled ||
        !parity_reproduces(pT, &pMin->minimized, pFirst, pMin->aEager, pMin->aCompiled,
                           &pMin->result)) {
        snprintf(zErr, nErr, "the minimized case stopped reproducing (flaky target?)");
        parity_minimized_free(pMin);
        return -1;
    }
    pMin->nExecs = ctx.nExecs + 1;
    return 0;
}

void parity_minimized_free(parity_minimized *pMin)
{
    parity_case_free(&pMin->minimized);
    free(pMin->aEager);
    free(pMin->aCompiled);
    pMin->aEager = pMin->aCompiled = NULL;
}
