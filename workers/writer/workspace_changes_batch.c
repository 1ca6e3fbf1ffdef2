/*
 * workspace_changes_batch.c — a run of changes without TRUNCATE applied in
 * few statements (workspace_changes_int.h: wc_apply_run).
 *
 * Changes to different keys commute; only the order of one key's changes
 * matters, and of those only the last one decides the row, when every
 * change carries the whole row.  So a run is reduced to each key's last
 * change: deletes go as DELETE ... WHERE key IN (...), upserts as INSERT
 * ... VALUES (...), (...) ON CONFLICT (key) DO UPDATE, up to WC_BATCH_ROWS
 * changes a statement (a CDC frame of many small transactions is a
 * handful of statements instead of one per change); on a backend that
 * takes arrays (Postgres), with one array parameter per column instead
 * of a value list: DELETE ... WHERE key = ANY($1::type[]), INSERT ...
 * SELECT * FROM unnest($1::type[], ...) ON CONFLICT ... .  Kept in their order,
 * one by one: the changes of a key that moved (an update of the key: two
 * keys), and of a key with several changes one of which left columns
 * unchanged (a later one does not carry the whole row).  A change without
 * an operation or key is applied alone (it is a reject).  A batch with a
 * misfit value, or that the table refuses, is applied again one change at
 * a time (which makes the rejects).  Keys are told apart by their values,
 * never by a hash alone.
 *
 * It must never: change the effect of the run (the mirror ends as if each
 * change were applied in order), or drop a change from the counts.
 */
#include "workers/writer/workspace_changes_int.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

enum { K_BAD = 0, K_UPSERT, K_DELETE, K_MOVE };

/* One key of the run. */
typedef struct wkey {
    uint64_t h;            /* 0: empty slot */
    uint32_t row;          /* a row holding it ... */
    uint8_t old;           /* ... as its old key (1) or its key (0) */
    uint8_t ordered;       /* its changes go one by one, in order */
    uint8_t unch;          /* one of its changes left columns unchanged */
    uint32_t n, last;      /* its changes; the last one */
} wkey;

typedef struct run {
    apply *a;
    wkey *keys;
    uint32_t cap;          /* slots, a power of two */
    uint8_t *kind;         /* per row of the run */
    uint32_t *knew, *kold; /* per row: its key's slot, its old key's (moves) */
} run;

static int op_is(const zx_value *v, const char *op)
{
    size_t n = strlen(op);
    return v && v->type == ZX_T_TEXT && v->len == n && memcmp(v->s, op, n) == 0;
}

/* The key value k of the row in v: its key, or its old key. */
static const zx_value *kval(const apply *a, const zx_value **v, size_t k, int old)
{
    int64_t col = old ? a->cc->old[k] : a->cc->key[k];
    return col >= 0 ? v[col] : NULL;
}

static int kind_of(const apply *a, const zx_value **v)
{
    if (a->c->nkey_cols == 0)
        return K_BAD;
    for (size_t k = 0; k < a->c->nkey_cols; k++) {
        const zx_value *x = kval(a, v, k, 0);
        if (!x || x->type == ZX_T_NULL)
            return K_BAD;
    }
    const zx_value *op = a->cc->op >= 0 ? v[a->cc->op] : NULL;
    if (op_is(op, "delete"))
        return K_DELETE;
    if (!op_is(op, "insert") && !op_is(op, "update"))
        return K_BAD;
    int moved = 0;
    for (size_t k = 0; k < a->c->nkey_cols; k++)
        moved |= kval(a, v, k, 1) != NULL;
    if (!moved)
        return K_UPSERT;
    for (size_t k = 0; k < a->c->nkey_cols; k++) {
        const zx_value *x = kval(a, v, k, 1);
        if (!x || x->type == ZX_T_NULL)
            return K_BAD;      /* a move without the whole old key: alone */
    }
    return K_MOVE;
}

static int same_value(const zx_value *x, const zx_value *y)
{
    if (x->type != y->type)
        return 0;
    switch (x->type) {
    case ZX_T_INT: return x->u.i == y->u.i;
    case ZX_T_BOOL: return x->u.b == y->u.b;
    case ZX_T_REAL: return memcmp(&x->u.d, &y->u.d, sizeof(double)) == 0;
    default: return x->len == y->len && memcmp(x->s, y->s, x->len) == 0;
    }
}

