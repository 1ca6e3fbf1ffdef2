/* http.c - a small, strict HTTP/1.1 server on libevent bufferevents.
 *
 * See http.h for the contract and the order of checks.  This file holds the
 * listeners, the connections and their state machine, the header and body
 * deadlines, the list of untrusted connections (closed oldest first to make
 * room at max_connections) and the count of held body bytes; parsing,
 * replies and body reading live in http_parse.c, http_reply.c and
 * http_body.c (shared structs in http_int.h).  One connection holds at most one request at a
 * time (struct conn.req); pipelined bytes wait in the input buffer.  A
 * request whose client went away while the handler held it becomes an
 * orphan, listed in the server, and is freed by zx_http_reply.
 *
 * Must never: log header values or bodies, free a request the handler still
 * holds, call back into the handler for a request after its reply, or read
 * more than the configured limits into memory.
 */
#include "http_int.h"

#include "common/util.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

static void conn_process(struct conn *c);
static void conn_free(struct conn *c);
static void update_accepting(zx_http_server *s);

/* ---- small shared helpers --------------------------------------------- */

void zx_http_log_error(zx_http_server *s, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    s->stats.internal_errors++;
    if (!s->log)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    s->log(3, "%s", line);
}

uint64_t zx_http_default_max_held(uint64_t max_body_size)
{
    uint64_t four = max_body_size > UINT64_MAX / 4 ? UINT64_MAX : 4 * max_body_size;
    return four > ZX_HTTP_MIN_MAX_HELD ? four : ZX_HTTP_MIN_MAX_HELD;
}

int zx_http_held_set(zx_http_req *r, uint64_t bytes)
{
    zx_http_server *s = r->srv;
    uint64_t others = s->held - r->held;
    if (bytes > r->held && (bytes > s->lim.max_held_bytes ||
                            others > s->lim.max_held_bytes - bytes))
        return -1;
    if (r->unverified) {
        /* bodies whose sender is not proven yet: a quarter of the bytes,
         * so that they can never crowd out authenticated work */
        uint64_t lim = s->lim.max_held_bytes / ZX_HTTP_UNVERIFIED_SHARE;
        uint64_t uothers = s->held_unverified - r->held;
        if (bytes > r->held && (bytes > lim || uothers > lim - bytes))
            return -1;
        s->held_unverified = uothers + bytes;
    }
    s->held = others + bytes;
    r->held = bytes;
    return 0;
}

void zx_http_req_defer_trust(zx_http_req *r)
{
    if (!r->unverified) {
        r->unverified = 1;
        r->srv->held_unverified += r->held;
    }
}

/* ---- untrusted connections ------------------------------------------- */

static void untrusted_unlink(struct conn *c)
{
    zx_http_server *s = c->srv;
    if (c->trusted)
        return;
    if (c->uprev)
        c->uprev->unext = c->unext;
    else
        s->untrusted = c->unext;
    if (c->unext)
        c->unext->uprev = c->uprev;
    else
        s->untrusted_tail = c->uprev;
    c->uprev = c->unext = NULL;
    s->nuntrusted--;
}

/* head_cb let a request of c through: c is no longer a candidate to close. */
static void conn_trust(struct conn *c)
{
    if (c->trusted)
        return;
    untrusted_unlink(c);
    c->trusted = 1;
    update_accepting(c->srv); /* maybe nobody is left to make room */
}

void zx_http_req_trust(zx_http_req *r)
{
    if (!r->unverified)
        return;
    r->srv->held_unverified -= r->held;
    r->unverified = 0;
    if (r->conn)
        conn_trust(r->conn);
}

/* Closes the oldest untrusted connection.  1 if one was closed, else 0. */
static int evict_oldest(zx_http_server *s)
{
    struct conn *c = s->untrusted;
    if (!c)
        return 0;
    s->stats.evicted++;
    conn_free(c);
    return 1;
}

/* ---- peer address ---------------------------------------------------- */

