/*
 * workspace_pg_test.c — `zxctl test workspace` on Postgres: connect with
 * the workspace's settings on a connection of its own, and say what zx
 * has and what it lacks (the schema, CREATE and USAGE on it, the writer
 * lock and who holds it).
 *
 * It must never: take the writer lock (it only looks), change anything,
 * or show the DSN's password.
 */
#include "workers/writer/workspace.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>

#include "common/pgconn.h"
#include "workers/writer/workspace_pg_int.h"

/* First value of a one-row query with up to 2 parameters, into out ("" on
 * no row).  0, or -1 with the error in out. */
static int one(PGconn *c, const char *sql, const char *p1, const char *p2, char *out,
               size_t outlen)
{
    const char *pv[2] = { p1, p2 };
    int n = p2 ? 2 : p1 ? 1 : 0;
    /* the error, if any, goes where the value would */
    return zx_pg_value(c, NULL, NULL, sql, n, pv, out, outlen, out, outlen) < 0 ? -1 : 0;
}

int zx_ws_test_postgres(const char *dsn, const char *dsn_shown, const char *schema, char *out,
                        size_t outlen)
{
    zx_pg_connopts o = { .dsn = dsn, .shown = dsn_shown, .app = "zxctl test",
                         .connect_timeout_s = 10 };
    PGconn *c = zx_pg_connect(&o, out, outlen);
    if (!c)
        return -1;
    char ver[64] = "", user[128] = "", db[128] = "", exists[8] = "", create[8] = "",
         usage[8] = "", dbcreate[8] = "", holder[400] = "";
    int rc = -1;
    if (one(c, "SELECT current_setting('server_version')", NULL, NULL, ver, sizeof(ver)) < 0 ||
        one(c, "SELECT current_user", NULL, NULL, user, sizeof(user)) < 0 ||
        one(c, "SELECT current_database()", NULL, NULL, db, sizeof(db)) < 0 ||
        one(c, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", schema, NULL, exists,
            sizeof(exists)) < 0 ||
        one(c, "SELECT has_database_privilege(current_database(), 'CREATE')", NULL, NULL,
            dbcreate, sizeof(dbcreate)) < 0) {
        snprintf(out, outlen, "Postgres %s: %s", dsn_shown, ver[0] ? user : ver);
        goto done;
    }
    if (strcmp(exists, "0") == 0) {
        if (strcmp(dbcreate, "t") == 0)
            snprintf(out, outlen, "Postgres %s (server %s, database %s, role %s): schema %s does "
                     "not exist yet; zxd will create it (the role may create schemas)",
                     dsn_shown, ver, db, user, schema);
        else
            snprintf(out, outlen, "Postgres %s (server %s, database %s, role %s): schema %s does "
                     "not exist and role %s may not create it: CREATE SCHEMA \"%s\" AUTHORIZATION "
                     "\"%s\", or set workspace.postgres.schema", dsn_shown, ver, db, user,
                     schema, user, schema, user);
        rc = strcmp(dbcreate, "t") == 0 ? 0 : -1;
        goto done;
    }
    if (one(c, "SELECT has_schema_privilege($1, 'CREATE')", schema, NULL, create,
            sizeof(create)) < 0 ||
        one(c, "SELECT has_schema_privilege($1, 'USAGE')", schema, NULL, usage,
            sizeof(usage)) < 0) {
        snprintf(out, outlen, "Postgres %s: %s", dsn_shown, create);
        goto done;
    }
    /* the writer lock: held by whom (a running zxd holds it) */
    char k1[16], k2[16];
    snprintf(k1, sizeof(k1), "%d", WSP_LOCK_CLASS);
    snprintf(k2, sizeof(k2), "%d", (int)zx_wsp_lock_key(schema));
    if (one(c, "SELECT coalesce(a.application_name, '') || ' (session pid ' || a.pid || ' from '"
               " || coalesce(host(a.client_addr), 'local') || ')'" WSP_LOCK_SESSIONS, k1, k2,
            holder, sizeof(holder)) < 0)
        snprintf(holder, sizeof(holder), "unknown (cannot read pg_locks)");
    int n = snprintf(out, outlen, "Postgres %s (server %s, database %s, role %s): schema %s ",
                     dsn_shown, ver, db, user, schema);
    if (n < 0 || (size_t)n >= outlen)
        goto done;
    if (strcmp(create, "t") != 0 || strcmp(usage, "t") != 0) {
        snprintf(out + n, outlen - (size_t)n, "lacks %s%s%s for role %s: GRANT %s%s%s ON SCHEMA "
                 "\"%s\" TO \"%s\"",
                 strcmp(usage, "t") ? "USAGE" : "", strcmp(usage, "t") && strcmp(create, "t")
                 ? " and " : "", strcmp(create, "t") ? "CREATE" : "", user,
                 strcmp(usage, "t") ? "USAGE" : "", strcmp(usage, "t") && strcmp(create, "t")
                 ? ", " : "", strcmp(create, "t") ? "CREATE" : "", schema, user);
        goto done;
    }
    snprintf(out + n, outlen - (size_t)n, "usable (USAGE and CREATE); writer lock %s%s",
             holder[0] ? "held by " : "free (no zxd writes this workspace now)", holder);
    rc = 0;
done:
    PQfinish(c);
    return rc;
}
