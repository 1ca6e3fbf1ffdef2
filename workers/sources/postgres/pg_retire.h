/*
 * pg_retire.h — the retire hook of `source: postgres` (conf/plugin.h,
 * zx_plugin.retire): when a reload removed a Postgres CDC
 * pipeline, or moved it off its replication slot (another slot name,
 * another database, another source), drop its old slot and the publication
 * zx made for it, with pg_slot.h's rules (never a slot in use past a wait,
 * never one a configured pipeline uses on the same database, never a
 * publication zx did not make).  supervisor/retire.c calls it in a process
 * of its own.
 */
#ifndef ZX_SOURCES_PG_RETIRE_H
#define ZX_SOURCES_PG_RETIRE_H

#include <stddef.h>

#include "conf/config.h"
#include "conf/plugin.h"
#include "workers/sources/postgres/pg_slot.h"

/* Drop p's slot (p->slot) and its publication (p->publication, if zx made
 * it) on p's connection: the one of that name in conf when it still
 * reaches the same place (its password may have been rotated), else p's
 * own (the old configuration's).  The pipelines of conf using the same
 * slot or publication name keep them (pg_slot.h, users).  Returns
 * ZX_RETIRE_DONE (dropped, or there was none), ZX_RETIRE_KEPT (still used,
 * or not a slot zx makes) or ZX_RETIRE_FAILED; msg (msglen > 0) says what
 * was done, or what failed and how to finish by hand (`zxctl drop-slot`
 * while the connection is configured as it was, else the SQL to run), and
 * never holds a password. */
int zx_pg_retire(const zx_conf *conf, const zx_conf_pipeline *p, char *msg, size_t msglen);

/* p's replication slot, or NULL when p has none to retire (not a postgres
 * pipeline, or no connection or dsn).  Points into p. */
const char *zx_pg_retire_subject(const zx_conf_pipeline *p);

/* The postgres pipelines of conf whose slot is called slot or whose
 * publication is called publication (either may be NULL), into users
 * (room for conf->npipelines; strings point into conf): pg_slot.h's
 * users, which a drop leaves alone on their database.  Returns how many. */
size_t zx_pg_slot_users(const zx_conf *conf, const char *slot, const char *publication,
                        zx_pg_slot_user *users);

/* `zxctl drop-slot NAME [--connection CONN]` (zx_plugin.admin of `source:
 * postgres`): drop replication slot NAME left behind, and the publication
 * of the same name if zx made it (pg_slot.h's rules), on connection CONN
 * or on every postgres connection configured.  check refuses a bad slot
 * name, an unknown or non-postgres connection, the slot of a configured
 * pipeline (on that connection, or any without --connection), or a
 * configuration without postgres connections.  run answers "result" (one
 * line per connection it was dropped on) and "dropped_on" (their names);
 * or "error" (the first failure, or that no connection has it, naming
 * those looked at) and "errors" (the other lines). */
extern const zx_plugin_admin zx_pg_admin_drop_slot;

#endif
