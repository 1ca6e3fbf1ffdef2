/*
 * workspace_pg_copy.c — storing a batch's rows in Postgres with COPY ...
 * FROM STDIN (text format), the fast path for appends.
 *
 * The rows of one append are gathered as COPY data (each row's values
 * encoded as they come, then written in column order) and sent in one
 * COPY inside SAVEPOINT zx_copy.  A small append is sent when the batch
 * ends; a large one is streamed: once COPY_CHUNK bytes wait, the COPY is
 * opened and takes each chunk as it fills, so that the server stores rows
 * while the writer encodes the next (sending only at the end left one of
 * the two idle: the initial copy of 1,000,000 rows took the writer's time
 * plus the server's).  While that COPY is open the connection takes no
 * other statement, so rejects met meanwhile are kept and recorded after
 * it.  The whole data stays in memory either way.  The format is binary
 * when every column is of a type whose binary form zx writes (bigint,
 * double precision, boolean, text, timestamptz/timestamp, jsonb/json: all
 * the columns zx creates; integer, smallint, uuid, date, numeric: a
 * mirror's, workspace_pg_binval.c) and, for the last five, every value of
 * the append is in a form zx reads (checked in rows_begin; else the
 * append goes as text and the server parses what it gets, as before).
 * Binary saves the server parsing numbers and timestamps: measured with
 * psql \copy of 1,000,000 rows of the benchmark's shape, 643,000 rows/s
 * against 481,000 for text; of the CDC benchmark's table, 1.45 s against
 * 2.4-2.8 s.  A double in text goes in C99's hexadecimal form to a double
 * precision column (exact, and far cheaper to print than %.17g).  When the table
 * refuses some row (a constraint of a user-made table: SQLSTATE class
 * 23, a value its narrower type refuses: class 22, or a row wider than a
 * page: 54000), the savepoint is
 * rolled back and the rows are sent again one by one, each in its own
 * savepoint: those refused become reject rows ("row not inserted: ...")
 * and the others are stored.  Any other failure (a view of that name, no
 * permission, a lost connection) fails the append, so that the writer
 * holds back this pipeline or retries.
 *
 * It must never: store a value with a NUL byte (Postgres text cannot hold
 * one: refused as a misfit before), or lose the order of the columns.
 */
#include "workers/writer/workspace_pg_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/numfmt.h"
#include "common/util.h"

#define COPY_CHUNK (256u * 1024)

/* The binary encodings; from B_INT4 on, a value may have none (text it
 * does not read: binval.c), which rows_begin finds before choosing binary */
enum { B_INT8 = 0, B_FLOAT8, B_BOOL, B_TEXT, B_TS, B_JSONB, B_INT4, B_INT2, B_UUID, B_DATE,
       B_NUMERIC, B_NONE };

/* The binary encoding of a declared type (format_type's words), B_NONE
 * when zx does not write its binary form. */
static uint8_t btype_of(const char *decl)
{
    static const struct { const char *decl; uint8_t b; } map[] = {
        { "bigint", B_INT8 }, { "double precision", B_FLOAT8 }, { "boolean", B_BOOL },
        { "text", B_TEXT }, { "timestamp with time zone", B_TS },
        { "timestamp without time zone", B_TS }, { "jsonb", B_JSONB }, { "json", B_TEXT },
        { "integer", B_INT4 }, { "smallint", B_INT2 }, { "uuid", B_UUID }, { "date", B_DATE },
        { "numeric", B_NUMERIC },
    };
    for (size_t i = 0; decl && i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(decl, map[i].decl) == 0)
            return map[i].b;
    /* numeric(p,s): numeric_recv applies the column's typmod, as numeric_in */
    if (decl && strncmp(decl, "numeric(", 8) == 0)
        return B_NUMERIC;
    return B_NONE;
}

/* The binary form of o for a fallible encoding (B_INT4 ...): 0, 1 none,
 * -1 out of memory. */
