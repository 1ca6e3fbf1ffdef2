/*
 * files_plugin.c — the plug-in files: destination files: CSV, JSON lines
 * or Parquet files in a folder (dest_files.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.def.
 * Its option rows are here: the loader parses, checks, compares and frees
 * them, and conf/OPTIONS.md documents them, from this table; they set its
 * own struct (files_opts.h, p->dest_own).  Its check: path and format
 * written.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conf/plugin.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/files/files_formats.h"
#include "workers/destinations/files/files_opts.h"
#include "workers/destinations/files/files_s3.h"

extern const zx_dest zx_dest_files;   /* dest_files.c */

/* its rows set its own options (files_opts.h), per sync: p->dest_own */
#define OWN(f) offsetof(zx_files_opts, f)

static const char *const compressions[] = {"zstd", "snappy", "none", NULL};
static const char *const sses[] = {"AES256", "aws:kms", NULL};
/* the pipelines that take these options: reverse syncs */
static const char *const sync_only[] = {"sync", NULL};

static const zx_cf_option options[] = {
    {.section = "pipelines.<name>.destination.files", .name = "path",
     .type = ZX_CF_PATH, .def_doc = "**required** with `files`",
     .offset = OWN(path), .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "A folder (created if missing), or a file when it ends with "
     "the format's extension; relative to the config file's folder. It must "
     "lie under `<data_dir>/exports` or a folder of `server.file_roots`, "
     "with no symbolic link below that folder, and not be another sync's "
     "output. Or an S3 prefix or object, `s3://bucket/prefix/` or "
     "`s3://bucket/prefix/name.parquet`, with `connection`: each object is "
     "streamed as a multipart upload and becomes visible only when the run "
     "commits."},
    {.section = "pipelines.<name>.destination.files", .name = "format",
     .type = ZX_CF_ENUM, .def_doc = "**required** with `files`",
     .offset = OWN(format), .flags = ZX_CF_OWN, .allowed = zx_file_format_names,
     .sources = sync_only,
     .help = "`csv` (RFC 4180, a header line), `json` (one object per "
     "line) or `parquet`."},
    {.section = "pipelines.<name>.destination.files", .name = "compression",
     .type = ZX_CF_ENUM, .def = "zstd", .offset = OWN(compression), .flags = ZX_CF_OWN,
     .allowed = compressions, .sources = sync_only,
     .help = "Parquet's codec."},
    {.section = "pipelines.<name>.destination.files", .name = "connection",
     .type = ZX_CF_STRING, .def_doc = "none; **required** with an `s3://` path",
     .offset = OWN(connection), .flags = ZX_CF_OWN, .sources = sync_only,
     .help = "With an `s3://` path: the `kind: aws` connection (region, "
     "credentials, `endpoint` and `path_style` for MinIO, Ceph, R2 or moto) "
     "the bucket is reached through. Uploads a killed run left are aborted "
     "when the sync next runs."},
    {.section = "pipelines.<name>.destination.files", .name = "sse",
     .type = ZX_CF_ENUM, .def_doc = "none: the bucket's default",
     .offset = OWN(sse), .flags = ZX_CF_OWN, .allowed = sses, .sources = sync_only,
     .help = "With an `s3://` path: server-side encryption of each object, "
     "`AES256` (S3's keys) or `aws:kms` (with `kms_key_id`)."},
    {.section = "pipelines.<name>.destination.files", .name = "kms_key_id",
     .type = ZX_CF_STRING, .def_doc = "none: the account's `aws/s3` key",
     .offset = OWN(kms_key_id), .flags = ZX_CF_OWN | ZX_CF_TOKEN, .sources = sync_only,
     .help = "With `sse: aws:kms`: the KMS key's id or ARN."},
};

/* A sync's files sub-section, once walked: its path and format written,
 * the path made absolute (relative to the config file's folder).  Where
 * the path lies, and against other syncs' outputs, is conf/syncs.c's,
 * once the whole file is read.  0, or -1 (reported). */
static int files_check(zx_cf_check *ck, zx_conf_pipeline *p)
{
    zx_files_opts *o = p->dest_own;
    int rc = 0;

    if (!zx_check_written(ck, "destination.files.path")) {
        zx_check_error(ck, "destination.files", "pipelines.%s: destination.files: missing "
                       "required field 'path'", p->name);
        rc = -1;
    }
    if (!zx_check_written(ck, "destination.files.format")) {
        char fmts[100];
        zx_check_error(ck, "destination.files", "pipelines.%s: destination.files: missing "
                       "required field 'format' (%s)", p->name,
                       zx_file_format_list(fmts, sizeof(fmts)));
        rc = -1;
    }
    if (!o)
        return rc;
    if (zx_files_is_s3(o->path)) {
        char e[400];
        if (zx_files_s3_check(o->path, NULL, e, sizeof(e)) < 0) {
            zx_check_error(ck, "destination.files.path", "pipelines.%s: destination.files."
                           "path: %s", p->name, e);
            rc = -1;
        }
        if (!o->connection) {
            zx_check_error(ck, "destination.files.path", "pipelines.%s: destination.files: "
                           "an s3:// path needs `connection:` naming a connection of kind "
                           "aws", p->name);
            rc = -1;
        }
    } else {
        if (zx_check_abspath(ck, "destination.files.path", &o->path) < 0)
            rc = -1;
        const char *s3only = o->connection ? "connection" : o->sse ? "sse"
                             : o->kms_key_id ? "kms_key_id" : NULL;
        if (s3only) {
            char at[64];
            snprintf(at, sizeof(at), "destination.files.%s", s3only);
            zx_check_error(ck, at, "pipelines.%s: destination.files.%s goes with an s3:// "
                           "path (s3://bucket/prefix/)", p->name, s3only);
            rc = -1;
        }
    }
    if (o->kms_key_id && (!o->sse || strcmp(o->sse, "aws:kms"))) {
        zx_check_error(ck, "destination.files.kms_key_id", "pipelines.%s: destination.files."
                       "kms_key_id goes with sse: aws:kms", p->name);
        rc = -1;
    }
    return rc;
}

static void files_where(const zx_conf_pipeline *p, zx_dest_where *w)
{
    const zx_files_opts *o = p->dest_own;
    w->path = o ? o->path : NULL;
    w->format = o && o->format ? o->format : "parquet";
    w->connection = o ? o->connection : NULL;
    w->option = "destination.files";
}

const zx_plugin zx_plugin_dest_files = {
    .name = "files",
    .role = ZX_PLUGIN_DESTINATION,
    .dest = &zx_dest_files,
    .check = files_check,
    .dest_where = files_where,
    .section_doc = "Files: each run writes under a temporary name in the folder and "
     "renames into place, so no partial file is ever visible. `replace`: "
     "`<path>/<sync>.<ext>` (or `path` itself when it ends with the "
     "format's extension); the other modes: a new file per run, "
     "`<sync>-<run id>.<ext>`. In an S3 bucket (`s3://` path, with `connection`) "
     "the same names are object keys, each object uploaded in 8 MiB parts "
     "(each with its SHA-256 checksum) and made visible at the run's commit; a "
     "failed run aborts its upload.",
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(zx_files_opts),
    .doc = "files in a folder: `csv`, `json` or `parquet`, each run written under a "
     "temporary name and renamed into place.",
};

const zx_files_opts *zx_files_opts_of(const zx_conf_pipeline *p)
{
    return p && p->dest_plugin == &zx_plugin_dest_files ? p->dest_own : NULL;
}
