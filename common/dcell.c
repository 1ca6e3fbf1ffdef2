/*
 * dcell.c — one cell of a result as a column stores it (dcell.h): the
 * targets, the conversion, and the literals it reads (integers, doubles,
 * decimals, dates).  The UTF-8 and JSON checks and the text forms are in
 * dcell_text.c.
 *
 * It must never: accept a value that the column would change on the way
 * in (beyond a real rounded to a narrower float, or a decimal rounded to
 * its scale, as databases do), or read past a value's len.
 */
#include "common/dcell.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/timefmt.h"

#define US_PER_DAY 86400000000LL
#define TS_MIN (-62135596800000000LL)   /* 0001-01-01T00:00:00Z */
#define TS_MAX 253402300799999999LL     /* 9999-12-31T23:59:59.999999Z */
#define TABLE_EXP_MAX 1000      /* |exponent| databases keeping numbers exactly take */
#define EXP_CAP 100000          /* a larger exponent is read as this */
#define DOUBLE_TEXT_MAX 400     /* bytes of a double literal, at most */

typedef unsigned __int128 u128;

/* ---- targets ------------------------------------------------------- */

zx_dc_target zx_dc_target_of(zx_dtype t, int precision, int scale)
{
    zx_dc_target r;
    memset(&r, 0, sizeof(r));
    r.type = t;
    r.imin = INT64_MIN;
    r.imax = INT64_MAX;
    r.nan_ok = r.inf_ok = 1;
    r.exp_max = TABLE_EXP_MAX;
    if (t == ZX_DT_DECIMAL) {
        r.precision = precision;
        r.scale = scale;
    }
    return r;
}

zx_dc_target zx_dc_target_file(const zx_dcol *c)
{
    zx_dc_target r = zx_dc_target_of(c->type, c->precision, c->scale);
    r.nul_ok = 1;
    r.exp_max = 0;
    return r;
}

/* ---- literals ------------------------------------------------------ */

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A whole integer literal [+-]digits within int64.  1 or 0. */
static int parse_int(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (n && (s[0] == '+' || s[0] == '-'))
        neg = s[i++] == '-';
    if (i == n)
        return 0;
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < n; i++) {
        if (!is_digit(s[i]))
            return 0;
        unsigned dg = (unsigned)(s[i] - '0');
        if (v > (lim - dg) / 10)
            return 0;
        v = v * 10 + dg;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 1;
}

/* All of s is one number strtod reads, within double range (an
 * overflow, or an underflow to 0, is lossy: 0; a subnormal result is
 * kept).  NaN / Infinity accepted. */
static int parse_double(const char *s, size_t n, double *out)
{
    char tmp[DOUBLE_TEXT_MAX + 1];
    if (n == 0 || n > DOUBLE_TEXT_MAX)
        return 0;
    if (!(s[0] == '+' || s[0] == '-' || s[0] == '.' || is_digit(s[0]) || s[0] == 'N' ||
          s[0] == 'n' || s[0] == 'I' || s[0] == 'i'))
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end;
    errno = 0;
    double d = strtod(tmp, &end);
    if (end != tmp + n || (errno == ERANGE && (d == 0.0 || isinf(d))))
        return 0;
    *out = d;
    return 1;
}

int zx_dc_decimal_fits(const char *s, size_t n, int precision, int scale, int exp_max,
                       zx_i128 *unscaled)
{
    if (unscaled && (precision < 1 || precision > 38 || scale < 0 || scale > precision))
        return 0;
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    size_t ib = i;
    while (i < n && is_digit(s[i]))
        i++;
    size_t ie = i, fb = i, fe = i;
    if (i < n && s[i] == '.') {
        fb = ++i;
        while (i < n && is_digit(s[i]))
            i++;
        fe = i;
    }
    if (ie == ib && fe == fb)
        return 0;   /* no digit */
    long exp = 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int eneg = 0;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            eneg = s[i++] == '-';
        size_t eb = i;
        while (i < n && is_digit(s[i])) {
            exp = exp * 10 + (s[i] - '0');
            if (exp > EXP_CAP)
                exp = EXP_CAP;
            i++;
        }
        if (i == eb || (exp_max > 0 && exp > exp_max))
            return 0;
        if (eneg)
            exp = -exp;
    }
    if (i != n)
        return 0;
    if (unscaled)
        *unscaled = 0;
    if (precision <= 0)
        return 1;
    /* the literal's digits without the point: dg(k), k < nd; `pos` digits
     * of them stand before the point (after the exponent is applied) */
    size_t ni = ie - ib, nd = ni + (fe - fb);
