/*
 * pg_binary.c — PostgreSQL values in binary form to zx values, and the
 * framing of a binary COPY (pg_binary.h).
 *
 * The forms (PostgreSQL's send functions, all integers big-endian):
 *   bool 1 byte; int2/int4/int8 two's complement; oid uint32; float4 and
 *   float8 IEEE 754; text-like types their bytes; jsonb a version byte (1)
 *   then its text; uuid 16 bytes; date int32 days since 2000-01-01
 *   (INT32_MIN/MAX: -infinity/infinity); timestamp(tz) int64 µs since
 *   2000-01-01 00:00:00 (UTC for timestamptz; INT64_MIN/MAX infinities);
 *   numeric int16 ndigits, int16 weight, uint16 sign, int16 dscale, then
 *   ndigits base-10000 digits (weight: of the first, in powers of 10000).
 *
 * It must never: read past the n bytes it is given, trust a length or a
 * count before checking it against them, or give a value other than the
 * one zx_pgv_from_text gives for the server's text form.
 */
#include "workers/sources/postgres/pg_binary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/numfmt.h"
#include "common/timefmt.h"
#include "workers/sources/postgres/pg_values.h"

#define PG_EPOCH_DAYS 10957                   /* 1970-01-01 .. 2000-01-01 */
#define PG_EPOCH_US (PG_EPOCH_DAYS * 86400000000LL)
#define US_PER_DAY 86400000000LL
#define NUMERIC_POS 0x0000
#define NUMERIC_NEG 0x4000
#define NUMERIC_NAN 0xC000
#define NUMERIC_PINF 0xD000
#define NUMERIC_NINF 0xF000
#define NUMERIC_DSCALE_MAX 0x3FFF

int zx_pgbin_known(uint32_t oid)
{
    switch (oid) {
    case ZX_PGOID_BOOL: case ZX_PGOID_BYTEA: case ZX_PGOID_INT8: case ZX_PGOID_INT2:
    case ZX_PGOID_INT4: case ZX_PGOID_TEXT: case ZX_PGOID_OID: case ZX_PGOID_JSON:
    case ZX_PGOID_FLOAT4: case ZX_PGOID_FLOAT8: case ZX_PGOID_TIMESTAMP:
    case ZX_PGOID_TIMESTAMPTZ: case ZX_PGOID_NUMERIC: case ZX_PGOID_JSONB:
    case ZX_PGOID_NAME: case ZX_PGOID_BPCHAR: case ZX_PGOID_VARCHAR: case ZX_PGOID_DATE:
    case ZX_PGOID_UUID:
        return 1;
    default:
        return 0;
    }
}

static uint16_t be16(const unsigned char *b)
{
    return (uint16_t)(b[0] << 8 | b[1]);
}

static uint32_t be32(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static uint64_t be64(const unsigned char *b)
{
    return (uint64_t)be32(b) << 32 | be32(b + 4);
}

/* "YYYY-MM-DD" of day z since 1970-01-01, " BC" for years before 1, as
 * the server writes a date (ISO). */
static size_t fmt_date(int64_t z, char *out, size_t cap, int *bc)
{
    int64_t y;
    unsigned m, d;
    zx_civil_from_days(z, &y, &m, &d);
    *bc = y <= 0;
    /* "%04lld-%02u-%02u" without printf (a hot path of the copy) */
    uint64_t yy = (uint64_t)(*bc ? 1 - y : y);
    if (cap < ZX_FMT_I64_MAX + 7)
        return 0;
    size_t n = zx_fmt_u64_pad(out, yy, 4);
    out[n++] = '-';
    n += zx_fmt_u64_pad(out + n, m, 2);
    out[n++] = '-';
    n += zx_fmt_u64_pad(out + n, d, 2);
    out[n] = '\0';
    return n;
}

/* The server's text of a timestamp (tz: with "+00") outside 0001-9999,
 * microseconds since 1970 given as days and µs of the day. */
static int ts_text(int64_t days, int64_t tod, int tz, zx_rowset *rs, zx_value *out)
{
    char buf[96];
    int bc;
    size_t n = fmt_date(days, buf, sizeof(buf), &bc);
    int64_t sec = tod / 1000000, frac = tod % 1000000;
    n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %02lld:%02lld:%02lld", (long long)(sec / 3600),
                          (long long)(sec / 60 % 60), (long long)(sec % 60));
    if (frac) {
        char f[8];
        snprintf(f, sizeof(f), "%06lld", (long long)frac);
        size_t k = 6;
        while (k && f[k - 1] == '0')
            k--;
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, ".%.*s", (int)k, f);
    }
    if (tz)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "+00");
    if (bc)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, " BC");
    return zx_pgv_text(buf, n, rs, ZX_T_TEXT, out);
}

