/*
 * bench_make_capture.c - writes a large single-tensor fp32 capture for the benchmarks,
 * streaming rows so the generator itself stays small in memory.
 *
 * Usage: bench_make_capture OUT.h5 MIB eager|compiled
 * The tensor /t is float32 [MIB * 256, 1024], values uniform in [-2, 2). The compiled
 * variant adds k * 2^-23 with k uniform in {-4..-1, 1..4} to each element (never 0: every
 * element differs, so no tool gets the cheap bit-identical case): the absolute error a
 * reordered fp32 accumulation of terms of size ~1 leaves, whatever the size of the result.
 * That is what a real compiled capture looks like: it passes assert_close's defaults (and
 * paritydiff), while a pure relative check such as `h5diff -p 1e-6` flags the elements near
 * zero. Every tool has to read and compare everything.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/capture.h"

enum { COLS = 1024, ROWS_PER_WRITE = 1024 };

int main(int argc, char **argv)
{
    parity_writer *pW;
    char zErr[PARITY_ERR_LEN];
    uint64_t aDim[2], row, state = 12345;
    float *aRow;
    int compiled;
    long nMiB;

    if (argc != 4 || (nMiB = atol(argv[2])) <= 0) {
        fprintf(stderr, "usage: bench_make_capture OUT.h5 MIB eager|compiled\n");
        return 2;
    }
    compiled = strcmp(argv[3], "compiled") == 0;
    aDim[0] = (uint64_t)nMiB * 256;
    aDim[1] = COLS;
    aRow = malloc(sizeof(float) * COLS * ROWS_PER_WRITE);
    if (!aRow || parity_writer_open(argv[1], &pW, zErr, sizeof zErr) != 0) {
        fprintf(stderr, "bench_make_capture: %s\n", aRow ? zErr : "out of memory");
        return 1;
    }
    if (parity_writer_attr_string(pW, "/", "side", compiled ? "compiled" : "eager") != 0 ||
        parity_writer_tensor_begin(pW, "/t", PARITY_DT_F32, 2, aDim) != 0)
        goto fail;
    for (row = 0; row < aDim[0]; row += ROWS_PER_WRITE) {
        uint64_t nRows = aDim[0] - row < ROWS_PER_WRITE ? aDim[0] - row : ROWS_PER_WRITE, i;
        for (i = 0; i < nRows * COLS; i++) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            aRow[i] = (float)((double)(state >> 11) / 9007199254740992.0 * 4.0 - 2.0);
            if (compiled) {
                /* k in -4..-1, 1..4: never 0, so every element differs (at -2, where the
                 * spacing is 2^-22, one step of 2^-23 can round back: then one ulp more) */
                int k = (int)((state >> 7) % 8) - 4;
                float base = aRow[i];
                aRow[i] += (float)(k >= 0 ? k + 1 : k) * 0x1p-23f;
                if (aRow[i] == base) aRow[i] = nextafterf(base, k >= 0 ? 4.0f : -4.0f);
            }
        }
        if (parity_writer_tensor_append(pW, aRow, nRows) != 0) goto fail;
    }
    if (parity_writer_tensor_end(pW) != 0) goto fail;
    free(aRow);
    if (parity_writer_close(pW, zErr, sizeof zErr) != 0) {
        fprintf(stderr, "bench_make_capture: %s\n", zErr);
        return 1;
    }
    return 0;
fail:
    fprintf(stderr, "bench_make_capture: %s\n", parity_writer_error(pW));
    parity_writer_abort(pW);
    free(aRow);
    return 1;
}
