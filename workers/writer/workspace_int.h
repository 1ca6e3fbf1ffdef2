/*
 * workspace_int.h — what the workspace backends share, behind workspace.h.
 *
 * workspace.c holds everything that is the same on every backend: the
 * dispatch of the public zx_ws_* calls, the in-memory table cache, and
 * the append algorithm (which field gets which column, the column cap and
 * _extra, metadata columns, fitting values, misfits as rejects).  A
 * backend (workspace_sqlite*.c, workspace_pg*.c) supplies a ws_ops table:
 * its connection and transactions, its DDL, its way of storing rows, its
 * rejects table, its checkpoints and positions.  Every SQL dialect
 * difference lives in a backend file, nowhere else.
 *
 * A backend's handle embeds struct zx_ws as its first member.
 *
 * It must never be included outside workers/writer/workspace*.c: the
 * contract for the writer is workspace.h.
 */
#ifndef ZX_WRITER_WORKSPACE_INT_H
#define ZX_WRITER_WORKSPACE_INT_H

#include "workers/writer/workspace.h"

#include <stddef.h>
#include <stdint.h>

#include "common/timefmt.h"
#include "workers/writer/fit.h"

/* The metadata columns, by bit of ZX_WS_META_*: name and kind. */
extern const char *const zx_ws_meta_name[2];
extern const zx_type zx_ws_meta_type[2];

typedef struct ws_col {
    char *name, *decl;      /* decl: the declared type as the database has it */
    zx_fit_kind kind;
} ws_col;

/* One cached table.  be is the backend's own per-table state (prepared
 * statements), freed by ops->table_free. */
typedef struct ws_table {
    struct ws_table *next;
    char *name;
    ws_col *cols;
    uint32_t ncols, cap;
    int loaded;             /* columns read from the database */
    void *be;
} ws_table;

/* A column to create: name and batch type (the backend picks the type),
 * or an explicit declared type (decl, already the backend's), and whether
 * it belongs to the primary key (NOT NULL, PRIMARY KEY in order). */
typedef struct ws_coldef {
    const char *name;
    zx_type type;
    const char *decl;       /* NULL: from type */
    int key;
} ws_coldef;

/* One row of <table>__rejects.  Byte fields (raw, key) may hold any bytes;
 * NULL pointers are SQL NULL. */
typedef struct ws_reject {
    const char *table;          /* the data table (rejects go to <table>__rejects) */
    const char *rejected_at;    /* RFC 3339 */
    const char *pipeline, *request_id, *column, *column_type, *value_type;
    const char *raw;            /* raw_value */
    size_t raw_len;
    const char *reason;
    const char *key;            /* source_key */
    size_t key_len;
    const char *position;       /* source_position (JSON text) */
} ws_reject;

