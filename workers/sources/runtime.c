/*
 * runtime.c — the worker runtime every stream source runs in.  See
 * source.h for the contract.
 *
 * It must never: publish a frame before every frame of an earlier
 * incarnation is committed (the positions it hands the source would be
 * stale), write LMDB (it only reads the committed positions), or let a
 * source's slowness hide the stop (every wait is bounded).
 */
#include "workers/sources/source.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "proto/control.h"
#include "workers/forward/forward.h"
#include "workers/sources/debezium/debezium.h"
#include "store/store.h"

#define STOP_DRAIN_MS 8000

static volatile sig_atomic_t stop_requested;

static void on_term(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* A committed position, copied out of the store at start. */
typedef struct rpos {
    char *part;
    void *val;
    size_t len;
} rpos;

/* When each frame not yet acknowledged was published, oldest first: the
 * age of the oldest bounds what the ring holds by time. */
typedef struct sent {
    uint64_t seq;
    int64_t at_us;
} sent;

struct zx_src {
    const zx_source *src;
    const zx_worker_args *a;
    const char *name;
    zx_ring *frames;
    zx_buf fb;      /* the kept frame, when kept */
    int kept;
    rpos *pos;
    size_t npos;
    sent *sent;           /* circular: sent[(sent_head + i) % sent_cap] */
    size_t sent_head, nsent, sent_cap;
    uint64_t acked_told;  /* last seq given to acked() */
    char last_error[ZX_SEG_SOURCE_ERROR_MAX];
};

const zx_worker_args *zx_src_args(zx_src *rt) { return rt->a; }
int zx_src_stopping(zx_src *rt) { (void)rt; return stop_requested != 0; }
int zx_src_kept(zx_src *rt) { return rt->kept; }
uint64_t zx_src_acked_seq(zx_src *rt) { return zx_ring_acked_seq(rt->frames); }
uint64_t zx_src_published_seq(zx_src *rt) { return zx_ring_published_seq(rt->frames); }
uint64_t zx_src_max_frame(zx_src *rt) { return zx_ring_max_record(rt->frames); }

uint64_t zx_src_ring_working_set(zx_src *rt, uint64_t bytes)
{
    uint64_t maxf = zx_ring_max_record(rt->frames);
    if (!bytes || bytes >= zx_ring_capacity(rt->frames)) {
        zx_ring_soft_cap(rt->frames, 0);
        return maxf;
    }
    zx_ring_soft_cap(rt->frames, bytes);
    uint64_t w = bytes / 2 > 16 ? bytes / 2 - 16 : 0;   /* as ring.c's bound */
    return w < maxf ? w : maxf;
}

/* Forget the publish times of acknowledged frames; the age in µs of the
 * oldest frame still waiting for the writer, or 0. */
static int64_t queue_age_us(zx_src *rt)
{
    uint64_t acked = zx_ring_acked_seq(rt->frames);
    while (rt->nsent && rt->sent[rt->sent_head].seq <= acked) {
        rt->sent_head = (rt->sent_head + 1) % rt->sent_cap;
        rt->nsent--;
    }
    return rt->nsent ? zx_mono_us() - rt->sent[rt->sent_head].at_us : 0;
}

/* Remember when frame seq was published.  Out of memory only loses the
 * time bound for that frame. */
static void note_sent(zx_src *rt, uint64_t seq)
{
    if (rt->nsent == rt->sent_cap) {
        size_t cap = rt->sent_cap ? 2 * rt->sent_cap : 1024;
        sent *n = malloc(cap * sizeof(*n));
        if (!n)
            return;
        for (size_t i = 0; i < rt->nsent; i++)
            n[i] = rt->sent[(rt->sent_head + i) % rt->sent_cap];
        free(rt->sent);
        rt->sent = n;
        rt->sent_head = 0;
        rt->sent_cap = cap;
    }
    rt->sent[(rt->sent_head + rt->nsent) % rt->sent_cap] = (sent){seq, zx_mono_us()};
    rt->nsent++;
}

zx_pub_result zx_src_retry(zx_src *rt, uint64_t *seq)
{
    if (!rt->kept)
        return ZX_PUB_OK;
    /* The ring is bounded by time as well as bytes: while the writer runs,
     * a frame that has waited server.max_queue_delay for it means the ring
     * holds more than the writer takes in that time, and a new frame waits
     * (as for a full ring) rather than queue behind it.  While the writer
     * is down, only bytes bound the ring, which then absorbs the outage. */
    int64_t max_delay_us = (int64_t)rt->a->conf->max_queue_delay_ms * 1000;
    if (max_delay_us && atomic_load(&rt->a->seg->hdr->writer_up) &&
        queue_age_us(rt) > max_delay_us)
        return ZX_PUB_WAIT;
    void *dst;
    zx_ring_result r = zx_ring_reserve(rt->frames, rt->fb.len, &dst);
    if (r == ZX_RING_WOULD_BLOCK)
        return ZX_PUB_WAIT;
    if (r != ZX_RING_OK) {
        rt->kept = 0;
        return ZX_PUB_TOO_BIG;
    }
    memcpy(dst, rt->fb.p, rt->fb.len);
    uint64_t s = zx_ring_commit(rt->frames, rt->fb.len, 1);
    note_sent(rt, s);
    rt->kept = 0;
    if (seq)
        *seq = s;
    return ZX_PUB_OK;
}

zx_pub_result zx_src_publish(zx_src *rt, const zx_frame_meta *m, const zx_rowset *rs,
                             uint64_t *seq)
{
    if (rt->kept)
        return ZX_PUB_WAIT;
    zx_frame_meta mm = *m;
    if (!mm.pipeline)
        mm.pipeline = rt->name;
    if (!mm.table)
        mm.table = rt->a->pipeline->table;
    /* the writer keeps what it applies of it for the forwarder */
    mm.forward = zx_conf_forwards(rt->a->pipeline);
    zx_buf_reset(&rt->fb);
    if (zx_frame_encode(&mm, rs, &rt->fb) < 0) {
        if (errno == ENOMEM)
            return ZX_PUB_NOMEM;
        /* a bug, not the size: say so where the operator looks */
        zx_error("event=frame_invalid pipeline=%s detail=\"zx_frame_encode refused the "
                 "frame's metadata or columns (EINVAL): a bug in this source\"", rt->name);
        return ZX_PUB_TOO_BIG;
    }
    if (rt->fb.len > zx_ring_max_record(rt->frames))
        return ZX_PUB_TOO_BIG;
    rt->kept = 1;
    return zx_src_retry(rt, seq);
}

void zx_src_drop(zx_src *rt)
{
    rt->kept = 0;
}

void zx_src_wait(zx_src *rt, int timeout_ms)
{
    if (stop_requested && timeout_ms > 50)
        timeout_ms = 50;
    struct pollfd p = {rt->a->self_efd, POLLIN, 0};
    poll(&p, 1, timeout_ms);
    zx_ring_drain_fd(rt->a->self_efd);
}

size_t zx_src_positions_count(zx_src *rt) { return rt->npos; }

int zx_src_position_find(zx_src *rt, const char *part, const void **val, size_t *len)
{
    for (size_t i = 0; i < rt->npos; i++)
        if (strcmp(rt->pos[i].part, part) == 0) {
            *val = rt->pos[i].val;
            *len = rt->pos[i].len;
            return 0;
        }
    return -1;
}

void zx_src_set_status(zx_src *rt, const char *json)
{
    zx_seg_hdr *h = rt->a->seg->hdr;
    const char *v = json;
    if (v && strlen(v) >= sizeof(h->source_status))
        v = "{\"truncated\":true}";
    zx_segment_write_text(&h->source_status_seq, h->source_status,
                          sizeof(h->source_status), v);
}

void zx_src_set_progress(zx_src *rt, const char *what, uint64_t done, uint64_t expected,
                         unsigned flags, int64_t started_us)
{
    zx_seg_hdr *h = rt->a->seg->hdr;
    if (!what || !*what) {
        zx_segment_progress_write(h, NULL);
        return;
    }
    zx_seg_progress pr = {.done = done, .expected = expected, .flags = flags,
                          .started_us = started_us, .updated_us = zx_now_us()};
    snprintf(pr.what, sizeof(pr.what), "%s", what);
    zx_segment_progress_write(h, &pr);
}

void zx_src_feed(zx_src *rt, const char *event, const char *message)
{
    zx_seg_hdr *h = rt->a->seg->hdr;
    json_t *o = json_pack("{s:s, s:s}", "event", event, "message", message ? message : "");
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (js && strlen(js) < sizeof(h->source_note))
        zx_segment_write_text(&h->source_note_seq, h->source_note, sizeof(h->source_note), js);
    else
        zx_warn("event=feed_event_lost pipeline=%s event=%s", rt->name, event);
    free(js);
    json_decref(o);
}

void zx_src_set_error(zx_src *rt, const char *msg)
{
    if (!msg)
        msg = "";
    if (strncmp(rt->last_error, msg, sizeof(rt->last_error) - 1) == 0)
        return;
    snprintf(rt->last_error, sizeof(rt->last_error), "%s", msg);
    zx_seg_hdr *h = rt->a->seg->hdr;
    zx_segment_write_text(&h->source_error_seq, h->source_error, sizeof(h->source_error), msg);
    if (msg[0])
        zx_error("event=source_error pipeline=%s error=\"%s\"", rt->name, msg);
    else
        zx_info("event=source_recovered pipeline=%s", rt->name);
}

typedef struct load_ctx {
    zx_src *rt;
    int failed;
} load_ctx;

static int load_one(const char *part, const void *val, size_t len, void *ctx)
{
    load_ctx *c = ctx;
    zx_src *rt = c->rt;
    rpos *n = realloc(rt->pos, (rt->npos + 1) * sizeof(*n));
    if (!n) {
        c->failed = 1;
        return 1;
    }
    rt->pos = n;
    rpos *p = &rt->pos[rt->npos];
    p->part = strdup(part);
    p->val = malloc(len ? len : 1);
    if (!p->part || !p->val) {
        free(p->part);
        free(p->val);
        c->failed = 1;
        return 1;
    }
    if (len)
        memcpy(p->val, val, len);
    p->len = len;
    rt->npos++;
    return 0;
}

/* Copy the pipeline's committed positions out of the store.  A store the
 * writer has not made yet means none.  0, or -1 with err set. */
/* Open the source; a failure that may pass (the server is restarting or
 * unreachable: open returned -1, not ZX_SRC_REFUSED) is retried in this
 * worker, 1 s then doubling up to 30 s, with the error in zxctl status
 * and one warning per attempt, until it opens or zxd stops it -- rather
 * than exiting, which the supervisor would count as a crash and, after
 * five within a minute, stop restarting (a source database that takes a
 * few seconds to restart would fail the pipeline for good).  Returns
 * what the last open returned. */
static int open_retrying(zx_src *rt, const zx_source *src, void **state, char *err,
                         size_t errlen)
{
    int wait_ms = 1000;
    for (unsigned attempt = 1;; attempt++) {
        int rc = src->open(rt, state, err, errlen);
        if (rc >= 0) {
            if (attempt > 1) {
                zx_info("event=source_open_recovered pipeline=%s source=%s attempts=%u",
                        rt->name, src->name, attempt);
                zx_src_set_error(rt, NULL);
            }
            return rc;
        }
        if (rc == ZX_SRC_REFUSED || stop_requested)
            return rc;
        zx_warn("event=source_open_retry pipeline=%s source=%s attempt=%u retry_in_ms=%d "
                "error=\"%s\"", rt->name, src->name, attempt, wait_ms, err);
        char shown[600];
        snprintf(shown, sizeof(shown), "%s (retrying in %d s)", err, wait_ms / 1000);
        zx_src_set_error(rt, shown);
        for (int64_t until = zx_mono_ms() + wait_ms; !stop_requested && zx_mono_ms() < until;)
            zx_src_wait(rt, (int)(until - zx_mono_ms()));
        if (stop_requested)
            return rc;
        wait_ms = wait_ms >= 15000 ? 30000 : wait_ms * 2;
    }
}

static int load_positions(zx_src *rt, char *err, size_t errlen)
{
    zx_store *st = NULL;
    int rc = zx_store_open(rt->a->conf->data_dir, ZX_STORE_RDONLY, 0, &st, err, errlen);
    if (rc == ZX_STORE_NOSTORE)
        return 0;
    if (rc != 0)
        return -1;
    zx_store_txn *t;
    rc = zx_store_begin(st, 1, &t);
    load_ctx c = {rt, 0};
    if (rc == 0) {
        rc = zx_store_positions_each(t, rt->name, load_one, &c);
        zx_store_abort(t);
    }
    zx_store_close(st);
    if (c.failed)
        return zx_seterr(err, errlen, "out of memory loading the positions");
    if (rc != 0 && rc != 1)
        return zx_seterr(err, errlen, "cannot read the positions: %s", zx_store_strerror(rc));
    return 0;
}

static void free_positions(rpos *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].part);
        free(v[i].val);
    }
    free(v);
}

