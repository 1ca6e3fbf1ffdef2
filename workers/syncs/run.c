/*
 * run.c — one run of a reverse sync (run.h): the worker that runs its
 * stages in order (read, compare, deliver, record: run_int.h names their
 * files) and publishes the run's status.
 *
 * It must never: write the store (the writer does, from the row-hashes
 * frames), send a row-hashes frame before the destination committed, hold
 * a read transaction of the store across more than one batch, or keep the
 * whole result in memory.
 */
#include "workers/syncs/run_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "proto/frame.h"
#include "workers/destinations/dest.h"
#include "workers/syncs/hash.h"
#include "workers/syncs/query.h"
#include "workers/syncs/spill.h"
#include "store/store.h"

/* ---- status ------------------------------------------------------------- */

/* The generic progress (source.h) of the phase the run is in: reading
 * (rows read of those expected), comparing (keys merged of the rows
 * read), sending (rows sent of those to send), recording; none once the
 * run is over. */
static void run_put_progress(srun *r, const char *state)
{
    if (strcmp(state, "running") || !r->phase || !strcmp(r->phase, "done")) {
        zx_src_set_progress(r->rt, NULL, 0, 0, 0, 0);
        return;
    }
    uint64_t done = r->read, expected = r->expect_read;
    unsigned flags = 0;
    if (!strcmp(r->phase, "comparing")) {
        done = r->compared;
        expected = r->read;
        flags = ZX_SEG_PROGRESS_EXACT;
    } else if (r->q && !strcmp(r->phase, "sending")) {
        /* streamed: sent as read, of the rows it expects to read */
        done = r->sent;
    } else if (!strcmp(r->phase, "sending") || !strcmp(r->phase, "recording")) {
        done = r->sent;
        expected = r->to_send;
        flags = ZX_SEG_PROGRESS_EXACT;
    }
    zx_src_set_progress(r->rt, r->phase, done, expected, flags, r->started_us);
}

