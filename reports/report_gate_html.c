/* report_gate_html.c - placeholder, being written. */
#include <stdio.h>
#include "reports/report_gate.h"
int parity_report_gate_html(const json_t *pDoc, const char *zPath, char *zErr, size_t nErr)
{ (void)pDoc; snprintf(zErr, nErr, "%s: HTML writer not built yet", zPath); return -1; }
