/*
 * writer_int.h — the writer's private state, shared by its parts (not a
 * public header: only workers/writer/writer*.c include it).
 *
 *   writer.c          the loop: cycles (one group-commit transaction each),
 *                     drain passes over the rings, workspace health,
 *                     detaches, pruning, start-up reconciliation
 *   writer_control.c  the supervisor's channel: ATTACH, DETACH, READY, RUN
 *   writer_apply.c    one frame into the open workspace transaction, and
 *                     what it did (applied) kept for the store
 *   writer_park.c     parked tables: frames a table refuses, kept in
 *                     _zx_parked and retried (see ptable)
 *   writer_forward.c  the forward journal: frames of a forwarding pipeline
 *                     kept in _zx_forward as applied (see wpipe.fw_last)
 *   writer_commit.c   after the workspace commit: the LMDB transaction and
 *                     the feed events
 *   writer_fence.c    a shared workspace: the compare-and-set of a frame's
 *                     positions before its rows
 *
 * Everything here runs in the writer process's one thread.
 */
#ifndef ZX_WRITER_INT_H
#define ZX_WRITER_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rowset.h"
#include "common/segment.h"
#include "proto/frame.h"
#include "store/store.h"
#include "workers/writer/forget.h"
#include "workers/writer/keyseq.h"
#include "workers/writer/workspace.h"
#include "workers/writer/writer.h"

#define MAX_PIPES ZX_MAX_PIPELINES
#define CYCLE_BYTES (48u * 1024 * 1024)
#define IDEM_TTL_US (24LL * 3600 * 1000000)

typedef struct wpipe {
    char name[64];
    char ckpt_key[96];      /* "name#epoch": the workspace checkpoint key */
    zx_segment seg;
    int worker_efd;
    zx_ring_cursor cur;     /* read position (ahead of the released head) */
    uint64_t ckpt;          /* last seq applied in the workspace */
    int ckpt_dirty;         /* ckpt moved in the open transaction: written
                               once, before its commit (wr_write_checkpoints) */
    int detaching;
    int used;
    int64_t blocked_until_ms;  /* its table refused a frame: retry after */
    int64_t block_ms;          /* current backoff (1 s doubling to 60 s) */
    uint64_t released_cycle;   /* last cycle that released its frames */
    uint64_t txn_cycle;        /* last cycle that counted its rows ... */
    uint64_t txn_rows;         /* ... and those rows (writer_metrics.c) */
    uint32_t max_columns;      /* column cap of its table (0 = default) */
    uint64_t max_parked_bytes; /* bound of one table's parked frames (0:
                                  never park: hold the pipeline back) */
    uint64_t fw_last;          /* forward journal: the last n given to a
                                  frame of this pipeline (see wr_forward) */
    int fw_loaded;             /* fw_last has seen the journal's largest n */
    /* What light cycles applied (writer.c light_cycle) that the store does
     * not hold yet: the last frame and the rows (wr_store_owe).  The next
     * store transaction writes them, at the latest STORE_OWED_MS after the
     * first, and before the wpipe is dropped. */
    int owed;
    uint64_t owed_seq, owed_rows;
} wpipe;

/* The forward journal (`forward:`; workspace.h, _zx_forward).  A frame
 * whose metadata says "fw" goes into the journal when it is applied, in
 * the same savepoint and transaction as its rows (wr_apply_frame, and
 * wr_replay_frame for a parked frame when it is finally applied), never
 * when it is parked or skipped (at or below the checkpoint: it went in
 * with its rows then).  The bytes are the frame as applied: the frame
 * received, or when stale changes were left out (applied.stale) the rows
 * that were applied, encoded again with the same metadata.  A frame with
 * no row applied (positions or rejects only, every change stale) carries
 * nothing to forward and is not journaled.  n, per pipeline name, is
 * max(last n + 1, now in µs since the epoch): it grows across restarts
 * even when the forwarder has deleted every row (it uses n in the
 * sequence numbers it publishes).  The last n is kept in the wpipe, read
 * from the journal (zx_ws_forward_last) the first time; a rolled-back
 * cycle leaves a gap (the forwarder reads in order of n, gaps allowed),
 * never an n given twice.  Two wpipes of one name (a pipeline removed and
 * added back, the old segment still draining) take n past each other's. */

