/*
 * test_dest_files.c — the "files" destination (workers/destinations/files/dest_files.c)
 * through its zx_dest callbacks, in a temporary folder: CSV and NDJSON
 * content byte for byte (quoting, escaping, every type, NULLs, misfits),
 * Parquet files' frame and size, replace / append / mirror names and
 * content, no temporary file left after commit or abort, no file after
 * abort (and the old file kept), a stale temporary file of a dead process
 * swept, and clear errors (bad args, a folder that cannot be made).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "common/rowset.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/files/files_opts.h"
#include "workers/destinations/files/files_s3.h"

extern const zx_dest zx_dest_files;

static char root[256];

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    char *p = malloc((size_t)len + 1);
    if (fread(p, 1, (size_t)len, f) != (size_t)len)
        len = 0;
    p[len] = '\0';
    fclose(f);
    if (n)
        *n = (size_t)len;
    return p;
}

static int file_is(const char *path, const char *want)
{
    size_t n;
    char *got = slurp(path, &n);
    int ok = got && n == strlen(want) && !memcmp(got, want, n);
    if (!ok)
        printf("%s:\n--- got ---\n%s\n--- want ---\n%s\n", path, got ? got : "(none)", want);
    free(got);
    return ok;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Entries of dir containing ".tmp-". */
static int tmp_count(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp-"))
            n++;
    closedir(d);
    return n;
}

static void add(zx_rowset *rs, uint32_t col, zx_value v)
{
    if (v.s)
        v.s = zx_rowset_strdup(rs, v.s, v.len);
    zx_rowset_add(rs, col, &v);
}

static zx_value T(const char *s)
{
    return (zx_value){.type = ZX_T_TEXT, .len = (uint32_t)strlen(s), .s = s};
}

static zx_value TN(const char *s, size_t n)
{
    return (zx_value){.type = ZX_T_TEXT, .len = (uint32_t)n, .s = s};
}

static zx_value I(int64_t i)
{
    return (zx_value){.type = ZX_T_INT, .u.i = i};
}

static zx_value R(double d)
{
    return (zx_value){.type = ZX_T_REAL, .u.d = d};
}

static zx_value B(int b)
{
    return (zx_value){.type = ZX_T_BOOL, .u.b = b};
}

static zx_value J(const char *s)
{
    return (zx_value){.type = ZX_T_JSON, .len = (uint32_t)strlen(s), .s = s};
}

static zx_value TS(int64_t us)
{
    return (zx_value){.type = ZX_T_TIMESTAMP, .u.i = us};
}

/* The run's columns for the all-types tests. */
static const zx_dcol cols[] = {
    {"id", ZX_DT_INT64, 0, 0},     {"name", ZX_DT_TEXT, 0, 0},  {"x", ZX_DT_DOUBLE, 0, 0},
    {"ok", ZX_DT_BOOL, 0, 0},      {"at", ZX_DT_TIMESTAMP, 0, 0}, {"day", ZX_DT_DATE, 0, 0},
    {"price", ZX_DT_DECIMAL, 10, 2}, {"doc", ZX_DT_JSON, 0, 0},   {"raw", ZX_DT_BYTES, 0, 0},
};
#define NCOLS (sizeof(cols) / sizeof(cols[0]))

