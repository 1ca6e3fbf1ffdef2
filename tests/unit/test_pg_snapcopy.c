/*
 * test_pg_snapcopy.c — pg_snapcopy.h against a real PostgreSQL
 * (ZX_PG_DSN; exits 77, skipped, without one): rows copied as of a slot's
 * exported snapshot (a row inserted after it is not copied), values of
 * several types converted (numeric exact, timestamptz an instant, NULL as
 * no cell, tabs, newlines and backslashes in text), through COPY's binary
 * form (every column's type has one) and its text form (a table with an
 * interval and a bytea), and the errors.
 */
#include "workers/sources/postgres/pg_snapcopy.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/timefmt.h"
#include "workers/sources/postgres/pg_repl.h"

#include "tests/unit/check.h"

static void exec(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
        printf("%s: %s", sql, PQerrorMessage(c));
        failures++;
    }
    PQclear(r);
}

static const zx_value *cell(const zx_rowset *rs, uint32_t row, const char *col)
{
    for (uint64_t i = rs->row_start[row]; i < rs->row_start[row + 1]; i++)
        if (strcmp(rs->cols[rs->cells[i].col].name, col) == 0)
            return &rs->cells[i].v;
    return NULL;
}

static int text_is(const zx_value *v, const char *want)
{
    return v && v->len == strlen(want) && memcmp(v->s, want, v->len) == 0;
}

