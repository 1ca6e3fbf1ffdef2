/*
 * http_push.c — the `http` source: HTTP push pipelines (source.h).
 *
 * The gateway puts each push request in the segment's "in" ring; this
 * source parses the body into rows (common/json_rows.h), publishes one
 * frame per request through the runtime, and answers through the "out"
 * ring: at once (ack: accepted) or when the writer has acknowledged the
 * frame (ack: commit / ?wait=commit).  Idempotency keys travel as the
 * frame's dedup key; they are looked up in the LMDB store (read-only) and
 * among the frames still in flight.  A hostile body can at worst crash
 * this process.
 *
 * It must never: write the workspace or LMDB (only the writer does), trust
 * a request record (zx_push_req_parse checks it), or block forever on a
 * peer that died (every wait has a deadline or a wake-up).
 */
#include "workers/sources/source.h"

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
#include "workers/sources/debezium/debezium.h"
#include "workers/sources/http/http_opts.h"
#include "store/store.h"

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

/* A frame kept by the runtime, waiting for room in the frames ring. */
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

typedef struct worker {
    zx_src *rt;
    const zx_worker_args *a;
    const char *name;
    zx_ring *in, *out;
    zx_ring_cursor cur;      /* read position in the in ring */
    zx_rowset rs;
    zx_store *store;
    pending *pend;
    size_t npend, pend_cap;
    inflight *infl;
    size_t ninfl, infl_cap;
    stalled st;              /* the frame the runtime keeps, when active */
    uint64_t last_after;     /* the last frame the gateway holds an answer
                                for (ZX_PUSH_REP_AFTER_COMMIT) */
    uint64_t stop_at;        /* requests up to this in-ring seq are served
                                after a stop; later ones left to a successor */
    int stop_seen;
    /* format: debezium or mode: latest: each push is one changes frame */
    int changes;
    zx_dbz_conf dbz;
    zx_dbz_frame df;
    zx_dbz_rejects rej;
    char rej_table[ZX_COLNAME_MAX + 1];
    zx_dbz_tables tables;    /* a template's tables (max_tables) */
    zx_frame_pos tpos;       /* the frame's table, as a position part */
    char tpart[ZX_COLNAME_MAX + 16];
} worker;

static int out_reply(worker *w, uint64_t req_id, int status, uint32_t retry_after,
                     uint32_t flags, uint64_t after_seq, const char *body)
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
                     retry_after, (uint32_t)blen, flags, 0, after_seq};
    memcpy(buf, &h, sizeof(h));
    memcpy((char *)buf + sizeof(h), body, blen);
    zx_ring_commit(w->out, len, 1);
    return 0;
}

static void reply_error(worker *w, uint64_t req_id, int status, const char *msg)
{
    json_t *o = json_pack("{s:s, s:i}", "error", msg, "status", status);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    out_reply(w, req_id, status, status == 503 ? 1 : 0, 0, 0,
              s ? s : "{\"error\":\"internal error\"}");
    free(s);
    json_decref(o);
}

/* The 202; after_seq > 0: "committed" once frame after_seq is acked,
 * which the gateway waits for (proto/push.h). */
