/* report_gate_metrics.c - placeholder, being written. */
#include <stdio.h>
#include "reports/report_gate.h"
int parity_report_gate_metrics(const json_t *pDoc, const char *zPath, char *zErr, size_t nErr)
{ (void)pDoc; snprintf(zErr, nErr, "%s: metrics writer not built yet", zPath); return -1; }