int main(void)
{
    const char *dsn = getenv("ZX_PG_DSN");
    if (!dsn || !*dsn) {
        printf("test_pg_snapcopy: ZX_PG_DSN is not set: no server to test against\n");
        return 77;
    }
    char db[64], url[512], err[600], q[256];
    snprintf(db, sizeof(db), "zxc_%ld", (long)getpid());
    const char *slash = strrchr(dsn, '/');
    snprintf(url, sizeof(url), "%.*s/%s", (int)(slash - dsn), dsn, db);
    PGconn *admin = PQconnectdb(dsn);
    snprintf(q, sizeof(q), "CREATE DATABASE %s", db);
    exec(admin, q);
    PGconn *c = PQconnectdb(url);
    exec(c, "CREATE TABLE \"Orders\" (id bigint PRIMARY KEY, price numeric(30,10),"
            " at timestamptz, note text, doc jsonb, ok boolean)");
    exec(c, "INSERT INTO \"Orders\" VALUES"
            " (1, 12345678901234567890.0123456789, '2026-11-30 22:00:00.25+01', e'a\\tb\\nc\\\\d',"
            "  '{\"k\": [1, 2]}', true),"
            " (2, NULL, NULL, NULL, NULL, false)");
    exec(c, "CREATE TABLE t2 (id int, span interval, raw bytea, note text)");
    exec(c, "INSERT INTO t2 VALUES (1, '1 day 02:00', '\\x00ff', e'x\\ty')");
    zx_pgr *r = zx_pgr_connect(url, "the test server", "zx-test", err, sizeof(err));
    CHECK(r != NULL);
    pgo_lsn consistent = 0;
    char snap[128] = "";
    int exists = 0;
    CHECK(r && zx_pgr_create_slot(r, "zxc", &consistent, snap, sizeof(snap), &exists, NULL,
                                  NULL, err, sizeof(err)) == 0 && snap[0]);
    /* after the snapshot: not copied (the stream brings it) */
    exec(c, "INSERT INTO \"Orders\" VALUES (3, 1, now(), 'late', NULL, NULL)");

    zx_pgc *cp = zx_pgc_open(url, "the test server", snap, err, sizeof(err));
    CHECK(cp != NULL);
    zx_rowset rs;
    zx_rowset_init(&rs);
    if (cp) {
        CHECK(zx_pgc_table(cp, "public", "Orders", err, sizeof(err)) == 0);
        CHECK(zx_pgc_ncols(cp) == 6 && strcmp(zx_pgc_colname(cp, 1), "price") == 0 &&
              strcmp(zx_pgc_coldecl(cp, 1), "numeric(30,10)") == 0 &&
              zx_pgc_coltype(cp, 2) == 1184);
        int64_t n1 = zx_pgc_read(cp, &rs, 1, err, sizeof(err));
        int64_t n2 = zx_pgc_read(cp, &rs, 100, err, sizeof(err));
        int64_t n3 = zx_pgc_read(cp, &rs, 100, err, sizeof(err));
        CHECK(n1 == 1 && n2 == 1 && n3 == 0 && rs.nrows == 2);
        const zx_value *v = cell(&rs, 0, "price");
        CHECK(v && v->type == ZX_T_TEXT && text_is(v, "12345678901234567890.0123456789"));
        v = cell(&rs, 0, "at");
        int64_t us = 0;
        zx_rfc3339_parse("2026-11-30T21:00:00.25Z", 23, &us);
        CHECK(v && v->type == ZX_T_TIMESTAMP && v->u.i == us);
        CHECK(text_is(cell(&rs, 0, "note"), "a\tb\nc\\d"));
        v = cell(&rs, 0, "doc");
        CHECK(v && v->type == ZX_T_JSON && text_is(v, "{\"k\": [1, 2]}"));
        v = cell(&rs, 0, "ok");
        CHECK(v && v->type == ZX_T_BOOL && v->u.b == 1);
        CHECK(cell(&rs, 1, "price") == NULL && cell(&rs, 1, "note") == NULL);
        v = cell(&rs, 1, "id");
        CHECK(v && v->type == ZX_T_INT && v->u.i == 2);
        /* text form: an interval has no binary form zx reads; bytea as the
         * stream sends it */
        zx_rowset_reset(&rs);
        CHECK(zx_pgc_table(cp, "public", "t2", err, sizeof(err)) == 0);
        CHECK(zx_pgc_read(cp, &rs, 100, err, sizeof(err)) == 1 &&
              zx_pgc_read(cp, &rs, 100, err, sizeof(err)) == 0);
        CHECK(text_is(cell(&rs, 0, "span"), "1 day 02:00:00"));
        CHECK(text_is(cell(&rs, 0, "raw"), "\\x00ff"));
        CHECK(text_is(cell(&rs, 0, "note"), "x\ty"));
        /* no such table: the server's words */
        CHECK(zx_pgc_table(cp, "public", "nope", err, sizeof(err)) == -1 &&
              strstr(err, "does not exist") != NULL);
        zx_pgc_close(cp);
    }
    /* a snapshot that does not exist */
    zx_pgc *bad = zx_pgc_open(url, "the test server", "00000003-0000001B-1", err, sizeof(err));
    CHECK(bad == NULL && strstr(err, "SET TRANSACTION SNAPSHOT") != NULL);
    CHECK(zx_pgc_open(url, "shown", "x'; DROP", err, sizeof(err)) == NULL &&
          strstr(err, "not a snapshot name") != NULL);
    zx_pgr_close(r);
    /* the closed connection's walsender may still hold the slot a moment */
    for (int i = 0; i < 200; i++) {
        PGresult *a = PQexec(c, "SELECT 1 FROM pg_replication_slots WHERE slot_name = 'zxc' "
                                "AND active");
        int busy = PQresultStatus(a) == PGRES_TUPLES_OK && PQntuples(a) > 0;
        PQclear(a);
        if (!busy)
            break;
        usleep(50 * 1000);
    }
    exec(c, "SELECT pg_drop_replication_slot('zxc')");
    PQfinish(c);
    snprintf(q, sizeof(q), "DROP DATABASE %s WITH (FORCE)", db);
    exec(admin, q);
    PQfinish(admin);
    zx_rowset_free(&rs);
    printf("test_pg_snapcopy: %s\n", failures ? "FAILED" : "all checks passed");
    return failures != 0;
}
