/*
 * writer.c — drain the rings, group-commit to the workspace, record in
 * LMDB, acknowledge.  See writer.h; the parts it uses (the supervisor's
 * channel, applying a frame, parked tables, the store transaction) are
 * listed in writer_int.h.
 *
 * It must never: acknowledge a frame before both commits, stop on bad data
 * (a frame it cannot decode is logged, counted and skipped), or apply a
 * frame twice (the workspace checkpoint decides).
 */
#include "workers/writer/writer_int.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/instance.h"
#include "common/log.h"
#include "common/rowset.h"
#include "common/segment.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "proto/chan.h"
#include "proto/control.h"
#include "proto/frame.h"
#include "workers/writer/forget.h"
#include "workers/writer/keyseq.h"
#include "workers/writer/writer_lease.h"
#include "workers/writer/writer_notice.h"
#include "store/store.h"
#include "workers/writer/workspace.h"

static volatile sig_atomic_t stop_requested;

static void on_term(int sig)
{
    (void)sig;
    stop_requested = 1;
}

void wr_events_flush(writer *w)
{
    for (size_t off = 0; off < w->events.len;) {
        const char *s = w->events.p + off;
        zx_chan_send(w->a->chan, ZX_CHAN_EVENT, s, NULL, 0);
        off += strlen(s) + 1;
    }
    zx_buf_reset(&w->events);
    w->events_sent_ms = zx_mono_ms();
}

void wr_emit(writer *w, json_t *ev)
{
    char *s = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    if (!s) {
        zx_warn("event=feed_event_lost error=\"out of memory\"");
    } else if (zx_buf_put(&w->events, s, strlen(s) + 1) < 0) {
        wr_events_flush(w); /* out of memory: what is queued, then this one */
        zx_chan_send(w->a->chan, ZX_CHAN_EVENT, s, NULL, 0);
    } else if (w->events.len >= EVENTS_MAX_BYTES) {
        wr_events_flush(w);
    }
    free(s);
    json_decref(ev);
}

/* p's table refused a frame for a reason that will not go away by itself
 * (the table is a view, a trigger refuses every row...): hold p's frames
 * back in its ring, say why, retry later; every other pipeline goes on. */
static void block_pipe(writer *w, wpipe *p, uint64_t seq, const char *why)
{
    p->block_ms = p->block_ms ? (p->block_ms * 2 > 60000 ? 60000 : p->block_ms * 2) : 1000;
    p->blocked_until_ms = zx_mono_ms() + p->block_ms;
    zx_seg_hdr *h = p->seg.hdr;
    if (!atomic_load(&h->writer_error_set) || strcmp(h->writer_error, why) != 0) {
        snprintf(h->writer_error, sizeof(h->writer_error), "%s", why);
        atomic_store_explicit(&h->writer_error_set, 1, memory_order_release);
        char msg[400];
        snprintf(msg, sizeof(msg), "frames held back in the ring (retrying): %s", why);
        wr_emit(w, json_pack("{s:s, s:s, s:I, s:s}", "event", "error", "pipeline", p->name,
                          "seq", (json_int_t)seq, "message", msg));
    }
    zx_error("event=pipeline_blocked pipeline=%s seq=%llu retry_in_ms=%lld error=\"%s\"", p->name,
             (unsigned long long)seq, (long long)p->block_ms, why);
}

static void unblock_pipe(writer *w, wpipe *p)
{
    (void)w;
    p->block_ms = 0;
    p->blocked_until_ms = 0;
    if (atomic_load(&p->seg.hdr->writer_error_set)) {
        atomic_store(&p->seg.hdr->writer_error_set, 0);
        zx_info("event=pipeline_unblocked pipeline=%s", p->name);
    }
}

/* The workspace cannot be written at all (Postgres unreachable): every
 * pipeline says why, and /healthz answers 503, until a cycle commits. */
