/*
 * avro_read.c — reading Avro container files by the writer's schema
 * (avro_read.h).  The schema JSON is parsed with jansson into a tree of
 * zx_avro_type owned by the file; records decode into a tree of
 * zx_avro_value freed at the next record.
 *
 * It must never trust a length in the file: every one is checked against
 * what remains.
 */
#include "formats/avro_read.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/buf.h"
#include "formats/avro.h"

#define MAX_DEPTH 32

struct zx_avro_file {
    const uint8_t *p;
    size_t n, at;                 /* the file, the next block's offset */
    uint8_t sync[16];
    int deflate;
    json_t *schema_json;
    zx_avro_type *schema;
    zx_avro_type **all;           /* every node, to free */
    size_t nall, capall;
    zx_avro_type **named;         /* named types, for references */
    size_t nnamed, capnamed;
    /* metadata: keys and values point into p */
    const uint8_t **mk, **mv;
    size_t *mkl, *mvl, nmeta;
    /* the current block */
    const uint8_t *blk;
    size_t blen, bat;
    int64_t left;                 /* records left in the block */
    zx_buf inflated;
    zx_avro_value *cur;           /* the current record's tree */
    int failed;
};

/* ---- schema -------------------------------------------------------------- */

static zx_avro_type *new_type(zx_avro_file *f, zx_avro_kind k)
{
    zx_avro_type *t = calloc(1, sizeof(*t));
    if (!t || zx_grow(&f->all, f->nall, &f->capall, sizeof(*f->all)) < 0) {
        free(t);
        return NULL;
    }
    f->all[f->nall++] = t;
    t->kind = k;
    t->element_id = -1;
    return t;
}

static const char *const PRIMS[] = {"null", "boolean", "int", "long", "float", "double",
                                    "bytes", "string"};

static zx_avro_type *parse_type(zx_avro_file *f, json_t *j, int depth, char *err,
                                size_t errlen);

static int add_named(zx_avro_file *f, zx_avro_type *t)
{
    if (zx_grow(&f->named, f->nnamed, &f->capnamed, sizeof(*f->named)) < 0)
        return -1;
    f->named[f->nnamed++] = t;
    return 0;
}

/* A reference by name: full name or the last component of either. */
static zx_avro_type *lookup(zx_avro_file *f, const char *name)
{
    const char *dot = strrchr(name, '.');
    const char *shortn = dot ? dot + 1 : name;
    for (size_t i = 0; i < f->nnamed; i++) {
        const char *nm = f->named[i]->name;
        const char *d2 = strrchr(nm, '.');
        if (!strcmp(nm, name) || !strcmp(d2 ? d2 + 1 : nm, shortn))
            return f->named[i];
    }
    return NULL;
}

static int64_t int_prop(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? json_integer_value(v) : -1;
}

