/*
 * test_verify.c — the pure parts of `zxctl verify` (workers/verify/): rows,
 * keys, identifier quoting and array literals (verify_row.c), and the SQLite mirror's
 * comparison (verify_mirror.c) against a table made here the way the CDC
 * writer stores values: a source row's text equal to what is stored is
 * "equal", whatever the type; a changed, NULLed, missing or extra row is
 * found, with the columns that differ.
 */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/timefmt.h"
#include "tests/unit/check.h"
#include "workers/verify/verify_int.h"

static void test_rows(void)
{
    vf_row r, k;
    CHECK(vf_row_init(&r, 3) == 0);
    CHECK(vf_row_set(&r, 0, "42", 2) == 0);
    CHECK(vf_row_set(&r, 1, NULL, 0) == 0);
    CHECK(vf_row_set(&r, 2, "a\0b", 3) == 0);
    CHECK(vf_row_set(&r, 3, "x", 1) == -1); /* out of range */
    CHECK(r.v[1] == NULL && r.len[2] == 3 && memcmp(r.v[2], "a\0b", 3) == 0);
    uint32_t keys[2] = { 2, 0 };
    vf_table t = { .ncols = 3, .nkeys = 2, .keys = keys };
    CHECK(vf_row_key(&t, &r, &k) == 0);
    CHECK(k.n == 2 && k.len[0] == 3 && !strcmp(k.v[1], "42"));
    vf_row o;
    CHECK(vf_row_init(&o, 3) == 0);
    CHECK(!vf_value_eq(&r, &o, 0) && vf_value_eq(&r, &o, 1) && !vf_value_eq(&r, &o, 3));
    CHECK(vf_row_set(&o, 0, "42", 2) == 0 && vf_value_eq(&r, &o, 0));
    CHECK(vf_row_set(&o, 2, "a\0c", 3) == 0 && !vf_value_eq(&r, &o, 2));
    vf_row_free(&r);
    vf_row_free(&k);
    vf_row_free(&o);
    vf_row_free(NULL);
    CHECK(!strcmp(vf_how_name(VF_MISSING), "missing") && !strcmp(vf_how_name(VF_EXTRA), "extra"));
}

static void test_quote(void)
{
    zx_buf b = {0};
    CHECK(vf_put_ident(&b, "we\"ird") == 0 && vf_put(&b, ".") == 0 &&
          vf_put_ident(&b, "Orders") == 0);
    CHECK(!strcmp(b.p, "\"we\"\"ird\".\"Orders\""));
    b.len = 0;
    CHECK(vf_put_ident(&b, "\"") == 0 && !strcmp(b.p, "\"\"\"\""));
    /* array literals of keys: quotes and backslashes escaped, NULL bare */
    vf_row rows[3];
    const char *vals[3] = { "a\"b", "c\\d", NULL };
    for (int i = 0; i < 3; i++) {
        vf_row_init(&rows[i], 1);
        vf_row_set(&rows[i], 0, vals[i], vals[i] ? strlen(vals[i]) : 0);
    }
    b.len = 0;
    CHECK(vf_put_array(&b, rows, 3, 0) == 0 && !strcmp(b.p, "{\"a\\\"b\",\"c\\\\d\",NULL}"));
    b.len = 0;
    CHECK(vf_put_array(&b, rows, 0, 0) == 0 && !strcmp(b.p, "{}"));
    for (int i = 0; i < 3; i++)
        vf_row_free(&rows[i]);
    zx_buf_free(&b);
}

/* Type OIDs (pg_values.h) */
enum { INT8 = 20, TEXT = 25, NUMERIC = 1700, BOOL = 16, TSTZ = 1184, FLOAT8 = 701, JSONB = 3802 };

static void set_row(vf_row *r, const char *const *v, uint32_t n)
{
    vf_row_init(r, n);
    for (uint32_t i = 0; i < n; i++)
        vf_row_set(r, i, v[i], v[i] ? strlen(v[i]) : 0);
}

