/*
 * pg_values.h — a PostgreSQL value, as pgoutput sends it in text form, to
 * a zx value, by the column's type OID.  Used by the Postgres CDC source
 * for every column of every change and for the initial copy.
 *
 * The replication session is expected to run with DateStyle ISO, TimeZone
 * UTC and extra_float_digits 3 (the source sets them), so that the text
 * forms below are the ones that arrive; other forms of a timestamp still
 * arrive as text, never as a wrong instant.
 *
 *   bool                         BOOL ("t" / "f")
 *   int2, int4, int8, oid        INT (the text parsed strictly)
 *   float4, float8               REAL ("NaN", "Infinity", "-Infinity" too)
 *   numeric                      TEXT, exactly as sent: never through a
 *                                double (NaN and infinities too)
 *   timestamptz                  TIMESTAMP ("2026-11-30 22:00:00.5+00" or
 *                                "+05:30"); "infinity" and years outside
 *                                0001-9999 (BC) stay TEXT
 *   timestamp                    TIMESTAMP, taken as UTC; same exceptions
 *   json, jsonb                  JSON (the text as sent)
 *   everything else (text,       TEXT as sent: date, time, timetz,
 *   varchar, uuid, bytea, ...)   interval, uuid, bytea's "\x..." form,
 *                                arrays' "{...}" form, enums, domains...
 *
 * It must never: turn numeric into a double, guess a type from the text,
 * or read past the n bytes it is given.
 */
#ifndef ZX_SOURCES_PG_VALUES_H
#define ZX_SOURCES_PG_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "common/rowset.h"

/* Type OIDs of the built-in types this file knows (pg_type.h). */
enum {
    ZX_PGOID_BOOL = 16, ZX_PGOID_BYTEA = 17, ZX_PGOID_INT8 = 20, ZX_PGOID_INT2 = 21,
    ZX_PGOID_INT4 = 23, ZX_PGOID_TEXT = 25, ZX_PGOID_OID = 26, ZX_PGOID_JSON = 114,
    ZX_PGOID_FLOAT4 = 700, ZX_PGOID_FLOAT8 = 701, ZX_PGOID_TIMESTAMP = 1114,
    ZX_PGOID_TIMESTAMPTZ = 1184, ZX_PGOID_NUMERIC = 1700, ZX_PGOID_JSONB = 3802
};

/* The zx value of the n bytes at s (a column's text form) for a column of
 * type oid.  Strings are copied into rs's arena (valid until rs is reset
 * or freed).  Returns 0, or -1 out of memory.  A text that does not parse
 * as its type says (an int4 column sending "abc" cannot happen from a
 * real server) gives TEXT, so that the writer's fit rules decide. */
int zx_pgv_from_text(uint32_t oid, const char *s, size_t n, zx_rowset *rs, zx_value *out);

/* A string value of type t (ZX_T_TEXT, ZX_T_JSON, ZX_T_TIMESTAMP: the
 * caller sets u.i) of the n bytes at s, copied into rs's arena.  0, or -1
 * out of memory.  Also pg_binary.c's. */
int zx_pgv_text(const char *s, size_t n, zx_rowset *rs, zx_type t, zx_value *out);

/* The zx type a column of type oid gets its values as (the table above):
 * ZX_T_BOOL, ZX_T_INT, ZX_T_REAL, ZX_T_TIMESTAMP, ZX_T_JSON or ZX_T_TEXT. */
zx_type zx_pgv_type(uint32_t oid);

#endif
