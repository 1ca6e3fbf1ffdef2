/*
 * kafka_dest_opts.h — the Kafka destination's own options (conf/plugin.h):
 * the rows of kafka_dest_plugin.c (section
 * `pipelines.<name>.destination.kafka`) set them, per reverse sync, into
 * the struct zx_conf_pipeline.dest_own points at; the destination gets it
 * as zx_dest_args.opts.  Owned by the zx_conf.
 */
#ifndef ZX_DEST_KAFKA_OPTS_H
#define ZX_DEST_KAFKA_OPTS_H

#include <stddef.h>
#include <stdint.h>

/* `format` (order of the option row's values) */
enum { ZX_KDEST_JSON = 0, ZX_KDEST_DEBEZIUM = 1, ZX_KDEST_AVRO = 2 };

typedef struct zx_kafka_dest_opts {
    char *connection;        /* `connection`: a `kind: kafka` connection */
    char **topic;            /* `topic`: a list of one name */
    size_t ntopic;
    int format;              /* `format`: ZX_KDEST_* */
    char **key;              /* `key`: the message key's columns; NULL, 0:
                                the sync's key */
    size_t nkey;
    uint32_t batch_rows;     /* `batch_rows`: librdkafka batch.num.messages */
    uint32_t linger_ms;      /* `linger_ms`: librdkafka linger.ms */
    int idempotence;         /* `idempotence`: 1 (default): enable.idempotence */
    char *schema_registry;   /* `schema_registry`: format avro: the
                                registry's Confluent-compatible API */
    uint32_t timeout_ms;     /* `timeout`: the longest wait for the brokers
                                (metadata, each message's delivery, the
                                final flush) */
} zx_kafka_dest_opts;

#endif