static void workspace_health(writer *w)
{
    const char *why = zx_ws_status(w->ws);
    if (!why && !w->ws_down)
        return;
    /* while down, every cycle: a pipeline attached meanwhile is told too */
    if (why && !(w->ws_down && strcmp(w->ws_why, why) == 0)) {
        snprintf(w->ws_why, sizeof(w->ws_why), "%s", why);
        zx_error("event=workspace_down error=\"%s\"", why);
    } else if (!why) {
        zx_info("event=workspace_up");
    }
    w->ws_down = why != NULL;
    for (int i = 0; i < MAX_PIPES; i++) {
        wpipe *p = &w->pipes[i];
        if (!p->used)
            continue;
        zx_seg_hdr *h = p->seg.hdr;
        if (why) {
            snprintf(h->writer_error, sizeof(h->writer_error), "%s", why);
            atomic_store_explicit(&h->writer_error_set, 1, memory_order_release);
        } else if (!p->block_ms) {
            atomic_store(&h->writer_error_set, 0);
        }
        atomic_store(&h->workspace_down, why != NULL);
    }
}

/* ---- parked tables (see ptable) ------------------------------------------ */

/* A checkpoint could not be read (the workspace was unreachable): read
 * every pipeline's again inside the transaction just begun, before any
 * frame is applied, or a frame committed before the failure would be
 * applied twice.  0, or -1 (err set). */
static int reread_checkpoints(writer *w, char *err, size_t errlen)
{
    for (int i = 0; i < MAX_PIPES; i++) {
        wpipe *p = &w->pipes[i];
        if (p->used && zx_ws_checkpoint_get(w->ws, p->ckpt_key, &p->ckpt) < 0) {
            snprintf(err, errlen, "cannot read the checkpoint of pipeline %s: %s", p->name,
                     zx_ws_errmsg(w->ws));
            return -1;
        }
    }
    w->ckpt_stale = 0;
    return 0;
}

/* Begin the cycle's transaction if not yet (*began), reading what a
 * failure left stale first.  0, or -1 (err set). */
int wr_begin_once(writer *w, int *began, char *err, size_t errlen)
{
    if (*began)
        return 0;
    if (zx_ws_begin(w->ws, err, errlen) < 0)
        return -1;
    *began = 1;
    if (w->ckpt_stale && reread_checkpoints(w, err, errlen) < 0)
        return -1;
    if (w->pt_stale && wr_pt_load(w) < 0)
        return zx_seterr(err, errlen, "cannot read _zx_parked: %s", zx_ws_errmsg(w->ws));
    return 0;
}

/* Drain every ring once (one pass), applying each frame inside the open
 * transaction (begun at the first frame).  Returns the frames applied in
 * this pass (>= 0), or -1 on a failure that needs a rollback (err set). */
static int drain_pass(writer *w, size_t *bytes, int *began, char *err, size_t errlen)
{
    int nframes = 0;
    int64_t now = zx_mono_ms();
    for (int k = 0; k < MAX_PIPES && *bytes < CYCLE_BYTES; k++) {
        int i = (w->first_pipe + k) % MAX_PIPES;
        wpipe *p = &w->pipes[i];
        if (!p->used || p->blocked_until_ms > now || wr_lease_blocks(w, p))
            continue;
        if (wr_replay_parked(w, p, bytes, began, &nframes, err, errlen) < 0)
            return -1;
        while (*bytes < CYCLE_BYTES) {
            const void *data;
            size_t len;
            uint64_t seq;
            zx_ring_cursor c = p->cur;
            zx_ring_result r = zx_ring_next(&p->seg.frames, &c, &data, &len, &seq);
            if (r == ZX_RING_WOULD_BLOCK)
                break;
            if (r != ZX_RING_OK) {
                zx_error("event=ring_corrupt pipeline=%s ring=frames", p->name);
                break;
            }
            if (wr_begin_once(w, began, err, errlen) < 0)
                return -1;
            /* one savepoint per frame: a table that refuses this frame
             * holds back only its own pipeline */
            if (zx_ws_savepoint(w->ws) < 0) {
                snprintf(err, errlen, "savepoint: %s", zx_ws_errmsg(w->ws));
                return -1;
            }
            int ar = wr_apply_frame(w, p, data, len, seq, &c, err, errlen);
            if (ar < 0) {
                if (ar != -2)
                    return -1;
                wr_drop_last_applied(w);
                if (zx_ws_savepoint_rollback(w->ws) < 0)
                    return -1;
                block_pipe(w, p, seq, err);
                break;
            }
            if (zx_ws_savepoint_release(w->ws) < 0) {
                snprintf(err, errlen, "release: %s", zx_ws_errmsg(w->ws));
                return -1;
            }
            if (p->block_ms)
                unblock_pipe(w, p);
            p->cur = c;
            *bytes += len;
            nframes++;
            if (w->served_first < 0)
                w->served_first = i;
        }
    }
    return nframes;
}

