/* http.c - a small, strict HTTP/1.1 server on libevent bufferevents.
 *
 * See http.h for the contract and the order of checks.  One connection holds
 * at most one request at a time (struct conn.req); pipelined bytes wait in
 * the input buffer.  A request whose client went away while the handler held
 * it becomes an orphan, listed in the server, and is freed by zx_http_reply.
 *
 * Must never: log header values or bodies, free a request the handler still
 * holds, call back into the handler for a request after its reply, or read
 * more than the configured limits into memory.
 */
#include "http.h"
#include "http_gzip.h"

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
#include <time.h>
#include <unistd.h>

#define MAX_LISTENERS    8
#define MAX_HEADERS      256
#define MAX_CHUNK_LINE   4096
#define MAX_SINGLE_READ  (256 * 1024)
#define LINGER_MS        2000
#define LINGER_MAX_BYTES (64u * 1024u * 1024u)

enum conn_state {
    ST_HEAD,    /* waiting for / reading a request head */
    ST_BODY,    /* reading the body of conn->req */
    ST_WAIT,    /* conn->req is with the handler */
    ST_CLOSING, /* reply written, close once it is flushed */
    ST_LINGER,  /* write side shut, discarding what the client still sends */
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
    enum chunk_state chunk;
    zx_http_gz *gz;
    struct evbuffer *body;
    const char *body_ptr;
    size_t body_len;
    char **decoded;          /* query values handed out */
    size_t ndecoded;
    void *data;
    char peer[64];
};

struct conn {
    zx_http_server *srv;
    struct conn *prev, *next;
    struct bufferevent *bev;
    struct event *resume;
    enum conn_state state;
    zx_http_req *req;
    size_t scan_off;   /* ST_HEAD: bytes scanned, no empty line yet */
    size_t skipped;    /* empty lines drained before the request line */
    int in_process;
    int linger;
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
    zx_http_req *orphans;
    size_t pending;
    struct timeval idle_tv;
    time_t date_t;
    char date[64];
};

static void conn_process(struct conn *c);
static void conn_free(struct conn *c);

/* ---- small helpers ---------------------------------------------------- */

static int is_tchar(unsigned char ch)
{
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
        return 1;
    return ch != 0 && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static int is_token(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!is_tchar((unsigned char)s[i]))
            return 0;
    return 1;
}

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

const char *zx_http_reason(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
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

static void req_free(zx_http_req *r);

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
        req_free(r);
    }
    event_free(s->backoff_ev);
    free(s);
}

/* ---- requests --------------------------------------------------------- */

static zx_http_req *req_new(struct conn *c)
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

static void req_free(zx_http_req *r)
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

const char *zx_http_method(const zx_http_req *r) { return r->method; }
const char *zx_http_path(const zx_http_req *r) { return r->path; }
const char *zx_http_query(const zx_http_req *r) { return r->query; }
const char *zx_http_peer(const zx_http_req *r) { return r->peer; }
int zx_http_is_http10(const zx_http_req *r) { return r->http10; }
void zx_http_req_set_data(zx_http_req *r, void *p) { r->data = p; }
void *zx_http_req_get_data(const zx_http_req *r) { return r->data; }
int zx_http_req_is_closed(const zx_http_req *r) { return r->closed; }

uint64_t zx_http_content_length(const zx_http_req *r)
{
    if (r->body_kind == BODY_CHUNKED)
        return UINT64_MAX;
    return r->body_kind == BODY_LENGTH ? r->content_length : 0;
}

const char *zx_http_body(const zx_http_req *r, size_t *len)
{
    if (len)
        *len = r->body_ptr ? r->body_len : 0;
    return r->body_ptr ? r->body_ptr : "";
}

