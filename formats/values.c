/*
 * values.c — cells to stored values and their text forms (values.h).
 *
 * Must never allocate, read past a value's len, or depend on the locale
 * for anything that reaches a file (strtod and snprintf run under the C
 * locale in zx's processes; the decimal point is checked below anyway).
 */
#include "formats/values.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/timefmt.h"

typedef unsigned __int128 u128;

static u128 pow10_u128(int k)
{
    u128 v = 1;
    while (k-- > 0)
        v *= 10;
    return v;
}

/* ---- text forms ------------------------------------------------------ */

size_t zx_fv_fmt_double(double d, char out[ZX_FV_TEXTSZ])
{
    if (isnan(d)) {
        memcpy(out, "NaN", 4);
        return 3;
    }
    if (isinf(d)) {
        const char *s = d > 0 ? "Infinity" : "-Infinity";
        size_t n = strlen(s);
        memcpy(out, s, n + 1);
        return n;
    }
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(out, ZX_FV_TEXTSZ, "%.*g", prec, d);
        if (prec == 17 || strtod(out, NULL) == d)
            break;
    }
    return (size_t)n;
}

size_t zx_fv_fmt_decimal(zx_i128 unscaled, int scale, char out[ZX_FV_TEXTSZ])
{
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

/* y-m-d of days since 1970-01-01 (proleptic Gregorian; eras of 400 y). */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

size_t zx_fv_fmt_date(int64_t days, char out[ZX_FV_TEXTSZ])
{
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    if (y < 1)
        y = 1;
    if (y > 9999)
        y = 9999;
    snprintf(out, ZX_FV_TEXTSZ, "%04d-%02u-%02u", (int)y, m, d);
    return 10;
}

/* ---- parsers ---------------------------------------------------------- */

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Strict integer literal: [+-]?[0-9]+ within int64. */
static int parse_int64(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    if (i == n)
        return 0;
    uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (!is_digit(s[i]))
            return 0;
        unsigned dgt = (unsigned)(s[i] - '0');
        if (v > (lim - dgt) / 10)
            return 0;
        v = v * 10 + dgt;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 1;
}

/* strtod over exactly s[0..n) (s is NUL-terminated at n, rowset.h). */
static int parse_double(const char *s, size_t n, double *out)
{
    if (n == 0 || n > 400 || s[n] != '\0')
        return 0;
    char c = s[0];
    if (!(is_digit(c) || c == '-' || c == '+' || c == '.' || c == 'n' || c == 'N' ||
          c == 'i' || c == 'I'))
        return 0;
    errno = 0;
    char *end;
    double d = strtod(s, &end);
    if (end != s + n || errno == ERANGE)
        return 0;
    *out = d;
    return 1;
}

int zx_fv_parse_decimal(const char *s, size_t n, int precision, int scale, zx_i128 *unscaled)
{
    if (precision < 1 || precision > 38 || scale < 0 || scale > precision)
        return 0;
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    size_t int_start = i;
    while (i < n && is_digit(s[i]))
        i++;
    size_t int_end = i, frac_start = i, frac_end = i;
    if (i < n && s[i] == '.') {
        frac_start = ++i;
        while (i < n && is_digit(s[i]))
            i++;
        frac_end = i;
    }
    if (int_end == int_start && frac_end == frac_start)
        return 0;                       /* no digit at all */
    int64_t exp10 = 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int eneg = 0;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            eneg = s[i++] == '-';
        if (i == n || !is_digit(s[i]))
            return 0;
        for (; i < n && is_digit(s[i]); i++)
            if (exp10 < 100000)
                exp10 = exp10 * 10 + (s[i] - '0');
        if (eneg)
            exp10 = -exp10;
    }
    if (i != n)
        return 0;

    /* The digits D (integer then fraction part, leading zeros skipped) and
     * k: unscaled = D * 10^k. */
    int64_t nfrac = (int64_t)(frac_end - frac_start);
    int64_t k = exp10 - nfrac + scale;
    /* Walk the digits as one sequence without copying. */
    size_t total = (int_end - int_start) + (frac_end - frac_start);
    size_t first = 0;                   /* index of the first non-zero digit */
#define DIGIT_AT(j) ((j) < int_end - int_start ? s[int_start + (j)] \
                                              : s[frac_start + (j) - (int_end - int_start)])
    while (first < total && DIGIT_AT(first) == '0')
        first++;
    int64_t nd = (int64_t)(total - first);
    u128 limit = pow10_u128(precision) - 1; /* largest unscaled magnitude */
    u128 acc = 0;
    int64_t keep = k >= 0 ? nd : nd + k; /* digits kept before rounding */
    for (int64_t j = 0; j < keep; j++) {
        unsigned dgt = (unsigned)(DIGIT_AT(first + (size_t)j) - '0');
        if (acc > (limit - dgt) / 10)
            return 0;
        acc = acc * 10 + dgt;
    }
    if (k > 0 && nd > 0) {
        for (int64_t j = 0; j < k; j++) {
            if (acc > limit / 10)
                return 0;
            acc *= 10;
        }
    } else if (k < 0 && keep >= 0 && keep < nd) {
        if (DIGIT_AT(first + (size_t)keep) >= '5') {
            if (acc >= limit)
                return 0;
            acc++;
        }
    }
