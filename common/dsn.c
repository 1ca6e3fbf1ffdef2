/*
 * dsn.c — PostgreSQL connection strings: the copy fit to show, with every
 * password hidden, and the check of their shape (contract in dsn.h).
 *
 * The scanner follows libpq's own parsers (conninfo_parse and
 * conninfo_uri_parse_options in fe-connect.c) and, where the text leaves
 * their grammar or is ambiguous, hides more rather than less.
 *
 * It must never: leave a byte of a password in what it returns, allocate
 * anything but that copy, or depend on the locale (no isspace/tolower).
 */
#include "common/dsn.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/hex.h"

#define HIDDEN "***"

/* libpq's isspace() in the C locale. */
static int dsn_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
           c == '\r';
}

static int dsn_keychar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

/* Length of the URI prefix at s (exactly "postgresql://" or "postgres://"
 * when strict, else in any case), or 0. */
static size_t dsn_prefix(const char *s, int strict)
{
    /* MySQL / MariaDB URIs (connections of kind mysql) have the same
     * shape: user:password@host:port/database */
    static const char *const pre[] = {"postgresql://", "postgres://", "mysql://",
                                      "mariadb://"};

    for (size_t k = 0; k < 4; k++) {
        size_t i, len = strlen(pre[k]);
        for (i = 0; i < len && s[i]; i++) {
            char c = s[i];
            if (!strict && c >= 'A' && c <= 'Z')
                c = (char)(c - 'A' + 'a');
            if (c != pre[k][i])
                break;
        }
        if (i == len)
            return len;
    }
    return 0;
}

/* 1 when the key s[0..len) contains "password" in any case, after %XX
 * decoding when pct.  "password" has no inner repeat of its first letter,
 * so a mismatch restarts the match at 0 or 1. */
static int dsn_secret_key(const char *s, size_t len, int pct)
{
    static const char word[] = "password";
    size_t i, m = 0;

    for (i = 0; i < len; i++) {
        char c = s[i];
        int b = pct ? zx_pct_byte(s, len, i) : -1;
        if (b >= 0) {
            c = (char)b;
            i += 2;
        }
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c == word[m]) {
            if (++m == sizeof(word) - 1)
                return 1;
        } else {
            m = c == word[0];
        }
    }
    return 0;
}

/* The copy being built: the input with spans replaced by HIDDEN. */
typedef struct dsn_out {
    const char *src;
    size_t copied;      /* src bytes [0, copied) are done */
    zx_buf out;
    int dry;            /* 1: only scan (zx_dsn_check), build nothing */
} dsn_out;

static int dsn_put(dsn_out *o, const char *s, size_t len)
{
    if (o->dry)
        return 0;
    return zx_buf_put(&o->out, s, len);
}

/* Copy src up to `from`, then HIDDEN instead of src[from, to). */
static int dsn_hide(dsn_out *o, size_t from, size_t to)
{
    if (dsn_put(o, o->src + o->copied, from - o->copied) < 0 ||
        dsn_put(o, HIDDEN, sizeof(HIDDEN) - 1) < 0)
        return -1;
    o->copied = to;
    return 0;
}

/* Key=value pairs, as libpq's conninfo_parse reads them.  Sets *bad when
 * the text leaves the grammar (everything from there on is hidden). */
static int dsn_redact_pairs(dsn_out *o, size_t n, const char **bad)
{
    const char *s = o->src;
    size_t i = 0;

    *bad = NULL;
    while (i < n) {
        size_t ks, ke, vs;
        while (i < n && dsn_space(s[i]))
            i++;
        if (i == n)
            break;
        ks = i;
        while (i < n && s[i] != '=' && !dsn_space(s[i]))
            i++;
        ke = i;
        while (i < n && dsn_space(s[i]))
            i++;
        for (size_t k = ks; k < ke && !*bad; k++)
            if (!dsn_keychar(s[k]))
                *bad = "expected key=value pairs (host=db1 dbname=analytics) "
                       "or a postgresql:// URI";
        if (!*bad && (i == n || s[i] != '='))
            *bad = "expected key=value pairs (host=db1 dbname=analytics) "
                   "or a postgresql:// URI";
        if (*bad)
            return dsn_hide(o, ks, n);
        i++;                               /* the '=' */
        while (i < n && dsn_space(s[i]))
            i++;
        vs = i;
        if (i < n && s[i] == '\'') {
            for (i++;; i++) {
                if (i >= n) {
                    *bad = "a quoted value is not closed";
                    return dsn_hide(o, vs, n);
                }
                if (s[i] == '\\') {
                    if (i + 1 < n)
                        i++;
                } else if (s[i] == '\'') {
                    i++;
                    break;
                }
            }
        } else {
            while (i < n && !dsn_space(s[i])) {
                if (s[i] == '\\' && i + 1 < n)
                    i++;
                i++;
            }
        }
        if (dsn_secret_key(s + ks, ke - ks, 0) && dsn_hide(o, vs, i) < 0)
            return -1;
    }
    return 0;
}

