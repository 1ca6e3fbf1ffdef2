/*
 * delta_checkpoint.h — a Delta table's state as a classic checkpoint
 * (`_delta_log/<version, 20 digits>.checkpoint.parquet`, V1 spec, Delta
 * Lake's PROTOCOL.md "Checkpoints" and "Checkpoint Schema") and the
 * `_last_checkpoint` file that points readers at it.
 *
 * The checkpoint is one Parquet file, one row group, one row per action:
 * the protocol, the metaData, one txn per application, one add per live
 * file.  Its columns are the nested ones the protocol names (top-level
 * optional structs txn, add, remove, metaData, protocol, with maps of
 * string to string and arrays of strings inside), written here with
 * their repetition and definition levels since formats/parquet.h writes
 * flat tables only.  PLAIN values, RLE levels, data pages v1, zstd.
 *
 * What it leaves out: remove tombstones (zx_delta_table keeps none: the
 * remove column is there, all null; VACUUM then sees no tombstones), the
 * txn's lastUpdated (null: zx_delta_table keeps the version only),
 * partitionValues_parsed and stats_parsed (optional), domain metadata,
 * deletion vectors, V2 checkpoints and multi-part checkpoints.
 *
 * It must never: touch the store; it only encodes (the caller puts the
 * bytes, then _last_checkpoint, in that order).
 */
#ifndef ZX_DEST_DELTA_CHECKPOINT_H
#define ZX_DEST_DELTA_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "workers/destinations/delta/delta_log.h"

/* Where the checkpoint's bytes go, in order: 0, or -1 with err set. */
typedef int (*zx_delta_sink)(void *ctx, const void *p, size_t n, char *err, size_t errlen);

/* "_delta_log/%020lld.checkpoint.parquet" of version v into out (64 bytes). */
void zx_delta_checkpoint_name(int64_t v, char out[64]);

/* Write the checkpoint of t (at t->version; t->protocol and t->metadata
 * set, as zx_delta_read leaves them) through sink.  *rows gets the number
 * of rows (actions) written.  0, or -1 with err: t has no protocol or
 * metaData, an add_json that is not a JSON object, out of memory, a
 * column larger than a page may be (2 GiB), the sink's error (passed on
 * as the sink set it). */
int zx_delta_checkpoint(const zx_delta_table *t, zx_delta_sink sink, void *ctx,
                        uint64_t *rows, char *err, size_t errlen);

/* The `_last_checkpoint` JSON of a checkpoint at version with rows
 * actions and bytes bytes: {"version":V,"size":R,"sizeInBytes":B}.
 * Malloc'd (caller frees); NULL when out of memory. */
char *zx_delta_last_checkpoint_json(int64_t version, uint64_t rows, uint64_t bytes);

#define ZX_DELTA_LAST_CHECKPOINT ZX_DELTA_LOG_DIR "/_last_checkpoint"

#endif
