/*
 * ice_manifest.h — Iceberg manifest files and manifest lists (the Apache
 * Iceberg table spec, format version 2), encoded from C structs into Avro
 * container files (formats/avro.h) whose schemas carry the spec's field
 * ids.  The destination uploads the bytes; nothing here does I/O.
 *
 * Manifest (schema manifest_entry, record names as Java's writer: r2 for
 * data_file, r102 for the partition tuple, kK_vV for int-keyed maps):
 *   manifest_entry: 0 status int, 1 snapshot_id long?, 3 sequence_number
 *     long?, 4 file_sequence_number long?, 2 data_file r2
 *   data_file: 134 content int, 100 file_path, 101 file_format, 102
 *     partition r102 (one optional field per partition field, its id the
 *     partition field's id), 103 record_count, 104 file_size_in_bytes,
 *     108 column_sizes map<117 int, 118 long>?, 109 value_counts
 *     <119, 120>?, 110 null_value_counts <121, 122>?, 137
 *     nan_value_counts <138, 139>?, 125 lower_bounds <126 int, 127
 *     bytes>?, 128 upper_bounds <129, 130>?, 131 key_metadata bytes?, 132
 *     split_offsets list<133 long>?, 135 equality_ids list<136 int>?, 140
 *     sort_order_id int?, 143 referenced_data_file string?
 *   ("?": optional, ["null", T] with default null.  The int-keyed maps are
 *   arrays of key/value records with logicalType "map", as Appendix A
 *   requires.)
 *   File metadata: schema, schema-id, partition-spec, partition-spec-id,
 *   format-version "2", content "data" | "deletes".
 *
 * Manifest list (schema manifest_file): 500 manifest_path, 501
 *   manifest_length, 502 partition_spec_id, 517 content, 515
 *   sequence_number, 516 min_sequence_number, 503 added_snapshot_id, 504
 *   added_files_count, 505 existing_files_count, 506 deleted_files_count,
 *   512 added_rows_count, 513 existing_rows_count, 514
 *   deleted_rows_count, 507 partitions list<508 field_summary r508 {509
 *   contains_null boolean, 518 contains_nan boolean?, 510 lower_bound
 *   bytes?, 511 upper_bound bytes?}>?, 519 key_metadata bytes?
 *   File metadata: snapshot-id, parent-snapshot-id ("null" when none, as
 *   Java writes it), sequence-number, format-version "2".
 *
 * Bounds (lower_bounds, upper_bounds, field summaries) are Appendix D's
 * binary single-value serialization: zx_ice_bound_* make them.
 *
 * Reading (zx_ice_mlist_read, zx_ice_manifest_read): files any engine
 * wrote (v1 or v2), decoded by their own Avro schema (formats/avro_read.h)
 * and matched by field id, into the same structs the writers take, so
 * that a new snapshot carries existing manifests and entries forward.
 *
 * Errors: -1 with one line in err ("iceberg manifest: ...").  Memory: what
 * a function hands back says who owns it; inputs are copied or encoded
 * before the call returns.  A writer is used by one thread.
 */
#ifndef ZX_DEST_ICE_MANIFEST_H
#define ZX_DEST_ICE_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "formats/avro.h"
#include "formats/avro_read.h"

/* ---- Appendix D: single-value serialization of bounds -------------------
 * Each writes into out and returns the length. */
size_t zx_ice_bound_boolean(int v, uint8_t out[1]);        /* 0x00 / 0x01 */
size_t zx_ice_bound_int(int32_t v, uint8_t out[4]);        /* int, date: LE */
size_t zx_ice_bound_long(int64_t v, uint8_t out[8]);       /* long, time,
                                                              timestamp(tz): LE */
size_t zx_ice_bound_float(float v, uint8_t out[4]);        /* LE IEEE 754 */
size_t zx_ice_bound_double(double v, uint8_t out[8]);      /* LE IEEE 754 */
/* decimal(P, S): the unscaled value, two's complement big-endian in the
 * fewest bytes that hold it (1..8). */
