/*
 * thrift_compact.h — an encoder for the Thrift compact protocol, enough to
 * write Parquet's metadata (FileMetaData, PageHeader and what they hold).
 *
 * The encoder appends to a growable byte buffer.  Structs nest: a struct
 * (top level, a struct field, or a list element) is opened, its fields are
 * written in increasing field id order (the encoder writes field id deltas
 * and needs them to increase), and it is closed, which writes the stop
 * byte.  A union is a struct with exactly one field.  A list is opened
 * with its element type and count and then gets exactly that many
 * elements (zx_tc_i32 / zx_tc_binary / zx_tc_struct_begin).
 *
 * Errors: out of memory or a misuse (nesting deeper than ZX_TC_MAX_DEPTH,
 * a field id that does not increase) sets the sticky flag `failed`; every
 * later call is a no-op.  Check it once, at the end.
 *
 * It must never: decode, or know about Parquet's structures.
 */
#ifndef ZX_FORMATS_THRIFT_COMPACT_H
#define ZX_FORMATS_THRIFT_COMPACT_H

#include <stddef.h>
#include <stdint.h>

#define ZX_TC_MAX_DEPTH 16

/* Compact protocol element types (used for list element types). */
enum {
    ZX_TC_BOOL_TRUE = 1,
    ZX_TC_BOOL_FALSE = 2,
    ZX_TC_BYTE = 3,
    ZX_TC_I16 = 4,
    ZX_TC_I32 = 5,
    ZX_TC_I64 = 6,
    ZX_TC_DOUBLE = 7,
    ZX_TC_BINARY = 8,
    ZX_TC_LIST = 9,
    ZX_TC_SET = 10,
    ZX_TC_MAP = 11,
    ZX_TC_STRUCT = 12
};

typedef struct zx_tc {
    uint8_t *buf;          /* owned; freed by zx_tc_free */
    size_t len, cap;
    int16_t last[ZX_TC_MAX_DEPTH]; /* last field id per open struct */
    int depth;             /* open structs */
    int failed;            /* sticky: out of memory or misuse */
} zx_tc;

/* An empty encoder.  Never fails (allocates lazily). */
void zx_tc_init(zx_tc *t);

/* Forget the bytes (keep the allocation) and clear `failed`. */
void zx_tc_reset(zx_tc *t);

/* Free the buffer; t may be initialised again.  NULL is a no-op. */
void zx_tc_free(zx_tc *t);

/* Open a struct that is a top-level value or a list element. */
void zx_tc_struct_begin(zx_tc *t);
/* Close the innermost struct (writes the stop byte). */
void zx_tc_struct_end(zx_tc *t);

/* Fields of the innermost open struct; id 1..32767, increasing. */
void zx_tc_field_bool(zx_tc *t, int16_t id, int v);
void zx_tc_field_i16(zx_tc *t, int16_t id, int16_t v);
void zx_tc_field_i32(zx_tc *t, int16_t id, int32_t v);
void zx_tc_field_i64(zx_tc *t, int16_t id, int64_t v);
void zx_tc_field_binary(zx_tc *t, int16_t id, const void *p, size_t n);
/* A string field: binary of strlen(s) bytes. */
void zx_tc_field_string(zx_tc *t, int16_t id, const char *s);
/* A struct field: opens it (close with zx_tc_struct_end). */
void zx_tc_field_struct_begin(zx_tc *t, int16_t id);
/* A list field of n elements of type elem (ZX_TC_*). */
void zx_tc_field_list_begin(zx_tc *t, int16_t id, int elem, uint32_t n);

/* List elements. */
void zx_tc_i32(zx_tc *t, int32_t v);
void zx_tc_binary(zx_tc *t, const void *p, size_t n);

/* Write v as an unsigned LEB128 varint at out (room for 10 bytes);
 * returns the number of bytes written.  Shared with the RLE encoder. */
size_t zx_tc_uvarint(uint8_t *out, uint64_t v);

#endif
