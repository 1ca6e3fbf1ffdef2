/*
 * gateway_api.c — the REST API of reverse syncs, for orchestrators and
 * agents (docs/architecture.md §2.3, §8.4):
 *
 *   POST /api/syncs/<name>/runs   start a run (body: empty, or a JSON
 *                                 object {"full": true}); 202 {"run": ID,
 *                                 "state": ...}; an agent's run waits in
 *                                 "awaiting_approval"
 *   GET  /api/runs/<id>           the run's record: 200 {...}
 *   GET  /api/lineage             the lineage of the configuration in force
 *                                 and the run history (conf/lineage.h; JSON,
 *                                 or ?format=text|dot|mermaid; ?name=N
 *                                 [&direction=upstream|downstream] keeps
 *                                 what is connected to N), handed over in a
 *                                 memfd: 200 {"nodes": [...], "edges": [...]}
 *   GET  /api/status              what `zxctl status --json` prints
 *                                 (supervisor/status.c), handed over in a
 *                                 memfd: 200 {"pipelines": [...], ...}
 *   GET  /metrics                 zxd's metrics, Prometheus text format
 *                                 0.0.4, made by the supervisor
 *                                 (supervisor/metrics.h) and handed over
 *                                 in a memfd
 *   GET  /api/feed                the live feed as server-sent events
 *                                 (gateway_feed.h): once the supervisor
 *                                 has accepted the token, the stream
 *                                 never waits for it again
 *
 * All take `Authorization: Bearer <api token>` (api_tokens in the
 * configuration; any token may read the status, the lineage, the
 * metrics and the feed; a token of role `status` may read only those:
 * the supervisor answers 403 to the rest).  The gateway checks
 * only the shape of a request; the
 * supervisor, which holds the configuration in force, checks the token,
 * what it may run, and answers (ZX_CHAN_API, proto/chan.h): each request
 * waits for that answer, with a deadline.  A client address whose wrong
 * tokens (401 from the supervisor) reach server.http.api_auth_failures
 * within api_auth_window gets 429 for every API request until that
 * window ends (authlimit.h), logged once per window.  Requests already
 * on their way when it is blocked are still answered (at most
 * http.max_connections of them).
 *
 * It must never: hand a token to anything but the supervisor, log one,
 * keep a request past its deadline, or let an address try tokens beyond
 * its limit.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/util.h"
#include "proto/chan.h"
#include "workers/gateway/gateway_int.h"

#define API_TIMEOUT_MS 10000
#define API_MAX_TOKEN 1024
#define API_MAX_BODY 4096

static const char syncs_prefix[] = "/api/syncs/";
static const char runs_prefix[] = "/api/runs/";
static const char metrics_path[] = "/metrics";
static const char metrics_type[] = "text/plain; version=0.0.4; charset=utf-8";
static const char lineage_path[] = "/api/lineage";
static const char status_path[] = "/api/status";
static const char feed_path[] = "/api/feed";

int zx_gw_is_api(const char *path)
{
    return !strcmp(path, metrics_path) || !strcmp(path, lineage_path) ||
           !strcmp(path, status_path) || !strcmp(path, feed_path) ||
           !strncmp(path, syncs_prefix, sizeof(syncs_prefix) - 1) ||
           !strncmp(path, runs_prefix, sizeof(runs_prefix) - 1);
}

/* A name or an id in a path: 1 to 63 of [a-z0-9_-] (a sync name) or
 * digits (a run id). */
static int word_ok(const char *s, size_t n)
{
    if (!n || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
              s[i] == '-'))
            return 0;
    return 1;
}

/* A read route's method: GET (and HEAD where head_ok) is 1; any other is
 * answered 405 with Allow: GET and is 0. */
static int read_method(zx_http_req *req, const char *method, const char *what, int head_ok)
{
    if (!strcmp(method, "GET") || (head_ok && !strcmp(method, "HEAD")))
        return 1;
    zx_http_reply_json_error(req, 405, "Allow: GET\r\n", "method %s is not allowed; read the "
                             "%s with GET", method, what);
    return 0;
}

typedef struct lineage_q {
    const char *name, *dir, *format;
} lineage_q;

/* GET /api/lineage's query: name (1 to 127 printable bytes, no control
 * byte), direction (upstream or downstream; only with name), format
 * (json, text, dot, mermaid).  0, or -1 when one is bad (answered 400). */
