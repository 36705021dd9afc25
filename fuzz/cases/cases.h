/*
 * cases.h - the cases room of parityfuzz (fuzz/cases/): what a case is, how its spec expands
 * into tensors (case.c, layout.c, values.c), how it is stored (io.c) and encoded for
 * libFuzzer (codec.c), and how specs are drawn and mutated (shapes.c, mutate.c) from the
 * deterministic random streams below. It includes only tolerance/ and formats/: every other
 * room of fuzz/ builds on this one.
 *
 * A fuzz case: one registry op applied to generated tensors.
 *
 * A case has two forms:
 *   - its spec (parity_case_spec): the op's name, a layout variant, a vector of symbolic
 *     dims, one dtype and a value recipe per input plus a seed. Small and fixed-size; it is
 *     what the mutators change, what the minimizer shrinks, and (encoded by codec.c)
 *     what libFuzzer stores.
 *   - its expansion (parity_case): the concrete operands (shapes, decoded values), the
 *     parameters as the attributes the registry reads, and the output's dtype and shape.
 *     parity_case_expand makes it from the spec, deterministically; a case read back from
 *     a capture (io.c) carries stored values instead, which replay uses as they are.
 *
 * How dims and variant turn into operands and parameters is the op's family's layout
 * (layout.c); the output shape and the check that the result is legal are the registry's
 * own xPrepare (tolerance/ops.h): the fuzzer never holds a second copy of an op's shape
 * rules.
 *
 * Error style: 0 on success, -1 with a one-line reason in zErr.
 */
#ifndef PARITY_FUZZ_CASES_H
#define PARITY_FUZZ_CASES_H

#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include "tolerance/ops.h"

#define PARITY_CASE_VERSION 1
#define PARITY_CASE_MAX_IN 4        /* sdpa: q, k, v, attn_mask */
#define PARITY_CASE_MAX_DIMS 8
#define PARITY_CASE_MAX_PARAMS 8
#define PARITY_CASE_OP_LEN 40

/* Value recipes (values.c). Each fills one input deterministically from the case seed. */
typedef enum {
    PARITY_VAL_NORMAL,        /* N(0, scale^2) */
    PARITY_VAL_UNIFORM,       /* U(-scale, scale) */
    PARITY_VAL_SIGNED_ZEROS,  /* normal, with a run of +0 and -0 */
    PARITY_VAL_SUBNORMAL,     /* subnormals of the dtype, some normals */
    PARITY_VAL_EXTREMES,      /* +-max finite mixed with small values */
    PARITY_VAL_SPECIALS,      /* normal, with NaN, +Inf and -Inf sprinkled in */
    PARITY_VAL_MASK_ROWS,     /* normal, with -Inf rows (one fully masked) and columns */
    PARITY_VAL_CONST_ROWS,    /* every row constant */
    PARITY_VAL_CANCEL,        /* pairs x, -x of large magnitude plus small terms */
    PARITY_VAL_NEAR_OVERFLOW, /* just below and above the dtype's exp overflow threshold */
    PARITY_VAL_INTS,          /* small integers */
    PARITY_VAL_SORTED,        /* normal, sorted ascending */
    PARITY_VAL_REVERSED,      /* normal, sorted descending */
    PARITY_VAL_ONES,          /* every element 1 (the minimizer's simplest recipe) */
    PARITY_VAL_COUNT
} parity_value_kind;

typedef struct {
    uint8_t kind;             /* parity_value_kind */
    int8_t scaleLog2;         /* scale = 2^scaleLog2 for normal and uniform */
} parity_value_recipe;

typedef struct {
    char zOp[PARITY_CASE_OP_LEN];
    uint32_t variant;         /* layout choices (layout.c): rank, reduced dims, broadcast */
    parity_dtype dtype;       /* of the float inputs and of the output */
    int nDim;                 /* symbolic dims used by the layout */
    uint64_t aDim[PARITY_CASE_MAX_DIMS];
    parity_value_recipe aRecipe[PARITY_CASE_MAX_IN];
    uint64_t seed;
} parity_case_spec;

