/*
 * debezium_fast.c — the fast path of zx_dbz_add (debezium.h): one Debezium
 * event, as Kafka Connect's JsonConverter writes it (with or without the
 * {"schema", "payload"} envelope), parsed by hand straight into the
 * frame, without jansson.
 *
 * Why: the jansson path (debezium.c) builds a json_t tree of every event,
 * key and payload, and walks it: ~60% of the stream worker's time on
 * Debezium topics.  The schema is the bulk of an event's bytes and the
 * same for every event of a table: here it is matched byte for byte
 * against the schemas seen before (zx_dbz_cache), whose compiled form
 * (the row struct's fields and what each one's type says) is kept with
 * them, and the payload is read once.
 *
 * Contract (debezium_int.h, zx_dbz_fast_add): for every message it does
 * not decline, the frame, the rowset (rows, columns, cells, types), the
 * declared types, the answer, the reject's words and the notes are
 * EXACTLY what zx_dbz_add_json makes of it.  The jansson path stays the
 * reference: tests/unit/test_debezium.c runs both on every corpus event
 * and variations, tests/fuzz/fuzz_debezium.c aborts when they differ.
 * The steps shared with it (table name, reserved cells, source
 * positions, the value of a field by its kind) are the same functions.
 *
 * It declines (ZX_DBZ_DECLINED, the frame as it was) whatever is not the
 * common case: invalid JSON (jansson says why), a key written twice in an
 * object it reads, "\u0000", nesting deeper than MAX_DEPTH, a number
 * beyond int64 or double or longer than NUM_MAX characters, a non-ASCII
 * byte outside a string, more than MAX_MEMBERS members in an object it
 * reads, mode latest, values given as json_t, a MongoDB event, op "t" and
 * "m", an event without "op" or a null payload, a delete whose keys are
 * only in the message key, an object or array in `after` (or as a key
 * value), a real kept as text, a message key that is not valid JSON, and
 * every reject but the table name's.
 *
 * It must never: read outside the message's bytes, recurse more than
 * MAX_DEPTH levels, keep a pointer into the message after it returns, or
 * leave anything in the frame when it declines.
 */
#include "workers/sources/debezium/debezium_int.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hex.h"
#include "common/json_scan.h"

#define MAX_DEPTH 512
#define MAX_MEMBERS 1024        /* of one object read member by member */
#define TOP_MEMBERS 64          /* of the message and of the payload */
#define NUM_MAX 120

/* A member of an object read member by member: its key decoded (in the
 * scratch buffer, NUL-terminated) and its value. */
typedef struct mem {
    const char *k;
    size_t kn;
    zx_dbz_sv v;                /* OTHER: s, n = the raw text of the value */
} mem;

typedef struct obj {
    int present;                /* it is an object */
    size_t first, n;            /* members x->m[first .. first + n) */
} obj;

struct zx_dbz_fast {
    char *buf;                  /* decoded strings */
    size_t cap, used;
    mem *m;
    size_t mcap, mn;
};

/* A schema's compiled form: the fields of its row struct (after's, else
 * before's) in order, as zx_dbz_field_schema walks them. */
typedef struct ffield {
    const char *name;           /* into the cached json_t, or NULL */
    zx_dbz_kind k;
} ffield;
struct zx_dbz_fast_schema {
    int has_row;                /* the schema has an after or before field */
    size_t n;
    ffield *f;
};

void zx_dbz_fast_schema_free(struct zx_dbz_fast_schema *s)
{
    if (!s)
        return;
    free(s->f);
    free(s);
}

void zx_dbz_fast_free(struct zx_dbz_fast *x)
{
    if (!x)
        return;
    free(x->buf);
    free(x->m);
    free(x);
}

/* ---- bytes (the same scanning as common/json_fast.c) --------------------- */

typedef struct px {
    const char *p, *e;
    struct zx_dbz_fast *x;
} px;

