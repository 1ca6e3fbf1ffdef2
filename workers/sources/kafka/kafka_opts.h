/*
 * kafka_opts.h — the kafka source's own options (conf/plugin.h): the rows
 * flagged ZX_CF_OWN of kafka_plugin.c set them, per pipeline, into the
 * struct zx_conf_pipeline.own points at; its check (kafka_check.c) derives
 * topics_regex.  Read as `const zx_kafka_opts *o = p->own;` (never NULL
 * for a loaded kafka pipeline; owned by the zx_conf, its strings and lists
 * too, freed with it).  Its shared stream options (format, mode,
 * key_columns, table, metadata, history...) are zx_conf_pipeline's fields.
 */
#ifndef ZX_SOURCES_KAFKA_OPTS_H
#define ZX_SOURCES_KAFKA_OPTS_H

#include <stddef.h>

/* `encoding` (zx_kafka_opts.encoding; order = the row's allowed values) */
enum { ZX_ENC_JSON = 0, ZX_ENC_AVRO = 1 };

typedef struct zx_kafka_opts {
    char **topics;           /* `topic: x` gives {x}; `topics: [a, b]` the
                                list; `topics: "^re"` gives {"^re"} with
                                topics_regex 1.  At least one in a loaded
                                configuration */
    size_t ntopics;
    int topics_regex;        /* derived by the check: 1 when topics[0] is a
                                POSIX extended regex (starts with '^',
                                librdkafka's convention; checked to compile
                                by the row); ntopics is then 1 */
    char *group;             /* `group`: the consumer group; NULL = none */
    int start_new;           /* `start`: where a partition with no committed
                                offset starts: 0 oldest (default), 1 new */
    int topic_reset_fail;    /* `on_topic_reset`: a stored position that is
                                not in its topic any more: 0 restart the
                                partition from its start (default), 1 fail
                                the pipeline */
    int encoding;            /* `encoding`, format debezium: ZX_ENC_JSON (0,
                                default) or ZX_ENC_AVRO (with
                                schema_registry) */
    char *registry_url;      /* `schema_registry.url`: the registry's
                                Confluent-compatible API, http(s)://;
                                NULL: none */
    char *registry_username; /* `schema_registry.username`, NULL: none */
    char *registry_password; /* `schema_registry.password`: secret (never
                                printed; scrubbed in the processes that do
                                not run this pipeline); NULL: none, or
                                loaded with ZX_CONF_SKIP_SECRETS and written
                                as a ${env:}/${file:} reference */
    int registry_wire;       /* `schema_registry.wire`: a zx_wire_mode
                                (common/schema_registry.h): 0 confluent
                                (magic 0 + 4-byte id), 1 apicurio (magic 0
                                + 8-byte global id), 2 headers
                                (apicurio.value.globalId) */
} zx_kafka_opts;

#endif
