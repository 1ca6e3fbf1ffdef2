/*
 * status.c — the read-only control commands `status` (every process and
 * pipeline: state, rows, rings, what the source and the writer say) and
 * `checkpoints NAME` (a pipeline's positions, schema and counters from
 * the store).
 *
 * It must never keep LMDB open across loop iterations: the store is
 * opened read-only per request.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ring.h"
#include "common/timefmt.h"
#include "store/store.h"
#include "supervisor/control.h"
#include "supervisor/jobs.h"
#include "supervisor/lease.h"

static json_t *err_obj(const char *fmt, const char *arg)
{
    char msg[512];
    snprintf(msg, sizeof(msg), fmt, arg ? arg : "");
    return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

static json_t *jstr_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

static json_t *proc_obj(const child *c)
{
    return json_pack("{s:s, s:o, s:s, s:i, s:o}", "name", c->name, "pid",
                     c->pid ? json_integer(c->pid) : json_null(), "state", zx_state_name(c->state),
                     "restarts", (int)c->restarts, "last_error", jstr_or_null(c->last_error));
}

typedef struct rej_ctx {
    json_t *obj;
} rej_ctx;

static int rej_cb(const char *name, uint64_t v, void *ctx)
{
    rej_ctx *r = ctx;
    if (strncmp(name, "rejects:", 8) == 0)
        json_object_set_new(r->obj, name + 8, json_integer((json_int_t)v));
    return 0;
}

static zx_store *open_store(sup *s)
{
    zx_store *st = NULL;
    char err[256];
    if (zx_store_open(s->conf->data_dir, ZX_STORE_RDONLY, 0, &st, err, sizeof(err)) != 0)
        return NULL;
    return st;
}

/* What a ring holds: records published and released, bytes in use and
 * its capacity (status words only: the supervisor never reads records). */
static json_t *ring_obj(const zx_ring *r)
{
    return json_pack("{s:I, s:I, s:I, s:I}", "published", (json_int_t)zx_ring_published_seq(r),
                     "acked", (json_int_t)zx_ring_acked_seq(r), "used_bytes",
                     (json_int_t)zx_ring_used_bytes(r), "capacity",
                     (json_int_t)zx_ring_capacity(r));
}

