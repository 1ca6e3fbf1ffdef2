/*
 * metrics.c — GET /metrics's text (metrics.h).
 *
 * Families, each with one sample per pipeline (label pipeline="NAME"):
 * what the writer counted into the segment (rows, rejects, nulled values,
 * columns added, frames, frame bytes, frame errors, last commit; commit
 * latency and rows per transaction as histograms), how far the source is
 * behind (from its status JSON), what the rings hold, the worker's
 * state and restarts, and what a forwarder says of itself; a reverse
 * sync's runs by outcome and their durations (counted by syncs.c in the
 * spipe).  Then the processes (writer, gateway): up and restarts.
 *
 * It must never read the store or a database, nor block: everything comes
 * from memory the supervisor owns or maps.  The segment counters are
 * running totals since the segment was made, seeded from the store when
 * the writer attaches, so they only fall when a pipeline is made anew
 * (which Prometheus takes as a counter reset).
 */
#include "supervisor/lease.h"
#include "supervisor/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/prom.h"
#include "common/ring.h"
#include "common/util.h"

/* What `zxctl status` calls p's state (status.c says the same): draining
 * while a reload removes it, blocked while the writer holds its frames
 * back, standby while another zxd holds its lease, idle for a sync
 * between runs. */
static const char *pipe_state(const spipe *p)
{
    const child *c = &p->worker;
    if (p->removing)
        return "draining";
    if (c->state == ST_RUNNING &&
        atomic_load_explicit(&p->seg.hdr->writer_error_set, memory_order_acquire))
        return "blocked";
    char why[800];
    if (!c->pid && sup_lease_standby(zx_the_sup, p, why, sizeof(why)))
        return "standby"; /* another zxd holds its lease (lease.h) */
    if (p->conf && zx_conf_is_sync(p->conf) && !c->pid)
        return "idle";
    return zx_state_name(c->state);
}

static const char *const states[] = {"stopped", "starting", "running", "backoff",
                                     "failed",  "draining", "blocked", "idle", "standby"};

/* A value of a pipeline: 0 and *v set, or -1 when it has none. */
typedef int (*pipe_val)(const spipe *p, double *v);

#define H(p) ((p)->seg.hdr)
static int v_rows(const spipe *p, double *v) { *v = (double)atomic_load(&H(p)->rows); return 0; }
static int v_rejects(const spipe *p, double *v) { *v = (double)atomic_load(&H(p)->rejects); return 0; }
static int v_frames(const spipe *p, double *v) { *v = (double)atomic_load(&H(p)->batches); return 0; }
static int v_bytes(const spipe *p, double *v) { *v = (double)atomic_load(&H(p)->bytes); return 0; }
static int v_frame_errors(const spipe *p, double *v)
{
    *v = (double)atomic_load(&H(p)->frame_errors);
    return 0;
}
static int v_last_commit(const spipe *p, double *v)
{
    int64_t us = atomic_load(&H(p)->last_commit_us);
    if (us <= 0)
        return -1;
    *v = (double)us / 1e6;
    return 0;
}
static int v_nulled(const spipe *p, double *v)
{
    *v = (double)atomic_load(&H(p)->values_nulled);
    return 0;
}
static int v_columns(const spipe *p, double *v)
{
    *v = (double)atomic_load(&H(p)->columns_added);
    return 0;
}
static int v_fenced(const spipe *p, double *v)
{
    *v = (double)atomic_load(&H(p)->frames_fenced);
    return 0;
}
static int v_fence_dups(const spipe *p, double *v)
{
    *v = (double)atomic_load(&H(p)->fence_duplicates);
    return 0;
}
static int v_fence_gaps(const spipe *p, double *v)
{
    *v = (double)atomic_load(&H(p)->fence_gaps);
    return 0;
}
static int v_restarts(const spipe *p, double *v) { *v = p->worker.restarts; return 0; }
static int v_up(const spipe *p, double *v)
{
    *v = p->worker.pid && p->worker.state == ST_RUNNING;
    return 0;
}
static int v_pending(const spipe *p, double *v)
{
    *v = (double)(zx_ring_published_seq(&p->seg.frames) - zx_ring_acked_seq(&p->seg.frames));
    return 0;
}
static int v_shared(const spipe *p, double *v) { *v = (double)p->seg.size; return 0; }
static int v_source_error(const spipe *p, double *v)
{
    char e[ZX_SEG_SOURCE_ERROR_MAX];
    zx_seg_hdr *h = H(p);
    *v = zx_segment_read_text(&h->source_error_seq, h->source_error, sizeof(h->source_error),
                              e, sizeof(e)) > 0;
    return 0;
}

