/*
 * test_pg_binval.c — the binary COPY forms the Postgres workspace writes
 * for integer, smallint, uuid, date and numeric columns
 * (workers/writer/workspace_pg_binval.c) against a real server (ZX_PG_DSN;
 * exit 77 without it): for each canonical text, the bytes zx writes are
 * exactly the type's send function's output for that text (int4send,
 * uuid_send, date_send, numeric_send), numerics of random shapes included;
 * and text zx does not read (exponents, signs, braces, other date styles,
 * years past 9999, a double) is left to the server's text input (1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "tests/unit/check.h"
#include "workers/writer/workspace_pg_int.h"

static PGconn *conn;

static int encode(const char *type, const zx_fit_out *o, zx_buf *out)
{
    out->len = 0;
    if (!strcmp(type, "int4"))
        return zx_wsp_bin_int(o, 4, out);
    if (!strcmp(type, "int2"))
        return zx_wsp_bin_int(o, 2, out);
    if (!strcmp(type, "uuid"))
        return zx_wsp_bin_uuid(o, out);
    if (!strcmp(type, "date"))
        return zx_wsp_bin_date(o, out);
    return zx_wsp_bin_numeric(o, out);
}

/* The server's send form of text as type, in hex. */
static int server_hex(const char *type, const char *text, char *hex, size_t cap)
{
    char q[200];
    snprintf(q, sizeof(q), "SELECT encode(%ssend($1::%s), 'hex')",
             !strcmp(type, "uuid") ? "uuid_" : !strcmp(type, "date") ? "date_"
             : !strcmp(type, "numeric") ? "numeric_" : type, type);
    const char *pv[1] = { text };
    PGresult *r = PQexecParams(conn, q, 1, NULL, pv, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    if (ok)
        snprintf(hex, cap, "%s", PQgetvalue(r, 0, 0));
    else
        printf("server refuses %s as %s: %s", text, type, PQresultErrorMessage(r));
    PQclear(r);
    return ok ? 0 : -1;
}

static void same_as_server(const char *type, const char *text)
{
    zx_fit_out o = { .st = ZX_FIT_S_TEXT, .s = text, .len = strlen(text) };
    zx_buf out = { 0 };
    int rc = encode(type, &o, &out);
    if (rc != 0) {
        printf("%s %s: zx found no binary form\n", type, text);
        CHECK(0);
        zx_buf_free(&out);
        return;
    }
    char want[4096], got[4096];
    if (server_hex(type, text, want, sizeof(want)) < 0 || out.len * 2 + 1 > sizeof(got)) {
        CHECK(0);
        zx_buf_free(&out);
        return;
    }
    for (size_t i = 0; i < out.len; i++)
        snprintf(got + 2 * i, 3, "%02x", (unsigned char)out.p[i]);
    got[2 * out.len] = 0;
    /* an infinity's scale means nothing (numeric_recv ignores it; the
     * server sends bits of its header there): sign and the rest only */
    if (!strcmp(type, "numeric") && strstr(text, "Infinity") && strlen(want) == 16)
        memcpy(got + 12, want + 12, 4);
    if (strcmp(got, want) != 0) {
        printf("%s %s: zx %s, server %s\n", type, text, got, want);
        CHECK(0);
    }
    zx_buf_free(&out);
}

static void left_to_server(const char *type, const zx_fit_out *o)
{
    zx_buf out = { 0 };
    int rc = encode(type, o, &out);
    if (rc != 1) {
        printf("%s %.*s: expected no binary form\n", type, o->st == ZX_FIT_S_TEXT ? (int)o->len : 3,
               o->st == ZX_FIT_S_TEXT ? o->s : "int");
        CHECK(0);
    }
    zx_buf_free(&out);
}

static void left_text(const char *type, const char *text)
{
    zx_fit_out o = { .st = ZX_FIT_S_TEXT, .s = text, .len = strlen(text) };
    left_to_server(type, &o);
}

int main(void)
{
    const char *dsn = getenv("ZX_PG_DSN");
    if (!dsn || !*dsn) {
        printf("test_pg_binval: NOT RUN: ZX_PG_DSN is not set\n");
        return 77;
    }
    conn = PQconnectdb(dsn);
    if (PQstatus(conn) != CONNECTION_OK) {
        printf("test_pg_binval: cannot connect: %s", PQerrorMessage(conn));
        return 1;
    }
    const char *ints[] = { "0", "7", "-1", "2147483647", "-2147483648" };
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        zx_fit_out o = { .st = ZX_FIT_S_INT, .i = strtoll(ints[i], NULL, 10) };
        zx_buf out = { 0 };
        char want[64], got[64] = "";
        CHECK(zx_wsp_bin_int(&o, 4, &out) == 0 && out.len == 4);
        for (size_t k = 0; k < out.len; k++)
            snprintf(got + 2 * k, 3, "%02x", (unsigned char)out.p[k]);
        CHECK(server_hex("int4", ints[i], want, sizeof(want)) == 0 && strcmp(got, want) == 0);
        zx_buf_free(&out);
    }
    zx_fit_out big = { .st = ZX_FIT_S_INT, .i = 2147483648LL };
    left_to_server("int4", &big);
    zx_fit_out small = { .st = ZX_FIT_S_INT, .i = 32768 };
    left_to_server("int2", &small);
    zx_fit_out s2 = { .st = ZX_FIT_S_INT, .i = -32768 };
    zx_buf o2 = { 0 };
    CHECK(zx_wsp_bin_int(&s2, 2, &o2) == 0 && o2.len == 2 && (unsigned char)o2.p[0] == 0x80);
    zx_buf_free(&o2);
    zx_fit_out real = { .st = ZX_FIT_S_REAL, .d = 1.5 };
    left_to_server("int4", &real);
    left_to_server("numeric", &real);
    left_text("int4", "12");

    same_as_server("uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
    same_as_server("uuid", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11");
    same_as_server("uuid", "00000000-0000-0000-0000-000000000000");
    same_as_server("uuid", "ffffffff-ffff-ffff-ffff-ffffffffffff");
    left_text("uuid", "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}");
    left_text("uuid", "a0eebc999c0b4ef8bb6d6bb9bd380a11");
    left_text("uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1g");
    left_text("uuid", "a0eebc99-9c0b4-ef8-bb6d-6bb9bd380a11");

    const char *dates[] = { "2026-12-04", "2000-01-01", "1999-12-31", "1970-01-01",
                            "0001-01-01", "9999-12-31", "2024-02-29", "2000-02-29",
                            "0044-03-15 BC", "0001-12-31 BC", "4713-01-01 BC", "0005-02-29 BC",
                            "infinity", "-infinity" };
    for (size_t i = 0; i < sizeof(dates) / sizeof(dates[0]); i++)
        same_as_server("date", dates[i]);
    const char *not_dates[] = { "2026-02-30", "1900-02-29", "2026-13-01", "2026-00-10",
                                "10000-01-01", "0000-01-01", "4714-11-24 BC", "Nov 30 2026",
                                "2026-11-30T10:00:00Z", "2026-1-5", " 2026-11-30", "today",
                                "2026-11-30 bc", "20261130", "0004-02-29 BC" };
    for (size_t i = 0; i < sizeof(not_dates) / sizeof(not_dates[0]); i++)
        left_text("date", not_dates[i]);

    const char *nums[] = { "0", "-0", "0.00", "-0.000", "1", "-1", "1.5", "-123.4500", "0.0001",
                           "0.00001", "100000000", "9999", "10000", "12345.6789", "12.50",
                           "123456789012345678901234567890.123456789012345678901234567890",
                           "0.000000000000000000001", "00012.3400", "NaN", "Infinity",
                           "-Infinity", "99999999.99", "1.0001", "10000.00001" };
    for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
        same_as_server("numeric", nums[i]);
    /* random shapes: up to 40 digits either side of the point */
    unsigned seed = 12345;
    char buf[128];
    for (int t = 0; t < 2000; t++) {
        size_t n = 0;
        seed = seed * 1103515245u + 12345u;
        if (seed >> 31)
            buf[n++] = '-';
        int il = 1 + (int)((seed >> 8) % 40), fl = (int)((seed >> 16) % 41);
        for (int k = 0; k < il; k++) {
            seed = seed * 1103515245u + 12345u;
            buf[n++] = (char)('0' + (seed >> 16) % ((seed >> 28) % 3 ? 10 : 1));
        }
        if (fl) {
            buf[n++] = '.';
            for (int k = 0; k < fl; k++) {
                seed = seed * 1103515245u + 12345u;
                buf[n++] = (char)('0' + (seed >> 16) % ((seed >> 28) % 3 ? 10 : 1));
            }
        }
        buf[n] = 0;
        same_as_server("numeric", buf);
    }
    zx_fit_out ni = { .st = ZX_FIT_S_INT, .i = -9223372036854775807LL - 1 };
    zx_buf nb = { 0 };
    CHECK(zx_wsp_bin_numeric(&ni, &nb) == 0);
    zx_buf_free(&nb);
    const char *not_nums[] = { "1e3", "+5", "1.", ".5", " 1", "1 ", "nan", "inf", "1_000",
                               "0x1F", "", "-", "1.2.3", "Infinity1" };
    for (size_t i = 0; i < sizeof(not_nums) / sizeof(not_nums[0]); i++)
        left_text("numeric", not_nums[i]);
    PQfinish(conn);
    if (failures) {
        printf("test_pg_binval: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_pg_binval: all checks passed\n");
    return 0;
}
