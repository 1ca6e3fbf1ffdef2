/*
 * dest_pg_int.h — the parts of the Postgres destination (dest_postgres.c)
 * that need no connection, all in dest_pg_copy.c: a column's COPY
 * encoding, and the key sets a run uses to find repeated keys.
 *
 * Nothing here talks to a server, so all of it can be tested without one.
 */
#ifndef ZX_SYNCS_DEST_PG_INT_H
#define ZX_SYNCS_DEST_PG_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/rowset.h"
#include "common/dcell.h"

/* How a column's value is sent in binary COPY (its type's binary "recv"
 * format), PGB_NONE when only the text format is written for it. */
enum {
    PGB_NONE = 0,
    PGB_INT8, PGB_INT4, PGB_INT2,
    PGB_FLOAT8, PGB_FLOAT4,
    PGB_BOOL,
    PGB_RAW,        /* text, varchar, bpchar, json, bytea: the bytes */
    PGB_JSONB,      /* version byte 1, then the text */
    PGB_TS,         /* timestamptz / timestamp: int64 µs since 2000-01-01 */
    PGB_DATE        /* int32 days since 2000-01-01 */
};

/* One column of the table as a run writes it. */
typedef struct zx_pg_col {
    zx_dc_target t;     /* what the table's column takes */
    uint8_t bin;        /* PGB_* */
} zx_pg_col;

/* The target and binary kind of a Postgres column type (pg_type oid and
 * atttypmod, as pg_attribute holds them).  Types zx does not know get
 * other = 1 and PGB_NONE. */
zx_pg_col zx_pg_col_of(uint32_t typoid, int32_t typmod);

/* The COPY header of the binary format (19 bytes) and its trailer (2). */
int zx_pg_copy_bin_header(zx_buf *out);
int zx_pg_copy_bin_trailer(zx_buf *out);

/* Append field v of column c to out in the COPY format: binary (a 4-byte
 * length, then the value; -1 for NULL) or text (escaped; "\N" for NULL),
 * without any separator.  *isnull is set when NULL was written, *misfit
 * when that NULL is a misfit (v was not null).  scratch is a work buffer.
 * 0, or -1 when out of memory. */
int zx_pg_copy_field(zx_buf *out, const zx_pg_col *c, const zx_value *v, int binary,
                     zx_buf *scratch, int *isnull, int *misfit);

/* ---- key sets ------------------------------------------------------ */

/* The 64-bit hashes of the keys a run has sent (upsert, mirror: to know
 * whether a batch may go straight into a table that was empty at begin).
 * A repeated key always finds its hash; an unrelated key may collide, which
 * only costs the slower path.  Start with {0}. */
typedef struct zx_pg_hset {
    uint64_t *slot;     /* 0 = empty; a hash of 0 is stored as 1 */
    size_t cap, n;      /* cap: power of two, or 0 */
} zx_pg_hset;

/* 1 when h is in s, else 0. */
int zx_pg_hset_has(const zx_pg_hset *s, uint64_t h);

/* Add h (no-op when present).  0, or -1 when out of memory or when s
 * would hold more than max hashes (s unchanged). */
int zx_pg_hset_add(zx_pg_hset *s, uint64_t h, size_t max);

void zx_pg_hset_free(zx_pg_hset *s);

/* Mark the earlier of rows with byte-equal keys (keys of row r: the
 * klen[r] bytes at kbuf + koff[r]; rows with skip[r] already set are left
 * out) as skip[r] = 1, so that each key's last row alone stays.  Returns
 * the number of rows marked, or -1 when out of memory. */
long zx_pg_dedup(const char *kbuf, const size_t *koff, const size_t *klen,
                 const uint64_t *khash, uint8_t *skip, size_t nrows);

/* Hash of a key's encoded bytes (never 0). */
uint64_t zx_pg_key_hash(const void *p, size_t n);

#endif
