/*
 * test_workspace.c — unit tests of the workspace (workspace.h) and the fit
 * rules (fit.h): one suite, run against each backend, SQLite then
 * PostgreSQL.  Table creation, metadata columns, new columns, every
 * fit/misfit pair, the rejects table (values and messages), rollback of
 * schema changes, savepoints, checkpoints, positions, parked frames, the
 * forward journal, weird identifiers, user-made tables (a CHECK constraint
 * refusing rows), a view in a table's place, reopen, the column cap and
 * _extra, and a rows/s figure (printed, no threshold).  SQLite only: the
 * lock file, file modes, journal mode.  Postgres only: the advisory lock
 * (seen from another process; another schema), identifiers over 63 bytes,
 * a lost connection.
 *
 * The query hook (struct backend): open the suite's workspace, q1() (the
 * first value of a query as text) and DDL, on a connection of the test's
 * own: sqlite3 on the file, libpq to the test database.  The SQL text is
 * the same for both: in the Postgres test database, schema zxu_compat
 * (on the query connection's search_path, after the workspace schema)
 * has the few SQLite functions the checks use (quote, group_concat,
 * pragma_table_info, sqlite_master, json_extract, json_each), and the
 * word rowid is sent as ctid (only to order rows: these tables get
 * appends and, once, a delete, never a vacuum, so it is the insertion
 * order).  Where the backends store a value differently (jsonb normalises
 * JSON, timestamps and booleans have their own text, double precision
 * prints its shortest form, declared type names, case of identifiers) the
 * check gives both values: EXPECT2(sqlite, postgres).
 *
 * Postgres: ZX_PG_DSN, a libpq URI or key=value string of a superuser on a
 * running server (tests/services/postgres start prints one as DSN=).  The
 * suite makes a fresh database zxu_<pid> and drops it at the end.  Without
 * ZX_PG_DSN the Postgres half does not run and says so in one line; set
 * but unusable, it fails.
 *
 * One line per failed check (with the backend); a count of checks per
 * backend; non-zero exit on failure.
 */
#include "workers/writer/fit.h"
#include "workers/writer/workspace.h"
#include "workers/writer/workspace_pg_int.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/timefmt.h"

#include "tests/unit/check.h"

/* ---- the backend under test ------------------------------------------------ */

typedef struct backend {
    const char *name;                   /* "sqlite", "postgres" */
    int pg;
    zx_ws *(*open)(void);               /* the suite's workspace (also to reopen it) */
    const char *(*query)(const char *sql);  /* first value as text (see q1) */
    int (*exec)(const char *sql);       /* run SQL: 0, or -1 (printed) */
} backend;

static const backend *B;
static int checks;

/* The value expected from each backend. */
#define EXPECT2(sqlite_value, pg_value) (B->pg ? (pg_value) : (sqlite_value))

/* check.h's CHECK, also counting the checks and naming the backend. */
#undef CHECK
#define CHECK(cond)                                                                  \
    do {                                                                             \
        checks++;                                                                    \
        if (!(cond)) {                                                               \
            printf("%s:%d: [%s] check failed: %s\n", __FILE__, __LINE__, B->name, #cond); \
            failures++;                                                              \
        }                                                                            \
    } while (0)

#define CHECK_STR(got, want)                                                       \
    do {                                                                           \
        const char *g_ = (got), *w_ = (want);                                      \
        checks++;                                                                  \
        if (!g_ || strcmp(g_, w_) != 0) {                                          \
            printf("%s:%d: [%s] got [%s], want [%s]\n", __FILE__, __LINE__, B->name, \
                   g_ ? g_ : "(null)", w_);                                        \
            failures++;                                                            \
        }                                                                          \
    } while (0)

/* got contains want */
#define CHECK_HAS(got, want)                                                       \
    do {                                                                           \
        const char *g_ = (got), *w_ = (want);                                      \
        checks++;                                                                  \
        if (!g_ || !strstr(g_, w_)) {                                              \
            printf("%s:%d: [%s] [%s] does not contain [%s]\n", __FILE__, __LINE__, \
                   B->name, g_ ? g_ : "(null)", w_);                               \
            failures++;                                                            \
        }                                                                          \
    } while (0)

static char dir[256], dbpath[300];
static zx_rowset rs;
static char err[1024];

/* ---- building rowsets ---------------------------------------------------- */

static zx_value VI(int64_t i) { zx_value v = { .type = ZX_T_INT, .u.i = i }; return v; }
static zx_value VR(double d) { zx_value v = { .type = ZX_T_REAL, .u.d = d }; return v; }
static zx_value VB(int b) { zx_value v = { .type = ZX_T_BOOL, .u.b = b }; return v; }
static zx_value VN(void) { zx_value v = { .type = ZX_T_NULL }; return v; }

static zx_value VS(zx_type t, const char *s)
{
    zx_value v = { .type = (uint8_t)t, .len = (uint32_t)strlen(s) };
    v.s = zx_rowset_strdup(&rs, s, strlen(s));
    return v;
}
static zx_value VT(const char *s) { return VS(ZX_T_TEXT, s); }
static zx_value VJ(const char *s) { return VS(ZX_T_JSON, s); }
static zx_value VTS(const char *s)
{
    zx_value v = VS(ZX_T_TIMESTAMP, s);
    if (!zx_rfc3339_parse(s, strlen(s), &v.u.i))
        printf("bad test timestamp %s\n", s);
    return v;
}

static void row(void) { zx_rowset_begin_row(&rs); }
static void endrow(void) { zx_rowset_end_row(&rs); }
static void put(const char *name, zx_value v)
{
    int64_t c = zx_rowset_column(&rs, name, strlen(name), (zx_type)v.type);
    if (c < 0 || zx_rowset_add(&rs, (uint32_t)c, &v) < 0)
        printf("rowset out of memory\n");
}

/* ---- querying: the hook ------------------------------------------------------ */

static char qbuf[8192];

/* First column of the first row as text ("NULL" for SQL NULL, "<none>" for
 * no row, "<error: ...>"), on the backend's query connection. */
static const char *q1(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *q1(const char *fmt, ...)
{
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    return B->query(sql);
}

/* Run the SQL meant for this backend (the same text for both: pass it
 * twice). */
static void qexec2(const char *sqlite_sql, const char *pg_sql)
{
    CHECK(B->exec(EXPECT2(sqlite_sql, pg_sql)) == 0);
}

/* -- SQLite: a second connection on the file -- */

static sqlite3 *sq;

static const char *sqlite_query(const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(sq, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(qbuf, sizeof(qbuf), "<error: %s>", sqlite3_errmsg(sq));
        return qbuf;
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        snprintf(qbuf, sizeof(qbuf), "%s", t ? t : "NULL");
    } else {
        snprintf(qbuf, sizeof(qbuf), rc == SQLITE_DONE ? "<none>" : "<error: %s>",
                 sqlite3_errmsg(sq));
    }
    sqlite3_finalize(st);
    return qbuf;
}

static int sqlite_exec(const char *sql)
{
    char *m = NULL;
    if (sqlite3_exec(sq, sql, NULL, NULL, &m) == SQLITE_OK)
        return 0;
    printf("sqlite: %s: %s\n", sql, m ? m : "?");
    sqlite3_free(m);
    return -1;
}

static zx_ws *sqlite_open(void)
{
    zx_ws *w = zx_ws_open_sqlite(dbpath, "normal", 0, "test", NULL, err, sizeof(err));
    if (!w)
        printf("open failed: %s\n", err);
    return w;
}

static const backend sqlite_backend = { "sqlite", 0, sqlite_open, sqlite_query, sqlite_exec };

/* -- Postgres: a second connection to the test database -- */

#define PG_SCHEMA "zx \"ws\""            /* the suite's workspace schema */
#define PG_SCHEMA_SQL "\"zx \"\"ws\"\"\"" /* ... as an SQL identifier */
#define PG_APP "zxu-test"

static PGconn *pg_admin;                 /* ZX_PG_DSN: makes and drops the database */
static PGconn *pg_q;                     /* the test database: reads and DDL */
static char pg_db[64];                   /* zxu_<pid> */
static char pg_dsn[2048], pg_shown[2048];

/* The connection string dsn with dbname replaced (NULL: kept) and the
 * password left out when hide, as key=value pairs.  0, or -1. */
static int conninfo_with(const char *dsn, const char *dbname, int hide, char *out, size_t n)
{
    char *m = NULL;
    PQconninfoOption *o = PQconninfoParse(dsn, &m), *p;
    if (!o) {
        printf("postgres: ZX_PG_DSN: %s", m ? m : "cannot parse\n");
        PQfreemem(m);
        return -1;
    }
    size_t len = 0;
    out[0] = '\0';
    for (p = o; p->keyword; p++) {
        const char *v = strcmp(p->keyword, "dbname") == 0 && dbname ? dbname : p->val;
        if (!v || (hide && strcmp(p->keyword, "password") == 0))
            continue;
        len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%s='", len ? " " : "",
                                p->keyword);
        for (; *v; v++)
            len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%c",
                                    *v == '\'' || *v == '\\' ? "\\" : "", *v);
        len += (size_t)snprintf(out + len, len < n ? n - len : 0, "'");
    }
    PQconninfoFree(o);
    return len < n ? 0 : -1;
}

static int ident_char(char c)
{
    return c == '_' || c == '"' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || (unsigned char)c >= 0x80;
}

/* sql with every word "rowid" made "ctid" */
static void rowid_to_ctid(const char *sql, char *out, size_t n)
{
    size_t o = 0;
    for (const char *s = sql; *s && o + 5 < n;) {
        if (strncmp(s, "rowid", 5) == 0 && (s == sql || !ident_char(s[-1])) &&
            !ident_char(s[5])) {
            memcpy(out + o, "ctid", 4);
            o += 4;
            s += 5;
        } else {
            out[o++] = *s++;
        }
    }
    out[o] = '\0';
}

static const char *pg_result_text(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_TUPLES_OK && PQntuples(r) > 0 && PQnfields(r) > 0)
        snprintf(qbuf, sizeof(qbuf), "%s", PQgetisnull(r, 0, 0) ? "NULL" : PQgetvalue(r, 0, 0));
    else if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
        snprintf(qbuf, sizeof(qbuf), "<none>");
    else {
        snprintf(qbuf, sizeof(qbuf), "<error: %s", PQresultErrorMessage(r));
        size_t n = strlen(qbuf);
        while (n && qbuf[n - 1] == '\n')
            qbuf[--n] = '\0';
        snprintf(qbuf + n, sizeof(qbuf) - n, ">");
    }
    PQclear(r);
    return qbuf;
}

static const char *pg_query(const char *sql)
{
    static char s[4200];
    rowid_to_ctid(sql, s, sizeof(s));
    return pg_result_text(pg_q, s);
}

static int pg_exec_on(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok)
        printf("postgres: %s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
    return ok ? 0 : -1;
}

static int pg_exec(const char *sql)
{
    return pg_exec_on(pg_q, sql);
}

static zx_ws *pg_open_schema(const char *schema, const char *app, const char *owner,
                             int *locked)
{
    return zx_ws_open_postgres(pg_dsn, pg_shown, schema, app, owner, NULL, locked, err, sizeof(err));
}

static zx_ws *pg_open(void)
{
    zx_ws *w = pg_open_schema(PG_SCHEMA, PG_APP, "test", NULL);
    if (!w)
        printf("open failed: %s\n", err);
    return w;
}

static const backend pg_backend = { "postgres", 1, pg_open, pg_query, pg_exec };

/* What the checks read with SQLite's names, in the test database only
 * (never in the workspace schema). */
static const char pg_compat_sql[] =
    "CREATE SCHEMA zxu_compat;"
    /* SQLite's quote(): numbers and booleans bare, the rest as a literal */
    "CREATE FUNCTION zxu_compat.quote(x anyelement) RETURNS text LANGUAGE sql IMMUTABLE AS"
    " $$SELECT CASE WHEN x IS NULL THEN 'NULL' WHEN pg_typeof(x) IN ('smallint'::regtype,"
    " 'integer', 'bigint', 'real', 'double precision', 'numeric', 'boolean') THEN x::text"
    " ELSE '''' || replace(x::text, '''', '''''') || '''' END$$;"
    "CREATE FUNCTION zxu_compat.gc_step(acc text, x text, sep text) RETURNS text"
    " LANGUAGE sql IMMUTABLE AS $$SELECT CASE WHEN x IS NULL THEN acc WHEN acc IS NULL"
    " THEN x ELSE acc || sep || x END$$;"
    "CREATE FUNCTION zxu_compat.gc_step(acc text, x text) RETURNS text"
    " LANGUAGE sql IMMUTABLE AS $$SELECT zxu_compat.gc_step(acc, x, ',')$$;"
    "CREATE AGGREGATE zxu_compat.group_concat(text, text)"
    " (SFUNC = zxu_compat.gc_step, STYPE = text);"
    "CREATE AGGREGATE zxu_compat.group_concat(text) (SFUNC = zxu_compat.gc_step, STYPE = text);"
    /* the workspace schema's tables and their columns */
    "CREATE FUNCTION zxu_compat.pragma_table_info(tab text) RETURNS TABLE(name text, type text)"
    " LANGUAGE sql STABLE AS $$SELECT a.attname::text, format_type(a.atttypid, a.atttypmod)"
    " FROM pg_attribute a WHERE a.attrelid = to_regclass(quote_ident(current_schema()) || '.'"
    " || quote_ident(tab)) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum$$;"
    "CREATE VIEW zxu_compat.sqlite_master AS SELECT c.relname::text AS name FROM pg_class c"
    " WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())"
    " AND c.relkind IN ('r', 'v', 'p');"
    "CREATE FUNCTION zxu_compat.json_extract(j jsonb, path text) RETURNS text"
    " LANGUAGE sql IMMUTABLE AS $$SELECT jsonb_path_query_first(j, path::jsonpath) #>> '{}'$$;"
    "CREATE FUNCTION zxu_compat.json_each(j jsonb) RETURNS TABLE(key text, value jsonb)"
    " LANGUAGE sql IMMUTABLE AS $$SELECT * FROM jsonb_each(j)$$;";