#undef DIGIT_AT
    *unscaled = neg ? -(zx_i128)acc : (zx_i128)acc;
    return 1;
}

/* "YYYY-MM-DD", year 1..9999 -> days since 1970-01-01. */
static int parse_date(const char *s, size_t n, int64_t *days)
{
    if (n != 10 || s[4] != '-' || s[7] != '-')
        return 0;
    static const int pos[8] = {0, 1, 2, 3, 5, 6, 8, 9};
    for (int i = 0; i < 8; i++)
        if (!is_digit(s[pos[i]]))
            return 0;
    int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
    unsigned m = (unsigned)((s[5] - '0') * 10 + (s[6] - '0'));
    unsigned d = (unsigned)((s[8] - '0') * 10 + (s[9] - '0'));
    static const unsigned mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1 || m < 1 || m > 12 || d < 1)
        return 0;
    unsigned lim = mdays[m - 1];
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        lim = 29;
    if (d > lim)
        return 0;
    *days = zx_days_from_civil(y, m, d);
    return 1;
}

/* ---- UTF-8 and JSON checks -------------------------------------------- */

size_t zx_fv_utf8_seq(const unsigned char *s, size_t n)
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
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

int zx_fv_utf8_valid(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
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
        size_t l = zx_fv_utf8_seq(s + i, n - i);
        if (!l)
            return 0;
        i += l;
    }
    return 1;
}

static size_t json_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

static int is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The 4 hex digits of "\\uXXXX" at s[i], or 0x10000 when not there. */
static unsigned hex4(const char *s, size_t n, size_t i)
{
    if (i + 6 > n)
        return 0x10000;
    unsigned u = 0;
    for (size_t k = i + 2; k < i + 6; k++) {
        char c = s[k];
        if (!is_hex(c))
            return 0x10000;
        u = u * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return u;
}

/* A string starting at s[i] == '"'; returns the index after it or 0. */
static size_t json_string(const char *s, size_t n, size_t i)
{
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
                unsigned u = hex4(s, n, i);
                if (u > 0xFFFF || (u >= 0xDC00 && u <= 0xDFFF))
                    return 0;               /* bad, or a lone low surrogate */
                i += 6;
                if (u >= 0xD800 && u <= 0xDBFF) {
                    unsigned lo = i + 1 < n && s[i] == '\\' && s[i + 1] == 'u' ?
                                  hex4(s, n, i) : 0x10000;
                    if (lo < 0xDC00 || lo > 0xDFFF)
                        return 0;           /* a high surrogate needs its pair */
                    i += 6;
                }
            } else if (strchr("\"\\/bfnrt", e) && e) {
                i += 2;
            } else {
                return 0;
            }
        } else if (c < 0x80) {
            i++;
        } else {
            size_t l = zx_fv_utf8_seq((const unsigned char *)s + i, n - i);
            if (!l)
                return 0;
            i += l;
        }
    }
    return 0;
}