/* Parked tables.  A frame of a pipeline that keeps mirrors (Postgres CDC;
 * Kafka Debezium or mode latest: zx_conf_parked_bound) that its table
 * refuses for a reason that will not pass by itself (a conflicting
 * object of its name...) is parked instead of holding its whole
 * pipeline back: the frame goes to the workspace table _zx_parked in the
 * same transaction as the checkpoint and the positions that pass
 * it (workspace.h), so that a crash neither loses it nor applies it twice,
 * and the pipeline's other tables and its source position go on.  While
 * a table has parked frames, every new frame of it is parked too (its
 * order is kept); the table is retried with backoff (1 s doubling to
 * 60 s, and at once when the supervisor attaches the pipeline again, at
 * reload), its parked frames applied oldest first and deleted in the same
 * transaction.  Past max_parked_bytes the pipeline is held back as a
 * whole, as the frames of other pipelines always are.  One entry per (pipeline, table)
 * with parked frames; the counts follow the workspace (read again after
 * a rolled-back cycle). */
typedef struct ptable {
    char pipeline[64];
    char table[128];
    uint64_t count, rows, bytes;  /* parked frames, their changes, bytes */
    uint64_t last_n;              /* highest number given (_zx_parked.n) */
    char why[256];                /* why the table refused them */
    int64_t retry_at_ms, backoff_ms;
    int told;                     /* the log and feed were told it blocks */
    int seen;                     /* pt_load: found in the workspace */
} ptable;

/* What one frame did, kept until the LMDB transaction is written. */
typedef struct applied {
    wpipe *p;
    uint64_t seq;
    zx_ring_cursor after;
    char table[64];
    char *dedup;            /* malloc'd, or NULL: the frame's dedup key */
    uint64_t dedup_hash, accepted;
    char rid[40];           /* the frame's batch id */
    zx_frame_pos *pos;      /* the frame's positions, copied (malloc'd
                               block: entries, then parts and values) */
    size_t npos;
    uint64_t rows, rejects;
    uint64_t bytes;         /* the frame's length */
    int64_t ingested_at_us; /* when its source took it in (0: not known,
                               or not applied now) */
    uint64_t messages;      /* rejected input messages stored */
    zx_ws_colcount *rejcols;
    size_t nrejcols;
    zx_ws_newcol *newcols;
    size_t nnewcols;
    int created;
    uint32_t history_json;  /* made its __changes with the row as JSON: the
                               mirror's data columns (0: not) */
    uint64_t extra_values;  /* values kept in _extra (column cap) */
    uint32_t extra_fields, max_columns;
    char extra_first[64];
    int announce_cap;       /* first time this table hit this cap */
    int inferred;           /* a changes frame whose types were inferred
                               (Debezium events without a schema) */
    uint64_t stale;         /* its changes older than the key's (skipped) */
    int in_batch;           /* counted in an earlier frame's batch event */
    int skipped;            /* already in the workspace (reconciled) */
    int parked;             /* parked, not applied (see ptable) */
    int replayed;           /* a parked frame applied: no position, no
                               checkpoint, no ring release of its own */
    int bad;                /* could not be decoded */
    /* compare-and-set of the positions (shared workspace, writer_fence.c) */
    int fenced;             /* its rows were not applied: another zxd wrote
                               that range (pos: the workspace's values) */
    int fence_dup;          /* ... and it began below the stored position */
    int fence_gap;          /* applied, its first message past `from` */
    /* a row-hashes frame (proto/frame.h): its keys, for the store */
    zx_store_hash_rec *hashes;  /* malloc'd block: entries, then the keys'
                                   JSON */
    size_t nhashes;
    char *keysig;           /* malloc'd: the sync's key columns ("kc") as a
                               JSON array, or NULL */
    uint64_t hpending;      /* "hp": unconfirmed hashes of this run (0: none) */
    uint64_t hconfirm;      /* "hc": this run's hashes now hold (0: none) */
} applied;


