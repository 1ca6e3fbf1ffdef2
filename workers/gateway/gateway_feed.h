/*
 * gateway_feed.h — the live feed as server-sent events, GET /api/feed
 * (docs/architecture.md §2.3).
 *
 * The supervisor sends the gateway every feed event with its id
 * (ZX_CHAN_FEED, proto/chan.h; ids increase, also across restarts of zxd)
 * and, when the gateway (re)starts, its history first.  The gateway keeps
 * the newest of them in a ring, bounded by count and bytes (the newest
 * ZX_GWFEED_MAX_EVENTS events, whose frames take at most
 * ZX_GWFEED_MAX_BYTES together; older ones are evicted), each as its
 * ready SSE frame:
 *
 *     id: <id>\nevent: <the event's "event" field>\ndata: <the event JSON
 *     on one line>\n\n
 *
 * A client, once the supervisor has accepted its API token, gets
 * "retry: 2000\n\n", then the events it asked for, then every new one:
 *   - Last-Event-ID: N (or ?last_event_id=N): the held events with id > N,
 *     first "event: gap" with data {"after": N, "oldest": <oldest id
 *     held, or null>} when an event after N may be missing (evicted from
 *     the ring or the supervisor's history, never received, or sent
 *     before this zxd started); the gap frame has no id;
 *   - ?since=now: only new events;
 *   - neither: the held history, then new events.
 * A comment ": keepalive\n\n" after ZX_GWFEED_KEEPALIVE_MS of silence.
 *
 * Bounds: at most ZX_GWFEED_MAX_CLIENTS clients (the caller answers 503
 * beyond, zx_gwfeed_full); what waits in a client's output is at most
 * ZX_GWFEED_CLIENT_MAX bytes (besides the socket's own send buffer, fixed
 * at ZX_GWFEED_SNDBUF): a new event that would pass it drops the
 * client (connection closed, logged once per client as
 * event=feed_client_dropped, counted).  The history is replayed paced by
 * the client's reading (ZX_GWFEED_REPLAY_MAX queued at a time); a client
 * so slow that events it has not been sent leave the ring is dropped the
 * same way.
 *
 * It must never: wait on a client (writes only append to its output),
 * let a client's output grow past its bound, or send an event line that
 * is not one line of JSON.
 *
 * Threading: the gateway's event loop only.
 */
#ifndef ZX_GATEWAY_FEED_H
#define ZX_GATEWAY_FEED_H

#include <stddef.h>
#include <stdint.h>

#include "workers/gateway/http.h"

#define ZX_GWFEED_MAX_EVENTS 1000
#define ZX_GWFEED_MAX_BYTES (1024u * 1024u)
#define ZX_GWFEED_MAX_CLIENTS 64
#define ZX_GWFEED_CLIENT_MAX (256u * 1024u)
#define ZX_GWFEED_REPLAY_MAX (64u * 1024u)
/* A client's socket send buffer (SO_SNDBUF, doubled by the kernel): the
 * kernel's share of what a client that reads nothing holds. */
#define ZX_GWFEED_SNDBUF (32 * 1024)
#define ZX_GWFEED_KEEPALIVE_MS 15000
/* The longest Last-Event-ID accepted: digits only, fitting in 64 bits. */
#define ZX_GWFEED_ID_MAX_CHARS 20

/* ---- the ring ------------------------------------------------------- */

typedef struct zx_gwfeed_ev {
    uint64_t id;
    char *frame;   /* the SSE frame, NUL-terminated; owned by the ring */
    size_t len;    /* strlen(frame) */
} zx_gwfeed_ev;

typedef struct zx_gwfeed_ring zx_gwfeed_ring;

/* A ring of at most max_events events and max_bytes bytes of frames (both
 * > 0).  NULL when out of memory or a bound is 0.  Free with
 * zx_gwfeed_ring_free (NULL is a no-op). */
zx_gwfeed_ring *zx_gwfeed_ring_new(size_t max_events, size_t max_bytes);
void zx_gwfeed_ring_free(zx_gwfeed_ring *r);

