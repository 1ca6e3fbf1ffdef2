/*
 * json_rows.c — JSON / NDJSON push bodies to rowset rows, with jansson.
 * See json_rows.h for the contract.  Must never trust the body: every
 * length comes from jansson or from `len`, recursion is bounded by
 * ZX_JSON_MAX_DEPTH (and by jansson's own parser depth limit), and every
 * failure becomes a message in zx_json_err.  Numbers jansson cannot
 * represent are marked by json_numbers.c and kept as their literal text.
 */
#include "common/json_rows.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/colname.h"
#include "common/json_numbers.h"
#include "common/timefmt.h"

/* jansson's position is the byte count consumed when it stopped; we report
 * the byte before it (the last byte of the offending token). */

typedef struct ctx {
    zx_rowset *rs;
    zx_json_err *err;
    int where_kind;         /* 0: none, 1: NDJSON line, 2: array element */
    uint64_t where_n;       /* that line number or element index */
    char where[64];         /* formatted by where() on error only */
    uint32_t gen;           /* current object's stamp */
    uint32_t stamp[ZX_JSON_MAX_COLUMNS]; /* column -> gen of last use */
    char *dump;             /* scratch for compact JSON of nested values */
    size_t dump_cap;
    zx_jnum num;            /* scratch for zx_jnum_rewrite() */
    int marked;             /* the document in hand holds marked numbers */
} ctx;

static void set_err(ctx *c, zx_json_errcode code, uint64_t line, uint64_t column,
                    uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void set_err(ctx *c, zx_json_errcode code, uint64_t line, uint64_t column,
                    uint64_t offset, const char *fmt, ...)
{
    if (!c->err)
        return;
    c->err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err->msg, sizeof(c->err->msg), fmt, ap);
    va_end(ap);
    c->err->line = line;
    c->err->column = column;
    c->err->offset = offset;
}

/* "line 7: ", "element 3: " or "": prefix for errors inside an event. */
static const char *where(ctx *c)
{
    static const char *const fmt[] = {"", "line %llu: ", "element %llu: "};
    snprintf(c->where, sizeof(c->where), fmt[c->where_kind],
             (unsigned long long)c->where_n);
    return c->where;
}

static const char *kind_of(const json_t *v)
{
    if (json_is_string(v) && zx_jnum_is_marked(json_string_value(v), json_string_length(v)))
        return "a number";  /* marks exist only in a marked document */
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* ---- nested values ------------------------------------------------------ */

/* 0 if no container inside v (at `level`) is deeper than the limit. */
static int depth_ok(json_t *v, int level)
{
    if (level > ZX_JSON_MAX_DEPTH)
        return 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            if ((json_is_object(x) || json_is_array(x)) && !depth_ok(x, level + 1))
                return 0;
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            if ((json_is_object(x) || json_is_array(x)) && !depth_ok(x, level + 1))
                return 0;
        }
    }
    return 1;
}

/* Compact JSON text of v, copied into the arena; NULL when out of memory. */
static char *nested_text(ctx *c, json_t *v, size_t *len)
{
    const size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;
    size_t n = json_dumpb(v, c->dump, c->dump_cap, flags);
    if (n == 0)
        return NULL;
    if (n > c->dump_cap) {
        if (zx_grow_to(&c->dump, n, &c->dump_cap, 1, 4096) < 0)
            return NULL;
        n = json_dumpb(v, c->dump, c->dump_cap, flags);
        if (n == 0 || n > c->dump_cap)
            return NULL;
    }
    if (c->marked)
        n = zx_jnum_unmark_text(c->dump, n);
    *len = n;
    return zx_rowset_strdup(c->rs, c->dump, n);
}

/* ---- one event ---------------------------------------------------------- */

/* Column index for key `name` (normalised, length n) unused so far in the
 * current object, adding the collision suffix if needed; -1 on error. */
