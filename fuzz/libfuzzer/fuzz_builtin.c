/*
 * fuzz_builtin.c - libFuzzer harness for the builtin target: eager kernels against the
 * compiled ones, with the defects named in PARITY_FUZZ_DEFECTS switched on.
 */
#include <stdio.h>
#include "harness.h"

parity_target *harness_open_target(void)
{
    char zErr[512];
    parity_target *pT = parity_target_open("builtin", harness_defects_from_env(), 0, zErr,
                                           sizeof zErr);
    if (!pT) fprintf(stderr, "fuzz_builtin: %s\n", zErr);
    return pT;
}
