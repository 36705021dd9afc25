/*
 * compare.c - judging a tensor pair element by element, in bounded memory, on all cores.
 *
 * Per element (e = eager, c = compiled), special values first:
 *   exact tolerance (inputs, integers, bool): fail iff the stored bits differ;
 *   NaN vs NaN: equal (0 ulps); NaN or Inf on one side only, or Inf vs -Inf: a NaN/Inf
 *   pattern mismatch, fails, kept out of the error figures;
 *   -0 vs +0: 0 ulps apart, a mismatch only with signedZeros;
 *   otherwise the error figures below, and fail iff parity_tolerance_score > 1.
 * Error figures: |c - e|; relative error |c - e| / max(|e|, smallest normal of the dtype),
 * so values near zero (and subnormals) do not explode; ULP distance in the tensor's own
 * dtype via ordered-integer keys (formats/dtype.h); relative L2 over finite pairs.
 *
 * Memory: two slabs per side (double buffering, source.c) plus per-block decode scratch on
 * the stack, whatever the tensor's size. Threads: HDF5 reads are serialised by the
 * library's global lock, so the calling thread fetches slab k+1 while worker threads judge
 * slab k; raw contiguous data is mapped instead of read, and faulted in by the workers.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "diff/compare_internal.h"
#include "diff/compare_f32_internal.h"
#include "tolerance/mpref.h"
#include "diff/source_internal.h"
#include "formats/alloc.h"

#define BATCH 512                      /* elements decoded at a time (stack scratch) */
#define BLOCK_ELEMS (1u << 16)         /* elements per work unit merged in order */
#define INLINE_LIMIT (1u << 18)        /* tensors below this are judged inline */
#define DEFAULT_SLAB_BYTES (8u << 20)  /* per side, per slab */

void parity_cmp_stats_init(parity_tensor_stats *pStats)
{
    memset(pStats, 0, sizeof *pStats);
    pStats->worstScore = -1.0;
}

static int ulp_bucket(uint64_t ulp)
{
    return ulp == 0 ? 0 : 64 - __builtin_clzll(ulp);
}

/* For bool: aDiff[i] = 1 where the truth values differ. Any nonzero byte is true (it
 * decodes as 1, and so numpy and torch read it), so 2 against 1 is no mismatch; returns
 * the elements stored as a byte other than 0 or 1 on either side, which the report warns
 * of. */
static uint64_t bool_mask(const unsigned char *pE, const unsigned char *pC, size_t n,
                          unsigned char *aDiff)
{
    uint64_t nOdd = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        aDiff[i] = (pE[i] != 0) != (pC[i] != 0);
        nOdd += pE[i] > 1 || pC[i] > 1;
    }
    return nOdd;
}

/* aDiff[i] = 1 where the stored bits of element i differ. One loop per width, so the
 * compiler vectorises it. */
static void diff_mask(const unsigned char *pE, const unsigned char *pC, size_t nSize, size_t n,
                      unsigned char *aDiff)
{
    size_t i;
    switch (nSize) {
    case 1:
        for (i = 0; i < n; i++) aDiff[i] = pE[i] != pC[i];
        break;
    case 2:
        for (i = 0; i < n; i++) {
            uint16_t a, b;
            memcpy(&a, pE + 2 * i, 2); memcpy(&b, pC + 2 * i, 2);
            aDiff[i] = a != b;
        }
        break;
    case 4:
        for (i = 0; i < n; i++) {
            uint32_t a, b;
            memcpy(&a, pE + 4 * i, 4); memcpy(&b, pC + 4 * i, 4);
            aDiff[i] = a != b;
        }
        break;
    default:
        for (i = 0; i < n; i++) {
            uint64_t a, b;
            memcpy(&a, pE + 8 * i, 8); memcpy(&b, pC + 8 * i, 8);
            aDiff[i] = a != b;
        }
        break;
    }
}

/* Records a failing element in the bounding box. */
static void mark_failing(const parity_cmp_spec *pSpec, uint64_t linear, parity_tensor_stats *pStats)
{
    uint64_t aIndex[PARITY_MAX_RANK];
    int iDim;
    parity_unravel(pSpec->rank, pSpec->aDim, linear, aIndex);
    for (iDim = 0; iDim < pSpec->rank; iDim++) {
        if (pStats->nMismatch == 0 || aIndex[iDim] < pStats->aSliceLo[iDim])
            pStats->aSliceLo[iDim] = aIndex[iDim];
        if (pStats->nMismatch == 0 || aIndex[iDim] + 1 > pStats->aSliceHi[iDim])
            pStats->aSliceHi[iDim] = aIndex[iDim] + 1;
    }
    pStats->nMismatch++;
}

