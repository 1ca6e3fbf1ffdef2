/*
 * json_fast.c — single-pass JSON / NDJSON to rowset parser (json_fast.h).
 *
 * Hostile bytes arrive here first.  Every read is bounded by the end of the
 * current document (`e`), recursion by ZX_JSON_MAX_DEPTH, and every scratch
 * buffer is a fixed-size array in the stack context; any doubt ends in -1
 * and jansson (json_rows.c) decides.  It must never write anything into the
 * rowset that zx_json_rows_parse would not write for the same input.
 *
 * jansson's behaviour reproduced here (checked by tests/unit/test_json_fast.c
 * against the real thing): whitespace is space, tab, CR, LF; numbers follow
 * RFC 8259 (no leading zeros); integers are strtoll, reals strtod; strings
 * are strict UTF-8 (no overlongs, no UTF-8-encoded surrogates, <= U+10FFFF)
 * without raw control bytes; "\u0000" is refused; nested values are dumped
 * compactly with only '"', '\\' and bytes < 0x20 escaped (\b \f \n \r \t or
 * \u00XX in upper-case hex), integers as %lld and reals as %.17g with ".0"
 * added when there is no '.' or 'e' and the exponent's '+' and leading zeros
 * removed.
 */
#include "common/json_fast.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/colname.h"
#include "common/hex.h"
#include "common/json_scan.h"
#include "common/timefmt.h"

#define NEST_MAX (32 * 1024)    /* compact text of one nested value */
#define KEYS_MAX 1000           /* keys of one event object */
#define KBUF_MAX 4096           /* decoded escaped keys of one event object */
#define NKEYS_MAX 256           /* keys of the open nested objects */
#define NUM_MAX 120             /* characters of a number */
#define KC_SIZE 128             /* key cache entries (power of two) */

typedef struct span {
    const char *p;
    uint32_t len;
} span;

typedef struct kcache {        /* raw (unescaped) key -> base column */
    const char *key;           /* in the body; NULL = empty slot */
    uint32_t len, col;
} kcache;

typedef struct fx {
    zx_rowset *rs;
    uint32_t gen;              /* current event object's stamp */
    uint32_t nkeys;            /* keys[] of the current event object */
    size_t kbuf_used;
    size_t olen;               /* bytes in out[] */
    uint32_t nktop;            /* nkey[] used by open nested objects */
    span keys[KEYS_MAX];
    span nkey[NKEYS_MAX];      /* emitted nested keys (in out[]) */
    kcache kc[KC_SIZE];
    uint32_t stamp[ZX_JSON_MAX_COLUMNS];
    char kbuf[KBUF_MAX];
    char out[NEST_MAX];
} fx;

/* ---- bytes -------------------------------------------------------------- */

static inline int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static inline const char *skip_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* ---- numbers ------------------------------------------------------------ */

