/*
 * reload.c — apply a new configuration by difference (nginx's
 * ngx_init_cycle): the whole file is loaded and validated first; on any
 * error nothing running is touched.  Then, by pipeline name: unchanged →
 * untouched (same worker, same pid, same ring); changed → its worker is
 * restarted with the new settings (its ring and the frames in it stay);
 * added → a segment and a worker are made; removed → the gateway stops
 * routing to it, its worker drains and stops, the writer applies what is
 * left in its ring and lets go of it.  Settings read once at start
 * (server.data_dir, server.control_socket, the whole workspace: its kind,
 * SQLite file, Postgres dsn, schema, application name) refuse the reload,
 * naming the setting, never its value.
 * Under systemd, once zxd has said READY=1, a reload is framed by
 * RELOADING=1 (with MONOTONIC_USEC=) and READY=1 with its result as
 * STATUS=, whether it worked or not (the old configuration still runs).
 */
#include <event2/bufferevent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/sdnotify.h"
#include "common/util.h"
#include "supervisor/jobs.h"

static int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static uint64_t max_body(const zx_conf *c)
{
    uint64_t m = c->http.max_body_size;
    for (size_t i = 0; i < c->npipelines; i++)
        if (c->pipelines[i].body_limit > m)
            m = c->pipelines[i].body_limit;
    return m;
}

/* 1 when the gateway's settings are the same (else it restarts: it holds
 * the configuration it was started with). */
static int same_http(const zx_conf *a, const zx_conf *b)
{
    const zx_conf_http *x = &a->http, *y = &b->http;
    return same_str(x->listen, y->listen) && x->max_body_size == y->max_body_size &&
           x->max_header_size == y->max_header_size && x->max_connections == y->max_connections &&
           x->idle_timeout_ms == y->idle_timeout_ms &&
           x->backpressure_timeout_ms == y->backpressure_timeout_ms &&
           x->commit_timeout_ms == y->commit_timeout_ms && max_body(a) == max_body(b) &&
           x->api_auth_failures == y->api_auth_failures &&
           x->api_auth_window_ms == y->api_auth_window_ms &&
           a->status_page == b->status_page;   /* the gateway's page at `/` */
}

/* The writer opens the workspace once, when it starts: its kind, the SQLite
 * file and mode, the Postgres dsn (references resolved, so a rotated
 * password file counts), schema and application name cannot change on
 * reload. */
static int same_workspace(const zx_conf *a, const zx_conf *b)
{
    return a->ws_kind == b->ws_kind && same_str(a->sqlite_path, b->sqlite_path) &&
           same_str(a->sqlite_synchronous, b->sqlite_synchronous) &&
           same_str(a->pg_dsn, b->pg_dsn) && same_str(a->pg_schema, b->pg_schema) &&
           same_str(a->pg_application_name, b->pg_application_name);
}

int sup_transitions_done(sup *s)
{
    if (s->gateway.next != NEXT_NONE)
        return 0;
    for (size_t i = 0; i < s->npipes; i++)
        if (s->pipes[i]->removing || s->pipes[i]->worker.next != NEXT_NONE)
            return 0;
    return 1;
}

static json_t *fail_reply(sup *s, const char *error, zx_conf_errors *errs)
{
    json_t *list = json_array();
    for (size_t i = 0; errs && i < errs->n; i++) {
        json_array_append_new(list, json_string(errs->msgs[i]));
        zx_error("event=reload_error error=\"%s\"", errs->msgs[i]);
    }
    zx_error("event=reload result=rejected error=\"%s\"", error);
    json_t *o = json_pack("{s:b, s:s, s:o}", "ok", 0, "error", error, "errors", list);
    json_t *ev = json_pack("{s:s, s:b, s:s, s:O}", "event", "reload", "ok", 0, "message", error,
                           "errors", list);
    char *e = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    sup_feed(s, e);
    free(e);
    json_decref(ev);
    if (!o)
        zx_error("event=reload_result_lost error=\"out of memory\"");
    return o;
}