typedef struct parity_case parity_case;
struct parity_case {
    parity_case_spec spec;
    const parity_op_def *pDef;
    size_t nIn;
    parity_operand aIn[PARITY_CASE_MAX_IN];   /* zName points into azInName */
    char azInName[PARITY_CASE_MAX_IN][16];
    parity_attr aParam[PARITY_CASE_MAX_PARAMS];  /* as the registry reads them */
    size_t nParam;
    parity_dtype outDtype;
    int outRank;
    uint64_t aOutDim[PARITY_MAX_RANK];
    uint64_t nOut;
    uint32_t usedDims;        /* bit i: spec.aDim[i] shapes some tensor (the minimizer's
                               * and the mutators' targets) */
    double opCost;            /* the registry's reference terms per output element */
    int nomem;                /* laying it out ran out of memory (layout.c) */
    int fromStore;            /* values were read from a capture, not made by the recipe */
};

/* Most elements any input or the output may have, and most multiply-adds a case may cost:
 * the bounds that keep exec/s high (the generator and mutators stay inside them). */
#define PARITY_CASE_MAX_ELEMS  (1u << 20)
#define PARITY_CASE_MAX_WORK   (1u << 24)

/* Expands a spec: layout, shapes, parameters, values. Returns -1 (nothing allocated) when
 * the spec is not a legal case (unknown op, shape beyond the bounds, registry refusal). */
int parity_case_expand(const parity_case_spec *pSpec, parity_case *pCase, char *zErr,
                       size_t nErr);
/* Layout only: shapes and parameters, no values (aValue stays NULL). */
int parity_case_layout(const parity_case_spec *pSpec, parity_case *pCase, char *zErr,
                       size_t nErr);
/* Fills the inputs' values from the recipes (after parity_case_layout). */
int parity_case_fill_values(parity_case *pCase, char *zErr, size_t nErr);
void parity_case_free(parity_case *pCase);

/* Sets up the registry call for the case (the oracle and tests use it). */
int parity_case_op_begin(const parity_case *pCase, parity_op_call *pCall, char *zErr,
                         size_t nErr);
/* The same, shapes only (parity_op_begin_shape): the case's geometry for a kernel. */
int parity_case_op_shape(const parity_case *pCase, parity_op_call *pCall, char *zErr,
                         size_t nErr);

/* Work of the case in multiply-adds (roughly): what bounds its run time. The operands'
 * elements plus the output's times the registry's cost per element (ops.h, xCost). */
uint64_t parity_case_work(const parity_case *pCase);

/* One-line summary: "matmul f32 a[3, 67] b[67, 5] recipe=normal,specials seed=7". */
const char *parity_case_describe(const parity_case *pCase, char *zBuf, size_t nBuf);

/* ---- layouts (layout.c) ------------------------------------------------------------ */

/* What a symbolic dim stands for, so the mutators draw sizes that matter for it. */
typedef enum {
    PARITY_ROLE_BATCH,        /* outer dims: mostly small, often 1 */
    PARITY_ROLE_ROW,          /* rows and columns of elementwise and row-wise ops */
    PARITY_ROLE_REDUCE,       /* a reduced length: around split thresholds */
    PARITY_ROLE_K,            /* a dot-product length (large K with small M and N) */
    PARITY_ROLE_TILE,         /* M or N of a GEMM: tile sizes plus or minus a remainder */
    PARITY_ROLE_KERNEL        /* a convolution window: 1 to 7 */
} parity_dim_role;

/* An op's layout: its family's (one layout per family, layout.c), seen per op. */
typedef struct {
    const parity_op_def *pDef;  /* the registry entry */
    const char *zOp;          /* its name */
    int nDim;                 /* symbolic dims the layout reads */
    parity_dim_role aRole[PARITY_CASE_MAX_DIMS];
    uint32_t nVariant;        /* variants are 0 .. nVariant-1 */
} parity_layout_info;

