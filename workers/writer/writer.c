/*
 * writer.c — drain the rings, group-commit to the workspace, record in
 * LMDB, acknowledge.  See writer.h.
 *
 * It must never: acknowledge a frame before both commits, stop on bad data
 * (a frame it cannot decode is logged, counted and skipped), or apply a
 * frame twice (the workspace checkpoint decides).
 */
#include "workers/writer/writer.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/rowset.h"
#include "common/segment.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "proto/chan.h"
#include "proto/control.h"
#include "proto/frame.h"
#include "workers/writer/forget.h"
#include "workers/writer/keyseq.h"
#include "store/store.h"
#include "workers/writer/workspace.h"

#define MAX_PIPES ZX_MAX_PIPELINES
#define CYCLE_BYTES (48u * 1024 * 1024)
#define IDEM_TTL_US (24LL * 3600 * 1000000)

static volatile sig_atomic_t stop_requested;

static void on_term(int sig)
{
    (void)sig;
    stop_requested = 1;
}

typedef struct wpipe {
    char name[64];
    char ckpt_key[96];      /* "name#epoch": the workspace checkpoint key */
    zx_segment seg;
    int worker_efd;
    zx_ring_cursor cur;     /* read position (ahead of the released head) */
    uint64_t ckpt;          /* last seq applied in the workspace */
    int detaching;
    int used;
    int64_t blocked_until_ms;  /* its table refused a frame: retry after */
    int64_t block_ms;          /* current backoff (1 s doubling to 60 s) */
    uint64_t released_cycle;   /* last cycle that released its frames */
    uint32_t max_columns;      /* column cap of its table (0 = default) */
    uint64_t max_parked_bytes; /* bound of one table's parked frames (0:
                                  never park: hold the pipeline back) */
} wpipe;

/* Parked tables.  A frame of a pipeline that keeps mirrors (Postgres CDC;
 * Kafka Debezium or mode latest: zx_conf_parked_bound) that its table
 * refuses for a reason that will not pass by itself (a conflicting
 * object of its name...) is parked instead of holding its whole
 * pipeline back: the frame goes to the workspace table _zx_parked in the
 * same transaction as the checkpoint and the positions that pass
 * it (workspace.h), so that a crash neither loses it nor applies it twice,
 * and the pipeline's other tables and its source position go on.  While
 * a table has parked frames, every new frame of it is parked too (its
 * order is kept); the table is retried with backoff (1 s doubling to
 * 60 s, and at once when the supervisor attaches the pipeline again, at
 * reload), its parked frames applied oldest first and deleted in the same
 * transaction.  Past max_parked_bytes the pipeline is held back as a
 * whole, as the frames of other pipelines always are.  One entry per (pipeline, table)
 * with parked frames; the counts follow the workspace (read again after
 * a rolled-back cycle). */
typedef struct ptable {
    char pipeline[64];
    char table[128];
    uint64_t count, rows, bytes;  /* parked frames, their changes, bytes */
    uint64_t last_n;              /* highest number given (_zx_parked.n) */
    char why[256];                /* why the table refused them */
    int64_t retry_at_ms, backoff_ms;
    int told;                     /* the log and feed were told it blocks */
    int seen;                     /* pt_load: found in the workspace */
} ptable;

/* What one frame did, kept until the LMDB transaction is written. */
typedef struct applied {
    wpipe *p;
    uint64_t seq;
    zx_ring_cursor after;
    char table[64];
    char *dedup;            /* malloc'd, or NULL: the frame's dedup key */
    uint64_t dedup_hash, accepted;
    char rid[40];           /* the frame's batch id */
    zx_frame_pos *pos;      /* the frame's positions, copied (malloc'd
                               block: entries, then parts and values) */
    size_t npos;
    uint64_t rows, rejects;
    uint64_t messages;      /* rejected input messages stored */
    zx_ws_colcount *rejcols;
    size_t nrejcols;
    zx_ws_newcol *newcols;
    size_t nnewcols;
    int created;
    uint32_t history_json;  /* made its __changes with the row as JSON: the
                               mirror's data columns (0: not) */
    uint64_t extra_values;  /* values kept in _extra (column cap) */
    uint32_t extra_fields, max_columns;
    char extra_first[64];
    int announce_cap;       /* first time this table hit this cap */
    int inferred;           /* a changes frame whose types were inferred
                               (Debezium events without a schema) */
    uint64_t stale;         /* its changes older than the key's (skipped) */
    int in_batch;           /* counted in an earlier frame's batch event */
    int skipped;            /* already in the workspace (reconciled) */
    int parked;             /* parked, not applied (see ptable) */
    int replayed;           /* a parked frame applied: no position, no
                               checkpoint, no ring release of its own */
    int bad;                /* could not be decoded */
    /* a row-hashes frame (proto/frame.h): its keys, for the store */
    struct hentry *hashes;  /* malloc'd block: entries, then the keys' JSON */
    size_t nhashes;
    char *keysig;           /* malloc'd: the sync's key columns ("kc") as a
                               JSON array, or NULL */
} applied;

/* One key of a row-hashes frame. */
typedef struct hentry {
    unsigned char kh[ZX_KEYHASH_LEN];
    uint64_t rh;
    int del;                /* no row hash: forget the key */
    const char *kv;         /* in the same block */
    size_t kvlen;
} hentry;

typedef struct writer {
    const zx_writer_args *a;
    zx_store *store;
    zx_ws *ws;
    wpipe pipes[MAX_PIPES];
    zx_rowset rs;
    applied *ap;
    size_t nap, ap_cap;
    int64_t last_prune_ms;
    uint64_t cycles;         /* cycles committed (for released_cycle) */
    int first_pipe;          /* slot a cycle's passes start at */
    int served_first;        /* slot of the cycle's first frame, -1 none */
    int attached_all;        /* the supervisor's initial ATTACHes are in */
    /* Fault injection for tests (ZX_FAULT_INJECTION=1 in the environment):
     * when this file exists, the writer deletes it and dies right after a
     * workspace commit, before the LMDB commit and the acknowledgement:
     * the one crash window the workspace checkpoint must close. */
    char fault_path[4200];
    int ckpt_stale;          /* a checkpoint read failed: read them all
                                again before applying (reread_checkpoints) */
    int ws_down;             /* zx_ws_status said why it cannot write */
    char ws_why[256];
    /* "pipeline\ttable" of the mirrors whose inferred types the feed was
     * told of (once per writer's life; at most INFERRED_MAX remembered) */
    char **inferred_told;
    size_t ninferred_told;
    zx_keyseq *ks;           /* the cycle's newest positions per key */
    zx_rowset rs2;           /* a changes frame without its stale changes */
    uint8_t *skip;
    size_t skip_cap;
    ptable *pt;              /* the parked tables (see ptable) */
    size_t npt, pt_cap;
    int pt_stale;            /* read them again before applying (pt_load) */
    zx_forget forget;        /* removed pipelines whose state to drop */
} writer;

#define INFERRED_MAX 4096

/* Send a feed event (takes the reference; NULL = json_pack ran out of
 * memory).  An event that cannot be built is logged, never a crash. */
static void emit(writer *w, json_t *ev)
{
    char *s = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    if (s)
        zx_chan_send(w->a->chan, ZX_CHAN_EVENT, s, NULL, 0);
    else
        zx_warn("event=feed_event_lost error=\"out of memory\"");
    free(s);
    json_decref(ev);
}

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

static void drop_pipe(wpipe *p)
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

static int handle_chan(writer *w)
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

/* The last frame applied in this cycle was rolled back: forget it. */
static void drop_last_applied(writer *w)
{
    applied *a = &w->ap[--w->nap];
    free(a->dedup);
    free(a->pos);
    free(a->rejcols);
    free(a->newcols);
}

/* p's table refused a frame for a reason that will not go away by itself
 * (the table is a view, a trigger refuses every row...): hold p's frames
 * back in its ring, say why, retry later; every other pipeline goes on. */
