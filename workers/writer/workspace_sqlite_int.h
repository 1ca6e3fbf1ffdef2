/*
 * workspace_sqlite_int.h — private declarations of the SQLite workspace
 * backend, shared by workspace_sqlite.c (open, transactions, checkpoints,
 * appending rows, rejects), workspace_sqlite_schema.c (the table cache,
 * CREATE / ALTER TABLE, the cached INSERT statements) and
 * workspace_sqlite_source.c (upstream positions, rejected messages).
 *
 * It must never be included outside those two files: the contract for the
 * writer is workspace.h.
 */
#ifndef ZX_WRITER_WORKSPACE_SQLITE_INT_H
#define ZX_WRITER_WORKSPACE_SQLITE_INT_H

#include "workers/writer/workspace.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "common/timefmt.h"
#include "workers/writer/fit.h"

#define MAX_STMTS 4          /* cached INSERT statements per table */
#define MAX_CREATE_COLS 1500 /* columns in one CREATE TABLE; more via ALTER */

/* The metadata columns, by bit of ZX_WS_META_*: name and declared type. */
extern const char *const zx_wsq_meta_name[2];
extern const char *const zx_wsq_meta_decl[2];

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
    sqlite3_stmt *msg_ins; /* of a rejects table: INSERT of a rejected
                              message (workspace_sqlite_source.c) */
} ws_table;

struct zx_ws {
    sqlite3 *db;
    int lock_fd;          /* <path>-zxlock, flock'ed for the handle's life */
    int in_txn;
    sqlite3_stmt *st_begin, *st_commit, *st_rollback, *st_ckpt_get, *st_ckpt_set,
        *st_info, *st_pos_set;
    ws_table *tables;
    uint64_t tick;
    /* per-append scratch, grown as needed */
    int32_t *map;         /* rowset column -> table column, -1 skip, -2 not added */
    uint64_t *rejn;       /* rowset column -> misfits */
    char **nomsg;         /* rowset column -> why it could not be added */
    uint64_t *xlast;      /* rowset column kept in _extra -> index of its
                             last cell in the current row */
    uint32_t *param;      /* table column -> parameter index (0: none) */
    uint8_t *used;        /* table column -> in the statement */
    uint32_t *list;       /* the statement's table columns */
    char (*slot)[ZX_TS_BUFSZ]; /* table column -> short converted text of
                                  the current row (bound SQLITE_STATIC) */
    size_t rs_cap, tc_cap;
    zx_fit_buf buf, raw, sql;
    zx_fit_buf xbuf;      /* the current row's _extra object */
    char ts[ZX_TS_BUFSZ];
};

/* ---- workspace_sqlite.c ---------------------------------------------- */

/* 1 for errors that come from the data or the table's shape rather than
 * from the database itself (the statement failed, the transaction goes on). */
int zx_wsq_data_error(int rc);

/* A persistent prepared statement (caller finalizes), or NULL on error
 * (message in sqlite3_errmsg). */
sqlite3_stmt *zx_wsq_prep(zx_ws *w, const char *sql);

/* Runs a cached statement to completion and resets it; the SQLite code
 * (SQLITE_OK for DONE or ROW). */
int zx_wsq_run(sqlite3_stmt *st);

/* The columns of every <table>__rejects, in order, for CREATE TABLE. */
#define ZX_WSQ_REJECTS_COLUMNS \
    "(rejected_at TIMESTAMP, pipeline TEXT, request_id TEXT, column_name TEXT," \
    " column_type TEXT, value_type TEXT, raw_value TEXT, reason TEXT," \
    " source_key TEXT, source_position TEXT)"

/* ---- workspace_sqlite_schema.c ---------------------------------------- */

/* Append to b: s as a double-quoted identifier (quotes doubled) / s as is.
 * 0, or -1 out of memory. */
int zx_wsq_sql_ident(zx_fit_buf *b, const char *s);
int zx_wsq_sql_str(zx_fit_buf *b, const char *s);

/* Frees every cached table (after a rollback, or at close). */
void zx_wsq_cache_drop(zx_ws *w);

/* Index of the column (names compared case-insensitively), or -1. */
int64_t zx_wsq_find_col(const ws_table *t, const char *name);

/* The cached table (columns read from the database on first use); a table
 * that does not exist has ncols == 0.  NULL on a database error/ENOMEM.
 * Owned by w until zx_wsq_cache_drop. */
ws_table *zx_wsq_get_table(zx_ws *w, const char *name);

/* Appends {name, type} to res->newcols.  0, or -1 out of memory. */
int zx_wsq_add_newcol(zx_ws_result *res, const char *name, uint8_t type);

/* CREATE TABLE with the batch's new columns (w->map[c] == -3; at most
 * MAX_CREATE_COLS) and the metadata columns.  Returns 0, 1 when there is
 * nothing to create, or -1 (err set). */
int zx_wsq_create_table(zx_ws *w, ws_table *t, const zx_rowset *rs, uint32_t meta,
                        zx_ws_result *res, char *err, size_t errlen);

/* ALTER TABLE ADD COLUMN.  0 added, 1 refused by SQLite (message in
 * *why, malloc'ed, if why and *why is NULL), -1 database error (err set). */
int zx_wsq_add_column(zx_ws *w, ws_table *t, const char *name, const char *decl,
                      char **why, char *err, size_t errlen);

/* The cached INSERT for this column list (NULL on error).  Owned by t. */
sqlite3_stmt *zx_wsq_get_ins(zx_ws *w, ws_table *t, const uint32_t *cols, uint32_t n);

#endif
