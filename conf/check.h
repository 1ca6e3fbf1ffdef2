/*
 * check.h — what a plug-in's `check` (conf/plugin.h) sees of the file it
 * checks: whether an option of its pipeline was written, and a way to
 * report an error at the line where it was written.
 *
 * A zx_cf_check is made by the loader (conf/entries.c) for one call of one
 * pipeline's check, or one connection's check_connection, and is valid
 * during that call only; the plug-in never frees it.  Names are the
 * entry's options as a person writes them: "slot" (section
 * pipelines.<name>, or connections.<name> for a connection), or dotted into
 * a sub-section: "schema_registry.url", "destination.files.path",
 * "tls.cert"; or a sub-section itself ("sasl").
 */
#ifndef ZX_CONF_CHECK_H
#define ZX_CONF_CHECK_H

#include <stddef.h>

typedef struct zx_cf_check zx_cf_check;

/* 1 when the entry's option (or sub-section) `name` was written in the file (even when
 * its value was refused and reported), else 0. */
int zx_check_written(const zx_cf_check *ck, const char *name);

/* The text option `name` was written with (a scalar: references
 * unresolved), or NULL (not written, or not a scalar).  Valid during the
 * call. */
const char *zx_check_text(const zx_cf_check *ck, const char *name);

/* 1 when option `name` was written and its value refused (reported
 * already: check no further what depends on it), else 0. */
int zx_check_refused(const zx_cf_check *ck, const char *name);

/* Report an error at the line of option `name`; name NULL, or an option
 * not written: at the pipeline's name.  The text is used as it is (start
 * it "pipelines.NAME: " as the loader's messages do).  Never fails (out of
 * memory: the error is counted, its text lost). */
void zx_check_error(zx_cf_check *ck, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same at item i (0-based) of that option's list, a YAML sequence; at
 * the option itself when it is not one or has no item i. */
void zx_check_error_item(zx_cf_check *ck, const char *name, size_t i,
                         const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The ZX_CONF_* flags the file is loaded with (conf/config.h):
 * ZX_CONF_SKIP_SECRETS means a secret written as a ${env:}/${file:}
 * reference is NULL, not missing. */
unsigned zx_check_flags(const zx_cf_check *ck);

/* Make the path *path (owned by the configuration; NULL: nothing to do)
 * absolute, relative to the configuration file's folder, in place.
 * Returns 0, or -1 (out of memory, reported at option `name`). */
int zx_check_abspath(zx_cf_check *ck, const char *name, char **path);

#endif