#define dg(k) ((k) < ni ? s[ib + (k)] : s[fb + (k) - ni])
    size_t first = 0;
    long pos = (long)ni + exp;
    while (first < nd && dg(first) == '0')
        first++, pos--;
    if (first == nd)
        return 1;                 /* zero */
    /* first significant digit at `first`; keep = significant digits left
     * once rounded to `scale` fraction digits */
    long keep = pos + scale;
    long nsig = (long)(nd - first);
    if (keep < 0)
        return 1;                 /* rounds to zero */
    int up = keep < nsig && dg(first + (size_t)keep) >= '5';
    if (up) {
        /* a carry adds a digit in front only when every kept digit is 9 */
        int all9 = 1;
        for (long k = 0; k < keep && all9; k++)
            all9 = dg(first + (size_t)k) == '9';
        if (all9)
            pos++;
    } else if (keep == 0)
        return 1;                 /* rounds to zero */
    if (pos > (long)precision - scale)
        return 0;
    if (unscaled) {
        /* fits: keep <= precision <= 38 digits, below 2^127 */
        u128 acc = 0;
        for (long k = 0; k < keep; k++)
            acc = acc * 10 + (unsigned)(k < nsig ? dg(first + (size_t)k) - '0' : 0);
        acc += (unsigned)up;
        *unscaled = neg ? -(zx_i128)acc : (zx_i128)acc;
    }
#undef dg
    return 1;
}

/* "YYYY-MM-DD", a real date in years 1..9999: 1 and the day number. */
static int parse_date(const char *s, size_t n, int64_t *days)
{
    if (n != 10 || s[4] != '-' || s[7] != '-')
        return 0;
    for (int k = 0; k < 10; k++)
        if (k != 4 && k != 7 && !is_digit(s[k]))
            return 0;
    int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
    int m = (s[5] - '0') * 10 + (s[6] - '0');
    int d = (s[8] - '0') * 10 + (s[9] - '0');
    static const int mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    if (y < 1 || m < 1 || m > 12 || d < 1)
        return 0;
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[m - 1] + (m == 2 && leap))
        return 0;
    *days = zx_days_from_civil(y, (unsigned)m, (unsigned)d);
    return 1;
}

/* ---- conversion ---------------------------------------------------- */

/* TEXT, or a number kept as text: a literal for a number column. */
static int literal(const zx_value *v)
{
    return v->s && (v->type == ZX_T_TEXT || zx_value_is_number_text(v));
}

/* The text of v: TEXT and JSON as they are, INT, REAL, BOOL and
 * TIMESTAMP (its original text, else its UTC text) written into b.  Sets
 * *s and *n.  1, 0 (a type without text), -1 (memory). */
static int text_form(const zx_value *v, zx_buf *b, const char **s, size_t *n)
{
    char tmp[40];
    size_t tl;
    switch (v->type) {
    case ZX_T_TEXT:
    case ZX_T_JSON:
        *s = v->s ? v->s : "";
        *n = v->s ? v->len : 0;
        return 1;
    case ZX_T_INT:
        tl = (size_t)snprintf(tmp, sizeof(tmp), "%" PRId64, v->u.i);
        break;
    case ZX_T_REAL:
        tl = zx_dc_double_text(v->u.d, tmp);
        break;
    case ZX_T_BOOL:
        tl = (size_t)snprintf(tmp, sizeof(tmp), "%s", v->u.b ? "true" : "false");
        break;
    case ZX_T_TIMESTAMP:
        if (v->s && v->len) {
            *s = v->s;
            *n = v->len;
            return 1;
        }
        tl = zx_ts_format(v->u.i, tmp);
        break;
    default:
        return 0;
    }
    b->len = 0;
    if (zx_buf_put(b, tmp, tl) < 0)
        return -1;
    *s = b->p;
    *n = b->len;
    return 1;
}

