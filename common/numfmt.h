/*
 * numfmt.h — numbers as text without printf, for the hot paths that write
 * millions of them (COPY data, array literals, values read from binary
 * COPY): snprintf's format parsing and locale machinery cost the writer
 * more than half of its CPU in the initial copy benchmark.  Header only.
 *
 * Nothing here writes a NUL: each function returns the bytes written.
 *
 * It must never: depend on the locale, or write past the sizes it names.
 */
#ifndef ZX_COMMON_NUMFMT_H
#define ZX_COMMON_NUMFMT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ZX_FMT_I64_MAX 20      /* "-9223372036854775808" */
#define ZX_FMT_HEXDOUBLE_MAX 24 /* "-0x1.fffffffffffffp-1022" */

/* v in decimal, zero-padded to at least width digits (width <= 20) into
 * out (room for max(20, width) bytes). */
static inline size_t zx_fmt_u64_pad(char *out, uint64_t v, unsigned width)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n < width && n < sizeof(tmp))
        tmp[n++] = '0';
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

/* v in decimal ("%lld") into out (room for ZX_FMT_I64_MAX bytes). */
static inline size_t zx_fmt_i64(char *out, int64_t v)
{
    if (v >= 0)
        return zx_fmt_u64_pad(out, (uint64_t)v, 1);
    out[0] = '-';
    return 1 + zx_fmt_u64_pad(out + 1, 0 - (uint64_t)v, 1);
}

/* A finite d exactly, in C99's hexadecimal form ("%a": 0x1.8p+1, 0x0p+0,
 * subnormals as 0x0.<digits>p-1022), which strtod reads back to the same
 * double, into out (room for ZX_FMT_HEXDOUBLE_MAX bytes).  0 for NaN or
 * an infinity (nothing written). */
static inline size_t zx_fmt_hexdouble(char *out, double d)
{
    static const char hx[] = "0123456789abcdef";
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    unsigned e = (unsigned)(u >> 52) & 0x7ff;
    uint64_t m = u & ((1ull << 52) - 1);
    if (e == 0x7ff)
        return 0;
    size_t n = 0;
    if (u >> 63)
        out[n++] = '-';
    out[n++] = '0';
    out[n++] = 'x';
    out[n++] = e ? '1' : '0';
    int exp = e ? (int)e - 1023 : (m ? -1022 : 0);
    if (m) {
        out[n++] = '.';
        int digits = 13;
        while (!(m & 0xf)) {   /* trailing zero digits */
            m >>= 4;
            digits--;
        }
        for (int i = digits - 1; i >= 0; i--)
            out[n++] = hx[(m >> (4 * i)) & 0xf];
    }
    out[n++] = 'p';
    out[n++] = exp < 0 ? '-' : '+';
    n += zx_fmt_u64_pad(out + n, (uint64_t)(exp < 0 ? -exp : exp), 1);
    return n;
}

#endif
