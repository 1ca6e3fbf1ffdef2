/*
 * aws_s3_call.h — inside the S3 client (aws_s3.c, aws_s3_mpu.c,
 * aws_s3_upload.c): the client's fields and one signed request.  Not for
 * other modules: they use aws_s3.h.
 */
#ifndef ZX_COMMON_AWS_S3_CALL_H
#define ZX_COMMON_AWS_S3_CALL_H

#include "common/aws_s3.h"

struct zx_s3 {
    zx_http_client *http;
    char *region, *endpoint;     /* endpoint: never NULL (the default filled in) */
    int path_style;
    zx_s3_keys_fn keys;
    void *keys_ctx;
    size_t max_get;
    long last_status;
    char last_code[64];
};

/* The response headers every request captures: indexes in r->header. */
enum { S3_H_ETAG, S3_H_REQID, S3_H_LENGTH, S3_H_REGION, S3_H_SHA256 };

/* A request's own header lines (Host first), bounded. */
#define S3_HDRS_MAX 12
typedef struct s3_hdrs {
    char store[S3_HDRS_MAX][512];
    char *v[S3_HDRS_MAX + 1];    /* NULL-ended */
    int n;
} s3_hdrs;

/* Adds a line; 0, or -1 when full or the line is longer than 511 bytes. */
int s3_hdr(s3_hdrs *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One request. */
typedef struct s3_call {
    const char *op;              /* "PutObject": for messages */
    const char *method;
    const char *bucket, *key;    /* key NULL: the bucket itself */
    const char *query;           /* as sent; NULL: none */
    const char *const *headers;  /* signed; NULL-ended; may be NULL */
    const void *body;            /* NULL: empty */
    size_t len;
    const char *payload_hash;    /* NULL: computed by the signer */
    size_t max_response;         /* 0: the client's (16 MiB) */
    const char *about;           /* without a key: what messages name (a prefix) */
} s3_call;

/* Sends c (signed, tried again on 5xx).  0 with *r (any status: the
 * caller decides), or ZX_S3_ERR with err (no keys, bad address, no
 * answer).  Free *r in both cases. */
int s3_do(zx_s3 *s, const s3_call *c, zx_http_response *r, char *err, size_t errlen);

/* The message of a failed answer r into err; returns ZX_S3_ERR. */
int s3_fail(zx_s3 *s, const s3_call *c, const zx_http_response *r, char *err, size_t errlen);

/* Whether r's XML error has this code. */
int s3_is_code(const zx_http_response *r, const char *code);

/* The payload's SHA-256 as hex into phash (for signing) and the checksum
 * header ck asks for (its base64 into b64 for SHA-256, else "").  0 or
 * -1 (libcrypto failed). */
int s3_body_headers(s3_hdrs *h, zx_s3_checksum ck, const void *body, size_t len,
                    char phash[65], char b64[48]);

/* The SSE headers of po.  0 or ZX_S3_ERR with err (an unknown mode). */
int s3_sse_headers(s3_hdrs *h, const zx_s3_put_opts *po, char *err, size_t errlen);

/* Appends "&name=value" (value percent-encoded) to q when value is set.
 * 0 or -1 (out of memory). */
int s3_query(zx_buf *q, const char *name, const char *value);

#endif
