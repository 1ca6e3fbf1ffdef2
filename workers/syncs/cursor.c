/*
 * cursor.c — a reverse sync's cursor mark: its bytes, its order, and the
 * query that reads past it (cursor.h).
 *
 * It must never: touch the store or a database, or put a byte of a mark
 * into SQL other than as a quoted literal or a decimal integer.
 */
#include "workers/syncs/cursor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/util.h"

#define MAGIC "zxc1"

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

uint64_t zx_cursor_sig(const char *query, const char *column)
{
    uint64_t hq = zx_hash64(query, strlen(query));
    unsigned char c[8 + 256];
    size_t cl = strlen(column) > 256 ? 256 : strlen(column);
    put64(c, hq);
    memcpy(c + 8, column, cl);
    return zx_hash64(c, 8 + cl);
}

static int printable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return 0;
    return 1;
}

size_t zx_cursor_mark_encode(const zx_cursor_mark *m, uint64_t sig, unsigned char *out)
{
    if (m->kind == ZX_CURSOR_NONE)
        return 0;
    memcpy(out, MAGIC, 4);
    put64(out + 4, sig);
    out[12] = (unsigned char)m->kind;
    size_t n = 13;
    if (m->kind == ZX_CURSOR_INT || m->kind == ZX_CURSOR_TS) {
        put64(out + n, (uint64_t)m->i);
        n += 8;
    }
    if (m->kind == ZX_CURSOR_TEXT || m->kind == ZX_CURSOR_TS) {
        memcpy(out + n, m->t, m->tlen);
        n += m->tlen;
    }
    return n;
}

int zx_cursor_mark_decode(const void *val, size_t len, uint64_t sig, zx_cursor_mark *m,
                          char *why, size_t whylen)
{
    const unsigned char *p = val;
    memset(m, 0, sizeof(*m));
    if (len < 14 || memcmp(p, MAGIC, 4))
        return zx_seterr(why, whylen, "a stored mark of %zu bytes that is not one", len);
    int kind = p[12];
    size_t at = 13, tl;
    switch (kind) {
    case ZX_CURSOR_INT:
        if (len != 21)
            return zx_seterr(why, whylen, "an integer mark of %zu bytes (21 expected)", len);
        break;
    case ZX_CURSOR_TEXT:
    case ZX_CURSOR_TS:
        if (kind == ZX_CURSOR_TS)
            at += 8;
        tl = len > at ? len - at : 0;
        if (tl < 1 || tl > ZX_CURSOR_TEXT_MAX)
            return zx_seterr(why, whylen, "a text mark of %zu bytes (1 to %d expected)", tl,
                             ZX_CURSOR_TEXT_MAX);
        if (!printable((const char *)p + at, tl))
            return zx_seterr(why, whylen, "a text mark that is not printable ASCII");
        break;
    default:
        return zx_seterr(why, whylen, "a mark of unknown kind %d", kind);
    }
    if (get64(p + 4) != sig)
        return 1;
    m->kind = kind;
    if (kind != ZX_CURSOR_TEXT)
        m->i = (int64_t)get64(p + 13);
    if (kind != ZX_CURSOR_INT) {
        m->tlen = len - at;
        memcpy(m->t, p + at, m->tlen);
        m->t[m->tlen] = '\0';
    }
    return 0;
}

static const char *kind_name(int kind)
{
    return kind == ZX_CURSOR_INT ? "an integer" : kind == ZX_CURSOR_TS ? "a timestamp" : "text";
}

int zx_cursor_mark_see(zx_cursor_mark *m, const zx_value *v, int by_instant, char *why,
                       size_t whylen)
{
    int kind;
    switch (v->type) {
    case ZX_T_NULL:
        return 0;
    case ZX_T_INT:
        kind = ZX_CURSOR_INT;
        break;
    case ZX_T_TIMESTAMP:
        kind = by_instant ? ZX_CURSOR_TS : ZX_CURSOR_TEXT;
        break;
    case ZX_T_TEXT:
        kind = ZX_CURSOR_TEXT;
        break;
    default:
        return zx_seterr(why, whylen, "it holds a %s: a cursor is an integer, a timestamp or "
                         "text", v->type == ZX_T_REAL ? "real number"
                         : v->type == ZX_T_BOOL ? "boolean" : "JSON value");
    }
    if (kind != ZX_CURSOR_INT && (v->len < 1 || v->len > ZX_CURSOR_TEXT_MAX ||
                                  !printable(v->s, v->len)))
        return zx_seterr(why, whylen, "it holds text of %u bytes that cannot be a mark (1 to "
                         "%d bytes of printable ASCII)", v->len, ZX_CURSOR_TEXT_MAX);
    if (m->kind != ZX_CURSOR_NONE && m->kind != kind)
        return zx_seterr(why, whylen, "it holds both %s and %s", kind_name(m->kind),
                         kind_name(kind));
    int greater;
    if (m->kind == ZX_CURSOR_NONE)
        greater = 1;
    else if (kind == ZX_CURSOR_INT || kind == ZX_CURSOR_TS)
        greater = v->u.i > m->i;
    else {
        size_t n = v->len < m->tlen ? v->len : m->tlen;
        int c = memcmp(v->s, m->t, n);
        greater = c > 0 || (c == 0 && v->len > m->tlen);
    }
    if (!greater)
        return 0;
    m->kind = kind;
    if (kind != ZX_CURSOR_TEXT)
        m->i = v->u.i;
    if (kind != ZX_CURSOR_INT) {
        memcpy(m->t, v->s, v->len);
        m->tlen = v->len;
        m->t[m->tlen] = '\0';
    }
    return 0;
}

static int put_quoted(zx_buf *b, const char *s, size_t n, char q)
{
    if (zx_buf_put(b, &q, 1) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if ((s[i] == q && zx_buf_put(b, &q, 1) < 0) || zx_buf_put(b, &s[i], 1) < 0)
            return -1;
    return zx_buf_put(b, &q, 1);
}

char *zx_cursor_sql(const char *query, const char *column, const zx_cursor_mark *m)
{
    if (m->kind == ZX_CURSOR_NONE)
        return NULL;
    size_t ql = strlen(query);
    while (ql && (query[ql - 1] == ';' || query[ql - 1] == ' ' || query[ql - 1] == '\t' ||
                  query[ql - 1] == '\n' || query[ql - 1] == '\r'))
        ql--;
    zx_buf b;
    zx_buf_init(&b);
    char num[32];
    int ok = zx_buf_put(&b, "SELECT * FROM (\n", 16) == 0 && zx_buf_put(&b, query, ql) == 0 &&
             zx_buf_put(&b, "\n) AS zx_q WHERE ", 17) == 0 &&
             put_quoted(&b, column, strlen(column), '"') == 0 && zx_buf_put(&b, " >= ", 4) == 0;
    if (ok && m->kind == ZX_CURSOR_INT) {
        int n = snprintf(num, sizeof(num), "%lld", (long long)m->i);
        ok = zx_buf_put(&b, num, (size_t)n) == 0;
    } else if (ok) {
        ok = put_quoted(&b, m->t, m->tlen, '\'') == 0;
    }
    ok = ok && zx_buf_put(&b, " OR ", 4) == 0 &&
         put_quoted(&b, column, strlen(column), '"') == 0 &&
         zx_buf_put(&b, " IS NULL", 8) == 0;
    if (!ok) {
        zx_buf_free(&b);
        return NULL;
    }
    return b.p;   /* NUL-terminated; the buffer's bytes, handed over */
}
