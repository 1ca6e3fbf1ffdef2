/*
 * mysql_dsn.c — parse and redact MySQL / MariaDB connection URIs; the
 * grammar and what is hidden are in mysql_dsn.h.
 *
 * It must never: link libmariadb, depend on the locale (no ctype.h), or
 * put any byte of the DSN in an error phrase.
 */
#include "common/mysql_dsn.h"

#include <stdlib.h>
#include <string.h>

#include "common/hex.h"

/* Decode the n bytes at s (%XX escapes) into out, NUL-terminated.  Returns
 * the decoded length, or -1 with *why set. */
static long decode(const char *s, size_t n, char *out, const char **why)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            int b = zx_pct_byte(s, n, i);
            if (b < 0) {
                *why = "a % is not followed by two hex digits";
                return -1;
            }
            c = (unsigned char)b;
            if (c == 0) {
                *why = "it holds %00 (a NUL byte)";
                return -1;
            }
            i += 2;
        }
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return (long)o;
}

static int is_host_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '-' || c == '_';
}

static int is_ipv6_char(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
           c == ':' || c == '.';
}

/* Parse the query (n bytes at q, after '?') into d.  0 or -1 (*why). */
static int parse_query(const char *q, size_t n, zx_mysql_dsn *d, char *scratch,
                       const char **why)
{
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && q[j] != '&')
            j++;
        const char *eq = memchr(q + i, '=', j - i);
        if (j == i || !eq) {
            *why = "a query parameter is not key=value";
            return -1;
        }
        size_t klen = (size_t)(eq - (q + i));
        if (decode(q + i, klen, scratch, why) < 0)
            return -1;
        if (strcmp(scratch, "ssl") != 0) {
            *why = "it has an unknown query parameter (zx knows only ssl)";
            return -1;
        }
        if (decode(eq + 1, (size_t)(q + j - (eq + 1)), scratch, why) < 0)
            return -1;
        if (!strcmp(scratch, "true") || !strcmp(scratch, "1"))
            d->ssl = 1;
        else if (!strcmp(scratch, "false") || !strcmp(scratch, "0"))
            d->ssl = 0;
        else {
            *why = "ssl must be true, false, 1 or 0";
            return -1;
        }
        i = j + 1;
    }
    return 0;
}

