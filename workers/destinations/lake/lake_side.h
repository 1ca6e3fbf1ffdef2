/*
 * lake_side.h — zx's own copy of the rows of a data file it wrote into a
 * lake table, so that a later upsert or mirror run can rewrite that file
 * (copy-on-write) without reading Parquet back: beside data file NAME,
 *
 *   _zx/NAME.keys   the rows' key hashes (lake_keys.h), 16 bytes each, in
 *                   row order: which files hold a changed key;
 *   _zx/NAME.rows   the rows themselves as rows frames (proto/frame.h),
 *                   each a 4-byte little-endian length and the frame, the
 *                   whole zstd-compressed.
 *
 * Table readers ignore them (Delta and Iceberg skip paths starting with
 * '_').  Both are written like data files (lake_store.h: visible only at
 * commit) and before the commit that adds their data file.
 *
 * Errors: -1 with one line in err naming the file.
 */
#ifndef ZX_DEST_LAKE_SIDE_H
#define ZX_DEST_LAKE_SIDE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/rowset.h"
#include "workers/destinations/lake/lake_keys.h"
#include "workers/destinations/lake/lake_store.h"

#define ZX_LAKE_SIDE_DIR "_zx"

typedef struct zx_side zx_side;

/* Start the sidecars of data file name (relative to the table's root,
 * "zx-1-00000.parquet" or "data/zx-..." or "region=eu/zx-..."; its folders
 * under _zx/ are made): the .keys, and the .rows when rows (a table
 * upserted by deletes, Delta's deletion vectors or Iceberg's position
 * deletes, never rewrites a file: its keys suffice).  NULL with err. */
zx_side *zx_side_open(zx_lake *l, const char *name, int rows, char *err, size_t errlen);
/* The rows of rs with their key hashes keys[0..rs->nrows).  0 or -1 (then
 * only zx_side_abort). */
int zx_side_add(zx_side *s, const zx_rowset *rs, const unsigned char *keys, char *err,
                size_t errlen);
/* Make both visible; frees s.  0 or -1 (nothing visible). */
int zx_side_commit(zx_side *s, char *err, size_t errlen);
/* Drop both; frees s.  NULL: no-op. */
void zx_side_abort(zx_side *s);

/* The key hashes of data file name into out (reset first; out->len a
 * multiple of 16).  0, ZX_LAKE_NOT_FOUND, or -1. */
int zx_side_keys(zx_lake *l, const char *name, zx_buf *out, char *err, size_t errlen);

/* Call each(ctx, rs) for every batch of rows of data file name, in the
 * order written (rs: the frame's columns and rows, valid during the
 * call).  each returns 0 or -1 (stops: -1).  0, ZX_LAKE_NOT_FOUND, or -1
 * (damaged: a bad frame, a truncated stream). */
int zx_side_rows(zx_lake *l, const char *name, int (*each)(void *ctx, const zx_rowset *rs),
                 void *ctx, char *err, size_t errlen);

/* The same over a .rows object's bytes z[0..n): what zx_side_rows does
 * once it has read them.  A frame may not exceed 256 MiB decompressed.
 * 0, or -1 with err (a bad zstd stream, a bad frame, a truncated stream,
 * each returning -1). */
int zx_side_decode(const void *z, size_t n, int (*each)(void *ctx, const zx_rowset *rs),
                   void *ctx, char *err, size_t errlen);

/* Remove both sidecars of name (missing: fine).  0 or -1. */
int zx_side_delete(zx_lake *l, const char *name, char *err, size_t errlen);

#endif
