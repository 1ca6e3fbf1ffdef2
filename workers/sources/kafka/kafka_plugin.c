/*
 * kafka_plugin.c — the plug-in kafka: source: kafka, messages consumed
 * from Kafka topics (kafka.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.def.
 * Its option rows are here: the loader parses, checks, compares and frees
 * them, and conf/OPTIONS.md documents them, from this table.
 */
#include <stddef.h>

#include "conf/lineage.h"
#include "conf/plugin.h"
#include "workers/sources/kafka/kafka_conn_check.h"
#include "workers/sources/kafka/kafka_int.h"
#include "workers/sources/kafka/kafka_opts.h"

extern const zx_source zx_source_kafka;   /* kafka.c */

static const char *const conn_kinds[] = {"kafka", NULL};
static const char *const metadata[] = {"_key", "_partition", "_offset", "_timestamp",
                                       "_ingested_at", NULL};

#define CONN(f) offsetof(zx_conf_connection, f)
#define OWN(f) offsetof(zx_kafka_opts, f)

static const char *const securities[] = {"plaintext", "ssl", "sasl_plaintext",
                                         "sasl_ssl", NULL};
static const char *const mechanisms[] = {"PLAIN", "SCRAM-SHA-256",
                                         "SCRAM-SHA-512", NULL};
/* the tls files: kafka's, and redis connections' (redis_plugin.c) */
static const char *const tls_kinds[] = {"kafka", "redis", NULL};
static const char *const starts[] = {"oldest", "new", NULL};
static const char *const topic_resets[] = {"restart", "fail", NULL};
/* order = ZX_ENC_* of kafka_opts.h, and zx_wire_mode of
 * common/schema_registry.h */
static const char *const encodings[] = {"json", "avro", NULL};
static const char *const wires[] = {"confluent", "apicurio", "headers", NULL};
/* librdkafka properties zx sets from its own options: (key, what to write
 * instead).  Compared without case. */
static const char *const owned_props[] = {
    "bootstrap.servers", "use `brokers`",
    "metadata.broker.list", "use `brokers`",
    "security.protocol", "use `security`",
    "sasl.mechanism", "use `sasl.mechanism`",
    "sasl.mechanisms", "use `sasl.mechanism`",
    "sasl.username", "use `sasl.username`",
    "sasl.password", "use `sasl.password`",
    "ssl.ca.location", "use `tls.ca`",
    "ssl.certificate.location", "use `tls.cert`",
    "ssl.key.location", "use `tls.key`",
    "ssl.key.password", "use `tls.key_password`",
    "group.id", "use the pipeline's `group`",
    "enable.auto.commit", "zx commits offsets itself, once the rows are "
                          "committed",
    "enable.auto.offset.store", "zx stores offsets itself, once the rows are "
                                "committed",
    "auto.offset.reset", "use the pipeline's `start`",
    NULL, NULL,
};

