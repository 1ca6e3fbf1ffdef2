/*
 * writer_notice.c — the other zxd of a shared workspace hear of this
 * one's commits, and this one of theirs: see writer_notice.h.
 *
 * It must never: tell of rows before their commit (NOTIFY is part of
 * the cycle's transaction), or tell the supervisor one event per
 * notification of a burst for the same table (one per table per poll).
 */
#include "workers/writer/writer_notice.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "conf/config.h"
#include "workers/writer/writer_int.h"

#define NOTICE_TABLES_MAX 256    /* distinct tables told per poll */

static int shared(const writer *w)
{
    return w->a->conf->ws_kind == ZX_WS_KIND_POSTGRES && w->a->conf->pg_shared;
}

int wr_notice_send(writer *w, char *err, size_t errlen)
{
    if (!shared(w) || !w->nap)
        return 0;
    const char **t = malloc(w->nap * sizeof(*t));
    if (!t) {
        snprintf(err, errlen, "workspace: out of memory");
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < w->nap; i++) {
        const applied *a = &w->ap[i];
        if (a->bad || a->skipped || (!a->rows && !a->rejects) || !a->table[0])
            continue;
        size_t k = 0;
        while (k < n && strcmp(t[k], a->table) != 0)
            k++;
        if (k == n)
            t[n++] = a->table;
    }
    int rc = zx_ws_notice_changes(w->ws, t, n, err, errlen);
    free(t);
    return rc;
}

int wr_notice_fd(writer *w)
{
    return shared(w) && w->ws ? zx_ws_notice_fd(w->ws) : -1;
}

typedef struct heard {
    char *tables[NOTICE_TABLES_MAX];
    size_t n;
    int any;                     /* a reconnect: any table */
} heard;

static void on_notice(void *ctx, const char *table)
{
    heard *h = ctx;
    if (!table) {
        h->any = 1;
        return;
    }
    for (size_t i = 0; i < h->n; i++)
        if (!strcmp(h->tables[i], table))
            return;
    if (h->n == NOTICE_TABLES_MAX) {
        h->any = 1; /* too many to name: any */
        return;
    }
    char *c = strdup(table);
    if (!c) {
        h->any = 1;
        return;
    }
    h->tables[h->n++] = c;
}

void wr_notice_poll(writer *w, int readable)
{
    if (!shared(w) || !w->ws)
        return;
    heard h = { .n = 0 };
    if (zx_ws_notices(w->ws, readable, on_notice, &h) < 0)
        zx_warn("event=workspace_listen_lost error=\"%s\"", zx_ws_errmsg(w->ws));
    if (h.any)
        wr_emit(w, json_pack("{s:s, s:b, s:s}", "event", "remote_commit", "any", 1, "message",
                             "listening to the other zxd again after a lost connection: "
                             "any table may have changed"));
    else
        for (size_t i = 0; i < h.n; i++) {
            char msg[160];
            snprintf(msg, sizeof(msg), "another zxd committed rows to %.100s", h.tables[i]);
            wr_emit(w, json_pack("{s:s, s:s, s:s}", "event", "remote_commit", "table",
                                 h.tables[i], "message", msg));
        }
    for (size_t i = 0; i < h.n; i++)
        free(h.tables[i]);
}