static void format_peer(const struct sockaddr *sa, char *out, size_t outlen)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        snprintf(out, outlen, "%s:%u", ip, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        snprintf(out, outlen, "[%s]:%u", ip, ntohs(in6->sin6_port));
    } else {
        snprintf(out, outlen, "local");
    }
}

/* ---- accepting -------------------------------------------------------- */

static void update_accepting(zx_http_server *s)
{
    /* At the limit, a new client can still take an untrusted one's place. */
    int want = !s->stopped && !s->freeing && !s->backoff &&
               (s->nconns < s->lim.max_connections || s->nuntrusted > 0);
    if (want == s->accepting)
        return;
    for (size_t i = 0; i < s->nlev; i++) {
        if (want)
            evconnlistener_enable(s->lev[i]);
        else
            evconnlistener_disable(s->lev[i]);
    }
    s->accepting = want;
}

static void backoff_cb(evutil_socket_t fd, short what, void *arg)
{
    zx_http_server *s = arg;
    (void)fd;
    (void)what;
    s->backoff = 0;
    update_accepting(s);
}

static void accept_error_cb(struct evconnlistener *lev, void *arg)
{
    zx_http_server *s = arg;
    struct timeval tv = {1, 0};
    int err = EVUTIL_SOCKET_ERROR();
    (void)lev;
    /* Out of descriptors: an untrusted connection gives its own up, and
     * libevent retries the accept on the next loop. */
    if ((err == EMFILE || err == ENFILE) && evict_oldest(s))
        return;
    /* Out of descriptors or memory: libevent would retry at once, forever. */
    if (!s->backoff)
        zx_http_log_error(s, "event=http_accept_error error=\"%s\" connections=%zu "
                          "action=\"pause accepting for 1 s\"",
                          evutil_socket_error_to_string(err), s->nconns);
    s->backoff = 1;
    update_accepting(s);
    if (evtimer_add(s->backoff_ev, &tv) != 0) {
        zx_http_log_error(s, "event=http_timer_error what=accept_backoff");
        s->backoff = 0;
        update_accepting(s);
    }
}

static void conn_read_cb(struct bufferevent *bev, void *arg);
static void conn_write_cb(struct bufferevent *bev, void *arg);
static void conn_event_cb(struct bufferevent *bev, short what, void *arg);

static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_process(arg);
}

static void accept_cb(struct evconnlistener *lev, evutil_socket_t fd,
                      struct sockaddr *sa, int salen, void *arg)
{
    zx_http_server *s = arg;
    struct conn *c = NULL;
    size_t wm = s->lim.max_header_size + 1;
    int one = 1;
    const char *what = "memory";
    (void)lev;
    (void)salen;

