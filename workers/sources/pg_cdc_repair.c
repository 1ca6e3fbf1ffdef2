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
#include "workers/sources/pg_cdc_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "workers/verify/verify.h"

#define REPAIR_MAX_BYTES (64u << 20)

/* SELECT * FROM "schema"."table" WHERE "k1" = $1 AND ... into q (cap). */
static int select_sql(PGconn *meta, const pgcdc_table *t, char *q, size_t cap)
{
    char *qs = PQescapeIdentifier(meta, t->schema, strlen(t->schema));
    char *qn = PQescapeIdentifier(meta, t->name, strlen(t->name));
    size_t n = qs && qn ? (size_t)snprintf(q, cap, "SELECT * FROM %s.%s", qs, qn) : cap;
    PQfreemem(qs);
    PQfreemem(qn);
    for (uint32_t k = 0; k < t->nkeys && n < cap; k++) {
        char *qk = PQescapeIdentifier(meta, t->keys[k], strlen(t->keys[k]));
        n += qk ? (size_t)snprintf(q + n, cap - n, "%s%s = $%u", k ? " AND " : " WHERE ", qk,
                                   k + 1)
                : cap;
        PQfreemem(qk);
    }
    return n < cap ? 0 : -1;
}

/* The repairs of one table's keys.  Rows appended, or -1 (err set). */
static int repair_table(PGconn *meta, const char *shown, pgcdc_table *t, json_t *keys,
                        pgo_lsn lsn, char *err, size_t errlen)
{
    char q[4096];
    if (t->nkeys == 0 || t->nkeys > 32 || select_sql(meta, t, q, sizeof(q)) < 0)
        return zx_seterr(err, errlen, "table %s: its key cannot be looked up", t->qname);
    int n = 0;
    size_t i;
    json_t *key;
    json_array_foreach(keys, i, key) {
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
            snprintf(m, sizeof(m), "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(meta));
            m[strcspn(m, "\n")] = '\0';
            PQclear(r);
            return zx_seterr(err, errlen, "table %s: reading a row on %s: %s", t->qname, shown,
                             m);
        }
        int rc = pgcdc_repair_row(t, r, vals, lsn, err, errlen);
        PQclear(r);
        if (rc < 0)
            return -1;
        n++;
    }
    return n;
}

int pgcdc_repair(PGconn *meta, const char *shown, const char *data_dir,
                 const zx_conf_pipeline *p, pgcdc_table *t, size_t nt, pgo_lsn lsn, char *err,
                 size_t errlen)
{
    char path[4096], taken[4200];
    if (zx_verify_repair_path(data_dir, p->name, path, sizeof(path)) < 0)
        return 0;
    snprintf(taken, sizeof(taken), "%s.taken", path);
    if (rename(path, taken) < 0)
        return errno == ENOENT ? 0 : zx_seterr(err, errlen, "taking %s: %s", path,
                                              strerror(errno));
    struct stat st;
    json_t *req = NULL;
    FILE *f = fopen(taken, "r");
    if (f && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uint64_t)st.st_size <= REPAIR_MAX_BYTES)
        req = json_loadf(f, JSON_REJECT_DUPLICATES, NULL);
    if (f)
        fclose(f);
    unlink(taken);
    json_t *tables = json_object_get(req, "tables");
    if (!json_is_array(tables)) {
        json_decref(req);
        return zx_seterr(err, errlen, "the repair request %s is not one zx wrote", path);
    }
    int total = 0, rc = 0;
    size_t i;
    json_t *e;
    json_array_foreach(tables, i, e) {
        const char *name = json_string_value(json_object_get(e, "table"));
        json_t *keys = json_object_get(e, "keys");
        pgcdc_table *x = NULL;
        for (size_t j = 0; name && j < nt; j++)
            if (!strcmp(t[j].qname, name))
                x = &t[j];
        if (!x || !json_is_array(keys)) {
            zx_warn("event=repair_skipped pipeline=%s table=\"%.200s\" reason=\"not a table "
                    "of the pipeline\"", p->name, name ? name : "?");
            continue;
        }
        int n = repair_table(meta, shown, x, keys, lsn, err, errlen);
        if (n < 0) {
            rc = -1;
            break;
        }
        total += n;
    }
    json_decref(req);
    return rc < 0 ? -1 : total;
}
