/*
 * replay.c - replaying stored repros (see findings.h).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/alloc.h"
#include "formats/process.h"
#include "formats/regular_file.h"
#include "fuzz/findings/findings.h"

const char *parity_replay_outcome_name(parity_replay_outcome o)
{
    switch (o) {
    case PARITY_REPLAY_FIXED: return "fixed";
    case PARITY_REPLAY_SAME: return "same";
    case PARITY_REPLAY_CHANGED: return "changed";
    case PARITY_REPLAY_ERROR: return "error";
    case PARITY_REPLAY_OTHER_ISA: return "other-isa";
    }
    return "unknown";
}

#define PROBE_SECONDS 60

/* The probe child: reads the file, and sends the reader's message when it fails. */
static int probe_child(void *pArg, const parity_process_child *pSelf)
{
    parity_case c;
    char zWhy[PARITY_ERR_LEN] = "";
    if (parity_case_read(pArg, &c, zWhy, sizeof zWhy) != 0) {
        parity_process_send(pSelf, zWhy, strlen(zWhy));   /* the parent says what it can */
        return 2;
    }
    return 0;
}

/* Reads zFile once in a child first: libhdf5 itself can crash or hang on a corrupt file,
 * and a repro folder may hold anything. Returns 0 when the child read it cleanly (the
 * caller then reads it for real), else -1 with zErr: the reader's own message, or what
 * became of the child. */
static int probe_read(const char *zFile, char *zErr, size_t nErr)
{
    parity_process proc;
    parity_process_options opt;
    size_t n = 0;
    double deadline;
    int rc = -1;

    memset(&opt, 0, sizeof opt);
    opt.xMain = probe_child;
    opt.pArg = (void *)zFile;
    opt.out = PARITY_PROCESS_PIPE;
    if (parity_process_start(&proc, &opt, zErr, nErr) != 0) return -1;
    /* the message, up to nErr - 1 bytes, until the child closes the channel */
    deadline = parity_process_now() + PROBE_SECONDS;
    while (n + 1 < nErr && parity_process_read(&proc, zErr + n, 1, deadline) == PARITY_PROCESS_OK)
        n++;
    zErr[n] = '\0';
    switch (parity_process_wait(&proc, 0, PROBE_SECONDS)) {
    case PARITY_PROCESS_EXITED:
        if (proc.code == 0) rc = 0;
        else if (!zErr[0]) snprintf(zErr, nErr, "%.300s: cannot be read", zFile);
        break;
    case PARITY_PROCESS_TIMED_OUT:
    case PARITY_PROCESS_STALLED:
        snprintf(zErr, nErr, "%.300s: reading it took over %d s (a corrupt file?)", zFile,
                 PROBE_SECONDS);
        break;
    default:
        snprintf(zErr, nErr, "%.300s: reading it crashed libhdf5 (signal %d): a corrupt file",
                 zFile, proc.sig);
        break;
    }
    parity_process_close(&proc);
    return rc;
}

/* The ISA a repro's signature file records ("compiled by: ..., isa X, ..."), into zIsa;
 * "" when it records none. */
static void recorded_isa(const char *zRepro, char *zIsa, size_t nIsa)
{
    char zFile[4400], zLine[512];
    FILE *f;
    zIsa[0] = '\0';
    snprintf(zFile, sizeof zFile, "%s/signature", zRepro);
    f = parity_open_regular(zFile, PARITY_SIGNATURE_MAX_BYTES, zLine, sizeof zLine);
    if (!f) return;   /* parity_repro_signature, read first, has said why */
    while (fgets(zLine, sizeof zLine, f)) {
        const char *z = strstr(zLine, ", isa ");
        size_t n;
        if (strncmp(zLine, "compiled by:", 12) != 0 || !z) continue;
        z += 6;
        n = strcspn(z, ",\n");
        snprintf(zIsa, nIsa, "%.*s", (int)n, z);
        break;
    }
    fclose(f);
}

