/*
 * workspace_open.c — zx_ws_open: the workspace backend the configuration
 * names (workspace.h).  Apart from workspace.c so that the backends and
 * their unit tests need no configuration.
 */
#include "conf/config.h"
#include "workers/writer/workspace.h"

zx_ws *zx_ws_open(const struct zx_conf *c, const char *owner, int *locked, char *err,
                  size_t errlen)
{
    if (c->ws_kind == ZX_WS_KIND_POSTGRES)
        return zx_ws_open_postgres(c->pg_dsn, c->pg_dsn_shown, c->pg_schema,
                                   c->pg_application_name, owner, locked, err, errlen);
    return zx_ws_open_sqlite(c->sqlite_path, c->sqlite_synchronous, owner, locked, err, errlen);
}
