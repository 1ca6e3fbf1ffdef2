/*
 * aws_s3.h — zx's S3 client: objects (Put, Head, Get, Delete, ListObjectsV2),
 * buckets (CreateBucket), multipart uploads (Create, UploadPart, Complete,
 * Abort, ListMultipartUploads) and an uploader that streams a large object
 * as parts with memory bounded by one part.  For the S3 side of the files
 * destination, the Delta log and Iceberg.  Works with AWS and with the
 * S3-compatible services (moto, MinIO, Ceph, R2) through a custom endpoint
 * and path-style addressing.
 *
 * Requests go through zx's HTTP client (http_client.h): 5xx (503 SlowDown
 * included), 429 and connection errors are tried again with backoff; every
 * request is signed with SigV4 (aws_sigv4.h) as S3 wants it (the payload's
 * SHA-256 in x-amz-content-sha256).  Object keys are percent-encoded per
 * segment ('/' kept).  Bodies are sent from memory: PutObject is for small
 * objects, larger ones go through the uploader.
 *
 * Errors: every call that fails returns ZX_S3_ERR with a message a person
 * can act on in err, such as
 *   "S3 bucket zx-lake: NoSuchBucket: The specified bucket does not exist
 *    (PutObject data/x.parquet, request id 4442587FB7D0A2F9)"
 *   "S3 bucket zx-lake: AccessDenied: Access Denied (GetObject a/b needs
 *    s3:GetObject, request id ...)"
 *   "S3 bucket zx-lake: cannot reach https://s3.eu-west-1.amazonaws.com:
 *    Connection refused (4 attempts in 1.2 s) (ListObjectsV2 data/)"
 * It never holds a secret, a signature or a presigned URL (only the
 * configured endpoint, the bucket, the key, S3's code and message).
 *
 * Retries and what they mean: every request may be sent again after a
 * 5xx or a lost answer (the signature stays valid: the attempts take
 * minutes at most).  UploadPart, PutObject, Delete, Abort and the reads
 * are safe to repeat.  A repeated CreateMultipartUpload may leave an
 * upload nobody completes (ListMultipartUploads finds it); a repeated
 * CompleteMultipartUpload whose first answer was lost may answer
 * NoSuchUpload although the object was made (check with HeadObject); a
 * repeated put-if-absent may answer ZX_S3_EXISTS for its own object.
 * zx_s3_last_status / zx_s3_last_code tell the last answer to callers that
 * branch on it.
 *
 * Threads: a client is one thread's (it holds one HTTP client); use one
 * client per thread.  The keys callback is called once per request.
 */
#ifndef ZX_COMMON_AWS_S3_H
#define ZX_COMMON_AWS_S3_H

#include <stddef.h>
#include <stdint.h>

#include "common/aws_sigv4.h"
#include "common/buf.h"
#include "common/http_client.h"

/* What the calls return. */
#define ZX_S3_OK         0
#define ZX_S3_ERR       -1    /* failed: err says why */
#define ZX_S3_NOT_FOUND  1    /* Head/Get: no such key (404) */
#define ZX_S3_EXISTS     2    /* put-if-absent: the key exists (412) */

/* S3's limits the client checks before sending. */
#define ZX_S3_KEY_MAX        1024                 /* bytes of a key */
#define ZX_S3_PART_MIN       ((size_t)5 << 20)    /* every part but the last */
#define ZX_S3_PART_MAX       ((size_t)5 << 30)
#define ZX_S3_PARTS_MAX      10000
#define ZX_S3_ETAG_MAX       128                  /* bytes kept of an ETag */

/* The current keys: 0 and *out filled (its strings valid until the next
 * call of the function), or -1 with the reason in err. */
typedef int (*zx_s3_keys_fn)(void *ctx, zx_aws_keys *out, char *err, size_t errlen);

/* A zx_s3_keys_fn for fixed keys: ctx is a zx_aws_keys * that outlives
 * the client; always 0 (or -1 "no S3 access key" when it has none). */
int zx_s3_static_keys(void *ctx, zx_aws_keys *out, char *err, size_t errlen);

typedef struct zx_s3_opts {
    const char *region;          /* required: "eu-west-1" */
    const char *endpoint;        /* NULL: https://s3.<region>.amazonaws.com;
                                  * else scheme://host[:port] (no path),
                                  * e.g. moto's http://127.0.0.1:5000 */
    int path_style;              /* 1: https://host/bucket/key (moto, MinIO,
                                  * Ceph); 0: https://bucket.host/key (also
                                  * path style for a bucket name holding a
                                  * '.', which TLS names cannot match) */
    zx_s3_keys_fn keys;          /* required */
    void *keys_ctx;
    zx_http_opts http;           /* timeouts, TLS, attempts, backoff; zero
                                  * fields: 60 s per attempt, 4 attempts,
                                  * http_client's others (username,
                                  * password, max_response unused) */
    size_t max_get;              /* largest GetObject body; 0: 64 MiB */
} zx_s3_opts;

