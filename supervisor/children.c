/*
 * children.c — fork, watch and restart the writer, the gateway and one
 * worker per pipeline; create and free pipeline segments.
 *
 * Policy (nginx, PostgreSQL): exit 0 of a child we asked to stop = done;
 * exit ZX_EXIT_FATAL_CONFIG = failed, not respawned; anything else is a
 * crash, restarted with exponential backoff (100 ms doubling to 30 s); a
 * pipeline that crashed 5 times within 60 s is marked failed.  Children
 * get PR_SET_PDEATHSIG so they go when the supervisor goes.
 *
 * It must never: block, parse user data, or touch a segment's rings.
 */
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netdb.h>
#include <unistd.h>

#include "common/log.h"
#include "common/proctitle.h"
#include "common/util.h"
#include "proto/chan.h"
#include "proto/control.h"
#include "supervisor/lease.h"
#include "supervisor/sup.h"
#include "workers/gateway/gateway.h"
#include "workers/sources/http/http_opts.h"
#include "workers/sources/source.h"
#include "workers/writer/writer.h"

#define FD_RESERVE 32

spipe *sup_find_pipe(sup *s, const char *name)
{
    for (size_t i = 0; i < s->npipes; i++)
        if (!s->pipes[i]->removing && strcmp(s->pipes[i]->name, name) == 0)
            return s->pipes[i];
    return NULL;
}

/* The ring sizes are decided by the configuration (conf/config.c, with
 * the ring budget); here they are only used. */
static void ring_caps(const zx_conf_pipeline *pc, uint64_t *in_cap, uint64_t *fr_cap)
{
    *in_cap = pc->in_ring_size;
    *fr_cap = pc->ring_size;
}

int sup_pipe_needs_new_rings(const spipe *p, const zx_conf_pipeline *pc)
{
    uint64_t in_cap, fr_cap;
    ring_caps(pc, &in_cap, &fr_cap);
    uint64_t have_in = p->seg.hdr->in_size ? zx_ring_capacity(&p->seg.in) : 0;
    return have_in != in_cap || zx_ring_capacity(&p->seg.frames) != fr_cap;
}