typedef struct pipe_family {
    const char *name, *type, *help;
    pipe_val get;
} pipe_family;

static const pipe_family pipe_families[] = {
    {"zx_rows_written_total", "counter", "Rows the writer committed to the workspace.", v_rows},
    {"zx_rejects_total", "counter", "Values or messages the writer stored in a __rejects table.",
     v_rejects},
    {"zx_values_nulled_total", "counter",
     "Misfit values the writer stored as NULL (each also a row of __rejects).", v_nulled},
    {"zx_columns_added_total", "counter",
     "Columns the writer added to the pipeline's tables (those of a new table too).",
     v_columns},
    {"zx_frames_written_total", "counter", "Frames the writer applied and committed.", v_frames},
    {"zx_frame_bytes_written_total", "counter", "Bytes of the frames the writer committed.",
     v_bytes},
    {"zx_frame_errors_total", "counter", "Frames the writer could not decode.", v_frame_errors},
    {"zx_frames_fenced_total", "counter",
     "Frames whose rows the writer left out because another zxd of the shared workspace had "
     "written that upstream range (since the pipeline's segment was made).", v_fenced},
    {"zx_fence_duplicates_total", "counter",
     "Frames refused because they began below the stored position (a bug: see the log).",
     v_fence_dups},
    {"zx_fence_gaps_total", "counter",
     "Frames applied that began past the position their source started from (a compacted "
     "topic, transaction markers).", v_fence_gaps},
    {"zx_last_commit_timestamp_seconds", "gauge",
     "Wall clock of the writer's last commit of the pipeline's frames (Unix seconds).",
     v_last_commit},
    {"zx_pipeline_up", "gauge", "1 while the pipeline's worker runs.", v_up},
    {"zx_pipeline_restarts_total", "counter",
     "Unplanned exits of the pipeline's worker since zxd started.", v_restarts},
    {"zx_frames_pending", "gauge",
     "Frames published into the frames ring and not yet committed by the writer.", v_pending},
    {"zx_shared_memory_bytes", "gauge", "Bytes of the pipeline's shared-memory segment.",
     v_shared},
    {"zx_source_error", "gauge",
     "1 while the pipeline's source reports a problem (zxctl status: source_error).",
     v_source_error},
};

/* The forwarder's status (forward.h), parsed; NULL when p does not forward
 * or has said nothing yet.  The caller decrefs. */
