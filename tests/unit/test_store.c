/*
 * test_store.c — unit tests of workers/writer/store: open read-write and
 * read-only (also before the store exists), every named database's round
 * trip, idempotency pruning, pipeline drop, map growth with a reopen, and
 * the ZX_STORE_NOMETASYNC flag.
 * Prints one line per failed check; exits non-zero if any failed.
 */
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/check.h"

#define CHECK_RC(expr, want)                                                   \
    do {                                                                       \
        int rc_ = (expr);                                                      \
        if (rc_ != (want)) {                                                   \
            printf("%s:%d: %s returned %d (%s), want %d\n", __FILE__, __LINE__, \
                   #expr, rc_, zx_store_strerror(rc_), (int)(want));           \
            failures++;                                                        \
        }                                                                      \
    } while (0)

static char dir[256];

static void cleanup_dir(void)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/store.lmdb", dir);
    unlink(p);
    snprintf(p, sizeof(p), "%s/store.lmdb-lock", dir);
    unlink(p);
    rmdir(dir);
}

static void test_open(void)
{
    zx_store *s = NULL, *ro = NULL;
    char err[256] = "";

    /* read-only before the writer created it: clean, distinct error */
    CHECK_RC(zx_store_open(dir, ZX_STORE_RDONLY, 0, &ro, err, sizeof(err)), ZX_STORE_NOSTORE);
    CHECK(ro == NULL);
    CHECK(strstr(err, "store.lmdb") != NULL);

    /* missing data directory for the writer */
    CHECK(zx_store_open("/nonexistent/zx-dir", 0, 0, &s, err, sizeof(err)) != 0);
    CHECK(s == NULL);
    CHECK_RC(zx_store_open("", 0, 0, &s, err, sizeof(err)), ZX_STORE_INVALID);

    CHECK_RC(zx_store_open(dir, 0, 0, &s, err, sizeof(err)), 0);
    CHECK_RC(zx_store_open(dir, ZX_STORE_RDONLY, 0, &ro, err, sizeof(err)), 0);
    if (!s || !ro)
        goto out;

    /* a read-only handle refuses write transactions */
    zx_store_txn *t = NULL;
    CHECK_RC(zx_store_begin(ro, 0, &t), ZX_STORE_READONLY);
    CHECK(t == NULL);
    /* a read transaction on the writer's handle refuses puts */
    CHECK_RC(zx_store_begin(s, 1, &t), 0);
    CHECK_RC(zx_store_counter_add(t, "p", "rows", 1), ZX_STORE_READONLY);
    zx_store_abort(t);
    /* only one write transaction at a time */
    zx_store_txn *t2 = NULL;
    CHECK_RC(zx_store_begin(s, 0, &t), 0);
    CHECK_RC(zx_store_begin(s, 0, &t2), ZX_STORE_INVALID);
    zx_store_abort(t);
    zx_store_abort(NULL);
out:
    zx_store_close(ro);
    zx_store_close(s);
    zx_store_close(NULL);
    CHECK(strcmp(zx_store_strerror(ZX_STORE_NOSTORE), zx_store_strerror(ZX_STORE_IO)) != 0);
    CHECK(strcmp(zx_store_strerror(99999), "unknown store error") == 0);
}

/* "part=len;" per part, with "(first byte)" for 4-byte values. */
static int part_cb(const char *part, const void *val, size_t len, void *ctx)
{
    char *buf = ctx;
    size_t n = strlen(buf);
    if (len == 4)
        snprintf(buf + n, 256 - n, "%s=%zu(%d);", part, len, ((const unsigned char *)val)[0]);
    else
        snprintf(buf + n, 256 - n, "%s=%zu;", part, len);
    return 0;
}

static int each_cb(const char *name, uint64_t v, void *ctx)
{
    char *buf = ctx;
    char line[128];
    snprintf(line, sizeof(line), "%s=%" PRIu64 ";", name, v);
    strcat(buf, line);
    return 0;
}

static int stop_cb(const char *name, uint64_t v, void *ctx)
{
    (void)name; (void)v;
    ++*(int *)ctx;
    return 7;
}

