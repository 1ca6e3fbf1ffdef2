/*
 * workspace_changes.c — applying a changes frame to a mirror table, the
 * same on every backend (workspace.h: zx_ws_apply_changes; the frame:
 * proto/frame.h, "Changes frames").
 *
 * The mirror table is made from the first frame: the source's columns
 * with the backend's type for each source type (ops->decl_for_source, or
 * the values' inferred type), the key columns NOT NULL and the primary
 * key.  A column the source adds later is added.  Then each change, in
 * order: an insert or an update is an upsert of the key's row (INSERT ...
 * ON CONFLICT (key) DO UPDATE, the syntax both backends share) that sets
 * every column the change carries except those the source did not send
 * (_zx_unchanged) -- a column with no value, or one the source declares
 * (c->col_types) that the frame lacks, is set to NULL, never left as
 * stored; an update whose key changed first deletes the old key's
 * row; a delete deletes the key's row; a truncate empties the table.  With
 * history, every change is also appended to <table>__changes with _op,
 * _lsn, _commit_time, _xid and the row's columns.  A frame's _zx_seq (the
 * change's source position) is the mirror's column `_zx_seq`, so that
 * each row holds the position of the change that wrote it
 * (workers/writer/keyseq.h); the history leaves it out.  Values are fitted as
 * for appends (fit.h): a misfit is NULL plus a reject.  A change the table
 * refuses (a constraint) is a reject of its row; the others go on.
 *
 * It must never: write a change out of its order, let a value the source
 * did not send overwrite a stored one, or know a SQL dialect (placeholders
 * and names come from the backend).
 */
#include "workers/writer/workspace_changes_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "proto/frame.h"

#define RESERVED "_zx_"


static int64_t rs_find(const zx_rowset *rs, const char *name)
{
    for (uint32_t c = 0; c < rs->ncols; c++)
        if (strcmp(rs->cols[c].name, name) == 0)
            return c;
    return -1;
}

/* A column of the mirror: the source's columns, and _zx_seq (the row's
 * source position, workers/writer/keyseq.h). */
static int is_data(const zx_rowset *rs, uint32_t c)
{
    return strncmp(rs->cols[c].name, RESERVED, strlen(RESERVED)) != 0 ||
           strcmp(rs->cols[c].name, ZX_CH_SEQ) == 0;
}

static const char *src_type(const zx_ws_changes *c, const char *col)
{
    for (size_t i = 0; i < c->ncol_types; i++)
        if (strcmp(c->col_types[i].column, col) == 0)
            return c->col_types[i].type;
    return NULL;
}

int wc_is_key(const zx_ws_changes *c, const char *col)
{
    for (size_t i = 0; i < c->nkey_cols; i++)
        if (strcmp(c->key_cols[i], col) == 0)
            return 1;
    return 0;
}

/* The declared type of a new mirror column. */
static const char *decl_of(zx_ws *w, const zx_ws_changes *c, const zx_rowset *rs, uint32_t col)
{
    const char *d = w->ops->decl_for_source ? w->ops->decl_for_source(src_type(c, rs->cols[col].name))
                                            : NULL;
    if (d)
        return d;
    zx_type t = (zx_type)rs->cols[col].type;
    d = w->ops->decl_for_type(t == ZX_T_NULL ? ZX_T_TEXT : t);
    return d ? d : w->ops->decl_for_type(ZX_T_TEXT);
}

/* The mirror table exists with every data column of the frame, each
 * under its stored name (wc_stored_names, into names[]); tcol[c] = its
 * table column (-1: none).  0, or -1 (err set). */
