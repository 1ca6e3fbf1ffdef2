/*
 * workspace_sqlite.c — the SQLite workspace backend (see workspace.h).
 *
 * The writer's only write connection: WAL mode, one transaction per group
 * commit, tables and columns created from the data, misfits turned into
 * NULL plus a row in <table>__rejects.  Speed comes from one cached INSERT
 * per (table, column set), reused with reset + re-binding of just the
 * parameters a row set.
 *
 * It must never: turn bad data into an error return, build SQL with an
 * unquoted identifier or an inlined value, or keep schema knowledge across
 * a rollback.
 */
#include "workers/writer/workspace.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timefmt.h"
#include "workers/writer/fit.h"

#define MAX_STMTS 4          /* cached INSERT statements per table */
#define MAX_CREATE_COLS 1500 /* columns in one CREATE TABLE; more via ALTER */

static const char *const meta_name[2] = { "_ingested_at", "_request_id" };
static const char *const meta_decl[2] = { "TIMESTAMP", "TEXT" };

typedef struct ws_col {
    char *name, *decl;
    zx_fit_kind kind;
} ws_col;

typedef struct ws_ins {
    uint32_t *cols;       /* table column indexes, in table order */
    uint32_t n;
    sqlite3_stmt *st;
    uint64_t used;        /* LRU tick */
} ws_ins;

typedef struct ws_table {
    struct ws_table *next;
    char *name;
    ws_col *cols;
    uint32_t ncols, cap;
    ws_ins ins[MAX_STMTS];
    sqlite3_stmt *rej_ins; /* INSERT into <name>__rejects, once created */
} ws_table;

struct zx_ws {
    sqlite3 *db;
    int in_txn;
    sqlite3_stmt *st_begin, *st_commit, *st_rollback, *st_ckpt_get, *st_ckpt_set,
        *st_info;
    ws_table *tables;
    uint64_t tick;
    /* per-append scratch, grown as needed */
    int32_t *map;         /* rowset column -> table column, -1 skip, -2 not added */
    uint64_t *rejn;       /* rowset column -> misfits */
    char **nomsg;         /* rowset column -> why it could not be added */
    uint32_t *param;      /* table column -> parameter index (0: none) */
    uint8_t *used;        /* table column -> in the statement */
    uint32_t *list;       /* the statement's table columns */
    char (*slot)[ZX_TS_BUFSZ]; /* table column -> short converted text of
                                  the current row (bound SQLITE_STATIC) */
    size_t rs_cap, tc_cap;
    zx_fit_buf buf, raw, sql;
    char ts[ZX_TS_BUFSZ];
};

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

const char *zx_ws_errmsg(zx_ws *w)
{
    return w && w->db ? sqlite3_errmsg(w->db) : "no workspace";
}

/* Errors that come from the data or the table's shape rather than from the
 * database itself: the statement failed, the transaction goes on. */
static int data_error(int rc)
{
    rc &= 0xff;
    return rc == SQLITE_ERROR || rc == SQLITE_CONSTRAINT || rc == SQLITE_MISMATCH ||
           rc == SQLITE_TOOBIG || rc == SQLITE_RANGE;
}

static int sql_ident(zx_fit_buf *b, const char *s)
{
    if (zx_fit_buf_put(b, "\"", 1) < 0)
        return -1;
    for (const char *q; (q = strchr(s, '"')) != NULL; s = q + 1)
        if (zx_fit_buf_put(b, s, (size_t)(q - s) + 1) < 0 || zx_fit_buf_put(b, "\"", 1) < 0)
            return -1;
    return zx_fit_buf_put(b, s, strlen(s)) < 0 || zx_fit_buf_put(b, "\"", 1) < 0 ? -1 : 0;
}

static int sql_str(zx_fit_buf *b, const char *s)
{
    return zx_fit_buf_put(b, s, strlen(s));
}

