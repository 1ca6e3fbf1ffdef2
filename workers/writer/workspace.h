/*
 * workspace.h — the workspace database as the writer sees it (docs/architecture.md §5).
 *
 * One interface, two backends with the same behaviour: SQLite
 * (workspace_sqlite*.c, the embedded default) and PostgreSQL
 * (workspace_pg*.c), chosen from the configuration by zx_ws_open.  What
 * is common (the append algorithm, the cache) is in workspace.c; each SQL
 * dialect difference is in its backend (the seam: workspace_int.h).  The
 * writer holds the only write connection; everything happens inside a
 * transaction it opens with zx_ws_begin and closes with zx_ws_commit or
 * zx_ws_rollback (group commit across frames).
 *
 * Tables: created on the first append from the batch's column types (a
 * column whose batch type is ZX_T_NULL is created only once a non-null value
 * arrives) plus the requested metadata columns; later batches add new
 * columns with ALTER TABLE ADD COLUMN, up to the column cap (below: the
 * fields beyond it are kept as JSON in the column _extra).  Identifiers are always
 * double-quoted (embedded quotes doubled).  Declared types on SQLite:
 * INTEGER, REAL, BOOLEAN, TEXT, TIMESTAMP, JSON; on Postgres: BIGINT,
 * DOUBLE PRECISION, BOOLEAN, TEXT, TIMESTAMPTZ, JSONB.  A user-made table
 * may use any other declared type, treated as "accept anything".  What
 * fits where: fit.h.
 * A misfit value is stored as NULL and recorded in `<table>__rejects`
 * (created on first need):
 *   rejected_at TIMESTAMP, pipeline TEXT, request_id TEXT,
 *   column_name TEXT, column_type TEXT, value_type TEXT,
 *   raw_value TEXT (JSON text of the value), reason TEXT,
 *   source_key TEXT, source_position TEXT (both NULL for a value; set for
 *   a rejected message: zx_ws_reject_messages).
 * A row that the table itself refuses (a user-made table's NOT NULL, CHECK
 * or UNIQUE constraint, or on Postgres a narrower type's range) is not
 * inserted: one reject row with value_type "row", NULL column, the row as
 * raw_value (one JSON object of its fields, names as in the batch), reason
 * "row not inserted: <why>".
 * A data column named like a requested metadata column is ignored (the
 * metadata wins).
 * Checkpoints: table _zx_checkpoints(pipeline TEXT PRIMARY KEY,
 * seq INTEGER, committed_at TEXT), written in the same transaction as the
 * rows so that the writer can reconcile with LMDB after a crash.
 *
 * A zx_ws is used by one thread.  It must never be shared across fork().
 */
#ifndef ZX_WRITER_WORKSPACE_H
#define ZX_WRITER_WORKSPACE_H

#include <stddef.h>
#include <stdint.h>

#include "common/rowset.h"
#include "proto/frame.h"

typedef struct zx_ws zx_ws;
struct zx_conf;

/* Open the workspace the configuration names (workspace.sqlite, the
 * default, or workspace.postgres): zx_ws_open_sqlite or
 * zx_ws_open_postgres with its settings (instance: this zxd's id, used
 * when workspace.postgres.shared is on).  Same returns. */
zx_ws *zx_ws_open(const struct zx_conf *c, const char *owner, const char *instance,
                  int *locked, char *err, size_t errlen);

/* "sqlite" or "postgres" (static). */
const char *zx_ws_backend(const zx_ws *w);

/* Why the workspace cannot be written now, for /healthz and zxctl status
 * (e.g. "Postgres at 127.0.0.1:5433 unreachable since ...: ..."), or NULL
 * when it can.  Owned by w, valid until the next call on w. */
const char *zx_ws_status(zx_ws *w);

