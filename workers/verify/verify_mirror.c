/*
 * verify_mirror.c — the mirror side of `zxctl verify` (verify_int.h): the
 * workspace opened read-only, a mirror row looked up by key and compared
 * with the source's row, and the mirror's keys read one by one.
 *
 * SQLite: the source's text of each column becomes what the CDC writer
 * stores (zx_pgv_from_text, then the fit rules of the mirror column's
 * declared type, bound as the writer binds it) and SQLite compares it
 * with `IS`, under the column's affinity, as it compared it when stored.
 * Postgres: the mirror has the source's types; both sessions print values
 * under the same settings (ZX_PG_SESSION_OPTIONS), so the texts compare.
 *
 * It must never: write to the workspace, or hold a read transaction
 * beyond one scan.
 */
#include "workers/verify/verify_int.h"

#include <libpq-fe.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rowset.h"
#include "common/pgconn.h"
#include "common/util.h"
#include "workers/sources/postgres/pg_repl.h"
#include "workers/sources/postgres/pg_values.h"
#include "workers/writer/workspace_sqlite_int.h"

struct vf_mir {
    int pg;                  /* 1: Postgres workspace */
    sqlite3 *db;
    sqlite3_stmt *cmp, *scan;
    PGconn *conn;
    char *schema;            /* Postgres: the workspace schema */
    char *shown;
    int scanning;
    zx_buf cmp_sql, sql;
    zx_rowset rs;            /* arena of converted values */
    zx_buf fb;
};

vf_mir *vf_mir_open(const zx_conf *c, char *err, size_t errlen)
{
    vf_mir *m = calloc(1, sizeof(*m));
    if (!m) {
        zx_seterr(err, errlen, "out of memory");
        return NULL;
    }
    zx_rowset_init(&m->rs);
    m->pg = c->ws_kind == ZX_WS_KIND_POSTGRES;
    if (!m->pg) {
        m->shown = strdup(c->sqlite_path);
        if (sqlite3_open_v2(c->sqlite_path, &m->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
                            NULL) != SQLITE_OK) {
            zx_seterr(err, errlen, "cannot open the workspace %s read-only: %s", c->sqlite_path,
                      m->db ? sqlite3_errmsg(m->db) : "out of memory");
            vf_mir_close(m);
            return NULL;
        }
        sqlite3_busy_timeout(m->db, 10000);
        sqlite3_db_config(m->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
        sqlite3_db_config(m->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
        return m;
    }
    m->shown = strdup(c->pg_dsn_shown ? c->pg_dsn_shown : "(dsn)");
    m->schema = strdup(c->pg_schema ? c->pg_schema : "public");
    zx_pg_connopts o = { .dsn = c->pg_dsn ? c->pg_dsn : "", .shown = m->shown,
                         .app = "zxd verify", .purpose = "(the workspace)",
                         .options = ZX_PG_SESSION_OPTIONS, .connect_timeout_s = 10 };
    if (!(m->conn = zx_pg_connect(&o, err, errlen))) {
        vf_mir_close(m);
        return NULL;
    }
    return m;
}

void vf_mir_close(vf_mir *m)
{
    if (!m)
        return;
    vf_mir_scan_end(m);
    sqlite3_finalize(m->cmp);
    if (m->db)
        sqlite3_close(m->db);
    if (m->conn)
        PQfinish(m->conn);
    zx_buf_free(&m->cmp_sql);
    zx_buf_free(&m->sql);
    zx_buf_free(&m->fb);
    zx_rowset_free(&m->rs);
    free(m->schema);
    free(m->shown);
    free(m);
}

static int pg_fail(vf_mir *m, PGresult *r, const char *what, char *err, size_t errlen)
{
    char e[600];
    const char *x = r ? PQresultErrorMessage(r) : "";
    snprintf(e, sizeof(e), "%s", x && *x ? x : PQerrorMessage(m->conn));
    e[strcspn(e, "\n")] = '\0';
    PQclear(r);
    return zx_seterr(err, errlen, "workspace %s: %s: %s", m->shown, what, e);
}

/* The mirror's columns: which source columns it has, and their declared
 * types on SQLite.  Returns the number of mirror columns, or -1. */
static int mirror_columns(vf_mir *m, vf_table *t, char *err, size_t errlen)
{
    int found = 0;
    if (!m->pg) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(m->db, "SELECT name, type FROM pragma_table_info(?)", -1, &st,
                               NULL) != SQLITE_OK)
            return zx_seterr(err, errlen, "workspace %s: %s", m->shown, sqlite3_errmsg(m->db));
        /* a column is the source column of exactly its name; SQLite
         * ignores case, so a source column differing only in case from
         * one the mirror has is a column zx stored under another name
         * (`upper_2`): not compared (see the README) */
        sqlite3_bind_text(st, 1, t->mirror, -1, SQLITE_STATIC);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *n = (const char *)sqlite3_column_text(st, 0);
            const char *d = (const char *)sqlite3_column_text(st, 1);
            found++;
            for (uint32_t i = 0; n && i < t->ncols; i++)
                if (!strcmp(t->cols[i], n)) {
                    t->in_mirror[i] = 1;
                    t->decls[i] = strdup(d ? d : "");
                    if (!t->decls[i])
                        rc = SQLITE_NOMEM;
                    break;
                }
            if (rc != SQLITE_ROW)
                break;
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return zx_seterr(err, errlen, "workspace %s: %s", m->shown, sqlite3_errmsg(m->db));
        return found;
    }
    const char *pv[2] = { m->schema, t->mirror };
    PGresult *r = PQexecParams(m->conn,
        "SELECT a.attname, format_type(a.atttypid, NULL) FROM pg_attribute a "
        "JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 "
        "AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped", 2, NULL, pv, NULL, NULL, 0);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
        return pg_fail(m, r, "reading the mirror's columns", err, errlen);
    for (int j = 0; j < PQntuples(r); j++) {
        found++;
        for (uint32_t i = 0; i < t->ncols; i++)
            if (!strcmp(t->cols[i], PQgetvalue(r, j, 0))) {
                t->in_mirror[i] = 1;
                free(t->mtypes[i]);
                if (!(t->mtypes[i] = strdup(PQgetvalue(r, j, 1)))) {
                    PQclear(r);
                    return zx_seterr(err, errlen, "out of memory");
                }
            }
    }
    PQclear(r);
    return found;
}

