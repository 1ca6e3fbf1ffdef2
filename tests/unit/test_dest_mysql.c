/*
 * test_dest_mysql.c — the MySQL / MariaDB destination (workers/syncs/
 * dest_mysql.c) against the real server of tests/services/mariadb, whose
 * DSN test.sh exports as ZX_MYSQL_DSN (without it: "SKIP", exit 77).
 *
 * Proves: the table is made with the documented column types (read back
 * from information_schema), key text columns as VARCHAR with a binary
 * no-pad collation; every type's values round-trip exactly (int64 limits,
 * doubles to the last bit, decimal(38,10), unicode, '' apart from NULL,
 * timestamps before 1970 with µs, dates 0001-01-01 and 9999-12-31, JSON,
 * bytes with NUL), decimal literals in every accepted form rounded to the
 * scale and sent exactly, misfits (common/dcell.h) become NULL and are
 * counted; replace leaves the
 * old rows visible to another connection until commit; append adds;
 * upsert replaces changed rows; mirror deletes keys, composite ones too;
 * abort rolls back (also after a failed begin); an existing table gets
 * missing columns, and one that cannot take the run is refused; read_only
 * is refused; a user without INSERT (zx_ro) gets a message naming the
 * destination and the server's error; a connection killed mid-run makes
 * write / commit fail cleanly and abort safe; no message holds a
 * password.  Last, it measures upserting 200,000 rows of 5 columns.
 *
 * Uses the database zxmy_dest (dropped at the start and the end).
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mysql.h>

#include "common/mysql_dsn.h"
#include "common/rowset.h"
#include "tests/unit/check.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/mysql/dest_mysql_int.h"

extern const zx_dest zx_dest_mysql;

#define DB "zxmy_dest"

static const zx_dest *D = &zx_dest_mysql;
static zx_mysql_dsn base;     /* ZX_MYSQL_DSN, parsed */
static MYSQL *admin;          /* the checking connection (database mysql) */
static char dsn_rw[600], dsn_ro[600];

/* ---- the checking connection ----------------------------------------- */

static MYSQL *connect_as(const char *user, const char *pw, const char *db)
{
    MYSQL *m = mysql_init(NULL);
    unsigned t = 10;
    mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &t);
    mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (!mysql_real_connect(m, base.host, user, pw, db, base.port, NULL, 0)) {
        printf("connecting as %s: %s\n", user, mysql_error(m));
        mysql_close(m);
        return NULL;
    }
    mysql_query(m, "SET time_zone = '+00:00'");
    return m;
}

static void sql_on(MYSQL *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sql_on(MYSQL *m, const char *fmt, ...)
{
    char q[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q, sizeof(q), fmt, ap);
    va_end(ap);
    if (mysql_query(m, q)) {
        printf("SQL failed: %s: %s\n", q, mysql_error(m));
        failures++;
    }
}
#define SQL(...) sql_on(admin, __VA_ARGS__)

/* The first column of the first row, as a malloc'd string with *len (NULL
 * for SQL NULL or no row); "ERROR" when the query fails. */
static char *sql1_on(MYSQL *m, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static char *sql1_on(MYSQL *m, size_t *len, const char *fmt, ...)
{
    char q[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q, sizeof(q), fmt, ap);
    va_end(ap);
    if (len)
        *len = 0;
    if (mysql_query(m, q)) {
        printf("SQL failed: %s: %s\n", q, mysql_error(m));
        return strdup("ERROR");
    }
    MYSQL_RES *res = mysql_store_result(m);
    if (!res)
        return strdup("ERROR");
    MYSQL_ROW r = mysql_fetch_row(res);
    char *out = NULL;
    if (r && r[0]) {
        unsigned long *l = mysql_fetch_lengths(res);
        out = malloc(l[0] + 1);
        memcpy(out, r[0], l[0]);
        out[l[0]] = '\0';
        if (len)
            *len = l[0];
    }
    mysql_free_result(res);
    return out;
}
#define SQL1(...) sql1_on(admin, NULL, __VA_ARGS__)

/* CHECK that the query's first value is want (NULL: SQL NULL) */
#define SQLEQ(want, ...) do {                                                  \
        char *got_ = SQL1(__VA_ARGS__);                                        \
        const char *w_ = (want);                                               \
        if (w_ ? (!got_ || strcmp(got_, w_)) : got_ != NULL) {                 \
            printf("%s:%d: got \"%s\", want \"%s\"\n", __FILE__, __LINE__,     \
                   got_ ? got_ : "NULL", w_ ? w_ : "NULL");                    \
            failures++;                                                        \
        }                                                                      \
        free(got_);                                                            \
    } while (0)

static long long count_rows(const char *table)
{
    char *s = SQL1("SELECT COUNT(*) FROM " DB ".%s", table);
    long long n = s ? atoll(s) : -1;
    free(s);
    return n;
}

/* ---- connections and runs ---------------------------------------------- */

typedef struct tconn {
    zx_conf_connection c;
    char *shown;
} tconn;

static void tconn_init(tconn *t, const char *name, const char *dsn, int read_only)
{
    memset(t, 0, sizeof(*t));
    t->shown = zx_mysql_dsn_redact(dsn);
    t->c.name = (char *)name;
    t->c.kind = (char *)"mysql";
    t->c.dsn = (char *)dsn;
    t->c.dsn_shown = t->shown;
    t->c.read_only = read_only;
}

static void tconn_free(tconn *t)
{
    free(t->shown);
}

static zx_dest_args args_for(const zx_conf_connection *c, const char *table)
{
    zx_dest_args a;
    memset(&a, 0, sizeof(a));
    a.sync = "test_sync";
    a.conn = c;
    a.table = table;
    a.deadline_ms = 20000;
    return a;
}

/* No message may hold a password. */
static void no_secret(const char *err)
{
    if (strstr(err, "zx-secret") || strstr(err, "ro-secret")) {
        printf("a message shows a password: %s\n", err);
        failures++;
    }
}

/* A run: open, begin, write rs (if any), delete_keys dels (if any),
 * commit, close.  0, or -1 with err (after abort and close). */
static int run(const zx_conf_connection *c, const char *table, zx_sync_mode mode,
               const zx_dcol *cols, size_t ncols, const char *const *keys, size_t nkeys,
               const zx_rowset *rs, const zx_rowset *dels, zx_dest_stats *stats, char *err,
               size_t errlen)
{
    static uint64_t run_id;
    zx_dest_args a = args_for(c, table);
    zx_dest_run r = {.run_id = ++run_id, .mode = mode, .cols = cols, .ncols = ncols,
                     .key_cols = keys, .nkey_cols = nkeys};
    zx_dest_stats local;
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof(*stats));
    void *st = NULL;
    err[0] = '\0';
    if (D->open(&a, &st, err, errlen) < 0) {
        no_secret(err);
        return -1;
    }
    if (D->begin(st, &r, stats, err, errlen) < 0 || (rs && D->write(st, rs, err, errlen) < 0) ||
        (dels && D->delete_keys(st, dels, err, errlen) < 0) || D->commit(st, err, errlen) < 0) {
        D->abort(st);
        D->close(st);
        no_secret(err);
        return -1;
    }
    D->close(st);
    return 0;
}

/* ---- rowsets ------------------------------------------------------------- */

static void rs_columns(zx_rowset *rs, const zx_dcol *cols, size_t n)
{
    zx_rowset_init(rs);
    for (size_t i = 0; i < n; i++)
        zx_rowset_column(rs, cols[i].name, strlen(cols[i].name), ZX_T_NULL);
}

static void add_v(zx_rowset *rs, uint32_t col, zx_value v)
{
    CHECK(zx_rowset_add(rs, col, &v) == 0);
}

static void add_int(zx_rowset *rs, uint32_t col, int64_t i)
{
    zx_value v = {.type = ZX_T_INT};
    v.u.i = i;
    add_v(rs, col, v);
}

