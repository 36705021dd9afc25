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
#define PARITY_CASE_MAX_IN 4        /* inputs a spec makes (sdpa: q, k, v, attn_mask) */
#define PARITY_CASE_MAX_OPERANDS 6  /* inputs a case holds: a stored op may have more than a
                                     * spec makes (batch_norm's x, weight, bias, running
                                     * mean and variance) */
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
    parity_operand aIn[PARITY_CASE_MAX_OPERANDS];   /* zName points into azInName (a
                               * stored case's: into its capture) */
    char azInName[PARITY_CASE_MAX_OPERANDS][16];
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
    /* A case cropped from a captured op (stored.c) takes that op's own attributes and
     * contract instead of aParam: aStoredAttr (not owned: the capture's) and accDtype,
     * uOperand as the differ reads them. Generated cases leave them NULL, INVALID and 0. */
    const parity_attr *aStoredAttr;
    size_t nStoredAttr;
    parity_dtype accDtype;
    double uOperand;
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
/* Writes values (decoded binary64) as dataset zPath in dt's storage form. 0, or -1 (*pOom
 * set when the buffer could not be had; else the writer's error says why). */
int parity_case_write_values(parity_writer *pW, const char *zPath, parity_dtype dt, int rank,
                             const uint64_t *aDim, const double *aValue, uint64_t n, int *pOom);
/* Writes attribute pA as zName on zPath (root: "/"): strings, string arrays, integers,
 * integer arrays and float scalars; -1 for anything else (a float array, an uninterpreted
 * type) or a writer error. */
/* Root attribute zName of a case file, of kind (and one value unless needArray); NULL
 * with zErr ("not a parity fuzz case", "has the wrong type") otherwise. */
const parity_attr *parity_case_root_attr(const parity_attr *aAttr, size_t nAttr,
                                         const char *zName, parity_attr_kind kind,
                                         int needArray, const char *zFile, char *zErr,
                                         size_t nErr);
/* Loads tensor zName of pCap (values owned by the caller, parity_free), checking its dtype
 * and shape against what the case's layout expects. 0, or -1 with zErr. */
int parity_case_load_tensor(parity_capture *pCap, const char *zFile, const char *zName,
                            parity_dtype dt, int rank, const uint64_t *aDim, double **paValue,
                            char *zErr, size_t nErr);
int parity_case_write_attr(parity_writer *pW, const char *zPath, const char *zName,
                           const parity_attr *pA);
/* Reads a case file (or a repro's eager.h5/compiled.h5) back: the spec from the root
 * attributes and the stored input values. Checks the version and that the layout of the
 * stored spec reproduces the stored shapes. */
int parity_case_read(const char *zFile, parity_case *pCase, char *zErr, size_t nErr);
/* Reads "/out" of an output capture written by a target into aOut (pCase->nOut values),
 * checking its dtype and shape against the case. */
int parity_case_read_output(const parity_case *pCase, const char *zFile, double *aOut,
                            char *zErr, size_t nErr);

/* ---- an op read back from a capture pair (stored.c) ---------------------------------
 *
 * The local cause an investigation names is an op application in a capture pair: its
 * inputs as the compiled kernel got them, its attributes and both outputs. It is replayed
 * as stored, never recomputed, and shrunk by cropping windows of the output dims along
 * which each output element reads one index of its inputs (stored.c says which those are
 * per family). */

/* An output dim that may be cropped, and the dim of each input that follows it (-1: the
 * input is read whole along it: broadcast, or not indexed by it). */
typedef struct {
    int outAxis;
    int aInAxis[PARITY_CASE_MAX_OPERANDS];
} parity_crop_axis;

typedef struct {
    parity_capture *pEagerCap, *pCompiledCap;
    long iEager, iCompiled;         /* the op's output tensor in each */
    parity_case whole;              /* compiled inputs, eager's attributes (the parameters,
                                     * as the differ reads them) and the contract the differ
                                     * reads (aStoredAttr, accDtype, uOperand) */
    parity_operand aEagerIn[PARITY_CASE_MAX_OPERANDS];  /* eager's own inputs (aValue NULL where
                                     * eager lacks one or its shape differs) */
    double *aEagerOut, *aCompiledOut;
    int nAxis;
    parity_crop_axis aAxis[PARITY_MAX_RANK];
} parity_stored_op;

/* Reads op output zTensor and its inputs from both captures. 0, or -1 with zErr (not an
 * op's output, an op without a model, inputs missing from the compiled capture, sides that
 * disagree on op or shape, more than PARITY_CASE_MAX_OPERANDS inputs, too large to hold). */
int parity_stored_open(const char *zEager, const char *zCompiled, const char *zTensor,
                       parity_stored_op *pS, char *zErr, size_t nErr);
void parity_stored_close(parity_stored_op *pS);

/* A crop: window [aLo[k], aLo[k] + aLen[k]) of crop axis k (pS->aAxis), the case the oracle
 * runs (c: the compiled inputs' windows, stored values), both outputs' windows and eager's
 * own inputs' windows (aValue NULL where pS has none). */
typedef struct {
    parity_case c;
    parity_operand aEagerIn[PARITY_CASE_MAX_OPERANDS];
    double *aEager, *aCompiled;
    uint64_t aLo[PARITY_MAX_RANK], aLen[PARITY_MAX_RANK];
} parity_stored_crop;

/* The crop axes of any case (the rule above, stored.c): how many, written to aAxis (room
 * for PARITY_MAX_RANK), or -1 with zErr when the registry refuses its shapes. The
 * minimizer cuts generated cases along them with their values kept. */
int parity_case_crop_axes(const parity_case *pC, parity_crop_axis *aAxis, char *zErr,
                          size_t nErr);
/* pSrc (input i of pC, or an operand of its shape) cut to the windows (aLo, aLen) of pC's
 * crop axes: pDst is pSrc with the cut dims and its own values (the caller frees them).
 * 0, or -1 when out of memory. */
int parity_case_crop_input(const parity_case *pC, const parity_crop_axis *aAxis, int nAxis,
                           int i, const parity_operand *pSrc, const uint64_t *aLo,
                           const uint64_t *aLen, parity_operand *pDst);

int parity_stored_crop_make(const parity_stored_op *pS, const uint64_t *aLo,
                            const uint64_t *aLen, parity_stored_crop *pCrop, char *zErr,
                            size_t nErr);
void parity_stored_crop_free(parity_stored_crop *pCrop);
/* Counts in *pnDiffer the crop's elements whose MPFR reference differs from the whole
 * op's at the same element: 0 for a faithful crop (the proof that the crop rule holds for
 * this op). 0, or -1 with zErr when the reference failed. */
int parity_stored_check_crop(const parity_stored_op *pS, const parity_stored_crop *pCrop,
                             uint64_t *pnDiffer, char *zErr, size_t nErr);

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
