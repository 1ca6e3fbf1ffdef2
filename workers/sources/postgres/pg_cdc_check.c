/*
 * pg_cdc_check.c — `zxctl test` for Postgres change data capture: connect
 * with the connection's dsn and check, in order, what a postgres pipeline
 * needs (pg_cdc_check.h), saying exactly what is missing and the command
 * that fixes it.  The decisions are the pure zx_pg_cdc_*_msg functions at
 * the top; zx_pg_cdc_check only gathers the values they decide on.
 *
 * Every name shown in a command is quoted by the server (quote_ident,
 * format('%I')), so that a command can be pasted as it is.
 *
 * Runs in a short-lived prober process (supervisor/probe.c).  It must
 * never: change anything on the server, show the dsn's password (only
 * dsn_shown), or send more than a few statements (tables go as arrays).
 */
#include "workers/sources/postgres/pg_cdc_check.h"
#include "workers/sources/postgres/postgres_opts.h"
#include "workers/sources/postgres/pg_slot.h"

#include "common/pgconn.h"
#include "common/util.h"

#include <libpq-fe.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Listed by name in the summary and in lists of tables, at most. */
#define LIST_MAX 20

/* A refusal of the configuration: fail's message, ZX_PG_CDC_REFUSED. */
static int refuse(char *out, size_t outlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(char *out, size_t outlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out, outlen, fmt, ap);
    va_end(ap);
    return ZX_PG_CDC_REFUSED;
}

/* ---- the decisions ------------------------------------------------------ */

int zx_pg_cdc_wal_level_msg(const char *wal_level, char *out, size_t outlen)
{
    if (wal_level && strcmp(wal_level, "logical") == 0)
        return 0;
    return zx_seterr(out, outlen, "Postgres says wal_level is %s; set wal_level = logical "
                "(ALTER SYSTEM SET wal_level = logical) and restart the server",
                wal_level && *wal_level ? wal_level : "unknown");
}

int zx_pg_cdc_role_msg(const char *role, int replication, int superuser, char *out,
                       size_t outlen)
{
    if (replication || superuser)
        return 0;
    return zx_seterr(out, outlen, "role %s has no REPLICATION attribute (and is not a superuser): "
                "logical replication needs it; as a superuser: ALTER ROLE %s REPLICATION",
                role, role);
}

int zx_pg_cdc_slots_msg(long max, long used, int slot_exists, char *out, size_t outlen)
{
    if (slot_exists)
        return 0;   /* it has its slot: it takes none of the free ones */
    if (max <= 0)
        return zx_seterr(out, outlen, "Postgres has max_replication_slots = %ld: a pipeline needs "
                    "a replication slot; set max_replication_slots (ALTER SYSTEM SET "
                    "max_replication_slots = 10) and restart the server", max);
    if (used >= max)
        return zx_seterr(out, outlen, "no replication slot left: max_replication_slots is %ld and "
                    "%ld slots exist; drop a slot no longer used (see SELECT slot_name, "
                    "active FROM pg_replication_slots; then SELECT "
                    "pg_drop_replication_slot('name')) or raise the limit (ALTER SYSTEM SET "
                    "max_replication_slots = %ld) and restart the server", max, used, used + 1);
    return 0;
}

int zx_pg_cdc_senders_msg(long max, long active, char *out, size_t outlen)
{
    if (max <= 0)
        return zx_seterr(out, outlen, "Postgres has max_wal_senders = %ld: streaming changes needs "
                    "a WAL sender; set max_wal_senders (ALTER SYSTEM SET max_wal_senders = 10) "
                    "and restart the server", max);
    if (active >= max)
        return zx_seterr(out, outlen, "no WAL sender left: max_wal_senders is %ld and %ld are "
                    "running; raise the limit (ALTER SYSTEM SET max_wal_senders = %ld) and "
                    "restart the server, or stop a replication client", max, active,
                    active + 1);
    return 0;
}

/* The replication slot of the pipeline, when it exists: a logical slot of
 * pgoutput in this database, or a precise refusal. */
