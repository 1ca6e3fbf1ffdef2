/*
 * query_pg_role.c — the author's PostgreSQL login role a sync's query
 * runs as, made or kept in step at each run (query_pg.c's opening comment
 * says what it may and may not do; author_role.h how it is named), and
 * the secret key its password derives from.  See query_pg_int.h.
 *
 * It must never: leave the role able to read a table that is not its
 * author's (the run fails instead), grant it membership of any role, or
 * print its password.
 */
#include "workers/syncs/query_pg_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/pgconn.h"
#include "common/util.h"
#include "workers/syncs/author_role.h"

/* The secret key of author passwords: <data_dir>/author.key, 32 random
 * bytes, made if missing.  0 or -1 (err set). */
int zx_qpg_author_key(const char *data_dir, unsigned char key[32], char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/author.key", data_dir);
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t n = read(fd, key, 32);
            close(fd);
            if (n == 32)
                return 0;
            snprintf(err, errlen, "%.200s is shorter than 32 bytes: remove it (zx makes a new "
                     "one; the author roles' passwords change with it)", path);
            return -1;
        }
        unsigned char k[32];
        int rfd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        ssize_t n = rfd >= 0 ? read(rfd, k, sizeof(k)) : -1;
        if (rfd >= 0)
            close(rfd);
        if (n != 32) {
            snprintf(err, errlen, "cannot read /dev/urandom: %s", strerror(errno));
            return -1;
        }
        char tmp[4200];
        snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, k, 32) != 32 || fsync(fd) < 0) {
            snprintf(err, errlen, "cannot write %.200s: %s", tmp, strerror(errno));
            if (fd >= 0)
                close(fd);
            unlink(tmp);
            return -1;
        }
        close(fd);
        /* link, not rename: a key another run made meanwhile wins */
        if (link(tmp, path) < 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot make %.200s: %s", path, strerror(errno));
            unlink(tmp);
            return -1;
        }
        unlink(tmp);
    }
    snprintf(err, errlen, "cannot read %.200s", path);
    return -1;
}

/* err = "sync S: what: <the server's message>" (on one line), from r
 * (may be NULL) or else the connection. */
void zx_qpg_message(PGconn *c, const PGresult *r, const char *sync, const char *what,
                    char *err, size_t errlen)
{
    char m[600];
    snprintf(err, errlen, "sync %s: %s: %s", sync, what, zx_pg_reason(c, r, m, sizeof(m)));
}

/* One command; 0, or -1 with err = "sync S: what: the server's message". */
static int run(PGconn *c, const char *sql, int np, const char *const *params, const char *sync,
               const char *what, PGresult **keep, char *err, size_t errlen)
{
    char m[700];
    PGresult *r = zx_pg_exec(c, NULL, what, sql, np, params, m, sizeof(m));
    if (!r)
        return zx_seterr(err, errlen, "sync %s: %s", sync, m);
    if (keep)
        *keep = r;
    else
        PQclear(r);
    return 0;
}

int zx_qpg_quoted(PGconn *c, const char *name, char *out, size_t len)
{
    char *q = zx_pg_ident(c, name, NULL, 0);
    if (!q || strlen(q) >= len) {
        free(q);
        return -1;
    }
    snprintf(out, len, "%s", q);
    free(q);
    return 0;
}

/* The role's attributes and zx's mark on it, read in ensure_role's
 * transaction. */
typedef struct role_state {
    int exists, super, repl, bypass, createdb, createrole, inherit, login;
    char mark[400];
    char member_of[400];      /* roles it is a member of, ", " between */
} role_state;

static int read_role(PGconn *c, const char *sync, const char *role, role_state *st,
                     char *err, size_t errlen)
{
    PGresult *r = NULL;
    const char *p[] = {role};
    memset(st, 0, sizeof(*st));
    if (run(c, "SELECT rolsuper, rolreplication, rolbypassrls, rolcreatedb, rolcreaterole, "
               "rolinherit, rolcanlogin, coalesce(shobj_description(oid, 'pg_authid'), ''), "
               "coalesce((SELECT string_agg(quote_ident(g.rolname), ', ' ORDER BY g.rolname) "
               "FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid "
               "WHERE m.member = r.oid), '') FROM pg_roles r WHERE rolname = $1",
            1, p, sync, "reading the author's role", &r, err, errlen) < 0)
        return -1;
    if (PQntuples(r) == 1) {
        int *flags[] = {&st->super, &st->repl, &st->bypass, &st->createdb, &st->createrole,
                        &st->inherit, &st->login};
        st->exists = 1;
        for (int i = 0; i < 7; i++)
            *flags[i] = !strcmp(PQgetvalue(r, 0, i), "t");
        snprintf(st->mark, sizeof(st->mark), "%s", PQgetvalue(r, 0, 7));
        snprintf(st->member_of, sizeof(st->member_of), "%s", PQgetvalue(r, 0, 8));
    }
    PQclear(r);
    return 0;
}

