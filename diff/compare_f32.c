/*
 * compare_f32.c - the float32 lane pass (compare_f32_internal.h): portable C, and AVX2
 * intrinsics chosen at run time (__builtin_cpu_supports) on x86-64.
 *
 * Per element, in its lane l (compare.c's rule for the common case, as masks):
 *   differ  = bits differ; fin = not Inf/NaN; common = differ, both finite, not both zero
 *   d       = |c - e| in binary64 where common, else 0
 *   maxAbs  = max(maxAbs, d); maxRel = max(maxRel, d / max(|e|, smallest normal))
 *   maxUlp  = max(maxUlp, ulp distance where common); sumSqDiff += d^2
 *   sumSqRef += e^2 where e is finite and (common or the bits are the same)
 *   look    = differ and (not common, or d > atol + rtol |e|, or d > worst (atol + rtol |e|))
 * No fused multiply-add anywhere (the portable build has none, and the intrinsics multiply
 * and add separately), and comparisons are ordered and quiet as C's: both versions give the
 * same bits. The ulp histogram of a group is then counted from its buckets by value
 * (parity_f32_bucket_counts), the same counts as one increment per element.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "diff/compare_f32_internal.h"
#include "formats/dtype.h"

/* The lanes as locals the compiler can keep in registers. */
typedef struct {
    double maxAbs[PARITY_F32_LANES], maxRel[PARITY_F32_LANES];
    double sqD[PARITY_F32_LANES], sqR[PARITY_F32_LANES];
    uint64_t maxUlp[PARITY_F32_LANES], nSame[PARITY_F32_LANES], nDiff[PARITY_F32_LANES];
} lane_acc;

static void load_lanes(lane_acc *pA, const parity_f32_sums *pS)
{
    memcpy(pA->maxAbs, pS->maxAbs, sizeof pA->maxAbs);
    memcpy(pA->maxRel, pS->maxRel, sizeof pA->maxRel);
    memcpy(pA->sqD, pS->sumSqDiff, sizeof pA->sqD);
    memcpy(pA->sqR, pS->sumSqRef, sizeof pA->sqR);
    memcpy(pA->maxUlp, pS->maxUlp, sizeof pA->maxUlp);
    memcpy(pA->nSame, pS->nSame, sizeof pA->nSame);
    memcpy(pA->nDiff, pS->nBitDiff, sizeof pA->nDiff);
}

static void store_lanes(const lane_acc *pA, parity_f32_sums *pS)
{
    memcpy(pS->maxAbs, pA->maxAbs, sizeof pA->maxAbs);
    memcpy(pS->maxRel, pA->maxRel, sizeof pA->maxRel);
    memcpy(pS->sumSqDiff, pA->sqD, sizeof pA->sqD);
    memcpy(pS->sumSqRef, pA->sqR, sizeof pA->sqR);
    memcpy(pS->maxUlp, pA->maxUlp, sizeof pA->maxUlp);
    memcpy(pS->nSame, pA->nSame, sizeof pA->nSame);
    memcpy(pS->nBitDiff, pA->nDiff, sizeof pA->nDiff);
}

/* One element in lane l (the file comment's rule). */
static inline int step(lane_acc *pA, size_t l, uint32_t bE, uint32_t bC, double atol,
                       double rtol, double floorRel, double worst, unsigned char *pBucket,
                       unsigned char *pLook)
{
    float fE, fC;
    double e, c, d, ae, denom, allowed, rel;
    int64_t k;
    uint64_t u;
    unsigned differ, finE, finC, common, look;
    memcpy(&fE, &bE, 4);
    memcpy(&fC, &bC, 4);
    e = fE;
    c = fC;
    differ = bE != bC;
    finE = (bE & 0x7f800000u) != 0x7f800000u;
    finC = (bC & 0x7f800000u) != 0x7f800000u;
    common = differ & finE & finC & (((bE | bC) & 0x7fffffffu) != 0);
    d = common ? fabs(c - e) : 0.0;
    ae = fabs(e);
    denom = ae > floorRel ? ae : floorRel;
    allowed = atol + rtol * ae;
    rel = d / denom;
    k = parity_sign_magnitude_key(bE, 32) - parity_sign_magnitude_key(bC, 32);
    u = common ? (uint64_t)(k < 0 ? -k : k) : 0;   /* float32 keys: |k| < 2^32 */
    pA->maxAbs[l] = d > pA->maxAbs[l] ? d : pA->maxAbs[l];
    pA->maxRel[l] = rel > pA->maxRel[l] ? rel : pA->maxRel[l];
    pA->maxUlp[l] = u > pA->maxUlp[l] ? u : pA->maxUlp[l];
    pA->sqD[l] += d * d;
    pA->sqR[l] += (finE & (common | (differ ^ 1u))) ? e * e : 0.0;
    pA->nSame[l] += differ ^ 1u;
    pA->nDiff[l] += differ;
    look = differ & ((common ^ 1u) | (d > allowed) | (d > worst * allowed));
    *pBucket = (unsigned char)(u ? 64 - __builtin_clzll(u) : 0);
    *pLook = (unsigned char)look;
    return (int)look;
}