static json_t *forward_status(const spipe *p)
{
    char fst[ZX_SEG_FORWARD_STATUS_MAX];
    zx_seg_hdr *h = H(p);
    if (!p->conf || !zx_conf_forwards(p->conf) ||
        !zx_segment_read_text(&h->forward_status_seq, h->forward_status,
                              sizeof(h->forward_status), fst, sizeof(fst)))
        return NULL;
    json_t *o = json_loads(fst, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static void rings(zx_prom *m, sup *s)
{
    static const char *const fam[2][2] = {
        {"zx_ring_used_bytes", "Bytes in use in a ring of the pipeline's segment."},
        {"zx_ring_capacity_bytes", "Capacity of a ring of the pipeline's segment."}};
    for (int f = 0; f < 2; f++) {
        zx_prom_family(m, fam[f][0], "gauge", fam[f][1]);
        for (size_t i = 0; i < s->npipes; i++) {
            spipe *p = s->pipes[i];
            const zx_ring *r[3] = {&p->seg.frames, &p->seg.in, &p->seg.out};
            static const char *const rn[3] = {"frames", "in", "out"};
            int n = H(p)->in_size ? 3 : 1;   /* in and out: sources the gateway feeds */
            for (int k = 0; k < n; k++) {
                zx_prom_label l[2] = {{"pipeline", p->name}, {"ring", rn[k]}};
                zx_prom_u(m, fam[f][0], l, 2,
                          f ? zx_ring_capacity(r[k]) : zx_ring_used_bytes(r[k]));
            }
        }
    }
    zx_prom_family(m, "zx_ring_budget_bytes", "gauge",
                   "server.ring_budget: the shared memory all segments may map.");
    zx_prom_u(m, "zx_ring_budget_bytes", NULL, 0, s->conf->ring_budget);
}

static void forwards(zx_prom *m, sup *s)
{
    static const char *const fam[][4] = {
        {"zx_forward_frames_total", "counter", "frames",
         "Frames the pipeline's forwarder published (since its worker started)."},
        {"zx_forward_rows_total", "counter", "rows",
         "Rows the pipeline's forwarder published (since its worker started)."},
        {"zx_forward_deletes_total", "counter", "deletes",
         "Deletes the pipeline's forwarder published (since its worker started)."},
        {"zx_forward_pending_frames", "gauge", "pending_frames",
         "Frames committed but not yet published by the forwarder (its journal)."},
        {"zx_forward_oldest_pending_seconds", "gauge", "oldest_pending_ms",
         "Age of the oldest frame the forwarder has yet to publish."},
        {"zx_forward_error", "gauge", "last_error",
         "1 while the forwarder's last attempt failed."},
    };
    json_t *st[ZX_MAX_PIPELINES];
    size_t n = 0;
    for (size_t i = 0; i < s->npipes; i++)
        if ((st[i] = forward_status(s->pipes[i])))
            n++;
    for (size_t f = 0; n && f < sizeof(fam) / sizeof(fam[0]); f++) {
        zx_prom_family(m, fam[f][0], fam[f][1], fam[f][3]);
        for (size_t i = 0; i < s->npipes; i++) {
            json_t *v = st[i] ? json_object_get(st[i], fam[f][2]) : NULL;
            zx_prom_label l = {"pipeline", s->pipes[i]->name};
            if (!st[i])
                continue;
            if (!strcmp(fam[f][2], "last_error"))
                zx_prom_u(m, fam[f][0], &l, 1, v && !json_is_null(v));
            else if (json_is_integer(v))
                zx_prom_f(m, fam[f][0], &l, 1,
                          (double)json_integer_value(v) /
                              (strstr(fam[f][2], "_ms") ? 1000.0 : 1.0));
        }
    }
    for (size_t i = 0; i < s->npipes; i++)
        json_decref(st[i]);
}

/* A histogram family over every pipeline: slot counts (nslots, the last
 * past every bound) made cumulative, bounds scaled by scale, and the sum. */
typedef struct histo {
    const char *name, *help;
    const uint64_t *bounds;
    size_t nslots;
    double scale;
    size_t slots_off, sum_off;  /* offsets in zx_seg_hdr */
} histo;

static void histogram(zx_prom *m, sup *s, const histo *hg)
{
    char bucket[96], sum[96], count[96], le[32];
    snprintf(bucket, sizeof(bucket), "%s_bucket", hg->name);
    snprintf(sum, sizeof(sum), "%s_sum", hg->name);
    snprintf(count, sizeof(count), "%s_count", hg->name);
    zx_prom_family(m, hg->name, "histogram", hg->help);
    for (size_t i = 0; i < s->npipes; i++) {
        const spipe *p = s->pipes[i];
        const _Atomic uint64_t *slots =
            (const _Atomic uint64_t *)((const char *)H(p) + hg->slots_off);
        uint64_t total = 0;
        for (size_t k = 0; k < hg->nslots; k++) {
            total += atomic_load_explicit(&slots[k], memory_order_relaxed);
            if (k + 1 < hg->nslots)
                snprintf(le, sizeof(le), "%g", (double)hg->bounds[k] * hg->scale);
            else
                snprintf(le, sizeof(le), "+Inf");
            zx_prom_label l[2] = {{"pipeline", p->name}, {"le", le}};
            zx_prom_u(m, bucket, l, 2, total);
        }
        zx_prom_label l = {"pipeline", p->name};
        const _Atomic uint64_t *sp = (const _Atomic uint64_t *)((const char *)H(p) + hg->sum_off);
        zx_prom_f(m, sum, &l, 1, (double)atomic_load_explicit(sp, memory_order_relaxed) *
                                     hg->scale);
        zx_prom_u(m, count, &l, 1, total);
    }
}

static void histograms(zx_prom *m, sup *s)
{
    static const uint64_t lat[] = ZX_SEG_LAT_BOUNDS_US, txn[] = ZX_SEG_TXN_BOUNDS;
    const histo hg[2] = {
        {"zx_commit_latency_seconds",
         "Time from a frame's ingestion by its source to the writer's commit of it.", lat,
         ZX_SEG_LAT_SLOTS, 1e-6, offsetof(zx_seg_hdr, commit_lat),
         offsetof(zx_seg_hdr, commit_lat_sum_us)},
        {"zx_writer_transaction_rows",
         "Rows of the pipeline in each writer transaction that committed its frames.", txn,
         ZX_SEG_TXN_SLOTS, 1.0, offsetof(zx_seg_hdr, txn_rows),
         offsetof(zx_seg_hdr, txn_rows_sum)},
    };
    for (size_t k = 0; k < 2; k++)
        histogram(m, s, &hg[k]);
}

/* The source's status (a JSON object the worker wrote), parsed; NULL when
 * it has none.  The caller decrefs. */
static json_t *source_status(const spipe *p)
{
    static char st[ZX_SEG_SOURCE_STATUS_MAX];
    zx_seg_hdr *h = H(p);
    if (!zx_segment_read_text(&h->source_status_seq, h->source_status,
                              sizeof(h->source_status), st, sizeof(st)))
        return NULL;
    json_t *o = json_loads(st, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* One gauge sample of pipeline p from number field key of o (scaled). */
static void lag_sample(zx_prom *m, const char *name, const spipe *p, json_t *o,
                       const char *key, double scale)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v) || json_number_value(v) < 0)
        return;
    zx_prom_label l = {"pipeline", p->name};
    zx_prom_f(m, name, &l, 1, json_number_value(v) * scale);
}

/* How far each source is behind its upstream, from what it says of itself
 * (workers/sources/: Kafka partitions' lag in messages, Kinesis'
 * MillisBehindLatest, Postgres' WAL bytes and seconds not yet confirmed). */
static void lags(zx_prom *m, sup *s)
{
    json_t *st[ZX_MAX_PIPELINES];
    for (size_t i = 0; i < s->npipes; i++)
        st[i] = source_status(s->pipes[i]);
    zx_prom_family(m, "zx_source_lag_messages", "gauge",
                   "Messages of a Kafka partition past what the pipeline has read.");
    for (size_t i = 0; i < s->npipes; i++) {
        json_t *parts = st[i] ? json_object_get(st[i], "partitions") : NULL;
        size_t k;
        json_t *e;
        json_array_foreach(parts, k, e) {
            json_t *t = json_object_get(e, "topic"), *pa = json_object_get(e, "partition"),
                   *lag = json_object_get(e, "lag");
            if (!json_is_string(t) || !json_is_integer(pa) || !json_is_integer(lag))
                continue;
            char pn[24];
            snprintf(pn, sizeof(pn), "%lld", (long long)json_integer_value(pa));
            zx_prom_label l[3] = {{"pipeline", s->pipes[i]->name}, {"topic", json_string_value(t)},
                                  {"partition", pn}};
            zx_prom_f(m, "zx_source_lag_messages", l, 3, (double)json_integer_value(lag));
        }
    }
    zx_prom_family(m, "zx_source_lag_seconds", "gauge",
                   "How far behind its upstream the source reads: Kinesis' MillisBehindLatest, "
                   "or the age of the oldest Postgres change not yet committed.");
    for (size_t i = 0; i < s->npipes; i++) {
        if (!st[i])
            continue;
        lag_sample(m, "zx_source_lag_seconds", s->pipes[i], st[i], "millis_behind", 1e-3);
        lag_sample(m, "zx_source_lag_seconds", s->pipes[i], st[i], "lag_seconds", 1.0);
    }
    zx_prom_family(m, "zx_source_lag_bytes", "gauge",
                   "Postgres: WAL bytes between the server's end and the confirmed LSN.");
    for (size_t i = 0; i < s->npipes; i++)
        if (st[i])
            lag_sample(m, "zx_source_lag_bytes", s->pipes[i], st[i], "lag_bytes", 1.0);
    zx_prom_family(m, "zx_source_retained_wal_bytes", "gauge",
                   "Postgres: WAL the server keeps for the pipeline's slot.");
    for (size_t i = 0; i < s->npipes; i++)
        if (st[i])
            lag_sample(m, "zx_source_retained_wal_bytes", s->pipes[i], st[i],
                       "retained_wal_bytes", 1.0);
    for (size_t i = 0; i < s->npipes; i++)
        json_decref(st[i]);
}

/* Long work in progress (a sync run, the CDC initial copy): rows done,
 * rows expected (when known) and the rate, per pipeline while it runs
 * (sup_progress_json; no sample when the pipeline has none). */
static void progress(zx_prom *m, sup *s)
{
    static const char *const fam[3][3] = {
        {"zx_progress_done_rows", "done",
         "Rows done by the pipeline's long work in progress (a sync run, an initial copy)."},
        {"zx_progress_expected_rows", "expected",
         "Rows the work in progress expects in all (a previous run's, or an estimate)."},
        {"zx_progress_rows_per_second", "rate", "Rate of the work in progress over ~5 s."},
    };
    json_t *pg[ZX_MAX_PIPELINES];
    for (size_t i = 0; i < s->npipes; i++)
        pg[i] = sup_progress_json(s->pipes[i]);
    for (size_t f = 0; f < 3; f++) {
        zx_prom_family(m, fam[f][0], "gauge", fam[f][2]);
        for (size_t i = 0; i < s->npipes; i++) {
            json_t *v = pg[i] ? json_object_get(pg[i], fam[f][1]) : NULL;
            zx_prom_label l = {"pipeline", s->pipes[i]->name};
            if (json_is_number(v))
                zx_prom_f(m, fam[f][0], &l, 1, json_number_value(v));
        }
    }
    for (size_t i = 0; i < s->npipes; i++)
        json_decref(pg[i]);
}

/* Reverse syncs: runs ended by outcome, and the time those that ran took
 * (a summary without quantiles: _sum and _count). */
static void sync_runs(zx_prom *m, sup *s)
{
    static const char *const outcomes[] = SUP_RUN_OUTCOMES;
    size_t nsync = 0;
    for (size_t i = 0; i < s->npipes; i++)
        nsync += s->pipes[i]->conf && zx_conf_is_sync(s->pipes[i]->conf);
    if (!nsync)
        return;
    zx_prom_family(m, "zx_sync_runs_total", "counter",
                   "Runs of the reverse sync that ended since zxd started, by outcome.");
    for (size_t i = 0; i < s->npipes; i++) {
        const spipe *p = s->pipes[i];
        if (!p->conf || !zx_conf_is_sync(p->conf))
            continue;
        for (size_t k = 0; k < sizeof(outcomes) / sizeof(outcomes[0]); k++) {
            zx_prom_label l[2] = {{"pipeline", p->name}, {"outcome", outcomes[k]}};
            zx_prom_u(m, "zx_sync_runs_total", l, 2, p->runs_ended[k]);
        }
    }
    zx_prom_family(m, "zx_sync_run_duration_seconds", "summary",
                   "Time the reverse sync's ended runs took from start to end.");
    for (size_t i = 0; i < s->npipes; i++) {
        const spipe *p = s->pipes[i];
        zx_prom_label l = {"pipeline", p->name};
        if (!p->conf || !zx_conf_is_sync(p->conf))
            continue;
        zx_prom_f(m, "zx_sync_run_duration_seconds_sum", &l, 1, p->run_seconds);
        zx_prom_u(m, "zx_sync_run_duration_seconds_count", &l, 1, p->runs_timed);
    }
}

static void processes(zx_prom *m, sup *s)
{
    const child *c[2] = {&s->writer, &s->gateway};
    zx_prom_family(m, "zx_process_up", "gauge", "1 while the process runs.");
    for (int k = 0; k < 2; k++) {
        zx_prom_label l = {"process", c[k]->name};
        zx_prom_u(m, "zx_process_up", &l, 1, c[k]->pid && c[k]->state == ST_RUNNING);
    }
    zx_prom_family(m, "zx_process_restarts_total", "counter",
                   "Unplanned exits of the process since zxd started.");
    for (int k = 0; k < 2; k++) {
        zx_prom_label l = {"process", c[k]->name};
        zx_prom_u(m, "zx_process_restarts_total", &l, 1, c[k]->restarts);
    }
}

char *sup_metrics_text(sup *s, size_t *len)
{
    zx_prom m;
    /* room kept for the truncation line */
    zx_prom_init(&m, SUP_METRICS_MAX - 256);
    zx_prom_family(&m, "zx_start_time_seconds", "gauge", "When zxd started (Unix seconds).");
    zx_prom_f(&m, "zx_start_time_seconds", NULL, 0, (double)s->started_us / 1e6);
    processes(&m, s);
    for (size_t f = 0; f < sizeof(pipe_families) / sizeof(pipe_families[0]); f++) {
        const pipe_family *pf = &pipe_families[f];
        zx_prom_family(&m, pf->name, pf->type, pf->help);
        for (size_t i = 0; i < s->npipes; i++) {
            double v;
            zx_prom_label l = {"pipeline", s->pipes[i]->name};
            if (pf->get(s->pipes[i], &v) == 0)
                zx_prom_f(&m, pf->name, &l, 1, v);
        }
    }
    zx_prom_family(&m, "zx_pipeline_state", "gauge",
                   "1 for the pipeline's state (as zxctl status shows it), 0 for the others.");
    for (size_t i = 0; i < s->npipes; i++) {
        const char *cur = pipe_state(s->pipes[i]);
        for (size_t k = 0; k < sizeof(states) / sizeof(states[0]); k++) {
            zx_prom_label l[2] = {{"pipeline", s->pipes[i]->name}, {"state", states[k]}};
            zx_prom_u(&m, "zx_pipeline_state", l, 2, !strcmp(cur, states[k]));
        }
    }
    histograms(&m, s);
    lags(&m, s);
    rings(&m, s);
    forwards(&m, s);
    progress(&m, s);
    sync_runs(&m, s);
    int cut = m.full;
    m.full = 0;
    m.max = SUP_METRICS_MAX;
    zx_prom_family(&m, "zx_metrics_truncated", "gauge",
                   "1 when this text was cut at its size limit (whole lines left out).");
    zx_prom_u(&m, "zx_metrics_truncated", NULL, 0, (uint64_t)cut);
    if (m.full || !m.buf) {
        zx_prom_free(&m);
        return NULL;
    }
    *len = m.len;
    return m.buf;
}

int sup_text_memfd(const char *name, const char *txt, size_t len)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    size_t off = 0;
    while (fd >= 0 && off < len) {
        ssize_t w = write(fd, txt + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            fd = -1;
            errno = e ? e : EIO;
            break;
        }
        off += (size_t)w;
    }
    if (fd >= 0)
        (void)fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
    return fd;
}

int sup_metrics_memfd(sup *s, size_t *len)
{
    char *txt = sup_metrics_text(s, len);
    if (!txt) {
        errno = ENOMEM;
        return -1;
    }
    int fd = sup_text_memfd("zx-metrics", txt, *len);
    int e = errno;
    free(txt);
    errno = e;
    return fd;
}