static int ensure_mirror(zx_ws *w, const zx_ws_changes *c, const zx_rowset *rs, ws_table **out,
                         char **names, int64_t *tcol, zx_ws_result *res, char *err,
                         size_t errlen)
{
    ws_table *t = ws_get_table(w, c->table);
    if (!t)
        return zx_seterr(err, errlen, "workspace: table %s: %s", c->table, zx_ws_errmsg(w));
    const char **src = malloc((rs->ncols + 1) * sizeof(*src));
    if (!src)
        return zx_seterr(err, errlen, "workspace: out of memory");
    for (uint32_t i = 0; i < rs->ncols; i++)
        src[i] = is_data(rs, i) ? rs->cols[i].name : NULL;
    int named = wc_stored_names(w, t, src, rs->ncols, names);
    free(src);
    if (named < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    int made = 0;
    if (t->ncols == 0) {
        ws_coldef *defs = calloc(rs->ncols + 1, sizeof(*defs));
        if (!defs)
            return zx_seterr(err, errlen, "workspace: out of memory");
        size_t n = 0;
        for (uint32_t i = 0; i < rs->ncols; i++)
            if (is_data(rs, i))
                defs[n++] = (ws_coldef){ .name = names[i], .decl = decl_of(w, c, rs, i),
                                         .key = wc_is_key(c, rs->cols[i].name) };
        int rc = n ? w->ops->create_table(w, t, defs, n, err, errlen) : 0;
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (ws_table_add_col(w, t, defs[i].name, defs[i].decl) < 0)
                rc = zx_seterr(err, errlen, "workspace: out of memory");
        free(defs);
        if (rc < 0)
            return -1;
        made = rc == 0;   /* 2: another zxd made it; what it lacks is added below */
        if (n && made)
            res->created_table = 1;
    }
    if (!made) {
        for (uint32_t i = 0; i < rs->ncols; i++) {
            if (!is_data(rs, i))
                continue;
            int64_t have = wc_find_exact(w, t, names[i]);
            if (have >= 0) {
                /* a column the source retyped: the backend follows, when it can */
                const char *st = src_type(c, rs->cols[i].name);
                const char *want = st && w->ops->retype_column ? decl_of(w, c, rs, i) : NULL;
                if (want && strcmp(want, t->cols[have].decl) != 0 &&
                    w->ops->retype_column(w, t, (uint32_t)have, want, err, errlen) < 0)
                    return -1;
                continue;
            }
            char *why = NULL;
            int rc = w->ops->add_column(w, t, names[i], decl_of(w, c, rs, i), &why, err, errlen);
            free(why); /* refused: its values become rejects below */
            if (rc < 0)
                return -1;
        }
    }
    for (uint32_t i = 0; i < rs->ncols; i++)
        tcol[i] = names[i] ? wc_find_exact(w, t, names[i]) : -1;
    *out = t;
    return 0;
}

/* The history rowset: _op, _lsn, _commit_time, _xid, then the data
 * columns under their mirror names (stored[c]), one row per change
 * (values shared with rs's arena). */
static int history_rows(const zx_rowset *rs, const chcols *cc, char *const *stored,
                        zx_rowset *h)
{
    static const char *const names[4] = { "_op", "_lsn", "_commit_time", "_xid" };
    static const zx_type types[4] = { ZX_T_TEXT, ZX_T_TEXT, ZX_T_TIMESTAMP, ZX_T_INT };
    int64_t src[4] = { cc->op, cc->lsn, cc->ct, cc->xid };
    int64_t *map = malloc((rs->ncols + 1) * sizeof(*map));
    if (!map)
        return -1;
    for (int i = 0; i < 4; i++)
        if (zx_rowset_column(h, names[i], strlen(names[i]), types[i]) < 0)
            goto fail;
    for (uint32_t c = 0; c < rs->ncols; c++) {
        map[c] = -1;
        for (int i = 0; i < 4; i++)
            if (src[i] == (int64_t)c)
                map[c] = i;
        if (stored[c] && (map[c] = zx_rowset_column(h, stored[c], strlen(stored[c]),
                                                    (zx_type)rs->cols[c].type)) < 0)
            goto fail;
    }
    for (uint32_t r = 0; r < rs->nrows; r++) {
        if (zx_rowset_begin_row(h) < 0)
            goto fail;
        for (uint64_t i = rs->row_start[r]; i < rs->row_start[r + 1]; i++) {
            const zx_cell *cell = &rs->cells[i];
            if (cell->col < rs->ncols && map[cell->col] >= 0 &&
                zx_rowset_add(h, (uint32_t)map[cell->col], &cell->v) < 0)
                goto fail;
        }
        zx_rowset_end_row(h);
    }
    free(map);
    return 0;
fail:
    free(map);
    return -1;
}

/* The frame with every column the source declared (c->col_types) that it
 * lacks added, without cells: a change of an older frame maker that left
 * out a column all of whose values in the frame were NULL then sets it
 * to NULL, as the frame's rule says ("a column with no value is NULL"),
 * instead of leaving the stored value.  *out is rs itself when nothing
 * is missing, else full (strings shared with rs's arena).  0, or -1 out
 * of memory. */
static int with_declared(const zx_ws_changes *c, const zx_rowset *rs, zx_rowset *full,
                         const zx_rowset **out)
{
    *out = rs;
    size_t missing = 0;
    for (size_t i = 0; i < c->ncol_types; i++) {
        const char *n = c->col_types[i].column;
        if (n && *n && strncmp(n, RESERVED, strlen(RESERVED)) != 0 &&
            zx_rowset_find_column(rs, n, strlen(n)) < 0)
            missing++;
    }
    if (!missing)
        return 0;
    for (uint32_t col = 0; col < rs->ncols; col++)
        if (zx_rowset_column(full, rs->cols[col].name, rs->cols[col].name_len, ZX_T_NULL) < 0)
            return -1;
    for (size_t i = 0; i < c->ncol_types; i++) {
        const char *n = c->col_types[i].column;
        if (n && *n && strncmp(n, RESERVED, strlen(RESERVED)) != 0 &&
            zx_rowset_column(full, n, strlen(n), ZX_T_NULL) < 0)
            return -1;
    }
    for (uint32_t r = 0; r < rs->nrows; r++) {
        if (zx_rowset_begin_row(full) < 0)
            return -1;
        for (uint64_t i = rs->row_start[r]; i < rs->row_start[r + 1]; i++)
            if (rs->cells[i].col < rs->ncols &&
                zx_rowset_add(full, rs->cells[i].col, &rs->cells[i].v) < 0)
                return -1;
        zx_rowset_end_row(full);
    }
    for (uint32_t col = 0; col < rs->ncols; col++)
        full->cols[col].type = rs->cols[col].type;
    *out = full;
    return 0;
}

/* The history rowset of a wide mirror: _op, _lsn, _commit_time, _xid and
 * _row, the change's data columns as one JSON object (mirror names; a
 * column the change does not carry is left out). */
static int history_json_rows(const zx_rowset *rs, const chcols *cc, char *const *stored,
                             zx_rowset *h)
{
    static const char *const names[5] = { "_op", "_lsn", "_commit_time", "_xid", "_row" };
    static const zx_type types[5] = { ZX_T_TEXT, ZX_T_TEXT, ZX_T_TIMESTAMP, ZX_T_INT,
                                      ZX_T_JSON };
    int64_t src[4] = { cc->op, cc->lsn, cc->ct, cc->xid };
    zx_buf b = { 0 };
    for (int i = 0; i < 5; i++)
        if (zx_rowset_column(h, names[i], strlen(names[i]), types[i]) < 0)
            return -1;
    for (uint32_t r = 0; r < rs->nrows; r++) {
        if (zx_rowset_begin_row(h) < 0)
            goto fail;
        b.len = 0;
        int bad = zx_buf_put(&b, "{", 1) < 0, n = 0;
        for (uint64_t i = rs->row_start[r]; i < rs->row_start[r + 1] && !bad; i++) {
            const zx_cell *cell = &rs->cells[i];
            if (cell->col >= rs->ncols)
                continue;
            for (int k = 0; k < 4; k++)
                if (src[k] == (int64_t)cell->col && zx_rowset_add(h, (uint32_t)k, &cell->v) < 0)
                    goto fail;
            const char *nm = stored[cell->col];
            if (!nm)
                continue;
            bad = (n++ && zx_buf_put(&b, ",", 1) < 0) ||
                  zx_fit_json_quote(&b, nm, strlen(nm)) < 0 || zx_buf_put(&b, ":", 1) < 0 ||
                  zx_fit_json_text(&cell->v, &b) < 0;
        }
        if (bad || zx_buf_put(&b, "}", 1) < 0)
            goto fail;
        zx_value v = { .type = ZX_T_JSON, .len = b.len };
        if (!(v.s = zx_rowset_strdup(h, b.p, b.len)) || zx_rowset_add(h, 4, &v) < 0)
            goto fail;
        zx_rowset_end_row(h);
    }
    zx_buf_free(&b);
    return 0;
fail:
    zx_buf_free(&b);
    return -1;
}

/* 1 when name is in the JSON array of strings (simple escapes only). */
int wc_listed(const zx_value *arr, const char *name)
{
    if (!arr || arr->type != ZX_T_JSON || !arr->s)
        return 0;
    size_t n = strlen(name);
    const char *p = arr->s, *e = arr->s + arr->len;
    while (p < e) {
        const char *q = memchr(p, '"', (size_t)(e - p));
        if (!q)
            return 0;
        const char *end = q + 1;
        while (end < e && *end != '"')
            end += *end == '\\' ? 2 : 1;
        if (end >= e)
            return 0;
        if ((size_t)(end - q - 1) == n && memcmp(q + 1, name, n) == 0)
            return 1;
        p = end + 1;
    }
    return 0;
}

/* The row's cells by rowset column (NULL: no value). */
void wc_row_cells(const zx_rowset *rs, uint32_t r, const zx_value **v)
{
    for (uint32_t c = 0; c < rs->ncols; c++)
        v[c] = NULL;
    for (uint64_t i = rs->row_start[r]; i < rs->row_start[r + 1]; i++)
        if (rs->cells[i].col < rs->ncols)
            v[rs->cells[i].col] = &rs->cells[i].v;
}


/* Fit v (NULL: SQL NULL) for table column tc into value slot i; a misfit
 * is NULL plus a reject (a->quiet: no reject, 2 returned).  0, or -1 (err
 * set). */
int wc_fit_into(apply *a, uint32_t i, int64_t tc, const char *cname, const zx_value *v,
                    char *err, size_t errlen)
{
    zx_fit_out *o = &a->vals[i];
    memset(o, 0, sizeof(*o));
    o->st = ZX_FIT_S_NULL;
    if (!v || v->type == ZX_T_NULL || tc < 0)
        return 0;
    zx_fit_kind k = a->t->cols[tc].kind;
    int f = zx_fit_value(k, v, &a->bufs[i], o);
    if (f < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    if (f > 0 && !(a->w->ops->refuses && a->w->ops->refuses(o, k)))
        return 0;
    o->st = ZX_FIT_S_NULL;
    if (a->quiet)
        return 2;
    zx_buf raw = { 0 };
    char why[512];
    if (zx_fit_json_text(v, &raw) < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    zx_fit_reason(why, sizeof(why), raw.p, raw.len, (zx_type)v->type, cname, k);
    ws_reject r = { .table = a->t->name, .rejected_at = a->w->ts,
                    .pipeline = a->c->pipeline ? a->c->pipeline : "", .column = cname,
                    .column_type = zx_fit_kind_name(k), .value_type = zx_value_type_name(v),
                    .raw = raw.p, .raw_len = raw.len, .reason = why };
    int rc = ws_reject_row(a->w, &r, err, errlen);
    zx_buf_free(&raw);
    if (rc < 0)
        return -1;
    a->res->rejects++;
    return 0;
}

/* WHERE k1 = p AND ... with the key's values fitted into slots from..;
 * the slots' count in *n.  0, 1 when a key value is missing (why set), or
 * -1 (err set). */
static int where_key(apply *a, const zx_value **v, int old, uint32_t *n, char *why,
                     size_t whylen, char *err, size_t errlen)
{
    zx_buf *b = &a->sql;
    int bad = ws_sql_str(b, " WHERE ") < 0;
    for (size_t k = 0; k < a->c->nkey_cols && !bad; k++) {
        int64_t col = old ? a->cc->old[k] : a->cc->key[k];
        const zx_value *kv = col >= 0 ? v[col] : NULL;
        const char *kn = a->c->key_cols[k];
        if (!kv || kv->type == ZX_T_NULL) {
            snprintf(why, whylen, "the change has no value for key column %.100s", kn);
            return 1;
        }
        int64_t tc = wc_key_tcol(a, k);
        if (wc_fit_into(a, *n, tc, kn, kv, err, errlen) < 0)
            return -1;
        bad = (k && ws_sql_str(b, " AND ") < 0) ||
              a->w->ops->ident(b, wc_key_name(a, k)) < 0 || ws_sql_str(b, " = ") < 0;
        if (!bad)
            a->w->ops->param(b, (*n)++);
    }
    return bad ? zx_seterr(err, errlen, "workspace: out of memory") : 0;
}

static int run(apply *a, uint32_t n, char *why, size_t whylen, char *err, size_t errlen)
{
    uint64_t changed = 0;
    return a->w->ops->exec_row(a->w, a->sql.p, a->vals, n, &changed, why, whylen, err, errlen);
}

/* One change: 0 applied, 1 refused (why set), -1 failure (err set). */
static int apply_one(apply *a, uint32_t r, const zx_value **v, char *why, size_t whylen,
                     char *err, size_t errlen)
{
    const zx_value *opv = a->cc->op >= 0 ? v[a->cc->op] : NULL;
    char op[16] = "";
    if (opv && opv->type == ZX_T_TEXT && opv->len < sizeof(op))
        memcpy(op, opv->s, opv->len), op[opv->len] = '\0';
    zx_buf *b = &a->sql;
    b->len = 0;
    uint32_t n = 0;
    (void)r;
    if (strcmp(op, "gap") == 0)
        return 0;   /* history only: the changes between its _zx_lsn A..B are lost */
    if (a->c->nkey_cols == 0 && strcmp(op, "truncate") != 0) {
        snprintf(why, whylen, "the mirror has no key columns (the source table needs a "
                 "primary key or REPLICA IDENTITY FULL)");
        return 1;
    }
    if (strcmp(op, "truncate") == 0) {
        if (ws_sql_str(b, "DELETE FROM ") < 0 || a->w->ops->table_sql(a->w, a->t, b) < 0)
            return zx_seterr(err, errlen, "workspace: out of memory");
        return run(a, 0, why, whylen, err, errlen);
    }
    if (strcmp(op, "delete") == 0) {
        if (ws_sql_str(b, "DELETE FROM ") < 0 || a->w->ops->table_sql(a->w, a->t, b) < 0)
            return zx_seterr(err, errlen, "workspace: out of memory");
        int rc = where_key(a, v, 0, &n, why, whylen, err, errlen);
        return rc ? rc : run(a, n, why, whylen, err, errlen);
    }
    if (strcmp(op, "insert") != 0 && strcmp(op, "update") != 0) {
        snprintf(why, whylen, "unknown change operation \"%.20s\"", op);
        return 1;
    }
    /* the key changed: the old key's row goes */
    int moved = 0;
    for (size_t k = 0; k < a->c->nkey_cols; k++)
        moved |= a->cc->old[k] >= 0 && v[a->cc->old[k]] != NULL;
    const zx_value *unch0 = a->cc->unchanged >= 0 ? v[a->cc->unchanged] : NULL;
    if (moved && unch0) {
        /* the key moved and some values were not sent: the stored row
         * moves with them (UPDATE ... WHERE the old key); when the old key
         * has no row, the new one is inserted below */
        int bad = ws_sql_str(b, "UPDATE ") < 0 || a->w->ops->table_sql(a->w, a->t, b) < 0 ||
                  ws_sql_str(b, " SET ") < 0;
        for (uint32_t c = 0; c < a->rs->ncols && !bad; c++) {
            if (a->cc->tcol[c] < 0 || wc_listed(unch0, a->rs->cols[c].name))
                continue;
            if (wc_fit_into(a, n, a->cc->tcol[c], a->rs->cols[c].name, v[c], err, errlen) < 0)
                return -1;
            bad = (n && ws_sql_str(b, ", ") < 0) || a->w->ops->ident(b, wc_col_name(a, c)) < 0 ||
                  ws_sql_str(b, " = ") < 0;
            if (!bad)
                a->w->ops->param(b, n++);
        }
        if (bad)
            return zx_seterr(err, errlen, "workspace: out of memory");
        int rc = where_key(a, v, 1, &n, why, whylen, err, errlen);
        uint64_t changed = 0;
        if (rc == 0)
            rc = a->w->ops->exec_row(a->w, a->sql.p, a->vals, n, &changed, why, whylen, err,
                                     errlen);
        if (rc || changed)
            return rc;
        b->len = 0;
        n = 0;
        moved = 0;
    }
    if (moved) {
        if (ws_sql_str(b, "DELETE FROM ") < 0 || a->w->ops->table_sql(a->w, a->t, b) < 0)
            return zx_seterr(err, errlen, "workspace: out of memory");
        int rc = where_key(a, v, 1, &n, why, whylen, err, errlen);
        if (rc == 0)
            rc = run(a, n, why, whylen, err, errlen);
        if (rc)
            return rc;
        b->len = 0;
        n = 0;
    }
    const zx_value *unch = a->cc->unchanged >= 0 ? v[a->cc->unchanged] : NULL;
    int bad = ws_sql_str(b, "INSERT INTO ") < 0 || a->w->ops->table_sql(a->w, a->t, b) < 0 ||
              ws_sql_str(b, " (") < 0;
    uint32_t ncols = 0;
    for (uint32_t c = 0; c < a->rs->ncols && !bad; c++) {
        if (a->cc->tcol[c] < 0 || wc_listed(unch, a->rs->cols[c].name))
            continue;
        if (wc_is_key(a->c, a->rs->cols[c].name) && (!v[c] || v[c]->type == ZX_T_NULL)) {
            snprintf(why, whylen, "the change has no value for key column %.100s",
                     a->rs->cols[c].name);
            return 1;
        }
        if (wc_fit_into(a, n, a->cc->tcol[c], a->rs->cols[c].name, v[c], err, errlen) < 0)
            return -1;
        bad = (ncols++ && ws_sql_str(b, ", ") < 0) || a->w->ops->ident(b, wc_col_name(a, c)) < 0;
        n++;
    }
    bad = bad || ws_sql_str(b, ") VALUES (") < 0;
    for (uint32_t i = 0; i < n && !bad; i++) {
        bad = i && ws_sql_str(b, ", ") < 0;
        a->w->ops->param(b, i);
    }
    bad = bad || ws_sql_str(b, ") ON CONFLICT (") < 0;
    for (size_t k = 0; k < a->c->nkey_cols && !bad; k++)
        bad = (k && ws_sql_str(b, ", ") < 0) || a->w->ops->ident(b, wc_key_name(a, k)) < 0;
    bad = bad || ws_sql_str(b, ") DO ") < 0;
    uint32_t nset = 0;
    for (uint32_t c = 0; c < a->rs->ncols && !bad; c++) {
        if (a->cc->tcol[c] < 0 || wc_listed(unch, a->rs->cols[c].name) ||
            wc_is_key(a->c, a->rs->cols[c].name))
            continue;
        bad = ws_sql_str(b, nset++ ? ", " : "UPDATE SET ") < 0 ||
              a->w->ops->ident(b, wc_col_name(a, c)) < 0 || ws_sql_str(b, " = excluded.") < 0 ||
              a->w->ops->ident(b, wc_col_name(a, c)) < 0;
    }
    if (!bad && nset == 0)
        bad = ws_sql_str(b, "NOTHING") < 0;
    if (bad)
        return zx_seterr(err, errlen, "workspace: out of memory");
    if (ncols == 0) {
        snprintf(why, whylen, "the change carries no column of the table");
        return 1;
    }
    return run(a, n, why, whylen, err, errlen);
}

int wc_apply_row(apply *a, uint32_t r, char *err, size_t errlen)
{
    char why[600];
    wc_row_cells(a->rs, r, a->v);
    int rc = apply_one(a, r, a->v, why, sizeof(why), err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 0) {
        a->res->rows++;
        return 0;
    }
    if (ws_reject_refused_row(a->w, a->t, a->ap, a->rs, r, why, err, errlen) < 0)
        return -1;
    a->res->rejects++;
    return 0;
}

/* The end of a mirror's initial copy (a frame of no changes): its key's
 * index is built.  0, or -1 (err set). */
static int copy_ends(zx_ws *w, const zx_ws_changes *c, char *err, size_t errlen)
{
    if (!w->ops->key_index)
        return 0;
    ws_table *t = ws_get_table(w, c->table);
    if (!t)
        return zx_seterr(err, errlen, "workspace: table %s: %s", c->table, zx_ws_errmsg(w));
    return w->ops->key_index(w, t, c->key_cols, c->nkey_cols, 1, err, errlen);
}

int zx_ws_apply_changes(zx_ws *w, const zx_ws_changes *c, const zx_rowset *rs,
                        zx_ws_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof(*res));
    if (!w->in_txn)
        return zx_seterr(err, errlen, "workspace: changes outside a transaction");
    if (!c->table || !*c->table)
        return zx_seterr(err, errlen, "workspace: no table name");
    if (!w->ops->exec_row)
        return zx_seterr(err, errlen, "workspace: %s cannot apply changes", w->ops->name);
    if (rs->nrows == 0)
        return c->copy == ZX_FRAME_COPY_END ? copy_ends(w, c, err, errlen) : 0;
    int ret = -1;
    zx_rowset full;
    zx_rowset_init(&full);
    if (with_declared(c, rs, &full, &rs) < 0) {
        zx_rowset_free(&full);
        return zx_seterr(err, errlen, "workspace: out of memory");
    }
    chcols cc = { .op = rs_find(rs, ZX_CH_OP), .lsn = rs_find(rs, ZX_CH_LSN),
                  .ct = rs_find(rs, ZX_CH_COMMIT_TIME), .xid = rs_find(rs, ZX_CH_XID),
                  .unchanged = rs_find(rs, ZX_CH_UNCHANGED) };
    apply a = { .w = w, .c = c, .rs = rs, .cc = &cc, .res = res };
    const zx_value **v = malloc((rs->ncols + 1) * sizeof(*v));
    a.v = v;
    a.v2 = malloc((rs->ncols + 1) * sizeof(*a.v2));
    cc.old = malloc((c->nkey_cols + 1) * sizeof(*cc.old));
    cc.key = malloc((c->nkey_cols + 1) * sizeof(*cc.key));
    cc.tcol = malloc((rs->ncols + 1) * sizeof(*cc.tcol));
    char **names = calloc(rs->ncols + 1, sizeof(*names));
    /* value slots: one change's, or a batch's */
    uint64_t slots = (uint64_t)rs->nrows * (rs->ncols + c->nkey_cols);
    if (slots > WC_BATCH_PARAMS)
        slots = WC_BATCH_PARAMS;
    slots += rs->ncols + c->nkey_cols + 1;
    a.vals = calloc(slots, sizeof(*a.vals));
    a.bufs = calloc(slots, sizeof(*a.bufs));
    a.nvals = (uint32_t)slots;
    if (w->ops->array_param) {
        a.narr = rs->ncols + (uint32_t)c->nkey_cols + 1;
        a.arr = calloc(a.narr, sizeof(*a.arr));
    }
    zx_rowset h;
    zx_rowset_init(&h);
    if (!v || !cc.old || !cc.key || !cc.tcol || !a.vals || !a.bufs || !a.v2 || !names ||
        (a.narr && !a.arr))
        goto nomem;
    zx_ts_format(c->ingested_at_us ? c->ingested_at_us : zx_now_us(), w->ts);
    for (size_t k = 0; k < c->nkey_cols; k++) {
        char oldname[200];
        snprintf(oldname, sizeof(oldname), "%s%s", ZX_CH_OLD_PREFIX, c->key_cols[k]);
        cc.key[k] = rs_find(rs, c->key_cols[k]);
        cc.old[k] = rs_find(rs, oldname);
    }
    ws_table *t = NULL;
    if (ensure_mirror(w, c, rs, &t, names, cc.tcol, res, err, errlen) < 0)
        goto out;
    a.t = t;
    zx_ws_append ap = { .pipeline = c->pipeline, .table = c->table,
                        .ingested_at_us = c->ingested_at_us, .max_columns = ZX_WS_MAX_COLUMNS };
    a.ap = &ap;
    /* runs between truncates, each applied in batches */
    for (uint32_t r = 0, s = 0; r <= rs->nrows; r++) {
        if (r < rs->nrows) {
            wc_row_cells(rs, r, v);
            const zx_value *op = cc.op >= 0 ? v[cc.op] : NULL;
            /* a truncate or a gap is applied on its own */
            if (!op || op->type != ZX_T_TEXT ||
                !((op->len == 8 && !memcmp(op->s, "truncate", 8)) ||
                  (op->len == 3 && !memcmp(op->s, "gap", 3))))
                continue;
        }
        if (r > s && wc_apply_run(&a, s, r, err, errlen) < 0)
            goto out;
        if (r < rs->nrows && wc_apply_row(&a, r, err, errlen) < 0)
            goto out;
        s = r + 1;
    }
    /* the copy's rows load without the key's index (built at its end) */
    if (c->copy && w->ops->key_index &&
        w->ops->key_index(w, t, c->key_cols, c->nkey_cols, c->copy == ZX_FRAME_COPY_END, err,
                          errlen) < 0)
        goto out;
    if (c->history) {
        char hname[200];
        snprintf(hname, sizeof(hname), "%s__changes", c->table);
        /* a wide mirror's history row would not fit a Postgres row: the
         * row as JSON, decided when __changes is made */
        uint32_t ndata = 0;
        for (uint32_t i = 0; i < t->ncols; i++)
            ndata += strncmp(t->cols[i].name, RESERVED, strlen(RESERVED)) != 0;
        ws_table *ht = ws_get_table(w, hname);
        if (!ht) {
            zx_seterr(err, errlen, "workspace: table %s: %s", hname, zx_ws_errmsg(w));
            goto out;
        }
        int as_json = ht->ncols ? wc_find_exact(w, ht, "_row") >= 0
                                : ndata > ZX_WS_HISTORY_MAX_COLUMNS;
        if (as_json && !ht->ncols)
            res->history_json = ndata;
        /* the history keeps the source's columns, not the row's _zx_seq */
        int64_t cseq = rs_find(rs, ZX_CH_SEQ);
        char *seqname = cseq >= 0 ? names[cseq] : NULL;
        if (cseq >= 0)
            names[cseq] = NULL;
        int made = as_json ? history_json_rows(rs, &cc, names, &h)
                           : history_rows(rs, &cc, names, &h);
        if (cseq >= 0)
            names[cseq] = seqname;
        if (made < 0)
            goto nomem;
        zx_ws_append hp = ap;
        hp.table = hname;
        zx_ws_result hr;
        int rc = zx_ws_append_rows(w, &hp, &h, &hr, err, errlen);
        res->rejects += hr.rejects;
        zx_ws_result_free(&hr);
        if (rc < 0)
            goto out;
        /* the cache entry of the mirror may have moved: nothing uses t after */
    }
    ret = 0;
    goto out;
nomem:
    zx_seterr(err, errlen, "workspace: out of memory");
out:
    for (uint32_t i = 0; a.bufs && i < a.nvals; i++)
        zx_buf_free(&a.bufs[i]);
    free(a.bufs);
    for (uint32_t i = 0; a.arr && i < a.narr; i++)
        zx_buf_free(&a.arr[i]);
    free(a.arr);
    free(a.vals);
    free(a.v2);
    free(v);
    free(cc.old);
    free(cc.key);
    free(cc.tcol);
    for (uint32_t i = 0; names && i < rs->ncols; i++)
        free(names[i]);
    free(names);
    zx_buf_free(&a.sql);
    zx_rowset_free(&h);
    zx_rowset_free(&full);
    return ret;
}
