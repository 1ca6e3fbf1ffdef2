/*
 * kinesis_plugin.c — `source: kinesis` as a plug-in (conf/plugin.h): the
 * `kind: aws` connection's rows and check, the pipeline's own rows
 * (kinesis_opts.h) and check, its `zxctl test` (kinesis_test.c) and its
 * worker (kinesis.c).
 *
 * It must never: quote a secret (the secret key, the session token) in a
 * message, or open anything in a check.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/timefmt.h"
#include "conf/check.h"
#include "conf/lineage.h"
#include "conf/plugin.h"
#include "workers/aws_conn.h"
#include "workers/sources/kinesis/kinesis_int.h"
#include "workers/sources/source.h"

extern const zx_source zx_source_kinesis;   /* kinesis.c */

static const char *const conn_kinds[] = {ZX_AWS_CONN_KIND, NULL};
static const char *const metadata[] = {"_ingested_at", "_shard", "_sequence",
                                       "_partition_key", "_arrival", NULL};
static const char *const kin_only[] = {"kinesis", NULL};

#define CONN(f) offsetof(zx_conf_connection, f)
#define OWN(f) offsetof(zx_kinesis_opts, f)

static const zx_cf_option options[] = {
    {.section = "connections.<name>", .name = "region", .type = ZX_CF_STRING,
     .offset = CONN(region), .flags = ZX_CF_REQUIRED,
     .help = "The AWS region (`eu-west-1`): where the stream or bucket is, and "
     "whose endpoints zx calls."},
    {.section = "connections.<name>", .name = "access_key_id", .type = ZX_CF_STRING,
     .def_doc = "none: the credential chain", .offset = CONN(access_key_id),
     .flags = ZX_CF_TOKEN,
     .help = "A static access key, with `secret_access_key`. Without them zx finds "
     "credentials as the AWS SDKs do: the environment (`AWS_ACCESS_KEY_ID`...), the "
     "shared files' `profile` (with `role_arn` + `source_profile`), web identity "
     "(`AWS_WEB_IDENTITY_TOKEN_FILE`), ECS container credentials, then EC2 "
     "instance metadata (IMDSv2); temporary ones are renewed before they expire. "
     "`zxctl test` says which supplied them."},
    {.section = "connections.<name>", .name = "secret_access_key", .type = ZX_CF_STRING,
     .def_doc = "none", .offset = CONN(secret_access_key), .flags = ZX_CF_SECRET,
     .help = "The static key's secret. Prefer `${env:NAME}` or `${file:PATH}`."},
    {.section = "connections.<name>", .name = "session_token", .type = ZX_CF_STRING,
     .def_doc = "none", .offset = CONN(session_token), .flags = ZX_CF_SECRET,
     .help = "With temporary static keys: their session token."},
    {.section = "connections.<name>", .name = "profile", .type = ZX_CF_STRING,
     .def_doc = "`AWS_PROFILE`, else `default`", .offset = CONN(profile),
     .help = "The profile of the shared credentials and config files "
     "(`~/.aws/credentials`, `~/.aws/config`) to take credentials from."},
    {.section = "connections.<name>", .name = "role_arn", .type = ZX_CF_STRING,
     .def_doc = "none", .offset = CONN(role_arn), .flags = ZX_CF_TOKEN,
     .help = "A role zx assumes (STS AssumeRole) with the credentials found, "
     "renewed before it expires."},
    {.section = "connections.<name>", .name = "external_id", .type = ZX_CF_STRING,
     .def_doc = "none", .offset = CONN(external_id), .flags = ZX_CF_TOKEN,
     .help = "With `role_arn`: the external id the role's trust policy asks for."},
    {.section = "connections.<name>", .name = "endpoint", .type = ZX_CF_STRING,
     .def_doc = "AWS's own for the region", .offset = CONN(endpoint),
     .flags = ZX_CF_TOKEN,
     .help = "The URL of an AWS-compatible service instead of AWS "
     "(`http://127.0.0.1:4567` for kinesalite, moto, MinIO, Ceph, R2), `http://` or "
     "`https://`, without a query."},
    {.section = "connections.<name>", .name = "path_style", .type = ZX_CF_BOOL,
     .def = "false", .offset = CONN(path_style),
     .help = "S3: buckets in the URL's path (`endpoint/bucket/key`), as MinIO and "
     "moto want, not in the host name."},

    {.section = "pipelines.<name>", .name = "stream", .type = ZX_CF_STRING,
     .def_doc = "one of `stream`, `stream_arn` is **required**", .offset = OWN(stream),
     .flags = ZX_CF_OWN, .sources = kin_only,
     .help = "The Kinesis data stream to read: 1 to 128 of `[a-zA-Z0-9_.-]`. Every "
     "shard is read, and followed through splits and merges. One zxd reads a "
     "stream for a pipeline: two pipelines (or two zxd) reading one stream each "
     "get every record."},
    {.section = "pipelines.<name>", .name = "stream_arn", .type = ZX_CF_STRING,
     .def_doc = "none", .offset = OWN(stream_arn), .flags = ZX_CF_OWN | ZX_CF_TOKEN,
     .sources = kin_only,
     .help = "The stream by its ARN (`arn:aws:kinesis:eu-west-1:111122223333:stream/"
     "orders`), instead of `stream`: for a stream of another account."},
    {.section = "pipelines.<name>", .name = "start", .type = ZX_CF_STRING,
     .def = "oldest", .offset = OWN(start), .flags = ZX_CF_OWN | ZX_CF_OR_AT,
     .sources = kin_only,
     .help = "Where the shards start at the pipeline's first start (then each "
     "resumes after the last record written): `oldest` (the oldest record the "
     "stream keeps), `new` (records put from the first start on), or a time, "
     "`{at: 2026-12-01T00:00:00Z}` or the time alone (records put from then "
     "on). Shards made later by "
     "a split or a merge start at their oldest record."},
    {.section = "pipelines.<name>", .name = "batch_records", .type = ZX_CF_UINT,
     .def = "10000", .offset = OWN(batch_records), .flags = ZX_CF_OWN, .min = 1,
     .max = 10000, .sources = kin_only,
     .help = "Records asked of a shard per GetRecords call (its `Limit`)."},
};

