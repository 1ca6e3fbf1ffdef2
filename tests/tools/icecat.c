/*
 * icecat — a test tool: drive an Iceberg catalog (ice_catalog.h) from the
 * command line.
 *
 *   icecat [settings] ensure-namespace NS
 *   icecat [settings] load NS TABLE
 *   icecat [settings] create NS TABLE [--request FILE] [--metadata FILE]
 *   icecat [settings] commit NS TABLE --base FILE [--requirements FILE]
 *                     [--updates FILE] [--new-metadata FILE]
 *
 * Settings, each a flag or else its environment variable:
 *   --kind K (ICECAT_KIND: iceberg_rest | glue | s3tables), --name N,
 *   --uri U, --warehouse W, --credential ID:SECRET, --token T, --scope S
 *   (REST); --region R, --endpoint URL, --access-key K, --secret-key S,
 *   --path-style 1, --location s3://b/wh, --bucket-arn ARN,
 *   --catalog-id ID (AWS: a kind: aws connection made by hand);
 *   --deadline-ms N.  ICECAT_<FLAG in capitals, '-' as '_'>.
 * Metadata files of glue and s3tables are written with zx's S3 client
 * through the same connection.  FILE: a JSON file; --base: what `load`
 * printed (its "table", or the whole line).
 *
 * Prints one JSON line: {"rc": N, "result": "ok" | "not_found" | "exists"
 * | "conflict" | "unknown" | "error", "error": "...", "table":
 * {"metadata_location", "token", "metadata"}}.  Exit status 0 when the
 * call was made (whatever rc), 2 on a usage error.  Test use only.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws_s3.h"
#include "conf/config.h"
#include "workers/aws_conn.h"
#include "workers/destinations/iceberg/ice_catalog.h"

static const char *const settings[] = {
    "kind", "name", "uri", "warehouse", "credential", "token", "scope", "region", "endpoint",
    "access-key", "secret-key", "path-style", "location", "bucket-arn", "catalog-id",
    "deadline-ms", "request", "metadata", "base", "requirements", "updates", "new-metadata",
    NULL};
static const char *vals[32];

static const char *get(const char *k)
{
    for (int i = 0; settings[i]; i++)
        if (!strcmp(settings[i], k)) {
            if (vals[i])
                return vals[i];
            char env[64] = "ICECAT_";
            size_t n = strlen(env);
            for (const char *p = k; *p && n + 1 < sizeof(env); p++)
                env[n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
            env[n] = 0;
            const char *v = getenv(env);
            return v && *v ? v : NULL;
        }
    return NULL;
}

static int usage(const char *m)
{
    fprintf(stderr, "icecat: %s\n", m);
    return 2;
}

static json_t *file_json(const char *k, int *bad)
{
    const char *p = get(k);
    if (!p)
        return NULL;
    json_error_t e;
    json_t *j = json_load_file(p, 0, &e);
    if (!j) {
        fprintf(stderr, "icecat: --%s %s: %s\n", k, p, e.text);
        *bad = 1;
    }
    return j;
}

typedef struct put_ctx {
    zx_s3 *s3;
} put_ctx;

static int put(void *ctx, const char *url, const void *p, size_t n, char *err, size_t errlen)
{
    put_ctx *pc = ctx;
    if (strncmp(url, "s3://", 5)) {
        snprintf(err, errlen, "%s: not s3://", url);
        return -1;
    }
    const char *b = url + 5, *sl = strchr(b, '/');
    if (!sl) {
        snprintf(err, errlen, "%s: no key", url);
        return -1;
    }
    char bucket[256];
    snprintf(bucket, sizeof(bucket), "%.*s", (int)(sl - b), b);
    zx_s3_put_opts po = {.content_type = "application/json"};
    return zx_s3_put_object(pc->s3, bucket, sl + 1, p, n, &po, NULL, err, errlen) == 0 ? 0 : -1;
}

static json_t *table_json(const zx_icecat_table *t)
{
    return json_pack("{s:s?,s:s?,s:O?}", "metadata_location", t->metadata_location, "token",
                     t->token, "metadata", t->metadata);
}

int main(int argc, char **argv)
{
    const char *pos[4];
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--", 2)) {
            int k;
            for (k = 0; settings[k] && strcmp(settings[k], argv[i] + 2); k++)
                ;
            if (!settings[k] || i + 1 >= argc)
                return usage("an unknown flag or one without its value");
            vals[k] = argv[++i];
        } else if (npos < 4)
            pos[npos++] = argv[i];
        else
            return usage("too many arguments");
    }
    if (npos < 2)
        return usage("usage: icecat [settings] ensure-namespace|load|create|commit NS [TABLE]");
    const char *cmd = pos[0], *ns = pos[1], *tbl = npos > 2 ? pos[2] : NULL;
    if (strcmp(cmd, "ensure-namespace") && !tbl)
        return usage("which table?");

    zx_conf_connection conn = {0};
    conn.name = (char *)"aws";
    conn.kind = (char *)"aws";
    conn.region = (char *)get("region");
    conn.endpoint = (char *)get("endpoint");
    conn.access_key_id = (char *)get("access-key");
    conn.secret_access_key = (char *)get("secret-key");
    conn.path_style = get("path-style") && atoi(get("path-style"));
    char err[2048] = "";
    put_ctx pc = {0};
    zx_aws_creds *creds = NULL;
    const char *kind = get("kind") ? get("kind") : "iceberg_rest";
    if (strcmp(kind, "iceberg_rest")) {
        zx_aws_cred_opts co;
        zx_aws_conn_cred_opts(&conn, &co);
        if (!(creds = zx_aws_creds_new(&co, err, sizeof(err))) ||
            !(pc.s3 = zx_aws_conn_s3(&conn, creds, NULL, err, sizeof(err))))
            return usage(err);
    }
    zx_icecat_args a = {
        .name = get("name") ? get("name") : "icecat",
        .kind = kind,
        .uri = get("uri"),
        .warehouse = get("warehouse"),
        .credential = get("credential"),
        .token = get("token"),
        .scope = get("scope"),
        .aws = &conn,
        .location = get("location"),
        .table_bucket_arn = get("bucket-arn"),
        .catalog_id = get("catalog-id"),
        .deadline_ms = get("deadline-ms") ? atoll(get("deadline-ms")) : 0,
        .put = put,
        .put_ctx = &pc,
    };
    int bad = 0;
    json_t *req = file_json("request", &bad), *md = file_json("metadata", &bad);
    json_t *base_j = file_json("base", &bad), *reqs = file_json("requirements", &bad);
    json_t *ups = file_json("updates", &bad), *nmd = file_json("new-metadata", &bad);
    if (bad)
        return 2;
    zx_icecat_table out = {0}, base = {0};
    int rc;
    zx_icecat *c = zx_icecat_open(&a, err, sizeof(err));
    if (!c)
        rc = -1;
    else if (!strcmp(cmd, "ensure-namespace"))
        rc = zx_icecat_ensure_namespace(c, ns, err, sizeof(err));
    else if (!strcmp(cmd, "load"))
        rc = zx_icecat_load(c, ns, tbl, &out, err, sizeof(err));
    else if (!strcmp(cmd, "create"))
        rc = zx_icecat_create(c, ns, tbl, req, md, &out, err, sizeof(err));
    else if (!strcmp(cmd, "commit")) {
        json_t *bt = json_object_get(base_j, "table");
        if (bt) {    /* what load printed, whole */
            json_incref(bt);
            json_decref(base_j);
            base_j = bt;
        }
        if (base_j) {
            base.metadata = json_object_get(base_j, "metadata");
            base.metadata_location =
                (char *)json_string_value(json_object_get(base_j, "metadata_location"));
            base.token = (char *)json_string_value(json_object_get(base_j, "token"));
        }
        rc = zx_icecat_commit(c, ns, tbl, base_j ? &base : NULL, reqs, ups, nmd, &out, err,
                              sizeof(err));
    } else
        return usage("unknown command");
    static const char *const names[] = {"ok", "not_found", "exists", "conflict", "unknown"};
    json_t *res = json_pack("{s:i,s:s}", "rc", rc, "result",
                            rc >= 0 && rc <= 4 ? names[rc] : "error");
    if (rc != 0)
        json_object_set_new(res, "error", json_string(err));
    if (rc == 0 && (out.metadata || out.metadata_location))
        json_object_set_new(res, "table", table_json(&out));
    char *s = json_dumps(res, JSON_COMPACT);
    printf("%s\n", s);
    free(s);
    json_decref(res);
    zx_icecat_table_free(&out);
    zx_icecat_free(c);
    zx_s3_free(pc.s3);
    zx_aws_creds_free(creds);
    json_decref(req);
    json_decref(md);
    json_decref(base_j);
    json_decref(reqs);
    json_decref(ups);
    json_decref(nmd);
    return 0;
}
