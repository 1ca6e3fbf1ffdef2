/*
 * ice_meta.h — what the Iceberg destination reads and makes of a table's
 * metadata (TableMetadata JSON, format version 2, the Iceberg table spec):
 * the schema a result maps to (field ids kept forever, new columns with
 * new ids, safe widenings), a new table's metadata and create request, a
 * snapshot's summary, and a change applied to a metadata document the way
 * a catalog applies REST updates (for the file catalogs, Glue and S3
 * Tables, which take the whole new document).
 *
 * Pure: jansson in, jansson out; no I/O.  Errors: NULL or -1 with one
 * line in err a person can act on ("iceberg sales.orders: column total is
 * decimal(10,2) in the table but the query now gives decimal(8,2)...").
 */
#ifndef ZX_DEST_ICE_META_H
#define ZX_DEST_ICE_META_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"

/* The Iceberg type of a result column: "long", "double", "boolean",
 * "string" (TEXT, JSON), "timestamptz", "date", "decimal(p,s)", "binary".
 * Static or in buf (32 bytes). */
const char *zx_ice_type_of(const zx_dcol *c, char buf[32]);

/* The schema the run writes with.  md: the table's metadata (NULL: a new
 * table).  Every result column gets the field id of the table's column of
 * its name, or a new id (after last-column-id); key columns the run adds
 * are required, and the key columns that are required form the schema's
 * identifier-field-ids (a table's optional column stays optional).  A column whose type changes is
 * refused unless the change is a safe widening (int to long, float to
 * double, decimal precision up with the same scale), which the new schema
 * carries.  Columns of the table the result lacks stay in the schema
 * (optional).  Returns the schema (owned by the caller: with "schema-id"
 * the current one's, or the next when anything changed) and sets
 * field_ids[0..ncols), *changed (1: the schema must be added) and
 * *last_column_id; or NULL with err. */
json_t *zx_ice_schema_for(const json_t *md, const zx_dcol *cols, size_t ncols,
                          const char *const *key_cols, size_t nkeys, int32_t *field_ids,
                          int *changed, int32_t *last_column_id, const char *where, char *err,
                          size_t errlen);

/* The current snapshot's id (-1: none) and its manifest list's location
 * (NULL: none; valid while md is). */
int64_t zx_ice_current_snapshot(const json_t *md, const char **manifest_list);

/* The snapshot of md whose summary names sync and run ("zx.sync",
 * "zx.run"), or NULL. */
const json_t *zx_ice_find_run(const json_t *md, const char *sync, uint64_t run);

/* A new table's metadata (format 2) with schema (its "schema-id" 0) at
 * location, partitioned by spec_fields (a partition spec's "fields"
 * array, ids from 1000; NULL: unpartitioned) and unsorted, properties
 * props (may be NULL).  Owned by the caller; NULL out of memory. */
json_t *zx_ice_new_metadata(const json_t *schema, int32_t last_column_id,
                            const json_t *spec_fields, const char *location,
                            const json_t *props);

/* The REST CreateTableRequest of the same table. */
json_t *zx_ice_create_request(const char *name, const json_t *schema,
                              const json_t *spec_fields, const json_t *props);

/* The default partition spec of md: its "fields" array (NULL: none) and
 * *spec_id. */
const json_t *zx_ice_default_spec(const json_t *md, int32_t *spec_id);

/* Apply REST updates (add-schema, set-current-schema, add-snapshot,
 * set-snapshot-ref, remove-snapshots, set-properties) to a copy of md,
 * with metadata-log gaining prev_location (may be NULL) and
 * last-updated-ms now.  The copy (owned), or NULL with err (an update
 * zx does not make). */
json_t *zx_ice_apply(const json_t *md, const json_t *updates, const char *prev_location,
                     int64_t now_ms, char *err, size_t errlen);

#endif