/* Elements [i, n) of the group, one by one, in their lanes. */
static int tail(lane_acc *pA, const unsigned char *pE, const unsigned char *pC, size_t i,
                size_t n, const parity_tolerance *pTol, double floorRel, double worst,
                unsigned char *aBucket, unsigned char *aLook)
{
    int any = 0;
    for (; i < n; i++) {
        uint32_t bE, bC;
        memcpy(&bE, pE + 4 * i, 4);
        memcpy(&bC, pC + 4 * i, 4);
        any |= step(pA, i % PARITY_F32_LANES, bE, bC, pTol->atol, pTol->rtol, floorRel, worst,
                    &aBucket[i], &aLook[i]);
    }
    return any;
}

int parity_f32_lanes_portable(const unsigned char *pE, const unsigned char *pC, size_t n,
                              const parity_tolerance *pTol, double floorRel, double worst,
                              parity_f32_sums *pS, unsigned char *aBucket, unsigned char *aLook)
{
    lane_acc a;
    int any;
    load_lanes(&a, pS);
    any = tail(&a, pE, pC, 0, n, pTol, floorRel, worst, aBucket, aLook);
    store_lanes(&a, pS);
    return any;
}

void parity_f32_bucket_counts_portable(const unsigned char *aBucket, size_t n, uint64_t *aHist)
{
    size_t i;
    for (i = 0; i < n; i++) aHist[aBucket[i]]++;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* Both sides are streams from the page cache, read once: the hardware prefetcher stops at
 * each 4 KiB page and the loads waited on memory (perf: half of the pass's samples on its
 * two loads). Prefetching 2 KiB ahead took a 1 GiB pair on one thread from 0.79 s to 0.60 s
 * here (512 B and 8 KiB ahead did as well; a prefetch past the end is dropped, never a
 * fault). */
#define PREFETCH_BYTES 2048

#define AVX2 __attribute__((target("avx2")))

/* 8 lanes of 32-bit masks, as two 4-lane 64-bit masks (sign-extended). */
AVX2 static inline void widen(__m256i m32, __m256i *pLo, __m256i *pHi)
{
    *pLo = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(m32));
    *pHi = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(m32, 1));
}

/* The sign-magnitude keys' difference of 4 lanes (32-bit keys widened), made absolute. */
AVX2 static inline __m256i abs_key_diff(__m128i kE, __m128i kC)
{
    __m256i k = _mm256_sub_epi64(_mm256_cvtepi32_epi64(kE), _mm256_cvtepi32_epi64(kC));
    __m256i neg = _mm256_cmpgt_epi64(_mm256_setzero_si256(), k);
    return _mm256_sub_epi64(_mm256_xor_si256(k, neg), neg);
}

/* Half a group step: 4 lanes (h = 0: lanes 0-3, 1: lanes 4-7) of the 8 loaded. */
typedef struct {
    __m256d maxAbs, maxRel, sqD, sqR;
    __m256i maxUlp, nSame, nDiff;
} half_acc;