static void block_pipe(writer *w, wpipe *p, uint64_t seq, const char *why)
{
    p->block_ms = p->block_ms ? (p->block_ms * 2 > 60000 ? 60000 : p->block_ms * 2) : 1000;
    p->blocked_until_ms = zx_mono_ms() + p->block_ms;
    zx_seg_hdr *h = p->seg.hdr;
    if (!atomic_load(&h->writer_error_set) || strcmp(h->writer_error, why) != 0) {
        snprintf(h->writer_error, sizeof(h->writer_error), "%s", why);
        atomic_store_explicit(&h->writer_error_set, 1, memory_order_release);
        char msg[400];
        snprintf(msg, sizeof(msg), "frames held back in the ring (retrying): %s", why);
        emit(w, json_pack("{s:s, s:s, s:I, s:s}", "event", "error", "pipeline", p->name,
                          "seq", (json_int_t)seq, "message", msg));
    }
    zx_error("event=pipeline_blocked pipeline=%s seq=%llu retry_in_ms=%lld error=\"%s\"", p->name,
             (unsigned long long)seq, (long long)p->block_ms, why);
}

static void unblock_pipe(writer *w, wpipe *p)
{
    (void)w;
    p->block_ms = 0;
    p->blocked_until_ms = 0;
    if (atomic_load(&p->seg.hdr->writer_error_set)) {
        atomic_store(&p->seg.hdr->writer_error_set, 0);
        zx_info("event=pipeline_unblocked pipeline=%s", p->name);
    }
}

/* The workspace cannot be written at all (Postgres unreachable): every
 * pipeline says why, and /healthz answers 503, until a cycle commits. */
static void workspace_health(writer *w)
{
    const char *why = zx_ws_status(w->ws);
    if (!why && !w->ws_down)
        return;
    /* while down, every cycle: a pipeline attached meanwhile is told too */
    if (why && !(w->ws_down && strcmp(w->ws_why, why) == 0)) {
        snprintf(w->ws_why, sizeof(w->ws_why), "%s", why);
        zx_error("event=workspace_down error=\"%s\"", why);
    } else if (!why) {
        zx_info("event=workspace_up");
    }
    w->ws_down = why != NULL;
    for (int i = 0; i < MAX_PIPES; i++) {
        wpipe *p = &w->pipes[i];
        if (!p->used)
            continue;
        zx_seg_hdr *h = p->seg.hdr;
        if (why) {
            snprintf(h->writer_error, sizeof(h->writer_error), "%s", why);
            atomic_store_explicit(&h->writer_error_set, 1, memory_order_release);
        } else if (!p->block_ms) {
            atomic_store(&h->writer_error_set, 0);
        }
        atomic_store(&h->workspace_down, why != NULL);
    }
}

/* ---- parked tables (see ptable) ------------------------------------------ */

static ptable *pt_find(writer *w, const char *pipeline, const char *table)
{
    for (size_t i = 0; i < w->npt; i++)
        if (strcmp(w->pt[i].pipeline, pipeline) == 0 && strcmp(w->pt[i].table, table) == 0)
            return &w->pt[i];
    return NULL;
}

/* A new zeroed entry (pointers into w->pt stay valid only until the next
 * pt_add), or NULL out of memory or for a name too long to keep. */
static ptable *pt_add(writer *w, const char *pipeline, const char *table)
{
    if (strlen(pipeline) >= sizeof(w->pt->pipeline) || strlen(table) >= sizeof(w->pt->table) ||
        zx_grow(&w->pt, w->npt, &w->pt_cap, sizeof(*w->pt)) < 0)
        return NULL;
    ptable *t = &w->pt[w->npt++];
    memset(t, 0, sizeof(*t));
    snprintf(t->pipeline, sizeof(t->pipeline), "%s", pipeline);
    snprintf(t->table, sizeof(t->table), "%s", table);
    return t;
}

static int pt_seen(const char *pipeline, const char *table, uint64_t count, uint64_t rows,
                   uint64_t bytes, uint64_t last_n, void *ctx)
{
    writer *w = ctx;
    ptable *t = pt_find(w, pipeline, table);
    if (!t && !(t = pt_add(w, pipeline, table)))
        return 1;
    t->count = count;
    t->rows = rows;
    t->bytes = bytes;
    t->last_n = last_n;
    t->seen = 1;
    return 0;
}

/* Read the parked tables' counts from the workspace (the truth: a cycle
 * rolled back undid what it parked or replayed), keeping what is known
 * only here (why, retry times, told).  0, or -1 (w->pt_stale set: read
 * again before the next frame is applied). */
static int pt_load(writer *w)
{
    for (size_t i = 0; i < w->npt; i++)
        w->pt[i].seen = 0;
    if (zx_ws_parked_each(w->ws, pt_seen, w) != 0) {
        w->pt_stale = 1;
        return -1;
    }
    for (size_t i = 0; i < w->npt; i++)
        if (!w->pt[i].seen)
            w->pt[i].count = w->pt[i].rows = w->pt[i].bytes = 0;
    w->pt_stale = 0;
    return 0;
}

/* After a commit (or pt_load): the log and the feed hear once when a
 * table starts to be parked and once when it is applied again; entries
 * with nothing parked are forgotten; each pipeline's status line
 * (seg writer_tables) follows. */