static json_t *pipe_obj(spipe *p, zx_store_txn *t)
{
    zx_seg_hdr *h = p->seg.hdr;
    json_t *rej = json_object();
    uint64_t extra = 0;
    if (t) {
        rej_ctx rc = {rej};
        zx_store_counters_each(t, p->name, rej_cb, &rc);
        zx_store_counter_get(t, p->name, "extra_values", &extra);
    }
    json_t *ring = ring_obj(&p->seg.frames);
    int has_in = h->in_size != 0; /* only sources the gateway feeds */
    json_t *rings = json_pack("{s:o, s:o, s:o, s:I}", "in",
                              has_in ? ring_obj(&p->seg.in) : json_null(), "out",
                              has_in ? ring_obj(&p->seg.out) : json_null(), "frames",
                              ring_obj(&p->seg.frames), "shared_bytes", (json_int_t)p->seg.size);
    /* what the source says of itself (lag per partition...) and its
     * current problem */
    char serr[ZX_SEG_SOURCE_ERROR_MAX];
    zx_segment_read_text(&h->source_error_seq, h->source_error, sizeof(h->source_error), serr,
                         sizeof(serr));
    char *sst = malloc(ZX_SEG_SOURCE_STATUS_MAX);
    json_t *source_status = NULL;
    if (sst && zx_segment_read_text(&h->source_status_seq, h->source_status,
                                    sizeof(h->source_status), sst, ZX_SEG_SOURCE_STATUS_MAX))
        source_status = json_loads(sst, 0, NULL);
    free(sst);
    const child *c = &p->worker;
    /* the writer holding this pipeline's frames back says more than the
     * worker's last exit */
    char werr[ZX_SEG_SOURCE_ERROR_MAX + 16] = "";
    char blocked[sizeof(h->writer_error)] = "";
    if (atomic_load_explicit(&h->writer_error_set, memory_order_acquire)) {
        memcpy(blocked, h->writer_error, sizeof(blocked));
        blocked[sizeof(blocked) - 1] = '\0';
        if (!blocked[0])
            snprintf(blocked, sizeof(blocked), "the writer holds its frames back");
        snprintf(werr, sizeof(werr), "writer: %s", blocked);
    } else if (serr[0] && !(c->state == ST_FAILED && c->last_error[0])) {
        /* (a failed pipeline's last_error has the source's refusal and
         * what to do about it) */
        snprintf(werr, sizeof(werr), "source: %s", serr);
    }
    json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:s, s:i, s:I, s:I, s:o, s:o, s:o, s:o, s:I, s:o, s:o}",
                     "name", p->name,
                     "source", p->conf ? p->conf->source : p->gone_source, "table",
                     p->conf && p->conf->table ? p->conf->table : "", "pid",
                     c->pid ? json_integer(c->pid) : json_null(), "state",
                     p->removing ? "draining" : zx_state_name(c->state), "restarts",
                     (int)c->restarts, "rows", (json_int_t)atomic_load(&h->rows), "rejects",
                     (json_int_t)atomic_load(&h->rejects), "rejects_by_column", rej,
                     "last_error", jstr_or_null(werr[0] ? werr : c->last_error), "ring", ring,
                     "rings", rings, "extra_values", (json_int_t)extra, "source_error",
                     jstr_or_null(serr), "source_status",
                     source_status ? source_status : json_object());
    /* a worker that runs while the writer holds its frames back (its
     * table refuses them, or the workspace is down) is not "running":
     * nothing of it reaches the workspace */
    if (o && blocked[0] && !p->removing && c->state == ST_RUNNING)
        json_object_set_new(o, "state", json_string("blocked"));
    if (o)
        json_object_set_new(o, "blocked_reason", jstr_or_null(blocked[0] ? blocked : NULL));
    /* what its forwarder says (forward.h): null when it does not forward */
    char fst[ZX_SEG_FORWARD_STATUS_MAX];
    json_t *fwd = NULL;
    if (p->conf && zx_conf_forwards(p->conf) &&
        zx_segment_read_text(&h->forward_status_seq, h->forward_status,
                             sizeof(h->forward_status), fst, sizeof(fst)))
        fwd = json_loads(fst, 0, NULL);
    if (o)
        json_object_set_new(o, "forward", fwd ? fwd : json_null());
    else
        json_decref(fwd);
    /* it started from positions or state stored before it was (re)defined */
    if (o)
        json_object_set_new(o, "resumed", sup_pipe_resumed_json(p));
    /* tables whose changes the writer parks: the pipeline goes on for its
     * other tables, so it stays "running" */
    char tables[ZX_SEG_WRITER_TABLES_MAX];
    zx_segment_read_text(&h->writer_tables_seq, h->writer_tables, sizeof(h->writer_tables),
                         tables, sizeof(tables));
    if (o)
        json_object_set_new(o, "blocked_tables", jstr_or_null(tables[0] ? tables : NULL));
    /* its long work in progress (progress.c), null when none */
    if (o) {
        json_t *pg = sup_progress_json(p);
        json_object_set_new(o, "progress", pg ? pg : json_null());
    }
    /* a shared workspace: the lease it runs under; without it, standby
     * (the holder named in last_error) */
    json_t *lj = o ? sup_lease_json(zx_the_sup, p) : NULL;
    char why[800];
    if (o)
        json_object_set_new(o, "lease", lj ? lj : json_null());
    if (lj && !p->removing && !c->pid && sup_lease_standby(zx_the_sup, p, why, sizeof(why))) {
        json_object_set_new(o, "state", json_string("standby"));
        json_object_set_new(o, "standby", json_string(why));
        json_object_set_new(o, "last_error", json_string(why));
    }
    json_t *sy = o ? sup_sync_status(zx_the_sup, p) : NULL;
    if (sy) {
        /* a sync's worker only lives for a run: "idle" says more than
         * "stopped" */
        json_object_set_new(o, "sync", sy);
        if (!c->pid && !p->removing && !json_object_get(o, "standby"))
            json_object_set_new(o, "state", json_string("idle"));
    }
    return o;
}

json_t *sup_cmd_status(sup *s, struct bufferevent *bev, const char *cmd, const char *name,
                       json_t *req)
{
    (void)bev;
    (void)cmd;
    (void)name;
    (void)req;
    char ts[ZX_TS_BUFSZ];
    zx_ts_format(s->started_us, ts);
    json_t *procs = json_array();
    json_array_append_new(procs, proc_obj(&s->writer));
    json_array_append_new(procs, proc_obj(&s->gateway));
    json_t *pipes = json_array();
    zx_store *st = open_store(s);
    zx_store_txn *t = NULL;
    if (st && zx_store_begin(st, 1, &t) != 0)
        t = NULL;
    for (size_t i = 0; i < s->npipes; i++) {
        json_t *po = pipe_obj(s->pipes[i], t);
        json_t *lv = sup_verify_last(s, s->pipes[i]->name);
        if (po && lv)
            json_object_set_new(po, "last_verify", lv);
        else
            json_decref(lv);
        json_array_append_new(pipes, po);
    }
    zx_store_abort(t);
    zx_store_close(st);
    uint64_t shm = 0;
    for (size_t i = 0; i < s->npipes; i++)
        shm += s->pipes[i]->seg.size;
    return json_pack("{s:b, s:s, s:i, s:s, s:s, s:o, s:o, s:{s:I, s:I}}", "ok", 1, "version",
                     "0.1.0", "pid", (int)s->pid, "config", s->conf->path, "started_at", ts,
                     "processes", procs, "pipelines", pipes, "rings", "shared_bytes",
                     (json_int_t)shm, "budget_bytes", (json_int_t)s->conf->ring_budget);
}