AVX2 static inline void half_step(half_acc *pH, __m128 fE, __m128 fC, __m256i differ,
                                  __m256i common, __m256i refMask, __m128i kE, __m128i kC,
                                  __m256d atol, __m256d rtol, __m256d floorRel, __m256d worst,
                                  __m256i *pBucket, int *pLook)
{
    const __m256d absMask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    __m256d e = _mm256_cvtps_pd(fE), c = _mm256_cvtps_pd(fC);
    __m256d d = _mm256_and_pd(_mm256_and_pd(_mm256_sub_pd(c, e), absMask),
                              _mm256_castsi256_pd(common));
    __m256d ae = _mm256_and_pd(e, absMask);
    /* ae > floorRel ? ae : floorRel, NaN giving floorRel: maxpd returns its second operand
     * when either is NaN */
    __m256d denom = _mm256_max_pd(ae, floorRel);
    __m256d allowed = _mm256_add_pd(atol, _mm256_mul_pd(rtol, ae));
    __m256i u = _mm256_and_si256(abs_key_diff(kE, kC), common);
    __m256d look;
    /* d, rel are never NaN (d is 0 or finite, denom >= floorRel > 0): maxpd is the select */
    pH->maxAbs = _mm256_max_pd(d, pH->maxAbs);
    /* The division only where d / denom may reach the lane's maximum: where
     * d <= maxRel denom (1 - 2^-50), both roundings (2^-53 each) keep d / denom below it,
     * so skipping leaves the same maximum, bit for bit. */
    if (_mm256_movemask_pd(_mm256_cmp_pd(d, _mm256_mul_pd(_mm256_mul_pd(pH->maxRel, denom),
                                                          _mm256_set1_pd(1.0 - 0x1p-50)),
                                         _CMP_GT_OQ)))
        pH->maxRel = _mm256_max_pd(_mm256_div_pd(d, denom), pH->maxRel);
    pH->maxUlp = _mm256_blendv_epi8(pH->maxUlp, u, _mm256_cmpgt_epi64(u, pH->maxUlp));
    pH->sqD = _mm256_add_pd(pH->sqD, _mm256_mul_pd(d, d));
    pH->sqR = _mm256_add_pd(pH->sqR, _mm256_and_pd(_mm256_mul_pd(e, e),
                                                   _mm256_castsi256_pd(refMask)));
    pH->nSame = _mm256_sub_epi64(pH->nSame, _mm256_xor_si256(differ, _mm256_set1_epi64x(-1)));
    pH->nDiff = _mm256_sub_epi64(pH->nDiff, differ);
    look = _mm256_or_pd(_mm256_cmp_pd(d, allowed, _CMP_GT_OQ),
                        _mm256_cmp_pd(d, _mm256_mul_pd(worst, allowed), _CMP_GT_OQ));
    look = _mm256_or_pd(look, _mm256_castsi256_pd(
                                  _mm256_andnot_si256(common, _mm256_set1_epi64x(-1))));
    look = _mm256_and_pd(look, _mm256_castsi256_pd(differ));
    /* the bucket, the bit length of u (< 2^33): u ORed into 2^52's significand is 2^52 + u
     * exactly, so 2^52 + u - 2^52 is u as a binary64, whose exponent field is 1022 plus the
     * bit length; 0 where u is 0 (not common) */
    {
        const __m256i magic = _mm256_set1_epi64x(0x4330000000000000LL);
        __m256d x = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(u, magic)),
                                  _mm256_castsi256_pd(magic));
        __m256i b = _mm256_sub_epi64(_mm256_srli_epi64(_mm256_castpd_si256(x), 52),
                                     _mm256_set1_epi64x(1022));
        *pBucket = _mm256_and_si256(b, common);
    }
    *pLook = _mm256_movemask_pd(look);
}

AVX2 static inline void half_load(half_acc *pH, const lane_acc *pA, int o)
{
    pH->maxAbs = _mm256_loadu_pd(pA->maxAbs + o);
    pH->maxRel = _mm256_loadu_pd(pA->maxRel + o);
    pH->sqD = _mm256_loadu_pd(pA->sqD + o);
    pH->sqR = _mm256_loadu_pd(pA->sqR + o);
    pH->maxUlp = _mm256_loadu_si256((const __m256i *)(pA->maxUlp + o));
    pH->nSame = _mm256_loadu_si256((const __m256i *)(pA->nSame + o));
    pH->nDiff = _mm256_loadu_si256((const __m256i *)(pA->nDiff + o));
}

