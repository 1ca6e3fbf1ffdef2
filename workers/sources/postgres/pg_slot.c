/*
 * pg_slot.c — drop a gone pipeline's replication slot and the publication
 * zx made for it (pg_slot.h), on a normal libpq connection.
 *
 * Runs in a short-lived process of the supervisor's (supervisor/
 * retire.c: the source's retire hook, pg_retire.c, and `zxctl
 * drop-slot`).  It must never: drop a slot in use or one a configured
 * pipeline uses on the same database, drop a publication whose comment
 * does not say zx made it, show a dsn's password (only dsn_shown), or
 * wait without a deadline.
 */
#include "workers/sources/postgres/pg_slot.h"

#include <errno.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/pgconn.h"
#include "common/util.h"

/* How often a slot in use is looked at again while waiting. */
#define SLOT_POLL_MS 100

static PGconn *slot_connect(const char *dsn, const char *shown, int timeout_ms, char *err,
                            size_t errlen)
{
    zx_pg_connopts o = {
        .dsn = dsn, .shown = shown, .app = "zx slot drop",
        .connect_timeout_s = timeout_ms >= 2000 ? timeout_ms / 1000 : 2,
        .statement_timeout_ms = timeout_ms > 0 ? timeout_ms : 10000,
    };
    return zx_pg_connect(&o, err, errlen);
}

/* Which database c is on: "<system identifier>/<database>".  The system
 * identifier (pg_control_system(), PostgreSQL 9.6+) tells clusters apart;
 * where it may not be read, the postmaster's start time and port do.
 * 0, or -1 (err set). */
static int identity(PGconn *c, const char *shown, char *id, size_t idlen, char *err,
                    size_t errlen)
{
    if (zx_pg_value(c, shown, "reading the system identifier",
                    "SELECT (SELECT system_identifier::text FROM pg_control_system()) || '/' || "
                    "current_database()", 0, NULL, id, idlen, err, errlen) >= 0 ||
        zx_pg_value(c, shown, "reading the server's start time",
                    "SELECT pg_postmaster_start_time()::text || ':' || current_setting('port') "
                    "|| '/' || current_database()", 0, NULL, id, idlen, err, errlen) >= 0)
        return 0;
    return -1;
}

/* Whether user u's connection is the database c is on: 1 same, 0 not,
 * -1 cannot tell (why in err).  cid: c's identity, computed on first
 * need ("" until then). */
