/*
 * verify.c — `zxctl verify NAME [--table T]`: compare a Postgres CDC
 * pipeline's mirrors with its source (workers/verify/verify.h) in a
 * short-lived process of its own, relay its answer to the zxctl client,
 * and remember the last outcome of each pipeline for `zxctl status`.
 *
 * Why a process: a verify reads whole tables on two databases for up to
 * VERIFY_TIMEOUT_S; the supervisor's loop must neither block nor touch a
 * database.  The process inherits the loaded configuration (secrets
 * resolved) through fork, writes one JSON line into a pipe and exits.
 *
 * It must never: block the loop (the pipe is read by an event), let the
 * process outlive its deadline (SIGKILL, and alarm() in the child), or
 * answer a client that has gone (sup_verify_forget).
 */
#include <errno.h>
#include <fcntl.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "proto/control.h"
#include "supervisor/sup.h"
#include "workers/verify/verify.h"

#define VERIFY_TIMEOUT_S 600     /* what one verify may take */
#define VERIFY_MAX 2             /* verifies at once */
#define VERIFY_LAST_MAX 256      /* pipelines whose last verify is kept */

typedef struct vjob {
    struct vjob *next;
    struct bufferevent *bev;     /* the client; NULL once it left */
    pid_t pid;
    int fd;
    struct event *ev;
    char *buf;                   /* the answer so far */
    size_t len, cap;
    char name[128];
    char table[300];
    int repair;
} vjob;

#define VERIFY_LAST_FILE_MAX 4096 /* bytes of a kept summary file */

/* The last verify of a pipeline (its summary; json null: none on disk). */
typedef struct vlast {
    char name[128];
    json_t *summary;
} vlast;

static vjob *jobs;
static vlast last[VERIFY_LAST_MAX];