/* The layout of a registry op, or NULL when its family has none. */
const parity_layout_info *parity_layout_of(const parity_op_def *pDef);
/* The same by name (NULL for a name the registry lacks). */
const parity_layout_info *parity_layout_find(const char *zOp);
/* Every op's layout, in registry order; *pn receives the count. */
const parity_layout_info *parity_layout_all(size_t *pn);
/* How many op families have a layout (the layout <-> registry test). */
int parity_layout_families(void);
/* Operands, parameters and output dtype of the spec's op into pC (zeroed, spec and pDef
 * set); parity_case_layout calls it, then has the registry work out the output shape. */
int parity_layout_apply(const parity_case_spec *pS, parity_case *pC, char *zErr, size_t nErr);

/* ---- value recipes (values.c) ---------------------------------------------------- */

const char *parity_value_kind_name(parity_value_kind kind);
/* PARITY_VAL_COUNT when unknown. */
parity_value_kind parity_value_kind_find(const char *zName);
/* Fills pIn->aValue (pIn->nElem values, each exactly representable in pIn->dtype) from the
 * recipe, with a stream seeded by (seed, iInput). Row-shaped recipes (mask rows, constant
 * rows) take rows along the input's last dim. */
void parity_values_fill(parity_operand *pIn, const parity_value_recipe *pRecipe,
                        uint64_t seed, size_t iInput);

/* ---- storage (io.c) --------------------------------------------------------- */

/* What ran a case's compiled side, as a target reports it (parity_target.xIdentity); the
 * repro writer stores it as identity attributes of the compiled capture (FORMAT.md, "Fuzz
 * cases"). Empty strings are not written. */
typedef struct {
    char zCompiler[32];       /* "oneDNN" */
    char zCompilerVersion[64];
    char zIsa[32];            /* the JIT ISA in effect: "avx512_core_amx" */
    char zImpl[96];           /* what the primitive reports: "jit:avx512_core" */
} parity_case_identity;

/* Writes the case as a capture: each input a dataset at "/<name>", root attributes for the
 * spec (FORMAT.md, "Fuzz cases"). When aOut is given the output is written as "/out" with
 * the op, inputs and parameters as its attributes, and zSide ("eager", "compiled") and
 * zTarget go to the root, which makes the file one side of a diffable pair; pId (may be
 * NULL) adds compiler, compiler_version, isa and implementation there, and zRunFailure (may
 * be NULL) the root attribute run_failure: the side's run crashed, hung or failed, which
 * makes paritydiff fail the pair whatever its tensors say. Atomic. */
int parity_case_write(const parity_case *pCase, const double *aOut, const char *zSide,
                      const char *zTarget, const parity_case_identity *pId,
                      const char *zRunFailure, const char *zFile, char *zErr, size_t nErr);
/* Reads a case file (or a repro's eager.h5/compiled.h5) back: the spec from the root
 * attributes and the stored input values. Checks the version and that the layout of the
 * stored spec reproduces the stored shapes. */
int parity_case_read(const char *zFile, parity_case *pCase, char *zErr, size_t nErr);
/* Reads "/out" of an output capture written by a target into aOut (pCase->nOut values),
 * checking its dtype and shape against the case. */
int parity_case_read_output(const parity_case *pCase, const char *zFile, double *aOut,
                            char *zErr, size_t nErr);

/* ---- binary encoding for libFuzzer (codec.c) -------------------------------- */

/* Fixed-size little-endian encoding of a spec; decode rejects anything malformed. */
#define PARITY_CASE_CODEC_SIZE 96
size_t parity_case_encode(const parity_case_spec *pSpec, uint8_t *aBuf, size_t nBuf);
int parity_case_decode(const uint8_t *aBuf, size_t nBuf, parity_case_spec *pSpec);

