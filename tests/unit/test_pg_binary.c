/*
 * test_pg_binary.c — PostgreSQL values in binary form
 * (workers/sources/postgres/pg_binary.h) against a real server
 * (ZX_PG_DSN; exit 77 without it): for each known type and its edge
 * values (infinities, BC dates, years past 9999, NaN, -0, extreme
 * integers, numerics of every shape), the value read from
 * `COPY (...) TO STDOUT (FORMAT binary)` is the value zx_pgv_from_text
 * gives for the server's text form of it.  And the framing: the header,
 * a tuple, the trailer, and malformed tuples refused.
 */
#include "workers/sources/postgres/pg_binary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "common/rowset.h"
#include "tests/unit/check.h"
#include "workers/sources/postgres/pg_values.h"

typedef struct tcase {
    const char *type;
    uint32_t oid;
    const char *values; /* a SQL array of text literals */
} tcase;

static const tcase cases[] = {
    { "bool", ZX_PGOID_BOOL, "ARRAY['t', 'f']" },
    { "int2", ZX_PGOID_INT2, "ARRAY['-32768', '32767', '0']" },
    { "int4", ZX_PGOID_INT4, "ARRAY['-2147483648', '2147483647', '7']" },
    { "int8", ZX_PGOID_INT8, "ARRAY['-9223372036854775808', '9223372036854775807', '42']" },
    { "oid", ZX_PGOID_OID, "ARRAY['4294967295', '0']" },
    { "float4", ZX_PGOID_FLOAT4, "ARRAY['1.1', '-0', 'NaN', 'Infinity', '-Infinity', "
      "'3.4028235e38', '1e-45', '0.1', '123456.7', '16777217', '1.17549435e-38']" },
    { "float8", ZX_PGOID_FLOAT8, "ARRAY['0.1', '-0', 'NaN', 'Infinity', '-Infinity', "
      "'1.7976931348623157e308', '5e-324', '3.141592653589793', '1e22']" },
    { "numeric", ZX_PGOID_NUMERIC, "ARRAY['0', '-0', '1.5', '-123.4500', '0.0001', "
      "'100000000', 'NaN', 'Infinity', '-Infinity', '1e-20', "
      "'123456789012345678901234567890.123456789', '0.00000', '12345.6789e10', '9999', "
      "'10000', '-0.000012345', '1e1000', '0.1e-1000']" },
    { "text", ZX_PGOID_TEXT, "ARRAY['héllo', E'tab\\there\\nline', '', 'a\\b']" },
    { "varchar(10)", ZX_PGOID_VARCHAR, "ARRAY['ab', '']" },
    { "char(5)", ZX_PGOID_BPCHAR, "ARRAY['ab', 'abcde']" },
    { "name", ZX_PGOID_NAME, "ARRAY['pg_class']" },
    { "json", ZX_PGOID_JSON, "ARRAY['{\"a\": [1, 2]}', '\"é\"']" },
    { "jsonb", ZX_PGOID_JSONB, "ARRAY['{\"b\": 1, \"a\": [1, 2.50]}', 'null']" },
    { "uuid", ZX_PGOID_UUID, "ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', "
      "'00000000-0000-0000-0000-000000000000']" },
    { "date", ZX_PGOID_DATE, "ARRAY['2026-12-04', '0044-03-15 BC', 'infinity', '-infinity', "
      "'5874897-12-31', '4713-01-01 BC', '0001-01-01', '9999-12-31', '10000-01-01', "
      "'2000-01-01', '1999-12-31', '0001-12-31 BC']" },
    { "timestamp", ZX_PGOID_TIMESTAMP, "ARRAY['2026-12-04 12:34:56.789', "
      "'0044-03-15 12:00 BC', 'infinity', '-infinity', '294276-12-31 23:59:59.999999', "
      "'4713-01-01 00:00 BC', '0001-01-01 00:00', '9999-12-31 23:59:59.999999', "
      "'10000-01-01 00:00:00.5', '1999-12-31 23:59:59.999999', '1970-01-01 00:00', "
      "'0001-12-31 23:59:59.25 BC']" },
    { "timestamptz", ZX_PGOID_TIMESTAMPTZ, "ARRAY['2026-12-04 12:34:56.789+00', "
      "'2026-06-01 12:00+02', '0044-03-15 12:00+00 BC', 'infinity', '-infinity', "
      "'294276-12-31 23:59:59.999999+00', '4713-01-01 00:00+00 BC', '0001-01-01 00:00+00', "
      "'9999-12-31 23:59:59.999999+00', '10000-01-01 00:00:00.5+00', '1900-01-01 00:00:01+00']" },
    { "bytea", ZX_PGOID_BYTEA, "ARRAY['\\x00ff10', '', '\\x5c']" },
};

