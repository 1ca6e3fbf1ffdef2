/*
 * ctlconn.c — a control connection (a zxctl client) seen from any floor
 * of the supervisor: answer it with one JSON line, close it once the
 * answer is written, free it and count it out, and tell the jobs that
 * wait to answer it when it goes (sup_client_on_gone).
 *
 * It must never: block on a client (bufferevents only), or free a
 * connection without telling the hooks (a job would answer a freed one).
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/sup.h"

#define GONE_HOOKS_MAX 8

static void (*gone_hooks[GONE_HOOKS_MAX])(struct bufferevent *bev);
static size_t ngone_hooks;

int sup_client_on_gone(void (*fn)(struct bufferevent *bev))
{
    if (ngone_hooks >= GONE_HOOKS_MAX)
        return -1;
    gone_hooks[ngone_hooks++] = fn;
    return 0;
}

void sup_control_reply(struct bufferevent *bev, json_t *o)
{
    /* o is NULL when a json_pack failed (e.g. a path that is not UTF-8):
     * answer an error rather than crash the supervisor. */
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    struct evbuffer *ob = bufferevent_get_output(bev);
    if (s)
        evbuffer_add(ob, s, strlen(s));
    else
        evbuffer_add_printf(ob, "{\"ok\":false,\"error\":\"internal error: cannot encode the answer\"}");
    evbuffer_add(ob, "\n", 1);
    free(s);
    json_decref(o);
}

void sup_control_conn_free(sup *s, struct bufferevent *bev)
{
    if (!bev)
        return;
    if (s->nctl > 0)
        s->nctl--;
    bufferevent_free(bev);
}

static void conn_done(struct bufferevent *bev, void *arg)
{
    (void)arg;
    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        sup_control_conn_free(zx_the_sup, bev);
}

static void conn_event(struct bufferevent *bev, short what, void *arg)
{
    (void)what;
    (void)arg;
    for (size_t i = 0; i < ngone_hooks; i++)
        gone_hooks[i](bev);
    sup_control_conn_free(zx_the_sup, bev);
}

void sup_control_watch(struct bufferevent *bev, void (*on_read)(struct bufferevent *, void *))
{
    bufferevent_setcb(bev, on_read, NULL, conn_event, NULL);
}

void sup_control_finish(sup *s, struct bufferevent *bev)
{
    (void)s;
    bufferevent_setcb(bev, NULL, conn_done, conn_event, NULL);
    bufferevent_disable(bev, EV_READ);
    conn_done(bev, NULL);
}
