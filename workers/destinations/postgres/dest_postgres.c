/*
 * dest_postgres.c — a reverse sync's PostgreSQL table destination (dest.h),
 * with libpq.
 *
 * One run is one transaction: BEGIN, then the table is made or given the
 * columns it lacks (transactional DDL: an aborted run leaves no table
 * behind), then the rows, then COMMIT.  Readers see the table as it was
 * until COMMIT.
 *
 *   replace  DELETE FROM the table, then COPY the rows in.  Not TRUNCATE:
 *            TRUNCATE takes an ACCESS EXCLUSIVE lock that blocks every
 *            reader (even a plain SELECT) until COMMIT, where DELETE lets
 *            them read the old rows all along; measured on the test
 *            machine, DELETE of 1,000,000 rows takes about 0.7 s (and
 *            leaves dead rows for autovacuum).  A staging table renamed
 *            into place would lose the table's grants, and views would
 *            keep pointing at the old one.
 *   append   COPY the rows in.
 *   upsert,  each batch is COPYed into a temporary table (pg_temp.zx_stage,
 *   mirror   dropped at the end of the transaction), then
 *            INSERT ... SELECT ... ON CONFLICT (keys) DO UPDATE SET every
 *            other column = EXCLUDED.column.  A table that was empty at
 *            begin takes the rows straight from COPY instead, as long as no
 *            key comes twice in the run (the run's key hashes are kept, up
 *            to 4,000,000 keys, 64 MB at most): ON CONFLICT's speculative
 *            insertion costs about three times a plain insert.  Measured
 *            on the 2-core test machine, 1,000,000 rows in batches of
 *            10,000 (test_dest_tables, ZX_DEST_BENCH=1): 1.7-2.0 s straight
 *            against 4.1-9.7 s through the staging table.  A row another
 *            session adds with the same key during the run fails it (a
 *            unique violation; the next run takes the staging path).  A
 *            key that comes twice in one batch keeps its last row (ON
 *            CONFLICT cannot touch a row twice in one statement).
 *            delete_keys COPYs the keys into pg_temp.zx_keys and DELETEs
 *            with a join on it.
 *
 * The COPY into the table itself (replace, append, the direct path) is
 * held open across batches (dest_pg_write.c): the server stores a batch
 * while the run reads and encodes the next, where a COPY per batch left
 * one side waiting on the other (the first upsert of 1,000,000 rows: 2.6
 * s -> 1.9 s).  It ends before any other statement, at commit, and once
 * open a quarter of the deadline (one statement stays within
 * statement_timeout); a row refused in it fails the run there.  A table
 * the run makes for an upsert or mirror gets its primary key after the
 * rows (dropped at once, built before the first merge or delete needs it,
 * or at commit: 1.9 s -> 1.7 s), as pg_restore loads.
 *
 * upsert and mirror need a primary key or unique index on exactly the key
 * columns (ON CONFLICT finds the conflicting row through it); begin says
 * which to create when there is none.  A row whose key is NULL (or a key
 * value that does not fit, see common/dcell.h) cannot be upserted: it is left
 * out and counted once in stats.nulled; a key to delete that does not fit
 * matches no row and counts there too.  Columns a table lacks are added
 * with ALTER TABLE, whose lock keeps readers waiting until COMMIT (only
 * on the run that adds them).
 *
 * Values: every cell goes through zx_dc_convert for the type the table's
 * column really has (from the catalog: a user-made table may have integer
 * where zx would make bigint), so no value the column refuses is sent; a
 * misfit becomes NULL, counts in stats.nulled and is noted
 * (zx_dest_misfit), which fails the run (dest.h).  Columns of a type zx
 * does not know (uuid, an enum, a domain) take the value's text; there the
 * server decides, and a value it refuses fails the run with its message.
 *
 * Deadlines: connect_timeout, statement_timeout and lock_timeout are
 * zx_dest_args.deadline_ms (30 s when 0), TCP keepalives and
 * tcp_user_timeout notice a dead server within it.  A statement of a large
 * batch must finish within it too.
 *
 * The batches (write, delete_keys) are in dest_pg_write.c; the state both
 * parts share is in dest_pg_state.h.
 *
 * It must never: print the dsn (only dsn_shown), write to a read_only
 * connection, send a value unchecked, or leave a COPY half-open.
 */