spipe *sup_pipe_new(sup *s, const zx_conf_pipeline *pc, char *err, size_t errlen)
{
    if (s->npipes >= sizeof(s->pipes) / sizeof(s->pipes[0])) {
        zx_seterr(err, errlen, "too many pipelines");
        return NULL;
    }
    spipe *p = calloc(1, sizeof(*p));
    if (!p) {
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(p->name, sizeof(p->name), "%s", pc->name);
    p->conf = pc;
    uint64_t in_cap, fr_cap;
    ring_caps(pc, &in_cap, &fr_cap);
    if (zx_segment_create(&p->seg, pc->name, in_cap, fr_cap, err, errlen) < 0) {
        free(p);
        return NULL;
    }
    p->efd = zx_eventfd();
    /* Descriptors are handed out lowest first: one this high means fewer
     * than FD_RESERVE are left, which the control socket, reloads and
     * restarts need more than one more pipeline does. */
    struct rlimit rl;
    int top = p->efd > p->seg.fd ? p->efd : p->seg.fd;
    if (p->efd < 0 || (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
                       (rlim_t)top + FD_RESERVE >= rl.rlim_cur)) {
        zx_seterr(err, errlen, "too few file descriptors left (limit %llu, %d kept in reserve): "
                 "raise the limit (LimitNOFILE= in the systemd unit, ulimit -n)",
                 (unsigned long long)rl.rlim_cur, FD_RESERVE);
        if (p->efd >= 0)
            close(p->efd);
        zx_segment_close(&p->seg);
        free(p);
        return NULL;
    }
    p->worker.role = ROLE_STREAM;
    p->worker.pipe = p;
    p->worker.chan = -1;
    p->worker.want = 1;
    snprintf(p->worker.name, sizeof(p->worker.name), "%s", pc->name);
    atomic_store(&p->seg.hdr->writer_up, s->writer_ready);
    p->in_use = 1;
    s->pipes[s->npipes++] = p;
    if (s->hooks.pipe_created)
        s->hooks.pipe_created(s, p);
    return p;
}

void sup_pipe_free(sup *s, spipe *p)
{
    for (size_t i = 0; i < s->npipes; i++) {
        if (s->pipes[i] == p) {
            memmove(&s->pipes[i], &s->pipes[i + 1], (s->npipes - i - 1) * sizeof(s->pipes[0]));
            s->npipes--;
            break;
        }
    }
    zx_segment_close(&p->seg);
    if (p->efd >= 0)
        close(p->efd);
    if (s->hooks.pipe_freed)
        s->hooks.pipe_freed(p);
    free(p);
}

void sup_set_writer_up(sup *s, int up)
{
    s->writer_ready = up;
    for (size_t i = 0; i < s->npipes; i++)
        atomic_store(&s->pipes[i]->seg.hdr->writer_up, (uint32_t)up);
}

int sup_listen_http(const zx_conf *c, char *err, size_t errlen)
{
    char port[16];
    snprintf(port, sizeof(port), "%u", c->http.port);
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    const char *host = c->http.host && c->http.host[0] ? c->http.host : NULL;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai) {
        zx_seterr(err, errlen, "server.http.listen %s: %s", c->http.listen, gai_strerror(gai));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 1024) < 0) {
        zx_seterr(err, errlen, "cannot listen on %s: %s", c->http.listen, strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static void on_child_chan(evutil_socket_t fd, short what, void *arg);

void sup_send_attach(sup *s, child *c, spipe *p)
{
    if (c->chan < 0 || c->pid == 0)
        return;
    json_t *o;
    if (c->role == ROLE_GATEWAY) {
        /* the gateway serves only the sources it feeds */
        const zx_source *src = p->conf ? zx_source_find(p->conf->source) : NULL;
        const zx_http_opts *ho = zx_http_opts_of(p->conf);
        if (!src || !(src->flags & ZX_SOURCE_GATEWAY) || !ho)
            return;
        o = json_pack("{s:s, s:s, s:s?, s:s?, s:b, s:I}", "name", p->name, "source",
                      src->name, "key", ho->key, "webhook_secret", ho->webhook_secret,
                      "ack_commit", ho->ack_commit, "max_body_size",
                      (json_int_t)p->conf->body_limit);
    } else {
        char lease[128]; /* a shared workspace: the lease it runs under */
        sup_lease_name(s->conf, p->conf, lease, sizeof(lease));
        o = json_pack("{s:s, s:I, s:I, s:s?}", "name", p->name, "max_columns",
                      (json_int_t)(p->conf ? p->conf->max_columns : 0), "max_parked_bytes",
                      (json_int_t)zx_conf_parked_bound(p->conf), "lease",
                      lease[0] ? lease : NULL);
    }
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
    int fds[2] = {p->seg.fd, p->efd};
    if (!js)
        zx_error("event=attach_send_failed child=%s pipeline=%s error=\"out of memory\"",
                 c->name, p->name);
    else if (sup_chan_send(s, c, ZX_CHAN_ATTACH, js, fds, 2) < 0)
        zx_warn("event=attach_send_failed child=%s pipeline=%s", c->name, p->name);
    free(js);
    json_decref(o);
}

void sup_send_detach(sup *s, child *c, const spipe *p)
{
    if (c->chan < 0 || c->pid == 0)
        return;
    char epoch[24];
    snprintf(epoch, sizeof(epoch), "%016llx", (unsigned long long)p->seg.hdr->epoch);
    json_t *o = json_pack("{s:s, s:s}", "name", p->name, "epoch", epoch);
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (js)
        sup_chan_send(s, c, ZX_CHAN_DETACH, js, NULL, 0);
    else
        zx_error("event=detach_send_failed child=%s pipeline=%s error=\"out of memory\"",
                 c->name, p->name);
    free(js);
    json_decref(o);
}

void sup_attach_all(sup *s, child *c)
{
    for (size_t i = 0; i < s->npipes; i++)
        if (!s->pipes[i]->removing && !s->pipes[i]->owned_conf)
            sup_send_attach(s, c, s->pipes[i]);
}

/* In the child: become role c.  Never returns. */
static void run_child(sup *s, child *c, int chan)
{
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != s->pid)
        _exit(0);
    zx_child_reset_signals();
    char title[96];
    int code = 1;
    if (c->role == ROLE_WRITER) {
        int keep[] = {chan, s->writer_efd, s->gateway_efd};
        zx_close_fds_except(keep, 3);
        zx_proctitle_set("zxd: writer");
        zx_log_set_proc("writer");
        sup_child_harden(s->conf, ROLE_WRITER, NULL);
        zx_writer_args a = {s->conf, chan, s->writer_efd, s->gateway_efd};
        code = zx_writer_main(&a);
    } else if (c->role == ROLE_GATEWAY) {
        int keep[] = {chan, s->gateway_efd, s->listen_fd};
        zx_close_fds_except(keep, 3);
        zx_proctitle_set("zxd: gateway");
        zx_log_set_proc("gateway");
        sup_child_harden(s->conf, ROLE_GATEWAY, NULL);
        zx_gateway_args a = {s->conf, chan, s->gateway_efd, s->listen_fd, s->gateway_generation};
        code = zx_gateway_main(&a);
    } else {
        spipe *p = c->pipe;
        const zx_source *src = zx_source_find(p->conf->source);
        int gw = src && (src->flags & ZX_SOURCE_GATEWAY) ? s->gateway_efd : -1;
        int keep[] = {p->efd, s->writer_efd, gw};
        zx_close_fds_except(keep, gw >= 0 ? 3 : 2);
        int sync = zx_conf_is_sync(p->conf);
        snprintf(title, sizeof(title), "zxd: %s %s", sync ? "sync" : "stream", p->name);
        zx_proctitle_set(title);
        snprintf(title, sizeof(title), "%s:%s", sync ? "sync" : "stream", p->name);
        zx_log_set_proc(title);
        sup_child_harden(s->conf, ROLE_STREAM, p->conf);
        zx_worker_args a = {s->conf, p->conf, &p->seg, p->efd, s->writer_efd, gw, 0, 0, 0};
        if (sync && s->hooks.worker_args) /* the run syncs.c set before forking */
            s->hooks.worker_args(p, &a.run_id, &a.run_flags, &a.run_expect_rows);
        if (!src) {
            /* the configuration takes only registered sources: a guard */
            zx_error("event=fatal pipeline=%s error=\"source %s is not registered\"",
                     p->name, p->conf->source);
            code = ZX_EXIT_FATAL_CONFIG;
        } else {
            code = zx_source_main(src, &a);
        }
    }
    _exit(code);
}

int sup_spawn(sup *s, child *c)
{
    int sv[2] = {-1, -1};
    if (s->hooks.spawn_held && s->hooks.spawn_held(s, c))
        return 0;
    if (c->role != ROLE_STREAM &&
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(c->last_error, sizeof(c->last_error), "socketpair: %s", strerror(errno));
        return -1;
    }
    if (c->role == ROLE_GATEWAY)
        s->gateway_generation++;
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(c->last_error, sizeof(c->last_error), "fork: %s", strerror(errno));
        if (sv[0] >= 0) {
            close(sv[0]);
            close(sv[1]);
        }
        return -1;
    }
    if (pid == 0)
        run_child(s, c, sv[1]);
    c->pid = pid;
    c->state = c->role == ROLE_STREAM ? ST_RUNNING : ST_STARTING;
    c->kill_at_ms = 0;
    c->next = NEXT_NONE;
    if (c->role != ROLE_STREAM) {
        close(sv[1]);
        c->chan = sv[0];
        zx_set_nonblock(c->chan);
        c->chan_ev = event_new(s->base, c->chan, EV_READ | EV_PERSIST, on_child_chan, c);
        if (!c->chan_ev || event_add(c->chan_ev, NULL) < 0)
            /* its events and READY go unheard; it still runs, and the
             * supervisor learns of its death from SIGCHLD */
            zx_error("event=watch_failed process=%s error=\"out of memory\"", c->name);
        sup_attach_all(s, c);
        if (c->role == ROLE_GATEWAY)
            sup_feed_gateway_history(s, c);
        sup_chan_send(s, c, ZX_CHAN_READY, "{}", NULL, 0);
        if (c->role == ROLE_GATEWAY)
            c->state = ST_RUNNING;
    } else {
        atomic_store(&c->pipe->seg.hdr->worker_stopped, 0);
        atomic_store(&c->pipe->seg.hdr->worker_failed, 0);
        atomic_store(&c->pipe->seg.hdr->worker_up, 1);
    }
    zx_info("event=start process=%s pid=%d", c->name, (int)pid);
    return 0;
}

