/*
 * source.h — what a stream source is, and the worker runtime every source
 * runs in (docs/architecture.md §6; the shape of a Fluent Bit input plugin).
 *
 * A source is a plug-in (conf/plugin.h): a folder, its `const zx_source`
 * (name, callbacks) and its `<name>_plugin.c` (its option rows, checks,
 * `zxctl test`), one line in workers/plugins.def.  The supervisor
 * forks one worker process per stream pipeline and calls zx_source_main
 * with the source found by the pipeline's `source:` name.
 *
 * The runtime (runtime.c) owns what every source needs, so that a source
 * only produces rows and an opaque position:
 *   - at start, it waits until every frame an earlier incarnation of the
 *     worker published has been committed by the writer, then loads the
 *     pipeline's committed positions (per part: partition, shard...) from
 *     the LMDB store, then calls open;
 *   - encoding frames (proto/frame.h) and publishing them in the segment's
 *     frames ring with back-pressure: bytes (the ring) and time (while the
 *     writer runs, a frame older than server.max_queue_delay makes new ones
 *     wait);
 *   - acknowledgements: when the writer has committed frames, it calls
 *     acked(seq) with the highest committed sequence number;
 *   - stopping: on SIGTERM it sets zx_src_stopping, keeps calling poll until
 *     the source says drained and every frame is committed (at most 8 s),
 *     then calls close.
 *
 * A source must never: write the workspace or LMDB (only the writer does),
 * commit an upstream position (a Kafka offset, a WAL LSN) before acked()
 * covered the frame that carried it, block in poll for more than about
 * 100 ms (acks and stop must be seen), or print a secret.
 */
#ifndef ZX_SOURCES_SOURCE_H
#define ZX_SOURCES_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "common/rowset.h"
#include "common/segment.h"
#include "conf/config.h"
#include "proto/frame.h"

/* What the supervisor hands a worker (valid for the worker's life). */
typedef struct zx_worker_args {
    const zx_conf *conf;
    const zx_conf_pipeline *pipeline;
    zx_segment *seg;       /* mapped; owned by the caller */
    int self_efd;          /* this worker's eventfd (rings wake it) */
    int writer_efd;
    int gateway_efd;       /* -1 for sources without ZX_SOURCE_GATEWAY */
    /* a reverse sync's run (the sync plug-in's worker, workers/syncs/):
     * which run and how; 0 for streams */
    uint64_t run_id;
    unsigned run_flags;    /* ZX_RUN_PREVIEW, ZX_RUN_FULL, ZX_RUN_ONEOFF */
    uint64_t run_expect_rows; /* rows the last run of this sync that read
                                 its whole result read (its progress's
                                 expected), 0 unknown */
} zx_worker_args;

#define ZX_RUN_PREVIEW 0x1u   /* count and sample what would be sent; send
                                 nothing, record nothing */
#define ZX_RUN_FULL    0x2u   /* upsert/mirror: ignore the stored hashes,
                                 send every row (and record them anew) */
#define ZX_RUN_ONEOFF  0x4u   /* a one-off send (`zxctl send`): no stored
                                 hashes read or written; upsert sends every
                                 row by key */

typedef struct zx_src zx_src;   /* the runtime, one per worker process */
typedef struct zx_conf_connection zx_conf_connection; /* conf/config.h */

/* poll's answer: what the runtime does next. */
enum {
    ZX_SRC_REFUSED = -2, /* give up for good: no restart can help (the
                            upstream refuses this configuration: a table
                            without a key, wal_level, a password or a right
                            refused, a Kafka broker's certificate check or
                            missing ACL; or a policy says stop, as a Kafka
                            topic reset with on_topic_reset: fail): the
                            worker exits ZX_EXIT_FATAL_CONFIG and the
                            supervisor marks the pipeline failed at once,
                            with the source's error (zx_src_set_error) as
                            the reason */
    ZX_SRC_FATAL = -1,   /* give up: the worker exits 1 (and is restarted
                            with backoff by the supervisor) */
    ZX_SRC_IDLE = 0,     /* nothing to do: wait for the source's fd, an
                            ack or the stop, at most 1 s */
    ZX_SRC_BUSY = 1,     /* more work waiting: call poll again at once */
    ZX_SRC_BLOCKED = 2,  /* waiting for room in the ring: wait for an ack,
                            at most 20 ms */
    ZX_SRC_DONE = 3,     /* the work is finished (a sync run): wait until
                            every frame is committed (or SIGTERM), then
                            close, and the worker exits 0 */
};

#define ZX_SOURCE_GATEWAY 0x1u  /* the gateway feeds it: its segment has the
                                   "in" and "out" rings (proto/push.h) */
