/*
 * repro_stored.c - storing the minimized crop of a captured op as a repro folder that
 * paritydiff fails: the investigation's confirmation of a local cause (INVESTIGATE.md).
 *
 * Each side's file holds that side's inputs of the op and its output, under the names the
 * source capture gave them, the output with every attribute of the source tensor (op,
 * inputs, parameters, acc_dtype, ...), and the side's identity (root strings: compiler,
 * compiler_version, config_hash, ...; telemetry and run_failure stay behind: they describe
 * the whole run, not this op). Root attributes repro_eager_source, repro_compiled_source,
 * repro_tensor, repro_offset and repro_source_shape say where in the source the crop sits
 * (FORMAT.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fuzz/findings/findings.h"

#define W_CHECK(expr) do { if ((expr) != 0) goto write_fail; } while (0)

/* Root attributes of the source kept in the repro: identity strings and the format. */
static int keep_root_attr(const parity_attr *pA)
{
    if (strcmp(pA->zName, "parity_format") == 0) return pA->kind == PARITY_ATTR_INT;
    if (strcmp(pA->zName, "run_failure") == 0 || strcmp(pA->zName, "recompile_reasons") == 0 ||
        strncmp(pA->zName, "repro_", 6) == 0)
        return 0;
    return pA->kind == PARITY_ATTR_STRING && !pA->isArray;
}

static int write_side(const char *zFile, const parity_stored_op *pS,
                      const parity_stored_minimized *pMin, int isCompiled,
                      const char *zEagerSrc, const char *zCompiledSrc, char *zErr, size_t nErr)
{
    parity_capture *pCap = isCompiled ? pS->pCompiledCap : pS->pEagerCap;
    const parity_tensor_info *pT =
        parity_capture_tensor(pCap, (size_t)(isCompiled ? pS->iCompiled : pS->iEager));
    const parity_stored_crop *pCrop = &pMin->crop;
    const parity_attr *aRoot;
    parity_writer *pW = NULL;
    int64_t aOffset[PARITY_MAX_RANK], aShape[PARITY_MAX_RANK];
    size_t nRoot, i;
    int d, k, oom = 0;

    if (parity_writer_open(zFile, &pW, zErr, nErr) != 0) return -1;
    aRoot = parity_capture_root_attrs(pCap, &nRoot);
    for (i = 0; i < nRoot; i++)
        if (keep_root_attr(&aRoot[i]))
            W_CHECK(parity_case_write_attr(pW, "/", aRoot[i].zName, &aRoot[i]));
    for (d = 0; d < pS->whole.outRank; d++) {
        aOffset[d] = 0;
        aShape[d] = (int64_t)pS->whole.aOutDim[d];
    }
    for (k = 0; k < pS->nAxis; k++) aOffset[pS->aAxis[k].outAxis] = (int64_t)pCrop->aLo[k];
    /* both sources on both sides: equal root strings are no identity difference */
    W_CHECK(parity_writer_attr_string(pW, "/", "repro_eager_source", zEagerSrc));
    W_CHECK(parity_writer_attr_string(pW, "/", "repro_compiled_source", zCompiledSrc));
    W_CHECK(parity_writer_attr_string(pW, "/", "repro_tensor", pT->zPath));
    W_CHECK(parity_writer_attr_ints(pW, "/", "repro_offset", aOffset, (size_t)pS->whole.outRank));
    W_CHECK(parity_writer_attr_ints(pW, "/", "repro_source_shape", aShape,
                                    (size_t)pS->whole.outRank));
    for (i = 0; i < pCrop->c.nIn; i++) {
        /* eager's own input where it has one; else the compiled one, which is what the
         * compiled kernel got and what eager's reference would be judged on too */
        const parity_operand *pIn = !isCompiled && pCrop->aEagerIn[i].aValue
                                        ? &pCrop->aEagerIn[i] : &pCrop->c.aIn[i];
        if (parity_capture_find(pCap, pS->whole.aIn[i].zName) < 0 && !isCompiled) continue;
        W_CHECK(parity_case_write_values(pW, pS->whole.aIn[i].zName, pIn->dtype, pIn->rank,
                                         pIn->aDim, pIn->aValue, pIn->nElem, &oom));
    }
    W_CHECK(parity_case_write_values(pW, pT->zPath, pT->dtype, pCrop->c.outRank,
                                     pCrop->c.aOutDim,
                                     isCompiled ? pCrop->aCompiled : pCrop->aEager,
                                     pCrop->c.nOut, &oom));
    for (i = 0; i < pT->nAttr; i++) {
        if (pT->aAttr[i].kind == PARITY_ATTR_OTHER) continue;   /* nothing we can read */
        if (parity_case_write_attr(pW, pT->zPath, pT->aAttr[i].zName, &pT->aAttr[i]) != 0) {
            snprintf(zErr, nErr, "%s: attribute %s of %s cannot be copied%s%s", zFile,
                     pT->aAttr[i].zName, pT->zPath, parity_writer_error(pW)[0] ? ": " : "",
                     parity_writer_error(pW));
            parity_writer_abort(pW);
            return -1;
        }
    }
    return parity_writer_close(pW, zErr, nErr);
write_fail:
    snprintf(zErr, nErr, "%s: %s", zFile, oom ? "out of memory" : parity_writer_error(pW));
    parity_writer_abort(pW);
    return -1;
}

static void put_shape(FILE *f, int rank, const uint64_t *aDim)
{
    int d;
    fputc('[', f);
    for (d = 0; d < rank; d++) fprintf(f, "%s%llu", d ? ", " : "", (unsigned long long)aDim[d]);
    fputc(']', f);
}

