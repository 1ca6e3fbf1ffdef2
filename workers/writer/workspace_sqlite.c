/*
 * workspace_sqlite.c — the SQLite workspace backend (see workspace.h).
 *
 * The writer's only write connection: WAL mode, one transaction per group
 * commit, tables and columns created from the data, misfits turned into
 * NULL plus a row in <table>__rejects.  Speed comes from one cached INSERT
 * per (table, column set), reused with reset + re-binding of just the
 * parameters a row set.  This file opens the database, runs transactions
 * and checkpoints, and appends rows (with their rejects); the table cache
 * and the DDL are in workspace_sqlite_schema.c.
 *
 * It must never: turn bad data into an error return, build SQL with an
 * unquoted identifier or an inlined value, or keep schema knowledge across
 * a rollback.
 */
#include "common/util.h"
#include "workers/writer/workspace_sqlite_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>


const char *zx_ws_errmsg(zx_ws *w)
{
    return w && w->db ? sqlite3_errmsg(w->db) : "no workspace";
}

/* Errors that come from the data or the table's shape rather than from the
 * database itself: the statement failed, the transaction goes on. */
int zx_wsq_data_error(int rc)
{
    rc &= 0xff;
    return rc == SQLITE_ERROR || rc == SQLITE_CONSTRAINT || rc == SQLITE_MISMATCH ||
           rc == SQLITE_TOOBIG || rc == SQLITE_RANGE;
}

