/*
 * test_kafka_msg.c — the Kafka destination's message bytes
 * (workers/destinations/kafka/kafka_msg.h): keys (exact bytes, the same
 * for a row and for its deleted key), json values, Debezium envelopes and
 * their seq, misfits, and the key column checks.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "common/buf.h"
#include "workers/destinations/kafka/kafka_avro.h"
#include "workers/destinations/kafka/kafka_msg.h"

static const zx_dcol cols[] = {
    {"region", ZX_DT_TEXT, 0, 0}, {"id", ZX_DT_INT64, 0, 0}, {"price", ZX_DT_DOUBLE, 0, 0},
    {"amount", ZX_DT_DECIMAL, 10, 2}, {"note", ZX_DT_TEXT, 0, 0},
};

static zx_value text(const char *s)
{
    return (zx_value){.type = ZX_T_TEXT, .len = (uint32_t)strlen(s), .s = s};
}

static void keys_and_rows(void)
{
    const char *sk[] = {"region", "id"};
    zx_kmsg m;
    char err[200];
    CHECK(zx_kmsg_init(&m, cols, 5, NULL, 0, sk, 2, 1, err, sizeof(err)) == 0);
    zx_value v[5] = {text("eu"), {.type = ZX_T_INT, .u.i = 42}, {.type = ZX_T_REAL, .u.d = 1.5},
                     text("12.30"), text("say \"hi\"\n")};
    zx_buf b;
    zx_buf_init(&b);
    CHECK(zx_kmsg_key(&m, v, &b) == 0);
    CHECK(!strcmp(b.p, "{\"region\":\"eu\",\"id\":42}"));
    /* the deleted key gives the same bytes */
    zx_buf k2;
    zx_buf_init(&k2);
    zx_value kv[2] = {text("eu"), {.type = ZX_T_INT, .u.i = 42}};
    CHECK(zx_kmsg_key_del(&m, kv, &k2) == 0);
    CHECK(k2.len == b.len && !memcmp(k2.p, b.p, b.len));
    zx_buf_reset(&b);
    CHECK(zx_kmsg_row(&m, v, &b) == 0);
    CHECK(!strcmp(b.p, "{\"region\":\"eu\",\"id\":42,\"price\":1.5,\"amount\":\"12.30\","
                       "\"note\":\"say \\\"hi\\\"\\n\"}"));
    /* NaN: null, counted */
    v[2].u.d = NAN;
    zx_buf_reset(&b);
    CHECK(zx_kmsg_row(&m, v, &b) == 0);
    CHECK(strstr(b.p, "\"price\":null") != NULL);
    CHECK(m.nulled == 1 && m.misfit && !strcmp(m.misfit, "price"));
    /* Debezium: c and d */
    zx_kmsg_src s = {"out", "crm.customers", 1796309353960165u, 7, 1700000000123};
    v[2].u.d = 2.0;
    zx_buf_reset(&b);
    CHECK(zx_kmsg_debezium(&m, &s, 'c', v, NULL, &b) == 0);
    CHECK(!strncmp(b.p, "{\"before\":null,\"after\":{\"region\":\"eu\",\"id\":42,\"price\":2,", 55));
    CHECK(strstr(b.p, ",\"source\":{\"version\":\"zx\",\"connector\":\"zx\",\"name\":\"out\","
                      "\"ts_ms\":1700000000123,\"snapshot\":\"false\",\"db\":\"zx\",\"table\":"
                      "\"crm.customers\",\"run\":1796309353960165,\"seq\":"
                      "\"00001796309353960165000000000007\"},\"op\":\"c\",\"ts_ms\":"
                      "1700000000123,\"transaction\":null}") != NULL);
    zx_buf_reset(&b);
    CHECK(zx_kmsg_debezium(&m, &s, 'd', NULL, kv, &b) == 0);
    CHECK(!strncmp(b.p, "{\"before\":{\"region\":\"eu\",\"id\":42},\"after\":null,", 46));
    CHECK(strstr(b.p, "\"op\":\"d\"") != NULL);
    /* seq: text order is (run, position) order */
    char a[33], c[33];
    zx_kmsg_src s1 = {0, 0, 99, 123456, 0}, s2 = {0, 0, 100, 0, 0};
    zx_kmsg_seq(&s1, a);
    zx_kmsg_seq(&s2, c);
    CHECK(strlen(a) == 32 && strcmp(a, c) < 0);
    zx_buf_free(&b);
    zx_buf_free(&k2);
    zx_kmsg_free(&m);
}

