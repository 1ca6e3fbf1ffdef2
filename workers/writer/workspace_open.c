/*
 * workspace_open.c — zx_ws_open: the workspace backend the configuration
 * names, and zx_ws_test for `zxctl test workspace` (workspace.h).  Apart
 * from workspace.c so that the backends and their unit tests need no
 * configuration.
 */
#include "conf/config.h"
#include "workers/writer/workspace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* workspace.sqlite.page_size ("4KiB" ... "64KiB", checked by the
 * configuration) in bytes; 0 when not set. */
static int sqlite_page_size(const struct zx_conf *c)
{
    return c->sqlite_page_size ? atoi(c->sqlite_page_size) * 1024 : 0;
}

zx_ws *zx_ws_open(const struct zx_conf *c, const char *owner, const char *instance,
                  int *locked, char *err, size_t errlen)
{
    if (c->ws_kind == ZX_WS_KIND_POSTGRES)
        return zx_ws_open_postgres(c->pg_dsn, c->pg_dsn_shown, c->pg_schema,
                                   c->pg_application_name, owner,
                                   c->pg_shared ? instance : NULL, locked, err, errlen);
    return zx_ws_open_sqlite(c->sqlite_path, c->sqlite_synchronous,
                             sqlite_page_size(c), owner, locked, err, errlen);
}

int zx_ws_test(const struct zx_conf *c, char *out, size_t outlen)
{
    if (c->ws_kind == ZX_WS_KIND_POSTGRES) {
        if (!c->pg_dsn) {
            snprintf(out, outlen, "the workspace dsn was not resolved (a reference to a secret)");
            return -1;
        }
        return zx_ws_test_postgres(c->pg_dsn, c->pg_dsn_shown, c->pg_schema, out, outlen);
    }
    /* SQLite: the database file, or its folder when it does not exist yet */
    struct stat st;
    if (stat(c->sqlite_path, &st) == 0) {
        if (access(c->sqlite_path, R_OK | W_OK) != 0) {
            snprintf(out, outlen, "SQLite %s: not readable and writable by uid %ld: %s",
                     c->sqlite_path, (long)geteuid(), strerror(errno));
            return -1;
        }
        snprintf(out, outlen, "SQLite %s: %lld bytes, readable and writable", c->sqlite_path,
                 (long long)st.st_size);
        return 0;
    }
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s", c->sqlite_path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = '\0'; /* the root folder */
    else if (slash)
        *slash = '\0';
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(out, outlen, "SQLite %s does not exist and its folder %s is not writable: %s",
                 c->sqlite_path, dir, strerror(errno));
        return -1;
    }
    snprintf(out, outlen, "SQLite %s does not exist yet; zxd creates it in %s", c->sqlite_path,
             dir);
    return 0;
}
