/*
 * run_cursor.c — a run's `cursor:` (cursor.h): whether it reads the whole
 * result or only the rows at or past the last successful run's mark, its
 * query opened accordingly (read), the greatest cursor value it read
 * (read_batch), and the mark handed to the writer with its last
 * row-hashes frame (record).
 *
 * It must never: advance the mark past a row the destination refused, or
 * read past a mark of another query or column.
 */
#include "workers/syncs/run_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

/* The result's column named name, or -1. */
static int64_t column_of(const zx_dcol *cols, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(cols[i].name, name))
            return (int64_t)i;
    return -1;
}

static int no_column(srun *r, const zx_dcol *cols, size_t n)
{
    char list[512];
    size_t off = 0;
    list[0] = 0;
    for (size_t j = 0; j < n && off < sizeof(list); j++)
        off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", j ? ", " : "",
                                cols[j].name);
    return zx_seterr(r->err, sizeof(r->err), "sync %s: cursor column %s is not in the "
                     "query's result (its columns: %s)", r->name, r->o->cursor, list);
}

/* The mark the last successful run recorded, when this run may read past
 * it: 1 (r->mark_old), 0 (read everything: r->cursor_why says why). */
static int stored_mark(srun *r)
{
    if (r->full) {
        r->cursor_why = r->key_changed ? "the key columns changed" : "--full";
        return 0;
    }
    const void *val = NULL;
    size_t len = 0;
    if (zx_src_position_find(r->rt, ZX_CURSOR_PART, &val, &len) < 0) {
        r->cursor_why = "no mark yet";
        return 0;
    }
    char why[200];
    int rc = zx_cursor_mark_decode(val, len, r->cursor_sig, &r->mark_old, why, sizeof(why));
    if (rc < 0) {
        zx_warn("event=sync_cursor_mark_bad sync=%s error=\"%s\" action=\"the run reads the "
                "whole result and records a new mark\"", r->name, why);
        r->cursor_why = "the stored mark was damaged";
        return 0;
    }
    if (rc == 1) {
        r->cursor_why = "the query or cursor changed since the mark";
        return 0;
    }
    return 1;
}

/* A column PostgreSQL declares of a type a cursor cannot be: -1 with
 * r->err naming it, else 0.  Only integers, timestamps and dates there:
 * what zx reads as text (numeric without precision, varchar, uuid...)
 * the server orders by its own rules (numbers, the column's collation),
 * not as the bytes zx compares.  SQLite decides types from the values
 * (run_cursor_see checks those) and compares text as bytes. */
static int column_type_ok(srun *r, const zx_dcol *c)
{
    if (!r->cursor_by_instant || c->type == ZX_DT_INT64 || c->type == ZX_DT_TIMESTAMP ||
        c->type == ZX_DT_DATE)
        return 0;
    return zx_seterr(r->err, sizeof(r->err), "sync %s: cursor column %s is of type %s: on "
                     "a PostgreSQL workspace a cursor is an integer, a timestamp or a date "
                     "(cast it in the query)", r->name, r->o->cursor,
                     c->type == ZX_DT_TEXT ? "text (or numeric, or another zx reads as text)"
                                           : zx_dtype_name(c->type));
}

/* Whether the stored mark's kind fits the column as PostgreSQL declares
 * it (SQLite decides types from the values: read_batch checks them). */
static int kind_fits(const srun *r, const zx_dcol *c)
{
    if (!r->cursor_by_instant)
        return 1;
    switch (c->type) {
    case ZX_DT_INT64: return r->mark_old.kind == ZX_CURSOR_INT;
    case ZX_DT_TIMESTAMP: return r->mark_old.kind == ZX_CURSOR_TS;
    case ZX_DT_DATE: return r->mark_old.kind == ZX_CURSOR_TEXT;
    default: return 0;
    }
}

