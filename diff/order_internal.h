/*
 * order_internal.h - execution order of a capture's tensors (engine.c and its test).
 *
 * Order (from the eager capture): one topological order of the "inputs" graph and the
 * chain of "order" values, a tensor without "order" placed just before the earliest
 * ordered tensor downstream of it (order.c); tensors left in or behind a cycle go last, by
 * name. "File order" is name order: h5py does not track creation order.
 */
#ifndef PARITY_ORDER_INTERNAL_H
#define PARITY_ORDER_INTERNAL_H

#include "formats/capture.h"

/* Fills aOrder with the n = parity_capture_count indices in execution order. azWarn (n
 * entries, zeroed by the caller) receives a malloc'd warning for tensors whose "inputs"
 * name a missing tensor (when warnDangling), whose "order" contradicts their inputs, or
 * that take part in or depend on a cycle.
 * Returns 0, or -1 when memory runs out. */
int parity_order_compute(const parity_capture *pCap, int warnDangling, size_t *aOrder,
                         char **azWarn);

#endif
