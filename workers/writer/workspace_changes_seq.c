/*
 * workspace_changes_seq.c — the source positions a mirror's rows hold
 * (workspace.h: zx_ws_key_seqs; why: workers/writer/keyseq.h).
 *
 * A frame's keys are looked up in statements of up to WC_BATCH_ROWS keys,
 * each key with the frame's row number i: on a backend that takes arrays
 * (Postgres) SELECT u.i, t._zx_seq FROM unnest($1::bigint[], $2::type[],
 * ...) AS u(i, k0, ...) JOIN table t ON t.key = u.k0 ...; on the others
 * (SQLite) the same join with a value list, (VALUES (?, ?), ...).  Both
 * probe the table's key index once a key, and bring the row's page into
 * the cache where the change's write finds it next.
 *
 * It must never: create or change anything, or report a row for a key
 * other than the change's (keys are matched by the database, as the
 * upsert that follows matches them).
 */
#include "workers/writer/workspace_changes_int.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "proto/frame.h"

static int64_t rs_col(const zx_rowset *rs, const char *name)
{
    return zx_rowset_find_column(rs, name, strlen(name));
}

/* The rows of rs worth a lookup: a non-empty _zx_seq, an operation that
 * is not a truncate, every key column with a value. */
static int wanted(const zx_rowset *rs, uint32_t r, const zx_value **v, int64_t cseq,
                  int64_t cop, const int64_t *kc, size_t nkeys)
{
    wc_row_cells(rs, r, v);
    const zx_value *s = v[cseq], *op = cop >= 0 ? v[cop] : NULL;
    if (!s || s->type != ZX_T_TEXT || !s->len || !op || op->type != ZX_T_TEXT ||
        (op->len == 8 && !memcmp(op->s, "truncate", 8)))
        return 0;
    for (size_t k = 0; k < nkeys; k++)
        if (!v[kc[k]] || v[kc[k]]->type == ZX_T_NULL)
            return 0;
    return 1;
}

/* The join after the key list u: " JOIN table AS t ON t.key = u.k0 ...".
 * 0, or -1 out of memory. */
static int join_on(apply *a, const int64_t *tk, size_t nkeys, int arrays)
{
    zx_buf *b = &a->sql;
    const ws_ops *ops = a->w->ops;
    int bad = ws_sql_str(b, " JOIN ") < 0 || ops->table_sql(a->w, a->t, b) < 0 ||
              ws_sql_str(b, " AS t ON ") < 0;
    for (size_t k = 0; k < nkeys && !bad; k++) {
        char uk[32];
        if (arrays)
            snprintf(uk, sizeof(uk), "u.k%zu", k);
        else
            snprintf(uk, sizeof(uk), "u.column%zu", k + 2);
        bad = (k && ws_sql_str(b, " AND ") < 0) || ws_sql_str(b, "t.") < 0 ||
              ops->ident(b, a->t->cols[tk[k]].name) < 0 || ws_sql_str(b, " = ") < 0 ||
              ws_sql_str(b, uk) < 0;
    }
    return bad ? -1 : 0;
}