static int lineage_params(zx_http_req *req, lineage_q *lp)
{
    lp->name = zx_http_query_param(req, "name");
    lp->dir = zx_http_query_param(req, "direction");
    lp->format = zx_http_query_param(req, "format");
    size_t n = lp->name ? strlen(lp->name) : 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)lp->name[i] < 0x20 || lp->name[i] == 0x7f)
            n = 0;
    if (lp->name && (n == 0 || n > 127)) {
        zx_http_reply_json_error(req, 400, NULL, "name must be 1 to 127 characters without "
                                 "control characters: a pipeline, a table or an object");
        return -1;
    }
    if (lp->dir && strcmp(lp->dir, "upstream") && strcmp(lp->dir, "downstream")) {
        zx_http_reply_json_error(req, 400, NULL, "direction must be upstream or downstream");
        return -1;
    }
    if (lp->dir && !lp->name) {
        zx_http_reply_json_error(req, 400, NULL, "direction needs a name: the node it starts "
                                 "from");
        return -1;
    }
    if (lp->format && strcmp(lp->format, "json") && strcmp(lp->format, "text") &&
        strcmp(lp->format, "dot") && strcmp(lp->format, "mermaid")) {
        zx_http_reply_json_error(req, 400, NULL, "format must be json, text, dot or mermaid");
        return -1;
    }
    return 0;
}

void zx_gw_api_head(gateway *g, zx_http_req *req)
{
    lineage_q lp = {0};
    const char *path = zx_http_path(req), *method = zx_http_method(req);
    size_t len = strlen(path);
    int op;   /* greq.api: 1 run, 2 get, 3 metrics, 4 lineage, 5 status, 6 feed */
    enum zx_gwfeed_from from = ZX_GWFEED_HISTORY;
    uint64_t after = 0;
    char addr[ZX_AUTHLIMIT_ADDR_MAX];
    zx_authlimit_addr(zx_http_peer(req), addr, sizeof(addr));
    int64_t wait_ms = zx_authlimit_blocked(g->auth, addr, zx_mono_ms());
    if (wait_ms > 0) {
        long long s = (wait_ms + 999) / 1000;
        char hdr[48];
        snprintf(hdr, sizeof(hdr), "Retry-After: %lld\r\n", s);
        zx_http_reply_json_error(req, 429, hdr, "too many wrong API tokens from %s (%u within "
                                 "%u s, server.http.api_auth_failures): retry in %lld s", addr,
                                 g->a->conf->http.api_auth_failures,
                                 g->a->conf->http.api_auth_window_ms / 1000, s);
        return;
    }
    const char *word;
    size_t wlen;
    if (!strcmp(path, metrics_path)) {
        op = 3;
        word = "metrics";
        wlen = 7;
        if (!read_method(req, method, "metrics", 1))
            return;
    } else if (!strcmp(path, status_path)) {
        word = "status";
        wlen = 6;
        op = 5;
        if (!read_method(req, method, "status", 1))
            return;
    } else if (!strcmp(path, lineage_path)) {
        word = "lineage";
        wlen = 7;
        op = 4;
        if (!read_method(req, method, "lineage", 1))
            return;
        if (lineage_params(req, &lp) < 0)
            return;
    } else if (!strcmp(path, feed_path)) {
        word = "feed";
        wlen = 4;
        op = 6;
        char why[200];
        if (!read_method(req, method, "feed", 0))
            return;
        if (zx_gwfeed_parse_start(zx_http_header(req, "Last-Event-ID"),
                                  zx_http_query_param(req, "last_event_id"),
                                  zx_http_query_param(req, "since"), &from, &after, why,
                                  sizeof(why)) < 0) {
            zx_http_reply_json_error(req, 400, NULL, "%s", why);
            return;
        }
        size_t waiting = 0;   /* feed requests waiting for their token's check */
        for (greq *w = g->api_head; w; w = w->next)
            waiting += w->api == 6;
        if (!g->feed || zx_gwfeed_full(g->feed, waiting)) {
            zx_http_reply_json_error(req, 503, "Retry-After: 5\r\n", "too many feed clients "
                                     "(%d); retry later", ZX_GWFEED_MAX_CLIENTS);
            return;
        }
    } else if (!strncmp(path, syncs_prefix, sizeof(syncs_prefix) - 1)) {
        word = path + sizeof(syncs_prefix) - 1;
        if (len < sizeof(syncs_prefix) + 5 || strcmp(path + len - 5, "/runs")) {
            zx_http_reply_json_error(req, 404, NULL, "no such endpoint: %.200s", path);
            return;
        }
        wlen = (size_t)(path + len - 5 - word);
        op = 1;
        if (strcmp(method, "POST")) {
            zx_http_reply_json_error(req, 405, "Allow: POST\r\n", "method %s is not allowed; "
                                     "start a run with POST", method);
            return;
        }
    } else {
        word = path + sizeof(runs_prefix) - 1;
        wlen = strlen(word);
        op = 2;
        if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
            zx_http_reply_json_error(req, 405, "Allow: GET\r\n", "method %s is not allowed; "
                                     "read a run with GET", method);
            return;
        }
        for (size_t i = 0; i < wlen; i++)
            if (word[i] < '0' || word[i] > '9')
                wlen = 0;
    }
    if (!word_ok(word, wlen)) {
        zx_http_reply_json_error(req, 404, NULL, "no such %s: %.80s", op == 1 ? "sync" : "run",
                                 word);
        return;
    }
    const char *auth = zx_http_header(req, "Authorization");
    if (!auth || strncasecmp(auth, "Bearer ", 7) || !auth[7] || strlen(auth + 7) > API_MAX_TOKEN) {
        zx_http_reply_json_error(req, 401, "WWW-Authenticate: Bearer\r\n",
                                 "missing 'Authorization: Bearer <api token>' header");
        return;
    }
    uint64_t cl = zx_http_content_length(req);
    if (cl != UINT64_MAX && cl > API_MAX_BODY) {
        zx_http_reply_json_error(req, 413, NULL, "a run request's body is at most %d bytes",
                                 API_MAX_BODY);
        return;
    }
    greq *q = calloc(1, sizeof(*q));
    if (!q) {
        zx_http_reply_json_error(req, 503, "Retry-After: 1\r\n", "out of memory");
        return;
    }
    q->g = g;
    q->req = req;
    q->api = op;
    q->feed_from = from;
    q->feed_after = after;
    memcpy(q->peer, addr, sizeof(q->peer));
    snprintf(q->pipe_name, sizeof(q->pipe_name), "%.*s", (int)wlen, word);
    snprintf(q->ln_name, sizeof(q->ln_name), "%s", lp.name ? lp.name : "");
    snprintf(q->ln_dir, sizeof(q->ln_dir), "%s", lp.dir ? lp.dir : "");
    snprintf(q->ln_format, sizeof(q->ln_format), "%s", lp.format ? lp.format : "");
    zx_http_req_set_data(req, q);
}