/* Error figures of a pair finite on both sides whose bits differ. */
static void account_error(double e, double d, uint64_t ulp, double floorRel,
                          parity_tensor_stats *pStats)
{
    double denom = fabs(e) > floorRel ? fabs(e) : floorRel;
    if (d > pStats->maxAbsErr) pStats->maxAbsErr = d;
    if (d > pStats->maxRelErr * denom) pStats->maxRelErr = d / denom;
    if (ulp > pStats->maxUlp) pStats->maxUlp = ulp;
    pStats->sumSqDiff += d * d;
    pStats->sumSqRef += e * e;
    pStats->aUlpHist[ulp_bucket(ulp)]++;
}

/* Everything but the common case: exact (bit-for-bit) tolerance, NaN, Inf and zeros.
 * Returns the element's score. */
static double judge_special(const parity_tolerance *pTol, double e, double c, int64_t keyE,
                            int64_t keyC, double floorRel, parity_tensor_stats *pStats)
{
    int nonFiniteE = !isfinite(e), nonFiniteC = !isfinite(c);
    if (pTol->exact) {
        /* Bit for bit: inputs must be the very same data. */
        if (nonFiniteE || nonFiniteC) {
            if (!(e != e && c != c)) pStats->nNanMismatch++;
        } else {
            if (e == 0.0 && c == 0.0) pStats->nSignedZeroMismatch++;
            account_error(e, fabs(c - e), parity_ulp_distance(keyE, keyC), floorRel, pStats);
        }
        return INFINITY;
    }
    if (e != e || c != c) {
        if (e != e && c != c) {          /* NaN vs NaN (any payload): equal, 0 ulps */
            pStats->aUlpHist[0]++;
            return 0.0;
        }
        pStats->nNanMismatch++;
        return INFINITY;
    }
    if (nonFiniteE || nonFiniteC) {
        /* At least one infinity and the bits differ: Inf vs finite, or Inf vs -Inf. */
        pStats->nNanMismatch++;
        return INFINITY;
    }
    /* Both finite, bits differ, and both zero: -0 vs +0, 0 ulps apart. */
    pStats->nSignedZeroMismatch++;
    pStats->aUlpHist[0]++;
    return pTol->signedZeros ? INFINITY : 0.0;
}

/* What one block accumulates; the hot fields stay in registers once judge_element is
 * inlined (pStats may alias anything, so it is only touched on rare paths). */
typedef struct {
    double maxAbs, maxRel, worst, sumSqDiff, sumSqRef;
    uint64_t maxUlp, nBitDiff, nSame;
} block_acc;

/* Two copies of the histogram, alternating: consecutive increments of one counter would
 * each wait for the previous store to forward (a chain of ~5 cycles an element). Kept out
 * of block_acc so the accumulator's fields can live in registers. */
typedef uint64_t ulp_hist2[2][PARITY_ULP_BUCKETS];

/* Judges one element pair: e and c decoded exactly, their ULP keys, whether their stored
 * bits differ. */
