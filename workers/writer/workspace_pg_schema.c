/*
 * workspace_pg_schema.c — what the Postgres backend knows of tables:
 * identifiers, declared types, reading a table's columns (pg_attribute),
 * CREATE TABLE and ALTER TABLE ADD COLUMN, and the rejects table.
 *
 * Postgres' dialect: zx creates BIGINT, DOUBLE PRECISION, BOOLEAN, TEXT,
 * TIMESTAMPTZ and JSONB columns; names are compared exactly (quoted
 * identifiers are case-sensitive there); an identifier over 63 bytes (a
 * long table name plus "__rejects") is shortened the same way every time
 * (zx_wsp_ident_name), where Postgres would silently truncate it.
 *
 * A DDL statement or a reject that the database refuses runs inside its
 * own savepoint, so that the refusal does not abort the transaction (in
 * Postgres any error does).
 *
 * It must never: build SQL with an unquoted identifier or an inlined value.
 */
#include "workers/writer/workspace_pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/numfmt.h"
#include "common/util.h"

void zx_wsp_ident_name(const char *name, char out[WSP_IDENT_MAX + 1])
{
    size_t n = strlen(name);
    if (n <= WSP_IDENT_MAX) {
        memcpy(out, name, n + 1);
        return;
    }
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)name[i]) * 16777619u;
    size_t keep = 54;
    while (keep && ((unsigned char)name[keep] & 0xc0) == 0x80)
        keep--; /* never cut a UTF-8 sequence */
    memcpy(out, name, keep);
    snprintf(out + keep, WSP_IDENT_MAX + 1 - keep, "_%08x", h);
}

int32_t zx_wsp_lock_key(const char *schema)
{
    uint32_t h = 2166136261u; /* FNV-1a, folded to a positive int32 */
    for (const unsigned char *p = (const unsigned char *)schema; *p; p++)
        h = (h ^ *p) * 16777619u;
    return (int32_t)(h & 0x7fffffff);
}

int zx_wsp_ident(zx_buf *b, const char *name)
{
    char id[WSP_IDENT_MAX + 1];
    zx_wsp_ident_name(name, id);
    return ws_sql_ident(b, id);
}

int zx_wsp_qualified(wsp *w, zx_buf *b, const char *name)
{
    return ws_sql_str(b, w->qschema) < 0 || ws_sql_str(b, ".") < 0 || zx_wsp_ident(b, name) < 0
               ? -1 : 0;
}

int zx_wsp_name_cmp(const char *a, const char *b)
{
    char x[WSP_IDENT_MAX + 1], y[WSP_IDENT_MAX + 1];
    zx_wsp_ident_name(a, x);
    zx_wsp_ident_name(b, y);
    return strcmp(x, y);
}

const char *zx_wsp_decl_for_type(zx_type t)
{
    switch (t) {
    case ZX_T_INT: return "bigint";
    case ZX_T_REAL: return "double precision";
    case ZX_T_BOOL: return "boolean";
    case ZX_T_TEXT: return "text";
    case ZX_T_TIMESTAMP: return "timestamp with time zone";
    case ZX_T_JSON: return "jsonb";
    default: return NULL;
    }
}

/* The kind of a type as format_type() writes it.  Types of narrower range
 * than the kind's (integer, real, varchar(n), numeric) are "any": their
 * values are sent as they are and a value they refuse costs its row. */
zx_fit_kind zx_wsp_kind_from_decl(const char *decl)
{
    static const struct { const char *decl; zx_fit_kind kind; } map[] = {
        { "bigint", ZX_FIT_INTEGER },
        { "double precision", ZX_FIT_REAL },
        { "boolean", ZX_FIT_BOOLEAN },
        { "text", ZX_FIT_TEXT },
        { "timestamp with time zone", ZX_FIT_TIMESTAMP },
        { "timestamp without time zone", ZX_FIT_TIMESTAMP },
        { "jsonb", ZX_FIT_JSON },
        { "json", ZX_FIT_JSON },
    };
    if (!decl)
        return ZX_FIT_ANY;
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strcasecmp(decl, map[i].decl) == 0)
            return map[i].kind;
    return ZX_FIT_ANY;
}

