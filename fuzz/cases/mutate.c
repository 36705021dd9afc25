/*
 * mutate.c - building specs from scratch and changing them one step at a time.
 */
#include <string.h>
#include "fuzz/cases/cases.h"

/* dtypes a case may have: float32 most, the 16-bit formats compilers special-case next,
 * float64 as the control. fp8 is left out: the builtin kernels have no fp8 path. */
static const parity_dtype aDtype[] = { PARITY_DT_F32, PARITY_DT_F32, PARITY_DT_F32,
                                       PARITY_DT_BF16, PARITY_DT_BF16, PARITY_DT_F16,
                                       PARITY_DT_F16, PARITY_DT_F64 };
#define N_DTYPE (sizeof aDtype / sizeof aDtype[0])

int parity_spec_dtype_drawable(parity_dtype dt)
{
    size_t i;
    for (i = 0; i < N_DTYPE; i++)
        if (aDtype[i] == dt) return 1;
    return 0;
}

void parity_spec_restrict_dtypes(parity_rng *pRng, parity_case_spec *pSpec, uint32_t allowed)
{
    parity_dtype aAllowed[N_DTYPE];
    size_t i, n = 0;
    if (allowed & (1u << pSpec->dtype)) return;
    for (i = 0; i < N_DTYPE; i++)
        if (allowed & (1u << aDtype[i])) aAllowed[n++] = aDtype[i];
    if (n) pSpec->dtype = aAllowed[parity_rng_below(pRng, n)];
}

static void draw_recipe(parity_rng *pRng, parity_value_recipe *pR)
{
    pR->kind = parity_rng_one_in(pRng, 3) ? PARITY_VAL_NORMAL
                                          : (uint8_t)parity_rng_below(pRng, PARITY_VAL_ONES);
    pR->scaleLog2 = parity_rng_one_in(pRng, 2) ? 0
                                               : (int8_t)((int)parity_rng_below(pRng, 41) - 20);
}

/* Is the case within the bounds, and within maxElems per tensor and maxWork? (Layout
 * errors other than size count as not fitting.) */
static int fits(const parity_case_spec *pSpec, uint64_t maxElems, uint64_t maxWork)
{
    parity_case c;
    char zErr[PARITY_ERR_LEN];
    size_t i;
    int ok;
    if (parity_case_layout(pSpec, &c, zErr, sizeof zErr) != 0) return 0;
    ok = c.nOut <= maxElems && parity_case_work(&c) <= maxWork;
    for (i = 0; i < c.nIn; i++) ok &= c.aIn[i].nElem <= maxElems;
    parity_case_free(&c);
    return ok;
}

/* Most cases are small: a compiler's rare path needs one long dim, not a big tensor, and
 * small cases keep exec/s high. A budget of 2^8 to 2^20 elements, three in four at most
 * 2^13. */
static void draw_budget(parity_rng *pRng, uint64_t *pMaxElems, uint64_t *pMaxWork)
{
    unsigned k = 8 + (unsigned)parity_rng_below(pRng, 13);
    if (!parity_rng_one_in(pRng, 4) && k > 13) k = 13;
    *pMaxElems = (uint64_t)1 << k;
    *pMaxWork = (uint64_t)1 << (k + 4);
}

/* Halves dims until the case fits. The budget (maxElems, maxWork) binds the other dims
 * only: reduction and dot-product lengths give way just to the hard bounds of cases.h, so
 * a long K with small M and N, the case worth keeping, survives a small budget. */
static int fit_within(parity_case_spec *pSpec, uint64_t maxElems, uint64_t maxWork)
{
    const parity_layout_info *pInfo = parity_layout_find(pSpec->zOp);
    int tries, d;
    if (!pInfo) return -1;
    for (tries = 0; tries < 64; tries++) {
        int iShort = -1, iLong = -1, iBig;
        int hardOk = fits(pSpec, PARITY_CASE_MAX_ELEMS, PARITY_CASE_MAX_WORK);
        for (d = 0; d < pInfo->nDim; d++) {
            int isLong = pInfo->aRole[d] == PARITY_ROLE_REDUCE || pInfo->aRole[d] == PARITY_ROLE_K;
            int *piBig = isLong ? &iLong : &iShort;
            if (pSpec->aDim[d] <= 1) continue;
            if (*piBig < 0 || pSpec->aDim[d] > pSpec->aDim[*piBig]) *piBig = d;
        }
        if (hardOk && (iShort < 0 || fits(pSpec, maxElems, maxWork))) return 0;
        iBig = iShort >= 0 ? iShort : iLong;
        if (iBig < 0) return -1;     /* every dim is 1 and it still does not fit */
        pSpec->aDim[iBig] = (pSpec->aDim[iBig] + 1) / 2;
    }
    return -1;
}

