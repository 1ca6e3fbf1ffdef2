/*
 * workspace_lease.h — leases in a shared Postgres workspace
 * (workspace.postgres.shared): table <schema>._zx_leases(name TEXT PRIMARY
 * KEY, holder TEXT, holder_desc TEXT, taken_at, renewed_at, expires_at
 * TIMESTAMPTZ), one row per thing that runs on one zxd at a time (a CDC
 * pipeline's upstream reader, "pipeline:<name>"; a reverse sync's runs,
 * "sync:<name>").  The holder is the zxd's instance id
 * (common/instance.h), the one the handle was opened with.  Every time
 * comparison is made by the database's clock, never the hosts'.
 *
 * Only for a Postgres handle opened with an instance (shared); on any
 * other handle each function answers -1 ("leases need a shared Postgres
 * workspace").  Used by workers/writer/writer_lease.c.
 */
#ifndef ZX_WRITER_WORKSPACE_LEASE_H
#define ZX_WRITER_WORKSPACE_LEASE_H

#include <stdint.h>

#include "workers/writer/workspace.h"

/* What a take or a read found. */
typedef struct zx_ws_lease {
    int held;                /* 1: this zxd holds it now */
    int fresh;               /* take only: 1 when this take began a new
                                holding (nobody held it, it had expired,
                                or another held it), 0 when it renewed a
                                holding that never lapsed */
    int64_t valid_ms;        /* held: what is left of it by the database's
                                clock at the end of the statement */
    char holder[40];         /* the holder's instance id ("" none) */
    char holder_desc[600];   /* "host H, zxd pid P, data_dir D" */
    char taken_at[40];       /* RFC 3339-ish text of the database */
    char expires_at[40];
} zx_ws_lease;

/* Take lease `name` for seconds, or renew it, in one statement outside
 * any transaction (INSERT ... ON CONFLICT DO UPDATE ... WHERE the holder
 * is this zxd or the lease has expired), waiting at most lock_ms for a
 * row another session has locked.  It also sets the session's
 * idle_in_transaction_session_timeout to the lease (at least 10 s): a
 * writer paused inside a transaction, holding rows another zxd needs,
 * has that transaction ended by the server.  desc: holder_desc.  *out filled: held
 * (with fresh and valid_ms), or the other holder's row.  1 held, 0 held by
 * another, -1 database error (zx_ws_errmsg; a lost connection is retried
 * by the next call, which reconnects). */
int zx_ws_lease_take(zx_ws *w, const char *name, const char *desc, uint32_t seconds,
                     uint32_t lock_ms, zx_ws_lease *out);

/* Who holds lease name (read only).  1 a row was found (*out: held says
 * whether it is this zxd's and not expired), 0 no row, -1 error. */
int zx_ws_lease_read(zx_ws *w, const char *name, zx_ws_lease *out);

/* Inside the open transaction: whether this zxd still holds lease name
 * (and it has not expired by the database's clock now); when it does, its
 * row stays locked (FOR SHARE) until the transaction ends, so that no other
 * zxd can take it over before this transaction has committed.  1 held, 0
 * not (*out has the row, or holder "" when none), -1 database error. */
int zx_ws_lease_check(zx_ws *w, const char *name, zx_ws_lease *out);

/* Give lease name up (delete its row if this zxd holds it), outside any
 * transaction.  0 (also when it was not held), -1 error. */
int zx_ws_lease_release(zx_ws *w, const char *name);

#endif
