/*
 * aws_conn.c — a `kind: aws` connection as the AWS module's settings
 * (aws_conn.h).
 */
#include "workers/aws_conn.h"

#include <pthread.h>
#include <string.h>

#include "common/util.h"

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

/* The keys a thread signs with: copied out of the provider under the
 * lock (a refresh in another thread frees the provider's strings), valid
 * until that thread's next call. */
static pthread_mutex_t keys_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread struct {
    char access_key[256], secret_key[256], token[8192];
} mine;

/* zx_s3_keys_fn over a credential provider: the keys valid now.  Thread
 * safe: an uploader's parallel parts call it from their threads. */
static int creds_keys(void *ctx, zx_aws_keys *out, char *err, size_t errlen)
{
    zx_aws_keys k;
    pthread_mutex_lock(&keys_mu);
    int rc = zx_aws_creds_get(ctx, 0, &k, err, errlen) < 0 ? -1 : 0;
    if (rc == 0) {
        const char *t = k.session_token ? k.session_token : "";
        if (!k.access_key || !k.secret_key || strlen(k.access_key) >= sizeof(mine.access_key) ||
            strlen(k.secret_key) >= sizeof(mine.secret_key) || strlen(t) >= sizeof(mine.token))
            rc = zx_seterr(err, errlen, "the credentials found are longer than zx takes");
        else {
            strcpy(mine.access_key, k.access_key);
            strcpy(mine.secret_key, k.secret_key);
            strcpy(mine.token, t);
        }
    }
    pthread_mutex_unlock(&keys_mu);
    if (rc < 0)
        return -1;
    out->access_key = mine.access_key;
    out->secret_key = mine.secret_key;
    out->session_token = mine.token[0] ? mine.token : NULL;
    return 0;
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