static void pt_tell(writer *w)
{
    for (size_t i = 0; i < w->npt; i++) {
        ptable *t = &w->pt[i];
        char msg[600];
        if (t->count && !t->told) {
            t->told = 1;
            snprintf(msg, sizeof(msg), "table %s refuses its changes (%s): they are parked "
                     "in _zx_parked, in order, and retried; the pipeline's other tables go on",
                     t->table, t->why[0] ? t->why : "reason not known yet");
            zx_error("event=table_blocked pipeline=%s table=%s parked_changes=%llu "
                     "parked_bytes=%llu error=\"%s\"", t->pipeline, t->table,
                     (unsigned long long)t->rows, (unsigned long long)t->bytes, t->why);
            emit(w, json_pack("{s:s, s:s, s:s, s:s}", "event", "error", "pipeline",
                              t->pipeline, "table", t->table, "message", msg));
        } else if (!t->count && t->told) {
            t->told = 0;
            snprintf(msg, sizeof(msg), "table %s takes its changes again: the parked ones "
                     "were applied", t->table);
            zx_info("event=table_unblocked pipeline=%s table=%s", t->pipeline, t->table);
            emit(w, json_pack("{s:s, s:s, s:s, s:s}", "event", "table_unblocked", "pipeline",
                              t->pipeline, "table", t->table, "message", msg));
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < w->npt; i++)
        if (w->pt[i].count || w->pt[i].told)
            w->pt[k++] = w->pt[i];
    w->npt = k;
    for (int i = 0; i < MAX_PIPES; i++) {
        wpipe *p = &w->pipes[i];
        if (!p->used)
            continue;
        char line[ZX_SEG_WRITER_TABLES_MAX] = "";
        size_t len = 0;
        for (size_t j = 0; j < w->npt && len < sizeof(line); j++) {
            const ptable *t = &w->pt[j];
            if (!t->count || strcmp(t->pipeline, p->name) != 0)
                continue;
            int n = snprintf(line + len, sizeof(line) - len, "%s%s (%s): %llu changes parked, "
                             "%llu bytes", len ? "; " : "", t->table,
                             t->why[0] ? t->why : "retrying", (unsigned long long)t->rows,
                             (unsigned long long)t->bytes);
            len = n < 0 ? sizeof(line) : len + (size_t)n;
        }
        zx_seg_hdr *h = p->seg.hdr;
        if (strncmp(h->writer_tables, line, sizeof(line)) != 0)
            zx_segment_write_text(&h->writer_tables_seq, h->writer_tables,
                                  sizeof(h->writer_tables), line);
    }
}

static void free_applied(writer *w)
{
    for (size_t i = 0; i < w->nap; i++) {
        free(w->ap[i].hashes);
        free(w->ap[i].keysig);
        free(w->ap[i].dedup);
        free(w->ap[i].pos);
        free(w->ap[i].rejcols);
        free(w->ap[i].newcols);
    }
    w->nap = 0;
}

static applied *new_applied(writer *w)
{
    if (zx_grow(&w->ap, w->nap, &w->ap_cap, sizeof(*w->ap)) < 0)
        return NULL;
    applied *a = &w->ap[w->nap++];
    memset(a, 0, sizeof(*a));
    return a;
}

/* Copy the frame's positions (they live in the rowset's arena, which the
 * next frame reuses) into one block owned by a.  0, or -1 out of memory. */
static int keep_positions(applied *a, const zx_frame_meta *m)
{
    if (!m->npositions)
        return 0;
    size_t bytes = m->npositions * sizeof(zx_frame_pos);
    for (size_t i = 0; i < m->npositions; i++)
        bytes += strlen(m->positions[i].part) + 1 + m->positions[i].value_len;
    char *blk = malloc(bytes);
    if (!blk)
        return -1;
    zx_frame_pos *ps = (zx_frame_pos *)blk;
    char *p = blk + m->npositions * sizeof(zx_frame_pos);
    for (size_t i = 0; i < m->npositions; i++) {
        size_t pl = strlen(m->positions[i].part) + 1;
        memcpy(p, m->positions[i].part, pl);
        ps[i].part = p;
        p += pl;
        if (m->positions[i].value_len)
            memcpy(p, m->positions[i].value, m->positions[i].value_len);
        ps[i].value = p;
        ps[i].value_len = m->positions[i].value_len;
        p += m->positions[i].value_len;
    }
    a->pos = ps;
    a->npos = m->npositions;
    return 0;
}

/* A changes frame whose changes carry source positions (_zx_seq): the
 * changes older than their key's last applied one are left out
 * (keyseq.h).  *rs becomes the frame without them (w->rs2) when there are
 * any.  Returns how many, or -1 out of memory. */
static long drop_stale(writer *w, wpipe *p, const zx_frame_meta *m, const zx_rowset **rs)
{
    const zx_rowset *in = *rs;
    if (!in->nrows || zx_rowset_find_column(in, ZX_CH_SEQ, strlen(ZX_CH_SEQ)) < 0)
        return 0;
    if (in->nrows > w->skip_cap) {
        uint8_t *n = realloc(w->skip, in->nrows);
        if (!n)
            return -1;
        w->skip = n;
        w->skip_cap = in->nrows;
    }
    zx_store_txn *rt = NULL;
    if (zx_store_begin(w->store, 1, &rt) != 0)
        rt = NULL;   /* no store: only this cycle's positions are known */
    long k = zx_keyseq_filter(w->ks, rt, p->name, m->table, in, m->key_cols, m->nkey_cols,
                              w->skip);
    if (rt)
        zx_store_abort(rt);
    if (k <= 0)
        return k;
    zx_rowset *out = &w->rs2;
    zx_rowset_reset(out);
    for (uint32_t c = 0; c < in->ncols; c++)
        if (zx_rowset_column(out, in->cols[c].name, in->cols[c].name_len, ZX_T_NULL) < 0)
            return -1;
    for (uint32_t r = 0; r < in->nrows; r++) {
        if (w->skip[r])
            continue;
        if (zx_rowset_begin_row(out) < 0)
            return -1;
        for (uint64_t i = in->row_start[r]; i < in->row_start[r + 1]; i++)
            if (zx_rowset_add(out, in->cells[i].col, &in->cells[i].v) < 0)
                return -1;
        zx_rowset_end_row(out);
    }
    for (uint32_t c = 0; c < in->ncols; c++)
        out->cols[c].type = in->cols[c].type;
    zx_info("event=stale_changes pipeline=%s table=%s skipped=%ld", p->name, m->table, k);
    *rs = out;
    return k;
}

/* A row-hashes frame: copy its keys (they live in the rowset's arena)
 * into a->hashes, for the store transaction.  Nothing goes to the
 * workspace, and no checkpoint is recorded: applying one again is
 * harmless (proto/frame.h).  A row that is not a key (a key hash of the
 * wrong length) is skipped with a warning.  0, or -1 out of memory. */
static int keep_hashes(applied *a, const zx_rowset *rs, const zx_frame_meta *m)
{
    if (m->nkey_cols) {
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < m->nkey_cols; i++)
            json_array_append_new(arr, json_string(m->key_cols[i]));
        a->keysig = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
        json_decref(arr);
        if (!a->keysig)
            return -1;
    }
    int64_t ckh = zx_rowset_find_column(rs, ZX_HASH_KH, strlen(ZX_HASH_KH));
    int64_t crh = zx_rowset_find_column(rs, ZX_HASH_RH, strlen(ZX_HASH_RH));
    int64_t ckv = zx_rowset_find_column(rs, ZX_HASH_KV, strlen(ZX_HASH_KV));
    size_t bytes = (size_t)rs->nrows * sizeof(hentry), skipped = 0;
    zx_value *row = calloc(rs->ncols ? rs->ncols : 1, sizeof(*row));
    if (!row)
        return -1;
    for (uint32_t r = 0; r < rs->nrows && ckv >= 0; r++) {
        zx_rowset_row(rs, r, row);
        if (row[ckv].type == ZX_T_TEXT)
            bytes += row[ckv].len;
    }
    char *blk = malloc(bytes ? bytes : 1);
    if (!blk) {
        free(row);
        return -1;
    }
    hentry *e = (hentry *)blk;
    char *kvp = blk + (size_t)rs->nrows * sizeof(hentry);
    size_t n = 0;
    for (uint32_t r = 0; r < rs->nrows && ckh >= 0; r++) {
        zx_rowset_row(rs, r, row);
        const zx_value *kh = &row[ckh];
        if (kh->type != ZX_T_TEXT || kh->len != ZX_KEYHASH_LEN) {
            skipped++;
            continue;
        }
        memcpy(e[n].kh, kh->s, ZX_KEYHASH_LEN);
        e[n].del = crh < 0 || row[crh].type != ZX_T_INT;
        e[n].rh = e[n].del ? 0 : (uint64_t)row[crh].u.i;
        e[n].kv = kvp;
        e[n].kvlen = 0;
        if (!e[n].del && ckv >= 0 && row[ckv].type == ZX_T_TEXT) {
            memcpy(kvp, row[ckv].s, row[ckv].len);
            e[n].kvlen = row[ckv].len;
            kvp += row[ckv].len;
        }
        n++;
    }
    free(row);
    if (skipped)
        zx_warn("event=bad_hashes pipeline=%s skipped=%zu reason=\"a key hash is not %d "
                "bytes\"", a->p->name, skipped, ZX_KEYHASH_LEN);
    a->hashes = e;
    a->nhashes = n;
    return 0;
}

/* Copy what applying a frame did (res) into a; takes res's column lists. */
static void keep_result(applied *a, zx_ws_result *res)
{
    a->rows = res->rows;
    a->rejects = res->rejects;
    a->created = res->created_table;
    a->history_json = res->history_json;
    a->rejcols = res->rejcols;
    a->nrejcols = res->nrejcols;
    a->newcols = res->newcols;
    a->nnewcols = res->nnewcols;
    a->extra_values = res->extra_values;
    a->extra_fields = res->extra_fields;
    a->max_columns = res->max_columns;
    memcpy(a->extra_first, res->extra_first, sizeof(a->extra_first));
    res->rejcols = NULL;
    res->newcols = NULL;
    zx_ws_result_free(res);
}

/* Apply the changes of frame m (decoded into w->rs) to its mirror table:
 * zx_ws_apply_changes's result (res filled), or -1 out of memory. */
static int apply_changes(writer *w, wpipe *p, applied *a, const zx_frame_meta *m, uint64_t seq,
                         zx_ws_result *res, char *err, size_t errlen)
{
    zx_ws_changes ch = { .pipeline = p->name, .table = m->table, .key_cols = m->key_cols,
                         .nkey_cols = m->nkey_cols, .col_types = m->col_types,
                         .ncol_types = m->ncol_types, .history = m->history,
                         .ingested_at_us = m->ingested_at_us };
    const zx_rowset *crs = &w->rs;
    long stale = drop_stale(w, p, m, &crs);
    if (stale < 0) {
        snprintf(err, errlen, "out of memory checking the positions of frame %llu of %s",
                 (unsigned long long)seq, p->name);
        return -1;
    }
    a->stale = (uint64_t)stale;
    a->inferred = m->inferred;
    return zx_ws_apply_changes(w->ws, &ch, crs, res, err, errlen);
}