static const double pow10_tab[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* Number at p (RFC 8259 grammar) into *v (INT or REAL).  Returns its end,
 * or NULL when invalid or declined (beyond int64 / double, too long). */
static const char *scan_number(const char *p, const char *e, zx_value *v)
{
    const char *s = p;
    int neg = 0, is_int = 1, slow = 0;
    uint64_t m = 0;
    int nd = 0;                 /* significant digits in m */
    long ex = 0;                /* decimal exponent applied to m */
    if (*p == '-') {
        neg = 1;
        if (++p >= e)
            return NULL;
    }
    if (*p == '0') {
        p++;
    } else if (is_digit(*p)) {
        while (p < e && is_digit(*p)) {
            if (nd < 19)
                m = m * 10 + (uint64_t)(*p - '0');
            else
                slow = 1;
            nd++;
            p++;
        }
    } else {
        return NULL;
    }
    if (p < e && *p == '.') {
        is_int = 0;
        if (++p >= e || !is_digit(*p))
            return NULL;
        while (p < e && is_digit(*p)) {
            if (m == 0 && *p == '0') {
                ex--;
            } else if (nd < 19) {
                m = m * 10 + (uint64_t)(*p - '0');
                nd++;
                ex--;
            } else {
                slow = 1;
            }
            p++;
        }
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        long x = 0;
        int xneg = 0;
        is_int = 0;
        if (++p < e && (*p == '+' || *p == '-'))
            xneg = *p++ == '-';
        if (p >= e || !is_digit(*p))
            return NULL;
        while (p < e && is_digit(*p)) {
            if (x < 100000)
                x = x * 10 + (*p - '0');
            else
                slow = 1;
            p++;
        }
        ex += xneg ? -x : x;
    }
    if (is_int) {
        if (nd > 19 || (nd == 19 && m > (uint64_t)INT64_MAX + (uint64_t)neg))
            return NULL;                        /* beyond int64: jansson */
        v->type = ZX_T_INT;
        v->u.i = neg ? (int64_t)(0 - m) : (int64_t)m;
        return p;
    }
    double d;
    if (m == 0 && !slow) {
        d = 0.0;
    } else if (!slow && m <= (UINT64_C(1) << 53) && ex >= -22 && ex <= 22) {
        d = (double)m;                          /* both exact: one rounding */
        d = ex >= 0 ? d * pow10_tab[ex] : d / pow10_tab[-ex];
    } else {
        char buf[NUM_MAX + 1];
        size_t n = (size_t)(p - s);
        if (n > NUM_MAX)
            return NULL;
        memcpy(buf, s, n);
        buf[n] = '\0';
        d = strtod(buf, NULL);
        if (isinf(d))
            return NULL;                        /* overflow: jansson */
        neg = 0;
    }
    v->type = ZX_T_REAL;
    v->u.d = neg ? -d : d;
    return p;
}

/* ---- nested values: compact text in x->out ------------------------------ */

#define ROOM(x, k) ((size_t)(k) <= NEST_MAX - (x)->olen)

static const char *emit_value(fx *x, const char *p, const char *e, int level);

static const char *emit_string(fx *x, const char *p, const char *e)
{
    int esc = 0;
    const char *q = zx_js_scan_str(p + 1, e, &esc);
    size_t n = q ? (size_t)(q - p) + 1 : 0;
    if (!q || !ROOM(x, n))
        return NULL;
    if (!esc) {
        memcpy(x->out + x->olen, p, n);
        x->olen += n;
        return q + 1;
    }
    char *o = x->out + x->olen;
    long k = zx_js_decode_str(p + 1, q, o + 1, 1);
    if (k < 0)
        return NULL;
    o[0] = '"';
    o[k + 1] = '"';
    x->olen += (size_t)k + 2;
    return q + 1;
}

static const char *emit_number(fx *x, const char *p, const char *e)
{
    zx_value v;
    const char *q = scan_number(p, e, &v);
    if (!q)
        return NULL;
    if (v.type == ZX_T_INT) {
        size_t n = (size_t)(q - p);
        if (v.u.i == 0) {                        /* "-0" is written "0" */
            p = "0";
            n = 1;
        }
        if (!ROOM(x, n))
            return NULL;
        memcpy(x->out + x->olen, p, n);
        x->olen += n;
        return q;
    }
    char b[40];
    int n = snprintf(b, sizeof(b) - 3, "%.17g", v.u.d);
    if (n <= 0 || (size_t)n >= sizeof(b) - 3)
        return NULL;
    char *ex = strchr(b, 'e');
    if (!ex && !strchr(b, '.')) {
        memcpy(b + n, ".0", 3);
        n += 2;
    } else if (ex) {
        char *st = ex + 1, *en = ex + 2;
        if (*st == '-')
            st++;
        while (*en == '0')
            en++;
        if (en != st) {
            memmove(st, en, (size_t)(b + n - en) + 1);
            n -= (int)(en - st);
        }
    }
    if (!ROOM(x, n))
        return NULL;
    memcpy(x->out + x->olen, b, (size_t)n);
    x->olen += (size_t)n;
    return q;
}

static const char *emit_container(fx *x, const char *p, const char *e, int level)
{
    int obj = *p == '{';
    char close = obj ? '}' : ']';
    uint32_t base = x->nktop;
    if (level > ZX_JSON_MAX_DEPTH || !ROOM(x, 2))
        return NULL;
    x->out[x->olen++] = *p;
    p = skip_ws(p + 1, e);
    if (p < e && *p == close)
        goto done;
    for (;;) {
        if (obj) {
            if (p >= e || *p != '"' || x->nktop == NKEYS_MAX)
                return NULL;
            size_t k0 = x->olen;
            if (!(p = emit_string(x, p, e)))
                return NULL;
            span key = {x->out + k0, (uint32_t)(x->olen - k0)};
            for (uint32_t i = base; i < x->nktop; i++)   /* repeated key */
                if (x->nkey[i].len == key.len && memcmp(x->nkey[i].p, key.p, key.len) == 0)
                    return NULL;
            x->nkey[x->nktop++] = key;
            p = skip_ws(p, e);
            if (p >= e || *p != ':' || !ROOM(x, 1))
                return NULL;
            x->out[x->olen++] = ':';
            p = skip_ws(p + 1, e);
        }
        if (!(p = emit_value(x, p, e, level + 1)))
            return NULL;
        p = skip_ws(p, e);
        if (p < e && *p == ',') {
            if (!ROOM(x, 1))
                return NULL;
            x->out[x->olen++] = ',';
            p = skip_ws(p + 1, e);
            continue;
        }
        if (p < e && *p == close)
            break;
        return NULL;
    }
done:
    if (!ROOM(x, 1))
        return NULL;
    x->out[x->olen++] = close;
    x->nktop = base;
    return p + 1;
}

static const char *literal(const char *p, const char *e, const char *word, size_t n)
{
    return (size_t)(e - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

static const char *emit_value(fx *x, const char *p, const char *e, int level)
{
    const char *q;
    if (p >= e)
        return NULL;
    switch (*p) {
    case '{':
    case '[':
        return emit_container(x, p, e, level);
    case '"':
        return emit_string(x, p, e);
    case 't': q = literal(p, e, "true", 4); break;
    case 'f': q = literal(p, e, "false", 5); break;
    case 'n': q = literal(p, e, "null", 4); break;
    default:
        return *p == '-' || is_digit(*p) ? emit_number(x, p, e) : NULL;
    }
    if (!q || !ROOM(x, q - p))
        return NULL;
    memcpy(x->out + x->olen, p, (size_t)(q - p));
    x->olen += (size_t)(q - p);
    return q;
}

/* ---- one event ---------------------------------------------------------- */

/* Column for a normalised name; -1 beyond the column limit or on ENOMEM. */
static int64_t column_named(fx *x, const char *name, size_t n)
{
    zx_rowset *rs = x->rs;
    int64_t col = zx_rowset_find_column(rs, name, n);
    if (col < 0) {
        if (rs->ncols >= ZX_JSON_MAX_COLUMNS)
            return -1;
        col = zx_rowset_column(rs, name, n, ZX_T_NULL);
        if (col >= 0 && col < ZX_JSON_MAX_COLUMNS)
            x->stamp[col] = 0;
    }
    return col < ZX_JSON_MAX_COLUMNS ? col : -1;
}

static uint32_t key_hash(const char *k, size_t n)
{
    uint64_t a = 0, b = 0;
    if (n >= 8) {
        memcpy(&a, k, 8);
        memcpy(&b, k + n - 8, 8);
    } else {
        for (size_t i = 0; i < n; i++)
            a = a << 8 | (unsigned char)k[i];
    }
    uint64_t h = (a ^ (b << 29 | b >> 35) ^ n) * UINT64_C(0x9E3779B97F4A7C15);
    return (uint32_t)(h >> 57) & (KC_SIZE - 1);
}

/* Column of the decoded key (k, n) in the current event object: the
 * normalised name, or name_2, name_3 ... when taken in this object, as
 * json_rows.c does.  `raw`: k is unescaped text in the body (cacheable).
 * -1 to decline (repeated key, limits, ENOMEM). */
static int64_t column_for(fx *x, const char *k, size_t n, int raw)
{
    char name[ZX_COLNAME_MAX + 1], buf[ZX_COLNAME_MAX + 1];
    kcache *slot = NULL;
    int64_t col = -1;
    size_t nl = 0;
    if (raw && n > 0) {
        slot = &x->kc[key_hash(k, n)];
        if (slot->key && slot->len == n && memcmp(slot->key, k, n) == 0)
            col = slot->col;
    }
    if (col < 0) {
        nl = zx_colname_normalise(k, n, name);
        if ((col = column_named(x, name, nl)) < 0)
            return -1;
        if (slot) {
            slot->key = k;
            slot->len = (uint32_t)n;
            slot->col = (uint32_t)col;
        }
    }
    if (x->stamp[col] != x->gen) {
        x->stamp[col] = x->gen;
        return col;
    }
    /* taken in this object: a repeated key (declined) or a collision */
    for (uint32_t i = 0; i + 1 < x->nkeys; i++)
        if (x->keys[i].len == n && memcmp(x->keys[i].p, k, n) == 0)
            return -1;
    nl = zx_colname_normalise(k, n, name);
    for (unsigned s = 2;; s++) {
        size_t bl = zx_colname_suffix(name, nl, s, buf);
        if ((col = column_named(x, buf, bl)) < 0)
            return -1;
        if (x->stamp[col] != x->gen) {
            x->stamp[col] = x->gen;
            return col;
        }
    }
}

/* String value [s, q) (q = closing quote) into *v: TIMESTAMP or TEXT. */
static int string_value(fx *x, const char *s, const char *q, int esc, zx_value *v)
{
    size_t n = (size_t)(q - s);
    char *d;
    if (n > UINT32_MAX)
        return -1;
    if (!esc) {
        if (!(d = zx_rowset_strdup(x->rs, s, n)))
            return -1;
    } else {
        long k;
        if (!(d = zx_rowset_alloc(x->rs, n + 1)) || (k = zx_js_decode_str(s, q, d, 0)) < 0)
            return -1;
        n = (size_t)k;
        d[n] = '\0';
    }
    v->type = zx_rfc3339_parse(d, n, &v->u.i) ? ZX_T_TIMESTAMP : ZX_T_TEXT;
    v->s = d;
    v->len = (uint32_t)n;
    return 0;
}

/* Value at p into *v; returns its end or NULL. */
static const char *event_value(fx *x, const char *p, const char *e, zx_value *v)
{
    memset(v, 0, sizeof(*v));
    if (p >= e)
        return NULL;
    switch (*p) {
    case '"': {
        int esc = 0;
        const char *q = zx_js_scan_str(p + 1, e, &esc);
        if (!q || string_value(x, p + 1, q, esc, v) < 0)
            return NULL;
        return q + 1;
    }
    case '{':
    case '[': {
        x->olen = 0;
        x->nktop = 0;
        const char *q = emit_container(x, p, e, 2);
        if (!q || !(v->s = zx_rowset_strdup(x->rs, x->out, x->olen)))
            return NULL;
        v->type = ZX_T_JSON;
        v->len = (uint32_t)x->olen;
        return q;
    }
    case 't':
        v->type = ZX_T_BOOL;
        v->u.b = 1;
        return literal(p, e, "true", 4);
    case 'f':
        v->type = ZX_T_BOOL;
        return literal(p, e, "false", 5);
    case 'n':
        return literal(p, e, "null", 4);
    default:
        return *p == '-' || is_digit(*p) ? scan_number(p, e, v) : NULL;
    }
}

/* Event object at p ('{') as one row; returns its end or NULL. */
static const char *event(fx *x, const char *p, const char *e)
{
    zx_rowset *rs = x->rs;
    if (++x->gen == 0) {
        memset(x->stamp, 0, sizeof(x->stamp));
        x->gen = 1;
    }
    x->nkeys = 0;
    x->kbuf_used = 0;
    if (zx_rowset_begin_row(rs) < 0)
        return NULL;
    p = skip_ws(p + 1, e);
    if (p < e && *p == '}')
        goto done;
    for (;;) {
        int esc = 0;
        if (p >= e || *p != '"' || x->nkeys == KEYS_MAX)
            goto fail;
        const char *ks = p + 1, *q = zx_js_scan_str(ks, e, &esc);
        if (!q || (size_t)(q - ks) > UINT32_MAX)
            goto fail;
        span key = {ks, (uint32_t)(q - ks)};
        if (esc) {
            long k;
            if ((size_t)(q - ks) > KBUF_MAX - x->kbuf_used ||
                (k = zx_js_decode_str(ks, q, x->kbuf + x->kbuf_used, 0)) < 0)
                goto fail;
            key.p = x->kbuf + x->kbuf_used;
            key.len = (uint32_t)k;
            x->kbuf_used += (size_t)k;
        }
        x->keys[x->nkeys++] = key;
        p = skip_ws(q + 1, e);
        if (p >= e || *p != ':')
            goto fail;
        p = skip_ws(p + 1, e);
        zx_value v;
        int64_t col = column_for(x, key.p, key.len, !esc);
        if (col < 0 || !(p = event_value(x, p, e, &v)) ||
            zx_rowset_add(rs, (uint32_t)col, &v) < 0)
            goto fail;
        p = skip_ws(p, e);
        if (p < e && *p == ',') {
            p = skip_ws(p + 1, e);
            continue;
        }
        if (p < e && *p == '}')
            break;
        goto fail;
    }
done:
    zx_rowset_end_row(rs);
    return p + 1;
fail:
    zx_rowset_abort_row(rs);
    return NULL;
}

/* ---- the two body formats ----------------------------------------------- */

static int parse_json(fx *x, const char *p, const char *e)
{
    p = skip_ws(p, e);
    if (p < e && *p == '{') {
        p = event(x, p, e);
    } else if (p < e && *p == '[') {
        p = skip_ws(p + 1, e);
        if (p < e && *p == ']') {
            p++;
        } else {
            for (;;) {
                if (p >= e || *p != '{' || !(p = event(x, p, e)))
                    return -1;
                p = skip_ws(p, e);
                if (p < e && *p == ',') {
                    p = skip_ws(p + 1, e);
                    continue;
                }
                if (p < e && *p == ']') {
                    p++;
                    break;
                }
                return -1;
            }
        }
    } else {
        return -1;
    }
    return p && skip_ws(p, e) == e ? 0 : -1;
}

static int parse_ndjson(fx *x, const char *body, const char *end)
{
    int any = 0;
    for (const char *p = body; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        p = skip_ws(p, e);
        if (p < e) {
            any = 1;
            if (*p != '{' || !(p = event(x, p, e)) || skip_ws(p, e) != e)
                return -1;
        }
        p = e + 1;
    }
    return any ? 0 : -1;
}

int zx_json_fast_parse(const char *body, size_t len, zx_body_format fmt,
                       zx_rowset *rs)
{
    fx x;
    uint32_t before = rs->nrows;
    uint32_t nc = rs->ncols < ZX_JSON_MAX_COLUMNS ? rs->ncols : ZX_JSON_MAX_COLUMNS;
    int rc;
    if (len == 0)
        return -1;
    x.rs = rs;
    x.gen = 0;
    x.kbuf_used = 0;
    x.olen = 0;
    x.nktop = 0;
    memset(x.stamp, 0, nc * sizeof(x.stamp[0]));
    memset(x.kc, 0, sizeof(x.kc));
    rc = fmt == ZX_BODY_NDJSON ? parse_ndjson(&x, body, body + len)
                               : parse_json(&x, body, body + len);
    if (rc < 0) {
        zx_rowset_abort_row(rs);
        return -1;
    }
    return (int)(rs->nrows - before);
}

int zx_json_message_rows(const char *p, size_t len, zx_body_format fmt, zx_rowset *rs,
                         const zx_rowset_mark *mk, zx_json_err *err)
{
    err->code = ZX_JSON_E_NONE;
    err->msg[0] = '\0';
    int n = len ? zx_json_fast_parse(p, len, fmt, rs) : -1;
    if (n >= 0)
        return n;
    zx_rowset_truncate(rs, mk);
    if (!len) {
        err->code = ZX_JSON_E_EMPTY;
        snprintf(err->msg, sizeof(err->msg), "empty message");
        return -1;
    }
    n = zx_json_rows_parse(p, len, fmt, rs, err);
    if (n < 0)
        zx_rowset_truncate(rs, mk);
    return n;
}

void zx_json_message_reason(const zx_json_err *e, char *out, size_t n)
{
    static const char body_is[] = "the body is ";
    size_t skip = strlen(e->msg) >= sizeof(body_is) - 1 ? sizeof(body_is) - 1 : 0;
    if (e->code == ZX_JSON_E_NONE || !e->msg[0])
        snprintf(out, n, "not JSON");
    else if (e->code == ZX_JSON_E_EMPTY)
        snprintf(out, n, "empty message");
    else if (e->code == ZX_JSON_E_BODY_SHAPE)   /* "the body is a string; ..." */
        snprintf(out, n, "the message is %s", e->msg + skip);
    else if (e->code == ZX_JSON_E_SYNTAX)
        snprintf(out, n, "not JSON: %s", e->msg);
    else
        snprintf(out, n, "%s", e->msg);
}
