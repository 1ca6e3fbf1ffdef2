/*
 * run_deliver.c — stage 3 of a run (run_int.h): deliver.  The
 * destination (workers/destinations/dest.h) is opened, then gets begin,
 * the rows read back from the spill (only those marked, for upsert and
 * mirror), the deletes, commit.
 *
 * Rows and keys the destination refuses one by one (dest.h,
 * zx_dest_row_failed) are remembered by their place in the result (a row)
 * or their key hash (a key), so that recording (run_record.c) keeps their
 * old hashes.
 *
 * It must never: commit when a value did not fit (dest_write), or go on
 * sending once the run is asked to stop.
 */
#include "workers/syncs/run_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "conf/plugin.h"

/* zx_dest_args.stopping */
static int run_stopping(void *ctx)
{
    return zx_src_stopping(((srun *)ctx)->rt);
}

int run_open_dest(srun *r)
{
    const zx_conf_pipeline *p = r->p;
    /* the loader's (or a send's) choice: the plug-in of the destination's
     * sub-section, or of its connection's kind */
    const char *kind = p->dest_plugin ? p->dest_plugin->name
                       : p->dest_conn ? p->dest_conn->kind : "(none)";
    r->dest = p->dest_plugin ? p->dest_plugin->dest : NULL;
    if (!r->dest)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: destination %s is not available "
                         "in this build", r->name, kind);
    if (r->o->mode == ZX_MODE_MIRROR && !(r->dest->caps & ZX_DEST_DELETES))
        return zx_seterr(r->err, sizeof(r->err), "sync %s: destination %s cannot delete "
                         "rows: mode mirror needs it (use upsert)", r->name, kind);
    if (r->preview)
        return 0;
    char exports[ZX_CONF_EXPORTS_MAX];
    const char *roots[64];
    size_t nroots = zx_conf_file_roots(r->conf, exports, sizeof(exports), roots, 64);
    zx_dest_args a = {
        .conf = r->conf, .sync = r->name, .conn = p->dest_conn, .table = r->o->dest_table,
        .opts = p->dest_own, .roots = roots, .nroots = nroots, .deadline_ms = NET_TIMEOUT_MS,
        .stopping = run_stopping, .stop_ctx = r,
    };
    return r->dest->open(&a, &r->dstate, r->err, sizeof(r->err));
}

/* Copy row vals into r->send (strings into its arena). */
static int copy_row(srun *r, const zx_value *vals)
{
    if (zx_rowset_begin_row(&r->send) < 0)
        return -1;
    for (size_t i = 0; i < r->ncols; i++) {
        zx_value v = vals[i];
        if (v.type == ZX_T_NULL)
            continue;
        if (v.s && !(v.s = zx_rowset_strdup(&r->send, v.s, v.len)))
            return -1;
        if (zx_rowset_add(&r->send, (uint32_t)i, &v) < 0)
            return -1;
    }
    zx_rowset_end_row(&r->send);
    return 0;
}

/* Grow *arr (elements of size sz, *cap of them) to hold n.  0 or -1. */
static int grow(void *arr, size_t *cap, size_t n, size_t sz)
{
    if (n <= *cap)
        return 0;
    size_t c = *cap ? *cap : 256;
    while (c < n)
        c *= 2;
    void *p = realloc(*(void **)arr, c * sz);
    if (!p)
        return -1;
    *(void **)arr = p;
    *cap = c;
    return 0;
}

/* zx_dest_run.failed: row `row` of the batch being handed over was
 * refused. */
static void on_failed(void *ctx, uint32_t row, int is_delete, const char *why)
{
    srun *r = ctx;
    r->dstats.rows_failed++;
    zx_dest_note_error(&r->dstats, why);
    if (!r->hashed)
        return;     /* nothing recorded: only counted */
    if (r->nfailed_ord + r->nfailed_kh >= FAILED_MAX) {
        r->failed_over = 1;
        return;
    }
    if (is_delete) {
        if (row >= r->nbatch_kh) {
            r->failed_bad = 1;
            return;
        }
        if (grow(&r->failed_kh, &r->capfailed_kh, (r->nfailed_kh + 1) * ZX_SYNC_KEYHASH_LEN,
                 1) < 0) {
            r->failed_over = 1;
            return;
        }
        memcpy(r->failed_kh + r->nfailed_kh++ * ZX_SYNC_KEYHASH_LEN,
               r->batch_kh + (size_t)row * ZX_SYNC_KEYHASH_LEN, ZX_SYNC_KEYHASH_LEN);
    } else {
        if (row >= r->nbatch_ord) {
            r->failed_bad = 1;
            return;
        }
        if (grow(&r->failed_ord, &r->capfailed_ord, r->nfailed_ord + 1, sizeof(uint64_t)) < 0) {
            r->failed_over = 1;
            return;
        }
        r->failed_ord[r->nfailed_ord++] = r->batch_ord[row];
    }
}

