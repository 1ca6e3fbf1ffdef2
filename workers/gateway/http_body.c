/* http_body.c - reading request bodies: Content-Length, chunked, gzip.
 *
 * Moves body bytes from the connection's input into the request's body
 * buffer (inflating gzip through http_gzip.c), decodes chunked framing and
 * skips trailers, and enforces max_body_size on the raw and inflated body and
 * max_header_size on trailers.  When the body is complete it hands the
 * request to the handler's body_cb.
 *
 * Must never: interpret the body's content, buffer more than max_body_size
 * (plus one read), or reply twice: every error goes through
 * zx_http_conn_fail, after which the caller stops.
 */
#include "http_int.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include <stdio.h>
#include <string.h>

/* ---- body ------------------------------------------------------------- */

void zx_http_fail_too_big(struct conn *c)
{
    char msg[96];
    snprintf(msg, sizeof(msg), "request body is larger than the limit of %llu bytes",
             (unsigned long long)c->srv->lim.max_body_size);
    zx_http_conn_fail(c, 413, msg);
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
                zx_http_fail_too_big(c);
                return -1;
            case ZX_HTTP_GZ_CORRUPT:
                zx_http_conn_fail(c, 400, "body is not valid gzip");
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
    zx_http_conn_fail(c, 500, "out of memory");
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
    zx_http_conn_fail(c, fail_st,
                      fail_st == 431 ? "chunked trailers are larger than the limit"
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
            for (; i < len && zx_http_hexval((unsigned char)line[i]) >= 0; i++) {
                if (size >> 60) {
                    zx_http_fail_too_big(c);
                    return -1;
                }
                size = size * 16 + (uint64_t)zx_http_hexval((unsigned char)line[i]);
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
                zx_http_fail_too_big(c);
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
    zx_http_conn_fail(c, 400, "malformed chunked body");
    return -1;
}

/* 1 body complete, 0 need more, -1 answered. */
int zx_http_body_read(struct conn *c)
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
void zx_http_body_complete(struct conn *c)
{
    zx_http_req *r = c->req;
    size_t len;

    if (r->gz) {
        if (zx_http_gz_finish(r->gz) != ZX_HTTP_GZ_OK) {
            zx_http_conn_fail(c, 400, "body is not valid gzip");
            return;
        }
        zx_http_gz_free(r->gz);
        r->gz = NULL;
    }
    len = r->body ? evbuffer_get_length(r->body) : 0;
    if (len) {
        r->body_ptr = (const char *)evbuffer_pullup(r->body, -1);
        if (!r->body_ptr) {
            zx_http_conn_fail(c, 500, "out of memory");
            return;
        }
        r->body_len = len;
    }
    r->body_done = 1;
    c->state = ST_WAIT;
    zx_http_set_read_timeout(c, NULL); /* no timeout while the handler works */
    c->srv->body(r, c->srv->ctx);
}
