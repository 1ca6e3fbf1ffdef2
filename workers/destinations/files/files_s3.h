/*
 * files_s3.h — the files destination's S3 side: `path: s3://bucket/prefix`
 * with `connection:` naming a `kind: aws` connection (workers/aws_conn.h).
 *
 * dest_files.c names the objects as it names files (a folder's
 * <sync>.<ext> or <sync>-<run id>.<ext>; a file's own key or
 * <stem>-<run id>.<ext>) and hands each run's bytes here:
 *
 *     zx_fs3_open → (zx_fs3_begin → zx_fs3_write* → zx_fs3_commit | zx_fs3_abort)* → zx_fs3_free
 *
 * begin aborts the multipart uploads a crashed run of the same output left
 * (keys <stem><ext> and <stem>-<digits><ext> only) and starts the object;
 * write streams it as 8 MiB parts, each with its SHA-256 checksum, 4 of
 * them uploaded at once on threads of their own while the next fills
 * (memory: 5 parts); commit makes it visible (one PutObject when it fits in one
 * part, else CompleteMultipartUpload); abort removes what the run uploaded
 * (AbortMultipartUpload): nothing is visible under the key before commit.
 *
 * Errors: -1 with one line in err naming the bucket and key ("S3 bucket
 * zx-out: AccessDenied: ... (PutObject exports/s.parquet ...)"), never a
 * secret.  A handle is one process's, used by one thread.
 */
#ifndef ZX_DEST_FILES_S3_H
#define ZX_DEST_FILES_S3_H

#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"

#define ZX_FILES_S3_SCHEME "s3://"

/* 1 when path is an S3 URL (starts with "s3://"), else 0 (NULL: 0). */
int zx_files_is_s3(const char *path);

/* Check an S3 path "s3://BUCKET[/KEY...]": BUCKET 3 to 63 of [a-z0-9.-],
 * starting and ending with a letter or digit; the key part (after the
 * bucket's '/') at most 900 bytes, without "//", "." or ".." segments,
 * control characters or a '\\'.  0 with *key_off (may be NULL) the offset
 * of the key part in url (its length when there is none), or -1 with the
 * reason in err. */
int zx_files_s3_check(const char *url, size_t *key_off, char *err, size_t errlen);

typedef struct zx_fs3 zx_fs3;

typedef struct zx_fs3_args {
    const zx_conf_connection *conn;   /* kind aws: region, keys, endpoint */
    const char *bucket;               /* copied */
    const char *sse;                  /* NULL, "AES256" or "aws:kms" (copied) */
    const char *kms_key_id;           /* with aws:kms; NULL: the account's key */
    int64_t deadline_ms;              /* per request attempt; <= 0: 60 s */
} zx_fs3_args;

/* A handle for bucket through a's connection.  Makes no request (the
 * credential chain runs at the first).  NULL with err: out of memory, a
 * connection without a region, a bad endpoint. */
zx_fs3 *zx_fs3_open(const zx_fs3_args *a, char *err, size_t errlen);

/* Start the object key (must not be running one).  Before it, uploads in
 * progress of this output, keys stem + ext or stem + "-<digits>" + ext,
 * are aborted: what a run killed mid-upload left (*swept gets how many;
 * may be NULL).  0 or -1. */
int zx_fs3_begin(zx_fs3 *f, const char *key, const char *stem, const char *ext, int *swept,
                 char *err, size_t errlen);
/* n bytes of the object.  0 or -1 (then only abort). */
int zx_fs3_write(zx_fs3 *f, const void *p, size_t n, char *err, size_t errlen);
/* Make the object visible; *size (may be NULL) its bytes.  0 or -1 (the
 * run's multipart upload is then aborted). */
int zx_fs3_commit(zx_fs3 *f, uint64_t *size, char *err, size_t errlen);
/* Drop the running object, if any: nothing of it stays visible, and its
 * multipart upload is aborted (if that fails, the next begin's sweep
 * aborts it). */
void zx_fs3_abort(zx_fs3 *f);
/* Abort as above and free.  NULL: no-op. */
void zx_fs3_free(zx_fs3 *f);

/* "s3://bucket/key" of the running object, for messages ("" when none);
 * valid until the next begin or free. */
const char *zx_fs3_where(const zx_fs3 *f);

#endif
