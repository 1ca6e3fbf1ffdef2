/*
 * test_sync_core.c — the parts of a sync run that need no database: key and
 * row hashes (what changes them, what does not), keys as JSON and back,
 * spill files (records back in order; a truncated file is an error), and
 * the external key sorter (several runs on disk merged in key-hash order,
 * duplicates one after the other).
 */
#include <errno.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "workers/syncs/hash.h"
#include "workers/syncs/spill.h"

static zx_value v_int(int64_t i)
{
    zx_value v = {.type = ZX_T_INT};
    v.u.i = i;
    return v;
}

static zx_value v_text(const char *s)
{
    zx_value v = {.type = ZX_T_TEXT, .len = (uint32_t)strlen(s), .s = s};
    return v;
}

static void test_hashes(void)
{
    zx_buf sc = {0};
    size_t k0[] = {0}, k01[] = {0, 1};
    unsigned char a[16], b[16];
    zx_value r1[] = {v_text("ab"), v_text("c")}, r2[] = {v_text("a"), v_text("bc")};
    CHECK(zx_sync_key_hash(r1, k01, 2, &sc, a) == 0);
    CHECK(zx_sync_key_hash(r2, k01, 2, &sc, b) == 0);
    CHECK(memcmp(a, b, 16) != 0);                 /* ("ab","c") != ("a","bc") */
    zx_value i1[] = {v_int(1)}, t1[] = {v_text("1")};
    CHECK(zx_sync_key_hash(i1, k0, 1, &sc, a) == 0);
    CHECK(zx_sync_key_hash(t1, k0, 1, &sc, b) == 0);
    CHECK(memcmp(a, b, 16) != 0);                 /* 1 != "1" */
    CHECK(zx_sync_key_hash(i1, k0, 1, &sc, b) == 0);
    CHECK(memcmp(a, b, 16) == 0);                 /* stable */

    zx_dcol c1[] = {{"id", ZX_DT_INT64, 0, 0}, {"x", ZX_DT_TEXT, 0, 0}};
    zx_dcol c2[] = {{"id", ZX_DT_INT64, 0, 0}, {"y", ZX_DT_TEXT, 0, 0}};
    uint64_t s1 = zx_sync_columns_seed(c1, 2), s2 = zx_sync_columns_seed(c2, 2), h1, h2, h3;
    CHECK(s1 != s2);                              /* a renamed column sends again */
    zx_value row[] = {v_int(1), v_text("x")}, row2[] = {v_int(1), v_text("y")};
    zx_value nul[] = {v_int(1), {0}};
    CHECK(zx_sync_row_hash(row, 2, s1, &sc, &h1) == 0);
    CHECK(zx_sync_row_hash(row2, 2, s1, &sc, &h2) == 0);
    CHECK(zx_sync_row_hash(nul, 2, s1, &sc, &h3) == 0);
    CHECK(h1 != h2 && h1 != h3 && h2 != h3);
    zx_value z1[] = {{.type = ZX_T_REAL}}, z2[] = {{.type = ZX_T_REAL}};
    z1[0].u.d = 0.0;
    z2[0].u.d = -0.0;
    CHECK(zx_sync_row_hash(z1, 1, 0, &sc, &h1) == 0 && zx_sync_row_hash(z2, 1, 0, &sc, &h2) == 0);
    CHECK(h1 == h2);                              /* -0 and 0 are one value */

    /* the values stored by earlier versions: a hash must never change
     * (a stored one would no longer compare equal: every row sent again) */
    zx_value all[] = {v_int(-7), v_text("user1@example.com"), {.type = ZX_T_REAL},
                      {.type = ZX_T_BOOL}, {.type = ZX_T_TIMESTAMP}, {.type = ZX_T_JSON},
                      {0}, {.type = ZX_T_REAL}, v_text("")};
    all[2].u.d = 12.5;
    all[3].u.b = 1;
    all[4].u.i = 1767225600000000;
    all[5].s = "{\"a\":1}";
    all[5].len = 7;
    all[7].u.d = NAN;
    size_t kall[] = {1, 0};
    CHECK(zx_sync_row_hash(all, 9, s1, &sc, &h1) == 0);
    CHECK(zx_sync_key_hash(all, kall, 2, &sc, a) == 0);
    static const unsigned char kgold[16] = {0x62, 0x29, 0x20, 0xa8, 0x81, 0xf7, 0x07, 0x7b,
                                            0x99, 0x3d, 0x52, 0x70, 0xd7, 0x0e, 0xcb, 0xf7};
    CHECK(h1 == 0x8e60168dcc6e2157ull);
    CHECK(!memcmp(a, kgold, 16));
    /* both at once: the same values */
    memset(a, 0, sizeof(a));
    h1 = 0;
    CHECK(zx_sync_row_key_hash(all, 9, s1, kall, 2, &sc, &h1, a) == 0);
    CHECK(h1 == 0x8e60168dcc6e2157ull);
    CHECK(!memcmp(a, kgold, 16));

    /* keys as JSON, and back */
    zx_value key[] = {v_int(-42), v_text("a\"b\\c\n\x01"), {.type = ZX_T_BOOL}, {0},
                      {.type = ZX_T_REAL}};
    key[2].u.b = 1;
    key[4].u.d = 2.0;
    size_t idx[] = {0, 1, 2, 3, 4};
    zx_buf js = {0};
    CHECK(zx_sync_key_json(key, idx, 5, &js) == 0);
    static const char want[] = "[-42,\"a\\\"b\\\\c\\u000a\\u0001\",true,null,2.0]";
    CHECK(js.len == strlen(want) && !memcmp(js.p, want, js.len));
    const char *names[] = {"a", "b", "c", "d", "e"};
    zx_rowset rs;
    zx_rowset_init(&rs);
    char err[200];
    CHECK(zx_sync_key_from_json(js.p, js.len, names, 5, &rs, err, sizeof(err)) == 0);
    CHECK(rs.nrows == 1 && rs.ncols == 5);
    zx_value back[5];
    zx_rowset_row(&rs, 0, back);
    CHECK(back[0].type == ZX_T_INT && back[0].u.i == -42);
    CHECK(back[1].type == ZX_T_TEXT && back[1].len == 7 && !memcmp(back[1].s, "a\"b\\c\n\x01", 7));
    CHECK(back[2].type == ZX_T_BOOL && back[2].u.b == 1);
    CHECK(back[3].type == ZX_T_NULL);
    CHECK(back[4].type == ZX_T_REAL && back[4].u.d == 2.0);
    CHECK(zx_sync_key_from_json("[1]", 3, names, 2, &rs, err, sizeof(err)) < 0);
    CHECK(zx_sync_key_from_json("{}", 2, names, 1, &rs, err, sizeof(err)) < 0);
    CHECK(zx_sync_key_from_json("[[1]]", 5, names, 1, &rs, err, sizeof(err)) < 0);
    CHECK(zx_sync_key_from_json("[1", 2, names, 1, &rs, err, sizeof(err)) < 0);
    zx_rowset_free(&rs);
    zx_buf_free(&js);
    zx_buf_free(&sc);
}

