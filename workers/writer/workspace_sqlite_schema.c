/*
 * workspace_sqlite_schema.c — what the SQLite backend knows of tables:
 * reading a table's columns (pragma_table_info), CREATE TABLE and ALTER
 * TABLE ADD COLUMN, the cached INSERT statements per column set, and the
 * rejects table (<table>__rejects, created on first need).
 *
 * SQLite's dialect: declared types INTEGER, REAL, BOOLEAN, TEXT,
 * TIMESTAMP, JSON (fit.h), and for a mirror of a CDC source its own types
 * under names that keep the values as they are (zx_wsq_decl_for_source);
 * names compare case-insensitively, as SQLite does.
 *
 * It must never: build SQL with an unquoted identifier or an inlined value,
 * or insert data rows (workspace_sqlite.c does).
 */
#include "common/util.h"
#include "workers/writer/workspace_sqlite_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int zx_wsq_name_cmp(const char *a, const char *b)
{
    return sqlite3_stricmp(a, b);
}

const char *zx_wsq_decl_for_type(zx_type t)
{
    return zx_fit_decl_for_type(t);
}

/* Decls with a type's modifiers ("NUMERIC TEXT(10,2)", "VARCHAR(20)"),
 * made once each and kept for the process's life: a declared type is
 * handed around as a borrowed string (ws_coldef.decl) and a mirror has few
 * distinct ones.  The writer calls this from its one thread. */
#define DECL_KEPT 128
#define DECL_LEN 48
static char decl_kept[DECL_KEPT][DECL_LEN];
static size_t ndecl_kept;

/* head + mods (e.g. "(10,2)") kept, or head alone when mods is not a
 * short list of numbers or the store is full (the values stay the same:
 * only the declared name loses its modifiers). */
static const char *decl_with(const char *head, const char *mods)
{
    char d[DECL_LEN];
    size_t n = strlen(mods);
    if (n < 3 || n > 16 || mods[0] != '(' || mods[n - 1] != ')' ||
        strspn(mods + 1, "0123456789,") != n - 2)
        return head;
    if (snprintf(d, sizeof(d), "%s%s", head, mods) >= (int)sizeof(d))
        return head;
    for (size_t i = 0; i < ndecl_kept; i++)
        if (!strcmp(decl_kept[i], d))
            return decl_kept[i];
    if (ndecl_kept == DECL_KEPT)
        return head;
    memcpy(decl_kept[ndecl_kept], d, strlen(d) + 1);
    return decl_kept[ndecl_kept++];
}

/* NUMERIC TEXT(p,s), the name zx_wsq_decl_for_source gives numeric: its
 * values are fitted as text (a number kept as text stays that literal,
 * as when these columns were declared TEXT; fit kind "any" would bind it
 * as a double).  The other names it makes (DATE, TIME, UUID...) only ever
 * get text from a CDC source: their kind stays "any", as for a table a
 * user made with such a column. */
zx_fit_kind zx_wsq_kind_from_decl(const char *decl)
{
    zx_fit_kind k = zx_fit_kind_from_decl(decl);
    if (k == ZX_FIT_ANY && decl && !strncasecmp(decl, "NUMERIC TEXT", 12) &&
        (!decl[12] || decl[12] == '('))
        return ZX_FIT_TEXT;
    return k;
}

/* src is word w, alone or followed by '(' or ' ': the rest after w. */
static const char *after(const char *src, const char *w)
{
    size_t k = strlen(w);
    if (strncmp(src, w, k) || (src[k] && src[k] != '(' && src[k] != ' '))
        return NULL;
    return src + k;
}

/* A source's declared type (Postgres' format_type words, as zx's CDC and
 * Debezium give them) on SQLite: the same type for tools that read the
 * schema (PRAGMA table_info, drivers, BI tools), under a name whose
 * SQLite affinity keeps every value exactly as it arrives.  SQLite derives
 * a column's affinity from the words of its type: NUMERIC(10,2) would
 * turn '1.50' into the real 1.5 and '12345678901234567.89' into an
 * integer, so numeric is "NUMERIC TEXT(p,s)" (TEXT affinity); DATE, TIME,
 * UUID, INET, CIDR, MACADDR have NUMERIC affinity but no value of theirs
 * is a number; types whose text may be a bare number under a non-text
 * affinity (interval, money, oid, bit, xml) stay TEXT, as do arrays
 * (Postgres' text form {1,2,3}) and types zx does not know. */