/* A source's declared type on Postgres: the same type when it is one of
 * the built-in types below (with its modifiers: numeric(10,2),
 * varchar(20), timestamp(3)..., and arrays of them), else NULL (an enum,
 * a domain or an extension's type: the values' own type, usually text). */
const char *zx_wsp_decl_for_source(const char *src)
{
    static const char *const builtin[] = {
        "bigint", "integer", "smallint", "numeric", "real", "double precision", "boolean",
        "text", "character varying", "character", "bytea", "uuid", "date",
        "time without time zone", "time with time zone", "timestamp without time zone",
        "timestamp with time zone", "interval", "json", "jsonb", "inet", "cidr", "macaddr",
        "money", "oid", "xml", "bit", "bit varying", "point",
    };
    if (!src)
        return NULL;
    size_t n = strlen(src);
    while (n >= 2 && strncmp(src + n - 2, "[]", 2) == 0)
        n -= 2;
    for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++) {
        size_t k = strlen(builtin[i]);
        if (n >= k && strncmp(src, builtin[i], k) == 0 &&
            (n == k || src[k] == '(' || src[k] == ' '))
            return src;
    }
    /* timestamp(3) with time zone and the like */
    if (strncmp(src, "timestamp(", 10) == 0 || strncmp(src, "time(", 5) == 0)
        return src;
    return NULL;
}

void zx_wsp_param(zx_buf *b, uint32_t i)
{
    char p[16];
    snprintf(p, sizeof(p), "$%u", i + 1);
    zx_buf_put(b, p, strlen(p));
}

int zx_wsp_array_param(zx_buf *b, uint32_t i, const char *decl)
{
    char p[16];
    snprintf(p, sizeof(p), "$%u::", i + 1);
    return zx_buf_put(b, p, strlen(p)) < 0 || zx_buf_put(b, decl, strlen(decl)) < 0 ||
           zx_buf_put(b, "[]", 2) < 0 ? -1 : 0;
}

int zx_wsp_array_add(zx_buf *arr, const zx_fit_out *o)
{
    if (!o)
        return zx_buf_put(arr, arr->len ? "}" : "{}", arr->len ? 1 : 2);
    if (zx_buf_put(arr, arr->len ? "," : "{", 1) < 0)
        return -1;
    char num[40];
    const char *s = num;
    size_t n;
    switch (o->st) {
    case ZX_FIT_S_INT: n = zx_fmt_i64(num, o->i); break;
    case ZX_FIT_S_REAL: n = (size_t)snprintf(num, sizeof(num), "%.17g", o->d); break;
    case ZX_FIT_S_TEXT: s = o->s; n = o->len; break;
    default: return zx_buf_put(arr, "NULL", 4);
    }
    /* the value as p_exec_row would send it, quoted */
    if (zx_buf_reserve(arr, 2 * n + 2) < 0)
        return -1;
    char *d = arr->p + arr->len;
    *d++ = '"';
    for (size_t k = 0; k < n; k++) {
        if (s[k] == '"' || s[k] == '\\')
            *d++ = '\\';
        *d++ = s[k];
    }
    *d++ = '"';
    arr->len = (size_t)(d - arr->p);
    return 0;
}

static wsp_table *be_of(wsp *w, ws_table *t)
{
    if (t->be)
        return t->be;
    wsp_table *b = calloc(1, sizeof(*b));
    zx_buf q = { 0 };
    if (!b || zx_wsp_qualified(w, &q, t->name) < 0) {
        free(b);
        zx_buf_free(&q);
        return NULL;
    }
    b->qname = q.p;
    t->be = b;
    return b;
}

int zx_wsp_table_sql(zx_ws *ws, ws_table *t, zx_buf *b)
{
    wsp_table *tb = be_of(WSP(ws), t);
    return tb ? ws_sql_str(b, tb->qname) : -1;
}

