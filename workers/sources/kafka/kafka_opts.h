/*
 * kafka_opts.h — the kafka source's own options (conf/plugin.h): the rows
 * flagged ZX_CF_OWN of kafka_plugin.c set them, per pipeline, into the
 * struct zx_conf_pipeline.own points at.  Read as
 * `const zx_kafka_opts *o = p->own;` (never NULL for a loaded kafka
 * pipeline; owned by the zx_conf).  Its other options are still shared
 * fields of zx_conf_pipeline.
 */
#ifndef ZX_SOURCES_KAFKA_OPTS_H
#define ZX_SOURCES_KAFKA_OPTS_H

typedef struct zx_kafka_opts {
    int start_new;           /* `start`: where a partition with no committed
                                offset starts: 0 oldest (default), 1 new */
    int topic_reset_fail;    /* `on_topic_reset`: a stored position that is
                                not in its topic any more: 0 restart the
                                partition from its start (default), 1 fail
                                the pipeline */
} zx_kafka_opts;

#endif
