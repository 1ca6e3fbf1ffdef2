/*
 * query_sqlite.c — a sync's query on the SQLite workspace (query.h): a
 * read-only connection, an authorizer allowing only reads of the author's
 * tables (and of the read-only table-valued functions json_each and
 * json_tree), one statement, one read transaction (WAL: the writer goes
 * on), interrupted by a progress handler at the deadline or a stop.
 *
 * The table-valued functions: the first use of one on a connection
 * declares its table, and SQLite asks the authorizer about that
 * declaration as if it wrote sqlite_master (SQLITE_UPDATE of its columns)
 * though nothing is written.  So each allowed one is used once before the
 * authorizer is set; after that the query's use of it is only SQLITE_READ
 * of its columns.  A workspace table of the same name hides the function:
 * then the name is a table like any other (the author's, or refused).
 */
#include "workers/syncs/query.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/timefmt.h"
#include "common/util.h"

/* The table-valued functions a query may use: read-only, and reaching
 * nothing but their arguments. */
static const char *const tvfs[] = {"json_each", "json_tree"};
#define NTVF (sizeof(tvfs) / sizeof(tvfs[0]))

typedef struct sq {
    sqlite3 *db;
    sqlite3_stmt *st;
    const zx_conf_author *author;
    const char *sync;
    zx_dcol *cols;
    unsigned char *undeclared;   /* per column: an expression */
    size_t ncols;
    int done;            /* sqlite3_step said DONE */
    int have_row;        /* a row is stepped to and not yet read */
    char denied[800];    /* what the authorizer refused, for the message */
    int tvf_ok[NTVF];    /* 1: tvfs[i] is the function here, ready */
    zx_query_limits lim;
    int64_t deadline_ms; /* zx_mono_ms clock */
    zx_query_cut cut;    /* why the progress handler interrupted it */
} sq;

/* The functions that reach outside the database (or could): denied even
 * though a read-only connection would refuse most of their effects. */
static int fn_denied(const char *f)
{
    static const char *const bad[] = {"load_extension", "readfile", "writefile", "edit",
                                      "fts3_tokenizer", "sqlite_dbpage", NULL};
    for (size_t i = 0; f && bad[i]; i++)
        if (!strcasecmp(f, bad[i]))
            return 1;
    return 0;
}

static int author_has(const zx_conf_author *a, const char *table)
{
    for (size_t i = 0; a && table && i < a->ntables; i++)
        if (!strcasecmp(a->tables[i], table))   /* SQLite's names ignore case */
            return 1;
    return 0;
}

static int tvf_allowed(const sq *q, const char *name)
{
    for (size_t i = 0; name && i < NTVF; i++)
        if (q->tvf_ok[i] && !strcasecmp(tvfs[i], name))
            return 1;
    return 0;
}

/* Declare the allowed table-valued functions on the connection (see the
 * top of the file), those no schema object hides: q->tvf_ok. */
static void prime_tvfs(sq *q)
{
    for (size_t i = 0; i < NTVF; i++) {
        sqlite3_stmt *st = NULL;
        int hidden = 1;
        if (sqlite3_prepare_v2(q->db, "SELECT 1 FROM sqlite_master WHERE name = ?1 "
                               "COLLATE NOCASE", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_bind_text(st, 1, tvfs[i], -1, SQLITE_STATIC) == SQLITE_OK)
            hidden = sqlite3_step(st) != SQLITE_DONE;
        sqlite3_finalize(st);
        if (hidden)
            continue;
        char sql[80];
        snprintf(sql, sizeof(sql), "SELECT * FROM %s('[]')", tvfs[i]);
        st = NULL;
        q->tvf_ok[i] = sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) == SQLITE_OK && st;
        sqlite3_finalize(st);
    }
}

