/*
 * pg_cdc_setup.c — what the Postgres CDC source asks of the source
 * database on a normal connection (pg_cdc_int.h): the publication, the
 * tables' keys and estimates, declared types, the slot's retained WAL.
 * Names go to the server as parameters and are quoted by it (quote_ident,
 * format('%I')), never by hand.
 */
#include "workers/sources/postgres/pg_cdc_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pgconn.h"
#include "common/util.h"
#include "workers/sources/postgres/pg_repl.h"

PGconn *pgcdc_connect(const char *dsn, const char *shown, const char *app, char *err,
                      size_t errlen)
{
    zx_pg_connopts o = { .dsn = dsn, .shown = shown, .app = app,
                         .options = ZX_PG_SESSION_OPTIONS, .connect_timeout_s = 10 };
    return zx_pg_connect(&o, err, errlen);
}

/* A Postgres text[] literal of the tables' schema (part 0) or name (1). */
static char *names_array(const pgcdc_table *t, size_t n, int part)
{
    size_t cap = 3;
    for (size_t i = 0; i < n; i++)
        cap += 2 * strlen(part ? t[i].name : t[i].schema) + 4;
    char *a = malloc(cap), *o = a;
    if (!a)
        return NULL;
    *o++ = '{';
    for (size_t i = 0; i < n; i++) {
        if (i)
            *o++ = ',';
        *o++ = '"';
        for (const char *s = part ? t[i].name : t[i].schema; *s; s++) {
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

/* Run the statements the query `build` returns (one per row, made and
 * quoted by the server from the parameters).  0, or -1 (err set). */
static int run_built(PGconn *c, const char *shown, const char *what, const char *build,
                     int n, const char *const *pv, char *err, size_t errlen)
{
    PGresult *r = zx_pg_exec(c, shown, what, build, n, pv, err, errlen);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r); i++) {
        if (PQgetisnull(r, i, 0))
            continue;
        PGresult *x = zx_pg_exec(c, shown, what, PQgetvalue(r, i, 0), 0, NULL, err, errlen);
        if (!x) {
            PQclear(r);
            return -1;
        }
        PQclear(x);
    }
    PQclear(r);
    return 0;
}

int pgcdc_publication(PGconn *c, const char *shown, const zx_conf_pipeline *p,
                      const pgcdc_table *t, size_t n, char *err, size_t errlen)
{
    char *schemas = names_array(t, n, 0), *names = names_array(t, n, 1);
    const char *pub = zx_postgres_opts_of(p)->publication;
    char comment[300];
    snprintf(comment, sizeof(comment), "%s%s", ZX_PG_PUB_COMMENT, p->name);
    int rc = -1;
    if (!schemas || !names) {
        zx_seterr(err, errlen, "out of memory");
        goto out;
    }
    const char *pv[4] = { pub, schemas, names, comment };
    PGresult *r = zx_pg_exec(c, shown, "reading the publication",
            "SELECT p.oid IS NOT NULL, coalesce(obj_description(p.oid, "
            "'pg_publication'), ''), coalesce(p.puballtables, false), "
            "coalesce(p.pubinsert AND p.pubupdate AND p.pubdelete AND p.pubtruncate, "
            "false) FROM (SELECT 1) x LEFT JOIN pg_publication p ON p.pubname = $1",
            1, pv, err, errlen);
    if (!r)
        goto out;
    int exists = PQgetvalue(r, 0, 0)[0] == 't';
    int ours = strncmp(PQgetvalue(r, 0, 1), ZX_PG_PUB_COMMENT, strlen(ZX_PG_PUB_COMMENT)) == 0;
    int all = PQgetvalue(r, 0, 2)[0] == 't';
    int every_op = PQgetvalue(r, 0, 3)[0] == 't';
    PQclear(r);
    if (!exists) {
        /* the comment names the pipeline, so that its removal drops only
         * what zx made */
        rc = run_built(c, shown, "creating the publication",
                       "SELECT format('CREATE PUBLICATION %I FOR TABLE ', $1::text) || "
                       " string_agg(format('%I.%I', t.s, t.n), ', ' ORDER BY t.i) "
                       "FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS t(s, n, i) "
                       "UNION ALL SELECT format('COMMENT ON PUBLICATION %I IS %L', $1::text, "
                       "$4::text)", 4, pv, err, errlen);
        goto out;
    }
    if (ours && !every_op &&
        run_built(c, shown, "updating the publication",
                  "SELECT format('ALTER PUBLICATION %I SET (publish = ''insert, update, "
                  "delete, truncate'')', $1::text)", 1, pv, err, errlen) < 0)
        goto out;
    if (all) {
        rc = 0;
        goto out;
    }
    if (ours) {
        /* add what it lacks, drop what is no longer configured */
        rc = run_built(c, shown, "updating the publication's tables",
                       "SELECT format('ALTER PUBLICATION %I ADD TABLE %I.%I', $1::text, t.s, "
                       " t.n) FROM unnest($2::text[], $3::text[]) AS t(s, n) "
                       "WHERE NOT EXISTS (SELECT 1 FROM pg_publication_tables pt "
                       " WHERE pt.pubname = $1 AND pt.schemaname = t.s AND pt.tablename = t.n) "
                       "UNION ALL SELECT format('ALTER PUBLICATION %I DROP TABLE %I.%I', "
                       " $1::text, pt.schemaname, pt.tablename) FROM pg_publication_tables pt "
                       "WHERE pt.pubname = $1 AND NOT EXISTS (SELECT 1 FROM "
                       " unnest($2::text[], $3::text[]) AS t(s, n) "
                       " WHERE pt.schemaname = t.s AND pt.tablename = t.n)",
                       3, pv, err, errlen);
        goto out;
    }
    r = zx_pg_exec(c, shown, "reading the publication's tables",
            "SELECT format('%I.%I', t.s, t.n) FROM unnest($2::text[], $3::text[]) AS t(s, n) "
            "WHERE NOT EXISTS (SELECT 1 FROM pg_publication_tables pt WHERE pt.pubname = $1 "
            " AND pt.schemaname = t.s AND pt.tablename = t.n)", 3, pv, err, errlen);
    if (!r)
        goto out;
    int missing = PQntuples(r);
    if (missing) {
        char list[400] = "";
        for (int i = 0; i < missing && strlen(list) < 300; i++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
                     PQgetvalue(r, i, 0));
        PQclear(r);
        zx_seterr(err, errlen, "publication %s (not made by zx) does not publish %s: ALTER "
                  "PUBLICATION %s ADD TABLE %s", pub, list, pub, list);
        goto out;
    }
    PQclear(r);
    if (!every_op) {
        zx_seterr(err, errlen, "publication %s (not made by zx) does not publish every "
                  "operation: ALTER PUBLICATION %s SET (publish = 'insert, update, delete, "
                  "truncate')", pub, pub);
        goto out;
    }
    rc = 0;
out:
    free(schemas);
    free(names);
    return rc;
}

int pgcdc_tables(PGconn *c, const char *shown, pgcdc_table *t, size_t n, char *err,
                 size_t errlen)
{
    char *schemas = names_array(t, n, 0), *names = names_array(t, n, 1);
    int rc = -1;
    if (!schemas || !names) {
        zx_seterr(err, errlen, "out of memory");
        goto out;
    }
    const char *pv[2] = { schemas, names };
    /* one row per table (i, oid, reltuples, relreplident), then its key
     * columns in index order: the primary key, or the replica identity
     * index under USING INDEX */
    PGresult *r = zx_pg_exec(c, shown, "reading the tables",
            "SELECT t.i, c.oid, c.reltuples::bigint, c.relreplident, a.attname "
            "FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(s, n, i) "
            "JOIN pg_namespace ns ON ns.nspname = t.s "
            "JOIN pg_class c ON c.relnamespace = ns.oid AND c.relname = t.n "
            "LEFT JOIN pg_index x ON x.indrelid = c.oid AND CASE WHEN c.relreplident "
            " = 'i' THEN x.indisreplident ELSE x.indisprimary END "
            "LEFT JOIN LATERAL unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, o) "
            " ON true "
            "LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum "
            "ORDER BY t.i, k.o", 2, pv, err, errlen);
    if (!r)
        goto out;
    for (size_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < t[i].nkeys; k++)
            free(t[i].keys[k]);
        free(t[i].keys);
        t[i].keys = NULL;
        t[i].nkeys = 0;
        t[i].relid = 0;
    }
    int rows = PQntuples(r);
    for (int j = 0; j < rows; j++) {
        long i = strtol(PQgetvalue(r, j, 0), NULL, 10) - 1;
        if (i < 0 || (size_t)i >= n)
            continue;
        pgcdc_table *x = &t[i];
        x->relid = (uint32_t)strtoul(PQgetvalue(r, j, 1), NULL, 10);
        x->estimate = strtoll(PQgetvalue(r, j, 2), NULL, 10);
        if (PQgetisnull(r, j, 4))
            continue;
        char **k = realloc(x->keys, (x->nkeys + 1) * sizeof(*k));
        if (!k || !(k[x->nkeys] = strdup(PQgetvalue(r, j, 4)))) {
            if (k)
                x->keys = k;
            PQclear(r);
            zx_seterr(err, errlen, "out of memory");
            goto out;
        }
        x->keys = k;
        x->nkeys++;
    }
    PQclear(r);
    for (size_t i = 0; i < n; i++) {
        if (!t[i].relid) {
            zx_seterr(err, errlen, "table %s does not exist in the database of %s", t[i].qname,
                      shown);
            goto out;
        }
        if (!t[i].nkeys) {
            zx_seterr(err, errlen, "table %s has no primary key (and no replica identity "
                      "index): zx keeps one row per key in the mirror; add a primary key "
                      "(ALTER TABLE %s ADD PRIMARY KEY (...)), or ALTER TABLE %s REPLICA "
                      "IDENTITY USING INDEX <a unique index on NOT NULL columns>",
                      t[i].qname, t[i].qname, t[i].qname);
            goto out;
        }
    }
    rc = 0;
out:
    free(schemas);
    free(names);
    return rc;
}

