/*
 * contract.c - reading a captured op's acc_dtype and compute_dtype (contract.h).
 */
#include <stdio.h>
#include <string.h>
#include "tolerance/contract.h"
#include "tolerance/tolfile.h"

/* The attribute zName of the compiled tensor, else of eager's; *pIsCompiled says whose. */
static const parity_attr *declared(const parity_tensor_info *pE, const parity_tensor_info *pC,
                                   const char *zName, int *pIsCompiled)
{
    const parity_attr *pA = parity_attr_find(pC->aAttr, pC->nAttr, zName);
    *pIsCompiled = pA != NULL;
    return pA ? pA : parity_attr_find(pE->aAttr, pE->nAttr, zName);
}

int parity_contract_read(const parity_tensor_info *pE, const parity_tensor_info *pC,
                         parity_contract *pK, char *zErr, size_t nErr)
{
    int isCompiled;
    memset(pK, 0, sizeof *pK);
    pK->pAcc = declared(pE, pC, "acc_dtype", &isCompiled);
    if (pK->pAcc && (pK->pAcc->kind != PARITY_ATTR_STRING || pK->pAcc->n != 1 ||
                     !parity_dtype_is_float(pK->accDtype =
                                            parity_dtype_from_name(pK->pAcc->azStr[0])))) {
        snprintf(zErr, nErr, "%sattribute 'acc_dtype' must name a float dtype",
                 isCompiled ? "compiled: " : "");
        return -1;
    }
    pK->pCompute = declared(pE, pC, "compute_dtype", &isCompiled);
    if (pK->pCompute && (pK->pCompute->kind != PARITY_ATTR_STRING || pK->pCompute->n != 1 ||
                         !(pK->uOperand = parity_compute_roundoff(pK->pCompute->azStr[0])))) {
        snprintf(zErr, nErr, "%sattribute 'compute_dtype' must be tf32 or a float dtype",
                 isCompiled ? "compiled: " : "");
        return -1;
    }
    return 0;
}