/* SQLite's name of an authorizer action code, for messages. */
static const char *action_name(int action)
{
    static const char *const names[] = {
        "SQLITE_COPY", "SQLITE_CREATE_INDEX", "SQLITE_CREATE_TABLE",
        "SQLITE_CREATE_TEMP_INDEX", "SQLITE_CREATE_TEMP_TABLE", "SQLITE_CREATE_TEMP_TRIGGER",
        "SQLITE_CREATE_TEMP_VIEW", "SQLITE_CREATE_TRIGGER", "SQLITE_CREATE_VIEW",
        "SQLITE_DELETE", "SQLITE_DROP_INDEX", "SQLITE_DROP_TABLE", "SQLITE_DROP_TEMP_INDEX",
        "SQLITE_DROP_TEMP_TABLE", "SQLITE_DROP_TEMP_TRIGGER", "SQLITE_DROP_TEMP_VIEW",
        "SQLITE_DROP_TRIGGER", "SQLITE_DROP_VIEW", "SQLITE_INSERT", "SQLITE_PRAGMA",
        "SQLITE_READ", "SQLITE_SELECT", "SQLITE_TRANSACTION", "SQLITE_UPDATE",
        "SQLITE_ATTACH", "SQLITE_DETACH", "SQLITE_ALTER_TABLE", "SQLITE_REINDEX",
        "SQLITE_ANALYZE", "SQLITE_CREATE_VTABLE", "SQLITE_DROP_VTABLE", "SQLITE_FUNCTION",
        "SQLITE_SAVEPOINT", "SQLITE_RECURSIVE"};
    return action >= 0 && (size_t)action < sizeof(names) / sizeof(names[0]) ? names[action]
                                                                            : "an unknown action";
}

/* q->denied = what a refused action would have done, naming its object,
 * and the authorizer's action code. */
static void refuse(sq *q, int action, const char *a1, const char *a2)
{
    const char *x = a1 ? a1 : "?", *y = a2 ? a2 : "";
    char what[300];
    switch (action) {
    case SQLITE_INSERT: snprintf(what, sizeof(what), "insert rows into table %.100s", x); break;
    case SQLITE_DELETE: snprintf(what, sizeof(what), "delete rows from table %.100s", x); break;
    case SQLITE_UPDATE:
        snprintf(what, sizeof(what), "update column %.100s of table %.100s", y, x);
        break;
    case SQLITE_PRAGMA:
        snprintf(what, sizeof(what), "run PRAGMA %.100s%s%.100s%s", x, a2 ? "(" : "", y,
                 a2 ? ")" : "");
        break;
    case SQLITE_ATTACH: snprintf(what, sizeof(what), "attach database %.100s", x); break;
    case SQLITE_DETACH: snprintf(what, sizeof(what), "detach database %.100s", x); break;
    case SQLITE_TRANSACTION: snprintf(what, sizeof(what), "run %.100s", x); break;
    case SQLITE_SAVEPOINT:
        snprintf(what, sizeof(what), "run SAVEPOINT %.100s %.100s", x, y);
        break;
    default:
        snprintf(what, sizeof(what), "change the database (%.100s%s%.100s)", x, a2 ? ", " : "",
                 y);
    }
    /* SQLite asks this too when a table-valued function is first used
     * (its table declared): say so, or the message puzzles */
    int schema = action == SQLITE_UPDATE && a1 && (!strcasecmp(a1, "sqlite_master") ||
                                                   !strcasecmp(a1, "sqlite_schema"));
    snprintf(q->denied, sizeof(q->denied), "the query is not a read-only SELECT: it would %.300s "
             "(SQLite authorizer action %s, refused: a sync's query may only read%s)", what,
             action_name(action), schema ? "; SQLite asks this for a write to the schema, "
             "and when a table-valued function is first used: of those a sync may use "
             "json_each and json_tree only" : "");
}

static void tables_list(const zx_conf_author *a, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; a && i < a->ntables && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", a->tables[i]);
}