static void add_real(zx_rowset *rs, uint32_t col, double d)
{
    zx_value v = {.type = ZX_T_REAL};
    v.u.d = d;
    add_v(rs, col, v);
}

static void add_bool(zx_rowset *rs, uint32_t col, int b)
{
    zx_value v = {.type = ZX_T_BOOL};
    v.u.b = b;
    add_v(rs, col, v);
}

static void add_str(zx_rowset *rs, uint32_t col, zx_type t, const char *s, size_t n)
{
    zx_value v = {.type = (uint8_t)t, .len = (uint32_t)n};
    v.s = zx_rowset_strdup(rs, s, n);
    add_v(rs, col, v);
}

static void add_text(zx_rowset *rs, uint32_t col, const char *s)
{
    add_str(rs, col, ZX_T_TEXT, s, strlen(s));
}

static void add_json(zx_rowset *rs, uint32_t col, const char *s)
{
    add_str(rs, col, ZX_T_JSON, s, strlen(s));
}

static void add_ts(zx_rowset *rs, uint32_t col, int64_t us)
{
    zx_value v = {.type = ZX_T_TIMESTAMP};
    v.u.i = us;
    add_v(rs, col, v);
}

/* ---- the tests ----------------------------------------------------------- */

static const zx_dcol all_cols[] = {
    {"id", ZX_DT_INT64, 0, 0},      {"t", ZX_DT_TEXT, 0, 0},
    {"i", ZX_DT_INT64, 0, 0},       {"d", ZX_DT_DOUBLE, 0, 0},
    {"b", ZX_DT_BOOL, 0, 0},        {"ts", ZX_DT_TIMESTAMP, 0, 0},
    {"dt", ZX_DT_DATE, 0, 0},       {"dec", ZX_DT_DECIMAL, 38, 10},
    {"j", ZX_DT_JSON, 0, 0},        {"by", ZX_DT_BYTES, 0, 0},
};
enum { C_ID, C_T, C_I, C_D, C_B, C_TS, C_DT, C_DEC, C_J, C_BY, NCOLS };
static const char *const id_key[] = {"id"};

static void check_double(const char *table, int id, double want)
{
    char *s = SQL1("SELECT d FROM " DB ".%s WHERE id = %d", table, id);
    double got = s ? strtod(s, NULL) : NAN;
    if (!s || memcmp(&got, &want, sizeof(double)) != 0) {
        printf("%s:%d: id %d: double %s, want %.17g\n", __FILE__, __LINE__, id, s ? s : "NULL",
               want);
        failures++;
    }
    free(s);
}

