/*
 * debezium.c — a Debezium change event (or a JSON object kept latest per
 * key) into one row of a changes frame: the envelope, the operation, the
 * key, the mirror table's name and the source position.  See debezium.h;
 * the values themselves: debezium_values.c; the tables a template made:
 * debezium_tables.c; the source position: debezium_position.c.
 */
#include "workers/sources/debezium/debezium_int.h"

#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/timefmt.h"
#include "common/util.h"
#include "conf/config.h"

/* base64 of ZX_DBZ_UNAVAILABLE: the placeholder in a bytes column */
#define UNAVAILABLE_B64 ZX_DBZ_UNAVAILABLE_B64

/* What the walk found out about one event. */
typedef struct event {
    const json_t *schema;         /* the envelope's value schema, or NULL */
    const json_t *payload;
    zx_dbz_src src;               /* payload.source's fields */
    const json_t *row_schema;     /* the struct schema of after/before */
    const json_t *key_payload;    /* the key's fields (object), or NULL */
    const json_t *key_schema;     /* the key's struct schema, or NULL */
    json_t *after_doc, *before_doc;   /* MongoDB's documents, parsed (owned) */
    const json_t *after, *before;
    const char *op;               /* insert, update, delete, truncate */
    int mongo;
    unsigned vflags;              /* zx_dbz_value's flags */
    char keys[ZX_FRAME_MAX_KEY_COLUMNS][ZX_COLNAME_MAX + 1];
    const char *keysrc[ZX_FRAME_MAX_KEY_COLUMNS];  /* the fields' own names */
    size_t nkeys;
    char table[ZX_COLNAME_MAX + 1];
} event;

void zx_dbz_frame_init(zx_dbz_frame *f, zx_rowset *rs)
{
    memset(f, 0, sizeof(*f));
    f->rs = rs;
}

void zx_dbz_frame_reset(zx_dbz_frame *f)
{
    if (f->decls)
        memset(f->decls, 0, f->decls_cap * sizeof(*f->decls));
    f->table[0] = '\0';
    f->nkeys = 0;
    f->ntypes = 0;
    f->changes = 0;
}

void zx_dbz_frame_free(zx_dbz_frame *f)
{
    if (!f)
        return;
    zx_dbz_cache_free(&f->cache);
    zx_dbz_fast_free(f->fast);
    f->fast = NULL;
    free(f->types);
    free(f->decls);
    f->types = NULL;
    f->decls = NULL;
    f->ntypes = f->types_cap = f->decls_cap = 0;
}

void zx_dbz_init_conf(const zx_conf *conf, const zx_conf_pipeline *p, zx_dbz_conf *c,
                      char rej_table[ZX_COLNAME_MAX + 1])
{
    memset(c, 0, sizeof(*c));
    c->others = conf;
    c->self = p->name;
    c->mode = p->stream_mode == ZX_STREAM_LATEST ? ZX_DBZ_LATEST : ZX_DBZ_DEBEZIUM;
    c->table = p->table;
    c->key_columns = (const char *const *)p->key_columns;
    c->nkey_columns = p->nkey_columns;
    c->table_max = p->history ? 54 : 63;
    c->max_columns = p->max_columns;
    const char *t = p->table && !strchr(p->table, '{') ? p->table : p->name;
    snprintf(rej_table, ZX_COLNAME_MAX + 1, "%s", t);
    for (char *q = rej_table; *q; q++)
        if (*q == '-')
            *q = '_';
}

/* ---- the table's name ------------------------------------------------ */

/* 1 when t (with or without "__changes") is written by x alone. */
static int same_table(const char *t, const char *x)
{
    size_t n = strlen(x);
    return !strcasecmp(t, x) || (!strncasecmp(t, x, n) && !strcasecmp(t + n, "__changes"));
}

/* The pipeline of conf other than self that writes table t, or NULL. */
static const char *owner(const zx_dbz_conf *c, const char *t)
{
    const zx_conf *conf = c->others;
    for (size_t i = 0; conf && i < conf->npipelines; i++) {
        const zx_conf_pipeline *p = &conf->pipelines[i];
        if (c->self && !strcmp(p->name, c->self))
            continue;
        if (p->table && !strchr(p->table, '{') && same_table(t, p->table))
            return p->name;
        for (size_t k = 0; p->mirrors && k < p->nmirrors; k++)
            if (p->mirrors[k] && same_table(t, p->mirrors[k]))
                return p->name;
    }
    return NULL;
}

static int64_t src_int(const zx_dbz_src *src, int f, int *ok)
{
    *ok = src->present && src->v[f].t == ZX_DBZ_SV_INT;
    return *ok ? src->v[f].i : 0;
}

