/*
 * op_binary.c - elementwise binary ops with torch broadcasting: add, sub (with the optional
 * `alpha` attribute: add(x, y, alpha=a) = x + a y, sub = x - a y), mul, div, maximum,
 * minimum. Shapes are right-aligned; each pair of dims must be equal or one of them 1; the
 * output shape must be the broadcast shape.
 *
 * Reference (PARITY_REF_PREC = 128 bits, see mpref.h): add and sub of two binary64 values,
 * mul (a product needs at most 106 bits: exact) and div are single correctly rounded MPFR
 * operations at 128 bits; with alpha != 1 the product a y is exact at 128 bits and the sum
 * is rounded once. IEEE special values come from MPFR: Inf - Inf = NaN, 0 * Inf = NaN,
 * x / +-0 = +-Inf (signs multiply, signed zeros kept), 0 / 0 = NaN. maximum and minimum
 * are exact and propagate NaN (torch.maximum / torch.minimum, unlike fmax / fmin).
 *
 * Bound. A correct kernel computes each op as one correctly rounded IEEE operation in its
 * computation dtype (acc_dtype: torch's "opmath" type, float32 for 16- and 8-bit tensors)
 * and then rounds once to the output dtype (IEEE 754-2019, Sec. 4.3 and 5.4; the standard
 * model fl(x op y) = (x op y)(1 + delta), |delta| <= u, of Higham, Accuracy and Stability
 * of Numerical Algorithms, 2nd ed. 2002, Sec. 2.2, in its ulp form, which also covers
 * gradual underflow: round to nearest errs by at most half the spacing of the binade of
 * the exact value, the subnormal spacing included). With r the exact result:
 *     |fl_acc(r) - r| <= e_acc = 0.5 ulp_acc(|r|)
 *     |fl_out(fl_acc(r)) - fl_acc(r)| <= 0.5 ulp_out(|r| + e_acc)   (ulp is monotone)
 *     bound = e_acc + 0.5 ulp_out(|r| + e_acc).
 * With alpha != 1 the kernel first forms t = fl(a' y), a' = alpha rounded to acc_dtype (torch
 * casts the scalar to the opmath type) or does one FMA, so before the final additions
 *     e_t = 0.5 ulp_acc(|a|) |y| + 0.5 ulp_acc(|a y| + 0.5 ulp_acc(|a|) |y|)
 * and e_acc = e_t + 0.5 ulp_acc(|r| + e_t) (an FMA only makes fewer roundings).
 * Operands wider than acc_dtype (a float64 input under a float32 contract) are rounded to
 * it first: for add/sub that adds 0.5 ulp_acc(|x|) + |a| 0.5 ulp_acc(|y|) before the
 * operation's own rounding; for mul/div it multiplies by (1 + d1)(1 + d2)^{+-1}, a relative
 * error of at most gamma_2(u_acc), gamma_1 when one operand is rounded (Higham 2002,
 * Lemma 3.1 and Lemma 3.3).
 * An operand wider than the output dtype exists only as a scalar: a Python number (the
 * add.Scalar / mul.Scalar `other` attribute, a 0-d float64 operand here, ops.c) or a 0-d
 * tensor, which torch's type promotion does not let widen the result. torch rounds such a
 * scalar either to the opmath type (torch 2.x: the CPU-scalar path reads it as opmath_t) or
 * to the common dtype, the output's (torch 1.13 casts it first). Measured (bf16 x in
 * [0.5, 4.5], 2^20 values, x * 0.1): torch 1.13 matches bf16(0.1) on every element and
 * differs from float(0.1) on 205,039; torch 2.15 the reverse. So such an operand is taken
 * as rounded to the narrower of acc_dtype and the output dtype (rnd below): the bound
 * holds for both.
 * maximum/minimum: exact in any precision at least as wide as the operands (and monotone,
 * so rounding the operands first changes nothing): the bound is 0, or half an ulp of the
 * output when the exact result is not representable in the (narrower) output dtype.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/propagate.h"
#include "tolerance/superacc_internal.h"
#include "formats/alloc.h"

typedef enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_MAX, BIN_MIN } binary_kind;

typedef struct {
    const parity_op_def *pDef;
    binary_kind kind;
    int hasAlpha;
} binary_spec;

static const binary_spec aSpec[] = {
    { &parity_op_add, BIN_ADD, 1 },
    { &parity_op_sub, BIN_SUB, 1 },
    { &parity_op_mul, BIN_MUL, 0 },
    { &parity_op_div, BIN_DIV, 0 },
    { &parity_op_maximum, BIN_MAX, 0 },
    { &parity_op_minimum, BIN_MIN, 0 },
};

/* Strides and alpha are the geometry (geom.elementwise); this is the rest. */
typedef struct {
    const binary_spec *pSpec;
    int narrowX, narrowY;                  /* operand rounded to rnd first */
    parity_dtype rnd;                      /* what a wider operand is rounded to */
    double gammaIn;                        /* gamma_k(u_rnd), k the narrowed operands,
                                            * rounded up once (MPFR) */
} binary_params;