/* Apply the rows of frame m (decoded into w->rs; not a row-hashes frame)
 * to its table: appended (rows frame, ap filled for it) or applied in
 * order (changes frame, a mirror: workspace_changes.c).  0, or -1 (err
 * set; zx_ws_failure_is_permanent says whether the table refused). */
static int apply_rows(writer *w, wpipe *p, applied *a, const zx_frame_meta *m, uint64_t seq,
                      zx_ws_append *ap, zx_ws_result *res, char *err, size_t errlen)
{
    memset(ap, 0, sizeof(*ap));
    ap->pipeline = p->name;
    ap->table = m->table;
    /* the writer adds only these; other bits are the source's own columns */
    ap->metadata = m->metadata & (ZX_WS_META_INGESTED_AT | ZX_WS_META_REQUEST_ID);
    ap->max_columns = p->max_columns;
    ap->ingested_at_us = m->ingested_at_us;
    ap->request_id = m->batch_id;
    if (m->kind == ZX_FRAME_CHANGES)
        return apply_changes(w, p, a, m, seq, res, err, errlen);
    return zx_ws_append_rows(w->ws, ap, &w->rs, res, err, errlen);
}

/* Record frame seq's positions and p's checkpoint in the open
 * transaction.  0, or -1 (err set). */
static int record_progress(writer *w, wpipe *p, const zx_frame_meta *m, uint64_t seq, char *err,
                           size_t errlen)
{
    int64_t now_us = zx_now_us();
    for (size_t i = 0; i < m->npositions; i++)
        if (zx_ws_position_set(w->ws, p->name, m->positions[i].part, m->positions[i].value,
                               m->positions[i].value_len, now_us) < 0) {
            snprintf(err, errlen, "cannot record the position %s of pipeline %s: %s",
                     m->positions[i].part, p->name, zx_ws_errmsg(w->ws));
            return -1;
        }
    if (zx_ws_checkpoint_set(w->ws, p->ckpt_key, seq, zx_now_us()) < 0) {
        snprintf(err, errlen, "cannot record the checkpoint of pipeline %s", p->name);
        return -1;
    }
    p->ckpt = seq;
    return 0;
}

/* Park frame seq of p (data, len bytes; m decoded into w->rs),
 * which its table refuses (why), in _zx_parked, and record its positions
 * and the checkpoint, inside the open transaction (see ptable).  0; -2
 * when it may not be parked (the table's parked frames would pass
 * max_parked_bytes: err says so, and the pipeline is to be held back);
 * -1 on a database failure or out of memory (err set). */
static int park_frame(writer *w, wpipe *p, applied *a, const zx_frame_meta *m, const void *data,
                      size_t len, uint64_t seq, const char *why, char *err, size_t errlen)
{
    char reason[256];
    snprintf(reason, sizeof(reason), "%s", why);
    ptable *t = pt_find(w, p->name, m->table);
    uint64_t have = t ? t->bytes : 0;
    if (have + len > p->max_parked_bytes) {
        snprintf(err, errlen, "table %s refuses its changes (%s), and its parked changes would "
                 "pass pipelines.%s.max_parked_bytes (%llu bytes): the whole pipeline is "
                 "held back", m->table, reason, p->name,
                 (unsigned long long)p->max_parked_bytes);
        return -2;
    }
    if (!t && !(t = pt_add(w, p->name, m->table))) {
        snprintf(err, errlen, "out of memory parking frame %llu of %s (table %s)",
                 (unsigned long long)seq, p->name, m->table);
        return -1;
    }
    if (zx_ws_park_put(w->ws, p->name, m->table, t->last_n + 1, w->rs.nrows, data, len, reason,
                       zx_now_us()) < 0) {
        snprintf(err, errlen, "cannot park frame %llu of %s (table %s): %s",
                 (unsigned long long)seq, p->name, m->table, zx_ws_errmsg(w->ws));
        return -1;
    }
    t->last_n++;
    t->count++;
    t->rows += w->rs.nrows;
    t->bytes += len;
    snprintf(t->why, sizeof(t->why), "%s", reason);
    if (!t->retry_at_ms) {
        t->backoff_ms = 1000;
        t->retry_at_ms = zx_mono_ms() + t->backoff_ms;
    }
    a->parked = 1;
    a->skipped = 1;   /* nothing in the table: nothing to announce */
    return record_progress(w, p, m, seq, err, errlen);
}

/* Apply one frame inside the open workspace transaction.  0 (applied, or
 * parked: see ptable); -2 when the frame's table refused it (the same
 * frame would fail again: hold the pipeline back); -1 on any other
 * failure (database, out of memory: roll the cycle back and retry).  err
 * says why. */
static int apply_frame(writer *w, wpipe *p, const void *data, size_t len, uint64_t seq,
                       const zx_ring_cursor *after, char *err, size_t errlen)
{
    applied *a = new_applied(w);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    a->p = p;
    a->seq = seq;
    a->after = *after;
    zx_frame_meta m;
    char derr[256];
    if (zx_frame_decode(data, len, &m, &w->rs, derr, sizeof(derr)) < 0) {
        zx_error("event=bad_frame pipeline=%s seq=%llu error=\"%s\"", p->name,
                 (unsigned long long)seq, derr);
        a->bad = 1;
        return 0;
    }
    snprintf(a->table, sizeof(a->table), "%s", m.table);
    if (m.kind == ZX_FRAME_HASHES) {
        if (keep_hashes(a, &w->rs, &m) < 0) {
            snprintf(err, errlen, "out of memory copying the row hashes of frame %llu of %s",
                     (unsigned long long)seq, p->name);
            return -1;
        }
        a->skipped = 1;   /* no workspace rows: nothing to announce */
        return 0;
    }
    if ((m.dedup_key && m.dedup_key[0] && !(a->dedup = strdup(m.dedup_key))) ||
        keep_positions(a, &m) < 0) {
        /* never drop a key or a position silently: fail the cycle, it is
         * retried */
        snprintf(err, errlen, "out of memory copying the dedup key or positions of frame %llu"
                 " of %s", (unsigned long long)seq, p->name);
        return -1;
    }
    a->dedup_hash = m.dedup_hash;
    a->accepted = m.accepted;
    snprintf(a->rid, sizeof(a->rid), "%s", m.batch_id ? m.batch_id : "");
    if (seq <= p->ckpt) {
        a->skipped = 1;
        return 0;
    }
    /* its table's earlier frames are parked: so is this one (order; past
     * the bound, or with parking since turned off, it waits in the ring) */
    const ptable *t = pt_find(w, p->name, m.table);
    if (t && t->count)
        return park_frame(w, p, a, &m, data, len, seq, t->why, err, errlen);
    zx_ws_append ap;
    zx_ws_result res = {0};
    int wr = apply_rows(w, p, a, &m, seq, &ap, &res, err, errlen);
    if (wr < 0) {
        zx_ws_result_free(&res);
        if (!zx_ws_failure_is_permanent(w->ws))
            return -1;
        if (!p->max_parked_bytes)
            return -2;
        /* the mirror refuses it: undo what it did, park it (positions
         * and checkpoint pass it), and the pipeline goes on */
        char why[256];
        snprintf(why, sizeof(why), "%s", err);
        a->stale = 0;
        a->inferred = 0;
        if (zx_ws_savepoint_rollback(w->ws) < 0 || zx_ws_savepoint(w->ws) < 0) {
            snprintf(err, errlen, "savepoint: %s", zx_ws_errmsg(w->ws));
            return -1;
        }
        return park_frame(w, p, a, &m, data, len, seq, why, err, errlen);
    }
    keep_result(a, &res);
    if (zx_ws_reject_messages(w->ws, &ap, m.rejects, m.nrejects, &a->messages, err, errlen) < 0)
        return -1;
    a->rejects += a->messages;
    return record_progress(w, p, &m, seq, err, errlen);
}

/* Apply a parked frame of p (data, len bytes) to its table as
 * apply_frame would, inside the
 * open transaction: no position and no checkpoint (recorded when it was
 * parked).  0 applied (or not decodable: dropped, logged), *nrows its
 * changes; -2 the table refuses it still; -1 any other failure.  err
 * says why. */
