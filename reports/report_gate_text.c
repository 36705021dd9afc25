/* report_gate_text.c - placeholder, being written. */
#include <stdio.h>
#include "reports/report_gate.h"
int parity_report_gate_text(const json_t *pDoc, FILE *pOut) { (void)pDoc; (void)pOut; return -1; }
int parity_report_gate_mitigations(const json_t *pDoc, const char *zPath, char *zErr, size_t nErr)
{ (void)pDoc; snprintf(zErr, nErr, "%s: not built yet", zPath); return -1; }
