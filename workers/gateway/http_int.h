/* http_int.h - private declarations shared by the HTTP server's files.
 *
 * The server is split into http.c (listeners, connections, the per-connection
 * state machine, deadlines, the held-bytes count), http_parse.c (request
 * line, headers, query, accessors), http_reply.c (responses, JSON errors,
 * reason phrases) and http_body.c (Content-Length and chunked bodies, gzip,
 * the body buffer).  This header holds the structs
 * they share and the few functions one calls in another.
 *
 * Must never be included outside workers/gateway/http*.c: everything here is
 * internal and may change; the contract for users is http.h.
 */
#ifndef ZX_HTTP_INT_H
#define ZX_HTTP_INT_H

#include "http.h"
#include "http_gzip.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <time.h>

struct bufferevent;
struct event;
struct evbuffer;
struct evconnlistener;

#define MAX_LISTENERS    8
#define MAX_HEADERS      256
#define MAX_CHUNK_LINE   4096
#define MAX_SINGLE_READ  (256 * 1024)
#define LINGER_MS        2000
#define LINGER_MAX_BYTES (64u * 1024u * 1024u)
#define INPUT_MIN_WM     (64u * 1024u) /* input high watermark, at least */
#define BODY_FIRST_CAP   (64u * 1024u) /* first body buffer of unknown size */
#define GZ_STATE_BYTES   (48u * 1024u) /* zlib inflate state + window, counted */

enum conn_state {
    ST_HEAD,    /* waiting for / reading a request head */
    ST_BODY,    /* reading the body of conn->req */
    ST_WAIT,    /* conn->req is with the handler */
    ST_CLOSING, /* reply written, close once it is flushed */
    ST_LINGER,  /* write side shut, discarding what the client still sends */
    ST_STREAM,  /* a streamed reply (zx_http_stream): input discarded */
};
enum body_kind { BODY_NONE, BODY_LENGTH, BODY_CHUNKED };
enum chunk_state { CH_SIZE, CH_DATA, CH_DATA_END, CH_TRAILER };

struct hdr {
    const char *name;
    const char *value;
};

struct conn;

struct zx_http_req {
    zx_http_server *srv;
    struct conn *conn;            /* NULL once the client went away */
    zx_http_req *oprev, *onext;   /* srv->orphans, when conn is NULL */
    char *head;                   /* request line + headers, split in place */
    const char *method, *path, *query;
    struct hdr *hdrs;
    size_t nhdrs;
    int http10;
    int keep_alive;
    int body_done;   /* body read entirely (or none) */
    int in_handler;  /* head_cb was called and let it through */
    int counted;     /* counted in srv->pending */
    int closed;
    int head_method;
    enum body_kind body_kind;
    uint64_t content_length;
    uint64_t remaining;      /* bytes left (whole body or current chunk) */
    uint64_t raw_total;      /* body bytes received (before inflation) */
    uint64_t trailer_bytes;
    int64_t body_start_ms;   /* monotonic ms when the body started */
    enum chunk_state chunk;
    zx_http_gz *gz;
    zx_http_gz_out body;     /* the body (inflated if gzip), contiguous */
    uint64_t reserved;       /* announced Content-Length, counted up front */
    uint64_t held;           /* what this request counts in srv->held */
    int unverified;          /* zx_http_req_defer_trust: held also counts in
                                srv->held_unverified until zx_http_req_trust */
    const char *body_ptr;
    size_t body_len;
    char **decoded;          /* query values handed out */
    size_t ndecoded;
    void *data;
    char peer[64];
};

struct zx_http_stream {
    struct conn *conn;
    zx_http_stream_closed_cb closed;
    zx_http_stream_drained_cb drained;
    void *arg;
};

struct conn {
    zx_http_server *srv;
    zx_http_stream *stream;  /* ST_STREAM: its handle (owned here) */
    struct conn *prev, *next;
    struct bufferevent *bev;
    struct event *resume;
    enum conn_state state;
    zx_http_req *req;
    size_t scan_off;   /* ST_HEAD: bytes scanned, no empty line yet */
    size_t skipped;    /* empty lines drained before the request line */
    int in_process;
    int linger;
    int trusted;       /* head_cb let a request of this connection through */
    struct conn *uprev, *unext; /* srv->untrusted list (oldest first) */
    int64_t head_start_ms; /* ST_HEAD: start of the header deadline; 0 = idle */
    uint64_t lingered;
    struct timeval linger_until;
    char peer[64];
};

