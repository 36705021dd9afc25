/*
 * gate_suite.c - a suite into pair specs (diff/GATE.md, "Suites"): a folder whose folders
 * (at any depth) hold eager.h5 and compiled.h5, or a manifest listing pairs.
 *
 * The walk does not follow symbolic links to folders (a link cycle would never end, and a
 * suite is what lies under its folder), goes at most MAX_DEPTH deep, and sorts pairs by id
 * so every run, shard and merge sees the same order.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "diff/gate.h"

#define MAX_DEPTH 32
#define MAX_LINE 8192

typedef struct {
    parity_gate_pair_spec *a;
    size_t n, nAlloc;
} spec_list;

static char *dup_str(const char *z)
{
    return z ? strdup(z) : NULL;
}

static char *join_path(const char *zDir, const char *zName)
{
    size_t n = strlen(zDir) + strlen(zName) + 2;
    char *z = malloc(n);
    if (z) snprintf(z, n, "%s/%s", zDir, zName);
    return z;
}

static int spec_add(spec_list *pL, const char *zId, const char *zEager, const char *zCompiled)
{
    parity_gate_pair_spec *p;
    if (pL->n == pL->nAlloc) {
        size_t nNew = pL->nAlloc ? 2 * pL->nAlloc : 16;
        p = realloc(pL->a, nNew * sizeof *p);
        if (p == NULL) return -1;
        pL->a = p;
        pL->nAlloc = nNew;
    }
    p = &pL->a[pL->n];
    p->zId = dup_str(zId);
    p->zEager = dup_str(zEager);
    p->zCompiled = dup_str(zCompiled);
    if (!p->zId || (zEager && !p->zEager) || (zCompiled && !p->zCompiled)) {
        free(p->zId); free(p->zEager); free(p->zCompiled);
        return -1;
    }
    pL->n++;
    return 0;
}

static int is_file(const char *zPath)
{
    struct stat st;
    return stat(zPath, &st) == 0 && S_ISREG(st.st_mode);
}

static int walk(spec_list *pL, const char *zDir, const char *zRel, int depth, char *zErr,
                size_t nErr)
{
    DIR *pDir;
    struct dirent *pEnt;
    char *zEager = join_path(zDir, "eager.h5"), *zCompiled = join_path(zDir, "compiled.h5");
    int hasE, hasC, rc = 0;

    if (!zEager || !zCompiled) goto oom;
    hasE = is_file(zEager);
    hasC = is_file(zCompiled);
    if ((hasE || hasC) && spec_add(pL, zRel[0] ? zRel : ".", hasE ? zEager : NULL,
                                   hasC ? zCompiled : NULL) != 0)
        goto oom;
    free(zEager);
    free(zCompiled);
    if (depth >= MAX_DEPTH) return 0;
    pDir = opendir(zDir);
    if (pDir == NULL) {
        snprintf(zErr, nErr, "%s: cannot read the folder: %s", zDir, strerror(errno));
        return -1;
    }
    while (rc == 0 && (pEnt = readdir(pDir)) != NULL) {
        struct stat st;
        char *zSub, *zSubRel;
        if (pEnt->d_name[0] == '.') continue;   /* ., .., and hidden folders (.git) */
        zSub = join_path(zDir, pEnt->d_name);
        zSubRel = zRel[0] ? join_path(zRel, pEnt->d_name) : dup_str(pEnt->d_name);
        if (!zSub || !zSubRel) {
            free(zSub); free(zSubRel);
            closedir(pDir);
            snprintf(zErr, nErr, "out of memory reading the suite");
            return -1;
        }
        if (lstat(zSub, &st) == 0 && S_ISDIR(st.st_mode))
            rc = walk(pL, zSub, zSubRel, depth + 1, zErr, nErr);
        free(zSub);
        free(zSubRel);
    }
    closedir(pDir);
    return rc;
oom:
    free(zEager);
    free(zCompiled);
    snprintf(zErr, nErr, "out of memory reading the suite");
    return -1;
}

/* A manifest path, relative to the manifest's folder unless absolute. */
static char *manifest_path(const char *zManifest, const char *zPath)
{
    const char *zSlash = strrchr(zManifest, '/');
    size_t nDir;
    char *z;
    if (zPath[0] == '/' || zSlash == NULL) return dup_str(zPath);
    nDir = (size_t)(zSlash - zManifest);
    z = malloc(nDir + strlen(zPath) + 2);
    if (z) sprintf(z, "%.*s/%s", (int)nDir, zManifest, zPath);
    return z;
}

