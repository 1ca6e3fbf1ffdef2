/*
 * syncs.c — the supervisor's side of reverse syncs: runs asked for by
 * hand (`zxctl run`, `preview`), by schedule (cron, UTC) or over the API,
 * one at a time per sync, the approval of agents' runs, and the history
 * (docs/architecture.md §8).
 *
 * A sync's worker (spipe.worker) is forked only for a run, with the run's
 * id and flags (zx_worker_args); it leaves what it did in its segment's
 * status (workers/syncs/run.h), read here once it has exited.  Records of
 * finished runs go to the writer (ZX_CHAN_RUN), which keeps them in the
 * store; `runs` reads them back (read-only).
 *
 * States: queued → running → succeeded | failed; a preview: queued →
 * previewing → previewed; an agent's run: queued → previewing →
 * awaiting_approval → (approve) queued → running → ... | (reject) rejected
 * | (not approved within its token's approval_timeout) expired.
 *
 * Queues: a sync holds at most MAX_WAITING runs of operators, schedules,
 * orchestrators and approved agents; an agent token holds at most its
 * max_waiting runs not yet approved, all syncs together.  Agents' runs
 * never count against a sync's queue, and wait behind the others for the
 * sync's worker, so that an agent can fill only its own queue.
 *
 * It must never: run a run's work itself (the worker does), block, or
 * start two runs of one sync at once.
 */
#include <errno.h>
#include <stddef.h>
#include <event2/bufferevent.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/cron.h"
#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "proto/chan.h"
#include "supervisor/sup.h"
#include "workers/sources/source.h"
#include "store/store.h"

#define MAX_RUNS_KEPT 256
#define MAX_WAITERS 8

struct sync_run {
    uint64_t id;
    char sync[64];
    char state[24];
    char trigger[96];
    unsigned flags;          /* ZX_RUN_PREVIEW, ZX_RUN_FULL */
    int approval;            /* an agent's run not approved yet: preview,
                                then wait */
    int agent;               /* asked for with an agent's token */
    int approved;            /* an agent's run an operator approved */
    int error_from_run;      /* error is the run's own (the database's
                                message, duplicate keys...): it may quote
                                values */
    int sync_gone;           /* failed: its sync was removed by a reload */
    char token[64];          /* the API token that asked for it, or "" */
    int64_t created_us, started_us, ended_us;
    json_t *result;          /* the worker's final status */
    json_t *preview;         /* an agent's run: its preview */
    char error[600];
    int persisted;           /* its final record is with the writer */
    int64_t progress_ms;     /* when its last progress event went out */
    struct bufferevent *waiters[MAX_WAITERS];
    int nwaiters;
    sync_run *next;
};

uint64_t zx_sync_run_id(const sync_run *r)
{
    return r->id;
}

unsigned zx_sync_run_flags(const sync_run *r)
{
    return r->flags;
}

static void restore_runs(sup *s);

static int is_final(const sync_run *r)
{
    return !strcmp(r->state, "succeeded") || !strcmp(r->state, "failed") ||
           !strcmp(r->state, "rejected") || !strcmp(r->state, "expired") ||
           !strcmp(r->state, "previewed");
}

/* The clock of schedules: UTC µs, shifted by ZX_TEST_CLOCK_OFFSET_MS
 * (tests only: a schedule's next minute comes in seconds). */
static int64_t sched_now_us(void)
{
    static int64_t off = -1;
    if (off < 0) {
        const char *e = getenv("ZX_TEST_CLOCK_OFFSET_MS");
        off = e ? strtoll(e, NULL, 10) * 1000 : 0;
        if (off < 0)
            off = 0;
    }
    return zx_now_us() + off;
}

static void ts(char *buf, int64_t us)
{
    if (us)
        zx_ts_format(us, buf);
    else
        buf[0] = 0;
}

/* The record of r (what `runs`, the API and the store show). */
static json_t *run_json(const sync_run *r)
{
    char id[24], c[ZX_TS_BUFSZ], st[ZX_TS_BUFSZ], en[ZX_TS_BUFSZ];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)r->id);
    ts(c, r->created_us);
    ts(st, r->started_us);
    ts(en, r->ended_us);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", id, "sync", r->sync, "state",
                          r->state, "trigger", r->trigger, "created_at", c);
    if (!o)
        return NULL;
    json_object_set_new(o, "started_at", st[0] ? json_string(st) : json_null());
    json_object_set_new(o, "ended_at", en[0] ? json_string(en) : json_null());
    static const char *const counts[] = {"rows_read", "rows_inserted", "rows_updated",
                                         "rows_unchanged", "rows_sent", "rows_deleted",
                                         "rows_failed", "values_nulled", "bytes", NULL};
    for (int i = 0; counts[i]; i++) {
        json_t *v = r->result ? json_object_get(r->result, counts[i]) : NULL;
        json_object_set_new(o, counts[i], json_integer(json_is_integer(v)
                                                           ? json_integer_value(v) : 0));
    }
    spipe *sp = zx_the_sup ? sup_find_pipe(zx_the_sup, r->sync) : NULL;
    if (sp && sp->conf && sp->conf->author)
        json_object_set_new(o, "author", json_string(sp->conf->author));
    if (r->result && json_is_string(json_object_get(r->result, "note")))
        json_object_set(o, "note", json_object_get(r->result, "note"));
    if (r->result && json_object_get(r->result, "mode"))
        json_object_set(o, "mode", json_object_get(r->result, "mode"));
    if (r->flags & ZX_RUN_FULL)
        json_object_set_new(o, "full", json_true());
    json_object_set_new(o, "error", r->error[0] ? json_string(r->error) : json_null());
    /* what the API needs to show an agent nothing of the data before an
     * operator approved (syncs_view.c) */
    if (r->token[0])
        json_object_set_new(o, "token", json_string(r->token));
    if (r->agent)
        json_object_set_new(o, "approved", json_boolean(r->approved));
    if (r->error[0] && r->error_from_run)
        json_object_set_new(o, "error_from_run", json_true());
    if (r->preview)
        json_object_set(o, "preview", r->preview);
    if (!strcmp(r->state, "previewed") && r->result) {
        json_object_set(o, "sample", json_object_get(r->result, "sample"));
        json_object_set(o, "sample_deletes", json_object_get(r->result, "sample_deletes"));
    }
    return o;
}