static int parse(const char *dsn, zx_mysql_dsn *d, const char **why)
{
    size_t len = strlen(dsn);
    if (len > ZX_MYSQL_DSN_MAX) {
        *why = "it is longer than 4096 bytes";
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)dsn[i];
        if (c <= 0x20 || c == 0x7f) {
            *why = "it holds a space or a control character";
            return -1;
        }
    }
    const char *p;
    if (!strncmp(dsn, "mysql://", 8))
        p = dsn + 8;
    else if (!strncmp(dsn, "mariadb://", 10))
        p = dsn + 10;
    else {
        *why = "it does not start with mysql:// or mariadb://";
        return -1;
    }
    const char *end = dsn + len;
    const char *at = strrchr(p, '@');
    if (!at) {
        *why = "it has no user (mysql://user:password@host/database)";
        return -1;
    }
    /* every part decodes to at most its own length: one block holds all */
    char *mem = malloc(len + 8);
    char *scratch = malloc(len + 1);
    if (!mem || !scratch) {
        free(mem);
        free(scratch);
        *why = "out of memory";
        return -1;
    }
    d->mem_ = mem;
    d->ssl = -1;
    char *o = mem;
    long n;

    const char *colon = memchr(p, ':', (size_t)(at - p));
    const char *uend = colon ? colon : at;
    if ((n = decode(p, (size_t)(uend - p), o, why)) < 0)
        goto fail;
    if (n == 0) {
        *why = "it has no user (mysql://user:password@host/database)";
        goto fail;
    }
    d->user = o;
    o += n + 1;
    if (colon) {
        if ((n = decode(colon + 1, (size_t)(at - colon - 1), o, why)) < 0)
            goto fail;
        d->password = o;
        o += n + 1;
    }

    /* host */
    const char *h = at + 1, *he;
    if (*h == '[') {
        he = h + 1;
        while (he < end && is_ipv6_char((unsigned char)*he))
            he++;
        if (he == h + 1 || he == end || *he != ']') {
            *why = "the host in [ ] is not an IPv6 address";
            goto fail;
        }
        memcpy(o, h + 1, (size_t)(he - h - 1));
        o[he - h - 1] = '\0';
        d->host = o;
        o += he - h;
        he++;
    } else {
        he = h;
        while (he < end && is_host_char((unsigned char)*he))
            he++;
        if (he == h) {
            *why = "it has no host (mysql://user:password@host/database)";
            goto fail;
        }
        memcpy(o, h, (size_t)(he - h));
        o[he - h] = '\0';
        d->host = o;
        o += he - h + 1;
    }

    /* port */
    const char *q = he;
    d->port = ZX_MYSQL_DEFAULT_PORT;
    if (q < end && *q == ':') {
        unsigned long port = 0;
        const char *ds = ++q;
        while (q < end && *q >= '0' && *q <= '9') {
            port = port * 10 + (unsigned long)(*q - '0');
            if (port > 65535)
                break;
            q++;
        }
        if (q == ds || port < 1 || port > 65535 || (q < end && *q != '/' && *q != '?')) {
            *why = "the port is not a number between 1 and 65535";
            goto fail;
        }
        d->port = (unsigned)port;
    }
    if (q == end || *q != '/') {
        *why = (q < end && *q != '?') ? "the host has a character a host name cannot have"
                                      : "it has no database (mysql://user:password@host/database)";
        goto fail;
    }

    /* database */
    const char *db = ++q;
    while (q < end && *q != '?')
        q++;
    if (memchr(db, '#', (size_t)(end - db))) {
        *why = "it has a # (a fragment, or an unescaped # after the user part)";
        goto fail;
    }
    if (memchr(db, '/', (size_t)(q - db))) {
        *why = "the database name has a / (write %2F, or remove the trailing /)";
        goto fail;
    }
    if ((n = decode(db, (size_t)(q - db), o, why)) < 0)
        goto fail;
    if (n == 0) {
        *why = "it has no database (mysql://user:password@host/database)";
        goto fail;
    }
    if (n > ZX_MYSQL_DB_MAX) {
        *why = "the database name is longer than 64 bytes";
        goto fail;
    }
    d->database = o;
    o += n + 1;

    if (q < end && parse_query(q + 1, (size_t)(end - q - 1), d, scratch, why) < 0)
        goto fail;
    free(scratch);
    return 0;

fail:
    free(scratch);
    free(mem);
    memset(d, 0, sizeof(*d));
    return -1;
}

int zx_mysql_dsn_parse(const char *dsn, zx_mysql_dsn *out, const char **why)
{
    const char *w = NULL;
    memset(out, 0, sizeof(*out));
    if (!dsn) {
        w = "no DSN";
    } else if (parse(dsn, out, &w) == 0) {
        return 0;
    }
    if (why)
        *why = w;
    return -1;
}

void zx_mysql_dsn_free(zx_mysql_dsn *d)
{
    if (!d)
        return;
    free(d->mem_);
    memset(d, 0, sizeof(*d));
}

/* ---- redaction ---------------------------------------------------------- */

/* 1 when the n bytes at k, %XX-decoded, contain "password" in any case. */
static int key_is_password(const char *k, size_t n)
{
    static const char want[] = "password";
    char buf[256];
    size_t m = 0;
    for (size_t i = 0; i < n && m < sizeof(buf); i++) {
        unsigned char c = (unsigned char)k[i];
        int b = zx_pct_byte(k, n, i);
        if (b >= 0) {
            c = (unsigned char)b;
            i += 2;
        }
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c - 'A' + 'a');
        buf[m++] = (char)c;
    }
    /* a key longer than the buffer is taken as a password key: more, never
     * less */
    if (m == sizeof(buf))
        return 1;
    for (size_t i = 0; i + 8 <= m; i++)
        if (!memcmp(buf + i, want, 8))
            return 1;
    return 0;
}

