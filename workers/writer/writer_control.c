/*
 * writer_control.c — the writer's side of the supervisor's channel:
 * ATTACH maps a pipeline's segment (its rings) and reads its checkpoint,
 * DETACH marks it to be dropped once its ring is drained, READY says
 * every segment is attached, RUN records a sync run in the store.  See
 * writer_int.h.
 *
 * It must never: drop a segment that still has frames to apply, or
 * trust a message's fields unchecked (a bad one is logged and ignored).
 */
#include "workers/writer/writer_int.h"
#include "workers/writer/writer_lease.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "proto/chan.h"
#include "proto/control.h"

static void seed_counters(writer *w, wpipe *p)
{
    zx_store_txn *t;
    if (zx_store_begin(w->store, 1, &t) != 0)
        return;
    uint64_t v = 0;
    if (zx_store_counter_get(t, p->name, "rows", &v) == 0)
        atomic_store(&p->seg.hdr->rows, v);
    v = 0;
    if (zx_store_counter_get(t, p->name, "rejects", &v) == 0)
        atomic_store(&p->seg.hdr->rejects, v);
    v = 0;
    if (zx_store_counter_get(t, p->name, "values_nulled", &v) == 0)
        atomic_store(&p->seg.hdr->values_nulled, v);
    v = 0;
    if (zx_store_counter_get(t, p->name, "columns_added", &v) == 0)
        atomic_store(&p->seg.hdr->columns_added, v);
    zx_store_abort(t);
}

/* Checkpoints of earlier segments of p's pipeline (an earlier zxd) are of
 * no more use: keep only those of the segments attached now (two while a
 * recreated pipeline's old rings drain).  Only once the supervisor has
 * attached every segment (READY), so that none in use is missed. */
static void prune_checkpoints(writer *w, wpipe *p)
{
    if (!w->attached_all)
        return;
    const char *other = p->ckpt_key;
    for (int i = 0; i < MAX_PIPES; i++)
        if (&w->pipes[i] != p && w->pipes[i].used && strcmp(w->pipes[i].name, p->name) == 0)
            other = w->pipes[i].ckpt_key;
    char prefix[80];
    snprintf(prefix, sizeof(prefix), "%s#", p->name);
    zx_ws_checkpoint_prune(w->ws, prefix, p->ckpt_key, other);
}

/* The column cap of pipeline `name`: "max_columns" of the ATTACH message
 * when the supervisor sends it (it has the configuration as reloaded),
 * else the configuration the writer was started with, else 0 (the
 * workspace's default). */
static uint32_t attach_max_columns(writer *w, json_t *o, const char *name)
{
    json_t *mc = json_object_get(o, "max_columns");
    if (json_is_integer(mc) && json_integer_value(mc) > 0 &&
        json_integer_value(mc) <= (json_int_t)ZX_WS_MAX_COLUMNS)
        return (uint32_t)json_integer_value(mc);
    const zx_conf_pipeline *pc = zx_conf_find(w->a->conf, name);
    return pc ? pc->max_columns : 0;
}

/* The bound of one table's parked frames for pipeline `name`, as
 * attach_max_columns finds max_columns (zx_conf_parked_bound: 0 for a
 * pipeline without mirrors, or when neither says). */
static uint64_t attach_max_parked(writer *w, json_t *o, const char *name)
{
    json_t *v = json_object_get(o, "max_parked_bytes");
    if (json_is_integer(v) && json_integer_value(v) >= 0)
        return (uint64_t)json_integer_value(v);
    return zx_conf_parked_bound(zx_conf_find(w->a->conf, name));
}

