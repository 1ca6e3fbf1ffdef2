/* query_common.c — what both query backends share (query.h). */
#include "workers/syncs/query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

struct zx_query {
    int pg;          /* 1: the PostgreSQL workspace */
    void *impl;
};

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
    *out = q;
    return 0;
}

const zx_dcol *zx_query_columns(const zx_query *q, size_t *n)
{
    return q->pg ? zx_qpg_columns(q->impl, n) : zx_qsq_columns(q->impl, n);
}

int64_t zx_query_next(zx_query *q, zx_rowset *rs, size_t max, char *err, size_t errlen)
{
    return q->pg ? zx_qpg_next(q->impl, rs, max, err, errlen)
                 : zx_qsq_next(q->impl, rs, max, err, errlen);
}

void zx_query_close(zx_query *q)
{
    if (!q)
        return;
    if (q->pg)
        zx_qpg_close(q->impl);
    else
        zx_qsq_close(q->impl);
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
