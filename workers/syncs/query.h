/*
 * query.h — a reverse sync's SELECT, run on the workspace with its
 * author's rights (DESIGN.md §6), read in batches.
 *
 * The database enforces the policy, not a parser of SQL:
 *   - SQLite (query_sqlite.c): a read-only connection (SQLITE_OPEN_READONLY)
 *     whose authorizer allows reading only the author's tables and denies
 *     every write, PRAGMA, ATTACH and side-effect function; the statement
 *     must be exactly one (whatever follows it must be empty);
 *   - PostgreSQL (query_pg.c): a login role per author, zx_author_<name>,
 *     made (and kept in step with the author's tables: SELECT on those,
 *     nothing else) by the workspace's own role, then a second connection
 *     as that role, in a REPEATABLE READ READ ONLY transaction, the query
 *     through the extended protocol (one statement only) as a cursor.
 * Both read one consistent snapshot of the workspace.
 *
 * Values arrive as dest.h "The rows" says (TIMESTAMP cells for timestamp
 * columns, DATE and DECIMAL as text, JSON as JSON...).
 *
 * Types.  On PostgreSQL a column's type is the one the server declares
 * for it (PQftype), known before the first row.  On SQLite a declared
 * type is a hint (any column may hold any value) and an expression
 * (coalesce(x, 0), CASE ...) has none: the type is decided from the
 * declared one and from every value of the result (coltype.h: widened
 * int → real → text as the values need, never nulling one), and is final
 * only once the result has been read to its end (zx_query_types_known).
 * A value's cell type never depends on that decision: an integer is a
 * ZX_T_INT whatever its column ends up as.
 *
 * Errors: one line a person can act on, naming the sync ("sync
 * crm_customers: the query reads table orders, which author alice may not
 * read (alice's tables: customers)").
 */
#ifndef ZX_SYNCS_QUERY_H
#define ZX_SYNCS_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"
#include "common/rowset.h"
#include "conf/config.h"

typedef struct zx_query zx_query;

/* Run `sql` on conf's workspace as author `author` for sync `sync` (a name
 * for messages).  timeout_ms bounds connecting and each wait for the
 * server.  On success *out holds the open query, positioned before the
 * first row; its columns are known.  0, or -1 with err set (nothing
 * held). */
int zx_query_open(const zx_conf *conf, const char *sync, const zx_conf_author *author,
                  const char *sql, int timeout_ms, zx_query **out, char *err, size_t errlen);

/* The result's columns: *n of them, valid until zx_query_close.  Their
 * types are final once zx_query_types_known says so; before, they are
 * those of the rows read so far (a caller that must know the final types
 * before it sends anything keeps the rows until the end). */
const zx_dcol *zx_query_columns(const zx_query *q, size_t *n);

/* 1 when the columns' types can no longer change (PostgreSQL: always;
 * SQLite: once zx_query_next has returned 0), else 0. */
int zx_query_types_known(const zx_query *q);

/* Reset rs and fill it with up to max rows (columns exactly the result's,
 * in order, even when no row comes).  Returns the rows read (0: the end),
 * or -1 with err set. */
int64_t zx_query_next(zx_query *q, zx_rowset *rs, size_t max, char *err, size_t errlen);

/* End the transaction, disconnect, free.  NULL is a no-op. */
void zx_query_close(zx_query *q);

/* query_common.c: shared by both backends. */
/* Add every result column to rs (reset first) in order.  0 or -1 (ENOMEM). */
int zx_query_rs_columns(zx_rowset *rs, const zx_dcol *cols, size_t n);
/* err = "the query's result has two columns named X: give one an alias"
 * and -1 when two of cols have the same name, else 0. */
int zx_query_unique_names(const zx_dcol *cols, size_t n, const char *sync, char *err,
                          size_t errlen);

/* The backends (query_sqlite.c, query_pg.c), behind the functions above
 * (query_common.c picks one by the workspace's kind). */
int zx_qsq_open(const zx_conf *conf, const char *sync, const zx_conf_author *author,
                const char *sql, int timeout_ms, void **out, char *err, size_t errlen);
const zx_dcol *zx_qsq_columns(const void *q, size_t *n);
/* Per column (zx_qsq_columns' order): 1 when it has no declared type (an
 * expression: its type comes from its values), else 0. */
const unsigned char *zx_qsq_undeclared(const void *q);
int64_t zx_qsq_next(void *q, zx_rowset *rs, size_t max, char *err, size_t errlen);
void zx_qsq_close(void *q);
int zx_qpg_open(const zx_conf *conf, const char *sync, const zx_conf_author *author,
                const char *sql, int timeout_ms, void **out, char *err, size_t errlen);
const zx_dcol *zx_qpg_columns(const void *q, size_t *n);
int64_t zx_qpg_next(void *q, zx_rowset *rs, size_t max, char *err, size_t errlen);
void zx_qpg_close(void *q);

#endif
