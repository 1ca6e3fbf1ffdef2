/*
 * pg_binary.h — PostgreSQL values in binary form (COPY ... (FORMAT binary),
 * the types' send functions) to zx values: the same zx value
 * zx_pgv_from_text (pg_values.h) gives for the text form the server sends
 * under DateStyle ISO, TimeZone UTC and extra_float_digits >= 1, so that a
 * reader may take either form.  Binary forms cost the server and zx far
 * less than text (no timestamp or float formatting and parsing).
 *
 * Known types (zx_pgbin_known): bool, bytea (the bytes themselves, TEXT,
 * as a sync reads "\x..." text), int2, int4, int8, oid, float4, float8,
 * numeric (its text, exactly: digits, NaN, Infinity), text, varchar,
 * bpchar, name, json, jsonb, uuid, date (TEXT "YYYY-MM-DD", " BC",
 * "infinity"), timestamp and timestamptz (TIMESTAMP in 0001-9999, else
 * TEXT as the server writes it in UTC).  Text-like types arrive in the
 * server's encoding: a reader uses binary only when it is UTF8.
 *
 * Also the framing of a binary COPY (zx_pgbin_header, zx_pgbin_tuple):
 * each CopyData message holds one tuple (the first one the header too).
 *
 * Everything here reads bytes from a server: every length is checked
 * against what is there, and nothing reads past the n bytes given
 * (fuzzed: tests/fuzz/fuzz_pg_binary.c).
 */
#ifndef ZX_SOURCES_PG_BINARY_H
#define ZX_SOURCES_PG_BINARY_H

#include <stddef.h>
#include <stdint.h>

#include "common/rowset.h"

enum {
    ZX_PGOID_NAME = 19, ZX_PGOID_BPCHAR = 1042, ZX_PGOID_VARCHAR = 1043, ZX_PGOID_DATE = 1082,
    ZX_PGOID_UUID = 2950
};

/* 1 when values of type oid can be read in binary form here. */
int zx_pgbin_known(uint32_t oid);

/* The zx value of the n bytes at b (a value of type oid in binary form;
 * zx_pgbin_known(oid)).  Strings are copied into rs's arena (valid until
 * rs is reset or freed).  Returns 0, 1 when the bytes are not a value of
 * that type (a wrong length, an impossible numeric: *out untouched), or
 * -1 out of memory. */
int zx_pgbin_value(uint32_t oid, const unsigned char *b, size_t n, zx_rowset *rs,
                   zx_value *out);

/* Bytes of the binary COPY header at the start of b (signature, flags,
 * extension), or -1 when b does not start with one. */
int64_t zx_pgbin_header(const unsigned char *b, size_t n);

/* Split the one tuple in b[0..n) (a CopyData message, its header skipped):
 * fields f[i] of flen[i] bytes (flen -1: NULL; f[i] points into b), at
 * most max of them.  Returns the number of fields, -1 for the trailer (the
 * end of the rows), or -2 when malformed (more than max fields, a length
 * past the end, bytes left over). */
int zx_pgbin_tuple(const unsigned char *b, size_t n, size_t max, const unsigned char **f,
                   int32_t *flen);

/* A binary COPY being read, message by message (one tuple each, the
 * first one after the header): its rows into a rowset. */
typedef struct zx_pgbin_copy {
    size_t ncols;
    const uint32_t *oids;        /* the columns' types: not owned, kept
                                    valid by the caller while reading */
    int header_seen;
    const unsigned char **f;     /* owned: a row's fields */
    int32_t *fl;
} zx_pgbin_copy;

/* Start reading a COPY of ncols columns of types oids.  0, or -1 out of
 * memory. */
int zx_pgbin_copy_init(zx_pgbin_copy *c, const uint32_t *oids, size_t ncols);
void zx_pgbin_copy_free(zx_pgbin_copy *c);

/* One CopyData message (n bytes at b) into rs, column i into rowset
 * column rscol[i] (NULL: column i): 1 a row added, 0 none (the header
 * alone, the trailer), -1 malformed or a value not of its column's type
 * (why says what, naming the column by its index), -2 out of memory.  A
 * row not added leaves rs as it was. */
int zx_pgbin_copy_row(zx_pgbin_copy *c, const unsigned char *b, size_t n, const int64_t *rscol,
                      zx_rowset *rs, char *why, size_t whylen);

#endif