/* Adds event id, whose JSON object text is json (len bytes, one line of
 * JSON text is made of it again here), after raising the ring's lost
 * mark to lost (the newest id that will never come).  The oldest events
 * are evicted (and so lost) until both bounds hold.  Returns 0 added; 1
 * not added: id not above the newest held or lost (a repeat), json not a
 * JSON object, or its frame alone above max_bytes (then id is lost); -1
 * out of memory (id is lost). */
int zx_gwfeed_ring_add(zx_gwfeed_ring *r, uint64_t id, uint64_t lost, const char *json,
                       size_t len);

/* The oldest held event with id > after, or NULL.  Valid until the next
 * zx_gwfeed_ring_add. */
const zx_gwfeed_ev *zx_gwfeed_ring_after(const zx_gwfeed_ring *r, uint64_t after);

/* The newest id known to be missing (0: none). */
uint64_t zx_gwfeed_ring_lost(const zx_gwfeed_ring *r);
/* 1 when an event with id > after may be missing from the ring. */
int zx_gwfeed_ring_gap(const zx_gwfeed_ring *r, uint64_t after);
/* Oldest and newest id held (0 when empty), events and frame bytes held. */
uint64_t zx_gwfeed_ring_oldest(const zx_gwfeed_ring *r);
uint64_t zx_gwfeed_ring_newest(const zx_gwfeed_ring *r);
size_t zx_gwfeed_ring_count(const zx_gwfeed_ring *r);
size_t zx_gwfeed_ring_bytes(const zx_gwfeed_ring *r);

/* ---- the route ------------------------------------------------------ */

/* Where a client starts (from its request, zx_gwfeed_parse_start). */
enum zx_gwfeed_from { ZX_GWFEED_HISTORY, ZX_GWFEED_AFTER, ZX_GWFEED_NOW };

/* The start a request asks for: last_event_id is the Last-Event-ID header
 * or NULL, q_last the last_event_id query parameter or NULL (the header
 * wins), q_since the since parameter or NULL ("now" is the only value).
 * Returns 0 with *from and *after set, or -1 with a message in why (for
 * a 400): not 1..20 digits, above 2^64-1, or an unknown since. */
int zx_gwfeed_parse_start(const char *last_event_id, const char *q_last, const char *q_since,
                          enum zx_gwfeed_from *from, uint64_t *after, char *why, size_t whylen);

typedef struct zx_gwfeed zx_gwfeed;

/* The feed with its ring (ZX_GWFEED_MAX_EVENTS, ZX_GWFEED_MAX_BYTES) and
 * no clients; NULL when out of memory.  zx_gwfeed_free closes every client
 * at once (NULL is a no-op); it must be called before the HTTP server is
 * freed or not at all (the server's closing calls back into it). */
zx_gwfeed *zx_gwfeed_new(void);
void zx_gwfeed_free(zx_gwfeed *f);

/* A ZX_CHAN_FEED message ({"id": N, "lost": L, "event": {...}}): keep the
 * event and send it to every client; {"id": 0, "lost": L}: raise the lost
 * mark only (sent before any client can connect).  A malformed message is logged and
 * ignored. */
void zx_gwfeed_message(zx_gwfeed *f, const char *json);

/* 1 when clients + pending (requests accepted and not answered yet) leave
 * no room for another client. */
int zx_gwfeed_full(const zx_gwfeed *f, size_t pending);

/* Answer req (its token accepted) with the stream, starting as asked;
 * req is answered in any case (503 when there is no room any more). */
void zx_gwfeed_start(zx_gwfeed *f, zx_http_req *req, enum zx_gwfeed_from from,
                     uint64_t after);

/* Every client silent for ZX_GWFEED_KEEPALIVE_MS gets a keep-alive;
 * now_ms is monotonic. */
void zx_gwfeed_tick(zx_gwfeed *f, int64_t now_ms);

/* Draining: end every client once what it was sent is flushed. */
void zx_gwfeed_stop(zx_gwfeed *f);

/* Clients now; clients dropped for being slow since the start. */
size_t zx_gwfeed_clients(const zx_gwfeed *f);
uint64_t zx_gwfeed_dropped(const zx_gwfeed *f);

#endif