static int slot_kind_msg(const char *slot, const char *type, const char *plugin,
                         const char *slot_db, const char *database, char *out, size_t outlen)
{
    char what[200];

    if (strcmp(type, "logical") != 0)
        snprintf(what, sizeof(what), "a %s slot", type);
    else if (strcmp(plugin, "pgoutput") != 0)
        snprintf(what, sizeof(what), "a slot of plugin %s (zx reads pgoutput)", plugin);
    else if (strcmp(slot_db, database) != 0)
        snprintf(what, sizeof(what), "a slot of database %s", slot_db);
    else
        return 0;
    return zx_seterr(out, outlen, "replication slot %s exists but is %s: drop it (SELECT "
                "pg_drop_replication_slot('%s')) or give the pipeline another `slot:`",
                slot, what, slot);
}

static const char *relkind_name(char k)
{
    switch (k) {
    case 'v': return "a view";
    case 'm': return "a materialized view";
    case 'f': return "a foreign table";
    case 'S': return "a sequence";
    case 'i': case 'I': return "an index";
    case 'c': return "a composite type";
    case 't': return "a TOAST table";
    default: return "not a table";
    }
}

int zx_pg_cdc_table_msg(const zx_pg_cdc_table *t, const char *role, const char *database,
                        char *out, size_t outlen)
{
    if (!t->exists)
        return zx_seterr(out, outlen, "table %s does not exist in database %s%s%s%s", t->table,
                    database, t->near ? " (" : "", t->near ? t->near : "",
                    t->near ? " exists: the names in `tables` are exact)" : "");
    if (t->relkind != 'r' && t->relkind != 'p')
        return zx_seterr(out, outlen, "%s is %s, not a table: logical replication publishes "
                    "tables only", t->table, relkind_name(t->relkind));
    if (!t->schema_usage)
        return zx_seterr(out, outlen, "role %s may not use schema %s (of %s): GRANT USAGE ON "
                    "SCHEMA %s TO %s", role, t->schema, t->table, t->schema, role);
    if (!t->select)
        return zx_seterr(out, outlen, "role %s may not read %s: GRANT SELECT ON %s TO %s", role,
                    t->table, t->table, role);
    if (t->ident == 2)
        return zx_seterr(out, outlen, "%s has REPLICA IDENTITY FULL but no primary key: zx keeps "
                    "one row per key in the mirror, and a whole row is no key; add a primary "
                    "key (ALTER TABLE %s ADD PRIMARY KEY (...)), or ALTER TABLE %s REPLICA "
                    "IDENTITY USING INDEX <a unique index on NOT NULL columns>", t->table,
                    t->table, t->table);
    if (!t->ident)
        return zx_seterr(out, outlen, "%s has no primary key (and no other replica identity): "
                    "once published, its UPDATEs and DELETEs would fail on the source, and "
                    "its mirror would have no key; add a primary key (ALTER TABLE %s ADD "
                    "PRIMARY KEY (...)), or ALTER TABLE %s REPLICA IDENTITY USING INDEX "
                    "<a unique index on NOT NULL columns>", t->table, t->table, t->table);
    return 0;
}

/* ---- talking to the server ---------------------------------------------- */

/* Run sql with up to 4 text parameters; the result (tuples), or NULL with
 * the error in out. */
static PGresult *q(PGconn *c, const char *sql, int n, const char *const *params,
                   const char *shown, char *out, size_t outlen)
{
    return zx_pg_exec(c, shown, NULL, sql, n, params, out, outlen);
}

static int is_true(const PGresult *r, int row, int col)
{
    return strcmp(PQgetvalue(r, row, col), "t") == 0;
}

/* A text[] literal of the schema (part 0) or table (part 1) parts of the
 * "schema.table" names; NULL on out of memory. */
