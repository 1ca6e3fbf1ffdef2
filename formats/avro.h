/*
 * avro.h — an Avro Object Container File writer and the datum encoders
 * (the Apache Avro 1.11 specification, "Object Container Files" and
 * "Binary Encoding"), written for Iceberg's manifests and manifest lists.
 *
 * Layout: "Obj\x01", the file metadata (an Avro map of bytes: avro.schema,
 * avro.codec, then the caller's extra keys), a 16-byte sync marker, then
 * blocks: the count of records (long), the byte size of the data that
 * follows (long), the records (compressed as a whole by the codec), the
 * sync marker.
 *
 * The schema is the caller's JSON text, written verbatim: properties that
 * Avro itself ignores (Iceberg's field-id, element-id, logicalType "map")
 * stay in the file.  The writer never parses or checks it: the caller
 * encodes each record field by field in the schema's order with the
 * zx_avro_put_* functions into the buffer zx_avro_datum gives, then calls
 * zx_avro_end_record.  A record that does not match the schema makes a
 * file no reader accepts; nothing here can notice.
 *
 * Output: to opts.sink (each piece of bytes as it is ready), or appended to
 * opts.out (a zx_buf the caller owns).  The header is written by
 * zx_avro_open, a block whenever the pending records reach
 * opts.block_bytes, and the last block by zx_avro_finish.
 *
 * Codecs: "null" and "deflate" (RFC 1951 raw deflate, zlib).
 *
 * It must never: parse user data, block on anything but the sink, or be
 * used by two threads at once.
 */
#ifndef ZX_FORMATS_AVRO_H
#define ZX_FORMATS_AVRO_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* ---- datum encoders ------------------------------------------------------
 * Each appends one value's binary encoding to b and returns 0, or -1 when
 * out of memory (b unchanged).  Records and structs are their fields in
 * order (nothing of their own); enums are an int. */

/* The zigzag varint of v into out (1..10 bytes); returns the length. */
size_t zx_avro_zigzag(int64_t v, uint8_t out[10]);

/* Read one zigzag varint of at most 10 bytes from p[0..n): the bytes it
 * took (1..10), or 0 when p ends first or the varint is longer than 10
 * bytes.  *v gets the value.  (For tests and for reading our own files.) */
size_t zx_avro_unzigzag(const uint8_t *p, size_t n, int64_t *v);

static inline int zx_avro_put_null(zx_buf *b) { (void)b; return 0; }
int zx_avro_put_boolean(zx_buf *b, int v);        /* one byte, 0 or 1 */
int zx_avro_put_int(zx_buf *b, int32_t v);        /* zigzag varint */
int zx_avro_put_long(zx_buf *b, int64_t v);       /* zigzag varint */
int zx_avro_put_float(zx_buf *b, float v);        /* 4 bytes little-endian IEEE */
int zx_avro_put_double(zx_buf *b, double v);      /* 8 bytes little-endian IEEE */
/* bytes and string: the length (long) then the n bytes (string: UTF-8, not
 * checked; p may be NULL when n is 0). */
int zx_avro_put_bytes(zx_buf *b, const void *p, size_t n);
int zx_avro_put_string(zx_buf *b, const char *s, size_t n);
int zx_avro_put_str(zx_buf *b, const char *s);    /* NUL-terminated s */
int zx_avro_put_fixed(zx_buf *b, const void *p, size_t n); /* the n bytes */
/* A union: the 0-based index of the branch (long), then the caller encodes
 * that branch's value.  An Iceberg optional field ["null", T]: 0 for null,
 * 1 then the value. */
int zx_avro_put_union(zx_buf *b, int32_t branch);
/* Arrays and maps are blocks: zx_avro_put_block(b, n) then n items (a map
 * item: the key as a string, then the value), repeated; then
 * zx_avro_put_block(b, 0) ends the array or map.  n < 0 is rejected (-1):
 * this writer never writes the sized negative form. */
int zx_avro_put_block(zx_buf *b, int64_t n);

/* ---- the container file -------------------------------------------------- */

typedef enum zx_avro_codec {
    ZX_AVRO_NULL = 0,
    ZX_AVRO_DEFLATE
} zx_avro_codec;

typedef struct zx_avro_meta {
    const char *key;     /* must not start with "avro." */
    const void *val;     /* val[0..len) */
    size_t len;
} zx_avro_meta;

typedef struct zx_avro_opts {
    zx_avro_codec codec;      /* default (zeroed opts): null */
    int deflate_level;        /* 0: zlib's default (6); 1..9 */
    size_t block_bytes;       /* a block is written when the pending
                                 records reach this; 0: 64 KiB */
    const zx_avro_meta *meta; /* extra file metadata, written after
                                 avro.schema and avro.codec; copied by
                                 zx_avro_open */
    size_t nmeta;
    /* Where the bytes go: sink(ctx, p, n, err, errlen) takes all n bytes
     * (copying what it keeps) and returns 0, or -1 with err set (the
     * writer fails with it).  NULL: appended to *out. */
    int (*sink)(void *ctx, const void *p, size_t n, char *err, size_t errlen);
    void *sink_ctx;
    zx_buf *out;              /* when sink is NULL; must not be NULL then */
    /* The sync marker: NULL for 16 random bytes (getrandom); tests give
     * one to make files byte-for-byte reproducible. */
    const uint8_t *sync;
} zx_avro_opts;

typedef struct zx_avro_writer zx_avro_writer;

/* Start a file whose schema is schema_json[0..schema_len) (written as
 * is), writing the header.  Returns 0 and *out (free with zx_avro_free),
 * or -1 with err: no output, a bad metadata key, a sink failure, no
 * random bytes, out of memory. */
int zx_avro_open(const char *schema_json, size_t schema_len, const zx_avro_opts *o,
                 zx_avro_writer **out, char *err, size_t errlen);

/* The buffer the next record is encoded into (after the pending ones);
 * valid until zx_avro_end_record, zx_avro_finish or zx_avro_free.  Append
 * only: never reset or shorten it. */
zx_buf *zx_avro_datum(zx_avro_writer *w);

/* One record was encoded into zx_avro_datum: count it, and write a block
 * when the pending records reach block_bytes.  0, or -1 with err (sink
 * failure, deflate failure, out of memory; after -1 only zx_avro_free). */
int zx_avro_end_record(zx_avro_writer *w, char *err, size_t errlen);

/* Write the pending records as the last block (none if there are none).
 * *bytes (may be NULL) gets the file's whole size.  0 or -1 with err;
 * either way only zx_avro_free afterwards. */
int zx_avro_finish(zx_avro_writer *w, uint64_t *bytes, char *err, size_t errlen);

/* Records counted so far (written or pending). */
uint64_t zx_avro_records(const zx_avro_writer *w);

/* Free the writer (never the caller's out buffer).  NULL is a no-op. */
void zx_avro_free(zx_avro_writer *w);

#endif
