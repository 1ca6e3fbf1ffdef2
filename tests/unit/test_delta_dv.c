/*
 * test_delta_dv.c — Delta deletion vectors (workers/destinations/delta/
 * delta_dv.h) and Z85 (common/z85.h): round trips at the containers'
 * boundaries and over several buckets, random sets, the examples of
 * Delta's PROTOCOL.md and of ZeroMQ's RFC 32, a run-container bitmap built
 * by hand, the decoder's refusals (every truncation of valid encodings
 * included) and the DV file format.  Must not depend on timing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/z85.h"
#include "workers/destinations/delta/delta_dv.h"

#include "tests/unit/check.h"

/* 1 if pos[0..n) encodes, and decodes back to itself (max_pos: its last
 * value). */
static int round_trip(const uint64_t *pos, size_t n)
{
    zx_buf b = {0};
    if (zx_dv_encode(pos, n, &b) < 0)
        return 0;
    uint64_t *got = NULL;
    size_t gn = 0;
    char err[200] = "";
    int ok = zx_dv_decode(b.p, b.len, n ? pos[n - 1] : 0, &got, &gn, err, sizeof(err)) == 0 &&
             gn == n && (n == 0 ? got == NULL : memcmp(got, pos, n * sizeof(*pos)) == 0);
    if (!ok)
        printf("round trip of %zu positions: %s\n", n, err);
    free(got);
    zx_buf_free(&b);
    return ok;
}

/* pos = lo, lo+1, ... hi (inclusive); returns the count. */
static size_t range(uint64_t *pos, uint64_t lo, uint64_t hi)
{
    size_t n = 0;
    for (uint64_t x = lo; x <= hi; x++)
        pos[n++] = x;
    return n;
}

static void test_boundaries(void)
{
    uint64_t *p = calloc(200000, sizeof(*p));
    if (!p)
        return;
    CHECK(round_trip(p, 0));
    p[0] = 0;
    CHECK(round_trip(p, 1));
    CHECK(round_trip(p, range(p, 0, 4095)));      /* the largest array container */
    CHECK(round_trip(p, range(p, 0, 4096)));      /* the smallest bitmap container */
    CHECK(round_trip(p, range(p, 1, 4097)));
    CHECK(round_trip(p, range(p, 0, 65535)));     /* a full container */
    CHECK(round_trip(p, range(p, 65535, 65536))); /* two containers */
    CHECK(round_trip(p, range(p, 60000, 140000)));
    /* several buckets */
    uint64_t multi[] = {0, 65535, 65536, (1ull << 32) - 1, 1ull << 32, (1ull << 32) + 1,
                        (3ull << 32) + 65536, (1ull << 62), (1ull << 63) - 1};
    CHECK(round_trip(multi, sizeof(multi) / sizeof(multi[0])));
    size_t n = range(p, (1ull << 32) - 5000, (1ull << 32) + 5000);
    CHECK(round_trip(p, n));

    /* the encoder refuses what the caller must not give */
    zx_buf b = {0};
    uint64_t unsorted[] = {3, 2}, dup[] = {2, 2}, big[] = {1, 1ull << 63};
    CHECK(zx_dv_encode(unsorted, 2, &b) == -1 && b.len == 0);
    CHECK(zx_dv_encode(dup, 2, &b) == -1 && b.len == 0);
    CHECK(zx_dv_encode(big, 2, &b) == -1 && b.len == 0);
    /* the empty set: magic and zero buckets */
    CHECK(zx_dv_encode(NULL, 0, &b) == 0 && b.len == 12);
    zx_buf_free(&b);
    free(p);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_random(void)
{
    uint64_t *p = malloc(100000 * sizeof(*p));
    if (!p)
        return;
    for (int round = 0; round < 40; round++) {
        /* dense, sparse and clustered sets over up to 2^34 */
        uint64_t span = 1ull << (10 + rng() % 25), x = rng() % (1ull << 34);
        unsigned step = 1 + (unsigned)(rng() % (round % 3 == 0 ? 3 : 200));
        size_t n = 1 + rng() % 90000;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            x += 1 + rng() % step;
            if (rng() % 1000 == 0)
                x += rng() % span;
            p[k++] = x;
        }
        CHECK(round_trip(p, k));
    }
    free(p);
}

