/*
 * test_dest_tables.c — unit tests of the table destinations of reverse
 * syncs: dest_postgres.c and dest_sqlite.c (dest.h), and the value rules
 * they share (common/dcell.h).
 *
 * Each destination: the table made with the right types and primary key;
 * every type round-tripping exactly (int64 min/max, numeric(38,10),
 * unicode, empty text against NULL, timestamps before 1970 with µs and at
 * both ends of years 1..9999, dates 0001-01-01 and 9999-12-31, nested
 * JSON, bytes with NUL, NaN and infinities); replace seen by a second
 * connection as the old rows until commit; append; upsert (changed rows
 * replaced, the others untouched; a key sent twice); mirror deletes with a
 * composite key; abort rolling back (a new table too); read_only refused;
 * missing columns added; upsert refused without a unique index; misfits
 * written as NULL and counted.  Postgres only: both COPY formats (a table
 * with a numeric column goes as text), a role with only SELECT (the error
 * names the table, never the password), a connection killed mid-run
 * (write and commit fail, abort does not crash), a bad password.
 *
 * Postgres: ZX_PG_DSN, a superuser's libpq string (tests/services/postgres
 * start prints one); the test makes database zxdt_<pid> and role
 * zxdt_ro_<pid>, and drops both.  Unset: "SKIP: ZX_PG_DSN not set" and the
 * Postgres part does not run.  SQLite: files /tmp/zxdt-<pid>-*.db.
 *
 * With ZX_DEST_BENCH=1 it measures instead (no checks): rows/s of one
 * upsert run of 1,000,000 rows (bigint key, text ~20 B, double,
 * timestamp, boolean) into an empty table, then of 10,000 changed rows
 * into that table, for each destination.
 */
#include "workers/destinations/dest.h"

/* the Postgres destination's key tracking bound (dest_pg_state.h), lowered here */
extern size_t zx_pgd_seen_max;

#include <inttypes.h>
#include <libpq-fe.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/timefmt.h"
#include "common/dcell.h"
#include "workers/destinations/postgres/dest_pg_int.h"

#include "tests/unit/check.h"

extern const zx_dest zx_dest_postgres;
extern const zx_dest zx_dest_sqlite;

#define CHECK_STR(got, want)                                                        \
    do {                                                                            \
        const char *g_ = (got), *w_ = (want);                                       \
        if (!g_ || strcmp(g_, w_) != 0) {                                           \
            printf("%s:%d: got \"%s\", want \"%s\"\n", __FILE__, __LINE__,          \
                   g_ ? g_ : "(null)", w_);                                         \
            failures++;                                                             \
        }                                                                           \
    } while (0)

