/*
 * dest_pg_copy.c — the COPY data the Postgres destination sends (binary,
 * or text when a column's type has no binary form zx writes), and the key
 * sets it uses to find keys a run sends twice.  See dest_pg_int.h.
 *
 * Binary saves the server parsing numbers and timestamps: measured with
 * psql \copy of 1,000,000 rows (bigint key, text, double, timestamptz,
 * boolean) into a table with a primary key, 1.8-2.4 s binary against
 * 3.5-4.6 s text on the 2-core test machine.  numeric has a binary form
 * too, but zx sends it as text (its literal, exactly as given), so a table
 * with a numeric column is sent in text format.
 *
 * It must never: send a value its column would refuse (every value goes
 * through zx_dc_convert first), or a text value with a NUL byte.
 */
#include "workers/destinations/postgres/dest_pg_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timefmt.h"

#define PG_EPOCH_US 946684800000000LL   /* 2000-01-01 in µs since 1970 */
#define PG_EPOCH_DAYS 10957
#define FIELD_MAX 0x3FFFFFFFu           /* 1 GB: the most a field can hold */

/* Postgres type oids (pg_type.dat; fixed since the types exist) */
enum {
    OID_BOOL = 16, OID_BYTEA = 17, OID_INT8 = 20, OID_INT2 = 21, OID_INT4 = 23,
    OID_TEXT = 25, OID_JSON = 114, OID_FLOAT4 = 700, OID_FLOAT8 = 701, OID_BPCHAR = 1042,
    OID_VARCHAR = 1043, OID_DATE = 1082, OID_TIMESTAMP = 1114, OID_TIMESTAMPTZ = 1184,
    OID_NUMERIC = 1700, OID_JSONB = 3802
};

/* An integer column of range min..max. */
static zx_pg_col int_col(int64_t min, int64_t max, uint8_t bin)
{
    zx_pg_col c;
    memset(&c, 0, sizeof(c));
    c.t = zx_dc_target_of(ZX_DT_INT64, 0, 0);
    c.t.imin = min;
    c.t.imax = max;
    c.bin = bin;
    return c;
}

zx_pg_col zx_pg_col_of(uint32_t typoid, int32_t typmod)
{
    zx_pg_col c;
    memset(&c, 0, sizeof(c));
    switch (typoid) {
    case OID_INT8: c = int_col(INT64_MIN, INT64_MAX, PGB_INT8); break;
    case OID_INT4: c = int_col(INT32_MIN, INT32_MAX, PGB_INT4); break;
    case OID_INT2: c = int_col(INT16_MIN, INT16_MAX, PGB_INT2); break;
    case OID_FLOAT8: c.t = zx_dc_target_of(ZX_DT_DOUBLE, 0, 0); c.bin = PGB_FLOAT8; break;
    case OID_FLOAT4:
        c.t = zx_dc_target_of(ZX_DT_DOUBLE, 0, 0);
        c.t.float4 = 1;
        c.bin = PGB_FLOAT4;
        break;
    case OID_BOOL: c.t = zx_dc_target_of(ZX_DT_BOOL, 0, 0); c.bin = PGB_BOOL; break;
    case OID_TEXT:
    case OID_VARCHAR:
    case OID_BPCHAR:
        c.t = zx_dc_target_of(ZX_DT_TEXT, 0, 0);
        if (typoid != OID_TEXT && typmod >= 4)
            c.t.max_chars = typmod - 4;       /* VARHDRSZ */
        c.bin = PGB_RAW;
        break;
    case OID_TIMESTAMPTZ:
    case OID_TIMESTAMP:
        c.t = zx_dc_target_of(ZX_DT_TIMESTAMP, 0, 0);
        c.bin = PGB_TS;
        break;
    case OID_DATE: c.t = zx_dc_target_of(ZX_DT_DATE, 0, 0); c.bin = PGB_DATE; break;
    case OID_NUMERIC:
        c.t = zx_dc_target_of(ZX_DT_DECIMAL, 0, 0);
        if (typmod >= 4) {
            int32_t m = typmod - 4;
            c.t.precision = (m >> 16) & 0xffff;
            c.t.scale = ((m & 0x7ff) ^ 1024) - 1024;  /* 11-bit signed (Postgres 15) */
        }
        c.bin = PGB_NONE;
        break;
    case OID_JSONB: c.t = zx_dc_target_of(ZX_DT_JSON, 0, 0); c.bin = PGB_JSONB; break;
    case OID_JSON:
        c.t = zx_dc_target_of(ZX_DT_JSON, 0, 0);
        c.t.nul_ok = 1;                        /* json keeps its text */
        c.bin = PGB_RAW;
        break;
    case OID_BYTEA: c.t = zx_dc_target_of(ZX_DT_BYTES, 0, 0); c.bin = PGB_RAW; break;
    default:
        c.t = zx_dc_target_of(ZX_DT_TEXT, 0, 0);
        c.t.other = 1;
        c.bin = PGB_NONE;
        break;
    }
    return c;
}

