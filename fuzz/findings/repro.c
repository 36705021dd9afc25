/*
 * repro.c - storing a finding as a repro folder that paritydiff reads directly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/regular_file.h"
#include "fuzz/findings/findings.h"

int parity_make_dirs(const char *zDir, char *zErr, size_t nErr)
{
    char zPath[4096];
    size_t i, len = strlen(zDir);
    if (len == 0 || len >= sizeof zPath) {
        snprintf(zErr, nErr, "bad output folder '%s'", zDir);
        return -1;
    }
    memcpy(zPath, zDir, len + 1);
    for (i = 1; i <= len; i++) {
        if (zPath[i] == '/' || zPath[i] == '\0') {
            char c = zPath[i];
            zPath[i] = '\0';
            if (mkdir(zPath, 0777) != 0 && errno != EEXIST) {
                snprintf(zErr, nErr, "cannot create %s: %s", zPath, strerror(errno));
                return -1;
            }
            zPath[i] = c;
        }
    }
    return 0;
}

void parity_repro_remove(const char *zDir)
{
    static const char *const azFile[] = { "eager.h5", "compiled.h5", "signature", "origin" };
    char zPath[4400];
    size_t i;
    for (i = 0; i < sizeof azFile / sizeof azFile[0]; i++) {
        snprintf(zPath, sizeof zPath, "%s/%s", zDir, azFile[i]);
        unlink(zPath);
    }
    rmdir(zDir);
}

/* z as one shell word: as it is when every character is safe, else in single quotes with
 * each ' written '\'' (a cmd: target holds spaces; the lines below are meant to be pasted). */
static void put_shell_word(FILE *f, const char *z)
{
    static const char zSafe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                "0123456789_./:=,+-";
    const char *p;
    if (*z && z[strspn(z, zSafe)] == 0) {
        fputs(z, f);
        return;
    }
    fputc('\'', f);
    for (p = z; *p; p++) {
        if (*p == '\'') fputs("'\\''", f);
        else fputc(*p, f);
    }
    fputc('\'', f);
}

static int write_signature_file(const char *zFile, const parity_case *pCase,
                                const parity_oracle_result *pR, const char *zSignature,
                                const char *zTarget, uint32_t defects,
                                const parity_case_identity *pId, const char *zFinal)
{
    FILE *f = fopen(zFile, "w");
    char zDesc[1024];
    size_t i;
    if (!f) return -1;
    fprintf(f, "%s\n", zSignature);
    fprintf(f, "class: %s\n", parity_finding_class_name(pR->cls));
    fprintf(f, "case: %s\n", parity_case_describe(pCase, zDesc, sizeof zDesc));
    fprintf(f, "detail: %s\n", pR->zDetail);
    fprintf(f, "target: %s\n", zTarget);
    if (pId)
        fprintf(f, "compiled by: %s %s, isa %s, implementation %s\n", pId->zCompiler,
                pId->zCompilerVersion, pId->zIsa, pId->zImpl);
    fprintf(f, "defects:");
    for (i = 0; i < parity_defect_count; i++)
        if (defects & parity_defects[i].bit) fprintf(f, " %s", parity_defects[i].zName);
    /* paths and the target quoted, every defect named: both lines run as pasted */
    fputs("\nlook:   paritydiff ", f);
    put_shell_word(f, zFinal);
    fputs("/eager.h5 ", f);
    put_shell_word(f, zFinal);
    fputs("/compiled.h5\nreplay: parityfuzz replay ", f);
    put_shell_word(f, zFinal);
    fputs(" --target ", f);
    put_shell_word(f, zTarget);
    for (i = 0; i < parity_defect_count; i++)
        if (defects & parity_defects[i].bit) fprintf(f, " --defect %s", parity_defects[i].zName);
    fputc('\n', f);
    if (ferror(f)) {
        fclose(f);
        return -1;
    }
    return fclose(f);
}

int parity_repro_write(const char *zOutDir, const parity_case *pCase, const double *aEager,
                       const double *aCompiled, const parity_oracle_result *pR,
                       const char *zSignature, const char *zTarget, uint32_t defects,
                       const parity_case_identity *pId, char *zPath, size_t nPath, char *zErr,
                       size_t nErr)
{
    char zTmp[4200], zFinal[4200], zFile[4300], zHash[17], zFailure[PARITY_ERR_LEN + 160];
    const double *aCompiledOut = pR->compiledStatus == PARITY_RUN_OK ? aCompiled : NULL;
    /* a compiled side that crashed, hung or errored wrote no /out: say why in its file,
     * so paritydiff fails the pair instead of passing what is there */
    if (!aCompiledOut)
        snprintf(zFailure, sizeof zFailure, "%s: %s", parity_finding_class_name(pR->cls),
                 pR->zDetail);

    if (parity_make_dirs(zOutDir, zErr, nErr) != 0) return -1;
    parity_signature_hash(zSignature, zHash);
    snprintf(zFinal, sizeof zFinal, "%s/%s-%s", zOutDir, pCase->spec.zOp, zHash);
    if (access(zFinal, F_OK) == 0) return 1;
    snprintf(zTmp, sizeof zTmp, "%s/.tmp-%s-XXXXXX", zOutDir, zHash);
    if (!mkdtemp(zTmp)) {
        snprintf(zErr, nErr, "cannot create a folder in %s: %s", zOutDir, strerror(errno));
        return -1;
    }
    snprintf(zFile, sizeof zFile, "%s/eager.h5", zTmp);
    if (parity_case_write(pCase, aEager, "eager", zTarget, NULL, NULL, zFile, zErr, nErr) != 0)
        goto fail;
    snprintf(zFile, sizeof zFile, "%s/compiled.h5", zTmp);
    if (parity_case_write(pCase, aCompiledOut, "compiled", zTarget, pId,
                          aCompiledOut ? NULL : zFailure, zFile, zErr, nErr) != 0)
        goto fail;
    snprintf(zFile, sizeof zFile, "%s/signature", zTmp);
    if (write_signature_file(zFile, pCase, pR, zSignature, zTarget, defects, pId, zFinal) != 0) {
        snprintf(zErr, nErr, "cannot write %s: %s", zFile, strerror(errno));
        goto fail;
    }
    if (rename(zTmp, zFinal) != 0) {
        int e = errno;
        parity_repro_remove(zTmp);
        if (e == EEXIST || e == ENOTEMPTY) return 1;
        snprintf(zErr, nErr, "cannot rename %s to %s: %s", zTmp, zFinal, strerror(e));
        return -1;
    }
    snprintf(zPath, nPath, "%s", zFinal);
    return 0;
fail:
    parity_repro_remove(zTmp);
    return -1;
}

int parity_repro_signature(const char *zRepro, char *zSig, size_t nSig, char *zErr, size_t nErr)
{
    char zFile[4200];
    FILE *f;
    size_t len;
    snprintf(zFile, sizeof zFile, "%s/signature", zRepro);
    f = parity_open_regular(zFile, PARITY_SIGNATURE_MAX_BYTES, zErr, nErr);
    if (!f) return -1;
    if (!fgets(zSig, (int)nSig, f)) {
        fclose(f);
        snprintf(zErr, nErr, "%s: empty", zFile);
        return -1;
    }
    fclose(f);
    len = strlen(zSig);
    if (len && zSig[len - 1] == '\n') zSig[len - 1] = '\0';
    return 0;
}
