/* test_http.c - unit tests of the HTTP/1.1 server (workers/gateway/http.c).
 *
 * The servers run in a thread with their own event_base on 127.0.0.1:0; the
 * test talks to them over raw blocking sockets (10 s socket timeouts only as
 * a safety net: no check depends on timing).  Must never leave a thread or a
 * socket behind, and must pass under ASan/UBSan.
 */
#include "workers/gateway/http.h"

#include <event2/event.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

static int failures;
#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            failures++;                                                           \
        }                                                                         \
    } while (0)

#define MAX_BODY   (1024u * 1024u)
#define MAX_HEADER 8192u

/* ---- server side (runs in the server thread) -------------------------- */

static struct event_base *g_base;
static zx_http_server *g_main, *g_idle, *g_few, *g_hold, *g_slow, *g_evict;
static uint16_t g_port, g_port_idle, g_port_few, g_port_hold, g_port_slow, g_port_evict;
/* g_hold: small max_held_bytes; g_slow: short header/body deadlines;
 * g_evict: 4 connections at most. */
#define HOLD_BODY  (256u * 1024u)
#define HOLD_BOUND (900u * 1024u)
#define MAX_KEPT   16
static zx_http_req *g_kept[MAX_KEPT]; /* /keep: answered on command 'r' */
static size_t g_nkept;
static atomic_int g_cmd_done;
static atomic_ullong g_held_now;
static zx_http_stats g_stats_slow, g_stats_evict, g_stats_hold;
static uint64_t g_held_end = 99;
static int g_logged;
static int g_cmd[2];
static zx_http_req *g_parked;
static atomic_int g_parked_ready, g_park_result = -1, g_ready, g_drops;
static size_t g_pending_end = 99, g_pending_few = 99;
static char g_listen_err[256];
static zx_http_req *g_held;
static int g_park_tries;

static uint64_t fnv(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

static void head_cb(zx_http_req *r, void *ctx)
{
    const char *p = zx_http_path(r);
    (void)ctx;
    if (strcmp(p, "/deny") == 0)
        zx_http_reply_json_error(r, 401, "WWW-Authenticate: Bearer\r\n", "missing key");
    else if (strcmp(p, "/jsonerr") == 0)
        zx_http_reply_json_error(r, 404, NULL, "no route \"%s\"\n\xff", p);
}

/* /stream: a streamed reply ("hello\n" now, "tick\n" after 500 ms, longer
 * than g_idle's idle_timeout; "bye\n" and the end on command 'e'). */
static zx_http_stream *g_stream;
static atomic_int g_stream_closed;

static void stream_closed_cb(zx_http_stream *st, void *arg)
{
    (void)st;
    (void)arg;
    g_stream = NULL;
    atomic_fetch_add(&g_stream_closed, 1);
}

static void stream_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    if (g_stream)
        zx_http_stream_write(g_stream, "tick\n", 5);
}

static void late_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    zx_http_reply(arg, 200, "text/plain", NULL, "late", 4);
}

static void body_cb(zx_http_req *r, void *ctx)
{
    const char *p = zx_http_path(r);
    size_t n;
    const char *b = zx_http_body(r, &n);
    (void)ctx;

    if (strcmp(p, "/echo") == 0) {
        zx_http_reply(r, 200, "application/octet-stream", NULL, b, n);
    } else if (strcmp(p, "/info") == 0) {
        char out[1024];
        const char *x = zx_http_query_param(r, "x"), *h = zx_http_header(r, "x-test");
        int len = snprintf(out, sizeof(out), "m=%s p=%s q=%s x=%s h=%s cl=%llu n=%zu hash=%llx",
                           zx_http_method(r), p, zx_http_query(r), x ? x : "(null)",
                           h ? h : "(null)", (unsigned long long)zx_http_content_length(r), n,
                           (unsigned long long)fnv(b, n));
        zx_http_reply(r, 200, "text/plain", "X-Extra: 1\r\n", out, (size_t)len);
    } else if (strcmp(p, "/async") == 0) {
        struct timeval tv = {0, 20000};
        event_base_once(g_base, -1, EV_TIMEOUT, late_cb, r, &tv);
    } else if (strcmp(p, "/hold") == 0) {
        g_held = r; /* never answered: dropped by zx_http_server_free */
        atomic_store(&g_parked_ready, 2);
    } else if (strcmp(p, "/park") == 0) {
        g_parked = r;
        atomic_store(&g_parked_ready, 1);
    } else if (strcmp(p, "/stream") == 0) {
        struct timeval tv = {0, 500000};
        g_stream = zx_http_stream_start(r, 200, "text/event-stream",
                                        "Cache-Control: no-store\r\n", stream_closed_cb, NULL,
                                        NULL);
        if (g_stream && zx_http_stream_write(g_stream, "hello\n", 6) == 0 &&
            zx_http_stream_queued(g_stream) <= 6 + 512)
            event_base_once(g_base, -1, EV_TIMEOUT, stream_tick_cb, NULL, &tv);
    } else if (strcmp(p, "/keep") == 0 && g_nkept < MAX_KEPT) {
        g_kept[g_nkept++] = r;
    } else {
        zx_http_reply_json_error(r, 404, NULL, "no route");
    }
}

static void drop_cb(zx_http_req *r, void *ctx)
{
    (void)r;
    (void)ctx;
    atomic_fetch_add(&g_drops, 1);
}

static void park_poll_cb(evutil_socket_t fd, short what, void *arg)
{
    struct timeval tv = {0, 5000};
    (void)fd;
    (void)what;
    (void)arg;
    if (!zx_http_req_is_closed(g_parked) && ++g_park_tries < 2000) {
        event_base_once(g_base, -1, EV_TIMEOUT, park_poll_cb, NULL, &tv);
        return;
    }
    atomic_store(&g_park_result, zx_http_req_is_closed(g_parked));
    zx_http_reply(g_parked, 200, "text/plain", NULL, "parked", 6); /* discarded */
    g_parked = NULL;
}

