/*
 * validate_libm.c - the accuracy of glibc's expf, logf, tanhf, sinf, cosf and erff, measured
 * against an MPFR reference (issue "semantic judgement": a validation table that no one here
 * chose). tests/bench/validate_libm.sh runs it and sets the results beside glibc's own
 * published figures (libm-test-ulps) and the registry's allowance (tolerance/op_unary.c).
 *
 * Usage: validate_libm [N_RANDOM [THREADS [SEED]]]   (defaults 4000000, 2, 20240601)
 *
 * Input sets, every finite value of each (NaN and +-Inf inputs are excluded):
 *   bf16    the 65,536 bfloat16 bit patterns, decoded with parity_decode (65,280 finite)
 *   f16     the 65,536 float16 bit patterns, decoded with parity_decode (63,488 finite)
 *   random  N_RANDOM float32 values whose 32-bit patterns are drawn uniformly (splitmix64,
 *           fixed seed; NaN/Inf patterns redrawn): uniform over sign and biased exponent,
 *           so every binade, subnormals included, gets about N / 255 of them.
 *
 * Per input x (a float, exact in MPFR):
 *   ref  = f(x) in MPFR at 160 bits, rounded to nearest (mpfr_exp, mpfr_log, mpfr_tanh,
 *          mpfr_sin, mpfr_cos, mpfr_erf; relative error < 2^-159);
 *   skip when ref is NaN (log of x < 0), and when ref is infinite (log of +-0, exp beyond
 *          MPFR's exponent range) or rounds to +-Inf in float32 (overflow of exp): these
 *          are counted as "infinite" and checked only for glibc returning the same
 *          infinity;
 *   ulp  = parity_ulp_at(float32, ref): 2^(e - 23) for |ref| in [2^e, 2^(e+1)), e clamped
 *          to [-126, 127], so a reference in the subnormal range (or one that rounds to 0)
 *          is measured in the subnormal ulp 2^-149; the binade is taken from ref rounded
 *          toward zero to binary64, which never leaves ref's binade;
 *   err  = |y - ref| / ulp computed in MPFR (y = glibc's result, exact in MPFR; ulp is a
 *          power of two, so the division is exact), reported rounded up to binary64.
 *          A non-finite y against a finite ref counts as an infinite error.
 * An error up to 0.5 means y is the correctly rounded value; above 0.5 it is not.
 *
 * Output (stdout, tab-separated, one line per function and set):
 *   R fn set measured skipped infinite infinite_mismatch max_err x_hex x y ref above_half
 *                            (max_err rounded up to 4 decimals; above_half: how many
 *                            measured inputs were not correctly rounded)
 *   A fn allowance          (the registry's ulps for fn in float32, or "-" when fn has no
 *                            op in the registry: sin and cos)
 * The allowance is read from the registry itself: parity_op_begin/xElement on float32
 * operands with float32 output and the default float32 accumulation, bound / ulp(ref).
 * Ties in the maximum go to the lowest input index, so the output does not depend on
 * THREADS.
 */
#define _POSIX_C_SOURCE 200809L  /* clock_gettime */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "formats/dtype.h"
#include "tolerance/mpref.h"
#include "tolerance/ops.h"

#define REF_BITS 160

typedef float (*libm_fn)(float);
typedef int (*mpfr_fn)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);

static float call_expf(float x) { return expf(x); }
static float call_logf(float x) { return logf(x); }
static float call_tanhf(float x) { return tanhf(x); }
static float call_sinf(float x) { return sinf(x); }
static float call_cosf(float x) { return cosf(x); }
static float call_erff(float x) { return erff(x); }

static const struct {
    const char *zName;
    libm_fn xLibm;
    mpfr_fn xRef;
} kFn[] = {
    { "exp", call_expf, mpfr_exp },
    { "log", call_logf, mpfr_log },
    { "tanh", call_tanhf, mpfr_tanh },
    { "sin", call_sinf, mpfr_sin },
    { "cos", call_cosf, mpfr_cos },
    { "erf", call_erff, mpfr_erf },
};
#define N_FN (sizeof kFn / sizeof kFn[0])

