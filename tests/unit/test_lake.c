/*
 * test_lake.c — what the lake destinations share (workers/destinations/
 * lake/) and the Delta log reader (workers/destinations/delta/delta_log.c),
 * in a temporary folder:
 *
 * - key hashes are canonical per column type (42 and "42" in an INT64 key
 *   hash alike; a timestamp as µs or as its text alike; "ab"+"c" differs
 *   from "a"+"bc"), and a key set keeps every key through its growth;
 * - the folder store: put, put-if-absent (EXISTS, the first kept), get
 *   (NOT_FOUND), list sorted without temporary files, delete, names with
 *   ".." or a leading '/' refused, a root outside the roots refused;
 * - a data file is visible only after commit, and nothing after abort;
 * - the sidecars round-trip every row and key hash;
 * - the Delta log: commits replayed (adds, removes, txn, protocol,
 *   metaData), a table needing a newer protocol refused with what to do, a
 *   log whose first commits are gone refused, the schema grown by a new
 *   column and a changed type refused with what changed.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "common/rowset.h"
#include "workers/destinations/delta/delta_log.h"
#include "workers/destinations/lake/lake_keys.h"
#include "workers/destinations/lake/lake_side.h"
#include "workers/destinations/lake/lake_store.h"

static char root[256];

static void test_keys(void)
{
    zx_dcol kc[2] = {{"id", ZX_DT_INT64, 0, 0}, {"at", ZX_DT_TIMESTAMP, 0, 0}};
    size_t idx[2] = {0, 1};
    zx_buf sc[2] = {{0}, {0}};
    unsigned char a[16], b[16], c[16];
    zx_value v1[2] = {{.type = ZX_T_INT, .u.i = 42},
                      {.type = ZX_T_TIMESTAMP, .u.i = 1000000, .s = "1970-01-01T00:00:01.000000Z",
                       .len = 27}};
    zx_value v2[2] = {{.type = ZX_T_TEXT, .s = "42", .len = 2},
                      {.type = ZX_T_TEXT, .s = "1970-01-01T00:00:01Z", .len = 20}};
    CHECK(zx_lake_key_hash(kc, idx, 2, v1, sc, a) == 0);
    CHECK(zx_lake_key_hash(kc, idx, 2, v2, sc, b) == 0);
    CHECK(!memcmp(a, b, 16));
    v2[0].s = "43";
    CHECK(zx_lake_key_hash(kc, idx, 2, v2, sc, c) == 0);
    CHECK(memcmp(a, c, 16));

    zx_dcol tc[2] = {{"a", ZX_DT_TEXT, 0, 0}, {"b", ZX_DT_TEXT, 0, 0}};
    zx_value t1[2] = {{.type = ZX_T_TEXT, .s = "ab", .len = 2}, {.type = ZX_T_TEXT, .s = "c", .len = 1}};
    zx_value t2[2] = {{.type = ZX_T_TEXT, .s = "a", .len = 1}, {.type = ZX_T_TEXT, .s = "bc", .len = 2}};
    CHECK(zx_lake_key_hash(tc, idx, 2, t1, sc, a) == 0);
    CHECK(zx_lake_key_hash(tc, idx, 2, t2, sc, b) == 0);
    CHECK(memcmp(a, b, 16));

    zx_keyset s = {0};
    unsigned char k[16];
    for (uint32_t i = 0; i < 50000; i++) {
        memset(k, 0, 16);
        memcpy(k, &i, 4);
        k[15] = (unsigned char)i;
        CHECK(zx_keyset_add(&s, k) == 1);
    }
    memset(k, 0, 16);
    CHECK(zx_keyset_add(&s, k) == 0);
    CHECK(s.n == 50000);
    int all = 1;
    for (uint32_t i = 0; i < 50000; i++) {
        memset(k, 0, 16);
        memcpy(k, &i, 4);
        k[15] = (unsigned char)i;
        all &= zx_keyset_has(&s, k);
    }
    CHECK(all);
    k[14] = 1;
    CHECK(!zx_keyset_has(&s, k));
    zx_keyset_free(&s);
    zx_buf_free(&sc[0]);
    zx_buf_free(&sc[1]);
}

static zx_lake *open_store(const char *sub)
{
    char path[400], err[512];
    snprintf(path, sizeof(path), "%s/%s", root, sub);
    const char *roots[1] = {root};
    zx_lake_args a = {.root = path, .roots = roots, .nroots = 1, .what = "test"};
    zx_lake *l = zx_lake_open(&a, err, sizeof(err));
    if (!l)
        printf("open: %s\n", err);
    return l;
}

static void test_store(void)
{
    char err[512];
    zx_lake *l = open_store("t1");
    CHECK(l != NULL);
    if (!l)
        return;
    CHECK(zx_lake_put(l, "_log/b.json", "B", 1, 1, err, sizeof(err)) == 0);
    CHECK(zx_lake_put(l, "_log/a.json", "A", 1, 1, err, sizeof(err)) == 0);
    CHECK(zx_lake_put(l, "_log/a.json", "X", 1, 1, err, sizeof(err)) == ZX_LAKE_EXISTS);
    zx_buf b = {0};
    CHECK(zx_lake_get(l, "_log/a.json", 0, &b, err, sizeof(err)) == 0 && b.len == 1 &&
          b.p[0] == 'A');
    CHECK(zx_lake_put(l, "_log/a.json", "Y", 1, 0, err, sizeof(err)) == 0);
    CHECK(zx_lake_get(l, "_log/a.json", 0, &b, err, sizeof(err)) == 0 && b.p[0] == 'Y');
    CHECK(zx_lake_get(l, "_log/none", 0, &b, err, sizeof(err)) == ZX_LAKE_NOT_FOUND);
    char **names;
    size_t n;
    CHECK(zx_lake_list(l, "_log", &names, &n, err, sizeof(err)) == 0);
    CHECK(n == 2 && !strcmp(names[0], "a.json") && !strcmp(names[1], "b.json"));
    zx_lake_names_free(names, n);
    CHECK(zx_lake_list(l, "nothing", &names, &n, err, sizeof(err)) == 0 && n == 0);
    CHECK(zx_lake_delete(l, "_log/b.json", err, sizeof(err)) == 0);
    CHECK(zx_lake_delete(l, "_log/b.json", err, sizeof(err)) == 0);
    CHECK(zx_lake_get(l, "../x", 0, &b, err, sizeof(err)) == -1 && strstr(err, "bad file name"));
    CHECK(zx_lake_put(l, "/etc/x", "x", 1, 0, err, sizeof(err)) == -1);
    CHECK(zx_lake_put(l, "a/./b", "x", 1, 0, err, sizeof(err)) == -1);

    /* a data file: visible at commit only; nothing after abort */
    zx_lake_out *o = zx_lake_create(l, "d1.parquet", err, sizeof(err));
    CHECK(o != NULL);
    CHECK(zx_lake_write(o, "hello", 5, err, sizeof(err)) == 0);
    CHECK(zx_lake_get(l, "d1.parquet", 0, &b, err, sizeof(err)) == ZX_LAKE_NOT_FOUND);
    uint64_t size = 0;
    CHECK(zx_lake_out_commit(o, &size, err, sizeof(err)) == 0 && size == 5);
    CHECK(zx_lake_get(l, "d1.parquet", 0, &b, err, sizeof(err)) == 0 && b.len == 5);
    o = zx_lake_create(l, "d2.parquet", err, sizeof(err));
    CHECK(zx_lake_write(o, "x", 1, err, sizeof(err)) == 0);
    zx_lake_out_abort(o);
    CHECK(zx_lake_get(l, "d2.parquet", 0, &b, err, sizeof(err)) == ZX_LAKE_NOT_FOUND);
    char dir[400];
    snprintf(dir, sizeof(dir), "%s/t1", root);
    DIR *d = opendir(dir);
    int stray = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        stray += de->d_name[0] == '.' && strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    if (d)
        closedir(d);
    CHECK(stray == 0);
    zx_buf_free(&b);
    zx_lake_free(l);

    /* outside the roots */
    const char *roots[1] = {root};
    zx_lake_args a = {.root = "/tmp", .roots = roots, .nroots = 1, .what = "test"};
    CHECK(zx_lake_open(&a, err, sizeof(err)) == NULL && strstr(err, "outside the folders"));
    a.root = "s3://bucket/x";
    CHECK(zx_lake_open(&a, err, sizeof(err)) == NULL && strstr(err, "connection"));
}