static void cmd_cb(evutil_socket_t fd, short what, void *arg)
{
    char c = 0;
    (void)what;
    (void)arg;
    if (read(fd, &c, 1) != 1 || c == 'q') {
        g_pending_end = zx_http_server_pending(g_main) + zx_http_server_pending(g_idle) +
                        zx_http_server_pending(g_hold) + zx_http_server_pending(g_slow) +
                        zx_http_server_pending(g_evict);
        g_pending_few = zx_http_server_pending(g_few);
        g_held_end = zx_http_server_held_bytes(g_main) + zx_http_server_held_bytes(g_idle) +
                     zx_http_server_held_bytes(g_hold) + zx_http_server_held_bytes(g_slow) +
                     zx_http_server_held_bytes(g_evict);
        event_base_loopbreak(g_base);
    } else if (c == 'h') { /* read g_hold's held bytes */
        atomic_store(&g_held_now, zx_http_server_held_bytes(g_hold));
        atomic_fetch_add(&g_cmd_done, 1);
    } else if (c == 'r') { /* answer the kept requests */
        for (size_t i = 0; i < g_nkept; i++)
            zx_http_reply(g_kept[i], 200, "text/plain", NULL, "kept", 4);
        g_nkept = 0;
        atomic_fetch_add(&g_cmd_done, 1);
    } else if (c == 'z') { /* busy: what clients send meanwhile piles up */
        atomic_fetch_add(&g_cmd_done, 1);
        usleep(300000);
    } else if (c == 'S') { /* copy the counters */
        zx_http_server_stats_get(g_slow, &g_stats_slow);
        zx_http_server_stats_get(g_evict, &g_stats_evict);
        zx_http_server_stats_get(g_hold, &g_stats_hold);
        atomic_fetch_add(&g_cmd_done, 1);
    } else if (c == 's') {
        zx_http_server_stop_accepting(g_idle);
        atomic_store(&g_parked_ready, 3);
    } else if (c == 'c') {
        park_poll_cb(-1, 0, NULL);
    } else if (c == 'e') { /* end the stream once flushed */
        if (g_stream) {
            zx_http_stream_write(g_stream, "bye\n", 4);
            zx_http_stream_close(g_stream, 1);
            g_stream = NULL;
        }
        atomic_fetch_add(&g_cmd_done, 1);
    }
}

static void log_cb(int level, const char *fmt, ...)
{
    (void)level;
    (void)fmt;
    g_logged++; /* nothing is expected to be logged by these tests */
}

static void *server_thread(void *arg)
{
    zx_http_limits lm = {.max_body_size = MAX_BODY, .max_header_size = MAX_HEADER,
                         .max_connections = 64, .idle_timeout_ms = 10000};
    zx_http_limits li = {.max_body_size = MAX_BODY, .max_header_size = MAX_HEADER,
                         .max_connections = 64, .idle_timeout_ms = 200};
    zx_http_limits lf = {.max_body_size = MAX_BODY, .max_header_size = MAX_HEADER,
                         .max_connections = 2, .idle_timeout_ms = 10000};
    zx_http_limits lh = {.max_body_size = HOLD_BODY, .max_header_size = MAX_HEADER,
                         .max_connections = 16, .idle_timeout_ms = 10000,
                         .max_held_bytes = HOLD_BOUND};
    /* deadlines of 300 ms; a body must keep up 1 MiB/s after that */
    zx_http_limits ls = {.max_body_size = MAX_BODY, .max_header_size = MAX_HEADER,
                         .max_connections = 16, .idle_timeout_ms = 30000,
                         .header_timeout_ms = 300, .body_timeout_ms = 300,
                         .body_min_rate = 1024 * 1024};
    zx_http_limits le = {.max_body_size = MAX_BODY, .max_header_size = MAX_HEADER,
                         .max_connections = 4, .idle_timeout_ms = 30000,
                         .header_timeout_ms = 60000};
    char err[256];
    struct event *ev;
    (void)arg;

    g_base = event_base_new();
    g_main = zx_http_server_new(g_base, &lm, head_cb, body_cb, NULL);
    g_idle = zx_http_server_new(g_base, &li, head_cb, body_cb, NULL);
    g_few = zx_http_server_new(g_base, &lf, head_cb, body_cb, NULL);
    g_hold = zx_http_server_new(g_base, &lh, head_cb, body_cb, NULL);
    g_slow = zx_http_server_new(g_base, &ls, head_cb, body_cb, NULL);
    g_evict = zx_http_server_new(g_base, &le, head_cb, body_cb, NULL);
    zx_http_server_set_drop_cb(g_main, drop_cb);
    zx_http_server_set_drop_cb(g_few, drop_cb);
    zx_http_server_set_drop_cb(g_hold, drop_cb);
    zx_http_server_set_logger(g_main, log_cb);
    if (zx_http_server_listen(g_main, "127.0.0.1", 0, err, sizeof(err)) != 0 ||
        zx_http_server_listen(g_idle, "127.0.0.1", 0, err, sizeof(err)) != 0 ||
        zx_http_server_listen(g_few, "127.0.0.1", 0, err, sizeof(err)) != 0 ||
        zx_http_server_listen(g_hold, "127.0.0.1", 0, err, sizeof(err)) != 0 ||
        zx_http_server_listen(g_slow, "127.0.0.1", 0, err, sizeof(err)) != 0 ||
        zx_http_server_listen(g_evict, "127.0.0.1", 0, err, sizeof(err)) != 0) {
        fprintf(stderr, "listen: %s\n", err);
        exit(2);
    }
    g_port = zx_http_server_port(g_main);
    g_port_idle = zx_http_server_port(g_idle);
    g_port_few = zx_http_server_port(g_few);
    g_port_hold = zx_http_server_port(g_hold);
    g_port_slow = zx_http_server_port(g_slow);
    g_port_evict = zx_http_server_port(g_evict);
    if (zx_http_server_listen(g_idle, "127.0.0.1", g_port, g_listen_err,
                              sizeof(g_listen_err)) == 0)
        g_listen_err[0] = '\0';
    ev = event_new(g_base, g_cmd[0], EV_READ | EV_PERSIST, cmd_cb, NULL);
    event_add(ev, NULL);
    atomic_store(&g_ready, 1);
    event_base_dispatch(g_base);
    event_free(ev);
    zx_http_server_free(g_main);
    zx_http_server_free(g_idle);
    zx_http_server_free(g_few);
    zx_http_server_free(g_hold);
    zx_http_server_free(g_slow);
    zx_http_server_free(g_evict);
    event_base_free(g_base);
    return NULL;
}

