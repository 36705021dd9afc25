/*
 * replay_driver.c - runs a harness's LLVMFuzzerTestOneInput over stored inputs without
 * libFuzzer, so gcc builds (and ctest) replay the corpus. Arguments are files or folders
 * (every regular file in a folder, in name order). Exit 0 when every input ran; a finding
 * aborts as it would under libFuzzer; an unreadable argument exits 2. With
 * --expect-finding first, findings are counted instead and the exit is 0 only when every
 * input is one (a stored crash input that still crashes), else 1.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "formats/regular_file.h"
#include "harness.h"

/* Reads the whole file: a case is 96 bytes, a capture for the reader harness a few KiB. */
static int run_file(const char *zPath)
{
    uint8_t *aBuf = NULL;
    size_t n = 0, nAlloc = 0;
    char zErr[4200];
    FILE *f = parity_open_regular(zPath, 0, zErr, sizeof zErr);   /* a FIFO would block */
    if (!f) {
        fprintf(stderr, "replay: %s\n", zErr);
        return -1;
    }
    for (;;) {
        if (n == nAlloc) {
            uint8_t *aNew = realloc(aBuf, nAlloc ? 2 * nAlloc : 4096);
            if (!aNew) {
                fprintf(stderr, "replay: out of memory reading %s\n", zPath);
                free(aBuf);
                fclose(f);
                return -1;
            }
            aBuf = aNew;
            nAlloc = nAlloc ? 2 * nAlloc : 4096;
        }
        {
            size_t nGot = fread(aBuf + n, 1, nAlloc - n, f);
            n += nGot;
            if (nGot == 0) break;
        }
    }
    if (ferror(f)) {
        fprintf(stderr, "replay: cannot read %s\n", zPath);
        free(aBuf);
        fclose(f);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(aBuf, n);
    free(aBuf);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *zDir, long *pnRun)
{
    DIR *pDir = opendir(zDir);
    struct dirent *pEnt;
    char **az = NULL;
    size_t n = 0, i;
    int rc = 0;
    if (!pDir) {
        fprintf(stderr, "replay: cannot open %s\n", zDir);
        return -1;
    }
    while ((pEnt = readdir(pDir)) != NULL) {
        char zPath[4096];
        struct stat st;
        if (pEnt->d_name[0] == '.') continue;
        snprintf(zPath, sizeof zPath, "%s/%s", zDir, pEnt->d_name);
        if (stat(zPath, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        {
            char **azNew = realloc(az, (n + 1) * sizeof *az);
            if (!azNew || !(azNew[n] = strdup(zPath))) {
                fprintf(stderr, "replay: out of memory\n");
                az = azNew ? azNew : az;
                rc = -1;
                break;
            }
            az = azNew;
            n++;
        }
    }
    closedir(pDir);
    if (n > 1) qsort(az, n, sizeof *az, cmp_str);
    for (i = 0; i < n; i++) {
        if (run_file(az[i]) != 0) rc = -1;
        else (*pnRun)++;
        free(az[i]);
    }
    free(az);
    return rc;
}

int main(int argc, char **argv)
{
    long nRun = 0;
    int i, rc = 0, first = 1;
    if (argc > 1 && strcmp(argv[1], "--expect-finding") == 0) {
        harness_count_findings = 1;
        first = 2;
    }
    if (argc <= first) {
        fprintf(stderr, "usage: %s [--expect-finding] FILE|DIR...\n", argv[0]);
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    for (i = first; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: cannot open %s\n", argv[i]);
            rc = 2;
        } else if (S_ISDIR(st.st_mode)) {
            if (run_dir(argv[i], &nRun) != 0) rc = 2;
        } else if (run_file(argv[i]) != 0) {
            rc = 2;
        } else {
            nRun++;
        }
    }
    fprintf(stderr, "replay: %ld inputs ran\n", nRun);
    if (nRun == 0 && rc == 0) rc = 2;
    if (rc == 0 && harness_count_findings && harness_nFindings != nRun) {
        fprintf(stderr, "replay: %ld of %ld inputs are findings, all expected\n",
                harness_nFindings, nRun);
        rc = 1;
    }
    return rc;
}