/* Append to err a hint on the workspace role's privileges after a failed
 * CREATE / ALTER / COMMENT of an author's role. */
static void privilege_hint(char *err, size_t errlen, const char *role, const char *author)
{
    size_t l = strlen(err);
    if (l + 1 < errlen)
        snprintf(err + l, errlen - l, " (role %s of author %s: the workspace's role needs "
                 "CREATEROLE, and on PostgreSQL 16 and later ADMIN OPTION on that role, which "
                 "it has on the roles it made itself; README \"Reverse syncs\")", role, author);
}

/* The role zx made for this author before roles were the author's alone
 * (author_role.h), named `legacy`: unmarked (a marked one is some
 * author's own), it loses what it may read in the schema, may no longer
 * log in, and is dropped (unless it holds rights elsewhere).  Best
 * effort, each statement in a savepoint of ensure_role's transaction: one
 * that fails changes nothing and the run goes on. */
static void drop_legacy_role(PGconn *c, const char *sync, const zx_conf *conf,
                             const char *legacy)
{
    char ql[200], qs[200], e[600];
    PGresult *r = NULL;
    const char *p[] = {legacy};
    if (run(c, "SELECT 1 FROM pg_roles WHERE rolname = $1 AND "
               "shobj_description(oid, 'pg_authid') IS NULL", 1, p, sync, "workspace", &r, e,
            sizeof(e)) < 0)
        return;
    int found = PQntuples(r) == 1;
    PQclear(r);
    if (!found || zx_qpg_quoted(c, legacy, ql, sizeof(ql)) < 0 ||
        zx_qpg_quoted(c, conf->pg_schema, qs, sizeof(qs)) < 0)
        return;
    char steps[4][500];
    snprintf(steps[0], sizeof(steps[0]), "REVOKE ALL ON ALL TABLES IN SCHEMA %s FROM %s", qs,
             ql);
    snprintf(steps[1], sizeof(steps[1]), "REVOKE USAGE ON SCHEMA %s FROM %s", qs, ql);
    snprintf(steps[2], sizeof(steps[2]), "ALTER ROLE %s NOLOGIN", ql);
    snprintf(steps[3], sizeof(steps[3]), "DROP ROLE %s", ql);
    for (int i = 0; i < 4; i++) {
        if (run(c, "SAVEPOINT zx_legacy", 0, NULL, sync, "workspace", NULL, e, sizeof(e)) < 0)
            return;
        int ok = run(c, steps[i], 0, NULL, sync, "workspace", NULL, e, sizeof(e)) == 0;
        run(c, ok ? "RELEASE SAVEPOINT zx_legacy" : "ROLLBACK TO SAVEPOINT zx_legacy", 0,
            NULL, sync, "workspace", NULL, e, sizeof(e));
    }
}

/* The role's attributes, made (!st->exists) or brought in step, and
 * its membership checked, in ensure_role's transaction.  0, or -1 (err
 * set; with a hint on the workspace role's privileges when the server
 * refused a CREATE, COMMENT or ALTER). */