static void test_roundtrip(void)
{
    zx_store *s = NULL, *ro = NULL;
    zx_store_txn *t = NULL;
    char err[256];

    CHECK_RC(zx_store_open(dir, 0, 0, &s, err, sizeof(err)), 0);
    if (!s)
        return;
    CHECK_RC(zx_store_begin(s, 0, &t), 0);
    zx_position p = { .seq = 42, .committed_us = 1700000000123456, .upstream = "p0:17,p1:9",
                      .upstream_len = 10 };
    CHECK_RC(zx_store_position_put(t, "orders", &p), 0);
    zx_position p2 = { .seq = 1, .committed_us = 5 };
    CHECK_RC(zx_store_position_put(t, "empty-upstream", &p2), 0);
    /* positions per part: the last put of a part wins; "orders2" is apart */
    CHECK_RC(zx_store_position_part_put(t, "orders", "clicks:1", "\x05\0\0\0", 4, 10), 0);
    CHECK_RC(zx_store_position_part_put(t, "orders", "clicks:0", "A", 1, 11), 0);
    CHECK_RC(zx_store_position_part_put(t, "orders", "clicks:1", "\x09\0\0\0", 4, 12), 0);
    CHECK_RC(zx_store_position_part_put(t, "orders", "empty", NULL, 0, 12), 0);
    CHECK_RC(zx_store_position_part_put(t, "orders2", "clicks:0", "B", 1, 13), 0);
    CHECK_RC(zx_store_position_part_put(t, "orders", "", "x", 1, 13), ZX_STORE_INVALID);
    CHECK_RC(zx_store_schema_put(t, "orders", "orders_tbl",
                                 "[{\"name\":\"id\",\"type\":\"integer\"}]"), 0);
    zx_idem_rec r = { .created_us = 1000, .body_hash = 0xdeadbeefcafef00dull,
                      .accepted = 17 };
    snprintf(r.request_id, sizeof(r.request_id), "req-0123456789abcdef");
    CHECK_RC(zx_store_idem_put(t, "orders", "key-1", 5, &r), 0);
    r.created_us = 2000;
    CHECK_RC(zx_store_idem_put(t, "orders", "k\0y", 3, &r), 0); /* NUL inside a key */
    CHECK_RC(zx_store_idem_put(t, "orders2", "key-1", 5, &r), 0);
    CHECK_RC(zx_store_counter_add(t, "orders", "rows", 10), 0);
    CHECK_RC(zx_store_counter_add(t, "orders", "rows", 5), 0);
    CHECK_RC(zx_store_counter_add(t, "orders", "rejects:amount", 2), 0);
    CHECK_RC(zx_store_counter_add(t, "orders2", "rows", 99), 0);
    CHECK_RC(zx_store_state_put(t, "orders", "slot", "abc", 3), 0);

    /* bad arguments and too-long keys: clear errors, no crash, txn usable */
    char longkey[600];
    memset(longkey, 'k', sizeof(longkey));
    CHECK_RC(zx_store_idem_put(t, "orders", longkey, 505, &r), ZX_STORE_KEYTOOLONG);
    CHECK_RC(zx_store_idem_put(t, "orders", longkey, 0, &r), ZX_STORE_INVALID);
    CHECK_RC(zx_store_counter_add(t, "", "rows", 1), ZX_STORE_INVALID);
    CHECK_RC(zx_store_counter_add(t, NULL, "rows", 1), ZX_STORE_INVALID);
    char longpipe[600];
    memset(longpipe, 'p', sizeof(longpipe) - 1);
    longpipe[sizeof(longpipe) - 1] = 0;
    CHECK_RC(zx_store_position_put(t, longpipe, &p), ZX_STORE_KEYTOOLONG);
    CHECK_RC(zx_store_commit(t), 0);

    /* read back through a read-only handle */
    CHECK_RC(zx_store_open(dir, ZX_STORE_RDONLY, 0, &ro, err, sizeof(err)), 0);
    if (!ro)
        goto out;
    CHECK_RC(zx_store_begin(ro, 1, &t), 0);
    zx_position g;
    CHECK_RC(zx_store_position_get(t, "orders", &g), 0);
    CHECK(g.seq == 42 && g.committed_us == 1700000000123456);
    CHECK(g.upstream_len == 10 && memcmp(g.upstream, "p0:17,p1:9", 10) == 0);
    CHECK_RC(zx_store_position_get(t, "empty-upstream", &g), 0);
    CHECK(g.seq == 1 && g.upstream_len == 0 && g.upstream == NULL);
    CHECK_RC(zx_store_position_get(t, "nope", &g), ZX_STORE_NOTFOUND);
    char parts[256] = "";
    CHECK_RC(zx_store_positions_each(t, "orders", part_cb, parts), 0);
    CHECK(strcmp(parts, "clicks:0=1;clicks:1=4(9);empty=0;") == 0);
    parts[0] = 0;
    CHECK_RC(zx_store_positions_each(t, "nope", part_cb, parts), 0);
    CHECK(parts[0] == 0);

    const char *table = NULL, *json = NULL;
    size_t jl = 0;
    CHECK_RC(zx_store_schema_get(t, "orders", &table, &json, &jl), 0);
    CHECK(table && strcmp(table, "orders_tbl") == 0);
    CHECK(json && strcmp(json, "[{\"name\":\"id\",\"type\":\"integer\"}]") == 0);
    CHECK(json && jl == strlen(json));
    CHECK_RC(zx_store_schema_get(t, "nope", &table, &json, &jl), ZX_STORE_NOTFOUND);

    zx_idem_rec got;
    CHECK_RC(zx_store_idem_get(t, "orders", "key-1", 5, &got), 0);
    CHECK(got.created_us == 1000 && got.body_hash == 0xdeadbeefcafef00dull);
    CHECK(got.accepted == 17);
    CHECK(strcmp(got.request_id, "req-0123456789abcdef") == 0);
    CHECK_RC(zx_store_idem_get(t, "orders", "k\0y", 3, &got), 0);
    CHECK(got.created_us == 2000);
    CHECK_RC(zx_store_idem_get(t, "orders", "key-2", 5, &got), ZX_STORE_NOTFOUND);
    CHECK(zx_store_idem_count(t, "orders") == 2);
    CHECK(zx_store_idem_count(t, "orders2") == 1);
    CHECK(zx_store_idem_count(t, "order") == 0);

    uint64_t v = 1;
    CHECK_RC(zx_store_counter_get(t, "orders", "rows", &v), 0);
    CHECK(v == 15);
    CHECK_RC(zx_store_counter_get(t, "orders", "nope", &v), ZX_STORE_NOTFOUND);
    CHECK(v == 0);
    char buf[512] = "";
    CHECK_RC(zx_store_counters_each(t, "orders", each_cb, buf), 0);
    CHECK(strcmp(buf, "rejects:amount=2;rows=15;") == 0);
    int calls = 0;
    CHECK_RC(zx_store_counters_each(t, "orders", stop_cb, &calls), 7);
    CHECK(calls == 1);

    const void *sv = NULL;
    size_t sl = 0;
    CHECK_RC(zx_store_state_get(t, "orders", "slot", &sv, &sl), 0);
    CHECK(sl == 3 && memcmp(sv, "abc", 3) == 0);
    CHECK_RC(zx_store_commit(t), 0);

    /* drop a pipeline: everything of it goes, others stay */
    CHECK_RC(zx_store_begin(s, 0, &t), 0);
    CHECK_RC(zx_store_pipeline_drop(t, "orders"), 0);
    CHECK_RC(zx_store_pipeline_drop(t, "never-existed"), 0);
    CHECK_RC(zx_store_commit(t), 0);
    CHECK_RC(zx_store_begin(ro, 1, &t), 0);
    CHECK_RC(zx_store_position_get(t, "orders", &g), ZX_STORE_NOTFOUND);
    parts[0] = 0;
    CHECK_RC(zx_store_positions_each(t, "orders", part_cb, parts), 0);
    CHECK(parts[0] == 0);
    CHECK_RC(zx_store_positions_each(t, "orders2", part_cb, parts), 0);
    CHECK(strcmp(parts, "clicks:0=1;") == 0);
    CHECK_RC(zx_store_schema_get(t, "orders", NULL, NULL, NULL), ZX_STORE_NOTFOUND);
    CHECK(zx_store_idem_count(t, "orders") == 0);
    CHECK(zx_store_idem_count(t, "orders2") == 1);
    CHECK_RC(zx_store_counter_get(t, "orders", "rows", &v), ZX_STORE_NOTFOUND);
    CHECK_RC(zx_store_counter_get(t, "orders2", "rows", &v), 0);
    CHECK(v == 99);
    CHECK_RC(zx_store_state_get(t, "orders", "slot", &sv, &sl), ZX_STORE_NOTFOUND);
    zx_store_abort(t);
out:
    zx_store_close(ro);
    zx_store_close(s);
}

