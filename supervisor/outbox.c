/*
 * outbox.c — messages from the supervisor to its writer and gateway
 * (proto/chan.h) that wait, in order, when the child's socket is full.
 *
 * The supervisor's end of each socketpair is non-blocking (it must never
 * block): a burst of ATTACH messages at start (one per pipeline, each with
 * two fds) fills the socket long before the child has read them.  Such a
 * message is never dropped: it is queued with its own copies of the fds
 * and sent when the socket is writable again, after every message queued
 * before it.
 *
 * It must never: reorder messages, drop one while the child lives, or keep
 * a descriptor after the child is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "proto/chan.h"
#include "supervisor/sup.h"

struct sup_msg {
    struct sup_msg *next;
    int type;
    int fds[4];
    int nfds;
    char json[];
};

static void msg_free(sup_msg *m)
{
    for (int i = 0; i < m->nfds; i++)
        if (m->fds[i] >= 0)
            close(m->fds[i]);
    free(m);
}

/* Send what is queued, in order.  0 when the queue is empty, 1 when the
 * socket is full again, -1 when the child's socket failed (queue freed). */
static int flush(child *c)
{
    while (c->out_head) {
        sup_msg *m = c->out_head;
        if (zx_chan_send(c->chan, m->type, m->json, m->fds, m->nfds) < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
                return 1;
            zx_warn("event=chan_send_failed child=%s error=\"%s\"", c->name, strerror(errno));
            sup_outbox_clear(c);
            return -1;
        }
        c->out_head = m->next;
        if (!c->out_head)
            c->out_tail = NULL;
        c->out_len--;
        msg_free(m);
    }
    return 0;
}

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    child *c = arg;
    if (flush(c) == 1)
        event_add(c->out_ev, NULL);
}

int sup_chan_send(sup *s, child *c, int type, const char *json, const int *fds, int nfds)
{
    if (c->chan < 0 || c->pid == 0)
        return -1;
    if (!c->out_head) {
        if (zx_chan_send(c->chan, type, json, fds, nfds) == 0)
            return 0;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) {
            zx_warn("event=chan_send_failed child=%s error=\"%s\"", c->name, strerror(errno));
            return -1;
        }
    }
    size_t jl = strlen(json);
    sup_msg *m = malloc(sizeof(*m) + jl + 1);
    if (!m) {
        zx_error("event=chan_send_failed child=%s error=\"out of memory\"", c->name);
        return -1;
    }
    m->next = NULL;
    m->type = type;
    m->nfds = 0;
    memcpy(m->json, json, jl + 1);
    for (int i = 0; i < nfds && i < 4; i++) {
        m->fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 0);
        if (m->fds[i] < 0) {
            zx_error("event=chan_send_failed child=%s error=\"dup: %s\"", c->name,
                     strerror(errno));
            msg_free(m);
            return -1;
        }
        m->nfds++;
    }
    if (!c->out_ev) {
        c->out_ev = event_new(s->base, c->chan, EV_WRITE, on_writable, c);
        if (!c->out_ev) {
            zx_error("event=chan_send_failed child=%s error=\"cannot make an event\"", c->name);
            msg_free(m);
            return -1;
        }
    }
    if (c->out_tail)
        c->out_tail->next = m;
    else
        c->out_head = m;
    c->out_tail = m;
    c->out_len++;
    event_add(c->out_ev, NULL);
    return 0;
}

void sup_outbox_clear(child *c)
{
    while (c->out_head) {
        sup_msg *m = c->out_head;
        c->out_head = m->next;
        msg_free(m);
    }
    c->out_tail = NULL;
    c->out_len = 0;
    if (c->out_ev) {
        event_free(c->out_ev);
        c->out_ev = NULL;
    }
}