const char *zx_http_header(const zx_http_req *r, const char *name)
{
    for (size_t i = 0; i < r->nhdrs; i++)
        if (strcasecmp(r->hdrs[i].name, name) == 0)
            return r->hdrs[i].value;
    return NULL;
}

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Decodes n bytes of s into a new string (caller frees), NULL if no memory. */
static char *pct_decode(const char *s, size_t n)
{
    char *out = malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '+') {
            *o++ = ' ';
        } else if (s[i] == '%' && i + 2 < n &&
                   (hi = hexval((unsigned char)s[i + 1])) >= 0 &&
                   (lo = hexval((unsigned char)s[i + 2])) >= 0 && (hi | lo) != 0) {
            *o++ = (char)(hi * 16 + lo);
            i += 2;
        } else {
            *o++ = s[i];
        }
    }
    *o = '\0';
    return out;
}

const char *zx_http_query_param(const zx_http_req *r, const char *name)
{
    zx_http_req *w = (zx_http_req *)r; /* decoded values are cached on r */
    const char *p = r->query;

    while (*p) {
        size_t n = strcspn(p, "&");
        const char *eq = memchr(p, '=', n);
        size_t klen = eq ? (size_t)(eq - p) : n;
        char *key = pct_decode(p, klen);
        int match = key && strcmp(key, name) == 0;
        free(key);
        if (match) {
            char **grown = realloc(w->decoded, (w->ndecoded + 1) * sizeof(char *));
            char *val;
            if (!grown)
                return NULL;
            w->decoded = grown;
            val = eq ? pct_decode(eq + 1, n - klen - 1) : pct_decode("", 0);
            if (!val)
                return NULL;
            w->decoded[w->ndecoded++] = val;
            return val;
        }
        p += n;
        if (*p == '&')
            p++;
    }
    return NULL;
}

/* ---- responses -------------------------------------------------------- */

static const char *http_date(zx_http_server *s)
{
    time_t now = time(NULL);
    if (now != s->date_t) {
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(s->date, sizeof(s->date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
        s->date_t = now;
    }
    return s->date;
}

static void set_read_timeout(struct conn *c, const struct timeval *rd)
{
    bufferevent_set_timeouts(c->bev, rd, &c->srv->idle_tv);
}

void zx_http_reply(zx_http_req *r, int status, const char *content_type,
                   const char *extra_headers, const char *body, size_t len)
{
    struct conn *c;
    zx_http_server *s;

    if (!r)
        return;
    c = r->conn;
    s = r->srv;
    if (c) {
        struct evbuffer *out = bufferevent_get_output(c->bev);
        int keep = r->keep_alive && r->body_done && !s->stopped;
        int no_len = status == 204 || status == 304;
        if (status < 200 || status > 599)
            status = 500;
        evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nServer: zx\r\nDate: %s\r\n", status,
                            zx_http_reason(status), http_date(s));
        if (!no_len)
            evbuffer_add_printf(out, "Content-Length: %zu\r\n", body ? len : 0);
        if (content_type)
            evbuffer_add_printf(out, "Content-Type: %s\r\n", content_type);
        if (!keep)
            evbuffer_add(out, "Connection: close\r\n", 19);
        else if (r->http10)
            evbuffer_add(out, "Connection: keep-alive\r\n", 24);
        if (extra_headers && *extra_headers) {
            size_t n = strlen(extra_headers);
            evbuffer_add(out, extra_headers, n);
            if (extra_headers[n - 1] != '\n')
                evbuffer_add(out, "\r\n", 2);
        }
        evbuffer_add(out, "\r\n", 2);
        if (body && len && !no_len && !r->head_method)
            evbuffer_add(out, body, len);
        c->req = NULL;
        if (keep) {
            c->state = ST_HEAD;
            set_read_timeout(c, &s->idle_tv);
            bufferevent_enable(c->bev, EV_READ);
            if (!c->in_process)
                event_active(c->resume, EV_TIMEOUT, 0);
        } else {
            c->state = ST_CLOSING;
            c->linger = !r->body_done ||
                        evbuffer_get_length(bufferevent_get_input(c->bev)) > 0;
            bufferevent_disable(c->bev, EV_READ);
        }
    }
    req_free(r);
}

/* Appends s as JSON string content (no quotes); invalid UTF-8 -> U+FFFD. */
static void json_escape(struct evbuffer *out, const unsigned char *s)
{
    while (*s) {
        unsigned char ch = *s;
        size_t need = 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (ch == '"' || ch == '\\') {
            evbuffer_add_printf(out, "\\%c", ch);
            s++;
            continue;
        }
        if (ch < 0x20) {
            evbuffer_add_printf(out, "\\u%04x", ch);
            s++;
            continue;
        }
        if (ch < 0x80) {
            evbuffer_add(out, s, 1);
            s++;
            continue;
        }
        if (ch >= 0xC2 && ch <= 0xDF)
            need = 1;
        else if (ch >= 0xE0 && ch <= 0xEF)
            need = 2, lo = ch == 0xE0 ? 0xA0 : 0x80, hi = ch == 0xED ? 0x9F : 0xBF;
        else if (ch >= 0xF0 && ch <= 0xF4)
            need = 3, lo = ch == 0xF0 ? 0x90 : 0x80, hi = ch == 0xF4 ? 0x8F : 0xBF;
        size_t i = 1;
        if (need) {
            for (; i <= need; i++) {
                unsigned char b = s[i];
                if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF))
                    break;
            }
        }
        if (need && i == need + 1) {
            evbuffer_add(out, s, need + 1);
            s += need + 1;
        } else {
            evbuffer_add(out, "\\ufffd", 6);
            s++;
        }
    }
}