/* zx_dest_run.row_seen: whether row `row` of the batch being handed over
 * replaces a row an earlier run sent. */
static int on_seen(void *ctx, uint32_t row)
{
    const srun *r = ctx;
    if (!r->hashed || row >= r->nbatch_ord)
        return -1;
    return run_updated(r, r->batch_ord[row]);
}

/* After a batch: the run fails when the destination refused too many rows
 * one by one, or named one outside the batch. */
static int failed_check(srun *r)
{
    if (r->failed_bad)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: the destination reported a "
                         "refused row outside its batch (a bug in zx): nothing is recorded",
                         r->name);
    if (r->failed_over)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: the destination refused more "
                         "than %d rows one by one (first: %s); the run stops so that the "
                         "next sends them again", r->name, FAILED_MAX,
                         r->dstats.first_error[0] ? r->dstats.first_error : "?");
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_kh(const void *a, const void *b)
{
    return memcmp(a, b, ZX_SYNC_KEYHASH_LEN);
}

void run_failed_sort(srun *r)
{
    if (r->nfailed_ord > 1)
        qsort(r->failed_ord, r->nfailed_ord, sizeof(uint64_t), cmp_u64);
    if (r->nfailed_kh > 1)
        qsort(r->failed_kh, r->nfailed_kh, ZX_SYNC_KEYHASH_LEN, cmp_kh);
}

int run_failed(const srun *r, uint64_t ord, const unsigned char *kh)
{
    if (ord != UINT64_MAX)
        return r->nfailed_ord &&
               bsearch(&ord, r->failed_ord, r->nfailed_ord, sizeof(uint64_t), cmp_u64) != NULL;
    return r->nfailed_kh &&
           bsearch(kh, r->failed_kh, r->nfailed_kh, ZX_SYNC_KEYHASH_LEN, cmp_kh) != NULL;
}

static int send_deletes(srun *r)
{
    zx_rowset keys;
    zx_rowset_init(&keys);
    int rc = 0;
    if (zx_spill_rewind(&r->deletes) < 0) {
        rc = zx_seterr(r->err, sizeof(r->err), "sync %s: cannot read back the deletes",
                       r->name);
        goto out;
    }
    for (;;) {
        int g = zx_spill_get(&r->deletes, &r->rec);
        if (g < 0) {
            rc = zx_seterr(r->err, sizeof(r->err), "sync %s: cannot read back the deletes",
                           r->name);
            break;
        }
        if (g == 1) {
            /* the key hash, then the key as JSON (run_int.h) */
            if (r->rec.len < ZX_SYNC_KEYHASH_LEN ||
                grow(&r->batch_kh, &r->capbatch_kh, (r->nbatch_kh + 1) * ZX_SYNC_KEYHASH_LEN,
                     1) < 0) {
                rc = zx_seterr(r->err, sizeof(r->err), "sync %s: cannot read back the deletes",
                               r->name);
                break;
            }
            memcpy(r->batch_kh + r->nbatch_kh++ * ZX_SYNC_KEYHASH_LEN, r->rec.p,
                   ZX_SYNC_KEYHASH_LEN);
            if (zx_sync_key_from_json(r->rec.p + ZX_SYNC_KEYHASH_LEN,
                                      r->rec.len - ZX_SYNC_KEYHASH_LEN,
                                      (const char *const *)r->o->key_cols, r->o->nkey_cols,
                                      &keys, r->err, sizeof(r->err)) < 0) {
                rc = -1;
                break;
            }
        }
        if (keys.nrows && (g == 0 || keys.nrows >= r->o->batch_rows)) {
            if (r->dest->delete_keys(r->dstate, &keys, r->err, sizeof(r->err)) < 0) {
                rc = -1;
                break;
            }
            r->err[0] = 0;
            if (failed_check(r) < 0) {
                rc = -1;
                break;
            }
            zx_rowset_reset(&keys);
            r->nbatch_kh = 0;
        }
        if (g == 0)
            break;
    }
out:
    zx_rowset_free(&keys);
    return rc;
}

/* Of the batch in r->rs (the next rows of the result, from r->ordinal on),
 * the rows marked to send: *out is r->rs when all are, else r->send with
 * copies of them. */
