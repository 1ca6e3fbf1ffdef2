/*
 * kafka_conf.c — the Kafka source's connection (conf/config.h, validated
 * already) given to the shared Kafka client (common/kafka_client.h),
 * which builds the librdkafka configuration; and the source's error
 * context from it.  See kafka_int.h.
 */
#include <string.h>

#include "common/kafka_client.h"
#include "workers/kafka_conn.h"
#include "workers/sources/kafka/kafka_int.h"

rd_kafka_conf_t *kc_build(const zx_conf_connection *c, kc_seen *seen, char *err,
                          size_t errlen)
{
    zx_kafka_settings s = zx_kafka_conn_settings(c);
    return zx_kafka_conf_new(&s, seen, err, errlen);
}

int kc_set(rd_kafka_conf_t *conf, const zx_conf_connection *c, int user_wins,
           const char *key, const char *val, char *err, size_t errlen)
{
    zx_kafka_settings s = zx_kafka_conn_settings(c);
    return zx_kafka_conf_set(conf, &s, user_wins, key, val, err, errlen);
}

int kc_bound_prefetch(rd_kafka_conf_t *conf, const zx_conf_connection *c, uint64_t budget,
                      zx_kafka_prefetch *out, char *err, size_t errlen)
{
    zx_kafka_settings s = zx_kafka_conn_settings(c);
    return zx_kafka_bound_prefetch(conf, &s, budget, out, err, errlen);
}

void kc_err_ctx(const zx_conf_connection *c, const char *group, const kc_seen *seen,
                ke_ctx *out)
{
    zx_kafka_settings s = zx_kafka_conn_settings(c);
    memset(out, 0, sizeof(*out));
    out->security = c->security;
    if (zx_kafka_is_sasl(&s)) {
        out->mechanism = c->sasl_mechanism;
        out->username = c->sasl_username;
    }
    out->group = group;
    out->rdkafka_version = rd_kafka_version();
    out->x509_error = zx_kafka_x509_error(seen);
}

void kc_describe(const zx_conf_connection *c, char *out, size_t n)
{
    zx_kafka_settings s = zx_kafka_conn_settings(c);
    zx_kafka_describe(&s, out, n);
}
