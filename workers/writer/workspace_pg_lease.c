/*
 * workspace_pg_lease.c — the leases of a shared Postgres workspace
 * (workspace_lease.h): take or renew in one statement, read, check inside
 * the commit transaction, release.  The database's clock (now(),
 * clock_timestamp()) decides every expiry; the hosts' clocks never do.
 *
 * It must never: take a lease another zxd holds and that has not expired,
 * or leave a transaction of its own open.
 */
#include "workers/writer/workspace_lease.h"
#include "workers/writer/workspace_pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* The Postgres handle of a shared workspace, or NULL. */
static wsp *shared_pg(zx_ws *ws)
{
    if (!ws || strcmp(zx_ws_backend(ws), "postgres") != 0)
        return NULL;
    wsp *w = WSP(ws);
    if (!w->instance) {
        snprintf(w->msg, sizeof(w->msg), "leases need a shared Postgres workspace "
                 "(workspace.postgres.shared: true)");
        return NULL;
    }
    return w;
}

static void copy_col(char *dst, size_t cap, const PGresult *r, int col)
{
    snprintf(dst, cap, "%s", PQgetisnull(r, 0, col) ? "" : PQgetvalue(r, 0, col));
}

/* Columns of SELECT_ROW: holder, holder_desc, taken_at, expires_at, and
 * whether it is ours and running. */
#define SELECT_ROW                                                                      \
    "SELECT holder, holder_desc, to_char(taken_at AT TIME ZONE 'UTC',"               \
    " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), to_char(expires_at AT TIME ZONE 'UTC',"     \
    " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), (holder = $2 AND expires_at > clock_timestamp())" \
    " FROM %s.\"_zx_leases\" WHERE name = $1"

static void fill_row(zx_ws_lease *out, const PGresult *r)
{
    copy_col(out->holder, sizeof(out->holder), r, 0);
    copy_col(out->holder_desc, sizeof(out->holder_desc), r, 1);
    copy_col(out->taken_at, sizeof(out->taken_at), r, 2);
    copy_col(out->expires_at, sizeof(out->expires_at), r, 3);
    out->held = !PQgetisnull(r, 0, 4) && PQgetvalue(r, 0, 4)[0] == 't';
}

int zx_ws_lease_read(zx_ws *ws, const char *name, zx_ws_lease *out)
{
    memset(out, 0, sizeof(*out));
    wsp *w = shared_pg(ws);
    if (!w)
        return -1;
    char q[700];
    snprintf(q, sizeof(q), SELECT_ROW, w->qschema);
    const char *pv[2] = { name, w->instance };
    PGresult *r = zx_wsp_exec(w, q, 2, pv);
    if (!r)
        return -1;
    int found = PQntuples(r) == 1;
    if (found)
        fill_row(out, r);
    PQclear(r);
    return found;
}

int zx_ws_lease_check(zx_ws *ws, const char *name, zx_ws_lease *out)
{
    memset(out, 0, sizeof(*out));
    wsp *w = shared_pg(ws);
    if (!w)
        return -1;
    /* FOR SHARE: a take by another zxd (an UPDATE of the row) waits for
     * this transaction, so a holder that passes this check commits before
     * anyone can take over */
    char q[800];
    snprintf(q, sizeof(q), SELECT_ROW " FOR SHARE", w->qschema);
    const char *pv[2] = { name, w->instance };
    PGresult *r = zx_wsp_exec(w, q, 2, pv);
    if (!r)
        return -1;
    if (PQntuples(r) == 1)
        fill_row(out, r);
    PQclear(r);
    return out->held;
}

