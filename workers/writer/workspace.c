/*
 * workspace.c — the workspace behaviour every backend shares (see
 * workspace.h for the contract and workspace_int.h for the seam).
 *
 * The public zx_ws_* calls dispatch to the backend's ws_ops; the table
 * cache and the append algorithm are here, once: which field gets which
 * column, new tables and columns from the batch, the column cap and the
 * overflow column _extra, the metadata columns, fitting every value
 * (fit.h), misfits stored as NULL plus a reject row.  A backend only
 * stores what it is handed (SQLite: a cached INSERT per column set;
 * Postgres: COPY).
 *
 * It must never: know a SQL dialect (that is the backend's), turn bad
 * data into an error return, or keep schema knowledge across a rollback.
 */
#include "workers/writer/workspace_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timefmt.h"
#include "common/util.h"

const char *const zx_ws_meta_name[2] = { "_ingested_at", "_request_id" };
const zx_type zx_ws_meta_type[2] = { ZX_T_TIMESTAMP, ZX_T_TEXT };

/* ---- dispatch -------------------------------------------------------------- */

void ws_init(zx_ws *w, const ws_ops *ops)
{
    memset(w, 0, sizeof(*w));
    w->ops = ops;
}

void ws_fini(zx_ws *w)
{
    ws_cache_drop(w);
    free(w->map);
    free(w->rejn);
    free(w->nomsg);
    free(w->xlast);
    free(w->slot);
    free(w->used);
    free(w->list);
    zx_buf_free(&w->buf);
    zx_buf_free(&w->raw);
    zx_buf_free(&w->xbuf);
}

void zx_ws_close(zx_ws *w)
{
    if (w)
        w->ops->close(w);
}

const char *zx_ws_backend(const zx_ws *w)
{
    return w ? w->ops->name : "none";
}

int zx_ws_begin(zx_ws *w, char *err, size_t errlen)
{
    if (w->in_txn)
        return zx_seterr(err, errlen, "workspace: a transaction is already open");
    if (w->ops->begin(w, err, errlen) < 0)
        return -1;
    w->in_txn = 1;
    return 0;
}

int zx_ws_commit(zx_ws *w, char *err, size_t errlen)
{
    if (!w->in_txn)
        return zx_seterr(err, errlen, "workspace: no open transaction");
    if (w->ops->commit(w, err, errlen) < 0) {
        zx_ws_rollback(w);
        return -1;
    }
    w->in_txn = 0;
    return 0;
}

void zx_ws_rollback(zx_ws *w)
{
    if (!w)
        return;
    ws_cache_drop(w);
    w->ops->rollback(w);
    w->in_txn = 0;
}

int zx_ws_savepoint(zx_ws *w)
{
    return w->in_txn ? w->ops->savepoint(w) : -1;
}

int zx_ws_savepoint_release(zx_ws *w)
{
    return w->ops->savepoint_release(w);
}

int zx_ws_savepoint_rollback(zx_ws *w)
{
    ws_cache_drop(w);
    return w->ops->savepoint_rollback(w);
}

int zx_ws_failure_is_permanent(zx_ws *w)
{
    return w->ops->failure_is_permanent(w);
}

int zx_ws_checkpoint_get(zx_ws *w, const char *pipeline, uint64_t *seq)
{
    *seq = 0;
    return w->ops->checkpoint_get(w, pipeline, seq);
}

int zx_ws_checkpoint_set(zx_ws *w, const char *pipeline, uint64_t seq, int64_t now_us)
{
    return w->in_txn ? w->ops->checkpoint_set(w, pipeline, seq, now_us) : -1;
}

int zx_ws_checkpoint_prune(zx_ws *w, const char *prefix, const char *keep1, const char *keep2)
{
    return w->in_txn ? -1 : w->ops->checkpoint_prune(w, prefix, keep1, keep2);
}

int zx_ws_position_set(zx_ws *w, const char *pipeline, const char *part, const void *val,
                       size_t len, int64_t now_us)
{
    return w->in_txn ? w->ops->position_set(w, pipeline, part, val, len, now_us) : -1;
}

int zx_ws_position_lock(zx_ws *w, const char *pipeline, const char *part, void **val,
                        size_t *len)
{
    *val = NULL;
    *len = 0;
    if (!w->in_txn || !w->ops->position_lock)
        return -1;
    return w->ops->position_lock(w, pipeline, part, val, len);
}

int zx_ws_notice_changes(zx_ws *w, const char *const *tables, size_t n, char *err,
                         size_t errlen)
{
    if (!w->ops->notice_changes)
        return 0;
    if (!w->in_txn)
        return zx_seterr(err, errlen, "workspace: no open transaction");
    return w->ops->notice_changes(w, tables, n, err, errlen);
}

int zx_ws_notice_fd(zx_ws *w)
{
    return w->ops->notice_fd ? w->ops->notice_fd(w) : -1;
}