static inline int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static inline void ws(px *s)
{
    while (s->p < s->e && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

/* The string at s->p ('"') decoded into the scratch buffer: 0, -1. */
static int str(px *s, const char **out, size_t *n)
{
    int esc = 0;
    const char *q = zx_js_scan_str(s->p + 1, s->e, &esc);
    if (!q)
        return -1;
    struct zx_dbz_fast *x = s->x;
    char *d = x->buf + x->used;   /* room: the buffer holds 2x the message */
    long k;
    if (!esc) {
        k = q - s->p - 1;
        memcpy(d, s->p + 1, (size_t)k);
    } else if ((k = zx_js_decode_str(s->p + 1, q, d, 0)) < 0) {
        return -1;
    }
    d[k] = '\0';
    x->used += (size_t)k + 1;
    *out = d;
    *n = (size_t)k;
    s->p = q + 1;
    return 0;
}

static const double pow10_tab[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* The number at s->p (RFC 8259 grammar) into *v (INT or REAL): 0, or -1
 * when invalid or declined (beyond int64 / double, too long). */
static int number(px *s, zx_dbz_sv *v)
{
    const char *p = s->p, *e = s->e, *st = p;
    int neg = 0, is_int = 1, slow = 0;
    uint64_t m = 0;
    int nd = 0;
    long ex = 0;
    if (*p == '-') {
        neg = 1;
        if (++p >= e)
            return -1;
    }
    if (*p == '0') {
        p++;
    } else if (is_digit(*p)) {
        while (p < e && is_digit(*p)) {
            if (nd < 19)
                m = m * 10 + (uint64_t)(*p - '0');
            else
                slow = 1;
            nd++;
            p++;
        }
    } else {
        return -1;
    }
    if (p < e && *p == '.') {
        is_int = 0;
        if (++p >= e || !is_digit(*p))
            return -1;
        while (p < e && is_digit(*p)) {
            if (m == 0 && *p == '0') {
                ex--;
            } else if (nd < 19) {
                m = m * 10 + (uint64_t)(*p - '0');
                nd++;
                ex--;
            } else {
                slow = 1;
            }
            p++;
        }
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        long xx = 0;
        int xneg = 0;
        is_int = 0;
        if (++p < e && (*p == '+' || *p == '-'))
            xneg = *p++ == '-';
        if (p >= e || !is_digit(*p))
            return -1;
        while (p < e && is_digit(*p)) {
            if (xx < 100000)
                xx = xx * 10 + (*p - '0');
            else
                slow = 1;
            p++;
        }
        ex += xneg ? -xx : xx;
    }
    if ((size_t)(p - st) > NUM_MAX)
        return -1;
    s->p = p;
    if (is_int) {
        if (nd > 19 || (nd == 19 && m > (uint64_t)INT64_MAX + (uint64_t)neg))
            return -1;                          /* beyond int64: jansson */
        v->t = ZX_DBZ_SV_INT;
        v->i = neg ? (int64_t)(0 - m) : (int64_t)m;
        return 0;
    }
    double d;
    if (m == 0 && !slow) {
        d = 0.0;
    } else if (!slow && m <= (UINT64_C(1) << 53) && ex >= -22 && ex <= 22) {
        d = (double)m;                          /* both exact: one rounding */
        d = ex >= 0 ? d * pow10_tab[ex] : d / pow10_tab[-ex];
    } else {
        char buf[NUM_MAX + 1];
        size_t n = (size_t)(p - st);
        memcpy(buf, st, n);
        buf[n] = '\0';
        d = strtod(buf, NULL);
        if (isinf(d))
            return -1;                          /* overflow: jansson */
        neg = 0;
    }
    v->t = ZX_DBZ_SV_REAL;
    v->d = neg ? -d : d;
    return 0;
}

static int literal(px *s, const char *w, size_t n)
{
    if ((size_t)(s->e - s->p) < n || memcmp(s->p, w, n) != 0)
        return -1;
    s->p += n;
    return 0;
}

/* Check the value at s->p and step over it (strings are not decoded). */
static int skip(px *s, int depth)
{
    if (s->p >= s->e)
        return -1;
    int esc;
    switch (*s->p) {
    case '"': {
        const char *q = zx_js_scan_str(s->p + 1, s->e, &esc);
        if (!q)
            return -1;
        if (esc) {   /* "\u0000" and lone surrogates are jansson's errors */
            for (const char *p = s->p + 1; p < q; p++) {
                if (*p != '\\')
                    continue;
                if (p[1] == 'u') {
                    const char *u = p;
                    if (zx_js_unicode_escape(&u, q) < 0)
                        return -1;
                    p = u - 1;
                } else {
                    p++;
                }
            }
        }
        s->p = q + 1;
        return 0;
    }
    case '{':
    case '[': {
        char close = *s->p == '{' ? '}' : ']';
        if (depth >= MAX_DEPTH)
            return -1;
        s->p++;
        ws(s);
        if (s->p < s->e && *s->p == close) {
            s->p++;
            return 0;
        }
        for (;;) {
            if (close == '}') {
                if (s->p >= s->e || *s->p != '"' || skip(s, depth + 1) < 0)
                    return -1;
                /* a key holding "\u0000": jansson refuses it (skip did) */
                ws(s);
                if (s->p >= s->e || *s->p++ != ':')
                    return -1;
                ws(s);
            }
            if (skip(s, depth + 1) < 0)
                return -1;
            ws(s);
            if (s->p >= s->e)
                return -1;
            if (*s->p == ',') {
                s->p++;
                ws(s);
                continue;
            }
            if (*s->p++ != close)
                return -1;
            return 0;
        }
    }
    case 't':
        return literal(s, "true", 4);
    case 'f':
        return literal(s, "false", 5);
    case 'n':
        return literal(s, "null", 4);
    default: {
        zx_dbz_sv v;
        return number(s, &v);
    }
    }
}

/* The value at s->p: a scalar into *v, or (an object or array) checked,
 * stepped over and given as OTHER with its raw text. */
static int value(px *s, zx_dbz_sv *v, int depth)
{
    memset(v, 0, sizeof(*v));
    if (s->p >= s->e)
        return -1;
    switch (*s->p) {
    case '"':
        v->t = ZX_DBZ_SV_STR;
        return str(s, &v->s, &v->n);
    case '{':
    case '[': {
        const char *st = s->p;
        if (skip(s, depth) < 0)
            return -1;
        v->t = ZX_DBZ_SV_OTHER;
        v->s = st;
        v->n = (size_t)(s->p - st);
        return 0;
    }
    case 't':
        v->t = ZX_DBZ_SV_TRUE;
        return literal(s, "true", 4);
    case 'f':
        v->t = ZX_DBZ_SV_FALSE;
        return literal(s, "false", 5);
    case 'n':
        v->t = ZX_DBZ_SV_NULL;
        return literal(s, "null", 4);
    default:
        return number(s, v);
    }
}

/* 1 when two of the n members at m have the same key. */
static int dup_keys(const mem *m, size_t n)
{
    if (n <= 24) {
        for (size_t i = 1; i < n; i++)
            for (size_t j = 0; j < i; j++)
                if (m[i].kn == m[j].kn && !memcmp(m[i].k, m[j].k, m[i].kn))
                    return 1;
        return 0;
    }
    uint32_t slot[2 * MAX_MEMBERS];   /* open addressing: index + 1 */
    size_t cap = 64;
    while (cap < 2 * n)
        cap *= 2;
    memset(slot, 0, cap * sizeof(*slot));
    for (size_t i = 0; i < n; i++) {
        uint32_t h = 2166136261u;
        for (size_t k = 0; k < m[i].kn; k++)
            h = (h ^ (unsigned char)m[i].k[k]) * 16777619u;
        for (size_t j = h & (cap - 1);; j = (j + 1) & (cap - 1)) {
            if (!slot[j]) {
                slot[j] = (uint32_t)i + 1;
                break;
            }
            const mem *o = &m[slot[j] - 1];
            if (o->kn == m[i].kn && !memcmp(o->k, m[i].k, m[i].kn))
                return 1;
        }
    }
    return 0;
}

/* The object at s->p ('{'), member by member, into x->m: 0, -1. */
static int object(px *s, obj *o, int depth)
{
    struct zx_dbz_fast *x = s->x;
    o->present = 1;
    o->first = x->mn;
    o->n = 0;
    s->p++;
    ws(s);
    if (s->p < s->e && *s->p == '}') {
        s->p++;
        return 0;
    }
    for (;;) {
        if (s->p >= s->e || *s->p != '"' || o->n >= MAX_MEMBERS || x->mn >= x->mcap)
            return -1;
        mem *mm = &x->m[x->mn];
        if (str(s, &mm->k, &mm->kn) < 0)
            return -1;
        ws(s);
        if (s->p >= s->e || *s->p++ != ':')
            return -1;
        ws(s);
        if (value(s, &mm->v, depth + 1) < 0)
            return -1;
        x->mn++;
        o->n++;
        ws(s);
        if (s->p >= s->e)
            return -1;
        if (*s->p == ',') {
            s->p++;
            ws(s);
            continue;
        }
        if (*s->p++ != '}')
            return -1;
        break;
    }
    return dup_keys(&x->m[o->first], o->n) ? -1 : 0;
}

/* The object in raw text t (n bytes, checked already) into x->m. */
static int object_of(struct zx_dbz_fast *x, const char *t, size_t n, obj *o)
{
    px s = { .p = t, .e = t + n, .x = x };
    return object(&s, o, 1);
}

static const mem *find(const struct zx_dbz_fast *x, const obj *o, const char *k)
{
    for (size_t i = 0; o->present && i < o->n; i++)
        if (!strcmp(x->m[o->first + i].k, k))
            return &x->m[o->first + i];
    return NULL;
}

static int key_is(const char *k, size_t kn, const char *w)
{
    return kn == strlen(w) && !memcmp(k, w, kn);
}

/* ---- the schema ----------------------------------------------------------- */

/* The cache entry holding schema text t (n bytes at least; its own length
 * is the entry's), or NULL. */
static zx_dbz_cached *cached_at(zx_dbz_cache *c, const char *t, size_t n)
{
    for (int i = 0; i < ZX_DBZ_CACHE; i++) {
        zx_dbz_cached *x = &c->v[i];
        if (x->schema && x->len <= n && !memcmp(x->text, t, x->len))
            return x;
    }
    return NULL;
}

static struct zx_dbz_fast_schema *compile(const json_t *schema)
{
    struct zx_dbz_fast_schema *fs = calloc(1, sizeof(*fs));
    if (!fs)
        return NULL;
    size_t h = 0;
    const json_t *row = zx_dbz_field_schema(schema, "after", &h);
    if (!row)
        row = zx_dbz_field_schema(schema, "before", &h);
    if (!row)
        return fs;
    fs->has_row = 1;
    const json_t *fields = json_object_get(row, "fields");
    size_t n = json_array_size(fields);
    if (n && !(fs->f = calloc(n, sizeof(*fs->f)))) {
        free(fs);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *f = json_array_get(fields, i);
        const json_t *fn = json_object_get(f, "field");
        fs->f[i].name = json_is_string(fn) ? json_string_value(fn) : NULL;
        zx_dbz_kind_of(f, &fs->f[i].k);
    }
    fs->n = n;
    return fs;
}

/* What zx_dbz_field_schema(row, name, hint) finds, as its kind. */
static const zx_dbz_kind *field_kind(const struct zx_dbz_fast_schema *fs, const char *name,
                                     size_t *hint)
{
    static const zx_dbz_kind none;
    for (size_t k = 0; k < fs->n; k++) {
        size_t i = (*hint + k) % fs->n;
        if (fs->f[i].name && !strcmp(fs->f[i].name, name)) {
            *hint = i + 1;
            return &fs->f[i].k;
        }
    }
    return &none;
}

/* ---- the event ------------------------------------------------------------ */

typedef struct fev {
    const struct zx_dbz_fast_schema *fs;   /* NULL: no schema */
    zx_dbz_src src;
    obj after, before, key;
    const char *op;
    unsigned vflags;
    char keys[ZX_FRAME_MAX_KEY_COLUMNS][ZX_COLNAME_MAX + 1];
    const char *keysrc[ZX_FRAME_MAX_KEY_COLUMNS];
    size_t nkeys;
    char table[ZX_COLNAME_MAX + 1];
} fev;

static int has_keys(const struct zx_dbz_fast *x, const fev *e, const obj *row)
{
    for (size_t k = 0; k < e->nkeys; k++) {
        const mem *v = find(x, row, e->keysrc[k]);
        if (!v || v->v.t == ZX_DBZ_SV_NULL)
            return 0;
    }
    return 1;
}

static int unavailable(const zx_dbz_sv *v)
{
    return v->t == ZX_DBZ_SV_STR &&
           (!strcmp(v->s, ZX_DBZ_UNAVAILABLE) || !strcmp(v->s, ZX_DBZ_UNAVAILABLE_B64));
}

static int sv_equal(const zx_dbz_sv *a, const zx_dbz_sv *b)
{
    if (a->t != b->t)
        return 0;
    switch (a->t) {
    case ZX_DBZ_SV_INT: return a->i == b->i;
    case ZX_DBZ_SV_REAL: return a->d == b->d;
    case ZX_DBZ_SV_STR: return a->n == b->n && !memcmp(a->s, b->s, a->n);
    default: return 1;
    }
}

/* debezium.c's key_moved: 1, 0, or -1 (declined: a container). */
static int key_moved(const struct zx_dbz_fast *x, const fev *e)
{
    if (!e->before.present || !e->after.present)
        return 0;
    int moved = 0;
    for (size_t k = 0; k < e->nkeys; k++) {
        const mem *a = find(x, &e->before, e->keysrc[k]);
        const mem *b = find(x, &e->after, e->keysrc[k]);
        if (a && a->v.t == ZX_DBZ_SV_OTHER)
            return -1;
        if (!a || a->v.t == ZX_DBZ_SV_NULL || unavailable(&a->v))
            return 0;
        if (!b || !sv_equal(&a->v, &b->v))
            moved = 1;
    }
    return moved;
}

static int is_key(const fev *e, const char *col)
{
    for (size_t k = 0; k < e->nkeys; k++)
        if (strcmp(e->keys[k], col) == 0)
            return 1;
    return 0;
}

/* debezium.c's row_cells on a row read here: 0, or -1 (declined). */
static int row_cells(zx_dbz_frame *f, const struct zx_dbz_fast *x, const fev *e, const obj *row,
                     int keys_only, const char *prefix, char **unch, size_t *ulen,
                     size_t *ucap)
{
    zx_rowset *rs = f->rs;
    size_t hint = 0;
    static const zx_dbz_kind inferred;
    for (size_t i = 0; i < row->n; i++) {
        const mem *mm = &x->m[row->first + i];
        char norm[ZX_COLNAME_MAX + 1];
        zx_colname_normalise(mm->k, mm->kn, norm);
        if (keys_only && !is_key(e, norm))
            continue;
        if (!keys_only && unch) {
            if (mm->v.t == ZX_DBZ_SV_OTHER)
                return -1;
            if (unavailable(&mm->v)) {
                if (zx_dbz_json_name(unch, ulen, ucap, norm) < 0)
                    return -1;
                continue;
            }
        }
        const zx_dbz_kind *k = e->fs && e->fs->has_row ? field_kind(e->fs, mm->k, &hint)
                                                       : &inferred;
        zx_value zv;
        const char *decl;
        int rc = zx_dbz_value_sv(k, &mm->v, rs, &zv, &decl, e->vflags);
        if (rc < 0 || rc == 2)
            return -1;
        char name[ZX_COLNAME_MAX + 16];
        const char *cn = norm;
        if (prefix) {
            snprintf(name, sizeof(name), "%s%s", prefix, norm);
            cn = name;
        }
        int64_t col = zx_rowset_column(rs, cn, strlen(cn), ZX_T_NULL);
        if (col < 0 || zx_rowset_add(rs, (uint32_t)col, &zv) < 0 ||
            (!prefix && zx_dbz_note_decl(f, col, decl) < 0))
            return -1;
    }
    return 0;
}

/* debezium.c's add_row for insert, update and delete. */
static int add_row(const zx_dbz_conf *c, zx_dbz_frame *f, const struct zx_dbz_fast *x, fev *e,
                   const zx_dbz_msg *m)
{
    zx_rowset *rs = f->rs;
    zx_rowset_mark mk;
    zx_rowset_save(rs, &mk);
    char *unch = NULL;
    size_t ulen = 0, ucap = 0;
    int rc = ZX_DBZ_DECLINED;
    if (zx_rowset_begin_row(rs) < 0 || zx_dbz_reserved(rs, &e->src, e->op, m) < 0)
        goto out;
    if (e->op[0] != 'd') {   /* insert, update */
        if (!has_keys(x, e, &e->after))
            goto out;
        if (row_cells(f, x, e, &e->after, 0, NULL, &unch, &ulen, &ucap) < 0)
            goto out;
        if (unch) {
            unch[ulen++] = ']';
            char *s = zx_rowset_strdup(rs, unch, ulen);
            zx_value v = { .type = ZX_T_JSON, .len = (uint32_t)ulen, .s = s };
            int64_t col = zx_rowset_column(rs, ZX_CH_UNCHANGED, strlen(ZX_CH_UNCHANGED),
                                           ZX_T_JSON);
            if (!s || col < 0 || zx_rowset_add(rs, (uint32_t)col, &v) < 0)
                goto out;
        }
        if (e->op[0] == 'u') {
            int mv = key_moved(x, e);
            if (mv < 0 || (mv && row_cells(f, x, e, &e->before, 1, ZX_CH_OLD_PREFIX, NULL,
                                           NULL, NULL) < 0))
                goto out;
        }
    } else {
        if (!e->before.present || !has_keys(x, e, &e->before))
            goto out;   /* the key's values (or none): the jansson path */
        if (row_cells(f, x, e, &e->before, 1, NULL, NULL, NULL, NULL) < 0)
            goto out;
    }
    uint32_t cap = (c->max_columns ? c->max_columns : ZX_DBZ_MAX_COLUMNS) + ZX_DBZ_EXTRA_COLUMNS;
    if (rs->ncols > cap) {
        if (f->changes)
            rc = ZX_DBZ_OTHER;
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

/* The message key (or NULL): e->key gets the members of its payload when
 * that is an object.  0, or -1 (declined: not JSON as read here). */
static int read_key(struct zx_dbz_fast *x, const zx_dbz_msg *m, fev *e)
{
    if (!m->key || !m->key_len)
        return 0;
    px s = { .p = m->key, .e = (const char *)m->key + m->key_len, .x = x };
    ws(&s);
    if (s.p >= s.e)
        return -1;
    if (*s.p != '{') {   /* a key that is not an object: no key fields */
        zx_dbz_sv v;
        if (value(&s, &v, 0) < 0)
            return -1;
        ws(&s);
        return s.p == s.e ? 0 : -1;
    }
    obj top;
    if (object(&s, &top, 0) < 0)
        return -1;
    ws(&s);
    if (s.p != s.e)
        return -1;
    const mem *sc = find(x, &top, "schema"), *pl = find(x, &top, "payload");
    if (top.n == 2 && sc && pl &&
        (sc->v.t == ZX_DBZ_SV_NULL || (sc->v.t == ZX_DBZ_SV_OTHER && sc->v.s[0] == '{'))) {
        /* the envelope: its payload is the key */
        if (pl->v.t == ZX_DBZ_SV_OTHER && pl->v.s[0] == '{')
            return object_of(x, pl->v.s, pl->v.n, &e->key);
        return 0;
    }
    e->key = top;
    return 0;
}

/* The event's key columns (debezium.c's key_columns, mongo aside):
 * 0, or -1 (declined: the reject is the jansson path's to write). */
static int key_columns(const zx_dbz_conf *c, const struct zx_dbz_fast *x, fev *e)
{
    e->nkeys = 0;
    if (e->key.present && e->key.n > 0) {
        for (size_t i = 0; i < e->key.n; i++) {
            const mem *mm = &x->m[e->key.first + i];
            if (e->nkeys == ZX_FRAME_MAX_KEY_COLUMNS)
                return -1;
            zx_colname_normalise(mm->k, mm->kn, e->keys[e->nkeys]);
            e->keysrc[e->nkeys++] = mm->k;
        }
        return 0;
    }
    for (size_t i = 0; i < c->nkey_columns && i < ZX_FRAME_MAX_KEY_COLUMNS; i++) {
        zx_colname_normalise(c->key_columns[i], strlen(c->key_columns[i]), e->keys[i]);
        e->keysrc[i] = c->key_columns[i];
        e->nkeys++;
    }
    return e->nkeys ? 0 : -1;
}

/* Room for the decoded strings and members of m. */
static struct zx_dbz_fast *scratch(zx_dbz_frame *f, const zx_dbz_msg *m)
{
    struct zx_dbz_fast *x = f->fast;
    if (!x && !(x = f->fast = calloc(1, sizeof(*x))))
        return NULL;
    size_t len = m->len + (m->key ? m->key_len : 0);
    size_t need = 2 * len + 64, nm = len / 2 + 16;
    if (x->cap < need) {
        free(x->buf);
        x->cap = 0;
        if (!(x->buf = malloc(need)))
            return NULL;
        x->cap = need;
    }
    if (x->mcap < nm) {
        free(x->m);
        x->mcap = 0;
        if (!(x->m = malloc(nm * sizeof(*x->m))))
            return NULL;
        x->mcap = nm;
    }
    x->used = 0;
    x->mn = 0;
    return x;
}

/* The payload object at s->p: its op, source, after and before into e.
 * 0, or -1 (declined). */
static int payload(px *s, fev *e, const char **opv)
{
    struct zx_dbz_fast *x = s->x;
    mem top[TOP_MEMBERS];
    size_t n = 0;
    obj src = { 0 };
    *opv = NULL;
    s->p++;
    ws(s);
    if (s->p < s->e && *s->p == '}') {
        s->p++;
        return -1;   /* no op: the jansson path skips or rejects */
    }
    for (;;) {
        if (s->p >= s->e || *s->p != '"' || n >= TOP_MEMBERS)
            return -1;
        mem *mm = &top[n];
        if (str(s, &mm->k, &mm->kn) < 0)
            return -1;
        ws(s);
        if (s->p >= s->e || *s->p++ != ':')
            return -1;
        ws(s);
        if (s->p >= s->e)
            return -1;
        obj *into = NULL;
        if (*s->p == '{') {
            if (key_is(mm->k, mm->kn, "after"))
                into = &e->after;
            else if (key_is(mm->k, mm->kn, "before"))
                into = &e->before;
            else if (key_is(mm->k, mm->kn, "source"))
                into = &src;
        }
        if (into) {
            if (object(s, into, 2) < 0)
                return -1;
            mm->v = (zx_dbz_sv){ .t = ZX_DBZ_SV_OTHER };
        } else if (value(s, &mm->v, 2) < 0) {
            return -1;
        }
        n++;
        ws(s);
        if (s->p >= s->e)
            return -1;
        if (*s->p == ',') {
            s->p++;
            ws(s);
            continue;
        }
        if (*s->p++ != '}')
            return -1;
        break;
    }
    if (dup_keys(top, n))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (key_is(top[i].k, top[i].kn, "op")) {
            if (top[i].v.t != ZX_DBZ_SV_STR)
                return -1;
            *opv = top[i].v.s;
        }
    if (!*opv)
        return -1;
    if (src.present) {
        e->src.present = 1;
        for (size_t i = 0; i < src.n; i++) {
            const mem *mm = &x->m[src.first + i];
            int k = zx_dbz_src_field(mm->k, mm->kn);
            if (k >= 0)
                e->src.v[k] = mm->v;
        }
    }
    return 0;
}

/* The schema at s->p ('{'): one seen before (matched byte for byte), or
 * parsed now by jansson into the cache.  Its compiled form, or NULL. */
static const struct zx_dbz_fast_schema *schema(px *s, zx_dbz_cache *c)
{
    zx_dbz_cached *hit = cached_at(c, s->p, (size_t)(s->e - s->p));
    if (!hit) {
        /* its end: the checked walk, then jansson's parse (the reference's) */
        px t = *s;
        if (skip(&t, 1) < 0)
            return NULL;
        const json_t *j = zx_dbz_cache_get(c, s->p, (size_t)(t.p - s->p));
        if (!j)
            return NULL;
        for (int i = 0; i < ZX_DBZ_CACHE; i++)
            if (c->v[i].schema == j)
                hit = &c->v[i];
        if (!hit)
            return NULL;
    }
    if (!hit->fast && !(hit->fast = compile(hit->schema)))
        return NULL;
    s->p += hit->len;
    return hit->fast;
}

int zx_dbz_fast_add(const zx_dbz_conf *c, zx_dbz_frame *f, const zx_dbz_msg *m, char *why,
                    size_t whylen, unsigned *notes)
{
    if (c->mode != ZX_DBZ_DEBEZIUM || !m->value || !m->len || m->value_json || m->key_json)
        return ZX_DBZ_DECLINED;
    struct zx_dbz_fast *x = scratch(f, m);
    if (!x)
        return ZX_DBZ_DECLINED;
    fev e;
    memset(&e, 0, sizeof(e));
    if (read_key(x, m, &e) < 0)
        return ZX_DBZ_DECLINED;

    /* the message: {"schema": S, "payload": P}, or P itself */
    px s = { .p = m->value, .e = (const char *)m->value + m->len, .x = x };
    const char *opv = NULL;
    ws(&s);
    if (s.p >= s.e || *s.p != '{')
        return ZX_DBZ_DECLINED;
    px probe = s;
    probe.p++;
    ws(&probe);
    const char *k1;
    size_t k1n;
    size_t used0 = x->used;
    if (probe.p < probe.e && *probe.p == '"' && str(&probe, &k1, &k1n) == 0 &&
        (key_is(k1, k1n, "schema") || key_is(k1, k1n, "payload"))) {
        /* the envelope: exactly those two keys */
        s = probe;
        int have_s = 0, have_p = 0;
        for (int i = 0; i < 2; i++) {
            const char *k = k1;
            size_t kn = k1n;
            if (i == 1) {
                if (s.p >= s.e || *s.p != '"' || str(&s, &k, &kn) < 0)
                    return ZX_DBZ_DECLINED;
            }
            ws(&s);
            if (s.p >= s.e || *s.p++ != ':')
                return ZX_DBZ_DECLINED;
            ws(&s);
            if (s.p >= s.e)
                return ZX_DBZ_DECLINED;
            if (key_is(k, kn, "schema") && !have_s) {
                have_s = 1;
                if (*s.p == '{') {
                    if (!(e.fs = schema(&s, &f->cache)))
                        return ZX_DBZ_DECLINED;
                } else if (literal(&s, "null", 4) < 0) {
                    return ZX_DBZ_DECLINED;
                }
            } else if (key_is(k, kn, "payload") && !have_p) {
                have_p = 1;
                if (*s.p != '{' || payload(&s, &e, &opv) < 0)
                    return ZX_DBZ_DECLINED;
            } else {
                return ZX_DBZ_DECLINED;
            }
            ws(&s);
            if (s.p >= s.e || *s.p++ != (i == 0 ? ',' : '}'))
                return ZX_DBZ_DECLINED;
            ws(&s);
        }
    } else {
        x->used = used0;
        if (payload(&s, &e, &opv) < 0)
            return ZX_DBZ_DECLINED;
    }
    ws(&s);
    if (s.p != s.e)
        return ZX_DBZ_DECLINED;

    /* debezium.c's debezium(), for what is handled here */
    if (!strcmp(opv, "c") || !strcmp(opv, "r"))
        e.op = "insert";
    else if (!strcmp(opv, "u"))
        e.op = "update";
    else if (!strcmp(opv, "d"))
        e.op = "delete";
    else
        return ZX_DBZ_DECLINED;
    const char *conn = zx_dbz_src_str(&e.src, ZX_DBZ_SRC_CONNECTOR);
    if (conn && !strcmp(conn, "mongodb"))
        return ZX_DBZ_DECLINED;
    if (conn && (!strcmp(conn, "mysql") || !strcmp(conn, "mariadb")))
        e.vflags |= ZX_DBZ_MYSQL;
    if (e.op[0] != 'd' && !e.after.present)
        return ZX_DBZ_DECLINED;
    unsigned nt = e.fs ? 0 : ZX_DBZ_NOTE_NO_SCHEMA;
    if (zx_dbz_table_name(c, &e.src, m->topic, e.table, why, whylen)) {
        *notes |= nt;
        return ZX_DBZ_REJECT;
    }
    if (key_columns(c, x, &e) < 0)
        return ZX_DBZ_DECLINED;
    int rc;
    if (!zx_dbz_fits(f, e.table, (const char (*)[ZX_COLNAME_MAX + 1])e.keys, e.nkeys, 0))
        rc = ZX_DBZ_OTHER;
    else
        rc = add_row(c, f, x, &e, m);
    if (rc != ZX_DBZ_DECLINED)
        *notes |= nt;
    return rc;
}