/* Expand c->table for an event (topic may be NULL): debezium_int.h. */
int zx_dbz_table_name(const zx_dbz_conf *c, const zx_dbz_src *src, const char *topic,
                      char table[ZX_COLNAME_MAX + 1], char *why, size_t whylen)
{
    char buf[512];
    size_t n = 0;
    const char *tpl = c->table ? c->table : "";
    for (const char *p = tpl; *p; p++) {
        const char *val = NULL;
        if (*p == '{') {
            const char *end = strchr(p, '}');
            if (!end)
                break;
            char ph[32];
            size_t pl = (size_t)(end - p - 1);
            if (pl >= sizeof(ph))
                pl = sizeof(ph) - 1;
            memcpy(ph, p + 1, pl);
            ph[pl] = '\0';
            if (!strcmp(ph, "topic"))
                val = topic;
            else if (!strcmp(ph, "source.collection"))
                val = zx_dbz_src_str(src, ZX_DBZ_SRC_COLLECTION);
            else if (!strcmp(ph, "source.table"))
                val = zx_dbz_src_str(src, ZX_DBZ_SRC_TABLE);
            else if (!strcmp(ph, "source.schema"))
                val = zx_dbz_src_str(src, ZX_DBZ_SRC_SCHEMA);
            else if (!strcmp(ph, "source.db"))
                val = zx_dbz_src_str(src, ZX_DBZ_SRC_DB);
            if (!val || !*val) {
                snprintf(why, whylen, "the event has no %s for the table name \"%s\"", ph, tpl);
                return 1;
            }
            char norm[ZX_COLNAME_MAX + 1];
            size_t k = zx_colname_normalise(val, strlen(val), norm);
            if (n + k >= sizeof(buf))
                k = sizeof(buf) - 1 - n;
            memcpy(buf + n, norm, k);
            n += k;
            p = end;
            continue;
        }
        if (n + 1 < sizeof(buf))
            buf[n++] = *p;
    }
    buf[n] = '\0';
    size_t k = zx_colname_normalise(buf, n, table);
    size_t max = c->table_max && c->table_max < ZX_COLNAME_MAX ? c->table_max : ZX_COLNAME_MAX;
    if (k > max)
        table[max] = '\0', k = max;
    if (k >= 9 && strcmp(table + k - 9, "__rejects") == 0) {
        snprintf(why, whylen, "the table name \"%s\" made from \"%s\" is reserved for zx",
                 table, tpl);
        return 1;
    }
    if (k >= 9 && strcmp(table + k - 9, "__changes") == 0) {
        snprintf(why, whylen, "the table name \"%s\" made from \"%s\" is reserved for history",
                 table, tpl);
        return 1;
    }
    const char *o = owner(c, table);
    if (o) {
        snprintf(why, whylen, "the table name \"%s\" made from \"%s\" is pipeline %s's table",
                 table, tpl, o);
        return 1;
    }
    if (strncmp(table, "sqlite_", 7) == 0) {
        snprintf(why, whylen, "the table name \"%s\" made from \"%s\" is reserved by SQLite",
                 table, tpl);
        return 1;
    }
    return zx_dbz_tables_refuse(c, table, tpl, why, whylen);
}

/* ---- the envelope ------------------------------------------------------ */

/* {"schema": ..., "payload": ...}: sets *schema (NULL when null) and
 * returns the payload; any other value is its own payload. */
static const json_t *unwrap(const json_t *v, const json_t **schema)
{
    *schema = NULL;
    if (json_is_object(v) && json_object_size(v) == 2) {
        const json_t *s = json_object_get(v, "schema"), *p = json_object_get(v, "payload");
        if (s && p && (json_is_object(s) || json_is_null(s))) {
            *schema = json_is_object(s) ? s : NULL;
            return p;
        }
    }
    return v;
}

/* The schema of field `name` of struct schema st, or NULL.  *hint: where
 * to look first (payloads list their fields in the schema's order), then
 * after the one found. */
const json_t *zx_dbz_field_schema(const json_t *st, const char *name, size_t *hint)
{
    const json_t *fields = st ? json_object_get(st, "fields") : NULL;
    size_t n = json_array_size(fields);
    for (size_t k = 0; k < n; k++) {
        size_t i = (*hint + k) % n;
        const json_t *f = json_array_get(fields, i);
        const json_t *fn = json_object_get(f, "field");
        if (json_is_string(fn) && strcmp(json_string_value(fn), name) == 0) {
            *hint = i + 1;
            return f;
        }
    }
    return NULL;
}

static json_t *parse(const void *p, size_t n)
{
    return n ? json_loadb(p, n, JSON_DECODE_ANY, NULL) : NULL;
}

/* ---- the frame's declared types --------------------------------------- */

