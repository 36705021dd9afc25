/*
 * make_gate_example.c - writes the example gate suite (diff/GATE.md; README "Release
 * gates"): capture pairs of a small scorer, x -> softmax -> argmax, over two workloads and
 * four shape buckets, with the telemetry a serving run records.
 *
 *   chat/1-512/seq128, chat/1-512/seq512   compiled faster, every tensor within bounds
 *   chat/513-2048/seq1024                  the same
 *   chat/2049-8192/seq4100                 numerically right, but the compiled side
 *                                          recompiles 14 times per run and serves 30 % of
 *                                          calls by eager fallback: p99 regresses
 *   rank/513-2048/seq768                   compiled softmax wrong on row 3 (a masked-row
 *                                          bug): numerical divergence, and one argmax flips
 *   rank/2049-8192/seq3000                 compiled capture only: served, never diffed
 * plus policy.yaml and traffic.csv (copied by the build from examples/gate/).
 *
 * Usage: make_gate_example DIR [--calm | --night N]
 *   --calm     the long chat bucket behaves (the persistence tests: a run in range between
 *              two out of range)
 *   --night N  night N of ten nightly runs (the investigation example, diff/INVESTIGATE.md):
 *              compiler 2.5.0 until a compiler upgrade to 2.6.0 at night 6 (a new
 *              config_hash) breaks rank/513-2048 numerically and makes chat/2049-8192
 *              recompile; night 3 has a one-run recompile blip there; data_version moves
 *              at night 4 without effect; rank/1-512 is a passing neighbour of the broken
 *              bucket. Identity also carries commit nightly-N.
 *
 * The softmax is computed in double and rounded to float32 on both sides (each element
 * within 1 ulp of the exact value, far inside the op's bound), with last-bit differences
 * between the sides, so the pairs that pass are judged, not bit-identical.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "formats/capture.h"

enum { ROWS = 8, COLS = 16, BUCKETS = 256 };

typedef struct {
    const char *zDir, *zWorkload, *zBucket;
    int hasEager;
    int broken;                  /* compiled softmax wrong on row 3 */
    double eagerMs, compiledMs;  /* steady-state latency per call */
    int recompiles;
    double fallbackShare;        /* calls served by eager fallback */
    double compileTime;
} pair_spec;

static uint64_t g_state = 20261205;

static double next_unit(void)
{
    g_state = g_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(g_state >> 11) / 9007199254740992.0;
}

/* GATE.md, "Latency buckets": 0 below 0.001 ms, i in [0.001 2^((i-1)/8), 0.001 2^(i/8)). */
static int latency_bucket(double ms)
{
    int i;
    if (ms < 0.001) return 0;
    i = (int)floor(8.0 * log2(ms / 0.001)) + 1;
    return i > BUCKETS - 1 ? BUCKETS - 1 : i;
}

static int mkdirs(const char *zPath)
{
    char z[4096];
    size_t i;
    snprintf(z, sizeof z, "%s", zPath);
    for (i = 1; z[i]; i++)
        if (z[i] == '/') {
            z[i] = 0;
            mkdir(z, 0777);
            z[i] = '/';
        }
    return mkdir(z, 0777) == 0 || errno == EEXIST;
}

#define CHECK(call) do { if ((call) != 0) goto fail; } while (0)

/* Which suite: the plain example (night 0), calm, or a night of the nightly series. */
typedef struct {
    int calm;
    int night;
} suite_mode;