/* A span [a, b) of the DSN to hide. */
typedef struct span {
    size_t a, b;
    int on;
} span;

/* The password of the user part (the first ':' to the last '@'), or, with
 * no '@', whatever follows the first ':' (after a bracketed host) when it
 * is not a port. */
static span user_span(const char *dsn, size_t len)
{
    span sp = {0, 0, 0};
    const char *end = dsn + len;
    const char *start = strstr(dsn, "://");
    start = start ? start + 3 : dsn;
    const char *at = strrchr(start, '@');
    if (at) {
        const char *colon = memchr(start, ':', (size_t)(at - start));
        if (colon) {
            sp.a = (size_t)(colon + 1 - dsn);
            sp.b = (size_t)(at - dsn);
            sp.on = 1;
        }
        return sp;
    }
    const char *c = start;
    if (*c == '[') {
        const char *rb = strchr(c, ']');
        c = rb ? rb + 1 : end;
    }
    while (c < end && *c != ':' && *c != '/' && *c != '?')
        c++;
    if (c == end || *c != ':')
        return sp;
    const char *pe = c + 1;
    while (pe < end && *pe >= '0' && *pe <= '9')
        pe++;
    if (pe > c + 1 && (pe == end || *pe == '/' || *pe == '?'))
        return sp; /* a port */
    sp.a = (size_t)(c + 1 - dsn);
    sp.b = len;
    sp.on = 1;
    return sp;
}

/* From the first query parameter whose key holds "password" (after any
 * '?' or '&' of the text, so that an '@' in its value cannot hide it): its
 * value and all that follows. */
static span query_span(const char *dsn, size_t len)
{
    span sp = {0, 0, 0};
    for (size_t i = 0; i < len; i++) {
        if (dsn[i] != '?' && dsn[i] != '&')
            continue;
        size_t k = i + 1;
        while (k < len && dsn[k] != '=' && dsn[k] != '&' && dsn[k] != '?')
            k++;
        if (k < len && dsn[k] == '=' && key_is_password(dsn + i + 1, k - i - 1)) {
            sp.a = k + 1;
            sp.b = len;
            sp.on = 1;
            return sp;
        }
    }
    return sp;
}

char *zx_mysql_dsn_redact(const char *dsn)
{
    if (!dsn)
        dsn = "";
    size_t len = strlen(dsn);
    span s1 = user_span(dsn, len), s2 = query_span(dsn, len);
    if (s1.on && s2.on && s2.a <= s1.b && s1.a <= s2.b) {
        /* overlapping or touching: one span */
        s1.a = s1.a < s2.a ? s1.a : s2.a;
        s1.b = s1.b > s2.b ? s1.b : s2.b;
        s2.on = 0;
    }
    if (!s1.on || (s2.on && s2.a < s1.a)) {
        span t = s1;
        s1 = s2;
        s2 = t;
    }
    /* at most two spans, each 3 bytes even when empty */
    char *out = malloc(len + 8);
    if (!out)
        return NULL;
    size_t o = 0, from = 0;
    const span *sp[2] = {&s1, &s2};
    for (int k = 0; k < 2; k++) {
        if (!sp[k]->on)
            continue;
        memcpy(out + o, dsn + from, sp[k]->a - from);
        o += sp[k]->a - from;
        memcpy(out + o, "***", 3);
        o += 3;
        from = sp[k]->b;
    }
    memcpy(out + o, dsn + from, len - from);
    o += len - from;
    out[o] = '\0';
    return out;
}
