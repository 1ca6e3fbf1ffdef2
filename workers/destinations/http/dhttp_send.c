/*
 * dhttp_send.c — batches to an HTTP API with libcurl's multi interface
 * (dhttp_send.h): concurrency, rate, retries with backoff, bounded answers.
 */
#include "workers/destinations/http/dhttp_send.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/util.h"
#include "workers/destinations/http/dhttp_results.h"

struct zx_dhttp_sender {
    CURLM *multi;
    zx_dhttp_cfg cfg;             /* strings below are the sender's */
    char *base_url;
    char *ca_file;
    char **lines;                 /* "Name: value", nheaders of them */
    char **values;                /* the values, for redaction */
    size_t nheaders;
    int64_t next_start;           /* zx_mono_ms: the rate's next slot */
    unsigned long requests;
    uint64_t seed;
};

enum { WAITING, RUNNING, DONE };

typedef struct slot {
    zx_dhttp_batch *b;
    CURL *h;
    struct curl_slist *hl;
    zx_buf resp;
    int too_big;
    long retry_after_ms;          /* -1: none in this answer */
    int state;
    unsigned sends;
    int64_t not_before;
    size_t max;
} slot;

static void wipe_free(char *s)
{
    if (s)
        explicit_bzero(s, strlen(s));
    free(s);
}

zx_dhttp_sender *zx_dhttp_sender_new(const zx_dhttp_cfg *cfg, char *err, size_t errlen)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    zx_dhttp_sender *s = calloc(1, sizeof(*s));
    if (!s)
        goto oom;
    s->cfg = *cfg;
    s->multi = curl_multi_init();
    s->base_url = strdup(cfg->base_url ? cfg->base_url : "");
    s->ca_file = cfg->ca_file ? strdup(cfg->ca_file) : NULL;
    s->lines = calloc(cfg->nheaders + 1, sizeof(char *));
    s->values = calloc(cfg->nheaders + 1, sizeof(char *));
    if (!s->multi || !s->base_url || (cfg->ca_file && !s->ca_file) || !s->lines || !s->values)
        goto oom;
    s->nheaders = cfg->nheaders;
    for (size_t i = 0; i < cfg->nheaders; i++) {
        const char *v = cfg->hdr_values[i] ? cfg->hdr_values[i] : "";
        if (asprintf(&s->lines[i], "%s: %s", cfg->hdr_names[i], v) < 0) {
            s->lines[i] = NULL;
            goto oom;
        }
        if (!(s->values[i] = strdup(v)))
            goto oom;
    }
    size_t bl = strlen(s->base_url);
    while (bl && s->base_url[bl - 1] == '/')
        s->base_url[--bl] = 0;
    curl_multi_setopt(s->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)cfg->concurrency);
    s->seed = (uint64_t)zx_mono_ms() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
    return s;
oom:
    zx_dhttp_sender_free(s);
    zx_seterr(err, errlen, "out of memory, or libcurl did not start");
    return NULL;
}

void zx_dhttp_sender_free(zx_dhttp_sender *s)
{
    if (!s)
        return;
    if (s->multi)
        curl_multi_cleanup(s->multi);
    for (size_t i = 0; i < s->cfg.nheaders; i++) {
        wipe_free(s->lines ? s->lines[i] : NULL);
        wipe_free(s->values ? s->values[i] : NULL);
    }
    free(s->lines);
    free(s->values);
    free(s->base_url);
    free(s->ca_file);
    free(s);
}

unsigned long zx_dhttp_requests(const zx_dhttp_sender *s)
{
    return s ? s->requests : 0;
}

void zx_dhttp_batch_clear(zx_dhttp_batch *b)
{
    if (!b)
        return;
    free(b->resp);
    b->resp = NULL;
    b->resp_len = 0;
}

long zx_dhttp_backoff(unsigned attempt, long retry_after_ms, long max_ms, double r)
{
    long w = 500;
    for (unsigned i = 1; i < attempt && w < max_ms; i++)
        w *= 2;
    if (w > max_ms)
        w = max_ms;
    if (r < 0)
        r = 0;
    if (r > 1)
        r = 1;
    w = w / 2 + (long)((double)(w - w / 2) * r);
    if (retry_after_ms > w)
        w = retry_after_ms;
    return w > max_ms ? max_ms : w;
}

long zx_dhttp_retry_after(const char *v, long long now_s)
{
    while (*v == ' ' || *v == '\t')
        v++;
    if (*v >= '0' && *v <= '9') {
        long long sec = 0;
        const char *p = v;
        for (; *p >= '0' && *p <= '9'; p++)
            if (sec < 100000000)
                sec = sec * 10 + (*p - '0');
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (*p)
            return -1;
        return sec > 100000000 ? 100000000000L : (long)(sec * 1000);
    }
    if (!*v)
        return -1;
    time_t t = curl_getdate(v, NULL);
    if (t == (time_t)-1)
        return -1;
    long long d = (long long)t - now_s;
    if (d < 0)
        d = 0;
    if (d > 100000000)
        d = 100000000;
    return (long)(d * 1000);
}

