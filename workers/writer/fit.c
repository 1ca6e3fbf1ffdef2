/*
 * fit.c — the fit rules between values and workspace columns (see fit.h).
 * Must never know about SQL statements or a database library.
 */
#include "workers/writer/fit.h"

#include "common/json_numbers.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/timefmt.h"

static const char *const kind_decl[ZX_FIT__COUNT] = {
    [ZX_FIT_INTEGER] = "INTEGER", [ZX_FIT_REAL] = "REAL",
    [ZX_FIT_BOOLEAN] = "BOOLEAN", [ZX_FIT_TEXT] = "TEXT",
    [ZX_FIT_TIMESTAMP] = "TIMESTAMP", [ZX_FIT_JSON] = "JSON",
    [ZX_FIT_ANY] = NULL,
};

static const char *const kind_name[ZX_FIT__COUNT] = {
    [ZX_FIT_INTEGER] = "integer", [ZX_FIT_REAL] = "real",
    [ZX_FIT_BOOLEAN] = "boolean", [ZX_FIT_TEXT] = "text",
    [ZX_FIT_TIMESTAMP] = "timestamp", [ZX_FIT_JSON] = "json",
    [ZX_FIT_ANY] = "any",
};

zx_fit_kind zx_fit_kind_from_decl(const char *decl)
{
    if (!decl)
        return ZX_FIT_ANY;
    while (*decl == ' ' || *decl == '\t' || *decl == '\n' || *decl == '\r')
        decl++;
    size_t n = strlen(decl);
    while (n && (decl[n - 1] == ' ' || decl[n - 1] == '\t' || decl[n - 1] == '\n' ||
                 decl[n - 1] == '\r'))
        n--;
    for (int k = 0; k < ZX_FIT_ANY; k++)
        if (strlen(kind_decl[k]) == n && strncasecmp(kind_decl[k], decl, n) == 0)
            return (zx_fit_kind)k;
    return ZX_FIT_ANY;
}

const char *zx_fit_decl_for_type(zx_type t)
{
    switch (t) {
    case ZX_T_INT: return "INTEGER";
    case ZX_T_REAL: return "REAL";
    case ZX_T_BOOL: return "BOOLEAN";
    case ZX_T_TEXT: return "TEXT";
    case ZX_T_TIMESTAMP: return "TIMESTAMP";
    case ZX_T_JSON: return "JSON";
    default: return NULL;
    }
}

const char *zx_fit_kind_name(zx_fit_kind k)
{
    return (unsigned)k < ZX_FIT__COUNT ? kind_name[k] : "unknown";
}

int zx_fit_json_quote(zx_buf *b, const char *s, size_t n)
{
    /* worst case: every byte becomes \u00XX */
    if (n > ((size_t)-1) / 6 - 4 || zx_buf_reserve(b, n * 6 + 2) < 0)
        return -1;
    char *o = b->p + b->len;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': *o++ = '\\'; *o++ = '"'; break;
        case '\\': *o++ = '\\'; *o++ = '\\'; break;
        case '\n': *o++ = '\\'; *o++ = 'n'; break;
        case '\r': *o++ = '\\'; *o++ = 'r'; break;
        case '\t': *o++ = '\\'; *o++ = 't'; break;
        case '\b': *o++ = '\\'; *o++ = 'b'; break;
        case '\f': *o++ = '\\'; *o++ = 'f'; break;
        default:
            if (c < 0x20 || c == 0x7f) {
                static const char hex[] = "0123456789abcdef";
                *o++ = '\\'; *o++ = 'u'; *o++ = '0'; *o++ = '0';
                *o++ = hex[c >> 4]; *o++ = hex[c & 15];
            } else {
                *o++ = (char)c;
            }
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->p);
    b->p[b->len] = 0;
    return 0;
}

/* Shortest %g text that reads back as d. */
static int fmt_real(char out[40], double d)
{
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(out, 40, "%.*g", prec, d);
        if (strtod(out, NULL) == d)
            break;
    }
    return n;
}

int zx_fit_json_text(const zx_value *v, zx_buf *b)
{
    char tmp[40];
    const char *s = v->s ? v->s : "";
    switch (v->type) {
    case ZX_T_INT:
        return zx_buf_put(b, tmp, (size_t)snprintf(tmp, sizeof(tmp), "%lld",
                                                   (long long)v->u.i));
    case ZX_T_REAL:
        if (!isfinite(v->u.d))
            return zx_buf_put(b, "null", 4);
        return zx_buf_put(b, tmp, (size_t)fmt_real(tmp, v->u.d));
    case ZX_T_BOOL:
        return v->u.b ? zx_buf_put(b, "true", 4) : zx_buf_put(b, "false", 5);
    case ZX_T_TEXT:
    case ZX_T_TIMESTAMP:
        return zx_fit_json_quote(b, s, v->len);
    case ZX_T_JSON:
        return zx_buf_put(b, s, v->len);
    default:
        return zx_buf_put(b, "null", 4);
    }
}

