/*
 * writer_apply.c — apply one frame inside the cycle's open workspace
 * transaction (appended rows, a mirror's changes, or a row-hashes frame
 * kept for the store), and keep what it did (applied) until the LMDB
 * transaction is written.  See writer_int.h.
 *
 * A frame of a forwarding pipeline also goes into the forward journal
 * once applied (writer_forward.c).
 *
 * It must never: apply a frame at or below its pipeline's checkpoint,
 * drop a dedup key or a position silently (out of memory fails the
 * cycle), or keep pointers into the rowset's arena past the frame.
 */
#include "workers/writer/writer_int.h"

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

/* The last frame applied in this cycle was rolled back: forget it. */
void wr_drop_last_applied(writer *w)
{
    applied *a = &w->ap[--w->nap];
    free(a->dedup);
    free(a->pos);
    free(a->rejcols);
    free(a->newcols);
}

void wr_free_applied(writer *w)
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
        ps[i].fenced = m->positions[i].fenced;
        ps[i].from = m->positions[i].from;
        ps[i].first = m->positions[i].first;
        p += m->positions[i].value_len;
    }
    a->pos = ps;
    a->npos = m->npositions;
    return 0;
}

/* zx_ws_key_seqs's answer for row i: its text goes to w->have_buf, its
 * offset (+ 1) into have[i].s until rows_seqs turns offsets into
 * pointers (the buffer may move while it grows). */
struct havectx {
    writer *w;
    int nomem;
};

static void have_one(void *ctx, int64_t i, const char *s, size_t len)
{
    struct havectx *h = ctx;
    writer *w = h->w;
    if (i < 0 || (size_t)i >= w->have_cap || !len)
        return;
    size_t at = w->have_buf.len;
    if (zx_buf_put(&w->have_buf, s, len) < 0) {
        h->nomem = 1;
        return;
    }
    w->have[i].s = (const char *)(uintptr_t)(at + 1);
    w->have[i].len = len;
}

/* What the mirror's rows hold for the frame's keys into w->have (rows of
 * in).  0, -1 out of memory, -2 a workspace failure (err set). */
static int rows_seqs(writer *w, const zx_ws_changes *ch, const zx_rowset *in, char *err,
                     size_t errlen)
{
    if (in->nrows > w->have_cap) {
        zx_keyseq_have *n = realloc(w->have, in->nrows * sizeof(*n));
        if (!n)
            return -1;
        w->have = n;
        w->have_cap = in->nrows;
    }
    memset(w->have, 0, in->nrows * sizeof(*w->have));
    w->have_buf.len = 0;
    struct havectx h = { w, 0 };
    if (zx_ws_key_seqs(w->ws, ch, in, have_one, &h, err, errlen) < 0)
        return -2;
    if (h.nomem)
        return -1;
    for (uint32_t r = 0; r < in->nrows; r++)
        if (w->have[r].len)
            w->have[r].s = w->have_buf.p + ((uintptr_t)w->have[r].s - 1);
    return 0;
}

/* A changes frame whose changes carry source positions (_zx_seq): the
 * changes older than their key's last applied one are left out
 * (keyseq.h).  *rs becomes the frame without them (w->rs2) when there are
 * any.  Returns how many, -1 out of memory, or -2 a workspace failure
 * (err set). */
