/* http.h - a small, strict HTTP/1.1 server on libevent bufferevents.
 *
 * Used by the gateway process for the push endpoint and its small REST API.
 * It parses requests strictly, answers every error with a JSON body, lets the
 * handler answer before the body is read (401/404/413 without reading it),
 * inflates gzip bodies with a size cap, and lets the handler reply much later
 * (after another process has processed the body).
 *
 * It never logs header values or bodies, never interprets the body (beyond
 * chunked framing and gzip), and never calls back into the handler for a
 * request after that request was answered.
 *
 * Threading: one server belongs to one event_base and is used only from the
 * thread that runs that base.  No function here may be called from another
 * thread.
 *
 * Order of checks for each request (the first that fails answers):
 *   1. framing (server): malformed request line or headers -> 400, request
 *      line + headers above max_header_size -> 431, HTTP version other than
 *      1.0 and 1.1 -> 505 (a malformed version -> 400), Transfer-Encoding
 *      other than "chunked" -> 501, Content-Length together with
 *      Transfer-Encoding, a Content-Length that is not a decimal number
 *      fitting in 64 bits, repeated Content-Length, Host, Authorization,
 *      Content-Type or Idempotency-Key, missing Host on HTTP/1.1 -> 400;
 *   2. head_cb (handler): routing, authentication (401/404/405 ...);
 *   3. server: Content-Encoding (every such header, every comma-separated
 *      coding) other than at most one of gzip/x-gzip plus any number of
 *      identity -> 415; Content-Length above max_body_size -> 413; any
 *      Expect other than 100-continue -> 417; the bytes the body will hold
 *      (see "Memory") would pass max_held_bytes -> 503 with Retry-After: 1;
 *      then "100 Continue" is sent if asked for;
 *   4. body reading (server): a chunk size that does not fit in 64 bits or
 *      broken chunked framing -> 400, chunked total above max_body_size ->
 *      413, inflated body above max_body_size -> 413, broken gzip -> 400,
 *      held bytes above max_held_bytes -> 503 with Retry-After: 1, body
 *      slower than the body deadline -> 408;
 *   5. body_cb (handler): the handler replies, now or later.
 * Every answer the server makes itself closes the connection.
 *
 * Memory: the server counts the body bytes it actually holds (the buffer
 * each body is read or inflated into, its capacity rather than its length;
 * an announced Content-Length is counted in full from step 3 on; a gzip
 * inflater's state; everything until the request is answered and freed),
 * across all connections, and refuses (503) whatever would take the total
 * above max_held_bytes.  Not counted: the per-connection input buffer
 * (bounded by max(max_header_size + 1, 64 KiB) per connection) and request
 * heads (bounded by max_header_size per connection).
 *
 * Connections: at most max_connections at a time.  A connection is
 * "trusted" once head_cb has let one of its requests through (returned
 * without answering); others (nothing sent yet, partial heads, requests
 * head_cb answered, e.g. 401/404) are "untrusted".  A handler should
 * therefore answer in head_cb every request that must not protect its
 * connection (unauthenticated ones, health checks).  When a new client
 * arrives at the limit, or accept() fails for want of descriptors, the
 * oldest untrusted connection is closed to make room; only when every
 * connection is trusted does the server stop accepting (new clients wait
 * in the kernel's backlog) until one closes.  Requests on one connection
 * are handled one at a time: while a request waits for its reply, the
 * following (pipelined) requests stay unparsed.  If the client closes the
 * connection (EOF or error) while its request waits for the reply, the
 * request is marked closed (zx_http_req_is_closed) and stays valid until
 * the handler calls zx_http_reply, which then only frees it.
 *
 * Timeouts: a request's line and headers must arrive within
 * header_timeout_ms, counted from the connection's accept for its first
 * request and from the first byte of each later one; a body must arrive
 * within body_timeout_ms plus one second per body_min_rate bytes received
 * so far (so a body slower than body_min_rate runs out of time).  Either
 * deadline answers 408 and closes (a connection that sent nothing is closed
 * silently).  idle_timeout_ms applies to a keep-alive connection between
 * requests, to every read (a client that sends nothing for that long is
 * closed) and to every write.  There is no timeout while a request waits
 * for the handler's reply.
 *
 * Descriptors: the process needs max_connections plus some; zxd raises its
 * soft RLIMIT_NOFILE to the hard limit at start (supervisor/main.c), and
 * when accept runs out of them an untrusted connection is closed.
 *
 * SIGPIPE: zx_http_server_new sets SIGPIPE to SIG_IGN if it was SIG_DFL, so
 * that a client that went away cannot kill the process.
 *
 * Errors inside the server (out of memory, a libevent constructor failing)
 * close or answer 500 on the connection concerned, never crash, and are
 * logged through the logger set with zx_http_server_set_logger.
 */