static void pg_teardown(void)
{
    if (pg_q)
        PQfinish(pg_q);
    pg_q = NULL;
    if (pg_admin && pg_db[0]) {
        char q[160];
        snprintf(q, sizeof(q), "DROP DATABASE IF EXISTS %s WITH (FORCE)", pg_db);
        if (pg_exec_on(pg_admin, q) < 0)
            failures++;
    }
    if (pg_admin)
        PQfinish(pg_admin);
    pg_admin = NULL;
}

/* 1 ready, 0 not configured (said why), -1 failed (counted). */
static int pg_setup(void)
{
    const char *dsn = getenv("ZX_PG_DSN");
    if (!dsn || !*dsn) {
        printf("test_workspace: postgres: NOT RUN: ZX_PG_DSN is not set (a libpq URI of a"
               " superuser; tests/services/postgres start prints one as DSN=...)\n");
        return 0;
    }
    pg_admin = PQconnectdb(dsn);
    if (PQstatus(pg_admin) != CONNECTION_OK) {
        printf("test_workspace: postgres: cannot connect with ZX_PG_DSN: %s",
               PQerrorMessage(pg_admin));
        PQfinish(pg_admin);
        pg_admin = NULL;
        failures++;
        return -1;
    }
    PQclear(PQexec(pg_admin, "SET client_min_messages = warning"));
    snprintf(pg_db, sizeof(pg_db), "zxu_%ld", (long)getpid());
    char q[200];
    snprintf(q, sizeof(q), "DROP DATABASE IF EXISTS %s WITH (FORCE)", pg_db);
    int bad = pg_exec_on(pg_admin, q) < 0;
    snprintf(q, sizeof(q), "CREATE DATABASE %s", pg_db);
    bad = bad || pg_exec_on(pg_admin, q) < 0;
    if (!bad && (conninfo_with(dsn, pg_db, 0, pg_dsn, sizeof(pg_dsn)) < 0 ||
                 conninfo_with(dsn, pg_db, 1, pg_shown, sizeof(pg_shown)) < 0))
        bad = 1;
    if (!bad) {
        pg_q = PQconnectdb(pg_dsn);
        if (PQstatus(pg_q) != CONNECTION_OK) {
            printf("postgres: cannot connect to %s: %s", pg_db, PQerrorMessage(pg_q));
            bad = 1;
        }
    }
    bad = bad || pg_exec_on(pg_q, "SET client_min_messages = warning; SET TimeZone = 'UTC';"
                                  " SET application_name = 'zxu-query'") < 0;
    bad = bad || pg_exec_on(pg_q, pg_compat_sql) < 0;
    bad = bad || pg_exec_on(pg_q, "SET search_path = " PG_SCHEMA_SQL ", zxu_compat") < 0;
    if (bad) {
        failures++;
        pg_teardown();
        return -1;
    }
    return 1;
}

/* ---- helpers -------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}


/* begin + append + commit; returns the append's return value */
static int append1(zx_ws *w, const zx_ws_append *a, zx_ws_result *res)
{
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    int rc = zx_ws_append_rows(w, a, &rs, res, err, sizeof(err));
    if (rc != 0) {
        printf("append failed: %s\n", err);
        zx_ws_rollback(w); /* as the contract says */
        return rc;
    }
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    return rc;
}

/* ---- tests --------------------------------------------------------------- */

static void test_open_errors(void)
{
    int locked = -1;
    if (!B->pg) {
        CHECK(zx_ws_open_sqlite(dbpath, "sometimes", 0, NULL, NULL, err, sizeof(err)) == NULL);
        CHECK_HAS(err, "synchronous");
        CHECK(zx_ws_open_sqlite("/nonexistent/dir/x.db", "full", 0, NULL, &locked, err,
                                sizeof(err)) == NULL && locked == 0);
    } else {
        /* nothing listens there; the message shows dsn_shown, never the dsn */
        CHECK(zx_ws_open_postgres("postgresql://zx:pw-not-shown@127.0.0.1:1/x", "db-shown",
                                  "s", PG_APP, NULL, NULL, &locked, err, sizeof(err)) == NULL &&
              locked == 0);
        CHECK_HAS(err, "cannot connect to Postgres db-shown");
        CHECK(strstr(err, "pw-not-shown") == NULL);
        /* a database that does not exist: restarting cannot help (*locked = 1) */
        char dsn[2048];
        CHECK(conninfo_with(pg_dsn, "zxu_no_such_database", 0, dsn, sizeof(dsn)) == 0);
        CHECK(zx_ws_open_postgres(dsn, "nodb", "s", PG_APP, NULL, NULL, &locked, err,
                                  sizeof(err)) == NULL && locked == 1);
        CHECK_HAS(err, "zxu_no_such_database");
    }
    zx_ws_close(NULL);
    zx_ws_result_free(NULL);
}

static void test_create_all_types(zx_ws *w)
{
    zx_ws_result res;
    zx_ws_append a = { .pipeline = "p1", .table = "events", .metadata = 3,
                       .ingested_at_us = 1700000000000001, .request_id = "req-1" };
    CHECK_STR(zx_ws_backend(w), B->name);
    zx_rowset_reset(&rs);
    row();
    put("i", VI(-7));
    put("r", VR(2.5));
    put("b", VB(1));
    put("s", VT("hello"));
    put("ts", VTS("2026-11-29T19:09:25.123456+01:00"));
    put("j", VJ("{\"a\":[1,2]}"));
    put("n", VN());
    endrow();
    row();
    put("b", VB(0));
    put("n", VN());
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 2 && res.rejects == 0 && res.created_table == 1);
    CHECK(res.nnewcols == 6 && res.nrejcols == 0);
    if (res.nnewcols == 6) {
        CHECK_STR(res.newcols[0].name, "i");
        CHECK(res.newcols[0].type == ZX_T_INT);
        CHECK_STR(res.newcols[5].name, "j");
        CHECK(res.newcols[5].type == ZX_T_JSON);
    }
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT group_concat(name || ' ' || type, ', ') FROM pragma_table_info('events')"),
              EXPECT2("i INTEGER, r REAL, b BOOLEAN, s TEXT, ts TIMESTAMP, j JSON, "
                      "_ingested_at TIMESTAMP, _request_id TEXT",
                      "i bigint, r double precision, b boolean, s text,"
                      " ts timestamp with time zone, j jsonb,"
                      " _ingested_at timestamp with time zone, _request_id text"));
    CHECK_STR(q1("SELECT quote(i)||quote(r)||quote(b)||quote(s)||quote(ts)||quote(j) FROM events"
                 " ORDER BY rowid LIMIT 1"),
              EXPECT2("-72.51'hello''2026-11-29T18:09:25.123456Z''{\"a\":[1,2]}'",
                      "-72.5true'hello''2026-11-29 18:09:25.123456+00''{\"a\": [1, 2]}'"));
    CHECK_STR(q1("SELECT quote(b)||quote(i) FROM events ORDER BY rowid LIMIT 1 OFFSET 1"),
              EXPECT2("0NULL", "falseNULL"));
    CHECK_STR(q1("SELECT _ingested_at||' '||_request_id FROM events ORDER BY rowid LIMIT 1"
                 " OFFSET 1"),
              EXPECT2("2023-11-14T22:13:20.000001Z req-1", "2023-11-14 22:13:20.000001+00 req-1"));
    /* same statement again without a request id: NULL, not the old one */
    a.request_id = NULL;
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 2 && res.created_table == 0 && res.nnewcols == 0);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT quote(_request_id) FROM events ORDER BY rowid LIMIT 1 OFFSET 3"), "NULL");
    CHECK_STR(q1("DELETE FROM events WHERE rowid IN (SELECT rowid FROM events ORDER BY rowid DESC"
                 " LIMIT 2) RETURNING 'x'"), "x");
    CHECK_STR(q1("SELECT count(*) FROM events"), "2");

    /* a later batch: n now has a value, plus a new column; without metadata */
    zx_rowset_reset(&rs);
    row();
    put("n", VT("now text"));
    put("extra", VI(5));
    put("i", VI(1));
    endrow();
    a.metadata = 0;
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 1 && res.created_table == 0 && res.nnewcols == 2);
    if (res.nnewcols == 2) {
        CHECK_STR(res.newcols[0].name, "n");
        CHECK(res.newcols[0].type == ZX_T_TEXT);
        CHECK_STR(res.newcols[1].name, "extra");
    }
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT quote(n)||quote(extra)||quote(_ingested_at) FROM events ORDER BY rowid"
                 " LIMIT 1 OFFSET 2"), "'now text'5NULL");

    /* the same kinds on both backends */
    char *json = NULL;
    CHECK(zx_ws_table_columns(w, "events", &json) == 0);
    CHECK_STR(json, "[{\"name\":\"i\",\"type\":\"integer\"},{\"name\":\"r\",\"type\":\"real\"},"
                    "{\"name\":\"b\",\"type\":\"boolean\"},{\"name\":\"s\",\"type\":\"text\"},"
                    "{\"name\":\"ts\",\"type\":\"timestamp\"},{\"name\":\"j\",\"type\":\"json\"},"
                    "{\"name\":\"_ingested_at\",\"type\":\"timestamp\"},"
                    "{\"name\":\"_request_id\",\"type\":\"text\"},"
                    "{\"name\":\"n\",\"type\":\"text\"},{\"name\":\"extra\",\"type\":\"integer\"}]");
    free(json);
    CHECK(zx_ws_table_columns(w, "no_such_table", &json) == 1 && json == NULL);

    /* an all-null batch into a new table without metadata creates nothing */
    zx_rowset_reset(&rs);
    row();
    put("x", VN());
    endrow();
    a.table = "all_null";
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 0 && res.created_table == 0);
    CHECK_STR(q1("SELECT count(*) FROM sqlite_master WHERE name='all_null'"), "0");
    /* with metadata, the table has just the metadata columns */
    a.metadata = ZX_WS_META_REQUEST_ID;
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 1 && res.created_table == 1 && res.nnewcols == 0);
    CHECK_STR(q1("SELECT group_concat(name) FROM pragma_table_info('all_null')"), "_request_id");
    zx_ws_result_free(&res);
}

/* One value into one column of a known kind: what is stored, or a reject. */
typedef struct fit_case {
    const char *col;     /* column of the "fit" table */
    int val;             /* index into vals() */
    const char *want;    /* quote() of the stored value; NULL = misfit (both) */
    const char *want_pg; /* the same on Postgres; NULL = as want */
} fit_case;

static zx_value val_of(int i)
{
    switch (i) {
    case 0: return VI(42);
    case 1: return VR(3.0);
    case 2: return VR(3.5);
    case 3: return VR(1e20);
    case 4: return VB(1);
    case 5: return VT("a\"b");
    case 6: return VTS("2026-11-29T19:09:25.123456+01:00");
    case 7: return VJ("{\"a\":1}");
    default: { zx_value v = { .type = 99 }; return v; } /* hostile type */
    }
}