static void test_z85(void)
{
    static const unsigned char hello[8] = {0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B};
    char out[32];
    CHECK(zx_z85_encode(hello, 8, out, sizeof(out)) == 0 && strcmp(out, "HelloWorld") == 0);
    CHECK(zx_z85_encode(hello, 8, out, 10) == -1); /* no room for the NUL */
    CHECK(zx_z85_encode(hello, 7, out, sizeof(out)) == -1);
    zx_buf b = {0};
    CHECK(zx_z85_decode("HelloWorld", 10, &b) == 0 && b.len == 8 &&
          memcmp(b.p, hello, 8) == 0);
    zx_buf_reset(&b);
    CHECK(zx_z85_decode("Hello", 4, &b) == -1 && b.len == 0);
    CHECK(zx_z85_decode("Hell\"", 5, &b) == -1 && b.len == 0);
    CHECK(zx_z85_decode("Hell ", 5, &b) == -1 && b.len == 0);
    CHECK(zx_z85_decode("%nSc0", 5, &b) == 0 && b.len == 4);   /* 2^32 - 1 */
    zx_buf_reset(&b);
    CHECK(zx_z85_decode("%nSc1", 5, &b) == -1 && b.len == 0); /* 2^32 */
    CHECK(zx_z85_decode("#####", 5, &b) == -1 && b.len == 0);
    unsigned char raw[64];
    char txt[81];
    for (int round = 0; round < 100; round++) {
        for (size_t i = 0; i < sizeof(raw); i++)
            raw[i] = (unsigned char)rng();
        zx_buf_reset(&b);
        CHECK(zx_z85_encode(raw, sizeof(raw), txt, sizeof(txt)) == 0 && strlen(txt) == 80);
        CHECK(zx_z85_decode(txt, 80, &b) == 0 && b.len == 64 && memcmp(b.p, raw, 64) == 0);
    }
    zx_buf_free(&b);
}

/* PROTOCOL.md's inline example ("JSON Example 3"): its bytes are the
 * native layout, big-endian counts (magic 1681511376). */