static void job_free(vjob *j)
{
    for (vjob **pp = &jobs; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    if (j->ev)
        event_free(j->ev);
    if (j->fd >= 0)
        close(j->fd);
    if (j->pid > 0)
        kill(j->pid, SIGKILL); /* reaped by sup_reap */
    free(j->buf);
    free(j);
}

/* <data_dir>/verify/<name>.last: the summary kept across restarts. */
static int last_path(const zx_conf *c, const char *name, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s/verify/%s.last", c->data_dir, name);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* Keep sum as name's last verify (taken). */
static void keep(const char *name, json_t *sum)
{
    vlast *free_slot = NULL;
    for (size_t i = 0; i < VERIFY_LAST_MAX; i++) {
        if (last[i].summary && !strcmp(last[i].name, name)) {
            json_decref(last[i].summary);
            last[i].summary = sum;
            return;
        }
        if (!last[i].summary && !free_slot)
            free_slot = &last[i];
    }
    if (!free_slot) {
        json_decref(sum);
        return;
    }
    snprintf(free_slot->name, sizeof(free_slot->name), "%s", name);
    free_slot->summary = sum;
}

/* The summary of answer o (a finished verify of a table, or all). */
static json_t *summary(const char *table, const json_t *o)
{
    json_t *sum = json_pack("{s:O?, s:O?, s:O?, s:O?, s:s?, s:i}", "at",
                            json_object_get(o, "at"), "compared", json_object_get(o, "compared"),
                            "differing", json_object_get(o, "differing"), "repaired",
                            json_object_get(o, "repaired"), "table", table[0] ? table : NULL,
                            "tables", (int)json_array_size(json_object_get(o, "tables")));
    return sum;
}

json_t *sup_verify_last(sup *s, const char *name)
{
    for (size_t i = 0; i < VERIFY_LAST_MAX; i++)
        if (last[i].summary && !strcmp(last[i].name, name))
            return json_is_object(last[i].summary) ? json_incref(last[i].summary) : NULL;
    /* not seen since zxd started: the one a verify process left (read
     * once; a missing or unreadable file is remembered as none) */
    char path[4200];
    json_t *sum = NULL;
    FILE *f = last_path(s->conf, name, path, sizeof(path)) == 0 ? fopen(path, "r") : NULL;
    if (f) {
        char buf[VERIFY_LAST_FILE_MAX];
        size_t n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        if (n < sizeof(buf))
            sum = json_loadb(buf, n, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(sum)) {
            json_decref(sum);
            sum = NULL;
        }
    }
    keep(name, sum ? json_incref(sum) : json_null());
    return sum;
}

static void job_finish(vjob *j, const char *why)
{
    json_t *o = NULL;
    if (!why) {
        o = j->len ? json_loadb(j->buf, j->len, 0, NULL) : NULL;
        if (!o)
            why = "the verify process gave no answer (it crashed?); see the zxd log";
    }
    if (why)
        o = json_pack("{s:b, s:s, s:s}", "ok", 0, "name", j->name, "error", why);
    if (o && json_is_true(json_object_get(o, "ok"))) {
        json_t *sum = summary(j->table, o);
        if (sum)
            keep(j->name, sum);
        sup_feedf(zx_the_sup, "verify", j->name, "{\"differing\":%lld,\"repaired\":%lld}",
                  (long long)json_integer_value(json_object_get(o, "differing")),
                  (long long)json_integer_value(json_object_get(o, "repaired")));
    }
    zx_info("event=verify_end name=%s ok=%d differing=%lld", j->name,
            o && json_is_true(json_object_get(o, "ok")),
            (long long)json_integer_value(json_object_get(o, "differing")));
    if (j->bev) {
        sup_control_reply(j->bev, o);
        sup_control_finish(zx_the_sup, j->bev);
    } else {
        json_decref(o);
    }
    if (j->pid > 0 && !why)
        j->pid = 0; /* exited on its own: nothing to kill */
    job_free(j);
}

static void on_job(evutil_socket_t fd, short what, void *arg)
{
    vjob *j = arg;
    if (what & EV_TIMEOUT) {
        job_finish(j, "the verify did not finish in time (it was stopped)");
        return;
    }
    for (;;) {
        if (j->len == j->cap) {
            size_t cap = j->cap ? j->cap * 2 : 16384;
            if (cap > ZX_CTL_MAX_LINE || zx_grow_to(&j->buf, cap, &j->cap, 1, cap) < 0) {
                job_finish(j, "the verify's answer is too long");
                return;
            }
        }
        ssize_t n = read(fd, j->buf + j->len, j->cap - j->len);
        if (n > 0) {
            j->len += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        job_finish(j, NULL); /* EOF or error: that is the answer */
        return;
    }
}

/* In the child: write sum as name's last verify, for `status` after a
 * restart of zxd (a failure is logged: the answer matters more). */
static void keep_on_disk(const zx_conf *conf, const char *name, const json_t *sum)
{
    char path[4200], tmp[4300];
    snprintf(tmp, sizeof(tmp), "%s/verify", conf->data_dir);
    if (mkdir(tmp, 0700) < 0 && errno != EEXIST) {
        zx_warn("event=verify_not_kept name=%s path=%s error=\"%s\"", name, tmp,
                strerror(errno));
        return;
    }
    if (last_path(conf, name, path, sizeof(path)) < 0)
        return;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (json_dump_file(sum, tmp, JSON_COMPACT) < 0 || rename(tmp, path) < 0) {
        zx_warn("event=verify_not_kept name=%s path=%s error=\"%s\"", name, path,
                strerror(errno));
        unlink(tmp);
    }
}

/* In the child: verify, write the answer, exit. */
static void run_verify(const zx_conf *conf, const zx_conf_pipeline *pc, const char *table,
                       unsigned flags, int fd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    alarm(VERIFY_TIMEOUT_S + 5);
    signal(SIGPIPE, SIG_IGN);
    char err[1200] = "";
    json_t *o = NULL;
    int64_t deadline = zx_mono_ms() + (int64_t)VERIFY_TIMEOUT_S * 1000;
    if (zx_verify_run(conf, pc, table, flags, deadline, &o, err, sizeof(err)) < 0) {
        o = json_pack("{s:b, s:s, s:s}", "ok", 0, "name", pc->name, "error", err);
    } else {
        json_t *sum = summary(table ? table : "", o);
        if (sum)
            keep_on_disk(conf, pc->name, sum);
        json_decref(sum);
    }
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (s) {
        size_t len = strlen(s), off = 0;
        while (off < len) {
            ssize_t n = write(fd, s + off, len - off);
            if (n <= 0 && errno != EINTR)
                break;
            if (n > 0)
                off += (size_t)n;
        }
    }
    _exit(0);
}

json_t *sup_verify_start(sup *s, struct bufferevent *bev, const char *name, const char *table,
                         int repair)
{
    const zx_conf_pipeline *pc = zx_conf_find(s->conf, name);
    if (!pc)
        return json_pack("{s:b, s:s}", "ok", 0, "error",
                         "no pipeline of that name in the configuration");
    if (!pc->source || strcmp(pc->source, "postgres")) {
        char m[300];
        snprintf(m, sizeof(m), "pipeline %s: verify: only a `source: postgres` pipeline has "
                 "mirrors to compare with their source (this one is %s)", name,
                 pc->source ? pc->source : "?");
        return json_pack("{s:b, s:s}", "ok", 0, "error", m);
    }
    if (table && strlen(table) >= sizeof(((vjob *)0)->table))
        return json_pack("{s:b, s:s}", "ok", 0, "error", "verify: --table is too long");
    size_t n = 0;
    for (vjob *j = jobs; j; j = j->next) {
        n++;
        if (!strcmp(j->name, name))
            return json_pack("{s:b, s:s}", "ok", 0, "error",
                             "a verify of this pipeline is already running");
    }
    if (n >= VERIFY_MAX)
        return json_pack("{s:b, s:s}", "ok", 0, "error",
                         "too many verifies running at once; retry when one is done");
    vjob *j = calloc(1, sizeof(*j));
    int fds[2];
    if (!j || pipe2(fds, O_CLOEXEC) < 0) {
        free(j);
        return json_pack("{s:b, s:s}", "ok", 0, "error",
                         "cannot start the verify (out of resources)");
    }
    j->fd = fds[0];
    snprintf(j->name, sizeof(j->name), "%s", name);
    snprintf(j->table, sizeof(j->table), "%s", table ? table : "");
    pid_t pid = fork();
    if (pid == 0) {
        zx_close_fds_except(&fds[1], 1);
        zx_log_set_proc("verify");
        sup_child_harden(s->conf, ROLE_VERIFY, pc);
        run_verify(s->conf, pc, table, repair ? ZX_VERIFY_REPAIR : 0, fds[1]);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        free(j);
        return json_pack("{s:b, s:s}", "ok", 0, "error", "cannot start the verify (fork failed)");
    }
    j->pid = pid;
    zx_set_nonblock(j->fd);
    struct timeval tv = {VERIFY_TIMEOUT_S + 10, 0};
    j->ev = event_new(s->base, j->fd, EV_READ | EV_PERSIST, on_job, j);
    j->bev = bev;
    j->next = jobs;
    jobs = j;
    if (!j->ev || event_add(j->ev, &tv) < 0) {
        job_free(j);
        return json_pack("{s:b, s:s}", "ok", 0, "error", "cannot watch the verify (out of memory)");
    }
    zx_info("event=verify_start name=%s repair=%d pid=%d", name, repair, (int)pid);
    return NULL; /* answered later */
}

void sup_verify_forget(struct bufferevent *bev)
{
    for (vjob *j = jobs; j; j = j->next)
        if (j->bev == bev)
            j->bev = NULL;
}