void zx_http_reply_json_error(zx_http_req *r, int status, const char *extra_headers,
                              const char *fmt, ...)
{
    struct evbuffer *b;
    char *msg = NULL;
    va_list ap;
    size_t len;

    if (!r)
        return;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    b = evbuffer_new();
    if (!b) {
        free(msg);
        zx_http_reply(r, 500, "application/json", extra_headers,
                      "{\"error\": \"out of memory\", \"status\": 500}", 41);
        return;
    }
    if (status < 200 || status > 599)
        status = 500;
    evbuffer_add(b, "{\"error\": \"", 11);
    json_escape(b, (const unsigned char *)(msg ? msg : "out of memory"));
    evbuffer_add_printf(b, "\", \"status\": %d}", status);
    len = evbuffer_get_length(b);
    zx_http_reply(r, status, "application/json", extra_headers,
                  (const char *)evbuffer_pullup(b, -1), len);
    evbuffer_free(b);
    free(msg);
}

/* The server answers an error itself and closes the connection. */
static void conn_fail(struct conn *c, int status, const char *msg)
{
    zx_http_req *r = c->req;
    if (!r) {
        r = req_new(c);
        if (!r) {
            static const char oom[] = "HTTP/1.1 500 Internal Server Error\r\n"
                                      "Content-Type: application/json\r\n"
                                      "Content-Length: 41\r\nConnection: close\r\n\r\n"
                                      "{\"error\": \"out of memory\", \"status\": 500}";
            evbuffer_add(bufferevent_get_output(c->bev), oom, sizeof(oom) - 1);
            c->state = ST_CLOSING;
            c->linger = 0;
            bufferevent_disable(c->bev, EV_READ);
            return;
        }
        c->req = r;
    }
    if (r->in_handler && c->srv->drop)
        c->srv->drop(r, c->srv->ctx);
    r->in_handler = 0;
    r->keep_alive = 0;
    r->body_done = 0; /* never reuse the connection after a server error */
    zx_http_reply_json_error(r, status, NULL, "%s", msg);
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
    conn_fail(c, 431, "request line and headers are larger than the limit");
    return -1;
}

static int version_ok(const char *v, size_t n, int *http10, const char **why)
{
    if (n != 8 || memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' ||
        v[6] != '.' || v[7] < '0' || v[7] > '9') {
        *why = "malformed request line";
        return 400;
    }
    if (v[5] != '1') {
        *why = "only HTTP/1.0 and HTTP/1.1 are supported";
        return 505;
    }
    *http10 = v[7] == '0';
    return 0;
}

