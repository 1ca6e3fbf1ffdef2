/*
 * ice_s3tables.c — Amazon S3 Tables as an Iceberg catalog (its REST-JSON
 * API, signing name s3tables): namespaces (GetNamespace, CreateNamespace),
 * tables (CreateTable, GetTableMetadataLocation) and the one swap,
 * UpdateTableMetadataLocation with the versionToken read (sent once: a
 * lost answer is ZX_ICECAT_UNKNOWN).  S3 Tables chooses a table's
 * location (its warehouseLocation); the metadata files are written there
 * through args.put.  Never deletes a file.
 */
#include "workers/destinations/iceberg/ice_catalog_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* "/<what>/<arn>[/<ns>[/<name>]][<tail>]", each part percent-encoded. */
static int s3t_path(const zx_icecat *c, const char *what, const char *ns, const char *name,
                    const char *tail, char *out, size_t n)
{
    char arn[1024], ens[512], ename[512];
    if (ice_pct(c->bucket_arn, arn, sizeof(arn)) < 0 ||
        (ns && ice_pct(ns, ens, sizeof(ens)) < 0) ||
        (name && ice_pct(name, ename, sizeof(ename)) < 0))
        return -1;
    int k = snprintf(out, n, "/%s/%s%s%s%s%s%s", what, arn, ns ? "/" : "", ns ? ens : "",
                     name ? "/" : "", name ? ename : "", tail ? tail : "");
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

static int ans_err(zx_icecat *c, const char *what, const ice_aws_ans *a, char *err,
                   size_t errlen)
{
    if (a->transfer)
        return zx_seterr(err, errlen, "iceberg catalog %s: %s: %s", c->name, what, a->msg);
    return zx_seterr(err, errlen, "iceberg catalog %s: %s: %ld %s%s%s", c->name, what,
                     a->status, a->type, a->type[0] ? ": " : "", a->msg);
}

static int s3t_ensure_namespace(zx_icecat *c, const char *ns, char *err, size_t errlen)
{
    char path[ICE_URL_MAX], what[400];
    snprintf(what, sizeof(what), "namespace %s", ns);
    if (s3t_path(c, "namespaces", ns, NULL, NULL, path, sizeof(path)) < 0)
        return zx_seterr(err, errlen, "iceberg catalog %s: %s: too long", c->name, what);
    ice_aws_ans a;
    int rc = ice_aws_rest(c, 0, "GET", path, NULL, NULL, &a);
    if (rc == 0 && a.status == 200) {
        ice_aws_ans_free(&a);
        return 0;
    }
    if (rc < 0 || a.status != 404) {
        rc = ans_err(c, what, &a, err, errlen);
        ice_aws_ans_free(&a);
        return rc;
    }
    ice_aws_ans_free(&a);
    s3t_path(c, "namespaces", NULL, NULL, NULL, path, sizeof(path));
    json_t *b = json_pack("{s:[s]}", "namespace", ns);
    rc = ice_aws_rest(c, 0, "PUT", path, NULL, b, &a);
    json_decref(b);
    if (rc == 0 && (a.status == 200 || a.status == 409))
        rc = 0;
    else {
        snprintf(what, sizeof(what), "namespace %s: create", ns);
        rc = ans_err(c, what, &a, err, errlen);
    }
    ice_aws_ans_free(&a);
    return rc;
}

/* GetTableMetadataLocation into *a: 0 (a->j has versionToken,
 * metadataLocation, warehouseLocation), ZX_ICECAT_NOT_FOUND, -1. */
static int get_location(zx_icecat *c, const char *ns, const char *name, ice_aws_ans *a,
                        char *err, size_t errlen)
{
    char path[ICE_URL_MAX], what[600];
    snprintf(what, sizeof(what), "table %s.%s", ns, name);
    memset(a, 0, sizeof(*a));
    if (s3t_path(c, "tables", ns, name, "/metadata-location", path, sizeof(path)) < 0)
        return zx_seterr(err, errlen, "iceberg catalog %s: %s: name too long", c->name, what);
    int rc = ice_aws_rest(c, 0, "GET", path, NULL, NULL, a);
    if (rc == 0 && a->status == 200 &&
        json_string_value(json_object_get(a->j, "versionToken")))
        return 0;
    if (rc == 0 && a->status == 404) {
        zx_seterr(err, errlen, "iceberg catalog %s: %s: %s", c->name, what, a->msg);
        return ZX_ICECAT_NOT_FOUND;
    }
    return ans_err(c, what, a, err, errlen);
}

static int s3t_load(zx_icecat *c, const char *ns, const char *name, zx_icecat_table *out,
                    char *err, size_t errlen)
{
    ice_aws_ans a;
    int rc = get_location(c, ns, name, &a, err, errlen);
    if (rc != 0)
        goto out;
    const char *loc = json_string_value(json_object_get(a.j, "metadataLocation"));
    const char *tok = json_string_value(json_object_get(a.j, "versionToken"));
    if (!loc) {
        rc = zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: has no metadata yet",
                       c->name, ns, name);
        goto out;
    }
    char e[1000];
    if (ice_aws_read_metadata(c, loc, &out->metadata, e, sizeof(e)) < 0) {
        rc = zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: %s", c->name, ns, name,
                       e);
        goto out;
    }
    if (!(out->metadata_location = strdup(loc)) || !(out->token = strdup(tok))) {
        zx_icecat_table_free(out);
        rc = zx_seterr(err, errlen, "iceberg catalog %s: out of memory", c->name);
    }
