/*
 * pg_cdc_check.h — what Postgres change data capture needs of a server, a
 * role and the tables, checked before anything is created: `zxctl test
 * <pipeline>` and `zxctl test <connection>` for `source: postgres` /
 * `kind: postgres` (supervisor/probe.c runs it in a prober process).
 *
 * zx_pg_cdc_check connects with libpq (a normal connection, not a
 * replication one), reads, and changes nothing.  In this order, it stops
 * at the first problem and says exactly what is missing and the command
 * that fixes it:
 *   1. the server is reachable and the password accepted (the message
 *      names the connection's dsn_shown, never its password);
 *   2. wal_level = logical;
 *   3. the role has REPLICATION, or is a superuser;
 *   4. a free replication slot (max_replication_slots minus the slots that
 *      exist), unless the pipeline's slot exists already (then it must be
 *      a pgoutput slot of this database);
 *   5. a free WAL sender (max_wal_senders minus the walsenders running);
 *   with a pipeline only (p not NULL):
 *   6. each table: it exists (a table, or a partitioned table), the role
 *      may read it (USAGE on its schema, SELECT on it), and it has a
 *      replica identity (a primary key, or REPLICA IDENTITY FULL or USING
 *      INDEX: without one, publishing it would make its UPDATEs and
 *      DELETEs fail on the source);
 *   7. the publication: if it exists, that it publishes inserts, updates
 *      and deletes and covers every table; if not, that the role may
 *      create it (a superuser; else CREATE on the database and ownership
 *      of every table, PostgreSQL 15's rule for CREATE PUBLICATION ... FOR
 *      TABLE).
 * On success `out` holds one paragraph: the server's version, wal_level,
 * slots free/total, senders free/total, the tables with their estimated
 * rows (pg_class.reltuples), and whether the publication and the slot
 * exist or will be created.
 *
 * The decisions "these values -> this message" are pure functions below,
 * so that every message is unit-tested without a server (there is no
 * second server with wal_level = replica in the tests).  Each returns 0
 * when the values are fine (out untouched) or -1 with the message in out.
 * Names passed to them are already quoted as SQL wants them (the server's
 * quote_ident / format('%I.%I')).
 *
 * It must never: create, alter or drop anything (no slot, no publication);
 * print the dsn's password; take longer than timeout_ms (connect_timeout
 * and statement_timeout are set from it); or issue more than a handful of
 * statements however many tables (they go as arrays).
 */
#ifndef ZX_SOURCES_PG_CDC_CHECK_H
#define ZX_SOURCES_PG_CDC_CHECK_H

#include <stddef.h>

#include "conf/config.h"

/* 1 when msg, libpq's message for a connection that failed, is the
 * server's answer to the settings, which no retry changes until someone
 * changes them: a password refused (or none given), a role or database
 * that does not exist, no pg_hba.conf entry (for replication connections
 * too), no CONNECT right.  0 for what may pass (the server unreachable,
 * starting up or shutting down, too many connections).  NULL: 0. */
int zx_pg_conn_refused(const char *msg);

/* Check connection c (kind postgres) and, when p is not NULL, pipeline p
 * (source postgres, p->conn == c) within timeout_ms.  0 with the summary
 * in out; or, with what is missing and how to fix it in out:
 * ZX_PG_CDC_REFUSED when the server answered and refuses the
 * configuration (password or role refused, wal_level, REPLICATION, a
 * table missing, unreadable or without a key, a publication or slot that
 * does not fit): asking again gets the same answer until someone changes
 * the server or the configuration; -1 for anything a retry may get past
 * (unreachable, a timeout, no free slot or WAL sender, out of memory).
 * out is always NUL-terminated (outlen > 0); a long list of tables is cut
 * with "and N more". */
#define ZX_PG_CDC_REFUSED (-2)
int zx_pg_cdc_check(const zx_conf_connection *c, const zx_conf_pipeline *p, int timeout_ms,
                    char *out, size_t outlen);

/* The shape of zx_source.test (workers/sources/source.h), for the table of
 * testers of workers/sources/registry.c: zx_pg_cdc_check(c, p, ...).  c
 * may be NULL when p is given (p->conn is used). */
int zx_pg_cdc_test(const zx_conf *conf, const zx_conf_pipeline *p, const zx_conf_connection *c,
                   int timeout_ms, char *out, size_t outlen);

/* ---- the decisions, pure ------------------------------------------------ */

/* wal_level (as the server says it): "logical" is fine; anything else
 * (replica, minimal) gives "Postgres says wal_level is replica; set
 * wal_level = logical (ALTER SYSTEM SET wal_level = logical) and restart
 * the server". */
int zx_pg_cdc_wal_level_msg(const char *wal_level, char *out, size_t outlen);

/* The role (quoted) may stream changes: REPLICATION or superuser; else
 * `... ALTER ROLE "x" REPLICATION`. */
int zx_pg_cdc_role_msg(const char *role, int replication, int superuser, char *out,
                       size_t outlen);

/* Replication slots: max (max_replication_slots) and used (slots that
 * exist).  Fine when one is free, or when the pipeline's slot exists
 * (slot_exists; it takes no new one); else what to raise or drop. */
int zx_pg_cdc_slots_msg(long max, long used, int slot_exists, char *out, size_t outlen);

/* WAL senders: max (max_wal_senders) and active (walsenders running).
 * Fine when one is free; else what to raise. */
int zx_pg_cdc_senders_msg(long max, long active, char *out, size_t outlen);

/* One table as the catalog shows it to the role: exists, relkind
 * (pg_class), schema_usage (USAGE on its schema), select (SELECT on it),
 * ident: the replica identity usable as the mirror's key ('d' or 'f' with
 * a primary key, 'i' give 1; 'd' without one, 'n' give 0; 'f' without a
 * primary key gives 2: a clear refusal, a whole row is no key).  table: quoted schema.table;
 * schema: its quoted schema; role: quoted; near: an existing table of the
 * same name without regard to case (quoted), or NULL, said when the table
 * does not exist. */
typedef struct zx_pg_cdc_table {
    const char *table, *schema;
    int exists;
    char relkind;
    int schema_usage, select, ident;
    const char *near;
} zx_pg_cdc_table;
int zx_pg_cdc_table_msg(const zx_pg_cdc_table *t, const char *role, const char *database,
                        char *out, size_t outlen);

#endif
