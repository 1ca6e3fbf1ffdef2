/*
 * kafka_conn.c — a kafka connection's settings for the shared client
 * (kafka_conn.h).
 */
#include "workers/kafka_conn.h"

zx_kafka_settings zx_kafka_conn_settings(const zx_conf_connection *c)
{
    return (zx_kafka_settings){
        .brokers = c->brokers_csv, .security = c->security,
        .sasl_mechanism = c->sasl_mechanism, .sasl_username = c->sasl_username,
        .sasl_password = c->sasl_password, .tls_ca = c->tls_ca, .tls_cert = c->tls_cert,
        .tls_key = c->tls_key, .tls_key_password = c->tls_key_password,
        .prop_keys = c->prop_keys, .prop_values = c->prop_values, .nprops = c->nprops,
    };
}