/* "schema"."mirror" (Postgres) or "mirror" (SQLite) appended to b. */
static int put_mirror(vf_mir *m, const vf_table *t, zx_buf *b)
{
    if (m->pg && (vf_put_ident(b, m->schema) < 0 || vf_put(b, ".") < 0))
        return -1;
    return vf_put_ident(b, t->mirror);
}

/* " WHERE k1 = ?N ..." with parameters numbered from first + 1. */
static int put_where(vf_mir *m, const vf_table *t, uint32_t first, zx_buf *b)
{
    for (uint32_t k = 0; k < t->nkeys; k++) {
        char p[24];
        snprintf(p, sizeof(p), m->pg ? " = $%u" : " = ?%u", first + k + 1);
        if (vf_put(b, k ? " AND " : " WHERE ") < 0 || vf_put_ident(b, t->cols[t->keys[k]]) < 0 ||
            vf_put(b, p) < 0)
            return -1;
    }
    return 0;
}

int vf_mir_table(vf_mir *m, vf_table *t, char *err, size_t errlen)
{
    vf_mir_scan_end(m);
    sqlite3_finalize(m->cmp);
    m->cmp = NULL;
    int n = mirror_columns(m, t, err, errlen);
    if (n < 0)
        return -1;
    if (n == 0)
        return zx_seterr(err, errlen, "mirror table %s is not in the workspace %s (has the "
                         "pipeline copied it yet?)", t->mirror, m->shown);
    for (uint32_t k = 0; k < t->nkeys; k++)
        if (!t->in_mirror[t->keys[k]])
            return zx_seterr(err, errlen, "mirror table %s has no column %s of the key",
                             t->mirror, t->cols[t->keys[k]]);
    /* SQLite: SELECT (c1 IS ?1), ... FROM m WHERE k1 = ?N+1 ...
     * Postgres: SELECT c1, ... FROM s.m WHERE k1 = $1 ... */
    zx_buf *b = &m->cmp_sql;
    b->len = 0;
    int bad = vf_put(b, "SELECT 1") < 0;
    for (uint32_t i = 0; i < t->ncols && !bad; i++) {
        char p[24];
        snprintf(p, sizeof(p), " IS ?%u)", i + 1);
        if (!t->in_mirror[i])
            bad = vf_put(b, ", NULL") < 0;
        else
            bad = vf_put(b, m->pg ? ", " : ", (") < 0 || vf_put_ident(b, t->cols[i]) < 0 ||
                  (!m->pg && vf_put(b, p) < 0);
    }
    bad = bad || vf_put(b, " FROM ") < 0 || put_mirror(m, t, b) < 0 ||
          put_where(m, t, m->pg ? 0 : t->ncols, b) < 0;
    if (bad)
        return zx_seterr(err, errlen, "out of memory");
    if (!m->pg && sqlite3_prepare_v2(m->db, b->p, -1, &m->cmp, NULL) != SQLITE_OK)
        return zx_seterr(err, errlen, "workspace %s: reading mirror %s: %s", m->shown, t->mirror,
                         sqlite3_errmsg(m->db));
    return 0;
}

