/*
 * ice_catalog_int.h — what the three catalogs (ice_rest.c, ice_glue.c,
 * ice_s3tables.c) share behind ice_catalog.h: the handle, its table of
 * operations, and the pure helpers (percent-encoding, paths, error
 * mapping) the unit tests call.  Never included outside this folder and
 * its tests.
 */
#ifndef ZX_DEST_ICE_CATALOG_INT_H
#define ZX_DEST_ICE_CATALOG_INT_H

#include "workers/destinations/iceberg/ice_catalog.h"

#include "common/aws_call.h"
#include "common/aws_creds.h"
#include "common/aws_s3.h"
#include "common/http_client.h"

typedef struct ice_ops {
    int (*ensure_namespace)(zx_icecat *c, const char *ns, char *err, size_t errlen);
    int (*load)(zx_icecat *c, const char *ns, const char *name, zx_icecat_table *out,
                char *err, size_t errlen);
    int (*create)(zx_icecat *c, const char *ns, const char *name, const json_t *create_req,
                  const json_t *metadata, zx_icecat_table *out, char *err, size_t errlen);
    int (*commit)(zx_icecat *c, const char *ns, const char *name, const zx_icecat_table *base,
                  const json_t *requirements, const json_t *updates,
                  const json_t *new_metadata, zx_icecat_table *out, char *err, size_t errlen);
} ice_ops;

#define ICE_URL_MAX 4096

struct zx_icecat {
    const ice_ops *ops;
    char *name;                 /* for messages */
    long timeout_ms;
    int (*put)(void *, const char *, const void *, size_t, char *, size_t);
    void *put_ctx;
    /* iceberg_rest */
    zx_http_client *http;       /* retried requests (reads, creates) */
    zx_http_client *http_once;  /* max_attempts 1: commit */
    char *base;                 /* "<uri>/v1" */
    char *prefix;               /* "/<prefix>" percent-encoded, or "" */
    char *auth;                 /* "Authorization: Bearer ..." or NULL (secret) */
    char *credential;           /* "id:secret" (secret), to renew the token
                                   on a 401; NULL with a fixed token */
    char *scope;                /* OAuth2 scope; NULL: "catalog" */
    char *token_url;            /* where tokens come from */
    /* glue, s3tables */
    zx_aws_creds *creds;
    zx_aws_client *api;
    zx_aws_client *api_once;    /* max_attempts 1: the pointer swap */
    zx_s3 *s3;
    char *location;             /* glue */
    char *catalog_id;           /* glue */
    char *bucket_arn;           /* s3tables */
};

extern const ice_ops ice_rest_ops, ice_glue_ops, ice_s3tables_ops;

int ice_rest_open(zx_icecat *c, const zx_icecat_args *a, char *err, size_t errlen);
int ice_aws_open(zx_icecat *c, const zx_icecat_args *a, const char *service, char *err,
                 size_t errlen);

/* ---- the AWS side glue and s3tables share (ice_aws.c) ------------- */

/* An AWS answer: status (0: none), its body parsed (NULL: none or not
 * JSON), the error's short type and message ("" when none). */
typedef struct ice_aws_ans {
    long status;
    int transfer;               /* a ZX_HTTP_* / ZX_AWS_* code: no answer */
    json_t *j;
    char type[128];
    char msg[600];
} ice_aws_ans;

void ice_aws_ans_free(ice_aws_ans *a);

/* A JSON 1.1 call (glue): target "AWSGlue.GetTable".  once: the client
 * that sends it once.  0 with an answer (any status) in *a, or -1 (no
 * answer: a->transfer, a->msg says why). */
int ice_aws_json(zx_icecat *c, int once, const char *target, const json_t *body,
                 ice_aws_ans *a);
/* A REST-JSON call (s3tables): method, path (encoded), query (NULL). */
int ice_aws_rest(zx_icecat *c, int once, const char *method, const char *path,
                 const char *query, const json_t *body, ice_aws_ans *a);

/* The TableMetadata JSON at url (s3://) into *out.  0 or -1 with err. */
int ice_aws_read_metadata(zx_icecat *c, const char *url, json_t **out, char *err,
                          size_t errlen);
/* md written to url through args.put.  0 or -1 with err. */
int ice_aws_write_metadata(zx_icecat *c, const char *url, const json_t *md, char *err,
                           size_t errlen);

/* ---- pure helpers (ice_catalog.c) ---------------------------------- */

/* s percent-encoded (RFC 3986 unreserved kept, all else %XX) into out[n].
 * 0, or -1 when it does not fit. */
int ice_pct(const char *s, char *out, size_t n);
/* The same, '/' kept when keep_slash (a REST prefix is a path: Iceberg's
 * clients put it in the URL as it is). */
int ice_pct_keep(const char *s, int keep_slash, char *out, size_t n);

/* The REST path of a namespace ("<prefix>/namespaces/<ns>"), its tables
 * ("<prefix>/namespaces/<ns>/tables") or a table (name not NULL), ns
 * NULL: "<prefix>/namespaces".  prefix as struct zx_icecat keeps it.
 * 0 or -1 (too long). */
int ice_rest_path(const char *prefix, const char *ns, const char *table, int tables,
                  char *out, size_t n);

/* What a REST commit's answer means: 0 (2xx), ZX_ICECAT_CONFLICT (409),
 * ZX_ICECAT_UNKNOWN (500, 502, 503, 504, none), -1 (anything else). */
int ice_rest_commit_status(long status);

/* The ErrorModel's words of body ({"error":{"message","type","code"}})
 * into out: "Type: message", or the body's first 200 bytes. */
void ice_rest_error_text(const char *body, char *out, size_t n);

/* An AWS JSON error's short type ("__type" after its '#', or "code"),
 * "" when none, into out. */
void ice_aws_error_type(const char *body, char *out, size_t n);
/* Its message ("message" or "Message"), "" when none. */
void ice_aws_error_message(const char *body, char *out, size_t n);

/* "<location>/metadata/<NNNNN>-<uuid>.metadata.json": NNNNN is one more
 * than prev's (a metadata file name "NNNNN-..."; NULL or no number: 0 for
 * prev NULL, else 1).  0 or -1 (too long). */
int ice_metadata_path(const char *location, const char *prev, const char *uuid, char *out,
                      size_t n);

/* A random UUID (v4) as text. */
void ice_uuid(char out[37]);

/* Split "s3://bucket/key" (s3a:// too): 0 with bucket and key, or -1. */
int ice_s3_split(const char *url, char *bucket, size_t bn, char *key, size_t kn);

#endif