static void binary_free(void *p) { free(p); }

static int binary_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                          char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0], *pY = &pCall->aIn[1];
    const char *zOp = pCall->pDef->zName;
    parity_elementwise_geometry *pG = &pCall->geom.elementwise;
    binary_params *pP;
    uint64_t aWant[PARITY_MAX_RANK];
    int nWant = pX->rank > pY->rank ? pX->rank : pY->rank, found;
    size_t i;
    double uAcc = parity_unit_roundoff(pCall->accDtype), uRnd;
    char zA[256], zB[256], zC[256], zD[256];

    pP = parity_calloc(1, sizeof *pP);
    if (!pP) { snprintf(zErr, nErr, "out of memory"); return -1; }
    pCall->pParams = pP;
    for (i = 0; i < sizeof aSpec / sizeof aSpec[0]; i++)
        if (aSpec[i].pDef == pCall->pDef) pP->pSpec = &aSpec[i];
    if (!pP->pSpec) { snprintf(zErr, nErr, "%s: not a binary op", zOp); return -1; }

    pG->alpha = 1.0;
    if (parity_param_float(aAttr, nAttr, "alpha", &pG->alpha, &found, zErr, nErr) != 0) return -1;
    if (found && !pP->pSpec->hasAlpha) {
        snprintf(zErr, nErr, "%s: takes no 'alpha' attribute", zOp);
        return -1;
    }
    if (!isfinite(pG->alpha)) {
        snprintf(zErr, nErr, "%s: alpha must be finite, got %g", zOp, pG->alpha);
        return -1;
    }

    {
        const int anRank[2] = { pX->rank, pY->rank };
        const uint64_t *const aapDim[2] = { pX->aDim, pY->aDim };
        int iBad;
        if (parity_broadcast_shape(2, anRank, aapDim, aWant, &iBad) < 0) {
            int iX = pX->rank - (nWant - iBad), iY = pY->rank - (nWant - iBad);
            snprintf(zErr, nErr, "%s: shapes %s and %s do not broadcast (dim %d: %llu vs %llu)",
                     zOp, parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA),
                     parity_shape_str(pY->rank, pY->aDim, zB, sizeof zB), iBad,
                     (unsigned long long)(iX >= 0 ? pX->aDim[iX] : 1),
                     (unsigned long long)(iY >= 0 ? pY->aDim[iY] : 1));
            return -1;
        }
    }
    if (!parity_op_take_out(pCall, nWant, aWant)) {
        snprintf(zErr, nErr, "%s: shapes %s and %s broadcast to %s, output has %s", zOp,
                 parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA),
                 parity_shape_str(pY->rank, pY->aDim, zB, sizeof zB),
                 parity_shape_str(nWant, aWant, zC, sizeof zC),
                 parity_shape_str(pCall->outRank, pCall->aOutDim, zD, sizeof zD));
        return -1;
    }
    /* the shapes broadcast (checked above): these cannot fail */
    parity_broadcast_strides(pCall->outRank, pCall->aOutDim, pX->aDim, pX->rank, 1,
                             pG->aStrideX);
    parity_broadcast_strides(pCall->outRank, pCall->aOutDim, pY->aDim, pY->rank, 1,
                             pG->aStrideY);
    /* a scalar wider than the output may be rounded to it (see the top of the file) */
    pP->rnd = parity_unit_roundoff(pCall->outDtype) > uAcc ? pCall->outDtype : pCall->accDtype;
    uRnd = parity_unit_roundoff(pP->rnd);
    pP->narrowX = parity_unit_roundoff(pX->dtype) < uRnd;   /* uRnd >= uAcc */
    pP->narrowY = parity_unit_roundoff(pY->dtype) < uRnd;
    pP->gammaIn = parity_gamma((double)(pP->narrowX + pP->narrowY), uRnd);
    return 0;
}

/* Half an ulp of dt at |x| (x >= 0). */
static double half_ulp(parity_dtype dt, double x)
{
    return 0.5 * parity_ulp_at(dt, x);
}

