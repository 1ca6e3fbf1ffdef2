/*
 * iceberg_opts.h — the Iceberg destination's own options (conf/plugin.h):
 * the rows of iceberg_plugin.c (section
 * `pipelines.<name>.destination.iceberg`) set them, per reverse sync, into
 * the struct zx_conf_pipeline.dest_own points at; the destination gets it
 * as zx_dest_args.opts.  Owned by the zx_conf.
 */
#ifndef ZX_DEST_ICEBERG_OPTS_H
#define ZX_DEST_ICEBERG_OPTS_H

#include <stdint.h>

typedef struct zx_iceberg_opts {
    char *catalog;           /* `catalog`: a connection of kind iceberg_rest,
                                glue or s3tables (p->dest_catalog) */
    char *namespace_;        /* `namespace`: one level ("sales") */
    char *table;             /* `table` */
    char *connection;        /* `connection`: the `kind: aws` connection the
                                data files in S3 go through (p->dest_conn);
                                NULL: the catalog's own (glue, s3tables) */
    char *compression;       /* `compression`: "zstd" (default) | "snappy" | "none" */
    uint32_t file_rows;      /* `file_rows`: rows per data file at most */
    uint32_t keep_snapshots; /* `keep_snapshots`: snapshots kept (older ones
                                expire, with the files zx wrote that only
                                they used) */
} zx_iceberg_opts;

#endif