static uint64_t key_hash(const apply *a, const zx_value **v, int old)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t k = 0; k < a->c->nkey_cols; k++) {
        const zx_value *x = kval(a, v, k, old);
        const unsigned char *p;
        size_t n;
        double d = x->u.d;
        int64_t i = x->u.i;
        if (x->type == ZX_T_INT || x->type == ZX_T_BOOL) {
            i = x->type == ZX_T_BOOL ? x->u.b : x->u.i;
            p = (const unsigned char *)&i;
            n = sizeof(i);
        } else if (x->type == ZX_T_REAL) {
            p = (const unsigned char *)&d;
            n = sizeof(d);
        } else {
            p = (const unsigned char *)x->s;
            n = x->len;
        }
        h = (h ^ x->type) * 1099511628211ull;
        for (size_t j = 0; j < n; j++)
            h = (h ^ p[j]) * 1099511628211ull;
        h = (h ^ 0xff) * 1099511628211ull;
    }
    return h ? h : 1;
}

/* The slot of the key of the row in a->v (old: its old key), added when
 * new; the row is r. */
static uint32_t key_slot(run *u, uint32_t r, int old)
{
    apply *a = u->a;
    uint64_t h = key_hash(a, a->v, old);
    for (uint32_t i = (uint32_t)h & (u->cap - 1);; i = (i + 1) & (u->cap - 1)) {
        wkey *k = &u->keys[i];
        if (!k->h) {
            *k = (wkey){ .h = h, .row = r, .old = (uint8_t)old };
            return i;
        }
        if (k->h != h)
            continue;
        /* the same hash: the same values? */
        wc_row_cells(a->rs, k->row, a->v2);
        int same = 1;
        for (size_t c = 0; c < a->c->nkey_cols && same; c++)
            same = same_value(kval(a, a->v, c, old), kval(a, a->v2, c, k->old));
        if (same)
            return i;
    }
}

static void note(run *u, uint32_t slot, uint32_t r, int unch)
{
    wkey *k = &u->keys[slot];
    k->n++;
    k->last = r;
    k->unch |= (uint8_t)unch;
}

/* Appends " ON CONFLICT (key, ...) DO UPDATE SET c = excluded.c, ..." to
 * a->sql for the rowset's columns the table has, not listed unchanged (unch)
 * and not of the key; DO NOTHING when none is left.  0, or -1 out of memory. */
static int on_conflict(apply *a, const zx_value *unch)
{
    zx_buf *b = &a->sql;
    const zx_ws_changes *c = a->c;
    const zx_rowset *rs = a->rs;
    const ws_ops *ops = a->w->ops;
    if (ws_sql_str(b, " ON CONFLICT (") < 0)
        return -1;
    for (size_t k = 0; k < c->nkey_cols; k++)
        if ((k && ws_sql_str(b, ", ") < 0) || ops->ident(b, wc_key_name(a, k)) < 0)
            return -1;
    if (ws_sql_str(b, ") DO ") < 0)
        return -1;
    uint32_t nset = 0;
    for (uint32_t col = 0; col < rs->ncols; col++) {
        if (a->cc->tcol[col] < 0 || wc_listed(unch, rs->cols[col].name) ||
            wc_is_key(c, rs->cols[col].name))
            continue;
        if (ws_sql_str(b, nset++ ? ", " : "UPDATE SET ") < 0 ||
            ops->ident(b, wc_col_name(a, col)) < 0 || ws_sql_str(b, " = excluded.") < 0 ||
            ops->ident(b, wc_col_name(a, col)) < 0)
            return -1;
    }
    return nset ? 0 : ws_sql_str(b, "NOTHING") < 0 ? -1 : 0;
}

/* batch() for a backend that takes arrays (ops->array_param): the same
 * statement with one array parameter per column, whatever the rows (a
 * short text the server parses once per statement instead of a value list
 * of rows x columns parameters: Postgres spends ~30% less per row).  0, 1
 * or -1 as batch(); 2 when it cannot (a column without a declared type, or
 * of an array type): batch() lists the values. */