/* 1 when s is a Kinesis stream name: 1 to 128 of [a-zA-Z0-9_.-]. */
static int stream_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 128)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' || s[i] == '-'))
            return 0;
    return 1;
}

int zx_kinesis_parse_start(const char *start, int *kind, int64_t *ms)
{
    int64_t us;
    *ms = 0;
    if (!start || !strcmp(start, "oldest")) {
        *kind = KS_START_OLDEST;
        return 0;
    }
    if (!strcmp(start, "new")) {
        *kind = KS_START_NEW;
        return 0;
    }
    if (!zx_rfc3339_parse(start, strlen(start), &us) || us < 0)
        return -1;
    *kind = KS_START_AT;
    *ms = us / 1000;
    return 0;
}

static int kinesis_check(zx_cf_check *ck, zx_conf_pipeline *p)
{
    zx_kinesis_opts *o = p->own;
    int bad = 0;

    if (!o)
        return 0;
    if (!o->stream && !o->stream_arn) {
        zx_check_error(ck, NULL, "pipeline %s: missing required field 'stream' (or "
                       "'stream_arn')", p->name);
        bad++;
    } else if (o->stream && o->stream_arn) {
        zx_check_error(ck, "stream_arn", "pipelines.%s: write stream or stream_arn, not "
                       "both", p->name);
        bad++;
    } else if (o->stream && !stream_name_ok(o->stream)) {
        zx_check_error(ck, "stream", "pipelines.%s: stream: \"%.140s\" is not a stream "
                       "name (1 to 128 of letters, digits, '_', '.' and '-')", p->name,
                       o->stream);
        bad++;
    } else if (o->stream_arn && (strncmp(o->stream_arn, "arn:", 4) ||
                                 !strstr(o->stream_arn, ":kinesis:") ||
                                 !strstr(o->stream_arn, ":stream/") ||
                                 strlen(o->stream_arn) > 2048)) {
        zx_check_error(ck, "stream_arn", "pipelines.%s: stream_arn: not a Kinesis stream "
                       "ARN (arn:aws:kinesis:REGION:ACCOUNT:stream/NAME)", p->name);
        bad++;
    }
    if (zx_kinesis_parse_start(o->start, &o->start_kind, &o->start_ms) < 0) {
        zx_check_error(ck, "start", "pipelines.%s: start: \"%.60s\" is not oldest, new "
                       "nor a time such as 2026-12-01T00:00:00Z", p->name, o->start);
        bad++;
    }
    if (p->format != ZX_FORMAT_JSON) {
        zx_check_error(ck, "format", "pipelines.%s: format: source kinesis reads JSON "
                       "records (format: json)", p->name);
        bad++;
    }
    if (p->stream_mode != ZX_STREAM_APPEND) {
        zx_check_error(ck, "mode", "pipelines.%s: mode: source kinesis appends its "
                       "records (mode: append)", p->name);
        bad++;
    }
    return bad ? -1 : 0;
}