static void rows_all_types(zx_rowset *rs)
{
    zx_rowset_init(rs);
    for (size_t c = 0; c < NCOLS; c++)
        zx_rowset_column(rs, cols[c].name, strlen(cols[c].name), ZX_T_NULL);
    /* row 1: plain values */
    zx_rowset_begin_row(rs);
    add(rs, 0, I(1));
    add(rs, 1, T("plain"));
    add(rs, 2, R(0.1));
    add(rs, 3, B(1));
    add(rs, 4, TS(1796105598123456LL));
    add(rs, 5, T("2026-12-01"));
    add(rs, 6, T("-123.4"));
    add(rs, 7, J("{\"a\":[1,2]}"));
    add(rs, 8, TN("\x00\xff\x10", 3));
    zx_rowset_end_row(rs);
    /* row 2: quoting and escaping, edge numbers */
    zx_rowset_begin_row(rs);
    add(rs, 0, I(INT64_MIN));
    add(rs, 1, T("a,b \"q\"\r\nnext\x01\t\xc3\xa9"));
    add(rs, 2, R(NAN));
    add(rs, 3, B(0));
    add(rs, 4, TS(-1));
    add(rs, 5, T("0001-01-01"));
    add(rs, 6, T("5"));
    add(rs, 7, J("[\n1 ,\"x,y\"]"));         /* valid JSON, not compact */
    add(rs, 8, TN("", 0));
    zx_rowset_end_row(rs);
    /* row 3: NULLs, conversions and misfits */
    zx_rowset_begin_row(rs);
    add(rs, 0, T("42"));                 /* text -> int64 */
    add(rs, 1, T(""));                   /* empty string, not NULL */
    add(rs, 2, I(3));                    /* int -> double */
    add(rs, 3, T("maybe"));              /* misfit */
    add(rs, 5, T("2023-02-29"));         /* misfit */
    add(rs, 6, T("123456789.1"));        /* misfit: beyond decimal(10,2) */
    add(rs, 7, J("{bad json"));          /* misfit */
    zx_rowset_end_row(rs);
    /* row 4: infinities; text that is not UTF-8 (misfit); text in a JSON
     * column (a JSON string); everything else NULL */
    zx_rowset_begin_row(rs);
    add(rs, 1, T("bad\xff"));
    add(rs, 2, R(-INFINITY));
    add(rs, 7, T("hi"));
    zx_rowset_end_row(rs);
}

static const char csv_want[] =
    "id,name,x,ok,at,day,price,doc,raw\r\n"
    "1,plain,0.1,true,2026-12-01T06:13:18.123456Z,2026-12-01,-123.40,\"{\"\"a\"\":[1,2]}\",AP8Q\r\n"
    "-9223372036854775808,\"a,b \"\"q\"\"\r\nnext\x01\t\xc3\xa9\",NaN,false,"
    "1969-12-31T23:59:59.999999Z,0001-01-01,5.00,\"[\n1 ,\"\"x,y\"\"]\",\"\"\r\n"
    "42,\"\",3,,,,,,\r\n"
    ",,-Infinity,,,,,\"\"\"hi\"\"\",\r\n";

static const char json_want[] =
    "{\"id\":1,\"name\":\"plain\",\"x\":0.1,\"ok\":true,\"at\":\"2026-12-01T06:13:18.123456Z\","
    "\"day\":\"2026-12-01\",\"price\":\"-123.40\",\"doc\":{\"a\":[1,2]},\"raw\":\"AP8Q\"}\n"
    "{\"id\":-9223372036854775808,\"name\":\"a,b \\\"q\\\"\\r\\nnext\\u0001\\t\xc3\xa9\","
    "\"x\":null,\"ok\":false,\"at\":\"1969-12-31T23:59:59.999999Z\",\"day\":\"0001-01-01\","
    "\"price\":\"5.00\",\"doc\":[ 1 ,\"x,y\"],\"raw\":\"\"}\n"
    "{\"id\":42,\"name\":\"\",\"x\":3,\"ok\":null,\"at\":null,\"day\":null,\"price\":null,"
    "\"doc\":null,\"raw\":null}\n"
    "{\"id\":null,\"name\":null,\"x\":null,\"ok\":null,\"at\":null,\"day\":null,\"price\":null,"
    "\"doc\":\"hi\",\"raw\":null}\n";

typedef struct run_out {
    int rc;                 /* -1 at the step that failed */
    char err[512];
    zx_dest_stats st;
} run_out;

/* One run: open, begin, write rs (and delete keys when given), then commit
 * (or abort when do_abort), close. */