static int replay_frame(writer *w, wpipe *p, const void *data, size_t len, uint64_t *nrows,
                        char *err, size_t errlen)
{
    applied *a = new_applied(w);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    a->p = p;
    a->seq = p->ckpt;
    a->after = p->cur;
    a->replayed = 1;
    *nrows = 0;
    zx_frame_meta m;
    char derr[256];
    int dec = zx_frame_decode(data, len, &m, &w->rs, derr, sizeof(derr));
    if (dec < 0 || m.kind == ZX_FRAME_HASHES) {
        zx_error("event=bad_parked_frame pipeline=%s error=\"%s\"", p->name,
                 dec < 0 ? derr : "a row-hashes frame");
        a->bad = 1;
        return 0;
    }
    snprintf(a->table, sizeof(a->table), "%s", m.table);
    *nrows = w->rs.nrows;
    zx_ws_append ap;
    zx_ws_result res = {0};
    if (apply_rows(w, p, a, &m, a->seq, &ap, &res, err, errlen) < 0) {
        zx_ws_result_free(&res);
        return zx_ws_failure_is_permanent(w->ws) ? -2 : -1;
    }
    keep_result(a, &res);
    if (zx_ws_reject_messages(w->ws, &ap, m.rejects, m.nrejects, &a->messages, err, errlen) < 0)
        return -1;
    a->rejects += a->messages;
    return 0;
}

/* Frame a kept fields in _extra: count them (counter "extra_values") and
 * decide whether the feed is told, once per table and cap: the state
 * record "capped:<table>" holds the cap (u32) last announced.  0 or a
 * ZX_STORE_* code. */
static int capped(zx_store_txn *t, applied *a)
{
    int rc = zx_store_counter_add(t, a->p->name, "extra_values", a->extra_values);
    if (rc != 0 || !a->extra_fields)
        return rc;
    char key[96];
    snprintf(key, sizeof(key), "capped:%s", a->table);
    const void *val = NULL;
    size_t len = 0;
    uint32_t cap = a->max_columns, had = 0;
    rc = zx_store_state_get(t, a->p->name, key, &val, &len);
    if (rc == 0 && len == sizeof(had))
        memcpy(&had, val, sizeof(had));
    else if (rc != 0 && rc != ZX_STORE_NOTFOUND)
        return rc;
    if (rc == 0 && had == cap)
        return 0;
    a->announce_cap = 1;
    return zx_store_state_put(t, a->p->name, key, &cap, sizeof(cap));
}

static int store_txn(writer *w)
{
    int64_t now = zx_now_us();
    for (int attempt = 0; attempt < 8; attempt++) {
        zx_store_txn *t;
        int rc = zx_store_begin(w->store, 0, &t);
        if (rc)
            return rc;
        for (size_t i = 0; i < w->nap; i++)
            w->ap[i].announce_cap = 0; /* decided again by this attempt */
        for (size_t i = 0; i < w->nap && rc == 0; i++) {
            applied *a = &w->ap[i];
            zx_position pos = {a->seq, now, NULL, 0};
            rc = a->replayed ? 0 : zx_store_position_put(t, a->p->name, &pos);
            for (size_t k = 0; rc == 0 && k < a->npos; k++) {
                rc = zx_store_position_part_put(t, a->p->name, a->pos[k].part, a->pos[k].value,
                                                a->pos[k].value_len, now);
                if (rc == ZX_STORE_KEYTOOLONG) {
                    zx_warn("event=position_not_stored pipeline=%s part=\"%.60s\" "
                            "error=\"key too long\"", a->p->name, a->pos[k].part);
                    rc = 0;
                }
            }
            if (rc == 0 && a->dedup) {
                zx_idem_rec r = {0};
                r.created_us = now;
                r.body_hash = a->dedup_hash;
                r.accepted = a->accepted;
                snprintf(r.request_id, sizeof(r.request_id), "%s", a->rid);
                rc = zx_store_idem_put(t, a->p->name, a->dedup, strlen(a->dedup), &r);
                if (rc == ZX_STORE_KEYTOOLONG)
                    rc = 0;
            }
            if (rc == 0 && a->keysig) {
                /* hashes of another key say nothing of this one's rows */
                const void *old = NULL;
                size_t oldlen = 0;
                int g = zx_store_state_get(t, a->p->name, "key_cols", &old, &oldlen);
                size_t kl = strlen(a->keysig);
                if (g == 0 && (oldlen != kl || memcmp(old, a->keysig, kl)))
                    rc = zx_store_hashes_clear(t, a->p->name);
                else if (g != 0 && g != ZX_STORE_NOTFOUND)
                    rc = g;
                if (rc == 0 && (g != 0 || oldlen != kl || memcmp(old, a->keysig, kl)))
                    rc = zx_store_state_put(t, a->p->name, "key_cols", a->keysig, kl);
            }
            for (size_t k = 0; rc == 0 && k < a->nhashes; k++) {
                const hentry *e = &a->hashes[k];
                rc = e->del ? zx_store_hash_del(t, a->p->name, e->kh)
                            : zx_store_hash_put(t, a->p->name, e->kh, e->rh, e->kv, e->kvlen);
            }
            if (rc == 0 && a->messages)
                rc = zx_store_counter_add(t, a->p->name, "rejects:_message", a->messages);
            if (rc == 0 && a->rows)
                rc = zx_store_counter_add(t, a->p->name, "rows", a->rows);
            if (rc == 0 && a->rejects)
                rc = zx_store_counter_add(t, a->p->name, "rejects", a->rejects);
            for (size_t k = 0; rc == 0 && k < a->nrejcols; k++) {
                char cname[96];
                snprintf(cname, sizeof(cname), "rejects:%s", a->rejcols[k].name);
                rc = zx_store_counter_add(t, a->p->name, cname, a->rejcols[k].count);
                if (rc == ZX_STORE_KEYTOOLONG)
                    rc = 0; /* the total is still counted */
            }
            if (rc == 0 && a->extra_values)
                rc = capped(t, a);
            if (rc == 0 && (a->nnewcols || a->created)) {
                char *js = NULL;
                int cr = zx_ws_table_columns(w->ws, a->table, &js);
                if (cr == 0 && js)
                    rc = zx_store_schema_put(t, a->p->name, a->table, js);
                else if (cr < 0)
                    zx_warn("event=schema_not_recorded pipeline=%s table=%s error=\"%s\"",
                            a->p->name, a->table, zx_ws_errmsg(w->ws));
                free(js);
            }
        }
        if (rc == 0)
            rc = zx_keyseq_store(w->ks, t);
        if (rc == 0)
            rc = zx_store_commit(t);
        else
            zx_store_abort(t);
        if (rc != ZX_STORE_MAP_FULL)
            return rc;
    }
    return ZX_STORE_MAP_FULL;
}

/* The feed hears once per mirror that its types were inferred. */
static void tell_inferred(writer *w, const applied *a)
{
    char key[400];
    snprintf(key, sizeof(key), "%s\t%s", a->p->name, a->table);
    for (size_t i = 0; i < w->ninferred_told; i++)
        if (strcmp(w->inferred_told[i], key) == 0)
            return;
    if (w->ninferred_told < INFERRED_MAX) {
        char **n = realloc(w->inferred_told, (w->ninferred_told + 1) * sizeof(*n));
        char *k = strdup(key);
        if (!n || !k) {
            free(k);
            if (n)
                w->inferred_told = n;
            return;
        }
        w->inferred_told = n;
        w->inferred_told[w->ninferred_told++] = k;
    }
    char msg[512];
    snprintf(msg, sizeof(msg), "pipeline %s: the change events for %s carry no schema, so its "
             "column types are inferred from the values (decimals stay base64 text, dates "
             "and times numbers); set schemas.enable=true in Debezium's JSON converter to get "
             "the source's types", a->p->name, a->table);
    emit(w, json_pack("{s:s, s:s, s:s, s:s}", "event", "types_inferred", "pipeline",
                      a->p->name, "table", a->table, "message", msg));
    zx_warn("event=types_inferred pipeline=%s table=%s", a->p->name, a->table);
}

