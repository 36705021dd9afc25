/*
 * op_unary.c - the unary elementwise ops without attributes (besides gelu's): gelu
 * (approximate "none" or "tanh"), silu, sigmoid, mish, tanh, exp, log, sqrt, rsqrt,
 * reciprocal, erf, cos, sin, hardsigmoid, hardswish, neg, abs. One table (kUnary below) drives them all: name, MPFR
 * reference, allowance, special values. One prepare (shapes equal; gelu's `approximate`)
 * and one element function serve every row. softplus and elu, whose attributes change
 * their special values and allowance, live in op_unary_param.c and share this file's
 * element machinery (op_unary_internal.h).
 *
 * Reference. Finite nonzero x: the row's MPFR function (mpfr_exp, mpfr_log, mpfr_sqrt,
 * mpfr_rec_sqrt, mpfr_ui_div, mpfr_erf, mpfr_tanh, mpfr_neg, mpfr_abs; correctly rounded to
 * PARITY_REF_PREC bits) or, for the composites, a short chain carried at PARITY_REF_PREC + 64
 * bits and rounded once to PARITY_REF_PREC, in forms free of cancellation:
 *   sigmoid(x)   = 1 / (1 + exp(-x))
 *   silu(x)      = x / (1 + exp(-x))
 *   gelu(x)      = x/2 (1 + erf(x/sqrt 2))        evaluated as  x/2 erfc(-x/sqrt 2)
 *   gelu_tanh(x) = x/2 (1 + tanh(z)), z = sqrt(2/pi)(x + 0.044715 x^3)
 *                                                  evaluated as  x / (1 + exp(-2z))
 *   mish(x)      = x tanh(log(1 + exp(x)))         evaluated as  x tanh(max(x, 0) +
 *                                                                log1p(exp(-|x|)))
 *   hardsigmoid(x) = min(max(x + 3, 0), 6) / 6     (exact but for the last rounding)
 *   hardswish(x)   = x hardsigmoid(x)
 * (the identities 1 + erf(t) = erfc(-t) and (1 + tanh z)/2 = 1/(1 + exp(-2z)) are exact; the
 * plain forms lose up to all 128 bits to cancellation for negative x). "tanh" gelu is its own
 * function (torch's approximate="tanh"), referenced by its own formula, not judged against
 * erf-gelu. The extra 64 bits cover the conditioning of the chains: erfc(t) amplifies the
 * relative error of t by 2t^2 <= 2^11 wherever the result is representable even in binary64
 * (t < 27), 1/(1 + exp(-2z)) by 2|z| <= 2^11 likewise, so the result stays within 2^-120 of
 * exact, the precision rule of mpref.h; mish's chain amplifies no relative error (log1p by
 * e / ((1 + e) log1p(e)) <= 1, tanh by 2s / sinh(2s) <= 1).
 * mish is torch's kernel's function, x tanh(log1p(exp(x))) with no threshold (CPU and CUDA;
 * inductor decomposes it into x tanh(softplus(x)) with softplus's threshold 20, which moves
 * tanh by less than 4 e^-60 past it, below every float format's resolution).
 * Special inputs come from the table, not from MPFR: NaN gives NaN; -Inf, -0, +0, +Inf give
 * the row's aSpecial values, which are C99 Annex F / IEEE 754-2019 9.2.1 values evaluated
 * through torch's formulas: log(+-0) = -Inf, sqrt(-0) = -0, rsqrt(+0) = +Inf and
 * rsqrt(-0) = -Inf (IEEE rSqrt and torch's 1/sqrt; mpfr_rec_sqrt gives +Inf there, which is
 * why the table decides), reciprocal(-0) = -Inf, exp(-Inf) = 0, sigmoid(-Inf) = 0,
 * cos(+-0) = 1, sin(+-0) = +-0, cos and sin of +-Inf NaN (C99 F.9.1.4), hardsigmoid(-Inf)
 * = 0 and (+Inf) = 1, hardswish(+-0) = +-0, hardswish(-Inf) = NaN (torch: -Inf * 0),
 * mish(-0) = -0, and silu(-Inf) = gelu(-Inf) = mish(-Inf) = NaN (torch computes -Inf * 0
 * there). In-domain NaNs (log, sqrt, rsqrt of negative x) come from MPFR, which returns NaN
 * exactly there.
 *
 * Bound. The math functions of C are not required to be correctly rounded, and glibc's are
 * not: the glibc manual ("Errors in Math Functions") lists their known errors in ulps (up to
 * a few ulps for exp, log, tanh, erf in float), and only the IEEE basic operations (+ - * /,
 * sqrt) are correctly rounded (IEEE 754-2019 5.4.1). So a correct kernel, computing in the
 * acc dtype (unit roundoff u, pCall->accDtype, default float32), is allowed for a primitive
 * function c ulps of acc at the exact result. With c_f = 4 (C_FN: 2x the worst documented
 * float error of glibc and CUDA's exp/log/tanh/erf, covering vectorised approximations such
 * as SLEEF's and CUDA's 2-ulp functions; fast-math intrinsics like __expf and tanh.approx are
 * not covered):
 *   exp, log, tanh, erf   c = c_f
 *   reciprocal            c = 0.5 (IEEE: correctly rounded)
 *   sqrt                  c = 1: IEEE's sqrt is correctly rounded, but torch 2.15's own
 *                                vectorised float32 kernel (AVX512 here) is not: 0.749 ulps
 *                                at worst, 84,024 of 1M points beyond half an ulp (1.13's,
 *                                0.500); measured by tests/bench/measure_torch_kernels.py.
 *                                A kernel of the framework itself is no divergence.
 *   rsqrt                 c = 2 (1/sqrt(x): two correct roundings, relative 2u + u^2;
 *                                also CUDA's rsqrtf, 2 ulps)
 *   cos, sin              c = c_f, relative to the result everywhere, also near the zeros
 *                                of the result and for large |x|: glibc's cosf/sinf and the
 *                                vectorised SLEEF u10 kernels torch's CPU kernels and
 *                                Inductor's C++ call reduce the argument exactly (Payne-Hanek)
 *                                and are within 1 ulp (glibc manual; SLEEF's documented
 *                                error bound of its u10 functions), CUDA's sinf/cosf within 2
 *                                (CUDA C Programming Guide, table of single-precision
 *                                functions). Fast-math __sinf/__cosf (absolute error 2^-21.4
 *                                after a short reduction) are not covered, as for exp.
 *   neg, abs              c = 0 (exact)
 * Composites are not primitive: their allowance is derived from c_f and the kernel's own
 * roundings (first order in u; "ulp" is ulp_acc, ulp(v) >= u|v|, so a relative error r u is
 * at most r ulps):
 *   sigmoid = 1/(1 + e), e = exp(-x) with relative error 2 c_f u: 1 + e adds u, the division
 *     u, so relative (2 c_f + 2) u: c = 2 c_f + 2 ulps (also covers exp(x)/(1 + exp(x))).
 *   silu = x / (1 + e) or x * sigmoid(x): x times a sigmoid with (2 c_f + 2) ulps, then one
 *     rounding: c = 1 plus |x| (2 c_f + 2) ulp(sigmoid(x)) (the second term counts sigmoid's
 *     ulps at sigmoid's own size, which covers a sigmoid that underflows into subnormals).
 *   gelu = x * 0.5 * (1 + erf(x * (1/sqrt 2))), torch's kernel: 1 + erf(t) cancels for x < 0,
 *     so its error is absolute, not relative: t's two roundings move erf by at most
 *     2 * (2/sqrt pi) max(t e^-t^2) u < u, erf adds c_f ulp(erf) <= c_f u, the sum u: the
 *     factor g = (1 + erf)/2 is off by at most (c_e + 2) u / 2 = (c_e + 2)/2 ulp(1/2). The
 *     result: c = 2 (the products, one possibly subnormal) plus |x| (c_e + 2)/2 ulp(1/2).
 *     For x < -4 a float kernel returns 0 (erff rounds to -1), which this term covers.
 *     c_e = 12, not c_f, from measuring the kernels users run (issue 12;
 *     `python3 tests/bench/measure_torch_kernels.py build/paritydiff 1000000 gelu float32`
 *     and its log-spaced sweep of |x| in [1e-6, 10]): torch's vectorised float32 GELU needs
 *     c_e = 4.5 in 1.13 (worst at x = -0.0652: 9.2 ulps, |x| 3.2 ulp(1/2) beyond the two
 *     products; 14 of 1M elements broke c_f = 4) and c_e = 9.0 in 2.15 (worst at x = -2.968,
 *     where 1 + erf cancels: 9.7e-7 absolute, |x| 5.5 ulp(1/2); 506 of 1M broke c_f = 4), so
 *     its erf is about 9 ulps off near -1. 12 leaves a third more; a kernel off by twice
 *     torch 2.15's error still fails.
 *   gelu_tanh = 0.5 * x * (1 + tanh(z)): z carries 7 roundings (x^3, the two constants, the
 *     products and the sum), which move tanh by at most 7 u max(z sech^2 z) < 3.2 u; tanh adds
 *     c_f u, the sum u: c = 2 plus |x| (c_f + 5)/2 ulp(1/2).
 *   mish = x * tanh(log1p(exp(x))) (torch): exp(x) carries 2 c_f u relative; log1p amplifies
 *     its argument's relative error by at most 1 and adds c_f ulps (2 c_f u): s =
 *     softplus(x) is off by 4 c_f u; tanh amplifies by 2s / sinh(2s) <= 1 and adds 2 c_f u:
 *     g = tanh(s) is off by 6 c_f u <= 6 c_f ulp(g), then one rounding: c = 1 plus |x| 6 c_f
 *     ulp(g) (g's ulps at g's size, which covers a subnormal g for x < -87.3 in float32: each
 *     step's error is then absolute in the subnormal spacing, and the chain's derivatives are
 *     at most 1). Policy: the model is relative, as torch's formula is. oneDNN's JIT
 *     evaluates g = ((1 + e)^2 - 1) / ((1 + e)^2 + 1), e = exp(x), which cancels for x < 0
 *     (1 + e rounds by u, an absolute error of g of about 3.5u, so relative u/e^x: mish(-20)
 *     = -4.1e-8 comes out -0). That loses what torch keeps and is reported, not absorbed
 *     (README, "Findings in oneDNN 2.6.3"); an allowance of |x| 4 ulp(1/2) for x < 0 would
 *     absorb it and is left out on purpose.
 *   hardsigmoid = min(max(x + 3, 0), 6) / 6 (torch's CPU kernel) or, as Inductor's
 *     decompositions and oneDNN's write it, min(max(x * (1/6) + 1/2, 0), 1): the first form
 *     rounds x + 3 and the quotient, relative u each, 2 ulps of the result; the second
 *     rounds 1/6 (relative u/2), x/6 (u/2 of |x|/6) and the sum, whose operands cancel
 *     near x = -3: an absolute |x| (u/2 + u/2) / 6 <= |x| u / 6 besides 0.5 ulp of the
 *     result. c = 2, plus |x| 1/2 ulp(1/2) (cG = 1/2 at gScale 2, with 3x margin over
 *     |x| u / 6 = |x| ulp(1/2) / 6; ulp(1/2) = u in every binary format). Past +-3 both
 *     forms clamp to exactly 0 or 1, and the |x| term is dropped there.
 *   hardswish = x * hardsigmoid(x) (either form, then the product; torch's CPU kernel is
 *     x * min(max(x + 3, 0), 6) / 6, the same error): g's 2 ulp(g) + |x| ulp(1/2) / 6
 *     absolute, with g < 1 in the linear region so 2 ulp(g) <= 2 ulp(1/2), times |x|, plus
 *     the product's rounding: c = 1, plus |x| 3 ulp(1/2) (cG = 3 at gScale 2, covering
 *     2 + 1/6 ulp(1/2)). Its product x * 6 overflows acc past max / 6 (5.7e37 in
 *     float32: torch 2.15 gives hardswish(1e38) = inf): there the bound is vacuous
 *     (overflowPossible, ops.h), as for a sum some legal order overflows.
 *   sigmoid and silu also cover a kernel whose exp(-x) overflows the acc dtype (x < -ln of
 *     its largest finite value, -88.7 in float32) and returns 0: the bound then adds |ref|.
 * In these rows the allowance covers all internal roundings of the kernel; c_f applies only
 * to the primitive function inside.
 * Then the rounding of the acc value to the output dtype: a value within A of ref rounds to
 * within 0.5 ulp_out(|ref| + A) of itself. So, per element,
 *   A = c ulp_acc(|ref|) + |x| c_g ulp_acc(g scale) + [x < 0] |x| c_neg ulp_acc(1/2)
 *       + [exp(-x) overflows acc] |ref|
 *   bound = A + 0.5 ulp_out(|ref| + A)
 * where the second term is dropped when every acc value is an output value (output dtype
 * equal to acc or wider: the acc rounding is then the last one, and counting a second half
 * ulp would let a 1-ulp sqrt pass), and the bound is 0 when A = 0 and ref is representable
 * (neg, abs). The input is taken as the captured value: its conversion to acc is exact when
 * the input dtype is no wider than acc (bf16, f16, f32 into the default float32); a float64
 * input judged under a float32 acc_dtype is outside this model. Near the overflow threshold
 * of the output dtype a kernel within its allowance can overflow where the reference does
 * not (one or two input values per function); that is reported as a failure.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tolerance/ops.h"
#include "tolerance/mpref.h"
#include "tolerance/op_unary_internal.h"
#include "tolerance/propagate.h"

#define C_FN PARITY_UNARY_C_FN
#define C_GELU_ERF 12.0   /* c_e: erf inside torch's GELU, measured (file comment) */
#define WORK_EXTRA PARITY_UNARY_WORK_EXTRA

