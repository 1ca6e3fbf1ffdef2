/*
 * files_opts.h — the files destination's own options (conf/plugin.h): the
 * rows flagged ZX_CF_OWN of files_plugin.c (section
 * `pipelines.<name>.destination.files`) set them, per reverse sync, into
 * the struct zx_conf_pipeline.dest_own points at.  Read as
 * `const zx_files_opts *o = p->dest_own;` when p->dest_plugin is the files
 * plug-in (never NULL then, for a loaded sync); the destination gets the
 * same struct as zx_dest_args.opts.  Owned by the zx_conf (a send's by its
 * transient pipeline).
 */
#ifndef ZX_DEST_FILES_OPTS_H
#define ZX_DEST_FILES_OPTS_H

typedef struct zx_files_opts {
    char *path;              /* `path`: absolute (relative to the config
                                file's folder when written so), normalised
                                by the loader; a folder, or a file when it
                                ends with the format's extension; or an
                                S3 URL "s3://bucket/prefix" kept as
                                written (files_s3.h) */
    char *format;            /* `format`: "csv" | "json" | "parquet"
                                (files_formats.h) */
    char *compression;       /* `compression`: parquet's codec: "zstd"
                                (default) | "snappy" | "none" */
    char *connection;        /* `connection`: with an s3:// path, the
                                `kind: aws` connection (files_s3.h);
                                NULL: a folder of this host */
    char *sse;               /* `sse`: s3: NULL | "AES256" | "aws:kms" */
    char *kms_key_id;        /* `kms_key_id`: with aws:kms; NULL: the
                                account's default key */
} zx_files_opts;

struct zx_conf_pipeline;
/* The files options of pipeline p (its dest_own) when its destination is
 * the files plug-in, else NULL (p NULL too).  Owned by p. */
const zx_files_opts *zx_files_opts_of(const struct zx_conf_pipeline *p);

#endif
