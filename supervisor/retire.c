/*
 * retire.c — retire what a gone pipeline made upstream, in a short-lived
 * process of its own, as `zxctl test` runs its prober (probe.c):
 *   - after a reload: a pipeline whose source has a retire hook
 *     (conf/plugin.h, zx_plugin.retire: postgres drops its
 *     replication slot and the publication zx made) removed, or changed so
 *     that what it made is abandoned (another subject, e.g. slot name,
 *     another connection, another source), is planned by sup_retire_plan
 *     while the reload still has both configurations (the old one is kept
 *     alive until the hook has run), and retired once its old worker has
 *     exited (sup_retire_jobs_run, from after_stop): the hook is called
 *     with the running configuration and the pipeline as the OLD one had
 *     it.  The outcome is logged (event=<what>_dropped, <what>_kept or
 *     <what>_drop_failed, e.g. slot_dropped, with the pipeline, the
 *     subject and the message) and sent to the feed; a failure is tried
 *     again with backoff (RETIRE_TRIES times, 5 s doubling), each failure
 *     reported;
 *   - a plug-in's own control command (conf/plugin.h, zx_plugin_admin:
 *     `zxctl drop-slot NAME [--connection CONN]` of postgres): its check
 *     answers at once or lets it go on; its run is done in a process
 *     (at most ADMIN_MAX at once), which answers the zxctl client; the
 *     outcome is logged and sent to the feed (<what>_dropped or
 *     <what>_drop_failed, without a pipeline).  What it does is the
 *     plug-in's; nothing of it is written here.
 *
 * Why a process: the hooks block (a database connecting, waiting for the
 * stopped worker to let go of what is dropped); the supervisor's loop must
 * never.  The process inherits what it needs through fork,
 * writes one JSON line into a pipe and exits.
 *
 * It must never: block the loop (the pipe is read by an event), outlive
 * its deadline (SIGKILL, and alarm() in the child), retire anything when
 * zxd merely stops or restarts a worker (only a reload plans it), or put a
 * dsn's password in a log line, the feed or an answer.
 */
#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "conf/plugin.h"
#include "supervisor/jobs.h"

#define RELOAD_TIMEOUT_S ZX_RETIRE_TIMEOUT_S /* a reload's retire, at most */
#define RETIRE_RUN_MAX 4          /* reload retires running at once; more wait */
#define RETIRE_TRIES 4            /* a failed retire is tried this often */
#define RETIRE_BACKOFF_MS 5000    /* first wait before trying again, doubling */
#define ADMIN_MAX 4               /* plug-ins' control commands running at once */
#define OUT_MAX (256 * 1024)      /* bytes of a process's answer kept */
#define MSG_MAX 4096              /* one retire's message */
#define ADMIN_MSG_MAX (64 * 1024) /* a control command's result or error */

/* An old configuration kept alive for the retires planned from it. */
typedef struct held_conf {
    struct held_conf *next;
    zx_conf *conf;
    unsigned refs;                /* jobs planned from it */
    int released;                 /* the reload is done with it */
} held_conf;

static held_conf *helds;

struct retire_job {
    retire_job *next;
    const zx_plugin_admin *admin; /* a plug-in's control command (zxctl), or
                                     NULL: a reload's retire */
    struct bufferevent *bev;      /* admin: the client (NULL once it left) */
    json_t *req;                  /* admin: the request (its options) */
    /* a reload's: the hook, the pipeline as the old configuration had it */
    const zx_plugin *src;
    const zx_conf_pipeline *old;  /* in held->conf */
    held_conf *held;
    unsigned tries;               /* failed so far */
    struct event *wait_ev;        /* waiting to be tried again */
    char *pipeline;               /* reload: the pipeline retired */
    const char *what;             /* "slot": its events' and field's name */
    char *subject;                /* what is retired (a slot's name); admin:
                                     the request's NAME */
    pid_t pid;
    int fd;
    struct event *ev;
    char *buf;                    /* OUT_MAX bytes, while running */
    size_t len;
};

static retire_job *running;                 /* forked, answer awaited */
static retire_job *queue_head, *queue_tail; /* reload retires waiting for room */
static retire_job *waiting;                 /* failed, waiting to be tried again */

