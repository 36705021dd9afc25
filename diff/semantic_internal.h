/*
 * semantic_internal.h - judging op tensors by their op's reference and error model, and
 * telling local from propagated divergence (engine.c's).
 */
#ifndef PARITY_SEMANTIC_INTERNAL_H
#define PARITY_SEMANTIC_INTERNAL_H

#include "diff/diff.h"
#include "diff/operand_internal.h"

/* For a compared tensor (status pass or fail, stats filled) whose eager "op" is in the
 * registry, the model decides (see semantic.c for the rule): local failure, propagated
 * failure (upstreamFailed: some input of this op failed earlier in execution order), or
 * pass. Overrides status, mismatches, worst and slice, and sets cause. Tensors it cannot
 * judge keep the per-dtype verdict with zModelNote saying why; bad op parameters or operand
 * shapes make the tensor an error. Operands come through pCache (operand_internal.h; NULL:
 * none), the diff run's. */
void parity_semantic_judge(const parity_diff_options *pOpt, parity_operand_cache *pCache,
                           parity_capture *pEagerCap, size_t iE, parity_capture *pCompCap,
                           long iC, int upstreamFailed, parity_tensor_result *pR);

#endif