static run_out run_once(const char *path, const char *format, const char *compression,
                        zx_sync_mode mode, uint64_t run_id, const zx_dcol *c, size_t nc,
                        const zx_rowset *rs, const zx_rowset *keys, const char *const *key_cols,
                        size_t nkeys, int do_abort)
{
    run_out o;
    memset(&o, 0, sizeof(o));
    const char *roots[1] = {root};
    zx_files_opts fo = {.path = (char *)path, .format = (char *)format,
                        .compression = (char *)compression};
    zx_dest_args a = {.sync = "orders", .opts = &fo, .roots = roots, .nroots = 1,
                      .deadline_ms = 1000};
    void *state = NULL;
    const zx_dest *d = &zx_dest_files;
    if (d->open(&a, &state, o.err, sizeof(o.err)) < 0) {
        o.rc = -1;
        return o;
    }
    zx_dest_run run = {.run_id = run_id, .mode = mode, .cols = c, .ncols = nc,
                       .key_cols = key_cols, .nkey_cols = nkeys};
    if (d->begin(state, &run, &o.st, o.err, sizeof(o.err)) < 0 ||
        (rs && d->write(state, rs, o.err, sizeof(o.err)) < 0) ||
        (keys && d->delete_keys(state, keys, o.err, sizeof(o.err)) < 0)) {
        o.rc = -1;
        d->abort(state);
        d->close(state);
        return o;
    }
    if (do_abort)
        d->abort(state);
    else if (d->commit(state, o.err, sizeof(o.err)) < 0) {
        o.rc = -1;
        d->abort(state);
    }
    d->close(state);
    return o;
}

static void test_text_formats(void)
{
    zx_rowset rs;
    rows_all_types(&rs);
    char dir[300], path[400];
    snprintf(dir, sizeof(dir), "%s/text", root);

    run_out o = run_once(dir, "csv", NULL, ZX_MODE_REPLACE, 7, cols, NCOLS, &rs, NULL, NULL, 0, 0);
    CHECK(o.rc == 0);
    if (o.rc)
        printf("csv: %s\n", o.err);
    snprintf(path, sizeof(path), "%s/orders.csv", dir);
    CHECK(file_is(path, csv_want));
    /* misfits: ok, day, price, doc (row 3), name (row 4) */
    CHECK(o.st.rows_written == 4 && o.st.nulled == 5 && o.st.bytes == strlen(csv_want));
    /* the first is noted for the run's message */
    CHECK(!strcmp(o.st.misfit_col, "ok"));
    CHECK(!strcmp(o.st.misfit_val, "\"maybe\""));
    CHECK(tmp_count(dir) == 0);

    o = run_once(dir, "json", NULL, ZX_MODE_REPLACE, 8, cols, NCOLS, &rs, NULL, NULL, 0, 0);
    CHECK(o.rc == 0);
    snprintf(path, sizeof(path), "%s/orders.json", dir);
    CHECK(file_is(path, json_want));
    /* misfits 5, NaN and -Infinity 2 */
    CHECK(o.st.rows_written == 4 && o.st.nulled == 7 && o.st.bytes == strlen(json_want));
    CHECK(tmp_count(dir) == 0);

    /* a file path with .ndjson */
    snprintf(path, sizeof(path), "%s/out/export.ndjson", root);
    o = run_once(path, "json", NULL, ZX_MODE_REPLACE, 9, cols, NCOLS, &rs, NULL, NULL, 0, 0);
    CHECK(o.rc == 0 && file_is(path, json_want));
    zx_rowset_free(&rs);
}