int zx_src_positions_reload(zx_src *rt, char *err, size_t errlen)
{
    rpos *old = rt->pos;
    size_t nold = rt->npos;
    rt->pos = NULL;
    rt->npos = 0;
    if (load_positions(rt, err, errlen) < 0) {
        free_positions(rt->pos, rt->npos);   /* what was read: the old stay */
        rt->pos = old;
        rt->npos = nold;
        return -1;
    }
    free_positions(old, nold);
    return 0;
}

int zx_dbz_tables_seed(zx_dbz_tables *t, zx_src *rt)
{
    size_t pl = strlen(ZX_DBZ_TABLE_PART);
    for (size_t i = 0; i < rt->npos; i++)
        if (!strncmp(rt->pos[i].part, ZX_DBZ_TABLE_PART, pl) && rt->pos[i].part[pl] &&
            zx_dbz_tables_add(t, rt->pos[i].part + pl) < 0)
            return -1;
    return 0;
}

static void tell_acked(zx_src *rt, void *state)
{
    uint64_t acked = zx_ring_acked_seq(rt->frames);
    if (acked > rt->acked_told) {
        rt->acked_told = acked;
        if (rt->src->acked)
            rt->src->acked(rt, state, acked);
    }
}

/* The forwarder's status (forward.h) into the segment, for zxctl status. */
static void fwd_report(void *ctx, const char *json)
{
    zx_seg_hdr *h = ((zx_src *)ctx)->a->seg->hdr;
    zx_segment_write_text(&h->forward_status_seq, h->forward_status, sizeof(h->forward_status),
                          json);
}

