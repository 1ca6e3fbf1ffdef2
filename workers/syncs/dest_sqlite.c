/*
 * dest_sqlite.c — a reverse sync's SQLite table destination (dest.h).
 *
 * One run is one transaction (BEGIN IMMEDIATE: the write lock is taken at
 * begin, waiting at most deadline_ms for another writer), in WAL mode so
 * that readers keep reading the table as it was until COMMIT.  The table
 * is made (or given the columns it lacks) inside that transaction, so an
 * aborted run leaves nothing behind.
 *
 *   replace  DELETE FROM the table (SQLite empties it whole, fast), then
 *            the rows
 *   append   the rows
 *   upsert,  INSERT ... ON CONFLICT (keys) DO UPDATE SET every other
 *   mirror   column = excluded.column (DO NOTHING when every column is a
 *            key); delete_keys: DELETE ... WHERE key = ?.  A key sent twice
 *            keeps its last row.
 * One prepared statement each, reused for every row.
 *
 * Column types zx declares (affinity in brackets):
 *   TEXT -> TEXT, INT64 -> INTEGER, DOUBLE -> REAL, BOOL -> INTEGER (0/1),
 *   TIMESTAMP -> TEXT "2026-12-01T06:13:18.123456Z" (UTC, always six
 *   fraction digits: sorts and compares as time), DATE -> TEXT
 *   "YYYY-MM-DD", DECIMAL -> TEXT (the literal as given: a NUMERIC or REAL
 *   column would turn "12345678901234567890.12" into a double and lose
 *   digits), JSON -> TEXT, BYTES -> BLOB.
 * Key columns are NOT NULL and the table's PRIMARY KEY.  upsert and mirror
 * need a primary key or unique index on exactly the key columns (ON
 * CONFLICT needs it); begin says which to create when there is none.
 *
 * Values follow dest_cells.h for the run's column types, with two SQLite
 * limits: it has no NaN (it would store NULL), so a NaN double is a
 * misfit (NULL, counted in stats.nulled); ±Infinity are stored as REAL
 * infinities.  Text may hold NUL bytes (stored with their length).  A row
 * whose key is NULL (or a misfit) is left out in upsert and mirror and
 * counted once in stats.nulled; so is a key to delete that does not fit.
 * Values are converted for the run's column types, not for the declared
 * types of a user-made table (SQLite applies that column's affinity).
 *
 * It must never: write to a read_only connection, write outside the run's
 * transaction, or hold the write lock after commit or abort.
 */
#include "workers/syncs/dest.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/timefmt.h"
#include "common/util.h"
#include "workers/syncs/dest_cells.h"

#define DEFAULT_DEADLINE_MS 30000

typedef struct sqd {
    sqlite3 *db;
    char *cname, *path;
    char *table;                /* without "main." */
    char *qtable;               /* "main"."table" */
    char *shown;                /* as written in the configuration */

    /* the run */
    zx_sync_mode mode;
    zx_dest_stats *st;
    size_t ncols, nkeys;
    size_t *key;                /* key column indexes */
    zx_dc_target *t;
    char **qcols;
    sqlite3_stmt *ins, *del;
    zx_dc_buf scratch;
    zx_value *vals;
} sqd;