/* ---- numbers kept as text (rowset.h) ---------------------------------- */

typedef enum numtext {
    NT_BAD,       /* not exactly one JSON number literal */
    NT_INT,       /* an integer within int64: *i */
    NT_BELOW,     /* an integer below INT64_MIN (*d: its double, maybe inf) */
    NT_ABOVE,     /* an integer above INT64_MAX (*d likewise) */
    NT_REAL,      /* a real within double range: *d */
} numtext;

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}


/* What the literal s[0..n) is; s[n] must be NUL (rowset strings and fit
 * buffers are), else NT_BAD.  *d is set for every class but NT_BAD and
 * NT_INT; a real beyond double range is NT_REAL with *d infinite. */
static numtext numtext_class(const char *s, size_t n, int64_t *i, double *d)
{
    int is_int;
    if (!s || n == 0 || s[n] != '\0' || zx_jnum_end(s, n, 0, &is_int) != n)
        return NT_BAD;
    if (is_int) {
        int neg = s[0] == '-', big = 0;
        uint64_t m = 0;
        for (size_t k = (size_t)neg; k < n; k++) {
            unsigned dg = (unsigned)(s[k] - '0');
            if (m > (UINT64_MAX - dg) / 10) {
                big = 1;
                break;
            }
            m = m * 10 + dg;
        }
        if (!big && m <= (uint64_t)INT64_MAX + (uint64_t)neg) {
            *i = neg ? (int64_t)(0 - m) : (int64_t)m;
            return NT_INT;
        }
        *d = strtod(s, NULL);
        return neg ? NT_BELOW : NT_ABOVE;
    }
    char *end;
    *d = strtod(s, &end);
    return end == s + n ? NT_REAL : NT_BAD;
}

static int out_text_buf(zx_buf *buf, zx_fit_out *out)
{
    out->st = ZX_FIT_S_TEXT;
    out->s = buf->p;
    out->len = buf->len;
    return 1;
}

