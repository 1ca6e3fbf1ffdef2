/*
 * aws_sigv4.c — see aws_sigv4.h.
 *
 * The canonical request is built in one zx_buf; every piece of outside
 * input (method, path, query, header lines, keys) is checked against its
 * bound and for control characters before it is used, and an error names
 * the piece (never a key's value).
 */
#include "common/aws_sigv4.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/hex.h"
#include "common/util.h"

#define SHA_LEN        32
#define SECRET_MAX     256      /* bytes of a secret key (AWS's are 40) */
#define ACCESS_MAX     128      /* bytes of an access key id (AWS's are 16..128) */
#define NAME_MAX_      64       /* bytes of a region, a service, a method */
#define ADDED_MAX      3        /* headers the signer adds: date, token, content hash */
#define HEADER_SHOW    40       /* bytes of a header name shown in an error */

static const char HEXD[] = "0123456789abcdef";

static void to_hex(const unsigned char *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = HEXD[b[i] >> 4];
        out[2 * i + 1] = HEXD[b[i] & 15];
    }
    out[2 * n] = '\0';
}

int zx_aws_sha256_hex(const void *data, size_t len, char hex[65])
{
    unsigned char md[SHA_LEN];
    unsigned int n = 0;
    if (EVP_Digest(len ? data : "", len, md, &n, EVP_sha256(), NULL) != 1 || n != SHA_LEN)
        return -1;
    to_hex(md, SHA_LEN, hex);
    return 0;
}

static int unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '_' || c == '~';
}

/* Appends s[0..len) percent-encoded (uppercase hex) to b.  0 or -1. */
static int put_encoded(zx_buf *b, const char *s, size_t len, int keep_slash)
{
    if (len > SIZE_MAX / 3 || zx_buf_reserve(b, 3 * len) < 0)
        return -1;
    char *o = b->p + b->len;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved(c) || (keep_slash && c == '/')) {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = "0123456789ABCDEF"[c >> 4];
            *o++ = "0123456789ABCDEF"[c & 15];
        }
    }
    b->len = (size_t)(o - b->p);
    b->p[b->len] = '\0';
    return 0;
}

char *zx_aws_uri_encode(const char *s, size_t len, int keep_slash)
{
    zx_buf b = {0};
    if (put_encoded(&b, s, len, keep_slash) < 0 || zx_buf_put(&b, "", 0) < 0) {
        zx_buf_free(&b);
        return NULL;
    }
    return b.p;
}

/* Decodes the %XX escapes of s[0..n) into out (room for n bytes); '+'
 * stays '+'.  The decoded length, or -1 at a '%' without two hex digits. */
static long pct_decode(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            int v = zx_pct_byte(s, n, i);
            if (v < 0)
                return -1;
            out[o++] = (char)v;
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    return (long)o;
}

/* Whether s[0..n) holds a control character (below 0x20 but tab, or 0x7f). */
static int has_ctl(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return 1;
    }
    return 0;
}

/* ---- canonical URI ------------------------------------------------------ */

/* Non-S3: "." and ".." segments and empty ones (repeated slashes) removed,
 * a trailing slash kept when the path had one and anything is left; each
 * segment of the path as sent is encoded again. */
static int put_uri_normalised(zx_buf *b, const char *path, size_t n)
{
    /* start offsets of the kept segments in b, to drop one at ".." */
    size_t *starts = malloc((n / 2 + 1) * sizeof(*starts));
    if (!starts)
        return -1;
    size_t depth = 0, base = b->len;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        while (i < n && path[i] == '/')
            i++;
        size_t j = i;
        while (j < n && path[j] != '/')
            j++;
        size_t sl = j - i;
        if (sl == 0 || (sl == 1 && path[i] == '.')) {
            /* nothing */
        } else if (sl == 2 && path[i] == '.' && path[i + 1] == '.') {
            if (depth)
                b->len = starts[--depth];
        } else {
            starts[depth++] = b->len;
            rc = zx_buf_put(b, "/", 1) < 0 || put_encoded(b, path + i, sl, 0) < 0 ? -1 : 0;
        }
        i = j;
    }
    free(starts);
    if (rc == 0 && (b->len == base || path[n - 1] == '/'))
        rc = zx_buf_put(b, "/", 1);
    else if (rc == 0)
        b->p[b->len] = '\0';
    return rc;
}

