/*
 * ice_catalog.c — the catalog interface (ice_catalog.h): open by kind,
 * the calls passed to the kind's operations, and the pure helpers the
 * three catalogs share (ice_catalog_int.h).  Makes no request itself.
 */
#include "workers/destinations/iceberg/ice_catalog_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/util.h"

void zx_icecat_table_free(zx_icecat_table *t)
{
    if (!t)
        return;
    json_decref(t->metadata);
    free(t->metadata_location);
    free(t->token);
    memset(t, 0, sizeof(*t));
}

zx_icecat *zx_icecat_open(const zx_icecat_args *a, char *err, size_t errlen)
{
    const char *nm = a && a->name ? a->name : "?";
    if (!a || !a->kind) {
        zx_seterr(err, errlen, "iceberg catalog %s: no kind", nm);
        return NULL;
    }
    zx_icecat *c = calloc(1, sizeof(*c));
    if (!c || !(c->name = strdup(nm))) {
        free(c);
        zx_seterr(err, errlen, "iceberg catalog %s: out of memory", nm);
        return NULL;
    }
    c->timeout_ms = a->deadline_ms > 0 ? (long)a->deadline_ms : 30000;
    c->put = a->put;
    c->put_ctx = a->put_ctx;
    int rc;
    if (!strcmp(a->kind, "iceberg_rest")) {
        c->ops = &ice_rest_ops;
        rc = ice_rest_open(c, a, err, errlen);
    } else if (!strcmp(a->kind, "glue")) {
        c->ops = &ice_glue_ops;
        rc = ice_aws_open(c, a, "glue", err, errlen);
    } else if (!strcmp(a->kind, "s3tables")) {
        c->ops = &ice_s3tables_ops;
        rc = ice_aws_open(c, a, "s3tables", err, errlen);
    } else {
        rc = zx_seterr(err, errlen,
                       "iceberg catalog %s: kind %s: not iceberg_rest, glue nor s3tables", nm,
                       a->kind);
    }
    if (rc < 0) {
        zx_icecat_free(c);
        return NULL;
    }
    return c;
}

void zx_icecat_free(zx_icecat *c)
{
    if (!c)
        return;
    zx_http_client_free(c->http);
    zx_http_client_free(c->http_once);
    if (c->auth) {
        memset(c->auth, 0, strlen(c->auth));
        free(c->auth);
    }
    if (c->credential) {
        memset(c->credential, 0, strlen(c->credential));
        free(c->credential);
    }
    free(c->scope);
    free(c->token_url);
    free(c->base);
    free(c->prefix);
    zx_aws_client_free(c->api);
    zx_aws_client_free(c->api_once);
    zx_s3_free(c->s3);
    zx_aws_creds_free(c->creds);
    free(c->location);
    free(c->catalog_id);
    free(c->bucket_arn);
    free(c->name);
    free(c);
}

int zx_icecat_ensure_namespace(zx_icecat *c, const char *ns, char *err, size_t errlen)
{
    if (!ns || !*ns || strchr(ns, '.'))
        return zx_seterr(err, errlen, "iceberg catalog %s: namespace \"%s\": one level only",
                         c->name, ns ? ns : "");
    return c->ops->ensure_namespace(c, ns, err, errlen);
}

int zx_icecat_load(zx_icecat *c, const char *ns, const char *name, zx_icecat_table *out,
                   char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    return c->ops->load(c, ns, name, out, err, errlen);
}

int zx_icecat_create(zx_icecat *c, const char *ns, const char *name, const json_t *create_req,
                     const json_t *metadata, zx_icecat_table *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    return c->ops->create(c, ns, name, create_req, metadata, out, err, errlen);
}

int zx_icecat_commit(zx_icecat *c, const char *ns, const char *name,
                     const zx_icecat_table *base, const json_t *requirements,
                     const json_t *updates, const json_t *new_metadata,
                     zx_icecat_table *out, char *err, size_t errlen)
{
    if (out)
        memset(out, 0, sizeof(*out));
    return c->ops->commit(c, ns, name, base, requirements, updates, new_metadata, out, err,
                          errlen);
}

/* ---- pure helpers -------------------------------------------------- */

int ice_pct(const char *s, char *out, size_t n)
{
    return ice_pct_keep(s, 0, out, n);
}

int ice_pct_keep(const char *s, int keep_slash, char *out, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~' ||
            (keep_slash && *p == '/')) {
            if (o + 1 >= n)
                return -1;
            out[o++] = (char)*p;
        } else {
            if (o + 3 >= n)
                return -1;
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    if (o >= n)
        return -1;
    out[o] = 0;
    return 0;
}