/* The libm entry points are called through this volatile pointer so that no compiler
 * constant-folds or inlines them: the value measured is the one glibc returns. */
static libm_fn volatile g_xLibm;

typedef struct {
    uint64_t nMeasured, nSkipped, nOverflow, nOverflowMismatch, nAboveHalf;
    double maxErr;            /* -1 when nothing was measured */
    size_t iWorst;
    float worstY;
    double worstRef;
} set_result;

typedef struct {
    int iFn;
    const float *aX;
    size_t iBegin, iEnd;
    set_result res;
} job;

/* Measures one input; returns the error in ulps, or -1 for a skipped input. */
static double measure(int iFn, libm_fn xLibm, float x, mpfr_t ref, mpfr_t t, set_result *pR,
                      float *pY)
{
    float y;
    double rounded, ulp, err;

    mpfr_set_flt(t, x, MPFR_RNDN);             /* exact: 24 <= REF_BITS */
    kFn[iFn].xRef(ref, t, MPFR_RNDN);
    if (mpfr_nan_p(ref)) {
        pR->nSkipped++;
        return -1.0;
    }
    y = xLibm(x);
    *pY = y;
    /* An infinite reference (log 0, or exp beyond MPFR's exponent range) rounds to the
     * same infinity: it joins the float32 overflows. */
    rounded = parity_round_to_dtype(ref, PARITY_DT_F32);
    if (isinf(rounded)) {
        pR->nSkipped++;
        pR->nOverflow++;
        if (!(isinf(y) && (signbit(y) != 0) == (signbit(rounded) != 0)))
            pR->nOverflowMismatch++;
        return -1.0;
    }
    pR->nMeasured++;
    if (!isfinite(y))
        return INFINITY;
    ulp = parity_ulp_at(PARITY_DT_F32, mpfr_get_d(ref, MPFR_RNDZ));
    mpfr_set_flt(t, y, MPFR_RNDN);
    mpfr_sub(t, t, ref, MPFR_RNDN);
    mpfr_abs(t, t, MPFR_RNDN);
    mpfr_div_2si(t, t, ilogb(ulp), MPFR_RNDN);  /* ulp is a power of two */
    err = mpfr_get_d(t, MPFR_RNDU);
    return err;
}

static void *run_job(void *pArg)
{
    job *pJ = pArg;
    set_result *pR = &pJ->res;
    libm_fn xLibm = g_xLibm;
    mpfr_t ref, t;
    size_t i;

    mpfr_init2(ref, REF_BITS);
    mpfr_init2(t, REF_BITS);
    memset(pR, 0, sizeof *pR);
    pR->maxErr = -1.0;
    for (i = pJ->iBegin; i < pJ->iEnd; i++) {
        float y = 0.0f;
        double err = measure(pJ->iFn, xLibm, pJ->aX[i], ref, t, pR, &y);
        if (err < 0.0)
            continue;
        if (err > 0.5)
            pR->nAboveHalf++;
        if (err > pR->maxErr) {            /* strict: the lowest index wins ties */
            pR->maxErr = err;
            pR->iWorst = i;
            pR->worstY = y;
            pR->worstRef = mpfr_get_d(ref, MPFR_RNDN);
        }
    }
    mpfr_clear(ref);
    mpfr_clear(t);
    mpfr_free_cache();
    return NULL;
}