/* S3: the path as given, each segment decoded and encoded once (so an
 * already encoded key is unchanged, and a byte sent raw is encoded). */
static int put_uri_s3(zx_buf *b, const char *path, size_t n, char *err, size_t errlen)
{
    char *tmp = malloc(n + 1);
    if (!tmp) {
        zx_seterr(err, errlen, "out of memory signing the request");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        size_t j = i;
        while (j < n && path[j] != '/')
            j++;
        long dn = pct_decode(path + i, j - i, tmp);
        if (dn < 0) {
            zx_seterr(err, errlen, "the path has a '%%' not followed by two hex digits");
            rc = -1;
        } else if (put_encoded(b, tmp, (size_t)dn, 0) < 0 ||
                   (j < n && zx_buf_put(b, "/", 1) < 0)) {
            zx_seterr(err, errlen, "out of memory signing the request");
            rc = -1;
        }
        i = j + (j < n);
    }
    free(tmp);
    return rc;
}

static int put_uri(zx_buf *b, const char *path, unsigned flags, char *err, size_t errlen)
{
    size_t n = path ? strnlen(path, ZX_SIGV4_PATH_MAX + 1) : 0;
    if (n == 0 || path[0] != '/') {
        zx_seterr(err, errlen, "the request path must start with '/'");
        return -1;
    }
    if (n > ZX_SIGV4_PATH_MAX) {
        zx_seterr(err, errlen, "the request path is over %d bytes", ZX_SIGV4_PATH_MAX);
        return -1;
    }
    if (has_ctl(path, n) || memchr(path, '?', n) || memchr(path, '#', n)) {
        zx_seterr(err, errlen, "the request path holds a control character, '?' or '#' (give the "
             "query string in query, without '?')");
        return -1;
    }
    if (flags & ZX_SIGV4_S3)
        return put_uri_s3(b, path, n, err, errlen);
    if (put_uri_normalised(b, path, n) < 0) {
        zx_seterr(err, errlen, "out of memory signing the request");
        return -1;
    }
    return 0;
}

/* ---- canonical query ---------------------------------------------------- */

typedef struct qpair {
    char *name, *value;   /* encoded, malloc'd */
} qpair;

static int qpair_cmp(const void *a, const void *b)
{
    const qpair *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->value, y->value);
}

/* Decodes s[0..n) and encodes it per AWS, malloc'd into *out.  0, -1 on a
 * bad escape (*out NULL), -2 out of memory. */
static int reencode(const char *s, size_t n, char *tmp, char **out)
{
    *out = NULL;
    long dn = pct_decode(s, n, tmp);
    if (dn < 0)
        return -1;
    *out = zx_aws_uri_encode(tmp, (size_t)dn, 0);
    return *out ? 0 : -2;
}

