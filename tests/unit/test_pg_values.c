/*
 * test_pg_values.c — unit tests of pg_values.h: every built-in type the
 * CDC source maps, the text forms Postgres sends, and the ones that must
 * stay text (numeric, infinity, BC timestamps, odd offsets).
 */
#include "workers/sources/postgres/pg_values.h"

#include <math.h>
#include <string.h>

#include "common/timefmt.h"

#include "tests/unit/check.h"

static zx_rowset rs;

static zx_value conv(uint32_t oid, const char *s)
{
    zx_value v;
    if (zx_pgv_from_text(oid, s, strlen(s), &rs, &v) < 0) {
        printf("out of memory\n");
        failures++;
    }
    return v;
}

static int is_text(const zx_value *v, zx_type t, const char *want)
{
    return v->type == t && v->len == strlen(want) && memcmp(v->s, want, v->len) == 0;
}

static int64_t ts(const char *rfc)
{
    int64_t us = 0;
    zx_rfc3339_parse(rfc, strlen(rfc), &us);
    return us;
}

int main(void)
{
    zx_rowset_init(&rs);
    zx_value v;

    v = conv(ZX_PGOID_BOOL, "t");
    CHECK(v.type == ZX_T_BOOL && v.u.b == 1);
    v = conv(ZX_PGOID_BOOL, "f");
    CHECK(v.type == ZX_T_BOOL && v.u.b == 0);
    v = conv(ZX_PGOID_BOOL, "yes");
    CHECK(is_text(&v, ZX_T_TEXT, "yes"));

    v = conv(ZX_PGOID_INT8, "-9223372036854775808");
    CHECK(v.type == ZX_T_INT && v.u.i == INT64_MIN);
    v = conv(ZX_PGOID_INT4, "2147483647");
    CHECK(v.type == ZX_T_INT && v.u.i == 2147483647);
    v = conv(ZX_PGOID_INT8, "9223372036854775808"); /* cannot come; stays text */
    CHECK(is_text(&v, ZX_T_TEXT, "9223372036854775808"));
    v = conv(ZX_PGOID_INT2, "-");
    CHECK(v.type == ZX_T_TEXT);
    v = conv(ZX_PGOID_INT2, "1 ");
    CHECK(v.type == ZX_T_TEXT);

    v = conv(ZX_PGOID_FLOAT8, "1.5e-300");
    CHECK(v.type == ZX_T_REAL && v.u.d == 1.5e-300);
    v = conv(ZX_PGOID_FLOAT4, "NaN");
    CHECK(v.type == ZX_T_REAL && isnan(v.u.d));
    v = conv(ZX_PGOID_FLOAT8, "-Infinity");
    CHECK(v.type == ZX_T_REAL && isinf(v.u.d) && v.u.d < 0);
    v = conv(ZX_PGOID_FLOAT8, "0.30000000000000004");
    CHECK(v.type == ZX_T_REAL && v.u.d == 0.30000000000000004);

    /* numeric: exactly as sent, never through a double */
    v = conv(ZX_PGOID_NUMERIC, "123456789012345678901234567890.000000000000000000001");
    CHECK(is_text(&v, ZX_T_TEXT, "123456789012345678901234567890.000000000000000000001"));
    v = conv(ZX_PGOID_NUMERIC, "NaN");
    CHECK(is_text(&v, ZX_T_TEXT, "NaN"));
    v = conv(ZX_PGOID_NUMERIC, "Infinity");
    CHECK(is_text(&v, ZX_T_TEXT, "Infinity"));

    /* timestamps as Postgres writes them with DateStyle ISO */
    v = conv(ZX_PGOID_TIMESTAMPTZ, "2026-11-30 22:00:00.123456+00");
    CHECK(v.type == ZX_T_TIMESTAMP && v.u.i == ts("2026-11-30T22:00:00.123456Z"));
    CHECK(is_text(&v, ZX_T_TIMESTAMP, "2026-11-30T22:00:00.123456Z"));
    v = conv(ZX_PGOID_TIMESTAMPTZ, "2026-11-30 22:00:00+05:30");
    CHECK(v.type == ZX_T_TIMESTAMP && v.u.i == ts("2026-11-30T16:30:00Z"));
    v = conv(ZX_PGOID_TIMESTAMPTZ, "1901-12-13 20:45:52-03:00:00");
    CHECK(v.type == ZX_T_TIMESTAMP && v.u.i == ts("1901-12-13T23:45:52Z"));
    v = conv(ZX_PGOID_TIMESTAMPTZ, "1850-01-01 00:00:00+00:17:30"); /* LMT offsets */
    CHECK(is_text(&v, ZX_T_TEXT, "1850-01-01 00:00:00+00:17:30"));
    v = conv(ZX_PGOID_TIMESTAMPTZ, "infinity");
    CHECK(is_text(&v, ZX_T_TEXT, "infinity"));
    v = conv(ZX_PGOID_TIMESTAMPTZ, "0044-03-15 12:00:00+00 BC");
    CHECK(v.type == ZX_T_TEXT);
    v = conv(ZX_PGOID_TIMESTAMP, "2026-02-28 23:59:59.5");
    CHECK(v.type == ZX_T_TIMESTAMP && v.u.i == ts("2026-02-28T23:59:59.5Z"));
    v = conv(ZX_PGOID_TIMESTAMP, "2026-02-29 00:00:00"); /* no such day */
    CHECK(v.type == ZX_T_TEXT);

    v = conv(ZX_PGOID_JSONB, "{\"a\": [1, 2.50, null]}");
    CHECK(is_text(&v, ZX_T_JSON, "{\"a\": [1, 2.50, null]}"));
    v = conv(ZX_PGOID_BYTEA, "\\x00ff");
    CHECK(is_text(&v, ZX_T_TEXT, "\\x00ff"));
    v = conv(2950 /* uuid */, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
    CHECK(is_text(&v, ZX_T_TEXT, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"));
    v = conv(1186 /* interval */, "1 year 2 mons 3 days 04:05:06.7");
    CHECK(v.type == ZX_T_TEXT);
    v = conv(1007 /* int4[] */, "{1,2,NULL}");
    CHECK(is_text(&v, ZX_T_TEXT, "{1,2,NULL}"));
    v = conv(ZX_PGOID_TEXT, "");
    CHECK(is_text(&v, ZX_T_TEXT, ""));

    CHECK(zx_pgv_type(ZX_PGOID_INT2) == ZX_T_INT && zx_pgv_type(ZX_PGOID_NUMERIC) == ZX_T_TEXT &&
          zx_pgv_type(ZX_PGOID_TIMESTAMPTZ) == ZX_T_TIMESTAMP &&
          zx_pgv_type(ZX_PGOID_JSON) == ZX_T_JSON && zx_pgv_type(1082) == ZX_T_TEXT);

    zx_rowset_free(&rs);
    printf("test_pg_values: %s\n", failures ? "FAILED" : "all checks passed");
    return failures != 0;
}
