/*
 * run_int.h — the state of one reverse-sync run (srun), shared by its
 * stages; private to workers/syncs/run*.c.  The stages, in order (run.h
 * says what each does):
 *
 *   run.c          the worker: open, poll (the stages in order), close,
 *                  and the run's status
 *   run_cursor.c   read: with a `cursor`, the query past the last run's
 *                  mark (cursor.h), and the run's new mark
 *   run_read.c     read: the query as its author (query*.c), each row's
 *                  key and row hash (hash.c), the rows kept in a spill
 *                  file (spill.c) as rows frames, the keys to the sorter
 *   run_compare.c  compare: the sorted keys merged with the stored hashes
 *                  (store/): duplicates, changes, deletes; a preview's
 *                  sample
 *   run_deliver.c  deliver: the rows read back from the spill and sent,
 *                  with the deletes, in one destination transaction
 *                  (workers/destinations/)
 *   run_record.c   record: the new hashes to the writer in row-hashes
 *                  frames (the worker runtime, workers/sources/source.h)
 */
#ifndef ZX_SYNCS_RUN_INT_H
#define ZX_SYNCS_RUN_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rowset.h"
#include "proto/frame.h"
#include "store/store.h"
#include "workers/destinations/dest.h"
#include "workers/syncs/cursor.h"
#include "workers/syncs/hash.h"
#include "workers/syncs/query.h"
#include "workers/syncs/run.h"
#include "workers/syncs/spill.h"
#include "workers/syncs/sync_opts.h"

#define NET_TIMEOUT_MS 30000
#define SORT_MEMORY (64u << 20)
#define STORE_BATCH 4096          /* stored keys read per read transaction */
#define SAMPLE_ROWS 5
#define HASH_FRAME_ROWS 20000
#define FAILED_MAX 100000         /* rows a destination may refuse one by
                                     one in a run (dest.h) before it fails */

