/*
 * workspace_sqlite.c — the SQLite workspace backend (see workspace.h).
 *
 * The writer's only write connection: WAL mode, one transaction per group
 * commit, tables and columns created from the data, misfits turned into
 * NULL plus a row in <table>__rejects (decided in workspace.c).  Speed
 * comes from one cached INSERT per (table, column set), reused with reset
 * + re-binding of just the parameters a row set.  This file opens the
 * database, runs transactions, checkpoints and positions, and stores the
 * rows it is handed; the DDL and the rejects table are in
 * workspace_sqlite_schema.c.
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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>


static const ws_ops sqlite_ops;

static const char *q_errmsg(zx_ws *ws)
{
    wsq *w = WSQ(ws);
    return w->db ? sqlite3_errmsg(w->db) : "no workspace";
}

/* Errors that come from the data or the table's shape rather than from the
 * database itself: the statement failed, the transaction goes on. */
int zx_wsq_data_error(int rc)
{
    rc &= 0xff;
    return rc == SQLITE_ERROR || rc == SQLITE_CONSTRAINT || rc == SQLITE_MISMATCH ||
           rc == SQLITE_TOOBIG || rc == SQLITE_RANGE;
}

int zx_wsq_refusal(wsq *w, int rc)
{
    return zx_wsq_data_error(rc) && !sqlite3_get_autocommit(w->db);
}

sqlite3_stmt *zx_wsq_prep(wsq *w, const char *sql)
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

zx_ws *zx_ws_open_sqlite(const char *path, const char *synchronous, int page_size,
                         const char *owner, int *locked, char *err, size_t errlen)
{
    wsq *w = calloc(1, sizeof(*w));
    char *jm = NULL;
    const char *sync = "FULL";
    if (locked)
        *locked = 0;
    if (!w) {
        zx_seterr(err, errlen, "workspace: out of memory");
        return NULL;
    }
    ws_init(&w->base, &sqlite_ops);
    w->lock_fd = -1;
    if (synchronous && sqlite3_stricmp(synchronous, "normal") == 0)
        sync = "NORMAL";
    else if (synchronous && sqlite3_stricmp(synchronous, "full") != 0) {
        zx_seterr(err, errlen,
                      "workspace: synchronous must be \"normal\" or \"full\", not \"%s\"",
                      synchronous);
        goto fail;
    }
    if (page_size && (page_size < 4096 || page_size > 65536 || (page_size & (page_size - 1)))) {
        zx_seterr(err, errlen, "workspace: page_size must be 4KiB, 8KiB, 16KiB, 32KiB or "
                  "64KiB, not %d bytes", page_size);
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
    /* the page size of a new file (ignored for an existing one) */
    if (page_size) {
        char ps[40];
        snprintf(ps, sizeof(ps), "PRAGMA page_size=%d", page_size);
        sqlite3_exec(w->db, ps, NULL, NULL, NULL);
    }
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
    char pragmas[1024];
    /* wal_autocheckpoint: SQLite's own checkpoint, every 1,024 pages, only
     * if the checkpoint thread cannot be set up (workspace_sqlite_ckpt.h,
     * below, replaces it).
     * cache_size: 32 MiB of pages.  The cache fills up with the clean
     * pages of committed transactions, which an append never reads again
     * (reads go through mmap_size): 64 MiB made the writer 143 MiB RSS
     * while streaming Kafka (with a 64 MiB ring mapped), 32 MiB makes it
     * ~111 MiB; a cycle (commit_interval, 20 ms) dirties far less. */
    snprintf(pragmas, sizeof(pragmas),
             "PRAGMA synchronous=%s; PRAGMA cache_size=-32768; PRAGMA temp_store=MEMORY;"
             "PRAGMA wal_autocheckpoint=1024; PRAGMA mmap_size=268435456;"
             "CREATE TABLE IF NOT EXISTS _zx_checkpoints(pipeline TEXT PRIMARY KEY,"
             " seq INTEGER, committed_at TEXT);"
             "CREATE TABLE IF NOT EXISTS _zx_positions(pipeline TEXT, part TEXT,"
             " value BLOB, committed_at TEXT, PRIMARY KEY(pipeline, part));"
             "CREATE TABLE IF NOT EXISTS _zx_parked(pipeline TEXT, tbl TEXT, n INTEGER,"
             " nrows INTEGER, frame BLOB, reason TEXT, parked_at TEXT, PRIMARY KEY(pipeline, tbl, n));"
             "CREATE TABLE IF NOT EXISTS _zx_forward(pipeline TEXT, n INTEGER, nrows INTEGER,"
             " frame BLOB, at TEXT, PRIMARY KEY(pipeline, n));", sync);
    if (sqlite3_exec(w->db, pragmas, NULL, NULL, NULL) != SQLITE_OK)
        goto dberr;
    /* after the pragmas: it replaces wal_autocheckpoint's hook (which stays
     * if this is out of memory) */
    w->ckpt = zx_wsq_ckpt_start(w->db, path, sync);
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
        !(w->st_info = zx_wsq_prep(w, "SELECT name, type FROM pragma_table_info(?)")) ||
        !(w->st_sp = zx_wsq_prep(w, "SAVEPOINT zx_frame")) ||
        !(w->st_sp_release = zx_wsq_prep(w, "RELEASE zx_frame")) ||
        !(w->st_sp_rollback = zx_wsq_prep(w, "ROLLBACK TO zx_frame")))
        goto dberr;
    free(jm);
    return &w->base;
dberr:
    zx_seterr(err, errlen, "workspace %s: %s", path, sqlite3_errmsg(w->db));
fail:
    free(jm);
    zx_ws_close(&w->base);
    return NULL;
}