void run_put_status(srun *r, const char *state)
{
    int64_t now = zx_mono_ms();
    double secs = (double)(now - r->started_ms) / 1000.0;
    uint64_t done = !strcmp(r->phase, "sending") ? r->sent : r->read;
    double rate = secs > 0.05 ? (double)done / secs : 0;
    /* a failed run sent none of the rows it was to send; a streamed one
     * knows those only as far as it read (each row read was to be sent) */
    uint64_t unsent = r->to_send;
    if ((r->stream || r->stream_keyed) && r->read > unsent)
        unsent = r->read;
    json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}",
                          "run", "", "state", state, "phase", r->phase,
                          "rows_read", (json_int_t)r->read,
                          "rows_inserted", (json_int_t)r->inserted,
                          "rows_updated", (json_int_t)r->updated,
                          "rows_unchanged", (json_int_t)r->unchanged,
                          "rows_deleted", (json_int_t)r->deleted,
                          "rows_sent", (json_int_t)r->sent,
                          "rows_failed", (json_int_t)(strcmp(state, "failed")
                                                      ? r->dstats.rows_failed : unsent),
                          "values_nulled", (json_int_t)r->dstats.nulled,
                          "bytes", (json_int_t)r->dstats.bytes,
                          "rows_per_second", rate);
    if (!o)
        return;
    char id[24];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)r->id);
    json_object_set_new(o, "run", json_string(id));
    json_object_set_new(o, "mode", json_string(r->o->mode == ZX_MODE_REPLACE ? "replace"
                                               : r->o->mode == ZX_MODE_APPEND ? "append"
                                               : r->o->mode == ZX_MODE_UPSERT ? "upsert"
                                               : "mirror"));
    if (!strcmp(state, "running") && !strcmp(r->phase, "sending") && rate > 0 &&
        r->to_send > r->sent)
        json_object_set_new(o, "seconds_left",
                            json_real((double)(r->to_send - r->sent) / rate));
    if (!strcmp(state, "running") && !strcmp(r->phase, "sending") && !r->q)
        /* (not known while a streamed run still reads) */
        json_object_set_new(o, "rows_to_send", json_integer((json_int_t)r->to_send));
    if (r->dstats.files || r->dstats.files_removed) {
        json_object_set_new(o, "files_added", json_integer((json_int_t)r->dstats.files));
        json_object_set_new(o, "files_removed",
                            json_integer((json_int_t)r->dstats.files_removed));
    }
    if (r->cursor_idx >= 0) {
        /* the mark it read past (null: it read everything), the greatest
         * value it read */
        json_object_set_new(o, "cursor_from", r->cursor_run
                            ? json_string(run_cursor_text(&r->mark_old)) : json_null());
        if (r->mark_new.kind != ZX_CURSOR_NONE)
            json_object_set_new(o, "cursor_mark", json_string(run_cursor_text(&r->mark_new)));
    }
    if (r->dstats.made[0])
        json_object_set_new(o, "made", json_string(r->dstats.made));
    /* destinations that send requests (dest.h) */
    if (r->dstats.batches || r->dstats.batches_retried || r->dstats.batches_failed) {
        json_object_set_new(o, "batches", json_integer((json_int_t)r->dstats.batches));
        json_object_set_new(o, "batches_retried",
                            json_integer((json_int_t)r->dstats.batches_retried));
        json_object_set_new(o, "batches_failed",
                            json_integer((json_int_t)r->dstats.batches_failed));
    }
    if (r->dstats.first_error[0])
        json_object_set_new(o, "first_error", json_string(r->dstats.first_error));
    if (r->err[0])
        json_object_set_new(o, "error", json_string(r->err));
    if (r->key_changed)
        json_object_set_new(o, "note", json_string("the key columns changed since the last "
                                                   "run: every row was sent, and rows of "
                                                   "the old keys were not deleted (a run in "
                                                   "replace mode drops them)"));
    if (!strcmp(state, "previewed")) {
        json_object_set(o, "sample", r->sample ? r->sample : json_array());
        json_object_set(o, "sample_deletes", r->sample_deletes ? r->sample_deletes
                                                                : json_array());
    }
    char *js = json_dumps(o, JSON_COMPACT);
    if (js && strlen(js) >= ZX_SEG_SOURCE_STATUS_MAX) {
        /* too big for the segment (a wide sample): drop the sample */
        json_object_del(o, "sample");
        json_object_del(o, "sample_deletes");
        free(js);
        js = json_dumps(o, JSON_COMPACT);
    }
    if (js)
        zx_src_set_status(r->rt, js);
    free(js);
    json_decref(o);
    run_put_progress(r, state);
    r->last_status_ms = now;
}

/* Enter phase ph ("reading", "comparing", "sending", "recording"): the
 * time spent in each is logged when the run ends. */
void run_set_phase(srun *r, const char *ph)
{
    int64_t now = zx_mono_ms();
    static const char *const names[] = {"reading", "comparing", "sending", "recording"};
    for (int i = 0; i < 4; i++)
        if (r->phase && !strcmp(r->phase, names[i]))
            r->phase_ms[i] += now - r->phase_at;
    r->phase = ph;
    r->phase_at = now;
}

void run_progress(srun *r)
{
    if (zx_mono_ms() - r->last_status_ms >= 500)
        run_put_status(r, "running");
}

/* ---- the worker --------------------------------------------------------- */

static void cleanup(srun *r)
{
    if (r->dest_begun && r->dest && r->dest->abort)
        r->dest->abort(r->dstate);
    r->dest_begun = 0;
    if (r->dest && r->dest->close && r->dstate)
        r->dest->close(r->dstate);
    r->dstate = NULL;
    zx_query_close(r->q);
    r->q = NULL;
    zx_store_close(r->store);
    r->store = NULL;
    zx_spill_close(&r->rows);
    zx_spill_close(&r->hashes);
    zx_spill_close(&r->deletes);
    zx_spill_close(&r->pre);
    zx_keysort_free(r->keys);
    r->keys = NULL;
}

/* Tests only (the writer's ZX_FAULT_INJECTION, tests/integration/
 * test_syncs.py): with ZX_FAULT_INJECTION=1 in the environment and the
 * file <data_dir>/fault-sync-exit-<point> present, the run removes it and
 * exits there: "after-commit", right after the destination committed,
 * before any hash is recorded (or confirmed); "before-commit", once the
 * writer stored the hashes recorded before the commit (run_hashes_early),
 * before the destination commits: runs cut at their worst moments. */