#include "workers/destinations/postgres/dest_pg_state.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "common/dcell.h"
#include "common/pgconn.h"
#include "common/util.h"
#include "workers/destinations/postgres/dest_pg_int.h"
#include "workers/destinations/dest_table.h"

/* ---- messages ------------------------------------------------------ */

/* Copy the first line of s into d->msg (libpq's later lines only
 * explain it): white space runs become one space, "ERROR:  " prefixes
 * go. */
void zx_pgd_set_msg(pgd *d, const char *s)
{
    size_t o = 0;
    int sp = 0;
    if (!s || !*s)
        s = "unknown error";
    for (const char *p = s; *p && *p != '\n' && o + 1 < sizeof(d->msg); p++) {
        if (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') {
            sp = o > 0;
            continue;
        }
        if (sp && o + 2 < sizeof(d->msg))
            d->msg[o++] = ' ';
        sp = 0;
        d->msg[o++] = *p;
    }
    d->msg[o] = '\0';
    static const char *const pre[] = { "ERROR: ", "FATAL: " };
    for (size_t i = 0; i < 2; i++) {
        size_t n = strlen(pre[i]);
        if (strncmp(d->msg, pre[i], n) == 0)
            memmove(d->msg, d->msg + n, strlen(d->msg + n) + 1);
    }
}

void zx_pgd_set_msg_res(pgd *d, const PGresult *r)
{
    const char *prim = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    const char *st = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    snprintf(d->sqlstate, sizeof(d->sqlstate), "%s", st ? st : "");
    if (!prim) {
        zx_pgd_set_msg(d, PQerrorMessage(d->c));
        return;
    }
    const char *det = PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL);
    char m[1024];
    if (det)
        snprintf(m, sizeof(m), "%s (%s)", prim, det);
    else
        snprintf(m, sizeof(m), "%s", prim);
    zx_pgd_set_msg(d, m);
}

/* ---- strings ------------------------------------------------------- */

static char *take(zx_buf *b)
{
    char *s = b->p;
    b->p = NULL;
    b->len = b->cap = 0;
    return s;
}

/* ---- talking to the server ----------------------------------------- */

static void no_notices(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* Run sql (params text, may be NULL); the result when it succeeded (the
 * caller clears it), else NULL with d->msg set. */
PGresult *zx_pgd_q(pgd *d, const char *sql, int n, const char *const *params)
{
    if (zx_pgd_held_end(d) < 0)
        return NULL;
    PGresult *r = n ? PQexecParams(d->c, sql, n, NULL, params, NULL, NULL, 0)
                    : PQexec(d->c, sql);
    ExecStatusType s = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK)
        return r;
    zx_pgd_set_msg_res(d, r);
    PQclear(r);
    return NULL;
}

int zx_pgd_sql_run(pgd *d, const char *sql)
{
    PGresult *r = zx_pgd_q(d, sql, 0, NULL);
    PQclear(r);
    return r ? 0 : -1;
}

/* ---- open / close -------------------------------------------------- */

/* Forget the run: its columns, keys, statements and key set. */
static void reset_run(pgd *d)
{
    free(d->cols);
    if (d->qcols)
        for (size_t i = 0; i < d->ncols; i++)
            free(d->qcols[i]);
    free(d->qcols);
    free(d->key);
    d->cols = NULL;
    d->qcols = NULL;
    d->key = NULL;
    d->ncols = d->nkeys = 0;
    free(d->sql_copy);
    free(d->sql_copy_stage);
    free(d->sql_merge);
    free(d->sql_copy_keys);
    free(d->sql_delete);
    d->sql_copy = d->sql_copy_stage = d->sql_merge = d->sql_copy_keys = d->sql_delete = NULL;
    zx_pg_hset_free(&d->seen);
    d->direct = d->stage_made = d->stage_used = d->kstage_made = d->kstage_used = 0;
    d->held = d->key_later = d->unsure = d->building = 0;
    d->st = NULL;
}

static void pg_close(void *state)
{
    pgd *d = state;
    if (!d)
        return;
    if (d->c)
        PQfinish(d->c);
    free(d->cname);
    free(d->dsn_shown);
    free(d->schema);
    free(d->table);
    free(d->qtable);
    free(d->label);
    reset_run(d);
    zx_buf_free(&d->data);
    zx_buf_free(&d->keys);
    zx_buf_free(&d->scratch);
    free(d->roff);
    free(d->rend);
    free(d->koff);
    free(d->klen);
    free(d->khash);
    free(d->skip);
    free(d->foff);
    free(d->idx);
    free(d->vals);
    free(d);
}