struct zx_http_server {
    struct event_base *base;
    zx_http_limits lim;
    zx_http_head_cb head;
    zx_http_body_cb body;
    zx_http_drop_cb drop;
    void *ctx;
    struct evconnlistener *lev[MAX_LISTENERS];
    size_t nlev;
    int stopped, accepting, backoff, freeing;
    struct event *backoff_ev;
    struct conn *conns;
    size_t nconns;
    struct conn *untrusted, *untrusted_tail; /* oldest first */
    size_t nuntrusted;
    uint64_t held;     /* body bytes held by all requests (see http.h) */
    uint64_t held_unverified; /* of which by requests not yet trusted */
    zx_http_stats stats;
    zx_http_log_fn log;
    zx_http_req *orphans;
    size_t pending;
    struct timeval idle_tv;
    struct timeval head_tv;   /* header_timeout_ms */
    int head_tv_shorter;      /* header_timeout_ms < idle_timeout_ms */
    time_t date_t;
    char date[64];
};

/* ---- http.c ----------------------------------------------------------- */

/* A new request on c (method/path/query ""), or NULL if out of memory.  Not
 * yet attached to c. */
zx_http_req *zx_http_req_new(struct conn *c);

/* Frees r and what it owns; unlinks it from the orphans if its client went
 * away, un-counts it from pending and its bytes from srv->held.  Does not
 * call drop_cb. */
void zx_http_req_free(zx_http_req *r);

/* Sets what r counts in srv->held to bytes.  Returns 0, or -1 (nothing
 * changed) if that would take srv->held above max_held_bytes; lowering
 * always succeeds. */
int zx_http_held_set(zx_http_req *r, uint64_t bytes);

/* Logs through srv->log (if set) and counts an internal error. */
void zx_http_log_error(zx_http_server *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Closes c now (frees it; a stream's closed callback is called unless
 * c->stream was cleared first). */
void zx_http_conn_close(struct conn *c);

/* ---- http_parse.c ----------------------------------------------------- */

/* The Content-Encoding of r over every such header and every coding in
 * them: 0 none or identity only, 1 one gzip/x-gzip (plus any identity), -1
 * anything else (unknown, empty, or more than one gzip). */
int zx_http_content_coding(const zx_http_req *r);

/* Every Expect header of r: 0 none, 1 all are "100-continue", -1 any other. */
int zx_http_expect(const zx_http_req *r);

/* Parses r->head (len bytes + NUL) in place: request line, headers, framing
 * checks (see http.h, step 1).  Returns 0, or an HTTP status with *why set to
 * a static message. */
int zx_http_parse_head(zx_http_req *r, size_t len, const char **why);

/* ---- http_reply.c ----------------------------------------------------- */

/* Sets c's read timeout to rd (NULL: none); the write timeout stays idle. */
void zx_http_set_read_timeout(struct conn *c, const struct timeval *rd);

/* The server answers an error itself (JSON body, msg not escaped by the
 * caller) and closes the connection; calls drop_cb if the handler had the
 * request.  c->req may be NULL (one is made). */
void zx_http_conn_fail(struct conn *c, int status, const char *msg);

/* Same, with extra header lines (each ending in "\r\n", or NULL). */
void zx_http_conn_fail_hdr(struct conn *c, int status, const char *extra_headers,
                           const char *msg);

/* ---- http_body.c ------------------------------------------------------ */

/* Answers 413 (body above max_body_size) and closes the connection. */
void zx_http_fail_too_big(struct conn *c);

/* Answers 503 + Retry-After: 1 (max_held_bytes reached) and closes. */
void zx_http_fail_held(struct conn *c);

/* Prepares c->req's body after the checks of step 3: counts an announced
 * Content-Length in srv->held and sizes the body buffer.  0, or -1
 * answered (503 or 500). */
int zx_http_body_start(struct conn *c);

/* The body deadline of c->req (monotonic ms). */
int64_t zx_http_body_deadline(const struct conn *c);

/* Reads what the input holds of c->req's body.  1 body complete, 0 need
 * more, -1 answered (an error reply was made). */
int zx_http_body_read(struct conn *c);

/* Finishes the body (gzip trailer, contiguous copy) and hands the request to
 * body_cb; on error answers instead. */
void zx_http_body_complete(struct conn *c);

#endif