int run_query_open(srun *r, const zx_query_limits *lim)
{
    const char *q = r->o->query;
    r->cursor_idx = -1;
    if (!r->hashed || !r->o->cursor)
        return zx_query_open(r->conf, r->name, r->p->auth, q, lim, &r->q, r->err,
                             sizeof(r->err));
    r->cursor_by_instant = r->conf->ws_kind == ZX_WS_KIND_POSTGRES;
    r->cursor_sig = zx_cursor_sig(q, r->o->cursor);
    char *sql = NULL;
    if (stored_mark(r) && !(sql = zx_cursor_sql(q, r->o->cursor, &r->mark_old)))
        return zx_seterr(r->err, sizeof(r->err), "sync %s: out of memory", r->name);
    size_t n = 0;
    const zx_dcol *cols;
    if (sql) {
        if (zx_query_open(r->conf, r->name, r->p->auth, sql, lim, &r->q, r->err,
                          sizeof(r->err)) < 0) {
            /* the column missing from the result fails the wrapped query
             * with the database's words: say it in ours (the query's
             * columns, from the query opened alone; not when stopping) */
            zx_query *plain = NULL;
            char e2[256];
            if (!zx_src_stopping(r->rt) &&
                zx_query_open(r->conf, r->name, r->p->auth, q, lim, &plain, e2,
                              sizeof(e2)) == 0) {
                cols = zx_query_columns(plain, &n);
                if (column_of(cols, n, r->o->cursor) < 0)
                    no_column(r, cols, n);
                zx_query_close(plain);
            }
            free(sql);
            return -1;
        }
        free(sql);
        cols = zx_query_columns(r->q, &n);
        int64_t ci = column_of(cols, n, r->o->cursor);
        if (ci >= 0 && column_type_ok(r, &cols[ci]) < 0)
            return -1;
        if (ci >= 0 && kind_fits(r, &cols[ci])) {
            r->cursor_run = 1;
            r->cursor_idx = ci;
            r->expect_read = 0;   /* the last whole read's says nothing */
            zx_info("event=sync_cursor sync=%s column=%s from=\"%s\"", r->name, r->o->cursor,
                    run_cursor_text(&r->mark_old));
            return 0;
        }
        if (ci < 0)
            return no_column(r, cols, n);
        zx_warn("event=sync_cursor_mark_bad sync=%s error=\"the stored mark is %s, the "
                "column %s is not\" action=\"the run reads the whole result\"", r->name,
                r->mark_old.kind == ZX_CURSOR_INT ? "an integer"
                : r->mark_old.kind == ZX_CURSOR_TS ? "a timestamp" : "a date",
                r->o->cursor);
        r->cursor_why = "the column's type changed";
        memset(&r->mark_old, 0, sizeof(r->mark_old));
        zx_query_close(r->q);
        r->q = NULL;
    }
    zx_info("event=sync_cursor sync=%s column=%s from=all reason=\"%s\"", r->name,
            r->o->cursor, r->cursor_why ? r->cursor_why : "?");
    if (zx_query_open(r->conf, r->name, r->p->auth, q, lim, &r->q, r->err,
                      sizeof(r->err)) < 0)
        return -1;
    cols = zx_query_columns(r->q, &n);
    if ((r->cursor_idx = column_of(cols, n, r->o->cursor)) < 0)
        return no_column(r, cols, n);
    return column_type_ok(r, &cols[r->cursor_idx]);
}

int run_cursor_see(srun *r, const zx_value *v)
{
    char why[200];
    if (zx_cursor_mark_see(&r->mark_new, v, r->cursor_by_instant, why, sizeof(why)) < 0)
        return zx_seterr(r->err, sizeof(r->err), "sync %s: cursor column %s, row %llu of the "
                         "result: %s", r->name, r->o->cursor, (unsigned long long)r->read, why);
    return 0;
}

const char *run_cursor_text(const zx_cursor_mark *m)
{
    static char num[32];
    if (m->kind == ZX_CURSOR_NONE)
        return "";
    if (m->kind != ZX_CURSOR_INT)
        return m->t;
    snprintf(num, sizeof(num), "%lld", (long long)m->i);
    return num;
}

int run_cursor_pos(srun *r, zx_frame_pos *pos)
{
    if (r->cursor_idx < 0 || r->mark_new.kind == ZX_CURSOR_NONE || r->preview ||
        r->nfailed_ord || r->nfailed_kh)
        return 0;   /* nothing read past it, or a row to send again: kept */
    size_t n = zx_cursor_mark_encode(&r->mark_new, r->cursor_sig, r->mark_bytes);
    const void *had = NULL;
    size_t hlen = 0;
    if (zx_src_position_find(r->rt, ZX_CURSOR_PART, &had, &hlen) == 0 && hlen == n &&
        !memcmp(had, r->mark_bytes, n))
        return 0;   /* the same mark: nothing to record */
    /* the whole entry: fenced, from and first too (encode refuses
     * garbage there) */
    *pos = (zx_frame_pos){ .part = ZX_CURSOR_PART, .value = r->mark_bytes, .value_len = n,
                           .from = -1, .first = -1 };
    return n > 0;
}
