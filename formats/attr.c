/*
 * attr.c - lookup and display of attributes read from captures.
 *
 * The text form is used both to show identity values and to decide whether two values
 * differ, so it must be deterministic and lossless for strings and integers; floats are
 * printed with 17 significant digits (round-trip exact for binary64).
 */
#include <stdio.h>
#include <string.h>
#include "capture.h"

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
        case PARITY_ATTR_FLOAT:
            snprintf(zItem, sizeof zItem, "%.17g", pAttr->aFloat[i]);
            append(zBuf, nBuf, &nLen, zItem);
            break;
        case PARITY_ATTR_OTHER:
            break;
        }
    }
    if (pAttr->isArray) append(zBuf, nBuf, &nLen, "]");
    return zBuf;
}