static void test_spec_examples(void)
{
    const char *inl = "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L";
    zx_buf b = {0};
    CHECK(zx_z85_decode(inl, strlen(inl), &b) == 0 && b.len == 40);
    uint64_t *got = NULL;
    size_t n = 0;
    char err[200] = "";
    CHECK(zx_dv_decode(b.p, b.len, 29, &got, &n, err, sizeof(err)) == 0);
    uint64_t want[] = {3, 4, 7, 11, 18, 29};
    CHECK(n == 6 && got && memcmp(got, want, sizeof(want)) == 0);
    free(got);
    CHECK(zx_dv_decode(b.p, b.len, 28, &got, &n, err, sizeof(err)) == -1 && !got && n == 0);
    CHECK(strstr(err, "position 29") != NULL);
    /* the same set as zx writes it: portable (a key where the example has
     * a size), the same 32-bit bitmap */
    zx_buf e = {0};
    CHECK(zx_dv_encode(want, 6, &e) == 0 && e.len == 44);
    CHECK(memcmp(e.p + 16, b.p + 12, 28) == 0);
    /* the native layout little-endian (the same bytes, counts swapped) */
    unsigned char le[40];
    memcpy(le, b.p, 40);
    for (int i = 0; i < 3; i++) {
        unsigned char *w = le + 4 * i, t0 = w[0], t1 = w[1];
        w[0] = w[3], w[1] = w[2], w[2] = t1, w[3] = t0;
    }
    CHECK(zx_dv_decode(le, 40, 29, &got, &n, err, sizeof(err)) == 0 && n == 6 &&
          memcmp(got, want, sizeof(want)) == 0);
    free(got);
    zx_buf_free(&e);
    zx_buf_free(&b);

    /* "JSON Example 1": storageType 'u' */
    char name[128];
    CHECK(zx_dv_uuid_name("ab^-aqEH.-t@S}K{vb[*k^", name, sizeof(name)) == 0);
    CHECK(strcmp(name, "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin") == 0);
    CHECK(zx_dv_uuid_name("^-aqEH.-t@S}K{vb[*k^", name, sizeof(name)) == 0);
    CHECK(strcmp(name, "deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin") == 0);
    CHECK(zx_dv_uuid_name("ab^-aqEH.-t@S}K{vb[*k^", name, 59) == -1); /* too small */
    CHECK(zx_dv_uuid_name("ab^-aqEH.-t@S}K{vb[*k^", name, 60) == 0);
    CHECK(zx_dv_uuid_name("a/^-aqEH.-t@S}K{vb[*k^", name, sizeof(name)) == -1);
    CHECK(zx_dv_uuid_name("..^-aqEH.-t@S}K{vb[*k^", name, sizeof(name)) == -1);
    CHECK(zx_dv_uuid_name("-aqEH.-t@S}K{vb[*k^", name, sizeof(name)) == -1);
    CHECK(zx_dv_uuid_name("ab^-aqEH.-t@S}K{vb[*\"", name, sizeof(name)) == -1);
    static const unsigned char uuid[16] = {0xd2, 0xc6, 0x39, 0xaa, 0x88, 0x16, 0x43, 0x1a,
                                           0xaa, 0xf6, 0xd3, 0xfe, 0x25, 0x12, 0xff, 0x61};
    char z[21];
    CHECK(zx_dv_uuid_encode(uuid, z) == 0 && strcmp(z, "^-aqEH.-t@S}K{vb[*k^") == 0);
}

/* ---- bitmaps built by hand -------------------------------------------- */

static void p16(zx_buf *b, unsigned v)
{
    unsigned char d[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
    zx_buf_put(b, d, 2);
}

static void p32(zx_buf *b, uint32_t v)
{
    p16(b, v & 0xFFFF);
    p16(b, v >> 16);
}

/* Portable, one bucket (key 0), cookie 12347, 2 containers (no offset
 * header): container 0 runs [10, 19] and [100, 100]; container 1 an
 * array {5}.  Positions: 10..19, 100, 65541. */
static void run_small(zx_buf *b)
{
    p32(b, ZX_DV_MAGIC_PORTABLE);
    p32(b, 1), p32(b, 0); /* one bucket */
    p32(b, 0);            /* key 0 */
    p32(b, 12347 | 1u << 16);
    unsigned char runbm = 1;
    zx_buf_put(b, &runbm, 1);
    p16(b, 0), p16(b, 10);  /* key 0, cardinality 11 */
    p16(b, 1), p16(b, 0);   /* key 1, cardinality 1 */
    p16(b, 2), p16(b, 10), p16(b, 9), p16(b, 100), p16(b, 0);
    p16(b, 5);
}

/* Portable, two buckets; bucket 5 has cookie 12347 with 4 containers (so
 * an offset header): a run [0, 4999] (5000 values), an array {7}, a
 * bitmap of 5000 even values, a run [65000, 65535]. */
static void run_large(zx_buf *b, uint64_t *want, size_t *nwant)
{
    size_t n = 0;
    p32(b, ZX_DV_MAGIC_PORTABLE);
    p32(b, 2);
    p32(b, 0);
    p32(b, 0); /* bucket 0: cookie 12346, one array container {1, 2} */
    p32(b, 12346), p32(b, 1), p16(b, 0), p16(b, 1), p32(b, 16), p16(b, 1), p16(b, 2);
    want[n++] = 1, want[n++] = 2;
    uint64_t hi = 5ull << 32;
    p32(b, 5);
    size_t start = b->len;
    p32(b, 12347 | 3u << 16);
    unsigned char runbm = 1 | 8;
    zx_buf_put(b, &runbm, 1);
    p16(b, 0), p16(b, 4999);
    p16(b, 1), p16(b, 0);
    p16(b, 2), p16(b, 4999);
    p16(b, 3), p16(b, 535);
    size_t offs = b->len;
    for (int i = 0; i < 4; i++)
        p32(b, 0);
    uint32_t off[4];
    off[0] = (uint32_t)(b->len - start);
    p16(b, 1), p16(b, 0), p16(b, 4999);
    for (uint64_t x = 0; x < 5000; x++)
        want[n++] = hi | x;
    off[1] = (uint32_t)(b->len - start);
    p16(b, 7);
    want[n++] = hi | 1 << 16 | 7;
    off[2] = (uint32_t)(b->len - start);
    unsigned char bits[8192] = {0};
    for (unsigned x = 0; x < 10000; x += 2) {
        bits[x >> 3] |= (unsigned char)(1 << (x & 7));
        want[n++] = hi | 2 << 16 | x;
    }
    zx_buf_put(b, bits, sizeof(bits));
    off[3] = (uint32_t)(b->len - start);
    p16(b, 1), p16(b, 65000), p16(b, 535);
    for (uint64_t x = 65000; x <= 65535; x++)
        want[n++] = hi | 3 << 16 | x;
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++)
            b->p[offs + 4 * (size_t)i + (size_t)k] = (char)(off[i] >> (8 * k));
    *nwant = n;
}

