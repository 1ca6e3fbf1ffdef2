/*
 * workspace_pg_notice.c — the commits of the other zxd of a shared
 * Postgres workspace (workspace.postgres.shared), heard through
 * LISTEN/NOTIFY on the writer's own connection: see workspace.h
 * (zx_ws_notice_changes, zx_ws_notice_fd, zx_ws_notices).
 *
 * The channel is "zx_changes_" and the schema's lock key in hex (one
 * channel per workspace schema of the database); a notification's payload
 * is one table's name.  NOTIFY is transactional: the others hear of rows
 * once they are committed, never of a transaction rolled back.
 *
 * It must never: read the connection inside a transaction (libpq keeps a
 * notification that comes with a statement's result: it is taken after),
 * or lose the fact that notifications may have been missed (a reconnect:
 * the first zx_ws_notices after it says "any table").
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "workers/writer/workspace_pg_int.h"

static void channel(const wsp *w, char out[32])
{
    snprintf(out, 32, "zx_changes_%08" PRIx32, (uint32_t)w->lock_key);
}

void zx_wsp_notice_listen(wsp *w)
{
    if (!w->instance)
        return;
    char ch[32], q[64];
    channel(w, ch);
    snprintf(q, sizeof(q), "LISTEN %s", ch);
    int again = w->listened;
    w->listening = 0;
    if (zx_wsp_run(w, q) < 0) {
        /* `on: change` syncs then hear of this zxd's commits only */
        zx_warn("event=workspace_listen_failed channel=%s error=\"%s\"", ch, w->msg);
        return;
    }
    w->listening = w->listened = 1;
    w->notice_gap = again; /* what the others committed meanwhile is unknown */
}

int zx_wsp_notice_changes(zx_ws *ws, const char *const *tables, size_t n, char *err,
                          size_t errlen)
{
    wsp *w = WSP(ws);
    if (!w->instance || !n)
        return 0;
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_string(tables[i])); /* NULL (not UTF-8): left out */
    char *js = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    if (!js)
        return zx_seterr(err, errlen, "workspace: out of memory");
    char ch[32];
    channel(w, ch);
    const char *pv[2] = { ch, js };
    PGresult *r = zx_wsp_exec(w, "SELECT pg_notify($1, t) FROM json_array_elements_text($2::json) t",
                              2, pv);
    free(js);
    if (!r)
        return zx_seterr(err, errlen, "workspace: notify: %s", w->msg);
    PQclear(r);
    return 0;
}

int zx_wsp_notice_fd(zx_ws *ws)
{
    wsp *w = WSP(ws);
    return w->listening && w->conn && !w->broken ? PQsocket(w->conn) : -1;
}

int zx_wsp_notices(zx_ws *ws, int readable, zx_ws_notice_cb cb, void *ctx)
{
    wsp *w = WSP(ws);
    if (!w->listening || !w->conn || w->broken)
        return 0;
    int n = 0;
    if (w->notice_gap) {
        w->notice_gap = 0;
        cb(ctx, NULL);
        n++;
    }
    if (readable && !ws->in_txn && PQtransactionStatus(w->conn) == PQTRANS_IDLE &&
        !PQconsumeInput(w->conn)) {
        zx_wsp_fail(w, NULL); /* the next begin reconnects (and listens again) */
        return -1;
    }
    char ch[32];
    channel(w, ch);
    int self = PQbackendPID(w->conn);
    PGnotify *nt;
    while ((nt = PQnotifies(w->conn)) != NULL) {
        if (nt->be_pid != self && !strcmp(nt->relname, ch) && nt->extra && nt->extra[0]) {
            cb(ctx, nt->extra);
            n++;
        }
        PQfreemem(nt);
    }
    return n;
}