static int timestamp(int64_t v, int tz, zx_rowset *rs, zx_value *out)
{
    if (v == INT64_MAX)
        return zx_pgv_text("infinity", 8, rs, ZX_T_TEXT, out);
    if (v == INT64_MIN)
        return zx_pgv_text("-infinity", 9, rs, ZX_T_TEXT, out);
    /* days and µs of the day since 2000, floored, then since 1970: no
     * overflow whatever v is */
    int64_t days = v / US_PER_DAY, tod = v % US_PER_DAY;
    if (tod < 0) {
        tod += US_PER_DAY;
        days--;
    }
    days += PG_EPOCH_DAYS;
    /* 0001-01-01 .. 9999-12-31: zx's timestamps */
    if (days < -719162 || days > 2932896)
        return ts_text(days, tod, tz, rs, out);
    int64_t us = days * US_PER_DAY + tod;
    char t[ZX_TS_BUFSZ];
    size_t tl = zx_ts_format(us, t);
    int rc = zx_pgv_text(t, tl, rs, ZX_T_TIMESTAMP, out);
    if (rc == 0)
        out->u.i = us;
    return rc;
}

static int date(int32_t v, zx_rowset *rs, zx_value *out)
{
    if (v == INT32_MAX)
        return zx_pgv_text("infinity", 8, rs, ZX_T_TEXT, out);
    if (v == INT32_MIN)
        return zx_pgv_text("-infinity", 9, rs, ZX_T_TEXT, out);
    char buf[48];
    int bc;
    size_t n = fmt_date((int64_t)v + PG_EPOCH_DAYS, buf, sizeof(buf), &bc);
    if (bc)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, " BC");
    return zx_pgv_text(buf, n, rs, ZX_T_TEXT, out);
}

/* float4 as its text form parsed as a double (what the text form gives:
 * the shortest decimal that reads back as the same float). */
static double float4_as_text(float f)
{
    if (isnan(f))
        return NAN;
    if (isinf(f))
        return f > 0 ? INFINITY : -INFINITY;
    char buf[32];
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, sizeof(buf), "%.*g", p, (double)f);
        if (strtof(buf, NULL) == f)
            return strtod(buf, NULL);
    }
    return (double)f;
}

/* numeric's text, as numeric_out writes it. */
static int numeric(const unsigned char *b, size_t n, zx_rowset *rs, zx_value *out)
{
    if (n < 8)
        return 1;
    int ndigits = (int16_t)be16(b), weight = (int16_t)be16(b + 2);
    unsigned sign = be16(b + 4);
    int dscale = (int16_t)be16(b + 6);
    if (ndigits < 0 || n != 8 + 2 * (size_t)ndigits || dscale < 0 || dscale > NUMERIC_DSCALE_MAX)
        return 1;
    if (sign == NUMERIC_NAN)
        return zx_pgv_text("NaN", 3, rs, ZX_T_TEXT, out);
    if (sign == NUMERIC_PINF)
        return zx_pgv_text("Infinity", 8, rs, ZX_T_TEXT, out);
    if (sign == NUMERIC_NINF)
        return zx_pgv_text("-Infinity", 9, rs, ZX_T_TEXT, out);
    if (sign != NUMERIC_POS && sign != NUMERIC_NEG)
        return 1;
    const unsigned char *dg = b + 8;
    for (int i = 0; i < ndigits; i++)
        if (be16(dg + 2 * i) > 9999)
            return 1;
    size_t cap = 2 + (weight >= 0 ? ((size_t)weight + 1) * 4 : 1) + 1 + (size_t)dscale + 4;
    char *s = zx_rowset_alloc(rs, cap);
    if (!s)
        return -1;
    size_t o = 0;
    if (sign == NUMERIC_NEG)
        s[o++] = '-';
    int d;
    if (weight < 0) {
        d = weight + 1;
        s[o++] = '0';
    } else {
        for (d = 0; d <= weight; d++) {
            unsigned v = d < ndigits ? be16(dg + 2 * d) : 0;
            unsigned p[4] = { v / 1000, v / 100 % 10, v / 10 % 10, v % 10 };
            int put = d > 0;
            for (int k = 0; k < 4; k++) {
                put |= p[k] > 0 || k == 3;
                if (put)
                    s[o++] = (char)('0' + p[k]);
            }
        }
    }
    if (dscale > 0) {
        s[o++] = '.';
        size_t end = o + (size_t)dscale;
        for (int i = 0; i < dscale; d++, i += 4) {
            unsigned v = d >= 0 && d < ndigits ? be16(dg + 2 * d) : 0;
            unsigned p[4] = { v / 1000, v / 100 % 10, v / 10 % 10, v % 10 };
            for (int k = 0; k < 4; k++)
                s[o++] = (char)('0' + p[k]);
        }
        o = end;
    }
    s[o] = '\0';
    memset(out, 0, sizeof(*out));
    out->type = ZX_T_TEXT;
    out->s = s;
    out->len = (uint32_t)o;
    return 0;
}

