/*
 * lake_store.h — where a lake table's files live: a folder of this host
 * (under the file roots, no symbolic link below the root followed) or an
 * S3 prefix (s3://bucket/prefix through a `kind: aws` connection).  The
 * lake destinations (Delta Lake, Iceberg) name their files relative to the
 * table's root ("_delta_log/00000000000000000003.json",
 * "part-...parquet") and this module does the rest:
 *
 *   small objects   get, put (optionally put-if-absent: link(2) of a
 *                   written temporary file in a folder, If-None-Match: *
 *                   on S3), list a prefix, delete;
 *   data files      zx_lake_out: streamed (a folder: written under a
 *                   temporary name, fsynced and renamed at commit; S3: a
 *                   multipart upload completed at commit), so nothing is
 *                   visible under a file's name before its commit.
 *
 * Errors: -1 with one line in err naming the file ("delta
 * /srv/lake/orders: _delta_log/00000000000000000003.json: No space left on
 * device"; S3's message as common/aws_s3.h makes it), never a secret.
 * A store is one process's, used by one thread.
 */
#ifndef ZX_DEST_LAKE_STORE_H
#define ZX_DEST_LAKE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "conf/config.h"

#define ZX_LAKE_NOT_FOUND 1    /* get: no such file */
#define ZX_LAKE_EXISTS    2    /* put-if-absent: the file is there */

typedef struct zx_lake zx_lake;

typedef struct zx_lake_args {
    const char *root;            /* an absolute folder, or "s3://bucket[/prefix]" */
    const char *const *roots;    /* a folder: the folders it may lie under */
    size_t nroots;
    const zx_conf_connection *conn;   /* s3: kind aws; else NULL */
    const char *what;            /* for messages: "delta", "iceberg" */
    int64_t deadline_ms;         /* per request; <= 0: 60 s */
} zx_lake_args;

/* A store at a->root (a folder is made, with its parents, when missing).
 * NULL with err: a path outside the roots or through a link, a bucket
 * path without a connection, out of memory. */
zx_lake *zx_lake_open(const zx_lake_args *a, char *err, size_t errlen);
void zx_lake_free(zx_lake *l);                         /* NULL: no-op */

/* The root as given, for messages; valid until free. */
const char *zx_lake_root(const zx_lake *l);
/* 1 when the store is an S3 prefix. */
int zx_lake_is_s3(const zx_lake *l);

/* Read file rel (at most max bytes; 0: 256 MiB) into out (reset first).
 * 0, ZX_LAKE_NOT_FOUND, or -1 (also when larger than max). */
int zx_lake_get(zx_lake *l, const char *rel, size_t max, zx_buf *out, char *err,
                size_t errlen);

/* Write file rel whole (its folder made when missing).  if_absent: only
 * when no file rel exists, else ZX_LAKE_EXISTS (nothing changed).  A
 * folder's file is written under a temporary name, fsynced, then linked
 * (if_absent) or renamed into place.  0, ZX_LAKE_EXISTS or -1. */
int zx_lake_put(zx_lake *l, const char *rel, const void *p, size_t n, int if_absent,
                char *err, size_t errlen);

/* The names of the files directly in folder rel ("_delta_log"), relative
 * to it, sorted bytewise (a folder that does not exist: none).  *names
 * (malloc'd array of malloc'd strings; free with zx_lake_names_free).
 * 0 or -1. */
int zx_lake_list(zx_lake *l, const char *rel, char ***names, size_t *n, char *err,
                 size_t errlen);
void zx_lake_names_free(char **names, size_t n);

/* Remove file rel (gone already: 0).  0 or -1. */
int zx_lake_delete(zx_lake *l, const char *rel, char *err, size_t errlen);

/* ---- data files, streamed ------------------------------------------- */

typedef struct zx_lake_out zx_lake_out;

/* Start file rel (a new name: it must not exist).  NULL with err. */
zx_lake_out *zx_lake_create(zx_lake *l, const char *rel, char *err, size_t errlen);
/* n bytes more.  0 or -1 (then only zx_lake_out_abort). */
int zx_lake_write(zx_lake_out *o, const void *p, size_t n, char *err, size_t errlen);
/* Make it visible under its name; *size its bytes (may be NULL).  Frees o
 * whatever it returns.  0 or -1 (nothing visible then). */
int zx_lake_out_commit(zx_lake_out *o, uint64_t *size, char *err, size_t errlen);
/* Drop it: nothing stays visible.  Frees o.  NULL: no-op. */
void zx_lake_out_abort(zx_lake_out *o);

/* A sink for formats/parquet.h (zx_pq_opts.sink) writing to ctx, a
 * zx_lake_out. */
int zx_lake_sink(void *ctx, const void *p, size_t n, char *err, size_t errlen);

#endif
