/*
 * lake_keys.h — which rows a lake table's run touches: a row's key as a
 * 128-bit hash of its key columns' values, canonical per column type (an
 * INT64 key given as 42 or "42", a timestamp as µs or as its text, hash
 * the same), and a set of such hashes.
 *
 * The hash: xxHash's XXH3-128 over, per key column, its zx_dtype byte and
 * the value as common/dcell.h converts it for files (integers, dates,
 * timestamps and decimals up to 18 digits as 8 little-endian bytes;
 * doubles as their 8 bytes with -0.0 as 0.0; text and bytes as a 4-byte
 * length and the bytes).  A collision between two keys of one table
 * (2^-128 a pair) would rewrite one file too many, never lose a row.
 *
 * Thread safety: a set is one thread's.
 */
#ifndef ZX_DEST_LAKE_KEYS_H
#define ZX_DEST_LAKE_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/dtype.h"
#include "common/rowset.h"

#define ZX_LAKE_KEY_LEN 16

/* The hash of vals[idx[i]] for key columns keycols[i], i < n, into out.
 * scratch[0..1] are reused between calls (the caller frees them with
 * zx_buf_free).  0, or -1 out of memory. */
int zx_lake_key_hash(const zx_dcol *keycols, const size_t *idx, size_t n,
                     const zx_value *vals, zx_buf scratch[2],
                     unsigned char out[ZX_LAKE_KEY_LEN]);

/* XXH3-128 of p[0..n) into out (the same 16 bytes the sets hold). */
void zx_lake_hash128(const void *p, size_t n, unsigned char out[ZX_LAKE_KEY_LEN]);

/* A set of key hashes (open addressing).  Start zeroed; free with
 * zx_keyset_free.  Memory: 2 x 17 bytes per key at most. */
typedef struct zx_keyset {
    unsigned char *slots;    /* cap x ZX_LAKE_KEY_LEN */
    unsigned char *used;     /* cap flags */
    size_t cap, n;
} zx_keyset;

/* Add k: 1 added, 0 there already, -1 out of memory. */
int zx_keyset_add(zx_keyset *s, const unsigned char k[ZX_LAKE_KEY_LEN]);
/* 1 when k is in s, else 0. */
int zx_keyset_has(const zx_keyset *s, const unsigned char k[ZX_LAKE_KEY_LEN]);
void zx_keyset_free(zx_keyset *s);

#endif
