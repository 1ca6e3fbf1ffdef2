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

int main(void)
{
    keys_and_rows();
    key_checks();
    if (failures)
        printf("test_kafka_msg: %d failure(s)\n", failures);
    return failures != 0;
}