/* Open (creating if needed) the SQLite workspace at path, in WAL mode with
 * synchronous "normal" or "full" (NULL = "full"), a 32 MiB page cache and
 * temporary storage in memory; creates _zx_checkpoints.  page_size: the
 * page size in bytes of a file this call creates (a power of two from 4096
 * to 65536: workspace.sqlite.page_size, whose default and trade-offs
 * conf/options.c states; 0: SQLite's own); an existing file keeps its own.
 * Returns the handle, or NULL with a message in err.
 *
 * One workspace, one writer: the handle holds an exclusive lock (flock) on
 * the file `<path>-zxlock` (not on the database itself, whose POSIX locks
 * are SQLite's) until zx_ws_close, and writes into it "pid P on host H, "
 * and `owner` (free text, e.g. "data_dir /var/lib/zx"; may be NULL).  When
 * another process holds it, the open fails, *locked (if not NULL) is set
 * to 1 and err names the holder as written in that file; *locked is 0 for
 * every other failure.  The lock ends with the process, so it is never
 * stale.
 *
 * File modes: a database file this call creates is made 0640 (less the
 * umask), like the LMDB store; SQLite gives its -wal and -shm files the
 * database file's mode.  An existing file keeps its mode.
 *
 * Process-wide side effect: the first call turns SQLite's memory statistics
 * off (SQLITE_CONFIG_MEMSTATUS; a global mutex per allocation otherwise
 * costs ~40% of insert speed) when SQLite has not been used yet. */
zx_ws *zx_ws_open_sqlite(const char *path, const char *synchronous, int page_size,
                         const char *owner, int *locked, char *err, size_t errlen);

/* Open the Postgres workspace: connect with the libpq DSN dsn (URI or
 * key=value; dsn_shown is how messages show it, password hidden), create
 * the schema when missing and allowed, take the one-writer lock (a
 * session advisory lock per database and schema, held until zx_ws_close;
 * the holder records `owner` in <schema>._zx_writer), and create
 * _zx_checkpoints, _zx_positions and _zx_writer in the schema.  Returns
 * the handle, or NULL with a message in err; *locked = 1 when restarting
 * cannot help: another zxd holds the lock (err names it), or the server
 * refuses the role, its password, the database or a permission zx needs;
 * else 0 (e.g. the server is unreachable: worth retrying).
 *
 * instance non-NULL (workspace.postgres.shared): the schema is shared
 * with other zxd that say so too: the lock is taken in shared mode (so
 * only a zxd without `shared` is kept out, and keeps them out), the zxd
 * is listed in <schema>._zx_hosts instead of _zx_writer, the rows of
 * _zx_checkpoints, _zx_parked and _zx_forward are named
 * "<instance>/<pipeline>", a removed pipeline's _zx_positions are kept
 * (another zxd may read the same upstream), and each CREATE TABLE, ADD
 * COLUMN and column retype first takes the table's schema-change lock
 * (a transaction advisory lock) and looks at what is there now.
 *
 * Afterwards a lost connection is not fatal: the open transaction fails,
 * and the next zx_ws_begin reconnects and takes the lock again
 * (zx_ws_status says why it cannot while it cannot). */
zx_ws *zx_ws_open_postgres(const char *dsn, const char *dsn_shown, const char *schema,
                           const char *application_name, const char *owner,
                           const char *instance, int *locked, char *err, size_t errlen);

/* `zxctl test workspace`: check what zx needs of the configured workspace
 * on a connection of its own, without taking the writer lock: for
 * Postgres, connecting, the schema, USAGE and CREATE on it, and who holds
 * the writer lock; for SQLite, the file and its folder.  One paragraph
 * into out (what is there, or exactly what is missing and how to grant
 * it).  0 usable, -1 not. */
int zx_ws_test(const struct zx_conf *c, char *out, size_t outlen);
int zx_ws_test_postgres(const char *dsn, const char *dsn_shown, const char *schema, char *out,
                        size_t outlen);

/* Close (rolling back an open transaction) and release the workspace
 * lock.  NULL is a no-op. */
void zx_ws_close(zx_ws *w);

/* Begin / commit the write transaction.  0, or -1 with a message in err.
 * A failed commit rolls back (as zx_ws_rollback). */
int zx_ws_begin(zx_ws *w, char *err, size_t errlen);
int zx_ws_commit(zx_ws *w, char *err, size_t errlen);

/* Roll back the open transaction (no-op if none) and drop the in-memory
 * schema cache: a CREATE or ALTER TABLE may have been undone. */
void zx_ws_rollback(zx_ws *w);

/* Isolation of one frame inside the open transaction (SQL savepoints):
 * zx_ws_savepoint marks a point; zx_ws_savepoint_release keeps what
 * followed; zx_ws_savepoint_rollback undoes it (and forgets the table
 * cache, since an ALTER TABLE may have been undone) while the transaction
 * goes on.  Each returns 0, or -1 on a database error (then roll the whole
 * transaction back). */