/* ---- binary -------------------------------------------------------- */

static void be(unsigned char *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

int zx_pg_copy_bin_header(zx_buf *out)
{
    static const unsigned char h[19] = { 'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xff, '\r', '\n', 0,
                                         0, 0, 0, 0, 0, 0, 0, 0 };
    return zx_buf_put(out, h, sizeof(h));
}

int zx_pg_copy_bin_trailer(zx_buf *out)
{
    static const unsigned char t[2] = { 0xff, 0xff };
    return zx_buf_put(out, t, sizeof(t));
}

static int put_bin(zx_buf *out, const zx_pg_col *c, const zx_dc_out *o)
{
    unsigned char b[16];
    size_t n;
    if (o->null) {
        be(b, 0xffffffffu, 4);
        return zx_buf_put(out, b, 4);
    }
    switch (c->bin) {
    case PGB_INT8: be(b + 4, (uint64_t)o->i, 8); n = 8; break;
    case PGB_INT4: be(b + 4, (uint64_t)(uint32_t)(int32_t)o->i, 4); n = 4; break;
    case PGB_INT2: be(b + 4, (uint64_t)(uint16_t)(int16_t)o->i, 2); n = 2; break;
    case PGB_FLOAT8: {
        uint64_t u;
        memcpy(&u, &o->d, 8);
        be(b + 4, u, 8);
        n = 8;
        break;
    }
    case PGB_FLOAT4: {
        float f = (float)o->d;
        uint32_t u;
        memcpy(&u, &f, 4);
        be(b + 4, u, 4);
        n = 4;
        break;
    }
    case PGB_BOOL: b[4] = o->i ? 1 : 0; n = 1; break;
    case PGB_TS: be(b + 4, (uint64_t)(o->i - PG_EPOCH_US), 8); n = 8; break;
    case PGB_DATE:      /* o->i: days since 1970-01-01, years 1..9999 */
        be(b + 4, (uint64_t)(uint32_t)(int32_t)(o->i - PG_EPOCH_DAYS), 4);
        n = 4;
        break;
    case PGB_JSONB:
        be(b, o->len + 1, 4);
        b[4] = 1;
        if (zx_buf_put(out, b, 5) < 0)
            return -1;
        return zx_buf_put(out, o->s, o->len);
    default:   /* PGB_RAW */
        be(b, o->len, 4);
        if (zx_buf_put(out, b, 4) < 0)
            return -1;
        return zx_buf_put(out, o->s, o->len);
    }
    be(b, n, 4);
    return zx_buf_put(out, b, n + 4);
}

/* ---- text ---------------------------------------------------------- */

/* s as COPY text: backslash, newline, carriage return and tab escaped. */
static int put_escaped(zx_buf *out, const char *s, size_t n)
{
    if (n > (SIZE_MAX - 16) / 2 || zx_buf_reserve(out, 2 * n) < 0)
        return -1;
    char *p = out->p + out->len;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        char e = c == '\\' ? '\\' : c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : 0;
        if (e) {
            *p++ = '\\';
            *p++ = e;
        } else
            *p++ = c;
    }
    out->len = (size_t)(p - out->p);
    out->p[out->len] = '\0';
    return 0;
}

