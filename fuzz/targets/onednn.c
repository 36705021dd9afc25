/*
 * onednn.c - the onednn target: the compiled side of each case runs through oneDNN's
 * primitives, the kernels under PyTorch's and TensorFlow's CPU paths, which oneDNN compiles
 * at run time (JIT) for each shape, data type and ISA. The eager side is the builtin eager
 * kernels (builtin_eager.c).
 *
 * oneDNN 2.6's C API (Debian's libdnnl 2.6.3; 3.x differs): an op descriptor
 * (dnnl_*_desc_init) over memory descriptors, then a primitive descriptor
 * (dnnl_primitive_desc_create, which picks the implementation: "jit:avx512_core",
 * "ref:any", ...), then the primitive (where the JIT compiles), then dnnl_primitive_execute
 * with one dnnl_memory per argument wrapping our buffers. Registry op to primitive:
 *   relu abs sqrt exp log tanh      eltwise of the same name
 *   sigmoid silu mish elu           eltwise logistic, swish (alpha 1), mish, elu (alpha)
 *   gelu                            eltwise gelu_erf, or gelu_tanh for approximate="tanh"
 *   softplus                        eltwise soft_relu (2.6 ignores alpha: log(1 + e^x); the
 *                                   registry's softplus with beta 1 is that, see op_unary)
 *   softmax log_softmax             softmax_v2, accurate or log, along `dim`
 *   layer_norm                      layer normalization over [rows, prod(normalized_shape)],
 *                                   weight and bias as use_scale / use_shift (float32 in 2.6)
 *   matmul                          matmul; a 1-D side becomes a row or column matrix, a
 *                                   2-D weight under a 3-D source a broadcast [1, K, N]
 *   linear                          matmul of x [rows, K] with weight^T (strides, no copy)
 *                                   and bias [1, N]
 *   add mul div maximum minimum     binary, y broadcast (its dims padded with leading 1s);
 *                                   add with alpha is skipped (binary has no alpha)
 *   sum mean amax amin              reduction sum, mean, max, min: reduced dims become 1
 * Rank-0 tensors are passed as [1]. Data types: float32, and bfloat16 when oneDNN builds a
 * bfloat16 primitive on this CPU (probed at open; a primitive oneDNN lacks for a case is a
 * skip, not a finding). float16 and float64 cases are skipped.
 *
 * Primitives are compiled per shape: the target keeps the last CACHE_SIZE of them, keyed by
 * (op, variant, dtype, dims), which is what the minimizer and the mutators revisit.
 * Threads: oneDNN runs on OpenMP; each process (each --jobs job) runs it on one thread
 * unless OMP_NUM_THREADS says otherwise, set before the first primitive. --jobs forks before
 * any job opens the target, so no process forks after its first primitive.
 * ISA: "onednn:ISA" caps the JIT at ISA (dnnl_set_max_cpu_isa: sse41, avx, avx2,
 * avx512_core, avx512_core_vnni, avx512_core_bf16, avx512_core_amx); results depend on it,
 * so each repro records the ISA in effect and the implementation string.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <oneapi/dnnl/dnnl.h>
#include "fuzz/targets/targets.h"
#include "formats/alloc.h"

#define CACHE_SIZE 64
#define MAX_ARGS 8

typedef enum {
    SRC_INPUT0,           /* aIn[0] .. aIn[3]: SRC_INPUT0 + i */
    SRC_OUTPUT = 8,       /* the case's output */
    SRC_SCRATCH           /* a buffer oneDNN writes and nobody reads (mean, variance) */
} arg_source;

typedef struct {
    int argId;            /* DNNL_ARG_* */
    int source;           /* SRC_INPUT0 + i, SRC_OUTPUT, SRC_SCRATCH */
    dnnl_memory_desc_t md;
} onednn_arg;

typedef struct {
    char zKey[200];
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    int nArg;
    onednn_arg aArg[MAX_ARGS];
    char zImpl[96];
    uint64_t lastUse;
} onednn_entry;

typedef struct {
    parity_target base;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    onednn_entry aCache[CACHE_SIZE];
    uint64_t tick;
    char zName[64];
    char zVersion[64];
    char zIsa[32];
} onednn_target;

/* ---- names ---------------------------------------------------------------------------- */

static const struct { const char *zName; dnnl_cpu_isa_t isa; } aIsa[] = {
    { "all", dnnl_cpu_isa_all }, { "sse41", dnnl_cpu_isa_sse41 }, { "avx", dnnl_cpu_isa_avx },
    { "avx2", dnnl_cpu_isa_avx2 }, { "avx2_vnni", dnnl_cpu_isa_avx2_vnni },
    { "avx512_core", dnnl_cpu_isa_avx512_core },
    { "avx512_core_vnni", dnnl_cpu_isa_avx512_core_vnni },
    { "avx512_core_bf16", dnnl_cpu_isa_avx512_core_bf16 },
    { "avx512_core_amx", dnnl_cpu_isa_avx512_core_amx },
};
#define N_ISA (sizeof aIsa / sizeof aIsa[0])

