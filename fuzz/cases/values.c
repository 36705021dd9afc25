/*
 * values.c - value recipes: the seeded fillers that make a case's input values.
 *
 * Each recipe aims at values that break compiled kernels: signed zeros, subnormals
 * (flush-to-zero), the largest finite values (overflow in a reassociated sum), NaN and
 * infinities (fast-math), -Inf mask rows with one row fully masked (softmax's 0/0), constant
 * rows (variance 0), cancelling pairs (order-dependent sums), inputs next to exp's overflow
 * threshold, integers (exact arithmetic), and sorted or reversed runs (the worst and best
 * summation orders). Every value is rounded to the input's dtype, so what the targets see is
 * exactly what the capture stores.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz/cases/cases.h"

static const char *const azKindName[PARITY_VAL_COUNT] = {
    "normal", "uniform", "signed_zeros", "subnormal", "extremes", "specials", "mask_rows",
    "const_rows", "cancel", "near_overflow", "ints", "sorted", "reversed", "ones",
};

const char *parity_value_kind_name(parity_value_kind kind)
{
    return (unsigned)kind < PARITY_VAL_COUNT ? azKindName[kind] : "unknown";
}

parity_value_kind parity_value_kind_find(const char *zName)
{
    int i;
    for (i = 0; i < PARITY_VAL_COUNT; i++)
        if (strcmp(azKindName[i], zName) == 0) return (parity_value_kind)i;
    return PARITY_VAL_COUNT;
}

static int cmp_up(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_down(const void *a, const void *b) { return cmp_up(b, a); }

/* The x where exp(x) overflows dt: log of its largest finite value (88.72 for float32 and
 * bfloat16, 11.09 for float16, 709.78 for float64). */
static double exp_overflow_threshold(parity_dtype dt)
{
    return log(parity_dtype_max_finite(dt));
}

/* Attention-style masks: normals with some rows cut to -Inf from a random point, one
 * column -Inf, and one row fully masked. */
static void fill_mask_rows(parity_rng *pRng, double *a, uint64_t n, uint64_t rowLen,
                           uint64_t nRow, double scale)
{
    uint64_t rowFull = parity_rng_below(pRng, nRow), col = parity_rng_below(pRng, rowLen), i;
    for (i = 0; i < n; i++) a[i] = scale * parity_rng_normal(pRng);
    for (i = 0; i < nRow; i++) {
        uint64_t k, cut = i == rowFull ? 0 : parity_rng_one_in(pRng, 3)
                                             ? parity_rng_below(pRng, rowLen) : rowLen;
        for (k = cut; k < rowLen; k++) a[i * rowLen + k] = -INFINITY;
        if (rowLen > 1) a[i * rowLen + col] = -INFINITY;
    }
}

/* x, -x pairs of large magnitude around small terms: the exact sum is small, so every
 * reassociation shows. */
static void fill_cancel(parity_rng *pRng, double *a, uint64_t n, double scale, parity_dtype dt)
{
    uint64_t i;
    for (i = 0; i < n; i++) {
        if (i + 1 < n && parity_rng_one_in(pRng, 2)) {
            double big = 1024.0 * scale * parity_rng_normal(pRng);
            a[i] = big;
            a[++i] = -parity_dtype_round(dt, big);
        } else {
            a[i] = scale * parity_rng_normal(pRng) / 64.0;
        }
    }
}

void parity_values_fill(parity_operand *pIn, const parity_value_recipe *pRecipe,
                        uint64_t seed, size_t iInput)
{
    parity_rng rng;
    uint64_t i, n = pIn->nElem;
    uint64_t rowLen = pIn->rank > 0 ? pIn->aDim[pIn->rank - 1] : 1;
    uint64_t nRow = rowLen ? n / rowLen : 0;
    double scale = ldexp(1.0, pRecipe->scaleLog2);
    double maxFinite = parity_dtype_max_finite(pIn->dtype);
    double tiny = parity_dtype_smallest_normal(pIn->dtype);
    double *a = pIn->aValue;

    parity_rng_seed(&rng, seed * 0x9E3779B97F4A7C15ull + iInput * 0xD1B54A32D192ED03ull + 1);
    if (n == 0) return;
    switch ((parity_value_kind)pRecipe->kind) {
    case PARITY_VAL_UNIFORM:
        for (i = 0; i < n; i++) a[i] = scale * (2.0 * parity_rng_unit(&rng) - 1.0);
        break;
    case PARITY_VAL_SIGNED_ZEROS:
        /* runs of zeros of both signs between normals: sign of a zero sum, -0 + 0 */
        for (i = 0; i < n; i++) {
            uint64_t r = parity_rng_below(&rng, 4);
            a[i] = r == 0 ? 0.0 : r == 1 ? -0.0 : scale * parity_rng_normal(&rng);
        }
        break;
    case PARITY_VAL_SUBNORMAL:
        for (i = 0; i < n; i++) {
            double s = parity_rng_one_in(&rng, 2) ? -1.0 : 1.0;
            a[i] = parity_rng_one_in(&rng, 4) ? parity_rng_normal(&rng)
                                              : s * tiny * parity_rng_unit(&rng);
        }
        break;
    case PARITY_VAL_EXTREMES:
        for (i = 0; i < n; i++) {
            uint64_t r = parity_rng_below(&rng, 8);
            a[i] = r == 0 ? maxFinite : r == 1 ? -maxFinite : r == 2 ? maxFinite / 2
                 : parity_rng_normal(&rng);
        }
        break;
    case PARITY_VAL_SPECIALS:
        for (i = 0; i < n; i++) {
            uint64_t r = parity_rng_below(&rng, 16);
            a[i] = r == 0 ? NAN : r == 1 ? INFINITY : r == 2 ? -INFINITY
                 : scale * parity_rng_normal(&rng);
        }
        a[parity_rng_below(&rng, n)] = NAN;   /* at least one NaN */
        break;
    case PARITY_VAL_MASK_ROWS:
        fill_mask_rows(&rng, a, n, rowLen, nRow, scale);
        break;
    case PARITY_VAL_CONST_ROWS:
        for (i = 0; i < nRow; i++) {
            double c = scale * parity_rng_normal(&rng);
            uint64_t k;
            for (k = 0; k < rowLen; k++) a[i * rowLen + k] = c;
        }
        break;
    case PARITY_VAL_CANCEL:
        fill_cancel(&rng, a, n, scale, pIn->dtype);
        break;
    case PARITY_VAL_NEAR_OVERFLOW: {
        double t = exp_overflow_threshold(pIn->dtype);
        for (i = 0; i < n; i++) a[i] = t + (1.5 * parity_rng_unit(&rng) - 1.0);
        break;
    }
    case PARITY_VAL_INTS:
        for (i = 0; i < n; i++) a[i] = (double)((int64_t)parity_rng_below(&rng, 17) - 8);
        break;
    case PARITY_VAL_SORTED:
    case PARITY_VAL_REVERSED:
        for (i = 0; i < n; i++) a[i] = scale * parity_rng_normal(&rng);
        for (i = 0; i < nRow; i++)
            qsort(a + i * rowLen, rowLen, sizeof *a,
                  pRecipe->kind == PARITY_VAL_SORTED ? cmp_up : cmp_down);
        break;
    case PARITY_VAL_ONES:
        for (i = 0; i < n; i++) a[i] = 1.0;
        break;
    case PARITY_VAL_NORMAL:
    default:
        for (i = 0; i < n; i++) a[i] = scale * parity_rng_normal(&rng);
        break;
    }
    for (i = 0; i < n; i++) a[i] = parity_dtype_round(pIn->dtype, a[i]);
}