static char *name_array(char *const *tables, size_t n, int part)
{
    size_t len = 3, i;
    char *a, *o;

    for (i = 0; i < n; i++)
        len += 2 * strlen(tables[i]) + 3;
    a = o = malloc(len);
    if (!a)
        return NULL;
    *o++ = '{';
    for (i = 0; i < n; i++) {
        const char *dot = strchr(tables[i], '.');
        const char *s = part ? (dot ? dot + 1 : tables[i]) : tables[i];
        const char *e = part || !dot ? s + strlen(s) : dot;
        if (i)
            *o++ = ',';
        *o++ = '"';
        for (; s < e; s++) {
            if (*s == '"' || *s == '\\')
                *o++ = '\\';
            *o++ = *s;
        }
        *o++ = '"';
    }
    *o++ = '}';
    *o = '\0';
    return a;
}

/* What the server says once connected. */
typedef struct facts {
    char version[64], role[200], database[200], database_q[200], wal_level[32];
    int replication, superuser, db_create;
    long max_slots, used_slots, max_senders, active_senders;
} facts;

static int get_facts(PGconn *c, const char *shown, facts *f, char *out, size_t outlen)
{
    PGresult *r = q(c,
        "SELECT split_part(current_setting('server_version'), ' ', 1), quote_ident(current_user), "
        " current_database(), quote_ident(current_database()), current_setting('wal_level'), "
        " r.rolreplication, r.rolsuper, "
        " has_database_privilege(current_database(), 'CREATE'), "
        " current_setting('max_replication_slots')::bigint, "
        " (SELECT count(*) FROM pg_replication_slots), "
        " current_setting('max_wal_senders')::bigint, "
        " (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'walsender') "
        "FROM pg_roles r WHERE r.rolname = current_user", 0, NULL, shown, out, outlen);

    if (!r)
        return -1;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return zx_seterr(out, outlen, "Postgres %s: the current role is not in pg_roles", shown);
    }
    snprintf(f->version, sizeof(f->version), "%s", PQgetvalue(r, 0, 0));
    snprintf(f->role, sizeof(f->role), "%s", PQgetvalue(r, 0, 1));
    snprintf(f->database, sizeof(f->database), "%s", PQgetvalue(r, 0, 2));
    snprintf(f->database_q, sizeof(f->database_q), "%s", PQgetvalue(r, 0, 3));
    snprintf(f->wal_level, sizeof(f->wal_level), "%s", PQgetvalue(r, 0, 4));
    f->replication = is_true(r, 0, 5);
    f->superuser = is_true(r, 0, 6);
    f->db_create = is_true(r, 0, 7);
    f->max_slots = strtol(PQgetvalue(r, 0, 8), NULL, 10);
    f->used_slots = strtol(PQgetvalue(r, 0, 9), NULL, 10);
    f->max_senders = strtol(PQgetvalue(r, 0, 10), NULL, 10);
    f->active_senders = strtol(PQgetvalue(r, 0, 11), NULL, 10);
    PQclear(r);
    return 0;
}

/* The pipeline's slot: *exists, *active (its holder's pid in holder), or a
 * refusal when it is not a pgoutput slot of this database. */
static int check_slot(PGconn *c, const char *shown, const zx_conf_pipeline *p, const facts *f,
                      int *exists, int *active, char *holder, size_t hlen, char *out,
                      size_t outlen)
{
    const char *pv[1] = {zx_postgres_opts_of(p)->slot};
    PGresult *r = q(c, "SELECT slot_type, coalesce(plugin::text, ''), "
                    " coalesce(database::text, ''), active, coalesce(active_pid::text, '') "
                    "FROM pg_replication_slots WHERE slot_name = $1", 1, pv, shown, out, outlen);
    int rc = 0;

    *exists = *active = 0;
    if (!r)
        return -1;
    if (PQntuples(r) == 1) {
        *exists = 1;
        *active = is_true(r, 0, 3);
        snprintf(holder, hlen, "%s", PQgetvalue(r, 0, 4));
        rc = slot_kind_msg(pv[0], PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1),
                           PQgetvalue(r, 0, 2), f->database, out, outlen) < 0
             ? ZX_PG_CDC_REFUSED : 0;
    }
    PQclear(r);
    return rc;
}

