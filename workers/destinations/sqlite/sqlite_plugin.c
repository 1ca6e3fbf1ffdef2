/*
 * sqlite_plugin.c — the plug-in sqlite: destination sqlite: tables of a
 * SQLite file (dest_sqlite.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.def.
 * Its option rows are here: the loader parses, checks, compares and frees
 * them, and conf/OPTIONS.md documents them, from this table.
 */
#include <stddef.h>

#include "conf/plugin.h"
#include "workers/destinations/dest.h"

extern const zx_dest zx_dest_sqlite;   /* dest_sqlite.c */

static const char *const conn_kinds[] = {"sqlite", NULL};

#define CONN(f) offsetof(zx_conf_connection, f)

static const zx_cf_option options[] = {
    {.section = "connections.<name>", .name = "path", .type = ZX_CF_PATH,
     .offset = CONN(path), .flags = ZX_CF_REQUIRED,
     .help = "The SQLite database file a reverse sync writes (created if "
     "missing); relative to the config file's folder."},
};

/* A `kind: sqlite` connection (conf/plugin.h check_connection): its path
 * made absolute, relative to the config file's folder. */
static int sqlite_check_connection(zx_cf_check *ck, zx_conf_connection *c)
{
    return zx_check_abspath(ck, "path", &c->path);
}

const zx_plugin zx_plugin_dest_sqlite = {
    .name = "sqlite",
    .role = ZX_PLUGIN_DESTINATION,
    .conn_kinds = conn_kinds,
    .dest = &zx_dest_sqlite,
    .options = options,
    .noptions = sizeof(options) / sizeof(options[0]),
    .doc = "a table of a `kind: sqlite` connection (a SQLite file).",
    .check_connection = sqlite_check_connection,
};
