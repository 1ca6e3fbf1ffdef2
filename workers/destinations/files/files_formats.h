/*
 * files_formats.h — the file formats of the files destination, and the
 * extensions a file of each ends with: the one table of them (defined in
 * files_formats.c; files_plugin.c's `format` option row allows exactly these names).
 * conf/ (outputs of two syncs that could meet), the supervisor and zxctl
 * (`zxctl send --to files:`) and the destination itself read it; nothing
 * else lists formats.  Constant, static data.
 */
#ifndef ZX_DEST_FILES_FORMATS_H
#define ZX_DEST_FILES_FORMATS_H

#include <stddef.h>

typedef struct zx_file_format {
    const char *name;            /* the `format:` value: "csv" */
    const char *const *exts;     /* with the dot, NULL-ended; exts[0] is the
                                    one a file gets in a folder */
} zx_file_format;

/* Every format, ended by one with name NULL. */
extern const zx_file_format zx_file_formats[];
/* Their names, NULL-ended (the `format` row's allowed values). */
extern const char *const zx_file_format_names[];

/* The formats' names as a person reads them ("csv, json or parquet")
 * into buf (len bytes, cut); returns buf. */
const char *zx_file_format_list(char *buf, size_t len);
/* The format called name, or NULL. */
const zx_file_format *zx_file_format_find(const char *name);
/* The extension path ends with among every format's (with the dot), and
 * in *fmt (when not NULL) its format; NULL when none. */
const char *zx_file_ext_of(const char *path, const zx_file_format **fmt);

#endif