/* Bind the source's text v (len; NULL: NULL) of a column of type oid as
 * the writer stores it in a column declared decl, at parameter p. */
static int bind_as_stored(vf_mir *m, int p, uint32_t oid, const char *decl, const char *v,
                          size_t len)
{
    if (!v)
        return sqlite3_bind_null(m->cmp, p) == SQLITE_OK ? 0 : -1;
    zx_value zv;
    zx_fit_out o;
    if (zx_pgv_from_text(oid, v, len, &m->rs, &zv) < 0)
        return -1;
    int fit = zx_fit_value(zx_wsq_kind_from_decl(decl), &zv, &m->fb, &o);
    if (fit < 0)
        return -1;
    int rc;
    switch (fit ? o.st : ZX_FIT_S_NULL) { /* a misfit is stored as NULL */
    case ZX_FIT_S_INT: rc = sqlite3_bind_int64(m->cmp, p, o.i); break;
    case ZX_FIT_S_REAL:
        rc = isnan(o.d) ? sqlite3_bind_text(m->cmp, p, "NaN", 3, SQLITE_STATIC)
                        : sqlite3_bind_double(m->cmp, p, o.d);
        break;
    case ZX_FIT_S_TEXT:
        rc = sqlite3_bind_text64(m->cmp, p, o.s, o.len, SQLITE_TRANSIENT, SQLITE_UTF8);
        break;
    default: rc = sqlite3_bind_null(m->cmp, p); break;
    }
    return rc == SQLITE_OK ? 0 : -1;
}

