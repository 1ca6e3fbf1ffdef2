/*
 * delta_opts.h — the Delta Lake destination's own options (conf/plugin.h):
 * the rows of delta_plugin.c (section `pipelines.<name>.destination.delta`)
 * set them, per reverse sync, into the struct zx_conf_pipeline.dest_own
 * points at; the destination gets it as zx_dest_args.opts.  Owned by the
 * zx_conf.
 */
#ifndef ZX_DEST_DELTA_OPTS_H
#define ZX_DEST_DELTA_OPTS_H

#include <stdint.h>

typedef struct zx_delta_opts {
    char *path;              /* `path`: the table's root: an absolute folder
                                (made so by the loader) or "s3://bucket/prefix" */
    char *connection;        /* `connection`: with an s3:// path, a
                                `kind: aws` connection; NULL: a folder */
    char *compression;       /* `compression`: "zstd" (default) | "snappy" | "none" */
    uint32_t file_rows;      /* `file_rows`: rows per data file at most */
    int deletion_vectors;    /* `deletion_vectors`: 1 (default): a table zx
                                creates for a sync with a key has them */
} zx_delta_opts;

#endif
