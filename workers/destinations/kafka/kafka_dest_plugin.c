/*
 * kafka_dest_plugin.c — the plug-in kafka of role destination: a reverse
 * sync's rows as messages to a Kafka topic (Apache Kafka, Azure Event
 * Hubs' Kafka endpoint, any broker of the Kafka protocol), dest_kafka.c.
 * Its registration (conf/plugin.h), listed once in workers/plugins.def as
 * dest_kafka (the source plug-in of the same name is another role).  Its
 * option rows set its own struct (kafka_dest_opts.h, p->dest_own); the
 * connection is a `kind: kafka` one, whose options (brokers, security,
 * sasl, tls, properties) are the kafka source plug-in's rows
 * (workers/sources/kafka/kafka_plugin.c): conf/syncs.c resolves it
 * through dest_where into p->dest_conn.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conf/lineage.h"
#include "conf/plugin.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/kafka/kafka_dest_opts.h"
#include "workers/syncs/sync_opts.h"

extern const zx_dest zx_dest_kafka;   /* dest_kafka.c */

#define OWN(f) offsetof(zx_kafka_dest_opts, f)
#define SEC "pipelines.<name>.destination.kafka"

static const char *const formats[] = {"json", "debezium", "avro", NULL};  /* ZX_KDEST_* */
static const char *const sync_only[] = {"sync", NULL};
static const char *const kafka_kinds[] = {"kafka", NULL};

static const zx_cf_option options[] = {
    {.section = SEC, .name = "connection", .type = ZX_CF_STRING,
     .def_doc = "**required** with `kafka`", .offset = OWN(connection), .flags = ZX_CF_OWN,
     .sources = sync_only,
     .help = "The `kind: kafka` connection of the brokers (its `brokers`, `security`, "
     "`sasl`, `tls` and `properties`, as for the kafka source). Azure Event Hubs: "
     "`brokers: <namespace>.servicebus.windows.net:9093`, `security: sasl_ssl`, "
     "`sasl: {mechanism: PLAIN, username: $ConnectionString, password: "
     "${env:EVENTHUBS_CONNECTION_STRING}}`."},
    {.section = SEC, .name = "topic", .type = ZX_CF_TOPIC,
     .def_doc = "**required** with `kafka`", .offset = OWN(topic), .n_offset = OWN(ntopic),
     .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "The topic (an Event Hubs event hub) the messages go to. It must exist: zx "
     "does not create topics, and a missing one fails the run."},
    {.section = SEC, .name = "format", .type = ZX_CF_ENUM_INT, .def = "json",
     .offset = OWN(format), .flags = ZX_CF_OWN, .allowed = formats, .sources = sync_only,
     .help = "`json`: one message per row, its value the row as a JSON object (the NDJSON "
     "rules of the files destination, without the line break); a deleted key (mode "
     "mirror) is a tombstone (a null value). `debezium`: the Debezium envelope as "
     "Debezium's JsonConverter writes it with `schemas.enable=false` (`before`, "
     "`after`, `source`, `op` `c`, `u` or `d`, `ts_ms`, `transaction`), a delete being "
     "an `op: d` message then a tombstone. Either way the message key is the JSON "
     "object of the key columns (`{\"id\":42}`). `avro`: key and value as Avro records "
     "in Confluent's wire format (a zero byte, the schema id, the datum), their schemas "
     "registered in `schema_registry` under the subjects `<topic>-key` and "
     "`<topic>-value`; a deleted key is a tombstone."},
    {.section = SEC, .name = "schema_registry", .type = ZX_CF_STRING,
     .def_doc = "**required** with `format: avro`", .offset = OWN(schema_registry),
     .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "`format: avro`: the schema registry's Confluent-compatible API "
     "(`http://host:8081`). Each run registers its schemas (a schema registered "
     "already keeps its id); one the registry refuses (incompatible with the "
     "subject's, under its compatibility rule) fails the run with the registry's "
     "message."},
    {.section = SEC, .name = "key", .type = ZX_CF_NAMES, .def_doc = "the sync's `key`",
     .offset = OWN(key), .n_offset = OWN(nkey), .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "Result columns that make the message key, hashed with murmur2 as the Java "
     "producer does to pick the partition, so that one key's messages stay in order in "
     "one partition. With mode mirror, columns of the sync's `key` only."},
    {.section = SEC, .name = "batch_rows", .type = ZX_CF_UINT, .def = "1000",
     .offset = OWN(batch_rows), .flags = ZX_CF_OWN, .min = 1, .max = 1000000,
     .sources = sync_only,
     .help = "Messages per produce request to a partition at most (librdkafka's "
     "`batch.num.messages`)."},
    {.section = SEC, .name = "linger_ms", .type = ZX_CF_UINT, .def = "20",
     .offset = OWN(linger_ms), .flags = ZX_CF_OWN, .min = 0, .max = 60000,
     .sources = sync_only,
     .help = "How long messages wait to fill a batch, in milliseconds (librdkafka's "
     "`linger.ms`)."},
    {.section = SEC, .name = "idempotence", .type = ZX_CF_BOOL, .def = "true",
     .offset = OWN(idempotence), .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "The idempotent producer (`enable.idempotence`): retries inside a run never "
     "write a message twice nor out of order. Turn it off only for a broker that "
     "refuses it (no IdempotentWrite permission)."},
    {.section = SEC, .name = "timeout", .type = ZX_CF_DURATION, .def = "30s",
     .offset = OWN(timeout_ms), .flags = ZX_CF_OWN, .min = ZX_CF_SEC,
     .max = 10 * ZX_CF_MIN, .sources = sync_only,
     .help = "The longest wait for the brokers: the topic's metadata when the run "
     "starts, each message's acknowledgement (retries included), and the last ones at "
     "the end of the run. Past it the run fails, and the next run sends everything "
     "again."},
};