#ifndef ZX_HTTP_H
#define ZX_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct event_base;

typedef struct zx_http_server zx_http_server;
typedef struct zx_http_req zx_http_req;

typedef struct zx_http_limits {
    uint64_t max_body_size;   /* raw body AND gzip-inflated body; 0 -> 16 MiB */
    uint64_t max_header_size; /* request line + headers (and chunked trailers);
                                 0 -> 64 KiB; above -> 431 */
    uint32_t max_connections; /* open connections; 0 -> 1024; at the limit the
                                 oldest untrusted one is closed, or the server
                                 stops accepting until one closes */
    uint32_t idle_timeout_ms; /* keep-alive idle, slow read and slow write
                                 timeout: close; 0 -> 60000 */
    uint64_t max_held_bytes;  /* body bytes held by all requests together;
                                 0 -> max(256 MiB, 4 x max_body_size);
                                 above -> 503 + Retry-After: 1 */
    uint32_t header_timeout_ms; /* request line + headers, in total;
                                   0 -> 10000; above -> 408 */
    uint32_t body_timeout_ms;   /* body, in total, plus 1 s per body_min_rate
                                   bytes received; 0 -> 30000; above -> 408 */
    uint32_t body_min_rate;     /* bytes per second; 0 -> 1024 */
} zx_http_limits;

#define ZX_HTTP_DEFAULT_MAX_BODY      (16u * 1024u * 1024u)
#define ZX_HTTP_DEFAULT_MAX_HEADER    (64u * 1024u)
#define ZX_HTTP_DEFAULT_MAX_CONNS     1024u
#define ZX_HTTP_DEFAULT_IDLE_MS       60000u
#define ZX_HTTP_MIN_MAX_HELD          (256u * 1024u * 1024u)
/* Requests let through unverified (zx_http_req_defer_trust) hold at most
 * max_held_bytes / this between them. */
#define ZX_HTTP_UNVERIFIED_SHARE      4
#define ZX_HTTP_DEFAULT_HEADER_MS     10000u
#define ZX_HTTP_DEFAULT_BODY_MS       30000u
#define ZX_HTTP_DEFAULT_BODY_RATE     1024u

/* The default of max_held_bytes for a given max_body_size:
 * max(256 MiB, 4 x max_body_size) (saturating). */
uint64_t zx_http_default_max_held(uint64_t max_body_size);

/* Counters of the server's own refusals, for tests and metrics. */
typedef struct zx_http_stats {
    uint64_t held_bytes;      /* body bytes held now (see "Memory") */
    uint64_t held_refused;    /* requests answered 503 for max_held_bytes */
    uint64_t evicted;         /* untrusted connections closed to make room */
    uint64_t header_timeouts; /* connections closed by the header deadline */
    uint64_t body_timeouts;   /* requests answered 408 by the body deadline */
    uint64_t internal_errors; /* out of memory / constructor failures */
} zx_http_stats;

/* Log function: level 2 = warning, 3 = error (common/log.h's numbering, so
 * zx_log fits), printf-style, one line without a newline. */