int zx_ws_savepoint(zx_ws *w);
int zx_ws_savepoint_release(zx_ws *w);
int zx_ws_savepoint_rollback(zx_ws *w);

/* After a failed zx_ws_append_rows: 1 when the failure came from the table
 * rather than the database (e.g. the table is a view, or refuses every
 * insert), so the same rows would fail again; 0 when it came from the
 * database itself (disk full, I/O error, locked, out of memory) and is
 * worth retrying. */
int zx_ws_failure_is_permanent(zx_ws *w);

/* Last checkpointed frame seq of the pipeline (0 if absent) into *seq.
 * Sees the open transaction's own writes.  0, or -1 on a database error. */
int zx_ws_checkpoint_get(zx_ws *w, const char *pipeline, uint64_t *seq);

/* Record seq (stored as a signed 64-bit INTEGER) and now_us as committed_at
 * (RFC 3339 text) for the pipeline, inside the open transaction.
 * 0, or -1 (no transaction open, database error). */
int zx_ws_checkpoint_set(zx_ws *w, const char *pipeline, uint64_t seq, int64_t now_us);

/* Delete the checkpoints whose key starts with prefix, except keep1 and
 * keep2 (keys of checkpoints still in use; keep2 may equal keep1).  Outside
 * a transaction.  0 or -1. */
int zx_ws_checkpoint_prune(zx_ws *w, const char *prefix, const char *keep1, const char *keep2);

/* Upstream positions: table _zx_positions(pipeline TEXT, part TEXT, value
 * BLOB, committed_at TEXT, PRIMARY KEY(pipeline, part)), written in the
 * same transaction as the rows and the checkpoint, so that after a crash
 * between the workspace commit and the LMDB commit the writer copies them
 * into the store again (the workspace is the truth).
 * Set part's value inside the open transaction: 0, or -1. */
int zx_ws_position_set(zx_ws *w, const char *pipeline, const char *part, const void *val,
                       size_t len, int64_t now_us);
/* Compare-and-set of a position (shared workspaces, writer_fence.c):
 * inside the open transaction, make sure part's row exists (a missing one
 * is inserted with a NULL value, and so waits for another zxd's insert
 * of the same row to end), lock it (SELECT ... FOR UPDATE: another zxd
 * fencing the same part waits until this transaction ends), and return
 * its value as committed by the others or written by this transaction.
 * *val: malloc'd copy the caller frees, NULL when the value is NULL (never
 * stored); *len its bytes.  0, or -1 (no transaction open, a backend
 * without shared mode: SQLite, a database error: zx_ws_errmsg). */
int zx_ws_position_lock(zx_ws *w, const char *pipeline, const char *part, void **val,
                        size_t *len);
/* Call cb for every stored position (pipeline and part NUL-terminated,
 * val of len bytes; valid during the call), ordered by pipeline and part;
 * a row whose value is NULL (locked by zx_ws_position_lock, never set) is
 * left out.
 * A non-zero return from cb stops the walk and is returned; 0 after the
 * last; -1 on a database error. */
typedef int (*zx_ws_position_cb)(const char *pipeline, const char *part, const void *val,
                                 size_t len, void *ctx);
int zx_ws_positions_each(zx_ws *w, zx_ws_position_cb cb, void *ctx);
/* Delete every position of the pipeline (autocommit or inside the open
 * transaction).  0 or -1. */
int zx_ws_positions_drop(zx_ws *w, const char *pipeline);

/* The other zxd of a shared Postgres workspace (workspace.postgres.shared),
 * for `on: change` syncs that read tables another zxd writes
 * (workspace_pg_notice.c).  Each is a no-op on a workspace not shared.
 *
 * zx_ws_notice_changes: inside the open transaction, tell the others
 * that these tables (names NUL-terminated, not kept) get rows when it
 * commits (NOTIFY: nothing is told of a rollback).  0, or -1 with err set
 * (the transaction is then aborted).
 *
 * zx_ws_notice_fd: the socket to poll for readability to hear the others
 * at once, or -1 (not shared, not listening, disconnected).  Valid until
 * the next call into w.
 *
 * zx_ws_notices: outside a transaction, call cb(ctx, table) for each
 * table another zxd committed rows to since the last call (readable: the
 * socket polled readable: read it first), table valid during the call;
 * cb(ctx, NULL) once after a reconnect (anything may have changed
 * meanwhile).  Returns the number of calls, or -1 when the connection is
 * lost (the next zx_ws_begin reconnects). */