typedef struct writer {
    const zx_writer_args *a;
    zx_store *store;
    zx_ws *ws;
    wpipe pipes[MAX_PIPES];
    zx_rowset rs;
    applied *ap;
    size_t nap, ap_cap;
    int64_t last_prune_ms;
    uint64_t cycles;         /* cycles committed (for released_cycle) */
    int first_pipe;          /* slot a cycle's passes start at */
    int served_first;        /* slot of the cycle's first frame, -1 none */
    int attached_all;        /* the supervisor's initial ATTACHes are in */
    /* Fault injection for tests (ZX_FAULT_INJECTION=1 in the environment):
     * when this file exists, the writer deletes it and dies right after a
     * workspace commit, before the LMDB commit and the acknowledgement:
     * the one crash window the workspace checkpoint must close. */
    char fault_path[4200];
    char fault_release_path[4200];  /* the same, after a light cycle's
                                       release (writer.c light_cycle) */
    int ckpt_stale;          /* a checkpoint read failed: read them all
                                again before applying (reread_checkpoints) */
    int ws_down;             /* zx_ws_status said why it cannot write */
    char ws_why[256];
    /* "pipeline\ttable" of the mirrors whose inferred types the feed was
     * told of (once per writer's life; at most INFERRED_MAX remembered) */
    char **inferred_told;
    size_t ninferred_told;
    zx_keyseq *ks;           /* the cycle's newest positions per key */
    zx_rowset rs2;           /* a changes frame without its stale changes */
    uint8_t *skip;
    size_t skip_cap;
    zx_keyseq_have *have;    /* per row of a changes frame: its key's row's
                                _zx_seq (zx_ws_key_seqs), in have_buf */
    size_t have_cap;
    zx_buf have_buf;
    int64_t swept_us;        /* the last sweep of deleted keys' positions */
    int64_t owed_since_ms;   /* CLOCK_MONOTONIC: the oldest record a light
                                cycle left to a later store transaction (see
                                wpipe.owed), 0 none */
    ptable *pt;              /* the parked tables (see ptable) */
    size_t npt, pt_cap;
    int pt_stale;            /* read them again before applying (pt_load) */
    zx_forget forget;        /* removed pipelines whose state to drop */
    zx_buf fwbuf;            /* a journaled frame encoded again (see
                                wpipe.fw_last) */
    struct wr_leases *leases; /* a shared workspace's leases (writer_lease.c;
                                NULL: none wanted) */
    zx_buf events;           /* feed events not sent yet, each a JSON text
                                and its NUL (wr_emit) */
    int64_t events_sent_ms;  /* CLOCK_MONOTONIC: their last sending */
} writer;

#define INFERRED_MAX 4096

/* ---- writer.c ------------------------------------------------------------ */

/* Queue a feed event for the supervisor (takes the reference; NULL =
 * json_pack ran out of memory).  An event that cannot be built is logged,
 * never a crash.  Events go in order, together: after the cycle that made
 * them, or under a stream of cycles EVENTS_MS after the last sending (at
 * once past EVENTS_MAX_BYTES).  A message per cycle woke the supervisor
 * a thousand times a second under small commits, a tenth of the writer's
 * time. */
#define EVENTS_MS 20
#define EVENTS_MAX_BYTES (256u * 1024u)
void wr_emit(writer *w, json_t *ev);

/* Send the queued events now (before any other message to the
 * supervisor, and when EVENTS_MS have passed).  An event the channel
 * refuses (the supervisor not reading) is lost, as one sent at once
 * would be. */
void wr_events_flush(writer *w);

/* Begin the cycle's transaction if not yet (*began), reading what a
 * failure left stale first.  0, or -1 (err set). */
int wr_begin_once(writer *w, int *began, char *err, size_t errlen);