out:
    ice_aws_ans_free(&a);
    return rc;
}

/* UpdateTableMetadataLocation (sent once). */
static int swap(zx_icecat *c, const char *ns, const char *name, const char *token,
                const char *mloc, char *err, size_t errlen)
{
    char path[ICE_URL_MAX], what[600];
    snprintf(what, sizeof(what), "table %s.%s: commit", ns, name);
    if (s3t_path(c, "tables", ns, name, "/metadata-location", path, sizeof(path)) < 0)
        return zx_seterr(err, errlen, "iceberg catalog %s: %s: name too long", c->name, what);
    json_t *b = json_pack("{s:s,s:s}", "versionToken", token, "metadataLocation", mloc);
    ice_aws_ans a;
    int hr = ice_aws_rest(c, 1, "PUT", path, NULL, b, &a);
    json_decref(b);
    int rc;
    if (hr == 0 && a.status == 200)
        rc = 0;
    else if (hr == 0 && a.status == 409) {
        zx_seterr(err, errlen, "iceberg catalog %s: %s: conflict: %s", c->name, what, a.msg);
        rc = ZX_ICECAT_CONFLICT;
    } else if ((hr < 0 && a.transfer != ZX_HTTP_REFUSED && a.transfer != ZX_AWS_NO_CREDS) ||
               (hr == 0 && a.status >= 500)) {
        snprintf(what, sizeof(what), "table %s.%s: commit: outcome unknown", ns, name);
        ans_err(c, what, &a, err, errlen);
        rc = ZX_ICECAT_UNKNOWN;
    } else
        rc = ans_err(c, what, &a, err, errlen);
    ice_aws_ans_free(&a);
    return rc;
}