typedef void (*zx_ws_notice_cb)(void *ctx, const char *table);
int zx_ws_notice_changes(zx_ws *w, const char *const *tables, size_t n, char *err,
                         size_t errlen);
int zx_ws_notice_fd(zx_ws *w);
int zx_ws_notices(zx_ws *w, int readable, zx_ws_notice_cb cb, void *ctx);

/* Parked frames: the changes frames of a mirror table that refuses them
 * (writer_park.c), kept in table _zx_parked(pipeline TEXT, tbl TEXT, n INTEGER,
 * nrows INTEGER, frame BLOB, reason TEXT, parked_at TEXT, PRIMARY
 * KEY(pipeline, tbl, n))
 * in the same transaction as the checkpoint and positions that pass them,
 * so that a crash can neither lose one nor apply one twice.
 * zx_ws_park_put: store frame (len bytes, rows changes) as number n of
 * (pipeline, table), inside the open transaction: 0, or -1 (database error or no
 * transaction).  zx_ws_park_first: the lowest-numbered frame of (pipeline,
 * table) into *n, *frame (malloc'd, the caller frees) and *len: 1 found,
 * 0 none, -1 database error or out of memory.  zx_ws_park_del: delete
 * number n inside the open transaction: 0 or -1.  zx_ws_parked_each: cb
 * for every (pipeline, table) with parked frames: their count, changes,
 * bytes and highest n (strings valid during the call); a non-zero return of cb
 * stops the walk and is returned; 0 after the last; -1 database error. */
int zx_ws_park_put(zx_ws *w, const char *pipeline, const char *table, uint64_t n,
                   uint64_t rows, const void *frame, size_t len, const char *reason, int64_t now_us);
int zx_ws_park_first(zx_ws *w, const char *pipeline, const char *table, uint64_t *n,
                     void **frame, size_t *len);
int zx_ws_park_del(zx_ws *w, const char *pipeline, const char *table, uint64_t n);
typedef int (*zx_ws_parked_cb)(const char *pipeline, const char *table, uint64_t count,
                               uint64_t rows, uint64_t bytes, uint64_t last_n, void *ctx);
int zx_ws_parked_each(zx_ws *w, zx_ws_parked_cb cb, void *ctx);
/* Delete every parked frame of the pipeline, of all its tables (a removed
 * pipeline's: forget.h), autocommit or inside the open transaction.  0 or
 * -1. */
int zx_ws_parked_drop(zx_ws *w, const char *pipeline);

/* The forward journal: the frames a forwarding pipeline (`forward:`,
 * frame metadata "fw") applied, as applied, kept in table
 * _zx_forward(pipeline TEXT, n INTEGER, nrows INTEGER, frame BLOB, at TEXT,
 * PRIMARY KEY(pipeline, n)) (Postgres: n and nrows BIGINT, frame BYTEA,
 * at TIMESTAMPTZ) in the same transaction as the rows, so that the
 * pipeline's forwarder publishes what the writer committed, never before
 * and never what was rolled back.  The forwarder reads a pipeline's rows
 * in order of n (gaps allowed) and deletes those it published.  n is
 * chosen by the writer (writer_apply.c): it only grows per pipeline.
 * zx_ws_forward_put: store frame (len bytes, nrows rows) as number n of
 * pipeline, with `at` the current time, inside the open transaction: 0,
 * or -1 (database error, n already there, no transaction).
 * zx_ws_forward_last: the largest n of the pipeline's rows into *n, 0 when
 * it has none (sees the open transaction's own writes): 0, or -1 on a
 * database error.  zx_ws_forward_drop: delete every row of the pipeline
 * (a removed pipeline's: forget.h), autocommit or inside the open
 * transaction: 0 or -1. */
int zx_ws_forward_put(zx_ws *w, const char *pipeline, uint64_t n, const void *frame, size_t len,
                      uint64_t nrows);
int zx_ws_forward_last(zx_ws *w, const char *pipeline, uint64_t *n);
int zx_ws_forward_drop(zx_ws *w, const char *pipeline);

/* Metadata columns (zx_ws_append.metadata bits). */
#define ZX_WS_META_INGESTED_AT 0x1u  /* "_ingested_at" TIMESTAMP */
#define ZX_WS_META_REQUEST_ID 0x2u   /* "_request_id" TEXT */

