/*
 * http_push.c — stream worker for HTTP push pipelines.  See http_push.h.
 *
 * It must never: write the workspace or LMDB (only the writer does), trust
 * a request record (zx_push_req_parse checks it), or block forever on a
 * peer that died (every wait has a deadline or a wake-up).
 */
#include "workers/sources/http_push.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json_fast.h"
#include "common/json_rows.h"
#include "common/log.h"
#include "common/rowset.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "proto/frame.h"
#include "proto/push.h"
#include "workers/writer/store.h"

static volatile sig_atomic_t stop_requested;

static void on_term(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* A reply waiting for the writer to acknowledge frame `seq`. */
typedef struct pending {
    uint64_t seq;
    uint64_t req_id;
    uint64_t accepted;
    char rid[ZX_PUSH_RID_MAX + 1];
    int replay;
} pending;

/* An idempotency key whose frame is published but not yet acknowledged. */
typedef struct inflight {
    char key[ZX_PUSH_IDEM_MAX + 1];
    uint64_t hash;
    uint64_t seq;
    uint64_t accepted;
    char rid[ZX_PUSH_RID_MAX + 1];
} inflight;

/* A frame encoded but waiting for room in the frames ring. */
typedef struct stalled {
    int active;
    uint64_t req_id;
    int64_t deadline_mono_us;
    int wait_commit;
    uint64_t n;
    uint64_t hash;
    char rid[ZX_PUSH_RID_MAX + 1];
    char idem[ZX_PUSH_IDEM_MAX + 1];
    size_t idem_len;
} stalled;

/* When each frame not yet acknowledged was published, oldest first: the
 * age of the oldest bounds what the ring holds by time (publish()). */
typedef struct sent {
    uint64_t seq;
    int64_t at_us;
} sent;

typedef struct worker {
    const zx_worker_args *a;
    const char *name;
    zx_ring *in, *out, *frames;
    zx_rowset rs;
    zx_frame_buf fb;
    zx_store *store;
    pending *pend;
    size_t npend, pend_cap;
    inflight *infl;
    size_t ninfl, infl_cap;
    stalled st;              /* the frame in w->fb, when active */
    sent *sent;              /* circular: sent[(sent_head + i) % sent_cap] */
    size_t sent_head, nsent, sent_cap;
} worker;

/* Forget the publish times of acknowledged frames; the age in µs of the
 * oldest frame still waiting for the writer, or 0. */
static int64_t queue_age_us(worker *w)
{
    uint64_t acked = zx_ring_acked_seq(w->frames);
    while (w->nsent && w->sent[w->sent_head].seq <= acked) {
        w->sent_head = (w->sent_head + 1) % w->sent_cap;
        w->nsent--;
    }
    return w->nsent ? zx_mono_us() - w->sent[w->sent_head].at_us : 0;
}

/* Remember when frame seq was published.  Out of memory only loses the
 * time bound for that frame. */
static void note_sent(worker *w, uint64_t seq)
{
    if (w->nsent == w->sent_cap) {
        size_t cap = w->sent_cap ? 2 * w->sent_cap : 1024;
        sent *n = malloc(cap * sizeof(*n));
        if (!n)
            return;
        for (size_t i = 0; i < w->nsent; i++)
            n[i] = w->sent[(w->sent_head + i) % w->sent_cap];
        free(w->sent);
        w->sent = n;
        w->sent_head = 0;
        w->sent_cap = cap;
    }
    w->sent[(w->sent_head + w->nsent) % w->sent_cap] = (sent){seq, zx_mono_us()};
    w->nsent++;
}

static int out_reply(worker *w, uint64_t req_id, int status, uint32_t retry_after,
                     int replay, const char *body)
{
    size_t blen = strlen(body);
    size_t len = sizeof(zx_push_rep) + blen;
    void *buf;
    int64_t deadline = zx_mono_ms() + 2000;
    for (;;) {
        zx_ring_result r = zx_ring_reserve(w->out, len, &buf);
        if (r == ZX_RING_OK)
            break;
        if (r != ZX_RING_WOULD_BLOCK || zx_mono_ms() > deadline) {
            zx_warn("event=reply_dropped pipeline=%s status=%d reason=%s", w->name, status,
                    r == ZX_RING_WOULD_BLOCK ? "gateway_not_reading" : "reply_too_big");
            return -1;
        }
        struct pollfd p = {w->a->self_efd, POLLIN, 0};
        poll(&p, 1, 50);
        zx_ring_drain_fd(w->a->self_efd);
    }
    zx_push_rep h = {ZX_PUSH_REP_MAGIC, ZX_PUSH_VERSION, (uint16_t)status, req_id,
                     retry_after, (uint32_t)blen, replay ? ZX_PUSH_REP_REPLAY : 0, 0};
    memcpy(buf, &h, sizeof(h));
    memcpy((char *)buf + sizeof(h), body, blen);
    zx_ring_commit(w->out, len, 1);
    return 0;
}

static void reply_error(worker *w, uint64_t req_id, int status, const char *msg)
{
    json_t *o = json_pack("{s:s, s:i}", "error", msg, "status", status);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    out_reply(w, req_id, status, status == 503 ? 1 : 0, 0,
              s ? s : "{\"error\":\"internal error\"}");
    free(s);
    json_decref(o);
}

static void reply_accepted(worker *w, uint64_t req_id, uint64_t accepted, const char *rid,
                           int committed, int replay)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"accepted\":%llu,\"request_id\":\"%s\",\"committed\":%s%s}",
             (unsigned long long)accepted, rid, committed ? "true" : "false",
             replay ? ",\"replayed\":true" : "");
    out_reply(w, req_id, 202, 0, replay, body);
}

