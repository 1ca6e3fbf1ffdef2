/*
 * gateway.c — HTTP routes of the gateway and the hand-off to stream
 * workers.  See gateway.h.
 *
 * It must never: look inside a push body, write a secret to a log, or let
 * a request wait without a deadline.
 */
#include "workers/gateway/gateway.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/json_rows.h"
#include "common/log.h"
#include "common/segment.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "proto/chan.h"
#include "proto/push.h"
#include "workers/gateway/http.h"

#define NBUCKETS 4096

/* SIGTERM/SIGINT set this; the 100 ms tick acts on it.  (libevent's
 * evsignal is not used here: after fork() its signal state still belongs
 * to the supervisor's event base.) */
static volatile sig_atomic_t term_requested;

static void on_term_signal(int sig)
{
    (void)sig;
    term_requested = 1;
}

typedef struct gpipe gpipe;
typedef struct gateway gateway;

/* A push from its headers on: reading its body, waiting for room in its
 * worker's ring, or handed over and waiting for the answer. */
typedef struct greq {
    gateway *g;
    zx_http_req *req;        /* NULL once the server dropped it (shutdown) */
    gpipe *p;
    uint64_t reserved;       /* announced Content-Length, until the body is in */
    uint64_t held;           /* body bytes held, once it is in */
    int pending;             /* in a bucket or a wait queue */
    uint64_t req_id;
    char rid[24];
    int64_t deadline_ms;
    struct greq *next;       /* bucket chain or wait queue */
    int queued;              /* 1 while in the wait queue */
    int64_t queued_at_ms;    /* when the body was complete */
} greq;

struct gpipe {
    char name[64];
    char *key;
    int ack_commit;
    uint64_t max_body;
    zx_segment seg;
    int worker_efd;
    zx_ring_cursor out_cur;
    greq *wait_head, *wait_tail;   /* waiting for room in the in ring */
    int used;
};

struct gateway {
    const zx_gateway_args *a;
    uint64_t mem;            /* request body bytes held or announced */
    uint64_t mem_cap;        /* beyond: 503 before reading a body */
    struct event_base *base;
    zx_http_server *http;
    gpipe pipes[256];
    greq *buckets[NBUCKETS];
    uint64_t next_id;
    uint64_t rid_base;
    int stopping;
    int64_t stop_deadline;
};

static gpipe *find_pipe(gateway *g, const char *name, size_t n)
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
    int n = snprintf(hdrs, sizeof(hdrs), "X-Request-Id: %s\r\n", q->rid);
    if (retry_after)
        n += snprintf(hdrs + n, sizeof(hdrs) - n, "Retry-After: %u\r\n", retry_after);
    if (replay)
        snprintf(hdrs + n, sizeof(hdrs) - n, "Idempotent-Replayed: true\r\n");
    q->g->mem -= q->reserved + q->held;
    if (q->req) {
        zx_http_req_set_data(q->req, NULL);
        zx_http_reply(q->req, status, "application/json", hdrs, body, len);
    }
    free(q);
}

static void finish_error(greq *q, int status, uint32_t retry_after, const char *msg)
{
    json_t *o = json_pack("{s:s, s:i}", "error", msg, "status", status);
    char *s = json_dumps(o, JSON_COMPACT);
    finish(q, status, retry_after, 0, s, strlen(s));
    free(s);
    json_decref(o);
}

/* Try to put q's body into its worker's ring.  1 done (or answered), 0 no room. */
static int hand_over(gateway *g, greq *q)
{
    gpipe *p = q->p;
    size_t blen;
    const char *body = zx_http_body(q->req, &blen);
    const char *idem = zx_http_header(q->req, "Idempotency-Key");
    size_t ilen = idem ? strlen(idem) : 0;
    size_t rlen = strlen(q->rid);
    size_t len = zx_push_req_size(ilen, rlen, blen);
    void *buf;
    zx_ring_result r = zx_ring_reserve(&p->seg.in, len, &buf);
    if (r == ZX_RING_WOULD_BLOCK)
        return 0;
    if (r != ZX_RING_OK) {
        finish_error(q, 413, 0, "request body too large for this stream");
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
    q->queued = 1;
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
        q->queued = 0;
        q->next = NULL;
        if (!hand_over(g, q)) {
            q->queued = 1;
            q->next = nx;
            return;
        }
        p->wait_head = nx;
        if (!nx)
            p->wait_tail = NULL;
    }
}

