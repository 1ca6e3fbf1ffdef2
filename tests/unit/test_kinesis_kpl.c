/*
 * test_kinesis_kpl.c — the KPL de-aggregator (workers/sources/kinesis/
 * kinesis_kpl.h) on aggregated records built here with a small protobuf
 * writer: several records over two partition keys, unknown fields of
 * every wire type, a bad MD5, a cut protobuf, indexes out of range,
 * missing required fields, an aggregate of 0 records, plain records.
 */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/check.h"
#include "workers/sources/kinesis/kinesis_kpl.h"

/* ---- a protobuf writer ---- */

typedef struct pbuf {
    uint8_t p[8192];
    size_t n;
} pbuf;

static void put_varint(pbuf *b, uint64_t v)
{
    while (v >= 0x80) {
        b->p[b->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->p[b->n++] = (uint8_t)v;
}

static void put_key(pbuf *b, uint32_t num, int wt)
{
    put_varint(b, (uint64_t)num << 3 | (unsigned)wt);
}

static void put_bytes(pbuf *b, uint32_t num, const void *p, size_t n)
{
    put_key(b, num, 2);
    put_varint(b, n);
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void put_str(pbuf *b, uint32_t num, const char *s)
{
    put_bytes(b, num, s, strlen(s));
}

static void put_uint(pbuf *b, uint32_t num, uint64_t v)
{
    put_key(b, num, 0);
    put_varint(b, v);
}

/* One Record: partition key index (or none when < 0), ehk index (or none),
 * data (or none), with unknown fields when odd. */
static void put_record(pbuf *agg, long pki, long ehki, const char *data, int odd)
{
    pbuf r = {.n = 0};
    if (odd) {
        put_uint(&r, 9, 12345);                        /* unknown varint */
        put_key(&r, 10, 1);                            /* unknown 64-bit */
        memcpy(r.p + r.n, "\1\2\3\4\5\6\7\10", 8);
        r.n += 8;
        put_key(&r, 11, 3);                            /* unknown group */
        put_uint(&r, 1, 7);                            /* inside: ignored */
        put_key(&r, 11, 4);
        pbuf tag = {.n = 0};                           /* Tag {key, value} */
        put_str(&tag, 1, "env");
        put_str(&tag, 2, "prod");
        put_bytes(&r, 4, tag.p, tag.n);
    }
    if (pki >= 0)
        put_uint(&r, 1, (uint64_t)pki);
    if (ehki >= 0)
        put_uint(&r, 2, (uint64_t)ehki);
    if (data)
        put_str(&r, 3, data);
    if (odd) {
        put_key(&r, 12, 5);                            /* unknown 32-bit */
        memcpy(r.p + r.n, "abcd", 4);
        r.n += 4;
    }
    put_bytes(agg, 3, r.p, r.n);
}

/* magic + pb + MD5(pb) (bad_md5: one bit flipped) into out. */
static size_t wrap(const pbuf *pb, uint8_t *out, int bad_md5)
{
    static const uint8_t magic[4] = {0xF3, 0x89, 0x9A, 0xC2};
    unsigned int ml = 0;
    memcpy(out, magic, 4);
    memcpy(out + 4, pb->p, pb->n);
    EVP_Digest(pb->p, pb->n, out + 4 + pb->n, &ml, EVP_md5(), NULL);
    if (bad_md5)
        out[4 + pb->n + 3] ^= 1;
    return 4 + pb->n + 16;
}

/* ---- tests ---- */

static void test_aggregate(void)
{
    pbuf pb = {.n = 0};
    put_str(&pb, 1, "user-1");
    put_str(&pb, 2, "170141183460469231731687303715884105728");
    put_record(&pb, 0, -1, "{\"id\":1}", 0);
    put_str(&pb, 1, "user-2");              /* a table entry after a record */
    put_uint(&pb, 15, 99);                  /* unknown top-level varint */
    put_record(&pb, 1, 0, "{\"id\":2}", 1);
    put_record(&pb, 0, -1, "", 0);          /* empty data */
    put_record(&pb, 1, -1, "{\"id\":4}", 1);
    uint8_t buf[9000];
    size_t n = wrap(&pb, buf, 0);

    zx_kpl k;
    char err[256];
    CHECK(zx_kpl_has_magic(buf, n));
    CHECK(zx_kpl_open(&k, buf, n, "outer", 5, err, sizeof(err)) == 1);
    CHECK(k.aggregated == 1 && k.nrecords == 4 && k.npks == 2 && k.nehks == 1);
    static const char *const want_data[4] = {"{\"id\":1}", "{\"id\":2}", "", "{\"id\":4}"};
    static const char *const want_pk[4] = {"user-1", "user-2", "user-1", "user-2"};
    zx_kpl_rec r;
    size_t i = 0;
    while (zx_kpl_next(&k, &r) == 1) {
        CHECK(i < 4);
        if (i >= 4)
            break;
        CHECK(r.sub_seq == i);
        CHECK(r.len == strlen(want_data[i]) && memcmp(r.data, want_data[i], r.len) == 0);
        CHECK(r.pk_len == strlen(want_pk[i]) && memcmp(r.partition_key, want_pk[i], r.pk_len) == 0);
        /* borrowed from the input */
        CHECK(r.len == 0 || (r.data > buf && r.data + r.len <= buf + n));
        if (i == 1)
            CHECK(r.explicit_hash_key && r.ehk_len == 39 &&
                  memcmp(r.explicit_hash_key, "1701411834", 10) == 0);
        else
            CHECK(r.explicit_hash_key == NULL);
        i++;
    }
    CHECK(i == 4);
    CHECK(zx_kpl_next(&k, &r) == 0);
    zx_kpl_free(&k);
}

static void test_plain(void)
{
    zx_kpl k;
    zx_kpl_rec r;
    char err[256];
    const char *js = "{\"id\":1}";
    CHECK(!zx_kpl_has_magic(js, strlen(js)));
    CHECK(zx_kpl_open(&k, js, strlen(js), "pk", 2, err, sizeof(err)) == 0);
    CHECK(k.nrecords == 1);
    CHECK(zx_kpl_next(&k, &r) == 1 && r.data == (const uint8_t *)js && r.len == strlen(js) &&
          r.pk_len == 2 && memcmp(r.partition_key, "pk", 2) == 0 && r.sub_seq == 0);
    CHECK(zx_kpl_next(&k, &r) == 0);
    zx_kpl_free(&k);

    /* the magic and no more than the digest: plain (the KCL's test) */
    uint8_t small[20] = {0xF3, 0x89, 0x9A, 0xC2};
    for (size_t n = 0; n <= sizeof(small); n++) {
        CHECK(zx_kpl_open(&k, small, n, "pk", 2, err, sizeof(err)) == 0);
        CHECK(zx_kpl_next(&k, &r) == 1 && r.len == n);
        zx_kpl_free(&k);
    }
    /* an empty record */
    CHECK(zx_kpl_open(&k, "", 0, NULL, 0, err, sizeof(err)) == 0);
    CHECK(zx_kpl_next(&k, &r) == 1 && r.len == 0 && r.pk_len == 0);
    zx_kpl_free(&k);
}

static void test_bad_md5(void)
{
    pbuf pb = {.n = 0};
    put_str(&pb, 1, "a");
    put_record(&pb, 0, -1, "x", 0);
    uint8_t buf[200];
    size_t n = wrap(&pb, buf, 1);
    zx_kpl k;
    zx_kpl_rec r;
    char err[256];
    /* as the KCL: not aggregated, the record as is */
    CHECK(zx_kpl_open(&k, buf, n, "outer", 5, err, sizeof(err)) == 0);
    CHECK(zx_kpl_next(&k, &r) == 1 && r.data == buf && r.len == n && r.pk_len == 5);
    CHECK(zx_kpl_next(&k, &r) == 0);
    zx_kpl_free(&k);
}

/* A malformed aggregate (good MD5): -1, a reason holding want, nothing to
 * iterate. */
static void expect_bad(const pbuf *pb, const char *want)
{
    uint8_t buf[9000];
    size_t n = wrap(pb, buf, 0);
    zx_kpl k;
    zx_kpl_rec r;
    char err[256] = "";
    int rc = zx_kpl_open(&k, buf, n, "outer", 5, err, sizeof(err));
    CHECK(rc == -1);
    if (rc != -1 || !strstr(err, want))
        printf("  want \"%s\", got %d \"%s\"\n", want, rc, err);
    CHECK(strstr(err, "malformed KPL aggregated record: ") == err);
    CHECK(zx_kpl_next(&k, &r) == 0);
    zx_kpl_free(&k);
}

static void test_malformed(void)
{
    pbuf pb = {.n = 0};
    put_str(&pb, 1, "a");
    put_record(&pb, 0, -1, "hello", 0);
    pbuf cut = pb;
    cut.n -= 2; /* the record's data runs past the end */
    expect_bad(&cut, "runs past the end");

    pbuf idx = {.n = 0};
    put_str(&idx, 1, "a");
    put_str(&idx, 1, "b");
    put_record(&idx, 0, -1, "x", 0);
    put_record(&idx, 2, -1, "y", 0);
    expect_bad(&idx, "record 1: partition_key_index 2 is out of range (the table has 2 keys)");

    pbuf eidx = {.n = 0};
    put_str(&eidx, 1, "a");
    put_record(&eidx, 0, 0, "x", 0);
    expect_bad(&eidx, "record 0: explicit_hash_key_index 0 is out of range (the table has 0");

    pbuf huge = {.n = 0};
    put_str(&huge, 1, "a");
    put_record(&huge, (long)0x7fffffffffffffff, -1, "x", 0);
    expect_bad(&huge, "partition_key_index 9223372036854775807 is out of range");

    pbuf nopk = {.n = 0};
    put_str(&nopk, 1, "a");
    put_record(&nopk, -1, -1, "x", 0);
    expect_bad(&nopk, "record 0 has no partition_key_index");

    pbuf nodata = {.n = 0};
    put_str(&nodata, 1, "a");
    put_record(&nodata, 0, -1, NULL, 0);
    expect_bad(&nodata, "record 0 has no data");

    pbuf wt = {.n = 0};
    put_str(&wt, 1, "a");
    put_key(&wt, 7, 6); /* wire type 6 */
    expect_bad(&wt, "wire type 6 or 7");

    pbuf eg = {.n = 0};
    put_key(&eg, 7, 4); /* end-group alone */
    expect_bad(&eg, "end-group");

    pbuf open_group = {.n = 0};
    put_key(&open_group, 7, 3);
    put_uint(&open_group, 1, 1);
    expect_bad(&open_group, "a group has no end");

    pbuf deep = {.n = 0};
    for (int i = 0; i < 70; i++)
        put_key(&deep, 7, 3);
    for (int i = 0; i < 70; i++)
        put_key(&deep, 7, 4);
    expect_bad(&deep, "nested too deep");

    pbuf longvar = {.n = 0};
    put_key(&longvar, 7, 0);
    for (int i = 0; i < 11; i++)
        longvar.p[longvar.n++] = 0xff;
    longvar.p[longvar.n++] = 0x01;
    expect_bad(&longvar, "varint");

    pbuf biglen = {.n = 0};
    put_key(&biglen, 3, 2);
    put_varint(&biglen, UINT64_MAX);
    expect_bad(&biglen, "runs past the end");

    pbuf field0 = {.n = 0};
    put_varint(&field0, 0);
    expect_bad(&field0, "field number is 0");

    /* the data field as a varint: not the data (protobuf: an unknown field) */
    pbuf dv = {.n = 0};
    put_str(&dv, 1, "a");
    pbuf rec = {.n = 0};
    put_uint(&rec, 1, 0);
    put_uint(&rec, 3, 5);
    put_bytes(&dv, 3, rec.p, rec.n);
    expect_bad(&dv, "record 0 has no data");
}

static void test_zero_records(void)
{
    /* a partition key table and no record: aggregated, nothing to give */
    pbuf pb = {.n = 0};
    put_str(&pb, 1, "lonely");
    uint8_t buf[200];
    size_t n = wrap(&pb, buf, 0);
    zx_kpl k;
    zx_kpl_rec r;
    char err[256];
    CHECK(zx_kpl_open(&k, buf, n, "outer", 5, err, sizeof(err)) == 1);
    CHECK(k.nrecords == 0);
    CHECK(zx_kpl_next(&k, &r) == 0);
    zx_kpl_free(&k);
    /* only unknown fields */
    pbuf un = {.n = 0};
    put_uint(&un, 100, 1);
    n = wrap(&un, buf, 0);
    CHECK(zx_kpl_open(&k, buf, n, "outer", 5, err, sizeof(err)) == 1);
    CHECK(k.nrecords == 0 && zx_kpl_next(&k, &r) == 0);
    zx_kpl_free(&k);
}

static void test_last_wins(void)
{
    /* a field repeated in a Record: the last one counts */
    pbuf pb = {.n = 0};
    put_str(&pb, 1, "a");
    put_str(&pb, 1, "b");
    pbuf rec = {.n = 0};
    put_uint(&rec, 1, 0);
    put_str(&rec, 3, "first");
    put_uint(&rec, 1, 1);
    put_str(&rec, 3, "second");
    put_bytes(&pb, 3, rec.p, rec.n);
    uint8_t buf[200];
    size_t n = wrap(&pb, buf, 0);
    zx_kpl k;
    zx_kpl_rec r;
    char err[256];
    CHECK(zx_kpl_open(&k, buf, n, NULL, 0, err, sizeof(err)) == 1);
    CHECK(zx_kpl_next(&k, &r) == 1 && r.len == 6 && memcmp(r.data, "second", 6) == 0 &&
          r.pk_len == 1 && r.partition_key[0] == 'b');
    CHECK(zx_kpl_next(&k, &r) == 0);
    zx_kpl_free(&k);
}

int main(void)
{
    test_aggregate();
    test_plain();
    test_bad_md5();
    test_malformed();
    test_zero_records();
    test_last_wins();
    if (failures)
        printf("%d check(s) failed\n", failures);
    else
        printf("kinesis_kpl: all checks passed\n");
    return failures != 0;
}