int zx_ws_notices(zx_ws *w, int readable, zx_ws_notice_cb cb, void *ctx)
{
    if (!w->ops->notices || w->in_txn)
        return 0;
    return w->ops->notices(w, readable, cb, ctx);
}

int zx_ws_positions_each(zx_ws *w, zx_ws_position_cb cb, void *ctx)
{
    return w->ops->positions_each(w, cb, ctx);
}

int zx_ws_positions_drop(zx_ws *w, const char *pipeline)
{
    return w->ops->positions_drop(w, pipeline);
}

int zx_ws_parked_drop(zx_ws *w, const char *pipeline)
{
    return w->ops->parked_drop(w, pipeline);
}

int zx_ws_park_put(zx_ws *w, const char *pipeline, const char *table, uint64_t n,
                   uint64_t rows, const void *frame, size_t len, const char *reason, int64_t now_us)
{
    return w->in_txn ? w->ops->park_put(w, pipeline, table, n, rows, frame, len, reason, now_us)
                     : -1;
}

int zx_ws_park_first(zx_ws *w, const char *pipeline, const char *table, uint64_t *n,
                     void **frame, size_t *len)
{
    *frame = NULL;
    *len = 0;
    return w->ops->park_first(w, pipeline, table, n, frame, len);
}

int zx_ws_park_del(zx_ws *w, const char *pipeline, const char *table, uint64_t n)
{
    return w->in_txn ? w->ops->park_del(w, pipeline, table, n) : -1;
}

int zx_ws_parked_each(zx_ws *w, zx_ws_parked_cb cb, void *ctx)
{
    return w->ops->parked_each(w, cb, ctx);
}

int zx_ws_forward_put(zx_ws *w, const char *pipeline, uint64_t n, const void *frame, size_t len,
                      uint64_t nrows)
{
    return w->in_txn ? w->ops->forward_put(w, pipeline, n, frame, len, nrows, zx_now_us()) : -1;
}

int zx_ws_forward_last(zx_ws *w, const char *pipeline, uint64_t *n)
{
    *n = 0;
    return w->ops->forward_last(w, pipeline, n);
}

int zx_ws_forward_drop(zx_ws *w, const char *pipeline)
{
    return w->ops->forward_drop(w, pipeline);
}

const char *zx_ws_errmsg(zx_ws *w)
{
    return w ? w->ops->errmsg(w) : "no workspace";
}

const char *zx_ws_status(zx_ws *w)
{
    return w && w->ops->status ? w->ops->status(w) : NULL;
}

/* ---- SQL text ----------------------------------------------------------- */

int ws_sql_ident(zx_buf *b, const char *s)
{
    if (zx_buf_put(b, "\"", 1) < 0)
        return -1;
    for (const char *q; (q = strchr(s, '"')) != NULL; s = q + 1)
        if (zx_buf_put(b, s, (size_t)(q - s) + 1) < 0 || zx_buf_put(b, "\"", 1) < 0)
            return -1;
    return zx_buf_put(b, s, strlen(s)) < 0 || zx_buf_put(b, "\"", 1) < 0 ? -1 : 0;
}

int ws_sql_str(zx_buf *b, const char *s)
{
    return zx_buf_put(b, s, strlen(s));
}

