/*
 * gateway_int.h — the gateway's private state, shared by gateway.c (process
 * loop, pipeline attach/detach, /healthz) and gateway_push.c (the push
 * route, hand-off to the workers' rings, answers, deadlines).  Nothing
 * outside workers/gateway/ includes it.
 */
#ifndef ZX_GATEWAY_INT_H
#define ZX_GATEWAY_INT_H

#include <event2/event.h>
#include <stdint.h>

#include "common/segment.h"
#include "common/webhook_sig.h"
#include "conf/config.h"
#include "workers/gateway/authlimit.h"
#include "workers/gateway/gateway_feed.h"
#include "workers/gateway/gateway.h"
#include "workers/gateway/http.h"

#define NBUCKETS 4096

typedef struct gpipe gpipe;
typedef struct gateway gateway;

/* A push from its headers on: reading its body, waiting for room in its
 * worker's ring, or handed over and waiting for the answer. */
typedef struct greq {
    gateway *g;
    zx_http_req *req;        /* NULL once the server dropped it (shutdown) */
    gpipe *p;
    int pending;             /* in a bucket or a wait queue */
    uint64_t req_id;         /* gateway generation << 40 | counter */
    char rid[24];
    /* The stream this request authenticated against, for its whole life:
     * the slot, its generation then, and its name.  A slot whose
     * generation changed (stream removed, recreated or given a new key)
     * is another stream: the request is answered, never handed over. */
    uint64_t pipe_gen;
    char pipe_name[64];
    int64_t deadline_ms;
    struct greq *next;       /* bucket chain or wait queue */
    int64_t queued_at_ms;    /* when the body was complete */
    int signed_push;         /* authenticated by its webhook-signature, to
                                be checked once the body is in */
    int api;                 /* 0: a push; 1: POST /api/syncs/N/runs; 2: GET
                                /api/runs/ID (gateway_api.c; pipe_name
                                holds the sync or the run id); 3: GET
                                /metrics; 4: GET /api/lineage; 5: GET
                                /api/status; 6: GET /api/feed
                                (gateway_feed.h) */
    enum zx_gwfeed_from feed_from; /* 6: where its stream starts */
    uint64_t feed_after;
    /* GET /api/lineage's parameters (checked; "" when absent): name,
     * direction (upstream, downstream), format (json, text, dot,
     * mermaid) */
    char ln_name[128], ln_dir[12], ln_format[8];
    char peer[ZX_AUTHLIMIT_ADDR_MAX]; /* API: the client's address, for
                                the failed tokens it sends */
    /* the worker's answer, held until frame after_seq is committed
     * (ZX_PUSH_REP_AFTER_COMMIT; q is then on its pipe's commit list) */
    uint64_t after_seq;
    int rep_status;
    uint32_t rep_flags;
    char *rep_body;
    uint32_t rep_len;
} greq;

struct gpipe {
    char name[64];
    uint64_t gen;            /* gateway-unique; new on attach to a free slot
                                and whenever the key changes */
    char *key;               /* NULL: no Bearer key (signed pushes only) */
    uint8_t whkey[ZX_WEBHOOK_KEY_MAX];  /* webhook_secret's bytes */
    int whkey_len;           /* 0: no webhook_secret */
    int ack_commit;
    uint64_t max_body;
    zx_segment seg;
    int worker_efd;
    zx_ring_cursor out_cur;
    greq *wait_head, *wait_tail;   /* waiting for room in the in ring */
    greq *commit_head;             /* answered, waiting for their commit */
    int used;
};

struct gateway {
    const zx_gateway_args *a;
    struct event_base *base;
    zx_http_server *http;
    gpipe pipes[ZX_MAX_PIPELINES];
    uint64_t pipe_gen;       /* last gpipe.gen handed out */
    greq *buckets[NBUCKETS];
    uint64_t next_id;        /* generation << 40 | counter: a reply meant
                                for an earlier gateway's request (same
                                rings, lower generation) matches nothing */
    uint64_t rid_base;
    int stopping;
    int64_t stop_deadline;
    greq *api_head;          /* API requests waiting for the supervisor */
    zx_authlimit *auth;      /* API: failed tokens per client address */
    zx_gwfeed *feed;         /* GET /api/feed: the events and its clients */
};

/* gateway_push.c */

/* q's stream is no longer the one it authenticated against: answer it
 * (404 removed, or 503 reconfigured) and free it.  Returns 1 if it did. */
int zx_gw_answer_if_stale(greq *q);
/* Relay every answer waiting in p's out ring (before p is detached, so that
 * the last answers of a draining worker reach their clients). */
/* Give the held answers of p whose frame the writer has acknowledged,
 * and tell the writer the lowest frame still waited for
 * (zx_seg_hdr.gw_commit_wait). */
void zx_gw_commits(gpipe *p);
/* Answer every held answer of p with status and why (its stream goes). */
void zx_gw_fail_commits(gpipe *p, int status, const char *why);
void zx_gw_read_replies(gateway *g, gpipe *p);
/* Answer 503 to every request of p waiting for room in its ring (p was
 * reconfigured: they authenticated against its old settings). */
void zx_gw_fail_waiting(gpipe *p, int status, const char *why);

/* The attached pipeline called name[0..n), or NULL. */
gpipe *zx_gw_find_pipe(gateway *g, const char *name, size_t n);
/* Answer q with a JSON error and free it (q is invalid afterwards). */
void zx_gw_finish_error(greq *q, int status, uint32_t retry_after, const char *msg);
/* Relay the workers' answers and retry the pushes waiting for room. */
void zx_gw_on_wake(evutil_socket_t fd, short what, void *arg);
/* Answer 503 to every push past its deadline. */
void zx_gw_expire(gateway *g);
/* zx_http callbacks (ctx is the gateway). */
void zx_gw_on_head(zx_http_req *req, void *ctx);
void zx_gw_on_body(zx_http_req *req, void *ctx);
void zx_gw_on_drop(zx_http_req *req, void *ctx);

/* gateway_api.c: the sync API (see there). */
/* 1 when path is one of the API's. */
int zx_gw_is_api(const char *path);
/* head: answer an error now, or keep the request for its body. */
void zx_gw_api_head(gateway *g, zx_http_req *req);
/* body: ask the supervisor (answered by zx_gw_api_reply). */
void zx_gw_api_body(gateway *g, greq *q);
/* the supervisor's answer (ZX_CHAN_API), with the memfd it carried or -1
 * (the metrics' text; the caller closes it). */
void zx_gw_api_reply(gateway *g, const char *json, int fd);
/* answer 503 to the requests past their deadline. */
void zx_gw_api_expire(gateway *g);
/* the server drops q's request. */
void zx_gw_api_drop(gateway *g, greq *q);

/* gateway.c */

/* Answer GET /healthz from the segments' status words. */
void zx_gw_healthz(gateway *g, zx_http_req *req);

#endif