static void q_rollback(zx_ws *ws)
{
    wsq *w = WSQ(ws);
    if (w->db && !sqlite3_get_autocommit(w->db))
        zx_wsq_run(w->st_rollback);
}

static void q_close(zx_ws *ws)
{
    wsq *w = WSQ(ws);
    if (w->base.in_txn)
        zx_ws_rollback(ws);
    ws_fini(ws); /* the cache's statements first */
    for (int i = 0; i < WSQ_EXEC_CACHE; i++) {
        sqlite3_finalize(w->exec[i].st);
        free(w->exec[i].sql);
    }
    sqlite3_finalize(w->st_begin);
    sqlite3_finalize(w->st_commit);
    sqlite3_finalize(w->st_rollback);
    sqlite3_finalize(w->st_ckpt_get);
    sqlite3_finalize(w->st_ckpt_set);
    sqlite3_finalize(w->st_info);
    sqlite3_finalize(w->st_pos_set);
    sqlite3_finalize(w->st_sp);
    sqlite3_finalize(w->st_sp_release);
    sqlite3_finalize(w->st_sp_rollback);
    zx_wsq_ckpt_stop(w->ckpt, w->db);
    sqlite3_close(w->db);
    if (w->lock_fd >= 0)
        close(w->lock_fd); /* releases the workspace lock */
    free(w->text);
    free(w->set);
    zx_buf_free(&w->sql);
    free(w);
}

static int q_begin(zx_ws *ws, char *err, size_t errlen)
{
    wsq *w = WSQ(ws);
    if (zx_wsq_run(w->st_begin) != SQLITE_OK)
        return zx_seterr(err, errlen, "workspace: begin: %s", sqlite3_errmsg(w->db));
    return 0;
}

static int q_commit(zx_ws *ws, char *err, size_t errlen)
{
    wsq *w = WSQ(ws);
    if (zx_wsq_run(w->st_commit) != SQLITE_OK)
        return zx_seterr(err, errlen, "workspace: commit: %s", sqlite3_errmsg(w->db));
    return 0;
}

/* One savepoint per frame: prepared once (parsing them cost ~5% of a
 * cycle of small frames). */
static int q_savepoint(zx_ws *ws)
{
    return zx_wsq_run(WSQ(ws)->st_sp) == SQLITE_OK ? 0 : -1;
}