static int put_query(zx_buf *b, const char *q, char *err, size_t errlen)
{
    size_t n = q ? strnlen(q, ZX_SIGV4_QUERY_MAX + 1) : 0;
    if (n == 0)
        return 0;
    if (n > ZX_SIGV4_QUERY_MAX) {
        zx_seterr(err, errlen, "the query string is over %d bytes", ZX_SIGV4_QUERY_MAX);
        return -1;
    }
    if (has_ctl(q, n) || memchr(q, '#', n) || memchr(q, ' ', n)) {
        zx_seterr(err, errlen, "the query string holds a space, a control character or '#' "
             "(percent-encode them)");
        return -1;
    }
    size_t max = n / 2 + 1, np = 0;
    qpair *pv = calloc(max, sizeof(*pv));
    char *tmp = malloc(n + 1);
    int rc = pv && tmp ? 0 : -2;
    for (size_t i = 0; i < n && rc == 0;) {
        size_t j = i;
        while (j < n && q[j] != '&')
            j++;
        if (j > i) {   /* "a&&b" and a trailing '&': nothing between, skipped */
            const char *eq = memchr(q + i, '=', j - i);
            size_t kn = eq ? (size_t)(eq - (q + i)) : j - i;
            rc = reencode(q + i, kn, tmp, &pv[np].name);
            if (rc == 0)
                rc = eq ? reencode(eq + 1, (size_t)(q + j - eq - 1), tmp, &pv[np].value)
                        : ((pv[np].value = strdup("")) ? 0 : -2);
            np++;
        }
        i = j + 1;
    }
    if (rc == 0) {
        qsort(pv, np, sizeof(*pv), qpair_cmp);
        for (size_t i = 0; i < np && rc == 0; i++)
            if (zx_buf_printf(b, "%s%s=%s", i ? "&" : "", pv[i].name, pv[i].value) < 0)
                rc = -2;
    }
    if (rc == -1)
        zx_seterr(err, errlen, "the query string has a '%%' not followed by two hex digits");
    else if (rc == -2)
        zx_seterr(err, errlen, "out of memory signing the request");
    for (size_t i = 0; pv && i < np; i++) {
        free(pv[i].name);
        free(pv[i].value);
    }
    free(pv);
    free(tmp);
    return rc < 0 ? -1 : 0;
}

/* ---- canonical headers -------------------------------------------------- */

typedef struct hdr {
    char *name;            /* lowercased, malloc'd */
    char *value;           /* trimmed, inner spaces collapsed, malloc'd */
    size_t order;          /* place in the request, for lines of one name */
} hdr;

static int hdr_cmp(const void *a, const void *b)
{
    const hdr *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->order < y->order ? -1 : x->order > y->order);
}

static int tchar(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* The value v[0..n) trimmed, runs of spaces and tabs inside made one
 * space: malloc'd, NULL out of memory. */
static char *trim_value(const char *v, size_t n)
{
    while (n && (*v == ' ' || *v == '\t'))
        v++, n--;
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    char *o = malloc(n + 1);
    if (!o)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int sp = v[i] == ' ' || v[i] == '\t';
        if (sp && k && o[k - 1] == ' ')
            continue;
        o[k++] = sp ? ' ' : v[i];
    }
    o[k] = '\0';
    return o;
}