static void announce(writer *w)
{
    /* schema and reject events per frame; one batch event per pipeline and
     * table per cycle (a feed event per frame cost the writer a message to
     * the supervisor per frame) */
    for (size_t i = 0; i < w->nap; i++) {
        applied *a = &w->ap[i];
        if (a->bad || a->skipped)
            continue;
        for (size_t k = 0; k < a->nnewcols; k++) {
            char msg[256];
            snprintf(msg, sizeof(msg), "%s column %s %s (%s)", a->created ? "created" : "added",
                     a->newcols[k].name, a->table, zx_type_name(a->newcols[k].type));
            emit(w, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "event", "schema", "pipeline",
                              a->p->name, "table", a->table, "column", a->newcols[k].name,
                              "type", zx_type_name(a->newcols[k].type), "message", msg));
        }
        if (a->history_json) {
            /* said once: when __changes is made so */
            char msg[400];
            snprintf(msg, sizeof(msg), "mirror %s has %u columns, too many for one history "
                     "row per change: %s__changes keeps each change's row as one JSON "
                     "object in its column _row", a->table, a->history_json, a->table);
            emit(w, json_pack("{s:s, s:s, s:s, s:i, s:s}", "event", "history_as_json",
                              "pipeline", a->p->name, "table", a->table, "columns",
                              (int)a->history_json, "message", msg));
            zx_warn("event=history_as_json pipeline=%s table=%s columns=%u history=%s__changes "
                    "column=_row", a->p->name, a->table, a->history_json, a->table);
        }
        if (a->announce_cap) {
            char msg[400];
            snprintf(msg, sizeof(msg), "table %s has reached its cap of %u columns "
                     "(pipelines.%s.max_columns): new fields (first: %s) are kept as JSON "
                     "in its column _extra", a->table, a->max_columns, a->p->name, a->extra_first);
            emit(w, json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:s}", "event", "columns_capped",
                              "pipeline", a->p->name, "table", a->table, "max_columns",
                              (int)a->max_columns, "column", "_extra", "first_field",
                              a->extra_first, "message", msg));
            zx_warn("event=columns_capped pipeline=%s table=%s max_columns=%u first_field=%s",
                    a->p->name, a->table, a->max_columns, a->extra_first);
        }
        if (a->inferred)
            tell_inferred(w, a);
        if (a->messages) {
            char msg[256];
            snprintf(msg, sizeof(msg), "%llu input messages could not be read as rows for %s "
                     "(kept in %s__rejects with the reason)", (unsigned long long)a->messages,
                     a->table, a->table);
            emit(w, json_pack("{s:s, s:s, s:s, s:I, s:s}", "event", "rejected_messages",
                              "pipeline", a->p->name, "table", a->table, "count",
                              (json_int_t)a->messages, "message", msg));
        }
        if (a->rejects > a->messages) {
            json_t *cols = json_object();
            for (size_t k = 0; k < a->nrejcols; k++)
                json_object_set_new(cols, a->rejcols[k].name, json_integer((json_int_t)a->rejcols[k].count));
            char msg[256];
            snprintf(msg, sizeof(msg), "%llu values did not fit their columns in %s (NULL stored; see %s__rejects)",
                     (unsigned long long)(a->rejects - a->messages), a->table, a->table);
            emit(w, json_pack("{s:s, s:s, s:s, s:I, s:o, s:s}", "event", "rejects", "pipeline",
                              a->p->name, "table", a->table,
                              "count", (json_int_t)(a->rejects - a->messages),
                              "columns", cols, "message", msg));
        }
        if (a->in_batch)
            continue;
        /* this frame and the cycle's later ones of the same pipeline and
         * table: one batch event (seq: the last frame) */
        uint64_t rows = a->rows, rejects = a->rejects, first = a->seq, last = a->seq;
        size_t frames = 1;
        for (size_t k = i + 1; k < w->nap; k++) {
            applied *b = &w->ap[k];
            if (b->bad || b->skipped || b->p != a->p || strcmp(b->table, a->table) != 0)
                continue;
            b->in_batch = 1;
            rows += b->rows;
            rejects += b->rejects;
            last = b->seq;
            frames++;
        }
        if (rows == 0 && rejects == 0)
            continue; /* frames that carried only positions */
        char msg[256];
        if (frames == 1)
            snprintf(msg, sizeof(msg), "%llu rows into %s (frame %llu)",
                     (unsigned long long)rows, a->table, (unsigned long long)last);
        else
            snprintf(msg, sizeof(msg), "%llu rows into %s (%zu frames, %llu to %llu)",
                     (unsigned long long)rows, a->table, frames, (unsigned long long)first,
                     (unsigned long long)last);
        emit(w, json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:s}", "event", "batch",
                          "pipeline", a->p->name, "table", a->table, "rows", (json_int_t)rows,
                          "rejects", (json_int_t)rejects, "seq", (json_int_t)last, "frames",
                          (json_int_t)frames, "message", msg));
    }
}

/* A checkpoint could not be read (the workspace was unreachable): read
 * every pipeline's again inside the transaction just begun, before any
 * frame is applied, or a frame committed before the failure would be
 * applied twice.  0, or -1 (err set). */
static int reread_checkpoints(writer *w, char *err, size_t errlen)
{
    for (int i = 0; i < MAX_PIPES; i++) {
        wpipe *p = &w->pipes[i];
        if (p->used && zx_ws_checkpoint_get(w->ws, p->ckpt_key, &p->ckpt) < 0) {
            snprintf(err, errlen, "cannot read the checkpoint of pipeline %s: %s", p->name,
                     zx_ws_errmsg(w->ws));
            return -1;
        }
    }
    w->ckpt_stale = 0;
    return 0;
}

/* Begin the cycle's transaction if not yet (*began), reading what a
 * failure left stale first.  0, or -1 (err set). */
static int begin_once(writer *w, int *began, char *err, size_t errlen)
{
    if (*began)
        return 0;
    if (zx_ws_begin(w->ws, err, errlen) < 0)
        return -1;
    *began = 1;
    if (w->ckpt_stale && reread_checkpoints(w, err, errlen) < 0)
        return -1;
    if (w->pt_stale && pt_load(w) < 0)
        return zx_seterr(err, errlen, "cannot read _zx_parked: %s", zx_ws_errmsg(w->ws));
    return 0;
}

/* p's parked tables whose retry is due: apply their parked frames, oldest
 * first, each deleted from _zx_parked in the same savepoint; a table that
 * still refuses waits again (backoff).  0, or -1 on a failure that needs
 * a rollback (err set). */
static int replay_parked(writer *w, wpipe *p, size_t *bytes, int *began, int *nframes,
                         char *err, size_t errlen)
{
    int64_t now = zx_mono_ms();
    for (size_t i = 0; i < w->npt && *bytes < CYCLE_BYTES; i++) {
        ptable *t = &w->pt[i];
        if (strcmp(t->pipeline, p->name) != 0 || !t->count || t->retry_at_ms > now)
            continue;
        while (t->count && *bytes < CYCLE_BYTES) {
            if (begin_once(w, began, err, errlen) < 0)
                return -1;
            t = &w->pt[i]; /* pt_load may have moved it */
            if (!t->count)
                break;
            uint64_t n = 0, nrows = 0;
            void *f = NULL;
            size_t len = 0;
            int got = zx_ws_park_first(w->ws, p->name, t->table, &n, &f, &len);
            if (got < 0)
                return zx_seterr(err, errlen, "cannot read the parked changes of %s "
                                 "(pipeline %s): %s", t->table, p->name, zx_ws_errmsg(w->ws));
            if (got == 0) {
                t->count = t->rows = t->bytes = 0;
                break;
            }
            if (zx_ws_savepoint(w->ws) < 0) {
                free(f);
                return zx_seterr(err, errlen, "savepoint: %s", zx_ws_errmsg(w->ws));
            }
            char why[256] = "";
            int ar = replay_frame(w, p, f, len, &nrows, why, sizeof(why));
            free(f);
            if (ar == -2) {
                drop_last_applied(w);
                if (zx_ws_savepoint_rollback(w->ws) < 0)
                    return zx_seterr(err, errlen, "savepoint: %s", zx_ws_errmsg(w->ws));
                t->backoff_ms = t->backoff_ms * 2 > 60000 ? 60000
                                : t->backoff_ms ? t->backoff_ms * 2 : 1000;
                t->retry_at_ms = zx_mono_ms() + t->backoff_ms;
                snprintf(t->why, sizeof(t->why), "%s", why);
                zx_info("event=parked_table_retry pipeline=%s table=%s retry_in_ms=%lld "
                        "error=\"%s\"", p->name, t->table, (long long)t->backoff_ms, why);
                break;
            }
            if (ar < 0)
                return zx_seterr(err, errlen, "%s", why);
            if (zx_ws_park_del(w->ws, p->name, t->table, n) < 0 ||
                zx_ws_savepoint_release(w->ws) < 0)
                return zx_seterr(err, errlen, "cannot delete a parked frame of %s (pipeline "
                                 "%s): %s", t->table, p->name, zx_ws_errmsg(w->ws));
            t->count--;
            t->rows -= nrows < t->rows ? nrows : t->rows;
            t->bytes -= len < t->bytes ? len : t->bytes;
            if (!t->count)
                t->backoff_ms = t->retry_at_ms = 0;
            *bytes += len;
            (*nframes)++;
        }
    }
    return 0;
}

