/*
 * workspace_sqlite_schema.c — what the SQLite backend knows of the tables:
 * the in-memory table cache (columns read with pragma_table_info), CREATE
 * TABLE and ALTER TABLE ADD COLUMN from a batch's column types, the cached
 * INSERT statements per column set, and zx_ws_table_columns.
 *
 * It must never: build SQL with an unquoted identifier or an inlined value,
 * keep the cache across a rollback (zx_ws_rollback drops it), or insert
 * rows.
 */
#include "common/util.h"
#include "workers/writer/workspace_sqlite_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const zx_wsq_meta_name[2] = { "_ingested_at", "_request_id" };
const char *const zx_wsq_meta_decl[2] = { "TIMESTAMP", "TEXT" };

/* ---- SQL text ------------------------------------------------------------ */

int zx_wsq_sql_ident(zx_fit_buf *b, const char *s)
{
    if (zx_fit_buf_put(b, "\"", 1) < 0)
        return -1;
    for (const char *q; (q = strchr(s, '"')) != NULL; s = q + 1)
        if (zx_fit_buf_put(b, s, (size_t)(q - s) + 1) < 0 || zx_fit_buf_put(b, "\"", 1) < 0)
            return -1;
    return zx_fit_buf_put(b, s, strlen(s)) < 0 || zx_fit_buf_put(b, "\"", 1) < 0 ? -1 : 0;
}

int zx_wsq_sql_str(zx_fit_buf *b, const char *s)
{
    return zx_fit_buf_put(b, s, strlen(s));
}

/* ---- schema cache -------------------------------------------------------- */

static void table_free(ws_table *t)
{
    for (uint32_t i = 0; i < t->ncols; i++) {
        free(t->cols[i].name);
        free(t->cols[i].decl);
    }
    for (int i = 0; i < MAX_STMTS; i++) {
        sqlite3_finalize(t->ins[i].st);
        free(t->ins[i].cols);
    }
    sqlite3_finalize(t->rej_ins);
    sqlite3_finalize(t->msg_ins);
    free(t->cols);
    free(t->name);
    free(t);
}

void zx_wsq_cache_drop(zx_ws *w)
{
    while (w->tables) {
        ws_table *t = w->tables;
        w->tables = t->next;
        table_free(t);
    }
}

static int table_add_col(ws_table *t, const char *name, const char *decl)
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
    c->kind = zx_fit_kind_from_decl(decl);
    t->ncols++;
    return 0;
}

int64_t zx_wsq_find_col(const ws_table *t, const char *name)
{
    for (uint32_t i = 0; i < t->ncols; i++)
        if (sqlite3_stricmp(t->cols[i].name, name) == 0)
            return i;
    return -1;
}

/* The cached table (columns read from the database on first use); a table
 * that does not exist has ncols == 0.  NULL on a database error/ENOMEM. */
ws_table *zx_wsq_get_table(zx_ws *w, const char *name)
{
    for (ws_table *t = w->tables; t; t = t->next)
        if (sqlite3_stricmp(t->name, name) == 0)
            return t;
    ws_table *t = calloc(1, sizeof(*t));
    if (!t || !(t->name = strdup(name)))
        goto fail;
    sqlite3_bind_text(w->st_info, 1, name, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(w->st_info)) == SQLITE_ROW) {
        const char *cn = (const char *)sqlite3_column_text(w->st_info, 0);
        const char *ct = (const char *)sqlite3_column_text(w->st_info, 1);
        if (cn && table_add_col(t, cn, ct) < 0) {
            rc = SQLITE_NOMEM;
            break;
        }
    }
    sqlite3_reset(w->st_info);
    sqlite3_clear_bindings(w->st_info);
    if (rc != SQLITE_DONE)
        goto fail;
    t->next = w->tables;
    w->tables = t;
    return t;
fail:
    if (t)
        table_free(t);
    return NULL;
}