static inline void judge_element(const parity_cmp_spec *pSpec, block_acc *pAcc, ulp_hist2 aHist,
                                 parity_tensor_stats *pStats, double e, double c,
                                 int64_t keyE, int64_t keyC, int differ, uint64_t linear,
                                 double floorRel)
{
    const parity_tolerance *pTol = &pSpec->tol;
    double d, denom, allowed, score;
    uint64_t ulp;

    if (!differ) {
        /* Identical bits: 0 error by construction; only the reference norm. */
        pAcc->nSame++;
        if (isfinite(e)) pAcc->sumSqRef += e * e;
        return;
    }
    pAcc->nBitDiff++;
    if (pTol->exact || !isfinite(e) || !isfinite(c) || (e == 0.0 && c == 0.0)) {
        score = judge_special(pTol, e, c, keyE, keyC, floorRel, pStats);
    } else {
        /* The common case: finite, different. */
        d = fabs(c - e);
        ulp = parity_ulp_distance(keyE, keyC);
        denom = fabs(e) > floorRel ? fabs(e) : floorRel;
        pAcc->maxAbs = d > pAcc->maxAbs ? d : pAcc->maxAbs;
        if (d > pAcc->maxRel * denom) pAcc->maxRel = d / denom;
        pAcc->maxUlp = ulp > pAcc->maxUlp ? ulp : pAcc->maxUlp;
        pAcc->sumSqDiff += d * d;
        pAcc->sumSqRef += e * e;
        aHist[linear & 1][ulp_bucket(ulp)]++;
        allowed = pTol->atol + pTol->rtol * fabs(e);
        /* The exact score costs a division: only when it can fail or beat the current
         * worst (score = d / allowed > worst). With useUlp the score is at most
         * d / allowed, so skipping stays exact. */
        if (!(d > allowed) && !(d > pAcc->worst * allowed)) return;
        score = parity_tolerance_score(pTol, e, d, ulp);
    }
    if (score > pAcc->worst) {
        pAcc->worst = score;
        pStats->worstScore = score;
        pStats->worstLinear = linear;
    }
    if (score > 1.0) mark_failing(pSpec, linear, pStats);
}

/* ---- float32: the lane pass (compare_f32.c), then the flagged elements ------------- */

/* The lanes into the block's accumulator, in lane order. */
static void f32_sums_fold(const parity_f32_sums *pS, block_acc *pAcc)
{
    int l;
    for (l = 0; l < PARITY_F32_LANES; l++) {
        if (pS->maxAbs[l] > pAcc->maxAbs) pAcc->maxAbs = pS->maxAbs[l];
        if (pS->maxRel[l] > pAcc->maxRel) pAcc->maxRel = pS->maxRel[l];
        if (pS->maxUlp[l] > pAcc->maxUlp) pAcc->maxUlp = pS->maxUlp[l];
        pAcc->sumSqDiff += pS->sumSqDiff[l];
        pAcc->sumSqRef += pS->sumSqRef[l];
        pAcc->nSame += pS->nSame[l];
        pAcc->nBitDiff += pS->nBitDiff[l];
    }
}

/* An element the lane pass flagged: its special value, or its score against the current
 * worst and the tolerance (its figures are in the lanes already). */
static void f32_look(const parity_cmp_spec *pSpec, block_acc *pAcc, parity_tensor_stats *pStats,
                     const unsigned char *pE, const unsigned char *pC, size_t i, uint64_t linear,
                     double floorRel)
{
    const parity_tolerance *pTol = &pSpec->tol;
    uint32_t bE, bC;
    float fE, fC;
    double e, c, d, allowed, score;
    memcpy(&bE, pE + 4 * i, 4);
    memcpy(&bC, pC + 4 * i, 4);
    memcpy(&fE, &bE, 4);
    memcpy(&fC, &bC, 4);
    e = fE;
    c = fC;
    if (!isfinite(e) || !isfinite(c) || (e == 0.0 && c == 0.0)) {
        score = judge_special(pTol, e, c, parity_sign_magnitude_key(bE, 32),
                              parity_sign_magnitude_key(bC, 32), floorRel, pStats);
    } else {
        d = fabs(c - e);
        allowed = pTol->atol + pTol->rtol * fabs(e);
        if (!(d > allowed) && !(d > pAcc->worst * allowed)) return;
        score = parity_tolerance_score(pTol, e, d,
                                       parity_ulp_distance(parity_sign_magnitude_key(bE, 32),
                                                           parity_sign_magnitude_key(bC, 32)));
    }
    if (score > pAcc->worst) {
        pAcc->worst = score;
        pStats->worstScore = score;
        pStats->worstLinear = linear;
    }
    if (score > 1.0) mark_failing(pSpec, linear, pStats);
}

