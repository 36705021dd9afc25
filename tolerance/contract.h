/*
 * contract.h - the kernel's contract a captured op declares in its tensors' attributes:
 * acc_dtype (the accumulation dtype the bound assumes) and compute_dtype (operands rounded
 * to a narrower format before the products: tf32 or bfloat16 tensor cores). The differ
 * (diff/semantic.c) and the replay of a captured op (fuzz/cases/stored.c) read it here,
 * the same way. Attributes: formats/FORMAT.md.
 */
#ifndef PARITY_CONTRACT_H
#define PARITY_CONTRACT_H

#include "formats/capture.h"

typedef struct {
    const parity_attr *pAcc;      /* the declaring attribute, or NULL */
    parity_dtype accDtype;        /* when pAcc */
    const parity_attr *pCompute;  /* the declaring attribute, or NULL */
    double uOperand;              /* when pCompute: the unit roundoff of its format */
} parity_contract;

/* Reads both attributes from an op's output as eager (pE) and compiled (pC) captured it:
 * each the compiled tensor's where it declares one (bf16 autocast on the compiled side
 * only), else eager's. 0, or -1 with zErr, one line that starts "compiled: " when the
 * faulty attribute is the compiled tensor's. */
int parity_contract_read(const parity_tensor_info *pE, const parity_tensor_info *pC,
                         parity_contract *pK, char *zErr, size_t nErr);

#endif