int zx_wsq_add_newcol(zx_ws_result *res, const char *name, uint8_t type)
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

/* CREATE TABLE with the batch's new columns (at most MAX_CREATE_COLS) and
 * the metadata columns.  Returns 0, 1 when there is nothing to create, or
 * -1 (err set). */
int zx_wsq_create_table(zx_ws *w, ws_table *t, const zx_rowset *rs, uint32_t meta,
                        zx_ws_result *res, char *err, size_t errlen)
{
    zx_fit_buf *b = &w->sql;
    uint32_t n = 0;
    b->len = 0;
    if (zx_wsq_sql_str(b, "CREATE TABLE ") < 0 || zx_wsq_sql_ident(b, t->name) < 0 ||
        zx_wsq_sql_str(b, " (") < 0)
        goto nomem;
    for (uint32_t c = 0; c < rs->ncols && n < MAX_CREATE_COLS; c++) {
        if (w->map[c] != -3 || !zx_fit_decl_for_type(rs->cols[c].type))
            continue;
        int dup = 0;
        for (uint32_t d = 0; d < c && !dup; d++)
            dup = w->map[d] == -3 && sqlite3_stricmp(rs->cols[d].name, rs->cols[c].name) == 0;
        if (dup)
            continue;
        if ((n++ && zx_wsq_sql_str(b, ", ") < 0) || zx_wsq_sql_ident(b, rs->cols[c].name) < 0 ||
            zx_wsq_sql_str(b, " ") < 0 ||
            zx_wsq_sql_str(b, zx_fit_decl_for_type(rs->cols[c].type)) < 0)
            goto nomem;
    }
    uint32_t ndata = n;
    for (int m = 0; m < 2; m++)
        if (meta & (1u << m))
            if ((n++ && zx_wsq_sql_str(b, ", ") < 0) ||
                zx_wsq_sql_ident(b, zx_wsq_meta_name[m]) < 0 ||
                zx_wsq_sql_str(b, " ") < 0 || zx_wsq_sql_str(b, zx_wsq_meta_decl[m]) < 0)
                goto nomem;
    if (n == 0)
        return 1;
    if (zx_wsq_sql_str(b, ")") < 0)
        goto nomem;
    if (sqlite3_exec(w->db, b->p, NULL, NULL, NULL) != SQLITE_OK) {
        zx_seterr(err, errlen, "workspace: cannot create table %s: %s", t->name,
                      sqlite3_errmsg(w->db));
        return -1;
    }
    res->created_table = 1;
    n = 0;
    for (uint32_t c = 0; c < rs->ncols && n < ndata; c++) {
        if (w->map[c] != -3 || !zx_fit_decl_for_type(rs->cols[c].type) ||
            zx_wsq_find_col(t, rs->cols[c].name) >= 0)
            continue;
        n++;
        if (table_add_col(t, rs->cols[c].name, zx_fit_decl_for_type(rs->cols[c].type)) < 0 ||
            zx_wsq_add_newcol(res, rs->cols[c].name, rs->cols[c].type) < 0)
            goto nomem;
    }
    for (int m = 0; m < 2; m++)
        if ((meta & (1u << m)) && table_add_col(t, zx_wsq_meta_name[m], zx_wsq_meta_decl[m]) < 0)
            goto nomem;
    return 0;
nomem:
    zx_seterr(err, errlen, "workspace: out of memory");
    return -1;
}

/* ALTER TABLE ADD COLUMN.  0 added, 1 refused by SQLite (message in
 * *why, malloc'ed), -1 database error (err set). */