int parity_spec_fit(parity_case_spec *pSpec)
{
    return fit_within(pSpec, PARITY_CASE_MAX_ELEMS, PARITY_CASE_MAX_WORK);
}

int parity_spec_generate(parity_rng *pRng, const char *zOp, parity_strategy strategy,
                         parity_case_spec *pSpec)
{
    const parity_layout_info *pInfo = parity_layout_find(zOp);
    int d, i, tries;
    if (!pInfo) return -1;
    for (tries = 0; tries < (strategy == PARITY_STRATEGY_BASELINE ? 1001 : 64); tries++) {
        memset(pSpec, 0, sizeof *pSpec);
        strncpy(pSpec->zOp, zOp, sizeof pSpec->zOp - 1);
        pSpec->nDim = pInfo->nDim;
        pSpec->variant = (uint32_t)parity_rng_below(pRng, pInfo->nVariant);
        pSpec->dtype = aDtype[parity_rng_below(pRng, N_DTYPE)];
        pSpec->seed = parity_rng_next(pRng);
        if (strategy == PARITY_STRATEGY_BASELINE) {
            /* fp64 is no compiler's fast path; a naive fuzzer tests the three others */
            if (pSpec->dtype == PARITY_DT_F64) pSpec->dtype = PARITY_DT_F32;
            for (d = 0; d < pInfo->nDim; d++) pSpec->aDim[d] = 1 + parity_rng_below(pRng, 4096);
            for (i = 0; i < PARITY_CASE_MAX_IN; i++) {
                pSpec->aRecipe[i].kind = PARITY_VAL_NORMAL;
                pSpec->aRecipe[i].scaleLog2 = 0;
            }
            /* Rejection keeps the draw uniform over the cases that fit; ops with many
             * dims (bmm, conv2d, attention) almost never fit, and after 1000 draws those
             * are halved into the bounds instead. */
            if (fits(pSpec, PARITY_CASE_MAX_ELEMS, PARITY_CASE_MAX_WORK)) return 0;
            if (tries >= 1000 && parity_spec_fit(pSpec) == 0) return 0;
            continue;
        }
        for (d = 0; d < pInfo->nDim; d++) pSpec->aDim[d] = parity_draw_dim(pRng, pInfo->aRole[d]);
        for (i = 0; i < PARITY_CASE_MAX_IN; i++) draw_recipe(pRng, &pSpec->aRecipe[i]);
        {
            uint64_t maxElems, maxWork;
            draw_budget(pRng, &maxElems, &maxWork);
            if (fit_within(pSpec, maxElems, maxWork) == 0) return 0;
        }
    }
    return -1;
}

/* One dim nudged the way dynamic shapes move: +-1, +-2, doubled, halved, to 1, or
 * redrawn for its role. */
static void nudge_dim(parity_rng *pRng, const parity_layout_info *pInfo, parity_case_spec *pSpec)
{
    int d = (int)parity_rng_below(pRng, (uint64_t)pInfo->nDim);
    uint64_t v = pSpec->aDim[d];
    switch (parity_rng_below(pRng, 7)) {
    case 0: v = v + 1; break;
    case 1: v = v > 1 ? v - 1 : v + 1; break;
    case 2: v = v + 2; break;
    case 3: v = v * 2; break;
    case 4: v = v > 1 ? v / 2 : 2; break;
    case 5: v = 1; break;
    default: v = parity_draw_dim(pRng, pInfo->aRole[d]); break;
    }
    pSpec->aDim[d] = v;
}

int parity_spec_mutate(parity_rng *pRng, parity_case_spec *pSpec)
{
    const parity_layout_info *pInfo = parity_layout_find(pSpec->zOp);
    parity_case_spec next;
    int tries;
    if (!pInfo) return -1;
    for (tries = 0; tries < 8; tries++) {
        next = *pSpec;
        switch (parity_rng_below(pRng, 8)) {
        case 0: case 1: case 2:
            nudge_dim(pRng, pInfo, &next);
            break;
        case 3:
            next.variant = (uint32_t)parity_rng_below(pRng, pInfo->nVariant);
            break;
        case 4:
            next.dtype = aDtype[parity_rng_below(pRng, N_DTYPE)];
            break;
        case 5: case 6:
            draw_recipe(pRng, &next.aRecipe[parity_rng_below(pRng, PARITY_CASE_MAX_IN)]);
            break;
        default:
            next.seed = parity_rng_next(pRng);
            break;
        }
        if (parity_spec_fit(&next) == 0) {
            *pSpec = next;
            return 0;
        }
    }
    return -1;
}