static int read_manifest(spec_list *pL, const char *zPath, char *zErr, size_t nErr)
{
    FILE *pFile = fopen(zPath, "r");
    char zLine[MAX_LINE];
    int line = 0;
    if (pFile == NULL) {
        snprintf(zErr, nErr, "%s: cannot open the manifest: %s", zPath, strerror(errno));
        return -1;
    }
    while (fgets(zLine, sizeof zLine, pFile)) {
        char *azField[4], *zSave = NULL, *zTok, *zEager, *zCompiled, zDefault[32];
        int nField = 0;
        line++;
        if (strchr(zLine, '\n') == NULL && !feof(pFile)) {
            snprintf(zErr, nErr, "%s:%d: line longer than %d bytes", zPath, line, MAX_LINE - 1);
            fclose(pFile);
            return -1;
        }
        for (zTok = strtok_r(zLine, " \t\r\n", &zSave); zTok && nField < 4;
             zTok = strtok_r(NULL, " \t\r\n", &zSave))
            azField[nField++] = zTok;
        if (nField == 0 || azField[0][0] == '#') continue;
        if (nField < 2 || nField > 3) {
            snprintf(zErr, nErr, "%s:%d: expected 'EAGER COMPILED [ID]', found %d field%s",
                     zPath, line, nField, nField == 1 ? "" : "s");
            fclose(pFile);
            return -1;
        }
        snprintf(zDefault, sizeof zDefault, "line%d", line);
        zEager = manifest_path(zPath, azField[0]);
        zCompiled = manifest_path(zPath, azField[1]);
        if (!zEager || !zCompiled ||
            spec_add(pL, nField == 3 ? azField[2] : zDefault, zEager, zCompiled) != 0) {
            free(zEager); free(zCompiled);
            fclose(pFile);
            snprintf(zErr, nErr, "out of memory reading the manifest");
            return -1;
        }
        free(zEager);
        free(zCompiled);
    }
    if (ferror(pFile)) {
        snprintf(zErr, nErr, "%s: cannot read the manifest: %s", zPath, strerror(errno));
        fclose(pFile);
        return -1;
    }
    fclose(pFile);
    return 0;
}

static int by_id(const void *pA, const void *pB)
{
    return strcmp(((const parity_gate_pair_spec *)pA)->zId,
                  ((const parity_gate_pair_spec *)pB)->zId);
}

int parity_gate_suite_load(const char *zSuite, parity_gate_pair_spec **paSpec, size_t *pnSpec,
                           char *zErr, size_t nErr)
{
    spec_list list = { NULL, 0, 0 };
    struct stat st;
    size_t i;
    int rc;

    *paSpec = NULL;
    *pnSpec = 0;
    if (stat(zSuite, &st) != 0) {
        snprintf(zErr, nErr, "%s: cannot open the suite: %s", zSuite, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) rc = walk(&list, zSuite, "", 0, zErr, nErr);
    else rc = read_manifest(&list, zSuite, zErr, nErr);
    if (rc == 0 && list.n == 0) {
        snprintf(zErr, nErr, "%s: no capture pairs in the suite (folders holding eager.h5 "
                 "and compiled.h5, or a manifest of 'EAGER COMPILED [ID]' lines)", zSuite);
        rc = -1;
    }
    if (rc == 0) {
        qsort(list.a, list.n, sizeof *list.a, by_id);
        for (i = 1; i < list.n; i++)
            if (strcmp(list.a[i - 1].zId, list.a[i].zId) == 0) {
                snprintf(zErr, nErr, "%s: pair id '%s' is used twice", zSuite, list.a[i].zId);
                rc = -1;
                break;
            }
    }
    if (rc != 0) {
        parity_gate_suite_free(list.a, list.n);
        return -1;
    }
    *paSpec = list.a;
    *pnSpec = list.n;
    return 0;
}

void parity_gate_suite_free(parity_gate_pair_spec *aSpec, size_t nSpec)
{
    size_t i;
    for (i = 0; i < nSpec; i++) {
        free(aSpec[i].zId);
        free(aSpec[i].zEager);
        free(aSpec[i].zCompiled);
    }
    free(aSpec);
}