void zx_wsp_table_free(ws_table *t)
{
    wsp_table *b = t->be;
    if (!b)
        return;
    free(b->qname);
    free(b->rej_sql);
    free(b);
    t->be = NULL;
}

int zx_wsp_load_table(zx_ws *ws, ws_table *t)
{
    wsp *w = WSP(ws);
    wsp_table *b = be_of(w, t);
    if (!b)
        return -1;
    const char *pv[1] = { b->qname };
    PGresult *r = zx_wsp_exec(w, "SELECT a.attname, format_type(a.atttypid, a.atttypmod)"
                                 " FROM pg_attribute a WHERE a.attrelid = to_regclass($1)"
                                 " AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                              1, pv);
    if (!r)
        return -1;
    int rc = 0;
    for (int i = 0; i < PQntuples(r) && rc == 0; i++)
        rc = ws_table_add_col(ws, t, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1));
    PQclear(r);
    return rc;
}

int zx_wsp_guarded(wsp *w, const char *sql, int n, const char *const *params)
{
    if (zx_wsp_run(w, "SAVEPOINT zx_ddl") < 0)
        return -1;
    PGresult *r = zx_wsp_exec(w, sql, n, params);
    if (r) {
        const char *t = PQcmdTuples(r);
        w->last_changed = t && *t ? strtoull(t, NULL, 10) : 0;
        PQclear(r);
        return zx_wsp_run(w, "RELEASE SAVEPOINT zx_ddl") < 0 ? -1 : 0;
    }
    if (!zx_wsp_refusal(w))
        return -1;
    char keep[sizeof(w->msg)], state[sizeof(w->sqlstate)];
    memcpy(keep, w->msg, sizeof(keep));
    memcpy(state, w->sqlstate, sizeof(state));
    if (zx_wsp_run(w, "ROLLBACK TO SAVEPOINT zx_ddl; RELEASE SAVEPOINT zx_ddl") < 0)
        return -1;
    memcpy(w->msg, keep, sizeof(keep));
    memcpy(w->sqlstate, state, sizeof(state));
    w->permanent = 1;
    return 1;
}

/* ---- schema changes in a shared workspace ----------------------------- */

int zx_wsp_ddl_lock(wsp *w, const char *qname)
{
    if (!w->instance)
        return 0;
    char k1[16];
    snprintf(k1, sizeof(k1), "%d", WSP_DDL_CLASS);
    const char *pv[2] = { k1, qname };
    PGresult *r = zx_wsp_exec(w, "SELECT pg_advisory_xact_lock($1::int, hashtext($2))", 2, pv);
    PQclear(r);
    return r ? 0 : -1;
}

/* The declared type of column name of qname as it is now, into decl:
 * 1 there, 0 not (or no table), -1 failure. */