static int batch_arrays(apply *a, const uint32_t *rows, uint32_t n, int kind, char *err,
                        size_t errlen)
{
    zx_buf *b = &a->sql;
    const zx_ws_changes *c = a->c;
    const zx_rowset *rs = a->rs;
    const ws_ops *ops = a->w->ops;
    /* the columns: rowset columns (upserts) or key numbers (deletes) */
    uint32_t ncol = 0;
    int64_t *which = malloc((rs->ncols + c->nkey_cols + 1) * sizeof(*which));
    if (!which)
        return zx_seterr(err, errlen, "workspace: out of memory");
    wc_row_cells(rs, rows[0], a->v);
    const zx_value *unch = a->cc->unchanged >= 0 ? a->v[a->cc->unchanged] : NULL;
    if (kind == K_DELETE) {
        for (size_t k = 0; k < c->nkey_cols; k++)
            which[ncol++] = (int64_t)k;
    } else {
        for (uint32_t col = 0; col < rs->ncols; col++)
            if (a->cc->tcol[col] >= 0 && !wc_listed(unch, rs->cols[col].name))
                which[ncol++] = col;
    }
    int ret = 2;
    if (ncol == 0 || ncol + 1 > a->narr || ncol + 1 > a->nvals)
        goto out;
    for (uint32_t j = 0; j < ncol; j++) {
        int64_t tc = kind == K_DELETE ? wc_key_tcol(a, (size_t)which[j]) : a->cc->tcol[which[j]];
        /* an array column's values would be one array of arrays, which
         * unnest flattens */
        if (tc < 0 || !a->t->cols[tc].decl || !a->t->cols[tc].decl[0] ||
            strchr(a->t->cols[tc].decl, '['))
            goto out;
        a->arr[j].len = 0;
    }
    /* the values, column by column into their arrays; a misfit: one by one */
    a->quiet = 1;
    int f = 0, bad = 0;
    for (uint32_t i = 0; i < n && !f && !bad; i++) {
        wc_row_cells(rs, rows[i], a->v);
        for (uint32_t j = 0; j < ncol && !f && !bad; j++) {
            if (kind == K_DELETE) {
                size_t k = (size_t)which[j];
                f = wc_fit_into(a, ncol, wc_key_tcol(a, k), c->key_cols[k], kval(a, a->v, k, 0),
                                err, errlen);
            } else {
                uint32_t col = (uint32_t)which[j];
                f = wc_fit_into(a, ncol, a->cc->tcol[col], rs->cols[col].name, a->v[col], err,
                                errlen);
            }
            bad = !f && ops->array_add(&a->arr[j], &a->vals[ncol]) < 0;
        }
    }
    a->quiet = 0;
    if (f) {
        ret = f < 0 ? -1 : 1;
        goto out;
    }
    for (uint32_t j = 0; j < ncol && !bad; j++) {
        bad = ops->array_add(&a->arr[j], NULL) < 0;
        a->vals[j] = (zx_fit_out){ .st = ZX_FIT_S_TEXT, .s = a->arr[j].p, .len = a->arr[j].len };
    }
    /* the statement */
    b->len = 0;
    if (kind == K_DELETE) {
        bad = bad || ws_sql_str(b, "DELETE FROM ") < 0 || ops->table_sql(a->w, a->t, b) < 0 ||
              ws_sql_str(b, ncol > 1 ? " WHERE (" : " WHERE ") < 0;
        for (uint32_t j = 0; j < ncol && !bad; j++)
            bad = (j && ws_sql_str(b, ", ") < 0) || ops->ident(b, wc_key_name(a, (size_t)j)) < 0;
        bad = bad || ws_sql_str(b, ncol > 1 ? ") IN (SELECT * FROM unnest(" : " = ANY(") < 0;
        for (uint32_t j = 0; j < ncol && !bad; j++)
            bad = (j && ws_sql_str(b, ", ") < 0) ||
                  ops->array_param(b, j, a->t->cols[wc_key_tcol(a, (size_t)j)].decl) < 0;
        bad = bad || ws_sql_str(b, ncol > 1 ? "))" : ")") < 0;
    } else {
        bad = bad || ws_sql_str(b, "INSERT INTO ") < 0 || ops->table_sql(a->w, a->t, b) < 0 ||
              ws_sql_str(b, " (") < 0;
        for (uint32_t j = 0; j < ncol && !bad; j++)
            bad = (j && ws_sql_str(b, ", ") < 0) ||
                  ops->ident(b, wc_col_name(a, (uint32_t)which[j])) < 0;
        bad = bad || ws_sql_str(b, ") SELECT * FROM unnest(") < 0;
        for (uint32_t j = 0; j < ncol && !bad; j++)
            bad = (j && ws_sql_str(b, ", ") < 0) ||
                  ops->array_param(b, j, a->t->cols[a->cc->tcol[which[j]]].decl) < 0;
        bad = bad || ws_sql_str(b, ")") < 0 || on_conflict(a, unch) < 0;
    }
    if (bad) {
        ret = zx_seterr(err, errlen, "workspace: out of memory");
        goto out;
    }
    char why[600];
    uint64_t changed = 0;
    ret = ops->exec_row(a->w, b->p, a->vals, ncol, &changed, why, sizeof(why), err, errlen);
out:
    free(which);
    return ret;
}

/* One statement for rows[0..n) of one kind.  0 applied, 1 not (a misfit
 * or a refusal), -1 failure (err set). */