/* Messages from the writer (events, ready) and the gateway. */
static void on_child_chan(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    child *c = arg;
    sup *s = zx_the_sup;
    char buf[ZX_CHAN_MAX];
    for (;;) {
        int fds[4], nfds = 0;
        int t = zx_chan_recv(fd, buf, sizeof(buf), fds, &nfds);
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        if (t <= 0) {
            if (t == 0 || errno != EAGAIN) {
                event_del(c->chan_ev);
            }
            return;
        }
        if (t == ZX_CHAN_EVENT && c->role == ROLE_WRITER && s->hooks.writer_event)
            s->hooks.writer_event(s, buf);
        if (t == ZX_CHAN_EVENT)
            sup_feed(s, buf);
        else if (t == ZX_CHAN_API && c->role == ROLE_GATEWAY && s->hooks.gateway_api)
            s->hooks.gateway_api(s, buf);
        else if (t == ZX_CHAN_LEASE && c->role == ROLE_WRITER && s->hooks.writer_lease)
            s->hooks.writer_lease(s, buf);
        else if (t == ZX_CHAN_READY && c->role == ROLE_WRITER) {
            c->state = ST_RUNNING;
            sup_set_writer_up(s, 1);
        }
    }
}

static void describe_exit(int st, char *buf, size_t n)
{
    if (WIFEXITED(st))
        snprintf(buf, n, "exited with status %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
        snprintf(buf, n, "ended with wait status %d", st);
}

static child *find_child(sup *s, pid_t pid)
{
    if (s->writer.pid == pid)
        return &s->writer;
    if (s->gateway.pid == pid)
        return &s->gateway;
    for (size_t i = 0; i < s->npipes; i++)
        if (s->pipes[i]->worker.pid == pid)
            return &s->pipes[i]->worker;
    return NULL;
}

/* A stream worker we stopped on purpose is gone (or was not running):
 * finish what the stop was for. */
static void after_stop(sup *s, child *c, zx_next next, pid_t old)
{
    spipe *p = c->pipe;
    /* the jobs waiting for the old worker to let go (a reload abandoned
     * what it made upstream: retire it now) */
    if (p && s->hooks.worker_stopped)
        s->hooks.worker_stopped(s, p);
    if (next == NEXT_RESTART && !s->shutting_down) {
        c->want = 1;
        sup_spawn(s, c);
        if (c->state == ST_FAILED)
            return;   /* its source is not available: said by sup_spawn */
        sup_feedf(s, "restart", c->role == ROLE_STREAM ? c->name : NULL,
                  "{\"process\":\"%s\",\"pid\":%d,\"reason\":\"requested\"}", c->name, (int)c->pid);
        return;
    }
    if (c->role != ROLE_STREAM)
        return;
    if (next == NEXT_REMOVE || next == NEXT_RECREATE) {
        /* The worker has answered everything it took: the gateway stops
         * routing to these rings, the writer applies what is left in them. */
        const zx_conf_pipeline *pc = p->conf;
        int forget = p->forget_state;
        char name[64];
        snprintf(name, sizeof(name), "%s", p->name);
        sup_send_detach(s, &s->gateway, p);
        sup_send_detach(s, &s->writer, p);
        if (old)
            sup_feedf(s, "stop", name, "{\"process\":\"%s\",\"pid\":%d}", name, (int)old);
        sup_pipe_free(s, p);
        /* removed: its positions and state go too (after its last frames) */
        if (next == NEXT_REMOVE && forget && !s->shutting_down && s->hooks.pipe_forgotten)
            s->hooks.pipe_forgotten(s, name);
        if (next == NEXT_RECREATE && pc && !s->shutting_down) {
            char err[256];
            spipe *np = sup_pipe_new(s, pc, err, sizeof(err));
            if (!np) {
                if (!s->hooks.start_failed || !s->hooks.start_failed(s, name, err)) {
                    zx_error("event=pipeline_not_started pipeline=%s error=\"%s\"", name, err);
                    sup_feedf(s, "failed", name, "{\"message\":\"%s could not be started\"}",
                              name);
                }
                return;
            }
            sup_send_attach(s, &s->writer, np);
            sup_send_attach(s, &s->gateway, np);
            if (sup_spawn(s, &np->worker) < 0) {
                np->worker.state = ST_BACKOFF;
                np->worker.respawn_at_ms = zx_mono_ms() + 1000;
            }
        }
        return;
    }
    atomic_store(&p->seg.hdr->worker_stopped, 1);
    if (old)
        sup_feedf(s, "stop", c->name, "{\"process\":\"%s\",\"pid\":%d}", c->name, (int)old);
}

/* The event the pipeline's source left for the feed, if new. */
static void feed_source_note(sup *s, spipe *p)
{
    zx_seg_hdr *h = p->seg.hdr;
    if (!h)
        return;
    uint32_t seq = atomic_load_explicit(&h->source_note_seq, memory_order_acquire);
    if (seq == p->note_seq_seen || (seq & 1))
        return;
    char note[ZX_SEG_SOURCE_NOTE_MAX];
    if (!zx_segment_read_text(&h->source_note_seq, h->source_note, sizeof(h->source_note), note,
                              sizeof(note)))
        return;
    p->note_seq_seen = seq;
    json_t *o = json_loads(note, 0, NULL);
    if (json_is_object(o)) {
        json_object_set_new(o, "pipeline", json_string(p->name));
        char *js = json_dumps(o, JSON_COMPACT);
        sup_feed(s, js);
        free(js);
    }
    json_decref(o);
}

static void child_gone(sup *s, child *c, int st)
{
    char why[200];
    describe_exit(st, why, sizeof(why));
    if (c->role == ROLE_STREAM && c->pipe)
        feed_source_note(s, c->pipe); /* its last words, before its exit */
    pid_t old = c->pid;
    c->pid = 0;
    if (c->chan_ev) {
        event_free(c->chan_ev);
        c->chan_ev = NULL;
    }
    sup_outbox_clear(c);
    if (c->chan >= 0) {
        close(c->chan);
        c->chan = -1;
    }
    if (c->role == ROLE_WRITER)
        sup_set_writer_up(s, 0);
    if (c->role == ROLE_STREAM)
        atomic_store(&c->pipe->seg.hdr->worker_up, 0);

    if (c->role == ROLE_STREAM && zx_conf_is_sync(c->pipe->conf)) {
        /* a sync's worker ends with its run, whatever the way: never a
         * restart with backoff (syncs.c records the run) */
        int stopped = !c->want || s->shutting_down;
        zx_next next = c->next;
        c->next = NEXT_NONE;
        if (s->hooks.sync_exited)
            s->hooks.sync_exited(s, c->pipe, st);
        c->state = ST_STOPPED;
        if (stopped)
            after_stop(s, c, next, old);
        return;
    }

    if (!c->want || s->shutting_down) {
        zx_info("event=exit process=%s pid=%d status=\"%s\"", c->name, (int)old, why);
        c->state = ST_STOPPED;
        zx_next next = c->next;
        c->next = NEXT_NONE;
        after_stop(s, c, next, old);
        return;
    }

    /* a crash, or a refusal (not restarted, so not counted as a restart) */
    int64_t now = zx_mono_ms();
    int fatal = WIFEXITED(st) && WEXITSTATUS(st) == ZX_EXIT_FATAL_CONFIG;
    if (!fatal)
        c->restarts++;
    snprintf(c->last_error, sizeof(c->last_error), "%s", why);
    memmove(&c->crash_ms[1], &c->crash_ms[0], sizeof(c->crash_ms) - sizeof(c->crash_ms[0]));
    c->crash_ms[0] = now;
    if (c->ncrash < 5)
        c->ncrash++;
    int too_many = c->ncrash >= 5 && now - c->crash_ms[4] <= 60000;
    if (c->role != ROLE_STREAM && fatal) {
        /* The writer or the gateway cannot run with this configuration
         * (e.g. the workspace is another zxd's): restarting it would only
         * loop.  zxd drains what it can and exits 1. */
        c->state = ST_FAILED;
        c->want = 0;
        snprintf(c->last_error, sizeof(c->last_error), "%s; fatal error, not restarted", why);
        zx_error("event=fatal process=%s pid=%d reason=\"%s\" action=\"zxd stops\"", c->name,
                 (int)old, c->last_error);
        s->fatal = 1;
        return;
    }
    if (c->role == ROLE_STREAM && (fatal || too_many)) {
        c->state = ST_FAILED;
        c->want = 0;
        atomic_store(&c->pipe->seg.hdr->worker_stopped, 1);
        atomic_store(&c->pipe->seg.hdr->worker_failed, 1);
        char msg[sizeof(c->last_error)], serr[ZX_SEG_SOURCE_ERROR_MAX] = "";
        /* a refusal: the source said why (runtime.c), which says more than
         * the exit status */
        if (fatal)
            zx_segment_read_text(&c->pipe->seg.hdr->source_error_seq,
                                 c->pipe->seg.hdr->source_error,
                                 sizeof(c->pipe->seg.hdr->source_error), serr, sizeof(serr));
        if (fatal && serr[0])
            snprintf(c->last_error, sizeof(c->last_error), "%s (not restarted: a restart "
                     "cannot fix this; fix it, then zxctl restart %s)", serr, c->name);
        else
            snprintf(c->last_error, sizeof(c->last_error), "%s; %s", why,
                     fatal ? "fatal error, not restarted"
                           : "crashed 5 times within 60 s, not restarted");
        snprintf(msg, sizeof(msg), "%s", c->last_error);
        zx_error("event=failed process=%s pid=%d reason=\"%s\"", c->name, (int)old, msg);
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "event", "failed", "pipeline", c->name,
                              "process", c->name, "message", msg);
        char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
        sup_feed(s, js);
        free(js);
        json_decref(o);
        return;
    }
    /* backoff: 100 ms doubling per recent crash, at most 30 s; a child that
     * ran for a minute starts again from 100 ms */
    unsigned recent = 0;
    for (unsigned i = 0; i < c->ncrash; i++)
        if (now - c->crash_ms[i] <= 60000)
            recent++;
    int64_t delay = 100;
    for (unsigned i = 1; i < recent && delay < 30000; i++)
        delay *= 2;
    if (delay > 30000)
        delay = 30000;
    c->state = ST_BACKOFF;
    c->respawn_at_ms = now + delay;
    zx_warn("event=crash process=%s pid=%d status=\"%s\" restart_in_ms=%lld", c->name, (int)old,
            why, (long long)delay);
    json_t *o = json_pack("{s:s, s:s?, s:s, s:i, s:s, s:s}", "event", "restart", "pipeline",
                          c->role == ROLE_STREAM ? c->name : NULL, "process", c->name, "pid",
                          (int)old, "reason", why, "message", why);
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
    sup_feed(s, js);
    free(js);
    json_decref(o);
}