static int add_pending(worker *w, uint64_t seq, uint64_t req_id, uint64_t accepted,
                       const char *rid, int replay)
{
    if (zx_grow(&w->pend, w->npend, &w->pend_cap, sizeof(*w->pend)) < 0)
        return -1;
    pending *p = &w->pend[w->npend++];
    p->seq = seq;
    p->req_id = req_id;
    p->accepted = accepted;
    snprintf(p->rid, sizeof(p->rid), "%s", rid);
    p->replay = replay;
    return 0;
}

/* Answer every pending reply whose frame the writer acknowledged, and
 * forget idempotency keys that are now in the store. */
static void complete(worker *w)
{
    uint64_t acked = zx_ring_acked_seq(w->frames);
    size_t k = 0;
    for (size_t i = 0; i < w->npend; i++) {
        pending *p = &w->pend[i];
        if (p->seq <= acked)
            reply_accepted(w, p->req_id, p->accepted, p->rid, 1, p->replay);
        else
            w->pend[k++] = *p;
    }
    w->npend = k;
    k = 0;
    for (size_t i = 0; i < w->ninfl; i++)
        if (w->infl[i].seq > acked)
            w->infl[k++] = w->infl[i];
    w->ninfl = k;
}

static inflight *find_inflight(worker *w, const char *key, size_t n)
{
    for (size_t i = 0; i < w->ninfl; i++)
        if (strlen(w->infl[i].key) == n && memcmp(w->infl[i].key, key, n) == 0)
            return &w->infl[i];
    return NULL;
}

static int add_inflight(worker *w, const char *key, size_t n, uint64_t hash, uint64_t seq,
                        uint64_t accepted, const char *rid)
{
    if (zx_grow(&w->infl, w->ninfl, &w->infl_cap, sizeof(*w->infl)) < 0)
        return -1;
    inflight *f = &w->infl[w->ninfl++];
    memcpy(f->key, key, n);
    f->key[n] = '\0';
    f->hash = hash;
    f->seq = seq;
    f->accepted = accepted;
    snprintf(f->rid, sizeof(f->rid), "%s", rid);
    return 0;
}

/* Look the key up in the store.  1 found (rec filled), 0 not found. */
static int store_lookup(worker *w, const char *key, size_t n, zx_idem_rec *rec)
{
    char err[256];
    if (!w->store &&
        zx_store_open(w->a->conf->data_dir, ZX_STORE_RDONLY, 0, &w->store, err, sizeof(err)) != 0) {
        w->store = NULL;
        return 0;
    }
    zx_store_txn *t;
    if (zx_store_begin(w->store, 1, &t) != 0)
        return 0;
    int rc = zx_store_idem_get(t, w->name, key, n, rec);
    zx_store_abort(t);
    return rc == 0;
}

/* Outcome of handling one request record. */
enum { DONE = 0, BLOCKED = 1 };

/* Put the encoded frame (w->fb, described by w->st) into the frames ring
 * and answer or queue the answer.  BLOCKED while there is no room and the
 * request's deadline has not passed. */