int zx_dbz_note_decl(zx_dbz_frame *f, int64_t col, const char *decl)
{
    if (!decl || col < 0)
        return 0;
    if ((size_t)col >= f->decls_cap) {
        size_t cap = f->decls_cap ? f->decls_cap : 16;
        while (cap <= (size_t)col)
            cap *= 2;
        const char **n = realloc(f->decls, cap * sizeof(*n));
        if (!n)
            return -1;
        memset(n + f->decls_cap, 0, (cap - f->decls_cap) * sizeof(*n));
        f->decls = n;
        f->decls_cap = cap;
    }
    if (!f->decls[col])
        f->decls[col] = decl;
    return 0;
}

/* The longest declared type: the static names (27 bytes at most), or
 * "numeric(p,s)" made in zx_dbz_kind.numeric. */
#define DECL_MAX sizeof(((zx_dbz_kind *)0)->numeric)

size_t zx_dbz_frame_meta_bound(const zx_dbz_frame *f)
{
    size_t n = 64 + strlen(f->table) + f->rs->name_bytes + (size_t)f->rs->ncols * (16 + DECL_MAX);
    for (size_t i = 0; i < f->nkeys; i++)
        n += 8 + (f->keys[i] ? strlen(f->keys[i]) : 0);
    return n;
}

int zx_dbz_frame_types(zx_dbz_frame *f, const zx_frame_coltype **types, size_t *n)
{
    f->ntypes = 0;
    for (uint32_t c = 0; c < f->rs->ncols && c < f->decls_cap; c++) {
        if (!f->decls[c])
            continue;
        if (zx_grow(&f->types, f->ntypes, &f->types_cap, sizeof(*f->types)) < 0)
            return -1;
        f->types[f->ntypes++] = (zx_frame_coltype){ .column = f->rs->cols[c].name,
                                                    .type = f->decls[c] };
    }
    *types = f->types;
    *n = f->ntypes;
    return 0;
}

/* ---- keys ------------------------------------------------------------- */

/* The event's key columns: the message key's fields, MongoDB's _id, or
 * the stream's key_columns.  0, or 1 with why. */
static int key_columns(const zx_dbz_conf *c, event *e, char *why, size_t whylen)
{
    e->nkeys = 0;
    if (e->mongo) {
        strcpy(e->keys[0], "_id");
        zx_colname_normalise("_id", 3, e->keys[0]);
        e->keysrc[0] = "_id";
        e->nkeys = 1;
        return 0;
    }
    if (json_is_object(e->key_payload) && json_object_size(e->key_payload) > 0) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)e->key_payload, k, v) {
            if (e->nkeys == ZX_FRAME_MAX_KEY_COLUMNS) {
                snprintf(why, whylen, "the message key has more than %u fields",
                         ZX_FRAME_MAX_KEY_COLUMNS);
                return 1;
            }
            zx_colname_normalise(k, strlen(k), e->keys[e->nkeys]);
            e->keysrc[e->nkeys++] = k;
        }
        return 0;
    }
    for (size_t i = 0; i < c->nkey_columns && i < ZX_FRAME_MAX_KEY_COLUMNS; i++) {
        zx_colname_normalise(c->key_columns[i], strlen(c->key_columns[i]), e->keys[i]);
        e->keysrc[i] = c->key_columns[i];
        e->nkeys++;
    }
    if (!e->nkeys) {
        snprintf(why, whylen, "the event has no key: the message has none (set the stream's "
                 "key_columns)");
        return 1;
    }
    return 0;
}

static int is_key(const event *e, const char *col)
{
    for (size_t k = 0; k < e->nkeys; k++)
        if (strcmp(e->keys[k], col) == 0)
            return 1;
    return 0;
}

/* ---- one row ------------------------------------------------------------ */

static int add_cell(zx_rowset *rs, const char *name, const zx_value *v, int64_t *colp)
{
    int64_t col = zx_rowset_column(rs, name, strlen(name), ZX_T_NULL);
    if (colp)
        *colp = col;
    return col < 0 ? -1 : zx_rowset_add(rs, (uint32_t)col, v);
}

static int add_str(zx_rowset *rs, const char *name, zx_type t, const char *s)
{
    size_t n = strlen(s);
    char *c = zx_rowset_strdup(rs, s, n);
    if (!c)
        return -1;
    zx_value v = { .type = (uint8_t)t, .len = (uint32_t)n, .s = c };
    int64_t col = zx_rowset_column(rs, name, strlen(name), t);
    return col < 0 ? -1 : zx_rowset_add(rs, (uint32_t)col, &v);
}

static int unavailable(const json_t *v)
{
    if (json_is_string(v))
        return strcmp(json_string_value(v), ZX_DBZ_UNAVAILABLE) == 0 ||
               strcmp(json_string_value(v), UNAVAILABLE_B64) == 0;
    if (json_is_array(v) && json_array_size(v) == 1)
        return unavailable(json_array_get(v, 0));
    return 0;
}