/* Drain every ring once (one pass), applying each frame inside the open
 * transaction (begun at the first frame).  Returns the frames applied in
 * this pass (>= 0), or -1 on a failure that needs a rollback (err set). */
static int drain_pass(writer *w, size_t *bytes, int *began, char *err, size_t errlen)
{
    int nframes = 0;
    int64_t now = zx_mono_ms();
    for (int k = 0; k < MAX_PIPES && *bytes < CYCLE_BYTES; k++) {
        int i = (w->first_pipe + k) % MAX_PIPES;
        wpipe *p = &w->pipes[i];
        if (!p->used || p->blocked_until_ms > now)
            continue;
        if (replay_parked(w, p, bytes, began, &nframes, err, errlen) < 0)
            return -1;
        while (*bytes < CYCLE_BYTES) {
            const void *data;
            size_t len;
            uint64_t seq;
            zx_ring_cursor c = p->cur;
            zx_ring_result r = zx_ring_next(&p->seg.frames, &c, &data, &len, &seq);
            if (r == ZX_RING_WOULD_BLOCK)
                break;
            if (r != ZX_RING_OK) {
                zx_error("event=ring_corrupt pipeline=%s ring=frames", p->name);
                break;
            }
            if (begin_once(w, began, err, errlen) < 0)
                return -1;
            /* one savepoint per frame: a table that refuses this frame
             * holds back only its own pipeline */
            if (zx_ws_savepoint(w->ws) < 0) {
                snprintf(err, errlen, "savepoint: %s", zx_ws_errmsg(w->ws));
                return -1;
            }
            int ar = apply_frame(w, p, data, len, seq, &c, err, errlen);
            if (ar < 0) {
                if (ar != -2)
                    return -1;
                drop_last_applied(w);
                if (zx_ws_savepoint_rollback(w->ws) < 0)
                    return -1;
                block_pipe(w, p, seq, err);
                break;
            }
            if (zx_ws_savepoint_release(w->ws) < 0) {
                snprintf(err, errlen, "release: %s", zx_ws_errmsg(w->ws));
                return -1;
            }
            if (p->block_ms)
                unblock_pipe(w, p);
            p->cur = c;
            *bytes += len;
            nframes++;
            if (w->served_first < 0)
                w->served_first = i;
        }
    }
    return nframes;
}

/* One cycle = one group-commit transaction.  Returns frames applied
 * (>= 0), or -1 after a failure that was rolled back (the frames stay in
 * their rings and are retried).
 *
 * Adaptive group commit.  The transaction is begun by the first frame
 * found and then held open only while frames keep arriving: after each
 * pass over the rings, another pass is made if the last one applied at
 * least one frame (frames were published while the previous pass ran:
 * other clients are active; the way PostgreSQL applies commit_delay only
 * with commit_siblings active); the transaction commits as soon as a pass
 * finds nothing new, or once workspace.commit_interval has passed since
 * its first frame, or once CYCLE_BYTES were applied.  So a lone frame (or
 * the last frames of a burst) is committed at once, never after an idle
 * window, while a steady stream of frames shares one transaction per
 * commit_interval.  commit_interval 0 makes every cycle a single pass.
 * Not done: waiting a little for the next frame when a pass finds none
 * (PostgreSQL's commit_delay).  Measured with a linger of up to 1 ms (4x
 * the mean gap between arrivals): 8 closed-loop ?wait=commit clients lost
 * a fifth of their rate and doubled their p50, while bursty non-waiting
 * pushes at 5,000/s were not committed less often (their gaps between
 * bursts exceed any linger short enough for a waiting client). */
static int cycle(writer *w)
{
    size_t bytes = 0;
    int nframes = 0;
    int began = 0;
    char err[512] = "";
    w->nap = 0;
    w->served_first = -1;
    zx_keyseq_clear(w->ks);
    int64_t deadline_us = zx_mono_us() + (int64_t)w->a->conf->commit_interval_ms * 1000;
    for (;;) {
        int n = drain_pass(w, &bytes, &began, err, sizeof(err));
        if (n < 0)
            goto fail;
        nframes += n;
        if (n == 0 || bytes >= CYCLE_BYTES || zx_mono_us() >= deadline_us || stop_requested)
            break;
    }
    /* round robin: the next cycle starts after the pipeline served first in
     * this one, so that one busy pipeline filling CYCLE_BYTES cannot starve
     * the others */
    if (w->served_first >= 0)
        w->first_pipe = (w->served_first + 1) % MAX_PIPES;
    if (!began)
        return 0;
    if (zx_ws_commit(w->ws, err, sizeof(err)) < 0)
        goto fail;
    if (w->fault_path[0] && unlink(w->fault_path) == 0) {
        zx_warn("event=fault_injection point=after_workspace_commit frames=%d", nframes);
        _exit(70);
    }
    int rc = store_txn(w);
    if (rc) {
        /* The workspace has the rows and the checkpoint: the frames will
         * be re-read, skipped as applied, and their LMDB records retried. */
        zx_error("event=store_failed error=\"%s\"", zx_store_strerror(rc));
        for (size_t i = 0; i < w->nap; i++)
            zx_ring_cursor_init(&w->ap[i].p->seg.frames, &w->ap[i].p->cur);
        free_applied(w);
        return -1;
    }
    int64_t now_us = zx_now_us();
    w->cycles++;
    for (size_t i = w->nap; i-- > 0;) {
        applied *a = &w->ap[i];
        zx_seg_hdr *h = a->p->seg.hdr;
        atomic_fetch_add(&h->rows, a->rows);
        atomic_fetch_add(&h->rejects, a->rejects);
        atomic_fetch_add(&h->batches, 1);
        if (a->bad)
            atomic_fetch_add(&h->frame_errors, 1);
        atomic_store(&h->last_commit_us, now_us);
        /* release once per pipeline, at its last frame of the cycle (the
         * first one met walking backwards) */
        if (!a->replayed && a->p->released_cycle != w->cycles) {
            a->p->released_cycle = w->cycles;
            zx_ring_release(&a->p->seg.frames, &a->after, 1);
        }
    }
    announce(w);
    free_applied(w);
    pt_tell(w);
    return nframes;
fail:
    zx_error("event=commit_failed frames=%d error=\"%s\"", nframes, err);
    if (began)
        zx_ws_rollback(w->ws);
    for (int i = 0; i < MAX_PIPES; i++) {
        if (!w->pipes[i].used)
            continue;
        zx_ring_cursor_init(&w->pipes[i].seg.frames, &w->pipes[i].cur);
        /* the commit may have happened although its answer was lost (the
         * connection went): the checkpoint in the workspace says */
        if (zx_ws_checkpoint_get(w->ws, w->pipes[i].ckpt_key, &w->pipes[i].ckpt) < 0)
            w->ckpt_stale = 1;
    }
    free_applied(w);
    /* what the cycle parked or replayed is undone: count again */
    if (pt_load(w) == 0)
        pt_tell(w);
    return -1;
}