static void test_fit_pairs(zx_ws *w)
{
    zx_ws_result res;
    zx_ws_append a = { .pipeline = "pf", .table = "fit", .ingested_at_us = 1 };
    zx_rowset_reset(&rs);
    row();
    put("ci", VI(1));
    put("cr", VR(1.5));
    put("cb", VB(0));
    put("ct", VT("x"));
    put("cts", VTS("2020-01-01T00:00:00Z"));
    put("cj", VJ("[]"));
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    zx_ws_result_free(&res);

    static const fit_case cases[] = {
        { "ci", 0, "42", NULL }, { "ci", 1, "3", NULL }, { "ci", 2, NULL, NULL },
        { "ci", 3, NULL, NULL }, { "ci", 4, NULL, NULL }, { "ci", 5, NULL, NULL },
        { "ci", 6, NULL, NULL }, { "ci", 7, NULL, NULL }, { "ci", 8, NULL, NULL },
        /* double precision prints its shortest form */
        { "cr", 0, "42.0", "42" }, { "cr", 1, "3.0", "3" }, { "cr", 2, "3.5", NULL },
        { "cr", 3, "1.0e+20", "1e+20" }, { "cr", 4, NULL, NULL }, { "cr", 5, NULL, NULL },
        { "cr", 6, NULL, NULL }, { "cr", 7, NULL, NULL },
        { "cb", 0, NULL, NULL }, { "cb", 1, NULL, NULL }, { "cb", 2, NULL, NULL },
        { "cb", 3, NULL, NULL }, { "cb", 4, "1", "true" }, { "cb", 5, NULL, NULL },
        { "cb", 6, NULL, NULL }, { "cb", 7, NULL, NULL },
        { "ct", 0, "'42'", NULL }, { "ct", 1, "'3'", NULL }, { "ct", 2, "'3.5'", NULL },
        { "ct", 3, "'1e+20'", NULL }, { "ct", 4, "'true'", NULL }, { "ct", 5, "'a\"b'", NULL },
        { "ct", 6, "'2026-11-29T19:09:25.123456+01:00'", NULL },
        { "ct", 7, "'{\"a\":1}'", NULL }, { "ct", 8, NULL, NULL },
        { "cts", 0, NULL, NULL }, { "cts", 1, NULL, NULL }, { "cts", 2, NULL, NULL },
        { "cts", 3, NULL, NULL }, { "cts", 4, NULL, NULL }, { "cts", 5, NULL, NULL },
        { "cts", 6, "'2026-11-29T18:09:25.123456Z'", "'2026-11-29 18:09:25.123456+00'" },
        { "cts", 7, NULL, NULL },
        /* JSON has NUMERIC affinity in SQLite: a bare number is stored as one;
         * jsonb keeps a number as numeric (1e+20 in full) and spaces objects */
        { "cj", 0, "42", "'42'" }, { "cj", 1, "3", "'3'" }, { "cj", 2, "3.5", "'3.5'" },
        { "cj", 3, "1.0e+20", "'100000000000000000000'" }, { "cj", 4, "'true'", NULL },
        { "cj", 5, "'\"a\\\"b\"'", NULL },
        { "cj", 6, "'\"2026-11-29T19:09:25.123456+01:00\"'", NULL },
        { "cj", 7, "'{\"a\":1}'", "'{\"a\": 1}'" },
    };
    uint64_t want_rejects = 0;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const fit_case *c = &cases[k];
        zx_rowset_reset(&rs);
        row();
        put(c->col, val_of(c->val));
        endrow();
        CHECK(append1(w, &a, &res) == 0);
        checks++;
        if (res.rows != 1 || res.rejects != (c->want ? 0u : 1u) ||
            res.nnewcols != 0 || res.nrejcols != (c->want ? 0u : 1u)) {
            printf("%s:%d: [%s] case %s/%d: rows %" PRIu64 " rejects %" PRIu64
                   " newcols %zu\n", __FILE__, __LINE__, B->name, c->col, c->val, res.rows,
                   res.rejects, res.nnewcols);
            failures++;
        }
        if (!c->want && res.nrejcols == 1)
            CHECK(strcmp(res.rejcols[0].name, c->col) == 0 && res.rejcols[0].count == 1);
        zx_ws_result_free(&res);
        const char *got = q1("SELECT quote(\"%s\") FROM fit ORDER BY rowid DESC LIMIT 1", c->col);
        const char *want = !c->want ? "NULL" : B->pg && c->want_pg ? c->want_pg : c->want;
        checks++;
        if (strcmp(got, want) != 0) {
            printf("%s:%d: [%s] case %s/%d: stored [%s], want [%s]\n", __FILE__, __LINE__,
                   B->name, c->col, c->val, got, want);
            failures++;
        }
        if (!c->want)
            want_rejects++;
    }
    char n[32];
    snprintf(n, sizeof(n), "%" PRIu64, want_rejects);
    CHECK_STR(q1("SELECT count(*) FROM fit__rejects"), n);
    CHECK_STR(q1("SELECT rejected_at||'|'||pipeline||'|'||quote(request_id)||'|'||column_name||'|'"
                 "||column_type||'|'||value_type||'|'||raw_value||'|'||reason FROM fit__rejects"
                 " WHERE column_name='ci' AND value_type='text'"),
              EXPECT2("1970-01-01T00:00:00.000001Z|pf|NULL|ci|integer|text|\"a\\\"b\"|"
                      "value \"a\\\"b\" (text) does not fit column ci (integer)",
                      "1970-01-01 00:00:00.000001+00|pf|NULL|ci|integer|text|\"a\\\"b\"|"
                      "value \"a\\\"b\" (text) does not fit column ci (integer)"));
    CHECK_STR(q1("SELECT raw_value||'|'||reason FROM fit__rejects WHERE column_name='ci' AND"
                 " raw_value='3.5'"),
              "3.5|value 3.5 (real) does not fit column ci (integer)");
    CHECK_STR(q1("SELECT raw_value||'|'||reason FROM fit__rejects WHERE column_name='cts' AND"
                 " value_type='integer'"),
              "42|value 42 (integer) does not fit column cts (timestamp)");
    CHECK_STR(q1("SELECT raw_value||'|'||value_type FROM fit__rejects WHERE column_name='ci' AND"
                 " value_type='unknown'"), "null|unknown");
    CHECK_STR(q1("SELECT group_concat(name || ' ' || type, ', ') FROM"
                 " pragma_table_info('fit__rejects')"),
              EXPECT2("rejected_at TIMESTAMP, pipeline TEXT, request_id TEXT, column_name TEXT,"
                      " column_type TEXT, value_type TEXT, raw_value TEXT, reason TEXT,"
                      " source_key TEXT, source_position TEXT",
                      "rejected_at timestamp with time zone, pipeline text, request_id text,"
                      " column_name text, column_type text, value_type text, raw_value text,"
                      " reason text, source_key text, source_position text"));

    /* a NUL byte in text, \u0000 in JSON: fine for SQLite; Postgres can
     * store neither (text cannot hold NUL, jsonb refuses its escape), so
     * there they are misfits */
    zx_rowset_reset(&rs);
    row();
    zx_value nul = { .type = ZX_T_TEXT, .len = 3 };
    nul.s = zx_rowset_strdup(&rs, "a\0b", 3);
    put("ct", nul);
    put("cj", VJ("\"\\u0000\""));
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 1 && res.rejects == EXPECT2(0u, 2u) && res.nrejcols == EXPECT2(0u, 2u));
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT (ct IS NULL)||' '||(cj IS NULL) FROM fit ORDER BY rowid DESC LIMIT 1"),
              EXPECT2("0 0", "true true"));
    snprintf(n, sizeof(n), "%" PRIu64, want_rejects + EXPECT2(0u, 2u));
    CHECK_STR(q1("SELECT count(*) FROM fit__rejects"), n);
    CHECK_STR(q1("SELECT raw_value FROM fit__rejects WHERE column_name='cj'"),
              EXPECT2("<none>", "\"\\u0000\""));

    /* the example of the README: "abc" into amount (integer), with metadata */
    a.table = "pay";
    a.request_id = "r-9";
    zx_rowset_reset(&rs);
    row();
    put("amount", VI(10));
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    zx_ws_result_free(&res);
    zx_rowset_reset(&rs);
    row();
    put("amount", VR(2.0)); /* batch type real; 2.0 still fits the integer column */
    endrow();
    row();
    put("amount", VT("abc"));
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 2 && res.rejects == 1 && res.nrejcols == 1);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT group_concat(quote(amount)) FROM pay"), "10,2,NULL");
    CHECK_STR(q1("SELECT request_id||'|'||reason FROM pay__rejects"),
              "r-9|value \"abc\" (text) does not fit column amount (integer)");

    /* a long raw value is shortened in the reason, kept whole in raw_value */
    char longtext[300];
    memset(longtext, 'x', sizeof(longtext) - 1);
    longtext[sizeof(longtext) - 1] = 0;
    zx_rowset_reset(&rs);
    row();
    put("amount", VT(longtext));
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT length(raw_value)||' '||length(reason) FROM pay__rejects"
                 " ORDER BY rowid DESC LIMIT 1"), "301 133");

    /* rejected messages: value_type "message", the source columns set */
    zx_frame_reject rj[2] = {
        { .raw = "not json {", .raw_len = 10, .reason = "bad JSON", .key = "k1", .key_len = 2,
          .position = "{\"partition\":0,\"offset\":7}" },
        { .raw = "\xff\xfe", .raw_len = 2, .reason = "not UTF-8" },
    };
    uint64_t stored = 0;
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_reject_messages(w, &a, rj, 2, &stored, err, sizeof(err)) == 0 && stored == 2);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    CHECK_STR(q1("SELECT value_type||'|'||raw_value||'|'||reason||'|'||source_key||'|'||"
                 "source_position||'|'||quote(column_name) FROM pay__rejects WHERE"
                 " value_type='message' ORDER BY rowid LIMIT 1"),
              "message|not json {|bad JSON|k1|{\"partition\":0,\"offset\":7}|NULL");
    /* bytes that are not text: a BLOB on SQLite, their hex on Postgres */
    CHECK_STR(q1("SELECT quote(raw_value)||'|'||quote(source_key) FROM pay__rejects WHERE"
                 " value_type='message' ORDER BY rowid DESC LIMIT 1"),
              EXPECT2("X'FFFE'|NULL", "'\\xfffe'|NULL"));
}

static void test_rollback(zx_ws *w)
{
    zx_ws_result res;
    zx_ws_append a = { .pipeline = "p1", .table = "events" };
    uint64_t seq = 99;
    CHECK(zx_ws_checkpoint_get(w, "p1", &seq) == 0 && seq == 0);
    CHECK(zx_ws_checkpoint_set(w, "p1", 5, 1) == -1); /* no transaction */

    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_begin(w, err, sizeof(err)) == -1);
    zx_rowset_reset(&rs);
    row();
    put("late", VR(1.25));
    endrow();
    CHECK(zx_ws_append_rows(w, &a, &rs, &res, err, sizeof(err)) == 0);
    CHECK(res.nnewcols == 1 && res.rows == 1);
    zx_ws_result_free(&res);
    a.table = "gone";
    CHECK(zx_ws_append_rows(w, &a, &rs, &res, err, sizeof(err)) == 0);
    CHECK(res.created_table == 1);
    zx_ws_result_free(&res);
    CHECK(zx_ws_checkpoint_set(w, "p1", 42, 1700000000000000) == 0);
    CHECK(zx_ws_checkpoint_get(w, "p1", &seq) == 0 && seq == 42);
    zx_ws_rollback(w);
    CHECK(zx_ws_checkpoint_get(w, "p1", &seq) == 0 && seq == 0);
    CHECK_STR(q1("SELECT count(*) FROM pragma_table_info('events') WHERE name='late'"), "0");
    CHECK_STR(q1("SELECT count(*) FROM sqlite_master WHERE name='gone'"), "0");

    /* the next append re-adds the column and re-creates the table */
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    a.table = "events";
    CHECK(zx_ws_append_rows(w, &a, &rs, &res, err, sizeof(err)) == 0);
    CHECK(res.nnewcols == 1 && res.rows == 1 && res.rejects == 0);
    zx_ws_result_free(&res);
    a.table = "gone";
    CHECK(zx_ws_append_rows(w, &a, &rs, &res, err, sizeof(err)) == 0);
    CHECK(res.created_table == 1 && res.rows == 1);
    zx_ws_result_free(&res);
    CHECK(zx_ws_checkpoint_set(w, "p1", 43, 1700000000000000) == 0);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == -1);
    CHECK_STR(q1("SELECT type FROM pragma_table_info('events') WHERE name='late'"),
              EXPECT2("REAL", "double precision"));
    CHECK_STR(q1("SELECT group_concat(quote(late)) FROM events WHERE late IS NOT NULL"), "1.25");
    CHECK_STR(q1("SELECT seq||' '||committed_at FROM _zx_checkpoints WHERE pipeline='p1'"),
              EXPECT2("43 2023-11-14T22:13:20.000000Z", "43 2023-11-14 22:13:20+00"));
    CHECK(zx_ws_append_rows(w, &a, &rs, &res, err, sizeof(err)) == -1); /* no txn */
    zx_ws_result_free(&res);

    /* a frame's savepoint: undone, the transaction goes on */
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_savepoint(w) == 0);
    a.table = "sp_kept";
    CHECK(zx_ws_append_rows(w, &a, &rs, &res, err, sizeof(err)) == 0 && res.rows == 1);
    zx_ws_result_free(&res);
    CHECK(zx_ws_savepoint_release(w) == 0);
    CHECK(zx_ws_savepoint(w) == 0);
    a.table = "sp_undone";
    CHECK(zx_ws_append_rows(w, &a, &rs, &res, err, sizeof(err)) == 0 && res.rows == 1);
    zx_ws_result_free(&res);
    CHECK(zx_ws_savepoint_rollback(w) == 0);
    CHECK(zx_ws_checkpoint_set(w, "p1", 44, 1700000000000000) == 0);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    CHECK_STR(q1("SELECT count(*) FROM sp_kept"), "1");
    CHECK_STR(q1("SELECT count(*) FROM sqlite_master WHERE name='sp_undone'"), "0");
    CHECK(zx_ws_checkpoint_get(w, "p1", &seq) == 0 && seq == 44);

    /* pruning checkpoints outside a transaction */
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_checkpoint_set(w, "px/1", 1, 1) == 0 && zx_ws_checkpoint_set(w, "px/2", 2, 1) == 0 &&
          zx_ws_checkpoint_set(w, "px/3", 3, 1) == 0);
    CHECK(zx_ws_checkpoint_prune(w, "px/", "px/2", "px/2") == -1); /* inside */
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_checkpoint_prune(w, "px/", "px/2", "px/2") == 0);
    CHECK_STR(q1("SELECT group_concat(pipeline) FROM _zx_checkpoints WHERE pipeline LIKE 'px/%%'"),
              "px/2");
}

/* Positions: stored with the transaction, walked in order, dropped. */
typedef struct pos_walk {
    char seen[256];
    size_t n;
} pos_walk;

static int pos_cb(const char *pipeline, const char *part, const void *val, size_t len, void *ctx)
{
    pos_walk *p = ctx;
    p->n += (size_t)snprintf(p->seen + p->n, p->n < sizeof(p->seen) ? sizeof(p->seen) - p->n : 0,
                             "%s/%s=%zu:%02x ", pipeline, part, len,
                             len ? ((const unsigned char *)val)[0] : 0);
    return 0;
}

static void test_positions(zx_ws *w)
{
    static const unsigned char bin[3] = { 0x00, 0xff, 0x7f };
    CHECK(zx_ws_position_set(w, "k", "0", bin, 3, 1) == -1); /* no transaction */
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_position_set(w, "k", "1", "b", 1, 1) == 0);
    CHECK(zx_ws_position_set(w, "k", "0", bin, 3, 1) == 0);
    CHECK(zx_ws_position_set(w, "j", "0", "", 0, 1) == 0);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    pos_walk p = { .n = 0 };
    CHECK(zx_ws_positions_each(w, pos_cb, &p) == 0);
    CHECK_STR(p.seen, "j/0=0:00 k/0=3:00 k/1=1:62 ");
    CHECK(zx_ws_positions_drop(w, "k") == 0);
    p.n = 0;
    p.seen[0] = '\0';
    CHECK(zx_ws_positions_each(w, pos_cb, &p) == 0);
    CHECK_STR(p.seen, "j/0=0:00 ");
    CHECK(zx_ws_positions_drop(w, "j") == 0);
}

/* The compare-and-set of a shared workspace (zx_ws_position_lock): only
 * inside a transaction and only on Postgres; a missing row is made with a
 * NULL value (not listed by positions_each), the value is this
 * transaction's own once set, and the row stays locked until the
 * transaction ends (another session's FOR UPDATE NOWAIT fails). */
