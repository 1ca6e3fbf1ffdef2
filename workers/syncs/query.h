/*
 * query.h — a reverse sync's SELECT, run on the workspace with its
 * author's rights (docs/architecture.md §8.1), read in batches.
 *
 * The database enforces the policy, not a parser of SQL:
 *   - SQLite (query_sqlite.c): a read-only connection (SQLITE_OPEN_READONLY)
 *     whose authorizer allows reading only the author's tables (and the
 *     read-only table-valued functions json_each and json_tree) and denies
 *     every write, PRAGMA, ATTACH and side-effect function, naming the
 *     refused action and its object; the statement must be exactly one
 *     (whatever follows it must be empty);
 *   - PostgreSQL (query_pg.c): a login role per author, of that author
 *     alone (author_role.h), made (and kept in step with the author's
 *     tables: SELECT on those, nothing else) by the workspace's own role,
 *     which needs CREATEROLE but not superuser, then a second connection
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
 *
 * Limits (zx_query_limits): the query has a deadline, from zx_query_open
 * to its last row, and a stop (the worker's SIGTERM flag, read through a
 * callback); whichever comes first ends it ON THE SERVER before the call
 * returns, never by only closing the client's side:
 *   - PostgreSQL: every wait for the server is a poll() of at most 200 ms
 *     (a signal wakes it at once) that looks at both; then PQcancel, up to
 *     3 s for the statement to end, else pg_terminate_backend of its
 *     backend from a second connection as the same role.  The session
 *     also bounds itself should the worker die outright (SIGKILL):
 *     statement_timeout and idle_in_transaction_session_timeout = the
 *     deadline, TCP keepalives, and client_connection_check_interval (PG
 *     14+) so that a backend whose client vanished notices within seconds;
 *   - SQLite: a progress handler interrupts the statement.
 * The message then names the option (query_timeout) or the stop.
 */
#ifndef ZX_SYNCS_QUERY_H
#define ZX_SYNCS_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"
#include "common/rowset.h"
#include "conf/config.h"

typedef struct zx_query zx_query;

/* What bounds a query.  Copied by zx_query_open; ctx must outlive the
 * query. */
typedef struct zx_query_limits {
    int connect_timeout_ms;     /* connecting (and the author's role set-up) */
    uint32_t query_timeout_ms;  /* from zx_query_open to the last row read:
                                   past it the query is cancelled (0: 1 h) */
    int (*stopping)(void *ctx); /* nonzero: stop now (NULL: never); called
                                   from the waits and SQLite's progress
                                   handler, so it must be cheap */
    void *ctx;
} zx_query_limits;

/* Run `sql` on conf's workspace as author `author` for sync `sync` (a name
 * for messages), within lim.  On success *out holds the open query,
 * positioned before the first row; its columns are known.  0, or -1 with
 * err set (nothing held; a query that was cut by lim is already cancelled
 * on the server). */
int zx_query_open(const zx_conf *conf, const char *sync, const zx_conf_author *author,
                  const char *sql, const zx_query_limits *lim, zx_query **out, char *err,
                  size_t errlen);

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
 * or -1 with err set (past the deadline or stopped: the query is cancelled
 * on the server first). */
int64_t zx_query_next(zx_query *q, zx_rowset *rs, size_t max, char *err, size_t errlen);

/* The planner's estimate of the result's rows (PostgreSQL: EXPLAIN
 * (FORMAT JSON) of the query in its own read-only transaction), or -1
 * when unknown (SQLite: always).  For progress only: never exact. */
int64_t zx_query_estimate(const zx_query *q);

/* End the transaction, disconnect, free.  NULL is a no-op. */
void zx_query_close(zx_query *q);

/* query_common.c: shared by both backends. */
/* Add every result column to rs (reset first) in order.  0 or -1 (ENOMEM). */
int zx_query_rs_columns(zx_rowset *rs, const zx_dcol *cols, size_t n);
/* err = "the query's result has two columns named X: give one an alias"
 * and -1 when two of cols have the same name, else 0. */
int zx_query_unique_names(const zx_dcol *cols, size_t n, const char *sync, char *err,
                          size_t errlen);
/* Why a query was cut short (the backends' messages say it alike). */
typedef enum { ZX_QUERY_RAN = 0, ZX_QUERY_TIMED_OUT, ZX_QUERY_STOPPED } zx_query_cut;
/* err = the message of a query cut for why (ZX_QUERY_TIMED_OUT: naming
 * query_timeout and its value timeout_ms; ZX_QUERY_STOPPED: the stop);
 * how says how it ended on the server ("cancelled"...).  Returns -1. */
int zx_query_cut_msg(zx_query_cut why, const char *sync, uint32_t timeout_ms, const char *how,
                     char *err, size_t errlen);
/* The deadline (zx_mono_ms clock) of a query opened now under lim. */
int64_t zx_query_deadline(const zx_query_limits *lim);

/* The backends (query_sqlite.c, query_pg.c), behind the functions above
 * (query_common.c picks one by the workspace's kind). */
int zx_qsq_open(const zx_conf *conf, const char *sync, const zx_conf_author *author,
                const char *sql, const zx_query_limits *lim, void **out, char *err,
                size_t errlen);
const zx_dcol *zx_qsq_columns(const void *q, size_t *n);
/* Per column (zx_qsq_columns' order): 1 when it has no declared type (an
 * expression: its type comes from its values), else 0. */
const unsigned char *zx_qsq_undeclared(const void *q);
int64_t zx_qsq_next(void *q, zx_rowset *rs, size_t max, char *err, size_t errlen);
void zx_qsq_close(void *q);
int zx_qpg_open(const zx_conf *conf, const char *sync, const zx_conf_author *author,
                const char *sql, const zx_query_limits *lim, void **out, char *err,
                size_t errlen);
const zx_dcol *zx_qpg_columns(const void *q, size_t *n);
int64_t zx_qpg_estimate(const void *q);
int64_t zx_qpg_next(void *q, zx_rowset *rs, size_t max, char *err, size_t errlen);
void zx_qpg_close(void *q);

#endif
