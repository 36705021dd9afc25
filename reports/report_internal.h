/*
 * report_internal.h - what the JSON writers of reports/ share and nothing outside uses:
 * insertions that turn a constructor's NULL (out of memory) into an error, so no field or
 * array entry can vanish from a report that is then written as if whole.
 */
#ifndef PARITY_REPORTS_REPORT_INTERNAL_H
#define PARITY_REPORTS_REPORT_INTERNAL_H

#include <stddef.h>
#include <jansson.h>

/* pObj[zKey] = pVal, or pArr gets pVal appended: 0, or -1 when pVal is NULL (a constructor
 * ran out of memory) or the container is. The value is consumed in every case, so a
 * builder ORs the results together and hands them to parity_report_finish. */
int parity_report_set(json_t *pObj, const char *zKey, json_t *pVal);
int parity_report_append(json_t *pArr, json_t *pVal);
/* A builder's result: pContainer when rc is 0 and it exists, else NULL (freed). */
json_t *parity_report_finish(json_t *pContainer, int rc);

/* A JSON string; NULL becomes null. Bytes that are not UTF-8 (names and texts from HDF5
 * and from folder names may hold any) become U+FFFD, so json_string cannot fail and a
 * field vanish. NULL only when memory ran out. */
json_t *parity_report_string(const char *z);
/* Length of the well-formed UTF-8 sequence at z (RFC 3629: no overlongs, no surrogates,
 * nothing above U+10FFFF), or 0 when the bytes there are not one; its code point in *pCp
 * (pCp may be NULL). Strings from HDF5 may hold any bytes: every writer repairs by it. */
size_t parity_report_utf8_decode(const unsigned char *z, unsigned long *pCp);
/* A double in the shortest form that reads back as the same value (%.17g always does,
 * shorter forms read better: 0.1 rather than 0.10000000000000001); NaN and infinities as
 * OpenMetrics spells them ("NaN", "+Inf", "-Inf"). */
void parity_report_format_double(double x, char *zBuf, size_t nBuf);
/* A gate document's pairs by id (a new object, values borrowed from pDoc), so a slice finds
 * each of its pairs in one look-up; the first of duplicate ids wins (ids are unique in a
 * well-formed document). NULL when memory ran out. report_gate_text.c. */
json_t *parity_report_gate_index_pairs(const json_t *pDoc);
#endif
