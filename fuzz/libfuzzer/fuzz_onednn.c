/*
 * fuzz_onednn.c - libFuzzer harness for the onednn target: oneDNN's JIT primitives against
 * the builtin eager kernels. PARITY_FUZZ_ONEDNN_ISA caps the JIT (as "onednn:ISA" does for
 * parityfuzz); the mutator draws only the dtypes the target runs. libFuzzer's -fork and
 * -jobs start fresh processes, so no process forks after its first primitive.
 */
#include <stdio.h>
#include <stdlib.h>
#include "harness.h"

parity_target *harness_open_target(void)
{
    char zErr[512], zSpec[128];
    const char *zIsa = getenv("PARITY_FUZZ_ONEDNN_ISA");
    parity_target *pT;
    snprintf(zSpec, sizeof zSpec, "onednn%s%s", zIsa && *zIsa ? ":" : "", zIsa ? zIsa : "");
    pT = parity_target_open(zSpec, 0, 0, zErr, sizeof zErr);
    if (!pT) fprintf(stderr, "fuzz_onednn: %s\n", zErr);
    return pT;
}
