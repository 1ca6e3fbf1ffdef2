/*
 * syncs_tick.c — what reverse syncs do every tick (sup_syncs_tick):
 * fire schedules (cron, UTC; a fire missed while zxd was down runs once),
 * restore the runs a restart cut or left awaiting
 * approval, and start each sync's oldest queued run.
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
#include "supervisor/lease.h"
#include "supervisor/syncs_int.h"
#include "workers/sources/source.h"
#include "workers/syncs/sync_opts.h"

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
        const zx_sync_opts *so = zx_sync_opts_of(pc);
        zx_cron cr;
        char err[160];
        if (p->removing || !zx_conf_is_sync(pc) || !so || !so->schedule ||
            zx_cron_parse(so->schedule, &cr, err, sizeof(err)) < 0) {
            p->next_fire_us = 0;
            continue;
        }
        if (!p->next_fire_us) {
            /* first look (start, or a reload that set the schedule): a fire
             * missed since the last run (zxd was down) runs once now */
            int64_t last = s->syncs_started ? 0 : last_run_us(s, p->name);
            p->next_fire_us = zx_cron_next(&cr, now);
            char why[800];
            if (last && sup_lease_standby(s, p, why, sizeof(why)))
                zx_info("event=run_skipped sync=%s trigger=missed reason=\"%s\"", p->name, why);
            else if (last && zx_cron_last_due(&cr, last, now) >= 0 && !has_pending(s, p->name)) {
                syncs_new_run(s, p->name, "schedule (missed while zxd was down)", 0);
                zx_info("event=run_missed sync=%s", p->name);
            }
            continue;
        }
        if (now < p->next_fire_us)
            continue;
        p->next_fire_us = zx_cron_next(&cr, now);
        char why[800];
        if (sup_lease_standby(s, p, why, sizeof(why))) {
            /* a shared workspace: the zxd holding its lease runs it */
            zx_info("event=run_skipped sync=%s trigger=schedule reason=\"%s\"", p->name, why);
            continue;
        }
        if (p->run && !(p->run->flags & ZX_RUN_PREVIEW) && has_pending(s, p->name))
            continue;
        if (!has_pending(s, p->name))
            syncs_new_run(s, p->name, "schedule", 0);
    }
    s->syncs_started = 1;
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
    if (!st || !pc || !zx_conf_is_sync(pc) || syncs_find_run(s, id) ||
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

void syncs_restore_runs(sup *s)
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
    /* schedules need the store read by the writer's own start: wait for it */
    if (s->writer_ready) {
        schedules(s);
        sup_syncs_change_tick(s);
    }
    if (s->writer_ready && !s->runs_restored)
        syncs_restore_runs(s);
    /* runs waiting for a sync a reload removed will never start */
    for (sync_run *r = s->runs; r; r = r->next)
        if ((!strcmp(r->state, "queued") || !strcmp(r->state, "awaiting_approval")) &&
            !syncs_pipe(s, r->sync))
            syncs_fail_removed(s, r);
    syncs_expire_runs(s);
    for (sync_run *r = s->runs; r; r = r->next)
        if (syncs_durable(r) && !r->persisted)
            syncs_persist(s, r);
    if (!s->writer_ready)
        return;   /* a run needs the writer (its hashes) */
    for (size_t i = 0; i < s->npipes; i++) {
        spipe *p = s->pipes[i];
        if (p->removing || !zx_conf_is_sync(p->conf) || p->run || p->worker.pid > 0)
            continue;
        sync_run *r = oldest_queued(s, p->name);
        if (r)
            syncs_start_run(s, p, r);
    }
}