static void fault_point(const srun *r, const char *point, const char *logname)
{
    const char *fi = getenv("ZX_FAULT_INJECTION");
    if (!fi || strcmp(fi, "1"))
        return;
    char path[4200];
    snprintf(path, sizeof(path), "%s/fault-sync-exit-%s", r->conf->data_dir, point);
    if (unlink(path) == 0) {
        while (zx_src_acked_seq(r->rt) < zx_src_published_seq(r->rt) &&
               !zx_src_stopping(r->rt))
            zx_src_wait(r->rt, 50);
        zx_warn("event=fault_injection point=sync_%s sync=%s", logname, r->name);
        _exit(70);
    }
}

static int sync_do(srun *r)
{
    char serr[512];
    r->budget.limit = r->o->max_spill_bytes ? r->o->max_spill_bytes
                                            : r->conf->sync_max_spill_bytes;
    if (zx_spill_open(&r->rows, r->tmpdir, &r->budget, serr, sizeof(serr)) < 0 ||
        zx_spill_open(&r->hashes, r->tmpdir, &r->budget, serr, sizeof(serr)) < 0 ||
        zx_spill_open(&r->deletes, r->tmpdir, &r->budget, serr, sizeof(serr)) < 0 ||
        zx_spill_open(&r->pre, r->tmpdir, &r->budget, serr, sizeof(serr)) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: %s", r->name, serr);
    if (!r->p->auth)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: author %s is not configured",
                         r->name, r->o->author ? r->o->author : "?");
    /* replace and append without a key: streamed, read and sent at once
     * (when the types are known before the first row: read_result) */
    r->stream = !r->preview && !r->o->nkey_cols && !r->hashed;
    if (run_open_dest(r) < 0 || run_read_result(r) < 0 || run_merge_keys(r) < 0)
        return -1;
    if (r->preview)
        return r->hashed ? run_sample_marked(r) : 0;
    if (r->stream)
        return (!r->dest_begun && run_deliver_begin(r) < 0) || run_deliver_end(r) < 0 ? -1 : 0;
    /* a mirror's new keys are recorded before anything is committed (sent,
     * where the destination has no transaction) */
    if (r->hashed && r->o->mode == ZX_MODE_MIRROR && r->inserted && run_prerecord(r) < 0)
        return -1;
    if (r->stream_keyed) {
        /* every row was sent while reading; the keys had no duplicate */
        run_set_phase(r, "sending");
        if (!r->dest_begun && run_deliver_begin(r) < 0)
            return -1;
        /* an upsert's hashes go to the writer while the destination builds
         * its key (prepare) and commits: unconfirmed until it did */
        if (run_hashes_early(r)) {
            r->unconfirmed = r->id;
            r->unconfirmed_failed = r->nfailed_ord + r->nfailed_kh;
            if (run_record_hashes(r) < 0)
                return -1;
            fault_point(r, "before-commit", "before_commit");
            run_set_phase(r, "sending");
        }
        if (run_deliver_end(r) < 0)
            return -1;
    } else if (run_deliver(r) < 0) {
        return -1;
    }
    fault_point(r, "after-commit", "after_commit");
    if (r->unconfirmed)
        return run_confirm_hashes(r);
    if (r->hashed && run_record_hashes(r) < 0)
        return -1;
    return 0;
}

