/*
 * dest_mysql_sql.c — SQL text for the MySQL / MariaDB destination: the
 * buffer, quoting, and cells as literals (dest_mysql_int.h).
 *
 * It must never: send anything to a server, or write a literal the server
 * would read as something else than the value (a decimal with an
 * exponent is an approximate double to MySQL: it is written out).
 */
#include "workers/destinations/mysql/dest_mysql_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timefmt.h"

#define MY_TS_MIN        (-62135596800000000LL) /* 0001-01-01 00:00:00 */
#define MY_TS_MAX        253402300799999999LL   /* 9999-12-31 23:59:59.999999 */
#define MY_DEC_DIGITS    160         /* significant digits kept of a literal */

/* ---- the text buffer ------------------------------------------------------ */

int zx_mysql_buf_reserve(zx_mysql_buf *b, size_t more)
{
    if (b->oom)
        return -1;
    if (more > SIZE_MAX / 2 - b->len - 1 ||
        zx_grow_to(&b->p, b->len + more + 1, &b->cap, 1, 1024) < 0) {
        b->oom = 1;
        return -1;
    }
    return 0;
}

void zx_mysql_buf_put(zx_mysql_buf *b, const char *s, size_t n)
{
    if (zx_mysql_buf_reserve(b, n) < 0)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void zx_mysql_buf_str(zx_mysql_buf *b, const char *s)
{
    zx_mysql_buf_put(b, s, strlen(s));
}

void zx_mysql_buf_ch(zx_mysql_buf *b, char c)
{
    zx_mysql_buf_put(b, &c, 1);
}

void zx_mysql_buf_printf(zx_mysql_buf *b, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        b->oom = 1; /* only short numbers are printed here */
        return;
    }
    zx_mysql_buf_put(b, tmp, (size_t)n);
}

/* `name`, a backtick doubled */
void zx_mysql_buf_ident(zx_mysql_buf *b, const char *name)
{
    zx_mysql_buf_ch(b, '`');
    for (const char *s = name; *s; s++) {
        if (*s == '`')
            zx_mysql_buf_ch(b, '`');
        zx_mysql_buf_ch(b, *s);
    }
    zx_mysql_buf_ch(b, '`');
}

void zx_mysql_buf_free(zx_mysql_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

void zx_mysql_buf_quoted(MYSQL *db, zx_mysql_buf *b, const char *s, size_t n)
{
    if (n > (SIZE_MAX - 3) / 2 || zx_mysql_buf_reserve(b, 2 * n + 3) < 0) {
        b->oom = 1;
        return;
    }
    b->p[b->len++] = '\'';
    unsigned long w = mysql_real_escape_string(db, b->p + b->len, s, (unsigned long)n);
    if (w == (unsigned long)-1) {
        b->oom = 1;
        return;
    }
    b->len += w;
    b->p[b->len++] = '\'';
    b->p[b->len] = '\0';
}

/* ---- values ------------------------------------------------------------- */

/* 'YYYY-MM-DD HH:MM:SS.ffffff' for us within DATETIME's range; 0 when
 * out of it. */
static int put_datetime(zx_mysql_buf *b, int64_t us)
{
    if (us < MY_TS_MIN || us > MY_TS_MAX)
        return 0;
    char ts[ZX_TS_BUFSZ];
    size_t n = zx_ts_format(us, ts);  /* YYYY-MM-DDTHH:MM:SS.ffffffZ */
    if (n != 27)
        return 0;
    ts[10] = ' ';
    zx_mysql_buf_ch(b, '\'');
    zx_mysql_buf_put(b, ts, 26);
    zx_mysql_buf_ch(b, '\'');
    return 1;
}

int zx_mysql_put_decimal(zx_mysql_buf *b, const char *s, size_t n, int scale)
{
    char m[MY_DEC_DIGITS];         /* the mantissa's significant digits */
    size_t nm = 0, i = 0;
    long point = 0;                /* digits of m before the point */
    int neg = 0, seen = 0, dot = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    for (; i < n; i++) {
        char c = s[i];
        if (c == '.' && !dot) {
            dot = 1;
        } else if (c >= '0' && c <= '9') {
            seen = 1;
            if (nm == 0 && c == '0') {
                if (dot)
                    point--;       /* a leading zero after the point */
                continue;
            }
            /* digits past the first MY_DEC_DIGITS cannot reach the result
             * (at most 100 + 30 digits, rounded on the next one) */
            if (nm < sizeof(m))
                m[nm++] = c;
            if (!dot)
                point++;
        } else {
            break;
        }
    }
    if (!seen)
        return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        int eneg = 0;
        long e = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            eneg = s[i++] == '-';
        if (i == n)
            return 0;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            if (e < 1000000)
                e = e * 10 + (s[i] - '0');
        point += eneg ? -e : e;
    }
    if (i != n)
        return 0;
    if (nm == 0) {
        zx_mysql_buf_ch(b, '0');
        return 1;
    }
    if (point > 100)
        return 0;
    /* digits of the result: integer part, then `scale` fraction digits */
    char out[MY_DEC_DIGITS + 2];
    long nint = point > 0 ? point : 0, nout = nint + scale;
    if (nout + 1 > (long)sizeof(out))
        return 0;
    for (long k = 0; k < nout; k++) {
        long at = k - nint + point;  /* index into m */
        out[k + 1] = at >= 0 && at < (long)nm ? m[at] : '0';
    }
    out[0] = '0';                    /* room for a carry */
    long r = nout - nint + point;    /* the first digit dropped */
    if (r >= 0 && r < (long)nm && m[r] >= '5') {
        long k = nout;
        while (k > 0 && out[k] == '9')
            out[k--] = '0';
        out[k]++;
    }
    long first = 0;
    while (first < nint && out[first] == '0')  /* leading zeros */
        first++;
    long last = nout;
    while (last > nint && out[last] == '0')     /* trailing fraction zeros */
        last--;
    int zero = 1;
    for (long k = 0; k <= nout && zero; k++)
        zero = out[k] == '0';
    if (neg && !zero)
        zx_mysql_buf_ch(b, '-');
    zx_mysql_buf_put(b, out + first, (size_t)(nint + 1 - first));
    if (last > nint) {
        zx_mysql_buf_ch(b, '.');
        zx_mysql_buf_put(b, out + nint + 1, (size_t)(last - nint));
    }
    return 1;
}