static double rnd(zx_dhttp_sender *s)
{
    s->seed ^= s->seed << 13;
    s->seed ^= s->seed >> 7;
    s->seed ^= s->seed << 17;
    return (double)(s->seed >> 11) / 9007199254740992.0;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    slot *sl = arg;
    size_t len = size * n;
    if (sl->resp.len + len > sl->max) {
        sl->too_big = 1;
        return 0;
    }
    return zx_buf_put(&sl->resp, p, len) < 0 ? 0 : len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    slot *sl = arg;
    size_t len = size * n;
    if (len > 12 && len < 200 && !strncasecmp(p, "Retry-After:", 12)) {
        char v[200];
        memcpy(v, p + 12, len - 12);
        v[len - 12] = 0;
        sl->retry_after_ms = zx_dhttp_retry_after(v, (long long)time(NULL));
    } else if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
        sl->retry_after_ms = -1;   /* a new answer (after a 100 Continue) */
    }
    return len;
}

/* Replace every header value (4 bytes or more) in msg by "***". */
static void redact(const zx_dhttp_sender *s, char *msg)
{
    for (size_t i = 0; i < s->nheaders; i++) {
        const char *v = s->values[i];
        size_t vl = strlen(v);
        if (vl < 4)
            continue;
        char *at;
        while ((at = strstr(msg, v)) != NULL) {
            memcpy(at, "***", 3);
            memmove(at + 3, at + vl, strlen(at + vl) + 1);
        }
    }
}

static void drop_handle(zx_dhttp_sender *s, slot *sl)
{
    if (sl->h) {
        curl_multi_remove_handle(s->multi, sl->h);
        curl_easy_cleanup(sl->h);
        sl->h = NULL;
    }
    curl_slist_free_all(sl->hl);
    sl->hl = NULL;
}

/* Start one send of sl's batch.  0 or -1 with err. */
static int start(zx_dhttp_sender *s, slot *sl, char *err, size_t errlen)
{
    zx_dhttp_batch *b = sl->b;
    char *url = NULL, *ct = NULL, *idem = NULL;
    struct curl_slist *hl = NULL;
    int rc = -1;
    zx_buf_reset(&sl->resp);
    sl->too_big = 0;
    sl->retry_after_ms = -1;
    if (asprintf(&url, "%s%s", s->base_url, b->path) < 0)
        url = NULL;
    if (asprintf(&ct, "Content-Type: %s", b->content_type) < 0)
        ct = NULL;
    if (asprintf(&idem, "Idempotency-Key: %s", b->idem) < 0)
        idem = NULL;
    CURL *h = curl_easy_init();
    if (!url || !ct || !idem || !h)
        goto out;
    for (size_t i = 0; i < s->nheaders; i++) {
        struct curl_slist *t = curl_slist_append(hl, s->lines[i]);
        if (!t)
            goto out;
        hl = t;
    }
    const char *fixed[] = {ct, idem, "Expect:", "Accept: application/json"};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        struct curl_slist *t = curl_slist_append(hl, fixed[i]);
        if (!t)
            goto out;
        hl = t;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, b->method);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, b->body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)b->len);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, s->cfg.timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, s->cfg.timeout_ms);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "zx");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, sl);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, sl);
    curl_easy_setopt(h, CURLOPT_PRIVATE, sl);
    if (s->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, s->ca_file);
    if (s->cfg.insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (curl_multi_add_handle(s->multi, h) != CURLM_OK)
        goto out;
    sl->h = h;
    sl->hl = hl;
    h = NULL;
    hl = NULL;
    sl->state = RUNNING;
    sl->sends++;
    s->requests++;
    rc = 0;
out:
    if (rc < 0)
        zx_seterr(err, errlen, "%s %s: cannot start the request (out of memory)",
                  b->method, b->path);
    if (h)
        curl_easy_cleanup(h);
    curl_slist_free_all(hl);
    free(url);
    free(ct);
    free(idem);
    return rc;
}

static int retryable_status(long st)
{
    return st == 408 || st == 409 || st == 425 || st == 429 || (st >= 500 && st <= 599);
}

static int retryable_curl(CURLcode c)
{
    switch (c) {
    case CURLE_COULDNT_CONNECT: case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR: case CURLE_RECV_ERROR: case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE: case CURLE_SSL_CONNECT_ERROR: case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return 1;
    default:
        return 0;
    }
}

/* A send of sl's batch ended with code c.  Returns 0 (done, or to be sent
 * again), or -1 with err (given up on). */