static const char *isa_name(dnnl_cpu_isa_t isa)
{
    size_t i;
    for (i = 0; i < N_ISA; i++)
        if (aIsa[i].isa == isa) return aIsa[i].zName;
    return "unknown";
}

static const char *status_name(dnnl_status_t st)
{
    switch (st) {
    case dnnl_success: return "success";
    case dnnl_out_of_memory: return "out of memory";
    case dnnl_invalid_arguments: return "invalid arguments";
    case dnnl_unimplemented: return "unimplemented";
    case dnnl_iterator_ends: return "iterator ends";
    case dnnl_runtime_error: return "runtime error";
    case dnnl_not_required: return "not required";
    }
    return "unknown status";
}

/* ---- memory descriptors --------------------------------------------------------------- */

static dnnl_data_type_t dnnl_type(parity_dtype dt)
{
    return dt == PARITY_DT_BF16 ? dnnl_bf16 : dnnl_f32;
}

/* A dense row-major descriptor; rank 0 becomes [1]. */
static dnnl_status_t md_dense(dnnl_memory_desc_t *pMd, int rank, const int64_t *aDim,
                              dnnl_data_type_t type)
{
    dnnl_dims_t dims, strides;
    int64_t s = 1;
    int d;
    if (rank == 0) {
        dims[0] = 1;
        strides[0] = 1;
        rank = 1;
    } else {
        for (d = rank - 1; d >= 0; d--) {
            dims[d] = aDim[d];
            strides[d] = s;
            s *= aDim[d] > 0 ? aDim[d] : 1;
        }
    }
    return dnnl_memory_desc_init_by_strides(pMd, rank, dims, type, strides);
}

static dnnl_status_t md_operand(dnnl_memory_desc_t *pMd, const parity_operand *pIn)
{
    int64_t a[PARITY_MAX_RANK];
    int d;
    for (d = 0; d < pIn->rank; d++) a[d] = (int64_t)pIn->aDim[d];
    return md_dense(pMd, pIn->rank, a, dnnl_type(pIn->dtype));
}

static dnnl_status_t md_output(dnnl_memory_desc_t *pMd, const parity_case *pCase)
{
    int64_t a[PARITY_MAX_RANK];
    int d;
    for (d = 0; d < pCase->outRank; d++) a[d] = (int64_t)pCase->aOutDim[d];
    return md_dense(pMd, pCase->outRank, a, dnnl_type(pCase->outDtype));
}

static void add_arg(onednn_entry *pE, int argId, int source, const dnnl_memory_desc_t *pMd)
{
    pE->aArg[pE->nArg].argId = argId;
    pE->aArg[pE->nArg].source = source;
    pE->aArg[pE->nArg].md = *pMd;
    pE->nArg++;
}

/* ---- op descriptors ------------------------------------------------------------------- */

typedef union {
    dnnl_eltwise_desc_t eltwise;
    dnnl_softmax_v2_desc_t softmax;
    dnnl_layer_normalization_desc_t lnorm;
    dnnl_matmul_desc_t matmul;
    dnnl_binary_desc_t binary;
    dnnl_reduction_desc_t reduction;
} op_desc;

/* Registry op -> oneDNN algorithm: the target's own map, its only op knowledge; shapes and
 * attributes come from the registry's geometry of the case (tolerance/geometry.h). */
typedef struct {
    const parity_op_def *pDef;
    dnnl_alg_kind_t alg;
} alg_map;

static const alg_map aEltwise[] = {
    { &parity_op_relu, dnnl_eltwise_relu },     { &parity_op_abs, dnnl_eltwise_abs },
    { &parity_op_sqrt, dnnl_eltwise_sqrt },     { &parity_op_exp, dnnl_eltwise_exp },
    { &parity_op_log, dnnl_eltwise_log },       { &parity_op_tanh, dnnl_eltwise_tanh },
    { &parity_op_sigmoid, dnnl_eltwise_logistic },
    { &parity_op_gelu, dnnl_eltwise_gelu_erf }, /* gelu_tanh for approximate="tanh" */
    { &parity_op_silu, dnnl_eltwise_swish },    { &parity_op_softplus, dnnl_eltwise_soft_relu },
    { &parity_op_elu, dnnl_eltwise_elu },       { &parity_op_mish, dnnl_eltwise_mish },
};
#define N_ELTWISE (sizeof aEltwise / sizeof aEltwise[0])

static const alg_map aBinary[] = {
    { &parity_op_add, dnnl_binary_add }, { &parity_op_mul, dnnl_binary_mul },
    { &parity_op_div, dnnl_binary_div }, { &parity_op_maximum, dnnl_binary_max },
    { &parity_op_minimum, dnnl_binary_min },
};
#define N_BINARY (sizeof aBinary / sizeof aBinary[0])

