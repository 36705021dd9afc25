/*
 * make_seed_corpus.c - writes the libFuzzer seed corpus: a few guided cases per op, each
 * the 96-byte case encoding, named <op>-<n>.case. The output is committed under
 * corpus/libfuzzer/; rerun it when the layouts change:
 *   build/make_seed_corpus corpus/libfuzzer/builtin
 */
#include <stdio.h>
#include <stdlib.h>
#include "fuzz/cases/cases.h"

#define CASES_PER_OP 3

int main(int argc, char **argv)
{
    size_t nLayout, i;
    const parity_layout_info *aInfo = parity_layout_all(&nLayout);
    parity_rng rng;
    int k, nWritten = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    parity_rng_seed(&rng, 20261129);
    for (i = 0; i < nLayout; i++) {
        for (k = 0; k < CASES_PER_OP; k++) {
            parity_case_spec spec;
            uint8_t aBuf[PARITY_CASE_CODEC_SIZE];
            char zPath[4096];
            FILE *f;
            if (parity_spec_generate(&rng, aInfo[i].zOp, PARITY_STRATEGY_GUIDED, &spec) != 0) continue;
            parity_case_encode(&spec, aBuf, sizeof aBuf);
            snprintf(zPath, sizeof zPath, "%s/%s-%d.case", argv[1], aInfo[i].zOp, k);
            f = fopen(zPath, "wb");
            if (!f || fwrite(aBuf, 1, sizeof aBuf, f) != sizeof aBuf || fclose(f) != 0) {
                fprintf(stderr, "make_seed_corpus: cannot write %s\n", zPath);
                return 2;
            }
            nWritten++;
        }
    }
    fprintf(stderr, "make_seed_corpus: %d cases\n", nWritten);
    return 0;
}