/* What the writer committed of the pipeline: the frames it acknowledged. */
static uint64_t fwd_committed(void *ctx)
{
    return zx_ring_acked_seq(((zx_src *)ctx)->frames);
}

int zx_source_main(const zx_source *src, const zx_worker_args *a)
{
    zx_src rt_ = {0}, *rt = &rt_;
    rt->src = src;
    rt->a = a;
    rt->name = a->pipeline->name;
    rt->frames = &a->seg->frames;
    zx_buf_init(&rt->fb);
    zx_ring_set_peer(rt->frames, a->writer_efd);

    struct sigaction sa = {0};
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    zx_seg_hdr *hdr = a->seg->hdr;
    atomic_store(&hdr->worker_ready, 0);
    /* Nothing until every frame an earlier incarnation published has been
     * committed and the writer is attached: then the store holds every
     * position (and every dedup key) those frames carried. */
    while (!stop_requested &&
           (zx_ring_acked_seq(rt->frames) < zx_ring_published_seq(rt->frames) ||
            ((src->flags & ZX_SOURCE_POSITIONS) && !atomic_load(&hdr->writer_up)))) {
        struct pollfd p = {a->self_efd, POLLIN, 0};
        poll(&p, 1, 200);
        zx_ring_drain_fd(a->self_efd);
    }
    rt->acked_told = zx_ring_acked_seq(rt->frames);
    int rc = 1;
    void *state = NULL;
    zx_fwd *fwd = NULL;
    char err[512] = "";
    if (stop_requested) {
        rc = 0;
        goto out;
    }
    int orc = load_positions(rt, err, sizeof(err));
    if (orc == 0)
        orc = open_retrying(rt, src, &state, err, sizeof(err));
    if (orc < 0) {
        if (orc == ZX_SRC_REFUSED)
            rc = ZX_EXIT_FATAL_CONFIG;
        zx_error("event=source_open_failed pipeline=%s source=%s error=\"%s\"", rt->name,
                 src->name, err);
        zx_src_set_error(rt, err);
        goto out;
    }
    atomic_store(&hdr->worker_ready, 1);
    /* what the writer applies for it is published by a thread of its own
     * (a failure there is logged and retried; the stream goes on) */
    if (zx_conf_forwards(a->pipeline) &&
        !(fwd = zx_fwd_start(a->conf, a->pipeline,
                             &(zx_fwd_hooks){fwd_report, fwd_committed, rt}, err,
                             sizeof(err))))
        zx_error("event=forward_start_failed pipeline=%s error=\"%s\"", rt->name, err);
    zx_info("event=ready pipeline=%s source=%s frames_published=%llu positions=%zu", rt->name,
            src->name, (unsigned long long)zx_ring_published_seq(rt->frames), rt->npos);

    int64_t stop_deadline = 0;
    int done = 0;
    rc = 0;
    for (;;) {
        zx_ring_drain_fd(a->self_efd);
        tell_acked(rt, state);
        if (stop_requested) {
            /* Drain, for a bounded time: the source finishes what it owes,
             * then every frame is committed, so "stopped" means committed. */
            if (!stop_deadline)
                stop_deadline = zx_mono_ms() + STOP_DRAIN_MS;
            int drained = !rt->kept && (!src->drained || src->drained(rt, state)) &&
                          zx_ring_acked_seq(rt->frames) >= zx_ring_published_seq(rt->frames);
            if (drained || zx_mono_ms() > stop_deadline)
                break;
        }
        int r = done ? ZX_SRC_DONE : src->poll(rt, state);
        if (r == ZX_SRC_FATAL || r == ZX_SRC_REFUSED) {
            rc = r == ZX_SRC_REFUSED ? ZX_EXIT_FATAL_CONFIG : 1;
            break;
        }
        if (r == ZX_SRC_DONE) {
            done = 1;
            if (!rt->kept && zx_ring_acked_seq(rt->frames) >= zx_ring_published_seq(rt->frames))
                break;
            r = ZX_SRC_BLOCKED;   /* wait for the acks */
        }
        if (r == ZX_SRC_BUSY)
            continue;
        int timeout = r == ZX_SRC_BLOCKED ? 20 : stop_requested ? 50 : 1000;
        struct pollfd p[2] = {{a->self_efd, POLLIN, 0}, {-1, POLLIN, 0}};
        int np = 1;
        /* blocked: only an ack (or the 20 ms) helps; the source's input,
         * readable meanwhile, would wake this loop at once, again and again */
        if (r != ZX_SRC_BLOCKED && src->fd && (p[1].fd = src->fd(state)) >= 0)
            np = 2;
        poll(p, (nfds_t)np, timeout);
    }
    tell_acked(rt, state);
    if (src->close)
        src->close(rt, state);
out:
    zx_fwd_stop(fwd);
    atomic_store(&hdr->worker_ready, 0);
    zx_info("event=stop pipeline=%s unacked=%llu", rt->name,
            (unsigned long long)(zx_ring_published_seq(rt->frames) -
                                 zx_ring_acked_seq(rt->frames)));
    for (size_t i = 0; i < rt->npos; i++) {
        free(rt->pos[i].part);
        free(rt->pos[i].val);
    }
    free(rt->pos);
    free(rt->sent);
    zx_buf_free(&rt->fb);
    return rc;
}