void pgcdc_types_free(pgcdc_table *t)
{
    for (uint32_t i = 0; i < t->nst; i++) {
        free((char *)t->st[i].column);
        free((char *)t->st[i].type);
    }
    free(t->st);
    t->st = NULL;
    t->nst = 0;
}

int pgcdc_types(PGconn *c, const char *shown, const pgo_rel *rel, pgcdc_table *t, char *err,
                size_t errlen)
{
    /* {oid,...} and {typmod,...}: numbers only, no quoting needed */
    size_t cap = 2 + (size_t)rel->ncols * 12 + 1;
    char *oids = malloc(cap), *mods = malloc(cap);
    zx_frame_coltype *st = calloc(rel->ncols + 1u, sizeof(*st));
    int rc = -1;
    if (!oids || !mods || !st) {
        zx_seterr(err, errlen, "out of memory");
        goto out;
    }
    size_t a = 0, b = 0;
    oids[a++] = '{';
    mods[b++] = '{';
    for (uint16_t i = 0; i < rel->ncols; i++) {
        a += (size_t)snprintf(oids + a, cap - a, "%s%u", i ? "," : "", rel->cols[i].type_oid);
        b += (size_t)snprintf(mods + b, cap - b, "%s%d", i ? "," : "", rel->cols[i].typmod);
    }
    snprintf(oids + a, cap - a, "}");
    snprintf(mods + b, cap - b, "}");
    const char *pv[2] = { oids, mods };
    PGresult *r = zx_pg_exec(c, shown, "reading the column types",
                             "SELECT format_type(u.o, CASE WHEN u.m < 0 THEN NULL ELSE u.m END) "
                             "FROM unnest($1::oid[], $2::int4[]) WITH ORDINALITY AS u(o, m, i) "
                             "ORDER BY u.i", 2, pv, err, errlen);
    if (!r)
        goto out;
    int got = PQntuples(r);
    if (got != rel->ncols) {
        PQclear(r);
        zx_seterr(err, errlen, "Postgres %s: format_type answered %d rows for %u columns",
                  shown, got, rel->ncols);
        goto out;
    }
    uint32_t k = 0;
    for (uint16_t i = 0; i < rel->ncols; i++, k++) {
        st[k].column = strdup(rel->cols[i].name);
        st[k].type = strdup(PQgetvalue(r, i, 0));
        if (!st[k].column || !st[k].type) {
            free((char *)st[k].column);
            free((char *)st[k].type);
            break;
        }
    }
    PQclear(r);
    if (k < rel->ncols) {
        for (uint32_t i = 0; i < k; i++) {
            free((char *)st[i].column);
            free((char *)st[i].type);
        }
        zx_seterr(err, errlen, "out of memory");
        goto out;
    }
    pgcdc_types_free(t);
    t->st = st;
    t->nst = k;
    st = NULL;
    rc = 0;
out:
    free(oids);
    free(mods);
    free(st);
    return rc;
}

int64_t pgcdc_retained(PGconn *c, const char *slot)
{
    const char *pv[1] = { slot };
    char v[32];
    if (zx_pg_value(c, NULL, NULL, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)"
                    "::bigint FROM pg_replication_slots WHERE slot_name = $1",
                    1, pv, v, sizeof(v), NULL, 0) != 1)
        return -1;
    return strtoll(v, NULL, 10);
}
