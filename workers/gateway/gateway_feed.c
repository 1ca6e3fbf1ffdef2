/*
 * gateway_feed.c — GET /api/feed: the feed's events in a ring, served as
 * server-sent events to at most ZX_GWFEED_MAX_CLIENTS clients, each with
 * its output bounded.  See gateway_feed.h.
 *
 * It must never: wait on a client, let a client's output pass its bound,
 * or write anything but whole frames.
 */
#include "workers/gateway/gateway_feed.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

/* ---- the ring ------------------------------------------------------- */

struct zx_gwfeed_ring {
    zx_gwfeed_ev *ev;   /* max_events slots, a circle from head */
    size_t max_events, max_bytes;
    size_t head, count, bytes;
    uint64_t lost;      /* the newest id known to be missing */
    uint64_t newest;    /* the newest id added (held or not) */
};

zx_gwfeed_ring *zx_gwfeed_ring_new(size_t max_events, size_t max_bytes)
{
    if (!max_events || !max_bytes)
        return NULL;
    zx_gwfeed_ring *r = calloc(1, sizeof(*r));
    if (!r || !(r->ev = calloc(max_events, sizeof(*r->ev)))) {
        free(r);
        return NULL;
    }
    r->max_events = max_events;
    r->max_bytes = max_bytes;
    return r;
}

void zx_gwfeed_ring_free(zx_gwfeed_ring *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->count; i++)
        free(r->ev[(r->head + i) % r->max_events].frame);
    free(r->ev);
    free(r);
}

static zx_gwfeed_ev *at(const zx_gwfeed_ring *r, size_t i)
{
    return &r->ev[(r->head + i) % r->max_events];
}

static void evict_oldest(zx_gwfeed_ring *r)
{
    zx_gwfeed_ev *e = at(r, 0);
    if (e->id > r->lost)
        r->lost = e->id;
    r->bytes -= e->len;
    free(e->frame);
    e->frame = NULL;
    r->head = (r->head + 1) % r->max_events;
    r->count--;
}

/* An event kind fit for an "event:" line: 1..64 of [A-Za-z0-9_.-]. */
static int kind_ok(const char *k)
{
    size_t n = k ? strlen(k) : 0;
    if (!n || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
              (k[i] >= '0' && k[i] <= '9') || k[i] == '_' || k[i] == '.' || k[i] == '-'))
            return 0;
    return 1;
}

int zx_gwfeed_ring_add(zx_gwfeed_ring *r, uint64_t id, uint64_t lost, const char *json,
                       size_t len)
{
    if (lost > r->lost)
        r->lost = lost;
    if (!id || id <= r->newest || id <= r->lost)
        return 1;
    r->newest = id;
    json_t *o = json_loadb(json, len, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        r->lost = id;
        return 1;
    }
    /* compact JSON is one line: control characters in strings are escaped */
    char *data = json_dumps(o, JSON_COMPACT);
    const char *kind = json_string_value(json_object_get(o, "event"));
    char *frame = NULL;
    int n = data ? asprintf(&frame, "id: %llu\nevent: %s\ndata: %s\n\n", (unsigned long long)id,
                            kind_ok(kind) ? kind : "message", data)
                 : -1;
    free(data);
    json_decref(o);
    if (n < 0) {
        r->lost = id;
        return -1;
    }
    if ((size_t)n > r->max_bytes) {
        free(frame);
        r->lost = id;
        return 1;
    }
    while (r->count && (r->count == r->max_events || r->bytes + (size_t)n > r->max_bytes))
        evict_oldest(r);
    zx_gwfeed_ev *e = at(r, r->count);
    e->id = id;
    e->frame = frame;
    e->len = (size_t)n;
    r->count++;
    r->bytes += (size_t)n;
    return 0;
}

const zx_gwfeed_ev *zx_gwfeed_ring_after(const zx_gwfeed_ring *r, uint64_t after)
{
    size_t lo = 0, hi = r->count;   /* ids increase: the first id > after */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (at(r, mid)->id > after)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo < r->count ? at(r, lo) : NULL;
}

uint64_t zx_gwfeed_ring_lost(const zx_gwfeed_ring *r)
{
    return r->lost;
}

int zx_gwfeed_ring_gap(const zx_gwfeed_ring *r, uint64_t after)
{
    return r->lost > after;
}

uint64_t zx_gwfeed_ring_oldest(const zx_gwfeed_ring *r)
{
    return r->count ? at(r, 0)->id : 0;
}

uint64_t zx_gwfeed_ring_newest(const zx_gwfeed_ring *r)
{
    return r->count ? at(r, r->count - 1)->id : 0;
}

size_t zx_gwfeed_ring_count(const zx_gwfeed_ring *r)
{
    return r->count;
}

size_t zx_gwfeed_ring_bytes(const zx_gwfeed_ring *r)
{
    return r->bytes;
}

/* ---- the request's start -------------------------------------------- */

