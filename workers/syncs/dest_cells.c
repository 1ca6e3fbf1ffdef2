/*
 * dest_cells.c — one cell of a run as a table destination writes it (see
 * dest_cells.h for the rules).
 *
 * It must never: know about SQL or a database library, or accept a value
 * that the column would change on the way in (beyond a real rounded to a
 * narrower float, or a decimal rounded to its scale, as databases do).
 */
#include "workers/syncs/dest_cells.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timefmt.h"

#define JSON_MAX_DEPTH 512
#define NUM_MAX_EXP 1000     /* |exponent| a decimal literal may have */

/* ---- buffer -------------------------------------------------------- */

void zx_dc_buf_free(zx_dc_buf *b)
{
    if (!b)
        return;
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

int zx_dc_buf_reserve(zx_dc_buf *b, size_t more)
{
    if (more > SIZE_MAX / 2 - b->len - 1)
        return -1;
    size_t need = b->len + more + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

int zx_dc_buf_put(zx_dc_buf *b, const void *s, size_t n)
{
    if (zx_dc_buf_reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

/* ---- targets ------------------------------------------------------- */

zx_dc_target zx_dc_target_of(zx_dtype t, int precision, int scale)
{
    zx_dc_target r;
    memset(&r, 0, sizeof(r));
    r.type = t;
    r.imin = INT64_MIN;
    r.imax = INT64_MAX;
    r.nan_ok = r.inf_ok = 1;
    if (t == ZX_DT_DECIMAL) {
        r.precision = precision;
        r.scale = scale;
    }
    return r;
}

/* ---- UTF-8 --------------------------------------------------------- */

int zx_dc_utf8_valid(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        /* ASCII runs, 8 bytes at a time */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ull)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            k = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            k = 2;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;     /* no surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else
            return 0;
        if (n - i - 1 < k)
            return 0;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (size_t j = 2; j <= k; j++)
            if ((s[i + j] & 0xC0) != 0x80)
                return 0;
        i += k + 1;
    }
    return 1;
}

static size_t utf8_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* ---- JSON ---------------------------------------------------------- */

typedef struct jp {
    const char *s;
    size_t n, i;
    int nul_ok;
} jp;

static void j_ws(jp *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' ||
                           p->s[p->i] == '\r'))
        p->i++;
}

static int j_hex4(jp *p, unsigned *out)
{
    if (p->n - p->i < 4)
        return 0;
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p->s[p->i++];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return 0;
    }
    *out = v;
    return 1;
}

static int j_string(jp *p)
{
    p->i++;   /* the opening quote */
    size_t start = p->i;
    while (p->i < p->n) {
        unsigned char c = (unsigned char)p->s[p->i];
        if (c == '"') {
            int ok = zx_dc_utf8_valid(p->s + start, p->i - start);
            p->i++;
            return ok;
        }
        if (c < 0x20)
            return 0;
        if (c != '\\') {
            p->i++;
            continue;
        }
        p->i++;
        if (p->i >= p->n)
            return 0;
        c = (unsigned char)p->s[p->i++];
        if (c && strchr("\"\\/bfnrt", c))
            continue;
        if (c != 'u')
            return 0;
        unsigned u;
        if (!j_hex4(p, &u))
            return 0;
        if (u == 0 && !p->nul_ok)
            return 0;
        if (u >= 0xDC00 && u <= 0xDFFF)
            return 0;
        if (u >= 0xD800 && u <= 0xDBFF) {
            unsigned l;
            if (p->n - p->i < 6 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u')
                return 0;
            p->i += 2;
            if (!j_hex4(p, &l) || l < 0xDC00 || l > 0xDFFF)
                return 0;
        }
    }
    return 0;
}

static int j_digits(jp *p)
{
    size_t b = p->i;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
        p->i++;
    return p->i > b;
}

static int j_number(jp *p)
{
    if (p->s[p->i] == '-')
        p->i++;
    if (p->i >= p->n)
        return 0;
    if (p->s[p->i] == '0')
        p->i++;
    else if (!j_digits(p))
        return 0;
    if (p->i < p->n && p->s[p->i] == '.') {
        p->i++;
        if (!j_digits(p))
            return 0;
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-'))
            p->i++;
        size_t b = p->i;
        if (!j_digits(p))
            return 0;
        /* databases that keep JSON numbers exactly (jsonb: numeric) take
         * exponents up to 1000 */
        size_t nd = p->i - b;
        while (nd > 1 && p->s[b] == '0')
            b++, nd--;
        if (nd > 4 || atoi(p->s + b) > NUM_MAX_EXP)   /* digits only: atoi stops */
            return 0;
    }
    return 1;
}

static int j_value(jp *p, int depth)
{
    j_ws(p);
    if (p->i >= p->n)
        return 0;
    char c = p->s[p->i];
    if (c == '"')
        return j_string(p);
    if (c == '-' || (c >= '0' && c <= '9'))
        return j_number(p);
    if (c == 't' || c == 'f' || c == 'n') {
        const char *w = c == 't' ? "true" : c == 'f' ? "false" : "null";
        size_t wl = strlen(w);
        if (p->n - p->i < wl || memcmp(p->s + p->i, w, wl) != 0)
            return 0;
        p->i += wl;
        return 1;
    }
    if (c != '{' && c != '[')
        return 0;
    if (depth >= JSON_MAX_DEPTH)
        return 0;
    char close = c == '{' ? '}' : ']';
    p->i++;
    j_ws(p);
    if (p->i < p->n && p->s[p->i] == close) {
        p->i++;
        return 1;
    }
    for (;;) {
        if (c == '{') {
            j_ws(p);
            if (p->i >= p->n || p->s[p->i] != '"' || !j_string(p))
                return 0;
            j_ws(p);
            if (p->i >= p->n || p->s[p->i] != ':')
                return 0;
            p->i++;
        }
        if (!j_value(p, depth + 1))
            return 0;
        j_ws(p);
        if (p->i >= p->n)
            return 0;
        if (p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->s[p->i] != close)
            return 0;
        p->i++;
        return 1;
    }
}

int zx_dc_json_valid(const char *s, size_t n, int nul_ok)
{
    jp p = { s, n, 0, nul_ok };
    if (!s || !j_value(&p, 0))
        return 0;
    j_ws(&p);
    return p.i == n;
}

/* Append s as a quoted JSON string.  1, 0 (misfit: bad UTF-8, or NUL
 * when !nul_ok), -1 (memory). */
static int json_quote(zx_dc_buf *b, const char *s, size_t n, int nul_ok)
{
    if (!zx_dc_utf8_valid(s, n))
        return 0;
    if (zx_dc_buf_reserve(b, n + 2) < 0 || zx_dc_buf_put(b, "\"", 1) < 0)
        return -1;
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        if (c == 0 && !nul_ok)
            return 0;
        if (zx_dc_buf_put(b, s + run, i - run) < 0)
            return -1;
        char e[8];
        int el;
        switch (c) {
        case '"': el = snprintf(e, sizeof(e), "\\\""); break;
        case '\\': el = snprintf(e, sizeof(e), "\\\\"); break;
        case '\n': el = snprintf(e, sizeof(e), "\\n"); break;
        case '\r': el = snprintf(e, sizeof(e), "\\r"); break;
        case '\t': el = snprintf(e, sizeof(e), "\\t"); break;
        default: el = snprintf(e, sizeof(e), "\\u%04x", c); break;
        }
        if (zx_dc_buf_put(b, e, (size_t)el) < 0)
            return -1;
        run = i + 1;
    }
    if (zx_dc_buf_put(b, s + run, n - run) < 0 || zx_dc_buf_put(b, "\"", 1) < 0)
        return -1;
    return 1;
}

/* ---- numbers ------------------------------------------------------- */

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
        if (s[i] < '0' || s[i] > '9')
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
    char tmp[128];
    if (n == 0 || n >= sizeof(tmp))
        return 0;
    if (!(s[0] == '+' || s[0] == '-' || s[0] == '.' || (s[0] >= '0' && s[0] <= '9') ||
          s[0] == 'N' || s[0] == 'n' || s[0] == 'I' || s[0] == 'i'))
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

int zx_dc_decimal_fits(const char *s, size_t n, int precision, int scale)
{
    size_t i = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    size_t ib = i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    size_t ie = i, fb = i, fe = i;
    if (i < n && s[i] == '.') {
        fb = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
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
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (exp <= NUM_MAX_EXP)
                exp = exp * 10 + (s[i] - '0');
            i++;
        }
        if (i == eb || exp > NUM_MAX_EXP)
            return 0;
        if (eneg)
            exp = -exp;
    }
    if (i != n)
        return 0;
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
    if (keep < nsig && dg(first + (size_t)keep) >= '5') {
        /* a carry adds a digit in front only when every kept digit is 9 */
        int all9 = 1;
        for (long k = 0; k < keep && all9; k++)
            all9 = dg(first + (size_t)k) == '9';
        if (all9)
            pos++;
    } else if (keep == 0)
        return 1;                 /* rounds to zero */
#undef dg
    return pos <= (long)precision - scale;
}

