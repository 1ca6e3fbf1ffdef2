/*
 * mysql_plugin.c — the plug-in mysql: destination mysql: tables of a MySQL
 * or MariaDB database (dest_mysql.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.c.
 * It has no option rows of its own: a table destination is the sync's
 * `destination.connection` and `destination.table` (sync_plugin.c).
 */
#include "conf/plugin.h"
#include "workers/destinations/dest.h"

extern const zx_dest zx_dest_mysql;   /* dest_mysql.c */

static const char *const conn_kinds[] = {"mysql", NULL};

const zx_plugin zx_plugin_dest_mysql = {
    .name = "mysql",
    .role = ZX_PLUGIN_DESTINATION,
    .caps = ZX_PLUGIN_DSN,
    .conn_kinds = conn_kinds,
    .dest = &zx_dest_mysql,
    .doc = "a table of a `kind: mysql` connection (MySQL or MariaDB).",
};