static int q_savepoint_release(zx_ws *ws)
{
    return zx_wsq_run(WSQ(ws)->st_sp_release) == SQLITE_OK ? 0 : -1;
}

static int q_savepoint_rollback(zx_ws *ws)
{
    wsq *w = WSQ(ws);
    if (zx_wsq_run(w->st_sp_rollback) != SQLITE_OK)
        return -1;
    return zx_wsq_run(w->st_sp_release) == SQLITE_OK ? 0 : -1;
}

static int q_failure_is_permanent(zx_ws *ws)
{
    wsq *w = WSQ(ws);
    return zx_wsq_refusal(w, sqlite3_extended_errcode(w->db));
}

/* ---- checkpoints --------------------------------------------------------- */

static int q_checkpoint_get(zx_ws *ws, const char *pipeline, uint64_t *seq)
{
    wsq *w = WSQ(ws);
    sqlite3_bind_text(w->st_ckpt_get, 1, pipeline, -1, SQLITE_STATIC);
    int rc = sqlite3_step(w->st_ckpt_get);
    if (rc == SQLITE_ROW)
        *seq = (uint64_t)sqlite3_column_int64(w->st_ckpt_get, 0);
    sqlite3_reset(w->st_ckpt_get);
    sqlite3_clear_bindings(w->st_ckpt_get);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

static int q_checkpoint_set(zx_ws *ws, const char *pipeline, uint64_t seq, int64_t now_us)
{
    wsq *w = WSQ(ws);
    char ts[ZX_TS_BUFSZ];
    zx_ts_format(now_us, ts);
    sqlite3_bind_text(w->st_ckpt_set, 1, pipeline, -1, SQLITE_STATIC);
    sqlite3_bind_int64(w->st_ckpt_set, 2, (sqlite3_int64)seq);
    sqlite3_bind_text(w->st_ckpt_set, 3, ts, -1, SQLITE_STATIC);
    int rc = zx_wsq_run(w->st_ckpt_set);
    sqlite3_clear_bindings(w->st_ckpt_set);
    return rc == SQLITE_OK ? 0 : -1;
}

static int q_checkpoint_prune(zx_ws *ws, const char *prefix, const char *keep1,
                              const char *keep2)
{
    wsq *w = WSQ(ws);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(w->db, "DELETE FROM _zx_checkpoints WHERE substr(pipeline, 1, length(?1)) = ?1"
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

/* ---- positions ----------------------------------------------------------- */

static int q_position_set(zx_ws *ws, const char *pipeline, const char *part, const void *val,
                          size_t len, int64_t now_us)
{
    wsq *w = WSQ(ws);
    char ts[ZX_TS_BUFSZ];
    zx_ts_format(now_us, ts);
    sqlite3_stmt *st = w->st_pos_set;
    sqlite3_bind_text(st, 1, pipeline, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, part, -1, SQLITE_STATIC);
    sqlite3_bind_blob64(st, 3, len ? val : "", len, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, ts, -1, SQLITE_STATIC);
    int rc = zx_wsq_run(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_OK ? 0 : -1;
}

static int q_positions_each(zx_ws *ws, zx_ws_position_cb cb, void *ctx)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(WSQ(ws)->db, "SELECT pipeline, part, value FROM _zx_positions"
                           " ORDER BY pipeline, part", -1, &st, NULL) != SQLITE_OK)
        return -1;
    int rc = SQLITE_DONE, stop = 0;
    while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *p = (const char *)sqlite3_column_text(st, 0);
        const char *part = (const char *)sqlite3_column_text(st, 1);
        const void *v = sqlite3_column_blob(st, 2);
        size_t n = (size_t)sqlite3_column_bytes(st, 2);
        if (p && part && *p && *part)
            stop = cb(p, part, v, n, ctx);
    }
    sqlite3_finalize(st);
    if (stop)
        return stop;
    return rc == SQLITE_DONE ? 0 : -1;
}

/* ---- parked frames (writer_park.c) --------------------------------------- */

/* Prepare sql, bind pipeline and table as ?1 and ?2: the statement, or
 * NULL. */
static sqlite3_stmt *park_stmt(wsq *w, const char *sql, const char *pipeline, const char *table)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return NULL;
    }
    sqlite3_bind_text(st, 1, pipeline, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, table, -1, SQLITE_STATIC);
    return st;
}

