/*
 * control.c — the control socket (proto/control.h): accept zxctl, check
 * its credentials, read one request line, and hand it to its row of the
 * command table (commands.c, control.h).
 *
 * It must never: block on a client (bufferevents only), trust a request
 * (unknown commands and bad arguments get ok:false), or keep LMDB open
 * across loop iterations (the store is opened read-only per request).
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <grp.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "proto/control.h"
#include "supervisor/control.h"
#include "supervisor/helper.h"
#include "supervisor/jobs.h"

/* Control connections at most (zxctl clients and feed followers), and how
 * long one may take to send its request or take its answer. */
#define CTL_MAX_CONNS 64
#define CTL_REQUEST_TIMEOUT_S 10
_Static_assert(CTL_MAX_CONNS / 2 == 32, "the follower cap of commands.c");

static json_t *err_obj(const char *fmt, const char *arg)
{
    char msg[512];
    snprintf(msg, sizeof(msg), fmt, arg ? arg : "");
    return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

/* One request: its row's handler answers now, or later (the connection
 * waits, reading no more), or owns the connection. */
static void conn_read(struct bufferevent *bev, void *arg)
{
    (void)arg;
    sup *s = zx_the_sup;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t n;
    char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF);
    if (!line) {
        if (evbuffer_get_length(in) > ZX_CTL_MAX_LINE) {
            sup_control_reply(bev, err_obj("request line too long", NULL));
            sup_control_finish(s, bev);
        }
        return;
    }
    json_error_t je;
    json_t *req = json_loads(line, 0, &je);
    free(line);
    const char *cmd = req ? json_string_value(json_object_get(req, "cmd")) : NULL;
    const char *name = req ? json_string_value(json_object_get(req, "name")) : NULL;
    const sup_command *c = cmd ? sup_command_find(cmd) : NULL;
    json_t *out = NULL;
    if (!cmd) {
        out = err_obj("bad request: expected {\"v\":1,\"cmd\":...}", NULL);
    } else if (!c) {
        out = err_obj("unknown command '%s'", cmd);
    } else if ((c->flags & SUP_CMD_NAME) && !name) {
        out = err_obj("%s needs a name", cmd);
    } else if (!(out = c->fn(s, bev, cmd, name, req))) {
        json_decref(req);
        if (c->flags & SUP_CMD_OWNS_CONN)
            return;
        /* answered later, by the job */
        bufferevent_disable(bev, EV_READ);
        if (c->flags & SUP_CMD_LONG)
            bufferevent_set_timeouts(bev, NULL, NULL);
        return;
    }
    json_decref(req);
    sup_control_reply(bev, out);
    sup_control_finish(s, bev);
}

static int peer_allowed(sup *s, int fd)
{
    struct ucred cr;
    socklen_t len = sizeof(cr);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
        return 0;
    if (cr.uid == 0 || cr.uid == geteuid())
        return 1;
    if (s->conf->control_group) {
        struct group *g = getgrnam(s->conf->control_group);
        if (g && cr.gid == g->gr_gid)
            return 1;
    }
    return 0;
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
    (void)what;
    sup *s = arg;
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        if (!peer_allowed(s, fd)) {
            zx_warn("event=control_denied");
            const char *m = "{\"ok\":false,\"error\":\"permission denied\"}\n";
            ssize_t w = write(fd, m, strlen(m));
            (void)w;
            close(fd);
            continue;
        }
        if (s->nctl >= CTL_MAX_CONNS) {
            zx_warn("event=control_refused reason=\"%d connections open\"", CTL_MAX_CONNS);
            char m[160];
            int n = snprintf(m, sizeof(m), "{\"ok\":false,\"error\":\"too many control "
                             "connections (%d open); retry\"}\n", CTL_MAX_CONNS);
            ssize_t w = write(fd, m, (size_t)n);
            (void)w;
            close(fd);
            continue;
        }
        struct bufferevent *bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
        if (!bev) {
            zx_error("event=control_refused reason=\"out of memory\"");
            close(fd);
            continue;
        }
        s->nctl++;
        /* A request must arrive within CTL_REQUEST_TIMEOUT_S, and an answer
         * be taken within it; a follower's reads are unbounded (feed.c). */
        struct timeval tv = {CTL_REQUEST_TIMEOUT_S, 0};
        sup_control_watch(bev, conn_read);
        bufferevent_setwatermark(bev, EV_READ, 0, ZX_CTL_MAX_LINE + 2);
        bufferevent_set_timeouts(bev, &tv, &tv);
        bufferevent_enable(bev, EV_READ | EV_WRITE);
    }
}

int sup_control_open(sup *s, char *err, size_t errlen)
{
    const char *path = s->conf->control_socket;
    struct sockaddr_un sa = {0};
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa.sun_path)) {
        zx_seterr(err, errlen, "control socket path is too long: %s", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        zx_seterr(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    unlink(path); /* we hold the data directory lock: a socket left here is stale */
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc < 0 || listen(fd, 64) < 0) {
        zx_seterr(err, errlen, "cannot listen on control socket %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (s->conf->control_group) {
        struct group *g = getgrnam(s->conf->control_group);
        if (!g || chown(path, (uid_t)-1, g->gr_gid) < 0 || chmod(path, 0660) < 0) {
            zx_seterr(err, errlen, "control socket %s: cannot give it to group %s", path,
                     s->conf->control_group);
            close(fd);
            return -1;
        }
    } else {
        chmod(path, 0600);
    }
    s->ctl_fd = fd;
    /* the jobs that answer a client later forget one that left */
    static int hooked;
    if (!hooked) {
        sup_client_on_gone(sup_reload_forget);
        sup_client_on_gone(sup_helper_forget);
        sup_client_on_gone(sup_admin_forget);
        sup_client_on_gone(sup_sync_forget);
        hooked = 1;
    }
    s->ctl_ev = event_new(s->base, fd, EV_READ | EV_PERSIST, on_accept, s);
    if (!s->ctl_ev || event_add(s->ctl_ev, NULL) < 0)
        return zx_seterr(err, errlen, "control socket %s: cannot watch it (out of memory)", path);
    return 0;
}

void sup_control_close(sup *s)
{
    if (s->ctl_ev)
        event_free(s->ctl_ev);
    s->ctl_ev = NULL;
    if (s->ctl_fd >= 0) {
        close(s->ctl_fd);
        unlink(s->conf->control_socket);
    }
    s->ctl_fd = -1;
}
