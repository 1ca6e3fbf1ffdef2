/*
 * test_kafka_client.c — unit tests of common/kafka_client.c, the shared
 * librdkafka configuration builder: what it sets from a connection's
 * settings (brokers, security, SASL, TLS files, properties, client.id),
 * that a property of the user wins where zx only proposes a default, that
 * a refusal names the property and never shows a secret value, and the
 * one-line description.
 *
 * It must never: reach a broker (no rd_kafka_t is made).
 */
#include "common/kafka_client.h"
#include "tests/unit/check.h"

#include <string.h>

/* conf's value of key, "" when unset. */
static const char *get(rd_kafka_conf_t *conf, const char *key)
{
    static char v[512];
    size_t n = sizeof(v);
    if (rd_kafka_conf_get(conf, key, v, &n) != RD_KAFKA_CONF_OK)
        return "";
    return v;
}

static void test_build(void)
{
    char *keys[] = { "socket.timeout.ms", "client.id" };
    char *vals[] = { "12345", "mine" };
    zx_kafka_settings s = {
        .brokers = "k1:9092,k2:9092", .security = "sasl_ssl",
        .sasl_mechanism = "SCRAM-SHA-512", .sasl_username = "zx", .sasl_password = "pw-1",
        .tls_ca = "/etc/zx/ca.pem", .prop_keys = keys, .prop_values = vals, .nprops = 2,
    };
    zx_kafka_seen seen = { 0 };
    char err[256] = "";
    rd_kafka_conf_t *c = zx_kafka_conf_new(&s, &seen, err, sizeof(err));
    CHECK(c != NULL);
    if (!c)
        return;
    CHECK(strcmp(get(c, "bootstrap.servers"), "k1:9092,k2:9092") == 0);
    CHECK(strcmp(get(c, "security.protocol"), "sasl_ssl") == 0);
    CHECK(strcmp(get(c, "sasl.mechanisms"), "SCRAM-SHA-512") == 0);
    CHECK(strcmp(get(c, "sasl.username"), "zx") == 0);
    CHECK(strcmp(get(c, "ssl.ca.location"), "/etc/zx/ca.pem") == 0);
    CHECK(strcmp(get(c, "socket.timeout.ms"), "12345") == 0);
    /* the user's client.id wins over zx's default */
    CHECK(strcmp(get(c, "client.id"), "mine") == 0);
    /* a default proposed with user_wins does not override the user */
    CHECK(zx_kafka_conf_set(c, &s, 1, "socket.timeout.ms", "60000", err, sizeof(err)) == 0);
    CHECK(strcmp(get(c, "socket.timeout.ms"), "12345") == 0);
    /* ... but one not set by the user is set */
    CHECK(zx_kafka_conf_set(c, &s, 1, "session.timeout.ms", "10000", err, sizeof(err)) == 0);
    CHECK(strcmp(get(c, "session.timeout.ms"), "10000") == 0);
    CHECK(zx_kafka_x509_error(&seen) == 0);
    rd_kafka_conf_destroy(c);
}

static void test_plain_defaults(void)
{
    /* plaintext: SASL and TLS settings are not applied, client.id is zx */
    zx_kafka_settings s = { .brokers = "k1:9092", .sasl_username = "ignored",
                            .tls_ca = "/nope" };
    char err[256] = "";
    rd_kafka_conf_t *c = zx_kafka_conf_new(&s, NULL, err, sizeof(err));
    CHECK(c != NULL);
    if (!c)
        return;
    CHECK(strcmp(get(c, "security.protocol"), "plaintext") == 0);
    CHECK(strcmp(get(c, "client.id"), "zx") == 0);
    CHECK(strcmp(get(c, "sasl.username"), "ignored") != 0);
    CHECK(strcmp(get(c, "ssl.ca.location"), "/nope") != 0);
    rd_kafka_conf_destroy(c);
}

static void test_refused(void)
{
    char *keys[] = { "no.such.property" };
    char *vals[] = { "1" };
    zx_kafka_settings s = { .brokers = "k1:9092", .prop_keys = keys, .prop_values = vals,
                            .nprops = 1 };
    char err[256] = "";
    CHECK(zx_kafka_conf_new(&s, NULL, err, sizeof(err)) == NULL);
    CHECK(strstr(err, "librdkafka refused property no.such.property") != NULL);

    /* a secret's value is never shown */
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    err[0] = '\0';
    CHECK(zx_kafka_conf_set(c, &s, 0, "my.secret.key", "hunter2-value", err, sizeof(err)) < 0);
    CHECK(strcmp(err, "librdkafka refused the value of property my.secret.key") == 0);
    CHECK(strstr(err, "hunter2") == NULL);
    rd_kafka_conf_destroy(c);
}