static const alg_map aReduction[] = {
    { &parity_op_sum, dnnl_reduction_sum }, { &parity_op_mean, dnnl_reduction_mean },
    { &parity_op_amax, dnnl_reduction_max }, { &parity_op_amin, dnnl_reduction_min },
};
#define N_REDUCTION (sizeof aReduction / sizeof aReduction[0])

static const parity_op_def *const apOtherOps[] = { &parity_op_softmax, &parity_op_log_softmax,
                                                   &parity_op_layer_norm, &parity_op_matmul,
                                                   &parity_op_linear };

/* The row of pDef in one of the maps above, or NULL. */
static const alg_map *find_alg(const alg_map *aMap, size_t n, const parity_op_def *pDef)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (aMap[i].pDef == pDef) return &aMap[i];
    return NULL;
}

static int onednn_runs(const parity_op_def *pDef)
{
    size_t i;
    if (!pDef) return 0;
    if (find_alg(aEltwise, N_ELTWISE, pDef) || find_alg(aBinary, N_BINARY, pDef) ||
        find_alg(aReduction, N_REDUCTION, pDef))
        return 1;
    for (i = 0; i < sizeof apOtherOps / sizeof apOtherOps[0]; i++)
        if (apOtherOps[i] == pDef) return 1;
    return 0;
}

/* Each describe_* fills the op descriptor and the argument list of pE from the case and
 * the registry's geometry of it (pCall). Returns dnnl_success, dnnl_unimplemented with zWhy
 * for a case this mapping does not cover, or oneDNN's status. */

static dnnl_status_t describe_eltwise(const parity_case *pCase, const parity_op_call *pCall,
                                      dnnl_alg_kind_t alg, op_desc *pD, onednn_entry *pE,
                                      char *zWhy, size_t nWhy)
{
    const parity_elementwise_geometry *pG = &pCall->geom.elementwise;
    dnnl_memory_desc_t mdSrc;
    dnnl_status_t st;
    float alpha = 0.0f;
    if (pCase->pDef == &parity_op_gelu && pG->approximateTanh) alg = dnnl_eltwise_gelu_tanh;
    if (pCase->pDef == &parity_op_silu) alpha = 1.0f;           /* swish(x; 1) = x sigmoid(x) */
    if (pCase->pDef == &parity_op_elu) alpha = (float)pG->alpha;
    if (pCase->pDef == &parity_op_softplus && pG->beta != 1.0) {
        snprintf(zWhy, nWhy, "oneDNN 2.6's soft_relu has no beta");
        return dnnl_unimplemented;
    }
    if ((st = md_operand(&mdSrc, &pCase->aIn[0])) != dnnl_success) return st;
    add_arg(pE, DNNL_ARG_SRC, SRC_INPUT0, &mdSrc);
    add_arg(pE, DNNL_ARG_DST, SRC_OUTPUT, &mdSrc);
    return dnnl_eltwise_forward_desc_init(&pD->eltwise, dnnl_forward_inference, alg, &mdSrc,
                                          alpha, 0.0f);
}

/* y broadcast to x's rank with leading 1s. */
static dnnl_status_t describe_binary(const parity_case *pCase, const parity_op_call *pCall,
                                     dnnl_alg_kind_t alg, op_desc *pD, onednn_entry *pE,
                                     char *zWhy, size_t nWhy)
{
    const parity_operand *aIn = pCase->aIn;
    dnnl_memory_desc_t mdSrc, mdSrc1, mdDst;
    int64_t aY[PARITY_MAX_RANK];
    int rank = aIn[0].rank, pad = rank - aIn[1].rank, d;
    dnnl_status_t st;
    if (pCall->geom.elementwise.alpha != 1.0) {
        snprintf(zWhy, nWhy, "oneDNN's binary add has no alpha");
        return dnnl_unimplemented;
    }
    for (d = 0; d < rank; d++) aY[d] = d < pad ? 1 : (int64_t)aIn[1].aDim[d - pad];
    if ((st = md_operand(&mdSrc, &aIn[0])) != dnnl_success) return st;
    if ((st = md_dense(&mdSrc1, rank, aY, dnnl_type(aIn[1].dtype))) != dnnl_success) return st;
    if ((st = md_output(&mdDst, pCase)) != dnnl_success) return st;
    add_arg(pE, DNNL_ARG_SRC_0, SRC_INPUT0, &mdSrc);
    add_arg(pE, DNNL_ARG_SRC_1, SRC_INPUT0 + 1, &mdSrc1);
    add_arg(pE, DNNL_ARG_DST, SRC_OUTPUT, &mdDst);
    return dnnl_binary_desc_init(&pD->binary, alg, &mdSrc, &mdSrc1, &mdDst);
}