#define CHECK_HAS(s, part)                                                          \
    do {                                                                            \
        const char *s_ = (s);                                                       \
        if (!strstr(s_, part)) {                                                    \
            printf("%s:%d: \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, s_, part);   \
            failures++;                                                             \
        }                                                                           \
    } while (0)

/* ---- values and rowsets ------------------------------------------------ */

typedef struct tv {
    int t;              /* zx_type; ZX_T_NULL: no cell */
    int64_t i;
    double d;
    const char *s;
    size_t n;
} tv;

static tv N(void) { return (tv){ ZX_T_NULL, 0, 0, NULL, 0 }; }
static tv I(int64_t i) { return (tv){ ZX_T_INT, i, 0, NULL, 0 }; }
static tv R(double d) { return (tv){ ZX_T_REAL, 0, d, NULL, 0 }; }
static tv B(int b) { return (tv){ ZX_T_BOOL, b, 0, NULL, 0 }; }
static tv T(const char *s) { return (tv){ ZX_T_TEXT, 0, 0, s, strlen(s) }; }
static tv TB(const char *s, size_t n) { return (tv){ ZX_T_TEXT, 0, 0, s, n }; }
static tv TS(int64_t us) { return (tv){ ZX_T_TIMESTAMP, us, 0, NULL, 0 }; }
static tv J(const char *s) { return (tv){ ZX_T_JSON, 0, 0, s, strlen(s) }; }

/* A rowset of nrows rows of ncols columns named names[], values row by row. */
static void mkrs(zx_rowset *rs, size_t ncols, const char *const *names, const tv *v,
                 size_t nrows)
{
    zx_rowset_init(rs);
    for (size_t c = 0; c < ncols; c++)
        zx_rowset_column(rs, names[c], strlen(names[c]), ZX_T_NULL);
    for (size_t r = 0; r < nrows; r++) {
        zx_rowset_begin_row(rs);
        for (size_t c = 0; c < ncols; c++) {
            const tv *x = &v[r * ncols + c];
            if (x->t == ZX_T_NULL)
                continue;
            zx_value val;
            memset(&val, 0, sizeof(val));
            val.type = (uint8_t)x->t;
            switch (x->t) {
            case ZX_T_INT: val.u.i = x->i; break;
            case ZX_T_REAL: val.u.d = x->d; break;
            case ZX_T_BOOL: val.u.b = (int)x->i; break;
            case ZX_T_TIMESTAMP: {
                char ts[ZX_TS_BUFSZ];
                size_t n = zx_ts_format(x->i, ts);
                val.u.i = x->i;
                val.s = zx_rowset_strdup(rs, ts, n);
                val.len = (uint32_t)n;
                break;
            }
            default:
                val.s = zx_rowset_strdup(rs, x->s, x->n);
                val.len = (uint32_t)x->n;
                break;
            }
            zx_rowset_add(rs, (uint32_t)c, &val);
        }
        zx_rowset_end_row(rs);
    }
}

/* ---- one run ------------------------------------------------------------ */

typedef struct trun {
    const zx_dest *dest;
    const zx_conf_connection *conn;
    const char *table, *sync;
    zx_sync_mode mode;
    const zx_dcol *cols;
    size_t ncols;
    const char *const *keys;
    size_t nkeys;
    void *st;
    zx_dest_stats stats;
    char err[1024];
} trun;

static int t_open(trun *t)
{
    zx_dest_args a;
    memset(&a, 0, sizeof(a));
    a.sync = t->sync ? t->sync : "zxdt";
    a.conn = t->conn;
    a.table = t->table;
    a.deadline_ms = 20000;
    t->err[0] = '\0';
    return t->dest->open(&a, &t->st, t->err, sizeof(t->err));
}

static int t_begin(trun *t)
{
    zx_dest_run r;
    memset(&r, 0, sizeof(r));
    r.run_id = 1;
    r.mode = t->mode;
    r.cols = t->cols;
    r.ncols = t->ncols;
    r.key_cols = t->keys;
    r.nkey_cols = t->nkeys;
    memset(&t->stats, 0, sizeof(t->stats));
    return t->dest->begin(t->st, &r, &t->stats, t->err, sizeof(t->err));
}

static int t_write(trun *t, const tv *v, size_t nrows)
{
    const char *names[16];
    for (size_t c = 0; c < t->ncols; c++)
        names[c] = t->cols[c].name;
    zx_rowset rs;
    mkrs(&rs, t->ncols, names, v, nrows);
    int rc = t->dest->write(t->st, &rs, t->err, sizeof(t->err));
    zx_rowset_free(&rs);
    return rc;
}

static int t_delete(trun *t, const tv *v, size_t nrows)
{
    zx_rowset rs;
    mkrs(&rs, t->nkeys, t->keys, v, nrows);
    int rc = t->dest->delete_keys(t->st, &rs, t->err, sizeof(t->err));
    zx_rowset_free(&rs);
    return rc;
}

static void t_end(trun *t, int commit)
{
    if (commit) {
        int rc = t->dest->commit(t->st, t->err, sizeof(t->err));
        if (rc != 0)
            printf("commit failed: %s\n", t->err);
        CHECK(rc == 0);
    } else
        t->dest->abort(t->st);
    t->dest->close(t->st);
    t->st = NULL;
}

/* open, begin, write the rows (one batch), prepare: 0 or -1 (t_end next) */
static int t_prepared(trun *t, const tv *v, size_t nrows)
{
    return t_open(t) == 0 && t_begin(t) == 0 && t_write(t, v, nrows) == 0 &&
                   t->dest->prepare(t->st, t->err, sizeof(t->err)) == 0
               ? 0 : -1;
}

/* open, begin, write the rows (one batch), commit, close: 0 or -1 */
static int t_run(trun *t, const tv *v, size_t nrows)
{
    if (t_open(t) < 0)
        return -1;
    if (t_begin(t) < 0 || (nrows && t_write(t, v, nrows) < 0)) {
        t->dest->abort(t->st);
        t->dest->close(t->st);
        t->st = NULL;
        return -1;
    }
    int rc = t->dest->commit(t->st, t->err, sizeof(t->err));
    t->dest->close(t->st);
    t->st = NULL;
    return rc;
}

/* ---- the shared value rules (no database) ------------------------------- */

static void test_cells(void)
{
    CHECK(zx_dc_decimal_fits("123.45", 6, 5, 2, 1000, NULL));
    CHECK(!zx_dc_decimal_fits("1234.5", 6, 5, 2, 1000, NULL));
    CHECK(zx_dc_decimal_fits("999.994", 7, 5, 2, 1000, NULL));
    CHECK(!zx_dc_decimal_fits("999.995", 7, 5, 2, 1000, NULL));     /* rounds to 1000.00 */
    CHECK(zx_dc_decimal_fits("-0.000001", 9, 5, 2, 1000, NULL));
    CHECK(zx_dc_decimal_fits("1.5e2", 5, 5, 2, 1000, NULL));
    CHECK(!zx_dc_decimal_fits("1.5e3", 5, 5, 2, 1000, NULL));
    CHECK(zx_dc_decimal_fits("0.0000000001", 12, 38, 10, 1000, NULL));
    CHECK(!zx_dc_decimal_fits("abc", 3, 0, 0, 1000, NULL));
    CHECK(zx_dc_decimal_fits("1.", 2, 0, 0, 1000, NULL));            /* "1." is a literal */
    CHECK(!zx_dc_decimal_fits("", 0, 0, 0, 1000, NULL));
    CHECK(!zx_dc_decimal_fits("1e1001", 6, 0, 0, 1000, NULL));
    const char *jv = "{\"a\":[1,2.5e3,{\"b\":null}],\"c\":\"x\\\"y\"}";
    CHECK(zx_dc_json_valid(jv, strlen(jv), 0, 1000));
    CHECK(zx_dc_json_valid(" [ ] ", 5, 0, 1000));
    CHECK(!zx_dc_json_valid("{\"a\":}", 6, 0, 1000));
    CHECK(!zx_dc_json_valid("\"\\u0000\"", 8, 0, 1000));
    CHECK(zx_dc_json_valid("\"\\u0000\"", 8, 1, 1000));
    CHECK(!zx_dc_json_valid("\"\\ud800\"", 8, 0, 1000));
    CHECK(zx_dc_json_valid("\"\\ud83d\\ude00\"", 14, 0, 1000));
    CHECK(!zx_dc_json_valid("01", 2, 0, 1000));
    CHECK(!zx_dc_json_valid("[1,]", 4, 0, 1000));
    CHECK(zx_dc_utf8_valid("h\xc3\xa9llo \xf0\x9d\x84\x9e", 11));
    CHECK(!zx_dc_utf8_valid("\xc0\xaf", 2));
    CHECK(!zx_dc_utf8_valid("\xed\xa0\x80", 3));
    CHECK(!zx_dc_utf8_valid("abc\xe2\x82", 5));

    zx_buf b = { 0 };
    zx_dc_out o;
    zx_dc_target ti = zx_dc_target_of(ZX_DT_INT64, 0, 0);
    zx_value v;
    memset(&v, 0, sizeof(v));
    v.type = ZX_T_TEXT;
    v.s = "42";
    v.len = 2;
    CHECK(zx_dc_convert(&ti, &v, &b, &o) == 1 && !o.null && o.i == 42);
    v.s = "abc";
    v.len = 3;
    CHECK(zx_dc_convert(&ti, &v, &b, &o) == 0 && o.null);
    v.s = "9223372036854775808";
    v.len = 19;
    CHECK(zx_dc_convert(&ti, &v, &b, &o) == 0);
    v.type = ZX_T_REAL;
    v.u.d = 3.0;
    CHECK(zx_dc_convert(&ti, &v, &b, &o) == 1 && o.i == 3);
    v.u.d = 3.5;
    CHECK(zx_dc_convert(&ti, &v, &b, &o) == 0);
    zx_dc_target tj = zx_dc_target_of(ZX_DT_JSON, 0, 0);
    v.type = ZX_T_TEXT;
    v.s = "a\"b";
    v.len = 3;
    CHECK(zx_dc_convert(&tj, &v, &b, &o) == 1 && o.len == 6 && memcmp(o.s, "\"a\\\"b\"", 6) == 0);
    zx_dc_target tt = zx_dc_target_of(ZX_DT_TEXT, 0, 0);
    tt.max_chars = 3;
    v.s = "\xc3\xa9\xc3\xa9\xc3\xa9";      /* 3 characters, 6 bytes */
    v.len = 6;
    CHECK(zx_dc_convert(&tt, &v, &b, &o) == 1);
    v.s = "abcd";
    v.len = 4;
    CHECK(zx_dc_convert(&tt, &v, &b, &o) == 0);
    zx_dc_target tts = zx_dc_target_of(ZX_DT_TIMESTAMP, 0, 0);
    v.s = "2026-12-01T06:13:18.123456+02:00";
    v.len = (uint32_t)strlen(v.s);
    CHECK(zx_dc_convert(&tts, &v, &b, &o) == 1);
    char ts[ZX_TS_BUFSZ];
    zx_ts_format(o.i, ts);
    CHECK_STR(ts, "2026-12-01T04:13:18.123456Z");
    zx_dc_target td = zx_dc_target_of(ZX_DT_DOUBLE, 0, 0);
    v.s = "1e-310";                        /* subnormal: kept */
    v.len = 6;
    CHECK(zx_dc_convert(&td, &v, &b, &o) == 1 && o.d > 0);
    v.s = "1e400";
    v.len = 5;
    CHECK(zx_dc_convert(&td, &v, &b, &o) == 0);
    td.float4 = 1;
    v.s = "1e39";
    v.len = 4;
    CHECK(zx_dc_convert(&td, &v, &b, &o) == 0);
    char dt[32];
    zx_dc_double_text(0.1, dt);
    CHECK_STR(dt, "0.1");
    zx_dc_double_text(-INFINITY, dt);
    CHECK_STR(dt, "-Infinity");

    /* key sets and dedup */
    zx_pg_hset hs = { 0 };
    for (uint64_t h = 1; h <= 5000; h++)
        CHECK(zx_pg_hset_add(&hs, h * 0x9e3779b97f4a7c15ull, 10000) == 0);
    CHECK(zx_pg_hset_has(&hs, 77 * 0x9e3779b97f4a7c15ull));
    CHECK(!zx_pg_hset_has(&hs, 5001 * 0x9e3779b97f4a7c15ull));
    CHECK(zx_pg_hset_add(&hs, 1, 5000) == -1);
    zx_pg_hset_free(&hs);
    const char kb[] = "aabac";
    size_t koff[5] = { 0, 1, 2, 3, 4 }, klen[5] = { 1, 1, 1, 1, 1 };
    uint64_t kh[5];
    for (int i = 0; i < 5; i++)
        kh[i] = zx_pg_key_hash(kb + i, 1);
    uint8_t skip[5] = { 0 };
    CHECK(zx_pg_dedup(kb, koff, klen, kh, skip, 5) == 2);
    CHECK(skip[0] == 1 && skip[1] == 1 && skip[2] == 0 && skip[3] == 0 && skip[4] == 0);
    zx_buf_free(&b);
}

/* ---- the tables' common columns ----------------------------------------- */

#define INT64_MIN_ ((int64_t)INT64_MIN)
#define TS_MIN (-62135596800000000LL)   /* 0001-01-01T00:00:00Z */
#define TS_MAX (253402300799999999LL)   /* 9999-12-31T23:59:59.999999Z */

static const zx_dcol types_cols[] = {
    { "id", ZX_DT_INT64, 0, 0 },     { "t", ZX_DT_TEXT, 0, 0 },
    { "d", ZX_DT_DOUBLE, 0, 0 },     { "b", ZX_DT_BOOL, 0, 0 },
    { "ts", ZX_DT_TIMESTAMP, 0, 0 }, { "dt", ZX_DT_DATE, 0, 0 },
    { "j", ZX_DT_JSON, 0, 0 },       { "by", ZX_DT_BYTES, 0, 0 },
    { "n", ZX_DT_DECIMAL, 38, 10 },
};
static const char *const id_key[] = { "id" };

#define UNI "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9d\x84\x9e \\ tab\t nl\n cr\r"
#define JNEST "{\"a\":[1,2.5,{\"b\":null,\"c\":[true,false]}],\"d\":\"x\\\"y\\u00e9\"}"
#define NUMBIG "-1234567890123456789012345678.0123456789"

/* the four rows every destination gets (n: the last column, left out for
 * the table without it) */
static void types_rows(tv *v)
{
    tv rows[4][9] = {
        { I(INT64_MIN_), T(UNI), R(NAN), B(1), TS(-1), T("0001-01-01"), J(JNEST),
          TB("a\0b\xff", 4), T(NUMBIG) },
        { I(INT64_MAX), T(""), R(INFINITY), B(0), TS(TS_MIN), T("9999-12-31"), J("[]"),
          TB("", 0), T("0.0000000001") },
        { I(0), N(), R(-INFINITY), N(), TS(TS_MAX), N(), N(), N(), N() },
        { I(7), T("plain"), R(0.1), B(1), TS(1764569598123456LL), T("2000-02-29"),
          J("12345678901234567890123"), T("\\x"), T("42") },
    };
    memcpy(v, rows, sizeof(rows));
}

/* ======================================================================== */
/* ---- Postgres ----------------------------------------------------------- */

static PGconn *pga;             /* the test database, superuser */
static char pg_db[64], pg_role[64];
static char dsn_db[2048], dsn_ro[2048], dsn_badpw[2048];

/* dsn with some keywords replaced (pairs kw, value; NULL ends), as
 * key=value text.  0 or -1. */
static int dsn_with(const char *dsn, char *out, size_t n, ...)
{
    char *m = NULL;
    PQconninfoOption *o = PQconninfoParse(dsn, &m);
    if (!o) {
        printf("ZX_PG_DSN: %s\n", m ? m : "cannot parse");
        PQfreemem(m);
        return -1;
    }
    size_t len = 0;
    out[0] = '\0';
    for (PQconninfoOption *p = o; p->keyword; p++) {
        const char *v = p->val;
        va_list ap;
        va_start(ap, n);
        const char *k;
        while ((k = va_arg(ap, const char *)) != NULL) {
            const char *kv = va_arg(ap, const char *);
            if (strcmp(k, p->keyword) == 0)
                v = kv;
        }
        va_end(ap);
        if (!v)
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

static int pgx(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int pgx(PGconn *c, const char *fmt, ...)
{
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(c, sql);
    int ok = r && (PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK);
    if (!ok)
        printf("postgres: %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    return ok ? 0 : -1;
}

/* The first value of a query as text ("<NULL>", "<none>" for no row),
 * in a static buffer. */
static const char *pgv(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *pgv(PGconn *c, const char *fmt, ...)
{
    static char out[4][4096];
    static int k;
    char *o = out[k++ & 3];
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(c, sql);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
        snprintf(o, 4096, "<ERR %s>", PQerrorMessage(c));
    else if (PQntuples(r) == 0)
        snprintf(o, 4096, "<none>");
    else if (PQgetisnull(r, 0, 0))
        snprintf(o, 4096, "<NULL>");
    else
        snprintf(o, 4096, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return o;
}

/* The definition of table's primary key (pgv's buffers). */
static const char *pg_pkey(PGconn *c, const char *table)
{
    return pgv(c, "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = "
                  "'%s'::regclass AND contype = 'p'", table);
}

static zx_conf_connection pg_conn(const char *name, const char *dsn)
{
    zx_conf_connection c;
    memset(&c, 0, sizeof(c));
    c.name = (char *)name;
    c.kind = "postgres";
    c.dsn = (char *)dsn;
    c.dsn_shown = "postgresql://zx:***@test/zxdt";
    return c;
}

static void pg_types(const zx_conf_connection *cn, const char *table, size_t ncols)
{
    trun t = { .dest = &zx_dest_postgres, .conn = cn, .table = table, .mode = ZX_MODE_UPSERT,
               .cols = types_cols, .ncols = ncols, .keys = id_key, .nkeys = 1 };
    tv all[4][9], v[4 * 9];
    types_rows(&all[0][0]);
    for (size_t r = 0; r < 4; r++)
        for (size_t c = 0; c < ncols; c++)
            v[r * ncols + c] = all[r][c];
    if (t_run(&t, v, 4) < 0) {
        printf("postgres types run: %s\n", t.err);
        CHECK(0);
        return;
    }
    CHECK(t.stats.rows_written == 4);
    CHECK(t.stats.nulled == 0);
    const char *tn = strchr(table, '.') ? strchr(table, '.') + 1 : table;
    /* types and key */
    CHECK_STR(pgv(pga, "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), "
                       "', ' ORDER BY attnum) FROM pg_attribute WHERE attrelid = '%s'::regclass "
                       "AND attnum > 0", tn),
              ncols == 9 ? "id bigint, t text, d double precision, b boolean, ts timestamp with "
                           "time zone, dt date, j jsonb, by bytea, n numeric(38,10)"
                         : "id bigint, t text, d double precision, b boolean, ts timestamp with "
                           "time zone, dt date, j jsonb, by bytea");
    CHECK_STR(pgv(pga, "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = "
                       "'%s'::regclass AND contype = 'p'", tn), "PRIMARY KEY (id)");
    /* values */
    const char *k[4] = { "-9223372036854775808", "9223372036854775807", "0", "7" };
    CHECK_STR(pgv(pga, "SELECT string_agg(id::text, ',' ORDER BY id) FROM %s", tn),
              "-9223372036854775808,0,7,9223372036854775807");
    CHECK_STR(pgv(pga, "SELECT t = E'h\\u00e9llo \\u2713 \\U0001D11E \\\\ tab\\t nl\\n cr\\r' "
                       "FROM %s WHERE id = %s", tn, k[0]), "t");
    CHECK_STR(pgv(pga, "SELECT t = '' FROM %s WHERE id = %s", tn, k[1]), "t");
    CHECK_STR(pgv(pga, "SELECT t IS NULL FROM %s WHERE id = %s", tn, k[2]), "t");
    CHECK_STR(pgv(pga, "SELECT string_agg(d::text, ',' ORDER BY id) FROM %s", tn),
              "NaN,-Infinity,0.1,Infinity");
    CHECK_STR(pgv(pga, "SELECT string_agg(coalesce(b::text, 'null'), ',' ORDER BY id) FROM %s",
                  tn), "true,null,true,false");
    CHECK_STR(pgv(pga, "SELECT string_agg(ts::text, ',' ORDER BY id) FROM %s", tn),
              "1969-12-31 23:59:59.999999+00,9999-12-31 23:59:59.999999+00,"
              "2025-12-01 06:13:18.123456+00,0001-01-01 00:00:00+00");
    CHECK_STR(pgv(pga, "SELECT string_agg(coalesce(dt::text, 'null'), ',' ORDER BY id) FROM %s",
                  tn), "0001-01-01,null,2000-02-29,9999-12-31");
    CHECK_STR(pgv(pga, "SELECT j = '" JNEST "'::jsonb FROM %s WHERE id = %s", tn, k[0]), "t");
    CHECK_STR(pgv(pga, "SELECT j::text FROM %s WHERE id = %s", tn, k[1]), "[]");
    CHECK_STR(pgv(pga, "SELECT j::text FROM %s WHERE id = %s", tn, k[2]), "<NULL>");
    CHECK_STR(pgv(pga, "SELECT j::text FROM %s WHERE id = %s", tn, k[3]),
              "12345678901234567890123");
    CHECK_STR(pgv(pga, "SELECT string_agg(coalesce(encode(by, 'hex'), 'null'), ',' ORDER BY id) "
                       "FROM %s", tn), "610062ff,null,5c78,");
    if (ncols == 9)
        CHECK_STR(pgv(pga, "SELECT string_agg(coalesce(n::text, 'null'), ',' ORDER BY id) FROM "
                           "%s", tn),
                  NUMBIG ",null,42.0000000000,0.0000000001");
}

static const zx_dcol kv_cols[] = { { "id", ZX_DT_INT64, 0, 0 }, { "v", ZX_DT_TEXT, 0, 0 } };

static void pg_modes(const zx_conf_connection *cn)
{
    /* replace: a second connection sees the old rows until commit */
    trun t = { .dest = &zx_dest_postgres, .conn = cn, .table = "public.rep",
               .mode = ZX_MODE_REPLACE, .cols = kv_cols, .ncols = 2, .keys = id_key, .nkeys = 1 };
    tv r1[] = { I(1), T("a"), I(2), T("b"), I(3), T("c") };
    CHECK(t_run(&t, r1, 3) == 0);
    CHECK_STR(pgv(pga, "SELECT string_agg(id || v, ',' ORDER BY id) FROM rep"), "1a,2b,3c");
    tv r2[] = { I(4), T("d"), I(5), T("e") };
    CHECK(t_open(&t) == 0 && t_begin(&t) == 0 && t_write(&t, r2, 2) == 0);
    CHECK_STR(pgv(pga, "SELECT string_agg(id || v, ',' ORDER BY id) FROM rep"), "1a,2b,3c");
    t_end(&t, 1);
    CHECK_STR(pgv(pga, "SELECT string_agg(id || v, ',' ORDER BY id) FROM rep"), "4d,5e");

    /* append */
    t.mode = ZX_MODE_APPEND;
    tv r3[] = { I(6), T("f") };
    CHECK(t_run(&t, r3, 1) == 0);
    CHECK_STR(pgv(pga, "SELECT string_agg(id || v, ',' ORDER BY id) FROM rep"), "4d,5e,6f");

    /* upsert into an empty table: straight COPY, then a key again (staged),
     * a key twice in a batch (its last row) */
    trun u = { .dest = &zx_dest_postgres, .conn = cn, .table = "ups", .mode = ZX_MODE_UPSERT,
               .cols = kv_cols, .ncols = 2, .keys = id_key, .nkeys = 1 };
    tv b1[] = { I(1), T("x"), I(2), T("b"), I(1), T("a"), I(3), T("c") };
    tv b2[] = { I(3), T("c2"), I(4), T("d"), I(5), T("e") };
    CHECK(t_open(&u) == 0 && t_begin(&u) == 0);
    CHECK(t_write(&u, b1, 4) == 0);
    CHECK(t_write(&u, b2, 3) == 0);
    if (u.err[0])
        printf("ups: %s\n", u.err);
    t_end(&u, 1);
    CHECK(u.stats.rows_written == 7);
    CHECK_STR(pgv(pga, "SELECT string_agg(id || v, ',' ORDER BY id) FROM ups"),
              "1a,2b,3c2,4d,5e");
    /* upsert into a full table: changed rows replaced, others untouched */
    CHECK(pgx(pga, "UPDATE ups SET v = v || '!' WHERE id IN (1, 4)") == 0);
    tv b3[] = { I(2), T("B"), I(6), T("f"), I(2), T("BB") };
    CHECK(t_run(&u, b3, 3) == 0);
    CHECK_STR(pgv(pga, "SELECT string_agg(id || v, ',' ORDER BY id) FROM ups"),
              "1a!,2BB,3c2,4d!,5e,6f");

    /* mirror with a composite key */
    static const zx_dcol mc[] = { { "region", ZX_DT_TEXT, 0, 0 }, { "id", ZX_DT_INT64, 0, 0 },
                                  { "v", ZX_DT_TEXT, 0, 0 } };
    static const char *const mk[] = { "region", "id" };
    trun m = { .dest = &zx_dest_postgres, .conn = cn, .table = "public.mir",
               .mode = ZX_MODE_MIRROR, .cols = mc, .ncols = 3, .keys = mk, .nkeys = 2 };
    tv m1[] = { T("eu"), I(1), T("a"), T("eu"), I(2), T("b"), T("us"), I(1), T("c"),
                T("us"), I(2), T("d") };
    CHECK(t_run(&m, m1, 4) == 0);
    CHECK_STR(pgv(pga, "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = "
                       "'mir'::regclass AND contype = 'p'"), "PRIMARY KEY (region, id)");
    tv m2[] = { T("eu"), I(1), T("a2") };
    tv del[] = { T("eu"), I(2), T("us"), I(1), T("xx"), I(1), N(), I(2) };
    CHECK(t_open(&m) == 0 && t_begin(&m) == 0 && t_write(&m, m2, 1) == 0);
    CHECK(t_delete(&m, del, 4) == 0);
    if (m.err[0])
        printf("mirror: %s\n", m.err);
    t_end(&m, 1);
    CHECK(m.stats.rows_deleted == 2);
    CHECK(m.stats.nulled == 1);                    /* the NULL key */
    CHECK_STR(pgv(pga, "SELECT string_agg(region || id || v, ',' ORDER BY region, id) FROM mir"),
              "eu1a2,us2d");

    /* abort rolls back, a new table too */
    CHECK(t_open(&m) == 0 && t_begin(&m) == 0 && t_write(&m, m2, 1) == 0 &&
          t_delete(&m, del, 1) == 0);
    t_end(&m, 0);
    CHECK_STR(pgv(pga, "SELECT string_agg(region || id || v, ',' ORDER BY region, id) FROM mir"),
              "eu1a2,us2d");

    /* a composite text key in text COPY (a numeric column): ("ab", "c") and
     * ("a", "bc") are two keys, ("a", "bc") twice is one */
    static const zx_dcol tc[] = { { "a", ZX_DT_TEXT, 0, 0 }, { "b", ZX_DT_TEXT, 0, 0 },
                                  { "n", ZX_DT_DECIMAL, 5, 2 } };
    static const char *const tk[] = { "a", "b" };
    trun x = { .dest = &zx_dest_postgres, .conn = cn, .table = "amb", .mode = ZX_MODE_UPSERT,
               .cols = tc, .ncols = 3, .keys = tk, .nkeys = 2 };
    tv xr[] = { T("ab"), T("c"), T("1"), T("a"), T("bc"), T("2"), T("a\t"), T("c"), T("3"),
                T("a"), T("\tc"), T("4"), T("a"), T("bc"), T("5") };
    CHECK(t_run(&x, xr, 5) == 0);
    CHECK(x.stats.rows_written == 5);
    CHECK_STR(pgv(pga, "SELECT string_agg(a || '/' || b || '=' || n, ',' ORDER BY a COLLATE "
                       "\"C\", b COLLATE \"C\") FROM amb"),
              "a/\tc=4.00,a/bc=5.00,a\t/c=3.00,ab/c=1.00");
    trun n = u;
    n.table = "abt";
    CHECK(t_open(&n) == 0 && t_begin(&n) == 0 && t_write(&n, r1, 3) == 0);
    t_end(&n, 0);
    CHECK_STR(pgv(pga, "SELECT to_regclass('abt') IS NULL"), "t");

    /* missing columns are added; upsert needs a unique index */
    CHECK(pgx(pga, "CREATE TABLE addc (id bigint PRIMARY KEY)") == 0);
    trun a = u;
    a.table = "addc";
    tv ar[] = { I(1), T("one") };
    CHECK(t_run(&a, ar, 1) == 0);
    CHECK_STR(pgv(pga, "SELECT id || v FROM addc"), "1one");
    CHECK(pgx(pga, "CREATE TABLE nok (id bigint, v text)") == 0);
    a.table = "nok";
    CHECK(t_run(&a, ar, 1) == -1);
    CHECK_HAS(a.err, "postgres crm_db table public.nok: upsert needs a primary key");
    CHECK_HAS(a.err, "ALTER TABLE \"public\".\"nok\" ADD PRIMARY KEY (\"id\")");
    CHECK(pgx(pga, "CREATE UNIQUE INDEX ON nok (id)") == 0);
    CHECK(t_run(&a, ar, 1) == 0);
    CHECK_STR(pgv(pga, "SELECT id || v FROM nok"), "1one");
    /* a view in the table's place */
    CHECK(pgx(pga, "CREATE VIEW vw AS SELECT 1 AS id, 'x'::text AS v") == 0);
    a.table = "vw";
    CHECK(t_run(&a, ar, 1) == -1);
    CHECK_HAS(a.err, "table public.vw: exists but is not a table (a view)");
}

static void pg_misfits(const zx_conf_connection *cn)
{
    /* a user-made table: int4, varchar(3), bigint, numeric(5,2) */
    CHECK(pgx(pga, "CREATE TABLE mis (k int PRIMARY KEY, i int4, v varchar(3), big bigint, "
                   "n numeric(5,2), u uuid)") == 0);
    static const zx_dcol mc[] = { { "k", ZX_DT_INT64, 0, 0 },  { "i", ZX_DT_INT64, 0, 0 },
                                  { "v", ZX_DT_TEXT, 0, 0 },   { "big", ZX_DT_INT64, 0, 0 },
                                  { "n", ZX_DT_DECIMAL, 5, 2 }, { "u", ZX_DT_TEXT, 0, 0 } };
    static const char *const kk[] = { "k" };
    trun t = { .dest = &zx_dest_postgres, .conn = cn, .table = "mis", .mode = ZX_MODE_UPSERT,
               .cols = mc, .ncols = 6, .keys = kk, .nkeys = 1 };
    tv r[] = {
        I(1), I(1LL << 40), T("abcd"), T("abc"), T("1234.5"), T("0b7c5f50-6d61-4b7a-9b5e-1e7a2b3c4d5e"),
        I(2), I(5), T("ab"), T("42"), T("999.994"), N(),
        T("x"), I(1), T("a"), I(1), T("1"), N(),     /* key misfit: left out */
        N(), I(1), T("a"), I(1), T("1"), N(),        /* NULL key: left out */
        I(3), T("7"), TB("a\0b", 3), R(2.5), R(1.5), N(),
    };
    CHECK(t_run(&t, r, 5) == 0);
    if (t.err[0])
        printf("misfits: %s\n", t.err);
    /* row 1: i, v, big, n; row 3: k; row 4: its NULL key; row 5: v (NUL), big (2.5) */
    CHECK(t.stats.nulled == 8);
    /* the first misfit is noted for the run's message */
    CHECK_STR(t.stats.misfit_col, "i");
    CHECK_STR(t.stats.misfit_val, "1099511627776");
    CHECK(t.stats.rows_written == 3);
    CHECK_STR(pgv(pga, "SELECT string_agg(concat_ws('|', k, coalesce(i::text, 'null'), "
                       "coalesce(v, 'null'), coalesce(big::text, 'null'), coalesce(n::text, "
                       "'null'), coalesce(u::text, 'null')), ',' ORDER BY k) FROM mis"),
              "1|null|null|null|null|0b7c5f50-6d61-4b7a-9b5e-1e7a2b3c4d5e,"
              "2|5|ab|42|999.99|null,3|7|null|null|1.50|null");
    /* a text the other type refuses: the run fails with the server's word */
    tv bad[] = { I(9), N(), N(), N(), N(), T("not-a-uuid") };
    CHECK(t_run(&t, bad, 1) == -1);
    CHECK_HAS(t.err, "postgres crm_db table public.mis: ");
    CHECK_HAS(t.err, "uuid");

    /* a row refused in an earlier batch of the COPY held open across
     * batches: a later write or the commit fails with the server's words,
     * and nothing is stored */
    CHECK(pgx(pga, "CREATE TABLE chk (id bigint PRIMARY KEY, v text CHECK (v <> 'bad'))") == 0);
    trun c = { .dest = &zx_dest_postgres, .conn = cn, .table = "chk", .mode = ZX_MODE_APPEND,
               .cols = kv_cols, .ncols = 2, .keys = id_key, .nkeys = 1 };
    tv c1[] = { I(1), T("a") }, c2[] = { I(2), T("bad") }, c3[] = { I(3), T("c") };
    CHECK(t_open(&c) == 0 && t_begin(&c) == 0 && t_write(&c, c1, 1) == 0);
    int failed = t_write(&c, c2, 1) < 0 || t_write(&c, c3, 1) < 0 ||
                 c.dest->commit(c.st, c.err, sizeof(c.err)) < 0;
    CHECK(failed);
    CHECK_HAS(c.err, "postgres crm_db table public.chk: ");
    CHECK_HAS(c.err, "chk_v_check");
    c.dest->abort(c.st);
    c.dest->close(c.st);
    CHECK_STR(pgv(pga, "SELECT count(*) FROM chk"), "0");
    /* and the same table takes the good rows in a later run */
    tv cg[] = { I(1), T("a"), I(3), T("c") };
    CHECK(t_run(&c, cg, 2) == 0);
    CHECK_STR(pgv(pga, "SELECT string_agg(id || v, ',' ORDER BY id) FROM chk"), "1a,3c");

    /* an upsert into a table the run makes: its primary key is built after
     * the rows, before the first merge needs it (a key seen again), and is
     * there after the commit */
    trun k = { .dest = &zx_dest_postgres, .conn = cn, .table = "later", .mode = ZX_MODE_UPSERT,
               .cols = kv_cols, .ncols = 2, .keys = id_key, .nkeys = 1 };
    tv k1[] = { I(1), T("a"), I(2), T("b") }, k2[] = { I(2), T("b2"), I(3), T("c") };
    CHECK(t_open(&k) == 0 && t_begin(&k) == 0 && t_write(&k, k1, 2) == 0 &&
          t_write(&k, k2, 2) == 0);
    t_end(&k, 1);
    CHECK_STR(pgv(pga, "SELECT string_agg(id || v, ',' ORDER BY id) FROM later"), "1a,2b2,3c");
    CHECK_STR(pgv(pga, "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = "
                       "'later'::regclass AND contype = 'p'"), "PRIMARY KEY (id)");

    /* prepare (a first run has sent every row and sorts its keys): the
     * key's build goes out without waiting; commit meets its outcome, and
     * so does a mirror's delete after it; an abort after it leaves
     * nothing */
    k.table = "prep";
    CHECK(t_prepared(&k, k1, 2) == 0);
    t_end(&k, 1);
    CHECK_STR(pgv(pga, "SELECT string_agg(id || v, ',' ORDER BY id) FROM prep"), "1a,2b");
    CHECK_STR(pg_pkey(pga, "prep"), "PRIMARY KEY (id)");
    k.table = "prep_m";
    k.mode = ZX_MODE_MIRROR;
    tv p2[] = { I(2) };
    CHECK(t_prepared(&k, k1, 2) == 0 && t_delete(&k, p2, 1) == 0);
    t_end(&k, 1);
    CHECK_STR(pgv(pga, "SELECT string_agg(id || v, ',' ORDER BY id) FROM prep_m"), "1a");
    CHECK_STR(pg_pkey(pga, "prep_m"), "PRIMARY KEY (id)");
    k.table = "prep_a";
    k.mode = ZX_MODE_UPSERT;
    CHECK(t_prepared(&k, k1, 2) == 0);
    t_end(&k, 0);
    CHECK_STR(pgv(pga, "SELECT to_regclass('prep_a') IS NULL"), "t");
    /* the same connection takes the next run */
    k.table = "prep";
    CHECK(t_prepared(&k, k2, 2) == 0);
    t_end(&k, 1);
    CHECK_STR(pgv(pga, "SELECT string_agg(id || v, ',' ORDER BY id) FROM prep"), "1a,2b2,3c");

    /* the run's keys outgrow what it tracks (2 here, 4,000,000 in zx):
     * into the table it made the rows still go straight, and a key that
     * came again keeps its last row when the key is built; a mirror's
     * delete after that sees one row per key */
    size_t keep_max = zx_pgd_seen_max;
    zx_pgd_seen_max = 2;
    k.table = "unsure";
    tv u1[] = { I(1), T("a"), I(2), T("b"), I(3), T("c") }, u2[] = { I(2), T("b2"), I(4), T("d") },
       u3[] = { I(1), T("a3") };
    CHECK(t_open(&k) == 0 && t_begin(&k) == 0 && t_write(&k, u1, 3) == 0 &&
          t_write(&k, u2, 2) == 0 && t_write(&k, u3, 1) == 0);
    t_end(&k, 1);
    CHECK_STR(pgv(pga, "SELECT string_agg(id || v, ',' ORDER BY id) FROM unsure"),
              "1a3,2b2,3c,4d");
    CHECK_STR(pgv(pga, "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = "
                       "'unsure'::regclass AND contype = 'p'"), "PRIMARY KEY (id)");
    k.table = "unsure_m";
    k.mode = ZX_MODE_MIRROR;
    tv d3[] = { I(3) };
    CHECK(t_open(&k) == 0 && t_begin(&k) == 0 && t_write(&k, u1, 3) == 0 &&
          t_write(&k, u2, 2) == 0 && t_delete(&k, d3, 1) == 0 && t_write(&k, u3, 1) == 0);
    t_end(&k, 1);
    CHECK_STR(pgv(pga, "SELECT string_agg(id || v, ',' ORDER BY id) FROM unsure_m"),
              "1a3,2b2,4d");
    zx_pgd_seen_max = keep_max;
}

static void pg_failures(const zx_conf_connection *cn, const char *admin_dsn)
{
    (void)admin_dsn;
    /* read_only */
    zx_conf_connection ro = *cn;
    ro.read_only = 1;
    trun t = { .dest = &zx_dest_postgres, .conn = &ro, .table = "rep", .mode = ZX_MODE_APPEND,
               .cols = kv_cols, .ncols = 2, .keys = id_key, .nkeys = 1 };
    CHECK(t_open(&t) == -1);
    CHECK_STR(t.err, "postgres connection crm_db is read_only: zx never writes to it");

    /* a role with only SELECT */
    CHECK(pgx(pga, "GRANT SELECT ON rep TO %s", pg_role) == 0);
    zx_conf_connection rc = pg_conn("ro_db", dsn_ro);
    t.conn = &rc;
    tv r[] = { I(10), T("z") };
    CHECK(t_run(&t, r, 1) == -1);
    CHECK_HAS(t.err, "postgres ro_db table public.rep: permission denied for table rep");
    CHECK(!strstr(t.err, "ro-secret"));
    t.mode = ZX_MODE_REPLACE;
    CHECK(t_run(&t, r, 1) == -1);
    CHECK_HAS(t.err, "postgres ro_db table public.rep: ");
    CHECK_HAS(t.err, "permission denied for table rep");
    t.mode = ZX_MODE_UPSERT;
    CHECK(t_run(&t, r, 1) == -1);
    CHECK_HAS(t.err, "permission denied for table rep");
    CHECK_STR(pgv(pga, "SELECT count(*) FROM rep WHERE id = 10"), "0");

    /* a bad password: the message shows dsn_shown, never the password */
    zx_conf_connection bp = pg_conn("crm_db", dsn_badpw);
    t.conn = &bp;
    CHECK(t_open(&t) == -1);
    CHECK_HAS(t.err, "postgres crm_db table public.rep: cannot connect to Postgres "
                     "postgresql://zx:***@test/zxdt: ");
    CHECK_HAS(t.err, "password authentication failed");
    CHECK(!strstr(t.err, "wrong-pw"));

    /* a connection killed mid-run: write fails cleanly, abort does not crash */
    char sync[64];
    snprintf(sync, sizeof(sync), "zxdt-kill-%ld", (long)getpid());
    trun k = { .dest = &zx_dest_postgres, .conn = cn, .table = "killed", .sync = sync,
               .mode = ZX_MODE_UPSERT, .cols = kv_cols, .ncols = 2, .keys = id_key, .nkeys = 1 };
    tv k1[] = { I(1), T("a"), I(2), T("b") };
    CHECK(t_open(&k) == 0 && t_begin(&k) == 0 && t_write(&k, k1, 2) == 0);
    CHECK_STR(pgv(pga, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                       "application_name = 'zx-sync-%s'", sync), "1");
    usleep(100000);
    CHECK(t_write(&k, k1, 2) == -1);
    CHECK_HAS(k.err, "postgres crm_db table public.killed: ");
    printf("killed mid-run, write says: %s\n", k.err);
    k.dest->abort(k.st);
    CHECK(k.dest->commit(k.st, k.err, sizeof(k.err)) == -1);
    k.dest->abort(k.st);
    k.dest->close(k.st);
    CHECK_STR(pgv(pga, "SELECT to_regclass('killed') IS NULL"), "t");
    /* killed before commit: commit fails, nothing visible */
    CHECK(t_open(&k) == 0 && t_begin(&k) == 0 && t_write(&k, k1, 2) == 0);
    CHECK_STR(pgv(pga, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                       "application_name = 'zx-sync-%s'", sync), "1");
    usleep(100000);
    CHECK(k.dest->commit(k.st, k.err, sizeof(k.err)) == -1);
    CHECK_HAS(k.err, "postgres crm_db table public.killed: commit failed: ");
    k.dest->abort(k.st);
    k.dest->close(k.st);
    CHECK_STR(pgv(pga, "SELECT to_regclass('killed') IS NULL"), "t");
}

static void test_postgres(void)
{
    const char *dsn = getenv("ZX_PG_DSN");
    if (!dsn || !*dsn) {
        printf("SKIP: ZX_PG_DSN not set\n");
        return;
    }
    PGconn *root = PQconnectdb(dsn);
    if (PQstatus(root) != CONNECTION_OK) {
        printf("postgres: cannot connect with ZX_PG_DSN: %s", PQerrorMessage(root));
        CHECK(0);
        PQfinish(root);
        return;
    }
    PQclear(PQexec(root, "SET client_min_messages = warning"));
    snprintf(pg_db, sizeof(pg_db), "zxdt_%ld", (long)getpid());
    snprintf(pg_role, sizeof(pg_role), "zxdt_ro_%ld", (long)getpid());
    pgx(root, "DROP DATABASE IF EXISTS %s", pg_db);
    pgx(root, "DROP ROLE IF EXISTS %s", pg_role);
    if (pgx(root, "CREATE DATABASE %s", pg_db) < 0 ||
        pgx(root, "CREATE ROLE %s LOGIN PASSWORD 'ro-secret'", pg_role) < 0 ||
        dsn_with(dsn, dsn_db, sizeof(dsn_db), "dbname", pg_db, (char *)NULL) < 0 ||
        dsn_with(dsn, dsn_ro, sizeof(dsn_ro), "dbname", pg_db, "user", pg_role, "password",
                 "ro-secret", (char *)NULL) < 0 ||
        dsn_with(dsn, dsn_badpw, sizeof(dsn_badpw), "dbname", pg_db, "password", "wrong-pw",
                 (char *)NULL) < 0) {
        CHECK(0);
        PQfinish(root);
        return;
    }
    pga = PQconnectdb(dsn_db);
    CHECK(PQstatus(pga) == CONNECTION_OK);
    pgx(pga, "SET client_min_messages = warning");
    pgx(pga, "SET TimeZone = 'UTC'");
    zx_conf_connection cn = pg_conn("crm_db", dsn_db);
    int f0 = failures;
    pg_types(&cn, "public.types", 9);      /* numeric: text COPY */
    pg_types(&cn, "types_bin", 8);         /* binary COPY */
    pg_modes(&cn);
    pg_misfits(&cn);
    pg_failures(&cn, dsn);
    printf("postgres: %s\n", failures == f0 ? "ok" : "FAILED");
    PQfinish(pga);
    pga = NULL;
    pgx(root, "DROP DATABASE IF EXISTS %s", pg_db);
    pgx(root, "DROP ROLE IF EXISTS %s", pg_role);
    PQfinish(root);
}

/* ======================================================================== */
/* ---- SQLite ------------------------------------------------------------- */

static char sq_path[256];

static zx_conf_connection sq_conn(const char *name, const char *path)
{
    zx_conf_connection c;
    memset(&c, 0, sizeof(c));
    c.name = (char *)name;
    c.kind = "sqlite";
    c.path = (char *)path;
    return c;
}

/* first value of a query as text, on a connection of the test's own */
static const char *sqv(sqlite3 *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *sqv(sqlite3 *db, const char *fmt, ...)
{
    static char out[4][4096];
    static int k;
    char *o = out[k++ & 3];
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(o, 4096, "<ERR %s>", sqlite3_errmsg(db));
        return o;
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_NULL)
        snprintf(o, 4096, "<NULL>");
    else if (rc == SQLITE_ROW)
        snprintf(o, 4096, "%s", (const char *)sqlite3_column_text(st, 0));
    else
        snprintf(o, 4096, rc == SQLITE_DONE ? "<none>" : "<ERR %s>", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return o;
}

static void sq_types(const zx_conf_connection *cn, sqlite3 *db)
{
    trun t = { .dest = &zx_dest_sqlite, .conn = cn, .table = "main.types",
               .mode = ZX_MODE_UPSERT, .cols = types_cols, .ncols = 9, .keys = id_key,
               .nkeys = 1 };
    tv v[4 * 9];
    types_rows(v);
    if (t_run(&t, v, 4) < 0) {
        printf("sqlite types run: %s\n", t.err);
        CHECK(0);
        return;
    }
    CHECK(t.stats.rows_written == 4);
    CHECK(t.stats.nulled == 1);                    /* NaN: SQLite has none */
    CHECK_STR(sqv(db, "SELECT group_concat(name || ' ' || type || ' ' || pk || ' ' || \"notnull\","
                      " ', ') FROM pragma_table_info('types')"),
              "id INTEGER 1 1, t TEXT 0 0, d REAL 0 0, b INTEGER 0 0, ts TEXT 0 0, dt TEXT 0 0, "
              "j TEXT 0 0, by BLOB 0 0, n TEXT 0 0");
    CHECK_STR(sqv(db, "SELECT group_concat(id, ',') FROM (SELECT id FROM types ORDER BY id)"),
              "-9223372036854775808,0,7,9223372036854775807");
    CHECK_STR(sqv(db, "SELECT hex(t) FROM types WHERE id = -9223372036854775808"),
              "68C3A96C6C6F20E29C9320F09D849E205C2074616209206E6C0A2063720D");
    CHECK_STR(sqv(db, "SELECT typeof(t) || length(t) FROM types WHERE id = 9223372036854775807"),
              "text0");
    CHECK_STR(sqv(db, "SELECT typeof(t) FROM types WHERE id = 0"), "null");
    CHECK_STR(sqv(db, "SELECT group_concat(coalesce(typeof(d) || ':' || d, 'null'), ',') FROM "
                      "(SELECT d FROM types ORDER BY id)"), "null,real:-Inf,real:0.1,real:Inf");
    CHECK_STR(sqv(db, "SELECT group_concat(coalesce(b, 'null'), ',') FROM (SELECT b FROM types "
                      "ORDER BY id)"), "1,null,1,0");
    CHECK_STR(sqv(db, "SELECT group_concat(ts, ',') FROM (SELECT ts FROM types ORDER BY id)"),
              "1969-12-31T23:59:59.999999Z,9999-12-31T23:59:59.999999Z,"
              "2025-12-01T06:13:18.123456Z,0001-01-01T00:00:00.000000Z");
    CHECK_STR(sqv(db, "SELECT group_concat(coalesce(dt, 'null'), ',') FROM (SELECT dt FROM types "
                      "ORDER BY id)"), "0001-01-01,null,2000-02-29,9999-12-31");
    CHECK_STR(sqv(db, "SELECT group_concat(coalesce(typeof(j) || ':' || j, 'null'), '|') FROM "
                      "(SELECT j FROM types ORDER BY id)"),
              "text:" JNEST "|null|text:12345678901234567890123|text:[]");
    CHECK_STR(sqv(db, "SELECT group_concat(coalesce(typeof(by) || ':' || hex(by), 'null'), ',') "
                      "FROM (SELECT by FROM types ORDER BY id)"),
              "blob:610062FF,null:,blob:5C78,blob:");
    CHECK_STR(sqv(db, "SELECT group_concat(coalesce(typeof(n) || ':' || n, 'null'), ',') FROM "
                      "(SELECT n FROM types ORDER BY id)"),
              "text:" NUMBIG ",null,text:42,text:0.0000000001");
}

static void sq_modes(const zx_conf_connection *cn, sqlite3 *db)
{
    trun t = { .dest = &zx_dest_sqlite, .conn = cn, .table = "rep", .mode = ZX_MODE_REPLACE,
               .cols = kv_cols, .ncols = 2, .keys = id_key, .nkeys = 1 };
    tv r1[] = { I(1), T("a"), I(2), T("b"), I(3), T("c") };
    CHECK(t_run(&t, r1, 3) == 0);
    const char *all = "SELECT group_concat(id || v, ',') FROM (SELECT * FROM rep ORDER BY id)";
    CHECK_STR(sqv(db, "%s", all), "1a,2b,3c");
    tv r2[] = { I(4), T("d"), I(5), T("e") };
    CHECK(t_open(&t) == 0 && t_begin(&t) == 0 && t_write(&t, r2, 2) == 0);
    CHECK_STR(sqv(db, "%s", all), "1a,2b,3c");     /* WAL: the old rows until commit */
    t_end(&t, 1);
    CHECK_STR(sqv(db, "%s", all), "4d,5e");
    CHECK_STR(sqv(db, "PRAGMA journal_mode"), "wal");

    t.mode = ZX_MODE_APPEND;
    tv r3[] = { I(6), T("f") };
    CHECK(t_run(&t, r3, 1) == 0);
    CHECK_STR(sqv(db, "%s", all), "4d,5e,6f");

    trun u = { .dest = &zx_dest_sqlite, .conn = cn, .table = "ups", .mode = ZX_MODE_UPSERT,
               .cols = kv_cols, .ncols = 2, .keys = id_key, .nkeys = 1 };
    tv b1[] = { I(1), T("x"), I(2), T("b"), I(1), T("a"), I(3), T("c") };
    tv b2[] = { I(3), T("c2"), I(4), T("d"), I(5), T("e") };
    CHECK(t_open(&u) == 0 && t_begin(&u) == 0 && t_write(&u, b1, 4) == 0 &&
          t_write(&u, b2, 3) == 0);
    t_end(&u, 1);
    CHECK(u.stats.rows_written == 7);
    const char *ua = "SELECT group_concat(id || v, ',') FROM (SELECT * FROM ups ORDER BY id)";
    CHECK_STR(sqv(db, "%s", ua), "1a,2b,3c2,4d,5e");
    sqlite3_exec(db, "UPDATE ups SET v = v || '!' WHERE id IN (1, 4)", NULL, NULL, NULL);
    tv b3[] = { I(2), T("B"), I(6), T("f"), I(2), T("BB") };
    CHECK(t_run(&u, b3, 3) == 0);
    CHECK_STR(sqv(db, "%s", ua), "1a!,2BB,3c2,4d!,5e,6f");

    static const zx_dcol mc[] = { { "region", ZX_DT_TEXT, 0, 0 }, { "id", ZX_DT_INT64, 0, 0 },
                                  { "v", ZX_DT_TEXT, 0, 0 } };
    static const char *const mk[] = { "region", "id" };
    trun m = { .dest = &zx_dest_sqlite, .conn = cn, .table = "mir", .mode = ZX_MODE_MIRROR,
               .cols = mc, .ncols = 3, .keys = mk, .nkeys = 2 };
    tv m1[] = { T("eu"), I(1), T("a"), T("eu"), I(2), T("b"), T("us"), I(1), T("c"),
                T("us"), I(2), T("d") };
    CHECK(t_run(&m, m1, 4) == 0);
    tv m2[] = { T("eu"), I(1), T("a2") };
    tv del[] = { T("eu"), I(2), T("us"), I(1), T("xx"), I(1), N(), I(2) };
    CHECK(t_open(&m) == 0 && t_begin(&m) == 0 && t_write(&m, m2, 1) == 0 &&
          t_delete(&m, del, 4) == 0);
    t_end(&m, 1);
    CHECK(m.stats.rows_deleted == 2);
    CHECK(m.stats.nulled == 1);                    /* the NULL key */
    const char *ma = "SELECT group_concat(region || id || v, ',') FROM (SELECT * FROM mir "
                     "ORDER BY region, id)";
    CHECK_STR(sqv(db, "%s", ma), "eu1a2,us2d");
    CHECK(t_open(&m) == 0 && t_begin(&m) == 0 && t_write(&m, m2, 1) == 0 &&
          t_delete(&m, del, 1) == 0);
    t_end(&m, 0);
    CHECK_STR(sqv(db, "%s", ma), "eu1a2,us2d");
    trun n = u;
    n.table = "abt";
    CHECK(t_open(&n) == 0 && t_begin(&n) == 0 && t_write(&n, r1, 3) == 0);
    t_end(&n, 0);
    CHECK_STR(sqv(db, "SELECT count(*) FROM sqlite_master WHERE name = 'abt'"), "0");

    sqlite3_exec(db, "CREATE TABLE addc (id INTEGER PRIMARY KEY)", NULL, NULL, NULL);
    trun a = u;
    a.table = "addc";
    tv ar[] = { I(1), T("one") };
    CHECK(t_run(&a, ar, 1) == 0);
    CHECK_STR(sqv(db, "SELECT id || v FROM addc"), "1one");
    sqlite3_exec(db, "CREATE VIEW vw AS SELECT 1 AS id, 'x' AS v", NULL, NULL, NULL);
    a.table = "vw";
    CHECK(t_run(&a, ar, 1) == -1);
    CHECK_STR(a.err, "sqlite local table vw: is a view: zx writes only to tables");
    sqlite3_exec(db, "CREATE TABLE nok (id INTEGER, v TEXT)", NULL, NULL, NULL);
    a.table = "nok";
    CHECK(t_run(&a, ar, 1) == -1);
    CHECK_HAS(a.err, "sqlite local table nok: upsert needs a primary key");
    sqlite3_exec(db, "CREATE UNIQUE INDEX nok_id ON nok (id)", NULL, NULL, NULL);
    CHECK(t_run(&a, ar, 1) == 0);
    CHECK_STR(sqv(db, "SELECT id || v FROM nok"), "1one");

    /* misfits */
    trun f = u;
    f.table = "mis";
    tv mr[] = { I(1), T("x"), T("abc"), T("y"), T("42"), T("z"), R(2.0), T("w"), N(), T("nokey") };
    static const zx_dcol ic[] = { { "id", ZX_DT_INT64, 0, 0 }, { "v", ZX_DT_TEXT, 0, 0 } };
    f.cols = ic;
    CHECK(t_run(&f, mr, 5) == 0);
    CHECK(f.stats.nulled == 2);            /* "abc" and the NULL key */
    CHECK(f.stats.rows_written == 3);
    CHECK_STR(sqv(db, "SELECT group_concat(id || v, ',') FROM (SELECT * FROM mis ORDER BY id)"),
              "1x,2w,42z");

    zx_conf_connection ro = *cn;
    ro.read_only = 1;
    t.conn = &ro;
    CHECK(t_open(&t) == -1);
    CHECK_STR(t.err, "sqlite connection local is read_only: zx never writes to it");
    t.conn = cn;
    t.table = "other.t";
    CHECK(t_open(&t) == -1);
    CHECK_HAS(t.err, "sqlite local table other.t: not a table name");
    zx_conf_connection nf = sq_conn("local", "/nonexistent-zxdt/x.db");
    t.conn = &nf;
    t.table = "t";
    CHECK(t_open(&t) == -1);
    CHECK_HAS(t.err, "sqlite local table t: cannot open /nonexistent-zxdt/x.db: ");
}

/* Remove a SQLite file and its -wal and -shm files. */
static void unlink_db(const char *path)
{
    char p[320];
    unlink(path);
    snprintf(p, sizeof(p), "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof(p), "%s-shm", path);
    unlink(p);
}

/* Runs of several syncs opening the same new file at the same instant: each
 * asks for WAL, and SQLite answers one of them BUSY without waiting (each
 * holds the lock the other needs); every run must still succeed.  8
 * processes released together on 30 new files. */
static void sq_opened_at_once(void)
{
    enum { PROCS = 8, FILES = 30 };
    int bad = 0;
    for (int f = 0; f < FILES && !bad; f++) {
        char path[128];
        snprintf(path, sizeof(path), "/tmp/zxdt-%ld-once-%d.db", (long)getpid(), f);
        int go[2];
        if (pipe(go) < 0)
            break;
        pid_t kids[PROCS];
        for (int k = 0; k < PROCS; k++) {
            kids[k] = fork();
            if (kids[k] == 0) {
                close(go[1]);
                char c;
                if (read(go[0], &c, 1) < 0)
                    _exit(3);
                zx_conf_connection cn = sq_conn("local", path);
                char table[16];
                snprintf(table, sizeof(table), "t%d", k);
                trun t = { .dest = &zx_dest_sqlite, .conn = &cn, .table = table,
                           .mode = ZX_MODE_APPEND, .cols = kv_cols, .ncols = 2 };
                tv r[] = { I(k), T("x") };
                int rc = t_run(&t, r, 1);
                if (rc != 0)
                    printf("opened at once: %s\n", t.err);
                _exit(rc == 0 ? 0 : 1);
            }
        }
        close(go[0]);
        close(go[1]);   /* EOF releases them all at once */
        for (int k = 0; k < PROCS; k++) {
            int st = 0;
            if (kids[k] > 0 && waitpid(kids[k], &st, 0) == kids[k] &&
                !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
                bad++;
        }
        unlink_db(path);
    }
    CHECK(bad == 0);
}

static void test_sqlite(void)
{
    snprintf(sq_path, sizeof(sq_path), "/tmp/zxdt-%ld-t.db", (long)getpid());
    unlink(sq_path);
    zx_conf_connection cn = sq_conn("local", sq_path);
    int f0 = failures;
    /* the file is made by the first open */
    trun t = { .dest = &zx_dest_sqlite, .conn = &cn, .table = "first", .mode = ZX_MODE_APPEND,
               .cols = kv_cols, .ncols = 2 };
    tv r[] = { I(1), T("a") };
    CHECK(t_run(&t, r, 1) == 0);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(sq_path, &db) == SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    sq_types(&cn, db);
    sq_modes(&cn, db);
    sqlite3_close(db);
    sq_opened_at_once();
    printf("sqlite: %s\n", failures == f0 ? "ok" : "FAILED");
    unlink_db(sq_path);
}

/* ======================================================================== */
/* ---- benchmark ---------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const zx_dcol bench_cols[] = { { "id", ZX_DT_INT64, 0, 0 }, { "name", ZX_DT_TEXT, 0, 0 },
                                      { "v", ZX_DT_DOUBLE, 0, 0 },
                                      { "ts", ZX_DT_TIMESTAMP, 0, 0 },
                                      { "flag", ZX_DT_BOOL, 0, 0 } };

/* one batch of the benchmark's rows: ids first, first + step, ... (n) */
static void bench_batch(zx_rowset *rs, int64_t first, int64_t step, size_t n, int gen)
{
    zx_rowset_reset(rs);
    for (size_t c = 0; c < 5; c++)
        zx_rowset_column(rs, bench_cols[c].name, strlen(bench_cols[c].name), ZX_T_NULL);
    for (size_t r = 0; r < n; r++) {
        int64_t id = first + (int64_t)r * step;
        zx_rowset_begin_row(rs);
        zx_value v;
        memset(&v, 0, sizeof(v));
        v.type = ZX_T_INT;
        v.u.i = id;
        zx_rowset_add(rs, 0, &v);
        char name[32];
        int nl = snprintf(name, sizeof(name), "customer-%011" PRId64 "%d", id, gen);
        v.type = ZX_T_TEXT;
        v.s = zx_rowset_strdup(rs, name, (size_t)nl);
        v.len = (uint32_t)nl;
        zx_rowset_add(rs, 1, &v);
        v.type = ZX_T_REAL;
        v.s = NULL;
        v.len = 0;
        v.u.d = (double)id * 1.25 + gen;
        zx_rowset_add(rs, 2, &v);
        v.type = ZX_T_TIMESTAMP;
        v.u.i = 1764569598000000LL + id * 1000 + gen;
        zx_rowset_add(rs, 3, &v);
        v.type = ZX_T_BOOL;
        v.u.b = (int)((id + gen) & 1);
        zx_rowset_add(rs, 4, &v);
        zx_rowset_end_row(rs);
    }
}

/* one upsert run of nrows rows (ids 0, step, 2 step, ...) in batches of
 * 10,000; the time spent in the destination only */
static double bench_run(const zx_dest *dest, const zx_conf_connection *cn, size_t nrows,
                        int64_t step, int gen)
{
    trun t = { .dest = dest, .conn = cn, .table = "bench", .mode = ZX_MODE_UPSERT,
               .cols = bench_cols, .ncols = 5, .keys = id_key, .nkeys = 1 };
    zx_rowset rs;
    zx_rowset_init(&rs);
    double spent = 0, t0 = now_s();
    int ok = t_open(&t) == 0 && t_begin(&t) == 0;
    spent += now_s() - t0;
    const size_t batch = 10000;
    for (size_t done = 0; ok && done < nrows; done += batch) {
        size_t n = nrows - done < batch ? nrows - done : batch;
        bench_batch(&rs, (int64_t)done * step, step, n, gen);
        t0 = now_s();
        ok = dest->write(t.st, &rs, t.err, sizeof(t.err)) == 0;
        spent += now_s() - t0;
    }
    t0 = now_s();
    ok = ok && dest->commit(t.st, t.err, sizeof(t.err)) == 0;
    spent += now_s() - t0;
    if (!ok) {
        printf("bench %s: %s\n", dest->name, t.err);
        if (t.st)
            dest->abort(t.st);
    }
    if (t.st)
        dest->close(t.st);
    zx_rowset_free(&rs);
    return ok ? spent : -1;
}

static void bench(void)
{
    const char *dsn = getenv("ZX_PG_DSN");
    if (dsn && *dsn) {
        PGconn *root = PQconnectdb(dsn);
        snprintf(pg_db, sizeof(pg_db), "zxdt_bench_%ld", (long)getpid());
        pgx(root, "DROP DATABASE IF EXISTS %s", pg_db);
        if (PQstatus(root) == CONNECTION_OK && pgx(root, "CREATE DATABASE %s", pg_db) == 0 &&
            dsn_with(dsn, dsn_db, sizeof(dsn_db), "dbname", pg_db, (char *)NULL) == 0) {
            zx_conf_connection cn = pg_conn("bench", dsn_db);
            cn.dsn_shown = "bench";
            for (int round = 0; round < 2; round++) {
                if (round) {
                    PGconn *c = PQconnectdb(dsn_db);
                    pgx(c, "DROP TABLE bench");
                    PQfinish(c);
                }
                double s1 = bench_run(&zx_dest_postgres, &cn, 1000000, 1, 0);
                PGconn *c = PQconnectdb(dsn_db);
                pgx(c, "VACUUM ANALYZE bench");
                PQfinish(c);
                double s2 = bench_run(&zx_dest_postgres, &cn, 10000, 100, 1);
                printf("postgres: 1,000,000 rows upserted into an empty table: %.2f s, %.0f "
                       "rows/s; 10,000 changed rows into it: %.3f s, %.0f rows/s\n", s1,
                       1e6 / s1, s2, 1e4 / s2);
            }
            pgx(root, "DROP DATABASE IF EXISTS %s", pg_db);
        }
        PQfinish(root);
    } else
        printf("SKIP: ZX_PG_DSN not set\n");
    snprintf(sq_path, sizeof(sq_path), "/tmp/zxdt-%ld-bench.db", (long)getpid());
    for (int round = 0; round < 2; round++) {
        unlink(sq_path);
        zx_conf_connection cn = sq_conn("bench", sq_path);
        double s1 = bench_run(&zx_dest_sqlite, &cn, 1000000, 1, 0);
        double s2 = bench_run(&zx_dest_sqlite, &cn, 10000, 100, 1);
        printf("sqlite: 1,000,000 rows upserted into an empty table: %.2f s, %.0f rows/s; "
               "10,000 changed rows into it: %.3f s, %.0f rows/s\n", s1, 1e6 / s1, s2, 1e4 / s2);
    }
    char p[300];
    unlink(sq_path);
    snprintf(p, sizeof(p), "%s-wal", sq_path);
    unlink(p);
    snprintf(p, sizeof(p), "%s-shm", sq_path);
    unlink(p);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (getenv("ZX_DEST_BENCH")) {
        bench();
        return 0;
    }
    CHECK(strcmp(zx_dest_postgres.name, "postgres") == 0);
    CHECK(strcmp(zx_dest_sqlite.name, "sqlite") == 0);
    CHECK(zx_dest_postgres.caps == (ZX_DEST_TXN | ZX_DEST_ATOMIC_REPLACE | ZX_DEST_DELETES |
                                    ZX_DEST_UPSERT));
    CHECK(zx_dest_sqlite.caps == zx_dest_postgres.caps);
    test_cells();
    test_sqlite();
    test_postgres();
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