static int conv_int(const zx_dc_target *t, const zx_value *v, zx_dc_out *o)
{
    int64_t i;
    switch (v->type) {
    case ZX_T_INT: i = v->u.i; break;
    case ZX_T_BOOL: i = v->u.b ? 1 : 0; break;
    case ZX_T_REAL: {
        double d = v->u.d;
        if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != trunc(d))
            return 0;
        i = (int64_t)d;
        break;
    }
    default:
        if (!literal(v) || !parse_int(v->s, v->len, &i))
            return 0;
        break;
    }
    if (i < t->imin || i > t->imax)
        return 0;
    o->i = i;
    return 1;
}

static int conv_double(const zx_dc_target *t, const zx_value *v, zx_dc_out *o)
{
    double d;
    switch (v->type) {
    case ZX_T_REAL: d = v->u.d; break;
    case ZX_T_INT: d = (double)v->u.i; break;
    case ZX_T_BOOL: d = v->u.b ? 1.0 : 0.0; break;
    default:
        if (!literal(v) || !parse_double(v->s, v->len, &d))
            return 0;
        break;
    }
    if ((isnan(d) && !t->nan_ok) || (isinf(d) && !t->inf_ok))
        return 0;
    if (t->float4 && isfinite(d)) {
        float f = (float)d;
        if (isinf(f) || (f == 0.0f && d != 0.0))
            return 0;
    }
    o->d = d;
    return 1;
}

static int conv_bool(const zx_value *v, zx_dc_out *o)
{
    switch (v->type) {
    case ZX_T_BOOL: o->i = v->u.b ? 1 : 0; return 1;
    case ZX_T_INT:
        if (v->u.i != 0 && v->u.i != 1)
            return 0;
        o->i = v->u.i;
        return 1;
    case ZX_T_REAL:
        if (v->u.d != 0.0 && v->u.d != 1.0)
            return 0;
        o->i = v->u.d == 1.0;
        return 1;
    case ZX_T_TEXT: {
        static const char *const yes[] = { "true", "t", "yes", "on", "1" };
        static const char *const no[] = { "false", "f", "no", "off", "0" };
        for (size_t k = 0; v->s && k < 5; k++) {
            if (strlen(yes[k]) == v->len && strncasecmp(v->s, yes[k], v->len) == 0) {
                o->i = 1;
                return 1;
            }
            if (strlen(no[k]) == v->len && strncasecmp(v->s, no[k], v->len) == 0) {
                o->i = 0;
                return 1;
            }
        }
        return 0;
    }
    default:
        return 0;
    }
}

static int conv_ts(const zx_value *v, zx_dc_out *o)
{
    int64_t us;
    if (v->type == ZX_T_TIMESTAMP)
        us = v->u.i;
    else if (v->type == ZX_T_TEXT && v->s) {
        int64_t days;
        if (parse_date(v->s, v->len, &days))
            us = days * US_PER_DAY;
        else if (!zx_rfc3339_parse(v->s, v->len, &us))
            return 0;
    } else
        return 0;
    if (us < TS_MIN || us > TS_MAX)
        return 0;
    o->i = us;
    return 1;
}

static int conv_date(const zx_value *v, zx_buf *b, zx_dc_out *o)
{
    if (v->type == ZX_T_TEXT && v->s && parse_date(v->s, v->len, &o->i)) {
        o->s = v->s;
        o->len = v->len;
        return 1;
    }
    if (v->type != ZX_T_TIMESTAMP || v->u.i % US_PER_DAY != 0 || v->u.i < TS_MIN ||
        v->u.i > TS_MAX)
        return 0;
    o->i = v->u.i / US_PER_DAY;
    char tmp[ZX_DC_TEXTSZ];
    size_t n = zx_dc_date_text(o->i, tmp);
    b->len = 0;
    if (zx_buf_put(b, tmp, n) < 0)
        return -1;
    o->s = b->p;
    o->len = n;
    return 1;
}