static void test_spill(const char *dir)
{
    zx_spill sp;
    char err[300];
    zx_buf rec = {0};
    CHECK(zx_spill_open(&sp, dir, NULL, err, sizeof(err)) == 0);
    for (int i = 0; i < 1000; i++) {
        char a[32];
        int n = snprintf(a, sizeof(a), "rec-%d", i);
        CHECK(zx_spill_put(&sp, a, (size_t)n, i % 2 ? "!" : NULL, i % 2 ? 1 : 0) == 0);
    }
    CHECK(zx_spill_put(&sp, NULL, 0, NULL, 0) == 0);   /* an empty record */
    CHECK(zx_spill_rewind(&sp) == 0);
    for (int i = 0; i < 1000; i++) {
        char a[32];
        int n = snprintf(a, sizeof(a), "rec-%d%s", i, i % 2 ? "!" : "");
        CHECK(zx_spill_get(&sp, &rec) == 1 && rec.len == (size_t)n && !memcmp(rec.p, a, rec.len));
    }
    CHECK(zx_spill_get(&sp, &rec) == 1 && rec.len == 0);
    CHECK(zx_spill_get(&sp, &rec) == 0);
    CHECK(zx_spill_put(&sp, "x", 1, NULL, 0) < 0);      /* no writes while reading */
    /* a file cut in the middle of a record */
    CHECK(ftruncate(sp.fd, 5) == 0);
    CHECK(zx_spill_rewind(&sp) == 0);
    CHECK(zx_spill_get(&sp, &rec) < 0);
    zx_spill_close(&sp);
    zx_spill_close(&sp);                                /* twice: fine */
    CHECK(zx_spill_open(&sp, "/proc/nope/x", NULL, err, sizeof(err)) < 0 && strstr(err, "/proc/nope"));
    zx_buf_free(&rec);
}

