/*
 * fwd_send.h — journal frames (fwd_journal.h) published through a
 * destination (workers/destinations/dest.h: today kafka's), as the
 * writer applied them.
 *
 * Consecutive frames of one kind, table and key make one destination
 * run (begin .. commit), whose columns are the union of theirs (each
 * column's type decided from all its values, workers/syncs/coltype.h):
 *   - a rows frame (an appended batch): write, mode append, each row op
 *     'c' (row_seen answers 0); with key columns ("kc": a mirror's
 *     initial copy), mode upsert over them;
 *   - a changes frame (a mirror's): mode mirror over the frame's key
 *     columns ("kc"); its reserved _zx_* columns are not published; in
 *     order, runs of inserts and updates are written (row_seen: 1 for an
 *     update, so Debezium's op "u"), runs of deletes go to delete_keys;
 *     an update that moved its key is a delete of the old key
 *     (_zx_old:<key>) then a write of the row as new; truncates and gaps
 *     are not published (counted in skipped).
 * The run id is the journal number n of the run's first frame, which
 * only grows (the writer's), so the destination's sequence per key
 * (Debezium's source.seq) grows across runs and restarts; a run sent
 * again (at least once) repeats the seqs it had.
 *
 * Pure but for the destination it drives: no journal, no threads.
 */
#ifndef ZX_FORWARD_FWD_SEND_H
#define ZX_FORWARD_FWD_SEND_H

#include <stddef.h>
#include <stdint.h>

#include "workers/destinations/dest.h"
#include "workers/forward/fwd_journal.h"

typedef struct zx_fwd_out {
    const zx_dest *ops;           /* the destination, opened (state) */
    void *state;
    const char *pipeline;         /* for messages (borrowed) */
    const char *const *must_cols; /* columns every run has (the message
                                     key's: kafka's `key`), NULL when
                                     nmust is 0; a frame without one gives
                                     it no value */
    size_t nmust;
    /* what was published (sums over runs, for logs and status) */
    uint64_t frames, rows, deletes, skipped, bad_frames, runs, bytes;
    uint64_t bad_n;               /* the last frame that did not decode: its n */
    char bad_why[200];            /* ... and why */
} zx_fwd_out;

/* Publish entries e[0..n) in order.  *done: the n of the last entry
 * published (its run committed), 0 when none was.  A frame that does not
 * decode is logged, counted (bad_frames) and passed.  Returns 0 when all
 * are published, or -1 with err set (a destination's error: the entries
 * after *done are to be published again; out of memory). */
int zx_fwd_publish(zx_fwd_out *o, const zx_fwdj_entry *e, size_t n, uint64_t *done,
                   char *err, size_t errlen);

#endif
