/*
 * syncs_change.c — reverse syncs with `on: change` (workers/syncs/
 * sync_opts.h): a "batch" event of the writer (a commit of rows into a
 * table), or a "remote_commit" (another zxd of a shared workspace
 * committed to it: workers/writer/writer_notice.h), marks each such sync
 * that watches the table (sync_watch.h);
 * the tick queues one run for the marks, coalesced:
 *   - a queued run of the sync (not a preview) answers every change made
 *     before it starts: the mark joins it;
 *   - else a new run is queued once min_interval has passed since the
 *     last one changes queued; a run in flight is not waited for (one in
 *     flight and one queued at most);
 *   - its first run is queued at start, or when the sync is added, for
 *     what changed while nothing watched.
 * A run keeps when the first change it answers was committed
 * (sync_run.change_us), for its change_latency_ms.  A run answering
 * changes that fails (a destination down, its worker killed) leaves them
 * unanswered: they are marked again, and the next run waits
 * min_interval doubled per failure in a row, at most CHANGE_BACKOFF_MAX_MS
 * (never less than min_interval): a destination down is not hammered, and
 * one back is written to within a minute.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "supervisor/lease.h"
#include "supervisor/syncs_int.h"
#include "workers/sources/source.h"
#include "workers/syncs/sync_opts.h"
#include "workers/syncs/sync_watch.h"

#define CHANGE_BACKOFF_MAX_MS 60000

static int on_change(const spipe *p)
{
    const zx_sync_opts *so = p->removing || !zx_conf_is_sync(p->conf) ? NULL
                             : zx_sync_opts_of(p->conf);
    return so && so->on && !strcmp(so->on, "change");
}

/* The queued run of sync name a change may join (not a preview, not an
 * agent's), or NULL. */
static sync_run *queued_run(sup *s, const char *name)
{
    for (sync_run *r = s->runs; r; r = r->next)
        if (!strcmp(r->sync, name) && !strcmp(r->state, "queued") &&
            !(r->flags & ZX_RUN_PREVIEW) && !r->approval && !r->agent)
            return r;
    return NULL;
}

void sup_syncs_writer_event(sup *s, const char *js)
{
    if (!strstr(js, "\"batch\"") && !strstr(js, "\"remote_commit\""))
        return;    /* most events are not: no parse */
    json_error_t je;
    json_t *ev = json_loads(js, 0, &je);
    const char *kind = json_string_value(json_object_get(ev, "event"));
    const char *table = json_string_value(json_object_get(ev, "table"));
    /* remote_commit: another zxd of a shared workspace committed to table
     * (any: the writer may have missed some; every such sync runs) */
    int remote = kind && !strcmp(kind, "remote_commit");
    int any = remote && json_is_true(json_object_get(ev, "any"));
    if (kind && (table || any) && (remote || !strcmp(kind, "batch"))) {
        int64_t now = zx_now_us();
        for (size_t i = 0; i < s->npipes; i++) {
            spipe *p = s->pipes[i];
            if (!on_change(p) || (!any && !zx_sync_watches(s->conf, p->conf, table)))
                continue;
            if (!p->change_pending) {
                p->change_pending = 1;
                p->change_first_us = now;
            }
        }
    }
    json_decref(ev);
}

void sup_syncs_change_tick(sup *s)
{
    int64_t now_ms = zx_mono_ms();
    for (size_t i = 0; i < s->npipes; i++) {
        spipe *p = s->pipes[i];
        if (!on_change(p))
            continue;
        const zx_sync_opts *so = zx_sync_opts_of(p->conf);
        if (!p->change_started) {
            /* its first look: what changed while nothing watched */
            p->change_started = 1;
            p->change_pending = 1;
            p->change_first_us = zx_now_us();
            p->change_last_ms = 0;
        }
        if (p->change_run_id) {
            sync_run *last = syncs_find_run(s, p->change_run_id);
            if (!last || syncs_is_final(last)) {
                int ok = last && !strcmp(last->state, "succeeded");
                if (!ok && !p->change_pending) {
                    /* the changes it answered are not delivered */
                    p->change_pending = 1;
                    p->change_first_us = last && last->change_us ? last->change_us
                                                                 : zx_now_us();
                }
                p->change_fails = ok ? 0 : p->change_fails + 1;
                p->change_run_id = 0;
            }
        }
        char why[800];
        if (!p->change_pending || sup_lease_standby(s, p, why, sizeof(why)))
            continue; /* standby: the changes wait for the lease (lease.h) */
        sync_run *q = queued_run(s, p->name);
        if (q) {
            /* not started yet: it reads every change made so far */
            if (!q->change_us || q->change_us > p->change_first_us)
                q->change_us = p->change_first_us;
            p->change_pending = 0;
            if (!p->change_run_id)
                p->change_run_id = q->id;
            continue;
        }
        int64_t wait = so->min_interval_ms;
        if (p->change_fails) {
            /* failed in a row: doubled each time, from 1 s at least */
            int64_t base = wait > 1000 ? wait : 1000;
            wait = base << (p->change_fails < 9 ? p->change_fails : 9);
            int64_t cap = so->min_interval_ms > CHANGE_BACKOFF_MAX_MS ? so->min_interval_ms
                                                                      : CHANGE_BACKOFF_MAX_MS;
            if (wait > cap)
                wait = cap;
        }
        if (p->change_last_ms && now_ms - p->change_last_ms < wait)
            continue;
        if (p->change_run_id)
            continue;   /* the one in flight ends first: one queued at most */
        if (syncs_waiting(s, p->name) >= MAX_WAITING)
            continue;
        sync_run *r = syncs_new_run(s, p->name, "change", 0);
        if (!r)
            continue;   /* out of memory: the next tick tries again */
        r->change_us = p->change_first_us;
        p->change_pending = 0;
        p->change_last_ms = now_ms;
        p->change_run_id = r->id;
        zx_debug("event=run_on_change sync=%s run=%llu", p->name, (unsigned long long)r->id);
    }
}
