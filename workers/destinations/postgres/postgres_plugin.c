/*
 * postgres_plugin.c — the plug-in postgres: destination postgres: tables
 * of a PostgreSQL database, rows by COPY (dest_postgres.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.def.
 * It has no option rows of its own: a table destination is the sync's
 * `destination.connection` and `destination.table` (sync_plugin.c).
 */
#include "common/dsn.h"
#include "conf/plugin.h"
#include "workers/destinations/dest.h"

extern const zx_dest zx_dest_postgres;   /* dest_postgres.c */

static const char *const conn_kinds[] = {"postgres", NULL};

/* A `kind: postgres` connection (conf/plugin.h check_connection): a dsn
 * libpq takes, and c->dsn_shown, that dsn without its password (dsn NULL:
 * a secret skipped under ZX_CONF_SKIP_SECRETS, shown as written,
 * references unresolved; or refused, reported already). */
static int pg_check_connection(zx_cf_check *ck, zx_conf_connection *c)
{
    const char *txt = c->dsn ? c->dsn : zx_check_text(ck, "dsn");

    if (!txt)
        return 0;
    if (zx_dsn_is_mysql(txt)) {
        zx_check_error(ck, "dsn", "connections.%s: kind %s needs a dsn libpq takes "
                       "(postgresql://... or key=value pairs), not mysql://", c->name, c->kind);
        return -1;
    }
    if (!(c->dsn_shown = zx_dsn_redact(txt))) {
        zx_check_error(ck, "dsn", "out of memory");
        return -1;
    }
    return 0;
}

const zx_plugin zx_plugin_dest_postgres = {
    .name = "postgres",
    .role = ZX_PLUGIN_DESTINATION,
    .caps = ZX_PLUGIN_DSN,
    .conn_kinds = conn_kinds,
    .dest = &zx_dest_postgres,
    .doc = "a table of a `kind: postgres` connection.",
    .check_connection = pg_check_connection,
};
