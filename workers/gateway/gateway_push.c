/*
 * gateway_push.c — the push route: check the key, hold the body, hand it
 * untouched to the stream worker through its "in" ring (waiting for room
 * up to http.backpressure_timeout), relay the worker's answer from the
 * "out" ring, and answer 503 to whatever passes its deadline.
 *
 * It must never: look inside a push body, write a secret to a log, let a
 * request wait without a deadline, or hold more body bytes than the
 * gateway's bound.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/json_rows.h"
#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "proto/push.h"
#include "workers/gateway/gateway_int.h"
#include "workers/gateway/status_page.h"

gpipe *zx_gw_find_pipe(gateway *g, const char *name, size_t n)
{
    for (size_t i = 0; i < sizeof(g->pipes) / sizeof(g->pipes[0]); i++)
        if (g->pipes[i].used && strlen(g->pipes[i].name) == n &&
            memcmp(g->pipes[i].name, name, n) == 0)
            return &g->pipes[i];
    return NULL;
}

static void bucket_add(gateway *g, greq *q)
{
    greq **b = &g->buckets[q->req_id % NBUCKETS];
    q->next = *b;
    *b = q;
}

static greq *bucket_take(gateway *g, uint64_t id)
{
    for (greq **pp = &g->buckets[id % NBUCKETS]; *pp; pp = &(*pp)->next) {
        if ((*pp)->req_id == id) {
            greq *q = *pp;
            *pp = q->next;
            q->next = NULL;
            return q;
        }
    }
    return NULL;
}

static void finish(greq *q, int status, uint32_t retry_after, int replay, const char *body,
                   size_t len)
{
    char hdrs[160];
    int n = q->rid[0] ? snprintf(hdrs, sizeof(hdrs), "X-Request-Id: %s\r\n", q->rid) : 0;
    hdrs[n] = '\0';
    if (retry_after)
        n += snprintf(hdrs + n, sizeof(hdrs) - n, "Retry-After: %u\r\n", retry_after);
    if (replay)
        snprintf(hdrs + n, sizeof(hdrs) - n, "Idempotent-Replayed: true\r\n");
    if (q->req) {
        zx_http_req_set_data(q->req, NULL);
        zx_http_reply(q->req, status, "application/json", hdrs, body, len);
    }
    free(q->rep_body);
    free(q);
}

void zx_gw_finish_error(greq *q, int status, uint32_t retry_after, const char *msg)
{
    json_t *o = json_pack("{s:s, s:i}", "error", msg, "status", status);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (!s) {
        zx_error("event=reply_encoding_failed status=%d", status);
        static const char oom[] = "{\"error\":\"out of memory\",\"status\":503}";
        finish(q, 503, 1, 0, oom, sizeof(oom) - 1);
    } else {
        finish(q, status, retry_after, 0, s, strlen(s));
    }
    free(s);
    json_decref(o);
}

_Static_assert(ZX_WEBHOOK_ID_MAX <= ZX_PUSH_IDEM_MAX, "a webhook-id is taken as an Idempotency-Key");

/* Try to put q's body into its worker's ring.  1 done (or answered), 0 no room. */
static int hand_over(gateway *g, greq *q)
{
    gpipe *p = q->p;
    size_t blen;
    const char *body = zx_http_body(q->req, &blen);
    /* A signed push's key is its webhook-id, always: the id is signed, an
     * Idempotency-Key header is not, and a copy of the push replayed
     * within the timestamp's 5 minutes with another Idempotency-Key must
     * still be written once.  A sender's retries keep the id too. */
    const char *idem = q->signed_push ? zx_http_header(q->req, "webhook-id")
                                      : zx_http_header(q->req, "Idempotency-Key");
    size_t ilen = idem ? strlen(idem) : 0;
    size_t rlen = strlen(q->rid);
    size_t len = zx_push_req_size(ilen, rlen, blen);
    void *buf;
    zx_ring_result r = zx_ring_reserve(&p->seg.in, len, &buf);
    if (r == ZX_RING_WOULD_BLOCK)
        return 0;
    if (r != ZX_RING_OK) {
        zx_gw_finish_error(q, 413, 0, "request body too large for this stream");
        return 1;
    }
    uint16_t flags = 0;
    const char *wait = zx_http_query_param(q->req, "wait");
    if (wait && strcmp(wait, "commit") == 0)
        flags |= ZX_PUSH_WAIT_COMMIT;
    if (zx_body_format_from_content_type(zx_http_header(q->req, "Content-Type")) == ZX_BODY_NDJSON)
        flags |= ZX_PUSH_NDJSON;
    const char *fmt = zx_http_query_param(q->req, "format");
    if (fmt && strcmp(fmt, "ndjson") == 0)
        flags |= ZX_PUSH_NDJSON;
    /* The worker must have the rows in its frames ring by the end of the
     * back-pressure wait (at least 1 s after the hand-over, so that a
     * worker that is merely busy parsing is not refused), or it answers
     * 503 and writes nothing; we wait a little longer than that for its
     * answer, or for the commit. */
    int64_t bp_ms = g->a->conf->http.backpressure_timeout_ms;
    int64_t cm_ms = g->a->conf->http.commit_timeout_ms ? g->a->conf->http.commit_timeout_ms : 30000;
    int wait_commit = (flags & ZX_PUSH_WAIT_COMMIT) || p->ack_commit;
    int64_t worker_deadline_ms = q->queued_at_ms + bp_ms;
    if (worker_deadline_ms < zx_mono_ms() + 1000)
        worker_deadline_ms = zx_mono_ms() + 1000;
    zx_push_req_write(buf, flags, q->req_id, zx_now_us(), worker_deadline_ms * 1000, idem, ilen,
                      q->rid, rlen, body, blen);
    zx_ring_commit(&p->seg.in, len, 1);
    q->deadline_ms = worker_deadline_ms + (wait_commit ? cm_ms : 3000);
    q->pending = 1;
    bucket_add(g, q);
    return 1;
}