/* The column cap.  A table gets at most max_columns columns from the data
 * (its columns other than _ingested_at, _request_id and _extra count,
 * user-made ones included).  A field that would need a new column beyond
 * the cap is kept instead in the overflow column ZX_WS_EXTRA_COLUMN
 * (declared JSON, created on first need, not counted): per row, one JSON
 * object {"<column name>": <value as JSON>, ...} of the fields that got no
 * column (names as normalised, i.e. the column each would have had; null
 * values left out; NULL when the row has none).  A value that does not fit
 * a user-made _extra column's type is a reject like any other.  A data
 * column named _extra (the normaliser never makes one) is ignored. */
#define ZX_WS_EXTRA_COLUMN "_extra"
#define ZX_WS_DEFAULT_MAX_COLUMNS 500u
#define ZX_WS_MAX_COLUMNS 1500u      /* highest cap (SQLite: 2000 in all) */
/* The widest mirror whose history keeps a column per source column. */
#define ZX_WS_HISTORY_MAX_COLUMNS 900u

typedef struct zx_ws_append {
    const char *pipeline;    /* for the rejects table */
    const char *table;       /* target table name (unquoted) */
    uint32_t metadata;       /* ZX_WS_META_* bits */
    uint32_t max_columns;    /* column cap; 0 = ZX_WS_DEFAULT_MAX_COLUMNS,
                                above ZX_WS_MAX_COLUMNS = ZX_WS_MAX_COLUMNS */
    int64_t ingested_at_us;  /* _ingested_at and rejected_at; 0 = now */
    const char *request_id;  /* _request_id and rejects; may be NULL */
} zx_ws_append;

typedef struct zx_ws_colcount {
    char name[64];           /* column name (truncated to 63 bytes) */
    uint64_t count;
} zx_ws_colcount;

typedef struct zx_ws_newcol {
    char name[64];           /* column name (truncated to 63 bytes) */
    uint8_t type;            /* zx_type the column was created for */
} zx_ws_newcol;

typedef struct zx_ws_result {
    uint64_t rows;           /* rows inserted */
    uint64_t rejects;        /* misfit values stored as NULL, plus rows
                                refused by the table's constraints */
    int created_table;       /* the table was created by this call */
    zx_ws_newcol *newcols;   /* columns created by this call (also those of
                                a new table, metadata columns excluded) */
    size_t nnewcols;
    zx_ws_colcount *rejcols; /* misfit count per column, only non-zero */
    size_t nrejcols;
    uint64_t extra_values;   /* values kept in _extra (column cap reached) */
    uint32_t extra_fields;   /* distinct fields of the batch kept there */
    uint32_t max_columns;    /* the cap applied (when extra_fields > 0) */
    char extra_first[64];    /* the first such field's name, "" if none */
    uint32_t history_json;   /* zx_ws_apply_changes made <table>__changes
                                with the row as JSON (_row): the data
                                columns it has; 0 otherwise */
} zx_ws_result;

/* Append every row of rs to a->table inside the open transaction, creating
 * the table and columns as needed.  *res is overwritten (free it with
 * zx_ws_result_free, also after a failure).  Returns 0, or -1 only for a
 * real database error (disk full, I/O, corruption, no open transaction,
 * out of memory): the caller must then zx_ws_rollback.  Bad data is never
 * an error: it becomes NULL plus a reject row.  Columns whose name contains
 * a NUL byte are ignored.  A batch with no columns at all (every value null
 * and no metadata) inserts nothing into a table that does not exist yet. */
int zx_ws_append_rows(zx_ws *w, const zx_ws_append *a, const zx_rowset *rs,
                      zx_ws_result *res, char *err, size_t errlen);

/* A changes frame for a mirror table (proto/frame.h, "Changes frames"). */
typedef struct zx_ws_changes {
    const char *pipeline;            /* for the rejects */
    const char *table;               /* the mirror table */
    const char *const *key_cols;     /* its key, in order */
    size_t nkey_cols;
    const zx_frame_coltype *col_types;  /* the source's declared types */
    size_t ncol_types;
    int history;                     /* also append to <table>__changes */
    int copy;                        /* ZX_FRAME_COPY_START: this frame's
                                        truncate starts the mirror's initial
                                        copy, whose key may be left without
                                        its index until ZX_FRAME_COPY_END
                                        (proto/frame.h "cp"); 0 otherwise */
    int64_t ingested_at_us;          /* rejects' rejected_at; 0 = now */
} zx_ws_changes;

