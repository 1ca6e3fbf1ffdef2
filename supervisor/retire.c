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
 *   - `zxctl drop-slot NAME [--connection CONN]` (postgres): a slot left
 *     behind, on the connection named or on every postgres connection
 *     configured; refused for the slot of a configured pipeline.  What is
 *     done on the server, and what is never dropped, is
 *     workers/sources/postgres/pg_slot.h's.
 *
 * Why a process: the hooks block (libpq connecting, waiting up to 10 s for
 * the stopped worker's walsender to let go of the slot); the supervisor's
 * loop must never.  The process inherits what it needs through fork,
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
#include "supervisor/sup.h"
#include "workers/sources/postgres/pg_retire.h"
#include "workers/sources/postgres/pg_slot.h"
#include "workers/sources/source.h"

#define SLOT_WAIT_MS 10000        /* how long a slot may stay in use */
#define SLOT_PG_TIMEOUT_MS 10000  /* connect and statement timeout */
#define SLOT_RELOAD_TIMEOUT_S ZX_RETIRE_TIMEOUT_S /* a reload's retire, at most */
#define SLOT_ADMIN_TIMEOUT_S 120  /* `zxctl drop-slot`, at most (zxctl waits
                                     ZXCTL_TIMEOUT_DROP_SLOT, longer) */
#define SLOT_RUN_MAX 4            /* reload retires running at once; more wait */
#define RETIRE_TRIES 4            /* a failed retire is tried this often */
#define RETIRE_BACKOFF_MS 5000    /* first wait before trying again, doubling */
#define SLOT_ADMIN_MAX 4          /* `zxctl drop-slot` running at once */
#define SLOT_OUT_MAX (256 * 1024) /* bytes of a process's answer kept */
#define SLOT_MSG_MAX 4096         /* one drop's message */

typedef struct slot_target {
    char *name;                   /* the connection's name */
    char *dsn, *shown;
} slot_target;

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
    int admin;                    /* 1: `zxctl drop-slot`; 0: a reload's */
    struct bufferevent *bev;      /* admin: the client (NULL once it left) */
    /* a reload's: the hook, the pipeline as the old configuration had it */
    const zx_plugin *src;
    const zx_conf_pipeline *old;  /* in held->conf */
    held_conf *held;
    unsigned tries;               /* failed so far */
    struct event *wait_ev;        /* waiting to be tried again */
    char *pipeline;               /* reload: the pipeline retired */
    const char *what;             /* "slot": its events' and field's name */
    char *slot, *publication;     /* the subject (slot); admin: the
                                     publication (NULL: none) */
    slot_target *targets;
    size_t ntargets;
    zx_pg_slot_user *users;       /* strings owned (cast away on free) */
    size_t nusers;
    pid_t pid;
    int fd;
    struct event *ev;
    char *buf;                    /* SLOT_OUT_MAX bytes, while running */
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
        free(j->slot);
        free(j->publication);
        for (size_t i = 0; i < j->ntargets; i++) {
            free(j->targets[i].name);
            free(j->targets[i].dsn);
            free(j->targets[i].shown);
        }
        free(j->targets);
        for (size_t i = 0; i < j->nusers; i++) {
            free((char *)j->users[i].pipeline);
            free((char *)j->users[i].dsn);
            free((char *)j->users[i].dsn_shown);
        }
        free(j->users);
        free(j);
        j = next;
    }
}

/* A postgres pipeline with a slot (pg_retire.h). */
static int is_postgres(const zx_conf_pipeline *pc)
{
    return zx_pg_retire_subject(pc) != NULL;
}

static int same_str(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* 1 when a and b reach the same database for sure: the same dsn but for
 * its passwords (dsn_shown hides only those, and the configuration
 * refuses a dsn that does not parse), so a rotated password is no move. */
static int same_place(const zx_conf_connection *a, const zx_conf_connection *b)
{
    return a == b || same_str(a->dsn_shown, b->dsn_shown) || same_str(a->dsn, b->dsn);
}

/* Add to j->users (copies) every postgres pipeline of c whose slot or
 * publication is called slot / publication.  0, or -1 out of memory. */
static int add_users(retire_job *j, const zx_conf *c, const char *slot, const char *publication)
{
    if (!c->npipelines)
        return 0;
    zx_pg_slot_user *found = calloc(c->npipelines, sizeof(*found));
    if (!found)
        return -1;
    size_t n = zx_pg_slot_users(c, slot, publication, found);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        zx_pg_slot_user *nu = realloc(j->users, (j->nusers + 1) * sizeof(*nu));
        if (!nu) {
            rc = -1;
            break;
        }
        j->users = nu;
        int oom = 0;
        const zx_pg_slot_user *f = &found[i];
        j->users[j->nusers++] = (zx_pg_slot_user){dup_or_null(f->pipeline, &oom),
                                                  dup_or_null(f->dsn, &oom),
                                                  dup_or_null(f->dsn_shown, &oom), f->slot,
                                                  f->publication};
        if (oom)
            rc = -1;
    }
    free(found);
    return rc;
}

