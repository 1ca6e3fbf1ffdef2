/*
 * dest_pg_write.c — a batch of a run of the Postgres destination (see
 * dest_postgres.c for the modes and dest_pg_state.h for the state): its
 * rows encoded for COPY (dest_pg_copy.c), keys deduplicated, COPYed into
 * the table (replace, append, upsert into a table empty at begin) or into
 * pg_temp.zx_stage and merged with INSERT ... ON CONFLICT; delete_keys
 * COPYs the keys into pg_temp.zx_keys and DELETEs with a join on it.
 *
 * It must never: leave a COPY half-open (copy_finish ends it whatever
 * happened), or send a value unchecked (zx_pg_copy_field converts it).
 */
#include "workers/destinations/postgres/dest_pg_state.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "workers/destinations/dest_table.h"

/* End a COPY and collect its results: 0 when every result was OK, -1 with
 * d->msg set.  Never leaves the connection inside the COPY. */
static int copy_finish(pgd *d, const char *abort_msg)
{
    int rc = 0;
    if (PQputCopyEnd(d->c, abort_msg) != 1) {
        zx_pgd_set_msg(d, PQerrorMessage(d->c));
        rc = -1;
    }
    PGresult *r;
    for (int guard = 0; guard < 64 && (r = PQgetResult(d->c)) != NULL; guard++) {
        ExecStatusType s = PQresultStatus(r);
        if (s == PGRES_COPY_IN) {            /* only after a failed end */
            PQclear(r);
            PQputCopyEnd(d->c, "aborted");
            continue;
        }
        if (s != PGRES_COMMAND_OK && rc == 0) {
            zx_pgd_set_msg_res(d, r);
            rc = -1;
        }
        PQclear(r);
    }
    return rc;
}

/* A part of the COPY data to send. */
typedef struct span {
    const char *p;
    size_t n;
} span;

/* A send into the open COPY failed: d->msg says why, the COPY is ended.
 * -1. */
static int send_failed(pgd *d)
{
    zx_pgd_set_msg(d, PQerrorMessage(d->c));
    char keep[sizeof(d->msg)];
    memcpy(keep, d->msg, sizeof(keep));
    copy_finish(d, "zx: sending failed");
    memcpy(d->msg, keep, sizeof(keep));
    return -1;
}

/* parts[from .. to) into the open COPY.  0, or -1 (d->msg; the COPY is
 * ended). */
static int send_parts(pgd *d, const span *parts, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        for (size_t o = 0; o < parts[i].n;) {
            size_t n = parts[i].n - o < SEND_CHUNK ? parts[i].n - o : SEND_CHUNK;
            if (PQputCopyData(d->c, parts[i].p + o, (int)n) != 1) {
                return send_failed(d);
            }
            o += n;
        }
        if (d->st)
            d->st->bytes += parts[i].n;
    }
    return 0;
}

/* COPY sql FROM STDIN, then the parts[] of data.  0 or -1 (d->msg). */
static int copy_send(pgd *d, const char *sql, const span *parts, size_t nparts)
{
    if (zx_pgd_held_end(d) < 0)
        return -1;
    PGresult *r = PQexec(d->c, sql);
    if (!r || PQresultStatus(r) != PGRES_COPY_IN) {
        zx_pgd_set_msg_res(d, r);
        PQclear(r);
        return -1;
    }
    PQclear(r);
    if (send_parts(d, parts, 0, nparts) < 0)
        return -1;
    return copy_finish(d, NULL);
}

size_t zx_pgd_seen_max = SEEN_MAX;

/* The outcome of the key build sent at prepare (d->building).  0 or -1
 * (d->msg). */
static int building_end(pgd *d)
{
    d->building = 0;
    PGresult *r, *bad = NULL;
    while ((r = PQgetResult(d->c)) != NULL) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK && !bad)
            bad = r;
        else
            PQclear(r);
    }
    if (!bad && PQstatus(d->c) == CONNECTION_OK)
        return 0;
    zx_pgd_set_msg_res(d, bad);
    PQclear(bad);
    char keep[sizeof(d->msg)];
    snprintf(keep, sizeof(keep), "cannot build the table's primary key: %.900s", d->msg);
    memcpy(d->msg, keep, sizeof(keep));
    return -1;
}

int zx_pgd_held_end(pgd *d)
{
    if (d->building)
        return building_end(d);
    if (!d->held)
        return 0;
    d->held = 0;
    static const char trailer[2] = { (char)0xff, (char)0xff };
    if (d->binary && PQputCopyData(d->c, trailer, 2) != 1) {
        return send_failed(d);
    }
    return copy_finish(d, NULL);
}

