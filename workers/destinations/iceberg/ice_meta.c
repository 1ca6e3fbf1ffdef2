/*
 * ice_meta.c — schemas, new tables and updates of Iceberg table metadata
 * (ice_meta.h).
 */
#include "workers/destinations/iceberg/ice_meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timefmt.h"
#include "common/util.h"
#include "workers/destinations/lake/lake_writer.h"

const char *zx_ice_type_of(const zx_dcol *c, char buf[32])
{
    switch (c->type) {
    case ZX_DT_INT64: return "long";
    case ZX_DT_DOUBLE: return "double";
    case ZX_DT_BOOL: return "boolean";
    case ZX_DT_TIMESTAMP: return "timestamptz";
    case ZX_DT_DATE: return "date";
    case ZX_DT_DECIMAL:
        snprintf(buf, 32, "decimal(%d, %d)", c->precision, c->scale);
        return buf;
    case ZX_DT_BYTES: return "binary";
    default: return "string";
    }
}

/* The current schema of md, or NULL. */
static const json_t *current_schema(const json_t *md)
{
    json_t *id = json_object_get(md, "current-schema-id");
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(md, "schemas"), i, s)
        if (json_equal(json_object_get(s, "schema-id"), id))
            return s;
    return NULL;
}

/* "decimal(p, s)" (spaces optional) into p, s: 1, else 0. */
static int decimal_of(const char *t, int *p, int *s)
{
    return t && sscanf(t, "decimal(%d ,%d)", p, s) == 2;
}

/* 1 when a table column of type have may take values of type want by
 * widening it (and *to is the type to write), 0 when they are the same
 * (*to = have), -1 when not. */
static int widen(const char *have, const char *want, const char **to)
{
    *to = have;
    if (!strcmp(have, want))
        return 0;
    int p1, s1, p2, s2;
    if (decimal_of(have, &p1, &s1) && decimal_of(want, &p2, &s2))
        return s1 == s2 ? (p2 > p1 ? (*to = want, 1) : 0) : -1;
    if (!strcmp(have, "int") && !strcmp(want, "long"))
        return *to = want, 1;
    if (!strcmp(have, "float") && !strcmp(want, "double"))
        return *to = want, 1;
    /* the table is wider already: values fit as they are */
    if ((!strcmp(have, "long") && !strcmp(want, "int")) ||
        (!strcmp(have, "double") && !strcmp(want, "float")))
        return 0;
    if (!strcmp(have, "timestamptz") && !strcmp(want, "timestamp"))
        return 0;
    return -1;
}

json_t *zx_ice_schema_for(const json_t *md, const zx_dcol *cols, size_t ncols,
                          const char *const *key_cols, size_t nkeys, int32_t *field_ids,
                          int *changed, int32_t *last_column_id, const char *where, char *err,
                          size_t errlen)
{
    const json_t *cur = md ? current_schema(md) : NULL;
    int32_t last = md ? (int32_t)json_integer_value(json_object_get(md, "last-column-id")) : 0;
    int64_t max_schema_id = -1;
    size_t i;
    json_t *s;
    json_array_foreach(md ? json_object_get(md, "schemas") : NULL, i, s)
        if (json_integer_value(json_object_get(s, "schema-id")) > max_schema_id)
            max_schema_id = json_integer_value(json_object_get(s, "schema-id"));
    *changed = cur == NULL;
    json_t *fields = cur ? json_deep_copy(json_object_get(cur, "fields")) : json_array();
    json_t *ids = json_array();
    if (!fields || !ids) {
        json_decref(fields);
        json_decref(ids);
        zx_seterr(err, errlen, "%s: out of memory", where);
        return NULL;
    }
    for (size_t c = 0; c < ncols; c++) {
        char tb[32];
        const char *want = zx_ice_type_of(&cols[c], tb);
        int key = 0;
        for (size_t k = 0; k < nkeys; k++)
            key |= !strcmp(key_cols[k], cols[c].name);
        json_t *f = NULL, *x;
        json_array_foreach(fields, i, x)
            if (!strcmp(json_string_value(json_object_get(x, "name")) ?: "", cols[c].name)) {
                f = x;
                break;
            }
        if (f) {
            json_t *ty = json_object_get(f, "type");
            const char *have = json_string_value(ty), *to;
            int w = have ? widen(have, want, &to) : -1;
            if (w < 0) {
                char *ts = json_dumps(ty, JSON_ENCODE_ANY | JSON_COMPACT);
                zx_seterr(err, errlen, "%s: column %s is %s in the table but the query now "
                          "gives %s: Iceberg allows only int to long, float to double and a "
                          "decimal's precision up; cast it in the query to the table's type, "
                          "or write to a new table", where, cols[c].name, ts ? ts : "?",
                          want);
                free(ts);
                json_decref(fields);
                json_decref(ids);
                return NULL;
            }
            if (w == 1) {
                json_object_set_new(f, "type", json_string(to));
                *changed = 1;
            }
            field_ids[c] = (int32_t)json_integer_value(json_object_get(f, "id"));
            /* an identifier field must be required; a column of a table
             * that exists stays as it is (optional to required is not a
             * change Iceberg allows): an optional one is no identifier */
            if (key && !json_is_true(json_object_get(f, "required")))
                key = 0;
        } else {
            field_ids[c] = ++last;
            json_array_append_new(fields, json_pack("{s:i, s:s, s:b, s:s}", "id", (int)last,
                                                    "name", cols[c].name, "required", key,
                                                    "type", want));
            *changed = 1;
        }
        if (key)
            json_array_append_new(ids, json_integer(field_ids[c]));
    }
    /* the identifier fields: the key's */
    json_t *old_ids = cur ? json_object_get(cur, "identifier-field-ids") : NULL;
    if (nkeys && json_array_size(ids) && !json_equal(old_ids, ids))
        *changed = 1;
    int64_t sid = cur ? json_integer_value(json_object_get(cur, "schema-id")) : 0;
    if (cur && *changed)
        sid = max_schema_id + 1;
    json_t *schema = json_pack("{s:s, s:I, s:o}", "type", "struct", "schema-id",
                               (json_int_t)sid, "fields", fields);
    if (schema && nkeys && json_array_size(ids))
        json_object_set_new(schema, "identifier-field-ids", ids);
    else if (schema && old_ids)
        json_object_set_new(schema, "identifier-field-ids", json_deep_copy(old_ids)),
            json_decref(ids);
    else
        json_decref(ids);
    *last_column_id = last;
    if (!schema)
        zx_seterr(err, errlen, "%s: out of memory", where);
    return schema;
}

