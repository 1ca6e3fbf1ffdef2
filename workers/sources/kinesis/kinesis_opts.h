/*
 * kinesis_opts.h — the kinesis source's own options (conf/plugin.h): the
 * rows flagged ZX_CF_OWN of kinesis_plugin.c set them into the struct
 * zx_conf_pipeline.own points at; its check derives start_kind and
 * start_ms.  Read as `const zx_kinesis_opts *o = p->own;` (owned by the
 * zx_conf, strings too).  The shared stream options (table, metadata,
 * max_columns...) are zx_conf_pipeline's fields.
 */
#ifndef ZX_SOURCES_KINESIS_OPTS_H
#define ZX_SOURCES_KINESIS_OPTS_H

#include <stdint.h>

typedef struct zx_kinesis_opts {
    char *stream;            /* `stream`: the stream's name; NULL with stream_arn */
    char *stream_arn;        /* `stream_arn`; NULL with stream */
    char *start;             /* `start` as written: oldest, new or a time */
    int start_kind;          /* derived: ks_start (kinesis_shards.h) */
    int64_t start_ms;        /* derived: the time of `start: <time>` (ms since 1970) */
    uint32_t batch_records;  /* `batch_records`: GetRecords' Limit */
} zx_kinesis_opts;

#endif