static int publish(worker *w)
{
    stalled *st = &w->st;
    void *dst;
    /* The ring is bounded by time as well as bytes: while the writer runs,
     * a frame that has waited server.max_queue_delay for it means the
     * ring holds more than the writer takes in that time, and a new push
     * waits (as for a full ring) rather than queue behind it.  While the
     * writer is down, only bytes bound the ring, which then absorbs the
     * outage. */
    int64_t max_delay_us = (int64_t)w->a->conf->max_queue_delay_ms * 1000;
    zx_ring_result r;
    if (max_delay_us && atomic_load(&w->a->seg->hdr->writer_up) &&
        queue_age_us(w) > max_delay_us)
        r = ZX_RING_WOULD_BLOCK;
    else
        r = zx_ring_reserve(w->frames, w->fb.len, &dst);
    if (r == ZX_RING_WOULD_BLOCK) {
        if (zx_mono_us() <= st->deadline_mono_us)
            return BLOCKED;
        st->active = 0;
        reply_error(w, st->req_id, 503, "stream is busy (the writer is behind); nothing was written, retry later");
        return DONE;
    }
    st->active = 0;
    if (r != ZX_RING_OK) {
        reply_error(w, st->req_id, 413, "batch too large for this stream's ring; send smaller requests");
        return DONE;
    }
    memcpy(dst, w->fb.data, w->fb.len);
    uint64_t seq = zx_ring_commit(w->frames, w->fb.len, 1);
    note_sent(w, seq);
    /* the store knows the key once the frame is committed; until then
     * only this list does, and without it a retry could be written twice */
    if (st->idem_len &&
        add_inflight(w, st->idem, st->idem_len, st->hash, seq, st->n, st->rid) < 0)
        zx_error("event=idempotency_key_untracked pipeline=%s seq=%llu error=\"out of memory\"",
                 w->name, (unsigned long long)seq);
    if (st->wait_commit) {
        if (add_pending(w, seq, st->req_id, st->n, st->rid, 0) < 0)
            reply_error(w, st->req_id, 503, "out of memory waiting for the commit; the rows may be "
                        "written: retry with the same Idempotency-Key to avoid duplicates");
    } else {
        reply_accepted(w, st->req_id, st->n, st->rid, 0, 0);
    }
    return DONE;
}

static int handle(worker *w, const void *rec, size_t len)
{
    zx_push_view v;
    if (zx_push_req_parse(rec, len, &v) < 0) {
        zx_error("event=bad_request_record pipeline=%s len=%zu", w->name, len);
        return DONE; /* no req_id we can trust: nothing to answer */
    }
    const zx_push_req *h = v.h;
    char rid[ZX_PUSH_RID_MAX + 1];
    memcpy(rid, v.rid, h->rid_len);
    rid[h->rid_len] = '\0';
    int wait_commit = (h->flags & ZX_PUSH_WAIT_COMMIT) || w->a->pipeline->ack_commit;
    if (h->deadline_mono_us && zx_mono_us() > h->deadline_mono_us) {
        /* the gateway has given up on this request: write nothing */
        reply_error(w, h->req_id, 503, "stream is busy; nothing was written, retry later");
        return DONE;
    }
    uint64_t hash = v.idem ? zx_hash64(v.body, h->body_len) : 0;

    if (v.idem) {
        inflight *f = find_inflight(w, v.idem, h->idem_len);
        if (f) {
            if (f->hash != hash) {
                reply_error(w, h->req_id, 422,
                            "Idempotency-Key was already used with a different body");
                return DONE;
            }
            /* The same request again while its frame is in flight: answer
             * as the first once it is committed. */
            if (add_pending(w, f->seq, h->req_id, f->accepted, f->rid, 1) < 0)
                reply_error(w, h->req_id, 503, "out of memory; retry");
            return DONE;
        }
        zx_idem_rec r;
        if (store_lookup(w, v.idem, h->idem_len, &r)) {
            if (r.body_hash != hash) {
                reply_error(w, h->req_id, 422,
                            "Idempotency-Key was already used with a different body");
                return DONE;
            }
            reply_accepted(w, h->req_id, r.accepted, r.request_id, 1, 1);
            return DONE;
        }
    }

    /* The hand-written parser takes the common case; anything it declines
     * (invalid input, rare forms) goes to the jansson path, which is the
     * reference and says what is wrong (common/json_fast.h). */
    zx_body_format fmt = (h->flags & ZX_PUSH_NDJSON) ? ZX_BODY_NDJSON : ZX_BODY_JSON;
    zx_rowset_reset(&w->rs);
    zx_json_err jerr;
    int n = zx_json_fast_parse(v.body, h->body_len, fmt, &w->rs);
    if (n < 0) {
        zx_rowset_reset(&w->rs);
        n = zx_json_rows_parse(v.body, h->body_len, fmt, &w->rs, &jerr);
    }
    if (n < 0) {
        reply_error(w, h->req_id, 400, jerr.msg);
        zx_rowset_reset(&w->rs);
        return DONE;
    }
    if (n == 0) {
        reply_accepted(w, h->req_id, 0, rid, wait_commit, 0);
        return DONE;
    }
    char idem[ZX_PUSH_IDEM_MAX + 1];
    if (v.idem) {
        memcpy(idem, v.idem, h->idem_len);
        idem[h->idem_len] = '\0';
    }
    uint32_t md = w->a->pipeline->metadata;
    zx_frame_meta m = {0};
    m.kind = ZX_FRAME_ROWS;
    m.pipeline = w->name;
    m.table = w->a->pipeline->table;
    m.ingested_at_us = (md & ZX_META_INGESTED_AT) ? h->received_us : 0;
    m.request_id = rid;
    m.metadata = md;
    m.idem_key = v.idem ? idem : NULL;
    m.idem_hash = v.idem ? hash : 0;
    m.accepted = (uint64_t)n;
    zx_frame_buf_reset(&w->fb);
    if (zx_frame_encode(&m, &w->rs, &w->fb) < 0) {
        reply_error(w, h->req_id, 500, "out of memory encoding the batch");
        return DONE;
    }
    stalled *st = &w->st;
    memset(st, 0, sizeof(*st));
    st->active = 1;
    st->req_id = h->req_id;
    st->deadline_mono_us = h->deadline_mono_us;
    st->wait_commit = wait_commit;
    st->n = (uint64_t)n;
    st->hash = hash;
    memcpy(st->rid, rid, sizeof(rid));
    if (v.idem) {
        memcpy(st->idem, v.idem, h->idem_len);
        st->idem_len = h->idem_len;
    }
    return publish(w);
}