/* One cycle = one group-commit transaction.  Returns frames applied
 * (>= 0), or -1 after a failure that was rolled back (the frames stay in
 * their rings and are retried).
 *
 * Adaptive group commit.  The transaction is begun by the first frame
 * found and then held open only while frames keep arriving: after each
 * pass over the rings, another pass is made if the last one applied at
 * least one frame (frames were published while the previous pass ran:
 * other clients are active; the way PostgreSQL applies commit_delay only
 * with commit_siblings active); the transaction commits as soon as a pass
 * finds nothing new, or once workspace.commit_interval has passed since
 * its first frame, or once CYCLE_BYTES were applied.  So a lone frame (or
 * the last frames of a burst) is committed at once, never after an idle
 * window, while a steady stream of frames shares one transaction per
 * commit_interval.  commit_interval 0 makes every cycle a single pass.
 * Not done: waiting a little for the next frame when a pass finds none
 * (PostgreSQL's commit_delay).  Measured with a linger of up to 1 ms (4x
 * the mean gap between arrivals): 8 closed-loop ?wait=commit clients lost
 * a fifth of their rate and doubled their p50, while bursty non-waiting
 * pushes at 5,000/s were not committed less often (their gaps between
 * bursts exceed any linger short enough for a waiting client). */
/* Whether the cycle's store records are only each pipeline's applied
 * position and rows counter (pushes of an http stream without idempotency
 * keys, new columns or rejects): records that the workspace's own
 * checkpoint, committed with the rows, makes good if they are lost.  Such a
 * cycle releases its frames (answers the pushes waiting for the commit)
 * right after the workspace's commit and leaves its store records owed
 * (wr_store_owe): written with the next cycle that has other records, or
 * STORE_OWED_MS later.  A store transaction per cycle, whose sync stood
 * before the next cycle, cost 8 closed-loop ?wait=commit clients a
 * quarter of their rate (tests/bench/push_latency.sh). */
static int light_cycle(const writer *w)
{
    if (zx_keyseq_count(w->ks))
        return 0;
    for (size_t i = 0; i < w->nap; i++) {
        const applied *a = &w->ap[i];
        if (a->npos || a->dedup || a->keysig || a->nhashes || a->messages || a->rejects ||
            a->nrejcols || a->nnewcols || a->created || a->extra_values || a->fenced ||
            a->fence_dup || a->fence_gap || a->bad || a->skipped || a->parked || a->replayed)
            return 0;
    }
    return 1;
}

/* The segment counters and metrics of the cycle's frames, then the
 * release, once per pipeline, at its last frame of the cycle (the first
 * one met walking backwards): whoever sees the release (a push waiting for
 * its commit) sees the cycle's counters and metrics. */
