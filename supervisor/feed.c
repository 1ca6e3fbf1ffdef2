/*
 * feed.c — the live feed: recent events kept in memory and pushed to every
 * `zxctl feed --follow`.  Events come from the writer (batch, schema,
 * rejects) and from the supervisor itself (restart, failed, reload,
 * start, stop).  A follower that cannot keep up (more than 1 MiB queued)
 * is disconnected rather than let memory grow.
 *
 * Each event gets an id: max(previous + 1, the wall clock in µs), so that
 * ids grow also across restarts of zxd (unless the clock goes back).  The
 * id stays out of the event's JSON (a run event has an "id" of its own):
 * it travels beside it, to the gateway (ZX_CHAN_FEED, proto/chan.h),
 * which serves the feed as server-sent events (GET /api/feed,
 * workers/gateway/gateway_feed.h).
 *
 * It must never: block on a follower or on the gateway (the gateway's
 * messages go through the outbox, and past GW_OUTBOX_MAX queued messages
 * an event is not sent but counted as lost in the next one's "lost").
 */
#include <event2/buffer.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timefmt.h"
#include "common/log.h"
#include "proto/chan.h"
#include "supervisor/sup.h"

#define HIST_MAX (sizeof(((sup *)0)->history) / sizeof(char *))
/* Messages waiting for the gateway past which events are not sent to it. */
#define GW_OUTBOX_MAX 4096

/* Before the first event or gateway: the events of an earlier zxd (ids
 * below now) are gone. */
static void feed_init(sup *s)
{
    if (s->feed_last_id)
        return;
    s->feed_last_id = (uint64_t)zx_now_us() - 1;
    s->feed_lost = s->feed_gw_lost = s->feed_last_id;
}

/* Send event id (line: its JSON object text) to the gateway, with what it
 * has lost before; a failure makes id lost. */
static void feed_to_gateway(sup *s, child *gw, uint64_t id, const char *line)
{
    if (gw->chan < 0 || gw->pid == 0)
        return;   /* a gateway started later gets the history */
    size_t n = strlen(line) + 80;
    char *m = n <= ZX_CHAN_MAX && gw->out_len < GW_OUTBOX_MAX ? malloc(n) : NULL;
    if (m) {
        snprintf(m, n, "{\"id\":%llu,\"lost\":%llu,\"event\":%s}", (unsigned long long)id,
                 (unsigned long long)s->feed_gw_lost, line);
        if (strlen(m) + 8 > ZX_CHAN_MAX || sup_chan_send(s, gw, ZX_CHAN_FEED, m, NULL, 0) < 0) {
            free(m);
            m = NULL;
        }
    }
    if (!m)
        s->feed_gw_lost = id;
    free(m);
}

void sup_feed_gateway_history(sup *s, child *gw)
{
    feed_init(s);
    s->feed_gw_lost = s->feed_lost;   /* everything after it is here */
    /* the mark alone first: a client of a gateway with no events yet must
     * not take the events of an earlier zxd for lost on its way */
    char m[96];
    snprintf(m, sizeof(m), "{\"id\":0,\"lost\":%llu}", (unsigned long long)s->feed_gw_lost);
    sup_chan_send(s, gw, ZX_CHAN_FEED, m, NULL, 0);
    for (size_t i = 0; i < s->hist_len; i++) {
        size_t k = (s->hist_head + i) % HIST_MAX;
        feed_to_gateway(s, gw, s->hist_id[k], s->history[k]);
    }
}

static void follower_drop(sup *s, feed_client *f)
{
    for (feed_client **pp = &s->followers; *pp; pp = &(*pp)->next) {
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    }
    sup_control_conn_free(s, f->bev);
    free(f);
}

void sup_feed(sup *s, const char *json_event)
{
    if (!json_event)
        return;
    json_t *o = json_loads(json_event, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return;
    }
    char ts[ZX_TS_BUFSZ];
    zx_ts_format(zx_now_us(), ts);
    json_t *out = json_pack("{s:s}", "ts", ts);
    json_object_update(out, o);
    if (!json_object_get(out, "pipeline"))
        json_object_set_new(out, "pipeline", json_null());
    char *line = json_dumps(out, JSON_COMPACT);
    json_decref(o);
    json_decref(out);
    if (!line)
        return;
    feed_init(s);
    uint64_t id = (uint64_t)zx_now_us();
    if (id <= s->feed_last_id)
        id = s->feed_last_id + 1;
    s->feed_last_id = id;
    size_t slot = (s->hist_head + s->hist_len) % HIST_MAX;
    if (s->hist_len == HIST_MAX) {
        s->feed_lost = s->hist_id[s->hist_head];
        free(s->history[s->hist_head]);
        s->hist_head = (s->hist_head + 1) % HIST_MAX;
        slot = (s->hist_head + s->hist_len - 1) % HIST_MAX;
    } else {
        s->hist_len++;
    }
    s->history[slot] = line;
    s->hist_id[slot] = id;
    feed_to_gateway(s, &s->gateway, id, line);
    feed_client *f = s->followers;
    while (f) {
        feed_client *nx = f->next;
        struct evbuffer *ob = bufferevent_get_output(f->bev);
        if (evbuffer_get_length(ob) > 1024 * 1024) {
            follower_drop(s, f);
        } else {
            evbuffer_add(ob, line, strlen(line));
            evbuffer_add(ob, "\n", 1);
        }
        f = nx;
    }
}

void sup_feedf(sup *s, const char *event, const char *pipeline, const char *fmt, ...)
{
    char extra[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(extra, sizeof(extra), fmt, ap);
    va_end(ap);
    json_t *o = json_loads(extra, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        o = json_object();
    }
    json_object_set_new(o, "event", json_string(event));
    json_object_set_new(o, "pipeline", pipeline ? json_string(pipeline) : json_null());
    if (!json_object_get(o, "message")) {
        char msg[300];
        const char *proc = json_string_value(json_object_get(o, "process"));
        snprintf(msg, sizeof(msg), "%s %s", event, proc ? proc : (pipeline ? pipeline : ""));
        json_object_set_new(o, "message", json_string(msg));
    }
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (js) {
        sup_feed(s, js);
        free(js);
    }
}

static void follower_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    (void)what;
    feed_client *f = arg;
    follower_drop(zx_the_sup, f);
}

static void follower_read(struct bufferevent *bev, void *arg)
{
    (void)arg;
    /* followers send nothing more; discard */
    evbuffer_drain(bufferevent_get_input(bev), evbuffer_get_length(bufferevent_get_input(bev)));
}

void sup_feed_follow(sup *s, struct bufferevent *bev, int follow)
{
    struct evbuffer *ob = bufferevent_get_output(bev);
    evbuffer_add_printf(ob, "{\"ok\":true}\n");
    for (size_t i = 0; i < s->hist_len; i++) {
        const char *l = s->history[(s->hist_head + i) % HIST_MAX];
        evbuffer_add(ob, l, strlen(l));
        evbuffer_add(ob, "\n", 1);
    }
    if (!follow)
        return;
    feed_client *f = calloc(1, sizeof(*f));
    if (!f) {
        zx_error("event=feed_follow_failed error=\"out of memory\"");
        sup_control_conn_free(s, bev);
        return;
    }
    f->bev = bev;
    f->next = s->followers;
    s->followers = f;
    bufferevent_setcb(bev, follower_read, NULL, follower_event, f);
    /* a follower sends nothing and may wait for events forever; what it
     * does not read is bounded by the output cap above */
    bufferevent_set_timeouts(bev, NULL, NULL);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}