#define ZX_SOURCE_POSITIONS 0x2u /* it resumes from committed positions: the
                                   runtime also waits for the writer to be
                                   up (it reconciles the store with the
                                   workspace first) before loading them; a
                                   source without it starts while the writer
                                   is down (the ring absorbs the outage) */
#define ZX_SOURCE_ONE_READER 0x4u /* one reader upstream at a time (a
                                   replication slot, a stream's shards read
                                   from stored positions): with a shared
                                   workspace it runs only on the zxd
                                   holding its lease (supervisor/lease.c) */

typedef struct zx_source {
    const char *name;      /* the `source:` value */
    unsigned flags;        /* ZX_SOURCE_* */
    const char *help;      /* one line for the docs */

    /* Make the source's state (*state, freed by close).  The committed
     * positions are available (zx_src_position*).  0, or -1 with err set:
     * a failure that may pass (a server down or restarting): the runtime
     * calls open again in this worker, 1 s then doubling up to 30 s, with
     * err in zxctl status, until it succeeds or the worker is stopped; or
     * ZX_SRC_REFUSED with err set: a refusal no restart can fix (the worker
     * exits ZX_EXIT_FATAL_CONFIG and is not restarted). */
    int (*open)(zx_src *rt, void **state, char *err, size_t errlen);

    /* Do a bounded amount of work (read input, publish frames); never
     * blocks long.  Returns ZX_SRC_IDLE, _BUSY, _BLOCKED, _FATAL or
     * _REFUSED (after zx_src_set_error with the reason). */
    int (*poll)(zx_src *rt, void *state);

    /* Optional: a descriptor that becomes readable when the source has
     * input (the runtime polls it while IDLE), or -1. */
    int (*fd)(void *state);

    /* The writer has committed every frame up to seq (called once per
     * change, in increasing order).  Now the source may commit upstream
     * whatever those frames carried.  Optional. */
    void (*acked)(zx_src *rt, void *state, uint64_t seq);

    /* While stopping: 1 when the source has nothing left it must finish
     * (answers owed, a frame it holds).  Optional (NULL = always 1). */
    int (*drained)(zx_src *rt, void *state);

    /* Free the state.  Called once, after the last frame was committed or
     * the stop deadline passed. */
    void (*close)(zx_src *rt, void *state);
} zx_source;

/* ---- the registry (registry.c, from the plug-ins of workers/plugins.def) */

/* The worker of the pipeline plug-in called name (zx_plugin_of_pipeline: a
 * source's, or the sync's for "sync"), or NULL. */
const zx_source *zx_source_find(const char *name);

/* `zxctl test` of the source (or connection kind) called name: the test
 * of its plug-in (conf/plugin.h: zx_plugin.test; for a connection kind,
 * of the first source plug-in taking that kind that has one).  Runs in a
 * short-lived process of its own, with a deadline of timeout_ms; writes
 * one human-readable paragraph into out (what was found, e.g. a topic's
 * partitions; or precisely what failed) and returns 0 when everything
 * needed works, -1 otherwise; p may be NULL when only a connection is
 * tested.  NULL when there is nothing to test (http, an unknown name). */
typedef int (*zx_source_test_fn)(const zx_conf *conf, const zx_conf_pipeline *p,
                                 const zx_conf_connection *c, int timeout_ms, char *out,
                                 size_t outlen);
zx_source_test_fn zx_source_tester(const char *name);

/* ---- the runtime (runtime.c) --------------------------------------- */

/* Run the worker of a->pipeline with source src until SIGTERM.  Returns the
 * process exit code: 0 after a clean drain, 1 on a fatal error,
 * ZX_EXIT_FATAL_CONFIG (proto/control.h) when open or poll answered
 * ZX_SRC_REFUSED. */
int zx_source_main(const zx_source *src, const zx_worker_args *a);

const zx_worker_args *zx_src_args(zx_src *rt);

/* 1 once SIGTERM came: take no new input, finish what is owed. */
int zx_src_stopping(zx_src *rt);

/* Result of zx_src_publish / zx_src_retry. */
typedef enum {
    ZX_PUB_OK = 0,          /* published; *seq set */
    ZX_PUB_WAIT = 1,        /* no room now (ring full, or the writer is
                               behind by server.max_queue_delay): the frame
                               is kept by the runtime; call zx_src_retry
                               later (or zx_src_drop) */
    ZX_PUB_TOO_BIG = 2,     /* larger than the ring can ever hold: split */
    ZX_PUB_NOMEM = 3,
} zx_pub_result;

/* Encode one frame of m and rs (m->pipeline and m->table NULL: the
 * pipeline's name and table) and publish it.  While a frame is kept
 * (ZX_PUB_WAIT) no other may be published: retry or drop it first
 * (ZX_PUB_WAIT is returned again at once).  m and rs are only read. */
zx_pub_result zx_src_publish(zx_src *rt, const zx_frame_meta *m, const zx_rowset *rs,
                             uint64_t *seq);
