/*
 * test_avro.c — formats/avro.c (zigzag varints, the datum encoders, a
 * container file decoded here by hand, null and deflate codecs, buffer
 * and sink output) and the pure parts of
 * workers/destinations/iceberg/ice_manifest.c (Appendix D bounds, a
 * manifest's header and summary, a manifest list's header), the reader
 * (formats/avro_read.c, zx_ice_mlist_read): round trips, and every
 * truncation and many corruptions of a file fail cleanly.  Real Iceberg
 * readers check the files in tests/integration/test_iceberg_manifest.py.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "formats/avro.h"
#include "formats/avro_read.h"
#include "workers/destinations/iceberg/ice_manifest.h"

static int hexeq(const uint8_t *p, size_t n, const char *hex)
{
    char s[64];
    if (n * 2 + 1 > sizeof(s))
        return 0;
    for (size_t i = 0; i < n; i++)
        snprintf(s + 2 * i, 3, "%02x", p[i]);
    s[2 * n] = '\0';
    if (!hex || strcmp(s, hex))
        printf("  got %s, want %s\n", s, hex ? hex : "(null)");
    return hex && !strcmp(s, hex);
}

static void test_zigzag(void)
{
    static const struct {
        int64_t v;
        const char *hex;
    } cases[] = {
        {0, "00"}, {-1, "01"}, {1, "02"}, {-2, "03"}, {2, "04"}, {63, "7e"}, {-64, "7f"},
        {64, "8001"}, {-65, "8101"}, {8191, "fe7f"}, {-8192, "ff7f"}, {8192, "808001"},
        {INT32_MAX, "feffffff0f"}, {INT32_MIN, "ffffffff0f"},
        {INT64_MAX, "feffffffffffffffff01"}, {INT64_MIN, "ffffffffffffffffff01"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t t[10];
        size_t n = zx_avro_zigzag(cases[i].v, t);
        CHECK(hexeq(t, n, cases[i].hex));
        int64_t back = 12345;
        CHECK(zx_avro_unzigzag(t, n, &back) == n);
        CHECK(back == cases[i].v);
        /* cut short: not a varint */
        CHECK(n == 1 || zx_avro_unzigzag(t, n - 1, &back) == 0);
    }
    /* 11 continuation bytes are not a long */
    uint8_t bad[11];
    memset(bad, 0x80, sizeof(bad));
    int64_t v;
    CHECK(zx_avro_unzigzag(bad, sizeof(bad), &v) == 0);
    /* every value of a sweep of magnitudes round-trips */
    for (int sh = 0; sh < 63; sh++)
        for (int d = -1; d <= 1; d++) {
            int64_t x = ((int64_t)1 << sh) + d, y = 0;
            uint8_t t[10];
            size_t n = zx_avro_zigzag(x, t);
            CHECK(zx_avro_unzigzag(t, n, &y) == n && y == x);
            n = zx_avro_zigzag(-x, t);
            CHECK(zx_avro_unzigzag(t, n, &y) == n && y == -x);
        }
}

static void test_datums(void)
{
    zx_buf b = {0};
    CHECK(zx_avro_put_null(&b) == 0 && b.len == 0);
    CHECK(zx_avro_put_boolean(&b, 7) == 0 && zx_avro_put_boolean(&b, 0) == 0);
    CHECK(hexeq((uint8_t *)b.p, b.len, "0100"));
    zx_buf_reset(&b);
    CHECK(zx_avro_put_int(&b, -3) == 0 && zx_avro_put_long(&b, 300) == 0);
    CHECK(hexeq((uint8_t *)b.p, b.len, "05d804"));
    zx_buf_reset(&b);
    CHECK(zx_avro_put_float(&b, 1.0f) == 0);
    CHECK(hexeq((uint8_t *)b.p, b.len, "0000803f"));
    zx_buf_reset(&b);
    CHECK(zx_avro_put_double(&b, -2.5) == 0);
    CHECK(hexeq((uint8_t *)b.p, b.len, "00000000000004c0"));
    zx_buf_reset(&b);
    /* the spec's example: "foo" is 06 66 6f 6f */
    CHECK(zx_avro_put_str(&b, "foo") == 0);
    CHECK(hexeq((uint8_t *)b.p, b.len, "06666f6f"));
    zx_buf_reset(&b);
    CHECK(zx_avro_put_bytes(&b, NULL, 0) == 0 && zx_avro_put_fixed(&b, "\x01\x02", 2) == 0);
    CHECK(hexeq((uint8_t *)b.p, b.len, "000102"));
    zx_buf_reset(&b);
    /* the spec's array example: [3, 27] is 04 06 36 00; union branch 1 */
    CHECK(zx_avro_put_block(&b, 2) == 0 && zx_avro_put_long(&b, 3) == 0 &&
          zx_avro_put_long(&b, 27) == 0 && zx_avro_put_block(&b, 0) == 0);
    CHECK(zx_avro_put_union(&b, 1) == 0);
    CHECK(hexeq((uint8_t *)b.p, b.len, "0406360002"));
    CHECK(zx_avro_put_block(&b, -1) == -1 && zx_avro_put_union(&b, -1) == -1);
    CHECK(b.len == 5);
    zx_buf_free(&b);
}