int sup_reload_failed(sup *s, const char *pipeline, const char *why)
{
    if (!s->reload_result)
        return 0;
    zx_error("event=pipeline_not_started pipeline=%s error=\"%s\"", pipeline, why);
    sup_feedf(s, "failed", pipeline, "{\"message\":\"%s could not be started\"}", pipeline);
    json_t *f = json_object_get(s->reload_result, "failed");
    if (f)
        json_array_append_new(f, json_pack("{s:s, s:s}", "name", pipeline, "error", why));
    return 1;
}

json_t *sup_reload_finish(json_t *r)
{
    if (!r)
        return NULL;
    json_t *f = json_object_get(r, "failed");
    size_t nf = json_array_size(f);
    if (!json_is_true(json_object_get(r, "ok")) || nf == 0) {
        if (json_is_true(json_object_get(r, "ok")))
            zx_info("event=reload result=ok");
        return r;
    }
    char msg[600];
    int n = snprintf(msg, sizeof(msg), "the new configuration is running, but %zu pipeline%s "
                     "could not be started:", nf, nf == 1 ? "" : "s");
    json_t *errs = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(f, i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *why = json_string_value(json_object_get(e, "error"));
        char line[400];
        snprintf(line, sizeof(line), "pipeline %s: %s", name ? name : "?", why ? why : "?");
        json_array_append_new(errs, json_string(line));
        if (n > 0 && (size_t)n < sizeof(msg))
            n += snprintf(msg + n, sizeof(msg) - n, "%s %s", i ? "," : "", name ? name : "?");
    }
    json_object_set_new(r, "ok", json_false());
    json_object_set_new(r, "error", json_string(msg));
    json_object_set_new(r, "errors", errs);
    zx_error("event=reload result=partial error=\"%s\"", msg);
    return r;
}

/* The name of a setting that a reload cannot change and nc changes from
 * oc, or NULL. */
static const char *fixed_setting_changed(const zx_conf *oc, const zx_conf *nc)
{
    if (strcmp(nc->data_dir, oc->data_dir) != 0)
        return "server.data_dir";
    if (strcmp(nc->control_socket, oc->control_socket) != 0)
        return "server.control_socket";
    if (!same_workspace(oc, nc))
        return "workspace";
    return NULL;
}