void parity_cmp_block(const parity_cmp_spec *pSpec, const void *pEager, const void *pCompiled,
                      uint64_t first, size_t n, parity_tensor_stats *pStats)
{
    size_t nSize = parity_dtype_size(pSpec->dtype);
    double floorRel = parity_dtype_smallest_normal(pSpec->dtype);
    const unsigned char *pE = pEager, *pC = pCompiled;
    size_t iBase, i;
    block_acc acc;
    ulp_hist2 aHist;

    memset(&acc, 0, sizeof acc);
    memset(aHist, 0, sizeof aHist);
    acc.maxAbs = pStats->maxAbsErr;
    acc.maxRel = pStats->maxRelErr;
    acc.maxUlp = pStats->maxUlp;
    pStats->nElem += n;
    /* Every element scores >= 0, so the first one is the worst until a larger score. */
    if (n > 0 && pStats->worstScore < 0.0) {
        pStats->worstScore = 0.0;
        pStats->worstLinear = first;
    }
    acc.worst = pStats->worstScore;

    if (pSpec->dtype == PARITY_DT_F32 && !pSpec->tol.exact) {
        /* The dominant dtype: a branch-free lane pass (compare_f32.c: AVX2 where the CPU
         * has it), then the few elements it flags, one by one. */
        parity_f32_sums sums;
        memset(&sums, 0, sizeof sums);
        for (iBase = 0; iBase < n; iBase += PARITY_F32_GROUP) {
            size_t nGroup = n - iBase < PARITY_F32_GROUP ? n - iBase : PARITY_F32_GROUP;
            unsigned char aBucket[PARITY_F32_GROUP], aLook[PARITY_F32_GROUP];
            int anyLook = parity_f32_lanes(pE + 4 * iBase, pC + 4 * iBase, nGroup, &pSpec->tol,
                                           floorRel, acc.worst, &sums, aBucket, aLook);
            /* every element into the histogram: bucket 0 collects the ones outside the
             * figures, and is dropped below (same bits count through nSame) */
            parity_f32_bucket_counts(aBucket, nGroup, aHist[0]);
            for (i = 0; anyLook && i < nGroup; i++)
                if (aLook[i])
                    f32_look(pSpec, &acc, pStats, pE, pC, iBase + i, first + iBase + i, floorRel);
        }
        aHist[0][0] = aHist[1][0] = 0;
        f32_sums_fold(&sums, &acc);
    } else {
        double aE[BATCH], aC[BATCH];
        int64_t aKeyE[BATCH], aKeyC[BATCH];
        unsigned char aDiff[BATCH];
        for (iBase = 0; iBase < n; iBase += BATCH) {
            size_t nBatch = n - iBase < BATCH ? n - iBase : BATCH;
            const unsigned char *pBatchE = pE + iBase * nSize, *pBatchC = pC + iBase * nSize;
            if (pSpec->dtype == PARITY_DT_BOOL)
                pStats->nOddBool += bool_mask(pBatchE, pBatchC, nBatch, aDiff);
            else
                diff_mask(pBatchE, pBatchC, nSize, nBatch, aDiff);
            parity_decode(pSpec->dtype, pBatchE, aE, nBatch);
            parity_decode(pSpec->dtype, pBatchC, aC, nBatch);
            parity_ulp_keys(pSpec->dtype, pBatchE, aKeyE, nBatch);
            parity_ulp_keys(pSpec->dtype, pBatchC, aKeyC, nBatch);
            for (i = 0; i < nBatch; i++)
                judge_element(pSpec, &acc, aHist, pStats, aE[i], aC[i], aKeyE[i], aKeyC[i], aDiff[i],
                              first + iBase + i, floorRel);
        }
    }
    for (i = 0; i < PARITY_ULP_BUCKETS; i++) pStats->aUlpHist[i] += aHist[0][i] + aHist[1][i];
    pStats->aUlpHist[0] += acc.nSame;
    pStats->nBitDiff += acc.nBitDiff;
    if (acc.maxAbs > pStats->maxAbsErr) pStats->maxAbsErr = acc.maxAbs;
    if (acc.maxRel > pStats->maxRelErr) pStats->maxRelErr = acc.maxRel;
    if (acc.maxUlp > pStats->maxUlp) pStats->maxUlp = acc.maxUlp;
    pStats->sumSqDiff += acc.sumSqDiff;
    pStats->sumSqRef += acc.sumSqRef;
}