/* Where output element `linear`'s operands are (broadcast). */
static void binary_offsets(const parity_op_call *pCall, uint64_t linear, uint64_t *pOffX,
                           uint64_t *pOffY)
{
    const parity_elementwise_geometry *pG = &pCall->geom.elementwise;
    uint64_t offX = 0, offY = 0, rest = linear;
    int d;
    for (d = pCall->outRank - 1; d >= 0; d--) {
        uint64_t idx = rest % pCall->aOutDim[d];
        rest /= pCall->aOutDim[d];
        offX += idx * pG->aStrideX[d];
        offY += idx * pG->aStrideY[d];
    }
    *pOffX = offX;
    *pOffY = offY;
}

/* The operands of output element `linear`. */
static void binary_operands(const parity_op_call *pCall, uint64_t linear, double *pX, double *pY)
{
    uint64_t offX, offY;
    binary_offsets(pCall, linear, &offX, &offY);
    *pX = pCall->aIn[0].aValue[offX];
    *pY = pCall->aIn[1].aValue[offY];
}

/* The bound of an element with finite operands x, y (a: add's signed alpha) whose exact
 * result has magnitude r: the operands' rounding into acc where they are wider, alpha's
 * product, one rounding in acc and the output's. Monotone in r. */
static double binary_bound(const parity_op_call *pCall, const binary_params *pP, double x,
                           double y, double a, double r)
{
    parity_dtype acc = pCall->accDtype, out = pCall->outDtype;
    double eIn = 0.0, eAcc;
    switch (pP->pSpec->kind) {
    case BIN_ADD:
    case BIN_SUB:
        if (pP->narrowX) eIn += half_ulp(pP->rnd, fabs(x));
        if (pP->narrowY) eIn += fabs(a) * half_ulp(pP->rnd, fabs(y));
        if (fabs(a) != 1.0) {
            double eA = half_ulp(acc, fabs(a)) * fabs(y);
            eIn += eA + half_ulp(acc, fabs(a * y) + eA + eIn);
        }
        break;
    default:
        if (pP->narrowX || pP->narrowY)
            eIn = pP->gammaIn * r;
        break;
    }
    eAcc = eIn + half_ulp(acc, r + eIn);
    return eAcc + half_ulp(out, r + eAcc);
}

static int binary_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    const binary_params *pP = pCall->pParams;
    const parity_elementwise_geometry *pG = &pCall->geom.elementwise;
    parity_dtype out = pCall->outDtype;
    double x, y, r, a = pG->alpha;

    binary_operands(pCall, linear, &x, &y);

    switch (pP->pSpec->kind) {
    case BIN_ADD:
    case BIN_SUB:
        if (pP->pSpec->kind == BIN_SUB) a = -a;
        if (a == 1.0) {
            mpfr_set_d(ref, x, MPFR_RNDN);
            mpfr_add_d(ref, ref, y, MPFR_RNDN);
        } else {
            MPFR_DECL_INIT(t, PARITY_REF_PREC);     /* on the stack: no shared state */
            mpfr_set_d(t, y, MPFR_RNDN);
            mpfr_mul_d(t, t, a, MPFR_RNDN);          /* exact: 106 bits */
            mpfr_set_d(ref, x, MPFR_RNDN);
            mpfr_add(ref, ref, t, MPFR_RNDN);
        }
        break;
    case BIN_MUL:
        mpfr_set_d(ref, x, MPFR_RNDN);
        mpfr_mul_d(ref, ref, y, MPFR_RNDN);
        break;
    case BIN_DIV:
        mpfr_set_d(ref, x, MPFR_RNDN);
        mpfr_div_d(ref, ref, y, MPFR_RNDN);
        break;
    case BIN_MAX:
    case BIN_MIN: {
        double m;
        if (x != x || y != y) m = NAN;
        else if (pP->pSpec->kind == BIN_MAX) m = x > y ? x : y;
        else m = x < y ? x : y;
        mpfr_set_d(ref, m, MPFR_RNDN);
        *pBound = (m != m || parity_round_double_to_dtype(m, out) == m)
                      ? 0.0 : half_ulp(out, fabs(m));
        return 0;
    }
    }

    r = fabs(mpfr_get_d(ref, MPFR_RNDN));
    if (!isfinite(r) || !isfinite(x) || !isfinite(y)) {
        /* Non-finite results are judged by value alone (judge.h). */
        *pBound = 0.0;
        return 0;
    }
    *pBound = binary_bound(pCall, pP, x, y, a, r);   /* a: negated above for sub */
    return 0;
}