/* Columns of the tables query. */
enum { T_NAME, T_EXISTS, T_KIND, T_USAGE, T_SELECT, T_IDENT, T_ROWS, T_OWNS, T_OWNER, T_NEAR,
       T_SCHEMA };

static PGresult *get_tables(PGconn *c, const char *shown, const char *schemas,
                            const char *names, char *out, size_t outlen)
{
    const char *pv[2] = {schemas, names};
    return q(c,
        "SELECT format('%I.%I', t.s, t.n), c.oid IS NOT NULL, coalesce(c.relkind::text, ''), "
        " coalesce(has_schema_privilege(ns.oid, 'USAGE'), false), "
        " coalesce(has_table_privilege(c.oid, 'SELECT'), false), "
        " CASE WHEN c.oid IS NULL THEN false "
        "      WHEN c.relreplident = 'i' THEN true "
        "      WHEN c.relreplident IN ('d', 'f') AND EXISTS (SELECT 1 FROM pg_index x "
        "           WHERE x.indrelid = c.oid AND x.indisprimary) THEN true "
        "      WHEN c.relreplident = 'f' THEN NULL "
        "      ELSE false END, "
        " coalesce(c.reltuples::bigint, -1), "
        " coalesce(pg_has_role(c.relowner, 'USAGE'), false), "
        " coalesce(quote_ident(pg_get_userbyid(c.relowner)), ''), "
        " CASE WHEN c.oid IS NULL THEN (SELECT format('%I.%I', n2.nspname, c2.relname) "
        "      FROM pg_class c2 JOIN pg_namespace n2 ON n2.oid = c2.relnamespace "
        "      WHERE lower(n2.nspname) = lower(t.s) AND lower(c2.relname) = lower(t.n) "
        "      AND c2.relkind IN ('r', 'p', 'v', 'm', 'f') LIMIT 1) END, "
        " quote_ident(t.s) "
        "FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(s, n, i) "
        "LEFT JOIN pg_namespace ns ON ns.nspname = t.s "
        "LEFT JOIN pg_class c ON c.relnamespace = ns.oid AND c.relname = t.n "
        "ORDER BY t.i", 2, pv, shown, out, outlen);
}

/* "a, b, c and 7 more" of column col of the rows of r, into buf; the
 * count in *n. */
static void list_rows(const PGresult *r, int col, char *buf, size_t len, long *n)
{
    long shown = 0, all = 0;

    buf[0] = '\0';
    for (int i = 0; i < PQntuples(r); i++) {
        all++;
        if (shown < LIST_MAX && strlen(buf) + strlen(PQgetvalue(r, i, col)) + 40 < len) {
            zx_addf(buf, len, "%s%s", shown ? ", " : "", PQgetvalue(r, i, col));
            shown++;
        }
    }
    if (all > shown)
        zx_addf(buf, len, " and %ld more", all - shown);
    if (n)
        *n = all;
}

/* The publication: existing (what it publishes, the tables it covers), or
 * whether the role may create it.  *exists set. */