/* The reduced dims (the registry's rows) become size 1 in dst. */
static dnnl_status_t describe_reduction(const parity_case *pCase, const parity_op_call *pCall,
                                        dnnl_alg_kind_t alg, op_desc *pD, onednn_entry *pE,
                                        char *zWhy, size_t nWhy)
{
    const parity_operand *pX = &pCase->aIn[0];
    const parity_rows *pR = &pCall->geom.rows.rows;
    dnnl_memory_desc_t mdSrc, mdDst;
    int64_t aOut[PARITY_MAX_RANK];
    int d, nChanged = 0;
    dnnl_status_t st;
    for (d = 0; d < pX->rank; d++) {
        aOut[d] = pR->aRed[d] ? 1 : (int64_t)pX->aDim[d];
        nChanged += aOut[d] != (int64_t)pX->aDim[d];
    }
    if (nChanged == 0) {
        snprintf(zWhy, nWhy, "oneDNN 2.6 refuses a reduction whose destination shape is "
                 "its source's (every reduced dim has size 1)");
        return dnnl_unimplemented;
    }
    if ((st = md_operand(&mdSrc, pX)) != dnnl_success) return st;
    if ((st = md_dense(&mdDst, pX->rank, aOut, dnnl_type(pCase->outDtype))) != dnnl_success)
        return st;
    add_arg(pE, DNNL_ARG_SRC, SRC_INPUT0, &mdSrc);
    add_arg(pE, DNNL_ARG_DST, SRC_OUTPUT, &mdDst);
    return dnnl_reduction_desc_init(&pD->reduction, alg, &mdSrc, &mdDst, 0.0f, 0.0f);
}

/* softmax_v2 along the registry's one reduced dim (0 for a scalar, seen as [1]). */
static dnnl_status_t describe_softmax(const parity_case *pCase, const parity_op_call *pCall,
                                      op_desc *pD, onednn_entry *pE)
{
    const parity_rows *pR = &pCall->geom.rows.rows;
    dnnl_memory_desc_t mdSrc;
    dnnl_status_t st;
    int axis = 0, d;
    for (d = 0; d < pR->rank; d++)
        if (pR->aRed[d]) axis = d;
    if ((st = md_operand(&mdSrc, &pCase->aIn[0])) != dnnl_success) return st;
    add_arg(pE, DNNL_ARG_SRC, SRC_INPUT0, &mdSrc);
    add_arg(pE, DNNL_ARG_DST, SRC_OUTPUT, &mdSrc);
    return dnnl_softmax_v2_forward_desc_init(
        &pD->softmax, dnnl_forward_inference,
        pCase->pDef == &parity_op_softmax ? dnnl_softmax_accurate : dnnl_softmax_log, &mdSrc,
        &mdSrc, axis);
}

/* Layer normalization over [rows, D]; weight and bias as scale and shift. */
static dnnl_status_t describe_layer_norm(const parity_case *pCase, const parity_op_call *pCall,
                                         op_desc *pD, onednn_entry *pE, char *zWhy,
                                         size_t nWhy)
{
    const parity_norm_geometry *pG = &pCall->geom.norm;
    dnnl_memory_desc_t mdSrc, mdW;
    int64_t aRC[2], C = (int64_t)pG->D;
    unsigned flags = 0;
    dnnl_status_t st;
    if (C == 0) {
        snprintf(zWhy, nWhy, "layer_norm over an empty normalized shape");
        return dnnl_unimplemented;
    }
    aRC[0] = (int64_t)pG->nRow;
    aRC[1] = C;
    if ((st = md_dense(&mdSrc, 2, aRC, dnnl_type(pCase->aIn[0].dtype))) != dnnl_success) return st;
    add_arg(pE, DNNL_ARG_SRC, SRC_INPUT0, &mdSrc);
    add_arg(pE, DNNL_ARG_DST, SRC_OUTPUT, &mdSrc);
    /* oneDNN 2.6: scale and shift are float32 vectors of C */
    if ((st = md_dense(&mdW, 1, &C, dnnl_f32)) != dnnl_success) return st;
    if (pG->hasWeight) {
        flags |= dnnl_use_scale;
        add_arg(pE, DNNL_ARG_SCALE, SRC_INPUT0 + 1, &mdW);
    }
    if (pG->hasBias) {
        flags |= dnnl_use_shift;
        add_arg(pE, DNNL_ARG_SHIFT, SRC_INPUT0 + 2, &mdW);
    }
    return dnnl_layer_normalization_forward_desc_init(&pD->lnorm, dnnl_forward_inference,
                                                      &mdSrc, NULL, (float)pG->eps, flags);
}

/* matmul: [M, K] x [K, N], or with one batch dim [B|1, M, K] x [B|1, K, N] (a side that
 * broadcasts has a 1 there); a 1-D side is the row or column the geometry made of it. */