/* Records across the spill's 1 MiB buffer, and larger than it. */
static void test_spill_big(const char *dir)
{
    zx_spill sp;
    char err[300];
    zx_buf rec = {0};
    size_t big = 3u << 20;
    char *b = malloc(big), part[1000];
    CHECK(b != NULL);
    if (!b)
        return;
    for (size_t i = 0; i < big; i++)
        b[i] = (char)(i * 31 + 7);
    CHECK(zx_spill_open(&sp, dir, NULL, err, sizeof(err)) == 0);
    for (int i = 0; i < 2000; i++) {
        memset(part, 'a' + i % 26, sizeof(part));
        CHECK(zx_spill_put(&sp, part, (size_t)(i % 1000), b, 1 + (size_t)i % 7) == 0);
        if (i == 1500)
            CHECK(zx_spill_put(&sp, b, big - 10, b + big - 10, 10) == 0);
    }
    CHECK(zx_spill_rewind(&sp) == 0);
    for (int i = 0; i < 2000; i++) {
        size_t n = (size_t)(i % 1000), m = 1 + (size_t)i % 7;
        memset(part, 'a' + i % 26, sizeof(part));
        CHECK(zx_spill_get(&sp, &rec) == 1 && rec.len == n + m && !memcmp(rec.p, part, n) &&
              !memcmp(rec.p + n, b, m));
        if (i == 1500)
            CHECK(zx_spill_get(&sp, &rec) == 1 && rec.len == big && !memcmp(rec.p, b, big));
    }
    CHECK(zx_spill_get(&sp, &rec) == 0);
    CHECK(sp.records == 2001);
    zx_spill_close(&sp);
    zx_buf_free(&rec);
    free(b);
}

/* Two spills share one budget: the put that would pass it is refused
 * whole (EFBIG), the budget says so, and what was written reads back. */
static void test_spill_budget(const char *dir)
{
    zx_spill a, b;
    zx_spill_budget bud = {.limit = 100};
    char err[300];
    zx_buf rec = {0};
    CHECK(zx_spill_open(&a, dir, &bud, err, sizeof(err)) == 0);
    CHECK(zx_spill_open(&b, dir, &bud, err, sizeof(err)) == 0);
    CHECK(zx_spill_put(&a, "0123456789", 10, NULL, 0) == 0);        /* 14 bytes */
    CHECK(zx_spill_put(&b, "0123456789012345678901234567890123456789", 40, NULL, 0) == 0);
    CHECK(bud.used == 58 && !bud.exceeded);
    /* 58 + 4 + 41 = 103 > 100: refused, nothing of it written */
    errno = 0;
    CHECK(zx_spill_put(&b, "0123456789012345678901234567890123456789", 40, "x", 1) < 0);
    CHECK(errno == EFBIG && bud.exceeded && bud.used == 58);
    CHECK(zx_spill_put(&a, "0123456789", 10, NULL, 0) == 0 && bud.used == 72);  /* still fits */
    CHECK(zx_spill_rewind(&b) == 0);
    CHECK(zx_spill_get(&b, &rec) == 1 && rec.len == 40);
    CHECK(zx_spill_get(&b, &rec) == 0);
    zx_spill_close(&a);
    zx_spill_close(&b);
    zx_buf_free(&rec);
}