static int write_origin(const char *zFile, const char *zFinal, const parity_stored_op *pS,
                        const parity_stored_minimized *pMin, const char *zEagerSrc,
                        const char *zCompiledSrc)
{
    const parity_tensor_info *pT = parity_capture_tensor(pS->pCompiledCap, (size_t)pS->iCompiled);
    FILE *f = fopen(zFile, "w");
    int k;
    if (!f) return -1;
    fprintf(f, "repro of %s (%s), the local cause of\n  eager:    %s\n  compiled: %s\n",
            pT->zPath, pS->whole.spec.zOp, zEagerSrc, zCompiledSrc);
    fputs("shape: ", f);
    put_shape(f, pMin->crop.c.outRank, pMin->crop.c.aOutDim);
    fputs(" of ", f);
    put_shape(f, pS->whole.outRank, pS->whole.aOutDim);
    fputs(" (cropped:", f);
    for (k = 0; k < pS->nAxis; k++)
        fprintf(f, " dim %d [%llu:%llu]", pS->aAxis[k].outAxis,
                (unsigned long long)pMin->crop.aLo[k],
                (unsigned long long)(pMin->crop.aLo[k] + pMin->crop.aLen[k]));
    if (pS->nAxis == 0) fputs(" none: no dim of this op can be cut without changing it", f);
    fprintf(f, ")\nwhole op: %s\nrepro:    %s\n", pMin->first.zDetail, pMin->result.zDetail);
    fprintf(f, "minimized in %llu replays%s; the crop's reference equals the whole op's at "
            "every element\n", (unsigned long long)pMin->nExecs,
            pMin->minimal ? " (every window 1-minimal)" : " (budget spent: not minimal)");
    fprintf(f, "look: paritydiff %s/eager.h5 %s/compiled.h5\n", zFinal, zFinal);
    if (ferror(f)) {
        fclose(f);
        return -1;
    }
    return fclose(f);
}

/* Where zDir's parent is, for the temporary folder beside it. */
static void parent_of(const char *zDir, char *zParent, size_t n)
{
    const char *zSlash = strrchr(zDir, '/');
    if (!zSlash) snprintf(zParent, n, ".");
    else if (zSlash == zDir) snprintf(zParent, n, "/");
    else snprintf(zParent, n, "%.*s", (int)(zSlash - zDir), zDir);
}

int parity_repro_write_stored(const char *zDir, const parity_stored_op *pS,
                              const parity_stored_minimized *pMin, const char *zEagerSrc,
                              const char *zCompiledSrc, char *zErr, size_t nErr)
{
    char zFinal[4000], zParent[4000], zTmp[4100], zOld[4100], zFile[4200];
    size_t len = strlen(zDir);
    mode_t mask;
    int hadOld = 0;
    while (len > 1 && zDir[len - 1] == '/') len--;
    if (len == 0 || len >= sizeof zFinal) {
        snprintf(zErr, nErr, "bad repro folder '%s'", zDir);
        return -1;
    }
    snprintf(zFinal, sizeof zFinal, "%.*s", (int)len, zDir);
    parent_of(zFinal, zParent, sizeof zParent);
    if (parity_make_dirs(zParent, zErr, nErr) != 0) return -1;
    snprintf(zTmp, sizeof zTmp, "%s/.tmp-repro-XXXXXX", zParent);
    if (!mkdtemp(zTmp)) {
        snprintf(zErr, nErr, "cannot create a folder in %s: %s", zParent, strerror(errno));
        return -1;
    }
    mask = umask(0);           /* mkdtemp makes it 0700: the repro is as shareable as mkdir's */
    umask(mask);
    chmod(zTmp, 0777 & ~mask);
    snprintf(zFile, sizeof zFile, "%s/eager.h5", zTmp);
    if (write_side(zFile, pS, pMin, 0, zEagerSrc, zCompiledSrc, zErr, nErr) != 0) goto fail;
    snprintf(zFile, sizeof zFile, "%s/compiled.h5", zTmp);
    if (write_side(zFile, pS, pMin, 1, zEagerSrc, zCompiledSrc, zErr, nErr) != 0) goto fail;
    snprintf(zFile, sizeof zFile, "%s/origin", zTmp);
    if (write_origin(zFile, zFinal, pS, pMin, zEagerSrc, zCompiledSrc) != 0) {
        snprintf(zErr, nErr, "cannot write %s: %s", zFile, strerror(errno));
        goto fail;
    }
    if (access(zFinal, F_OK) == 0) {
        /* an earlier repro (a rerun of the investigation) is moved aside, then removed; an
         * empty folder is taken over; anything else is the user's and stays */
        snprintf(zFile, sizeof zFile, "%s/eager.h5", zFinal);
        if (access(zFile, F_OK) == 0) {
            snprintf(zOld, sizeof zOld, "%s.old-%ld", zFinal, (long)getpid());
            if (rename(zFinal, zOld) != 0) {
                snprintf(zErr, nErr, "cannot replace %s: %s", zFinal, strerror(errno));
                goto fail;
            }
            hadOld = 1;
        } else if (rmdir(zFinal) != 0) {
            snprintf(zErr, nErr, "%s exists and is not a repro folder", zFinal);
            goto fail;
        }
    }
    if (rename(zTmp, zFinal) != 0) {
        snprintf(zErr, nErr, "cannot rename %s to %s: %s", zTmp, zFinal, strerror(errno));
        if (hadOld) rename(zOld, zFinal);
        goto fail;
    }
    if (hadOld) parity_repro_remove(zOld);
    return 0;
fail:
    parity_repro_remove(zTmp);
    return -1;
}