void parity_replay_one(parity_target *pT, const char *zRepro, parity_replay_result *pRes)
{
    char zFile[4400];
    parity_case c;
    parity_oracle_result r;
    double *aE = NULL, *aC = NULL;

    memset(pRes, 0, sizeof *pRes);
    pRes->outcome = PARITY_REPLAY_ERROR;
    parity_alloc_reset_failed();          /* the oracle's out-of-memory test is this one's */
    if (parity_repro_signature(zRepro, pRes->zStored, sizeof pRes->zStored, pRes->zDetail,
                               sizeof pRes->zDetail) != 0)
        return;
    snprintf(zFile, sizeof zFile, "%s/eager.h5", zRepro);
    if (probe_read(zFile, pRes->zDetail, sizeof pRes->zDetail) != 0) return;
    if (parity_case_read(zFile, &c, pRes->zDetail, sizeof pRes->zDetail) != 0) return;
    if (pT->xIdentity) {
        parity_case_identity id;
        char zIsa[64];
        recorded_isa(zRepro, zIsa, sizeof zIsa);
        if (zIsa[0] && pT->xIdentity(pT, &c, &id) == 0 && strcmp(zIsa, id.zIsa) != 0) {
            pRes->outcome = PARITY_REPLAY_OTHER_ISA;
            snprintf(pRes->zDetail, sizeof pRes->zDetail, "recorded on ISA %s, this target "
                     "runs %s (cap it with --target onednn:%s on a CPU that has it)", zIsa,
                     id.zIsa, zIsa);
            goto done;
        }
    }
    aE = parity_malloc((c.nOut ? c.nOut : 1) * sizeof *aE);
    aC = parity_malloc((c.nOut ? c.nOut : 1) * sizeof *aC);
    if (!aE || !aC) {
        snprintf(pRes->zDetail, sizeof pRes->zDetail, "out of memory");
        goto done;
    }
    if (parity_oracle_run(pT, &c, aE, aC, &r) != 0) {
        snprintf(pRes->zDetail, sizeof pRes->zDetail, "%s", r.zDetail);
        goto done;
    }
    if (r.cls == PARITY_FINDING_SKIPPED) {
        snprintf(pRes->zDetail, sizeof pRes->zDetail, "target cannot run it: %s", r.zDetail);
        goto done;
    }
    if (r.cls == PARITY_FINDING_NONE) {
        pRes->outcome = PARITY_REPLAY_FIXED;
        snprintf(pRes->zDetail, sizeof pRes->zDetail, "%s",
                 r.bitIdentical ? "compiled equals eager bit for bit" : "within the error bound");
        goto done;
    }
    parity_signature(&c, &r, pRes->zNow, sizeof pRes->zNow);
    pRes->outcome = strcmp(pRes->zNow, pRes->zStored) == 0 ? PARITY_REPLAY_SAME
                                                           : PARITY_REPLAY_CHANGED;
    snprintf(pRes->zDetail, sizeof pRes->zDetail, "%s", r.zDetail);
done:
    free(aE);
    free(aC);
    parity_case_free(&c);
}

static int has_repro(const char *zDir)
{
    char zFile[4400];
    snprintf(zFile, sizeof zFile, "%s/eager.h5", zDir);
    return access(zFile, F_OK) == 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A growing list of repro folders. */
typedef struct {
    char **az;
    long n;
} repro_list;

static int list_add(repro_list *pL, const char *zDir)
{
    char **azNew = parity_realloc(pL->az, (size_t)(pL->n + 1) * sizeof *pL->az);
    if (!azNew) return -1;
    pL->az = azNew;
    if (!(pL->az[pL->n] = parity_strdup(zDir))) return -1;
    pL->n++;
    return 0;
}

/* Appends the repros under zDir, descending into folders without eager.h5 down to depth
 * levels (a campaign's --out holds family/repro). Symbolic links are not followed: a
 * loop would never end, and a link out of the folder is not the user's campaign. */
static int list_under(repro_list *pL, const char *zDir, int depth, char *zErr, size_t nErr)
{
    DIR *pDir = opendir(zDir);
    struct dirent *pEnt;
    int rc = 0;
    if (!pDir) {
        snprintf(zErr, nErr, "%s: %s", zDir, strerror(errno));
        return -1;
    }
    while (rc == 0 && (pEnt = readdir(pDir)) != NULL) {
        char zSub[4200];
        struct stat st;
        if (pEnt->d_name[0] == '.') continue;     /* ".", "..", ".tmp-*" of a live campaign */
        snprintf(zSub, sizeof zSub, "%s/%s", zDir, pEnt->d_name);
        if (lstat(zSub, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (has_repro(zSub)) {
            if (list_add(pL, zSub) != 0) {
                /* a list that silently lost a repro would replay as a pass */
                snprintf(zErr, nErr, "out of memory");
                rc = -1;
            }
        } else if (depth > 1) {
            rc = list_under(pL, zSub, depth - 1, zErr, nErr);
        }
    }
    closedir(pDir);
    return rc;
}

long parity_replay_list(const char *zDir, char ***pazRepro, char *zErr, size_t nErr)
{
    repro_list l = { NULL, 0 };
    *pazRepro = NULL;
    if (has_repro(zDir)) {
        if (list_add(&l, zDir) != 0) {
            snprintf(zErr, nErr, "out of memory");
            return -1;
        }
    } else if (list_under(&l, zDir, PARITY_REPLAY_LIST_DEPTH, zErr, nErr) != 0) {
        parity_replay_list_free(l.az, l.n);
        return -1;
    }
    if (l.n > 1) qsort(l.az, (size_t)l.n, sizeof *l.az, cmp_str);
    *pazRepro = l.az;
    return l.n;
}

void parity_replay_list_free(char **azRepro, long n)
{
    long i;
    for (i = 0; i < n; i++) free(azRepro[i]);
    free(azRepro);
}