int zx_fit_value(zx_fit_kind k, const zx_value *v, zx_buf *buf, zx_fit_out *out)
{
    const char *s = v->s ? v->s : "";
    memset(out, 0, sizeof(*out));
    if (v->type == ZX_T_NULL)
        return 1;
    if (v->type >= ZX_T__COUNT)
        return 0;
    if (zx_value_is_number_text(v)) {
        int64_t i = 0;
        double d = 0;
        numtext c = numtext_class(v->s, v->len, &i, &d);
        if (c != NT_BAD) {
            if (c == NT_INT && (k == ZX_FIT_INTEGER || k == ZX_FIT_ANY)) {
                out->st = ZX_FIT_S_INT;
                out->i = i;
                return 1;
            }
            if (isinf(d) && k != ZX_FIT_TEXT)
                return 0; /* beyond double range: only TEXT keeps it */
            if (c != NT_INT && k == ZX_FIT_INTEGER)
                return 0; /* beyond int64, or a real */
            if (k == ZX_FIT_REAL || k == ZX_FIT_ANY) {
                out->st = ZX_FIT_S_REAL;
                out->d = c == NT_INT ? (double)i : d;
                return 1;
            }
            /* TEXT, JSON: the literal, below; BOOLEAN, TIMESTAMP: misfit */
        }
    }
    switch (k) {
    case ZX_FIT_INTEGER:
        if (v->type == ZX_T_INT) {
            out->st = ZX_FIT_S_INT;
            out->i = v->u.i;
            return 1;
        }
        if (v->type == ZX_T_REAL && isfinite(v->u.d) && v->u.d == trunc(v->u.d) &&
            v->u.d >= -9223372036854775808.0 && v->u.d < 9223372036854775808.0) {
            out->st = ZX_FIT_S_INT;
            out->i = (int64_t)v->u.d;
            return 1;
        }
        return 0;
    case ZX_FIT_REAL:
        if (v->type == ZX_T_INT || v->type == ZX_T_REAL) {
            out->st = ZX_FIT_S_REAL;
            out->d = v->type == ZX_T_INT ? (double)v->u.i : v->u.d;
            return 1;
        }
        return 0;
    case ZX_FIT_BOOLEAN:
        if (v->type != ZX_T_BOOL)
            return 0;
        out->st = ZX_FIT_S_INT;
        out->i = v->u.b ? 1 : 0;
        return 1;
    case ZX_FIT_TIMESTAMP:
        if (v->type == ZX_T_TEXT && ((v->len == 8 && memcmp(s, "infinity", 8) == 0) ||
                                     (v->len == 9 && memcmp(s, "-infinity", 9) == 0))) {
            /* Postgres' infinite timestamps (a CDC source sends them as
             * text): kept as that text, i = INT64_MAX / INT64_MIN for a
             * backend that sends timestamps in binary */
            out->st = ZX_FIT_S_TEXT;
            out->s = s;
            out->len = v->len;
            out->i = s[0] == '-' ? INT64_MIN : INT64_MAX;
            return 1;
        }
        if (v->type != ZX_T_TIMESTAMP)
            return 0;
        break; /* formatted below */
    case ZX_FIT_TEXT:
        if (v->type == ZX_T_TEXT || v->type == ZX_T_TIMESTAMP || v->type == ZX_T_JSON) {
            out->st = ZX_FIT_S_TEXT;
            out->s = s;
            out->len = v->len;
            return 1;
        }
        buf->len = 0;
        return zx_fit_json_text(v, buf) < 0 ? -1 : out_text_buf(buf, out);
    case ZX_FIT_JSON:
        if (v->type == ZX_T_JSON) {
            out->st = ZX_FIT_S_TEXT;
            out->s = s;
            out->len = v->len;
            return 1;
        }
        buf->len = 0;
        return zx_fit_json_text(v, buf) < 0 ? -1 : out_text_buf(buf, out);
    case ZX_FIT_ANY:
    default:
        switch (v->type) {
        case ZX_T_INT: out->st = ZX_FIT_S_INT; out->i = v->u.i; return 1;
        case ZX_T_REAL: out->st = ZX_FIT_S_REAL; out->d = v->u.d; return 1;
        case ZX_T_BOOL: out->st = ZX_FIT_S_INT; out->i = v->u.b ? 1 : 0; return 1;
        case ZX_T_TIMESTAMP: break; /* formatted below */
        default:
            out->st = ZX_FIT_S_TEXT;
            out->s = s;
            out->len = v->len;
            return 1;
        }
        break;
    }
    /* a timestamp, formatted in UTC with 6 fraction digits (and kept as
     * microseconds for a backend that sends it in binary) */
    buf->len = 0;
    if (zx_buf_reserve(buf, ZX_TS_BUFSZ) < 0)
        return -1;
    buf->len = zx_ts_format(v->u.i, buf->p);
    out->i = v->u.i;
    return out_text_buf(buf, out);
}

void zx_fit_reason(char *out, size_t outlen, const char *raw, size_t rawlen,
                   zx_type vt, const char *column, zx_fit_kind k)
{
    const char *vname = zx_type_name(vt);
    numtext c = NT_BAD;
    int64_t iv;
    double dv = 0;
    if (vt == ZX_T_JSON && rawlen > 0 && (raw[0] == '-' || is_digit(raw[0]))) {
        c = numtext_class(raw, rawlen, &iv, &dv);
        if (c != NT_BAD)
            vname = c == NT_REAL ? "real" : "integer";
    }
    size_t n = rawlen;
    const char *ell = "";
    if (n > 80) {
        n = 80;
        while (n > 0 && ((unsigned char)raw[n] & 0xc0) == 0x80)
            n--; /* do not cut a UTF-8 sequence */
        ell = "...";
    }
    if (k == ZX_FIT_INTEGER && c == NT_BELOW)
        snprintf(out, outlen, "integer %.*s%s is below the smallest INTEGER (%lld)", (int)n,
                 raw, ell, (long long)INT64_MIN);
    else if (k == ZX_FIT_INTEGER && c == NT_ABOVE)
        snprintf(out, outlen, "integer %.*s%s is above the largest INTEGER (%lld)", (int)n,
                 raw, ell, (long long)INT64_MAX);
    else if (c != NT_BAD && c != NT_INT && isinf(dv) && k != ZX_FIT_BOOLEAN &&
             k != ZX_FIT_TIMESTAMP)
        snprintf(out, outlen, "number %.*s%s is out of the range of REAL (-%.17g to %.17g)",
                 (int)n, raw, ell, DBL_MAX, DBL_MAX);
    else
        snprintf(out, outlen, "value %.*s%s (%s) does not fit column %s (%s)", (int)n, raw,
                 ell, vname, column, zx_fit_kind_name(k));
}
