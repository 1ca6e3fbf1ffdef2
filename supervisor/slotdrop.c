/*
 * slotdrop.c — drop the replication slot (and the publication zx made) of
 * a Postgres CDC pipeline that is gone, in a short-lived process of its
 * own, as `zxctl test` runs its prober (probe.c):
 *   - after a reload: a `source: postgres` pipeline removed, or changed so
 *     that its old slot is abandoned (another slot name, another
 *     connection, another source), is planned by sup_slot_plan while the
 *     reload still has both configurations, and dropped once its old
 *     worker has exited (sup_slot_jobs_run, from after_stop); the outcome
 *     is logged (event=slot_dropped, slot_kept or slot_drop_failed, with
 *     the pipeline, the slot and the message) and sent to the feed;
 *   - `zxctl drop-slot NAME [--connection CONN]`: a slot left behind, on
 *     the connection named or on every postgres connection configured;
 *     refused for the slot of a configured pipeline.
 * What is done on the server, and what is never dropped, is
 * workers/sources/postgres/pg_slot.h's.
 *
 * Why a process: libpq blocks (connecting, waiting up to 10 s for the
 * stopped worker's walsender to let go of the slot); the supervisor's loop
 * must never.  The process inherits the strings it needs through fork
 * (copies made here: the old configuration is freed when the reload
 * ends), writes one JSON line into a pipe and exits.
 *
 * It must never: block the loop (the pipe is read by an event), outlive
 * its deadline (SIGKILL, and alarm() in the child), drop anything when
 * zxd merely stops or restarts a worker (only a reload plans drops), or
 * put a dsn's password in a log line, the feed or an answer.
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
#include "supervisor/sup.h"
#include "workers/sources/postgres/pg_slot.h"

#define SLOT_WAIT_MS 10000        /* how long a slot may stay in use */
#define SLOT_PG_TIMEOUT_MS 10000  /* connect and statement timeout */
#define SLOT_RELOAD_TIMEOUT_S 90  /* a reload's drop, at most */
#define SLOT_ADMIN_TIMEOUT_S 120  /* `zxctl drop-slot`, at most (zxctl waits
                                     ZXCTL_TIMEOUT_DROP_SLOT, longer) */
#define SLOT_RUN_MAX 4            /* reload drops running at once; more wait */
#define SLOT_ADMIN_MAX 4          /* `zxctl drop-slot` running at once */
#define SLOT_OUT_MAX (256 * 1024) /* bytes of a process's answer kept */
#define SLOT_MSG_MAX 4096         /* one drop's message */

typedef struct slot_target {
    char *name;                   /* the connection's name */
    char *dsn, *shown;
} slot_target;

struct slot_job {
    slot_job *next;
    int admin;                    /* 1: `zxctl drop-slot`; 0: a reload's */
    struct bufferevent *bev;      /* admin: the client (NULL once it left) */
    char *pipeline;               /* reload: the pipeline whose slot it is */
    char *slot, *publication;     /* publication NULL: none */
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

static slot_job *running;                 /* forked, answer awaited */
static slot_job *queue_head, *queue_tail; /* reload drops waiting for room */

static char *dup_or_null(const char *s, int *oom)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = 1;
    return d;
}

