/*
 * ice_glue.c — AWS Glue Data Catalog as an Iceberg catalog (AWS JSON 1.1,
 * X-Amz-Target AWSGlue.*), as Iceberg's GlueCatalog keeps a table: an
 * EXTERNAL_TABLE whose Parameters say table_type ICEBERG and
 * metadata_location (the current metadata file, in S3), and
 * previous_metadata_location; StorageDescriptor.Location the table's
 * location.  A commit writes the new metadata file through args.put, then
 * swaps metadata_location with UpdateTable and the VersionId it read
 * (sent once: a lost answer is ZX_ICECAT_UNKNOWN).  Never deletes a file.
 */
#include "workers/destinations/iceberg/ice_catalog_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

static json_t *req_new(zx_icecat *c)
{
    json_t *j = json_object();
    if (j && c->catalog_id)
        json_object_set_new(j, "CatalogId", json_string(c->catalog_id));
    return j;
}

/* err from a failed call. */
static int ans_err(zx_icecat *c, const char *what, const ice_aws_ans *a, char *err,
                   size_t errlen)
{
    if (a->transfer)
        return zx_seterr(err, errlen, "iceberg catalog %s: %s: %s", c->name, what, a->msg);
    return zx_seterr(err, errlen, "iceberg catalog %s: %s: %ld %s%s%s", c->name, what,
                     a->status, a->type, a->type[0] ? ": " : "", a->msg);
}

static int glue_ensure_namespace(zx_icecat *c, const char *ns, char *err, size_t errlen)
{
    char what[400];
    snprintf(what, sizeof(what), "database %s", ns);
    ice_aws_ans a;
    json_t *b = req_new(c);
    json_object_set_new(b, "Name", json_string(ns));
    int rc = ice_aws_json(c, 0, "AWSGlue.GetDatabase", b, &a);
    json_decref(b);
    if (rc == 0 && a.status == 200) {
        ice_aws_ans_free(&a);
        return 0;
    }
    if (rc < 0 || strcmp(a.type, "EntityNotFoundException")) {
        rc = ans_err(c, what, &a, err, errlen);
        ice_aws_ans_free(&a);
        return rc;
    }
    ice_aws_ans_free(&a);
    b = req_new(c);
    json_object_set_new(b, "DatabaseInput", json_pack("{s:s}", "Name", ns));
    rc = ice_aws_json(c, 0, "AWSGlue.CreateDatabase", b, &a);
    json_decref(b);
    if (rc == 0 && (a.status == 200 || !strcmp(a.type, "AlreadyExistsException")))
        rc = 0;
    else {
        snprintf(what, sizeof(what), "database %s: create", ns);
        rc = ans_err(c, what, &a, err, errlen);
    }
    ice_aws_ans_free(&a);
    return rc;
}

/* GetTable: 0 with *table (a reference into a->j), ZX_ICECAT_NOT_FOUND,
 * -1. */
static int get_table(zx_icecat *c, const char *ns, const char *name, ice_aws_ans *a,
                     json_t **table, char *err, size_t errlen)
{
    char what[600];
    snprintf(what, sizeof(what), "table %s.%s", ns, name);
    json_t *b = req_new(c);
    json_object_set_new(b, "DatabaseName", json_string(ns));
    json_object_set_new(b, "Name", json_string(name));
    int rc = ice_aws_json(c, 0, "AWSGlue.GetTable", b, a);
    json_decref(b);
    if (rc == 0 && a->status == 200 && json_is_object(*table = json_object_get(a->j, "Table")))
        return 0;
    if (rc == 0 && !strcmp(a->type, "EntityNotFoundException")) {
        zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: %s", c->name, ns, name,
                  a->msg);
        return ZX_ICECAT_NOT_FOUND;
    }
    return ans_err(c, what, a, err, errlen);
}

static const char *param(const json_t *table, const char *k)
{
    return json_string_value(json_object_get(json_object_get(table, "Parameters"), k));
}

