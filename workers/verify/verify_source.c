/*
 * verify_source.c — the source side of `zxctl verify` (verify_int.h): a
 * Postgres connection of its own that only reads: the catalog, rows by
 * key and in key order, inside REPEATABLE READ READ ONLY transactions
 * (no lock beyond the ACCESS SHARE every SELECT takes), and the slot's
 * confirmed position.
 *
 * It must never: write, lock a table explicitly, or show the DSN's
 * password (messages name the redacted DSN).
 */
#include "workers/verify/verify_int.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/pgconn.h"
#include "common/util.h"
#include "workers/sources/postgres/pg_repl.h"

struct vf_src {
    PGconn *conn;
    char *shown;
    int scanning;            /* single-row mode result pending */
    zx_buf sql;
};

static int fail(vf_src *s, PGresult *r, const char *what, char *err, size_t errlen)
{
    char m[600];
    const char *e = r ? PQresultErrorMessage(r) : "";
    snprintf(m, sizeof(m), "%s", e && *e ? e : PQerrorMessage(s->conn));
    m[strcspn(m, "\n")] = '\0';
    PQclear(r);
    return zx_seterr(err, errlen, "Postgres %s: %s: %s", s->shown, what, m);
}

vf_src *vf_src_open(const char *dsn, const char *shown, char *err, size_t errlen)
{
    vf_src *s = calloc(1, sizeof(*s));
    if (!s || !(s->shown = strdup(shown ? shown : "(dsn)"))) {
        free(s);
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    zx_pg_connopts o = { .dsn = dsn ? dsn : "", .shown = s->shown, .app = "zxd verify",
                         .options = ZX_PG_SESSION_OPTIONS, .connect_timeout_s = 10 };
    if (!(s->conn = zx_pg_connect(&o, err, errlen))) {
        vf_src_close(s);
        return NULL;
    }
    return s;
}

void vf_src_close(vf_src *s)
{
    if (!s)
        return;
    if (s->conn)
        PQfinish(s->conn);
    zx_buf_free(&s->sql);
    free(s->shown);
    free(s);
}

int vf_src_table(vf_src *s, const char *schema, const char *name, vf_table *t, char *err,
                 size_t errlen)
{
    const char *pv[2] = { schema, name };
    /* the columns in order, each with its place in the key (the primary
     * key, or the REPLICA IDENTITY USING INDEX index) or 0 */
    PGresult *r = PQexecParams(s->conn,
        "SELECT a.attname, a.atttypid, COALESCE(k.o, 0), format_type(a.atttypid, NULL) "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
        "LEFT JOIN pg_index x ON x.indrelid = c.oid AND CASE WHEN c.relreplident = 'i' "
        " THEN x.indisreplident ELSE x.indisprimary END "
        "LEFT JOIN LATERAL unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, o) "
        " ON k.attnum = a.attnum "
        "WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p') "
        "ORDER BY a.attnum", 2, NULL, pv, NULL, NULL, 0);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
        return fail(s, r, "reading the table's columns", err, errlen);
    int n = PQntuples(r);
    if (n == 0) {
        PQclear(r);
        return zx_seterr(err, errlen, "table %s.%s is not in the source database %s", schema,
                         name, s->shown);
    }
    t->schema = strdup(schema);
    t->name = strdup(name);
    t->cols = calloc((size_t)n, sizeof(*t->cols));
    t->decls = calloc((size_t)n, sizeof(*t->decls));
    t->oids = calloc((size_t)n, sizeof(*t->oids));
    t->stypes = calloc((size_t)n, sizeof(*t->stypes));
    t->mtypes = calloc((size_t)n, sizeof(*t->mtypes));
    t->in_mirror = calloc((size_t)n, sizeof(*t->in_mirror));
    t->keys = calloc((size_t)n, sizeof(*t->keys));
    int bad = !t->schema || !t->name || !t->cols || !t->decls || !t->oids || !t->in_mirror ||
              !t->keys || !t->stypes || !t->mtypes;
    for (int i = 0; i < n && !bad; i++) {
        t->cols[i] = strdup(PQgetvalue(r, i, 0));
        t->stypes[i] = strdup(PQgetvalue(r, i, 3));
        t->oids[i] = (uint32_t)strtoul(PQgetvalue(r, i, 1), NULL, 10);
        t->ncols = (uint32_t)i + 1;
        bad = !t->cols[i] || !t->stypes[i];
        long o = strtol(PQgetvalue(r, i, 2), NULL, 10);
        if (o > 0 && o <= n) {
            t->keys[o - 1] = (uint32_t)i;
            if ((uint32_t)o > t->nkeys)
                t->nkeys = (uint32_t)o;
        }
    }
    PQclear(r);
    if (bad)
        return zx_seterr(err, errlen, "out of memory");
    if (t->nkeys == 0)
        return zx_seterr(err, errlen, "table %s.%s has no primary key (nor a replica "
                         "identity index): its rows cannot be compared by key", schema, name);
    return 0;
}

static int exec_ok(vf_src *s, const char *sql, const char *what, char *err, size_t errlen)
{
    PGresult *r = PQexec(s->conn, sql);
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK)
        return fail(s, r, what, err, errlen);
    PQclear(r);
    return 0;
}

