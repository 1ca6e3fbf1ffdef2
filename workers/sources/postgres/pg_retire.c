/*
 * pg_retire.c — the retire hook of `source: postgres`: drop a gone
 * pipeline's replication slot and its publication; and its control
 * command `zxctl drop-slot` for a slot left behind (pg_retire.h), both
 * built on pg_slot.c.
 */
#include "workers/sources/postgres/pg_retire.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/plugin.h"

#define RETIRE_WAIT_MS 10000   /* how long the slot may stay in use */
#define RETIRE_PG_TIMEOUT_MS 10000
#define DROP_SLOT_TIMEOUT_S 120 /* `zxctl drop-slot`, at most (zxctl waits 135 s) */
#define DROP_LINE_MAX 4096      /* one connection's line */

static int is_postgres(const zx_conf_pipeline *pc)
{
    return pc && pc->source && strcmp(pc->source, "postgres") == 0 && pc->conn &&
           pc->conn->dsn && pc->slot;
}

const char *zx_pg_retire_subject(const zx_conf_pipeline *p)
{
    return is_postgres(p) ? p->slot : NULL;
}

size_t zx_pg_slot_users(const zx_conf *conf, const char *slot, const char *publication,
                        zx_pg_slot_user *users)
{
    size_t n = 0;
    for (size_t i = 0; conf && i < conf->npipelines; i++) {
        const zx_conf_pipeline *pc = &conf->pipelines[i];
        if (!is_postgres(pc))
            continue;
        int us = zx_str_same(pc->slot, slot), up = zx_str_same(pc->publication, publication);
        if (us || up)
            users[n++] = (zx_pg_slot_user){pc->name, pc->conn->dsn, pc->conn->dsn_shown, us, up};
    }
    return n;
}

int zx_pg_retire(const zx_conf *conf, const zx_conf_pipeline *p, char *msg, size_t msglen)
{
    if (!is_postgres(p)) {
        snprintf(msg, msglen, "pipeline %s has no replication slot: nothing to drop",
                 p && p->name ? p->name : "?");
        return ZX_RETIRE_DONE;
    }
    const zx_conf_connection *where = p->conn;
    const zx_conf_connection *now = conf ? zx_conf_find_connection(conf, p->conn->name) : NULL;
    if (now && now->dsn && zx_conf_same_place(now, p->conn))
        where = now;
    /* the pipelines still configured with the same slot or publication
     * name: the server tells whether theirs is the same database */
    zx_pg_slot_user *users = conf && conf->npipelines
                                 ? calloc(conf->npipelines, sizeof(*users)) : NULL;
    if (conf && conf->npipelines && !users) {
        snprintf(msg, msglen, "out of memory: replication slot %s is left (once fixed: zxctl "
                 "drop-slot %s)", p->slot, p->slot);
        return ZX_RETIRE_FAILED;
    }
    size_t n = users ? zx_pg_slot_users(conf, p->slot, p->publication, users) : 0;
    char out[4096];
    zx_pg_slot_args d = {where->dsn, where->dsn_shown ? where->dsn_shown : "?", p->slot,
                         p->publication, 1, users, n, RETIRE_WAIT_MS, RETIRE_PG_TIMEOUT_MS};
    int rc = zx_pg_slot_drop(&d, out, sizeof(out));
    free(users);
    if (rc == ZX_PG_SLOT_DROPPED || rc == ZX_PG_SLOT_ABSENT) {
        snprintf(msg, msglen, "%s", out);
        return ZX_RETIRE_DONE;
    }
    if (rc == ZX_PG_SLOT_FOREIGN || rc == ZX_PG_SLOT_KEPT) {
        snprintf(msg, msglen, "%s", out);
        return ZX_RETIRE_KEPT;
    }
    /* how to finish by hand: through zxd while the connection is still
     * configured as it was, else on the database itself */
    const zx_conf_connection *cc = conf ? zx_conf_find_connection(conf, where->name) : NULL;
    if (cc && cc->kind && strcmp(cc->kind, "postgres") == 0 && cc->dsn &&
        zx_str_same(cc->dsn_shown, d.dsn_shown))
        snprintf(msg, msglen, "%s (once fixed: zxctl drop-slot %s --connection %s)", out,
                 p->slot, cc->name);
    else
        snprintf(msg, msglen, "%s (once fixed, on that database: SELECT "
                 "pg_drop_replication_slot('%s'))", out, p->slot);
    return ZX_RETIRE_FAILED;
}