/* ---- client side ------------------------------------------------------ */

typedef struct client {
    int fd;
    int head_req; /* the next response answers a HEAD request: no body */
    char *buf;
    size_t len, cap;
} client;

typedef struct resp {
    int status;
    int has_cl;
    int conn_close;
    char head[8192];
    char *body;
    size_t body_len;
} resp;

static void cl_open(client *c, uint16_t port)
{
    struct sockaddr_in sa = {0};
    struct timeval tv = {10, 0};
    memset(c, 0, sizeof(*c));
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        perror("connect");
        exit(2);
    }
}

static void cl_close(client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
}

/* Sends everything; returns 0, or -1 if the server closed meanwhile. */
static int cl_send(client *c, const void *p, size_t n)
{
    const char *s = p;
    while (n > 0) {
        ssize_t k = send(c->fd, s, n, MSG_NOSIGNAL);
        if (k <= 0)
            return -1;
        s += k;
        n -= (size_t)k;
    }
    return 0;
}

static int cl_sendf(client *c, const char *fmt, ...)
{
    char buf[65536];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return cl_send(c, buf, (size_t)n);
}

/* Reads more into c->buf; returns bytes read, 0 on EOF, -1 on error. */
static ssize_t cl_fill(client *c)
{
    ssize_t k;
    if (c->cap - c->len < 65536) {
        c->cap = c->cap * 2 + 65536;
        c->buf = realloc(c->buf, c->cap);
    }
    k = recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0);
    if (k > 0)
        c->len += (size_t)k;
    return k;
}

static void cl_consume(client *c, size_t n)
{
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
}

/* Reads one response; returns 0, or -1 if the connection ended first. */
static int cl_read(client *c, resp *r)
{
    char *end;
    size_t hl, cl = 0;
    memset(r, 0, sizeof(*r));
    for (;;) {
        if (c->buf) {
            c->buf[c->len] = '\0';
            if ((end = strstr(c->buf, "\r\n\r\n")) != NULL)
                break;
        }
        if (cl_fill(c) <= 0)
            return -1;
    }
    hl = (size_t)(end - c->buf) + 4;
    if (hl >= sizeof(r->head))
        return -1;
    memcpy(r->head, c->buf, hl);
    r->head[hl] = '\0';
    cl_consume(c, hl);
    if (sscanf(r->head, "HTTP/1.1 %d", &r->status) != 1)
        return -1;
    for (char *line = strstr(r->head, "\r\n"); line && line[2] != '\r'; line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, "Content-Length:", 15) == 0) {
            r->has_cl = 1;
            cl = strtoul(line + 17, NULL, 10);
        } else if (strncasecmp(line + 2, "Connection: close", 17) == 0) {
            r->conn_close = 1;
        }
    }
    if (c->head_req || r->status < 200)
        cl = 0;
    c->head_req = 0;
    while (c->len < cl)
        if (cl_fill(c) <= 0)
            return -1;
    r->body = calloc(1, cl + 1);
    memcpy(r->body, c->buf, cl);
    r->body_len = cl;
    cl_consume(c, cl);
    return 0;
}

static void resp_free(resp *r)
{
    free(r->body);
    r->body = NULL;
}

/* 1 if the server closed the connection (after any buffered response). */
static int cl_eof(client *c)
{
    return c->len == 0 && cl_fill(c) <= 0;
}

/* Reads one response expected to be a JSON error with status st and checks
 * the framing; the connection must be closed afterwards if must_close. */
#define EXPECT_ERROR(c, st, must_close) expect_error(c, st, must_close, __LINE__)
static void expect_error(client *c, int st, int must_close, int line)
{
    resp r;
    char want[64];
    int ok = cl_read(c, &r) == 0;
    snprintf(want, sizeof(want), "\"status\": %d}", st);
    if (!ok || r.status != st || !r.has_cl || !r.body ||
        strncmp(r.body, "{\"error\": \"", 11) != 0 || !strstr(r.body, want) ||
        !strstr(r.head, "Content-Type: application/json") ||
        (must_close && (!r.conn_close || !cl_eof(c)))) {
        fprintf(stderr, "%s:%d: expected a JSON %d error, got %d: %s%s\n", __FILE__, line, st,
                r.status, r.head, r.body ? r.body : "");
        failures++;
    }
    resp_free(&r);
}

static size_t gzip_buf(const void *in, size_t n, unsigned char **out)
{
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    size_t cap = deflateBound(&zs, n) + 64;
    *out = malloc(cap);
    zs.next_in = (Bytef *)in;
    zs.avail_in = (uInt)n;
    zs.next_out = *out;
    zs.avail_out = (uInt)cap;
    deflate(&zs, Z_FINISH);
    n = zs.total_out;
    deflateEnd(&zs);
    return n;
}

static char *pattern(size_t n)
{
    char *p = malloc(n);
    for (size_t i = 0; i < n; i++)
        p[i] = (char)("abcdefghij0123456789{}[],:\"\n"[(i * 7 + i / 13) % 29]);
    return p;
}

/* ---- tests ------------------------------------------------------------ */

static void test_basic(void)
{
    client c;
    resp r;
    cl_open(&c, g_port);
    cl_sendf(&c, "GET /info?x=a%%20b+c&y=1 HTTP/1.1\r\nHost: t\r\nX-Test:  v1 \r\n\r\n");
    CHECK(cl_read(&c, &r) == 0);
    CHECK(r.status == 200 && r.has_cl && !r.conn_close);
    CHECK(r.body && strstr(r.body, "m=GET p=/info q=x=a%20b+c&y=1 x=a b c h=v1 cl=0 n=0 "));
    CHECK(strstr(r.head, "Server: zx\r\n") && strstr(r.head, "X-Extra: 1\r\n"));
    resp_free(&r);
    /* keep-alive: a second request on the same connection, LF-only lines */
    cl_sendf(&c, "POST /echo HTTP/1.1\nHost: t\nContent-Length: 5\n\nhello");
    CHECK(cl_read(&c, &r) == 0);
    CHECK(r.status == 200 && r.body_len == 5 && memcmp(r.body, "hello", 5) == 0);
    resp_free(&r);
    /* HEAD: Content-Length but no body */
    cl_sendf(&c, "HEAD /info HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    c.head_req = 1;
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && r.conn_close);
    CHECK(strstr(r.head, "Content-Length: 0\r\n") == NULL);
    CHECK(c.len == 0 && cl_eof(&c));
    resp_free(&r);
    cl_close(&c);
}