static dnnl_status_t describe_matmul(const parity_case *pCase, const parity_op_call *pCall,
                                     op_desc *pD, onednn_entry *pE, char *zWhy, size_t nWhy)
{
    const parity_dot_geometry *pG = &pCall->geom.dot;
    dnnl_memory_desc_t mdSrc, mdW, mdDst;
    int64_t aA[3], aB[3], aC[3];
    int rank = pG->nBatch + 2, i = 0;
    dnnl_status_t st;
    if (pG->nBatch > 1) {
        snprintf(zWhy, nWhy, "the onednn target maps matmul with at most one batch dim");
        return dnnl_unimplemented;
    }
    if (pG->nBatch == 1) {
        aA[0] = pG->aStrideA[0] ? (int64_t)pG->aBatchDim[0] : 1;
        aB[0] = pG->aStrideB[0] ? (int64_t)pG->aBatchDim[0] : 1;
        aC[0] = (int64_t)pG->aBatchDim[0];
        i = 1;
    }
    aA[i] = (int64_t)pG->M; aA[i + 1] = (int64_t)pG->K;
    aB[i] = (int64_t)pG->K; aB[i + 1] = (int64_t)pG->N;
    aC[i] = (int64_t)pG->M; aC[i + 1] = (int64_t)pG->N;
    if ((st = md_dense(&mdSrc, rank, aA, dnnl_type(pCase->aIn[0].dtype))) != dnnl_success) return st;
    if ((st = md_dense(&mdW, rank, aB, dnnl_type(pCase->aIn[1].dtype))) != dnnl_success) return st;
    if ((st = md_dense(&mdDst, rank, aC, dnnl_type(pCase->outDtype))) != dnnl_success) return st;
    add_arg(pE, DNNL_ARG_SRC, SRC_INPUT0, &mdSrc);
    add_arg(pE, DNNL_ARG_WEIGHTS, SRC_INPUT0 + 1, &mdW);
    add_arg(pE, DNNL_ARG_DST, SRC_OUTPUT, &mdDst);
    return dnnl_matmul_desc_init(&pD->matmul, &mdSrc, &mdW, NULL, &mdDst);
}

/* linear: x as [M, K] (M = the product of its leading dims) times the weight [N, K] read
 * as [K, N] through strides {1, K}, plus the bias as [1, N]. */
static dnnl_status_t describe_linear(const parity_case *pCase, const parity_op_call *pCall,
                                     op_desc *pD, onednn_entry *pE)
{
    const parity_dot_geometry *pG = &pCall->geom.dot;
    const parity_operand *aIn = pCase->aIn;
    int64_t K = (int64_t)pG->K, N = (int64_t)pG->N;
    int64_t aA[2] = { (int64_t)pG->M, K }, aC[2] = { (int64_t)pG->M, N }, aBias[2] = { 1, N };
    dnnl_dims_t dW = { K, N }, sW = { 1, K > 0 ? K : 1 };
    dnnl_memory_desc_t mdSrc, mdW, mdDst, mdB;
    dnnl_status_t st;
    if ((st = md_dense(&mdSrc, 2, aA, dnnl_type(aIn[0].dtype))) != dnnl_success) return st;
    if ((st = dnnl_memory_desc_init_by_strides(&mdW, 2, dW, dnnl_type(aIn[1].dtype), sW)) !=
        dnnl_success)
        return st;
    if ((st = md_dense(&mdDst, 2, aC, dnnl_type(pCase->outDtype))) != dnnl_success) return st;
    add_arg(pE, DNNL_ARG_SRC, SRC_INPUT0, &mdSrc);
    add_arg(pE, DNNL_ARG_WEIGHTS, SRC_INPUT0 + 1, &mdW);
    add_arg(pE, DNNL_ARG_DST, SRC_OUTPUT, &mdDst);
    if (pG->hasBias) {
        if ((st = md_dense(&mdB, 2, aBias, dnnl_type(aIn[2].dtype))) != dnnl_success) return st;
        add_arg(pE, DNNL_ARG_BIAS, SRC_INPUT0 + 2, &mdB);
    }
    return dnnl_matmul_desc_init(&pD->matmul, &mdSrc, &mdW, pG->hasBias ? &mdB : NULL,
                                 &mdDst);
}

/* The op descriptor and arguments of the case, by the primitive its op maps to. */
static dnnl_status_t describe(const parity_case *pCase, op_desc *pD, onednn_entry *pE,
                              char *zWhy, size_t nWhy)
{
    const parity_op_def *pDef = pCase->pDef;
    const alg_map *pMap;
    parity_op_call call;
    dnnl_status_t st;
    if (parity_case_op_shape(pCase, &call, zWhy, nWhy) != 0) return dnnl_invalid_arguments;
    if ((pMap = find_alg(aEltwise, N_ELTWISE, pDef)) != NULL)
        st = describe_eltwise(pCase, &call, pMap->alg, pD, pE, zWhy, nWhy);
    else if ((pMap = find_alg(aBinary, N_BINARY, pDef)) != NULL)
        st = describe_binary(pCase, &call, pMap->alg, pD, pE, zWhy, nWhy);
    else if ((pMap = find_alg(aReduction, N_REDUCTION, pDef)) != NULL)
        st = describe_reduction(pCase, &call, pMap->alg, pD, pE, zWhy, nWhy);
    else if (pDef == &parity_op_softmax || pDef == &parity_op_log_softmax)
        st = describe_softmax(pCase, &call, pD, pE);
    else if (pDef == &parity_op_layer_norm)
        st = describe_layer_norm(pCase, &call, pD, pE, zWhy, nWhy);
    else if (pDef == &parity_op_matmul)
        st = describe_matmul(pCase, &call, pD, pE, zWhy, nWhy);
    else if (pDef == &parity_op_linear)
        st = describe_linear(pCase, &call, pD, pE);
    else {
        snprintf(zWhy, nWhy, "the onednn target has no primitive for %s", pCase->spec.zOp);
        st = dnnl_unimplemented;
    }
    parity_op_end(&call);
    return st;
}