size_t zx_ice_bound_decimal(int64_t unscaled, uint8_t out[8]);
/* The same from a big-endian two's complement value be[0..n) of any width
 * (Parquet's FIXED_LEN_BYTE_ARRAY decimals), redundant sign bytes dropped;
 * out holds n bytes at most.  n == 0 gives 0. */
size_t zx_ice_bound_decimal_be(const uint8_t *be, size_t n, uint8_t *out);
/* string and binary are their bytes as they are (no length). */

/* ---- the partition tuple ------------------------------------------------ */

/* The result type of a partition field's transform (identity: the
 * column's type; year/month/day/hour: int; bucket: int; truncate: the
 * column's type). */
typedef enum zx_ice_ptype {
    ZX_ICE_P_INT = 0,       /* Avro int */
    ZX_ICE_P_LONG,          /* Avro long */
    ZX_ICE_P_STRING,        /* Avro string */
    ZX_ICE_P_DATE,          /* int, logicalType date (days since 1970) */
    ZX_ICE_P_TIMESTAMP,     /* long, timestamp-micros, adjust-to-utc false */
    ZX_ICE_P_TIMESTAMPTZ,   /* long, timestamp-micros, adjust-to-utc true */
    ZX_ICE_P_BOOLEAN,       /* Avro boolean */
    ZX_ICE_P_DOUBLE,        /* Avro double */
    ZX_ICE_P_BINARY         /* Avro bytes */
} zx_ice_ptype;

/* One field of the partition spec, in the spec's order. */
typedef struct zx_ice_pfield {
    int32_t field_id;       /* the partition field id (1000, 1001, ...) */
    const char *name;       /* the partition field name (made a valid Avro
                               name when it is not, the original kept as
                               "iceberg-field-name") */
    zx_ice_ptype type;
} zx_ice_pfield;

/* One value of a file's partition tuple. */
typedef struct zx_ice_pvalue {
    int is_null;
    int64_t i;              /* INT, LONG, DATE, TIMESTAMP(TZ), BOOLEAN (0/1) */
    double d;               /* DOUBLE */
    const char *s;          /* STRING (UTF-8), BINARY: s[0..len) */
    size_t len;
} zx_ice_pvalue;

/* ---- manifest entries ----------------------------------------------------- */

typedef struct zx_ice_count {   /* one entry of an int -> long metrics map */
    int32_t id;             /* the column's field id */
    int64_t n;
} zx_ice_count;

typedef struct zx_ice_bound {   /* one entry of lower_bounds / upper_bounds */
    int32_t id;
    const uint8_t *p;       /* Appendix D bytes p[0..len) */
    size_t len;
} zx_ice_bound;

/* A map or list argument: NULL is Avro null (absent); non-NULL with n == 0
 * an empty map or list. */
typedef struct zx_ice_entry {
    int status;                   /* 0 EXISTING, 1 ADDED, 2 DELETED */
    int has_snapshot_id;          /* 0: null (inherited from the manifest list) */
    int64_t snapshot_id;
    int has_sequence_number;      /* 0: null (inherited; only for ADDED) */
    int64_t sequence_number;
    int has_file_sequence_number; /* 0: null (inherited; only for ADDED) */
    int64_t file_sequence_number;
    /* data_file */
    int content;                  /* 0 DATA, 1 POSITION DELETES, 2 EQUALITY DELETES */
    const char *file_path;        /* full URI */
    const char *file_format;      /* NULL: "PARQUET" */
    const zx_ice_pvalue *partition; /* one per partition field (NULL when the
                                     spec has none) */
    int64_t record_count;
    int64_t file_size_in_bytes;
    const zx_ice_count *column_sizes;      size_t ncolumn_sizes;
    const zx_ice_count *value_counts;      size_t nvalue_counts;
    const zx_ice_count *null_value_counts; size_t nnull_value_counts;
    const zx_ice_count *nan_value_counts;  size_t nnan_value_counts;
    const zx_ice_bound *lower_bounds;      size_t nlower_bounds;
    const zx_ice_bound *upper_bounds;      size_t nupper_bounds;
    const uint8_t *key_metadata;           size_t key_metadata_len; /* NULL: null */
    const int64_t *split_offsets;          size_t nsplit_offsets;
    const int32_t *equality_ids;           size_t nequality_ids;
    int has_sort_order_id;
    int32_t sort_order_id;
    const char *referenced_data_file;      /* NULL: null */
} zx_ice_entry;