/* A cursor over a file being decoded by hand. */
typedef struct cur {
    const uint8_t *p;
    size_t n, at;
    int bad;
} cur;

static int64_t get_long(cur *c)
{
    int64_t v = 0;
    size_t k = zx_avro_unzigzag(c->p + c->at, c->n - c->at, &v);
    if (!k)
        c->bad = 1;
    c->at += k;
    return v;
}

/* A string or bytes: its bytes (pointer into the file) and length. */
static const uint8_t *get_bytes(cur *c, size_t *len)
{
    int64_t n = get_long(c);
    if (c->bad || n < 0 || (uint64_t)n > c->n - c->at) {
        c->bad = 1;
        *len = 0;
        return NULL;
    }
    const uint8_t *p = c->p + c->at;
    c->at += (size_t)n;
    *len = (size_t)n;
    return p;
}

/* The header: magic, metadata (each key found is checked against want
 * pairs; returns the number of keys), sync copied into sync. */
static int read_header(cur *c, const char *const *want, uint8_t sync[16], const char **schema,
                       size_t *schema_len)
{
    CHECK(c->n >= 4 && !memcmp(c->p, "Obj\x01", 4));
    c->at = 4;
    int keys = 0;
    for (;;) {
        int64_t cnt = get_long(c);
        if (c->bad || cnt == 0)
            break;
        CHECK(cnt > 0);
        for (int64_t i = 0; i < cnt && !c->bad; i++) {
            size_t kl, vl;
            const uint8_t *k = get_bytes(c, &kl);
            const uint8_t *v = get_bytes(c, &vl);
            if (c->bad)
                break;
            keys++;
            if (kl == 11 && !memcmp(k, "avro.schema", 11)) {
                *schema = (const char *)v;
                *schema_len = vl;
                continue;
            }
            int found = 0;
            for (size_t w = 0; want[w]; w += 2)
                if (strlen(want[w]) == kl && !memcmp(want[w], k, kl)) {
                    found = 1;
                    CHECK(strlen(want[w + 1]) == vl && !memcmp(want[w + 1], v, vl));
                    if (strlen(want[w + 1]) != vl || memcmp(want[w + 1], v, vl))
                        printf("  key %s: %.*s\n", want[w], (int)vl, (const char *)v);
                }
            if (!found)
                printf("  unexpected key %.*s\n", (int)kl, (const char *)k);
            CHECK(found);
        }
    }
    CHECK(!c->bad && c->n - c->at >= 16);
    if (!c->bad && c->n - c->at >= 16)
        memcpy(sync, c->p + c->at, 16);
    c->at += 16;
    return keys;
}

static int sink_calls;
static int to_buf(void *ctx, const void *p, size_t n, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    sink_calls++;
    return zx_buf_put(ctx, p, n);
}

static int fail_sink(void *ctx, const void *p, size_t n, char *err, size_t errlen)
{
    (void)ctx;
    (void)p;
    (void)n;
    snprintf(err, errlen, "disk full");
    return -1;
}

static const char SCHEMA[] =
    "{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"a\",\"type\":\"long\","
    "\"field-id\":1},{\"name\":\"s\",\"type\":[\"null\",\"string\"],\"field-id\":2}]}";

/* Write 1000 records (a = i * 1000003 - 500000000, s = "v<i>" or null when
 * i % 7 == 0) in small blocks with codec, decode them here. */