typedef struct zx_s3 zx_s3;

/* A client (opts copied).  Makes no request.  NULL with err when the
 * region or keys are missing, the endpoint is not http(s)://host[:port],
 * or out of memory. */
zx_s3 *zx_s3_new(const zx_s3_opts *o, char *err, size_t errlen);
void zx_s3_free(zx_s3 *s);                       /* NULL: no-op */

/* The HTTP status of the last answer (0: none) and S3's error code ("" when
 * the answer had none): valid until the next call on s. */
long zx_s3_last_status(const zx_s3 *s);
const char *zx_s3_last_code(const zx_s3 *s);
/* Requests sent (every attempt), for tests and metrics. */
unsigned long zx_s3_requests(const zx_s3 *s);

/* ---- objects --------------------------------------------------------- */

typedef enum zx_s3_checksum {
    ZX_S3_CHECKSUM_SHA256 = 0,   /* x-amz-checksum-sha256 (default) */
    ZX_S3_CHECKSUM_MD5,          /* Content-MD5 (services without the above) */
    ZX_S3_CHECKSUM_NONE
} zx_s3_checksum;

/* Options of PutObject and CreateMultipartUpload; NULL or zero: none. */
typedef struct zx_s3_put_opts {
    const char *content_type;    /* NULL: application/octet-stream */
    int if_none_match;           /* 1: If-None-Match: * (PutObject and
                                  * Complete): ZX_S3_EXISTS when the key is
                                  * there */
    const char *sse;             /* NULL, "AES256" or "aws:kms" */
    const char *kms_key_id;      /* with "aws:kms": the key; NULL: the
                                  * account's default key */
    zx_s3_checksum checksum;
} zx_s3_put_opts;

/* An object's facts. */
typedef struct zx_s3_object_info {
    uint64_t size;
    char etag[ZX_S3_ETAG_MAX];   /* with its quotes, as S3 gives it; "" if none */
    char sha256[80];             /* HeadObject: the stored x-amz-checksum-sha256
                                  * (base64; "<b64>-N" for N parts); PutObject:
                                  * as S3 echoes it; "" when none */
} zx_s3_object_info;

/* CreateBucket in the client's region.  0 (also when the bucket is already
 * ours: BucketAlreadyOwnedByYou) or ZX_S3_ERR. */
int zx_s3_create_bucket(zx_s3 *s, const char *bucket, char *err, size_t errlen);

/* PutObject of len bytes at body.  0 (and *info's etag and size when info
 * is not NULL), ZX_S3_EXISTS (if_none_match and the key exists), ZX_S3_ERR.
 * Tried again on 5xx: with if_none_match, a put whose answer was lost may
 * then report ZX_S3_EXISTS for the object it wrote itself. */
int zx_s3_put_object(zx_s3 *s, const char *bucket, const char *key, const void *body,
                     size_t len, const zx_s3_put_opts *po, zx_s3_object_info *info,
                     char *err, size_t errlen);

/* HeadObject: 0 with *info, ZX_S3_NOT_FOUND (also for a bucket that does
 * not exist: a HEAD answer has no body to tell them apart), ZX_S3_ERR. */
int zx_s3_head_object(zx_s3 *s, const char *bucket, const char *key,
                      zx_s3_object_info *info, char *err, size_t errlen);

/* GetObject into *data (malloc'd, NUL after the *len bytes; caller frees):
 * 0, ZX_S3_NOT_FOUND, ZX_S3_ERR (also when larger than max bytes; max 0:
 * the client's max_get).  The Range variant gets bytes off..off+n-1 (fewer
 * at the object's end; n >= 1). */
int zx_s3_get_object(zx_s3 *s, const char *bucket, const char *key, size_t max,
                     char **data, size_t *len, char *err, size_t errlen);
int zx_s3_get_range(zx_s3 *s, const char *bucket, const char *key, uint64_t off, size_t n,
                    char **data, size_t *len, char *err, size_t errlen);

/* DeleteObject: 0 (also when there was no such key, as S3 answers) or
 * ZX_S3_ERR. */
int zx_s3_delete_object(zx_s3 *s, const char *bucket, const char *key, char *err,
                        size_t errlen);

/* One page of ListObjectsV2.  Strings malloc'd, freed by zx_s3_list_free. */
typedef struct zx_s3_entry {
    char *key;                   /* decoded */
    uint64_t size;
    char etag[ZX_S3_ETAG_MAX];
} zx_s3_entry;

typedef struct zx_s3_list {
    zx_s3_entry *items;
    size_t n, cap;
    int truncated;               /* 1: more pages: call again with next */
    char *next;                  /* NextContinuationToken; NULL: last page */
} zx_s3_list;