int ice_rest_path(const char *prefix, const char *ns, const char *table, int tables,
                  char *out, size_t n)
{
    char e_ns[768], e_t[768];
    if (ns && ice_pct(ns, e_ns, sizeof(e_ns)) < 0)
        return -1;
    if (table && ice_pct(table, e_t, sizeof(e_t)) < 0)
        return -1;
    int k;
    if (!ns)
        k = snprintf(out, n, "%s/namespaces", prefix);
    else if (table)
        k = snprintf(out, n, "%s/namespaces/%s/tables/%s", prefix, e_ns, e_t);
    else if (tables)
        k = snprintf(out, n, "%s/namespaces/%s/tables", prefix, e_ns);
    else
        k = snprintf(out, n, "%s/namespaces/%s", prefix, e_ns);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

int ice_rest_commit_status(long status)
{
    if (status >= 200 && status < 300)
        return 0;
    if (status == 409)
        return ZX_ICECAT_CONFLICT;
    if (status == 0 || status == 500 || status == 502 || status == 503 || status == 504)
        return ZX_ICECAT_UNKNOWN;
    return -1;
}

static void first_bytes(const char *body, char *out, size_t n)
{
    size_t k = 0;
    for (const char *p = body ? body : ""; *p && k + 1 < n && k < 200; p++)
        out[k++] = (*p == '\n' || *p == '\r') ? ' ' : *p;
    out[k] = 0;
}

void ice_rest_error_text(const char *body, char *out, size_t n)
{
    json_t *j = body ? json_loads(body, 0, NULL) : NULL;
    json_t *e = json_object_get(j, "error");
    const char *msg = json_string_value(json_object_get(e, "message"));
    const char *type = json_string_value(json_object_get(e, "type"));
    if (msg)
        snprintf(out, n, "%s%s%.*s", type ? type : "", type ? ": " : "", 400, msg);
    else
        first_bytes(body, out, n);
    json_decref(j);
}

void ice_aws_error_type(const char *body, char *out, size_t n)
{
    json_t *j = body ? json_loads(body, 0, NULL) : NULL;
    const char *t = json_string_value(json_object_get(j, "__type"));
    if (!t)
        t = json_string_value(json_object_get(j, "code"));
    if (!t)
        t = "";
    const char *h = strrchr(t, '#');
    snprintf(out, n, "%s", h ? h + 1 : t);
    char *colon = strchr(out, ':');   /* "Name:http://internal..." */
    if (colon)
        *colon = 0;
    json_decref(j);
}

void ice_aws_error_message(const char *body, char *out, size_t n)
{
    json_t *j = body ? json_loads(body, 0, NULL) : NULL;
    const char *m = json_string_value(json_object_get(j, "message"));
    if (!m)
        m = json_string_value(json_object_get(j, "Message"));
    snprintf(out, n, "%.*s", 400, m ? m : "");
    json_decref(j);
}

int ice_metadata_path(const char *location, const char *prev, const char *uuid, char *out,
                      size_t n)
{
    long v = 0;
    if (prev) {
        const char *f = strrchr(prev, '/');
        f = f ? f + 1 : prev;
        char *end;
        long k = strtol(f, &end, 10);
        v = (end != f && *end == '-' && k >= 0) ? k + 1 : 1;
    }
    size_t ll = strlen(location);
    while (ll && location[ll - 1] == '/')
        ll--;
    int k = snprintf(out, n, "%.*s/metadata/%05ld-%s.metadata.json", (int)ll, location, v, uuid);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

void ice_uuid(char out[37])
{
    unsigned char b[16];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
        FILE *f = fopen("/dev/urandom", "rb");
        if (!f || fread(b, 1, sizeof(b), f) != sizeof(b))
            memset(b, 0x5a, sizeof(b));
        if (f)
            fclose(f);
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
}

int ice_s3_split(const char *url, char *bucket, size_t bn, char *key, size_t kn)
{
    const char *p;
    if (!strncmp(url, "s3://", 5))
        p = url + 5;
    else if (!strncmp(url, "s3a://", 6))
        p = url + 6;
    else
        return -1;
    const char *sl = strchr(p, '/');
    if (!sl || sl == p || !sl[1] || (size_t)(sl - p) >= bn || strlen(sl + 1) >= kn)
        return -1;
    memcpy(bucket, p, (size_t)(sl - p));
    bucket[sl - p] = 0;
    strcpy(key, sl + 1);
    return 0;
}
