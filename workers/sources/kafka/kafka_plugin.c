/*
 * kafka_plugin.c — the plug-in kafka: source: kafka, messages consumed
 * from Kafka topics (kafka.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.c.
 * Its option rows still live in conf/options.c (issue 19 moves them here).
 */
#include "conf/plugin.h"
#include "workers/sources/kafka/kafka_int.h"

extern const zx_source zx_source_kafka;   /* kafka.c */

static const char *const conn_kinds[] = {"kafka", NULL};
static const char *const metadata[] = {"_key", "_partition", "_offset", "_timestamp",
                                       "_ingested_at", NULL};

const zx_plugin zx_plugin_kafka = {
    .name = "kafka",
    .role = ZX_PLUGIN_SOURCE,
    .conn_kinds = conn_kinds,
    .metadata = metadata,
    .test = kafka_test,
    .source = &zx_source_kafka,
    .doc = "messages are consumed from `topic` or `topics` on the Kafka cluster "
     "of `connection`.",
};