static int64_t column_for(ctx *c, const char *name, size_t n)
{
    char buf[ZX_COLNAME_MAX + 1];
    const char *nm = name;
    size_t nl = n;
    for (unsigned k = 2;; k++) {
        int64_t col = zx_rowset_find_column(c->rs, nm, nl);
        if (col < 0) {
            if (c->rs->ncols >= ZX_JSON_MAX_COLUMNS)
                goto too_many;
            col = zx_rowset_column(c->rs, nm, nl, ZX_T_NULL);
            if (col < 0) {
                set_err(c, ZX_JSON_E_NOMEM, 0, 0, 0, "out of memory");
                return -1;
            }
        }
        if (col >= ZX_JSON_MAX_COLUMNS)
            goto too_many;
        if (c->stamp[col] != c->gen) {
            c->stamp[col] = c->gen;
            return col;
        }
        nl = zx_colname_suffix(name, n, k, buf);
        nm = buf;
    }
too_many:
    set_err(c, ZX_JSON_E_COLUMNS, 0, 0, 0, "%smore than %d columns in one batch", where(c),
            ZX_JSON_MAX_COLUMNS);
    return -1;
}

/* Fill *out from v; 0, or -1 with the error set. */
static int to_value(ctx *c, json_t *v, zx_value *out)
{
    memset(out, 0, sizeof(*out));
    switch (json_typeof(v)) {
    case JSON_INTEGER:
        out->type = ZX_T_INT;
        out->u.i = (int64_t)json_integer_value(v);
        return 0;
    case JSON_REAL:
        out->type = ZX_T_REAL;
        out->u.d = json_real_value(v);
        return 0;
    case JSON_TRUE:
    case JSON_FALSE:
        out->type = ZX_T_BOOL;
        out->u.b = json_is_true(v);
        return 0;
    case JSON_NULL:
        out->type = ZX_T_NULL;
        return 0;
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (n > UINT32_MAX)
            goto too_long;
        if (c->marked && zx_jnum_is_marked(s, n)) {
            /* a number beyond int64 / double: kept as its literal */
            out->type = ZX_T_JSON;
            out->s = zx_rowset_strdup(c->rs, s + 1, n - 1);
            out->len = (uint32_t)(n - 1);
            break;
        }
        out->type = zx_rfc3339_parse(s, n, &out->u.i) ? ZX_T_TIMESTAMP : ZX_T_TEXT;
        out->s = zx_rowset_strdup(c->rs, s, n);
        out->len = (uint32_t)n;
        break;
    }
    case JSON_OBJECT:
    case JSON_ARRAY: {
        if (!depth_ok(v, 2)) {
            set_err(c, ZX_JSON_E_LIMIT, 0, 0, 0, "%snesting deeper than %d levels", where(c),
                    ZX_JSON_MAX_DEPTH);
            return -1;
        }
        size_t n = 0;
        out->type = ZX_T_JSON;
        out->s = nested_text(c, v, &n);
        if (n > UINT32_MAX)
            goto too_long;
        out->len = (uint32_t)n;
        break;
    }
    }
    if (!out->s) {
        set_err(c, ZX_JSON_E_NOMEM, 0, 0, 0, "out of memory");
        return -1;
    }
    return 0;
too_long:
    set_err(c, ZX_JSON_E_LIMIT, 0, 0, 0, "%sa value is longer than 4 GiB", where(c));
    return -1;
}

/* Append obj (a JSON object) as one row.  0 or -1. */
static int add_event(ctx *c, json_t *obj)
{
    zx_rowset *rs = c->rs;
    if (++c->gen == 0) {
        memset(c->stamp, 0, sizeof(c->stamp));
        c->gen = 1;
    }
    if (zx_rowset_begin_row(rs) < 0) {
        set_err(c, ZX_JSON_E_NOMEM, 0, 0, 0, "out of memory");
        return -1;
    }
    for (void *it = json_object_iter(obj); it; it = json_object_iter_next(obj, it)) {
        char name[ZX_COLNAME_MAX + 1];
        size_t nl = zx_colname_normalise(json_object_iter_key(it),
                                         json_object_iter_key_len(it), name);
        zx_value v;
        int64_t col = column_for(c, name, nl);
        if (col < 0 || to_value(c, json_object_iter_value(it), &v) < 0)
            goto fail;
        if (zx_rowset_add(rs, (uint32_t)col, &v) < 0) {
            set_err(c, ZX_JSON_E_NOMEM, 0, 0, 0, "out of memory");
            goto fail;
        }
    }
    zx_rowset_end_row(rs);
    return 0;
fail:
    zx_rowset_abort_row(rs);
    return -1;
}

