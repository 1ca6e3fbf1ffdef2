/*
 * fwd_journal.c — the forward journal read and trimmed (fwd_journal.h),
 * on the SQLite workspace or the Postgres one: two small backends, the
 * same two statements each.
 *
 * It must never: delete an entry above the n it is given, or print the
 * workspace's password (messages show pg_dsn_shown).
 */
#include "workers/forward/fwd_journal.h"

#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STATEMENT_TIMEOUT_MS 60000
/* The largest entry read: the writer journals frames of its rings (a few
 * MiB); a larger one was put there by another hand, and is passed over
 * (the trim after the next entries deletes it) rather than loaded. */
#define MAX_ENTRY_BYTES (64u << 20)
#define BUSY_TIMEOUT_MS 10000

struct zx_fwdj {
    const zx_conf *conf;
    sqlite3 *db;                  /* the SQLite workspace, or */
    PGconn *pg;                   /* the Postgres one */
    char table[160];              /* pg: "schema"."_zx_forward" */
};

void zx_fwdj_entries_free(zx_fwdj_entry *e, size_t n)
{
    for (size_t i = 0; e && i < n; i++)
        free(e[i].frame);
    free(e);
}

/* Append entry (n, bytes) to *out; 0 or -1 out of memory. */
static int add_entry(zx_fwdj_entry **out, size_t *nout, size_t *cap, uint64_t n,
                     const void *p, size_t len)
{
    if (*nout == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        zx_fwdj_entry *ne = realloc(*out, nc * sizeof(*ne));
        if (!ne)
            return -1;
        *out = ne;
        *cap = nc;
    }
    unsigned char *b = malloc(len ? len : 1);
    if (!b)
        return -1;
    if (len)
        memcpy(b, p, len);
    (*out)[*nout] = (zx_fwdj_entry){n, b, len};
    (*nout)++;
    return 0;
}

/* ---- SQLite ------------------------------------------------------------ */

static int sq_open(zx_fwdj *j, char *err, size_t errlen)
{
    /* the writer makes the file when it starts: until then, nothing to read */
    if (access(j->conf->sqlite_path, F_OK) != 0 && errno == ENOENT)
        return 1;
    if (sqlite3_open_v2(j->conf->sqlite_path, &j->db, SQLITE_OPEN_READWRITE |
                        SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "forward: cannot open the workspace %s: %s",
                 j->conf->sqlite_path, j->db ? sqlite3_errmsg(j->db) : "out of memory");
        sqlite3_close(j->db);
        j->db = NULL;
        return -1;
    }
    sqlite3_busy_timeout(j->db, BUSY_TIMEOUT_MS);
    return 0;
}

static int sq_fail(zx_fwdj *j, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "forward: %s the journal _zx_forward of the workspace %s: %s", what,
             j->conf->sqlite_path, sqlite3_errmsg(j->db));
    return -1;
}

static int sq_read(zx_fwdj *j, const char *pipeline, size_t max_frames, size_t max_bytes,
                   zx_fwdj_entry **out, size_t *nout, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(j->db, "SELECT n, frame FROM _zx_forward WHERE pipeline = ?1 "
                           "AND length(frame) <= ?3 ORDER BY n LIMIT ?2", -1, &st, NULL) != SQLITE_OK) {
        /* the writer makes it when it starts */
        if (strstr(sqlite3_errmsg(j->db), "no such table"))
            return 0;
        return sq_fail(j, "cannot read", err, errlen);
    }
    sqlite3_bind_text(st, 1, pipeline, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)max_frames);
    sqlite3_bind_int64(st, 3, MAX_ENTRY_BYTES);
    size_t cap = 0, bytes = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const void *p = sqlite3_column_blob(st, 1);
        size_t len = (size_t)sqlite3_column_bytes(st, 1);
        if (add_entry(out, nout, &cap, (uint64_t)sqlite3_column_int64(st, 0), p, len) < 0) {
            sqlite3_finalize(st);
            snprintf(err, errlen, "forward: out of memory reading the journal");
            return -1;
        }
        bytes += len;
        if (bytes >= max_bytes)
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        sqlite3_finalize(st);
        return sq_fail(j, "cannot read", err, errlen);
    }
    sqlite3_finalize(st);
    return 0;
}

static int sq_delete(zx_fwdj *j, const char *pipeline, uint64_t n, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(j->db, "DELETE FROM _zx_forward WHERE pipeline = ?1 AND n <= ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return sq_fail(j, "cannot trim", err, errlen);
    sqlite3_bind_text(st, 1, pipeline, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)n);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : sq_fail(j, "cannot trim", err, errlen);
}