static int authorize(void *ctx, int action, const char *a1, const char *a2, const char *db,
                     const char *trigger)
{
    (void)a2; (void)trigger;
    sq *q = ctx;
    char list[200];
    switch (action) {
    case SQLITE_SELECT:
    case SQLITE_RECURSIVE:
        return SQLITE_OK;
    case SQLITE_READ:
        if (db && strcmp(db, "main") && strcmp(db, "temp")) {
            snprintf(q->denied, sizeof(q->denied), "the query reads database %s", db);
            return SQLITE_DENY;
        }
        if (author_has(q->author, a1) || tvf_allowed(q, a1))
            return SQLITE_OK;
        tables_list(q->author, list, sizeof(list));
        snprintf(q->denied, sizeof(q->denied), "the query reads table %.63s, which author "
                 "%s may not read (%s's tables: %s)", a1 ? a1 : "?", q->author->name,
                 q->author->name, list);
        return SQLITE_DENY;
    case SQLITE_FUNCTION:
        if (!fn_denied(a2))
            return SQLITE_OK;
        snprintf(q->denied, sizeof(q->denied), "the query calls %s(), which a sync may not",
                 a2);
        return SQLITE_DENY;
    default:
        refuse(q, action, a1, a2);
        return SQLITE_DENY;
    }
}

/* The type name d starts with word w (case ignored), followed by the end,
 * a space or '('. */
static int starts_word(const char *d, const char *w)
{
    size_t n = strlen(w);
    return !strncasecmp(d, w, n) && (!d[n] || d[n] == ' ' || d[n] == '(');
}

/* "NUMERIC ...(p,s)" / "DECIMAL ...(p,s)": DECIMAL when p is 1..38 and s
 * 0..p, else 0. */
static int decl_decimal(const char *d, zx_dcol *c)
{
    const char *lp = strchr(d, '(');
    int p, s, used = 0;
    if (!lp || sscanf(lp, "(%d ,%d )%n", &p, &s, &used) != 2 || !used || lp[used] ||
        p < 1 || p > 38 || s < 0 || s > p)
        return 0;
    c->type = ZX_DT_DECIMAL;
    c->precision = p;
    c->scale = s;
    return 1;
}

/* The logical type of a declared column type (zx's SQLite workspace
 * declares INTEGER, REAL, BOOLEAN, TEXT, TIMESTAMP, JSON, BLOB, and for a
 * mirror the source's types: DATE, TIME, NUMERIC TEXT(p,s), VARCHAR(n)...;
 * workspace_sqlite_schema.c), or 0 when there is none (an expression).
 * Only a hint: the values decide in the end (coltype.h). */
static int decl_type(const char *d, zx_dcol *c)
{
    c->precision = c->scale = 0;
    if (!d || !*d)
        return 0;
    if (starts_word(d, "INTERVAL") || starts_word(d, "POINT"))
        c->type = ZX_DT_TEXT;     /* INT inside the name, text values */
    else if ((starts_word(d, "NUMERIC") || starts_word(d, "DECIMAL")) && decl_decimal(d, c))
        ;
    else if (strcasestr(d, "INT"))
        c->type = ZX_DT_INT64;
    else if (strcasestr(d, "BOOL"))
        c->type = ZX_DT_BOOL;
    else if (strcasestr(d, "REAL") || strcasestr(d, "FLOA") || strcasestr(d, "DOUB"))
        c->type = ZX_DT_DOUBLE;
    else if (strcasestr(d, "TIMESTAMP") || strcasestr(d, "DATETIME"))
        c->type = ZX_DT_TIMESTAMP;
    else if (starts_word(d, "DATE"))
        c->type = ZX_DT_DATE;
    else if (strcasestr(d, "JSON"))
        c->type = ZX_DT_JSON;
    else if (strcasestr(d, "BLOB"))
        c->type = ZX_DT_BYTES;
    else
        c->type = ZX_DT_TEXT;
    return 1;
}

