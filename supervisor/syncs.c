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
 * start two runs of one sync at once. *
 * This file holds the run table and a run's life (queue, start, end,
 * record); syncs_tick.c what happens every tick, syncs_cmd.c the control
 * commands, syncs_api.c the gateway's API (shared: syncs_int.h).
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
#include "store/store.h"
#include "supervisor/syncs_int.h"
#include "conf/plugin.h"
#include "workers/sources/source.h"
#include "workers/syncs/sync_opts.h"

#define MAX_RUNS_KEPT 256
#define CUT_KILL_MS 5000   /* sup_sync_cut: SIGTERM, then SIGKILL after this */

void sup_sync_worker_args(const spipe *p, uint64_t *run_id, unsigned *run_flags,
                          uint64_t *run_expect_rows)
{
    *run_id = p->run ? p->run->id : 0;
    *run_flags = p->run ? p->run->flags : 0;
    *run_expect_rows = p->run ? p->run->expect_rows : 0;
}

/* The rows the newest run of sync that read its whole result (succeeded,
 * or previewed; not one that read past its cursor's mark) read: a new
 * run's expected rows (its progress).  The runs in memory first, then the
 * store's records (newest first); 0 when none says. */
static int rows_of(json_t *rec, uint64_t *rows)
{
    const char *st = json_string_value(json_object_get(rec, "state"));
    json_t *v = json_object_get(rec, "rows_read");
    if (!st || (strcmp(st, "succeeded") && strcmp(st, "previewed")) || !json_is_integer(v) ||
        json_integer_value(v) <= 0 || json_is_string(json_object_get(rec, "cursor_from")))
        return 0;
    *rows = (uint64_t)json_integer_value(v);
    return 1;
}

static int expect_cb(const char *sync, uint64_t id, const char *json, size_t len, void *ctx)
{
    (void)sync;
    (void)id;
    json_t *o = json_loadb(json, len, 0, NULL);
    int found = o && rows_of(o, ctx);
    json_decref(o);
    return found;   /* 1 stops the walk */
}

static uint64_t expected_rows(sup *s, const sync_run *run)
{
    uint64_t rows = 0;
    for (sync_run *r = s->runs; r; r = r->next)
        if (r != run && !strcmp(r->sync, run->sync) && syncs_is_final(r) &&
            (!strcmp(r->state, "succeeded") || !strcmp(r->state, "previewed")) && r->result &&
            rows_of(r->result, &rows))
            return rows;
    zx_store *st = NULL;
    char err[256];
    if (zx_store_open(s->conf->data_dir, ZX_STORE_RDONLY, 0, &st, err, sizeof(err)) != 0)
        return 0;
    zx_store_txn *t = NULL;
    if (zx_store_begin(st, 1, &t) == 0) {
        zx_store_runs_each(t, run->sync, expect_cb, &rows);
        zx_store_abort(t);
    }
    zx_store_close(st);
    return rows;
}

int syncs_is_final(const sync_run *r)
{
    return !strcmp(r->state, "succeeded") || !strcmp(r->state, "failed") ||
           !strcmp(r->state, "rejected") || !strcmp(r->state, "expired") ||
           !strcmp(r->state, "previewed");
}

static void ts(char *buf, int64_t us)
{
    if (us)
        zx_ts_format(us, buf);
    else
        buf[0] = 0;
}

/* The record of r (what `runs`, the API and the store show). */
json_t *syncs_run_json(const sync_run *r)
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
    const zx_sync_opts *so = sp ? zx_sync_opts_of(sp->conf) : NULL;
    if (so && so->author)
        json_object_set_new(o, "author", json_string(so->author));
    if (r->result && json_is_string(json_object_get(r->result, "note")))
        json_object_set(o, "note", json_object_get(r->result, "note"));
    if (r->result && json_object_get(r->result, "mode"))
        json_object_set(o, "mode", json_object_get(r->result, "mode"));
    /* lake tables: the files and the version a run made; destinations that
     * send requests: the batches and the first error a batch or row met;
     * a cursor's run: the mark it read from (null: everything), the one
     * it read up to */
    static const char *const lake[] = {"files_added", "files_removed", "made", "batches",
                                       "batches_retried", "batches_failed", "first_error",
                                       "cursor_from", "cursor_mark", NULL};
    for (int i = 0; r->result && lake[i]; i++)
        if (json_object_get(r->result, lake[i]))
            json_object_set(o, lake[i], json_object_get(r->result, lake[i]));
    if (r->flags & ZX_RUN_FULL)
        json_object_set_new(o, "full", json_true());
    /* on: change: from the first commit it answers to its end */
    if (r->change_us && r->ended_us >= r->change_us)
        json_object_set_new(o, "change_latency_ms",
                            json_integer((json_int_t)((r->ended_us - r->change_us) / 1000)));
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