static int q_park_put(zx_ws *ws, const char *pipeline, const char *table, uint64_t n,
                      uint64_t rows, const void *frame, size_t len, const char *reason, int64_t now_us)
{
    wsq *w = WSQ(ws);
    char ts[ZX_TS_BUFSZ];
    zx_ts_format(now_us, ts);
    sqlite3_stmt *st = park_stmt(w, "INSERT INTO _zx_parked(pipeline,tbl,n,frame,reason,"
                                 "parked_at,nrows) VALUES(?1,?2,?3,?4,?5,?6,?7)", pipeline, table);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 3, (sqlite3_int64)n);
    sqlite3_bind_blob64(st, 4, len ? frame : "", len, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, reason ? reason : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, ts, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)rows);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int q_park_first(zx_ws *ws, const char *pipeline, const char *table, uint64_t *n,
                        void **frame, size_t *len)
{
    sqlite3_stmt *st = park_stmt(WSQ(ws), "SELECT n, frame FROM _zx_parked WHERE pipeline=?1"
                                 " AND tbl=?2 ORDER BY n LIMIT 1", pipeline, table);
    if (!st)
        return -1;
    int rc = sqlite3_step(st), ret = rc == SQLITE_DONE ? 0 : -1;
    if (rc == SQLITE_ROW) {
        *n = (uint64_t)sqlite3_column_int64(st, 0);
        const void *b = sqlite3_column_blob(st, 1);
        *len = (size_t)sqlite3_column_bytes(st, 1);
        *frame = malloc(*len ? *len : 1);
        if (*frame) {
            if (*len)
                memcpy(*frame, b, *len);
            ret = 1;
        }
    }
    sqlite3_finalize(st);
    return ret;
}