static const zx_cf_option options[] = {
    {.section = "connections.<name>", .name = "brokers",
     .type = ZX_CF_HOSTPORTS, .offset = CONN(brokers),
     .n_offset = CONN(nbrokers), .flags = ZX_CF_REQUIRED,
     .help = "Bootstrap brokers, each `host:port` (`[ipv6]:port`): a list "
     "(`[\"k1:9092\", \"k2:9092\"]`) or one comma-separated string "
     "(`k1:9092,k2:9092`, handy with `${env:NAME}`)."},
    {.section = "connections.<name>", .name = "security", .type = ZX_CF_ENUM,
     .def = "plaintext", .offset = CONN(security), .allowed = securities,
     .help = "How the connection is protected: `plaintext` (none), `ssl` "
     "(TLS), `sasl_plaintext` (SASL without TLS), `sasl_ssl` (SASL over "
     "TLS)."},
    {.section = "connections.<name>", .name = "properties", .type = ZX_CF_PROPS,
     .def_doc = "none", .offset = CONN(prop_keys), .v_offset = CONN(prop_values),
     .n_offset = CONN(nprops), .allowed = owned_props,
     .help = "Other librdkafka properties, passed through as text "
     "(`{fetch.max.bytes: 52428800, socket.keepalive.enable: true}`). "
     "Properties zx sets from its own options are refused. A consumer's "
     "prefetch (`queued.max.messages.kbytes`, `queued.min.messages`, "
     "`fetch.max.bytes`, `max.partition.fetch.bytes`) is bounded by a quarter "
     "of its pipeline's ring unless set here (docs/architecture.md, 6.2). Values of "
     "properties whose name contains `password`, `secret` or "
     "`sasl.oauthbearer` are secrets: never logged."},
    {.section = "connections.<name>.sasl", .name = "mechanism",
     .type = ZX_CF_ENUM, .def_doc = "**required** with `sasl`",
     .offset = CONN(sasl_mechanism), .allowed = mechanisms,
     .help = "The SASL mechanism."},
    {.section = "connections.<name>.sasl", .name = "username",
     .type = ZX_CF_STRING, .def_doc = "**required** with `sasl`",
     .offset = CONN(sasl_username),
     .help = "The user name, taken literally but for references "
     "(`$ConnectionString` for Azure Event Hubs is literal: only "
     "`${env:NAME}` and `${file:PATH}` are references)."},
    {.section = "connections.<name>.sasl", .name = "password",
     .type = ZX_CF_STRING, .def_doc = "**required** with `sasl`",
     .offset = CONN(sasl_password), .flags = ZX_CF_SECRET,
     .help = "The password. Prefer `${env:NAME}` or `${file:PATH}` to keep "
     "it out of the file."},
    {.section = "connections.<name>.tls", .name = "ca", .type = ZX_CF_PATH,
     .def_doc = "the system's CA store", .offset = CONN(tls_ca), .sources = tls_kinds,
     .help = "CA certificate(s) that sign the brokers' certificates."},
    {.section = "connections.<name>.tls", .name = "cert", .type = ZX_CF_PATH,
     .def_doc = "none", .offset = CONN(tls_cert), .sources = tls_kinds,
     .help = "Client certificate, for brokers that authenticate clients by "
     "TLS; needs `key`."},
    {.section = "connections.<name>.tls", .name = "key", .type = ZX_CF_PATH,
     .def_doc = "none", .offset = CONN(tls_key), .sources = tls_kinds,
     .help = "The client certificate's private key; needs `cert`."},
    {.section = "connections.<name>.tls", .name = "key_password",
     .type = ZX_CF_STRING, .def_doc = "none",
     .offset = CONN(tls_key_password), .flags = ZX_CF_SECRET, .sources = tls_kinds,
     .help = "Password of an encrypted `key`."},

    {.section = "pipelines.<name>", .name = "topic", .type = ZX_CF_TOPIC,
     .def_doc = "one of `topic`, `topics` is **required**",
     .offset = OWN(topics), .n_offset = OWN(ntopics), .flags = ZX_CF_OWN,
     .help = "The topic to consume: letters, digits, `.`, `_` and `-`, at "
     "most 249."},
    {.section = "pipelines.<name>", .name = "topics", .type = ZX_CF_TOPICS,
     .def_doc = "one of `topic`, `topics` is **required**",
     .offset = OWN(topics), .n_offset = OWN(ntopics), .flags = ZX_CF_OWN,
     .help = "Topics to consume: a list of names (`[a, b]`), or one regular "
     "expression (POSIX extended) written as a string starting with `^` "
     "(`\"^clicks\\\\..*\"`): every matching topic, including ones created "
     "later."},
    {.section = "pipelines.<name>", .name = "group", .type = ZX_CF_STRING,
     .def_doc = "none", .offset = OWN(group), .flags = ZX_CF_OWN,
     .help = "Kafka consumer group (librdkafka's `group.id`) the pipeline "
     "consumes as. Any text without control characters."},
    {.section = "pipelines.<name>", .name = "start", .type = ZX_CF_ENUM_INT,
     .def = "oldest", .offset = OWN(start_new), .flags = ZX_CF_OWN, .allowed = starts,
     .help = "Where a partition with no committed offset starts: `oldest` "
     "(its first message still kept) or `new` (only messages produced from "
     "now on)."},
    {.section = "pipelines.<name>", .name = "on_topic_reset", .type = ZX_CF_ENUM_INT,
     .def = "restart", .offset = OWN(topic_reset_fail),
     .flags = ZX_CF_OWN, .allowed = topic_resets,
     .help = "What to do when a partition's stored position is not in its "
     "topic any more: the topic was deleted and created again (or "
     "truncated) while zx was not reading it (the message before the "
     "position is another one, or is gone). `restart`: say so (log and "
     "feed `kafka_topic_reset`, `zxctl status`) and read the partition again "
     "from its first message; `fail`: the pipeline fails with that "
     "message and is not restarted."},
    {.section = "pipelines.<name>", .name = "encoding", .type = ZX_CF_ENUM_INT,
     .def = "json", .offset = OWN(encoding),
     .flags = ZX_CF_OWN, .allowed = encodings,
     .help = "`format: debezium` only: `json`, or `avro` (Confluent's or "
     "Apicurio's wire format, schemas fetched from `schema_registry`)."},
    {.section = "pipelines.<name>.schema_registry", .name = "url",
     .type = ZX_CF_STRING, .def_doc = "**required** with `encoding: avro`",
     .offset = OWN(registry_url), .flags = ZX_CF_OWN,
     .help = "The schema registry's Confluent-compatible API "
     "(`http://host:8081`; Apicurio 3: `http://host:8080/apis/ccompat/v7`). "
     "Each schema is fetched once and cached; while the registry cannot be "
     "reached the stream waits, losing nothing."},
    {.section = "pipelines.<name>.schema_registry", .name = "username",
     .type = ZX_CF_STRING, .def_doc = "none", .offset = OWN(registry_username),
     .flags = ZX_CF_OWN,
     .help = "User for HTTP basic authentication."},
    {.section = "pipelines.<name>.schema_registry", .name = "password",
     .type = ZX_CF_STRING, .def_doc = "none", .offset = OWN(registry_password),
     .flags = ZX_CF_OWN | ZX_CF_SECRET,
     .help = "Its password. Prefer `${env:NAME}` or `${file:PATH}`."},
    {.section = "pipelines.<name>.schema_registry", .name = "wire",
     .type = ZX_CF_ENUM_INT, .def = "confluent", .offset = OWN(registry_wire),
     .flags = ZX_CF_OWN, .allowed = wires,
     .help = "Where a message names its schema: `confluent` (a 0 byte and a "
     "4-byte id), `apicurio` (a 0 byte and an 8-byte global id) or "
     "`headers` (Apicurio's `apicurio.value.globalId` header)."},
};

/* Lineage: the topics it consumes (or the regex naming them), on its
 * connection. */
static void kafka_lineage(const zx_conf *c, const zx_conf_pipeline *p, zx_lineage_out *out)
{
    (void)c;
    const zx_kafka_opts *o = p->own;
    for (size_t i = 0; o && i < o->ntopics; i++)
        zx_lineage_ext(out, o->topics_regex ? "kafka.topic_regex" : "kafka.topic",
                       p->connection, o->topics[i]);
}

const zx_plugin zx_plugin_kafka = {
    .name = "kafka",
    .role = ZX_PLUGIN_SOURCE,
    .lineage = kafka_lineage,
    .caps = ZX_PLUGIN_STREAM | ZX_PLUGIN_MIRROR | ZX_PLUGIN_PARK,
    .conn_kinds = conn_kinds,
    .metadata = metadata,
    .check = kafka_check,
    .test = kafka_test,
    .source = &zx_source_kafka,
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(zx_kafka_opts),
    .doc = "messages are consumed from `topic` or `topics` on the Kafka cluster "
     "of `connection`.",
    .check_connection = zx_kafka_check_connection,
};
