/*
 * writer_lease.c — take, renew, fence and give up the leases of a shared
 * Postgres workspace (writer_lease.h, workspace_lease.h).
 *
 * It must never: apply (or let a cycle commit) a frame of a pipeline
 * whose reader's lease another zxd holds, or say a lease is held past
 * what the database granted (the local deadline is counted from before
 * the statement that took it).
 */
#include "workers/writer/writer_int.h"
#include "workers/writer/writer_lease.h"
#include "workers/writer/workspace_lease.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "proto/chan.h"

typedef struct wlease {
    char pipeline[64];
    char name[96];           /* "pipeline:<name>" or "sync:<name>" */
    int reader;              /* a pipeline's reader: its frames are fenced */
    int held;
    int64_t until_ms;        /* held: monotonic deadline (conservative) */
    int64_t next_ms;         /* next take (monotonic) */
    int failing;             /* the last take failed (said once) */
    uint64_t fenced_round;   /* the wr_lease_fence call that checked it */
    char holder_desc[600];   /* not held: who does ("" nobody) */
    char since[40];
} wlease;

struct wr_leases {
    wlease *l;
    size_t n, cap;
    uint64_t fence_round;    /* wr_lease_fence calls (one per commit) */
};

static wlease *find(writer *w, const char *pipeline)
{
    if (!w->leases)
        return NULL;
    for (size_t i = 0; i < w->leases->n; i++)
        if (!strcmp(w->leases->l[i].pipeline, pipeline))
            return &w->leases->l[i];
    return NULL;
}

static uint32_t lease_ms(const writer *w)
{
    uint32_t ms = w->a->conf->pg_lease_ms;
    return ms >= 2000 ? ms : 15000;
}

/* Tell the supervisor how lease l stands. */
static void tell(writer *w, const wlease *l)
{
    int64_t left = l->held ? l->until_ms - zx_mono_ms() : 0;
    json_t *o = json_pack("{s:s, s:s, s:b, s:I, s:s, s:s}", "pipeline", l->pipeline, "lease",
                          l->name, "held", l->held && left > 0, "valid_ms",
                          (json_int_t)(left > 0 ? left : 0), "holder_desc", l->holder_desc,
                          "since", l->since);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    wr_events_flush(w); /* in order */
    if (!s || zx_chan_send(w->a->chan, ZX_CHAN_LEASE, s, NULL, 0) < 0)
        zx_warn("event=lease_not_told pipeline=%s lease=%s", l->pipeline, l->name);
    free(s);
    json_decref(o);
}

void wr_lease_want(writer *w, const char *pipeline, const char *lease)
{
    wlease *l = find(w, pipeline);
    if (l && lease && *lease && !strcmp(l->name, lease))
        return;
    if (l && l->held)
        zx_ws_lease_release(w->ws, l->name);
    if (l) { /* given up, or another lease now */
        *l = w->leases->l[--w->leases->n];
        if (!lease || !*lease)
            return;
    }
    if (!lease || !*lease)
        return;
    if (!w->leases && !(w->leases = calloc(1, sizeof(*w->leases)))) {
        zx_error("event=lease_not_wanted pipeline=%s error=\"out of memory\"", pipeline);
        return;
    }
    struct wr_leases *t = w->leases;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        wlease *nl = realloc(t->l, cap * sizeof(*nl));
        if (!nl) {
            zx_error("event=lease_not_wanted pipeline=%s error=\"out of memory\"", pipeline);
            return;
        }
        t->l = nl;
        t->cap = cap;
    }
    l = &t->l[t->n++];
    memset(l, 0, sizeof(*l));
    snprintf(l->pipeline, sizeof(l->pipeline), "%s", pipeline);
    snprintf(l->name, sizeof(l->name), "%s", lease);
    l->reader = !strncmp(lease, "pipeline:", 9);
}

/* Drop the frames left in the rings of l's pipeline: they were read from
 * positions older than the workspace's (another zxd held the lease). */