/* Append name, JSON-escaped and quoted, to the array text in *buf. */
int zx_dbz_json_name(char **buf, size_t *len, size_t *cap, const char *name)
{
    size_t need = *len + 6 * strlen(name) + 4;
    if (need > *cap) {
        size_t nc = need * 2;
        char *n = realloc(*buf, nc);
        if (!n)
            return -1;
        *buf = n;
        *cap = nc;
    }
    char *b = *buf;
    size_t n = *len;
    b[n] = n ? ',' : '[';
    n++;
    b[n++] = '"';
    for (const unsigned char *s = (const unsigned char *)name; *s; s++) {
        if (*s == '"' || *s == '\\') {
            b[n++] = '\\';
            b[n++] = (char)*s;
        } else if (*s < 0x20) {
            n += (size_t)snprintf(b + n, *cap - n, "\\u%04x", *s);
        } else {
            b[n++] = (char)*s;
        }
    }
    b[n++] = '"';
    *len = n;
    return 0;
}

/* The cells of row object `row` (with struct schema st, may be NULL):
 * every field, or (keys_only) the key fields.  Unavailable values are
 * left out and listed in *unch.  0, 1 (why: a key value is missing), -1. */
static int row_cells(zx_dbz_frame *f, event *e, const json_t *row, const json_t *st,
                     int keys_only, const char *prefix, char **unch, size_t *ulen,
                     size_t *ucap)
{
    zx_rowset *rs = f->rs;
    const char *k;
    const json_t *v;
    size_t hint = 0;
    json_object_foreach((json_t *)row, k, v) {
        char norm[ZX_COLNAME_MAX + 1];
        zx_colname_normalise(k, strlen(k), norm);
        if (keys_only && !is_key(e, norm))
            continue;
        if (!keys_only && unch && unavailable(v)) {
            if (zx_dbz_json_name(unch, ulen, ucap, norm) < 0)
                return -1;
            continue;
        }
        zx_value zv;
        const char *decl;
        const json_t *fs = st ? zx_dbz_field_schema(st, k, &hint) : NULL;
        if (zx_dbz_value(fs, v, rs, &zv, &decl, e->vflags) < 0)
            return -1;
        char name[ZX_COLNAME_MAX + 16];
        snprintf(name, sizeof(name), "%s%s", prefix ? prefix : "", norm);
        int64_t col;
        if (add_cell(rs, name, &zv, &col) < 0 ||
            (!prefix && zx_dbz_note_decl(f, col, decl) < 0))
            return -1;
    }
    return 0;
}

/* 1 when before holds every key column and one of them differs from
 * after's. */
static int key_moved(const event *e)
{
    if (!json_is_object(e->before) || !json_is_object(e->after))
        return 0;
    int moved = 0;
    for (size_t k = 0; k < e->nkeys; k++) {
        const json_t *a = json_object_get(e->before, e->keysrc[k]);
        const json_t *b = json_object_get(e->after, e->keysrc[k]);
        if (!a || json_is_null(a) || unavailable(a))
            return 0;
        if (!b || !json_equal((json_t *)a, (json_t *)b))
            moved = 1;
    }
    return moved;
}

/* ---- the event ------------------------------------------------------------ */

