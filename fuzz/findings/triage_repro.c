/*
 * triage_repro.c - the root cause of a stored repro (`parityfuzz triage DIR`), from its
 * tensors alone: no target runs, so the findings of a oneDNN or a worker campaign triage on
 * any machine. The stored outputs are judged again by the registry through the replay
 * target (targets/stored.c); crash, hang and error repros, which hold no compiled output,
 * take their class from the signature file.
 *
 * The reading runs in a supervised child (libhdf5 may crash or hang on a damaged file; a
 * repro folder holds files from anywhere), which hands its verdict back in shared memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/alloc.h"
#include "formats/process.h"
#include "formats/regular_file.h"
#include "fuzz/findings/findings.h"

#define TRIAGE_SECONDS 120

typedef struct {
    int rc;                       /* 0 triaged, 1 no finding now, 2 cannot be read */
    int cls;
    parity_root_key cause;
    uint64_t nElems;
    char zOp[PARITY_CASE_OP_LEN];
    char zSignature[2048];
    char zWhy[PARITY_ERR_LEN];
} triage_state;

/* The signature (first line) and the class ("class: " line) of a repro's signature file. */
static int read_signature(const char *zRepro, triage_state *pSt)
{
    char zFile[4200], zLine[2048];
    FILE *f;
    snprintf(zFile, sizeof zFile, "%s/signature", zRepro);
    f = parity_open_regular(zFile, PARITY_SIGNATURE_MAX_BYTES, pSt->zWhy, sizeof pSt->zWhy);
    if (!f) return -1;
    pSt->cls = -1;
    if (fgets(pSt->zSignature, sizeof pSt->zSignature, f))
        pSt->zSignature[strcspn(pSt->zSignature, "\n")] = '\0';
    while (fgets(zLine, sizeof zLine, f)) {
        int c;
        if (strncmp(zLine, "class: ", 7) != 0) continue;
        zLine[strcspn(zLine, "\n")] = '\0';
        for (c = PARITY_FINDING_NONE; c <= PARITY_FINDING_SKIPPED; c++)
            if (strcmp(zLine + 7, parity_finding_class_name((parity_finding_class)c)) == 0)
                pSt->cls = c;
    }
    fclose(f);
    if (!pSt->zSignature[0] || pSt->cls < 0) {
        snprintf(pSt->zWhy, sizeof pSt->zWhy, "%.400s: no signature or class line", zFile);
        return -1;
    }
    return 0;
}

static int triage_child(void *pArg, const parity_process_child *pSelf)
{
    const char *zRepro = pArg;
    triage_state *pSt = pSelf->pState;
    char zFile[4200];
    parity_case c;
    parity_oracle_result r;
    parity_stored_crop served;
    parity_target *pT;
    double *aE = NULL, *aC = NULL;
    size_t i;

    pSt->rc = 2;
    if (read_signature(zRepro, pSt) != 0) return 0;
    snprintf(zFile, sizeof zFile, "%s/eager.h5", zRepro);
    if (parity_case_read(zFile, &c, pSt->zWhy, sizeof pSt->zWhy) != 0) return 0;
    snprintf(pSt->zOp, sizeof pSt->zOp, "%s", c.spec.zOp);
    for (i = 0; i < c.nIn; i++) pSt->nElems += c.aIn[i].nElem;
    memset(&r, 0, sizeof r);
    if (pSt->cls != PARITY_FINDING_DIVERGES) {
        /* no compiled output: the class is the symptom */
        r.cls = (parity_finding_class)pSt->cls;
        parity_triage_cause(&c, &r, NULL, &pSt->cause);
        pSt->rc = 0;
        parity_case_free(&c);
        return 0;
    }
    aE = parity_malloc((c.nOut ? c.nOut : 1) * sizeof *aE);
    aC = parity_malloc((c.nOut ? c.nOut : 1) * sizeof *aC);
    if (!aE || !aC || parity_case_read_output(&c, zFile, aE, pSt->zWhy, sizeof pSt->zWhy) != 0)
        goto done;
    snprintf(zFile, sizeof zFile, "%s/compiled.h5", zRepro);
    if (parity_case_read_output(&c, zFile, aC, pSt->zWhy, sizeof pSt->zWhy) != 0) goto done;
    if (!(pT = parity_target_stored_open(pSt->zWhy, sizeof pSt->zWhy))) goto done;
    memset(&served, 0, sizeof served);
    served.c = c;                 /* borrowed: the target reads nOut and the outputs */
    served.aEager = aE;
    served.aCompiled = aC;
    parity_target_stored_serve(pT, &served);
    if (parity_oracle_run(pT, &c, aE, aC, &r) != 0) {
        snprintf(pSt->zWhy, sizeof pSt->zWhy, "the judge failed: %.480s", r.zDetail);
    } else if (r.cls != PARITY_FINDING_DIVERGES) {
        snprintf(pSt->zWhy, sizeof pSt->zWhy, "its stored outputs no longer diverge (%s)",
                 r.bitIdentical ? "bit-identical" : "within the bound");
        pSt->rc = 1;
    } else {
        parity_triage_cause(&c, &r, aC, &pSt->cause);
        pSt->rc = 0;
    }
    parity_target_close(pT);
done:
    free(aE);
    free(aC);
    parity_case_free(&c);
    return 0;
}