int vf_src_begin(vf_src *s, char lsn[32], char *err, size_t errlen)
{
    if (exec_ok(s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "BEGIN", err, errlen) < 0)
        return -1;
    /* the first query takes the snapshot: every transaction it sees
     * committed before this position */
    PGresult *r = PQexec(s->conn, "SELECT pg_current_wal_insert_lsn()::text");
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        return fail(s, r, "reading the WAL position", err, errlen);
    snprintf(lsn, 32, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
}

int vf_src_end(vf_src *s, char *err, size_t errlen)
{
    return exec_ok(s, "COMMIT", "COMMIT", err, errlen);
}

/* "schema"."table" into s->sql (reset first). */
static int put_table(vf_src *s, const vf_table *t)
{
    s->sql.len = 0;
    return vf_put_ident(&s->sql, t->schema) < 0 || vf_put(&s->sql, ".") < 0 ||
                   vf_put_ident(&s->sql, t->name) < 0 ? -1 : 0;
}

/* " WHERE k1 = $1 AND k2 = $2" (each $k typed as its key column). */
static int put_where(vf_src *s, const vf_table *t)
{
    for (uint32_t k = 0; k < t->nkeys; k++) {
        char p[24];
        snprintf(p, sizeof(p), " = $%u", k + 1);
        if (vf_put(&s->sql, k ? " AND " : " WHERE ") < 0 ||
            vf_put_ident(&s->sql, t->cols[t->keys[k]]) < 0 || vf_put(&s->sql, p) < 0)
            return -1;
    }
    return 0;
}

/* ", col1, col2" of every column (or the key's only). */
static int put_cols(vf_src *s, const vf_table *t, int keys_only)
{
    uint32_t n = keys_only ? t->nkeys : t->ncols;
    for (uint32_t j = 0; j < n; j++)
        if ((j && vf_put(&s->sql, ", ") < 0) ||
            vf_put_ident(&s->sql, t->cols[keys_only ? t->keys[j] : j]) < 0)
            return -1;
    return 0;
}

/* The row of result r (row i) into out. */
static int take_row(PGresult *r, int i, vf_row *out)
{
    uint32_t n = (uint32_t)PQnfields(r);
    if (vf_row_init(out, n) < 0)
        return -1;
    for (uint32_t j = 0; j < n; j++)
        if (!PQgetisnull(r, i, (int)j) &&
            vf_row_set(out, j, PQgetvalue(r, i, (int)j), (size_t)PQgetlength(r, i, (int)j)) < 0)
            return -1;
    return 0;
}

/* The parameters of bounds lo and hi (each NULL: none) into pv (2 *
 * t->nkeys entries).  Returns how many. */
static int bound_params(const vf_table *t, const vf_row *lo, const vf_row *hi, const char **pv)
{
    int n = 0;
    for (uint32_t k = 0; lo && k < t->nkeys; k++)
        pv[n++] = lo->v[k];
    for (uint32_t k = 0; hi && k < t->nkeys; k++)
        pv[n++] = hi->v[k];
    return n;
}

int vf_src_scan(vf_src *s, const vf_table *t, char *err, size_t errlen)
{
    return vf_src_scan_range(s, t, NULL, NULL, err, errlen);
}

int vf_src_scan_range(vf_src *s, const vf_table *t, const vf_row *lo, const vf_row *hi,
                      char *err, size_t errlen)
{
    zx_buf q = {0};
    const char **pv = calloc(2 * (size_t)t->nkeys, sizeof(*pv));
    int bad = !pv || vf_put(&q, "SELECT ") < 0;
    s->sql.len = 0;
    bad = bad || put_cols(s, t, 0) < 0 || vf_put(&q, s->sql.p) < 0 || vf_put(&q, " FROM ") < 0 ||
          put_table(s, t) < 0 || vf_put(&q, s->sql.p) < 0 ||
          vf_put_bounds(&q, t, t->stypes, lo != NULL, hi != NULL) < 0 ||
          vf_put(&q, " ORDER BY ") < 0;
    s->sql.len = 0;
    bad = bad || put_cols(s, t, 1) < 0 || vf_put(&q, s->sql.p) < 0;
    if (bad) {
        free(pv);
        zx_buf_free(&q);
        return zx_seterr(err, errlen, "out of memory");
    }
    int np = bound_params(t, lo, hi, pv);
    int ok = PQsendQueryParams(s->conn, q.p, np, NULL, pv, NULL, NULL, 0) &&
             PQsetSingleRowMode(s->conn);
    free(pv);
    zx_buf_free(&q);
    if (!ok)
        return fail(s, NULL, "reading the table", err, errlen);
    s->scanning = 1;
    return 0;
}

/* SELECT count(*) OVER (), sum(h) OVER (), k1, ... FROM (SELECT k1, ...,
 * <row hash> AS h FROM t WHERE (keys) > (lo) ORDER BY keys LIMIT n) x
 * ORDER BY keys DESC LIMIT 1: the range's count, hash and last key. */
int vf_src_range(vf_src *s, const vf_table *t, const vf_row *lo, int64_t limit,
                 int64_t *count, char hash[64], vf_row *last, char *err, size_t errlen)
{
    zx_buf q = {0};
    char lim[40];
    snprintf(lim, sizeof(lim), " LIMIT %lld) AS x ORDER BY ", (long long)limit);
    int bad = vf_put(&q, "SELECT count(*) OVER ()::text, (sum(\"zx verify hash\") OVER ())"
                     "::text, ") < 0 || vf_put_keylist(&q, t, 0) < 0 ||
              vf_put(&q, " FROM (SELECT ") < 0 || vf_put_keylist(&q, t, 0) < 0 ||
              vf_put(&q, ", ") < 0 || vf_put_rowhash(&q, t) < 0 ||
              vf_put(&q, " AS \"zx verify hash\" FROM ") < 0 || put_table(s, t) < 0 ||
              vf_put(&q, s->sql.p) < 0 || vf_put_bounds(&q, t, t->stypes, lo != NULL, 0) < 0 ||
              vf_put(&q, " ORDER BY ") < 0 || vf_put_keylist(&q, t, 0) < 0 ||
              vf_put(&q, lim) < 0 || vf_put_keylist(&q, t, 1) < 0 || vf_put(&q, " LIMIT 1") < 0;
    if (bad) {
        zx_buf_free(&q);
        return zx_seterr(err, errlen, "out of memory");
    }
    const char **pv = lo ? (const char **)lo->v : NULL;
    PGresult *r = PQexecParams(s->conn, q.p, lo ? (int)t->nkeys : 0, NULL, pv, NULL, NULL, 0);
    zx_buf_free(&q);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
        return fail(s, r, "hashing a range of the table", err, errlen);
    *count = 0;
    snprintf(hash, 64, "0");
    int rc = 0;
    if (PQntuples(r) == 1) {
        *count = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        snprintf(hash, 64, "%s", PQgetvalue(r, 0, 1));
        if (vf_row_init(last, t->nkeys) < 0)
            rc = zx_seterr(err, errlen, "out of memory");
        for (uint32_t k = 0; rc == 0 && k < t->nkeys; k++)
            if (vf_row_set(last, k, PQgetvalue(r, 0, (int)k + 2),
                           (size_t)PQgetlength(r, 0, (int)k + 2)) < 0)
                rc = zx_seterr(err, errlen, "out of memory");
    }
    PQclear(r);
    return rc;
}

int vf_src_next(vf_src *s, vf_row *r, char *err, size_t errlen)
{
    if (!s->scanning)
        return 0;
    PGresult *res = PQgetResult(s->conn);
    if (res && PQresultStatus(res) == PGRES_SINGLE_TUPLE) {
        int rc = take_row(res, 0, r);
        PQclear(res);
        return rc < 0 ? zx_seterr(err, errlen, "out of memory") : 1;
    }
    int rc = 0;
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK)
        rc = fail(s, res, "reading the table", err, errlen);
    else
        PQclear(res);
    while ((res = PQgetResult(s->conn)))
        PQclear(res);
    s->scanning = 0;
    return rc;
}