static int put_fallible(uint8_t bt, const zx_fit_out *o, zx_buf *out)
{
    switch (bt) {
    case B_INT4: return zx_wsp_bin_int(o, 4, out);
    case B_INT2: return zx_wsp_bin_int(o, 2, out);
    case B_UUID: return zx_wsp_bin_uuid(o, out);
    case B_DATE: return zx_wsp_bin_date(o, out);
    default: return zx_wsp_bin_numeric(o, out);
    }
}

/* Binary only when every value of the columns whose encoding may have no
 * form for it has one (each fitted as append_row will).  1 yes, 0 no, -1
 * out of memory. */
static int all_binary(wsp *w, ws_table *t, const zx_rowset *rs)
{
    zx_ws *ws = &w->base;
    int any = 0;
    for (uint32_t i = 0; i < w->nslots; i++)
        any |= w->btype[i] >= B_INT4 && w->btype[i] < B_NONE;
    if (!any || !rs)
        return 1;
    zx_buf scratch = { 0 }, fb = { 0 };
    int ret = 1;
    for (uint64_t i = 0; i < rs->ncells && ret == 1; i++) {
        const zx_cell *cell = &rs->cells[i];
        if (cell->col >= rs->ncols || cell->v.type == ZX_T_NULL)
            continue;
        int32_t m = ws->map[cell->col];
        if (m < 0 || !ws->slot[m])
            continue;
        uint8_t bt = w->btype[ws->slot[m] - 1];
        if (bt < B_INT4 || bt == B_NONE)
            continue;
        zx_fit_out o;
        fb.len = 0;
        if (zx_fit_value(t->cols[m].kind, &cell->v, &fb, &o) <= 0)
            continue;   /* a misfit: NULL */
        scratch.len = 0;
        int rc = put_fallible(bt, &o, &scratch);
        ret = rc < 0 ? -1 : rc == 1 ? 0 : 1;
    }
    zx_buf_free(&scratch);
    zx_buf_free(&fb);
    return ret;
}