static int add_target(retire_job *j, const zx_conf_connection *cc)
{
    slot_target *nt = realloc(j->targets, (j->ntargets + 1) * sizeof(*nt));
    if (!nt)
        return -1;
    j->targets = nt;
    int oom = 0;
    slot_target *t = &j->targets[j->ntargets++];
    *t = (slot_target){dup_or_null(cc->name, &oom), dup_or_null(cc->dsn, &oom),
                       dup_or_null(cc->dsn_shown ? cc->dsn_shown : "?", &oom)};
    return oom ? -1 : 0;
}

/* ---- outcomes -------------------------------------------------------- */

/* Log a retire's outcome (at level) and send it to the feed: event
 * <what>_<outcome> (slot_dropped, slot_kept, slot_drop_failed), with the
 * pipeline (NULL for `zxctl drop-slot`), the field <what> set to subject
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
        report(s, ZX_LOG_INFO, j->what, "dropped", j->pipeline, j->slot, msg);
        return 0;
    }
    if (rc == ZX_RETIRE_KEPT) {
        report(s, ZX_LOG_WARN, j->what, "kept", j->pipeline, j->slot, msg);
        return 0;
    }
    j->tries++;
    if (j->tries < RETIRE_TRIES && !s->shutting_down) {
        char full[SLOT_MSG_MAX + 200];
        int64_t ms = (int64_t)RETIRE_BACKOFF_MS << (j->tries - 1);
        snprintf(full, sizeof(full), "%s; trying again in %lld s (attempt %u of %d)", msg,
                 (long long)(ms / 1000), j->tries + 1, RETIRE_TRIES);
        report(s, ZX_LOG_ERROR, j->what, "drop_failed", j->pipeline, j->slot, full);
        return 1;
    }
    report(s, ZX_LOG_ERROR, j->what, "drop_failed", j->pipeline, j->slot, msg);
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

/* `zxctl drop-slot`'s arguments on target t (the publication only where
 * the slot was dropped). */
static zx_pg_slot_args drop_args(const retire_job *j, const slot_target *t)
{
    return (zx_pg_slot_args){t->dsn, t->shown, j->slot, j->publication, 0, j->users,
                             j->nusers, SLOT_WAIT_MS, SLOT_PG_TIMEOUT_MS};
}

/* In the child: `zxctl drop-slot`, on each target; the answer is the
 * control protocol's (proto/control.h): "result" one line per connection
 * the slot was dropped on; or "error" (the first failure, or that no
 * connection has the slot) and "errors" (the other lines). */
static json_t *run_admin(const retire_job *j)
{
    json_t *on = json_array(), *dropped = json_array(), *failed = json_array(),
           *notes = json_array();
    char looked[2048] = "";
    for (size_t i = 0; i < j->ntargets; i++) {
        const slot_target *t = &j->targets[i];
        zx_pg_slot_args d = drop_args(j, t);
        char out[SLOT_MSG_MAX], line[SLOT_MSG_MAX + 200];
        int rc = zx_pg_slot_drop(&d, out, sizeof(out));
        snprintf(line, sizeof(line), "connection %s: %s%s", t->name, out,
                 rc == ZX_PG_SLOT_KEPT ? "; remove the pipeline from the configuration and "
                                         "reload; zx drops it then" : "");
        if (rc == ZX_PG_SLOT_DROPPED) {
            json_array_append_new(dropped, json_string(line));
            json_array_append_new(on, json_string(t->name));
        } else if (rc == ZX_PG_SLOT_KEPT || rc < 0) {
            json_array_append_new(failed, json_string(line));
        } else {
            if (rc == ZX_PG_SLOT_FOREIGN)
                json_array_append_new(notes, json_string(line));
            size_t n = strlen(looked);
            snprintf(looked + n, sizeof(looked) - n, "%s%s (%s)", n ? ", " : "", t->name,
                     t->shown);
        }
    }
    json_t *o;
    if (json_array_size(failed)) {
        json_t *first = json_incref(json_array_get(failed, 0));
        json_array_remove(failed, 0);
        json_array_extend(failed, dropped);
        o = json_pack("{s:b, s:s, s:o, s:o, s:o}", "ok", 0, "name", j->slot, "error", first,
                      "errors", failed, "dropped_on", on);
        json_decref(dropped);
    } else if (json_array_size(dropped)) {
        char result[SLOT_OUT_MAX / 2] = "";
        size_t i;
        json_t *l;
        json_array_foreach(dropped, i, l) {
            size_t n = strlen(result);
            snprintf(result + n, sizeof(result) - n, "%s%s", n ? "\n" : "",
                     json_string_value(l));
        }
        o = json_pack("{s:b, s:s, s:s, s:o}", "ok", 1, "name", j->slot, "result", result,
                      "dropped_on", on);
        json_decref(dropped);
        json_decref(failed);
    } else {
        char err[2600];
        snprintf(err, sizeof(err), "no configured postgres connection has replication slot %s "
                 "(looked at: %s)", j->slot, looked);
        o = json_pack("{s:b, s:s, s:s, s:O}", "ok", 0, "name", j->slot, "error", err, "errors",
                      notes);
        json_decref(on);
        json_decref(dropped);
        json_decref(failed);
    }
    json_decref(notes);
    return o;
}

