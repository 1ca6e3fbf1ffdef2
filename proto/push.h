/*
 * push.h — the records the gateway and a stream worker exchange through
 * the pipeline segment's "in" and "out" rings (common/segment.h), version 2
 * (2: answers held for a commit, ZX_PUSH_REP_AFTER_COMMIT).
 * The one place this layout is defined.
 *
 * in ring (gateway → worker), one record per HTTP push:
 *   zx_push_req, then idem_len bytes of Idempotency-Key, then rid_len bytes
 *   of request id, then body_len bytes of body (already gzip-inflated).
 * out ring (worker → gateway), one record per answer:
 *   zx_push_rep, then body_len bytes of JSON.  An answer flagged
 *   ZX_PUSH_REP_AFTER_COMMIT is given only once the frames ring's acked
 *   sequence reaches after_seq: the worker sends it as soon as it has
 *   published the frame, and the writer's release wakes the gateway
 *   (zx_seg_hdr.gw_commit_wait), so the answer does not wait for the
 *   worker to wake up again.
 *
 * Both sides are the same binary, so fields are in host order.  The worker
 * must still check every length (zx_push_req_parse): a gateway bug must
 * not crash it.
 */
#ifndef ZX_PROTO_PUSH_H
#define ZX_PROTO_PUSH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ZX_PUSH_REQ_MAGIC 0x5a585051u /* "ZXPQ" */
#define ZX_PUSH_REP_MAGIC 0x5a585052u /* "ZXPR" */
#define ZX_PUSH_VERSION 2
#define ZX_PUSH_IDEM_MAX 255
#define ZX_PUSH_RID_MAX 64

enum {
    ZX_PUSH_WAIT_COMMIT = 0x1, /* answer after the writer committed */
    ZX_PUSH_NDJSON = 0x2,      /* body is newline-delimited JSON */
};

typedef struct zx_push_req {
    uint32_t magic;
    uint16_t version;
    uint16_t flags;
    uint64_t req_id;       /* (gateway generation << 40 | counter),
                              echoed in the reply: unique across gateway
                              restarts, so a late reply to an earlier
                              gateway's request matches nothing */
    int64_t received_us;   /* wall clock when the gateway had the body */
    uint16_t idem_len;
    uint16_t rid_len;
    uint32_t pad;
    uint64_t body_len;
    int64_t deadline_mono_us; /* CLOCK_MONOTONIC (system-wide): a worker
                                 that has not put the rows in its frames
                                 ring by then answers 503 and writes
                                 nothing (the gateway has given up) */
} zx_push_req;

typedef struct zx_push_rep {
    uint32_t magic;
    uint16_t version;
    uint16_t status;       /* HTTP status */
    uint64_t req_id;
    uint32_t retry_after;  /* seconds; 0 = no Retry-After header */
    uint32_t body_len;     /* JSON body */
    uint32_t flags;        /* ZX_PUSH_REP_* */
    uint32_t pad;
    uint64_t after_seq;    /* ZX_PUSH_REP_AFTER_COMMIT: the frame to wait for */
} zx_push_rep;

#define ZX_PUSH_REP_REPLAY 0x1        /* answered from the idempotency store */
#define ZX_PUSH_REP_AFTER_COMMIT 0x2  /* give it once frame after_seq is acked */

/* A parsed request; pointers into the record, valid until it is released. */
typedef struct zx_push_view {
    const zx_push_req *h;
    const char *idem;      /* NULL when idem_len == 0 */
    const char *rid;
    const char *body;
} zx_push_view;

static inline size_t zx_push_req_size(size_t idem_len, size_t rid_len, size_t body_len)
{
    return sizeof(zx_push_req) + idem_len + rid_len + body_len;
}

/* Fill a record in buf, which must hold zx_push_req_size(idem_len,
 * rid_len, body_len) bytes and be 8-byte aligned (a ring record is).  The
 * caller guarantees idem_len <= ZX_PUSH_IDEM_MAX and rid_len <=
 * ZX_PUSH_RID_MAX (the gateway checks the header).  The bytes are copied;
 * nothing is kept. */
static inline void zx_push_req_write(void *buf, uint16_t flags, uint64_t req_id,
                                     int64_t received_us, int64_t deadline_mono_us,
                                     const char *idem,
                                     size_t idem_len, const char *rid, size_t rid_len,
                                     const char *body, size_t body_len)
{
    zx_push_req h = {ZX_PUSH_REQ_MAGIC, ZX_PUSH_VERSION, flags, req_id, received_us,
                     (uint16_t)idem_len, (uint16_t)rid_len, 0, body_len,
                     deadline_mono_us};
    char *p = buf;
    memcpy(p, &h, sizeof(h));
    p += sizeof(h);
    if (idem_len)
        memcpy(p, idem, idem_len);
    p += idem_len;
    if (rid_len)
        memcpy(p, rid, rid_len);
    p += rid_len;
    if (body_len)
        memcpy(p, body, body_len);
}

/* Check a request record of len bytes (from the in ring, so untrusted:
 * magic, version, every length against len) and point v into it.
 * Returns 0, or -1 if it is malformed (v is then unspecified).  v's
 * pointers are into rec and valid as long as the record is (until the
 * ring cursor is released); nothing is allocated. */
static inline int zx_push_req_parse(const void *rec, size_t len, zx_push_view *v)
{
    if (len < sizeof(zx_push_req) || ((uintptr_t)rec & 7))
        return -1;
    const zx_push_req *h = rec;
    if (h->magic != ZX_PUSH_REQ_MAGIC || h->version != ZX_PUSH_VERSION ||
        h->idem_len > ZX_PUSH_IDEM_MAX || h->rid_len > ZX_PUSH_RID_MAX ||
        h->body_len > len ||
        zx_push_req_size(h->idem_len, h->rid_len, h->body_len) != len)
        return -1;
    const char *p = (const char *)rec + sizeof(*h);
    v->h = h;
    v->idem = h->idem_len ? p : NULL;
    v->rid = p + h->idem_len;
    v->body = p + h->idem_len + h->rid_len;
    return 0;
}

/* Check a reply record of len bytes (from the out ring: untrusted) and
 * set *h to its header and *body to its h->body_len bytes of JSON (not
 * NUL-terminated).  Returns 0, or -1 if it is malformed (outputs then
 * unchanged).  Both point into rec, valid until the ring cursor is
 * released; nothing is allocated.  req_id is only as good as the gateway
 * generation it carries: the caller matches it against its own requests. */
static inline int zx_push_rep_parse(const void *rec, size_t len, const zx_push_rep **h,
                                    const char **body)
{
    if (len < sizeof(zx_push_rep) || ((uintptr_t)rec & 7))
        return -1;
    const zx_push_rep *r = rec;
    if (r->magic != ZX_PUSH_REP_MAGIC || r->version != ZX_PUSH_VERSION ||
        sizeof(zx_push_rep) + (size_t)r->body_len != len)
        return -1;
    *h = r;
    *body = (const char *)rec + sizeof(*r);
    return 0;
}

#endif