void parity_cmp_stats_merge(parity_tensor_stats *pInto, const parity_tensor_stats *pFrom, int rank)
{
    int iDim, k;

    if (pFrom->nMismatch > 0) {
        for (iDim = 0; iDim < rank; iDim++) {
            if (pInto->nMismatch == 0 || pFrom->aSliceLo[iDim] < pInto->aSliceLo[iDim])
                pInto->aSliceLo[iDim] = pFrom->aSliceLo[iDim];
            if (pInto->nMismatch == 0 || pFrom->aSliceHi[iDim] > pInto->aSliceHi[iDim])
                pInto->aSliceHi[iDim] = pFrom->aSliceHi[iDim];
        }
    }
    pInto->nElem += pFrom->nElem;
    pInto->nMismatch += pFrom->nMismatch;
    pInto->nNanMismatch += pFrom->nNanMismatch;
    pInto->nSignedZeroMismatch += pFrom->nSignedZeroMismatch;
    pInto->nBitDiff += pFrom->nBitDiff;
    pInto->nOddBool += pFrom->nOddBool;
    if (pFrom->maxAbsErr > pInto->maxAbsErr) pInto->maxAbsErr = pFrom->maxAbsErr;
    if (pFrom->maxRelErr > pInto->maxRelErr) pInto->maxRelErr = pFrom->maxRelErr;
    if (pFrom->maxUlp > pInto->maxUlp) pInto->maxUlp = pFrom->maxUlp;
    pInto->sumSqDiff += pFrom->sumSqDiff;
    pInto->sumSqRef += pFrom->sumSqRef;
    /* pFrom covers later indices, so on a tie the earlier (pInto's) index stays. */
    if (pFrom->worstScore > pInto->worstScore) {
        pInto->worstScore = pFrom->worstScore;
        pInto->worstLinear = pFrom->worstLinear;
    }
    for (k = 0; k < PARITY_ULP_BUCKETS; k++) pInto->aUlpHist[k] += pFrom->aUlpHist[k];
}

/* ---- the worker pool ------------------------------------------------------------- */

typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t cvWork;   /* a slab was posted, or shutdown */
    pthread_cond_t cvDone;   /* the last block of the slab finished */
    const parity_cmp_spec *pSpec;
    const unsigned char *pE, *pC;
    uint64_t first;          /* linear index of the slab's first element */
    size_t nElem;
    size_t nBlock, nNextBlock, nDoneBlock;
    parity_tensor_stats *aPartial;
    int shutdown;
    int ready;               /* mutex and conditions initialised */
    pthread_t aThread[64];
    int nThread;             /* workers running */
} pool;

static void *pool_worker(void *pArg)
{
    pool *p = pArg;
    pthread_mutex_lock(&p->mutex);
    for (;;) {
        while (!p->shutdown && p->nNextBlock >= p->nBlock)
            pthread_cond_wait(&p->cvWork, &p->mutex);
        if (p->shutdown) break;
        {
            size_t iBlock = p->nNextBlock++;
            size_t nSize = parity_dtype_size(p->pSpec->dtype);
            size_t start = iBlock * BLOCK_ELEMS;
            size_t n = p->nElem - start < BLOCK_ELEMS ? p->nElem - start : BLOCK_ELEMS;
            parity_tensor_stats *pPart = &p->aPartial[iBlock];
            pthread_mutex_unlock(&p->mutex);
            parity_cmp_stats_init(pPart);
            parity_cmp_block(p->pSpec, p->pE + start * nSize, p->pC + start * nSize,
                             p->first + start, n, pPart);
            pthread_mutex_lock(&p->mutex);
            if (++p->nDoneBlock == p->nBlock) pthread_cond_signal(&p->cvDone);
        }
    }
    pthread_mutex_unlock(&p->mutex);
    return NULL;
}

/* Waits for the posted slab and merges its blocks, in order, into pStats. */
static void pool_collect(pool *p, parity_tensor_stats *pStats)
{
    size_t i;
    pthread_mutex_lock(&p->mutex);
    while (p->nDoneBlock < p->nBlock) pthread_cond_wait(&p->cvDone, &p->mutex);
    for (i = 0; i < p->nBlock; i++) parity_cmp_stats_merge(pStats, &p->aPartial[i], p->pSpec->rank);
    p->nBlock = p->nNextBlock = p->nDoneBlock = 0;
    pthread_mutex_unlock(&p->mutex);
}