/* ---- the primitive cache -------------------------------------------------------------- */

static void case_key(const parity_case *pCase, char *zKey, size_t nKey)
{
    const parity_case_spec *pS = &pCase->spec;
    size_t len;
    int d;
    len = (size_t)snprintf(zKey, nKey, "%s/%u/%s", pS->zOp, (unsigned)pS->variant,
                           parity_dtype_name(pS->dtype));
    for (d = 0; d < pS->nDim && len < nKey; d++)
        len += (size_t)snprintf(zKey + len, nKey - len, "/%llu", (unsigned long long)pS->aDim[d]);
}

static void entry_clear(onednn_entry *pE)
{
    if (pE->prim) dnnl_primitive_destroy(pE->prim);
    if (pE->pd) dnnl_primitive_desc_destroy(pE->pd);
    memset(pE, 0, sizeof *pE);
}

/* The cached primitive for the case, built on a miss. On failure returns NULL with *pSt
 * (dnnl_unimplemented: skip) and zErr. */
static onednn_entry *entry_for(onednn_target *p, const parity_case *pCase, dnnl_status_t *pSt,
                               char *zErr, size_t nErr)
{
    char zKey[200], zWhy[PARITY_ERR_LEN] = "";
    onednn_entry *pE, *pVictim = &p->aCache[0];
    op_desc desc;
    const char *zImpl = NULL;
    dnnl_status_t st;
    size_t i;

    case_key(pCase, zKey, sizeof zKey);
    for (i = 0; i < CACHE_SIZE; i++) {
        pE = &p->aCache[i];
        if (pE->prim && strcmp(pE->zKey, zKey) == 0) {
            pE->lastUse = ++p->tick;
            return pE;
        }
        if (pE->lastUse < pVictim->lastUse) pVictim = pE;
    }
    pE = pVictim;
    entry_clear(pE);
    memset(&desc, 0, sizeof desc);
    st = describe(pCase, &desc, pE, zWhy, sizeof zWhy);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pE->pd, &desc, NULL, p->engine, NULL);
    if (st != dnnl_success) {
        *pSt = st;
        if (zWhy[0]) snprintf(zErr, nErr, "onednn: %s", zWhy);
        else snprintf(zErr, nErr, "onednn: %s %s: primitive descriptor: %s", pCase->spec.zOp,
                      parity_dtype_name(pCase->spec.dtype), status_name(st));
        pE->pd = NULL;
        entry_clear(pE);
        return NULL;
    }
    /* arguments oneDNN writes that the case does not read (layer_norm's mean and variance
     * in some implementations) */
    {
        static const int aExtra[] = { DNNL_ARG_MEAN, DNNL_ARG_VARIANCE, DNNL_ARG_WORKSPACE };
        for (i = 0; i < sizeof aExtra / sizeof aExtra[0]; i++) {
            const dnnl_memory_desc_t *pMd = dnnl_primitive_desc_query_md(
                pE->pd, dnnl_query_exec_arg_md, aExtra[i]);
            if (pMd && pMd->ndims > 0 && pE->nArg < MAX_ARGS)
                add_arg(pE, aExtra[i], SRC_SCRATCH, pMd);
        }
    }
    st = dnnl_primitive_create(&pE->prim, pE->pd);
    if (st != dnnl_success) {
        *pSt = st == dnnl_unimplemented ? dnnl_runtime_error : st;
        snprintf(zErr, nErr, "onednn: %s: creating the primitive: %s", pCase->spec.zOp,
                 status_name(st));
        entry_clear(pE);
        return NULL;
    }
    if (dnnl_primitive_desc_query(pE->pd, dnnl_query_impl_info_str, 0, &zImpl) == dnnl_success &&
        zImpl)
        snprintf(pE->zImpl, sizeof pE->zImpl, "%s", zImpl);
    snprintf(pE->zKey, sizeof pE->zKey, "%s", zKey);
    pE->lastUse = ++p->tick;
    return pE;
}

/* ---- running -------------------------------------------------------------------------- */

