/*
 * query_common.c — what both query backends share (query.h), and the
 * types of a SQLite result decided from all of its values (coltype.h):
 * each batch zx_query_next returns is seen before the caller gets it.
 */
#include "workers/syncs/query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "workers/syncs/coltype.h"

struct zx_query {
    int pg;          /* 1: the PostgreSQL workspace */
    void *impl;
    const char *sync;
    /* SQLite: the types as the values seen so far make them */
    zx_dcol *cols;
    size_t ncols;
    int *undecided;  /* per column: no declared type, no value yet */
    zx_value *vals;  /* one row, for seeing a batch */
    zx_buf scratch;
    int ended;       /* zx_query_next returned 0 */
};

/* The SQLite backend's columns copied (names borrowed from it, valid as
 * long as it is open) with their declared types, to be widened.  0 or -1
 * (out of memory). */
static int types_start(zx_query *q)
{
    size_t n;
    const zx_dcol *c = zx_qsq_columns(q->impl, &n);
    const unsigned char *und = zx_qsq_undeclared(q->impl);
    q->cols = calloc(n, sizeof(*q->cols));
    q->undecided = calloc(n, sizeof(*q->undecided));
    q->vals = calloc(n, sizeof(*q->vals));
    if (!q->cols || !q->undecided || !q->vals)
        return -1;
    q->ncols = n;
    for (size_t i = 0; i < n; i++) {
        q->cols[i] = c[i];
        q->undecided[i] = und[i];
    }
    return 0;
}

/* Widen the types for every value of rs.  0 or -1 (out of memory). */
static int types_see(zx_query *q, const zx_rowset *rs)
{
    size_t n = q->ncols < rs->ncols ? q->ncols : rs->ncols;
    for (uint32_t r = 0; r < rs->nrows; r++) {
        zx_rowset_row(rs, r, q->vals);
        for (size_t i = 0; i < n; i++)
            if (zx_coltype_see(&q->cols[i], &q->undecided[i], &q->vals[i], &q->scratch) < 0)
                return -1;
    }
    return 0;
}

int zx_query_open(const zx_conf *conf, const char *sync, const zx_conf_author *author,
                  const char *sql, const zx_query_limits *lim, zx_query **out, char *err,
                  size_t errlen)
{
    zx_query *q = calloc(1, sizeof(*q));
    if (!q) {
        snprintf(err, errlen, "sync %s: out of memory", sync);
        return -1;
    }
    q->pg = conf->ws_kind == ZX_WS_KIND_POSTGRES;
    int rc = q->pg ? zx_qpg_open(conf, sync, author, sql, lim, &q->impl, err, errlen)
                   : zx_qsq_open(conf, sync, author, sql, lim, &q->impl, err, errlen);
    if (rc < 0) {
        free(q);
        return -1;
    }
    q->sync = sync;
    if (!q->pg && types_start(q) < 0) {
        zx_query_close(q);
        snprintf(err, errlen, "sync %s: out of memory", sync);
        return -1;
    }
    *out = q;
    return 0;
}

const zx_dcol *zx_query_columns(const zx_query *q, size_t *n)
{
    if (q->pg)
        return zx_qpg_columns(q->impl, n);
    *n = q->ncols;
    return q->cols;
}

int zx_query_types_known(const zx_query *q)
{
    return q->pg || q->ended;
}

int64_t zx_query_next(zx_query *q, zx_rowset *rs, size_t max, char *err, size_t errlen)
{
    if (q->pg)
        return zx_qpg_next(q->impl, rs, max, err, errlen);
    int64_t n = zx_qsq_next(q->impl, rs, max, err, errlen);
    if (n > 0 && types_see(q, rs) < 0) {
        snprintf(err, errlen, "sync %s: out of memory reading the result", q->sync);
        return -1;
    }
    if (n == 0) {
        q->ended = 1;
        /* a column without any value: text */
        for (size_t i = 0; i < q->ncols; i++)
            if (q->undecided[i]) {
                q->undecided[i] = 0;
                q->cols[i].type = ZX_DT_TEXT;
            }
    }
    return n;
}

void zx_query_close(zx_query *q)
{
    if (!q)
        return;
    if (q->pg)
        zx_qpg_close(q->impl);
    else
        zx_qsq_close(q->impl);
    free(q->cols);
    free(q->undecided);
    free(q->vals);
    zx_buf_free(&q->scratch);
    free(q);
}

int zx_query_rs_columns(zx_rowset *rs, const zx_dcol *cols, size_t n)
{
    zx_rowset_reset(rs);
    for (size_t i = 0; i < n; i++)
        if (zx_rowset_column(rs, cols[i].name, strlen(cols[i].name), ZX_T_NULL) != (int64_t)i)
            return -1;
    return 0;
}

int zx_query_unique_names(const zx_dcol *cols, size_t n, const char *sync, char *err,
                          size_t errlen)
{
    /* results are narrow (at most a few thousand columns): pairs are fine */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (!strcmp(cols[i].name, cols[j].name)) {
                snprintf(err, errlen, "sync %s: the query's result has two columns named "
                         "%.63s (columns %zu and %zu): give one an alias (AS ...)", sync,
                         cols[i].name, j + 1, i + 1);
                return -1;
            }
    return 0;
}

int64_t zx_query_deadline(const zx_query_limits *lim)
{
    uint32_t t = lim && lim->query_timeout_ms ? lim->query_timeout_ms : 3600u * 1000u;
    return zx_mono_ms() + (int64_t)t;
}

/* ms as the config file would write it: 90s, 2m, 1h, 1500ms. */
static void duration_text(uint32_t ms, char *out, size_t len)
{
    static const struct { uint32_t ms; const char *unit; } units[] = {
        {3600000u, "h"}, {60000u, "m"}, {1000u, "s"}, {1u, "ms"}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (ms % units[i].ms == 0 || units[i].ms == 1) {
            snprintf(out, len, "%u%s", ms / units[i].ms, units[i].unit);
            return;
        }
}

int zx_query_cut_msg(zx_query_cut why, const char *sync, uint32_t timeout_ms, const char *how,
                     char *err, size_t errlen)
{
    char d[32];
    duration_text(timeout_ms ? timeout_ms : 3600u * 1000u, d, sizeof(d));
    if (why == ZX_QUERY_TIMED_OUT)
        snprintf(err, errlen, "sync %s: the query ran past its query_timeout (%s) and was %s; "
                 "nothing was committed (raise query_timeout of the sync, or "
                 "server.sync_query_timeout, or make the query cheaper)", sync, d, how);
    else
        snprintf(err, errlen, "sync %s: stopped while the query ran (zxd is stopping or the "
                 "run was cancelled); the query was %s", sync, how);
    return -1;
}

int64_t zx_query_estimate(const zx_query *q)
{
    return q && q->pg ? zx_qpg_estimate(q->impl) : -1;
}
