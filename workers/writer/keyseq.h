/*
 * keyseq.h — the source position last applied to each key of a mirror, so
 * that a change older than it (a replay: Debezium sending again what it
 * sent before a restart) does not overwrite a newer row (proto/frame.h:
 * the "_zx_seq" column of changes frames).
 *
 * Where a key's position is kept:
 *   - a key that has a row: in the row itself, the mirror's `_zx_seq`
 *     column, written with the row in the workspace's transaction (the
 *     row's pages are written anyway: no page of its own, whatever the
 *     order of the keys); read for a frame's keys with zx_ws_key_seqs;
 *   - a deleted key: a tombstone in the LMDB store's `state` records of
 *     the pipeline, name "d" + the key's name, value the _zx_seq, a NUL
 *     and the time it was written; kept for the pipeline's
 *     `deleted_keys_retention`, then swept (zx_keyseq_prune);
 *   - a table's last truncate: "kt:<table>" (a change older than it is
 *     skipped too).
 * A key's name is "ks:<table>:<hex of the key's values>" (in the keys'
 * order), or for a key whose values take more than 80 bytes
 * "kh:<table>:<hex of their 128-bit XXH3 hash>".  Records under those
 * names (value: the bare _zx_seq) are what earlier zx kept for every
 * key; they are still read, after the row and the tombstone, and no
 * longer written.
 *
 * A table's high-water mark, per pipeline: the newest position applied
 * to it as far as ks knows, started from the newest a row holds
 * (zx_ws_max_seq), the newest tombstone or truncate ("kw:<table>", and
 * "kt:<table>"), raised by every change ks lets through.  A change at or
 * past it cannot be older than its key's position, so it needs no
 * lookup: in a stream in order (every change but a replay's) no key is
 * looked up at all, whatever the keys' order.  A table with records of
 * earlier versions has no mark (every change looked up).  A mark raised
 * by a cycle that is rolled back is only too high, which costs lookups,
 * never a change.
 *
 * The writer fills the cycle's entries while it applies frames and stores
 * the tombstones and truncates in the cycle's LMDB transaction, after the
 * workspace committed: a crash between the two leaves the store behind,
 * so a replay of a change older than such a delete could bring the row
 * back (the rows' own positions commit with them).  Changes without
 * _zx_seq are always applied.
 *
 * It must never: skip a change whose position equals the stored one (a
 * transaction's changes share one), or compare positions of two tables.
 */
#ifndef ZX_WRITER_KEYSEQ_H
#define ZX_WRITER_KEYSEQ_H

#include <stddef.h>
#include <stdint.h>

#include "common/rowset.h"
#include "store/store.h"

typedef struct zx_keyseq zx_keyseq;   /* the cycle's entries, in memory */

/* A new empty set, or NULL (ENOMEM). */
zx_keyseq *zx_keyseq_new(void);
/* Forget the cycle's entries (a new cycle, or one rolled back). */
void zx_keyseq_clear(zx_keyseq *ks);
void zx_keyseq_free(zx_keyseq *ks);

/* The _zx_seq the workspace's row of a change's key holds (len 0: none,
 * or no row).  s is borrowed from the caller. */
typedef struct zx_keyseq_have {
    const char *s;
    size_t len;
} zx_keyseq_have;

/* Decide which changes of frame rs (pipeline, mirror table, key columns)
 * are older than what was applied for their key: skip[r] = 1 for those (rs
 * rows; skip has room for rs->nrows), 0 for the others, whose positions
 * become the keys' newest in ks.  have: per row of rs, what the mirror's
 * row of its key holds now (may be NULL when zx_keyseq_needs_rows said 0;
 * only changes older than the mark read it).  rt: a read transaction of
 * the store (tombstones, truncates and records of earlier cycles; NULL:
 * none).
 * Returns the number skipped, or -1 out of memory. */
long zx_keyseq_filter(zx_keyseq *ks, zx_store_txn *rt, const char *pipeline, const char *table,
                      const zx_rowset *rs, const char *const *keys, size_t nkeys,
                      const zx_keyseq_have *have, uint8_t *skip);

/* 1 when pipeline's mark of table is known (zx_keyseq_hwm_init was
 * called in this writer's life), 0 when not. */
int zx_keyseq_hwm_known(const zx_keyseq *ks, const char *pipeline, const char *table);
/* Start the mark of pipeline's table from rows_max (len bytes: the newest
 * _zx_seq the table's rows hold; len 0: none) and the store's records
 * (rt; NULL: no mark, every change looked up).  0, or -1 out of memory. */
int zx_keyseq_hwm_init(zx_keyseq *ks, zx_store_txn *rt, const char *pipeline,
                       const char *table, const char *rows_max, size_t len);
/* 1 when a change of rs is older than the mark of pipeline's table (or
 * there is no mark): zx_keyseq_filter needs what the rows hold (have);
 * 0 when none is. */
int zx_keyseq_needs_rows(const zx_keyseq *ks, const char *pipeline, const char *table,
                         const zx_rowset *rs);

/* The number of entries the cycle has for the store (tombstones and
 * truncates; 0: nothing to store). */
size_t zx_keyseq_count(const zx_keyseq *ks);

/* Put the cycle's tombstones (written at now_us) and truncates into the
 * store's write transaction t.  0 or a ZX_STORE_* code. */
int zx_keyseq_store(zx_keyseq *ks, zx_store_txn *t, int64_t now_us);

/* Delete the pipeline's tombstones written before before_us, looking at
 * no more than max_scan of them; the next call goes on where this one
 * stopped (ks remembers it per pipeline) and starts over after the last.
 * *removed += tombstones deleted.  0 or a ZX_STORE_* code. */
int zx_keyseq_prune(zx_keyseq *ks, zx_store_txn *t, const char *pipeline, int64_t before_us,
                    size_t max_scan, uint64_t *removed);

#endif