/* ---- zxctl drop-slot ------------------------------------------------- */

/* 1 when name is a replication slot name as Postgres takes it. */
static int slot_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 63)
        return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
            return 0;
    return 1;
}

static int is_pg_conn(const zx_conf_connection *x)
{
    return x->kind && strcmp(x->kind, "postgres") == 0 && x->dsn;
}

static int drop_slot_check(const zx_conf *c, const char *slot, const json_t *req, char *err,
                           size_t errlen)
{
    const char *conn = json_string_value(json_object_get(req, "connection"));
    if (!slot_name_ok(slot)) {
        snprintf(err, errlen, "'%s' is not a replication slot name (1 to 63 of a-z, 0-9 and _)",
                 slot);
        return -1;
    }
    const zx_conf_connection *cc = NULL;
    if (conn) {
        cc = zx_conf_find_connection(c, conn);
        if (!cc || !cc->kind || strcmp(cc->kind, "postgres") != 0) {
            snprintf(err, errlen, "no connection named '%s' of kind postgres in the "
                     "configuration", conn);
            return -1;
        }
        if (!cc->dsn) {
            snprintf(err, errlen, "connection %s has no dsn", conn);
            return -1;
        }
    }
    /* a configured pipeline's slot: its removal drops it.  With
     * --connection, only a pipeline on that connection (or the same dsn)
     * is refused here; one on another connection is told apart by the
     * process (the same database or not). */
    for (size_t i = 0; i < c->npipelines; i++) {
        const zx_conf_pipeline *pc = &c->pipelines[i];
        if (!is_postgres(pc) || strcmp(pc->slot, slot) != 0)
            continue;
        if (!cc || zx_conf_same_place(pc->conn, cc)) {
            snprintf(err, errlen, "slot %s belongs to pipeline %s: remove the pipeline from the "
                     "configuration and reload; zx drops it then", slot, pc->name);
            return -1;
        }
    }
    size_t n = 0;
    for (size_t i = 0; !cc && i < c->nconnections; i++)
        n += is_pg_conn(&c->connections[i]);
    if (!cc && n == 0) {
        snprintf(err, errlen, "no connection of kind postgres in the configuration: nowhere to "
                 "look for slot %s", slot);
        return -1;
    }
    return 0;
}

/* Drop slot on connection t: its line into the answer's lists. */
static void drop_on(const zx_conf_connection *t, const char *slot, const zx_pg_slot_user *users,
                    size_t nusers, json_t *dropped, json_t *on, json_t *failed, json_t *notes,
                    char *looked, size_t lookedlen)
{
    const char *shown = t->dsn_shown ? t->dsn_shown : "?";
    /* the publication of the same name (a derived slot and its derived
     * publication share it), if zx made it: pg_slot.h */
    zx_pg_slot_args d = {t->dsn, shown, slot, slot, 0, users, nusers, RETIRE_WAIT_MS,
                         RETIRE_PG_TIMEOUT_MS};
    char out[DROP_LINE_MAX], line[DROP_LINE_MAX + 200];
    int rc = zx_pg_slot_drop(&d, out, sizeof(out));
    snprintf(line, sizeof(line), "connection %s: %s%s", t->name, out,
             rc == ZX_PG_SLOT_KEPT ? "; remove the pipeline from the configuration and "
                                     "reload; zx drops it then" : "");
    if (rc == ZX_PG_SLOT_DROPPED) {
        json_array_append_new(dropped, json_string(line));
        json_array_append_new(on, json_string(t->name));
    } else if (rc == ZX_PG_SLOT_KEPT || rc < 0) {
        json_array_append_new(failed, json_string(line));
    } else {
        if (rc == ZX_PG_SLOT_FOREIGN)
            json_array_append_new(notes, json_string(line));
        size_t n = strlen(looked);
        snprintf(looked + n, lookedlen - n, "%s%s (%s)", n ? ", " : "", t->name, shown);
    }
}