static void read_replies(gateway *g, gpipe *p)
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
        greq *q = bucket_take(g, h->req_id);
        if (q) /* else: a request of an earlier gateway, or timed out */
            finish(q, h->status, h->retry_after, h->flags & ZX_PUSH_REP_REPLAY, body, h->body_len);
    }
    if (any)
        zx_ring_release(&p->seg.out, &p->out_cur, 1);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    gateway *g = arg;
    zx_ring_drain_fd(g->a->self_efd);
    for (size_t i = 0; i < sizeof(g->pipes) / sizeof(g->pipes[0]); i++) {
        if (!g->pipes[i].used)
            continue;
        read_replies(g, &g->pipes[i]);
        retry_queue(g, &g->pipes[i]);
    }
}

static void expire(gateway *g)
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
                finish_error(q, 503, 1, msg);
                continue;
            }
            last = q;
            pp = &q->next;
        }
        p->wait_tail = last;
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
                finish_error(q, 503, 1, msg);
                continue;
            }
            pp = &q->next;
        }
    }
}

static void on_term(gateway *g);

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    gateway *g = arg;
    if (term_requested)
        on_term(g);
    on_wake(-1, 0, g);
    expire(g);
    if (g->stopping) {
        size_t pending = zx_http_server_pending(g->http);
        if (pending == 0 || zx_mono_ms() > g->stop_deadline)
            event_base_loopbreak(g->base);
    }
}

static void healthz(gateway *g, zx_http_req *req)
{
    json_t *streams = json_object();
    json_t *reasons = json_array();
    int writer_up = 1, n = 0;
    for (size_t i = 0; i < sizeof(g->pipes) / sizeof(g->pipes[0]); i++) {
        gpipe *p = &g->pipes[i];
        if (!p->used)
            continue;
        zx_seg_hdr *h = p->seg.hdr;
        n++;
        if (!atomic_load(&h->writer_up))
            writer_up = 0;
        const char *st;
        if (atomic_load(&h->worker_failed))
            st = "failed";
        else if (atomic_load(&h->worker_stopped))
            st = "stopped";
        else if (atomic_load(&h->worker_up) && atomic_load(&h->worker_ready))
            st = "up";
        else
            st = "down";
        json_object_set_new(streams, p->name, json_string(st));
        if (strcmp(st, "down") == 0 || strcmp(st, "failed") == 0) {
            char msg[128];
            snprintf(msg, sizeof(msg), "stream %s worker %s", p->name,
                     st[0] == 'f' ? "has failed (crashed too often; zxctl start to retry)" : "is not running");
            json_array_append_new(reasons, json_string(msg));
        }
    }
    if (n > 0 && !writer_up)
        json_array_insert_new(reasons, 0, json_string("writer is not running"));
    int ok = json_array_size(reasons) == 0;
    json_t *o = json_pack("{s:s, s:s, s:o}", "status", ok ? "ok" : "unavailable", "writer",
                          writer_up ? "up" : "down", "streams", streams);
    if (!ok)
        json_object_set_new(o, "reasons", reasons);
    else
        json_decref(reasons);
    char *s = json_dumps(o, JSON_COMPACT);
    zx_http_reply(req, ok ? 200 : 503, "application/json", ok ? NULL : "Retry-After: 1\r\n", s,
                  strlen(s));
    free(s);
    json_decref(o);
}