/* A number at s[i]; returns the index after it or 0. */
static size_t json_number(const char *s, size_t n, size_t i)
{
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
        while (i < n && is_digit(s[i]))
            i++;
    }
    return i;
}

#define JSON_MAX_DEPTH 512

int zx_fv_json_valid(const char *s, size_t n)
{
    char stack[JSON_MAX_DEPTH];   /* '{' or '[' per open container */
    int depth = 0;
    size_t i = json_ws(s, n, 0);

value:
    if (i >= n)
        return 0;
    switch (s[i]) {
    case '{':
        if (depth == JSON_MAX_DEPTH)
            return 0;
        stack[depth++] = '{';
        i = json_ws(s, n, i + 1);
        if (i < n && s[i] == '}') {
            depth--;
            i++;
            goto after;
        }
        goto key;
    case '[':
        if (depth == JSON_MAX_DEPTH)
            return 0;
        stack[depth++] = '[';
        i = json_ws(s, n, i + 1);
        if (i < n && s[i] == ']') {
            depth--;
            i++;
            goto after;
        }
        goto value;
    case '"':
        if (!(i = json_string(s, n, i)))
            return 0;
        goto after;
    case 't':
        if (n - i < 4 || memcmp(s + i, "true", 4))
            return 0;
        i += 4;
        goto after;
    case 'f':
        if (n - i < 5 || memcmp(s + i, "false", 5))
            return 0;
        i += 5;
        goto after;
    case 'n':
        if (n - i < 4 || memcmp(s + i, "null", 4))
            return 0;
        i += 4;
        goto after;
    default:
        if (!(i = json_number(s, n, i)))
            return 0;
        goto after;
    }

key:
    if (i >= n || s[i] != '"' || !(i = json_string(s, n, i)))
        return 0;
    i = json_ws(s, n, i);
    if (i >= n || s[i] != ':')
        return 0;
    i = json_ws(s, n, i + 1);
    goto value;

after:
    i = json_ws(s, n, i);
    if (depth == 0)
        return i == n;
    if (i >= n)
        return 0;
    if (s[i] == ',') {
        i = json_ws(s, n, i + 1);
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

/* ---- buffers and JSON strings ------------------------------------------ */

int zx_fbuf_reserve(zx_fbuf *b, size_t n)
{
    if (n > SIZE_MAX - b->len - 1)
        return -1;
    if (b->len + n + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) {
        if (cap > SIZE_MAX / 2)
            return -1;
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

void zx_fbuf_free(zx_fbuf *b)
{
    if (!b)
        return;
    free(b->p);
    memset(b, 0, sizeof(*b));
}

static int json_plain(unsigned char c)
{
    return c >= 0x20 && c != '"' && c != '\\' && c < 0x80;
}

int zx_fv_json_quote(zx_fbuf *b, const char *str, size_t n, int replace)
{
    const unsigned char *s = (const unsigned char *)str;
    if (!replace && !zx_fv_utf8_valid(str, n))
        return 0;
    /* worst case: every byte as \u00XX (6) or U+FFFD (3) */
    if (n > (SIZE_MAX - 2) / 6 || zx_fbuf_reserve(b, 6 * n + 2) < 0)
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
            size_t l = zx_fv_utf8_seq(s + i, n - i);
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
        case '\\':
            *o++ = (char)c;
            break;
        case '\n':
            *o++ = 'n';
            break;
        case '\r':
            *o++ = 'r';
            break;
        case '\t':
            *o++ = 't';
            break;
        case '\b':
            *o++ = 'b';
            break;
        case '\f':
            *o++ = 'f';
            break;
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

/* ---- the conversion ---------------------------------------------------- */

#define US_PER_DAY 86400000000LL
#define TS_MIN (-62135596800000000LL)   /* 0001-01-01T00:00:00Z */
#define TS_MAX 253402300799999999LL     /* 9999-12-31T23:59:59.999999Z */

/* The text form of an INT, REAL, BOOL or TIMESTAMP cell into out (out->buf
 * or the timestamp's own text).  0 for other cells, and for a non-finite
 * REAL when finite_only. */
static int as_text(const zx_value *v, zx_fv *out, int finite_only)
{
    switch (v->type) {
    case ZX_T_INT:
        out->n = (size_t)snprintf(out->buf, sizeof(out->buf), "%lld", (long long)v->u.i);
        break;
    case ZX_T_REAL:
        if (finite_only && !isfinite(v->u.d))
            return 0;
        out->n = zx_fv_fmt_double(v->u.d, out->buf);
        break;
    case ZX_T_BOOL:
        out->n = v->u.b ? 4 : 5;
        memcpy(out->buf, v->u.b ? "true" : "false", out->n + 1);
        break;
    case ZX_T_TIMESTAMP:
        if (v->s && v->len) {
            out->s = v->s;
            out->n = v->len;
            return 1;
        }
        out->n = zx_ts_format(v->u.i, out->buf);
        break;
    default:
        return 0;
    }
    out->s = out->buf;
    return 1;
}

/* TEXT or a number kept as text: a literal for a number column. */
static int literal(const zx_value *v)
{
    return v->type == ZX_T_TEXT || zx_value_is_number_text(v);
}

static int ieq(const char *s, size_t n, const char *w)
{
    return strlen(w) == n && !strncasecmp(s, w, n);
}

static int conv_bool(const zx_value *v, const char *s, size_t n, zx_fv *out)
{
    if (v->type == ZX_T_BOOL) {
        out->i = v->u.b != 0;
        return ZX_FV_OK;
    }
    if ((v->type == ZX_T_INT && (v->u.i == 0 || v->u.i == 1)) ||
        (v->type == ZX_T_REAL && (v->u.d == 0 || v->u.d == 1))) {
        out->i = v->type == ZX_T_INT ? v->u.i : v->u.d == 1;
        return ZX_FV_OK;
    }
    if (v->type != ZX_T_TEXT)
        return ZX_FV_MISFIT;
    static const char *const yes[] = {"true", "t", "yes", "on", "1"};
    static const char *const no[] = {"false", "f", "no", "off", "0"};
    for (size_t k = 0; k < 5; k++) {
        if (ieq(s, n, yes[k])) {
            out->i = 1;
            return ZX_FV_OK;
        }
        if (ieq(s, n, no[k])) {
            out->i = 0;
            return ZX_FV_OK;
        }
    }
    return ZX_FV_MISFIT;
}

static int conv_json(const zx_value *v, const char *s, size_t n, zx_fv *out, zx_fbuf *sc)
{
    if (v->type == ZX_T_JSON) {
        if (!zx_fv_json_valid(s, n))
            return ZX_FV_MISFIT;
        out->s = s;
        out->n = n;
        return ZX_FV_OK;
    }
    if (v->type == ZX_T_TEXT || v->type == ZX_T_TIMESTAMP) {
        if (v->type == ZX_T_TIMESTAMP) {
            n = zx_ts_format(v->u.i, out->buf);
            s = out->buf;
        }
        int r = zx_fv_json_quote(sc, s, n, 0);
        if (r <= 0)
            return r < 0 ? ZX_FV_NOMEM : ZX_FV_MISFIT;
        out->s = sc->p;
        out->n = sc->len;
        return ZX_FV_OK;
    }
    return as_text(v, out, 1) ? ZX_FV_OK : ZX_FV_MISFIT;
}

static int conv_decimal(const zx_dcol *c, const zx_value *v, const char *s, size_t n,
                        zx_fv *out)
{
    if (v->type == ZX_T_INT || (v->type == ZX_T_REAL && isfinite(v->u.d))) {
        as_text(v, out, 1);
        s = out->buf;
        n = out->n;
    } else if (!literal(v)) {
        return ZX_FV_MISFIT;
    }
    if (!zx_fv_parse_decimal(s, n, c->precision, c->scale, &out->dec))
        return ZX_FV_MISFIT;
    out->i = (int64_t)out->dec;         /* exact when precision <= 18 */
    return ZX_FV_OK;
}

int zx_fv_convert(const zx_dcol *c, const zx_value *v, zx_fv *out, zx_fbuf *scratch)
{
    if (!v || v->type == ZX_T_NULL)
        return ZX_FV_NULL;
    scratch->len = 0;
    const char *s = v->s ? v->s : "";
    size_t n = v->s ? v->len : 0;
    switch (c->type) {
    case ZX_DT_TEXT:
    case ZX_DT_BYTES:
        if (v->type == ZX_T_TEXT || v->type == ZX_T_JSON) {
            out->s = s;
            out->n = n;
        } else if (!as_text(v, out, 0)) {
            return ZX_FV_MISFIT;
        }
        if (c->type == ZX_DT_TEXT && !zx_fv_utf8_valid(out->s, out->n))
            return ZX_FV_MISFIT;
        return ZX_FV_OK;
    case ZX_DT_JSON:
        return conv_json(v, s, n, out, scratch);
    case ZX_DT_INT64:
        switch (v->type) {
        case ZX_T_INT:
            out->i = v->u.i;
            return ZX_FV_OK;
        case ZX_T_BOOL:
            out->i = v->u.b ? 1 : 0;
            return ZX_FV_OK;
        case ZX_T_REAL:
            if (v->u.d >= -9223372036854775808.0 && v->u.d < 9223372036854775808.0 &&
                v->u.d == floor(v->u.d)) {
                out->i = (int64_t)v->u.d;
                return ZX_FV_OK;
            }
            return ZX_FV_MISFIT;
        default:
            return literal(v) && parse_int64(s, n, &out->i) ? ZX_FV_OK : ZX_FV_MISFIT;
        }
    case ZX_DT_DOUBLE:
        switch (v->type) {
        case ZX_T_REAL:
            out->d = v->u.d;
            return ZX_FV_OK;
        case ZX_T_INT:
            out->d = (double)v->u.i;
            return ZX_FV_OK;
        case ZX_T_BOOL:
            out->d = v->u.b ? 1 : 0;
            return ZX_FV_OK;
        default:
            return literal(v) && parse_double(s, n, &out->d) ? ZX_FV_OK : ZX_FV_MISFIT;
        }
    case ZX_DT_BOOL:
        return conv_bool(v, s, n, out);
    case ZX_DT_TIMESTAMP:
        if (v->type == ZX_T_TIMESTAMP)
            out->i = v->u.i;
        else if (v->type == ZX_T_TEXT && parse_date(s, n, &out->i))
            out->i *= US_PER_DAY;
        else if (!(v->type == ZX_T_TEXT && zx_rfc3339_parse(s, n, &out->i)))
            return ZX_FV_MISFIT;
        return out->i >= TS_MIN && out->i <= TS_MAX ? ZX_FV_OK : ZX_FV_MISFIT;
    case ZX_DT_DATE:
        if (v->type == ZX_T_TEXT)
            return parse_date(s, n, &out->i) ? ZX_FV_OK : ZX_FV_MISFIT;
        if (v->type == ZX_T_TIMESTAMP && v->u.i % US_PER_DAY == 0 && v->u.i >= TS_MIN &&
            v->u.i <= TS_MAX) {
            out->i = v->u.i / US_PER_DAY;
            return ZX_FV_OK;
        }
        return ZX_FV_MISFIT;
    case ZX_DT_DECIMAL:
        return conv_decimal(c, v, s, n, out);
    default:
        return ZX_FV_MISFIT;
    }
}