/* Runs function iFn over aX[0..n) in nThread contiguous chunks and merges the results. */
static int run_set(int iFn, const float *aX, size_t n, int nThread, set_result *pOut)
{
    job aJob[64];
    pthread_t aTid[64];
    int k;

    g_xLibm = kFn[iFn].xLibm;
    for (k = 0; k < nThread; k++) {
        aJob[k].iFn = iFn;
        aJob[k].aX = aX;
        aJob[k].iBegin = n * (size_t)k / (size_t)nThread;
        aJob[k].iEnd = n * (size_t)(k + 1) / (size_t)nThread;
        if (k > 0 && pthread_create(&aTid[k], NULL, run_job, &aJob[k]) != 0) {
            fprintf(stderr, "validate_libm: pthread_create failed\n");
            return -1;
        }
    }
    run_job(&aJob[0]);
    for (k = 1; k < nThread; k++)
        pthread_join(aTid[k], NULL);

    memset(pOut, 0, sizeof *pOut);
    pOut->maxErr = -1.0;
    for (k = 0; k < nThread; k++) {        /* chunks in index order: ties keep the lowest */
        const set_result *pR = &aJob[k].res;
        pOut->nMeasured += pR->nMeasured;
        pOut->nSkipped += pR->nSkipped;
        pOut->nOverflow += pR->nOverflow;
        pOut->nOverflowMismatch += pR->nOverflowMismatch;
        pOut->nAboveHalf += pR->nAboveHalf;
        if (pR->maxErr > pOut->maxErr) {
            pOut->maxErr = pR->maxErr;
            pOut->iWorst = pR->iWorst;
            pOut->worstY = pR->worstY;
            pOut->worstRef = pR->worstRef;
        }
    }
    return 0;
}

/* The finite values among the 65,536 bit patterns of a 16-bit float dtype. */
static size_t grid16(parity_dtype dt, float *aX)
{
    static uint16_t aBits[65536];
    static double aD[65536];
    size_t i, n = 0;

    for (i = 0; i < 65536; i++)
        aBits[i] = (uint16_t)i;
    parity_decode(dt, aBits, aD, 65536);
    for (i = 0; i < 65536; i++)
        if (isfinite(aD[i]))
            aX[n++] = (float)aD[i];        /* exact: bf16 and f16 values are float32 values */
    return n;
}