typedef int (*unary_mpfr_fn)(mpfr_ptr y, mpfr_srcptr x, mpfr_rnd_t rnd);

typedef struct {
    const char *zName;        /* op name */
    const char *zApprox;      /* gelu's `approximate` value, else NULL */
    unary_mpfr_fn xRef;       /* reference, at y's precision, for finite nonzero x */
    double c;                 /* ulps of acc at |ref| */
    double cG;                /* composite x g(x): ulps of acc at gScale, times |x| */
    int gScale;               /* 0 none, 1 g = sigmoid(x), 2 g's ulps at 1/2,
                               * 3 g = tanh(softplus(x)), 4 at 1/2 for |x| < 3 and none
                               * beyond (hardsigmoid, hardswish clamp exactly there) */
    int expOverflow;          /* 1: the kernel's exp(-x) may overflow acc (sigmoid, silu);
                               * 2: its x * 6 may (hardswish) */
    double aSpecial[4];       /* result at -Inf, -0, +0, +Inf (NaN -> NaN always) */
    double (*xFastRef)(double x);   /* binary64 reference for the fast path, or NULL */
    double fastRel;           /* its stated relative error (see "Fast path") */
    double fastLo;            /* and the least x it holds for (finite nonzero x) */
    /* Propagation (xPropagate): the shape of the function, and for a dip (gelu, silu,
     * mish: falling to one minimum, rising after it) a bracket of the minimum's x and a
     * lower bound of its value, from a 40-digit mpmath evaluation (rounded outward; the
     * test of propagation checks them against a sweep). */
    int shape;
    double dipLo, dipHi, dipMin;
} unary_fn;