static zx_avro_type *parse_type(zx_avro_file *f, json_t *j, int depth, char *err,
                                size_t errlen)
{
    if (depth > MAX_DEPTH) {
        snprintf(err, errlen, "avro: schema nested too deep");
        return NULL;
    }
    if (json_is_string(j)) {
        const char *s = json_string_value(j);
        for (size_t i = 0; i < sizeof(PRIMS) / sizeof(PRIMS[0]); i++)
            if (!strcmp(s, PRIMS[i]))
                return new_type(f, (zx_avro_kind)i);
        zx_avro_type *t = lookup(f, s);
        if (!t)
            snprintf(err, errlen, "avro: schema: unknown type %s", s);
        return t;
    }
    if (json_is_array(j)) {
        zx_avro_type *t = new_type(f, ZX_AVK_UNION);
        if (!t)
            goto oom;
        t->n = json_array_size(j);
        if (!t->n || !(t->sub = calloc(t->n, sizeof(*t->sub))))
            goto bad;
        for (size_t i = 0; i < t->n; i++)
            if (!(t->sub[i] = parse_type(f, json_array_get(j, i), depth + 1, err, errlen)))
                return NULL;
        return t;
    }
    if (!json_is_object(j))
        goto bad;
    json_t *jt = json_object_get(j, "type");
    const char *ts = json_string_value(jt);
    if (!ts) /* {"type": {...}} */
        return parse_type(f, jt, depth + 1, err, errlen);
    zx_avro_type *t = NULL;
    if (!strcmp(ts, "record") || !strcmp(ts, "error")) {
        json_t *fs = json_object_get(j, "fields");
        const char *name = json_string_value(json_object_get(j, "name"));
        if (!json_is_array(fs) || !name || !(t = new_type(f, ZX_AVK_RECORD)))
            goto bad;
        t->name = name;
        if (add_named(f, t) < 0)
            goto oom;
        t->n = json_array_size(fs);
        t->sub = calloc(t->n ? t->n : 1, sizeof(*t->sub));
        t->fnames = calloc(t->n ? t->n : 1, sizeof(*t->fnames));
        t->fids = calloc(t->n ? t->n : 1, sizeof(*t->fids));
        if (!t->sub || !t->fnames || !t->fids)
            goto oom;
        for (size_t i = 0; i < t->n; i++) {
            json_t *fj = json_array_get(fs, i);
            t->fnames[i] = json_string_value(json_object_get(fj, "name"));
            t->fids[i] = int_prop(fj, "field-id");
            if (!t->fnames[i])
                goto bad;
            if (!(t->sub[i] = parse_type(f, json_object_get(fj, "type"), depth + 1, err,
                                         errlen)))
                return NULL;
        }
        return t;
    }
    if (!strcmp(ts, "enum")) {
        const char *name = json_string_value(json_object_get(j, "name"));
        if (!name || !(t = new_type(f, ZX_AVK_ENUM)))
            goto bad;
        t->name = name;
        t->size = json_array_size(json_object_get(j, "symbols"));
        return add_named(f, t) < 0 ? NULL : t;
    }
    if (!strcmp(ts, "fixed")) {
        const char *name = json_string_value(json_object_get(j, "name"));
        json_t *sz = json_object_get(j, "size");
        if (!name || !json_is_integer(sz) || json_integer_value(sz) < 0 ||
            !(t = new_type(f, ZX_AVK_FIXED)))
            goto bad;
        t->name = name;
        t->size = (size_t)json_integer_value(sz);
        t->logical = json_string_value(json_object_get(j, "logicalType"));
        return add_named(f, t) < 0 ? NULL : t;
    }
    if (!strcmp(ts, "array") || !strcmp(ts, "map")) {
        int arr = ts[0] == 'a';
        if (!(t = new_type(f, arr ? ZX_AVK_ARRAY : ZX_AVK_MAP)) ||
            !(t->sub = calloc(1, sizeof(*t->sub))))
            goto oom;
        t->n = 1;
        t->element_id = int_prop(j, "element-id");
        t->logical = json_string_value(json_object_get(j, "logicalType"));
        if (!(t->sub[0] = parse_type(f, json_object_get(j, arr ? "items" : "values"),
                                     depth + 1, err, errlen)))
            return NULL;
        return t;
    }
    /* a primitive with properties ({"type": "long", "logicalType": ...}):
     * a node of its own, so that the properties stay with it */
    for (size_t i = 0; i < sizeof(PRIMS) / sizeof(PRIMS[0]); i++)
        if (!strcmp(ts, PRIMS[i])) {
            if (!(t = new_type(f, (zx_avro_kind)i)))
                goto oom;
            t->logical = json_string_value(json_object_get(j, "logicalType"));
            t->adjust_to_utc = json_is_true(json_object_get(j, "adjust-to-utc"));
            return t;
        }
    return parse_type(f, jt, depth + 1, err, errlen);
bad:
    snprintf(err, errlen, "avro: schema: a malformed type");
    return NULL;
oom:
    snprintf(err, errlen, "avro: out of memory");
    return NULL;
}

/* ---- header --------------------------------------------------------------- */

typedef struct rd {
    const uint8_t *p;
    size_t n, at;
} rd;

static int rd_long(rd *r, int64_t *v)
{
    size_t k = zx_avro_unzigzag(r->p + r->at, r->n - r->at, v);
    r->at += k;
    return k ? 0 : -1;
}