typedef struct ws_ops {
    const char *name;                       /* "sqlite", "postgres" */
    void (*close)(zx_ws *w);
    int (*begin)(zx_ws *w, char *err, size_t errlen);
    int (*commit)(zx_ws *w, char *err, size_t errlen);
    void (*rollback)(zx_ws *w);             /* the cache is dropped by the caller */
    int (*savepoint)(zx_ws *w);
    int (*savepoint_release)(zx_ws *w);
    int (*savepoint_rollback)(zx_ws *w);
    int (*failure_is_permanent)(zx_ws *w);
    int (*checkpoint_get)(zx_ws *w, const char *pipeline, uint64_t *seq);
    int (*checkpoint_set)(zx_ws *w, const char *pipeline, uint64_t seq, int64_t now_us);
    int (*checkpoint_prune)(zx_ws *w, const char *prefix, const char *keep1, const char *keep2);
    int (*position_set)(zx_ws *w, const char *pipeline, const char *part, const void *val,
                        size_t len, int64_t now_us);
    int (*positions_each)(zx_ws *w, zx_ws_position_cb cb, void *ctx);
    int (*positions_drop)(zx_ws *w, const char *pipeline);
    /* Optional (NULL: the backend has no shared mode): zx_ws_position_lock */
    int (*position_lock)(zx_ws *w, const char *pipeline, const char *part, void **val,
                         size_t *len);
    int (*park_put)(zx_ws *w, const char *pipeline, const char *table, uint64_t n,
                    uint64_t rows, const void *frame, size_t len, const char *reason, int64_t now_us);
    int (*park_first)(zx_ws *w, const char *pipeline, const char *table, uint64_t *n,
                      void **frame, size_t *len);
    int (*park_del)(zx_ws *w, const char *pipeline, const char *table, uint64_t n);
    int (*parked_each)(zx_ws *w, zx_ws_parked_cb cb, void *ctx);
    int (*parked_drop)(zx_ws *w, const char *pipeline);
    int (*forward_put)(zx_ws *w, const char *pipeline, uint64_t n, const void *frame,
                       size_t len, uint64_t nrows, int64_t now_us);
    int (*forward_last)(zx_ws *w, const char *pipeline, uint64_t *n);
    int (*forward_drop)(zx_ws *w, const char *pipeline);
    const char *(*errmsg)(zx_ws *w);
    const char *(*status)(zx_ws *w);        /* NULL: always fine */

    /* schema: names compare with name_cmp (0 = same column) */
    int (*name_cmp)(const char *a, const char *b);
    /* 0 when a and b are the very same name (SQLite: byte for byte, where
     * name_cmp ignores case); NULL: name_cmp is exact.  Mirrors map a
     * source column to a table column with it (workspace_changes_names.c). */
    int (*name_exact)(const char *a, const char *b);
    /* the declared type zx gives a new column of batch type t (NULL: no
     * column for it) and the kind of a declared type read back */
    const char *(*decl_for_type)(zx_type t);
    zx_fit_kind (*kind_from_decl)(const char *decl);
    /* read t's columns into the cache (ws_table_add_col); a table that
     * does not exist gets none.  0, or -1 on a database error. */
    int (*load_table)(zx_ws *w, ws_table *t);
    /* CREATE TABLE t with these columns (n >= 1; those with key set make
     * the primary key, in order).  0, 2 when another zxd sharing the
     * workspace made the table first (its columns are now in t's cache,
     * none of these was added: the caller adds what it lacks), or -1
     * (err set).  An added column another zxd added first is taken as it
     * is (add_column 0, its declared type cached). */
    int (*create_table)(zx_ws *w, ws_table *t, const ws_coldef *cols, size_t n, char *err,
                        size_t errlen);
    /* ALTER TABLE ADD COLUMN.  0 added (and cached), 1 refused for a data
     * reason (*why malloc'ed when why and *why is NULL), -1 database
     * error (err set). */
    int (*add_column)(zx_ws *w, ws_table *t, const char *name, const char *decl, char **why,
                      char *err, size_t errlen);
    /* Optional: give column col of t the declared type decl (a source
     * retyped it), keeping its values (converted through their text; when
     * they do not convert, the column becomes the backend's text type).  0
     * done, 1 refused (nothing changed), -1 database failure (err set).
     * NULL: the backend keeps the declared type (its values then fit it or
     * are rejects). */
    int (*retype_column)(zx_ws *w, ws_table *t, uint32_t col, const char *decl, char *err,
                         size_t errlen);
    void (*table_free)(ws_table *t);

    /* rows: rows_begin with the table columns used (cols[0..n-1], in
     * table order; a value's slot is its index in that list), then per row
     * put / put_null per slot (unset slots are NULL) and row_end; then
     * rows_end.  row_end: 0 stored (or queued), 1 refused by the table
     * (why filled), -1 database error (err set).  rows_end stores what is
     * queued and records the refused rows itself (ws_reject_refused_row;
     * queued row r is row r of rs): 0 or -1.
     * put: 0, or -1 out of memory.  rows_abort after a failure drops every
     * pointer into the caller's memory.  rows_begin also gets the rows to
     * come (rs, its columns mapped by w->map and w->slot), for a backend
     * that picks its format from the values (Postgres: binary COPY only
     * when it can hold every value). */
    int (*rows_begin)(zx_ws *w, ws_table *t, const uint32_t *cols, uint32_t n,
                      const zx_rowset *rs, char *err, size_t errlen);
    int (*put)(zx_ws *w, uint32_t slot, const zx_fit_out *o, const zx_buf *buf);
    int (*row_end)(zx_ws *w, char *why, size_t whylen, char *err, size_t errlen);
    int (*rows_end)(zx_ws *w, ws_table *t, const zx_ws_append *a, const zx_rowset *rs,
                    zx_ws_result *res, char *err, size_t errlen);
    void (*rows_abort)(zx_ws *w);
    /* a value's text that the backend cannot store although it fits the
     * kind (Postgres: a NUL byte in text, \u0000 in JSON): 1 = misfit */
    int (*refuses)(const zx_fit_out *o, zx_fit_kind k);

    /* Mirrors (workspace_changes.c): the backend's declared type for a
     * source's declared type (format_type words), or NULL when it has no
     * better one than decl_for_type of the values' type; the text of
     * statement parameter i (0-based: "?" or "$1"); and one statement run
     * with n parameters (fitted values): 0 done (*changed = rows it
     * touched), 1 refused by the table for a data reason (why filled, the
     * transaction goes on), -1 database failure (err set). */
    const char *(*decl_for_source)(const char *src_type);
    void (*param)(zx_buf *b, uint32_t i);
    /* Batched mirror statements with one array parameter per column
     * (workspace_changes_batch.c), NULL when the backend has none and
     * lists the values instead (SQLite): array_param appends the text of
     * parameter i as an array of the declared type decl (Postgres:
     * "$1::decl[]"): 0 or -1 ENOMEM; array_add appends one value to the
     * array literal arr (empty: it opens it), o NULL closes it: 0 or -1
     * ENOMEM. */
    int (*array_param)(zx_buf *b, uint32_t i, const char *decl);
    int (*array_add)(zx_buf *arr, const zx_fit_out *o);
    /* append t's name / a column's name as the SQL of this backend (quoted;
     * Postgres: schema-qualified, long names shortened).  0 or -1 ENOMEM. */
    int (*table_sql)(zx_ws *w, ws_table *t, zx_buf *b);
    int (*ident)(zx_buf *b, const char *name);
    int (*exec_row)(zx_ws *w, const char *sql, const zx_fit_out *vals, uint32_t n,
                    uint64_t *changed, char *why, size_t whylen, char *err, size_t errlen);
    /* One query with n fitted values as parameters whose rows are (an
     * integer, a text): cb for each row where neither is NULL (s valid
     * during the call).  0, or -1 (err set: roll back). */
    int (*query_pairs)(zx_ws *w, const char *sql, const zx_fit_out *vals, uint32_t n,
                       zx_ws_pair_cb cb, void *ctx, char *err, size_t errlen);
    /* appended to a text expression to compare it as bytes (Postgres:
     * ' COLLATE "C"'); NULL: it already is (SQLite's BINARY) */
    const char *bytes_collation;

    /* A mirror's key index during its initial copy (zx_ws_changes.copy),
     * NULL when the backend keeps it (SQLite): build 0, the copy starts
     * and t is empty: leave out the primary key that is exactly keys[0..
     * nkeys) (when nothing depends on it), so that the rows load without
     * maintaining it; build 1, the copy ends: make keys the primary key
     * unless a unique index on them exists.  0, or -1 (err set: the rows
     * break the key, or a database failure). */
    int (*key_index)(zx_ws *w, ws_table *t, const char *const *keys, size_t nkeys, int build,
                     char *err, size_t errlen);
    /* Record one reject row, creating <table>__rejects (or adding its two
     * source columns) when needed.  0 stored, 1 skipped (a user-made
     * rejects table refuses it), or -1 database error (err set). */
    int (*reject_row)(zx_ws *w, const ws_reject *r, char *err, size_t errlen);
    /* The other zxd of a shared workspace (workspace.h zx_ws_notice_*);
     * NULL: none (SQLite). */
    int (*notice_changes)(zx_ws *w, const char *const *tables, size_t n, char *err,
                          size_t errlen);
    int (*notice_fd)(zx_ws *w);
    int (*notices)(zx_ws *w, int readable, zx_ws_notice_cb cb, void *ctx);
} ws_ops;

