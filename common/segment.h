/*
 * segment.h — the shared-memory segment of one pipeline.
 *
 * The supervisor creates it (memfd + mmap) when a pipeline is added and
 * keeps it until the pipeline is removed, so that frames already published
 * survive the crash of any other process.  Layout:
 *
 *   [zx_seg_hdr, 16 KiB] magic, version, status words, counters, the
 *                        source's status text
 *   [ring "in"]          gateway → stream worker: push requests (proto/push.h)
 *   [ring "out"]         stream worker → gateway: replies (proto/push.h)
 *   [ring "frames"]      stream worker → writer: frames (proto/frame.h)
 *
 * The "in" and "out" rings exist only for sources the gateway feeds (HTTP
 * push): a segment created with in_cap 0 has neither (in_size 0; seg->in
 * and seg->out are then zeroed and must not be used).
 *
 * Every shared field says who writes it.  Status words and counters are
 * read and written with relaxed atomics: nothing is published through
 * them.  The one exception is writer_error: its text is published by a
 * release store of writer_error_set and read after an acquire load.
 *
 * Wake-ups: each process has one eventfd (created by the supervisor, kept
 * across restarts): the writer's, the gateway's, and one per pipeline for
 * its worker.  A ring side wakes its peer's eventfd.
 */
#ifndef ZX_COMMON_SEGMENT_H
#define ZX_COMMON_SEGMENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ring.h"

#define ZX_SEG_MAGIC 0x5a58534547303031ull /* "ZXSEG001" */
#define ZX_SEG_VERSION 8
#define ZX_SEG_HDR_SIZE 20480
#define ZX_SEG_SOURCE_STATUS_MAX 12288  /* bytes of the source's status JSON */
#define ZX_SEG_SOURCE_ERROR_MAX 512
#define ZX_SEG_SOURCE_NOTE_MAX 1024    /* bytes of a source's feed event */
#define ZX_SEG_WRITER_TABLES_MAX 1536  /* bytes of the writer's parked tables line */
#define ZX_SEG_FORWARD_STATUS_MAX 384  /* bytes of the forwarder's status JSON */
/* Upper bounds of the writer's histograms (supervisor/metrics.c prints
 * them as Prometheus buckets; one more slot counts what passes the last):
 * commit latency in µs, rows of a pipeline per writer transaction. */
#define ZX_SEG_LAT_BOUNDS_US {5000, 10000, 25000, 50000, 100000, 250000, 500000, \
                              1000000, 2500000, 5000000, 10000000, 30000000}
#define ZX_SEG_LAT_SLOTS 13
#define ZX_SEG_TXN_BOUNDS {1, 10, 100, 1000, 10000, 100000}
#define ZX_SEG_TXN_SLOTS 7
#define ZX_SEG_OUT_CAP (1024u * 1024u)   /* the reply ring's capacity */
/* What a segment with rings of these capacities maps, at most: its
 * header, each ring rounded up to whole pages with its own header (under
 * one page), and the reply ring when there is a request ring (in_cap > 0).
 * The ring budget (conf) counts this. */
#define ZX_SEG_MAX_BYTES(in_cap, frames_cap) \
    ((uint64_t)ZX_SEG_HDR_SIZE + (frames_cap) + 8192u + \
     ((in_cap) ? (uint64_t)(in_cap) + ZX_SEG_OUT_CAP + 2u * 8192u : 0u))

/* Long work in progress in a pipeline's worker (a sync run, the CDC
 * initial copy, a backfill): generic, so that every such work shows the
 * same way (`zxctl status`, the feed, `zxctl run --wait`).  what[0] ==
 * '\0': none.  The rate and the time left are the reader's (supervisor,
 * common/progress.h), from successive copies. */
#define ZX_SEG_PROGRESS_WHAT_MAX 96
#define ZX_SEG_PROGRESS_EXACT 0x1u    /* expected is exact, not an estimate */
typedef struct zx_seg_progress {
    char what[ZX_SEG_PROGRESS_WHAT_MAX]; /* "reading", "copying public.orders" */
    uint64_t done;                  /* rows done so far */
    uint64_t expected;              /* rows expected in all, 0 unknown */
    int64_t started_us;             /* wall clock: when the work began */
    int64_t updated_us;             /* wall clock: when done was counted */
    uint32_t flags;                 /* ZX_SEG_PROGRESS_* */
    uint32_t pad;
} zx_seg_progress;