/* ---- writer_control.c ---------------------------------------------------- */

/* Handle one message of the supervisor's channel: 1 when a message was
 * handled, 0 when none is waiting, -1 when the supervisor is gone. */
int wr_handle_chan(writer *w);

/* Unmap p's segment, close its worker's eventfd, free its slot. */
void wr_drop_pipe(wpipe *p);

/* ---- writer_apply.c ------------------------------------------------------ */

/* Forget what the cycle's frames did (w->ap emptied, its blocks freed). */
void wr_free_applied(writer *w);

/* The last frame applied in this cycle was rolled back: forget it. */
void wr_drop_last_applied(writer *w);

/* Apply one frame inside the open workspace transaction.  0 (applied, or
 * parked: see ptable); -2 when the frame's table refused it (the same
 * frame would fail again: hold the pipeline back); -1 on any other
 * failure (database, out of memory: roll the cycle back and retry).  err
 * says why. */
int wr_apply_frame(writer *w, wpipe *p, const void *data, size_t len, uint64_t seq,
                   const zx_ring_cursor *after, char *err, size_t errlen);

/* Apply a parked frame of p (data, len bytes) to its table as
 * wr_apply_frame would, inside the open transaction: no position and no
 * checkpoint (recorded when it was parked).  0 applied (or not
 * decodable: dropped, logged), *nrows its changes; -2 the table refuses
 * it still; -1 any other failure.  err says why. */
int wr_replay_frame(writer *w, wpipe *p, const void *data, size_t len, uint64_t *nrows,
                    char *err, size_t errlen);

/* The frame m of p (data, len bytes as received), just applied in the
 * open transaction: into the forward journal when m says "fw" (see the
 * forward journal above; a is what applying it did).  0 (journaled, or
 * not to be), or -1 (database failure, out of memory; err set: roll the
 * cycle back). */
int wr_forward(writer *w, wpipe *p, const applied *a, const zx_frame_meta *m, const void *data,
               size_t len, char *err, size_t errlen);

/* Record frame seq's positions in the open transaction, and move p's
 * checkpoint to seq (written by wr_write_checkpoints).  0, or -1 (err
 * set). */
int wr_record_progress(writer *w, wpipe *p, const zx_frame_meta *m, uint64_t seq, char *err,
                       size_t errlen);

/* Before the cycle's commit: each pipeline's checkpoint that moved, one
 * row each (one per frame cost a cycle of small frames ~8%).  0, or -1
 * (err set: roll the cycle back). */
int wr_write_checkpoints(writer *w, char *err, size_t errlen);

/* ---- writer_fence.c ------------------------------------------------------ */

/* Frame seq of p (m decoded, a its applied with the frame's positions
 * kept), after the checkpoint check and before its rows: in a shared
 * Postgres workspace, the compare-and-set of its fenced positions
 * (proto/frame.h, "po").  Each fenced part's row is locked
 * (zx_ws_position_lock); the frame passes when every one's stored offset
 * equals the frame's `from` (a part never stored passes) and no first
 * message lies below it.  Returns 0: the frame passes (or the workspace
 * is not shared, or nothing is fenced): apply it; its positions are
 * recorded as usual (a->fence_gap set when its first message lies past
 * `from`: logged, counted).  1: fenced: the rows must not be applied;
 * the checkpoint is recorded (the frame is never looked at again),
 * a->pos now holds the workspace's own values of the fenced parts (the
 * store gets them, so that the worker sees where to read from),
 * a->fenced (and a->fence_dup for a frame that began below the stored
 * position: an error in the log) set.  -1: database failure or out of
 * memory (err set: roll the cycle back). */
int wr_fence(writer *w, wpipe *p, applied *a, const zx_frame_meta *m, uint64_t seq, char *err,
             size_t errlen);

/* After the store commit of a cycle, before any of its frames is released:
 * add each pipeline's fenced frames to its segment's frames_fenced
 * (release).  A worker that sees an ack then sees the fences of every
 * frame it covers (released per pipeline at its last frame, so the bump
 * may not wait for the frame's own turn). */
