/*
 * fwd_send.c — journal frames into destination runs (fwd_send.h).
 *
 * Each group of frames is read twice: once for its columns and their
 * types (the run's columns must be known at begin), once to send.  The
 * batches handed to the destination point into the decoded frame, which
 * outlives them.
 *
 * It must never: publish a change out of its frame's order, report an
 * entry done before its run committed, or publish a reserved _zx_ column.
 */
#include "workers/forward/fwd_send.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "proto/frame.h"
#include "workers/syncs/coltype.h"

#define RESERVED "_zx_"

typedef struct sender {
    zx_fwd_out *o;
    zx_rowset dec;                /* the frame being read */
    zx_rowset ws;                 /* the write batch being made */
    zx_rowset ks;                 /* the delete batch being made */
    uint8_t *upd;                 /* ws row r is an update */
    size_t capupd;
    /* the group: kind, table, key columns */
    uint32_t kind;
    char *table;
    char **keys;
    size_t nkeys;
    /* the run's columns */
    zx_dcol *cols;
    int *und;
    size_t ncols, capcols;
    size_t *map;                  /* frame column -> run column (SIZE_MAX: none) */
    size_t capmap;
    zx_value *vals;
    size_t capvals;
    zx_buf scratch;
    zx_dest_run run;
    zx_dest_stats st;
    uint64_t refused;
    char refused_why[200];
} sender;

static int is_reserved(const char *name)
{
    return strncmp(name, RESERVED, strlen(RESERVED)) == 0;
}

static void group_free(sender *s)
{
    free(s->table);
    s->table = NULL;
    for (size_t i = 0; i < s->nkeys; i++)
        free(s->keys[i]);
    free(s->keys);
    s->keys = NULL;
    s->nkeys = 0;
    for (size_t i = 0; i < s->ncols; i++)
        free((char *)s->cols[i].name);
    s->ncols = 0;
}

static size_t col_find(const sender *s, const char *name)
{
    for (size_t i = 0; i < s->ncols; i++)
        if (!strcmp(s->cols[i].name, name))
            return i;
    return SIZE_MAX;
}

/* The run column called name, added (type undecided) when new: its index,
 * or SIZE_MAX out of memory. */
static size_t col_add(sender *s, const char *name)
{
    size_t i = col_find(s, name);
    if (i != SIZE_MAX)
        return i;
    if (s->ncols == s->capcols) {
        size_t nc = s->capcols ? s->capcols * 2 : 32;
        zx_dcol *c = realloc(s->cols, nc * sizeof(*c));
        if (!c)
            return SIZE_MAX;
        s->cols = c;
        int *u = realloc(s->und, nc * sizeof(*u));
        if (!u)
            return SIZE_MAX;
        s->und = u;
        s->capcols = nc;
    }
    char *nm = strdup(name);
    if (!nm)
        return SIZE_MAX;
    s->cols[s->ncols] = (zx_dcol){nm, ZX_DT_TEXT, 0, 0};
    s->und[s->ncols] = 1;
    return s->ncols++;
}

/* Room for n entries in the per-frame arrays.  0 or -1. */
static int room(sender *s, size_t ncols, size_t nrows)
{
    if (!ncols)
        ncols = 1;      /* never NULL: a frame of rows without columns */
    if (ncols > s->capmap) {
        size_t *m = realloc(s->map, ncols * sizeof(*m));
        if (!m)
            return -1;
        s->map = m;
        s->capmap = ncols;
    }
    if (ncols > s->capvals) {
        zx_value *v = realloc(s->vals, ncols * sizeof(*v));
        if (!v)
            return -1;
        s->vals = v;
        s->capvals = ncols;
    }
    if (nrows > s->capupd) {
        uint8_t *u = realloc(s->upd, nrows);
        if (!u)
            return -1;
        s->upd = u;
        s->capupd = nrows;
    }
    return 0;
}

/* Decode entry e into s->dec.  0, or -1 (noted in the counts' bad_n and
 * bad_why: the frame is passed). */
