/*
 * syncs_cmd.c — the control commands of reverse syncs (proto/control.h:
 * run, preview, runs, approve, reject), a one-off send's run, and what
 * `status` shows of a sync.
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

static json_t *err_obj(const char *fmt, const char *a, const char *b)
{
    char msg[1600];
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


int syncs_list_cb(const char *sync, uint64_t id, const char *json, size_t len, void *ctx)
{
    (void)sync;
    syncs_list_ctx *l = ctx;
    if (json_array_size(l->arr) >= l->max)
        return 1;
    if (syncs_find_run(l->s, id))
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
            json_array_append_new(arr, syncs_run_json(r));
    zx_store *st = NULL;
    char err[256];
    if (zx_store_open(s->conf->data_dir, ZX_STORE_RDONLY, 0, &st, err, sizeof(err)) == 0) {
        zx_store_txn *t = NULL;
        syncs_list_ctx l = {arr, max, s};
        if (zx_store_begin(st, 1, &t) == 0) {
            zx_store_runs_each(t, name, syncs_list_cb, &l);
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
    if (syncs_waiting(s, p->name) >= MAX_WAITING)
        return err_obj("sync %s has %s runs waiting already: let them run first",
                       p->name, "16");
    sync_run *r = syncs_new_run(s, p->name, trigger, flags);
    if (!r)
        return err_obj("out of memory", NULL, NULL);
    if (wait && bev)
        r->waiters[r->nwaiters++] = bev;
    sup_syncs_tick(s);
    if (wait && bev && !syncs_is_final(r))
        return NULL;
    json_t *o = syncs_run_json(r);
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
        spipe *p = syncs_pipe(s, name);
        if (!p)
            return err_obj("no reverse sync named '%s' (zxctl run takes a pipeline with "
                           "direction: out)", name, NULL);
        int preview = !strcmp(cmd, "preview");
        char why[800];
        if (!preview && sup_lease_standby(s, p, why, sizeof(why)))
            return err_obj("sync %s runs on the zxd holding its lease, not here (%s): run it "
                           "there, or stop that zxd and the lease moves here", p->name, why);
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
            syncs_restore_runs(s);
        sync_run *r = syncs_find_run(s, id);
        char ids[24];
        snprintf(ids, sizeof(ids), "%llu", (unsigned long long)id);
        if (!r && !s->runs_restored)
            return err_obj("zxd is starting (its writer is not up yet): retry %s in a moment",
                           cmd, NULL);
        if (!r)
            return err_obj("no run %s waits for approval", ids, NULL);
        if (!strcmp(r->state, "awaiting_approval") && !syncs_pipe(s, r->sync))
            syncs_fail_removed(s, r);   /* a reload removed it since the last tick */
        syncs_expire_runs(s);
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
            syncs_feed_run(s, r, "run");
            syncs_persist(s, r);
        } else {
            snprintf(r->state, sizeof(r->state), "queued");
            r->approval = 0;
            r->approved = 1;
            char t[96];
            snprintf(t, sizeof(t), "%.70s, approved", r->trigger);
            snprintf(r->trigger, sizeof(r->trigger), "%s", t);
            sup_syncs_tick(s);
        }
        json_t *o = syncs_run_json(r);
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
    sync_run *r = syncs_new_run(s, p->name, "send (zxctl)", ZX_RUN_ONEOFF);
    if (!r)
        return json_pack("{s:b, s:s}", "ok", 0, "error", "out of memory");
    if (bev)
        r->waiters[r->nwaiters++] = bev;
    sup_syncs_tick(s);
    return bev && !syncs_is_final(r) ? NULL : syncs_run_json(r);
}

int sup_sync_oneoff_done(sup *s, spipe *p)
{
    for (sync_run *r = s->runs; r; r = r->next)
        if (!strcmp(r->sync, p->name) && (!syncs_is_final(r) || r->nwaiters))
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
        if (!last && syncs_is_final(r) && strcmp(r->state, "previewed"))
            last = r;
        if (!strcmp(r->state, "queued") || !strcmp(r->state, "awaiting_approval"))
            queued = r;
    }
    if (last)
        json_object_set_new(o, "last_run", syncs_run_json(last));
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