/* Every proper prefix of b is refused (and frees what it read). */
static int refuses_truncations(const zx_buf *b, uint64_t max_pos)
{
    for (size_t l = 0; l < b->len; l++) {
        uint64_t *got = (uint64_t *)1;
        size_t n = 1;
        char err[200] = "";
        if (zx_dv_decode(b->p, l, max_pos, &got, &n, err, sizeof(err)) != -1 || got ||
            n || !err[0]) {
            printf("a prefix of %zu bytes of %zu was read\n", l, b->len);
            return 0;
        }
    }
    return 1;
}

static void test_runs(void)
{
    zx_buf b = {0};
    run_small(&b);
    uint64_t *got = NULL;
    size_t n = 0;
    char err[200] = "";
    CHECK(zx_dv_decode(b.p, b.len, 1000000, &got, &n, err, sizeof(err)) == 0);
    if (err[0])
        printf("%s\n", err);
    CHECK(n == 12 && got[0] == 10 && got[9] == 19 && got[10] == 100 && got[11] == 65541);
    free(got);
    CHECK(refuses_truncations(&b, 1000000));
    /* a run past its cardinality */
    b.p[b.len - 8] = 10; /* the first run's length - 1: 10 (11 values, 12 in all) */
    CHECK(zx_dv_decode(b.p, b.len, 1000000, &got, &n, err, sizeof(err)) == -1);
    CHECK(strstr(err, "container 0") != NULL);
    zx_buf_free(&b);

    uint64_t *want = malloc(20000 * sizeof(*want));
    size_t nw = 0;
    if (!want)
        return;
    run_large(&b, want, &nw);
    CHECK(zx_dv_decode(b.p, b.len, UINT64_MAX >> 1, &got, &n, err, sizeof(err)) == 0);
    CHECK(n == nw && memcmp(got, want, n * sizeof(*got)) == 0);
    free(got);
    CHECK(refuses_truncations(&b, UINT64_MAX >> 1));
    /* a bad offset */
    size_t offs = 4 + 8 + 4 + 20 + 4 + 4 + 1 + 16;
    b.p[offs] ^= 1;
    CHECK(zx_dv_decode(b.p, b.len, UINT64_MAX >> 1, &got, &n, err, sizeof(err)) == -1);
    CHECK(strstr(err, "bucket 2 of 2: container 0 at offset") != NULL);
    zx_buf_free(&b);
    free(want);
}