static void test_position_lock(zx_ws *w)
{
    void *v = (void *)1;
    size_t len = 7;
    CHECK(zx_ws_position_lock(w, "f", "t:0", &v, &len) == -1 && v == NULL && len == 0);
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    if (!B->pg) {
        CHECK(zx_ws_position_lock(w, "f", "t:0", &v, &len) == -1); /* no shared mode */
        zx_ws_rollback(w);
        return;
    }
    CHECK(zx_ws_position_lock(w, "f", "t:0", &v, &len) == 0 && v == NULL && len == 0);
    static const unsigned char off[8] = { 0x2a, 0, 0, 0, 0, 0, 0, 0 };
    CHECK(zx_ws_position_set(w, "f", "t:0", off, 8, 1) == 0);
    CHECK(zx_ws_position_lock(w, "f", "t:0", &v, &len) == 0 && v && len == 8 &&
          memcmp(v, off, 8) == 0);
    free(v);
    CHECK(zx_ws_position_lock(w, "f", "t:1", &v, &len) == 0 && v == NULL);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    /* a committed row: locked by the next transaction that looks at it */
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_position_lock(w, "f", "t:0", &v, &len) == 0 && v && len == 8 &&
          memcmp(v, off, 8) == 0);
    free(v);
    const char *nowait = "SELECT value FROM " PG_SCHEMA_SQL "._zx_positions WHERE pipeline = "
                         "'f' AND part = 't:0' FOR UPDATE NOWAIT";
    CHECK(pg_exec("BEGIN") == 0);
    printf("(a lock_not_available error is expected next)\n");
    CHECK(pg_exec(nowait) == -1);           /* held by w's transaction */
    CHECK(pg_exec("ROLLBACK") == 0);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    CHECK(pg_exec("BEGIN") == 0);
    CHECK(pg_exec(nowait) == 0);            /* free once it committed */
    CHECK(pg_exec("ROLLBACK") == 0);
    pos_walk p = { .n = 0 };
    CHECK(zx_ws_positions_each(w, pos_cb, &p) == 0);
    CHECK_STR(p.seen, "f/t:0=8:2a ");       /* t:1 (NULL) is not listed */
    CHECK(zx_ws_positions_drop(w, "f") == 0);
}

/* Parked frames: stored with the transaction (a rollback undoes them),
 * read back oldest first with their bytes, counted per table, deleted. */
static int park_cb(const char *pipeline, const char *table, uint64_t count, uint64_t rows,
                   uint64_t bytes, uint64_t last_n, void *ctx)
{
    pos_walk *p = ctx;
    p->n += (size_t)snprintf(p->seen + p->n, p->n < sizeof(p->seen) ? sizeof(p->seen) - p->n : 0,
                             "%s/%s=%llu,%llu,%llu,%llu ", pipeline, table,
                             (unsigned long long)count, (unsigned long long)rows,
                             (unsigned long long)bytes, (unsigned long long)last_n);
    return 0;
}

static void test_parked(zx_ws *w)
{
    static const unsigned char bin[4] = { 0x00, 0xff, 0x7f, 0x01 };
    uint64_t n = 0;
    void *f = NULL;
    size_t len = 0;
    CHECK(zx_ws_park_put(w, "k", "t", 1, 2, bin, 4, "why", 1) == -1); /* no transaction */
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_park_put(w, "k", "t", 1, 2, bin, 4, "why", 1) == 0);
    zx_ws_rollback(w);
    CHECK(zx_ws_park_first(w, "k", "t", &n, &f, &len) == 0);
    CHECK(f == NULL);
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_park_put(w, "k", "t", 2, 5, "abc", 3, "why", 1) == 0);
    CHECK(zx_ws_park_put(w, "k", "t", 1, 2, bin, 4, "why", 1) == 0);
    CHECK(zx_ws_park_put(w, "k", "u", 7, 1, "", 0, NULL, 1) == 0);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    pos_walk p = { .n = 0 };
    CHECK(zx_ws_parked_each(w, park_cb, &p) == 0);
    CHECK(strstr(p.seen, "k/t=2,7,7,2 ") != NULL);
    CHECK(strstr(p.seen, "k/u=1,1,0,7 ") != NULL);
    CHECK(zx_ws_park_first(w, "k", "t", &n, &f, &len) == 1);
    CHECK(n == 1 && len == 4 && f && memcmp(f, bin, 4) == 0);
    free(f);
    CHECK(zx_ws_park_del(w, "k", "t", 1) == -1); /* no transaction */
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_park_del(w, "k", "t", 1) == 0);
    CHECK(zx_ws_park_first(w, "k", "t", &n, &f, &len) == 1); /* sees its own delete */
    CHECK(n == 2 && len == 3 && f && memcmp(f, "abc", 3) == 0);
    free(f);
    CHECK(zx_ws_park_del(w, "k", "t", 2) == 0);
    CHECK(zx_ws_park_del(w, "k", "u", 7) == 0);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    p.n = 0;
    p.seen[0] = '\0';
    CHECK(zx_ws_parked_each(w, park_cb, &p) == 0);
    CHECK_STR(p.seen, "");
}

/* The forward journal: the table is made at open; rows go with the
 * transaction (a rollback undoes them), last is the largest n of the
 * pipeline's rows (0 when none, its own uncommitted rows seen), an n
 * given twice is refused, the bytes are kept as given, drop removes one
 * pipeline's rows only. */
static void test_forward(zx_ws *w)
{
    static const unsigned char bin[5] = { 0x93, 0x00, 0xff, 0x7f, 0x01 };
    const uint64_t big = 1780000000000000ull; /* µs since the epoch, 2026 */
    uint64_t n = 99;
    CHECK_STR(q1("SELECT group_concat(name, ',') FROM pragma_table_info('_zx_forward')"),
              "pipeline,n,nrows,frame,at");
    CHECK(zx_ws_forward_last(w, "f", &n) == 0 && n == 0);
    CHECK(zx_ws_forward_put(w, "f", 1, bin, 5, 2) == -1); /* no transaction */
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_forward_put(w, "f", big, bin, 5, 2) == 0);
    CHECK(zx_ws_forward_last(w, "f", &n) == 0 && n == big); /* its own write */
    zx_ws_rollback(w);
    CHECK(zx_ws_forward_last(w, "f", &n) == 0 && n == 0);
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_forward_put(w, "f", big, bin, 5, 2) == 0);
    CHECK(zx_ws_forward_put(w, "f", big + 7, "", 0, 0) == 0);
    CHECK(zx_ws_forward_put(w, "f", big + 3, "abc", 3, 1) == 0);
    CHECK(zx_ws_forward_put(w, "g", 5, "x", 1, 1) == 0);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_forward_last(w, "f", &n) == 0 && n == big + 7);
    CHECK(zx_ws_forward_last(w, "g", &n) == 0 && n == 5);
    CHECK(zx_ws_forward_last(w, "h", &n) == 0 && n == 0);
    CHECK_STR(q1("SELECT group_concat(n || ':' || nrows || ':' || length(frame), ' ') FROM"
                 " (SELECT * FROM _zx_forward WHERE pipeline = 'f' ORDER BY n) x"),
              "1780000000000000:2:5 1780000000000003:1:3 1780000000000007:0:0");
    CHECK_STR(q1("SELECT quote(frame) FROM _zx_forward WHERE pipeline = 'f' AND nrows = 2"),
              B->pg ? "'\\x9300ff7f01'" : "X'9300FF7F01'");
    CHECK_STR(q1("SELECT count(*) FROM _zx_forward WHERE at IS NULL"), "0");
    /* an n given twice: refused (the writer never reuses one) */
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_forward_put(w, "f", big + 3, "abc", 3, 1) == -1);
    zx_ws_rollback(w);
    /* the forwarder deleted every row: last is 0 again */
    CHECK(B->exec("DELETE FROM _zx_forward WHERE pipeline = 'g'") == 0);
    CHECK(zx_ws_forward_last(w, "g", &n) == 0 && n == 0);
    /* drop: one pipeline's rows, autocommit or in a transaction */
    CHECK(zx_ws_forward_put(w, "g", 6, "x", 1, 1) == -1);
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_forward_put(w, "g", 6, "x", 1, 1) == 0);
    CHECK(zx_ws_forward_drop(w, "f") == 0);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_forward_last(w, "f", &n) == 0 && n == 0);
    CHECK(zx_ws_forward_last(w, "g", &n) == 0 && n == 6);
    CHECK(zx_ws_forward_drop(w, "g") == 0);
    CHECK_STR(q1("SELECT count(*) FROM _zx_forward"), "0");
    /* one row left for test_reopen: n is kept across a reopen */
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_forward_put(w, "kept", big + 11, "k", 1, 1) == 0);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
}

static void test_identifiers(zx_ws *w)
{
    zx_ws_result res;
    zx_ws_append a = { .pipeline = "p\"1", .table = "we\"ird tab; DROP TABLE events;--" };
    zx_rowset_reset(&rs);
    row();
    put("a\"b", VI(1));
    put("select", VT("kw"));
    put("sp ace", VB(1));
    put("\xc3\xbcn\xc3\xaf", VR(0.5));
    put("A", VI(2));
    put("a", VI(3)); /* its own column: SQLite, whose names ignore case, calls it a_2 */
    put("bad", VT("not an int"));
    endrow();
    row();
    put("bad", VI(7));
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 2 && res.created_table == 1);
    CHECK(res.nnewcols == 7u);
    zx_ws_result_free(&res);
#define IDQ(a) "SELECT \"a\"\"b\"||\"select\"||\"sp ace\"||\"\xc3\xbcn\xc3\xaf\"||\"A\"||" \
                "\"" a "\" FROM \"we\"\"ird tab; DROP TABLE events;--\" ORDER BY rowid LIMIT 1"
    CHECK_STR(q1(EXPECT2(IDQ("a_2"), IDQ("a"))),
              EXPECT2("1kw10.523", "1kwtrue0.523"));
    CHECK_STR(q1("SELECT quote(bad) FROM \"we\"\"ird tab; DROP TABLE events;--\" ORDER BY rowid"
                 " DESC LIMIT 1"), "'7'");
    CHECK_STR(q1("SELECT count(*) FROM events"), "4");
    CHECK_STR(q1("SELECT count(*) FROM pragma_table_info('we\"ird tab; DROP TABLE events;--')"),
              "7");
}

static void test_user_table(zx_ws *w)
{
    zx_ws_result res;
    /* Postgres has no implicit rowid: the key is an identity column */
    qexec2("CREATE TABLE usr(id INTEGER PRIMARY KEY, v VARCHAR(10),"
           " d TEXT NOT NULL DEFAULT 'dflt', c INTEGER CHECK (c < 100))",
           "CREATE TABLE usr(id INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
           " v VARCHAR(10), d TEXT NOT NULL DEFAULT 'dflt', c INTEGER CHECK (c < 100))");
    /* SQLite's names are case-insensitive, Postgres' quoted ones are not */
    zx_ws_append a = { .pipeline = "pu", .table = EXPECT2("USR", "usr"), .metadata = 0 };
    zx_rowset_reset(&rs);
    row();
    put("v", VI(1));
    endrow();
    row();
    put("v", VT("two"));
    endrow();
    row();
    put("v", VJ("[3]"));
    put("c", VI(500)); /* violates the CHECK: the row is a reject, kept whole */
    endrow();
    row();
    put("v", VB(1));
    put("c", VI(5));
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 3 && res.rejects == 1 && res.created_table == 0 && res.nnewcols == 0);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT group_concat(quote(v)||quote(d)||quote(c), ' ') FROM usr"),
              "'1''dflt'NULL 'two''dflt'NULL '1''dflt'5"); /* TEXT affinity */
    CHECK_STR(q1("SELECT value_type||'|'||reason||'|'||quote(column_name)||quote(raw_value)"
                 " FROM usr__rejects"),
              EXPECT2("row|row not inserted: CHECK constraint failed: c < 100|"
                      "NULL'{\"v\":[3],\"c\":500}'",
                      "row|row not inserted: new row for relation \"usr\" violates check"
                      " constraint \"usr_c_check\"|NULL'{\"v\":[3],\"c\":500}'"));
    char *json = NULL;
    CHECK(zx_ws_table_columns(w, "usr", &json) == 0);
    CHECK_STR(json, EXPECT2("[{\"name\":\"id\",\"type\":\"integer\"},"
                            "{\"name\":\"v\",\"type\":\"varchar(10)\"},"
                            "{\"name\":\"d\",\"type\":\"text\"},"
                            "{\"name\":\"c\",\"type\":\"integer\"}]",
                            "[{\"name\":\"id\",\"type\":\"integer\"},"
                            "{\"name\":\"v\",\"type\":\"character varying(10)\"},"
                            "{\"name\":\"d\",\"type\":\"text\"},"
                            "{\"name\":\"c\",\"type\":\"integer\"}]"));
    free(json);

    /* every row refused: none stored, each a reject, the append succeeds */
    zx_rowset_reset(&rs);
    row();
    put("c", VI(100));
    endrow();
    row();
    put("c", VI(101));
    endrow();
    row();
    put("c", VI(5000000000)); /* Postgres' integer refuses it, SQLite's CHECK */
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 0 && res.rejects == 3);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT count(*) FROM usr__rejects"), "4");
    CHECK_STR(q1("SELECT raw_value FROM usr__rejects ORDER BY rowid DESC LIMIT 1"),
              "{\"c\":5000000000}");
    CHECK_STR(q1("SELECT reason FROM usr__rejects ORDER BY rowid DESC LIMIT 1"),
              EXPECT2("row not inserted: CHECK constraint failed: c < 100",
                      "row not inserted: value \"5000000000\" is out of range for type integer"));
    CHECK_STR(q1("SELECT count(*) FROM usr"), "3");
}

/* An append large enough to be streamed into its COPY (Postgres: past
 * 256 KiB of COPY data the rows go as they are encoded), with value rejects
 * met before and while it streams (recorded after the COPY ends), and a
 * row the table refuses (the COPY is rolled back and the rows sent one by
 * one): every other row stored, every reject recorded once. */
