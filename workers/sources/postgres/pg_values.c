/*
 * pg_values.c — PostgreSQL text values to zx values (pg_values.h).
 */
#include "workers/sources/postgres/pg_values.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/timefmt.h"

zx_type zx_pgv_type(uint32_t oid)
{
    switch (oid) {
    case ZX_PGOID_BOOL: return ZX_T_BOOL;
    case ZX_PGOID_INT2: case ZX_PGOID_INT4: case ZX_PGOID_INT8: case ZX_PGOID_OID:
        return ZX_T_INT;
    case ZX_PGOID_FLOAT4: case ZX_PGOID_FLOAT8: return ZX_T_REAL;
    case ZX_PGOID_TIMESTAMP: case ZX_PGOID_TIMESTAMPTZ: return ZX_T_TIMESTAMP;
    case ZX_PGOID_JSON: case ZX_PGOID_JSONB: return ZX_T_JSON;
    default: return ZX_T_TEXT;
    }
}

int zx_pgv_text(const char *s, size_t n, zx_rowset *rs, zx_type t, zx_value *out)
{
    if (n > UINT32_MAX)
        n = UINT32_MAX; /* a value over 4 GiB cannot come in one message */
    char *p = zx_rowset_strdup(rs, s, n);
    if (!p)
        return -1;
    memset(out, 0, sizeof(*out));
    out->type = (uint8_t)t;
    out->s = p;
    out->len = (uint32_t)n;
    return 0;
}

/* Strict int64 of the n bytes at s: an optional '-', then digits. */
static int parse_int(const char *s, size_t n, int64_t *v)
{
    char buf[24];
    if (n == 0 || n >= sizeof(buf))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (i == 0 && s[i] == '-' && n > 1)))
            return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    long long x = strtoll(buf, NULL, 10);
    if (errno)
        return 0;
    *v = x;
    return 1;
}

static int parse_real(const char *s, size_t n, double *v)
{
    char buf[64];
    if (n == 0 || n >= sizeof(buf))
        return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (strcmp(buf, "NaN") == 0)
        return *v = NAN, 1;
    if (strcmp(buf, "Infinity") == 0)
        return *v = INFINITY, 1;
    if (strcmp(buf, "-Infinity") == 0)
        return *v = -INFINITY, 1;
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789+-.eE", buf[i]))
            return 0;
    char *end;
    errno = 0;
    double d = strtod(buf, &end);
    /* ERANGE with a finite, non-zero result is a subnormal ("5e-324"):
     * exact, and a real float8 */
    if (*end || (errno == ERANGE && (d == 0 || isinf(d))))
        return 0;
    *v = d;
    return 1;
}

/* A timestamp as Postgres writes it in ISO style ("2026-11-30 22:00:00.5"
 * then "+00", "+05:30", "-03:00:00"... for timestamptz; nothing for
 * timestamp, taken as UTC) to microseconds.  1, or 0 when it is not one
 * (infinity, BC, another style). */
static int parse_ts(const char *s, size_t n, int tz, int64_t *us)
{
    char buf[48];
    if (n < 19 || n > 40)
        return 0;
    memcpy(buf, s, n);
    size_t m = n;
    if (!tz) {
        buf[m++] = 'Z';
    } else {
        /* the offset starts at the last '+' or '-' after the time */
        size_t k = m;
        while (k > 19 && buf[k - 1] != '+' && buf[k - 1] != '-')
            k--;
        if (k <= 19)
            return 0;
        size_t olen = m - k; /* after the sign: HH, HH:MM or HH:MM:SS */
        if (olen == 2) {
            memcpy(buf + m, ":00", 3);
            m += 3;
        } else if (olen == 8) {
            if (memcmp(buf + m - 3, ":00", 3) != 0)
                return 0; /* seconds in an offset: not RFC 3339 */
            m -= 3;
        } else if (olen != 5) {
            return 0;
        }
    }
    return zx_rfc3339_parse(buf, m, us);
}

int zx_pgv_from_text(uint32_t oid, const char *s, size_t n, zx_rowset *rs, zx_value *out)
{
    memset(out, 0, sizeof(*out));
    switch (oid) {
    case ZX_PGOID_BOOL:
        if (n == 1 && (s[0] == 't' || s[0] == 'f')) {
            out->type = ZX_T_BOOL;
            out->u.b = s[0] == 't';
            return 0;
        }
        break;
    case ZX_PGOID_INT2: case ZX_PGOID_INT4: case ZX_PGOID_INT8: case ZX_PGOID_OID:
        if (parse_int(s, n, &out->u.i)) {
            out->type = ZX_T_INT;
            return 0;
        }
        break;
    case ZX_PGOID_FLOAT4: case ZX_PGOID_FLOAT8:
        if (parse_real(s, n, &out->u.d)) {
            out->type = ZX_T_REAL;
            return 0;
        }
        break;
    case ZX_PGOID_TIMESTAMP: case ZX_PGOID_TIMESTAMPTZ: {
        int64_t us;
        if (parse_ts(s, n, oid == ZX_PGOID_TIMESTAMPTZ, &us)) {
            /* the text kept is zx's own form of the instant */
            char t[ZX_TS_BUFSZ];
            size_t tl = zx_ts_format(us, t);
            if (zx_pgv_text(t, tl, rs, ZX_T_TIMESTAMP, out) < 0)
                return -1;
            out->u.i = us;
            return 0;
        }
        break;
    }
    case ZX_PGOID_JSON: case ZX_PGOID_JSONB:
        return zx_pgv_text(s, n, rs, ZX_T_JSON, out);
    default:
        break;
    }
    return zx_pgv_text(s, n, rs, ZX_T_TEXT, out);
}