int zx_pgbin_value(uint32_t oid, const unsigned char *b, size_t n, zx_rowset *rs,
                   zx_value *out)
{
    switch (oid) {
    case ZX_PGOID_BOOL:
        if (n != 1)
            return 1;
        memset(out, 0, sizeof(*out));
        out->type = ZX_T_BOOL;
        out->u.b = b[0] != 0;
        return 0;
    case ZX_PGOID_INT2: case ZX_PGOID_INT4: case ZX_PGOID_INT8: case ZX_PGOID_OID: {
        int64_t v;
        if (oid == ZX_PGOID_INT2 && n == 2)
            v = (int16_t)be16(b);
        else if (oid == ZX_PGOID_INT4 && n == 4)
            v = (int32_t)be32(b);
        else if (oid == ZX_PGOID_OID && n == 4)
            v = be32(b);
        else if (oid == ZX_PGOID_INT8 && n == 8)
            v = (int64_t)be64(b);
        else
            return 1;
        memset(out, 0, sizeof(*out));
        out->type = ZX_T_INT;
        out->u.i = v;
        return 0;
    }
    case ZX_PGOID_FLOAT4: case ZX_PGOID_FLOAT8: {
        double d;
        if (oid == ZX_PGOID_FLOAT4 && n == 4) {
            uint32_t u = be32(b);
            float f;
            memcpy(&f, &u, 4);
            d = float4_as_text(f);
        } else if (oid == ZX_PGOID_FLOAT8 && n == 8) {
            uint64_t u = be64(b);
            memcpy(&d, &u, 8);
            if (isnan(d))
                d = NAN;
        } else {
            return 1;
        }
        memset(out, 0, sizeof(*out));
        out->type = ZX_T_REAL;
        out->u.d = d;
        return 0;
    }
    case ZX_PGOID_TIMESTAMP: case ZX_PGOID_TIMESTAMPTZ:
        if (n != 8)
            return 1;
        return timestamp((int64_t)be64(b), oid == ZX_PGOID_TIMESTAMPTZ, rs, out);
    case ZX_PGOID_DATE:
        if (n != 4)
            return 1;
        return date((int32_t)be32(b), rs, out);
    case ZX_PGOID_NUMERIC:
        return numeric(b, n, rs, out);
    case ZX_PGOID_UUID: {
        if (n != 16)
            return 1;
        static const char hx[] = "0123456789abcdef";
        char u[37];
        size_t o = 0;
        for (int i = 0; i < 16; i++) {
            if (i == 4 || i == 6 || i == 8 || i == 10)
                u[o++] = '-';
            u[o++] = hx[b[i] >> 4];
            u[o++] = hx[b[i] & 0xf];
        }
        return zx_pgv_text(u, o, rs, ZX_T_TEXT, out);
    }
    case ZX_PGOID_JSON:
        return zx_pgv_text((const char *)b, n, rs, ZX_T_JSON, out);
    case ZX_PGOID_JSONB:
        if (n < 1 || b[0] != 1)
            return 1; /* only version 1 exists */
        return zx_pgv_text((const char *)b + 1, n - 1, rs, ZX_T_JSON, out);
    case ZX_PGOID_BYTEA: case ZX_PGOID_TEXT: case ZX_PGOID_NAME: case ZX_PGOID_BPCHAR:
    case ZX_PGOID_VARCHAR:
        return zx_pgv_text((const char *)b, n, rs, ZX_T_TEXT, out);
    default:
        return 1;
    }
}

