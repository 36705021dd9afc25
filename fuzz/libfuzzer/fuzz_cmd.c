/*
 * fuzz_cmd.c - libFuzzer harness for an external worker: PARITY_FUZZ_TARGET=cmd:COMMAND
 * (the worker protocol is in formats/FORMAT.md). The worker stays up across inputs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

parity_target *harness_open_target(void)
{
    char zErr[512];
    const char *zTarget = getenv("PARITY_FUZZ_TARGET");
    parity_target *pT;
    if (!zTarget || strncmp(zTarget, "cmd:", 4) != 0) {
        fprintf(stderr, "fuzz_cmd: set PARITY_FUZZ_TARGET=cmd:COMMAND\n");
        return NULL;
    }
    pT = parity_target_open(zTarget, 0, 30.0, zErr, sizeof zErr);
    if (!pT) fprintf(stderr, "fuzz_cmd: %s\n", zErr);
    else if (pT->zNotice) fprintf(stderr, "fuzz_cmd: %s\n", pT->zNotice);
    return pT;
}
