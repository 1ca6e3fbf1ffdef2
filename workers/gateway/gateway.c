/*
 * gateway.c — the gateway process: its event loop, the pipelines the
 * supervisor attaches and detaches, /healthz, draining on SIGTERM.  The
 * push route itself is in gateway_push.c.  See gateway.h.
 *
 * It must never: look inside a push body, or write a secret to a log.
 */
#include "workers/gateway/gateway.h"

#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <malloc.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/segment.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "proto/chan.h"
#include "workers/gateway/gateway_int.h"
#include "workers/gateway/http.h"

/* SIGTERM/SIGINT set this; the 100 ms tick acts on it.  (libevent's
 * evsignal is not used here: after fork() its signal state still belongs
 * to the supervisor's event base.) */
static volatile sig_atomic_t term_requested;

static void on_term_signal(int sig)
{
    (void)sig;
    term_requested = 1;
}

static void on_term(gateway *g);

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    gateway *g = arg;
    if (term_requested)
        on_term(g);
    zx_gw_on_wake(-1, 0, g);
    zx_gw_expire(g);
    zx_gw_api_expire(g);
    if (g->feed)
        zx_gwfeed_tick(g->feed, zx_mono_ms());
    if (g->stopping) {
        size_t pending = zx_http_server_pending(g->http);
        if (pending == 0 || zx_mono_ms() > g->stop_deadline)
            event_base_loopbreak(g->base);
    }
}

void zx_gw_healthz(gateway *g, zx_http_req *req)
{
    json_t *streams = json_object();
    json_t *reasons = json_array();
    int writer_up = 1, n = 0, ws_down = 0;
    char ws_why[300] = "";
    for (size_t i = 0; i < sizeof(g->pipes) / sizeof(g->pipes[0]); i++) {
        gpipe *p = &g->pipes[i];
        if (!p->used)
            continue;
        zx_seg_hdr *h = p->seg.hdr;
        n++;
        if (!atomic_load(&h->writer_up))
            writer_up = 0;
        if (!ws_down && atomic_load(&h->workspace_down) &&
            atomic_load_explicit(&h->writer_error_set, memory_order_acquire)) {
            char copy[sizeof(h->writer_error)];
            memcpy(copy, h->writer_error, sizeof(copy));
            copy[sizeof(copy) - 1] = '\0';
            snprintf(ws_why, sizeof(ws_why), "%s", copy);
            ws_down = 1;
        }
        const char *st;
        if (atomic_load(&h->worker_failed))
            st = "failed";
        else if (atomic_load(&h->worker_stopped))
            st = "stopped";
        else if (atomic_load(&h->worker_up) && atomic_load(&h->worker_ready))
            st = "up";
        else
            st = "down";
        json_object_set_new(streams, p->name, json_string(st));
        if (strcmp(st, "down") == 0 || strcmp(st, "failed") == 0) {
            char msg[128];
            snprintf(msg, sizeof(msg), "stream %s worker %s", p->name,
                     st[0] == 'f' ? "has failed (crashed too often; zxctl start to retry)" : "is not running");
            json_array_append_new(reasons, json_string(msg));
        }
    }
    if (ws_down)
        json_array_insert_new(reasons, 0, json_string(ws_why));
    if (n > 0 && !writer_up)
        json_array_insert_new(reasons, 0, json_string("writer is not running"));
    int ok = json_array_size(reasons) == 0;
    json_t *o = json_pack("{s:s, s:s, s:o}", "status", ok ? "ok" : "unavailable", "writer",
                          writer_up ? "up" : "down", "streams", streams);
    if (!ok)
        json_object_set_new(o, "reasons", reasons);
    else
        json_decref(reasons);
    char *s = json_dumps(o, JSON_COMPACT);
    zx_http_reply(req, ok ? 200 : 503, "application/json", ok ? NULL : "Retry-After: 1\r\n", s,
                  strlen(s));
    free(s);
    json_decref(o);
}

