/*
 * workspace_pg_int.h — private declarations of the PostgreSQL workspace
 * backend, shared by workspace_pg.c (connection, the writer lock,
 * reconnecting, transactions, checkpoints, positions), workspace_pg_schema.c
 * (reading, creating and altering tables, identifiers, the rejects table)
 * and workspace_pg_copy.c (storing rows with COPY).
 *
 * It must never be included outside those files: the contract for the
 * writer is workspace.h, the seam workspace_int.h.
 */
#ifndef ZX_WRITER_WORKSPACE_PG_INT_H
#define ZX_WRITER_WORKSPACE_PG_INT_H

#include "workers/writer/workspace_int.h"

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#define WSP_IDENT_MAX 63        /* Postgres' identifier limit (NAMEDATALEN - 1) */
#define WSP_LOCK_CLASS 0x7a78   /* "zx": first key of the writer's advisory lock */
#define WSP_DDL_CLASS 0x7a79    /* first key of a table's schema-change lock
                                   (shared workspaces; workspace_pg_schema.c) */
/* FROM and WHERE of a query on the sessions (a: pg_stat_activity) that
 * hold the writer lock of this database: $1 WSP_LOCK_CLASS, $2 the key. */
#define WSP_LOCK_SESSIONS                                                                   \
    " FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"                             \
    " WHERE l.locktype = 'advisory' AND l.classid = $1::int::oid AND l.objid = $2::int::oid" \
    " AND l.objsubid = 2 AND l.granted AND l.database = (SELECT oid FROM pg_database"      \
    " WHERE datname = current_database())"

/* ws_table.be of the Postgres backend */
typedef struct wsp_table {
    char *qname;                /* "schema"."table" (shortened, quoted) */
    char *rej_sql;              /* of a rejects table: its INSERT */
} wsp_table;

typedef struct wsp {
    zx_ws base;                 /* first: a wsp is a zx_ws */
    PGconn *conn;               /* NULL while disconnected */
    char *dsn;                  /* owned; holds the password: never shown */
    char *dsn_shown;            /* owned; password hidden */
    char *schema, *app, *owner; /* owned */
    char *instance;             /* owned; NULL: the schema is this zxd's alone;
                                   else workspace.postgres.shared and this
                                   zxd's id (common/instance.h) */
    char *qschema;              /* "schema", quoted */
    char token[20];             /* random, this handle's: in its sessions'
                                   application_name */
    int32_t lock_key;           /* second key of the advisory lock */
    int broken;                 /* the connection failed: reconnect at begin */
    uint64_t last_changed;      /* rows the last guarded statement touched */
    int permanent;              /* the last failure came from a table or
                                   its data, the connection is fine */
    int64_t down_since_us;      /* first failed reconnect (0: up) */
    int64_t next_try_us;        /* no reconnect before (backoff) */
    int64_t backoff_us;
    char sqlstate[6];           /* of the last failure */
    char msg[1024];             /* the last failure, for zx_ws_errmsg */
    char status[1200];          /* why it cannot write now ("" fine) */
    zx_buf sql;
    /* the rows being stored (rows_begin .. rows_end) */
    ws_table *cur;
    zx_buf copy_cols;       /* the COPY's column list */
    zx_buf data;            /* COPY text of the rows so far */
    size_t *rowoff;             /* row r is data[rowoff[r] .. rowoff[r+1]) */
    size_t nrows, rows_cap;
    zx_buf rowbuf;          /* this row's values, escaped */
    int64_t *off;               /* slot -> offset in rowbuf, -1 NULL */
    size_t *len;                /* slot -> length */
    uint8_t *btype;             /* slot -> binary encoding (B_* of
                                   workspace_pg_copy.c) */
    uint32_t nslots, slots_cap;
    int binary;                 /* this COPY is in binary format: every
                                   column's type has a known encoding, and
                                   every value of the append one (rows_begin) */
    int streaming;              /* 0: no COPY open yet; 1: one is open and
                                   takes the rows as they come; 2: open, but
                                   a send failed (the server refused a row or
                                   the connection broke): rows_end finds out;
                                   3: SAVEPOINT zx_copy taken, the COPY
                                   refused (w->msg says why) */
    size_t sent;                /* data[0 .. sent) went into the open COPY */
    int unencodable;            /* this row met a value without the binary
                                   form rows_begin found for it (a bug) */
    struct wsp_pending *pend;   /* rejects met while a COPY was open, made
                                   after it (in order); owned */
    struct wsp_pending **pend_tail;
    /* shared: LISTEN for the other zxd's commits (workspace_pg_notice.c) */
    int listening;              /* this connection LISTENs */
    int listened;               /* an earlier connection did */
    int notice_gap;             /* listening again: some may be missed */
} wsp;