sqlite3_stmt *zx_wsq_prep(zx_ws *w, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

/* Run a cached statement to completion; returns the SQLite code. */
int zx_wsq_run(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

/* ---- open / close / transactions ----------------------------------------- */

#define FILE_MODE 0640   /* the LMDB store's mode too (store.c) */

/* Take the workspace lock (<path>-zxlock) and record the holder in it.
 * Returns the locked fd, or -1 with err set (*locked = 1 when another
 * process holds it). */
static int lock_workspace(const char *path, const char *owner, int *locked, char *err,
                          size_t errlen)
{
    char lpath[4200], who[512] = "";
    if ((size_t)snprintf(lpath, sizeof(lpath), "%s-zxlock", path) >= sizeof(lpath)) {
        zx_seterr(err, errlen, "workspace %s: path too long", path);
        return -1;
    }
    int fd = open(lpath, O_RDWR | O_CREAT | O_CLOEXEC, FILE_MODE);
    if (fd < 0) {
        zx_seterr(err, errlen, "workspace %s: cannot open its lock file %s: %s", path, lpath,
                      strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        if (e == EWOULDBLOCK) {
            ssize_t n = pread(fd, who, sizeof(who) - 1, 0);
            who[n > 0 ? n : 0] = '\0';
            who[strcspn(who, "\n")] = '\0';
            if (locked)
                *locked = 1;
            zx_seterr(err, errlen,
                          "workspace %s is in use by another zxd (%s; lock file %s): a workspace "
                          "has one writer; stop that zxd or set another workspace.sqlite.path",
                          path, who[0] ? who : "holder unknown", lpath);
        } else {
            zx_seterr(err, errlen, "workspace %s: cannot lock %s: %s", path, lpath,
                          strerror(e));
        }
        close(fd);
        return -1;
    }
    char host[256] = "?";
    if (gethostname(host, sizeof(host) - 1) < 0)
        snprintf(host, sizeof(host), "?");
    host[sizeof(host) - 1] = '\0';
    int n = snprintf(who, sizeof(who), "pid %ld on host %s%s%s\n", (long)getpid(), host,
                     owner ? ", " : "", owner ? owner : "");
    if (n < 0 || (size_t)n >= sizeof(who))
        n = (int)strlen(who);
    /* the text is only for the message of a second zxd: a failure to write
     * it leaves the lock as good */
    if (ftruncate(fd, 0) < 0 || pwrite(fd, who, (size_t)n, 0) < 0)
        who[0] = '\0';
    return fd;
}

/* Create the database file with FILE_MODE if it does not exist yet (SQLite
 * would make it 0644); SQLite then gives -wal and -shm the same mode.
 * 0, or -1 with err set. */
static int create_db_file(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, FILE_MODE);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    if (errno == EEXIST)
        return 0;
    zx_seterr(err, errlen, "workspace %s: cannot create: %s", path, strerror(errno));
    return -1;
}

zx_ws *zx_ws_open_sqlite(const char *path, const char *synchronous, const char *owner,
                         int *locked, char *err, size_t errlen)
{
    zx_ws *w = calloc(1, sizeof(*w));
    char *jm = NULL;
    const char *sync = "FULL";
    if (locked)
        *locked = 0;
    if (!w) {
        zx_seterr(err, errlen, "workspace: out of memory");
        return NULL;
    }
    w->lock_fd = -1;
    if (synchronous && sqlite3_stricmp(synchronous, "normal") == 0)
        sync = "NORMAL";
    else if (synchronous && sqlite3_stricmp(synchronous, "full") != 0) {
        zx_seterr(err, errlen,
                      "workspace: synchronous must be \"normal\" or \"full\", not \"%s\"",
                      synchronous);
        goto fail;
    }
    /* Memory statistics cost a global mutex per allocation (about 40% of
     * insert speed).  Process-wide and only possible before SQLite is first
     * used; harmlessly refused (SQLITE_MISUSE) after that. */
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    if ((w->lock_fd = lock_workspace(path, owner, locked, err, errlen)) < 0 ||
        create_db_file(path, err, errlen) < 0)
        goto fail;
    if (sqlite3_open_v2(path, &w->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        zx_seterr(err, errlen, "workspace %s: %s", path,
                      w->db ? sqlite3_errmsg(w->db) : "cannot open");
        goto fail;
    }
    sqlite3_busy_timeout(w->db, 5000);
    /* 64 KiB pages for a new file (ignored for an existing one): a sixteenth
     * of the page writes of the 4 KiB default on append-heavy tables
     * (measured: 246k -> 289k rows/s in tests/bench/push_bench.sh). */
    sqlite3_exec(w->db, "PRAGMA page_size=65536", NULL, NULL, NULL);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(w->db, "PRAGMA journal_mode=WAL", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) &&
        !(jm = strdup((const char *)sqlite3_column_text(st, 0)))) {
        sqlite3_finalize(st);
        zx_seterr(err, errlen, "workspace %s: out of memory", path);
        goto fail;
    }
    sqlite3_finalize(st);
    if (!jm || sqlite3_stricmp(jm, "wal") != 0) {
        zx_seterr(err, errlen, "workspace %s: cannot switch to WAL mode: %s", path,
                      jm ? jm : sqlite3_errmsg(w->db));
        goto fail;
    }
    char pragmas[384];
    /* wal_autocheckpoint: checkpoint every ~64 MiB of WAL instead of 4 MiB
     * (fewer, larger checkpoints and fsyncs under a steady stream). */
    snprintf(pragmas, sizeof(pragmas),
             "PRAGMA synchronous=%s; PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY;"
             "PRAGMA wal_autocheckpoint=1024; PRAGMA mmap_size=268435456;"
             "CREATE TABLE IF NOT EXISTS _zx_checkpoints(pipeline TEXT PRIMARY KEY,"
             " seq INTEGER, committed_at TEXT);"
             "CREATE TABLE IF NOT EXISTS _zx_positions(pipeline TEXT, part TEXT,"
             " value BLOB, committed_at TEXT, PRIMARY KEY(pipeline, part));", sync);
    if (sqlite3_exec(w->db, pragmas, NULL, NULL, NULL) != SQLITE_OK)
        goto dberr;
    if (!(w->st_begin = zx_wsq_prep(w, "BEGIN IMMEDIATE")) ||
        !(w->st_commit = zx_wsq_prep(w, "COMMIT")) ||
        !(w->st_rollback = zx_wsq_prep(w, "ROLLBACK")) ||
        !(w->st_ckpt_get = zx_wsq_prep(w, "SELECT seq FROM _zx_checkpoints WHERE pipeline=?")) ||
        !(w->st_ckpt_set = zx_wsq_prep(w, "INSERT INTO _zx_checkpoints(pipeline,seq,committed_at)"
                                   " VALUES(?,?,?) ON CONFLICT(pipeline) DO UPDATE SET"
                                   " seq=excluded.seq, committed_at=excluded.committed_at")) ||
        !(w->st_pos_set = zx_wsq_prep(w, "INSERT INTO _zx_positions(pipeline,part,value,"
                                   "committed_at) VALUES(?,?,?,?) ON CONFLICT(pipeline,part)"
                                   " DO UPDATE SET value=excluded.value,"
                                   " committed_at=excluded.committed_at")) ||
        !(w->st_info = zx_wsq_prep(w, "SELECT name, type FROM pragma_table_info(?)")))
        goto dberr;
    free(jm);
    return w;
dberr:
    zx_seterr(err, errlen, "workspace %s: %s", path, sqlite3_errmsg(w->db));
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
    sqlite3_finalize(w->st_pos_set);
    sqlite3_close(w->db);
    if (w->lock_fd >= 0)
        close(w->lock_fd); /* releases the workspace lock */
    free(w->map);
    free(w->rejn);
    free(w->nomsg);
    free(w->xlast);
    free(w->param);
    free(w->used);
    free(w->list);
    free(w->slot);
    zx_fit_buf_free(&w->buf);
    zx_fit_buf_free(&w->raw);
    zx_fit_buf_free(&w->sql);
    zx_fit_buf_free(&w->xbuf);
    free(w);
}

int zx_ws_begin(zx_ws *w, char *err, size_t errlen)
{
    if (w->in_txn) {
        zx_seterr(err, errlen, "workspace: a transaction is already open");
        return -1;
    }
    if (zx_wsq_run(w->st_begin) != SQLITE_OK) {
        zx_seterr(err, errlen, "workspace: begin: %s", sqlite3_errmsg(w->db));
        return -1;
    }
    w->in_txn = 1;
    return 0;
}

int zx_ws_commit(zx_ws *w, char *err, size_t errlen)
{
    if (!w->in_txn) {
        zx_seterr(err, errlen, "workspace: no open transaction");
        return -1;
    }
    if (zx_wsq_run(w->st_commit) != SQLITE_OK) {
        zx_seterr(err, errlen, "workspace: commit: %s", sqlite3_errmsg(w->db));
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
    zx_wsq_cache_drop(w);
    if (w->db && !sqlite3_get_autocommit(w->db))
        zx_wsq_run(w->st_rollback);
    w->in_txn = 0;
}

int zx_ws_savepoint(zx_ws *w)
{
    return w->in_txn && sqlite3_exec(w->db, "SAVEPOINT zx_frame", NULL, NULL, NULL) == SQLITE_OK
               ? 0 : -1;
}

int zx_ws_savepoint_release(zx_ws *w)
{
    return sqlite3_exec(w->db, "RELEASE zx_frame", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

int zx_ws_savepoint_rollback(zx_ws *w)
{
    zx_wsq_cache_drop(w);
    if (sqlite3_exec(w->db, "ROLLBACK TO zx_frame", NULL, NULL, NULL) != SQLITE_OK)
        return -1;
    return sqlite3_exec(w->db, "RELEASE zx_frame", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

int zx_ws_failure_is_permanent(zx_ws *w)
{
    return zx_wsq_data_error(sqlite3_extended_errcode(w->db)) && !sqlite3_get_autocommit(w->db);
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
    int rc = zx_wsq_run(w->st_ckpt_set);
    sqlite3_clear_bindings(w->st_ckpt_set);
    return rc == SQLITE_OK ? 0 : -1;
}

int zx_ws_checkpoint_prune(zx_ws *w, const char *prefix, const char *keep1, const char *keep2)
{
    sqlite3_stmt *st = NULL;
    if (w->in_txn ||
        sqlite3_prepare_v2(w->db, "DELETE FROM _zx_checkpoints WHERE substr(pipeline, 1, length(?1)) = ?1"
                                  " AND pipeline NOT IN (?2, ?3)", -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_bind_text(st, 1, prefix, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, keep1, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, keep2, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
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
        uint64_t *x = realloc(w->xlast, cap * sizeof(*x));
        if (x)
            w->xlast = x;
        if (!m || !r || !n || !x)
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
        int bad = zx_wsq_sql_str(b, "CREATE TABLE IF NOT EXISTS ") < 0 ||
                  zx_wsq_sql_ident(b, rname) < 0 ||
                  zx_wsq_sql_str(b, " " ZX_WSQ_REJECTS_COLUMNS) < 0;
        if (bad) {
            free(rname);
            goto nomem;
        }
        int rc = sqlite3_exec(w->db, b->p, NULL, NULL, NULL);
        b->len = 0;
        bad = zx_wsq_sql_str(b, "INSERT INTO ") < 0 || zx_wsq_sql_ident(b, rname) < 0 ||
              zx_wsq_sql_str(b, " (rejected_at, pipeline, request_id, column_name, column_type,"
                         " value_type, raw_value, reason) VALUES (?,?,?,?,?,?,?,?)") < 0;
        free(rname);
        if (bad)
            goto nomem;
        if (rc == SQLITE_OK)
            t->rej_ins = zx_wsq_prep(w, b->p);
        if (!t->rej_ins) {
            rc = sqlite3_errcode(w->db);
            if (zx_wsq_data_error(rc) && !sqlite3_get_autocommit(w->db))
                return 0; /* e.g. a user-made table of that name: skip */
            zx_seterr(err, errlen, "workspace: rejects table of %s: %s", t->name,
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
        sqlite3_bind_text(st, 6, zx_value_type_name(v), -1, SQLITE_STATIC);
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
    int rc = zx_wsq_run(st);
    sqlite3_clear_bindings(st);
    if (rc == SQLITE_OK || (zx_wsq_data_error(rc) && !sqlite3_get_autocommit(w->db)))
        return 0;
    zx_seterr(err, errlen, "workspace: cannot record a reject for %s: %s", t->name,
                  sqlite3_errmsg(w->db));
    return -1;
nomem:
    zx_seterr(err, errlen, "workspace: out of memory");
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

/* Bind the row's _extra object (w->xbuf) to the statement, or record it
 * as a reject when a user-made _extra column does not take it.  0, or -1
 * (err set). */
static int bind_extra(zx_ws *w, ws_table *t, const zx_ws_append *a, sqlite3_stmt *st,
                      int64_t idx, zx_ws_result *res, char *err, size_t errlen)
{
    zx_value v = { .type = ZX_T_JSON };
    zx_fit_out o;
    int f = 0;
    if (w->xbuf.len <= UINT32_MAX) {
        v.len = (uint32_t)w->xbuf.len;
        v.s = w->xbuf.p;
        f = zx_fit_value(t->cols[idx].kind, &v, &w->buf, &o);
        if (f < 0) {
            zx_seterr(err, errlen, "workspace: out of memory");
            return -1;
        }
    }
    if (f > 0 && bind_out(st, (int)w->param[idx], &o, &w->buf, w->slot[idx]) == SQLITE_OK)
        return 0;
    sqlite3_bind_null(st, (int)w->param[idx]);
    if (reject(w, t, a, ZX_WS_EXTRA_COLUMN, t->cols[idx].kind, v.s ? &v : NULL,
               v.s ? NULL : "the fields over the column cap do not fit in one value",
               err, errlen) < 0)
        return -1;
    res->rejects++;
    if (result_rejcols(res, ZX_WS_EXTRA_COLUMN, 1) < 0) {
        zx_seterr(err, errlen, "workspace: out of memory");
        return -1;
    }
    return 0;
}

/* Columns of t that count against the column cap: all but the metadata
 * columns and _extra. */
static uint32_t data_columns(const ws_table *t)
{
    uint32_t n = t->ncols;
    for (int m = 0; m < 2; m++)
        n -= zx_wsq_find_col(t, zx_wsq_meta_name[m]) >= 0;
    n -= zx_wsq_find_col(t, ZX_WS_EXTRA_COLUMN) >= 0;
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
 * SQLite refuses to add it, the fields meant for it become rejects that
 * say why (w->map -2 with a message).  0, or -1 (err set). */
static int ensure_extra(zx_ws *w, ws_table *t, const zx_rowset *rs, uint32_t cap,
                        zx_ws_result *res, int64_t *idx, char *err, size_t errlen)
{
    *idx = zx_wsq_find_col(t, ZX_WS_EXTRA_COLUMN);
    if (*idx >= 0)
        return 0;
    char *why = NULL;
    int rc = zx_wsq_add_column(w, t, ZX_WS_EXTRA_COLUMN, "JSON", &why, err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 0) {
        *idx = (int64_t)t->ncols - 1;
        if (zx_wsq_add_newcol(res, ZX_WS_EXTRA_COLUMN, ZX_T_JSON) == 0)
            return 0;
        zx_seterr(err, errlen, "workspace: out of memory");
        return -1;
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
            zx_seterr(err, errlen, "workspace: out of memory");
            return -1;
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
    zx_fit_buf *x = &w->xbuf;
    x->len = 0;
    for (uint64_t i = b; i < e; i++) {
        const zx_cell *cell = &rs->cells[i];
        if (cell->col >= rs->ncols || w->map[cell->col] != -4 || w->xlast[cell->col] != i ||
            cell->v.type == ZX_T_NULL)
            continue;
        const zx_column *col = &rs->cols[cell->col];
        if (zx_fit_buf_put(x, x->len ? "," : "{", 1) < 0 ||
            zx_fit_json_quote(x, col->name, col->name_len) < 0 || zx_fit_buf_put(x, ":", 1) < 0 ||
            zx_fit_json_text(&cell->v, x) < 0)
            return -1;
        res->extra_values++;
    }
    if (x->len && zx_fit_buf_put(x, "}", 1) < 0)
        return -1;
    return 0;
}

int zx_ws_append_rows(zx_ws *w, const zx_ws_append *a, const zx_rowset *rs,
                      zx_ws_result *res, char *err, size_t errlen)
{
    int ret = -1, meta_idx[2] = { -1, -1 };
    int64_t extra_idx = -1;
    uint32_t meta = a->metadata & 3u, ncols = rs->ncols;
    uint32_t cap = a->max_columns ? a->max_columns : ZX_WS_DEFAULT_MAX_COLUMNS;
    if (cap > ZX_WS_MAX_COLUMNS)
        cap = ZX_WS_MAX_COLUMNS;
    sqlite3_stmt *st = NULL;
    memset(res, 0, sizeof(*res));
    if (!w->in_txn) {
        zx_seterr(err, errlen, "workspace: append outside a transaction");
        return -1;
    }
    if (!a->table || !*a->table) {
        zx_seterr(err, errlen, "workspace: no table name");
        return -1;
    }
    if (rs->nrows == 0)
        return 0;
    ws_table *t = zx_wsq_get_table(w, a->table);
    if (!t) {
        zx_seterr(err, errlen, "workspace: table %s: %s", a->table, sqlite3_errmsg(w->db));
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
        int shadow = sqlite3_stricmp(col->name, ZX_WS_EXTRA_COLUMN) == 0;
        for (int m = 0; m < 2; m++)
            shadow |= (meta & (1u << m)) && sqlite3_stricmp(col->name, zx_wsq_meta_name[m]) == 0;
        if (col->type == ZX_T_NULL || shadow || strlen(col->name) != col->name_len)
            w->map[c] = -1;
        else
            w->map[c] = -3;
    }
    if (t->ncols == 0) {
        /* a new table gets the first `cap` fields as columns */
        uint32_t budget = cap;
        for (uint32_t c = 0; c < ncols; c++) {
            if (w->map[c] != -3 || !zx_fit_decl_for_type(rs->cols[c].type))
                continue;
            if (budget)
                budget--;
            else
                to_extra(w, rs, c, cap, res);
        }
        int rc = zx_wsq_create_table(w, t, rs, meta, res, err, errlen);
        if (rc < 0)
            goto out;
        if (rc == 1) { /* nothing to create: every value null */
            ret = 0;
            goto out;
        }
    }
    uint32_t have = data_columns(t);
    uint32_t budget = have < cap ? cap - have : 0;
    for (uint32_t c = 0; c < ncols; c++) {
        if (w->map[c] != -3)
            continue;
        int64_t i = zx_wsq_find_col(t, rs->cols[c].name);
        if (i < 0) {
            const char *decl = zx_fit_decl_for_type(rs->cols[c].type);
            if (!decl) { /* a hostile frame's unknown type: no column for it */
                w->map[c] = -2;
                continue;
            }
            if (budget == 0) {
                to_extra(w, rs, c, cap, res);
                continue;
            }
            int rc = zx_wsq_add_column(w, t, rs->cols[c].name, decl, &w->nomsg[c], err, errlen);
            if (rc < 0)
                goto out;
            if (rc == 0 && zx_wsq_add_newcol(res, rs->cols[c].name, rs->cols[c].type) < 0)
                goto nomem;
            budget -= rc == 0;
            i = rc == 0 ? (int64_t)t->ncols - 1 : -2;
        }
        w->map[c] = (int32_t)i;
    }
    if (res->extra_fields && ensure_extra(w, t, rs, cap, res, &extra_idx, err, errlen) < 0)
        goto out;
    for (int m = 0; m < 2; m++) {
        if (!(meta & (1u << m)))
            continue;
        int64_t i = zx_wsq_find_col(t, zx_wsq_meta_name[m]);
        if (i < 0) {
            int rc = zx_wsq_add_column(w, t, zx_wsq_meta_name[m], zx_wsq_meta_decl[m], NULL,
                                       err, errlen);
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
    if (extra_idx >= 0)
        w->used[extra_idx] = 1;
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->ncols; i++) {
        w->param[i] = w->used[i] ? n + 1 : 0;
        if (w->used[i])
            w->list[n++] = i;
    }
    st = zx_wsq_get_ins(w, t, w->list, n);
    if (!st) {
        zx_seterr(err, errlen, "workspace: insert into %s: %s", t->name, sqlite3_errmsg(w->db));
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
        int has_extra = 0;
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
                         w->nomsg[cell->col] ? w->nomsg[cell->col]
                         : !zx_fit_decl_for_type(rs->cols[cell->col].type)
                             ? "unknown value type"
                             : "the reason was lost (out of memory)");
                reason = why;
            }
            if (reject(w, t, a, cname, m >= 0 ? t->cols[m].kind : ZX_FIT__COUNT, &cell->v,
                       reason, err, errlen) < 0)
                goto out;
            w->rejn[cell->col]++;
            res->rejects++;
        }
        if (has_extra && extra_idx >= 0) {
            if (build_extra(w, rs, b, e, res) < 0)
                goto nomem;
            if (w->xbuf.len && bind_extra(w, t, a, st, extra_idx, res, err, errlen) < 0)
                goto out;
        }
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
            res->rows++;
        } else if (zx_wsq_data_error(rc) && !sqlite3_get_autocommit(w->db)) {
            char why[600];
            snprintf(why, sizeof(why), "row not inserted: %.500s", sqlite3_errmsg(w->db));
            sqlite3_reset(st);
            if (reject(w, t, a, NULL, ZX_FIT_ANY, NULL, why, err, errlen) < 0)
                goto out;
            res->rejects++;
        } else {
            zx_seterr(err, errlen, "workspace: insert into %s: %s", t->name,
                          sqlite3_errmsg(w->db));
            sqlite3_reset(st);
            goto out;
        }
        sqlite3_reset(st);
        for (uint64_t i = b; i < e; i++)
            if (rs->cells[i].col < ncols && w->map[rs->cells[i].col] >= 0)
                sqlite3_bind_null(st, (int)w->param[w->map[rs->cells[i].col]]);
        if (extra_idx >= 0)
            sqlite3_bind_null(st, (int)w->param[extra_idx]);
    }
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