/* The batch's parts (header, rows, trailer: make_parts) into the COPY of
 * d->sql_copy held open across batches: opened by the first (with its
 * header), each batch's rows after it, the trailer when it ends.  0 or -1
 * (d->msg). */
static int copy_held(pgd *d, const span *parts, size_t nparts, int binary)
{
    size_t from = 0, to = nparts;
    if (binary) {
        if (nparts < 2)
            return 0;
        from = 1;       /* the header: sent once, when the COPY opens */
        to = nparts - 1; /* the trailer: once, at its end */
    }
    if (d->building && zx_pgd_held_end(d) < 0)
        return -1;
    if (!d->held) {
        PGresult *r = PQexec(d->c, d->sql_copy);
        if (!r || PQresultStatus(r) != PGRES_COPY_IN) {
            zx_pgd_set_msg_res(d, r);
            PQclear(r);
            return -1;
        }
        PQclear(r);
        d->held = 1;
        d->held_since_ms = zx_mono_ms();
        if (binary && send_parts(d, parts, 0, 1) < 0) {
            d->held = 0;
            return -1;
        }
    }
    if (send_parts(d, parts, from, to) < 0) {
        d->held = 0;
        return -1;
    }
    /* one statement within its deadline (statement_timeout) */
    if (zx_mono_ms() - d->held_since_ms > d->deadline_ms / 4)
        return zx_pgd_held_end(d);
    return 0;
}

/* The array at *pp (the address of an array pointer) reallocated to cap
 * elements of size bytes.  0, or -1 (unchanged). */
static int regrow(void *pp, size_t cap, size_t size)
{
    void *p = realloc(*(void **)pp, cap * size);
    if (!p)
        return -1;
    *(void **)pp = p;
    return 0;
}

static int grow_rows(pgd *d, size_t n)
{
    if (n <= d->rows_cap)
        return 0;
    size_t cap = d->rows_cap ? d->rows_cap : 1024;
    while (cap < n)
        cap *= 2;
    if (regrow(&d->roff, cap, sizeof(size_t)) < 0 || regrow(&d->rend, cap, sizeof(size_t)) < 0 ||
        regrow(&d->koff, cap, sizeof(size_t)) < 0 || regrow(&d->klen, cap, sizeof(size_t)) < 0 ||
        regrow(&d->khash, cap, sizeof(uint64_t)) < 0 || regrow(&d->skip, cap, 1) < 0)
        return -1;
    d->rows_cap = cap;
    return 0;
}

/* Encode rs's rows into d->data (cols[idx[j]] for column j of rs), each
 * row's bytes at [roff, rend); with keys (nk > 0: kidx are the key
 * positions among rs's columns) their bytes go to d->keys, and a row whose
 * key is NULL gets skip = 1.  Counts misfits (and NULL keys) in *nulled.
 * 0 or -1 (memory). */
static int encode(pgd *d, const zx_rowset *rs, const size_t *idx, size_t ncols, int binary,
                  const size_t *kidx, size_t nk, uint64_t *nulled)
{
    d->data.len = 0;
    d->keys.len = 0;
    if (binary && zx_pg_copy_bin_header(&d->data) < 0)
        return -1;
    for (uint32_t r = 0; r < rs->nrows; r++) {
        zx_rowset_row(rs, r, d->vals);
        d->roff[r] = d->data.len;
        d->skip[r] = 0;
        if (binary) {
            unsigned char fc[2] = { (unsigned char)(ncols >> 8), (unsigned char)ncols };
            if (zx_buf_put(&d->data, fc, 2) < 0)
                return -1;
        }
        zx_dt_nulls nn = { 0 };
        for (size_t j = 0; j < ncols; j++) {
            if (!binary && j && zx_buf_put(&d->data, "\t", 1) < 0)
                return -1;
            d->foff[2 * j] = d->data.len;
            int isnull, misfit;
            if (zx_pg_copy_field(&d->data, &d->cols[idx[j]], &d->vals[j], binary, &d->scratch,
                                 &isnull, &misfit) < 0)
                return -1;
            d->foff[2 * j + 1] = d->data.len;
            zx_dt_nulls_add(&nn, zx_dt_is_key(kidx, nk, j), isnull, misfit);
            if (misfit)
                zx_dest_misfit(d->st, rs->cols[j].name, &d->vals[j]);
        }
        *nulled += zx_dt_nulls_count(&nn);
        if (!binary && zx_buf_put(&d->data, "\n", 1) < 0)
            return -1;
        d->rend[r] = d->data.len;
        if (!nk)
            continue;
        if (nn.knull) {
            /* left out (counted once in *nulled) */
            d->skip[r] = 1;
            d->data.len = d->roff[r];
            d->rend[r] = d->roff[r];
            continue;
        }
        d->koff[r] = d->keys.len;
        /* binary fields carry their length; text ones end with a tab
         * (escaped text holds none), so ("ab", "c") never equals ("a", "bc") */
        for (size_t k = 0; k < nk; k++) {
            size_t j = kidx[k];
            if (zx_buf_put(&d->keys, d->data.p + d->foff[2 * j],
                           d->foff[2 * j + 1] - d->foff[2 * j]) < 0 ||
                (!binary && zx_buf_put(&d->keys, "\t", 1) < 0))
                return -1;
        }
        d->klen[r] = d->keys.len - d->koff[r];
        d->khash[r] = zx_pg_key_hash(d->keys.p + d->koff[r], d->klen[r]);
    }
    if (binary && zx_pg_copy_bin_trailer(&d->data) < 0)
        return -1;
    return 0;
}