static void test_http10(void)
{
    client c;
    resp r;
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /echo HTTP/1.0\r\nContent-Length: 2\r\n\r\nok");
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && r.conn_close);
    CHECK(cl_eof(&c));
    resp_free(&r);
    cl_close(&c);
    cl_open(&c, g_port);
    cl_sendf(&c, "GET /info HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && !r.conn_close);
    CHECK(strstr(r.head, "Connection: keep-alive\r\n") != NULL);
    resp_free(&r);
    cl_close(&c);
}

static void test_pipelined(void)
{
    client c;
    resp r;
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /async HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\nA"
                 "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\ntwo"
                 "GET /info?x=3 HTTP/1.1\r\nHost: t\r\n\r\n"
                 "GET /async HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && strcmp(r.body, "late") == 0);
    resp_free(&r);
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && strcmp(r.body, "two") == 0);
    resp_free(&r);
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && strstr(r.body, "x=3 "));
    resp_free(&r);
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && strcmp(r.body, "late") == 0 &&
          r.conn_close);
    resp_free(&r);
    CHECK(cl_eof(&c));
    cl_close(&c);
}

static void test_chunked(void)
{
    client c;
    resp r;
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: x\r\n\r\n");
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && r.body_len == 11 &&
          memcmp(r.body, "hello world", 11) == 0);
    resp_free(&r);
    /* the connection stays usable; Content-Length reported as unknown */
    cl_sendf(&c, "POST /info HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "3\r\nabc\r\n0\r\n\r\n");
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && strstr(r.body, "cl=18446744073709551615 n=3"));
    resp_free(&r);
    /* broken framing */
    cl_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "zz\r\nhello\r\n0\r\n\r\n");
    EXPECT_ERROR(&c, 400, 1);
    cl_close(&c);
}

static void test_gzip(void)
{
    size_t n = 300000, zn;
    char *plain = pattern(n), want[64];
    unsigned char *z;
    client c;
    resp r;

    zn = gzip_buf(plain, n, &z);
    snprintf(want, sizeof(want), "n=%zu hash=%llx", n, (unsigned long long)fnv(plain, n));
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /info HTTP/1.1\r\nHost: t\r\nContent-Encoding: gzip\r\n"
                 "Content-Length: %zu\r\n\r\n", zn);
    cl_send(&c, z, zn);
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && strstr(r.body, want));
    resp_free(&r);
    /* gzip inside chunked framing, in two chunks, "x-gzip" */
    cl_sendf(&c, "POST /info HTTP/1.1\r\nHost: t\r\nContent-Encoding: x-gzip\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n%zx\r\n", zn / 2);
    cl_send(&c, z, zn / 2);
    cl_sendf(&c, "\r\n%zx\r\n", zn - zn / 2);
    cl_send(&c, z + zn / 2, zn - zn / 2);
    cl_sendf(&c, "\r\n0\r\n\r\n");
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && strstr(r.body, want));
    resp_free(&r);
    /* truncated gzip */
    cl_sendf(&c, "POST /info HTTP/1.1\r\nHost: t\r\nContent-Encoding: gzip\r\n"
                 "Content-Length: %zu\r\n\r\n", zn / 2);
    cl_send(&c, z, zn / 2);
    EXPECT_ERROR(&c, 400, 1);
    cl_close(&c);
    /* not gzip at all */
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /info HTTP/1.1\r\nHost: t\r\nContent-Encoding: gzip\r\n"
                 "Content-Length: 11\r\n\r\nhello world");
    EXPECT_ERROR(&c, 400, 1);
    cl_close(&c);
    /* unknown encoding */
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /info HTTP/1.1\r\nHost: t\r\nContent-Encoding: br\r\n"
                 "Content-Length: 11\r\n\r\nhello world");
    EXPECT_ERROR(&c, 415, 1);
    cl_close(&c);
    free(z);
    free(plain);
}

static void test_limits(void)
{
    size_t n = 3 * MAX_BODY, zn;
    char *zeros = calloc(1, n), *big;
    unsigned char *z;
    client c;

    /* gzip bomb: a few KiB inflating above the limit */
    zn = gzip_buf(zeros, n, &z);
    CHECK(zn < MAX_BODY / 10);
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /info HTTP/1.1\r\nHost: t\r\nContent-Encoding: gzip\r\n"
                 "Content-Length: %zu\r\n\r\n", zn);
    cl_send(&c, z, zn);
    EXPECT_ERROR(&c, 413, 1);
    cl_close(&c);
    free(z);
    free(zeros);

    /* announced Content-Length above the limit: answered without the body */
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %u\r\n\r\n", 2 * MAX_BODY);
    EXPECT_ERROR(&c, 413, 1);
    cl_close(&c);

    /* one chunk announced above the limit */
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n",
             2 * MAX_BODY);
    EXPECT_ERROR(&c, 413, 1);
    cl_close(&c);

    /* many chunks passing the limit (the client keeps sending) */
    big = pattern(65536);
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 24; i++) {
        if (cl_sendf(&c, "10000\r\n") != 0 || cl_send(&c, big, 65536) != 0 ||
            cl_sendf(&c, "\r\n") != 0)
            break;
    }
    shutdown(c.fd, SHUT_WR);
    EXPECT_ERROR(&c, 413, 1);
    cl_close(&c);

    /* headers too big */
    memset(big, 'a', 20000);
    big[20000] = '\0';
    cl_open(&c, g_port);
    cl_sendf(&c, "GET /info HTTP/1.1\r\nHost: t\r\nX-Big: %s\r\n\r\n", big);
    shutdown(c.fd, SHUT_WR);
    EXPECT_ERROR(&c, 431, 1);
    cl_close(&c);
    /* a request line alone too big, never ending */
    cl_open(&c, g_port);
    cl_sendf(&c, "GET /%s", big);
    EXPECT_ERROR(&c, 431, 1);
    cl_close(&c);
    free(big);
}