static void drop_stale_frames(writer *w, const wlease *l)
{
    for (int i = 0; i < MAX_PIPES; i++) {
        wpipe *p = &w->pipes[i];
        if (!p->used || strcmp(p->name, l->pipeline) != 0)
            continue;
        uint64_t n = 0;
        const void *data;
        size_t len;
        uint64_t seq;
        while (zx_ring_next(&p->seg.frames, &p->cur, &data, &len, &seq) == ZX_RING_OK)
            n++;
        if (n) {
            zx_ring_release(&p->seg.frames, &p->cur, 1);
            zx_warn("event=lease_frames_dropped pipeline=%s frames=%llu reason=\"read before "
                    "this zxd took the lease; the worker starts again from the workspace's "
                    "positions\"", p->name, (unsigned long long)n);
        }
    }
}

/* The pipeline's positions from the workspace into the store (where its
 * worker reads them).  0, or -1 (logged). */
static int copy_positions(writer *w, const char *pipeline)
{
    char err[512];
    size_t n = 0;
    if (wr_positions_from_ws(w, pipeline, &n, err, sizeof(err)) < 0) {
        zx_error("event=lease_positions_not_copied pipeline=%s error=\"%s\"", pipeline, err);
        return -1;
    }
    zx_info("event=lease_positions_copied pipeline=%s parts=%zu", pipeline, n);
    return 0;
}

static void lost(writer *w, wlease *l, const char *why)
{
    l->held = 0;
    /* not taken again before a third of the lease: the supervisor kills
     * the worker meanwhile, before a fresh take drops its ring's frames */
    l->next_ms = zx_mono_ms() + lease_ms(w) / 3;
    zx_ws_lease o;
    if (!l->holder_desc[0] && zx_ws_lease_read(w->ws, l->name, &o) == 1 && !o.held) {
        /* who holds it now, for the standby's status */
        snprintf(l->holder_desc, sizeof(l->holder_desc), "%s", o.holder_desc);
        snprintf(l->since, sizeof(l->since), "%s", o.taken_at);
    }
    zx_error("event=lease_lost pipeline=%s lease=%s error=\"%s\"", l->pipeline, l->name, why);
    char msg[900];
    snprintf(msg, sizeof(msg), "lease %s lost (%s): the pipeline stops here; the zxd that "
             "takes the lease over goes on from the workspace's positions", l->name, why);
    wr_emit(w, json_pack("{s:s, s:s, s:s, s:s}", "event", "lease_lost", "pipeline",
                         l->pipeline, "lease", l->name, "message", msg));
    tell(w, l);
}

/* Take or renew l now. */
static void take(writer *w, wlease *l, const char *desc)
{
    uint32_t ms = lease_ms(w);
    int64_t t0 = zx_mono_ms();
    l->next_ms = t0 + ms / 3;
    zx_ws_lease o;
    int r = zx_ws_lease_take(w->ws, l->name, desc, (ms + 999) / 1000, ms / 3, &o);
    if (r < 0) {
        if (!l->failing)
            zx_warn("event=lease_take_failed pipeline=%s lease=%s error=\"%s\"", l->pipeline,
                    l->name, zx_ws_errmsg(w->ws));
        l->failing = 1;
        l->next_ms = t0 + 1000 < l->next_ms ? t0 + 1000 : l->next_ms;
        return;
    }
    l->failing = 0;
    if (r == 0) {
        int was = l->held;
        int moved = strcmp(l->holder_desc, o.holder_desc) != 0;
        snprintf(l->holder_desc, sizeof(l->holder_desc), "%s", o.holder_desc);
        snprintf(l->since, sizeof(l->since), "%s", o.taken_at);
        if (was) {
            lost(w, l, "another zxd holds it now");
            return;
        }
        if (moved) {
            zx_info("event=lease_standby pipeline=%s lease=%s holder=\"%s\" since=%s",
                    l->pipeline, l->name, o.holder_desc, o.taken_at);
            tell(w, l);
        }
        return;
    }
    if (o.fresh) {
        /* a new holding: whatever the rings hold was read before it */
        l->held = 0;
        if (l->reader) {
            drop_stale_frames(w, l);
            if (copy_positions(w, l->pipeline) < 0) {
                /* not said held: the worker would start from stale positions */
                zx_ws_lease_release(w->ws, l->name);
                l->next_ms = t0 + 1000;
                return;
            }
        }
        zx_info("event=lease_taken pipeline=%s lease=%s fresh=%d valid_ms=%lld", l->pipeline,
                l->name, o.fresh, (long long)o.valid_ms);
    }
    int64_t valid = o.valid_ms < (int64_t)ms ? o.valid_ms : (int64_t)ms;
    l->held = valid > 0;
    l->until_ms = t0 + valid;
    l->holder_desc[0] = '\0';
    snprintf(l->since, sizeof(l->since), "%s", o.taken_at);
    tell(w, l);
}