static int decode(sender *s, const zx_fwdj_entry *e, zx_frame_meta *m)
{
    char derr[sizeof(s->o->bad_why)];
    if (zx_frame_decode(e->frame, e->len, m, &s->dec, derr, sizeof(derr)) < 0 ||
        m->kind == ZX_FRAME_HASHES) {
        s->o->bad_n = e->n;
        snprintf(s->o->bad_why, sizeof(s->o->bad_why), "%s",
                 m->kind == ZX_FRAME_HASHES ? "a row-hashes frame" : derr);
        return -1;
    }
    return 0;
}

/* 1 when frame m belongs to the group being made. */
static int same_group(const sender *s, const zx_frame_meta *m)
{
    if (m->kind != s->kind || strcmp(m->table ? m->table : "", s->table) ||
        m->nkey_cols != s->nkeys)
        return 0;
    for (size_t i = 0; i < s->nkeys; i++)
        if (strcmp(m->key_cols[i], s->keys[i]))
            return 0;
    return 1;
}

static int group_start(sender *s, const zx_frame_meta *m)
{
    group_free(s);
    s->kind = m->kind;
    if (!(s->table = strdup(m->table ? m->table : "")))
        return -1;
    if (m->nkey_cols) {         /* a mirror's changes, or its copy's rows */
        if (!(s->keys = calloc(m->nkey_cols, sizeof(*s->keys))))
            return -1;
        for (size_t i = 0; i < m->nkey_cols; i++) {
            if (!(s->keys[i] = strdup(m->key_cols[i])))
                return -1;
            s->nkeys++;
        }
    }
    for (size_t i = 0; i < s->nkeys; i++)
        if (col_add(s, s->keys[i]) == SIZE_MAX)
            return -1;
    for (size_t i = 0; i < s->o->nmust; i++)
        if (col_add(s, s->o->must_cols[i]) == SIZE_MAX)
            return -1;
    return 0;
}

/* The run columns of the decoded frame's columns (s->map), adding them
 * when see is 1; reserved columns map nowhere.  0 or -1. */
static int map_cols(sender *s, int see)
{
    if (room(s, s->dec.ncols, s->dec.nrows) < 0)
        return -1;
    for (uint32_t c = 0; c < s->dec.ncols; c++) {
        const char *nm = s->dec.cols[c].name;
        if (is_reserved(nm))
            s->map[c] = SIZE_MAX;
        else if (see) {
            if ((s->map[c] = col_add(s, nm)) == SIZE_MAX)
                return -1;
        } else
            s->map[c] = col_find(s, nm);
    }
    return 0;
}

/* Pass 1 over the decoded frame: its columns' values decide the types. */
static int see_frame(sender *s)
{
    if (map_cols(s, 1) < 0)
        return -1;
    for (uint32_t r = 0; r < s->dec.nrows; r++)
        for (uint64_t i = s->dec.row_start[r]; i < s->dec.row_start[r + 1]; i++) {
            size_t u = s->map[s->dec.cells[i].col];
            if (u != SIZE_MAX &&
                zx_coltype_see(&s->cols[u], &s->und[u], &s->dec.cells[i].v, &s->scratch) < 0)
                return -1;
        }
    return 0;
}

static int row_seen(void *ctx, uint32_t row)
{
    const sender *s = ctx;
    return row < s->ws.nrows ? s->upd[row] : 0;
}

static void on_failed(void *ctx, uint32_t row, int is_delete, const char *why)
{
    sender *s = ctx;
    (void)row;
    (void)is_delete;
    if (!s->refused++)
        snprintf(s->refused_why, sizeof(s->refused_why), "%s", why);
}

/* A batch rowset with columns names (n of them), empty.  0 or -1. */
static int batch_reset(zx_rowset *rs, const zx_dcol *cols, size_t n, char *const *names)
{
    zx_rowset_reset(rs);
    for (size_t i = 0; i < n; i++) {
        const char *nm = cols ? cols[i].name : names[i];
        if (zx_rowset_column(rs, nm, strlen(nm), ZX_T_NULL) < 0)
            return -1;
    }
    return 0;
}

static int flush_write(sender *s, char *err, size_t errlen)
{
    if (!s->ws.nrows)
        return 0;
    if (s->o->ops->write(s->o->state, &s->ws, err, errlen) < 0)
        return -1;
    return batch_reset(&s->ws, s->cols, s->ncols, NULL) < 0 ? -2 : 0;
}

