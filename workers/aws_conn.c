/*
 * aws_conn.c — a `kind: aws` connection as the AWS module's settings
 * (aws_conn.h).
 */
#include "workers/aws_conn.h"

#include <string.h>

void zx_aws_conn_cred_opts(const zx_conf_connection *c, zx_aws_cred_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->access_key = c->access_key_id;
    o->secret_key = c->secret_access_key;
    o->session_token = c->session_token;
    o->profile = c->profile;
    o->role_arn = c->role_arn;
    o->external_id = c->external_id;
    o->region = c->region;
    /* a compatible service (moto, LocalStack) answers STS at its one endpoint */
    o->sts_endpoint = c->endpoint;
}

/* zx_s3_keys_fn over a credential provider: the keys valid now. */
static int creds_keys(void *ctx, zx_aws_keys *out, char *err, size_t errlen)
{
    return zx_aws_creds_get(ctx, 0, out, err, errlen) < 0 ? -1 : 0;
}

zx_s3 *zx_aws_conn_s3(const zx_conf_connection *c, zx_aws_creds *creds,
                      const zx_http_opts *http, char *err, size_t errlen)
{
    zx_s3_opts so = {
        .region = c->region,
        .endpoint = c->endpoint,
        .path_style = c->path_style,
        .keys = creds_keys,
        .keys_ctx = creds,
    };
    if (http)
        so.http = *http;
    return zx_s3_new(&so, err, errlen);
}
