/*
 * probe.c — `zxctl test NAME`: try a pipeline's or a connection's settings
 * (connect, authenticate, list what is there) in a short-lived process of
 * its own, and relay its one-paragraph answer to the zxctl client.
 *
 * Which test: the source's (registry.c: zx_source_tester), the
 * connection's by its kind, or the workspace's.
 *
 * Why a process: a source's test (librdkafka, libpq...) blocks for up to
 * seconds and may crash on a hostile server; the supervisor's loop must do
 * neither.  The prober inherits the loaded configuration (secrets
 * resolved) through fork, writes one JSON line into a pipe and exits.
 *
 * It must never: block the loop (the pipe is read by an event), outlive
 * its deadline (SIGKILL, and alarm() in the child), or answer a client
 * that has gone (sup_probe_forget).
 */
#include <errno.h>
#include <fcntl.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "supervisor/sup.h"
#include "workers/sources/source.h"
#include "workers/writer/workspace.h"

#define PROBE_TIMEOUT_MS 10000   /* what a source's test may take */
#define PROBE_MAX 4              /* probes at once */
#define PROBE_OUT_MAX 8192       /* bytes of answer kept */

typedef struct probe {
    struct probe *next;
    struct bufferevent *bev;     /* the client; NULL once it left */
    pid_t pid;
    int fd;
    struct event *ev;
    char buf[PROBE_OUT_MAX];
    size_t len;
    char name[128];
} probe;

static probe *probes;

static void probe_free(probe *p)
{
    for (probe **pp = &probes; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    if (p->ev)
        event_free(p->ev);
    if (p->fd >= 0)
        close(p->fd);
    if (p->pid > 0)
        kill(p->pid, SIGKILL); /* reaped by sup_reap */
    free(p);
}

/* Answer the client (if still there) with the prober's line, or why there
 * is none, and forget the probe. */
static void probe_finish(probe *p, const char *why)
{
    if (p->bev) {
        json_t *o = NULL;
        if (!why) {
            p->buf[p->len < sizeof(p->buf) ? p->len : sizeof(p->buf) - 1] = '\0';
            o = json_loads(p->buf, 0, NULL);
            if (!o)
                why = "the test process gave no answer (it crashed?); see the zxd log";
        }
        if (why)
            o = json_pack("{s:b, s:s, s:s}", "ok", 0, "name", p->name, "error", why);
        sup_control_reply(p->bev, o);
        sup_control_finish(zx_the_sup, p->bev);
    }
    if (p->pid > 0 && !why)
        p->pid = 0; /* exited on its own: nothing to kill */
    probe_free(p);
}

static void on_probe(evutil_socket_t fd, short what, void *arg)
{
    probe *p = arg;
    if (what & EV_TIMEOUT) {
        probe_finish(p, "the test did not finish in time (it was stopped)");
        return;
    }
    for (;;) {
        ssize_t n = read(fd, p->buf + p->len, sizeof(p->buf) - 1 - p->len);
        if (n > 0) {
            p->len += (size_t)n;
            if (p->len < sizeof(p->buf) - 1)
                continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        probe_finish(p, NULL); /* EOF, error or full: that is the answer */
        return;
    }
}

/* In the child: run the test (test NULL: the workspace's), write the
 * answer, exit.  what: the source (or connection kind) tested. */
static void run_probe(zx_source_test_fn test, const char *what, const zx_conf *conf,
                      const zx_conf_pipeline *pc, const zx_conf_connection *cc, const char *name,
                      int fd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    alarm(PROBE_TIMEOUT_MS / 1000 + 5);
    signal(SIGPIPE, SIG_IGN);
    char out[4096] = "";
    int rc = test ? test(conf, pc, cc, PROBE_TIMEOUT_MS, out, sizeof(out))
                  : zx_ws_test(conf, out, sizeof(out));
    json_t *o = rc == 0 ? json_pack("{s:b, s:s, s:s, s:s}", "ok", 1, "name", name, "source",
                                    what, "result", out)
                        : json_pack("{s:b, s:s, s:s, s:s}", "ok", 0, "name", name, "source",
                                    what, "error", out[0] ? out : "the test failed");
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (s) {
        size_t len = strlen(s), off = 0;
        while (off < len) {
            ssize_t n = write(fd, s + off, len - off);
            if (n <= 0)
                break;
            off += (size_t)n;
        }
    }
    _exit(0);
}

json_t *sup_probe_start(sup *s, struct bufferevent *bev, const char *name)
{
    const zx_conf_pipeline *pc = zx_conf_find(s->conf, name);
    const zx_conf_connection *cc = pc ? pc->conn : zx_conf_find_connection(s->conf, name);
    /* "workspace" names the workspace unless a pipeline or a connection
     * has that name */
    int ws = !pc && !cc && strcmp(name, "workspace") == 0;
    if (!pc && !cc && !ws)
        return json_pack("{s:b, s:s}", "ok", 0, "error",
                         "no pipeline or connection of that name in the configuration "
                         "(`zxctl test workspace` tests the workspace)");
    /* a source's test (registry.c); a connection's, by its kind */
    const char *what = ws ? "workspace" : pc ? pc->source : cc->kind;
    zx_source_test_fn test = ws ? NULL : zx_source_tester(what);
    if (!ws && !test) {
        char msg[300];
        snprintf(msg, sizeof(msg), "pipeline %s (source %s) has nothing to connect to: "
                 "clients push to the gateway on %s", name, pc ? pc->source : "?",
                 s->conf->http.listen);
        return json_pack("{s:b, s:s, s:s}", "ok", 1, "name", name, "result", msg);
    }
    size_t n = 0;
    for (probe *p = probes; p; p = p->next)
        n++;
    if (n >= PROBE_MAX)
        return json_pack("{s:b, s:s}", "ok", 0, "error",
                         "too many tests running at once; retry in a few seconds");
    probe *p = calloc(1, sizeof(*p));
    int fds[2];
    if (!p || pipe2(fds, O_CLOEXEC) < 0) {
        free(p);
        return json_pack("{s:b, s:s}", "ok", 0, "error", "cannot start the test (out of resources)");
    }
    p->fd = fds[0];
    snprintf(p->name, sizeof(p->name), "%s", name);
    pid_t pid = fork();
    if (pid == 0) {
        /* hold none of the supervisor's sockets (a writer's channel kept
         * open here would hide its death) */
        zx_close_fds_except(&fds[1], 1);
        zx_log_set_proc("test");
        run_probe(test, what, s->conf, pc, cc, name, fds[1]);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        free(p);
        return json_pack("{s:b, s:s}", "ok", 0, "error", "cannot start the test (fork failed)");
    }
    p->pid = pid;
    zx_set_nonblock(p->fd);
    struct timeval tv = {PROBE_TIMEOUT_MS / 1000 + 3, 0};
    p->ev = event_new(s->base, p->fd, EV_READ | EV_PERSIST, on_probe, p);
    p->bev = bev;
    p->next = probes;
    probes = p;
    if (!p->ev || event_add(p->ev, &tv) < 0) {
        probe_free(p);
        return json_pack("{s:b, s:s}", "ok", 0, "error", "cannot watch the test (out of memory)");
    }
    zx_info("event=test_start name=%s source=%s pid=%d", name, what, (int)pid);
    return NULL; /* answered later */
}

void sup_probe_forget(struct bufferevent *bev)
{
    for (probe *p = probes; p; p = p->next)
        if (p->bev == bev)
            p->bev = NULL;
}
