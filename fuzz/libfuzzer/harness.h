/*
 * harness.h - what the libFuzzer harnesses share: one target per process, the case
 * encoding as the fuzzer's input, our mutators as its custom mutator, the oracle as its
 * crash condition.
 *
 * A harness file defines harness_open_target() and includes nothing else; harness.c does
 * the rest. An input that does not decode, or whose case does not lay out, is uninteresting
 * (return 0). A finding of the oracle is reported on stderr with its signature and ends
 * the process with abort(), which is how libFuzzer, ClusterFuzz and OSS-Fuzz learn of it;
 * the crashing input is the 96-byte case, which parityfuzz-replay-input turns back into a
 * case (fuzz/FUZZ.md).
 *
 * fuzz_reader.c is the exception: its input is an HDF5 file, not a case, and it has no
 * target; it takes from here only the entry points and the replay driver's flags below,
 * and defines them itself.
 *
 * Environment: PARITY_FUZZ_DEFECTS (comma-separated defect names for the builtin target),
 * PARITY_FUZZ_TARGET (cmd:COMMAND for the cmd harness), PARITY_FUZZ_ONEDNN_ISA (the JIT
 * cap of the onednn harness), PARITY_FUZZ_OPS (restrict the ops the mutator draws).
 */
#ifndef PARITY_HARNESS_H
#define PARITY_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include "fuzz/targets/targets.h"

/* The target this harness fuzzes; called once. NULL (with a message on stderr) aborts. */
parity_target *harness_open_target(void);

int LLVMFuzzerInitialize(int *pArgc, char ***pArgv);
int LLVMFuzzerTestOneInput(const uint8_t *aData, size_t nData);
size_t LLVMFuzzerCustomMutator(uint8_t *aData, size_t nData, size_t nMax, unsigned int seed);

/* The replay driver's --expect-finding: count findings instead of aborting. */
extern int harness_count_findings;
extern long harness_nFindings;

/* Parses PARITY_FUZZ_DEFECTS; exits with a message on an unknown name. */
uint32_t harness_defects_from_env(void);

#endif