typedef struct zx_seg_hdr {
    uint64_t magic;                 /* set once by the supervisor */
    uint32_t version;
    uint32_t pad0;
    char name[64];                  /* pipeline name; set once */
    uint64_t epoch;                 /* random, set once: frame sequence
                                       numbers restart at 1 in a new
                                       segment, so checkpoints are kept per
                                       (pipeline, epoch) */
    uint64_t in_off, in_size;       /* ring offsets; set once */
    uint64_t out_off, out_size;
    uint64_t frames_off, frames_size;

    /* written by the supervisor */
    _Atomic uint32_t worker_up;     /* 1 while the stream worker runs */
    _Atomic uint32_t worker_stopped;/* 1 when stopped on purpose or failed */
    _Atomic uint32_t writer_up;     /* 1 while the writer runs */
    _Atomic uint32_t worker_failed; /* 1 when it crashed too often (not
                                       restarted until zxctl start) */

    /* written by the stream worker */
    _Atomic uint32_t worker_ready;  /* 1 once it drained and serves requests */

    /* written by the writer (running totals since the segment was made,
     * seeded from LMDB counters when the writer attaches) */
    _Atomic uint64_t rows;
    _Atomic uint64_t rejects;
    _Atomic uint64_t batches;       /* frames applied */
    _Atomic uint64_t bytes;         /* bytes of those frames */
    _Atomic int64_t last_commit_us; /* wall clock of the last commit */
    _Atomic uint64_t frame_errors;  /* frames the writer could not decode */
    /* Why the writer holds this pipeline's frames back (its table refuses
     * them), "" when it does not.  The writer writes the text, then
     * writer_error_set (release); readers check the flag (acquire) and copy
     * the text: a status line, where a rare torn copy is harmless. */
    _Atomic uint32_t writer_error_set;
    char writer_error[256];
    /* 1 while the writer cannot reach the workspace at all (writer_error
     * then says why): /healthz answers 503 */
    _Atomic uint32_t workspace_down;

    /* written by the stream worker (workers/sources/runtime.c): the
     * source's problem ("" none) and status (a JSON object).  Each is a
     * seqlock: the writer makes the counter odd, writes, makes it even
     * (release); a reader copies the text between two equal even reads
     * (acquire) and retries otherwise (a few times, then gives up). */
    _Atomic uint32_t source_error_seq;
    char source_error[ZX_SEG_SOURCE_ERROR_MAX];
    _Atomic uint32_t source_status_seq;
    char source_status[ZX_SEG_SOURCE_STATUS_MAX];
    /* The source's last event for the feed (a JSON object text, "" none),
     * a seqlock too: the supervisor's tick feeds it once per change of
     * the counter (of two within one tick, only the last). */
    _Atomic uint32_t source_note_seq;
    char source_note[ZX_SEG_SOURCE_NOTE_MAX];
    /* written by the writer (workers/writer/writer_park.c): the tables of this
     * pipeline whose changes it parks because they refuse them, as one
     * line ("ccase (why): 3 changes parked, 1234 bytes; ..."), "" none.  A
     * seqlock like source_error. */
    _Atomic uint32_t writer_tables_seq;
    char writer_tables[ZX_SEG_WRITER_TABLES_MAX];
    /* written by the stream worker's forwarder (workers/forward/forward.h),
     * "" when the pipeline does not forward: a JSON object (where to,
     * what it published, what waits in the journal, its last error).  A
     * seqlock like source_error. */
    _Atomic uint32_t forward_status_seq;
    char forward_status[ZX_SEG_FORWARD_STATUS_MAX];

    /* written by the writer after each commit (values_nulled and
     * columns_added seeded from LMDB like rows; the histograms count since
     * the segment was made): misfit values stored as NULL, columns it
     * added to the pipeline's tables; per frame, the time from its
     * ingestion by the source to the commit (µs; slot k counts those
     * <= bound k of ZX_SEG_LAT_BOUNDS_US, the last slot the rest); per
     * transaction that held the pipeline's frames, its rows of them
     * (ZX_SEG_TXN_BOUNDS the same way) */
    _Atomic uint64_t values_nulled;
    _Atomic uint64_t columns_added;
    _Atomic uint64_t commit_lat[ZX_SEG_LAT_SLOTS];
    _Atomic uint64_t commit_lat_sum_us;
    _Atomic uint64_t txn_rows[ZX_SEG_TXN_SLOTS];
    _Atomic uint64_t txn_rows_sum;

    /* written by the worker (workers/sources/runtime.c,
     * zx_src_set_progress): its long work in progress, read by the
     * supervisor.  A seqlock like source_error over the whole struct
     * (zx_segment_progress_read / _write). */
    _Atomic uint32_t progress_seq;
    zx_seg_progress progress;

    /* written by the writer after the store commit of a cycle, before it
     * releases the cycle's frames (workers/writer/writer_fence.c; a shared
     * Postgres workspace only, else 0): frames whose rows it did not apply
     * because another zxd had written that upstream range (the store then
     * holds the workspace's position of their parts), those among them
     * that began below the stored position, and frames applied that began
     * past it.  frames_fenced is a release store: the stream worker loads
     * it with acquire and then reads the store (kafka_fence.c). */
    _Atomic uint64_t frames_fenced;
    _Atomic uint64_t fence_duplicates;
    _Atomic uint64_t fence_gaps;

    /* written by the gateway (workers/gateway/gateway_push.c): the lowest
     * frame an answer it holds waits for (proto/push.h,
     * ZX_PUSH_REP_AFTER_COMMIT), 0 none.  The writer, after releasing
     * frames up to S (acked_seq stored, then a seq_cst fence), wakes the
     * gateway if 0 < gw_commit_wait <= S; the gateway, after storing it
     * (then a fence), reads acked_seq again: one of the two sees the
     * other, so no answer waits for a wake-up that never comes. */
    _Atomic uint64_t gw_commit_wait;
} zx_seg_hdr;