/* One page (up to 1000 keys) of the keys starting with prefix (NULL: all)
 * after continuation (NULL: the first page) into *out (zeroed first).
 * 0 or ZX_S3_ERR; free *out in both cases. */
int zx_s3_list_objects(zx_s3 *s, const char *bucket, const char *prefix,
                       const char *continuation, zx_s3_list *out, char *err, size_t errlen);
void zx_s3_list_free(zx_s3_list *l);

/* ---- multipart uploads ----------------------------------------------- */

/* A part uploaded: what Complete needs. */
typedef struct zx_s3_part {
    int number;                  /* 1..10000 */
    uint64_t size;
    char etag[ZX_S3_ETAG_MAX];
    char sha256[48];             /* base64; "" when not asked for */
} zx_s3_part;

/* CreateMultipartUpload with po's content type, SSE and checksum (the
 * algorithm every part will carry).  0 and *upload_id (malloc'd, caller
 * frees), or ZX_S3_ERR. */
int zx_s3_mpu_create(zx_s3 *s, const char *bucket, const char *key, const zx_s3_put_opts *po,
                     char **upload_id, char *err, size_t errlen);

/* UploadPart number (1..10000) of len bytes (at most 5 GiB; the 5 MiB
 * minimum of all parts but the last is checked by Complete), with the
 * checksum of po->checksum (NULL: SHA-256) whose value lands in
 * out->sha256.  Safe to retry (same bytes).  0 and *out, or ZX_S3_ERR. */
int zx_s3_mpu_part(zx_s3 *s, const char *bucket, const char *key, const char *upload_id,
                   int number, const void *data, size_t len, const zx_s3_put_opts *po,
                   zx_s3_part *out, char *err, size_t errlen);

/* CompleteMultipartUpload of parts[0..n) (in increasing number, each but
 * the last at least ZX_S3_PART_MIN bytes: else ZX_S3_ERR before sending).
 * po: if_none_match as PutObject (NULL: none).  0 (and info's etag when
 * not NULL), ZX_S3_EXISTS, ZX_S3_ERR (also when S3 answers 200 with an
 * error in the body, as it may). */
int zx_s3_mpu_complete(zx_s3 *s, const char *bucket, const char *key, const char *upload_id,
                       const zx_s3_part *parts, size_t n, const zx_s3_put_opts *po,
                       zx_s3_object_info *info, char *err, size_t errlen);

/* AbortMultipartUpload: 0 (also when the upload is already gone:
 * NoSuchUpload) or ZX_S3_ERR. */
int zx_s3_mpu_abort(zx_s3 *s, const char *bucket, const char *key, const char *upload_id,
                    char *err, size_t errlen);

/* One page of ListMultipartUploads. */
typedef struct zx_s3_upload_entry {
    char *key;                   /* decoded */
    char *upload_id;
    char initiated[32];          /* "2026-12-02T15:00:00.000Z" as S3 says it */
} zx_s3_upload_entry;

typedef struct zx_s3_uploads {
    zx_s3_upload_entry *items;
    size_t n, cap;
    int truncated;               /* 1: call again with the two markers */
    char *next_key_marker, *next_upload_id_marker;
} zx_s3_uploads;

/* Uploads in progress whose key starts with prefix (NULL: all), after the
 * markers (NULL: from the start).  0 or ZX_S3_ERR; free *out in both. */
int zx_s3_list_uploads(zx_s3 *s, const char *bucket, const char *prefix,
                       const char *key_marker, const char *upload_id_marker,
                       zx_s3_uploads *out, char *err, size_t errlen);
void zx_s3_uploads_free(zx_s3_uploads *u);

/* Aborts every upload in progress whose key starts with prefix (NULL:
 * all of the bucket's) and that was initiated before `before` (UTC
 * seconds; 0: whatever its age; with a date, an upload whose Initiated
 * cannot be read is left alone), through every page: what a crashed run
 * left.  0 with *aborted (may be NULL) counted, or ZX_S3_ERR at the first
 * failure (those aborted until then stay counted). */
int zx_s3_abort_uploads(zx_s3 *s, const char *bucket, const char *prefix, int64_t before,
                        int *aborted, char *err, size_t errlen);

/* ---- the uploader ---------------------------------------------------- */

typedef struct zx_s3_upload zx_s3_upload;

/* An object written in pieces: nothing is visible under key until
 * zx_s3_upload_commit.  part_size (>= ZX_S3_PART_MIN; 0: 8 MiB) bytes are
 * buffered; each full part is uploaded as it fills (the multipart upload
 * is created with the first), so memory is one part plus the part list.
 * s and bucket/key/po are used (copied) for the uploader's life; s must
 * outlive it.  NULL with err on bad arguments or out of memory. */