static void pool_post(pool *p, const void *pE, const void *pC, uint64_t first, size_t n)
{
    pthread_mutex_lock(&p->mutex);
    p->pE = pE;
    p->pC = pC;
    p->first = first;
    p->nElem = n;
    p->nBlock = (n + BLOCK_ELEMS - 1) / BLOCK_ELEMS;
    p->nNextBlock = p->nDoneBlock = 0;
    pthread_cond_broadcast(&p->cvWork);
    pthread_mutex_unlock(&p->mutex);
}

int parity_cmp_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (n > 64 ? 64 : (int)n);
}

/* Starts up to nThreads (<= 64) workers judging slabs of at most nMaxSlabElem elements.
 * Returns 0 (p->nThread may still be 0: then the caller judges inline), or -1 when memory
 * runs out. pool_stop undoes whatever was done either way. */
static int pool_start(pool *p, const parity_cmp_spec *pSpec, uint64_t nMaxSlabElem, int nThreads)
{
    int i;
    p->ready = 1;
    pthread_mutex_init(&p->mutex, NULL);
    pthread_cond_init(&p->cvWork, NULL);
    pthread_cond_init(&p->cvDone, NULL);
    p->pSpec = pSpec;
    p->aPartial = parity_malloc(((nMaxSlabElem + BLOCK_ELEMS - 1) / BLOCK_ELEMS + 1) *
                         sizeof(parity_tensor_stats));
    if (!p->aPartial) return -1;
    for (i = 0; i < nThreads; i++) {
        if (pthread_create(&p->aThread[i], NULL, pool_worker, p) != 0) break;
        p->nThread++;
    }
    return 0;
}

static void pool_stop(pool *p)
{
    int i;
    if (p->nThread > 0) {
        pthread_mutex_lock(&p->mutex);
        p->shutdown = 1;
        pthread_cond_broadcast(&p->cvWork);
        pthread_mutex_unlock(&p->mutex);
        for (i = 0; i < p->nThread; i++) pthread_join(p->aThread[i], NULL);
    }
    free(p->aPartial);
    if (p->ready) {
        pthread_mutex_destroy(&p->mutex);
        pthread_cond_destroy(&p->cvWork);
        pthread_cond_destroy(&p->cvDone);
    }
}

/* Plans the slabs: nSlabBytes per side (0: the default) but at least one block, aligned to
 * the eager side's chunks along the split dimension. */
static void plan_slabs(parity_tensor_reader *pEager, const parity_tensor_info *pInfo,
                       uint64_t nSlabBytes, parity_slab_plan *pPlan)
{
    const uint64_t *aChunk = parity_tensor_reader_chunk(pEager);
    uint64_t nSlabElem, rowAlign = 1;
    parity_slab_plan probe;

    if (nSlabBytes == 0) nSlabBytes = DEFAULT_SLAB_BYTES;
    nSlabElem = nSlabBytes / parity_dtype_size(pInfo->dtype);
    if (nSlabElem < BLOCK_ELEMS) nSlabElem = BLOCK_ELEMS;
    parity_slab_plan_init(&probe, pInfo->rank, pInfo->aDim, nSlabElem, 1);
    if (probe.splitDim >= 0 && aChunk[probe.splitDim] > 0) rowAlign = aChunk[probe.splitDim];
    parity_slab_plan_init(pPlan, pInfo->rank, pInfo->aDim, nSlabElem, rowAlign);
}

parity_dtype parity_cmp_dtype(parity_dtype eager, parity_dtype compiled)
{
    if (eager == compiled || !parity_dtype_is_float(eager) || !parity_dtype_is_float(compiled))
        return eager;
    return parity_unit_roundoff(compiled) > parity_unit_roundoff(eager) ? compiled : eager;
}

/* Judges slab after slab into pStats: on the pool's workers when pPool is not NULL (the
 * next slab is read while they judge this one), else inline in the same fixed blocks,
 * merged in the same order, so the result (sums included) does not depend on the number
 * of threads. Returns 0, or -1 with zErr naming the side whose read failed. */
/* Mixed float dtypes (float32 eager against bfloat16 compiled, say): the side stored in
 * another dtype than the comparison's is rounded to it, slab by slab, into one of two
 * buffers (double buffering, as the sources). */
typedef struct {
    parity_dtype from;           /* the converted side's own dtype */
    int side;                    /* 0 eager, 1 compiled; -1 when nothing is converted */
    double *aValue;              /* scratch of one slab */
    unsigned char *apBuf[2];
} slab_convert;

