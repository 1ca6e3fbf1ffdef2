/* http_body.c - reading request bodies: Content-Length, chunked, gzip.
 *
 * Copies body bytes from the connection's input into the request's own
 * contiguous body buffer (inflating gzip through http_gzip.c), decodes
 * chunked framing and skips trailers, and enforces max_body_size on the raw
 * and inflated body, max_header_size on trailers, and max_held_bytes on
 * what the buffers hold: every byte of buffer capacity is counted in the
 * server's held bytes before it is allocated (zx_http_held_set).  When the
 * body is complete it hands the request to the handler's body_cb.
 *
 * Must never: interpret the body's content, allocate body memory it has not
 * counted, buffer more than max_body_size (plus one byte), accept a number
 * from the wire that does not fit, or reply twice: every error goes through
 * zx_http_conn_fail, after which the caller stops.
 */
#include "http_int.h"

#include "common/hex.h"
#include "common/util.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- body ------------------------------------------------------------- */

void zx_http_fail_too_big(struct conn *c)
{
    char msg[96];
    snprintf(msg, sizeof(msg), "request body is larger than the limit of %llu bytes",
             (unsigned long long)c->srv->lim.max_body_size);
    zx_http_conn_fail(c, 413, msg);
}

void zx_http_fail_held(struct conn *c)
{
    char msg[160];
    zx_http_server *s = c->srv;
    s->stats.held_refused++;
    snprintf(msg, sizeof(msg),
             "the server holds too many request bodies (%llu of %llu bytes); retry",
             (unsigned long long)s->held, (unsigned long long)s->lim.max_held_bytes);
    zx_http_conn_fail_hdr(c, 503, "Retry-After: 1\r\n", msg);
}

/* What r counts in the held bytes for a body buffer of capacity cap. */
static uint64_t held_for(const zx_http_req *r, uint64_t cap)
{
    uint64_t n = cap > r->reserved ? cap : r->reserved;
    return n + (r->gz ? GZ_STATE_BYTES : 0);
}

/* Makes r's body buffer ncap bytes, counting it first (and the old buffer
 * too while realloc may hold both). */
static zx_http_gz_result body_resize(zx_http_req *r, size_t ncap)
{
    zx_http_gz_out *o = &r->body;
    unsigned char *p;

    if (zx_http_held_set(r, held_for(r, (uint64_t)ncap + o->cap)) != 0)
        return ZX_HTTP_GZ_REFUSED;
    p = realloc(o->p, ncap);
    if (!p) {
        zx_http_held_set(r, held_for(r, o->cap));
        zx_http_log_error(r->srv, "event=http_nomem what=body_buffer bytes=%zu peer=%s", ncap,
                          r->peer);
        return ZX_HTTP_GZ_NOMEM;
    }
    o->p = p;
    o->cap = ncap;
    zx_http_held_set(r, held_for(r, ncap)); /* lowering: cannot fail */
    return ZX_HTTP_GZ_OK;
}

/* zx_http_gz_out.grow of request bodies: doubles the capacity (from
 * BODY_FIRST_CAP), never above max_body_size + 1 unless asked for more. */
static zx_http_gz_result body_grow(zx_http_gz_out *o, size_t want)
{
    zx_http_req *r = o->arg;
    uint64_t top = r->srv->lim.max_body_size + 1;
    size_t need = o->len + want, ncap = o->cap ? o->cap : BODY_FIRST_CAP;

    if (need < o->len)
        return ZX_HTTP_GZ_NOMEM; /* cannot happen: len <= max_body_size */
    while (ncap < need && ncap <= SIZE_MAX / 2)
        ncap *= 2;
    if (ncap > top && need <= top)
        ncap = (size_t)top;
    if (ncap < need)
        ncap = need;
    return body_resize(r, ncap);
}

int zx_http_body_start(struct conn *c)
{
    zx_http_req *r = c->req;
    r->body.grow = body_grow;
    r->body.arg = r;
    r->body_start_ms = zx_mono_ms();
    if (r->body_kind == BODY_LENGTH)
        r->reserved = r->content_length; /* <= max_body_size: checked */
    if (zx_http_held_set(r, held_for(r, 0)) != 0) {
        zx_http_fail_held(c);
        return -1;
    }
    /* A plain body of announced size gets its whole buffer now: one
     * allocation, already counted; pages are touched as bytes arrive. */
    if (r->body_kind == BODY_LENGTH && !r->gz) {
        switch (body_resize(r, (size_t)r->content_length)) {
        case ZX_HTTP_GZ_OK:
            break;
        case ZX_HTTP_GZ_REFUSED:
            zx_http_fail_held(c);
            return -1;
        default:
            zx_http_conn_fail(c, 500, "out of memory");
            return -1;
        }
    }
    return 0;
}

