/*
 * op_pool_internal.h - what the pooling op files share (op_max_pool2d.c, op_avg_pool2d.c):
 * torch's checks of a pooled input and its output, and its window rule (kernel_size,
 * stride defaulting to the kernel, padding at most half the kernel, dilation, ceil_mode,
 * pooling_output_shape), written once for max_pool2d and avg_pool2d.
 */
#ifndef PARITY_TOLERANCE_OP_POOL_INTERNAL_H
#define PARITY_TOLERANCE_OP_POOL_INTERNAL_H

#include <stddef.h>
#include "tolerance/ops.h"

/* x [N, C, H, W] or [C, H, W] into geom.pool's N, C, H, W and batched, its kind set;
 * else -1 with "<op>: x must be ...". */
int parity_pool_planes(parity_op_call *pCall, parity_pool_kind kind, char *zErr, size_t nErr);

/* The window attributes (dilation only for PARITY_POOL_MAX: avg_pool2d has none) into
 * geom.pool, checked as torch checks them, and Ho, Wo by torch's pooling_output_shape;
 * after parity_pool_planes. Returns 0, or -1 with a reason (an empty output is one). */
int parity_pool_window_params(parity_op_call *pCall, const parity_attr *aAttr, size_t nAttr,
                              char *zErr, size_t nErr);

/* The output: x's dtype, shape [.., C, Ho, Wo] (parity_op_take_out). 0 or -1. */
int parity_pool_take_out(parity_op_call *pCall, char *zErr, size_t nErr);

#endif
