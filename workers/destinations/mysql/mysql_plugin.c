/*
 * mysql_plugin.c — the plug-in mysql: destination mysql: tables of a MySQL
 * or MariaDB database (dest_mysql.c).
 * Its registration (conf/plugin.h), listed once in workers/plugins.def.
 * It has no option rows of its own: a table destination is the sync's
 * `destination.connection` and `destination.table` (sync_plugin.c).
 */
#include "common/dsn.h"
#include "common/mysql_dsn.h"
#include "conf/plugin.h"
#include "workers/destinations/dest.h"

extern const zx_dest zx_dest_mysql;   /* dest_mysql.c */

static const char *const conn_kinds[] = {"mysql", NULL};

/* A `kind: mysql` connection (conf/plugin.h check_connection): a whole
 * mysql:// URI, as the destination will read it (a reference skipped
 * under ZX_CONF_SKIP_SECRETS is not checked), and c->dsn_shown, that URI
 * without its password. */
static int mysql_check_connection(zx_cf_check *ck, zx_conf_connection *c)
{
    const char *txt = c->dsn ? c->dsn : zx_check_text(ck, "dsn");
    int r = 0;

    if (txt && !zx_dsn_is_mysql(txt)) {
        zx_check_error(ck, "dsn", "connections.%s: kind %s needs a dsn of the form "
                       "mysql://user:password@host:3306/database", c->name, c->kind);
        r = -1;
    } else if (c->dsn) {
        zx_mysql_dsn d;
        const char *why = NULL;
        if (zx_mysql_dsn_parse(c->dsn, &d, &why) < 0) {
            zx_check_error(ck, "dsn", "connections.%s: dsn: %s", c->name,
                           why ? why : "not a mysql:// URI");
            r = -1;
        } else {
            zx_mysql_dsn_free(&d);
        }
    }
    if (!(c->dsn_shown = zx_mysql_dsn_redact(txt ? txt : ""))) {
        zx_check_error(ck, "dsn", "out of memory");
        r = -1;
    }
    return r;
}

const zx_plugin zx_plugin_dest_mysql = {
    .name = "mysql",
    .role = ZX_PLUGIN_DESTINATION,
    .caps = ZX_PLUGIN_DSN,
    .conn_kinds = conn_kinds,
    .dest = &zx_dest_mysql,
    .doc = "a table of a `kind: mysql` connection (MySQL or MariaDB).",
    .check_connection = mysql_check_connection,
};
