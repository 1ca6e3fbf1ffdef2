/*
 * hash.h — what a reverse sync remembers of each row it sent: the hash of
 * its key (which row), the hash of its values (which version), and the key
 * itself as JSON (what a mirror deletes when the key disappears).
 *
 * Hashes are xxHash's XXH3 (libxxhash): 128 bits for a key (a collision
 * between two keys of one sync would merge two rows: at 2^-128 per pair,
 * never), 64 bits for a row (a collision would skip one changed row once:
 * 2^-64 per change).  They hash a canonical encoding of the values: a type
 * byte, then the value (integers and doubles as 8 little-endian bytes,
 * text as a 4-byte length and the bytes, a timestamp as its µs), so that
 * ("ab","c") and ("a","bc") differ, and 1 (INT) differs from "1" (TEXT).
 * The row hash is seeded with the hash of the column names and types: a
 * query that gains a column sends every row again, as it must.
 *
 * Stored in LMDB by the writer (store/store.h, "hashes"); these
 * functions never touch the store.
 *
 * Thread safety: pure functions of their arguments.
 */
#ifndef ZX_SYNCS_HASH_H
#define ZX_SYNCS_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/dtype.h"
#include "common/rowset.h"

#define ZX_SYNC_KEYHASH_LEN 16

/* Seed of the row hashes of a result with these columns (names and
 * types, in order). */
uint64_t zx_sync_columns_seed(const zx_dcol *cols, size_t ncols);

/* Hash of the values vals[idx[0..n-1]] (the key columns, in key order)
 * into out[ZX_SYNC_KEYHASH_LEN].  scratch is reused between calls (free it
 * with zx_buf_free).  0, or -1 out of memory. */
int zx_sync_key_hash(const zx_value *vals, const size_t *idx, size_t n, zx_buf *scratch,
                     unsigned char out[ZX_SYNC_KEYHASH_LEN]);

/* A row hash rh (made with one seed) hashed again with seed: what the
 * row hashes of a run become when its columns' final types (their seed,
 * zx_sync_columns_seed) differ from those it hashed with.  Pure. */
uint64_t zx_sync_row_hash_reseed(uint64_t rh, uint64_t seed);

/* Hash of the whole row vals[0..ncols-1] with seed.  0 or -1 (ENOMEM). */
int zx_sync_row_hash(const zx_value *vals, size_t ncols, uint64_t seed, zx_buf *scratch,
                     uint64_t *out);

/* Both hashes of one row from one encoding of it: *rh as
 * zx_sync_row_hash(vals, ncols, seed) and kh as zx_sync_key_hash(vals,
 * idx, n) (the same values).  0 or -1 (ENOMEM). */
int zx_sync_row_key_hash(const zx_value *vals, size_t ncols, uint64_t seed, const size_t *idx,
                         size_t n, zx_buf *scratch, uint64_t *rh,
                         unsigned char kh[ZX_SYNC_KEYHASH_LEN]);

/* The key values vals[idx[0..n-1]] as a JSON array text appended to out
 * (no NUL): INT as a number, REAL as a number (null for NaN and
 * infinities), BOOL true/false, TEXT and TIMESTAMP (its text) as strings,
 * JSON as the string of its text, NULL as null.  0 or -1 (ENOMEM). */
int zx_sync_key_json(const zx_value *vals, const size_t *idx, size_t n, zx_buf *out);

/* The inverse, for a mirror's deletes: add one row to rs (its columns:
 * the key columns, created as needed in key order) from the JSON array
 * text (len bytes) made by zx_sync_key_json: numbers without '.', 'e' or
 * 'E' as INT, other numbers as REAL, strings as TEXT, booleans as BOOL,
 * null as no cell.  names: the n key column names.  0; -1 when the text is
 * not such an array of n values (err says why) or out of memory. */
int zx_sync_key_from_json(const char *json, size_t len, const char *const *names, size_t n,
                          zx_rowset *rs, char *err, size_t errlen);

#endif