const char *zx_wsq_decl_for_source(const char *src)
{
    static const struct { const char *prefix; const char *decl; } map[] = {
        { "bigint", "INTEGER" }, { "integer", "INTEGER" }, { "smallint", "INTEGER" },
        { "double precision", "REAL" }, { "real", "REAL" }, { "boolean", "BOOLEAN" },
        { "timestamp", "TIMESTAMP" }, { "jsonb", "JSON" }, { "json", "JSON" },
        { "bytea", "BLOB" }, { "date", "DATE" }, { "uuid", "UUID" }, { "inet", "INET" },
        { "cidr", "CIDR" }, { "macaddr", "MACADDR" }, { "text", "TEXT" },
    };
    const char *rest;
    if (!src)
        return NULL;
    size_t n = strlen(src);
    if (n > 2 && strcmp(src + n - 2, "[]") == 0)
        return "TEXT"; /* arrays: Postgres' text form ({1,2,3}), not JSON */
    if ((rest = after(src, "numeric")))
        return decl_with("NUMERIC TEXT", rest);
    if ((rest = after(src, "character varying")))
        return decl_with("VARCHAR", rest);
    if ((rest = after(src, "character")))
        return decl_with("CHAR", rest);
    if (after(src, "time"))
        return strstr(src, "with time zone") && !strstr(src, "without") ? "TIME WITH TIME ZONE"
                                                                        : "TIME";
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (after(src, map[i].prefix))
            return map[i].decl;
    return "TEXT"; /* interval, money, oid, bit, xml, enums, domains... */
}

void zx_wsq_param(zx_buf *b, uint32_t i)
{
    (void)i;
    zx_buf_put(b, "?", 1);
}

static wsq_table *be_of(ws_table *t)
{
    if (!t->be)
        t->be = calloc(1, sizeof(wsq_table));
    return t->be;
}

void zx_wsq_table_free(ws_table *t)
{
    wsq_table *b = t->be;
    if (!b)
        return;
    for (int i = 0; i < MAX_STMTS; i++) {
        sqlite3_finalize(b->ins[i].st);
        free(b->ins[i].cols);
    }
    sqlite3_finalize(b->rej_ins);
    free(b);
    t->be = NULL;
}

int zx_wsq_load_table(zx_ws *ws, ws_table *t)
{
    wsq *w = WSQ(ws);
    sqlite3_bind_text(w->st_info, 1, t->name, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(w->st_info)) == SQLITE_ROW) {
        const char *cn = (const char *)sqlite3_column_text(w->st_info, 0);
        const char *ct = (const char *)sqlite3_column_text(w->st_info, 1);
        if (cn && ws_table_add_col(ws, t, cn, ct) < 0) {
            rc = SQLITE_NOMEM;
            break;
        }
    }
    sqlite3_reset(w->st_info);
    sqlite3_clear_bindings(w->st_info);
    return rc == SQLITE_DONE ? 0 : -1;
}

