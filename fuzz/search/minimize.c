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