/* ---- parsing one document ----------------------------------------------- */

typedef struct perr {
    size_t offset;          /* in the document given to parse_doc */
    char text[200];
} perr;

static json_t *parse_doc(ctx *c, const char *s, size_t n, int ndjson, perr *pe)
{
    json_error_t e;
    int patched = 0, marked = 0;
    c->marked = 0;
    json_t *j = json_loadb(s, n, JSON_DECODE_ANY, &e);
    if (!j && json_error_code(&e) == json_error_numeric_overflow) {
        size_t pn;
        if (zx_jnum_rewrite(&c->num, s, n, &pn, &marked) < 0) {
            pe->offset = 0;
            snprintf(pe->text, sizeof(pe->text), "out of memory");
            return NULL;
        }
        patched = 1;
        j = json_loadb(c->num.patched, pn,
                       JSON_DECODE_ANY | (marked ? JSON_ALLOW_NUL : 0), &e);
    }
    if (j)
        c->marked = marked;
    if (j)
        return j;

    size_t pos = e.position > 0 ? (size_t)e.position - 1 : 0;
    if (patched)
        pos = zx_jnum_unpatch_pos(&c->num, pos);
    pe->offset = pos < n ? pos : (n ? n - 1 : 0);
    switch (json_error_code(&e)) {
    case json_error_null_character:
    case json_error_null_byte_in_key:
        snprintf(pe->text, sizeof(pe->text),
                 "string contains \\u0000 (NUL), which is not accepted");
        break;
    case json_error_out_of_memory:
        snprintf(pe->text, sizeof(pe->text), "out of memory");
        break;
    case json_error_stack_overflow:
        snprintf(pe->text, sizeof(pe->text), "nesting deeper than %d levels",
                 ZX_JSON_MAX_DEPTH);
        break;
    default: {
        const char *t = e.text;
        const char *eof = ndjson ? strstr(t, "end of file") : NULL;
        if (eof)
            snprintf(pe->text, sizeof(pe->text), "%.*send of line%s",
                     (int)(eof - t), t, eof + strlen("end of file"));
        else
            snprintf(pe->text, sizeof(pe->text), "%s", t);
    }
    }
    return NULL;
}

/* 1-based line and character column of byte `off` of s. */
static void line_col(const char *s, size_t off, uint64_t *line, uint64_t *col)
{
    uint64_t l = 1, k = 0;
    for (size_t i = 0; i <= off; i++) {
        if (i > 0 && s[i - 1] == '\n') {
            l++;
            k = 0;
        }
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            k++;
    }
    *line = l;
    *col = k ? k : 1;
}

static int is_ws(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!is_ws(s[i]))
            return 0;
    return 1;
}

/* ---- the two body formats ----------------------------------------------- */

static int parse_json(ctx *c, const char *body, size_t len)
{
    perr pe;
    int rc = -1;
    json_t *j = parse_doc(c, body, len, 0, &pe);
    if (!j) {
        uint64_t line, col;
        line_col(body, pe.offset, &line, &col);
        set_err(c, ZX_JSON_E_SYNTAX, line, col, pe.offset,
                "at byte %zu (line %llu, column %llu): %s", pe.offset,
                (unsigned long long)line, (unsigned long long)col, pe.text);
        return -1;
    }
    if (json_is_object(j)) {
        rc = add_event(c, j);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *x;
        rc = 0;
        json_array_foreach(j, i, x) {
            if (!json_is_object(x)) {
                set_err(c, ZX_JSON_E_SHAPE, 0, 0, 0,
                        "element %zu of the array is %s; each event must be a JSON object",
                        i, kind_of(x));
                rc = -1;
                break;
            }
            c->where_kind = 2;
            c->where_n = i;
            if ((rc = add_event(c, x)) < 0)
                break;
        }
    } else {
        set_err(c, ZX_JSON_E_BODY_SHAPE, 0, 0, 0,
                "the body is %s; it must be a JSON object or an array of JSON objects",
                kind_of(j));
    }
    json_decref(j);
    return rc;
}

