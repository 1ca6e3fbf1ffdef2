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
 * Values follow common/dcell.h for the run's column types, with two SQLite
 * limits: it has no NaN (it would store NULL), so a NaN double is a
 * misfit (NULL, counted in stats.nulled and noted: dest.h, the run then
 * fails); ±Infinity are stored as REAL
 * infinities.  Text may hold NUL bytes (stored with their length).  A row
 * whose key is NULL (or a misfit) is left out in upsert and mirror and
 * counted once in stats.nulled; so is a key to delete that does not fit.
 * Values are converted for the run's column types, not for the declared
 * types of a user-made table (SQLite applies that column's affinity).
 *
 * It must never: write to a read_only connection, write outside the run's
 * transaction, or hold the write lock after commit or abort.
 */
#include "workers/destinations/dest.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/dcell.h"
#include "common/timefmt.h"
#include "common/util.h"
#include "workers/destinations/dest_table.h"

typedef struct sqd {
    sqlite3 *db;
    char *cname, *path;
    char *table;                /* without "main." */
    char *qtable;               /* "main"."table" */
    char *label;                /* "sqlite NAME table T", T as configured */

    /* the run */
    zx_sync_mode mode;
    zx_dest_stats *st;
    size_t ncols, nkeys;
    size_t *key;                /* key column indexes */
    zx_dc_target *t;
    char **qcols;
    sqlite3_stmt *ins, *del;
    zx_buf scratch;
    zx_value *vals;
} sqd;

static const char *dbmsg(sqd *d)
{
    return d->db ? sqlite3_errmsg(d->db) : "out of memory";
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
    zx_buf_free(&d->scratch);
    free(d->cname);
    free(d->path);
    free(d->table);
    free(d->qtable);
    free(d->label);
    free(d);
}

static int sq_open(const zx_dest_args *a, void **state, char *err, size_t errlen)
{
    *state = NULL;
    if (zx_dt_open_check("sqlite", a, 0, err, errlen) < 0)
        return -1;
    const zx_conf_connection *cn = a->conn;
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
    d->label = zx_dt_label("sqlite", cn->name, NULL, a->table);
    d->table = strdup(t);
    if (!d->cname || !d->path || !d->label || !d->table) {
        sq_close(d);
        return zx_seterr(err, errlen, "sqlite %s: out of memory", cn->name);
    }
    if (!*d->table || strchr(d->table, '.')) {
        zx_dt_fail(d->label, err, errlen, "not a table name: write \"table\" or \"main.table\"");
        sq_close(d);
        return -1;
    }
    char *qt = zx_dt_quote_ident(d->table);
    zx_buf b = { 0 };
    if (!qt || zx_buf_printf(&b, "\"main\".%s", qt) < 0) {
        free(qt);
        zx_buf_free(&b);
        sq_close(d);
        return zx_seterr(err, errlen, "sqlite %s: out of memory", cn->name);
    }
    free(qt);
    d->qtable = b.p;
    int rc = sqlite3_open_v2(d->path, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                             SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        zx_dt_fail(d->label, err, errlen, "cannot open %s: %s (does its folder exist and may "
                   "zxd write there?)", d->path, dbmsg(d));
        sq_close(d);
        return -1;
    }
    int64_t ms = zx_dt_deadline_ms(a);
    sqlite3_busy_timeout(d->db, ms > INT_MAX ? INT_MAX : (int)ms);
    /* WAL: readers keep the old rows while a run writes.  Two runs opening
     * a new file at once both ask for it; SQLite answers one BUSY at once,
     * without its busy handler (each holds the lock the other waits for),
     * so that one tries again until the deadline (the mode is kept in the
     * file: the second try finds it set) */
    int64_t until = zx_mono_ms() + ms;
    for (;;) {
        sqlite3_stmt *st = NULL;
        rc = sqlite3_prepare_v2(d->db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || zx_mono_ms() >= until)
            break;
        sqlite3_sleep(20);
    }
    if (rc != SQLITE_ROW) {
        zx_dt_fail(d->label, err, errlen, "cannot use %s: %s", d->path, dbmsg(d));
        sq_close(d);
        return -1;
    }
    *state = d;
    return 0;
}

/* ---- begin --------------------------------------------------------- */

static const char *sq_type_of(const zx_dcol *c, char *buf, size_t n)
{
    (void)buf;
    (void)n;
    switch (c->type) {
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
            iskey |= zx_dt_is_key(c->d->key, c->d->nkeys, i);
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
    d->key = calloc(run->nkey_cols ? run->nkey_cols : 1, sizeof(*d->key));
    if (!d->key)
        return zx_dt_fail(d->label, err, errlen, "out of memory");
    if (zx_dt_check_run(d->label, run, d->key, err, errlen) < 0)
        return -1;
    d->ncols = run->ncols;
    d->nkeys = run->nkey_cols;
    d->qcols = calloc(d->ncols, sizeof(*d->qcols));
    d->t = calloc(d->ncols, sizeof(*d->t));
    d->vals = calloc(d->ncols, sizeof(*d->vals));
    if (!d->qcols || !d->t || !d->vals)
        return zx_dt_fail(d->label, err, errlen, "out of memory");
    for (size_t i = 0; i < d->ncols; i++) {
        if (!(d->qcols[i] = zx_dt_quote_ident(run->cols[i].name)))
            return zx_dt_fail(d->label, err, errlen, "out of memory");
        d->t[i] = zx_dc_target_of(run->cols[i].type, run->cols[i].precision,
                                  run->cols[i].scale);
        d->t[i].nan_ok = 0;         /* SQLite stores NaN as NULL */
        d->t[i].nul_ok = 1;
    }
    return 0;
}

static int make_table(sqd *d, const zx_dest_run *run, char *err, size_t errlen)
{
    int kind = table_kind(d);
    if (kind == -2)
        return zx_dt_fail(d->label, err, errlen, "is a view: zx writes only to tables");
    if (kind < 0)
        return zx_dt_fail(d->label, err, errlen, "%s", dbmsg(d));
    zx_buf b = { 0 };
    if (kind == 0) {
        if (zx_dt_sql_create(&b, d->qtable, run->cols, d->qcols, d->ncols, d->key, d->nkeys, 1,
                             sq_type_of) < 0) {
            zx_buf_free(&b);
            return zx_dt_fail(d->label, err, errlen, "out of memory");
        }
        int rc = exec_sql(d, b.p);
        zx_buf_free(&b);
        if (rc < 0)
            return zx_dt_fail(d->label, err, errlen, "cannot create the table: %s", dbmsg(d));
    }
    uint8_t *have = calloc(d->ncols, 1);
    if (!have)
        return zx_dt_fail(d->label, err, errlen, "out of memory");
    colscan cs = { d, run, have, 0, 0 };
    if (each_column(d, scan_col, &cs) < 0) {
        free(have);
        return zx_dt_fail(d->label, err, errlen, "%s", dbmsg(d));
    }
    for (size_t i = 0; i < d->ncols; i++) {
        if (have[i])
            continue;
        b.len = 0;
        if (zx_buf_printf(&b, "ALTER TABLE %s ADD COLUMN %s %s", d->qtable, d->qcols[i],
                          sq_type_of(&run->cols[i], NULL, 0)) < 0 || exec_sql(d, b.p) < 0) {
            free(have);
            zx_buf_free(&b);
            return zx_dt_fail(d->label, err, errlen, "cannot add column %s: %s", d->qcols[i],
                              dbmsg(d));
        }
    }
    free(have);
    zx_buf_free(&b);
    if (!zx_dt_keyed(run->mode))
        return 0;
    int ok = cs.npk == d->nkeys && cs.pk_match == d->nkeys;
    if (!ok)
        ok = unique_index_on_keys(d, run);
    if (ok < 0)
        return zx_dt_fail(d->label, err, errlen, "%s", dbmsg(d));
    if (!ok)
        return zx_dt_fail_no_key_index(d->label, run->mode, d->qcols, d->key, d->nkeys,
                                       "CREATE UNIQUE INDEX ON", d->qtable, "", err, errlen);
    return 0;
}

static int prepare(sqd *d, char *err, size_t errlen)
{
    zx_buf b = { 0 };
    int bad = zx_buf_printf(&b, "INSERT INTO %s (", d->qtable) < 0 ||
              zx_dt_sql_list(&b, d->qcols, NULL, d->ncols) < 0;
    for (size_t i = 0; i < d->ncols && !bad; i++)
        bad = zx_buf_printf(&b, "%s?%zu", i ? ", " : ") VALUES (", i + 1) < 0;
    if (!bad)
        bad = zx_buf_printf(&b, ")") < 0;
    if (zx_dt_keyed(d->mode) && !bad)
        bad = zx_buf_printf(&b, " ON CONFLICT (") < 0 ||
              zx_dt_sql_list(&b, d->qcols, d->key, d->nkeys) < 0 ||
              zx_buf_printf(&b, ") ") < 0 ||
              zx_dt_sql_upsert_set(&b, d->qcols, d->ncols, d->key, d->nkeys) < 0;
    if (bad) {
        zx_buf_free(&b);
        return zx_dt_fail(d->label, err, errlen, "out of memory");
    }
    int rc = sqlite3_prepare_v3(d->db, b.p, -1, SQLITE_PREPARE_PERSISTENT, &d->ins, NULL);
    zx_buf_free(&b);
    if (rc != SQLITE_OK)
        return zx_dt_fail(d->label, err, errlen, "%s", dbmsg(d));
    if (!d->nkeys)
        return 0;
    bad = zx_buf_printf(&b, "DELETE FROM %s WHERE ", d->qtable) < 0;
    for (size_t k = 0; k < d->nkeys && !bad; k++)
        bad = zx_buf_printf(&b, "%s%s = ?%zu", k ? " AND " : "", d->qcols[d->key[k]],
                            k + 1) < 0;
    if (bad) {
        zx_buf_free(&b);
        return zx_dt_fail(d->label, err, errlen, "out of memory");
    }
    rc = sqlite3_prepare_v3(d->db, b.p, -1, SQLITE_PREPARE_PERSISTENT, &d->del, NULL);
    zx_buf_free(&b);
    if (rc != SQLITE_OK)
        return zx_dt_fail(d->label, err, errlen, "%s", dbmsg(d));
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
        return zx_dt_fail(d->label, err, errlen, "a transaction is already open");
    if (exec_sql(d, "BEGIN IMMEDIATE") < 0)
        return zx_dt_fail(d->label, err, errlen, "cannot start the run's transaction: %s",
                          dbmsg(d));
    if (make_table(d, run, err, errlen) < 0)
        return -1;
    if (run->mode == ZX_MODE_REPLACE) {
        zx_buf b = { 0 };
        int bad = zx_buf_printf(&b, "DELETE FROM %s", d->qtable) < 0 || exec_sql(d, b.p) < 0;
        zx_buf_free(&b);
        if (bad)
            return zx_dt_fail(d->label, err, errlen, "cannot empty the table: %s", dbmsg(d));
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
    if (zx_dt_check_write(d->label, d->st != NULL, rs, d->ncols, err, errlen) < 0)
        return -1;
    int upsert = zx_dt_keyed(d->mode);
    for (uint32_t r = 0; r < rs->nrows; r++) {
        zx_rowset_row(rs, r, d->vals);
        zx_dt_nulls nn = { 0 };
        for (size_t i = 0; i < d->ncols; i++) {
            int isnull;
            int b = bind_one(d, d->ins, (int)i + 1, &d->t[i], &d->vals[i], &isnull);
            if (b < 0)
                return zx_dt_fail(d->label, err, errlen, "cannot bind column %s: %s", d->qcols[i],
                                  dbmsg(d));
            zx_dt_nulls_add(&nn, upsert && zx_dt_is_key(d->key, d->nkeys, i), isnull, b == 0);
            if (b == 0)
                zx_dest_misfit(d->st, rs->cols[i].name, &d->vals[i]);
        }
        d->st->nulled += zx_dt_nulls_count(&nn);
        if (nn.knull)
            continue;     /* no key: cannot be upserted */
        if (step(d->ins) < 0)
            return zx_dt_fail(d->label, err, errlen, "%s", dbmsg(d));
        d->st->rows_written++;
    }
    return 0;
}

static int sq_delete_keys(void *state, const zx_rowset *keys, char *err, size_t errlen)
{
    sqd *d = state;
    if (zx_dt_check_delete(d->label, d->st != NULL, keys, d->del ? d->nkeys : 0, err,
                           errlen) < 0)
        return -1;
    for (uint32_t r = 0; r < keys->nrows; r++) {
        zx_rowset_row(keys, r, d->vals);
        zx_dt_nulls nn = { 0 };
        for (size_t k = 0; k < d->nkeys; k++) {
            int isnull;
            int b = bind_one(d, d->del, (int)k + 1, &d->t[d->key[k]], &d->vals[k], &isnull);
            if (b < 0)
                return zx_dt_fail(d->label, err, errlen, "cannot bind key %s: %s",
                                  d->qcols[d->key[k]], dbmsg(d));
            zx_dt_nulls_add(&nn, 1, isnull, b == 0);
        }
        d->st->nulled += zx_dt_nulls_count(&nn);
        if (nn.knull)
            continue;                      /* matches no row */
        if (step(d->del) < 0)
            return zx_dt_fail(d->label, err, errlen, "%s", dbmsg(d));
        d->st->rows_deleted += (uint64_t)sqlite3_changes(d->db);
    }
    return 0;
}

static int sq_commit(void *state, char *err, size_t errlen)
{
    sqd *d = state;
    if (zx_dt_check_commit(d->label, d->st != NULL, err, errlen) < 0)
        return -1;
    sqlite3_finalize(d->ins);
    sqlite3_finalize(d->del);
    d->ins = d->del = NULL;
    if (exec_sql(d, "COMMIT") < 0) {
        zx_dt_fail(d->label, err, errlen, "commit failed: %s", dbmsg(d));
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