/* In the child: do j, write the answer, exit. */
static void run_job(const retire_job *j, int fd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* not the supervisor's handlers (libevent's, on a socket closed here):
     * a SIGTERM ends this process */
    zx_child_reset_signals();
    alarm((j->admin ? SLOT_ADMIN_TIMEOUT_S : SLOT_RELOAD_TIMEOUT_S) + 5);
    if (j->admin) {
        write_line(fd, run_admin(j));
    } else {
        /* the running configuration (as forked), the old pipeline */
        char out[SLOT_MSG_MAX] = "";
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

/* The process is done (why NULL: its line is in j->buf) or failed (why):
 * answer or report, forget j, start what waits. */
static void job_finish(retire_job *j, const char *why)
{
    sup *s = zx_the_sup;
    unlink_running(j);
    if (!why)
        j->pid = 0; /* exited on its own: nothing to kill */
    j->buf[j->len < SLOT_OUT_MAX ? j->len : SLOT_OUT_MAX - 1] = '\0';
    json_t *o = why ? NULL : json_loads(j->buf, 0, NULL);
    if (!why && !json_is_object(o))
        why = j->admin ? "the slot-drop process gave no answer (it crashed?); see the zxd log"
                       : "the retire process gave no answer (it crashed?); see the zxd log";
    if (j->admin) {
        if (why) {
            json_decref(o);
            o = json_pack("{s:b, s:s, s:s}", "ok", 0, "name", j->slot, "error", why);
        }
        int ok = json_is_true(json_object_get(o, "ok"));
        const char *m = json_string_value(json_object_get(o, ok ? "result" : "error"));
        /* asked for by the operator: a refusal is their answer, not the
         * daemon's error */
        report(s, ZX_LOG_INFO, "slot", ok ? "dropped" : "drop_failed", NULL, j->slot,
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
        job_finish(j, j->admin ? "the slot-drop process did not finish in time (it was stopped)"
                               : "the retire process did not finish in time (it was stopped)");
        return;
    }
    for (;;) {
        ssize_t n = read(fd, j->buf + j->len, SLOT_OUT_MAX - 1 - j->len);
        if (n > 0) {
            j->len += (size_t)n;
            if (j->len < SLOT_OUT_MAX - 1)
                continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        job_finish(j, NULL); /* EOF, error or full: that is the answer */
        return;
    }
}

/* Fork j's process and watch it.  0, or -1 with why (j not running). */
static int job_start(sup *s, retire_job *j, const char **why)
{
    int fds[2];
    if (!j->buf && !(j->buf = malloc(SLOT_OUT_MAX))) {
        *why = "cannot start the slot-drop process (out of memory)";
        return -1;
    }
    if (pipe2(fds, O_CLOEXEC) < 0) {
        *why = "cannot start the slot-drop process (out of descriptors)";
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        /* hold none of the supervisor's sockets */
        zx_close_fds_except(&fds[1], 1);
        zx_log_set_proc(j->admin ? "slot-drop" : "retire");
        run_job(j, fds[1]);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        *why = "cannot start the slot-drop process (fork failed)";
        return -1;
    }
    j->pid = pid;
    j->fd = fds[0];
    zx_set_nonblock(j->fd);
    j->next = running;
    running = j;
    struct timeval tv = {(j->admin ? SLOT_ADMIN_TIMEOUT_S : SLOT_RELOAD_TIMEOUT_S), 0};
    j->ev = event_new(s->base, j->fd, EV_READ | EV_PERSIST, on_job, j);
    if (!j->ev || event_add(j->ev, &tv) < 0) {
        unlink_running(j);
        *why = "cannot watch the slot-drop process (out of memory)";
        return -1; /* the caller frees j: kills the process */
    }
    zx_info("event=%s_drop_start pipeline=%s %s=%s pid=%d", j->admin ? "slot" : j->what,
            j->pipeline ? j->pipeline : "-", j->admin ? "slot" : j->what, j->slot, (int)pid);
    return 0;
}

static size_t count_running(int admin)
{
    size_t n = 0;
    for (retire_job *j = running; j; j = j->next)
        if (j->admin == admin)
            n++;
    return n;
}

/* Start the reload drops that wait, while there is room. */
static void pump(sup *s)
{
    while (queue_head && count_running(0) < SLOT_RUN_MAX) {
        retire_job *j = queue_head;
        queue_head = j->next;
        if (!queue_head)
            queue_tail = NULL;
        j->next = NULL;
        const char *why = NULL;
        if (s->shutting_down)
            why = "zxd is stopping: it is left";
        else if (job_start(s, j, &why) == 0)
            continue;
        j->tries = RETIRE_TRIES; /* not again */
        reload_outcome(s, j, ZX_RETIRE_FAILED, why);
        sup_retire_jobs_free(j);
    }
}

/* ---- a reload's retires ---------------------------------------------- */

/* The retire hook of pc's source and what it would retire (NULL: none). */
static const char *subject_of(const zx_conf_pipeline *pc, const zx_plugin **src)
{
    const zx_plugin *x = pc ? zx_plugin_find(ZX_PLUGIN_SOURCE, pc->source) : NULL;
    if (!x || !x->retire || !x->retire_subject || !x->retire_what)
        return NULL;
    *src = x;
    return x->retire_subject(pc);
}

static int same_conn(const zx_conf_connection *a, const zx_conf_connection *b)
{
    if (!a || !b)
        return a == b;
    return same_place(a, b);
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
        j->slot = dup_or_null(subject, &oom);
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

/* ---- zxctl drop-slot ------------------------------------------------- */

/* 1 when name is a replication slot name as Postgres takes it. */
static int slot_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 63)
        return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
            return 0;
    return 1;
}

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

json_t *sup_slot_admin_start(sup *s, struct bufferevent *bev, const char *slot,
                             const char *conn)
{
    const zx_conf *c = s->conf;
    if (!slot_name_ok(slot))
        return refuse("'%s' is not a replication slot name (1 to 63 of a-z, 0-9 and _)", slot);
    const zx_conf_connection *cc = NULL;
    if (conn) {
        cc = zx_conf_find_connection(c, conn);
        if (!cc || !cc->kind || strcmp(cc->kind, "postgres") != 0)
            return refuse("no connection named '%s' of kind postgres in the configuration",
                          conn);
        if (!cc->dsn)
            return refuse("connection %s has no dsn", conn);
    }
    /* a configured pipeline's slot: its removal drops it.  With
     * --connection, only a pipeline on that connection (or the same dsn)
     * is refused here; one on another connection is told apart by the
     * process (the same database or not). */
    for (size_t i = 0; i < c->npipelines; i++) {
        const zx_conf_pipeline *pc = &c->pipelines[i];
        if (!is_postgres(pc) || strcmp(zx_pg_retire_subject(pc), slot) != 0)
            continue;
        if (!cc || same_place(pc->conn, cc))
            return refuse("slot %s belongs to pipeline %s: remove the pipeline from the "
                          "configuration and reload; zx drops it then", slot, pc->name);
    }
    if (count_running(1) >= SLOT_ADMIN_MAX)
        return refuse("too many drop-slot requests running at once; retry in a few seconds");
    int oom = 0;
    retire_job *j = calloc(1, sizeof(*j));
    if (j) {
        j->fd = -1;
        j->admin = 1;
        j->slot = dup_or_null(slot, &oom);
        /* the publication of the same name (a derived slot and its derived
         * publication share it), if zx made it: pg_slot.h */
        j->publication = dup_or_null(slot, &oom);
    }
    if (!j || oom)
        goto oom;
    if (cc) {
        if (add_target(j, cc) < 0)
            goto oom;
    } else {
        for (size_t i = 0; i < c->nconnections; i++) {
            const zx_conf_connection *x = &c->connections[i];
            if (x->kind && strcmp(x->kind, "postgres") == 0 && x->dsn && add_target(j, x) < 0)
                goto oom;
        }
    }
    if (j->ntargets == 0) {
        sup_retire_jobs_free(j);
        return refuse("no connection of kind postgres in the configuration: nowhere to look "
                      "for slot %s", slot);
    }
    if (add_users(j, c, slot, slot) < 0)
        goto oom;
    const char *why = NULL;
    if (job_start(s, j, &why) < 0) {
        sup_retire_jobs_free(j);
        return json_pack("{s:b, s:s}", "ok", 0, "error", why);
    }
    j->bev = bev;
    return NULL; /* answered when the process is done */
oom:
    sup_retire_jobs_free(j);
    return json_pack("{s:b, s:s}", "ok", 0, "error", "out of memory");
}

void sup_slot_forget(struct bufferevent *bev)
{
    for (retire_job *j = running; j; j = j->next)
        if (j->bev == bev)
            j->bev = NULL;
}