static void test_sqlite_compare(void)
{
    char path[] = "/tmp/zx-test-verify-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    sqlite3 *db;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    char ts[ZX_TS_BUFSZ];
    zx_ts_format(1796032800000000LL, ts); /* 2026-11-30 10:00:00 UTC */
    char sql[1024];
    snprintf(sql, sizeof(sql),
             "CREATE TABLE m (id INTEGER PRIMARY KEY, n \"NUMERIC TEXT(12,2)\", b BOOLEAN, "
             "at TIMESTAMP, f REAL, j JSON, s TEXT, nn REAL);"
             "INSERT INTO m VALUES (1, '12.50', 1, '%s', 0.1, '{\"a\": [1, 2.5]}', 'x', 'NaN');"
             "INSERT INTO m VALUES (2, NULL, 0, NULL, NULL, '42', NULL, NULL);"
             "INSERT INTO m VALUES (3, '1.00', 1, NULL, 1e300, NULL, 'extra', NULL);", ts);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);

    zx_conf c = {0};
    c.ws_kind = ZX_WS_KIND_SQLITE;
    c.sqlite_path = path;
    char err[512] = "";
    vf_mir *m = vf_mir_open(&c, err, sizeof(err));
    CHECK(m != NULL);
    if (!m)
        return;
    char *cols[] = { "id", "n", "b", "at", "f", "j", "s", "nn", "gone" };
    uint32_t oids[] = { INT8, NUMERIC, BOOL, TSTZ, FLOAT8, JSONB, TEXT, FLOAT8, TEXT };
    uint32_t keys[] = { 0 };
    vf_table t = { .ncols = 9, .nkeys = 1 };
    t.cols = calloc(9, sizeof(char *));
    t.decls = calloc(9, sizeof(char *));
    t.oids = calloc(9, sizeof(uint32_t));
    t.in_mirror = calloc(9, sizeof(int));
    t.keys = calloc(1, sizeof(uint32_t));
    for (int i = 0; i < 9; i++) {
        t.cols[i] = strdup(cols[i]);
        t.oids[i] = oids[i];
    }
    t.keys[0] = keys[0];
    t.schema = strdup("public");
    t.name = strdup("m");
    t.mirror = strdup("m");
    CHECK(vf_mir_table(m, &t, err, sizeof(err)) == 0);
    CHECK(t.in_mirror[7] && !t.in_mirror[8] && !strcmp(t.decls[1], "NUMERIC TEXT(12,2)"));

    vf_row src, key;
    vf_how how;
    int diff[9];
    /* the source's texts of row 1: every type equal as stored */
    const char *r1[] = { "1", "12.50", "t", "2026-11-30 15:30:00+05:30", "0.1",
                         "{\"a\": [1, 2.5]}", "x", "NaN", "ignored" };
    set_row(&src, r1, 9);
    vf_row_key(&t, &src, &key);
    CHECK(vf_mir_compare(m, &t, &src, &key, &how, diff, err, sizeof(err)) == 0);
    CHECK(how == VF_EQUAL);
    /* numeric keeps its scale: 12.5 is not 12.50; a bool and a NULL */
    vf_row_set(&src, 1, "12.5", 4);
    vf_row_set(&src, 2, "f", 1);
    vf_row_set(&src, 6, NULL, 0);
    CHECK(vf_mir_compare(m, &t, &src, &key, &how, diff, err, sizeof(err)) == 0);
    CHECK(how == VF_DIFFER && diff[1] && diff[2] && diff[6] && !diff[0] && !diff[3] && !diff[5]);
    vf_row_free(&src);
    vf_row_free(&key);
    /* row 2: NULLs, and a JSON number stored as a number */
    const char *r2[] = { "2", NULL, "f", NULL, NULL, "42", NULL, NULL, NULL };
    set_row(&src, r2, 9);
    vf_row_key(&t, &src, &key);
    CHECK(vf_mir_compare(m, &t, &src, &key, &how, diff, err, sizeof(err)) == 0);
    CHECK(how == VF_EQUAL);
    vf_row_free(&key);
    vf_row_free(&src);
    /* a row the mirror lacks, and one the source lacks */
    const char *r9[] = { "9", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
    set_row(&src, r9, 9);
    vf_row_key(&t, &src, &key);
    CHECK(vf_mir_compare(m, &t, &src, &key, &how, diff, err, sizeof(err)) == 0);
    CHECK(how == VF_MISSING);
    CHECK(vf_mir_compare(m, &t, NULL, &key, &how, diff, err, sizeof(err)) == 0);
    CHECK(how == VF_EQUAL); /* neither has it */
    vf_row_free(&key);
    vf_row_free(&src);
    const char *k3[] = { "3" };
    set_row(&key, k3, 1);
    CHECK(vf_mir_compare(m, &t, NULL, &key, &how, diff, err, sizeof(err)) == 0);
    CHECK(how == VF_EXTRA);
    vf_row_free(&key);
    /* the mirror's keys, as text */
    int n = 0, rc;
    CHECK(vf_mir_scan(m, &t, err, sizeof(err)) == 0);
    while ((rc = vf_mir_next(m, &key, err, sizeof(err))) == 1) {
        n++;
        CHECK(key.n == 1 && key.v[0] && key.v[0][0] == '0' + n);
        vf_row_free(&key);
    }
    CHECK(rc == 0 && n == 3);
    /* a mirror that is not there */
    free(t.mirror);
    t.mirror = strdup("nope");
    CHECK(vf_mir_table(m, &t, err, sizeof(err)) == -1 && strstr(err, "mirror table nope"));
    vf_table_free(&t);
    vf_mir_close(m);
    unlink(path);
}