/* The answer: "result", one line per connection the slot was dropped on,
 * and "dropped_on"; or "error" (the first failure, or that no connection
 * has the slot) and "errors" (the other lines). */
static int drop_slot_answer(const char *slot, json_t *dropped, json_t *on, json_t *failed,
                            json_t *notes, const char *looked, char *msg, size_t msglen,
                            json_t *answer)
{
    if (json_array_size(failed)) {
        snprintf(msg, msglen, "%s", json_string_value(json_array_get(failed, 0)));
        json_array_remove(failed, 0);
        json_array_extend(failed, dropped);
        json_object_set(answer, "errors", failed);
        json_object_set(answer, "dropped_on", on);
        return ZX_RETIRE_FAILED;
    }
    if (json_array_size(dropped)) {
        size_t i, n = 0;
        json_t *l;
        msg[0] = '\0';
        json_array_foreach(dropped, i, l) {
            snprintf(msg + n, msglen - n, "%s%s", n ? "\n" : "", json_string_value(l));
            n = strlen(msg);
        }
        json_object_set(answer, "dropped_on", on);
        return ZX_RETIRE_DONE;
    }
    snprintf(msg, msglen, "no configured postgres connection has replication slot %s "
             "(looked at: %s)", slot, looked);
    json_object_set(answer, "errors", notes);
    return ZX_RETIRE_FAILED;
}

static int drop_slot_run(const zx_conf *c, const char *slot, const json_t *req, char *msg,
                         size_t msglen, json_t *answer)
{
    const char *conn = json_string_value(json_object_get(req, "connection"));
    /* the pipelines still configured with a slot or publication of that
     * name: the server tells whether theirs is the same database */
    zx_pg_slot_user *users = c->npipelines ? calloc(c->npipelines, sizeof(*users)) : NULL;
    json_t *on = json_array(), *dropped = json_array(), *failed = json_array(),
           *notes = json_array();
    if ((c->npipelines && !users) || !on || !dropped || !failed || !notes) {
        snprintf(msg, msglen, "out of memory");
        free(users);
        json_decref(on), json_decref(dropped), json_decref(failed), json_decref(notes);
        return ZX_RETIRE_FAILED;
    }
    size_t nusers = users ? zx_pg_slot_users(c, slot, slot, users) : 0;
    char looked[2048] = "";
    for (size_t i = 0; i < c->nconnections; i++) {
        const zx_conf_connection *t = &c->connections[i];
        if (conn ? strcmp(t->name, conn) == 0 : is_pg_conn(t))
            drop_on(t, slot, users, nusers, dropped, on, failed, notes, looked, sizeof(looked));
    }
    int rc = drop_slot_answer(slot, dropped, on, failed, notes, looked, msg, msglen, answer);
    free(users);
    json_decref(on), json_decref(dropped), json_decref(failed), json_decref(notes);
    return rc;
}

static const zx_plugin_admin_opt drop_slot_opts[] = {
    {"connection", "CONN", "connection name", "drop-slot: the connection to drop the slot on"},
    {NULL, NULL, NULL, NULL},
};

const zx_plugin_admin zx_pg_admin_drop_slot = {
    .command = "drop-slot",
    .summary = "drop replication slot NAME that no configured pipeline uses",
    .usage = "drop-slot NAME [--connection CONN]",
    .help = "drop a Postgres replication slot left behind, on CONN or\n"
            "on every postgres connection configured (waiting up to\n"
            "10 s for it to be free), and the publication of the same\n"
            "name if zx made it; refused for a configured pipeline's\n"
            "slot (zx drops that once the pipeline is removed and\n"
            "the configuration reloaded); exit 1 if no connection\n"
            "has it\n",
    .options = drop_slot_opts,
    .what = "slot",
    .process = "slot-drop",
    .timeout_s = DROP_SLOT_TIMEOUT_S,
    .check = drop_slot_check,
    .run = drop_slot_run,
};