static void handle_attach(writer *w, const char *json, int *fds, int nfds)
{
    json_error_t je;
    json_t *o = json_loads(json, 0, &je);
    const char *name = o ? json_string_value(json_object_get(o, "name")) : NULL;
    if (!name || nfds != 2) {
        zx_error("event=bad_attach nfds=%d error=\"%s\"", nfds,
                 !o ? je.text : !name ? "no pipeline name" : "expected 2 descriptors");
        goto out;
    }
    /* a shared workspace: the lease it runs under (writer_lease.h) */
    wr_lease_want(w, name, json_string_value(json_object_get(o, "lease")));
    uint32_t max_columns = attach_max_columns(w, o, name);
    uint64_t max_parked = attach_max_parked(w, o, name);
    /* attached again (a reload): its parked tables are retried at once */
    for (size_t i = 0; i < w->npt; i++)
        if (strcmp(w->pt[i].pipeline, name) == 0)
            w->pt[i].retry_at_ms = 0;
    char err[256];
    zx_segment seg;
    if (zx_segment_map(&seg, fds[0], err, sizeof(err)) < 0) {
        zx_error("event=attach_failed pipeline=%s error=\"%s\"", name, err);
        goto out;
    }
    /* The same segment again: nothing to do.  A pipeline removed and added
     * back has a new segment (another epoch) while the old one may still
     * be draining: both are kept, each with its own checkpoint. */
    wpipe *p = NULL;
    for (int i = 0; i < MAX_PIPES; i++) {
        wpipe *q = &w->pipes[i];
        if (q->used && strcmp(q->name, name) == 0 && q->seg.hdr->epoch == seg.hdr->epoch) {
            q->max_columns = max_columns; /* a reload may have changed it */
            q->max_parked_bytes = max_parked;
            zx_segment_close(&seg);
            goto out;
        }
    }
    for (int i = 0; i < MAX_PIPES && !p; i++)
        if (!w->pipes[i].used)
            p = &w->pipes[i];
    if (!p) {
        zx_error("event=too_many_pipelines");
        zx_segment_close(&seg);
        goto out;
    }
    p->seg = seg;
    memset(p->name, 0, sizeof(p->name));
    snprintf(p->name, sizeof(p->name), "%s", name);
    p->worker_efd = fds[1];
    fds[1] = -1;
    p->max_columns = max_columns;
    p->max_parked_bytes = max_parked;
    p->detaching = 0;
    p->fw_last = 0;   /* read from the forward journal when first needed */
    p->fw_loaded = 0;
    p->used = 1;
    zx_ring_set_peer(&p->seg.frames, p->worker_efd);
    zx_ring_cursor_init(&p->seg.frames, &p->cur);
    snprintf(p->ckpt_key, sizeof(p->ckpt_key), "%s#%016llx", p->name,
             (unsigned long long)p->seg.hdr->epoch);
    p->ckpt = 0;
    if (zx_ws_checkpoint_get(w->ws, p->ckpt_key, &p->ckpt) < 0)
        w->ckpt_stale = 1; /* read again before any frame is applied */
    prune_checkpoints(w, p);
    seed_counters(w, p);
    atomic_store(&p->seg.hdr->writer_up, 1);
    zx_info("event=attach pipeline=%s checkpoint=%llu published=%llu", p->name,
            (unsigned long long)p->ckpt,
            (unsigned long long)zx_ring_published_seq(&p->seg.frames));
out:
    for (int i = 0; i < nfds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    json_decref(o);
}

void wr_drop_pipe(wpipe *p)
{
    zx_info("event=detach pipeline=%s", p->name);
    zx_segment_close(&p->seg);
    if (p->worker_efd >= 0)
        close(p->worker_efd);
    p->worker_efd = -1;
    p->used = 0;
}

/* 1 when a message was handled, 0 when none is waiting, -1 when the
 * supervisor is gone. */
/* ZX_CHAN_RUN: record a sync run in the store ("runs"), keeping the
 * newest 200 of the sync. */
static void store_run(writer *w, const char *buf)
{
    json_error_t je;
    json_t *o = json_loads(buf, 0, &je);
    const char *sync = o ? json_string_value(json_object_get(o, "sync")) : NULL;
    const char *ids = o ? json_string_value(json_object_get(o, "id")) : NULL;
    json_t *rec = o ? json_object_get(o, "record") : NULL;
    char *js = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
    if (!sync || !ids || !js) {
        zx_error("event=bad_run_record error=\"%s\"", o ? "missing sync, id or record" : je.text);
        goto out;
    }
    uint64_t id = strtoull(ids, NULL, 10);
    for (int attempt = 0; attempt < 8; attempt++) {
        zx_store_txn *t;
        int rc = zx_store_begin(w->store, 0, &t);
        if (rc)
            break;
        rc = zx_store_run_put(t, sync, id, js, strlen(js));
        if (rc == 0)
            rc = zx_store_runs_prune(t, sync, 200, NULL);
        rc = rc ? (zx_store_abort(t), rc) : zx_store_commit(t);
        if (rc == ZX_STORE_MAP_FULL)
            continue;
        if (rc)
            zx_error("event=run_not_recorded sync=%s run=%s error=\"%s\"", sync, ids,
                     zx_store_strerror(rc));
        break;
    }
out:
    free(js);
    json_decref(o);
}

int wr_handle_chan(writer *w)
{
    char buf[ZX_CHAN_MAX];
    int fds[4], nfds = 0;
    int t = zx_chan_recv(w->a->chan, buf, sizeof(buf), fds, &nfds);
    if (t == 0)
        return -1; /* supervisor gone */
    if (t < 0)
        return errno == EAGAIN ? 0 : -1;
    if (t == ZX_CHAN_ATTACH) {
        handle_attach(w, buf, fds, nfds);
        return 1;
    }
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    if (t == ZX_CHAN_READY) {
        w->attached_all = 1;
        for (int i = 0; i < MAX_PIPES; i++)
            if (w->pipes[i].used)
                prune_checkpoints(w, &w->pipes[i]);
    }
    if (t == ZX_CHAN_RUN)
        store_run(w, buf);
    if (t == ZX_CHAN_FORGET)
        zx_forget_add(&w->forget, buf);
    if (t == ZX_CHAN_DETACH) {
        json_error_t je;
        json_t *o = json_loads(buf, 0, &je);
        const char *name = o ? json_string_value(json_object_get(o, "name")) : NULL;
        if (!name)
            zx_error("event=bad_detach error=\"%s\"", o ? "no pipeline name" : je.text);
        const char *ep = o ? json_string_value(json_object_get(o, "epoch")) : NULL;
        unsigned long long epoch = ep ? strtoull(ep, NULL, 16) : 0;
        for (int i = 0; name && i < MAX_PIPES; i++)
            if (w->pipes[i].used && strcmp(w->pipes[i].name, name) == 0 &&
                (!ep || w->pipes[i].seg.hdr->epoch == epoch))
                w->pipes[i].detaching = 1;
        json_decref(o);
    }
    return 1;
}