static void test_parquet_files(void)
{
    zx_rowset rs;
    rows_all_types(&rs);
    char dir[300], path[400];
    snprintf(dir, sizeof(dir), "%s/pq", root);
    const char *codecs[] = {NULL, "zstd", "snappy", "none"};
    for (int k = 0; k < 4; k++) {
        run_out o = run_once(dir, "parquet", codecs[k], ZX_MODE_REPLACE, 10 + (uint64_t)k, cols,
                             NCOLS, &rs, NULL, NULL, 0, 0);
        CHECK(o.rc == 0);
        if (o.rc)
            printf("parquet: %s\n", o.err);
        snprintf(path, sizeof(path), "%s/orders.parquet", dir);
        size_t n = 0;
        char *p = slurp(path, &n);
        CHECK(p && n > 100 && !memcmp(p, "PAR1", 4) && !memcmp(p + n - 4, "PAR1", 4));
        CHECK(o.st.bytes == n && o.st.rows_written == 4 && o.st.nulled == 5);
        CHECK(!strcmp(o.st.misfit_col, "ok"));
        CHECK(!strcmp(o.st.misfit_val, "\"maybe\""));
        free(p);
        CHECK(tmp_count(dir) == 0);
    }
    run_out o = run_once(dir, "parquet", "lz4", ZX_MODE_REPLACE, 20, cols, NCOLS, &rs, NULL, NULL,
                         0, 0);
    CHECK(o.rc == -1 && strstr(o.err, "lz4") && strstr(o.err, dir));
    zx_rowset_free(&rs);
}

static const zx_dcol kcols[] = {{"k", ZX_DT_INT64, 0, 0}, {"v", ZX_DT_TEXT, 0, 0}};

static void kv_rows(zx_rowset *rs, int first, int n)
{
    zx_rowset_init(rs);
    zx_rowset_column(rs, "k", 1, ZX_T_NULL);
    zx_rowset_column(rs, "v", 1, ZX_T_NULL);
    for (int i = first; i < first + n; i++) {
        char b[32];
        snprintf(b, sizeof(b), "v%d", i);
        zx_rowset_begin_row(rs);
        add(rs, 0, I(i));
        add(rs, 1, T(b));
        zx_rowset_end_row(rs);
    }
}

