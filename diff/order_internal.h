/*
 * order_internal.h - execution order of a capture's tensors (engine.c and its test).
 *
 * Order (from the eager capture): tensors with an "order" attribute ascending, ties by
 * name; then the rest in topological order of their "inputs" (ties by name); then tensors
 * left in or behind a cycle, by name. "File order" is name order: h5py does not track
 * creation order.
 */
#ifndef PARITY_ORDER_INTERNAL_H
#define PARITY_ORDER_INTERNAL_H

#include "formats/capture.h"

/* Fills aOrder with the n = parity_capture_count indices in execution order. azWarn (n
 * entries, zeroed by the caller) receives a malloc'd warning for tensors whose "inputs"
 * name a missing tensor (when warnDangling) or take part in or depend on a cycle.
 * Returns 0, or -1 when memory runs out. */
int parity_order_compute(const parity_capture *pCap, int warnDangling, size_t *aOrder,
                         char **azWarn);

#endif
