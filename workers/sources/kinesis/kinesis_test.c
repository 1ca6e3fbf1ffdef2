/*
 * kinesis_test.c — `zxctl test` of a kinesis pipeline or an aws
 * connection: where the credentials come from (never what they are), then
 * the stream's status and shard count, or the precise failure (no such
 * stream, access denied, no answer from the endpoint, a clock off).
 */
#include <stdio.h>
#include <string.h>

#include "common/aws_call.h"
#include "common/aws_creds.h"
#include "workers/aws_conn.h"
#include "workers/sources/kinesis/kinesis_api.h"
#include "workers/sources/kinesis/kinesis_int.h"

int zx_kinesis_test(const zx_conf *conf, const zx_conf_pipeline *p,
                    const zx_conf_connection *c, int timeout_ms, char *out, size_t outlen)
{
    (void)conf;
    if (!c && p)
        c = p->conn;
    if (!c) {
        snprintf(out, outlen, "no connection to test");
        return -1;
    }
    zx_aws_cred_opts co;
    zx_aws_conn_cred_opts(c, &co);
    char e[1200];
    zx_aws_creds *creds = zx_aws_creds_new(&co, e, sizeof(e));
    if (!creds) {
        snprintf(out, outlen, "connection %s: %s", c->name, e);
        return -1;
    }
    zx_aws_keys keys;
    if (zx_aws_creds_get(creds, 0, &keys, e, sizeof(e)) < 0) {
        snprintf(out, outlen, "connection %s: %s", c->name, e);
        zx_aws_creds_free(creds);
        return -1;
    }
    char from[600];
    snprintf(from, sizeof(from), "%s", zx_aws_creds_source(creds));
    const zx_kinesis_opts *o = p ? p->own : NULL;
    if (!o) {
        snprintf(out, outlen, "connection %s: credentials from %s (region %s)", c->name, from,
                 c->region ? c->region : "?");
        zx_aws_creds_free(creds);
        return 0;
    }
    zx_http_opts ho = {.timeout_ms = timeout_ms > 0 ? timeout_ms : 5000, .max_attempts = 1};
    zx_aws_client *api = zx_aws_client_new("kinesis", c->region, c->endpoint, creds, &ho, e,
                                           sizeof(e));
    if (!api) {
        snprintf(out, outlen, "pipeline %s: %s", p->name, e);
        zx_aws_creds_free(creds);
        return -1;
    }
    ka_stream st = {o->stream, o->stream_arn};
    zx_kin_stream_summary sum;
    ka_status s = ka_describe(api, &st, &sum, e, sizeof(e));
    int rc = -1;
    if (s == KA_OK) {
        snprintf(out, outlen, "pipeline %s: stream %s at %s is %s with %ld open shards "
                 "(records kept %ld hours); credentials from %s", p->name,
                 o->stream ? o->stream : o->stream_arn, zx_aws_client_url(api), sum.status,
                 sum.open_shards, sum.retention_hours, from);
        rc = strcmp(sum.status, "DELETING") ? 0 : -1;
        zx_kin_stream_summary_free(&sum);
    } else {
        snprintf(out, outlen, "pipeline %s: %s (credentials from %s)", p->name, e, from);
    }
    zx_aws_client_free(api);
    zx_aws_creds_free(creds);
    return rc;
}
