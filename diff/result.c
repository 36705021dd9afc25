/*
 * result.c - building and freeing a parity_diff_result (result_internal.h): copies of
 * strings, lists and attributes with sticky out-of-memory flags.
 */
#include <stdlib.h>
#include <string.h>
#include "diff/result_internal.h"
#include "formats/alloc.h"

char *parity_result_dup(int *pOom, const char *z)
{
    char *zCopy;
    if (!z) return NULL;
    zCopy = parity_strdup(z);
    if (!zCopy) *pOom = 1;
    return zCopy;
}

void parity_result_push(int *pOom, char ***pazList, size_t *pn, const char *z)
{
    char **azNew = parity_realloc(*pazList, (*pn + 1) * sizeof(char *));
    char *zCopy;
    if (!azNew) {
        *pOom = 1;
        return;
    }
    *pazList = azNew;
    zCopy = parity_result_dup(pOom, z);
    if (zCopy) azNew[(*pn)++] = zCopy;
}

void parity_result_set(int *pOom, char **pz, const char *z)
{
    free(*pz);
    *pz = parity_result_dup(pOom, z);
}

static void free_strings(char **az, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) free(az[i]);
    free(az);
}

/* Each copy is checked; a partial copy stays freeable (free_attrs reads n per attribute,
 * and an array that was not made is NULL with n 0). */
void parity_result_copy_attrs(int *pOom, const parity_attr *aSrc, size_t n,
                              parity_attr **paDst)
{
    parity_attr *aDst = parity_calloc(n ? n : 1, sizeof(parity_attr));
    size_t i, k;
    *paDst = aDst;
    if (!aDst) {
        *pOom = 1;
        return;
    }
    for (i = 0; i < n; i++) {
        const parity_attr *s = &aSrc[i];
        parity_attr *d = &aDst[i];
        *d = *s;
        d->zName = parity_result_dup(pOom, s->zName);
        d->azStr = NULL;
        d->aInt = NULL;
        d->aFloat = NULL;
        if (s->azStr) {
            d->azStr = parity_calloc(s->n ? s->n : 1, sizeof(char *));
            if (!d->azStr) *pOom = 1;
            else for (k = 0; k < s->n; k++) d->azStr[k] = parity_result_dup(pOom, s->azStr[k]);
        }
        if (s->aInt) {
            d->aInt = parity_malloc((s->n ? s->n : 1) * sizeof(int64_t));
            if (!d->aInt) *pOom = 1;
            else memcpy(d->aInt, s->aInt, s->n * sizeof(int64_t));
        }
        if (s->aFloat) {
            d->aFloat = parity_malloc((s->n ? s->n : 1) * sizeof(double));
            if (!d->aFloat) *pOom = 1;
            else memcpy(d->aFloat, s->aFloat, s->n * sizeof(double));
        }
        if ((s->azStr && !d->azStr) || (s->aInt && !d->aInt) || (s->aFloat && !d->aFloat))
            d->n = 0;   /* nothing to free inside */
    }
}

static void free_attrs(parity_attr *aAttr, size_t n)
{
    size_t i;
    if (!aAttr) return;
    for (i = 0; i < n; i++) {
        free(aAttr[i].zName);
        if (aAttr[i].azStr) free_strings(aAttr[i].azStr, aAttr[i].n);
        free(aAttr[i].aInt);
        free(aAttr[i].aFloat);
    }
    free(aAttr);
}

int parity_result_oom(const parity_diff_result *pRes)
{
    size_t k;
    if (pRes->oom) return 1;
    for (k = 0; k < pRes->nTensor; k++)
        if (pRes->aTensor[k].oom) return 1;
    return 0;
}

void parity_diff_result_free(parity_diff_result *pRes)
{
    size_t k;
    for (k = 0; k < pRes->nTensor; k++) {
        parity_tensor_result *pR = &pRes->aTensor[k];
        free(pR->zName);
        free(pR->zOp);
        free(pR->zMessage);
        free(pR->zModelNote);
        free_strings(pR->azWarning, pR->nWarning);
        free_strings(pR->azRegionOp, pR->nRegionOp);
        free_strings(pR->azRegionInput, pR->nRegionInput);
    }
    free(pRes->aTensor);
    free(pRes->zEagerFile);
    free(pRes->zCompiledFile);
    free(pRes->zFirstDivergence);
    free(pRes->zError);
    free_strings(pRes->azInputDiffers, pRes->nInputDiffers);
    free_attrs(pRes->aEagerRoot, pRes->nEagerRoot);
    free_attrs(pRes->aCompiledRoot, pRes->nCompiledRoot);
    free_strings(pRes->azIdentityDiffers, pRes->nIdentityDiffers);
    free_strings(pRes->azWarning, pRes->nWarning);
    memset(pRes, 0, sizeof *pRes);
}