typedef void (*zx_http_log_fn)(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Called when the request line and all headers are in and valid.  The
 * handler may answer now with zx_http_reply (e.g. 401/404/405/413); the body
 * is then NOT read, and the connection is closed after the answer if a body
 * was announced.  Or it returns without answering to have the body read
 * (Content-Length or chunked; gzip inflated).  It must not keep the request
 * pointer to reply later from outside body_cb: a request not answered in
 * head_cb is answered only after body_cb. */
typedef void (*zx_http_head_cb)(zx_http_req *req, void *ctx);

/* Called when the whole body is in (never for requests answered in head_cb).
 * The handler must eventually call zx_http_reply exactly once, now or later. */
typedef void (*zx_http_body_cb)(zx_http_req *req, void *ctx);

/* Called (optional, see zx_http_server_set_drop_cb) when a request that
 * head_cb let through is freed by the server without body_cb having been
 * called (the client went away during the body, or the server answered an
 * error such as 413 or a broken gzip body), and, from zx_http_server_free,
 * for every request still waiting for its reply.  Use it to free what was
 * attached with zx_http_req_set_data.  The request is freed right after the
 * callback returns; the callback must not call zx_http_reply. */
typedef void (*zx_http_drop_cb)(zx_http_req *req, void *ctx);

/* Creates a server on base (not owned).  lim may be NULL (all defaults); a 0
 * field takes its default.  head and body must not be NULL.  Returns NULL
 * if out of memory or if libevent cannot make a timer (errno set).  Free
 * with zx_http_server_free. */
zx_http_server *zx_http_server_new(struct event_base *base, const zx_http_limits *lim,
                                   zx_http_head_cb head, zx_http_body_cb body, void *ctx);

/* Sets (or clears, with NULL) the drop callback; see zx_http_drop_cb. */
void zx_http_server_set_drop_cb(zx_http_server *s, zx_http_drop_cb drop);

/* Sets (or clears, with NULL: nothing is logged) the logger for the
 * server's own errors (out of memory, libevent failures, accept errors).
 * Lines name the event and the peer, never header values or bodies. */
void zx_http_server_set_logger(zx_http_server *s, zx_http_log_fn log);

/* Listens on host:port (TCP, SO_REUSEADDR, close-on-exec).  host NULL or ""
 * means every address; port 0 picks an ephemeral port (see
 * zx_http_server_port).  May be called several times (up to 8 sockets).
 * Returns 0, or -1 with a message in err (if errlen > 0), e.g.
 * "cannot listen on 127.0.0.1:8780: Address already in use". */
int zx_http_server_listen(zx_http_server *s, const char *host, uint16_t port,
                          char *err, size_t errlen);

/* Adopts an already-listening socket (made non-blocking; the server owns it
 * and closes it).  Returns 0, or -1 (fd is then not owned) on a bad fd, too
 * many listeners or out of memory. */
int zx_http_server_listen_fd(zx_http_server *s, int fd);

/* The local port of the first listening socket, or 0 if there is none. */
uint16_t zx_http_server_port(const zx_http_server *s);

/* For draining: closes the listening sockets (new connections are refused),
 * closes idle keep-alive connections, and from now on every reply closes its
 * connection.  Requests already accepted go on normally.  Idempotent.  May
 * be called from a handler callback. */
void zx_http_server_stop_accepting(zx_http_server *s);

/* Requests whose head was accepted and whose reply has not been sent yet
 * (including those whose client went away, until zx_http_reply frees them). */
size_t zx_http_server_pending(const zx_http_server *s);

/* Open client connections. */
size_t zx_http_server_connections(const zx_http_server *s);

/* Body bytes held now by all requests together (see "Memory" above): the
 * number compared with max_held_bytes. */
uint64_t zx_http_server_held_bytes(const zx_http_server *s);

/* Copies the server's counters into *out. */
void zx_http_server_stats_get(const zx_http_server *s, zx_http_stats *out);

/* Closes every socket and frees everything.  Requests waiting for a reply
 * are dropped (drop_cb is called for each, then it is freed): the handler must
 * not use any request pointer afterwards.  Must not be called from inside a
 * callback of this server.  NULL is a no-op. */
void zx_http_server_free(zx_http_server *s);

/* Request accessors.  Returned strings are owned by the request and stay
 * valid until zx_http_reply (or until drop_cb returns).  Never NULL unless
 * said so. */
const char *zx_http_method(const zx_http_req *r); /* "POST" */
/* Raw path without the query, not percent-decoded:
 * "/api/streams/web_events/push"; "*" for "OPTIONS *".  For an absolute-form
 * target ("http://host/p?q") the scheme and authority are removed. */
const char *zx_http_path(const zx_http_req *r);
const char *zx_http_query(const zx_http_req *r); /* raw, without '?', or "" */
/* First value of query parameter name (names compared after decoding),
 * percent-decoded and '+' -> ' '; "" for "?name" or "?name="; NULL if
 * absent.  "%00" and malformed escapes are kept as they are. */
const char *zx_http_query_param(const zx_http_req *r, const char *name);
/* First value of a header, name compared case-insensitively, surrounding
 * spaces removed; NULL if absent. */
const char *zx_http_header(const zx_http_req *r, const char *name);
/* Announced Content-Length; 0 if no body; UINT64_MAX if chunked. */
uint64_t zx_http_content_length(const zx_http_req *r);
/* The body, contiguous, already inflated if gzip; sets *len (if len is not
 * NULL).  Only meaningful from body_cb on (before that: "" and 0).  Valid
 * until the reply is sent.  Not NUL-terminated. */
const char *zx_http_body(const zx_http_req *r, size_t *len);
/* "127.0.0.1:53412" or "[::1]:53412". */
const char *zx_http_peer(const zx_http_req *r);

/* For head_cb: let r through without trusting its connection yet, because
 * its sender is proven only by its body (a signature over it).  Until
 * zx_http_req_trust the connection stays a candidate to close, and r's
 * body bytes count also against max_held_bytes / ZX_HTTP_UNVERIFIED_SHARE
 * shared by all such requests (over it: 503, as for max_held_bytes), so
 * unproven senders never take the room of authenticated ones. */
void zx_http_req_defer_trust(zx_http_req *r);
/* The body proved r's sender: trust r's connection as head_cb letting it
 * through would have, and count its bytes as any request's.  No-op unless
 * deferred. */
void zx_http_req_trust(zx_http_req *r);

/* Handler data attached to the request (not owned, never freed here). */
void zx_http_req_set_data(zx_http_req *r, void *p);
void *zx_http_req_get_data(const zx_http_req *r);

/* 1 if the client went away before the reply (the reply will be discarded). */
int zx_http_req_is_closed(const zx_http_req *r);

/* Sends the response (or discards it if the client is gone) and frees the
 * request: r is invalid afterwards; NULL is a no-op.  status 200..599
 * (anything else is sent as 500).  content_type may be NULL (no
 * Content-Type).  extra_headers is NULL or complete header lines, each ending
 * in "\r\n", e.g. "Retry-After: 1\r\nX-Request-Id: abc\r\n" (the caller is
 * trusted to build them correctly).  body may be NULL if len is 0; it is
 * copied.  "Server: zx", Date and Content-Length are always written (except
 * Content-Length and the body on 204 and 304; the body on HEAD requests).  The connection is kept alive
 * unless the client asked to close, HTTP/1.0 without keep-alive, the body was
 * not read, or the server is draining; then "Connection: close" is written. */
void zx_http_reply(zx_http_req *r, int status, const char *content_type,
                   const char *extra_headers, const char *body, size_t len);

/* ---- streamed replies (server-sent events) ---------------------------
 *
 * A handler may answer a request (from body_cb on) with a response that
 * has no length and goes on until one side closes: zx_http_stream_start
 * writes the status line and headers ("Connection: close", no
 * Content-Length) and turns the connection into a stream.  From then on
 * the server reads nothing from it but its end (what the client sends is
 * discarded), no read timeout applies (a healthy stream may be silent for
 * long; the handler sends its own keep-alives), and idle_timeout_ms
 * applies to every write as before (a client that takes nothing for that
 * long is closed).  The connection still counts in max_connections and is
 * trusted.  Nothing is ever waited for: a write only appends to the
 * connection's output, whose length the handler reads
 * (zx_http_stream_queued) to bound it.
 */
typedef struct zx_http_stream zx_http_stream;

/* The connection of st is closing (client gone, error, write timeout, the
 * server freed): st is freed right after this returns; the callback must
 * not call zx_http_stream_* on st.  Not called for zx_http_stream_close. */
typedef void (*zx_http_stream_closed_cb)(zx_http_stream *st, void *arg);
/* The output of st went down to ZX_HTTP_STREAM_LOW bytes or fewer after a
 * write: room to queue more.  The callback may write and may close st. */
typedef void (*zx_http_stream_drained_cb)(zx_http_stream *st, void *arg);

#define ZX_HTTP_STREAM_LOW (16u * 1024u)

/* Answers r with a stream (status, content_type, extra_headers as for
 * zx_http_reply) and frees r (invalid afterwards, whatever the result).
 * closed must not be NULL; drained may be.  Returns the stream, owned by
 * the server until closed (callback) or zx_http_stream_close; or NULL
 * when the client is already gone or out of memory (nothing was sent
 * then, or the connection is closed; no callback is ever called). */
zx_http_stream *zx_http_stream_start(zx_http_req *r, int status, const char *content_type,
                                     const char *extra_headers, zx_http_stream_closed_cb closed,
                                     zx_http_stream_drained_cb drained, void *arg);
/* Appends len bytes to st's output.  0, or -1 when out of memory (the
 * caller should close st: part of it may have been queued). */
int zx_http_stream_write(zx_http_stream *st, const void *p, size_t len);
/* Bytes queued in st's output, not yet taken by the kernel. */
size_t zx_http_stream_queued(const zx_http_stream *st);
/* Fixes the kernel's send buffer of st's socket at bytes (SO_SNDBUF; the
 * kernel doubles it and no longer grows it by itself), so that what a
 * client does not read waits in the output zx_http_stream_queued counts
 * rather than in the kernel.  0, or -1 (errno) when refused. */
int zx_http_stream_set_sndbuf(zx_http_stream *st, int bytes);
/* "127.0.0.1:53412": the client's address. */
const char *zx_http_stream_peer(const zx_http_stream *st);
/* Ends st: with flush, what is queued is still sent (the connection
 * closes once it is, or at the write timeout); without, the connection
 * closes now.  st is invalid afterwards; the closed callback is not
 * called.  NULL is a no-op.  Must not be called from st's closed cb. */
void zx_http_stream_close(zx_http_stream *st, int flush);

/* Replies with Content-Type application/json and the body
 * {"error": "<message>", "status": N}, the message formatted printf-style and
 * JSON-escaped (invalid UTF-8 replaced by U+FFFD). */
void zx_http_reply_json_error(zx_http_req *r, int status, const char *extra_headers,
                              const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The standard reason phrase of status ("Not Found"), or "Unknown". */
const char *zx_http_reason(int status);

#endif