static int flush_delete(sender *s, char *err, size_t errlen)
{
    if (!s->ks.nrows)
        return 0;
    if (!s->o->ops->delete_keys) {
        snprintf(err, errlen, "the destination cannot delete");
        return -1;
    }
    if (s->o->ops->delete_keys(s->o->state, &s->ks, err, errlen) < 0)
        return -1;
    return batch_reset(&s->ks, NULL, s->nkeys, s->keys) < 0 ? -2 : 0;
}

/* Row vals of the frame into the write batch (upd: an update).  0 or -1. */
static int add_row(sender *s, const zx_value *vals, int upd)
{
    if (zx_rowset_begin_row(&s->ws) < 0)
        return -1;
    for (uint32_t c = 0; c < s->dec.ncols; c++)
        if (s->map[c] != SIZE_MAX && vals[c].type != ZX_T_NULL &&
            zx_rowset_add(&s->ws, (uint32_t)s->map[c], &vals[c]) < 0)
            return -1;
    zx_rowset_end_row(&s->ws);
    s->upd[s->ws.nrows - 1] = (uint8_t)upd;
    return 0;
}

/* The key of row vals (old: the values of its _zx_old:<key> columns, a
 * key column without one its own) into the delete batch.  0 or -1. */
static int add_key(sender *s, const zx_value *vals, const int64_t *oldc)
{
    if (zx_rowset_begin_row(&s->ks) < 0)
        return -1;
    for (size_t k = 0; k < s->nkeys; k++) {
        int64_t c = oldc && oldc[k] >= 0 && vals[oldc[k]].type != ZX_T_NULL
                        ? oldc[k] : zx_rowset_find_column(&s->dec, s->keys[k],
                                                          strlen(s->keys[k]));
        if (c >= 0 && vals[c].type != ZX_T_NULL &&
            zx_rowset_add(&s->ks, (uint32_t)k, &vals[c]) < 0)
            return -1;
    }
    zx_rowset_end_row(&s->ks);
    return 0;
}

static int op_is(const zx_value *v, const char *word)
{
    return v && v->type == ZX_T_TEXT && v->len == strlen(word) && !memcmp(v->s, word, v->len);
}

/* Pass 2: the decoded frame's rows to the destination.  0; -1 the
 * destination's error (err set); -2 out of memory. */
static int send_frame(sender *s, char *err, size_t errlen)
{
    if (map_cols(s, 0) < 0)
        return -2;
    zx_value *vals = s->vals;
    if (s->kind == ZX_FRAME_ROWS) {
        for (uint32_t r = 0; r < s->dec.nrows; r++) {
            zx_rowset_row(&s->dec, r, vals);
            if (add_row(s, vals, 0) < 0)
                return -2;
        }
        return flush_write(s, err, errlen);
    }
    int64_t opc = zx_rowset_find_column(&s->dec, ZX_CH_OP, strlen(ZX_CH_OP));
    int64_t oldc[ZX_FRAME_MAX_KEY_COLUMNS];
    for (size_t k = 0; k < s->nkeys; k++) {
        char nm[300];
        snprintf(nm, sizeof(nm), "%s%s", ZX_CH_OLD_PREFIX, s->keys[k]);
        oldc[k] = zx_rowset_find_column(&s->dec, nm, strlen(nm));
    }
    int rc = 0;
    for (uint32_t r = 0; r < s->dec.nrows && rc == 0; r++) {
        zx_rowset_row(&s->dec, r, vals);
        const zx_value *op = opc >= 0 ? &vals[opc] : NULL;
        int upd = op_is(op, "update");
        if (upd || op_is(op, "insert")) {
            int moved = 0;
            for (size_t k = 0; upd && k < s->nkeys; k++)
                moved |= oldc[k] >= 0 && vals[oldc[k]].type != ZX_T_NULL;
            if (moved) {
                if ((rc = flush_write(s, err, errlen)) < 0)
                    break;
                if (add_key(s, vals, oldc) < 0)
                    return -2;
                upd = 0;
            }
            if ((rc = flush_delete(s, err, errlen)) < 0)
                break;
            if (add_row(s, vals, upd) < 0)
                return -2;
        } else if (op_is(op, "delete") && s->nkeys) {
            if ((rc = flush_write(s, err, errlen)) < 0)
                break;
            if (add_key(s, vals, NULL) < 0)
                return -2;
        } else {
            /* truncate, gap: not an event of one key (nor a delete
             * without key columns, which no mirror sends) */
            if ((rc = flush_write(s, err, errlen)) < 0 ||
                (rc = flush_delete(s, err, errlen)) < 0)
                break;
            s->o->skipped++;
        }
    }
    if (rc == 0 && (rc = flush_write(s, err, errlen)) == 0)
        rc = flush_delete(s, err, errlen);
    return rc;
}

