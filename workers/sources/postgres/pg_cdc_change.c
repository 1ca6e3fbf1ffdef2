/*
 * pg_cdc_change.c — one decoded pgoutput change to one row of a changes
 * frame (pg_cdc_int.h; the row's columns: proto/frame.h, "Changes
 * frames").  Values go through pg_values.h by the column's type OID, so
 * numeric stays text and timestamps are instants.
 */
#include "workers/sources/postgres/pg_cdc_int.h"

#include <stdio.h>
#include <string.h>

#include "common/timefmt.h"
#include "common/util.h"
#include "workers/sources/postgres/pg_values.h"

static int add_text(zx_rowset *rs, int64_t col, const char *s, size_t n, zx_type type)
{
    char *c = zx_rowset_strdup(rs, s, n);
    if (!c || col < 0)
        return -1;
    zx_value v = { .type = (uint8_t)type, .len = (uint32_t)n, .s = c };
    return zx_rowset_add(rs, (uint32_t)col, &v);
}

static int64_t column(zx_rowset *rs, const char *name, zx_type t)
{
    return zx_rowset_column(rs, name, strlen(name), t);
}

/* The reserved cells every change has. */
static int reserved(zx_rowset *rs, const char *op, pgo_lsn lsn, int64_t commit_us, uint32_t xid)
{
    char text[PGO_LSN_LEN];
    int n = pgo_lsn_format(lsn, text, sizeof(text));
    if (n < 0 || add_text(rs, column(rs, ZX_CH_OP, ZX_T_TEXT), op, strlen(op), ZX_T_TEXT) < 0 ||
        add_text(rs, column(rs, ZX_CH_LSN, ZX_T_TEXT), text, (size_t)n, ZX_T_TEXT) < 0)
        return -1;
    if (commit_us) {
        char ts[ZX_TS_BUFSZ];
        size_t tl = zx_ts_format(commit_us, ts);
        char *c = zx_rowset_strdup(rs, ts, tl);
        int64_t col = column(rs, ZX_CH_COMMIT_TIME, ZX_T_TIMESTAMP);
        zx_value v = { .type = ZX_T_TIMESTAMP, .len = (uint32_t)tl, .s = c, .u.i = commit_us };
        if (!c || col < 0 || zx_rowset_add(rs, (uint32_t)col, &v) < 0)
            return -1;
    }
    if (xid) {
        int64_t col = column(rs, ZX_CH_XID, ZX_T_INT);
        zx_value v = { .type = ZX_T_INT, .u.i = xid };
        if (col < 0 || zx_rowset_add(rs, (uint32_t)col, &v) < 0)
            return -1;
    }
    return 0;
}

static int is_key(const pgcdc_table *t, const char *name)
{
    for (uint32_t k = 0; k < t->nkeys; k++)
        if (strcmp(t->keys[k], name) == 0)
            return 1;
    return 0;
}

/* Column i's value (kind 't' or 'b') into column `name` of rs. */
static int add_value(zx_rowset *rs, const char *name, uint32_t oid, const pgo_value *pv)
{
    zx_value v;
    if (zx_pgv_from_text(oid, (const char *)pv->data, pv->len, rs, &v) < 0)
        return -1;
    int64_t col = column(rs, name, ZX_T_NULL);
    return col < 0 ? -1 : zx_rowset_add(rs, (uint32_t)col, &v);
}

/* Append name to the JSON array text being built in buf (escaped). */
static int json_name(char *buf, size_t cap, size_t *len, const char *name)
{
    size_t n = *len;
    if (n + 2 >= cap)
        return -1;
    if (n > 1)
        buf[n++] = ',';
    buf[n++] = '"';
    for (const unsigned char *s = (const unsigned char *)name; *s; s++) {
        if (n + 8 >= cap)
            return -1;
        if (*s == '"' || *s == '\\') {
            buf[n++] = '\\';
            buf[n++] = (char)*s;
        } else if (*s < 0x20) {
            n += (size_t)snprintf(buf + n, cap - n, "\\u%04x", *s);
        } else {
            buf[n++] = (char)*s;
        }
    }
    buf[n++] = '"';
    *len = n;
    return 0;
}