static int parse_ndjson(ctx *c, const char *body, size_t len)
{
    uint64_t lineno = 0;
    int any = 0;
    for (size_t off = 0; off < len;) {
        const char *p = body + off;
        const char *nl = memchr(p, '\n', len - off);
        size_t n = nl ? (size_t)(nl - p) : len - off;
        lineno++;
        if (!blank(p, n)) {
            perr pe;
            any = 1;
            json_t *j = parse_doc(c, p, n, 1, &pe);
            if (!j) {
                uint64_t l, col;
                line_col(p, pe.offset, &l, &col);
                set_err(c, ZX_JSON_E_SYNTAX, lineno, col, off + pe.offset, "line %llu: %s",
                        (unsigned long long)lineno, pe.text);
                return -1;
            }
            int rc = -1;
            if (!json_is_object(j)) {
                size_t lead = 0;
                while (is_ws(p[lead]))
                    lead++;
                set_err(c, ZX_JSON_E_SHAPE, lineno, lead + 1, off + lead,
                        "line %llu is %s; each line must be a JSON object",
                        (unsigned long long)lineno, kind_of(j));
            } else {
                c->where_kind = 1;
                c->where_n = lineno;
                rc = add_event(c, j);
                if (rc < 0 && c->err) {
                    c->err->line = lineno;
                    c->err->offset = off;
                    c->err->column = 1;
                }
            }
            json_decref(j);
            if (rc < 0)
                return -1;
        }
        off += n + 1;
    }
    if (!any) {
        set_err(c, ZX_JSON_E_EMPTY, 0, 0, 0, "empty body");
        return -1;
    }
    return 0;
}

int zx_json_rows_parse(const char *body, size_t len, zx_body_format fmt,
                       zx_rowset *rs, zx_json_err *err)
{
    uint32_t before = rs->nrows;
    int rc;
    ctx *c = malloc(sizeof(*c));
    if (err)
        memset(err, 0, sizeof(*err));
    if (!c) {
        if (err) {
            err->code = ZX_JSON_E_NOMEM;
            snprintf(err->msg, sizeof(err->msg), "out of memory");
        }
        return -1;
    }
    memset(c, 0, sizeof(*c));
    c->rs = rs;
    c->err = err;
    if (len == 0 || blank(body, len)) {
        set_err(c, ZX_JSON_E_EMPTY, 0, 0, 0, "empty body");
        rc = -1;
        goto done;
    }
    rc = fmt == ZX_BODY_NDJSON ? parse_ndjson(c, body, len) : parse_json(c, body, len);
done:
    free(c->dump);
    zx_jnum_free(&c->num);
    free(c);
    if (rc < 0) {
        zx_rowset_abort_row(rs);
        return -1;
    }
    return (int)(rs->nrows - before);
}

zx_body_format zx_body_format_from_content_type(const char *ct)
{
    static const char *const nd[] = {
        "application/x-ndjson", "application/jsonl", "application/ndjson",
    };
    if (!ct)
        return ZX_BODY_JSON;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    size_t n = strcspn(ct, ";");
    while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    for (size_t i = 0; i < sizeof(nd) / sizeof(nd[0]); i++)
        if (strlen(nd[i]) == n && strncasecmp(ct, nd[i], n) == 0)
            return ZX_BODY_NDJSON;
    return ZX_BODY_JSON;
}