/* One statement for rows[0..n): 0, or -1 (err set). */
static int lookup(apply *a, const uint32_t *rows, uint32_t n, const int64_t *kc,
                  const int64_t *tk, size_t nkeys, int64_t scol, int arrays, zx_ws_pair_cb cb,
                  void *ctx, char *err, size_t errlen)
{
    const ws_ops *ops = a->w->ops;
    zx_buf *b = &a->sql;
    b->len = 0;
    int bad = ws_sql_str(b, arrays ? "SELECT u.i, t." : "SELECT u.column1, t.") < 0 ||
              ops->ident(b, a->t->cols[scol].name) < 0 || ws_sql_str(b, " FROM ") < 0;
    uint32_t np = 0, sent = 0;
    if (arrays) {
        for (size_t j = 0; j <= nkeys; j++)
            a->arr[j].len = 0;
        int f = 0;
        for (uint32_t i = 0; i < n && !bad; i++) {
            wc_row_cells(a->rs, rows[i], a->v);
            for (size_t k = 0; k < nkeys && !f; k++)
                f = wc_fit_into(a, (uint32_t)k, tk[k], a->c->key_cols[k], a->v[kc[k]], err,
                                errlen);
            if (f < 0)
                return -1;
            if (f) {            /* a value its column cannot hold: no row */
                f = 0;
                continue;
            }
            zx_fit_out idx = { .st = ZX_FIT_S_INT, .i = rows[i] };
            bad = ops->array_add(&a->arr[0], &idx) < 0;
            for (size_t k = 0; k < nkeys && !bad; k++)
                bad = ops->array_add(&a->arr[k + 1], &a->vals[k]) < 0;
            sent++;
        }
        if (!sent)
            return 0;
        bad = bad || ws_sql_str(b, "unnest(") < 0 || ops->array_param(b, 0, "bigint") < 0;
        for (size_t k = 0; k < nkeys && !bad; k++)
            bad = ws_sql_str(b, ", ") < 0 ||
                  ops->array_param(b, (uint32_t)k + 1, a->t->cols[tk[k]].decl) < 0;
        bad = bad || ws_sql_str(b, ") AS u(i") < 0;
        for (size_t k = 0; k < nkeys && !bad; k++) {
            char uk[32];
            snprintf(uk, sizeof(uk), ", k%zu", k);
            bad = ws_sql_str(b, uk) < 0;
        }
        bad = bad || ws_sql_str(b, ")") < 0;
        for (size_t j = 0; j <= nkeys && !bad; j++) {
            bad = ops->array_add(&a->arr[j], NULL) < 0;
            a->vals[j] = (zx_fit_out){ .st = ZX_FIT_S_TEXT, .s = a->arr[j].p,
                                       .len = a->arr[j].len };
        }
        np = (uint32_t)nkeys + 1;
    } else {
        bad = bad || ws_sql_str(b, "(VALUES ") < 0;
        for (uint32_t i = 0; i < n && !bad; i++) {
            wc_row_cells(a->rs, rows[i], a->v);
            int f = 0;
            for (size_t k = 0; k < nkeys && !f; k++)
                f = wc_fit_into(a, np + 1 + (uint32_t)k, tk[k], a->c->key_cols[k],
                                a->v[kc[k]], err, errlen);
            if (f < 0)
                return -1;
            if (f)
                continue;
            a->vals[np] = (zx_fit_out){ .st = ZX_FIT_S_INT, .i = rows[i] };
            bad = ws_sql_str(b, sent++ ? ", (" : "(") < 0;
            for (size_t k = 0; k <= nkeys && !bad; k++) {
                bad = k && ws_sql_str(b, ", ") < 0;
                ops->param(b, np++);
            }
            bad = bad || ws_sql_str(b, ")") < 0;
        }
        if (!sent)
            return 0;
        bad = bad || ws_sql_str(b, ") AS u") < 0;
    }
    if (bad || join_on(a, tk, nkeys, arrays) < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    return ops->query_pairs(a->w, b->p, a->vals, np, cb, ctx, err, errlen);
}

/* The mirror c->table and its _zx_seq column, inside the open
 * transaction: 1 (*t, *scol set), 0 when the backend cannot look, the
 * table or the column does not exist, or -1 (err set). */
static int seq_table(zx_ws *w, const zx_ws_changes *c, ws_table **t, int64_t *scol, char *err,
                     size_t errlen)
{
    if (!w->in_txn)
        return zx_seterr(err, errlen, "workspace: lookup outside a transaction");
    if (!w->ops->query_pairs)
        return 0;
    if (!(*t = ws_get_table(w, c->table)))
        return zx_seterr(err, errlen, "workspace: table %s: %s", c->table, zx_ws_errmsg(w));
    *scol = (*t)->ncols ? wc_find_exact(w, *t, ZX_CH_SEQ) : -1;
    return *scol >= 0;
}

int zx_ws_key_seqs(zx_ws *w, const zx_ws_changes *c, const zx_rowset *rs, zx_ws_pair_cb cb,
                   void *ctx, char *err, size_t errlen)
{
    int64_t cseq = rs_col(rs, ZX_CH_SEQ), cop = rs_col(rs, ZX_CH_OP);
    if (!c->nkey_cols || c->nkey_cols > ZX_FRAME_MAX_KEY_COLUMNS || !rs->nrows || cseq < 0 ||
        cop < 0)
        return w->in_txn ? 0 : zx_seterr(err, errlen, "workspace: lookup outside a transaction");
    ws_table *t = NULL;
    int64_t scol = -1;
    int have = seq_table(w, c, &t, &scol, err, errlen);
    if (have <= 0)
        return have;
    int64_t kc[ZX_FRAME_MAX_KEY_COLUMNS], tk[ZX_FRAME_MAX_KEY_COLUMNS];
    char *names[ZX_FRAME_MAX_KEY_COLUMNS];
    if (wc_stored_names(w, t, c->key_cols, (uint32_t)c->nkey_cols, names) < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    int whole = 1;
    for (size_t k = 0; k < c->nkey_cols; k++) {
        kc[k] = rs_col(rs, c->key_cols[k]);
        tk[k] = names[k] ? wc_find_exact(w, t, names[k]) : -1;
        whole &= kc[k] >= 0 && tk[k] >= 0;
        free(names[k]);
    }
    if (!whole)
        return 0;
    int arrays = w->ops->array_param != NULL;
    for (size_t k = 0; k < c->nkey_cols && arrays; k++) {
        const char *d = t->cols[tk[k]].decl;
        if (!d || !d[0] || strchr(d, '['))
            return 0;   /* unnest would flatten an array key */
    }
    uint32_t per = WC_BATCH_ROWS;
    if (!arrays && per * (c->nkey_cols + 1) > WC_BATCH_PARAMS)
        per = (uint32_t)(WC_BATCH_PARAMS / (c->nkey_cols + 1));
    uint32_t nslots = arrays ? (uint32_t)c->nkey_cols + 1 : per * ((uint32_t)c->nkey_cols + 1);
    apply a = { .w = w, .c = c, .rs = rs, .t = t, .quiet = 1, .nvals = nslots };
    a.vals = calloc(nslots, sizeof(*a.vals));
    a.bufs = calloc(nslots, sizeof(*a.bufs));
    a.v = malloc((rs->ncols + 1) * sizeof(*a.v));
    uint32_t *rows = malloc((size_t)per * sizeof(*rows));
    if (arrays) {
        a.narr = (uint32_t)c->nkey_cols + 1;
        a.arr = calloc(a.narr, sizeof(*a.arr));
    }
    int ret = 0;
    if (!a.vals || !a.bufs || !a.v || !rows || (arrays && !a.arr)) {
        ret = zx_seterr(err, errlen, "workspace: out of memory");
        goto out;
    }
    uint32_t n = 0;
    for (uint32_t r = 0; r <= rs->nrows && ret == 0; r++) {
        if (r < rs->nrows && wanted(rs, r, a.v, cseq, cop, kc, c->nkey_cols))
            rows[n++] = r;
        if (n && (n == per || r == rs->nrows)) {
            ret = lookup(&a, rows, n, kc, tk, c->nkey_cols, scol, arrays, cb, ctx, err,
                         errlen);
            n = 0;
        }
    }
out:
    for (uint32_t i = 0; a.bufs && i < nslots; i++)
        zx_buf_free(&a.bufs[i]);
    for (uint32_t i = 0; a.arr && i < a.narr; i++)
        zx_buf_free(&a.arr[i]);
    free(a.bufs);
    free(a.arr);
    free(a.vals);
    free(a.v);
    free(rows);
    zx_buf_free(&a.sql);
    return ret;
}

struct maxctx {
    char *s;
    size_t len;
    int nomem;
};

static void max_one(void *ctx, int64_t i, const char *s, size_t len)
{
    struct maxctx *m = ctx;
    (void)i;
    free(m->s);
    m->s = malloc(len ? len : 1);
    if (!m->s) {
        m->nomem = 1;
        return;
    }
    memcpy(m->s, s, len);
    m->len = len;
}

int zx_ws_max_seq(zx_ws *w, const zx_ws_changes *c, char **out, size_t *len, char *err,
                  size_t errlen)
{
    *out = NULL;
    *len = 0;
    ws_table *t = NULL;
    int64_t scol = -1;
    int have = seq_table(w, c, &t, &scol, err, errlen);
    if (have <= 0)
        return have;
    zx_buf b = { 0 };
    const char *coll = w->ops->bytes_collation;
    int bad = ws_sql_str(&b, "SELECT 0, max(") < 0 || w->ops->ident(&b, t->cols[scol].name) < 0 ||
              (coll && ws_sql_str(&b, coll) < 0) || ws_sql_str(&b, ") FROM ") < 0 ||
              w->ops->table_sql(w, t, &b) < 0;
    if (bad) {
        zx_buf_free(&b);
        return zx_seterr(err, errlen, "workspace: out of memory");
    }
    struct maxctx m = { 0 };
    int rc = w->ops->query_pairs(w, b.p, NULL, 0, max_one, &m, err, errlen);
    zx_buf_free(&b);
    if (rc == 0 && m.nomem)
        rc = zx_seterr(err, errlen, "workspace: out of memory");
    if (rc < 0) {
        free(m.s);
        return -1;
    }
    *out = m.s;
    *len = m.len;
    return 0;
}
