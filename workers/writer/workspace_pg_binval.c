/*
 * workspace_pg_binval.c — the binary COPY form of the values whose column
 * types take text zx does not always hold in their canonical form:
 * integer, smallint, uuid, date and numeric (workspace_pg_copy.c writes
 * the rest).  Parsing text costs Postgres most of a COPY's time: the
 * initial copy benchmark's table (bigint, integer, numeric, text,
 * timestamptz, boolean, double precision, uuid, jsonb, date) piped by psql
 * between two tables took 2.4-2.8 s for 1,000,000 rows as text, 1.45 s
 * in binary.
 *
 * Each function takes only the canonical text the server itself prints
 * (what a CDC copy or stream hands over: pg_binary.c, pg_values.c), or an
 * integer value; anything else ("1e3", "{...}" uuids, "Nov 30 2026", an
 * out-of-range year) returns 1, and the append goes as text, where the
 * server decides as it always did.  The server still checks what it gets
 * (a numeric's typmod, a date's range): a value it refuses refuses its
 * row, as in text.
 *
 * It must never: write a form the server would read as another value
 * than the text's, or accept text the server would refuse.
 */
#include "workers/writer/workspace_pg_int.h"

#include <stdint.h>
#include <string.h>

#include "common/numfmt.h"
#include "common/timefmt.h"

#define PG_EPOCH_DAYS 10957           /* 2000-01-01 in days since 1970-01-01 */
#define NUMERIC_POS 0x0000
#define NUMERIC_NEG 0x4000
#define NUMERIC_NAN 0xC000
#define NUMERIC_PINF 0xD000
#define NUMERIC_NINF 0xF000
#define NUMERIC_MAX_DIGITS 1000       /* beyond: text, the server decides */

static int put_be(zx_buf *out, uint64_t v, int bytes)
{
    unsigned char b[8];
    for (int i = bytes - 1; i >= 0; i--, v >>= 8)
        b[i] = (unsigned char)v;
    return zx_buf_put(out, (const char *)b, (size_t)bytes) < 0 ? -1 : 0;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

int zx_wsp_bin_int(const zx_fit_out *o, int bytes, zx_buf *out)
{
    if (o->st != ZX_FIT_S_INT)
        return 1;
    int64_t lo = bytes == 2 ? INT16_MIN : INT32_MIN, hi = bytes == 2 ? INT16_MAX : INT32_MAX;
    if (o->i < lo || o->i > hi)
        return 1;     /* the server says "out of range" in text */
    return put_be(out, (uint64_t)o->i, bytes);
}

int zx_wsp_bin_uuid(const zx_fit_out *o, zx_buf *out)
{
    if (o->st != ZX_FIT_S_TEXT || o->len != 36)
        return 1;
    unsigned char b[16];
    size_t k = 0;
    for (size_t i = 0; i < 36; i++) {
        char c = o->s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-')
                return 1;
            continue;
        }
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (v < 0)
            return 1;
        if (k % 2 == 0)
            b[k / 2] = (unsigned char)(v << 4);
        else
            b[k / 2] |= (unsigned char)v;
        k++;
    }
    return zx_buf_put(out, (const char *)b, 16) < 0 ? -1 : 0;
}

/* Digits s[*i ..] as a number of at most maxd digits (at least mind). */
static int digits(const char *s, size_t n, size_t *i, size_t mind, size_t maxd, int64_t *v)
{
    size_t b = *i;
    int64_t x = 0;
    while (*i < n && is_digit(s[*i]) && *i - b < maxd)
        x = x * 10 + (s[(*i)++] - '0');
    if (*i - b < mind || (*i < n && is_digit(s[*i])))
        return -1;
    *v = x;
    return 0;
}

int zx_wsp_bin_date(const zx_fit_out *o, zx_buf *out)
{
    if (o->st != ZX_FIT_S_TEXT)
        return 1;
    const char *s = o->s;
    size_t n = o->len;
    if (n == 8 && memcmp(s, "infinity", 8) == 0)
        return put_be(out, (uint32_t)INT32_MAX, 4);
    if (n == 9 && memcmp(s, "-infinity", 9) == 0)
        return put_be(out, (uint32_t)INT32_MIN, 4);
    /* YYYY-MM-DD[ BC], as the server prints a date (ISO DateStyle); years
     * 1-9999 (and BC 1-4713: the server's range starts in 4714 BC) */
    size_t i = 0;
    int64_t y, m, d;
    if (digits(s, n, &i, 4, 4, &y) < 0 || i >= n || s[i++] != '-' ||
        digits(s, n, &i, 2, 2, &m) < 0 || i >= n || s[i++] != '-' ||
        digits(s, n, &i, 2, 2, &d) < 0)
        return 1;
    int bc = 0;
    if (i + 3 == n && memcmp(s + i, " BC", 3) == 0)
        bc = 1, i += 3;
    if (i != n || y < 1 || (bc && y > 4713) || m < 1 || m > 12 || d < 1)
        return 1;
    int64_t ay = bc ? 1 - y : y;   /* astronomical year: 1 BC is 0 */
    static const unsigned mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    int leap = (ay % 4 == 0 && ay % 100 != 0) || ay % 400 == 0;
    if (d > (int64_t)(mdays[m - 1] + (m == 2 && leap)))
        return 1;
    int64_t days = zx_days_from_civil(ay, (unsigned)m, (unsigned)d) - PG_EPOCH_DAYS;
    return put_be(out, (uint32_t)(int32_t)days, 4);
}