static void unlink_api(gateway *g, greq *q)
{
    for (greq **pp = &g->api_head; *pp; pp = &(*pp)->next)
        if (*pp == q) {
            *pp = q->next;
            return;
        }
}

void zx_gw_api_body(gateway *g, greq *q)
{
    zx_http_req *req = q->req;
    size_t blen = 0;
    const char *body = zx_http_body(req, &blen);
    int full = 0;
    if (blen > API_MAX_BODY) {
        zx_http_req_set_data(req, NULL);
        free(q);
        zx_http_reply_json_error(req, 413, NULL, "a run request's body is at most %d bytes",
                                 API_MAX_BODY);
        return;
    }
    if (q->api == 1 && blen) {
        json_error_t je;
        json_t *o = json_loadb(body, blen, 0, &je);
        if (!json_is_object(o)) {
            json_decref(o);
            zx_http_req_set_data(req, NULL);
            free(q);
            zx_http_reply_json_error(req, 400, NULL, "the body must be empty or a JSON object "
                                     "({\"full\": true}): %s", o ? "not an object" : je.text);
            return;
        }
        json_t *f = json_object_get(o, "full");
        if (f && !json_is_boolean(f)) {
            json_decref(o);
            zx_http_req_set_data(req, NULL);
            free(q);
            zx_http_reply_json_error(req, 400, NULL, "\"full\" must be true or false");
            return;
        }
        full = json_is_true(f);
        json_decref(o);
    }
    const char *tok = zx_http_header(req, "Authorization") + 7;
    q->req_id = ++g->next_id;
    json_t *m = q->api == 3 || q->api == 5 || q->api == 6
                    ? json_pack("{s:I, s:s, s:s}", "id", (json_int_t)q->req_id, "op",
                                q->api == 3 ? "metrics" : q->api == 5 ? "status" : "feed",
                                "token", tok)
                    : json_pack("{s:I, s:s, s:s, s:s, s:b}", "id", (json_int_t)q->req_id,
                                "op", q->api == 1 ? "run" : q->api == 2 ? "get" : "lineage",
                                q->api == 1 ? "sync" : q->api == 2 ? "run" : "what",
                                q->pipe_name, "token", tok, "full", full);
    if (m && q->api == 4) {
        /* the lineage's parameters, each only when given */
        const char *k[3] = {"name", "direction", "format"};
        const char *v[3] = {q->ln_name, q->ln_dir, q->ln_format};
        for (int i = 0; i < 3; i++)
            if (*v[i] && json_object_set_new(m, k[i], json_string(v[i])) < 0) {
                json_decref(m);
                m = NULL;   /* a name not valid UTF-8: answered 503 below */
                break;
            }
    }
    char *js = m ? json_dumps(m, JSON_COMPACT) : NULL;
    json_decref(m);
    if (!js || zx_chan_send(g->a->chan, ZX_CHAN_API, js, NULL, 0) < 0) {
        free(js);
        zx_http_req_set_data(req, NULL);
        free(q);
        zx_http_reply_json_error(req, 503, "Retry-After: 1\r\n", "zxd cannot take the request "
                                 "now; retry");
        return;
    }
    free(js);
    q->deadline_ms = zx_mono_ms() + API_TIMEOUT_MS;
    q->pending = 1;
    q->next = g->api_head;
    g->api_head = q;
}