/* Splits the request line (NUL-terminated pieces in place). */
static int parse_request_line(zx_http_req *r, char *line, size_t n, const char **why)
{
    char *sp1 = memchr(line, ' ', n), *sp2, *target, *q;
    size_t tlen;
    int st;

    *why = "malformed request line";
    if (!sp1 || !is_token(line, (size_t)(sp1 - line)))
        return 400;
    target = sp1 + 1;
    sp2 = memchr(target, ' ', n - (size_t)(target - line));
    if (!sp2 || sp2 == target)
        return 400;
    tlen = (size_t)(sp2 - target);
    if ((st = version_ok(sp2 + 1, n - (size_t)(sp2 + 1 - line), &r->http10, why)) != 0)
        return st;
    for (size_t i = 0; i < tlen; i++) {
        unsigned char ch = (unsigned char)target[i];
        if (ch <= 0x20 || ch >= 0x7f || ch == '#') {
            *why = "invalid character in request target";
            return 400;
        }
    }
    *sp1 = '\0';
    *sp2 = '\0';
    r->method = line;
    r->head_method = strcmp(line, "HEAD") == 0;
    if (strncasecmp(target, "http://", 7) == 0 || strncasecmp(target, "https://", 8) == 0) {
        char *slash = strchr(strchr(target, ':') + 3, '/');
        q = strchr(target, '?');
        if (!slash || (q && q < slash)) { /* "http://host" or "http://host?x" */
            r->path = "/";
            r->query = q ? q + 1 : "";
            return 0;
        }
        target = slash;
    } else if (strcmp(target, "*") == 0) {
        if (strcmp(r->method, "OPTIONS") != 0)
            return 400;
    } else if (target[0] != '/') {
        *why = "request target must start with /";
        return 400;
    }
    r->path = target;
    q = strchr(target, '?');
    if (q) {
        *q = '\0';
        r->query = q + 1;
    }
    return 0;
}

static int has_token(const char *list, const char *tok)
{
    size_t tl = strlen(tok);
    while (*list) {
        size_t n;
        list += strspn(list, " \t,");
        n = strcspn(list, ",");
        size_t m = n;
        while (m > 0 && (list[m - 1] == ' ' || list[m - 1] == '\t'))
            m--;
        if (m == tl && strncasecmp(list, tok, tl) == 0)
            return 1;
        list += n;
    }
    return 0;
}