static void test_describe(void)
{
    char out[128];
    zx_kafka_settings a = { .security = "sasl_ssl", .sasl_mechanism = "SCRAM-SHA-512",
                            .sasl_username = "zx" };
    zx_kafka_describe(&a, out, sizeof(out));
    CHECK(strcmp(out, "SASL_SSL, SCRAM-SHA-512 as zx") == 0);
    zx_kafka_settings b = { 0 };
    zx_kafka_describe(&b, out, sizeof(out));
    CHECK(strcmp(out, "PLAINTEXT") == 0);
    CHECK(zx_kafka_is_tls(&a) && zx_kafka_is_sasl(&a) && !zx_kafka_is_tls(&b));
}

/* The prefetch bound follows the budget (a quarter of a worker's ring),
 * and a user's property, or its alias, wins over it. */
static void test_prefetch(void)
{
    zx_kafka_settings s = { .brokers = "k1:9092" };
    char err[256] = "";
    zx_kafka_prefetch pf;
    /* a 64 MiB ring: a quarter of it */
    rd_kafka_conf_t *c = zx_kafka_conf_new(&s, NULL, err, sizeof(err));
    CHECK(c && zx_kafka_bound_prefetch(c, &s, 16u << 20, &pf, err, sizeof(err)) == 0);
    CHECK(pf.queued_kbytes == 16384 && strcmp(get(c, "queued.max.messages.kbytes"), "16384") == 0);
    CHECK(pf.fetch_max_bytes == 8 << 20 && pf.partition_fetch_bytes == 1 << 20);
    CHECK(pf.queued_min_messages == 32768);
    rd_kafka_conf_destroy(c);
    /* a small ring: the floors (1 MiB queued, 1 MiB a fetch, 1000 messages) */
    c = zx_kafka_conf_new(&s, NULL, err, sizeof(err));
    CHECK(c && zx_kafka_bound_prefetch(c, &s, 256u << 10, &pf, err, sizeof(err)) == 0);
    CHECK(pf.queued_kbytes == 1024 && pf.fetch_max_bytes == 1 << 20);
    CHECK(pf.partition_fetch_bytes == 512 << 10 && pf.queued_min_messages == 2048);
    rd_kafka_conf_destroy(c);
    /* a huge ring: librdkafka's own defaults at most */
    c = zx_kafka_conf_new(&s, NULL, err, sizeof(err));
    CHECK(c && zx_kafka_bound_prefetch(c, &s, (uint64_t)1 << 34, &pf, err, sizeof(err)) == 0);
    CHECK(pf.queued_kbytes == 65536 && pf.queued_min_messages == 100000);
    CHECK(pf.fetch_max_bytes == 32 << 20 && pf.partition_fetch_bytes == 1 << 20);
    rd_kafka_conf_destroy(c);
    /* the user's values win, fetch.message.max.bytes for its alias too */
    char *keys[] = { "queued.max.messages.kbytes", "fetch.message.max.bytes",
                     "queued.min.messages" };
    char *vals[] = { "200000", "4194304", "500000" };
    zx_kafka_settings u = { .brokers = "k1:9092", .prop_keys = keys, .prop_values = vals,
                            .nprops = 3 };
    c = zx_kafka_conf_new(&u, NULL, err, sizeof(err));
    CHECK(c && zx_kafka_bound_prefetch(c, &u, 16u << 20, &pf, err, sizeof(err)) == 0);
    CHECK(pf.queued_kbytes == 200000 && pf.partition_fetch_bytes == 4194304);
    CHECK(pf.queued_min_messages == 500000 && pf.fetch_max_bytes == 8 << 20);
    rd_kafka_conf_destroy(c);
    /* fetch.max.bytes stays where librdkafka accepts it beside the
     * user's message.max.bytes */
    char *k2[] = { "message.max.bytes" };
    char *v2[] = { "4000000" };
    zx_kafka_settings m = { .brokers = "k1:9092", .prop_keys = k2, .prop_values = v2,
                            .nprops = 1 };
    c = zx_kafka_conf_new(&m, NULL, err, sizeof(err));
    CHECK(c && zx_kafka_bound_prefetch(c, &m, 256u << 10, &pf, err, sizeof(err)) == 0);
    CHECK(pf.fetch_max_bytes == 4000000);
    rd_kafka_conf_destroy(c);
}

int main(void)
{
    test_build();
    test_prefetch();
    test_plain_defaults();
    test_refused();
    test_describe();
    if (failures)
        printf("test_kafka_client: %d check(s) failed\n", failures);
    else
        printf("test_kafka_client: all checks passed\n");
    return failures != 0;
}