json_t *sup_reload(sup *s)
{
    zx_conf_errors errs = {0};
    zx_conf *nc = zx_conf_load(s->conf_path, 0, &errs);
    if (!nc) {
        json_t *r = fail_reply(s, "configuration invalid; still running the previous one", &errs);
        zx_conf_errors_free(&errs);
        return r;
    }
    zx_conf *oc = s->conf;
    const char *fixed = fixed_setting_changed(oc, nc);
    if (fixed) {
        /* names the setting only: never a value (the dsn may hold a
         * password) */
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "%s cannot change on reload; restart zxd to change it (still running the previous configuration)",
                 fixed);
        zx_conf_free(nc);
        return fail_reply(s, msg, NULL);
    }
    int http_changed = !same_http(oc, nc);
    int new_listen = -1;
    if (!same_str(oc->http.listen, nc->http.listen)) {
        char err[256];
        new_listen = sup_listen_http(nc, err, sizeof(err));
        if (new_listen < 0) {
            zx_conf_free(nc);
            char msg[400];
            snprintf(msg, sizeof(msg), "%s; still running the previous configuration", err);
            return fail_reply(s, msg, NULL);
        }
    }

    json_t *added = json_array(), *changed = json_array(), *removed = json_array(),
           *unchanged = json_array(), *failed = json_array();
    /* the result exists before the transitions start: a pipeline that
     * cannot be started is recorded in it (sup_reload_failed) */
    json_t *o = json_pack("{s:b, s:O, s:O, s:O, s:O, s:O}", "ok", 1, "added", added, "changed",
                          changed, "removed", removed, "unchanged", unchanged, "failed", failed);
    s->reload_result = o;
    /* removed first, so that their names are free */
    for (size_t i = 0; i < s->npipes; i++) {
        spipe *p = s->pipes[i];
        if (p->removing || p->owned_conf || zx_conf_find(nc, p->name))
            continue;   /* a one-off send is not the configuration's */
        json_array_append_new(removed, json_string(p->name));
        /* what it made upstream (a postgres pipeline's slot) is retired
         * once its worker is gone (retire.c) */
        sup_retire_plan(s, p, p->conf, oc, nc);
        /* and its positions and state are dropped then (forget.c); a
         * reverse sync keeps its run history (still read by `zxctl runs`
         * and the API) and row hashes */
        p->forget_state = !zx_conf_is_sync(p->conf);
        /* its worker drains first (the gateway answers 503 for it in the
         * meantime); then gateway and writer let go of it (after_stop) */
        p->removing = 1;
        snprintf(p->gone_source, sizeof(p->gone_source), "%s",
                 p->conf->source ? p->conf->source : "");
        p->conf = NULL;
        size_t before = s->npipes;
        sup_stop_child(s, &p->worker, NEXT_REMOVE);
        if (s->npipes != before)
            i--;
    }
    s->conf = nc;
    zx_log_set_level_name(nc->log_level);
    prctl(PR_SET_DUMPABLE, nc->core_dumps ? 1 : 0, 0, 0, 0);
    for (size_t i = 0; i < nc->npipelines; i++) {
        const zx_conf_pipeline *np = &nc->pipelines[i];
        spipe *p = sup_find_pipe(s, np->name);
        if (p) {
            /* workers read max_queue_delay when they start */
            int same = zx_conf_pipeline_same(p->conf, np) &&
                       nc->max_queue_delay_ms == oc->max_queue_delay_ms;
            if (!same) /* its old slot, if no longer used (another slot...) */
                sup_retire_plan(s, p, p->conf, oc, nc);
            p->conf = np;
            if (same) {
                json_array_append_new(unchanged, json_string(np->name));
                /* the writer retries the tables it parks at once */
                sup_send_attach(s, &s->writer, p);
                continue;
            }
            json_array_append_new(changed, json_string(np->name));
            if (zx_conf_is_sync(np))
                sup_syncs_changed(s, np->name);
            if (sup_pipe_needs_new_rings(p, np)) {
                /* drain into the old rings, then new ones (after_stop) */
                p->worker.ncrash = 0;
                p->worker.last_error[0] = '\0';
                sup_stop_child(s, &p->worker, NEXT_RECREATE);
                continue;
            }
            sup_send_attach(s, &s->gateway, p);
            sup_send_attach(s, &s->writer, p); /* e.g. a new max_columns */
            p->worker.ncrash = 0;
            p->worker.last_error[0] = '\0';
            sup_stop_child(s, &p->worker, NEXT_RESTART);
            continue;
        }
        char err[256];
        p = sup_pipe_new(s, np, err, sizeof(err));
        if (!p) {
            sup_reload_failed(s, np->name, err);
            continue;
        }
        json_array_append_new(added, json_string(np->name));
        sup_send_attach(s, &s->writer, p);
        sup_send_attach(s, &s->gateway, p);
        if (sup_spawn(s, &p->worker) < 0) {
            p->worker.state = ST_BACKOFF;
            p->worker.respawn_at_ms = zx_mono_ms() + 1000;
        }
    }
    if (new_listen >= 0) {
        close(s->listen_fd);
        s->listen_fd = new_listen;
    }
    if (http_changed)
        sup_stop_child(s, &s->gateway, NEXT_RESTART);
    /* the writer reads its settings when it starts: restart it (it drains
     * first, and the rings keep every frame meanwhile) */
    if (nc->commit_interval_ms != oc->commit_interval_ms)
        sup_stop_child(s, &s->writer, NEXT_RESTART);
    sup_conf_release(oc); /* kept while retires planned from it wait */

    char msg[128];
    snprintf(msg, sizeof(msg), "reloaded: %zu added, %zu changed, %zu removed, %zu unchanged",
             json_array_size(added), json_array_size(changed), json_array_size(removed),
             json_array_size(unchanged));
    zx_info("event=reload added=%zu changed=%zu removed=%zu unchanged=%zu", json_array_size(added),
            json_array_size(changed), json_array_size(removed), json_array_size(unchanged));
    json_t *ev = json_pack("{s:s, s:b, s:O, s:O, s:O, s:s}", "event", "reload", "ok", 1, "added",
                           added, "changed", changed, "removed", removed, "message", msg);
    char *e = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    sup_feed(s, e);
    free(e);
    json_decref(ev);
    json_decref(added);
    json_decref(changed);
    json_decref(removed);
    json_decref(unchanged);
    json_decref(failed);
    if (!o)
        zx_error("event=reload_result_lost error=\"out of memory\"");
    return o;
}

