/*
 * chan.h — messages between the supervisor and its long-lived children
 * (writer, gateway), version 1.  The one place this protocol is defined.
 *
 * Transport: a SOCK_SEQPACKET socketpair made at fork; one datagram is one
 * message: a 4-byte type (host order; both ends are the same binary),
 * then a JSON object, at most ZX_CHAN_MAX bytes; file descriptors travel
 * with SCM_RIGHTS.
 *
 *   supervisor → writer, gateway
 *     ATTACH  writer:  {"name": N, "max_columns": N, "lease": L?}
 *             gateway: {"name": N, "source": "http", "key": K,
 *                       "ack_commit": bool, "max_body_size": N}
 *             fds: [segment memfd, the pipeline worker's eventfd]
 *             Start serving (or update) pipeline N.  Sent to the writer
 *             for every pipeline, to the gateway only for pipelines whose
 *             source it feeds (ZX_SOURCE_GATEWAY, workers/sources/
 *             source.h), right after the child starts and for each added
 *             or changed pipeline after a reload.
 *     DETACH  {"name": N, "epoch": "<16 hex digits>"}
 *             Stop serving N (the writer: N's segment of that epoch; a
 *             pipeline recreated under the same name has a new one).  The
 *             writer first applies every frame already published in it.
 *     FORGET  writer only: {"name": N}  pipeline N was removed from the
 *             configuration (sent right after its DETACH): once the
 *             detached segment's last frames are applied, drop N's
 *             positions and state in the store and the workspace
 *             (workers/writer/forget.h); refused (kept) if a pipeline N is
 *             attached again by then.  Answered by an EVENT
 *             (state_dropped, state_kept or state_drop_failed).
 *     READY   {}  every pipeline has been attached once after the child
 *             started: the gateway starts accepting connections only
 *             then (so a restarted gateway never answers 404 for a
 *             stream it has not heard of yet); the writer then forgets the
 *             checkpoints of segments no longer attached
 *
 *     RUN     writer only: {"sync": N, "id": "<decimal u64>", "record": {...}}
 *             Record run `id` of reverse sync N in the store ("runs"),
 *             replacing an earlier record of the same run (its state
 *             changed); the newest 200 runs of each sync are kept.
 *
 *     FEED    gateway only: {"id": N, "lost": L, "event": {...}}
 *             One feed event (the object of proto/control.h's EVENT,
 *             with "ts") and its id: N > 0, increasing over every FEED
 *             message (supervisor/feed.c: max(previous + 1, wall clock
 *             in µs), so also across restarts of zxd).  L: the newest id
 *             the gateway will never get (an event too large for one
 *             message, sent while the outbox was full, or older than the
 *             history); 0 when none.  Sent for every new event while the
 *             gateway runs and, when it (re)starts, for each event of the
 *             supervisor's history (at most 200) before READY, after a
 *             first {"id": 0, "lost": L} (the mark alone).  At most
 *             ZX_CHAN_MAX bytes like any message (a larger event is not
 *             sent, only counted in the next L).  The gateway serves them
 *             as GET /api/feed (workers/gateway/gateway_feed.h).
 *
 *   gateway → supervisor
 *     API     {"id": N, "op": "run", "sync": S, "token": T, "full": bool}
 *             or {"id": N, "op": "get", "run": "<id>", "token": T}
 *             or {"id": N, "op": "metrics" | "status" | "feed", "token": T}
 *             or {"id": N, "op": "lineage", "what": "lineage", "token": T,
 *             "name"?: N, "direction"?: "upstream" | "downstream",
 *             "format"?: "json" | "text" | "dot" | "mermaid"}: a request
 *             of the API (workers/gateway/gateway_api.c) with the bearer
 *             token it carried, for the supervisor to check (a token of
 *             role "status" may ask only for metrics, status, lineage and
 *             the feed: 403 otherwise; feed: 200 for any API token,
 *             nothing else)
 *   supervisor → gateway
 *     API     {"id": N, "status": HTTP status, "body": {...}}: its answer;
 *             "metrics", "status" and "lineage" answer 200 with
 *             {"metrics_bytes": L} or {"body_bytes": L} (lineage: and its
 *             "format") instead of a body, and one fd: a memfd whose
 *             first L bytes are the text (metrics), the JSON (status: what
 *             `zxctl status --json` prints) or the lineage in its format,
 *             at most ZX_METRICS_MAX
 *
 *   writer → supervisor
 *     EVENT   a feed event object as in proto/control.h (without "ts",
 *             which the supervisor adds)
 *     LEASE   {"pipeline": N, "lease": L, "held": bool, "valid_ms": M,
 *              "holder_desc": D, "since": T}  the writer's view of the
 *             lease L of pipeline N (a shared workspace only:
 *             workers/writer/writer_lease.h), sent when it changes and
 *             at each renewal.  held: this zxd holds it for M more ms at
 *             most (the supervisor stops N's worker if no renewal comes by
 *             then); not held: D and T say who holds it since when ("" if
 *             nobody).  The supervisor starts the worker of a pipeline
 *             with a lease only while it is held (supervisor/lease.c).
 *     READY   {}  the store and workspace are open; frames are applied
 */
#ifndef ZX_PROTO_CHAN_H
#define ZX_PROTO_CHAN_H

#include <stddef.h>

#define ZX_CHAN_VERSION 1
#define ZX_CHAN_MAX (64 * 1024)
/* The most bytes of metrics text an API answer's memfd holds. */
#define ZX_METRICS_MAX (8u * 1024u * 1024u)

enum zx_chan_type {
    ZX_CHAN_ATTACH = 1,
    ZX_CHAN_DETACH = 2,
    ZX_CHAN_EVENT = 3,
    ZX_CHAN_READY = 4,
    ZX_CHAN_RUN = 5,
    ZX_CHAN_API = 6,
    ZX_CHAN_FORGET = 7,
    ZX_CHAN_FEED = 8,
    ZX_CHAN_LEASE = 9,
};

/* Send one message: type, NUL-terminated JSON text, up to 4 fds (nfds may
 * be 0).  Blocking send; 0 or -1 (errno; EPIPE when the peer is gone). */
int zx_chan_send(int sock, int type, const char *json, const int *fds, int nfds);

/* Receive one message into buf (cap bytes, NUL-terminated on return).
 * Returns the type (> 0), 0 when the peer closed, -1 on error (errno;
 * EAGAIN on a non-blocking socket with nothing to read; EMSGSIZE when the
 * message did not fit in buf; EPROTO when it is shorter than a type).
 * Received fds are stored in fds[0..*nfds-1] (at most 4), owned by the
 * caller; on -1 none are handed over (any that came are closed). */
int zx_chan_recv(int sock, char *buf, size_t cap, int *fds, int *nfds);

#endif
