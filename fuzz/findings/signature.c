/*
 * signature.c - the signature that deduplicates findings.
 *
 * A signature names the op, dtype and finding class, then features of the
 * shape (per symbolic dim: 0, 1, or its alignment to 32/16/8 and its size band, the bands
 * ending at the split thresholds compilers use, 4096, 8192 and 16384) and of the values
 * (NaN, infinities, a fully masked row, subnormals). Features are coarse on purpose: a bug
 * that shows for every K with K % 64 in {1, 2, 3} should not count as three bugs, nor one
 * that shows at every rank (the layout variant is left out for that reason), and the
 * minimizer brings every finding to canonical small dims before its signature is taken.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "fuzz/findings/findings.h"

static const char *dim_feature(uint64_t d, char *zBuf, size_t nBuf)
{
    const char *zAlign, *zBand;
    if (d <= 1) {
        snprintf(zBuf, nBuf, "%llu", (unsigned long long)d);
        return zBuf;
    }
    zAlign = d % 32 == 0 ? "a32" : d % 16 == 0 ? "a16" : d % 8 == 0 ? "a8" : "u";
    zBand = d <= 64 ? "s" : d <= 4096 ? "m" : d <= 8192 ? "l" : d <= 16384 ? "x" : "h";
    snprintf(zBuf, nBuf, "%s%s", zAlign, zBand);
    return zBuf;
}

/* Value features over all inputs: n (NaN), i (infinity), m (a row of -Inf along the last
 * dim), s (a subnormal of the input's dtype). */
static void value_features(const parity_case *pCase, char *zBuf, size_t nBuf)
{
    int hasNan = 0, hasInf = 0, hasMaskRow = 0, hasSub = 0;
    size_t i;
    for (i = 0; i < pCase->nIn; i++) {
        const parity_operand *pIn = &pCase->aIn[i];
        uint64_t rowLen = pIn->rank > 0 ? pIn->aDim[pIn->rank - 1] : 1, k, run = 0;
        double tiny = parity_dtype_smallest_normal(pIn->dtype);
        for (k = 0; k < pIn->nElem; k++) {
            double v = pIn->aValue[k];
            if (isnan(v)) hasNan = 1;
            else if (isinf(v)) hasInf = 1;
            else if (v != 0 && fabs(v) < tiny) hasSub = 1;
            run = (v == -INFINITY) ? run + 1 : 0;
            if (rowLen > 0 && (k + 1) % rowLen == 0) {
                if (run >= rowLen && rowLen > 0) hasMaskRow = 1;
                run = 0;
            }
        }
    }
    snprintf(zBuf, nBuf, "%s%s%s%s%s", hasNan ? "n" : "", hasInf ? "i" : "",
             hasMaskRow ? "m" : "", hasSub ? "s" : "",
             hasNan || hasInf || hasMaskRow || hasSub ? "" : "-");
}

const char *parity_signature(const parity_case *pCase, const parity_oracle_result *pR,
                             char *zBuf, size_t nBuf)
{
    const parity_case_spec *pS = &pCase->spec;
    char zDim[16], zVal[8];
    const char *zKind = "";
    size_t len;
    int d;

    if (pR->cls == PARITY_FINDING_DIVERGES)
        zKind = pR->judged && pR->judgement.nNonFinite > 0 ? "/nonfinite" : "/bound";
    len = (size_t)snprintf(zBuf, nBuf, "%s %s %s%s dims=", pS->zOp,
                           parity_dtype_name(pS->dtype), parity_finding_class_name(pR->cls),
                           zKind);
    for (d = 0; d < pS->nDim && len < nBuf; d++) {
        if (!((pCase->usedDims >> d) & 1)) continue;
        len += (size_t)snprintf(zBuf + len, nBuf - len, "%s%s", len && zBuf[len - 1] != '=' ? "," : "",
                                dim_feature(pS->aDim[d], zDim, sizeof zDim));
    }
    value_features(pCase, zVal, sizeof zVal);
    if (len < nBuf) snprintf(zBuf + len, nBuf - len, " values=%s", zVal);
    return zBuf;
}

/* FNV-1a, 64 bits: stable across platforms and runs, which is all a folder name needs. */
void parity_signature_hash(const char *zSignature, char *zHex17)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *p;
    for (p = (const unsigned char *)zSignature; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    snprintf(zHex17, 17, "%016llx", (unsigned long long)h);
}