static void bad_request(const char *req, int st, int line)
{
    client c;
    int before = failures;
    cl_open(&c, g_port);
    cl_send(&c, req, strlen(req));
    expect_error(&c, st, 1, line);
    if (failures != before)
        fprintf(stderr, "  request was: %s\n", req);
    cl_close(&c);
}
#define BAD(req, st) bad_request(req, st, __LINE__)

static void test_malformed(void)
{
    BAD("GARBAGE\r\n\r\n", 400);
    BAD("GET /x HTTP/1.1 extra\r\nHost: t\r\n\r\n", 400);
    BAD("GET  /x HTTP/1.1\r\nHost: t\r\n\r\n", 400);
    BAD("GET x HTTP/1.1\r\nHost: t\r\n\r\n", 400);
    BAD("GET /x HTTP/1.1x\r\nHost: t\r\n\r\n", 400);
    BAD("G(T /x HTTP/1.1\r\nHost: t\r\n\r\n", 400);
    BAD("GET /x\x01y HTTP/1.1\r\nHost: t\r\n\r\n", 400);
    BAD("GET /x HTTP/2.0\r\nHost: t\r\n\r\n", 505);
    BAD("GET /x HTTP/1.1\r\n\r\n", 400);                                  /* no Host */
    BAD("GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400);
    BAD("GET /x HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n  folded\r\n\r\n", 400);  /* obs-fold */
    BAD("GET /x HTTP/1.1\r\nHost: t\r\nX A: 1\r\n\r\n", 400);
    BAD("GET /x HTTP/1.1\r\nHost: t\r\nX-A : 1\r\n\r\n", 400);
    BAD("GET /x HTTP/1.1\r\nHost: t\r\nnocolon\r\n\r\n", 400);
    BAD("GET /x HTTP/1.1\r\nHost: t\r\nX-A: a\rb\r\n\r\n", 400);            /* bare CR */
    BAD("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1x\r\n\r\n", 400);
    BAD("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", 400);
    BAD("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n"
        "Transfer-Encoding: chunked\r\n\r\n", 400);
    BAD("POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 501);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nExpect: magic\r\n\r\n", 417);
}

static void test_handler_errors(void)
{
    client c;
    resp r;
    /* head_cb answers 401 before the announced body is read */
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /deny HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n");
    CHECK(cl_read(&c, &r) == 0 && r.status == 401 && r.conn_close);
    CHECK(strstr(r.head, "WWW-Authenticate: Bearer\r\n") != NULL);
    CHECK(r.body && strcmp(r.body, "{\"error\": \"missing key\", \"status\": 401}") == 0);
    CHECK(cl_eof(&c));
    resp_free(&r);
    cl_close(&c);
    /* without a body the connection stays open; JSON escaping */
    cl_open(&c, g_port);
    cl_sendf(&c, "GET /jsonerr HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK(cl_read(&c, &r) == 0 && r.status == 404 && !r.conn_close);
    CHECK(r.body && strcmp(r.body, "{\"error\": \"no route \\\"/jsonerr\\\"\\u000a\\ufffd\", "
                                   "\"status\": 404}") == 0);
    resp_free(&r);
    cl_sendf(&c, "GET /nothing HTTP/1.1\r\nHost: t\r\n\r\n");
    EXPECT_ERROR(&c, 404, 0);
    cl_close(&c);
}

static void test_expect(void)
{
    client c;
    resp r;
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
                 "Content-Length: 5\r\n\r\n");
    CHECK(cl_read(&c, &r) == 0 && r.status == 100);
    resp_free(&r);
    cl_sendf(&c, "hello");
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && strcmp(r.body, "hello") == 0);
    resp_free(&r);
    cl_close(&c);
}

static void test_client_gone(void)
{
    client c;
    char cmd = 'c';
    int drops_before = atomic_load(&g_drops);

    cl_open(&c, g_port);
    cl_sendf(&c, "POST /park HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nbody");
    while (!atomic_load(&g_parked_ready))
        usleep(1000);
    cl_close(&c);
    CHECK(write(g_cmd[1], &cmd, 1) == 1);
    while (atomic_load(&g_park_result) < 0)
        usleep(1000);
    CHECK(atomic_load(&g_park_result) == 1);
    CHECK(atomic_load(&g_drops) == drops_before); /* handed to body_cb: no drop */

    /* the client goes away in the middle of a body: drop_cb */
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc");
    cl_close(&c);
    for (int i = 0; i < 10000 && atomic_load(&g_drops) == drops_before; i++)
        usleep(1000);
    CHECK(atomic_load(&g_drops) == drops_before + 1);
}