static void queue_push(gpipe *p, greq *q)
{
    q->pending = 1;
    q->next = NULL;
    if (p->wait_tail)
        p->wait_tail->next = q;
    else
        p->wait_head = q;
    p->wait_tail = q;
}

static void retry_queue(gateway *g, gpipe *p)
{
    while (p->wait_head) {
        greq *q = p->wait_head;
        greq *nx = q->next;
        q->next = NULL;
        if (!hand_over(g, q)) {
            q->next = nx;
            return;
        }
        p->wait_head = nx;
        if (!nx)
            p->wait_tail = NULL;
    }
}

void zx_gw_read_replies(gateway *g, gpipe *p)
{
    int any = 0;
    for (;;) {
        const void *rec;
        size_t len;
        uint64_t seq;
        zx_ring_result r = zx_ring_next(&p->seg.out, &p->out_cur, &rec, &len, &seq);
        if (r == ZX_RING_WOULD_BLOCK)
            break;
        if (r != ZX_RING_OK) {
            zx_error("event=ring_corrupt pipeline=%s ring=out", p->name);
            break;
        }
        any = 1;
        const zx_push_rep *h;
        const char *body;
        if (zx_push_rep_parse(rec, len, &h, &body) < 0) {
            zx_error("event=bad_reply_record pipeline=%s", p->name);
            continue;
        }
        /* Ids carry the gateway's generation: an answer meant for a
         * request of an earlier gateway (same rings) matches nothing. */
        greq *q = bucket_take(g, h->req_id);
        if (q && q->p != p) {
            /* cannot happen: ids are unique in this gateway */
            zx_error("event=reply_for_other_stream pipeline=%s", p->name);
            bucket_add(g, q);
            q = NULL;
        }
        if (q && (h->flags & ZX_PUSH_REP_AFTER_COMMIT) && h->after_seq &&
            zx_ring_acked_seq(&p->seg.frames) < h->after_seq) {
            /* held until the writer acknowledges the frame: it wakes us */
            if (!(q->rep_body = malloc(h->body_len + 1))) {
                zx_gw_finish_error(q, 503, 1, "out of memory waiting for the commit; the rows "
                                   "may be written: retry with the same Idempotency-Key");
                continue;
            }
            memcpy(q->rep_body, body, h->body_len);
            q->rep_len = h->body_len;
            q->rep_status = h->status;
            q->rep_flags = h->flags;
            q->after_seq = h->after_seq;
            q->next = p->commit_head;
            p->commit_head = q;
            continue;
        }
        if (q) /* else: a request of an earlier gateway, or timed out */
            finish(q, h->status, h->retry_after, h->flags & ZX_PUSH_REP_REPLAY, body, h->body_len);
    }
    if (any)
        zx_ring_release(&p->seg.out, &p->out_cur, 1);
    if (p->commit_head)
        zx_gw_commits(p);
}