static void test_prune(void)
{
    zx_store *s = NULL;
    zx_store_txn *t = NULL;
    char err[256];
    CHECK_RC(zx_store_open(dir, 0, 0, &s, err, sizeof(err)), 0);
    if (!s)
        return;
    CHECK_RC(zx_store_begin(s, 0, &t), 0);
    CHECK_RC(zx_store_pipeline_drop(t, "orders2"), 0);
    /* 3000 keys over two pipelines; even created_us are "old" */
    for (int i = 0; i < 3000; i++) {
        char key[32];
        int n = snprintf(key, sizeof(key), "key-%05d", i);
        zx_idem_rec r = { .created_us = (i % 2) ? 1000000 : 10 };
        CHECK_RC(zx_store_idem_put(t, (i % 3) ? "a" : "b", key, (size_t)n, &r), 0);
    }
    CHECK_RC(zx_store_commit(t), 0);

    /* bounded passes: 1000 records examined per call */
    uint64_t removed = 0;
    for (int pass = 0; pass < 3; pass++) {
        CHECK_RC(zx_store_begin(s, 0, &t), 0);
        uint64_t before = removed;
        CHECK_RC(zx_store_idem_prune(t, 500, 1000, &removed), 0);
        CHECK(removed - before <= 1000);
        CHECK_RC(zx_store_commit(t), 0);
    }
    CHECK(removed == 1500);
    CHECK_RC(zx_store_begin(s, 0, &t), 0);
    CHECK(zx_store_idem_count(t, "a") + zx_store_idem_count(t, "b") == 1500);
    zx_idem_rec got;
    CHECK_RC(zx_store_idem_get(t, "a", "key-00001", 9, &got), 0);
    CHECK_RC(zx_store_idem_get(t, "a", "key-00002", 9, &got), ZX_STORE_NOTFOUND);
    /* unbounded: everything older than 2000000 */
    removed = 0;
    CHECK_RC(zx_store_idem_prune(t, 2000000, 0, &removed), 0);
    CHECK(removed == 1500);
    CHECK(zx_store_idem_count(t, "a") == 0);
    CHECK_RC(zx_store_commit(t), 0);
    zx_store_close(s);
}