static int compare_sqlite(vf_mir *m, const vf_table *t, const vf_row *src, const vf_row *key,
                          vf_how *how, int *diff, char *err, size_t errlen)
{
    sqlite3_reset(m->cmp);
    sqlite3_clear_bindings(m->cmp);
    zx_rowset_reset(&m->rs);
    int bad = 0;
    for (uint32_t i = 0; i < t->ncols && src && !bad; i++)
        if (t->in_mirror[i])
            bad = bind_as_stored(m, (int)i + 1, t->oids[i], t->decls[i], src->v[i],
                                 src->len[i]) < 0;
    for (uint32_t k = 0; k < t->nkeys && !bad; k++) {
        uint32_t i = t->keys[k];
        bad = bind_as_stored(m, (int)(t->ncols + k + 1), t->oids[i], t->decls[i], key->v[k],
                             key->len[k]) < 0;
    }
    if (bad)
        return zx_seterr(err, errlen, "out of memory");
    int rc = sqlite3_step(m->cmp);
    if (rc == SQLITE_DONE) {
        *how = src ? VF_MISSING : VF_EQUAL;
    } else if (rc == SQLITE_ROW) {
        *how = src ? VF_EQUAL : VF_EXTRA;
        for (uint32_t i = 0; i < t->ncols && src; i++)
            if (t->in_mirror[i] && sqlite3_column_int(m->cmp, (int)i + 1) != 1) {
                diff[i] = 1;
                *how = VF_DIFFER;
            }
    } else {
        zx_seterr(err, errlen, "workspace %s: reading mirror %s: %s", m->shown, t->mirror,
                  sqlite3_errmsg(m->db));
    }
    sqlite3_reset(m->cmp);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

/* Row j of r against src: its columns from off on are t's (NULL where the
 * mirror lacks one), and present says whether the mirror has the key. */
static void judge_pg(const vf_table *t, PGresult *r, int j, int off, int present,
                     const vf_row *src, vf_how *how, int *diff)
{
    if (!present) {
        *how = src ? VF_MISSING : VF_EQUAL;
        return;
    }
    *how = src ? VF_EQUAL : VF_EXTRA;
    for (uint32_t i = 0; i < t->ncols && src; i++) {
        if (!t->in_mirror[i])
            continue;
        int c = (int)i + off;
        int eq = PQgetisnull(r, j, c)
            ? !src->v[i]
            : src->v[i] && (size_t)PQgetlength(r, j, c) == src->len[i] &&
              !memcmp(PQgetvalue(r, j, c), src->v[i], src->len[i]);
        if (!eq) {
            diff[i] = 1;
            *how = VF_DIFFER;
        }
    }
}

static int compare_pg(vf_mir *m, const vf_table *t, const vf_row *src, const vf_row *key,
                      vf_how *how, int *diff, char *err, size_t errlen)
{
    PGresult *r = PQexecParams(m->conn, m->cmp_sql.p, (int)key->n, NULL,
                               (const char *const *)key->v, NULL, NULL, 0);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
        return pg_fail(m, r, "reading the mirror", err, errlen);
    judge_pg(t, r, 0, 1, PQntuples(r) > 0, src, how, diff);
    PQclear(r);
    return 0;
}

/* SELECT u.i, m.k1 IS NOT NULL, m.c1, ... FROM unnest($1::text[], ...)
 * WITH ORDINALITY AS u(c1, ..., i) LEFT JOIN s.m AS m ON m.k1 =
 * u.c1::MT1 AND ...: every key with its mirror row, in one query. */
static int compare_pg_many(vf_mir *m, const vf_table *t, const vf_row *src, const vf_row *keys,
                           size_t n, vf_how *how, int *diff, char *err, size_t errlen)
{
    zx_buf q = {0};
    const char **pv = calloc(t->nkeys, sizeof(*pv));
    zx_buf *arr = calloc(t->nkeys, sizeof(*arr));
    int bad = !pv || !arr || vf_put(&q, "SELECT u.i, m.") < 0 ||
              vf_put_ident(&q, t->cols[t->keys[0]]) < 0 || vf_put(&q, " IS NOT NULL") < 0;
    for (uint32_t i = 0; i < t->ncols && !bad; i++)
        bad = t->in_mirror[i] ? vf_put(&q, ", m.") < 0 || vf_put_ident(&q, t->cols[i]) < 0
                              : vf_put(&q, ", NULL") < 0;
    bad = bad || vf_put(&q, " FROM unnest(") < 0;
    for (uint32_t k = 0; k < t->nkeys && !bad; k++) {
        char c[24];
        snprintf(c, sizeof(c), "%s$%u::text[]", k ? ", " : "", k + 1);
        bad = vf_put(&q, c) < 0 || vf_put_array(&arr[k], keys, n, k) < 0;
        pv[k] = arr[k].p;
    }
    bad = bad || vf_put(&q, ") WITH ORDINALITY AS u(") < 0;
    for (uint32_t k = 0; k < t->nkeys && !bad; k++) {
        char c[24];
        snprintf(c, sizeof(c), "c%u, ", k + 1);
        bad = vf_put(&q, c) < 0;
    }
    bad = bad || vf_put(&q, "i) LEFT JOIN ") < 0 || put_mirror(m, t, &q) < 0 ||
          vf_put(&q, " AS m") < 0;
    for (uint32_t k = 0; k < t->nkeys && !bad; k++) {
        char c[24];
        uint32_t i = t->keys[k];
        snprintf(c, sizeof(c), " = u.c%u::", k + 1);
        bad = !t->mtypes[i] || vf_put(&q, k ? " AND m." : " ON m.") < 0 ||
              vf_put_ident(&q, t->cols[i]) < 0 || vf_put(&q, c) < 0 ||
              vf_put(&q, t->mtypes[i]) < 0;
    }
    int rc = -1;
    PGresult *r = NULL;
    if (bad) {
        zx_seterr(err, errlen, "out of memory");
        goto out;
    }
    r = PQexecParams(m->conn, q.p, (int)t->nkeys, NULL, pv, NULL, NULL, 0);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) {
        pg_fail(m, r, "reading the mirror", err, errlen);
        r = NULL;
        goto out;
    }
    if ((size_t)PQntuples(r) != n) {
        zx_seterr(err, errlen, "workspace %s: mirror %s answered %d rows for %zu keys (is its "
                  "key still unique?)", m->shown, t->mirror, PQntuples(r), n);
        goto out;
    }
    for (int j = 0; j < PQntuples(r); j++) {
        long i = strtol(PQgetvalue(r, j, 0), NULL, 10) - 1;
        if (i < 0 || (size_t)i >= n)
            continue;
        int *d = diff + (size_t)i * t->ncols;
        memset(d, 0, t->ncols * sizeof(*d));
        judge_pg(t, r, j, 2, PQgetvalue(r, j, 1)[0] == 't', &src[i], &how[i], d);
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

int vf_mir_compare_many(vf_mir *m, const vf_table *t, const vf_row *src, const vf_row *keys,
                        size_t n, vf_how *how, int *diff, char *err, size_t errlen)
{
    if (m->pg)
        return n ? compare_pg_many(m, t, src, keys, n, how, diff, err, errlen) : 0;
    for (size_t i = 0; i < n; i++)
        if (vf_mir_compare(m, t, &src[i], &keys[i], &how[i], diff + i * t->ncols, err,
                           errlen) < 0)
            return -1;
    return 0;
}

int vf_mir_compare(vf_mir *m, const vf_table *t, const vf_row *src, const vf_row *key,
                   vf_how *how, int *diff, char *err, size_t errlen)
{
    memset(diff, 0, t->ncols * sizeof(*diff));
    return m->pg ? compare_pg(m, t, src, key, how, diff, err, errlen)
                 : compare_sqlite(m, t, src, key, how, diff, err, errlen);
}

int vf_mir_is_pg(const vf_mir *m)
{
    return m->pg;
}

int vf_mir_scan(vf_mir *m, const vf_table *t, char *err, size_t errlen)
{
    return vf_mir_scan_range(m, t, NULL, NULL, err, errlen);
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

int vf_mir_scan_range(vf_mir *m, const vf_table *t, const vf_row *lo, const vf_row *hi,
                      char *err, size_t errlen)
{
    vf_mir_scan_end(m);
    if (!m->pg && (lo || hi))
        return zx_seterr(err, errlen, "a SQLite mirror is not read by key ranges");
    zx_buf *b = &m->sql;
    b->len = 0;
    int bad = vf_put(b, "SELECT ") < 0;
    for (uint32_t k = 0; k < t->nkeys && !bad; k++)
        bad = (k && vf_put(b, ", ") < 0) || vf_put_ident(b, t->cols[t->keys[k]]) < 0;
    bad = bad || vf_put(b, " FROM ") < 0 || put_mirror(m, t, b) < 0 ||
          (m->pg && vf_put_bounds(b, t, t->mtypes, lo != NULL, hi != NULL) < 0);
    if (bad)
        return zx_seterr(err, errlen, "out of memory");
    if (!m->pg) {
        if (sqlite3_prepare_v2(m->db, b->p, -1, &m->scan, NULL) != SQLITE_OK)
            return zx_seterr(err, errlen, "workspace %s: reading mirror %s: %s", m->shown,
                             t->mirror, sqlite3_errmsg(m->db));
        return 0;
    }
    const char **pv = calloc(2 * (size_t)t->nkeys, sizeof(*pv));
    if (!pv)
        return zx_seterr(err, errlen, "out of memory");
    int np = bound_params(t, lo, hi, pv);
    int ok = PQsendQueryParams(m->conn, b->p, np, NULL, pv, NULL, NULL, 0) &&
             PQsetSingleRowMode(m->conn);
    free(pv);
    if (!ok)
        return pg_fail(m, NULL, "reading the mirror", err, errlen);
    m->scanning = 1;
    return 0;
}

/* SELECT count(*), coalesce(sum(<row hash>), 0) FROM s.m WHERE (keys) >
 * (lo) AND (keys) <= (hi). */
int vf_mir_range(vf_mir *m, const vf_table *t, const vf_row *lo, const vf_row *hi,
                 int64_t *count, char hash[64], char *err, size_t errlen)
{
    if (!m->pg)
        return zx_seterr(err, errlen, "a SQLite mirror is not hashed by key ranges");
    vf_mir_scan_end(m);
    zx_buf q = {0};
    const char **pv = calloc(2 * (size_t)t->nkeys, sizeof(*pv));
    int bad = !pv || vf_put(&q, "SELECT count(*)::text, coalesce(sum(") < 0 ||
              vf_put_rowhash(&q, t) < 0 || vf_put(&q, "), 0)::text FROM ") < 0 ||
              put_mirror(m, t, &q) < 0 ||
              vf_put_bounds(&q, t, t->mtypes, lo != NULL, hi != NULL) < 0;
    if (bad) {
        free(pv);
        zx_buf_free(&q);
        return zx_seterr(err, errlen, "out of memory");
    }
    int np = bound_params(t, lo, hi, pv);
    PGresult *r = PQexecParams(m->conn, q.p, np, NULL, pv, NULL, NULL, 0);
    free(pv);
    zx_buf_free(&q);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        return pg_fail(m, r, "hashing a range of the mirror", err, errlen);
    *count = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    snprintf(hash, 64, "%s", PQgetvalue(r, 0, 1));
    PQclear(r);
    return 0;
}

int vf_mir_next(vf_mir *m, vf_row *key, char *err, size_t errlen)
{
    if (!m->pg) {
        if (!m->scan)
            return 0;
        int rc = sqlite3_step(m->scan);
        if (rc == SQLITE_DONE) {
            vf_mir_scan_end(m);
            return 0;
        }
        if (rc != SQLITE_ROW) {
            zx_seterr(err, errlen, "workspace %s: reading the mirror: %s", m->shown,
                      sqlite3_errmsg(m->db));
            vf_mir_scan_end(m);
            return -1;
        }
        uint32_t n = (uint32_t)sqlite3_column_count(m->scan);
        if (vf_row_init(key, n) < 0)
            return zx_seterr(err, errlen, "out of memory");
        for (uint32_t k = 0; k < n; k++) {
            char num[40];
            const char *v = NULL;
            size_t len = 0;
            switch (sqlite3_column_type(m->scan, (int)k)) {
            case SQLITE_INTEGER:
                len = (size_t)snprintf(num, sizeof(num), "%lld",
                                       (long long)sqlite3_column_int64(m->scan, (int)k));
                v = num;
                break;
            case SQLITE_FLOAT:
                len = (size_t)snprintf(num, sizeof(num), "%.17g",
                                       sqlite3_column_double(m->scan, (int)k));
                v = num;
                break;
            case SQLITE_NULL: break;
            default:
                v = (const char *)sqlite3_column_text(m->scan, (int)k);
                len = (size_t)sqlite3_column_bytes(m->scan, (int)k);
                break;
            }
            if (vf_row_set(key, k, v, len) < 0)
                return zx_seterr(err, errlen, "out of memory");
        }
        return 1;
    }
    if (!m->scanning)
        return 0;
    PGresult *r = PQgetResult(m->conn);
    if (r && PQresultStatus(r) == PGRES_SINGLE_TUPLE) {
        uint32_t n = (uint32_t)PQnfields(r);
        int bad = vf_row_init(key, n) < 0;
        for (uint32_t k = 0; k < n && !bad; k++)
            if (!PQgetisnull(r, 0, (int)k))
                bad = vf_row_set(key, k, PQgetvalue(r, 0, (int)k),
                                 (size_t)PQgetlength(r, 0, (int)k)) < 0;
        PQclear(r);
        return bad ? zx_seterr(err, errlen, "out of memory") : 1;
    }
    int rc = 0;
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = pg_fail(m, r, "reading the mirror", err, errlen);
    else
        PQclear(r);
    vf_mir_scan_end(m);
    return rc;
}

void vf_mir_scan_end(vf_mir *m)
{
    if (m->scan) {
        sqlite3_finalize(m->scan);
        m->scan = NULL;
    }
    if (m->scanning) {
        PGresult *r;
        PQrequestCancel(m->conn);
        while ((r = PQgetResult(m->conn)))
            PQclear(r);
        m->scanning = 0;
    }
}
