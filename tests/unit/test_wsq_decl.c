/*
 * test_wsq_decl.c — the declared type a SQLite mirror gives a source's
 * column (zx_wsq_decl_for_source, workers/writer/workspace_sqlite_schema.c)
 * and the fit kind those names read back as (zx_wsq_kind_from_decl): the
 * source's type for tools reading the schema, under a name whose SQLite
 * affinity keeps the values as they arrive (checked on a real SQLite
 * table: '1.50' stays the text '1.50').
 */
#include "workers/writer/workspace_sqlite_int.h"

#include <sqlite3.h>
#include <string.h>

#include "check.h"

static int is(const char *src, const char *want)
{
    const char *got = zx_wsq_decl_for_source(src);
    if (got && !strcmp(got, want))
        return 1;
    printf("  %s -> %s (want %s)\n", src, got ? got : "(null)", want);
    return 0;
}

/* The storage class and text SQLite keeps for text `val` in a column
 * declared `decl`. */
static int keeps(const char *decl, const char *val)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char sql[200];
    int ok = 0;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK)
        goto out;
    snprintf(sql, sizeof(sql), "CREATE TABLE t (c %s)", decl);
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO t VALUES (?)", -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(st, 1, val, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto out;
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(db, "SELECT typeof(c), c FROM t", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW)
        goto out;
    ok = !strcmp((const char *)sqlite3_column_text(st, 0), "text") &&
         !strcmp((const char *)sqlite3_column_text(st, 1), val);
    if (!ok)
        printf("  %s: '%s' became %s '%s'\n", decl, val, sqlite3_column_text(st, 0),
               sqlite3_column_text(st, 1));
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return ok;
}

int main(void)
{
    CHECK(is("numeric(12,2)", "NUMERIC TEXT(12,2)"));
    CHECK(is("numeric", "NUMERIC TEXT"));
    CHECK(is("date", "DATE"));
    CHECK(is("time without time zone", "TIME"));
    CHECK(is("time(3) without time zone", "TIME"));
    CHECK(is("time with time zone", "TIME WITH TIME ZONE"));
    CHECK(is("character varying(20)", "VARCHAR(20)"));
    CHECK(is("character varying", "VARCHAR"));
    CHECK(is("character(3)", "CHAR(3)"));
    CHECK(is("uuid", "UUID"));
    CHECK(is("inet", "INET"));
    CHECK(is("text", "TEXT"));
    /* the ones zx declared already */
    CHECK(is("bigint", "INTEGER"));
    CHECK(is("double precision", "REAL"));
    CHECK(is("boolean", "BOOLEAN"));
    CHECK(is("timestamp with time zone", "TIMESTAMP"));
    CHECK(is("timestamp(3) without time zone", "TIMESTAMP"));
    CHECK(is("jsonb", "JSON"));
    CHECK(is("bytea", "BLOB"));
    /* text: values that could be bare numbers, arrays, unknown types */
    CHECK(is("interval", "TEXT"));
    CHECK(is("money", "TEXT"));
    CHECK(is("bit(3)", "TEXT"));
    CHECK(is("numeric(10,2)[]", "TEXT"));
    CHECK(is("daterange", "TEXT"));
    CHECK(is("mood", "TEXT"));
    CHECK(zx_wsq_decl_for_source(NULL) == NULL);
    /* modifiers that are not numbers are dropped, never copied */
    CHECK(is("numeric(1,2); DROP", "NUMERIC TEXT"));
    /* the same name each time (kept once) */
    CHECK(zx_wsq_decl_for_source("numeric(7,3)") == zx_wsq_decl_for_source("numeric(7,3)"));

    /* values stay as they arrive: text affinity or no number among them */
    CHECK(keeps(zx_wsq_decl_for_source("numeric(12,2)"), "1.50"));
    CHECK(keeps(zx_wsq_decl_for_source("numeric"), "12345678901234567.89"));
    CHECK(keeps(zx_wsq_decl_for_source("numeric"), "00123"));
    CHECK(keeps(zx_wsq_decl_for_source("character varying(5)"), "007"));
    CHECK(keeps(zx_wsq_decl_for_source("date"), "2024-02-29"));
    CHECK(keeps(zx_wsq_decl_for_source("time without time zone"), "13:14:15.123456"));
    CHECK(keeps(zx_wsq_decl_for_source("uuid"), "00000000-0000-0000-0000-000000000000"));

    /* the writer fits numeric's values as text, as when it was TEXT (a
     * number kept as text stays its literal); the others keep kind "any",
     * as in a table a user made */
    CHECK(zx_wsq_kind_from_decl("NUMERIC TEXT(12,2)") == ZX_FIT_TEXT);
    CHECK(zx_wsq_kind_from_decl("NUMERIC TEXT") == ZX_FIT_TEXT);
    CHECK(zx_wsq_kind_from_decl("NUMERIC(12,2)") == ZX_FIT_ANY);
    CHECK(zx_wsq_kind_from_decl("DATE") == ZX_FIT_ANY);
    CHECK(zx_wsq_kind_from_decl("varchar(10)") == ZX_FIT_ANY);
    CHECK(zx_wsq_kind_from_decl("TIMESTAMP") == ZX_FIT_TIMESTAMP);
    CHECK(zx_wsq_kind_from_decl("INTEGER") == ZX_FIT_INTEGER);
    CHECK(zx_wsq_kind_from_decl("DATETIME") == ZX_FIT_ANY);
    CHECK(zx_wsq_kind_from_decl("GEOMETRY") == ZX_FIT_ANY);
    if (failures)
        printf("test_wsq_decl: %d check(s) failed\n", failures);
    return failures != 0;
}
