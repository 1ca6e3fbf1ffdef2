/*
 * ice_aws.c — what the AWS catalogs (ice_glue.c, ice_s3tables.c) share:
 * their clients from the `kind: aws` connection (workers/aws_conn.h),
 * one signed call and its answer, and the metadata files (read from S3
 * here, written through the caller's put).  Never puts a key, a token or
 * a signature in a message.
 */
#include "workers/destinations/iceberg/ice_catalog_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "workers/aws_conn.h"

#define AWS_MAX_RESPONSE ((size_t)16 << 20)
#define AWS_MAX_METADATA ((size_t)256 << 20)

int ice_aws_open(zx_icecat *c, const zx_icecat_args *a, const char *service, char *err,
                 size_t errlen)
{
    const zx_conf_connection *k = a->aws;
    if (!k || !k->region)
        return zx_seterr(err, errlen, "iceberg catalog %s: %s needs an aws connection with a "
                         "region", c->name, service);
    if (!a->put)
        return zx_seterr(err, errlen, "iceberg catalog %s: %s: no put (writer of metadata)",
                         c->name, service);
    if (!strcmp(service, "s3tables")) {
        if (!a->table_bucket_arn || !*a->table_bucket_arn)
            return zx_seterr(err, errlen, "iceberg catalog %s: s3tables: no table_bucket_arn",
                             c->name);
        if (!(c->bucket_arn = strdup(a->table_bucket_arn)))
            return zx_seterr(err, errlen, "iceberg catalog %s: out of memory", c->name);
    } else {
        if ((a->location && !(c->location = strdup(a->location))) ||
            (a->catalog_id && !(c->catalog_id = strdup(a->catalog_id))))
            return zx_seterr(err, errlen, "iceberg catalog %s: out of memory", c->name);
    }
    zx_aws_cred_opts co;
    zx_aws_conn_cred_opts(k, &co);
    char e[600];
    if (!(c->creds = zx_aws_creds_new(&co, e, sizeof(e))))
        return zx_seterr(err, errlen, "iceberg catalog %s: connection %s: %s", c->name,
                         k->name ? k->name : "?", e);
    zx_http_opts ho = {.timeout_ms = c->timeout_ms, .max_response = AWS_MAX_RESPONSE};
    if (!(c->api = zx_aws_client_new(service, k->region, k->endpoint, c->creds, &ho, e,
                                     sizeof(e))))
        return zx_seterr(err, errlen, "iceberg catalog %s: %s", c->name, e);
    ho.max_attempts = 1;
    if (!(c->api_once = zx_aws_client_new(service, k->region, k->endpoint, c->creds, &ho, e,
                                          sizeof(e))))
        return zx_seterr(err, errlen, "iceberg catalog %s: %s", c->name, e);
    zx_http_opts so = {.timeout_ms = c->timeout_ms};
    if (!(c->s3 = zx_aws_conn_s3(k, c->creds, &so, e, sizeof(e))))
        return zx_seterr(err, errlen, "iceberg catalog %s: %s", c->name, e);
    return 0;
}

void ice_aws_ans_free(ice_aws_ans *a)
{
    json_decref(a->j);
    memset(a, 0, sizeof(*a));
}

static int finish(zx_icecat *c, int rc, zx_http_response *r, ice_aws_ans *a)
{
    (void)c;
    a->status = r->status;
    if (rc != 0) {
        a->transfer = rc;
        zx_http_response_free(r);
        return -1;
    }
    if (r->body && r->len)
        a->j = json_loadb(r->body, r->len, 0, NULL);
    if (r->status >= 300) {
        ice_aws_error_type(r->body, a->type, sizeof(a->type));
        ice_aws_error_message(r->body, a->msg, sizeof(a->msg));
        if (!a->msg[0]) {
            size_t k = 0;
            for (const char *p = r->body ? r->body : ""; *p && k < 200; p++)
                a->msg[k++] = (*p == '\n') ? ' ' : *p;
            a->msg[k] = 0;
        }
    }
    zx_http_response_free(r);
    return 0;
}

int ice_aws_json(zx_icecat *c, int once, const char *target, const json_t *body,
                 ice_aws_ans *a)
{
    memset(a, 0, sizeof(*a));
    char *b = json_dumps(body, JSON_COMPACT);
    if (!b) {
        a->transfer = ZX_HTTP_REFUSED;
        snprintf(a->msg, sizeof(a->msg), "out of memory");
        return -1;
    }
    zx_http_response r = {0};
    int rc = zx_aws_json_call(once ? c->api_once : c->api, target, b, strlen(b), &r, a->msg,
                              sizeof(a->msg));
    free(b);
    return finish(c, rc, &r, a);
}

int ice_aws_rest(zx_icecat *c, int once, const char *method, const char *path,
                 const char *query, const json_t *body, ice_aws_ans *a)
{
    memset(a, 0, sizeof(*a));
    char *b = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body && !b) {
        a->transfer = ZX_HTTP_REFUSED;
        snprintf(a->msg, sizeof(a->msg), "out of memory");
        return -1;
    }
    const char *h[] = {"Content-Type: application/json", NULL};
    zx_http_response r = {0};
    int rc = zx_aws_call(once ? c->api_once : c->api, method, path, query, b ? h : NULL, b,
                         b ? strlen(b) : 0, 0, &r, a->msg, sizeof(a->msg));
    free(b);
    return finish(c, rc, &r, a);
}

int ice_aws_read_metadata(zx_icecat *c, const char *url, json_t **out, char *err,
                          size_t errlen)
{
    char bucket[256], key[ZX_S3_KEY_MAX + 1], e[800];
    *out = NULL;
    if (!url || ice_s3_split(url, bucket, sizeof(bucket), key, sizeof(key)) < 0)
        return zx_seterr(err, errlen, "metadata location %s: not an s3:// URL",
                         url ? url : "(none)");
    char *data = NULL;
    size_t len = 0;
    int rc = zx_s3_get_object(c->s3, bucket, key, AWS_MAX_METADATA, &data, &len, e, sizeof(e));
    if (rc == ZX_S3_NOT_FOUND)
        return zx_seterr(err, errlen, "metadata file %s: not found", url);
    if (rc != 0)
        return zx_seterr(err, errlen, "metadata file %s: %s", url, e);
    json_error_t je;
    *out = json_loadb(data, len, 0, &je);
    free(data);
    if (!json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return zx_seterr(err, errlen, "metadata file %s: not a JSON object (%s)", url, je.text);
    }
    return 0;
}

int ice_aws_write_metadata(zx_icecat *c, const char *url, const json_t *md, char *err,
                           size_t errlen)
{
    char *b = json_dumps(md, JSON_COMPACT);
    if (!b)
        return zx_seterr(err, errlen, "out of memory");
    char e[800];
    int rc = c->put(c->put_ctx, url, b, strlen(b), e, sizeof(e));
    free(b);
    if (rc < 0)
        return zx_seterr(err, errlen, "metadata file %s: %s", url, e);
    return 0;
}