static void reply_accepted(worker *w, uint64_t req_id, uint64_t accepted, const char *rid,
                           int committed, int replay, uint64_t after_seq)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"accepted\":%llu,\"request_id\":\"%s\",\"committed\":%s%s}",
             (unsigned long long)accepted, rid, committed || after_seq ? "true" : "false",
             replay ? ",\"replayed\":true" : "");
    out_reply(w, req_id, 202, 0,
              (replay ? ZX_PUSH_REP_REPLAY : 0) | (after_seq ? ZX_PUSH_REP_AFTER_COMMIT : 0),
              after_seq, body);
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
    uint64_t acked = zx_src_acked_seq(w->rt);
    size_t k = 0;
    for (size_t i = 0; i < w->npend; i++) {
        pending *p = &w->pend[i];
        if (p->seq <= acked)
            reply_accepted(w, p->req_id, p->accepted, p->rid, 1, p->replay, 0);
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

/* Answer (or queue the answer of) the request whose frame the runtime
 * published as seq, or failed to publish (r). */
static int published(worker *w, zx_pub_result r, uint64_t seq)
{
    stalled *st = &w->st;
    if (r == ZX_PUB_WAIT) {
        if (zx_mono_us() <= st->deadline_mono_us)
            return BLOCKED;
        zx_src_drop(w->rt);
        st->active = 0;
        reply_error(w, st->req_id, 503, "stream is busy (the writer is behind); nothing was written, retry later");
        return DONE;
    }
    st->active = 0;
    if (r == ZX_PUB_NOMEM) {
        reply_error(w, st->req_id, 500, "out of memory encoding the batch");
        return DONE;
    }
    if (r != ZX_PUB_OK) {
        reply_error(w, st->req_id, 413, "batch too large for this stream's ring; send smaller requests");
        return DONE;
    }
    /* the store knows the key once the frame is committed; until then
     * only this list does, and without it a retry could be written twice */
    if (st->idem_len &&
        add_inflight(w, st->idem, st->idem_len, st->hash, seq, st->n, st->rid) < 0)
        zx_error("event=idempotency_key_untracked pipeline=%s seq=%llu error=\"out of memory\"",
                 w->name, (unsigned long long)seq);
    if (st->wait_commit) {
        /* the gateway answers once the writer has acknowledged seq; the
         * worker waits for that too before it may end (http_drained) */
        reply_accepted(w, st->req_id, st->n, st->rid, 1, 0, seq);
        if (seq > w->last_after)
            w->last_after = seq;
    } else {
        reply_accepted(w, st->req_id, st->n, st->rid, 0, 0, 0);
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
    const zx_http_opts *o = zx_http_opts_of(w->a->pipeline);
    int wait_commit = (h->flags & ZX_PUSH_WAIT_COMMIT) || (o && o->ack_commit);
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
            reply_accepted(w, h->req_id, r.accepted, r.request_id, 1, 1, 0);
            return DONE;
        }
    }

    /* The hand-written parser takes the common case; anything it declines
     * (invalid input, rare forms) goes to the jansson path, which is the
     * reference and says what is wrong (common/json_fast.h). */
    zx_body_format fmt = (h->flags & ZX_PUSH_NDJSON) ? ZX_BODY_NDJSON : ZX_BODY_JSON;
    zx_rowset_reset(&w->rs);
    zx_json_err jerr;
    long n;
    unsigned notes = 0;
    if (w->changes) {
        zx_dbz_frame_reset(&w->df);
        w->rej.n = 0;
        n = zx_dbz_add_body(&w->dbz, &w->df, v.body, h->body_len, fmt == ZX_BODY_NDJSON, rid,
                            &w->rej, &notes, jerr.msg, sizeof(jerr.msg));
        if (n == -2) {
            reply_error(w, h->req_id, 500, "out of memory reading the events");
            zx_rowset_reset(&w->rs);
            return DONE;
        }
    } else {
        n = zx_json_fast_parse(v.body, h->body_len, fmt, &w->rs);
        if (n < 0) {
            zx_rowset_reset(&w->rs);
            n = zx_json_rows_parse(v.body, h->body_len, fmt, &w->rs, &jerr);
        }
    }
    if (n < 0) {
        reply_error(w, h->req_id, 400, jerr.msg);
        zx_rowset_reset(&w->rs);
        return DONE;
    }
    if (n == 0 && !(w->changes && w->rej.n)) {
        reply_accepted(w, h->req_id, 0, rid, wait_commit, 0, 0);
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
    /* always: the writer's commit latency is measured from it; the
     * _ingested_at column is made only when metadata asks */
    m.ingested_at_us = h->received_us;
    m.batch_id = rid;
    m.metadata = md;
    m.dedup_key = v.idem ? idem : NULL;
    m.dedup_hash = v.idem ? hash : 0;
    m.accepted = (uint64_t)n;
    if (w->changes) {
        m.metadata = 0;
        m.ingested_at_us = h->received_us;
        m.rejects = w->rej.n ? w->rej.v : NULL;
        m.nrejects = w->rej.n;
        m.table = w->rej_table;
        if (w->df.changes) {
            m.kind = ZX_FRAME_CHANGES;
            m.table = w->df.table;
            m.key_cols = w->df.keys;
            m.nkey_cols = w->df.nkeys;
            m.history = w->a->pipeline->history;
            m.inferred = (notes & ZX_DBZ_NOTE_NO_SCHEMA) != 0;
            if (zx_dbz_frame_types(&w->df, &m.col_types, &m.ncol_types) < 0) {
                reply_error(w, h->req_id, 500, "out of memory");
                return DONE;
            }
            /* a template's table is kept with the positions: a restart
             * counts it again (max_tables) */
            if (zx_dbz_table_part(&w->dbz, w->df.table, w->tpart, sizeof(w->tpart)) == 0) {
                w->tpos = (zx_frame_pos){.part = w->tpart, .value = "1", .value_len = 1};
                m.positions = &w->tpos;
                m.npositions = 1;
            }
        }
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
    uint64_t seq = 0;
    zx_pub_result r = zx_src_publish(w->rt, &m, &w->rs, &seq);
    return published(w, r, seq);
}

static int http_open(zx_src *rt, void **state, char *err, size_t errlen)
{
    const zx_worker_args *a = zx_src_args(rt);
    if (a->seg->hdr->in_size == 0 || a->gateway_efd < 0)
        return zx_seterr(err, errlen, "pipeline %s: no request ring (not an http segment)",
                         a->pipeline->name);
    worker *w = calloc(1, sizeof(*w));
    if (!w)
        return zx_seterr(err, errlen, "out of memory");
    w->rt = rt;
    w->a = a;
    w->name = a->pipeline->name;
    w->in = &a->seg->in;
    w->out = &a->seg->out;
    zx_ring_set_peer(w->in, a->gateway_efd);
    zx_ring_set_peer(w->out, a->gateway_efd);
    zx_ring_cursor_init(w->in, &w->cur);
    zx_rowset_init(&w->rs);
    const zx_conf_pipeline *p = a->pipeline;
    if (p->format == ZX_FORMAT_DEBEZIUM || p->stream_mode == ZX_STREAM_LATEST) {
        w->changes = 1;
        zx_dbz_init_conf(a->conf, p, &w->dbz, w->rej_table);
        zx_dbz_frame_init(&w->df, &w->rs);
        int bad = zx_dbz_tables_init(&w->tables, p, &w->dbz, err, errlen);
        if (bad == 0 && zx_dbz_tables_seed(&w->tables, rt) < 0)
            bad = zx_seterr(err, errlen, "out of memory");
        if (bad) {
            zx_dbz_frame_free(&w->df);
            zx_dbz_tables_free(&w->tables);
            zx_rowset_free(&w->rs);
            free(w);
            return -1;
        }
    }
    *state = w;
    return 0;
}

static int http_poll(zx_src *rt, void *state)
{
    worker *w = state;
    complete(w);
    if (zx_src_stopping(rt) && !w->stop_seen) {
        /* serve the requests that were already in the ring when the stop
         * came; later ones are left to a successor */
        w->stop_seen = 1;
        w->stop_at = zx_ring_published_seq(w->in);
    }
    if (w->st.active) {
        /* a frame waits for room; the in ring cursor is past its record */
        uint64_t seq = 0;
        zx_pub_result r = zx_src_retry(rt, &seq);
        if (published(w, r, seq) == BLOCKED)
            return ZX_SRC_BLOCKED;
        zx_ring_release(w->in, &w->cur, 1);
    }
    for (int n = 0; n < 256; n++) {
        const void *rec;
        size_t len;
        uint64_t seq;
        zx_ring_cursor before = w->cur;
        zx_ring_result r = zx_ring_next(w->in, &w->cur, &rec, &len, &seq);
        if (r == ZX_RING_WOULD_BLOCK)
            return ZX_SRC_IDLE;
        if (r != ZX_RING_OK) {
            zx_error("event=ring_corrupt pipeline=%s ring=in", w->name);
            return ZX_SRC_FATAL;
        }
        /* seq is set only once the ring said OK */
        if (w->stop_seen && seq > w->stop_at) {
            w->cur = before;
            return ZX_SRC_IDLE;
        }
        if (handle(w, rec, len) == BLOCKED)
            return ZX_SRC_BLOCKED; /* released once published (above) */
        zx_ring_release(w->in, &w->cur, 1);
        complete(w);
    }
    return ZX_SRC_BUSY;
}

static void http_acked(zx_src *rt, void *state, uint64_t seq)
{
    (void)rt;
    (void)seq;
    complete(state);
}

static int http_drained(zx_src *rt, void *state)
{
    worker *w = state;
    if (!w->stop_seen) {
        w->stop_seen = 1;
        w->stop_at = zx_ring_published_seq(w->in);
    }
    return !w->st.active && zx_ring_acked_seq(w->in) >= w->stop_at && w->npend == 0 &&
           zx_src_acked_seq(rt) >= w->last_after;
}

static void http_close(zx_src *rt, void *state)
{
    (void)rt;
    worker *w = state;
    if (w->npend)
        zx_info("event=unanswered pipeline=%s requests=%zu", w->name, w->npend);
    zx_store_close(w->store);
    zx_rowset_free(&w->rs);
    zx_dbz_frame_free(&w->df);
    zx_dbz_tables_free(&w->tables);
    free(w->rej.v);
    free(w->pend);
    free(w->infl);
    free(w);
}

const zx_source zx_source_http = {
    .name = "http",
    .flags = ZX_SOURCE_GATEWAY,
    .help = "clients push JSON to POST /api/streams/<name>/push",
    .open = http_open,
    .poll = http_poll,
    .acked = http_acked,
    .drained = http_drained,
    .close = http_close,
};
