/*
 * http_client.c — zx's one HTTP client on libcurl (http_client.h).
 */
#include "common/http_client.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

struct zx_http_client {
    CURL *curl;
    long timeout_ms, backoff_ms, backoff_max_ms, total_ms;
    size_t max_response;
    int max_attempts, insecure, no_proxy;
    char *ca_file, *client_cert, *client_key, *key_password;
    char *user, *pass, *agent;
    unsigned long requests;
    uint64_t rng;             /* jitter (xorshift64), not for secrets */
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleep ms milliseconds, through signals. */
static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void wipe_free(char *s)
{
    if (!s)
        return;
    for (volatile char *p = s; *p; p++)
        *p = 0;
    free(s);
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* strdup of s, or NULL for NULL; *bad set when out of memory. */
static char *dup_or_null(const char *s, int *bad)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *bad = 1;
    return d;
}

zx_http_client *zx_http_client_new(const zx_http_opts *o, char *err, size_t errlen)
{
    static const zx_http_opts none;
    if (!o)
        o = &none;
    pthread_once(&curl_once, curl_init_once);
    zx_http_client *c = calloc(1, sizeof(*c));
    if (!c) {
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    int bad = 0;
    c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
    c->max_response = o->max_response ? o->max_response : (size_t)1 << 20;
    c->max_attempts = o->max_attempts > 0 ? o->max_attempts : 3;
    c->backoff_ms = o->backoff_ms > 0 ? o->backoff_ms : 200;
    c->backoff_max_ms = o->backoff_max_ms > 0 ? o->backoff_max_ms : 5000;
    c->total_ms = o->total_ms > 0 ? o->total_ms : c->max_attempts * c->timeout_ms;
    c->insecure = o->insecure != 0;
    c->no_proxy = o->no_proxy != 0;
    c->ca_file = dup_or_null(o->ca_file, &bad);
    c->client_cert = dup_or_null(o->client_cert, &bad);
    c->client_key = dup_or_null(o->client_key, &bad);
    c->key_password = dup_or_null(o->client_key_password, &bad);
    c->user = dup_or_null(o->username, &bad);
    c->pass = dup_or_null(o->username ? (o->password ? o->password : "") : NULL, &bad);
    c->agent = dup_or_null(o->user_agent ? o->user_agent : "zx", &bad);
    c->rng = (uint64_t)mono_ms() * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() ^
             (uint64_t)(uintptr_t)c;
    if (!c->rng)
        c->rng = 1;
    c->curl = curl_easy_init();
    if (bad || !c->curl) {
        zx_seterr(err, errlen, "out of memory");
        zx_http_client_free(c);
        return NULL;
    }
    return c;
}

void zx_http_client_free(zx_http_client *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    free(c->ca_file);
    free(c->client_cert);
    free(c->client_key);
    wipe_free(c->key_password);
    free(c->user);
    wipe_free(c->pass);
    free(c->agent);
    free(c);
}

unsigned long zx_http_requests(const zx_http_client *c)
{
    return c ? c->requests : 0;
}

void zx_http_response_free(zx_http_response *resp)
{
    if (!resp)
        return;
    free(resp->body);
    for (int i = 0; i < ZX_HTTP_CAPTURE_MAX; i++)
        free(resp->header[i]);
    memset(resp, 0, sizeof(*resp));
}

/* The response headers being captured during one attempt. */
typedef struct capture {
    const char *const *names;
    int n;
    char *val[ZX_HTTP_CAPTURE_MAX];
    int oom;
} capture;

static void capture_clear(capture *k)
{
    for (int i = 0; i < k->n; i++) {
        free(k->val[i]);
        k->val[i] = NULL;
    }
}

static int lower(int ch)
{
    return ch >= 'A' && ch <= 'Z' ? ch + 32 : ch;
}

/* One header line of the answer (libcurl gives the status line and the
 * lines of interim answers such as 100 Continue too: a status line starts
 * the capture over, so the last answer's headers are the ones kept). */
static size_t on_header(char *line, size_t size, size_t nmemb, void *arg)
{
    capture *k = arg;
    size_t len = size * nmemb;
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        capture_clear(k);
        return len;
    }
    const char *colon = memchr(line, ':', len);
    if (!colon)
        return len;
    size_t nlen = (size_t)(colon - line);
    for (int i = 0; i < k->n; i++) {
        const char *want = k->names[i];
        if (k->val[i] || strlen(want) != nlen)
            continue;
        size_t j = 0;
        while (j < nlen && lower((unsigned char)want[j]) == lower((unsigned char)line[j]))
            j++;
        if (j != nlen)
            continue;
        const char *v = colon + 1, *e = line + len;
        while (v < e && (*v == ' ' || *v == '\t'))
            v++;
        while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'))
            e--;
        size_t vlen = (size_t)(e - v);
        if (vlen > ZX_HTTP_CAPTURE_VALUE)
            vlen = ZX_HTTP_CAPTURE_VALUE;
        k->val[i] = malloc(vlen + 1);
        if (!k->val[i]) {
            k->oom = 1;
            return 0;
        }
        memcpy(k->val[i], v, vlen);
        k->val[i][vlen] = '\0';
        break;
    }
    return len;
}

/* A response body being received, bounded. */
typedef struct sink {
    char *p;
    size_t n, cap, max;
    int too_big, oom;
} sink;

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
    sink *b = arg;
    size_t k = size * nmemb;
    if (k > b->max - b->n) {
        b->too_big = 1;
        return 0; /* ends the transfer */
    }
    if (b->n + k + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + k + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = 1;
            return 0;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, k);
    b->n += k;
    b->p[b->n] = '\0';
    return k;
}