typedef struct zx_ice_manifest_args {
    const char *schema_json;          /* the table schema (Appendix C JSON),
                                         metadata "schema" */
    int32_t schema_id;                /* metadata "schema-id" */
    const char *partition_spec_json;  /* the spec's fields array JSON,
                                         metadata "partition-spec"; NULL: "[]" */
    int32_t partition_spec_id;
    int content;                      /* 0 data, 1 deletes */
    const zx_ice_pfield *pfields;     /* the spec's fields (copied) */
    size_t npfields;
    zx_avro_codec codec;              /* ZX_AVRO_NULL or ZX_AVRO_DEFLATE */
    const uint8_t *sync;              /* NULL: random (tests: 16 bytes) */
} zx_ice_manifest_args;

typedef struct zx_ice_manifest zx_ice_manifest;

/* Start a manifest.  0 and *out (free with zx_ice_manifest_free), or -1
 * with err: a bad argument (no schema, content not 0/1, a partition field
 * with no name, id < 0 or an unknown type), out of memory. */
int zx_ice_manifest_open(const zx_ice_manifest_args *a, zx_ice_manifest **out, char *err,
                         size_t errlen);

/* Encode one entry.  0, or -1 with err (a bad status, content or file
 * path, a partition value that does not fit its field's type (a NULL s
 * for a non-null STRING), out of memory); after -1 only
 * zx_ice_manifest_free. */
int zx_ice_manifest_add(zx_ice_manifest *m, const zx_ice_entry *e, char *err, size_t errlen);

/* Finish the file and append its bytes to *out (the caller's).  0 or -1
 * with err; either way afterwards only zx_ice_manifest_summary and
 * zx_ice_manifest_free. */
int zx_ice_manifest_finish(zx_ice_manifest *m, zx_buf *out, char *err, size_t errlen);

/* ---- manifest lists ------------------------------------------------------- */

typedef struct zx_ice_fsummary {  /* field_summary of one partition field */
    int contains_null;
    int has_contains_nan;         /* 0: null */
    int contains_nan;
    const uint8_t *lower;         /* Appendix D bytes; NULL: null */
    size_t lower_len;
    const uint8_t *upper;
    size_t upper_len;
} zx_ice_fsummary;

typedef struct zx_ice_mfile {     /* one manifest_file of a manifest list */
    const char *manifest_path;
    int64_t manifest_length;
    int32_t partition_spec_id;
    int content;                  /* 0 data, 1 deletes */
    int64_t sequence_number;
    int64_t min_sequence_number;
    int64_t added_snapshot_id;
    int32_t added_files_count, existing_files_count, deleted_files_count;
    int64_t added_rows_count, existing_rows_count, deleted_rows_count;
    const zx_ice_fsummary *partitions;  size_t npartitions; /* NULL: null */
    const uint8_t *key_metadata;        size_t key_metadata_len; /* NULL: null */
} zx_ice_mfile;

/* What a finished manifest says of itself for its manifest_file: content,
 * partition_spec_id, the counts of entries and of rows by status, and one
 * field summary per partition field (contains_null; contains_nan for
 * DOUBLE fields, else null; lower and upper over the non-null, non-NaN
 * values, Appendix D bytes pointing into m, valid until
 * zx_ice_manifest_free; strings and binary in unsigned byte-wise order,
 * never truncated).
 * min_sequence_number: the least explicit sequence_number of a live entry
 * (not DELETED), or -1 when no live entry has one (then it is the
 * snapshot's sequence number: the caller sets it).  manifest_path,
 * manifest_length, sequence_number, added_snapshot_id and key_metadata are
 * left as they were: the caller's.  0, or -1 when m is not finished. */