sync_run *syncs_find_run(sup *s, uint64_t id)
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
            if (syncs_is_final(*pp) && (*pp)->persisted && !(*pp)->nwaiters)
                victim = pp;
        if (!victim)
            return;
        sync_run *v = *victim;
        *victim = v->next;
        free_run(v);
        s->nruns--;
    }
}

size_t syncs_waiting(sup *s, const char *sync)
{
    size_t n = 0;
    for (sync_run *r = s->runs; r; r = r->next)
        if (!strcmp(r->sync, sync) && !syncs_is_final(r) && strcmp(r->state, "running") &&
            !r->approval)
            n++;
    return n;
}

/* Runs of agent token tok not approved (nor ended) yet, all syncs. */
size_t syncs_agent_waiting(sup *s, const char *tok)
{
    size_t n = 0;
    for (sync_run *r = s->runs; r; r = r->next)
        if (r->approval && !syncs_is_final(r) && !strcmp(r->token, tok))
            n++;
    return n;
}

sync_run *syncs_new_run(sup *s, const char *sync, const char *trigger, unsigned flags)
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
int syncs_durable(const sync_run *r)
{
    return (syncs_is_final(r) && strcmp(r->state, "previewed")) || !strcmp(r->state, "running") ||
           !strcmp(r->state, "awaiting_approval");
}

/* Hand r's record in its current state to the writer (retried by the
 * tick until sent). */
void syncs_persist(sup *s, sync_run *r)
{
    if (r->flags & ZX_RUN_ONEOFF)
        r->persisted = 1;   /* a one-off send has no history of its own */
    if (r->persisted || !syncs_durable(r))
        return;
    if (!s->writer_ready || s->writer.pid <= 0)
        return;
    char id[24];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)r->id);
    json_t *o = json_pack("{s:s, s:s, s:o}", "sync", r->sync, "id", id, "record", syncs_run_json(r));
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (js && strlen(js) < ZX_CHAN_MAX && sup_chan_send(s, &s->writer, ZX_CHAN_RUN, js, NULL, 0) == 0)
        r->persisted = 1;
    else if (js && strlen(js) >= ZX_CHAN_MAX)
        r->persisted = 1;   /* cannot be stored whole: it stays in memory */
    free(js);
    json_decref(o);
}

/* Count r's end, once, in its sync's runs_ended (GET /metrics). */
static void count_end(sup *s, sync_run *r)
{
    static const char *const outcomes[] = SUP_RUN_OUTCOMES;
    spipe *p = sup_find_pipe(s, r->sync);
    /* (a one-off send's pipeline is no sync of the configuration) */
    if (r->counted || !syncs_is_final(r) || !p || !p->conf || !zx_conf_is_sync(p->conf) ||
        (r->flags & ZX_RUN_ONEOFF))
        return;
    r->counted = 1;
    for (size_t i = 0; i < sizeof(outcomes) / sizeof(outcomes[0]); i++)
        if (!strcmp(r->state, outcomes[i]))
            p->runs_ended[i]++;
    if (r->started_us > 0 && r->ended_us >= r->started_us) {
        p->runs_timed++;
        p->run_seconds += (double)(r->ended_us - r->started_us) / 1e6;
    }
}

