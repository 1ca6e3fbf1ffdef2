/*
 * postgres_plugin.c — the plug-in postgres: destination postgres: tables
 * of a PostgreSQL database, rows by COPY (dest_postgres.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.c.
 * It has no option rows of its own: a table destination is the sync's
 * `destination.connection` and `destination.table` (sync_plugin.c).
 */
#include "conf/plugin.h"
#include "workers/destinations/dest.h"

extern const zx_dest zx_dest_postgres;   /* dest_postgres.c */

static const char *const conn_kinds[] = {"postgres", NULL};

const zx_plugin zx_plugin_dest_postgres = {
    .name = "postgres",
    .role = ZX_PLUGIN_DESTINATION,
    .caps = ZX_PLUGIN_DSN,
    .conn_kinds = conn_kinds,
    .dest = &zx_dest_postgres,
    .doc = "a table of a `kind: postgres` connection.",
};