/* Answer a GET /metrics or /api/status with the text in fd (its first
 * len bytes), of that content type; 0, or -1 when fd does not hold them
 * (the caller answers 500). */
static int reply_memfd(zx_http_req *req, int fd, json_int_t len, const char *type)
{
    struct stat st;
    if (fd < 0 || len < 0 || (uint64_t)len > ZX_METRICS_MAX || fstat(fd, &st) != 0 ||
        st.st_size < len)
        return -1;
    if (len == 0) {
        zx_http_reply(req, 200, type, NULL, "", 0);
        return 0;
    }
    void *m = mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED)
        return -1;
    zx_http_reply(req, 200, type, NULL, m, (size_t)len);
    munmap(m, (size_t)len);
    return 0;
}

void zx_gw_api_reply(gateway *g, const char *json, int fd)
{
    json_error_t je;
    json_t *o = json_loads(json, 0, &je);
    json_int_t id = o ? json_integer_value(json_object_get(o, "id")) : 0;
    for (greq *q = g->api_head; q && id; q = q->next) {
        if (q->req_id != (uint64_t)id)
            continue;
        unlink_api(g, q);
        json_int_t st = json_integer_value(json_object_get(o, "status"));
        uint32_t nfail = st == 401 ? zx_authlimit_fail(g->auth, q->peer, zx_mono_ms()) : 0;
        if (nfail)   /* once per window: the failures that block it */
            zx_warn("event=api_auth_blocked peer=%s failures=%u window_s=%u: wrong API "
                    "tokens; its API requests get 429 until the window ends", q->peer, nfail,
                    g->a->conf->http.api_auth_window_ms / 1000);
        json_t *body = json_object_get(o, "body");
        if ((q->api == 3 || q->api == 4 || q->api == 5) && st == 200 && q->req) {
            /* the text in a memfd: metrics, status, the lineage in its format */
            zx_http_req_set_data(q->req, NULL);
            int m = q->api == 3;
            const char *f = json_string_value(json_object_get(o, "format"));
            const char *type = m ? metrics_type
                               : q->api == 5 || !f || !strcmp(f, "json") ? "application/json"
                               : !strcmp(f, "dot") ? "text/vnd.graphviz; charset=utf-8"
                                                   : "text/plain; charset=utf-8";
            if (reply_memfd(q->req, fd, json_integer_value(json_object_get(o, m ? "metrics_bytes"
                                                                           : "body_bytes")),
                            type) < 0)
                zx_http_reply_json_error(q->req, 500, NULL, "the %s did not arrive",
                                         m ? "metrics" : q->api == 4 ? "lineage" : "status");
            q->req = NULL;
        }
        if (q->api == 6 && st == 200 && q->req) {
            zx_http_req_set_data(q->req, NULL);
            if (g->stopping)   /* draining: no new stream */
                zx_http_reply_json_error(q->req, 503, "Retry-After: 2\r\n", "the gateway is "
                                         "stopping; retry");
            else
                zx_gwfeed_start(g->feed, q->req, q->feed_from, q->feed_after);
            q->req = NULL;
        }
        char *bs = body ? json_dumps(body, JSON_COMPACT) : NULL;
        if (q->req) {
            zx_http_req_set_data(q->req, NULL);
            zx_http_reply(q->req, st >= 200 && st <= 599 ? (int)st : 500, "application/json",
                          st == 401 ? "WWW-Authenticate: Bearer\r\n"
                          : st == 429 ? "Retry-After: 10\r\n" : NULL, bs ? bs : "{}",
                          bs ? strlen(bs) : 2);
        }
        free(bs);
        free(q);
        break;
    }
    json_decref(o);
}

void zx_gw_api_expire(gateway *g)
{
    int64_t now = zx_mono_ms();
    for (greq **pp = &g->api_head; *pp;) {
        greq *q = *pp;
        if (now < q->deadline_ms) {
            pp = &q->next;
            continue;
        }
        *pp = q->next;
        if (q->req) {
            zx_http_req_set_data(q->req, NULL);
            zx_http_reply_json_error(q->req, 503, "Retry-After: 1\r\n", "zxd did not answer "
                                     "in time; retry");
        }
        free(q);
    }
}

void zx_gw_api_drop(gateway *g, greq *q)
{
    if (q->pending) {
        q->req = NULL;   /* answered into the void when the reply comes */
        return;
    }
    (void)g;
    free(q);
}
