/*
 * operand_internal.h - how much operand data one semantic judgement may load.
 * References read operands at random (a matmul reads rows and columns), so operands are
 * held in memory whole (parity_operand_load, tolerance/ops.h); OPERAND_BUDGET_ELEMS caps
 * what one judgement may load, and a tensor beyond it keeps the per-dtype tolerance, with
 * a note.
 */
#ifndef PARITY_OPERAND_INTERNAL_H
#define PARITY_OPERAND_INTERNAL_H

/* 640 MiB of binary64 per judgement: a 16M-element output (eager and compiled: 256 MiB)
 * with up to 24M operand elements a side, so a [4, 2048, 2048] activation of a norm with
 * its weight and bias is judged, within --max-memory's default of 8 GiB. */
#define OPERAND_BUDGET_ELEMS (80ull << 20)

#endif
