/*
 * pg_slot.h — drop a Postgres CDC pipeline's replication slot, and the
 * publication zx made for it, once the pipeline is gone: after a reload
 * removed the pipeline (or moved it to another slot or database: the
 * source's retire hook, pg_retire.h), and for `zxctl drop-slot NAME` (a slot left behind).  supervisor/retire.c runs
 * it in a short-lived process of its own, as it runs `zxctl test`.
 *
 * zx_pg_slot_drop works on a normal connection (libpq, not a replication
 * one), in this order:
 *   1. connect to the dsn (connect_timeout and statement_timeout from
 *      timeout_ms);
 *   2. each pipeline still configured that uses the same slot or
 *      publication name (users): when its connection is the same database
 *      (the same dsn, or the same dsn_shown: they differ only in their
 *      passwords; else the same current_database() and system identifier,
 *      so a second connection per such pipeline),
 *      or when that cannot be told (its server unreachable), its name is
 *      kept: a slot of a running pipeline is never dropped;
 *   3. the slot: absent is fine (nothing to drop); a physical slot, or a
 *      logical slot of another database, is left alone (zx made neither);
 *      a slot in use (the worker was just stopped) is waited for, up to
 *      wait_ms, and if it stays in use the answer names the process that
 *      holds it (pg_replication_slots.active_pid, with its
 *      application_name and client address from pg_stat_activity); then
 *      pg_drop_replication_slot;
 *   4. the publication (when given, and when the slot was dropped, or was
 *      absent or not ours with publication_always): dropped only if its
 *      comment starts with ZX_PG_PUB_COMMENT (zx made it: `COMMENT ON
 *      PUBLICATION p IS 'zx: created for pipeline <name>'`, the convention
 *      of the CDC worker); one with another comment or none is the user's
 *      and is never dropped; absent is fine.
 * Names go to the server as parameters and are quoted by it
 * (format('%I')), never by hand.
 *
 * It must never: show the dsn's password (messages name dsn_shown only),
 * drop a slot that is in use or belongs to a pipeline still configured on
 * the same database, drop a publication zx did not make, or run longer
 * than about timeout_ms per connection plus wait_ms.
 */
#ifndef ZX_SOURCES_PG_SLOT_H
#define ZX_SOURCES_PG_SLOT_H

#include <stddef.h>

/* How a publication zx made starts its comment; the pipeline's name
 * follows.  The CDC worker writes it (workers/sources/postgres/pg_cdc_setup.c). */
#define ZX_PG_PUB_COMMENT "zx: created for pipeline "

/* A pipeline of the running configuration whose slot or publication has
 * the name being dropped (step 2 above).  Strings are the caller's. */
typedef struct zx_pg_slot_user {
    const char *pipeline;     /* its name, for messages */
    const char *dsn;          /* its connection's dsn (may hold a password) */
    const char *dsn_shown;    /* the same with passwords as *** */
    int slot;                 /* 1: its slot has the name */
    int publication;          /* 1: its publication has the name */
} zx_pg_slot_user;

/* What to drop, and where.  Strings are the caller's and must stay valid
 * during the call. */
typedef struct zx_pg_slot_args {
    const char *dsn;          /* libpq connection string (URI or key=value) */
    const char *dsn_shown;    /* dsn with passwords as ***: what messages show */
    const char *slot;         /* the replication slot */
    const char *publication;  /* the publication to drop if zx made it; NULL:
                                 no publication */
    int publication_always;   /* 1: the publication also when the slot is
                                 absent or not zx's (a removed pipeline);
                                 0: only where the slot was dropped */
    const zx_pg_slot_user *users;  /* nusers of them; NULL when none */
    size_t nusers;
    int wait_ms;              /* how long the slot may stay in use (10000) */
    int timeout_ms;           /* connect and statement timeout (10000) */
} zx_pg_slot_args;

/* The outcomes of zx_pg_slot_drop (-1: failed). */
enum {
    ZX_PG_SLOT_DROPPED = 0,   /* the slot was there and is dropped */
    ZX_PG_SLOT_ABSENT = 1,    /* no slot of that name: nothing to drop */
    ZX_PG_SLOT_FOREIGN = 2,   /* a slot of that name exists but is no slot
                                 zx makes here (physical, or of another
                                 database): left alone */
    ZX_PG_SLOT_KEPT = 3       /* a configured pipeline uses it on the same
                                 database (or one that could not be reached
                                 to tell): left alone, and its publication */
};

/* Drop d->slot (and d->publication) as described above.  Returns one of
 * ZX_PG_SLOT_* with one paragraph in out saying what was done to the slot
 * and to the publication (e.g. "replication slot zx_a dropped on Postgres
 * postgresql://zx:***@db1/shop; publication zx_a (made by zx for pipeline
 * a) dropped"), or -1 with what failed in out: the server unreachable or
 * refusing the login, the slot still in use after wait_ms ("... held by
 * process 4242 (application_name zx-a, client 10.0.0.5)"), a statement
 * refused (no REPLICATION, not the publication's owner), or out of memory.
 * A failure after the slot was dropped (the publication) says both.  out
 * is always NUL-terminated (outlen > 0) and never holds the dsn's
 * password. */
int zx_pg_slot_drop(const zx_pg_slot_args *d, char *out, size_t outlen);

#endif