static int batch(apply *a, const uint32_t *rows, uint32_t n, int kind, char *err,
                 size_t errlen)
{
    if (a->w->ops->array_param && a->arr) {
        int rc = batch_arrays(a, rows, n, kind, err, errlen);
        if (rc != 2)
            return rc;
    }
    zx_buf *b = &a->sql;
    const zx_ws_changes *c = a->c;
    const zx_rowset *rs = a->rs;
    b->len = 0;
    uint32_t np = 0;
    int bad = 0, f = 0;
    a->quiet = 1;
    if (kind == K_DELETE) {
        bad = ws_sql_str(b, "DELETE FROM ") < 0 || a->w->ops->table_sql(a->w, a->t, b) < 0 ||
              ws_sql_str(b, c->nkey_cols > 1 ? " WHERE (" : " WHERE ") < 0;
        for (size_t k = 0; k < c->nkey_cols && !bad; k++)
            bad = (k && ws_sql_str(b, ", ") < 0) || a->w->ops->ident(b, wc_key_name(a, k)) < 0;
        bad = bad || ws_sql_str(b, c->nkey_cols > 1 ? ") IN (" : " IN (") < 0;
        for (uint32_t i = 0; i < n && !bad && !f; i++) {
            wc_row_cells(rs, rows[i], a->v);
            bad = (i && ws_sql_str(b, ", ") < 0) || (c->nkey_cols > 1 && ws_sql_str(b, "(") < 0);
            for (size_t k = 0; k < c->nkey_cols && !bad && !f; k++) {
                const char *kn = c->key_cols[k];
                f = wc_fit_into(a, np, wc_key_tcol(a, k), kn, kval(a, a->v, k, 0), err,
                                errlen);
                bad = f || (k && ws_sql_str(b, ", ") < 0);
                if (!bad)
                    a->w->ops->param(b, np++);
            }
            bad = bad || (c->nkey_cols > 1 && ws_sql_str(b, ")") < 0);
        }
        bad = bad || ws_sql_str(b, ")") < 0;
    } else {
        wc_row_cells(rs, rows[0], a->v);
        const zx_value *unch = a->cc->unchanged >= 0 ? a->v[a->cc->unchanged] : NULL;
        bad = ws_sql_str(b, "INSERT INTO ") < 0 || a->w->ops->table_sql(a->w, a->t, b) < 0 ||
              ws_sql_str(b, " (") < 0;
        uint32_t ncols = 0;
        for (uint32_t col = 0; col < rs->ncols && !bad; col++) {
            if (a->cc->tcol[col] < 0 || wc_listed(unch, rs->cols[col].name))
                continue;
            bad = (ncols++ && ws_sql_str(b, ", ") < 0) ||
                  a->w->ops->ident(b, wc_col_name(a, col)) < 0;
        }
        if (!bad && ncols == 0) {
            a->quiet = 0;
            return 1;           /* nothing to write: one by one says why */
        }
        bad = bad || ws_sql_str(b, ") VALUES ") < 0;
        for (uint32_t i = 0; i < n && !bad && !f; i++) {
            wc_row_cells(rs, rows[i], a->v);
            bad = ws_sql_str(b, i ? ", (" : "(") < 0;
            uint32_t j = 0;
            for (uint32_t col = 0; col < rs->ncols && !bad && !f; col++) {
                if (a->cc->tcol[col] < 0 || wc_listed(unch, rs->cols[col].name))
                    continue;
                f = wc_fit_into(a, np, a->cc->tcol[col], rs->cols[col].name, a->v[col], err,
                                errlen);
                bad = f || (j++ && ws_sql_str(b, ", ") < 0);
                if (!bad)
                    a->w->ops->param(b, np++);
            }
            bad = bad || ws_sql_str(b, ")") < 0;
        }
        bad = bad || on_conflict(a, unch) < 0;
    }
    a->quiet = 0;
    if (f)
        return f < 0 ? -1 : 1;
    if (bad)
        return zx_seterr(err, errlen, "workspace: out of memory");
    char why[600];
    uint64_t changed = 0;
    return a->w->ops->exec_row(a->w, b->p, a->vals, np, &changed, why, sizeof(why), err, errlen);
}

/* rows[0..n) of one kind in statements of at most WC_BATCH_ROWS rows and
 * WC_BATCH_PARAMS values; a statement that does not go is applied one by
 * one.  Counts them.  0, or -1. */
