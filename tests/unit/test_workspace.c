/*
 * test_workspace.c — unit tests of the SQLite workspace (workspace.h) and
 * the fit rules (fit.h): table creation, metadata columns, new columns,
 * every fit/misfit pair, the rejects table, rollback of schema changes,
 * checkpoints, weird identifiers, user-made tables, reopen, the workspace
 * lock, file modes, the column cap and _extra; and a rows/s
 * figure (printed, no threshold).  One line per failed check; non-zero exit
 * on failure.
 */
#include "workers/writer/fit.h"
#include "workers/writer/workspace.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/timefmt.h"

#include "tests/unit/check.h"

#define CHECK_STR(got, want)                                                       \
    do {                                                                           \
        const char *g_ = (got), *w_ = (want);                                      \
        if (!g_ || strcmp(g_, w_) != 0) {                                          \
            printf("%s:%d: got [%s], want [%s]\n", __FILE__, __LINE__, g_ ? g_ : "(null)", \
                   w_);                                                            \
            failures++;                                                            \
        }                                                                          \
    } while (0)

static char dir[256], dbpath[300];
static zx_rowset rs;
static char err[512];

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

/* ---- querying ------------------------------------------------------------ */

static sqlite3 *q;
static char qbuf[4096];

/* First column of the first row as text ("NULL" for SQL NULL, "<none>" for
 * no row, "<error: ...>"). */