static int glue_load(zx_icecat *c, const char *ns, const char *name, zx_icecat_table *out,
                     char *err, size_t errlen)
{
    ice_aws_ans a;
    json_t *t;
    int rc = get_table(c, ns, name, &a, &t, err, errlen);
    if (rc != 0)
        goto out;
    const char *tt = param(t, "table_type");
    const char *loc = param(t, "metadata_location");
    const char *ver = json_string_value(json_object_get(t, "VersionId"));
    if (!tt || strcasecmp(tt, "ICEBERG") || !loc) {
        rc = zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: not an Iceberg table "
                       "(no table_type ICEBERG and metadata_location)", c->name, ns, name);
        goto out;
    }
    char e[1000];
    if (ice_aws_read_metadata(c, loc, &out->metadata, e, sizeof(e)) < 0) {
        rc = zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: %s", c->name, ns, name,
                       e);
        goto out;
    }
    if (!(out->metadata_location = strdup(loc)) || (ver && !(out->token = strdup(ver)))) {
        zx_icecat_table_free(out);
        rc = zx_seterr(err, errlen, "iceberg catalog %s: out of memory", c->name);
    }
out:
    ice_aws_ans_free(&a);
    return rc;
}

/* The TableInput of an Iceberg table: from old (GetTable's Table, NULL
 * when new) its fields a TableInput takes, then the Iceberg ones. */
static json_t *table_input(const json_t *old, const char *name, const char *location,
                           const char *mloc, const char *prev)
{
    static const char *const keep[] = {"Description", "Owner", "Retention",
                                       "StorageDescriptor", "PartitionKeys", "Parameters",
                                       "TargetTable", NULL};
    json_t *ti = json_object();
    for (int i = 0; old && keep[i]; i++) {
        json_t *v = json_object_get(old, keep[i]);
        if (v)
            json_object_set_new(ti, keep[i], json_deep_copy(v));
    }
    json_object_set_new(ti, "Name", json_string(name));
    json_object_set_new(ti, "TableType", json_string("EXTERNAL_TABLE"));
    json_t *p = json_object_get(ti, "Parameters");
    if (!json_is_object(p)) {
        p = json_object();
        json_object_set_new(ti, "Parameters", p);
    }
    json_object_set_new(p, "table_type", json_string("ICEBERG"));
    json_object_set_new(p, "metadata_location", json_string(mloc));
    if (prev)
        json_object_set_new(p, "previous_metadata_location", json_string(prev));
    json_t *sd = json_object_get(ti, "StorageDescriptor");
    if (!json_is_object(sd)) {
        sd = json_object();
        json_object_set_new(ti, "StorageDescriptor", sd);
    }
    if (location)
        json_object_set_new(sd, "Location", json_string(location));
    return ti;
}

static int glue_create(zx_icecat *c, const char *ns, const char *name, const json_t *create_req,
                       const json_t *metadata, zx_icecat_table *out, char *err, size_t errlen)
{
    (void)create_req;
    if (!json_is_object(metadata))
        return zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: create: no metadata",
                         c->name, ns, name);
    /* asked first, so that a table there already costs no orphan file */
    ice_aws_ans g;
    json_t *gt;
    char e[1000];
    int rc = get_table(c, ns, name, &g, &gt, e, sizeof(e));
    ice_aws_ans_free(&g);
    if (rc == 0) {
        zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: create: the table exists",
                  c->name, ns, name);
        return ZX_ICECAT_EXISTS;
    }
    if (rc != ZX_ICECAT_NOT_FOUND)
        return zx_seterr(err, errlen, "%s", e);
    json_t *md = json_deep_copy(metadata);
    const char *loc = json_string_value(json_object_get(md, "location"));
    char where[2048], path[ICE_URL_MAX], uuid[37];
    if (!loc || !*loc) {
        if (!c->location) {
            json_decref(md);
            return zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: create: the "
                             "metadata has no location and the catalog none", c->name, ns, name);
        }
        size_t ll = strlen(c->location);
        while (ll && c->location[ll - 1] == '/')
            ll--;
        snprintf(where, sizeof(where), "%.*s/%s.db/%s", (int)ll, c->location, ns, name);
        json_object_set_new(md, "location", json_string(where));
    } else
        snprintf(where, sizeof(where), "%s", loc);
    ice_uuid(uuid);
    if (ice_metadata_path(where, NULL, uuid, path, sizeof(path)) < 0) {
        rc = zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: location too long",
                       c->name, ns, name);
        goto out;
    }
    if (ice_aws_write_metadata(c, path, md, e, sizeof(e)) < 0) {
        rc = zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: create: %s", c->name, ns,
                       name, e);
        goto out;
    }
    json_t *b = req_new(c);
    json_object_set_new(b, "DatabaseName", json_string(ns));
    json_object_set_new(b, "TableInput", table_input(NULL, name, where, path, NULL));
    ice_aws_ans a;
    rc = ice_aws_json(c, 0, "AWSGlue.CreateTable", b, &a);
    json_decref(b);
    if (rc == 0 && a.status == 200)
        rc = 0;
    else if (rc == 0 && !strcmp(a.type, "AlreadyExistsException")) {
        zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: create: %s", c->name, ns, name,
                  a.msg);
        rc = ZX_ICECAT_EXISTS;
    } else {
        snprintf(e, sizeof(e), "table %s.%s: create", ns, name);
        rc = ans_err(c, e, &a, err, errlen);
    }
    ice_aws_ans_free(&a);
    if (rc == 0)
        rc = glue_load(c, ns, name, out, err, errlen);