static void test_keysort(const char *dir, size_t nkeys, size_t mem)
{
    char err[300];
    zx_keysort *k = zx_keysort_new(dir, mem, NULL);
    CHECK(k != NULL);
    if (!k)
        return;
    srand(7);
    for (size_t i = 0; i < nkeys; i++) {
        unsigned char kh[16];
        char kv[32];
        uint32_t x = (uint32_t)(i * 2654435761u);
        /* every 1000th key twice */
        size_t id = i % 1000 == 999 ? i - 1 : i;
        uint32_t y = (uint32_t)(id * 2654435761u);
        memset(kh, 0, sizeof(kh));
        memcpy(kh, &y, 4);
        memcpy(kh + 4, &id, sizeof(id) < 12 ? sizeof(id) : 12);
        (void)x;
        int n = snprintf(kv, sizeof(kv), "[%zu]", id);
        CHECK(zx_keysort_add(k, kh, kv, (size_t)n, err, sizeof(err)) == 0);
    }
    CHECK(zx_keysort_count(k) == nkeys);
    CHECK(zx_keysort_finish(k, err, sizeof(err)) == 0);
    const unsigned char *kh, *prev = NULL;
    unsigned char last[16];
    const char *kv;
    size_t kvlen, n = 0, dups = 0;
    int g;
    while ((g = zx_keysort_next(k, &kh, &kv, &kvlen, err, sizeof(err))) == 1) {
        if (prev) {
            int c = memcmp(last, kh, 16);
            CHECK(c <= 0);
            if (c == 0)
                dups++;
        }
        /* each key still has its own JSON (the sort moves both) */
        size_t id = 0;
        char want[32];
        memcpy(&id, kh + 4, sizeof(id) < 12 ? sizeof(id) : 12);
        int wn = snprintf(want, sizeof(want), "[%zu]", id);
        CHECK(kvlen == (size_t)wn && !memcmp(kv, want, kvlen));
        memcpy(last, kh, 16);
        prev = last;
        n++;
    }
    CHECK(g == 0);
    CHECK(n == nkeys);
    CHECK(dups == nkeys / 1000);
    zx_keysort_free(k);
}

/* Many keys with one hash (a result whose keys all repeat): equal hashes
 * come out together, ordered by their bytes. */
static void test_keysort_same_hash(const char *dir)
{
    char err[300];
    zx_keysort *k = zx_keysort_new(dir, 64u << 20, NULL);
    CHECK(k != NULL);
    if (!k)
        return;
    for (size_t i = 0; i < 20000; i++) {
        unsigned char kh[16];
        char kv[32];
        memset(kh, i % 2 ? 0x11 : 0x22, sizeof(kh));
        int n = snprintf(kv, sizeof(kv), "[%zu]", (i * 7919) % 20000);
        CHECK(zx_keysort_add(k, kh, kv, (size_t)n, err, sizeof(err)) == 0);
    }
    CHECK(zx_keysort_finish(k, err, sizeof(err)) == 0);
    const unsigned char *kh;
    const char *kv;
    size_t kvlen, n = 0;
    char last[32] = "";
    unsigned char lastkh = 0;
    int g;
    while ((g = zx_keysort_next(k, &kh, &kv, &kvlen, err, sizeof(err))) == 1) {
        char cur[32];
        snprintf(cur, sizeof(cur), "%.*s", (int)kvlen, kv);
        CHECK(kh[0] == (n < 10000 ? 0x11 : 0x22));
        if (n && kh[0] == lastkh)
            CHECK(strcmp(last, cur) < 0);
        memcpy(last, cur, sizeof(cur));
        lastkh = kh[0];
        n++;
    }
    CHECK(g == 0 && n == 20000);
    zx_keysort_free(k);
}

int main(void)
{
    char dir[] = "/tmp/zx-test-sync-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    test_hashes();
    test_spill(dir);
    test_spill_big(dir);
    test_spill_budget(dir);
    test_keysort(dir, 5000, 1 << 20);          /* in memory */
    test_keysort(dir, 200000, 1 << 20);        /* several runs on disk */
    test_keysort(dir, 300000, 64u << 20);      /* in memory, radix-sorted */
    test_keysort_same_hash(dir);
    rmdir(dir);
    if (failures) {
        printf("test_sync_core: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_sync_core: all checks passed\n");
    return 0;
}