static int same(const zx_value *a, const zx_value *b)
{
    if (a->type != b->type)
        return 0;
    switch (a->type) {
    case ZX_T_BOOL: return a->u.b == b->u.b;
    case ZX_T_INT: return a->u.i == b->u.i;
    case ZX_T_REAL:
        return (isnan(a->u.d) && isnan(b->u.d)) || memcmp(&a->u.d, &b->u.d, 8) == 0;
    case ZX_T_TIMESTAMP:
        return a->u.i == b->u.i && a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
    default:
        return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
    }
}

static void show(const char *what, const zx_value *v)
{
    if (v->type == ZX_T_INT || v->type == ZX_T_BOOL)
        printf("  %s: type %d int %lld\n", what, v->type, (long long)v->u.i);
    else if (v->type == ZX_T_REAL)
        printf("  %s: type %d real %.17g\n", what, v->type, v->u.d);
    else
        printf("  %s: type %d text \"%.*s\" (%lld)\n", what, v->type, (int)v->len, v->s,
               (long long)v->u.i);
}

/* The text form (a plain SELECT's text result) and the binary form (a
 * binary COPY) of each value, compared. */
static void one_type(PGconn *c, const tcase *tc)
{
    char q[2048];
    snprintf(q, sizeof(q), "SELECT v::%s FROM unnest(%s::text[]) WITH ORDINALITY AS t(v, i) "
             "ORDER BY i", tc->type, tc->values);
    PGresult *tr = PQexec(c, q);
    CHECK(PQresultStatus(tr) == PGRES_TUPLES_OK);
    if (PQresultStatus(tr) != PGRES_TUPLES_OK) {
        printf("  %s: %s\n", tc->type, PQerrorMessage(c));
        PQclear(tr);
        return;
    }
    CHECK(PQftype(tr, 0) == tc->oid && zx_pgbin_known(tc->oid));
    char cq[2200];
    snprintf(cq, sizeof(cq), "COPY (%s) TO STDOUT (FORMAT binary)", q);
    PGresult *br = PQexec(c, cq);
    CHECK(PQresultStatus(br) == PGRES_COPY_OUT);
    PQclear(br);
    zx_rowset rss, *rs = &rss;
    zx_rowset_init(rs);
    int row = 0, first = 1, ended = 0;
    char *msg;
    int len;
    while ((len = PQgetCopyData(c, &msg, 0)) > 0) {
        const unsigned char *b = (const unsigned char *)msg;
        size_t n = (size_t)len;
        if (first) {
            int64_t h = zx_pgbin_header(b, n);
            CHECK(h == 19);
            b += h;
            n -= (size_t)h;
            first = 0;
        }
        const unsigned char *f[1];
        int32_t fl[1];
        int nf = zx_pgbin_tuple(b, n, 1, f, fl);
        if (nf == -1) {
            ended = 1;
            PQfreemem(msg);
            continue;
        }
        CHECK(nf == 1 && row < PQntuples(tr) && fl[0] >= 0);
        if (nf == 1 && row < PQntuples(tr) && fl[0] >= 0) {
            zx_value tv, bv;
            const char *s = PQgetvalue(tr, row, 0);
            size_t sl = (size_t)PQgetlength(tr, row, 0);
            if (tc->oid == ZX_PGOID_BYTEA) { /* "\x..." as a sync reads it */
                size_t m = (sl - 2) / 2;
                char *raw = zx_rowset_alloc(rs, m + 1);
                for (size_t k = 0; k < m; k++) {
                    unsigned x;
                    sscanf(s + 2 + 2 * k, "%2x", &x);
                    raw[k] = (char)x;
                }
                memset(&tv, 0, sizeof(tv));
                tv.type = ZX_T_TEXT;
                tv.s = raw;
                tv.len = (uint32_t)m;
            } else {
                CHECK(zx_pgv_from_text(tc->oid, s, sl, rs, &tv) == 0);
            }
            int rc = zx_pgbin_value(tc->oid, f[0], (size_t)fl[0], rs, &bv);
            CHECK(rc == 0);
            if (rc != 0 || !same(&tv, &bv)) {
                printf("%s row %d: text \"%s\" and binary differ\n", tc->type, row, s);
                CHECK(0);
                show("text  ", &tv);
                if (rc == 0)
                    show("binary", &bv);
            }
        }
        row++;
        PQfreemem(msg);
    }
    CHECK(ended && row == PQntuples(tr));
    PGresult *end = PQgetResult(c);
    CHECK(PQresultStatus(end) == PGRES_COMMAND_OK);
    PQclear(end);
    while ((end = PQgetResult(c)))
        PQclear(end);
    zx_rowset_free(rs);
    PQclear(tr);
}