int64_t wr_lease_tick(writer *w)
{
    if (!w->leases || !w->leases->n)
        return 1000;
    char host[256] = "?", desc[4400];
    if (gethostname(host, sizeof(host) - 1) < 0)
        snprintf(host, sizeof(host), "?");
    host[sizeof(host) - 1] = '\0';
    snprintf(desc, sizeof(desc), "host %s, zxd pid %ld, data_dir %s", host, (long)getppid(),
             w->a->conf->data_dir);
    int64_t now = zx_mono_ms(), next = now + 1000;
    for (size_t i = 0; i < w->leases->n; i++) {
        wlease *l = &w->leases->l[i];
        if (l->held && now >= l->until_ms)
            lost(w, l, "not renewed in time: the workspace did not answer");
        if (now >= l->next_ms)
            take(w, l, desc);
        if (l->next_ms < next)
            next = l->next_ms;
        if (l->held && l->until_ms < next)
            next = l->until_ms;
    }
    now = zx_mono_ms();
    return next > now ? next - now : 0;
}

int wr_lease_blocks(writer *w, const wpipe *p)
{
    const wlease *l = find(w, p->name);
    return l && l->reader && !l->held;
}

int wr_lease_fence(writer *w, char *err, size_t errlen)
{
    if (!w->leases || !w->leases->n)
        return 0;
    /* each lease once per commit (a cycle that failed is checked again) */
    uint64_t round = ++w->leases->fence_round;
    for (size_t i = 0; i < w->nap; i++) {
        wlease *l = find(w, w->ap[i].p->name);
        if (!l || !l->reader || l->fenced_round == round)
            continue;
        l->fenced_round = round;
        zx_ws_lease o;
        int r = zx_ws_lease_check(w->ws, l->name, &o);
        if (r < 0)
            return zx_seterr(err, errlen, "pipeline %s: cannot check its lease %s: %s",
                             l->pipeline, l->name, zx_ws_errmsg(w->ws));
        if (r == 0) {
            snprintf(l->holder_desc, sizeof(l->holder_desc), "%s", o.holder_desc);
            snprintf(l->since, sizeof(l->since), "%s", o.taken_at);
            lost(w, l, o.holder[0] ? "taken over by another zxd" : "expired");
            return zx_seterr(err, errlen, "pipeline %s: lease %s is no longer this zxd's "
                             "(held by %s): its frames are not committed here",
                             l->pipeline, l->name, o.holder_desc[0] ? o.holder_desc : "nobody");
        }
    }
    return 0;
}

void wr_lease_release_all(writer *w)
{
    if (!w->leases)
        return;
    for (size_t i = 0; i < w->leases->n; i++) {
        wlease *l = &w->leases->l[i];
        if (!l->held)
            continue;
        if (zx_ws_lease_release(w->ws, l->name) == 0)
            zx_info("event=lease_released pipeline=%s lease=%s", l->pipeline, l->name);
        else
            zx_warn("event=lease_not_released pipeline=%s lease=%s error=\"%s\"", l->pipeline,
                    l->name, zx_ws_errmsg(w->ws));
    }
    free(w->leases->l);
    free(w->leases);
    w->leases = NULL;
}