static sync_run *find_run(sup *s, uint64_t id)
{
    for (sync_run *r = s->runs; r; r = r->next)
        if (r->id == id)
            return r;
    return NULL;
}

static void free_run(sync_run *r)
{
    json_decref(r->result);
    json_decref(r->preview);
    free(r);
}

/* Keep at most MAX_RUNS_KEPT: drop the oldest finished, persisted ones. */
static void trim_runs(sup *s)
{
    while (s->nruns > MAX_RUNS_KEPT) {
        sync_run **pp = &s->runs, **victim = NULL;
        for (; *pp; pp = &(*pp)->next)
            if (is_final(*pp) && (*pp)->persisted && !(*pp)->nwaiters)
                victim = pp;
        if (!victim)
            return;
        sync_run *v = *victim;
        *victim = v->next;
        free_run(v);
        s->nruns--;
    }
}

/* Runs of one sync waiting (queued, previewing) at most: a client asking
 * again and again gets told, not a growing queue.  Agents' runs not yet
 * approved are not counted: they have their own queue per token. */
#define MAX_WAITING 16

static size_t waiting(sup *s, const char *sync)
{
    size_t n = 0;
    for (sync_run *r = s->runs; r; r = r->next)
        if (!strcmp(r->sync, sync) && !is_final(r) && strcmp(r->state, "running") &&
            !r->approval)
            n++;
    return n;
}

/* Runs of agent token tok not approved (nor ended) yet, all syncs. */
static size_t agent_waiting(sup *s, const char *tok)
{
    size_t n = 0;
    for (sync_run *r = s->runs; r; r = r->next)
        if (r->approval && !is_final(r) && !strcmp(r->token, tok))
            n++;
    return n;
}

static sync_run *new_run(sup *s, const char *sync, const char *trigger, unsigned flags)
{
    sync_run *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    int64_t now = zx_now_us();
    r->id = (uint64_t)now > s->last_run_id ? (uint64_t)now : s->last_run_id + 1;
    s->last_run_id = r->id;
    snprintf(r->sync, sizeof(r->sync), "%s", sync);
    snprintf(r->state, sizeof(r->state), "queued");
    snprintf(r->trigger, sizeof(r->trigger), "%s", trigger);
    r->flags = flags;
    r->created_us = now;
    r->next = s->runs;
    s->runs = r;
    s->nruns++;
    trim_runs(s);
    return r;
}

/* The states a run's record is kept in: its end, and the two a restart
 * must know of (a run cut by it; an agent's run still to approve). */
static int durable(const sync_run *r)
{
    return (is_final(r) && strcmp(r->state, "previewed")) || !strcmp(r->state, "running") ||
           !strcmp(r->state, "awaiting_approval");
}

/* Hand r's record in its current state to the writer (retried by the
 * tick until sent). */
static void persist(sup *s, sync_run *r)
{
    if (r->flags & ZX_RUN_ONEOFF)
        r->persisted = 1;   /* a one-off send has no history of its own */
    if (r->persisted || !durable(r))
        return;
    if (!s->writer_ready || s->writer.pid <= 0)
        return;
    char id[24];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)r->id);
    json_t *o = json_pack("{s:s, s:s, s:o}", "sync", r->sync, "id", id, "record", run_json(r));
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (js && strlen(js) < ZX_CHAN_MAX && sup_chan_send(s, &s->writer, ZX_CHAN_RUN, js, NULL, 0) == 0)
        r->persisted = 1;
    else if (js && strlen(js) >= ZX_CHAN_MAX)
        r->persisted = 1;   /* cannot be stored whole: it stays in memory */
    free(js);
    json_decref(o);
}

static void feed_run(sup *s, const sync_run *r, const char *event)
{
    json_t *o = run_json(r);
    if (!o)
        return;
    char msg[900];
    json_t *rs = json_object_get(o, "rows_sent"), *rd = json_object_get(o, "rows_deleted");
    if (!strcmp(r->state, "failed"))
        snprintf(msg, sizeof(msg), "run %llu of sync %s failed: %s", (unsigned long long)r->id,
                 r->sync, r->error);
    else if (!strcmp(r->state, "succeeded"))
        snprintf(msg, sizeof(msg), "run %llu of sync %s succeeded: %lld rows sent, %lld "
                 "deleted", (unsigned long long)r->id, r->sync,
                 (long long)json_integer_value(rs), (long long)json_integer_value(rd));
    else
        snprintf(msg, sizeof(msg), "run %llu of sync %s: %s", (unsigned long long)r->id,
                 r->sync, r->state);
    json_object_set_new(o, "event", json_string(event));
    json_object_set_new(o, "pipeline", json_string(r->sync));
    json_object_set_new(o, "message", json_string(msg));
    json_object_del(o, "sample");
    json_object_del(o, "sample_deletes");
    json_object_del(o, "preview");
    char *js = json_dumps(o, JSON_COMPACT);
    if (js)
        sup_feed(s, js);
    free(js);
    json_decref(o);
}

static void answer_waiters(sup *s, sync_run *r)
{
    for (int i = 0; i < r->nwaiters; i++) {
        json_t *o = run_json(r);
        if (o) {
            json_object_set_new(o, "ok", json_boolean(strcmp(r->state, "failed") &&
                                                      strcmp(r->state, "rejected")));
            json_object_set_new(o, "run", json_string(json_string_value(json_object_get(o, "id"))));
        }
        sup_control_reply(r->waiters[i], o);
        sup_control_finish(s, r->waiters[i]);
    }
    r->nwaiters = 0;
}

void sup_sync_forget(struct bufferevent *bev)
{
    sup *s = zx_the_sup;
    for (sync_run *r = s ? s->runs : NULL; r; r = r->next)
        for (int i = 0; i < r->nwaiters; i++)
            if (r->waiters[i] == bev) {
                r->waiters[i] = r->waiters[--r->nwaiters];
                i--;
            }
}