static int column_now(wsp *w, const char *qname, const char *name, char *decl, size_t len)
{
    char id[WSP_IDENT_MAX + 1];
    zx_wsp_ident_name(name, id);
    const char *pv[2] = { qname, id };
    PGresult *r = zx_wsp_exec(w, "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"
                                 " WHERE a.attrelid = to_regclass($1) AND a.attname = $2"
                                 " AND a.attnum > 0 AND NOT a.attisdropped", 2, pv);
    if (!r)
        return -1;
    int have = PQntuples(r) == 1;
    if (have)
        snprintf(decl, len, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return have;
}

int zx_wsp_create_table(zx_ws *ws, ws_table *t, const ws_coldef *cols, size_t n, char *err,
                        size_t errlen)
{
    wsp *w = WSP(ws);
    wsp_table *tb = be_of(w, t);
    if (w->instance && tb) {
        /* another zxd may have made it since this one looked */
        if (zx_wsp_ddl_lock(w, tb->qname) < 0)
            return zx_seterr(err, errlen, "workspace: cannot lock table %s: %s", t->name,
                             w->msg);
        if (t->ncols == 0 && zx_wsp_load_table(ws, t) < 0)
            return zx_seterr(err, errlen, "workspace: cannot read table %s: %s", t->name,
                             w->msg);
        if (t->ncols > 0)
            return 2;
    }
    zx_buf *b = &w->sql;
    b->len = 0;
    int bad = !tb || ws_sql_str(b, "CREATE TABLE ") < 0 || ws_sql_str(b, tb->qname) < 0 ||
              ws_sql_str(b, " (") < 0;
    size_t nkey = 0;
    for (size_t i = 0; i < n && !bad; i++) {
        bad = (i && ws_sql_str(b, ", ") < 0) || zx_wsp_ident(b, cols[i].name) < 0 ||
              ws_sql_str(b, " ") < 0 ||
              ws_sql_str(b, cols[i].decl ? cols[i].decl : zx_wsp_decl_for_type(cols[i].type)) < 0 ||
              (cols[i].key && ws_sql_str(b, " NOT NULL") < 0);
        nkey += cols[i].key != 0;
    }
    for (size_t i = 0, k = 0; i < n && nkey && !bad; i++)
        if (cols[i].key)
            bad = ws_sql_str(b, k++ ? ", " : ", PRIMARY KEY (") < 0 ||
                  zx_wsp_ident(b, cols[i].name) < 0;
    if (bad || (nkey && ws_sql_str(b, ")") < 0) || ws_sql_str(b, ")") < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    if (zx_wsp_run(w, b->p) < 0)
        return zx_seterr(err, errlen, "workspace: cannot create table %s: %s", t->name, w->msg);
    return 0;
}

int zx_wsp_add_column(zx_ws *ws, ws_table *t, const char *name, const char *decl, char **why,
                      char *err, size_t errlen)
{
    wsp *w = WSP(ws);
    wsp_table *tb = be_of(w, t);
    if (w->instance && tb) {
        /* another zxd may have added it since this one looked: then it is
         * taken as it is */
        char have[128];
        int rc = zx_wsp_ddl_lock(w, tb->qname);
        if (rc == 0)
            rc = column_now(w, tb->qname, name, have, sizeof(have));
        if (rc < 0)
            return zx_seterr(err, errlen, "workspace: cannot add column %s to %s: %s", name,
                             t->name, w->msg);
        if (rc == 1)
            return ws_table_add_col(ws, t, name, have) < 0
                       ? zx_seterr(err, errlen, "workspace: out of memory") : 0;
    }
    zx_buf *b = &w->sql;
    b->len = 0;
    if (!tb || ws_sql_str(b, "ALTER TABLE ") < 0 || ws_sql_str(b, tb->qname) < 0 ||
        ws_sql_str(b, " ADD COLUMN ") < 0 || zx_wsp_ident(b, name) < 0 ||
        ws_sql_str(b, " ") < 0 || ws_sql_str(b, decl) < 0)
        return zx_seterr(err, errlen, "workspace: out of memory");
    int rc = zx_wsp_guarded(w, b->p, 0, NULL);
    if (rc == 0) {
        if (ws_table_add_col(ws, t, name, decl) < 0)
            return zx_seterr(err, errlen, "workspace: out of memory");
        return 0;
    }
    if (rc == 1) {
        if (why && !*why)
            *why = strdup(w->msg);
        return 1;
    }
    return zx_seterr(err, errlen, "workspace: cannot add column %s to %s: %s", name, t->name,
                     w->msg);
}

/* ALTER COLUMN ... TYPE decl USING col::text::decl; values that do not
 * convert make it text instead (nothing is lost). */
int zx_wsp_retype_column(zx_ws *ws, ws_table *t, uint32_t col, const char *decl, char *err,
                         size_t errlen)
{
    wsp *w = WSP(ws);
    wsp_table *tb = be_of(w, t);
    const char *name = t->cols[col].name;
    int moved = 0;  /* the cache took another zxd's type: statements to forget */
    if (w->instance && tb) {
        /* another zxd may have retyped it already */
        char have[128];
        int rc = zx_wsp_ddl_lock(w, tb->qname);
        if (rc == 0)
            rc = column_now(w, tb->qname, name, have, sizeof(have));
        if (rc < 0)
            return zx_seterr(err, errlen, "workspace: cannot retype column %s of %s: %s", name,
                             t->name, w->msg);
        if (rc == 1 && strcmp(have, t->cols[col].decl) != 0) {
            char *d = strdup(have);
            if (!d)
                return zx_seterr(err, errlen, "workspace: out of memory");
            free(t->cols[col].decl);
            t->cols[col].decl = d;
            t->cols[col].kind = ws->ops->kind_from_decl(d);
            if (strcmp(have, decl) == 0) {
                zx_wsp_table_free(t); /* the prepared statements know the old type */
                return 0;
            }
            moved = 1;
        }
    }
    for (int pass = 0; pass < 2; pass++) {
        const char *to = pass ? "text" : decl;
        zx_buf *b = &w->sql;
        b->len = 0;
        if (!tb || ws_sql_str(b, "ALTER TABLE ") < 0 || ws_sql_str(b, tb->qname) < 0 ||
            ws_sql_str(b, " ALTER COLUMN ") < 0 || zx_wsp_ident(b, name) < 0 ||
            ws_sql_str(b, " TYPE ") < 0 || ws_sql_str(b, to) < 0 ||
            ws_sql_str(b, " USING ") < 0 || zx_wsp_ident(b, name) < 0 ||
            ws_sql_str(b, "::text::") < 0 || ws_sql_str(b, to) < 0)
            return zx_seterr(err, errlen, "workspace: out of memory");
        int rc = zx_wsp_guarded(w, b->p, 0, NULL);
        if (rc < 0)
            return zx_seterr(err, errlen, "workspace: cannot retype column %s of %s: %s", name,
                             t->name, w->msg);
        if (rc == 1)
            continue;
        char *d = strdup(to);
        if (!d)
            return zx_seterr(err, errlen, "workspace: out of memory");
        free(t->cols[col].decl);
        t->cols[col].decl = d;
        t->cols[col].kind = ws->ops->kind_from_decl(d);
        /* the prepared statements know the old type */
        zx_wsp_table_free(t);
        return 0;
    }
    if (moved)
        zx_wsp_table_free(t);
    return 1;
}

/* ---- the rejects table ------------------------------------------------- */

static const char *const rej_cols[WS_REJECTS_NCOLS] = {
    "rejected_at", "pipeline", "request_id", "column_name", "column_type", "value_type",
    "raw_value", "reason", "source_key", "source_position"
};

/* Bytes as text for a TEXT column: as they are when valid UTF-8 without
 * NUL, else "\x" and their hex digits (as bytea's text form).  Malloc'ed,
 * or NULL (p NULL, or out of memory: *nomem). */
static char *text_of(const char *p, size_t n, int *nomem)
{
    if (!p)
        return NULL;
    char *s;
    if (ws_utf8_text((const unsigned char *)p, n)) {
        s = malloc(n + 1);
        if (s) {
            memcpy(s, p, n);
            s[n] = '\0';
        }
    } else {
        s = n < SIZE_MAX / 2 - 3 ? malloc(2 * n + 3) : NULL;
        if (s) {
            static const char hex[] = "0123456789abcdef";
            s[0] = '\\';
            s[1] = 'x';
            for (size_t i = 0; i < n; i++) {
                s[2 + 2 * i] = hex[(unsigned char)p[i] >> 4];
                s[3 + 2 * i] = hex[(unsigned char)p[i] & 15];
            }
            s[2 + 2 * n] = '\0';
        }
    }
    if (!s)
        *nomem = 1;
    return s;
}

/* The INSERT of <table>__rejects, creating the table or adding the two
 * source columns when needed.  NULL with *skip = 1 when the database
 * refuses (a user-made table of that name); NULL with *skip = 0 on a
 * failure (err set). */
static const char *rej_sql(wsp *w, const char *table, int *skip, char *err, size_t errlen)
{
    char rname[160];
    *skip = 0;
    snprintf(rname, sizeof(rname), "%s__rejects", table);
    ws_table *t = ws_get_table(&w->base, rname);
    wsp_table *tb = t ? be_of(w, t) : NULL;
    if (!tb) {
        zx_seterr(err, errlen, "workspace: rejects table of %s: %s", table, w->msg);
        return NULL;
    }
    if (tb->rej_sql)
        return tb->rej_sql;
    zx_buf *b = &w->sql;
    if (t->ncols == 0 && zx_wsp_ddl_lock(w, tb->qname) < 0)
        goto dberr;
    if (t->ncols == 0) {
        b->len = 0;
        int bad = ws_sql_str(b, "CREATE TABLE IF NOT EXISTS ") < 0 ||
                  ws_sql_str(b, tb->qname) < 0 || ws_sql_str(b, " (") < 0;
        for (int i = 0; i < WS_REJECTS_NCOLS && !bad; i++)
            bad = ws_sql_str(b, i ? ", " : "") < 0 || ws_sql_str(b, rej_cols[i]) < 0 ||
                  ws_sql_str(b, i == 0 ? " timestamptz" : " text") < 0;
        if (bad || ws_sql_str(b, ")") < 0)
            goto nomem;
        int rc = zx_wsp_guarded(w, b->p, 0, NULL);
        if (rc < 0)
            goto dberr;
        if (rc > 0) {
            *skip = 1;
            return NULL;
        }
        for (int i = 0; i < WS_REJECTS_NCOLS; i++)
            if (ws_table_add_col(&w->base, t, rej_cols[i],
                                 i == 0 ? "timestamp with time zone" : "text") < 0)
                goto nomem;
    }
    for (int i = WS_REJECTS_NCOLS - 2; i < WS_REJECTS_NCOLS; i++) {
        if (ws_find_col(&w->base, t, rej_cols[i]) >= 0)
            continue;
        int r = zx_wsp_add_column(&w->base, t, rej_cols[i], "text", NULL, err, errlen);
        if (r < 0)
            return NULL;
        if (r > 0) {
            *skip = 1;
            return NULL;
        }
    }
    b->len = 0;
    int bad = ws_sql_str(b, "INSERT INTO ") < 0 || ws_sql_str(b, tb->qname) < 0;
    for (int i = 0; i < WS_REJECTS_NCOLS && !bad; i++)
        bad = ws_sql_str(b, i ? ", " : " (") < 0 || ws_sql_str(b, rej_cols[i]) < 0;
    if (bad || ws_sql_str(b, ") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)") < 0 ||
        !(tb->rej_sql = strdup(b->p)))
        goto nomem;
    return tb->rej_sql;
dberr:
    zx_seterr(err, errlen, "workspace: rejects table of %s: %s", table, w->msg);
    return NULL;
nomem:
    zx_seterr(err, errlen, "workspace: out of memory");
    return NULL;
}

int zx_wsp_reject_row(zx_ws *ws, const ws_reject *r, char *err, size_t errlen)
{
    wsp *w = WSP(ws);
    if (w->streaming)
        return zx_wsp_reject_defer(w, r, err, errlen);
    int skip;
    const char *sql = rej_sql(w, r->table, &skip, err, errlen);
    if (!sql)
        return skip ? 1 : -1;
    int nomem = 0;
    char *raw = text_of(r->raw, r->raw_len, &nomem);
    char *key = text_of(r->key, r->key_len, &nomem);
    if (nomem) {
        free(raw);
        free(key);
        return zx_seterr(err, errlen, "workspace: out of memory");
    }
    const char *pv[WS_REJECTS_NCOLS] = { r->rejected_at, r->pipeline, r->request_id, r->column,
                                         r->column_type, r->value_type, raw, r->reason, key,
                                         r->position };
    int rc = zx_wsp_guarded(w, sql, WS_REJECTS_NCOLS, pv);
    free(raw);
    free(key);
    if (rc < 0)
        return zx_seterr(err, errlen, "workspace: cannot record a reject for %s: %s", r->table,
                         w->msg);
    return rc;
}