json_t *sup_cmd_progress(sup *s, struct bufferevent *bev, const char *cmd, const char *name,
                         json_t *req)
{
    (void)bev;
    (void)cmd;
    (void)req;
    spipe *p = sup_find_pipe(s, name);
    if (!p)
        return err_obj("no pipeline named '%s'", name);
    json_t *pg = sup_progress_json(p);
    json_t *o = json_pack("{s:b, s:s, s:o}", "ok", 1, "pipeline", p->name, "progress",
                          pg ? pg : json_null());
    /* a sync: the run its worker does, or none */
    json_t *sy = o ? sup_sync_status(s, p) : NULL;
    if (sy) {
        json_t *id = json_object_get(sy, "run_id");
        json_object_set(o, "run", id ? id : json_null());
        json_object_set(o, "state", json_object_get(sy, "state"));
    }
    json_decref(sy);
    return o;
}

/* A position part's value as the source stored it: an 8-byte value is
 * shown as the little-endian integer the sources write (a Kafka offset;
 * a 16-byte one is that offset and the fingerprint of the message before
 * it, shown as the offset), anything else as hex. */
static int pos_cb(const char *part, const void *val, size_t len, void *ctx)
{
    json_t *o = ctx;
    if (len == 8 || len == 16) {
        int64_t v;
        memcpy(&v, val, 8);
        json_object_set_new(o, part, json_integer((json_int_t)v));
        return 0;
    }
    char hex[129];
    size_t n = len > 64 ? 64 : len;
    for (size_t i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", ((const unsigned char *)val)[i]);
    hex[2 * n] = '\0';
    json_object_set_new(o, part, json_string(hex));
    return 0;
}

json_t *sup_cmd_checkpoints(sup *s, struct bufferevent *bev, const char *cmd,
                            const char *name, json_t *req)
{
    (void)bev;
    (void)cmd;
    (void)req;
    spipe *p = sup_find_pipe(s, name);
    if (!p)
        return err_obj("no pipeline named '%s'", name);
    zx_store *st = open_store(s);
    zx_store_txn *t = NULL;
    if (!st || zx_store_begin(st, 1, &t) != 0) {
        zx_store_close(st);
        return err_obj("the store is not readable yet (has the writer started?)", NULL);
    }
    zx_position pos;
    /* a postgres pipeline has no table of its own (its mirrors) */
    json_t *o = json_pack("{s:b, s:s, s:s}", "ok", 1, "pipeline", p->name, "table",
                          p->conf && p->conf->table ? p->conf->table : "");
    if (zx_store_position_get(t, p->name, &pos) == 0) {
        char ts[ZX_TS_BUFSZ];
        zx_ts_format(pos.committed_us, ts);
        json_object_set_new(o, "seq", json_integer((json_int_t)pos.seq));
        json_object_set_new(o, "committed_at", json_string(ts));
    } else {
        json_object_set_new(o, "seq", json_integer(0));
        json_object_set_new(o, "committed_at", json_null());
    }
    json_t *positions = json_object();
    zx_store_positions_each(t, p->name, pos_cb, positions);
    json_object_set_new(o, "positions", positions);
    const char *table = NULL, *js = NULL;
    size_t jl = 0;
    json_t *schema = NULL;
    if (zx_store_schema_get(t, p->name, &table, &js, &jl) == 0 && js)
        schema = json_loadb(js, jl, 0, NULL);
    json_object_set_new(o, "schema", schema ? schema : json_array());
    uint64_t v = 0;
    zx_store_counter_get(t, p->name, "rows", &v);
    json_object_set_new(o, "rows", json_integer((json_int_t)v));
    v = 0;
    zx_store_counter_get(t, p->name, "rejects", &v);
    json_object_set_new(o, "rejects", json_integer((json_int_t)v));
    json_t *rej = json_object();
    rej_ctx rc = {rej};
    zx_store_counters_each(t, p->name, rej_cb, &rc);
    json_object_set_new(o, "rejects_by_column", rej);
    json_object_set_new(o, "idempotency_keys",
                        json_integer((json_int_t)zx_store_idem_count(t, p->name)));
    json_object_set_new(o, "ring_published",
                        json_integer((json_int_t)zx_ring_published_seq(&p->seg.frames)));
    json_object_set_new(o, "ring_acked",
                        json_integer((json_int_t)zx_ring_acked_seq(&p->seg.frames)));
    zx_store_abort(t);
    zx_store_close(st);
    return o;
}
