/*
 * files_plugin.c — the plug-in files: destination files: CSV, JSON lines
 * or Parquet files in a folder (dest_files.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.c.
 * Its option rows are here: the loader parses, checks, compares and frees
 * them, and conf/OPTIONS.md documents them, from this table.
 */
#include <stddef.h>

#include "conf/plugin.h"
#include "workers/destinations/dest.h"
#include "workers/destinations/files/files_formats.h"
#include "workers/destinations/files/files_opts.h"

#include <string.h>

extern const zx_dest zx_dest_files;   /* dest_files.c */

/* its rows set its own options (files_opts.h), per sync: p->dest_own */
#define OWN(f) offsetof(zx_files_opts, f)

/* The formats (files_formats.h): order = zx_file_format_names. */
static const char *const csv_exts[] = {".csv", NULL};
static const char *const json_exts[] = {".json", ".ndjson", NULL};
static const char *const parquet_exts[] = {".parquet", NULL};
const zx_file_format zx_file_formats[] = {
    {"csv", csv_exts},
    {"json", json_exts},
    {"parquet", parquet_exts},
    {NULL, NULL},
};
const char *const zx_file_format_names[] = {"csv", "json", "parquet", NULL};
static const char *const compressions[] = {"zstd", "snappy", "none", NULL};
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
     "output."},
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
};

const zx_plugin zx_plugin_dest_files = {
    .name = "files",
    .role = ZX_PLUGIN_DESTINATION,
    .dest = &zx_dest_files,
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

const zx_file_format *zx_file_format_find(const char *name)
{
    for (size_t i = 0; name && zx_file_formats[i].name; i++)
        if (!strcmp(zx_file_formats[i].name, name))
            return &zx_file_formats[i];
    return NULL;
}

const char *zx_file_ext_of(const char *path, const zx_file_format **fmt)
{
    size_t n = strlen(path);

    for (size_t i = 0; zx_file_formats[i].name; i++)
        for (size_t e = 0; zx_file_formats[i].exts[e]; e++) {
            const char *x = zx_file_formats[i].exts[e];
            size_t m = strlen(x);
            if (n > m && !strcmp(path + n - m, x)) {
                if (fmt)
                    *fmt = &zx_file_formats[i];
                return x;
            }
        }
    return NULL;
}
