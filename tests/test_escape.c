/*
 * test_escape.c - the escaping of untrusted text for terminals and the text report
 * (formats/escape.c): each rule of escape.h on the characters at its edges, printable UTF-8
 * left alone, every malformed UTF-8 form shown byte by byte, the cut of a long text at a
 * character boundary with "...", and the stream writer agreeing with the buffer one.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/escape.h"

/* parity_escape into a buffer large enough for anything these tests pass. */
static const char *esc(const char *z)
{
    static char zBuf[4096];
    return parity_escape(z, zBuf, sizeof zBuf);
}

Test(escape, printable_text_and_utf8_pass_unchanged)
{
    cr_expect_str_eq(esc("/layer1/out"), "/layer1/out");
    cr_expect_str_eq(esc(" !\"#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}~"),
                     " !\"#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}~");
    /* U+00A0 (the first after the C1 block), é, Ω, U+FFFD, a 4-byte emoji, U+10FFFF */
    cr_expect_str_eq(esc("\xc2\xa0|\xc3\xa9|\xce\xa9|\xef\xbf\xbd|\xf0\x9f\x98\x80|\xf4\x8f\xbf\xbf"),
                     "\xc2\xa0|\xc3\xa9|\xce\xa9|\xef\xbf\xbd|\xf0\x9f\x98\x80|\xf4\x8f\xbf\xbf");
    cr_expect_str_eq(esc(""), "");
    cr_expect_str_eq(esc(NULL), "");
}

Test(escape, controls_and_backslash_are_shown)
{
    cr_expect_str_eq(esc("a\nverdict: PASS"), "a\\nverdict: PASS");
    cr_expect_str_eq(esc("\r\t\\"), "\\r\\t\\\\");
    cr_expect_str_eq(esc("\x1b[2J"), "\\x1b[2J");
    cr_expect_str_eq(esc("\x01\x1f\x7f"), "\\x01\\x1f\\x7f");
    /* a literal backslash-n in a name stays distinguishable from a newline */
    cr_expect_str_eq(esc("a\\nb"), "a\\\\nb");
}

Test(escape, c1_controls_and_malformed_utf8_are_shown_byte_by_byte)
{
    /* C1: U+0080, U+009B (CSI), U+009F */
    cr_expect_str_eq(esc("\xc2\x80\xc2\x9b\xc2\x9f"), "\\xc2\\x80\\xc2\\x9b\\xc2\\x9f");
    /* a lone continuation byte, a lone lead byte, c0/c1 (overlong always), f5..ff */
    cr_expect_str_eq(esc("\x80"), "\\x80");
    cr_expect_str_eq(esc("\xc3"), "\\xc3");
    cr_expect_str_eq(esc("\xc3x"), "\\xc3x");
    cr_expect_str_eq(esc("\xc0\xaf"), "\\xc0\\xaf");
    cr_expect_str_eq(esc("\xf5\x80\x80\x80"), "\\xf5\\x80\\x80\\x80");
    cr_expect_str_eq(esc("\xff"), "\\xff");
    /* overlong 3- and 4-byte forms, a surrogate (U+D800), above U+10FFFF */
    cr_expect_str_eq(esc("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");
    cr_expect_str_eq(esc("\xf0\x80\x80\xaf"), "\\xf0\\x80\\x80\\xaf");
    cr_expect_str_eq(esc("\xed\xa0\x80"), "\\xed\\xa0\\x80");
    cr_expect_str_eq(esc("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
    /* a sequence cut short by a newline: the newline is still a newline */
    cr_expect_str_eq(esc("\xe2\x82\n"), "\\xe2\\x82\\n");
    /* the largest well-formed neighbours of those forms pass */
    cr_expect_str_eq(esc("\xe0\xa0\x80\xed\x9f\xbf\xf0\x90\x80\x80"),
                     "\xe0\xa0\x80\xed\x9f\xbf\xf0\x90\x80\x80");
}

Test(escape, a_cut_falls_between_characters_and_is_marked)
{
    char zBuf[16];
    /* fits exactly: no mark */
    cr_expect_str_eq(parity_escape("abcdefghijklmno", zBuf, sizeof zBuf), "abcdefghijklmno");
    /* one more: cut with room for the mark */
    cr_expect_str_eq(parity_escape("abcdefghijklmnop", zBuf, sizeof zBuf), "abcdefghijkl...");
    /* never inside an escape: "\x1b" is whole or absent */
    cr_expect_str_eq(parity_escape("abcdefghij\x1b\x1b\x1b", zBuf, sizeof zBuf), "abcdefghij...");
    /* never inside a UTF-8 sequence */
    cr_expect_str_eq(parity_escape("abcdefghijk\xf0\x9f\x98\x80zzzz", zBuf, sizeof zBuf),
                     "abcdefghijk...");
    /* buffers too small for the mark are cut without it; 1 byte holds only the NUL */
    cr_expect_str_eq(parity_escape("abcdef", zBuf, 3), "ab");
    cr_expect_str_eq(parity_escape("abcdef", zBuf, 1), "");
    zBuf[0] = 'x';
    parity_escape("abcdef", zBuf, 0);
    cr_expect_eq(zBuf[0], 'x', "nBuf 0 writes nothing");
}

Test(escape, stream_writer_matches_the_buffer_and_is_never_cut)
{
    /* longer than the writer's chunk, with escapes across its edges */
    size_t n = 5000, i, nStream;
    char *zIn = malloc(n + 1), *zWant = malloc(4 * n + 1), *zStream = NULL;
    FILE *pMem;
    cr_assert(zIn && zWant);
    for (i = 0; i < n; i++) zIn[i] = i % 7 == 0 ? '\n' : i % 11 == 0 ? '\x1b' : (char)('a' + i % 26);
    zIn[n] = 0;
    parity_escape(zIn, zWant, 4 * n + 1);
    pMem = open_memstream(&zStream, &nStream);
    cr_assert_not_null(pMem);
    cr_expect_eq(parity_escape_fputs(zIn, pMem), 0);
    cr_expect_eq(parity_escape_fputs(NULL, pMem), 0);
    fclose(pMem);
    cr_expect_str_eq(zStream, zWant);
    cr_expect_null(strchr(zStream, '\n'));
    cr_expect_null(strchr(zStream, '\x1b'));
    free(zStream);
    free(zIn);
    free(zWant);
}