static int check_publication(PGconn *c, const char *shown, const zx_conf_pipeline *p,
                             const facts *f, const PGresult *tabs, const char *schemas,
                             const char *names, int *exists, char *pubq, size_t pqlen,
                             char *out, size_t outlen)
{
    const char *pv[3] = {zx_postgres_opts_of(p)->publication, schemas, names};
    char list[1500], all[1500], ops[64] = "";
    long n = 0;
    PGresult *r = q(c, "SELECT quote_ident($1), p.pubinsert, p.pubupdate, p.pubdelete, "
                    " coalesce(starts_with(obj_description(p.oid, 'pg_publication'), "
                    " '" ZX_PG_PUB_COMMENT "'), false) "
                    "FROM (SELECT 1) x LEFT JOIN pg_publication p ON p.pubname = $1", 1, pv,
                    shown, out, outlen);

    *exists = 0;
    if (!r)
        return -1;
    snprintf(pubq, pqlen, "%s", PQgetvalue(r, 0, 0));
    *exists = !PQgetisnull(r, 0, 1);
    if (*exists && is_true(r, 0, 4)) {
        /* zx made it: the worker adds what it lacks (tables, operations) */
        PQclear(r);
        *exists = 2;
        return 0;
    }
    if (*exists) {
        if (!is_true(r, 0, 1))
            zx_addf(ops, sizeof(ops), "%sinsert", ops[0] ? ", " : "");
        if (!is_true(r, 0, 2))
            zx_addf(ops, sizeof(ops), "%supdate", ops[0] ? ", " : "");
        if (!is_true(r, 0, 3))
            zx_addf(ops, sizeof(ops), "%sdelete", ops[0] ? ", " : "");
    }
    PQclear(r);
    if (ops[0])
        return refuse(out, outlen, "publication %s does not publish %s: ALTER PUBLICATION %s "
                    "SET (publish = 'insert, update, delete, truncate')", pubq, ops, pubq);
    if (*exists) {
        /* covered: listed (pg_publication_tables: also FOR ALL TABLES and
         * TABLES IN SCHEMA; leaf partitions) or its own row (a partitioned
         * table published as itself) */
        r = q(c, "SELECT format('%I.%I', t.s, t.n) "
              "FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS t(s, n, i) "
              "WHERE NOT EXISTS (SELECT 1 FROM pg_publication_tables pt WHERE pt.pubname = $1 "
              "  AND pt.schemaname = t.s AND pt.tablename = t.n) "
              "AND NOT EXISTS (SELECT 1 FROM pg_publication_rel pr "
              "  JOIN pg_publication pb ON pb.oid = pr.prpubid "
              "  JOIN pg_class k ON k.oid = pr.prrelid "
              "  JOIN pg_namespace kn ON kn.oid = k.relnamespace "
              "  WHERE pb.pubname = $1 AND kn.nspname = t.s AND k.relname = t.n) "
              "ORDER BY t.i", 3, pv, shown, out, outlen);
        if (!r)
            return -1;
        list_rows(r, 0, list, sizeof(list), &n);
        PQclear(r);
        if (n)
            return refuse(out, outlen, "publication %s does not cover %s: ALTER PUBLICATION %s "
                        "ADD TABLE %s", pubq, list, pubq, list);
        return 0;
    }
    if (f->superuser)
        return 0;
    list_rows(tabs, T_NAME, all, sizeof(all), NULL);
    /* "public.a (owner x)" for each table the role does not own */
    list[0] = '\0';
    long shown_n = 0;
    for (int i = 0; i < PQntuples(tabs); i++) {
        if (is_true(tabs, i, T_OWNS))
            continue;
        n++;
        if (shown_n < LIST_MAX && strlen(list) + 200 < sizeof(list)) {
            zx_addf(list, sizeof(list), "%s%s (owner: %s)", shown_n ? ", " : "",
                    PQgetvalue(tabs, i, T_NAME), PQgetvalue(tabs, i, T_OWNER));
            shown_n++;
        }
    }
    if (n > shown_n)
        zx_addf(list, sizeof(list), " and %ld more", n - shown_n);
    if (f->db_create && n == 0)
        return 0;
    zx_seterr(out, outlen, "publication %s does not exist and role %s may not create it: "
         "PostgreSQL's CREATE PUBLICATION ... FOR TABLE needs ", pubq, f->role);
    if (!f->db_create)
        zx_addf(out, outlen, "CREATE on database %s (GRANT CREATE ON DATABASE %s TO %s)%s",
                f->database_q, f->database_q, f->role, n ? " and " : "");
    if (n)
        zx_addf(out, outlen, "ownership of every table, which %s lacks for %s", f->role, list);
    zx_addf(out, outlen, "; or create it as a superuser or the tables' owner: CREATE PUBLICATION "
            "%s FOR TABLE %s", pubq, all);
    return ZX_PG_CDC_REFUSED;
}