static int batches(apply *a, const uint32_t *rows, uint32_t n, int kind, char *err,
                   size_t errlen)
{
    uint32_t per = kind == K_DELETE ? (uint32_t)a->c->nkey_cols : a->rs->ncols;
    uint32_t most = per ? WC_BATCH_PARAMS / per : WC_BATCH_ROWS;
    if (most > WC_BATCH_ROWS)
        most = WC_BATCH_ROWS;
    if (most > a->nvals / (per ? per : 1))
        most = a->nvals / (per ? per : 1);
    if (a->arr)
        most = WC_BATCH_ROWS;   /* one array per column, whatever the rows */
    if (most == 0)
        most = 1;
    for (uint32_t i = 0; i < n;) {
        uint32_t m = n - i < most ? n - i : most;
        int rc = m > 1 ? batch(a, rows + i, m, kind, err, errlen) : 1;
        if (rc < 0)
            return -1;
        if (rc == 0) {
            a->res->rows += m;
        } else {
            for (uint32_t j = 0; j < m; j++)
                if (wc_apply_row(a, rows[i + j], err, errlen) < 0)
                    return -1;
        }
        i += m;
    }
    return 0;
}

int wc_apply_run(apply *a, uint32_t s, uint32_t e, char *err, size_t errlen)
{
    uint32_t n = e - s;
    run u = { .a = a };
    u.cap = 16;
    while (u.cap < 4 * n + 16)
        u.cap <<= 1;
    u.keys = calloc(u.cap, sizeof(*u.keys));
    u.kind = calloc(n + 1, 1);
    u.knew = malloc((n + 1) * sizeof(*u.knew));
    u.kold = malloc((n + 1) * sizeof(*u.kold));
    uint32_t *dels = calloc(n + 1, sizeof(*dels));
    uint32_t *ups = calloc(n + 1, sizeof(*ups));
    int ret = -1;
    if (!u.keys || !u.kind || !u.knew || !u.kold || !dels || !ups) {
        zx_seterr(err, errlen, "workspace: out of memory");
        goto out;
    }
    /* each key's changes */
    for (uint32_t i = 0; i < n; i++) {
        wc_row_cells(a->rs, s + i, a->v);
        int k = kind_of(a, a->v);
        u.kind[i] = (uint8_t)k;
        if (k == K_BAD)
            continue;
        int unch = a->cc->unchanged >= 0 && a->v[a->cc->unchanged] != NULL;
        u.knew[i] = key_slot(&u, s + i, 0);
        note(&u, u.knew[i], i, unch);
        if (k == K_MOVE) {
            u.kold[i] = key_slot(&u, s + i, 1);
            note(&u, u.kold[i], i, 0);
            u.keys[u.knew[i]].ordered = u.keys[u.kold[i]].ordered = 1;
        }
    }
    for (uint32_t i = 0; i < u.cap; i++)
        if (u.keys[i].h && u.keys[i].unch && u.keys[i].n > 1)
            u.keys[i].ordered = 1;
    /* each free key's last change, in batches; the rest one by one, after
     * (they touch other keys, so the order between the two does not
     * matter) */
    uint32_t nd = 0, nu = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (u.kind[i] == K_BAD || u.kind[i] == K_MOVE)
            continue;
        wkey *k = &u.keys[u.knew[i]];
        if (k->ordered)
            continue;
        if (k->last != i) {
            a->res->rows++;     /* superseded by a later change of its key */
            continue;
        }
        if (u.kind[i] == K_DELETE)
            dels[nd++] = s + i;
        else
            ups[nu++] = s + i;
    }
    if (batches(a, dels, nd, K_DELETE, err, errlen) < 0)
        goto out;
    /* upserts that left columns unchanged: each alone (a key with one
     * change); the others together */
    uint32_t nu2 = 0;
    for (uint32_t i = 0; i < nu; i++) {
        wc_row_cells(a->rs, ups[i], a->v);
        if (a->cc->unchanged >= 0 && a->v[a->cc->unchanged] != NULL) {
            if (wc_apply_row(a, ups[i], err, errlen) < 0)
                goto out;
        } else {
            ups[nu2++] = ups[i];
        }
    }
    if (batches(a, ups, nu2, K_UPSERT, err, errlen) < 0)
        goto out;
    for (uint32_t i = 0; i < n; i++) {
        int alone = u.kind[i] == K_BAD || u.kind[i] == K_MOVE || u.keys[u.knew[i]].ordered;
        if (alone && wc_apply_row(a, s + i, err, errlen) < 0)
            goto out;
    }
    ret = 0;
out:
    free(u.keys);
    free(u.kind);
    free(u.knew);
    free(u.kold);
    free(dels);
    free(ups);
    return ret;
}