static void key_checks(void)
{
    const char *sk[] = {"id"};
    const char *mk[] = {"region"};
    const char *bad[] = {"nope"};
    zx_kmsg m;
    char err[200];
    /* a message key outside the sync key: fine without deletes */
    CHECK(zx_kmsg_init(&m, cols, 5, mk, 1, sk, 1, 0, err, sizeof(err)) == 0);
    zx_kmsg_free(&m);
    CHECK(zx_kmsg_init(&m, cols, 5, mk, 1, sk, 1, 1, err, sizeof(err)) == -1);
    CHECK(strstr(err, "region") && strstr(err, "sync's key"));
    CHECK(zx_kmsg_init(&m, cols, 5, bad, 1, sk, 1, 0, err, sizeof(err)) == -1);
    CHECK(strstr(err, "nope") != NULL);
    /* no key at all: no message key (append), but not with deletes */
    CHECK(zx_kmsg_init(&m, cols, 5, NULL, 0, NULL, 0, 0, err, sizeof(err)) == 0);
    zx_buf b;
    zx_buf_init(&b);
    zx_value v[5] = {{0}};
    CHECK(zx_kmsg_key(&m, v, &b) == 0 && b.len == 0);
    zx_buf_free(&b);
    zx_kmsg_free(&m);
    CHECK(zx_kmsg_init(&m, cols, 5, NULL, 0, NULL, 0, 1, err, sizeof(err)) == -1);
}

static void avro(void)
{
    static const zx_dcol ac[] = {
        {"id", ZX_DT_INT64, 0, 0}, {"ok", ZX_DT_BOOL, 0, 0}, {"at", ZX_DT_TIMESTAMP, 0, 0},
        {"d", ZX_DT_DATE, 0, 0}, {"amt", ZX_DT_DECIMAL, 10, 2}, {"raw", ZX_DT_BYTES, 0, 0},
        {"t", ZX_DT_TEXT, 0, 0}, {"x", ZX_DT_DOUBLE, 0, 0},
    };
    zx_buf b, scratch;
    zx_buf_init(&b);
    zx_buf_init(&scratch);
    char err[200];
    CHECK(zx_kavro_schema("crm.customers", ac, 8, &b, err, sizeof(err)) == 0);
    CHECK(!strncmp(b.p, "{\"type\":\"record\",\"name\":\"crm_customers\",\"namespace\":\"zx\","
                        "\"fields\":[{\"name\":\"id\",\"type\":[\"null\",\"long\"],\"default\":null},",
                   110));
    CHECK(strstr(b.p, "{\"name\":\"amt\",\"type\":[\"null\",{\"type\":\"bytes\",\"logicalType\":"
                      "\"decimal\",\"precision\":10,\"scale\":2}],\"default\":null}") != NULL);
    CHECK(strstr(b.p, "\"timestamp-micros\"") && strstr(b.p, "\"date\""));
    zx_buf_reset(&b);
    CHECK(zx_kavro_schema("9lives", ac, 1, &b, err, sizeof(err)) == 0 &&
          strstr(b.p, "\"name\":\"zx_9lives\""));
    static const zx_dcol badcol[] = {{"my col", ZX_DT_TEXT, 0, 0}};
    CHECK(zx_kavro_schema("t", badcol, 1, &b, err, sizeof(err)) == -1 && strstr(err, "my col"));
    zx_value v[8] = {
        {.type = ZX_T_INT, .u.i = -1}, {.type = ZX_T_BOOL, .u.b = 1},
        {.type = ZX_T_TIMESTAMP, .u.i = 1, .s = "1970-01-01T00:00:00.000001Z", .len = 27},
        text("1970-01-02"), text("-1.00"), text("ab"), {.type = ZX_T_NULL},
        {.type = ZX_T_REAL, .u.d = 1.0},
    };
    uint64_t nulled = 0;
    size_t misfit = SIZE_MAX;
    zx_buf_reset(&b);
    CHECK(zx_kavro_datum(ac, 8, v, &b, &scratch, &nulled, &misfit) == 0);
    static const unsigned char want[] = {2, 1, 2, 1, 2, 2, 2, 2, 2, 2, 0x9c, 2, 4, 'a', 'b', 0,
                                         2, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f};
    CHECK(b.len == sizeof(want) && !memcmp(b.p, want, sizeof(want)));
    CHECK(nulled == 0);
    /* a misfit: text in a long column is null, counted */
    v[0] = text("not a number");
    zx_buf_reset(&b);
    CHECK(zx_kavro_datum(ac, 1, v, &b, &scratch, &nulled, &misfit) == 0);
    CHECK(b.len == 1 && b.p[0] == 0 && nulled == 1 && misfit == 0);
    unsigned char h[5];
    zx_kavro_header(0x01020304u, h);
    CHECK(h[0] == 0 && h[1] == 1 && h[2] == 2 && h[3] == 3 && h[4] == 4);
    zx_buf_free(&b);
    zx_buf_free(&scratch);
}

int main(void)
{
    keys_and_rows();
    avro();
    key_checks();
    if (failures)
        printf("test_kafka_msg: %d failure(s)\n", failures);
    return failures != 0;
}