int64_t zx_ice_current_snapshot(const json_t *md, const char **manifest_list)
{
    json_t *id = json_object_get(md, "current-snapshot-id");
    *manifest_list = NULL;
    if (!json_is_integer(id) || json_integer_value(id) < 0)
        return -1;
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(md, "snapshots"), i, s)
        if (json_equal(json_object_get(s, "snapshot-id"), id))
            *manifest_list = json_string_value(json_object_get(s, "manifest-list"));
    return json_integer_value(id);
}

const json_t *zx_ice_find_run(const json_t *md, const char *sync, uint64_t run)
{
    char rid[24];
    snprintf(rid, sizeof(rid), "%llu", (unsigned long long)run);
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(md, "snapshots"), i, s) {
        json_t *sum = json_object_get(s, "summary");
        const char *a = json_string_value(json_object_get(sum, "zx.sync"));
        const char *b = json_string_value(json_object_get(sum, "zx.run"));
        if (a && b && !strcmp(a, sync) && !strcmp(b, rid))
            return s;
    }
    return NULL;
}

json_t *zx_ice_new_metadata(const json_t *schema, int32_t last_column_id,
                            const json_t *spec_fields, const char *location,
                            const json_t *props)
{
    size_t nspec = spec_fields ? json_array_size(spec_fields) : 0;
    char uuid[37];
    zx_lake_uuid4(uuid);
    json_t *sc = json_deep_copy(schema);
    if (sc)
        json_object_set_new(sc, "schema-id", json_integer(0));
    return json_pack("{s:i, s:s, s:s, s:I, s:I, s:i, s:i, s:[o], s:i, s:[{s:i, s:o}], s:i, "
                     "s:i, s:[{s:i, s:[]}], s:o, s:[], s:[], s:[], s:{}}",
                     "format-version", 2, "table-uuid", uuid, "location", location,
                     "last-sequence-number", (json_int_t)0,
                     "last-updated-ms", (json_int_t)(zx_now_us() / 1000),
                     "last-column-id", (int)last_column_id, "current-schema-id", 0,
                     "schemas", sc, "default-spec-id", 0, "partition-specs", "spec-id", 0,
                     "fields", spec_fields ? json_deep_copy(spec_fields) : json_array(),
                     "last-partition-id", 999 + (int)nspec, "default-sort-order-id", 0,
                     "sort-orders", "order-id", 0, "fields",
                     "properties", props ? json_deep_copy(props) : json_object(),
                     "snapshots", "snapshot-log", "metadata-log", "refs");
}

json_t *zx_ice_create_request(const char *name, const json_t *schema,
                              const json_t *spec_fields, const json_t *props)
{
    json_t *sc = json_deep_copy(schema);
    if (sc)
        json_object_set_new(sc, "schema-id", json_integer(0));
    return json_pack("{s:s, s:o, s:{s:i, s:o}, s:{s:i, s:[]}, s:o, s:b}", "name", name,
                     "schema", sc, "partition-spec", "spec-id", 0, "fields",
                     spec_fields ? json_deep_copy(spec_fields) : json_array(), "write-order",
                     "order-id", 0, "fields", "properties",
                     props ? json_deep_copy(props) : json_object(), "stage-create", 0);
}