    if (s->stopped || s->freeing)
        goto fail;
    if (s->nconns >= s->lim.max_connections && !evict_oldest(s))
        goto fail; /* every one is trusted: accepting stops (update_accepting) */
    c = calloc(1, sizeof(*c));
    if (!c)
        goto fail;
    c->srv = s;
    what = "bufferevent";
    c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!c->bev)
        goto fail;
    fd = -1; /* owned by the bufferevent now */
    what = "event";
    c->resume = event_new(s->base, -1, 0, resume_cb, c);
    if (!c->resume)
        goto fail;
    if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)
        setsockopt(bufferevent_getfd(c->bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    format_peer(sa, c->peer, sizeof(c->peer));
    bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
    /* Input held per connection stays under about this (see http.h). */
    if (wm < INPUT_MIN_WM)
        wm = INPUT_MIN_WM;
    if (wm < MAX_CHUNK_LINE + 2)
        wm = MAX_CHUNK_LINE + 2;
    bufferevent_setwatermark(c->bev, EV_READ, 0, wm);
    what = "bufferevent settings";
    c->head_start_ms = zx_mono_ms(); /* the first head's deadline runs */
    if (bufferevent_set_timeouts(c->bev, s->head_tv_shorter ? &s->head_tv : &s->idle_tv,
                                 &s->idle_tv) != 0 ||
        bufferevent_set_max_single_read(c->bev, MAX_SINGLE_READ) != 0 ||
        bufferevent_enable(c->bev, EV_READ) != 0)
        goto fail;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    c->uprev = s->untrusted_tail; /* newest untrusted: last to be closed */
    if (s->untrusted_tail)
        s->untrusted_tail->unext = c;
    else
        s->untrusted = c;
    s->untrusted_tail = c;
    s->nuntrusted++;
    update_accepting(s);
    return;
fail:
    if (c) {
        char peer[64];
        format_peer(sa, peer, sizeof(peer));
        zx_http_log_error(s, "event=http_accept_failed what=\"%s\" peer=%s "
                          "action=\"connection closed\"", what, peer);
        if (c->resume)
            event_free(c->resume);
        if (c->bev)
            bufferevent_free(c->bev);
        free(c);
    } else if (!s->stopped && !s->freeing && s->nconns < s->lim.max_connections) {
        zx_http_log_error(s, "event=http_nomem what=connection action=\"connection closed\"");
    }
    if (fd >= 0)
        evutil_closesocket(fd);
    update_accepting(s);
}

/* ---- server ----------------------------------------------------------- */

zx_http_server *zx_http_server_new(struct event_base *base, const zx_http_limits *lim,
                                   zx_http_head_cb head, zx_http_body_cb body, void *ctx)
{
    zx_http_server *s;
    struct sigaction sa;

    if (!base || !head || !body)
        return NULL;
    s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->base = base;
    if (lim)
        s->lim = *lim;
    if (!s->lim.max_body_size)
        s->lim.max_body_size = ZX_HTTP_DEFAULT_MAX_BODY;
    if (!s->lim.max_header_size)
        s->lim.max_header_size = ZX_HTTP_DEFAULT_MAX_HEADER;
    if (!s->lim.max_connections)
        s->lim.max_connections = ZX_HTTP_DEFAULT_MAX_CONNS;
    if (!s->lim.idle_timeout_ms)
        s->lim.idle_timeout_ms = ZX_HTTP_DEFAULT_IDLE_MS;
    if (!s->lim.max_held_bytes)
        s->lim.max_held_bytes = zx_http_default_max_held(s->lim.max_body_size);
    if (!s->lim.header_timeout_ms)
        s->lim.header_timeout_ms = ZX_HTTP_DEFAULT_HEADER_MS;
    if (!s->lim.body_timeout_ms)
        s->lim.body_timeout_ms = ZX_HTTP_DEFAULT_BODY_MS;
    if (!s->lim.body_min_rate)
        s->lim.body_min_rate = ZX_HTTP_DEFAULT_BODY_RATE;
    s->idle_tv.tv_sec = s->lim.idle_timeout_ms / 1000;
    s->idle_tv.tv_usec = (s->lim.idle_timeout_ms % 1000) * 1000;
    s->head_tv.tv_sec = s->lim.header_timeout_ms / 1000;
    s->head_tv.tv_usec = (s->lim.header_timeout_ms % 1000) * 1000;
    s->head_tv_shorter = s->lim.header_timeout_ms < s->lim.idle_timeout_ms;
    s->head = head;
    s->body = body;
    s->ctx = ctx;
    s->accepting = 1;
    s->backoff_ev = evtimer_new(base, backoff_cb, s);
    if (!s->backoff_ev) {
        free(s);
        errno = ENOMEM;
        return NULL;
    }
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
        signal(SIGPIPE, SIG_IGN);
    return s;
}

void zx_http_server_set_drop_cb(zx_http_server *s, zx_http_drop_cb drop)
{
    s->drop = drop;
}

void zx_http_server_set_logger(zx_http_server *s, zx_http_log_fn log)
{
    s->log = log;
}

static int add_listener(zx_http_server *s, int fd)
{
    struct evconnlistener *lev;
    if (s->nlev >= MAX_LISTENERS || s->stopped)
        return -1;
    lev = evconnlistener_new(s->base, accept_cb, s,
                             LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
    if (!lev) {
        zx_http_log_error(s, "event=http_listener_failed fd=%d", fd);
        return -2;
    }
    evconnlistener_set_error_cb(lev, accept_error_cb);
    if (!s->accepting)
        evconnlistener_disable(lev);
    s->lev[s->nlev++] = lev;
    return 0;
}

int zx_http_server_listen(zx_http_server *s, const char *host, uint16_t port,
                          char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL, *ai;
    char portstr[8], where[300];
    const char *why = "no usable address";
    int fd = -1, one = 1, rc, ret = -1;

    if (host && !*host)
        host = NULL;
    if (!host)
        snprintf(where, sizeof(where), "*:%u", port);
    else if (strchr(host, ':'))
        snprintf(where, sizeof(where), "[%.200s]:%u", host, port);
    else
        snprintf(where, sizeof(where), "%.200s:%u", host, port);
    snprintf(portstr, sizeof(portstr), "%u", port);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        why = gai_strerror(rc);
        goto done;
    }
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0) {
            why = strerror(errno);
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 511) == 0)
            break;
        why = strerror(errno);
        close(fd);
        fd = -1;
    }
    if (fd < 0)
        goto done;
    if ((rc = add_listener(s, fd)) != 0) {
        why = s->stopped ? "server is draining"
              : rc == -2 ? "libevent could not make a listener (out of memory?)"
                         : "too many listening sockets";
        close(fd);
        goto done;
    }
    ret = 0;
