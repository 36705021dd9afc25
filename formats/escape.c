/*
 * escape.c - untrusted text made safe to show on a terminal or in a line-based report (the
 * rule is in escape.h). One function, escape_next, decides what each character becomes;
 * the buffer, stream and line writers only place its output.
 */
#include <stdarg.h>
#include <string.h>
#include "formats/escape.h"

/* The longest form one character can take: a C1 control, "\xc2\x9b". */
#define ESCAPE_MAX 8

static const char g_zHex[] = "0123456789abcdef";

/* "\xNN" for byte b at zOut; returns 4. */
static size_t escape_byte(unsigned char b, char *zOut)
{
    zOut[0] = '\\';
    zOut[1] = 'x';
    zOut[2] = g_zHex[b >> 4];
    zOut[3] = g_zHex[b & 15];
    return 4;
}

/* The length of the well-formed UTF-8 sequence at z (2 to 4), or 0 when z[0] does not
 * start one. Ranges from RFC 3629, section 4: no overlong forms (c0, c1, e0 80..9f,
 * f0 80..8f), no surrogates (ed a0..bf), nothing above U+10FFFF (f4 90.., f5..ff). A
 * NUL ends the string, and fails the continuation test, so nothing is read past it. */
static size_t utf8_length(const unsigned char *z)
{
    unsigned char lo = 0x80, hi = 0xbf;
    size_t n, i;

    if (z[0] >= 0xc2 && z[0] <= 0xdf) n = 2;
    else if (z[0] >= 0xe0 && z[0] <= 0xef) n = 3;
    else if (z[0] >= 0xf0 && z[0] <= 0xf4) n = 4;
    else return 0;
    if (z[0] == 0xe0) lo = 0xa0;
    else if (z[0] == 0xed) hi = 0x9f;
    else if (z[0] == 0xf0) lo = 0x90;
    else if (z[0] == 0xf4) hi = 0x8f;
    if (z[1] < lo || z[1] > hi) return 0;
    for (i = 2; i < n; i++)
        if (z[i] < 0x80 || z[i] > 0xbf) return 0;
    return n;
}

/* What the character at z (z[0] != 0) becomes: writes it to zOut (ESCAPE_MAX bytes, not
 * terminated), sets *pnIn to the bytes of z it stands for, and returns its length. */
static size_t escape_next(const unsigned char *z, char *zOut, size_t *pnIn)
{
    size_t n;

    *pnIn = 1;
    if (z[0] == '\\' || z[0] == '\n' || z[0] == '\r' || z[0] == '\t') {
        zOut[0] = '\\';
        zOut[1] = z[0] == '\\' ? '\\' : z[0] == '\n' ? 'n' : z[0] == '\r' ? 'r' : 't';
        return 2;
    }
    if (z[0] < 0x20 || z[0] == 0x7f) return escape_byte(z[0], zOut);
    if (z[0] < 0x80) {
        zOut[0] = (char)z[0];
        return 1;
    }
    n = utf8_length(z);
    if (n == 0) return escape_byte(z[0], zOut);   /* not UTF-8: the byte alone */
    *pnIn = n;
    if (z[0] == 0xc2 && z[1] <= 0x9f) {            /* C1 control, U+0080..U+009F */
        escape_byte(z[0], zOut);
        return 4 + escape_byte(z[1], zOut + 4);
    }
    memcpy(zOut, z, n);
    return n;
}

char *parity_escape(const char *z, char *zBuf, size_t nBuf)
{
    const unsigned char *p = (const unsigned char *)(z ? z : "");
    size_t nLen = 0, nSafe = 0;   /* nSafe: the last cut that leaves room for "..." */

    if (nBuf == 0) return zBuf;
    while (*p) {
        char zOut[ESCAPE_MAX];
        size_t nIn, nOut = escape_next(p, zOut, &nIn);
        if (nLen + nOut > nBuf - 1) {
            /* does not fit: cut at the last boundary with room for the mark */
            if (nBuf - 1 >= 3) {
                memcpy(zBuf + nSafe, "...", 3);
                nLen = nSafe + 3;
            }
            break;
        }
        memcpy(zBuf + nLen, zOut, nOut);
        nLen += nOut;
        if (nLen + 3 <= nBuf - 1) nSafe = nLen;
        p += nIn;
    }
    zBuf[nLen] = 0;
    return zBuf;
}

int parity_escape_fputs(const char *z, FILE *pOut)
{
    const unsigned char *p = (const unsigned char *)(z ? z : "");
    char zChunk[512];   /* written a chunk at a time: stderr is unbuffered */
    size_t nLen = 0;

    while (*p) {
        size_t nIn;
        nLen += escape_next(p, zChunk + nLen, &nIn);
        p += nIn;
        if (nLen + ESCAPE_MAX > sizeof zChunk || !*p) {
            if (fwrite(zChunk, 1, nLen, pOut) != nLen) return -1;
            nLen = 0;
        }
    }
    return 0;
}

int parity_escape_line(FILE *pOut, const char *zFirst, ...)
{
    char zLine[PARITY_ESCAPE_LINE_LEN];
    const char *zPart;
    size_t nLen = 0;
    va_list ap;

    va_start(ap, zFirst);
    /* each part needs room for ": ", at least one byte of it, and the newline */
    for (zPart = zFirst; zPart && nLen + 4 < sizeof zLine; zPart = va_arg(ap, const char *)) {
        if (zPart != zFirst) {
            memcpy(zLine + nLen, ": ", 2);
            nLen += 2;
        }
        parity_escape(zPart, zLine + nLen, sizeof zLine - 1 - nLen);   /* 1: the newline */
        nLen += strlen(zLine + nLen);
    }
    va_end(ap);
    zLine[nLen++] = '\n';
    if (fwrite(zLine, 1, nLen, pOut) != nLen) return -1;
    return fflush(pOut) == 0 ? 0 : -1;
}
