/*
 * forget.c — drop a removed pipeline's state (forget.h).
 */
#include "workers/writer/forget.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

void zx_forget_add(zx_forget *f, const char *json)
{
    json_error_t je;
    json_t *o = json_loads(json, 0, &je);
    const char *name = o ? json_string_value(json_object_get(o, "name")) : NULL;
    if (!name || !*name || strlen(name) >= sizeof(f->q[0].name)) {
        zx_error("event=bad_forget error=\"%s\"", o ? "no or too long pipeline name" : je.text);
    } else if (f->n >= ZX_FORGET_MAX) {
        zx_error("event=state_drop_failed pipeline=%s message=\"%d drops already waiting; "
                 "its positions are kept\"", name, ZX_FORGET_MAX);
    } else {
        zx_forget_req *r = &f->q[f->n++];
        memset(r, 0, sizeof(*r));
        snprintf(r->name, sizeof(r->name), "%s", name);
    }
    json_decref(o);
}

/* Drop name's state in the workspace: its positions, its parked frames
 * and its forward journal, in one transaction.  0, or -1 with err
 * (nothing dropped). */
static int drop_workspace(zx_ws *ws, const char *name, char *err, size_t errlen)
{
    char why[300];
    if (zx_ws_begin(ws, why, sizeof(why)) < 0)
        return zx_seterr(err, errlen, "workspace: %s", why);
    if (zx_ws_positions_drop(ws, name) < 0 || zx_ws_parked_drop(ws, name) < 0 ||
        zx_ws_forward_drop(ws, name) < 0) {
        zx_seterr(err, errlen, "workspace: %s", zx_ws_errmsg(ws));
        zx_ws_rollback(ws);
        return -1;
    }
    if (zx_ws_commit(ws, why, sizeof(why)) < 0)
        return zx_seterr(err, errlen, "workspace: %s", why);
    return 0;
}

/* Drop name's state: the workspace's positions, parked frames and
 * forward journal, then the store's.  0, or -1 with err. */
static int drop_state(zx_store *st, zx_ws *ws, const char *name, char *err, size_t errlen)
{
    if (drop_workspace(ws, name, err, errlen) < 0)
        return -1;
    for (int attempt = 0; attempt < 8; attempt++) {
        zx_store_txn *t;
        int rc = zx_store_begin(st, 0, &t);
        if (rc == 0) {
            rc = zx_store_pipeline_drop(t, name);
            rc = rc ? (zx_store_abort(t), rc) : zx_store_commit(t);
        }
        if (rc == ZX_STORE_MAP_FULL)
            continue;
        if (rc)
            return zx_seterr(err, errlen, "store: %s", zx_store_strerror(rc));
        return 0;
    }
    return zx_seterr(err, errlen, "store: map full");
}

static void tell(zx_forget_emit_fn emit, void *ctx, const char *event, const char *name,
                 const char *msg)
{
    emit(ctx, json_pack("{s:s, s:s, s:s}", "event", event, "pipeline", name, "message", msg));
}

size_t zx_forget_run(zx_forget *f, zx_store *st, zx_ws *ws, zx_forget_state_fn state,
                     zx_forget_emit_fn emit, void *ctx)
{
    int64_t now = zx_mono_ms();
    for (size_t i = 0; i < f->n;) {
        zx_forget_req *r = &f->q[i];
        int s = state(ctx, r->name);
        if (s == 2 || r->next_ms > now) {
            i++;
            continue; /* its last frames are still being applied, or later */
        }
        char msg[600], q[700];
        if (s == 1) {
            snprintf(msg, sizeof(msg), "pipeline %s was added again before its state was "
                     "dropped: it goes on from its stored positions", r->name);
            zx_warn("event=state_kept pipeline=%s message=%s", r->name,
                    zx_log_quote(msg, q, sizeof(q)));
            tell(emit, ctx, "state_kept", r->name, msg);
        } else {
            char err[400];
            if (drop_state(st, ws, r->name, err, sizeof(err)) < 0) {
                if (++r->tries < ZX_FORGET_TRIES) {
                    r->next_ms = now + 1000;
                    i++;
                    continue;
                }
                snprintf(msg, sizeof(msg), "the state of removed pipeline %s could not be "
                         "dropped (%s): added again under that name, it resumes from its "
                         "old positions (zxctl status says so)", r->name, err);
                zx_error("event=state_drop_failed pipeline=%s message=%s", r->name,
                         zx_log_quote(msg, q, sizeof(q)));
                tell(emit, ctx, "state_drop_failed", r->name, msg);
            } else {
                snprintf(msg, sizeof(msg), "positions and state of removed pipeline %s "
                         "dropped: added again, it starts from scratch", r->name);
                zx_info("event=state_dropped pipeline=%s message=%s", r->name,
                        zx_log_quote(msg, q, sizeof(q)));
                tell(emit, ctx, "state_dropped", r->name, msg);
            }
        }
        memmove(r, r + 1, (f->n - i - 1) * sizeof(*r));
        f->n--;
    }
    return f->n;
}