void zx_gw_commits(gpipe *p)
{
    zx_seg_hdr *h = p->seg.hdr;
    for (;;) {
        uint64_t acked = zx_ring_acked_seq(&p->seg.frames), low = 0;
        for (greq **pp = &p->commit_head; *pp;) {
            greq *q = *pp;
            if (q->after_seq <= acked) {
                *pp = q->next;
                q->next = NULL;
                q->pending = 0;
                finish(q, q->rep_status, 0, q->rep_flags & ZX_PUSH_REP_REPLAY, q->rep_body,
                       q->rep_len);
                continue;
            }
            if (!low || q->after_seq < low)
                low = q->after_seq;
            pp = &q->next;
        }
        if (atomic_load(&h->gw_commit_wait) != low)
            atomic_store(&h->gw_commit_wait, low);
        /* the writer may have released past low before it saw it */
        atomic_thread_fence(memory_order_seq_cst);
        if (!low || zx_ring_acked_seq(&p->seg.frames) < low)
            return;
    }
}

/* Unlink every request of the list at *head and answer it status (503:
 * retry) with why. */
static void fail_list(greq **head, int status, const char *why)
{
    while (*head) {
        greq *q = *head;
        *head = q->next;
        q->next = NULL;
        q->pending = 0;
        zx_gw_finish_error(q, status, status == 503 ? 1 : 0, why);
    }
}

void zx_gw_fail_commits(gpipe *p, int status, const char *why)
{
    fail_list(&p->commit_head, status, why);
    atomic_store(&p->seg.hdr->gw_commit_wait, 0);
}

int zx_gw_answer_if_stale(greq *q)
{
    gpipe *p = q->p;
    if (p->used && p->gen == q->pipe_gen)
        return 0;
    char msg[300];
    gpipe *now = zx_gw_find_pipe(q->g, q->pipe_name, strlen(q->pipe_name));
    if (!now) {
        snprintf(msg, sizeof(msg),
                 "stream %s was removed while the request was in flight; nothing was written",
                 q->pipe_name);
        zx_gw_finish_error(q, 404, 0, msg);
    } else {
        snprintf(msg, sizeof(msg),
                 "stream %s was reconfigured (new key or new rings) while the request was in "
                 "flight; nothing was written, retry",
                 q->pipe_name);
        zx_gw_finish_error(q, 503, 1, msg);
    }
    return 1;
}

void zx_gw_fail_waiting(gpipe *p, int status, const char *why)
{
    fail_list(&p->wait_head, status, why);
    p->wait_tail = NULL;
}

void zx_gw_on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    gateway *g = arg;
    zx_ring_drain_fd(g->a->self_efd);
    for (size_t i = 0; i < sizeof(g->pipes) / sizeof(g->pipes[0]); i++) {
        if (!g->pipes[i].used)
            continue;
        zx_gw_read_replies(g, &g->pipes[i]);
        if (g->pipes[i].commit_head)
            zx_gw_commits(&g->pipes[i]);
        retry_queue(g, &g->pipes[i]);
    }
}