typedef struct srun {
    zx_src *rt;
    const zx_conf *conf;
    const zx_conf_pipeline *p;
    const zx_sync_opts *o;        /* p's own options (never NULL once open) */
    const char *name;
    uint64_t id;
    int preview, full;
    int hashed;                   /* upsert / mirror: hashes compared and kept */
    int key_changed;              /* the stored hashes are of other key columns */
    int stream;                   /* no key, types known before the first
                                     row: rows sent as they are read */
    int stream_keyed;             /* upsert or mirror with nothing stored
                                     (a first run), types known, into a
                                     ZX_DEST_TXN destination: every row is
                                     new, so each batch is sent as it is
                                     read; the keys are still sorted and a
                                     duplicate fails the run before the
                                     destination commits (run_read.c) */
    uint64_t unconfirmed;         /* stream_keyed upsert: its hashes were
                                     recorded before the destination
                                     committed, marked unconfirmed by this
                                     run (its id; proto/frame.h "hp"), and
                                     are confirmed once it committed */
    size_t unconfirmed_failed;    /* rows and keys refused when they were */
    int reseed;                   /* the types the rows were hashed with
                                     changed once all were read */
    uint64_t seed_final;          /* then: the seed of the final types */
    char *keysig;                 /* the key columns as a JSON array */
    char tmpdir[4200];

    const zx_dest *dest;
    void *dstate;
    int dest_begun;
    zx_dest_run drun;             /* the run as the destination sees it */
    zx_dest_stats dstats;

    /* `cursor` (cursor.h; upsert only): the run reads past mark_old
     * (cursor_run) or everything (cursor_why says why); mark_new is the
     * greatest value it read, recorded with its last hashes frame */
    int64_t cursor_idx;           /* the cursor's result column; -1: none */
    int cursor_run;
    int cursor_by_instant;        /* PostgreSQL: timestamps by instant */
    const char *cursor_why;       /* static text */
    uint64_t cursor_sig;
    zx_cursor_mark mark_old, mark_new;
    unsigned char mark_bytes[ZX_CURSOR_ENC_MAX];

    zx_query *q;
    const zx_dcol *cols;
    size_t ncols;
    size_t key_idx[ZX_FRAME_MAX_KEY_COLUMNS];
    size_t nkeys;
    uint64_t seed;

    zx_store *store;
    zx_spill_budget budget;       /* max_spill_bytes, every spill together */
    zx_spill rows, hashes, deletes;
    zx_spill pre;                 /* mirror: the new keys, recorded (row hash
                                     0: "sent, version unknown") before
                                     anything is sent (run_prerecord) */
    int prerecording;             /* run_record_hashes reads pre */
    zx_keysort *keys;
    int hashes_from_keys;         /* nothing was stored (each key new, none
                                     deleted) and the keys are in memory:
                                     the hashes to record are the sorted
                                     keys, read again from the sorter, not
                                     put in the hashes spill */

    zx_rowset rs, send;
    zx_value *vals;
    zx_buf scratch, kv, rec;
    zx_buf fb;

    uint64_t read, inserted, updated, unchanged, deleted, to_send, sent, dup_keys;
    uint64_t ordinal;             /* sending: the result row the batch starts at */
    unsigned char *marks;         /* upsert/mirror: bit i set = row i of the
                                     result (in read order) is to be sent */
    size_t marks_bytes;
    unsigned char *upd_marks;     /* the same, bit i set = row i replaces a
                                     row an earlier run sent (its key was
                                     stored): zx_dest_run.row_seen */
    size_t upd_bytes;
    /* rows and keys the destination refused one by one
     * (zx_dest_row_failed): their hashes are not recorded.  batch_*: the
     * result ordinals of the rows, the key hashes of the keys, of the
     * batch being handed over, by their place in it. */
    uint64_t *failed_ord, *batch_ord;
    size_t nfailed_ord, capfailed_ord, nbatch_ord, capbatch_ord;
    unsigned char *failed_kh, *batch_kh;   /* ZX_SYNC_KEYHASH_LEN each */
    size_t nfailed_kh, capfailed_kh, nbatch_kh, capbatch_kh;
    int failed_over;              /* more than FAILED_MAX, or out of memory */
    int failed_bad;               /* a row outside its batch was reported */
    json_t *sample, *sample_deletes, *dups;
    int64_t started_ms, last_status_ms;
    int64_t started_us;           /* wall clock, for its progress */
    uint64_t expect_read;         /* rows it expects to read: the last whole
                                     read's (zx_worker_args), else the
                                     planner's estimate (query.h), else 0 */
    uint64_t compared;            /* keys merged so far (comparing) */
    const char *phase;
    int64_t phase_at, phase_ms[4];    /* time in reading, comparing, sending,
                                         recording */
    char err[1024];
} srun;

/* What the key sorter keeps of a row (after its key hash): its row hash
 * and its place in the result, then its key as JSON.  A put in the hashes
 * spill is the key hash, then this, then the key's JSON; a delete is the
 * key hash alone.  The deletes spill holds the key hash, then its JSON. */
typedef struct keyrec {
    uint64_t rh;
    uint64_t ordinal;
} keyrec;

/* Every function below returns 0, or -1 with r->err set, unless it says
 * otherwise. */

/* ---- run.c: status ------------------------------------------------------ */

/* Publish the run's status (run.h) in state `state` ("running", or the
 * final one), and its progress (zx_src_set_progress: the phase, rows done
 * and expected in it; none once final). */
void run_put_status(srun *r, const char *state);

/* Enter phase ph ("reading", "comparing", "sending", "recording"): the
 * time spent in each is logged when the run ends. */
void run_set_phase(srun *r, const char *ph);

/* Publish the "running" status, at most every 500 ms. */
void run_progress(srun *r);

/* ---- run_cursor.c: the cursor ------------------------------------------- */

/* Open r->q: the sync's query, or with a cursor the query past the
 * stored mark (its first run, --full, a changed key, query or cursor, a
 * damaged mark: the whole query); a cursor column missing from the
 * result fails the run, naming it.  Sets cursor_idx (-1 without a
 * cursor). */
int run_query_open(srun *r, const zx_query_limits *lim);

/* Fold the cursor column's value of a row read into mark_new; a value
 * that cannot be a cursor fails the run, naming the column. */
int run_cursor_see(srun *r, const zx_value *v);