/* The common head of every backend handle. */
struct zx_ws {
    const ws_ops *ops;
    int in_txn;
    ws_table *tables;        /* the cache: see ws_get_table */
    /* per-append scratch, grown as needed */
    int32_t *map;            /* rowset column -> table column, -1 skip,
                                -2 not added, -3 needs one, -4 to _extra */
    uint64_t *rejn;          /* rowset column -> misfits */
    char **nomsg;            /* rowset column -> why it could not be added */
    uint64_t *xlast;         /* rowset column kept in _extra -> index of its
                                last cell in the current row */
    uint32_t *slot;          /* table column -> slot + 1 (0: not used) */
    uint8_t *used;
    uint32_t *list;          /* the slots' table columns */
    size_t rs_cap, tc_cap;
    zx_buf buf, raw, xbuf;
    char ts[ZX_TS_BUFSZ];
};

/* Initialise the common head (ops set, everything else zero). */
void ws_init(zx_ws *w, const ws_ops *ops);
/* Free the common head's scratch and cache (not w itself). */
void ws_fini(zx_ws *w);

/* The cached table, its columns loaded on first use (ncols == 0 when it
 * does not exist).  NULL on a database error or out of memory.  Owned by
 * w until ws_cache_drop. */
ws_table *ws_get_table(zx_ws *w, const char *name);
/* Forget every cached table (after a rollback: DDL may be undone). */
void ws_cache_drop(zx_ws *w);
/* Index of the column (w->ops->name_cmp), or -1. */
int64_t ws_find_col(const zx_ws *w, const ws_table *t, const char *name);
/* Names that differ only in what the database ignores (SQLite: ASCII
 * case), workspace_changes_names.c.  wc_stored_names: the column of each
 * frame column (src[c]; NULL: none, out[c] NULL too): out[c], malloc'ed
 * and freed by the caller, names an existing column of t or the column to
 * add; 0, or -1 out of memory (out all NULL).  wc_find_exact: the index of
 * t's column named exactly name (ops->name_exact), or -1.  wc_names_clash:
 * 1 when two of t's columns and rs's (those with map[c] == -3, or every
 * one when map is NULL) differ but the database sees one name, 0 when
 * not, -1 out of memory. */