static int rd_bytes(rd *r, const uint8_t **p, size_t *len)
{
    int64_t n;
    if (rd_long(r, &n) < 0 || n < 0 || (uint64_t)n > r->n - r->at)
        return -1;
    *p = r->p + r->at;
    *len = (size_t)n;
    r->at += (size_t)n;
    return 0;
}

void zx_avro_file_free(zx_avro_file *f);

int zx_avro_file_open(const void *p, size_t n, zx_avro_file **out, char *err, size_t errlen)
{
    *out = NULL;
    zx_avro_file *f = calloc(1, sizeof(*f));
    if (!f) {
        snprintf(err, errlen, "avro: out of memory");
        return -1;
    }
    f->p = p;
    f->n = n;
    rd r = {p, n, 4};
    if (n < 4 || memcmp(p, "Obj\x01", 4)) {
        snprintf(err, errlen, "avro: not an Avro container file");
        goto failed;
    }
    size_t cap = 0;
    for (;;) {
        int64_t cnt;
        if (rd_long(&r, &cnt) < 0)
            goto malformed;
        if (cnt == 0)
            break;
        if (cnt < 0) {
            int64_t sz;
            if (cnt == INT64_MIN || rd_long(&r, &sz) < 0)
                goto malformed;
            cnt = -cnt;
        }
        if ((uint64_t)cnt > r.n - r.at)
            goto malformed;
        for (int64_t i = 0; i < cnt; i++) {
            size_t need = f->nmeta + 1;
            size_t c1 = cap, c2 = cap, c3 = cap, c4 = cap;
            if (zx_grow_to(&f->mk, need, &c1, sizeof(*f->mk), 8) < 0 ||
                zx_grow_to(&f->mv, need, &c2, sizeof(*f->mv), 8) < 0 ||
                zx_grow_to(&f->mkl, need, &c3, sizeof(*f->mkl), 8) < 0 ||
                zx_grow_to(&f->mvl, need, &c4, sizeof(*f->mvl), 8) < 0) {
                snprintf(err, errlen, "avro: out of memory");
                goto failed;
            }
            cap = c1;
            if (rd_bytes(&r, &f->mk[f->nmeta], &f->mkl[f->nmeta]) < 0 ||
                rd_bytes(&r, &f->mv[f->nmeta], &f->mvl[f->nmeta]) < 0)
                goto malformed;
            f->nmeta++;
        }
    }
    if (r.n - r.at < 16)
        goto malformed;
    memcpy(f->sync, r.p + r.at, 16);
    f->at = r.at + 16;
    size_t sl, cl;
    const uint8_t *schema = zx_avro_file_meta(f, "avro.schema", &sl);
    const uint8_t *codec = zx_avro_file_meta(f, "avro.codec", &cl);
    if (codec && !(cl == 4 && !memcmp(codec, "null", 4))) {
        if (cl == 7 && !memcmp(codec, "deflate", 7)) {
            f->deflate = 1;
        } else {
            snprintf(err, errlen, "avro: codec %.*s is not supported", (int)(cl > 32 ? 32 : cl),
                     (const char *)codec);
            goto failed;
        }
    }
    json_error_t jerr;
    if (!schema || !(f->schema_json = json_loadb((const char *)schema, sl, 0, &jerr))) {
        snprintf(err, errlen, "avro: no schema, or not JSON");
        goto failed;
    }
    if (!(f->schema = parse_type(f, f->schema_json, 0, err, errlen)))
        goto failed;
    *out = f;
    return 0;
malformed:
    snprintf(err, errlen, "avro: a malformed header");
failed:
    zx_avro_file_free(f);
    return -1;
}

const uint8_t *zx_avro_file_meta(const zx_avro_file *f, const char *key, size_t *len)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < f->nmeta; i++)
        if (f->mkl[i] == kl && !memcmp(f->mk[i], key, kl)) {
            *len = f->mvl[i];
            return f->mv[i];
        }
    return NULL;
}

const zx_avro_type *zx_avro_file_schema(const zx_avro_file *f)
{
    return f->schema;
}

