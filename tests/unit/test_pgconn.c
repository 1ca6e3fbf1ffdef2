/*
 * test_pgconn.c — unit tests of common/pgconn.c, the shared libpq client,
 * against the real server of tests/services/postgres (ZX_PG_DSN; skipped
 * without it): the connect error names the shown dsn (never the dsn's
 * password) and what it was for, statement_timeout is set, a failed
 * statement says "Postgres <shown>: <what>: <the server's message>" on one
 * line, zx_pg_value's three answers, and quoted names and literals that
 * the server reads back as they were.  zx_pg_one_line without a server.
 *
 * It must never: change anything on the server outside its own temporary
 * objects.
 */
#include "common/pgconn.h"
#include "tests/unit/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_one_line(void)
{
    char b[64];
    CHECK(strcmp(zx_pg_one_line(b, sizeof(b), "ERROR:  x\nDETAIL:\tY\r\n"),
                 "ERROR:  x DETAIL: Y") == 0);
    CHECK(strcmp(zx_pg_one_line(b, sizeof(b), ""), "unknown error") == 0);
    CHECK(strcmp(zx_pg_one_line(b, sizeof(b), NULL), "unknown error") == 0);
    CHECK(strcmp(zx_pg_one_line(b, 4, "abcdef"), "abc") == 0);
}

static void test_connect_error(void)
{
    char err[512] = "";
    /* a port nothing listens on (1): refused at once */
    zx_pg_connopts o = { .dsn = "postgresql://zx:pw-hidden@127.0.0.1:1/x",
                         .shown = "postgresql://zx:***@127.0.0.1:1/x",
                         .purpose = "for replication", .connect_timeout_s = 2 };
    CHECK(zx_pg_connect(&o, err, sizeof(err)) == NULL);
    CHECK(strncmp(err, "cannot connect to Postgres postgresql://zx:***@127.0.0.1:1/x for "
                       "replication: ", 71) == 0);
    CHECK(strstr(err, "pw-hidden") == NULL);
    CHECK(strchr(err, '\n') == NULL);
}

static void test_server(const char *dsn)
{
    char err[512] = "", v[128];
    zx_pg_connopts o = { .dsn = dsn, .shown = "db-shown", .app = "zx pgconn test",
                         .statement_timeout_ms = 4321 };
    PGconn *c = zx_pg_connect(&o, err, sizeof(err));
    CHECK(c != NULL);
    if (!c) {
        printf("connect: %s\n", err);
        return;
    }
    CHECK(zx_pg_value(c, "db-shown", "reading", "SHOW statement_timeout", 0, NULL, v,
                      sizeof(v), err, sizeof(err)) == 1);
    CHECK(strcmp(v, "4321ms") == 0);
    CHECK(zx_pg_value(c, "db-shown", "reading", "SELECT current_setting('application_name')",
                      0, NULL, v, sizeof(v), err, sizeof(err)) == 1);
    CHECK(strcmp(v, "zx pgconn test") == 0);

    /* one value: with parameters, none (NULL), no row */
    const char *pv[2] = { "40", "2" };
    CHECK(zx_pg_value(c, "db-shown", "adding", "SELECT $1::int + $2::int", 2, pv, v, sizeof(v),
                      err, sizeof(err)) == 1);
    CHECK(strcmp(v, "42") == 0);
    CHECK(zx_pg_value(c, "db-shown", "nothing", "SELECT NULL", 0, NULL, v, sizeof(v), err,
                      sizeof(err)) == 0);
    CHECK(v[0] == '\0');
    CHECK(zx_pg_value(c, "db-shown", "nothing", "SELECT 1 WHERE false", 0, NULL, v, sizeof(v),
                      err, sizeof(err)) == 0);

    /* a failure: the server's message with the context, on one line */
    CHECK(zx_pg_exec(c, "db-shown", "reading the widgets", "SELECT * FROM zx_no_such_table",
                     0, NULL, err, sizeof(err)) == NULL);
    CHECK(strcmp(err, "Postgres db-shown: reading the widgets: relation \"zx_no_such_table\" "
                      "does not exist") == 0);
    CHECK(zx_pg_value(c, NULL, NULL, "SELECT 1/0", 0, NULL, v, sizeof(v), err,
                      sizeof(err)) == -1);
    CHECK(strcmp(err, "division by zero") == 0);

    /* quoting: what the server reads back is what was quoted */
    const char *names[] = { "plain", "Mixed Case", "quo\"te", "sp ace;DROP", "ünï" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char *qi = zx_pg_ident(c, names[i], err, sizeof(err));
        char *ql = zx_pg_literal(c, names[i], err, sizeof(err));
        CHECK(qi && ql);
        if (!qi || !ql) {
            free(qi);
            free(ql);
            continue;
        }
        char sql[512];
        snprintf(sql, sizeof(sql), "SELECT %s FROM (SELECT 1 AS %s) t", ql, qi);
        CHECK(zx_pg_value(c, "db-shown", "quoting", sql, 0, NULL, v, sizeof(v), err,
                          sizeof(err)) == 1);
        CHECK(strcmp(v, names[i]) == 0);
        free(qi);
        free(ql);
    }
    /* a literal with a backslash and a quote */
    char *ql = zx_pg_literal(c, "it's a \\ test", err, sizeof(err));
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT %s", ql ? ql : "NULL");
    CHECK(zx_pg_value(c, NULL, NULL, sql, 0, NULL, v, sizeof(v), err, sizeof(err)) == 1);
    CHECK(strcmp(v, "it's a \\ test") == 0);
    free(ql);
    PQfinish(c);
}

int main(void)
{
    test_one_line();
    test_connect_error();
    const char *dsn = getenv("ZX_PG_DSN");
    if (dsn && *dsn)
        test_server(dsn);
    else
        printf("test_pgconn: no ZX_PG_DSN: the server's part skipped\n");
    if (failures)
        printf("test_pgconn: %d check(s) failed\n", failures);
    else
        printf("test_pgconn: all checks passed\n");
    return failures != 0;
}