static void test_modes(void)
{
    char dir[300], path[400];
    snprintf(dir, sizeof(dir), "%s/modes", root);
    zx_rowset a, b, keys;
    kv_rows(&a, 1, 2);
    kv_rows(&b, 3, 1);
    zx_rowset_init(&keys);
    zx_rowset_column(&keys, "k", 1, ZX_T_NULL);
    zx_rowset_begin_row(&keys);
    add(&keys, 0, I(9));
    zx_rowset_end_row(&keys);

    /* append: one file per run */
    run_out o = run_once(dir, "csv", NULL, ZX_MODE_APPEND, 100, kcols, 2, &a, NULL, NULL, 0, 0);
    CHECK(o.rc == 0);
    o = run_once(dir, "csv", NULL, ZX_MODE_APPEND, 101, kcols, 2, &b, NULL, NULL, 0, 0);
    CHECK(o.rc == 0);
    snprintf(path, sizeof(path), "%s/orders-100.csv", dir);
    CHECK(file_is(path, "k,v\r\n1,v1\r\n2,v2\r\n"));
    snprintf(path, sizeof(path), "%s/orders-101.csv", dir);
    CHECK(file_is(path, "k,v\r\n3,v3\r\n"));

    /* mirror: _zx_op first, deletes with the key only */
    const char *kc[] = {"k"};
    o = run_once(dir, "csv", NULL, ZX_MODE_MIRROR, 102, kcols, 2, &a, &keys, kc, 1, 0);
    CHECK(o.rc == 0 && o.st.rows_written == 2 && o.st.rows_deleted == 1);
    snprintf(path, sizeof(path), "%s/orders-102.csv", dir);
    CHECK(file_is(path, "_zx_op,k,v\r\nupsert,1,v1\r\nupsert,2,v2\r\ndelete,9,\r\n"));
    o = run_once(dir, "json", NULL, ZX_MODE_MIRROR, 103, kcols, 2, &b, &keys, kc, 1, 0);
    snprintf(path, sizeof(path), "%s/orders-103.json", dir);
    CHECK(o.rc == 0 && file_is(path, "{\"_zx_op\":\"upsert\",\"k\":3,\"v\":\"v3\"}\n"
                                     "{\"_zx_op\":\"delete\",\"k\":9,\"v\":null}\n"));
    o = run_once(dir, "parquet", NULL, ZX_MODE_MIRROR, 104, kcols, 2, &b, &keys, kc, 1, 0);
    snprintf(path, sizeof(path), "%s/orders-104.parquet", dir);
    CHECK(o.rc == 0 && exists(path) && o.st.rows_deleted == 1);
    /* upsert writes a new file too; a file path gets <stem>-<run_id> */
    snprintf(path, sizeof(path), "%s/one.csv", dir);
    o = run_once(path, "csv", NULL, ZX_MODE_UPSERT, 105, kcols, 2, &b, NULL, kc, 1, 0);
    snprintf(path, sizeof(path), "%s/one-105.csv", dir);
    CHECK(o.rc == 0 && file_is(path, "k,v\r\n3,v3\r\n"));
    snprintf(path, sizeof(path), "%s/one.csv", dir);
    CHECK(!exists(path));
    /* a column named _zx_op in mirror mode; a key that is no column */
    zx_dcol bad[] = {{"_zx_op", ZX_DT_TEXT, 0, 0}, {"k", ZX_DT_INT64, 0, 0}};
    o = run_once(dir, "csv", NULL, ZX_MODE_MIRROR, 106, bad, 2, NULL, NULL, kc, 1, 0);
    CHECK(o.rc == -1 && strstr(o.err, "_zx_op"));
    const char *nokey[] = {"nope"};
    o = run_once(dir, "csv", NULL, ZX_MODE_MIRROR, 107, kcols, 2, NULL, NULL, nokey, 1, 0);
    CHECK(o.rc == -1 && strstr(o.err, "nope"));
    CHECK(tmp_count(dir) == 0);

    /* replace: abort keeps the old file, commit swaps it */
    snprintf(path, sizeof(path), "%s/orders.csv", dir);
    o = run_once(dir, "csv", NULL, ZX_MODE_REPLACE, 110, kcols, 2, &a, NULL, NULL, 0, 0);
    CHECK(o.rc == 0 && file_is(path, "k,v\r\n1,v1\r\n2,v2\r\n"));
    o = run_once(dir, "csv", NULL, ZX_MODE_REPLACE, 111, kcols, 2, &b, NULL, NULL, 0, 1);
    CHECK(o.rc == 0 && file_is(path, "k,v\r\n1,v1\r\n2,v2\r\n") && tmp_count(dir) == 0);
    o = run_once(dir, "parquet", NULL, ZX_MODE_APPEND, 112, kcols, 2, &b, NULL, NULL, 0, 1);
    snprintf(path, sizeof(path), "%s/orders-112.parquet", dir);
    CHECK(o.rc == 0 && !exists(path) && tmp_count(dir) == 0);
    snprintf(path, sizeof(path), "%s/orders.csv", dir);
    o = run_once(dir, "csv", NULL, ZX_MODE_REPLACE, 113, kcols, 2, &b, NULL, NULL, 0, 0);
    CHECK(o.rc == 0 && file_is(path, "k,v\r\n3,v3\r\n"));

    zx_rowset_free(&a);
    zx_rowset_free(&b);
    zx_rowset_free(&keys);
}

/* A temporary file of a process that is gone is removed at begin; one of
 * a live process (ours, another name) is not. */