int zx_mysql_put_value(MYSQL *db, zx_buf *conv, zx_mysql_buf *b, const zx_dc_target *t,
                       const zx_value *v)
{
    zx_dc_out o;
    int r = zx_dc_convert(t, v, conv, &o);
    if (r < 0) {
        b->oom = 1;
        return ZX_MYSQL_VALUE;
    }
    if (r == 1 && o.null) {
        zx_mysql_buf_put(b, "NULL", 4);
        return ZX_MYSQL_NULL;
    }
    if (r == 1) {
        switch (t->type) {
        case ZX_DT_INT64:
        case ZX_DT_BOOL:
            zx_mysql_buf_printf(b, "%lld", (long long)o.i);
            return ZX_MYSQL_VALUE;
        case ZX_DT_DOUBLE:
            /* 17 digits read back exactly; the exponent makes it a double
             * literal, which the server rounds once, correctly */
            zx_mysql_buf_printf(b, "%.16e", o.d);
            return ZX_MYSQL_VALUE;
        case ZX_DT_TIMESTAMP:
            if (put_datetime(b, o.i))
                return ZX_MYSQL_VALUE;
            break;
        case ZX_DT_DECIMAL:
            if (zx_mysql_put_decimal(b, o.s, o.len, t->scale))
                return ZX_MYSQL_VALUE;
            break;
        case ZX_DT_BYTES: {
            static const char hex[] = "0123456789ABCDEF";
            if (o.len > (SIZE_MAX - 4) / 2 || zx_mysql_buf_reserve(b, 2 * o.len + 3) < 0) {
                b->oom = 1;
                return ZX_MYSQL_VALUE;
            }
            char *w = b->p + b->len;
            *w++ = 'X';
            *w++ = '\'';
            for (size_t k = 0; k < o.len; k++) {
                unsigned char ch = (unsigned char)o.s[k];
                *w++ = hex[ch >> 4];
                *w++ = hex[ch & 15];
            }
            *w++ = '\'';
            b->len = (size_t)(w - b->p);
            b->p[b->len] = '\0';
            return ZX_MYSQL_VALUE;
        }
        default: /* TEXT, JSON, DATE: text in quotes */
            zx_mysql_buf_quoted(db, b, o.s ? o.s : "", o.s ? o.len : 0);
            return ZX_MYSQL_VALUE;
        }
    }
    zx_mysql_buf_put(b, "NULL", 4);
    return ZX_MYSQL_MISFIT;
}