static void on_head(zx_http_req *req, void *ctx)
{
    gateway *g = ctx;
    const char *path = zx_http_path(req);
    const char *method = zx_http_method(req);
    if (strcmp(path, "/healthz") == 0) {
        if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
            zx_http_reply_json_error(req, 405, "Allow: GET\r\n", "method %s is not allowed on /healthz; use GET", method);
            return;
        }
        healthz(g, req);
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
    gpipe *p = find_pipe(g, name, nlen);
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
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0)
        tok = auth + 7;
    if (!tok || !p->key ||
        !zx_ct_equal(tok, strlen(tok), p->key, strlen(p->key))) {
        zx_http_reply_json_error(req, 401, "WWW-Authenticate: Bearer\r\n",
                                 auth ? "wrong key for stream %s" : "missing 'Authorization: Bearer <stream key>' header for stream %s",
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
    /* Bound the memory that bodies can take in this process, whatever the
     * number of connections: announced sizes count from the headers on. */
    uint64_t announced = cl == UINT64_MAX ? 0 : cl;
    if (g->mem + announced > g->mem_cap) {
        zx_http_reply_json_error(req, 503, "Retry-After: 1\r\n",
                                 "the gateway holds too many request bodies (%" PRIu64 " bytes); retry",
                                 g->mem);
        return;
    }
    greq *q = calloc(1, sizeof(*q));
    if (!q) {
        zx_http_reply_json_error(req, 503, "Retry-After: 1\r\n", "out of memory");
        return;
    }
    q->g = g;
    q->req = req;
    q->p = p;
    q->reserved = announced;
    g->mem += announced;
    zx_http_req_set_data(req, q);
}

static void on_body(zx_http_req *req, void *ctx)
{
    gateway *g = ctx;
    greq *q = zx_http_req_get_data(req);
    size_t blen;
    zx_http_body(req, &blen);
    g->mem -= q->reserved;
    q->reserved = 0;
    q->held = blen;
    g->mem += blen;
    gpipe *p = q->p;
    if (!p->used) {
        finish_error(q, 404, 0, "stream was removed");
        return;
    }
    if (blen > p->max_body) {
        char msg[200];
        snprintf(msg, sizeof(msg), "body of %zu bytes is over the limit of %" PRIu64 " bytes for stream %s",
                 blen, p->max_body, p->name);
        finish_error(q, 413, 0, msg);
        return;
    }
    q->req_id = ++g->next_id;
    q->queued_at_ms = zx_mono_ms();
    snprintf(q->rid, sizeof(q->rid), "%08" PRIx64 "%08" PRIx64, g->rid_base & 0xffffffffu,
             q->req_id & 0xffffffffu);
    if (p->wait_head || !hand_over(g, q)) {
        q->deadline_ms = zx_mono_ms() + g->a->conf->http.backpressure_timeout_ms;
        queue_push(p, q);
    }
}

static void on_drop(zx_http_req *req, void *ctx)
{
    gateway *g = ctx;
    greq *q = zx_http_req_get_data(req);
    if (!q)
        return;
    if (q->pending) {
        /* still in a bucket or a queue (server shutting down): it is freed
         * when it is answered, into the void */
        q->req = NULL;
        return;
    }
    /* the client left during the body, or the server answered 413/400 */
    g->mem -= q->reserved + q->held;
    free(q);
}

static void attach(gateway *g, const char *json, int *fds, int nfds)
{
    json_t *o = json_loads(json, 0, NULL);
    const char *name = o ? json_string_value(json_object_get(o, "name")) : NULL;
    if (!name || nfds != 2) {
        zx_error("event=bad_attach");
        goto out;
    }
    gpipe *p = find_pipe(g, name, strlen(name));
    if (!p) {
        for (size_t i = 0; i < sizeof(g->pipes) / sizeof(g->pipes[0]) && !p; i++)
            if (!g->pipes[i].used)
                p = &g->pipes[i];
        if (!p)
            goto out;
        char err[256];
        if (zx_segment_map(&p->seg, fds[0], err, sizeof(err)) < 0) {
            zx_error("event=attach_failed pipeline=%s error=\"%s\"", name, err);
            goto out;
        }
        snprintf(p->name, sizeof(p->name), "%s", name);
        p->worker_efd = fds[1];
        fds[1] = -1;
        zx_ring_set_peer(&p->seg.in, p->worker_efd);
        zx_ring_set_peer(&p->seg.out, p->worker_efd);
        zx_ring_cursor_init(&p->seg.out, &p->out_cur);
        p->used = 1;
    }
    free(p->key);
    const char *key = json_string_value(json_object_get(o, "key"));
    p->key = key ? strdup(key) : NULL;
    p->ack_commit = json_is_true(json_object_get(o, "ack_commit"));
    json_int_t mb = json_integer_value(json_object_get(o, "max_body_size"));
    p->max_body = mb > 0 ? (uint64_t)mb : g->a->conf->http.max_body_size;
    zx_info("event=attach pipeline=%s", p->name);
out:
    for (int i = 0; i < nfds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    json_decref(o);
}

static void detach(gateway *g, const char *name)
{
    gpipe *p = find_pipe(g, name, strlen(name));
    if (!p)
        return;
    /* answer everything still waiting for this stream */
    while (p->wait_head) {
        greq *q = p->wait_head;
        p->wait_head = q->next;
        finish_error(q, 404, 0, "stream was removed");
    }
    p->wait_tail = NULL;
    for (int b = 0; b < NBUCKETS; b++) {
        greq **pp = &g->buckets[b];
        while (*pp) {
            greq *q = *pp;
            if (q->p == p) {
                *pp = q->next;
                finish_error(q, 503, 1, "stream is being removed or reconfigured; retry");
                continue;
            }
            pp = &q->next;
        }
    }
    zx_info("event=detach pipeline=%s", p->name);
    zx_segment_close(&p->seg);
    close(p->worker_efd);
    free(p->key);
    memset(p, 0, sizeof(*p));
}

static void on_chan(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    gateway *g = arg;
    char buf[ZX_CHAN_MAX];
    for (;;) {
        int fds[4], nfds = 0;
        int t = zx_chan_recv(fd, buf, sizeof(buf), fds, &nfds);
        if (t == 0 || (t < 0 && errno != EAGAIN)) {
            zx_warn("event=supervisor_gone");
            g->stopping = 1;
            g->stop_deadline = zx_mono_ms();
            event_base_loopbreak(g->base);
            return;
        }
        if (t < 0)
            return;
        if (t == ZX_CHAN_ATTACH) {
            attach(g, buf, fds, nfds);
            continue;
        }
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        if (t == ZX_CHAN_DETACH) {
            json_t *o = json_loads(buf, 0, NULL);
            const char *name = o ? json_string_value(json_object_get(o, "name")) : NULL;
            if (name)
                detach(g, name);
            json_decref(o);
        }
    }
}

static void on_term(gateway *g)
{
    if (g->stopping)
        return;
    g->stopping = 1;
    g->stop_deadline = zx_mono_ms() + 5000;
    zx_http_server_stop_accepting(g->http);
    zx_info("event=draining pending=%zu", zx_http_server_pending(g->http));
}

int zx_gateway_main(const zx_gateway_args *a)
{
    gateway *g = calloc(1, sizeof(*g));
    if (!g)
        return 1;
    g->a = a;
    int rc = 1;
    zx_random(&g->rid_base, sizeof(g->rid_base));
    g->base = event_base_new();
    const zx_conf_http *hc = &a->conf->http;
    zx_http_limits lim = {hc->max_body_size, hc->max_header_size, hc->max_connections,
                          hc->idle_timeout_ms};
    /* the server-wide body limit is the largest any stream accepts */
    for (size_t i = 0; i < a->conf->npipelines; i++)
        if (a->conf->pipelines[i].max_body_size > lim.max_body_size)
            lim.max_body_size = a->conf->pipelines[i].max_body_size;
    g->mem_cap = 4 * lim.max_body_size;
    if (g->mem_cap < 256u * 1024 * 1024)
        g->mem_cap = 256u * 1024 * 1024;
    g->http = zx_http_server_new(g->base, &lim, on_head, on_body, g);
    /* Take the initial ATTACH messages before accepting anything. */
    char buf[ZX_CHAN_MAX];
    struct timeval rt = {10, 0};
    setsockopt(a->chan, SOL_SOCKET, SO_RCVTIMEO, &rt, sizeof(rt));
    for (;;) {
        int fds[4], nfds = 0;
        int t = zx_chan_recv(a->chan, buf, sizeof(buf), fds, &nfds);
        if (t == ZX_CHAN_ATTACH) {
            attach(g, buf, fds, nfds);
            continue;
        }
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        if (t == ZX_CHAN_READY)
            break;
        if (t <= 0) {
            zx_error("event=fatal error=\"no pipeline list from the supervisor\"");
            goto out;
        }
    }
    if (!g->base || !g->http || zx_http_server_listen_fd(g->http, a->listen_fd) < 0) {
        zx_error("event=fatal error=\"cannot start the HTTP server\"");
        goto out;
    }
    zx_http_server_set_drop_cb(g->http, on_drop);
    zx_set_nonblock(a->chan);
    struct event *ev_wake = event_new(g->base, a->self_efd, EV_READ | EV_PERSIST, on_wake, g);
    struct event *ev_chan = event_new(g->base, a->chan, EV_READ | EV_PERSIST, on_chan, g);
    struct event *ev_tick = event_new(g->base, -1, EV_PERSIST, on_tick, g);
    struct sigaction sa = {0};
    sa.sa_handler = on_term_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct timeval tv = {0, 100 * 1000};
    event_add(ev_wake, NULL);
    event_add(ev_chan, NULL);
    event_add(ev_tick, &tv);
    zx_info("event=ready listen=%s", hc->listen);
    event_base_dispatch(g->base);
    zx_info("event=stop pending=%zu", zx_http_server_pending(g->http));
    rc = 0;
    /* fail whatever still waits, then free */
    for (size_t i = 0; i < sizeof(g->pipes) / sizeof(g->pipes[0]); i++)
        if (g->pipes[i].used)
            detach(g, g->pipes[i].name);
    zx_http_server_free(g->http);
    g->http = NULL;
    event_free(ev_wake);
    event_free(ev_chan);
    event_free(ev_tick);
out:
    zx_http_server_free(g->http);
    if (g->base)
        event_base_free(g->base);
    free(g);
    return rc;
}