int ws_utf8_text(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t k;
        uint32_t cp;
        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            k = 1, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
            k = 2, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
            k = 3, cp = c & 0x07;
        else
            return 0;
        if (n - i <= k)
            return 0;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if ((k == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (k == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
        i += k + 1;
    }
    return 1;
}

/* ---- the table cache ----------------------------------------------------- */

static void table_free(zx_ws *w, ws_table *t)
{
    if (t->be && w->ops->table_free)
        w->ops->table_free(t);
    for (uint32_t i = 0; i < t->ncols; i++) {
        free(t->cols[i].name);
        free(t->cols[i].decl);
    }
    free(t->cols);
    free(t->name);
    free(t);
}

void ws_cache_drop(zx_ws *w)
{
    while (w->tables) {
        ws_table *t = w->tables;
        w->tables = t->next;
        table_free(w, t);
    }
}

int ws_table_add_col(zx_ws *w, ws_table *t, const char *name, const char *decl)
{
    if (t->ncols == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 16;
        ws_col *c = realloc(t->cols, cap * sizeof(*c));
        if (!c)
            return -1;
        t->cols = c;
        t->cap = cap;
    }
    ws_col *c = &t->cols[t->ncols];
    c->name = strdup(name);
    c->decl = strdup(decl ? decl : "");
    if (!c->name || !c->decl) {
        free(c->name);
        free(c->decl);
        return -1;
    }
    c->kind = w->ops->kind_from_decl(decl);
    t->ncols++;
    return 0;
}

int64_t ws_find_col(const zx_ws *w, const ws_table *t, const char *name)
{
    for (uint32_t i = 0; i < t->ncols; i++)
        if (w->ops->name_cmp(t->cols[i].name, name) == 0)
            return i;
    return -1;
}

ws_table *ws_get_table(zx_ws *w, const char *name)
{
    for (ws_table *t = w->tables; t; t = t->next)
        if (w->ops->name_cmp(t->name, name) == 0)
            return t;
    ws_table *t = calloc(1, sizeof(*t));
    if (!t || !(t->name = strdup(name)) || w->ops->load_table(w, t) < 0) {
        if (t)
            table_free(w, t);
        return NULL;
    }
    t->loaded = 1;
    t->next = w->tables;
    w->tables = t;
    return t;
}

int ws_reject_row(zx_ws *w, const ws_reject *r, char *err, size_t errlen)
{
    return w->ops->reject_row(w, r, err, errlen);
}

int zx_ws_table_columns(zx_ws *w, const char *table, char **json_out)
{
    *json_out = NULL;
    ws_table *t = ws_get_table(w, table);
    if (!t)
        return -1;
    if (t->ncols == 0)
        return 1;
    zx_buf b = { 0 };
    int bad = zx_buf_put(&b, "[", 1) < 0;
    for (uint32_t i = 0; i < t->ncols && !bad; i++) {
        const ws_col *c = &t->cols[i];
        char type[64];
        if (c->kind != ZX_FIT_ANY || !c->decl[0]) {
            snprintf(type, sizeof(type), "%s", zx_fit_kind_name(c->kind));
        } else {
            size_t k = 0;
            for (; c->decl[k] && k < sizeof(type) - 1; k++)
                type[k] = (char)(c->decl[k] >= 'A' && c->decl[k] <= 'Z' ? c->decl[k] + 32
                                                                        : c->decl[k]);
            type[k] = 0;
        }
        bad = (i && zx_buf_put(&b, ",", 1) < 0) ||
              zx_buf_put(&b, "{\"name\":", 8) < 0 ||
              zx_fit_json_quote(&b, c->name, strlen(c->name)) < 0 ||
              zx_buf_put(&b, ",\"type\":", 8) < 0 ||
              zx_fit_json_quote(&b, type, strlen(type)) < 0 || zx_buf_put(&b, "}", 1) < 0;
    }
    if (bad || zx_buf_put(&b, "]", 1) < 0) {
        zx_buf_free(&b);
        return -1;
    }
    *json_out = b.p;
    return 0;
}

/* ---- rejected messages --------------------------------------------------- */

int zx_ws_reject_messages(zx_ws *w, const zx_ws_append *a, const zx_frame_reject *r, size_t n,
                          uint64_t *stored, char *err, size_t errlen)
{
    *stored = 0;
    if (!n)
        return 0;
    if (!w->in_txn)
        return zx_seterr(err, errlen, "workspace: no transaction open");
    char ts[ZX_TS_BUFSZ];
    zx_ts_format(a->ingested_at_us ? a->ingested_at_us : zx_now_us(), ts);
    for (size_t i = 0; i < n; i++) {
        ws_reject rr = {
            .table = a->table, .rejected_at = ts, .pipeline = a->pipeline ? a->pipeline : "",
            .request_id = a->request_id, .value_type = "message",
            .raw = r[i].raw ? r[i].raw : "", .raw_len = r[i].raw ? r[i].raw_len : 0,
            .reason = r[i].reason ? r[i].reason : "", .key = r[i].key, .key_len = r[i].key_len,
            .position = r[i].position ? r[i].position : "",
        };
        int rc = ws_reject_row(w, &rr, err, errlen);
        if (rc < 0)
            return -1;
        if (rc == 0)
            ++*stored;
    }
    return 0;
}

/* ---- append ---------------------------------------------------------------- */

static int grow_scratch(zx_ws *w, size_t nrs, size_t ntc)
{
    if (nrs > w->rs_cap) {
        size_t cap = nrs + 16;
        int32_t *m = realloc(w->map, cap * sizeof(*m));
        if (m)
            w->map = m;
        uint64_t *r = realloc(w->rejn, cap * sizeof(*r));
        if (r)
            w->rejn = r;
        char **n = realloc(w->nomsg, cap * sizeof(*n));
        if (n)
            w->nomsg = n;
        uint64_t *x = realloc(w->xlast, cap * sizeof(*x));
        if (x)
            w->xlast = x;
        if (!m || !r || !n || !x)
            return -1;
        w->rs_cap = cap;
    }
    if (ntc > w->tc_cap) {
        size_t cap = ntc + 16;
        uint32_t *p = realloc(w->slot, cap * sizeof(*p));
        if (p)
            w->slot = p;
        uint8_t *u = realloc(w->used, cap);
        if (u)
            w->used = u;
        uint32_t *l = realloc(w->list, cap * sizeof(*l));
        if (l)
            w->list = l;
        if (!p || !u || !l)
            return -1;
        w->tc_cap = cap;
    }
    return 0;
}

/* Record one rejected value (v != NULL) or row (v == NULL, reason given).
 * 0, or -1 on a database error / out of memory (err set). */
static int reject(zx_ws *w, ws_table *t, const zx_ws_append *a, const char *column,
                  zx_fit_kind kind, const zx_value *v, const char *reason, char *err,
                  size_t errlen)
{
    char why[512];
    ws_reject r = { .table = t->name, .rejected_at = w->ts,
                    .pipeline = a->pipeline ? a->pipeline : "", .request_id = a->request_id,
                    .column = column, .value_type = "row" };
    if (v) {
        w->raw.len = 0;
        if (zx_fit_json_text(v, &w->raw) < 0)
            return zx_seterr(err, errlen, "workspace: out of memory");
        r.column_type = kind == ZX_FIT__COUNT ? "none" : zx_fit_kind_name(kind);
        r.value_type = zx_value_type_name(v);
        r.raw = w->raw.p;
        r.raw_len = w->raw.len;
        if (!reason) {
            zx_fit_reason(why, sizeof(why), w->raw.p, w->raw.len, (zx_type)v->type,
                          column ? column : "", kind);
            reason = why;
        }
    }
    r.reason = reason ? reason : "";
    return ws_reject_row(w, &r, err, errlen) < 0 ? -1 : 0;
}

int ws_reject_refused_row(zx_ws *w, ws_table *t, const zx_ws_append *a, const zx_rowset *rs,
                          uint32_t row, const char *why, char *err, size_t errlen)
{
    char msg[600];
    snprintf(msg, sizeof(msg), "row not inserted: %.500s", why);
    /* the row as one JSON object (xbuf is free: _extra was put already) */
    zx_buf *x = &w->xbuf;
    x->len = 0;
    int bad = row >= rs->nrows;
    for (uint64_t i = bad ? 0 : rs->row_start[row]; !bad && i < rs->row_start[row + 1]; i++) {
        const zx_cell *cell = &rs->cells[i];
        if (cell->col >= rs->ncols)
            continue;
        const zx_column *col = &rs->cols[cell->col];
        bad = zx_buf_put(x, x->len ? "," : "{", 1) < 0 ||
              zx_fit_json_quote(x, col->name, col->name_len) < 0 ||
              zx_buf_put(x, ":", 1) < 0 || zx_fit_json_text(&cell->v, x) < 0;
    }
    if (!bad && zx_buf_put(x, x->len ? "}" : "{}", x->len ? 1 : 2) < 0)
        bad = 1;
    ws_reject r = { .table = t->name, .rejected_at = w->ts,
                    .pipeline = a->pipeline ? a->pipeline : "", .request_id = a->request_id,
                    .value_type = "row", .raw = bad ? NULL : x->p, .raw_len = bad ? 0 : x->len,
                    .reason = msg };
    int rc = ws_reject_row(w, &r, err, errlen) < 0 ? -1 : 0;
    x->len = 0;
    return rc;
}

static int result_rejcols(zx_ws_result *res, const char *name, uint64_t n)
{
    for (size_t i = 0; i < res->nrejcols; i++)
        if (strncmp(res->rejcols[i].name, name, sizeof(res->rejcols[i].name) - 1) == 0) {
            res->rejcols[i].count += n;
            return 0;
        }
    zx_ws_colcount *r = realloc(res->rejcols, (res->nrejcols + 1) * sizeof(*r));
    if (!r)
        return -1;
    res->rejcols = r;
    snprintf(r[res->nrejcols].name, sizeof(r->name), "%s", name);
    r[res->nrejcols].count = n;
    res->nrejcols++;
    return 0;
}

static int add_newcol(zx_ws_result *res, const char *name, uint8_t type)
{
    zx_ws_newcol *n = realloc(res->newcols, (res->nnewcols + 1) * sizeof(*n));
    if (!n)
        return -1;
    res->newcols = n;
    snprintf(n[res->nnewcols].name, sizeof(n->name), "%s", name);
    n[res->nnewcols].type = type;
    res->nnewcols++;
    return 0;
}

/* Store a fitted value in its slot, or reject it when the backend cannot
 * store it although it fits the kind.  1 stored, 0 misfit, 2 refused by
 * the backend (REFUSED_WHY), -1 ENOMEM. */
#define REFUSED_WHY "the database cannot store it (Postgres: a NUL byte in text; in JSON, " \
                    "\\u0000 or a number beyond numeric's range)"
static int put_value(zx_ws *w, uint32_t slot, zx_fit_kind k, const zx_fit_out *o)
{
    if (w->ops->refuses && w->ops->refuses(o, k))
        return 2;
    return w->ops->put(w, slot, o, &w->buf) < 0 ? -1 : 1;
}

/* Put the row's _extra object (w->xbuf) in its slot, or record it as a
 * reject when a user-made _extra column does not take it.  0, or -1 (err
 * set). */
static int put_extra(zx_ws *w, ws_table *t, const zx_ws_append *a, int64_t idx,
                     zx_ws_result *res, char *err, size_t errlen)
{
    zx_value v = { .type = ZX_T_JSON };
    zx_fit_out o;
    int f = 0;
    if (w->xbuf.len <= UINT32_MAX) {
        v.len = (uint32_t)w->xbuf.len;
        v.s = w->xbuf.p;
        f = zx_fit_value(t->cols[idx].kind, &v, &w->buf, &o);
        if (f > 0)
            f = put_value(w, w->slot[idx] - 1, t->cols[idx].kind, &o);
        if (f < 0)
            return zx_seterr(err, errlen, "workspace: out of memory");
    }
    if (f == 1)
        return 0;
    if (reject(w, t, a, ZX_WS_EXTRA_COLUMN, t->cols[idx].kind, v.s ? &v : NULL,
               v.s ? NULL : "the fields over the column cap do not fit in one value",
               err, errlen) < 0)
        return -1;
    res->rejects++;
    if (result_rejcols(res, ZX_WS_EXTRA_COLUMN, 1) < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    return 0;
}

/* Columns of t that count against the column cap: all but the metadata
 * columns and _extra. */
static uint32_t data_columns(const zx_ws *w, const ws_table *t)
{
    uint32_t n = t->ncols;
    for (int m = 0; m < 2; m++)
        n -= ws_find_col(w, t, zx_ws_meta_name[m]) >= 0;
    n -= ws_find_col(w, t, ZX_WS_EXTRA_COLUMN) >= 0;
    return n;
}

/* Rowset column c gets no column (the cap is reached): keep it in _extra. */
static void to_extra(zx_ws *w, const zx_rowset *rs, uint32_t c, uint32_t cap,
                     zx_ws_result *res)
{
    w->map[c] = -4;
    if (res->extra_fields++ == 0)
        snprintf(res->extra_first, sizeof(res->extra_first), "%s", rs->cols[c].name);
    res->max_columns = cap;
}

/* The overflow column exists (or is added now): its index in *idx.  When
 * the database refuses to add it, the fields meant for it become rejects
 * that say why (w->map -2 with a message).  0, or -1 (err set). */
static int ensure_extra(zx_ws *w, ws_table *t, const zx_rowset *rs, uint32_t cap,
                        zx_ws_result *res, int64_t *idx, char *err, size_t errlen)
{
    *idx = ws_find_col(w, t, ZX_WS_EXTRA_COLUMN);
    if (*idx >= 0)
        return 0;
    char *why = NULL;
    int rc = w->ops->add_column(w, t, ZX_WS_EXTRA_COLUMN, w->ops->decl_for_type(ZX_T_JSON), &why,
                                err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 0) {
        *idx = (int64_t)t->ncols - 1;
        if (add_newcol(res, ZX_WS_EXTRA_COLUMN, ZX_T_JSON) == 0)
            return 0;
        return zx_seterr(err, errlen, "workspace: out of memory");
    }
    for (uint32_t c = 0; c < rs->ncols; c++) {
        if (w->map[c] != -4)
            continue;
        w->map[c] = -2;
        if (asprintf(&w->nomsg[c], "table %s is at its cap of %u columns and column %s "
                     "could not be added: %s", t->name, cap, ZX_WS_EXTRA_COLUMN,
                     why ? why : "refused") < 0) {
            w->nomsg[c] = NULL;
            free(why);
            return zx_seterr(err, errlen, "workspace: out of memory");
        }
    }
    free(why);
    res->extra_fields = 0;
    res->extra_first[0] = '\0';
    return 0;
}

/* Append to w->xbuf the row's fields kept in _extra (cells b..e), as one
 * JSON object; xbuf is left empty when there are none.  The last cell of
 * a column in the row wins (w->xlast); nulls are left out.  Counts the
 * values in res.  0, or -1 out of memory. */
static int build_extra(zx_ws *w, const zx_rowset *rs, uint64_t b, uint64_t e,
                       zx_ws_result *res)
{
    zx_buf *x = &w->xbuf;
    x->len = 0;
    for (uint64_t i = b; i < e; i++) {
        const zx_cell *cell = &rs->cells[i];
        if (cell->col >= rs->ncols || w->map[cell->col] != -4 || w->xlast[cell->col] != i ||
            cell->v.type == ZX_T_NULL)
            continue;
        const zx_column *col = &rs->cols[cell->col];
        if (zx_buf_put(x, x->len ? "," : "{", 1) < 0 ||
            zx_fit_json_quote(x, col->name, col->name_len) < 0 || zx_buf_put(x, ":", 1) < 0 ||
            zx_fit_json_text(&cell->v, x) < 0)
            return -1;
        res->extra_values++;
    }
    if (x->len && zx_buf_put(x, "}", 1) < 0)
        return -1;
    return 0;
}

/* CREATE TABLE with the batch's new columns (w->map[c] == -3; at most
 * ZX_WS_MAX_COLUMNS) and the metadata columns.  0, 1 when there is
 * nothing to create, or -1 (err set). */
static int create_table(zx_ws *w, ws_table *t, const zx_rowset *rs, uint32_t meta,
                        zx_ws_result *res, char *err, size_t errlen)
{
    ws_coldef *defs = malloc((rs->ncols + 2) * sizeof(*defs));
    if (!defs)
        return zx_seterr(err, errlen, "workspace: out of memory");
    size_t n = 0;
    for (uint32_t c = 0; c < rs->ncols && n < ZX_WS_MAX_COLUMNS; c++) {
        if (w->map[c] != -3 || !w->ops->decl_for_type(rs->cols[c].type))
            continue;
        int dup = 0;
        for (size_t d = 0; d < n && !dup; d++)
            dup = w->ops->name_cmp(defs[d].name, rs->cols[c].name) == 0;
        if (!dup)
            defs[n++] = (ws_coldef){ .name = rs->cols[c].name, .type = rs->cols[c].type };
    }
    size_t ndata = n;
    for (int m = 0; m < 2; m++)
        if (meta & (1u << m))
            defs[n++] = (ws_coldef){ .name = zx_ws_meta_name[m], .type = zx_ws_meta_type[m] };
    if (n == 0) {
        free(defs);
        return 1;
    }
    int rc = w->ops->create_table(w, t, defs, n, err, errlen);
    if (rc == 2) {   /* another zxd made it: map_fields adds what it lacks */
        free(defs);
        return 0;
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (ws_table_add_col(w, t, defs[i].name, w->ops->decl_for_type(defs[i].type)) < 0 ||
            (i < ndata && add_newcol(res, defs[i].name, defs[i].type) < 0))
            rc = zx_seterr(err, errlen, "workspace: out of memory");
    if (rc == 0)
        res->created_table = 1;
    free(defs);
    return rc;
}

/* Map each field of rs that needs a column (w->map -3) to a column of
 * t: found (fields whose names the database cannot tell apart by the
 * rule of mirrors: *stored_out, malloc'd, freed by the caller with its
 * names), added while the cap allows, else kept in _extra; then _extra
 * (*extra_idx) and the metadata columns (meta_idx) made if missing.  0,
 * or -1 (err set). */
static int map_fields(zx_ws *w, ws_table *t, const zx_rowset *rs, uint32_t meta, uint32_t cap,
                      zx_ws_result *res, char ***stored_out, int meta_idx[2],
                      int64_t *extra_idx, char *err, size_t errlen)
{
    uint32_t ncols = rs->ncols;
    /* fields whose names the database cannot tell apart (SQLite: "UPPER"
     * and "upper") each get their own column, by the rule of mirrors */
    char **stored = NULL;
    int clash = wc_names_clash(w, t, rs, w->map);
    if (clash < 0 || (clash && !(stored = calloc(ncols + 1, sizeof(*stored)))))
        goto nomem;
    *stored_out = stored;
    if (clash) {
        const char **src = calloc(ncols + 1, sizeof(*src));
        for (uint32_t c = 0; src && c < ncols; c++)
            src[c] = w->map[c] == -3 ? rs->cols[c].name : NULL;
        int named = src ? wc_stored_names(w, t, src, ncols, stored) : -1;
        free(src);
        if (named < 0)
            goto nomem;
    }
    uint32_t have = data_columns(w, t);
    uint32_t budget = have < cap ? cap - have : 0;
    for (uint32_t c = 0; c < ncols; c++) {
        if (w->map[c] != -3)
            continue;
        const char *cname = stored ? stored[c] : rs->cols[c].name;
        int64_t i = stored ? wc_find_exact(w, t, cname) : ws_find_col(w, t, cname);
        if (i < 0) {
            const char *decl = w->ops->decl_for_type(rs->cols[c].type);
            if (!decl) { /* a hostile frame's unknown type: no column for it */
                w->map[c] = -2;
                continue;
            }
            if (budget == 0) {
                to_extra(w, rs, c, cap, res);
                continue;
            }
            int rc = w->ops->add_column(w, t, cname, decl, &w->nomsg[c], err, errlen);
            if (rc < 0)
                return -1;
            if (rc == 0 && add_newcol(res, cname, rs->cols[c].type) < 0)
                goto nomem;
            budget -= rc == 0;
            i = rc == 0 ? (int64_t)t->ncols - 1 : -2;
        }
        w->map[c] = (int32_t)i;
    }
    if (res->extra_fields && ensure_extra(w, t, rs, cap, res, extra_idx, err, errlen) < 0)
        return -1;
    for (int m = 0; m < 2; m++) {
        if (!(meta & (1u << m)))
            continue;
        int64_t i = ws_find_col(w, t, zx_ws_meta_name[m]);
        if (i < 0) {
            int rc = w->ops->add_column(w, t, zx_ws_meta_name[m],
                                        w->ops->decl_for_type(zx_ws_meta_type[m]), NULL, err,
                                        errlen);
            if (rc < 0)
                return -1;
            i = rc == 0 ? (int64_t)t->ncols - 1 : -1;
        }
        meta_idx[m] = (int)i;
    }
    return 0;
nomem:
    return zx_seterr(err, errlen, "workspace: out of memory");
}

/* Row r of rs into the rows of t begun (rows_begin): the metadata, each
 * value fitted to its column or rejected (w->rejn, res->rejects), the
 * fields kept in _extra, then the row ended (a row the database refuses
 * is rejected whole).  0, or -1 (err set). */
static int append_row(zx_ws *w, ws_table *t, const zx_ws_append *a, const zx_rowset *rs,
                      uint32_t r, const int meta_idx[2], const zx_fit_out meta_out[2],
                      int64_t extra_idx, zx_ws_result *res, char *err, size_t errlen)
{
    uint32_t ncols = rs->ncols;
    uint64_t b = rs->row_start[r], e = rs->row_start[r + 1];
    int has_extra = 0;
    for (int m = 0; m < 2; m++)
        if (meta_idx[m] >= 0 && meta_out[m].st != ZX_FIT_S_NULL &&
            w->ops->put(w, w->slot[meta_idx[m]] - 1, &meta_out[m], &w->buf) < 0)
            goto nomem;
    for (uint64_t i = b; i < e; i++) {
        const zx_cell *cell = &rs->cells[i];
        if (cell->col >= ncols)
            continue;
        int32_t m = w->map[cell->col];
        if (m == -1)
            continue;
        if (m == -4) {
            w->xlast[cell->col] = i;
            has_extra = 1;
            continue;
        }
        if (cell->v.type == ZX_T_NULL) {
            if (m >= 0) {
                zx_fit_out o = { .st = ZX_FIT_S_NULL };
                if (w->ops->put(w, w->slot[m] - 1, &o, &w->buf) < 0)
                    goto nomem;
            }
            continue;
        }
        const char *cname = m >= 0 ? t->cols[m].name : rs->cols[cell->col].name;
        zx_fit_out o;
        int f = m >= 0 ? zx_fit_value(t->cols[m].kind, &cell->v, &w->buf, &o) : 0;
        if (f > 0)
            f = put_value(w, w->slot[m] - 1, t->cols[m].kind, &o);
        if (f < 0)
            goto nomem;
        if (f == 1)
            continue;
        if (m >= 0) {
            zx_fit_out nul = { .st = ZX_FIT_S_NULL };
            if (w->ops->put(w, w->slot[m] - 1, &nul, &w->buf) < 0)
                goto nomem;
        }
        char why[600];
        const char *reason = NULL;
        if (f == 2) {
            snprintf(why, sizeof(why), "value of column %.100s: %s", cname, REFUSED_WHY);
            reason = why;
        } else if (m < 0) {
            snprintf(why, sizeof(why), "column %.100s could not be added: %.300s", cname,
                     w->nomsg[cell->col] ? w->nomsg[cell->col]
                     : !w->ops->decl_for_type(rs->cols[cell->col].type)
                         ? "unknown value type"
                         : "the reason was lost (out of memory)");
            reason = why;
        }
        if (reject(w, t, a, cname, m >= 0 ? t->cols[m].kind : ZX_FIT__COUNT, &cell->v,
                   reason, err, errlen) < 0)
            return -1;
        w->rejn[cell->col]++;
        res->rejects++;
    }
    if (has_extra && extra_idx >= 0) {
        if (build_extra(w, rs, b, e, res) < 0)
            goto nomem;
        if (w->xbuf.len && put_extra(w, t, a, extra_idx, res, err, errlen) < 0)
            return -1;
    }
    char why[600];
    int rc = w->ops->row_end(w, why, sizeof(why), err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 0) {
        res->rows++;
    } else {
        if (ws_reject_refused_row(w, t, a, rs, r, why, err, errlen) < 0)
            return -1;
        res->rejects++;
    }
    return 0;
nomem:
    return zx_seterr(err, errlen, "workspace: out of memory");
}

int zx_ws_append_rows(zx_ws *w, const zx_ws_append *a, const zx_rowset *rs,
                      zx_ws_result *res, char *err, size_t errlen)
{
    int ret = -1, meta_idx[2] = { -1, -1 }, began = 0;
    int64_t extra_idx = -1;
    char **stored = NULL;   /* names that differ only in case: wc_stored_names */
    uint32_t meta = a->metadata & 3u, ncols = rs->ncols;
    uint32_t cap = a->max_columns ? a->max_columns : ZX_WS_DEFAULT_MAX_COLUMNS;
    if (cap > ZX_WS_MAX_COLUMNS)
        cap = ZX_WS_MAX_COLUMNS;
    memset(res, 0, sizeof(*res));
    if (!w->in_txn)
        return zx_seterr(err, errlen, "workspace: append outside a transaction");
    if (!a->table || !*a->table)
        return zx_seterr(err, errlen, "workspace: no table name");
    if (rs->nrows == 0)
        return 0;
    ws_table *t = ws_get_table(w, a->table);
    if (!t)
        return zx_seterr(err, errlen, "workspace: table %s: %s", a->table, zx_ws_errmsg(w));
    if (grow_scratch(w, ncols, t->ncols) < 0)
        goto nomem;
    memset(w->nomsg, 0, ncols * sizeof(*w->nomsg));
    memset(w->rejn, 0, ncols * sizeof(*w->rejn));
    int64_t ingested_us = a->ingested_at_us ? a->ingested_at_us : zx_now_us();
    zx_ts_format(ingested_us, w->ts);

    /* classify: -1 skip, -3 needs a column, else the table column */
    for (uint32_t c = 0; c < ncols; c++) {
        const zx_column *col = &rs->cols[c];
        int shadow = strcasecmp(col->name, ZX_WS_EXTRA_COLUMN) == 0;
        for (int m = 0; m < 2; m++)
            shadow |= (meta & (1u << m)) && strcasecmp(col->name, zx_ws_meta_name[m]) == 0;
        if (col->type == ZX_T_NULL || shadow || strlen(col->name) != col->name_len)
            w->map[c] = -1;
        else
            w->map[c] = -3;
    }
    if (t->ncols == 0) {
        /* a new table gets the first `cap` fields as columns */
        uint32_t budget = cap;
        for (uint32_t c = 0; c < ncols; c++) {
            if (w->map[c] != -3 || !w->ops->decl_for_type(rs->cols[c].type))
                continue;
            if (budget)
                budget--;
            else
                to_extra(w, rs, c, cap, res);
        }
        int rc = create_table(w, t, rs, meta, res, err, errlen);
        if (rc < 0)
            goto out;
        if (rc == 1) { /* nothing to create: every value null */
            ret = 0;
            goto out;
        }
    }
    if (map_fields(w, t, rs, meta, cap, res, &stored, meta_idx, &extra_idx, err, errlen) < 0)
        goto out;
    if (grow_scratch(w, ncols, t->ncols) < 0)
        goto nomem;

    /* the slots: used table columns in table order */
    memset(w->used, 0, t->ncols);
    for (uint32_t c = 0; c < ncols; c++)
        if (w->map[c] >= 0)
            w->used[w->map[c]] = 1;
    for (int m = 0; m < 2; m++)
        if (meta_idx[m] >= 0)
            w->used[meta_idx[m]] = 1;
    if (extra_idx >= 0)
        w->used[extra_idx] = 1;
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->ncols; i++) {
        w->slot[i] = w->used[i] ? n + 1 : 0;
        if (w->used[i])
            w->list[n++] = i;
    }
    if (w->ops->rows_begin(w, t, w->list, n, rs, err, errlen) < 0)
        goto out;
    began = 1;
    zx_fit_out meta_out[2] = {
        { .st = ZX_FIT_S_TEXT, .s = w->ts, .len = strlen(w->ts), .i = ingested_us },
        { .st = a->request_id ? ZX_FIT_S_TEXT : ZX_FIT_S_NULL, .s = a->request_id,
          .len = a->request_id ? strlen(a->request_id) : 0 },
    };

    for (uint32_t r = 0; r < rs->nrows; r++)
        if (append_row(w, t, a, rs, r, meta_idx, meta_out, extra_idx, res, err, errlen) < 0)
            goto out;
    if (w->ops->rows_end(w, t, a, rs, res, err, errlen) < 0)
        goto out;
    began = 0;
    for (uint32_t c = 0; c < ncols; c++)
        if (w->rejn[c] && result_rejcols(res, w->map[c] >= 0 ? t->cols[w->map[c]].name
                                                             : rs->cols[c].name,
                                         w->rejn[c]) < 0)
            goto nomem;
    ret = 0;
    goto out;
nomem:
    zx_seterr(err, errlen, "workspace: out of memory");
out:
    if (began)
        w->ops->rows_abort(w);
    for (uint32_t c = 0; c < ncols && w->nomsg; c++) {
        free(w->nomsg[c]);
        w->nomsg[c] = NULL;
    }
    for (uint32_t c = 0; c < ncols && stored; c++)
        free(stored[c]);
    free(stored);
    return ret;
}

void zx_ws_result_free(zx_ws_result *res)
{
    if (!res)
        return;
    free(res->newcols);
    free(res->rejcols);
    memset(res, 0, sizeof(*res));
}