static const unsigned char *convert_slab(slab_convert *pCv, parity_dtype to,
                                         const unsigned char *pIn, uint64_t n, int iBuf)
{
    size_t nTo = parity_dtype_size(to);
    uint64_t i;
    parity_decode(pCv->from, pIn, pCv->aValue, (size_t)n);
    for (i = 0; i < n; i++) parity_encode(to, pCv->aValue[i], pCv->apBuf[iBuf] + i * nTo);
    return pCv->apBuf[iBuf];
}

static int stream_slabs(parity_slab_plan *pPlan, parity_slab_source *pSrcE,
                        parity_slab_source *pSrcC, const parity_cmp_spec *pSpec, pool *pPool,
                        slab_convert *pCv, parity_tensor_stats *pStats, char *zErr, size_t nErr)
{
    size_t nSize = parity_dtype_size(pSpec->dtype);
    parity_slab slab;
    int iBuf = 0, pending = 0, rc = 0;

    while (parity_slab_next(pPlan, &slab)) {
        const unsigned char *pE, *pC;
        char zWhy[PARITY_ERR_LEN];
        pE = parity_source_fetch(pSrcE, &slab, iBuf, zWhy, sizeof zWhy);
        if (!pE) {
            snprintf(zErr, nErr, "eager: %s", zWhy);
            rc = -1;
            break;
        }
        pC = parity_source_fetch(pSrcC, &slab, iBuf, zWhy, sizeof zWhy);
        if (!pC) {
            snprintf(zErr, nErr, "compiled: %s", zWhy);
            rc = -1;
            break;
        }
        if (pCv->side == 0) pE = convert_slab(pCv, pSpec->dtype, pE, slab.n, iBuf);
        if (pCv->side == 1) pC = convert_slab(pCv, pSpec->dtype, pC, slab.n, iBuf);
        if (pPool) {
            if (pending) pool_collect(pPool, pStats);
            pool_post(pPool, pE, pC, slab.first, slab.n);
            pending = 1;
            iBuf ^= 1;   /* the next fetch fills the other slot while workers judge this */
        } else {
            uint64_t off;
            for (off = 0; off < slab.n; off += BLOCK_ELEMS) {
                parity_tensor_stats part;
                size_t n = slab.n - off < BLOCK_ELEMS ? (size_t)(slab.n - off) : BLOCK_ELEMS;
                parity_cmp_stats_init(&part);
                parity_cmp_block(pSpec, pE + off * nSize, pC + off * nSize, slab.first + off, n,
                                 &part);
                parity_cmp_stats_merge(pStats, &part, pSpec->rank);
            }
        }
    }
    if (pending) pool_collect(pPool, pStats);
    return rc;
}

int parity_cmp_unstored(parity_tensor_reader *pEager, parity_tensor_reader *pCompiled,
                        const parity_tensor_info *pInfo, parity_dtype dtypeCompiled,
                        const parity_tolerance *pTol, parity_tensor_stats *pStats, char *zErr,
                        size_t nErr)
{
    parity_dtype dtCmp = parity_cmp_dtype(pInfo->dtype, dtypeCompiled);
    parity_cmp_spec spec = { dtCmp, pInfo->rank, pInfo->aDim, *pTol };
    unsigned char aE[16] = { 0 }, aC[16] = { 0 }, aOut[2][16];
    double value;
    parity_tensor_stats one;
    parity_slab slab;
    const unsigned char *apIn[2] = { aE, aC };
    uint64_t n = pInfo->nElem;
    int iSide, k;

    parity_cmp_stats_init(pStats);
    if (n == 0) return 0;
    memset(&slab, 0, sizeof slab);
    slab.n = 1;
    for (k = 0; k < pInfo->rank; k++) slab.aCount[k] = 1;
    if (parity_tensor_read(pEager, &slab, aE, zErr, nErr) != 0) return -1;
    if (parity_tensor_read(pCompiled, &slab, aC, zErr, nErr) != 0) return -1;
    for (iSide = 0; iSide < 2; iSide++) {   /* the wider side rounded, as slab by slab */
        parity_dtype from = iSide == 0 ? pInfo->dtype : dtypeCompiled;
        if (from == dtCmp) continue;
        parity_decode(from, apIn[iSide], &value, 1);
        parity_encode(dtCmp, value, aOut[iSide]);
        apIn[iSide] = aOut[iSide];
    }
    parity_cmp_stats_init(&one);
    parity_cmp_block(&spec, apIn[0], apIn[1], 0, 1, &one);
    *pStats = one;
    pStats->nElem = n;
    pStats->nMismatch = one.nMismatch * n;
    pStats->nNanMismatch = one.nNanMismatch * n;
    pStats->nSignedZeroMismatch = one.nSignedZeroMismatch * n;
    pStats->nBitDiff = one.nBitDiff * n;
    pStats->nOddBool = one.nOddBool * n;
    pStats->sumSqDiff = one.sumSqDiff * (double)n;
    pStats->sumSqRef = one.sumSqRef * (double)n;
    for (k = 0; k < PARITY_ULP_BUCKETS; k++) pStats->aUlpHist[k] = one.aUlpHist[k] * n;
    if (one.nMismatch > 0)
        for (k = 0; k < pInfo->rank; k++) {
            pStats->aSliceLo[k] = 0;
            pStats->aSliceHi[k] = pInfo->aDim[k];
        }
    return 0;
}

