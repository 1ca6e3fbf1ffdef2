/*
 * test_config_aws.c — the configuration of what goes through a `kind: aws`
 * connection: the connection's own check, `source: kinesis` pipelines
 * (stream, stream_arn, start in both its shapes, format, mode) and the
 * files destination's S3 side (path, connection, sse, kms_key_id), as
 * zx_conf_load reports them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/config.h"
#include "workers/destinations/files/files_opts.h"
#include "workers/sources/kinesis/kinesis_opts.h"
#include "workers/sources/kinesis/kinesis_shards.h"   /* KS_START_* */

static int failures;
static char dir[64];

#define CHECK(c) do {                                                         \
        if (!(c)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            failures++;                                                       \
        }                                                                     \
    } while (0)

static const char head[] =
    "server: {data_dir: var}\n"
    "connections:\n"
    "  aws1: {kind: aws, region: eu-west-1}\n"
    "  lite: {kind: sqlite, path: x.db}\n"
    "authors:\n"
    "  alice: {tables: [t]}\n"
    "pipelines:\n";

/* Load hd + body; the loaded file (NULL when refused) and, in *e, its
 * errors. */
static zx_conf *load_with(const char *hd, const char *body, zx_conf_errors *e)
{
    char path[128], text[4096];
    snprintf(path, sizeof(path), "%s/zx.yaml", dir);
    snprintf(text, sizeof(text), "%s%s", hd, body);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0) {
        perror(path);
        exit(2);
    }
    fclose(f);
    zx_conf_errors_free(e);
    return zx_conf_load(path, 0, e);
}

static zx_conf *load(const char *body, zx_conf_errors *e)
{
    return load_with(head, body, e);
}

/* 1 when one of e's errors holds sub (else they are printed). */
static int has(const zx_conf_errors *e, const char *sub)
{
    for (size_t i = 0; i < e->n; i++)
        if (strstr(e->msgs[i], sub))
            return 1;
    fprintf(stderr, "  no error holds \"%s\"; got:\n", sub);
    for (size_t i = 0; i < e->n; i++)
        fprintf(stderr, "    %s\n", e->msgs[i]);
    return 0;
}

/* hd + body must be refused with an error holding sub. */
static void refused_with(const char *hd, const char *body, const char *sub)
{
    zx_conf_errors e = {0};
    zx_conf *c = load_with(hd, body, &e);
    CHECK(c == NULL);
    CHECK(has(&e, sub));
    zx_conf_free(c);
    zx_conf_errors_free(&e);
}

static void refused(const char *body, const char *sub)
{
    refused_with(head, body, sub);
}

#define KIN "  k: {direction: stream, source: kinesis, connection: aws1, table: ev, "

static void test_kinesis(void)
{
    zx_conf_errors e = {0};
    zx_conf *c = load(KIN "stream: orders, start: {at: \"2026-12-01T00:00:00Z\"}}\n", &e);
    CHECK(c != NULL);
    if (c) {
        const zx_kinesis_opts *o = zx_conf_find(c, "k")->own;
        CHECK(!strcmp(o->start, "2026-12-01T00:00:00Z"));
        CHECK(o->start_kind == KS_START_AT && o->start_ms == 1796083200000LL);
    }
    zx_conf_free(c);
    c = load(KIN "stream: orders, start: \"2026-12-01T00:00:01Z\"}\n", &e);
    CHECK(c != NULL);
    if (c)
        CHECK(((const zx_kinesis_opts *)zx_conf_find(c, "k")->own)->start_ms ==
              1796083201000LL);
    zx_conf_free(c);
    c = load(KIN "stream: orders}\n", &e);
    CHECK(c != NULL);
    if (c)
        CHECK(((const zx_kinesis_opts *)zx_conf_find(c, "k")->own)->start_kind ==
              KS_START_OLDEST);
    zx_conf_free(c);
    zx_conf_errors_free(&e);

    refused(KIN "stream: orders, start: {from: x}}\n",
            "start: a mapping here holds one key, at");
    refused(KIN "stream: orders, start: {at: x, b: y}}\n", "holds one key, at");
    refused(KIN "stream: orders, start: {at: yesterday}}\n",
            "start: \"yesterday\" is not oldest, new nor a time");
    refused(KIN "start: new}\n", "missing required field 'stream' (or 'stream_arn')");
    refused(KIN "stream: a, stream_arn: \"arn:aws:kinesis:eu-west-1:1:stream/a\"}\n",
            "write stream or stream_arn, not both");
    refused(KIN "stream: \"bad name\"}\n", "is not a stream name");
    refused(KIN "stream_arn: \"arn:aws:s3:::b\"}\n", "not a Kinesis stream ARN");
    refused(KIN "stream: a, mode: latest, key: [id]}\n",
            "source kinesis appends its records (mode: append)");
    refused(KIN "stream: a, batch_records: 20000}\n", "batch_records");
    refused("  k: {direction: stream, source: kinesis, connection: lite, table: ev, "
            "stream: a}\n", "lite");

    /* the connection's own rules */
    static const char pipe[] = "pipelines:\n  k: {direction: stream, source: kinesis, "
                               "connection: a2, table: ev, stream: a}\n";
    refused_with("connections:\n  a2: {kind: aws, region: EU_West}\n", pipe,
                 "region: \"EU_West\" is not a region name");
    refused_with("connections:\n  a2: {kind: aws, region: eu-west-1, access_key_id: A1}\n",
                 pipe, "access_key_id and secret_access_key go together");
    refused_with("connections:\n  a2: {kind: aws, region: eu-west-1, external_id: x}\n",
                 pipe, "external_id goes with role_arn");
    refused_with("connections:\n  a2: {kind: aws, region: eu-west-1, endpoint: "
                 "\"ftp://h\"}\n", pipe, "endpoint: an http:// or https:// URL");
}

