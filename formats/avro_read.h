/*
 * avro_read.h — a reader of Avro Object Container Files held in memory
 * (Avro 1.11: "Obj\x01", metadata, sync, blocks; codecs null and
 * deflate), decoding each record by the writer's own schema into a tree of
 * values.  For Iceberg's manifests and manifest lists that other engines
 * wrote: the caller finds fields by their field-id, whatever their order.
 *
 * Schemas: every Avro type (primitives, record, enum, array, map, union,
 * fixed, named references); logical types are read as their underlying
 * type, the node naming it (logical).  Properties other than "field-id", "element-id", "key-id" and
 * "value-id" are ignored.
 *
 * Bounds: every length and count is checked against the bytes that are
 * there; a malformed file fails with -1, never reads out of bounds.
 * Nesting deeper than 32 levels is refused.
 *
 * It must never: modify or keep a pointer to the file's bytes past
 * zx_avro_file_free; log.  One thread per reader.
 */
#ifndef ZX_FORMATS_AVRO_READ_H
#define ZX_FORMATS_AVRO_READ_H

#include <stddef.h>
#include <stdint.h>

typedef enum zx_avro_kind {
    ZX_AVK_NULL = 0, ZX_AVK_BOOLEAN, ZX_AVK_INT, ZX_AVK_LONG, ZX_AVK_FLOAT, ZX_AVK_DOUBLE,
    ZX_AVK_BYTES, ZX_AVK_STRING, ZX_AVK_FIXED, ZX_AVK_ENUM, ZX_AVK_RECORD, ZX_AVK_ARRAY,
    ZX_AVK_MAP, ZX_AVK_UNION
} zx_avro_kind;

/* A schema node.  Owned by the file; valid until zx_avro_file_free. */
typedef struct zx_avro_type zx_avro_type;
struct zx_avro_type {
    zx_avro_kind kind;
    const char *name;          /* record, enum, fixed: the name */
    size_t size;               /* fixed: bytes; enum: symbols */
    size_t n;                  /* record: fields; union: branches */
    zx_avro_type **sub;        /* record: field types; union: branches;
                                  array: items (sub[0]); map: values */
    const char **fnames;       /* record: field names */
    int64_t *fids;             /* record: each field's "field-id", -1 if none */
    int64_t element_id;        /* array: "element-id", -1 if none */
    const char *logical;       /* "logicalType", or NULL */
    int adjust_to_utc;         /* Iceberg's "adjust-to-utc": 1 true, 0 */
};

/* A decoded value.  kind is never UNION: a union's value is its branch's,
 * with branch set.  Valid until the next zx_avro_next or zx_avro_file_free. */
typedef struct zx_avro_value zx_avro_value;
struct zx_avro_value {
    const zx_avro_type *type;
    int32_t branch;            /* the union branch it was, or -1 */
    int64_t l;                 /* BOOLEAN, INT, LONG, ENUM */
    double d;                  /* FLOAT, DOUBLE */
    const uint8_t *p;          /* BYTES, STRING, FIXED: p[0..len), into the
                                  file or its inflated block */
    size_t len;
    zx_avro_value *items;      /* RECORD: its fields in schema order (n);
                                  ARRAY: n items; MAP: 2n (key, value) */
    size_t n;
};

typedef struct zx_avro_file zx_avro_file;

/* Read the header of the file p[0..n) (the bytes must outlive the
 * reader).  0 and *out (free with zx_avro_file_free), or -1 with err: not
 * an Avro file, a bad schema, an unknown codec, out of memory. */
int zx_avro_file_open(const void *p, size_t n, zx_avro_file **out, char *err, size_t errlen);

/* A metadata value (not NUL-terminated) and its length, or NULL. */
const uint8_t *zx_avro_file_meta(const zx_avro_file *f, const char *key, size_t *len);

/* The writer's schema. */
const zx_avro_type *zx_avro_file_schema(const zx_avro_file *f);

/* The next record: 1 and *v, 0 at the end, -1 with err (a malformed
 * block or record, a wrong sync marker, out of memory; then only
 * zx_avro_file_free). */
int zx_avro_next(zx_avro_file *f, const zx_avro_value **v, char *err, size_t errlen);

/* The field of record value v whose field-id is id, or NULL (no such
 * field, or v is not a record). */
const zx_avro_value *zx_avro_field(const zx_avro_value *v, int64_t id);

/* v's value is null (v NULL, or a null branch). */
int zx_avro_is_null(const zx_avro_value *v);

void zx_avro_file_free(zx_avro_file *f);

#endif