/* Publish the kept frame.  ZX_PUB_OK (and *seq), ZX_PUB_WAIT. */
zx_pub_result zx_src_retry(zx_src *rt, uint64_t *seq);
/* 1 while a frame is kept. */
int zx_src_kept(zx_src *rt);
/* Forget the kept frame (nothing of it is published). */
void zx_src_drop(zx_src *rt);

/* Largest frame the ring takes (bytes): a source sizes its batches well
 * under it (a quarter is a good target). */
uint64_t zx_src_max_frame(zx_src *rt);

/* Keep this worker's frames within the first `bytes` of its ring while
 * they fit (zx_ring_soft_cap, common/ring.h): a source that can pause its
 * upstream (Kafka) then holds and touches only that much of the ring,
 * whatever the rate, and a frame larger still goes through the whole ring.
 * 0, or at least the ring's capacity: the whole ring.  Returns the largest
 * frame of that working set (what zx_src_max_frame says of a ring of
 * `bytes`, at most zx_src_max_frame), to size batches and read-ahead by. */
uint64_t zx_src_ring_working_set(zx_src *rt, uint64_t bytes);

/* Highest frame sequence number committed by the writer / published. */
uint64_t zx_src_acked_seq(zx_src *rt);
uint64_t zx_src_published_seq(zx_src *rt);

/* Wait up to timeout_ms for a wake-up of this worker (an ack, a ring
 * event) or the stop; for a source that must wait inside a callback (a
 * Kafka rebalance waiting for its frames to be committed).  Then checks
 * acks (calling acked() is left to the runtime's loop). */
void zx_src_wait(zx_src *rt, int timeout_ms);

/* The committed positions, loaded at start (before open) from the store:
 * the last value the writer committed for every part.  count: how many
 * parts have one; find(part) returns 0 and the value bytes, or -1 when the
 * part has none.  Valid for the worker's life. */
size_t zx_src_positions_count(zx_src *rt);
int zx_src_position_find(zx_src *rt, const char *part, const void **val, size_t *len);
/* Read the committed positions from the store again (a source that
 * shares its upstream with other zxd: the writer copies the workspace's
 * positions into the store when it fences a frame, workers/writer/
 * writer_fence.c).  Values found earlier are invalid afterwards.  Opens
 * the store read-only for the call: seldom, not per frame.  0, or -1
 * with err set (the positions had before stay). */
int zx_src_positions_reload(zx_src *rt, char *err, size_t errlen);

/* A `table` template's tables (max_tables, workers/sources/debezium/debezium.h)
 * counted again from the committed positions whose part starts with
 * ZX_DBZ_TABLE_PART.  t with no template (t->max 0, no pattern, nothing
 * made): nothing.  0; -1 out of memory. */
struct zx_dbz_tables;
int zx_dbz_tables_seed(struct zx_dbz_tables *t, zx_src *rt);

/* The source's status, shown by `zxctl status` under the pipeline's
 * "source": a JSON object text (e.g. {"state":"consuming","partitions":
 * [{"topic":..,"partition":..,"offset":..,"high":..,"lag":..}]}), copied
 * into the segment (cut at ZX_SEG_SOURCE_STATUS_MAX bytes: keep it short;
 * a cut object is replaced by {"truncated":true}).  Cheap: call it at most
 * every second or when something changes. */
void zx_src_set_status(zx_src *rt, const char *json);

/* The worker's long work in progress (a sync run's phase, the initial
 * copy of a table, a backfill), shown by `zxctl status`, the feed and
 * `zxctl run --wait` with a rate and the time left the supervisor works
 * out (common/progress.h): what it does ("reading", "copying
 * public.orders"; cut at ZX_SEG_PROGRESS_WHAT_MAX - 1 bytes), rows done,
 * rows expected (0 unknown), flags (ZX_SEG_PROGRESS_EXACT: expected is
 * exact, not an estimate), when the work began (wall clock µs).  what
 * NULL or "": no work in progress (say so when it ends).  Cheap: call it
 * at most a few times a second. */
void zx_src_set_progress(zx_src *rt, const char *what, uint64_t done, uint64_t expected,
                         unsigned flags, int64_t started_us);

/* Send an event to the feed: {"event": event, "message": message} (the
 * supervisor adds the pipeline and the time), picked up within ~100 ms
 * (of two sent within that time, only the last).  For what a user must
 * hear of that is not an error (the caller logs it too). */
void zx_src_feed(zx_src *rt, const char *event, const char *message);

/* The source's current problem in one sentence (NULL or "" = none): shown
 * by zxctl status and /healthz, logged and sent to the feed once per
 * change.  Must not contain a secret. */
void zx_src_set_error(zx_src *rt, const char *msg);

#endif