out:
    json_decref(md);
    return rc;
}

static int glue_commit(zx_icecat *c, const char *ns, const char *name,
                       const zx_icecat_table *base, const json_t *requirements,
                       const json_t *updates, const json_t *new_metadata, zx_icecat_table *out,
                       char *err, size_t errlen)
{
    (void)requirements;
    (void)updates;
    if (!json_is_object(new_metadata) || !base || !base->metadata_location)
        return zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: commit: needs the new "
                         "metadata and the base's metadata location", c->name, ns, name);
    ice_aws_ans a;
    json_t *t;
    char e[1000], path[ICE_URL_MAX], uuid[37];
    int rc = get_table(c, ns, name, &a, &t, err, errlen);
    if (rc == ZX_ICECAT_NOT_FOUND)
        rc = -1;
    if (rc != 0)
        goto out;
    const char *cur = param(t, "metadata_location");
    const char *ver = json_string_value(json_object_get(t, "VersionId"));
    if (!cur || strcmp(cur, base->metadata_location) ||
        (base->token && ver && strcmp(ver, base->token))) {
        rc = ZX_ICECAT_CONFLICT;
        zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: commit: conflict: the table "
                  "is at %s now, not %s", c->name, ns, name, cur ? cur : "(none)",
                  base->metadata_location);
        goto out;
    }
    const char *where = json_string_value(json_object_get(new_metadata, "location"));
    if (!where || !*where) {
        rc = zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: commit: the new "
                       "metadata has no location", c->name, ns, name);
        goto out;
    }
    ice_uuid(uuid);
    if (ice_metadata_path(where, base->metadata_location, uuid, path, sizeof(path)) < 0) {
        rc = zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: location too long",
                       c->name, ns, name);
        goto out;
    }
    if (ice_aws_write_metadata(c, path, new_metadata, e, sizeof(e)) < 0) {
        rc = zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: commit: %s", c->name, ns,
                       name, e);
        goto out;
    }
    json_t *b = req_new(c);
    json_object_set_new(b, "DatabaseName", json_string(ns));
    json_object_set_new(b, "TableInput",
                        table_input(t, name, where, path, base->metadata_location));
    if (base->token)
        json_object_set_new(b, "VersionId", json_string(base->token));
    ice_aws_ans u;
    int hr = ice_aws_json(c, 1, "AWSGlue.UpdateTable", b, &u);
    json_decref(b);
    if (hr == 0 && u.status == 200)
        rc = 0;
    else if (hr == 0 && !strcmp(u.type, "ConcurrentModificationException")) {
        zx_seterr(err, errlen, "iceberg catalog %s: table %s.%s: commit: conflict: %s", c->name,
                  ns, name, u.msg);
        rc = ZX_ICECAT_CONFLICT;
    } else if ((hr < 0 && u.transfer != ZX_HTTP_REFUSED && u.transfer != ZX_AWS_NO_CREDS) ||
               (hr == 0 && u.status >= 500)) {
        snprintf(e, sizeof(e), "table %s.%s: commit: outcome unknown", ns, name);
        ans_err(c, e, &u, err, errlen);
        rc = ZX_ICECAT_UNKNOWN;
    } else {
        snprintf(e, sizeof(e), "table %s.%s: commit", ns, name);
        rc = ans_err(c, e, &u, err, errlen);
    }
    ice_aws_ans_free(&u);
    if (rc == 0 && out && glue_load(c, ns, name, out, e, sizeof(e)) != 0) {
        /* the commit is made: hand back what was written */
        zx_icecat_table_free(out);
        out->metadata = json_deep_copy(new_metadata);
        out->metadata_location = strdup(path);
    }
out:
    ice_aws_ans_free(&a);
    return rc;
}

const ice_ops ice_glue_ops = {
    .ensure_namespace = glue_ensure_namespace,
    .load = glue_load,
    .create = glue_create,
    .commit = glue_commit,
};