done:
    if (res)
        freeaddrinfo(res);
    if (ret != 0 && err && errlen)
        snprintf(err, errlen, "cannot listen on %s: %s", where, why);
    return ret;
}

int zx_http_server_listen_fd(zx_http_server *s, int fd)
{
    if (fd < 0 || evutil_make_socket_nonblocking(fd) != 0)
        return -1;
    return add_listener(s, fd) == 0 ? 0 : -1;
}

uint16_t zx_http_server_port(const zx_http_server *s)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (s->nlev == 0 ||
        getsockname(evconnlistener_get_fd(s->lev[0]), (struct sockaddr *)&ss, &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}

void zx_http_server_stop_accepting(zx_http_server *s)
{
    struct conn *c, *next;
    if (s->stopped)
        return;
    s->stopped = 1;
    for (size_t i = 0; i < s->nlev; i++)
        evconnlistener_free(s->lev[i]);
    s->nlev = 0;
    /* Idle keep-alive connections would only hold the drain up. */
    for (c = s->conns; c; c = next) {
        next = c->next;
        if (c->state == ST_HEAD && !c->in_process && !c->req &&
            evbuffer_get_length(bufferevent_get_input(c->bev)) == 0 &&
            evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
            conn_free(c);
    }
}

size_t zx_http_server_pending(const zx_http_server *s)
{
    return s->pending;
}

size_t zx_http_server_connections(const zx_http_server *s)
{
    return s->nconns;
}

uint64_t zx_http_server_held_bytes(const zx_http_server *s)
{
    return s->held;
}

void zx_http_server_stats_get(const zx_http_server *s, zx_http_stats *out)
{
    *out = s->stats;
    out->held_bytes = s->held;
}

void zx_http_server_free(zx_http_server *s)
{
    if (!s)
        return;
    s->freeing = 1;
    for (size_t i = 0; i < s->nlev; i++)
        evconnlistener_free(s->lev[i]);
    s->nlev = 0;
    while (s->conns)
        conn_free(s->conns);
    while (s->orphans) {
        zx_http_req *r = s->orphans;
        if (s->drop)
            s->drop(r, s->ctx);
        zx_http_req_free(r);
    }
    event_free(s->backoff_ev);
    free(s);
}

/* ---- requests --------------------------------------------------------- */

zx_http_req *zx_http_req_new(struct conn *c)
{
    zx_http_req *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->srv = c->srv;
    r->conn = c;
    r->method = r->path = r->query = "";
    memcpy(r->peer, c->peer, sizeof(r->peer));
    return r;
}

void zx_http_req_free(zx_http_req *r)
{
    zx_http_server *s = r->srv;
    if (r->counted)
        s->pending--;
    if (!r->conn) { /* an orphan */
        if (r->oprev)
            r->oprev->onext = r->onext;
        else if (s->orphans == r)
            s->orphans = r->onext;
        if (r->onext)
            r->onext->oprev = r->oprev;
    }
    for (size_t i = 0; i < r->ndecoded; i++)
        free(r->decoded[i]);
    free(r->decoded);
    zx_http_gz_free(r->gz);
    free(r->body.p);
    s->held -= r->held;
    if (r->unverified)
        s->held_unverified -= r->held;
    free(r->hdrs);
    free(r->head);
    free(r);
}

/* ---- request head ----------------------------------------------------- */

/* Looks for the empty line ending the head.  Returns 1 with *head_len (bytes
 * up to and including it), 0 if more input is needed, -1 if answered. */
static int head_scan(struct conn *c, size_t *head_len)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    uint64_t max = c->srv->lim.max_header_size;

    for (;;) {
        struct evbuffer_ptr p, e;
        size_t eol_len = 0, line_len;
        char first = 0;

        if (evbuffer_ptr_set(in, &p, c->scan_off, EVBUFFER_PTR_SET) != 0)
            return 0;
        e = evbuffer_search_eol(in, &p, &eol_len, EVBUFFER_EOL_LF);
        if (e.pos < 0) {
            if (evbuffer_get_length(in) + c->skipped > max)
                goto too_big;
            return 0;
        }
        if ((uint64_t)e.pos + 1 + c->skipped > max)
            goto too_big;
        line_len = (size_t)e.pos - c->scan_off;
        if (line_len == 1)
            evbuffer_copyout_from(in, &p, &first, 1);
        if (line_len == 0 || (line_len == 1 && first == '\r')) {
            if (c->scan_off == 0) { /* empty lines before a request: skip */
                evbuffer_drain(in, (size_t)e.pos + 1);
                c->skipped += (size_t)e.pos + 1;
                continue;
            }
            *head_len = (size_t)e.pos + 1;
            return 1;
        }
        c->scan_off = (size_t)e.pos + 1;
    }
too_big:
    zx_http_conn_fail(c, 431, "request line and headers are larger than the limit");
    return -1;
}

/* A complete head is in the input: parse it, ask head_cb, prepare the body. */
static void request_start(struct conn *c, size_t head_len)
{
    zx_http_server *s = c->srv;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    const char *why = NULL;
    zx_http_req *r = zx_http_req_new(c);
    int st, coding, expect;

    c->scan_off = 0;
    c->skipped = 0;
    c->head_start_ms = 0; /* the head is in: its deadline no longer runs */
    if (!r || !(r->head = malloc(head_len + 1))) {
        free(r);
        zx_http_log_error(s, "event=http_nomem what=request_head peer=%s", c->peer);
        zx_http_conn_fail(c, 500, "out of memory");
        return;
    }
    c->req = r;
    if (evbuffer_remove(in, r->head, head_len) != (int)head_len) {
        zx_http_log_error(s, "event=http_input_error what=request_head peer=%s", c->peer);
        zx_http_conn_fail(c, 500, "internal error reading the request");
        return;
    }
    r->head[head_len] = '\0';
    if ((st = zx_http_parse_head(r, head_len, &why)) != 0) {
        if (st == 500)
            zx_http_log_error(s, "event=http_nomem what=header_index peer=%s", c->peer);
        zx_http_conn_fail(c, st, why);
        return;
    }
    r->counted = 1;
    s->pending++;
    r->in_handler = 1;
    c->state = ST_WAIT; /* nothing is read while head_cb runs */
    s->head(r, s->ctx);
    if (c->req != r)
        return; /* answered (and freed) by head_cb */
    if (!r->unverified)
        conn_trust(c);

    coding = zx_http_content_coding(r);
    if (coding < 0) {
        zx_http_conn_fail(c, 415, "unsupported Content-Encoding (use one of gzip or identity)");
        return;
    }
    if (r->body_kind == BODY_LENGTH && r->content_length > s->lim.max_body_size) {
        zx_http_fail_too_big(c);
        return;
    }
    expect = zx_http_expect(r);
    if (expect < 0) {
        zx_http_conn_fail(c, 417, "unsupported Expect header (only 100-continue)");
        return;
    }
    if (r->body_kind == BODY_NONE) {
        zx_http_body_complete(c);
        return;
    }
    if (coding == 1 && !(r->gz = zx_http_gz_new(s->lim.max_body_size))) {
        zx_http_log_error(s, "event=http_nomem what=gzip_inflater peer=%s", c->peer);
        zx_http_conn_fail(c, 500, "out of memory");
        return;
    }
    if (zx_http_body_start(c) != 0)
        return; /* answered */
    if (expect && !r->http10 &&
        evbuffer_add(bufferevent_get_output(c->bev), "HTTP/1.1 100 Continue\r\n\r\n", 25) != 0) {
        zx_http_log_error(s, "event=http_nomem what=100_continue peer=%s", c->peer);
        zx_http_conn_fail(c, 500, "out of memory");
        return;
    }
    c->state = ST_BODY;
}

/* ---- connections ------------------------------------------------------ */

static void linger_start(struct conn *c)
{
    struct timeval tv = {LINGER_MS / 1000, (LINGER_MS % 1000) * 1000}, now;
    if (c->srv->lim.idle_timeout_ms < LINGER_MS) {
        tv.tv_sec = c->srv->lim.idle_timeout_ms / 1000;
        tv.tv_usec = (c->srv->lim.idle_timeout_ms % 1000) * 1000;
    }
    shutdown(bufferevent_getfd(c->bev), SHUT_WR);
    c->state = ST_LINGER;
    event_base_gettimeofday_cached(c->srv->base, &now);
    evutil_timeradd(&now, &tv, &c->linger_until);
    if (bufferevent_set_timeouts(c->bev, &tv, NULL) != 0 ||
        bufferevent_enable(c->bev, EV_READ) != 0) {
        conn_free(c); /* cannot linger: close now */
        return;
    }
    conn_process(c); /* may free c */
}

/* Sets c's read timeout to what is left of the header or body deadline (or
 * idle_timeout if shorter).  0, or -1 if the deadline has passed. */
static int arm_deadline(struct conn *c)
{
    zx_http_server *s = c->srv;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    int64_t deadline, left;
    struct timeval tv;

    if (c->state == ST_HEAD) {
        if (!c->head_start_ms) {
            if (evbuffer_get_length(in) == 0 && c->skipped == 0)
                return 0; /* idle between requests: idle_timeout */
            c->head_start_ms = zx_mono_ms(); /* first byte of a new head */
        }
        deadline = c->head_start_ms + (int64_t)s->lim.header_timeout_ms;
    } else if (c->state == ST_BODY) {
        deadline = zx_http_body_deadline(c);
    } else {
        return 0;
    }
    left = deadline - zx_mono_ms();
    if (left <= 0)
        return -1;
    if (left < (int64_t)s->lim.idle_timeout_ms) {
        tv.tv_sec = (time_t)(left / 1000);
        tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
        zx_http_set_read_timeout(c, &tv);
    } else {
        zx_http_set_read_timeout(c, &s->idle_tv);
    }
    return 0;
}

/* A deadline passed (or the read timeout fired) while c was reading a head
 * or a body: 408 if the client sent something of it, else just close.
 * May free c. */
static void deadline_passed(struct conn *c)
{
    zx_http_server *s = c->srv;
    int started = c->state == ST_BODY || c->scan_off > 0 || c->skipped > 0 ||
                  evbuffer_get_length(bufferevent_get_input(c->bev)) > 0;
    if (c->state == ST_BODY)
        s->stats.body_timeouts++;
    else if (c->head_start_ms)
        s->stats.header_timeouts++;
    if (!started) {
        conn_free(c);
        return;
    }
    zx_http_conn_fail(c, 408, c->state == ST_BODY
                                  ? "request body arrived too slowly"
                                  : "request line and headers took too long");
    c->linger = 0; /* no need to let a slow client read its answer */
}

/* Works through the input as far as the state allows.  May free c. */
static void conn_process(struct conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);

    if (c->in_process)
        return;
    c->in_process = 1;
    for (;;) {
        if (c->state == ST_HEAD) {
            size_t head_len;
            if (head_scan(c, &head_len) <= 0)
                break;
            request_start(c, head_len);
        } else if (c->state == ST_BODY) {
            int rc = zx_http_body_read(c);
            if (rc <= 0)
                break;
            zx_http_body_complete(c);
        } else if (c->state == ST_WAIT) {
            /* Keep reading to notice a client that goes away, but bound
             * what pipelined requests may pile up meanwhile. */
            if (evbuffer_get_length(in) > c->srv->lim.max_header_size)
                bufferevent_disable(c->bev, EV_READ);
            break;
        } else if (c->state == ST_STREAM) {
            /* a stream's client has nothing more to say: discard */
            evbuffer_drain(in, evbuffer_get_length(in));
            break;
        } else if (c->state == ST_LINGER) {
            struct timeval now;
            c->lingered += evbuffer_get_length(in);
            evbuffer_drain(in, evbuffer_get_length(in));
            event_base_gettimeofday_cached(c->srv->base, &now);
            if (c->lingered > LINGER_MAX_BYTES || evutil_timercmp(&now, &c->linger_until, >)) {
                conn_free(c);
                return;
            }
            break;
        } else { /* ST_CLOSING */
            if (!c->linger && evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
                conn_free(c); /* nothing to flush (a reply that failed) */
                return;
            }
            break;
        }
    }
    c->in_process = 0;
    if (arm_deadline(c) != 0)
        deadline_passed(c); /* may free c */
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    conn_process(arg);
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
    if (c->state == ST_STREAM) {
        if (c->stream && c->stream->drained)
            c->stream->drained(c->stream, c->stream->arg); /* may free c */
        return;
    }
    if (c->state != ST_CLOSING || evbuffer_get_length(bufferevent_get_output(bev)) > 0)
        return;
    if (c->linger)
        linger_start(c);
    else
        conn_free(c);
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct conn *c = arg;
    /* A client that half-closes right after its request still gets the
     * answer if it was already written. */
    if ((what & BEV_EVENT_EOF) && c->state == ST_HEAD && !c->req &&
        evbuffer_get_length(bufferevent_get_output(bev)) > 0) {
        c->state = ST_CLOSING;
        c->linger = 0;
        bufferevent_disable(bev, EV_READ);
        return;
    }
    if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_READING) &&
        (c->state == ST_BODY || (c->state == ST_HEAD && c->head_start_ms))) {
        deadline_passed(c); /* a deadline, or idle_timeout mid-request */
        return;
    }
    conn_free(c); /* EOF, error or timeout */
}

void zx_http_conn_close(struct conn *c)
{
    conn_free(c);
}

static void conn_free(struct conn *c)
{
    zx_http_server *s = c->srv;
    zx_http_req *r = c->req;

    if (c->stream) {
        zx_http_stream *st = c->stream;
        c->stream = NULL;
        st->closed(st, st->arg);
        free(st);
    }

    if (r) {
        c->req = NULL;
        if (c->state == ST_WAIT && r->body_done) {
            /* The handler holds it: keep it until zx_http_reply. */
            r->conn = NULL;
            r->closed = 1;
            r->oprev = NULL;
            r->onext = s->orphans;
            if (s->orphans)
                s->orphans->oprev = r;
            s->orphans = r;
        } else {
            if (r->in_handler && s->drop)
                s->drop(r, s->ctx);
            zx_http_req_free(r); /* r->conn still set: not an orphan */
        }
    }
    untrusted_unlink(c);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    event_free(c->resume);
    bufferevent_free(c->bev);
    free(c);
    update_accepting(s);
}