void zx_gw_expire(gateway *g)
{
    int64_t now = zx_mono_ms();
    for (size_t i = 0; i < sizeof(g->pipes) / sizeof(g->pipes[0]); i++) {
        gpipe *p = &g->pipes[i];
        if (!p->used)
            continue;
        greq **pp = &p->wait_head;
        greq *last = NULL;
        while (*pp) {
            greq *q = *pp;
            if (q->deadline_ms <= now) {
                *pp = q->next;
                char msg[200];
                snprintf(msg, sizeof(msg), "stream %s is busy (its queue is full); retry later", p->name);
                zx_gw_finish_error(q, 503, 1, msg);
                continue;
            }
            last = q;
            pp = &q->next;
        }
        p->wait_tail = last;
        for (greq **cp = &p->commit_head; *cp;) {
            greq *q = *cp;
            if (q->deadline_ms <= now) {
                *cp = q->next;
                char msg[240];
                snprintf(msg, sizeof(msg), "stream %s did not commit in time; the rows may be "
                         "written: retry with the same Idempotency-Key to avoid duplicates",
                         p->name);
                zx_gw_finish_error(q, 503, 1, msg);
                continue;
            }
            cp = &q->next;
        }
        if (!p->commit_head && atomic_load(&p->seg.hdr->gw_commit_wait))
            atomic_store(&p->seg.hdr->gw_commit_wait, 0);
    }
    for (int b = 0; b < NBUCKETS; b++) {
        greq **pp = &g->buckets[b];
        while (*pp) {
            greq *q = *pp;
            if (q->deadline_ms <= now) {
                *pp = q->next;
                char msg[240];
                snprintf(msg, sizeof(msg),
                         "stream %s did not answer in time; retry (with the same Idempotency-Key to avoid duplicates)",
                         q->p->name);
                zx_gw_finish_error(q, 503, 1, msg);
                continue;
            }
            pp = &q->next;
        }
    }
}

void zx_gw_on_head(zx_http_req *req, void *ctx)
{
    gateway *g = ctx;
    const char *path = zx_http_path(req);
    const char *method = zx_http_method(req);
    if (strcmp(path, "/healthz") == 0) {
        if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
            zx_http_reply_json_error(req, 405, "Allow: GET\r\n", "method %s is not allowed on /healthz; use GET", method);
            return;
        }
        zx_gw_healthz(g, req);
        return;
    }
    if (zx_gw_is_api(path)) {
        zx_gw_api_head(g, req);
        return;
    }
    if (!strcmp(path, "/")) {
        zx_status_page_serve(g->a->conf, req);
        return;
    }
    static const char prefix[] = "/api/streams/";
    size_t plen = sizeof(prefix) - 1;
    size_t len = strlen(path);
    if (len <= plen + 5 || strncmp(path, prefix, plen) != 0 ||
        strcmp(path + len - 5, "/push") != 0) {
        zx_http_reply_json_error(req, 404, NULL, "no such endpoint: %.200s", path);
        return;
    }
    const char *name = path + plen;
    size_t nlen = len - plen - 5;
    gpipe *p = zx_gw_find_pipe(g, name, nlen);
    if (!p) {
        zx_http_reply_json_error(req, 404, NULL, "no stream named '%.*s'", (int)(nlen > 100 ? 100 : nlen), name);
        return;
    }
    if (strcmp(method, "POST") != 0) {
        zx_http_reply_json_error(req, 405, "Allow: POST\r\n", "method %s is not allowed; push with POST", method);
        return;
    }
    const char *auth = zx_http_header(req, "Authorization");
    const char *tok = NULL;
    int signed_push = 0;
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0)
        tok = auth + 7;
    if (!auth && p->whkey_len && zx_http_header(req, "webhook-signature")) {
        /* Standard Webhooks: the headers now, the signature over the body
         * once it is in (zx_gw_on_body) */
        char why[400];
        int64_t now_s = zx_now_us() / 1000000;
        if (zx_webhook_check_head(zx_http_header(req, "webhook-id"),
                                  zx_http_header(req, "webhook-timestamp"),
                                  zx_http_header(req, "webhook-signature"), now_s, why,
                                  sizeof(why)) < 0) {
            zx_http_reply_json_error(req, 401, NULL, "stream %s: %s", p->name, why);
            return;
        }
        signed_push = 1;
    } else if (!tok || !p->key ||
               !zx_ct_equal(tok, strlen(tok), p->key, strlen(p->key))) {
        zx_http_reply_json_error(req, 401, "WWW-Authenticate: Bearer\r\n",
                                 auth ? "wrong key for stream %s"
                                 : p->whkey_len ? "missing 'Authorization: Bearer <stream key>' "
                                                  "or 'webhook-signature' headers for stream %s"
                                 : "missing 'Authorization: Bearer <stream key>' header for "
                                   "stream %s",
                                 p->name);
        return;
    }
    const char *idem = zx_http_header(req, "Idempotency-Key");
    if (idem && (strlen(idem) == 0 || strlen(idem) > ZX_PUSH_IDEM_MAX)) {
        zx_http_reply_json_error(req, 400, NULL, "Idempotency-Key must be 1 to %d bytes long", ZX_PUSH_IDEM_MAX);
        return;
    }
    uint64_t cl = zx_http_content_length(req);
    if (cl != UINT64_MAX && cl > p->max_body) {
        zx_http_reply_json_error(req, 413, NULL, "body of %" PRIu64 " bytes is over the limit of %" PRIu64 " bytes for stream %s",
                                 cl, p->max_body, p->name);
        return;
    }
    if (atomic_load(&p->seg.hdr->worker_stopped)) {
        zx_http_reply_json_error(req, 503, "Retry-After: 5\r\n", "stream %s is %s", p->name,
                                 atomic_load(&p->seg.hdr->worker_failed) ? "failed (see zxctl status)" : "stopped");
        return;
    }
    /* The memory bodies take in this process is bounded by the HTTP
     * server (max_held_bytes), counted as they are held. */
    greq *q = calloc(1, sizeof(*q));
    if (!q) {
        zx_http_reply_json_error(req, 503, "Retry-After: 1\r\n", "out of memory");
        return;
    }
    q->g = g;
    q->req = req;
    q->p = p;
    q->pipe_gen = p->gen;
    q->signed_push = signed_push;
    snprintf(q->pipe_name, sizeof(q->pipe_name), "%s", p->name);
    zx_http_req_set_data(req, q);
    if (signed_push)
        zx_http_req_defer_trust(req);
}

