/*
 * verify.c — `zxctl verify NAME [--table T]`: compare the mirrors of a
 * pipeline whose plug-in can verify (ZX_PLUGIN_VERIFY: postgres CDC) with
 * its source (workers/verify/verify.h) in a short-lived process of its
 * own, relay its answer to the zxctl client, and remember the last
 * outcome of each pipeline for `zxctl status`.
 *
 * Why a process: a verify reads whole tables on two databases for up to
 * VERIFY_TIMEOUT_S; the supervisor's loop must neither block nor touch a
 * database.  The process inherits the loaded configuration (secrets
 * resolved) through fork, writes one JSON line into a pipe and exits.
 *
 * The process, its deadline and its answer are helper.c's (helper.h).
 */
#include <errno.h>
#include <event2/bufferevent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "conf/plugin.h"
#include "proto/control.h"
#include "supervisor/helper.h"
#include "supervisor/jobs.h"
#include "workers/verify/verify.h"

#define VERIFY_TIMEOUT_S 600     /* what one verify may take */
#define VERIFY_MAX 2             /* verifies at once */
#define VERIFY_LAST_MAX 256      /* pipelines whose last verify is kept */
#define VERIFY_TABLE_MAX 300     /* bytes of a table name, with its NUL */

#define VERIFY_LAST_FILE_MAX 4096 /* bytes of a kept summary file */

/* The last verify of a pipeline (its summary; json null: none on disk). */
typedef struct vlast {
    char name[128];
    json_t *summary;
} vlast;

static vlast last[VERIFY_LAST_MAX];

/* <data_dir>/verify/<name>.last: the summary kept across restarts. */
static int last_path(const zx_conf *c, const char *name, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s/verify/%s.last", c->data_dir, name);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* Keep sum as name's last verify (taken). */
static void keep(const char *name, json_t *sum)
{
    vlast *free_slot = NULL;
    for (size_t i = 0; i < VERIFY_LAST_MAX; i++) {
        if (last[i].summary && !strcmp(last[i].name, name)) {
            json_decref(last[i].summary);
            last[i].summary = sum;
            return;
        }
        if (!last[i].summary && !free_slot)
            free_slot = &last[i];
    }
    if (!free_slot) {
        json_decref(sum);
        return;
    }
    snprintf(free_slot->name, sizeof(free_slot->name), "%s", name);
    free_slot->summary = sum;
}

/* The summary of answer o (a finished verify of a table, or all). */
static json_t *summary(const char *table, const json_t *o)
{
    json_t *sum = json_pack("{s:O?, s:O?, s:O?, s:O?, s:s?, s:i}", "at",
                            json_object_get(o, "at"), "compared", json_object_get(o, "compared"),
                            "differing", json_object_get(o, "differing"), "repaired",
                            json_object_get(o, "repaired"), "table", table[0] ? table : NULL,
                            "tables", (int)json_array_size(json_object_get(o, "tables")));
    return sum;
}

json_t *sup_verify_last(sup *s, const char *name)
{
    for (size_t i = 0; i < VERIFY_LAST_MAX; i++)
        if (last[i].summary && !strcmp(last[i].name, name))
            return json_is_object(last[i].summary) ? json_incref(last[i].summary) : NULL;
    /* not seen since zxd started: the one a verify process left (read
     * once; a missing or unreadable file is remembered as none) */
    char path[4200];
    json_t *sum = NULL;
    FILE *f = last_path(s->conf, name, path, sizeof(path)) == 0 ? fopen(path, "r") : NULL;
    if (f) {
        char buf[VERIFY_LAST_FILE_MAX];
        size_t n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        if (n < sizeof(buf))
            sum = json_loadb(buf, n, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(sum)) {
            json_decref(sum);
            sum = NULL;
        }
    }
    keep(name, sum ? json_incref(sum) : json_null());
    return sum;
}

/* The verify process is done: keep its summary, tell the feed and the
 * client (if still there).  data: the table verified ("" for all). */
static void verify_done(sup *s, const char *name, void *data, struct bufferevent *waiter,
                        json_t *o)
{
    const char *table = data ? data : "";
    if (o && json_is_true(json_object_get(o, "ok"))) {
        json_t *sum = summary(table, o);
        if (sum)
            keep(name, sum);
        sup_feedf(s, "verify", name, "{\"differing\":%lld,\"repaired\":%lld}",
                  (long long)json_integer_value(json_object_get(o, "differing")),
                  (long long)json_integer_value(json_object_get(o, "repaired")));
    }
    zx_info("event=verify_end name=%s ok=%d differing=%lld", name,
            o && json_is_true(json_object_get(o, "ok")),
            (long long)json_integer_value(json_object_get(o, "differing")));
    if (waiter) {
        sup_control_reply(waiter, o);
        sup_control_finish(s, waiter);
    } else {
        json_decref(o);
    }
}

/* In the child: write sum as name's last verify, for `status` after a
 * restart of zxd (a failure is logged: the answer matters more). */
static void keep_on_disk(const zx_conf *conf, const char *name, const json_t *sum)
{
    char path[4200], tmp[4300];
    snprintf(tmp, sizeof(tmp), "%s/verify", conf->data_dir);
    if (mkdir(tmp, 0700) < 0 && errno != EEXIST) {
        zx_warn("event=verify_not_kept name=%s path=%s error=\"%s\"", name, tmp,
                strerror(errno));
        return;
    }
    if (last_path(conf, name, path, sizeof(path)) < 0)
        return;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (json_dump_file(sum, tmp, JSON_COMPACT) < 0 || rename(tmp, path) < 0) {
        zx_warn("event=verify_not_kept name=%s path=%s error=\"%s\"", name, path,
                strerror(errno));
        unlink(tmp);
    }
}

/* What the verify process is to do (the child reads its copy). */
typedef struct verify_arg {
    const zx_conf_pipeline *pc;
    const char *table;           /* NULL: every table */
    unsigned flags;              /* ZX_VERIFY_* */
} verify_arg;

/* In the child: verify, keep the summary on disk, answer. */
static json_t *run_verify(const zx_conf *conf, const void *arg)
{
    const verify_arg *a = arg;
    sup_child_harden(conf, ROLE_VERIFY, a->pc);
    char err[1200] = "";
    json_t *o = NULL;
    int64_t deadline = zx_mono_ms() + (int64_t)VERIFY_TIMEOUT_S * 1000;
    if (zx_verify_run(conf, a->pc, a->table, a->flags, deadline, &o, err, sizeof(err)) < 0) {
        o = json_pack("{s:b, s:s, s:s}", "ok", 0, "name", a->pc->name, "error", err);
    } else {
        json_t *sum = summary(a->table ? a->table : "", o);
        if (sum)
            keep_on_disk(conf, a->pc->name, sum);
        json_decref(sum);
    }
    return o;
}

static const sup_helper_kind verify_kind = {
    .what = "verify",
    .alarm_s = VERIFY_TIMEOUT_S + 5,
    .deadline_s = VERIFY_TIMEOUT_S + 10,
    .answer_max = ZX_CTL_MAX_LINE,
    .run = run_verify,
    .done = verify_done,
};

/* The sources whose pipelines `zxctl verify` takes (ZX_PLUGIN_VERIFY),
 * joined with " or " into buf. */
static void verifiable(char *buf, size_t len)
{
    size_t off = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < zx_nplugins && off < len; i++)
        if (zx_plugins[i]->role == ZX_PLUGIN_SOURCE && (zx_plugins[i]->caps & ZX_PLUGIN_VERIFY))
            off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? " or " : "",
                                    zx_plugins[i]->name);
}

