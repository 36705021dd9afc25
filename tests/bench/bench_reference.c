/*
 * bench_reference.c - what the MPFR reference costs, against a naive binary64 loop, in one
 * run (issue "semantic judgement": full verification of a 512x512x512 fp32 matmul within 10x
 * the naive fp64 triple loop on the same data).
 *
 * Usage: bench_reference [N]          full: N x N x N (default 512), against the naive loop
 *        bench_reference --sampled [N]  selective: N x N output, K = N (default 4096)
 * Full mode prints the naive loop's time, the time of parity_judge over every output
 * element (reference via the exact accumulator, bound, classification), and their ratio.
 * Sampled mode times parity_judge_planned with the default plan on a 4096 x 4096 output
 * with K = 4096 (the "under 2 s"): the operands are rank-1, a[i,k] = u_i v_k and
 * b[k,j] = w_k z_j, so the compiled output u_i z_j sum_k v_k w_k costs O(1) per element to
 * produce (a real 4096^3 product would take minutes here), while the reference still sums
 * K exact products per checked element.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tolerance/judge.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int run_sampled(size_t n)
{
    double *a = malloc(n * n * sizeof(double)), *b = malloc(n * n * sizeof(double));
    double *c = malloc(n * n * sizeof(double)), *u = malloc(n * 4 * sizeof(double));
    double *v = u + n, *w = u + 2 * n, *z = u + 3 * n, dot = 0.0, t0, t;
    uint64_t aDim[2] = { n, n }, state = 7;
    size_t i, k;
    parity_operand aIn[2];
    parity_op_call call;
    parity_judgement judgement;
    parity_judge_plan plan;
    char zErr[256];

    if (!a || !b || !c || !u) return 1;
    parity_judge_plan_default(&plan);
    plan.seed = 12345;
    for (i = 0; i < 4 * n; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        /* 8-bit significands, so every product below is exact in float32 */
        u[i] = (double)((int)(state >> 56) - 128) / 64.0;
    }
    for (i = 0; i < n; i++)
        for (k = 0; k < n; k++) {
            a[i * n + k] = u[i] * v[k];
            b[i * n + k] = w[i] * z[k];
        }
    for (k = 0; k < n; k++) dot += v[k] * w[k];   /* exact: small integers / 2^12 */
    for (i = 0; i < n * n; i++) c[i] = (float)(u[i / n] * z[i % n] * dot);
    aIn[0] = (parity_operand){ "a", PARITY_DT_F32, 2, { n, n }, n * n, a };
    aIn[1] = (parity_operand){ "b", PARITY_DT_F32, 2, { n, n }, n * n, b };
    t0 = now();   /* setup (b transposed, norms) counts too */
    if (parity_op_begin(&call, parity_op_find("matmul"), aIn, 2, PARITY_DT_F32, 2, aDim,
                        PARITY_DT_INVALID, NULL, 0, zErr, sizeof zErr) != 0) {
        fprintf(stderr, "%s\n", zErr);
        return 1;
    }
    if (parity_judge_planned(&call, c, c, c, &plan, &judgement, zErr, sizeof zErr) != 0) {
        fprintf(stderr, "%s\n", zErr);
        return 1;
    }
    t = now() - t0;
    parity_op_end(&call);
    printf("matmul %zux%zu, K=%zu, sampled verification: %.3f s (%s; checked %llu of %zu: "
           "%llu flagged, %llu sampled; failing %llu)\n", n, n, n, t,
           judgement.sampled ? "selective" : "full", (unsigned long long)judgement.nChecked, n * n,
           (unsigned long long)judgement.nFlagged, (unsigned long long)judgement.nSampled,
           (unsigned long long)judgement.nFail);
    free(a);
    free(b);
    free(c);
    free(u);
    return 0;
}

int main(int argc, char **argv)
{
    size_t n, i, j, k;
    double *a, *b, *c;
    uint64_t state = 1, aDim[2];
    parity_operand aIn[2];
    parity_op_call call;
    parity_judgement judgement;
    char zErr[256];
    double t0, tNaive, tJudge, sink = 0.0;

    if (argc > 1 && strcmp(argv[1], "--sampled") == 0)
        return run_sampled(argc > 2 ? (size_t)atol(argv[2]) : 4096);
    n = argc > 1 ? (size_t)atol(argv[1]) : 512;
    a = malloc(n * n * sizeof(double));
    b = malloc(n * n * sizeof(double));
    c = malloc(n * n * sizeof(double));
    if (!a || !b || !c) return 1;
    for (i = 0; i < n * n; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        a[i] = (float)((double)(state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        b[i] = (float)((double)(state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    t0 = now();
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++) {
            double s = 0.0;
            for (k = 0; k < n; k++) s += a[i * n + k] * b[k * n + j];
            c[i * n + j] = (float)s;
        }
    tNaive = now() - t0;
    for (i = 0; i < n * n; i++) sink += c[i];

    aDim[0] = aDim[1] = n;
    aIn[0] = (parity_operand){ "a", PARITY_DT_F32, 2, { n, n }, n * n, a };
    aIn[1] = (parity_operand){ "b", PARITY_DT_F32, 2, { n, n }, n * n, b };
    if (parity_op_begin(&call, parity_op_find("matmul"), aIn, 2, PARITY_DT_F32, 2, aDim,
                        PARITY_DT_INVALID, NULL, 0, zErr, sizeof zErr) != 0) {
        fprintf(stderr, "%s\n", zErr);
        return 1;
    }
    t0 = now();
    if (parity_judge(&call, c, c, &judgement, zErr, sizeof zErr) != 0) {
        fprintf(stderr, "%s\n", zErr);
        return 1;
    }
    tJudge = now() - t0;
    parity_op_end(&call);
    printf("matmul %zux%zux%zu: naive fp64 loop %.3f s, full reference + judgement %.3f s, "
           "ratio %.1fx (checked %llu, failing %llu; sink %g)\n", n, n, n, tNaive, tJudge,
           tJudge / tNaive, (unsigned long long)judgement.nChecked, (unsigned long long)judgement.nFail, sink);
    free(a);
    free(b);
    free(c);
    return 0;
}