static int role_attributes(PGconn *c, const char *sync, const zx_conf_author *a,
                           const char *role, const char *qrole, const char *lit,
                           const char *mark, const char *pw, const role_state *st, char *err,
                           size_t errlen)
{
    char sql[1024];
    if (!st->exists) {
        /* NO... in CREATE ROLE needs no more than CREATEROLE (15 and 16) */
        snprintf(sql, sizeof(sql), "CREATE ROLE %s LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE "
                 "NOREPLICATION NOBYPASSRLS NOINHERIT PASSWORD '%s'", qrole, pw);
        if (run(c, sql, 0, NULL, sync, "making the author's role", NULL, err, errlen) < 0)
            goto hint;
        snprintf(sql, sizeof(sql), "COMMENT ON ROLE %s IS %s", qrole, lit);
        if (run(c, sql, 0, NULL, sync, "marking the author's role", NULL, err, errlen) < 0)
            goto hint;
    } else {
        if (strcmp(st->mark, mark) != 0) {
            snprintf(err, errlen, "sync %s: role %s exists but is not zx's role of author %s "
                     "(its comment: \"%.120s\"): drop it, or find who made it", sync, role,
                     a->name, st->mark);
            return -1;
        }
        /* Only what is out of step: naming SUPERUSER, REPLICATION or
         * BYPASSRLS at all (even NO...) needs a superuser, and CREATEDB
         * (PostgreSQL 16) CREATEDB; the role zx made has none of them. */
        snprintf(sql, sizeof(sql), "ALTER ROLE %s%s%s%s%s%s%s%s PASSWORD '%s'", qrole,
                 st->login ? "" : " LOGIN", st->super ? " NOSUPERUSER" : "",
                 st->repl ? " NOREPLICATION" : "", st->bypass ? " NOBYPASSRLS" : "",
                 st->createdb ? " NOCREATEDB" : "", st->createrole ? " NOCREATEROLE" : "",
                 st->inherit ? " NOINHERIT" : "", pw);
        if (run(c, sql, 0, NULL, sync, "keeping the author's role in step", NULL, err,
                errlen) < 0)
            goto hint;
    }
    if (st->member_of[0]) {
        /* SET ROLE (set_config('role')) would reach those roles' rights */
        snprintf(err, errlen, "sync %s: role %s of author %s is a member of %s, which zx never "
                 "grants: REVOKE %s FROM %s", sync, role, a->name, st->member_of, st->member_of,
                 qrole);
        return -1;
    }
    return 0;
hint:
    privilege_hint(err, errlen, role, a->name);
    return -1;
}

/* USAGE on the workspace schema, and SELECT on exactly the author's
 * tables there that exist: grants to other tables of the schema revoked.
 * 0, or -1 (err set, but for a name that cannot be quoted). */
static int role_grants(PGconn *c, const zx_conf *conf, const char *sync,
                       const zx_conf_author *a, const char *role, const char *qrole,
                       const char *qschema, char *err, size_t errlen)
{
    char sql[1024], qt[200];
    int rc = -1;
    PGresult *r = NULL;
    snprintf(sql, sizeof(sql), "GRANT USAGE ON SCHEMA %s TO %s", qschema, qrole);
    if (run(c, sql, 0, NULL, sync, "granting the schema", NULL, err, errlen) < 0)
        goto out;
    /* what it may read now, directly granted, in the schema */
    const char *p2[] = {conf->pg_schema, role};
    if (run(c, "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
               "WHERE n.nspname = $1 AND c.relkind IN ('r','v','m','p','f') AND EXISTS ("
               "SELECT 1 FROM aclexplode(c.relacl) x JOIN pg_roles g ON g.oid = x.grantee "
               "WHERE g.rolname = $2 AND x.privilege_type = 'SELECT')",
            2, p2, sync, "reading the author's grants", &r, err, errlen) < 0)
        goto out;
    for (int i = 0; i < PQntuples(r); i++) {
        const char *t = PQgetvalue(r, i, 0);
        int keep = 0;
        for (size_t j = 0; j < a->ntables; j++)
            keep |= !strcmp(a->tables[j], t);
        if (keep)
            continue;
        if (zx_qpg_quoted(c, t, qt, sizeof(qt)) < 0)
            goto out;
        snprintf(sql, sizeof(sql), "REVOKE ALL ON %s.%s FROM %s", qschema, qt, qrole);
        if (run(c, sql, 0, NULL, sync, "revoking a table", NULL, err, errlen) < 0)
            goto out;
    }
    PQclear(r);
    r = NULL;
    for (size_t j = 0; j < a->ntables; j++) {
        const char *p3[] = {conf->pg_schema, a->tables[j]};
        if (run(c, "SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                   "WHERE n.nspname = $1 AND c.relname = $2", 2, p3, sync, "workspace", &r,
                err, errlen) < 0)
            goto out;
        int there = PQntuples(r) > 0;
        PQclear(r);
        r = NULL;
        if (!there)
            continue;   /* not made yet: a query reading it says so */
        if (zx_qpg_quoted(c, a->tables[j], qt, sizeof(qt)) < 0)
            goto out;
        snprintf(sql, sizeof(sql), "GRANT SELECT ON %s.%s TO %s", qschema, qt, qrole);
        if (run(c, sql, 0, NULL, sync, "granting a table", NULL, err, errlen) < 0)
            goto out;
    }
    rc = 0;
out:
    PQclear(r);
    return rc;
}

/* Exactly the author's tables, in every schema of the database but
 * the system's (pg_catalog, information_schema, pg_toast and the
 * other pg_* ones): a grant zx cannot revoke (made by another role, or
 * to PUBLIC, with USAGE on its schema) fails the run rather than widen
 * it.  0, or -1 (err set). */