static void test_streamed_copy(zx_ws *w)
{
    enum { N = 6000 };
    zx_ws_result res;
    qexec2("CREATE TABLE bigu(id INTEGER, v TEXT, c INTEGER CHECK (c < 100))",
           "CREATE TABLE bigu(id INTEGER, v TEXT, c BIGINT CHECK (c < 100))");
    zx_ws_append a = { .pipeline = "pb", .table = "bigu" };
    char v[128];
    for (int pass = 0; pass < 2; pass++) {
        zx_rowset_reset(&rs);
        for (int i = 0; i < N; i++) {
            row();
            put("id", VI(pass * N + i));
            snprintf(v, sizeof(v), "%0100d", i);
            put("v", VT(v));
            if (i == 100 || i == 5000)
                put("c", VT("not a number"));  /* NULL + a value reject */
            else if (pass == 0 && i == 4000)
                put("c", VI(500));              /* the CHECK refuses the row */
            else
                put("c", VI(i % 100));
            endrow();
        }
        CHECK(append1(w, &a, &res) == 0);
        CHECK(res.rows == (pass == 0 ? N - 1 : N) && res.rejects == (pass == 0 ? 3 : 2));
        zx_ws_result_free(&res);
    }
    CHECK_STR(q1("SELECT count(*) FROM bigu"), "11999");
    CHECK_STR(q1("SELECT count(*) FROM bigu WHERE c IS NULL"), "4");
    CHECK_STR(q1("SELECT count(*) FROM bigu WHERE id = 4000"), "0");
    CHECK_STR(q1("SELECT count(DISTINCT id) FROM bigu"), "11999");
    CHECK_STR(q1("SELECT count(*) FROM bigu__rejects"), "5");
    CHECK_STR(q1("SELECT count(*) FROM bigu__rejects WHERE value_type = 'row'"), "1");
    CHECK_STR(q1("SELECT count(*) FROM bigu__rejects WHERE column_name = 'c'"), "4");
}

/* A view where the table should be: the append fails, and for good. */
static void test_view(zx_ws *w)
{
    zx_ws_result res;
    qexec2("CREATE VIEW vw AS SELECT 1 AS x", "CREATE VIEW vw AS SELECT 1 AS x");
    zx_ws_append a = { .pipeline = "pv", .table = "vw" };
    zx_rowset_reset(&rs);
    row();
    put("x", VI(2));
    endrow();
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_append_rows(w, &a, &rs, &res, err, sizeof(err)) == -1);
    CHECK_HAS(err, "vw");
    CHECK(zx_ws_failure_is_permanent(w) == 1);
    zx_ws_result_free(&res);
    /* Postgres has aborted the transaction: a commit now (against the
     * contract, which says roll back) must not report success, since
     * nothing is committed (the server answers COMMIT with ROLLBACK) */
    if (B->pg)
        CHECK(zx_ws_commit(w, err, sizeof(err)) == -1);
    zx_ws_rollback(w);
    /* the workspace goes on */
    a.table = "after_view";
    CHECK(append1(w, &a, &res) == 0 && res.rows == 1);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT count(*) FROM after_view"), "1");
}

static void test_reopen(void)
{
    zx_ws *w = B->open();
    CHECK(w != NULL);
    if (!w)
        return;
    uint64_t seq = 0;
    CHECK(zx_ws_checkpoint_get(w, "p1", &seq) == 0 && seq == 44);
    CHECK(zx_ws_forward_last(w, "kept", &seq) == 0 && seq == 1780000000000011ull);
    CHECK(zx_ws_forward_drop(w, "kept") == 0);
    zx_ws_result res;
    zx_ws_append a = { .pipeline = "pf", .table = "pay" };
    zx_rowset_reset(&rs);
    row();
    put("amount", VT("still not a number"));
    put("note", VT("new after reopen"));
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 1 && res.rejects == 1 && res.nnewcols == 1);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT quote(amount)||note FROM pay ORDER BY rowid DESC LIMIT 1"),
              "NULLnew after reopen");
    zx_ws_close(w);
}

/* SQLite: one workspace, one writer: a second handle on the same file is
 * refused with the holder's text, and gets it once the first is closed. */
static void test_lock(void)
{
    char path[400], want[64];
    snprintf(path, sizeof(path), "%s/locked.db", dir);
    int locked = -1;
    zx_ws *a = zx_ws_open_sqlite(path, "normal", 0, "data_dir /first", &locked, err, sizeof(err));
    CHECK(a != NULL && locked == 0);
    zx_ws *b = zx_ws_open_sqlite(path, "normal", 0, "data_dir /second", &locked, err, sizeof(err));
    CHECK(b == NULL && locked == 1);
    snprintf(want, sizeof(want), "pid %ld on host ", (long)getpid());
    CHECK_HAS(err, "in use by another zxd");
    CHECK_HAS(err, want);
    CHECK_HAS(err, "data_dir /first");
    CHECK_HAS(err, "locked.db-zxlock");
    zx_ws_close(b);
    zx_ws_close(a);
    b = zx_ws_open_sqlite(path, "normal", 0, "data_dir /second", &locked, err, sizeof(err));
    CHECK(b != NULL && locked == 0);
    zx_ws_close(b);
}

/* SQLite: a workspace the writer creates has the LMDB store's mode, 0640,
 * and so do its -wal, -shm and lock files. */
static void test_modes(void)
{
    char path[400], f[420];
    snprintf(path, sizeof(path), "%s/modes.db", dir);
    mode_t old = umask(022);
    zx_ws *w = zx_ws_open_sqlite(path, "normal", 0, NULL, NULL, err, sizeof(err));
    CHECK(w != NULL);
    if (w) {
        zx_ws_result res;
        zx_ws_append a = { .pipeline = "m", .table = "m" };
        zx_rowset_reset(&rs);
        row();
        put("x", VI(1));
        endrow();
        CHECK(append1(w, &a, &res) == 0);
        zx_ws_result_free(&res);
    }
    const char *sfx[] = { "", "-wal", "-shm", "-zxlock" };
    for (int i = 0; i < 4; i++) {
        struct stat st;
        snprintf(f, sizeof(f), "%s%s", path, sfx[i]);
        CHECK(stat(f, &st) == 0);
        if ((st.st_mode & 0777) != 0640)
            printf("%s: mode %o, want 640\n", f, (unsigned)(st.st_mode & 0777));
        CHECK((st.st_mode & 0777) == 0640);
    }
    zx_ws_close(w);
    umask(old);
}

/* Postgres: open the workspace in another process (another zxd) and tell
 * *locked and the message, through a pipe.  other_start forks it (waiting),
 * with its pid in *pid; other_open lets it open and reads the answer: 1
 * opened (then closed), 0 refused, -1 test failure. */
typedef struct other {
    pid_t pid;
    int go, answer;   /* pipe ends: parent -> child, child -> parent */
} other;

static int other_start(other *o, const char *schema)
{
    int go[2], ans[2];
    if (pipe(go) < 0)
        return -1;
    if (pipe(ans) < 0) {
        close(go[0]);
        close(go[1]);
        return -1;
    }
    fflush(stdout);
    o->pid = fork();
    if (o->pid < 0)
        return -1;
    if (o->pid == 0) {
        close(go[1]);
        close(ans[0]);
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(2);
        int lk = -1;
        char e[1024] = "";
        zx_ws *w = zx_ws_open_postgres(pg_dsn, pg_shown, schema, "zxu-other", "data_dir /other",
                                       NULL, &lk, e, sizeof(e));
        char out[1100];
        int n = snprintf(out, sizeof(out), "%d %d %s", w != NULL, lk, e);
        zx_ws_close(w);
        if (write(ans[1], out, (size_t)n) < 0)
            _exit(2);
        _exit(0); /* nothing of the parent's (its connections) is touched */
    }
    close(go[0]);
    close(ans[1]);
    o->go = go[1];
    o->answer = ans[0];
    return 0;
}

static int other_open(other *o, int *locked, char *msg, size_t msglen)
{
    char in[1100];
    size_t n = 0;
    ssize_t k;
    int ok = write(o->go, "g", 1) == 1;
    while (ok && n < sizeof(in) - 1 && (k = read(o->answer, in + n, sizeof(in) - 1 - n)) > 0)
        n += (size_t)k;
    in[n] = '\0';
    close(o->go);
    close(o->answer);
    int st = 0;
    waitpid(o->pid, &st, 0);
    int opened = 0, off = 0;
    if (!ok || sscanf(in, "%d %d %n", &opened, locked, &off) < 2)
        return -1;
    snprintf(msg, msglen, "%s", in + off);
    return opened;
}

static int pg_open_elsewhere(const char *schema, int *locked, char *msg, size_t msglen)
{
    other o;
    return other_start(&o, schema) < 0 ? -1 : other_open(&o, locked, msg, msglen);
}

/* Postgres: the one-writer lock per database and schema, held by the
 * connection. */
static void test_pg_lock(void)
{
    int locked = -1;
    zx_ws *a = pg_open_schema(PG_SCHEMA, PG_APP, "data_dir /first", &locked);
    CHECK(a != NULL && locked == 0);
    char msg[1100], want[64];
    CHECK(pg_open_elsewhere(PG_SCHEMA, &locked, msg, sizeof(msg)) == 0 && locked == 1);
    CHECK_HAS(msg, "in use by another zxd");
    CHECK_HAS(msg, "schema " PG_SCHEMA);
    CHECK_HAS(msg, "application " PG_APP " #"); /* and the holder's random token */
    snprintf(want, sizeof(want), "pid %ld on host ", (long)getpid());
    CHECK_HAS(msg, want);
    CHECK_HAS(msg, "data_dir /first");
    CHECK(strstr(msg, "zx-secret") == NULL && strstr(msg, "password") == NULL);
    /* another schema of the same database is another workspace */
    CHECK(pg_open_elsewhere("zx other", &locked, msg, sizeof(msg)) == 1 && locked == 0);
    CHECK_STR(q1("SELECT count(*) FROM pg_namespace WHERE nspname = 'zx other'"), "1");
    zx_ws_close(a);
    /* closed: the lock is free */
    CHECK(pg_open_elsewhere(PG_SCHEMA, &locked, msg, sizeof(msg)) == 1 && locked == 0);

    /* A live holder whose session name happens to contain "#<pid of the
     * opener>" (as when zxd's writers on two hosts or in two containers
     * have the same pid, or the holder's pid starts with the opener's
     * digits: #7 in "zxd #71") is another zxd all the same: the opener
     * must not take it for its own stale session and end it. */
    other o;
    CHECK(other_start(&o, PG_SCHEMA) == 0);
    char app[64];
    snprintf(app, sizeof(app), PG_APP " #%ld0", (long)o.pid);
    a = pg_open_schema(PG_SCHEMA, app, "data_dir /first", &locked);
    CHECK(a != NULL && locked == 0);
    CHECK(other_open(&o, &locked, msg, sizeof(msg)) == 0 && locked == 1);
    CHECK_STR(q1("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE '%s #%%'",
                 app), "1");
    zx_ws_close(a);
}

/* A session that holds the writer lock for writer pid `pid` of the zxd
 * named by owner (as _zx_writer says), busy with a long statement, as
 * when that writer was killed mid-statement.  NULL on failure. */
static PGconn *busy_holder(long pid, const char *owner)
{
    PGconn *c = PQconnectdb(pg_dsn);
    char host[256], sql[1400];
    if (gethostname(host, sizeof(host) - 1) < 0)
        snprintf(host, sizeof(host), "?");
    host[sizeof(host) - 1] = '\0';
    char *q = c ? PQescapeIdentifier(c, PG_SCHEMA, strlen(PG_SCHEMA)) : NULL;
    snprintf(sql, sizeof(sql), "SELECT pg_advisory_lock(%d, %d)", WSP_LOCK_CLASS,
             (int)zx_wsp_lock_key(PG_SCHEMA));
    int ok = q && pg_exec_on(c, sql) == 0;
    snprintf(sql, sizeof(sql), "INSERT INTO %s.\"_zx_writer\"(id, owner, since) VALUES (1, "
             "'pid %ld on host %s, %s', now()) ON CONFLICT (id) DO UPDATE SET owner = "
             "excluded.owner", q ? q : "", pid, host, owner);
    ok = ok && pg_exec_on(c, sql) == 0 && PQsendQuery(c, "SELECT pg_sleep(120)") == 1;
    PQfreemem(q);
    if (!ok) {
        PQfinish(c);
        return NULL;
    }
    return c;
}

/* End the busy holder's statement, then its connection (closing alone
 * would leave the session, and the lock, until the statement ends). */
static void busy_end(PGconn *c)
{
    if (!c)
        return;
    PGcancel *k = PQgetCancel(c);
    char e[256];
    if (k)
        PQcancel(k, e, sizeof(e));
    PQfreeCancel(k);
    PGresult *r;
    while ((r = PQgetResult(c)) != NULL)
        PQclear(r);
    PQfinish(c);
}

/* Postgres: the writer of this zxd was killed while its session ran a
 * statement; the server still holds the lock for it.  The next writer of
 * the same zxd ends that session and goes on; another zxd, or a writer
 * pid still alive, is refused as before. */
static void test_pg_dead_writer(void)
{
    fflush(stdout);
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);     /* its pid is free now */
    int locked = -1;
    char msg[1100];
    PGconn *c = busy_holder((long)dead, "data_dir /dead");
    CHECK(c != NULL);
    /* another zxd (data_dir /other): refused, the session left alone */
    CHECK(pg_open_elsewhere(PG_SCHEMA, &locked, msg, sizeof(msg)) == 0 && locked == 1);
    CHECK_HAS(msg, "in use by another zxd");
    CHECK(c && PQstatus(c) == CONNECTION_OK && PQisBusy(c));
    /* the same zxd: the dead writer's session ends, the lock is taken */
    zx_ws *w = pg_open_schema(PG_SCHEMA, PG_APP, "data_dir /dead", &locked);
    if (!w)
        printf("open failed: %s\n", err);
    CHECK(w != NULL && locked == 0);
    zx_ws_close(w);
    busy_end(c);
    /* the writer named is alive (pid 1): refused */
    c = busy_holder(1, "data_dir /dead");
    CHECK(c != NULL);
    w = pg_open_schema(PG_SCHEMA, PG_APP, "data_dir /dead", &locked);
    CHECK(w == NULL && locked == 1);
    zx_ws_close(w);
    busy_end(c);
}