enum { SHAPE_UP, SHAPE_DOWN, SHAPE_POLE_DOWN, SHAPE_V, SHAPE_DIP, SHAPE_COS, SHAPE_SIN };

/* ---- references of the composites ------------------------------------------------ */

static int ref_reciprocal(mpfr_ptr y, mpfr_srcptr x, mpfr_rnd_t rnd)
{
    return mpfr_ui_div(y, 1, x, rnd);
}

/* num / (1 + exp(-x)); num = x (silu) or 1 (sigmoid). */
static int ref_logistic(mpfr_ptr y, mpfr_srcptr x, int timesX, mpfr_rnd_t rnd)
{
    mpfr_t t;
    int rc;
    mpfr_init2(t, mpfr_get_prec(y) + WORK_EXTRA);
    mpfr_neg(t, x, MPFR_RNDN);
    mpfr_exp(t, t, MPFR_RNDN);
    mpfr_add_ui(t, t, 1, MPFR_RNDN);
    rc = timesX ? mpfr_div(y, x, t, rnd) : mpfr_ui_div(y, 1, t, rnd);
    mpfr_clear(t);
    return rc;
}

static int ref_sigmoid(mpfr_ptr y, mpfr_srcptr x, mpfr_rnd_t rnd)
{
    return ref_logistic(y, x, 0, rnd);
}

static int ref_silu(mpfr_ptr y, mpfr_srcptr x, mpfr_rnd_t rnd)
{
    return ref_logistic(y, x, 1, rnd);
}

/* x/2 erfc(-x/sqrt 2) */
static int ref_gelu(mpfr_ptr y, mpfr_srcptr x, mpfr_rnd_t rnd)
{
    mpfr_t s, t;
    int rc;
    mpfr_inits2(mpfr_get_prec(y) + WORK_EXTRA, s, t, (mpfr_ptr)0);
    mpfr_sqrt_ui(s, 2, MPFR_RNDN);
    mpfr_div(t, x, s, MPFR_RNDN);
    mpfr_neg(t, t, MPFR_RNDN);
    mpfr_erfc(t, t, MPFR_RNDN);
    mpfr_mul(t, t, x, MPFR_RNDN);
    rc = mpfr_div_2ui(y, t, 1, rnd);
    mpfr_clears(s, t, (mpfr_ptr)0);
    return rc;
}

/* x / (1 + exp(-2z)), z = sqrt(2/pi)(x + 0.044715 x^3) */
static int ref_gelu_tanh(mpfr_ptr y, mpfr_srcptr x, mpfr_rnd_t rnd)
{
    mpfr_t k, z, t;
    int rc;
    mpfr_inits2(mpfr_get_prec(y) + WORK_EXTRA, k, z, t, (mpfr_ptr)0);
    mpfr_set_str(k, "0.044715", 10, MPFR_RNDN);
    mpfr_pow_ui(z, x, 3, MPFR_RNDN);
    mpfr_mul(z, z, k, MPFR_RNDN);
    mpfr_add(z, z, x, MPFR_RNDN);
    mpfr_const_pi(t, MPFR_RNDN);
    mpfr_ui_div(t, 2, t, MPFR_RNDN);
    mpfr_sqrt(t, t, MPFR_RNDN);
    mpfr_mul(z, z, t, MPFR_RNDN);       /* z */
    mpfr_mul_si(z, z, -2, MPFR_RNDN);
    mpfr_exp(z, z, MPFR_RNDN);
    mpfr_add_ui(z, z, 1, MPFR_RNDN);
    rc = mpfr_div(y, x, z, rnd);
    mpfr_clears(k, z, t, (mpfr_ptr)0);
    return rc;
}