static int role_reads_only_its_own(PGconn *c, const zx_conf *conf, const char *sync,
                                   const zx_conf_author *a, const char *role, char *err,
                                   size_t errlen)
{
    PGresult *r = NULL;
    int rc = -1;
    const char *p2[] = {conf->pg_schema, role};
    if (run(c, "SELECT n.nspname, c.relname, n.nspname = $1 FROM pg_class c "
               "JOIN pg_namespace n ON n.oid = c.relnamespace "
               "WHERE n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%' "
               "AND c.relkind IN ('r','v','m','p','f') "
               "AND has_schema_privilege($2, n.oid, 'USAGE') "
               "AND has_any_column_privilege($2, c.oid, 'SELECT') ORDER BY 3 DESC, 1, 2",
            2, p2, sync, "reading the author's rights", &r, err, errlen) < 0)
        goto out;
    for (int i = 0; i < PQntuples(r); i++) {
        const char *ns = PQgetvalue(r, i, 0), *t = PQgetvalue(r, i, 1);
        int mine = 0;
        for (size_t j = 0; *PQgetvalue(r, i, 2) == 't' && j < a->ntables; j++)
            mine |= !strcmp(a->tables[j], t);
        if (!mine) {
            snprintf(err, errlen, "sync %s: role %s of author %s may still read table %s.%s, "
                     "which is not the author's: a grant zx did not make (to PUBLIC, or by "
                     "another role) that the workspace's role cannot revoke; revoke it (as "
                     "its owner: REVOKE SELECT ON %s.%s FROM PUBLIC, or from the role that "
                     "has it%s%s)", sync, role, a->name, ns, t, ns, t,
                     strcmp(ns, conf->pg_schema) ? "; or REVOKE USAGE ON SCHEMA " : "",
                     strcmp(ns, conf->pg_schema) ? ns : "");
            goto out;
        }
    }
    rc = 0;
out:
    PQclear(r);
    return rc;
}

/* Make the author's role or bring it in step (query_pg.c's opening
 * comment), with the workspace's own connection, in one transaction
 * under a lock of that role alone: the role is this author's only
 * (author_role.h), so what it may read never depends on another author's
 * runs. */
int zx_qpg_ensure_role(const zx_conf *conf, const char *sync, const zx_conf_author *a,
                       const char *role, const char *legacy, const char *pw, int timeout_ms,
                       char *err, size_t errlen)
{
    char tmo[16], qrole[200], qschema[200], mark[400];
    snprintf(tmo, sizeof(tmo), "%d", timeout_ms / 1000 > 0 ? timeout_ms / 1000 : 1);
    const char *k[] = {"dbname", "application_name", "connect_timeout", NULL};
    const char *v[] = {conf->pg_dsn, "zx-sync-setup", tmo, NULL};
    PGconn *c = PQconnectdbParams(k, v, 1);
    int rc = -1;
    char *lit = NULL;
    role_state st;
    if (PQstatus(c) != CONNECTION_OK) {
        snprintf(err, errlen, "sync %s: cannot connect to the workspace %s: %s", sync,
                 conf->pg_dsn_shown, PQerrorMessage(c));
        goto out;
    }
    zx_author_role_mark(a->name, mark, sizeof(mark));
    if (zx_qpg_quoted(c, role, qrole, sizeof(qrole)) < 0 ||
        zx_qpg_quoted(c, conf->pg_schema, qschema, sizeof(qschema)) < 0 ||
        !(lit = zx_pg_literal(c, mark, NULL, 0))) {
        snprintf(err, errlen, "sync %s: out of memory", sync);
        goto out;
    }
    const char *p1[] = {role};
    if (run(c, "BEGIN", 0, NULL, sync, "workspace", NULL, err, errlen) < 0 ||
        run(c, "SELECT pg_advisory_xact_lock(hashtext('zx_author:' || $1))", 1, p1, sync,
            "workspace", NULL, err, errlen) < 0 ||
        read_role(c, sync, role, &st, err, errlen) < 0 ||
        role_attributes(c, sync, a, role, qrole, lit, mark, pw, &st, err, errlen) < 0 ||
        role_grants(c, conf, sync, a, role, qrole, qschema, err, errlen) < 0 ||
        role_reads_only_its_own(c, conf, sync, a, role, err, errlen) < 0)
        goto out;
    drop_legacy_role(c, sync, conf, legacy);
    if (run(c, "COMMIT", 0, NULL, sync, "workspace", NULL, err, errlen) < 0)
        goto out;
    rc = 0;
out:
    free(lit);
    PQfinish(c);
    return rc;
}
