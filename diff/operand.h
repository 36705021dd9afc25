/*
 * operand.h - loading a captured tensor whole, decoded to binary64, for the op references
 * (internal to diff/). References read operands at random (a matmul reads rows and
 * columns), so operands are held in memory; OPERAND_BUDGET_ELEMS caps what one judgement
 * may load, and a tensor beyond it keeps the per-dtype tolerance, with a note.
 */
#ifndef PARITY_OPERAND_H
#define PARITY_OPERAND_H

#include "../formats/capture.h"
#include "../tolerance/ops.h"

#define OPERAND_BUDGET_ELEMS (64ull << 20)   /* 512 MiB of binary64 per judgement */

int operand_load(parity_capture *pCap, size_t iTensor, parity_operand *pOp, char *zErr,
                 size_t nErr);
void operand_free(parity_operand *pOp);

#endif