/* Keep c alive for one more job / let one job go (c freed when the reload
 * is done with it and no job needs it). */
static held_conf *conf_hold(zx_conf *c)
{
    held_conf *h = helds;
    while (h && h->conf != c)
        h = h->next;
    if (!h) {
        if (!(h = calloc(1, sizeof(*h))))
            return NULL;
        h->conf = c;
        h->next = helds;
        helds = h;
    }
    h->refs++;
    return h;
}

static void conf_check(held_conf *h)
{
    if (h->refs || !h->released)
        return;
    for (held_conf **pp = &helds; *pp; pp = &(*pp)->next)
        if (*pp == h) {
            *pp = h->next;
            break;
        }
    zx_conf_free(h->conf);
    free(h);
}

void sup_conf_release(zx_conf *c)
{
    held_conf *h = helds;
    while (h && h->conf != c)
        h = h->next;
    if (!h) {
        zx_conf_free(c);
        return;
    }
    h->released = 1;
    conf_check(h);
}

static char *dup_or_null(const char *s, int *oom)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = 1;
    return d;
}

void sup_retire_jobs_free(retire_job *j)
{
    while (j) {
        retire_job *next = j->next;
        if (j->ev)
            event_free(j->ev);
        if (j->wait_ev)
            event_free(j->wait_ev);
        if (j->held) {
            j->held->refs--;
            conf_check(j->held);
        }
        if (j->fd >= 0)
            close(j->fd);
        if (j->pid > 0)
            kill(j->pid, SIGKILL); /* reaped by sup_reap */
        free(j->buf);
        free(j->pipeline);
        free(j->subject);
        json_decref(j->req);
        free(j);
        j = next;
    }
}

/* ---- outcomes -------------------------------------------------------- */

/* Log a retire's outcome (at level) and send it to the feed: event
 * <what>_<outcome> (slot_dropped, slot_kept, slot_drop_failed), with the
 * pipeline (NULL for a control command), the field <what> set to subject
 * and the message. */
static void report(sup *s, int level, const char *what, const char *outcome,
                   const char *pipeline, const char *subject, const char *msg)
{
    char q[2048], event[64];
    snprintf(event, sizeof(event), "%s_%s", what, outcome);
    zx_log(level, "event=%s pipeline=%s %s=%s message=%s", event, pipeline ? pipeline : "-",
           what, subject, zx_log_quote(msg, q, sizeof(q)));
    json_t *o = json_pack("{s:s, s:s?, s:s, s:s}", "event", event, "pipeline", pipeline,
                          what, subject, "message", msg);
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
    sup_feed(s, js);
    free(js);
    json_decref(o);
}

/* A reload's retire is over: rc (ZX_RETIRE_*) and its message.  1 when
 * it is to be tried again (j kept), else 0. */
static int reload_outcome(sup *s, retire_job *j, int rc, const char *msg)
{
    if (rc == ZX_RETIRE_DONE) {
        report(s, ZX_LOG_INFO, j->what, "dropped", j->pipeline, j->subject, msg);
        return 0;
    }
    if (rc == ZX_RETIRE_KEPT) {
        report(s, ZX_LOG_WARN, j->what, "kept", j->pipeline, j->subject, msg);
        return 0;
    }
    j->tries++;
    if (j->tries < RETIRE_TRIES && !s->shutting_down) {
        char full[MSG_MAX + 200];
        int64_t ms = (int64_t)RETIRE_BACKOFF_MS << (j->tries - 1);
        snprintf(full, sizeof(full), "%s; trying again in %lld s (attempt %u of %d)", msg,
                 (long long)(ms / 1000), j->tries + 1, RETIRE_TRIES);
        report(s, ZX_LOG_ERROR, j->what, "drop_failed", j->pipeline, j->subject, full);
        return 1;
    }
    report(s, ZX_LOG_ERROR, j->what, "drop_failed", j->pipeline, j->subject, msg);
    return 0;
}

/* ---- the process ----------------------------------------------------- */

static void write_line(int fd, json_t *o)
{
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (js)
        zx_write_all(fd, js, strlen(js));
    free(js);
    json_decref(o);
}