AVX2 static inline void half_store(const half_acc *pH, lane_acc *pA, int o)
{
    _mm256_storeu_pd(pA->maxAbs + o, pH->maxAbs);
    _mm256_storeu_pd(pA->maxRel + o, pH->maxRel);
    _mm256_storeu_pd(pA->sqD + o, pH->sqD);
    _mm256_storeu_pd(pA->sqR + o, pH->sqR);
    _mm256_storeu_si256((__m256i *)(pA->maxUlp + o), pH->maxUlp);
    _mm256_storeu_si256((__m256i *)(pA->nSame + o), pH->nSame);
    _mm256_storeu_si256((__m256i *)(pA->nDiff + o), pH->nDiff);
}

/* kSpread[m]: bit l of m as byte l (value 0 or 1), little-endian. */
#define S1(m) (((uint64_t)((m) & 1)) | ((uint64_t)(((m) >> 1) & 1) << 8))
#define S2(m) (S1(m) | S1((m) >> 2) << 16)
#define S4(m) (S2(m) | S2((m) >> 4) << 32)
#define R4(b) S4(b), S4(b + 1), S4(b + 2), S4(b + 3)
#define R16(b) R4(b), R4(b + 4), R4(b + 8), R4(b + 12)
#define R64(b) R16(b), R16(b + 16), R16(b + 32), R16(b + 48)
static const uint64_t kSpread[256] = { R64(0), R64(64), R64(128), R64(192) };
#undef R64
#undef R16
#undef R4
#undef S4
#undef S2
#undef S1

AVX2 static int lanes_avx2(const unsigned char *pE, const unsigned char *pC, size_t n,
                           const parity_tolerance *pTol, double floorRel, double worst,
                           parity_f32_sums *pS, unsigned char *aBucket, unsigned char *aLook)
{
    const __m256i expMask = _mm256_set1_epi32(0x7f800000), magMask = _mm256_set1_epi32(0x7fffffff);
    const __m256i ones = _mm256_set1_epi32(-1), zero = _mm256_setzero_si256();
    const __m256d vAtol = _mm256_set1_pd(pTol->atol), vRtol = _mm256_set1_pd(pTol->rtol);
    const __m256d vFloor = _mm256_set1_pd(floorRel), vWorst = _mm256_set1_pd(worst);
    half_acc h0, h1;
    lane_acc a;
    size_t i;
    int any = 0;

    load_lanes(&a, pS);
    half_load(&h0, &a, 0);
    half_load(&h1, &a, 4);
    for (i = 0; i + PARITY_F32_LANES <= n; i += PARITY_F32_LANES) {
        __m256i bE = _mm256_loadu_si256((const __m256i *)(pE + 4 * i));
        __m256i bC = _mm256_loadu_si256((const __m256i *)(pC + 4 * i));
        _mm_prefetch((const char *)(pE + 4 * i + PREFETCH_BYTES), _MM_HINT_T0);
        _mm_prefetch((const char *)(pC + 4 * i + PREFETCH_BYTES), _MM_HINT_T0);
        __m256i differ = _mm256_xor_si256(_mm256_cmpeq_epi32(bE, bC), ones);
        __m256i finE = _mm256_xor_si256(_mm256_cmpeq_epi32(_mm256_and_si256(bE, expMask), expMask), ones);
        __m256i finC = _mm256_xor_si256(_mm256_cmpeq_epi32(_mm256_and_si256(bC, expMask), expMask), ones);
        __m256i nonZero = _mm256_xor_si256(
            _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_or_si256(bE, bC), magMask), zero), ones);
        __m256i common = _mm256_and_si256(_mm256_and_si256(differ, nonZero), _mm256_and_si256(finE, finC));
        /* e^2 counts where e is finite and (common or same bits) */
        __m256i refMask = _mm256_and_si256(finE, _mm256_or_si256(common, _mm256_xor_si256(differ, ones)));
        /* sign-magnitude keys, 32-bit: (mag ^ s) - s, s = bits >> 31 (arithmetic) */
        __m256i sE = _mm256_srai_epi32(bE, 31), sC = _mm256_srai_epi32(bC, 31);
        __m256i kE = _mm256_sub_epi32(_mm256_xor_si256(_mm256_and_si256(bE, magMask), sE), sE);
        __m256i kC = _mm256_sub_epi32(_mm256_xor_si256(_mm256_and_si256(bC, magMask), sC), sC);
        __m256i dLo, dHi, cLo, cHi, rLo, rHi, bLo, bHi;
        int lookLo, lookHi;
        uint64_t aB[8], looks;
        int l;
        widen(differ, &dLo, &dHi);
        widen(common, &cLo, &cHi);
        widen(refMask, &rLo, &rHi);
        half_step(&h0, _mm256_castps256_ps128(_mm256_castsi256_ps(bE)),
                  _mm256_castps256_ps128(_mm256_castsi256_ps(bC)), dLo, cLo, rLo,
                  _mm256_castsi256_si128(kE), _mm256_castsi256_si128(kC), vAtol, vRtol, vFloor,
                  vWorst, &bLo, &lookLo);
        half_step(&h1, _mm256_extractf128_ps(_mm256_castsi256_ps(bE), 1),
                  _mm256_extractf128_ps(_mm256_castsi256_ps(bC), 1), dHi, cHi, rHi,
                  _mm256_extracti128_si256(kE, 1), _mm256_extracti128_si256(kC, 1), vAtol, vRtol,
                  vFloor, vWorst, &bHi, &lookHi);
        _mm256_storeu_si256((__m256i *)aB, bLo);
        _mm256_storeu_si256((__m256i *)(aB + 4), bHi);
        for (l = 0; l < PARITY_F32_LANES; l++) aBucket[i + l] = (unsigned char)aB[l];
        /* 8 look bytes at once: each bit of the masks spread to its byte */
        looks = kSpread[lookLo | (lookHi << 4)];
        memcpy(aLook + i, &looks, 8);
        any |= lookLo | lookHi;
    }
    half_store(&h0, &a, 0);
    half_store(&h1, &a, 4);
    any |= tail(&a, pE, pC, i, n, pTol, floorRel, worst, aBucket, aLook);
    store_lanes(&a, pS);
    return any != 0;
}

