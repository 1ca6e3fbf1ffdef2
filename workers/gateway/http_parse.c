/* http_parse.c - parsing of HTTP/1.1 request heads, and request accessors.
 *
 * Splits the request line and header lines in place (into the request's own
 * copy of the head), applies the framing checks of http.h step 1 (version,
 * Host, Content-Length, Transfer-Encoding, Connection, headers that must not
 * repeat), reads the codings of every Content-Encoding and every Expect
 * header for step 3, and answers the accessors (method, path, query
 * parameters, headers, body).
 *
 * Must never: read from or write to a socket, reply, allocate anything but
 * the header index (one entry per head line) and decoded query values, keep
 * pointers into the connection's input buffer, accept a number that does
 * not fit (it is 400, never wrapped or clamped), or look only at the first
 * of several headers whose repetition matters.
 */
#include "http_int.h"

#include "common/hex.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

const char *zx_http_method(const zx_http_req *r) { return r->method; }
const char *zx_http_path(const zx_http_req *r) { return r->path; }
const char *zx_http_query(const zx_http_req *r) { return r->query; }
const char *zx_http_peer(const zx_http_req *r) { return r->peer; }
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
                   (hi = zx_hexval((unsigned char)s[i + 1])) >= 0 &&
                   (lo = zx_hexval((unsigned char)s[i + 2])) >= 0 && (hi | lo) != 0) {
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

/* "HTTP/1.0" and "HTTP/1.1" only: another well-formed HTTP/d.d is 505. */
static int version_ok(const char *v, size_t n, int *http10, const char **why)
{
    if (n != 8 || memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' ||
        v[6] != '.' || v[7] < '0' || v[7] > '9') {
        *why = "malformed request line";
        return 400;
    }
    if (v[5] != '1' || (v[7] != '0' && v[7] != '1')) {
        *why = "only HTTP/1.0 and HTTP/1.1 are supported";
        return 505;
    }
    *http10 = v[7] == '0';
    return 0;
}

/* Content-Length: 1*DIGIT that fits in 64 bits (leading zeros allowed).
 * 0 with *out, or -1. */
static int parse_content_length(const char *v, uint64_t *out)
{
    uint64_t cl = 0;
    if (*v == '\0')
        return -1;
    for (const char *d = v; *d; d++) {
        unsigned dig;
        if (*d < '0' || *d > '9')
            return -1;
        dig = (unsigned)(*d - '0');
        if (cl > (UINT64_MAX - dig) / 10)
            return -1; /* cl * 10 + dig would not fit */
        cl = cl * 10 + dig;
    }
    *out = cl;
    return 0;
}

/* Headers a request may carry at most once: a second one is 400, so no
 * part of the server or the handler can read a different one than another
 * part (or than a proxy in front) did. */
static const char *const single_headers[] = {
    "Host", "Content-Length", "Authorization", "Content-Type", "Idempotency-Key",
    "webhook-id", "webhook-timestamp", "webhook-signature", NULL,
};

/* Calls fn for each comma-separated element (spaces trimmed, empty ones
 * included) of every header named name; stops at the first nonzero return
 * and returns it, else 0. */
static int each_element(const zx_http_req *r, const char *name,
                        int (*fn)(const char *el, size_t n, void *arg), void *arg)
{
    for (size_t i = 0; i < r->nhdrs; i++) {
        const char *v = r->hdrs[i].value;
        if (strcasecmp(r->hdrs[i].name, name) != 0)
            continue;
        for (;;) {
            size_t n = strcspn(v, ","), m = n;
            const char *el = v + strspn(v, " \t");
            int rc;
            m -= (size_t)(el - v);
            while (m > 0 && (el[m - 1] == ' ' || el[m - 1] == '\t'))
                m--;
            if ((rc = fn(el, m, arg)) != 0)
                return rc;
            if (v[n] != ',')
                break;
            v += n + 1;
        }
    }
    return 0;
}

static int is_word(const char *el, size_t n, const char *w)
{
    return strlen(w) == n && strncasecmp(el, w, n) == 0;
}

static int coding_el(const char *el, size_t n, void *arg)
{
    int *ngzip = arg;
    if (is_word(el, n, "identity"))
        return 0;
    if (is_word(el, n, "gzip") || is_word(el, n, "x-gzip"))
        return ++*ngzip > 1 ? -1 : 0; /* stacked gzip: not decoded */
    return -1; /* unknown or empty */
}

int zx_http_content_coding(const zx_http_req *r)
{
    int ngzip = 0;
    if (each_element(r, "Content-Encoding", coding_el, &ngzip) != 0)
        return -1;
    return ngzip;
}

static int expect_el(const char *el, size_t n, void *arg)
{
    int *seen = arg;
    *seen = 1;
    return is_word(el, n, "100-continue") ? 0 : -1;
}

int zx_http_expect(const zx_http_req *r)
{
    int seen = 0;
    if (each_element(r, "Expect", expect_el, &seen) != 0)
        return -1;
    return seen;
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
int zx_http_parse_head(zx_http_req *r, size_t len, const char **why)
{
    char *p = r->head, *end = r->head + len;
    size_t cap = 0, nhost = 0, ncl = 0, nte = 0, nsingle[8] = {0};
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
        for (size_t k = 0; single_headers[k]; k++) {
            if (strcasecmp(p, single_headers[k]) == 0 && ++nsingle[k] > 1) {
                *why = k == 0 ? "more than one Host header"
                       : k == 1 ? "more than one Content-Length header"
                                : "a header that may appear once is repeated";
                return 400;
            }
        }
        if (strcasecmp(p, "Host") == 0) {
            nhost++;
        } else if (strcasecmp(p, "Content-Length") == 0) {
            ncl++;
            if (parse_content_length(v, &r->content_length) != 0) {
                *why = *v && strspn(v, "0123456789") == strlen(v)
                           ? "Content-Length does not fit in 64 bits"
                           : "invalid Content-Length";
                return 400;
            }
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
