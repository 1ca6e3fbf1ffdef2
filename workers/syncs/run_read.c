/*
 * run_read.c — stage 1 of a run (run_int.h): read.  The query runs as
 * its author in one snapshot (query.h); each row's key hash and row hash
 * are computed (hash.h); the rows go to the rows spill as rows frames
 * (spill.h), the keys to the external sorter.  A run without a key whose
 * types are known before the first row streams instead: each batch goes
 * to the destination as it is read.  So does the first run of an upsert
 * or mirror into a transactional destination (stream_keyed): every key is
 * new, so every row is sent, and the keys, sorted as always, are checked
 * for duplicates before the destination commits.
 *
 * It must never: keep the whole result in memory, or hold a read
 * transaction of the store while it reads the result.
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

static int find_keys(srun *r)
{
    for (size_t k = 0; k < r->o->nkey_cols; k++) {
        size_t i;
        for (i = 0; i < r->ncols && strcmp(r->cols[i].name, r->o->key_cols[k]); i++)
            ;
        if (i == r->ncols) {
            char list[512];
            size_t off = 0;
            list[0] = 0;
            for (size_t j = 0; j < r->ncols && off < sizeof(list); j++)
                off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", j ? ", " : "",
                                        r->cols[j].name);
            return zx_seterr(r->err, sizeof(r->err), "sync %s: key column %s is not in the "
                             "query's result (its columns: %s)", r->name, r->o->key_cols[k],
                             list);
        }
        r->key_idx[r->nkeys++] = i;
    }
    return 0;
}

/* The row as a JSON object, for a preview's sample. */
json_t *run_row_json(srun *r, const zx_value *vals)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < r->ncols; i++) {
        const zx_value *v = &vals[i];
        json_t *j;
        switch (v->type) {
        case ZX_T_INT: j = json_integer(v->u.i); break;
        case ZX_T_REAL: j = json_real(v->u.d); break;
        case ZX_T_BOOL: j = json_boolean(v->u.b); break;
        case ZX_T_TEXT: case ZX_T_TIMESTAMP: case ZX_T_JSON:
            j = json_stringn_nocheck(v->s, v->len > 200 ? 200 : v->len);
            break;
        default: j = json_null();
        }
        json_object_set_new(o, r->cols[i].name, j);
    }
    return o;
}

/* Spill one rowset of rows to send as a frame record. */
static int spill_rows(srun *r, const zx_rowset *rs)
{
    if (!rs->nrows)
        return 0;
    zx_frame_meta m = {0};
    m.kind = ZX_FRAME_ROWS;
    zx_buf_reset(&r->fb);
    if (zx_frame_encode(&m, rs, &r->fb) < 0 ||
        zx_spill_put(&r->rows, r->fb.p, r->fb.len, NULL, 0) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: cannot keep the rows to send in "
                         "%s: %s", r->name, r->tmpdir, strerror(errno));
    return 0;
}

/* One batch read: every row's key (and row hash) to the sorter, the
 * batch to the rows spill.  Which rows are sent is decided once all keys
 * are sorted (merge_keys), without a lookup per row. */
static int read_batch(srun *r)
{
    zx_buf *pl = &r->kv;
    for (uint32_t i = 0; i < r->rs.nrows; i++) {
        uint64_t ordinal = r->read++;
        if (!r->nkeys)
            continue;
        zx_rowset_row(&r->rs, i, r->vals);
        if (r->cursor_idx >= 0 && run_cursor_see(r, &r->vals[r->cursor_idx]) < 0)
            return -1;
        unsigned char kh[ZX_SYNC_KEYHASH_LEN];
        for (size_t k = 0; k < r->nkeys; k++)
            if (r->vals[r->key_idx[k]].type == ZX_T_NULL)
                return zx_seterr(r->err, sizeof(r->err), "sync %s: row %llu of the result "
                                 "has no value in key column %s: a key must not be NULL",
                                 r->name, (unsigned long long)r->read,
                                 r->cols[r->key_idx[k]].name);
        keyrec kr = {0, ordinal};
        /* hashed: the row and its key from one encoding of the row */
        if (r->hashed ? zx_sync_row_key_hash(r->vals, r->ncols, r->seed, r->key_idx, r->nkeys,
                                             &r->scratch, &kr.rh, kh) < 0
                      : zx_sync_key_hash(r->vals, r->key_idx, r->nkeys, &r->scratch, kh) < 0)
            goto oom;
        pl->len = 0;
        if (zx_buf_put(pl, &kr, sizeof(kr)) < 0 ||
            zx_sync_key_json(r->vals, r->key_idx, r->nkeys, pl) < 0)
            goto oom;
        if (zx_keysort_add(r->keys, kh, pl->p, pl->len, r->err, sizeof(r->err)) < 0)
            return -1;
    }
    if (r->stream_keyed)
        return run_send_read(r, r->read - r->rs.nrows);
    if (r->preview && !r->hashed) {
        /* every row would be sent: sample, keep nothing */
        for (uint32_t i = 0; i < r->rs.nrows && json_array_size(r->sample) < SAMPLE_ROWS; i++) {
            zx_rowset_row(&r->rs, i, r->vals);
            json_array_append_new(r->sample, run_row_json(r, r->vals));
        }
        return 0;
    }
    return spill_rows(r, &r->rs);
oom:
    return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
}