/* Buckets counted by value, 32 elements an instruction: 1 to BUCKETS_BY_VALUE (distances
 * under 2^BUCKETS_BY_VALUE ulps), where rounding differences put nearly all elements
 * (reordered float32 sums: 96% of them in README's benchmark); one increment per element
 * above. Incrementing a counter per element was a fifth to a quarter of the float32 pass
 * (perf, one thread on the 1 GiB benchmark pair). */
#define BUCKETS_BY_VALUE 6

__attribute__((target("avx2,popcnt,bmi")))
static void bucket_counts_avx2(const unsigned char *aBucket, size_t n, uint64_t *aHist)
{
    const __m256i vTop = _mm256_set1_epi8(BUCKETS_BY_VALUE);
    uint64_t aCount[BUCKETS_BY_VALUE + 1] = { 0 };
    size_t nVec = n / 32 * 32, i;
    int k;
    for (i = 0; i < nVec; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(aBucket + i));
        /* buckets are at most 64: the signed byte compare is an unsigned one */
        unsigned above = (unsigned)_mm256_movemask_epi8(_mm256_cmpgt_epi8(v, vTop));
        for (k = 1; k <= BUCKETS_BY_VALUE; k++)
            aCount[k] += (uint64_t)__builtin_popcount(
                (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8((char)k))));
        for (; above; above &= above - 1) aHist[aBucket[i + (size_t)__builtin_ctz(above)]]++;
    }
    for (k = 1; k <= BUCKETS_BY_VALUE; k++) aHist[k] += aCount[k];
    parity_f32_bucket_counts_portable(aBucket + nVec, n - nVec, aHist);
}

#define AVX512 __attribute__((target("avx512f,avx512vl,avx512dq")))