/* In the child: a plug-in's control command; the answer is the control
 * protocol's (proto/control.h): "ok", "name", "result" or "error", and
 * the fields the command adds. */
static json_t *run_admin(const retire_job *j)
{
    char *msg = malloc(ADMIN_MSG_MAX);
    json_t *more = json_object();
    if (!msg || !more) {
        free(msg);
        json_decref(more);
        return json_pack("{s:b, s:s, s:s}", "ok", 0, "name", j->subject, "error",
                         "out of memory");
    }
    msg[0] = '\0';
    int rc = j->admin->run(zx_the_sup->conf, j->subject, j->req, msg, ADMIN_MSG_MAX, more);
    int ok = rc == ZX_RETIRE_DONE;
    json_t *o = json_pack("{s:b, s:s, s:s}", "ok", ok, "name", j->subject, ok ? "result" : "error",
                          msg[0] ? msg : ok ? "done" : "failed");
    if (o)
        json_object_update_missing(o, more);
    json_decref(more);
    free(msg);
    return o;
}

/* How long j's process may take, in seconds. */
static int job_timeout_s(const retire_job *j)
{
    return j->admin ? j->admin->timeout_s : RELOAD_TIMEOUT_S;
}

/* In the child: do j, write the answer, exit. */
static void run_job(const retire_job *j, int fd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* not the supervisor's handlers (libevent's, on a socket closed here):
     * a SIGTERM ends this process */
    zx_child_reset_signals();
    alarm((unsigned)job_timeout_s(j) + 5);
    if (j->admin) {
        write_line(fd, run_admin(j));
    } else {
        /* the running configuration (as forked), the old pipeline */
        char out[MSG_MAX] = "";
        int rc = j->src->retire(zx_the_sup->conf, j->old, out, sizeof(out));
        if (!out[0])
            snprintf(out, sizeof(out), "%s", rc == ZX_RETIRE_FAILED ? "failed" : "done");
        write_line(fd, json_pack("{s:i, s:s}", "rc", rc, "message", out));
    }
    _exit(0);
}