/* "sqlite NAME table T: <what>" into err; returns -1. */
static int fail(sqd *d, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(sqd *d, char *err, size_t errlen, const char *fmt, ...)
{
    char what[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (err && errlen)
        snprintf(err, errlen, "sqlite %s table %s: %s", d->cname, d->shown, what);
    return -1;
}

static const char *dbmsg(sqd *d)
{
    return d->db ? sqlite3_errmsg(d->db) : "out of memory";
}

static char *quote_ident(const char *name)
{
    size_t n = strlen(name), q = 0;
    for (size_t i = 0; i < n; i++)
        q += name[i] == '"';
    char *s = malloc(n + q + 3), *p = s;
    if (!s)
        return NULL;
    *p++ = '"';
    for (size_t i = 0; i < n; i++) {
        if (name[i] == '"')
            *p++ = '"';
        *p++ = name[i];
    }
    *p++ = '"';
    *p = '\0';
    return s;
}

static int sb_printf(zx_dc_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sb_printf(zx_dc_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || zx_dc_buf_reserve(b, (size_t)n) < 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

static int exec_sql(sqd *d, const char *sql)
{
    return sqlite3_exec(d->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

/* ---- open / close -------------------------------------------------- */

static void reset_run(sqd *d)
{
    sqlite3_finalize(d->ins);
    sqlite3_finalize(d->del);
    d->ins = d->del = NULL;
    if (d->qcols)
        for (size_t i = 0; i < d->ncols; i++)
            free(d->qcols[i]);
    free(d->qcols);
    free(d->key);
    free(d->t);
    free(d->vals);
    d->qcols = NULL;
    d->key = NULL;
    d->t = NULL;
    d->vals = NULL;
    d->ncols = d->nkeys = 0;
    d->st = NULL;
}

static void sq_close(void *state)
{
    sqd *d = state;
    if (!d)
        return;
    reset_run(d);
    if (d->db) {
        if (!sqlite3_get_autocommit(d->db))
            exec_sql(d, "ROLLBACK");
        sqlite3_close_v2(d->db);
    }
    zx_dc_buf_free(&d->scratch);
    free(d->cname);
    free(d->path);
    free(d->table);
    free(d->qtable);
    free(d->shown);
    free(d);
}

static int sq_open(const zx_dest_args *a, void **state, char *err, size_t errlen)
{
    *state = NULL;
    const zx_conf_connection *cn = a ? a->conn : NULL;
    if (!cn || !cn->name || !a->table)
        return zx_seterr(err, errlen, "sqlite destination: no connection or table given");
    if (cn->read_only)
        return zx_seterr(err, errlen, "sqlite connection %s is read_only: zx never writes to it",
                         cn->name);
    if (!cn->path || cn->path[0] != '/')
        return zx_seterr(err, errlen, "sqlite connection %s: the database file must be an "
                         "absolute path", cn->name);
    sqd *d = calloc(1, sizeof(*d));
    if (!d)
        return zx_seterr(err, errlen, "sqlite %s: out of memory", cn->name);
    const char *t = a->table;
    if (strncmp(t, "main.", 5) == 0)
        t += 5;
    d->cname = strdup(cn->name);
    d->path = strdup(cn->path);
    d->shown = strdup(a->table);
    d->table = strdup(t);
    if (!d->cname || !d->path || !d->shown || !d->table) {
        sq_close(d);
        return zx_seterr(err, errlen, "sqlite %s: out of memory", cn->name);
    }
    if (!*d->table || strchr(d->table, '.')) {
        fail(d, err, errlen, "not a table name: write \"table\" or \"main.table\"");
        sq_close(d);
        return -1;
    }
    char *qt = quote_ident(d->table);
    zx_dc_buf b = { 0 };
    if (!qt || sb_printf(&b, "\"main\".%s", qt) < 0) {
        free(qt);
        zx_dc_buf_free(&b);
        sq_close(d);
        return zx_seterr(err, errlen, "sqlite %s: out of memory", cn->name);
    }
    free(qt);
    d->qtable = b.p;
    int rc = sqlite3_open_v2(d->path, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                             SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        fail(d, err, errlen, "cannot open %s: %s (does its folder exist and may zxd write "
             "there?)", d->path, dbmsg(d));
        sq_close(d);
        return -1;
    }
    int64_t ms = a->deadline_ms > 0 ? a->deadline_ms : DEFAULT_DEADLINE_MS;
    sqlite3_busy_timeout(d->db, ms > INT_MAX ? INT_MAX : (int)ms);
    /* WAL: readers keep the old rows while a run writes */
    sqlite3_stmt *st = NULL;
    rc = sqlite3_prepare_v2(d->db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) {
        fail(d, err, errlen, "cannot use %s: %s", d->path, dbmsg(d));
        sq_close(d);
        return -1;
    }
    *state = d;
    return 0;
}

/* ---- begin --------------------------------------------------------- */

static const char *sq_type_of(zx_dtype t)
{
    switch (t) {
    case ZX_DT_INT64:
    case ZX_DT_BOOL: return "INTEGER";
    case ZX_DT_DOUBLE: return "REAL";
    case ZX_DT_BYTES: return "BLOB";
    default: return "TEXT";     /* text, timestamp, date, decimal, json */
    }
}

/* 1 when the table (or a view: -2) exists, 0 when not, -1 on error. */
static int table_kind(sqd *d)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->db, "SELECT type FROM main.sqlite_master WHERE type IN "
                           "('table', 'view') AND name = ?1 COLLATE NOCASE", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, d->table, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st), r;
    if (rc == SQLITE_ROW)
        r = strcmp((const char *)sqlite3_column_text(st, 0), "view") == 0 ? -2 : 1;
    else
        r = rc == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return r;
}

/* Names of the table's columns (pk: its primary key position, 0 if none):
 * calls fn for each.  0 or -1. */
static int each_column(sqd *d, void (*fn)(void *, const char *, int), void *arg)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->db, "SELECT name, pk FROM pragma_table_info(?1, 'main')", -1,
                           &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, d->table, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn(arg, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int(st, 1));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

typedef struct colscan {
    sqd *d;
    const zx_dest_run *run;
    uint8_t *have;      /* per run column: the table has it */
    size_t npk, pk_match;
} colscan;

static void scan_col(void *arg, const char *name, int pk)
{
    colscan *c = arg;
    if (!name)
        return;
    int iskey = 0;
    for (size_t i = 0; i < c->run->ncols; i++)
        if (sqlite3_stricmp(name, c->run->cols[i].name) == 0) {
            c->have[i] = 1;
            for (size_t k = 0; k < c->d->nkeys; k++)
                iskey |= c->d->key[k] == i;
        }
    if (pk > 0) {
        c->npk++;
        c->pk_match += iskey;
    }
}

/* A unique index on exactly the key columns?  1, 0 or -1. */
static int unique_index_on_keys(sqd *d, const zx_dest_run *run)
{
    sqlite3_stmt *il, *ii = NULL;
    if (sqlite3_prepare_v2(d->db, "SELECT name FROM pragma_index_list(?1, 'main') WHERE "
                           "\"unique\" AND NOT partial", -1, &il, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_prepare_v2(d->db, "SELECT name FROM pragma_index_info(?1, 'main')", -1, &ii,
                           NULL) != SQLITE_OK) {
        sqlite3_finalize(il);
        return -1;
    }
    sqlite3_bind_text(il, 1, d->table, -1, SQLITE_STATIC);
    int found = 0, rc;
    while (!found && (rc = sqlite3_step(il)) == SQLITE_ROW) {
        sqlite3_reset(ii);
        sqlite3_bind_text(ii, 1, (const char *)sqlite3_column_text(il, 0), -1,
                          SQLITE_TRANSIENT);
        size_t n = 0, matched = 0;
        while (sqlite3_step(ii) == SQLITE_ROW) {
            const char *cn = (const char *)sqlite3_column_text(ii, 0);
            n++;
            for (size_t k = 0; cn && k < d->nkeys; k++)
                if (sqlite3_stricmp(cn, run->cols[d->key[k]].name) == 0) {
                    matched++;
                    break;
                }
        }
        found = n == d->nkeys && matched == d->nkeys;
    }
    sqlite3_finalize(il);
    sqlite3_finalize(ii);
    return found;
}

static int check_run(sqd *d, const zx_dest_run *run, char *err, size_t errlen)
{
    if (!run->cols || run->ncols == 0)
        return fail(d, err, errlen, "the run has no columns");
    if ((run->mode == ZX_MODE_UPSERT || run->mode == ZX_MODE_MIRROR) && run->nkey_cols == 0)
        return fail(d, err, errlen, "%s needs key columns", run->mode == ZX_MODE_UPSERT
                    ? "upsert" : "mirror");
    d->ncols = run->ncols;
    d->nkeys = run->nkey_cols;
    d->qcols = calloc(d->ncols, sizeof(*d->qcols));
    d->key = calloc(d->nkeys ? d->nkeys : 1, sizeof(*d->key));
    d->t = calloc(d->ncols, sizeof(*d->t));
    d->vals = calloc(d->ncols, sizeof(*d->vals));
    if (!d->qcols || !d->key || !d->t || !d->vals)
        return fail(d, err, errlen, "out of memory");
    for (size_t i = 0; i < d->ncols; i++) {
        if (!run->cols[i].name || !run->cols[i].name[0])
            return fail(d, err, errlen, "a column of the result has no name");
        if (!(d->qcols[i] = quote_ident(run->cols[i].name)))
            return fail(d, err, errlen, "out of memory");
        d->t[i] = zx_dc_target_of(run->cols[i].type, run->cols[i].precision,
                                  run->cols[i].scale);
        d->t[i].nan_ok = 0;         /* SQLite stores NaN as NULL */
        d->t[i].nul_ok = 1;
    }
    for (size_t k = 0; k < d->nkeys; k++) {
        size_t i = 0;
        while (i < d->ncols && (!run->key_cols[k] || strcmp(run->cols[i].name,
                                                            run->key_cols[k]) != 0))
            i++;
        if (i == d->ncols)
            return fail(d, err, errlen, "key column \"%.80s\" is not a column of the result",
                        run->key_cols[k] ? run->key_cols[k] : "");
        d->key[k] = i;
    }
    return 0;
}

static int make_table(sqd *d, const zx_dest_run *run, char *err, size_t errlen)
{
    int kind = table_kind(d);
    if (kind == -2)
        return fail(d, err, errlen, "is a view: zx writes only to tables");
    if (kind < 0)
        return fail(d, err, errlen, "%s", dbmsg(d));
    zx_dc_buf b = { 0 };
    int bad = 0;
    if (kind == 0) {
        bad = sb_printf(&b, "CREATE TABLE IF NOT EXISTS %s (", d->qtable) < 0;
        for (size_t i = 0; i < d->ncols && !bad; i++) {
            int iskey = 0;
            for (size_t k = 0; k < d->nkeys; k++)
                iskey |= d->key[k] == i;
            bad = sb_printf(&b, "%s%s %s%s", i ? ", " : "", d->qcols[i],
                            sq_type_of(run->cols[i].type), iskey ? " NOT NULL" : "") < 0;
        }
        for (size_t k = 0; k < d->nkeys && !bad; k++)
            bad = sb_printf(&b, "%s%s", k ? ", " : ", PRIMARY KEY (", d->qcols[d->key[k]]) < 0;
        if (!bad)
            bad = sb_printf(&b, "%s)", d->nkeys ? ")" : "") < 0;
        if (bad) {
            zx_dc_buf_free(&b);
            return fail(d, err, errlen, "out of memory");
        }
        int rc = exec_sql(d, b.p);
        zx_dc_buf_free(&b);
        if (rc < 0)
            return fail(d, err, errlen, "cannot create the table: %s", dbmsg(d));
    }
    uint8_t *have = calloc(d->ncols, 1);
    if (!have)
        return fail(d, err, errlen, "out of memory");
    colscan cs = { d, run, have, 0, 0 };
    if (each_column(d, scan_col, &cs) < 0) {
        free(have);
        return fail(d, err, errlen, "%s", dbmsg(d));
    }
    for (size_t i = 0; i < d->ncols; i++) {
        if (have[i])
            continue;
        b.len = 0;
        if (sb_printf(&b, "ALTER TABLE %s ADD COLUMN %s %s", d->qtable, d->qcols[i],
                      sq_type_of(run->cols[i].type)) < 0 || exec_sql(d, b.p) < 0) {
            free(have);
            zx_dc_buf_free(&b);
            return fail(d, err, errlen, "cannot add column %s: %s", d->qcols[i], dbmsg(d));
        }
    }
    free(have);
    zx_dc_buf_free(&b);
    if (run->mode != ZX_MODE_UPSERT && run->mode != ZX_MODE_MIRROR)
        return 0;
    int ok = cs.npk == d->nkeys && cs.pk_match == d->nkeys;
    if (!ok)
        ok = unique_index_on_keys(d, run);
    if (ok < 0)
        return fail(d, err, errlen, "%s", dbmsg(d));
    if (!ok) {
        zx_dc_buf kl = { 0 };
        for (size_t k = 0; k < d->nkeys; k++)
            sb_printf(&kl, "%s%s", k ? ", " : "", d->qcols[d->key[k]]);
        fail(d, err, errlen, "%s needs a primary key or unique index on exactly the key columns "
             "(%s) for ON CONFLICT, and the table has none: create one, e.g. CREATE UNIQUE "
             "INDEX ON %s (%s)", run->mode == ZX_MODE_UPSERT ? "upsert" : "mirror",
             kl.p ? kl.p : "", d->qtable, kl.p ? kl.p : "");
        zx_dc_buf_free(&kl);
        return -1;
    }
    return 0;
}

static int prepare(sqd *d, char *err, size_t errlen)
{
    zx_dc_buf b = { 0 };
    int upsert = d->mode == ZX_MODE_UPSERT || d->mode == ZX_MODE_MIRROR;
    int bad = sb_printf(&b, "INSERT INTO %s (", d->qtable) < 0;
    for (size_t i = 0; i < d->ncols && !bad; i++)
        bad = sb_printf(&b, "%s%s", i ? ", " : "", d->qcols[i]) < 0;
    for (size_t i = 0; i < d->ncols && !bad; i++)
        bad = sb_printf(&b, "%s?%zu", i ? ", " : ") VALUES (", i + 1) < 0;
    if (!bad)
        bad = sb_printf(&b, ")") < 0;
    if (upsert) {
        for (size_t k = 0; k < d->nkeys && !bad; k++)
            bad = sb_printf(&b, "%s%s", k ? ", " : " ON CONFLICT (", d->qcols[d->key[k]]) < 0;
        int nset = 0;
        for (size_t i = 0; i < d->ncols && !bad; i++) {
            int iskey = 0;
            for (size_t k = 0; k < d->nkeys; k++)
                iskey |= d->key[k] == i;
            if (!iskey)
                bad = sb_printf(&b, "%s%s = excluded.%s", nset++ ? ", " : ") DO UPDATE SET ",
                                d->qcols[i], d->qcols[i]) < 0;
        }
        if (!nset && !bad)
            bad = sb_printf(&b, ") DO NOTHING") < 0;
    }
    if (bad) {
        zx_dc_buf_free(&b);
        return fail(d, err, errlen, "out of memory");
    }
    int rc = sqlite3_prepare_v3(d->db, b.p, -1, SQLITE_PREPARE_PERSISTENT, &d->ins, NULL);
    zx_dc_buf_free(&b);
    if (rc != SQLITE_OK)
        return fail(d, err, errlen, "%s", dbmsg(d));
    if (!d->nkeys)
        return 0;
    bad = sb_printf(&b, "DELETE FROM %s WHERE ", d->qtable) < 0;
    for (size_t k = 0; k < d->nkeys && !bad; k++)
        bad = sb_printf(&b, "%s%s = ?%zu", k ? " AND " : "", d->qcols[d->key[k]], k + 1) < 0;
    if (bad) {
        zx_dc_buf_free(&b);
        return fail(d, err, errlen, "out of memory");
    }
    rc = sqlite3_prepare_v3(d->db, b.p, -1, SQLITE_PREPARE_PERSISTENT, &d->del, NULL);
    zx_dc_buf_free(&b);
    if (rc != SQLITE_OK)
        return fail(d, err, errlen, "%s", dbmsg(d));
    return 0;
}

static int sq_begin(void *state, const zx_dest_run *run, zx_dest_stats *stats, char *err,
                    size_t errlen)
{
    sqd *d = state;
    reset_run(d);
    d->mode = run->mode;
    if (check_run(d, run, err, errlen) < 0)
        return -1;
    if (!sqlite3_get_autocommit(d->db))
        return fail(d, err, errlen, "a transaction is already open");
    if (exec_sql(d, "BEGIN IMMEDIATE") < 0)
        return fail(d, err, errlen, "cannot start the run's transaction: %s", dbmsg(d));
    if (make_table(d, run, err, errlen) < 0)
        return -1;
    if (run->mode == ZX_MODE_REPLACE) {
        zx_dc_buf b = { 0 };
        int bad = sb_printf(&b, "DELETE FROM %s", d->qtable) < 0 || exec_sql(d, b.p) < 0;
        zx_dc_buf_free(&b);
        if (bad)
            return fail(d, err, errlen, "cannot empty the table: %s", dbmsg(d));
    }
    if (prepare(d, err, errlen) < 0)
        return -1;
    d->st = stats;
    return 0;
}

/* ---- rows ---------------------------------------------------------- */

/* Bind value v of column i (target t) as parameter p.  Returns 1 bound, 0
 * bound NULL for a misfit, -1 out of memory / bind error. */
static int bind_one(sqd *d, sqlite3_stmt *st, int p, const zx_dc_target *t, const zx_value *v,
                    int *isnull)
{
    zx_dc_out o;
    int r = zx_dc_convert(t, v, &d->scratch, &o);
    if (r < 0)
        return -1;
    *isnull = o.null;
    int rc;
    if (o.null)
        rc = sqlite3_bind_null(st, p);
    else {
        switch (t->type) {
        case ZX_DT_INT64:
        case ZX_DT_BOOL: rc = sqlite3_bind_int64(st, p, o.i); break;
        case ZX_DT_DOUBLE: rc = sqlite3_bind_double(st, p, o.d); break;
        case ZX_DT_TIMESTAMP: {
            char ts[ZX_TS_BUFSZ];
            size_t n = zx_ts_format(o.i, ts);
            rc = sqlite3_bind_text(st, p, ts, (int)n, SQLITE_TRANSIENT);
            break;
        }
        case ZX_DT_BYTES:
            rc = o.len ? sqlite3_bind_blob64(st, p, o.s, o.len, SQLITE_TRANSIENT)
                       : sqlite3_bind_zeroblob(st, p, 0);
            break;
        default:
            rc = sqlite3_bind_text64(st, p, o.s ? o.s : "", o.len, SQLITE_TRANSIENT,
                                     SQLITE_UTF8);
            break;
        }
    }
    if (rc != SQLITE_OK)
        return -1;
    return r;
}

static int step(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int sq_write(void *state, const zx_rowset *rs, char *err, size_t errlen)
{
    sqd *d = state;
    if (!d->st)
        return fail(d, err, errlen, "write outside a run (before begin or after commit)");
    if (rs->ncols != d->ncols)
        return fail(d, err, errlen, "a batch of %u columns in a run of %zu", rs->ncols, d->ncols);
    int upsert = d->mode == ZX_MODE_UPSERT || d->mode == ZX_MODE_MIRROR;
    for (uint32_t r = 0; r < rs->nrows; r++) {
        zx_rowset_row(rs, r, d->vals);
        int knull = 0, kmisfit = 0;
        uint64_t misfits = 0;
        for (size_t i = 0; i < d->ncols; i++) {
            int isnull;
            int b = bind_one(d, d->ins, (int)i + 1, &d->t[i], &d->vals[i], &isnull);
            if (b < 0)
                return fail(d, err, errlen, "cannot bind column %s: %s", d->qcols[i], dbmsg(d));
            misfits += b == 0;
            for (size_t k = 0; upsert && isnull && k < d->nkeys; k++)
                if (d->key[k] == i) {
                    knull = 1;
                    kmisfit |= b == 0;
                }
        }
        d->st->nulled += misfits + (uint64_t)(knull && !kmisfit);
        if (knull)
            continue;     /* no key: cannot be upserted */
        if (step(d->ins) < 0)
            return fail(d, err, errlen, "%s", dbmsg(d));
        d->st->rows_written++;
    }
    return 0;
}

static int sq_delete_keys(void *state, const zx_rowset *keys, char *err, size_t errlen)
{
    sqd *d = state;
    if (!d->st)
        return fail(d, err, errlen, "delete_keys outside a run (before begin or after commit)");
    if (!d->del)
        return fail(d, err, errlen, "delete_keys needs the run's key columns");
    if (keys->ncols != d->nkeys)
        return fail(d, err, errlen, "a key batch of %u columns for %zu key columns", keys->ncols,
                    d->nkeys);
    for (uint32_t r = 0; r < keys->nrows; r++) {
        zx_rowset_row(keys, r, d->vals);
        int knull = 0, kmisfit = 0;
        for (size_t k = 0; k < d->nkeys; k++) {
            int isnull;
            int b = bind_one(d, d->del, (int)k + 1, &d->t[d->key[k]], &d->vals[k], &isnull);
            if (b < 0)
                return fail(d, err, errlen, "cannot bind key %s: %s", d->qcols[d->key[k]],
                            dbmsg(d));
            d->st->nulled += b == 0;
            kmisfit |= b == 0;
            knull |= isnull;
        }
        if (knull) {
            d->st->nulled += !kmisfit;     /* a NULL key counts once, as in write */
            continue;                      /* matches no row */
        }
        if (step(d->del) < 0)
            return fail(d, err, errlen, "%s", dbmsg(d));
        d->st->rows_deleted += (uint64_t)sqlite3_changes(d->db);
    }
    return 0;
}

static int sq_commit(void *state, char *err, size_t errlen)
{
    sqd *d = state;
    if (!d->st)
        return fail(d, err, errlen, "commit outside a run");
    sqlite3_finalize(d->ins);
    sqlite3_finalize(d->del);
    d->ins = d->del = NULL;
    if (exec_sql(d, "COMMIT") < 0) {
        fail(d, err, errlen, "commit failed: %s", dbmsg(d));
        if (!sqlite3_get_autocommit(d->db))
            exec_sql(d, "ROLLBACK");
        return -1;
    }
    d->st = NULL;
    return 0;
}

static void sq_abort(void *state)
{
    sqd *d = state;
    if (!d)
        return;
    sqlite3_finalize(d->ins);
    sqlite3_finalize(d->del);
    d->ins = d->del = NULL;
    d->st = NULL;
    if (d->db && !sqlite3_get_autocommit(d->db))
        exec_sql(d, "ROLLBACK");
}

const zx_dest zx_dest_sqlite = {
    .name = "sqlite",
    .caps = ZX_DEST_TXN | ZX_DEST_ATOMIC_REPLACE | ZX_DEST_DELETES | ZX_DEST_UPSERT,
    .open = sq_open,
    .begin = sq_begin,
    .write = sq_write,
    .delete_keys = sq_delete_keys,
    .commit = sq_commit,
    .abort = sq_abort,
    .close = sq_close,
};
