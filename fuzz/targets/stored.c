/*
 * stored.c - the replay target: both sides of a case are what a capture pair stored, cut
 * to the crop being tried (fuzz/cases/stored.c). Nothing runs; the oracle judges the stored
 * compiled output against the registry's reference of the stored inputs, which is how an
 * investigation's local cause is minimized without the compiler that produced it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/alloc.h"
#include "fuzz/targets/targets.h"

typedef struct {
    parity_target base;
    const parity_stored_crop *pCrop;   /* what the next run returns */
} stored_target;

static parity_run_status stored_run(parity_target *pT, parity_side side,
                                    const parity_case *pCase, double *aOut, char *zErr,
                                    size_t nErr)
{
    const parity_stored_crop *pCrop = ((stored_target *)pT)->pCrop;
    if (!pCrop || pCrop->c.nOut != pCase->nOut) {
        snprintf(zErr, nErr, "the replay target has no stored output for this case");
        return PARITY_RUN_ERROR;
    }
    memcpy(aOut, side == PARITY_SIDE_EAGER ? pCrop->aEager : pCrop->aCompiled,
           pCase->nOut * sizeof *aOut);
    return PARITY_RUN_OK;
}

static int stored_supports(parity_target *pT, const char *zOp)
{
    (void)pT;
    (void)zOp;
    return 1;
}

static void stored_close(parity_target *pT)
{
    free(pT);
}

parity_target *parity_target_stored_open(char *zErr, size_t nErr)
{
    stored_target *pT = parity_calloc(1, sizeof *pT);
    if (!pT) {
        snprintf(zErr, nErr, "out of memory");
        return NULL;
    }
    pT->base.zName = "stored";
    pT->base.xRun = stored_run;
    pT->base.xSupports = stored_supports;
    pT->base.xClose = stored_close;
    return &pT->base;
}

void parity_target_stored_serve(parity_target *pT, const parity_stored_crop *pCrop)
{
    ((stored_target *)pT)->pCrop = pCrop;
}