static int same_database(const zx_pg_slot_args *d, PGconn *c, char *cid, size_t cidlen,
                         const zx_pg_slot_user *u, int timeout_ms, char *err, size_t errlen)
{
    /* the same dsn, or the same but for its passwords (dsn_shown hides
     * only those) */
    if ((u->dsn && strcmp(u->dsn, d->dsn) == 0) ||
        (u->dsn_shown && d->dsn_shown && strcmp(u->dsn_shown, d->dsn_shown) == 0))
        return 1;
    if (!u->dsn)
        return zx_seterr(err, errlen, "its connection's dsn is not known");
    if (!cid[0] && identity(c, d->dsn_shown, cid, cidlen, err, errlen) < 0)
        return -1;
    PGconn *o = slot_connect(u->dsn, u->dsn_shown, timeout_ms, err, errlen);
    if (!o)
        return -1;
    char oid[300];
    int rc = identity(o, u->dsn_shown, oid, sizeof(oid), err, errlen);
    PQfinish(o);
    if (rc < 0)
        return -1;
    return strcmp(oid, cid) == 0;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* The slot as pg_replication_slots shows it. */
typedef struct slot_row {
    int exists;
    char type[16], database[200], here[200];
    int active;
    char pid[16], app[200], client[80];
} slot_row;

static int read_slot(PGconn *c, const zx_pg_slot_args *d, slot_row *s, char *err,
                     size_t errlen)
{
    const char *pv[1] = {d->slot};
    PGresult *r = zx_pg_exec(
        c, d->dsn_shown, "reading the replication slot",
        "SELECT s.slot_name IS NOT NULL, coalesce(s.slot_type, ''), "
        "coalesce(s.database::text, ''), current_database(), coalesce(s.active, false), "
        "coalesce(s.active_pid::text, ''), coalesce(a.application_name, ''), "
        "coalesce(host(a.client_addr), '') "
        "FROM (SELECT 1) x LEFT JOIN pg_replication_slots s ON s.slot_name = $1 "
        "LEFT JOIN pg_stat_activity a ON a.pid = s.active_pid",
        1, pv, err, errlen);
    if (!r)
        return -1;
    s->exists = PQgetvalue(r, 0, 0)[0] == 't';
    snprintf(s->type, sizeof(s->type), "%s", PQgetvalue(r, 0, 1));
    snprintf(s->database, sizeof(s->database), "%s", PQgetvalue(r, 0, 2));
    snprintf(s->here, sizeof(s->here), "%s", PQgetvalue(r, 0, 3));
    s->active = PQgetvalue(r, 0, 4)[0] == 't';
    snprintf(s->pid, sizeof(s->pid), "%s", PQgetvalue(r, 0, 5));
    snprintf(s->app, sizeof(s->app), "%s", PQgetvalue(r, 0, 6));
    snprintf(s->client, sizeof(s->client), "%s", PQgetvalue(r, 0, 7));
    PQclear(r);
    return 0;
}

/* Step 3: the slot.  One of ZX_PG_SLOT_DROPPED, _ABSENT, _FOREIGN, or -1;
 * out gets the sentence. */
static int drop_slot(PGconn *c, const zx_pg_slot_args *d, char *out, size_t outlen)
{
    slot_row s;
    int64_t deadline = zx_mono_ms() + (d->wait_ms > 0 ? d->wait_ms : 0);
    for (;;) {
        if (read_slot(c, d, &s, out, outlen) < 0)
            return -1;
        if (!s.exists) {
            zx_addf(out, outlen,
                    "replication slot %s does not exist on Postgres %s: nothing to drop",
                    d->slot, d->dsn_shown);
            return ZX_PG_SLOT_ABSENT;
        }
        if (strcmp(s.type, "logical") != 0) {
            zx_addf(out, outlen, "replication slot %s on Postgres %s is a %s slot (a standby's?), "
                    "not one zx makes: left alone", d->slot, d->dsn_shown, s.type);
            return ZX_PG_SLOT_FOREIGN;
        }
        if (strcmp(s.database, s.here) != 0) {
            zx_addf(out, outlen, "replication slot %s on Postgres %s is a slot of database %s, not "
                    "of %s: left alone", d->slot, d->dsn_shown, s.database, s.here);
            return ZX_PG_SLOT_FOREIGN;
        }
        if (!s.active || zx_mono_ms() >= deadline)
            break;
        sleep_ms(SLOT_POLL_MS);
    }
    if (s.active) {
        zx_addf(out, outlen, "replication slot %s on Postgres %s is still in use after %d s, held "
                "by process %s", d->slot, d->dsn_shown, (d->wait_ms + 999) / 1000,
                s.pid[0] ? s.pid : "(unknown)");
        if (s.app[0] || s.client[0])
            zx_addf(out, outlen, " (%s%s%s%s%s)", s.app[0] ? "application_name " : "", s.app,
                    s.app[0] && s.client[0] ? ", " : "", s.client[0] ? "client " : "", s.client);
        zx_addf(out, outlen, ": stop that client (or SELECT pg_terminate_backend(%s))",
                s.pid[0] ? s.pid : "pid");
        return -1;
    }
    const char *pv[1] = {d->slot};
    PGresult *r = zx_pg_exec(c, d->dsn_shown, "dropping the replication slot",
                             "SELECT pg_drop_replication_slot($1)", 1, pv, out, outlen);
    if (!r)
        return -1;
    PQclear(r);
    zx_addf(out, outlen, "replication slot %s dropped on Postgres %s", d->slot, d->dsn_shown);
    return ZX_PG_SLOT_DROPPED;
}

/* Step 4: the publication, if zx made it.  0, or -1; appends to out. */
static int drop_publication(PGconn *c, const zx_pg_slot_args *d, char *out, size_t outlen)
{
    const char *pv[1] = {d->publication};
    char err[800] = "";
    PGresult *r = zx_pg_exec(c, d->dsn_shown, "reading the publication",
                             "SELECT coalesce(obj_description(oid, 'pg_publication'), '') "
                             "FROM pg_publication WHERE pubname = $1", 1, pv, err, sizeof(err));
    if (!r) {
        zx_addf(out, outlen, "; but the publication %s could not be looked at: %s", d->publication,
                err);
        return -1;
    }
    if (PQntuples(r) == 0) {
        PQclear(r);
        zx_addf(out, outlen, "; publication %s does not exist", d->publication);
        return 0;
    }
    const char *comment = PQgetvalue(r, 0, 0);
    size_t pl = strlen(ZX_PG_PUB_COMMENT);
    if (strncmp(comment, ZX_PG_PUB_COMMENT, pl) != 0) {
        PQclear(r);
        zx_addf(out, outlen, "; publication %s kept: zx did not make it (its comment does not "
                "start with '%s')", d->publication, ZX_PG_PUB_COMMENT);
        return 0;
    }
    char made_for[200];
    snprintf(made_for, sizeof(made_for), "%s", comment + pl);
    made_for[strcspn(made_for, "\r\n")] = '\0';
    PQclear(r);
    r = zx_pg_exec(c, d->dsn_shown, "building the statement",
                   "SELECT format('DROP PUBLICATION IF EXISTS %I', $1::text)", 1, pv, err,
                   sizeof(err));
    PGresult *x = NULL;
    if (r)
        x = zx_pg_exec(c, d->dsn_shown, "dropping the publication", PQgetvalue(r, 0, 0), 0, NULL,
                       err, sizeof(err));
    PQclear(r);
    if (!x) {
        zx_addf(out, outlen, "; but the publication %s (made by zx) could not be dropped: %s",
                d->publication, err);
        return -1;
    }
    PQclear(x);
    zx_addf(out, outlen, "; publication %s (made by zx for pipeline %s) dropped", d->publication,
            made_for[0] ? made_for : "?");
    return 0;
}

int zx_pg_slot_drop(const zx_pg_slot_args *d, char *out, size_t outlen)
{
    int timeout_ms = d->timeout_ms > 0 ? d->timeout_ms : 10000;
    out[0] = '\0';
    PGconn *c = slot_connect(d->dsn, d->dsn_shown, timeout_ms, out, outlen);
    if (!c)
        return -1;

    /* step 2: names a configured pipeline uses on this database are kept */
    char cid[300] = "", why[800];
    const zx_pg_slot_user *slot_user = NULL, *pub_user = NULL;
    int slot_same = 0, pub_same = 0;
    char slot_why[800] = "", pub_why[800] = "";
    for (size_t i = 0; i < d->nusers; i++) {
        const zx_pg_slot_user *u = &d->users[i];
        int wants_slot = u->slot && !slot_user;
        int wants_pub = u->publication && d->publication && !pub_user;
        if (!wants_slot && !wants_pub)
            continue;
        why[0] = '\0';
        int same = same_database(d, c, cid, sizeof(cid), u, timeout_ms, why, sizeof(why));
        if (same == 0)
            continue;
        if (wants_slot) {
            slot_user = u;
            slot_same = same;
            snprintf(slot_why, sizeof(slot_why), "%s", why);
        }
        if (wants_pub) {
            pub_user = u;
            pub_same = same;
            snprintf(pub_why, sizeof(pub_why), "%s", why);
        }
    }
    int rc;
    if (slot_user) {
        if (slot_same == 1)
            zx_addf(out, outlen, "replication slot %s is pipeline %s's (on the same database: "
                    "Postgres %s): not dropped", d->slot, slot_user->pipeline, d->dsn_shown);
        else
            zx_addf(out, outlen, "replication slot %s on Postgres %s not dropped: pipeline %s uses "
                    "a slot of that name on Postgres %s, which may be the same database and "
                    "could not be told apart (%s)", d->slot, d->dsn_shown, slot_user->pipeline,
                    slot_user->dsn_shown ? slot_user->dsn_shown : "?", slot_why);
        rc = ZX_PG_SLOT_KEPT;
        goto done;
    }

    rc = drop_slot(c, d, out, outlen);
    int pub = d->publication &&
              (rc == ZX_PG_SLOT_DROPPED ||
               (d->publication_always && (rc == ZX_PG_SLOT_ABSENT || rc == ZX_PG_SLOT_FOREIGN)));
    if (!pub)
        goto done;
    if (pub_user) {
        if (pub_same == 1)
            zx_addf(out, outlen, "; publication %s kept: pipeline %s uses it", d->publication,
                    pub_user->pipeline);
        else
            zx_addf(out, outlen, "; publication %s kept: pipeline %s uses a publication of that "
                    "name on Postgres %s, which may be the same database (%s)", d->publication,
                    pub_user->pipeline, pub_user->dsn_shown ? pub_user->dsn_shown : "?", pub_why);
        goto done;
    }
    if (drop_publication(c, d, out, outlen) < 0)
        rc = -1;
done:
    PQfinish(c);
    return rc;
}