static int step(sq *q, char *err, size_t errlen)
{
    int rc = sqlite3_step(q->st);
    if (rc == SQLITE_ROW) {
        q->have_row = 1;
        return 0;
    }
    q->have_row = 0;
    if (rc == SQLITE_DONE) {
        q->done = 1;
        return 0;
    }
    if (rc == SQLITE_INTERRUPT && q->cut)
        return zx_query_cut_msg(q->cut, q->sync, q->lim.query_timeout_ms, "interrupted", err,
                                errlen);
    snprintf(err, errlen, "sync %s: the query failed on the SQLite workspace: %s", q->sync,
             q->denied[0] ? q->denied : sqlite3_errmsg(q->db));
    return -1;
}

/* SQLite's progress handler: nonzero interrupts the statement (at the
 * deadline, or a stop). */
static int on_progress(void *ctx)
{
    sq *q = ctx;
    if (q->lim.stopping && q->lim.stopping(q->lim.ctx))
        q->cut = ZX_QUERY_STOPPED;
    else if (zx_mono_ms() >= q->deadline_ms)
        q->cut = ZX_QUERY_TIMED_OUT;
    return q->cut != ZX_QUERY_RAN;
}

int zx_qsq_open(const zx_conf *conf, const char *sync, const zx_conf_author *author,
                  const char *sql, const zx_query_limits *lim, void **out, char *err,
                  size_t errlen)
{
    sq *q = calloc(1, sizeof(*q));
    const char *tail = NULL;
    if (!q) {
        snprintf(err, errlen, "sync %s: out of memory", sync);
        return -1;
    }
    q->author = author;
    q->sync = sync;
    if (lim)
        q->lim = *lim;
    q->deadline_ms = zx_query_deadline(lim);
    int timeout_ms = q->lim.connect_timeout_ms;
    if (sqlite3_open_v2(conf->sqlite_path, &q->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        snprintf(err, errlen, "sync %s: cannot open the workspace %s read-only: %s", sync,
                 conf->sqlite_path, q->db ? sqlite3_errmsg(q->db) : "out of memory");
        goto fail;
    }
    sqlite3_busy_timeout(q->db, timeout_ms > 0 ? timeout_ms : 10000);
    sqlite3_db_config(q->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(q->db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
    sqlite3_db_config(q->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
    prime_tvfs(q);
    sqlite3_set_authorizer(q->db, authorize, q);
    /* every 1000 virtual-machine steps: the deadline and the stop */
    sqlite3_progress_handler(q->db, 1000, on_progress, q);
    int rc = sqlite3_prepare_v2(q->db, sql, -1, &q->st, &tail);
    if (rc != SQLITE_OK || !q->st) {
        snprintf(err, errlen, "sync %s: %s", sync,
                 q->denied[0] ? q->denied : rc == SQLITE_OK ? "the query is empty"
                                                            : sqlite3_errmsg(q->db));
        goto fail;
    }
    /* exactly one statement: what follows must prepare to nothing */
    if (tail && *tail) {
        sqlite3_stmt *more = NULL;
        const char *t2 = NULL;
        rc = sqlite3_prepare_v2(q->db, tail, -1, &more, &t2);
        int extra = rc != SQLITE_OK || more;
        sqlite3_finalize(more);
        if (extra) {
            snprintf(err, errlen, "sync %s: the query must be exactly one statement; a second "
                     "one follows the first", sync);
            goto fail;
        }
    }
    if (!sqlite3_stmt_readonly(q->st)) {
        snprintf(err, errlen, "sync %s: the query is not a read-only SELECT", sync);
        goto fail;
    }
    int n = sqlite3_column_count(q->st);
    if (n <= 0) {
        snprintf(err, errlen, "sync %s: the query returns no columns", sync);
        goto fail;
    }
    /* the first row: it starts the read transaction (one snapshot for the
     * whole run); types come from all rows (query_common.c) */
    if (step(q, err, errlen) < 0)
        goto fail;
    q->cols = calloc((size_t)n, sizeof(*q->cols));
    q->undeclared = calloc((size_t)n, 1);
    if (!q->cols || !q->undeclared) {
        snprintf(err, errlen, "sync %s: out of memory", sync);
        goto fail;
    }
    q->ncols = (size_t)n;
    for (int i = 0; i < n; i++) {
        const char *name = sqlite3_column_name(q->st, i);
        q->cols[i].name = strdup(name ? name : "?");
        if (!q->cols[i].name) {
            snprintf(err, errlen, "sync %s: out of memory", sync);
            goto fail;
        }
        if (!decl_type(sqlite3_column_decltype(q->st, i), &q->cols[i])) {
            q->cols[i].type = ZX_DT_TEXT;    /* until its values say */
            q->undeclared[i] = 1;
        }
    }
    if (zx_query_unique_names(q->cols, q->ncols, sync, err, errlen) < 0)
        goto fail;
    *out = q;
    return 0;
fail:
    zx_qsq_close(q);
    return -1;
}

const zx_dcol *zx_qsq_columns(const void *qq, size_t *n)
{
    const sq *q = (const sq *)qq;
    *n = q->ncols;
    return q->cols;
}

const unsigned char *zx_qsq_undeclared(const void *qq)
{
    return ((const sq *)qq)->undeclared;
}

/* The zx value of column i of the current row for declared type t (an
 * integer is a bool only when t is BOOL and it is 0 or 1: 2 stays 2, and
 * the column's type widens). */
static int cell(sq *q, int i, zx_dtype t, zx_rowset *rs, zx_value *v)
{
    int st = sqlite3_column_type(q->st, i);
    memset(v, 0, sizeof(*v));
    if (st == SQLITE_NULL)
        return 0;
    if (st == SQLITE_INTEGER) {
        v->u.i = sqlite3_column_int64(q->st, i);
        v->type = ZX_T_INT;
        if (t == ZX_DT_BOOL && (v->u.i == 0 || v->u.i == 1)) {
            v->type = ZX_T_BOOL;
            v->u.b = v->u.i != 0;
        }
        return 0;
    }
    if (st == SQLITE_FLOAT) {
        v->type = ZX_T_REAL;
        v->u.d = sqlite3_column_double(q->st, i);
        return 0;
    }
    const char *s = st == SQLITE_BLOB ? sqlite3_column_blob(q->st, i)
                                      : (const char *)sqlite3_column_text(q->st, i);
    int n = sqlite3_column_bytes(q->st, i);
    if (n < 0 || (!s && n > 0))
        return -1;
    v->len = (uint32_t)n;
    if (!(v->s = zx_rowset_strdup(rs, s ? s : "", (size_t)n)))
        return -1;
    v->type = t == ZX_DT_JSON ? ZX_T_JSON : ZX_T_TEXT;
    if (t == ZX_DT_TIMESTAMP && zx_rfc3339_parse(v->s, v->len, &v->u.i))
        v->type = ZX_T_TIMESTAMP;
    return 0;
}

int64_t zx_qsq_next(void *qq, zx_rowset *rs, size_t max, char *err, size_t errlen)
{
    sq *q = (sq *)qq;
    int64_t n = 0;
    if (zx_query_rs_columns(rs, q->cols, q->ncols) < 0)
        goto oom;
    while ((size_t)n < max && q->have_row) {
        if (zx_rowset_begin_row(rs) < 0)
            goto oom;
        for (size_t i = 0; i < q->ncols; i++) {
            zx_value v;
            if (cell(q, (int)i, q->cols[i].type, rs, &v) < 0)
                goto oom;
            if (v.type != ZX_T_NULL && zx_rowset_add(rs, (uint32_t)i, &v) < 0)
                goto oom;
        }
        zx_rowset_end_row(rs);
        n++;
        if (step(q, err, errlen) < 0)
            return -1;
    }
    return n;
oom:
    snprintf(err, errlen, "sync %s: out of memory reading the result", q->sync);
    return -1;
}

void zx_qsq_close(void *qq)
{
    sq *q = (sq *)qq;
    if (!q)
        return;
    sqlite3_finalize(q->st);
    sqlite3_close(q->db);
    for (size_t i = 0; q->cols && i < q->ncols; i++)
        free((char *)q->cols[i].name);
    free(q->cols);
    free(q->undeclared);
    free(q);
}