static const char *q1(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *q1(const char *fmt, ...)
{
    char sql[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(q, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(qbuf, sizeof(qbuf), "<error: %s>", sqlite3_errmsg(q));
        return qbuf;
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        snprintf(qbuf, sizeof(qbuf), "%s", t ? t : "NULL");
    } else {
        snprintf(qbuf, sizeof(qbuf), rc == SQLITE_DONE ? "<none>" : "<error: %s>",
                 sqlite3_errmsg(q));
    }
    sqlite3_finalize(st);
    return qbuf;
}

static zx_ws *ws_open(void)
{
    zx_ws *w = zx_ws_open_sqlite(dbpath, "normal", "test", NULL, err, sizeof(err));
    if (!w)
        printf("open failed: %s\n", err);
    return w;
}

/* begin + append + commit; returns the append's return value */
static int append1(zx_ws *w, const zx_ws_append *a, zx_ws_result *res)
{
    CHECK(zx_ws_begin(w, err, sizeof(err)) == 0);
    int rc = zx_ws_append_rows(w, a, &rs, res, err, sizeof(err));
    if (rc != 0)
        printf("append failed: %s\n", err);
    CHECK(zx_ws_commit(w, err, sizeof(err)) == 0);
    return rc;
}

/* ---- tests --------------------------------------------------------------- */

static void test_open_errors(void)
{
    CHECK(zx_ws_open_sqlite(dbpath, "sometimes", NULL, NULL, err, sizeof(err)) == NULL);
    CHECK(strstr(err, "synchronous") != NULL);
    CHECK(zx_ws_open_sqlite("/nonexistent/dir/x.db", "full", NULL, NULL, err, sizeof(err)) == NULL);
    zx_ws_close(NULL);
    zx_ws_result_free(NULL);
}

static void test_create_all_types(zx_ws *w)
{
    zx_ws_result res;
    zx_ws_append a = { .pipeline = "p1", .table = "events", .metadata = 3,
                       .ingested_at_us = 1700000000000001, .request_id = "req-1" };
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
              "i INTEGER, r REAL, b BOOLEAN, s TEXT, ts TIMESTAMP, j JSON, "
              "_ingested_at TIMESTAMP, _request_id TEXT");
    CHECK_STR(q1("SELECT quote(i)||quote(r)||quote(b)||quote(s)||quote(ts)||quote(j) FROM events"
                 " WHERE rowid=1"),
              "-72.51'hello''2026-11-29T18:09:25.123456Z''{\"a\":[1,2]}'");
    CHECK_STR(q1("SELECT quote(b)||quote(i) FROM events WHERE rowid=2"), "0NULL");
    CHECK_STR(q1("SELECT _ingested_at||' '||_request_id FROM events WHERE rowid=2"),
              "2023-11-14T22:13:20.000001Z req-1");
    /* same statement again without a request id: NULL, not the old one */
    a.request_id = NULL;
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 2 && res.created_table == 0 && res.nnewcols == 0);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT quote(_request_id) FROM events WHERE rowid=4"), "NULL");
    CHECK_STR(q1("DELETE FROM events WHERE rowid > 2 RETURNING 'x'"), "x");

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
    CHECK_STR(q1("SELECT quote(n)||quote(extra)||quote(_ingested_at) FROM events WHERE rowid=3"),
              "'now text'5NULL");

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
    const char *col;   /* column of the "fit" table */
    int val;           /* index into vals() */
    const char *want;  /* quote() of the stored value; NULL = misfit */
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
        { "ci", 0, "42" }, { "ci", 1, "3" }, { "ci", 2, NULL }, { "ci", 3, NULL },
        { "ci", 4, NULL }, { "ci", 5, NULL }, { "ci", 6, NULL }, { "ci", 7, NULL },
        { "ci", 8, NULL },
        { "cr", 0, "42.0" }, { "cr", 1, "3.0" }, { "cr", 2, "3.5" }, { "cr", 3, "1.0e+20" },
        { "cr", 4, NULL }, { "cr", 5, NULL }, { "cr", 6, NULL }, { "cr", 7, NULL },
        { "cb", 0, NULL }, { "cb", 1, NULL }, { "cb", 2, NULL }, { "cb", 3, NULL },
        { "cb", 4, "1" }, { "cb", 5, NULL }, { "cb", 6, NULL }, { "cb", 7, NULL },
        { "ct", 0, "'42'" }, { "ct", 1, "'3'" }, { "ct", 2, "'3.5'" }, { "ct", 3, "'1e+20'" },
        { "ct", 4, "'true'" }, { "ct", 5, "'a\"b'" },
        { "ct", 6, "'2026-11-29T19:09:25.123456+01:00'" }, { "ct", 7, "'{\"a\":1}'" },
        { "ct", 8, NULL },
        { "cts", 0, NULL }, { "cts", 1, NULL }, { "cts", 2, NULL }, { "cts", 3, NULL },
        { "cts", 4, NULL }, { "cts", 5, NULL }, { "cts", 6, "'2026-11-29T18:09:25.123456Z'" },
        { "cts", 7, NULL },
        /* JSON has NUMERIC affinity in SQLite: a bare number is stored as one */
        { "cj", 0, "42" }, { "cj", 1, "3" }, { "cj", 2, "3.5" }, { "cj", 3, "1.0e+20" },
        { "cj", 4, "'true'" }, { "cj", 5, "'\"a\\\"b\"'" },
        { "cj", 6, "'\"2026-11-29T19:09:25.123456+01:00\"'" }, { "cj", 7, "'{\"a\":1}'" },
    };
    uint64_t want_rejects = 0;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const fit_case *c = &cases[k];
        zx_rowset_reset(&rs);
        row();
        put(c->col, val_of(c->val));
        endrow();
        CHECK(append1(w, &a, &res) == 0);
        if (res.rows != 1 || res.rejects != (c->want ? 0u : 1u) ||
            res.nnewcols != 0 || res.nrejcols != (c->want ? 0u : 1u)) {
            printf("%s:%d: case %s/%d: rows %" PRIu64 " rejects %" PRIu64 " newcols %zu\n",
                   __FILE__, __LINE__, c->col, c->val, res.rows, res.rejects, res.nnewcols);
            failures++;
        }
        if (!c->want && res.nrejcols == 1)
            CHECK(strcmp(res.rejcols[0].name, c->col) == 0 && res.rejcols[0].count == 1);
        zx_ws_result_free(&res);
        const char *got = q1("SELECT quote(\"%s\") FROM fit ORDER BY rowid DESC LIMIT 1", c->col);
        const char *want = c->want ? c->want : "NULL";
        if (strcmp(got, want) != 0) {
            printf("%s:%d: case %s/%d: stored [%s], want [%s]\n", __FILE__, __LINE__, c->col,
                   c->val, got, want);
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
              "1970-01-01T00:00:00.000001Z|pf|NULL|ci|integer|text|\"a\\\"b\"|"
              "value \"a\\\"b\" (text) does not fit column ci (integer)");
    CHECK_STR(q1("SELECT raw_value||'|'||reason FROM fit__rejects WHERE column_name='ci' AND"
                 " raw_value='3.5'"),
              "3.5|value 3.5 (real) does not fit column ci (integer)");
    CHECK_STR(q1("SELECT raw_value||'|'||reason FROM fit__rejects WHERE column_name='cts' AND"
                 " value_type='integer'"),
              "42|value 42 (integer) does not fit column cts (timestamp)");
    CHECK_STR(q1("SELECT raw_value||'|'||value_type FROM fit__rejects WHERE column_name='ci' AND"
                 " value_type='unknown'"), "null|unknown");

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
    CHECK_STR(q1("SELECT type FROM pragma_table_info('events') WHERE name='late'"), "REAL");
    CHECK_STR(q1("SELECT group_concat(quote(late)) FROM events WHERE late IS NOT NULL"), "1.25");
    CHECK_STR(q1("SELECT seq||' '||committed_at FROM _zx_checkpoints WHERE pipeline='p1'"),
              "43 2023-11-14T22:13:20.000000Z");
    CHECK(zx_ws_append_rows(w, &a, &rs, &res, err, sizeof(err)) == -1); /* no txn */
    zx_ws_result_free(&res);
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
    put("a", VI(3)); /* same column as "A" for SQLite: last wins */
    put("bad", VT("not an int"));
    endrow();
    row();
    put("bad", VI(7));
    endrow();
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.rows == 2 && res.created_table == 1);
    zx_ws_result_free(&res);
    CHECK_STR(q1("SELECT \"a\"\"b\"||\"select\"||\"sp ace\"||\"\xc3\xbcn\xc3\xaf\"||\"A\" FROM"
                 " \"we\"\"ird tab; DROP TABLE events;--\" WHERE rowid=1"), "1kw10.53");
    CHECK_STR(q1("SELECT count(*) FROM events"), "4");
    CHECK_STR(q1("SELECT count(*) FROM pragma_table_info('we\"ird tab; DROP TABLE events;--')"),
              "6");
}