/* Write until the tiny map fills, growing and redoing as documented. */
static void test_map_growth(void)
{
    zx_store *s = NULL, *ro = NULL;
    zx_store_txn *t = NULL;
    char err[256];
    char val[2000];
    cleanup_dir();
    CHECK(mkdir(dir, 0700) == 0);
    CHECK_RC(zx_store_open(dir, 0, 64 * 1024, &s, err, sizeof(err)), 0);
    if (!s)
        return;
    CHECK_RC(zx_store_open(dir, ZX_STORE_RDONLY, 0, &ro, err, sizeof(err)), 0);
    size_t initial = zx_store_mapsize(s);
    int fulls = 0, batch = 0;
    const int nbatches = 40, per = 50;
    while (batch < nbatches) {
        int rc = zx_store_begin(s, 0, &t);
        CHECK_RC(rc, 0);
        if (rc)
            break;
        for (int i = 0; i < per && rc == 0; i++) {
            char name[32];
            snprintf(name, sizeof(name), "v%04d", batch * per + i);
            memset(val, 'a' + (batch * per + i) % 26, sizeof(val));
            rc = zx_store_state_put(t, "grow", name, val, sizeof(val));
            if (rc == 0)
                rc = zx_store_counter_add(t, "grow", "n", 1);
        }
        if (rc == ZX_STORE_MAP_FULL) {
            fulls++;
            CHECK_RC(zx_store_commit(t), ZX_STORE_MAP_FULL); /* dead txn */
            continue;                                        /* redo it */
        }
        CHECK_RC(rc, 0);
        rc = zx_store_commit(t);
        if (rc == ZX_STORE_MAP_FULL) {
            fulls++;
            continue;
        }
        CHECK_RC(rc, 0);
        batch++;
        /* a reader opened at the small size follows the growth */
        zx_store_txn *rt = NULL;
        CHECK_RC(zx_store_begin(ro, 1, &rt), 0);
        if (rt) {
            uint64_t n = 0;
            CHECK_RC(zx_store_counter_get(rt, "grow", "n", &n), 0);
            CHECK(n == (uint64_t)(batch * per));
            zx_store_abort(rt);
        }
        if (fulls > 100)
            break;
    }
    CHECK(fulls > 0);
    CHECK(zx_store_mapsize(s) > initial);
    zx_store_close(ro);
    zx_store_close(s);

    /* reopen (with the tiny size again) and read everything back */
    s = NULL;
    CHECK_RC(zx_store_open(dir, 0, 64 * 1024, &s, err, sizeof(err)), 0);
    if (!s)
        return;
    CHECK_RC(zx_store_begin(s, 1, &t), 0);
    uint64_t n = 0;
    CHECK_RC(zx_store_counter_get(t, "grow", "n", &n), 0);
    CHECK(n == (uint64_t)(nbatches * per));
    int bad = 0;
    for (int i = 0; i < nbatches * per; i++) {
        char name[32];
        const void *v = NULL;
        size_t l = 0;
        snprintf(name, sizeof(name), "v%04d", i);
        if (zx_store_state_get(t, "grow", name, &v, &l) != 0 || l != sizeof(val) ||
            ((const char *)v)[0] != 'a' + i % 26 || ((const char *)v)[l - 1] != 'a' + i % 26)
            bad++;
    }
    CHECK(bad == 0);
    zx_store_abort(t);
    /* and keep writing after the reopen */
    CHECK_RC(zx_store_begin(s, 0, &t), 0);
    CHECK_RC(zx_store_counter_add(t, "grow", "n", 1), 0);
    CHECK_RC(zx_store_commit(t), 0);
    zx_store_close(s);
}