int wc_stored_names(const zx_ws *w, const ws_table *t, const char *const *src, uint32_t n,
                    char **out);
int64_t wc_find_exact(const zx_ws *w, const ws_table *t, const char *name);
int wc_names_clash(const zx_ws *w, const ws_table *t, const zx_rowset *rs, const int32_t *map);
/* Add a column to the cache entry.  0, or -1 out of memory. */
int ws_table_add_col(zx_ws *w, ws_table *t, const char *name, const char *decl);

/* Record a reject (w->ops->reject_row): 0 stored, 1 skipped (a user-made
 * rejects table refused it), -1 database error (err set). */
int ws_reject_row(zx_ws *w, const ws_reject *r, char *err, size_t errlen);
/* Record row `row` of rs, which the table refused (why: the database's
 * words), as "row not inserted: <why>" with value_type "row" and the
 * row itself as raw_value (one JSON object of its fields, names as in
 * the batch), so that nothing of it is lost.  0, or -1 (err set). */
int ws_reject_refused_row(zx_ws *w, ws_table *t, const zx_ws_append *a, const zx_rowset *rs,
                          uint32_t row, const char *why, char *err, size_t errlen);

/* SQL text helpers: s as a double-quoted identifier (quotes doubled) /
 * as is.  0, or -1 out of memory. */
int ws_sql_ident(zx_buf *b, const char *s);
int ws_sql_str(zx_buf *b, const char *s);

/* 1 when the n bytes at s are valid UTF-8 without NUL. */
int ws_utf8_text(const unsigned char *s, size_t n);

/* The columns of every <table>__rejects, in order (names, and the kind
 * each backend declares: ts = timestamp, t = text). */
#define WS_REJECTS_NCOLS 10

#endif