/* One "Name: value" line into h.  0, or -1 with err. */
static int parse_line(const char *line, size_t idx, hdr *h, char *err, size_t errlen)
{
    size_t n = strnlen(line, ZX_SIGV4_LINE_MAX + 1);
    if (n > ZX_SIGV4_LINE_MAX) {
        zx_seterr(err, errlen, "header line %zu is over %d bytes", idx + 1, ZX_SIGV4_LINE_MAX);
        return -1;
    }
    const char *colon = memchr(line, ':', n);
    if (!colon) {
        zx_seterr(err, errlen, "header line %zu has no ':' (each line is \"Name: value\")", idx + 1);
        return -1;
    }
    size_t nn = (size_t)(colon - line);
    for (size_t i = 0; i < nn; i++)
        if (!tchar((unsigned char)line[i])) {
            zx_seterr(err, errlen, "header line %zu: the name before ':' is empty or holds a space "
                 "or a character a header name cannot have", idx + 1);
            return -1;
        }
    if (nn == 0) {
        zx_seterr(err, errlen, "header line %zu has an empty name before ':'", idx + 1);
        return -1;
    }
    if (has_ctl(colon + 1, n - nn - 1)) {
        zx_seterr(err, errlen, "header %.*s: the value holds a control character (CR, LF, ...)",
             (int)(nn < HEADER_SHOW ? nn : HEADER_SHOW), line);
        return -1;
    }
    h->order = idx;
    h->name = malloc(nn + 1);
    h->value = trim_value(colon + 1, n - nn - 1);
    if (!h->name || !h->value) {
        zx_seterr(err, errlen, "out of memory signing the request");
        return -1;
    }
    for (size_t i = 0; i < nn; i++) {
        char c = line[i];
        h->name[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
    }
    h->name[nn] = '\0';
    return 0;
}

static void hdrs_free(hdr *hv, size_t n)
{
    for (size_t i = 0; hv && i < n; i++) {
        free(hv[i].name);
        free(hv[i].value);
    }
    free(hv);
}

/* ---- the canonical request ---------------------------------------------- */

/* What one signing needs besides the canonical request. */
typedef struct sigctx {
    char amzdate[17];         /* 20150830T123600Z */
    char date[9];             /* 20150830 */
    char payload[65];         /* the payload hash line: hex or a literal */
    const char *token;        /* NULL: none */
    zx_buf signed_headers;    /* host;x-amz-date */
    zx_buf scope;             /* 20150830/us-east-1/service/aws4_request */
} sigctx;

/* The headers the signer adds are refused in rq (they would be sent twice). */
static int own_header(const char *name, const sigctx *sc, unsigned flags)
{
    return !strcmp(name, "x-amz-date") || !strcmp(name, "authorization") ||
           (sc->token && !strcmp(name, "x-amz-security-token")) ||
           ((flags & ZX_SIGV4_CONTENT_SHA256) && !strcmp(name, "x-amz-content-sha256"));
}

/* Parses rq's headers, adds the signer's own, appends the canonical
 * headers block and fills sc->signed_headers.  0 or -1 with err. */
static int put_headers(zx_buf *b, const zx_sigv4_request *rq, sigctx *sc, char *err,
                       size_t errlen)
{
    size_t n = 0;
    while (rq->headers && rq->headers[n] && n <= ZX_SIGV4_HEADERS_MAX)
        n++;
    if (n > ZX_SIGV4_HEADERS_MAX) {
        zx_seterr(err, errlen, "the request has over %d header lines", ZX_SIGV4_HEADERS_MAX);
        return -1;
    }
    hdr *hv = calloc(n + ADDED_MAX, sizeof(*hv));
    if (!hv) {
        zx_seterr(err, errlen, "out of memory signing the request");
        return -1;
    }
    size_t nh = 0;
    int rc = 0, host = 0;
    for (size_t i = 0; i < n && rc == 0; i++, nh++) {
        rc = parse_line(rq->headers[i], i, &hv[nh], err, errlen);
        if (rc == 0 && own_header(hv[nh].name, sc, rq->flags)) {
            zx_seterr(err, errlen, "header line %zu: %s is added by the signer; leave it out of the "
                 "request's headers", i + 1, hv[nh].name);
            rc = -1;
        }
        host |= rc == 0 && !strcmp(hv[nh].name, "host");
    }
    if (rc == 0 && !host) {
        zx_seterr(err, errlen, "the request has no Host header (SigV4 signs it)");
        rc = -1;
    }
    const char *add[ADDED_MAX][2] = {
        {"x-amz-date", sc->amzdate},
        {sc->token ? "x-amz-security-token" : NULL, sc->token},
        {rq->flags & ZX_SIGV4_CONTENT_SHA256 ? "x-amz-content-sha256" : NULL, sc->payload},
    };
    for (size_t i = 0; i < ADDED_MAX && rc == 0; i++) {
        if (!add[i][0])
            continue;
        hdr *h = &hv[nh++];
        h->name = strdup(add[i][0]);
        h->value = strdup(add[i][1]);
        h->order = n + i;
        if (!h->name || !h->value) {
            zx_seterr(err, errlen, "out of memory signing the request");
            rc = -1;
        }
    }
    if (rc == 0) {
        qsort(hv, nh, sizeof(*hv), hdr_cmp);
        for (size_t i = 0; i < nh && rc == 0; i++) {
            int same = i && !strcmp(hv[i].name, hv[i - 1].name);
            if (same)
                rc = zx_buf_printf(b, ",%s", hv[i].value);
            else
                rc = zx_buf_printf(b, "%s%s:%s", i ? "\n" : "", hv[i].name, hv[i].value) ||
                     zx_buf_printf(&sc->signed_headers, "%s%s", i ? ";" : "", hv[i].name);
        }
        if (rc == 0)
            rc = zx_buf_put(b, "\n", 1);
        if (rc)
            zx_seterr(err, errlen, "out of memory signing the request");
    }
    hdrs_free(hv, nh);
    return rc ? -1 : 0;
}

/* A bounded word of [A-Za-z0-9-_.] for the method, region, service. */
static int check_word(const char *s, const char *what, char *err, size_t errlen)
{
    size_t n = s ? strnlen(s, NAME_MAX_ + 1) : 0;
    int ok = n >= 1 && n <= NAME_MAX_;
    for (size_t i = 0; ok && i < n; i++)
        ok = unreserved((unsigned char)s[i]) && s[i] != '~';
    if (!ok)
        zx_seterr(err, errlen, "the %s must be 1 to %d letters, digits, '-', '_' or '.'", what,
             NAME_MAX_);
    return ok ? 0 : -1;
}

/* The payload hash line into sc->payload.  0 or -1 with err. */
static int payload_line(const zx_sigv4_request *rq, sigctx *sc, char *err, size_t errlen)
{
    const char *h = rq->payload_hash;
    if (!h) {
        if (!rq->payload && rq->payload_len) {
            zx_seterr(err, errlen, "payload is NULL but payload_len is %zu", rq->payload_len);
            return -1;
        }
        if (zx_aws_sha256_hex(rq->payload, rq->payload_len, sc->payload) < 0) {
            zx_seterr(err, errlen, "out of memory hashing the payload");
            return -1;
        }
        return 0;
    }
    size_t n = strnlen(h, sizeof(sc->payload));
    int hex = n == 64, lit = n < sizeof(sc->payload) &&
        (!strncmp(h, ZX_SIGV4_UNSIGNED, strlen(ZX_SIGV4_UNSIGNED)) || !strncmp(h, "STREAMING-", 10));
    for (size_t i = 0; i < n; i++) {
        hex = hex && zx_hexval((unsigned char)h[i]) >= 0;
        lit = lit && ((h[i] >= 'A' && h[i] <= 'Z') || (h[i] >= '0' && h[i] <= '9') || h[i] == '-');
    }
    if (!hex && !lit) {
        zx_seterr(err, errlen, "payload_hash must be 64 hex digits, " ZX_SIGV4_UNSIGNED " or a "
             "STREAMING-... value");
        return -1;
    }
    for (size_t i = 0; i <= n; i++)
        sc->payload[i] = hex && h[i] >= 'A' && h[i] <= 'F' ? (char)(h[i] - 'A' + 'a') : h[i];
    return 0;
}

/* Checks rq and k, fills sc (dates, payload, token, scope). 0 or -1. */
static int prepare(const zx_sigv4_request *rq, const zx_aws_keys *k, sigctx *sc, char *err,
                   size_t errlen)
{
    if (!rq || !k) {
        zx_seterr(err, errlen, "no request or no keys to sign with");
        return -1;
    }
    if (check_word(rq->method, "method", err, errlen) < 0 ||
        check_word(rq->region, "region", err, errlen) < 0 ||
        check_word(rq->service, "service", err, errlen) < 0)
        return -1;
    size_t an = k->access_key ? strnlen(k->access_key, ACCESS_MAX + 1) : 0;
    int ok = an >= 1 && an <= ACCESS_MAX;
    for (size_t i = 0; ok && i < an; i++)
        ok = k->access_key[i] > 0x20 && k->access_key[i] < 0x7f && k->access_key[i] != '/' &&
             k->access_key[i] != ',';
    if (!ok) {
        zx_seterr(err, errlen, "the access key id must be 1 to %d printable characters without "
             "spaces, '/' or ','", ACCESS_MAX);
        return -1;
    }
    size_t sn = k->secret_key ? strnlen(k->secret_key, SECRET_MAX + 1) : 0;
    if (sn == 0 || sn > SECRET_MAX) {
        zx_seterr(err, errlen, "the secret access key is empty or over %d bytes", SECRET_MAX);
        return -1;
    }
    sc->token = k->session_token && *k->session_token ? k->session_token : NULL;
    if (sc->token) {
        size_t tn = strnlen(sc->token, ZX_SIGV4_LINE_MAX + 1);
        if (tn > ZX_SIGV4_LINE_MAX || has_ctl(sc->token, tn) || memchr(sc->token, '\t', tn)) {
            zx_seterr(err, errlen, "the session token is over %d bytes or holds a control character",
                 ZX_SIGV4_LINE_MAX);
            return -1;
        }
    }
    struct tm tm;
    if (!gmtime_r(&rq->now, &tm) || tm.tm_year + 1900 < 1970 || tm.tm_year + 1900 > 9999) {
        zx_seterr(err, errlen, "the signing time %lld is not a date between 1970 and 9999",
             (long long)rq->now);
        return -1;
    }
    if (strftime(sc->amzdate, sizeof(sc->amzdate), "%Y%m%dT%H%M%SZ", &tm) != 16) {
        zx_seterr(err, errlen, "the signing time %lld does not format as a date", (long long)rq->now);
        return -1;
    }
    memcpy(sc->date, sc->amzdate, 8);
    sc->date[8] = '\0';
    if (payload_line(rq, sc, err, errlen) < 0)
        return -1;
    if (zx_buf_printf(&sc->scope, "%s/%s/%s/aws4_request", sc->date, rq->region,
                      rq->service) < 0) {
        zx_seterr(err, errlen, "out of memory signing the request");
        return -1;
    }
    return 0;
}

/* The canonical request into creq and the string to sign into sts. */
static int build(const zx_sigv4_request *rq, const zx_aws_keys *k, sigctx *sc, zx_buf *creq,
                 zx_buf *sts, char *err, size_t errlen)
{
    if (prepare(rq, k, sc, err, errlen) < 0)
        return -1;
    if (zx_buf_printf(creq, "%s\n", rq->method) < 0 ||
        put_uri(creq, rq->path, rq->flags, err, errlen) < 0 || zx_buf_put(creq, "\n", 1) < 0 ||
        put_query(creq, rq->query, err, errlen) < 0 || zx_buf_put(creq, "\n", 1) < 0 ||
        put_headers(creq, rq, sc, err, errlen) < 0 ||
        zx_buf_printf(creq, "\n%s\n%s", sc->signed_headers.p, sc->payload) < 0) {
        if (err && errlen && !*err)
            zx_seterr(err, errlen, "out of memory signing the request");
        return -1;
    }
    char h[65];
    if (zx_aws_sha256_hex(creq->p, creq->len, h) < 0 ||
        zx_buf_printf(sts, "AWS4-HMAC-SHA256\n%s\n%s\n%s", sc->amzdate, sc->scope.p, h) < 0) {
        zx_seterr(err, errlen, "out of memory signing the request");
        return -1;
    }
    return 0;
}

static void sigctx_free(sigctx *sc)
{
    zx_buf_free(&sc->signed_headers);
    zx_buf_free(&sc->scope);
}

int zx_sigv4_canonical(const zx_sigv4_request *rq, const zx_aws_keys *k,
                       char **creq, char **sts, char *err, size_t errlen)
{
    if (err && errlen)
        *err = '\0';
    sigctx sc = {0};
    zx_buf c = {0}, s = {0};
    int rc = build(rq, k, &sc, &c, &s, err, errlen);
    sigctx_free(&sc);
    if (rc < 0) {
        zx_buf_free(&c);
        zx_buf_free(&s);
    }
    *creq = c.p;
    *sts = s.p;
    return rc;
}

/* ---- the signature ------------------------------------------------------ */

static int hmac(const void *key, size_t keylen, const char *msg, unsigned char out[SHA_LEN])
{
    unsigned int n = 0;
    return HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)msg, strlen(msg), out,
                &n) && n == SHA_LEN ? 0 : -1;
}

