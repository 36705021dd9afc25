/*
 * escape.h - the one way untrusted text is shown to people: tensor names, attribute names
 * and values, and messages that quote them, on a terminal or in the line-based text report.
 *
 * Why: a capture is a file from anywhere. A dataset named "x\nverdict: PASS" printed raw
 * forges a line of the text report and splits a one-line error in two; an attribute value
 * holding "\x1b[2J" clears the user's terminal. Every writer of text for people
 * (reports/report_text.c, the stderr and stdout lines of paritydiff and parityfuzz) passes
 * such strings through here. The JSON report does not: JSON escapes by its own rules and
 * keeps names raw, so programs get the exact bytes.
 *
 * The rule (each escape is ASCII, and backslash is escaped, so the raw bytes can be read
 * back from what is shown):
 * - printable ASCII and well-formed UTF-8 of other characters pass unchanged ("/héllo/Ω");
 * - a backslash becomes "\\";
 * - newline, carriage return and tab become "\n", "\r", "\t"; every other C0 control
 *   (below 0x20) and DEL (0x7f) becomes "\xNN" (ESC is "\x1b");
 * - a C1 control (U+0080..U+009F, bytes c2 80..c2 9f; some terminals take U+009B as the
 *   start of an escape sequence) becomes "\xc2\xNN";
 * - a byte that is not part of well-formed UTF-8 (a stray continuation byte, an overlong
 *   form, a surrogate, a code point above U+10FFFF, a sequence cut short) becomes "\xNN".
 * Bidirectional controls and other invisible but printable characters pass unchanged: they
 * cannot end a line or drive a terminal.
 */
#ifndef PARITY_ESCAPE_H
#define PARITY_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* Writes z escaped into zBuf (nBuf bytes, always NUL-terminated when nBuf > 0). Text that
 * does not fit is cut between characters, never inside an escape or a UTF-8 sequence, and
 * the result then ends in "...". z NULL reads as "". Returns zBuf. */
char *parity_escape(const char *z, char *zBuf, size_t nBuf);

/* Writes z escaped to pOut, all of it, whatever its length. z NULL writes nothing.
 * Returns 0, or -1 when writing failed. */
int parity_escape_fputs(const char *z, FILE *pOut);

/* One message line, the CLIs' "prog: file: name: reason": the parts (a NULL-terminated
 * list, zFirst first) escaped and joined by ": ", then a newline, written with one fwrite
 * and flushed, so the line is never torn on an unbuffered stderr. A line longer than
 * PARITY_ESCAPE_LINE_LEN is cut, marked with "...". Returns 0, or -1 when writing failed. */
#define PARITY_ESCAPE_LINE_LEN 8192
int parity_escape_line(FILE *pOut, const char *zFirst, ...) __attribute__((sentinel));

#endif