/* Fast path (ops.h): the operation in binary64, correctly rounded (IEEE 754): within 2^-53
 * of exact relative, 2^-52 of |a y| + |r| for add's alpha (two roundings). Stated: 2^-40 of
 * |x| + |a y| + |r| (add, sub) or of |r| (mul, div), a margin of 2^12 (tests/test_fast_path.c
 * measures it). Where the binary64 result is exact, the stated error is 0 and the bound is
 * MPFR's to the bit (spread 0): a sum or difference whose TwoSum error is 0 (any two float32
 * values a few binades apart), a product of operands of at most 53 significant bits
 * together (any two float32 values) whose result is normal (checked below). Compiled
 * values one ulp from eager put their error exactly on add's bound (0.5 ulp_acc + 0.5
 * ulp_out is 1 ulp) in a real transformer's residual adds, a tenth of their elements: an
 * interval there left every such tie to MPFR. Results that are 0 or below 2^-960 (no
 * relative accuracy), non-finite operands and max/min (exact, cheap in MPFR already) go to
 * MPFR. The bound is monotone in r, so its spread over the interval is the larger distance
 * to its ends. */
static int binary_fast(const parity_op_call *pCall, uint64_t linear, double *pRef, double *pErr,
                       double *pBound, double *pSpread)
{
    const binary_params *pP = pCall->pParams;
    double x, y, r, a = pCall->geom.elementwise.alpha, err, b, bLo, bHi;
    int kind = pP->pSpec->kind;

    if (kind == BIN_MAX || kind == BIN_MIN || pCall->accDtype == PARITY_DT_F64 ||
        pCall->outDtype == PARITY_DT_F64)
        return 0;
    binary_operands(pCall, linear, &x, &y);
    if (!isfinite(x) || !isfinite(y)) return 0;
    if (kind == BIN_SUB) a = -a;
    switch (kind) {
    case BIN_ADD:
    case BIN_SUB:
        if ((a == 1.0 || a == -1.0) && parity_sum_is_exact(x, a * y, &r)) {
            err = 0.0;
            break;
        }
        r = a == 1.0 ? x + y : (a == -1.0 ? x - y : x + a * y);
        err = 0x1p-40 * (fabs(x) + fabs(a * y) + fabs(r));
        break;
    case BIN_MUL:
        r = x * y;
        err = x != 0.0 && y != 0.0 && parity_significant_bits(x) + parity_significant_bits(y) <= 53
                  ? 0.0 : 0x1p-40 * fabs(r);
        break;
    default:
        r = x / y;
        err = 0x1p-40 * fabs(r);
        break;
    }
    if (!isfinite(r) || !(fabs(r) >= 0x1p-960)) return 0;
    b = binary_bound(pCall, pP, x, y, a, fabs(r));
    bLo = binary_bound(pCall, pP, x, y, a, fabs(r) > err ? fabs(r) - err : 0.0);
    bHi = binary_bound(pCall, pP, x, y, a, fabs(r) + err);
    *pRef = r;
    *pErr = err;
    *pBound = b;
    /* exact r: the MPFR path computes its bound from this very value */
    *pSpread = err == 0.0 ? 0.0
             : (bHi - b > b - bLo ? bHi - b : b - bLo) * (1.0 + 0x1p-50) + 0x1p-50 * b;
    return 1;
}

/* Propagation (ops.h, xPropagate). With x' within rx of x and y' within ry of y, the
 * exact result moves by at most (interval arithmetic, Moore et al. 2009, Ch. 2):
 *     add, sub   rx + |alpha| ry
 *     mul        |x| ry + |y| rx + rx ry
 *     div        (rx |y| + |x| ry) / (|y| (|y| - ry)), |y| > ry (else y' may be 0: vacuous)
 *     max, min   max(rx, ry) (1-Lipschitz in each operand)
 * and binary_bound grows with |x|, |y| and |r|, so its largest value on the box is at
 * |x| + rx, |y| + ry and |ref| + that reach. */
