/*
 * lake_part.c — partition transforms of a lake table (lake_part.h).
 */
#include "workers/destinations/lake/lake_part.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dcell.h"
#include "common/timefmt.h"
#include "common/util.h"

#define US_PER_HOUR 3600000000LL
#define US_PER_DAY (24 * US_PER_HOUR)

static const char *const names[] = {"identity", "year", "month", "day", "hour", "bucket",
                                    "truncate"};

/* Skip spaces. */
static const char *sp(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* A column name at s: [A-Za-z_][A-Za-z0-9_]* into out; the end, or NULL. */
static const char *ident(const char *s, char out[64])
{
    size_t n = 0;
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return NULL;
    while ((isalnum((unsigned char)s[n]) || s[n] == '_') && n < 63)
        n++;
    if (isalnum((unsigned char)s[n]) || s[n] == '_')
        return NULL;
    memcpy(out, s, n);
    out[n] = 0;
    return s + n;
}

/* A number 1..1000000 at s into *v; the end, or NULL. */
static const char *num(const char *s, int32_t *v)
{
    long x = 0;
    const char *p = s;
    while (*p >= '0' && *p <= '9' && x <= 1000000)
        x = x * 10 + (*p++ - '0');
    if (p == s || x < 1 || x > 1000000)
        return NULL;
    *v = (int32_t)x;
    return p;
}

int zx_part_parse(const char *spec, zx_part *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *s = sp(spec ? spec : "");
    char word[64];
    const char *e = ident(s, word);
    if (!e)
        goto bad;
    e = sp(e);
    if (!*e) {                            /* a column: identity */
        snprintf(out->col, sizeof(out->col), "%s", word);
        return 0;
    }
    int t = -1;
    for (int i = 0; i < 7; i++)
        if (!strcmp(word, names[i]))
            t = i;
    if (t < 0)
        goto bad;
    out->t = (zx_ptransform)t;
    int param = t == ZX_PT_BUCKET || t == ZX_PT_TRUNCATE;
    if (param && *e == '[') {             /* bucket[16](col) */
        if (!(e = num(sp(e + 1), &out->n)) || *(e = sp(e)) != ']')
            goto bad;
        e = sp(e + 1);
        param = 0;
    }
    if (*e != '(')
        goto bad;
    e = sp(e + 1);
    if (param) {                          /* bucket(16, col) */
        if (!(e = num(e, &out->n)) || *(e = sp(e)) != ',')
            goto bad;
        e = sp(e + 1);
    }
    if (!(e = ident(e, out->col)) || *(e = sp(e)) != ')' || *sp(e + 1))
        goto bad;
    if ((out->t == ZX_PT_BUCKET || out->t == ZX_PT_TRUNCATE) && !out->n)
        goto bad;
    return 0;
bad:
    return zx_seterr(err, errlen, "partition_by: '%.80s' is not a column or a transform: "
                     "col, identity(col), year(col), month(col), day(col), hour(col), "
                     "bucket[N](col) or truncate[W](col)", spec ? spec : "");
}

int zx_part_check(const zx_part *p, const zx_dcol *c, char *err, size_t errlen)
{
    zx_dtype t = c->type;
    int ok = 1;
    switch (p->t) {
    case ZX_PT_IDENTITY:
        ok = t == ZX_DT_INT64 || t == ZX_DT_TEXT || t == ZX_DT_DATE || t == ZX_DT_TIMESTAMP ||
             t == ZX_DT_BOOL || t == ZX_DT_BYTES;
        break;
    case ZX_PT_YEAR:
    case ZX_PT_MONTH:
    case ZX_PT_DAY:
        ok = t == ZX_DT_TIMESTAMP || t == ZX_DT_DATE;
        break;
    case ZX_PT_HOUR:
        ok = t == ZX_DT_TIMESTAMP;
        break;
    case ZX_PT_BUCKET:
        ok = t == ZX_DT_INT64 || t == ZX_DT_TEXT || t == ZX_DT_BYTES || t == ZX_DT_DATE ||
             t == ZX_DT_TIMESTAMP;
        break;
    case ZX_PT_TRUNCATE:
        ok = t == ZX_DT_INT64 || t == ZX_DT_TEXT;
        break;
    }
    if (ok)
        return 0;
    return zx_seterr(err, errlen, "partition_by: %s(%s): column %s is %s, which %s does not "
                     "take", names[p->t], p->col, c->name, zx_dtype_name(t), names[p->t]);
}

zx_pkind zx_part_result(const zx_part *p, const zx_dcol *c)
{
    switch (p->t) {
    case ZX_PT_YEAR:
    case ZX_PT_MONTH:
    case ZX_PT_HOUR:
    case ZX_PT_BUCKET:
        return ZX_PK_INT;
    case ZX_PT_DAY:
        return ZX_PK_DATE;
    default:
        break;
    }
    switch (c->type) {
    case ZX_DT_TEXT: return ZX_PK_STRING;
    case ZX_DT_BOOL: return ZX_PK_BOOL;
    case ZX_DT_DOUBLE: return ZX_PK_DOUBLE;
    case ZX_DT_BYTES: return ZX_PK_BINARY;
    case ZX_DT_DATE: return ZX_PK_DATE;
    case ZX_DT_TIMESTAMP: return ZX_PK_TIMESTAMP;
    case ZX_DT_DECIMAL: return ZX_PK_DECIMAL;
    default: return ZX_PK_LONG;
    }
}

const char *zx_part_transform(const zx_part *p, char buf[32])
{
    if (p->t == ZX_PT_BUCKET || p->t == ZX_PT_TRUNCATE)
        snprintf(buf, 32, "%s[%d]", names[p->t], (int)p->n);
    else
        snprintf(buf, 32, "%s", names[p->t]);
    return buf;
}

const char *zx_part_field_name(const zx_part *p, char buf[96])
{
    static const char *const suffix[] = {"", "_year", "_month", "_day", "_hour", "_bucket",
                                         "_trunc"};
    snprintf(buf, 96, "%s%s", p->col, suffix[p->t]);
    return buf;
}

uint32_t zx_murmur3_32(const void *data, size_t n)
{
    const uint8_t *p = data;
    uint32_t h = 0, k;
    const uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
    size_t i;
    for (i = 0; i + 4 <= n; i += 4) {
        k = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 |
            (uint32_t)p[i + 3] << 24;
        k *= c1;
        k = (k << 15) | (k >> 17);
        k *= c2;
        h ^= k;
        h = (h << 13) | (h >> 19);
        h = h * 5 + 0xe6546b64;
    }
    k = 0;
    switch (n & 3) {
    case 3: k ^= (uint32_t)p[i + 2] << 16; /* fall through */
    case 2: k ^= (uint32_t)p[i + 1] << 8;  /* fall through */
    case 1:
        k ^= p[i];
        k *= c1;
        k = (k << 15) | (k >> 17);
        k *= c2;
        h ^= k;
    }
    h ^= (uint32_t)n;
    h ^= h >> 16;
    h *= 0x85ebca6b;
    h ^= h >> 13;
    h *= 0xc2b2ae35;
    h ^= h >> 16;
    return h;
}

static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t floormod(int64_t a, int64_t b)
{
    int64_t m = a % b;
    return m < 0 ? m + b : m;
}

static uint32_t hash_long(int64_t v)
{
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)((uint64_t)v >> (8 * i));
    return zx_murmur3_32(le, 8);
}

