/*
 * hex.h — the value of one hexadecimal digit, for the parsers that read
 * %XX escapes (DSNs) and \uXXXX escapes (JSON).  Header only: modules that
 * link nothing else of common/ use it too.
 *
 * It must never: depend on the locale (no ctype.h).
 */
#ifndef ZX_COMMON_HEX_H
#define ZX_COMMON_HEX_H

#include <stddef.h>

/* 0..15 for '0'-'9', 'a'-'f', 'A'-'F'; -1 for any other c (a char or an
 * unsigned char's value). */
static inline int zx_hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The byte (0..255) a "%XX" escape at s[i] stands for, when s[i] is '%'
 * and two hex digits follow within s[0..n); else -1. */
static inline int zx_pct_byte(const char *s, size_t n, size_t i)
{
    if (s[i] != '%' || i + 2 >= n)
        return -1;
    int a = zx_hexval((unsigned char)s[i + 1]), b = zx_hexval((unsigned char)s[i + 2]);
    return a < 0 || b < 0 ? -1 : a * 16 + b;
}

#endif