int zx_wsq_add_column(zx_ws *w, ws_table *t, const char *name, const char *decl,
                      char **why, char *err, size_t errlen)
{
    zx_fit_buf *b = &w->sql;
    b->len = 0;
    if (zx_wsq_sql_str(b, "ALTER TABLE ") < 0 || zx_wsq_sql_ident(b, t->name) < 0 ||
        zx_wsq_sql_str(b, " ADD COLUMN ") < 0 || zx_wsq_sql_ident(b, name) < 0 ||
        zx_wsq_sql_str(b, " ") < 0 ||
        zx_wsq_sql_str(b, decl) < 0)
        goto nomem;
    int rc = sqlite3_exec(w->db, b->p, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        return table_add_col(t, name, decl) < 0 ? -1 : 0;
    if (zx_wsq_data_error(rc) && !sqlite3_get_autocommit(w->db)) {
        if (why && !*why)
            *why = strdup(sqlite3_errmsg(w->db));
        return 1;
    }
    zx_seterr(err, errlen, "workspace: cannot add column %s to %s: %s", name, t->name,
                  sqlite3_errmsg(w->db));
    return -1;
nomem:
    zx_seterr(err, errlen, "workspace: out of memory");
    return -1;
}

/* The cached INSERT for this column list (NULL on error). */
sqlite3_stmt *zx_wsq_get_ins(zx_ws *w, ws_table *t, const uint32_t *cols, uint32_t n)
{
    ws_ins *v = &t->ins[0];
    for (int i = 0; i < MAX_STMTS; i++) {
        ws_ins *s = &t->ins[i];
        if (s->st && s->n == n && (n == 0 || memcmp(s->cols, cols, n * sizeof(*cols)) == 0)) {
            s->used = ++w->tick;
            return s->st;
        }
        if (!s->st || s->used < v->used)
            v = s;
    }
    sqlite3_finalize(v->st);
    free(v->cols);
    memset(v, 0, sizeof(*v));
    zx_fit_buf *b = &w->sql;
    b->len = 0;
    int bad = zx_wsq_sql_str(b, "INSERT INTO ") < 0 || zx_wsq_sql_ident(b, t->name) < 0;
    if (n == 0)
        bad = bad || zx_wsq_sql_str(b, " DEFAULT VALUES") < 0;
    for (uint32_t i = 0; i < n && !bad; i++)
        bad = zx_wsq_sql_str(b, i ? ", " : " (") < 0 ||
              zx_wsq_sql_ident(b, t->cols[cols[i]].name) < 0;
    for (uint32_t i = 0; i < n && !bad; i++)
        bad = zx_wsq_sql_str(b, i ? ", ?" : ") VALUES (?") < 0;
    if (bad || (n && zx_wsq_sql_str(b, ")") < 0))
        return NULL;
    if (!(v->cols = malloc((n ? n : 1) * sizeof(*cols))))
        return NULL;
    memcpy(v->cols, cols, n * sizeof(*cols));
    if (!(v->st = zx_wsq_prep(w, b->p))) {
        free(v->cols);
        v->cols = NULL;
        return NULL;
    }
    v->n = n;
    v->used = ++w->tick;
    return v->st;
}

int zx_ws_table_columns(zx_ws *w, const char *table, char **json_out)
{
    *json_out = NULL;
    ws_table *t = zx_wsq_get_table(w, table);
    if (!t)
        return -1;
    if (t->ncols == 0)
        return 1;
    zx_fit_buf b = { 0 };
    int bad = zx_fit_buf_put(&b, "[", 1) < 0;
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
        bad = (i && zx_fit_buf_put(&b, ",", 1) < 0) ||
              zx_fit_buf_put(&b, "{\"name\":", 8) < 0 ||
              zx_fit_json_quote(&b, c->name, strlen(c->name)) < 0 ||
              zx_fit_buf_put(&b, ",\"type\":", 8) < 0 ||
              zx_fit_json_quote(&b, type, strlen(type)) < 0 || zx_fit_buf_put(&b, "}", 1) < 0;
    }
    if (bad || zx_fit_buf_put(&b, "]", 1) < 0) {
        zx_fit_buf_free(&b);
        return -1;
    }
    *json_out = b.p;
    return 0;
}