void sup_slot_jobs_free(slot_job *j)
{
    while (j) {
        slot_job *next = j->next;
        if (j->ev)
            event_free(j->ev);
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

static int is_postgres(const zx_conf_pipeline *pc)
{
    return pc && pc->source && strcmp(pc->source, "postgres") == 0 && pc->conn &&
           pc->conn->dsn && pc->slot;
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

/* Add to j->users every postgres pipeline of c whose slot or publication
 * is called slot / publication.  0, or -1 out of memory. */
static int add_users(slot_job *j, const zx_conf *c, const char *slot, const char *publication)
{
    for (size_t i = 0; i < c->npipelines; i++) {
        const zx_conf_pipeline *pc = &c->pipelines[i];
        if (!is_postgres(pc))
            continue;
        int us = same_str(pc->slot, slot), up = same_str(pc->publication, publication);
        if (!us && !up)
            continue;
        zx_pg_slot_user *nu = realloc(j->users, (j->nusers + 1) * sizeof(*nu));
        if (!nu)
            return -1;
        j->users = nu;
        int oom = 0;
        zx_pg_slot_user *u = &j->users[j->nusers++];
        *u = (zx_pg_slot_user){dup_or_null(pc->name, &oom), dup_or_null(pc->conn->dsn, &oom),
                               dup_or_null(pc->conn->dsn_shown, &oom), us, up};
        if (oom)
            return -1;
    }
    return 0;
}

static int add_target(slot_job *j, const zx_conf_connection *cc)
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

/* Log a drop's outcome (at level) and send it to the feed: event
 * slot_dropped, slot_kept or slot_drop_failed, with the pipeline (NULL for
 * `zxctl drop-slot`), the slot and the message. */
static void report(sup *s, int level, const char *event, const char *pipeline,
                   const char *slot, const char *msg)
{
    char q[2048];
    zx_log(level, "event=%s pipeline=%s slot=%s message=%s", event, pipeline ? pipeline : "-",
           slot, zx_log_quote(msg, q, sizeof(q)));
    json_t *o = json_pack("{s:s, s:s?, s:s, s:s}", "event", event, "pipeline", pipeline,
                          "slot", slot, "message", msg);
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
    sup_feed(s, js);
    free(js);
    json_decref(o);
}

/* A reload's drop is over: rc (ZX_PG_SLOT_*, or -1) and its message. */
static void reload_outcome(sup *s, const slot_job *j, int rc, const char *msg)
{
    if (rc == ZX_PG_SLOT_DROPPED || rc == ZX_PG_SLOT_ABSENT) {
        report(s, ZX_LOG_INFO, "slot_dropped", j->pipeline, j->slot, msg);
        return;
    }
    if (rc == ZX_PG_SLOT_FOREIGN || rc == ZX_PG_SLOT_KEPT) {
        report(s, ZX_LOG_WARN, "slot_kept", j->pipeline, j->slot, msg);
        return;
    }
    /* how to finish by hand: through zxd while the connection is still
     * configured as it was, else on the database itself */
    char full[SLOT_MSG_MAX + 400];
    const zx_conf_connection *cc =
        j->ntargets ? zx_conf_find_connection(s->conf, j->targets[0].name) : NULL;
    if (cc && cc->kind && strcmp(cc->kind, "postgres") == 0 && cc->dsn &&
        same_str(cc->dsn_shown, j->targets[0].shown))
        snprintf(full, sizeof(full), "%s (once fixed: zxctl drop-slot %s --connection %s)", msg,
                 j->slot, cc->name);
    else
        snprintf(full, sizeof(full), "%s (once fixed, on that database: SELECT "
                 "pg_drop_replication_slot('%s'))", msg, j->slot);
    report(s, ZX_LOG_ERROR, "slot_drop_failed", j->pipeline, j->slot, full);
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

static zx_pg_slot_args drop_args(const slot_job *j, const slot_target *t, int always)
{
    return (zx_pg_slot_args){t->dsn, t->shown, j->slot, j->publication, always, j->users,
                             j->nusers, SLOT_WAIT_MS, SLOT_PG_TIMEOUT_MS};
}

/* In the child: `zxctl drop-slot`, on each target; the answer is the
 * control protocol's (proto/control.h): "result" one line per connection
 * the slot was dropped on; or "error" (the first failure, or that no
 * connection has the slot) and "errors" (the other lines). */
static json_t *run_admin(const slot_job *j)
{
    json_t *on = json_array(), *dropped = json_array(), *failed = json_array(),
           *notes = json_array();
    char looked[2048] = "";
    for (size_t i = 0; i < j->ntargets; i++) {
        const slot_target *t = &j->targets[i];
        zx_pg_slot_args d = drop_args(j, t, 0);
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
static void run_job(const slot_job *j, int fd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* not the supervisor's handlers (libevent's, on a socket closed here):
     * a SIGTERM ends this process */
    zx_child_reset_signals();
    alarm((j->admin ? SLOT_ADMIN_TIMEOUT_S : SLOT_RELOAD_TIMEOUT_S) + 5);
    if (j->admin) {
        write_line(fd, run_admin(j));
    } else {
        char out[SLOT_MSG_MAX];
        zx_pg_slot_args d = drop_args(j, &j->targets[0], 1);
        int rc = zx_pg_slot_drop(&d, out, sizeof(out));
        write_line(fd, json_pack("{s:i, s:s}", "rc", rc, "message", out));
    }
    _exit(0);
}

static void unlink_running(slot_job *j)
{
    for (slot_job **pp = &running; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    j->next = NULL;
}

static void pump(sup *s);

/* The process is done (why NULL: its line is in j->buf) or failed (why):
 * answer or report, forget j, start what waits. */
static void job_finish(slot_job *j, const char *why)
{
    sup *s = zx_the_sup;
    unlink_running(j);
    if (!why)
        j->pid = 0; /* exited on its own: nothing to kill */
    j->buf[j->len < SLOT_OUT_MAX ? j->len : SLOT_OUT_MAX - 1] = '\0';
    json_t *o = why ? NULL : json_loads(j->buf, 0, NULL);
    if (!why && !json_is_object(o))
        why = "the slot-drop process gave no answer (it crashed?); see the zxd log";
    if (j->admin) {
        if (why) {
            json_decref(o);
            o = json_pack("{s:b, s:s, s:s}", "ok", 0, "name", j->slot, "error", why);
        }
        int ok = json_is_true(json_object_get(o, "ok"));
        const char *m = json_string_value(json_object_get(o, ok ? "result" : "error"));
        /* asked for by the operator: a refusal is their answer, not the
         * daemon's error */
        report(s, ZX_LOG_INFO, ok ? "slot_dropped" : "slot_drop_failed", NULL, j->slot,
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
        reload_outcome(s, j, why || !json_is_integer(rc) ? -1 : (int)json_integer_value(rc),
                       why ? why : m ? m : "?");
        json_decref(o);
    }
    sup_slot_jobs_free(j);
    pump(s);
}

static void on_job(evutil_socket_t fd, short what, void *arg)
{
    slot_job *j = arg;
    if (what & EV_TIMEOUT) {
        job_finish(j, "the slot-drop process did not finish in time (it was stopped)");
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
static int job_start(sup *s, slot_job *j, const char **why)
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
        zx_log_set_proc("slot-drop");
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
    zx_info("event=slot_drop_start pipeline=%s slot=%s pid=%d", j->pipeline ? j->pipeline : "-",
            j->slot, (int)pid);
    return 0;
}

static size_t count_running(int admin)
{
    size_t n = 0;
    for (slot_job *j = running; j; j = j->next)
        if (j->admin == admin)
            n++;
    return n;
}

/* Start the reload drops that wait, while there is room. */
static void pump(sup *s)
{
    while (queue_head && count_running(0) < SLOT_RUN_MAX) {
        slot_job *j = queue_head;
        queue_head = j->next;
        if (!queue_head)
            queue_tail = NULL;
        j->next = NULL;
        const char *why = NULL;
        if (s->shutting_down)
            why = "zxd is stopping: the slot is left";
        else if (job_start(s, j, &why) == 0)
            continue;
        reload_outcome(s, j, -1, why);
        sup_slot_jobs_free(j);
    }
}

/* ---- a reload's drops ------------------------------------------------ */

void sup_slot_plan(sup *s, spipe *p, const zx_conf_pipeline *old, const zx_conf *nc)
{
    (void)s;
    if (!is_postgres(old))
        return;
    /* the same slot on the same connection string in the new
     * configuration: still in use (the pipeline changed, or was renamed
     * with its slot), nothing is abandoned.  Other dsns are told apart by
     * the process (pg_slot.h, users). */
    for (size_t i = 0; nc && i < nc->npipelines; i++) {
        const zx_conf_pipeline *np = &nc->pipelines[i];
        if (is_postgres(np) && strcmp(np->slot, old->slot) == 0 &&
            same_place(np->conn, old->conn))
            return;
    }
    /* the connection as the new configuration has it, when it still
     * reaches the same place (its password may have been rotated) */
    const zx_conf_connection *where = old->conn;
    const zx_conf_connection *now = nc ? zx_conf_find_connection(nc, old->conn->name) : NULL;
    if (now && now->dsn && same_place(now, old->conn))
        where = now;
    int oom = 0;
    slot_job *j = calloc(1, sizeof(*j));
    if (j) {
        j->fd = -1;
        j->pipeline = dup_or_null(old->name, &oom);
        j->slot = dup_or_null(old->slot, &oom);
        j->publication = dup_or_null(old->publication, &oom);
    }
    if (!j || oom || add_target(j, where) < 0 ||
        (nc && add_users(j, nc, old->slot, old->publication) < 0)) {
        sup_slot_jobs_free(j);
        zx_error("event=slot_drop_failed pipeline=%s slot=%s message=\"out of memory: the slot "
                 "is left; zxctl drop-slot %s\"", old->name, old->slot, old->slot);
        return;
    }
    j->next = p->slot_jobs;
    p->slot_jobs = j;
}

void sup_slot_jobs_run(sup *s, spipe *p)
{
    slot_job *j = p->slot_jobs;
    p->slot_jobs = NULL;
    while (j) {
        slot_job *next = j->next;
        j->next = NULL;
        if (queue_tail)
            queue_tail->next = j;
        else
            queue_head = j;
        queue_tail = j;
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
        if (!is_postgres(pc) || strcmp(pc->slot, slot) != 0)
            continue;
        if (!cc || same_place(pc->conn, cc))
            return refuse("slot %s belongs to pipeline %s: remove the pipeline from the "
                          "configuration and reload; zx drops it then", slot, pc->name);
    }
    if (count_running(1) >= SLOT_ADMIN_MAX)
        return refuse("too many drop-slot requests running at once; retry in a few seconds");
    int oom = 0;
    slot_job *j = calloc(1, sizeof(*j));
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
        sup_slot_jobs_free(j);
        return refuse("no connection of kind postgres in the configuration: nowhere to look "
                      "for slot %s", slot);
    }
    if (add_users(j, c, slot, slot) < 0)
        goto oom;
    const char *why = NULL;
    if (job_start(s, j, &why) < 0) {
        sup_slot_jobs_free(j);
        return json_pack("{s:b, s:s}", "ok", 0, "error", why);
    }
    j->bev = bev;
    return NULL; /* answered when the process is done */
oom:
    sup_slot_jobs_free(j);
    return json_pack("{s:b, s:s}", "ok", 0, "error", "out of memory");
}

void sup_slot_forget(struct bufferevent *bev)
{
    for (slot_job *j = running; j; j = j->next)
        if (j->bev == bev)
            j->bev = NULL;
}