static const char *jtype(const json_t *v)
{
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

/* The reserved cells of a change: debezium_int.h. */
int zx_dbz_reserved(zx_rowset *rs, const zx_dbz_src *src, const char *op, const zx_dbz_msg *m)
{
    char lsn[256], seq[128];
    zx_dbz_position(src, lsn, sizeof(lsn), seq, sizeof(seq));
    if (!lsn[0] && m->position)
        snprintf(lsn, sizeof(lsn), "%s", m->position);
    if (add_str(rs, ZX_CH_OP, ZX_T_TEXT, op) < 0 || add_str(rs, ZX_CH_LSN, ZX_T_TEXT, lsn) < 0)
        return -1;
    if (seq[0] && add_str(rs, ZX_CH_SEQ, ZX_T_TEXT, seq) < 0)
        return -1;
    int ok;
    int64_t us = src_int(src, ZX_DBZ_SRC_TS_US, &ok);
    if (!ok) {
        us = src_int(src, ZX_DBZ_SRC_TS_MS, &ok);
        if (ok && us <= INT64_MAX / 1000 && us >= INT64_MIN / 1000)
            us *= 1000;
        else
            ok = 0;
    }
    if (ok && us > 0 && us <= 253402300799999999LL) {
        char ts[ZX_TS_BUFSZ];
        size_t tl = zx_ts_format(us, ts);
        char *cs = zx_rowset_strdup(rs, ts, tl);
        zx_value v = { .type = ZX_T_TIMESTAMP, .len = (uint32_t)tl, .s = cs, .u.i = us };
        int64_t col = zx_rowset_column(rs, ZX_CH_COMMIT_TIME, strlen(ZX_CH_COMMIT_TIME),
                                       ZX_T_TIMESTAMP);
        if (!cs || col < 0 || zx_rowset_add(rs, (uint32_t)col, &v) < 0)
            return -1;
    }
    int64_t xid = src_int(src, ZX_DBZ_SRC_TXID, &ok);
    if (ok) {
        zx_value v = { .type = ZX_T_INT, .u.i = xid };
        int64_t col = zx_rowset_column(rs, ZX_CH_XID, strlen(ZX_CH_XID), ZX_T_INT);
        if (col < 0 || zx_rowset_add(rs, (uint32_t)col, &v) < 0)
            return -1;
    }
    return 0;
}

/* The frame can take a change of table and keys (or is empty). */
int zx_dbz_fits(const zx_dbz_frame *f, const char *table,
                const char (*keys)[ZX_COLNAME_MAX + 1], size_t nkeys, int truncate)
{
    if (!f->changes)
        return 1;
    if (strcmp(f->table, table) != 0)
        return 0;
    if (truncate)
        return 1;
    if (f->nkeys != nkeys)
        return 0;
    for (size_t k = 0; k < nkeys; k++)
        if (strcmp(f->keys[k], keys[k]) != 0)
            return 0;
    return 1;
}

/* The frame takes the table and key of its first change. */
int zx_dbz_adopt(zx_dbz_frame *f, const char *table,
                 const char (*keys)[ZX_COLNAME_MAX + 1], size_t nkeys)
{
    if (f->changes)
        return 0;
    snprintf(f->table, sizeof(f->table), "%s", table);
    for (size_t k = 0; k < nkeys; k++)
        if (!(f->keys[k] = zx_rowset_strdup(f->rs, keys[k], strlen(keys[k]))))
            return -1;
    f->nkeys = nkeys;
    return 0;
}

/* A key value of e's row object `row`: 1 when every key column has a
 * non-null value there. */
static int has_keys(const event *e, const json_t *row, char *why, size_t whylen)
{
    for (size_t k = 0; k < e->nkeys; k++) {
        const json_t *v = json_object_get(row, e->keysrc[k]);
        if (!v || json_is_null(v)) {
            snprintf(why, whylen, "the change has no value for key column %.100s", e->keysrc[k]);
            return 0;
        }
    }
    return 1;
}

/* MongoDB's _id in extended JSON: {"$numberLong": "7"} and
 * {"$numberInt": "7"} become the integer (as the key's "id" text "7"
 * parses), anything else stays as it is.  A new reference. */
static json_t *mongo_id(json_t *id)
{
    const char *k;
    json_t *v;
    if (json_is_object(id) && json_object_size(id) == 1) {
        json_object_foreach(id, k, v) {
            if ((!strcmp(k, "$numberLong") || !strcmp(k, "$numberInt")) && json_is_string(v)) {
                char *end;
                long long x = strtoll(json_string_value(v), &end, 10);
                if (*end == '\0' && end != json_string_value(v))
                    return json_integer(x);
            }
        }
    }
    return json_incref(id);
}

/* MongoDB: a document given as JSON text, parsed into *doc (its _id as
 * mongo_id makes it). */
static int mongo_doc(const json_t *v, json_t **doc, const json_t **out)
{
    *out = v;
    if (!json_is_string(v))
        return 0;
    *doc = json_loadb(json_string_value(v), json_string_length(v), 0, NULL);
    if (!*doc || !json_is_object(*doc))
        return -1;
    json_t *id = json_object_get(*doc, "_id");
    if (id && json_object_set_new(*doc, "_id", mongo_id(id)) < 0)
        return -1;
    *out = *doc;
    return 0;
}

/* Append the row of e (op: insert/update/delete/truncate).  ADDED,
 * REJECT or NOMEM. */
static int add_row(const zx_dbz_conf *c, zx_dbz_frame *f, event *e, const zx_dbz_msg *m,
                   char *why, size_t whylen)
{
    zx_rowset *rs = f->rs;
    zx_rowset_mark mk;
    zx_rowset_save(rs, &mk);
    char *unch = NULL;
    size_t ulen = 0, ucap = 0;
    int rc = ZX_DBZ_NOMEM;
    if (zx_rowset_begin_row(rs) < 0 || zx_dbz_reserved(rs, &e->src, e->op, m) < 0)
        goto out;
    if (!strcmp(e->op, "insert") || !strcmp(e->op, "update")) {
        if (!has_keys(e, e->after, why, whylen)) {
            rc = ZX_DBZ_REJECT;
            goto out;
        }
        if (row_cells(f, e, e->after, e->row_schema, 0, NULL, &unch, &ulen, &ucap) < 0)
            goto out;
        if (unch) {
            unch[ulen++] = ']';   /* json_name leaves room for it */
            char *s = zx_rowset_strdup(rs, unch, ulen);
            zx_value v = { .type = ZX_T_JSON, .len = (uint32_t)ulen, .s = s };
            int64_t col = zx_rowset_column(rs, ZX_CH_UNCHANGED, strlen(ZX_CH_UNCHANGED),
                                           ZX_T_JSON);
            if (!s || col < 0 || zx_rowset_add(rs, (uint32_t)col, &v) < 0)
                goto out;
        }
        if (!strcmp(e->op, "update") && key_moved(e) &&
            row_cells(f, e, e->before, e->row_schema, 1, ZX_CH_OLD_PREFIX, NULL, NULL,
                      NULL) < 0)
            goto out;
    } else if (!strcmp(e->op, "delete")) {
        const json_t *from = NULL, *st = e->row_schema;
        char tmp[8];
        if (json_is_object(e->before) && has_keys(e, e->before, tmp, sizeof(tmp)))
            from = e->before;
        else if (json_is_object(e->key_payload) && has_keys(e, e->key_payload, tmp, sizeof(tmp)))
            from = e->key_payload, st = e->key_schema;
        if (!from) {
            snprintf(why, whylen, "a delete without the values of its key (%s)", e->keysrc[0]);
            rc = ZX_DBZ_REJECT;
            goto out;
        }
        if (row_cells(f, e, from, st, 1, NULL, NULL, NULL, NULL) < 0)
            goto out;
    }
    /* the columns one frame may bring (hostile events with thousands of
     * fields): a change that passes the cap starts a frame of its own,
     * and alone over it is a reject */
    uint32_t cap = (c->max_columns ? c->max_columns : ZX_DBZ_MAX_COLUMNS) + ZX_DBZ_EXTRA_COLUMNS;
    if (rs->ncols > cap) {
        if (f->changes) {
            rc = ZX_DBZ_OTHER;
        } else {
            snprintf(why, whylen, "the event has more than %u columns (pipelines.<name>."
                     "max_columns)", cap - ZX_DBZ_EXTRA_COLUMNS);
            rc = ZX_DBZ_REJECT;
        }
        goto out;
    }
    zx_rowset_end_row(rs);
    if (zx_dbz_adopt(f, e->table, (const char (*)[ZX_COLNAME_MAX + 1])e->keys, e->nkeys) < 0)
        goto out;
    f->changes++;
    free(unch);
    return ZX_DBZ_ADDED;
out:
    free(unch);
    if (rs->row_open)
        zx_rowset_abort_row(rs);
    zx_rowset_truncate(rs, &mk);
    for (size_t i = mk.ncols; i < f->decls_cap; i++)
        f->decls[i] = NULL;
    return rc;
}

/* MongoDB's delete: the key's "id" is the _id as JSON text. */
static int mongo_key(event *e, json_t **doc)
{
    const json_t *id = json_is_object(e->key_payload) ? json_object_get(e->key_payload, "id")
                                                      : NULL;
    if (!json_is_string(id))
        return -1;
    json_t *v = json_loadb(json_string_value(id), json_string_length(id), JSON_DECODE_ANY, NULL);
    if (!v)
        return -1;
    *doc = json_object();
    json_t *norm = mongo_id(v);
    json_decref(v);
    if (!*doc || json_object_set_new(*doc, "_id", norm) < 0)
        return -1;
    e->before = *doc;
    return 0;
}

static int debezium(const zx_dbz_conf *c, zx_dbz_frame *f, event *e, const zx_dbz_msg *m,
                    char *why, size_t whylen, unsigned *notes)
{
    const json_t *p = e->payload;
    if (!json_is_object(p)) {
        snprintf(why, whylen, "a Debezium event must be a JSON object; this one is %s",
                 jtype(p));
        return ZX_DBZ_REJECT;
    }
    const json_t *opv = json_object_get(p, "op");
    if (!opv) {
        if (json_object_get(p, "before") || json_object_get(p, "after")) {
            snprintf(why, whylen, "the event has no \"op\"");
            return ZX_DBZ_REJECT;
        }
        return ZX_DBZ_SKIPPED;   /* a heartbeat, a schema change, a transaction record */
    }
    const char *op = json_is_string(opv) ? json_string_value(opv) : "";
    if (!strcmp(op, "c") || !strcmp(op, "r"))
        e->op = "insert";
    else if (!strcmp(op, "u"))
        e->op = "update";
    else if (!strcmp(op, "d"))
        e->op = "delete";
    else if (!strcmp(op, "t"))
        e->op = "truncate";
    else if (!strcmp(op, "m"))
        return ZX_DBZ_SKIPPED;   /* a logical decoding message */
    else {
        snprintf(why, whylen, "unknown operation \"op\": %.40s", json_is_string(opv) ? op : jtype(opv));
        return ZX_DBZ_REJECT;
    }
    zx_dbz_src_of(json_object_get(p, "source"), &e->src);
    const char *conn = zx_dbz_src_str(&e->src, ZX_DBZ_SRC_CONNECTOR);
    e->mongo = conn && !strcmp(conn, "mongodb");
    if (conn && (!strcmp(conn, "mysql") || !strcmp(conn, "mariadb")))
        e->vflags |= ZX_DBZ_MYSQL;
    const json_t *after = json_object_get(p, "after"), *before = json_object_get(p, "before");
    if (e->mongo) {
        if (mongo_doc(after, &e->after_doc, &after) < 0 ||
            mongo_doc(before, &e->before_doc, &before) < 0) {
            snprintf(why, whylen, "a MongoDB event whose after or before is not a JSON document");
            return ZX_DBZ_REJECT;
        }
    }
    e->after = json_is_object(after) ? after : NULL;
    e->before = json_is_object(before) ? before : NULL;
    if ((!strcmp(e->op, "insert") || !strcmp(e->op, "update")) && !e->after) {
        if (e->mongo)
            snprintf(why, whylen, "a MongoDB update without the whole document (only its "
                     "patch or updateDescription): set the connector's capture.mode to "
                     "change_streams_update_full so that \"after\" carries it");
        else
            snprintf(why, whylen, "op \"%s\" without an \"after\" object", op);
        return ZX_DBZ_REJECT;
    }
    if (e->schema) {
        size_t h = 0;
        e->row_schema = zx_dbz_field_schema(e->schema, "after", &h);
        if (!e->row_schema)
            e->row_schema = zx_dbz_field_schema(e->schema, "before", &h);
    } else {
        *notes |= ZX_DBZ_NOTE_NO_SCHEMA;
    }
    if (e->mongo)
        e->row_schema = NULL;   /* the documents are JSON text: inferred */
    if (zx_dbz_table_name(c, &e->src, m->topic, e->table, why, whylen))
        return ZX_DBZ_REJECT;
    int trunc = !strcmp(e->op, "truncate");
    if (trunc && f->changes && strcmp(f->table, e->table) == 0) {
        e->nkeys = f->nkeys;
        for (size_t k = 0; k < f->nkeys; k++)
            snprintf(e->keys[k], sizeof(e->keys[k]), "%s", f->keys[k]);
    } else if (key_columns(c, e, why, whylen)) {
        if (!trunc)
            return ZX_DBZ_REJECT;
        e->nkeys = 0;
    }
    if (e->mongo && !strcmp(e->op, "delete") && !e->before && mongo_key(e, &e->before_doc) < 0) {
        snprintf(why, whylen, "a MongoDB delete whose key has no \"id\" JSON text");
        return ZX_DBZ_REJECT;
    }
    if (!zx_dbz_fits(f, e->table, (const char (*)[ZX_COLNAME_MAX + 1])e->keys, e->nkeys, trunc))
        return ZX_DBZ_OTHER;
    return add_row(c, f, e, m, why, whylen);
}

/* mode: latest: each object of the value upserts its row. */
static int latest(const zx_dbz_conf *c, zx_dbz_frame *f, event *e, const json_t *val,
                  const zx_dbz_msg *m, char *why, size_t whylen)
{
    if (zx_dbz_table_name(c, &e->src, m->topic, e->table, why, whylen))
        return ZX_DBZ_REJECT;
    const json_t *kp = e->key_payload;
    e->key_payload = NULL;     /* the key columns are the stream's */
    if (key_columns(c, e, why, whylen))
        return ZX_DBZ_REJECT;
    e->key_payload = kp;
    if (!zx_dbz_fits(f, e->table, (const char (*)[ZX_COLNAME_MAX + 1])e->keys, e->nkeys, 0))
        return ZX_DBZ_OTHER;
    if (!val) {   /* a tombstone: a delete when its key names the row */
        char tmp[8];
        if (!json_is_object(kp) || !has_keys(e, kp, tmp, sizeof(tmp)))
            return ZX_DBZ_SKIPPED;
        e->op = "delete";
        e->before = kp;
        return add_row(c, f, e, m, why, whylen);
    }
    size_t n = json_is_array(val) ? json_array_size(val) : 1;
    if (!json_is_object(val) && !json_is_array(val)) {
        snprintf(why, whylen, "the message is %s; each event must be a JSON object", jtype(val));
        return ZX_DBZ_REJECT;
    }
    zx_rowset_mark mk;
    zx_rowset_save(f->rs, &mk);
    uint64_t changes = f->changes;
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_is_array(val) ? json_array_get(val, i) : val;
        int rc;
        if (!json_is_object(o)) {
            snprintf(why, whylen, "element %zu of the array is %s; each event must be a JSON "
                     "object", i, jtype(o));
            rc = ZX_DBZ_REJECT;
        } else {
            e->op = "update";
            e->after = o;
            rc = add_row(c, f, e, m, why, whylen);
            if (rc == ZX_DBZ_REJECT && n > 1) {
                char w[300];
                snprintf(w, sizeof(w), "element %zu of the array: %s", i, why);
                snprintf(why, whylen, "%s", w);
            }
        }
        if (rc != ZX_DBZ_ADDED) {
            zx_rowset_truncate(f->rs, &mk);
            for (size_t k = mk.ncols; k < f->decls_cap; k++)
                f->decls[k] = NULL;
            f->changes = changes;
            if (!changes)
                zx_dbz_frame_reset(f);
            return rc;
        }
    }
    return n ? ZX_DBZ_ADDED : ZX_DBZ_SKIPPED;
}

