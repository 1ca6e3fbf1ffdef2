/* http_reply.c - writing HTTP responses: status line, headers, JSON errors.
 *
 * zx_http_reply writes the answer into the connection's output and decides
 * whether the connection stays open; zx_http_reply_json_error builds the
 * {"error": ..., "status": N} body with its own JSON string escaping; the
 * server's own error answers (zx_http_conn_fail) go through the same path.
 *
 * Must never: write a header value or body to the log, send a status outside
 * 200..599, touch a request after freeing it, or send a truncated response
 * (if the output buffer cannot take it all, the connection is closed and
 * the failure logged).
 */
#include "http_int.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

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

void zx_http_set_read_timeout(struct conn *c, const struct timeval *rd)
{
    bufferevent_set_timeouts(c->bev, rd, &c->srv->idle_tv);
}

/* Writes the status line, headers and body into out.  0, or -1 if out of
 * memory (out may then hold part of it). */
static int write_response(struct evbuffer *out, zx_http_req *r, zx_http_server *s, int status,
                          int keep, const char *content_type, const char *extra_headers,
                          const char *body, size_t len)
{
    int no_len = status == 204 || status == 304;
    if (evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nServer: zx\r\nDate: %s\r\n", status,
                            zx_http_reason(status), http_date(s)) < 0)
        return -1;
    if (!no_len && evbuffer_add_printf(out, "Content-Length: %zu\r\n", body ? len : 0) < 0)
        return -1;
    if (content_type && evbuffer_add_printf(out, "Content-Type: %s\r\n", content_type) < 0)
        return -1;
    if (!keep && evbuffer_add(out, "Connection: close\r\n", 19) != 0)
        return -1;
    if (keep && r->http10 && evbuffer_add(out, "Connection: keep-alive\r\n", 24) != 0)
        return -1;
    if (extra_headers && *extra_headers) {
        size_t n = strlen(extra_headers);
        if (evbuffer_add(out, extra_headers, n) != 0 ||
            (extra_headers[n - 1] != '\n' && evbuffer_add(out, "\r\n", 2) != 0))
            return -1;
    }
    if (evbuffer_add(out, "\r\n", 2) != 0)
        return -1;
    if (body && len && !no_len && !r->head_method && evbuffer_add(out, body, len) != 0)
        return -1;
    return 0;
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
        if (status < 200 || status > 599)
            status = 500;
        c->req = NULL;
        if (write_response(out, r, s, status, keep, content_type, extra_headers, body, len) != 0) {
            /* A partial response must not be followed by anything: drop
             * what is queued and close at once. */
            zx_http_log_error(s, "event=http_reply_failed status=%d peer=%s "
                              "error=\"out of memory\" action=\"connection closed\"",
                              status, c->peer);
            evbuffer_drain(out, evbuffer_get_length(out));
            c->state = ST_CLOSING;
            c->linger = 0;
            bufferevent_disable(c->bev, EV_READ);
            if (!c->in_process)
                event_active(c->resume, EV_TIMEOUT, 0); /* flushes: frees c */
        } else if (keep) {
            c->state = ST_HEAD;
            c->head_start_ms = 0; /* idle until the next request's first byte */
            zx_http_set_read_timeout(c, &s->idle_tv);
            if (bufferevent_enable(c->bev, EV_READ) != 0)
                zx_http_log_error(s, "event=http_enable_failed peer=%s", c->peer);
            if (!c->in_process)
                event_active(c->resume, EV_TIMEOUT, 0);
        } else {
            c->state = ST_CLOSING;
            c->linger = !r->body_done ||
                        evbuffer_get_length(bufferevent_get_input(c->bev)) > 0;
            bufferevent_disable(c->bev, EV_READ);
        }
    }
    zx_http_req_free(r);
}

/* Appends s as JSON string content (no quotes); invalid UTF-8 -> U+FFFD.
 * 0, or -1 if out of memory. */
static int json_escape(struct evbuffer *out, const unsigned char *s)
{
    int bad = 0;
    while (*s) {
        unsigned char ch = *s;
        size_t need = 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (ch == '"' || ch == '\\') {
            bad |= evbuffer_add_printf(out, "\\%c", ch) < 0;
            s++;
            continue;
        }
        if (ch < 0x20) {
            bad |= evbuffer_add_printf(out, "\\u%04x", ch) < 0;
            s++;
            continue;
        }
        if (ch < 0x80) {
            bad |= evbuffer_add(out, s, 1) != 0;
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
            bad |= evbuffer_add(out, s, need + 1) != 0;
            s += need + 1;
        } else {
            bad |= evbuffer_add(out, "\\ufffd", 6) != 0;
            s++;
        }
    }
    return bad ? -1 : 0;
}

void zx_http_reply_json_error(zx_http_req *r, int status, const char *extra_headers,
                              const char *fmt, ...)
{
    struct evbuffer *b;
    char *msg = NULL, fallback[64];
    const char *body = NULL;
    va_list ap;
    size_t len;

    if (!r)
        return;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    if (status < 200 || status > 599)
        status = 500;
    b = evbuffer_new();
    if (!b || evbuffer_add(b, "{\"error\": \"", 11) != 0 ||
        json_escape(b, (const unsigned char *)(msg ? msg : "out of memory")) != 0 ||
        evbuffer_add_printf(b, "\", \"status\": %d}", status) < 0 ||
        !(body = (const char *)evbuffer_pullup(b, -1))) {
        /* Still an answer with the status the caller meant. */
        zx_http_log_error(r->srv, "event=http_nomem what=json_error status=%d peer=%s", status,
                          r->peer);
        snprintf(fallback, sizeof(fallback), "{\"error\": \"out of memory\", \"status\": %d}",
                 status);
        zx_http_reply(r, status, "application/json", extra_headers, fallback, strlen(fallback));
    } else {
        len = evbuffer_get_length(b);
        zx_http_reply(r, status, "application/json", extra_headers, body, len);
    }
    if (b)
        evbuffer_free(b);
    free(msg);
}