/* The minimal big-endian two's complement bytes of v into out: length. */
static size_t decimal_be(int64_t v, uint8_t out[8])
{
    uint8_t be[8];
    for (int i = 0; i < 8; i++)
        be[i] = (uint8_t)((uint64_t)v >> (8 * (7 - i)));
    size_t s = 0;
    while (s < 7 && ((be[s] == 0 && !(be[s + 1] & 0x80)) ||
                     (be[s] == 0xff && (be[s + 1] & 0x80))))
        s++;
    memcpy(out, be + s, 8 - s);
    return 8 - s;
}

int zx_part_value(const zx_part *p, const zx_dcol *c, const zx_value *v, zx_buf *scratch,
                  zx_pval *out)
{
    memset(out, 0, sizeof(*out));
    zx_dc_target t = zx_dc_target_file(c);
    zx_dc_out o;
    int rc = zx_dc_convert(&t, v, scratch, &o);
    if (rc < 0)
        return -1;
    if (rc == 0 || o.null) {
        out->is_null = 1;
        return 0;
    }
    int64_t x = c->type == ZX_DT_DECIMAL ? (int64_t)o.dec : o.i;
    switch (p->t) {
    case ZX_PT_IDENTITY:
        if (c->type == ZX_DT_TEXT || c->type == ZX_DT_BYTES) {
            out->s = o.s;
            out->len = o.len;
        } else if (c->type == ZX_DT_DOUBLE) {
            out->d = o.d;
        } else {
            out->i = x;
        }
        return 0;
    case ZX_PT_YEAR:
    case ZX_PT_MONTH:
    case ZX_PT_DAY: {
        int64_t days = c->type == ZX_DT_DATE ? o.i : floordiv(o.i, US_PER_DAY);
        if (p->t == ZX_PT_DAY) {
            out->i = days;
            return 0;
        }
        int64_t y;
        unsigned m, d;
        zx_civil_from_days(days, &y, &m, &d);
        out->i = p->t == ZX_PT_YEAR ? y - 1970 : (y - 1970) * 12 + (int64_t)m - 1;
        return 0;
    }
    case ZX_PT_HOUR:
        out->i = floordiv(o.i, US_PER_HOUR);
        return 0;
    case ZX_PT_BUCKET: {
        uint32_t h;
        if (c->type == ZX_DT_TEXT || c->type == ZX_DT_BYTES)
            h = zx_murmur3_32(o.s, o.len);
        else if (c->type == ZX_DT_DECIMAL) {
            uint8_t be[8];
            size_t n = decimal_be(x, be);
            h = zx_murmur3_32(be, n);
        } else
            h = hash_long(x);
        out->i = (int64_t)((h & 0x7fffffffu) % (uint32_t)p->n);
        return 0;
    }
    case ZX_PT_TRUNCATE:
        if (c->type == ZX_DT_TEXT) {
            size_t n = 0, chars = 0;
            while (n < o.len && chars < (size_t)p->n) {
                unsigned char b = (unsigned char)o.s[n];
                n += b < 0x80 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
                chars++;
            }
            out->s = o.s;
            out->len = n > o.len ? o.len : n;
        } else {
            out->i = x - floormod(x, p->n);
        }
        return 0;
    }
    return 0;
}

