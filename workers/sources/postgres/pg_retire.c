/*
 * pg_retire.c — the retire hook of `source: postgres`: drop a gone
 * pipeline's replication slot and its publication (pg_retire.h), built on
 * pg_slot.c.
 */
#include "workers/sources/postgres/pg_retire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/plugin.h"
#include "workers/sources/postgres/postgres_opts.h"

#define RETIRE_WAIT_MS 10000   /* how long the slot may stay in use */
#define RETIRE_PG_TIMEOUT_MS 10000

static int same_str(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* 1 when a and b reach the same database for sure: the same dsn but for
 * its passwords (dsn_shown hides only those). */
static int same_place(const zx_conf_connection *a, const zx_conf_connection *b)
{
    return a == b || same_str(a->dsn_shown, b->dsn_shown) || same_str(a->dsn, b->dsn);
}

/* p's slot when p is a postgres pipeline with a connection and a slot,
 * else NULL. */
static const char *slot_of(const zx_conf_pipeline *p)
{
    return zx_postgres_is(p) && p->conn ? zx_postgres_opts_of(p)->slot : NULL;
}

/* A postgres pipeline with a slot on a database it can reach (its dsn
 * loaded). */
static int is_postgres(const zx_conf_pipeline *pc)
{
    return slot_of(pc) && pc->conn->dsn;
}

const char *zx_pg_retire_subject(const zx_conf_pipeline *p)
{
    return slot_of(p);
}

size_t zx_pg_slot_users(const zx_conf *conf, const char *slot, const char *publication,
                        zx_pg_slot_user *users)
{
    size_t n = 0;
    for (size_t i = 0; conf && i < conf->npipelines; i++) {
        const zx_conf_pipeline *pc = &conf->pipelines[i];
        if (!is_postgres(pc))
            continue;
        const zx_postgres_opts *o = zx_postgres_opts_of(pc);
        int us = same_str(o->slot, slot), up = same_str(o->publication, publication);
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
    const zx_postgres_opts *o = zx_postgres_opts_of(p);
    const zx_conf_connection *where = p->conn;
    const zx_conf_connection *now = conf ? zx_conf_find_connection(conf, p->conn->name) : NULL;
    if (now && now->dsn && same_place(now, p->conn))
        where = now;
    /* the pipelines still configured with the same slot or publication
     * name: the server tells whether theirs is the same database */
    zx_pg_slot_user *users = conf && conf->npipelines
                                 ? calloc(conf->npipelines, sizeof(*users)) : NULL;
    if (conf && conf->npipelines && !users) {
        snprintf(msg, msglen, "out of memory: replication slot %s is left (once fixed: zxctl "
                 "drop-slot %s)", o->slot, o->slot);
        return ZX_RETIRE_FAILED;
    }
    size_t n = users ? zx_pg_slot_users(conf, o->slot, o->publication, users) : 0;
    char out[4096];
    zx_pg_slot_args d = {where->dsn, where->dsn_shown ? where->dsn_shown : "?", o->slot,
                         o->publication, 1, users, n, RETIRE_WAIT_MS, RETIRE_PG_TIMEOUT_MS};
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
        same_str(cc->dsn_shown, d.dsn_shown))
        snprintf(msg, msglen, "%s (once fixed: zxctl drop-slot %s --connection %s)", out,
                 o->slot, cc->name);
    else
        snprintf(msg, msglen, "%s (once fixed, on that database: SELECT "
                 "pg_drop_replication_slot('%s'))", out, o->slot);
    return ZX_RETIRE_FAILED;
}
