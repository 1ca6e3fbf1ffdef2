/*
 * kafka_conn.h — what a `kind: kafka` connection (conf/config.h; its rows
 * and check in workers/sources/kafka/kafka_plugin.c) means to the shared
 * Kafka client (common/kafka_client.h).  Shared by the Kafka source and
 * the Kafka destination.  Pure.
 */
#ifndef ZX_WORKERS_KAFKA_CONN_H
#define ZX_WORKERS_KAFKA_CONN_H

#include "common/kafka_client.h"
#include "conf/config.h"

/* c's settings as the shared client takes them; its strings are c's:
 * valid while c is. */
zx_kafka_settings zx_kafka_conn_settings(const zx_conf_connection *c);

#endif