int parity_cmp_tensor(parity_tensor_reader *pEager, parity_tensor_reader *pCompiled,
                      const parity_tensor_info *pInfo, parity_dtype dtypeCompiled,
                      const parity_tolerance *pTol, int nThreads, uint64_t nSlabBytes,
                      parity_tensor_stats *pStats, char *zErr, size_t nErr)
{
    parity_dtype dtCmp = parity_cmp_dtype(pInfo->dtype, dtypeCompiled);
    parity_cmp_spec spec = { dtCmp, pInfo->rank, pInfo->aDim, *pTol };
    size_t nSizeE = parity_dtype_size(pInfo->dtype), nSizeC = parity_dtype_size(dtypeCompiled);
    uint64_t nCap;
    parity_slab_plan plan;
    parity_slab_source srcE, srcC;
    slab_convert cv;
    pool p;
    int rc = -1;

    memset(&cv, 0, sizeof cv);
    cv.side = dtCmp != pInfo->dtype ? 0 : dtCmp != dtypeCompiled ? 1 : -1;
    cv.from = cv.side == 0 ? pInfo->dtype : dtypeCompiled;
    parity_cmp_stats_init(pStats);
    memset(&p, 0, sizeof p);
    memset(&srcE, 0, sizeof srcE);
    memset(&srcC, 0, sizeof srcC);
    srcE.fd = srcC.fd = -1;
    if (nThreads <= 0) nThreads = parity_cmp_default_threads();
    if (nThreads > 64) nThreads = 64;

    plan_slabs(pEager, pInfo, nSlabBytes, &plan);
    nCap = plan.nStep * plan.nInner;
    if (nCap == 0 || pInfo->rank == 0) nCap = 1;
    if (parity_source_open(&srcE, pEager, nSizeE, nCap, zErr, nErr) != 0 ||
        parity_source_open(&srcC, pCompiled, nSizeC, nCap, zErr, nErr) != 0)
        goto cleanup;
    if (cv.side >= 0) {
        cv.aValue = parity_malloc(nCap * sizeof(double));
        cv.apBuf[0] = parity_malloc(nCap * parity_dtype_size(dtCmp));
        cv.apBuf[1] = parity_malloc(nCap * parity_dtype_size(dtCmp));
        if (!cv.aValue || !cv.apBuf[0] || !cv.apBuf[1]) {
            snprintf(zErr, nErr, "out of memory");
            goto cleanup;
        }
    }
    if (pInfo->nElem >= INLINE_LIMIT && nThreads > 1 &&
        pool_start(&p, &spec, plan.nStep * plan.nInner, nThreads) != 0) {
        snprintf(zErr, nErr, "out of memory");
        goto cleanup;
    }
    /* Without workers (a small tensor, one thread, or none would start): inline. */
    rc = stream_slabs(&plan, &srcE, &srcC, &spec, p.nThread > 0 ? &p : NULL, &cv, pStats, zErr,
                      nErr);
cleanup:
    pool_stop(&p);
    free(cv.aValue);
    free(cv.apBuf[0]);
    free(cv.apBuf[1]);
    parity_source_close(&srcE);
    parity_source_close(&srcC);
    return rc;
}
