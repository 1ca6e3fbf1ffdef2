/*
 * workspace_sqlite_int.h — private declarations of the SQLite workspace
 * backend, shared by workspace_sqlite.c (open, transactions, checkpoints,
 * positions, storing rows) and workspace_sqlite_schema.c (reading,
 * creating and altering tables, the cached INSERT statements, the
 * rejects table).
 *
 * It must never be included outside those two files: the contract for the
 * writer is workspace.h, the seam workspace_int.h.
 */
#ifndef ZX_WRITER_WORKSPACE_SQLITE_INT_H
#define ZX_WRITER_WORKSPACE_SQLITE_INT_H

#include "workers/writer/workspace_int.h"
#include "workers/writer/workspace_sqlite_ckpt.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_STMTS 4          /* cached INSERT statements per table */

typedef struct wsq_ins {
    uint32_t *cols;       /* table column indexes, in table order */
    uint32_t n;
    sqlite3_stmt *st;
    uint64_t used;        /* LRU tick */
} wsq_ins;

/* ws_table.be of the SQLite backend */
typedef struct wsq_table {
    wsq_ins ins[MAX_STMTS];
    sqlite3_stmt *rej_ins; /* of a rejects table: its INSERT */
} wsq_table;

#define WSQ_EXEC_CACHE 16

typedef struct wsq {
    zx_ws base;           /* first: a wsq is a zx_ws */
    sqlite3 *db;
    int lock_fd;          /* <path>-zxlock, flock'ed for the handle's life */
    wsq_ckpt *ckpt;       /* the WAL's checkpoints off the writer's path, or NULL */
    sqlite3_stmt *st_begin, *st_commit, *st_rollback, *st_ckpt_get, *st_ckpt_set,
        *st_info, *st_pos_set, *st_sp, *st_sp_release, *st_sp_rollback;
    uint64_t tick;
    zx_buf sql;
    /* the rows being stored (rows_begin .. rows_end) */
    sqlite3_stmt *cur;
    uint32_t nslots;
    char (*text)[ZX_TS_BUFSZ]; /* slot -> short converted text of the row
                                  (bound SQLITE_STATIC) */
    uint32_t *set;        /* slots bound in this row */
    uint32_t nset, slots_cap;
    /* exec_row's statements by their text (a mirror's changes repeat a few
     * shapes): prepared once, reset between uses; least recently used out */
    struct { char *sql; sqlite3_stmt *st; uint64_t used; } exec[WSQ_EXEC_CACHE];
} wsq;

#define WSQ(w) ((wsq *)(w))

/* ---- workspace_sqlite.c ---------------------------------------------- */

/* 1 for errors that come from the data or the table's shape rather than
 * from the database itself (the statement failed, the transaction goes on). */
int zx_wsq_data_error(int rc);
/* ... and the transaction is still open (a refusal, not a failure). */
int zx_wsq_refusal(wsq *w, int rc);

/* A persistent prepared statement (caller finalizes), or NULL on error
 * (message in sqlite3_errmsg). */
sqlite3_stmt *zx_wsq_prep(wsq *w, const char *sql);

/* Runs a cached statement to completion and resets it; the SQLite code
 * (SQLITE_OK for DONE or ROW). */
int zx_wsq_run(sqlite3_stmt *st);

/* ---- workspace_sqlite_schema.c ---------------------------------------- */

int zx_wsq_name_cmp(const char *a, const char *b);
const char *zx_wsq_decl_for_type(zx_type t);
zx_fit_kind zx_wsq_kind_from_decl(const char *decl);
const char *zx_wsq_decl_for_source(const char *src);
void zx_wsq_param(zx_buf *b, uint32_t i);
int zx_wsq_load_table(zx_ws *w, ws_table *t);
int zx_wsq_create_table(zx_ws *w, ws_table *t, const ws_coldef *cols, size_t n, char *err,
                        size_t errlen);
int zx_wsq_add_column(zx_ws *w, ws_table *t, const char *name, const char *decl, char **why,
                      char *err, size_t errlen);
void zx_wsq_table_free(ws_table *t);
int zx_wsq_reject_row(zx_ws *w, const ws_reject *r, char *err, size_t errlen);

/* The cached INSERT for this column list (NULL on error).  Owned by t. */
sqlite3_stmt *zx_wsq_get_ins(wsq *w, ws_table *t, const uint32_t *cols, uint32_t n);

#endif