int pgcdc_change_row(pgcdc_table *t, const pgo_msg *m, pgo_lsn lsn, int64_t commit_us,
                     uint32_t xid, char *err, size_t errlen)
{
    zx_rowset *rs = &t->rs;
    const pgo_rel *rel = m->rel;
    const char *op = m->type == PGO_INSERT ? "insert" : m->type == PGO_UPDATE ? "update"
                                                                                 : "delete";
    const pgo_tuple *tup = m->type == PGO_DELETE ? &m->u.change.old_tuple
                                                 : &m->u.change.new_tuple;
    zx_rowset_mark mk;
    zx_rowset_save(rs, &mk);
    if (zx_rowset_begin_row(rs) < 0 || reserved(rs, op, lsn, commit_us, xid) < 0)
        goto nomem;
    /* the unchanged TOAST values' names, as a JSON array (a name's byte
     * takes at most 6 escaped, plus quotes and a comma) */
    char *unch = NULL;
    size_t ulen = 1, ucap = 3;
    for (uint16_t i = 0; m->type == PGO_UPDATE && i < rel->ncols && i < tup->ncols; i++)
        if (tup->vals[i].kind == PGO_UNCHANGED)
            ucap += 6 * strlen(rel->cols[i].name) + 12;
    for (uint16_t i = 0; i < rel->ncols && i < tup->ncols; i++) {
        const pgo_col *c = &rel->cols[i];
        const pgo_value *v = &tup->vals[i];
        if (m->type == PGO_DELETE && !is_key(t, c->name))
            continue;
        if (v->kind == PGO_NULL) {
            /* no cell, but the column: the frame must say this change
             * sets it to NULL (a column absent from the frame would be
             * left as stored, like an unchanged value) */
            if (column(rs, c->name, ZX_T_NULL) < 0)
                goto nomem;
            continue;
        }
        if (v->kind == PGO_UNCHANGED) {
            if (!unch) {
                if (!(unch = zx_rowset_alloc(rs, ucap)))
                    goto nomem;
                unch[0] = '[';
            }
            if (json_name(unch, ucap, &ulen, c->name) < 0)
                goto nomem;
            continue;
        }
        if (add_value(rs, c->name, c->type_oid, v) < 0)
            goto nomem;
    }
    if (unch) {
        unch[ulen++] = ']';
        unch[ulen] = '\0';
        int64_t col = column(rs, ZX_CH_UNCHANGED, ZX_T_JSON);
        zx_value v = { .type = ZX_T_JSON, .len = (uint32_t)ulen, .s = unch };
        if (col < 0 || zx_rowset_add(rs, (uint32_t)col, &v) < 0)
            goto nomem;
    }
    /* an update that moved the key: the old key's values */
    if (m->type == PGO_UPDATE && m->u.change.old_kind) {
        const pgo_tuple *old = &m->u.change.old_tuple;
        int moved = 0;
        for (uint16_t i = 0; i < rel->ncols && i < old->ncols && i < tup->ncols; i++) {
            const pgo_value *a = &old->vals[i], *b = &tup->vals[i];
            if (!is_key(t, rel->cols[i].name) || b->kind == PGO_UNCHANGED)
                continue;
            moved |= a->kind != b->kind || a->len != b->len ||
                     (a->len && memcmp(a->data, b->data, a->len) != 0);
        }
        for (uint16_t i = 0; moved && i < rel->ncols && i < old->ncols; i++) {
            const pgo_value *a = &old->vals[i];
            if (!is_key(t, rel->cols[i].name) || (a->kind != PGO_TEXT && a->kind != PGO_BINARY))
                continue;
            char name[PGO_MAX_NAME + sizeof(ZX_CH_OLD_PREFIX) + 1];
            snprintf(name, sizeof(name), "%s%s", ZX_CH_OLD_PREFIX, rel->cols[i].name);
            if (add_value(rs, name, rel->cols[i].type_oid, a) < 0)
                goto nomem;
        }
    }
    zx_rowset_end_row(rs);
    return 0;
nomem:
    if (rs->row_open)
        zx_rowset_abort_row(rs);
    zx_rowset_truncate(rs, &mk);
    return zx_seterr(err, errlen, "out of memory building a change of %s", t->qname);
}

int pgcdc_truncate_row(pgcdc_table *t, pgo_lsn lsn, int64_t commit_us, uint32_t xid)
{
    zx_rowset_mark mk;
    zx_rowset_save(&t->rs, &mk);
    if (zx_rowset_begin_row(&t->rs) < 0)
        return -1;
    if (reserved(&t->rs, "truncate", lsn, commit_us, xid) < 0) {
        zx_rowset_abort_row(&t->rs);
        zx_rowset_truncate(&t->rs, &mk);
        return -1;
    }
    zx_rowset_end_row(&t->rs);
    return 0;
}

int pgcdc_repair_row(pgcdc_table *t, const PGresult *r, const char *const *key, pgo_lsn lsn,
                     char *err, size_t errlen)
{
    zx_rowset *rs = &t->rs;
    int found = PQntuples(r) > 0, nf = PQnfields(r);
    zx_rowset_mark mk;
    zx_rowset_save(rs, &mk);
    if (zx_rowset_begin_row(rs) < 0 || reserved(rs, found ? "update" : "delete", lsn, 0, 0) < 0)
        goto nomem;
    for (int i = 0; i < nf; i++) {
        const char *name = PQfname(r, i);
        int k = -1;
        for (uint32_t j = 0; j < t->nkeys; j++)
            if (!strcmp(t->keys[j], name))
                k = (int)j;
        if (!found && k < 0)
            continue;           /* a delete carries the key only */
        if (found && PQgetisnull(r, 0, i)) {
            if (column(rs, name, ZX_T_NULL) < 0)
                goto nomem;
            continue;
        }
        const char *s = found ? PQgetvalue(r, 0, i) : key[k];
        size_t n = found ? (size_t)PQgetlength(r, 0, i) : strlen(s);
        zx_value v;
        int64_t col;
        if (zx_pgv_from_text((uint32_t)PQftype(r, i), s, n, rs, &v) < 0 ||
            (col = column(rs, name, ZX_T_NULL)) < 0 || zx_rowset_add(rs, (uint32_t)col, &v) < 0)
            goto nomem;
    }
    zx_rowset_end_row(rs);
    return 0;
nomem:
    if (rs->row_open)
        zx_rowset_abort_row(rs);
    zx_rowset_truncate(rs, &mk);
    return zx_seterr(err, errlen, "out of memory building a repair of %s", t->qname);
}
