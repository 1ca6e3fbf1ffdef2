/* http.c - a small, strict HTTP/1.1 server on libevent bufferevents.
 *
 * See http.h for the contract and the order of checks.  This file holds the
 * listeners, the connections and their state machine; parsing, replies and
 * body reading live in http_parse.c, http_reply.c and http_body.c (shared
 * structs in http_int.h).  One connection holds at most one request at a
 * time (struct conn.req); pipelined bytes wait in the input buffer.  A
 * request whose client went away while the handler held it becomes an
 * orphan, listed in the server, and is freed by zx_http_reply.
 *
 * Must never: log header values or bodies, free a request the handler still
 * holds, call back into the handler for a request after its reply, or read
 * more than the configured limits into memory.
 */
#include "http_int.h"

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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

static void conn_process(struct conn *c);
static void conn_free(struct conn *c);

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
    int want = !s->stopped && !s->freeing && !s->backoff &&
               s->nconns < s->lim.max_connections;
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
    (void)lev;
    /* Out of descriptors or memory: libevent would retry at once, forever. */
    s->backoff = 1;
    update_accepting(s);
    evtimer_add(s->backoff_ev, &tv);
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
    int one = 1;
    (void)lev;
    (void)salen;

    if (s->stopped || s->freeing)
        goto fail;
    c = calloc(1, sizeof(*c));
    if (!c)
        goto fail;
    c->srv = s;
    c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!c->bev)
        goto fail;
    fd = -1; /* owned by the bufferevent now */
    c->resume = event_new(s->base, -1, 0, resume_cb, c);
    if (!c->resume)
        goto fail;
    if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)
        setsockopt(bufferevent_getfd(c->bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    format_peer(sa, c->peer, sizeof(c->peer));
    bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
    bufferevent_set_timeouts(c->bev, &s->idle_tv, &s->idle_tv);
    bufferevent_set_max_single_read(c->bev, MAX_SINGLE_READ);
    if (bufferevent_enable(c->bev, EV_READ) != 0)
        goto fail;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    update_accepting(s);
    return;
fail:
    if (c) {
        if (c->resume)
            event_free(c->resume);
        if (c->bev)
            bufferevent_free(c->bev);
        free(c);
    }
    if (fd >= 0)
        evutil_closesocket(fd);
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
    s->idle_tv.tv_sec = s->lim.idle_timeout_ms / 1000;
    s->idle_tv.tv_usec = (s->lim.idle_timeout_ms % 1000) * 1000;
    s->head = head;
    s->body = body;
    s->ctx = ctx;
    s->accepting = 1;
    s->backoff_ev = evtimer_new(base, backoff_cb, s);
    if (!s->backoff_ev) {
        free(s);
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

static int add_listener(zx_http_server *s, int fd)
{
    struct evconnlistener *lev;
    if (s->nlev >= MAX_LISTENERS || s->stopped)
        return -1;
    lev = evconnlistener_new(s->base, accept_cb, s,
                             LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
    if (!lev)
        return -1;
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
    if (add_listener(s, fd) != 0) {
        why = s->stopped ? "server is draining" : "too many listening sockets";
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
    return add_listener(s, fd);
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
    if (r->body)
        evbuffer_free(r->body);
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
    const char *why = NULL, *ce, *expect;
    zx_http_req *r = zx_http_req_new(c);
    int st;

    c->scan_off = 0;
    c->skipped = 0;
    if (!r || !(r->head = malloc(head_len + 1))) {
        free(r);
        zx_http_conn_fail(c, 500, "out of memory");
        return;
    }
    c->req = r;
    evbuffer_remove(in, r->head, head_len);
    r->head[head_len] = '\0';
    if ((st = zx_http_parse_head(r, head_len, &why)) != 0) {
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

    ce = zx_http_header(r, "Content-Encoding");
    if (ce && strcasecmp(ce, "gzip") != 0 && strcasecmp(ce, "x-gzip") != 0 &&
        strcasecmp(ce, "identity") != 0) {
        zx_http_conn_fail(c, 415, "unsupported Content-Encoding (use gzip or identity)");
        return;
    }
    if (r->body_kind == BODY_LENGTH && r->content_length > s->lim.max_body_size) {
        zx_http_fail_too_big(c);
        return;
    }
    expect = zx_http_header(r, "Expect");
    if (expect && strcasecmp(expect, "100-continue") != 0) {
        zx_http_conn_fail(c, 417, "unsupported Expect header (only 100-continue)");
        return;
    }
    if (r->body_kind == BODY_NONE) {
        zx_http_body_complete(c);
        return;
    }
    if (expect && !r->http10)
        evbuffer_add(bufferevent_get_output(c->bev), "HTTP/1.1 100 Continue\r\n\r\n", 25);
    r->body = evbuffer_new();
    if (!r->body || (ce && strcasecmp(ce, "identity") != 0 &&
                     !(r->gz = zx_http_gz_new(s->lim.max_body_size)))) {
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
    bufferevent_set_timeouts(c->bev, &tv, NULL);
    bufferevent_enable(c->bev, EV_READ);
    conn_process(c); /* may free c */
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
        } else {
            break; /* ST_CLOSING */
        }
    }
    c->in_process = 0;
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    conn_process(arg);
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
    struct conn *c = arg;
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
    conn_free(c); /* EOF, error or timeout */
}

static void conn_free(struct conn *c)
{
    zx_http_server *s = c->srv;
    zx_http_req *r = c->req;

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
