/*
 * forget.c — a removed pipeline's state, from the supervisor's side:
 *   - sup_send_forget: once a removed pipeline's worker has stopped and its
 *     segment is detached, ask the writer (which owns the store and the
 *     workspace) to drop its positions and state (proto/chan.h FORGET,
 *     workers/writer/forget.h), so that a pipeline added again under the
 *     same name starts from scratch;
 *   - sup_pipe_resumed_check / sup_pipe_resumed_json: when a pipeline
 *     starts (zxd starts, a reload adds it) with positions or state stored
 *     before, `zxctl status` says so ("resumed from positions stored
 *     <time>"): a pipeline removed while zxd was down and added again, or
 *     whose state could not be dropped, never resumes silently.
 *
 * A job of the second floor (jobs.h): the child table calls it only
 * through its hooks (pipe_created, pipe_forgotten: main.c wires them).
 *
 * It must never: drop the state of a pipeline still configured (the name
 * is checked here and again by the writer), or hold a read transaction on
 * the store for longer than one lookup.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timefmt.h"
#include "proto/chan.h"
#include "store/store.h"
#include "supervisor/jobs.h"

void sup_send_forget(sup *s, const char *name)
{
    for (size_t i = 0; i < s->npipes; i++)
        if (!s->pipes[i]->removing && strcmp(s->pipes[i]->name, name) == 0)
            return; /* added again meanwhile: it is that pipeline's state now */
    if (s->conf && zx_conf_find(s->conf, name))
        return;
    child *c = &s->writer;
    if (c->chan < 0 || c->pid == 0) {
        zx_warn("event=state_drop_failed pipeline=%s message=\"the writer is not running: the "
                "state of the removed pipeline is kept; added again, it resumes from it "
                "(zxctl status says so)\"", name);
        return;
    }
    json_t *o = json_pack("{s:s}", "name", name);
    char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (!js || sup_chan_send(s, c, ZX_CHAN_FORGET, js, NULL, 0) < 0)
        zx_error("event=state_drop_failed pipeline=%s message=\"cannot ask the writer to drop "
                 "its state: it is kept\"", name);
    free(js);
    json_decref(o);
}

static int count_part(const char *part, const void *val, size_t len, void *ctx)
{
    (void)part;
    (void)val;
    (void)len;
    (*(size_t *)ctx)++;
    return 0;
}

void sup_pipe_resumed_check(sup *s, spipe *p)
{
    p->resumed_us = 0;
    p->resumed_parts = 0;
    zx_store *st = NULL;
    char err[256];
    if (zx_store_open(s->conf->data_dir, ZX_STORE_RDONLY, 0, &st, err, sizeof(err)) != 0)
        return; /* no store yet: nothing stored */
    zx_store_txn *t;
    if (zx_store_begin(st, 1, &t) == 0) {
        zx_position pos;
        if (zx_store_position_get(t, p->name, &pos) == 0) {
            p->resumed_us = pos.committed_us > 0 ? pos.committed_us : 1;
            zx_store_positions_each(t, p->name, count_part, &p->resumed_parts);
        }
        zx_store_abort(t);
    }
    zx_store_close(st);
    if (p->resumed_us) {
        char ts[ZX_TS_BUFSZ];
        zx_ts_format(p->resumed_us, ts);
        zx_info("event=resumed pipeline=%s stored_at=%s positions=%zu", p->name, ts,
                p->resumed_parts);
    }
}

json_t *sup_pipe_resumed_json(const spipe *p)
{
    if (!p->resumed_us)
        return json_null();
    char ts[ZX_TS_BUFSZ];
    zx_ts_format(p->resumed_us, ts);
    return json_pack("{s:s, s:I}", "stored_at", ts, "positions", (json_int_t)p->resumed_parts);
}