static void test_sweep(void)
{
    char dir[300], stale[400], live[400], path[400];
    snprintf(dir, sizeof(dir), "%s/sweep", root);
    mkdir(dir, 0755);
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    waitpid(pid, NULL, 0);
    snprintf(stale, sizeof(stale), "%s/.orders.csv.tmp-%d-5", dir, (int)pid);
    snprintf(live, sizeof(live), "%s/.orders-9.csv.tmp-1-9", dir);   /* pid 1 lives */
    fclose(fopen(stale, "w"));
    fclose(fopen(live, "w"));
    zx_rowset a;
    kv_rows(&a, 1, 1);
    run_out o = run_once(dir, "csv", NULL, ZX_MODE_REPLACE, 6, kcols, 2, &a, NULL, NULL, 0, 0);
    CHECK(o.rc == 0 && !exists(stale) && exists(live));
    snprintf(path, sizeof(path), "%s/orders.csv", dir);
    CHECK(exists(path));
    unlink(live);
    zx_rowset_free(&a);
}

static void test_errors(void)
{
    char path[400];
    void *state = NULL;
    char err[512];
    const char *roots[1] = {root};
    zx_files_opts fo = {.path = "relative/dir", .format = "csv"};
    zx_dest_args a = {.sync = "orders", .opts = &fo, .roots = roots, .nroots = 1};
    CHECK(zx_dest_files.open(&a, &state, err, sizeof(err)) < 0 && strstr(err, "absolute"));
    fo.path = "/tmp/x.csv";
    fo.format = "parquet";
    CHECK(zx_dest_files.open(&a, &state, err, sizeof(err)) < 0 && strstr(err, ".csv"));
    fo.format = "xml";
    CHECK(zx_dest_files.open(&a, &state, err, sizeof(err)) < 0 && strstr(err, "xml"));
    zx_dest_files.close(NULL);

    /* confined to the roots: outside them, or through a link below one */
    fo.format = "csv";
    fo.path = "/tmp/x.csv";
    CHECK(zx_dest_files.open(&a, &state, err, sizeof(err)) < 0 && strstr(err, "/tmp/x.csv") &&
          strstr(err, root) && strstr(err, "server.file_roots"));
    {
        char out[300], link[400];
        snprintf(out, sizeof(out), "%s-outside", root);
        mkdir(out, 0755);
        snprintf(link, sizeof(link), "%s/away", root);
        CHECK(symlink(out, link) == 0);
        snprintf(path, sizeof(path), "%s/away/x.csv", root);
        zx_rowset krs;
        kv_rows(&krs, 1, 1);
        run_out lo = run_once(path, "csv", NULL, ZX_MODE_REPLACE, 1, kcols, 2, &krs, NULL, NULL,
                              0, 0);
        CHECK(lo.rc == -1 && strstr(lo.err, "symbolic link"));
        snprintf(path, sizeof(path), "%s/x.csv", out);
        CHECK(access(path, F_OK) != 0);          /* nothing written through it */
        zx_rowset_free(&krs);
        unlink(link);
        rmdir(out);
    }

    /* a folder under a regular file cannot be made */
    snprintf(path, sizeof(path), "%s/plainfile", root);
    fclose(fopen(path, "w"));
    snprintf(path, sizeof(path), "%s/plainfile/sub", root);
    zx_rowset rs;
    kv_rows(&rs, 1, 1);
    run_out o = run_once(path, "csv", NULL, ZX_MODE_REPLACE, 1, kcols, 2, &rs, NULL, NULL, 0, 0);
    CHECK(o.rc == -1 && strstr(o.err, path) && strstr(o.err, "Not a directory"));
    if (o.rc == -1)
        printf("  (expected) %s\n", o.err);
    /* a folder without write permission (root ignores modes: skipped) */
    if (geteuid() != 0) {
        snprintf(path, sizeof(path), "%s/ro", root);
        mkdir(path, 0555);
        o = run_once(path, "csv", NULL, ZX_MODE_REPLACE, 1, kcols, 2, &rs, NULL, NULL, 0, 0);
        CHECK(o.rc == -1 && strstr(o.err, path) && strstr(o.err, "ermission"));
        chmod(path, 0755);
    }
    zx_rowset_free(&rs);
}