typedef struct got {
    uint64_t rows;
    int64_t sum;
    int text_ok;
} got;

static int take(void *ctx, const zx_rowset *rs)
{
    got *g = ctx;
    zx_value v[2];
    for (uint32_t i = 0; i < rs->nrows; i++) {
        zx_rowset_row(rs, i, v);
        g->sum += v[0].u.i;
        char want[32];
        snprintf(want, sizeof(want), "row %lld", (long long)v[0].u.i);
        g->text_ok &= v[1].type == ZX_T_TEXT && !strcmp(v[1].s, want);
    }
    g->rows += rs->nrows;
    return 0;
}

static void test_side(void)
{
    char err[512];
    zx_lake *l = open_store("t2");
    if (!l)
        return;
    zx_side *s = zx_side_open(l, "f.parquet", 1, err, sizeof(err));
    CHECK(s != NULL);
    zx_rowset rs;
    zx_rowset_init(&rs);
    unsigned char *keys = calloc(1000, 16);
    int64_t sum = 0;
    for (int batch = 0; batch < 5; batch++) {
        zx_rowset_reset(&rs);
        zx_rowset_column(&rs, "id", 2, ZX_T_INT);
        zx_rowset_column(&rs, "name", 4, ZX_T_TEXT);
        for (int i = 0; i < 1000; i++) {
            int64_t id = batch * 1000 + i;
            char t[32];
            snprintf(t, sizeof(t), "row %lld", (long long)id);
            zx_rowset_begin_row(&rs);
            zx_value a = {.type = ZX_T_INT, .u.i = id};
            zx_value b = {.type = ZX_T_TEXT, .s = zx_rowset_strdup(&rs, t, strlen(t)),
                          .len = (uint32_t)strlen(t)};
            zx_rowset_add(&rs, 0, &a);
            zx_rowset_add(&rs, 1, &b);
            zx_rowset_end_row(&rs);
            memcpy(keys + i * 16, &id, 8);
            sum += id;
        }
        CHECK(zx_side_add(s, &rs, keys, err, sizeof(err)) == 0);
    }
    CHECK(zx_side_commit(s, err, sizeof(err)) == 0);
    zx_buf kb = {0};
    CHECK(zx_side_keys(l, "f.parquet", &kb, err, sizeof(err)) == 0 && kb.len == 5000 * 16);
    int64_t k4999;
    memcpy(&k4999, kb.p + 4999 * 16, 8);
    CHECK(k4999 == 4999);
    got g = {0, 0, 1};
    CHECK(zx_side_rows(l, "f.parquet", take, &g, err, sizeof(err)) == 0);
    CHECK(g.rows == 5000 && g.sum == sum && g.text_ok);
    /* ZX_LAKE_SEED: write the copy there, as a fuzz seed (corpus/delta_log:
     * a first byte 1, then the .rows bytes) */
    const char *seed = getenv("ZX_LAKE_SEED");
    zx_buf rb = {0};
    if (seed && zx_lake_get(l, "_zx/f.parquet.rows", 0, &rb, err, sizeof(err)) == 0) {
        FILE *f = fopen(seed, "wb");
        if (f) {
            fputc(1, f);
            fwrite(rb.p, 1, rb.len < 3000 ? rb.len : 3000, f);
            fclose(f);
        }
    }
    zx_buf_free(&rb);
    CHECK(zx_side_rows(l, "none.parquet", take, &g, err, sizeof(err)) == ZX_LAKE_NOT_FOUND);
    /* a damaged copy is an error, not a crash */
    CHECK(zx_lake_put(l, "_zx/bad.parquet.rows", "\x28\xb5\x2f\xfd garbage", 12, 0, err,
                      sizeof(err)) == 0);
    CHECK(zx_side_rows(l, "bad.parquet", take, &g, err, sizeof(err)) == -1 &&
          strstr(err, "damaged"));
    CHECK(zx_side_delete(l, "f.parquet", err, sizeof(err)) == 0);
    CHECK(zx_side_keys(l, "f.parquet", &kb, err, sizeof(err)) == ZX_LAKE_NOT_FOUND);
    zx_buf_free(&kb);
    zx_rowset_free(&rs);
    free(keys);
    zx_lake_free(l);
}