static int write_side(const pair_spec *pP, int compiled, const suite_mode *pMode)
{
    float x[ROWS * COLS], y[ROWS * COLS];
    int64_t aHist[BUCKETS] = { 0 };
    uint64_t aDim[2] = { ROWS, COLS };
    const char *azIn[1] = { "/x" };
    char zPath[4096], zErr[PARITY_ERR_LEN];
    parity_writer *pW = NULL;
    int r, c, i, calls = 200, fallback = 0, recompiles = compiled ? pP->recompiles : 0;
    double total = 0.0, fallbackShare = compiled ? pP->fallbackShare : 0.0;
    uint64_t saved = g_state;

    int calm = pMode->calm || (pMode->night > 0 && pMode->night < 6 && pMode->night != 3);
    int broken = pP->broken && (pMode->night == 0 || pMode->night >= 6);
    char zCommit[32];

    if (calm) { recompiles = 0; fallbackShare = 0.0; }
    g_state = 7919u * (uint64_t)(strlen(pP->zDir) + 1) + 17;   /* same x on both sides */
    for (i = 0; i < ROWS * COLS; i++) x[i] = (float)(next_unit() * 8.0 - 4.0);
    for (r = 0; r < ROWS; r++) {
        double m = x[r * COLS], sum = 0.0;
        for (c = 1; c < COLS; c++) m = fmax(m, x[r * COLS + c]);
        for (c = 0; c < COLS; c++) sum += exp((double)x[r * COLS + c] - m);
        for (c = 0; c < COLS; c++) {
            double v = exp((double)x[r * COLS + c] - m) / sum;
            float f = (float)v;
            /* compiled: the other neighbour of v on some elements, still within 1 ulp */
            if (compiled && (r + c) % 3 == 0) f = nextafterf(f, (double)f < v ? 1.0f : 0.0f);
            y[r * COLS + c] = f;
        }
        /* the masked-row bug: row 3's probabilities come out reversed in a tail tile */
        if (compiled && broken && r == 3)
            for (c = 0; c < COLS / 2; c++) {
                float t = y[r * COLS + c];
                y[r * COLS + c] = y[r * COLS + COLS - 1 - c];
                y[r * COLS + COLS - 1 - c] = t;
            }
    }
    g_state = saved;
    /* Steady-state latencies: jitter around the side's latency; fallback calls run at
     * eager's latency plus a dispatch cost; each recompile stalls one call. */
    for (i = 0; i < calls; i++) {
        double ms = (compiled ? pP->compiledMs : pP->eagerMs) * (0.9 + 0.2 * next_unit());
        if (compiled && i % 100 < (int)(fallbackShare * 100.0 + 0.5)) {
            ms = pP->eagerMs * 1.4 * (0.9 + 0.2 * next_unit());
            fallback++;
        }
        if (compiled && i < recompiles && i % 2 == 0) ms += 80.0 * (0.9 + 0.2 * next_unit());
        aHist[latency_bucket(ms)]++;
        total += ms;
    }
    snprintf(zPath, sizeof zPath, "%s/%s.h5", pP->zDir, compiled ? "compiled" : "eager");
    if (parity_writer_open(zPath, &pW, zErr, sizeof zErr) != 0) {
        fprintf(stderr, "make_gate_example: %s\n", zErr);
        return -1;
    }
    CHECK(parity_writer_attr_int(pW, "/", "parity_format", 1));
    CHECK(parity_writer_attr_string(pW, "/", "side", compiled ? "compiled" : "eager"));
    CHECK(parity_writer_attr_string(pW, "/", "model", "example-scorer"));
    CHECK(parity_writer_attr_string(pW, "/", "compiler", compiled ? "example-jit" : "eager"));
    CHECK(parity_writer_attr_string(pW, "/", "workload", pP->zWorkload));
    CHECK(parity_writer_attr_string(pW, "/", "shape_bucket", pP->zBucket));
    if (pMode->night > 0) {
        snprintf(zCommit, sizeof zCommit, "nightly-%d", pMode->night);
        CHECK(parity_writer_attr_string(pW, "/", "commit", zCommit));
        CHECK(parity_writer_attr_string(pW, "/", "data_version", pMode->night < 4 ? "d1" : "d2"));
        CHECK(parity_writer_attr_string(pW, "/", "framework_version", "2.5.1"));
        if (compiled) {
            CHECK(parity_writer_attr_string(pW, "/", "compiler_version",
                                            pMode->night < 6 ? "2.5.0" : "2.6.0"));
            CHECK(parity_writer_attr_string(pW, "/", "config_hash",
                                            pMode->night < 6 ? "5e1c0a77" : "9b02f4d1"));
        }
    }
    CHECK(parity_writer_attr_int(pW, "/", "calls", calls));
    CHECK(parity_writer_attr_float(pW, "/", "steady_time_s", total / 1000.0));
    CHECK(parity_writer_attr_ints(pW, "/", "latency_hist_ms", aHist, BUCKETS));
    if (compiled) {
        CHECK(parity_writer_attr_float(pW, "/", "compile_time_s", pP->compileTime));
        CHECK(parity_writer_attr_int(pW, "/", "recompiles", recompiles));
        CHECK(parity_writer_attr_int(pW, "/", "graph_breaks", recompiles ? 2 : 0));
        CHECK(parity_writer_attr_int(pW, "/", "fallback_calls", fallback));
        if (recompiles)
            CHECK(parity_writer_attr_string(pW, "/", "recompile_reasons",
                  "tensor 'x' size mismatch at index 1. expected 4096, actual 4100\n"
                  "cache_size_limit reached: falling back to eager"));
    }
    CHECK(parity_writer_tensor(pW, "/x", PARITY_DT_F32, 2, aDim, x));
    CHECK(parity_writer_tensor(pW, "/scores", PARITY_DT_F32, 2, aDim, y));
    CHECK(parity_writer_attr_string(pW, "/scores", "op", "softmax"));
    CHECK(parity_writer_attr_strings(pW, "/scores", "inputs", azIn, 1));
    CHECK(parity_writer_attr_int(pW, "/scores", "order", 0));
    CHECK(parity_writer_attr_string(pW, "/scores", "outcome", "argmax"));
    if (parity_writer_close(pW, zErr, sizeof zErr) != 0) {
        fprintf(stderr, "make_gate_example: %s\n", zErr);
        return -1;
    }
    return 0;
fail:
    parity_writer_abort(pW);
    fprintf(stderr, "make_gate_example: cannot write %s\n", zPath);
    return -1;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *zSub, *zWorkload, *zBucket;
        int hasEager, broken;
        int in;                  /* 1: the plain example, 2: the nights, 3: both */
        double eagerMs, compiledMs;
        int recompiles;
        double fallback, compileTime;
    } aPair[] = {
        { "chat/1-512/seq128", "chat", "1-512", 1, 0, 3, 2.0, 1.2, 0, 0.0, 3.1 },
        { "chat/1-512/seq512", "chat", "1-512", 1, 0, 3, 3.5, 2.1, 0, 0.0, 3.4 },
        { "chat/513-2048/seq1024", "chat", "513-2048", 1, 0, 3, 6.0, 3.9, 0, 0.0, 5.2 },
        { "chat/2049-8192/seq4100", "chat", "2049-8192", 1, 0, 3, 10.0, 6.5, 14, 0.30, 41.0 },
        { "rank/513-2048/seq768", "rank", "513-2048", 1, 1, 3, 4.0, 2.6, 0, 0.0, 4.4 },
        { "rank/2049-8192/seq3000", "rank", "2049-8192", 0, 0, 1, 9.0, 6.0, 0, 0.0, 8.0 },
        { "rank/1-512/seq256", "rank", "1-512", 1, 0, 2, 2.5, 1.6, 0, 0.0, 3.0 },
    };
    suite_mode mode = { 0, 0 };
    size_t i;
    char zDir[4096], *zEnd;

    if (argc == 3 && strcmp(argv[2], "--calm") == 0) {
        mode.calm = 1;
    } else if (argc == 4 && strcmp(argv[2], "--night") == 0) {
        mode.night = (int)strtol(argv[3], &zEnd, 10);
        if (*zEnd || mode.night < 1 || mode.night > 99) mode.night = -1;
    } else if (argc != 2) {
        mode.night = -1;
    }
    if (mode.night < 0) {
        fprintf(stderr, "usage: make_gate_example DIR [--calm | --night N (1 to 99)]\n");
        return 2;
    }
    for (i = 0; i < sizeof aPair / sizeof aPair[0]; i++) {
        pair_spec p;
        if (!(aPair[i].in & (mode.night > 0 ? 2 : 1))) continue;
        snprintf(zDir, sizeof zDir, "%s/%s", argv[1], aPair[i].zSub);
        if (!mkdirs(zDir)) {
            fprintf(stderr, "make_gate_example: cannot create %s\n", zDir);
            return 2;
        }
        p.zDir = zDir;
        p.zWorkload = aPair[i].zWorkload;
        p.zBucket = aPair[i].zBucket;
        p.hasEager = aPair[i].hasEager;
        p.broken = aPair[i].broken;
        p.eagerMs = aPair[i].eagerMs;
        p.compiledMs = aPair[i].compiledMs;
        p.recompiles = aPair[i].recompiles;
        p.fallbackShare = aPair[i].fallback;
        p.compileTime = aPair[i].compileTime;
        g_state = 20261205 + i;
        if ((p.hasEager && write_side(&p, 0, &mode) != 0) || write_side(&p, 1, &mode) != 0)
            return 2;
    }
    return 0;
}