#define SYNC "  s: {direction: out, author: alice, query: \"SELECT 1 AS id FROM t\", " \
             "mode: replace, destination: {files: "

static void test_files_s3(void)
{
    zx_conf_errors e = {0};
    zx_conf *c = load(SYNC "{path: \"s3://zx-out/exports/\", format: parquet, "
                      "connection: aws1, sse: \"aws:kms\", kms_key_id: k1}}}\n", &e);
    CHECK(c != NULL);
    if (c) {
        const zx_conf_pipeline *p = zx_conf_find(c, "s");
        const zx_files_opts *o = zx_files_opts_of(p);
        CHECK(o && !strcmp(o->path, "s3://zx-out/exports/"));   /* kept as written */
        CHECK(o && !strcmp(o->sse, "aws:kms") && !strcmp(o->kms_key_id, "k1"));
        CHECK(p->dest_conn && !strcmp(p->dest_conn->name, "aws1"));
    }
    zx_conf_free(c);
    zx_conf_errors_free(&e);

    refused(SYNC "{path: \"s3://zx-out/x/\", format: csv}}}\n",
            "an s3:// path needs `connection:` naming a connection of kind aws");
    refused(SYNC "{path: \"s3://zx-out/x/\", format: csv, connection: lite}}}\n",
            "connection lite is of kind sqlite; an s3:// path needs kind aws");
    refused(SYNC "{path: \"s3://zx-out/x/\", format: csv, connection: nope}}}\n",
            "unknown connection 'nope'");
    refused(SYNC "{path: \"s3://Zx/x/\", format: csv, connection: aws1}}}\n",
            "the bucket name must be");
    refused(SYNC "{path: \"s3://zx-out/a/../b\", format: csv, connection: aws1}}}\n",
            "'..' part in the key");
    refused(SYNC "{path: var/exports/x, format: csv, connection: aws1}}}\n",
            "destination.files.connection goes with an s3:// path");
    refused(SYNC "{path: var/exports/x, format: csv, sse: AES256}}}\n",
            "destination.files.sse goes with an s3:// path");
    refused(SYNC "{path: \"s3://zx-out/x/\", format: csv, connection: aws1, "
            "kms_key_id: k}}}\n", "kms_key_id goes with sse: aws:kms");
    refused(SYNC "{path: \"s3://zx-out/x/\", format: csv, connection: aws1, sse: DES}}}\n",
            "sse");
    /* two syncs onto one object */
    refused(SYNC "{path: \"s3://zx-out/x/a.csv\", format: csv, connection: aws1}}}\n"
            "  s2: {direction: out, author: alice, query: \"SELECT 1 AS id FROM t\", "
            "mode: replace, destination: {files: {path: \"s3://zx-out/x/a.csv\", format: csv, "
            "connection: aws1}}}\n", "would write over the output of sync");
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/zx_cfaws_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_kinesis();
    test_files_s3();
    char path[128];
    snprintf(path, sizeof(path), "%s/zx.yaml", dir);
    unlink(path);
    rmdir(dir);
    if (failures)
        printf("%d check(s) failed\n", failures);
    else
        printf("test_config_aws: all checks passed\n");
    return failures != 0;
}