static void test_refusals(void)
{
    uint64_t pos[] = {1, 5, 70000, (1ull << 32) + 3, (2ull << 32) + 9};
    zx_buf b = {0};
    CHECK(zx_dv_encode(pos, 5, &b) == 0);
    uint64_t *got = NULL;
    size_t n = 0;
    char err[200] = "";
    uint64_t max = (2ull << 32) + 9;
    CHECK(zx_dv_decode(b.p, b.len, max, &got, &n, err, sizeof(err)) == 0 && n == 5);
    free(got);
    CHECK(refuses_truncations(&b, max));
    /* truncated in the second bucket: the bucket named */
    CHECK(zx_dv_decode(b.p, b.len - 30, max, &got, &n, err, sizeof(err)) == -1);
    CHECK(strcmp(err, "deletion vector: bucket 2 of 3 truncated") == 0);
    /* a value past the data file */
    CHECK(zx_dv_decode(b.p, b.len, max - 1, &got, &n, err, sizeof(err)) == -1 && !got);
    CHECK(strstr(err, "beyond the data file's last row") != NULL);
    /* trailing garbage */
    zx_buf t = {0};
    zx_buf_put(&t, b.p, b.len);
    zx_buf_put(&t, "x", 1);
    CHECK(zx_dv_decode(t.p, t.len, max, &got, &n, err, sizeof(err)) == -1);
    CHECK(strcmp(err, "deletion vector: 1 trailing bytes") == 0);
    /* a bad magic */
    t.len = 0;
    zx_buf_put(&t, b.p, b.len);
    t.p[0] ^= 0x40;
    CHECK(zx_dv_decode(t.p, t.len, max, &got, &n, err, sizeof(err)) == -1);
    CHECK(strstr(err, "bad magic number") != NULL);
    /* keys not ascending: swap the first two buckets' keys (0 and 1) */
    t.len = 0;
    zx_buf_put(&t, b.p, b.len);
    t.p[12] = 1;
    CHECK(zx_dv_decode(t.p, t.len, UINT64_MAX, &got, &n, err, sizeof(err)) == -1);
    /* a key with its top bit set */
    t.p[12] = 0, t.p[15] = (char)0x80;
    CHECK(zx_dv_decode(t.p, t.len, UINT64_MAX, &got, &n, err, sizeof(err)) == -1);
    CHECK(strstr(err, "top bit") != NULL);
    /* array values not ascending: 5 then 1 */
    t.len = 0;
    zx_buf_put(&t, b.p, b.len);
    t.p[16 + 8 + 8 + 8] = 9; /* the first array's 1 becomes 9 */
    CHECK(zx_dv_decode(t.p, t.len, max, &got, &n, err, sizeof(err)) == -1);
    CHECK(strstr(err, "not ascending") != NULL);
    /* a huge bucket count */
    t.len = 0;
    zx_buf_put(&t, b.p, b.len);
    t.p[11] = 0x7f;
    CHECK(zx_dv_decode(t.p, t.len, max, &got, &n, err, sizeof(err)) == -1);
    /* a huge container count */
    t.len = 0;
    zx_buf_put(&t, b.p, b.len);
    t.p[16 + 4 + 3] = 0x7f;
    CHECK(zx_dv_decode(t.p, t.len, max, &got, &n, err, sizeof(err)) == -1);
    /* a bitmap container whose cardinality lies */
    uint64_t p[5000];
    size_t pn = range(p, 0, 4999);
    t.len = 0;
    CHECK(zx_dv_encode(p, pn, &t) == 0);
    t.p[16 + 8 + 2] ^= 1;
    CHECK(zx_dv_decode(t.p, t.len, 5000, &got, &n, err, sizeof(err)) == -1);
    CHECK(strstr(err, "bitmap holds 5000 values") != NULL);
    t.p[16 + 8 + 2] ^= 1;
    CHECK(refuses_truncations(&t, 4999));
    zx_buf_free(&t);
    zx_buf_free(&b);
}

