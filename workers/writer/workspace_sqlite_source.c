/*
 * workspace_sqlite_source.c — what the SQLite workspace keeps of the
 * sources: each pipeline's upstream positions (_zx_positions, written in
 * the same transaction as the rows and the checkpoint) and the input
 * messages a source could not turn into rows (<table>__rejects, value_type
 * "message").  See workspace.h.
 *
 * It must never: write outside the open transaction, or let a user-made
 * rejects table that refuses a row fail the frame (it is skipped, as for
 * value rejects).
 */
#include "workers/writer/workspace_sqlite_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

int zx_ws_position_set(zx_ws *w, const char *pipeline, const char *part, const void *val,
                       size_t len, int64_t now_us)
{
    char ts[ZX_TS_BUFSZ];
    if (!w->in_txn)
        return -1;
    zx_ts_format(now_us, ts);
    sqlite3_stmt *st = w->st_pos_set;
    sqlite3_bind_text(st, 1, pipeline, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, part, -1, SQLITE_STATIC);
    sqlite3_bind_blob64(st, 3, len ? val : "", len, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, ts, -1, SQLITE_STATIC);
    int rc = zx_wsq_run(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_OK ? 0 : -1;
}

int zx_ws_positions_each(zx_ws *w, zx_ws_position_cb cb, void *ctx)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(w->db, "SELECT pipeline, part, value FROM _zx_positions"
                           " ORDER BY pipeline, part", -1, &st, NULL) != SQLITE_OK)
        return -1;
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *p = (const char *)sqlite3_column_text(st, 0);
        const char *part = (const char *)sqlite3_column_text(st, 1);
        const void *v = sqlite3_column_blob(st, 2);
        size_t n = (size_t)sqlite3_column_bytes(st, 2);
        if (p && part && *p && *part)
            stop = cb(p, part, v, n, ctx);
    }
    sqlite3_finalize(st);
    if (stop)
        return stop;
    return rc == SQLITE_DONE ? 0 : -1;
}

int zx_ws_positions_drop(zx_ws *w, const char *pipeline)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(w->db, "DELETE FROM _zx_positions WHERE pipeline = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, pipeline, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* 1 when the n bytes at s are valid UTF-8 without NUL (then stored as
 * TEXT; anything else is stored as a BLOB, SQLite keeps both). */
static int utf8_text(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t k;
        uint32_t cp;
        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            k = 1, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
            k = 2, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
            k = 3, cp = c & 0x07;
        else
            return 0;
        if (n - i <= k)
            return 0;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if ((k == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (k == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
        i += k + 1;
    }
    return 1;
}

static void bind_bytes(sqlite3_stmt *st, int i, const void *p, size_t n)
{
    if (!p)
        return; /* NULL */
    if (utf8_text(p, n))
        sqlite3_bind_text64(st, i, n ? p : "", n, SQLITE_STATIC, SQLITE_UTF8);
    else
        sqlite3_bind_blob64(st, i, p, n, SQLITE_STATIC);
}

/* The INSERT of a rejected message into <table>__rejects, creating the
 * table, or adding the two source columns to one made before they
 * existed.  NULL with *skip = 1 when the database refuses it for a data
 * reason (a user-made table of that name); NULL with *skip = 0 on a
 * database error (err set). */
static sqlite3_stmt *msg_stmt(zx_ws *w, const char *table, int *skip, char *err, size_t errlen)
{
    char rname[160];
    *skip = 0;
    snprintf(rname, sizeof(rname), "%s__rejects", table);
    ws_table *t = zx_wsq_get_table(w, rname);
    if (!t)
        goto dberr;
    if (t->msg_ins)
        return t->msg_ins;
    zx_fit_buf *b = &w->sql;
    int rc;
    if (t->ncols == 0) {
        b->len = 0;
        if (zx_wsq_sql_str(b, "CREATE TABLE IF NOT EXISTS ") < 0 ||
            zx_wsq_sql_ident(b, rname) < 0 || zx_wsq_sql_str(b, " " ZX_WSQ_REJECTS_COLUMNS) < 0)
            goto nomem;
        rc = sqlite3_exec(w->db, b->p, NULL, NULL, NULL);
        if (rc != SQLITE_OK)
            goto refused;
        /* read the columns again: forget the empty cache entry */
        zx_wsq_cache_drop(w);
        if (!(t = zx_wsq_get_table(w, rname)))
            goto dberr;
    }
    static const char *const extra[] = {"source_key", "source_position"};
    for (size_t i = 0; i < 2; i++) {
        if (zx_wsq_find_col(t, extra[i]) >= 0)
            continue;
        int r = zx_wsq_add_column(w, t, extra[i], "TEXT", NULL, err, errlen);
        if (r < 0)
            return NULL;
        if (r > 0) {
            *skip = 1;
            return NULL;
        }
    }
    b->len = 0;
    if (zx_wsq_sql_str(b, "INSERT INTO ") < 0 || zx_wsq_sql_ident(b, rname) < 0 ||
        zx_wsq_sql_str(b, " (rejected_at, pipeline, request_id, value_type, raw_value, reason,"
                       " source_key, source_position) VALUES (?,?,?,'message',?,?,?,?)") < 0)
        goto nomem;
    if ((t->msg_ins = zx_wsq_prep(w, b->p)))
        return t->msg_ins;
    rc = sqlite3_errcode(w->db);
refused:
    if (zx_wsq_data_error(rc) && !sqlite3_get_autocommit(w->db)) {
        *skip = 1;
        return NULL;
    }
dberr:
    zx_seterr(err, errlen, "workspace: rejects table of %s: %s", table, sqlite3_errmsg(w->db));
    return NULL;
nomem:
    zx_seterr(err, errlen, "workspace: out of memory");
    return NULL;
}

int zx_ws_reject_messages(zx_ws *w, const zx_ws_append *a, const zx_frame_reject *r, size_t n,
                          uint64_t *stored, char *err, size_t errlen)
{
    *stored = 0;
    if (!n)
        return 0;
    if (!w->in_txn)
        return zx_seterr(err, errlen, "workspace: no transaction open");
    int skip;
    sqlite3_stmt *st = msg_stmt(w, a->table, &skip, err, errlen);
    if (!st)
        return skip ? 0 : -1;
    char ts[ZX_TS_BUFSZ];
    zx_ts_format(a->ingested_at_us ? a->ingested_at_us : zx_now_us(), ts);
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_text(st, 1, ts, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, a->pipeline ? a->pipeline : "", -1, SQLITE_STATIC);
        if (a->request_id)
            sqlite3_bind_text(st, 3, a->request_id, -1, SQLITE_STATIC);
        bind_bytes(st, 4, r[i].raw ? r[i].raw : "", r[i].raw_len);
        sqlite3_bind_text(st, 5, r[i].reason ? r[i].reason : "", -1, SQLITE_STATIC);
        bind_bytes(st, 6, r[i].key, r[i].key_len);
        sqlite3_bind_text(st, 7, r[i].position ? r[i].position : "", -1, SQLITE_STATIC);
        int rc = zx_wsq_run(st);
        sqlite3_clear_bindings(st);
        if (rc == SQLITE_OK)
            ++*stored;
        else if (!(zx_wsq_data_error(rc) && !sqlite3_get_autocommit(w->db)))
            return zx_seterr(err, errlen, "workspace: cannot record a rejected message for %s: %s",
                             a->table, sqlite3_errmsg(w->db));
    }
    return 0;
}