static void test_ocf(zx_avro_codec codec, int use_sink)
{
    zx_buf out = {0};
    char err[256] = "";
    static const uint8_t sync[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    zx_avro_meta meta[] = {{"format-version", "2", 1}, {"content", "data", 4}};
    zx_avro_opts o = {.codec = codec, .block_bytes = 256, .meta = meta, .nmeta = 2,
                      .sync = sync};
    if (use_sink) {
        o.sink = to_buf;
        o.sink_ctx = &out;
    } else {
        o.out = &out;
    }
    zx_avro_writer *w = NULL;
    sink_calls = 0;
    CHECK(zx_avro_open(SCHEMA, strlen(SCHEMA), &o, &w, err, sizeof(err)) == 0);
    if (!w) {
        printf("  %s\n", err);
        return;
    }
    size_t header_len = out.len;
    CHECK(header_len > 4);
    enum { N = 1000 };
    for (int i = 0; i < N; i++) {
        zx_buf *d = zx_avro_datum(w);
        char s[16];
        snprintf(s, sizeof(s), "v%d", i);
        CHECK(zx_avro_put_long(d, (int64_t)i * 1000003 - 500000000) == 0);
        if (i % 7 == 0)
            CHECK(zx_avro_put_union(d, 0) == 0);
        else
            CHECK(zx_avro_put_union(d, 1) == 0 && zx_avro_put_str(d, s) == 0);
        CHECK(zx_avro_end_record(w, err, sizeof(err)) == 0);
    }
    CHECK(zx_avro_records(w) == N);
    uint64_t bytes = 0;
    CHECK(zx_avro_finish(w, &bytes, err, sizeof(err)) == 0);
    CHECK(bytes == out.len);
    CHECK(zx_avro_end_record(w, err, sizeof(err)) == -1); /* finished */
    zx_avro_free(w);
    if (use_sink)
        CHECK(sink_calls > 3);

    cur c = {(const uint8_t *)out.p, out.len, 0, 0};
    const char *want[] = {"avro.codec", codec == ZX_AVRO_DEFLATE ? "deflate" : "null",
                          "format-version", "2", "content", "data", NULL};
    uint8_t got_sync[16];
    const char *schema = NULL;
    size_t schema_len = 0;
    CHECK(read_header(&c, want, got_sync, &schema, &schema_len) == 4);
    CHECK(schema_len == strlen(SCHEMA) && !memcmp(schema, SCHEMA, schema_len));
    CHECK(!memcmp(got_sync, sync, 16));
    CHECK(c.at == header_len);
    int i = 0, blocks = 0;
    while (!c.bad && c.at < c.n) {
        int64_t cnt = get_long(&c);
        int64_t size = get_long(&c);
        CHECK(cnt > 0 && size > 0 && (uint64_t)size + 16 <= c.n - c.at);
        if (c.bad || cnt <= 0 || size <= 0 || (uint64_t)size + 16 > c.n - c.at)
            break;
        blocks++;
        uint8_t *data = (uint8_t *)c.p + c.at;
        size_t dlen = (size_t)size;
        uint8_t *inflated = NULL;
        if (codec == ZX_AVRO_DEFLATE) {
            inflated = malloc(1 << 20);
            z_stream zs;
            memset(&zs, 0, sizeof(zs));
            CHECK(inflateInit2(&zs, -15) == Z_OK);
            zs.next_in = data;
            zs.avail_in = (uInt)dlen;
            zs.next_out = inflated;
            zs.avail_out = 1 << 20;
            CHECK(inflate(&zs, Z_FINISH) == Z_STREAM_END);
            dlen = zs.total_out;
            inflateEnd(&zs);
            data = inflated;
        }
        cur d = {data, dlen, 0, 0};
        for (int64_t k = 0; k < cnt && !d.bad; k++, i++) {
            CHECK(get_long(&d) == (int64_t)i * 1000003 - 500000000);
            int64_t br = get_long(&d);
            CHECK(br == (i % 7 == 0 ? 0 : 1));
            if (br == 1) {
                char s[16];
                size_t sl;
                const uint8_t *sp = get_bytes(&d, &sl);
                snprintf(s, sizeof(s), "v%d", i);
                CHECK(sp && sl == strlen(s) && !memcmp(sp, s, sl));
            }
        }
        CHECK(!d.bad && d.at == d.n);
        free(inflated);
        c.at += (size_t)size;
        CHECK(!memcmp(c.p + c.at, sync, 16));
        c.at += 16;
    }
    CHECK(!c.bad && c.at == c.n);
    CHECK(i == N);
    CHECK(blocks > 5);
    zx_buf_free(&out);
}

static void test_ocf_errors(void)
{
    char err[256] = "";
    zx_avro_writer *w = NULL;
    zx_avro_opts none = {0};
    CHECK(zx_avro_open("\"long\"", 6, &none, &w, err, sizeof(err)) == -1 && !w);
    zx_buf out = {0};
    zx_avro_meta meta[] = {{"avro.codec", "x", 1}};
    zx_avro_opts reserved = {.out = &out, .meta = meta, .nmeta = 1};
    CHECK(zx_avro_open("\"long\"", 6, &reserved, &w, err, sizeof(err)) == -1 && !w);
    zx_avro_opts failing = {.sink = fail_sink};
    CHECK(zx_avro_open("\"long\"", 6, &failing, &w, err, sizeof(err)) == -1 && !w);
    CHECK(strstr(err, "disk full") != NULL);
    /* an empty file: header only, random sync */
    zx_avro_opts plain = {.out = &out};
    CHECK(zx_avro_open("\"long\"", 6, &plain, &w, err, sizeof(err)) == 0);
    uint64_t bytes = 0;
    CHECK(w && zx_avro_finish(w, &bytes, err, sizeof(err)) == 0 && bytes == out.len);
    zx_avro_free(w);
    zx_avro_free(NULL);
    cur c = {(const uint8_t *)out.p, out.len, 0, 0};
    const char *want[] = {"avro.codec", "null", NULL};
    uint8_t sync[16];
    const char *schema = NULL;
    size_t sl = 0;
    CHECK(read_header(&c, want, sync, &schema, &sl) == 2 && c.at == c.n);
    zx_buf_free(&out);
}

static void test_bounds(void)
{
    uint8_t t[8];
    CHECK(hexeq(t, zx_ice_bound_int(1, t), "01000000"));
    CHECK(hexeq(t, zx_ice_bound_int(-2, t), "feffffff"));
    CHECK(hexeq(t, zx_ice_bound_long(0x0102030405060708LL, t), "0807060504030201"));
    CHECK(hexeq(t, zx_ice_bound_double(1.0, t), "000000000000f03f"));
    CHECK(hexeq(t, zx_ice_bound_float(1.0f, t), "0000803f"));
    CHECK(hexeq(t, zx_ice_bound_boolean(5, t), "01"));
    CHECK(hexeq(t, zx_ice_bound_decimal(0, t), "00"));
    CHECK(hexeq(t, zx_ice_bound_decimal(-1, t), "ff"));
    CHECK(hexeq(t, zx_ice_bound_decimal(127, t), "7f"));
    CHECK(hexeq(t, zx_ice_bound_decimal(128, t), "0080"));
    CHECK(hexeq(t, zx_ice_bound_decimal(-128, t), "80"));
    CHECK(hexeq(t, zx_ice_bound_decimal(-129, t), "ff7f"));
    CHECK(hexeq(t, zx_ice_bound_decimal(1420, t), "058c")); /* 14.20 as decimal(4, 2) */
    CHECK(hexeq(t, zx_ice_bound_decimal(INT64_MIN, t), "8000000000000000"));
    uint8_t wide[16] = {0};
    wide[15] = 0x2a;
    uint8_t o[16];
    CHECK(hexeq(o, zx_ice_bound_decimal_be(wide, 16, o), "2a"));
    memset(wide, 0xff, 16);
    wide[15] = 0x00;
    CHECK(hexeq(o, zx_ice_bound_decimal_be(wide, 16, o), "ff00"));
}

static void test_manifest(void)
{
    char err[256] = "";
    static const uint8_t sync[16] = {0xaa};
    zx_ice_pfield pf[] = {{1000, "day", ZX_ICE_P_DATE}, {1001, "3 région", ZX_ICE_P_STRING},
                          {1002, "score", ZX_ICE_P_DOUBLE}};
    zx_ice_manifest_args a = {.schema_json = "{\"type\":\"struct\",\"schema-id\":0,\"fields\":[]}",
                              .schema_id = 0, .partition_spec_json = "[]",
                              .partition_spec_id = 3, .content = 0, .pfields = pf,
                              .npfields = 3, .sync = sync};
    zx_ice_manifest *m = NULL;
    CHECK(zx_ice_manifest_open(&a, &m, err, sizeof(err)) == 0);
    if (!m) {
        printf("  %s\n", err);
        return;
    }
    zx_ice_pvalue p1[] = {{.i = 19000}, {.s = "b", .len = 1}, {.d = 0.0}};
    zx_ice_pvalue p2[] = {{.i = 18000}, {.is_null = 1}, {.d = -0.0}};
    zx_ice_pvalue p3[] = {{.i = 20000}, {.s = "ab", .len = 2}, {.d = __builtin_nan("")}};
    zx_ice_entry e = {.status = 1, .has_snapshot_id = 1, .snapshot_id = 7, .file_path = "s3://b/1",
                      .partition = p1, .record_count = 10, .file_size_in_bytes = 100};
    CHECK(zx_ice_manifest_add(m, &e, err, sizeof(err)) == 0);
    e.status = 0;
    e.has_sequence_number = 1;
    e.sequence_number = 4;
    e.partition = p2;
    e.record_count = 20;
    CHECK(zx_ice_manifest_add(m, &e, err, sizeof(err)) == 0);
    e.status = 2;
    e.sequence_number = 2; /* deleted: not in min_sequence_number */
    e.partition = p3;
    e.record_count = 40;
    CHECK(zx_ice_manifest_add(m, &e, err, sizeof(err)) == 0);
    zx_ice_mfile mf;
    memset(&mf, 0, sizeof(mf));
    CHECK(zx_ice_manifest_summary(m, &mf) == -1); /* not finished */
    zx_buf out = {0};
    CHECK(zx_ice_manifest_finish(m, &out, err, sizeof(err)) == 0);
    CHECK(zx_ice_manifest_add(m, &e, err, sizeof(err)) == -1);
    CHECK(zx_ice_manifest_summary(m, &mf) == 0);
    CHECK(mf.partition_spec_id == 3 && mf.content == 0);
    CHECK(mf.added_files_count == 1 && mf.existing_files_count == 1 &&
          mf.deleted_files_count == 1);
    CHECK(mf.added_rows_count == 10 && mf.existing_rows_count == 20 &&
          mf.deleted_rows_count == 40);
    CHECK(mf.min_sequence_number == 4);
    CHECK(mf.npartitions == 3 && mf.partitions);
    if (mf.partitions) {
        const zx_ice_fsummary *s = mf.partitions;
        CHECK(!s[0].contains_null && !s[0].has_contains_nan);
        CHECK(hexeq(s[0].lower, s[0].lower_len, "50460000"));  /* 18000 */
        CHECK(hexeq(s[0].upper, s[0].upper_len, "204e0000"));  /* 20000 */
        CHECK(s[1].contains_null);
        CHECK(s[1].lower_len == 2 && !memcmp(s[1].lower, "ab", 2));
        CHECK(s[1].upper_len == 1 && !memcmp(s[1].upper, "b", 1));
        CHECK(s[2].has_contains_nan && s[2].contains_nan && !s[2].contains_null);
        CHECK(hexeq(s[2].lower, s[2].lower_len, "0000000000000080"));  /* -0.0 */
        CHECK(hexeq(s[2].upper, s[2].upper_len, "0000000000000000"));  /* +0.0 */
    }
    cur c = {(const uint8_t *)out.p, out.len, 0, 0};
    const char *want[] = {"avro.codec", "null", "schema", a.schema_json, "schema-id", "0",
                          "partition-spec", "[]", "partition-spec-id", "3",
                          "format-version", "2", "content", "data", NULL};
    uint8_t got[16];
    const char *schema = NULL;
    size_t sl = 0;
    CHECK(read_header(&c, want, got, &schema, &sl) == 8);
    CHECK(!memcmp(got, sync, 16));
    /* the partition names made Avro names, the original kept */
    char *sch = strndup(schema ? schema : "", sl);
    CHECK(strstr(sch, "\"name\":\"_3_x20r_xE9gion\"") != NULL);
    CHECK(strstr(sch, "\"iceberg-field-name\":\"3 région\"") != NULL);
    CHECK(strstr(sch, "\"name\":\"k117_v118\"") != NULL);
    CHECK(strstr(sch, "\"field-id\":143") != NULL);
    free(sch);
    /* one block of 3 records */
    CHECK(get_long(&c) == 3);
    zx_ice_manifest_free(m);
    zx_ice_manifest_free(NULL);

    /* a deletes manifest refuses a data file; bad args */
    a.content = 1;
    a.npfields = 0;
    CHECK(zx_ice_manifest_open(&a, &m, err, sizeof(err)) == 0);
    e.partition = NULL;
    e.content = 0;
    CHECK(zx_ice_manifest_add(m, &e, err, sizeof(err)) == -1);
    zx_ice_manifest_free(m);
    a.content = 2;
    CHECK(zx_ice_manifest_open(&a, &m, err, sizeof(err)) == -1);
    zx_buf_free(&out);
}

static void test_mlist(void)
{
    char err[256] = "";
    zx_ice_mfile f = {.manifest_path = "s3://b/m.avro", .manifest_length = 1234,
                      .sequence_number = 5, .min_sequence_number = 5,
                      .added_snapshot_id = 77, .added_files_count = 1, .added_rows_count = 3};
    zx_ice_mlist_args a = {.snapshot_id = 77, .sequence_number = 5};
    zx_buf out = {0};
    CHECK(zx_ice_mlist_write(&a, &f, 1, &out, err, sizeof(err)) == 0);
    cur c = {(const uint8_t *)out.p, out.len, 0, 0};
    const char *want[] = {"avro.codec", "null", "snapshot-id", "77", "parent-snapshot-id",
                          "null", "sequence-number", "5", "format-version", "2", NULL};
    uint8_t got[16];
    const char *schema = NULL;
    size_t sl = 0;
    CHECK(read_header(&c, want, got, &schema, &sl) == 6);
    CHECK(get_long(&c) == 1);
    get_long(&c);
    size_t pl;
    const uint8_t *p = get_bytes(&c, &pl);
    CHECK(p && pl == 13 && !memcmp(p, "s3://b/m.avro", 13));
    CHECK(get_long(&c) == 1234);
    size_t len0 = out.len;
    f.manifest_path = NULL;
    CHECK(zx_ice_mlist_write(&a, &f, 1, &out, err, sizeof(err)) == -1 && out.len == len0);
    zx_buf_free(&out);
}

/* Read every record of p[0..n) with the generic reader: the count, or -1. */
static long read_all(const void *p, size_t n)
{
    char err[256];
    zx_avro_file *f = NULL;
    if (zx_avro_file_open(p, n, &f, err, sizeof(err)) < 0)
        return -1;
    long k = 0;
    const zx_avro_value *v;
    int rc;
    while ((rc = zx_avro_next(f, &v, err, sizeof(err))) == 1)
        k++;
    zx_avro_file_free(f);
    return rc < 0 ? -1 : k;
}

static void test_reader(zx_avro_codec codec)
{
    zx_buf out = {0};
    char err[256] = "";
    static const char schema[] =
        "{\"type\":\"record\",\"name\":\"r\",\"fields\":["
        "{\"name\":\"a\",\"type\":\"long\",\"field-id\":1},"
        "{\"name\":\"s\",\"type\":[\"null\",\"string\"],\"field-id\":2},"
        "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":\"double\"},\"field-id\":3},"
        "{\"name\":\"x\",\"type\":{\"type\":\"array\",\"items\":{\"type\":\"record\","
        "\"name\":\"kv\",\"fields\":[{\"name\":\"k\",\"type\":\"int\",\"field-id\":5},"
        "{\"name\":\"f\",\"type\":{\"type\":\"fixed\",\"name\":\"f2\",\"size\":2}}]},"
        "\"element-id\":4},\"field-id\":6},"
        "{\"name\":\"again\",\"type\":[\"null\",\"kv\"],\"field-id\":7},"
        "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\"]}},"
        "{\"name\":\"fl\",\"type\":\"float\"},{\"name\":\"b\",\"type\":\"boolean\"}]}";
    zx_avro_opts o = {.codec = codec, .block_bytes = 100, .out = &out};
    zx_avro_writer *w = NULL;
    CHECK(zx_avro_open(schema, strlen(schema), &o, &w, err, sizeof(err)) == 0);
    if (!w)
        return;
    enum { N = 50 };
    for (int i = 0; i < N; i++) {
        zx_buf *d = zx_avro_datum(w);
        zx_avro_put_long(d, -i);
        if (i % 2) {
            zx_avro_put_union(d, 1);
            zx_avro_put_str(d, "odd");
        } else {
            zx_avro_put_union(d, 0);
        }
        zx_avro_put_block(d, 1);
        zx_avro_put_str(d, "k");
        zx_avro_put_double(d, i * 0.25);
        zx_avro_put_block(d, 0);
        if (i % 3)
            zx_avro_put_block(d, i % 3);
        for (int k = 0; k < i % 3; k++) {
            zx_avro_put_int(d, k);
            zx_avro_put_fixed(d, "ab", 2);
        }
        zx_avro_put_block(d, 0);
        zx_avro_put_union(d, 1);
        zx_avro_put_int(d, 99);
        zx_avro_put_fixed(d, "zz", 2);
        zx_avro_put_int(d, i % 2);
        zx_avro_put_float(d, 0.5f);
        zx_avro_put_boolean(d, i % 5 == 0);
        CHECK(zx_avro_end_record(w, err, sizeof(err)) == 0);
    }
    CHECK(zx_avro_finish(w, NULL, err, sizeof(err)) == 0);
    zx_avro_free(w);

    zx_avro_file *f = NULL;
    CHECK(zx_avro_file_open(out.p, out.len, &f, err, sizeof(err)) == 0);
    if (!f) {
        printf("  %s\n", err);
        zx_buf_free(&out);
        return;
    }
    size_t cl;
    const uint8_t *c = zx_avro_file_meta(f, "avro.codec", &cl);
    CHECK(c && cl == (codec ? 7u : 4u));
    CHECK(zx_avro_file_schema(f)->kind == ZX_AVK_RECORD);
    const zx_avro_value *v;
    int i = 0;
    while (zx_avro_next(f, &v, err, sizeof(err)) == 1) {
        CHECK(zx_avro_field(v, 1)->l == -i);
        const zx_avro_value *sv = zx_avro_field(v, 2);
        CHECK(i % 2 ? (sv->branch == 1 && sv->len == 3 && !memcmp(sv->p, "odd", 3))
                    : (sv->branch == 0 && zx_avro_is_null(sv)));
        const zx_avro_value *m = zx_avro_field(v, 3);
        CHECK(m->n == 1 && m->items[0].len == 1 && m->items[1].d == i * 0.25);
        const zx_avro_value *x = zx_avro_field(v, 6);
        CHECK(x->n == (size_t)(i % 3) && x->type->element_id == 4);
        for (size_t k = 0; k < x->n; k++)
            CHECK(zx_avro_field(&x->items[k], 5)->l == (int64_t)k &&
                  x->items[k].items[1].len == 2 && !memcmp(x->items[k].items[1].p, "ab", 2));
        const zx_avro_value *ag = zx_avro_field(v, 7);
        CHECK(ag->branch == 1 && zx_avro_field(ag, 5)->l == 99);
        CHECK(v->items[5].l == i % 2 && v->items[6].d == 0.5 && v->items[7].l == (i % 5 == 0));
        CHECK(zx_avro_field(v, 1234) == NULL);
        i++;
    }
    CHECK(i == N);
    zx_avro_file_free(f);

    /* every truncation fails (or, at a block boundary, reads fewer) and
     * every byte flipped reads or fails: never out of bounds (ASan) */
    for (size_t n = 0; n < out.len; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, out.p, n);
        long k = read_all(cut, n);
        CHECK(k < N);
        free(cut);
    }
    uint8_t *bad = malloc(out.len);
    for (size_t at = 0; at < out.len; at += 3)
        for (int bit = 0; bit < 8; bit += 3) {
            memcpy(bad, out.p, out.len);
            bad[at] ^= (uint8_t)(1 << bit);
            (void)read_all(bad, out.len);
        }
    free(bad);
    zx_buf_free(&out);
}