static int binary_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                            mpfr_t ref, double *pRadius)
{
    const binary_params *pP = pCall->pParams;
    uint64_t offX, offY;
    double x, y, rx, ry, ax, ay, a = pCall->geom.elementwise.alpha, dev, rMax, b;
    binary_kind kind = pP->pSpec->kind;

    if (binary_element(pCall, linear, ref, pRadius) != 0) return -1;
    binary_offsets(pCall, linear, &offX, &offY);
    x = pCall->aIn[0].aValue[offX];
    y = pCall->aIn[1].aValue[offY];
    rx = aRad[0][offX];
    ry = aRad[1][offY];
    if (rx == 0.0 && ry == 0.0) return 0;
    if ((kind == BIN_ADD || kind == BIN_SUB) && mpfr_inf_p(ref) &&
        ((isinf(x) && rx == 0.0 && isfinite(y) && ry < INFINITY) ||
         (isinf(y) && ry == 0.0 && a != 0.0 && isfinite(x) && rx < INFINITY)))
        return 0;   /* an exact infinity plus a finite box (a -inf mask added to scores) */
    if (!isfinite(x) || !isfinite(y) || !(rx < INFINITY) || !(ry < INFINITY) ||
        !mpfr_number_p(ref))
        return parity_propagate_vacuous(pCall, pRadius);
    ax = parity_radius_up(fabs(x) + rx, 1.0);
    ay = parity_radius_up(fabs(y) + ry, 1.0);
    switch (kind) {
    case BIN_ADD:
    case BIN_SUB:
        if (kind == BIN_SUB) a = -a;
        dev = rx + fabs(a) * ry;
        break;
    case BIN_MUL:
        dev = fabs(x) * ry + fabs(y) * rx + rx * ry;
        break;
    case BIN_DIV: {
        double gap = fabs(y) - ry;
        if (!(gap > 0.0)) return parity_propagate_vacuous(pCall, pRadius);
        gap = nextafter(gap, 0.0);     /* rounded down: below the exact |y| - ry */
        dev = (rx * fabs(y) + fabs(x) * ry) / (fabs(y) * gap);
        break;
    }
    default:
        dev = rx > ry ? rx : ry;
        rMax = parity_radius_up(fabs(mpfr_get_d(ref, MPFR_RNDA)) + dev, 1.0);
        *pRadius = parity_radius_up(dev + half_ulp(pCall->outDtype, rMax), 2.0);
        return 0;
    }
    dev = parity_radius_up(dev, 6.0);
    rMax = parity_radius_up(fabs(mpfr_get_d(ref, MPFR_RNDA)) + dev, 1.0);
    b = binary_bound(pCall, pP, ax, ay, a, rMax);
    *pRadius = parity_radius_up(dev + b, 12.0);
    return 0;
}

#define BINARY_MODEL "one IEEE rounding in acc_dtype then the output's: 0.5 ulp_acc + 0.5 ulp_out"

/* add and sub: generated cases try alpha = 0.5 too (fuzz/cases/layout.c). */
static const parity_op_case_attr aAlphaCase[] = {
    { "alpha", PARITY_ATTR_FLOAT, { NAN, 0.5 }, { NULL, NULL } },
};

#define BINARY_OP(sym, name, model, attr, nAttr, scalar, kernel) \
    const parity_op_def sym = { .zName = name, .zModel = model, .nInMin = 2, .nInMax = 2, \
                                .zKernel = kernel, \
                                .zScalarInput = scalar, .family = PARITY_FAMILY_BINARY, \
                                .aCaseAttr = attr, .nCaseAttr = nAttr, \
                                .xPrepare = binary_prepare, .xElement = binary_element, \
                                .xFreeParams = binary_free, .xFast = binary_fast, \
                                .xPropagate = binary_propagate };

/* add, sub, mul, div: torch's .Scalar overloads record the number as attribute `other`. */
BINARY_OP(parity_op_add, "add", BINARY_MODEL " (+ alpha product); IEEE 754 correct rounding",
          aAlphaCase, 1, "other", NULL)
BINARY_OP(parity_op_sub, "sub", BINARY_MODEL " (+ alpha product); IEEE 754 correct rounding",
          aAlphaCase, 1, "other", NULL)
BINARY_OP(parity_op_mul, "mul", BINARY_MODEL "; IEEE 754 correct rounding", NULL, 0, "other",
          NULL)
BINARY_OP(parity_op_div, "div", BINARY_MODEL "; IEEE 754 correct rounding", NULL, 0, "other",
          NULL)
BINARY_OP(parity_op_maximum, "maximum",
          "exact, NaN propagates; only the rounding to the output dtype (0.5 ulp)", NULL, 0, NULL,
          "max/min")
BINARY_OP(parity_op_minimum, "minimum",
          "exact, NaN propagates; only the rounding to the output dtype (0.5 ulp)", NULL, 0, NULL,
          "max/min")
