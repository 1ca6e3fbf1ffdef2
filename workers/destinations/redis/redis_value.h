/*
 * redis_value.h — the text of one result value as the Redis destination
 * writes it into a key (redis_keytpl.h) or a hash field: the value rules
 * of files (common/dcell.h, zx_dc_target_file), then INT64 in decimal,
 * BOOL true/false, DOUBLE its shortest exact text (NaN, Infinity),
 * TIMESTAMP "YYYY-MM-DDTHH:MM:SS.ffffffZ" (UTC), DATE "YYYY-MM-DD",
 * DECIMAL with exactly its scale's digits, JSON its text, TEXT and BYTES
 * their bytes (BYTES unencoded: Redis strings are binary-safe).
 *
 * Pure; it must never: allocate except through the buffer it is handed.
 */
#ifndef ZX_DEST_REDIS_VALUE_H
#define ZX_DEST_REDIS_VALUE_H

#include <stddef.h>

#include "common/dcell.h"

typedef struct zx_redis_text {
    const char *s;            /* the text: into tmp, scratch or the value */
    size_t n;
    char tmp[ZX_DC_TEXTSZ];
} zx_redis_text;

/* The text of v (NULL: no cell) for column c into *t (valid until scratch
 * or v changes).  1 a value; 0 NULL (v null); 2 a misfit (v cannot be a
 * value of c: written as NULL, the caller counts it); -1 out of memory. */
int zx_redis_value_text(const zx_dcol *c, const zx_value *v, zx_buf *scratch,
                        zx_redis_text *t);

#endif