/* Parses r->head (len bytes + NUL).  Returns 0 or an HTTP status with *why. */
static int parse_head(zx_http_req *r, size_t len, const char **why)
{
    char *p = r->head, *end = r->head + len;
    size_t cap = 0, nhost = 0, ncl = 0, nte = 0;
    int close = 0, keep = 0, st;
    const char *te = NULL;

    for (char *q = p; q < end; q++)
        cap += *q == '\n';
    r->hdrs = calloc(cap ? cap : 1, sizeof(*r->hdrs));
    if (!r->hdrs) {
        *why = "out of memory";
        return 500;
    }
    for (int first = 1;; first = 0) {
        char *nl = memchr(p, '\n', (size_t)(end - p)), *colon, *v, *ve;
        size_t n;
        if (!nl) { /* cannot happen: the head ends with an empty line */
            *why = "malformed request";
            return 400;
        }
        n = (size_t)(nl - p);
        if (n > 0 && p[n - 1] == '\r')
            n--;
        p[n] = '\0';
        if (first) {
            if ((st = parse_request_line(r, p, n, why)) != 0)
                return st;
            p = nl + 1;
            continue;
        }
        if (n == 0)
            break;
        if (p[0] == ' ' || p[0] == '\t') {
            *why = "obsolete header line folding is not supported";
            return 400;
        }
        colon = memchr(p, ':', n);
        if (!colon || !is_token(p, (size_t)(colon - p))) {
            *why = "malformed header line";
            return 400;
        }
        *colon = '\0';
        v = colon + 1;
        ve = p + n;
        while (v < ve && (*v == ' ' || *v == '\t'))
            v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        for (char *x = v; x < ve; x++) {
            unsigned char ch = (unsigned char)*x;
            if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
                *why = "invalid character in a header value";
                return 400;
            }
        }
        *ve = '\0';
        if (r->nhdrs >= MAX_HEADERS) {
            *why = "too many header fields";
            return 431;
        }
        r->hdrs[r->nhdrs].name = p;
        r->hdrs[r->nhdrs].value = v;
        r->nhdrs++;
        if (strcasecmp(p, "Host") == 0) {
            nhost++;
        } else if (strcasecmp(p, "Content-Length") == 0) {
            uint64_t cl = 0;
            ncl++;
            if (*v == '\0' || strspn(v, "0123456789") != strlen(v)) {
                *why = "invalid Content-Length";
                return 400;
            }
            for (const char *d = v; *d; d++) {
                if (cl > (UINT64_MAX - 2) / 10) {
                    cl = UINT64_MAX - 1; /* far above any limit */
                    break;
                }
                cl = cl * 10 + (uint64_t)(*d - '0');
            }
            r->content_length = cl;
        } else if (strcasecmp(p, "Transfer-Encoding") == 0) {
            nte++;
            te = v;
        } else if (strcasecmp(p, "Connection") == 0) {
            close |= has_token(v, "close");
            keep |= has_token(v, "keep-alive");
        }
        p = nl + 1;
    }
    if (!r->http10 && nhost != 1) {
        *why = nhost ? "more than one Host header" : "missing Host header";
        return 400;
    }
    if (ncl > 1) {
        *why = "more than one Content-Length header";
        return 400;
    }
    if (nte) {
        if (ncl || r->http10) {
            *why = ncl ? "both Content-Length and Transfer-Encoding"
                       : "Transfer-Encoding in an HTTP/1.0 request";
            return 400;
        }
        if (nte > 1 || strcasecmp(te, "chunked") != 0) {
            *why = "only Transfer-Encoding: chunked is supported";
            return 501;
        }
        r->body_kind = BODY_CHUNKED;
    } else if (ncl && r->content_length > 0) {
        r->body_kind = BODY_LENGTH;
        r->remaining = r->content_length;
    }
    r->keep_alive = r->http10 ? (keep && !close) : !close;
    r->body_done = r->body_kind == BODY_NONE;
    return 0;
}

/* ---- body ------------------------------------------------------------- */

static void fail_too_big(struct conn *c)
{
    char msg[96];
    snprintf(msg, sizeof(msg), "request body is larger than the limit of %llu bytes",
             (unsigned long long)c->srv->lim.max_body_size);
    conn_fail(c, 413, msg);
}

/* Moves n body bytes from the input into the body (inflating).  0 or -1. */
static int body_feed(struct conn *c, size_t n)
{
    zx_http_req *r = c->req;
    struct evbuffer *in = bufferevent_get_input(c->bev);

    r->raw_total += n;
    if (!r->gz) {
        while (n > 0) {
            size_t k = n > (1u << 30) ? (1u << 30) : n;
            if (evbuffer_remove_buffer(in, r->body, k) != (int)k)
                goto nomem;
            n -= k;
        }
        return 0;
    }
    while (n > 0) {
        struct evbuffer_iovec v[8];
        int cnt = evbuffer_peek(in, (ev_ssize_t)n, NULL, v, 8);
        size_t used = 0;
        if (cnt > 8)
            cnt = 8;
        for (int i = 0; i < cnt && used < n; i++) {
            size_t k = v[i].iov_len < n - used ? v[i].iov_len : n - used;
            switch (zx_http_gz_feed(r->gz, v[i].iov_base, k, r->body)) {
            case ZX_HTTP_GZ_OK:
                break;
            case ZX_HTTP_GZ_TOO_BIG:
                fail_too_big(c);
                return -1;
            case ZX_HTTP_GZ_CORRUPT:
                conn_fail(c, 400, "body is not valid gzip");
                return -1;
            default:
                goto nomem;
            }
            used += k;
        }
        if (used == 0)
            goto nomem;
        evbuffer_drain(in, used);
        n -= used;
    }
    return 0;
nomem:
    conn_fail(c, 500, "out of memory");
    return -1;
}