static int conv_decimal(const zx_dc_target *t, const zx_value *v, zx_buf *b, zx_dc_out *o)
{
    if (!(v->type == ZX_T_INT || literal(v) || (v->type == ZX_T_REAL && isfinite(v->u.d))))
        return 0;
    const char *s;
    size_t n;
    int r = text_form(v, b, &s, &n);
    if (r <= 0)
        return r;
    /* the unscaled value where a column can carry it (files) */
    int want = t->precision >= 1 && t->precision <= 38 && t->scale >= 0 &&
               t->scale <= t->precision;
    if (!zx_dc_decimal_fits(s, n, t->precision, t->scale, t->exp_max, want ? &o->dec : NULL))
        return 0;
    o->i = (int64_t)o->dec;
    o->s = s;
    o->len = n;
    return 1;
}

static int conv_json(const zx_dc_target *t, const zx_value *v, zx_buf *b, zx_dc_out *o)
{
    char tmp[40];
    size_t tl;
    b->len = 0;
    switch (v->type) {
    case ZX_T_JSON:
        if (!v->s || !zx_dc_json_valid(v->s, v->len, t->nul_ok, t->exp_max))
            return 0;
        o->s = v->s;
        o->len = v->len;
        return 1;
    case ZX_T_TEXT: {
        int r = zx_dc_json_quote(b, v->s ? v->s : "", v->s ? v->len : 0, 0, t->nul_ok);
        if (r <= 0)
            return r;
        break;
    }
    case ZX_T_TIMESTAMP:
        tl = zx_ts_format(v->u.i, tmp);
        if (zx_dc_json_quote(b, tmp, tl, 0, 0) < 0)
            return -1;
        break;
    case ZX_T_INT:
    case ZX_T_REAL:
    case ZX_T_BOOL: {
        if (v->type == ZX_T_REAL && !isfinite(v->u.d))
            return 0;
        const char *s;
        size_t n;
        if (text_form(v, b, &s, &n) < 0)
            return -1;
        break;
    }
    default:
        return 0;
    }
    o->s = b->p;
    o->len = b->len;
    return 1;
}

static int conv_text(const zx_dc_target *t, const zx_value *v, zx_buf *b, zx_dc_out *o)
{
    const char *s;
    size_t n;
    int r = text_form(v, b, &s, &n);
    if (r <= 0)
        return r;
    if (!zx_dc_utf8_valid(s, n))
        return 0;
    if (!t->nul_ok && memchr(s, '\0', n))
        return 0;
    if (t->max_chars > 0 && n > (size_t)t->max_chars) {
        size_t chars = 0;
        for (size_t i = 0; i < n; i++)
            chars += ((unsigned char)s[i] & 0xC0) != 0x80;
        if (chars > (size_t)t->max_chars)
            return 0;
    }
    o->s = s;
    o->len = n;
    return 1;
}

int zx_dc_convert(const zx_dc_target *t, const zx_value *v, zx_buf *buf, zx_dc_out *out)
{
    memset(out, 0, sizeof(*out));
    out->null = 1;
    if (!v || v->type == ZX_T_NULL)
        return 1;
    int r;
    if (t->other) {
        r = conv_text(t, v, buf, out);
    } else {
        switch (t->type) {
        case ZX_DT_INT64: r = conv_int(t, v, out); break;
        case ZX_DT_DOUBLE: r = conv_double(t, v, out); break;
        case ZX_DT_BOOL: r = conv_bool(v, out); break;
        case ZX_DT_TIMESTAMP: r = conv_ts(v, out); break;
        case ZX_DT_DATE: r = conv_date(v, buf, out); break;
        case ZX_DT_DECIMAL: r = conv_decimal(t, v, buf, out); break;
        case ZX_DT_JSON: r = conv_json(t, v, buf, out); break;
        case ZX_DT_BYTES: r = text_form(v, buf, &out->s, &out->len); break;
        case ZX_DT_TEXT:
        default: r = conv_text(t, v, buf, out); break;
        }
    }
    if (r == 1)
        out->null = 0;
    else {
        memset(out, 0, sizeof(*out));
        out->null = 1;
    }
    return r;
}