int zx_gwfeed_parse_start(const char *last_event_id, const char *q_last, const char *q_since,
                          enum zx_gwfeed_from *from, uint64_t *after, char *why, size_t whylen)
{
    const char *v = last_event_id ? last_event_id : q_last;
    *from = ZX_GWFEED_HISTORY;
    *after = 0;
    if (q_since && strcmp(q_since, "now")) {
        snprintf(why, whylen, "since must be \"now\" (or absent: the history first)");
        return -1;
    }
    if (!v) {
        if (q_since)
            *from = ZX_GWFEED_NOW;
        return 0;
    }
    size_t n = strlen(v);
    uint64_t x = 0;
    int ok = n > 0 && n <= ZX_GWFEED_ID_MAX_CHARS;
    for (size_t i = 0; ok && i < n; i++) {
        unsigned d = (unsigned)(v[i] - '0');
        if (v[i] < '0' || v[i] > '9' || x > (UINT64_MAX - d) / 10)
            ok = 0;
        else
            x = x * 10 + d;
    }
    if (!ok) {
        snprintf(why, whylen, "%s must be an event id: 1 to %d digits, at most %llu",
                 last_event_id ? "Last-Event-ID" : "last_event_id", ZX_GWFEED_ID_MAX_CHARS,
                 (unsigned long long)UINT64_MAX);
        return -1;
    }
    *from = ZX_GWFEED_AFTER;
    *after = x;
    return 0;
}

/* ---- clients --------------------------------------------------------- */

typedef struct fclient {
    zx_gwfeed *f;
    zx_http_stream *st;
    uint64_t last;        /* the newest id sent (or the start point) */
    uint64_t lost_seen;   /* the ring's lost mark it was told of */
    int replaying;        /* held events wait for it: paced by its reading */
    int64_t last_write_ms;
    struct fclient *prev, *next;
} fclient;

struct zx_gwfeed {
    zx_gwfeed_ring *ring;
    fclient *clients;
    size_t nclients;
    uint64_t dropped;
};

zx_gwfeed *zx_gwfeed_new(void)
{
    zx_gwfeed *f = calloc(1, sizeof(*f));
    if (f && !(f->ring = zx_gwfeed_ring_new(ZX_GWFEED_MAX_EVENTS, ZX_GWFEED_MAX_BYTES))) {
        free(f);
        f = NULL;
    }
    return f;
}

static void client_unlink(fclient *c)
{
    zx_gwfeed *f = c->f;
    if (c->prev)
        c->prev->next = c->next;
    else
        f->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    f->nclients--;
    free(c);
}

/* Close c (now, or once flushed) and forget it. */
static void client_close(fclient *c, int flush)
{
    zx_http_stream *st = c->st;
    client_unlink(c);
    zx_http_stream_close(st, flush);
}

static void client_drop(fclient *c, const char *why)
{
    c->f->dropped++;
    zx_warn("event=feed_client_dropped peer=%s queued=%zu dropped=%llu reason=\"%s\"",
            zx_http_stream_peer(c->st), zx_http_stream_queued(c->st),
            (unsigned long long)c->f->dropped, why);
    client_close(c, 0);
}

void zx_gwfeed_free(zx_gwfeed *f)
{
    if (!f)
        return;
    while (f->clients)
        client_close(f->clients, 0);
    zx_gwfeed_ring_free(f->ring);
    free(f);
}

static int client_write(fclient *c, const char *p, size_t n)
{
    if (zx_http_stream_write(c->st, p, n) < 0) {
        client_drop(c, "out of memory");
        return -1;
    }
    c->last_write_ms = zx_mono_ms();
    return 0;
}

static int write_gap(fclient *c)
{
    char b[160];
    zx_gwfeed_ring *r = c->f->ring;
    uint64_t oldest = zx_gwfeed_ring_oldest(r);
    char os[24] = "null";
    if (oldest)
        snprintf(os, sizeof(os), "%llu", (unsigned long long)oldest);
    int n = snprintf(b, sizeof(b), "event: gap\ndata: {\"after\":%llu,\"oldest\":%s}\n\n",
                     (unsigned long long)c->last, os);
    c->lost_seen = zx_gwfeed_ring_lost(r);
    return client_write(c, b, (size_t)n);
}

/* Send c what it has not had yet, within its bounds.  0, or -1 when c was
 * dropped (freed). */