/* The same step with 8 lanes in one register each (AVX-512: 32 registers, no spills). */
AVX512 static int lanes_avx512(const unsigned char *pE, const unsigned char *pC, size_t n,
                               const parity_tolerance *pTol, double floorRel, double worst,
                               parity_f32_sums *pS, unsigned char *aBucket, unsigned char *aLook)
{
    const __m256i expMask = _mm256_set1_epi32(0x7f800000), magMask = _mm256_set1_epi32(0x7fffffff);
    const __m512d absMask = _mm512_castsi512_pd(_mm512_set1_epi64(0x7fffffffffffffffLL));
    const __m512d vAtol = _mm512_set1_pd(pTol->atol), vRtol = _mm512_set1_pd(pTol->rtol);
    const __m512d vFloor = _mm512_set1_pd(floorRel), vWorst = _mm512_set1_pd(worst);
    const __m512d vShrink = _mm512_set1_pd(1.0 - 0x1p-50);
    const __m512i magic = _mm512_set1_epi64(0x4330000000000000LL), one = _mm512_set1_epi64(1);
    lane_acc a;
    __m512d maxAbs, maxRel, sqD, sqR;
    __m512i maxUlp, nSame, nDiff;
    size_t i;
    int any = 0;

    load_lanes(&a, pS);
    maxAbs = _mm512_loadu_pd(a.maxAbs);
    maxRel = _mm512_loadu_pd(a.maxRel);
    sqD = _mm512_loadu_pd(a.sqD);
    sqR = _mm512_loadu_pd(a.sqR);
    maxUlp = _mm512_loadu_si512(a.maxUlp);
    nSame = _mm512_loadu_si512(a.nSame);
    nDiff = _mm512_loadu_si512(a.nDiff);
    for (i = 0; i + PARITY_F32_LANES <= n; i += PARITY_F32_LANES) {
        __m256i bE = _mm256_loadu_si256((const __m256i *)(pE + 4 * i));
        __m256i bC = _mm256_loadu_si256((const __m256i *)(pC + 4 * i));
        _mm_prefetch((const char *)(pE + 4 * i + PREFETCH_BYTES), _MM_HINT_T0);
        _mm_prefetch((const char *)(pC + 4 * i + PREFETCH_BYTES), _MM_HINT_T0);
        __mmask8 differ = _mm256_cmpneq_epi32_mask(bE, bC);
        __mmask8 finE = _mm256_cmpneq_epi32_mask(_mm256_and_si256(bE, expMask), expMask);
        __mmask8 finC = _mm256_cmpneq_epi32_mask(_mm256_and_si256(bC, expMask), expMask);
        __mmask8 nonZero = _mm256_test_epi32_mask(_mm256_or_si256(bE, bC), magMask);
        __mmask8 common = differ & finE & finC & nonZero;
        __mmask8 refMask = finE & (common | (__mmask8)~differ), look, big;
        __m512d e = _mm512_cvtps_pd(_mm256_castsi256_ps(bE));
        __m512d c = _mm512_cvtps_pd(_mm256_castsi256_ps(bC));
        __m512d d = _mm512_maskz_and_pd(common, _mm512_sub_pd(c, e), absMask);
        __m512d ae = _mm512_and_pd(e, absMask);
        __m512d denom = _mm512_max_pd(ae, vFloor);
        __m512d allowed = _mm512_add_pd(vAtol, _mm512_mul_pd(vRtol, ae));
        __m256i sE = _mm256_srai_epi32(bE, 31), sC = _mm256_srai_epi32(bC, 31);
        __m256i kE = _mm256_sub_epi32(_mm256_xor_si256(_mm256_and_si256(bE, magMask), sE), sE);
        __m256i kC = _mm256_sub_epi32(_mm256_xor_si256(_mm256_and_si256(bC, magMask), sC), sC);
        __m512i u = _mm512_maskz_abs_epi64(common, _mm512_sub_epi64(_mm512_cvtepi32_epi64(kE),
                                                                     _mm512_cvtepi32_epi64(kC)));
        __m512d x;
        __m512i b;
        uint64_t looks;
        maxAbs = _mm512_max_pd(d, maxAbs);
        big = _mm512_cmp_pd_mask(d, _mm512_mul_pd(_mm512_mul_pd(maxRel, denom), vShrink),
                                 _CMP_GT_OQ);
        if (big) maxRel = _mm512_max_pd(_mm512_div_pd(d, denom), maxRel);   /* see half_step */
        maxUlp = _mm512_max_epu64(u, maxUlp);
        sqD = _mm512_add_pd(sqD, _mm512_mul_pd(d, d));
        sqR = _mm512_add_pd(sqR, _mm512_maskz_mov_pd(refMask, _mm512_mul_pd(e, e)));
        nSame = _mm512_mask_add_epi64(nSame, (__mmask8)~differ, nSame, one);
        nDiff = _mm512_mask_add_epi64(nDiff, differ, nDiff, one);
        look = differ & ((__mmask8)~common | _mm512_cmp_pd_mask(d, allowed, _CMP_GT_OQ) |
                         _mm512_cmp_pd_mask(d, _mm512_mul_pd(vWorst, allowed), _CMP_GT_OQ));
        /* the bucket, as in half_step */
        x = _mm512_sub_pd(_mm512_castsi512_pd(_mm512_or_si512(u, magic)), _mm512_castsi512_pd(magic));
        b = _mm512_maskz_sub_epi64(common, _mm512_srli_epi64(_mm512_castpd_si512(x), 52),
                                   _mm512_set1_epi64(1022));
        _mm_storel_epi64((__m128i *)(aBucket + i), _mm512_cvtepi64_epi8(b));
        looks = kSpread[look];
        memcpy(aLook + i, &looks, 8);
        any |= look;
    }
    _mm512_storeu_pd(a.maxAbs, maxAbs);
    _mm512_storeu_pd(a.maxRel, maxRel);
    _mm512_storeu_pd(a.sqD, sqD);
    _mm512_storeu_pd(a.sqR, sqR);
    _mm512_storeu_si512(a.maxUlp, maxUlp);
    _mm512_storeu_si512(a.nSame, nSame);
    _mm512_storeu_si512(a.nDiff, nDiff);
    any |= tail(&a, pE, pC, i, n, pTol, floorRel, worst, aBucket, aLook);
    store_lanes(&a, pS);
    return any != 0;
}

