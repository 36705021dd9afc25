/*
 * harness.c - the shared body of the libFuzzer harnesses (see harness.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "formats/alloc.h"
#include "fuzz/findings/findings.h"

int harness_count_findings = 0;
long harness_nFindings = 0;

static parity_target *pTarget;
static const char *azOps[64];
static size_t nOps;
static char *zOpsCopy;

uint32_t harness_defects_from_env(void)
{
    const char *zEnv = getenv("PARITY_FUZZ_DEFECTS");
    char *zCopy, *z, *zSave = NULL;
    uint32_t bits = 0;
    if (!zEnv || !*zEnv) return 0;
    zCopy = strdup(zEnv);
    if (!zCopy) {
        fprintf(stderr, "harness: out of memory\n");
        exit(2);
    }
    for (z = strtok_r(zCopy, ",", &zSave); z; z = strtok_r(NULL, ",", &zSave)) {
        const parity_defect *pD = parity_defect_find(z);
        if (!pD) {
            fprintf(stderr, "harness: unknown defect '%s' in PARITY_FUZZ_DEFECTS\n", z);
            exit(2);
        }
        bits |= pD->bit;
    }
    free(zCopy);
    return bits;
}

/* The ops the mutator draws from: PARITY_FUZZ_OPS, else every op the target runs. */
static void pick_ops(void)
{
    const char *zEnv = getenv("PARITY_FUZZ_OPS");
    size_t i, n;
    if (zEnv && *zEnv) {
        char *z, *zSave = NULL;
        zOpsCopy = strdup(zEnv);
        if (!zOpsCopy) {
            fprintf(stderr, "harness: out of memory\n");
            exit(2);
        }
        for (z = strtok_r(zOpsCopy, ",", &zSave); z && nOps < 64; z = strtok_r(NULL, ",", &zSave))
            if (parity_layout_find(z)) azOps[nOps++] = z;
    } else {
        const parity_layout_info *aInfo = parity_layout_all(&n);
        for (i = 0; i < n && nOps < 64; i++)
            if (pTarget->xSupports(pTarget, aInfo[i].zOp)) azOps[nOps++] = aInfo[i].zOp;
    }
    if (nOps == 0) {
        fprintf(stderr, "harness: no op to fuzz\n");
        exit(2);
    }
}

int LLVMFuzzerInitialize(int *pArgc, char ***pArgv)
{
    (void)pArgc;
    (void)pArgv;
    pTarget = harness_open_target();
    if (!pTarget) exit(2);
    pick_ops();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *aData, size_t nData)
{
    parity_case_spec spec;
    parity_case c;
    parity_oracle_result r;
    char zErr[PARITY_ERR_LEN], zSig[512], zDesc[1024];
    double *aE, *aC;
    if (!pTarget) LLVMFuzzerInitialize(NULL, NULL);
    if (parity_case_decode(aData, nData, &spec) != 0) return 0;
    if (parity_case_expand(&spec, &c, zErr, sizeof zErr) != 0) return 0;
    aE = malloc((c.nOut ? c.nOut : 1) * sizeof *aE);
    aC = malloc((c.nOut ? c.nOut : 1) * sizeof *aC);
    parity_alloc_reset_failed();
    if (aE && aC && parity_oracle_run(pTarget, &c, aE, aC, &r) == 0 &&
        r.cls != PARITY_FINDING_NONE && r.cls != PARITY_FINDING_SKIPPED) {
        fprintf(stderr, "parity finding: %s\n  case: %s\n  %s\n", parity_signature(&c, &r, zSig, sizeof zSig),
                parity_case_describe(&c, zDesc, sizeof zDesc), r.zDetail);
        if (!harness_count_findings) abort();
        harness_nFindings++;
    }
    free(aE);
    free(aC);
    parity_case_free(&c);
    return 0;
}

size_t LLVMFuzzerCustomMutator(uint8_t *aData, size_t nData, size_t nMax, unsigned int seed)
{
    parity_case_spec spec;
    parity_rng rng;
    if (!pTarget) LLVMFuzzerInitialize(NULL, NULL);
    parity_rng_seed(&rng, seed);
    /* An input that is not a case (libFuzzer's empty start, a stray file) becomes a fresh
     * draw; a case gets one of our mutations, or now and then a fresh draw to jump. */
    if (parity_case_decode(aData, nData, &spec) != 0 || parity_rng_one_in(&rng, 8) ||
        parity_spec_mutate(&rng, &spec) != 0) {
        const char *zOp = azOps[parity_rng_below(&rng, nOps)];
        if (parity_spec_generate(&rng, zOp, PARITY_STRATEGY_GUIDED, &spec) != 0) return nData;
    }
    if (pTarget->dtypes) parity_spec_restrict_dtypes(&rng, &spec, pTarget->dtypes);
    return parity_case_encode(&spec, aData, nMax);
}