static void release_applied(writer *w)
{
    int64_t now_us = zx_now_us();
    w->cycles++;
    for (size_t i = w->nap; i-- > 0;) {
        applied *a = &w->ap[i];
        zx_seg_hdr *h = a->p->seg.hdr;
        atomic_fetch_add(&h->rows, a->rows);
        atomic_fetch_add(&h->rejects, a->rejects);
        atomic_fetch_add(&h->batches, 1);
        atomic_fetch_add(&h->bytes, a->bytes);
        if (a->bad)
            atomic_fetch_add(&h->frame_errors, 1);
        atomic_store(&h->last_commit_us, now_us);
        wr_metrics_frame(a, now_us, w->cycles);
    }
    for (size_t i = 0; i < w->nap; i++)
        wr_metrics_txn(w->ap[i].p, w->cycles);
    for (size_t i = w->nap; i-- > 0;) {
        applied *a = &w->ap[i];
        if (!a->replayed && a->p->released_cycle != w->cycles) {
            a->p->released_cycle = w->cycles;
            zx_ring_release(&a->p->seg.frames, &a->after, 1);
            /* answers the gateway holds for these frames (segment.h) */
            atomic_thread_fence(memory_order_seq_cst);
            uint64_t want = atomic_load(&a->p->seg.hdr->gw_commit_wait);
            if (want && want <= zx_ring_acked_seq(&a->p->seg.frames) && w->a->gateway_efd >= 0)
                zx_ring_wake_fd(w->a->gateway_efd);
        }
    }
}

static int cycle(writer *w)
{
    size_t bytes = 0;
    int nframes = 0;
    int began = 0;
    char err[512] = "";
    w->nap = 0;
    w->served_first = -1;
    zx_keyseq_clear(w->ks);
    int64_t deadline_us = zx_mono_us() + (int64_t)w->a->conf->commit_interval_ms * 1000;
    for (;;) {
        int n = drain_pass(w, &bytes, &began, err, sizeof(err));
        if (n < 0)
            goto fail;
        nframes += n;
        if (n == 0 || bytes >= CYCLE_BYTES || zx_mono_us() >= deadline_us || stop_requested)
            break;
    }
    /* round robin: the next cycle starts after the pipeline served first in
     * this one, so that one busy pipeline filling CYCLE_BYTES cannot starve
     * the others */
    if (w->served_first >= 0)
        w->first_pipe = (w->served_first + 1) % MAX_PIPES;
    if (!began)
        return 0;
    /* a shared workspace: commit only under the leases still held, and
     * tell the other zxd which tables get rows */
    if (wr_write_checkpoints(w, err, sizeof(err)) < 0 || wr_lease_fence(w, err, sizeof(err)) < 0 ||
        wr_notice_send(w, err, sizeof(err)) < 0)
        goto fail;
    if (zx_ws_commit(w->ws, err, sizeof(err)) < 0)
        goto fail;
    if (w->fault_path[0] && unlink(w->fault_path) == 0) {
        zx_warn("event=fault_injection point=after_workspace_commit frames=%d", nframes);
        _exit(70);
    }
    int light = light_cycle(w);
    if (light) {
        release_applied(w);
        if (w->fault_release_path[0] && unlink(w->fault_release_path) == 0) {
            zx_warn("event=fault_injection point=after_release frames=%d", nframes);
            _exit(70);
        }
        wr_store_owe(w); /* written by a later store transaction */
    }
    int rc = light ? 0 : wr_store_txn(w);
    if (rc) {
        /* The workspace has the rows and the checkpoint: the frames will
         * be re-read, skipped as applied, and their LMDB records retried. */
        zx_error("event=store_failed error=\"%s\"", zx_store_strerror(rc));
        for (size_t i = 0; i < w->nap; i++)
            zx_ring_cursor_init(&w->ap[i].p->seg.frames, &w->ap[i].p->cur);
        wr_free_applied(w);
        return -1;
    }
    if (!light)
        release_applied(w);
    wr_announce(w);
    wr_free_applied(w);
    wr_pt_tell(w);
    return nframes;
fail:
    zx_error("event=commit_failed frames=%d error=\"%s\"", nframes, err);
    if (began)
        zx_ws_rollback(w->ws);
    for (int i = 0; i < MAX_PIPES; i++) {
        if (!w->pipes[i].used)
            continue;
        zx_ring_cursor_init(&w->pipes[i].seg.frames, &w->pipes[i].cur);
        w->pipes[i].ckpt_dirty = 0;
        /* the commit may have happened although its answer was lost (the
         * connection went): the checkpoint in the workspace says */
        if (zx_ws_checkpoint_get(w->ws, w->pipes[i].ckpt_key, &w->pipes[i].ckpt) < 0)
            w->ckpt_stale = 1;
    }
    wr_free_applied(w);
    /* what the cycle parked or replayed is undone: count again */
    if (wr_pt_load(w) == 0)
        wr_pt_tell(w);
    return -1;
}