/* Range hashing (verify_range.c): which tables may be hashed by ranges,
 * and the SQL of bounds and row hashes. */
static void test_range_sql(void)
{
    char *cols[] = { "id", "Note", "b" };
    uint32_t oids[] = { 20, 25, 1082 };
    char *st[] = { "bigint", "text", "date" };
    char *mt[] = { "bigint", "text", "date" };
    int in[] = { 1, 1, 0 };
    uint32_t keys[] = { 0, 2 };
    vf_table t = { .ncols = 3, .cols = cols, .oids = oids, .stypes = st, .mtypes = mt,
                   .in_mirror = in, .nkeys = 1, .keys = keys };
    CHECK(vf_range_ok(&t));
    zx_buf b = {0};
    CHECK(vf_put_bounds(&b, &t, st, 1, 1) == 0);
    CHECK(!strcmp(b.p, " WHERE (\"id\") > ($1::bigint) AND (\"id\") <= ($2::bigint)"));
    b.len = 0;
    CHECK(vf_put_bounds(&b, &t, st, 0, 1) == 0);
    CHECK(!strcmp(b.p, " WHERE (\"id\") <= ($1::bigint)"));
    b.len = 0;
    b.p[0] = '\0';
    CHECK(vf_put_bounds(&b, &t, st, 0, 0) == 0 && b.len == 0);
    /* the columns the mirror has, in order */
    CHECK(vf_put_rowhash(&b, &t) == 0);
    CHECK(!strcmp(b.p, "('x' || substr(md5(ROW(\"id\", \"Note\")::text), 1, 16))"
                       "::bit(64)::bigint"));
    b.len = 0;
    t.nkeys = 2;
    CHECK(vf_put_keylist(&b, &t, 1) == 0 && !strcmp(b.p, "\"id\" DESC, \"b\" DESC"));
    b.len = 0;
    CHECK(vf_put_bounds(&b, &t, st, 1, 1) == 0);
    CHECK(!strcmp(b.p, " WHERE (\"id\", \"b\") > ($1::bigint, $2::date) AND "
                       "(\"id\", \"b\") <= ($3::bigint, $4::date)"));
    zx_buf_free(&b);
    /* a text key (collations differ between servers): key by key */
    keys[0] = 1;
    CHECK(!vf_range_ok(&t));
    keys[0] = 0;
    CHECK(vf_range_ok(&t));
    /* a compared column of another type in the mirror: key by key */
    mt[1] = "character varying";
    CHECK(!vf_range_ok(&t));
    mt[1] = NULL;
    CHECK(!vf_range_ok(&t));
    in[1] = 0; /* not compared: no matter */
    CHECK(vf_range_ok(&t));
    t.mtypes = NULL; /* SQLite */
    CHECK(!vf_range_ok(&t));
}

int main(void)
{
    test_range_sql();
    test_rows();
    test_quote();
    test_sqlite_compare();
    return failures != 0;
}