_Static_assert(sizeof(zx_seg_hdr) <= ZX_SEG_HDR_SIZE, "segment header over its 20 KiB");

typedef struct zx_segment {
    zx_seg_hdr *hdr;
    size_t size;
    int fd;           /* memfd, -1 once closed */
    zx_ring in, out, frames;
} zx_segment;

/* Create a segment for pipeline `name` whose frames ring holds
 * frames_cap bytes and whose request ring holds in_cap bytes.  Returns 0
 * or -1 with a message in err.  The caller owns seg->fd and the mapping
 * (zx_segment_close). */
int zx_segment_create(zx_segment *seg, const char *name, uint64_t in_cap,
                      uint64_t frames_cap, char *err, size_t errlen);

/* Map a segment from its memfd (another process).  Does not take
 * ownership of fd (the caller may close it afterwards).  0 or -1. */
int zx_segment_map(zx_segment *seg, int fd, char *err, size_t errlen);

/* Copy a seqlocked text of the header (source_error or source_status,
 * with its counter) into out (cap bytes, NUL-terminated; "" when a
 * consistent copy could not be had after a few tries).  Returns strlen. */
size_t zx_segment_read_text(_Atomic uint32_t *seq, const char *text, size_t textcap,
                            char *out, size_t cap);

/* Write text (cut to fit textcap - 1 bytes) under its seqlock.  One
 * writer at a time (the stream worker). */
void zx_segment_write_text(_Atomic uint32_t *seq, char *text, size_t textcap,
                           const char *val);

/* Copy the header's progress under its seqlock into *out.  0, or -1
 * when no consistent copy could be had after a few tries (*out zeroed:
 * no work in progress). */
int zx_segment_progress_read(const zx_seg_hdr *h, zx_seg_progress *out);

/* Write *val (NULL: none in progress) under the seqlock.  One writer at a
 * time (the worker). */
void zx_segment_progress_write(zx_seg_hdr *h, const zx_seg_progress *val);

/* Unmap and close the fd if still open.  NULL-safe, idempotent. */
void zx_segment_close(zx_segment *seg);

#endif
