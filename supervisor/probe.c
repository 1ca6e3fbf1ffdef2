/*
 * probe.c — `zxctl test NAME`: try a pipeline's or a connection's settings
 * (connect, authenticate, list what is there) in a short-lived process of
 * its own, and relay its one-paragraph answer to the zxctl client.
 *
 * Which test: the source plug-in's (zx_plugin.test, conf/plugin.h, found
 * by registry.c's zx_source_tester), the connection's by its kind, or the
 * workspace's.
 *
 * Why a process: a source's test (librdkafka, libpq...) blocks for up to
 * seconds and may crash on a hostile server; the supervisor's loop must do
 * neither.  The prober inherits the loaded configuration (secrets
 * resolved) through fork, writes one JSON line into a pipe and exits.
 *
 * The process, its deadline and its answer are helper.c's (helper.h).
 */
#include <event2/bufferevent.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "supervisor/helper.h"
#include "supervisor/jobs.h"
#include "workers/sources/source.h"
#include "workers/writer/workspace.h"

#define PROBE_TIMEOUT_MS 10000   /* what a source's test may take */
#define PROBE_MAX 4              /* probes at once */

/* What the prober is to test (the child reads its copy). */
typedef struct probe_arg {
    zx_source_test_fn test;      /* NULL: the workspace's */
    const char *what;            /* the source (or connection kind) tested */
    const zx_conf_pipeline *pc;
    const zx_conf_connection *cc;
    const char *name;
} probe_arg;

/* In the child: run the test, answer. */
static json_t *run_probe(const zx_conf *conf, const void *arg)
{
    const probe_arg *a = arg;
    char out[4096] = "";
    int rc = a->test ? a->test(conf, a->pc, a->cc, PROBE_TIMEOUT_MS, out, sizeof(out))
                     : zx_ws_test(conf, out, sizeof(out));
    return rc == 0 ? json_pack("{s:b, s:s, s:s, s:s}", "ok", 1, "name", a->name, "source",
                               a->what, "result", out)
                   : json_pack("{s:b, s:s, s:s, s:s}", "ok", 0, "name", a->name, "source",
                               a->what, "error", out[0] ? out : "the test failed");
}

/* The prober is done: answer the client, if still there. */
static void probe_done(sup *s, const char *name, void *data, struct bufferevent *waiter,
                       json_t *answer)
{
    (void)name;
    (void)data;
    if (!waiter) {
        json_decref(answer);
        return;
    }
    sup_control_reply(waiter, answer);
    sup_control_finish(s, waiter);
}

static const sup_helper_kind probe_kind = {
    .what = "test",
    .alarm_s = PROBE_TIMEOUT_MS / 1000 + 5,
    .deadline_s = PROBE_TIMEOUT_MS / 1000 + 3,
    .answer_max = 8192,
    .run = run_probe,
    .done = probe_done,
};

json_t *sup_probe_start(sup *s, struct bufferevent *bev, const char *name)
{
    const zx_conf_pipeline *pc = zx_conf_find(s->conf, name);
    const zx_conf_connection *cc = pc ? pc->conn : zx_conf_find_connection(s->conf, name);
    /* "workspace" names the workspace unless a pipeline or a connection
     * has that name */
    int ws = !pc && !cc && strcmp(name, "workspace") == 0;
    if (!pc && !cc && !ws)
        return json_pack("{s:b, s:s}", "ok", 0, "error",
                         "no pipeline or connection of that name in the configuration "
                         "(`zxctl test workspace` tests the workspace)");
    /* a source plug-in's test; a connection's, by its kind */
    const char *what = ws ? "workspace" : pc ? pc->source : cc->kind;
    zx_source_test_fn test = ws ? NULL : zx_source_tester(what);
    if (!ws && !test) {
        char msg[300];
        snprintf(msg, sizeof(msg), "pipeline %s (source %s) has nothing to connect to: "
                 "clients push to the gateway on %s", name, pc ? pc->source : "?",
                 s->conf->http.listen);
        return json_pack("{s:b, s:s, s:s}", "ok", 1, "name", name, "result", msg);
    }
    if (sup_helper_count(&probe_kind, NULL) >= PROBE_MAX)
        return json_pack("{s:b, s:s}", "ok", 0, "error",
                         "too many tests running at once; retry in a few seconds");
    probe_arg a = {test, what, pc, cc, name};
    pid_t pid = 0;
    json_t *now = sup_helper_start(s, &probe_kind, name, &a, NULL, bev, &pid);
    if (now)
        return now;
    zx_info("event=test_start name=%s source=%s pid=%d", name, what, (int)pid);
    return NULL; /* answered later */
}
