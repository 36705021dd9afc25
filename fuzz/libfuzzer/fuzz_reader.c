/*
 * fuzz_reader.c - libFuzzer harness over the capture reader: the input is the bytes of an
 * HDF5 file, read the way paritydiff reads a capture, in this process.
 *
 * Each input is written to a fresh temporary file (parity_capture_open takes a path, and
 * the diff engine maps contiguous data from the file itself), then:
 *   1. parity_capture_open lists it; every tensor and attribute is walked and checked
 *      against capture.h's contract (paths, ranks, element counts, attribute kinds);
 *   2. every usable tensor is read through parity_tensor_reader in small slabs aligned to
 *      its chunks, as the engine plans them;
 *   3. parity_diff_run diffs the file against itself, so the engine's own read paths
 *      (mapped windows, the chunk decoder, libhdf5's selections) run too; the same bytes
 *      read twice must compare equal;
 *   4. nothing is left open: libhdf5 counts no open object afterwards; then the library
 *      is closed, so that every input starts from a fresh libhdf5 as the CLI's child does.
 * A broken property prints "parity finding: reader: ..." and aborts (a libFuzzer crash);
 * the replay driver's --expect-finding counts it instead.
 *
 * What this cannot tell apart: libhdf5 1.10 itself crashes, hangs or runs out of memory on
 * many corrupt files (fuzz/FUZZ.md, "The reader harness"). paritydiff survives those by
 * reading in a supervised child (formats/process.c); here they are crashes of the harness,
 * and a crash whose first frame is in libhdf5 is triaged by running the paritydiff CLI on
 * the input (scripts/fuzz-reader.sh, scripts/check-paritydiff-inputs.sh), not here.
 *
 * Budget: the data steps (2 and 3) are skipped when the capture claims more than
 * READER_MAX_ELEMENTS elements in all (a corrupt dim would otherwise make one input read
 * for minutes; paritydiff's own --max-memory and --timeout cover that case and the
 * corruption sweep tests them), and the diff stops itself after READER_SECONDS.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <hdf5.h>
#include "diff/diff.h"
#include "formats/alloc.h"
#include "harness.h"

#define READER_MAX_ELEMENTS (1u << 20)
#define READER_SLAB_ELEMENTS 1000    /* small and no power of two: slabs end mid-chunk */
#define READER_SECONDS 2.0

/* The replay driver's --expect-finding (harness.h). */
int harness_count_findings = 0;
long harness_nFindings = 0;

static char zTmpDir[4096];
static int bFinding;   /* the current input broke a property */

/* Records a broken property; aborts unless the replay driver counts findings. */
static void finding(const char *zWhat, const char *zDetail)
{
    fprintf(stderr, "parity finding: reader: %s%s%s\n", zWhat, zDetail ? ": " : "",
            zDetail ? zDetail : "");
    if (!harness_count_findings) abort();
    bFinding = 1;
}

/* Every error the module returns is one non-empty line (capture.h's error style): the CLI
 * prints it as its one stderr line. */