static spipe *sync_pipe(sup *s, const char *name)
{
    spipe *p = sup_find_pipe(s, name);
    return p && zx_conf_is_sync(p->conf) ? p : NULL;
}

int sup_sync_idle(sup *s, child *c)
{
    (void)s;
    if (c->role != ROLE_STREAM || !c->pipe || !zx_conf_is_sync(c->pipe->conf))
        return 0;
    if (c->pipe->run)
        return 0;
    c->state = ST_STOPPED;
    c->want = 0;
    return 1;
}

/* r (queued or awaiting approval) will never start: its sync was removed
 * by a reload (or is no sync any more). */
static void fail_removed(sup *s, sync_run *r)
{
    snprintf(r->state, sizeof(r->state), "failed");
    snprintf(r->error, sizeof(r->error), "sync %s was removed from the configuration "
             "before this run started", r->sync);
    r->error_from_run = 0;
    r->sync_gone = 1;
    r->ended_us = zx_now_us();
    r->persisted = 1;   /* its sync's history is gone with it */
    feed_run(s, r, "run");
    answer_waiters(s, r);
}

void sup_syncs_changed(sup *s, const char *name)
{
    for (sync_run *r = s->runs; r; r = r->next) {
        if (!r->approval || strcmp(r->sync, name) ||
            !(!strcmp(r->state, "awaiting_approval") ||
              (!strcmp(r->state, "queued") && r->approved)))
            continue;
        snprintf(r->state, sizeof(r->state), "failed");
        snprintf(r->error, sizeof(r->error), "sync %s was changed by a reload after this run "
                 "was previewed: nothing sent (ask for a new run, and approve its preview)",
                 r->sync);
        r->error_from_run = 0;
        r->ended_us = zx_now_us();
        r->persisted = 0;
        zx_info("event=run_failed sync=%s run=%llu reason=sync_changed", r->sync,
                (unsigned long long)r->id);
        feed_run(s, r, "run");
        answer_waiters(s, r);
    }
}

/* "24h", "90s", "1500ms": a duration of the configuration, for messages. */
static void fmt_ms(char *buf, size_t len, uint32_t ms)
{
    if (ms && ms % 3600000 == 0)
        snprintf(buf, len, "%uh", ms / 3600000);
    else if (ms && ms % 60000 == 0)
        snprintf(buf, len, "%um", ms / 60000);
    else if (ms && ms % 1000 == 0)
        snprintf(buf, len, "%us", ms / 1000);
    else
        snprintf(buf, len, "%ums", ms);
}

/* Agents' runs not approved within their token's approval_timeout (from
 * when they were asked for) end "expired"; so do those of a token no
 * longer configured (revoked).  A preview under way finishes first. */
static void expire_runs(sup *s)
{
    int64_t now = zx_now_us();
    for (sync_run *r = s->runs; r; r = r->next) {
        if (!r->approval || (strcmp(r->state, "queued") && strcmp(r->state, "awaiting_approval")))
            continue;
        const zx_conf_apitoken *t = zx_conf_find_apitoken(s->conf, r->token);
        if (t && strcmp(t->role, "agent"))
            t = NULL;   /* no agent's any more: as good as revoked */
        if (t && now - r->created_us < (int64_t)t->approval_timeout_ms * 1000)
            continue;
        char d[24];
        fmt_ms(d, sizeof(d), t ? t->approval_timeout_ms : 0);
        snprintf(r->state, sizeof(r->state), "expired");
        if (t)
            snprintf(r->error, sizeof(r->error), "not approved within %s (approval_timeout of "
                     "API token %s): expired, nothing sent", d, r->token);
        else
            snprintf(r->error, sizeof(r->error), "API token %s is no longer an agent's token "
                     "of the configuration: expired, nothing sent", r->token);
        r->error_from_run = 0;
        r->ended_us = now;
        r->persisted = 0;
        zx_info("event=run_expired sync=%s run=%llu token=%s", r->sync,
                (unsigned long long)r->id, r->token);
        feed_run(s, r, "run");
        persist(s, r);
        answer_waiters(s, r);
    }
}

/* Start r (queued) on its sync's worker. */
static void start_run(sup *s, spipe *p, sync_run *r)
{
    if (p->owned_conf) {
        /* a send's author and connection as configured now (a reload may
         * have replaced them since it was asked for) */
        zx_conf_pipeline *pc = p->owned_conf;
        pc->auth = zx_conf_find_author(s->conf, pc->author);
        pc->dest_conn = pc->dest_connection
                            ? zx_conf_find_connection(s->conf, pc->dest_connection) : NULL;
        if (!pc->auth || (pc->dest_connection && (!pc->dest_conn || pc->dest_conn->read_only))) {
            snprintf(r->state, sizeof(r->state), "failed");
            snprintf(r->error, sizeof(r->error), "the author or connection of this send is no "
                     "longer configured (or is read_only now)");
            r->ended_us = zx_now_us();
            answer_waiters(s, r);
            return;
        }
    }
    zx_seg_hdr *h = p->seg.hdr;
    zx_segment_write_text(&h->source_status_seq, h->source_status, sizeof(h->source_status), "");
    zx_segment_write_text(&h->source_error_seq, h->source_error, sizeof(h->source_error), "");
    p->run = r;
    snprintf(r->state, sizeof(r->state), "%s", (r->flags & ZX_RUN_PREVIEW) ? "previewing"
                                                                          : "running");
    r->persisted = 0;
    r->started_us = zx_now_us();
    p->worker.want = 1;
    p->worker.ncrash = 0;
    p->worker.last_error[0] = 0;
    if (sup_spawn(s, &p->worker) < 0 || p->worker.pid <= 0) {
        p->run = NULL;
        p->worker.want = 0;
        snprintf(r->state, sizeof(r->state), "failed");
        snprintf(r->error, sizeof(r->error), "sync %s: cannot start the run worker: %.400s",
                 r->sync, p->worker.last_error[0] ? p->worker.last_error : "fork failed");
        r->ended_us = zx_now_us();
        feed_run(s, r, "run");
        persist(s, r);
        answer_waiters(s, r);
        return;
    }
    persist(s, r);
    zx_info("event=run_start sync=%s run=%llu trigger=\"%s\" preview=%d", r->sync,
            (unsigned long long)r->id, r->trigger, (r->flags & ZX_RUN_PREVIEW) != 0);
    if (!(r->flags & ZX_RUN_PREVIEW))
        feed_run(s, r, "run");
}