/* ---- random streams ----------------------------------------------------------------
 *
 * The fuzzer's deterministic random streams: splitmix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
 * OOPSLA 2014): one 64-bit state, passes BigCrush, and any seed (0 included) is fine, so
 * a case's values depend on nothing but its seed. Same seed, same campaign.
 */

typedef struct { uint64_t state; } parity_rng;

static inline void parity_rng_seed(parity_rng *pR, uint64_t seed) { pR->state = seed; }

static inline uint64_t parity_rng_next(parity_rng *pR)
{
    uint64_t z = (pR->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 when n == 0. The modulo bias is below 2^-40 for n < 2^24. */
static inline uint64_t parity_rng_below(parity_rng *pR, uint64_t n)
{
    return n ? parity_rng_next(pR) % n : 0;
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double parity_rng_unit(parity_rng *pR)
{
    return (double)(parity_rng_next(pR) >> 11) * 0x1p-53;
}

/* Standard normal by Box-Muller (one of the pair; simplicity beats speed here). */
static inline double parity_rng_normal(parity_rng *pR)
{
    double u = parity_rng_unit(pR), v = parity_rng_unit(pR);
    return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

/* 1 with probability 1/n. */
static inline int parity_rng_one_in(parity_rng *pR, uint64_t n)
{
    return parity_rng_below(pR, n) == 0;
}

/* ---- drawing and mutating specs (shapes.c, mutate.c) --------------------------------
 *
 * The fuzzer's search over shape and value space: shapes.c draws dims, mutate.c builds and
 * changes specs.
 *
 * Two strategies share the interface:
 *   guided     sizes that break compilers: 0 and 1, primes, 2^k - 1, 2^k, 2^k + 1 up to
 *              65537, tile sizes plus or minus a remainder, reduction lengths around 4096,
 *              8192, 16384 and 32768, broadcast dims, ranks 0 to 5, large K with small M
 *              and N; and every value recipe (values.c)
 *   baseline   what a naive tensor fuzzer does (the benchmark's yardstick): every dim
 *              uniform in [1, 4096], values N(0, 1)
 * Both keep cases inside the size bounds above (guided by shrinking the largest
 * dims, baseline by drawing again, or after 1000 draws that do not fit by halving the
 * largest dims), so exec/s stays high.
 */

typedef enum {
    PARITY_STRATEGY_GUIDED,
    PARITY_STRATEGY_BASELINE
} parity_strategy;

/* A dim size for the role (guided). */
uint64_t parity_draw_dim(parity_rng *pRng, parity_dim_role role);

/* A fresh spec for op zOp (which must have a layout). Returns 0, or -1 when no draw fit
 * the bounds (rare; the caller draws again). */
int parity_spec_generate(parity_rng *pRng, const char *zOp, parity_strategy strategy,
                         parity_case_spec *pSpec);

/* Changes pSpec by one guided mutation (a dim nudged or redrawn, the variant, the dtype, a
 * value recipe or the seed), keeping it inside the bounds. Returns 0, or -1 when the
 * mutated spec could not be made to fit (pSpec is then unchanged). */
int parity_spec_mutate(parity_rng *pRng, parity_case_spec *pSpec);

/* 1 when the generator draws dtype dt (float32, bfloat16, float16, float64). */
int parity_spec_dtype_drawable(parity_dtype dt);
/* When pSpec's dtype is not in allowed (bits 1 << dtype), redraws it among the drawable
 * dtypes in allowed, with the generator's weights. allowed must hold a drawable dtype. */
void parity_spec_restrict_dtypes(parity_rng *pRng, parity_case_spec *pSpec, uint32_t allowed);

/* Shrinks the largest dims of pSpec until its case fits the bounds; 0 or -1. */
int parity_spec_fit(parity_case_spec *pSpec);

#endif