/* Run s->sql with the key's texts as parameters of the key's types. */
static int run_key(vf_src *s, const vf_table *t, const vf_row *key, PGresult **out,
                   const char *what, char *err, size_t errlen)
{
    Oid types[ZX_VERIFY_MAX_KEYCOLS];
    if (key->n != t->nkeys || t->nkeys > ZX_VERIFY_MAX_KEYCOLS)
        return zx_seterr(err, errlen, "a key of %u columns", key->n);
    for (uint32_t k = 0; k < t->nkeys; k++)
        types[k] = t->oids[t->keys[k]];
    PGresult *r = PQexecParams(s->conn, s->sql.p, (int)key->n, types,
                               (const char *const *)key->v, NULL, NULL, 0);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
        return fail(s, r, what, err, errlen);
    *out = r;
    return 0;
}

int vf_src_get(vf_src *s, const vf_table *t, const vf_row *key, vf_row *r, char *err,
               size_t errlen)
{
    zx_buf q = {0};
    s->sql.len = 0;
    int bad = put_cols(s, t, 0) < 0 || vf_put(&q, "SELECT ") < 0 || vf_put(&q, s->sql.p) < 0 ||
              vf_put(&q, " FROM ") < 0 || put_table(s, t) < 0 || vf_put(&q, s->sql.p) < 0;
    s->sql.len = 0;
    bad = bad || put_where(s, t) < 0 || vf_put(&q, s->sql.p) < 0;
    if (bad) {
        zx_buf_free(&q);
        return zx_seterr(err, errlen, "out of memory");
    }
    zx_buf tmp = s->sql;
    s->sql = q;
    PGresult *res = NULL;
    int rc = run_key(s, t, key, &res, "reading a row by its key", err, errlen);
    s->sql = tmp;
    zx_buf_free(&q);
    if (rc < 0)
        return -1;
    rc = PQntuples(res) > 0;
    if (rc && take_row(res, 0, r) < 0)
        rc = zx_seterr(err, errlen, "out of memory");
    PQclear(res);
    return rc;
}