static void test_user_table(zx_ws *w)
{
    zx_ws_result res;
    CHECK(sqlite3_exec(q, "CREATE TABLE usr(id INTEGER PRIMARY KEY, v VARCHAR(10),"
                          " d TEXT NOT NULL DEFAULT 'dflt', c INTEGER CHECK (c < 100))",
                       NULL, NULL, NULL) == SQLITE_OK);
    zx_ws_append a = { .pipeline = "pu", .table = "USR", .metadata = 0 };
    zx_rowset_reset(&rs);
    row();
    put("v", VI(1));
    endrow();
    row();
    put("v", VT("two"));
    endrow();
    row();
    put("v", VJ("[3]"));
    put("c", VI(500)); /* violates the CHECK: the row is rejected */
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
    CHECK_STR(q1("SELECT value_type||'|'||reason FROM usr__rejects"),
              "row|row not inserted: CHECK constraint failed: c < 100");
    char *json = NULL;
    CHECK(zx_ws_table_columns(w, "usr", &json) == 0);
    CHECK_STR(json, "[{\"name\":\"id\",\"type\":\"integer\"},"
                    "{\"name\":\"v\",\"type\":\"varchar(10)\"},{\"name\":\"d\",\"type\":\"text\"},"
                    "{\"name\":\"c\",\"type\":\"integer\"}]");
    free(json);
}