/* The instructions to use, decided once: 2 AVX-512 (F, VL, DQ), 1 AVX2, 0 portable;
 * PARITY_NO_SIMD=1 forces the portable code, PARITY_NO_SIMD=avx512 at most AVX2. Threads
 * may race to set it, to the same value. */
static int simd_level(void)
{
    static int s_level = -1;
    int level = __atomic_load_n(&s_level, __ATOMIC_RELAXED);
    if (level < 0) {
        const char *z = getenv("PARITY_NO_SIMD");
        level = z && strcmp(z, "avx512") != 0 ? 0
              : !z && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                        __builtin_cpu_supports("avx512dq") ? 2
              : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
        __atomic_store_n(&s_level, level, __ATOMIC_RELAXED);
    }
    return level;
}

int parity_f32_lanes(const unsigned char *pE, const unsigned char *pC, size_t n,
                     const parity_tolerance *pTol, double floorRel, double worst,
                     parity_f32_sums *pS, unsigned char *aBucket, unsigned char *aLook)
{
    int level = simd_level();
    if (level == 2) return lanes_avx512(pE, pC, n, pTol, floorRel, worst, pS, aBucket, aLook);
    if (level) return lanes_avx2(pE, pC, n, pTol, floorRel, worst, pS, aBucket, aLook);
    return parity_f32_lanes_portable(pE, pC, n, pTol, floorRel, worst, pS, aBucket, aLook);
}

void parity_f32_bucket_counts(const unsigned char *aBucket, size_t n, uint64_t *aHist)
{
    if (simd_level()) bucket_counts_avx2(aBucket, n, aHist);   /* AVX-512 CPUs have AVX2 */
    else parity_f32_bucket_counts_portable(aBucket, n, aHist);
}
#else
int parity_f32_lanes(const unsigned char *pE, const unsigned char *pC, size_t n,
                     const parity_tolerance *pTol, double floorRel, double worst,
                     parity_f32_sums *pS, unsigned char *aBucket, unsigned char *aLook)
{
    return parity_f32_lanes_portable(pE, pC, n, pTol, floorRel, worst, pS, aBucket, aLook);
}

void parity_f32_bucket_counts(const unsigned char *aBucket, size_t n, uint64_t *aHist)
{
    parity_f32_bucket_counts_portable(aBucket, n, aHist);
}
#endif