int zx_wsq_create_table(zx_ws *ws, ws_table *t, const ws_coldef *cols, size_t n, char *err,
                        size_t errlen)
{
    wsq *w = WSQ(ws);
    zx_buf *b = &w->sql;
    b->len = 0;
    int bad = ws_sql_str(b, "CREATE TABLE ") < 0 || ws_sql_ident(b, t->name) < 0 ||
              ws_sql_str(b, " (") < 0;
    size_t nkey = 0;
    for (size_t i = 0; i < n && !bad; i++) {
        bad = (i && ws_sql_str(b, ", ") < 0) || ws_sql_ident(b, cols[i].name) < 0 ||
              ws_sql_str(b, " ") < 0 ||
              ws_sql_str(b, cols[i].decl ? cols[i].decl : zx_wsq_decl_for_type(cols[i].type)) < 0 ||
              (cols[i].key && ws_sql_str(b, " NOT NULL") < 0);
        nkey += cols[i].key != 0;
    }
    for (size_t i = 0, k = 0; i < n && nkey && !bad; i++)
        if (cols[i].key)
            bad = ws_sql_str(b, k++ ? ", " : ", PRIMARY KEY (") < 0 ||
                  ws_sql_ident(b, cols[i].name) < 0;
    if (bad || (nkey && ws_sql_str(b, ")") < 0) || ws_sql_str(b, ")") < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    if (sqlite3_exec(w->db, b->p, NULL, NULL, NULL) != SQLITE_OK)
        return zx_seterr(err, errlen, "workspace: cannot create table %s: %s", t->name,
                         sqlite3_errmsg(w->db));
    return 0;
}

int zx_wsq_add_column(zx_ws *ws, ws_table *t, const char *name, const char *decl, char **why,
                      char *err, size_t errlen)
{
    wsq *w = WSQ(ws);
    zx_buf *b = &w->sql;
    b->len = 0;
    if (ws_sql_str(b, "ALTER TABLE ") < 0 || ws_sql_ident(b, t->name) < 0 ||
        ws_sql_str(b, " ADD COLUMN ") < 0 || ws_sql_ident(b, name) < 0 ||
        ws_sql_str(b, " ") < 0 || ws_sql_str(b, decl) < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    int rc = sqlite3_exec(w->db, b->p, NULL, NULL, NULL);
    if (rc == SQLITE_OK) {
        if (ws_table_add_col(ws, t, name, decl) < 0)
            return zx_seterr(err, errlen, "workspace: out of memory");
        /* statements made for the old column list stay valid */
        return 0;
    }
    if (zx_wsq_refusal(w, rc)) {
        if (why && !*why)
            *why = strdup(sqlite3_errmsg(w->db));
        return 1;
    }
    return zx_seterr(err, errlen, "workspace: cannot add column %s to %s: %s", name, t->name,
                     sqlite3_errmsg(w->db));
}

sqlite3_stmt *zx_wsq_get_ins(wsq *w, ws_table *t, const uint32_t *cols, uint32_t n)
{
    wsq_table *tb = be_of(t);
    if (!tb)
        return NULL;
    wsq_ins *v = &tb->ins[0];
    for (int i = 0; i < MAX_STMTS; i++) {
        wsq_ins *s = &tb->ins[i];
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
    zx_buf *b = &w->sql;
    b->len = 0;
    int bad = ws_sql_str(b, "INSERT INTO ") < 0 || ws_sql_ident(b, t->name) < 0;
    if (n == 0)
        bad = bad || ws_sql_str(b, " DEFAULT VALUES") < 0;
    for (uint32_t i = 0; i < n && !bad; i++)
        bad = ws_sql_str(b, i ? ", " : " (") < 0 || ws_sql_ident(b, t->cols[cols[i]].name) < 0;
    for (uint32_t i = 0; i < n && !bad; i++)
        bad = ws_sql_str(b, i ? ", ?" : ") VALUES (?") < 0;
    if (bad || (n && ws_sql_str(b, ")") < 0))
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

/* ---- the rejects table ------------------------------------------------- */

static const char *const rej_cols[WS_REJECTS_NCOLS] = {
    "rejected_at", "pipeline", "request_id", "column_name", "column_type", "value_type",
    "raw_value", "reason", "source_key", "source_position"
};

/* Bind bytes as TEXT when valid UTF-8 without NUL, else as a BLOB (SQLite
 * keeps both); NULL p stays NULL. */
static void bind_bytes(sqlite3_stmt *st, int i, const void *p, size_t n)
{
    if (!p)
        return;
    if (ws_utf8_text(p, n))
        sqlite3_bind_text64(st, i, n ? p : "", n, SQLITE_STATIC, SQLITE_UTF8);
    else
        sqlite3_bind_blob64(st, i, p, n, SQLITE_STATIC);
}

static void bind_str(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

/* The INSERT of <table>__rejects, creating the table, or adding the two
 * source columns to one made before they existed.  NULL with *skip = 1
 * when SQLite refuses it for a data reason (a user-made table of that
 * name); NULL with *skip = 0 on a database error (err set). */
static sqlite3_stmt *rej_stmt(wsq *w, const char *table, int *skip, char *err, size_t errlen)
{
    char rname[160];
    *skip = 0;
    snprintf(rname, sizeof(rname), "%s__rejects", table);
    ws_table *t = ws_get_table(&w->base, rname);
    wsq_table *tb = t ? be_of(t) : NULL;
    if (!tb)
        goto dberr;
    if (tb->rej_ins)
        return tb->rej_ins;
    zx_buf *b = &w->sql;
    int rc;
    if (t->ncols == 0) {
        b->len = 0;
        int bad = ws_sql_str(b, "CREATE TABLE IF NOT EXISTS ") < 0 ||
                  ws_sql_ident(b, rname) < 0 || ws_sql_str(b, " (") < 0;
        for (int i = 0; i < WS_REJECTS_NCOLS && !bad; i++)
            bad = ws_sql_str(b, i ? ", " : "") < 0 || ws_sql_str(b, rej_cols[i]) < 0 ||
                  ws_sql_str(b, i == 0 ? " TIMESTAMP" : " TEXT") < 0;
        if (bad || ws_sql_str(b, ")") < 0)
            goto nomem;
        rc = sqlite3_exec(w->db, b->p, NULL, NULL, NULL);
        if (rc != SQLITE_OK)
            goto refused;
        for (int i = 0; i < WS_REJECTS_NCOLS; i++)
            if (ws_table_add_col(&w->base, t, rej_cols[i], i == 0 ? "TIMESTAMP" : "TEXT") < 0)
                goto nomem;
    }
    for (int i = WS_REJECTS_NCOLS - 2; i < WS_REJECTS_NCOLS; i++) {
        if (ws_find_col(&w->base, t, rej_cols[i]) >= 0)
            continue;
        int r = zx_wsq_add_column(&w->base, t, rej_cols[i], "TEXT", NULL, err, errlen);
        if (r < 0)
            return NULL;
        if (r > 0) {
            *skip = 1;
            return NULL;
        }
    }
    b->len = 0;
    int bad = ws_sql_str(b, "INSERT INTO ") < 0 || ws_sql_ident(b, rname) < 0;
    for (int i = 0; i < WS_REJECTS_NCOLS && !bad; i++)
        bad = ws_sql_str(b, i ? ", " : " (") < 0 || ws_sql_str(b, rej_cols[i]) < 0;
    bad = bad || ws_sql_str(b, ") VALUES (?,?,?,?,?,?,?,?,?,?)") < 0;
    if (bad)
        goto nomem;
    if ((tb->rej_ins = zx_wsq_prep(w, b->p)))
        return tb->rej_ins;
    rc = sqlite3_errcode(w->db);
refused:
    if (zx_wsq_refusal(w, rc)) {
        *skip = 1;
        return NULL;
    }
dberr:
    zx_seterr(err, errlen, "workspace: rejects table of %s: %s", table, sqlite3_errmsg(w->db));
    return NULL;
nomem:
    zx_seterr(err, errlen, "workspace: out of memory");
    return NULL;
}

int zx_wsq_reject_row(zx_ws *ws, const ws_reject *r, char *err, size_t errlen)
{
    wsq *w = WSQ(ws);
    int skip;
    sqlite3_stmt *st = rej_stmt(w, r->table, &skip, err, errlen);
    if (!st)
        return skip ? 1 : -1;
    bind_str(st, 1, r->rejected_at);
    bind_str(st, 2, r->pipeline);
    bind_str(st, 3, r->request_id);
    bind_str(st, 4, r->column);
    bind_str(st, 5, r->column_type);
    bind_str(st, 6, r->value_type);
    bind_bytes(st, 7, r->raw, r->raw_len);
    bind_str(st, 8, r->reason);
    bind_bytes(st, 9, r->key, r->key_len);
    bind_str(st, 10, r->position);
    int rc = zx_wsq_run(st);
    sqlite3_clear_bindings(st);
    if (rc == SQLITE_OK)
        return 0;
    if (zx_wsq_refusal(w, rc))
        return 1;
    return zx_seterr(err, errlen, "workspace: cannot record a reject for %s: %s", r->table,
                     sqlite3_errmsg(w->db));
}