static int sq_pending(zx_fwdj *j, const char *pipeline, uint64_t *count, uint64_t *first,
                      char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(j->db, "SELECT count(*), coalesce(min(n), 0) FROM _zx_forward "
                           "WHERE pipeline = ?1", -1, &st, NULL) != SQLITE_OK) {
        if (strstr(sqlite3_errmsg(j->db), "no such table"))
            return 0;
        return sq_fail(j, "cannot count", err, errlen);
    }
    sqlite3_bind_text(st, 1, pipeline, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *count = (uint64_t)sqlite3_column_int64(st, 0);
        *first = (uint64_t)sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : sq_fail(j, "cannot count", err, errlen);
}

/* ---- Postgres ---------------------------------------------------------- */

static void pg_msg(char *err, size_t errlen, const char *what, const char *shown,
                   const char *why)
{
    snprintf(err, errlen, "forward: %s the workspace %s: %s", what, shown ? shown : "?",
             why ? why : "?");
    char *nl = strrchr(err, '\n');
    if (nl && !nl[1])
        *nl = '\0';
}

static int pg_open(zx_fwdj *j, char *err, size_t errlen)
{
    char opts[200];
    snprintf(opts, sizeof(opts), "-c statement_timeout=%d -c lock_timeout=%d",
             STATEMENT_TIMEOUT_MS, STATEMENT_TIMEOUT_MS);
    const char *k[] = {"dbname", "application_name", "connect_timeout", "options", NULL};
    const char *v[] = {j->conf->pg_dsn, "zxd forward", "10", opts, NULL};
    j->pg = PQconnectdbParams(k, v, 1);
    if (!j->pg || PQstatus(j->pg) != CONNECTION_OK) {
        pg_msg(err, errlen, "cannot connect to", j->conf->pg_dsn_shown,
               j->pg ? PQerrorMessage(j->pg) : "out of memory");
        PQfinish(j->pg);
        j->pg = NULL;
        return -1;
    }
    char *sch = PQescapeIdentifier(j->pg, j->conf->pg_schema ? j->conf->pg_schema : "public",
                                   strlen(j->conf->pg_schema ? j->conf->pg_schema : "public"));
    if (!sch) {
        pg_msg(err, errlen, "cannot quote the schema of", j->conf->pg_dsn_shown,
               PQerrorMessage(j->pg));
        PQfinish(j->pg);
        j->pg = NULL;
        return -1;
    }
    snprintf(j->table, sizeof(j->table), "%s.\"_zx_forward\"", sch);
    PQfreemem(sch);
    return 0;
}

static int pg_read(zx_fwdj *j, const char *pipeline, size_t max_frames, size_t max_bytes,
                   zx_fwdj_entry **out, size_t *nout, char *err, size_t errlen)
{
    char q[300], lim[24];
    snprintf(q, sizeof(q), "SELECT n, frame FROM %s WHERE pipeline = $1 AND "
             "octet_length(frame) <= $3 ORDER BY n LIMIT $2", j->table);
    char big[24];
    snprintf(lim, sizeof(lim), "%zu", max_frames);
    snprintf(big, sizeof(big), "%u", MAX_ENTRY_BYTES);
    const char *pv[] = {pipeline, lim, big};
    /* binary results: the frame's bytes as they are */
    PGresult *r = PQexecParams(j->pg, q, 3, NULL, pv, NULL, NULL, 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        int missing = state && !strcmp(state, "42P01");   /* undefined_table */
        if (!missing)
            pg_msg(err, errlen, "cannot read the journal _zx_forward of",
                   j->conf->pg_dsn_shown, PQresultErrorMessage(r));
        PQclear(r);
        return missing ? 0 : -1;
    }
    size_t cap = 0, bytes = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        if (PQgetlength(r, i, 0) != 8) {
            PQclear(r);
            pg_msg(err, errlen, "a journal entry of", j->conf->pg_dsn_shown,
                   "n is not a bigint");
            return -1;
        }
        const unsigned char *nb = (const unsigned char *)PQgetvalue(r, i, 0);
        uint64_t n = 0;
        for (int b = 0; b < 8; b++)
            n = n << 8 | nb[b];
        size_t len = (size_t)PQgetlength(r, i, 1);
        if (add_entry(out, nout, &cap, n, PQgetvalue(r, i, 1), len) < 0) {
            PQclear(r);
            snprintf(err, errlen, "forward: out of memory reading the journal");
            return -1;
        }
        bytes += len;
        if (bytes >= max_bytes)
            break;
    }
    PQclear(r);
    return 0;
}