/* The signature of sts under the key chain of secret, as hex into sig. */
static int signature(const char *secret, const sigctx *sc, const zx_sigv4_request *rq,
                     const char *sts, char sig[65])
{
    char ksecret[4 + SECRET_MAX + 1];
    unsigned char a[SHA_LEN], b[SHA_LEN];
    size_t sn = strlen(secret);   /* checked <= SECRET_MAX by prepare() */
    memcpy(ksecret, "AWS4", 4);
    memcpy(ksecret + 4, secret, sn);
    int rc = hmac(ksecret, 4 + sn, sc->date, a) < 0 || hmac(a, SHA_LEN, rq->region, b) < 0 ||
             hmac(b, SHA_LEN, rq->service, a) < 0 || hmac(a, SHA_LEN, "aws4_request", b) < 0 ||
             hmac(b, SHA_LEN, sts, a) < 0 ? -1 : 0;
    if (rc == 0)
        to_hex(a, SHA_LEN, sig);
    OPENSSL_cleanse(ksecret, sizeof(ksecret));
    OPENSSL_cleanse(a, sizeof(a));
    OPENSSL_cleanse(b, sizeof(b));
    return rc;
}

void zx_sigv4_signed_free(zx_sigv4_signed *out)
{
    if (!out)
        return;
    for (size_t i = 0; i < sizeof(out->lines) / sizeof(out->lines[0]); i++) {
        free(out->lines[i]);
        out->lines[i] = NULL;
    }
}