/* The server answers an error itself and closes the connection. */
void zx_http_conn_fail_hdr(struct conn *c, int status, const char *extra_headers,
                           const char *msg)
{
    zx_http_req *r = c->req;
    if (!r) {
        r = zx_http_req_new(c);
        if (!r) {
            static const char oom[] = "HTTP/1.1 500 Internal Server Error\r\n"
                                      "Content-Type: application/json\r\n"
                                      "Content-Length: 41\r\nConnection: close\r\n\r\n"
                                      "{\"error\": \"out of memory\", \"status\": 500}";
            struct evbuffer *out = bufferevent_get_output(c->bev);
            zx_http_log_error(c->srv, "event=http_nomem what=error_reply status=%d peer=%s",
                              status, c->peer);
            if (evbuffer_add(out, oom, sizeof(oom) - 1) != 0)
                evbuffer_drain(out, evbuffer_get_length(out));
            c->state = ST_CLOSING;
            c->linger = 0;
            bufferevent_disable(c->bev, EV_READ);
            if (evbuffer_get_length(out) == 0 && !c->in_process)
                event_active(c->resume, EV_TIMEOUT, 0); /* nothing to flush: close */
            return;
        }
        c->req = r;
    }
    if (r->in_handler && c->srv->drop)
        c->srv->drop(r, c->srv->ctx);
    r->in_handler = 0;
    r->keep_alive = 0;
    r->body_done = 0; /* never reuse the connection after a server error */
    zx_http_reply_json_error(r, status, extra_headers, "%s", msg);
}

void zx_http_conn_fail(struct conn *c, int status, const char *msg)
{
    zx_http_conn_fail_hdr(c, status, NULL, msg);
}

/* ---- streamed replies ------------------------------------------------- */

zx_http_stream *zx_http_stream_start(zx_http_req *r, int status, const char *content_type,
                                     const char *extra_headers, zx_http_stream_closed_cb closed,
                                     zx_http_stream_drained_cb drained, void *arg)
{
    struct conn *c = r->conn;
    zx_http_server *s = r->srv;
    zx_http_stream *st = c ? calloc(1, sizeof(*st)) : NULL;
    if (!c) {
        zx_http_req_free(r); /* an orphan: its client is gone */
        return NULL;
    }
    if (!st) {
        static const char oom[] = "{\"error\": \"out of memory\", \"status\": 503}";
        zx_http_log_error(s, "event=http_nomem what=stream peer=%s", c->peer);
        r->keep_alive = 0;
        zx_http_reply(r, 503, "application/json", "Retry-After: 1\r\n",
                      oom, sizeof(oom) - 1);
        return NULL;
    }
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (status < 200 || status > 599)
        status = 500;
    size_t eh = extra_headers ? strlen(extra_headers) : 0;
    int bad = evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nServer: zx\r\nDate: %s\r\n"
                                  "Connection: close\r\n", status, zx_http_reason(status),
                                  http_date(s)) < 0;
    if (!bad && content_type)
        bad = evbuffer_add_printf(out, "Content-Type: %s\r\n", content_type) < 0;
    if (!bad && eh)
        bad = evbuffer_add(out, extra_headers, eh) != 0 ||
              (extra_headers[eh - 1] != '\n' && evbuffer_add(out, "\r\n", 2) != 0);
    if (!bad)
        bad = evbuffer_add(out, "\r\n", 2) != 0;
    c->req = NULL;
    zx_http_req_free(r);
    if (bad) {
        zx_http_log_error(s, "event=http_reply_failed what=stream peer=%s "
                          "error=\"out of memory\" action=\"connection closed\"", c->peer);
        free(st);
        zx_http_conn_close(c);
        return NULL;
    }
    st->conn = c;
    st->closed = closed;
    st->drained = drained;
    st->arg = arg;
    c->stream = st;
    c->state = ST_STREAM;
    c->linger = 0;
    /* silent for long is healthy; a client that takes nothing is not */
    bufferevent_set_timeouts(c->bev, NULL, &s->idle_tv);
    bufferevent_setwatermark(c->bev, EV_WRITE, ZX_HTTP_STREAM_LOW, 0);
    if (bufferevent_enable(c->bev, EV_READ | EV_WRITE) != 0)
        zx_http_log_error(s, "event=http_enable_failed peer=%s", c->peer);
    return st;
}

int zx_http_stream_write(zx_http_stream *st, const void *p, size_t len)
{
    return evbuffer_add(bufferevent_get_output(st->conn->bev), p, len) == 0 ? 0 : -1;
}

size_t zx_http_stream_queued(const zx_http_stream *st)
{
    return evbuffer_get_length(bufferevent_get_output(st->conn->bev));
}

int zx_http_stream_set_sndbuf(zx_http_stream *st, int bytes)
{
    return setsockopt(bufferevent_getfd(st->conn->bev), SOL_SOCKET, SO_SNDBUF, &bytes,
                      sizeof(bytes));
}

const char *zx_http_stream_peer(const zx_http_stream *st)
{
    return st->conn->peer;
}

void zx_http_stream_close(zx_http_stream *st, int flush)
{
    if (!st)
        return;
    struct conn *c = st->conn;
    c->stream = NULL;
    free(st);
    if (!flush || evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
        zx_http_conn_close(c);
        return;
    }
    c->state = ST_CLOSING;
    bufferevent_disable(c->bev, EV_READ);
    bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
}