/* A transfer error that another attempt cannot mend. */
static int final_error(CURLcode rc)
{
    switch (rc) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_OUT_OF_MEMORY:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_LOGIN_DENIED:
    case CURLE_FILESIZE_EXCEEDED:
    case CURLE_BAD_FUNCTION_ARGUMENT:
        return 1;
    default:
        return 0;
    }
}

/* The wait before attempt n+1 (n >= 1): backoff * 2^(n-1), at most
 * backoff_max, with jitter (half of it fixed, half random); at least the
 * server's Retry-After (seconds). */
static long wait_ms(zx_http_client *c, int n, long retry_after_s)
{
    long w = c->backoff_ms;
    for (int i = 1; i < n && w < c->backoff_max_ms; i++)
        w *= 2;
    if (w > c->backoff_max_ms)
        w = c->backoff_max_ms;
    c->rng ^= c->rng << 13;
    c->rng ^= c->rng >> 7;
    c->rng ^= c->rng << 17;
    w = w / 2 + (long)(c->rng % (uint64_t)(w / 2 + 1));
    if (retry_after_s > 0 && retry_after_s < 3600 && retry_after_s * 1000 > w)
        w = retry_after_s * 1000;
    return w;
}

/* One attempt within ms milliseconds.  Sets *status (0: no answer), the
 * body in b, curl's message in ebuf; returns libcurl's code. */
static CURLcode attempt(zx_http_client *c, const char *method, const char *url,
                        struct curl_slist *hdrs, const void *body, size_t body_len, long ms,
                        sink *b, capture *k, long *status, long *retry_after, char *ebuf)
{
    CURL *h = c->curl;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (c->no_proxy)
        curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms);
    /* the bound is on the body read; a HEAD answer has none, and its
     * Content-Length (an S3 object's size) is no body to bound */
    if (strcmp(method, "HEAD") != 0)
        curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)b->max);
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->agent);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    if (k->n) {
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, k);
    }
    if (hdrs)
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    if (strcmp(method, "GET") != 0) {
        if (strcmp(method, "HEAD") == 0)
            curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        else
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    }
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        if (strcmp(method, "POST") != 0)
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    }
    if (c->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    if (c->client_cert)
        curl_easy_setopt(h, CURLOPT_SSLCERT, c->client_cert);
    if (c->client_key)
        curl_easy_setopt(h, CURLOPT_SSLKEY, c->client_key);
    if (c->key_password)
        curl_easy_setopt(h, CURLOPT_KEYPASSWD, c->key_password);
    if (c->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (c->user) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, c->user);
        curl_easy_setopt(h, CURLOPT_PASSWORD, c->pass);
    }
    c->requests++;
    CURLcode rc = curl_easy_perform(h);
    *status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_off_t ra = 0;
    *retry_after = curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK ? (long)ra : 0;
    /* the handle keeps no pointer to the caller's frames or secrets */
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(h, CURLOPT_PASSWORD, "");
    curl_easy_setopt(h, CURLOPT_KEYPASSWD, "");
    return rc;
}