/* malloc'd printf, NULL out of memory. */
static char *dup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dup_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = n < 0 ? NULL : malloc((size_t)n + 1);
    if (p) {
        va_start(ap, fmt);
        vsnprintf(p, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return p;
}

int zx_sigv4_sign(const zx_sigv4_request *rq, const zx_aws_keys *k,
                  zx_sigv4_signed *out, char *err, size_t errlen)
{
    if (err && errlen)
        *err = '\0';
    memset(out, 0, sizeof(*out));
    sigctx sc = {0};
    zx_buf c = {0}, s = {0};
    int rc = build(rq, k, &sc, &c, &s, err, errlen);
    if (rc == 0 && signature(k->secret_key, &sc, rq, s.p, out->signature) < 0) {
        zx_seterr(err, errlen, "libcrypto failed computing the signature (out of memory?)");
        rc = -1;
    }
    if (rc == 0) {
        size_t i = 0;
        out->lines[i++] = dup_printf("Authorization: AWS4-HMAC-SHA256 Credential=%s/%s, "
                                     "SignedHeaders=%s, Signature=%s", k->access_key,
                                     sc.scope.p, sc.signed_headers.p, out->signature);
        out->lines[i++] = dup_printf("X-Amz-Date: %s", sc.amzdate);
        if (rq->flags & ZX_SIGV4_CONTENT_SHA256)
            out->lines[i++] = dup_printf("x-amz-content-sha256: %s", sc.payload);
        if (sc.token)
            out->lines[i++] = dup_printf("X-Amz-Security-Token: %s", sc.token);
        for (size_t j = 0; j < i; j++)
            if (!out->lines[j])
                rc = -1;
        if (rc < 0) {
            zx_sigv4_signed_free(out);
            zx_seterr(err, errlen, "out of memory signing the request");
        }
    }
    if (rc < 0)
        memset(out->signature, 0, sizeof(out->signature));
    sigctx_free(&sc);
    zx_buf_free(&c);
    zx_buf_free(&s);
    return rc;
}
