/*
 * operand_internal.h - how much operand data one semantic judgement may load.
 * References read operands at random (a matmul reads rows and columns), so operands are
 * held in memory whole (parity_operand_load, tolerance/ops.h); OPERAND_BUDGET_ELEMS caps
 * what one judgement may load, and a tensor beyond it keeps the per-dtype tolerance, with
 * a note.
 */
#ifndef PARITY_OPERAND_INTERNAL_H
#define PARITY_OPERAND_INTERNAL_H

#define OPERAND_BUDGET_ELEMS (64ull << 20)   /* 512 MiB of binary64 per judgement */

#endif