/* softplus(z) = max(z, 0) + log1p(exp(-|z|)) at prec(y) + WORK_EXTRA, rounded once into y;
 * also softplus's reference (op_unary_internal.h). */
int parity_unary_softplus(mpfr_ptr y, mpfr_srcptr z, mpfr_rnd_t rnd)
{
    mpfr_t t;
    int rc;
    mpfr_init2(t, mpfr_get_prec(y) + WORK_EXTRA);
    mpfr_abs(t, z, MPFR_RNDN);
    mpfr_neg(t, t, MPFR_RNDN);
    mpfr_exp(t, t, MPFR_RNDN);
    mpfr_log1p(t, t, MPFR_RNDN);
    rc = mpfr_sgn(z) > 0 ? mpfr_add(y, t, z, rnd) : mpfr_set(y, t, rnd);
    mpfr_clear(t);
    return rc;
}

double parity_unary_softplus_d(double z)
{
    return fmax(z, 0.0) + log1p(exp(-fabs(z)));
}

/* x tanh(softplus(x)) */
static int ref_mish(mpfr_ptr y, mpfr_srcptr x, mpfr_rnd_t rnd)
{
    mpfr_t t;
    int rc;
    mpfr_init2(t, mpfr_get_prec(y) + WORK_EXTRA);
    parity_unary_softplus(t, x, MPFR_RNDN);
    mpfr_tanh(t, t, MPFR_RNDN);
    rc = mpfr_mul(y, t, x, rnd);
    mpfr_clear(t);
    return rc;
}

/* min(max(x + 3, 0), 6) / 6, exact up to the last rounding: x + 3 at 53 + 1100 bits holds
 * every binary64 x exactly. timesX: times x (hardswish), at 2 prec(y) + 1100 bits, exact. */
static int ref_hard_sigmoid_times(mpfr_ptr y, mpfr_srcptr x, int timesX, mpfr_rnd_t rnd)
{
    mpfr_t t;
    int rc;
    mpfr_init2(t, 2 * mpfr_get_prec(y) + 1100);
    mpfr_add_ui(t, x, 3, MPFR_RNDN);
    if (mpfr_sgn(t) < 0) mpfr_set_zero(t, 1);
    if (mpfr_cmp_ui(t, 6) > 0) mpfr_set_ui(t, 6, MPFR_RNDN);
    if (timesX) mpfr_mul(t, t, x, MPFR_RNDN);
    rc = mpfr_div_ui(y, t, 6, rnd);
    mpfr_clear(t);
    return rc;
}

static int ref_hardsigmoid(mpfr_ptr y, mpfr_srcptr x, mpfr_rnd_t rnd)
{
    return ref_hard_sigmoid_times(y, x, 0, rnd);
}

static int ref_hardswish(mpfr_ptr y, mpfr_srcptr x, mpfr_rnd_t rnd)
{
    return ref_hard_sigmoid_times(y, x, 1, rnd);
}

/* ---- binary64 references of the fast path ----------------------------------------- */

/* Fast path (ops.h, xFast; judge.c). Each function below evaluates the row's reference in
 * binary64 in the same cancellation-free form as the MPFR chain above, with glibc's double
 * functions (exp, log, log1p, tanh, erf, erfc, sqrt: within a few ulps of binary64 by glibc
 * 2.36's libm-test-ulps, at most 5 for erfc; + - * / and sqrt correctly rounded). A chain of
 * k such steps whose condition numbers are at most K stays within about k K 2^-52 of exact,
 * relative:
 *   exp, log, tanh, erf, sqrt    one step, K <= 1 (glibc's log is relative to its result,
 *                                 near 1 too)
 *   rsqrt, reciprocal            two correctly rounded steps (1/sqrt x) or one (1/x)
 *   sigmoid, silu                exp(-x), 1 + e, a division: K <= 1 each (x exact)
 *   mish                         exp, log1p, a max-add, tanh, a product: K <= 1 each
 *   gelu                         t = x / sqrt 2 (2 roundings), erfc(-t): erfc amplifies t's
 *                                relative error by 2 t^2 (t e^-t^2 / erfc t <= t^2 + 1/2),
 *                                <= 2^10.8 for x >= -30, the range held
 *   gelu_tanh                    z (7 roundings, no cancellation: x and x^3 share a sign),
 *                                exp(-2z) amplifies by 2|z| <= 2^6.6 for x >= -10, the range
 * so the worst analysed error is about 2^-40.5 (gelu at x = -30). The stated error is
 * FAST_REL = 2^-32 relative, for every row: tests/test_fast_path.c measures each function
 * against MPFR over random inputs across its range and its hard regions (gelu's and
 * gelu_tanh's tails, 1 + e near its limits, log near 1) and requires the worst error it sees
 * times 2^10 to stay below it. Inputs below fastLo, results that are zero or below 2^-960
 * (where binary64 loses relative accuracy) and special inputs go to MPFR. That error is far
 * below every bound the fast path decides with (0.5 ulp of float32 is 2^-25 relative): only
 * compiled values within 2^-32 |ref| of the bound are left to MPFR. Outputs or acc dtypes of
 * float64, whose bounds are near binary64's own accuracy, always take the MPFR path. */
#define FAST_REL 0x1p-32

static double fast_gelu(double x)        { return 0.5 * x * erfc(-x * M_SQRT1_2); }
static double fast_gelu_tanh(double x)
{
    double z = sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * z));
}
static double fast_silu(double x)        { return x / (1.0 + exp(-x)); }
static double fast_sigmoid(double x)     { return 1.0 / (1.0 + exp(-x)); }
static double fast_mish(double x)        { return x * tanh(parity_unary_softplus_d(x)); }
static double fast_rsqrt(double x)       { return 1.0 / sqrt(x); }
static double fast_reciprocal(double x)  { return 1.0 / x; }
static double fast_neg(double x)         { return -x; }

