/*
 * syncs_api.c — the gateway's sync API (ZX_CHAN_API, proto/chan.h): a run
 * asked for with an API token (orchestrator or agent), a run's record,
 * and the read routes any token may call (status, lineage, metrics; a
 * token of role `status` may call only those).
 */
#include <errno.h>
#include <stddef.h>
#include <event2/bufferevent.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cron.h"
#include "common/log.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "conf/lineage.h"
#include "proto/chan.h"
#include "store/store.h"
#include "supervisor/control.h"
#include "supervisor/metrics.h"
#include "supervisor/syncs_int.h"
#include "workers/sources/source.h"

int sup_sync_api_run(sup *s, const char *sync, const zx_conf_apitoken *tok, unsigned flags,
                     uint64_t *id, int *http, char *msg, size_t msglen)
{
    spipe *p = syncs_pipe(s, sync);
    if (!p) {
        *http = 404;
        snprintf(msg, msglen, "no reverse sync named %.63s", sync);
        return -1;
    }
    int allowed = tok->nsyncs == 0;
    for (size_t i = 0; i < tok->nsyncs; i++)
        allowed |= !strcmp(tok->syncs[i], sync);
    if (!allowed) {
        *http = 403;
        snprintf(msg, msglen, "token %s may not run sync %.63s", tok->name, sync);
        return -1;
    }
    int agent = !strcmp(tok->role, "agent");
    char trig[96];
    snprintf(trig, sizeof(trig), "%s %.60s (API)", agent ? "agent" : "orchestrator", tok->name);
    if (agent && syncs_agent_waiting(s, tok->name) >= tok->max_waiting) {
        *http = 429;
        snprintf(msg, msglen, "token %.63s has %u runs waiting for an operator's approval "
                 "(max_waiting): retry once they are approved, rejected or expired",
                 tok->name, tok->max_waiting);
        return -1;
    }
    if (!agent && syncs_waiting(s, sync) >= MAX_WAITING) {
        *http = 429;
        snprintf(msg, msglen, "sync %.63s has %d runs waiting already: retry once they ran",
                 sync, MAX_WAITING);
        return -1;
    }
    sync_run *r = syncs_new_run(s, sync, trig, (agent ? ZX_RUN_PREVIEW : 0) | (flags & ZX_RUN_FULL));
    if (!r) {
        *http = 503;
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    r->approval = agent;
    r->agent = agent;
    snprintf(r->token, sizeof(r->token), "%s", tok->name);
    *id = r->id;
    sup_syncs_tick(s);
    return 0;
}

json_t *sup_sync_run_json(sup *s, uint64_t id)
{
    sync_run *r = syncs_find_run(s, id);
    if (r && ((r->flags & ZX_RUN_ONEOFF) || ((r->flags & ZX_RUN_PREVIEW) && !r->approval) ||
              !strcmp(r->state, "previewed")))
        return NULL;   /* a send or a preview (`zxctl`): no run of the API's */
    if (r)
        return syncs_run_json(r);
    /* an older one: from the store */
    zx_store *st = NULL;
    char err[256];
    json_t *found = NULL;
    if (zx_store_open(s->conf->data_dir, ZX_STORE_RDONLY, 0, &st, err, sizeof(err)) != 0)
        return NULL;
    zx_store_txn *t = NULL;
    for (size_t i = 0; i < s->conf->npipelines && !found; i++) {
        const zx_conf_pipeline *pc = &s->conf->pipelines[i];
        if (!zx_conf_is_sync(pc) || zx_store_begin(st, 1, &t) != 0)
            continue;
        syncs_list_ctx l = {json_array(), 200, s};
        zx_store_runs_each(t, pc->name, syncs_list_cb, &l);
        zx_store_abort(t);
        char ids[24];
        snprintf(ids, sizeof(ids), "%llu", (unsigned long long)id);
        for (size_t k = 0; k < json_array_size(l.arr) && !found; k++) {
            json_t *o = json_array_get(l.arr, k);
            const char *v = json_string_value(json_object_get(o, "id"));
            if (v && !strcmp(v, ids))
                found = json_incref(o);
        }
        json_decref(l.arr);
    }
    zx_store_close(st);
    return found;
}

/* ---- the gateway's API (ZX_CHAN_API) ---------------------------------- */

static json_t *api_error(int status, const char *msg)
{
    return json_pack("{s:i, s:{s:s, s:i}}", "status", status, "body", "error", msg, "status",
                     status);
}

/* The configured token equal to tok (compared in constant time over every
 * token), or NULL. */
static const zx_conf_apitoken *find_token(const zx_conf *c, const char *tok)
{
    const zx_conf_apitoken *found = NULL;
    size_t tl = strlen(tok);
    for (size_t i = 0; i < c->napitokens; i++) {
        const char *t = c->apitokens[i].token;
        if (t && zx_ct_equal(tok, tl, t, strlen(t)))
            found = &c->apitokens[i];
    }
    return found;
}

/* 1 when a token of role `status` may call op: the read routes only
 * (the feed's op is "feed"). */
static int status_role_may(const char *op)
{
    return !strcmp(op, "status") || !strcmp(op, "lineage") || !strcmp(op, "metrics") ||
           !strcmp(op, "feed");
}

/* GET /api/status: what `zxctl status --json` prints (status.c), in a
 * memfd (it outgrows a ZX_CHAN message with many pipelines); *mfd is
 * set, or the answer is an error. */
static json_t *api_status(sup *s, int *mfd)
{
    json_t *st = sup_cmd_status(s, NULL, "status", NULL, NULL);
    char *js = st ? json_dumps(st, JSON_COMPACT) : NULL;
    json_decref(st);
    size_t len = js ? strlen(js) : 0;
    *mfd = js ? sup_text_memfd("zx-status", js, len) : -1;
    free(js);
    if (*mfd < 0)
        return api_error(503, "the status could not be made now (out of memory)");
    return json_pack("{s:i, s:I}", "status", 200, "body_bytes", (json_int_t)len);
}

/* GET /api/lineage[?name=N&direction=upstream|downstream&format=F]: the
 * graph of the configuration in force with each sync's last ended run
 * (those in memory, newer than the store's, then the store's), cut to
 * what is connected to N; the text in a memfd (*mfd set) like the
 * status's, its format named (the gateway checked the parameters). */
static json_t *api_lineage(sup *s, const json_t *req, int *mfd)
{
    const char *name = json_string_value(json_object_get(req, "name"));
    const char *dir = json_string_value(json_object_get(req, "direction"));
    const char *format = json_string_value(json_object_get(req, "format"));
    if (!format)
        format = "json";
    if (!zx_lineage_format_ok(format))
        return api_error(400, "format must be json, text, dot or mermaid");
    zx_lineage *g = zx_lineage_build(s->conf), *part = NULL;
    if (!g || zx_lineage_runs_from_store(g, s->conf->data_dir) < 0)
        goto nomem;
    for (sync_run *r = s->runs; r; r = r->next) {
        if (!syncs_is_final(r) || (r->flags & ZX_RUN_ONEOFF))
            continue;
        json_t *o = syncs_run_json(r);
        char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        int rc = js ? zx_lineage_set_run(g, r->sync, js, strlen(js)) : -1;
        free(js);
        if (rc < 0)
            goto nomem;
    }
    const zx_lineage *show = g;
    if (name && *name) {
        size_t at = zx_lineage_find(g, name);
        if (at == (size_t)-1) {
            char msg[300];
            snprintf(msg, sizeof(msg), "no pipeline, table or object named %.200s", name);
            zx_lineage_free(g);
            return api_error(404, msg);
        }
        int d = dir && !strcmp(dir, "upstream") ? ZX_LN_UP
                : dir && !strcmp(dir, "downstream") ? ZX_LN_DOWN : ZX_LN_AROUND;
        if (!(part = zx_lineage_around(g, at, d)))
            goto nomem;
        show = part;
    }
    /* in a memfd, as the status: a large configuration's graph outgrows
     * a ZX_CHAN message */
    char *out = zx_lineage_render(show, format);
    size_t len = out ? strlen(out) : 0;
    *mfd = out ? sup_text_memfd("zx-lineage", out, len) : -1;
    json_t *rep = *mfd >= 0 ? json_pack("{s:i, s:I, s:s}", "status", 200, "body_bytes",
                                        (json_int_t)len, "format", format)
                            : NULL;
    if (!rep && *mfd >= 0) {
        close(*mfd);
        *mfd = -1;
    }
    free(out);
    zx_lineage_free(part);
    zx_lineage_free(g);
    return rep ? rep : api_error(503, "out of memory");
nomem:
    zx_lineage_free(part);
    zx_lineage_free(g);
    return api_error(503, "out of memory");
}

void sup_sync_api(sup *s, const char *buf)
{
    json_error_t je;
    json_t *req = json_loads(buf, 0, &je), *rep = NULL;
    json_int_t id = req ? json_integer_value(json_object_get(req, "id")) : 0;
    const char *op = req ? json_string_value(json_object_get(req, "op")) : NULL;
    const char *tok = req ? json_string_value(json_object_get(req, "token")) : NULL;
    const zx_conf_apitoken *t = tok ? find_token(s->conf, tok) : NULL;
    int mfd = -1;   /* GET /metrics, /api/status, /api/lineage: the text, in a memfd sent
                       with the answer */
    if (!id || !op) {
        json_decref(req);
        return;
    }
    if (!t) {
        rep = api_error(401, "unknown API token (api_tokens in the configuration)");
    } else if (!strcmp(t->role, "status") && !status_role_may(op)) {
        char msg[300];
        snprintf(msg, sizeof(msg), "API token %.63s has role status (read-only): it may read "
                 "/api/status, /api/lineage, /api/feed and /metrics, not start or read runs",
                 t->name);
        rep = api_error(403, msg);
    } else if (!strcmp(op, "status")) {
        /* any token: the same JSON as `zxctl status --json` */
        rep = api_status(s, &mfd);
    } else if (!strcmp(op, "run")) {
        const char *sync = json_string_value(json_object_get(req, "sync"));
        uint64_t rid = 0;
        int http = 500;
        char msg[300];
        unsigned fl = json_is_true(json_object_get(req, "full")) ? ZX_RUN_FULL : 0;
        if (!sync || sup_sync_api_run(s, sync, t, fl, &rid, &http, msg, sizeof(msg)) < 0) {
            rep = api_error(sync ? http : 400, sync ? msg : "no sync named");
        } else {
            sync_run *r = syncs_find_run(s, rid);
            char ids[24], url[64];
            snprintf(ids, sizeof(ids), "%llu", (unsigned long long)rid);
            snprintf(url, sizeof(url), "/api/runs/%s", ids);
            rep = json_pack("{s:i, s:{s:s, s:s, s:s, s:s}}", "status", 202, "body", "run", ids,
                            "sync", sync, "state", r ? r->state : "queued", "status_url", url);
            zx_info("event=api_run sync=%s run=%s token=%s role=%s", sync, ids, t->name, t->role);
        }
    } else if (!strcmp(op, "get")) {
        const char *ids = json_string_value(json_object_get(req, "run"));
        unsigned long long rid = ids ? strtoull(ids, NULL, 10) : 0;
        json_t *rec = rid ? sup_sync_run_json(s, rid) : NULL;
        if (!rec || sup_run_api_view(rec, t) < 0) {
            json_decref(rec);
            rep = api_error(404, "no such run (or not one this token may read)");
        } else {
            rep = json_pack("{s:i, s:o}", "status", 200, "body", rec);
        }
    } else if (!strcmp(op, "metrics")) {
        /* any API token may read them (docs/architecture.md §2.3) */
        size_t mlen = 0;
        mfd = sup_metrics_memfd(s, &mlen);
        if (mfd < 0)
            rep = api_error(503, "the metrics could not be made now (out of memory)");
        else
            rep = json_pack("{s:i, s:I}", "status", 200, "metrics_bytes", (json_int_t)mlen);
    } else if (!strcmp(op, "feed")) {
        /* GET /api/feed: any API token may read the feed, as the metrics;
         * the events themselves reach the gateway as ZX_CHAN_FEED */
        rep = json_pack("{s:i}", "status", 200);
    } else if (!strcmp(op, "lineage")) {
        /* any valid token may read it: names and places, never a secret */
        rep = api_lineage(s, req, &mfd);
    } else {
        rep = api_error(400, "unknown request");
    }
    if (rep) {
        json_object_set_new(rep, "id", json_integer(id));
        char *js = json_dumps(rep, JSON_COMPACT);
        if (js && strlen(js) < ZX_CHAN_MAX)
            sup_chan_send(s, &s->gateway, ZX_CHAN_API, js, mfd >= 0 ? &mfd : NULL, mfd >= 0);
        else if (js) {
            json_t *small = api_error(500, "the answer is too large");
            json_object_set_new(small, "id", json_integer(id));
            char *js2 = json_dumps(small, JSON_COMPACT);
            if (js2)
                sup_chan_send(s, &s->gateway, ZX_CHAN_API, js2, NULL, 0);
            free(js2);
            json_decref(small);
        }
        free(js);
        json_decref(rep);
    }
    if (mfd >= 0)
        close(mfd);
    json_decref(req);
}
