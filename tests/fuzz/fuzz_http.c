/*
 * fuzz_http.c — fuzz target for the gateway's HTTP/1.1 server
 * (workers/gateway/http*.c): the whole per-connection state machine, not
 * just the head parser.  Each input is the byte stream of one client
 * connection: request line and headers (zx_http_parse_head), Content-Length,
 * chunked and gzip bodies, 100-continue, pipelining, errors answered by the
 * server, replies made now or later by the handler, and the client going
 * away at any point.
 *
 * How: one server (with small limits, so 413 and 431 are reachable) runs on
 * a private event_base and listens on an abstract AF_UNIX socket.  For each
 * input a client socket connects, writes the stream in pieces (running the
 * loop between pieces so the server sees partial input), waits until the
 * server has answered what it can, half-closes, and reads until the server
 * closes the connection.
 *
 * Input: byte 0 = handler behaviour (bits 0-1 how body_cb replies: now,
 * later from the loop, now with a JSON error, now with 204; bit 2 head_cb
 * answers 401 for paths under /deny; bit 3 the client closes at once
 * instead of half-closing); byte 1 = size of the pieces written; the rest is
 * the stream.
 *
 * Checks: no crash or sanitizer report; every answer starts with a status
 * line; after the connection is gone the server holds no connection and no
 * request; every request head_cb let through is given back exactly once (to
 * body_cb's reply or to drop_cb: LeakSanitizer sees a missing one, ASan a
 * second one); the server closes the connection within 10 s of the client's
 * half-close (else "server never closed").
 *
 * Built by meson with -Dfuzzing=true (clang, libFuzzer) and, as a corpus
 * replay test, by every build (tests/fuzz/replay.c).  Seeds: corpus/http/.
 * Must never be linked into zx.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "tests/fuzz/fuzz_check.h"
#include "workers/gateway/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_DEFERRED 16
#define MAX_BODY 8192
#define REPLY_CAP (1u << 20)

static struct event_base *base;
static zx_http_server *srv;
static struct sockaddr_un addr;
static socklen_t addr_len;
static struct event *flush_ev;
static struct event *tick_ev;             /* bounds each blocking loop turn */

static int mode;                          /* byte 0 of the current input */
static zx_http_req *deferred[MAX_DEFERRED];
static size_t ndeferred;

/* Per-request handler data: proves each request is given back once. */
static void *tag_new(void)
{
    void *p = malloc(8);
    fuzz_check(p != NULL, "out of memory");
    return p;
}

static void reply_ok(zx_http_req *r, int status)
{
    free(zx_http_req_get_data(r));
    zx_http_req_set_data(r, NULL);
    if (status == 204) {
        zx_http_reply(r, 204, NULL, NULL, NULL, 0);
        return;
    }
    size_t len = 0;
    zx_http_body(r, &len);
    char body[64];
    int n = snprintf(body, sizeof(body), "{\"bytes\":%zu}", len);
    zx_http_reply(r, status, "application/json", "X-Fuzz: 1\r\n", body, (size_t)n);
}

static void flush_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    while (ndeferred > 0) {
        zx_http_req *r = deferred[--ndeferred];
        reply_ok(r, zx_http_req_is_closed(r) ? 503 : 202);
    }
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

static void head_cb(zx_http_req *r, void *ctx)
{
    (void)ctx;
    fuzz_check(zx_http_method(r) && zx_http_path(r) && zx_http_query(r), "accessor NULL");
    zx_http_header(r, "Content-Type");
    zx_http_query_param(r, "wait");
    zx_http_query_param(r, "a b");
    zx_http_peer(r);
    if ((mode & 4) && strncmp(zx_http_path(r), "/deny", 5) == 0) {
        zx_http_reply_json_error(r, 401, "WWW-Authenticate: Bearer\r\n",
                                 "no key for %s", zx_http_path(r));
        return;
    }
    zx_http_req_set_data(r, tag_new());
}

static void body_cb(zx_http_req *r, void *ctx)
{
    size_t len = 99;
    (void)ctx;
    const char *b = zx_http_body(r, &len);
    fuzz_check(b != NULL || len == 0, "body NULL");
    fuzz_check(len <= MAX_BODY, "body above the limit handed to the handler");
    fuzz_check(zx_http_req_get_data(r) != NULL, "body_cb for a request head_cb did not see");
    switch (mode & 3) {
    case 0:
        reply_ok(r, 200);
        break;
    case 1:
        if (ndeferred < MAX_DEFERRED) {
            deferred[ndeferred++] = r;
            event_active(flush_ev, EV_TIMEOUT, 0);
        } else {
            reply_ok(r, 200);
        }
        break;
    case 2:
        free(zx_http_req_get_data(r));
        zx_http_req_set_data(r, NULL);
        zx_http_reply_json_error(r, 400, NULL, "bad \"%.*s\"", (int)(len > 40 ? 40 : len),
                                 b ? b : "");
        break;
    default:
        reply_ok(r, 204);
        break;
    }
}