/* The summary's list of tables with their estimated rows. */
static void summary_tables(const PGresult *tabs, char *out, size_t outlen)
{
    int n = PQntuples(tabs), i;

    for (i = 0; i < n && i < LIST_MAX; i++) {
        long long rows = strtoll(PQgetvalue(tabs, i, T_ROWS), NULL, 10);
        if (rows >= 0)
            zx_addf(out, outlen, "%s%s (about %lld rows)", i ? ", " : "",
                    PQgetvalue(tabs, i, T_NAME), rows);
        else
            zx_addf(out, outlen, "%s%s (rows not estimated yet: never analyzed)", i ? ", " : "",
                    PQgetvalue(tabs, i, T_NAME));
    }
    if (n > i)
        zx_addf(out, outlen, " and %d more", n - i);
}

int zx_pg_conn_refused(const char *msg)
{
    if (!msg)
        return 0;
    /* the server is going or coming: it will answer otherwise */
    if (strstr(msg, "starting up") || strstr(msg, "shutting down") ||
        strstr(msg, "in recovery mode") || strstr(msg, "too many"))
        return 0;
    return strstr(msg, "password authentication failed") != NULL ||
           strstr(msg, "no password supplied") != NULL ||
           strstr(msg, "does not exist") != NULL ||          /* role, database */
           strstr(msg, "no pg_hba.conf entry") != NULL ||
           strstr(msg, "pg_hba.conf rejects") != NULL ||
           strstr(msg, "permission denied") != NULL;         /* CONNECT */
}