/* The parts of d->data to send: the header, each run of rows not skipped,
 * the trailer.  *parts is malloc'ed (caller frees).  0 or -1. */
static int make_parts(pgd *d, uint32_t nrows, int binary, span **parts, size_t *nparts)
{
    size_t cap = 8, n = 0;
    span *p = malloc(cap * sizeof(*p));
    if (!p)
        return -1;
    size_t first = nrows ? d->roff[0] : d->data.len;
    if (first)
        p[n++] = (span){ d->data.p, first };
    for (uint32_t r = 0; r < nrows;) {
        if (d->skip[r]) {
            r++;
            continue;
        }
        uint32_t e = r;
        while (e + 1 < nrows && !d->skip[e + 1] && d->roff[e + 1] == d->rend[e])
            e++;
        if (n + 2 >= cap) {
            cap *= 2;
            span *np = realloc(p, cap * sizeof(*p));
            if (!np) {
                free(p);
                return -1;
            }
            p = np;
        }
        p[n++] = (span){ d->data.p + d->roff[r], d->rend[e] - d->roff[r] };
        r = e + 1;
    }
    size_t tail = nrows ? d->rend[nrows - 1] : d->data.len;
    if (binary && d->data.len > tail)
        p[n++] = (span){ d->data.p + tail, d->data.len - tail };
    *parts = p;
    *nparts = n;
    return 0;
}

/* Make pg_temp.NAME (the run's columns or its key columns, none of the
 * table's constraints) on first use, empty it on later ones.  0 or -1. */
static int stage_table(pgd *d, const char *name, int keys_only, int *made, int *used)
{
    zx_buf b = { 0 };
    int bad;
    if (*made) {
        if (!*used)
            return 0;
        bad = zx_buf_printf(&b, "TRUNCATE pg_temp.%s", name) < 0;
    } else {
        bad = zx_buf_printf(&b, "CREATE TEMP TABLE %s ON COMMIT DROP AS SELECT ", name) < 0;
        if (!bad)
            bad = zx_dt_sql_list(&b, d->qcols, keys_only ? d->key : NULL,
                                 keys_only ? d->nkeys : d->ncols) < 0;
        if (!bad)
            bad = zx_buf_printf(&b, " FROM %s WITH NO DATA", d->qtable) < 0;
    }
    if (bad) {
        zx_buf_free(&b);
        zx_pgd_set_msg(d, "out of memory");
        return -1;
    }
    int rc = zx_pgd_sql_run(d, b.p);
    zx_buf_free(&b);
    if (rc == 0) {
        *made = 1;
        *used = 0;
    }
    return rc;
}

/* The start of write and delete_keys: rs's rows encoded (encode's
 * arguments), their NULLs counted in the run's stats.  1 when there are
 * rows, 0 when there are none, -1 (err). */
static int encode_batch(pgd *d, const zx_rowset *rs, const size_t *idx, size_t ncols,
                        int binary, const size_t *kidx, size_t nk, char *err, size_t errlen)
{
    if (rs->nrows == 0)
        return 0;
    if (grow_rows(d, rs->nrows) < 0)
        return zx_dt_fail(d->label, err, errlen, "out of memory");
    uint64_t nulled = 0;
    int rc = encode(d, rs, idx, ncols, binary, kidx, nk, &nulled);
    d->st->nulled += nulled;
    if (rc < 0)
        return zx_dt_fail(d->label, err, errlen, "out of memory");
    return 1;
}