#define WSP(w) ((wsp *)(w))

/* ---- workspace_pg.c ---------------------------------------------------- */

/* Run sql (no parameters, or n of them as text).  Returns the result when
 * its status is ok (PGRES_COMMAND_OK or PGRES_TUPLES_OK; caller PQclears),
 * else NULL with w->msg, w->sqlstate, w->broken and w->permanent set. */
PGresult *zx_wsp_exec(wsp *w, const char *sql, int n, const char *const *params);
/* zx_wsp_exec for statements without a result: 0 or -1. */
int zx_wsp_run(wsp *w, const char *sql);
/* Record a failure from res (may be NULL) or the connection; a lost
 * connection also sets the status (zx_wsp_set_down). */
void zx_wsp_fail(wsp *w, const PGresult *res);
/* The workspace cannot be written: status = "workspace unavailable since
 * <first failure>: <w->msg>". */
void zx_wsp_set_down(wsp *w);
/* 1 when the last failure is the table's refusal (of its data, its
 * shape, its triggers, permissions: it will refuse again, so only its
 * pipeline is held back), the connection fine: any SQLSTATE but the
 * classes that pass by themselves (08, 25, 40, 53, 57, 58, XX, F0). */
int zx_wsp_refusal(const wsp *w);

/* ---- workspace_pg_notice.c --------------------------------------------- */

/* Shared workspace: LISTEN on the schema's channel (after each connect;
 * a failure is logged, and the others' commits are then not heard). */
void zx_wsp_notice_listen(wsp *w);
/* The ws_ops notice_changes, notice_fd and notices (workspace.h). */
int zx_wsp_notice_changes(zx_ws *ws, const char *const *tables, size_t n, char *err,
                          size_t errlen);
int zx_wsp_notice_fd(zx_ws *ws);
int zx_wsp_notices(zx_ws *ws, int readable, zx_ws_notice_cb cb, void *ctx);

/* ---- workspace_pg_schema.c --------------------------------------------- */

/* Identifier as Postgres keeps it: names over 63 bytes become their first
 * 54 bytes (cut on a UTF-8 boundary), "_" and 8 hex digits of a hash of
 * the whole name, so that one name always maps to one identifier. */
void zx_wsp_ident_name(const char *name, char out[WSP_IDENT_MAX + 1]);
/* Append "schema"."name" (both through zx_wsp_ident_name). 0 or -1. */
int zx_wsp_qualified(wsp *w, zx_buf *b, const char *name);
/* The second key of the writer's advisory lock for a schema (a hash of
 * its name; the first is WSP_LOCK_CLASS). */
int32_t zx_wsp_lock_key(const char *schema);
/* Append "name" (shortened as above). 0 or -1. */
int zx_wsp_ident(zx_buf *b, const char *name);

int zx_wsp_name_cmp(const char *a, const char *b);
const char *zx_wsp_decl_for_type(zx_type t);
zx_fit_kind zx_wsp_kind_from_decl(const char *decl);
const char *zx_wsp_decl_for_source(const char *src);
void zx_wsp_param(zx_buf *b, uint32_t i);
/* ws_ops.array_param and array_add (workspace_int.h): "$N::decl[]", and
 * Postgres' array literal ({"v",NULL,...}, every value quoted, \ and "
 * escaped). */