static void test_types(tconn *rw)
{
    zx_rowset rs;
    rs_columns(&rs, all_cols, NCOLS);
    static const char uni[] = "h\xc3\xa9llo \xf0\x9f\x8c\x8d 'q' \\ \"dq\" \n\t\x1a end";
    static const char bytes1[] = {'\0', 1, (char)0xff, '\'', '\\', 'x'};

    zx_rowset_begin_row(&rs); /* 1: the edges */
    add_int(&rs, C_ID, 1);
    add_text(&rs, C_T, uni);
    add_int(&rs, C_I, INT64_MIN);
    add_real(&rs, C_D, 0.1);
    add_bool(&rs, C_B, 1);
    add_ts(&rs, C_TS, -1);
    add_text(&rs, C_DT, "0001-01-01");
    add_text(&rs, C_DEC, "-1234567890123456789012345678.0123456789");
    add_json(&rs, C_J, "{\"a\":[1,2.5,{\"b\":null}],\"u\":\"\xc3\xa9\"}");
    add_str(&rs, C_BY, ZX_T_TEXT, bytes1, sizeof(bytes1));
    zx_rowset_end_row(&rs);

    zx_rowset_begin_row(&rs); /* 2: the other edges */
    add_int(&rs, C_ID, 2);
    add_text(&rs, C_T, "");
    add_int(&rs, C_I, INT64_MAX);
    add_real(&rs, C_D, 4.9406564584124654e-324);
    add_bool(&rs, C_B, 0);
    add_ts(&rs, C_TS, 253402300799999999LL);
    add_text(&rs, C_DT, "9999-12-31");
    add_text(&rs, C_DEC, "0.0000000001");
    add_json(&rs, C_J, "[]");
    add_str(&rs, C_BY, ZX_T_TEXT, "", 0);
    zx_rowset_end_row(&rs);

    zx_rowset_begin_row(&rs); /* 3: NULL everywhere (no cells) */
    add_int(&rs, C_ID, 3);
    zx_rowset_end_row(&rs);

    zx_rowset_begin_row(&rs); /* 4: conversions and misfits */
    add_int(&rs, C_ID, 4);
    add_int(&rs, C_T, 7);                               /* "7" */
    add_text(&rs, C_I, "42");                           /* 42 */
    add_real(&rs, C_D, NAN);                            /* misfit */
    add_text(&rs, C_B, "maybe");                        /* misfit */
    add_text(&rs, C_TS, "2024-02-29T12:34:56.123456+02:00");
    add_text(&rs, C_DT, "2023-02-29");                  /* misfit */
    add_int(&rs, C_DEC, 5);                             /* 5.0000000000 */
    add_text(&rs, C_J, "hi");                           /* "hi" */
    add_int(&rs, C_BY, 9);                              /* "9" */
    zx_rowset_end_row(&rs);

    zx_rowset_begin_row(&rs); /* 5: more edges and misfits */
    add_int(&rs, C_ID, 5);
    add_text(&rs, C_T, "\xff\xfe not utf-8");           /* misfit */
    add_real(&rs, C_I, 3.0);                            /* 3 */
    add_real(&rs, C_D, 1.7976931348623157e308);
    add_int(&rs, C_B, 1);                               /* true */
    add_ts(&rs, C_TS, -62135596800000000LL);            /* 0001-01-01 */
    add_ts(&rs, C_DT, 86400000000LL * 19000);           /* midnight: a date */
    add_text(&rs, C_DEC, "99999999999999999999999999999"); /* 29 digits: misfit */
    add_int(&rs, C_J, -12);
    add_json(&rs, C_BY, "[1]");                         /* its text as bytes */
    zx_rowset_end_row(&rs);

    zx_rowset_begin_row(&rs); /* 6: more misfits */
    add_int(&rs, C_ID, 6);
    add_real(&rs, C_D, 1.0 / 3.0);
    add_text(&rs, C_I, "9223372036854775808");          /* misfit */
    add_ts(&rs, C_TS, 253402300800000000LL);            /* year 10000: misfit */
    add_text(&rs, C_DEC, "1.00000000000");              /* 11 digits, zeros: fits */
    add_text(&rs, C_DT, "2024-1-01");                   /* misfit */
    zx_rowset_end_row(&rs);

    zx_rowset_begin_row(&rs); /* 7 */
    add_int(&rs, C_ID, 7);
    add_real(&rs, C_D, -0.0);
    add_text(&rs, C_DEC, "1.00000000005");              /* rounded: 1.0000000001 */
    add_real(&rs, C_I, 0.5);                            /* misfit */
    zx_rowset_end_row(&rs);

    char err[512];
    zx_dest_stats stats;
    int rc = run(&rw->c, DB ".types", ZX_MODE_REPLACE, all_cols, NCOLS, id_key, 1, &rs, NULL,
                 &stats, err, sizeof(err));
    if (rc)
        printf("types run: %s\n", err);
    CHECK(rc == 0);
    CHECK(stats.rows_written == 7);
    CHECK(stats.nulled == 9);
    CHECK(stats.bytes > 0);
    zx_rowset_free(&rs);

    /* column types */
    static const struct { const char *col, *type; } types[] = {
        {"id", "bigint(20)"}, {"t", "longtext"}, {"i", "bigint(20)"}, {"d", "double"},
        {"b", "tinyint(1)"}, {"ts", "datetime(6)"}, {"dt", "date"},
        {"dec", "decimal(38,10)"}, {"j", "longtext"}, {"by", "longblob"},
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        SQLEQ(types[i].type, "SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE "
              "TABLE_SCHEMA = '" DB "' AND TABLE_NAME = 'types' AND COLUMN_NAME = '%s'",
              types[i].col);
    SQLEQ("PRI", "SELECT COLUMN_KEY FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '" DB
          "' AND TABLE_NAME = 'types' AND COLUMN_NAME = 'id'");
    SQLEQ("InnoDB", "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = '" DB
          "' AND TABLE_NAME = 'types'");
    /* MariaDB's JSON: LONGTEXT with a JSON_VALID check */
    SQLEQ("1", "SELECT COUNT(*) FROM information_schema.CHECK_CONSTRAINTS WHERE "
          "CONSTRAINT_SCHEMA = '" DB "' AND TABLE_NAME = 'types' AND CHECK_CLAUSE LIKE "
          "'json_valid(%%j%%)'");

    /* row 1 */
    size_t n;
    char *s = sql1_on(admin, &n, "SELECT t FROM " DB ".types WHERE id = 1");
    CHECK(s && n == strlen(uni) && !memcmp(s, uni, n));
    free(s);
    SQLEQ("-9223372036854775808", "SELECT i FROM " DB ".types WHERE id = 1");
    check_double("types", 1, 0.1);
    SQLEQ("1", "SELECT b FROM " DB ".types WHERE id = 1");
    SQLEQ("1969-12-31 23:59:59.999999", "SELECT ts FROM " DB ".types WHERE id = 1");
    SQLEQ("0001-01-01", "SELECT dt FROM " DB ".types WHERE id = 1");
    SQLEQ("-1234567890123456789012345678.0123456789", "SELECT `dec` FROM " DB ".types WHERE id = 1");
    SQLEQ("{\"a\":[1,2.5,{\"b\":null}],\"u\":\"\xc3\xa9\"}", "SELECT j FROM " DB ".types WHERE id = 1");
    SQLEQ("0001FF275C78", "SELECT HEX(`by`) FROM " DB ".types WHERE id = 1");
    SQLEQ("6", "SELECT LENGTH(`by`) FROM " DB ".types WHERE id = 1");

    /* row 2 */
    SQLEQ("", "SELECT t FROM " DB ".types WHERE id = 2");
    SQLEQ("9223372036854775807", "SELECT i FROM " DB ".types WHERE id = 2");
    SQLEQ("1", "SELECT d = 4.9406564584124654e-324 AND d > 0 FROM " DB ".types WHERE id = 2");
    SQLEQ("0", "SELECT b FROM " DB ".types WHERE id = 2");
    SQLEQ("9999-12-31 23:59:59.999999", "SELECT ts FROM " DB ".types WHERE id = 2");
    SQLEQ("9999-12-31", "SELECT dt FROM " DB ".types WHERE id = 2");
    SQLEQ("0.0000000001", "SELECT `dec` FROM " DB ".types WHERE id = 2");
    SQLEQ("[]", "SELECT j FROM " DB ".types WHERE id = 2");
    SQLEQ("", "SELECT `by` FROM " DB ".types WHERE id = 2");
    SQLEQ("0", "SELECT `by` IS NULL FROM " DB ".types WHERE id = 2");

    /* row 3: all NULL, and '' is not NULL (row 2) */
    SQLEQ("9", "SELECT (t IS NULL) + (i IS NULL) + (d IS NULL) + (b IS NULL) + (ts IS NULL) + "
          "(dt IS NULL) + (`dec` IS NULL) + (j IS NULL) + (`by` IS NULL) FROM " DB
          ".types WHERE id = 3");
    SQLEQ("0", "SELECT t IS NULL FROM " DB ".types WHERE id = 2");

    /* row 4 */
    SQLEQ("7", "SELECT t FROM " DB ".types WHERE id = 4");
    SQLEQ("42", "SELECT i FROM " DB ".types WHERE id = 4");
    SQLEQ(NULL, "SELECT d FROM " DB ".types WHERE id = 4");
    SQLEQ(NULL, "SELECT b FROM " DB ".types WHERE id = 4");
    SQLEQ("2024-02-29 10:34:56.123456", "SELECT ts FROM " DB ".types WHERE id = 4");
    SQLEQ(NULL, "SELECT dt FROM " DB ".types WHERE id = 4");
    SQLEQ("5.0000000000", "SELECT `dec` FROM " DB ".types WHERE id = 4");
    SQLEQ("\"hi\"", "SELECT j FROM " DB ".types WHERE id = 4");
    SQLEQ("9", "SELECT `by` FROM " DB ".types WHERE id = 4");

    /* row 5 */
    SQLEQ(NULL, "SELECT t FROM " DB ".types WHERE id = 5");
    SQLEQ("3", "SELECT i FROM " DB ".types WHERE id = 5");
    check_double("types", 5, 1.7976931348623157e308);
    SQLEQ("1", "SELECT b FROM " DB ".types WHERE id = 5");
    SQLEQ("0001-01-01 00:00:00.000000", "SELECT ts FROM " DB ".types WHERE id = 5");
    SQLEQ("2022-01-08", "SELECT dt FROM " DB ".types WHERE id = 5");
    SQLEQ(NULL, "SELECT `dec` FROM " DB ".types WHERE id = 5");
    SQLEQ("-12", "SELECT j FROM " DB ".types WHERE id = 5");
    SQLEQ("[1]", "SELECT `by` FROM " DB ".types WHERE id = 5");

    /* row 6, 7 */
    check_double("types", 6, 1.0 / 3.0);
    SQLEQ(NULL, "SELECT i FROM " DB ".types WHERE id = 6");
    SQLEQ(NULL, "SELECT ts FROM " DB ".types WHERE id = 6");
    SQLEQ("1.0000000000", "SELECT `dec` FROM " DB ".types WHERE id = 6");
    SQLEQ(NULL, "SELECT dt FROM " DB ".types WHERE id = 6");
    SQLEQ("1.0000000001", "SELECT `dec` FROM " DB ".types WHERE id = 7");
    SQLEQ(NULL, "SELECT i FROM " DB ".types WHERE id = 7");
    SQLEQ("0", "SELECT d FROM " DB ".types WHERE id = 7");
}

/* Doubles to the last bit, many of them. */
static void test_doubles(tconn *rw)
{
    static const zx_dcol cols[] = {{"id", ZX_DT_INT64, 0, 0}, {"d", ZX_DT_DOUBLE, 0, 0}};
    enum { N = 2000 };
    double want[N];
    uint64_t x = 0x9E3779B97F4A7C15ull;
    zx_rowset rs;
    rs_columns(&rs, cols, 2);
    for (int i = 0; i < N; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double d;
        memcpy(&d, &x, sizeof(d));
        if (!isfinite(d))
            d = (double)(int64_t)x / 3.0;
        if (i < 6) {
            static const double edge[] = {0.1, 0.2 + 0.1, 1e23, 2.2250738585072014e-308,
                                          2.2250738585072009e-308, 9007199254740993.0};
            d = edge[i];
        }
        want[i] = d;
        zx_rowset_begin_row(&rs);
        add_int(&rs, 0, i);
        add_real(&rs, 1, d);
        zx_rowset_end_row(&rs);
    }
    char err[512];
    CHECK(run(&rw->c, DB ".dbl", ZX_MODE_REPLACE, cols, 2, id_key, 1, &rs, NULL, NULL, err,
              sizeof(err)) == 0);
    zx_rowset_free(&rs);
    /* read back as text (MariaDB prints a double's shortest exact form)
     * and compared bit for bit */
    CHECK(mysql_query(admin, "SELECT id, d FROM " DB ".dbl ORDER BY id") == 0);
    MYSQL_RES *res = mysql_store_result(admin);
    MYSQL_ROW r;
    int seen = 0, bad = 0;
    while (res && (r = mysql_fetch_row(res)) != NULL) {
        int id = atoi(r[0]);
        double got = strtod(r[1], NULL);
        if (id < 0 || id >= N || memcmp(&got, &want[id], sizeof(got)) != 0) {
            if (bad++ < 5)
                printf("double %d: got %s, want %.17g\n", id, r[1], want[id]);
        }
        seen++;
    }
    if (res)
        mysql_free_result(res);
    CHECK(seen == N);
    CHECK(bad == 0);
}

/* Decimal literals in every form common/dcell.h accepts, rounded half away
 * from zero to the scale and sent as plain (exact) literals; a scale past
 * MySQL's 30. */
static void test_decimals(tconn *rw)
{
    static const zx_dcol cols[] = {{"id", ZX_DT_INT64, 0, 0}, {"d", ZX_DT_DECIMAL, 38, 10},
                                   {"s", ZX_DT_DECIMAL, 38, 35}, {"z", ZX_DT_DECIMAL, 5, 0}};
    static const struct { const char *in; const char *want; } cases[] = {
        {"1.5e3", "1500.0000000000"},
        {"-0.00000000005", "-0.0000000001"},
        {"0.00000000004", "0.0000000000"},
        {"-0.00000000004", "0.0000000000"},
        {"+3", "3.0000000000"},
        {"9.99999999995", "10.0000000000"},
        {".5", "0.5000000000"},
        {"5.", "5.0000000000"},
        {"0e99", "0.0000000000"},
        {"000123.4500", "123.4500000000"},
        {"12345678901234567890123456789e-1", "1234567890123456789012345678.9000000000"},
        {"1E-10", "0.0000000001"},
        {"9999999999999999999999999999.99999999999", NULL}, /* rounds past 28 digits */
        {"1e28", NULL},
        {"abc", NULL},
        {"1.5e", NULL},
    };
    size_t nc = sizeof(cases) / sizeof(cases[0]);
    zx_rowset rs;
    rs_columns(&rs, cols, 4);
    for (size_t i = 0; i < nc; i++) {
        zx_rowset_begin_row(&rs);
        add_int(&rs, 0, (int64_t)i);
        add_text(&rs, 1, cases[i].in);
        zx_rowset_end_row(&rs);
    }
    zx_rowset_begin_row(&rs); /* more digits than MySQL's scale keeps */
    add_int(&rs, 0, 100);
    add_text(&rs, 2, "0.12345678901234567890123456789012345");
    add_real(&rs, 1, 0.1);
    add_int(&rs, 3, 99999);
    zx_rowset_end_row(&rs);
    zx_rowset_begin_row(&rs);
    add_int(&rs, 0, 101);
    add_real(&rs, 3, 2.5);     /* rounds to 3 */
    add_real(&rs, 1, 1e300);   /* misfit */
    zx_rowset_end_row(&rs);
    char err[512];
    zx_dest_stats stats;
    int rc = run(&rw->c, DB ".decs", ZX_MODE_REPLACE, cols, 4, id_key, 1, &rs, NULL, &stats, err,
                 sizeof(err));
    if (rc)
        printf("decimals: %s\n", err);
    CHECK(rc == 0);
    CHECK(stats.nulled == 5);
    zx_rowset_free(&rs);
    for (size_t i = 0; i < nc; i++) {
        char *got = SQL1("SELECT d FROM " DB ".decs WHERE id = %zu", i);
        if (cases[i].want ? (!got || strcmp(got, cases[i].want)) : got != NULL) {
            printf("%s:%d: decimal \"%s\" stored as %s, want %s\n", __FILE__, __LINE__,
                   cases[i].in, got ? got : "NULL", cases[i].want ? cases[i].want : "NULL");
            failures++;
        }
        free(got);
    }
    SQLEQ("decimal(33,30)", "SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE "
          "TABLE_SCHEMA = '" DB "' AND TABLE_NAME = 'decs' AND COLUMN_NAME = 's'");
    SQLEQ("0.123456789012345678901234567890", "SELECT s FROM " DB ".decs WHERE id = 100");
    SQLEQ("0.1000000000", "SELECT d FROM " DB ".decs WHERE id = 100");
    SQLEQ("99999", "SELECT z FROM " DB ".decs WHERE id = 100");
    SQLEQ("3", "SELECT z FROM " DB ".decs WHERE id = 101");
    SQLEQ(NULL, "SELECT d FROM " DB ".decs WHERE id = 101");
}

/* Key text columns: VARCHAR, binary, no pad; composite keys share the 3072
 * bytes. */
static void test_text_keys(tconn *rw)
{
    static const zx_dcol cols[] = {{"k", ZX_DT_TEXT, 0, 0}, {"v", ZX_DT_INT64, 0, 0}};
    static const char *const key[] = {"k"};
    zx_rowset rs;
    rs_columns(&rs, cols, 2);
    static const char *const ks[] = {"a", "A", "a ", "\xc3\xa9", "e\xcc\x81", ""};
    for (int i = 0; i < 6; i++) {
        zx_rowset_begin_row(&rs);
        add_text(&rs, 0, ks[i]);
        add_int(&rs, 1, i);
        zx_rowset_end_row(&rs);
    }
    /* 768 four-byte characters: the longest key */
    char big[768 * 4 + 1];
    for (int i = 0; i < 768; i++)
        memcpy(big + 4 * i, "\xf0\x9f\x8c\x8d", 4);
    big[768 * 4] = '\0';
    zx_rowset_begin_row(&rs);
    add_text(&rs, 0, big);
    add_int(&rs, 1, 99);
    zx_rowset_end_row(&rs);
    char err[512];
    int rc = run(&rw->c, DB ".tkey", ZX_MODE_UPSERT, cols, 2, key, 1, &rs, NULL, NULL, err,
                 sizeof(err));
    if (rc)
        printf("tkey: %s\n", err);
    CHECK(rc == 0);
    zx_rowset_free(&rs);
    CHECK(count_rows("tkey") == 7);
    SQLEQ("varchar(768)", "SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE "
          "TABLE_SCHEMA = '" DB "' AND TABLE_NAME = 'tkey' AND COLUMN_NAME = 'k'");
    SQLEQ("utf8mb4_nopad_bin", "SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE "
          "TABLE_SCHEMA = '" DB "' AND TABLE_NAME = 'tkey' AND COLUMN_NAME = 'k'");
    SQLEQ("2", "SELECT v FROM " DB ".tkey WHERE k = 'a '");
    SQLEQ("99", "SELECT v FROM " DB ".tkey WHERE CHAR_LENGTH(k) = 768");

    /* a key longer than the column: the server's error, naming the table */
    big[768 * 4] = '\0';
    zx_rowset_init(&rs);
    rs_columns(&rs, cols, 2);
    char huge[800];
    memset(huge, 'x', 799);
    huge[799] = '\0';
    zx_rowset_begin_row(&rs);
    add_text(&rs, 0, huge);
    add_int(&rs, 1, 1);
    zx_rowset_end_row(&rs);
    rc = run(&rw->c, DB ".tkey", ZX_MODE_UPSERT, cols, 2, key, 1, &rs, NULL, NULL, err,
             sizeof(err));
    CHECK(rc == -1);
    CHECK(strstr(err, "mysql shop_mysql table " DB ".tkey: key column k of a row is a value its "
                      "column cannot hold") != NULL);
    zx_rowset_free(&rs);

    /* a NULL key value */
    rs_columns(&rs, cols, 2);
    zx_rowset_begin_row(&rs);
    add_int(&rs, 1, 1);
    zx_rowset_end_row(&rs);
    rc = run(&rw->c, DB ".tkey", ZX_MODE_UPSERT, cols, 2, key, 1, &rs, NULL, NULL, err,
             sizeof(err));
    CHECK(rc == -1 && strstr(err, "key column k of a row is NULL"));
    zx_rowset_free(&rs);
    CHECK(count_rows("tkey") == 7);

    /* composite: two text keys and a bytes key share the bytes */
    static const zx_dcol c3[] = {{"a", ZX_DT_TEXT, 0, 0}, {"n", ZX_DT_INT64, 0, 0},
                                 {"b", ZX_DT_TEXT, 0, 0}, {"c", ZX_DT_BYTES, 0, 0}};
    static const char *const k3[] = {"a", "n", "b", "c"};
    rs_columns(&rs, c3, 4);
    zx_rowset_begin_row(&rs);
    add_text(&rs, 0, "x");
    add_int(&rs, 1, 1);
    add_text(&rs, 2, "y");
    add_str(&rs, 3, ZX_T_TEXT, "\0z", 2);
    zx_rowset_end_row(&rs);
    rc = run(&rw->c, DB ".tkey3", ZX_MODE_MIRROR, c3, 4, k3, 4, &rs, NULL, NULL, err,
             sizeof(err));
    if (rc)
        printf("tkey3: %s\n", err);
    CHECK(rc == 0);
    zx_rowset_free(&rs);
    /* (3072 - 8) / 3 = 1021 bytes each: 255 characters, 1021 bytes */
    SQLEQ("varchar(255)", "SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE "
          "TABLE_SCHEMA = '" DB "' AND TABLE_NAME = 'tkey3' AND COLUMN_NAME = 'a'");
    SQLEQ("varbinary(1021)", "SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE "
          "TABLE_SCHEMA = '" DB "' AND TABLE_NAME = 'tkey3' AND COLUMN_NAME = 'c'");
    SQLEQ("4", "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = '" DB
          "' AND TABLE_NAME = 'tkey3' AND INDEX_NAME = 'PRIMARY'");
    SQLEQ("007A", "SELECT HEX(c) FROM " DB ".tkey3");
}

static const zx_dcol kv_cols[] = {{"id", ZX_DT_INT64, 0, 0}, {"v", ZX_DT_TEXT, 0, 0}};

static void kv_rows(zx_rowset *rs, int from, int to, const char *tag)
{
    rs_columns(rs, kv_cols, 2);
    for (int i = from; i <= to; i++) {
        char v[64];
        snprintf(v, sizeof(v), "%s%d", tag, i);
        zx_rowset_begin_row(rs);
        add_int(rs, 0, i);
        add_text(rs, 1, v);
        zx_rowset_end_row(rs);
    }
}

/* replace: another connection sees the old rows until commit */
static void test_replace(tconn *rw)
{
    zx_rowset rs;
    char err[512];
    kv_rows(&rs, 1, 5, "old");
    CHECK(run(&rw->c, DB ".rep", ZX_MODE_REPLACE, kv_cols, 2, id_key, 1, &rs, NULL, NULL, err,
              sizeof(err)) == 0);
    zx_rowset_free(&rs);
    CHECK(count_rows("rep") == 5);

    zx_dest_args a = args_for(&rw->c, DB ".rep");
    zx_dest_run r = {.run_id = 1000, .mode = ZX_MODE_REPLACE, .cols = kv_cols, .ncols = 2,
                     .key_cols = id_key, .nkey_cols = 1};
    zx_dest_stats stats = {0};
    void *st = NULL;
    CHECK(D->open(&a, &st, err, sizeof(err)) == 0);
    CHECK(D->begin(st, &r, &stats, err, sizeof(err)) == 0);
    kv_rows(&rs, 10, 12, "new");
    CHECK(D->write(st, &rs, err, sizeof(err)) == 0);
    zx_rowset_free(&rs);
    /* the run's statements are sent by now? force it with an empty delete
     * batch (delete_keys sends the pending INSERT first) */
    zx_rowset none;
    zx_rowset_init(&none);
    zx_rowset_column(&none, "id", 2, ZX_T_NULL);
    CHECK(D->delete_keys(st, &none, err, sizeof(err)) == 0);
    zx_rowset_free(&none);
    MYSQL *other = connect_as(base.user, base.password, "mysql");
    CHECK(other != NULL);
    if (other) {
        char *c = sql1_on(other, NULL, "SELECT GROUP_CONCAT(v ORDER BY id) FROM " DB ".rep");
        CHECK(c && !strcmp(c, "old1,old2,old3,old4,old5"));
        free(c);
    }
    CHECK(D->commit(st, err, sizeof(err)) == 0);
    D->close(st);
    CHECK(stats.rows_written == 3);
    if (other) {
        char *c = sql1_on(other, NULL, "SELECT GROUP_CONCAT(v ORDER BY id) FROM " DB ".rep");
        CHECK(c && !strcmp(c, "new10,new11,new12"));
        free(c);
        mysql_close(other);
    }
}

static void test_append(tconn *rw)
{
    static const zx_dcol cols[] = {{"n", ZX_DT_INT64, 0, 0}, {"v", ZX_DT_TEXT, 0, 0}};
    zx_rowset rs;
    char err[512];
    rs_columns(&rs, cols, 2);
    for (int i = 0; i < 3; i++) {
        zx_rowset_begin_row(&rs);
        add_int(&rs, 0, 1);
        add_text(&rs, 1, "same");
        zx_rowset_end_row(&rs);
    }
    CHECK(run(&rw->c, DB ".app", ZX_MODE_APPEND, cols, 2, NULL, 0, &rs, NULL, NULL, err,
              sizeof(err)) == 0);
    CHECK(run(&rw->c, DB ".app", ZX_MODE_APPEND, cols, 2, NULL, 0, &rs, NULL, NULL, err,
              sizeof(err)) == 0);
    zx_rowset_free(&rs);
    CHECK(count_rows("app") == 6);
    SQLEQ("0", "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = '" DB
          "' AND TABLE_NAME = 'app'");
}

static void test_upsert(tconn *rw)
{
    zx_rowset rs;
    char err[512];
    zx_dest_stats stats;
    kv_rows(&rs, 1, 3, "a");
    CHECK(run(&rw->c, DB ".ups", ZX_MODE_UPSERT, kv_cols, 2, id_key, 1, &rs, NULL, NULL, err,
              sizeof(err)) == 0);
    zx_rowset_free(&rs);
    rs_columns(&rs, kv_cols, 2);
    zx_rowset_begin_row(&rs);
    add_int(&rs, 0, 2);
    add_text(&rs, 1, "changed");
    zx_rowset_end_row(&rs);
    zx_rowset_begin_row(&rs);
    add_int(&rs, 0, 4);
    add_text(&rs, 1, "new");
    zx_rowset_end_row(&rs);
    zx_rowset_begin_row(&rs); /* a value set to NULL */
    add_int(&rs, 0, 3);
    zx_rowset_end_row(&rs);
    CHECK(run(&rw->c, DB ".ups", ZX_MODE_UPSERT, kv_cols, 2, id_key, 1, &rs, NULL, &stats,
              err, sizeof(err)) == 0);
    zx_rowset_free(&rs);
    CHECK(stats.rows_written == 3);
    SQLEQ("1:a1,2:changed,3:-,4:new",
          "SELECT GROUP_CONCAT(id, ':', IFNULL(v, '-') ORDER BY id) FROM " DB ".ups");

    /* only key columns: a duplicate is no error */
    static const zx_dcol konly[] = {{"id", ZX_DT_INT64, 0, 0}};
    rs_columns(&rs, konly, 1);
    zx_rowset_begin_row(&rs);
    add_int(&rs, 0, 1);
    zx_rowset_end_row(&rs);
    CHECK(run(&rw->c, DB ".konly", ZX_MODE_UPSERT, konly, 1, id_key, 1, &rs, NULL, NULL, err,
              sizeof(err)) == 0);
    CHECK(run(&rw->c, DB ".konly", ZX_MODE_UPSERT, konly, 1, id_key, 1, &rs, NULL, NULL, err,
              sizeof(err)) == 0);
    zx_rowset_free(&rs);
    CHECK(count_rows("konly") == 1);
}

static void test_mirror(tconn *rw)
{
    static const zx_dcol cols[] = {{"a", ZX_DT_TEXT, 0, 0}, {"b", ZX_DT_INT64, 0, 0},
                                   {"v", ZX_DT_DOUBLE, 0, 0}};
    static const char *const key[] = {"a", "b"};
    static const zx_dcol kcols[] = {{"a", ZX_DT_TEXT, 0, 0}, {"b", ZX_DT_INT64, 0, 0}};
    zx_rowset rs, dels;
    char err[512];
    zx_dest_stats stats;
    rs_columns(&rs, cols, 3);
    static const char *const as[] = {"x", "x", "y", "y", "it's"};
    for (int i = 0; i < 5; i++) {
        zx_rowset_begin_row(&rs);
        add_text(&rs, 0, as[i]);
        add_int(&rs, 1, i % 2 + 1);
        add_real(&rs, 2, i * 1.5);
        zx_rowset_end_row(&rs);
    }
    CHECK(run(&rw->c, DB ".mir", ZX_MODE_MIRROR, cols, 3, key, 2, &rs, NULL, NULL, err,
              sizeof(err)) == 0);
    zx_rowset_free(&rs);
    CHECK(count_rows("mir") == 5);

    /* second run: one row changed, (x,1), (it's,1) and three that are not
     * there (one with a NULL part) deleted */
    rs_columns(&rs, cols, 3);
    zx_rowset_begin_row(&rs);
    add_text(&rs, 0, "y");
    add_int(&rs, 1, 2);
    add_real(&rs, 2, 99.5);
    zx_rowset_end_row(&rs);
    rs_columns(&dels, kcols, 2);
    static const struct { const char *a; int b; } dk[] = {
        {"x", 1}, {"it's", 1}, {"nope", 1}, {"x", 7}, {NULL, 2},
    };
    for (size_t i = 0; i < sizeof(dk) / sizeof(dk[0]); i++) {
        zx_rowset_begin_row(&dels);
        if (dk[i].a)
            add_text(&dels, 0, dk[i].a);
        add_int(&dels, 1, dk[i].b);
        zx_rowset_end_row(&dels);
    }
    int rc = run(&rw->c, DB ".mir", ZX_MODE_MIRROR, cols, 3, key, 2, &rs, &dels, &stats, err,
                 sizeof(err));
    if (rc)
        printf("mirror: %s\n", err);
    CHECK(rc == 0);
    zx_rowset_free(&rs);
    zx_rowset_free(&dels);
    CHECK(stats.rows_deleted == 2);
    CHECK(stats.rows_written == 1);
    SQLEQ("x/2/1.5,y/1/3,y/2/99.5",
          "SELECT GROUP_CONCAT(a, '/', b, '/', v ORDER BY a, b) FROM " DB ".mir");

    /* single-column key, many deletes over several statements */
    zx_rowset big;
    kv_rows(&big, 1, 30000, "v");
    CHECK(run(&rw->c, DB ".mir1", ZX_MODE_MIRROR, kv_cols, 2, id_key, 1, &big, NULL, NULL,
              err, sizeof(err)) == 0);
    zx_rowset_free(&big);
    static const zx_dcol idc[] = {{"id", ZX_DT_INT64, 0, 0}};
    rs_columns(&dels, idc, 1);
    for (int i = 1; i <= 30000; i++) {
        if (i % 3 == 0)
            continue;
        zx_rowset_begin_row(&dels);
        add_int(&dels, 0, i);
        zx_rowset_end_row(&dels);
    }
    rc = run(&rw->c, DB ".mir1", ZX_MODE_MIRROR, kv_cols, 2, id_key, 1, NULL, &dels, &stats,
             err, sizeof(err));
    CHECK(rc == 0);
    zx_rowset_free(&dels);
    CHECK(stats.rows_deleted == 20000);
    CHECK(count_rows("mir1") == 10000);
}

static void test_abort(tconn *rw)
{
    zx_rowset rs;
    char err[512];
    kv_rows(&rs, 1, 3, "keep");
    CHECK(run(&rw->c, DB ".abt", ZX_MODE_UPSERT, kv_cols, 2, id_key, 1, &rs, NULL, NULL, err,
              sizeof(err)) == 0);
    zx_rowset_free(&rs);

    static const zx_dest_run modes[] = {
        {.run_id = 1, .mode = ZX_MODE_UPSERT, .cols = kv_cols, .ncols = 2, .key_cols = id_key,
         .nkey_cols = 1},
        {.run_id = 2, .mode = ZX_MODE_REPLACE, .cols = kv_cols, .ncols = 2, .key_cols = id_key,
         .nkey_cols = 1},
    };
    for (size_t m = 0; m < 2; m++) {
        zx_dest_args a = args_for(&rw->c, DB ".abt");
        zx_dest_stats stats = {0};
        void *st = NULL;
        CHECK(D->open(&a, &st, err, sizeof(err)) == 0);
        CHECK(D->begin(st, &modes[m], &stats, err, sizeof(err)) == 0);
        kv_rows(&rs, 2, 20000, "gone");
        CHECK(D->write(st, &rs, err, sizeof(err)) == 0);
        zx_rowset_free(&rs);
        D->abort(st);
        D->abort(st); /* twice: harmless */
        D->close(st);
        SQLEQ("1:keep1,2:keep2,3:keep3",
              "SELECT GROUP_CONCAT(id, ':', v ORDER BY id) FROM " DB ".abt");
    }

    /* abort after a failed begin (no such database) */
    zx_dest_args a = args_for(&rw->c, "zxmy_nosuchdb.t");
    void *st = NULL;
    zx_dest_stats stats = {0};
    CHECK(D->open(&a, &st, err, sizeof(err)) == 0);
    CHECK(D->begin(st, &modes[0], &stats, err, sizeof(err)) == -1);
    CHECK(strstr(err, "mysql shop_mysql table zxmy_nosuchdb.t: creating the table: ") != NULL);
    CHECK(strstr(err, "(1049)") != NULL);
    D->abort(st);
    D->close(st);
    D->close(NULL);
}

/* An existing table: missing columns added; an unfit one refused. */
static void test_existing(tconn *rw)
{
    char err[512];
    zx_rowset rs;
    SQL("CREATE TABLE " DB ".ex (ID BIGINT PRIMARY KEY, other INT DEFAULT 5) ENGINE=InnoDB");
    SQL("INSERT INTO " DB ".ex (ID) VALUES (1)");
    kv_rows(&rs, 1, 2, "x");
    int rc = run(&rw->c, DB ".ex", ZX_MODE_UPSERT, kv_cols, 2, id_key, 1, &rs, NULL, NULL, err,
                 sizeof(err));
    if (rc)
        printf("existing: %s\n", err);
    CHECK(rc == 0);
    SQLEQ("1:x1:5,2:x2:5", "SELECT GROUP_CONCAT(id, ':', v, ':', other ORDER BY id) FROM " DB ".ex");
    SQLEQ("longtext", "SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '"
          DB "' AND TABLE_NAME = 'ex' AND COLUMN_NAME = 'v'");

    /* no transactions */
    SQL("CREATE TABLE " DB ".myi (id BIGINT PRIMARY KEY, v LONGTEXT) ENGINE=MyISAM");
    rc = run(&rw->c, DB ".myi", ZX_MODE_UPSERT, kv_cols, 2, id_key, 1, &rs, NULL, NULL, err,
             sizeof(err));
    CHECK(rc == -1 && strstr(err, "mysql shop_mysql table " DB ".myi: its engine MyISAM has no "
                                  "transactions"));
    /* no key for upsert; fine for append */
    SQL("CREATE TABLE " DB ".nokey (id BIGINT, v LONGTEXT) ENGINE=InnoDB");
    rc = run(&rw->c, DB ".nokey", ZX_MODE_UPSERT, kv_cols, 2, id_key, 1, &rs, NULL, NULL, err,
             sizeof(err));
    CHECK(rc == -1 && strstr(err, "no primary key or unique index on exactly the key columns"));
    CHECK(run(&rw->c, DB ".nokey", ZX_MODE_APPEND, kv_cols, 2, NULL, 0, &rs, NULL, NULL, err,
              sizeof(err)) == 0);
    /* a view */
    SQL("CREATE VIEW " DB ".vw AS SELECT 1 AS id, 'a' AS v");
    rc = run(&rw->c, DB ".vw", ZX_MODE_APPEND, kv_cols, 2, NULL, 0, &rs, NULL, NULL, err,
             sizeof(err));
    CHECK(rc == -1);
    zx_rowset_free(&rs);
    /* odd names: backticks, dots after the first, a table in the DSN's db */
    static const zx_dcol odd[] = {{"we`ird col", ZX_DT_INT64, 0, 0}};
    static const char *const oddk[] = {"we`ird col"};
    rs_columns(&rs, odd, 1);
    zx_rowset_begin_row(&rs);
    add_int(&rs, 0, 1);
    zx_rowset_end_row(&rs);
    rc = run(&rw->c, "ta`b.le", ZX_MODE_MIRROR, odd, 1, oddk, 1, &rs, NULL, NULL, err,
             sizeof(err));
    CHECK(rc == -1); /* database ta`b does not exist */
    rc = run(&rw->c, "odd`tab", ZX_MODE_MIRROR, odd, 1, oddk, 1, &rs, NULL, NULL, err,
             sizeof(err));
    if (rc)
        printf("odd: %s\n", err);
    CHECK(rc == 0);
    zx_rowset_free(&rs);
    SQLEQ("1", "SELECT `we``ird col` FROM " DB ".`odd``tab`");
}

static void test_refusals(tconn *rw)
{
    char err[512];
    void *st = (void *)1;
    /* read_only */
    tconn ro;
    tconn_init(&ro, "shop_mysql", dsn_rw, 1);
    zx_dest_args a = args_for(&ro.c, DB ".t");
    CHECK(D->open(&a, &st, err, sizeof(err)) == -1);
    CHECK(st == NULL);
    CHECK(!strcmp(err, "mysql connection shop_mysql is read_only: zx never writes to it"));
    tconn_free(&ro);

    /* a bad DSN: its shown form and why */
    tconn bad;
    tconn_init(&bad, "bad", "mysql://zx:zx-secret@127.0.0.1:99999/x", 0);
    a = args_for(&bad.c, "t");
    CHECK(D->open(&a, &st, err, sizeof(err)) == -1);
    CHECK(!strcmp(err, "mysql connection bad: dsn mysql://zx:***@127.0.0.1:99999/x: the port "
                       "is not a number between 1 and 65535"));
    tconn_free(&bad);

    /* nothing listens: a connect error with the DSN shown */
    tconn down;
    tconn_init(&down, "down", "mysql://zx:zx-secret@127.0.0.1:1/x", 0);
    a = args_for(&down.c, "t");
    CHECK(D->open(&a, &st, err, sizeof(err)) == -1);
    CHECK(strstr(err, "mysql down table x.t: connecting to mysql://zx:***@127.0.0.1:1/x: ") != NULL);
    no_secret(err);
    tconn_free(&down);

    /* a wrong password */
    char wrong[600];
    snprintf(wrong, sizeof(wrong), "mysql://zx:not-it@%s:%u/%s", base.host, base.port, DB);
    tconn_init(&down, "wrongpw", wrong, 0);
    a = args_for(&down.c, "t");
    CHECK(D->open(&a, &st, err, sizeof(err)) == -1);
    CHECK(strstr(err, "Access denied for user 'zx'") && strstr(err, "(1045)") &&
          !strstr(err, "not-it"));
    tconn_free(&down);

    /* bad table names */
    a = args_for(&rw->c, "");
    CHECK(D->open(&a, &st, err, sizeof(err)) == -1);
    a = args_for(&rw->c, ".t");
    CHECK(D->open(&a, &st, err, sizeof(err)) == -1 && strstr(err, "not db.table"));
    a = args_for(&rw->c, "x.");
    CHECK(D->open(&a, &st, err, sizeof(err)) == -1);

    /* zx_ro may read, not write */
    tconn rdonly;
    tconn_init(&rdonly, "shop_ro", dsn_ro, 0);
    zx_rowset rs;
    kv_rows(&rs, 1, 2, "x");
    int rc = run(&rdonly.c, DB ".ups", ZX_MODE_UPSERT, kv_cols, 2, id_key, 1, &rs, NULL, NULL,
                 err, sizeof(err));
    CHECK(rc == -1);
    printf("zx_ro: %s\n", err);
    CHECK(strstr(err, "mysql shop_ro table " DB ".ups: creating the table: ") != NULL);
    CHECK(strstr(err, "denied to user 'zx_ro'") && strstr(err, "(1142)"));
    /* the table made by zx: CREATE ... IF NOT EXISTS still needs CREATE;
     * a user with CREATE but no INSERT fails at the insert */
    SQL("CREATE USER IF NOT EXISTS 'zxmy_noins'@'127.0.0.1' IDENTIFIED BY 'zxmy-pw'");
    SQL("GRANT SELECT, CREATE, ALTER ON " DB ".* TO 'zxmy_noins'@'127.0.0.1'");
    char noins[600];
    snprintf(noins, sizeof(noins), "mysql://zxmy_noins:zxmy-pw@%s:%u/%s", base.host, base.port,
             DB);
    tconn ni;
    tconn_init(&ni, "shop_noins", noins, 0);
    rc = run(&ni.c, "ups", ZX_MODE_UPSERT, kv_cols, 2, id_key, 1, &rs, NULL, NULL, err,
             sizeof(err));
    CHECK(rc == -1);
    printf("no INSERT: %s\n", err);
    /* (MariaDB: "INSERT, UPDATE command denied": the upsert needs both) */
    CHECK(strstr(err, "mysql shop_noins table " DB ".ups: inserting rows: INSERT") &&
          strstr(err, "command denied to user 'zxmy_noins'") && strstr(err, "(1142)") &&
          !strstr(err, "zxmy-pw"));
    SQL("DROP USER 'zxmy_noins'@'127.0.0.1'");
    tconn_free(&ni);
    zx_rowset_free(&rs);
    tconn_free(&rdonly);
}

/* The dest's connection killed from another one, mid-run. */
static unsigned long long dest_conn_id(void)
{
    char *s = SQL1("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '" DB
                   "' AND USER = 'zx' AND ID <> CONNECTION_ID() ORDER BY ID DESC LIMIT 1");
    unsigned long long id = s ? strtoull(s, NULL, 10) : 0;
    free(s);
    return id;
}

static void test_killed(tconn *rw)
{
    char err[512];
    zx_rowset rs;
    zx_dest_run r = {.run_id = 7, .mode = ZX_MODE_UPSERT, .cols = kv_cols, .ncols = 2,
                     .key_cols = id_key, .nkey_cols = 1};
    for (int phase = 0; phase < 3; phase++) {
        zx_dest_args a = args_for(&rw->c, DB ".kil");
        zx_dest_stats stats = {0};
        void *st = NULL;
        CHECK(D->open(&a, &st, err, sizeof(err)) == 0);
        CHECK(D->begin(st, &r, &stats, err, sizeof(err)) == 0);
        kv_rows(&rs, 1, 100, "k");
        CHECK(D->write(st, &rs, err, sizeof(err)) == 0);
        zx_rowset_free(&rs);
        unsigned long long id = dest_conn_id();
        CHECK(id != 0);
        SQL("KILL %llu", id);
        int rc;
        if (phase == 0) {
            /* the buffered rows go at commit: it fails */
            rc = D->commit(st, err, sizeof(err));
        } else if (phase == 1) {
            /* enough rows to send a statement */
            kv_rows(&rs, 101, 200000, "k");
            rc = D->write(st, &rs, err, sizeof(err));
            zx_rowset_free(&rs);
            if (rc == 0) /* (sent before the kill landed: commit fails) */
                rc = D->commit(st, err, sizeof(err));
        } else {
            zx_rowset none;
            rs_columns(&none, kv_cols, 1);
            rc = D->delete_keys(st, &none, err, sizeof(err));
            zx_rowset_free(&none);
        }
        CHECK(rc == -1);
        printf("killed (%d): %s\n", phase, err);
        CHECK(strstr(err, "mysql shop_mysql table " DB ".kil: ") != NULL);
        CHECK(strstr(err, "(2006)") || strstr(err, "(2013)") || strstr(err, "(1927)"));
        /* and after that, everything fails cleanly */
        kv_rows(&rs, 1, 2, "k");
        CHECK(D->write(st, &rs, err, sizeof(err)) == 0 || strstr(err, "lost"));
        zx_rowset_free(&rs);
        CHECK(D->commit(st, err, sizeof(err)) == -1);
        D->abort(st);
        D->close(st);
    }
    CHECK(count_rows("kil") == 0);
}

/* 200,000 rows of 5 columns upserted in one run: new rows, then all of
 * them changed. */
static void bench(tconn *rw)
{
    static const zx_dcol cols[] = {{"id", ZX_DT_INT64, 0, 0}, {"name", ZX_DT_TEXT, 0, 0},
                                   {"amount", ZX_DT_DECIMAL, 12, 2},
                                   {"at", ZX_DT_TIMESTAMP, 0, 0}, {"ok", ZX_DT_BOOL, 0, 0}};
    enum { ROWS = 200000, BATCH = 10000 };
    char err[512];
    for (int pass = 0; pass < 2; pass++) {
        zx_dest_args a = args_for(&rw->c, DB ".bench");
        zx_dest_run r = {.run_id = 99, .mode = ZX_MODE_UPSERT, .cols = cols, .ncols = 5,
                         .key_cols = id_key, .nkey_cols = 1, .rows_expected = ROWS};
        zx_dest_stats stats = {0};
        void *st = NULL;
        /* the rowsets first: only the destination is timed */
        zx_rowset *rs = calloc(ROWS / BATCH, sizeof(*rs));
        for (int b = 0; b < ROWS / BATCH; b++) {
            rs_columns(&rs[b], cols, 5);
            for (int i = b * BATCH; i < (b + 1) * BATCH; i++) {
                char name[64], amount[32];
                snprintf(name, sizeof(name), "customer %d %s", i, pass ? "changed" : "new");
                snprintf(amount, sizeof(amount), "%d.%02d", i * 7 % 100000, i % 100);
                zx_rowset_begin_row(&rs[b]);
                add_int(&rs[b], 0, i);
                add_text(&rs[b], 1, name);
                add_text(&rs[b], 2, amount);
                add_ts(&rs[b], 3, 1700000000000000LL + (int64_t)i * 1000003);
                add_bool(&rs[b], 4, (i + pass) % 2);
                zx_rowset_end_row(&rs[b]);
            }
        }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int rc = D->open(&a, &st, err, sizeof(err));
        if (rc == 0)
            rc = D->begin(st, &r, &stats, err, sizeof(err));
        for (int b = 0; rc == 0 && b < ROWS / BATCH; b++)
            rc = D->write(st, &rs[b], err, sizeof(err));
        if (rc == 0)
            rc = D->commit(st, err, sizeof(err));
        if (rc)
            printf("bench: %s\n", err);
        D->close(st);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        CHECK(rc == 0);
        CHECK(stats.rows_written == ROWS);
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        printf("bench: upsert of %d rows x 5 columns (%s rows): %.2f s, %.0f rows/s, %.1f MB "
               "of SQL\n", ROWS, pass ? "changed" : "new", s, ROWS / s,
               (double)stats.bytes / 1e6);
        for (int b = 0; b < ROWS / BATCH; b++)
            zx_rowset_free(&rs[b]);
        free(rs);
    }
    CHECK(count_rows("bench") == ROWS);
    SQLEQ("customer 199999 changed", "SELECT name FROM " DB ".bench WHERE id = 199999");
    SQLEQ("99993.99", "SELECT amount FROM " DB ".bench WHERE id = 199999");
}

/* Decimal literals made plain and rounded (no server needed). */
static void test_decimal_text(void)
{
    static const struct { const char *in; int scale; const char *want; } cases[] = {
        {"0", 0, "0"}, {"-0", 2, "0"}, {"+0.000", 3, "0"}, {"-0.004", 2, "0"},
        {"-0.005", 2, "-0.01"}, {"0.005", 2, "0.01"}, {"0.0049999", 2, "0"},
        {"1.5", 0, "2"}, {"-2.5", 0, "-3"}, {"2.4999", 0, "2"}, {"9.995", 2, "10"},
        {"-999.9999", 3, "-1000"}, {"99.5", 0, "100"}, {".5", 0, "1"}, {"5.", 1, "5"},
        {"007.0700", 4, "7.07"}, {"1e3", 0, "1000"}, {"1.5E+3", 2, "1500"},
        {"12345e-4", 4, "1.2345"}, {"12345e-4", 2, "1.23"}, {"12355e-4", 2, "1.24"},
        {"-1e-30", 30, "-0.000000000000000000000000000001"}, {"1e-31", 30, "0"},
        {"5e-31", 30, "0.000000000000000000000000000001"}, {"0e5", 0, "0"},
        {"123456789012345678901234567890123456789.5", 0,
         "123456789012345678901234567890123456790"},
        {"0.00012e4", 1, "1.2"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        zx_mysql_buf b = {0};
        int ok = zx_mysql_put_decimal(&b, cases[i].in, strlen(cases[i].in), cases[i].scale);
        if (!ok || b.oom || strcmp(b.p, cases[i].want)) {
            printf("%s:%d: decimal %s scale %d gives %s, want %s\n", __FILE__, __LINE__,
                   cases[i].in, cases[i].scale, ok && b.p ? b.p : "(refused)", cases[i].want);
            failures++;
        }
        zx_mysql_buf_free(&b);
    }
    static const char *const bad[] = {"", "-", "+", ".", "e5", "1e", "1e+", "1.2.3", "1x",
                                      "1e5x", " 1", "1e101"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        zx_mysql_buf b = {0};
        CHECK(zx_mysql_put_decimal(&b, bad[i], strlen(bad[i]), 2) == 0);
        CHECK(b.len == 0);
        zx_mysql_buf_free(&b);
    }
    /* identifiers: a backtick doubled */
    zx_mysql_buf b = {0};
    zx_mysql_buf_ident(&b, "a`b``c");
    CHECK(b.p && !strcmp(b.p, "`a``b````c`"));
    zx_mysql_buf_free(&b);
}

int main(void)
{
    test_decimal_text();
    const char *dsn = getenv("ZX_MYSQL_DSN");
    if (!dsn || !*dsn) {
        printf("SKIP: ZX_MYSQL_DSN not set\n");
        return failures ? 1 : 77;
    }
    const char *why = NULL;
    if (zx_mysql_dsn_parse(dsn, &base, &why) < 0) {
        printf("ZX_MYSQL_DSN: %s\n", why);
        return 1;
    }
    admin = connect_as(base.user, base.password, "mysql");
    if (!admin)
        return 1;
    SQL("DROP DATABASE IF EXISTS " DB);
    SQL("CREATE DATABASE " DB);
    snprintf(dsn_rw, sizeof(dsn_rw), "mysql://%s:%s@%s:%u/%s", base.user,
             base.password ? base.password : "", base.host, base.port, DB);
    snprintf(dsn_ro, sizeof(dsn_ro), "mysql://zx_ro:ro-secret@%s:%u/%s", base.host, base.port,
             DB);
    tconn rw;
    tconn_init(&rw, "shop_mysql", dsn_rw, 0);

    test_types(&rw);
    test_doubles(&rw);
    test_decimals(&rw);
    test_text_keys(&rw);
    test_replace(&rw);
    test_append(&rw);
    test_upsert(&rw);
    test_mirror(&rw);
    test_abort(&rw);
    test_existing(&rw);
    test_refusals(&rw);
    test_killed(&rw);
    bench(&rw);

    SQL("DROP DATABASE IF EXISTS " DB);
    tconn_free(&rw);
    mysql_close(admin);
    zx_mysql_dsn_free(&base);
    mysql_library_end();
    if (failures)
        printf("%d check(s) failed\n", failures);
    return failures != 0;
}