int zx_ws_lease_take(zx_ws *ws, const char *name, const char *desc, uint32_t seconds,
                     uint32_t lock_ms, zx_ws_lease *out)
{
    memset(out, 0, sizeof(*out));
    wsp *w = shared_pg(ws);
    if (!w)
        return -1;
    char err[256];
    /* zx_ws_begin reconnects a lost connection (with its backoff) */
    if (zx_ws_begin(ws, err, sizeof(err)) < 0)
        return -1;
    char q[2400], secs[16], lock[160];
    snprintf(secs, sizeof(secs), "%u", seconds);
    /* a lock_timeout for this take; and for the session: a transaction
     * left open longer than the lease (this writer paused inside a
     * commit, its lease row or mirror rows locked) is ended by the
     * server, so that the zxd taking over is not held up by it */
    snprintf(lock, sizeof(lock), "SET LOCAL lock_timeout = %u; "
             "SET idle_in_transaction_session_timeout = %u", lock_ms ? lock_ms : 1,
             (seconds < 10 ? 10 : seconds) * 1000);
    /* taken_at stays while the same holder renews a lease that never
     * lapsed; fresh says whether this take began a new holding */
    snprintf(q, sizeof(q),
             "INSERT INTO %s.\"_zx_leases\" AS l(name, holder, holder_desc, taken_at,"
             " renewed_at, expires_at) VALUES ($1, $2, $3, now(), now(),"
             " now() + make_interval(secs => $4::int)) ON CONFLICT (name) DO UPDATE SET"
             " holder = excluded.holder, holder_desc = excluded.holder_desc,"
             " taken_at = CASE WHEN l.holder = excluded.holder AND l.expires_at >= now()"
             " THEN l.taken_at ELSE now() END, renewed_at = now(),"
             " expires_at = excluded.expires_at"
             " WHERE l.holder = excluded.holder OR l.expires_at < now()"
             " RETURNING (taken_at = now()),"
             " (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint,"
             " to_char(taken_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
             " to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
             w->qschema);
    const char *pv[4] = { name, w->instance, desc, secs };
    PGresult *r = zx_wsp_run(w, lock) < 0 ? NULL : zx_wsp_exec(w, q, 4, pv);
    int rc = -1;
    if (r && PQntuples(r) == 1) {
        out->held = 1;
        out->fresh = PQgetvalue(r, 0, 0)[0] == 't';
        out->valid_ms = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
        snprintf(out->holder, sizeof(out->holder), "%s", w->instance);
        snprintf(out->holder_desc, sizeof(out->holder_desc), "%s", desc);
        copy_col(out->taken_at, sizeof(out->taken_at), r, 2);
        copy_col(out->expires_at, sizeof(out->expires_at), r, 3);
        rc = 1;
    } else if (r) {
        PQclear(r);
        /* another holds it: who, for status */
        char s[700];
        snprintf(s, sizeof(s), SELECT_ROW, w->qschema);
        r = zx_wsp_exec(w, s, 2, pv);
        if (r && PQntuples(r) == 1)
            fill_row(out, r);
        out->held = 0;
        rc = r ? 0 : -1;
    } else if (!strcmp(w->sqlstate, "55P03")) {
        /* lock_timeout: the holder is committing (or paused inside a
         * commit): not ours now */
        rc = 0;
        snprintf(out->holder_desc, sizeof(out->holder_desc), "a zxd committing under it");
    }
    PQclear(r);
    if (rc < 0 || zx_ws_commit(ws, err, sizeof(err)) < 0) {
        if (ws->in_txn)
            zx_ws_rollback(ws);
        if (rc == 0) /* a lock timeout aborted the transaction: not an error */
            return 0;
        return -1;
    }
    return rc;
}

int zx_ws_lease_release(zx_ws *ws, const char *name)
{
    wsp *w = shared_pg(ws);
    if (!w || !w->conn || w->broken)
        return -1;
    char q[300];
    snprintf(q, sizeof(q), "DELETE FROM %s.\"_zx_leases\" WHERE name = $1 AND holder = $2",
             w->qschema);
    const char *pv[2] = { name, w->instance };
    PGresult *r = zx_wsp_exec(w, q, 2, pv);
    PQclear(r);
    return r ? 0 : -1;
}
