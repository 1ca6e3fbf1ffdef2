/*
 * json_scan.h — the string scanning both hand-written JSON parsers share
 * (common/json_fast.c for push bodies, workers/sources/debezium/
 * debezium_fast.c for change events): finding a string's end while
 * checking its escapes and UTF-8, and decoding it.  Inline: they are the
 * parsers' hottest loops.
 *
 * Every function trusts only what it checks: the [p, e) bounds are never
 * passed, a string is invalid on any bad escape, lone surrogate, U+0000
 * or malformed UTF-8 (as jansson, the parsers' reference, says).
 */
#ifndef ZX_COMMON_JSON_SCAN_H
#define ZX_COMMON_JSON_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/hex.h"

static inline unsigned zx_js_hex4(const char *s)   /* 4 hex digits, already checked */
{
    return (unsigned)(zx_hexval(s[0]) << 12 | zx_hexval(s[1]) << 8 |
                      zx_hexval(s[2]) << 4 | zx_hexval(s[3]));
}

/* Length of the strict UTF-8 sequence at s (first byte >= 0x80), 0 if bad. */
static inline size_t zx_js_utf8_seq(const unsigned char *s, const unsigned char *e)
{
    unsigned c = s[0], cp;
    size_t n;
    if (c < 0xC2 || c > 0xF4)
        return 0;
    n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if ((size_t)(e - s) < n)
        return 0;
    cp = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return n;
}

#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* p is just after an opening quote.  Returns the closing quote, or NULL when
 * the string is invalid or unterminated; *esc = 1 if it holds an escape. */
static inline const char *zx_js_scan_str(const char *p, const char *e, int *esc)
{
    for (;;) {
        while (e - p >= 8) {
            uint64_t w, q, b;
            memcpy(&w, p, 8);
            q = w ^ (ONES * '"');
            b = w ^ (ONES * '\\');
            uint64_t t = (((q - ONES) & ~q) | ((b - ONES) & ~b) |
                          ((w - ONES * 0x20) & ~w) | w) & HIGHS;
            if (!t) {
                p += 8;
                continue;
            }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            p += __builtin_ctzll(t) >> 3;   /* lowest flag is never false */
#endif
            break;
        }
        if (p >= e)
            return NULL;
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            return p;
        if (c == '\\') {
            if (e - p < 2)
                return NULL;
            switch (p[1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n':
            case 'r': case 't':
                p += 2;
                break;
            case 'u':
                if (e - p < 6 || zx_hexval(p[2]) < 0 || zx_hexval(p[3]) < 0 ||
                    zx_hexval(p[4]) < 0 || zx_hexval(p[5]) < 0)
                    return NULL;
                p += 6;
                break;
            default:
                return NULL;
            }
            *esc = 1;
        } else if (c < 0x20) {
            return NULL;
        } else if (c >= 0x80) {
            size_t n = zx_js_utf8_seq((const unsigned char *)p, (const unsigned char *)e);
            if (!n)
                return NULL;
            p += n;
        } else {
            p++;
        }
    }
}

/* Code point of the escape "\uXXXX[\uXXXX]" at s (checked by scan_str),
 * advancing *s; -1 for a lone or bad surrogate or U+0000. */
static inline long zx_js_unicode_escape(const char **s, const char *e)
{
    const char *p = *s;
    long cp = (long)zx_js_hex4(p + 2);
    p += 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (e - p < 6 || p[0] != '\\' || p[1] != 'u')
            return -1;
        long lo = (long)zx_js_hex4(p + 2);
        if (lo < 0xDC00 || lo > 0xDFFF)
            return -1;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        p += 6;
    } else if ((cp >= 0xDC00 && cp <= 0xDFFF) || cp == 0) {
        return -1;
    }
    *s = p;
    return cp;
}

static inline size_t zx_js_utf8_put(char *d, long cp)
{
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xC0 | cp >> 6);
        d[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xE0 | cp >> 12);
        d[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        d[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    d[0] = (char)(0xF0 | cp >> 18);
    d[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    d[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    d[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decode the checked string body [s, e) into d (room for e - s bytes).
 * escaped = 0: decoded text; 1: jansson's dump form (without quotes).
 * Returns the length written, or -1 (bad surrogate, U+0000). */
static inline long zx_js_decode_str(const char *s, const char *e, char *d, int escaped)
{
    char *o = d;
    while (s < e) {
        if (*s != '\\') {
            *o++ = *s++;
            continue;
        }
        long cp;
        switch (s[1]) {
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u': cp = -2; break;
        default: cp = s[1]; break;           /* " \ / */
        }
        if (cp == -2) {
            if ((cp = zx_js_unicode_escape(&s, e)) < 0)
                return -1;
        } else {
            s += 2;
        }
        if (escaped && (cp == '"' || cp == '\\' || cp < 0x20)) {
            static const char sh[] = "btnvfr";   /* \b=8 .. \r=13 */
            *o++ = '\\';
            if (cp == '"' || cp == '\\') {
                *o++ = (char)cp;
            } else if (cp >= '\b' && cp <= '\r' && cp != 0x0B) {
                *o++ = sh[cp - '\b'];
            } else {
                static const char hx[] = "0123456789ABCDEF";
                memcpy(o, "u00", 3);
                o[3] = hx[cp >> 4];
                o[4] = hx[cp & 15];
                o += 5;
            }
        } else {
            o += zx_js_utf8_put(o, cp);
        }
    }
    return (long)(o - d);
}

#endif