static void test_mlist_read(void)
{
    char err[256] = "";
    uint8_t lo[4] = {1, 0, 0, 0};
    zx_ice_fsummary ps[] = {{.contains_null = 1, .lower = lo, .lower_len = 4},
                            {.has_contains_nan = 1, .contains_nan = 1, .upper = lo,
                             .upper_len = 0}};
    zx_ice_mfile fs[] = {
        {.manifest_path = "s3://b/m1.avro", .manifest_length = 10, .partition_spec_id = 2,
         .content = 1, .sequence_number = 5, .min_sequence_number = 4,
         .added_snapshot_id = -3, .added_files_count = 1, .existing_files_count = 2,
         .deleted_files_count = 3, .added_rows_count = 4, .existing_rows_count = 5,
         .deleted_rows_count = 6, .partitions = ps, .npartitions = 2,
         .key_metadata = (const uint8_t *)"k", .key_metadata_len = 1},
        {.manifest_path = "", .partitions = ps, .npartitions = 0},
    };
    zx_ice_mlist_args a = {.snapshot_id = 1, .sequence_number = 5, .codec = ZX_AVRO_DEFLATE};
    zx_buf out = {0};
    CHECK(zx_ice_mlist_write(&a, fs, 2, &out, err, sizeof(err)) == 0);
    zx_ice_mlist *l = NULL;
    CHECK(zx_ice_mlist_read(out.p, out.len, &l, err, sizeof(err)) == 0);
    if (!l) {
        printf("  %s\n", err);
        zx_buf_free(&out);
        return;
    }
    size_t n;
    const zx_ice_mfile *r = zx_ice_mlist_files(l, &n);
    CHECK(n == 2);
    CHECK(!strcmp(r[0].manifest_path, "s3://b/m1.avro") && r[0].manifest_length == 10);
    CHECK(r[0].partition_spec_id == 2 && r[0].content == 1 && r[0].sequence_number == 5 &&
          r[0].min_sequence_number == 4 && r[0].added_snapshot_id == -3);
    CHECK(r[0].added_files_count == 1 && r[0].existing_files_count == 2 &&
          r[0].deleted_files_count == 3 && r[0].added_rows_count == 4 &&
          r[0].existing_rows_count == 5 && r[0].deleted_rows_count == 6);
    CHECK(r[0].npartitions == 2 && r[0].partitions[0].contains_null &&
          !r[0].partitions[0].has_contains_nan && r[0].partitions[0].lower_len == 4 &&
          !memcmp(r[0].partitions[0].lower, lo, 4) && !r[0].partitions[0].upper);
    CHECK(r[0].partitions[1].has_contains_nan && r[0].partitions[1].contains_nan &&
          !r[0].partitions[1].lower && r[0].partitions[1].upper &&
          r[0].partitions[1].upper_len == 0);
    CHECK(r[0].key_metadata_len == 1 && r[0].key_metadata[0] == 'k');
    CHECK(!strcmp(r[1].manifest_path, ""));
    CHECK(r[1].npartitions == 0 && !r[1].key_metadata);
    /* write what was read: the same bytes (same sync given) */
    zx_buf again = {0};
    static const uint8_t sync[16] = {7};
    a.sync = sync;
    zx_buf first = {0};
    CHECK(zx_ice_mlist_write(&a, fs, 2, &first, err, sizeof(err)) == 0);
    CHECK(zx_ice_mlist_write(&a, r, n, &again, err, sizeof(err)) == 0);
    CHECK(first.len == again.len && !memcmp(first.p, again.p, first.len));
    zx_ice_mlist_free(l);
    zx_ice_mlist_free(NULL);
    CHECK(zx_ice_mlist_read("Obj\x01", 4, &l, err, sizeof(err)) == -1 && !l);
    CHECK(zx_ice_mlist_read("nope", 4, &l, err, sizeof(err)) == -1 && !l);
    zx_buf_free(&out);
    zx_buf_free(&first);
    zx_buf_free(&again);
}