/* COPY the encoded batch's rows that are not skipped with sql; with a
 * stage name, into pg_temp.<stage> made or emptied first (stage_table).
 * 0 or -1 (d->msg). */
static int copy_rows(pgd *d, uint32_t nrows, int binary, const char *sql, const char *stage,
                     int keys_only, int *made, int *used)
{
    if (stage) {
        if (stage_table(d, stage, keys_only, made, used) < 0)
            return -1;
        *used = 1;
    }
    span *parts;
    size_t nparts;
    if (make_parts(d, nrows, binary, &parts, &nparts) < 0) {
        zx_pgd_set_msg(d, "out of memory");
        return -1;
    }
    int rc = !stage && sql == d->sql_copy ? copy_held(d, parts, nparts, binary)
                                          : copy_send(d, sql, parts, nparts);
    free(parts);
    return rc;
}

int zx_pgd_write(void *state, const zx_rowset *rs, char *err, size_t errlen)
{
    pgd *d = state;
    if (zx_dt_check_write(d->label, d->st != NULL, rs, d->ncols, err, errlen) < 0)
        return -1;
    uint32_t nrows = rs->nrows;
    int upsert = zx_dt_keyed(d->mode);
    int rc = encode_batch(d, rs, d->idx, d->ncols, d->binary, upsert ? d->key : NULL,
                          upsert ? d->nkeys : 0, err, errlen);
    if (rc <= 0)
        return rc;
    uint64_t accepted = 0;
    for (uint32_t r = 0; r < nrows; r++)
        accepted += !d->skip[r];
    if (accepted == 0)
        return 0;       /* every row's key was NULL */
    int staged = 0;
    if (upsert) {
        if (zx_pg_dedup(d->keys.p, d->koff, d->klen, d->khash, d->skip, nrows) < 0)
            return zx_dt_fail(d->label, err, errlen, "out of memory");
        int direct = d->direct;
        for (uint32_t r = 0; r < nrows && direct && !d->unsure; r++)
            if (!d->skip[r] && zx_pg_hset_has(&d->seen, d->khash[r]))
                direct = 0;
        /* remember this batch's keys while the direct path lasts; when
         * they no longer fit, later batches take the staging path, or,
         * into a table the run made, go on straight (the key's build
         * keeps each key's last row) */
        for (uint32_t r = 0; r < nrows && d->direct && !d->unsure; r++)
            if (!d->skip[r] && zx_pg_hset_add(&d->seen, d->khash[r], zx_pgd_seen_max) < 0) {
                zx_pg_hset_free(&d->seen);
                if (d->key_later)
                    d->unsure = 1;
                else
                    d->direct = 0;
            }
        staged = !direct;
    }
    if (staged) {
        /* ON CONFLICT needs the key's index */
        if (zx_pgd_key_build(d) < 0)
            return zx_dt_fail(d->label, err, errlen, "%s", d->msg);
        rc = copy_rows(d, nrows, d->binary, d->sql_copy_stage, "zx_stage", 0, &d->stage_made,
                       &d->stage_used);
        if (rc == 0)
            rc = zx_pgd_sql_run(d, d->sql_merge);
    } else
        rc = copy_rows(d, nrows, d->binary, d->sql_copy, NULL, 0, NULL, NULL);
    if (rc < 0)
        return zx_dt_fail(d->label, err, errlen, "%s", d->msg);
    d->st->rows_written += accepted;
    return 0;
}

int zx_pgd_delete_keys(void *state, const zx_rowset *keys, char *err, size_t errlen)
{
    pgd *d = state;
    if (zx_dt_check_delete(d->label, d->st != NULL, keys, d->nkeys, err, errlen) < 0)
        return -1;
    if (zx_pgd_key_build(d) < 0)
        return zx_dt_fail(d->label, err, errlen, "%s", d->msg);
    /* column j of keys is cols[key[j]]; every one is a key (positions idx) */
    int rc = encode_batch(d, keys, d->key, d->nkeys, d->kbinary, d->idx, d->nkeys, err, errlen);
    if (rc <= 0)
        return rc;
    rc = copy_rows(d, keys->nrows, d->kbinary, d->sql_copy_keys, "zx_keys", 1, &d->kstage_made,
                   &d->kstage_used);
    PGresult *r = rc == 0 ? zx_pgd_q(d, d->sql_delete, 0, NULL) : NULL;
    if (!r)
        return zx_dt_fail(d->label, err, errlen, "%s", d->msg);
    d->st->rows_deleted += strtoull(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return 0;
}