/* md's array member key, made when missing. */
static json_t *arr(json_t *md, const char *key)
{
    json_t *a = json_object_get(md, key);
    if (!json_is_array(a)) {
        a = json_array();
        json_object_set_new(md, key, a);
    }
    return a;
}

json_t *zx_ice_apply(const json_t *md, const json_t *updates, const char *prev_location,
                     int64_t now_ms, char *err, size_t errlen)
{
    json_t *m = json_deep_copy(md);
    if (!m) {
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    int64_t last_added_schema = -1;
    size_t i;
    json_t *u;
    json_array_foreach(updates, i, u) {
        const char *a = json_string_value(json_object_get(u, "action"));
        if (!a)
            a = "";
        if (!strcmp(a, "add-schema")) {
            json_t *s = json_object_get(u, "schema");
            json_array_append(arr(m, "schemas"), s);
            last_added_schema = json_integer_value(json_object_get(s, "schema-id"));
            json_t *lc = json_object_get(u, "last-column-id");
            if (json_is_integer(lc))
                json_object_set(m, "last-column-id", lc);
        } else if (!strcmp(a, "set-current-schema")) {
            int64_t id = json_integer_value(json_object_get(u, "schema-id"));
            json_object_set_new(m, "current-schema-id",
                                json_integer(id == -1 ? last_added_schema : id));
        } else if (!strcmp(a, "add-snapshot")) {
            json_t *s = json_object_get(u, "snapshot");
            json_array_append(arr(m, "snapshots"), s);
            json_object_set(m, "last-sequence-number", json_object_get(s, "sequence-number"));
        } else if (!strcmp(a, "set-snapshot-ref")) {
            const char *ref = json_string_value(json_object_get(u, "ref-name"));
            json_t *sid = json_object_get(u, "snapshot-id");
            json_t *refs = json_object_get(m, "refs");
            if (!json_is_object(refs)) {
                refs = json_object();
                json_object_set_new(m, "refs", refs);
            }
            json_object_set_new(refs, ref ? ref : "main", json_pack("{s:O, s:s}", "snapshot-id",
                                                                    sid, "type", "branch"));
            if (ref && !strcmp(ref, "main")) {
                json_object_set(m, "current-snapshot-id", sid);
                json_array_append_new(arr(m, "snapshot-log"),
                                      json_pack("{s:I, s:O}", "timestamp-ms",
                                                (json_int_t)now_ms, "snapshot-id", sid));
            }
        } else if (!strcmp(a, "remove-snapshots")) {
            json_t *ids = json_object_get(u, "snapshot-ids"), *snaps = arr(m, "snapshots");
            for (size_t k = json_array_size(snaps); k-- > 0;) {
                json_t *sid = json_object_get(json_array_get(snaps, k), "snapshot-id");
                size_t j;
                json_t *x;
                json_array_foreach(ids, j, x)
                    if (json_equal(x, sid)) {
                        json_array_remove(snaps, k);
                        break;
                    }
            }
            json_t *log = arr(m, "snapshot-log");
            for (size_t k = json_array_size(log); k-- > 0;) {
                json_t *sid = json_object_get(json_array_get(log, k), "snapshot-id");
                size_t j;
                json_t *x;
                json_array_foreach(ids, j, x)
                    if (json_equal(x, sid)) {
                        json_array_remove(log, k);
                        break;
                    }
            }
        } else if (!strcmp(a, "set-properties")) {
            json_t *p = json_object_get(m, "properties");
            if (!json_is_object(p)) {
                p = json_object();
                json_object_set_new(m, "properties", p);
            }
            json_object_update(p, json_object_get(u, "updates"));
        } else if (!strcmp(a, "assign-uuid") || !strcmp(a, "upgrade-format-version")) {
            continue;
        } else {
            json_decref(m);
            zx_seterr(err, errlen, "update %s: not one zx makes", a);
            return NULL;
        }
    }
    if (prev_location)
        json_array_append_new(arr(m, "metadata-log"),
                              json_pack("{s:I, s:s}", "timestamp-ms",
                                        json_integer_value(json_object_get(md,
                                                                           "last-updated-ms")),
                                        "metadata-file", prev_location));
    json_object_set_new(m, "last-updated-ms", json_integer(now_ms));
    return m;
}

const json_t *zx_ice_default_spec(const json_t *md, int32_t *spec_id)
{
    json_t *id = json_object_get(md, "default-spec-id");
    *spec_id = (int32_t)json_integer_value(id);
    size_t i;
    json_t *sp;
    json_array_foreach(json_object_get(md, "partition-specs"), i, sp)
        if (json_equal(json_object_get(sp, "spec-id"), id))
            return json_object_get(sp, "fields");
    return NULL;
}
