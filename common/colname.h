/*
 * colname.h — turn a field name from data into a workspace column name.
 *
 * Every source (JSON push, Kafka, Kinesis) names its columns through this one
 * function so that a field gets the same column on SQLite and on Postgres.
 * It must never allocate, never depend on the locale, and never return a
 * name that is empty, longer than ZX_COLNAME_MAX bytes or reserved for zx's
 * own metadata columns.
 *
 * The rule, applied in this order:
 *   (a) ASCII letters A-Z are lower-cased;
 *   (b) each maximal run of bytes that are not [a-z0-9_] after (a) becomes
 *       one '_' (every byte of a non-ASCII UTF-8 character is such a byte,
 *       so "café" -> "caf_", "a b-c" -> "a_b_c", "a  b" -> "a_b"; an
 *       existing '_' is kept as is, so "a__b" stays "a__b" and "a _b" gives
 *       "a__b");
 *   (c) if the result starts with a digit, '_' is put in front ("1st" ->
 *       "_1st");
 *   (d) an empty result becomes "_";
 *   (e) the result is cut to its first ZX_COLNAME_MAX (63) bytes;
 *   (f) a name reserved for metadata — those of zx_meta_names below, and
 *       "_extra" (the column of the fields over a table's column cap) — or
 *       any name starting with
 *       "_zx" gets the prefix "data" ("_ingested_at" -> "data_ingested_at",
 *       "_zx_x" -> "data_zx_x") and is cut to 63 bytes again.
 * The output is therefore always non-empty, pure ASCII [a-z0-9_], never
 * starts with a digit, and is at most 63 bytes (Postgres' identifier limit).
 *
 * Collisions: when two keys of one JSON object normalise to the same name,
 * the second gets "_2", the third "_3", ... in order of appearance (done by
 * json_rows.c, see json_rows.h), the suffix replacing the last bytes when the
 * name is already 63 bytes long.
 */
#ifndef ZX_COMMON_COLNAME_H
#define ZX_COMMON_COLNAME_H

#include <stddef.h>

#define ZX_COLNAME_MAX 63

/* Normalise the n bytes at `in` (need not be NUL-terminated, may contain
 * any byte including NUL; `in` may be NULL when n == 0) into `out`, which
 * receives a NUL-terminated name.  Returns its length, 1..ZX_COLNAME_MAX.
 * Never fails. */
size_t zx_colname_normalise(const char *in, size_t n, char out[ZX_COLNAME_MAX + 1]);

/* The metadata columns a stream's rows may get (`metadata:`), NULL-ended,
 * in the order of the ZX_META_* bits (conf/config.h): "_ingested_at",
 * "_request_id", "_key", "_partition", "_offset", "_timestamp" (Kafka's),
 * "_shard", "_sequence", "_partition_key", "_arrival" (Kinesis's).  Which
 * source fills which: its plug-in's `metadata`. */
extern const char *const zx_meta_names[];

/* 1 if the NUL-terminated `name` is reserved for metadata (one of the names
 * listed in (f), or starts with "_zx"), else 0. */
int zx_colname_is_reserved(const char *name);

/* Write into `out` the name `name` (length n <= ZX_COLNAME_MAX, already
 * normalised) with the collision suffix "_<k>" (k >= 2), replacing its last
 * bytes when the result would exceed ZX_COLNAME_MAX.  Returns the length.
 * The result is never reserved (it ends with a digit). */
size_t zx_colname_suffix(const char *name, size_t n, unsigned k,
                         char out[ZX_COLNAME_MAX + 1]);

#endif