static int pg_pending(zx_fwdj *j, const char *pipeline, uint64_t *count, uint64_t *first,
                      char *err, size_t errlen)
{
    char q[300];
    snprintf(q, sizeof(q), "SELECT count(*), coalesce(min(n), 0) FROM %s WHERE pipeline = $1",
             j->table);
    const char *pv[] = {pipeline};
    PGresult *r = PQexecParams(j->pg, q, 1, NULL, pv, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        int missing = state && !strcmp(state, "42P01");
        if (!missing)
            pg_msg(err, errlen, "cannot count the journal _zx_forward of",
                   j->conf->pg_dsn_shown, PQresultErrorMessage(r));
        PQclear(r);
        return missing ? 0 : -1;
    }
    *count = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
    *first = strtoull(PQgetvalue(r, 0, 1), NULL, 10);
    PQclear(r);
    return 0;
}

static int pg_delete(zx_fwdj *j, const char *pipeline, uint64_t n, char *err, size_t errlen)
{
    char q[300], ns[24];
    snprintf(q, sizeof(q), "DELETE FROM %s WHERE pipeline = $1 AND n <= $2", j->table);
    snprintf(ns, sizeof(ns), "%" PRIu64, n);
    const char *pv[] = {pipeline, ns};
    PGresult *r = PQexecParams(j->pg, q, 2, NULL, pv, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        pg_msg(err, errlen, "cannot trim the journal _zx_forward of", j->conf->pg_dsn_shown,
               PQresultErrorMessage(r));
    PQclear(r);
    return ok ? 0 : -1;
}

/* ---- the interface ----------------------------------------------------- */

/* 0 connected, 1 not yet (the SQLite workspace is not made yet), -1 err. */
static int connect_j(zx_fwdj *j, char *err, size_t errlen)
{
    if (j->db || j->pg)
        return 0;
    return j->conf->ws_kind == ZX_WS_KIND_POSTGRES ? pg_open(j, err, errlen)
                                                   : sq_open(j, err, errlen);
}

static void disconnect_j(zx_fwdj *j)
{
    sqlite3_close(j->db);
    j->db = NULL;
    PQfinish(j->pg);
    j->pg = NULL;
}

zx_fwdj *zx_fwdj_open(const zx_conf *conf, char *err, size_t errlen)
{
    zx_fwdj *j = calloc(1, sizeof(*j));
    if (!j) {
        snprintf(err, errlen, "forward: out of memory");
        return NULL;
    }
    j->conf = conf;
    (void)err;
    (void)errlen;
    return j;
}

void zx_fwdj_close(zx_fwdj *j)
{
    if (!j)
        return;
    disconnect_j(j);
    free(j);
}

int zx_fwdj_read(zx_fwdj *j, const char *pipeline, size_t max_frames, size_t max_bytes,
                 zx_fwdj_entry **out, size_t *nout, char *err, size_t errlen)
{
    *out = NULL;
    *nout = 0;
    int c = connect_j(j, err, errlen);
    if (c)
        return c > 0 ? 0 : -1;
    int rc = j->pg ? pg_read(j, pipeline, max_frames, max_bytes, out, nout, err, errlen)
                   : sq_read(j, pipeline, max_frames, max_bytes, out, nout, err, errlen);
    if (rc < 0) {
        zx_fwdj_entries_free(*out, *nout);
        *out = NULL;
        *nout = 0;
        disconnect_j(j);
    }
    return rc;
}

int zx_fwdj_delete(zx_fwdj *j, const char *pipeline, uint64_t n, char *err, size_t errlen)
{
    if (connect_j(j, err, errlen) != 0) {
        if (!err[0])
            snprintf(err, errlen, "forward: the workspace %s is gone", j->conf->sqlite_path);
        return -1;
    }
    int rc = j->pg ? pg_delete(j, pipeline, n, err, errlen)
                   : sq_delete(j, pipeline, n, err, errlen);
    if (rc < 0)
        disconnect_j(j);
    return rc;
}

int zx_fwdj_pending(zx_fwdj *j, const char *pipeline, uint64_t *count, uint64_t *first,
                    char *err, size_t errlen)
{
    *count = *first = 0;
    int c = connect_j(j, err, errlen);
    if (c)
        return c > 0 ? 0 : -1;
    int rc = j->pg ? pg_pending(j, pipeline, count, first, err, errlen)
                   : sq_pending(j, pipeline, count, first, err, errlen);
    if (rc < 0)
        disconnect_j(j);
    return rc;
}