/* Postgres keeps identifiers to 63 bytes: zx shortens a longer one to its
 * first 54 bytes (not cutting a UTF-8 sequence), "_" and the 8 hex digits
 * of the FNV-1a hash of the whole name (zx_wsp_ident_name).  Computed here
 * on its own so that a change of the rule, which would orphan existing
 * tables, shows. */
static void pg_short_name(const char *name, char out[64])
{
    size_t n = strlen(name);
    if (n <= 63) {
        memcpy(out, name, n + 1);
        return;
    }
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)name[i]) * 16777619u;
    size_t keep = 54;
    while (keep && ((unsigned char)name[keep] & 0xc0) == 0x80)
        keep--;
    memcpy(out, name, keep);
    snprintf(out + keep, 64 - keep, "_%08x", h);
}

static void test_pg_long_names(void)
{
    zx_ws *w = B->open();
    CHECK(w != NULL);
    if (!w)
        return;
    zx_ws_result res;
    /* 60 bytes: the table keeps its name, its rejects table (69) does not */
    char t60[61], rej[100], short_rej[64], short_t[64];
    memset(t60, 'L', 60);
    t60[60] = '\0';
    snprintf(rej, sizeof(rej), "%s__rejects", t60);
    pg_short_name(rej, short_rej);
    CHECK(strlen(short_rej) == 63);
    zx_ws_append a = { .pipeline = "pl", .table = t60, .ingested_at_us = 1 };
    zx_rowset_reset(&rs);
    row();
    put("n", VI(1));
    endrow();
    row();
    put("n", VT("one"));
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 2 && res.rejects == 1 && res.created_table == 1);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT count(*) FROM \"%s\"", t60), "2");
    CHECK_STR(q1("SELECT reason FROM \"%s\"", short_rej),
              "value \"one\" (text) does not fit column n (integer)");
    /* nothing under the name Postgres would have cut it to */
    CHECK_STR(q1("SELECT count(*) FROM sqlite_master WHERE name = left('%s', 63)", rej), "0");
    CHECK_STR(q1("SELECT count(*) FROM sqlite_master WHERE name LIKE 'LLL%%'"), "2");

    /* 70 bytes with a 2-byte character over byte 54: the table itself is
     * shortened, cut before the character; a new handle finds it again */
    char t70[80];
    memset(t70, 'M', 53);
    memcpy(t70 + 53, "\xc3\xa9", 2); /* bytes 53 and 54 */
    memset(t70 + 55, 'N', 15);
    t70[70] = '\0';
    pg_short_name(t70, short_t);
    CHECK(strlen(short_t) == 62 && memcmp(short_t, t70, 53) == 0 && short_t[53] == '_');
    snprintf(rej, sizeof(rej), "%s__rejects", t70);
    pg_short_name(rej, short_rej);
    a.table = t70;
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 2 && res.rejects == 1 && res.created_table == 1);
    zx_ws_result_free(&res);
    zx_ws_close(w);
    w = B->open();
    CHECK(w != NULL);
    if (!w)
        return;
    zx_rowset_reset(&rs);
    row();
    put("n", VT("two"));
    put("m", VB(1));
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 1 && res.rejects == 1 && res.created_table == 0 && res.nnewcols == 1);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT count(*)||' '||count(m) FROM \"%s\"", short_t), "3 1");
    CHECK_STR(q1("SELECT count(*) FROM \"%s\"", short_rej), "2");
    char *json = NULL;
    CHECK(zx_ws_table_columns(w, t70, &json) == 0);
    CHECK_STR(json, "[{\"name\":\"n\",\"type\":\"integer\"},{\"name\":\"m\",\"type\":\"boolean\"}]");
    free(json);
    /* a column name over 63 bytes: shortened the same way, found again */
    char c70[71];
    memset(c70, 'c', 70);
    c70[70] = '\0';
    char short_c[64];
    pg_short_name(c70, short_c);
    a.table = "longcol";
    for (int i = 0; i < 2; i++) {
        zx_rowset_reset(&rs);
        row();
        put(c70, VI(i));
        endrow();
        CHECK(append1(w, &a, &res) == 0);
        CHECK(res.rows == 1 && res.rejects == 0 && res.nnewcols == (i ? 0u : 1u));
        zx_ws_result_free(&res);
    }
    CHECK_STR(q1("SELECT group_concat(quote(\"%s\")) FROM longcol", short_c), "0,1");
    zx_ws_close(w);
}

/* Postgres: a lost connection (the session terminated) fails the open
 * transaction and nothing else: the next begin reconnects, takes the lock
 * again, and what was committed is there. */
static const char *pg_kill_ws(void)
{
    /* the handle's sessions are named "<application_name> #<random token>" */
    return q1("SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity WHERE"
              " datname = current_database() AND application_name LIKE '%s #%%'", PG_APP);
}

static void pg_allow_connections(int allow)
{
    char q[160];
    snprintf(q, sizeof(q), "ALTER DATABASE %s ALLOW_CONNECTIONS %s", pg_db,
             allow ? "true" : "false");
    CHECK(pg_exec_on(pg_admin, q) == 0);
}

/* zx_ws_begin until it succeeds or `seconds` pass: 0 or -1 */
static int begin_within(zx_ws *w, double seconds)
{
    double until = now_s() + seconds;
    while (zx_ws_begin(w, err, sizeof(err)) != 0) {
        if (now_s() > until) {
            printf("begin: %s\n", err);
            return -1;
        }
        usleep(50000);
    }
    return 0;
}

static void test_pg_reconnect(void)
{
    zx_ws *w = B->open();
    CHECK(w != NULL);
    if (!w)
        return;
    zx_ws_result res;
    zx_ws_append a = { .pipeline = "pc", .table = "conn" };
    zx_rowset_reset(&rs);
    row();
    put("x", VI(1));
    endrow();
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_append_rows(w, &a, &rs, &res, err, sizeof(err)) == 0);
    zx_ws_result_free(&res);
    CHECK(zx_ws_checkpoint_set(w, "pc", 7, 1) == 0);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_status(w) == NULL);

    /* between transactions */
    CHECK_STR(pg_kill_ws(), "1");
    int rc = zx_ws_begin(w, err, sizeof(err));
    if (rc != 0) {
        CHECK(zx_ws_status(w) != NULL);
        rc = zx_ws_begin(w, err, sizeof(err));
    }
    CHECK(rc == 0);
    CHECK(zx_ws_status(w) == NULL);
    CHECK(zx_ws_append_rows(w, &a, &rs, &res, err, sizeof(err)) == 0 && res.rows == 1);
    zx_ws_result_free(&res);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    uint64_t seq = 0;
    CHECK(zx_ws_checkpoint_get(w, "pc", &seq) == 0 && seq == 7);
    CHECK_STR(q1("SELECT count(*) FROM conn"), "2");

    /* inside a transaction: the rows of the lost one are not there */
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_append_rows(w, &a, &rs, &res, err, sizeof(err)) == 0);
    zx_ws_result_free(&res);
    CHECK_STR(pg_kill_ws(), "1");
    CHECK(zx_ws_append_rows(w, &a, &rs, &res, err, sizeof(err)) == -1);
    CHECK(zx_ws_failure_is_permanent(w) == 0); /* worth retrying */
    zx_ws_result_free(&res);
    zx_ws_rollback(w);
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0 || zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_checkpoint_set(w, "pc", 8, 1) == 0);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    CHECK_STR(q1("SELECT count(*) FROM conn"), "2");

    /* a commit that finds the connection gone fails, and says so */
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    CHECK(zx_ws_checkpoint_set(w, "pc", 9, 1) == 0);
    CHECK_STR(pg_kill_ws(), "1");
    CHECK(zx_ws_commit(w, err, sizeof(err)) == -1);
    CHECK(zx_ws_failure_is_permanent(w) == 0);

    /* the server refuses connections for a while: begin fails, status says
     * why, until it accepts them again */
    pg_allow_connections(0);
    CHECK(zx_ws_begin(w, err, sizeof(err)) == -1);
    CHECK(zx_ws_begin(w, err, sizeof(err)) == -1);
    const char *st = zx_ws_status(w);
    CHECK(st != NULL);
    CHECK_HAS(st, "unavailable since ");
    CHECK_HAS(st, "not currently accepting connections");
    CHECK(strstr(st, "zx-secret") == NULL);
    CHECK(zx_ws_begin(w, err, sizeof(err)) == -1);
    CHECK(zx_ws_status(w) != NULL);
    pg_allow_connections(1);
    /* reconnecting is backed off (100 ms doubling to 5 s) */
    CHECK(begin_within(w, 12.0) == 0);
    CHECK(zx_ws_status(w) == NULL);
    CHECK(zx_ws_checkpoint_get(w, "pc", &seq) == 0 && seq == 8);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    /* the lock was taken again with the new connection */
    int locked = -1;
    char msg[1100];
    CHECK(pg_open_elsewhere(PG_SCHEMA, &locked, msg, sizeof(msg)) == 0 && locked == 1);
    zx_ws_close(w);
}

/* The column cap: fields beyond max_columns go to _extra. */
static void test_column_cap(void)
{
    zx_ws *w = B->open();
    CHECK(w != NULL);
    if (!w)
        return;
    zx_ws_result res;
    zx_ws_append a = { .pipeline = "pw", .table = "wide", .metadata = 3, .max_columns = 3,
                       .request_id = "r1" };
    /* a new table: the first three fields get columns, the others _extra;
     * metadata columns are not counted */
    zx_rowset_reset(&rs);
    row();
    put("a", VI(1));
    put("b", VT("two"));
    put("c", VR(3.5));
    put("d", VJ("{\"n\":[1,2]}"));
    put("e", VT("quote\" and \\ back"));
    put("f", VN());
    endrow();
    row();
    put("a", VI(2));
    endrow();
    row();
    put("e", VTS("2026-11-29T19:09:25+01:00"));
    put("e", VB(1));   /* the same field twice in a row: the last wins */
    put("_extra", VT("a field named like the overflow column is ignored"));
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 3 && res.rejects == 0);
    CHECK(res.extra_values == 3 && res.extra_fields == 2 && res.max_columns == 3);
    CHECK_STR(res.extra_first, "d");
    CHECK(res.nnewcols == 4);
    if (res.nnewcols == 4)
        CHECK_STR(res.newcols[3].name, "_extra");
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT group_concat(name || ' ' || type, ', ') FROM pragma_table_info('wide')"),
              EXPECT2("a INTEGER, b TEXT, c REAL, _ingested_at TIMESTAMP, _request_id TEXT,"
                      " _extra JSON",
                      "a bigint, b text, c double precision, _ingested_at timestamp with time"
                      " zone, _request_id text, _extra jsonb"));
    CHECK_STR(q1("SELECT _extra FROM wide ORDER BY rowid LIMIT 1"),
              EXPECT2("{\"d\":{\"n\":[1,2]},\"e\":\"quote\\\" and \\\\ back\"}",
                      "{\"d\": {\"n\": [1, 2]}, \"e\": \"quote\\\" and \\\\ back\"}"));
    CHECK_STR(q1("SELECT json_extract(_extra, '$.e') FROM wide ORDER BY rowid LIMIT 1"),
              "quote\" and \\ back");
    CHECK_STR(q1("SELECT quote(_extra) FROM wide ORDER BY rowid LIMIT 1 OFFSET 1"), "NULL");
    CHECK_STR(q1("SELECT _extra FROM wide ORDER BY rowid LIMIT 1 OFFSET 2"),
              EXPECT2("{\"e\":true}", "{\"e\": true}"));

    /* later batches: known fields keep their columns, new ones go on
     * into _extra */
    zx_rowset_reset(&rs);
    row();
    put("a", VI(4));
    put("g", VTS("2026-11-29T19:09:25.5+01:00"));
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 1 && res.extra_values == 1 && res.extra_fields == 1 && res.nnewcols == 0);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT a || ' ' || _extra FROM wide ORDER BY rowid LIMIT 1 OFFSET 3"),
              EXPECT2("4 {\"g\":\"2026-11-29T19:09:25.5+01:00\"}",
                      "4 {\"g\": \"2026-11-29T19:09:25.5+01:00\"}"));

    /* a higher cap: the next new field gets a column again */
    a.max_columns = 4;
    zx_rowset_reset(&rs);
    row();
    put("h", VI(8));
    put("i", VI(9));
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.extra_values == 1 && res.nnewcols == 1);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT h || ' ' || _extra FROM wide ORDER BY rowid LIMIT 1 OFFSET 4"),
              EXPECT2("8 {\"i\":9}", "8 {\"i\": 9}"));

    /* thousands of fields in one push: the table stays at the cap, and
     * nothing is lost */
    a.table = "wider";
    a.max_columns = 0; /* the default */
    zx_rowset_reset(&rs);
    row();
    char name[32];
    for (int i = 0; i < 2500; i++) {
        snprintf(name, sizeof(name), "f%04d", i);
        put(name, VI(i));
    }
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 1 && res.max_columns == ZX_WS_DEFAULT_MAX_COLUMNS);
    CHECK(res.extra_values == 2500 - ZX_WS_DEFAULT_MAX_COLUMNS);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT count(*) FROM pragma_table_info('wider')"), "503");
    CHECK_STR(q1("SELECT f0499 || ' ' || json_extract(_extra, '$.f2499') || ' ' ||"
                 " (SELECT count(*) FROM json_each(_extra)) FROM wider"), "499 2499 2000");
    /* a cap above the highest is the highest.  On Postgres 1,500 bigint
     * values make a row of 12 kB, wider than a page: the server refuses
     * the row, which is kept whole in the rejects */
    a.table = "widest";
    a.max_columns = 100000;
    int rc = append1(w, &a, &res);
    CHECK(rc == 0);
    if (rc == 0) {
        CHECK(res.max_columns == ZX_WS_MAX_COLUMNS &&
              res.extra_values == 2500 - ZX_WS_MAX_COLUMNS);
        CHECK(res.rows == (B->pg ? 0u : 1u) && res.rejects == (B->pg ? 1u : 0u));
        CHECK_STR(q1("SELECT count(*) FROM pragma_table_info('widest')"), "1503");
        if (B->pg) {
            CHECK_STR(q1("SELECT reason FROM widest__rejects"),
                      "row not inserted: row is too big: size 12056, maximum size 8160");
            CHECK_STR(q1("SELECT raw_value::jsonb ->> 'f1499' FROM widest__rejects"),
                      "1499");
        }
    }
    zx_ws_result_free(&res);

    /* a user-made _extra column that takes only integers: a reject */
    qexec2("CREATE TABLE capped_user (a INTEGER, _extra INTEGER)",
           "CREATE TABLE capped_user (a bigint, _extra bigint)");
    zx_ws_append u = { .pipeline = "pu", .table = "capped_user", .max_columns = 1 };
    zx_rowset_reset(&rs);
    row();
    put("a", VI(1));
    put("z", VT("over"));
    endrow();
    CHECK(append1(w, &u, &res) == 0);
    CHECK(res.rows == 1 && res.rejects == 1 && res.nrejcols == 1);
    if (res.nrejcols == 1)
        CHECK_STR(res.rejcols[0].name, "_extra");
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT quote(_extra) FROM capped_user"), "NULL");
    CHECK_STR(q1("SELECT raw_value FROM capped_user__rejects"), "{\"z\":\"over\"}");
    zx_ws_close(w);
}

