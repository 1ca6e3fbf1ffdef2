/*
 * sqlite_plugin.c — the plug-in sqlite: destination sqlite: tables of a
 * SQLite file (dest_sqlite.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.c.
 * Its option rows still live in conf/options.c (issue 19 moves them here).
 */
#include "conf/plugin.h"
#include "workers/destinations/dest.h"

extern const zx_dest zx_dest_sqlite;   /* dest_sqlite.c */

static const char *const conn_kinds[] = {"sqlite", NULL};

const zx_plugin zx_plugin_dest_sqlite = {
    .name = "sqlite",
    .role = ZX_PLUGIN_DESTINATION,
    .conn_kinds = conn_kinds,
    .dest = &zx_dest_sqlite,
    .doc = "a table of a `kind: sqlite` connection (a SQLite file).",
};