void syncs_feed_run(sup *s, sync_run *r, const char *event)
{
    count_end(s, r);
    json_t *o = syncs_run_json(r);
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

void syncs_answer_waiters(sup *s, sync_run *r)
{
    for (int i = 0; i < r->nwaiters; i++) {
        json_t *o = syncs_run_json(r);
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

spipe *syncs_pipe(sup *s, const char *name)
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
void syncs_fail_removed(sup *s, sync_run *r)
{
    snprintf(r->state, sizeof(r->state), "failed");
    snprintf(r->error, sizeof(r->error), "sync %s was removed from the configuration "
             "before this run started", r->sync);
    r->error_from_run = 0;
    r->sync_gone = 1;
    r->ended_us = zx_now_us();
    r->persisted = 1;   /* its sync's history is gone with it */
    syncs_feed_run(s, r, "run");
    syncs_answer_waiters(s, r);
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
        syncs_feed_run(s, r, "run");
        syncs_answer_waiters(s, r);
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
void syncs_expire_runs(sup *s)
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
        syncs_feed_run(s, r, "run");
        syncs_persist(s, r);
        syncs_answer_waiters(s, r);
    }
}

/* Start r (queued) on its sync's worker. */
void syncs_start_run(sup *s, spipe *p, sync_run *r)
{
    if (p->owned_conf) {
        /* a send's author and connection as configured now (a reload may
         * have replaced them since it was asked for) */
        zx_conf_pipeline *pc = p->owned_conf;
        const zx_sync_opts *so = zx_sync_opts_of(pc);   /* a send's: never NULL */
        pc->auth = zx_conf_find_author(s->conf, so->author);
        pc->dest_conn = so->dest_connection
                            ? zx_conf_find_connection(s->conf, so->dest_connection) : NULL;
        if (pc->dest_conn)   /* its kind may have changed too */
            pc->dest_plugin = zx_plugin_for_kind(ZX_PLUGIN_DESTINATION, pc->dest_conn->kind);
        if (!pc->auth || (so->dest_connection && (!pc->dest_conn || !pc->dest_plugin ||
                                                  pc->dest_conn->read_only))) {
            snprintf(r->state, sizeof(r->state), "failed");
            snprintf(r->error, sizeof(r->error), "the author or connection of this send is no "
                     "longer configured (or is read_only now)");
            r->ended_us = zx_now_us();
            syncs_answer_waiters(s, r);
            return;
        }
    }
    zx_seg_hdr *h = p->seg.hdr;
    zx_segment_write_text(&h->source_status_seq, h->source_status, sizeof(h->source_status), "");
    zx_segment_progress_write(h, NULL);   /* (the worker is not running) */
    if (!(r->flags & ZX_RUN_ONEOFF))
        r->expect_rows = expected_rows(s, r);
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
        syncs_feed_run(s, r, "run");
        syncs_persist(s, r);
        syncs_answer_waiters(s, r);
        return;
    }
    syncs_persist(s, r);
    zx_info("event=run_start sync=%s run=%llu trigger=\"%s\" preview=%d", r->sync,
            (unsigned long long)r->id, r->trigger, (r->flags & ZX_RUN_PREVIEW) != 0);
    if (!(r->flags & ZX_RUN_PREVIEW))
        syncs_feed_run(s, r, "run");
}

/* The worker's last status for run r (NULL when it left none for it). */
json_t *syncs_worker_result(spipe *p, const sync_run *r)
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

void sup_sync_cut(sup *s, spipe *p, const char *why)
{
    sync_run *r = p->run;
    if (!r || p->worker.pid <= 0 || r->cut[0] || (r->flags & ZX_RUN_PREVIEW))
        return; /* a preview writes nothing: it runs on any zxd */
    snprintf(r->cut, sizeof(r->cut), "%s", why);
    zx_warn("event=run_cut sync=%s run=%llu pid=%d reason=\"%s\"", r->sync,
            (unsigned long long)r->id, (int)p->worker.pid, why);
    (void)s;
    /* SIGTERM: the worker ends its query on the server (PQcancel: a
     * killed client leaves a sleeping backend running) and writes no
     * more; killed if still there after CUT_KILL_MS.  Its exit records
     * the run (children.c). */
    kill(p->worker.pid, SIGTERM);
    p->worker.kill_at_ms = zx_mono_ms() + CUT_KILL_MS;
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
    json_t *res = syncs_worker_result(p, r);
    const char *state = res ? json_string_value(json_object_get(res, "state")) : NULL;
    r->ended_us = zx_now_us();
    json_decref(r->result);
    r->result = res;
    if (r->cut[0]) {
        /* killed by sup_sync_cut: whatever it wrote last is not its end */
        r->error_from_run = 0;
        snprintf(r->state, sizeof(r->state), "failed");
        snprintf(r->error, sizeof(r->error), "sync %s: the run was stopped: %s", r->sync,
                 r->cut);
        if (res)
            json_object_set_new(res, "rows_sent", json_integer(0));
    } else if (state && (!strcmp(state, "succeeded") || !strcmp(state, "failed") ||
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
        syncs_persist(s, r);
        syncs_feed_run(s, r, "run");
        syncs_answer_waiters(s, r);
        return;
    }
    zx_info("event=run_end sync=%s run=%llu state=%s error=\"%s\"", r->sync,
            (unsigned long long)r->id, r->state, r->error);
    if (strcmp(r->state, "previewed"))
        syncs_feed_run(s, r, "run");
    r->persisted = 0;
    syncs_persist(s, r);
    syncs_answer_waiters(s, r);
}