static int q_park_del(zx_ws *ws, const char *pipeline, const char *table, uint64_t n)
{
    sqlite3_stmt *st = park_stmt(WSQ(ws), "DELETE FROM _zx_parked WHERE pipeline=?1 AND tbl=?2"
                                 " AND n=?3", pipeline, table);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 3, (sqlite3_int64)n);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int q_parked_each(zx_ws *ws, zx_ws_parked_cb cb, void *ctx)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(WSQ(ws)->db, "SELECT pipeline, tbl, count(*), sum(nrows),"
                           " sum(length(frame)), max(n) FROM _zx_parked GROUP BY pipeline, tbl", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    int rc = SQLITE_DONE, stop = 0;
    while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *p = (const char *)sqlite3_column_text(st, 0);
        const char *t = (const char *)sqlite3_column_text(st, 1);
        if (p && t)
            stop = cb(p, t, (uint64_t)sqlite3_column_int64(st, 2),
                      (uint64_t)sqlite3_column_int64(st, 3),
                      (uint64_t)sqlite3_column_int64(st, 4),
                      (uint64_t)sqlite3_column_int64(st, 5), ctx);
    }
    sqlite3_finalize(st);
    if (stop)
        return stop;
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Run sql (one statement, the pipeline as its one parameter).  0 or -1. */
static int exec_pipeline(zx_ws *ws, const char *sql, const char *pipeline)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(WSQ(ws)->db, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_bind_text(st, 1, pipeline, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int q_parked_drop(zx_ws *ws, const char *pipeline)
{
    return exec_pipeline(ws, "DELETE FROM _zx_parked WHERE pipeline = ?", pipeline);
}

/* ---- the forward journal (writer_apply.c) -------------------------------- */

static int q_forward_put(zx_ws *ws, const char *pipeline, uint64_t n, const void *frame,
                         size_t len, uint64_t nrows, int64_t now_us)
{
    char ts[ZX_TS_BUFSZ];
    zx_ts_format(now_us, ts);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(WSQ(ws)->db, "INSERT INTO _zx_forward(pipeline,at,n,nrows,frame)"
                           " VALUES(?1,?2,?3,?4,?5)", -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_bind_text(st, 1, pipeline, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ts, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)n);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)nrows);
    sqlite3_bind_blob64(st, 5, len ? frame : "", len, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int q_forward_last(zx_ws *ws, const char *pipeline, uint64_t *n)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(WSQ(ws)->db, "SELECT max(n) FROM _zx_forward WHERE pipeline = ?", -1,
                           &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_bind_text(st, 1, pipeline, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *n = (uint64_t)sqlite3_column_int64(st, 0); /* NULL (no rows) reads as 0 */
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : -1;
}

static int q_forward_drop(zx_ws *ws, const char *pipeline)
{
    return exec_pipeline(ws, "DELETE FROM _zx_forward WHERE pipeline = ?", pipeline);
}

static int q_positions_drop(zx_ws *ws, const char *pipeline)
{
    return exec_pipeline(ws, "DELETE FROM _zx_positions WHERE pipeline = ?", pipeline);
}

/* ---- rows ---------------------------------------------------------------- */

static int q_rows_begin(zx_ws *ws, ws_table *t, const uint32_t *cols, uint32_t n,
                        const zx_rowset *rs, char *err, size_t errlen)
{
    (void)rs;
    wsq *w = WSQ(ws);
    if (n > w->slots_cap) {
        uint32_t cap = n + 16;
        char(*tx)[ZX_TS_BUFSZ] = realloc(w->text, cap * sizeof(*tx));
        if (tx)
            w->text = tx;
        uint32_t *set = realloc(w->set, cap * sizeof(*set));
        if (set)
            w->set = set;
        if (!tx || !set)
            return zx_seterr(err, errlen, "workspace: out of memory");
        w->slots_cap = cap;
    }
    w->cur = zx_wsq_get_ins(w, t, cols, n);
    if (!w->cur)
        return zx_seterr(err, errlen, "workspace: insert into %s: %s", t->name,
                         sqlite3_errmsg(w->db));
    w->nslots = n;
    w->nset = 0;
    return 0;
}

/* Bind a fitted value.  Text in the scratch buffer is copied into the
 * slot's own buffer when short (timestamps), else handed over TRANSIENT. */
static int q_put(zx_ws *ws, uint32_t slot, const zx_fit_out *o, const zx_buf *buf)
{
    wsq *w = WSQ(ws);
    sqlite3_stmt *st = w->cur;
    int p = (int)slot + 1, rc;
    switch (o->st) {
    case ZX_FIT_S_INT: rc = sqlite3_bind_int64(st, p, o->i); break;
    case ZX_FIT_S_REAL: /* SQLite stores a NaN as NULL: kept as text */
        rc = isnan(o->d) ? sqlite3_bind_text(st, p, "NaN", 3, SQLITE_STATIC)
                         : sqlite3_bind_double(st, p, o->d);
        break;
    case ZX_FIT_S_TEXT:
        if (o->s != buf->p) {
            rc = sqlite3_bind_text64(st, p, o->s, o->len, SQLITE_STATIC, SQLITE_UTF8);
        } else if (o->len < ZX_TS_BUFSZ) {
            memcpy(w->text[slot], o->s, o->len);
            rc = sqlite3_bind_text(st, p, w->text[slot], (int)o->len, SQLITE_STATIC);
        } else {
            rc = sqlite3_bind_text64(st, p, o->s, o->len, SQLITE_TRANSIENT, SQLITE_UTF8);
        }
        break;
    default: sqlite3_bind_null(st, p); return 0;
    }
    if (rc == SQLITE_NOMEM)
        return -1;
    if (w->nset < w->slots_cap)
        w->set[w->nset++] = slot;
    return 0;
}

static int q_row_end(zx_ws *ws, char *why, size_t whylen, char *err, size_t errlen)
{
    wsq *w = WSQ(ws);
    sqlite3_stmt *st = w->cur;
    int rc = sqlite3_step(st), ret = 0;
    if (rc != SQLITE_DONE) {
        if (zx_wsq_refusal(w, rc)) {
            snprintf(why, whylen, "%s", sqlite3_errmsg(w->db));
            ret = 1;
        } else {
            ret = zx_seterr(err, errlen, "workspace: insert: %s", sqlite3_errmsg(w->db));
        }
    }
    sqlite3_reset(st);
    for (uint32_t i = 0; i < w->nset; i++)
        sqlite3_bind_null(st, (int)w->set[i] + 1);
    w->nset = 0;
    return ret;
}

static void q_rows_abort(zx_ws *ws)
{
    wsq *w = WSQ(ws);
    if (w->cur) { /* drop every pointer into the caller's memory */
        sqlite3_reset(w->cur);
        sqlite3_clear_bindings(w->cur);
    }
    w->cur = NULL;
    w->nset = 0;
}

static int q_rows_end(zx_ws *ws, ws_table *t, const zx_ws_append *a, const zx_rowset *rs,
                      zx_ws_result *res, char *err, size_t errlen)
{
    (void)t, (void)a, (void)rs, (void)res, (void)err, (void)errlen;
    q_rows_abort(ws);
    return 0;
}

/* The statement sql from the cache of mirror statements (prepared when
 * it is not there: the least recently used entry goes), with the fitted
 * values bound: *st.  0; 1 refused (why set); -1 (err set). */
static int q_prepare_bound(wsq *w, const char *sql, const zx_fit_out *vals, uint32_t n,
                           sqlite3_stmt **out, char *why, size_t whylen, char *err,
                           size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int slot = 0, rc = SQLITE_OK;
    for (int i = 0; i < WSQ_EXEC_CACHE; i++) {
        if (w->exec[i].sql && strcmp(w->exec[i].sql, sql) == 0) {
            slot = i;
            st = w->exec[i].st;
            break;
        }
        if (w->exec[i].used < w->exec[slot].used)
            slot = i;
    }
    if (!st) {
        sqlite3_finalize(w->exec[slot].st);
        free(w->exec[slot].sql);
        w->exec[slot].st = NULL;
        w->exec[slot].sql = NULL;
        rc = sqlite3_prepare_v2(w->db, sql, -1, &st, NULL);
        if (rc == SQLITE_OK && !(w->exec[slot].sql = strdup(sql))) {
            sqlite3_finalize(st);
            return zx_seterr(err, errlen, "workspace: out of memory");
        }
        if (rc == SQLITE_OK)
            w->exec[slot].st = st;
    }
    w->exec[slot].used = ++w->tick;
    if (rc != SQLITE_OK) {
        sqlite3_finalize(st);
        if (zx_wsq_refusal(w, rc)) {
            snprintf(why, whylen, "%s", sqlite3_errmsg(w->db));
            return 1;
        }
        return zx_seterr(err, errlen, "workspace: %s", sqlite3_errmsg(w->db));
    }
    for (uint32_t i = 0; i < n; i++) {
        const zx_fit_out *o = &vals[i];
        int p = (int)i + 1;
        switch (o->st) {
        case ZX_FIT_S_INT: sqlite3_bind_int64(st, p, o->i); break;
        case ZX_FIT_S_REAL:
            if (isnan(o->d))
                sqlite3_bind_text(st, p, "NaN", 3, SQLITE_STATIC);
            else
                sqlite3_bind_double(st, p, o->d);
            break;
        case ZX_FIT_S_TEXT: sqlite3_bind_text64(st, p, o->s, o->len, SQLITE_TRANSIENT, SQLITE_UTF8); break;
        default: sqlite3_bind_null(st, p); break;
        }
    }
    *out = st;
    return 0;
}

/* One statement with fitted values as parameters (mirrors).  Prepared
 * once, in the cache of mirror statements: cached append statements are
 * the append path's. */
static int q_exec_row(zx_ws *ws, const char *sql, const zx_fit_out *vals, uint32_t n,
                      uint64_t *changed, char *why, size_t whylen, char *err, size_t errlen)
{
    wsq *w = WSQ(ws);
    sqlite3_stmt *st = NULL;
    *changed = 0;
    int ret = q_prepare_bound(w, sql, vals, n, &st, why, whylen, err, errlen);
    if (ret)
        return ret;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE || rc == SQLITE_ROW) {
        *changed = (uint64_t)sqlite3_changes(w->db);
    } else if (zx_wsq_refusal(w, rc)) {
        snprintf(why, whylen, "%s", sqlite3_errmsg(w->db));
        ret = 1;
    } else {
        ret = zx_seterr(err, errlen, "workspace: %s", sqlite3_errmsg(w->db));
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return ret;
}

/* A query whose rows are (integer, text): ws_ops.query_pairs. */
static int q_query_pairs(zx_ws *ws, const char *sql, const zx_fit_out *vals, uint32_t n,
                         zx_ws_pair_cb cb, void *ctx, char *err, size_t errlen)
{
    wsq *w = WSQ(ws);
    sqlite3_stmt *st = NULL;
    char why[256];
    int ret = q_prepare_bound(w, sql, vals, n, &st, why, sizeof(why), err, errlen);
    if (ret == 1)
        return zx_seterr(err, errlen, "workspace: %s", why);
    if (ret)
        return ret;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (sqlite3_column_type(st, 0) != SQLITE_NULL &&
            sqlite3_column_type(st, 1) != SQLITE_NULL) {
            const char *s = (const char *)sqlite3_column_text(st, 1);
            cb(ctx, sqlite3_column_int64(st, 0), s ? s : "",
               (size_t)sqlite3_column_bytes(st, 1));
        }
    if (rc != SQLITE_DONE)
        ret = zx_seterr(err, errlen, "workspace: %s", sqlite3_errmsg(w->db));
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return ret;
}

static int q_table_sql(zx_ws *w, ws_table *t, zx_buf *b)
{
    (void)w;
    return ws_sql_ident(b, t->name);
}

static const ws_ops sqlite_ops = {
    .name = "sqlite",
    .close = q_close,
    .begin = q_begin,
    .commit = q_commit,
    .rollback = q_rollback,
    .savepoint = q_savepoint,
    .savepoint_release = q_savepoint_release,
    .savepoint_rollback = q_savepoint_rollback,
    .failure_is_permanent = q_failure_is_permanent,
    .checkpoint_get = q_checkpoint_get,
    .checkpoint_set = q_checkpoint_set,
    .checkpoint_prune = q_checkpoint_prune,
    .position_set = q_position_set,
    .positions_each = q_positions_each,
    .positions_drop = q_positions_drop,
    .park_put = q_park_put,
    .park_first = q_park_first,
    .park_del = q_park_del,
    .parked_drop = q_parked_drop,
    .parked_each = q_parked_each,
    .forward_put = q_forward_put,
    .forward_last = q_forward_last,
    .forward_drop = q_forward_drop,
    .errmsg = q_errmsg,
    .name_cmp = zx_wsq_name_cmp,
    .name_exact = strcmp,
    .decl_for_type = zx_wsq_decl_for_type,
    .kind_from_decl = zx_wsq_kind_from_decl,
    .load_table = zx_wsq_load_table,
    .create_table = zx_wsq_create_table,
    .add_column = zx_wsq_add_column,
    .table_free = zx_wsq_table_free,
    .rows_begin = q_rows_begin,
    .put = q_put,
    .row_end = q_row_end,
    .rows_end = q_rows_end,
    .rows_abort = q_rows_abort,
    .reject_row = zx_wsq_reject_row,
    .decl_for_source = zx_wsq_decl_for_source,
    .param = zx_wsq_param,
    .exec_row = q_exec_row,
    .query_pairs = q_query_pairs,
    .table_sql = q_table_sql,
    .ident = ws_sql_ident,
};
