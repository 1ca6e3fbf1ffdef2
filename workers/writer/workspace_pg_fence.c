/*
 * workspace_pg_fence.c — the compare-and-set of an upstream position in a
 * shared Postgres workspace (workspace.h, zx_ws_position_lock): the row of
 * (pipeline, part) in _zx_positions is made to exist and locked for the
 * rest of the writer's transaction, and its value returned, so that the
 * writer (writer_fence.c) applies a frame only when the position it
 * started from is the one stored, and another zxd doing the same for the
 * same part waits for this transaction to end.
 *
 * Why two statements: SELECT ... FOR UPDATE locks nothing when the row is
 * missing, and two zxd would then both see "none" and both insert rows.
 * INSERT ... ON CONFLICT DO NOTHING waits for a concurrent insert of the
 * same key to end, after which the row exists and FOR UPDATE reads the
 * value last committed (READ COMMITTED re-reads the newest version).
 *
 * It must never: write a value (the writer does, with zx_ws_position_set,
 * when the frame passes), or keep the lock beyond the transaction.
 */
#include "workers/writer/workspace_pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int zx_wsp_position_lock(zx_ws *ws, const char *pipeline, const char *part, void **val,
                         size_t *len)
{
    wsp *w = WSP(ws);
    char q[512];
    *val = NULL;
    *len = 0;
    if (!w->conn || w->broken) {
        w->broken = 1;
        return -1;
    }
    snprintf(q, sizeof(q), "INSERT INTO %s.\"_zx_positions\"(pipeline, part, value,"
             " committed_at) VALUES ($1, $2, NULL, NULL) ON CONFLICT (pipeline, part) DO"
             " NOTHING", w->qschema);
    const char *pv[2] = { pipeline, part };
    PGresult *r = zx_wsp_exec(w, q, 2, pv);
    if (!r)
        return -1;
    PQclear(r);
    snprintf(q, sizeof(q), "SELECT value FROM %s.\"_zx_positions\" WHERE pipeline = $1 AND"
             " part = $2 FOR UPDATE", w->qschema);
    /* the value as bytes: binary results */
    r = PQexecParams(w->conn, q, 2, NULL, pv, NULL, NULL, 1);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) {
        zx_wsp_fail(w, r);
        PQclear(r);
        return -1;
    }
    int rc = 0;
    if (PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)) {
        size_t n = (size_t)PQgetlength(r, 0, 0);
        void *c = malloc(n ? n : 1);
        if (!c) {
            snprintf(w->msg, sizeof(w->msg), "out of memory reading position %s of %s", part,
                     pipeline);
            rc = -1;
        } else {
            if (n)
                memcpy(c, PQgetvalue(r, 0, 0), n);
            *val = c;
            *len = n;
        }
    }
    PQclear(r);
    return rc;
}