/* ZX_STORE_NOMETASYNC (the writer's flag with synchronous "normal"): the
 * store works the same and what it committed is there after a reopen
 * without the flag; the file has mode 0640 (less the umask), the mode of
 * the SQLite workspace too. */
static void test_nometasync(void)
{
    zx_store *s = NULL;
    zx_store_txn *t = NULL;
    char err[256] = "";
    uint64_t v = 0;
    mode_t old = umask(022);
    CHECK_RC(zx_store_open(dir, ZX_STORE_NOMETASYNC, 0, &s, err, sizeof(err)), 0);
    CHECK_RC(zx_store_begin(s, 0, &t), 0);
    CHECK_RC(zx_store_counter_add(t, "nms", "n", 7), 0);
    CHECK_RC(zx_store_commit(t), 0);
    zx_store_close(s);
    CHECK_RC(zx_store_open(dir, 0, 0, &s, err, sizeof(err)), 0);
    CHECK_RC(zx_store_begin(s, 1, &t), 0);
    CHECK_RC(zx_store_counter_get(t, "nms", "n", &v), 0);
    CHECK(v == 7);
    zx_store_abort(t);
    zx_store_close(s);
    char p[512];
    struct stat st;
    snprintf(p, sizeof(p), "%s/store.lmdb", dir);
    CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0640);
    umask(old);
}