int zx_ice_manifest_summary(const zx_ice_manifest *m, zx_ice_mfile *out);

/* Free the manifest writer.  NULL is a no-op. */
void zx_ice_manifest_free(zx_ice_manifest *m);

typedef struct zx_ice_mlist_args {
    int64_t snapshot_id;
    int has_parent_snapshot_id;   /* 0: "null" */
    int64_t parent_snapshot_id;
    int64_t sequence_number;
    zx_avro_codec codec;
    const uint8_t *sync;          /* NULL: random */
} zx_ice_mlist_args;

/* Encode a whole manifest list of files[0..n) and append its bytes to
 * *out.  0, or -1 with err (a NULL manifest_path, content not 0/1, a
 * negative count, out of memory; *out then holds what it held). */
int zx_ice_mlist_write(const zx_ice_mlist_args *a, const zx_ice_mfile *files, size_t n,
                       zx_buf *out, char *err, size_t errlen);

/* ---- reading a manifest list (any writer's: Java, pyiceberg, ours) ------- */

typedef struct zx_ice_mlist zx_ice_mlist;

/* Read the manifest list p[0..n) by its own schema, fields found by
 * field id (v1 lists too: content and sequence numbers absent are 0).  0
 * and *out (free with zx_ice_mlist_free), or -1 with err: not Avro, a
 * malformed file, a manifest_file without manifest_path, out of memory.
 * A count the file leaves null (v1) reads as -1: "unknown, maybe
 * non-zero" (zx_ice_mlist_write refuses it; count the manifest's entries
 * first). */
int zx_ice_mlist_read(const void *p, size_t n, zx_ice_mlist **out, char *err, size_t errlen);

/* The manifests read, in file order, and how many; the file metadata's
 * snapshot-id etc. are not kept.  Every pointer in them (paths NUL-
 * terminated, partitions, bounds, key_metadata) is owned by l: valid until
 * zx_ice_mlist_free. */
const zx_ice_mfile *zx_ice_mlist_files(const zx_ice_mlist *l, size_t *n);

/* Free it.  NULL is a no-op. */
void zx_ice_mlist_free(zx_ice_mlist *l);

/* ---- reading a manifest (any writer's) ----------------------------------- */

typedef struct zx_ice_mread zx_ice_mread;

/* Read the manifest p[0..n) by its own schema, fields found by field id
 * (v1 manifests too: content absent is 0, sequence numbers null).  0 and
 * *out (free with zx_ice_mread_free), or -1 with err: not Avro, a
 * malformed file, an entry without data_file or file_path, a partition
 * field of a type zx_ice_ptype does not have (decimal, time, uuid, fixed,
 * float), out of memory. */
int zx_ice_manifest_read(const void *p, size_t n, zx_ice_mread **out, char *err,
                         size_t errlen);

/* The partition fields, from the file's partition struct: ids, Avro
 * names (the spec's own names are in the "partition-spec" metadata) and
 * types. */
const zx_ice_pfield *zx_ice_mread_pfields(const zx_ice_mread *r, size_t *n);

/* The entries, in file order, as zx_ice_manifest_add takes them (one
 * partition value per field of zx_ice_mread_pfields; maps and lists NULL
 * where the file has null).  Owned by r. */
const zx_ice_entry *zx_ice_mread_entries(const zx_ice_mread *r, size_t *n);

/* The file metadata "schema", "partition-spec", "partition-spec-id",
 * "content" or "format-version" (NUL-terminated, owned by r), or NULL when
 * absent or another key. */
const char *zx_ice_mread_meta(const zx_ice_mread *r, const char *key);

/* Free it.  NULL is a no-op. */
void zx_ice_mread_free(zx_ice_mread *r);

#endif