static void check_message(const char *zCall, const char *zErr)
{
    if (!zErr[0]) finding(zCall, "failed with an empty message");
    else if (strchr(zErr, '\n')) finding(zCall, "failed with a message of several lines");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int time_up(void *pCtx)
{
    return now_s() > *(const double *)pCtx;
}

int LLVMFuzzerInitialize(int *pArgc, char ***pArgv)
{
    const char *zEnv = getenv("TMPDIR");
    (void)pArgc;
    (void)pArgv;
    snprintf(zTmpDir, sizeof zTmpDir, "%s", zEnv && *zEnv ? zEnv : "/tmp");
    /* One thread: libFuzzer's coverage and a crash's stack are per thread, and inputs are
     * small. */
    parity_capture_set_decode_threads(1);
    return 0;
}

/* Writes the input to a new file; its path goes to zPath. A fresh name per input, so a
 * file libhdf5 failed to close cannot be mistaken for the next input's (it matches open
 * files by device and inode). */
static int write_input(const uint8_t *aData, size_t nData, char *zPath, size_t nPath)
{
    int fd;
    size_t nDone = 0;
    snprintf(zPath, nPath, "%s/fuzz_reader.XXXXXX", zTmpDir);
    fd = mkstemp(zPath);
    if (fd < 0) {
        fprintf(stderr, "fuzz_reader: cannot create %s: %s\n", zPath, strerror(errno));
        exit(2);
    }
    while (nDone < nData) {
        ssize_t n = write(fd, aData + nDone, nData - nDone);
        if (n <= 0) {
            fprintf(stderr, "fuzz_reader: cannot write %s: %s\n", zPath, strerror(errno));
            unlink(zPath);
            exit(2);
        }
        nDone += (size_t)n;
    }
    close(fd);
    return 0;
}

static void check_attrs(const parity_attr *aAttr, size_t nAttr)
{
    size_t i, k;
    char zBuf[256];
    for (i = 0; i < nAttr; i++) {
        const parity_attr *pA = &aAttr[i];
        if (!pA->zName) {
            finding("an attribute has no name", NULL);
            continue;
        }
        if (!pA->isArray && pA->kind != PARITY_ATTR_OTHER && pA->n != 1)
            finding("a scalar attribute does not hold one value", pA->zName);
        if (pA->n > 0 && ((pA->kind == PARITY_ATTR_STRING && !pA->azStr) ||
                          (pA->kind == PARITY_ATTR_INT && !pA->aInt) ||
                          (pA->kind == PARITY_ATTR_FLOAT && !pA->aFloat)))
            finding("an attribute's values are missing", pA->zName);
        if (pA->kind == PARITY_ATTR_STRING && pA->azStr)
            for (k = 0; k < pA->n; k++)
                if (!pA->azStr[k]) finding("a string attribute holds a NULL string", pA->zName);
        parity_attr_format(pA, zBuf, sizeof zBuf);   /* how reports show it */
        if (parity_attr_find(aAttr, nAttr, pA->zName) == NULL)
            finding("an attribute cannot be found by its own name", pA->zName);
    }
}

/* capture.h's promises about each listed tensor. Returns its elements when usable, else 0. */
static uint64_t check_tensor(const parity_capture *pCap, size_t i)
{
    const parity_tensor_info *pT = parity_capture_tensor(pCap, i);
    size_t k;
    if (!pT || !pT->zPath || pT->zPath[0] != '/') {
        finding("a tensor has no path starting with '/'", NULL);
        return 0;
    }
    if (parity_capture_find(pCap, pT->zPath) != (long)i)
        finding("a tensor is not found under its own path", pT->zPath);
    check_attrs(pT->aAttr, pT->nAttr);
    for (k = 0; k < pT->nInput; k++)
        if (!pT->azInput[k]) finding("an 'inputs' entry is NULL", pT->zPath);
    if (pT->zError) {
        if (!pT->zError[0] || strchr(pT->zError, '\n'))
            finding("a tensor's error is not one non-empty line", pT->zPath);
        return 0;
    }
    if (pT->dtype <= PARITY_DT_INVALID || pT->dtype >= PARITY_DT_COUNT)
        finding("a usable tensor has no valid dtype", pT->zPath);
    if (pT->rank < 0 || pT->rank > PARITY_MAX_RANK) {
        finding("a usable tensor's rank is out of range", pT->zPath);
        return 0;
    }
    if (pT->nElem != parity_shape_elements(pT->rank, pT->aDim) ||
        pT->nElem > PARITY_MAX_ELEMENTS)
        finding("a usable tensor's element count is not its shape's", pT->zPath);
    return pT->nElem;
}

/* Reads tensor i slab by slab, as compare.c plans them: aligned to the chunks. */
static void read_tensor(parity_capture *pCap, size_t i)
{
    const parity_tensor_info *pT = parity_capture_tensor(pCap, i);
    parity_tensor_reader *pRd = NULL;
    parity_slab_plan plan;
    parity_slab slab;
    char zErr[PARITY_ERR_LEN] = "";
    const uint64_t *aChunk;
    uint64_t rowAlign = 1, nRead = 0;
    void *pBuf;
    if (parity_tensor_reader_open(pCap, i, &pRd, zErr, sizeof zErr) != 0) {
        check_message("parity_tensor_reader_open", zErr);
        return;
    }
    aChunk = parity_tensor_reader_chunk(pRd);
    if (pT->rank > 0 && aChunk[0] > 0) rowAlign = aChunk[0];
    /* The whole tensor fits (the caller's element budget); a slab rounded up to the
     * chunks may be larger than READER_SLAB_ELEMENTS. */
    pBuf = malloc(pT->nElem * parity_dtype_size(pT->dtype) + 1);
    if (!pBuf) {
        fprintf(stderr, "fuzz_reader: out of memory\n");
        exit(2);
    }
    parity_slab_plan_init(&plan, pT->rank, pT->aDim, READER_SLAB_ELEMENTS, rowAlign);
    /* The planner covers the tensor in order (a zero-size tensor and a scalar in one slab,
     * empty for the former); with no chunk to round to, within the bound it was given. */
    while (parity_slab_next(&plan, &slab)) {
        if (slab.first != nRead || (slab.n == 0 && pT->nElem != 0) || nRead + slab.n > pT->nElem) {
            finding("slabs do not tile the tensor", pT->zPath);
            break;
        }
        if (slab.n > READER_SLAB_ELEMENTS && rowAlign == 1)
            finding("a slab is larger than planned", pT->zPath);
        if (parity_tensor_read(pRd, &slab, pBuf, zErr, sizeof zErr) != 0) {
            check_message("parity_tensor_read", zErr);
            break;
        }
        nRead += slab.n;
    }
    free(pBuf);
    parity_tensor_reader_close(pRd);
}

/* The file against itself: the same bytes on both sides, so every tensor compared by the
 * per-dtype tolerance passes bit for bit, inputs included. (A tensor judged by an op model
 * may fail: its data need not be what its op computes; so may the verdict, by a root
 * 'run_failure'.) */
static void self_diff(const char *zPath)
{
    parity_diff_options opt;
    parity_diff_result res;
    char zErr[PARITY_ERR_LEN] = "";
    double deadline = now_s() + READER_SECONDS;
    size_t k;
    parity_diff_options_init(&opt);
    opt.nThreads = 1;
    opt.nSlabBytes = 4096;   /* several slabs per side even for a small tensor */
    opt.xBeat = time_up;
    opt.pProgressCtx = &deadline;
    if (parity_diff_run(&opt, zPath, zPath, &res, zErr, sizeof zErr) != 0) {
        check_message("parity_diff_run", zErr);
        return;
    }
    /* An input that cannot be read (status error) makes inputs_match false: the engine
     * cannot vouch for it. One that fails is caught below as a failing unjudged tensor. */
    if (!res.inputsMatch != (res.nInputDiffers > 0))
        finding("inputs_match disagrees with the inputs listed as differing", NULL);
    for (k = 0; k < res.nTensor; k++) {
        const parity_tensor_result *pR = &res.aTensor[k];
        const char *zName = pR->zName ? pR->zName : "(no name)";
        switch (pR->status) {
        case PARITY_ST_PASS:
            break;
        case PARITY_ST_FAIL:
            if (!pR->hasJudgement) finding("a tensor fails against itself", zName);
            break;
        case PARITY_ST_ERROR:
            if (!pR->zMessage || !pR->zMessage[0]) finding("a tensor error has no message", zName);
            break;
        default:
            finding("a tensor does not match itself", zName);
        }
        if (pR->hasStats && pR->stats.nBitDiff != 0)
            finding("a tensor read twice gives different bits", zName);
    }
    if (res.verdict == PARITY_VERDICT_ERROR && !res.zError) {
        int anyError = 0;
        for (k = 0; k < res.nTensor; k++) anyError |= res.aTensor[k].status == PARITY_ST_ERROR;
        if (!anyError) finding("the verdict is error with no error", NULL);
    }
    parity_diff_result_free(&res);
}

int LLVMFuzzerTestOneInput(const uint8_t *aData, size_t nData)
{
    char zPath[4200], zErr[PARITY_ERR_LEN] = "";
    parity_capture *pCap = NULL;
    uint64_t nTotal = 0;
    size_t i, nTensor, nRoot;
    const parity_attr *aRoot;
    if (!zTmpDir[0]) LLVMFuzzerInitialize(NULL, NULL);
    bFinding = 0;
    parity_alloc_reset_failed();
    write_input(aData, nData, zPath, sizeof zPath);
    if (parity_capture_open(zPath, &pCap, zErr, sizeof zErr) != 0) {
        check_message("parity_capture_open", zErr);
        goto done;
    }
    aRoot = parity_capture_root_attrs(pCap, &nRoot);
    check_attrs(aRoot, nRoot);
    nTensor = parity_capture_count(pCap);
    for (i = 0; i < nTensor; i++) {
        uint64_t n = check_tensor(pCap, i);
        nTotal = nTotal + n < nTotal ? UINT64_MAX : nTotal + n;
    }
    if (nTotal <= READER_MAX_ELEMENTS)
        for (i = 0; i < nTensor; i++)
            if (!parity_capture_tensor(pCap, i)->zError) read_tensor(pCap, i);
    parity_capture_close(pCap);
    if (nTotal <= READER_MAX_ELEMENTS) self_diff(zPath);
done:
    /* H5F_CLOSE_STRONG in the reader closes what a file holds; an object still open here
     * is a handle our code lost. */
    if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) > 0) finding("HDF5 objects are left open", NULL);
    /* libhdf5 keeps state between files (free lists, shared file structs, caches) that a
     * corrupt file can leave damaged with no handle open: without this, a crash that an
     * earlier input prepared shows up on a later one and its artifact does not reproduce
     * alone. paritydiff reads each pair in a fresh child, so a fresh library per input is
     * also what the CLI runs. */
    H5close();
    unlink(zPath);
    if (bFinding) harness_nFindings++;
    return 0;
}