/* Reverse syncs: row hashes by key hash (put, get, scan in order from a
 * key, delete, clear, count; another sync untouched) and runs (newest
 * first, per sync and all, pruned). */
typedef struct scan_acc {
    unsigned char kh[64][ZX_KEYHASH_LEN];
    uint64_t rh[64];
    size_t n;
} scan_acc;

static int scan_acc_cb(const unsigned char *kh, uint64_t rh, const char *kv, size_t kvlen,
                       void *ctx)
{
    scan_acc *a = ctx;
    (void)kv;
    (void)kvlen;
    if (a->n < 64) {
        memcpy(a->kh[a->n], kh, ZX_KEYHASH_LEN);
        a->rh[a->n++] = rh;
    }
    return 0;
}

typedef struct run_acc {
    char names[16][16];
    uint64_t ids[16];
    size_t n;
} run_acc;

static int run_acc_cb(const char *sync, uint64_t id, const char *json, size_t len, void *ctx)
{
    run_acc *a = ctx;
    (void)json;
    (void)len;
    if (a->n < 16) {
        snprintf(a->names[a->n], sizeof(a->names[0]), "%s", sync);
        a->ids[a->n++] = id;
    }
    return 0;
}

static void test_syncs(void)
{
    zx_store *s = NULL;
    zx_store_txn *t = NULL;
    char err[256];
    CHECK_RC(zx_store_open(dir, 0, 0, &s, err, sizeof(err)), 0);
    if (!s)
        return;
    unsigned char kh[5][ZX_KEYHASH_LEN];
    for (int i = 0; i < 5; i++) {
        memset(kh[i], 0, ZX_KEYHASH_LEN);
        kh[i][0] = (unsigned char)(0x10 * (5 - i));   /* put out of order */
        kh[i][15] = (unsigned char)i;
        kh[i][7] = 0;                                 /* NUL bytes inside a key */
    }
    CHECK_RC(zx_store_begin(s, 0, &t), 0);
    for (int i = 0; i < 5; i++)
        CHECK_RC(zx_store_hash_put(t, "crm", kh[i], 100 + (uint64_t)i, "[1]", 3), 0);
    CHECK_RC(zx_store_hash_put(t, "crm2", kh[0], 7, NULL, 0), 0);
    CHECK_RC(zx_store_hash_put(t, "cr", kh[0], 8, NULL, 0), 0);
    CHECK_RC(zx_store_commit(t), 0);

    CHECK_RC(zx_store_begin(s, 1, &t), 0);
    uint64_t rh = 0;
    const char *kv = NULL;
    size_t kvlen = 0;
    CHECK_RC(zx_store_hash_get(t, "crm", kh[2], &rh, &kv, &kvlen), 0);
    CHECK(rh == 102 && kvlen == 3 && kv && !memcmp(kv, "[1]", 3));
    unsigned char none[ZX_KEYHASH_LEN] = {1};
    CHECK_RC(zx_store_hash_get(t, "crm", none, &rh, NULL, NULL), ZX_STORE_NOTFOUND);
    CHECK(zx_store_hashes_count(t, "crm") == 5);
    CHECK(zx_store_hashes_count(t, "cr") == 1);
    scan_acc a = {0};
    size_t visited = 0;
    CHECK_RC(zx_store_hashes_scan(t, "crm", NULL, 0, scan_acc_cb, &a, &visited), 0);
    CHECK(a.n == 5 && visited == 5);
    for (size_t i = 1; i < a.n; i++)
        CHECK(memcmp(a.kh[i - 1], a.kh[i], ZX_KEYHASH_LEN) < 0);   /* key-hash order */
    /* resumed after the second, two at a time */
    scan_acc b = {0};
    CHECK_RC(zx_store_hashes_scan(t, "crm", a.kh[1], 2, scan_acc_cb, &b, &visited), 0);
    CHECK(b.n == 2 && visited == 2 && !memcmp(b.kh[0], a.kh[2], ZX_KEYHASH_LEN) &&
          !memcmp(b.kh[1], a.kh[3], ZX_KEYHASH_LEN));
    scan_acc c = {0};
    CHECK_RC(zx_store_hashes_scan(t, "crm", a.kh[4], 10, scan_acc_cb, &c, &visited), 0);
    CHECK(c.n == 0 && visited == 0);
    zx_store_abort(t);

    CHECK_RC(zx_store_begin(s, 0, &t), 0);
    CHECK_RC(zx_store_hash_del(t, "crm", kh[2]), 0);
    CHECK_RC(zx_store_hash_del(t, "crm", kh[2]), 0);   /* again: fine */
    CHECK_RC(zx_store_hash_put(t, "crm", kh[1], 999, "[2]", 3), 0);   /* replaced */
    for (uint64_t id = 1; id <= 5; id++)
        CHECK_RC(zx_store_run_put(t, "crm", id * 1000, "{\"a\":1}", 7), 0);
    CHECK_RC(zx_store_run_put(t, "crm2", 2500, "{}", 2), 0);
    CHECK_RC(zx_store_run_put(t, "cr", 9000, "{}", 2), 0);
    CHECK_RC(zx_store_commit(t), 0);

    CHECK_RC(zx_store_begin(s, 1, &t), 0);
    CHECK(zx_store_hashes_count(t, "crm") == 4);
    CHECK_RC(zx_store_hash_get(t, "crm", kh[1], &rh, NULL, NULL), 0);
    CHECK(rh == 999);
    run_acc r = {0};
    CHECK_RC(zx_store_runs_each(t, "crm", run_acc_cb, &r), 0);
    CHECK(r.n == 5 && r.ids[0] == 5000 && r.ids[4] == 1000);   /* newest first */
    run_acc all = {0};
    CHECK_RC(zx_store_runs_each(t, NULL, run_acc_cb, &all), 0);
    CHECK(all.n == 7);
    run_acc one = {0};
    CHECK_RC(zx_store_runs_each(t, "cr", run_acc_cb, &one), 0);
    CHECK(one.n == 1 && one.ids[0] == 9000);
    zx_store_abort(t);

    CHECK_RC(zx_store_begin(s, 0, &t), 0);
    uint64_t removed = 0;
    CHECK_RC(zx_store_runs_prune(t, "crm", 2, &removed), 0);
    CHECK(removed == 3);
    CHECK_RC(zx_store_hashes_clear(t, "crm"), 0);
    CHECK_RC(zx_store_commit(t), 0);
    CHECK_RC(zx_store_begin(s, 1, &t), 0);
    run_acc left = {0};
    CHECK_RC(zx_store_runs_each(t, "crm", run_acc_cb, &left), 0);
    CHECK(left.n == 2 && left.ids[0] == 5000 && left.ids[1] == 4000);
    CHECK(zx_store_hashes_count(t, "crm") == 0);
    CHECK(zx_store_hashes_count(t, "crm2") == 1);   /* another sync untouched */
    zx_store_abort(t);
    zx_store_close(s);
}