static void unlink_running(retire_job *j)
{
    for (retire_job **pp = &running; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    j->next = NULL;
}

static void pump(sup *s);
static int retry_later(sup *s, retire_job *j);

/* j's process's name in logs and messages. */
static const char *job_proc(const retire_job *j)
{
    return j->admin ? j->admin->process : "retire";
}

/* The process is done (why NULL: its line is in j->buf) or failed (why):
 * answer or report, forget j, start what waits. */
static void job_finish(retire_job *j, const char *why)
{
    sup *s = zx_the_sup;
    unlink_running(j);
    if (!why)
        j->pid = 0; /* exited on its own: nothing to kill */
    j->buf[j->len < OUT_MAX ? j->len : OUT_MAX - 1] = '\0';
    json_t *o = why ? NULL : json_loads(j->buf, 0, NULL);
    char crashed[160];
    if (!why && !json_is_object(o)) {
        snprintf(crashed, sizeof(crashed), "the %s process gave no answer (it crashed?); see "
                 "the zxd log", job_proc(j));
        why = crashed;
    }
    if (j->admin) {
        if (why) {
            json_decref(o);
            o = json_pack("{s:b, s:s, s:s}", "ok", 0, "name", j->subject, "error", why);
        }
        int ok = json_is_true(json_object_get(o, "ok"));
        const char *m = json_string_value(json_object_get(o, ok ? "result" : "error"));
        /* asked for by the operator: a refusal is their answer, not the
         * daemon's error */
        report(s, ZX_LOG_INFO, j->what, ok ? "dropped" : "drop_failed", NULL, j->subject,
               m ? m : "?");
        if (j->bev) {
            sup_control_reply(j->bev, o); /* takes o */
            sup_control_finish(s, j->bev);
        } else {
            json_decref(o);
        }
    } else {
        json_t *rc = json_object_get(o, "rc");
        const char *m = json_string_value(json_object_get(o, "message"));
        int again = reload_outcome(s, j, why || !json_is_integer(rc) ? ZX_RETIRE_FAILED
                                                                     : (int)json_integer_value(rc),
                                   why ? why : m ? m : "?");
        json_decref(o);
        if (again && retry_later(s, j) == 0) {
            pump(s);
            return;
        }
    }
    sup_retire_jobs_free(j);
    pump(s);
}

static void on_job(evutil_socket_t fd, short what, void *arg)
{
    retire_job *j = arg;
    if (what & EV_TIMEOUT) {
        char why[160];
        snprintf(why, sizeof(why), "the %s process did not finish in time (it was stopped)",
                 job_proc(j));
        job_finish(j, why);
        return;
    }
    for (;;) {
        ssize_t n = read(fd, j->buf + j->len, OUT_MAX - 1 - j->len);
        if (n > 0) {
            j->len += (size_t)n;
            if (j->len < OUT_MAX - 1)
                continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        job_finish(j, NULL); /* EOF, error or full: that is the answer */
        return;
    }
}

/* Fork j's process and watch it.  0, or -1 with why (j not running). */
static int job_start(sup *s, retire_job *j, char *why, size_t whylen)
{
    int fds[2];
    if (!j->buf && !(j->buf = malloc(OUT_MAX))) {
        snprintf(why, whylen, "cannot start the %s process (out of memory)", job_proc(j));
        return -1;
    }
    if (pipe2(fds, O_CLOEXEC) < 0) {
        snprintf(why, whylen, "cannot start the %s process (out of descriptors)", job_proc(j));
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        /* hold none of the supervisor's sockets */
        zx_close_fds_except(&fds[1], 1);
        zx_log_set_proc(job_proc(j));
        run_job(j, fds[1]);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        snprintf(why, whylen, "cannot start the %s process (fork failed)", job_proc(j));
        return -1;
    }
    j->pid = pid;
    j->fd = fds[0];
    zx_set_nonblock(j->fd);
    j->next = running;
    running = j;
    struct timeval tv = {job_timeout_s(j), 0};
    j->ev = event_new(s->base, j->fd, EV_READ | EV_PERSIST, on_job, j);
    if (!j->ev || event_add(j->ev, &tv) < 0) {
        unlink_running(j);
        snprintf(why, whylen, "cannot watch the %s process (out of memory)", job_proc(j));
        return -1; /* the caller frees j: kills the process */
    }
    zx_info("event=%s_drop_start pipeline=%s %s=%s pid=%d", j->what,
            j->pipeline ? j->pipeline : "-", j->what, j->subject, (int)pid);
    return 0;
}

static size_t count_running(int admin)
{
    size_t n = 0;
    for (retire_job *j = running; j; j = j->next)
        if ((j->admin != NULL) == admin)
            n++;
    return n;
}

/* Start the reload drops that wait, while there is room. */
static void pump(sup *s)
{
    while (queue_head && count_running(0) < RETIRE_RUN_MAX) {
        retire_job *j = queue_head;
        queue_head = j->next;
        if (!queue_head)
            queue_tail = NULL;
        j->next = NULL;
        char why[160] = "zxd is stopping: it is left";
        if (!s->shutting_down && job_start(s, j, why, sizeof(why)) == 0)
            continue;
        j->tries = RETIRE_TRIES; /* not again */
        reload_outcome(s, j, ZX_RETIRE_FAILED, why);
        sup_retire_jobs_free(j);
    }
}

/* ---- a reload's retires ---------------------------------------------- */

/* The retire hook of pc's plug-in and what it would retire (NULL: none). */
static const char *subject_of(const zx_conf_pipeline *pc, const zx_plugin **src)
{
    const zx_plugin *x = pc ? zx_plugin_of_pipeline(pc->source) : NULL;
    if (!x || !x->retire || !x->retire_subject || !x->retire_what)
        return NULL;
    *src = x;
    return x->retire_subject(pc);
}

static int same_conn(const zx_conf_connection *a, const zx_conf_connection *b)
{
    if (!a || !b)
        return a == b;
    return zx_conf_same_place(a, b);
}

void sup_retire_plan(sup *s, spipe *p, const zx_conf_pipeline *old, zx_conf *oc,
                     const zx_conf *nc)
{
    (void)s;
    const zx_plugin *src = NULL;
    const char *subject = subject_of(old, &src);
    if (!subject)
        return;
    /* the same subject of the same source on the same connection string in
     * the new configuration: still in use (the pipeline changed, or was
     * renamed with it), nothing is abandoned.  Other dsns are told apart by
     * the hook (pg_slot.h, users). */
    for (size_t i = 0; nc && i < nc->npipelines; i++) {
        const zx_conf_pipeline *np = &nc->pipelines[i];
        const zx_plugin *nsrc = NULL;
        const char *ns = subject_of(np, &nsrc);
        if (ns && nsrc == src && strcmp(ns, subject) == 0 && same_conn(np->conn, old->conn))
            return;
    }
    int oom = 0;
    retire_job *j = calloc(1, sizeof(*j));
    if (j) {
        j->fd = -1;
        j->src = src;
        j->old = old;
        j->what = src->retire_what;
        j->pipeline = dup_or_null(old->name, &oom);
        j->subject = dup_or_null(subject, &oom);
        j->held = conf_hold(oc);
    }
    if (!j || oom || !j->held) {
        sup_retire_jobs_free(j);
        zx_error("event=%s_drop_failed pipeline=%s %s=%s message=\"out of memory: it is left\"",
                 src->retire_what, old->name, src->retire_what, subject);
        return;
    }
    j->next = p->retire_jobs;
    p->retire_jobs = j;
}

static void enqueue(retire_job *j)
{
    j->next = NULL;
    if (queue_tail)
        queue_tail->next = j;
    else
        queue_head = j;
    queue_tail = j;
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    retire_job *j = arg;
    for (retire_job **pp = &waiting; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    event_free(j->wait_ev);
    j->wait_ev = NULL;
    enqueue(j);
    pump(zx_the_sup);
}

/* Try j again after its backoff.  0, or -1 (j is the caller's to free). */
static int retry_later(sup *s, retire_job *j)
{
    if (j->ev) {
        event_free(j->ev);
        j->ev = NULL;
    }
    if (j->fd >= 0)
        close(j->fd);
    j->fd = -1;
    if (j->pid > 0)
        kill(j->pid, SIGKILL); /* timed out: reaped by sup_reap */
    j->pid = 0;
    j->len = 0;
    int64_t ms = (int64_t)RETIRE_BACKOFF_MS << (j->tries - 1);
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    j->wait_ev = evtimer_new(s->base, on_retry, j);
    if (!j->wait_ev || evtimer_add(j->wait_ev, &tv) < 0)
        return -1;
    j->next = waiting;
    waiting = j;
    return 0;
}

void sup_retire_jobs_run(sup *s, spipe *p)
{
    retire_job *j = p->retire_jobs;
    p->retire_jobs = NULL;
    while (j) {
        retire_job *next = j->next;
        enqueue(j);
        j = next;
    }
    pump(s);
}

/* ---- a plug-in's control command -------------------------------------- */

static json_t *refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *refuse(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

json_t *sup_admin_start(sup *s, struct bufferevent *bev, const zx_plugin_admin *a,
                        const char *name, json_t *req)
{
    char err[512];
    if (a->check && a->check(s->conf, name, req, err, sizeof(err)) < 0)
        return refuse("%s", err);
    if (count_running(1) >= ADMIN_MAX)
        return refuse("too many %s requests running at once; retry in a few seconds",
                      a->command);
    int oom = 0;
    retire_job *j = calloc(1, sizeof(*j));
    if (j) {
        j->fd = -1;
        j->admin = a;
        j->what = a->what;
        j->subject = dup_or_null(name, &oom);
        j->req = json_incref(req);
    }
    if (!j || oom) {
        sup_retire_jobs_free(j);
        return refuse("out of memory");
    }
    char why[160];
    if (job_start(s, j, why, sizeof(why)) < 0) {
        sup_retire_jobs_free(j);
        return refuse("%s", why);
    }
    j->bev = bev;
    return NULL; /* answered when the process is done */
}

void sup_admin_forget(struct bufferevent *bev)
{
    for (retire_job *j = running; j; j = j->next)
        if (j->bev == bev)
            j->bev = NULL;
}