void sup_reap(sup *s)
{
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0)
            return;
        child *c = find_child(s, pid);
        if (c)
            child_gone(s, c, st);
    }
}

void sup_stop_child(sup *s, child *c, zx_next next)
{
    (void)s;
    c->want = 0;
    c->next = next;
    if (c->role == ROLE_STREAM && next != NEXT_RESTART)
        atomic_store(&c->pipe->seg.hdr->worker_stopped, 1); /* gateway: 503 from now on */
    if (c->pid > 0) {
        kill(c->pid, SIGTERM);
        c->state = ST_DRAINING;
        c->kill_at_ms = zx_mono_ms() + 10000;
    } else {
        /* not running (backoff or failed): act as if it just exited */
        c->state = ST_STOPPED;
        c->next = NEXT_NONE;
        after_stop(s, c, next, 0);
    }
}

static void tick_one(sup *s, child *c, int64_t now)
{
    if (c->pid > 0 && c->kill_at_ms && now > c->kill_at_ms) {
        zx_warn("event=kill process=%s pid=%d reason=\"did not stop within 10 s\"", c->name, (int)c->pid);
        kill(c->pid, SIGKILL);
        c->kill_at_ms = 0;
    }
    if (c->pid == 0 && c->state == ST_BACKOFF && c->want && !s->shutting_down &&
        now >= c->respawn_at_ms) {
        if (sup_spawn(s, c) < 0)
            c->respawn_at_ms = now + 1000; /* restarts are announced in child_gone */
    }
}

void sup_tick_children(sup *s)
{
    int64_t now = zx_mono_ms();
    tick_one(s, &s->writer, now);
    tick_one(s, &s->gateway, now);
    for (size_t i = 0; i < s->npipes; i++) {
        spipe *p = s->pipes[i];
        size_t before = s->npipes;
        feed_source_note(s, p);
        tick_one(s, &p->worker, now);
        if (s->npipes != before)
            i--;
    }
}