static void be64(unsigned char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

static void be32(unsigned char *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

/* A reject met while a COPY was open, with its own copy of every string. */
typedef struct wsp_pending {
    struct wsp_pending *next;
    ws_reject r;
} wsp_pending;

static void drop_pending(wsp *w)
{
    while (w->pend) {
        wsp_pending *p = w->pend;
        w->pend = p->next;
        free(p);
    }
    w->pend_tail = &w->pend;
}

int zx_wsp_reject_defer(wsp *w, const ws_reject *r, char *err, size_t errlen)
{
    wsp_pending q = { .r = *r };
    const char **str[] = { &q.r.table, &q.r.rejected_at, &q.r.pipeline, &q.r.request_id,
                           &q.r.column, &q.r.column_type, &q.r.value_type, &q.r.reason,
                           &q.r.position };
    size_t need = sizeof(q) + (r->raw ? r->raw_len + 1 : 0) + (r->key ? r->key_len + 1 : 0);
    for (size_t i = 0; i < sizeof(str) / sizeof(str[0]); i++)
        need += *str[i] ? strlen(*str[i]) + 1 : 0;
    wsp_pending *p = malloc(need);
    if (!p)
        return zx_seterr(err, errlen, "workspace: out of memory");
    char *at = (char *)(p + 1);
    for (size_t i = 0; i < sizeof(str) / sizeof(str[0]); i++) {
        if (!*str[i])
            continue;
        size_t n = strlen(*str[i]) + 1;
        memcpy(at, *str[i], n);
        *str[i] = at;
        at += n;
    }
    if (r->raw) {
        memcpy(at, r->raw, r->raw_len);
        at[r->raw_len] = 0;
        q.r.raw = at;
        at += r->raw_len + 1;
    }
    if (r->key) {
        memcpy(at, r->key, r->key_len);
        at[r->key_len] = 0;
        q.r.key = at;
    }
    *p = q;
    p->next = NULL;
    if (!w->pend_tail)
        w->pend_tail = &w->pend;
    *w->pend_tail = p;
    w->pend_tail = &p->next;
    return 0;
}

/* The rejects kept while the COPY was open, recorded now (w->streaming is
 * 0).  0, or -1 (err set; the rest are dropped). */
static int record_pending(wsp *w, char *err, size_t errlen)
{
    int rc = 0;
    while (w->pend && rc == 0) {
        wsp_pending *p = w->pend;
        w->pend = p->next;
        rc = zx_wsp_reject_row(&w->base, &p->r, err, errlen) < 0 ? -1 : 0;
        free(p);
    }
    drop_pending(w);
    return rc;
}

void zx_wsp_copy_free(wsp *w)
{
    drop_pending(w);
    free(w->btype);
    w->btype = NULL;
    zx_buf_free(&w->copy_cols);
    zx_buf_free(&w->data);
    zx_buf_free(&w->rowbuf);
    free(w->rowoff);
    free(w->off);
    free(w->len);
    w->rowoff = NULL;
    w->off = NULL;
    w->len = NULL;
    w->rows_cap = w->slots_cap = 0;
}

/* 1 when the JSON number at p (up to e) is beyond what numeric holds:
 * more than 131,072 digits before the decimal point, or more than 16,383
 * after it (jsonb keeps numbers as numeric).  *end = after the number. */
static int numeric_overflow(const char *p, const char *e, const char **end)
{
    int64_t lead = 0, frac = 0, exp = 0;
    int seen = 0, neg = 0;
    if (p < e && *p == '-')
        p++;
    for (; p < e && *p >= '0' && *p <= '9'; p++)
        if (seen || *p != '0')
            seen = 1, lead += lead < 1000000;   /* digits before the point */
    if (p < e && *p == '.')
        for (p++; p < e && *p >= '0' && *p <= '9'; p++)
            frac += frac < 1000000;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            neg = *p++ == '-';
        for (; p < e && *p >= '0' && *p <= '9'; p++)
            exp = exp < 100000000 ? exp * 10 + (*p - '0') : exp; /* saturates */
    }
    *end = p;
    if (neg)
        exp = -exp;
    return (lead && lead + exp > 131072) || frac - exp > 16383;
}

int zx_wsp_refuses(const zx_fit_out *o, zx_fit_kind k)
{
    if (o->st != ZX_FIT_S_TEXT)
        return 0;
    if (memchr(o->s, '\0', o->len))
        return 1;
    if (k != ZX_FIT_JSON)
        return 0;
    /* jsonb refuses the escape of NUL, and numbers numeric cannot hold */
    for (const char *p = o->s, *e = o->s + o->len; p < e;) {
        if (*p == '"') {
            for (p++; p < e && *p != '"'; p++) {
                if (*p != '\\')
                    continue;
                if (e - p >= 6 && memcmp(p, "\\u0000", 6) == 0)
                    return 1;
                p++; /* the escaped character */
            }
            p++;
        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            const char *end;
            if (numeric_overflow(p, e, &end))
                return 1;
            p = end > p ? end : p + 1;
        } else {
            p++;
        }
    }
    return 0;
}

int zx_wsp_rows_begin(zx_ws *ws, ws_table *t, const uint32_t *cols, uint32_t n,
                      const zx_rowset *rs, char *err, size_t errlen)
{
    wsp *w = WSP(ws);
    if (n > w->slots_cap) {
        uint32_t cap = n + 16;
        int64_t *o = realloc(w->off, cap * sizeof(*o));
        if (o)
            w->off = o;
        size_t *l = realloc(w->len, cap * sizeof(*l));
        if (l)
            w->len = l;
        uint8_t *bt = realloc(w->btype, cap);
        if (bt)
            w->btype = bt;
        if (!o || !l || !bt)
            return zx_seterr(err, errlen, "workspace: out of memory");
        w->slots_cap = cap;
    }
    w->binary = 1;
    for (uint32_t i = 0; i < n; i++) {
        w->btype[i] = btype_of(t->cols[cols[i]].decl);
        if (w->btype[i] == B_NONE)
            w->binary = 0;
    }
    w->nslots = n;
    if (w->binary) {
        int all = all_binary(w, t, rs);
        if (all < 0)
            return zx_seterr(err, errlen, "workspace: out of memory");
        w->binary = all;
    }
    w->copy_cols.len = 0;
    for (uint32_t i = 0; i < n; i++)
        if (ws_sql_str(&w->copy_cols, i ? ", " : "") < 0 ||
            zx_wsp_ident(&w->copy_cols, t->cols[cols[i]].name) < 0)
            return zx_seterr(err, errlen, "workspace: out of memory");
    w->cur = t;
    w->nrows = 0;
    w->data.len = 0;
    w->rowbuf.len = 0;
    w->streaming = 0;
    w->sent = 0;
    w->unencodable = 0;
    drop_pending(w);
    for (uint32_t i = 0; i < n; i++)
        w->off[i] = -1;
    return 0;
}

/* Append s (n bytes) escaped for COPY text format. */
static int put_escaped(zx_buf *b, const char *s, size_t n)
{
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        char e;
        switch (s[i]) {
        case '\\': e = '\\'; break;
        case '\t': e = 't'; break;
        case '\n': e = 'n'; break;
        case '\r': e = 'r'; break;
        default: continue;
        }
        char esc[2] = { '\\', e };
        if (zx_buf_put(b, s + from, i - from) < 0 || zx_buf_put(b, esc, 2) < 0)
            return -1;
        from = i + 1;
    }
    return zx_buf_put(b, s + from, n - from);
}