/* A buffer for md filled from aValue (n values), or zeroed when aValue is NULL. */
static void *make_buffer(const dnnl_memory_desc_t *pMd, const double *aValue, uint64_t n)
{
    size_t size = dnnl_memory_desc_get_size(pMd), i;
    void *pBuf = parity_calloc(1, size ? size : 1);
    if (!pBuf || !aValue) return pBuf;
    {
        parity_dtype dt = pMd->data_type == dnnl_bf16 ? PARITY_DT_BF16 : PARITY_DT_F32;
        size_t width = parity_dtype_size(dt);
        for (i = 0; i < n && i < size / width; i++)
            parity_encode(dt, aValue[i], (unsigned char *)pBuf + i * width);
    }
    return pBuf;
}

static parity_run_status onednn_run(parity_target *pT, parity_side side,
                                    const parity_case *pCase, double *aOut, char *zErr,
                                    size_t nErr)
{
    onednn_target *p = (onednn_target *)pT;
    onednn_entry *pE;
    dnnl_exec_arg_t aExec[MAX_ARGS];
    dnnl_memory_t aMem[MAX_ARGS];
    void *aBuf[MAX_ARGS];
    dnnl_status_t st = dnnl_success;
    parity_run_status rs = PARITY_RUN_OK;
    int i, iOut = -1;

    if (!onednn_runs(pCase->pDef) || !parity_builtin_supports(pCase->pDef)) {
        snprintf(zErr, nErr, "onednn: no primitive for %s", pCase->spec.zOp);
        return PARITY_RUN_SKIP;
    }
    if (!parity_target_runs_dtype(pT, pCase->spec.dtype)) {
        snprintf(zErr, nErr, "onednn: %s cases are not run (float32%s only)",
                 parity_dtype_name(pCase->spec.dtype),
                 (pT->dtypes & (1u << PARITY_DT_BF16)) ? " and bfloat16" : "");
        return PARITY_RUN_SKIP;
    }
    if (side == PARITY_SIDE_EAGER)
        return parity_builtin_eager(pCase, aOut, zErr, nErr) == 0 ? PARITY_RUN_OK
                                                                  : PARITY_RUN_ERROR;
    pE = entry_for(p, pCase, &st, zErr, nErr);
    if (!pE) return st == dnnl_unimplemented ? PARITY_RUN_SKIP : PARITY_RUN_ERROR;

    memset(aMem, 0, sizeof aMem);
    memset(aBuf, 0, sizeof aBuf);
    for (i = 0; i < pE->nArg; i++) {
        const onednn_arg *pA = &pE->aArg[i];
        const parity_operand *pIn = pA->source < SRC_OUTPUT ? &pCase->aIn[pA->source] : NULL;
        aBuf[i] = make_buffer(&pA->md, pIn ? pIn->aValue : NULL, pIn ? pIn->nElem : 0);
        if (!aBuf[i]) {
            snprintf(zErr, nErr, "onednn: out of memory");
            rs = PARITY_RUN_ERROR;
            goto done;
        }
        if (pA->source == SRC_OUTPUT) iOut = i;
        st = dnnl_memory_create(&aMem[i], &pA->md, p->engine, aBuf[i]);
        if (st != dnnl_success) {
            snprintf(zErr, nErr, "onednn: %s: memory: %s", pCase->spec.zOp, status_name(st));
            rs = PARITY_RUN_ERROR;
            goto done;
        }
        aExec[i].arg = pA->argId;
        aExec[i].memory = aMem[i];
    }
    st = dnnl_primitive_execute(pE->prim, p->stream, pE->nArg, aExec);
    if (st == dnnl_success) st = dnnl_stream_wait(p->stream);
    if (st != dnnl_success) {
        snprintf(zErr, nErr, "onednn: %s (%s): execute: %s", pCase->spec.zOp, pE->zImpl,
                 status_name(st));
        rs = PARITY_RUN_ERROR;
        goto done;
    }
    parity_decode(pCase->outDtype, aBuf[iOut], aOut, pCase->nOut);
done:
    for (i = 0; i < pE->nArg; i++) {
        if (aMem[i]) dnnl_memory_destroy(aMem[i]);
        free(aBuf[i]);
    }
    return rs;
}

static int onednn_supports(parity_target *pT, const char *zOp)
{
    const parity_op_def *pDef = parity_op_find(zOp);
    (void)pT;
    return onednn_runs(pDef) && parity_builtin_supports(pDef);
}

static int onednn_identity(parity_target *pT, const parity_case *pCase,
                           parity_case_identity *pId)
{
    onednn_target *p = (onednn_target *)pT;
    onednn_entry *pE;
    dnnl_status_t st;
    char zErr[PARITY_ERR_LEN];
    memset(pId, 0, sizeof *pId);
    snprintf(pId->zCompiler, sizeof pId->zCompiler, "oneDNN");
    snprintf(pId->zCompilerVersion, sizeof pId->zCompilerVersion, "%s", p->zVersion);
    snprintf(pId->zIsa, sizeof pId->zIsa, "%s", p->zIsa);
    pE = entry_for(p, pCase, &st, zErr, sizeof zErr);
    snprintf(pId->zImpl, sizeof pId->zImpl, "%s", pE ? pE->zImpl : "none");
    return 0;
}