static void bench(void)
{
    zx_ws *w = B->open();
    CHECK(w != NULL);
    if (!w)
        return;
    zx_rowset_reset(&rs);
    const uint32_t nrows = 10000;
    const int reps = 20;
    for (uint32_t r = 0; r < nrows; r++) {
        row();
        put("id", VI(r));
        put("user_id", VI(r * 7));
        put("amount", VR(r * 0.25));
        put("ok", VB(r & 1));
        put("name", VT("customer name"));
        put("city", VT("Amsterdam"));
        put("at", VTS("2026-11-29T18:09:25.123456Z"));
        put("kind", VT("purchase"));
        put("score", VR(0.5));
        put("qty", VI(3));
        endrow();
    }
    zx_ws_result res;
    zx_ws_append a = { .pipeline = "bench", .table = "bench", .metadata = 1 };
    double t0 = now_s();
    uint64_t rows = 0;
    for (int i = 0; i < reps; i++) {
        CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
        CHECK(zx_ws_append_rows(w, &a, &rs, &res, err, sizeof(err)) == 0);
        rows += res.rows;
        zx_ws_result_free(&res);
        CHECK(zx_ws_checkpoint_set(w, "bench", (uint64_t)i, 1) == 0);
        CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    }
    double dt = now_s() - t0;
    CHECK(rows == (uint64_t)nrows * reps);
    CHECK_STR(q1("SELECT count(*) FROM bench"), "200000");
    printf("test_workspace: %s: bench: %" PRIu64 " rows x 10 columns in %.3f s = %.0f rows/s\n",
           B->name, rows, dt, (double)rows / dt);
    zx_ws_close(w);
}

/* ---- the suite ------------------------------------------------------------- */

/* Mirrors: a changes frame applied in order, with history; the values
 * the source did not send stay; a key that moved; delete; truncate; a
 * change without its key is a reject, the others go on. */
static void one_change(const char *op, const char *lsn, int64_t xid)
{
    row();
    put(ZX_CH_OP, VT(op));
    put(ZX_CH_LSN, VT(lsn));
    put(ZX_CH_XID, VI(xid));
}

static int apply1(zx_ws *w, const zx_ws_changes *c, zx_ws_result *res)
{
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    int rc = zx_ws_apply_changes(w, c, &rs, res, err, sizeof(err));
    if (rc != 0)
        printf("apply failed: %s\n", err);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    return rc;
}

static void test_changes(zx_ws *w)
{
    static const char *const key[] = { "id" };
    static const zx_frame_coltype types[] = { { "id", "bigint" }, { "name", "text" },
                                              { "price", "numeric(10,2)" },
                                              { "body", "text" }, { "qty", "bigint" } };
    zx_ws_changes c = { .pipeline = "cdc", .table = "m_orders", .key_cols = key,
                        .nkey_cols = 1, .col_types = types, .ncol_types = 5, .history = 1,
                        .ingested_at_us = 1700000000000000 };
    zx_ws_result res;
    zx_rowset_reset(&rs);
    one_change("insert", "0/10", 700);
    put("id", VI(1)); put("name", VT("ann")); put("price", VT("1.50")); put("body", VT("long"));
    endrow();
    one_change("insert", "0/20", 701);
    put("id", VI(2)); put("name", VT("bob")); put("price", VT("99999999.99"));
    put("body", VT("b2"));
    endrow();
    /* an update that does not carry the TOASTed body */
    one_change("update", "0/30", 702);
    put("id", VI(1)); put("name", VT("anne")); put("price", VT("2.00"));
    put(ZX_CH_UNCHANGED, VJ("[\"body\"]"));
    endrow();
    one_change("delete", "0/40", 703);
    put("id", VI(2));
    endrow();
    /* the key moves from 1 to 3 */
    one_change("update", "0/50", 704);
    put("id", VI(3)); put("name", VT("anne")); put("price", VT("2.00")); put("body", VT("long"));
    put(ZX_CH_OLD_PREFIX "id", VI(1));
    endrow();
    /* no key: a reject, the others go on */
    one_change("update", "0/60", 705);
    put("name", VT("nobody"));
    endrow();
    CHECK(apply1(w, &c, &res) == 0);
    CHECK(res.created_table == 1 && res.rows == 5 && res.rejects == 1);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT count(*) FROM m_orders"), "1");
    CHECK_STR(q1("SELECT id || ' ' || name || ' ' || price || ' ' || body FROM m_orders"),
              "3 anne 2.00 long");
    /* the source's types: numeric kept exactly (TEXT affinity on SQLite) */
    CHECK_STR(q1("SELECT type FROM pragma_table_info('m_orders') WHERE name = 'price'"),
              EXPECT2("NUMERIC TEXT(10,2)", "numeric(10,2)"));
    CHECK_STR(q1("SELECT count(*) FROM m_orders__changes"), "6");
    CHECK_STR(q1("SELECT group_concat(_op, ',') FROM (SELECT _op FROM m_orders__changes"
                 " ORDER BY _lsn) x"), "insert,insert,update,delete,update,update");
    CHECK_STR(q1("SELECT _xid FROM m_orders__changes WHERE _lsn = '0/40'"), "703");
    CHECK_STR(q1("SELECT reason FROM m_orders__rejects"),
              "row not inserted: the change has no value for key column id");

    /* the update whose body was unchanged kept the stored one */
    zx_rowset_reset(&rs);
    one_change("update", "0/70", 706);
    put("id", VI(3)); put("name", VT("anna"));
    put(ZX_CH_UNCHANGED, VJ("[\"body\",\"price\"]"));
    endrow();
    CHECK(apply1(w, &c, &res) == 0 && res.rows == 1);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT name || ' ' || price || ' ' || body FROM m_orders"), "anna 2.00 long");

    /* a column added at the source; then truncate */
    zx_rowset_reset(&rs);
    one_change("insert", "0/80", 707);
    put("id", VI(4)); put("name", VT("cy")); put("region", VT("eu"));
    endrow();
    one_change("truncate", "0/90", 708);
    endrow();
    one_change("insert", "0/A0", 709);
    put("id", VI(5)); put("name", VT("di"));
    endrow();
    CHECK(apply1(w, &c, &res) == 0 && res.rows == 3 && res.rejects == 0);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT count(*) FROM m_orders"), "1");
    CHECK_STR(q1("SELECT id FROM m_orders"), "5");
    CHECK_STR(q1("SELECT count(*) FROM pragma_table_info('m_orders') WHERE name = 'region'"),
              "1");

    /* a value that does not fit its column: NULL plus a reject, the row
     * applied; an unknown operation: a reject */
    zx_rowset_reset(&rs);
    one_change("insert", "0/B0", 710);
    put("id", VI(6)); put("name", VT("ed")); put("qty", VT("many"));
    endrow();
    one_change("merge", "0/C0", 711);
    put("id", VI(7));
    endrow();
    c.history = 0;
    CHECK(apply1(w, &c, &res) == 0 && res.rows == 1 && res.rejects == 2);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT count(*) FROM m_orders WHERE id = 6 AND qty IS NULL"), "1");
    CHECK_STR(q1("SELECT raw_value FROM m_orders__rejects WHERE column_name = 'qty'"),
              "\"many\"");
    CHECK_STR(q1("SELECT count(*) FROM m_orders__rejects WHERE reason LIKE"
                 " 'row not inserted: unknown change operation%%'"), "1");
    CHECK_STR(q1("SELECT count(*) FROM m_orders__changes"), "10");

    /* one frame of many changes, reduced to each key's last change and
     * batched: the same result as one by one */
    zx_rowset_reset(&rs);
    one_change("insert", "1/10", 800);
    put("id", VI(100)); put("name", VT("a"));
    endrow();
    one_change("update", "1/11", 801);
    put("id", VI(100)); put("name", VT("b"));
    endrow();
    one_change("delete", "1/12", 802);
    put("id", VI(100));
    endrow();
    one_change("insert", "1/13", 803);
    put("id", VI(100)); put("name", VT("c"));
    endrow();
    for (int i = 101; i <= 140; i++) {
        one_change("insert", "1/20", 804);
        put("id", VI(i)); put("name", VT("n")); put("body", VT("big"));
        endrow();
    }
    for (int i = 101; i <= 110; i++) {
        one_change("delete", "1/30", 805);
        put("id", VI(i));
        endrow();
    }
    /* the key moves with a value it did not send: the stored one moves too */
    one_change("update", "1/40", 806);
    put("id", VI(200)); put("name", VT("moved"));
    put(ZX_CH_OLD_PREFIX "id", VI(111));
    put(ZX_CH_UNCHANGED, VJ("[\"body\"]"));
    endrow();
    /* a change of a key after a move to it, one by one in order */
    one_change("update", "1/41", 807);
    put("id", VI(200)); put("name", VT("moved2"));
    put(ZX_CH_UNCHANGED, VJ("[\"body\"]"));
    endrow();
    CHECK(apply1(w, &c, &res) == 0 && res.rows == 4 + 40 + 10 + 2 && res.rejects == 0);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT name FROM m_orders WHERE id = 100"), "c");
    CHECK_STR(q1("SELECT count(*) FROM m_orders WHERE id BETWEEN 101 AND 140"), "29");
    CHECK_STR(q1("SELECT count(*) FROM m_orders WHERE id = 111"), "0");
    CHECK_STR(q1("SELECT name || ' ' || body FROM m_orders WHERE id = 200"), "moved2 big");
}

/* Updates that set columns to NULL (issue 18, point 10), in every path a
 * change takes: alone, a frame reduced to each key's last change, a key
 * that moves, a column present with no value in the whole frame, a
 * column the frame lacks although the source declares it (a frame maker
 * that left out a column NULL in every change of its frame), and NULLs
 * beside unchanged values (_zx_unchanged) in one frame: a NULL sets NULL,
 * an unchanged value stays. */
static void nchange(const char *op, int64_t id)
{
    one_change(op, "2/00", 900);
    put("id", VI(id));
}

static const char *nrow(int64_t id)
{
    return q1("SELECT coalesce(note, '~') || '|' || coalesce(CAST(amount AS TEXT), '~') || '|'"
              " || coalesce(doc, '~') || '|' || coalesce(big, '~') FROM m_nulls WHERE id = %d",
              (int)id);
}