/* ---- the table -------------------------------------------------------------------- */

#define NaN_ NAN
#define INF_ INFINITY

#define F FAST_REL
static const unary_fn kUnary[] = {
    /* name         approx  reference       c             cG              gS ovf  -Inf  -0     +0     +Inf     fast             rel  least x */
    { "gelu",       "none", ref_gelu,       2.0,          (C_GELU_ERF + 2) / 2, 2, 0, { NaN_, -0.0,  0.0,   INF_ }, fast_gelu,       F, -30, SHAPE_DIP, -0.7618, -0.7418, -0.16998 },
    { "gelu",       "tanh", ref_gelu_tanh,  2.0,          (C_FN + 5) / 2, 2, 0, { NaN_, -0.0,  0.0,   INF_ }, fast_gelu_tanh,  F, -10, SHAPE_DIP, -0.7625, -0.7425, -0.17005 },
    { "silu",       NULL,   ref_silu,       1.0,          2 * C_FN + 2,   1, 1, { NaN_, -0.0,  0.0,   INF_ }, fast_silu,       F, -700, SHAPE_DIP, -1.2885, -1.2685, -0.27847 },
    { "sigmoid",    NULL,   ref_sigmoid,    2 * C_FN + 2, 0,              0, 1, { 0.0,  0.5,   0.5,   1.0 },  fast_sigmoid,    F, -700, SHAPE_UP, 0, 0, 0 },
    { "mish",       NULL,   ref_mish,       1.0,          6 * C_FN,       3, 0, { NaN_, -0.0,  0.0,   INF_ }, fast_mish,       F, -700, SHAPE_DIP, -1.2025, -1.1825, -0.30885 },
    { "tanh",       NULL,   mpfr_tanh,      C_FN,         0,              0, 0, { -1.0, -0.0,  0.0,   1.0 },  tanh,            F, -INF_, SHAPE_UP, 0, 0, 0 },
    { "exp",        NULL,   mpfr_exp,       C_FN,         0,              0, 0, { 0.0,  1.0,   1.0,   INF_ }, exp,             F, -700, SHAPE_UP, 0, 0, 0 },
    { "log",        NULL,   mpfr_log,       C_FN,         0,              0, 0, { NaN_, -INF_, -INF_, INF_ }, log,             F, 0, SHAPE_UP, 0, 0, 0 },
    { "sqrt",       NULL,   mpfr_sqrt,      1.0,          0,              0, 0, { NaN_, -0.0,  0.0,   INF_ }, sqrt,            F, 0, SHAPE_UP, 0, 0, 0 },
    { "rsqrt",      NULL,   mpfr_rec_sqrt,  2.0,          0,              0, 0, { NaN_, -INF_, INF_,  0.0 },  fast_rsqrt,      F, 0, SHAPE_DOWN, 0, 0, 0 },
    { "reciprocal", NULL,   ref_reciprocal, 0.5,          0,              0, 0, { -0.0, -INF_, INF_,  0.0 },  fast_reciprocal, F, -INF_, SHAPE_POLE_DOWN, 0, 0, 0 },
    { "erf",        NULL,   mpfr_erf,       C_FN,         0,              0, 0, { -1.0, -0.0,  0.0,   1.0 },  erf,             F, -INF_, SHAPE_UP, 0, 0, 0 },
    /* no fast path: glibc's double cos and sin are not documented to 2^-32 at every x */
    { "cos",        NULL,   mpfr_cos,       C_FN,         0,              0, 0, { NaN_, 1.0,   1.0,   NaN_ }, NULL,            0, 0, SHAPE_COS, 0, 0, 0 },
    { "sin",        NULL,   mpfr_sin,       C_FN,         0,              0, 0, { NaN_, -0.0,  0.0,   NaN_ }, NULL,            0, 0, SHAPE_SIN, 0, 0, 0 },
    /* hardswish's minimum: x = -3/2, value -3/8 exactly */
    { "hardsigmoid", NULL,  ref_hardsigmoid, 2.0,         0.5,            4, 0, { 0.0,  0.5,   0.5,   1.0 },  NULL,            0, 0, SHAPE_UP, 0, 0, 0 },
    { "hardswish",  NULL,   ref_hardswish,  1.0,          3.0,            4, 2, { NaN_, -0.0,  0.0,   INF_ }, NULL,            0, 0, SHAPE_DIP, -1.5, -1.5, -0.375 },
    /* exact in binary64: stated error 0 */
    { "neg",        NULL,   mpfr_neg,       0.0,          0,              0, 0, { INF_, 0.0,   -0.0,  -INF_ }, fast_neg,       0, -INF_, SHAPE_DOWN, 0, 0, 0 },
    { "abs",        NULL,   mpfr_abs,       0.0,          0,              0, 0, { INF_, 0.0,   0.0,   INF_ },  fabs,           0, -INF_, SHAPE_V, 0, 0, 0 },
};
#undef F

/* ---- prepare and element ---------------------------------------------------------- */

/* Shape equality of input 0 and the output, for any elementwise op (op_unary_internal.h). */
int parity_unary_shape_check(parity_op_call *pCall, char *zErr, size_t nErr)
{
    const parity_operand *pX = &pCall->aIn[0];
    char zA[128], zB[128];
    if (parity_op_take_out(pCall, pX->rank, pX->aDim)) return 0;
    snprintf(zErr, nErr, "%s: input shape %s differs from output shape %s", pCall->pDef->zName,
             parity_shape_str(pX->rank, pX->aDim, zA, sizeof zA),
             parity_shape_str(pCall->outRank, pCall->aOutDim, zB, sizeof zB));
    return -1;
}