int zx_wsp_put(zx_ws *ws, uint32_t slot, const zx_fit_out *o, const zx_buf *buf)
{
    (void)buf;
    wsp *w = WSP(ws);
    if (slot >= w->nslots)
        return 0;
    if (o->st == ZX_FIT_S_NULL) {
        w->off[slot] = -1;
        return 0;
    }
    size_t at = w->rowbuf.len;
    char num[40];
    int rc;
    if (w->binary) {
        unsigned char b[9];
        size_t n = 8;
        switch (w->btype[slot]) {
        case B_INT8: be64(b, (uint64_t)(o->st == ZX_FIT_S_REAL ? (int64_t)o->d : o->i)); break;
        case B_FLOAT8: {
            double d = o->st == ZX_FIT_S_INT ? (double)o->i : o->d;
            uint64_t u;
            memcpy(&u, &d, sizeof(u));
            be64(b, u);
            break;
        }
        case B_BOOL: b[0] = o->i != 0; n = 1; break;
        case B_TS: /* microseconds since 2000-01-01, Postgres' epoch; the
                      infinities are Postgres' own (fit.c) */
            be64(b, o->i == INT64_MAX || o->i == INT64_MIN ? (uint64_t)o->i
                                                           : (uint64_t)(o->i - 946684800000000LL));
            break;
        case B_JSONB: b[0] = 1; n = 1; break; /* version, then the text */
        case B_TEXT: n = 0; break;
        default: {
            /* rows_begin checked every value has a form: one without is
             * a bug, stored as NULL and said at the row's end */
            int rc2 = put_fallible(w->btype[slot], o, &w->rowbuf);
            if (rc2 < 0)
                return -1;
            if (rc2 == 1) {
                w->rowbuf.len = at;
                w->off[slot] = -1;
                w->unencodable = 1;
                return 0;
            }
            w->off[slot] = (int64_t)at;
            w->len[slot] = w->rowbuf.len - at;
            return 0;
        }
        }
        rc = zx_buf_put(&w->rowbuf, (const char *)b, n);
        if (rc == 0 && (w->btype[slot] == B_TEXT || w->btype[slot] == B_JSONB))
            rc = zx_buf_put(&w->rowbuf, o->s, o->len);
        if (rc < 0)
            return -1;
        w->off[slot] = (int64_t)at;
        w->len[slot] = w->rowbuf.len - at;
        return 0;
    }
    switch (o->st) {
    case ZX_FIT_S_INT:
        rc = zx_buf_put(&w->rowbuf, num, zx_fmt_i64(num, o->i));
        break;
    case ZX_FIT_S_REAL: {
        /* a double precision column reads C99's exact hexadecimal form
         * (float8in is strtod), much cheaper to write than %.17g; any
         * other column (numeric, real, text) gets the decimal text */
        size_t n = w->btype[slot] == B_FLOAT8 ? zx_fmt_hexdouble(num, o->d) : 0;
        if (!n)
            n = (size_t)snprintf(num, sizeof(num), "%.17g", o->d);
        rc = zx_buf_put(&w->rowbuf, num, n);
        break;
    }
    default:
        rc = put_escaped(&w->rowbuf, o->s, o->len);
        break;
    }
    if (rc < 0)
        return -1;
    w->off[slot] = (int64_t)at;
    w->len[slot] = w->rowbuf.len - at;
    return 0;
}