/* The worker's last status for run r (NULL when it left none for it). */
static json_t *worker_result(spipe *p, const sync_run *r)
{
    zx_seg_hdr *h = p->seg.hdr;
    char *buf = malloc(ZX_SEG_SOURCE_STATUS_MAX);
    if (!buf)
        return NULL;
    zx_segment_read_text(&h->source_status_seq, h->source_status, sizeof(h->source_status), buf,
                         ZX_SEG_SOURCE_STATUS_MAX);
    json_error_t je;
    json_t *o = json_loads(buf, 0, &je);
    free(buf);
    char id[24];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)r->id);
    const char *rid = o ? json_string_value(json_object_get(o, "run")) : NULL;
    if (!rid || strcmp(rid, id)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

void sup_sync_exited(sup *s, spipe *p, int st)
{
    sync_run *r = p->run;
    p->run = NULL;
    p->worker.want = 0;
    if (!r)
        return;
    char why[200];
    if (WIFEXITED(st))
        snprintf(why, sizeof(why), "exited with status %d", WEXITSTATUS(st));
    else
        snprintf(why, sizeof(why), "killed by signal %d (%s)", WIFSIGNALED(st) ? WTERMSIG(st) : 0,
                 WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "?");
    json_t *res = worker_result(p, r);
    const char *state = res ? json_string_value(json_object_get(res, "state")) : NULL;
    r->ended_us = zx_now_us();
    json_decref(r->result);
    r->result = res;
    if (state && (!strcmp(state, "succeeded") || !strcmp(state, "failed") ||
                  !strcmp(state, "previewed"))) {
        snprintf(r->state, sizeof(r->state), "%s", state);
        const char *e = json_string_value(json_object_get(res, "error"));
        snprintf(r->error, sizeof(r->error), "%s", e && !strcmp(state, "failed") ? e : "");
        r->error_from_run = e && !strcmp(state, "failed");
    } else {
        r->error_from_run = 0;
        snprintf(r->state, sizeof(r->state), "failed");
        snprintf(r->error, sizeof(r->error), "sync %s: the run worker %s before the run ended%s",
                 r->sync, why, s->shutting_down ? " (zxd is stopping)" : "");
        if (res)
            json_object_set_new(res, "rows_sent", json_integer(0));
    }
    if (r->approval && !strcmp(r->state, "previewed")) {
        /* an agent's run: the preview is what the operator approves */
        json_decref(r->preview);
        r->preview = json_deep_copy(res);
        if (r->preview) {
            json_object_del(r->preview, "run");
            json_object_del(r->preview, "state");
            json_object_del(r->preview, "phase");
        }
        json_decref(r->result);
        r->result = NULL;
        snprintf(r->state, sizeof(r->state), "awaiting_approval");
        r->flags &= ~ZX_RUN_PREVIEW;
        r->started_us = r->ended_us = 0;
        zx_info("event=run_awaiting_approval sync=%s run=%llu", r->sync,
                (unsigned long long)r->id);
        r->persisted = 0;
        persist(s, r);
        feed_run(s, r, "run");
        answer_waiters(s, r);
        return;
    }
    zx_info("event=run_end sync=%s run=%llu state=%s error=\"%s\"", r->sync,
            (unsigned long long)r->id, r->state, r->error);
    if (strcmp(r->state, "previewed"))
        feed_run(s, r, "run");
    r->persisted = 0;
    persist(s, r);
    answer_waiters(s, r);
}

/* The oldest queued run of sync name, or NULL; the previews of agents'
 * runs come after every other (an agent never holds up the others). */
static sync_run *oldest_queued(sup *s, const char *name)
{
    sync_run *best = NULL, *agents = NULL;
    for (sync_run *r = s->runs; r; r = r->next)
        if (!strcmp(r->sync, name) && !strcmp(r->state, "queued")) {
            /* newest first: the last one found is the oldest */
            if (r->approval)
                agents = r;
            else
                best = r;
        }
    return best ? best : agents;
}

/* A queued run of this sync that a schedule may join instead of adding
 * one (runs never overlap; fires while one waits are coalesced). */
static int has_pending(sup *s, const char *name)
{
    for (sync_run *r = s->runs; r; r = r->next)
        if (!strcmp(r->sync, name) && !strcmp(r->state, "queued") &&
            !(r->flags & ZX_RUN_PREVIEW))
            return 1;
    return 0;
}

/* When the sync last ran (its newest record in the store), or 0. */
typedef struct last_ctx {
    int64_t us;
} last_ctx;

static int last_cb(const char *sync, uint64_t id, const char *json, size_t len, void *ctx)
{
    (void)sync;
    (void)json;
    (void)len;
    ((last_ctx *)ctx)->us = (int64_t)id;   /* ids are µs of their creation */
    return 1;
}

static int64_t last_run_us(sup *s, const char *name)
{
    zx_store *st = NULL;
    char err[256];
    last_ctx lc = {0};
    if (zx_store_open(s->conf->data_dir, ZX_STORE_RDONLY, 0, &st, err, sizeof(err)) != 0)
        return 0;
    zx_store_txn *t = NULL;
    if (zx_store_begin(st, 1, &t) == 0) {
        zx_store_runs_each(t, name, last_cb, &lc);
        zx_store_abort(t);
    }
    zx_store_close(st);
    return lc.us;
}

static void schedules(sup *s)
{
    int64_t now = sched_now_us();
    for (size_t i = 0; i < s->npipes; i++) {
        spipe *p = s->pipes[i];
        const zx_conf_pipeline *pc = p->conf;
        zx_cron cr;
        char err[160];
        if (p->removing || !zx_conf_is_sync(pc) || !pc->schedule ||
            zx_cron_parse(pc->schedule, &cr, err, sizeof(err)) < 0) {
            p->next_fire_us = 0;
            continue;
        }
        if (!p->next_fire_us) {
            /* first look (start, or a reload that set the schedule): a fire
             * missed since the last run (zxd was down) runs once now */
            int64_t last = s->syncs_started ? 0 : last_run_us(s, p->name);
            p->next_fire_us = zx_cron_next(&cr, now);
            if (last && zx_cron_last_due(&cr, last, now) >= 0 && !has_pending(s, p->name)) {
                new_run(s, p->name, "schedule (missed while zxd was down)", 0);
                zx_info("event=run_missed sync=%s", p->name);
            }
            continue;
        }
        if (now < p->next_fire_us)
            continue;
        p->next_fire_us = zx_cron_next(&cr, now);
        if (p->run && !(p->run->flags & ZX_RUN_PREVIEW) && has_pending(s, p->name))
            continue;
        if (!has_pending(s, p->name))
            new_run(s, p->name, "schedule", 0);
    }
    s->syncs_started = 1;
}

/* Every 10 s of a run: a "run_progress" event with what its worker says
 * (rows read and sent, rate, time left). */
static void progress_events(sup *s)
{
    int64_t now = zx_mono_ms();
    for (size_t i = 0; i < s->npipes; i++) {
        spipe *p = s->pipes[i];
        sync_run *r = p->run;
        if (!r || r->approval || (r->flags & ZX_RUN_PREVIEW) || p->worker.pid <= 0)
            continue;
        if (!r->progress_ms) {
            r->progress_ms = now;
            continue;
        }
        if (now - r->progress_ms < 10000)
            continue;
        r->progress_ms = now;
        json_t *st = worker_result(p, r);
        if (!st)
            continue;
        char msg[300];
        const char *phase = json_string_value(json_object_get(st, "phase"));
        json_int_t read = json_integer_value(json_object_get(st, "rows_read"));
        json_int_t sent = json_integer_value(json_object_get(st, "rows_sent"));
        double rate = json_number_value(json_object_get(st, "rows_per_second"));
        json_t *left = json_object_get(st, "seconds_left");
        snprintf(msg, sizeof(msg), "run %llu of sync %s: %s, %lld rows read, %lld sent, "
                 "%.0f rows/s%s", (unsigned long long)r->id, r->sync, phase ? phase : "?",
                 (long long)read, (long long)sent, rate, left ? "" : "");
        json_t *ev = json_pack("{s:s, s:s, s:s, s:I, s:I, s:f, s:s}", "event", "run_progress",
                               "pipeline", r->sync, "phase", phase ? phase : "",
                               "rows_read", read, "rows_sent", sent, "rows_per_second", rate,
                               "message", msg);
        if (ev && json_is_number(left))
            json_object_set(ev, "seconds_left", left);
        char *js = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
        if (js)
            sup_feed(s, js);
        free(js);
        json_decref(ev);
        json_decref(st);
    }
}

/* At start, once the store is the writer's: a run the store says is
 * running was cut by the stop of zxd (recorded as failed); an agent's run
 * awaiting approval waits again, with its preview. */
typedef struct restore_ctx {
    sup *s;
} restore_ctx;

static int restore_one(const char *sync, uint64_t id, const char *json, size_t len, void *ctx)
{
    sup *s = ((restore_ctx *)ctx)->s;
    json_error_t je;
    json_t *o = json_loadb(json, len, 0, &je);
    const char *st = o ? json_string_value(json_object_get(o, "state")) : NULL;
    const zx_conf_pipeline *pc = zx_conf_find(s->conf, sync);
    if (!st || !pc || !zx_conf_is_sync(pc) || find_run(s, id) ||
        (strcmp(st, "running") && strcmp(st, "awaiting_approval"))) {
        json_decref(o);
        return 0;
    }
    sync_run *r = calloc(1, sizeof(*r));
    if (!r) {
        json_decref(o);
        return 1;
    }
    r->id = id;
    if (id > s->last_run_id)
        s->last_run_id = id;
    snprintf(r->sync, sizeof(r->sync), "%s", sync);
    const char *tr = json_string_value(json_object_get(o, "trigger"));
    snprintf(r->trigger, sizeof(r->trigger), "%s", tr ? tr : "?");
    r->created_us = (int64_t)id;
    const char *tk = json_string_value(json_object_get(o, "token"));
    snprintf(r->token, sizeof(r->token), "%s", tk ? tk : "");
    r->agent = json_is_boolean(json_object_get(o, "approved")) ||
               !strcmp(st, "awaiting_approval");
    r->approved = json_is_true(json_object_get(o, "approved"));
    if (!tk && r->agent && tr && !strncmp(tr, "agent ", 6)) {
        /* a record of an earlier zxd: "agent NAME (API)" */
        const char *e = strstr(tr + 6, " (API)");
        if (e && e - (tr + 6) < (ptrdiff_t)sizeof(r->token))
            snprintf(r->token, sizeof(r->token), "%.*s", (int)(e - (tr + 6)), tr + 6);
    }
    const char *sa = json_string_value(json_object_get(o, "started_at"));
    int64_t us = 0;
    if (sa && zx_rfc3339_parse(sa, strlen(sa), &us))
        r->started_us = us;
    if (!strcmp(st, "running")) {
        snprintf(r->state, sizeof(r->state), "failed");
        snprintf(r->error, sizeof(r->error), "zxd stopped during the run (nothing it sent "
                 "was recorded as sent: the next run sends it again)");
        r->ended_us = zx_now_us();
        r->result = json_incref(o);
        zx_warn("event=run_cut sync=%s run=%llu", sync, (unsigned long long)id);
    } else {
        snprintf(r->state, sizeof(r->state), "awaiting_approval");
        r->approval = 1;
        r->persisted = 1;
        r->preview = json_incref(json_object_get(o, "preview"));
        zx_info("event=run_awaiting_approval sync=%s run=%llu restored=1", sync,
                (unsigned long long)id);
    }
    r->next = s->runs;
    s->runs = r;
    s->nruns++;
    json_decref(o);
    return 0;
}

static void restore_runs(sup *s)
{
    zx_store *st = NULL;
    char err[256];
    s->runs_restored = 1;
    if (zx_store_open(s->conf->data_dir, ZX_STORE_RDONLY, 0, &st, err, sizeof(err)) != 0)
        return;
    zx_store_txn *t = NULL;
    restore_ctx c = {s};
    for (size_t i = 0; i < s->conf->npipelines; i++) {
        const zx_conf_pipeline *pc = &s->conf->pipelines[i];
        if (!zx_conf_is_sync(pc) || zx_store_begin(st, 1, &t) != 0)
            continue;
        zx_store_runs_each(t, pc->name, restore_one, &c);
        zx_store_abort(t);
    }
    zx_store_close(st);
}

void sup_syncs_tick(sup *s)
{
    if (s->shutting_down)
        return;
    sup_sync_sends_tick(s);
    progress_events(s);
    /* schedules need the store read by the writer's own start: wait for it */
    if (s->writer_ready)
        schedules(s);
    if (s->writer_ready && !s->runs_restored)
        restore_runs(s);
    /* runs waiting for a sync a reload removed will never start */
    for (sync_run *r = s->runs; r; r = r->next)
        if ((!strcmp(r->state, "queued") || !strcmp(r->state, "awaiting_approval")) &&
            !sync_pipe(s, r->sync))
            fail_removed(s, r);
    expire_runs(s);
    for (sync_run *r = s->runs; r; r = r->next)
        if (durable(r) && !r->persisted)
            persist(s, r);
    if (!s->writer_ready)
        return;   /* a run needs the writer (its hashes) */
    for (size_t i = 0; i < s->npipes; i++) {
        spipe *p = s->pipes[i];
        if (p->removing || !zx_conf_is_sync(p->conf) || p->run || p->worker.pid > 0)
            continue;
        sync_run *r = oldest_queued(s, p->name);
        if (r)
            start_run(s, p, r);
    }
}

/* ---- commands ------------------------------------------------------------ */

static json_t *err_obj(const char *fmt, const char *a, const char *b)
{
    char msg[700];
    snprintf(msg, sizeof(msg), fmt, a ? a : "", b ? b : "");
    return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

static int parse_id(json_t *req, uint64_t *id)
{
    json_t *v = json_object_get(req, "run");
    const char *t = json_string_value(v);
    char *end = NULL;
    if (json_is_integer(v) && json_integer_value(v) > 0) {
        *id = (uint64_t)json_integer_value(v);
        return 0;
    }
    if (!t || !*t)
        return -1;
    errno = 0;
    unsigned long long x = strtoull(t, &end, 10);
    if (errno || *end || !x)
        return -1;
    *id = x;
    return 0;
}

typedef struct list_ctx {
    json_t *arr;
    size_t max;
    sup *s;
} list_ctx;

static int list_cb(const char *sync, uint64_t id, const char *json, size_t len, void *ctx)
{
    (void)sync;
    list_ctx *l = ctx;
    if (json_array_size(l->arr) >= l->max)
        return 1;
    if (find_run(l->s, id))
        return 0;   /* shown from memory (the store may not have it yet) */
    json_error_t je;
    json_t *o = json_loadb(json, len, 0, &je);
    if (o)
        json_array_append_new(l->arr, o);
    return 0;
}

static json_t *cmd_runs(sup *s, const char *name, json_t *req)
{
    const zx_conf_pipeline *pc = zx_conf_find(s->conf, name);
    if (!pc || !zx_conf_is_sync(pc))
        return err_obj("no reverse sync named '%s'", name, NULL);
    json_t *lim = json_object_get(req, "limit");
    size_t max = json_is_integer(lim) && json_integer_value(lim) > 0
                     ? (size_t)json_integer_value(lim) : 20;
    json_t *arr = json_array();
    /* the runs this zxd knows (waiting, running, ended since it started)
     * first, newest first; then older ones from the store */
    for (sync_run *r = s->runs; r && json_array_size(arr) < max; r = r->next)
        /* not the plain previews (`zxctl preview`): they are no runs */
        if (!strcmp(r->sync, name) && !((r->flags & ZX_RUN_PREVIEW) && !r->approval) &&
            strcmp(r->state, "previewed"))
            json_array_append_new(arr, run_json(r));
    zx_store *st = NULL;
    char err[256];
    if (zx_store_open(s->conf->data_dir, ZX_STORE_RDONLY, 0, &st, err, sizeof(err)) == 0) {
        zx_store_txn *t = NULL;
        list_ctx l = {arr, max, s};
        if (zx_store_begin(st, 1, &t) == 0) {
            zx_store_runs_each(t, name, list_cb, &l);
            zx_store_abort(t);
        }
        zx_store_close(st);
    }
    return json_pack("{s:b, s:s, s:o}", "ok", 1, "sync", name, "runs", arr);
}

/* Queue a run of sync p; with a waiter, it is answered when the run ends. */
static json_t *queue_run(sup *s, struct bufferevent *bev, spipe *p, const char *trigger,
                         unsigned flags, int wait)
{
    if (waiting(s, p->name) >= MAX_WAITING)
        return err_obj("sync %s has %s runs waiting already: let them run first",
                       p->name, "16");
    sync_run *r = new_run(s, p->name, trigger, flags);
    if (!r)
        return err_obj("out of memory", NULL, NULL);
    if (wait && bev)
        r->waiters[r->nwaiters++] = bev;
    sup_syncs_tick(s);
    if (wait && bev && !is_final(r))
        return NULL;
    json_t *o = run_json(r);
    if (o) {
        json_object_set_new(o, "ok", json_true());
        json_object_set_new(o, "run", json_string(json_string_value(json_object_get(o, "id"))));
    }
    if (wait && bev)
        r->nwaiters = 0;
    return o;
}

json_t *sup_sync_command(sup *s, struct bufferevent *bev, const char *cmd, json_t *req)
{
    const char *name = json_string_value(json_object_get(req, "name"));
    if (!strcmp(cmd, "run") || !strcmp(cmd, "preview")) {
        if (!name)
            return err_obj("%s needs the name of a sync", cmd, NULL);
        spipe *p = sync_pipe(s, name);
        if (!p)
            return err_obj("no reverse sync named '%s' (zxctl run takes a pipeline with "
                           "direction: out)", name, NULL);
        int preview = !strcmp(cmd, "preview");
        unsigned flags = preview ? ZX_RUN_PREVIEW : 0;
        if (json_is_true(json_object_get(req, "full")))
            flags |= ZX_RUN_FULL;
        int wait = preview || json_is_true(json_object_get(req, "wait"));
        return queue_run(s, bev, p, preview ? "preview" : "manual (zxctl)", flags, wait);
    }
    if (!strcmp(cmd, "runs")) {
        if (!name)
            return err_obj("runs needs the name of a sync", NULL, NULL);
        return cmd_runs(s, name, req);
    }
    if (!strcmp(cmd, "approve") || !strcmp(cmd, "reject")) {
        uint64_t id;
        if (parse_id(req, &id) < 0)
            return err_obj("%s needs a run id (\"run\": \"123...\")", cmd, NULL);
        if (!s->runs_restored && s->writer_ready)
            restore_runs(s);
        sync_run *r = find_run(s, id);
        char ids[24];
        snprintf(ids, sizeof(ids), "%llu", (unsigned long long)id);
        if (!r && !s->runs_restored)
            return err_obj("zxd is starting (its writer is not up yet): retry %s in a moment",
                           cmd, NULL);
        if (!r)
            return err_obj("no run %s waits for approval", ids, NULL);
        if (!strcmp(r->state, "awaiting_approval") && !sync_pipe(s, r->sync))
            fail_removed(s, r);   /* a reload removed it since the last tick */
        expire_runs(s);
        if (r->sync_gone) {
            char msg[300];
            snprintf(msg, sizeof(msg), "run %s cannot be %s: its sync %s was removed from the "
                     "configuration (by a reload), so the run failed and nothing was sent",
                     ids, !strcmp(cmd, "reject") ? "rejected" : "approved", r->sync);
            return err_obj("%s", msg, NULL);
        }
        if (strcmp(r->state, "awaiting_approval")) {
            char msg[690];
            snprintf(msg, sizeof(msg), "run %s is %s, not awaiting_approval%s%.560s%s", ids,
                     r->state, r->error[0] ? " (" : "", r->error, r->error[0] ? ")" : "");
            return err_obj("%s", msg, NULL);
        }
        if (!strcmp(cmd, "reject")) {
            snprintf(r->state, sizeof(r->state), "rejected");
            r->persisted = 0;
            snprintf(r->error, sizeof(r->error), "rejected by an operator (zxctl reject)");
            r->ended_us = zx_now_us();
            feed_run(s, r, "run");
            persist(s, r);
        } else {
            snprintf(r->state, sizeof(r->state), "queued");
            r->approval = 0;
            r->approved = 1;
            char t[96];
            snprintf(t, sizeof(t), "%.70s, approved", r->trigger);
            snprintf(r->trigger, sizeof(r->trigger), "%s", t);
            sup_syncs_tick(s);
        }
        json_t *o = run_json(r);
        if (o) {
            json_object_set_new(o, "ok", json_true());
            json_object_set_new(o, "run", json_string(ids));
        }
        return o;
    }
    return err_obj("unknown command '%s'", cmd, NULL);
}

json_t *sup_sync_queue_oneoff(sup *s, struct bufferevent *bev, spipe *p)
{
    sync_run *r = new_run(s, p->name, "send (zxctl)", ZX_RUN_ONEOFF);
    if (!r)
        return json_pack("{s:b, s:s}", "ok", 0, "error", "out of memory");
    if (bev)
        r->waiters[r->nwaiters++] = bev;
    sup_syncs_tick(s);
    return bev && !is_final(r) ? NULL : run_json(r);
}

int sup_sync_oneoff_done(sup *s, spipe *p)
{
    for (sync_run *r = s->runs; r; r = r->next)
        if (!strcmp(r->sync, p->name) && (!is_final(r) || r->nwaiters))
            return 0;
    return 1;
}

json_t *sup_sync_status(sup *s, spipe *p)
{
    if (!zx_conf_is_sync(p->conf))
        return NULL;
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "state", json_string(p->run ? p->run->state : "idle"));
    if (p->run) {
        char id[24];
        snprintf(id, sizeof(id), "%llu", (unsigned long long)p->run->id);
        json_object_set_new(o, "run_id", json_string(id));
    }
    sync_run *last = NULL, *queued = NULL;
    for (sync_run *r = s->runs; r; r = r->next) {
        if (strcmp(r->sync, p->name))
            continue;
        if (!last && is_final(r) && strcmp(r->state, "previewed"))
            last = r;
        if (!strcmp(r->state, "queued") || !strcmp(r->state, "awaiting_approval"))
            queued = r;
    }
    if (last)
        json_object_set_new(o, "last_run", run_json(last));
    if (queued)
        json_object_set_new(o, "waiting", json_string(queued->state));
    if (p->next_fire_us) {
        char t[ZX_TS_BUFSZ];
        /* the schedule's clock may be shifted (tests): show its time */
        zx_ts_format(p->next_fire_us, t);
        json_object_set_new(o, "next_run_at", json_string(t));
    }
    return o;
}

int sup_sync_api_run(sup *s, const char *sync, const zx_conf_apitoken *tok, unsigned flags,
                     uint64_t *id, int *http, char *msg, size_t msglen)
{
    spipe *p = sync_pipe(s, sync);
    if (!p) {
        *http = 404;
        snprintf(msg, msglen, "no reverse sync named %.63s", sync);
        return -1;
    }
    int allowed = tok->nsyncs == 0;
    for (size_t i = 0; i < tok->nsyncs; i++)
        allowed |= !strcmp(tok->syncs[i], sync);
    if (!allowed) {
        *http = 403;
        snprintf(msg, msglen, "token %s may not run sync %.63s", tok->name, sync);
        return -1;
    }
    int agent = !strcmp(tok->role, "agent");
    char trig[96];
    snprintf(trig, sizeof(trig), "%s %.60s (API)", agent ? "agent" : "orchestrator", tok->name);
    if (agent && agent_waiting(s, tok->name) >= tok->max_waiting) {
        *http = 429;
        snprintf(msg, msglen, "token %.63s has %u runs waiting for an operator's approval "
                 "(max_waiting): retry once they are approved, rejected or expired",
                 tok->name, tok->max_waiting);
        return -1;
    }
    if (!agent && waiting(s, sync) >= MAX_WAITING) {
        *http = 429;
        snprintf(msg, msglen, "sync %.63s has %d runs waiting already: retry once they ran",
                 sync, MAX_WAITING);
        return -1;
    }
    sync_run *r = new_run(s, sync, trig, (agent ? ZX_RUN_PREVIEW : 0) | (flags & ZX_RUN_FULL));
    if (!r) {
        *http = 503;
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    r->approval = agent;
    r->agent = agent;
    snprintf(r->token, sizeof(r->token), "%s", tok->name);
    *id = r->id;
    sup_syncs_tick(s);
    return 0;
}

json_t *sup_sync_run_json(sup *s, uint64_t id)
{
    sync_run *r = find_run(s, id);
    if (r && ((r->flags & ZX_RUN_ONEOFF) || ((r->flags & ZX_RUN_PREVIEW) && !r->approval) ||
              !strcmp(r->state, "previewed")))
        return NULL;   /* a send or a preview (`zxctl`): no run of the API's */
    if (r)
        return run_json(r);
    /* an older one: from the store */
    zx_store *st = NULL;
    char err[256];
    json_t *found = NULL;
    if (zx_store_open(s->conf->data_dir, ZX_STORE_RDONLY, 0, &st, err, sizeof(err)) != 0)
        return NULL;
    zx_store_txn *t = NULL;
    for (size_t i = 0; i < s->conf->npipelines && !found; i++) {
        const zx_conf_pipeline *pc = &s->conf->pipelines[i];
        if (!zx_conf_is_sync(pc) || zx_store_begin(st, 1, &t) != 0)
            continue;
        list_ctx l = {json_array(), 200, s};
        zx_store_runs_each(t, pc->name, list_cb, &l);
        zx_store_abort(t);
        char ids[24];
        snprintf(ids, sizeof(ids), "%llu", (unsigned long long)id);
        for (size_t k = 0; k < json_array_size(l.arr) && !found; k++) {
            json_t *o = json_array_get(l.arr, k);
            const char *v = json_string_value(json_object_get(o, "id"));
            if (v && !strcmp(v, ids))
                found = json_incref(o);
        }
        json_decref(l.arr);
    }
    zx_store_close(st);
    return found;
}

/* ---- the gateway's API (ZX_CHAN_API) ---------------------------------- */

static json_t *api_error(int status, const char *msg)
{
    return json_pack("{s:i, s:{s:s, s:i}}", "status", status, "body", "error", msg, "status",
                     status);
}

/* The configured token equal to tok (compared in constant time over every
 * token), or NULL. */
static const zx_conf_apitoken *find_token(const zx_conf *c, const char *tok)
{
    const zx_conf_apitoken *found = NULL;
    size_t tl = strlen(tok);
    for (size_t i = 0; i < c->napitokens; i++) {
        const char *t = c->apitokens[i].token;
        if (t && zx_ct_equal(tok, tl, t, strlen(t)))
            found = &c->apitokens[i];
    }
    return found;
}

void sup_sync_api(sup *s, const char *buf)
{
    json_error_t je;
    json_t *req = json_loads(buf, 0, &je), *rep = NULL;
    json_int_t id = req ? json_integer_value(json_object_get(req, "id")) : 0;
    const char *op = req ? json_string_value(json_object_get(req, "op")) : NULL;
    const char *tok = req ? json_string_value(json_object_get(req, "token")) : NULL;
    const zx_conf_apitoken *t = tok ? find_token(s->conf, tok) : NULL;
    if (!id || !op) {
        json_decref(req);
        return;
    }
    if (!t) {
        rep = api_error(401, "unknown API token (api_tokens in the configuration)");
    } else if (!strcmp(op, "run")) {
        const char *sync = json_string_value(json_object_get(req, "sync"));
        uint64_t rid = 0;
        int http = 500;
        char msg[300];
        unsigned fl = json_is_true(json_object_get(req, "full")) ? ZX_RUN_FULL : 0;
        if (!sync || sup_sync_api_run(s, sync, t, fl, &rid, &http, msg, sizeof(msg)) < 0) {
            rep = api_error(sync ? http : 400, sync ? msg : "no sync named");
        } else {
            sync_run *r = find_run(s, rid);
            char ids[24], url[64];
            snprintf(ids, sizeof(ids), "%llu", (unsigned long long)rid);
            snprintf(url, sizeof(url), "/api/runs/%s", ids);
            rep = json_pack("{s:i, s:{s:s, s:s, s:s, s:s}}", "status", 202, "body", "run", ids,
                            "sync", sync, "state", r ? r->state : "queued", "status_url", url);
            zx_info("event=api_run sync=%s run=%s token=%s role=%s", sync, ids, t->name, t->role);
        }
    } else if (!strcmp(op, "get")) {
        const char *ids = json_string_value(json_object_get(req, "run"));
        unsigned long long rid = ids ? strtoull(ids, NULL, 10) : 0;
        json_t *rec = rid ? sup_sync_run_json(s, rid) : NULL;
        if (!rec || sup_run_api_view(rec, t) < 0) {
            json_decref(rec);
            rep = api_error(404, "no such run (or not one this token may read)");
        } else {
            rep = json_pack("{s:i, s:o}", "status", 200, "body", rec);
        }
    } else {
        rep = api_error(400, "unknown request");
    }
    if (rep) {
        json_object_set_new(rep, "id", json_integer(id));
        char *js = json_dumps(rep, JSON_COMPACT);
        if (js && strlen(js) < ZX_CHAN_MAX)
            sup_chan_send(s, &s->gateway, ZX_CHAN_API, js, NULL, 0);
        else if (js) {
            json_t *small = api_error(500, "the answer is too large");
            json_object_set_new(small, "id", json_integer(id));
            char *js2 = json_dumps(small, JSON_COMPACT);
            if (js2)
                sup_chan_send(s, &s->gateway, ZX_CHAN_API, js2, NULL, 0);
            free(js2);
            json_decref(small);
        }
        free(js);
        json_decref(rep);
    }
    json_decref(req);
}