/* ---- records -------------------------------------------------------------- */

static void free_value(zx_avro_value *v)
{
    if (!v)
        return;
    size_t n = v->type && v->type->kind == ZX_AVK_MAP ? 2 * v->n : v->n;
    for (size_t i = 0; v->items && i < n; i++)
        free_value(&v->items[i]);
    free(v->items);
}

static int decode(rd *r, const zx_avro_type *t, zx_avro_value *v, int depth)
{
    memset(v, 0, sizeof(*v));
    v->type = t;
    v->branch = -1;
    if (depth > MAX_DEPTH)
        return -1;
    switch (t->kind) {
    case ZX_AVK_NULL:
        return 0;
    case ZX_AVK_BOOLEAN:
        if (r->at >= r->n)
            return -1;
        v->l = r->p[r->at++] != 0;
        return 0;
    case ZX_AVK_INT:
    case ZX_AVK_LONG:
    case ZX_AVK_ENUM:
        return rd_long(r, &v->l);
    case ZX_AVK_FLOAT: {
        if (r->n - r->at < 4)
            return -1;
        uint32_t u = 0;
        for (int i = 0; i < 4; i++)
            u |= (uint32_t)r->p[r->at + i] << (8 * i);
        float x;
        memcpy(&x, &u, 4);
        v->d = x;
        r->at += 4;
        return 0;
    }
    case ZX_AVK_DOUBLE: {
        if (r->n - r->at < 8)
            return -1;
        uint64_t u = 0;
        for (int i = 0; i < 8; i++)
            u |= (uint64_t)r->p[r->at + i] << (8 * i);
        memcpy(&v->d, &u, 8);
        r->at += 8;
        return 0;
    }
    case ZX_AVK_BYTES:
    case ZX_AVK_STRING:
        return rd_bytes(r, &v->p, &v->len);
    case ZX_AVK_FIXED:
        if (r->n - r->at < t->size)
            return -1;
        v->p = r->p + r->at;
        v->len = t->size;
        r->at += t->size;
        return 0;
    case ZX_AVK_UNION: {
        int64_t b;
        if (rd_long(r, &b) < 0 || b < 0 || (uint64_t)b >= t->n)
            return -1;
        if (decode(r, t->sub[b], v, depth + 1) < 0)
            return -1;
        v->branch = (int32_t)b;
        return 0;
    }
    case ZX_AVK_RECORD:
        v->n = t->n;
        if (t->n && !(v->items = calloc(t->n, sizeof(*v->items))))
            return -1;
        for (size_t i = 0; i < t->n; i++)
            if (decode(r, t->sub[i], &v->items[i], depth + 1) < 0) {
                v->n = i + 1;
                return -1;
            }
        return 0;
    case ZX_AVK_ARRAY:
    case ZX_AVK_MAP: {
        int map = t->kind == ZX_AVK_MAP;
        size_t cap = 0;
        for (;;) {
            int64_t cnt;
            if (rd_long(r, &cnt) < 0)
                return -1;
            if (cnt == 0)
                return 0;
            if (cnt < 0) {
                int64_t sz;
                if (cnt == INT64_MIN || rd_long(r, &sz) < 0)
                    return -1;
                cnt = -cnt;
            }
            /* each item takes a byte at least, except nulls: bound the count */
            if ((uint64_t)cnt > r->n - r->at + (t->sub[0]->kind == ZX_AVK_NULL ? 1u << 20 : 0))
                return -1;
            size_t per = map ? 2 : 1;
            if (zx_grow_to(&v->items, (v->n + (size_t)cnt) * per, &cap, sizeof(*v->items), 8) < 0)
                return -1;
            for (int64_t i = 0; i < cnt; i++) {
                zx_avro_value *it = &v->items[v->n * per];
                memset(it, 0, per * sizeof(*it));
                v->n++;
                if (map) {
                    static const zx_avro_type str = {.kind = ZX_AVK_STRING};
                    if (decode(r, &str, it, depth + 1) < 0 ||
                        decode(r, t->sub[0], it + 1, depth + 1) < 0)
                        return -1;
                } else if (decode(r, t->sub[0], it, depth + 1) < 0) {
                    return -1;
                }
            }
        }
    }
    }
    return -1;
}