/* The mark to record with the run's last hashes frame: 1 and *pos set
 * (its bytes in r->mark_bytes), or 0: none (no cursor, nothing read, a
 * preview, or a row the destination refused: the old mark stays so that
 * the next run reads that row again). */
int run_cursor_pos(srun *r, zx_frame_pos *pos);

/* m as text (an integer in a static buffer, valid until the next call;
 * "" with no value), for logs and the run's status. */
const char *run_cursor_text(const zx_cursor_mark *m);

/* ---- run_read.c: read --------------------------------------------------- */

/* Run the query and read its result to the end: kept in the spill (or,
 * streamed, sent at once), keys to the sorter; the query is closed. */
int run_read_result(srun *r);

/* The row (vals, r->ncols values) as a JSON object, for a preview's
 * sample; NULL out of memory.  The caller owns it. */
json_t *run_row_json(srun *r, const zx_value *vals);

/* ---- run_compare.c: compare --------------------------------------------- */

/* Merge the sorted result keys with the stored ones: counts, the rows to
 * send marked, the hashes and deletes to record spilled; a duplicate key
 * fails the run. */
int run_merge_keys(srun *r);

/* Whether row `ordinal` of the result (read order) is marked to send. */
int run_marked(const srun *r, uint64_t ordinal);
/* Whether row `ordinal` (marked) replaces a row an earlier run sent: 1, or
 * 0 (its key is new). */
int run_updated(const srun *r, uint64_t ordinal);

/* A preview of an upsert or mirror: a sample of the rows it would send. */
int run_sample_marked(srun *r);

/* ---- run_deliver.c: deliver --------------------------------------------- */

/* Find and open the destination (only checked for a preview). */
int run_open_dest(srun *r);

/* Begin the destination's transaction. */
int run_deliver_begin(srun *r);

/* Hand rs to the destination; a value it could not hold fails the run. */
int run_dest_write(srun *r, const zx_rowset *rs);

/* Send the deletes (mirror) and commit the destination's transaction. */
int run_deliver_end(srun *r);

/* Begin, send the rows kept in the spill (those marked), end. */
int run_deliver(srun *r);

/* A streamed keyed run (stream_keyed): hand the batch just read, r->rs,
 * result rows first.. on, every one of them, to the destination (begun
 * on the first batch); refused rows are remembered by their ordinals as
 * in run_deliver. */
int run_send_read(srun *r, uint64_t first);

/* Whether the row at result ordinal ord (a put) or the key with hash kh
 * (a delete: ord UINT64_MAX) was refused by the destination: its hash is
 * then not recorded.  The failed lists are sorted first
 * (run_failed_sort). */
int run_failed(const srun *r, uint64_t ord, const unsigned char *kh);
void run_failed_sort(srun *r);

/* ---- run_record.c: record ----------------------------------------------- */

/* Hand the new hashes to the writer in row-hashes frames; returns once
 * each is published (the worker ends when the writer committed them). */
int run_record_hashes(srun *r);

/* Mirror: record each key new to the destination with row hash 0 and wait
 * until the writer committed them, before anything is sent.  A run cut
 * after sending some of them (its worker killed, zxd stopped, a commit
 * whose hashes were never recorded) then leaves them known: the next run
 * sends them again (0 matches no row hash) or, gone from the result,
 * deletes them from the destination, which would otherwise keep them for
 * ever. */
int run_prerecord(srun *r);

/* Whether this run records its hashes before its destination commits,
 * marked unconfirmed (proto/frame.h, "Row-hashes frames"), so that the
 * writer stores them while the destination builds its key and commits:
 * a stream_keyed upsert that read rows (every key new; a row refused
 * while sending is not recorded, as ever), with a run id.  The run then
 * sets r->unconfirmed to its id, and run_record_hashes sends them with
 * "hp" = that id (the cursor's mark waits for the confirmation).  A run
 * that dies or fails before run_confirm_hashes leaves them unconfirmed:
 * the next run sends every row and the writer forgets them with its
 * first hashes. */
int run_hashes_early(const srun *r);

/* Once the destination committed: one frame with "hc" = the run's id
 * (and the cursor's mark), which makes the hashes hold.  A row or key
 * refused since they were recorded leaves them unconfirmed instead
 * (logged). */
int run_confirm_hashes(srun *r);

#endif