void wr_fence_tell(writer *w);

/* A frame at or below its checkpoint (applied or fenced before a crash
 * of the writer): in a shared workspace its fenced positions are not
 * copied into the store again (a fenced frame's would be wrong; the
 * store got the workspace's at start, reconcile_positions). */
void wr_fence_skipped(writer *w, applied *a);

/* ---- writer_park.c ------------------------------------------------------- */

/* The entry of (pipeline, table), or NULL.  Valid until the next
 * wr_pt_add or wr_pt_load. */
ptable *wr_pt_find(writer *w, const char *pipeline, const char *table);

/* Forget the entries of pipeline (NULL: none): its parked frames were
 * dropped with its state (forget.h). */
void wr_pt_forget(writer *w, const char *pipeline);

/* Read the parked tables' counts from the workspace.  0, or -1
 * (w->pt_stale set: read again before the next frame is applied). */
int wr_pt_load(writer *w);

/* After a commit (or wr_pt_load): tell the log, the feed and each
 * pipeline's status line which tables are parked. */
void wr_pt_tell(writer *w);

/* Park frame seq of p (data, len bytes; m decoded into w->rs), which its
 * table refuses (why), in _zx_parked, with its positions and the
 * checkpoint, inside the open transaction.  0; -2 when it may not be
 * parked (past max_parked_bytes: err says so, hold the pipeline back);
 * -1 on a database failure or out of memory (err set). */
int wr_park_frame(writer *w, wpipe *p, applied *a, const zx_frame_meta *m, const void *data,
                  size_t len, uint64_t seq, const char *why, char *err, size_t errlen);

/* Apply p's parked frames whose retry is due, oldest first.  0, or -1 on
 * a failure that needs a rollback (err set). */
int wr_replay_parked(writer *w, wpipe *p, size_t *bytes, int *began, int *nframes,
                     char *err, size_t errlen);

/* ---- writer_metrics.c ---------------------------------------------------- */

/* After a commit at now_us (cycle: the writer's cycle count): add frame
 * a's nulled values, added columns and commit latency to its pipeline's
 * segment, and its rows to the pipeline's rows of this transaction. */
void wr_metrics_frame(const applied *a, int64_t now_us, uint64_t cycle);
/* Once every frame of the cycle was counted: p's rows of the transaction
 * into its histogram (once per cycle; later calls for p do nothing). */
void wr_metrics_txn(wpipe *p, uint64_t cycle);

/* ---- writer_commit.c ----------------------------------------------------- */

/* Write what the cycle's frames did (w->ap), and what earlier light
 * cycles left owed (wpipe.owed), to the store in one LMDB transaction
 * (retried when the map grows).  0 (nothing is owed any more) or a
 * ZX_STORE_* code (what was owed still is). */
int wr_store_txn(writer *w);

/* A light cycle's store records (each pipeline's last frame and its rows
 * counter, writer.c light_cycle) are owed instead of written: its
 * transaction's sync would stand before the next cycle, in the path of
 * the pushes waiting for their commit.  What a crash loses of them the
 * workspace's checkpoint holds, but for the rows counter. */
#define STORE_OWED_MS 100
void wr_store_owe(writer *w);

/* Outside a cycle (w->nap == 0): write what is owed, if anything.  0 or
 * a ZX_STORE_* code (logged; still owed). */
int wr_store_flush(writer *w);

/* Tell the feed what the committed cycle did: new columns, caps,
 * rejects, one batch event per pipeline and table. */
void wr_announce(writer *w);

/* Copy the upstream positions the workspace holds (_zx_positions) into
 * the store, for one pipeline or every one (pipeline NULL), in one store
 * transaction (retried when the map grows).  *n = parts copied.  0, or -1
 * with err set (the store or the workspace failed; nothing copied). */
int wr_positions_from_ws(writer *w, const char *pipeline, size_t *n, char *err, size_t errlen);

#endif
