/*
 * report_internal.h - what the JSON writers of reports/ share and nothing outside uses:
 * insertions that turn a constructor's NULL (out of memory) into an error, so no field or
 * array entry can vanish from a report that is then written as if whole.
 */
#ifndef PARITY_REPORTS_REPORT_INTERNAL_H
#define PARITY_REPORTS_REPORT_INTERNAL_H

#include <jansson.h>

/* pObj[zKey] = pVal, or pArr gets pVal appended: 0, or -1 when pVal is NULL (a constructor
 * ran out of memory) or the container is. The value is consumed in every case, so a
 * builder ORs the results together and hands them to parity_report_finish. */
int parity_report_set(json_t *pObj, const char *zKey, json_t *pVal);
int parity_report_append(json_t *pArr, json_t *pVal);
/* A builder's result: pContainer when rc is 0 and it exists, else NULL (freed). */
json_t *parity_report_finish(json_t *pContainer, int rc);

#endif
