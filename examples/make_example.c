/*
 * make_example.c - writes the embedded example: an eager and a compiled capture of a small
 * two-layer MLP with one known divergence.
 *
 *   x[16,64] -> linear1 (w1[96,64], b1) -> relu -> linear2 (w2[44,96], b2) -> softmax
 *
 * The eager side accumulates dot products sequentially in fp32. The compiled side
 * accumulates in blocks of 8 (a different but legitimate summation order, so every tensor
 * differs by rounding), and carries a tail-tile bug in linear2: for the last partial tile of
 * output columns (40..43 with a tile of 8) it drops the final K block of the dot product.
 * Expected diff: first divergence /mlp/linear2 with affected slice [0:16, 40:44], and
 * /mlp/softmax failing downstream of it.
 *
 * Usage: make_example DIR   (writes DIR/eager.h5 and DIR/compiled.h5)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/capture.h"

enum { BATCH = 16, IN = 64, HIDDEN = 96, OUT = 44, KBLOCK = 8, NTILE = 8 };

/* Deterministic values in [-1, 1): a 64-bit LCG (Knuth MMIX constants). */
static float next_value(uint64_t *pState)
{
    *pState = *pState * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(*pState >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* y[b][o] = sum_k x[b][k] * w[o][k] + bias[o]; blocked order when kblock > 0; buggyTail
 * drops the last K block for output columns in the final partial tile. */
static void linear(const float *x, const float *w, const float *bias, float *y, int nB,
                   int nIn, int nOut, int kblock, int buggyTail)
{
    int b, o, k, k0;
    int tailStart = nOut - nOut % NTILE;
    for (b = 0; b < nB; b++) {
        for (o = 0; o < nOut; o++) {
            float acc = 0.0f;
            if (kblock == 0) {
                for (k = 0; k < nIn; k++) acc += x[b * nIn + k] * w[o * nIn + k];
            } else {
                int kEnd = nIn;
                if (buggyTail && o >= tailStart && nOut % NTILE != 0) kEnd = nIn - kblock;
                for (k0 = 0; k0 < kEnd; k0 += kblock) {
                    float part = 0.0f;
                    for (k = k0; k < k0 + kblock && k < kEnd; k++) part += x[b * nIn + k] * w[o * nIn + k];
                    acc += part;
                }
            }
            y[b * nOut + o] = acc + bias[o];
        }
    }
}

static void relu(const float *x, float *y, int n)
{
    int i;
    for (i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static void softmax_rows(const float *x, float *y, int nRow, int nCol)
{
    int r, c;
    for (r = 0; r < nRow; r++) {
        float m = x[r * nCol], sum = 0.0f;
        for (c = 1; c < nCol; c++) m = fmaxf(m, x[r * nCol + c]);
        for (c = 0; c < nCol; c++) { y[r * nCol + c] = expf(x[r * nCol + c] - m); sum += y[r * nCol + c]; }
        for (c = 0; c < nCol; c++) y[r * nCol + c] /= sum;
    }
}

/* An op's output: the [rows, cols] float32 tensor with its op, inputs and order. */
static int write_op(parity_writer *pW, const char *zPath, const char *zOp,
                    const char *const *azInput, size_t nInput, int order,
                    const uint64_t *aDim, const float *pData)
{
    if (parity_writer_tensor(pW, zPath, PARITY_DT_F32, 2, aDim, pData) != 0 ||
        parity_writer_attr_string(pW, zPath, "op", zOp) != 0 ||
        parity_writer_attr_strings(pW, zPath, "inputs", azInput, nInput) != 0 ||
        parity_writer_attr_int(pW, zPath, "order", order) != 0)
        return -1;
    return 0;
}

static int write_side(const char *zDir, int compiled)
{
    static float x[BATCH * IN], w1[HIDDEN * IN], b1[HIDDEN], w2[OUT * HIDDEN], b2[OUT];
    static float h[BATCH * HIDDEN], hr[BATCH * HIDDEN], y[BATCH * OUT], p[BATCH * OUT];
    uint64_t state = 20261129, aX[2] = { BATCH, IN }, aW1[2] = { HIDDEN, IN }, aB1[1] = { HIDDEN };
    uint64_t aW2[2] = { OUT, HIDDEN }, aB2[1] = { OUT }, aH[2] = { BATCH, HIDDEN }, aY[2] = { BATCH, OUT };
    char zPath[4096], zErr[PARITY_ERR_LEN];
    parity_writer *pW;
    int i, rc = 0;
    const char *azLinear1In[] = { "/mlp/x", "/mlp/w1", "/mlp/b1" };
    const char *azReluIn[] = { "/mlp/linear1" };
    const char *azLinear2In[] = { "/mlp/relu", "/mlp/w2", "/mlp/b2" };
    const char *azSoftmaxIn[] = { "/mlp/linear2" };

    for (i = 0; i < BATCH * IN; i++) x[i] = next_value(&state);
    for (i = 0; i < HIDDEN * IN; i++) w1[i] = next_value(&state) * 0.125f;
    for (i = 0; i < HIDDEN; i++) b1[i] = next_value(&state) * 0.1f;
    for (i = 0; i < OUT * HIDDEN; i++) w2[i] = next_value(&state) * 0.125f;
    for (i = 0; i < OUT; i++) b2[i] = next_value(&state) * 0.1f;

    linear(x, w1, b1, h, BATCH, IN, HIDDEN, compiled ? KBLOCK : 0, 0);
    relu(h, hr, BATCH * HIDDEN);
    linear(hr, w2, b2, y, BATCH, HIDDEN, OUT, compiled ? KBLOCK : 0, compiled);
    softmax_rows(y, p, BATCH, OUT);

    snprintf(zPath, sizeof zPath, "%s/%s.h5", zDir, compiled ? "compiled" : "eager");
    if (parity_writer_open(zPath, &pW, zErr, sizeof zErr) != 0) {
        fprintf(stderr, "make_example: %s\n", zErr);
        return -1;
    }
#define CHECK(call) do { if ((call) != 0) { rc = -1; goto done; } } while (0)
    CHECK(parity_writer_attr_int(pW, "/", "parity_format", 1));
    CHECK(parity_writer_attr_string(pW, "/", "side", compiled ? "compiled" : "eager"));
    CHECK(parity_writer_attr_string(pW, "/", "model", "example-mlp"));
    CHECK(parity_writer_attr_string(pW, "/", "model_version", "1"));
    CHECK(parity_writer_attr_string(pW, "/", "framework", "parity-example"));
    CHECK(parity_writer_attr_string(pW, "/", "compiler", compiled ? "tiled-kernels" : "none"));
    CHECK(parity_writer_attr_string(pW, "/", "device", "cpu"));
    if (compiled) {
        CHECK(parity_writer_attr_float(pW, "/", "compile_time_s", 1.25));
        CHECK(parity_writer_attr_int(pW, "/", "graph_breaks", 0));
    }
    CHECK(parity_writer_tensor(pW, "/mlp/x", PARITY_DT_F32, 2, aX, x));
    CHECK(parity_writer_tensor(pW, "/mlp/w1", PARITY_DT_F32, 2, aW1, w1));
    CHECK(parity_writer_tensor(pW, "/mlp/b1", PARITY_DT_F32, 1, aB1, b1));
    CHECK(parity_writer_tensor(pW, "/mlp/w2", PARITY_DT_F32, 2, aW2, w2));
    CHECK(parity_writer_tensor(pW, "/mlp/b2", PARITY_DT_F32, 1, aB2, b2));
    CHECK(write_op(pW, "/mlp/linear1", "linear", azLinear1In, 3, 0, aH, h));
    CHECK(write_op(pW, "/mlp/relu", "relu", azReluIn, 1, 1, aH, hr));
    CHECK(write_op(pW, "/mlp/linear2", "linear", azLinear2In, 3, 2, aY, y));
    CHECK(write_op(pW, "/mlp/softmax", "softmax", azSoftmaxIn, 1, 3, aY, p));
    CHECK(parity_writer_attr_int(pW, "/mlp/softmax", "dim", -1));
#undef CHECK
done:
    if (rc != 0) {
        fprintf(stderr, "make_example: %s\n", parity_writer_error(pW));
        parity_writer_abort(pW);
        return -1;
    }
    if (parity_writer_close(pW, zErr, sizeof zErr) != 0) {
        fprintf(stderr, "make_example: %s\n", zErr);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    parity_hdf5_no_exit_handler();   /* first: a full disk must not crash at exit */
    if (argc != 2) {
        fprintf(stderr, "usage: make_example DIR\n");
        return 2;
    }
    if (write_side(argv[1], 0) != 0 || write_side(argv[1], 1) != 0) return 1;
    return 0;
}
