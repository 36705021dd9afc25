/*
 * gate_traffic.c - the traffic file (diff/GATE.md, "Traffic and coverage"): a CSV whose
 * header names slice keys and ends with `share`, a row per slice with its share of
 * production traffic. Plain comma-separated fields (no quoting: label values with commas
 * are not supported, and say so); every error names the line.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diff/gate.h"

#define MAX_LINE 4096

/* Splits zLine at commas into azField (trimmed of blanks and the line end). */
static size_t split(char *zLine, char **azField, size_t nMax)
{
    size_t n = 0;
    char *z = zLine, *zEnd;
    zLine[strcspn(zLine, "\r\n")] = 0;
    while (n < nMax) {
        char *zComma = strchr(z, ',');
        if (zComma) *zComma = 0;
        while (*z == ' ' || *z == '\t') z++;
        zEnd = z + strlen(z);
        while (zEnd > z && (zEnd[-1] == ' ' || zEnd[-1] == '\t')) *--zEnd = 0;
        azField[n++] = z;
        if (!zComma) break;
        z = zComma + 1;
    }
    return n;
}

int parity_gate_traffic_load(const char *zPath, parity_gate_traffic *pT, char *zErr, size_t nErr)
{
    FILE *pFile = fopen(zPath, "r");
    char zLine[MAX_LINE], *azField[PARITY_GATE_MAX_KEYS + 2];
    size_t n, i, nAlloc = 0;
    int line = 0;
    double total = 0.0;

    memset(pT, 0, sizeof *pT);
    if (pFile == NULL) {
        snprintf(zErr, nErr, "%s: cannot open the traffic file: %s", zPath, strerror(errno));
        return -1;
    }
    while (fgets(zLine, sizeof zLine, pFile)) {
        line++;
        if (zLine[0] == '#' || zLine[strspn(zLine, " \t\r\n")] == 0) continue;
        n = split(zLine, azField, PARITY_GATE_MAX_KEYS + 2);
        if (pT->nKey == 0) {   /* the header */
            if (n < 2 || strcmp(azField[n - 1], "share") != 0 || n - 1 > PARITY_GATE_MAX_KEYS) {
                snprintf(zErr, nErr, "%s:%d: the header must name 1 to 8 slice keys and end "
                         "with 'share'", zPath, line);
                goto fail;
            }
            for (i = 0; i + 1 < n; i++)
                if ((pT->azKey[i] = strdup(azField[i])) == NULL) goto oom;
            pT->nKey = n - 1;
            continue;
        }
        if (n != pT->nKey + 1) {
            snprintf(zErr, nErr, "%s:%d: expected %zu fields, found %zu (commas inside values "
                     "are not supported)", zPath, line, pT->nKey + 1, n);
            goto fail;
        }
        if (pT->nRow == nAlloc) {
            size_t nNew = nAlloc ? 2 * nAlloc : 16;
            char **az = realloc(pT->azValue, nNew * pT->nKey * sizeof *az);
            double *a;
            if (az == NULL) goto oom;
            pT->azValue = az;
            a = realloc(pT->aShare, nNew * sizeof *a);
            if (a == NULL) goto oom;
            pT->aShare = a;
            nAlloc = nNew;
        }
        {
            char *zEnd;
            double share;
            errno = 0;
            share = strtod(azField[n - 1], &zEnd);
            if (errno || zEnd == azField[n - 1] || *zEnd || !(share >= 0.0 && share <= 1.0)) {
                snprintf(zErr, nErr, "%s:%d: share '%s' is not a number from 0 to 1", zPath,
                         line, azField[n - 1]);
                goto fail;
            }
            for (i = 0; i < pT->nKey; i++)
                pT->azValue[pT->nRow * pT->nKey + i] = NULL;
            pT->aShare[pT->nRow] = share;
            pT->nRow++;
            for (i = 0; i < pT->nKey; i++)
                if ((pT->azValue[(pT->nRow - 1) * pT->nKey + i] = strdup(azField[i])) == NULL)
                    goto oom;
            total += share;
        }
    }
    if (pT->nKey == 0) {
        snprintf(zErr, nErr, "%s: the traffic file is empty (a header and rows expected)", zPath);
        goto fail;
    }
    if (total > 1.0 + 1e-6) {
        snprintf(zErr, nErr, "%s: the shares add up to %.6g, more than 1", zPath, total);
        goto fail;
    }
    fclose(pFile);
    return 0;
oom:
    snprintf(zErr, nErr, "%s: out of memory", zPath);
fail:
    fclose(pFile);
    parity_gate_traffic_free(pT);
    return -1;
}

void parity_gate_traffic_free(parity_gate_traffic *pT)
{
    size_t i;
    for (i = 0; i < pT->nKey; i++) free(pT->azKey[i]);
    for (i = 0; pT->azValue && i < pT->nRow * pT->nKey; i++) free(pT->azValue[i]);
    free(pT->azValue);
    free(pT->aShare);
    memset(pT, 0, sizeof *pT);
}