/* The key columns as a JSON array (r->keysig), and whether the stored
 * hashes were made with other ones: then they say nothing of this key's
 * rows (every row is sent, as with --full) and a mirror cannot tell which
 * rows of the old keys to delete (it deletes none; the writer forgets the
 * old hashes with the first new ones). */
static int key_signature(srun *r)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < r->o->nkey_cols; i++)
        json_array_append_new(arr, json_string(r->o->key_cols[i]));
    r->keysig = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
    json_decref(arr);
    if (!r->keysig)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
    zx_store_txn *t = NULL;
    if (!r->store || zx_store_begin(r->store, 1, &t) != 0)
        return 0;
    const void *old = NULL;
    size_t len = 0;
    if (zx_store_state_get(t, r->name, ZX_STATE_KEY_COLS, &old, &len) == 0 &&
        (len != strlen(r->keysig) || memcmp(old, r->keysig, len))) {
        r->key_changed = 1;
        r->full = 1;
        zx_warn("event=sync_key_changed sync=%s was=\"%.*s\" now=\"%s\" action=\"every row "
                "is sent; rows of the old keys are not deleted\"", r->name,
                (int)(len > 200 ? 200 : len), (const char *)old, r->keysig);
    } else if (zx_store_state_get(t, r->name, ZX_STATE_HASHES_PENDING, &old, &len) == 0) {
        /* an earlier run recorded its hashes before its destination
         * committed and never confirmed the commit (proto/frame.h): they
         * say nothing, as hashes of another key */
        r->key_changed = 1;
        r->full = 1;
        zx_warn("event=sync_hashes_unconfirmed sync=%s action=\"the last run did not confirm "
                "its commit: every row is sent; rows of keys it sent are not deleted\"",
                r->name);
    }
    zx_store_abort(t);
    return 0;
}

static int any_hash(const unsigned char *kh, uint64_t rh, const char *kv, size_t kvlen,
                    void *ctx)
{
    (void)kh;
    (void)rh;
    (void)kv;
    (void)kvlen;
    *(int *)ctx = 1;
    return 1;
}

/* Whether the sync has no stored row hash at all (its first run, or one
 * after the state was reset): 1, 0, or -1 (r->err).  Its own short read
 * transaction, before the query is read. */
static int run_nothing_stored(srun *r)
{
    if (!r->store)
        return 1;   /* no store yet: nothing was ever recorded */
    zx_store_txn *t = NULL;
    int found = 0;
    int rc = zx_store_begin(r->store, 1, &t);
    if (rc == 0)
        rc = zx_store_hashes_scan(t, r->name, NULL, 1, any_hash, &found, NULL);
    zx_store_abort(t);
    if (rc && rc != 1)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: cannot read the stored row "
                         "hashes: %s", r->name, zx_store_strerror(rc));
    return !found;
}

/* Whether this keyed run sends its rows as it reads them (stream_keyed):
 * an upsert or mirror run (not a preview, not a one-off) with nothing
 * stored for the sync, whose types are known before the first row, into
 * a destination whose begin..commit is one transaction.  Each row is new
 * (no stored key to compare with, none to delete), so the merge would
 * mark every one; a duplicate key, found by the same merge once all are
 * read, aborts the destination's transaction: nothing is committed, as
 * when it is found before sending.  A mirror still records its new keys
 * (run_prerecord) before the commit. */
static int keyed_stream(srun *r)
{
    if (!r->hashed || r->preview || !r->nkeys || !zx_query_types_known(r->q) ||
        !(r->dest->caps & ZX_DEST_TXN))
        return 0;
    return run_nothing_stored(r);
}

static int stop_asked(void *rt)
{
    return zx_src_stopping(rt);
}

/* The result read to its end: its columns take their final types (the
 * destination makes its table, a file its schema, from these).  Row
 * hashes were made with the seed of the types known at the start; when
 * the final ones differ, each is hashed again with theirs (rk_next), so
 * that a type that changes between runs sends every row again, as it
 * always has. */
