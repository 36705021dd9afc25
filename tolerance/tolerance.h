/*
 * tolerance.h - how close a compiled element must be to its eager counterpart.
 *
 * A tensor is first compared by one (atol, rtol[, max_ulp]) triple chosen from its dtype:
 * the defaults of torch.testing.assert_close (PyTorch docs, "torch.testing"), which users
 * already know, unless --rtol/--atol/--max-ulp override them. Where the tensor's op is in
 * the registry and its model applies (diff/semantic.c says when), the op's reference and
 * error bound decide instead (ops.h, judge.h), and the triple only delimits the region a
 * propagated failure reports. It decides for everything else: tensors without an op or with
 * an op outside the registry, and op tensors the model cannot judge (those get a note).
 * Integers, bool and graph inputs are compared bit for bit.
 *
 * An element passes when |c - e| <= atol + rtol * |e|, or, when useUlp is set, when its
 * ULP distance in the tensor's dtype is at most maxUlp. NaN against NaN passes; NaN or Inf
 * on one side only fails; Inf against the same Inf passes. -0 against +0 passes unless
 * signedZeros is set.
 */
#ifndef PARITY_TOLERANCE_H
#define PARITY_TOLERANCE_H

#include <stdint.h>
#include "formats/dtype.h"

typedef struct {
    double atol;
    double rtol;
    int useUlp;         /* also accept elements within maxUlp ULPs */
    uint64_t maxUlp;
    int signedZeros;    /* -0 vs +0 is a mismatch */
    int exact;          /* bit-for-bit: any difference fails (inputs, integers, bool) */
} parity_tolerance;

/* The per-dtype default (assert_close's rtol/atol for f16, bf16, f32, f64; see
 * tolerance.c for fp8; exact for integers and bool). */
void parity_tolerance_default(parity_dtype dt, parity_tolerance *pTol);

/* Score of one element pair: error relative to what the tolerance allows. An element
 * passes iff its score is <= 1. NaN/Inf pattern mismatches score +Inf. absErr is |c - e|,
 * ulp is the ULP distance (ignored unless useUlp). */
double parity_tolerance_score(const parity_tolerance *pTol, double e, double absErr,
                              uint64_t ulp);

#endif
