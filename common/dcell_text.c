/*
 * dcell_text.c — the checks and text forms of dcell.h: UTF-8 and JSON
 * validity, JSON strings, and the text of doubles, decimals and dates.
 *
 * It must never: read past n, allocate except through the zx_buf it
 * is handed, or depend on the locale.
 */
#include "common/dcell.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hex.h"
#include "common/timefmt.h"

#define JSON_MAX_DEPTH 512
#define US_PER_DAY 86400000000LL

/* ---- UTF-8 --------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s[0..n) (1..4), or 0 when the
 * bytes there are not one (or n == 0). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    if (n == 0)
        return 0;
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;      /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;      /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

int zx_dc_utf8_valid(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        /* ASCII runs, 8 bytes at a time */
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ull)) {
                i += 8;
                continue;
            }
        }
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t l = utf8_seq(s + i, n - i);
        if (!l)
            return 0;
        i += l;
    }
    return 1;
}

/* ---- JSON validity ------------------------------------------------- */

typedef struct jp {
    const char *s;
    size_t n;
    int nul_ok, exp_max;
} jp;

static size_t json_ws(const jp *p, size_t i)
{
    while (i < p->n && (p->s[i] == ' ' || p->s[i] == '\t' || p->s[i] == '\n' ||
                        p->s[i] == '\r'))
        i++;
    return i;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The 4 hex digits of "\\uXXXX" at s[i], or 0x10000 when not there. */
static unsigned hex4(const jp *p, size_t i)
{
    if (i + 6 > p->n)
        return 0x10000;
    unsigned u = 0;
    for (size_t k = i + 2; k < i + 6; k++) {
        int h = zx_hexval((unsigned char)p->s[k]);
        if (h < 0)
            return 0x10000;
        u = u * 16 + (unsigned)h;
    }
    return u;
}

/* A string starting at s[i] == '"'; returns the index after it or 0. */
static size_t json_string(const jp *p, size_t i)
{
    const char *s = p->s;
    size_t n = p->n;
    i++;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"')
            return i + 1;
        if (c < 0x20)
            return 0;
        if (c == '\\') {
            if (i + 1 >= n)
                return 0;
            char e = s[i + 1];
            if (e == 'u') {
                unsigned u = hex4(p, i);
                if (u > 0xFFFF || (u >= 0xDC00 && u <= 0xDFFF) || (u == 0 && !p->nul_ok))
                    return 0;       /* bad, a lone low surrogate, or NUL */
                i += 6;
                if (u >= 0xD800 && u <= 0xDBFF) {
                    unsigned lo = i + 1 < n && s[i] == '\\' && s[i + 1] == 'u' ?
                                  hex4(p, i) : 0x10000;
                    if (lo < 0xDC00 || lo > 0xDFFF)
                        return 0;   /* a high surrogate needs its pair */
                    i += 6;
                }
            } else if (e && strchr("\"\\/bfnrt", e)) {
                i += 2;
            } else {
                return 0;
            }
        } else if (c < 0x80) {
            i++;
        } else {
            size_t l = utf8_seq((const unsigned char *)s + i, n - i);
            if (!l)
                return 0;
            i += l;
        }
    }
    return 0;
}

/* A number at s[i]; returns the index after it or 0. */
static size_t json_number(const jp *p, size_t i)
{
    const char *s = p->s;
    size_t n = p->n;
    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0') {
        i++;
    } else if (i < n && s[i] >= '1' && s[i] <= '9') {
        while (i < n && is_digit(s[i]))
            i++;
    } else {
        return 0;
    }
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n || !is_digit(s[i]))
            return 0;
        while (i < n && is_digit(s[i]))
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= n || !is_digit(s[i]))
            return 0;
        long exp = 0;
        for (; i < n && is_digit(s[i]); i++)
            if (exp <= p->exp_max)
                exp = exp * 10 + (s[i] - '0');
        if (p->exp_max > 0 && exp > p->exp_max)
            return 0;
    }
    return i;
}