/* A manifest read back (zx_ice_manifest_read) and written again from what
 * was read: the same bytes. */
static void test_manifest_read(void)
{
    char err[256] = "";
    static const uint8_t sync[16] = {3, 1, 4, 1, 5, 9, 2, 6};
    zx_ice_pfield pf[] = {{1000, "d", ZX_ICE_P_DATE}, {1001, "s", ZX_ICE_P_STRING},
                          {1002, "t", ZX_ICE_P_TIMESTAMPTZ}, {1003, "b", ZX_ICE_P_BOOLEAN},
                          {1004, "x", ZX_ICE_P_DOUBLE}, {1005, "y", ZX_ICE_P_BINARY},
                          {1006, "l", ZX_ICE_P_LONG}, {1007, "i", ZX_ICE_P_INT},
                          {1008, "ts", ZX_ICE_P_TIMESTAMP}};
    zx_ice_manifest_args a = {.schema_json = "{\"type\":\"struct\",\"fields\":[]}",
                              .schema_id = 4, .partition_spec_json = "[{}]",
                              .partition_spec_id = 2, .pfields = pf, .npfields = 9,
                              .codec = ZX_AVRO_DEFLATE, .sync = sync};
    zx_ice_pvalue pv[] = {{.i = 19000}, {.s = "", .len = 0}, {.i = -5}, {.i = 1}, {.d = 2.5},
                          {.s = "\x00\x01", .len = 2}, {.is_null = 1}, {.i = -1}, {.i = 7}};
    zx_ice_count cs[] = {{1, 10}, {2, 20}};
    uint8_t b8[8];
    zx_ice_bound lb[] = {{1, b8, zx_ice_bound_long(-3, b8)}, {2, (const uint8_t *)"", 0}};
    int64_t so[] = {4, 8};
    int32_t eq[] = {1};
    zx_ice_entry e = {.status = 0, .has_snapshot_id = 1, .snapshot_id = 9,
                      .has_sequence_number = 1, .sequence_number = 2,
                      .has_file_sequence_number = 1, .file_sequence_number = 3,
                      .file_path = "/a", .file_format = "AVRO", .partition = pv,
                      .record_count = 5, .file_size_in_bytes = 6,
                      .column_sizes = cs, .ncolumn_sizes = 2, .value_counts = cs,
                      .nvalue_counts = 0, .lower_bounds = lb, .nlower_bounds = 2,
                      .upper_bounds = lb, .nupper_bounds = 1,
                      .key_metadata = (const uint8_t *)"km", .key_metadata_len = 2,
                      .split_offsets = so, .nsplit_offsets = 2, .equality_ids = eq,
                      .nequality_ids = 0, .has_sort_order_id = 1, .sort_order_id = 0,
                      .referenced_data_file = "/r"};
    zx_ice_entry e2 = {.status = 1, .file_path = "/b", .partition = pv, .record_count = 1};
    zx_ice_manifest *m = NULL;
    zx_buf first = {0}, again = {0};
    CHECK(zx_ice_manifest_open(&a, &m, err, sizeof(err)) == 0);
    CHECK(m && zx_ice_manifest_add(m, &e, err, sizeof(err)) == 0 &&
          zx_ice_manifest_add(m, &e2, err, sizeof(err)) == 0 &&
          zx_ice_manifest_finish(m, &first, err, sizeof(err)) == 0);
    zx_ice_manifest_free(m);
    zx_ice_mread *r = NULL;
    CHECK(zx_ice_manifest_read(first.p, first.len, &r, err, sizeof(err)) == 0);
    if (!r) {
        printf("  %s\n", err);
        zx_buf_free(&first);
        return;
    }
    CHECK(!strcmp(zx_ice_mread_meta(r, "partition-spec"), "[{}]"));
    CHECK(!strcmp(zx_ice_mread_meta(r, "content"), "data"));
    CHECK(!strcmp(zx_ice_mread_meta(r, "partition-spec-id"), "2"));
    CHECK(zx_ice_mread_meta(r, "schema-id") == NULL);
    size_t npf, n;
    const zx_ice_pfield *rpf = zx_ice_mread_pfields(r, &npf);
    CHECK(npf == 9);
    for (size_t i = 0; i < npf && i < 9; i++)
        CHECK(rpf[i].field_id == pf[i].field_id && !strcmp(rpf[i].name, pf[i].name) &&
              rpf[i].type == pf[i].type);
    const zx_ice_entry *re = zx_ice_mread_entries(r, &n);
    CHECK(n == 2);
    CHECK(re[0].status == 0 && re[0].snapshot_id == 9 && re[0].file_sequence_number == 3);
    CHECK(!strcmp(re[0].file_format, "AVRO") && !strcmp(re[0].referenced_data_file, "/r"));
    CHECK(re[0].value_counts && re[0].nvalue_counts == 0 && !re[0].null_value_counts);
    CHECK(re[0].nlower_bounds == 2 && re[0].lower_bounds[1].len == 0);
    CHECK(re[0].partition[6].is_null && re[0].partition[5].len == 2 &&
          re[0].partition[4].d == 2.5 && re[0].partition[2].i == -5);
    CHECK(!re[1].has_snapshot_id && !re[1].column_sizes && !re[1].split_offsets);
    a.pfields = rpf;
    CHECK(zx_ice_manifest_open(&a, &m, err, sizeof(err)) == 0);
    for (size_t i = 0; m && i < n; i++)
        CHECK(zx_ice_manifest_add(m, &re[i], err, sizeof(err)) == 0);
    CHECK(m && zx_ice_manifest_finish(m, &again, err, sizeof(err)) == 0);
    CHECK(first.len == again.len && !memcmp(first.p, again.p, first.len));
    zx_ice_manifest_free(m);
    zx_ice_mread_free(r);
    zx_ice_mread_free(NULL);
    /* every truncation fails or reads fewer entries */
    for (size_t k = 0; k < first.len; k++) {
        uint8_t *cut = malloc(k ? k : 1);
        memcpy(cut, first.p, k);
        if (zx_ice_manifest_read(cut, k, &r, err, sizeof(err)) == 0) {
            zx_ice_mread_entries(r, &n);
            CHECK(n < 2);
            zx_ice_mread_free(r);
        }
        free(cut);
    }
    zx_buf_free(&first);
    zx_buf_free(&again);
}

int main(void)
{
    test_zigzag();
    test_datums();
    test_ocf(ZX_AVRO_NULL, 0);
    test_ocf(ZX_AVRO_NULL, 1);
    test_ocf(ZX_AVRO_DEFLATE, 0);
    test_ocf_errors();
    test_bounds();
    test_manifest();
    test_mlist();
    test_reader(ZX_AVRO_NULL);
    test_reader(ZX_AVRO_DEFLATE);
    test_mlist_read();
    test_manifest_read();
    if (failures)
        printf("%d check(s) failed\n", failures);
    else
        printf("avro: all checks passed\n");
    return failures != 0;
}
