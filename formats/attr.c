/*
 * attr.c - lookup and display of attributes read from captures.
 *
 * The text form is used both to show identity values and to decide whether two values
 * differ, so it must be deterministic and lossless for strings and integers; floats are
 * printed with the fewest of 15 to 17 significant digits that round-trip exactly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/capture.h"

const parity_attr *parity_attr_find(const parity_attr *aAttr, size_t n, const char *zName)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (strcmp(aAttr[i].zName, zName) == 0) return &aAttr[i];
    return NULL;
}

/* Appends with truncation; keeps zBuf NUL-terminated. */
static void append(char *zBuf, size_t nBuf, size_t *pLen, const char *zText)
{
    size_t nText = strlen(zText);
    if (*pLen + 1 >= nBuf) return;
    if (nText > nBuf - 1 - *pLen) nText = nBuf - 1 - *pLen;
    memcpy(zBuf + *pLen, zText, nText);
    *pLen += nText;
    zBuf[*pLen] = 0;
}

char *parity_attr_format(const parity_attr *pAttr, char *zBuf, size_t nBuf)
{
    size_t i, nLen = 0;
    char zItem[64];

    if (nBuf == 0) return zBuf;
    zBuf[0] = 0;
    if (pAttr->kind == PARITY_ATTR_OTHER) {
        append(zBuf, nBuf, &nLen, "<unsupported type>");
        return zBuf;
    }
    if (pAttr->isArray) append(zBuf, nBuf, &nLen, "[");
    for (i = 0; i < pAttr->n; i++) {
        if (i > 0) append(zBuf, nBuf, &nLen, ", ");
        switch (pAttr->kind) {
        case PARITY_ATTR_STRING:
            if (pAttr->isArray) append(zBuf, nBuf, &nLen, "\"");
            append(zBuf, nBuf, &nLen, pAttr->azStr[i] ? pAttr->azStr[i] : "");
            if (pAttr->isArray) append(zBuf, nBuf, &nLen, "\"");
            break;
        case PARITY_ATTR_INT:
            snprintf(zItem, sizeof zItem, "%lld", (long long)pAttr->aInt[i]);
            append(zBuf, nBuf, &nLen, zItem);
            break;
        case PARITY_ATTR_FLOAT: {
            /* Shortest of 15..17 digits that reads back as the same double: 41.7, not
             * 41.700000000000003, yet still lossless for comparisons. */
            int nDigit;
            for (nDigit = 15; nDigit <= 17; nDigit++) {
                snprintf(zItem, sizeof zItem, "%.*g", nDigit, pAttr->aFloat[i]);
                if (strtod(zItem, NULL) == pAttr->aFloat[i]) break;
            }
            append(zBuf, nBuf, &nLen, zItem);
            break;
        }
        case PARITY_ATTR_OTHER:
            break;
        }
    }
    if (pAttr->isArray) append(zBuf, nBuf, &nLen, "]");
    return zBuf;
}