static int unary_prepare(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                         char *zErr, size_t nErr)
{
    const char *zName = pCall->pDef->zName, *zApprox = NULL;
    size_t i;
    if (parity_unary_shape_check(pCall, zErr, nErr) != 0) return -1;
    if (strcmp(zName, "gelu") == 0) {
        const parity_attr *p = parity_attr_find(aAttr, nAttr, "approximate");
        zApprox = "none";
        if (p) {
            if (p->kind != PARITY_ATTR_STRING || p->n != 1 || !p->azStr || !p->azStr[0]) {
                snprintf(zErr, nErr, "gelu: attribute 'approximate' must be one string, "
                         "\"none\" or \"tanh\"");
                return -1;
            }
            zApprox = p->azStr[0];
            if (strcmp(zApprox, "none") != 0 && strcmp(zApprox, "tanh") != 0) {
                snprintf(zErr, nErr, "gelu: attribute 'approximate' is \"%.64s\"; "
                         "torch accepts \"none\" or \"tanh\"", zApprox);
                return -1;
            }
        }
        pCall->geom.elementwise.approximateTanh = strcmp(zApprox, "tanh") == 0;
    }
    for (i = 0; i < sizeof kUnary / sizeof kUnary[0]; i++)
        if (strcmp(kUnary[i].zName, zName) == 0
            && (!zApprox || strcmp(kUnary[i].zApprox, zApprox) == 0)) {
            pCall->pParams = (void *)&kUnary[i];   /* read only; nothing to free */
            return 0;
        }
    snprintf(zErr, nErr, "%s: not a unary op", zName);
    return -1;
}

/* Whether every acc value is an output value (the acc rounding is then the last one). */
static int acc_fits_out(parity_dtype acc, parity_dtype out)
{
    if (acc == out || out == PARITY_DT_F64) return 1;
    return out == PARITY_DT_F32 && (acc == PARITY_DT_F16 || acc == PARITY_DT_BF16);
}

/* The bound of parity_unary_bound once the reference's representability is known. */
static double bound_given(const parity_op_call *pCall, int representable, double absRef,
                          double a)
{
    const parity_dtype out = pCall->outDtype;
    if (a == 0.0 && representable) return 0.0;
    return a + (acc_fits_out(pCall->accDtype, out) ? 0.0 : 0.5 * parity_ulp_at(out, absRef + a));
}

/* A plus the rounding to the output dtype (op_unary_internal.h). */
double parity_unary_bound(const parity_op_call *pCall, mpfr_srcptr ref, double absRef,
                          double a)
{
    int representable = a == 0.0 &&
        parity_round_to_dtype(ref, pCall->outDtype) == mpfr_get_d(ref, MPFR_RNDN);
    return bound_given(pCall, representable, absRef, a);
}

/* A (op_unary_internal.h) of a finite nonzero x whose reference has magnitude y: the row's
 * ulps of acc at y, its composite term from x, exp's overflow. */
static double unary_allowance(const unary_fn *pF, parity_dtype acc, double x, double y)
{
    double a = pF->c * parity_ulp_at(acc, y);
    if (pF->gScale == 4) {
        if (fabs(x) < 3.0) a += fabs(x) * pF->cG * parity_ulp_at(acc, 0.5);
    } else if (pF->gScale) {
        double g = pF->gScale == 1 ? 1.0 / (1.0 + exp(-x))
                 : pF->gScale == 3 ? tanh(parity_unary_softplus_d(x)) : 0.5;
        a += fabs(x) * pF->cG * parity_ulp_at(acc, g);
    }
    if (pF->expOverflow == 1 && -x > log(parity_dtype_max_finite(acc)) * (1.0 - 1e-6)) a += y;
    return a;
}

/* The fast path (ops.h): the row's binary64 reference within FAST_REL of exact, and the
 * bound when no ulp it takes changes over [ref - err, ref + err]. */
static int unary_fast(const parity_op_call *pCall, uint64_t linear, double *pRef, double *pErr,
                      double *pBound, double *pSpread)
{
    const unary_fn *pF = pCall->pParams;
    const parity_dtype acc = pCall->accDtype, out = pCall->outDtype;
    double x = pCall->aIn[0].aValue[linear], r, y, err, a, yLo, yHi;

    if (!pF->xFastRef || !isfinite(x) || x == 0.0 || !(x >= pF->fastLo)) return 0;
    if (pF->fastRel > 0.0 && (acc == PARITY_DT_F64 || out == PARITY_DT_F64)) return 0;
    r = pF->xFastRef(x);
    y = fabs(r);
    if (!isfinite(r) || (pF->fastRel > 0.0 && !(y >= 0x1p-960))) return 0;
    err = pF->fastRel * y;
    yLo = y - err;
    yHi = y + err;
    a = unary_allowance(pF, acc, x, y);
    if (parity_ulp_at(acc, yLo) != parity_ulp_at(acc, yHi) ||
        (pF->expOverflow && a != unary_allowance(pF, acc, x, yHi)))
        return 0;
    /* parity_unary_bound's bound, the same over the interval: its half ulp of the output
     * at |ref| + A must not change there (a = 0 rows are exact: r is the reference) */
    if (!(a == 0.0 && parity_round_double_to_dtype(r, out) == r) && !acc_fits_out(acc, out) &&
        parity_ulp_at(out, yLo + a) != parity_ulp_at(out, yHi + a))
        return 0;
    *pBound = bound_given(pCall, a == 0.0 && parity_round_double_to_dtype(r, out) == r, y, a);
    *pRef = r;
    *pErr = err;
    *pSpread = 0.0;
    return 1;
}

static int unary_element(parity_op_call *pCall, uint64_t linear, mpfr_t ref, double *pBound)
{
    const unary_fn *pF = pCall->pParams;
    const parity_dtype acc = pCall->accDtype;
    double x = pCall->aIn[0].aValue[linear], y, a;

    *pBound = 0.0;
    if (x != x) {
        mpfr_set_nan(ref);
        return 0;
    }
    if (isinf(x) || x == 0.0) {
        int k = isinf(x) ? (x < 0 ? 0 : 3) : (signbit(x) ? 1 : 2);
        y = pF->aSpecial[k];
        mpfr_set_d(ref, y, MPFR_RNDN);
        if (y != y || isinf(y)) return 0;
        a = pF->c * parity_ulp_at(acc, y);
    } else {
        mpfr_t xm;
        mpfr_init2(xm, 53);
        mpfr_set_d(xm, x, MPFR_RNDN);
        pF->xRef(ref, xm, MPFR_RNDN);
        mpfr_clear(xm);
        if (mpfr_nan_p(ref) || mpfr_inf_p(ref)) return 0;
        y = fabs(mpfr_get_d(ref, MPFR_RNDU));
        a = unary_allowance(pF, acc, x, y);
        /* torch's hardswish kernel forms x * relu6(x + 3) before dividing by 6: past
         * max / 6 (5.7e37 in float32) that overflows, a legal kernel's infinity */
        if (pF->expOverflow == 2 && fabs(x) * 6.0 > parity_dtype_max_finite(acc))
            pCall->overflowPossible = 1;
    }
    *pBound = parity_unary_bound(pCall, ref, fabs(y), a);
    return 0;
}