int vf_src_absent(vf_src *s, const vf_table *t, const vf_row *mkeys, size_t n, int *absent,
                  vf_row *canon, char *err, size_t errlen)
{
    /* SELECT u.i, u.c1::T1::text, ... FROM unnest($1::text[], ...) WITH
     * ORDINALITY AS u(c1, ..., i) WHERE NOT EXISTS (SELECT 1 FROM t
     * WHERE k1 = u.c1::T1 AND ...): the keys the source lacks, each
     * printed as the source prints its type */
    zx_buf q = {0};
    const char **pv = calloc(t->nkeys, sizeof(*pv));
    zx_buf *arr = calloc(t->nkeys, sizeof(*arr));
    int bad = !pv || !arr || vf_put(&q, "SELECT u.i") < 0;
    for (uint32_t k = 0; k < t->nkeys && !bad; k++) {
        char c[24];
        snprintf(c, sizeof(c), ", u.c%u::", k + 1);
        bad = vf_put(&q, c) < 0 || vf_put(&q, t->stypes[t->keys[k]]) < 0 ||
              vf_put(&q, "::text") < 0 || vf_put_array(&arr[k], mkeys, n, k) < 0;
        pv[k] = arr[k].p;
    }
    bad = bad || vf_put(&q, " FROM unnest(") < 0;
    for (uint32_t k = 0; k < t->nkeys && !bad; k++) {
        char c[24];
        snprintf(c, sizeof(c), "%s$%u::text[]", k ? ", " : "", k + 1);
        bad = vf_put(&q, c) < 0;
    }
    bad = bad || vf_put(&q, ") WITH ORDINALITY AS u(") < 0;
    for (uint32_t k = 0; k < t->nkeys && !bad; k++) {
        char c[24];
        snprintf(c, sizeof(c), "c%u, ", k + 1);
        bad = vf_put(&q, c) < 0;
    }
    s->sql.len = 0;
    bad = bad || vf_put(&q, "i) WHERE NOT EXISTS (SELECT 1 FROM ") < 0 || put_table(s, t) < 0 ||
          vf_put(&q, s->sql.p) < 0;
    for (uint32_t k = 0; k < t->nkeys && !bad; k++) {
        char c[24];
        snprintf(c, sizeof(c), " = u.c%u::", k + 1);
        bad = vf_put(&q, k ? " AND " : " WHERE ") < 0 ||
              vf_put_ident(&q, t->cols[t->keys[k]]) < 0 || vf_put(&q, c) < 0 ||
              vf_put(&q, t->stypes[t->keys[k]]) < 0;
    }
    bad = bad || vf_put(&q, ")") < 0;
    int rc = -1;
    PGresult *r = NULL;
    if (bad) {
        zx_seterr(err, errlen, "out of memory");
        goto out;
    }
    r = PQexecParams(s->conn, q.p, (int)t->nkeys, NULL, pv, NULL, NULL, 0);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) {
        fail(s, r, "looking up keys of the mirror", err, errlen);
        r = NULL;
        goto out;
    }
    memset(absent, 0, n * sizeof(*absent));
    for (int j = 0; j < PQntuples(r); j++) {
        long i = strtol(PQgetvalue(r, j, 0), NULL, 10) - 1;
        if (i < 0 || (size_t)i >= n || absent[i])
            continue;
        if (vf_row_init(&canon[i], t->nkeys) < 0) {
            zx_seterr(err, errlen, "out of memory");
            goto out;
        }
        absent[i] = 1;
        for (uint32_t k = 0; k < t->nkeys; k++)
            if (vf_row_set(&canon[i], k, PQgetvalue(r, j, (int)k + 1),
                           (size_t)PQgetlength(r, j, (int)k + 1)) < 0) {
                zx_seterr(err, errlen, "out of memory");
                goto out;
            }
    }
    rc = 0;