int zx_wsp_bin_numeric(const zx_fit_out *o, zx_buf *out)
{
    char num[ZX_FMT_I64_MAX];
    const char *s;
    size_t n;
    if (o->st == ZX_FIT_S_INT) {
        s = num;
        n = zx_fmt_i64(num, o->i);
    } else if (o->st == ZX_FIT_S_TEXT) {
        s = o->s;
        n = o->len;
    } else {
        return 1;     /* a double: its decimal text, parsed by the server */
    }
    uint16_t special = n == 3 && memcmp(s, "NaN", 3) == 0         ? NUMERIC_NAN
                       : n == 8 && memcmp(s, "Infinity", 8) == 0  ? NUMERIC_PINF
                       : n == 9 && memcmp(s, "-Infinity", 9) == 0 ? NUMERIC_NINF
                                                                  : 0;
    if (special)
        return put_be(out, 0, 2) < 0 || put_be(out, 0, 2) < 0 || put_be(out, special, 2) < 0 ||
               put_be(out, 0, 2) < 0 ? -1 : 0;
    /* [-]digits[.digits] */
    size_t i = 0;
    int neg = 0;
    if (i < n && s[i] == '-')
        neg = 1, i++;
    size_t ib = i;
    while (i < n && is_digit(s[i]))
        i++;
    size_t ie = i, fb = i, fe = i;
    if (i < n && s[i] == '.') {
        fb = ++i;
        while (i < n && is_digit(s[i]))
            i++;
        fe = i;
        if (fe == fb)
            return 1;
    }
    if (i != n || ie == ib || ie - ib > NUMERIC_MAX_DIGITS || fe - fb > NUMERIC_MAX_DIGITS)
        return 1;
    while (ib < ie && s[ib] == '0')   /* leading zeros */
        ib++;
    size_t il = ie - ib, fl = fe - fb;
    /* base-10000 groups aligned on the point: the integer digits padded on
     * the left, the fraction's on the right */
    size_t ig = (il + 3) / 4, fg = (fl + 3) / 4;
    uint16_t g[(2 * NUMERIC_MAX_DIGITS + 6) / 4 + 2];
    size_t ng = 0;
    for (size_t k = 0; k < ig; k++) {
        unsigned v = 0;
        for (size_t j = 0; j < 4; j++) {
            size_t pos = k * 4 + j;            /* in the padded integer digits */
            size_t pad = ig * 4 - il;
            v = v * 10 + (pos >= pad ? (unsigned)(s[ib + pos - pad] - '0') : 0);
        }
        g[ng++] = (uint16_t)v;
    }
    for (size_t k = 0; k < fg; k++) {
        unsigned v = 0;
        for (size_t j = 0; j < 4; j++) {
            size_t pos = k * 4 + j;
            v = v * 10 + (pos < fl ? (unsigned)(s[fb + pos] - '0') : 0);
        }
        g[ng++] = (uint16_t)v;
    }
    int weight = (int)ig - 1;
    size_t first = 0, last = ng;
    while (first < last && g[first] == 0)
        first++, weight--;
    while (last > first && g[last - 1] == 0)
        last--;
    uint16_t sign = neg ? NUMERIC_NEG : NUMERIC_POS;
    if (first == last) {   /* zero: positive, weight 0, its scale kept */
        weight = 0;
        sign = NUMERIC_POS;
    }
    if (put_be(out, last - first, 2) < 0 || put_be(out, (uint16_t)(int16_t)weight, 2) < 0 ||
        put_be(out, sign, 2) < 0 || put_be(out, fl, 2) < 0)
        return -1;
    for (size_t k = first; k < last; k++)
        if (put_be(out, g[k], 2) < 0)
            return -1;
    return 0;
}