static int put_text(zx_buf *out, const zx_pg_col *c, const zx_dc_out *o)
{
    char tmp[48];
    size_t n;
    if (o->null)
        return zx_buf_put(out, "\\N", 2);
    if (c->t.other)
        return put_escaped(out, o->s, o->len);
    switch (c->t.type) {
    case ZX_DT_INT64: n = (size_t)snprintf(tmp, sizeof(tmp), "%" PRId64, o->i); break;
    case ZX_DT_DOUBLE:
        if (isnan(o->d))
            n = (size_t)snprintf(tmp, sizeof(tmp), "NaN");
        else if (isinf(o->d))
            n = (size_t)snprintf(tmp, sizeof(tmp), o->d > 0 ? "Infinity" : "-Infinity");
        else if (c->t.float4)
            n = (size_t)snprintf(tmp, sizeof(tmp), "%.9g", (double)(float)o->d);
        else
            n = (size_t)snprintf(tmp, sizeof(tmp), "%.17g", o->d);
        break;
    case ZX_DT_BOOL: tmp[0] = o->i ? 't' : 'f'; n = 1; break;
    case ZX_DT_TIMESTAMP:
        /* "YYYY-MM-DDTHH:MM:SS.ffffffZ" -> "YYYY-MM-DD HH:MM:SS.ffffff+00" */
        n = zx_ts_format(o->i, tmp);
        tmp[10] = ' ';
        tmp[n - 1] = '+';
        tmp[n++] = '0';
        tmp[n++] = '0';
        break;
    case ZX_DT_BYTES: {
        static const char hx[] = "0123456789abcdef";
        if (o->len > (SIZE_MAX - 16) / 2 || zx_buf_reserve(out, 3 + 2 * o->len) < 0)
            return -1;
        char *p = out->p + out->len;
        memcpy(p, "\\\\x", 3);        /* \\x: bytea's \x, its backslash escaped */
        p += 3;
        for (size_t i = 0; i < o->len; i++) {
            unsigned char ch = (unsigned char)o->s[i];
            *p++ = hx[ch >> 4];
            *p++ = hx[ch & 15];
        }
        out->len = (size_t)(p - out->p);
        out->p[out->len] = '\0';
        return 0;
    }
    default:   /* TEXT, DATE, DECIMAL, JSON */
        return put_escaped(out, o->s, o->len);
    }
    return zx_buf_put(out, tmp, n);
}

int zx_pg_copy_field(zx_buf *out, const zx_pg_col *c, const zx_value *v, int binary,
                     zx_buf *scratch, int *isnull, int *misfit)
{
    zx_dc_out o;
    int r = zx_dc_convert(&c->t, v, scratch, &o);
    if (r < 0)
        return -1;
    if (!o.null && o.len > FIELD_MAX - 1) {
        o.null = 1;
        r = 0;
    }
    *misfit = r == 0;
    *isnull = o.null;
    return binary ? put_bin(out, c, &o) : put_text(out, c, &o);
}

/* ---- key sets ------------------------------------------------------ */

static uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

uint64_t zx_pg_key_hash(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 14695981039346656037ull;   /* FNV-1a, then mixed */
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ull;
    }
    h = mix64(h ^ n);
    return h ? h : 1;
}

int zx_pg_hset_has(const zx_pg_hset *s, uint64_t h)
{
    if (!s->cap)
        return 0;
    for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (s->slot[i] == h)
            return 1;
        if (s->slot[i] == 0)
            return 0;
    }
}

static void hset_put(uint64_t *slot, size_t cap, uint64_t h)
{
    size_t i = h & (cap - 1);
    while (slot[i] && slot[i] != h)
        i = (i + 1) & (cap - 1);
    slot[i] = h;
}

int zx_pg_hset_add(zx_pg_hset *s, uint64_t h, size_t max)
{
    if (zx_pg_hset_has(s, h))
        return 0;
    if (s->n >= max)
        return -1;
    if ((s->n + 1) * 2 > s->cap) {     /* load at most 1/2 */
        size_t cap = s->cap ? s->cap * 2 : 1024;
        if (cap > SIZE_MAX / sizeof(uint64_t))
            return -1;
        uint64_t *slot = calloc(cap, sizeof(uint64_t));
        if (!slot)
            return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i])
                hset_put(slot, cap, s->slot[i]);
        free(s->slot);
        s->slot = slot;
        s->cap = cap;
    }
    hset_put(s->slot, s->cap, h);
    s->n++;
    return 0;
}

void zx_pg_hset_free(zx_pg_hset *s)
{
    if (!s)
        return;
    free(s->slot);
    s->slot = NULL;
    s->cap = s->n = 0;
}

long zx_pg_dedup(const char *kbuf, const size_t *koff, const size_t *klen,
                 const uint64_t *khash, uint8_t *skip, size_t nrows)
{
    if (nrows < 2)
        return 0;
    size_t cap = 16;
    while (cap < nrows * 2)
        cap *= 2;
    /* slot: row index + 1 of the last row seen with that key (0 = empty) */
    size_t *slot = calloc(cap, sizeof(size_t));
    if (!slot)
        return -1;
    long marked = 0;
    for (size_t r = 0; r < nrows; r++) {
        if (skip[r])
            continue;
        size_t i = khash[r] & (cap - 1);
        for (;; i = (i + 1) & (cap - 1)) {
            if (slot[i] == 0) {
                slot[i] = r + 1;
                break;
            }
            size_t o = slot[i] - 1;
            if (khash[o] == khash[r] && klen[o] == klen[r] &&
                memcmp(kbuf + koff[o], kbuf + koff[r], klen[r]) == 0) {
                skip[o] = 1;
                marked++;
                slot[i] = r + 1;
                break;
            }
        }
    }
    free(slot);
    return marked;
}