int zx_http_push_main(const zx_worker_args *a)
{
    worker w = {0};
    w.a = a;
    w.name = a->pipeline->name;
    w.in = &a->seg->in;
    w.out = &a->seg->out;
    w.frames = &a->seg->frames;
    zx_ring_set_peer(w.in, a->gateway_efd);
    zx_ring_set_peer(w.out, a->gateway_efd);
    zx_ring_set_peer(w.frames, a->writer_efd);
    zx_rowset_init(&w.rs);
    zx_frame_buf_init(&w.fb);

    struct sigaction sa = {0};
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    zx_seg_hdr *hdr = a->seg->hdr;
    atomic_store(&hdr->worker_ready, 0);
    /* Serve nothing until every frame an earlier incarnation published has
     * been committed: then the store knows every idempotency key. */
    while (!stop_requested &&
           zx_ring_acked_seq(w.frames) < zx_ring_published_seq(w.frames)) {
        struct pollfd p = {a->self_efd, POLLIN, 0};
        poll(&p, 1, 200);
        zx_ring_drain_fd(a->self_efd);
    }
    atomic_store(&hdr->worker_ready, 1);
    zx_info("event=ready pipeline=%s frames_published=%llu", w.name,
            (unsigned long long)zx_ring_published_seq(w.frames));

    zx_ring_cursor cur;
    zx_ring_cursor_init(w.in, &cur);
    int64_t stop_deadline = 0;
    uint64_t stop_at = 0;
    int rc = 0;
    for (;;) {
        zx_ring_drain_fd(a->self_efd);
        complete(&w);
        if (stop_requested) {
            /* Drain, for a bounded time: handle the requests that were
             * already in the ring when the stop came (later ones are left
             * to a successor), then wait until the writer has committed
             * every frame, so that "stopped" means committed. */
            if (!stop_deadline) {
                stop_deadline = zx_mono_ms() + 8000;
                stop_at = zx_ring_published_seq(w.in);
            }
            int drained = !w.st.active && zx_ring_acked_seq(w.in) >= stop_at && w.npend == 0 &&
                          zx_ring_acked_seq(w.frames) >= zx_ring_published_seq(w.frames);
            if (drained || zx_mono_ms() > stop_deadline)
                break;
        }
        int blocked = 0;
        if (w.st.active) {
            /* a frame waits for room; the in ring cursor is past its record */
            if (publish(&w) == BLOCKED)
                blocked = 1;
            else
                zx_ring_release(w.in, &cur, 1);
        }
        while (!blocked) {
            const void *rec;
            size_t len;
            uint64_t seq;
            zx_ring_cursor before = cur;
            zx_ring_result r = zx_ring_next(w.in, &cur, &rec, &len, &seq);
            if (r == ZX_RING_WOULD_BLOCK)
                break;
            if (r != ZX_RING_OK) {
                zx_error("event=ring_corrupt pipeline=%s ring=in", w.name);
                rc = 1;
                goto out;
            }
            /* seq is set only once the ring said OK */
            if (stop_deadline && seq > stop_at) {
                cur = before;
                break;
            }
            if (handle(&w, rec, len) == BLOCKED) {
                blocked = 1; /* released once published (above) */
                break;
            }
            zx_ring_release(w.in, &cur, 1);
            complete(&w);
        }
        struct pollfd p = {a->self_efd, POLLIN, 0};
        poll(&p, 1, blocked ? 20 : (stop_requested ? 50 : 1000));
    }
out:
    atomic_store(&hdr->worker_ready, 0);
    zx_info("event=stop pipeline=%s unanswered=%zu", w.name, w.npend);
    zx_store_close(w.store);
    zx_rowset_free(&w.rs);
    zx_frame_buf_free(&w.fb);
    free(w.pend);
    free(w.infl);
    free(w.sent);
    return rc;
}
