/*
 * postgres_plugin.c — the plug-in postgres: source: postgres, change data
 * capture through logical replication (pg_cdc.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.c.
 * Its option rows still live in conf/options.c (issue 19 moves them here).
 */
#include "conf/plugin.h"
#include "workers/sources/postgres/pg_cdc_check.h"
#include "workers/sources/source.h"

extern const zx_source zx_source_postgres;   /* pg_cdc.c */

static const char *const conn_kinds[] = {"postgres", NULL};

const zx_plugin zx_plugin_postgres = {
    .name = "postgres",
    .role = ZX_PLUGIN_SOURCE,
    .conn_kinds = conn_kinds,
    .test = zx_pg_cdc_test,
    .source = &zx_source_postgres,
    .doc = "change data capture: the `tables` of the PostgreSQL database of "
     "`connection` are mirrored, each into a workspace table of its own "
     "name (with `table_prefix`), through logical replication (pgoutput, a "
     "publication and a replication slot). Needs `wal_level = logical` and "
     "a role with REPLICATION: `zxctl test <pipeline>` checks every "
     "requirement and says what is missing.",
};
