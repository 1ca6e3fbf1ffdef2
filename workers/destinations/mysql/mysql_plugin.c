/*
 * mysql_plugin.c — the plug-in mysql: destination mysql: tables of a MySQL
 * or MariaDB database (dest_mysql.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.c.
 * Its option rows still live in conf/options.c (issue 19 moves them here).
 */
#include "conf/plugin.h"
#include "workers/destinations/dest.h"

extern const zx_dest zx_dest_mysql;   /* dest_mysql.c */

static const char *const conn_kinds[] = {"mysql", NULL};

const zx_plugin zx_plugin_dest_mysql = {
    .name = "mysql",
    .role = ZX_PLUGIN_DESTINATION,
    .conn_kinds = conn_kinds,
    .dest = &zx_dest_mysql,
    .doc = "a table of a `kind: mysql` connection (MySQL or MariaDB).",
};