static void final_types(srun *r)
{
    size_t n = 0;
    const zx_dcol *qc = zx_query_columns(r->q, &n);
    zx_dcol *own = (zx_dcol *)r->cols;
    for (size_t i = 0; i < n && i < r->ncols; i++) {
        if (own[i].type != qc[i].type)
            zx_debug("event=sync_column_type sync=%s column=\"%s\" type=%s was=%s",
                     r->name, own[i].name, zx_dtype_name(qc[i].type),
                     zx_dtype_name(own[i].type));
        own[i].type = qc[i].type;
        own[i].precision = qc[i].precision;
        own[i].scale = qc[i].scale;
    }
    r->seed_final = zx_sync_columns_seed(r->cols, r->ncols);
    r->reseed = r->seed_final != r->seed;
}

int run_read_result(srun *r)
{
    run_set_phase(r, "reading");
    run_put_status(r, "running");   /* a long query shows as one */
    zx_query_limits lim = {
        .connect_timeout_ms = NET_TIMEOUT_MS,
        .query_timeout_ms = r->o->query_timeout_ms ? r->o->query_timeout_ms
                                                   : r->conf->sync_query_timeout_ms,
        .stopping = stop_asked, .ctx = r->rt,
    };
    /* the stored hashes' key first: hashes of another key, like --full,
     * make a cursor's run read everything */
    if (r->hashed) {
        char serr[256];
        int rc = zx_store_open(r->conf->data_dir, ZX_STORE_RDONLY, 0, &r->store, serr,
                               sizeof(serr));
        if (rc && rc != ZX_STORE_NOSTORE)
            return zx_seterr(r->err, sizeof(r->err), "sync %s: %s", r->name, serr);
        if (key_signature(r) < 0)
            return -1;
    }
    if (run_query_open(r, &lim) < 0)
        return -1;
    /* rows to expect (its progress): no earlier run says, the planner may */
    if (!r->expect_read && zx_query_estimate(r->q) > 0)
        r->expect_read = (uint64_t)zx_query_estimate(r->q);
    /* the columns outlive the query (closed before sending): a copy */
    const zx_dcol *qc = zx_query_columns(r->q, &r->ncols);
    zx_dcol *own = calloc(r->ncols, sizeof(*own));
    if (!own || !(r->vals = calloc(r->ncols, sizeof(*r->vals)))) {
        free(own);
        return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
    }
    r->cols = own;
    for (size_t i = 0; i < r->ncols; i++) {
        own[i] = qc[i];
        if (!(own[i].name = strdup(qc[i].name)))
            return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
    }
    if (find_keys(r) < 0)
        return -1;
    /* SQLite: the types come from every row (query.h), so nothing may be
     * sent, nor a table made, before the last one is read: the rows are
     * kept in the spill like those of a keyed run */
    if (r->stream && !zx_query_types_known(r->q))
        r->stream = 0;
    r->seed = zx_sync_columns_seed(r->cols, r->ncols);
    int ks = keyed_stream(r);
    if (ks < 0)
        return -1;
    r->stream_keyed = ks;
    if (r->nkeys && !(r->keys = zx_keysort_new(r->tmpdir, SORT_MEMORY, &r->budget)))
        return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
    for (;;) {
        if (zx_src_stopping(r->rt))
            return zx_seterr(r->err, sizeof(r->err), "sync %s: stopped while reading the "
                             "result (zxd is stopping or the run was cancelled)", r->name);
        int64_t n = zx_query_next(r->q, &r->rs, r->o->batch_rows, r->err, sizeof(r->err));
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        if (r->stream) {
            /* no key: nothing to compare, nothing to refuse; the rows go
             * straight to the destination, in its transaction */
            r->read += r->rs.nrows;
            if ((!r->dest_begun && run_deliver_begin(r) < 0) ||
                run_dest_write(r, &r->rs) < 0)
                return -1;
            r->sent += r->rs.nrows;
        } else if (read_batch(r) < 0) {
            return -1;
        }
        run_progress(r);
    }
    final_types(r);
    zx_query_close(r->q);   /* the snapshot is let go before sending */
    r->q = NULL;
    /* every row is sent: the destination may start its commit's work (a
     * key's build) while the keys are sorted and checked */
    if (r->stream_keyed && r->dest_begun && r->dest->prepare &&
        r->dest->prepare(r->dstate, r->err, sizeof(r->err)) < 0)
        return -1;
    if (!r->hashed)
        r->to_send = r->read;   /* every row (upsert, mirror: merge_keys decides) */
    return 0;
}