/* Opens COPY qname (...) FROM STDIN and sends the binary header.  0, 1
 * when it is open but the header could not be sent (copy_finish says
 * why), or -1 not open (w->msg etc. set; the transaction is then
 * aborted). */
static int copy_start(wsp *w, const char *qname)
{
    zx_buf *q = &w->sql;
    q->len = 0;
    if (ws_sql_str(q, "COPY ") < 0 || ws_sql_str(q, qname) < 0 || ws_sql_str(q, " (") < 0 ||
        zx_buf_put(q, w->copy_cols.p ? w->copy_cols.p : "", w->copy_cols.len) < 0 ||
        ws_sql_str(q, w->binary ? ") FROM STDIN (FORMAT binary)" : ") FROM STDIN") < 0) {
        snprintf(w->msg, sizeof(w->msg), "out of memory");
        w->permanent = 0;
        return -1;
    }
    if (!w->conn || w->broken) {
        zx_wsp_fail(w, NULL);
        return -1;
    }
    PGresult *r = PQexec(w->conn, q->p);
    if (!r || PQresultStatus(r) != PGRES_COPY_IN) {
        zx_wsp_fail(w, r);
        PQclear(r);
        return -1;
    }
    PQclear(r);
    /* binary: the signature, flags and header extension length before the
     * rows, -1 as the field count after them */
    static const char head[19] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0";
    return w->binary && PQputCopyData(w->conn, head, sizeof(head)) != 1 ? 1 : 0;
}

/* data[from .. to) into the open COPY.  0, or -1 when a send failed (the
 * server ended the COPY, or the connection broke: copy_finish says). */
static int copy_send(wsp *w, size_t from, size_t to)
{
    for (size_t at = from; at < to;) {
        size_t n = to - at < COPY_CHUNK ? to - at : COPY_CHUNK;
        if (PQputCopyData(w->conn, w->data.p + at, (int)n) != 1)
            return -1;
        at += n;
    }
    return 0;
}

/* Ends the open COPY (ok: every send went) and reads its outcome.  0
 * stored, -1 not (w->msg etc. set; the transaction is then aborted). */
static int copy_finish(wsp *w, int ok)
{
    static const char tail[2] = "\377\377";
    if (ok && w->binary)
        ok = PQputCopyData(w->conn, tail, sizeof(tail)) == 1;
    if (PQputCopyEnd(w->conn, ok ? NULL : "zx: sending the rows failed") != 1)
        ok = 0;
    int stored = 1;
    PGresult *r;
    while ((r = PQgetResult(w->conn)) != NULL) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK && stored) {
            zx_wsp_fail(w, r);
            stored = 0;
        }
        PQclear(r);
    }
    if (!ok && stored) {
        zx_wsp_fail(w, NULL);
        stored = 0;
    }
    return stored ? 0 : -1;
}

/* One COPY of data[from .. to).  0 stored, -1 failed (w->msg etc. set;
 * the transaction is then aborted: roll back to a savepoint). */
static int copy_range(wsp *w, const char *qname, size_t from, size_t to)
{
    int st = copy_start(w, qname);
    if (st < 0)
        return -1;
    return copy_finish(w, st == 0 && copy_send(w, from, to) == 0);
}

/* Called after each row: once COPY_CHUNK bytes wait, they go into the
 * COPY, opened (inside SAVEPOINT zx_copy) for the first of them.  A
 * failure here only changes w->streaming; rows_end finds out what it
 * was. */