static void test_idle(void)
{
    client c;
    resp r;
    /* no request at all */
    cl_open(&c, g_port_idle);
    CHECK(cl_eof(&c));
    cl_close(&c);
    /* a slow client stops in the middle of its head: 408, closed */
    cl_open(&c, g_port_idle);
    cl_sendf(&c, "GET /info HTTP/1.1\r\nHost");
    EXPECT_ERROR(&c, 408, 1);
    cl_close(&c);
    /* idle after a keep-alive response; async replies are not timed out */
    cl_open(&c, g_port_idle);
    cl_sendf(&c, "GET /info HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK(cl_read(&c, &r) == 0 && r.status == 200);
    resp_free(&r);
    CHECK(cl_eof(&c));
    cl_close(&c);
}

static void test_max_connections(void)
{
    client a, b, c;
    resp r;
    struct pollfd pfd;
    cl_open(&a, g_port_few);
    cl_sendf(&a, "GET /info HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK(cl_read(&a, &r) == 0 && r.status == 200);
    resp_free(&r);
    cl_open(&b, g_port_few);
    cl_sendf(&b, "GET /info HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK(cl_read(&b, &r) == 0 && r.status == 200);
    resp_free(&r);
    cl_open(&c, g_port_few); /* sits in the kernel backlog */
    cl_sendf(&c, "GET /info?x=third HTTP/1.1\r\nHost: t\r\n\r\n");
    pfd.fd = c.fd;
    pfd.events = POLLIN;
    CHECK(poll(&pfd, 1, 200) == 0); /* not served while two are open */
    cl_close(&a);
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && strstr(r.body, "x=third"));
    resp_free(&r);
    cl_close(&b);
    cl_close(&c);
    /* a request left unanswered is dropped when the server is freed */
    cl_open(&c, g_port_few);
    atomic_store(&g_parked_ready, 0);
    cl_sendf(&c, "POST /hold HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\nx");
    while (atomic_load(&g_parked_ready) != 2)
        usleep(1000);
    cl_close(&c);
}

static void test_listen_and_stop(void)
{
    char want[128], cmd = 's';
    struct sockaddr_in sa = {0};
    int fd;

    snprintf(want, sizeof(want), "cannot listen on 127.0.0.1:%u: Address already in use", g_port);
    CHECK(strcmp(g_listen_err, want) == 0);
    atomic_store(&g_parked_ready, 0);
    CHECK(write(g_cmd[1], &cmd, 1) == 1);
    while (atomic_load(&g_parked_ready) != 3)
        usleep(1000);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    sa.sin_family = AF_INET;
    sa.sin_port = htons(g_port_idle);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno == ECONNREFUSED);
    close(fd);
}

/* ---- hostile clients -------------------------------------------------- */

/* Sends a command to the server thread and waits until it was done. */
static void server_cmd(char cmd)
{
    int before = atomic_load(&g_cmd_done);
    CHECK(write(g_cmd[1], &cmd, 1) == 1);
    while (atomic_load(&g_cmd_done) == before)
        usleep(1000);
}

static uint64_t held_now(void)
{
    server_cmd('h');
    return atomic_load(&g_held_now);
}

/* Polls g_hold's held bytes until pred holds (10 s at most); returns them. */
static uint64_t wait_held(uint64_t at_least, uint64_t at_most)
{
    uint64_t h = held_now();
    for (int i = 0; i < 10000 && (h < at_least || h > at_most); i++) {
        usleep(1000);
        h = held_now();
    }
    return h;
}

/* 1 if the server closed the connection (EOF or reset), 0 if the read
 * timed out (10 s) or data came instead. */
static int closed_by_server(client *c)
{
    char b[256];
    ssize_t k;
    if (c->len > 0)
        return 0;
    k = recv(c->fd, b, sizeof(b), 0);
    return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Whether the server sent something (or closed) already, without waiting. */
static int readable(client *c)
{
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
    return poll(&pfd, 1, 0) > 0;
}

/* Reads until buf holds want (10 s at most); 1 if it does. */
static int cl_wait_for(client *c, const char *want)
{
    for (;;) {
        if (c->buf) {
            c->buf[c->len] = '\0';
            if (strstr(c->buf, want))
                return 1;
        }
        if (cl_fill(c) <= 0)
            return 0;
    }
}

static void test_stream(void)
{
    client c;
    /* a stream on the server with a 200 ms idle_timeout: silent for 500 ms
     * and still open (no read timeout), its head without Content-Length */
    cl_open(&c, g_port_idle);
    cl_sendf(&c, "GET /stream HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK(cl_wait_for(&c, "hello\n"));
    CHECK(strncmp(c.buf, "HTTP/1.1 200 OK\r\n", 17) == 0);
    CHECK(strstr(c.buf, "Content-Type: text/event-stream\r\n"));
    CHECK(strstr(c.buf, "Cache-Control: no-store\r\n"));
    CHECK(strstr(c.buf, "Connection: close\r\n"));
    CHECK(!strstr(c.buf, "Content-Length"));
    CHECK(cl_wait_for(&c, "hello\ntick\n"));
    /* what the client sends is ignored; the end comes after what is queued */
    cl_sendf(&c, "ignored\r\n\r\n");
    server_cmd('e');
    CHECK(cl_wait_for(&c, "tick\nbye\n"));
    cl_consume(&c, c.len);
    CHECK(closed_by_server(&c));
    CHECK(atomic_load(&g_stream_closed) == 0); /* closed by the handler: no callback */
    cl_close(&c);
    /* the client goes away: the closed callback */
    cl_open(&c, g_port_idle);
    cl_sendf(&c, "GET /stream HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK(cl_wait_for(&c, "hello\n"));
    cl_close(&c);
    for (int i = 0; i < 5000 && atomic_load(&g_stream_closed) == 0; i++)
        usleep(1000);
    CHECK(atomic_load(&g_stream_closed) == 1);
}

static void test_numbers(void)
{
    client c;
    resp r;
    /* Content-Length beyond 64 bits: 2^64 + 5 was read as 5, 2^64 as 0 */
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 18446744073709551621\r\n\r\n"
        "hello", 400);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 18446744073709551616\r\n\r\n", 400);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 18446744073709551620\r\n\r\n", 400);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999\r\n\r\n", 400);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 36893488147419103237\r\n\r\n"
        "hello", 400); /* 2^65 + 5 */
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\n"
        "Content-Length: 1234567890123456789012345678901234567890\r\n\r\n", 400);
    /* the largest that fits is a number: above the body limit */
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 18446744073709551615\r\n\r\n", 413);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: -5\r\n\r\nhello", 400);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: +5\r\n\r\nhello", 400);
    /* the same with the client's half-close right behind it, both read by
     * the server at once: the answer still reaches the client */
    for (int i = 0; i < 5; i++) {
        static const char req[] = "POST /echo HTTP/1.1\r\nHost: t\r\n"
                                  "Content-Length: 18446744073709551621\r\n\r\nhello";
        cl_open(&c, g_port);
        server_cmd('z');
        cl_send(&c, req, sizeof(req) - 1);
        shutdown(c.fd, SHUT_WR);
        EXPECT_ERROR(&c, 400, 1);
        cl_close(&c);
    }
    /* leading zeros are still the same number */
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\n"
                 "Content-Length: 0000000000000000000000000000005\r\n\r\nhello");
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && r.body_len == 5 &&
          memcmp(r.body, "hello", 5) == 0);
    resp_free(&r);
    cl_close(&c);

    /* chunk sizes beyond 64 bits are malformed, not "too big" */
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
        "10000000000000000\r\nhello\r\n0\r\n\r\n", 400);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
        "10000000000000005\r\nhello\r\n0\r\n\r\n", 400);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
        "fffffffffffffffffffffffffff\r\nhello\r\n0\r\n\r\n", 400);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
        "ffffffffffffffff\r\nhello\r\n0\r\n\r\n", 413);
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "000000000000000000000000005\r\nhello\r\n00000000000000000000000\r\n\r\n");
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && r.body_len == 5 &&
          memcmp(r.body, "hello", 5) == 0);
    resp_free(&r);
    cl_close(&c);
}