static int kafka_dest_check(zx_cf_check *ck, zx_conf_pipeline *p)
{
    const zx_kafka_dest_opts *o = p->dest_own;
    int rc = 0;
    /* a sync's destination, or a stream's forward (conf/forward.c): the
     * same rows, written under another key */
    const char *sec = p->forward ? "forward.kafka" : "destination.kafka";
    static const char *const req[] = {"connection", "topic", NULL};
    for (size_t i = 0; req[i]; i++) {
        char opt[64];
        snprintf(opt, sizeof(opt), "destination.kafka.%s", req[i]);
        if (!zx_check_written(ck, opt)) {
            zx_check_error(ck, "destination.kafka", "pipelines.%s: %s: missing required "
                           "field '%s'", p->name, sec, req[i]);
            rc = -1;
        }
    }
    if (o && (o->format == ZX_KDEST_AVRO) != (o->schema_registry != NULL)) {
        zx_check_error(ck, "destination.kafka", "pipelines.%s: %s: %s",
                       p->name, sec, o->schema_registry ? "schema_registry goes with format: avro"
                       : "format: avro needs schema_registry (its URL)");
        rc = -1;
    }
    if (o && o->schema_registry && strncmp(o->schema_registry, "http://", 7) &&
        strncmp(o->schema_registry, "https://", 8)) {
        zx_check_error(ck, "destination.kafka.schema_registry", "pipelines.%s: "
                       "%s.schema_registry: an http:// or https:// URL", p->name, sec);
        rc = -1;
    }
    const zx_sync_opts *so = zx_sync_opts_of(p);
    if (so && so->mode == ZX_MODE_REPLACE) {
        zx_check_error(ck, "destination.kafka", "pipelines.%s: destination.kafka: a topic "
                       "is a log and cannot be replaced: use mode append (every row each "
                       "run), upsert (the rows new or changed) or mirror (and deletes)",
                       p->name);
        rc = -1;
    }
    if (o && so && so->mode == ZX_MODE_MIRROR && o->nkey) {
        for (size_t i = 0; i < o->nkey; i++) {
            int found = 0;
            for (size_t j = 0; j < so->nkey_cols; j++)
                found |= !strcmp(o->key[i], so->key_cols[j]);
            if (!found) {
                zx_check_error(ck, "destination.kafka.key", "pipelines.%s: "
                               "destination.kafka.key: column %s is not in the sync's key: "
                               "with mode mirror a deleted key's message needs it",
                               p->name, o->key[i]);
                rc = -1;
            }
        }
    }
    return rc;
}

static void kafka_dest_where(const zx_conf_pipeline *p, zx_dest_where *w)
{
    const zx_kafka_dest_opts *o = p->dest_own;
    w->path = NULL;
    w->format = NULL;
    w->connection = o ? o->connection : NULL;
    w->conn_kinds = kafka_kinds;
    w->option = "destination.kafka";
}

/* Lineage: the topic it produces to, on its connection (a sync's, or a
 * stream's forward). */
static void kafka_dest_lineage(const zx_conf *c, const zx_conf_pipeline *p,
                               zx_lineage_out *out)
{
    (void)c;
    const zx_kafka_dest_opts *o = p->dest_own;
    for (size_t i = 0; o && i < o->ntopic; i++)
        zx_lineage_ext(out, "kafka.topic", o->connection, o->topic[i]);
}

const zx_plugin zx_plugin_dest_kafka = {
    .name = "kafka",
    .role = ZX_PLUGIN_DESTINATION,
    .lineage = kafka_dest_lineage,
    .dest = &zx_dest_kafka,
    .check = kafka_dest_check,
    .dest_where = kafka_dest_where,
    .section_doc = "Kafka (and Azure Event Hubs' Kafka endpoint): each row sent is one "
     "message to the topic, keyed by the JSON of its key columns and put in the "
     "partition the Java producer would pick for that key (murmur2). A run succeeds "
     "only once the brokers acknowledged every message (`acks=all`); the row hashes "
     "are kept only then. Delivery is at least once: a run that fails or is stopped "
     "after some messages were acknowledged sends them again, in full, next run "
     "(consumers dedupe on the key and `source.seq` of the `debezium` format). "
     "`format: avro` registers its schemas in a Confluent-compatible schema registry. Modes "
     "append, upsert and mirror (deletes as tombstones); not replace.",
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(zx_kafka_dest_opts),
    .doc = "Rows as messages to a Kafka or Azure Event Hubs topic: JSON or Debezium "
     "envelopes, keyed, murmur2-partitioned, acknowledged before the run succeeds.",
};