int zx_dc_json_valid(const char *s, size_t n, int nul_ok, int exp_max)
{
    if (!s)
        return 0;
    jp p = { s, n, nul_ok, exp_max };
    char stack[JSON_MAX_DEPTH];   /* '{' or '[' per open container */
    int depth = 0;
    size_t i = json_ws(&p, 0);

value:
    if (i >= n)
        return 0;
    switch (s[i]) {
    case '{':
    case '[':
        if (depth == JSON_MAX_DEPTH)
            return 0;
        stack[depth++] = s[i];
        i = json_ws(&p, i + 1);
        if (i < n && s[i] == (stack[depth - 1] == '{' ? '}' : ']')) {
            depth--;
            i++;
            goto after;
        }
        if (stack[depth - 1] == '{')
            goto key;
        goto value;
    case '"':
        if (!(i = json_string(&p, i)))
            return 0;
        goto after;
    case 't':
    case 'f':
    case 'n': {
        const char *w = s[i] == 't' ? "true" : s[i] == 'f' ? "false" : "null";
        size_t wl = strlen(w);
        if (n - i < wl || memcmp(s + i, w, wl) != 0)
            return 0;
        i += wl;
        goto after;
    }
    default:
        if (!(i = json_number(&p, i)))
            return 0;
        goto after;
    }

key:
    if (i >= n || s[i] != '"' || !(i = json_string(&p, i)))
        return 0;
    i = json_ws(&p, i);
    if (i >= n || s[i] != ':')
        return 0;
    i = json_ws(&p, i + 1);
    goto value;

after:
    i = json_ws(&p, i);
    if (depth == 0)
        return i == n;
    if (i >= n)
        return 0;
    if (s[i] == ',') {
        i = json_ws(&p, i + 1);
        if (stack[depth - 1] == '{')
            goto key;
        goto value;
    }
    if ((s[i] == '}' && stack[depth - 1] == '{') || (s[i] == ']' && stack[depth - 1] == '[')) {
        depth--;
        i++;
        goto after;
    }
    return 0;
}

/* ---- JSON strings -------------------------------------------------- */

static int json_plain(unsigned char c)
{
    return c >= 0x20 && c != '"' && c != '\\' && c < 0x80;
}

int zx_dc_json_quote(zx_buf *b, const char *str, size_t n, int replace, int nul_ok)
{
    const unsigned char *s = (const unsigned char *)str;
    if (!replace && !zx_dc_utf8_valid(str, n))
        return 0;
    if (!nul_ok && memchr(str, '\0', n))
        return 0;
    /* worst case: every byte as \u00XX (6) or U+FFFD (3) */
    if (n > (SIZE_MAX / 2 - 2) / 6 || zx_buf_reserve(b, 6 * n + 2) < 0)
        return -1;
    char *o = b->p + b->len;
    *o++ = '"';
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && json_plain(s[j]))
            j++;
        memcpy(o, s + i, j - i);
        o += j - i;
        i = j;
        if (i >= n)
            break;
        unsigned char c = s[i];
        if (c >= 0x80) {
            size_t l = utf8_seq(s + i, n - i);
            if (l) {
                memcpy(o, s + i, l);
                o += l;
                i += l;
            } else {
                memcpy(o, "\xEF\xBF\xBD", 3);
                o += 3;
                i++;
            }
            continue;
        }
        *o++ = '\\';
        switch (c) {
        case '"':
        case '\\': *o++ = (char)c; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        default: {
            static const char hex[] = "0123456789abcdef";
            memcpy(o, "u00", 3);
            o[3] = hex[c >> 4];
            o[4] = hex[c & 15];
            o += 5;
        }
        }
        i++;
    }
    *o++ = '"';
    b->len = (size_t)(o - b->p);
    b->p[b->len] = '\0';
    return 1;
}

/* ---- text forms ---------------------------------------------------- */

size_t zx_dc_double_text(double d, char out[32])
{
    if (isnan(d))
        return (size_t)snprintf(out, 32, "NaN");
    if (isinf(d))
        return (size_t)snprintf(out, 32, d > 0 ? "Infinity" : "-Infinity");
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(out, 32, "%.*g", prec, d);
        if (prec == 17 || strtod(out, NULL) == d)
            break;
    }
    return (size_t)n;
}

size_t zx_dc_decimal_text(zx_i128 unscaled, int scale, char out[ZX_DC_TEXTSZ])
{
    typedef unsigned __int128 u128;
    char digits[48];
    size_t nd = 0;
    int neg = unscaled < 0;
    u128 m = neg ? (u128)0 - (u128)unscaled : (u128)unscaled;
    do {
        digits[nd++] = (char)('0' + (int)(m % 10));
        m /= 10;
    } while (m && nd < sizeof(digits));
    if (scale < 0)
        scale = 0;
    if (scale > 38)
        scale = 38;
    while (nd <= (size_t)scale)      /* at least one digit before the point */
        digits[nd++] = '0';
    size_t o = 0;
    if (neg)
        out[o++] = '-';
    for (size_t i = nd; i-- > 0;) {
        out[o++] = digits[i];
        if (i == (size_t)scale && scale > 0)
            out[o++] = '.';
    }
    out[o] = '\0';
    return o;
}

size_t zx_dc_date_text(int64_t days, char out[ZX_DC_TEXTSZ])
{
    /* zx_ts_format clamps to 0001-01-01 .. 9999-12-31; keep the product
     * in range first */
    const int64_t lim = 4000000;        /* days: beyond year 9999 either way */
    char ts[ZX_TS_BUFSZ];
    zx_ts_format((days < -lim ? -lim : days > lim ? lim : days) * US_PER_DAY, ts);
    memcpy(out, ts, 10);
    out[10] = '\0';
    return 10;
}