zx_s3_upload *zx_s3_upload_new(zx_s3 *s, const char *bucket, const char *key,
                               size_t part_size, const zx_s3_put_opts *po, char *err,
                               size_t errlen);

#define ZX_S3_UPLOAD_THREADS_MAX 16

/* Upload up to n parts at once (1..ZX_S3_UPLOAD_THREADS_MAX), each of n
 * threads with its own client of clients[0..n) (borrowed: they must
 * outlive u; clients of one bucket's settings, whose keys callback may
 * then be called from those threads at once: it must be thread-safe).
 * The writer fills the next part meanwhile; memory is n + 1 parts.  Set
 * before the first write; s (zx_s3_upload_new's) still creates, completes
 * and aborts the upload.  0, or ZX_S3_ERR (called late, n out of range,
 * out of memory). */
int zx_s3_upload_parallel(zx_s3_upload *u, zx_s3 *const *clients, int n, char *err,
                          size_t errlen);

/* Add len bytes.  0 or ZX_S3_ERR (an upload failed: the uploader can then
 * only be aborted; more than 10000 parts). */
int zx_s3_upload_write(zx_s3_upload *u, const void *buf, size_t len, char *err,
                       size_t errlen);

/* Make the object visible: one PutObject when everything fit in one part,
 * else the last part and CompleteMultipartUpload.  0, ZX_S3_EXISTS (with
 * po->if_none_match), ZX_S3_ERR (the multipart upload, if any, is then
 * aborted).  Once only. */
int zx_s3_upload_commit(zx_s3_upload *u, zx_s3_object_info *info, char *err, size_t errlen);

/* Drop what was uploaded (AbortMultipartUpload when one was created).  0
 * or ZX_S3_ERR (the upload then stays behind: zx_s3_list_uploads finds
 * it). */
int zx_s3_upload_abort(zx_s3_upload *u, char *err, size_t errlen);

/* Bytes written so far; parts uploaded so far. */
uint64_t zx_s3_upload_bytes(const zx_s3_upload *u);
int zx_s3_upload_parts(const zx_s3_upload *u);

/* Frees u; an upload neither committed nor aborted is aborted first (its
 * error is dropped).  NULL: no-op. */
void zx_s3_upload_free(zx_s3_upload *u);

/* ---- pure pieces (aws_s3_xml.c), for tests --------------------------- */

/* An S3 error answer's fields, bounded and cleaned (control characters
 * replaced): "" when absent. */
typedef struct zx_s3_error {
    char code[64];
    char message[256];
    char request_id[80];
} zx_s3_error;

/* Reads <Error><Code>..</Code><Message>..</Message><RequestId>.. from
 * xml[0..len) into *e.  1 when a Code was found, else 0 (e all ""). */
int zx_s3_parse_error(const char *xml, size_t len, zx_s3_error *e);

/* Parse a ListObjectsV2 / ListMultipartUploads answer into *out (appended;
 * zero it first).  0, or -1 with err (not such an answer, a key over
 * ZX_S3_KEY_MAX, out of memory). */
int zx_s3_parse_list(const char *xml, size_t len, zx_s3_list *out, char *err, size_t errlen);
int zx_s3_parse_uploads(const char *xml, size_t len, zx_s3_uploads *out, char *err,
                        size_t errlen);

/* The UploadId of an InitiateMultipartUploadResult: 0 and *upload_id
 * (malloc'd), or -1 with err. */
int zx_s3_parse_upload_id(const char *xml, size_t len, char **upload_id, char *err,
                          size_t errlen);

/* Reads the ETag of a CompleteMultipartUpload answer (AWS's
 * CompleteMultipartUploadResult, moto's ...Response) into etag.  1 found,
 * 0 not (no ETag, or an Error: S3 may answer 200 with one). */
int zx_s3_parse_complete(const char *xml, size_t len, char etag[ZX_S3_ETAG_MAX]);

/* Appends the CompleteMultipartUpload body of parts[0..n) to b.  0, or -1
 * with err (no parts, numbers not increasing or out of 1..10000, a part
 * but the last under ZX_S3_PART_MIN, out of memory). */
int zx_s3_complete_body(const zx_s3_part *parts, size_t n, zx_buf *b, char *err,
                        size_t errlen);

/* The URL and Host header value of a request: endpoint (as zx_s3_opts),
 * region, path_style, bucket, key (NULL: the bucket itself), query (NULL:
 * none; as sent).  0, or -1 with err (bad endpoint or bucket name, a key
 * over ZX_S3_KEY_MAX, out of memory).  *url, *host and *path (the path as
 * sent, for signing) malloc'd, caller frees. */
int zx_s3_address(const char *endpoint, const char *region, int path_style,
                  const char *bucket, const char *key, const char *query, char **url,
                  char **host, char **path, char *err, size_t errlen);

#endif /* ZX_COMMON_AWS_S3_H */