static void test_changes_nulls(zx_ws *w)
{
    static const char *const key[] = { "id" };
    static const zx_frame_coltype types[] = { { "id", "bigint" }, { "note", "text" },
                                              { "amount", "numeric" }, { "doc", "text" },
                                              { "big", "text" } };
    zx_ws_changes c = { .pipeline = "cdc", .table = "m_nulls", .key_cols = key,
                        .nkey_cols = 1, .col_types = types, .ncol_types = 5,
                        .ingested_at_us = 1700000000000000 };
    zx_ws_result res;
    zx_rowset_reset(&rs);
    for (int i = 1; i <= 12; i++) {
        nchange("insert", i);
        put("note", VT("n")); put("amount", VT("1.5")); put("doc", VT("d")); put("big", VT("B"));
        put("legacy", VT("L"));      /* a column the source no longer declares */
        endrow();
    }
    CHECK(apply1(w, &c, &res) == 0 && res.rows == 12);
    zx_ws_result_free(&res);
    CHECK_STR(nrow(12), "n|1.5|d|B");

    /* one change alone, with an explicit NULL and an unchanged value */
    zx_rowset_reset(&rs);
    nchange("update", 1);
    put("note", VN()); put("amount", VT("2")); put("doc", VT("d"));
    put(ZX_CH_UNCHANGED, VJ("[\"big\"]"));
    endrow();
    CHECK(apply1(w, &c, &res) == 0 && res.rows == 1);
    zx_ws_result_free(&res);
    CHECK_STR(nrow(1), "~|2|d|B");

    /* one change alone whose frame lacks the NULL column */
    zx_rowset_reset(&rs);
    nchange("update", 2);
    put("amount", VT("3")); put("doc", VT("d")); put("big", VT("B"));
    endrow();
    CHECK(apply1(w, &c, &res) == 0 && res.rows == 1);
    zx_ws_result_free(&res);
    CHECK_STR(nrow(2), "~|3|d|B");
    CHECK_STR(q1("SELECT legacy FROM m_nulls WHERE id = 2"), "L");

    /* a frame reduced to each key's last change; note and amount are in
     * no change of it */
    zx_rowset_reset(&rs);
    nchange("update", 3);
    put("doc", VT("e")); put("big", VT("B"));
    endrow();
    nchange("update", 3);
    put("doc", VT("f")); put("big", VT("B"));
    endrow();
    nchange("update", 4);
    put("doc", VN()); put("big", VT("B"));
    endrow();
    nchange("delete", 5);
    endrow();
    nchange("insert", 5);
    put("doc", VT("g")); put("big", VT("h"));
    endrow();
    nchange("update", 6);
    put("doc", VT("i"));
    put(ZX_CH_UNCHANGED, VJ("[\"big\"]"));
    endrow();
    CHECK(apply1(w, &c, &res) == 0 && res.rows == 6 && res.rejects == 0);
    zx_ws_result_free(&res);
    CHECK_STR(nrow(3), "~|~|f|B");
    CHECK_STR(nrow(4), "~|~|~|B");
    CHECK_STR(nrow(5), "~|~|g|h");
    CHECK_STR(nrow(6), "~|~|i|B");

    /* a column in the frame with no value in any change */
    zx_rowset_reset(&rs);
    CHECK(zx_rowset_column(&rs, "note", 4, ZX_T_NULL) >= 0);
    for (int i = 7; i <= 8; i++) {
        nchange("update", i);
        put("amount", VT("5")); put("doc", VT("d")); put("big", VT("B"));
        endrow();
    }
    CHECK(apply1(w, &c, &res) == 0 && res.rows == 2);
    zx_ws_result_free(&res);
    CHECK_STR(nrow(7), "~|5|d|B");
    CHECK_STR(nrow(8), "~|5|d|B");

    /* the key moves: with an unchanged value (the stored row moves) and
     * without; note and amount are in no change of the frame */
    zx_rowset_reset(&rs);
    nchange("update", 19);
    put("doc", VT("m"));
    put(ZX_CH_OLD_PREFIX "id", VI(9));
    put(ZX_CH_UNCHANGED, VJ("[\"big\"]"));
    endrow();
    nchange("update", 20);
    put("doc", VT("m2")); put("big", VT("b2"));
    put(ZX_CH_OLD_PREFIX "id", VI(10));
    endrow();
    CHECK(apply1(w, &c, &res) == 0 && res.rows == 2 && res.rejects == 0);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT count(*) FROM m_nulls WHERE id IN (9, 10)"), "0");
    CHECK_STR(nrow(19), "~|~|m|B");
    CHECK_STR(nrow(20), "~|~|m2|b2");

    /* NULLs and unchanged values in one frame: big is unchanged in one
     * change and NULL (absent) in the other, note the other way round */
    zx_rowset_reset(&rs);
    nchange("update", 11);
    put("note", VT("p"));
    put(ZX_CH_UNCHANGED, VJ("[\"big\",\"doc\"]"));
    endrow();
    nchange("update", 12);
    put("amount", VT("6"));
    put(ZX_CH_UNCHANGED, VJ("[\"note\"]"));
    endrow();
    CHECK(apply1(w, &c, &res) == 0 && res.rows == 2 && res.rejects == 0);
    zx_ws_result_free(&res);
    CHECK_STR(nrow(11), "p|~|d|B");
    CHECK_STR(nrow(12), "n|6|~|~");
    /* a column the source does not declare is not the frame's to clear */
    CHECK_STR(q1("SELECT count(*) FROM m_nulls WHERE id IN (11, 12, 19) AND legacy = 'L'"),
              "3");
}

/* Source columns differing only in case (issue 18, point 16): on SQLite,
 * whose names ignore case, the later one is stored as <name>_2; every
 * change lands in its own column, again after the cache is dropped (as
 * after a restart); Postgres keeps both names. */
static void test_changes_case(zx_ws *w)
{
    static const char *const key[] = { "id" };
    zx_ws_changes c = { .pipeline = "cdc", .table = "ccase", .key_cols = key, .nkey_cols = 1,
                        .history = 1, .ingested_at_us = 1700000000000000 };
    const char *low = B->pg ? "upper" : "upper_2";
    char q[200];
    zx_ws_result res;
    for (int pass = 0; pass < 2; pass++) {
        zx_rowset_reset(&rs);
        one_change("insert", "0/10", 700);
        put("id", VI(1 + pass * 10)); put("UPPER", VT("U1")); put("upper", VT("l1"));
        endrow();
        one_change("update", "0/20", 701);
        put("id", VI(2 + pass * 10)); put("upper", VT("l2"));
        endrow();
        one_change("insert", "0/21", 701);
        put("id", VI(3 + pass * 10)); put("UPPER", VT("U3")); put("upper", VT("l3"));
        endrow();
        one_change("update", "0/30", 702);
        put("id", VI(1 + pass * 10)); put("UPPER", VT("U1b"));
        put(ZX_CH_UNCHANGED, VJ("[\"upper\"]"));
        endrow();
        CHECK(apply1(w, &c, &res) == 0 && res.rows == 4 && res.rejects == 0);
        zx_ws_result_free(&res);
        snprintf(q, sizeof(q), "SELECT group_concat(id || ':' || coalesce(\"UPPER\", '-') || ':' "
                 "|| coalesce(\"%s\", '-'), ' ') FROM (SELECT * FROM ccase ORDER BY id) x", low);
        CHECK_STR(q1(q), pass ? "1:U1b:l1 2:-:l2 3:U3:l3 11:U1b:l1 12:-:l2 13:U3:l3"
                              : "1:U1b:l1 2:-:l2 3:U3:l3");
        CHECK_STR(q1("SELECT count(*) FROM ccase__changes"), pass ? "8" : "4");
        /* a rollback forgets the schema cache: read back as after a restart */
        CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
        zx_ws_rollback(w);
    }
    snprintf(q, sizeof(q), "SELECT \"UPPER\" || '/' || \"%s\" FROM ccase__changes "
             "WHERE _lsn = '0/10' AND id = 11", low);
    CHECK_STR(q1(q), "U1/l1");
}

/* The rows' source positions (workers/writer/keyseq.h): a frame's
 * _zx_seq is the mirror's column `_zx_seq` (not its history's);
 * zx_ws_key_seqs answers, per change, what its key's row holds (nothing
 * for a key without a row, a value its column cannot hold, a truncate);
 * zx_ws_max_seq the newest, compared as bytes. */
struct seqs {
    char got[8][16];
};

static void seq_one(void *ctx, int64_t i, const char *s, size_t len)
{
    struct seqs *q = ctx;
    CHECK(i >= 0 && i < 8 && len < 16);
    if (i >= 0 && i < 8 && len < 16)
        snprintf(q->got[i], sizeof(q->got[i]), "%.*s", (int)len, s);
}

static void seq_change(const char *op, const char *seq, zx_value id)
{
    row();
    put(ZX_CH_OP, VT(op));
    put(ZX_CH_LSN, VT("0/1"));
    if (seq)
        put(ZX_CH_SEQ, VT(seq));
    if (id.type != ZX_T_NULL)
        put("id", id);
    put("name", VT("n"));
    endrow();
}

static void test_changes_seq(zx_ws *w)
{
    static const char *const key[] = { "id" };
    zx_ws_changes c = { .pipeline = "dbz", .table = "m_seq", .key_cols = key, .nkey_cols = 1,
                        .history = 1 };
    zx_ws_result res;
    struct seqs q;
    char *mx = NULL;
    size_t ml = 0;
    /* nothing yet: no table */
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    zx_rowset_reset(&rs);
    seq_change("insert", "a1", VI(1));
    memset(&q, 0, sizeof(q));
    CHECK(zx_ws_key_seqs(w, &c, &rs, seq_one, &q, err, sizeof(err)) == 0);
    CHECK(q.got[0][0] == '\0');
    CHECK(zx_ws_max_seq(w, &c, &mx, &ml, err, sizeof(err)) == 0 && mx == NULL && ml == 0);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    /* rows with positions: "B1" sorts before "a1" as bytes, not in a
     * linguistic order */
    zx_rowset_reset(&rs);
    seq_change("insert", "a1", VI(1));
    seq_change("insert", "B1", VI(2));
    seq_change("insert", NULL, VI(3));
    CHECK(apply1(w, &c, &res) == 0 && res.rows == 3);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT _zx_seq FROM m_seq WHERE id = 1"), "a1");
    CHECK_STR(q1("SELECT count(*) FROM m_seq WHERE _zx_seq IS NULL"), "1");
    CHECK_STR(q1(EXPECT2("SELECT count(*) FROM pragma_table_info('m_seq__changes')"
                         " WHERE name = '_zx_seq'",
                         "SELECT count(*) FROM information_schema.columns WHERE"
                         " table_name = 'm_seq__changes' AND column_name = '_zx_seq'")),
              "0");
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    zx_rowset_reset(&rs);
    seq_change("update", "c1", VI(1));            /* its row: a1 */
    seq_change("update", "c1", VI(2));            /* B1 */
    seq_change("update", "c1", VI(9));            /* no row */
    seq_change("delete", "c1", VI(1));            /* a1 again */
    seq_change("update", "c1", VT("not a number")); /* cannot be a row */
    seq_change("truncate", "c1", VN());
    seq_change("update", "c1", VI(3));            /* a row without a position */
    seq_change("update", NULL, VI(2));            /* no position of its own */
    memset(&q, 0, sizeof(q));
    CHECK(zx_ws_key_seqs(w, &c, &rs, seq_one, &q, err, sizeof(err)) == 0);
    CHECK_STR(q.got[0], "a1");
    CHECK_STR(q.got[1], "B1");
    for (int i = 2; i < 8; i++)
        if (i != 3)
            CHECK_STR(q.got[i], "");
    CHECK_STR(q.got[3], "a1");
    CHECK(zx_ws_max_seq(w, &c, &mx, &ml, err, sizeof(err)) == 0);
    CHECK(mx && ml == 2 && !memcmp(mx, "a1", 2));
    free(mx);
    mx = NULL;
    /* what this transaction applied is seen */
    CHECK(zx_ws_apply_changes(w, &c, &rs, &res, err, sizeof(err)) == 0);
    zx_ws_result_free(&res);
    zx_rowset_reset(&rs);
    seq_change("update", "d1", VI(2));
    memset(&q, 0, sizeof(q));
    CHECK(zx_ws_key_seqs(w, &c, &rs, seq_one, &q, err, sizeof(err)) == 0);
    CHECK_STR(q.got[0], "");                      /* truncated */
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
}

static void run_suite(const backend *b)
{
    B = b;
    int checks0 = checks, failures0 = failures;
    test_open_errors();
    zx_ws *w = B->open();
    CHECK(w != NULL);
    if (w) {
        if (!B->pg)
            CHECK_STR(q1("PRAGMA journal_mode"), "wal");
        test_create_all_types(w);
        test_fit_pairs(w);
        test_rollback(w);
        test_positions(w);
        test_position_lock(w);
        test_parked(w);
        test_forward(w);
        test_identifiers(w);
        test_user_table(w);
        test_streamed_copy(w);
        test_view(w);
        test_changes(w);
        test_changes_nulls(w);
        test_changes_case(w);
        test_changes_seq(w);
        zx_ws_close(w);
        test_reopen();
        if (!B->pg) {
            test_lock();
            test_modes();
        } else {
            test_pg_lock();
            test_pg_dead_writer();
            test_pg_long_names();
            test_pg_reconnect();
        }
        test_column_cap();
        bench();
    }
    printf("test_workspace: %s: %d checks, %d failed\n", B->name, checks - checks0,
           failures - failures0);
}

/* Postgres' array parameters of batched mirror statements (no server):
 * every value quoted, " and \ escaped, NULL bare, an empty array {}. */
static void test_pg_array_literal(void)
{
    zx_buf b = { 0 };
    CHECK(zx_wsp_array_param(&b, 2, "numeric(14,4)") == 0);
    CHECK(b.len == strlen("$3::numeric(14,4)[]") && !memcmp(b.p, "$3::numeric(14,4)[]", b.len));
    b.len = 0;
    CHECK(zx_wsp_array_add(&b, NULL) == 0 && b.len == 2 && !memcmp(b.p, "{}", 2));
    b.len = 0;
    zx_fit_out o[5] = {
        { .st = ZX_FIT_S_INT, .i = -42 },
        { .st = ZX_FIT_S_TEXT, .s = "a\"b\\c,{NULL}", .len = 12 },
        { .st = ZX_FIT_S_NULL },
        { .st = ZX_FIT_S_TEXT, .s = "NULL", .len = 4 },
        { .st = ZX_FIT_S_REAL, .d = 0.5 },
    };
    for (int i = 0; i < 5; i++)
        CHECK(zx_wsp_array_add(&b, &o[i]) == 0);
    CHECK(zx_wsp_array_add(&b, NULL) == 0);
    const char *want = "{\"-42\",\"a\\\"b\\\\c,{NULL}\",NULL,\"NULL\",\"0.5\"}";
    CHECK(b.len == strlen(want) && !memcmp(b.p, want, b.len));
    zx_buf_free(&b);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    snprintf(dir, sizeof(dir), "/tmp/zx-test-ws-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(dbpath, sizeof(dbpath), "%s/workspace.db", dir);
    zx_rowset_init(&rs);
    test_pg_array_literal();

    /* SQLite */
    B = &sqlite_backend;
    if (sqlite3_open(dbpath, &sq) != SQLITE_OK) {
        printf("sqlite3_open %s failed\n", dbpath);
        return 1;
    }
    run_suite(&sqlite_backend);
    sqlite3_close(sq);
    char p[400];
    const char *sfx[] = { "", "-wal", "-shm", "-zxlock" };
    const char *dbs[] = { "workspace.db", "locked.db", "modes.db" };
    for (int d = 0; d < 3; d++)
        for (int i = 0; i < 4; i++) {
            snprintf(p, sizeof(p), "%s/%s%s", dir, dbs[d], sfx[i]);
            unlink(p);
        }
    rmdir(dir);

    /* PostgreSQL */
    B = &pg_backend;
    if (pg_setup() > 0) {
        run_suite(&pg_backend);
        pg_teardown();
    }

    zx_rowset_free(&rs);
    if (failures) {
        printf("test_workspace: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_workspace: all checks passed\n");
    return 0;
}
