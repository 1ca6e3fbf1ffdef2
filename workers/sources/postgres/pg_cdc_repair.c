/*
 * pg_cdc_repair.c — the worker's half of `zxctl verify --repair`
 * (pg_cdc_int.h): take the request the verify process left for this
 * pipeline and turn each of its keys into a change of the mirror, read
 * from the source now: the key's row as an upsert, or a delete when the
 * source has no such row.  The changes go to the writer in the pipeline's
 * own frames, between two source transactions, so the writer stays the
 * only one to write the workspace; a change of the key the stream brings
 * later is applied after it, which converges as a replay does.
 *
 * The request file (workers/verify/verify.h, zx_verify_repair_path) is
 * {"tables":[{"table":"schema.table","keys":[["k1","k2"],...]}]}: keys as
 * the source prints them, in the key's column order.
 *
 * It must never: trust the request (size, shape and tables are checked;
 * a table that is not the pipeline's is skipped), or fail the pipeline
 * for a bad request (the request is dropped with a message).
 */
#include "workers/sources/postgres/pg_cdc_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/pgconn.h"
#include "common/util.h"
#include "workers/verify/verify.h"

#define REPAIR_MAX_BYTES (64u << 20)

/* SELECT * FROM "schema"."table" WHERE "k1" = $1 AND ... into q (cap). */
static int select_sql(PGconn *meta, const pgcdc_table *t, char *q, size_t cap)
{
    char *qs = zx_pg_ident(meta, t->schema, NULL, 0);
    char *qn = zx_pg_ident(meta, t->name, NULL, 0);
    size_t n = qs && qn ? (size_t)snprintf(q, cap, "SELECT * FROM %s.%s", qs, qn) : cap;
    free(qs);
    free(qn);
    for (uint32_t k = 0; k < t->nkeys && n < cap; k++) {
        char *qk = zx_pg_ident(meta, t->keys[k], NULL, 0);
        n += qk ? (size_t)snprintf(q + n, cap - n, "%s%s = $%u", k ? " AND " : " WHERE ", qk,
                                   k + 1)
                : cap;
        free(qk);
    }
    return n < cap ? 0 : -1;
}

/* The repair of key (a JSON array of nkeys texts) of table t, from the
 * row read with q.  0, or -1 (err set). */
static int repair_key(PGconn *meta, const char *shown, pgcdc_table *t, const char *q,
                      const json_t *key, pgo_lsn lsn, char *err, size_t errlen)
{
    const char *vals[32];
    if (!json_is_array(key) || json_array_size(key) != t->nkeys)
        return zx_seterr(err, errlen, "table %s: a key of the request is not %u texts",
                         t->qname, t->nkeys);
    for (uint32_t k = 0; k < t->nkeys; k++)
        if (!(vals[k] = json_string_value(json_array_get(key, k))))
            return zx_seterr(err, errlen, "table %s: a key of the request is not texts",
                             t->qname);
    PGresult *r = PQexecParams(meta, q, (int)t->nkeys, NULL, vals, NULL, NULL, 0);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) {
        char m[400];
        zx_pg_reason(meta, r, m, sizeof(m));
        PQclear(r);
        return zx_seterr(err, errlen, "table %s: reading a row on %s: %s", t->qname, shown, m);
    }
    int rc = pgcdc_repair_row(t, r, vals, lsn, err, errlen);
    PQclear(r);
    return rc;
}

/* The request at path, taken (renamed, read, removed): its "tables"
 * array's owner, or NULL with err (nothing there: err empty). */
static json_t *take(const char *path, char *err, size_t errlen)
{
    char taken[4200];
    err[0] = '\0';
    snprintf(taken, sizeof(taken), "%s.taken", path);
    if (rename(path, taken) < 0) {
        if (errno != ENOENT)
            zx_seterr(err, errlen, "taking %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    json_t *req = NULL;
    FILE *f = fopen(taken, "r");
    if (f && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uint64_t)st.st_size <= REPAIR_MAX_BYTES)
        req = json_loadf(f, JSON_REJECT_DUPLICATES, NULL);
    if (f)
        fclose(f);
    unlink(taken);
    if (!json_is_array(json_object_get(req, "tables"))) {
        json_decref(req);
        zx_seterr(err, errlen, "the repair request %s is not one zx wrote", path);
        return NULL;
    }
    return req;
}

int pgcdc_repair(PGconn *meta, const char *shown, const char *data_dir,
                 const zx_conf_pipeline *p, pgcdc_table *t, size_t nt, pgo_lsn lsn,
                 pgcdc_repair_state *st, int64_t until_ms, char *err, size_t errlen)
{
    char path[4096];
    if (!st->req) {
        if (zx_verify_repair_path(data_dir, p->name, path, sizeof(path)) < 0)
            return 0;
        if (!(st->req = take(path, err, errlen)))
            return err[0] ? -1 : 0;
        st->ti = st->ki = 0;
    }
    json_t *tables = json_object_get(st->req, "tables");
    int n = 0, rc = 0;
    for (; st->ti < json_array_size(tables) && rc == 0; st->ti++, st->ki = 0) {
        json_t *e = json_array_get(tables, st->ti);
        const char *name = json_string_value(json_object_get(e, "table"));
        json_t *keys = json_object_get(e, "keys");
        pgcdc_table *x = NULL;
        char q[4096];
        for (size_t j = 0; name && j < nt; j++)
            if (!strcmp(t[j].qname, name))
                x = &t[j];
        if (!x || !json_is_array(keys)) {
            zx_warn("event=repair_skipped pipeline=%s table=\"%.200s\" reason=\"not a table "
                    "of the pipeline\"", p->name, name ? name : "?");
            continue;
        }
        if (x->nkeys == 0 || x->nkeys > 32 || select_sql(meta, x, q, sizeof(q)) < 0) {
            rc = zx_seterr(err, errlen, "table %s: its key cannot be looked up", x->qname);
            break;
        }
        for (; st->ki < json_array_size(keys); st->ki++) {
            if (n && zx_mono_ms() >= until_ms)
                return n; /* the rest at the next call */
            if (repair_key(meta, shown, x, q, json_array_get(keys, st->ki), lsn, err,
                           errlen) < 0) {
                rc = -1;
                break;
            }
            n++;
        }
    }
    json_decref(st->req);
    st->req = NULL;
    return rc < 0 ? -1 : n;
}
