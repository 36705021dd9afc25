/*
 * bench_reference.c - what the MPFR reference costs, against a naive binary64 loop, in one
 * run (issue "semantic judgement": full verification of a 512x512x512 fp32 matmul within 10x
 * the naive fp64 triple loop on the same data).
 *
 * Usage: bench_reference [N]   (default 512; the matmul is N x N x N)
 * Prints the naive loop's time, the time of parity_judge over every output element
 * (reference via the exact accumulator, bound, classification), and their ratio.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "tolerance/judge.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 512, i, j, k;
    double *a = malloc(n * n * sizeof(double)), *b = malloc(n * n * sizeof(double));
    double *c = malloc(n * n * sizeof(double));
    uint64_t state = 1, aDim[2] = { n, n };
    parity_operand aIn[2];
    parity_op_call call;
    parity_judgement judgement;
    char zErr[256];
    double t0, tNaive, tJudge, sink = 0.0;

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