static long drop_stale(writer *w, wpipe *p, const zx_frame_meta *m, const zx_ws_changes *ch,
                       const zx_rowset **rs, char *err, size_t errlen)
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
        rt = NULL;   /* no store: only the rows' and this cycle's positions are known */
    if (!zx_keyseq_hwm_known(w->ks, p->name, m->table)) {
        /* the table's mark, once in the writer's life: its rows' newest */
        char *mx = NULL;
        size_t ml = 0;
        int ret = zx_ws_max_seq(w->ws, ch, &mx, &ml, err, errlen) < 0 ? -2
                  : zx_keyseq_hwm_init(w->ks, rt, p->name, m->table, mx, ml) < 0 ? -1 : 0;
        free(mx);
        if (ret < 0) {
            if (rt)
                zx_store_abort(rt);
            return ret;
        }
    }
    const zx_keyseq_have *have = NULL;
    if (zx_keyseq_needs_rows(w->ks, p->name, m->table, in)) {
        int hr = rows_seqs(w, ch, in, err, errlen);
        if (hr < 0) {
            if (rt)
                zx_store_abort(rt);
            return hr;
        }
        have = w->have;
    }
    long k = zx_keyseq_filter(w->ks, rt, p->name, m->table, in, m->key_cols, m->nkey_cols,
                              have, w->skip);
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
    a->hpending = m->hashes_pending;
    a->hconfirm = m->hashes_confirm;
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
    size_t bytes = (size_t)rs->nrows * sizeof(zx_store_hash_rec), skipped = 0;
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
    zx_store_hash_rec *e = (zx_store_hash_rec *)blk;
    char *kvp = blk + (size_t)rs->nrows * sizeof(zx_store_hash_rec);
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
        e[n].row_hash = e[n].del ? 0 : (uint64_t)row[crh].u.i;
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
                         .copy = m->copy, .ingested_at_us = m->ingested_at_us };
    const zx_rowset *crs = &w->rs;
    long stale = drop_stale(w, p, m, &ch, &crs, err, errlen);
    if (stale == -2)
        return -1;
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
int wr_record_progress(writer *w, wpipe *p, const zx_frame_meta *m, uint64_t seq, char *err,
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
    /* the checkpoint row once per cycle, not per frame (wr_write_checkpoints) */
    p->ckpt = seq;
    p->ckpt_dirty = 1;
    return 0;
}

int wr_write_checkpoints(writer *w, char *err, size_t errlen)
{
    int64_t now_us = zx_now_us();
    for (int i = 0; i < MAX_PIPES; i++) {
        wpipe *p = &w->pipes[i];
        if (!p->used || !p->ckpt_dirty)
            continue;
        if (zx_ws_checkpoint_set(w->ws, p->ckpt_key, p->ckpt, now_us) < 0)
            return zx_seterr(err, errlen, "cannot record the checkpoint of pipeline %s: %s",
                             p->name, zx_ws_errmsg(w->ws));
        p->ckpt_dirty = 0;
    }
    return 0;
}

/* Apply one frame inside the open workspace transaction.  0 (applied, or
 * parked: see ptable); -2 when the frame's table refused it (the same
 * frame would fail again: hold the pipeline back); -1 on any other
 * failure (database, out of memory: roll the cycle back and retry).  err
 * says why. */
int wr_apply_frame(writer *w, wpipe *p, const void *data, size_t len, uint64_t seq,
                   const zx_ring_cursor *after, char *err, size_t errlen)
{
    applied *a = new_applied(w);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    a->p = p;
    a->seq = seq;
    a->bytes = len;
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
        /* its positions: a sync's cursor mark (workers/syncs/cursor.h),
         * committed with its hashes */
        if (keep_hashes(a, &w->rs, &m) < 0 || keep_positions(a, &m) < 0) {
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
        wr_fence_skipped(w, a);
        return 0;
    }
    /* a shared workspace: another zxd may have written this upstream
     * range (writer_fence.c) */
    int fr = wr_fence(w, p, a, &m, seq, err, errlen);
    if (fr != 0)
        return fr < 0 ? -1 : 0;
    a->ingested_at_us = m.ingested_at_us;
    /* its table's earlier frames are parked: so is this one (order; past
     * the bound, or with parking since turned off, it waits in the ring) */
    const ptable *t = wr_pt_find(w, p->name, m.table);
    if (t && t->count)
        return wr_park_frame(w, p, a, &m, data, len, seq, t->why, err, errlen);
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
        return wr_park_frame(w, p, a, &m, data, len, seq, why, err, errlen);
    }
    keep_result(a, &res);
    if (zx_ws_reject_messages(w->ws, &ap, m.rejects, m.nrejects, &a->messages, err, errlen) < 0)
        return -1;
    a->rejects += a->messages;
    if (wr_forward(w, p, a, &m, data, len, err, errlen) < 0)
        return -1;
    return wr_record_progress(w, p, &m, seq, err, errlen);
}

/* Apply a parked frame of p (data, len bytes) to its table as
 * apply_frame would, inside the
 * open transaction: no position and no checkpoint (recorded when it was
 * parked).  0 applied (or not decodable: dropped, logged), *nrows its
 * changes; -2 the table refuses it still; -1 any other failure.  err
 * says why. */
int wr_replay_frame(writer *w, wpipe *p, const void *data, size_t len, uint64_t *nrows,
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
    return wr_forward(w, p, a, &m, data, len, err, errlen);
}