/* Framing and malformed values, no server needed. */
static void framing(void)
{
    static const unsigned char head[] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";
    CHECK(zx_pgbin_header(head, 19) == 19);
    CHECK(zx_pgbin_header(head, 18) == -1);
    unsigned char ext[23];
    memcpy(ext, head, 19);
    ext[18] = 4; /* a 4-byte extension */
    CHECK(zx_pgbin_header(ext, 23) == 23);
    CHECK(zx_pgbin_header(ext, 22) == -1);
    const unsigned char *f[2];
    int32_t fl[2];
    static const unsigned char trailer[] = { 0xff, 0xff };
    CHECK(zx_pgbin_tuple(trailer, 2, 2, f, fl) == -1);
    static const unsigned char two[] = { 0, 2, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 'x' };
    CHECK(zx_pgbin_tuple(two, sizeof(two), 2, f, fl) == 2);
    CHECK(fl[0] == -1 && !f[0] && fl[1] == 1 && f[1][0] == 'x');
    CHECK(zx_pgbin_tuple(two, sizeof(two), 1, f, fl) == -2);      /* more than max */
    CHECK(zx_pgbin_tuple(two, sizeof(two) - 1, 2, f, fl) == -2);  /* cut short */
    static const unsigned char left[] = { 0, 1, 0, 0, 0, 0, 'z' };
    CHECK(zx_pgbin_tuple(left, sizeof(left), 2, f, fl) == -2);    /* a byte left over */
    static const unsigned char neg[] = { 0, 1, 0xff, 0xff, 0xff, 0xfe };
    CHECK(zx_pgbin_tuple(neg, sizeof(neg), 2, f, fl) == -2);      /* length -2 */
    static const unsigned char big[] = { 0, 1, 0x7f, 0xff, 0xff, 0xff, 'a' };
    CHECK(zx_pgbin_tuple(big, sizeof(big), 2, f, fl) == -2);      /* past the end */
    zx_rowset rss, *rs = &rss;
    zx_rowset_init(rs);
    zx_value v;
    static const unsigned char b3[] = { 0, 0, 1 };
    CHECK(zx_pgbin_value(ZX_PGOID_INT4, b3, 3, rs, &v) == 1);
    CHECK(zx_pgbin_value(ZX_PGOID_BOOL, b3, 0, rs, &v) == 1);
    CHECK(zx_pgbin_value(ZX_PGOID_JSONB, (const unsigned char *)"\2{}", 3, rs, &v) == 1);
    /* numeric: ndigits not matching the length, a digit over 9999, a bad sign */
    static const unsigned char n1[] = { 0, 2, 0, 0, 0, 0, 0, 0, 0, 1 };
    CHECK(zx_pgbin_value(ZX_PGOID_NUMERIC, n1, sizeof(n1), rs, &v) == 1);
    static const unsigned char n2[] = { 0, 1, 0, 0, 0, 0, 0, 0, 0x27, 0x10 };
    CHECK(zx_pgbin_value(ZX_PGOID_NUMERIC, n2, sizeof(n2), rs, &v) == 1);
    static const unsigned char n3[] = { 0, 1, 0, 0, 0x12, 0x34, 0, 0, 0, 1 };
    CHECK(zx_pgbin_value(ZX_PGOID_NUMERIC, n3, sizeof(n3), rs, &v) == 1);
    static const unsigned char n4[] = { 0, 1, 0, 0, 0, 0, 0, 0, 0, 7 };
    CHECK(zx_pgbin_value(ZX_PGOID_NUMERIC, n4, sizeof(n4), rs, &v) == 0 &&
          v.len == 1 && v.s[0] == '7');
    CHECK(!zx_pgbin_known(1186)); /* interval: text */
    zx_rowset_free(rs);
}

int main(void)
{
    framing();
    const char *dsn = getenv("ZX_PG_DSN");
    if (!dsn || !*dsn) {
        printf("test_pg_binary: ZX_PG_DSN is not set: framing checked, no server to compare "
               "against (test.sh sets it)\n");
        return failures ? 1 : 77;
    }
    PGconn *c = PQconnectdb(dsn);
    CHECK(PQstatus(c) == CONNECTION_OK);
    if (PQstatus(c) == CONNECTION_OK) {
        PGresult *r = PQexec(c, "SET DateStyle = ISO; SET TimeZone = 'UTC'; "
                                "SET extra_float_digits = 1; SET client_encoding = 'UTF8'");
        CHECK(PQresultStatus(r) == PGRES_COMMAND_OK);
        PQclear(r);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
            one_type(c, &cases[i]);
    }
    PQfinish(c);
    printf("test_pg_binary: %s\n", failures ? "FAILED" : "all checks passed");
    return failures != 0;
}