static int client_pump(fclient *c)
{
    zx_gwfeed_ring *r = c->f->ring;
    uint64_t lost = zx_gwfeed_ring_lost(r);
    if (lost > c->lost_seen && lost > c->last) {
        /* an event it was not sent is gone: evicted before a slow reader
         * got to it, or never came from the supervisor */
        if (c->replaying)
            return client_drop(c, "too slow: events it was not sent left the ring"), -1;
        if (write_gap(c) < 0)
            return -1;
    }
    const zx_gwfeed_ev *e;
    while ((e = zx_gwfeed_ring_after(r, c->last))) {
        size_t q = zx_http_stream_queued(c->st);
        if (c->replaying && q + e->len > ZX_GWFEED_REPLAY_MAX && q > 0)
            return 0;   /* more when it has read (drained) */
        if (!c->replaying && q + e->len > ZX_GWFEED_CLIENT_MAX)
            return client_drop(c, "slow reader: its output is above the bound"), -1;
        if (client_write(c, e->frame, e->len) < 0)
            return -1;
        c->last = e->id;
    }
    c->replaying = 0;
    return 0;
}

static void on_closed(zx_http_stream *st, void *arg)
{
    (void)st;
    client_unlink(arg);
}

static void on_drained(zx_http_stream *st, void *arg)
{
    (void)st;
    fclient *c = arg;
    if (c->replaying)
        client_pump(c);
}

void zx_gwfeed_message(zx_gwfeed *f, const char *json)
{
    json_t *m = json_loads(json, 0, NULL);
    json_t *ev = json_object_get(m, "event");
    json_int_t id = json_integer_value(json_object_get(m, "id"));
    json_int_t lost = json_integer_value(json_object_get(m, "lost"));
    if (m && id == 0 && !ev && lost >= 0) {   /* the lost mark alone */
        zx_gwfeed_ring_add(f->ring, 0, (uint64_t)lost, "", 0);
        json_decref(m);
        return;
    }
    char *js = json_is_object(ev) && id > 0 && lost >= 0 ? json_dumps(ev, JSON_COMPACT) : NULL;
    if (!js) {
        zx_error("event=bad_feed_message");
        json_decref(m);
        return;
    }
    int rc = zx_gwfeed_ring_add(f->ring, (uint64_t)id, (uint64_t)lost, js, strlen(js));
    if (rc < 0)
        zx_error("event=feed_event_lost id=%lld error=\"out of memory\"", (long long)id);
    free(js);
    json_decref(m);
    for (fclient *c = f->clients, *nx; c; c = nx) {
        nx = c->next;
        client_pump(c);
    }
}

int zx_gwfeed_full(const zx_gwfeed *f, size_t pending)
{
    return f->nclients + pending >= ZX_GWFEED_MAX_CLIENTS;
}

void zx_gwfeed_start(zx_gwfeed *f, zx_http_req *req, enum zx_gwfeed_from from, uint64_t after)
{
    if (f->nclients >= ZX_GWFEED_MAX_CLIENTS) {
        zx_http_reply_json_error(req, 503, "Retry-After: 5\r\n", "too many feed clients (%d); "
                                 "retry later", ZX_GWFEED_MAX_CLIENTS);
        return;
    }
    fclient *c = calloc(1, sizeof(*c));
    if (!c) {
        zx_http_reply_json_error(req, 503, "Retry-After: 1\r\n", "out of memory");
        return;
    }
    c->f = f;
    c->st = zx_http_stream_start(req, 200, "text/event-stream",
                                 "Cache-Control: no-store\r\nX-Accel-Buffering: no\r\n",
                                 on_closed, on_drained, c);
    if (!c->st) {
        free(c);
        return;
    }
    /* what it does not read waits in its output, where it is counted */
    zx_http_stream_set_sndbuf(c->st, ZX_GWFEED_SNDBUF);
    c->next = f->clients;
    if (f->clients)
        f->clients->prev = c;
    f->clients = c;
    f->nclients++;
    zx_gwfeed_ring *r = f->ring;
    c->lost_seen = zx_gwfeed_ring_lost(r);
    c->replaying = 1;
    if (from == ZX_GWFEED_NOW) {
        uint64_t nw = zx_gwfeed_ring_newest(r);
        c->last = nw > c->lost_seen ? nw : c->lost_seen;
    } else if (from == ZX_GWFEED_AFTER) {
        c->last = after;
    }
    if (client_write(c, "retry: 2000\n\n", 13) < 0)
        return;
    if (from == ZX_GWFEED_AFTER && zx_gwfeed_ring_gap(r, after) && write_gap(c) < 0)
        return;
    client_pump(c);
}

void zx_gwfeed_tick(zx_gwfeed *f, int64_t now_ms)
{
    for (fclient *c = f->clients, *nx; c; c = nx) {
        nx = c->next;
        if (now_ms - c->last_write_ms >= ZX_GWFEED_KEEPALIVE_MS &&
            zx_http_stream_queued(c->st) + 13 <= ZX_GWFEED_CLIENT_MAX)
            client_write(c, ": keepalive\n\n", 13);
    }
}

void zx_gwfeed_stop(zx_gwfeed *f)
{
    while (f->clients)
        client_close(f->clients, 1);
}

size_t zx_gwfeed_clients(const zx_gwfeed *f)
{
    return f->nclients;
}

uint64_t zx_gwfeed_dropped(const zx_gwfeed *f)
{
    return f->dropped;
}
