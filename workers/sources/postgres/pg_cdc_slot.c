/*
 * pg_cdc_slot.c — what the CDC worker asks the server about its slot
 * before and while it makes it (pg_cdc_int.h): whether the slot it
 * streamed from is still there and usable, and, while CREATE_REPLICATION_SLOT
 * waits, which transactions it waits for.
 *
 * All on the worker's normal (non-replication) connection, with names as
 * parameters.  It must never change anything but the slot it is told to
 * drop, or name a password.
 */
#include "workers/sources/postgres/pg_cdc_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pgconn.h"
#include "common/util.h"

int pgcdc_slot_state(PGconn *c, const char *shown, const char *slot, char *err, size_t errlen)
{
    const char *pv[1] = { slot };
    /* wal_status exists from PostgreSQL 13 on: 'lost' is a slot whose WAL
     * was removed (max_slot_wal_keep_size), which can never stream again */
    PGresult *r = PQexecParams(c, "SELECT coalesce(to_jsonb(s)->>'wal_status', '') "
                               "FROM pg_replication_slots s WHERE slot_name = $1",
                               1, NULL, pv, NULL, NULL, 0);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
        return zx_pg_fail(c, r, shown, "reading pg_replication_slots", err, errlen);
    int st = PQntuples(r) == 0 ? PGCDC_SLOT_ABSENT
             : strcmp(PQgetvalue(r, 0, 0), "lost") == 0 ? PGCDC_SLOT_LOST : PGCDC_SLOT_OK;
    PQclear(r);
    return st;
}

int pgcdc_slot_drop(PGconn *c, const char *shown, const char *slot, char *err, size_t errlen)
{
    const char *pv[1] = { slot };
    PGresult *r = PQexecParams(c, "SELECT pg_drop_replication_slot(slot_name) FROM "
                               "pg_replication_slots WHERE slot_name = $1 AND NOT active",
                               1, NULL, pv, NULL, NULL, 0);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
        return zx_pg_fail(c, r, shown, "dropping the invalidated slot", err, errlen);
    PQclear(r);
    return 0;
}

int pgcdc_slot_blockers(PGconn *c, char *out, size_t outlen, int *pid)
{
    /* A logical slot's snapshot waits for every transaction that had an xid
     * when it was asked for (in any database of the server). */
    PGresult *r = PQexec(c, "SELECT pid, coalesce(datname, ''), coalesce(application_name, ''), "
                         "coalesce(host(client_addr), 'local'), coalesce(state, ''), "
                         "to_char(xact_start AT TIME ZONE 'UTC', "
                         "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
                         "extract(epoch FROM now() - xact_start)::bigint "
                         "FROM pg_stat_activity WHERE backend_xid IS NOT NULL "
                         "AND pid <> pg_backend_pid() ORDER BY xact_start LIMIT 4");
    *pid = 0;
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) == 0) {
        PQclear(r);
        snprintf(out, outlen, "transactions that were running when the slot was asked for");
        return 0;
    }
    int n = PQntuples(r);
    *pid = atoi(PQgetvalue(r, 0, 0));
    size_t o = 0;
    for (int i = 0; i < n && o < outlen; i++) {
        int w = snprintf(out + o, outlen - o,
                         "%stransaction of pid %s (database %s, application '%s', client %s, "
                         "%s, open since %s: %s s)", i ? "; " : "", PQgetvalue(r, i, 0),
                         PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), PQgetvalue(r, i, 3),
                         PQgetvalue(r, i, 4), PQgetvalue(r, i, 5), PQgetvalue(r, i, 6));
        if (w < 0)
            break;
        o += (size_t)w;
    }
    PQclear(r);
    return n;
}