int zx_http_request(zx_http_client *c, const char *method, const char *url,
                    const char *const *headers, const void *body, size_t body_len,
                    zx_http_response *resp, char *err, size_t errlen)
{
    return zx_http_request_ex(c, method, url, headers, body, body_len, NULL, resp, err,
                              errlen);
}

int zx_http_request_ex(zx_http_client *c, const char *method, const char *url,
                       const char *const *headers, const void *body, size_t body_len,
                       const zx_http_extra *x, zx_http_response *resp, char *err,
                       size_t errlen)
{
    memset(resp, 0, sizeof(*resp));
    capture k = { .names = x ? x->capture : NULL };
    while (k.names && k.names[k.n]) {
        if (++k.n > ZX_HTTP_CAPTURE_MAX) {
            zx_seterr(err, errlen, "more than %d response headers to capture",
                      ZX_HTTP_CAPTURE_MAX);
            return ZX_HTTP_REFUSED;
        }
    }
    size_t max = x && x->max_response ? x->max_response : c ? c->max_response : 0;
    if (!c || !method || !url ||
        (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)) {
        zx_seterr(err, errlen, "not an http:// or https:// URL");
        return ZX_HTTP_REFUSED;
    }
    struct curl_slist *hdrs = NULL;
    for (size_t i = 0; headers && headers[i]; i++) {
        struct curl_slist *n = curl_slist_append(hdrs, headers[i]);
        if (!n) {
            curl_slist_free_all(hdrs);
            zx_seterr(err, errlen, "out of memory");
            return ZX_HTTP_REFUSED;
        }
        hdrs = n;
    }
    int64_t start = mono_ms(), until = start + c->total_ms;
    int rc = ZX_HTTP_TRANSFER;
    char why[CURL_ERROR_SIZE + 64] = "";
    for (;;) {
        sink b = { .max = max };
        char ebuf[CURL_ERROR_SIZE] = "";
        long status = 0, retry_after = 0;
        int64_t left = until - mono_ms();
        long ms = left < c->timeout_ms ? (long)left : c->timeout_ms;
        if (ms < 1)
            ms = 1;
        capture_clear(&k);
        CURLcode cr = attempt(c, method, url, hdrs, body, body_len, ms, &b, &k, &status,
                              &retry_after, ebuf);
        resp->attempts++;
        free(resp->body);
        resp->body = b.p;
        resp->len = b.n;
        resp->status = status;
        int again;
        if (b.too_big || cr == CURLE_FILESIZE_EXCEEDED) {
            snprintf(why, sizeof(why), "the response is larger than %zu bytes", max);
            rc = ZX_HTTP_TOO_BIG;
            again = 0;
        } else if (b.oom || k.oom) {
            snprintf(why, sizeof(why), "out of memory");
            rc = ZX_HTTP_REFUSED;
            again = 0;
        } else if (cr != CURLE_OK) {
            snprintf(why, sizeof(why), "%s", ebuf[0] ? ebuf : curl_easy_strerror(cr));
            rc = final_error(cr) ? ZX_HTTP_REFUSED : ZX_HTTP_TRANSFER;
            again = rc == ZX_HTTP_TRANSFER;
        } else {
            rc = 0;
            again = status == 429 || (status >= 500 && status <= 599);
        }
        if (!again || resp->attempts >= c->max_attempts)
            break;
        long w = wait_ms(c, resp->attempts, status == 429 || status == 503 ? retry_after : 0);
        if (mono_ms() + w >= until)
            break;
        sleep_ms(w);
    }
    curl_slist_free_all(hdrs);
    for (int i = 0; i < k.n; i++)
        resp->header[i] = k.val[i];
    if (rc != 0) {
        if (rc == ZX_HTTP_TRANSFER && resp->attempts > 1)
            zx_seterr(err, errlen, "%s (%d attempts in %.1f s)", why, resp->attempts,
                    (double)(mono_ms() - start) / 1000.0);
        else
            zx_seterr(err, errlen, "%s", why);
    }
    return rc;
}
