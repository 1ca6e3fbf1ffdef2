/*
 * test_ice_meta.c — the Iceberg table metadata zx reads and makes
 * (workers/destinations/iceberg/ice_meta.c): field ids kept and new ones
 * after last-column-id, key columns required and the identifier fields,
 * safe widenings taken and other type changes refused with what to do,
 * the run found by its snapshot summary, a new table's metadata, and REST
 * updates applied as a catalog applies them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "workers/destinations/iceberg/ice_meta.h"

static const char *table_md =
    "{\"format-version\":2,\"table-uuid\":\"u1\",\"location\":\"s3://b/t\","
    "\"last-sequence-number\":3,\"last-updated-ms\":10,\"last-column-id\":3,"
    "\"current-schema-id\":1,\"schemas\":["
    "{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,\"name\":\"id\",\"required\":false,\"type\":\"int\"}]},"
    "{\"type\":\"struct\",\"schema-id\":1,\"fields\":["
    "{\"id\":1,\"name\":\"id\",\"required\":false,\"type\":\"int\"},"
    "{\"id\":2,\"name\":\"amount\",\"required\":false,\"type\":\"decimal(10, 2)\"},"
    "{\"id\":3,\"name\":\"gone\",\"required\":false,\"type\":\"string\"}]}],"
    "\"current-snapshot-id\":7,\"snapshots\":[{\"snapshot-id\":7,\"sequence-number\":3,"
    "\"timestamp-ms\":9,\"manifest-list\":\"s3://b/t/metadata/snap-7.avro\","
    "\"summary\":{\"operation\":\"append\",\"zx.sync\":\"orders\",\"zx.run\":\"42\"}}],"
    "\"snapshot-log\":[],\"metadata-log\":[],\"refs\":{\"main\":{\"snapshot-id\":7,\"type\":\"branch\"}}}";

int main(void)
{
    char err[512];
    json_error_t je;
    json_t *md = json_loads(table_md, 0, &je);
    CHECK(md != NULL);

    /* widening int -> long and decimal(10,2) -> (12,2), a new column, the key */
    zx_dcol cols[3] = {{"id", ZX_DT_INT64, 0, 0}, {"amount", ZX_DT_DECIMAL, 12, 2},
                       {"note", ZX_DT_TEXT, 0, 0}};
    const char *key[1] = {"id"};
    int32_t ids[3];
    int changed = 0;
    int32_t last = 0;
    json_t *s = zx_ice_schema_for(md, cols, 3, key, 1, ids, &changed, &last, "t", err,
                                  sizeof(err));
    CHECK(s != NULL);
    CHECK(ids[0] == 1 && ids[1] == 2 && ids[2] == 4 && last == 4 && changed);
    CHECK(json_integer_value(json_object_get(s, "schema-id")) == 2);
    json_t *f = json_object_get(s, "fields");
    CHECK(json_array_size(f) == 4);   /* "gone" kept, "note" appended */
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(f, 0), "type")), "long"));
    /* the table's optional id stays optional: no identifier then */
    CHECK(!json_is_true(json_object_get(json_array_get(f, 0), "required")));
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(f, 1), "type")),
                  "decimal(12, 2)"));
    CHECK(json_object_get(s, "identifier-field-ids") == NULL);
    json_decref(s);

    /* int -> long is a change */
    zx_dcol same[2] = {{"id", ZX_DT_INT64, 0, 0}, {"amount", ZX_DT_DECIMAL, 10, 2}};
    s = zx_ice_schema_for(md, same, 2, NULL, 0, ids, &changed, &last, "t", err, sizeof(err));
    CHECK(s && changed == 1);     /* int -> long is a change */
    json_decref(s);

    /* a type change that is not a widening: refused, saying what to do */
    zx_dcol bad[1] = {{"amount", ZX_DT_TEXT, 0, 0}};
    s = zx_ice_schema_for(md, bad, 1, NULL, 0, ids, &changed, &last, "iceberg c sales.orders",
                          err, sizeof(err));
    CHECK(!s && strstr(err, "column amount is \"decimal(10, 2)\" in the table") &&
          strstr(err, "cast it"));
    zx_dcol narrower[1] = {{"amount", ZX_DT_DECIMAL, 8, 2}};
    s = zx_ice_schema_for(md, narrower, 1, NULL, 0, ids, &changed, &last, "t", err, sizeof(err));
    CHECK(s != NULL);              /* values of (8,2) fit (10,2): no change */
    json_decref(s);
    zx_dcol scale[1] = {{"amount", ZX_DT_DECIMAL, 12, 3}};
    s = zx_ice_schema_for(md, scale, 1, NULL, 0, ids, &changed, &last, "t", err, sizeof(err));
    CHECK(!s);

    /* the run found by its summary */
    CHECK(zx_ice_find_run(md, "orders", 42) != NULL);
    CHECK(zx_ice_find_run(md, "orders", 43) == NULL);
    CHECK(zx_ice_find_run(md, "other", 42) == NULL);
    const char *ml;
    CHECK(zx_ice_current_snapshot(md, &ml) == 7 && ml && strstr(ml, "snap-7"));

    /* a new table */
    s = zx_ice_schema_for(NULL, cols, 3, key, 1, ids, &changed, &last, "t", err, sizeof(err));
    CHECK(s && ids[0] == 1 && ids[2] == 3 && last == 3 && changed);
    json_t *nm = zx_ice_new_metadata(s, last, NULL, "s3://b/new", NULL);
    CHECK(nm && json_integer_value(json_object_get(nm, "format-version")) == 2);
    CHECK(json_integer_value(json_object_get(nm, "last-column-id")) == 3);
    CHECK(strlen(json_string_value(json_object_get(nm, "table-uuid"))) == 36);
    json_t *req = zx_ice_create_request("orders", s, NULL, NULL);
    CHECK(req && !strcmp(json_string_value(json_object_get(req, "name")), "orders"));
    json_decref(req);
    json_decref(nm);
    json_decref(s);

    /* updates applied as a catalog applies them */
    json_t *up = json_loads(
        "[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":8,\"sequence-number\":4,"
        "\"timestamp-ms\":11,\"manifest-list\":\"x\",\"summary\":{\"operation\":\"append\"}}},"
        "{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"branch\","
        "\"snapshot-id\":8},{\"action\":\"remove-snapshots\",\"snapshot-ids\":[7]}]", 0, &je);
    json_t *after = zx_ice_apply(md, up, "s3://b/t/metadata/00003.metadata.json", 12, err,
                                 sizeof(err));
    CHECK(after != NULL);
    CHECK(json_integer_value(json_object_get(after, "current-snapshot-id")) == 8);
    CHECK(json_integer_value(json_object_get(after, "last-sequence-number")) == 4);
    CHECK(json_array_size(json_object_get(after, "snapshots")) == 1);
    CHECK(json_array_size(json_object_get(after, "metadata-log")) == 1);
    CHECK(json_integer_value(json_object_get(after, "last-updated-ms")) == 12);
    json_decref(after);
    json_decref(up);
    up = json_loads("[{\"action\":\"drop-everything\"}]", 0, &je);
    CHECK(!zx_ice_apply(md, up, NULL, 1, err, sizeof(err)) && strstr(err, "drop-everything"));
    json_decref(up);
    json_decref(md);
    if (!failures)
        printf("test_ice_meta: all checks passed\n");
    return failures != 0;
}