static void test_versions_and_repeats(void)
{
    client c;
    resp r;
    unsigned char *z;
    size_t zn = gzip_buf("hello", 5, &z);

    BAD("GET /x HTTP/1.9\r\nHost: t\r\n\r\n", 505);
    BAD("GET /x HTTP/1.2\r\nHost: t\r\n\r\n", 505);
    BAD("GET /x HTTP/0.9\r\nHost: t\r\n\r\n", 505);
    BAD("GET /x HTTP/1.10\r\nHost: t\r\n\r\n", 400);
    BAD("GET /x HTTP/1.1 \r\nHost: t\r\n\r\n", 400);
    BAD("GET /x HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400);
    BAD("GET /x HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer a\r\n"
        "authorization: Bearer b\r\n\r\n", 400);
    BAD("POST /x HTTP/1.1\r\nHost: t\r\nContent-Type: a/b\r\nContent-Type: c/d\r\n"
        "Content-Length: 1\r\n\r\nx", 400);
    BAD("GET /x HTTP/1.1\r\nHost: t\r\nIdempotency-Key: a\r\nIdempotency-Key: b\r\n\r\n", 400);
    BAD("POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
        "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501);
    /* every Content-Encoding header and every coding in it is looked at */
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Encoding: gzip\r\nContent-Encoding: br\r\n"
        "Content-Length: 1\r\n\r\nx", 415);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Encoding: identity, br\r\n"
        "Content-Length: 1\r\n\r\nx", 415);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Encoding: gzip, gzip\r\n"
        "Content-Length: 1\r\n\r\nx", 415);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Encoding: gzip\r\n"
        "Content-Encoding: x-gzip\r\nContent-Length: 1\r\n\r\nx", 415);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Encoding: gzip,\r\n"
        "Content-Length: 1\r\n\r\nx", 415);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Encoding:\r\n"
        "Content-Length: 1\r\n\r\nx", 415);
    /* every Expect header too */
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nExpect: magic\r\n"
        "Content-Length: 1\r\n\r\nx", 417);
    BAD("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue, magic\r\n"
        "Content-Length: 1\r\n\r\nx", 417);
    /* identity next to one gzip is still one gzip */
    cl_open(&c, g_port);
    cl_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Encoding: identity\r\n"
                 "Content-Encoding: GZIP, identity\r\nContent-Length: %zu\r\n\r\n", zn);
    cl_send(&c, z, zn);
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && r.body_len == 5 &&
          memcmp(r.body, "hello", 5) == 0);
    resp_free(&r);
    cl_close(&c);
    free(z);
}

/* max_held_bytes counts what bodies hold: chunked and inflated bytes as they
 * grow, announced lengths up front, kept bodies until their reply. */
