/*
 * dest_table.h — what the table destinations (dest_postgres.c,
 * dest_sqlite.c, dest_mysql.c) share beyond the value rules
 * (common/dcell.h): open's and begin's checks, the error prefix
 * ("postgres crm table public.customers: ..."), table names, the SQL
 * pieces PostgreSQL and SQLite write alike, the checks of write,
 * delete_keys and commit, and how a row's NULLs are counted.  Each
 * destination keeps only its dialect.
 *
 * Strings it returns are malloc'ed (the caller frees them); messages go
 * to err as dest.h says (at most errlen bytes, one line).
 *
 * It must never: talk to a database, or print a dsn.
 */
#ifndef ZX_SYNCS_DEST_TABLE_H
#define ZX_SYNCS_DEST_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "common/dcell.h"
#include "workers/destinations/dest.h"

#define ZX_DT_DEADLINE_MS 30000     /* a deadline_ms <= 0 means this */

/* 1 for the modes that write by key (upsert, mirror), else 0. */
int zx_dt_keyed(zx_sync_mode m);

/* "replace", "append", "upsert" or "mirror"; static, never NULL. */
const char *zx_dt_mode_name(zx_sync_mode m);

/* a->deadline_ms, or ZX_DT_DEADLINE_MS when it is <= 0. */
int64_t zx_dt_deadline_ms(const zx_dest_args *a);

/* open's checks for destination `kind` ("postgres"): a connection with a
 * name and a table given, the connection not read_only ("KIND connection
 * NAME is read_only: zx never writes to it") and, with need_dsn, a dsn.
 * 0, or -1 with err. */
int zx_dt_open_check(const char *kind, const zx_dest_args *a, int need_dsn, char *err,
                     size_t errlen);

/* Split a configured table name at its first '.': *schema gets what
 * stands before it (a copy of dflt, "" when NULL, when there is no dot),
 * *table the rest.  Both malloc'ed; the caller frees them, also after a
 * failure.  0, or -1 when out of memory. */
int zx_dt_split_name(const char *name, const char *dflt, char **schema, char **table);

/* "KIND CONN table SCHEMA.TABLE" (schema NULL: "... table TABLE"), the
 * prefix of every message of a destination; NULL when out of memory. */
char *zx_dt_label(const char *kind, const char *conn, const char *schema, const char *table);

/* "LABEL: <fmt ...>" into err (just the message when label is NULL);
 * returns -1. */
int zx_dt_fail(const char *label, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* name as a quoted identifier, "a""b" (PostgreSQL, SQLite); NULL when out
 * of memory. */
char *zx_dt_quote_ident(const char *name);

/* begin's checks of a run: it has columns, each named, upsert and mirror
 * have key columns, each key column is a column of the run, named once.
 * key[k] gets the index into run->cols of run->key_cols[k] (key has room
 * for run->nkey_cols).  0, or -1 with "LABEL: ..." in err. */
int zx_dt_check_run(const char *label, const zx_dest_run *run, size_t *key, char *err,
                    size_t errlen);

/* 1 when i is among key[0..nkeys), else 0. */
int zx_dt_is_key(const size_t *key, size_t nkeys, size_t i);

/* write's checks: inside a run (in_run), a batch of ncols columns.
 * delete_keys': inside a run, the run has key columns, a batch of nkeys
 * columns.  commit's: inside a run.  0, or -1 with "LABEL: ..." in err. */
int zx_dt_check_write(const char *label, int in_run, const zx_rowset *rs, size_t ncols,
                      char *err, size_t errlen);
int zx_dt_check_delete(const char *label, int in_run, const zx_rowset *keys, size_t nkeys,
                       char *err, size_t errlen);
int zx_dt_check_commit(const char *label, int in_run, char *err, size_t errlen);

/* A row's NULLs as stats.nulled counts them: every misfit once, and a
 * row left out because a key value is NULL (upsert, mirror, a key to
 * delete) once more, unless that key was a misfit (counted already).
 * Start with {0}; add each cell written, then add zx_dt_nulls_count to
 * stats.nulled; knull says the row is to be left out. */
typedef struct zx_dt_nulls {
    uint64_t misfits;
    int knull, kmisfit;
} zx_dt_nulls;

void zx_dt_nulls_add(zx_dt_nulls *n, int iskey, int isnull, int misfit);
uint64_t zx_dt_nulls_count(const zx_dt_nulls *n);

/* ---- SQL that PostgreSQL and SQLite write alike ----------------------- */

/* Append names[idx[i]] (names[i] when idx is NULL), i < n, separated by
 * ", ".  0 or -1 (out of memory). */
int zx_dt_sql_list(zx_buf *b, char *const *names, const size_t *idx, size_t n);

/* Append "CREATE TABLE IF NOT EXISTS QTABLE (q0 T0, q1 T1, PRIMARY KEY
 * (k0, k1))": qcols[i] typed type_of(&cols[i], scratch, size), key
 * columns followed by " NOT NULL" when key_not_null, no PRIMARY KEY when
 * nkeys is 0.  0 or -1 (out of memory). */
int zx_dt_sql_create(zx_buf *b, const char *qtable, const zx_dcol *cols, char *const *qcols,
                     size_t ncols, const size_t *key, size_t nkeys, int key_not_null,
                     const char *(*type_of)(const zx_dcol *c, char *buf, size_t n));

/* Append "DO UPDATE SET c = EXCLUDED.c, ..." for every column that is not
 * a key, or "DO NOTHING" when all are keys.  0 or -1 (out of memory). */
int zx_dt_sql_upsert_set(zx_buf *b, char *const *qcols, size_t ncols, const size_t *key,
                         size_t nkeys);

/* "MODE needs a primary key or unique index on exactly the key columns
 * (K) for ON CONFLICT, and the table has none: create one, e.g. FIX_HEAD
 * QTABLE FIX_TAIL (K)" into err, K the quoted key columns; returns -1. */
int zx_dt_fail_no_key_index(const char *label, zx_sync_mode mode, char *const *qcols,
                            const size_t *key, size_t nkeys, const char *fix_head,
                            const char *qtable, const char *fix_tail, char *err,
                            size_t errlen);

#endif