/* ---- the reload asked for (zxctl reload, SIGHUP) and its answer ---------- */

static json_t *reload_error(const char *msg)
{
    return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

void sup_reload_start(sup *s, struct bufferevent *bev)
{
    if (s->reload_result) {
        if (bev) {
            sup_control_reply(bev, reload_error("a reload is already in progress"));
            sup_control_finish(s, bev);
        } else {
            zx_info("event=sighup result=deferred reason=\"a reload is in progress\"");
            s->reload_again = 1;
        }
        return;
    }
    if (s->sd_ready)
        zx_sd_notify_reloading("reloading the configuration");
    json_t *r = sup_reload(s);
    if (!r) {
        if (s->sd_ready)
            zx_sd_notify("READY=1\nSTATUS=running: reload failed (out of memory)");
        if (bev) {
            sup_control_reply(bev, reload_error("out of memory while reloading"));
            sup_control_finish(s, bev);
        }
        return;
    }
    s->reload_result = r;
    s->reload_bev = bev;
    s->reload_deadline_ms = zx_mono_ms() + 30000;
    if (bev)
        bufferevent_disable(bev, EV_READ);
    sup_reload_check_reply(s);
}

void sup_reload_check_reply(sup *s)
{
    if (!s->reload_result)
        return;
    if (!sup_transitions_done(s) && zx_mono_ms() < s->reload_deadline_ms)
        return;
    json_t *r = sup_reload_finish(s->reload_result);
    s->reload_result = NULL;
    if (s->sd_ready) {
        /* the reason on one line: STATUS= ends at a newline */
        const char *err = json_string_value(json_object_get(r, "error"));
        char why[201] = "";
        for (size_t i = 0; err && err[i] && i < sizeof(why) - 1; i++)
            why[i] = (unsigned char)err[i] < 0x20 ? ' ' : err[i];
        zx_sd_notifyf("READY=1\nSTATUS=running: %zu pipeline%s; last reload %s%s%s",
                      s->npipes, s->npipes == 1 ? "" : "s",
                      json_is_true(json_object_get(r, "ok")) ? "ok" : "failed",
                      err ? ": " : "", why);
    }
    if (s->reload_bev) {
        sup_control_reply(s->reload_bev, r); /* takes r */
        sup_control_finish(s, s->reload_bev);
        s->reload_bev = NULL;
    } else {
        json_decref(r);
    }
    if (s->reload_again && !s->shutting_down) {
        s->reload_again = 0;
        sup_reload_start(s, NULL);
    }
}

void sup_reload_forget(struct bufferevent *bev)
{
    sup *s = zx_the_sup;
    if (s && s->reload_bev == bev)
        s->reload_bev = NULL;
}