static sqlite3_stmt *prep(zx_ws *w, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

/* Run a cached statement to completion; returns the SQLite code. */
static int run(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
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
    free(t->cols);
    free(t->name);
    free(t);
}

static void cache_drop(zx_ws *w)
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

static int64_t find_col(const ws_table *t, const char *name)
{
    for (uint32_t i = 0; i < t->ncols; i++)
        if (sqlite3_stricmp(t->cols[i].name, name) == 0)
            return i;
    return -1;
}

/* The cached table (columns read from the database on first use); a table
 * that does not exist has ncols == 0.  NULL on a database error/ENOMEM. */
static ws_table *get_table(zx_ws *w, const char *name)
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

/* ---- open / close / transactions ----------------------------------------- */

zx_ws *zx_ws_open_sqlite(const char *path, const char *synchronous, char *err, size_t errlen)
{
    zx_ws *w = calloc(1, sizeof(*w));
    char *jm = NULL;
    const char *sync = "FULL";
    if (!w) {
        seterr(err, errlen, "workspace: out of memory");
        return NULL;
    }
    if (synchronous && sqlite3_stricmp(synchronous, "normal") == 0)
        sync = "NORMAL";
    else if (synchronous && sqlite3_stricmp(synchronous, "full") != 0) {
        seterr(err, errlen, "workspace: synchronous must be \"normal\" or \"full\", not \"%s\"",
               synchronous);
        goto fail;
    }
    /* Memory statistics cost a global mutex per allocation (about 40% of
     * insert speed).  Process-wide and only possible before SQLite is first
     * used; harmlessly refused (SQLITE_MISUSE) after that. */
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    if (sqlite3_open_v2(path, &w->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        seterr(err, errlen, "workspace %s: %s", path,
               w->db ? sqlite3_errmsg(w->db) : "cannot open");
        goto fail;
    }
    sqlite3_busy_timeout(w->db, 5000);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(w->db, "PRAGMA journal_mode=WAL", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        jm = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (!jm || sqlite3_stricmp(jm, "wal") != 0) {
        seterr(err, errlen, "workspace %s: cannot switch to WAL mode: %s", path,
               jm ? jm : sqlite3_errmsg(w->db));
        goto fail;
    }
    char pragmas[256];
    snprintf(pragmas, sizeof(pragmas),
             "PRAGMA synchronous=%s; PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY;"
             "CREATE TABLE IF NOT EXISTS _zx_checkpoints(pipeline TEXT PRIMARY KEY,"
             " seq INTEGER, committed_at TEXT);", sync);
    if (sqlite3_exec(w->db, pragmas, NULL, NULL, NULL) != SQLITE_OK)
        goto dberr;
    if (!(w->st_begin = prep(w, "BEGIN IMMEDIATE")) || !(w->st_commit = prep(w, "COMMIT")) ||
        !(w->st_rollback = prep(w, "ROLLBACK")) ||
        !(w->st_ckpt_get = prep(w, "SELECT seq FROM _zx_checkpoints WHERE pipeline=?")) ||
        !(w->st_ckpt_set = prep(w, "INSERT INTO _zx_checkpoints(pipeline,seq,committed_at)"
                                   " VALUES(?,?,?) ON CONFLICT(pipeline) DO UPDATE SET"
                                   " seq=excluded.seq, committed_at=excluded.committed_at")) ||
        !(w->st_info = prep(w, "SELECT name, type FROM pragma_table_info(?)")))
        goto dberr;
    free(jm);
    return w;
dberr:
    seterr(err, errlen, "workspace %s: %s", path, sqlite3_errmsg(w->db));
fail:
    free(jm);
    zx_ws_close(w);
    return NULL;
}

void zx_ws_close(zx_ws *w)
{
    if (!w)
        return;
    zx_ws_rollback(w);
    sqlite3_finalize(w->st_begin);
    sqlite3_finalize(w->st_commit);
    sqlite3_finalize(w->st_rollback);
    sqlite3_finalize(w->st_ckpt_get);
    sqlite3_finalize(w->st_ckpt_set);
    sqlite3_finalize(w->st_info);
    sqlite3_close(w->db);
    free(w->map);
    free(w->rejn);
    free(w->nomsg);
    free(w->param);
    free(w->used);
    free(w->list);
    free(w->slot);
    zx_fit_buf_free(&w->buf);
    zx_fit_buf_free(&w->raw);
    zx_fit_buf_free(&w->sql);
    free(w);
}

int zx_ws_begin(zx_ws *w, char *err, size_t errlen)
{
    if (w->in_txn) {
        seterr(err, errlen, "workspace: a transaction is already open");
        return -1;
    }
    if (run(w->st_begin) != SQLITE_OK) {
        seterr(err, errlen, "workspace: begin: %s", sqlite3_errmsg(w->db));
        return -1;
    }
    w->in_txn = 1;
    return 0;
}

int zx_ws_commit(zx_ws *w, char *err, size_t errlen)
{
    if (!w->in_txn) {
        seterr(err, errlen, "workspace: no open transaction");
        return -1;
    }
    if (run(w->st_commit) != SQLITE_OK) {
        seterr(err, errlen, "workspace: commit: %s", sqlite3_errmsg(w->db));
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
    cache_drop(w);
    if (w->db && !sqlite3_get_autocommit(w->db))
        run(w->st_rollback);
    w->in_txn = 0;
}

/* ---- checkpoints --------------------------------------------------------- */

int zx_ws_checkpoint_get(zx_ws *w, const char *pipeline, uint64_t *seq)
{
    *seq = 0;
    sqlite3_bind_text(w->st_ckpt_get, 1, pipeline, -1, SQLITE_STATIC);
    int rc = sqlite3_step(w->st_ckpt_get);
    if (rc == SQLITE_ROW)
        *seq = (uint64_t)sqlite3_column_int64(w->st_ckpt_get, 0);
    sqlite3_reset(w->st_ckpt_get);
    sqlite3_clear_bindings(w->st_ckpt_get);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

int zx_ws_checkpoint_set(zx_ws *w, const char *pipeline, uint64_t seq, int64_t now_us)
{
    char ts[ZX_TS_BUFSZ];
    if (!w->in_txn)
        return -1;
    zx_ts_format(now_us, ts);
    sqlite3_bind_text(w->st_ckpt_set, 1, pipeline, -1, SQLITE_STATIC);
    sqlite3_bind_int64(w->st_ckpt_set, 2, (sqlite3_int64)seq);
    sqlite3_bind_text(w->st_ckpt_set, 3, ts, -1, SQLITE_STATIC);
    int rc = run(w->st_ckpt_set);
    sqlite3_clear_bindings(w->st_ckpt_set);
    return rc == SQLITE_OK ? 0 : -1;
}


/* ---- append -------------------------------------------------------------- */

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
        if (!m || !r || !n)
            return -1;
        w->rs_cap = cap;
    }
    if (ntc > w->tc_cap) {
        size_t cap = ntc + 16;
        uint32_t *p = realloc(w->param, cap * sizeof(*p));
        if (p)
            w->param = p;
        uint8_t *u = realloc(w->used, cap);
        if (u)
            w->used = u;
        uint32_t *l = realloc(w->list, cap * sizeof(*l));
        if (l)
            w->list = l;
        char(*sl)[ZX_TS_BUFSZ] = realloc(w->slot, cap * sizeof(*sl));
        if (sl)
            w->slot = sl;
        if (!p || !u || !l || !sl)
            return -1;
        w->tc_cap = cap;
    }
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

/* CREATE TABLE with the batch's new columns (at most MAX_CREATE_COLS) and
 * the metadata columns.  Returns 0, 1 when there is nothing to create, or
 * -1 (err set). */
static int create_table(zx_ws *w, ws_table *t, const zx_rowset *rs, uint32_t meta,
                        zx_ws_result *res, char *err, size_t errlen)
{
    zx_fit_buf *b = &w->sql;
    uint32_t n = 0;
    b->len = 0;
    if (sql_str(b, "CREATE TABLE ") < 0 || sql_ident(b, t->name) < 0 || sql_str(b, " (") < 0)
        goto nomem;
    for (uint32_t c = 0; c < rs->ncols && n < MAX_CREATE_COLS; c++) {
        if (w->map[c] != -3 || !zx_fit_decl_for_type(rs->cols[c].type))
            continue;
        int dup = 0;
        for (uint32_t d = 0; d < c && !dup; d++)
            dup = w->map[d] == -3 && sqlite3_stricmp(rs->cols[d].name, rs->cols[c].name) == 0;
        if (dup)
            continue;
        if ((n++ && sql_str(b, ", ") < 0) || sql_ident(b, rs->cols[c].name) < 0 ||
            sql_str(b, " ") < 0 || sql_str(b, zx_fit_decl_for_type(rs->cols[c].type)) < 0)
            goto nomem;
    }
    uint32_t ndata = n;
    for (int m = 0; m < 2; m++)
        if (meta & (1u << m))
            if ((n++ && sql_str(b, ", ") < 0) || sql_ident(b, meta_name[m]) < 0 ||
                sql_str(b, " ") < 0 || sql_str(b, meta_decl[m]) < 0)
                goto nomem;
    if (n == 0)
        return 1;
    if (sql_str(b, ")") < 0)
        goto nomem;
    if (sqlite3_exec(w->db, b->p, NULL, NULL, NULL) != SQLITE_OK) {
        seterr(err, errlen, "workspace: cannot create table %s: %s", t->name,
               sqlite3_errmsg(w->db));
        return -1;
    }
    res->created_table = 1;
    n = 0;
    for (uint32_t c = 0; c < rs->ncols && n < ndata; c++) {
        if (w->map[c] != -3 || !zx_fit_decl_for_type(rs->cols[c].type) ||
            find_col(t, rs->cols[c].name) >= 0)
            continue;
        n++;
        if (table_add_col(t, rs->cols[c].name, zx_fit_decl_for_type(rs->cols[c].type)) < 0 ||
            add_newcol(res, rs->cols[c].name, rs->cols[c].type) < 0)
            goto nomem;
    }
    for (int m = 0; m < 2; m++)
        if ((meta & (1u << m)) && table_add_col(t, meta_name[m], meta_decl[m]) < 0)
            goto nomem;
    return 0;
nomem:
    seterr(err, errlen, "workspace: out of memory");
    return -1;
}

/* ALTER TABLE ADD COLUMN.  0 added, 1 refused by SQLite (message in
 * *why, malloc'ed), -1 database error (err set). */
static int add_column(zx_ws *w, ws_table *t, const char *name, const char *decl,
                      char **why, char *err, size_t errlen)
{
    zx_fit_buf *b = &w->sql;
    b->len = 0;
    if (sql_str(b, "ALTER TABLE ") < 0 || sql_ident(b, t->name) < 0 ||
        sql_str(b, " ADD COLUMN ") < 0 || sql_ident(b, name) < 0 || sql_str(b, " ") < 0 ||
        sql_str(b, decl) < 0)
        goto nomem;
    int rc = sqlite3_exec(w->db, b->p, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        return table_add_col(t, name, decl) < 0 ? -1 : 0;
    if (data_error(rc) && !sqlite3_get_autocommit(w->db)) {
        if (why && !*why)
            *why = strdup(sqlite3_errmsg(w->db));
        return 1;
    }
    seterr(err, errlen, "workspace: cannot add column %s to %s: %s", name, t->name,
           sqlite3_errmsg(w->db));
    return -1;
nomem:
    seterr(err, errlen, "workspace: out of memory");
    return -1;
}

/* The cached INSERT for this column list (NULL on error). */
static sqlite3_stmt *get_ins(zx_ws *w, ws_table *t, const uint32_t *cols, uint32_t n)
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
    int bad = sql_str(b, "INSERT INTO ") < 0 || sql_ident(b, t->name) < 0;
    if (n == 0)
        bad = bad || sql_str(b, " DEFAULT VALUES") < 0;
    for (uint32_t i = 0; i < n && !bad; i++)
        bad = sql_str(b, i ? ", " : " (") < 0 || sql_ident(b, t->cols[cols[i]].name) < 0;
    for (uint32_t i = 0; i < n && !bad; i++)
        bad = sql_str(b, i ? ", ?" : ") VALUES (?") < 0;
    if (bad || (n && sql_str(b, ")") < 0))
        return NULL;
    if (!(v->cols = malloc((n ? n : 1) * sizeof(*cols))))
        return NULL;
    memcpy(v->cols, cols, n * sizeof(*cols));
    if (!(v->st = prep(w, b->p))) {
        free(v->cols);
        v->cols = NULL;
        return NULL;
    }
    v->n = n;
    v->used = ++w->tick;
    return v->st;
}

/* Record one rejected value (v != NULL) or row (v == NULL, reason given).
 * 0, or -1 on a database error / out of memory (err set).  A rejects table
 * that cannot be created or written for a data reason is skipped. */
static int reject(zx_ws *w, ws_table *t, const zx_ws_append *a, const char *column,
                  zx_fit_kind kind, const zx_value *v, const char *reason,
                  char *err, size_t errlen)
{
    char why[512];
    if (!t->rej_ins) {
        zx_fit_buf *b = &w->sql;
        char *rname = NULL;
        b->len = 0;
        if (asprintf(&rname, "%s__rejects", t->name) < 0)
            goto nomem;
        int bad = sql_str(b, "CREATE TABLE IF NOT EXISTS ") < 0 || sql_ident(b, rname) < 0 ||
                  sql_str(b, " (rejected_at TIMESTAMP, pipeline TEXT, request_id TEXT,"
                             " column_name TEXT, column_type TEXT, value_type TEXT,"
                             " raw_value TEXT, reason TEXT)") < 0;
        if (bad) {
            free(rname);
            goto nomem;
        }
        int rc = sqlite3_exec(w->db, b->p, NULL, NULL, NULL);
        b->len = 0;
        bad = sql_str(b, "INSERT INTO ") < 0 || sql_ident(b, rname) < 0 ||
              sql_str(b, " (rejected_at, pipeline, request_id, column_name, column_type,"
                         " value_type, raw_value, reason) VALUES (?,?,?,?,?,?,?,?)") < 0;
        free(rname);
        if (bad)
            goto nomem;
        if (rc == SQLITE_OK)
            t->rej_ins = prep(w, b->p);
        if (!t->rej_ins) {
            rc = sqlite3_errcode(w->db);
            if (data_error(rc) && !sqlite3_get_autocommit(w->db))
                return 0; /* e.g. a user-made table of that name: skip */
            seterr(err, errlen, "workspace: rejects table of %s: %s", t->name,
                   sqlite3_errmsg(w->db));
            return -1;
        }
    }
    sqlite3_stmt *st = t->rej_ins;
    sqlite3_bind_text(st, 1, w->ts, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, a->pipeline ? a->pipeline : "", -1, SQLITE_STATIC);
    if (a->request_id)
        sqlite3_bind_text(st, 3, a->request_id, -1, SQLITE_STATIC);
    if (column)
        sqlite3_bind_text(st, 4, column, -1, SQLITE_STATIC);
    if (v) {
        w->raw.len = 0;
        if (zx_fit_json_text(v, &w->raw) < 0)
            goto nomem;
        sqlite3_bind_text(st, 5, kind == ZX_FIT__COUNT ? "none" : zx_fit_kind_name(kind),
                          -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, zx_type_name((zx_type)v->type), -1, SQLITE_STATIC);
        sqlite3_bind_text64(st, 7, w->raw.p, w->raw.len, SQLITE_STATIC, SQLITE_UTF8);
        if (!reason) {
            zx_fit_reason(why, sizeof(why), w->raw.p, w->raw.len, (zx_type)v->type,
                          column ? column : "", kind);
            reason = why;
        }
    } else {
        sqlite3_bind_text(st, 6, "row", -1, SQLITE_STATIC);
    }
    sqlite3_bind_text(st, 8, reason ? reason : "", -1, SQLITE_TRANSIENT);
    int rc = run(st);
    sqlite3_clear_bindings(st);
    if (rc == SQLITE_OK || (data_error(rc) && !sqlite3_get_autocommit(w->db)))
        return 0;
    seterr(err, errlen, "workspace: cannot record a reject for %s: %s", t->name,
           sqlite3_errmsg(w->db));
    return -1;
nomem:
    seterr(err, errlen, "workspace: out of memory");
    return -1;
}

/* Bind a fitted value.  Text in the scratch buffer is copied into the
 * column's slot when short (timestamps), else handed over as TRANSIENT. */
static int bind_out(sqlite3_stmt *st, int p, const zx_fit_out *o, const zx_fit_buf *buf,
                    char slot[ZX_TS_BUFSZ])
{
    switch (o->st) {
    case ZX_FIT_S_INT: return sqlite3_bind_int64(st, p, o->i);
    case ZX_FIT_S_REAL: return sqlite3_bind_double(st, p, o->d);
    case ZX_FIT_S_TEXT:
        if (o->s != buf->p)
            return sqlite3_bind_text64(st, p, o->s, o->len, SQLITE_STATIC, SQLITE_UTF8);
        if (o->len < ZX_TS_BUFSZ) {
            memcpy(slot, o->s, o->len);
            return sqlite3_bind_text(st, p, slot, (int)o->len, SQLITE_STATIC);
        }
        return sqlite3_bind_text64(st, p, o->s, o->len, SQLITE_TRANSIENT, SQLITE_UTF8);
    default: return sqlite3_bind_null(st, p);
    }
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

int zx_ws_append_rows(zx_ws *w, const zx_ws_append *a, const zx_rowset *rs,
                      zx_ws_result *res, char *err, size_t errlen)
{
    int ret = -1, meta_idx[2] = { -1, -1 };
    uint32_t meta = a->metadata & 3u, ncols = rs->ncols;
    sqlite3_stmt *st = NULL;
    memset(res, 0, sizeof(*res));
    if (!w->in_txn) {
        seterr(err, errlen, "workspace: append outside a transaction");
        return -1;
    }
    if (!a->table || !*a->table) {
        seterr(err, errlen, "workspace: no table name");
        return -1;
    }
    if (rs->nrows == 0)
        return 0;
    ws_table *t = get_table(w, a->table);
    if (!t) {
        seterr(err, errlen, "workspace: table %s: %s", a->table, sqlite3_errmsg(w->db));
        return -1;
    }
    if (grow_scratch(w, ncols, t->ncols) < 0)
        goto nomem;
    memset(w->nomsg, 0, ncols * sizeof(*w->nomsg));
    memset(w->rejn, 0, ncols * sizeof(*w->rejn));
    zx_ts_format(a->ingested_at_us ? a->ingested_at_us : zx_now_us(), w->ts);

    /* classify: -1 skip, -3 needs a column, else the table column */
    for (uint32_t c = 0; c < ncols; c++) {
        const zx_column *col = &rs->cols[c];
        int shadow = 0;
        for (int m = 0; m < 2; m++)
            shadow |= (meta & (1u << m)) && sqlite3_stricmp(col->name, meta_name[m]) == 0;
        if (col->type == ZX_T_NULL || shadow || strlen(col->name) != col->name_len)
            w->map[c] = -1;
        else
            w->map[c] = -3;
    }
    if (t->ncols == 0) {
        int rc = create_table(w, t, rs, meta, res, err, errlen);
        if (rc < 0)
            goto out;
        if (rc == 1) { /* nothing to create: every value null */
            ret = 0;
            goto out;
        }
    }
    for (uint32_t c = 0; c < ncols; c++) {
        if (w->map[c] != -3)
            continue;
        int64_t i = find_col(t, rs->cols[c].name);
        if (i < 0) {
            const char *decl = zx_fit_decl_for_type(rs->cols[c].type);
            if (!decl) { /* a hostile frame's unknown type: no column for it */
                w->map[c] = -2;
                continue;
            }
            int rc = add_column(w, t, rs->cols[c].name, decl, &w->nomsg[c], err, errlen);
            if (rc < 0)
                goto out;
            if (rc == 0 && add_newcol(res, rs->cols[c].name, rs->cols[c].type) < 0)
                goto nomem;
            i = rc == 0 ? (int64_t)t->ncols - 1 : -2;
        }
        w->map[c] = (int32_t)i;
    }
    for (int m = 0; m < 2; m++) {
        if (!(meta & (1u << m)))
            continue;
        int64_t i = find_col(t, meta_name[m]);
        if (i < 0) {
            int rc = add_column(w, t, meta_name[m], meta_decl[m], NULL, err, errlen);
            if (rc < 0)
                goto out;
            i = rc == 0 ? (int64_t)t->ncols - 1 : -1;
        }
        meta_idx[m] = (int)i;
    }
    if (grow_scratch(w, ncols, t->ncols) < 0)
        goto nomem;

    /* the statement: used table columns in table order */
    memset(w->used, 0, t->ncols);
    for (uint32_t c = 0; c < ncols; c++)
        if (w->map[c] >= 0)
            w->used[w->map[c]] = 1;
    for (int m = 0; m < 2; m++)
        if (meta_idx[m] >= 0)
            w->used[meta_idx[m]] = 1;
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->ncols; i++) {
        w->param[i] = w->used[i] ? n + 1 : 0;
        if (w->used[i])
            w->list[n++] = i;
    }
    st = get_ins(w, t, w->list, n);
    if (!st) {
        seterr(err, errlen, "workspace: insert into %s: %s", t->name, sqlite3_errmsg(w->db));
        goto out;
    }
    if (meta_idx[0] >= 0)
        sqlite3_bind_text(st, (int)w->param[meta_idx[0]], w->ts, -1, SQLITE_STATIC);
    if (meta_idx[1] >= 0 && a->request_id)
        sqlite3_bind_text(st, (int)w->param[meta_idx[1]], a->request_id, -1, SQLITE_STATIC);
    else if (meta_idx[1] >= 0)
        sqlite3_bind_null(st, (int)w->param[meta_idx[1]]);

    for (uint32_t r = 0; r < rs->nrows; r++) {
        uint64_t b = rs->row_start[r], e = rs->row_start[r + 1];
        for (uint64_t i = b; i < e; i++) {
            const zx_cell *cell = &rs->cells[i];
            if (cell->col >= ncols)
                continue;
            int32_t m = w->map[cell->col];
            if (m == -1)
                continue;
            if (cell->v.type == ZX_T_NULL) {
                if (m >= 0)
                    sqlite3_bind_null(st, (int)w->param[m]);
                continue;
            }
            const char *cname = m >= 0 ? t->cols[m].name : rs->cols[cell->col].name;
            zx_fit_out o;
            int f = m >= 0 ? zx_fit_value(t->cols[m].kind, &cell->v, &w->buf, &o) : 0;
            if (f < 0)
                goto nomem;
            if (f > 0 && bind_out(st, (int)w->param[m], &o, &w->buf, w->slot[m]) == SQLITE_OK)
                continue;
            if (m >= 0)
                sqlite3_bind_null(st, (int)w->param[m]);
            char why[600];
            const char *reason = NULL;
            if (m < 0) {
                snprintf(why, sizeof(why), "column %.100s could not be added: %.300s", cname,
                         w->nomsg[cell->col] ? w->nomsg[cell->col] : "unknown value type");
                reason = why;
            }
            if (reject(w, t, a, cname, m >= 0 ? t->cols[m].kind : ZX_FIT__COUNT, &cell->v,
                       reason, err, errlen) < 0)
                goto out;
            w->rejn[cell->col]++;
            res->rejects++;
        }
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
            res->rows++;
        } else if (data_error(rc) && !sqlite3_get_autocommit(w->db)) {
            char why[600];
            snprintf(why, sizeof(why), "row not inserted: %.500s", sqlite3_errmsg(w->db));
            sqlite3_reset(st);
            if (reject(w, t, a, NULL, ZX_FIT_ANY, NULL, why, err, errlen) < 0)
                goto out;
            res->rejects++;
        } else {
            seterr(err, errlen, "workspace: insert into %s: %s", t->name, sqlite3_errmsg(w->db));
            sqlite3_reset(st);
            goto out;
        }
        sqlite3_reset(st);
        for (uint64_t i = b; i < e; i++)
            if (rs->cells[i].col < ncols && w->map[rs->cells[i].col] >= 0)
                sqlite3_bind_null(st, (int)w->param[w->map[rs->cells[i].col]]);
    }
    for (uint32_t c = 0; c < ncols; c++)
        if (w->rejn[c] && result_rejcols(res, w->map[c] >= 0 ? t->cols[w->map[c]].name
                                                             : rs->cols[c].name,
                                         w->rejn[c]) < 0)
            goto nomem;
    ret = 0;
    goto out;
nomem:
    seterr(err, errlen, "workspace: out of memory");
out:
    if (st) { /* drop every pointer into the caller's memory */
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
    for (uint32_t c = 0; c < ncols && w->nomsg; c++) {
        free(w->nomsg[c]);
        w->nomsg[c] = NULL;
    }
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

int zx_ws_table_columns(zx_ws *w, const char *table, char **json_out)
{
    *json_out = NULL;
    ws_table *t = get_table(w, table);
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