/* ---- dates and times ----------------------------------------------- */

static int64_t ts_min_us(void)
{
    return zx_days_from_civil(1, 1, 1) * 86400000000LL;
}

static int64_t ts_max_us(void)
{
    return zx_days_from_civil(9999, 12, 31) * 86400000000LL + 86399999999LL;
}

/* "YYYY-MM-DD", a real date in years 1..9999: 1 and the day number. */
static int parse_date(const char *s, size_t n, int64_t *days)
{
    if (n != 10 || s[4] != '-' || s[7] != '-')
        return 0;
    for (int k = 0; k < 10; k++)
        if (k != 4 && k != 7 && (s[k] < '0' || s[k] > '9'))
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

/* Text of a non-text value into buf (INT, REAL, BOOL, TIMESTAMP); text and
 * JSON as they are.  Sets *s and *n.  0 or -1 (memory). */
static int text_form(const zx_value *v, zx_dc_buf *b, const char **s, size_t *n)
{
    char tmp[40];
    size_t tl;
    switch (v->type) {
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
            return 0;
        }
        tl = zx_ts_format(v->u.i, tmp);
        break;
    default:
        *s = v->s ? v->s : "";
        *n = v->s ? v->len : 0;
        return 0;
    }
    b->len = 0;
    if (zx_dc_buf_put(b, tmp, tl) < 0)
        return -1;
    *s = b->p;
    *n = b->len;
    return 0;
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
    case ZX_T_TEXT:
    case ZX_T_JSON:
        if (!v->s || !parse_int(v->s, v->len, &i))
            return 0;
        break;
    default:
        return 0;
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
    case ZX_T_TEXT:
    case ZX_T_JSON:
        if (!v->s || !parse_double(v->s, v->len, &d))
            return 0;
        break;
    default:
        return 0;
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
        for (size_t k = 0; k < 5; k++) {
            if (v->s && strlen(yes[k]) == v->len && strncasecmp(v->s, yes[k], v->len) == 0) {
                o->i = 1;
                return 1;
            }
            if (v->s && strlen(no[k]) == v->len && strncasecmp(v->s, no[k], v->len) == 0) {
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
            us = days * 86400000000LL;
        else if (!zx_rfc3339_parse(v->s, v->len, &us))
            return 0;
    } else
        return 0;
    if (us < ts_min_us() || us > ts_max_us())
        return 0;
    o->i = us;
    return 1;
}

static int conv_date(const zx_value *v, zx_dc_buf *b, zx_dc_out *o)
{
    int64_t days;
    if (v->type == ZX_T_TEXT && v->s && parse_date(v->s, v->len, &days)) {
        o->s = v->s;
        o->len = v->len;
        return 1;
    }
    if (v->type != ZX_T_TIMESTAMP || v->u.i % 86400000000LL != 0 ||
        v->u.i < ts_min_us() || v->u.i > ts_max_us())
        return 0;
    char tmp[ZX_TS_BUFSZ];
    zx_ts_format(v->u.i, tmp);
    b->len = 0;
    if (zx_dc_buf_put(b, tmp, 10) < 0)
        return -1;
    o->s = b->p;
    o->len = 10;
    return 1;
}

static int conv_decimal(const zx_dc_target *t, const zx_value *v, zx_dc_buf *b, zx_dc_out *o)
{
    const char *s;
    size_t n;
    switch (v->type) {
    case ZX_T_TEXT:
    case ZX_T_JSON:
    case ZX_T_INT:
        break;
    case ZX_T_REAL:
        if (!isfinite(v->u.d))
            return 0;
        break;
    default:
        return 0;
    }
    if (v->type == ZX_T_JSON && !zx_value_is_number_text(v))
        return 0;
    if (text_form(v, b, &s, &n) < 0)
        return -1;
    if (!zx_dc_decimal_fits(s, n, t->precision, t->scale))
        return 0;
    o->s = s;
    o->len = n;
    return 1;
}

static int conv_json(const zx_dc_target *t, const zx_value *v, zx_dc_buf *b, zx_dc_out *o)
{
    char tmp[40];
    size_t tl;
    b->len = 0;
    switch (v->type) {
    case ZX_T_JSON:
        if (!v->s || !zx_dc_json_valid(v->s, v->len, t->nul_ok))
            return 0;
        o->s = v->s;
        o->len = v->len;
        return 1;
    case ZX_T_TEXT: {
        int r = json_quote(b, v->s ? v->s : "", v->s ? v->len : 0, t->nul_ok);
        if (r <= 0)
            return r;
        break;
    }
    case ZX_T_TIMESTAMP:
        tl = zx_ts_format(v->u.i, tmp);
        if (json_quote(b, tmp, tl, 0) < 0)
            return -1;
        break;
    case ZX_T_INT:
        tl = (size_t)snprintf(tmp, sizeof(tmp), "%" PRId64, v->u.i);
        if (zx_dc_buf_put(b, tmp, tl) < 0)
            return -1;
        break;
    case ZX_T_REAL:
        if (!isfinite(v->u.d))
            return 0;
        tl = zx_dc_double_text(v->u.d, tmp);
        if (zx_dc_buf_put(b, tmp, tl) < 0)
            return -1;
        break;
    case ZX_T_BOOL:
        if (zx_dc_buf_put(b, v->u.b ? "true" : "false", v->u.b ? 4 : 5) < 0)
            return -1;
        break;
    default:
        return 0;
    }
    o->s = b->p;
    o->len = b->len;
    return 1;
}

static int conv_text(const zx_dc_target *t, const zx_value *v, zx_dc_buf *b, zx_dc_out *o)
{
    const char *s;
    size_t n;
    if (text_form(v, b, &s, &n) < 0)
        return -1;
    if (!zx_dc_utf8_valid(s, n))
        return 0;
    if (!t->nul_ok && memchr(s, '\0', n))
        return 0;
    if (t->max_chars > 0 && n > (size_t)t->max_chars && utf8_chars(s, n) > (size_t)t->max_chars)
        return 0;
    o->s = s;
    o->len = n;
    return 1;
}

int zx_dc_convert(const zx_dc_target *t, const zx_value *v, zx_dc_buf *buf, zx_dc_out *out)
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
        case ZX_DT_BYTES:
            r = text_form(v, buf, &out->s, &out->len) < 0 ? -1 : 1;
            break;
        case ZX_DT_TEXT:
        default: r = conv_text(t, v, buf, out); break;
        }
    }
    if (r == 1)
        out->null = 0;
    else {
        out->s = NULL;
        out->len = 0;
    }
    return r;
}