int zx_dbz_add_json(const zx_dbz_conf *c, zx_dbz_frame *f, const zx_dbz_msg *m, char *why,
                    size_t whylen, unsigned *notes)
{
    event e;
    memset(&e, 0, sizeof(e));
    json_t *own_val = NULL, *own_key = NULL;
    int rc;
    why[0] = '\0';
    const json_t *val = m->value_json, *payload = NULL;
    if (!val && m->value) {
        json_error_t jerr;
        if (!m->len) {
            snprintf(why, whylen, "empty message");
            return ZX_DBZ_REJECT;
        }
        /* the schema of an envelope: parsed once per table */
        int sp = c->mode == ZX_DBZ_DEBEZIUM
                     ? zx_dbz_split(&f->cache, m->value, m->len, &e.schema, &own_val, why, whylen)
                     : 0;
        if (sp < 0)
            return ZX_DBZ_REJECT;
        if (sp > 0) {
            payload = own_val;
            goto have_value;
        }
        own_val = json_loadb(m->value, m->len, JSON_DECODE_ANY, &jerr);
        if (!own_val) {
            snprintf(why, whylen, "not JSON: at byte %d (line %d, column %d): %s",
                     jerr.position, jerr.line, jerr.column, jerr.text);
            return ZX_DBZ_REJECT;
        }
        val = own_val;
    }
    payload = val ? unwrap(val, &e.schema) : NULL;
have_value:;
    const json_t *key = m->key_json;
    if (!key && m->key)
        key = own_key = parse(m->key, m->key_len);   /* a key that is not JSON: none */
    if (key)
        e.key_payload = unwrap(key, &e.key_schema);
    if (payload && json_is_null(payload))
        payload = NULL;
    if (c->mode == ZX_DBZ_LATEST) {
        rc = latest(c, f, &e, payload, m, why, whylen);
    } else if (!payload) {
        rc = ZX_DBZ_SKIPPED;   /* a tombstone: the delete came before it */
    } else {
        e.payload = payload;
        rc = debezium(c, f, &e, m, why, whylen, notes);
    }
    json_decref(e.after_doc);
    json_decref(e.before_doc);
    json_decref(own_val);
    json_decref(own_key);
    if (rc == ZX_DBZ_REJECT && !why[0])
        snprintf(why, whylen, "bad event");
    /* counted once an event of it is in the frame */
    if (rc == ZX_DBZ_ADDED && c->made && zx_dbz_tables_add(c->made, f->table) < 0)
        rc = ZX_DBZ_NOMEM;   /* the row stays in f: the caller gives the frame up */
    return rc;
}

int zx_dbz_add(const zx_dbz_conf *c, zx_dbz_frame *f, const zx_dbz_msg *m, char *why,
               size_t whylen, unsigned *notes)
{
    /* the common case without jansson (debezium_fast.c); what it declines,
     * and what it is not for, the jansson way */
    if (c->mode == ZX_DBZ_DEBEZIUM && m->value && m->len && !m->value_json && !m->key_json) {
        int rc = zx_dbz_fast_add(c, f, m, why, whylen, notes);
        if (rc != ZX_DBZ_DECLINED) {
            if (rc == ZX_DBZ_ADDED && c->made && zx_dbz_tables_add(c->made, f->table) < 0)
                rc = ZX_DBZ_NOMEM;
            return rc;
        }
    }
    return zx_dbz_add_json(c, f, m, why, whylen, notes);
}