static void rm_rf(const char *p)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
    if (system(cmd) != 0)
        printf("could not remove %s\n", p);
}

/* The S3 path rules (files_s3.h): what a bucket name and a key part may
 * be, and where the key begins. */
static void test_s3_paths(void)
{
    static const struct {
        const char *url;
        int ok;
        size_t key_off;
        const char *why;
    } cases[] = {
        {"s3://zx-out/exports/", 1, 12, NULL},
        {"s3://zx-out", 1, 11, NULL},
        {"s3://zx-out/", 1, 12, NULL},
        {"s3://a.b-c/x/y.parquet", 1, 11, NULL},
        {"s3://ab/x", 0, 0, "3 to 63"},
        {"s3://Upper/x", 0, 0, "lower-case"},
        {"s3://zx_out/x", 0, 0, "lower-case"},
        {"s3://-zx/x", 0, 0, "starting and ending"},
        {"s3://zx-out/a//b", 0, 0, "an empty, '.' or '..' part"},
        {"s3://zx-out/a/../b", 0, 0, "'..' part"},
        {"s3://zx-out/./b", 0, 0, "'.' or"},
        {"s3://zx-out/a\\b", 0, 0, "control character or '\\'"},
        {"s3://zx-out/a\tb", 0, 0, "control character"},
        {"/tmp/x", 0, 0, "not an s3:// URL"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[400] = "";
        size_t off = 0;
        int rc = zx_files_s3_check(cases[i].url, &off, err, sizeof(err));
        CHECK((rc == 0) == cases[i].ok);
        if (cases[i].ok)
            CHECK(off == cases[i].key_off);
        else
            CHECK(strstr(err, cases[i].why) != NULL);
        if ((rc == 0) != cases[i].ok || (!cases[i].ok && !strstr(err, cases[i].why)))
            printf("  s3 path %s: rc %d, %s\n", cases[i].url, rc, err);
    }
    char longkey[1000];
    snprintf(longkey, sizeof(longkey), "s3://zx-out/%0950d", 7);
    char err[400];
    CHECK(zx_files_s3_check(longkey, NULL, err, sizeof(err)) < 0 && strstr(err, "at most 900"));
    CHECK(zx_files_is_s3("s3://b/x") && !zx_files_is_s3("/s3://") && !zx_files_is_s3(NULL));

    /* open refuses an s3:// path without a connection, and a file path
     * that names a bucket only */
    zx_files_opts fo = {.path = "s3://zx-out/x/", .format = "csv"};
    zx_dest_args a = {.sync = "s", .opts = &fo};
    void *stp = NULL;
    CHECK(zx_dest_files.open(&a, &stp, err, sizeof(err)) < 0 &&
          strstr(err, "needs `connection:`"));
    zx_conf_connection cn = {.name = "aws", .kind = "aws", .region = "us-east-1"};
    a.conn = &cn;
    fo.path = "s3://zx-out.csv";
    CHECK(zx_dest_files.open(&a, &stp, err, sizeof(err)) < 0 &&
          strstr(err, "names a bucket, not an object in it"));
    cn.kind = "sqlite";
    fo.path = "s3://zx-out/x/";
    CHECK(zx_dest_files.open(&a, &stp, err, sizeof(err)) < 0 &&
          strstr(err, "is of kind sqlite; an s3:// path needs kind aws"));
}

int main(void)
{
    snprintf(root, sizeof(root), "/tmp/zxpq_dest_XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    test_text_formats();
    test_parquet_files();
    test_modes();
    test_sweep();
    test_errors();
    test_s3_paths();
    if (!failures && !getenv("ZX_KEEP"))
        rm_rf(root);
    if (failures)
        printf("%d check(s) failed (files in %s)\n", failures, root);
    else
        printf("test_dest_files: all checks passed\n");
    return failures != 0;
}