/* forget.h's callbacks: whether a segment of name is attached (1),
 * detaching (2) or neither (0); a feed event. */
static int forget_state(void *ctx, const char *name)
{
    writer *w = ctx;
    int st = 0;
    for (int i = 0; i < MAX_PIPES; i++)
        if (w->pipes[i].used && strcmp(w->pipes[i].name, name) == 0)
            st = w->pipes[i].detaching && st != 1 ? 2 : 1;
    return st;
}

static void forget_emit(void *ctx, void *ev)
{
    emit(ctx, ev);
}

static void finish_detaches(writer *w)
{
    for (int i = 0; i < MAX_PIPES; i++) {
        wpipe *p = &w->pipes[i];
        if (p->used && p->detaching &&
            zx_ring_acked_seq(&p->seg.frames) >= zx_ring_published_seq(&p->seg.frames))
            drop_pipe(p);
    }
}

static void prune(writer *w)
{
    int64_t now = zx_mono_ms();
    if (now - w->last_prune_ms < 60000)
        return;
    w->last_prune_ms = now;
    for (int attempt = 0; attempt < 3; attempt++) {
        zx_store_txn *t;
        if (zx_store_begin(w->store, 0, &t) != 0)
            return;
        size_t removed = 0;
        int rc = zx_store_idem_prune(t, zx_now_us() - IDEM_TTL_US, 100000, &removed);
        rc = rc ? (zx_store_abort(t), rc) : zx_store_commit(t);
        if (rc != ZX_STORE_MAP_FULL)
            return;
    }
}

typedef struct recon {
    zx_store_txn *t;
    int rc;
    size_t n;
} recon;

static int recon_one(const char *pipeline, const char *part, const void *val, size_t len,
                     void *ctx)
{
    recon *r = ctx;
    int rc = zx_store_position_part_put(r->t, pipeline, part, val, len, zx_now_us());
    if (rc == ZX_STORE_KEYTOOLONG || rc == ZX_STORE_INVALID)
        return 0;
    if (rc) {
        r->rc = rc;
        return 1;
    }
    r->n++;
    return 0;
}

/* The workspace holds the positions committed with the rows (same
 * transaction); the store, written after, may lack the last ones if the
 * writer died in between.  Copy them into the store before any worker
 * reads it (before READY).  0, or -1 with err set. */
static int reconcile_positions(writer *w, char *err, size_t errlen)
{
    for (int attempt = 0; attempt < 8; attempt++) {
        recon r = {NULL, 0, 0};
        int rc = zx_store_begin(w->store, 0, &r.t);
        if (rc)
            return zx_seterr(err, errlen, "store: %s", zx_store_strerror(rc));
        int wr = zx_ws_positions_each(w->ws, recon_one, &r);
        if (wr < 0) {
            zx_store_abort(r.t);
            return zx_seterr(err, errlen, "workspace: cannot read _zx_positions: %s",
                             zx_ws_errmsg(w->ws));
        }
        rc = r.rc ? (zx_store_abort(r.t), r.rc) : zx_store_commit(r.t);
        if (rc == ZX_STORE_MAP_FULL)
            continue;
        if (rc)
            return zx_seterr(err, errlen, "store: %s", zx_store_strerror(rc));
        if (r.n)
            zx_info("event=positions_reconciled parts=%zu", r.n);
        return 0;
    }
    return zx_seterr(err, errlen, "store: map full");
}

int zx_writer_main(const zx_writer_args *a)
{
    writer *w = calloc(1, sizeof(*w));
    if (!w) {
        zx_error("event=fatal error=\"out of memory (writer state, %zu bytes)\"", sizeof(*w));
        return 1;
    }
    w->a = a;
    int rc = 1;
    char err[512];
    struct sigaction sa = {0};
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    zx_rowset_init(&w->rs);
    zx_rowset_init(&w->rs2);
    if (!(w->ks = zx_keyseq_new())) {
        zx_error("event=out_of_memory what=keyseq");
        free(w);
        return 1;
    }
    for (int i = 0; i < MAX_PIPES; i++)
        w->pipes[i].worker_efd = -1;

    /* The store's durability follows the workspace's: with synchronous
     * "normal" a power loss may undo the last workspace commits, so the
     * store skips its second sync per commit (ZX_STORE_NOMETASYNC). */
    unsigned sflags = a->conf->ws_kind == ZX_WS_KIND_SQLITE && a->conf->sqlite_synchronous &&
                              strcmp(a->conf->sqlite_synchronous, "full") == 0
                          ? 0 : ZX_STORE_NOMETASYNC;
    if (zx_store_open(a->conf->data_dir, sflags, 0, &w->store, err, sizeof(err)) != 0) {
        zx_error("event=fatal error=\"%s\"", err);
        goto out;
    }
    char owner[4200];
    snprintf(owner, sizeof(owner), "zxd pid %ld, data_dir %s", (long)getppid(),
             a->conf->data_dir);
    int locked = 0;
    w->ws = zx_ws_open(a->conf, owner, &locked, err, sizeof(err));
    if (!w->ws) {
        zx_error("event=fatal error=\"%s\"", err);
        /* another zxd writes this workspace, or the server refuses us:
         * restarting cannot help */
        if (locked)
            rc = ZX_EXIT_FATAL_CONFIG;
        goto out;
    }
    if (reconcile_positions(w, err, sizeof(err)) < 0) {
        zx_error("event=fatal error=\"%s\"", err);
        goto out;
    }
    if (pt_load(w) < 0)
        zx_warn("event=parked_not_read error=\"%s\"", zx_ws_errmsg(w->ws));
    const char *fi = getenv("ZX_FAULT_INJECTION");
    if (fi && strcmp(fi, "1") == 0)
        snprintf(w->fault_path, sizeof(w->fault_path), "%s/fault-crash-after-workspace-commit",
                 a->conf->data_dir);
    zx_set_nonblock(a->chan);
    zx_chan_send(a->chan, ZX_CHAN_READY, "{}", NULL, 0);
    zx_info("event=ready workspace=%s backend=%s",
            a->conf->ws_kind == ZX_WS_KIND_POSTGRES ? a->conf->pg_dsn_shown
                                                    : a->conf->sqlite_path,
            zx_ws_backend(w->ws));
    int backoff_ms = 0;
    for (;;) {
        zx_ring_drain_fd(a->self_efd);
        int cr;
        while ((cr = handle_chan(w)) == 1)
            ;
        if (cr < 0 && !stop_requested) {
            zx_warn("event=supervisor_gone");
            stop_requested = 1;
        }
        /* group commit: see cycle() */
        int n = cycle(w);
        workspace_health(w);
        finish_detaches(w);
        if (w->forget.n && !w->ws_down)
            zx_forget_run(&w->forget, w->store, w->ws, forget_state, forget_emit, w);
        if (n < 0) {
            backoff_ms = backoff_ms ? (backoff_ms * 2 > 5000 ? 5000 : backoff_ms * 2) : 100;
            if (stop_requested && backoff_ms >= 5000)
                break;
        } else {
            backoff_ms = 0;
        }
        if (n > 0)
            continue; /* more may be waiting */
        if (stop_requested)
            break;
        prune(w);
        struct pollfd p[2] = {{a->self_efd, POLLIN, 0}, {a->chan, POLLIN, 0}};
        int r = poll(p, 2, backoff_ms ? backoff_ms : 1000);
        if (r > 0 && (p[1].revents & (POLLHUP | POLLERR)) && !(p[1].revents & POLLIN)) {
            zx_warn("event=supervisor_gone");
            stop_requested = 1;
        }
    }
    rc = 0;
    zx_info("event=stop");
out:
    for (int i = 0; i < MAX_PIPES; i++)
        if (w->pipes[i].used)
            drop_pipe(&w->pipes[i]);
    zx_ws_close(w->ws);
    zx_store_close(w->store);
    zx_rowset_free(&w->rs);
    zx_rowset_free(&w->rs2);
    zx_keyseq_free(w->ks);
    free(w->skip);
    for (size_t i = 0; i < w->ninferred_told; i++)
        free(w->inferred_told[i]);
    free(w->inferred_told);
    free(w->ap);
    free(w->pt);
    free(w);
    return rc;
}
