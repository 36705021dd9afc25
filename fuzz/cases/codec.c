/*
 * codec.c - the compact binary form of a case spec, for libFuzzer's corpus.
 *
 * 96 bytes, little-endian, fixed layout (offsets in bytes):
 *    0  "PF"            magic
 *    2  u8  version     PARITY_CASE_VERSION
 *    3  u8  dtype       parity_dtype
 *    4  u16 variant
 *    6  u8  nDim        0..8
 *    7  u8  reserved    0
 *    8  u32 dims[8]
 *   40  u8  kind, i8 scaleLog2, for each of 4 inputs
 *   48  u64 seed
 *   56  char op[40]     NUL-terminated registry name
 * The op is stored by name so a corpus survives additions to the registry. Decoding checks
 * every field; whether the spec makes a legal case is parity_case_layout's call.
 */
#include <string.h>
#include "fuzz/cases/cases.h"

static void put_u16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put_u32(uint8_t *p, uint32_t v)
{
    int i;
    for (i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v)
{
    int i;
    for (i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

size_t parity_case_encode(const parity_case_spec *pSpec, uint8_t *aBuf, size_t nBuf)
{
    int i;
    if (nBuf < PARITY_CASE_CODEC_SIZE) return 0;
    memset(aBuf, 0, PARITY_CASE_CODEC_SIZE);
    aBuf[0] = 'P';
    aBuf[1] = 'F';
    aBuf[2] = PARITY_CASE_VERSION;
    aBuf[3] = (uint8_t)pSpec->dtype;
    put_u16(aBuf + 4, pSpec->variant);
    aBuf[6] = (uint8_t)pSpec->nDim;
    for (i = 0; i < PARITY_CASE_MAX_DIMS; i++)
        put_u32(aBuf + 8 + 4 * i, i < pSpec->nDim ? (uint32_t)pSpec->aDim[i] : 0);
    for (i = 0; i < PARITY_CASE_MAX_IN; i++) {
        aBuf[40 + 2 * i] = pSpec->aRecipe[i].kind;
        aBuf[41 + 2 * i] = (uint8_t)pSpec->aRecipe[i].scaleLog2;
    }
    put_u64(aBuf + 48, pSpec->seed);
    memcpy(aBuf + 56, pSpec->zOp, strnlen(pSpec->zOp, PARITY_CASE_OP_LEN - 1));
    return PARITY_CASE_CODEC_SIZE;
}

int parity_case_decode(const uint8_t *aBuf, size_t nBuf, parity_case_spec *pSpec)
{
    int i;
    memset(pSpec, 0, sizeof *pSpec);
    if (nBuf != PARITY_CASE_CODEC_SIZE || aBuf[0] != 'P' || aBuf[1] != 'F' ||
        aBuf[2] != PARITY_CASE_VERSION || aBuf[7] != 0)
        return -1;
    pSpec->dtype = (parity_dtype)aBuf[3];
    if (!parity_dtype_is_float(pSpec->dtype)) return -1;
    pSpec->variant = get_u16(aBuf + 4);
    pSpec->nDim = aBuf[6];
    if (pSpec->nDim > PARITY_CASE_MAX_DIMS) return -1;
    for (i = 0; i < PARITY_CASE_MAX_DIMS; i++) {
        uint32_t d = get_u32(aBuf + 8 + 4 * i);
        if (d > PARITY_CASE_MAX_ELEMS || (i >= pSpec->nDim && d != 0)) return -1;
        pSpec->aDim[i] = d;
    }
    for (i = 0; i < PARITY_CASE_MAX_IN; i++) {
        pSpec->aRecipe[i].kind = aBuf[40 + 2 * i];
        pSpec->aRecipe[i].scaleLog2 = (int8_t)aBuf[41 + 2 * i];
        if (pSpec->aRecipe[i].kind >= PARITY_VAL_COUNT) return -1;
    }
    pSpec->seed = get_u64(aBuf + 48);
    if (memchr(aBuf + 56, '\0', PARITY_CASE_OP_LEN) == NULL) return -1;
    memcpy(pSpec->zOp, aBuf + 56, PARITY_CASE_OP_LEN);
    if (!parity_op_find(pSpec->zOp)) return -1;
    return 0;
}