static void drop_cb(zx_http_req *r, void *ctx)
{
    (void)ctx;
    void *tag = zx_http_req_get_data(r);
    fuzz_check(tag != NULL, "drop_cb for a request without data (dropped twice?)");
    for (size_t i = 0; i < ndeferred; i++)
        fuzz_check(deferred[i] != r, "drop_cb for a request the handler holds");
    free(tag);
    zx_http_req_set_data(r, NULL);
}

static void setup(void)
{
    zx_http_limits lim = {.max_body_size = MAX_BODY, .max_header_size = 2048,
                          .max_connections = 8, .idle_timeout_ms = 5000};
    base = event_base_new();
    fuzz_check(base != NULL, "event_base_new");
    srv = zx_http_server_new(base, &lim, head_cb, body_cb, NULL);
    fuzz_check(srv != NULL, "zx_http_server_new");
    zx_http_server_set_drop_cb(srv, drop_cb);
    flush_ev = event_new(base, -1, 0, flush_cb, NULL);
    tick_ev = evtimer_new(base, tick_cb, NULL);
    fuzz_check(flush_ev != NULL && tick_ev != NULL, "event_new");

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    fuzz_check(fd >= 0, "socket");
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    /* abstract name: nothing on disk, unique per process */
    int n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "zx-fuzz-http-%ld",
                     (long)getpid());
    addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    fuzz_check(bind(fd, (struct sockaddr *)&addr, addr_len) == 0, "bind");
    fuzz_check(listen(fd, 64) == 0, "listen");
    fuzz_check(zx_http_server_listen_fd(srv, fd) == 0, "zx_http_server_listen_fd");
}

/* Reads what the client socket holds.  Returns 1 at EOF or error. */
static int client_read(int fd, char *got, size_t *ngot)
{
    char tmp[16384];
    for (;;) {
        ssize_t k = recv(fd, tmp, sizeof(tmp), MSG_DONTWAIT);
        if (k == 0)
            return 1;
        if (k < 0)
            return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
        size_t room = REPLY_CAP - *ngot;
        size_t take = (size_t)k < room ? (size_t)k : room;
        memcpy(got + *ngot, tmp, take);
        *ngot += take;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t pieces[8] = {SIZE_MAX, 1, 2, 3, 7, 16, 100, 1000};
    static char *got;
    size_t ngot = 0;

    if (size < 2)
        return 0;
    if (!base)
        setup();
    if (!got)
        got = malloc(REPLY_CAP);
    fuzz_check(got != NULL, "out of memory");
    mode = data[0];
    size_t piece = pieces[data[1] & 7];
    const uint8_t *p = data + 2;
    size_t left = size - 2;

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    fuzz_check(fd >= 0, "client socket");
    fuzz_check(connect(fd, (struct sockaddr *)&addr, addr_len) == 0, "connect");

    /* write the stream in pieces, letting the server run in between */
    int stuck = 0;
    while (left > 0 && stuck < 1000) {
        size_t n = left < piece ? left : piece;
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            left -= (size_t)k;
            stuck = 0;
        } else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            break; /* the server closed: the rest is not read */
        } else {
            stuck++;
        }
        event_base_loop(base, EVLOOP_NONBLOCK);
        client_read(fd, got, &ngot);
    }
    /* let the server answer what it can before the client goes */
    for (int i = 0; i < 64 && (zx_http_server_pending(srv) > 0 || ndeferred > 0); i++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        client_read(fd, got, &ngot);
    }
    if (mode & 8) {
        close(fd);
        fd = -1;
    } else {
        shutdown(fd, SHUT_WR);
    }

    /* until the server has closed the connection and dropped every request */
    double deadline = now_s() + 10.0;
    int eof = fd < 0;
    struct timeval tick = {0, 20000};
    while (!eof || zx_http_server_connections(srv) > 0 || zx_http_server_pending(srv) > 0 ||
           ndeferred > 0) {
        if (now_s() > deadline) {
            fprintf(stderr, "connections %zu, pending %zu, deferred %zu, eof %d\n",
                    zx_http_server_connections(srv), zx_http_server_pending(srv),
                    ndeferred, eof);
            fuzz_check(0, "server never closed the connection");
        }
        /* no allocation per turn (event_base_loopexit would make one):
         * libFuzzer runs LeakSanitizer after every input whose mallocs and
         * frees do not balance, which would slow it 30 times */
        evtimer_add(tick_ev, &tick);
        event_base_loop(base, EVLOOP_ONCE);
        evtimer_del(tick_ev);
        if (!eof)
            eof = client_read(fd, got, &ngot);
    }
    if (fd >= 0)
        close(fd);

    if (ngot > 0) {
        fuzz_check(ngot >= 12 && memcmp(got, "HTTP/1.1 ", 9) == 0, "answer without a status line");
        fuzz_check(got[9] >= '1' && got[9] <= '5', "status class");
    }
    return 0;
}