/* Publish entries e[i..end) as one run.  0, or -1 (err set). */
static int send_group(sender *s, const zx_fwdj_entry *e, size_t i, size_t end, char *err,
                      size_t errlen)
{
    zx_fwd_out *o = s->o;
    memset(&s->st, 0, sizeof(s->st));
    s->refused = 0;
    s->run = (zx_dest_run){
        .run_id = e[i].n,
        .mode = s->kind == ZX_FRAME_CHANGES && s->nkeys ? ZX_MODE_MIRROR
                : s->nkeys ? ZX_MODE_UPSERT : ZX_MODE_APPEND,
        .cols = s->cols, .ncols = s->ncols,
        .key_cols = (const char *const *)s->keys, .nkey_cols = s->nkeys,
        .failed = on_failed, .failed_ctx = s, .row_seen = row_seen,
    };
    if (batch_reset(&s->ws, s->cols, s->ncols, NULL) < 0 ||
        batch_reset(&s->ks, NULL, s->nkeys, s->keys) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (o->ops->begin(o->state, &s->run, &s->st, err, errlen) < 0)
        goto fail;
    for (size_t j = i; j < end; j++) {
        zx_frame_meta m;
        if (decode(s, &e[j], &m) < 0)
            continue;           /* it decoded in pass 1: cannot happen */
        int rc = send_frame(s, err, errlen);
        if (rc == -2)
            snprintf(err, errlen, "out of memory");
        if (rc < 0)
            goto fail;
    }
    if (o->ops->commit(o->state, err, errlen) < 0)
        goto fail;
    if (s->refused) {
        snprintf(err, errlen, "%" PRIu64 " rows refused (first: %s)", s->refused,
                 s->refused_why);
        return -1;      /* committed: the rows that went through go again */
    }
    o->frames += end - i;
    o->rows += s->st.rows_written;
    o->deletes += s->st.rows_deleted;
    o->bytes += s->st.bytes;
    o->runs++;
    return 0;
fail:
    o->ops->abort(o->state);
    return -1;
}

int zx_fwd_publish(zx_fwd_out *o, const zx_fwdj_entry *e, size_t n, uint64_t *done,
                   char *err, size_t errlen)
{
    sender s = {.o = o};
    zx_rowset_init(&s.dec);
    zx_rowset_init(&s.ws);
    zx_rowset_init(&s.ks);
    zx_buf_init(&s.scratch);
    *done = 0;
    int rc = 0;
    size_t i = 0;
    while (i < n && rc == 0) {
        zx_frame_meta m;
        if (decode(&s, &e[i], &m) < 0) {
            o->bad_frames++;
            *done = e[i++].n;
            continue;
        }
        if (group_start(&s, &m) < 0 || see_frame(&s) < 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        size_t end = i + 1;
        for (; end < n; end++) {
            if (decode(&s, &e[end], &m) < 0 || !same_group(&s, &m))
                break;
            if (see_frame(&s) < 0) {
                snprintf(err, errlen, "out of memory");
                rc = -1;
                break;
            }
        }
        if (rc < 0 || (rc = send_group(&s, e, i, end, err, errlen)) < 0)
            break;
        *done = e[end - 1].n;
        i = end;
    }
    group_free(&s);
    free(s.cols);
    free(s.und);
    free(s.map);
    free(s.vals);
    free(s.upd);
    zx_rowset_free(&s.dec);
    zx_rowset_free(&s.ws);
    zx_rowset_free(&s.ks);
    zx_buf_free(&s.scratch);
    return rc;
}