/* The query of a URI from `at` (after its '?'): `&`-separated key=value.
 * A secret's value runs to the next '&' that starts a segment with a '='
 * (an unescaped '&' in a password does not end it early). */
static int dsn_redact_query(dsn_out *o, size_t at, size_t n)
{
    const char *s = o->src;
    size_t i = at;

    while (i < n) {
        const char *amp = memchr(s + i, '&', n - i);
        size_t end = amp ? (size_t)(amp - s) : n;
        const char *eq = memchr(s + i, '=', end - i);
        if (eq && dsn_secret_key(s + i, (size_t)(eq - s) - i, 1)) {
            while (end < n) {
                const char *a2 = memchr(s + end + 1, '&', n - end - 1);
                size_t e2 = a2 ? (size_t)(a2 - s) : n;
                if (memchr(s + end + 1, '=', e2 - end - 1))
                    break;
                end = e2;
            }
            if (dsn_hide(o, (size_t)(eq - s) + 1, end) < 0)
                return -1;
        }
        i = end + 1;
    }
    return 0;
}

/* A URI whose prefix ends at `a`.  libpq takes the user part up to the
 * first '@' before the first '/'; here it runs to the last '@' of all, so
 * that an unescaped '@', '/' or '?' in a password is hidden with the rest
 * (an '@' in the query hides more than the password: never less). */
static int dsn_redact_uri(dsn_out *o, size_t a, size_t n)
{
    const char *s = o->src;
    const char *qm = memchr(s + a, '?', n - a);
    size_t q = qm ? (size_t)(qm - s) : n, at = n, i, colon = n, query = n;
    int depth = 0;

    for (i = n; i > a; i--)
        if (s[i - 1] == '@') {
            at = i - 1;
            break;
        }
    for (i = a; at < n && i < at; i++) {
        if (s[i] == '[')
            depth++;
        else if (s[i] == ']' && depth)
            depth--;
        else if (s[i] == ':' && !depth) {
            colon = i;
            break;
        }
    }
    if (colon < n) {
        if (dsn_hide(o, colon + 1, at) < 0)
            return -1;
        if (at > q) {
            query = at + 1;     /* the '@' was in the query: it goes on */
        } else {
            qm = memchr(s + at, '?', n - at);
            query = qm ? (size_t)(qm - s) + 1 : n;
        }
    } else if (q < n) {
        query = q + 1;
    }
    return query < n ? dsn_redact_query(o, query, n) : 0;
}

char *zx_dsn_redact(const char *dsn)
{
    dsn_out o = {0};
    size_t n, lead = 0, pre;
    const char *bad;
    int rc;

    o.src = dsn ? dsn : "";
    n = strlen(o.src);
    while (lead < n && dsn_space(o.src[lead]))
        lead++;
    pre = dsn_prefix(o.src + lead, 0);
    if (pre)
        rc = dsn_redact_uri(&o, lead + pre, n);
    else
        rc = dsn_redact_pairs(&o, n, &bad);
    if (rc == 0)
        rc = dsn_put(&o, o.src + o.copied, n - o.copied);
    if (rc < 0) {
        zx_buf_free(&o.out);
        return NULL;
    }
    return o.out.p;
}

int zx_dsn_is_uri(const char *dsn)
{
    return dsn && (!strncmp(dsn, "postgresql://", 13) || !strncmp(dsn, "postgres://", 11));
}

int zx_dsn_is_mysql(const char *dsn)
{
    return dsn && (!strncmp(dsn, "mysql://", 8) || !strncmp(dsn, "mariadb://", 10));
}

int zx_dsn_check(const char *dsn, const char **why)
{
    const char *w = NULL, *bad = NULL;
    size_t n, lead = 0;
    dsn_out o = {0};

    if (!dsn)
        dsn = "";
    n = strlen(dsn);
    while (lead < n && dsn_space(dsn[lead]))
        lead++;
    if (zx_dsn_is_uri(dsn) || zx_dsn_is_mysql(dsn))
        return 0;
    if (lead == n) {
        w = "it is empty or only spaces";
    } else if (dsn_prefix(dsn + lead, 0)) {
        w = "a URI must start with postgresql://, postgres:// or (a MySQL "
            "connection) mysql://, in lower case, at its first character";
    } else {
        /* the same scanner as zx_dsn_redact (one grammar), building
         * nothing */
        o.src = dsn;
        o.dry = 1;
        dsn_redact_pairs(&o, n, &bad);
        w = bad;
    }
    if (why)
        *why = w;
    return w ? -1 : 0;
}
