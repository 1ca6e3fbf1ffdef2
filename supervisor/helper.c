/*
 * helper.c — fork a helper process, read its one JSON answer with a
 * deadline, hand it to its job (helper.h).
 *
 * It must never: block the loop (the pipe is read by an event), let a
 * helper outlive its deadline (SIGKILL here, alarm() in the child), or
 * hand an answer to a client that has gone (sup_helper_forget).
 */
#include <errno.h>
#include <fcntl.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "supervisor/helper.h"

typedef struct helper {
    struct helper *next;
    const sup_helper_kind *kind;
    struct bufferevent *waiter;  /* NULL once it left */
    void *data;                  /* the job's, freed with the helper */
    pid_t pid;                   /* 0 once it exited on its own */
    int fd;
    struct event *ev;
    char *buf;                   /* the answer so far */
    size_t len, cap;
    char name[128];
} helper;

static helper *helpers;

static void helper_free(helper *h)
{
    for (helper **pp = &helpers; *pp; pp = &(*pp)->next)
        if (*pp == h) {
            *pp = h->next;
            break;
        }
    if (h->ev)
        event_free(h->ev);
    if (h->fd >= 0)
        close(h->fd);
    if (h->pid > 0)
        kill(h->pid, SIGKILL); /* reaped by sup_reap */
    free(h->buf);
    free(h->data);
    free(h);
}

/* Hand the helper's answer (why NULL: what it wrote), or why there is
 * none, to its job, and forget the helper. */
static void helper_finish(helper *h, const char *why)
{
    char msg[200];
    json_t *o = NULL;
    if (!why) {
        o = h->len ? json_loadb(h->buf, h->len, 0, NULL) : NULL;
        if (!o) {
            snprintf(msg, sizeof(msg), "the %s process gave no answer (it crashed?); see the "
                     "zxd log", h->kind->what);
            why = msg;
        }
    }
    if (why)
        o = json_pack("{s:b, s:s, s:s}", "ok", 0, "name", h->name, "error", why);
    else
        h->pid = 0; /* it answered and exited on its own: nothing to kill */
    void *data = h->data;
    h->data = NULL;
    h->kind->done(zx_the_sup, h->name, data, h->waiter, o);
    free(data);
    helper_free(h);
}

static void on_helper(evutil_socket_t fd, short what, void *arg)
{
    helper *h = arg;
    char msg[200];
    if (what & EV_TIMEOUT) {
        snprintf(msg, sizeof(msg), "the %s did not finish in time (it was stopped)",
                 h->kind->what);
        helper_finish(h, msg);
        return;
    }
    for (;;) {
        if (h->len == h->cap) {
            size_t cap = h->cap ? h->cap * 2 : 8192;
            if (cap > h->kind->answer_max)
                cap = h->kind->answer_max;
            char *b = cap > h->cap ? realloc(h->buf, cap) : NULL;
            if (!b) {
                snprintf(msg, sizeof(msg), "the %s's answer is too long", h->kind->what);
                helper_finish(h, msg);
                return;
            }
            h->buf = b;
            h->cap = cap;
        }
        ssize_t n = read(fd, h->buf + h->len, h->cap - h->len);
        if (n > 0) {
            h->len += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        helper_finish(h, NULL); /* EOF or error: that is the answer */
        return;
    }
}

/* In the child: do the work, write the answer, exit.  Never returns. */
static void run_helper(sup *s, const sup_helper_kind *k, const void *arg, int fd)
{
    zx_close_fds_except(&fd, 1); /* hold none of the supervisor's sockets (a
                                    writer's channel kept open here would
                                    hide its death) */
    zx_log_set_proc(k->what);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    alarm((unsigned)k->alarm_s);
    signal(SIGPIPE, SIG_IGN);
    json_t *o = k->run(s->conf, arg);
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (js) {
        size_t len = strlen(js), off = 0;
        while (off < len) {
            ssize_t n = write(fd, js + off, len - off);
            if (n <= 0 && errno != EINTR)
                break;
            if (n > 0)
                off += (size_t)n;
        }
    }
    _exit(0);
}

static json_t *start_error(const char *fmt, const char *what)
{
    char msg[200];
    snprintf(msg, sizeof(msg), fmt, what);
    return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

json_t *sup_helper_start(sup *s, const sup_helper_kind *k, const char *name, const void *arg,
                         void *data, struct bufferevent *waiter, pid_t *pid)
{
    helper *h = calloc(1, sizeof(*h));
    int fds[2];
    if (!h || pipe2(fds, O_CLOEXEC) < 0) {
        free(h);
        free(data);
        return start_error("cannot start the %s (out of resources)", k->what);
    }
    h->fd = fds[0];
    h->kind = k;
    snprintf(h->name, sizeof(h->name), "%s", name);
    pid_t p = fork();
    if (p == 0)
        run_helper(s, k, arg, fds[1]);
    close(fds[1]);
    if (p < 0) {
        close(fds[0]);
        free(h);
        free(data);
        return start_error("cannot start the %s (fork failed)", k->what);
    }
    h->pid = p;
    h->data = data;
    zx_set_nonblock(h->fd);
    struct timeval tv = {k->deadline_s, 0};
    h->ev = event_new(s->base, h->fd, EV_READ | EV_PERSIST, on_helper, h);
    h->waiter = waiter;
    h->next = helpers;
    helpers = h;
    if (!h->ev || event_add(h->ev, &tv) < 0) {
        helper_free(h);
        return start_error("cannot watch the %s (out of memory)", k->what);
    }
    *pid = p;
    return NULL;
}

size_t sup_helper_count(const sup_helper_kind *k, const char *name)
{
    size_t n = 0;
    for (helper *h = helpers; h; h = h->next)
        if (h->kind == k && (!name || !strcmp(h->name, name)))
            n++;
    return n;
}

void sup_helper_forget(struct bufferevent *waiter)
{
    for (helper *h = helpers; h; h = h->next)
        if (h->waiter == waiter)
            h->waiter = NULL;
}