json_t *sup_verify_start(sup *s, struct bufferevent *bev, const char *name, const char *table,
                         int repair)
{
    const zx_conf_pipeline *pc = zx_conf_find(s->conf, name);
    if (!pc)
        return json_pack("{s:b, s:s}", "ok", 0, "error",
                         "no pipeline of that name in the configuration");
    if (!pc->plugin || !(pc->plugin->caps & ZX_PLUGIN_VERIFY)) {
        char m[300], which[100];
        verifiable(which, sizeof(which));
        snprintf(m, sizeof(m), "pipeline %s: verify: only a `source: %s` pipeline has "
                 "mirrors to compare with their source (this one is %s)", name, which,
                 pc->source ? pc->source : "?");
        return json_pack("{s:b, s:s}", "ok", 0, "error", m);
    }
    /* stopped on purpose: its slot will not come into use, say so now
     * rather than after the verify's wait for the stream */
    spipe *sp = sup_find_pipe(s, name);
    if (sp && !sp->worker.want) {
        char m[300];
        snprintf(m, sizeof(m), "pipeline %s: verify: the pipeline is stopped (`zxctl start "
                 "%s`, then verify)", name, name);
        return json_pack("{s:b, s:s}", "ok", 0, "error", m);
    }
    if (table && strlen(table) >= VERIFY_TABLE_MAX)
        return json_pack("{s:b, s:s}", "ok", 0, "error", "verify: --table is too long");
    if (sup_helper_count(&verify_kind, name))
        return json_pack("{s:b, s:s}", "ok", 0, "error",
                         "a verify of this pipeline is already running");
    if (sup_helper_count(&verify_kind, NULL) >= VERIFY_MAX)
        return json_pack("{s:b, s:s}", "ok", 0, "error",
                         "too many verifies running at once; retry when one is done");
    char *tcopy = strdup(table ? table : "");
    if (!tcopy)
        return json_pack("{s:b, s:s}", "ok", 0, "error",
                         "cannot start the verify (out of resources)");
    verify_arg a = {pc, table, repair ? ZX_VERIFY_REPAIR : 0};
    pid_t pid = 0;
    json_t *now = sup_helper_start(s, &verify_kind, name, &a, tcopy, bev, &pid);
    if (now)
        return now;
    zx_info("event=verify_start name=%s repair=%d pid=%d", name, repair, (int)pid);
    return NULL; /* answered later */
}
