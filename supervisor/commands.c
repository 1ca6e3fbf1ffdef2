/*
 * commands.c — the control commands: one row each in the command table
 * (name, handler, flags, help; control.h), and the handlers that are no
 * more than a call of a job (jobs.h) or of the child table (sup.h).  The
 * read-only views are in status.c; the socket and the dispatch in
 * control.c.  The plug-ins' own commands (conf/plugin.h, zx_plugin_admin)
 * are rows too, taken from the registry (zx_plugins).
 *
 * A new command is one row here and its handler; nothing else changes.
 */
#include <event2/bufferevent.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "supervisor/control.h"
#include "supervisor/helper.h"
#include "supervisor/jobs.h"

/* Feed followers at most: the other half of the control connections stay
 * for status, reload and the rest (control.c: CTL_MAX_CONNS). */
#define FEED_FOLLOWERS_MAX 32

static json_t *err_obj(const char *fmt, const char *arg)
{
    char msg[512];
    snprintf(msg, sizeof(msg), fmt, arg ? arg : "");
    return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

static child *find_named(sup *s, const char *name)
{
    if (strcmp(name, "writer") == 0)
        return &s->writer;
    if (strcmp(name, "gateway") == 0)
        return &s->gateway;
    spipe *p = sup_find_pipe(s, name);
    return p && !p->removing ? &p->worker : NULL;
}

static json_t *cmd_lifecycle(sup *s, struct bufferevent *bev, const char *cmd,
                             const char *name, json_t *req)
{
    (void)bev;
    (void)req;
    child *c = find_named(s, name);
    if (!c)
        return err_obj("no pipeline named '%s'", name);
    if (strcmp(cmd, "restart") == 0) {
        c->ncrash = 0;
        sup_stop_child(s, c, NEXT_RESTART); /* announced when it is back */
        if (c->pid == 0 && c->state == ST_FAILED) /* its source is not in this build */
            return err_obj("cannot restart: %s", c->last_error);
    } else if (c->role != ROLE_STREAM) {
        return err_obj("%s cannot be stopped or started on its own; use restart", name);
    } else if (strcmp(cmd, "stop") == 0) {
        if (c->state == ST_STOPPED)
            return err_obj("pipeline '%s' is already stopped", name);
        sup_stop_child(s, c, NEXT_NONE);
    } else {
        if (c->pid > 0)
            return err_obj("pipeline '%s' is already running", name);
        c->want = 1;
        c->ncrash = 0;
        c->last_error[0] = '\0';
        if (sup_spawn(s, c) < 0 || c->state == ST_FAILED)
            return err_obj("cannot start: %s", c->last_error);
        sup_feedf(s, "start", c->name, "{\"process\":\"%s\",\"pid\":%d}", c->name, (int)c->pid);
    }
    return json_pack("{s:b}", "ok", 1);
}

static json_t *cmd_reload(sup *s, struct bufferevent *bev, const char *cmd, const char *name,
                          json_t *req)
{
    (void)cmd;
    (void)name;
    (void)req;
    sup_reload_start(s, bev);
    return NULL;
}

static json_t *cmd_test(sup *s, struct bufferevent *bev, const char *cmd, const char *name,
                        json_t *req)
{
    (void)cmd;
    (void)req;
    return sup_probe_start(s, bev, name); /* NULL: answered when the prober is done */
}

static json_t *cmd_verify(sup *s, struct bufferevent *bev, const char *cmd, const char *name,
                          json_t *req)
{
    (void)cmd;
    json_t *tj = json_object_get(req, "table");
    if (tj && !json_is_string(tj))
        return err_obj("verify: \"table\" must be a string", NULL);
    /* NULL: answered when the verify process is done */
    return sup_verify_start(s, bev, name, json_string_value(tj),
                            json_is_true(json_object_get(req, "repair")));
}

/* A plug-in's own command (conf/plugin.h, zx_plugin_admin): its options
 * must be strings. */
static json_t *cmd_admin(sup *s, struct bufferevent *bev, const char *cmd, const char *name,
                         json_t *req)
{
    const zx_plugin_admin *a = zx_plugin_admin_find(cmd, NULL);
    if (!a)
        return err_obj("unknown command '%s'", cmd);
    for (const zx_plugin_admin_opt *o = a->options; o && o->name; o++) {
        json_t *v = json_object_get(req, o->name);
        if (v && !json_is_string(v)) {
            char msg[256];
            snprintf(msg, sizeof(msg), "%s: \"%s\" must be a string", cmd, o->name);
            return err_obj("%s", msg);
        }
    }
    /* NULL: answered when its process is done */
    return sup_admin_start(s, bev, a, name, req);
}

/* run, preview, runs, approve, reject: NULL when answered as the run ends */
static json_t *cmd_sync(sup *s, struct bufferevent *bev, const char *cmd, const char *name,
                        json_t *req)
{
    (void)name;
    return sup_sync_command(s, bev, cmd, req);
}

static json_t *cmd_send(sup *s, struct bufferevent *bev, const char *cmd, const char *name,
                        json_t *req)
{
    (void)cmd;
    (void)name;
    return sup_sync_send(s, bev, req);
}

static json_t *cmd_feed(sup *s, struct bufferevent *bev, const char *cmd, const char *name,
                        json_t *req)
{
    (void)cmd;
    (void)name;
    int follow = json_is_true(json_object_get(req, "follow"));
    size_t nf = 0;
    for (feed_client *f = s->followers; f; f = f->next)
        nf++;
    if (follow && nf >= FEED_FOLLOWERS_MAX) {
        sup_control_reply(bev, err_obj("too many feed followers (%s); retry later", "32"));
        sup_control_finish(s, bev);
        return NULL;
    }
    sup_feed_follow(s, bev, follow);
    if (!follow)
        sup_control_finish(s, bev);
    return NULL;
}

#define RO SUP_CMD_READ_ONLY
static const sup_command builtin[] = {
    {"status", sup_cmd_status, RO,
     "every process and pipeline: state, rows, rejects, rings, last error"},
    {"reload", cmd_reload, SUP_CMD_OWNS_CONN,
     "read the configuration file again and apply the difference"},
    {"restart", cmd_lifecycle, SUP_CMD_NAME,
     "stop NAME (the writer, the gateway or a pipeline's worker) and start it again"},
    {"stop", cmd_lifecycle, SUP_CMD_NAME, "stop pipeline NAME's worker until started"},
    {"start", cmd_lifecycle, SUP_CMD_NAME, "start pipeline NAME's stopped worker"},
    {"checkpoints", sup_cmd_checkpoints, SUP_CMD_NAME | RO,
     "pipeline NAME's positions, schema and counters in the store"},
    {"progress", sup_cmd_progress, SUP_CMD_NAME | RO,
     "pipeline NAME's work in progress: rows done and expected, rate, time left"},
    {"test", cmd_test, SUP_CMD_NAME | RO,
     "try pipeline or connection NAME's settings (or the workspace's)"},
    {"verify", cmd_verify, SUP_CMD_NAME | SUP_CMD_LONG,
     "compare postgres pipeline NAME's mirrors with its source (repair: re-copy)"},
    {"run", cmd_sync, SUP_CMD_LONG, "run reverse sync NAME now (wait: until it ends)"},
    {"preview", cmd_sync, SUP_CMD_LONG, "what a run of sync NAME would send, sending nothing"},
    {"runs", cmd_sync, RO, "reverse sync NAME's recent runs"},
    {"approve", cmd_sync, SUP_CMD_LONG, "let an agent's run, awaiting approval, send"},
    {"reject", cmd_sync, SUP_CMD_LONG, "end an agent's run awaiting approval, sending nothing"},
    {"send", cmd_send, SUP_CMD_LONG, "send a query's rows once to a destination"},
    {"feed", cmd_feed, SUP_CMD_OWNS_CONN | RO, "recent events, and new ones as they come (follow)"},
    {NULL, NULL, 0, NULL},
};
#undef RO

#define NBUILTIN (sizeof(builtin) / sizeof(builtin[0]) - 1)
#define ADMIN_ROWS_MAX 32  /* plug-ins' own commands at most */

const sup_command *sup_command_table(void)
{
    static sup_command table[NBUILTIN + ADMIN_ROWS_MAX + 1];
    if (!table[0].name) {
        size_t n = 0;
        for (; n < NBUILTIN; n++)
            table[n] = builtin[n];
        for (size_t i = 0; i < zx_nplugins && n < NBUILTIN + ADMIN_ROWS_MAX; i++) {
            const zx_plugin_admin *a = zx_plugins[i]->admin;
            if (a && a->command)
                table[n++] = (sup_command){a->command, cmd_admin, SUP_CMD_NAME, a->summary};
        }
    }
    return table;
}

const sup_command *sup_command_find(const char *cmd)
{
    for (const sup_command *c = sup_command_table(); c->name; c++)
        if (!strcmp(c->name, cmd))
            return c;
    return NULL;
}