int64_t zx_http_body_deadline(const struct conn *c)
{
    const zx_http_req *r = c->req;
    const zx_http_limits *l = &c->srv->lim;
    uint64_t whole = r->raw_total / l->body_min_rate, part = r->raw_total % l->body_min_rate;
    uint64_t ext_ms;

    /* One second per body_min_rate bytes, capped (30 days) before it could
     * overflow: raw_total comes from the wire. */
    if (whole > 30u * 86400u)
        ext_ms = 30ull * 86400u * 1000u;
    else
        ext_ms = whole * 1000u + part * 1000u / l->body_min_rate;
    return r->body_start_ms + (int64_t)l->body_timeout_ms + (int64_t)ext_ms;
}

/* Answers the error of a failed grow or inflate step. -1. */
static int feed_fail(struct conn *c, zx_http_gz_result res)
{
    switch (res) {
    case ZX_HTTP_GZ_TOO_BIG:
        zx_http_fail_too_big(c);
        break;
    case ZX_HTTP_GZ_CORRUPT:
        zx_http_conn_fail(c, 400, "body is not valid gzip");
        break;
    case ZX_HTTP_GZ_REFUSED:
        zx_http_fail_held(c);
        break;
    default:
        zx_http_conn_fail(c, 500, "out of memory");
        break;
    }
    return -1;
}

/* Moves n body bytes from the input into the body (inflating).  0 or -1. */
static int body_feed(struct conn *c, size_t n)
{
    zx_http_req *r = c->req;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    zx_http_gz_out *o = &r->body;
    zx_http_gz_result res;

    r->raw_total += n;
    if (!r->gz) {
        if (o->cap - o->len < n && (res = o->grow(o, n)) != ZX_HTTP_GZ_OK)
            return feed_fail(c, res);
        if (evbuffer_remove(in, o->p + o->len, n) != (int)n) {
            zx_http_log_error(c->srv, "event=http_input_error peer=%s", c->peer);
            return feed_fail(c, ZX_HTTP_GZ_NOMEM);
        }
        o->len += n;
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
            if ((res = zx_http_gz_feed(r->gz, v[i].iov_base, k, o)) != ZX_HTTP_GZ_OK)
                return feed_fail(c, res);
            used += k;
        }
        if (used == 0) {
            zx_http_log_error(c->srv, "event=http_input_error peer=%s", c->peer);
            return feed_fail(c, ZX_HTTP_GZ_NOMEM);
        }
        evbuffer_drain(in, used);
        n -= used;
    }
    return 0;
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
    if (evbuffer_remove(in, buf, (size_t)e.pos) != (int)e.pos || evbuffer_drain(in, 1) != 0) {
        zx_http_log_error(c->srv, "event=http_input_error what=chunk_line peer=%s", c->peer);
        zx_http_conn_fail(c, 500, "internal error reading the request");
        return -1;
    }
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
            for (; i < len && zx_hexval((unsigned char)line[i]) >= 0; i++) {
                if (size >> 60) { /* size * 16 would not fit in 64 bits */
                    zx_http_conn_fail(c, 400, "chunk size does not fit in 64 bits");
                    return -1;
                }
                size = size * 16 + (uint64_t)zx_hexval((unsigned char)line[i]);
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
            if (evbuffer_copyout(in, two, avail >= 2 ? 2 : 1) < 1)
                goto bad;
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
    zx_http_gz_out *o = &r->body;

    if (r->gz) {
        if (zx_http_gz_finish(r->gz) != ZX_HTTP_GZ_OK) {
            zx_http_conn_fail(c, 400, "body is not valid gzip");
            return;
        }
        zx_http_gz_free(r->gz);
        r->gz = NULL;
    }
    if (o->cap > o->len + BODY_FIRST_CAP) {
        /* Give back what doubling left unused (keeps p if realloc fails). */
        unsigned char *p = realloc(o->p, o->len ? o->len : 1);
        if (p) {
            o->p = p;
            o->cap = o->len ? o->len : 1;
        }
    }
    r->reserved = 0;
    zx_http_held_set(r, held_for(r, o->cap)); /* lowering: cannot fail */
    if (o->len) {
        r->body_ptr = (const char *)o->p;
        r->body_len = o->len;
    }
    r->body_done = 1;
    c->state = ST_WAIT;
    zx_http_set_read_timeout(c, NULL); /* no timeout while the handler works */
    c->srv->body(r, c->srv->ctx);
}