static void attach(gateway *g, const char *json, int *fds, int nfds)
{
    json_t *o = json_loads(json, 0, NULL);
    const char *name = o ? json_string_value(json_object_get(o, "name")) : NULL;
    if (!name || nfds != 2) {
        zx_error("event=bad_attach");
        goto out;
    }
    gpipe *p = zx_gw_find_pipe(g, name, strlen(name));
    if (!p) {
        for (size_t i = 0; i < sizeof(g->pipes) / sizeof(g->pipes[0]) && !p; i++)
            if (!g->pipes[i].used)
                p = &g->pipes[i];
        if (!p) {
            zx_error("event=attach_failed pipeline=%s error=\"no free slot (%d pipelines)\"",
                     name, ZX_MAX_PIPELINES);
            goto out;
        }
        char err[256];
        if (zx_segment_map(&p->seg, fds[0], err, sizeof(err)) < 0) {
            zx_error("event=attach_failed pipeline=%s error=\"%s\"", name, err);
            goto out;
        }
        snprintf(p->name, sizeof(p->name), "%s", name);
        p->gen = ++g->pipe_gen;
        p->worker_efd = fds[1];
        fds[1] = -1;
        zx_ring_set_peer(&p->seg.in, p->worker_efd);
        zx_ring_set_peer(&p->seg.out, p->worker_efd);
        zx_ring_cursor_init(&p->seg.out, &p->out_cur);
        atomic_store(&p->seg.hdr->gw_commit_wait, 0); /* an earlier gateway's */
        p->used = 1;
    }
    const char *key = json_string_value(json_object_get(o, "key"));
    char *nk = key ? strdup(key) : NULL;
    if (key && !nk) {
        zx_error("event=attach_failed pipeline=%s error=\"out of memory\"", name);
        goto out;
    }
    /* the webhook secret was checked when the configuration was loaded */
    const char *whs = json_string_value(json_object_get(o, "webhook_secret"));
    uint8_t wk[ZX_WEBHOOK_KEY_MAX] = {0};
    char why_key[300];
    int wklen = whs ? zx_webhook_key(whs, wk, why_key, sizeof(why_key)) : 0;
    if (wklen < 0) {
        zx_error("event=attach_failed pipeline=%s error=\"webhook_secret: %s\"", name, why_key);
        free(nk);
        goto out;
    }
    int same_key = (!p->key && !nk) || (p->key && nk && strcmp(p->key, nk) == 0);
    int same_wk = wklen == p->whkey_len && !memcmp(wk, p->whkey, (size_t)wklen);
    if (!same_key || !same_wk) {
        /* A new key makes another stream of it: requests authenticated
         * with the old one are answered, never handed over. */
        if (p->key || p->whkey_len) {
            p->gen = ++g->pipe_gen;
            char why[200];
            snprintf(why, sizeof(why),
                     "stream %s was reconfigured (new key) while the request was in flight; "
                     "nothing was written, retry", p->name);
            zx_gw_fail_waiting(p, 503, why);
        }
    }
    free(p->key);
    p->key = nk;
    memcpy(p->whkey, wk, sizeof(wk));
    p->whkey_len = wklen;
    OPENSSL_cleanse(wk, sizeof(wk));
    p->ack_commit = json_is_true(json_object_get(o, "ack_commit"));
    json_int_t mb = json_integer_value(json_object_get(o, "max_body_size"));
    p->max_body = mb > 0 ? (uint64_t)mb : g->a->conf->http.max_body_size;
    zx_info("event=attach pipeline=%s", p->name);
out:
    for (int i = 0; i < nfds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    json_decref(o);
}

static void detach(gateway *g, const char *name)
{
    gpipe *p = zx_gw_find_pipe(g, name, strlen(name));
    if (!p)
        return;
    /* The worker has stopped: relay the answers it left in the out ring
     * first, then answer everything still waiting for this stream. */
    zx_gw_read_replies(g, p);
    char why[200];
    snprintf(why, sizeof(why), "stream %s was removed or reconfigured while the request "
             "was waiting; nothing was written, retry", p->name);
    zx_gw_fail_waiting(p, 503, why);
    /* the worker ended only once its frames were committed (http_drained):
     * held answers whose frame was not are of a worker that died */
    zx_gw_commits(p);
    snprintf(why, sizeof(why), "stream %s was removed or reconfigured before the commit; "
             "the rows may be written: retry with the same Idempotency-Key", p->name);
    zx_gw_fail_commits(p, 503, why);
    for (int b = 0; b < NBUCKETS; b++) {
        greq **pp = &g->buckets[b];
        while (*pp) {
            greq *q = *pp;
            if (q->p == p) {
                *pp = q->next;
                zx_gw_finish_error(q, 503, 1, "stream is being removed or reconfigured; retry");
                continue;
            }
            pp = &q->next;
        }
    }
    zx_info("event=detach pipeline=%s", p->name);
    zx_segment_close(&p->seg);
    close(p->worker_efd);
    free(p->key);
    OPENSSL_cleanse(p->whkey, sizeof(p->whkey));
    memset(p, 0, sizeof(*p));
}

static void on_chan(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    gateway *g = arg;
    char buf[ZX_CHAN_MAX];
    for (;;) {
        int fds[4], nfds = 0;
        int t = zx_chan_recv(fd, buf, sizeof(buf), fds, &nfds);
        if (t == 0 || (t < 0 && errno != EAGAIN)) {
            zx_warn("event=supervisor_gone");
            g->stopping = 1;
            g->stop_deadline = zx_mono_ms();
            event_base_loopbreak(g->base);
            return;
        }
        if (t < 0)
            return;
        if (t == ZX_CHAN_ATTACH) {
            attach(g, buf, fds, nfds);
            continue;
        }
        if (t == ZX_CHAN_API) {
            zx_gw_api_reply(g, buf, nfds == 1 ? fds[0] : -1);
            for (int i = 0; i < nfds; i++)
                close(fds[i]);
            continue;
        }
        if (t == ZX_CHAN_FEED && g->feed)
            zx_gwfeed_message(g->feed, buf);
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        if (t == ZX_CHAN_DETACH) {
            json_t *o = json_loads(buf, 0, NULL);
            const char *name = o ? json_string_value(json_object_get(o, "name")) : NULL;
            if (name)
                detach(g, name);
            json_decref(o);
        }
    }
}

static void on_term(gateway *g)
{
    if (g->stopping)
        return;
    g->stopping = 1;
    g->stop_deadline = zx_mono_ms() + 5000;
    zx_http_server_stop_accepting(g->http);
    if (g->feed)
        zx_gwfeed_stop(g->feed);   /* its streams would never end */
    zx_info("event=draining pending=%zu", zx_http_server_pending(g->http));
}

int zx_gateway_main(const zx_gateway_args *a)
{
    struct event *ev_wake = NULL, *ev_chan = NULL, *ev_tick = NULL;
    /* Request bodies are the gateway's large allocations, counted against
     * max_held_bytes as they are held.  glibc's dynamic mmap threshold
     * would move them into the heap after the first one is freed, where
     * freed memory is not given back, so that the process's memory drifts
     * above what is counted.  A fixed threshold keeps every body in its
     * own mapping, returned when the body is freed. */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    gateway *g = calloc(1, sizeof(*g));
    if (!g)
        return 1;
    g->a = a;
    int rc = 1;
    zx_random(&g->rid_base, sizeof(g->rid_base));
    /* Request ids are (generation << 40 | counter): the rings outlive a
     * gateway, and answers to an earlier gateway's requests must match
     * none of ours. */
    g->next_id = (a->generation & 0xffffffu) << 40;
    g->base = event_base_new();
    const zx_conf_http *hc = &a->conf->http;
    zx_http_limits lim = {
        .max_body_size = hc->max_body_size,
        .max_header_size = hc->max_header_size,
        .max_connections = hc->max_connections,
        .idle_timeout_ms = hc->idle_timeout_ms,
        .header_timeout_ms = hc->header_timeout_ms,
        .body_timeout_ms = hc->body_timeout_ms,
        .body_min_rate = (uint32_t)hc->body_min_rate, /* <= 1 GiB: checked */
    };
    /* the server-wide body limit is the largest any stream accepts */
    for (size_t i = 0; i < a->conf->npipelines; i++)
        if (a->conf->pipelines[i].body_limit > lim.max_body_size)
            lim.max_body_size = a->conf->pipelines[i].body_limit;
    /* body bytes held by the whole gateway: counted by the HTTP server */
    lim.max_held_bytes = hc->max_held_bytes ? hc->max_held_bytes
                                            : zx_http_default_max_held(lim.max_body_size);
    g->http = zx_http_server_new(g->base, &lim, zx_gw_on_head, zx_gw_on_body, g);
    g->auth = zx_authlimit_new(hc->api_auth_failures, hc->api_auth_window_ms,
                               ZX_AUTHLIMIT_ADDRS);
    if (g->http)
        zx_http_server_set_logger(g->http, zx_log);
    g->feed = zx_gwfeed_new();
    /* Take the initial ATTACH messages (and the feed's history) before
     * accepting anything. */
    char buf[ZX_CHAN_MAX];
    struct timeval rt = {10, 0};
    setsockopt(a->chan, SOL_SOCKET, SO_RCVTIMEO, &rt, sizeof(rt));
    for (;;) {
        int fds[4], nfds = 0;
        int t = zx_chan_recv(a->chan, buf, sizeof(buf), fds, &nfds);
        if (t == ZX_CHAN_ATTACH) {
            attach(g, buf, fds, nfds);
            continue;
        }
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        if (t == ZX_CHAN_FEED && g->feed)
            zx_gwfeed_message(g->feed, buf);
        if (t == ZX_CHAN_READY)
            break;
        if (t <= 0) {
            zx_error("event=fatal error=\"no pipeline list from the supervisor\"");
            goto out;
        }
    }
    if (!g->base || !g->http || !g->auth || !g->feed ||
        zx_http_server_listen_fd(g->http, a->listen_fd) < 0) {
        zx_error("event=fatal error=\"cannot start the HTTP server\"");
        goto out;
    }
    zx_http_server_set_drop_cb(g->http, zx_gw_on_drop);
    zx_set_nonblock(a->chan);
    ev_wake = event_new(g->base, a->self_efd, EV_READ | EV_PERSIST, zx_gw_on_wake, g);
    ev_chan = event_new(g->base, a->chan, EV_READ | EV_PERSIST, on_chan, g);
    ev_tick = event_new(g->base, -1, EV_PERSIST, on_tick, g);
    struct sigaction sa = {0};
    sa.sa_handler = on_term_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct timeval tv = {0, 100 * 1000};
    if (!ev_wake || !ev_chan || !ev_tick || event_add(ev_wake, NULL) < 0 ||
        event_add(ev_chan, NULL) < 0 || event_add(ev_tick, &tv) < 0) {
        zx_error("event=fatal error=\"cannot set up the event loop (out of memory)\"");
        goto out;
    }
    zx_info("event=ready listen=%s", hc->listen);
    event_base_dispatch(g->base);
    zx_info("event=stop pending=%zu", zx_http_server_pending(g->http));
    rc = 0;
    /* fail whatever still waits, then free */
    for (size_t i = 0; i < sizeof(g->pipes) / sizeof(g->pipes[0]); i++)
        if (g->pipes[i].used)
            detach(g, g->pipes[i].name);
    zx_gwfeed_free(g->feed);   /* before the server: it would call back */
    g->feed = NULL;
    zx_http_server_free(g->http);
    g->http = NULL;
out:
    if (ev_wake)
        event_free(ev_wake);
    if (ev_chan)
        event_free(ev_chan);
    if (ev_tick)
        event_free(ev_tick);
    zx_gwfeed_free(g->feed);
    zx_http_server_free(g->http);
    if (g->base)
        event_base_free(g->base);
    zx_authlimit_free(g->auth);
    free(g);
    return rc;
}