int64_t zx_pgbin_header(const unsigned char *b, size_t n)
{
    static const unsigned char sig[11] = "PGCOPY\n\377\r\n";
    if (n < 19 || memcmp(b, sig, 11) != 0)
        return -1;
    uint32_t ext = be32(b + 15);
    if (ext > n - 19)
        return -1;
    return 19 + (int64_t)ext;
}

int zx_pgbin_tuple(const unsigned char *b, size_t n, size_t max, const unsigned char **f,
                   int32_t *flen)
{
    if (n < 2)
        return -2;
    int16_t nf = (int16_t)be16(b);
    if (nf == -1)
        return n == 2 ? -1 : -2;
    if (nf < 0 || (size_t)nf > max)
        return -2;
    size_t o = 2;
    for (int i = 0; i < nf; i++) {
        if (n - o < 4)
            return -2;
        int32_t len = (int32_t)be32(b + o);
        o += 4;
        if (len < -1 || (len >= 0 && (size_t)len > n - o))
            return -2;
        f[i] = len >= 0 ? b + o : NULL;
        flen[i] = len;
        if (len > 0)
            o += (size_t)len;
    }
    return o == n ? nf : -2;
}

int zx_pgbin_copy_init(zx_pgbin_copy *c, const uint32_t *oids, size_t ncols)
{
    memset(c, 0, sizeof(*c));
    c->oids = oids;
    c->ncols = ncols;
    c->f = calloc(ncols ? ncols : 1, sizeof(*c->f));
    c->fl = calloc(ncols ? ncols : 1, sizeof(*c->fl));
    if (!c->f || !c->fl) {
        zx_pgbin_copy_free(c);
        return -1;
    }
    return 0;
}

void zx_pgbin_copy_free(zx_pgbin_copy *c)
{
    free(c->f);
    free(c->fl);
    c->f = NULL;
    c->fl = NULL;
}

int zx_pgbin_copy_row(zx_pgbin_copy *c, const unsigned char *b, size_t n, const int64_t *rscol,
                      zx_rowset *rs, char *why, size_t whylen)
{
    if (!c->header_seen) {
        int64_t h = zx_pgbin_header(b, n);
        if (h < 0) {
            snprintf(why, whylen, "the binary COPY does not start with its header");
            return -1;
        }
        c->header_seen = 1;
        b += h;
        n -= (size_t)h;
        if (!n)
            return 0;
    }
    int nf = zx_pgbin_tuple(b, n, c->ncols, c->f, c->fl);
    if (nf == -1)
        return 0; /* the trailer: the end follows */
    if (nf != (int)c->ncols) {
        snprintf(why, whylen, "a row of the binary COPY %s", nf < 0 ? "is malformed"
                 : "has another number of fields than the columns");
        return -1;
    }
    if (zx_rowset_begin_row(rs) < 0)
        return -2;
    for (size_t i = 0; i < c->ncols; i++) {
        if (c->fl[i] < 0)
            continue; /* NULL */
        zx_value v;
        int rc = zx_pgbin_value(c->oids[i], c->f[i], (size_t)c->fl[i], rs, &v);
        if (rc == 0 && zx_rowset_add(rs, (uint32_t)(rscol ? rscol[i] : (int64_t)i), &v) < 0)
            rc = -1;
        if (rc) {
            zx_rowset_abort_row(rs);
            if (rc < 0)
                return -2;
            snprintf(why, whylen, "column %zu: a value that is not of its type (OID %u) in "
                     "binary form", i + 1, (unsigned)c->oids[i]);
            return -1;
        }
    }
    zx_rowset_end_row(rs);
    return 1;
}