static int region_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 32)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return 0;
    return 1;
}

static int aws_check_connection(zx_cf_check *ck, zx_conf_connection *c)
{
    int bad = 0;

    if (c->region && !region_ok(c->region)) {
        zx_check_error(ck, "region", "connections.%s: region: \"%.40s\" is not a region "
                       "name such as eu-west-1", c->name, c->region);
        bad++;
    }
    int key = zx_check_written(ck, "access_key_id"),
        secret = zx_check_written(ck, "secret_access_key");
    if (key != secret) {
        zx_check_error(ck, key ? "access_key_id" : "secret_access_key",
                       "connections.%s: access_key_id and secret_access_key go together",
                       c->name);
        bad++;
    } else if (!key && zx_check_written(ck, "session_token")) {
        zx_check_error(ck, "session_token", "connections.%s: session_token goes with "
                       "access_key_id and secret_access_key", c->name);
        bad++;
    }
    if (c->external_id && !c->role_arn) {
        zx_check_error(ck, "external_id", "connections.%s: external_id goes with role_arn",
                       c->name);
        bad++;
    }
    if (c->role_arn && strncmp(c->role_arn, "arn:", 4)) {
        zx_check_error(ck, "role_arn", "connections.%s: role_arn: not an ARN "
                       "(arn:aws:iam::ACCOUNT:role/NAME)", c->name);
        bad++;
    }
    if (c->endpoint && ((strncmp(c->endpoint, "http://", 7) &&
                         strncmp(c->endpoint, "https://", 8)) ||
                        strpbrk(c->endpoint, "?#@") || strlen(c->endpoint) > 1000)) {
        zx_check_error(ck, "endpoint", "connections.%s: endpoint: an http:// or https:// "
                       "URL without a query, a fragment or a user name", c->name);
        bad++;
    }
    return bad ? -1 : 0;
}

/* Lineage: the data stream it reads (by name, or its ARN), through its
 * aws connection. */
static void kinesis_lineage(const zx_conf *c, const zx_conf_pipeline *p, zx_lineage_out *out)
{
    (void)c;
    const zx_kinesis_opts *o = p->own;
    if (o && (o->stream || o->stream_arn))
        zx_lineage_ext(out, "kinesis.stream", p->connection,
                       o->stream ? o->stream : o->stream_arn);
}

const zx_plugin zx_plugin_kinesis = {
    .name = "kinesis",
    .role = ZX_PLUGIN_SOURCE,
    .lineage = kinesis_lineage,
    .caps = ZX_PLUGIN_STREAM,
    .conn_kinds = conn_kinds,
    .metadata = metadata,
    .doc = "records are read from every shard of the Kinesis data stream `stream` "
           "(through splits and merges: a shard after its parents), through a "
           "`kind: aws` connection. Each record holds a JSON object, an array of "
           "them or NDJSON lines; KPL-aggregated records are taken apart, each user "
           "record with its own partition key. A record that is none of these goes "
           "to `<table>__rejects` with its shard, sequence number and the reason. "
           "Each shard's position (the last sequence number written) is stored with "
           "the rows, and a restart resumes after it.",
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .opts_size = sizeof(zx_kinesis_opts),
    .check = kinesis_check,
    .check_connection = aws_check_connection,
    .test = zx_kinesis_test,
    .source = &zx_source_kinesis,
};