/* ---- propagation (ops.h, xPropagate; graph.h) ------------------------------------- */

/* The row's value at a finite nonzero x as an enclosure [*pLo, *pHi] in binary64: the
 * reference (within 2^-120 relative, mpref.h) widened by one binary64 ulp each way.
 * Returns 0, or -1 where it is not finite (a domain edge, an overflow). */
static int unary_at(const unary_fn *pF, double x, double *pLo, double *pHi)
{
    mpfr_t xm, y;
    double d;
    if (x == 0.0) {      /* the table's values at +-0; they must agree to be a value */
        if (pF->aSpecial[1] != pF->aSpecial[2] || !isfinite(pF->aSpecial[2])) return -1;
        *pLo = *pHi = pF->aSpecial[2];
        return 0;
    }
    mpfr_init2(xm, 53);
    mpfr_init2(y, PARITY_REF_PREC);
    mpfr_set_d(xm, x, MPFR_RNDN);
    pF->xRef(y, xm, MPFR_RNDN);
    d = mpfr_get_d(y, MPFR_RNDN);
    mpfr_clears(xm, y, (mpfr_ptr)0);
    if (!isfinite(d)) return -1;
    *pLo = nextafter(d, -INFINITY);
    *pHi = nextafter(d, INFINITY);
    return 0;
}

/* cos (sin: isSin) over [lo, hi] given enclosures of its values at the ends: their hull,
 * widened to 1 where the box holds a maximum (cos: 2k pi; sin: pi/2 + 2k pi) and to -1
 * where it holds a minimum (cos: (2k + 1) pi; sin: -pi/2 + 2k pi). The test is made in
 * binary64 on x / (pi/2), whose rounding is far below the 2^-20 relative slack it is
 * given, so a box within that of an extremum counts as holding it (wider, never
 * narrower). A box of pi or more holds both. */
static int periodic_reach(int isSin, double lo, double hi, double aLo, double aHi, double bLo,
                          double bHi, double *pLo, double *pHi)
{
    double qLo, qHi, slack;
    *pLo = fmin(aLo, bLo);
    *pHi = fmax(aHi, bHi);
    if (hi - lo >= M_PI || fmax(fabs(lo), fabs(hi)) >= 0x1p30) {   /* or too far to step */
        *pLo = -1.0;
        *pHi = 1.0;
        return 0;
    }
    /* quarter periods: extrema of cos at even multiples of pi/2 (max at 4k, min at 4k+2),
     * of sin at odd ones (max at 4k+1, min at 4k+3) */
    slack = 0x1p-20 * (1.0 + fmax(fabs(lo), fabs(hi)) / M_PI_2);
    qLo = lo / M_PI_2 - slack;
    qHi = hi / M_PI_2 + slack;
    {
        double q;
        for (q = ceil(qLo); q <= qHi; q += 1.0) {
            double m = fmod(q - (isSin ? 1.0 : 0.0), 4.0);
            if (m < 0) m += 4.0;
            if (m == 0.0) *pHi = 1.0;
            else if (m == 2.0) *pLo = -1.0;
        }
    }
    return 0;
}

/* The reach of the row's function over [lo, hi]: [*pLo, *pHi]. Returns -1 where it is
 * not finite or not a function there (a pole inside, a domain edge). */
static int unary_reach(const unary_fn *pF, double lo, double hi, double *pLo, double *pHi)
{
    double aLo, aHi, bLo, bHi;
    if (pF->shape == SHAPE_POLE_DOWN && lo <= 0.0 && hi >= 0.0) return -1;
    if (unary_at(pF, lo, &aLo, &aHi) != 0 || unary_at(pF, hi, &bLo, &bHi) != 0) return -1;
    switch (pF->shape) {
    case SHAPE_UP:
        *pLo = aLo;
        *pHi = bHi;
        return 0;
    case SHAPE_DOWN:
    case SHAPE_POLE_DOWN:
        *pLo = bLo;
        *pHi = aHi;
        return 0;
    case SHAPE_COS:
    case SHAPE_SIN:
        return periodic_reach(pF->shape == SHAPE_SIN, lo, hi, aLo, aHi, bLo, bHi, pLo, pHi);
    case SHAPE_V:        /* abs */
        *pLo = lo <= 0.0 && hi >= 0.0 ? 0.0 : fmin(aLo, bLo);
        *pHi = fmax(aHi, bHi);
        return 0;
    default:             /* a dip: monotone on each side of the minimum */
        *pHi = fmax(aHi, bHi);
        *pLo = hi >= pF->dipLo && lo <= pF->dipHi ? pF->dipMin : fmin(aLo, bLo);
        return 0;
    }
}

/* unary_allowance's largest value over x in [lo, hi] whose reference magnitude is at most
 * yMax: each term grows with |x|, with y and with g (sigmoid and tanh(softplus) rise with
 * x), so it is taken at their largest. */
static double unary_allowance_box(const unary_fn *pF, parity_dtype acc, double lo, double hi,
                                  double yMax)
{
    double a = pF->c * parity_ulp_at(acc, yMax), xMax = fmax(fabs(lo), fabs(hi));
    if (pF->gScale == 4) {
        if (lo < 3.0 && hi > -3.0) a += fmin(xMax, 3.0) * pF->cG * parity_ulp_at(acc, 0.5);
    } else if (pF->gScale) {
        double g = pF->gScale == 1 ? 1.0 / (1.0 + exp(-hi))
                 : pF->gScale == 3 ? tanh(parity_unary_softplus_d(hi)) : 0.5;
        /* g in binary64 is a few ulps of binary64 off; ulp_acc is a step function, so
         * nudge it up by far more than that before taking the step */
        a += xMax * pF->cG * parity_ulp_at(acc, g * (1.0 + 0x1p-40));
    }
    if (pF->expOverflow == 1 && -lo > log(parity_dtype_max_finite(acc)) * (1.0 - 1e-6))
        a += yMax;
    return a;
}