int zx_wsp_array_param(zx_buf *b, uint32_t i, const char *decl);
int zx_wsp_array_add(zx_buf *arr, const zx_fit_out *o);
int zx_wsp_load_table(zx_ws *w, ws_table *t);
int zx_wsp_create_table(zx_ws *w, ws_table *t, const ws_coldef *cols, size_t n, char *err,
                        size_t errlen);
int zx_wsp_add_column(zx_ws *w, ws_table *t, const char *name, const char *decl, char **why,
                      char *err, size_t errlen);
int zx_wsp_retype_column(zx_ws *w, ws_table *t, uint32_t col, const char *decl, char *err,
                         size_t errlen);
void zx_wsp_table_free(ws_table *t);
int zx_wsp_table_sql(zx_ws *w, ws_table *t, zx_buf *b);
int zx_wsp_reject_row(zx_ws *w, const ws_reject *r, char *err, size_t errlen);
/* Run sql inside SAVEPOINT zx_ddl: 0 done, 1 refused (undone, w->msg
 * says why), -1 database failure. */
int zx_wsp_guarded(wsp *w, const char *sql, int n, const char *const *params);
/* Before a schema change of table qname in a shared workspace: its
 * schema-change lock (a transaction advisory lock on (WSP_DDL_CLASS,
 * hashtext(qname)), held to the commit), so that one zxd at a time
 * changes it and the next sees what the last made.  0 (also when the
 * workspace is not shared), or -1 (w->msg set). */
int zx_wsp_ddl_lock(wsp *w, const char *qname);

/* ---- workspace_pg_binval.c --------------------------------------------- */

/* The binary COPY form of o for a column of type integer (bytes 4) or
 * smallint (bytes 2), uuid, date or numeric, appended to out (the value's
 * bytes, without their length): 0, 1 when o is not in a form zx reads
 * (the append then goes as text and the server decides), -1 out of
 * memory. */
int zx_wsp_bin_int(const zx_fit_out *o, int bytes, zx_buf *out);
int zx_wsp_bin_uuid(const zx_fit_out *o, zx_buf *out);
int zx_wsp_bin_date(const zx_fit_out *o, zx_buf *out);
int zx_wsp_bin_numeric(const zx_fit_out *o, zx_buf *out);

/* ---- workspace_pg_keyidx.c --------------------------------------------- */

/* ws_ops.key_index (workspace_int.h). */
int zx_wsp_key_index(zx_ws *w, ws_table *t, const char *const *keys, size_t nkeys, int build,
                     char *err, size_t errlen);

/* ---- workspace_pg_fence.c ---------------------------------------------- */

/* ws_ops.position_lock (workspace.h, zx_ws_position_lock). */
int zx_wsp_position_lock(zx_ws *w, const char *pipeline, const char *part, void **val,
                         size_t *len);

/* ---- workspace_pg_copy.c ----------------------------------------------- */

int zx_wsp_rows_begin(zx_ws *w, ws_table *t, const uint32_t *cols, uint32_t n,
                      const zx_rowset *rs, char *err, size_t errlen);
int zx_wsp_put(zx_ws *w, uint32_t slot, const zx_fit_out *o, const zx_buf *buf);
int zx_wsp_row_end(zx_ws *w, char *why, size_t whylen, char *err, size_t errlen);
int zx_wsp_rows_end(zx_ws *w, ws_table *t, const zx_ws_append *a, const zx_rowset *rs,
                    zx_ws_result *res, char *err, size_t errlen);
void zx_wsp_rows_abort(zx_ws *w);
int zx_wsp_refuses(const zx_fit_out *o, zx_fit_kind k);
void zx_wsp_copy_free(wsp *w);
/* While a COPY is open (w->streaming) the connection takes no other
 * statement: zx_wsp_reject_row hands its reject here, which copies it
 * (every string) to be recorded when the rows end.  0, or -1 out of
 * memory (err set). */
int zx_wsp_reject_defer(wsp *w, const ws_reject *r, char *err, size_t errlen);

#endif