static int finished(zx_dhttp_sender *s, slot *sl, CURLcode c, zx_dest_stats *st, char *err,
                    size_t errlen)
{
    zx_dhttp_batch *b = sl->b;
    long code = 0;
    curl_easy_getinfo(sl->h, CURLINFO_RESPONSE_CODE, &code);
    drop_handle(s, sl);
    b->status = code;
    char why[400];
    if (c == CURLE_OK && code >= 200 && code <= 299) {
        free(b->resp);
        b->resp = sl->resp.p ? sl->resp.p : strdup("");
        b->resp_len = sl->resp.len;
        zx_buf_init(&sl->resp);
        b->done = 1;
        sl->state = DONE;
        return 0;
    }
    int again;
    if (sl->too_big) {
        again = 0;
        snprintf(why, sizeof(why), "the answer from %s %s is larger than %zu bytes "
                 "(max_response)", b->method, b->path, sl->max);
    } else if (c == CURLE_OK) {
        again = retryable_status(code);
        char text[260];
        zx_dhttp_sanitize(sl->resp.p, sl->resp.len, 200, text, sizeof(text));
        snprintf(why, sizeof(why), "HTTP %ld from %s %s%s%s", code, b->method, b->path,
                 text[0] ? ": " : "", text);
    } else {
        again = retryable_curl(c);
        snprintf(why, sizeof(why), "%s from %s %s", curl_easy_strerror(c), b->method, b->path);
    }
    redact(s, why);
    zx_dest_note_error(st, why);
    sl->state = WAITING;
    if (again && sl->sends <= s->cfg.max_retries) {
        st->batches_retried++;
        long ra = sl->retry_after_ms;
        sl->not_before = zx_mono_ms() + zx_dhttp_backoff(sl->sends, ra, s->cfg.max_backoff_ms,
                                                         rnd(s));
        return 0;
    }
    st->batches_failed++;
    if (again)
        return zx_seterr(err, errlen, "%s (%u sends; the API kept failing: the run is "
                         "tried again at its next time)", why, sl->sends);
    return zx_seterr(err, errlen, "%s (not retried: the API refused the batch)", why);
}

int zx_dhttp_send_all(zx_dhttp_sender *s, zx_dhttp_batch *b, size_t n, zx_dest_stats *st,
                      char *err, size_t errlen)
{
    slot *sl = calloc(n ? n : 1, sizeof(*sl));
    if (!sl)
        return zx_seterr(err, errlen, "out of memory");
    for (size_t i = 0; i < n; i++) {
        sl[i].b = &b[i];
        sl[i].max = s->cfg.max_response;
        sl[i].retry_after_ms = -1;
        b[i].done = 0;
        b[i].status = 0;
    }
    size_t left = n, running = 0;
    int rc = 0;
    double interval = s->cfg.rate_per_s > 0 ? 1000.0 / s->cfg.rate_per_s : 0;
    while (left && rc == 0) {
        if (s->cfg.stopping && s->cfg.stopping(s->cfg.stop_ctx)) {
            /* a batch in its backoff, or waiting for its turn: given up */
            rc = zx_seterr(err, errlen, "stopped while sending (zxd is stopping or the run "
                           "was cancelled); the next run sends the rows again");
            break;
        }
        int64_t now = zx_mono_ms();
        int64_t wait = 200;
        for (size_t i = 0; i < n && rc == 0; i++) {
            if (sl[i].state != WAITING)
                continue;
            if (sl[i].not_before > now) {
                if (sl[i].not_before - now < wait)
                    wait = sl[i].not_before - now;
                continue;
            }
            if (running >= s->cfg.concurrency)
                break;
            if (interval > 0 && now < s->next_start) {
                if (s->next_start - now < wait)
                    wait = s->next_start - now;
                break;
            }
            if (start(s, &sl[i], err, errlen) < 0) {
                rc = -1;
                break;
            }
            running++;
            if (interval > 0) {
                int64_t base = s->next_start > now ? s->next_start : now;
                s->next_start = base + (int64_t)(interval + 0.5);
            }
        }
        if (rc < 0)
            break;
        int still = 0;
        curl_multi_perform(s->multi, &still);
        CURLMsg *m;
        int q;
        while (rc == 0 && (m = curl_multi_info_read(s->multi, &q)) != NULL) {
            if (m->msg != CURLMSG_DONE)
                continue;
            slot *x = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            if (!x)
                continue;
            running--;
            if (finished(s, x, m->data.result, st, err, errlen) < 0)
                rc = -1;
            else if (x->state == DONE)
                left--;
        }
        if (rc < 0 || !left)
            break;
        if (wait < 1)
            wait = 1;
        if (running)
            curl_multi_poll(s->multi, NULL, 0, (int)wait, NULL);
        else
            usleep((useconds_t)wait * 1000);
    }
    for (size_t i = 0; i < n; i++) {
        drop_handle(s, &sl[i]);
        zx_buf_free(&sl[i].resp);
    }
    free(sl);
    return rc;
}