static int sync_open(zx_src *rt, void **state, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const zx_worker_args *a = zx_src_args(rt);
    srun *r = calloc(1, sizeof(*r));
    if (!r)
        return zx_seterr(err, errlen, "out of memory");
    r->rt = rt;
    r->conf = a->conf;
    r->p = a->pipeline;
    r->o = zx_sync_opts_of(a->pipeline);
    r->name = a->pipeline->name;
    if (!r->o) {
        free(r);
        return zx_seterr(err, errlen, "pipeline %s is not a reverse sync (direction: out): "
                         "it has no query to run", a->pipeline->name);
    }
    r->id = a->run_id;
    r->preview = (a->run_flags & ZX_RUN_PREVIEW) != 0;
    r->full = (a->run_flags & ZX_RUN_FULL) != 0;
    r->cursor_idx = -1;
    r->hashed = (r->o->mode == ZX_MODE_UPSERT || r->o->mode == ZX_MODE_MIRROR) &&
                !(a->run_flags & ZX_RUN_ONEOFF);
    r->phase = "starting";
    r->started_ms = zx_mono_ms();
    r->started_us = zx_now_us();
    r->expect_read = a->run_expect_rows;
    snprintf(r->tmpdir, sizeof(r->tmpdir), "%s/tmp", a->conf->data_dir);
    zx_rowset_init(&r->rs);
    zx_rowset_init(&r->send);
    zx_buf_init(&r->fb);
    r->sample = json_array();
    r->sample_deletes = json_array();
    r->dups = json_array();
    *state = r;
    return 0;
}

static int sync_poll(zx_src *rt, void *state)
{
    (void)rt;
    srun *r = state;
    if (r->phase && !strcmp(r->phase, "done"))
        return ZX_SRC_DONE;
    int rc = sync_do(r);
    if (rc < 0 && r->budget.exceeded)
        /* whichever spill hit it, the cause is the bound */
        zx_seterr(r->err, sizeof(r->err), "sync %s: the run's temporary files reached its "
                  "max_spill_bytes (%llu bytes, in %s) after %llu rows read; nothing was "
                  "committed (raise max_spill_bytes of the sync, or "
                  "server.sync_max_spill_bytes, or narrow the query)", r->name,
                  (unsigned long long)r->budget.limit, r->tmpdir,
                  (unsigned long long)r->read);
    const char *final = rc < 0 ? "failed" : r->preview ? "previewed" : "succeeded";
    if (rc < 0 && r->dest_begun)
        r->sent = 0;   /* rolled back: nothing of it was committed */
    cleanup(r);
    run_set_phase(r, "done");   /* the run is over, whatever its outcome */
    if (rc < 0) {
        zx_error("event=sync_failed sync=%s run=%llu error=\"%s\"", r->name,
                 (unsigned long long)r->id, r->err);
    } else {
        zx_info("event=sync_done sync=%s run=%llu state=%s read=%llu sent=%llu deleted=%llu "
                "unchanged=%llu sent_while_reading=%s reading_ms=%lld comparing_ms=%lld "
                "sending_ms=%lld recording_ms=%lld", r->name, (unsigned long long)r->id, final,
                (unsigned long long)r->read, (unsigned long long)r->sent,
                (unsigned long long)r->deleted, (unsigned long long)r->unchanged,
                r->stream || r->stream_keyed ? "yes" : "no", (long long)r->phase_ms[0], (long long)r->phase_ms[1], (long long)r->phase_ms[2],
                (long long)r->phase_ms[3]);
    }
    run_put_status(r, final);
    return ZX_SRC_DONE;
}

static void sync_close(zx_src *rt, void *state)
{
    (void)rt;
    srun *r = state;
    if (!r)
        return;
    cleanup(r);
    zx_rowset_free(&r->rs);
    zx_rowset_free(&r->send);
    zx_buf_free(&r->fb);
    zx_buf_free(&r->scratch);
    zx_buf_free(&r->kv);
    zx_buf_free(&r->rec);
    json_decref(r->sample);
    json_decref(r->sample_deletes);
    json_decref(r->dups);
    free(r->keysig);
    free(r->marks);
    free(r->upd_marks);
    free(r->failed_ord);
    free(r->batch_ord);
    free(r->failed_kh);
    free(r->batch_kh);
    free(r->vals);
    for (size_t i = 0; r->cols && i < r->ncols; i++)
        free((char *)r->cols[i].name);
    free((void *)r->cols);
    free(r);
}

const zx_source zx_source_sync = {
    .name = "sync",
    .flags = ZX_SOURCE_POSITIONS,   /* waits for the writer: its hashes must
                                       be the committed ones */
    .help = "one run of a reverse sync (direction: out)",
    .open = sync_open,
    .poll = sync_poll,
    .close = sync_close,
};