static void test_file(void)
{
    uint64_t a[] = {0, 2, 4}, c[] = {7, 1ull << 33};
    zx_buf da = {0}, dc = {0}, f = {0};
    CHECK(zx_dv_encode(a, 3, &da) == 0 && zx_dv_encode(c, 2, &dc) == 0);
    uint64_t oa = 0, oc = 0;
    CHECK(zx_dv_file_add(&f, da.p, da.len, &oa) == 0 && oa == 1);
    CHECK(zx_dv_file_add(&f, dc.p, dc.len, &oc) == 0 && oc == 1 + 4 + da.len + 4);
    CHECK(f.len == 1 + 8 + da.len + 8 + dc.len && f.p[0] == 1);
    CHECK((unsigned char)f.p[1] == 0 && (unsigned char)f.p[4] == da.len); /* big-endian size */
    const void *bm = NULL;
    char err[200] = "";
    CHECK(zx_dv_file_get(f.p, f.len, oa, da.len, &bm, err, sizeof(err)) == 0 &&
          memcmp(bm, da.p, da.len) == 0);
    CHECK(zx_dv_file_get(f.p, f.len, oc, dc.len, &bm, err, sizeof(err)) == 0 &&
          memcmp(bm, dc.p, dc.len) == 0);
    uint64_t *got = NULL;
    size_t n = 0;
    CHECK(zx_dv_decode(bm, dc.len, 1ull << 33, &got, &n, err, sizeof(err)) == 0 && n == 2 &&
          got[1] == 1ull << 33);
    free(got);
    /* refusals: size, bounds, version, CRC */
    CHECK(zx_dv_file_get(f.p, f.len, oa, da.len - 1, &bm, err, sizeof(err)) == -1 && !bm);
    CHECK(zx_dv_file_get(f.p, f.len, oc, dc.len + 1, &bm, err, sizeof(err)) == -1);
    CHECK(zx_dv_file_get(f.p, f.len - 1, oc, dc.len, &bm, err, sizeof(err)) == -1);
    CHECK(zx_dv_file_get(f.p, f.len, 0, da.len, &bm, err, sizeof(err)) == -1);
    CHECK(zx_dv_file_get(f.p, f.len, UINT64_MAX, da.len, &bm, err, sizeof(err)) == -1);
    CHECK(zx_dv_file_get(f.p, f.len, oa, UINT64_MAX, &bm, err, sizeof(err)) == -1);
    CHECK(zx_dv_file_get(f.p, 0, oa, da.len, &bm, err, sizeof(err)) == -1);
    f.p[0] = 2;
    CHECK(zx_dv_file_get(f.p, f.len, oa, da.len, &bm, err, sizeof(err)) == -1);
    CHECK(strstr(err, "version 2") != NULL);
    f.p[0] = 1;
    f.p[oc + 4 + 5] ^= 0x10;
    CHECK(zx_dv_file_get(f.p, f.len, oc, dc.len, &bm, err, sizeof(err)) == -1);
    CHECK(strstr(err, "CRC-32") != NULL);
    CHECK(zx_dv_file_get(f.p, f.len, oa, da.len, &bm, err, sizeof(err)) == 0);
    f.p[oc + 4 + 5] ^= 0x10;
    f.p[f.len - 1] ^= 1; /* the checksum itself */
    CHECK(zx_dv_file_get(f.p, f.len, oc, dc.len, &bm, err, sizeof(err)) == -1);
    zx_buf_free(&da);
    zx_buf_free(&dc);
    zx_buf_free(&f);
}

int main(void)
{
    test_boundaries();
    test_random();
    test_z85();
    test_spec_examples();
    test_runs();
    test_refusals();
    test_file();
    if (failures)
        printf("%d check(s) failed\n", failures);
    else
        printf("test_delta_dv: all checks passed\n");
    return failures != 0;
}