/* forget.h's callbacks: whether a segment of name is attached (1),
 * detaching (2) or neither (0); a feed event. */
static int forget_state(void *ctx, const char *name)
{
    writer *w = ctx;
    int st = 0;
    for (int i = 0; i < MAX_PIPES; i++)
        if (w->pipes[i].used && strcmp(w->pipes[i].name, name) == 0)
            st = w->pipes[i].detaching && st != 1 ? 2 : 1;
    return st;
}

static void forget_emit(void *ctx, void *ev)
{
    json_t *o = ev;
    const char *event = json_string_value(json_object_get(o, "event"));
    /* its parked frames went with its state: forget its parked tables */
    if (event && !strcmp(event, "state_dropped"))
        wr_pt_forget(ctx, json_string_value(json_object_get(o, "pipeline")));
    wr_emit(ctx, ev);
}

static void finish_detaches(writer *w)
{
    for (int i = 0; i < MAX_PIPES; i++) {
        wpipe *p = &w->pipes[i];
        if (!p->used || !p->detaching ||
            zx_ring_acked_seq(&p->seg.frames) < zx_ring_published_seq(&p->seg.frames))
            continue;
        if (p->owed && wr_store_flush(w) != 0)
            continue; /* its records first: tried again next time */
        char name[64];
        snprintf(name, sizeof(name), "%s", p->name);
        wr_drop_pipe(p);
        int other = 0;
        for (int k = 0; k < MAX_PIPES; k++)
            other |= w->pipes[k].used && !strcmp(w->pipes[k].name, name);
        if (!other) /* its lease, if any, goes with its last segment */
            wr_lease_want(w, name, NULL);
    }
}

static void prune(writer *w)
{
    int64_t now = zx_mono_ms();
    if (now - w->last_prune_ms < 60000)
        return;
    w->last_prune_ms = now;
    for (int attempt = 0; attempt < 3; attempt++) {
        zx_store_txn *t;
        if (zx_store_begin(w->store, 0, &t) != 0)
            return;
        size_t removed = 0;
        int rc = zx_store_idem_prune(t, zx_now_us() - IDEM_TTL_US, 100000, &removed);
        rc = rc ? (zx_store_abort(t), rc) : zx_store_commit(t);
        if (rc != ZX_STORE_MAP_FULL)
            return;
    }
}

typedef struct recon {
    const char *pipeline; /* NULL: every pipeline */
    zx_store_txn *t;
    int rc;
    size_t n;
} recon;

static int recon_one(const char *pipeline, const char *part, const void *val, size_t len,
                     void *ctx)
{
    recon *r = ctx;
    if (r->pipeline && strcmp(pipeline, r->pipeline) != 0)
        return 0;
    int rc = zx_store_position_part_put(r->t, pipeline, part, val, len, zx_now_us());
    if (rc == ZX_STORE_KEYTOOLONG || rc == ZX_STORE_INVALID)
        return 0;
    if (rc) {
        r->rc = rc;
        return 1;
    }
    r->n++;
    return 0;
}

int wr_positions_from_ws(writer *w, const char *pipeline, size_t *n, char *err, size_t errlen)
{
    for (int attempt = 0; attempt < 8; attempt++) {
        recon r = {pipeline, NULL, 0, 0};
        int rc = zx_store_begin(w->store, 0, &r.t);
        if (rc)
            return zx_seterr(err, errlen, "store: %s", zx_store_strerror(rc));
        int wr = zx_ws_positions_each(w->ws, recon_one, &r);
        if (wr < 0) {
            zx_store_abort(r.t);
            return zx_seterr(err, errlen, "workspace: cannot read _zx_positions: %s",
                             zx_ws_errmsg(w->ws));
        }
        rc = r.rc ? (zx_store_abort(r.t), r.rc) : zx_store_commit(r.t);
        if (rc == ZX_STORE_MAP_FULL)
            continue;
        if (rc)
            return zx_seterr(err, errlen, "store: %s", zx_store_strerror(rc));
        *n = r.n;
        return 0;
    }
    return zx_seterr(err, errlen, "store: map full");
}