out:
    PQclear(r);
    for (uint32_t k = 0; arr && k < t->nkeys; k++)
        zx_buf_free(&arr[k]);
    free(arr);
    free(pv);
    zx_buf_free(&q);
    return rc;
}

int vf_src_streaming(vf_src *s, const char *slot, int64_t deadline_ms, char *err,
                     size_t errlen)
{
    const char *pv[1] = { slot };
    for (;;) {
        PGresult *r = PQexecParams(s->conn, "SELECT active FROM pg_replication_slots "
                                   "WHERE slot_name = $1", 1, NULL, pv, NULL, NULL, 0);
        if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
            return fail(s, r, "reading the replication slot", err, errlen);
        int n = PQntuples(r), active = n == 1 && PQgetvalue(r, 0, 0)[0] == 't';
        PQclear(r);
        if (active)
            return 0;
        if (zx_mono_ms() >= deadline_ms)
            return zx_seterr(err, errlen, n ? "the pipeline is not streaming (its replication "
                             "slot %s is not in use): is it running, or still copying? (`zxctl "
                             "status`)" : "its replication slot %s is not on %s: has the "
                             "pipeline started? (`zxctl status`)", slot, s->shown);
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}

int vf_src_wait(vf_src *s, const char *slot, const char *lsn, int64_t deadline_ms, char *err,
                size_t errlen)
{
    const char *pv[2] = { slot, lsn };
    for (;;) {
        PGresult *r = PQexecParams(s->conn,
            "SELECT confirmed_flush_lsn >= $2::pg_lsn FROM pg_replication_slots "
            "WHERE slot_name = $1", 2, NULL, pv, NULL, NULL, 0);
        if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
            return fail(s, r, "reading the slot's confirmed position", err, errlen);
        if (PQntuples(r) != 1) {
            PQclear(r);
            return zx_seterr(err, errlen, "replication slot %s is not on %s", slot, s->shown);
        }
        int done = PQgetvalue(r, 0, 0)[0] == 't';
        PQclear(r);
        if (done)
            return 1;
        if (zx_mono_ms() >= deadline_ms)
            return 0;
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}