static uint64_t splitmix64(uint64_t *pState)
{
    uint64_t z = (*pState += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static void random_f32(float *aX, size_t n, uint64_t seed)
{
    uint64_t state = seed;
    size_t i = 0;
    while (i < n) {
        uint64_t r = splitmix64(&state);
        int half;
        for (half = 0; half < 2 && i < n; half++) {
            uint32_t bits = (uint32_t)(half ? r >> 32 : r);
            float f;
            if ((bits & 0x7F800000u) == 0x7F800000u)
                continue;                  /* NaN or Inf: redraw */
            memcpy(&f, &bits, sizeof f);
            aX[i++] = f;
        }
    }
}

/* The registry's allowance for op zName in ulps of float32 (float32 in and out, default
 * accumulation), or -1 when the registry has no such op. */
static double registry_allowance(const char *zName)
{
    static const double aV[] = { 0.3, 0.75, 1.7, 2.5 };  /* inside binades of the result */
    const parity_op_def *pDef = parity_op_find(zName);
    parity_operand in;
    parity_op_call call;
    uint64_t aDim[1] = { sizeof aV / sizeof aV[0] };
    double aIn[sizeof aV / sizeof aV[0]], maxC = -1.0, bound;
    char zErr[256];
    mpfr_t ref;
    size_t i;

    if (pDef == NULL)
        return -1.0;
    memcpy(aIn, aV, sizeof aIn);
    in = (parity_operand){ "x", PARITY_DT_F32, 1, { aDim[0] }, aDim[0], aIn };
    if (parity_op_begin(&call, pDef, &in, 1, PARITY_DT_F32, 1, aDim, PARITY_DT_INVALID, NULL,
                        0, zErr, sizeof zErr) != 0) {
        fprintf(stderr, "validate_libm: %s: %s\n", zName, zErr);
        return -1.0;
    }
    mpfr_init2(ref, PARITY_REF_PREC);
    for (i = 0; i < aDim[0]; i++) {
        if (pDef->xElement(&call, i, ref, &bound) != 0 || !mpfr_number_p(ref))
            continue;
        double c = bound / parity_ulp_at(PARITY_DT_F32, mpfr_get_d(ref, MPFR_RNDZ));
        if (c > maxC)
            maxC = c;
    }
    mpfr_clear(ref);
    parity_op_end(&call);
    return maxC;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int parse_u64(const char *z, uint64_t *pV)
{
    char *zEnd;
    errno = 0;
    unsigned long long v = strtoull(z, &zEnd, 10);
    if (errno != 0 || zEnd == z || *zEnd != '\0' || z[0] == '-')
        return -1;
    *pV = v;
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t nRandom = 4000000, nThread = 2, seed = 20240601;
    static float aBf16[65536], aF16[65536];
    float *aRandom;
    size_t nBf16, nF16;
    double t0 = now();
    size_t iFn;

    if (argc > 4 || (argc > 1 && parse_u64(argv[1], &nRandom) != 0)
        || (argc > 2 && (parse_u64(argv[2], &nThread) != 0 || nThread < 1 || nThread > 64))
        || (argc > 3 && parse_u64(argv[3], &seed) != 0)) {
        fprintf(stderr, "usage: validate_libm [N_RANDOM [THREADS (1..64) [SEED]]]\n");
        return 2;
    }
    aRandom = malloc((nRandom ? nRandom : 1) * sizeof(float));
    if (aRandom == NULL) {
        fprintf(stderr, "validate_libm: out of memory\n");
        return 2;
    }
    nBf16 = grid16(PARITY_DT_BF16, aBf16);
    nF16 = grid16(PARITY_DT_F16, aF16);
    random_f32(aRandom, nRandom, seed);

    printf("# validate_libm: %u-bit MPFR reference (MPFR %s); inputs: bf16 grid %zu finite, "
           "f16 grid %zu finite, random float32 %llu (uniform bit patterns, splitmix64 seed "
           "%llu); threads %llu\n",
           REF_BITS, mpfr_get_version(), nBf16, nF16, (unsigned long long)nRandom,
           (unsigned long long)seed, (unsigned long long)nThread);
    for (iFn = 0; iFn < N_FN; iFn++) {
        const struct { const char *zSet; const float *aX; size_t n; } aSet[3] = {
            { "bf16", aBf16, nBf16 }, { "f16", aF16, nF16 }, { "random", aRandom, nRandom },
        };
        int s;
        double allow = registry_allowance(kFn[iFn].zName);
        if (allow < 0.0)
            printf("A\t%s\t-\n", kFn[iFn].zName);
        else
            printf("A\t%s\t%.6g\n", kFn[iFn].zName, allow);
        for (s = 0; s < 3; s++) {
            set_result r;
            if (run_set((int)iFn, aSet[s].aX, aSet[s].n, (int)nThread, &r) != 0)
                return 2;
            if (r.maxErr < 0.0) {
                printf("R\t%s\t%s\t0\t%llu\t%llu\t%llu\t-\t-\t-\t-\t-\t0\n", kFn[iFn].zName,
                       aSet[s].zSet, (unsigned long long)r.nSkipped,
                       (unsigned long long)r.nOverflow,
                       (unsigned long long)r.nOverflowMismatch);
                continue;
            }
            float x = aSet[s].aX[r.iWorst];
            printf("R\t%s\t%s\t%llu\t%llu\t%llu\t%llu\t%.4f\t%a\t%.9g\t%.9g\t%.12g\t%llu\n",
                   kFn[iFn].zName, aSet[s].zSet, (unsigned long long)r.nMeasured,
                   (unsigned long long)r.nSkipped, (unsigned long long)r.nOverflow,
                   (unsigned long long)r.nOverflowMismatch, ceil(r.maxErr * 1e4) / 1e4, (double)x, (double)x,
                   (double)r.worstY, r.worstRef, (unsigned long long)r.nAboveHalf);
            fflush(stdout);
        }
    }
    printf("# elapsed %.1f s\n", now() - t0);
    free(aRandom);
    return 0;
}