/* The workspace holds the positions committed with the rows (same
 * transaction); the store, written after, may lack the last ones if the
 * writer died in between.  Copy them into the store before any worker
 * reads it (before READY).  0, or -1 with err set. */
static int reconcile_positions(writer *w, char *err, size_t errlen)
{
    size_t n = 0;
    if (wr_positions_from_ws(w, NULL, &n, err, errlen) < 0)
        return -1;
    if (n)
        zx_info("event=positions_reconciled parts=%zu", n);
    return 0;
}

int zx_writer_main(const zx_writer_args *a)
{
    writer *w = calloc(1, sizeof(*w));
    if (!w) {
        zx_error("event=fatal error=\"out of memory (writer state, %zu bytes)\"", sizeof(*w));
        return 1;
    }
    w->a = a;
    int rc = 1;
    char err[512];
    struct sigaction sa = {0};
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    zx_rowset_init(&w->rs);
    zx_rowset_init(&w->rs2);
    if (!(w->ks = zx_keyseq_new())) {
        zx_error("event=out_of_memory what=keyseq");
        free(w);
        return 1;
    }
    for (int i = 0; i < MAX_PIPES; i++)
        w->pipes[i].worker_efd = -1;

    /* The store's durability follows the workspace's: with synchronous
     * "normal" a power loss may undo the last workspace commits, so the
     * store skips its second sync per commit (ZX_STORE_NOMETASYNC). */
    unsigned sflags = a->conf->ws_kind == ZX_WS_KIND_SQLITE && a->conf->sqlite_synchronous &&
                              strcmp(a->conf->sqlite_synchronous, "full") == 0
                          ? 0 : ZX_STORE_NOMETASYNC;
    if (zx_store_open(a->conf->data_dir, sflags, 0, &w->store, err, sizeof(err)) != 0) {
        zx_error("event=fatal error=\"%s\"", err);
        goto out;
    }
    char owner[4200];
    snprintf(owner, sizeof(owner), "zxd pid %ld, data_dir %s", (long)getppid(),
             a->conf->data_dir);
    int locked = 0;
    char instance[ZX_INSTANCE_ID_LEN + 1] = "";
    if (a->conf->ws_kind == ZX_WS_KIND_POSTGRES && a->conf->pg_shared &&
        zx_instance_id(a->conf->data_dir, instance, err, sizeof(err)) < 0) {
        zx_error("event=fatal error=\"%s\"", err);
        rc = ZX_EXIT_FATAL_CONFIG;
        goto out;
    }
    w->ws = zx_ws_open(a->conf, owner, instance[0] ? instance : NULL, &locked, err, sizeof(err));
    if (!w->ws) {
        zx_error("event=fatal error=\"%s\"", err);
        /* another zxd writes this workspace, or the server refuses us:
         * restarting cannot help */
        if (locked)
            rc = ZX_EXIT_FATAL_CONFIG;
        goto out;
    }
    if (reconcile_positions(w, err, sizeof(err)) < 0) {
        zx_error("event=fatal error=\"%s\"", err);
        goto out;
    }
    if (wr_pt_load(w) < 0)
        zx_warn("event=parked_not_read error=\"%s\"", zx_ws_errmsg(w->ws));
    const char *fi = getenv("ZX_FAULT_INJECTION");
    if (fi && strcmp(fi, "1") == 0)
    {
        snprintf(w->fault_path, sizeof(w->fault_path), "%s/fault-crash-after-workspace-commit",
                 a->conf->data_dir);
        snprintf(w->fault_release_path, sizeof(w->fault_release_path),
                 "%s/fault-crash-after-release", a->conf->data_dir);
    }
    zx_set_nonblock(a->chan);
    zx_chan_send(a->chan, ZX_CHAN_READY, "{}", NULL, 0);
    zx_info("event=ready workspace=%s backend=%s",
            a->conf->ws_kind == ZX_WS_KIND_POSTGRES ? a->conf->pg_dsn_shown
                                                    : a->conf->sqlite_path,
            zx_ws_backend(w->ws));
    int backoff_ms = 0;
    for (;;) {
        zx_ring_drain_fd(a->self_efd);
        int cr;
        while ((cr = wr_handle_chan(w)) == 1)
            ;
        if (cr < 0 && !stop_requested) {
            zx_warn("event=supervisor_gone");
            stop_requested = 1;
        }
        int64_t lease_wait = wr_lease_tick(w);
        /* group commit: see cycle() */
        int n = cycle(w);
        if (w->owed_since_ms && zx_mono_ms() - w->owed_since_ms >= STORE_OWED_MS)
            wr_store_flush(w);
        if (w->events.len && zx_mono_ms() - w->events_sent_ms >= EVENTS_MS)
            wr_events_flush(w);
        workspace_health(w);
        finish_detaches(w);
        if (w->forget.n && !w->ws_down)
            zx_forget_run(&w->forget, w->store, w->ws, forget_state, forget_emit, w);
        if (n < 0) {
            backoff_ms = backoff_ms ? (backoff_ms * 2 > 5000 ? 5000 : backoff_ms * 2) : 100;
            if (stop_requested && backoff_ms >= 5000)
                break;
        } else {
            backoff_ms = 0;
        }
        if (n > 0)
            continue; /* more may be waiting */
        if (stop_requested)
            break;
        prune(w);
        int64_t owed_wait = w->owed_since_ms ? w->owed_since_ms + STORE_OWED_MS - zx_mono_ms() : 1000;
        if (w->events.len && w->events_sent_ms + EVENTS_MS - zx_mono_ms() < owed_wait)
            owed_wait = w->events_sent_ms + EVENTS_MS - zx_mono_ms();
        wr_notice_poll(w, 0); /* what came with the cycle's statements */
        int nfd = wr_notice_fd(w);
        struct pollfd p[3] = {{a->self_efd, POLLIN, 0}, {a->chan, POLLIN, 0}, {nfd, POLLIN, 0}};
        int wait = backoff_ms ? backoff_ms : 1000;
        if (lease_wait < wait)
            wait = (int)lease_wait;
        if (owed_wait < wait)
            wait = owed_wait > 0 ? (int)owed_wait : 0;
        int r = poll(p, nfd >= 0 ? 3 : 2, wait);
        if (r > 0 && (p[1].revents & (POLLHUP | POLLERR)) && !(p[1].revents & POLLIN)) {
            zx_warn("event=supervisor_gone");
            stop_requested = 1;
        }
        if (r > 0 && nfd >= 0 && p[2].revents)
            wr_notice_poll(w, 1); /* the other zxd's commits */
    }
    rc = 0;
    zx_info("event=stop");
out:
    wr_store_flush(w);
    wr_events_flush(w);
    wr_lease_release_all(w); /* a clean stop: the standby need not wait */
    for (int i = 0; i < MAX_PIPES; i++)
        if (w->pipes[i].used)
            wr_drop_pipe(&w->pipes[i]);
    zx_ws_close(w->ws);
    zx_store_close(w->store);
    zx_rowset_free(&w->rs);
    zx_rowset_free(&w->rs2);
    zx_buf_free(&w->fwbuf);
    zx_buf_free(&w->events);
    zx_keyseq_free(w->ks);
    free(w->skip);
    free(w->have);
    zx_buf_free(&w->have_buf);
    for (size_t i = 0; i < w->ninferred_told; i++)
        free(w->inferred_told[i]);
    free(w->inferred_told);
    free(w->ap);
    free(w->pt);
    free(w);
    return rc;
}