/* Split "schema.table" / "table" into d. 0 or -1. */
static int split_table(pgd *d, const char *t, char *err, size_t errlen)
{
    if (zx_dt_split_name(t, "public", &d->schema, &d->table) < 0 ||
        !(d->label = zx_dt_label("postgres", d->cname, d->schema, d->table)))
        return zx_seterr(err, errlen, "postgres %s: out of memory", d->cname);
    zx_buf b = { 0 };
    if (!*d->schema || !*d->table || strlen(d->schema) > MAX_NAME ||
        strlen(d->table) > MAX_NAME || strchr(d->table, '.'))
        return zx_dt_fail(d->label, err, errlen, "not a table name: write \"table\" or "
                          "\"schema.table\", each name 1 to %d bytes", MAX_NAME);
    char *qs = zx_dt_quote_ident(d->schema), *qt = zx_dt_quote_ident(d->table);
    int ok = qs && qt && zx_buf_printf(&b, "%s.%s", qs, qt) == 0;
    free(qs);
    free(qt);
    if (!ok)
        return zx_seterr(err, errlen, "postgres %s: out of memory", d->cname);
    d->qtable = take(&b);
    return 0;
}

static int pg_open(const zx_dest_args *a, void **state, char *err, size_t errlen)
{
    *state = NULL;
    if (zx_dt_open_check("postgres", a, 1, err, errlen) < 0)
        return -1;
    const zx_conf_connection *cn = a->conn;
    pgd *d = calloc(1, sizeof(*d));
    if (!d)
        return zx_seterr(err, errlen, "postgres %s: out of memory", cn->name);
    d->cname = strdup(cn->name);
    d->dsn_shown = strdup(cn->dsn_shown ? cn->dsn_shown : "(dsn hidden)");
    if (!d->cname || !d->dsn_shown) {
        pg_close(d);
        return zx_seterr(err, errlen, "postgres %s: out of memory", cn->name);
    }
    if (split_table(d, a->table, err, errlen) < 0) {
        pg_close(d);
        return -1;
    }
    int64_t ms = zx_dt_deadline_ms(a);
    if (ms > INT32_MAX)
        ms = INT32_MAX;
    if (ms < 1000)
        ms = 1000;
    d->deadline_ms = ms;
    int64_t s = (ms + 999) / 1000;
    char intv[24], ut[24], app[64], m[sizeof(d->msg)];
    snprintf(intv, sizeof(intv), "%" PRId64, s / 9 > 1 ? s / 9 : 1);
    snprintf(ut, sizeof(ut), "%" PRId64, ms);
    snprintf(app, sizeof(app), "zx-sync-%s", a->sync ? a->sync : "");
    const char *const more[] = { "client_encoding", "UTF8", "keepalives", "1",
                                 "keepalives_interval", intv, "keepalives_count", "3",
                                 "tcp_user_timeout", ut, NULL };
    zx_pg_connopts o = { .dsn = cn->dsn, .shown = d->dsn_shown, .app = app,
                         .connect_timeout_s = s < 2 ? 2 : (int)s,
                         .keepalives_idle_s = s / 3 > 1 ? (int)(s / 3) : 1, .more = more };
    if (!(d->c = zx_pg_connect(&o, m, sizeof(m)))) {
        zx_pgd_set_msg(d, m);
        zx_dt_fail(d->label, err, errlen, "%s", d->msg);
        pg_close(d);
        return -1;
    }
    PQsetNoticeProcessor(d->c, no_notices, NULL);
    if (PQserverVersion(d->c) < 110000) {
        zx_dt_fail(d->label, err, errlen, "the server is PostgreSQL %d; zx needs 11 or later",
                   PQserverVersion(d->c) / 10000);
        pg_close(d);
        return -1;
    }
    char sql[256];
    snprintf(sql, sizeof(sql), "SET statement_timeout = %" PRId64 "; SET lock_timeout = %" PRId64
             "; SET client_min_messages = warning; SET temp_buffers = '64MB'", ms, ms);
    if (zx_pgd_sql_run(d, sql) < 0) {
        zx_dt_fail(d->label, err, errlen, "%s", d->msg);
        pg_close(d);
        return -1;
    }
    *state = d;
    return 0;
}

/* ---- begin --------------------------------------------------------- */

