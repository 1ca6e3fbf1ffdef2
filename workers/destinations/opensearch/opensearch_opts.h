/*
 * opensearch_opts.h — the OpenSearch destination's own options
 * (conf/plugin.h): the rows of opensearch_plugin.c (section
 * `pipelines.<name>.destination.opensearch`) set them, per reverse sync,
 * into the struct zx_conf_pipeline.dest_own points at; the destination
 * gets it as zx_dest_args.opts.  Owned by the zx_conf.
 */
#ifndef ZX_DEST_OPENSEARCH_OPTS_H
#define ZX_DEST_OPENSEARCH_OPTS_H

#include <stdint.h>

typedef struct zx_opensearch_opts {
    char *connection;        /* `connection`: a `kind: opensearch` connection */
    char *index;             /* `index`: the index written (checked by
                                opensearch_plugin.c: OpenSearch's index name
                                rules) */
    uint32_t batch_rows;     /* `batch_rows`: documents per _bulk request at most */
    uint64_t batch_bytes;    /* `batch_bytes`: bytes of one _bulk body at most
                                (a single larger document goes alone) */
} zx_opensearch_opts;

#endif
