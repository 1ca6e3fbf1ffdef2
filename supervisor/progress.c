/*
 * progress.c — long work in progress in a pipeline's worker (a sync run,
 * the CDC initial copy, a backfill), from the segment's progress slot
 * (common/segment.h): each tick samples it into the pipeline's rate
 * (common/progress.h), `zxctl status` and the `progress` command show it
 * (sup_progress_json), and the feed gets a "progress" event per pipeline
 * at most every 5 s while work runs.
 *
 * It must never write the slot (the worker does), trust what it reads
 * there (a worker may die mid-write: the seqlock, and a NUL forced), or
 * show the progress of a worker that is not running.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/progress.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "supervisor/jobs.h"
#include "supervisor/sup.h"

#define FEED_EVERY_MS 5000
#define STALL_US 2000000    /* no update for this long: nothing moved */

/* p's slot when its worker runs and says it works: 1 and *pr, else 0. */
static int slot(const spipe *p, zx_seg_progress *pr)
{
    if (!p->seg.hdr || p->worker.pid <= 0 ||
        zx_segment_progress_read(p->seg.hdr, pr) < 0 || !pr->what[0])
        return 0;
    return 1;
}

/* Sample p's slot into its rate: 1 when it has work in progress. */
static int sample(spipe *p, zx_seg_progress *pr)
{
    if (!slot(p, pr)) {
        p->prog_what[0] = '\0';
        p->prog_feed_ms = 0;
        zx_rate_reset(&p->prog_rate);
        return 0;
    }
    if (!p->prog_what[0] || p->prog_started_us != pr->started_us) {
        /* other work: its own rate.  (The next step of the same work,
         * another table copied or a run's next phase, keeps it: a count
         * that starts again from 0 restarts the samples, zx_rate_add.) */
        p->prog_started_us = pr->started_us;
        p->prog_updated_us = 0;
        zx_rate_reset(&p->prog_rate);
    }
    snprintf(p->prog_what, sizeof(p->prog_what), "%s", pr->what);
    if (pr->updated_us != p->prog_updated_us) {
        p->prog_updated_us = pr->updated_us;
        zx_rate_add(&p->prog_rate, pr->updated_us, pr->done);
    } else {
        /* a worker that says nothing new (it waits for room in its ring,
         * for the database) has done nothing new: the rate falls */
        int64_t now = zx_now_us();
        if (now - pr->updated_us > STALL_US)
            zx_rate_add(&p->prog_rate, now, pr->done);
    }
    return 1;
}

/* The object of sup_progress_json from a slot and its rate (NULL: none
 * yet). */
static json_t *progress_obj(const zx_rate *r, const zx_seg_progress *pr)
{
    double rate = r ? zx_rate_get(r) : 0, eta = -1;
    int has_eta = zx_progress_eta(pr->done, pr->expected, rate, &eta) == 0;
    int pct = zx_progress_percent(pr->done, pr->expected);
    int exact = (pr->flags & ZX_SEG_PROGRESS_EXACT) != 0;
    char line[256], st[ZX_TS_BUFSZ], up[ZX_TS_BUFSZ];
    zx_progress_line(line, sizeof(line), pr->what, pr->done, pr->expected, exact, rate,
                     has_eta ? eta : -1);
    zx_ts_format(pr->started_us > 0 ? pr->started_us : 0, st);
    zx_ts_format(pr->updated_us > 0 ? pr->updated_us : 0, up);
    json_t *o = json_pack("{s:s, s:I, s:o, s:b, s:o, s:f, s:o, s:s, s:s, s:s}",
                          "what", pr->what, "done", (json_int_t)pr->done, "expected",
                          pr->expected ? json_integer((json_int_t)pr->expected) : json_null(),
                          "exact", exact, "percent", pct >= 0 ? json_integer(pct) : json_null(),
                          "rate", (double)(int64_t)(rate * 10) / 10.0, "eta_seconds",
                          has_eta ? json_real((double)(int64_t)(eta * 10) / 10.0) : json_null(),
                          "started_at", st, "updated_at", up, "line", line);
    return o;
}

json_t *sup_progress_json(const spipe *p)
{
    zx_seg_progress pr;
    if (!slot(p, &pr))
        return NULL;
    /* not sampled yet (a tick away): no rate yet */
    int same = p->prog_what[0] && p->prog_started_us == pr.started_us;
    return progress_obj(same ? &p->prog_rate : NULL, &pr);
}

void sup_progress_tick(sup *s)
{
    int64_t now = zx_mono_ms();
    for (size_t i = 0; i < s->npipes; i++) {
        spipe *p = s->pipes[i];
        zx_seg_progress pr;
        if (!sample(p, &pr))
            continue;
        /* the first once a rate is known, then every 5 s */
        if (p->prog_feed_ms ? now - p->prog_feed_ms < FEED_EVERY_MS : p->prog_rate.n < 2)
            continue;
        p->prog_feed_ms = now;
        json_t *o = progress_obj(&p->prog_rate, &pr);
        if (!o)
            continue;
        json_object_set_new(o, "event", json_string("progress"));
        json_object_set_new(o, "pipeline", json_string(p->name));
        uint64_t run_id = 0, expect = 0;
        unsigned flags = 0;
        if (p->run)
            sup_sync_worker_args(p, &run_id, &flags, &expect);
        if (run_id) { /* a sync's run: which one, as zxctl runs and /api/runs say it */
            char id[24];
            snprintf(id, sizeof(id), "%" PRIu64, run_id);
            json_object_set_new(o, "run", json_string(id));
        }
        json_object_set(o, "message", json_object_get(o, "line"));
        json_object_del(o, "line");
        char *js = json_dumps(o, JSON_COMPACT);
        if (js)
            sup_feed(s, js);
        free(js);
        json_decref(o);
    }
}