static void onednn_close(parity_target *pT)
{
    onednn_target *p = (onednn_target *)pT;
    size_t i;
    for (i = 0; i < CACHE_SIZE; i++) entry_clear(&p->aCache[i]);
    if (p->stream) dnnl_stream_destroy(p->stream);
    if (p->engine) dnnl_engine_destroy(p->engine);
    free(p);
}

/* libgomp reads OMP_NUM_THREADS when it loads, before main, so the thread count is set
 * through its API; looked up at run time (libdnnl brought libgomp in) so the build needs no
 * OpenMP flags of its own, which clang-14 without libomp-dev could not give. */
static void set_omp_threads(int n)
{
    void (*xSet)(int);
    *(void **)&xSet = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    if (xSet) xSet(n);
}

/* 1 when oneDNN builds a bfloat16 primitive here (eltwise and matmul, the two families
 * every op here maps to first): the CPU and the library decide, not an assumption. */
static int probe_bf16(onednn_target *p)
{
    dnnl_memory_desc_t md;
    dnnl_eltwise_desc_t ed;
    dnnl_matmul_desc_t mmd;
    dnnl_primitive_desc_t pd = NULL;
    int64_t a[2] = { 4, 4 };
    int ok;
    if (md_dense(&md, 2, a, dnnl_bf16) != dnnl_success) return 0;
    if (dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, dnnl_eltwise_relu, &md, 0,
                                       0) != dnnl_success)
        return 0;
    ok = dnnl_primitive_desc_create(&pd, &ed, NULL, p->engine, NULL) == dnnl_success;
    if (pd) dnnl_primitive_desc_destroy(pd);
    pd = NULL;
    if (!ok || dnnl_matmul_desc_init(&mmd, &md, &md, NULL, &md) != dnnl_success) return 0;
    ok = dnnl_primitive_desc_create(&pd, &mmd, NULL, p->engine, NULL) == dnnl_success;
    if (pd) dnnl_primitive_desc_destroy(pd);
    return ok;
}

parity_target *parity_target_onednn_open(const char *zIsa, char *zErr, size_t nErr)
{
    onednn_target *p;
    const dnnl_version_t *pV = dnnl_version();
    dnnl_status_t st;

    if (zIsa && *zIsa) {
        size_t i;
        for (i = 0; i < N_ISA; i++)
            if (strcmp(aIsa[i].zName, zIsa) == 0) break;
        if (i == N_ISA) {
            snprintf(zErr, nErr, "onednn: unknown ISA '%s' (sse41, avx, avx2, avx2_vnni, "
                     "avx512_core, avx512_core_vnni, avx512_core_bf16, avx512_core_amx, all)",
                     zIsa);
            return NULL;
        }
        st = dnnl_set_max_cpu_isa(aIsa[i].isa);
        if (st != dnnl_success) {
            snprintf(zErr, nErr, "onednn: cannot cap the ISA at %s: %s (it must be set before "
                     "the first primitive)", zIsa, status_name(st));
            return NULL;
        }
    }
    /* one OpenMP thread per process unless the user said otherwise: --jobs gives the
     * parallelism, and results must not depend on a thread count */
    if (!getenv("OMP_NUM_THREADS")) set_omp_threads(1);
    p = parity_calloc(1, sizeof *p);
    if (!p) {
        snprintf(zErr, nErr, "out of memory");
        return NULL;
    }
    st = dnnl_engine_create(&p->engine, dnnl_cpu, 0);
    if (st == dnnl_success) st = dnnl_stream_create(&p->stream, p->engine, dnnl_stream_default_flags);
    if (st != dnnl_success) {
        snprintf(zErr, nErr, "onednn: cannot create a CPU engine and stream: %s",
                 status_name(st));
        onednn_close(&p->base);
        return NULL;
    }
    if (pV->hash && strcmp(pV->hash, "N/A") != 0)
        snprintf(p->zVersion, sizeof p->zVersion, "%d.%d.%d (%.12s)", pV->major, pV->minor,
                 pV->patch, pV->hash);
    else
        snprintf(p->zVersion, sizeof p->zVersion, "%d.%d.%d", pV->major, pV->minor, pV->patch);
    snprintf(p->zIsa, sizeof p->zIsa, "%s", isa_name(dnnl_get_effective_cpu_isa()));
    snprintf(p->zName, sizeof p->zName, "onednn%s%s", zIsa && *zIsa ? ":" : "",
             zIsa && *zIsa ? zIsa : "");
    p->base.zName = p->zName;
    p->base.xRun = onednn_run;
    p->base.xSupports = onednn_supports;
    p->base.xIdentity = onednn_identity;
    p->base.xClose = onednn_close;
    p->base.dtypes = 1u << PARITY_DT_F32;
    if (probe_bf16(p)) p->base.dtypes |= 1u << PARITY_DT_BF16;
    return &p->base;
}