int zx_part_text(zx_pkind k, const zx_pval *v, zx_buf *b)
{
    zx_buf_reset(b);
    if (v->is_null)
        return 1;
    char t[ZX_TS_BUFSZ + 8];
    switch (k) {
    case ZX_PK_STRING:
    case ZX_PK_BINARY:
        return zx_buf_put(b, v->s ? v->s : "", v->len) < 0 ? -1 : 0;
    case ZX_PK_DATE: {
        int64_t y;
        unsigned m, d;
        zx_civil_from_days(v->i, &y, &m, &d);
        return zx_buf_printf(b, "%04lld-%02u-%02u", (long long)y, m, d) < 0 ? -1 : 0;
    }
    case ZX_PK_TIMESTAMP:
        zx_ts_format(v->i, t);             /* 2024-05-01T10:00:00.000000Z */
        if (strlen(t) >= 20) {
            t[10] = ' ';
            t[strlen(t) - 1] = 0;          /* Delta: "2024-05-01 10:00:00.000000" */
        }
        return zx_buf_printf(b, "%s", t) < 0 ? -1 : 0;
    case ZX_PK_BOOL:
        return zx_buf_printf(b, "%s", v->i ? "true" : "false") < 0 ? -1 : 0;
    case ZX_PK_DOUBLE:
        return zx_buf_printf(b, "%.17g", v->d) < 0 ? -1 : 0;
    default:
        return zx_buf_printf(b, "%lld", (long long)v->i) < 0 ? -1 : 0;
    }
}