static void test_reopen(void)
{
    zx_ws *w = ws_open();
    if (!w)
        return;
    uint64_t seq = 0;
    CHECK(zx_ws_checkpoint_get(w, "p1", &seq) == 0 && seq == 43);
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

/* One workspace, one writer: a second handle on the same file is refused
 * with the holder's text, and gets it once the first is closed. */
static void test_lock(void)
{
    char path[400], want[64];
    snprintf(path, sizeof(path), "%s/locked.db", dir);
    int locked = -1;
    zx_ws *a = zx_ws_open_sqlite(path, "normal", "data_dir /first", &locked, err, sizeof(err));
    CHECK(a != NULL && locked == 0);
    zx_ws *b = zx_ws_open_sqlite(path, "normal", "data_dir /second", &locked, err, sizeof(err));
    CHECK(b == NULL && locked == 1);
    snprintf(want, sizeof(want), "pid %ld on host ", (long)getpid());
    CHECK(strstr(err, "in use by another zxd") != NULL);
    CHECK(strstr(err, want) != NULL);
    CHECK(strstr(err, "data_dir /first") != NULL);
    CHECK(strstr(err, "locked.db-zxlock") != NULL);
    zx_ws_close(b);
    zx_ws_close(a);
    b = zx_ws_open_sqlite(path, "normal", "data_dir /second", &locked, err, sizeof(err));
    CHECK(b != NULL && locked == 0);
    zx_ws_close(b);
    /* a failure that is not a lock says so with *locked = 0 */
    CHECK(zx_ws_open_sqlite("/nonexistent/dir/x.db", "full", NULL, &locked, err,
                            sizeof(err)) == NULL && locked == 0);
}

/* A workspace the writer creates has the LMDB store's mode, 0640, and so
 * do its -wal, -shm and lock files. */
static void test_modes(void)
{
    char path[400], f[420];
    snprintf(path, sizeof(path), "%s/modes.db", dir);
    mode_t old = umask(022);
    zx_ws *w = zx_ws_open_sqlite(path, "normal", NULL, NULL, err, sizeof(err));
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

/* The column cap: fields beyond max_columns go to _extra. */
static void test_column_cap(void)
{
    zx_ws *w = ws_open();
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
              "a INTEGER, b TEXT, c REAL, _ingested_at TIMESTAMP, _request_id TEXT, _extra JSON");
    CHECK_STR(q1("SELECT _extra FROM wide WHERE rowid=1"),
              "{\"d\":{\"n\":[1,2]},\"e\":\"quote\\\" and \\\\ back\"}");
    CHECK_STR(q1("SELECT json_extract(_extra, '$.e') FROM wide WHERE rowid=1"),
              "quote\" and \\ back");
    CHECK_STR(q1("SELECT quote(_extra) FROM wide WHERE rowid=2"), "NULL");
    CHECK_STR(q1("SELECT _extra FROM wide WHERE rowid=3"), "{\"e\":true}");

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
    CHECK_STR(q1("SELECT a || ' ' || _extra FROM wide WHERE rowid=4"),
              "4 {\"g\":\"2026-11-29T19:09:25.5+01:00\"}");

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
    CHECK_STR(q1("SELECT h || ' ' || _extra FROM wide WHERE rowid=5"), "8 {\"i\":9}");

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
    /* a cap above the highest is the highest */
    a.table = "widest";
    a.max_columns = 100000;
    CHECK(append1(w, &a, &res) == 0);
    CHECK(res.max_columns == ZX_WS_MAX_COLUMNS &&
          res.extra_values == 2500 - ZX_WS_MAX_COLUMNS);
    zx_ws_result_free(&res);

    /* a user-made _extra column that takes only integers: a reject */
    sqlite3_exec(q, "CREATE TABLE capped_user (a INTEGER, _extra INTEGER)", NULL, NULL, NULL);
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void bench(void)
{
    zx_ws *w = ws_open();
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
    printf("test_workspace: bench: %" PRIu64 " rows x 10 columns in %.3f s = %.0f rows/s\n", rows,
           dt, (double)rows / dt);
    zx_ws_close(w);
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/zx-test-ws-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(dbpath, sizeof(dbpath), "%s/workspace.db", dir);
    zx_rowset_init(&rs);
    test_open_errors();
    zx_ws *w = ws_open();
    if (!w)
        return 1;
    if (sqlite3_open(dbpath, &q) != SQLITE_OK)
        return 1;
    CHECK_STR(q1("PRAGMA journal_mode"), "wal");
    test_create_all_types(w);
    test_fit_pairs(w);
    test_rollback(w);
    test_identifiers(w);
    test_user_table(w);
    zx_ws_close(w);
    test_reopen();
    test_lock();
    test_modes();
    test_column_cap();
    bench();
    sqlite3_close(q);
    zx_rowset_free(&rs);
    char p[400];
    const char *sfx[] = { "", "-wal", "-shm", "-zxlock" };
    const char *dbs[] = { "workspace.db", "locked.db", "modes.db" };
    for (int d = 0; d < 3; d++)
        for (int i = 0; i < 4; i++) {
            snprintf(p, sizeof(p), "%s/%s%s", dir, dbs[d], sfx[i]);
            unlink(p);
        }
    rmdir(dir);
    if (failures) {
        printf("test_workspace: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_workspace: all checks passed\n");
    return 0;
}