int parity_triage_supervised(int (*xMain)(void *, const parity_process_child *), void *pArg,
                             void *pState, size_t nState, char *zErr, size_t nErr)
{
    parity_process proc;
    parity_process_options opt;
    int rc = -1;

    memset(&opt, 0, sizeof opt);
    opt.xMain = xMain;
    opt.pArg = pArg;
    opt.nState = nState;
    opt.in = PARITY_PROCESS_NULL;
    if (parity_process_start(&proc, &opt, zErr, nErr) != 0) return -1;
    switch (parity_process_wait(&proc, 0, TRIAGE_SECONDS)) {
    case PARITY_PROCESS_EXITED:
        memcpy(pState, parity_process_state(&proc), nState);
        rc = 0;
        break;
    case PARITY_PROCESS_TIMED_OUT:
    case PARITY_PROCESS_STALLED:
        snprintf(zErr, nErr, "reading it took over %d s (a damaged file?)", TRIAGE_SECONDS);
        break;
    default:
        snprintf(zErr, nErr, "reading it crashed libhdf5 (signal %d): a damaged file", proc.sig);
        break;
    }
    parity_process_close(&proc);
    return rc;
}

int parity_triage_repro(const char *zRepro, parity_finding *pF, char *zErr, size_t nErr)
{
    triage_state st;

    memset(pF, 0, sizeof *pF);
    if (parity_triage_supervised(triage_child, (void *)zRepro, &st, sizeof st, zErr, nErr) != 0)
        return -1;
    st.zWhy[sizeof st.zWhy - 1] = st.zSignature[sizeof st.zSignature - 1] = '\0';
    st.zOp[sizeof st.zOp - 1] = '\0';
    if (st.rc != 0) {
        snprintf(zErr, nErr, "%s", st.zWhy[0] ? st.zWhy : "cannot be read");
        return st.rc == 1 ? 1 : -1;
    }
    pF->zSignature = parity_strdup(st.zSignature);
    pF->zOp = parity_strdup(st.zOp);
    pF->zRepro = parity_strdup(zRepro);
    pF->zDetail = parity_strdup("");
    pF->cls = (parity_finding_class)st.cls;
    pF->hasCause = 1;
    pF->cause = st.cause;
    pF->nElems = st.nElems;
    if (pF->zSignature && pF->zOp && pF->zRepro && pF->zDetail) return 0;
    snprintf(zErr, nErr, "out of memory");
    return -1;
}

void parity_finding_free(parity_finding *pF)
{
    free(pF->zSignature);
    free(pF->zOp);
    free(pF->zRepro);
    free(pF->zDetail);
    memset(pF, 0, sizeof *pF);
}