/* Reads one line (for chunked framing) into buf (cap + 2 bytes); 1 read, 0
 * need more, -1 answered. *len excludes the line end; lines longer than cap
 * fail with status fail_st. */
static int read_line(struct conn *c, char *buf, size_t cap, size_t *len, int fail_st)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    size_t eol_len = 0;
    struct evbuffer_ptr e = evbuffer_search_eol(in, NULL, &eol_len, EVBUFFER_EOL_LF);
    if (e.pos < 0) {
        if (evbuffer_get_length(in) > cap)
            goto too_long;
        return 0;
    }
    if ((size_t)e.pos > cap + 1) /* + 1: the CR of a CRLF */
        goto too_long;
    evbuffer_remove(in, buf, (size_t)e.pos);
    evbuffer_drain(in, 1);
    *len = (size_t)e.pos;
    if (*len > 0 && buf[*len - 1] == '\r')
        (*len)--;
    if (*len > cap)
        goto too_long;
    buf[*len] = '\0';
    return 1;
too_long:
    conn_fail(c, fail_st, fail_st == 431 ? "chunked trailers are larger than the limit"
                                         : "malformed chunked body");
    return -1;
}

/* Chunked framing.  1 body complete, 0 need more, -1 answered. */
static int body_chunked(struct conn *c)
{
    zx_http_req *r = c->req;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    char line[MAX_CHUNK_LINE + 2];
    size_t len;
    int rc;

    for (;;) {
        switch (r->chunk) {
        case CH_SIZE: {
            uint64_t size = 0;
            size_t i = 0;
            if ((rc = read_line(c, line, MAX_CHUNK_LINE, &len, 400)) <= 0)
                return rc;
            for (; i < len && hexval((unsigned char)line[i]) >= 0; i++) {
                if (size >> 60) {
                    fail_too_big(c);
                    return -1;
                }
                size = size * 16 + (uint64_t)hexval((unsigned char)line[i]);
            }
            if (i == 0)
                goto bad;
            while (i < len && (line[i] == ' ' || line[i] == '\t'))
                i++;
            if (i < len && line[i] != ';')
                goto bad;
            for (; i < len; i++)
                if (((unsigned char)line[i] < 0x20 && line[i] != '\t') || line[i] == 0x7f)
                    goto bad;
            if (size == 0) {
                r->chunk = CH_TRAILER;
                break;
            }
            if (size > c->srv->lim.max_body_size - r->raw_total) {
                fail_too_big(c);
                return -1;
            }
            r->remaining = size;
            r->chunk = CH_DATA;
            break;
        }
        case CH_DATA: {
            size_t avail = evbuffer_get_length(in);
            size_t n = avail < r->remaining ? avail : (size_t)r->remaining;
            if (n == 0)
                return 0;
            if (body_feed(c, n) < 0)
                return -1;
            r->remaining -= n;
            if (r->remaining == 0)
                r->chunk = CH_DATA_END;
            break;
        }
        case CH_DATA_END: {
            unsigned char two[2];
            size_t avail = evbuffer_get_length(in);
            if (avail == 0)
                return 0;
            evbuffer_copyout(in, two, avail >= 2 ? 2 : 1);
            if (two[0] == '\n') {
                evbuffer_drain(in, 1);
            } else if (two[0] == '\r') {
                if (avail < 2)
                    return 0;
                if (two[1] != '\n')
                    goto bad;
                evbuffer_drain(in, 2);
            } else {
                goto bad;
            }
            r->chunk = CH_SIZE;
            break;
        }
        case CH_TRAILER: {
            uint64_t left = c->srv->lim.max_header_size > r->trailer_bytes
                                ? c->srv->lim.max_header_size - r->trailer_bytes : 0;
            size_t cap = left < MAX_CHUNK_LINE ? (size_t)left : MAX_CHUNK_LINE;
            if ((rc = read_line(c, line, cap, &len, 431)) <= 0)
                return rc;
            if (len == 0)
                return 1;
            r->trailer_bytes += len + 1; /* trailers are ignored */
            break;
        }
        }
    }
bad:
    conn_fail(c, 400, "malformed chunked body");
    return -1;
}