static int pick_marked(srun *r, const zx_rowset **out)
{
    uint64_t first = r->ordinal;
    uint32_t n = r->rs.nrows, count = 0;
    r->ordinal += n;
    if (grow(&r->batch_ord, &r->capbatch_ord, n, sizeof(uint64_t)) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
    r->nbatch_ord = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (run_marked(r, first + i)) {
            r->batch_ord[r->nbatch_ord++] = first + i;
            count++;
        }
    }
    *out = &r->rs;
    if (count == n)
        return 0;
    if (zx_query_rs_columns(&r->send, r->cols, r->ncols) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
    for (uint32_t i = 0; i < n && count; i++) {
        if (!run_marked(r, first + i))
            continue;
        zx_rowset_row(&r->rs, i, r->vals);
        if (copy_row(r, r->vals) < 0)
            return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
        count--;
    }
    *out = &r->send;
    return 0;
}

/* Hand rs to the destination.  A value it could not hold (written as
 * NULL, dest.h) fails the run: nothing is committed and no hash is kept,
 * so once the query or the destination is fixed the next run sends the
 * row again.  0 or -1 (r->err). */
int run_dest_write(srun *r, const zx_rowset *rs)
{
    uint64_t nulled = r->dstats.nulled;
    if (r->dest->write(r->dstate, rs, r->err, sizeof(r->err)) < 0)
        return -1;
    r->err[0] = 0;
    if (failed_check(r) < 0)
        return -1;
    if (r->dstats.nulled == nulled)
        return 0;
    return zx_seterr(r->err, sizeof(r->err), "sync %s: column %s: the destination cannot "
                     "hold the value %s (%llu value%s in this batch), so nothing was "
                     "committed; convert it in the query (CAST, NULLIF, CASE), or give the "
                     "table's column a type that holds it", r->name,
                     r->dstats.misfit_col[0] ? r->dstats.misfit_col : "?",
                     r->dstats.misfit_val[0] ? r->dstats.misfit_val : "(unknown)",
                     (unsigned long long)(r->dstats.nulled - nulled),
                     r->dstats.nulled - nulled == 1 ? "" : "s");
}

int run_deliver_begin(srun *r)
{
    run_set_phase(r, "sending");   /* streamed: from the first batch on */
    run_put_status(r, "running");
    /* the destination keeps it until commit or abort (dest.h) */
    r->drun = (zx_dest_run){
        .run_id = r->id, .mode = (zx_sync_mode)r->o->mode, .cols = r->cols, .ncols = r->ncols,
        .key_cols = (const char *const *)r->o->key_cols, .nkey_cols = r->o->nkey_cols,
        .rows_expected = r->to_send, .deletes_expected = r->deleted,
        .partition_by = (const char *const *)r->o->partition_by,
        .npartition_by = r->o->npartition_by,
        .failed = on_failed, .failed_ctx = r, .row_seen = on_seen,
    };
    if (r->dest->begin(r->dstate, &r->drun, &r->dstats, r->err, sizeof(r->err)) < 0)
        return -1;
    r->err[0] = 0;     /* dest.h: err means something only with -1 */
    r->dest_begun = 1;
    return 0;
}

int run_deliver_end(srun *r)
{
    if (r->o->mode == ZX_MODE_MIRROR && r->deleted && send_deletes(r) < 0)
        return -1;
    if (r->dest->commit(r->dstate, r->err, sizeof(r->err)) < 0)
        return -1;
    r->err[0] = 0;     /* a destination may leave text of what it handled */
    r->dest_begun = 0;
    return 0;
}

int run_send_read(srun *r, uint64_t first)
{
    uint32_t n = r->rs.nrows;
    if (!n)
        return 0;
    if (!r->dest_begun && run_deliver_begin(r) < 0)
        return -1;
    if (grow(&r->batch_ord, &r->capbatch_ord, n, sizeof(uint64_t)) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
    for (uint32_t i = 0; i < n; i++)
        r->batch_ord[i] = first + i;
    r->nbatch_ord = n;
    if (run_dest_write(r, &r->rs) < 0)
        return -1;
    r->sent += n;
    return 0;
}

int run_deliver(srun *r)
{
    if (run_deliver_begin(r) < 0)
        return -1;
    if (zx_spill_rewind(&r->rows) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: cannot read back the rows to send",
                         r->name);
    for (;;) {
        if (zx_src_stopping(r->rt))
            return zx_seterr(r->err, sizeof(r->err), "sync %s: stopped while sending (zxd is "
                             "stopping or the run was cancelled); nothing was committed",
                             r->name);
        int g = zx_spill_get(&r->rows, &r->rec);
        if (g < 0)
            return zx_seterr(r->err, sizeof(r->err), "sync %s: cannot read back the rows to "
                             "send", r->name);
        if (g == 0)
            break;
        zx_frame_meta m;
        char derr[256];
        if (zx_frame_decode(r->rec.p, r->rec.len, &m, &r->rs, derr, sizeof(derr)) < 0)
            return zx_seterr(r->err, sizeof(r->err), "sync %s: the rows kept in %s are "
                             "damaged: %s", r->name, r->tmpdir, derr);
        /* a column without values in this batch still has its place */
        if (r->rs.ncols != r->ncols) {
            for (size_t i = r->rs.ncols; i < r->ncols; i++)
                zx_rowset_column(&r->rs, r->cols[i].name, strlen(r->cols[i].name), ZX_T_NULL);
        }
        const zx_rowset *out = &r->rs;
        if (r->hashed && pick_marked(r, &out) < 0)
            return -1;
        if (out->nrows && run_dest_write(r, out) < 0)
            return -1;
        r->sent += out->nrows;
        run_progress(r);
    }
    return run_deliver_end(r);
}
