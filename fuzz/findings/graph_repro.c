/*
 * graph_repro.c - a graph case's repro folder: the diffable pair of captures
 * (graph_io.c writes them): eager.h5 with the inputs, every intermediate (what a capture
 * of eager execution records) and /out; compiled.h5 with the inputs and /out only, as a
 * compiler that fused the region leaves it. paritydiff judges the pair's /out as the
 * output of that fused region (diff/region_internal.h).
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "fuzz/findings/findings.h"
#include "fuzz/cases/graph_cases.h"

int parity_graph_repro_write(const char *zDir, const parity_graph_case *pG,
                             double *const *aaEager, const double *aCompiled,
                             const char *zTarget, char *zErr, size_t nErr)
{
    char zFile[4200];
    if (mkdir(zDir, 0777) != 0) {
        struct stat st;
        if (stat(zDir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(zErr, nErr, "%s: cannot create the repro folder", zDir);
            return -1;
        }
    }
    snprintf(zFile, sizeof zFile, "%s/eager.h5", zDir);
    if (parity_graph_case_write(pG, aaEager, NULL, "eager", zTarget, zFile, zErr, nErr) != 0)
        return -1;
    snprintf(zFile, sizeof zFile, "%s/compiled.h5", zDir);
    return parity_graph_case_write(pG, NULL, aCompiled, "compiled", zTarget, zFile, zErr, nErr);
}