int zx_avro_next(zx_avro_file *f, const zx_avro_value **out, char *err, size_t errlen)
{
    if (f->failed) {
        snprintf(err, errlen, "avro: the reader failed before");
        return -1;
    }
    if (f->cur) {
        free_value(f->cur);
        free(f->cur);
        f->cur = NULL;
    }
    while (f->left == 0) {
        if (f->blk) {
            /* the block is done: it must have been read to its end */
            if (f->bat != f->blen)
                goto malformed;
            f->blk = NULL;
        }
        if (f->at == f->n)
            return 0;
        rd r = {f->p, f->n, f->at};
        int64_t cnt, size;
        if (rd_long(&r, &cnt) < 0 || rd_long(&r, &size) < 0 || cnt < 0 || size < 0 ||
            (uint64_t)size > r.n - r.at || r.n - r.at - (size_t)size < 16 ||
            memcmp(r.p + r.at + size, f->sync, 16))
            goto malformed;
        f->blk = r.p + r.at;
        f->blen = (size_t)size;
        f->bat = 0;
        f->left = cnt;
        f->at = r.at + (size_t)size + 16;
        if (f->deflate) {
            z_stream zs;
            memset(&zs, 0, sizeof(zs));
            if (inflateInit2(&zs, -15) != Z_OK)
                goto malformed;
            zx_buf_reset(&f->inflated);
            zs.next_in = (Bytef *)(uintptr_t)f->blk;
            zs.avail_in = (uInt)f->blen;
            int zr = Z_OK;
            while (zr == Z_OK) {
                if (zx_buf_reserve(&f->inflated, 64 * 1024) < 0) {
                    inflateEnd(&zs);
                    snprintf(err, errlen, "avro: out of memory");
                    f->failed = 1;
                    return -1;
                }
                zs.next_out = (Bytef *)f->inflated.p + f->inflated.len;
                zs.avail_out = 64 * 1024;
                zr = inflate(&zs, Z_NO_FLUSH);
                f->inflated.len = zs.total_out;
                if (zr == Z_BUF_ERROR && zs.avail_in == 0)
                    break;
            }
            inflateEnd(&zs);
            if (zr != Z_STREAM_END)
                goto malformed;
            f->blk = (const uint8_t *)f->inflated.p;
            f->blen = f->inflated.len;
        }
    }
    rd r = {f->blk, f->blen, f->bat};
    zx_avro_value *v = calloc(1, sizeof(*v));
    if (!v) {
        snprintf(err, errlen, "avro: out of memory");
        f->failed = 1;
        return -1;
    }
    f->cur = v;
    if (decode(&r, f->schema, v, 0) < 0)
        goto malformed;
    f->bat = r.at;
    f->left--;
    *out = v;
    return 1;
malformed:
    snprintf(err, errlen, "avro: a malformed block or record near byte %zu", f->at);
    f->failed = 1;
    return -1;
}

const zx_avro_value *zx_avro_field(const zx_avro_value *v, int64_t id)
{
    if (!v || !v->type || v->type->kind != ZX_AVK_RECORD)
        return NULL;
    for (size_t i = 0; i < v->n && i < v->type->n; i++)
        if (v->type->fids[i] == id)
            return &v->items[i];
    return NULL;
}

int zx_avro_is_null(const zx_avro_value *v)
{
    return !v || !v->type || v->type->kind == ZX_AVK_NULL;
}

void zx_avro_file_free(zx_avro_file *f)
{
    if (!f)
        return;
    if (f->cur) {
        free_value(f->cur);
        free(f->cur);
    }
    for (size_t i = 0; i < f->nall; i++) {
        free(f->all[i]->sub);
        free(f->all[i]->fnames);
        free(f->all[i]->fids);
        free(f->all[i]);
    }
    free(f->all);
    free(f->named);
    free(f->mk);
    free(f->mv);
    free(f->mkl);
    free(f->mvl);
    zx_buf_free(&f->inflated);
    json_decref(f->schema_json);
    free(f);
}
