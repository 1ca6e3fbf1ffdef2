/*
 * delta_plugin.c — the plug-in delta: destination Delta Lake tables in a
 * folder or an S3 bucket (dest_delta.c).  Its registration (conf/plugin.h),
 * listed once in workers/plugins.def; its option rows set its own struct
 * (delta_opts.h, p->dest_own); its check: path written, a bucket path with
 * its connection.  Where a folder may lie, and the connection's kind, are
 * conf/syncs.c's (through dest_where), once the whole file is read.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conf/plugin.h"
#include "workers/destinations/delta/delta_opts.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/files/files_s3.h"

extern const zx_dest zx_dest_delta;   /* dest_delta.c */

#define OWN(f) offsetof(zx_delta_opts, f)

static const char *const compressions[] = {"zstd", "snappy", "none", NULL};
static const char *const sync_only[] = {"sync", NULL};

static const zx_cf_option options[] = {
    {.section = "pipelines.<name>.destination.delta", .name = "path",
     .type = ZX_CF_PATH, .def_doc = "**required** with `delta`",
     .offset = OWN(path), .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "The table's root: a folder (created if missing; relative to the "
     "config file's folder), under `<data_dir>/exports` or a folder of "
     "`server.file_roots`, or `s3://bucket/prefix` with `connection`. Its "
     "`_delta_log/` is the table; a folder that has none becomes a new table."},
    {.section = "pipelines.<name>.destination.delta", .name = "connection",
     .type = ZX_CF_STRING, .def_doc = "none; **required** with an `s3://` path",
     .offset = OWN(connection), .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "With an `s3://` path: the `kind: aws` connection the bucket is "
     "reached through. Commits are written with `If-None-Match: *`, which the "
     "store must honour (AWS S3 does since 2024; MinIO and moto do)."},
    {.section = "pipelines.<name>.destination.delta", .name = "compression",
     .type = ZX_CF_ENUM, .def = "zstd", .offset = OWN(compression), .flags = ZX_CF_OWN,
     .allowed = compressions, .sources = sync_only,
     .help = "The data files' Parquet codec."},
    {.section = "pipelines.<name>.destination.delta", .name = "file_rows",
     .type = ZX_CF_UINT, .def = "262144", .offset = OWN(file_rows), .flags = ZX_CF_OWN,
     .min = 1000, .max = 100000000, .sources = sync_only,
     .help = "Rows per data file at most. On a table without deletion vectors, "
     "an upsert or mirror run rewrites the files that hold a changed or deleted "
     "key: smaller files make a run that changes few rows write less."},
    {.section = "pipelines.<name>.destination.delta", .name = "deletion_vectors",
     .type = ZX_CF_BOOL, .def = "true", .offset = OWN(deletion_vectors),
     .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "`true`: a table zx creates for a sync with a `key` supports deletion "
     "vectors (protocol: reader 3, writer 7, feature `deletionVectors`; property "
     "`delta.enableDeletionVectors`), and an upsert or mirror run marks the rows "
     "it replaces or deletes in them instead of rewriting their files, so a run "
     "that changes 1% of the rows writes about that much. Readers must support "
     "the feature (tested: delta-rs 1.6, through its own scan, and Polars 2.1 with "
     "deltalake 1.6). `false`: tables are created with reader 1 and writer 2 and every "
     "change rewrites whole files. Only a new table is affected: an existing "
     "table is written as its own protocol and `delta.enableDeletionVectors` say."},
};

static int delta_check(zx_cf_check *ck, zx_conf_pipeline *p)
{
    zx_delta_opts *o = p->dest_own;
    int rc = 0;
    if (!zx_check_written(ck, "destination.delta.path")) {
        zx_check_error(ck, "destination.delta", "pipelines.%s: destination.delta: missing "
                       "required field 'path'", p->name);
        rc = -1;
    }
    if (!o || !o->path)
        return rc;
    if (zx_files_is_s3(o->path)) {
        char e[400];
        if (zx_files_s3_check(o->path, NULL, e, sizeof(e)) < 0) {
            zx_check_error(ck, "destination.delta.path", "pipelines.%s: destination.delta."
                           "path: %s", p->name, e);
            rc = -1;
        }
        if (!o->connection) {
            zx_check_error(ck, "destination.delta.path", "pipelines.%s: destination.delta: "
                           "an s3:// path needs `connection:` naming a connection of kind "
                           "aws", p->name);
            rc = -1;
        }
    } else {
        if (zx_check_abspath(ck, "destination.delta.path", &o->path) < 0)
            rc = -1;
        if (o->connection) {
            zx_check_error(ck, "destination.delta.connection", "pipelines.%s: "
                           "destination.delta.connection goes with an s3:// path "
                           "(s3://bucket/prefix)", p->name);
            rc = -1;
        }
    }
    return rc;
}

static void delta_where(const zx_conf_pipeline *p, zx_dest_where *w)
{
    const zx_delta_opts *o = p->dest_own;
    w->path = o ? o->path : NULL;
    w->format = NULL;
    w->connection = o ? o->connection : NULL;
    w->option = "destination.delta";
}

const zx_plugin zx_plugin_dest_delta = {
    .name = "delta",
    .role = ZX_PLUGIN_DESTINATION,
    .dest = &zx_dest_delta,
    .check = delta_check,
    .dest_where = delta_where,
    .section_doc = "Delta Lake: each run is one commit to the table's log (written "
     "put-if-absent, so two writers never both win a version), with its data "
     "files (Parquet), a `txn` action naming the sync and the run, and "
     "`commitInfo`. `replace` removes every file and adds the result; `append` "
     "adds; `upsert` and `mirror` mark the rows they replace or delete in "
     "deletion vectors (a table with `delta.enableDeletionVectors`, as zx creates "
     "them), or else rewrite only the data files that hold a changed or deleted "
     "key (copy-on-write); either way from the key hashes (and, for copy-on-write, "
     "the rows) zx keeps beside each file it writes (`_zx/`, which table readers "
     "ignore). New result columns are "
     "added to the schema; a column whose type changes fails the run. Tested with "
     "the readers delta-rs (`deltalake`) and Polars.",
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(zx_delta_opts),
    .doc = "Delta Lake tables in a folder or an S3 bucket, one commit per run.",
};