static void stream(wsp *w)
{
    if (w->streaming >= 2 || w->data.len - w->sent < COPY_CHUNK || !w->cur || !w->cur->be ||
        w->nslots == 0)
        return;
    if (w->streaming == 0) {
        /* the savepoint before anything: rows_end rolls back to it */
        if (zx_wsp_run(w, "SAVEPOINT zx_copy") < 0)
            return;     /* not streaming: rows_end meets the failure again */
        int st = copy_start(w, ((wsp_table *)w->cur->be)->qname);
        w->streaming = st < 0 ? 3 : st == 0 ? 1 : 2;
        if (w->streaming != 1)
            return;
    }
    if (copy_send(w, w->sent, w->data.len) < 0)
        w->streaming = 2;
    w->sent = w->data.len;
}

int zx_wsp_row_end(zx_ws *ws, char *why, size_t whylen, char *err, size_t errlen)
{
    wsp *w = WSP(ws);
    if (w->unencodable) {
        /* rows_begin's check said every value had a binary form */
        w->unencodable = 0;
        w->rowbuf.len = 0;
        for (uint32_t i = 0; i < w->nslots; i++)
            w->off[i] = -1;
        snprintf(why, whylen, "a value has no binary form although it was checked (a bug)");
        return 1;
    }
    if (w->nrows + 2 > w->rows_cap) {
        size_t cap = w->rows_cap ? 2 * w->rows_cap : 1024;
        size_t *r = realloc(w->rowoff, cap * sizeof(*r));
        if (!r)
            return zx_seterr(err, errlen, "workspace: out of memory");
        w->rowoff = r;
        w->rows_cap = cap;
    }
    w->rowoff[w->nrows] = w->data.len;
    if (w->binary) {
        /* int16 field count, then per field int32 length (-1 NULL) and
         * the bytes */
        unsigned char h[4];
        h[0] = (unsigned char)(w->nslots >> 8);
        h[1] = (unsigned char)w->nslots;
        if (zx_buf_put(&w->data, (const char *)h, 2) < 0)
            return zx_seterr(err, errlen, "workspace: out of memory");
        for (uint32_t i = 0; i < w->nslots; i++) {
            int null = w->off[i] < 0;
            if (!null && w->len[i] > INT32_MAX)
                return zx_seterr(err, errlen, "workspace: a value over 2 GiB");
            be32(h, null ? 0xffffffffu : (uint32_t)w->len[i]);
            if (zx_buf_put(&w->data, (const char *)h, 4) < 0 ||
                (!null && zx_buf_put(&w->data, w->rowbuf.p + w->off[i], w->len[i]) < 0))
                return zx_seterr(err, errlen, "workspace: out of memory");
            w->off[i] = -1;
        }
        w->rowbuf.len = 0;
        w->nrows++;
        w->rowoff[w->nrows] = w->data.len;
        stream(w);
        return 0;
    }
    for (uint32_t i = 0; i < w->nslots; i++) {
        int bad = (i && zx_buf_put(&w->data, "\t", 1) < 0) ||
                  (w->off[i] < 0 ? zx_buf_put(&w->data, "\\N", 2) < 0
                                 : zx_buf_put(&w->data, w->rowbuf.p + w->off[i],
                                              w->len[i]) < 0);
        if (bad)
            return zx_seterr(err, errlen, "workspace: out of memory");
        w->off[i] = -1;
    }
    if (zx_buf_put(&w->data, "\n", 1) < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    w->rowbuf.len = 0;
    w->nrows++;
    w->rowoff[w->nrows] = w->data.len;
    stream(w);
    return 0;
}

void zx_wsp_rows_abort(zx_ws *ws)
{
    wsp *w = WSP(ws);
    if (w->streaming == 1 || w->streaming == 2) {
        /* end the COPY without storing it; the caller rolls back (the
         * frame's savepoint or the transaction), which undoes zx_copy */
        if (w->conn && PQputCopyEnd(w->conn, "zx: the rows were abandoned") == 1) {
            PGresult *r;
            while ((r = PQgetResult(w->conn)) != NULL)
                PQclear(r);
        }
        if (!w->conn || PQstatus(w->conn) != CONNECTION_OK)
            w->broken = 1;
    }
    w->streaming = 0;
    w->sent = 0;
    drop_pending(w);
    w->cur = NULL;
    w->nrows = 0;
    w->data.len = 0;
    w->rowbuf.len = 0;
    /* a large batch's buffers are not kept for the next one */
    if (w->data.cap > (64u << 20)) {
        zx_buf_free(&w->data);
    }
}

/* A failure the rows themselves caused: worth sending them one by one. */
static int row_level(const wsp *w)
{
    /* 22: a value the column's type refuses; 23: a constraint; 54000: a
     * row wider than a page (about 1,000 fixed-width columns) */
    return !w->broken && (strncmp(w->sqlstate, "22", 2) == 0 ||
                          strncmp(w->sqlstate, "23", 2) == 0 ||
                          strcmp(w->sqlstate, "54000") == 0);
}

int zx_wsp_rows_end(zx_ws *ws, ws_table *t, const zx_ws_append *a, const zx_rowset *rs,
                    zx_ws_result *res, char *err, size_t errlen)
{
    wsp *w = WSP(ws);
    wsp_table *tb = t->be;
    if (w->nrows == 0 || !tb) {
        zx_wsp_rows_abort(ws);
        return 0;
    }
    if (w->nslots == 0) { /* rows of nulls only: COPY needs a column */
        w->sql.len = 0;
        if (ws_sql_str(&w->sql, "INSERT INTO ") < 0 || ws_sql_str(&w->sql, tb->qname) < 0 ||
            ws_sql_str(&w->sql, " DEFAULT VALUES") < 0)
            goto fail;
        for (size_t r = 0; r < w->nrows; r++)
            if (zx_wsp_run(w, w->sql.p) < 0)
                goto fail;
        zx_wsp_rows_abort(ws);
        return 0;
    }
    int stored;
    if (w->streaming) {
        /* the rest into the open COPY, then its outcome */
        stored = w->streaming == 3 ? -1
                 : copy_finish(w, w->streaming == 1 && copy_send(w, w->sent, w->data.len) == 0);
        w->streaming = 0;
    } else {
        if (zx_wsp_run(w, "SAVEPOINT zx_copy") < 0)
            goto fail;
        stored = copy_range(w, tb->qname, 0, w->data.len);
    }
    if (stored == 0) {
        if (zx_wsp_run(w, "RELEASE SAVEPOINT zx_copy") < 0 || record_pending(w, err, errlen) < 0)
            goto fail;
        zx_wsp_rows_abort(ws);
        return 0;
    }
    if (!row_level(w))
        goto fail;
    if (zx_wsp_run(w, "ROLLBACK TO SAVEPOINT zx_copy; RELEASE SAVEPOINT zx_copy") < 0)
        goto fail;
    /* one by one: the refused rows become rejects */
    for (size_t r = 0; r < w->nrows; r++) {
        if (zx_wsp_run(w, "SAVEPOINT zx_copy") < 0)
            goto fail;
        if (copy_range(w, tb->qname, w->rowoff[r], w->rowoff[r + 1]) == 0) {
            if (zx_wsp_run(w, "RELEASE SAVEPOINT zx_copy") < 0)
                goto fail;
            continue;
        }
        if (!row_level(w))
            goto fail;
        char why[sizeof(w->msg)];
        memcpy(why, w->msg, sizeof(why));
        if (zx_wsp_run(w, "ROLLBACK TO SAVEPOINT zx_copy; RELEASE SAVEPOINT zx_copy") < 0)
            goto fail;
        if (ws_reject_refused_row(ws, t, a, rs, (uint32_t)r, why, err, errlen) < 0) {
            zx_wsp_rows_abort(ws);
            return -1;
        }
        if (res->rows)
            res->rows--;
        res->rejects++;
    }
    if (record_pending(w, err, errlen) < 0) {
        zx_wsp_rows_abort(ws);
        return -1;
    }
    zx_wsp_rows_abort(ws);
    return 0;
fail:
    zx_seterr(err, errlen, "workspace: cannot store rows in %s: %s", t->name, w->msg);
    zx_wsp_rows_abort(ws);
    return -1;
}
