/*
 * files_formats.c — the files destination's formats and their extensions
 * (files_formats.h): the one table of them, read by the destination
 * (dest_files.c), its option rows (files_plugin.c), conf/ and zxctl.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

#include "workers/destinations/files/files_formats.h"

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

const char *zx_file_format_list(char *buf, size_t len)
{
    return zx_join_or(buf, len, zx_file_format_names,
                      sizeof(zx_file_format_names) / sizeof(zx_file_format_names[0]) - 1);
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