void zx_gw_on_body(zx_http_req *req, void *ctx)
{
    gateway *g = ctx;
    greq *q = zx_http_req_get_data(req);
    size_t blen;
    if (q && q->api) {
        zx_gw_api_body(g, q);
        return;
    }
    const char *body = zx_http_body(req, &blen);
    /* The stream may have been removed, recreated or given a new key
     * while the body was arriving: its slot may even hold another stream
     * now.  The request belongs to the one it authenticated against. */
    if (zx_gw_answer_if_stale(q))
        return;
    gpipe *p = q->p;
    if (blen > p->max_body) {
        char msg[200];
        snprintf(msg, sizeof(msg), "body of %zu bytes is over the limit of %" PRIu64 " bytes for stream %s",
                 blen, p->max_body, p->name);
        zx_gw_finish_error(q, 413, 0, msg);
        return;
    }
    if (q->signed_push) {
        /* the stream's secret may have changed since the head: then the
         * request is stale and was answered above */
        int ok = zx_webhook_verify(p->whkey, (size_t)p->whkey_len,
                                   zx_http_header(req, "webhook-id"),
                                   zx_http_header(req, "webhook-timestamp"), body, blen,
                                   zx_http_header(req, "webhook-signature"));
        if (ok != 1) {
            char msg[200];
            snprintf(msg, sizeof(msg), ok < 0 ? "out of memory checking the signature"
                     : "webhook-signature does not match the body for stream %s (signed with "
                       "another secret, or the body changed on the way)", p->name);
            zx_gw_finish_error(q, ok < 0 ? 503 : 401, ok < 0 ? 1 : 0, msg);
            return;
        }
        zx_http_req_trust(req);
    }
    if ((++g->next_id & ((1ull << 40) - 1)) == 0) {
        /* 2^40 requests in one gateway's life: end it, a new generation
         * starts with fresh ids */
        zx_error("event=fatal error=\"request ids exhausted; restarting the gateway\"");
        _exit(1);
    }
    q->req_id = g->next_id;
    q->queued_at_ms = zx_mono_ms();
    snprintf(q->rid, sizeof(q->rid), "%08" PRIx64 "%08" PRIx64, g->rid_base & 0xffffffffu,
             q->req_id & 0xffffffffu);
    if (p->wait_head || !hand_over(g, q)) {
        q->deadline_ms = zx_mono_ms() + g->a->conf->http.backpressure_timeout_ms;
        queue_push(p, q);
    }
}

void zx_gw_on_drop(zx_http_req *req, void *ctx)
{
    (void)ctx;
    greq *q = zx_http_req_get_data(req);
    if (!q)
        return;
    if (q->api) {
        zx_gw_api_drop(q->g, q);
        return;
    }
    if (q->pending) {
        /* still in a bucket or a queue (server shutting down): it is freed
         * when it is answered, into the void */
        q->req = NULL;
        return;
    }
    /* the client left during the body, or the server answered 413/400 */
    free(q);
}
