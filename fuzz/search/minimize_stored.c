/*
 * minimize_stored.c - shrinking a captured op's failure against a replay of its stored
 * tensors (the order of the steps and why is in search.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/alloc.h"
#include "fuzz/search/search.h"

typedef struct {
    const parity_stored_op *pS;
    parity_target *pT;
    const parity_oracle_result *pWant;
    uint64_t budget, nExecs;
} stored_ctx;

/* 1 when the crop of windows (aLo, aLen) reproduces the wanted finding. */
static int crop_reproduces(stored_ctx *pCtx, const uint64_t *aLo, const uint64_t *aLen)
{
    parity_stored_crop crop;
    parity_oracle_result r;
    char zErr[PARITY_ERR_LEN];
    double *aE, *aC;
    int ok;
    if (pCtx->nExecs >= pCtx->budget) return 0;
    if (parity_stored_crop_make(pCtx->pS, aLo, aLen, &crop, zErr, sizeof zErr) != 0) return 0;
    aE = parity_malloc((crop.c.nOut ? crop.c.nOut : 1) * sizeof *aE);
    aC = parity_malloc((crop.c.nOut ? crop.c.nOut : 1) * sizeof *aC);
    pCtx->nExecs++;
    parity_target_stored_serve(pCtx->pT, &crop);
    ok = aE && aC && parity_reproduces(pCtx->pT, &crop.c, pCtx->pWant, aE, aC, &r);
    parity_target_stored_serve(pCtx->pT, NULL);
    free(aE);
    free(aC);
    parity_stored_crop_free(&crop);
    return ok;
}

/* One crop axis down by halving steps, cutting from the end and then from the start,
 * restarting after every success; 1 when it moved. Like shrink_dim (minimize.c) with a
 * window instead of a prefix: the failing elements can be anywhere along the axis. */
static int shrink_window(stored_ctx *pCtx, uint64_t *aLo, uint64_t *aLen, int k)
{
    int moved = 0;
    uint64_t step = aLen[k] / 2;
    while (aLen[k] > 1 && pCtx->nExecs < pCtx->budget) {
        int side;
        if (step == 0) step = 1;
        for (side = 0; side < 2; side++) {
            uint64_t lo = aLo[k], len = aLen[k];
            aLen[k] = len - step;
            if (side == 1) aLo[k] = lo + step;
            if (crop_reproduces(pCtx, aLo, aLen)) break;
            aLo[k] = lo;
            aLen[k] = len;
        }
        if (side < 2) {
            moved = 1;
            step = aLen[k] / 2;
            continue;
        }
        if (step == 1) break;     /* one shorter at either end fails: 1-minimal */
        step /= 2;
    }
    return moved;
}

int parity_minimize_stored(const parity_stored_op *pS, uint64_t budget,
                           parity_stored_minimized *pMin, char *zErr, size_t nErr)
{
    uint64_t aLo[PARITY_MAX_RANK], aLen[PARITY_MAX_RANK], aIdx[PARITY_MAX_RANK];
    parity_stored_crop whole;
    stored_ctx ctx;
    double *aE = NULL, *aC = NULL;
    int k, moved, rc = -1;

    memset(pMin, 0, sizeof *pMin);
    memset(&ctx, 0, sizeof ctx);
    ctx.pS = pS;
    ctx.budget = budget;
    ctx.pWant = &pMin->first;
    if (!(ctx.pT = parity_target_stored_open(zErr, nErr))) return -1;
    for (k = 0; k < pS->nAxis; k++) {
        aLo[k] = 0;
        aLen[k] = pS->whole.aOutDim[pS->aAxis[k].outAxis];
    }
    /* the whole op first: the finding to keep (a local cause judged by the differ, seen
     * again by the oracle, or not: then there is nothing to shrink) */
    if (parity_stored_crop_make(pS, aLo, aLen, &whole, zErr, nErr) != 0) goto done;
    aE = parity_malloc((whole.c.nOut ? whole.c.nOut : 1) * sizeof *aE);
    aC = parity_malloc((whole.c.nOut ? whole.c.nOut : 1) * sizeof *aC);
    parity_target_stored_serve(ctx.pT, &whole);
    if (!aE || !aC || parity_oracle_run(ctx.pT, &whole.c, aE, aC, &pMin->first) != 0) {
        snprintf(zErr, nErr, "the whole op could not be judged: %s",
                 aE && aC ? pMin->first.zDetail : "out of memory");
        parity_stored_crop_free(&whole);
        goto done;
    }
    ctx.nExecs = 1;
    if (pMin->first.cls != PARITY_FINDING_DIVERGES) {
        parity_stored_crop_free(&whole);
        rc = 1;
        goto done;
    }
    /* the worst element alone, when one index of every crop axis shows it (the common
     * case: elements along a crop axis are independent by construction) */
    parity_unravel(pS->whole.outRank, pS->whole.aOutDim, pMin->first.judgement.worstLinear, aIdx);
    parity_stored_crop_free(&whole);
    {
        uint64_t aOneLo[PARITY_MAX_RANK], aOne[PARITY_MAX_RANK];
        for (k = 0; k < pS->nAxis; k++) {
            aOneLo[k] = aIdx[pS->aAxis[k].outAxis];
            aOne[k] = 1;
        }
        if (pS->nAxis > 0 && crop_reproduces(&ctx, aOneLo, aOne)) {
            memcpy(aLo, aOneLo, sizeof aLo);
            memcpy(aLen, aOne, sizeof aLen);
        }
    }
    do {
        moved = 0;
        for (k = 0; k < pS->nAxis; k++) moved |= shrink_window(&ctx, aLo, aLen, k);
    } while (moved && ctx.nExecs < ctx.budget);
    pMin->minimal = ctx.nExecs < ctx.budget;
    /* the result, judged once more, whatever the budget */
    if (parity_stored_crop_make(pS, aLo, aLen, &pMin->crop, zErr, nErr) != 0) goto done;
    free(aE);
    free(aC);
    aE = parity_malloc((pMin->crop.c.nOut ? pMin->crop.c.nOut : 1) * sizeof *aE);
    aC = parity_malloc((pMin->crop.c.nOut ? pMin->crop.c.nOut : 1) * sizeof *aC);
    parity_target_stored_serve(ctx.pT, &pMin->crop);
    ctx.nExecs++;
    if (!aE || !aC || !parity_reproduces(ctx.pT, &pMin->crop.c, &pMin->first, aE, aC,
                                         &pMin->result)) {
        snprintf(zErr, nErr, "the minimized crop stopped reproducing: %s", pMin->result.zDetail);
        parity_stored_crop_free(&pMin->crop);
        goto done;
    }
    if (parity_stored_check_crop(pS, &pMin->crop, &pMin->nRefDiffer, zErr, nErr) != 0) {
        parity_stored_crop_free(&pMin->crop);
        goto done;
    }
    if (pMin->nRefDiffer > 0) {
        snprintf(zErr, nErr, "the crop changes the op's reference at %llu of %llu elements: "
                 "the crop rule of family %s is wrong for this op",
                 (unsigned long long)pMin->nRefDiffer, (unsigned long long)pMin->crop.c.nOut,
                 parity_op_family_name(pS->whole.pDef->family));
        parity_stored_crop_free(&pMin->crop);
        goto done;
    }
    rc = 0;
done:
    pMin->nExecs = ctx.nExecs;
    free(aE);
    free(aC);
    parity_target_close(ctx.pT);
    return rc;
}

void parity_stored_minimized_free(parity_stored_minimized *pMin)
{
    parity_stored_crop_free(&pMin->crop);
}