static const char *c0 =
    "{\"commitInfo\":{\"timestamp\":1}}\n"
    "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n"
    "{\"metaData\":{\"id\":\"u\",\"format\":{\"provider\":\"parquet\",\"options\":{}},"
    "\"schemaString\":\"{\\\"type\\\":\\\"struct\\\",\\\"fields\\\":[{\\\"name\\\":\\\"id\\\","
    "\\\"type\\\":\\\"long\\\",\\\"nullable\\\":true,\\\"metadata\\\":{}},{\\\"name\\\":"
    "\\\"name\\\",\\\"type\\\":\\\"string\\\",\\\"nullable\\\":true,\\\"metadata\\\":{}}]}\","
    "\"partitionColumns\":[],\"configuration\":{}}}\n"
    "{\"add\":{\"path\":\"a%20b.parquet\",\"partitionValues\":{},\"size\":10,"
    "\"modificationTime\":1,\"dataChange\":true,\"stats\":\"{\\\"numRecords\\\":3}\","
    "\"tags\":{\"zx.rows\":\"1\"}}}\n"
    "{\"add\":{\"path\":\"c.parquet\",\"partitionValues\":{},\"size\":20,"
    "\"modificationTime\":1,\"dataChange\":true}}\n"
    "{\"txn\":{\"appId\":\"zx-s\",\"version\":7}}\n";