static const char *pg_type_of(const zx_dcol *c, char *buf, size_t n)
{
    switch (c->type) {
    case ZX_DT_INT64: return "bigint";
    case ZX_DT_DOUBLE: return "double precision";
    case ZX_DT_BOOL: return "boolean";
    case ZX_DT_TIMESTAMP: return "timestamptz";
    case ZX_DT_DATE: return "date";
    case ZX_DT_DECIMAL:
        if (c->precision < 1 || c->precision > 1000 || c->scale < 0 || c->scale > c->precision)
            return "numeric";
        snprintf(buf, n, "numeric(%d,%d)", c->precision, c->scale);
        return buf;
    case ZX_DT_JSON: return "jsonb";
    case ZX_DT_BYTES: return "bytea";
    case ZX_DT_TEXT:
    default: return "text";
    }
}

/* The table's oid as text ("" when it does not exist).  0, or -1. */
static int find_table(pgd *d, char *oid, size_t oidlen, char *err, size_t errlen)
{
    const char *pv[2] = { d->schema, d->table };
    PGresult *r = zx_pgd_q(d, "SELECT c.oid, c.relkind FROM pg_catalog.pg_class c JOIN "
                       "pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                       "WHERE n.nspname = $1 AND c.relname = $2", 2, pv);
    if (!r)
        return zx_dt_fail(d->label, err, errlen, "%s", d->msg);
    oid[0] = '\0';
    if (PQntuples(r) == 1) {
        char k = PQgetvalue(r, 0, 1)[0];
        if (k != 'r' && k != 'p') {
            PQclear(r);
            return zx_dt_fail(d->label, err, errlen, "exists but is not a table (%s): zx writes "
                              "only to tables", k == 'v' ? "a view" : k == 'm' ? "a materialized "
                              "view" : k == 'f' ? "a foreign table" : "another kind of relation");
        }
        snprintf(oid, oidlen, "%s", PQgetvalue(r, 0, 0));
    }
    PQclear(r);
    return 0;
}

/* Column list of the table: name, type oid, typmod, attnum. */
static PGresult *table_columns(pgd *d, const char *oid, char *err, size_t errlen)
{
    const char *pv[1] = { oid };
    PGresult *r = zx_pgd_q(d, "SELECT attname, atttypid, atttypmod, attnum "
                              "FROM pg_catalog.pg_attribute "
                              "WHERE attrelid = $1::oid AND attnum > 0 AND NOT attisdropped",
                           1, pv);
    if (!r)
        zx_dt_fail(d->label, err, errlen, "%s", d->msg);
    return r;
}

static int col_row(const PGresult *r, const char *name)
{
    for (int i = 0; i < PQntuples(r); i++)
        if (strcmp(PQgetvalue(r, i, 0), name) == 0)
            return i;
    return -1;
}

/* A unique index (or primary key) on exactly the key columns?  1, 0, -1. */
static int has_key_index(pgd *d, const zx_dest_run *run, const char *oid, const PGresult *cols,
                         char *err, size_t errlen)
{
    const char *pv[1] = { oid };
    PGresult *r = zx_pgd_q(d, "SELECT indnkeyatts, indkey::text FROM pg_catalog.pg_index WHERE "
                       "indrelid = $1::oid AND indisunique AND indisvalid AND indpred IS NULL "
                       "AND indexprs IS NULL", 1, pv);
    if (!r)
        return zx_dt_fail(d->label, err, errlen, "%s", d->msg);
    int found = 0;
    for (int i = 0; i < PQntuples(r) && !found; i++) {
        long nk = strtol(PQgetvalue(r, i, 0), NULL, 10);
        if (nk != (long)run->nkey_cols)
            continue;
        /* indkey: attnums separated by spaces; the first nk are the keys */
        const char *p = PQgetvalue(r, i, 1);
        size_t matched = 0;
        for (long k = 0; k < nk; k++) {
            char *end;
            long att = strtol(p, &end, 10);
            if (end == p)
                break;
            p = end;
            const char *aname = NULL;
            for (int c = 0; c < PQntuples(cols); c++)
                if (strtol(PQgetvalue(cols, c, 3), NULL, 10) == att)
                    aname = PQgetvalue(cols, c, 0);
            for (size_t j = 0; aname && j < run->nkey_cols; j++)
                if (strcmp(run->key_cols[j], aname) == 0) {
                    matched++;
                    break;
                }
        }
        found = matched == run->nkey_cols;
    }
    PQclear(r);
    return found;
}

/* The statements of the run. 0 or -1 (memory). */
static int build_sql(pgd *d)
{
    zx_buf b = { 0 }, cl = { 0 }, kl = { 0 };
    int rc = -1;
    if (zx_dt_sql_list(&cl, d->qcols, NULL, d->ncols) < 0 ||
        zx_dt_sql_list(&kl, d->qcols, d->key, d->nkeys) < 0)
        goto out;
    const char *fmt = d->binary ? " (FORMAT binary)" : "";
    if (zx_buf_printf(&b, "COPY %s (%s) FROM STDIN%s", d->qtable, cl.p, fmt) < 0)
        goto out;
    d->sql_copy = take(&b);
    if (d->nkeys == 0) {
        rc = 0;
        goto out;
    }
    if (zx_buf_printf(&b, "COPY pg_temp.zx_stage (%s) FROM STDIN%s", cl.p, fmt) < 0)
        goto out;
    d->sql_copy_stage = take(&b);
    if (zx_buf_printf(&b, "INSERT INTO %s AS t (%s) SELECT %s FROM pg_temp.zx_stage "
                      "ON CONFLICT (%s) ", d->qtable, cl.p, cl.p, kl.p) < 0 ||
        zx_dt_sql_upsert_set(&b, d->qcols, d->ncols, d->key, d->nkeys) < 0)
        goto out;
    d->sql_merge = take(&b);
    if (zx_buf_printf(&b, "COPY pg_temp.zx_keys (%s) FROM STDIN%s", kl.p,
                      d->kbinary ? " (FORMAT binary)" : "") < 0)
        goto out;
    d->sql_copy_keys = take(&b);
    if (zx_buf_printf(&b, "DELETE FROM %s AS t USING pg_temp.zx_keys AS k WHERE ",
                      d->qtable) < 0)
        goto out;
    for (size_t i = 0; i < d->nkeys; i++)
        if (zx_buf_printf(&b, "%st.%s = k.%s", i ? " AND " : "", d->qcols[d->key[i]],
                          d->qcols[d->key[i]]) < 0)
            goto out;
    d->sql_delete = take(&b);
    rc = 0;
out:
    zx_buf_free(&b);
    zx_buf_free(&cl);
    zx_buf_free(&kl);
    return rc;
}

/* Check the run's shape and find its key columns. 0 or -1. */
static int check_run(pgd *d, const zx_dest_run *run, char *err, size_t errlen)
{
    d->key = calloc(run->nkey_cols ? run->nkey_cols : 1, sizeof(*d->key));
    if (!d->key)
        return zx_dt_fail(d->label, err, errlen, "out of memory");
    if (zx_dt_check_run(d->label, run, d->key, err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < run->ncols; i++)
        if (strlen(run->cols[i].name) > MAX_NAME)
            return zx_dt_fail(d->label, err, errlen, "column name \"%.80s\" must be 1 to %d "
                              "bytes in Postgres: rename it in the sync's query",
                              run->cols[i].name, MAX_NAME);
    d->ncols = run->ncols;
    d->nkeys = run->nkey_cols;
    d->cols = calloc(d->ncols, sizeof(*d->cols));
    d->qcols = calloc(d->ncols, sizeof(*d->qcols));
    free(d->foff);
    free(d->idx);
    free(d->vals);
    d->foff = calloc(2 * d->ncols, sizeof(*d->foff));
    d->idx = calloc(d->ncols, sizeof(*d->idx));
    d->vals = calloc(d->ncols, sizeof(*d->vals));
    if (!d->cols || !d->qcols || !d->foff || !d->idx || !d->vals)
        return zx_dt_fail(d->label, err, errlen, "out of memory");
    for (size_t i = 0; i < d->ncols; i++)
        d->idx[i] = i;
    for (size_t i = 0; i < d->ncols; i++)
        if (!(d->qcols[i] = zx_dt_quote_ident(run->cols[i].name)))
            return zx_dt_fail(d->label, err, errlen, "out of memory");
    return 0;
}

/* A table this run made, so empty and seen by no one else until COMMIT:
 * its primary key is dropped now (its key columns stay NOT NULL) and
 * built once the rows are in (zx_pgd_key_build), as pg_restore loads: the
 * index kept up to date row by row cost more than building it once.
 * 0, or -1 (err). */
static int leave_key_out(pgd *d, const char *oid, char *err, size_t errlen)
{
    if (!zx_dt_keyed(d->mode) || !d->nkeys)
        return 0;
    const char *pv[1] = { oid };
    PGresult *r = zx_pgd_q(d, "SELECT conname FROM pg_catalog.pg_constraint WHERE conrelid = "
                              "$1::oid AND contype = 'p'", 1, pv);
    if (!r)
        return zx_dt_fail(d->label, err, errlen, "%s", d->msg);
    int rc = 0;
    if (PQntuples(r) == 1) {
        zx_buf b = { 0 };
        char *q = PQescapeIdentifier(d->c, PQgetvalue(r, 0, 0), strlen(PQgetvalue(r, 0, 0)));
        if (!q || zx_buf_printf(&b, "ALTER TABLE %s DROP CONSTRAINT %s", d->qtable, q) < 0)
            rc = zx_dt_fail(d->label, err, errlen, "out of memory");
        else if (zx_pgd_sql_run(d, b.p) < 0)
            rc = zx_dt_fail(d->label, err, errlen, "%s", d->msg);
        else
            d->key_later = 1;
        PQfreemem(q);
        zx_buf_free(&b);
    }
    PQclear(r);
    return rc;
}

/* A key that came twice into a table the run made: each key's last row
 * (the highest ctid: only appended to in this transaction) stays. */
static int keep_last_rows(pgd *d)
{
    zx_buf b = { 0 };
    int bad = zx_buf_printf(&b, "DELETE FROM %s WHERE ctid IN (SELECT ctid FROM (SELECT ctid, "
                                "row_number() OVER (PARTITION BY ", d->qtable) < 0 ||
              zx_dt_sql_list(&b, d->qcols, d->key, d->nkeys) < 0 ||
              zx_buf_printf(&b, " ORDER BY ctid DESC) AS zx_n FROM %s) zx_d WHERE zx_n > 1)",
                            d->qtable) < 0;
    int rc = bad ? -1 : zx_pgd_sql_run(d, b.p);
    if (bad)
        zx_pgd_set_msg(d, "out of memory");
    zx_buf_free(&b);
    return rc;
}

/* "ALTER TABLE ... ADD PRIMARY KEY (...)" into *b.  0 or -1 (d->msg). */
static int key_sql(pgd *d, zx_buf *b)
{
    if (zx_buf_printf(b, "ALTER TABLE %s ADD PRIMARY KEY (", d->qtable) < 0 ||
        zx_dt_sql_list(b, d->qcols, d->key, d->nkeys) < 0 || zx_buf_printf(b, ")") < 0) {
        zx_pgd_set_msg(d, "out of memory");
        return -1;
    }
    return 0;
}

int zx_pgd_key_start(pgd *d)
{
    if (!d->key_later || d->unsure)
        return 0;
    if (zx_pgd_held_end(d) < 0)
        return -1;
    zx_buf b = { 0 };
    if (key_sql(d, &b) < 0) {
        zx_buf_free(&b);
        return -1;
    }
    d->key_later = 0;
    int sent = PQsendQuery(d->c, b.p);
    zx_buf_free(&b);
    if (!sent) {
        zx_pgd_set_msg(d, PQerrorMessage(d->c));
        return -1;
    }
    d->building = 1;
    return 0;
}

int zx_pgd_key_build(pgd *d)
{
    if (!d->key_later)
        return 0;
    d->key_later = 0;
    zx_buf b = { 0 };
    int rc = 0;
    if (key_sql(d, &b) < 0) {
        zx_buf_free(&b);
        return -1;
    }
    if (!d->unsure) {
        rc = zx_pgd_sql_run(d, b.p);
    } else {
        /* the build refuses a key that came twice: keep its last row */
        rc = zx_pgd_sql_run(d, "SAVEPOINT zx_key");
        if (rc == 0 && zx_pgd_sql_run(d, b.p) < 0) {
            rc = -1;
            if (strcmp(d->sqlstate, "23505") == 0 &&
                zx_pgd_sql_run(d, "ROLLBACK TO SAVEPOINT zx_key") == 0 && keep_last_rows(d) == 0)
                rc = zx_pgd_sql_run(d, b.p);
        }
        if (rc == 0)
            rc = zx_pgd_sql_run(d, "RELEASE SAVEPOINT zx_key");
        /* the keys seen are no longer known: later rows take the staging path */
        d->unsure = 0;
        d->direct = 0;
    }
    zx_buf_free(&b);
    if (rc < 0) {
        char keep[sizeof(d->msg)];
        snprintf(keep, sizeof(keep), "cannot build the table's primary key: %.900s", d->msg);
        memcpy(d->msg, keep, sizeof(keep));
    }
    return rc;
}

/* Make the table, or add the columns it lacks.  Leaves in *cols the
 * catalog's column list and in oid the table's oid.  0 or -1. */
static int make_table(pgd *d, const zx_dest_run *run, char *oid, size_t oidlen,
                      PGresult **cols, char *err, size_t errlen)
{
    zx_buf b = { 0 };
    char tb[48];
    *cols = NULL;
    if (find_table(d, oid, oidlen, err, errlen) < 0)
        return -1;
    if (!oid[0]) {
        if (zx_dt_sql_create(&b, d->qtable, run->cols, d->qcols, d->ncols, d->key, d->nkeys, 0,
                             pg_type_of) < 0) {
            zx_buf_free(&b);
            return zx_dt_fail(d->label, err, errlen, "out of memory");
        }
        int rc = zx_pgd_sql_run(d, b.p);
        zx_buf_free(&b);
        if (rc < 0)
            return zx_dt_fail(d->label, err, errlen, "cannot create the table: %s", d->msg);
        if (find_table(d, oid, oidlen, err, errlen) < 0)
            return -1;
        if (!oid[0])
            return zx_dt_fail(d->label, err, errlen, "the table was created but cannot be found");
        if (leave_key_out(d, oid, err, errlen) < 0)
            return -1;
    }
    if (!(*cols = table_columns(d, oid, err, errlen)))
        return -1;
    int missing = 0;
    for (size_t i = 0; i < d->ncols; i++) {
        if (col_row(*cols, run->cols[i].name) >= 0)
            continue;
        if ((!missing && zx_buf_printf(&b, "ALTER TABLE %s", d->qtable) < 0) ||
            zx_buf_printf(&b, "%s ADD COLUMN IF NOT EXISTS %s %s", missing ? "," : "",
                          d->qcols[i], pg_type_of(&run->cols[i], tb, sizeof(tb))) < 0) {
            zx_buf_free(&b);
            return zx_dt_fail(d->label, err, errlen, "out of memory");
        }
        missing++;
    }
    if (!missing)
        return 0;
    int rc = zx_pgd_sql_run(d, b.p);
    zx_buf_free(&b);
    if (rc < 0)
        return zx_dt_fail(d->label, err, errlen, "cannot add the columns the table lacks: %s",
                          d->msg);
    PQclear(*cols);
    if (!(*cols = table_columns(d, oid, err, errlen)))
        return -1;
    return 0;
}

static int pg_begin(void *state, const zx_dest_run *run, zx_dest_stats *stats, char *err,
                    size_t errlen)
{
    pgd *d = state;
    reset_run(d);
    d->mode = run->mode;
    if (check_run(d, run, err, errlen) < 0)
        return -1;
    if (PQtransactionStatus(d->c) != PQTRANS_IDLE)
        return zx_dt_fail(d->label, err, errlen, "the connection is not ready for a new run (%s)",
                          PQstatus(d->c) == CONNECTION_OK ? "a transaction is open" : "lost");
    if (zx_pgd_sql_run(d, "BEGIN") < 0)
        return zx_dt_fail(d->label, err, errlen, "%s", d->msg);
    char oid[32];
    PGresult *cols = NULL;
    if (make_table(d, run, oid, sizeof(oid), &cols, err, errlen) < 0) {
        PQclear(cols);
        return -1;
    }
    d->binary = d->kbinary = 1;
    for (size_t i = 0; i < d->ncols; i++) {
        int r = col_row(cols, run->cols[i].name);
        if (r < 0) {
            PQclear(cols);
            return zx_dt_fail(d->label, err, errlen, "column %s is missing after it was added",
                              d->qcols[i]);
        }
        d->cols[i] = zx_pg_col_of((uint32_t)strtoul(PQgetvalue(cols, r, 1), NULL, 10),
                                  (int32_t)strtol(PQgetvalue(cols, r, 2), NULL, 10));
        if (d->cols[i].bin == PGB_NONE)
            d->binary = 0;
    }
    for (size_t k = 0; k < d->nkeys; k++)
        if (d->cols[d->key[k]].bin == PGB_NONE)
            d->kbinary = 0;
    if (zx_dt_keyed(run->mode) && !d->key_later) {
        int has = has_key_index(d, run, oid, cols, err, errlen);
        if (!has)
            zx_dt_fail_no_key_index(d->label, run->mode, d->qcols, d->key, d->nkeys,
                                    "ALTER TABLE", d->qtable, " ADD PRIMARY KEY", err, errlen);
        if (has <= 0) {
            PQclear(cols);
            return -1;
        }
    }
    PQclear(cols);
    if (build_sql(d) < 0)
        return zx_dt_fail(d->label, err, errlen, "out of memory");
    if (run->mode == ZX_MODE_REPLACE) {
        zx_buf b = { 0 };
        if (zx_buf_printf(&b, "DELETE FROM %s", d->qtable) < 0)
            return zx_dt_fail(d->label, err, errlen, "out of memory");
        int rc = zx_pgd_sql_run(d, b.p);
        zx_buf_free(&b);
        if (rc < 0)
            return zx_dt_fail(d->label, err, errlen, "cannot empty the table: %s", d->msg);
    }
    if (zx_dt_keyed(run->mode)) {
        zx_buf b = { 0 };
        if (zx_buf_printf(&b, "SELECT 1 FROM %s LIMIT 1", d->qtable) < 0)
            return zx_dt_fail(d->label, err, errlen, "out of memory");
        PGresult *r = zx_pgd_q(d, b.p, 0, NULL);
        zx_buf_free(&b);
        if (!r)
            return zx_dt_fail(d->label, err, errlen, "%s", d->msg);
        d->direct = PQntuples(r) == 0;
        PQclear(r);
    }
    d->st = stats;
    return 0;
}

/* ---- commit / abort ------------------------------------------------ */

/* zx_dest.prepare: the key of a table this run made is built while the
 * run sorts its keys (zx_pgd_key_start). */
static int pg_prepare(void *state, char *err, size_t errlen)
{
    pgd *d = state;
    if (zx_pgd_key_start(d) < 0)
        return zx_dt_fail(d->label, err, errlen, "%s", d->msg);
    return 0;
}

static int pg_commit(void *state, char *err, size_t errlen)
{
    pgd *d = state;
    if (zx_dt_check_commit(d->label, d->st != NULL, err, errlen) < 0)
        return -1;
    /* the rows still in the open COPY, then the key built after them */
    if (zx_pgd_held_end(d) < 0 || zx_pgd_key_build(d) < 0)
        return zx_dt_fail(d->label, err, errlen, "commit failed: %s", d->msg);
    PGresult *r = PQexec(d->c, "COMMIT");
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
        zx_pgd_set_msg_res(d, r);
        PQclear(r);
        return zx_dt_fail(d->label, err, errlen, "commit failed: %s", d->msg);
    }
    int committed = strcmp(PQcmdStatus(r), "COMMIT") == 0;
    PQclear(r);
    if (!committed)
        return zx_dt_fail(d->label, err, errlen, "the server rolled the transaction back at "
                          "commit: nothing of this run was written");
    d->st = NULL;
    return 0;
}

static void pg_abort(void *state)
{
    pgd *d = state;
    if (!d)
        return;
    d->st = NULL;
    d->held = 0;    /* the loop below ends it (and a key build sent) */
    d->building = 0;
    if (!d->c || PQstatus(d->c) != CONNECTION_OK)
        return;     /* the server rolls back a transaction whose session ended */
    PGresult *r;
    for (int guard = 0; guard < 64 && (r = PQgetResult(d->c)) != NULL; guard++) {
        if (PQresultStatus(r) == PGRES_COPY_IN)
            PQputCopyEnd(d->c, "zx: run aborted");
        PQclear(r);
    }
    PGTransactionStatusType ts = PQtransactionStatus(d->c);
    if (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR)
        PQclear(PQexec(d->c, "ROLLBACK"));
}

const zx_dest zx_dest_postgres = {
    .name = "postgres",
    .caps = ZX_DEST_TXN | ZX_DEST_ATOMIC_REPLACE | ZX_DEST_DELETES | ZX_DEST_UPSERT,
    .open = pg_open,
    .begin = pg_begin,
    .write = zx_pgd_write,
    .delete_keys = zx_pgd_delete_keys,
    .prepare = pg_prepare,
    .commit = pg_commit,
    .abort = pg_abort,
    .close = pg_close,
};