/* zx_store_hashes_write: puts in key-hash order (and out of it), a put
 * that replaces, deletes of a present and an absent key, beside another
 * sync's keys on both sides, through one cursor; the same records as
 * zx_store_hash_put would leave.  And zx_store_state_del. */
static void test_hashes_write(void)
{
    zx_store *s = NULL;
    zx_store_txn *t = NULL;
    char err[256];
    CHECK_RC(zx_store_open(dir, 0, 0, &s, err, sizeof(err)), 0);
    if (!s)
        return;
    enum { N = 3000 };
    static zx_store_hash_rec r[N];
    static char kvs[N][16];
    for (int i = 0; i < N; i++) {
        memset(&r[i], 0, sizeof(r[i]));
        r[i].kh[0] = (unsigned char)(i >> 8);
        r[i].kh[1] = (unsigned char)i;
        r[i].kh[9] = 0x5a;
        r[i].row_hash = 1000 + (uint64_t)i;
        r[i].kvlen = (size_t)snprintf(kvs[i], sizeof(kvs[i]), "[%d]", i);
        r[i].kv = kvs[i];
    }
    CHECK_RC(zx_store_begin(s, 0, &t), 0);
    CHECK_RC(zx_store_hashes_write(t, "hw_a", r, 10), 0);     /* neighbours before */
    CHECK_RC(zx_store_hashes_write(t, "hw_c", r, 10), 0);     /* and after */
    CHECK_RC(zx_store_hashes_write(t, "hw_b", r, N / 2), 0);
    CHECK_RC(zx_store_commit(t), 0);
    CHECK_RC(zx_store_begin(s, 0, &t), 0);
    CHECK_RC(zx_store_hashes_write(t, "hw_b", r + N / 2, N - N / 2), 0);
    /* out of order, a replacement, a delete present and absent */
    zx_store_hash_rec more[4];
    memset(more, 0, sizeof(more));
    more[0] = r[N - 1];
    more[0].row_hash = 7;
    more[1] = r[5];
    more[1].del = 1;
    memcpy(more[2].kh, r[6].kh, ZX_KEYHASH_LEN);
    more[2].kh[15] = 1;                                        /* never stored */
    more[2].del = 1;
    more[3] = r[0];
    more[3].kv = NULL;
    more[3].kvlen = 0;
    more[3].row_hash = 9;
    CHECK_RC(zx_store_hashes_write(t, "hw_b", more, 4), 0);
    CHECK_RC(zx_store_hashes_write(t, "hw_b", NULL, 0), 0);
    zx_store_hash_rec bad = r[1];
    bad.kv = NULL;
    CHECK_RC(zx_store_hashes_write(t, "hw_b", &bad, 1), ZX_STORE_INVALID);
    CHECK_RC(zx_store_state_put(t, "hw_b", "x", "1", 1), 0);
    CHECK_RC(zx_store_commit(t), 0);

    CHECK_RC(zx_store_begin(s, 0, &t), 0);
    CHECK(zx_store_hashes_count(t, "hw_b") == N - 1);
    CHECK(zx_store_hashes_count(t, "hw_a") == 10 && zx_store_hashes_count(t, "hw_c") == 10);
    uint64_t rh = 0;
    const char *kv = NULL;
    size_t kvlen = 0;
    CHECK_RC(zx_store_hash_get(t, "hw_b", r[N - 1].kh, &rh, NULL, NULL), 0);
    CHECK(rh == 7);
    CHECK_RC(zx_store_hash_get(t, "hw_b", r[0].kh, &rh, &kv, &kvlen), 0);
    CHECK(rh == 9 && kvlen == 0);
    CHECK_RC(zx_store_hash_get(t, "hw_b", r[5].kh, &rh, NULL, NULL), ZX_STORE_NOTFOUND);
    CHECK_RC(zx_store_hash_get(t, "hw_b", r[1234].kh, &rh, &kv, &kvlen), 0);
    CHECK(rh == 2234 && kvlen == strlen(kvs[1234]) && !memcmp(kv, kvs[1234], kvlen));
    const void *v = NULL;
    size_t len = 0;
    CHECK_RC(zx_store_state_get(t, "hw_b", "x", &v, &len), 0);
    CHECK_RC(zx_store_state_del(t, "hw_b", "x"), 0);
    CHECK_RC(zx_store_state_del(t, "hw_b", "x"), 0);          /* absent: fine */
    CHECK_RC(zx_store_state_get(t, "hw_b", "x", &v, &len), ZX_STORE_NOTFOUND);
    CHECK_RC(zx_store_hashes_clear(t, "hw_a"), 0);
    CHECK_RC(zx_store_hashes_clear(t, "hw_b"), 0);
    CHECK_RC(zx_store_hashes_clear(t, "hw_c"), 0);
    CHECK_RC(zx_store_commit(t), 0);
    zx_store_close(s);
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/zx-test-store-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_open();
    test_roundtrip();
    test_prune();
    test_map_growth();
    test_nometasync();
    test_syncs();
    test_hashes_write();
    cleanup_dir();
    if (failures) {
        printf("test_store: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_store: all checks passed\n");
    return 0;
}