static int s3t_create(zx_icecat *c, const char *ns, const char *name, const json_t *create_req,
                      const json_t *metadata, zx_icecat_table *out, char *err, size_t errlen)
{
    (void)create_req;
    char path[ICE_URL_MAX], what[600], uuid[37], e[1000];
    snprintf(what, sizeof(what), "table %s.%s: create", ns, name);
    if (!json_is_object(metadata))
        return zx_seterr(err, errlen, "iceberg catalog %s: %s: no metadata", c->name, what);
    if (s3t_path(c, "tables", ns, NULL, NULL, path, sizeof(path)) < 0)
        return zx_seterr(err, errlen, "iceberg catalog %s: %s: name too long", c->name, what);
    ice_aws_ans a = {0}, l;
    json_t *md = NULL;
    /* a table there already: EXISTS, unless a create stopped before its
     * metadata (no metadata location): take it over.  (Asked first: S3
     * Tables answers 409 to a second CreateTable, but moto replaces the
     * table.) */
    int rc = get_location(c, ns, name, &l, e, sizeof(e));
    if (rc == 0 && json_string_value(json_object_get(l.j, "metadataLocation"))) {
        zx_seterr(err, errlen, "iceberg catalog %s: %s: the table exists", c->name, what);
        rc = ZX_ICECAT_EXISTS;
        goto out;
    }
    if (rc != 0 && rc != ZX_ICECAT_NOT_FOUND) {
        rc = zx_seterr(err, errlen, "%s", e);
        goto out;
    }
    if (rc == ZX_ICECAT_NOT_FOUND) {
        ice_aws_ans_free(&l);
        json_t *b = json_pack("{s:s,s:s}", "name", name, "format", "ICEBERG");
        rc = ice_aws_rest(c, 0, "PUT", path, NULL, b, &a);
        json_decref(b);
        if (rc == 0 && a.status == 409) {
            zx_seterr(err, errlen, "iceberg catalog %s: %s: %s", c->name, what, a.msg);
            rc = ZX_ICECAT_EXISTS;
            goto out;
        }
        if (rc < 0 || a.status != 200) {
            rc = ans_err(c, what, &a, err, errlen);
            goto out;
        }
        if (get_location(c, ns, name, &l, err, errlen) != 0) {
            rc = -1;
            goto out;
        }
    }
    const char *wh = json_string_value(json_object_get(l.j, "warehouseLocation"));
    const char *tok = json_string_value(json_object_get(l.j, "versionToken"));
    if (!wh || !tok) {
        rc = zx_seterr(err, errlen, "iceberg catalog %s: %s: S3 Tables gave no "
                       "warehouseLocation", c->name, what);
        goto out;
    }
    md = json_deep_copy(metadata);
    json_object_set_new(md, "location", json_string(wh));
    ice_uuid(uuid);
    if (ice_metadata_path(wh, NULL, uuid, path, sizeof(path)) < 0) {
        rc = zx_seterr(err, errlen, "iceberg catalog %s: %s: location too long", c->name, what);
        goto out;
    }
    if (ice_aws_write_metadata(c, path, md, e, sizeof(e)) < 0) {
        rc = zx_seterr(err, errlen, "iceberg catalog %s: %s: %s", c->name, what, e);
        goto out;
    }
    rc = swap(c, ns, name, tok, path, err, errlen);
    if (rc == ZX_ICECAT_CONFLICT || rc == ZX_ICECAT_UNKNOWN)
        rc = -1;   /* (another create took it; or check with load) */
    if (rc == 0)
        rc = s3t_load(c, ns, name, out, err, errlen);
out:
    json_decref(md);
    ice_aws_ans_free(&a);
    ice_aws_ans_free(&l);
    return rc;
}

static int s3t_commit(zx_icecat *c, const char *ns, const char *name,
                      const zx_icecat_table *base, const json_t *requirements,
                      const json_t *updates, const json_t *new_metadata, zx_icecat_table *out,
                      char *err, size_t errlen)
{
    (void)requirements;
    (void)updates;
    if (!json_is_object(new_metadata) || !base || !base->metadata_location || !base->token)
        return zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: commit: needs the new "
                         "metadata and the base's metadata location and versionToken", c->name,
                         ns, name);
    const char *where = json_string_value(json_object_get(new_metadata, "location"));
    if (!where || !*where)
        return zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: commit: the new "
                         "metadata has no location", c->name, ns, name);
    char path[ICE_URL_MAX], uuid[37], e[1000];
    ice_uuid(uuid);
    if (ice_metadata_path(where, base->metadata_location, uuid, path, sizeof(path)) < 0)
        return zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: location too long",
                         c->name, ns, name);
    if (ice_aws_write_metadata(c, path, new_metadata, e, sizeof(e)) < 0)
        return zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: commit: %s", c->name,
                         ns, name, e);
    int rc = swap(c, ns, name, base->token, path, err, errlen);
    if (rc == 0 && out && s3t_load(c, ns, name, out, e, sizeof(e)) != 0) {
        zx_icecat_table_free(out);
        out->metadata = json_deep_copy(new_metadata);
        out->metadata_location = strdup(path);
    }
    return rc;
}

const ice_ops ice_s3tables_ops = {
    .ensure_namespace = s3t_ensure_namespace,
    .load = s3t_load,
    .create = s3t_create,
    .commit = s3t_commit,
};