static void test_held(void)
{
    size_t chunk = 150 * 1024, inflated = 200 * 1024, zn;
    char *data = pattern(inflated);
    unsigned char *z;
    client a, b, k, d, e;
    resp r;
    uint64_t h;

    zn = gzip_buf(data, inflated, &z);
    CHECK(zn < HOLD_BODY);
    CHECK(held_now() == 0);
    /* a: a chunked body of 150 KiB so far, never finished */
    cl_open(&a, g_port_hold);
    cl_sendf(&a, "POST /keep HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n%zx\r\n",
             chunk + 10);
    cl_send(&a, data, chunk);
    h = wait_held(chunk, HOLD_BOUND);
    CHECK(h >= chunk && h <= HOLD_BOUND);
    /* b: a small gzip body inflating to 200 KiB, kept by the handler */
    cl_open(&b, g_port_hold);
    cl_sendf(&b, "POST /keep HTTP/1.1\r\nHost: t\r\nContent-Encoding: gzip\r\n"
                 "Content-Length: %zu\r\n\r\n", zn);
    cl_send(&b, z, zn);
    h = wait_held(chunk + inflated, HOLD_BOUND);
    CHECK(h >= chunk + inflated && h <= HOLD_BOUND);
    /* k: an announced 256 KiB, sent whole and kept */
    cl_open(&k, g_port_hold);
    cl_sendf(&k, "POST /keep HTTP/1.1\r\nHost: t\r\nContent-Length: %u\r\n\r\n", HOLD_BODY);
    cl_send(&k, data, inflated);
    cl_send(&k, data, HOLD_BODY - inflated);
    h = wait_held(chunk + inflated + HOLD_BODY, HOLD_BOUND);
    CHECK(h >= chunk + inflated + HOLD_BODY && h <= HOLD_BOUND);
    /* d: 200 KiB more would pass the bound: 503 before its body is read */
    cl_open(&d, g_port_hold);
    cl_sendf(&d, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %zu\r\n\r\n", inflated);
    CHECK(cl_read(&d, &r) == 0 && r.status == 503 && r.conn_close &&
          strstr(r.head, "\r\nRetry-After: 1\r\n") && r.body &&
          strstr(r.body, "\"status\": 503}") && strstr(r.body, "too many request bodies"));
    resp_free(&r);
    cl_close(&d);
    /* e: a chunked body passing it while it grows: 503 too */
    cl_open(&e, g_port_hold);
    cl_sendf(&e, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n%zx\r\n",
             inflated);
    cl_send(&e, data, inflated);
    EXPECT_ERROR(&e, 503, 1);
    cl_close(&e);
    server_cmd('S');
    CHECK(g_stats_hold.held_refused == 2);
    /* the holders leave: everything is given back, pushes work again */
    cl_close(&a);
    server_cmd('r');
    CHECK(cl_read(&b, &r) == 0 && r.status == 200);
    resp_free(&r);
    CHECK(cl_read(&k, &r) == 0 && r.status == 200);
    resp_free(&r);
    CHECK(wait_held(0, 0) == 0);
    cl_open(&d, g_port_hold);
    cl_sendf(&d, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %zu\r\n\r\n", inflated);
    cl_send(&d, data, inflated);
    CHECK(cl_read(&d, &r) == 0 && r.status == 200 && r.body_len == inflated &&
          memcmp(r.body, data, inflated) == 0);
    resp_free(&r);
    cl_close(&d);
    cl_close(&b);
    cl_close(&k);
    free(z);
    free(data);
}

/* Header and body deadlines hold however the client trickles (g_slow: 300 ms
 * each, idle_timeout 30 s). */
static void test_deadlines(void)
{
    client c;
    resp r;
    int i;

    /* headers, one byte at a time: 408 */
    cl_open(&c, g_port_slow);
    cl_sendf(&c, "GET /info HTTP/1.1\r\nX-Slow: ");
    for (i = 0; i < 400 && !readable(&c); i++) {
        if (cl_sendf(&c, "a") != 0)
            break;
        usleep(25000);
    }
    EXPECT_ERROR(&c, 408, 1);
    cl_close(&c);
    /* nothing at all: closed without an answer */
    cl_open(&c, g_port_slow);
    CHECK(closed_by_server(&c));
    cl_close(&c);
    /* a body, one byte at a time: 408 */
    cl_open(&c, g_port_slow);
    cl_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n");
    for (i = 0; i < 400 && !readable(&c); i++) {
        if (cl_sendf(&c, "b") != 0)
            break;
        usleep(25000);
    }
    EXPECT_ERROR(&c, 408, 1);
    cl_close(&c);
    /* a prompt client is served, and may stay idle between requests longer
     * than the header deadline (idle_timeout applies there) */
    cl_open(&c, g_port_slow);
    cl_sendf(&c, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
    CHECK(cl_read(&c, &r) == 0 && r.status == 200 && !r.conn_close);
    resp_free(&r);
    usleep(700000);
    cl_sendf(&c, "GET /info HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK(cl_read(&c, &r) == 0 && r.status == 200);
    resp_free(&r);
    cl_close(&c);
    server_cmd('S');
    CHECK(g_stats_slow.header_timeouts == 2 && g_stats_slow.body_timeouts == 1);
}

/* At max_connections the oldest untrusted connection makes room (g_evict: 4
 * connections). */
static void test_evict(void)
{
    client t, u0, u1, u2, n, m;
    resp r;

    /* t: trusted (head_cb let its request through), kept alive */
    cl_open(&t, g_port_evict);
    cl_sendf(&t, "GET /info HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK(cl_read(&t, &r) == 0 && r.status == 200 && !r.conn_close);
    resp_free(&r);
    /* u0: answered 401 by head_cb, kept alive: still untrusted */
    cl_open(&u0, g_port_evict);
    cl_sendf(&u0, "GET /deny HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK(cl_read(&u0, &r) == 0 && r.status == 401 && !r.conn_close);
    resp_free(&r);
    /* u1, u2: partial heads */
    cl_open(&u1, g_port_evict);
    cl_sendf(&u1, "GET /info HTTP/1.1\r\nHo");
    cl_open(&u2, g_port_evict);
    cl_sendf(&u2, "POST /x HTT");
    /* n: a fifth client is served; u0, the oldest untrusted, made room */
    cl_open(&n, g_port_evict);
    cl_sendf(&n, "GET /info?x=n HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK(cl_read(&n, &r) == 0 && r.status == 200 && strstr(r.body, "x=n "));
    resp_free(&r);
    CHECK(closed_by_server(&u0));
    /* the trusted connection, older than all of them, is still served */
    cl_sendf(&t, "GET /info?x=t HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK(cl_read(&t, &r) == 0 && r.status == 200 && strstr(r.body, "x=t "));
    resp_free(&r);
    /* m: u1 goes next */
    cl_open(&m, g_port_evict);
    cl_sendf(&m, "GET /info?x=m HTTP/1.1\r\nHost: t\r\n\r\n");
    CHECK(cl_read(&m, &r) == 0 && r.status == 200 && strstr(r.body, "x=m "));
    resp_free(&r);
    CHECK(closed_by_server(&u1));
    server_cmd('S');
    CHECK(g_stats_evict.evicted == 2);
    cl_close(&t);
    cl_close(&u0);
    cl_close(&u1);
    cl_close(&u2);
    cl_close(&n);
    cl_close(&m);
}

int main(void)
{
    pthread_t th;
    char q = 'q';
    int drops;

    if (pipe(g_cmd) != 0)
        return 2;
    pthread_create(&th, NULL, server_thread, NULL);
    while (!atomic_load(&g_ready))
        usleep(1000);

    test_basic();
    test_http10();
    test_pipelined();
    test_chunked();
    test_gzip();
    test_limits();
    test_malformed();
    test_handler_errors();
    test_expect();
    test_client_gone();
    test_idle();
    test_max_connections();
    test_stream();
    test_listen_and_stop();
    test_numbers();
    test_versions_and_repeats();
    test_held();
    test_deadlines();
    test_evict();

    drops = atomic_load(&g_drops);
    CHECK(write(g_cmd[1], &q, 1) == 1);
    pthread_join(th, NULL);
    CHECK(g_pending_end == 0);
    CHECK(g_held_end == 0);
    CHECK(g_logged == 0);
    CHECK(g_pending_few == 1);
    CHECK(atomic_load(&g_drops) == drops + 1); /* the held request */
    close(g_cmd[0]);
    close(g_cmd[1]);
    if (failures)
        fprintf(stderr, "test_http: %d check(s) failed\n", failures);
    else
        printf("test_http: all checks passed\n");
    return failures ? 1 : 0;
}
