/*
 * tolerance.c - per-dtype default tolerances and the per-element score.
 *
 * Defaults for f16, bf16, f32 and f64 are torch.testing.assert_close's (PyTorch 2.x docs,
 * "torch.testing.assert_close": float16 rtol 1e-3 atol 1e-5, bfloat16 1.6e-2 / 1e-5,
 * float32 1.3e-6 / 1e-5, float64 1e-7 / 1e-7). assert_close has no fp8 defaults; we use the
 * same rule as its 16-bit entries: rtol of one ulp at 1 (2^-m for m mantissa bits: 2^-3 for
 * e4m3fn, 2^-2 for e5m2, twice the unit roundoff) and atol of the smallest subnormal (2^-9
 * and 2^-16), both read from the float table (formats/float_format.h), so one rounding step
 * of difference passes. Integers and bool are exact.
 */
#include <math.h>
#include "tolerance/tolerance.h"
#include "formats/float_format.h"

/* The fp8 default: one ulp at 1 relative, the smallest subnormal absolute. */
static void fp8_default(parity_dtype dt, parity_tolerance *pTol)
{
    const parity_float_format *pF = parity_float_format_of(dt);
    pTol->rtol = ldexp(1.0, -pF->mantissaBits);
    pTol->atol = pF->minSubnormal;
}

void parity_tolerance_default(parity_dtype dt, parity_tolerance *pTol)
{
    pTol->atol = 0.0;
    pTol->rtol = 0.0;
    pTol->useUlp = 0;
    pTol->maxUlp = 0;
    pTol->signedZeros = 0;
    pTol->exact = 0;
    switch (dt) {
    case PARITY_DT_F64: pTol->rtol = 1e-7; pTol->atol = 1e-7; break;
    case PARITY_DT_F32: pTol->rtol = 1.3e-6; pTol->atol = 1e-5; break;
    case PARITY_DT_F16: pTol->rtol = 1e-3; pTol->atol = 1e-5; break;
    case PARITY_DT_BF16: pTol->rtol = 1.6e-2; pTol->atol = 1e-5; break;
    case PARITY_DT_F8E4M3FN:
    case PARITY_DT_F8E5M2: fp8_default(dt, pTol); break;
    default: pTol->exact = 1; break;
    }
}

double parity_tolerance_score(const parity_tolerance *pTol, double e, double absErr,
                              uint64_t ulp)
{
    double allowed, score;

    if (absErr != absErr) return INFINITY;
    if (absErr == 0.0) return 0.0;
    if (pTol->exact) return INFINITY;
    allowed = pTol->atol + pTol->rtol * fabs(e);
    score = allowed > 0.0 ? absErr / allowed : INFINITY;
    if (pTol->useUlp) {
        /* An element within maxUlp passes even when atol/rtol would fail it; the score is
         * the smaller of the two ratios so "passes" stays "score <= 1". */
        double ulpScore = pTol->maxUlp > 0 ? (double)ulp / (double)pTol->maxUlp
                                           : (ulp == 0 ? 0.0 : INFINITY);
        if (ulpScore < score) score = ulpScore;
    }
    return score;
}