/* 1 body complete, 0 need more, -1 answered. */
static int body_read(struct conn *c)
{
    zx_http_req *r = c->req;
    if (r->body_kind == BODY_CHUNKED)
        return body_chunked(c);
    if (r->body_kind == BODY_LENGTH) {
        size_t avail = evbuffer_get_length(bufferevent_get_input(c->bev));
        size_t n = avail < r->remaining ? avail : (size_t)r->remaining;
        if (n && body_feed(c, n) < 0)
            return -1;
        r->remaining -= n;
        return r->remaining == 0;
    }
    return 1;
}

/* Hands the complete request to body_cb. */
static void body_complete(struct conn *c)
{
    zx_http_req *r = c->req;
    size_t len;

    if (r->gz) {
        if (zx_http_gz_finish(r->gz) != ZX_HTTP_GZ_OK) {
            conn_fail(c, 400, "body is not valid gzip");
            return;
        }
        zx_http_gz_free(r->gz);
        r->gz = NULL;
    }
    len = r->body ? evbuffer_get_length(r->body) : 0;
    if (len) {
        r->body_ptr = (const char *)evbuffer_pullup(r->body, -1);
        if (!r->body_ptr) {
            conn_fail(c, 500, "out of memory");
            return;
        }
        r->body_len = len;
    }
    r->body_done = 1;
    c->state = ST_WAIT;
    set_read_timeout(c, NULL); /* no timeout while the handler works */
    c->srv->body(r, c->srv->ctx);
}

/* A complete head is in the input: parse it, ask head_cb, prepare the body. */
static void request_start(struct conn *c, size_t head_len)
{
    zx_http_server *s = c->srv;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    const char *why = NULL, *ce, *expect;
    zx_http_req *r = req_new(c);
    int st;

    c->scan_off = 0;
    c->skipped = 0;
    if (!r || !(r->head = malloc(head_len + 1))) {
        free(r);
        conn_fail(c, 500, "out of memory");
        return;
    }
    c->req = r;
    evbuffer_remove(in, r->head, head_len);
    r->head[head_len] = '\0';
    if ((st = parse_head(r, head_len, &why)) != 0) {
        conn_fail(c, st, why);
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
        conn_fail(c, 415, "unsupported Content-Encoding (use gzip or identity)");
        return;
    }
    if (r->body_kind == BODY_LENGTH && r->content_length > s->lim.max_body_size) {
        fail_too_big(c);
        return;
    }
    expect = zx_http_header(r, "Expect");
    if (expect && strcasecmp(expect, "100-continue") != 0) {
        conn_fail(c, 417, "unsupported Expect header (only 100-continue)");
        return;
    }
    if (r->body_kind == BODY_NONE) {
        body_complete(c);
        return;
    }
    if (expect && !r->http10)
        evbuffer_add(bufferevent_get_output(c->bev), "HTTP/1.1 100 Continue\r\n\r\n", 25);
    r->body = evbuffer_new();
    if (!r->body || (ce && strcasecmp(ce, "identity") != 0 &&
                     !(r->gz = zx_http_gz_new(s->lim.max_body_size)))) {
        conn_fail(c, 500, "out of memory");
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
            int rc = body_read(c);
            if (rc <= 0)
                break;
            body_complete(c);
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
            req_free(r); /* r->conn still set: not an orphan */
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