int zx_pg_cdc_check(const zx_conf_connection *c, const zx_conf_pipeline *p, int timeout_ms,
                    char *out, size_t outlen)
{
    const zx_postgres_opts *po = zx_postgres_opts_of(p);   /* p NULL: none */
    const char *shown;
    char holder[32] = "", pubq[200] = "";
    char *schemas = NULL, *names = NULL;
    PGconn *conn = NULL;
    PGresult *tabs = NULL;
    facts f;
    int rc = -1, slot_exists = 0, slot_active = 0, pub_exists = 0, r;

    if (!out || outlen == 0)
        return -1;
    out[0] = '\0';
    if (!c || !c->kind || strcmp(c->kind, "postgres") != 0)
        return zx_seterr(out, outlen, "not a postgres connection");
    shown = c->dsn_shown ? c->dsn_shown : "(dsn not shown)";
    if (!c->dsn)
        return zx_seterr(out, outlen, "connection %s: its dsn could not be read (a reference "
                    "that could not be resolved?)", c->name);

    /* 1. reachable, password accepted.  The deadline: 40% to connect (at
     * least libpq's 2 s), then 10% per statement (at most 6 of them). */
    zx_pg_connopts o = {
        .dsn = c->dsn, .shown = shown, .app = "zxctl test",
        .connect_timeout_s = timeout_ms >= 5000 ? timeout_ms * 4 / 10000 : 2,
        .statement_timeout_ms = timeout_ms >= 5000 ? timeout_ms / 10 : 500,
    };
    conn = zx_pg_connect(&o, out, outlen);
    if (!conn) {
        if (strstr(out, "password authentication failed") || strstr(out, "no password supplied"))
            zx_addf(out, outlen, " (check the user and password of the connection's dsn)");
        /* the server answered and refused: no retry gets another answer
         * (an unreachable server may come back: that stays -1) */
        if (zx_pg_conn_refused(out))
            rc = ZX_PG_CDC_REFUSED;
        goto done;
    }
    if (get_facts(conn, shown, &f, out, outlen) < 0)
        goto done;

    /* 2. wal_level, 3. REPLICATION */
    if (zx_pg_cdc_wal_level_msg(f.wal_level, out, outlen) < 0 ||
        zx_pg_cdc_role_msg(f.role, f.replication, f.superuser, out, outlen) < 0) {
        rc = ZX_PG_CDC_REFUSED;
        goto done;
    }
    /* 4. a slot (or its own), 5. a WAL sender (one already streaming from
     * its slot has its own) */
    if (p && po->slot &&
        (r = check_slot(conn, shown, p, &f, &slot_exists, &slot_active, holder,
                        sizeof(holder), out, outlen)) < 0) {
        rc = r;
        goto done;
    }
    if (zx_pg_cdc_slots_msg(f.max_slots, f.used_slots, slot_exists, out, outlen) < 0 ||
        (!slot_active &&
         zx_pg_cdc_senders_msg(f.max_senders, f.active_senders, out, outlen) < 0))
        goto done;

    if (p && po->ntables) {
        /* 6. each table */
        schemas = name_array(po->tables, po->ntables, 0);
        names = name_array(po->tables, po->ntables, 1);
        if (!schemas || !names) {
            zx_seterr(out, outlen, "out of memory");
            goto done;
        }
        tabs = get_tables(conn, shown, schemas, names, out, outlen);
        if (!tabs)
            goto done;
        for (int i = 0; i < PQntuples(tabs); i++) {
            const char *kind = PQgetvalue(tabs, i, T_KIND);
            zx_pg_cdc_table t = {
                .table = PQgetvalue(tabs, i, T_NAME), .schema = PQgetvalue(tabs, i, T_SCHEMA),
                .exists = is_true(tabs, i, T_EXISTS),
                .relkind = kind[0], .schema_usage = is_true(tabs, i, T_USAGE),
                .select = is_true(tabs, i, T_SELECT), .ident = PQgetisnull(tabs, i, T_IDENT) ? 2 : is_true(tabs, i, T_IDENT),
                .near = PQgetisnull(tabs, i, T_NEAR) ? NULL : PQgetvalue(tabs, i, T_NEAR),
            };
            if (zx_pg_cdc_table_msg(&t, f.role, f.database_q, out, outlen) < 0) {
                rc = ZX_PG_CDC_REFUSED;
                goto done;
            }
        }
        /* 7. the publication */
        if (po->publication &&
            (r = check_publication(conn, shown, p, &f, tabs, schemas, names, &pub_exists, pubq,
                                   sizeof(pubq), out, outlen)) < 0) {
            rc = r;
            goto done;
        }
    }

    snprintf(out, outlen, "Postgres %s (server %s, database %s, role %s): wal_level logical; "
             "role %s %s; replication slots: %ld of %ld free; WAL senders: %ld of %ld "
             "free", shown, f.version, f.database_q, f.role, f.role,
             f.superuser ? "is a superuser" : "has REPLICATION", f.max_slots - f.used_slots,
             f.max_slots, f.max_senders - f.active_senders, f.max_senders);
    if (!p) {
        zx_addf(out, outlen, ". Ready for change data capture (`zxctl test <pipeline>` also "
                "checks a pipeline's tables and publication)");
    } else {
        if (tabs) {
            zx_addf(out, outlen, "; tables: ");
            summary_tables(tabs, out, outlen);
        }
        if (po->publication)
            zx_addf(out, outlen, "; publication %s: %s", pubq[0] ? pubq : po->publication,
                    pub_exists == 2 ? "exists (made by zx: the pipeline adds what it lacks)"
                    : pub_exists ? "exists and covers every table" : "to be created");
        if (po->slot) {
            zx_addf(out, outlen, "; slot %s: %s", po->slot,
                    !slot_exists ? "to be created" : slot_active ? "exists, in use by pid "
                    : "exists");
            if (slot_exists && slot_active)
                zx_addf(out, outlen, "%s", holder[0] ? holder : "?");
        }
        zx_addf(out, outlen, "; initial copy: %s", po->initial_copy ? "yes" : "no");
    }
    rc = 0;
done:
    PQclear(tabs);
    free(schemas);
    free(names);
    PQfinish(conn);
    return rc;
}

int zx_pg_cdc_test(const zx_conf *conf, const zx_conf_pipeline *p, const zx_conf_connection *c,
                   int timeout_ms, char *out, size_t outlen)
{
    (void)conf;
    return zx_pg_cdc_check(c ? c : p ? p->conn : NULL, p, timeout_ms, out, outlen) < 0 ? -1 : 0;
}