/* The propagation every unary op shares (op_unary_internal.h). */
int parity_unary_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                           mpfr_t ref, double *pRadius, parity_unary_box_fn xBox)
{
    double x = pCall->aIn[0].aValue[linear], r = aRad[0][linear];
    double lo, hi, yLo, yHi, a, reach;
    if (pCall->pDef->xElement(pCall, linear, ref, pRadius) != 0) return -1;
    if (r == 0.0) return 0;
    if (!isfinite(x) || !(r < INFINITY) || !mpfr_number_p(ref))
        return parity_propagate_vacuous(pCall, pRadius);
    parity_propagate_box(x, r, &lo, &hi);
    if (xBox(pCall, lo, hi, &yLo, &yHi, &a) != 0)
        return parity_propagate_vacuous(pCall, pRadius);
    reach = fmax(parity_radius_between(ref, yLo), parity_radius_between(ref, yHi));
    /* bound_given at the reach's largest magnitude with the output rounding always
     * counted: its largest value over the box */
    *pRadius = parity_radius_up(reach + bound_given(pCall, 0, fmax(fabs(yLo), fabs(yHi)), a),
                                8.0);
    return 0;
}

static int unary_box(const parity_op_call *pCall, double lo, double hi, double *pLo,
                     double *pHi, double *pA)
{
    const unary_fn *pF = pCall->pParams;
    if (unary_reach(pF, lo, hi, pLo, pHi) != 0) return -1;
    *pA = unary_allowance_box(pF, pCall->accDtype, lo, hi, fmax(fabs(*pLo), fabs(*pHi)));
    return 0;
}

static int unary_propagate(parity_op_call *pCall, const double *const *aRad, uint64_t linear,
                           mpfr_t ref, double *pRadius)
{
    return parity_unary_propagate(pCall, aRad, linear, ref, pRadius, unary_box);
}

#define UNARY_OP(sym, name, model) \
    const parity_op_def sym = { .zName = name, .zModel = model, .nInMin = 1, .nInMax = 1, \
                                .family = PARITY_FAMILY_UNARY, .xPrepare = unary_prepare, \
                                .xElement = unary_element, .xFast = unary_fast, \
                                .xPropagate = unary_propagate };
/* gelu's generated cases try approximate="tanh" too (fuzz/cases/layout.c). */
#define UNARY_OP_ATTR(sym, name, model, attr) \
    const parity_op_def sym = { .zName = name, .zModel = model, .nInMin = 1, .nInMax = 1, \
                                .family = PARITY_FAMILY_UNARY, .aCaseAttr = attr, \
                                .nCaseAttr = 1, .xPrepare = unary_prepare, \
                                .xElement = unary_element, .xFast = unary_fast, \
                                .xPropagate = unary_propagate };

static const parity_op_case_attr aGeluCase[] = {
    { "approximate", PARITY_ATTR_STRING, { 0, 0 }, { NULL, "tanh" } },
};

UNARY_OP_ATTR(parity_op_gelu, "gelu",
         "approximate none: c = 2 ulps + |x| 7 ulp(1/2) (erf within 12 ulps as measured in "
         "torch 2.15's kernel, 1 + erf cancels), tanh: |x| (c_f + 5)/2 ulp(1/2) (tanh within "
         "c_f = 4 ulps), then 0.5 ulp_out", aGeluCase)
UNARY_OP(parity_op_silu, "silu",
         "1 ulp + |x| (2 c_f + 2) ulp(sigmoid(x)), exp within c_f = 4 ulps; 0.5 ulp_out")
UNARY_OP(parity_op_mish, "mish",
         "1 ulp + |x| 6 c_f ulp(tanh(softplus(x))) (exp, log1p, tanh within c_f = 4 ulps); "
         "0.5 ulp_out")
UNARY_OP(parity_op_sigmoid, "sigmoid",
         "2 c_f + 2 = 10 ulps of acc (exp within c_f = 4 ulps, glibc manual); 0.5 ulp_out")
UNARY_OP(parity_op_tanh, "tanh", "4 ulps of acc (glibc manual, Errors in Math Functions); 0.5 ulp_out")
UNARY_OP(parity_op_exp, "exp", "4 ulps of acc (glibc manual, Errors in Math Functions); 0.5 ulp_out")
UNARY_OP(parity_op_log, "log", "4 ulps of acc (glibc manual, Errors in Math Functions); 0.5 ulp_out")
UNARY_OP(parity_op_sqrt, "sqrt", "correctly rounded in acc (IEEE 754), 0.5 ulp; 0.5 ulp_out")
UNARY_OP(parity_op_rsqrt, "rsqrt", "2 ulps of acc (1/sqrt: two roundings); 0.5 ulp_out")
UNARY_OP(parity_op_reciprocal, "reciprocal", "correctly rounded in acc (IEEE 754), 0.5 ulp; 0.5 ulp_out")
UNARY_OP(parity_op_erf, "erf", "4 ulps of acc (glibc manual, Errors in Math Functions); 0.5 ulp_out")
UNARY_OP(parity_op_cos, "cos", "4 ulps of acc, relative everywhere (glibc, SLEEF u10: exact "
         "argument reduction, 1 ulp; CUDA cosf: 2); 0.5 ulp_out")
UNARY_OP(parity_op_sin, "sin", "4 ulps of acc, relative everywhere (glibc, SLEEF u10: exact "
         "argument reduction, 1 ulp; CUDA sinf: 2); 0.5 ulp_out")
UNARY_OP(parity_op_hardsigmoid, "hardsigmoid",
         "2 ulps + |x| ulp(1/2) / 2 (the x/6 + 1/2 form cancels near -3); 0.5 ulp_out")
UNARY_OP(parity_op_hardswish, "hardswish",
         "1 ulp + |x| 3 ulp(1/2) (x times hardsigmoid's error); 0.5 ulp_out")
UNARY_OP(parity_op_neg, "neg", "exact; only the rounding to the output dtype (0.5 ulp)")
UNARY_OP(parity_op_abs, "abs", "exact; only the rounding to the output dtype (0.5 ulp)")