static const char *c1 =
    "{\"remove\":{\"path\":\"a%20b.parquet\",\"deletionTimestamp\":2,\"dataChange\":true}}\n"
    "{\"add\":{\"path\":\"d.parquet\",\"partitionValues\":{},\"size\":30,"
    "\"modificationTime\":2,\"dataChange\":true}}\n"
    "{\"txn\":{\"appId\":\"zx-s\",\"version\":9}}\n";

static void test_delta_log(void)
{
    char err[1024];
    zx_lake *l = open_store("t3");
    if (!l)
        return;
    zx_delta_table t;
    CHECK(zx_delta_read(l, &t, err, sizeof(err)) == 0 && t.version == -1);
    zx_delta_table_free(&t);
    char name[64];
    zx_delta_commit_name(0, name);
    CHECK(!strcmp(name, "_delta_log/00000000000000000000.json"));
    CHECK(zx_lake_put(l, name, c0, strlen(c0), 1, err, sizeof(err)) == 0);
    zx_delta_commit_name(1, name);
    CHECK(zx_lake_put(l, name, c1, strlen(c1), 1, err, sizeof(err)) == 0);
    CHECK(zx_delta_read(l, &t, err, sizeof(err)) == 0);
    CHECK(t.version == 1 && t.nfiles == 2);
    CHECK(t.nfiles == 2 && !strcmp(t.files[0].path, "c.parquet") &&
          !strcmp(t.files[1].path, "d.parquet") && !t.files[0].zx);
    CHECK(zx_delta_txn(&t, "zx-s") == 9 && zx_delta_txn(&t, "other") == -1);
    CHECK(t.ncols == 2 && !strcmp(t.cols[1].type, "string"));

    /* the schema: a new column appended, a changed type refused */
    zx_dcol cols[3] = {{"id", ZX_DT_INT64, 0, 0}, {"name", ZX_DT_TEXT, 0, 0},
                       {"amount", ZX_DT_DECIMAL, 12, 2}};
    size_t added;
    char *s = zx_delta_schema_merge(&t, cols, 3, &added, "delta t", err, sizeof(err));
    CHECK(s && added == 1 && strstr(s, "\"decimal(12,2)\"") && strstr(s, "\"amount\""));
    free(s);
    cols[0].type = ZX_DT_TEXT;
    s = zx_delta_schema_merge(&t, cols, 3, &added, "delta t", err, sizeof(err));
    CHECK(!s && strstr(err, "column id is long in the table") && strstr(err, "cast it"));
    zx_delta_table_free(&t);

    /* a newer protocol: refused, with what to do */
    const char *c2 = "{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,"
                     "\"readerFeatures\":[\"deletionVectors\"]}}\n";
    zx_delta_commit_name(2, name);
    CHECK(zx_lake_put(l, name, c2, strlen(c2), 1, err, sizeof(err)) == 0);
    CHECK(zx_delta_read(l, &t, err, sizeof(err)) == -1 && strstr(err, "deletionVectors") &&
          strstr(err, "new table"));
    zx_delta_table_free(&t);

    /* a log whose first commits are gone */
    zx_delta_commit_name(0, name);
    CHECK(zx_lake_delete(l, name, err, sizeof(err)) == 0);
    CHECK(zx_delta_read(l, &t, err, sizeof(err)) == -1 && strstr(err, "starts at version 1"));
    zx_delta_table_free(&t);

    /* a malformed commit names its version and line */
    zx_lake *l2 = open_store("t4");
    zx_delta_commit_name(0, name);
    CHECK(zx_lake_put(l2, name, "{\"add\":{}}\nnot json\n", 19, 1, err, sizeof(err)) == 0);
    CHECK(zx_delta_read(l2, &t, err, sizeof(err)) == -1 && strstr(err, "version 0"));
    zx_delta_table_free(&t);
    zx_lake_free(l2);
    zx_lake_free(l);
}

int main(void)
{
    snprintf(root, sizeof(root), "/tmp/zxlake_XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    test_keys();
    test_store();
    test_side();
    test_delta_log();
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd) != 0)
        printf("could not remove %s\n", root);
    return failures != 0;
}
