/*
 * pgconn.c — the shared libpq client (pgconn.h).
 */
#include "common/pgconn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

char *zx_pg_one_line(char *dst, size_t dstlen, const char *m)
{
    if (!dst || dstlen == 0)
        return dst;
    snprintf(dst, dstlen, "%s", m && *m ? m : "unknown error");
    for (char *p = dst; *p; p++)
        if (*p == '\n' || *p == '\t' || *p == '\r')
            *p = ' ';
    size_t n = strlen(dst);
    while (n && dst[n - 1] == ' ')
        dst[--n] = '\0';
    return dst;
}

char *zx_pg_reason(PGconn *c, const PGresult *r, char *dst, size_t dstlen)
{
    const char *m = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (!m || !*m)
        m = c ? PQerrorMessage(c) : NULL;
    return zx_pg_one_line(dst, dstlen, m);
}

int zx_pg_fail(PGconn *c, PGresult *r, const char *shown, const char *what, char *err,
               size_t errlen)
{
    char m[600];
    zx_pg_reason(c, r, m, sizeof(m));
    PQclear(r);
    return zx_seterr(err, errlen, "%s%s%s%s%s%s", shown ? "Postgres " : "", shown ? shown : "",
                     shown ? ": " : "", what ? what : "", what ? ": " : "", m);
}

PGresult *zx_pg_exec(PGconn *c, const char *shown, const char *what, const char *sql, int n,
                     const char *const *params, char *err, size_t errlen)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
        return r;
    zx_pg_fail(c, r, shown, what, err, errlen);
    return NULL;
}

int zx_pg_value(PGconn *c, const char *shown, const char *what, const char *sql, int n,
                const char *const *params, char *out, size_t outlen, char *err,
                size_t errlen)
{
    PGresult *r = zx_pg_exec(c, shown, what, sql, n, params, err, errlen);
    if (!r)
        return -1;
    int got = PQntuples(r) > 0 && PQnfields(r) > 0 && !PQgetisnull(r, 0, 0);
    if (out && outlen)
        snprintf(out, outlen, "%s", got ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return got;
}

PGconn *zx_pg_connect(const zx_pg_connopts *o, char *err, size_t errlen)
{
    const char *shown = o->shown ? o->shown : "(dsn)";
    const char *keys[16], *vals[16];
    char ct[16], ka[16], m[600];
    int k = 0;

    snprintf(ct, sizeof(ct), "%d", o->connect_timeout_s > 0 ? o->connect_timeout_s : 10);
    keys[k] = "dbname", vals[k++] = o->dsn;
    keys[k] = "application_name", vals[k++] = o->app ? o->app : "zxd";
    keys[k] = "connect_timeout", vals[k++] = ct;
    if (o->options)
        keys[k] = "options", vals[k++] = o->options;
    if (o->replication)
        keys[k] = "replication", vals[k++] = o->replication;
    if (o->keepalives_idle_s > 0) {
        snprintf(ka, sizeof(ka), "%d", o->keepalives_idle_s);
        keys[k] = "keepalives_idle", vals[k++] = ka;
    }
    for (const char *const *m = o->more; m && m[0] && m[1] && k < 15; m += 2)
        keys[k] = m[0], vals[k++] = m[1];
    keys[k] = NULL, vals[k] = NULL;

    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        zx_pg_one_line(m, sizeof(m), c ? PQerrorMessage(c) : "out of memory");
        zx_seterr(err, errlen, "cannot connect to Postgres %s%s%s: %s", shown,
                  o->purpose ? " " : "", o->purpose ? o->purpose : "", m);
        PQfinish(c);
        return NULL;
    }
    if (o->statement_timeout_ms > 0) {
        char st[64];
        snprintf(st, sizeof(st), "SET statement_timeout = %d", o->statement_timeout_ms);
        PGresult *r = zx_pg_exec(c, shown, "setting statement_timeout", st, 0, NULL, err,
                                 errlen);
        if (!r) {
            PQfinish(c);
            return NULL;
        }
        PQclear(r);
    }
    return c;
}

/* PQescapeIdentifier / PQescapeLiteral, as a malloc'd copy. */
static char *quoted(PGconn *c, const char *s, int ident, char *err, size_t errlen)
{
    char m[600];
    char *q = ident ? PQescapeIdentifier(c, s, strlen(s)) : PQescapeLiteral(c, s, strlen(s));
    if (!q) {
        zx_seterr(err, errlen, "Postgres: quoting %s: %s", ident ? "a name" : "a value",
                  zx_pg_one_line(m, sizeof(m), PQerrorMessage(c)));
        return NULL;
    }
    char *out = strdup(q);
    PQfreemem(q);
    if (!out)
        zx_seterr(err, errlen, "out of memory");
    return out;
}

char *zx_pg_ident(PGconn *c, const char *name, char *err, size_t errlen)
{
    return quoted(c, name ? name : "", 1, err, errlen);
}

char *zx_pg_literal(PGconn *c, const char *s, char *err, size_t errlen)
{
    return quoted(c, s ? s : "", 0, err, errlen);
}
