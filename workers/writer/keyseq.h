/*
 * keyseq.h — the source position last applied to each key of a mirror, so
 * that a change older than it (a replay: Debezium sending again what it
 * sent before a restart) does not overwrite a newer row (proto/frame.h:
 * the "_zx_seq" column of changes frames).
 *
 * Kept in the LMDB store's `state` records of the pipeline: name
 * "ks:<table>:<hex of the key's values>" (in the keys' order, so that a
 * growing id fills the B-tree's pages in turn), or for a key whose values
 * take more than 80 bytes "kh:<table>:<hex of their 128-bit XXH3 hash>";
 * value the _zx_seq text.  "kt:<table>" holds the _zx_seq of the table's
 * last truncate (a change older than it is skipped too).  The
 * writer fills the cycle's entries while it applies frames and stores them
 * in the cycle's LMDB transaction, after the workspace committed: a crash
 * between the two leaves the store behind, so those changes are applied
 * again when their frames are (which is what happened before), never
 * skipped wrongly.  Changes without _zx_seq are always applied.
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

/* Decide which changes of frame rs (pipeline, mirror table, key columns)
 * are older than what was applied for their key: skip[r] = 1 for those (rs
 * rows; skip has room for rs->nrows), 0 for the others, whose positions
 * become the keys' newest in ks.  rt: a read transaction of the store
 * (entries of earlier cycles).  Returns the number skipped, or -1 out of
 * memory. */
long zx_keyseq_filter(zx_keyseq *ks, zx_store_txn *rt, const char *pipeline, const char *table,
                      const zx_rowset *rs, const char *const *keys, size_t nkeys, uint8_t *skip);

/* The number of entries the cycle holds (0: nothing to store). */
size_t zx_keyseq_count(const zx_keyseq *ks);

/* Put the cycle's entries into the store's write transaction t.  0 or a
 * ZX_STORE_* code. */
int zx_keyseq_store(zx_keyseq *ks, zx_store_txn *t);

#endif