/* Apply rs's changes, in order, to c->table inside the open transaction
 * (see workspace_changes.c): the table is made from the first frame (the
 * source's columns, the backend's type for each source type, the key as
 * primary key) and gets the columns the source adds; insert and update
 * upsert the key's row, leaving the columns listed in _zx_unchanged as
 * stored and setting to NULL every other column with no value, also one
 * of c->col_types that rs lacks; an update that moved the key deletes the old key's row; delete
 * deletes the key's row; truncate empties the table.  With c->history each
 * change is also appended to <table>__changes (_op, _lsn, _commit_time,
 * _xid, then the row; for a mirror of more than ZX_WS_HISTORY_MAX_COLUMNS
 * data columns, whose history row would not fit a Postgres row, the row
 * is one JSON object in _row instead, decided when __changes is made and
 * kept while it has _row).  Misfit values are NULL plus a reject; a change the
 * table refuses (a constraint, no key, an unknown operation) is a reject
 * of its row ("row not inserted: ...").  *res: rows = changes applied,
 * rejects, created_table.  0, or -1 on a database failure (roll back). */
int zx_ws_apply_changes(zx_ws *w, const zx_ws_changes *c, const zx_rowset *rs,
                        zx_ws_result *res, char *err, size_t errlen);

/* One row of a lookup: i (the caller's index) and a text s of len bytes,
 * valid during the call. */
typedef void (*zx_ws_pair_cb)(void *ctx, int64_t i, const char *s, size_t len);

/* The source position (_zx_seq, proto/frame.h) that c->table's row of
 * each change's key holds (workers/writer/keyseq.h), inside the open
 * transaction (so it sees what this transaction applied): cb(ctx, r, seq)
 * for each row r of rs with a non-empty _zx_seq and a whole key whose row
 * exists and holds a _zx_seq.  Nothing when the table, its `_zx_seq`
 * column or one of its key columns does not exist, nor for a key whose
 * values do not fit its columns, nor on Postgres for a key column of an
 * array type.  One statement per 1,000 keys.  0, or -1 on a database
 * error (err set; roll back). */
int zx_ws_key_seqs(zx_ws *w, const zx_ws_changes *c, const zx_rowset *rs, zx_ws_pair_cb cb,
                   void *ctx, char *err, size_t errlen);

/* The newest _zx_seq c->table's rows hold (compared as bytes), inside the
 * open transaction: *out malloc'ed (caller frees; *len its bytes), or
 * NULL and *len 0 when the table, its _zx_seq column or any value is
 * missing.  Reads every row once.  0, or -1 on a database error (err
 * set; roll back). */
int zx_ws_max_seq(zx_ws *w, const zx_ws_changes *c, char **out, size_t *len, char *err,
                  size_t errlen);

/* Record input messages a source could not turn into rows (a->table,
 * a->pipeline, a->request_id, a->ingested_at_us as for rows) in
 * `<table>__rejects` inside the open transaction: one row each with
 * value_type "message", raw_value the message (TEXT when it is valid UTF-8
 * without NUL, else a BLOB), reason, source_key (same rule; NULL when the
 * message had none) and source_position (JSON text), column_name and
 * column_type NULL.  A rejects table made before these two columns existed
 * gets them (ALTER TABLE).  A rejects table that refuses the rows (a
 * user-made one) is skipped.  *stored = rows written.  0, or -1 on a
 * database error (err set; roll back). */
int zx_ws_reject_messages(zx_ws *w, const zx_ws_append *a, const zx_frame_reject *r, size_t n,
                          uint64_t *stored, char *err, size_t errlen);

/* Free the arrays of res and zero it.  NULL is a no-op. */
void zx_ws_result_free(zx_ws_result *res);

/* The table's columns as JSON [{"name":..,"type":..}] (type: integer, real,
 * boolean, text, timestamp, json, or the declared type lower-cased for a
 * user-made column; "any" when it has none), malloc'ed into *json_out
 * (caller frees).  0; 1 when the table does not exist (*json_out = NULL);
 * -1 on a database error or out of memory. */
int zx_ws_table_columns(zx_ws *w, const char *table, char **json_out);

/* Last SQLite/backend error message of the handle (static or owned by w,
 * valid until the next call on w). */
const char *zx_ws_errmsg(zx_ws *w);

#endif
